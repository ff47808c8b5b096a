//! Where a workload's data lives in the simulated address space.

use crate::embedding_bag::EmbeddingBagInstance;
use crate::workload::WorkloadSpec;

/// What a region holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Contents {
    /// 32-bit words (offsets, indices).
    Words(Vec<u32>),
    /// A procedural table (values from `sim_core::procedural::table_value`), stored in
    /// `format` (f32, f16, bf16: the same values; int8 rows: see `sim_core::procedural`).
    Table {
        /// How its rows are stored.
        format: sim_core::procedural::TableFormat,
        /// Seed of its values.
        seed: u64,
        /// Table number.
        table: u32,
        /// Columns per row.
        dim: u32,
    },
    /// An output buffer, written by the cores.
    Output,
}

/// A named address range and its contents.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataRegion {
    /// Name for reports (`offsets`, `table3`).
    pub name: String,
    /// First byte.
    pub base: u64,
    /// Size in bytes.
    pub size: u64,
    /// Contents.
    pub contents: Contents,
}

/// Addresses of an EmbeddingBag's arrays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// CSR offsets.
    pub offsets: u64,
    /// Row ids.
    pub indices: u64,
    /// Per-lookup weights (f32), if the workload has them.
    pub weights: Option<u64>,
    /// Destination of each edge (message passing; `indices` then holds each edge's source).
    pub dst: Option<u64>,
    /// Knowledge-graph scoring: the head entity and the relation of each triple, and the
    /// relation table (after the entity table).
    pub kg: Option<KgLayout>,
    /// TT-EmbeddingBag: the slice-row descriptors.
    pub tt: Option<TtLayout>,
    /// The cores' private scratch, for ops whose compute keeps values in memory (a TT lookup's
    /// slices; a bag's count of lookups that are not padding; the values the `hoist` pass
    /// computes once per outer iteration).
    pub scratch: Option<Scratch>,
    /// Table 0; table `t` starts `t * stored_rows * stored_row_bytes` later (a TT table is
    /// its cores' rows), or, when the tables differ in rows, `table_first_row(t) *
    /// row_bytes` later.
    pub tables: u64,
    /// When the tables differ in rows: each table's first stacked row (u32), after the tables.
    pub table_base: Option<u64>,
    /// Output rows, one per bag.
    pub output: u64,
}

/// Where a knowledge-graph workload's extra arrays live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KgLayout {
    /// Head entity per triple.
    pub heads: u64,
    /// Relation per triple.
    pub relations: u64,
    /// The relation table (procedural table 1).
    pub relation_table: u64,
}

/// Where a TT-EmbeddingBag's extra arrays live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TtLayout {
    /// The slice-row descriptors (`crate::frontend::tt_descriptors`, four u32 per row).
    pub descriptors: u64,
}

/// The cores' private scratch: one block per core, written and read back by that core only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scratch {
    /// Core 0's block; core `c`'s starts `c * bytes` later.
    pub base: u64,
    /// Bytes of one core's block (whole cache lines).
    pub bytes: u64,
    /// Cores with a block.
    pub cores: u32,
}

impl Scratch {
    /// Core `core`'s block, as the core model takes it.
    pub fn block(&self, core: usize) -> exec_core::OutputBuffer {
        exec_core::OutputBuffer { base: self.base + core as u64 * self.bytes, elems: self.bytes / 4 }
    }
}

const PAGE: u64 = 4096;

/// A region of 32-bit words; an empty list still gets a (never read) word, so every region
/// has a size.
fn words(name: &str, base: u64, mut w: Vec<u32>) -> DataRegion {
    if w.is_empty() {
        w.push(0);
    }
    DataRegion { name: name.into(), base, size: w.len() as u64 * 4, contents: Contents::Words(w) }
}
/// Bytes after the last table a chunked read may touch (the widest vector, 64 lanes of f32).
const TAIL_SLACK: u64 = 256;

/// The first padding row (table 0's; table `t`'s is `t` rows later) in the stacked tables'
/// row numbering: right after the last table, or one row later if that would not start on a
/// 4-byte boundary (2-byte rows of an odd `dim`).
pub fn first_padding_row(spec: &WorkloadSpec) -> u64 {
    let after = spec.stacked_rows();
    if (after * spec.row_bytes()).is_multiple_of(4) { after } else { after + 1 }
}

/// Where each scratch memory of the loop function sits in a core's scratch block (bytes from
/// its start): a TT lookup's slices, then its partial contraction; a bag's count of lookups
/// that are not padding (mean, max) at 0; an int8 lookup's scale and bias at 8. The one place
/// that knows the block's layout: `scratch_bytes` sizes it, code generation places the
/// memories by it.
pub fn scratch_offsets(spec: &WorkloadSpec) -> [(&'static str, u64); 4] {
    use crate::frontend::{BAG_COUNT, QUANT, TT_PARTIAL, TT_SCRATCH};
    let slices = spec.tt.as_ref().map_or(0, |t| t.lookup_rows() * spec.stored_row_bytes());
    [(TT_SCRATCH, 0), (TT_PARTIAL, slices), (BAG_COUNT, 0), (QUANT, 8)]
}

/// Where the `hoist` pass's memory sits in a core's scratch block: after what the op's own
/// compute keeps there ([`scratch_offsets`]), on a cache line of its own.
pub fn hoisted_offset(spec: &WorkloadSpec) -> u64 {
    align(scratch_bytes(spec), 64)
}

/// Bytes of scratch each core's compute needs (see [`scratch_offsets`]; none for most ops).
fn scratch_bytes(spec: &WorkloadSpec) -> u64 {
    if let Some(t) = &spec.tt {
        let (d1, d2) = (t.factor(0).1, t.factor(1).1);
        return (t.lookup_rows() + d1 * d2) * spec.stored_row_bytes();
    }
    if spec.dtype == crate::workload::Dtype::Int8 {
        // The count's word, a spare, then the lookup's scale and bias.
        return 16;
    }
    if spec.padding_idx.is_some() && spec.pooling != crate::workload::Pooling::Sum { 4 } else { 0 }
}

/// Bytes from the end of the tables to the end of the padding rows (none without a padding
/// index).
fn padding_bytes(spec: &WorkloadSpec) -> u64 {
    match spec.padding_idx {
        Some(_) => (first_padding_row(spec) - spec.stacked_rows() + spec.tables as u64) * spec.row_bytes(),
        None => 0,
    }
}

fn align(x: u64, to: u64) -> u64 {
    x.div_ceil(to) * to
}

impl Layout {
    /// Places the arrays of `spec` with inputs `inst` one after another on page boundaries,
    /// from 1 MiB (sized by the instance: GNN bags differ in size), with a scratch for each of
    /// `cores` cores where the op needs one. The tables are followed by unused bytes a chunked
    /// read past a row's end may touch; the table regions themselves end with the last row.
    pub fn plan(spec: &WorkloadSpec, inst: &EmbeddingBagInstance, cores: u32) -> Self {
        Self::plan_with_hoisted(spec, inst, cores, 0)
    }

    /// Like [`Layout::plan`], with `hoisted_bytes` more in each core's scratch, at
    /// [`hoisted_offset`], for the values the `hoist` pass keeps there.
    pub fn plan_with_hoisted(
        spec: &WorkloadSpec,
        inst: &EmbeddingBagInstance,
        cores: u32,
        hoisted_bytes: u64,
    ) -> Self {
        let offsets = 1 << 20;
        let indices = align(offsets + inst.offsets.len().max(1) as u64 * 4, PAGE);
        let after_indices = align(indices + inst.indices.len().max(1) as u64 * 4, PAGE);
        let (weights, after_weights) = match &inst.weights {
            Some(w) => (Some(after_indices), align(after_indices + w.len().max(1) as u64 * 4, PAGE)),
            None => (None, after_indices),
        };
        let (dst, after_dst) = match &inst.edges {
            Some(e) => (Some(after_weights), align(after_weights + e.len().max(1) as u64 * 4, PAGE)),
            None => (None, after_weights),
        };
        let (kg_arrays, tables) = match &inst.kg {
            Some(k) => {
                let rel = align(after_dst + k.heads.len().max(1) as u64 * 4, PAGE);
                ((after_dst, rel), align(rel + k.relations.len().max(1) as u64 * 4, PAGE))
            }
            None => ((0, 0), after_dst),
        };
        let all_tables = spec.stacked_rows() * spec.stored_row_bytes();
        // A vector stream's last chunk of a row may read up to a vector past the row's end.
        let mut end = align(tables + all_tables + padding_bytes(spec) + TAIL_SLACK, PAGE);
        let table_base = (!spec.uniform_tables()).then(|| {
            let at = end;
            end = align(at + u64::from(spec.tables) * 4, PAGE);
            at
        });
        let tt = spec.tt.as_ref().map(|t| {
            let descriptors = end;
            end = align(descriptors + t.lookup_rows() * 16, PAGE);
            TtLayout { descriptors }
        });
        let block =
            if hoisted_bytes > 0 { hoisted_offset(spec) + hoisted_bytes } else { scratch_bytes(spec) };
        let scratch = (block > 0).then(|| {
            let s = Scratch { base: end, bytes: align(block, 64), cores: cores.max(1) };
            end = align(s.base + u64::from(s.cores) * s.bytes, PAGE);
            s
        });
        let kg = inst.kg.as_ref().map(|_| {
            let relation_table = end;
            end = align(relation_table + spec.relations * spec.row_bytes() + TAIL_SLACK, PAGE);
            KgLayout { heads: kg_arrays.0, relations: kg_arrays.1, relation_table }
        });
        Self { offsets, indices, weights, dst, kg, tt, scratch, tables, table_base, output: end }
    }

    /// The regions of this layout filled with `inst`'s data.
    pub fn regions(&self, spec: &WorkloadSpec, inst: &EmbeddingBagInstance) -> Vec<DataRegion> {
        let row_bytes = spec.stored_row_bytes();
        let mut r = vec![
            words("offsets", self.offsets, inst.offsets.clone()),
            words("indices", self.indices, inst.indices.clone()),
        ];
        if let (Some(base), Some(w)) = (self.weights, &inst.weights) {
            r.push(words("weights", base, w.iter().map(|x| x.to_bits()).collect()));
        }
        if let (Some(base), Some(e)) = (self.dst, &inst.edges) {
            r.push(words("dst", base, e.iter().map(|&(_, d)| d).collect()));
        }
        if let (Some(l), Some(k)) = (self.kg, &inst.kg) {
            r.push(words("heads", l.heads, k.heads.clone()));
            r.push(words("relations", l.relations, k.relations.clone()));
            r.push(DataRegion {
                name: "relation_table".into(),
                base: l.relation_table,
                size: spec.relations * spec.row_bytes(),
                contents: Contents::Table {
                    format: spec.dtype.format(),
                    seed: inst.table_seed,
                    table: 1,
                    dim: spec.dim,
                },
            });
        }
        if spec.padding_idx.is_some() {
            // Each table's padding row, after the last table: what a padding lookup reads
            // instead (see `crate::frontend::lower`).
            // Zeros, or for max a value below every row's: f32::MIN, or -inf in a 2-byte type
            // (the bag's maximum starts at f32::MIN, so it never becomes -inf).
            use crate::workload::{Dtype, Pooling};
            use sim_core::procedural::{f32_to_bf16, f32_to_f16};
            let max = spec.pooling == Pooling::Max;
            let element: Vec<u8> = match spec.dtype {
                Dtype::F16 => f32_to_f16(if max { f32::NEG_INFINITY } else { 0.0 }).to_le_bytes().to_vec(),
                Dtype::Bf16 => f32_to_bf16(if max { f32::NEG_INFINITY } else { 0.0 }).to_le_bytes().to_vec(),
                // Values 0, scale 0, bias 0 or f32::MIN: dequantized, 0 or f32::MIN.
                Dtype::Int8 => {
                    let mut row = vec![0u8; spec.dim as usize + 4];
                    row.extend((if max { f32::MIN } else { 0.0 }).to_le_bytes());
                    row
                }
                _ => (if max { f32::MIN } else { 0.0 }).to_le_bytes().to_vec(),
            };
            let per_row = if spec.dtype == Dtype::Int8 { 1 } else { spec.dim as usize };
            let mut bytes = element.repeat(spec.tables as usize * per_row);
            bytes.resize(bytes.len().div_ceil(4) * 4, 0);
            let w = bytes.chunks(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
            let base = self.tables + first_padding_row(spec) * spec.row_bytes();
            r.push(words("padding_rows", base, w));
        }
        if let Some(base) = self.table_base {
            let firsts = (0..spec.tables).map(|t| spec.table_first_row(t) as u32).collect();
            r.push(words("table_base", base, firsts));
        }
        let mut first = 0;
        for t in 0..spec.tables {
            let rows = spec.table_rows(t);
            r.push(DataRegion {
                name: format!("table{t}"),
                base: self.tables + first * row_bytes,
                size: rows * row_bytes,
                contents: Contents::Table {
                    format: spec.dtype.format(),
                    seed: inst.table_seed,
                    table: t,
                    dim: spec.stored_dim(),
                },
            });
            first += rows;
        }
        if let (Some(l), Some(shape)) = (self.tt, &spec.tt) {
            let words_of: Vec<u32> = crate::frontend::tt_descriptors(shape).concat();
            r.push(words("tt_rows", l.descriptors, words_of));
        }
        if let Some(s) = self.scratch {
            r.push(DataRegion {
                name: "scratch".into(),
                base: s.base,
                size: u64::from(s.cores) * s.bytes,
                contents: Contents::Output,
            });
        }
        r.push(DataRegion {
            name: "output".into(),
            base: self.output,
            size: (spec.bags() * spec.out_row_bytes()).max(4),
            contents: Contents::Output,
        });
        r
    }
}
