//! exec-core: the general-purpose core of a dae-sim system, its ISA and its timing model.
//!
//! The core is execution-driven: every instruction really executes, on real register values
//! and on the values of the shared [`mem_model::MemoryImage`], so the indices it loads decide
//! the addresses it requests and the sums it stores are checked against reference results. The
//! timing model is, for now, the foundation one: an **in-order-issue core with non-blocking
//! loads and a register scoreboard**. Up to `issue_width` instructions issue per cycle, in
//! program order, each once its source registers are ready; results become ready a fixed number
//! of cycles after issue (ALU, multiply, divide, vector, queue pop and queue load latencies);
//! loads and stores are split into cache-line requests that each hold one of `max_outstanding`
//! miss slots (the L1D MSHRs) until answered, and a load's destination is ready when its last
//! line arrives. Branches are predicted perfectly and cost nothing. Memory-level parallelism is
//! therefore bounded by the MSHRs and by the first instruction that needs a loaded value, not by
//! a reorder buffer: the out-of-order model of DESIGN.md section 5 (ROB, load and store queues,
//! functional-unit counts, in-order retirement, misprediction penalty) replaces this one later
//! without changing the ISA, the ports or the statistics.
//!
//! Where the numbers come from: [`CoreConfig::neoverse_v2_like`] gives defaults for the
//! Neoverse-V2-class core that REFERENCE.md section 5 assumes (about 3 GHz, 16 L1D MSHRs,
//! 64-byte lines, 512-bit vectors): 1-cycle integer ALU, 2-cycle multiply and 12-cycle divide
//! as in Arm's Neoverse V2 software optimization guide, 3-cycle vector FP ops, a 4-cycle queue
//! pop (an L1D hit on the queue chunk being consumed) and a 12-cycle load of a marshaled row
//! (the output queue lives in the core's private L2, about 12 cycles). They are assumptions,
//! like every default the paper does not publish, and every one is a preset value.
//!
//! Modules: [`isa`] (instructions and programs), [`text`] (their text form), [`queue`] (the
//! access unit's output-queue entries) and [`core`] (the timing component).

pub mod core;
pub mod isa;
pub mod queue;
pub mod text;

pub use crate::core::{
    Core, CoreConfig, CoreCounters, CoreFault, CorePorts, FaultKind, Latencies, OutputBuffer,
};
pub use crate::isa::{AluOp, Cond, CoreProgram, Inst, Label, Reg, VReg, verify};
pub use crate::queue::QueueEntry;
pub use crate::text::{ParseError, ParseErrorKind, format_inst, parse, print};

use thiserror::Error;

/// Why a program is invalid or a core could not be built.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum CoreError {
    /// The program text does not parse.
    #[error(transparent)]
    Parse(#[from] ParseError),
    /// The program has no instructions.
    #[error("the program has no instructions")]
    EmptyProgram,
    /// The vector length is outside `1..=64`.
    #[error("vector_lanes {0} is outside 1..=64")]
    Lanes(u32),
    /// A label name is not an identifier.
    #[error("invalid label name \"{0}\"")]
    LabelName(String),
    /// Two labels share a name.
    #[error("label \"{0}\" is defined twice")]
    DuplicateLabel(String),
    /// A label marks an instruction past the end of the program.
    #[error("label \"{name}\" marks instruction {target}, past the end of the {len}-instruction program")]
    LabelTarget {
        /// The label.
        name: String,
        /// The instruction index it marks.
        target: u32,
        /// Instructions in the program.
        len: usize,
    },
    /// An instruction names a register that does not exist.
    #[error("instruction {index} `{inst}`: register {reg} out of range")]
    Register {
        /// Instruction index.
        index: usize,
        /// The instruction's text.
        inst: String,
        /// The register (`r40`).
        reg: String,
    },
    /// An instruction names a label that does not exist.
    #[error("instruction {index} `{inst}`: label {label} out of range (the program has {labels} labels)")]
    Label {
        /// Instruction index.
        index: usize,
        /// The instruction's text.
        inst: String,
        /// The label index.
        label: u32,
        /// Labels in the program.
        labels: usize,
    },
    /// A vector memory instruction moves zero or more than `vector_lanes` elements.
    #[error("instruction {index} `{inst}`: count {count} is outside 1..={lanes} (the vector lanes)")]
    Count {
        /// Instruction index.
        index: usize,
        /// The instruction's text.
        inst: String,
        /// The count.
        count: u32,
        /// The program's lanes.
        lanes: u32,
    },
    /// An impossible core configuration.
    #[error("core {core}: {reason}")]
    Config {
        /// The core's name.
        core: String,
        /// What is wrong.
        reason: String,
    },
    /// A statistic name collides.
    #[error(transparent)]
    Stats(#[from] sim_core::StatsError),
}
