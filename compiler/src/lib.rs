//! compiler: embedding workloads, described in TOML, to per-unit programs (Ember's pipeline).
//!
//! A workload ([`workload::WorkloadSpec`]) names an operation and its shapes; its inputs are
//! drawn from seeded generators ([`indices`]: uniform, or Zipf with a random permutation of row
//! ids as in FBGEMM's benchmarks; [`graph`]: R-MAT power-law graphs for GNN aggregation) or
//! read from files (index traces, graph edge lists, knowledge-graph triples, by id or by name
//! through dictionaries, [`kg_dict`]) and its
//! reference result is what PyTorch computes ([`embedding_bag`]; [`tt`] for TT-EmbeddingBag,
//! whose rows are contracted from tensor-train cores). Tables are f32, f16, bf16 or FBGEMM's
//! fused int8 rows, with PyTorch's `padding_idx`. The front end ([`frontend`])
//! lowers the operation to the loop level of the IR ([`ir`]: one generic op form, printed and
//! parsed the same way at every level, with a verifier per level). [`codegen`] places the data
//! in the simulated address space ([`layout`]), partitions the bags across cores by cost (or
//! maps tables to cores by their estimated cost, [`mapping`], or cuts long bags across cores,
//! [`split`]), and
//! runs the passes ([`passes`], switchable by name and grouped as `-O0`..`-O3` after Ember's
//! emb-opt0..3: decouple to SLC, vectorize, bufferize, simplify-mem, align-queues, with `hoist`
//! beyond Ember, then SLC to DLC); [`target`] maps DLC onto the access unit and the core's dispatch loop, or the loop
//! level onto a core that runs alone, in the text forms of the two ISAs. The IR levels and
//! passes follow the Ember paper and its public compiler (REFERENCE.md section 1). The compiler
//! does not model timing: the one place it weighs latencies is the table-to-core mapping's cost
//! estimate ([`mapping`]), which uses them for proportions between tables.
#![warn(missing_docs)]

pub mod codegen;
pub mod dense;
pub mod embedding_bag;
pub mod frontend;
pub mod graph;
pub mod hand;
pub mod indices;
pub mod ir;
pub mod kg_dict;
pub mod layout;
pub mod mapping;
pub mod passes;
pub mod split;
pub mod target;
pub mod trace;
pub mod tt;
pub mod workload;

pub use codegen::{
    CompileError, CompiledWorkload, CoreJob, Partition, Stages, Target, TargetInfo, compile,
    compile_with_stages, partition_by_cost,
};
pub use embedding_bag::{EmbeddingBagInstance, parse_triples};
pub use graph::{Csr, EdgeList, FileGraph, GraphFormat, GraphSpec, SelfLoops};
pub use layout::{Contents, DataRegion, Layout};
pub use mapping::MemoryCosts;
pub use passes::{Pass, Passes};
pub use workload::{
    DistributionKind, Dtype, IndexDistribution, KgModel, Op, Pooling, TableIndices, TraceFiles, TtShape,
    WorkloadError, WorkloadSpec,
};
