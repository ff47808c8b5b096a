//! Workload descriptions: what users write in `configs/workloads/*.toml`.
//!
//! ```toml
//! name = "dlrm-small"
//! op = "embedding_bag"
//! pooling = "sum"
//! tables = 4
//! rows = 1000000
//! dim = 64
//! dtype = "f32"
//! batch = 256
//! bag_size = 20
//! [indices]
//! distribution = "zipf"      # or "uniform"
//! alpha = 1.05
//! ```
//!
//! GNN aggregation (`op = "gnn_aggregate"`) sums each vertex's in-neighbours' feature rows; its
//! `[graph]` section replaces `tables`, `rows`, `bag_size` and `[indices]`, which
//! [`WorkloadSpec::resolved`] derives from the graph (one table of one row per vertex,
//! `edge_factor` lookups per bag on average). `batch`, if given, aggregates only the first
//! `batch` vertices (a mini-batch of destinations; labels are scrambled, so they are a random
//! sample); by default every vertex. `[graph] fanout = k` keeps at most `k` in-neighbours per
//! vertex, sampled as GraphSAGE samples them ([`crate::graph`]):
//!
//! ```toml
//! name = "gnn-rmat"
//! op = "gnn_aggregate"
//! dim = 64
//! dtype = "f32"
//! [graph]
//! generator = "rmat"
//! scale = 15
//! edge_factor = 16
//! ```
//!
//! The graph may instead be a real one, an edge list read from a file (`[graph] file = "...",
//! format = "cora" | "snap" | "mtx"`, optionally `symmetric`, `dedup`, `self_loops` and a
//! `vertices` check; see [`crate::graph`]). Knowledge-graph scoring likewise reads its triples from a file with
//! `triples = "..."` (integer `head relation tail` lines) instead of drawing them from
//! `[indices]`, or with names (`head<TAB>relation<TAB>tail`, FB15k-237's own files) read
//! through `entity_dict = "..."` and `relation_dict = "..."` (`<id>\t<name>` lines,
//! [`crate::kg_dict`]). Paths are relative to the file that names them; dae-sim reads the
//! files when the config loads, decompressing one whose name ends in `.gz`.
//!
//! Tables may differ (`[[table_indices]]`, embedding bags and TT-EmbeddingBags): each entry
//! covers the next `tables` tables (default 1), in table order, and may give them their own
//! index distribution (default `[indices]`), their own `rows` (at most the workload's `rows`)
//! and their own `bag_size` (lookups per bag, default the workload's `bag_size`, which may then
//! be left out if every table has its own); tables that no entry covers take the workload's.
//! An embedding bag's table of fewer rows is stored in fewer bytes: tables are stacked one
//! after the other, table `t` from the sum of the rows of the tables before it (a
//! TT-EmbeddingBag's tables are cores of one shape, so there `rows` only limits the row ids
//! drawn). Production tables differ this way: a few small, hot ones and many large, rarely
//! reused ones, and MLPerf's DLRM-v2 reads 1 to 100 rows per table and sample (REFERENCE.md
//! section 4):
//!
//! ```toml
//! [[table_indices]]
//! tables = 2                 # tables 0 and 1
//! distribution = "zipf"
//! alpha = 1.2
//! rows = 1000                # 1,000 rows each
//! bag_size = 3               # 3 lookups per bag
//! [[table_indices]]          # table 2: [indices], all `rows`, 100 lookups per bag
//! bag_size = 100
//! ```
//!
//! A TT-EmbeddingBag (`op = "tt_embedding_bag"`) is an embedding bag whose tables are stored
//! as tensor-train cores ([`TtShape`]); `rows` defaults to the product of the row factors:
//!
//! ```toml
//! name = "tt-rec"
//! op = "tt_embedding_bag"
//! tables = 8
//! dim = 64
//! dtype = "f32"
//! batch = 64
//! bag_size = 20
//! [indices]
//! distribution = "uniform"
//! [tt]
//! row_factors = [100, 100, 100]
//! dim_factors = [4, 4, 4]
//! rank = 16
//! ```

use crate::graph::GraphSpec;
use serde::Deserialize;
use thiserror::Error;

/// The operation a workload runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Op {
    /// PyTorch `nn.EmbeddingBag` over several tables.
    EmbeddingBag,
    /// GNN neighbour aggregation: `out[v] = sum of x[u] over the edges u -> v` (an SpMM of the
    /// adjacency matrix with the feature matrix, as PyG's `scatter(..., reduce="sum")`; with
    /// `weights`, the edge-weighted SpMM).
    GnnAggregate,
    /// GNN message passing over the edge list: for every edge `u -> v`, in the list's order,
    /// gather `x[u]` and scatter-add it into `out[v]` (PyG's `MessagePassing` with `aggr="add"`,
    /// `index_add_` of the gathered rows). The same sum as `gnn_aggregate`, computed edge by
    /// edge with a read-modify-write of the destination's row instead of a bag per vertex.
    GnnScatter,
    /// Knowledge-graph scoring: each of `batch` (head, relation, tail) triples is scored against
    /// its true tail and `negatives` corrupted tails (entities of an `rows`-row table,
    /// relations of a `relations`-row table), by the `model` score function.
    KgScore,
    /// Sparse attention's KV gather: each query gathers its top-k KV rows of its head's cache
    /// (`tables` heads of `rows` positions, `batch` queries per head, `bag_size` = k, in blocks
    /// of `block` consecutive positions) and sums them weighted by its attention scores.
    SparseAttention,
    /// TT-EmbeddingBag (TT-Rec, FBGEMM's `TTEmbeddingBag`): an embedding bag whose tables are
    /// stored as three tensor-train cores (`[tt]`); a lookup contracts the cores' slices that
    /// the row id's mixed-radix digits select into the row, then the bag pools the rows.
    TtEmbeddingBag,
}

/// The tensor-train shape of a TT-EmbeddingBag's tables (TT-Rec, REFERENCE.md section 4).
///
/// A table of `rows x dim` is three cores `G1, G2, G3`: row id `i` has the mixed-radix digits
/// `(i1, i2, i3)`, `i = (i1 * n2 + i2) * n3 + i3`, and column `(a1 * d2 + a2) * d3 + a3` of its
/// row is `sum over r1, r2 of G1[i1][a1][r1] * G2[i2][r1][a2][r2] * G3[i3][a3][r2]`. Each
/// core is stored as rows of `rank` values, slice by slice: `G1` as `n1 x d1` rows, `G2` as
/// `n2 x rank x d2` rows, `G3` as `n3 x d3` rows (the last core transposed, so that its rows
/// run over the rank as the others do).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TtShape {
    /// `[n1, n2, n3]`: their product is at least the table's rows.
    pub row_factors: Vec<u32>,
    /// `[d1, d2, d3]`: their product is the row's `dim`.
    pub dim_factors: Vec<u32>,
    /// The TT rank between consecutive cores.
    pub rank: u32,
}

impl TtShape {
    /// `(n, d)` of core `c`.
    pub fn factor(&self, c: usize) -> (u64, u64) {
        (u64::from(self.row_factors[c]), u64::from(self.dim_factors[c]))
    }

    /// Stored rows (of `rank` values) of one slice of core `c`: `d1`, `rank x d2`, `d3`.
    pub fn slice_rows(&self, c: usize) -> u64 {
        let (_, d) = self.factor(c);
        if c == 1 { u64::from(self.rank) * d } else { d }
    }

    /// The first stored row of core `c` within a table.
    pub fn core_start(&self, c: usize) -> u64 {
        (0..c).map(|k| self.factor(k).0 * self.slice_rows(k)).sum()
    }

    /// Stored rows of one table's three cores.
    pub fn table_rows(&self) -> u64 {
        self.core_start(3)
    }

    /// Stored rows one lookup reads: one slice of each core.
    pub fn lookup_rows(&self) -> u64 {
        (0..3).map(|c| self.slice_rows(c)).sum()
    }

    /// The digit of row id `i` that selects core `c`'s slice, and its weight (`n2 n3`, `n3`,
    /// 1).
    pub fn digit(&self, c: usize, i: u64) -> u64 {
        (i / self.stride(c)) % self.factor(c).0
    }

    /// The place value of core `c`'s digit.
    pub fn stride(&self, c: usize) -> u64 {
        (c + 1..3).map(|k| self.factor(k).0).product()
    }

    /// Checks the shape against the workload's `rows` and `dim`.
    fn check(&self, rows: u64, dim: u32) -> Result<(), WorkloadError> {
        if self.row_factors.len() != 3 || self.dim_factors.len() != 3 {
            return Err(bad("tt", "row_factors and dim_factors take three factors each (three TT cores)"));
        }
        if self.row_factors.iter().chain(&self.dim_factors).any(|&f| f == 0) || self.rank == 0 {
            return Err(bad("tt", "factors and rank must be at least 1"));
        }
        let n: u64 = self.row_factors.iter().map(|&f| u64::from(f)).product();
        if n < rows {
            return Err(bad("tt.row_factors", format!("their product {n} is less than rows = {rows}")));
        }
        let d: u64 = self.dim_factors.iter().map(|&f| u64::from(f)).product();
        if d != u64::from(dim) {
            return Err(bad("tt.dim_factors", format!("their product {d} is not dim = {dim}")));
        }
        if self.rank > 64 {
            return Err(bad("tt.rank", format!("{} exceeds 64 (a rank row is marshaled whole)", self.rank)));
        }
        if self.table_rows() > u64::from(u32::MAX) {
            return Err(bad("tt", "the cores exceed 2^32 stored rows"));
        }
        Ok(())
    }
}

/// How the rows of a bag are combined.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Pooling {
    /// Sum of the rows.
    #[default]
    Sum,
    /// Mean of the rows.
    Mean,
    /// Element-wise maximum.
    Max,
}

/// A knowledge-graph embedding model's score of a triple (h, r, t), over rows of `dim`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KgModel {
    /// TransE with the L1 distance: `-sum |h + r - t|` (Bordes et al., 2013).
    #[serde(rename = "transe")]
    TransE,
    /// DistMult: `sum h * r * t` (Yang et al., 2015).
    #[serde(rename = "distmult")]
    DistMult,
    /// ComplEx: `Re(sum h * r * conj(t))` over `dim / 2` complex numbers, each row holding the
    /// real parts then the imaginary parts (Trouillon et al., 2016).
    #[serde(rename = "complex")]
    ComplEx,
}

/// Element type of the tables: values are converted to f32 on load, and pooling, weights and
/// outputs are f32 (as FBGEMM's table-batched embeddings with fp16 weights and fp32 output).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Dtype {
    /// 32-bit float.
    F32,
    /// 16-bit float.
    F16,
    /// bfloat16.
    Bf16,
    /// 8-bit integer rows with scale and bias.
    Int8,
}

impl Dtype {
    /// How rows of this type are stored (the memory image's and the core's format).
    pub fn format(self) -> sim_core::procedural::TableFormat {
        use sim_core::procedural::TableFormat;
        match self {
            Dtype::F32 => TableFormat::F32,
            Dtype::F16 => TableFormat::F16,
            Dtype::Bf16 => TableFormat::Bf16,
            Dtype::Int8 => TableFormat::Int8,
        }
    }
}

/// Distribution of lookup indices.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(tag = "distribution", rename_all = "snake_case", deny_unknown_fields)]
pub enum IndexDistribution {
    /// Every row equally likely.
    Uniform,
    /// Zipf with exponent `alpha` over rows ranked by popularity, ranks randomly permuted onto
    /// row ids (as FBGEMM's benchmarks do).
    Zipf {
        /// Exponent (FBGEMM uses 1.15 for training, 1.09 for inference).
        alpha: f64,
    },
}

/// The shape of a `[[table_indices]]` entry's distribution.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DistributionKind {
    /// Every row equally likely.
    Uniform,
    /// Zipf (takes `alpha`).
    Zipf,
}

/// One `[[table_indices]]` entry: the shape and index distribution of the next `tables`
/// tables (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TableIndices {
    /// Consecutive tables this entry covers (default 1).
    #[serde(default = "one")]
    pub tables: u32,
    /// Their distribution (default: the workload's `[indices]`).
    #[serde(default)]
    pub distribution: Option<DistributionKind>,
    /// Zipf exponent (required for, and only taken by, `distribution = "zipf"`).
    #[serde(default)]
    pub alpha: Option<f64>,
    /// Rows of each of these tables (default: the workload's `rows`, at most that): an
    /// embedding bag stores only these; a TT-EmbeddingBag draws its row ids from them.
    #[serde(default)]
    pub rows: Option<u64>,
    /// Lookups per bag of these tables (default: the workload's `bag_size`).
    #[serde(default)]
    pub bag_size: Option<u32>,
}

fn one() -> u32 {
    1
}

impl TableIndices {
    /// The distribution, checked (`entry` numbers the entry in messages): `None` when the entry
    /// leaves it to `[indices]`.
    fn distribution(&self, entry: usize) -> Result<Option<IndexDistribution>, WorkloadError> {
        match (self.distribution, self.alpha) {
            (None, None) => Ok(None),
            (Some(DistributionKind::Uniform), None) => Ok(Some(IndexDistribution::Uniform)),
            (None | Some(DistributionKind::Uniform), Some(_)) => {
                Err(bad("table_indices", format!("entry {entry}: alpha is only for distribution = \"zipf\"")))
            }
            (Some(DistributionKind::Zipf), Some(alpha)) if alpha.is_finite() && alpha > 0.0 => {
                Ok(Some(IndexDistribution::Zipf { alpha }))
            }
            (Some(DistributionKind::Zipf), Some(alpha)) => {
                Err(bad("table_indices", format!("entry {entry}: alpha = {alpha} must be a positive number")))
            }
            (Some(DistributionKind::Zipf), None) => {
                Err(bad("table_indices", format!("entry {entry}: distribution = \"zipf\" needs alpha")))
            }
        }
    }
}

/// An index trace (paths relative to the file that names them; the binary reads them, the
/// compiler checks them): `.npy` files of table-major CSR offsets (`tables x batch + 1`
/// entries) or bag lengths (`tables x batch`) and row ids, the layouts of Meta's released
/// embedding traces and of PyTorch's `EmbeddingBag` inputs, or a `.daeidx` file
/// ([`crate::trace`]), whose batches the workload runs one after another (`batches`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "RawTrace")]
pub enum TraceFiles {
    /// `offsets = "..."` and `indices = "..."`: two `.npy` files.
    Npy {
        /// The offsets file.
        offsets: String,
        /// The row ids file.
        indices: String,
    },
    /// `lengths = "..."` and `indices = "..."`: bag lengths instead of offsets.
    NpyLengths {
        /// The lengths file.
        lengths: String,
        /// The row ids file.
        indices: String,
    },
    /// `file = "..."`: a `.daeidx` trace.
    Daeidx {
        /// The trace file.
        file: String,
    },
}

/// `[trace]` as written: either the two `.npy` files or one `.daeidx` file.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTrace {
    offsets: Option<String>,
    lengths: Option<String>,
    indices: Option<String>,
    file: Option<String>,
}

impl TryFrom<RawTrace> for TraceFiles {
    type Error = String;

    fn try_from(r: RawTrace) -> Result<Self, String> {
        match (r.offsets, r.lengths, r.indices, r.file) {
            (Some(offsets), None, Some(indices), None) => Ok(TraceFiles::Npy { offsets, indices }),
            (None, Some(lengths), Some(indices), None) => Ok(TraceFiles::NpyLengths { lengths, indices }),
            (None, None, None, Some(file)) => Ok(TraceFiles::Daeidx { file }),
            (Some(_), Some(_), _, _) => Err("give offsets or lengths, not both".into()),
            (_, _, _, Some(_)) => {
                Err("give file = \"x.daeidx\" or offsets and indices (.npy), not both".into())
            }
            _ => Err("needs offsets (or lengths) and indices (.npy files) or file (a .daeidx trace)".into()),
        }
    }
}

/// A workload as written in TOML.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkloadSpec {
    /// Name used in reports.
    pub name: String,
    /// The operation.
    pub op: Op,
    /// Pooling of each bag (default sum).
    #[serde(default)]
    pub pooling: Pooling,
    /// Number of tables (embedding bags; derived from the graph for GNN aggregation).
    #[serde(default)]
    pub tables: u32,
    /// Rows per table (embedding bags; derived from the graph for GNN aggregation).
    #[serde(default)]
    pub rows: u64,
    /// Columns per row.
    pub dim: u32,
    /// Element type.
    pub dtype: Dtype,
    /// Bags per table (samples in the batch; destination vertices for GNN aggregation, all by
    /// default).
    #[serde(default)]
    pub batch: u32,
    /// Lookups per bag (the graph's mean in-degree, for GNN aggregation, where bags differ;
    /// the default of tables whose `[[table_indices]]` entry gives none; with every table's
    /// own, it may be left out and is then their mean per bag, rounded up, informational).
    #[serde(default)]
    pub bag_size: u32,
    /// Per-lookup weights (PyTorch's `per_sample_weights`; edge weights for GNN aggregation):
    /// each lookup's row is scaled by its weight before the sum. Sum pooling only, as in
    /// PyTorch.
    #[serde(default)]
    pub weights: bool,
    /// Sparse attention: positions are selected in blocks of this many consecutive rows
    /// (block-sparse attention; 1 selects single positions, top-k). Must divide `bag_size`.
    #[serde(default)]
    pub block: u32,
    /// How indices are drawn (embedding bags; the blocks of sparse attention).
    #[serde(default)]
    pub indices: Option<IndexDistribution>,
    /// Embedding bags: per-table index distributions, in table order, overriding `[indices]`
    /// for the tables they cover (see the module docs).
    #[serde(default)]
    pub table_indices: Vec<TableIndices>,
    /// Embedding bags: the indices from a trace instead of a generator (`bag_size` is then
    /// the trace's mean, informational).
    #[serde(default)]
    pub trace: Option<TraceFiles>,
    /// The graph (GNN aggregation only).
    #[serde(default)]
    pub graph: Option<GraphSpec>,
    /// Knowledge-graph scoring: the score function.
    #[serde(default)]
    pub model: Option<KgModel>,
    /// Knowledge-graph scoring: rows of the relation table.
    #[serde(default)]
    pub relations: u64,
    /// Knowledge-graph scoring: corrupted tails scored per triple, besides the true one.
    #[serde(default)]
    pub negatives: u32,
    /// Knowledge-graph scoring: the triples from a file instead of drawn from `[indices]`:
    /// `head relation tail` integer ids a line (entities below `rows`, relations below
    /// `relations`), relative to the file that names it; the first `batch` are scored, in the
    /// file's order (the binary reads it; [`crate::EmbeddingBagInstance::from_triples`]).
    #[serde(default)]
    pub triples: Option<String>,
    /// Knowledge-graph scoring: the triples file holds names, `head<TAB>relation<TAB>tail`,
    /// read through this dictionary of entities (`<id>\t<name>` lines, dense ids; relative to
    /// the file that names it; [`crate::kg_dict`]); with `relation_dict`.
    #[serde(default)]
    pub entity_dict: Option<String>,
    /// Knowledge-graph scoring: the dictionary of relation names, with `entity_dict`.
    #[serde(default)]
    pub relation_dict: Option<String>,
    /// TT-EmbeddingBag: the tensor-train shape of every table.
    #[serde(default)]
    pub tt: Option<TtShape>,
    /// Embedding bags: lookups of this row id (in any table) are left out of their bag, as
    /// PyTorch's `padding_idx`: not summed, not counted by mean, not in the maximum (a bag of
    /// padding only pools to zeros).
    #[serde(default)]
    pub padding_idx: Option<u32>,
    /// End-to-end mode: the dense layers around the operation (MLPs, attention), run as a
    /// roofline on each system's dense units ([`crate::dense`]).
    #[serde(default)]
    pub dense: Vec<crate::dense::DenseLayer>,
    /// Batches run one after another, each with its own indices (drawn afresh, or the next
    /// batch of a `.daeidx` trace) and one at a time in memory; 0 (unset): one batch, or every
    /// batch of a `.daeidx` trace.
    #[serde(default)]
    pub batches: u64,
}

/// A workload the compiler cannot take, naming the field at fault.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{field}: {message}")]
pub struct WorkloadError {
    /// The field (as written in the workload file).
    pub field: &'static str,
    /// What is wrong with it.
    pub message: String,
}

fn bad(field: &'static str, message: impl Into<String>) -> WorkloadError {
    WorkloadError { field, message: message.into() }
}

impl WorkloadSpec {
    /// The spec with the fields its op derives filled in (GNN aggregation: one table with a row
    /// and a bag per vertex), checked with [`WorkloadSpec::validate`]. Fields the op does not
    /// take are errors, so a mistyped workload never silently runs as something else.
    pub fn resolved(&self) -> Result<WorkloadSpec, WorkloadError> {
        let mut w = self.clone();
        let streams = matches!(self.op, Op::EmbeddingBag | Op::TtEmbeddingBag) && self.graph.is_none();
        if self.batches > 1 && !streams {
            return Err(bad(
                "batches",
                "only embedding_bag and tt_embedding_bag workloads (without a graph) run several batches",
            ));
        }
        if self.batches > 1
            && matches!(self.trace, Some(TraceFiles::Npy { .. } | TraceFiles::NpyLengths { .. }))
        {
            return Err(bad("batches", "an .npy trace holds one batch; a .daeidx trace can hold several"));
        }
        match self.op {
            Op::EmbeddingBag if self.trace.is_some() => {
                if self.indices.is_some() || self.weights {
                    return Err(bad("trace", "a trace replaces [indices] and carries no weights"));
                }
                let shape =
                    WorkloadSpec { indices: Some(IndexDistribution::Uniform), bag_size: 1, ..self.clone() };
                shape.require_table_shape("embedding_bag")?;
                if w.bag_size == 0 {
                    // Set from the trace when it is read; nominal until then.
                    w.bag_size = 1;
                }
            }
            Op::EmbeddingBag => {
                self.require_table_shape("embedding_bag")?;
                w.bag_size = self.nominal_bag_size();
            }
            Op::TtEmbeddingBag => {
                let Some(tt) = &self.tt else {
                    return Err(bad("tt", "required for op = \"tt_embedding_bag\""));
                };
                if self.rows == 0 {
                    // Every row the factors address.
                    w.rows = tt.row_factors.iter().map(|&f| u64::from(f)).product();
                }
                w.require_table_shape("tt_embedding_bag")?;
                w.bag_size = self.nominal_bag_size();
                if self.pooling == Pooling::Max || self.weights {
                    return Err(bad(
                        "pooling",
                        "a TT-EmbeddingBag pools by sum or mean, without per-lookup weights (as FBGEMM's)",
                    ));
                }
            }
            Op::KgScore => {
                if self.pooling != Pooling::Sum {
                    return Err(bad("pooling", "kg_score scores each candidate tail; it pools nothing"));
                }
                if self.graph.is_some() || self.weights || self.tables > 1 || self.bag_size != 0 {
                    return Err(bad(
                        "op",
                        "kg_score takes rows, relations, negatives, model, batch, dim and [indices] \
                         (no graph, weights, tables or bag_size)",
                    ));
                }
                match (&self.triples, &self.entity_dict, &self.relation_dict) {
                    (_, None, None) | (Some(_), Some(_), Some(_)) => {}
                    (None, _, _) => {
                        let field = if self.entity_dict.is_some() { "entity_dict" } else { "relation_dict" };
                        return Err(bad(field, "dictionaries are for a triples file of names: give triples"));
                    }
                    (Some(_), None, Some(_)) => {
                        return Err(bad(
                            "entity_dict",
                            "required with relation_dict (a triples file of names)",
                        ));
                    }
                    (Some(_), Some(_), None) => {
                        return Err(bad(
                            "relation_dict",
                            "required with entity_dict (a triples file of names)",
                        ));
                    }
                }
                if self.triples.is_some() && self.indices.is_some() {
                    return Err(bad(
                        "triples",
                        "a triples file replaces [indices] (heads, relations and true tails come from \
                         the file; negatives are drawn uniformly)",
                    ));
                }
                for (field, missing) in [
                    ("rows", self.rows == 0),
                    ("relations", self.relations == 0),
                    ("batch", self.batch == 0),
                    ("model", self.model.is_none()),
                    ("indices", self.indices.is_none() && self.triples.is_none()),
                ] {
                    if missing {
                        let also = if field == "indices" { " (or a triples file)" } else { "" };
                        return Err(bad(field, format!("required (at least 1) for op = \"kg_score\"{also}")));
                    }
                }
                if self.model == Some(KgModel::ComplEx) && self.dim % 2 == 1 {
                    return Err(bad(
                        "dim",
                        format!("{} is odd: a ComplEx row holds real and imaginary halves", self.dim),
                    ));
                }
                // One bag per triple: its candidate tails.
                w.tables = 1;
                w.bag_size = self.negatives.saturating_add(1);
            }
            Op::SparseAttention => {
                self.require_table_shape("sparse_attention")?;
                if self.pooling != Pooling::Sum {
                    return Err(bad("pooling", "sparse attention sums the rows weighted by the scores"));
                }
                let block = self.block.max(1);
                if !self.bag_size.is_multiple_of(block) {
                    return Err(bad("block", format!("{block} does not divide bag_size {}", self.bag_size)));
                }
                // Distinct blocks are drawn by rejection: keep them at most half of the context.
                if 2 * u64::from(self.bag_size / block) > self.rows / u64::from(block) {
                    return Err(bad(
                        "bag_size",
                        format!(
                            "{} positions in blocks of {block} exceed half of the {} rows (top-k selects few)",
                            self.bag_size, self.rows
                        ),
                    ));
                }
                w.block = block;
                // The attention scores weight the rows.
                w.weights = true;
            }
            Op::GnnAggregate | Op::GnnScatter => {
                let Some(g) = &self.graph else {
                    return Err(bad("graph", "required for a GNN op"));
                };
                if self.op == Op::GnnScatter && self.weights {
                    return Err(bad(
                        "weights",
                        "op = \"gnn_scatter\" takes no edge weights (use gnn_aggregate)",
                    ));
                }
                for (field, set) in [
                    ("tables", self.tables != 0),
                    ("rows", self.rows != 0),
                    ("bag_size", self.bag_size != 0),
                    ("indices", self.indices.is_some()),
                ] {
                    if set {
                        return Err(bad(field, "not used by a GNN op: the graph sets it"));
                    }
                }
                g.check().map_err(|(field, message)| bad(field, message))?;
                if u64::from(self.batch) > g.vertices() {
                    return Err(bad(
                        "batch",
                        format!("{} destination vertices, but the graph has {}", self.batch, g.vertices()),
                    ));
                }
                w.tables = 1;
                w.rows = g.vertices();
                if w.batch == 0 {
                    w.batch = g.vertices() as u32;
                }
                // The mean in-degree, capped at a sampled graph's fanout: an upper bound on a
                // sampled bag's mean (the instance holds the real count).
                w.bag_size = (g.edges() / g.vertices()).min(u64::from(g.fanout().unwrap_or(u32::MAX))) as u32;
            }
        }
        w.validate()?;
        Ok(w)
    }

    /// The fields an op over explicit tables needs (`op` names it in the message), and no graph.
    fn require_table_shape(&self, op: &str) -> Result<(), WorkloadError> {
        if self.graph.is_some() {
            return Err(bad("graph", "only the GNN ops take a graph"));
        }
        for (field, missing) in [
            ("tables", self.tables == 0),
            ("rows", self.rows == 0),
            ("batch", self.batch == 0),
            ("bag_size", self.bag_size == 0 && !self.every_table_has_bag_size()),
            ("indices", self.indices.is_none()),
        ] {
            if missing {
                let also = if field == "bag_size" { " (or one per table in [[table_indices]])" } else { "" };
                return Err(bad(field, format!("required (at least 1) for op = \"{op}\"{also}")));
            }
        }
        Ok(())
    }

    /// Whether `[[table_indices]]` entries give every table its own `bag_size`.
    fn every_table_has_bag_size(&self) -> bool {
        let with: u64 =
            self.table_indices.iter().filter(|e| e.bag_size.is_some()).map(|e| u64::from(e.tables)).sum();
        self.tables > 0 && with >= u64::from(self.tables)
    }

    /// `bag_size` as given, or, when every table has its own, their mean per bag rounded up.
    fn nominal_bag_size(&self) -> u32 {
        if self.bag_size > 0 || !self.every_table_has_bag_size() {
            return self.bag_size;
        }
        let per_sample = self.lookups() / u64::from(self.batch.max(1));
        per_sample.div_ceil(u64::from(self.tables.max(1))).clamp(1, u64::from(u32::MAX)) as u32
    }

    /// Checks the values the code generator relies on (of a [`WorkloadSpec::resolved`] spec).
    pub fn validate(&self) -> Result<(), WorkloadError> {
        for layer in &self.dense {
            layer.validate().map_err(|m| bad("dense", format!("{}: {m}", layer.name())))?;
        }
        if self.weights && self.pooling != Pooling::Sum {
            return Err(bad(
                "weights",
                format!("per-lookup weights need pooling = \"sum\" (as in PyTorch), not {:?}", self.pooling),
            ));
        }
        match (self.dtype, self.op) {
            (Dtype::F32, _) => {}
            (_, Op::TtEmbeddingBag) => {
                return Err(bad(
                    "dtype",
                    format!(
                        "{:?} cores: a TT-EmbeddingBag's cores are f32 (use dtype = \"f32\")",
                        self.dtype
                    ),
                ));
            }
            (Dtype::Int8, Op::KgScore | Op::GnnScatter) => {
                return Err(bad(
                    "dtype",
                    "int8 rows are for embedding bags, GNN aggregation and sparse attention; use \"f32\", \"f16\" \
                     or \"bf16\"",
                ));
            }
            (Dtype::Int8, _) if !self.dim.is_multiple_of(4) => {
                return Err(bad(
                    "dim",
                    format!(
                        "{} is not a multiple of 4: an int8 row's f32 scale and bias follow its values",
                        self.dim
                    ),
                ));
            }
            (Dtype::Int8, _) => {}
            (Dtype::F16 | Dtype::Bf16, _) => {}
        }
        if self.tables == 0 {
            return Err(bad("tables", "must be at least 1"));
        }
        if self.rows == 0 || self.rows > u32::MAX as u64 {
            return Err(bad("rows", format!("{} is outside 1..=4294967295 (indices are 32-bit)", self.rows)));
        }
        if self.dim == 0 || self.dim > crate::codegen::MAX_DIM {
            return Err(bad("dim", format!("{} is outside 1..={}", self.dim, crate::codegen::MAX_DIM)));
        }
        let lookups = self.lookups();
        if lookups > u32::MAX as u64 {
            return Err(bad("batch", format!("{lookups} lookups in all do not fit 32-bit offsets")));
        }
        if let Some(IndexDistribution::Zipf { alpha }) = self.indices
            && !(alpha.is_finite() && alpha > 0.0)
        {
            return Err(bad("indices.alpha", format!("{alpha} must be a positive number")));
        }
        self.check_table_indices()?;
        if self.trace.is_some() && self.op != Op::EmbeddingBag {
            return Err(bad("trace", "only op = \"embedding_bag\" reads an index trace"));
        }
        if self.op != Op::KgScore && (self.model.is_some() || self.relations != 0 || self.negatives != 0) {
            return Err(bad("model", "model, relations and negatives are for op = \"kg_score\""));
        }
        if self.op != Op::KgScore && self.triples.is_some() {
            return Err(bad("triples", "only op = \"kg_score\" reads a triples file"));
        }
        if self.op != Op::KgScore && (self.entity_dict.is_some() || self.relation_dict.is_some()) {
            let field = if self.entity_dict.is_some() { "entity_dict" } else { "relation_dict" };
            return Err(bad(field, "only op = \"kg_score\" reads dictionaries (of a triples file)"));
        }
        match (&self.tt, self.op) {
            (Some(tt), Op::TtEmbeddingBag) => tt.check(self.rows, self.dim)?,
            (None, Op::TtEmbeddingBag) => return Err(bad("tt", "required for op = \"tt_embedding_bag\"")),
            (Some(_), _) => return Err(bad("tt", "only op = \"tt_embedding_bag\" takes a [tt] shape")),
            (None, _) => {}
        }
        if let Some(p) = self.padding_idx {
            if self.op != Op::EmbeddingBag {
                return Err(bad("padding_idx", "only op = \"embedding_bag\" takes a padding index"));
            }
            if u64::from(p) >= self.rows {
                return Err(bad("padding_idx", format!("{p} is not a row of the {}-row tables", self.rows)));
            }
        }
        if self.op != Op::SparseAttention && self.block > 1 {
            return Err(bad("block", "only op = \"sparse_attention\" selects blocks"));
        }
        match (self.op, &self.graph) {
            (Op::EmbeddingBag | Op::SparseAttention | Op::KgScore | Op::TtEmbeddingBag, None)
                if self.indices.is_some() => {}
            (Op::EmbeddingBag, None) if self.trace.is_some() => {}
            (Op::KgScore, None) if self.triples.is_some() && self.indices.is_none() => {}
            (Op::EmbeddingBag | Op::SparseAttention | Op::KgScore | Op::TtEmbeddingBag, _) => {
                return Err(bad("indices", "an embedding bag needs [indices] and no graph"));
            }
            (Op::GnnAggregate | Op::GnnScatter, Some(g)) => {
                g.check().map_err(|(field, message)| bad(field, message))?;
                if self.tables != 1 || self.rows != g.vertices() || u64::from(self.batch) > g.vertices() {
                    return Err(bad(
                        "graph",
                        "tables, rows and batch must be those the graph sets (use resolved())",
                    ));
                }
            }
            (Op::GnnAggregate | Op::GnnScatter, None) => return Err(bad("graph", "required for a GNN op")),
        }
        Ok(())
    }

    /// Checks `[[table_indices]]`: only embedding bags (generated, not a trace), entries that
    /// cover at least one table each and no more tables than there are, valid distributions,
    /// and `rows` within the tables' rows.
    fn check_table_indices(&self) -> Result<(), WorkloadError> {
        if self.table_indices.is_empty() {
            return Ok(());
        }
        if !matches!(self.op, Op::EmbeddingBag | Op::TtEmbeddingBag) || self.trace.is_some() {
            return Err(bad(
                "table_indices",
                "only op = \"embedding_bag\" or \"tt_embedding_bag\" with generated indices (no trace) \
                 takes per-table distributions",
            ));
        }
        let mut covered = 0u64;
        for (k, e) in self.table_indices.iter().enumerate() {
            e.distribution(k)?;
            if e.tables == 0 {
                return Err(bad("table_indices", format!("entry {k}: tables must be at least 1")));
            }
            if let Some(r) = e.rows
                && !(1..=self.rows).contains(&r)
            {
                return Err(bad(
                    "table_indices",
                    format!("entry {k}: rows = {r} is outside 1..={} (the tables' rows)", self.rows),
                ));
            }
            if e.bag_size == Some(0) {
                return Err(bad("table_indices", format!("entry {k}: bag_size must be at least 1")));
            }
            if let (Some(r), Some(p)) = (e.rows, self.padding_idx)
                && u64::from(p) >= r
            {
                return Err(bad(
                    "padding_idx",
                    format!("{p} is not a row of the {r}-row tables of [[table_indices]] entry {k}"),
                ));
            }
            covered += u64::from(e.tables);
        }
        if covered > u64::from(self.tables) {
            return Err(bad(
                "table_indices",
                format!("the entries cover {covered} tables, but the workload has {}", self.tables),
            ));
        }
        if self.stacked_rows() > u64::from(u32::MAX) && !self.uniform_tables() {
            return Err(bad(
                "table_indices",
                format!("the tables' rows add up to {}, beyond 32-bit row numbers", self.stacked_rows()),
            ));
        }
        Ok(())
    }

    /// Table `t`'s `[[table_indices]]` entry, with its number, if one covers it.
    fn entry_of(&self, t: u32) -> Option<(usize, &TableIndices)> {
        let mut first = 0u32;
        for (k, e) in self.table_indices.iter().enumerate() {
            if (first..first.saturating_add(e.tables)).contains(&t) {
                return Some((k, e));
            }
            first = first.saturating_add(e.tables);
        }
        None
    }

    /// Table `t`'s index distribution and the rows it draws from: its `[[table_indices]]`
    /// entry's, else `[indices]` over all rows (uniform if neither is set).
    pub fn table_distribution(&self, t: u32) -> (IndexDistribution, u64) {
        let fallback = self.indices.unwrap_or(IndexDistribution::Uniform);
        match self.entry_of(t) {
            // Checked by validate(); an unchecked spec falls back to [indices].
            Some((k, e)) => (
                e.distribution(k).ok().flatten().unwrap_or(fallback),
                e.rows.unwrap_or(self.rows).min(self.rows),
            ),
            None => (fallback, self.rows),
        }
    }

    /// Lookups per bag of table `t`: its `[[table_indices]]` entry's `bag_size`, else the
    /// workload's.
    pub fn table_bag_size(&self, t: u32) -> u32 {
        self.entry_of(t).and_then(|(_, e)| e.bag_size).unwrap_or(self.bag_size)
    }

    /// Rows of table `t` as stored: an embedding bag's `[[table_indices]]` entry's `rows`
    /// (else `rows`); every other op's tables are alike ([`Self::stored_rows`]).
    pub fn table_rows(&self, t: u32) -> u64 {
        match (self.op, self.entry_of(t)) {
            (Op::EmbeddingBag, Some((_, e))) => e.rows.unwrap_or(self.rows).min(self.rows),
            _ => self.stored_rows(),
        }
    }

    /// Whether every table is stored in the same rows, so that table `t` starts at stacked row
    /// `t * stored_rows()` (else at [`Self::table_first_row`]).
    pub fn uniform_tables(&self) -> bool {
        self.op != Op::EmbeddingBag
            || self.table_indices.iter().all(|e| e.rows.is_none_or(|r| r == self.rows))
    }

    /// The sum of `f(entry)` over tables `0..below`, `entry` the table's `[[table_indices]]`
    /// entry, if any (a product per entry, not a loop over the tables).
    fn sum_over_tables(&self, below: u32, f: impl Fn(Option<&TableIndices>) -> u64) -> u64 {
        let below = u64::from(below);
        let (mut first, mut sum) = (0u64, 0u64);
        for e in &self.table_indices {
            let n = (first + u64::from(e.tables)).min(below).saturating_sub(first);
            sum = sum.saturating_add(n.saturating_mul(f(Some(e))));
            first += u64::from(e.tables);
        }
        sum.saturating_add(below.saturating_sub(first).saturating_mul(f(None)))
    }

    /// The first row of table `t` in the stacked tables: the rows of the tables before it.
    pub fn table_first_row(&self, t: u32) -> u64 {
        if self.uniform_tables() {
            return u64::from(t) * self.stored_rows();
        }
        self.sum_over_tables(t, |e| e.and_then(|e| e.rows).unwrap_or(self.rows).min(self.rows))
    }

    /// Rows of all tables, stacked.
    pub fn stacked_rows(&self) -> u64 {
        self.table_first_row(self.tables)
    }

    /// Bytes of one table row in the table's [`Dtype`] (an int8 row's scale and bias included).
    pub fn row_bytes(&self) -> u64 {
        self.dtype.format().row_bytes(self.dim)
    }

    /// Rows of one table as stored: `rows`, or a TT table's core rows.
    pub fn stored_rows(&self) -> u64 {
        self.tt.as_ref().map_or(self.rows, TtShape::table_rows)
    }

    /// Values of one stored row: `dim`, or a TT core row's `rank`.
    pub fn stored_dim(&self) -> u32 {
        self.tt.as_ref().map_or(self.dim, |t| t.rank)
    }

    /// Bytes of one stored row.
    pub fn stored_row_bytes(&self) -> u64 {
        self.dtype.format().row_bytes(self.stored_dim())
    }

    /// Output values per bag: a row of `dim`, or one score per candidate tail (knowledge-graph
    /// scoring).
    pub fn out_width(&self) -> u64 {
        if self.op == Op::KgScore { u64::from(self.bag_size.max(1)) } else { u64::from(self.dim) }
    }

    /// Bytes of one bag's output (`out_width` f32 values).
    pub fn out_row_bytes(&self) -> u64 {
        self.out_width() * 4
    }

    /// Bags in all tables.
    pub fn bags(&self) -> u64 {
        self.tables as u64 * self.batch as u64
    }

    /// Lookups in all tables (for GNN aggregation, the expected count: bags differ in size, and
    /// the instance's `indices` holds the real one; with `[[table_indices]]` bag sizes, `batch`
    /// times the sum of every table's).
    pub fn lookups(&self) -> u64 {
        if self.table_indices.iter().all(|e| e.bag_size.is_none()) {
            return self.bags() * self.bag_size as u64;
        }
        let per_sample = self
            .sum_over_tables(self.tables, |e| u64::from(e.and_then(|e| e.bag_size).unwrap_or(self.bag_size)));
        per_sample.saturating_mul(u64::from(self.batch))
    }
}
