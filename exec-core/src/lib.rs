//! exec-core: the general-purpose core of a dae-sim system, its ISA and its timing model.
//!
//! The core is execution-driven: every instruction really executes, on real register values
//! and on the values of the shared [`mem_model::MemoryImage`], so the indices it loads decide
//! the addresses it requests and the sums it stores are checked against reference results.
//!
//! The timing model is an **out-of-order core** (DESIGN.md section 5). Instructions execute
//! functionally when they dispatch, in program order; timing decides when. Up to `issue_width`
//! instructions a cycle dispatch into a reorder buffer of `rob_entries`; loads (memory loads,
//! gathers, queue pops, `vldq`) also take a load-queue entry and stores a store-queue entry,
//! and a full ROB, load or store queue, or an empty output queue at `pop_control`, stops
//! dispatch. An instruction issues once its sources are ready and a functional unit of its class
//! (ALU, multiply/divide, vector/FP, load port, store port; pipelined, `fu` counts each) has a
//! slot, oldest first; its result is ready after the class latency. Vector instructions and
//! vector loads and stores wider than the datapath (`datapath_bits`) take a slot per micro-op
//! (a 512-bit vector on Neoverse V2's 128-bit pipes takes four) and finish with the last. Loads split into line
//! requests that each hold one of `max_outstanding` L1D MSHRs until answered, and a read of a
//! line already in flight merges into it, so memory-level parallelism is bounded by
//! min(MSHRs, load queue, what fits in the ROB). Retirement is in order, `retire_width` a cycle.
//! Conditional branches are predicted by 2-bit counters per branch, `switch` by its last
//! target; a misprediction stops dispatch until the branch resolves plus `mispredict_penalty`
//! cycles (nothing is ever executed speculatively, the predictor only decides time). The
//! component sleeps unless it can dispatch, issue a memory instruction or retire something it
//! waits for: result times are computed when an instruction's sources are known, not by
//! ticking.
//!
//! Where the numbers come from: [`CoreConfig::neoverse_v2_like`] gives defaults for the
//! Neoverse-V2-class core that REFERENCE.md section 5 assumes: about 3 GHz, ROB 320, load and
//! store queues 128 and 72, 16 L1D MSHRs, 64-byte lines, 512-bit vectors. Dispatch is 6 wide;
//! the functional units (6 ALU, 2 multiply/divide, 4 vector/FP, 3 load and 2 store pipes) and
//! the latencies (1-cycle integer ALU, 2-cycle multiply, 12-cycle divide, 3-cycle vector FP)
//! follow Arm's Neoverse V2 software optimization guide; a 4-cycle queue pop (an L1D hit on the
//! queue chunk being consumed) and a 12-cycle load of a marshaled row (the output queue lives
//! in the core's private L2, about 12 cycles) follow REFERENCE.md section 5. Retiring 8 a cycle
//! and a 10-cycle misprediction penalty are our assumptions (Arm publishes neither). Every one
//! is a preset value.
//!
//! Modules: [`isa`] (instructions and programs), [`text`] (their text form), [`queue`] (the
//! access unit's output-queue entries) and [`core`] (the timing component).
#![warn(missing_docs)]

pub mod core;
pub mod isa;
pub mod queue;
pub mod text;

pub use crate::core::{
    Core, CoreConfig, CoreCounters, CoreFault, CorePorts, FaultKind, FuCounts, Latencies, OutputBuffer,
};
pub use crate::isa::{
    AluOp, Cond, CoreProgram, FOp, GatherIndex, Inst, Label, Reg, VIntOp, VReg, Var, Width, verify,
};
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
    /// `vext` names a lane past the vector length.
    #[error("instruction {index} `{inst}`: lane {lane} is outside 0..{lanes} (the vector lanes)")]
    Lane {
        /// Instruction index.
        index: usize,
        /// The instruction's text.
        inst: String,
        /// The lane.
        lane: u32,
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
