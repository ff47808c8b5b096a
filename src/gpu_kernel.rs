//! A workload instance as the GPU kernel the libraries would launch for it: the rows each bag
//! reads, by address, in the GPU's memory ([`gpu_model::GatherKernel`]).
//!
//! Layout: the tables first, one after another (each of its own rows), each aligned to 2 MiB
//! (a GPU allocation's granule); then the index stream, the offsets and the outputs. Per family:
//!
//! * embedding bags, GNN aggregation (SpMM by destination) and sparse attention: bag `g` reads
//!   its lookups' rows of table `g / batch` (FBGEMM's TBE; a weighted bag's index stream carries
//!   a 4 B weight beside each 8 B index);
//! * knowledge-graph scoring: a triple's group reads its head's and relation's rows, then each
//!   candidate tail's, and writes one score per candidate;
//! * message passing: groups of 32 edges, each edge's source row gathered and scatter-added
//!   into its destination's output row (PyG's `index_select` then `scatter_add_`, the atomics
//!   at L2);
//! * TT-EmbeddingBag: a lookup reads the rows of its three cores' slices (as stored) and
//!   contracts them: `2 (d1 r d2 r + d1 d2 r d3)` flops, spread over those rows.
//!
//! FBGEMM's TBE gives a bag to one thread group whatever its length; the other libraries
//! balance: GNN aggregation runs as a merge-path SpMM (32 nonzeros per group), sparse
//! attention splits each query's KV rows (64 per group), knowledge-graph scoring gathers
//! candidates 8 per group, and TT-Rec gives each lookup its own group, which loads its slices'
//! rows four at a time. Pieces of one bag write partial outputs (combined by atomics in L2).

use compiler::{EmbeddingBagInstance, Op, WorkloadSpec};
use gpu_model::GatherKernel;

/// Alignment of each table.
const TABLE_ALIGN: u64 = 2 << 20;
/// Edges per group of a message-passing scatter.
const SCATTER_GROUP: usize = 32;
/// Nonzeros per group of a load-balanced SpMM (merge-path, as cuSPARSE's CSR_ALG2).
const SPMM_SPLIT: usize = 32;
/// KV rows per group of split-KV sparse attention.
const SPLIT_KV: usize = 64;
/// Rows per group of knowledge-graph scoring (candidates gathered in parallel, as
/// `index_select` then a batched product do).
const KG_SPLIT: usize = 8;

fn align(x: u64) -> u64 {
    x.div_ceil(TABLE_ALIGN) * TABLE_ALIGN
}

/// Bytes per gathered row in the kernel's index stream: an int64 index (PyTorch's default),
/// and an f32 per-sample weight beside it when the bags are weighted.
pub fn index_bytes(inst: &EmbeddingBagInstance) -> u64 {
    if inst.weights.is_some() { 12 } else { 8 }
}

/// The kernel of `inst`.
pub fn kernel(spec: &WorkloadSpec, inst: &EmbeddingBagInstance) -> GatherKernel {
    let row_bytes = spec.stored_row_bytes();
    let dim = spec.stored_dim();
    // Each table's first byte: tables may differ in rows (`[[table_indices]]`).
    let mut table_starts = vec![0u64];
    for t in 0..spec.tables.max(1) {
        table_starts.push(table_starts[t as usize] + align(spec.table_rows(t) * row_bytes));
    }
    let all_tables = *table_starts.last().unwrap_or(&0);
    let table = |t: u64, row: u64| table_starts[t as usize] + row * row_bytes;
    let batch = u64::from(spec.batch.max(1));
    let mut bag_offsets = vec![0u32];
    let mut rows: Vec<u64> = Vec::with_capacity(inst.indices.len());
    let mut scatter = None;
    match (&inst.kg, &inst.edges) {
        (Some(kg), _) => {
            // Entities are table 0; relations follow them.
            let relations = all_tables;
            for (g, w) in inst.offsets.windows(2).enumerate() {
                rows.push(table(0, u64::from(kg.heads[g])));
                rows.push(relations + u64::from(kg.relations[g]) * row_bytes);
                rows.extend(
                    inst.indices[w[0] as usize..w[1] as usize].iter().map(|&i| table(0, u64::from(i))),
                );
                bag_offsets.push(rows.len() as u32);
            }
        }
        (None, Some(edges)) if spec.op == Op::GnnScatter => {
            // Destination rows as offsets into the outputs, placed once the streams are laid out.
            let mut targets = Vec::with_capacity(edges.len());
            for chunk in edges.chunks(SCATTER_GROUP) {
                for &(u, v) in chunk {
                    rows.push(table(0, u64::from(u)));
                    targets.push(u64::from(v) * spec.out_row_bytes());
                }
                bag_offsets.push(rows.len() as u32);
            }
            scatter = Some(targets);
        }
        _ => {
            let descriptors = spec.tt.as_ref().map(compiler::frontend::tt_descriptors).unwrap_or_default();
            for (g, w) in inst.offsets.windows(2).enumerate() {
                let t = g as u64 / batch;
                for &i in &inst.indices[w[0] as usize..w[1] as usize] {
                    if descriptors.is_empty() {
                        rows.push(table(t, u64::from(i)));
                    } else {
                        rows.extend(descriptors.iter().map(|&[stride, radix, slice, first]| {
                            table(t, u64::from(i / stride % radix * slice + first))
                        }));
                    }
                }
                bag_offsets.push(rows.len() as u32);
            }
        }
    }
    let index_bytes = index_bytes(inst);
    let at = Streams::new(spec, all_tables, rows.len() as u64, index_bytes);
    if let Some(targets) = &mut scatter {
        targets.iter_mut().for_each(|t| *t += at.output);
    }
    let flops_per_row = match &spec.tt {
        Some(tt) => {
            let (d, r) = ([0, 1, 2].map(|c| tt.factor(c).1), u64::from(tt.rank));
            (2 * (d[0] * r * d[1] * r + d[0] * d[1] * r * d[2])).div_ceil(tt.lookup_rows())
        }
        None => 2 * u64::from(dim),
    };
    let k = GatherKernel {
        bag_offsets,
        rows,
        row_bytes: row_bytes as u32,
        dim,
        index_bytes: index_bytes as u32,
        index_base: at.index,
        offsets_base: at.offsets,
        output_base: at.output,
        output_bytes: if scatter.is_some() { 0 } else { spec.out_row_bytes() as u32 },
        scatter,
        flops_per_row,
        bypass_l1: false,
        row_unroll: spec.tt.is_some().then_some(4),
    };
    // Mappings that balance long bags over many groups (see the module docs).
    match spec.op {
        Op::GnnAggregate => k.split(SPMM_SPLIT),
        Op::SparseAttention => k.split(SPLIT_KV),
        Op::KgScore => k.split(KG_SPLIT),
        _ if spec.tt.is_some() => {
            let per = spec.tt.as_ref().map_or(1, compiler::TtShape::lookup_rows) as usize;
            k.split(per)
        }
        _ => k,
    }
}

/// Where the index, offsets and output streams start: after every table (and, for
/// knowledge graphs, the relation table), each 2 MiB-aligned.
struct Streams {
    index: u64,
    offsets: u64,
    output: u64,
}

impl Streams {
    fn new(spec: &WorkloadSpec, all_tables: u64, rows: u64, index_bytes: u64) -> Self {
        let extra = if spec.op == Op::KgScore { align(spec.relations * spec.stored_row_bytes()) } else { 0 };
        let index = all_tables + extra;
        let offsets = align(index + rows * index_bytes);
        // Offsets of every bag (8 B each, plus the last); bags never outnumber rows + 1 here.
        let output = align(offsets + (rows + 2) * 8 + spec.bags() * 8);
        Self { index, offsets, output }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sim_core::SeedTree;

    fn spec(text: &str) -> WorkloadSpec {
        toml::from_str::<WorkloadSpec>(text).unwrap().resolved().unwrap()
    }

    #[test]
    fn embedding_bag_rows_sit_in_their_tables() {
        let s = spec(
            "name = \"t\"\nop = \"embedding_bag\"\ndtype = \"f32\"\nindices = { distribution = \"uniform\" }\ntables = 2\nrows = 1000\ndim = 32\nbatch = 3\nbag_size = 4\n",
        );
        let inst = EmbeddingBagInstance::generate(&s, &SeedTree::new(7));
        let k = kernel(&s, &inst);
        assert!(k.validate().is_ok());
        assert_eq!(k.bags(), 6);
        assert_eq!(k.rows.len(), 24);
        assert_eq!((k.row_bytes, k.dim, k.index_bytes, k.output_bytes), (128, 32, 8, 128));
        // Bag 4 belongs to table 1, which starts at the 2 MiB boundary after table 0.
        let r = k.rows[k.bag(4).start];
        assert_eq!(r, TABLE_ALIGN + u64::from(inst.indices[16]) * 128);
        assert!(k.index_base >= 2 * TABLE_ALIGN);
    }
}
