//! compiler: embedding workloads, described in TOML, to per-unit programs.
//!
//! A workload ([`workload::WorkloadSpec`]) names an operation and its shapes; its inputs are
//! drawn from seeded generators ([`indices`]: uniform, or Zipf with a random permutation of row
//! ids as in FBGEMM's benchmarks; [`graph`]: R-MAT power-law graphs for GNN aggregation) and its reference result is what PyTorch computes
//! ([`embedding_bag`]). Code generation ([`codegen`]) places the data in the simulated address
//! space ([`layout`]), partitions the bags across cores, and emits for each core an access-unit
//! program and a core program (decoupled targets) or a loop nest with its own loads (core-only
//! targets), all in the text forms of the two ISAs. The compiler knows nothing of timing.

pub mod codegen;
pub mod embedding_bag;
pub mod frontend;
pub mod graph;
pub mod indices;
pub mod ir;
pub mod layout;
pub mod passes;
pub mod target;
pub mod workload;

pub use codegen::{
    CompileError, CompiledWorkload, CoreJob, Stages, Target, TargetInfo, compile, compile_with_stages,
    partition_by_cost,
};
pub use embedding_bag::EmbeddingBagInstance;
pub use graph::{Csr, GraphSpec};
pub use layout::{Contents, DataRegion, Layout};
pub use passes::{Pass, Passes};
pub use workload::{Dtype, IndexDistribution, Op, Pooling, WorkloadError, WorkloadSpec};
