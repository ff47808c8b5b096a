//! The core component: out-of-order dispatch, issue and in-order retirement around
//! execution-driven instructions.
//!
//! Contract (see the crate docs for the model and where its numbers come from):
//!
//! - Instructions execute functionally at dispatch, in program order, so every value and
//!   address is known there; timing only decides *when* things happen. Memory is read-only
//!   except the core's own output buffer, which only this core writes; loads of the output
//!   buffer read back what the core stored there. Nothing is speculative: the branch predictor
//!   only decides how long dispatch stops.
//! - Dispatch: up to `issue_width` instructions per cycle enter the ROB in program order. An
//!   instruction needs a free ROB entry; a load (memory, gather, queue pop, `vldq`) also a
//!   load-queue entry and a store a store-queue entry; `pop_control` also an output-queue
//!   entry. A full structure or an empty queue stops dispatch (the cause is counted).
//! - Issue: an instruction issues at the first cycle, not before its dispatch cycle, at which
//!   its sources are ready and a functional unit of its class has an issue slot (units are
//!   pipelined). Slots are booked once an instruction's source times are all known: at
//!   dispatch, in program order, or when a load's answer gives the last of them. So an
//!   instruction released by a load may find its cycle's slot taken by a younger one booked
//!   before the answer came, where an age-ordered scheduler would have let it go first. Its
//!   result is ready `latency` cycles later. A vector instruction, vector load or store wider
//!   than `datapath_bits` is cracked into one micro-op per `datapath_bits`, each taking a slot
//!   (a widening load counts its f32 lanes, like `vld`); its result waits for the last. A
//!   load's result is ready at the first edge after its last line's response.
//! - Memory: an issued load or store is split into line requests (each distinct line once). A
//!   load of bytes that an older store in the ROB writes waits for that store's data (the
//!   youngest such store's issue): values are right at dispatch, and this keeps their timing
//!   causal (the load then reads behind the store's write, as forwarding through the L1). A
//!   read of a line already in flight merges into that request, even while older accesses wait
//!   for a slot (as a load that hits a busy MSHR does); any other line needs one of
//!   `max_outstanding` miss slots (MSHRs) and room on the request link, taken in issue order,
//!   and holds the slot until answered. Stores complete for retirement when they issue; their
//!   store-queue entry is freed once they have retired and their write has been answered.
//! - Retirement: in order, up to `retire_width` per cycle, at or after each result is ready; it
//!   frees the ROB and load-queue entries (used again in the same cycle).
//! - Branches: conditional branches are predicted by a 2-bit counter per branch, `switch` by
//!   the last target it took. After a misprediction dispatch stops until the branch has resolved
//!   (issued and computed) plus `mispredict_penalty` cycles. A `pop_control` followed by a
//!   `switch` on the callback id thus costs a queue load, then an indirect branch that
//!   mispredicts whenever the callback differs from the previous one.
//! - `halt` stops dispatch; the core is finished when `halt` has retired and every memory
//!   request is answered ([`Core::finish_tick`]).
//! - A program error (bad address, division by zero, a switch, count or operand out of range, a
//!   store outside the output buffer, running off the end) is a [`CoreFault`]: execution stops
//!   and the core stops being busy; nothing panics.
//! - Events: the core never ticks while it waits on memory or on the queue. It wakes at a cycle
//!   edge only when it can dispatch there, when a memory instruction issues, or when a known
//!   retirement unblocks it; responses, queue arrivals and freed link slots wake it otherwise.
//! - Lookups: a `!lookup` load starts a row, and the vector loads that continue it at the next
//!   address join it (up to 8 rows open, interleaved); the row's latency, from its first request
//!   to its last chunk's answer, goes to `lookup_latency`, as an access unit times its rows. A
//!   masked load of no element requests nothing: it is no lookup and joins no row.

use crate::isa::{
    AluOp, Cond, CoreProgram, FOp, GatherIndex, Inst, NUM_REGS, NUM_VARS, NUM_VREGS, TableFormat, VIntOp,
    Width,
};
use crate::queue::{MAX_OPERANDS, QueueEntry};
use crate::text::format_inst;
use crate::{CoreError, Reg, VReg, Var};
use mem_model::{MemError, MemRequest, MemResponse, MemoryImage};
use sim_core::address_map::AddressMap;
use sim_core::{
    Carries, Clock, Component, CounterId, Ctx, Frequency, HistogramId, LinkId, Priority, Stats, Tick, Wake,
};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::marker::PhantomData;
use std::sync::Arc;
use thiserror::Error;

/// Functional-unit latencies, in core cycles (each at least 1). Deserializable so that system
/// presets can list them by name (`alu = 1`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Latencies {
    /// Integer ALU ops, `li`, branches, `get_var`, `increment_var`.
    pub alu: u32,
    /// Integer multiply.
    pub mul: u32,
    /// Integer divide and remainder.
    pub div: u32,
    /// Vector ops and scalar float ops.
    pub vector: u32,
    /// `pop_control` and `pop_operand`.
    pub queue_pop: u32,
    /// `vldq`: a load of a marshaled row from the output queue.
    pub queue_load: u32,
}

impl Latencies {
    /// Neoverse-V2-class latencies (see the crate docs for their sources).
    pub const fn neoverse_v2_like() -> Self {
        Latencies { alu: 1, mul: 2, div: 12, vector: 3, queue_pop: 4, queue_load: 12 }
    }
}

/// Functional units per class: how many instructions of the class can issue per cycle (each
/// `1..=64`). Deserializable so that presets can list them by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FuCounts {
    /// Integer ALUs: ALU ops, `li`, branches, switches, variables.
    pub alu: u32,
    /// Integer multiply/divide units.
    pub muldiv: u32,
    /// Vector/FP units: vector ops and scalar float ops.
    pub vector: u32,
    /// Load ports: loads (one slot per gather element), queue pops, `vldq`.
    pub load: u32,
    /// Store ports.
    pub store: u32,
}

impl FuCounts {
    /// Neoverse V2's issue pipes (Arm Neoverse V2 Software Optimization Guide, section 3):
    /// 6 integer pipes that do single-cycle ops (4 single-cycle + 2 multi-cycle; V2's 2
    /// separate branch pipes are folded into these here), 2 of them multiply/divide, 4 FP/ASIMD
    /// pipes, 3 load pipes (2 load/store + 1 load-only) and 2 store pipes.
    pub const fn neoverse_v2_like() -> Self {
        FuCounts { alu: 6, muldiv: 2, vector: 4, load: 3, store: 2 }
    }
}

/// Parameters of a core.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CoreConfig {
    /// The core's clock domain.
    pub clock: Clock,
    /// Instructions dispatched into the ROB per cycle, in program order (at least 1).
    pub issue_width: u32,
    /// L1D miss slots (MSHRs): distinct line requests, loads and stores, in flight at once.
    pub max_outstanding: u32,
    /// Cache-line size in bytes: memory requests are per line (a power of two, 4 to 4096).
    pub line_bytes: u32,
    /// Functional-unit latencies in cycles.
    pub latency: Latencies,
    /// Reorder-buffer entries: instructions dispatched and not yet retired (at least 1).
    pub rob_entries: u32,
    /// Load-queue entries: loads, gathers, queue pops and `vldq` from dispatch to retirement.
    pub lq_entries: u32,
    /// Store-queue entries: stores from dispatch until retired and written.
    pub sq_entries: u32,
    /// Instructions retired per cycle, in order (at least 1).
    pub retire_width: u32,
    /// Functional units per class.
    pub fu: FuCounts,
    /// Cycles dispatch stays stopped after a mispredicted branch resolves.
    pub mispredict_penalty: u32,
    /// Bits a vector pipe, load port or store port handles per micro-op (a multiple of 32). A
    /// vector instruction or vector load/store wider than this is cracked into one micro-op
    /// per `datapath_bits`, each taking an issue slot of its class: a 512-bit logical vector on
    /// 128-bit pipes takes four (a widening load counts the f32 lanes it writes).
    pub datapath_bits: u32,
}

impl CoreConfig {
    /// A Neoverse-V2-class core (REFERENCE.md section 5, an assumption): dispatch 6 per cycle,
    /// 16 MSHRs, 64-byte lines, [`Latencies::neoverse_v2_like`]; ROB 320, load queue 128, store
    /// queue 72 (REFERENCE.md section 5); [`FuCounts::neoverse_v2_like`] on a 128-bit datapath
    /// (V2's FP/ASIMD pipes and load/store ports are 128 bits wide: Arm Neoverse V2 Software
    /// Optimization Guide; NVIDIA's 7.1 TFLOP/s FP64 for 144 Grace cores at 3.1 GHz is 4 pipes x
    /// 2 doubles x 2 flops a cycle); retire 8 per cycle and a 10-cycle misprediction penalty
    /// (assumptions: Arm does not publish either; 10 cycles is a front end of about that many
    /// stages refilling), on `clock`.
    pub const fn neoverse_v2_like(clock: Clock) -> Self {
        CoreConfig {
            clock,
            issue_width: 6,
            max_outstanding: 16,
            line_bytes: 64,
            latency: Latencies::neoverse_v2_like(),
            rob_entries: 320,
            lq_entries: 128,
            sq_entries: 72,
            retire_width: 8,
            fu: FuCounts::neoverse_v2_like(),
            mispredict_penalty: 10,
            datapath_bits: 128,
        }
    }

    /// The same at 3 GHz.
    pub fn neoverse_v2_like_3ghz() -> Self {
        // A constant, valid frequency: Clock::new only rejects 0 Hz and above 1 THz.
        let clock = Clock::new(Frequency::from_hz(3_000_000_000)).expect("3 GHz is a valid clock");
        Self::neoverse_v2_like(clock)
    }
}

/// The links a core uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CorePorts {
    /// Requests to memory (this core sends).
    pub mem_req: LinkId,
    /// Responses from memory (this core receives).
    pub mem_resp: LinkId,
    /// The access unit's output queue (this core receives), if it has one.
    pub queue: Option<LinkId>,
}

/// An address range a core may store to, and the index in its values of the range's first word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Window {
    base: u64,
    /// One past the last byte.
    end: u64,
    first: u64,
}

impl Window {
    /// The index of the `bytes` at `addr`, if they lie in the window word-aligned.
    fn index(&self, addr: u64, bytes: u64) -> Option<u64> {
        let inside = addr >= self.base
            && addr.checked_add(bytes).is_some_and(|e| e <= self.end)
            && (addr - self.base) & 3 == 0;
        inside.then(|| self.first + (addr - self.base) / 4)
    }

    /// Whether `[start, end)` overlaps the window.
    fn overlaps(&self, start: u64, end: u64) -> bool {
        start < self.end && self.base < end
    }
}

/// The f32 output region this core writes: `elems` f32 from byte address `base`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct OutputBuffer {
    /// First byte (4-byte aligned).
    pub base: u64,
    /// Number of f32 elements.
    pub elems: u64,
}

/// What went wrong when a core faulted.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum FaultKind {
    /// A load read outside the memory image, or misaligned.
    #[error("{0}")]
    Memory(MemError),
    /// `base + offset` (plus a gather's scaled index) is negative or overflows.
    #[error("address {base} + {offset} is not a valid address")]
    BadAddress {
        /// The base register's value.
        base: i64,
        /// The offset (for a gather, the offset plus the lane's scaled index, saturated).
        offset: i64,
    },
    /// Division or remainder by zero.
    #[error("division by zero")]
    DivByZero,
    /// A switch selector outside its target list.
    #[error("switch selector {value} is outside 0..{targets}")]
    SwitchOutOfRange {
        /// The selector's value.
        value: i64,
        /// Targets in the list.
        targets: usize,
    },
    /// A masked vector load or store whose count register is outside `0..=lanes`.
    #[error("element count {value} is outside 0..={lanes}")]
    CountOutOfRange {
        /// The count register's value.
        value: i64,
        /// The vector lanes.
        lanes: u32,
    },
    /// A queue pop on a core without a queue link.
    #[error("the core has no output-queue link")]
    NoQueue,
    /// `pop_operand` before any `pop_control`.
    #[error("pop_operand with no current queue entry")]
    NoEntry,
    /// `pop_operand` past the entry's operands.
    #[error("pop_operand reads operand {index} of an entry carrying {len}")]
    OperandOutOfRange {
        /// The operand index read.
        index: u8,
        /// Operands the entry carries.
        len: u8,
    },
    /// A store outside the output buffer, or misaligned.
    #[error(
        "store of {bytes} B at {addr:#x} is outside the output buffer [{base:#x}, +{size}) or misaligned"
    )]
    StoreOutsideOutput {
        /// First byte stored.
        addr: u64,
        /// Bytes stored.
        bytes: u64,
        /// The output buffer's base.
        base: u64,
        /// The output buffer's size in bytes.
        size: u64,
    },
    /// Execution ran past the last instruction without `halt`.
    #[error("ran past the end of the program")]
    RanOffEnd,
    /// A link carried a message of the wrong kind (a wiring error).
    #[error("unexpected message on the {0} link")]
    UnexpectedMessage(&'static str),
}

/// Why a core stopped early: where, and what went wrong.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("pc {pc} `{inst}`: {kind}")]
pub struct CoreFault {
    /// Index of the faulting instruction.
    pub pc: usize,
    /// Its text.
    pub inst: String,
    /// What went wrong.
    pub kind: FaultKind,
}

/// Event counts of a core (also registered as statistics under its name).
///
/// Dispatch stall cycles (`stall_rob_full`, `stall_lq_full`, `stall_sq_full`,
/// `stall_memory_slots`, `stall_queue`, `stall_mispredict`) count cycles in which nothing
/// dispatched, each under one cause; a full ROB, load or store queue counts as
/// `stall_memory_slots` (mshr_full) instead while a load waits for a miss slot, because the
/// MSHRs are then what bounds memory-level parallelism.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct CoreCounters {
    /// Instructions dispatched.
    pub instructions: u64,
    /// Memory loads (`ld.u32`, `ld.u64`, `vld`, `vgather`).
    pub loads: u64,
    /// Stores (`vst`, `st.u32`, `st.u64`).
    pub stores: u64,
    /// Loads marked `!lookup`.
    pub lookups: u64,
    /// `pop_control` and `pop_operand`.
    pub queue_pops: u64,
    /// `vldq`.
    pub queue_loads: u64,
    /// Line requests sent to memory.
    pub mem_requests: u64,
    /// Retirement stalls: cycles nothing retired while the oldest instruction was a load
    /// waiting for memory.
    pub stall_operand_memory: u64,
    /// Retirement stalls: cycles nothing retired while the oldest instruction waited for its
    /// operands or a functional unit's result.
    pub stall_operand_latency: u64,
    /// Dispatch stalls, mshr_full: a full ROB/LQ/SQ while a load waited for a miss slot or
    /// the request link.
    pub stall_memory_slots: u64,
    /// Dispatch stalls, queue_empty: `pop_control` waited for an output-queue entry.
    pub stall_queue: u64,
    /// Dispatch stalls, rob_full.
    pub stall_rob_full: u64,
    /// Dispatch stalls, lq_full.
    pub stall_lq_full: u64,
    /// Dispatch stalls, sq_full.
    pub stall_sq_full: u64,
    /// Dispatch stalls after a mispredicted branch (until it resolves, plus the penalty).
    pub stall_mispredict: u64,
    /// Instructions retired.
    pub retired: u64,
    /// Conditional branches and switches (the predicted instructions).
    pub branches: u64,
    /// Instructions dispatched to the integer ALUs (scalar arithmetic, logic, compares,
    /// address arithmetic, branches' condition evaluation).
    pub alu_ops: u64,
    /// Instructions dispatched to the multiply/divide units.
    pub muldiv_ops: u64,
    /// Instructions dispatched to the vector/FP units.
    pub vector_ops: u64,
    /// Mispredicted branches and switches.
    pub mispredictions: u64,
    /// Line reads merged into a request already in flight (no new MSHR).
    pub merged_requests: u64,
    /// Most loads in flight at once (from their first request to their result).
    pub peak_loads_in_flight: u64,
    /// Loads in flight summed over cycles (divide by `cycles` for the average).
    pub load_in_flight_cycles: u64,
    /// Cycles from the start to the finish (or to the last event so far).
    pub cycles: u64,
}

impl CoreCounters {
    /// Average loads in flight over the run (0 before any cycle passed).
    pub fn avg_loads_in_flight(&self) -> f64 {
        if self.cycles == 0 { 0.0 } else { self.load_in_flight_cycles as f64 / self.cycles as f64 }
    }
}

/// Adds `n` retired or dispatched instructions to a counter and its statistic, and reports
/// progress to the watchdog; counted once per call, since nothing reads the statistics within
/// a wake.
fn count_progress<M>(counter: &mut u64, id: CounterId, n: u64, ctx: &mut Ctx<'_, M>) {
    if n > 0 {
        *counter += n;
        ctx.stats().add(id, n);
        ctx.progress();
    }
}

/// Functional-unit classes, as indices into [`FuCounts`] order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    Alu = 0,
    MulDiv = 1,
    Vector = 2,
    Load = 3,
    Store = 4,
    /// Needs no unit: jumps and `halt` complete at dispatch.
    None = 5,
}

/// Unit classes that hold issue slots.
const CLASSES: usize = 5;

/// Which queue an instruction occupies, and whether it goes to memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MemKind {
    None,
    /// A load-queue entry and line requests.
    Load,
    /// A load-queue entry, no request (queue pops and `vldq` read the queue's chunk).
    QueueRead,
    /// A store-queue entry and line requests.
    Store,
}

/// A vector lane-wise f32 operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum VOp {
    Add,
    Mul,
    Max,
}

/// An element count: an immediate, or a register read at run time (masked forms).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Count {
    Imm(u32),
    Reg(u8),
}

/// An instruction decoded for the hot path: registers as indices, labels as instruction
/// indices, switch targets in a shared table.
#[derive(Debug, Clone, Copy)]
enum Op {
    Li { rd: u8, imm: i64 },
    Alu { op: AluOp, rd: u8, ra: u8, rb: u8 },
    AluI { op: AluOp, rd: u8, ra: u8, imm: i64 },
    Branch { cond: Cond, ra: u8, rb: u8, target: u32 },
    Jump { target: u32 },
    Switch { ra: u8, first: u32, len: u32 },
    Load { width: Width, rd: u8, base: u8, offset: i64, lookup: bool },
    Store { width: Width, rs: u8, base: u8, offset: i64 },
    VLoad { fmt: TableFormat, vd: u8, base: u8, offset: i64, count: Count, lookup: bool },
    VGather { vd: u8, base: u8, offset: i64, index: GatherIndex, scale: u32, count: u32, lookup: bool },
    VLoadQueue { fmt: TableFormat, vd: u8, base: u8, offset: i64, count: u32 },
    VZero { vd: u8 },
    VBin { op: VOp, vd: u8, va: u8, vb: u8 },
    VInt { op: VIntOp, vd: u8, va: u8, vb: u8 },
    VBcast { vd: u8, rs: u8 },
    VExtract { rd: u8, vs: u8, lane: u32 },
    VIota { vd: u8 },
    FBin { op: FOp, rd: u8, ra: u8, rb: u8 },
    FCvt { rd: u8, ra: u8 },
    VStore { vs: u8, base: u8, offset: i64, count: Count },
    PopControl { rd: u8 },
    PopOperand { rd: u8 },
    GetVar { rd: u8, var: u8 },
    IncrementVar { var: u8, imm: i64 },
    Halt,
}

/// Architectural registers in one id space for dependences: scalars, then vectors, then
/// queue-alignment variables.
const V_BASE: u8 = NUM_REGS;
const VAR_BASE: u8 = NUM_REGS + NUM_VREGS;
const NUM_ARCH: usize = (NUM_REGS + NUM_VREGS + NUM_VARS) as usize;
/// No destination.
const NO_DEST: u8 = u8::MAX;

/// A decoded instruction: the operation, its sources (a slice of the shared source table),
/// its destination, unit class, latency and queue use.
#[derive(Debug, Clone, Copy)]
struct Decoded {
    op: Op,
    src_first: u32,
    src_len: u32,
    dest: u8,
    class: Class,
    latency: u32,
    mem: MemKind,
}

/// A result time that is not known yet (a load in flight, or a consumer of one).
const UNKNOWN: u64 = u64::MAX;
/// No access / no ROB entry.
const NONE32: u32 = u32::MAX;
const NO_SEQ: u64 = u64::MAX;

/// Rows whose chunks may still be joined by the loads that follow: a lookup's row is loaded
/// chunk by chunk, interleaved with other rows' chunks (a knowledge-graph score walks a head, a
/// relation and a tail row together).
const OPEN_ROWS: usize = 8;

/// One lookup's row as the core loads it: a `!lookup` load, then the unmarked loads that continue
/// it at the next address. Its latency runs from its first request to its last chunk's answer,
/// as an access unit times a row.
#[derive(Debug, Clone, Copy)]
struct RowTiming {
    /// Earliest first-request tick of its chunks.
    start: Tick,
    /// Latest answer tick of its chunks.
    done: Tick,
    /// Chunks not answered yet.
    pending: u32,
    /// The address a continuing chunk would load (`u64::MAX`: none continues it).
    next_addr: u64,
    /// Later loads may still join it.
    open: bool,
}

/// A ROB entry. `seq` is the instruction's dispatch number; the entry lives at
/// `seq & rob_mask`: the ring has the next power of two of `rob_entries` slots (at most
/// `rob_entries` in use), so finding an entry takes a mask instead of a division.
#[derive(Debug, Clone)]
struct RobEntry {
    pc: u32,
    dispatch: u64,
    /// Cycle its result is ready (`UNKNOWN` until known).
    complete: u64,
    /// Latest ready cycle among its resolved sources.
    src_ready: u64,
    /// Sources whose ready cycle is not known yet.
    pending: u32,
    dest: u8,
    class: Class,
    latency: u32,
    mem: MemKind,
    /// Issue slots: micro-ops of a cracked vector instruction or load/store, gather elements; 1 otherwise.
    slots: u32,
    /// Its memory access (`NONE32` for none).
    access: u32,
    /// A store whose write was answered before it retired.
    store_done: bool,
    /// Entries waiting for this one's result (may repeat, once per source).
    waiters: Vec<u64>,
}

/// A load or store at or past issue: its distinct lines and their progress.
#[derive(Debug, Clone, Default)]
struct Access {
    seq: u64,
    lines: Vec<u64>,
    /// Lines sent or merged so far.
    next_line: usize,
    /// Lines not answered yet.
    lines_left: u32,
    write: bool,
    /// The lookup (row) it is part of, or [`NONE32`].
    row: u32,
    /// Tick its first line request left (latency is measured from here).
    issued: Tick,
    /// A store that has retired (its queue entry is freed when its write is answered).
    retired: bool,
}

/// A miss slot (MSHR): the line it fetches and the accesses waiting for it; a generation makes
/// request ids unique over time.
#[derive(Debug, Clone, Default)]
struct Slot {
    busy: bool,
    line: u64,
    write: bool,
    generation: u32,
    waiters: Vec<u32>,
}

/// Initial ring size of the issue-slot calendar, in cycles. A reservation further ahead than
/// the ring reaches doubles it (up to [`MAX_HORIZON`]): consumers of a long result still share
/// the units.
const HORIZON: usize = 4096;

/// The largest ring (about 12 MiB of words and skips for the five classes); reservations beyond
/// it are not limited. No core this simulator models holds work that far ahead.
const MAX_HORIZON: usize = 1 << 18;

/// Issue slots used per class and cycle, as a ring of `(cycle << 8) | count` words (a word whose
/// cycle differs is empty): no allocation per instruction.
#[derive(Debug, Clone)]
struct Calendar {
    words: Vec<u64>,
    /// Per word whose cycle is full: how many cycles on the next one that may have a free slot
    /// lies (every cycle between is full). A search that meets a busy unit's run of full cycles
    /// jumps over it instead of reading each: a cracked instruction's micro-ops queue behind
    /// the run its predecessors filled.
    skip: Vec<u16>,
    limits: [u32; CLASSES],
    /// The highest floor seen. A cycle at or after it still holds its own reservations (a word
    /// is only reused for a cycle `horizon` later, which must lie before some floor plus
    /// `horizon`), so a skip read there is still true.
    floor: u64,
    /// Cycles the ring holds per class (a power of two).
    horizon: usize,
}

impl Calendar {
    fn new(limits: [u32; CLASSES]) -> Calendar {
        Calendar {
            words: vec![u64::MAX; CLASSES * HORIZON],
            skip: vec![1; CLASSES * HORIZON],
            limits,
            floor: 0,
            horizon: HORIZON,
        }
    }

    /// Where cycle `c` of class `k` is kept in the ring.
    #[inline]
    fn at(&self, k: usize, c: u64) -> usize {
        k * self.horizon + (c as usize & (self.horizon - 1))
    }

    /// Doubles the ring, keeping the reservations of the cycles from a ring's length before the
    /// floor on (a search may start a few cycles before it; the new ring holds both spans
    /// apart). The skips start over at one: always true, only slower.
    fn grow(&mut self) {
        let (old, keep_from) = (self.horizon, self.floor.saturating_sub(self.horizon as u64));
        let words = std::mem::replace(&mut self.words, vec![u64::MAX; CLASSES * 2 * old]);
        self.skip = vec![1; CLASSES * 2 * old];
        self.horizon = 2 * old;
        for k in 0..CLASSES {
            for &w in &words[k * old..(k + 1) * old] {
                if w != u64::MAX && w >> 8 >= keep_from {
                    let i = self.at(k, w >> 8);
                    self.words[i] = w;
                }
            }
        }
    }

    /// Takes `n` slots of `class` (the micro-ops of one instruction), each the first free one at
    /// or after `from` (and `floor`, the current cycle), earliest first; returns the cycle of
    /// the last.
    fn reserve_n(&mut self, class: Class, from: u64, floor: u64, n: u32) -> u64 {
        let k = class as usize;
        if k >= CLASSES {
            return from.max(floor);
        }
        self.floor = self.floor.max(floor);
        let limit = u64::from(self.limits[k]);
        let mut end = floor.saturating_add(self.horizon as u64);
        let mut left = u64::from(n.max(1));
        let start = from.max(floor);
        let mut c = start;
        loop {
            if c >= end {
                if self.horizon >= MAX_HORIZON {
                    return c;
                }
                self.grow();
                end = floor.saturating_add(self.horizon as u64);
                continue;
            }
            let i = self.at(k, c);
            let w = self.words[i];
            let used = if w >> 8 == c { w & 0xff } else { 0 };
            if used < limit {
                let take = left.min(limit - used);
                self.words[i] = (c << 8) | (used + take);
                left -= take;
                if used + take == limit {
                    self.skip[i] = 1;
                }
                if left == 0 {
                    self.compress(k, start, c);
                    return c;
                }
                c += 1;
            } else if c >= self.floor {
                // Stepping through the run would stop at `end` if it reaches it.
                c = (c + u64::from(self.skip[i])).min(end);
            } else {
                c += 1;
            }
        }
    }

    /// Points every full cycle of class `k` met on the way from `start` to `to` at `to` (all
    /// cycles between are full), so that the next search from any of them jumps at once.
    fn compress(&mut self, k: usize, start: u64, to: u64) {
        let mut c = start.max(self.floor);
        while c < to {
            let i = self.at(k, c);
            let next = c + u64::from(self.skip[i]);
            self.skip[i] = (to - c).min(u64::from(u16::MAX)) as u16;
            c = next;
        }
    }
}

/// Why dispatch stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Block {
    /// Not blocked (it used its width, or has not run yet).
    None,
    Rob,
    Lq,
    Sq,
    Queue,
    Mispredict,
}

/// Stall causes, as indices into the stall counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cause {
    RobFull = 0,
    LqFull = 1,
    SqFull = 2,
    MshrFull = 3,
    QueueEmpty = 4,
    Mispredict = 5,
}

/// Why the oldest line request waiting to be sent is not sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SendBlock {
    None,
    Slots,
    Link,
}

/// Where dispatch resumes after a misprediction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Redirect {
    /// The mispredicted branch (this ROB sequence number) has not resolved yet.
    Waiting(u64),
    /// Dispatch resumes at this cycle.
    Until(u64),
}

/// Register values and the dependence state of every architectural register.
#[derive(Debug, Clone)]
struct RegFile {
    regs: [i64; NUM_REGS as usize],
    vars: [i64; NUM_VARS as usize],
    /// Cycle each register's value is ready (`UNKNOWN` while its writer waits on memory).
    ready: [u64; NUM_ARCH],
    /// The in-flight writer of a register whose ready cycle is unknown.
    writer: [u64; NUM_ARCH],
}

/// Statistic ids.
#[derive(Debug, Clone, Copy)]
struct StatIds {
    instructions: CounterId,
    retired: CounterId,
    loads: CounterId,
    stores: CounterId,
    lookups: CounterId,
    queue_pops: CounterId,
    queue_loads: CounterId,
    mem_requests: CounterId,
    merged: CounterId,
    branches: CounterId,
    mispredictions: CounterId,
    alu_ops: CounterId,
    muldiv_ops: CounterId,
    vector_ops: CounterId,
    stalls: [CounterId; 6],
    retire_stall_memory: CounterId,
    retire_stall_latency: CounterId,
    peak_in_flight: CounterId,
    in_flight_cycles: CounterId,
    lookup_latency: HistogramId,
    load_latency: HistogramId,
}

/// What dispatching one instruction did.
enum Step {
    Dispatched,
    Blocked(Block),
    Stopped,
}

/// Timer token of the core's one timer.
const STEP_TIMER: u64 = 0;

/// Largest output buffer, in f32 elements (16 GiB of host memory): outputs are held by the
/// core, so an absurd size is a configuration error rather than an allocation failure.
pub const MAX_OUTPUT_ELEMS: u64 = 1 << 32;

/// Largest ROB, load queue or store queue (a sanity bound on configurations).
pub const MAX_WINDOW: u32 = 1 << 16;

/// A core running one program (see the module docs).
pub struct Core<M> {
    name: String,
    cfg: CoreConfig,
    program: CoreProgram,
    ops: Vec<Decoded>,
    srcs: Vec<u8>,
    switch_targets: Vec<u32>,
    image: Arc<MemoryImage>,
    ports: CorePorts,
    output: OutputBuffer,
    /// The address ranges the core may store to: the output buffer, then its private scratch
    /// if it has one.
    windows: Vec<Window>,
    /// The windows' values, window after window.
    outputs: Vec<f32>,
    lanes: usize,
    /// Micro-ops of a whole-register vector instruction: `32 * lanes / datapath_bits`, rounded up.
    vector_uops: u32,
    /// Bytes a load or store port moves per micro-op.
    datapath_bytes: u64,

    pc: usize,
    /// Values and dependence state, boxed to keep `Core` small inside component enums.
    rf: Box<RegFile>,
    /// `NUM_VREGS * lanes` lane values (bits as f32), register-major.
    vregs: Vec<f32>,
    entry: Option<QueueEntry>,
    next_operand: u8,

    // Front end.
    /// Cycle whose dispatch slots `used` counts.
    dispatch_cycle: u64,
    used: u32,
    block: Block,
    redirect: Option<Redirect>,
    /// 2-bit counters per instruction (only branches use theirs).
    bimodal: Vec<u8>,
    /// Last target per instruction (only switches use theirs).
    last_target: Vec<u32>,
    /// The open dispatch stall: its cause and first cycle.
    stall: Option<(Cause, u64)>,

    // Window.
    rob: Vec<RobEntry>,
    /// `rob.len() - 1` (the length is a power of two).
    rob_mask: usize,
    head: u64,
    tail: u64,
    lq_used: u32,
    sq_used: u32,
    last_retire: u64,
    retired_in_last: u32,
    /// First cycle after the last retirement (for retirement-stall counts).
    retire_gap_from: u64,
    calendar: Calendar,
    work: Vec<(u64, u64)>,
    scratch: Vec<u64>,

    // Memory.
    accesses: Vec<Access>,
    free_accesses: Vec<u32>,
    /// Lookups being timed (see [`RowTiming`]), free slots, and the open ones, oldest first.
    rows: Vec<RowTiming>,
    free_rows: Vec<u32>,
    open_rows: VecDeque<u32>,
    /// Memory instructions with a known issue cycle, not yet at the send stage.
    to_issue: BinaryHeap<Reverse<(u64, u64)>>,
    send_queue: VecDeque<u32>,
    send_block: SendBlock,
    /// Stores in the ROB, oldest first: (sequence number, first byte, one past the last). A
    /// load of bytes one of them writes waits for it (see `dispatch_one`).
    rob_stores: VecDeque<(u64, u64, u64)>,
    slots: Vec<Slot>,
    free_slots: Vec<u32>,
    /// Read lines in flight and their slot.
    in_flight_lines: AddressMap<u32>,
    loads_in_flight: u64,
    /// Loads in flight summed over ticks, since the last change at `in_flight_since`.
    in_flight_ticks: u128,
    in_flight_since: Tick,

    timer_at: Tick,
    halted: bool,
    halt_retired: Option<u64>,
    last_answer: Tick,
    finish: Option<Tick>,
    fault: Option<CoreFault>,
    counters: CoreCounters,
    stats: StatIds,
    _msg: PhantomData<fn() -> M>,
}

impl<M> Core<M> {
    /// A core named `name` (statistics go under that name) running `program`.
    pub fn new(
        name: &str,
        cfg: CoreConfig,
        program: CoreProgram,
        image: Arc<MemoryImage>,
        ports: CorePorts,
        output: OutputBuffer,
        stats: &mut Stats,
    ) -> Result<Self, CoreError> {
        crate::isa::verify(&program)?;
        let bad = |reason: String| CoreError::Config { core: name.to_string(), reason };
        if cfg.issue_width == 0 {
            return Err(bad("issue_width must be at least 1".into()));
        }
        if cfg.retire_width == 0 {
            return Err(bad("retire_width must be at least 1".into()));
        }
        if !(1..=1 << 20).contains(&cfg.max_outstanding) {
            return Err(bad(format!("max_outstanding {} is outside 1..=1048576", cfg.max_outstanding)));
        }
        if !cfg.line_bytes.is_power_of_two() || !(4..=4096).contains(&cfg.line_bytes) {
            return Err(bad(format!("line_bytes {} is not a power of two in 4..=4096", cfg.line_bytes)));
        }
        for (what, v) in
            [("rob_entries", cfg.rob_entries), ("lq_entries", cfg.lq_entries), ("sq_entries", cfg.sq_entries)]
        {
            if !(1..=MAX_WINDOW).contains(&v) {
                return Err(bad(format!("{what} {v} is outside 1..={MAX_WINDOW}")));
            }
        }
        let f = cfg.fu;
        for (what, v) in
            [("alu", f.alu), ("muldiv", f.muldiv), ("vector", f.vector), ("load", f.load), ("store", f.store)]
        {
            if !(1..=64).contains(&v) {
                return Err(bad(format!("fu.{what} {v} is outside 1..=64")));
            }
        }
        if cfg.datapath_bits == 0
            || !cfg.datapath_bits.is_multiple_of(32)
            || cfg.datapath_bits > 32 * crate::isa::MAX_LANES
        {
            return Err(bad(format!(
                "datapath_bits {} is not a multiple of 32 in 32..={}",
                cfg.datapath_bits,
                32 * crate::isa::MAX_LANES
            )));
        }
        let l = cfg.latency;
        for (what, v) in [
            ("alu", l.alu),
            ("mul", l.mul),
            ("div", l.div),
            ("vector", l.vector),
            ("queue_pop", l.queue_pop),
            ("queue_load", l.queue_load),
        ] {
            if v == 0 {
                return Err(bad(format!("latency.{what} must be at least 1 cycle")));
            }
        }
        if output.base & 3 != 0 {
            return Err(bad(format!("output buffer base {:#x} is not 4-byte aligned", output.base)));
        }
        let output_end =
            output.elems.checked_mul(4).and_then(|b| output.base.checked_add(b)).ok_or_else(|| {
                bad(format!("output buffer of {} elements overflows the address space", output.elems))
            })?;
        if output.elems > MAX_OUTPUT_ELEMS {
            return Err(bad(format!(
                "output buffer of {} elements is above the {MAX_OUTPUT_ELEMS}-element limit",
                output.elems
            )));
        }
        let elems = usize::try_from(output.elems).map_err(|_| bad("output buffer too large".into()))?;
        let mut outputs = Vec::new();
        outputs
            .try_reserve_exact(elems)
            .map_err(|_| bad(format!("cannot allocate an output buffer of {} elements", output.elems)))?;
        outputs.resize(elems, 0.0);
        let pops =
            program.insts.iter().any(|i| matches!(i, Inst::PopControl { .. } | Inst::PopOperand { .. }));
        if pops && ports.queue.is_none() {
            return Err(bad("the program pops the output queue but the core has no queue link".into()));
        }

        let (ops, srcs, switch_targets) = decode(&program, &cfg);
        let stats = StatIds {
            instructions: stats.counter_in(name, "instructions")?,
            retired: stats.counter_in(name, "retired")?,
            loads: stats.counter_in(name, "loads")?,
            stores: stats.counter_in(name, "stores")?,
            lookups: stats.counter_in(name, "lookups")?,
            queue_pops: stats.counter_in(name, "queue_pops")?,
            queue_loads: stats.counter_in(name, "queue_loads")?,
            mem_requests: stats.counter_in(name, "mem_requests")?,
            merged: stats.counter_in(name, "merged_requests")?,
            branches: stats.counter_in(name, "branches")?,
            mispredictions: stats.counter_in(name, "mispredictions")?,
            alu_ops: stats.counter_in(name, "ops.alu")?,
            muldiv_ops: stats.counter_in(name, "ops.muldiv")?,
            vector_ops: stats.counter_in(name, "ops.vector")?,
            stalls: [
                stats.counter_in(name, "dispatch_stall_cycles.rob_full")?,
                stats.counter_in(name, "dispatch_stall_cycles.lq_full")?,
                stats.counter_in(name, "dispatch_stall_cycles.sq_full")?,
                stats.counter_in(name, "dispatch_stall_cycles.mshr_full")?,
                stats.counter_in(name, "dispatch_stall_cycles.queue_empty")?,
                stats.counter_in(name, "dispatch_stall_cycles.mispredict")?,
            ],
            retire_stall_memory: stats.counter_in(name, "retire_stall_cycles.memory")?,
            retire_stall_latency: stats.counter_in(name, "retire_stall_cycles.latency")?,
            peak_in_flight: stats.peak_in(name, "loads_in_flight.peak")?,
            in_flight_cycles: stats.counter_in(name, "loads_in_flight.cycle_sum")?,
            lookup_latency: stats.histogram_in(name, "lookup_latency", 1_000_000_000, 3)?,
            load_latency: stats.histogram_in(name, "load_latency", 1_000_000_000, 3)?,
        };
        let rob_len = (cfg.rob_entries as usize).next_power_of_two();
        let n_access = (cfg.lq_entries + cfg.sq_entries) as usize;
        let n_slots = cfg.max_outstanding as usize;
        let lanes = program.vector_lanes as usize;
        let n_ops = ops.len();
        let empty_entry = RobEntry {
            pc: 0,
            dispatch: 0,
            complete: 0,
            src_ready: 0,
            pending: 0,
            dest: NO_DEST,
            class: Class::None,
            latency: 0,
            mem: MemKind::None,
            slots: 1,
            access: NONE32,
            store_done: false,
            waiters: Vec::new(),
        };
        let limits = [f.alu, f.muldiv, f.vector, f.load, f.store];
        Ok(Core {
            name: name.to_string(),
            cfg,
            program,
            ops,
            srcs,
            switch_targets,
            image,
            ports,
            output,
            windows: vec![Window { base: output.base, end: output_end, first: 0 }],
            outputs,
            lanes,
            vector_uops: (32 * lanes as u32).div_ceil(cfg.datapath_bits),
            datapath_bytes: u64::from(cfg.datapath_bits / 8),
            pc: 0,
            rf: Box::new(RegFile {
                regs: [0; NUM_REGS as usize],
                vars: [0; NUM_VARS as usize],
                ready: [0; NUM_ARCH],
                writer: [NO_SEQ; NUM_ARCH],
            }),
            vregs: vec![0.0; NUM_VREGS as usize * lanes],
            entry: None,
            next_operand: 0,
            dispatch_cycle: u64::MAX,
            used: 0,
            block: Block::None,
            redirect: None,
            // Weakly not-taken: a branch's first execution predicts fall-through.
            bimodal: vec![1; n_ops],
            last_target: vec![u32::MAX; n_ops],
            stall: None,
            rob: vec![empty_entry; rob_len],
            rob_mask: rob_len - 1,
            head: 0,
            tail: 0,
            lq_used: 0,
            sq_used: 0,
            last_retire: 0,
            retired_in_last: 0,
            retire_gap_from: 0,
            calendar: Calendar::new(limits),
            work: Vec::with_capacity(64),
            scratch: Vec::with_capacity(64),
            accesses: vec![Access::default(); n_access],
            free_accesses: (0..n_access as u32).rev().collect(),
            rows: Vec::new(),
            free_rows: Vec::new(),
            open_rows: VecDeque::with_capacity(OPEN_ROWS + 1),
            to_issue: BinaryHeap::with_capacity(n_access),
            send_queue: VecDeque::with_capacity(n_access),
            rob_stores: VecDeque::with_capacity(cfg.sq_entries as usize),
            send_block: SendBlock::None,
            slots: vec![Slot::default(); n_slots],
            free_slots: (0..n_slots as u32).rev().collect(),
            in_flight_lines: HashMap::with_capacity_and_hasher(n_slots.min(4096), Default::default()),
            loads_in_flight: 0,
            in_flight_ticks: 0,
            in_flight_since: 0,
            timer_at: Tick::MAX,
            halted: false,
            halt_retired: None,
            last_answer: 0,
            finish: None,
            fault: None,
            counters: CoreCounters::default(),
            stats,
            _msg: PhantomData,
        })
    }

    /// The output buffer's values (0.0 until stored).
    pub fn outputs(&self) -> &[f32] {
        &self.outputs[..self.output.elems as usize]
    }

    /// Gives the core a private scratch of `scratch.elems` f32 at `scratch.base` that it may
    /// store to and load back (zero at first), beside its output buffer (a TT-EmbeddingBag's
    /// slices and partial contraction). The two must not overlap.
    pub fn with_scratch(mut self, scratch: OutputBuffer) -> Result<Self, CoreError> {
        let bad = |reason: String| CoreError::Config { core: self.name.clone(), reason };
        let end = scratch.elems.checked_mul(4).and_then(|b| scratch.base.checked_add(b));
        let Some(end) = end.filter(|_| scratch.base & 3 == 0) else {
            return Err(bad(format!("scratch at {:#x} is misaligned or overflows", scratch.base)));
        };
        if self.windows[0].overlaps(scratch.base, end) {
            return Err(bad("the scratch overlaps the output buffer".into()));
        }
        let total = self.output.elems.saturating_add(scratch.elems);
        if total > MAX_OUTPUT_ELEMS {
            return Err(bad(format!("output and scratch exceed {MAX_OUTPUT_ELEMS} elements")));
        }
        self.outputs.resize(total as usize, 0.0);
        self.windows.truncate(1);
        self.windows.push(Window { base: scratch.base, end, first: self.output.elems });
        Ok(self)
    }

    /// The index in `outputs` of the word at `addr`, if a window holds it.
    fn writable(&self, addr: u64) -> Option<u64> {
        self.windows
            .iter()
            .find_map(|w| (addr >= w.base && addr < w.end).then(|| w.first + (addr - w.base) / 4))
    }

    /// The output buffer this core writes.
    pub fn output_buffer(&self) -> OutputBuffer {
        self.output
    }

    /// Why execution stopped early, if it did.
    pub fn fault(&self) -> Option<&CoreFault> {
        self.fault.as_ref()
    }

    /// Whether the core has dispatched `halt`.
    pub fn halted(&self) -> bool {
        self.halted
    }

    /// Tick at which `halt` had retired and every memory request was answered.
    pub fn finish_tick(&self) -> Option<Tick> {
        self.finish
    }

    /// Event counts so far.
    pub fn counters(&self) -> CoreCounters {
        self.counters
    }

    /// The value of a scalar register (`None` if it does not exist).
    pub fn reg(&self, r: Reg) -> Option<i64> {
        self.rf.regs.get(r.0 as usize).copied()
    }

    /// The value of a queue-alignment variable (`None` if it does not exist).
    pub fn var(&self, v: Var) -> Option<i64> {
        self.rf.vars.get(v.0 as usize).copied()
    }

    /// The lanes of a vector register (`None` if it does not exist).
    pub fn vreg(&self, v: VReg) -> Option<&[f32]> {
        let start = (v.0 as usize).checked_mul(self.lanes)?;
        self.vregs.get(start..start + self.lanes)
    }

    /// Index of the next instruction to dispatch.
    pub fn pc(&self) -> usize {
        self.pc
    }

    /// The program the core runs.
    pub fn program(&self) -> &CoreProgram {
        &self.program
    }

    /// The core's configuration.
    pub fn config(&self) -> &CoreConfig {
        &self.cfg
    }

    /// Line requests sent and not yet answered.
    pub fn requests_in_flight(&self) -> usize {
        self.slots.len() - self.free_slots.len()
    }

    /// Instructions in the ROB (dispatched, not retired) as of the last time the core ran.
    pub fn rob_occupancy(&self) -> usize {
        (self.tail - self.head) as usize
    }

    /// Loads in flight (first request sent or merged, result not back).
    pub fn loads_in_flight(&self) -> u64 {
        self.loads_in_flight
    }

    /// The text of the instruction at `pc`.
    fn inst_text(&self, pc: usize) -> String {
        self.program
            .insts
            .get(pc)
            .map_or_else(|| "<end of program>".to_string(), |i| format_inst(&self.program, i))
    }

    /// Records a fault at the current pc; execution stops.
    fn fail(&mut self, kind: FaultKind) -> Step {
        if self.fault.is_none() {
            self.fault = Some(CoreFault { pc: self.pc, inst: self.inst_text(self.pc), kind });
        }
        Step::Stopped
    }

    /// Reads the 32-bit word at `addr`: from the output buffer if it lies there, else from the
    /// image.
    fn read_word(&self, addr: u64) -> Result<u32, FaultKind> {
        if let Some(index) = self.writable(addr) {
            if addr & 3 != 0 {
                return Err(FaultKind::Memory(MemError::Misaligned { addr, align: 4 }));
            }
            return Ok(self.outputs.get(index as usize).map_or(0, |v| v.to_bits()));
        }
        self.image.read_u32(addr).map_err(FaultKind::Memory)
    }

    /// `regs[base] + offset` as an address.
    fn address(&self, base: u8, offset: i64) -> Result<u64, FaultKind> {
        let b = self.rf.regs[base as usize];
        b.checked_add(offset)
            .and_then(|a| u64::try_from(a).ok())
            .ok_or(FaultKind::BadAddress { base: b, offset })
    }

    /// Loads `count` elements of `fmt` from `addr` into `vd` as f32 lanes, zeroing the others:
    /// [`Self::load_vector`] for f32; a narrow format is read from the image (tables only, not
    /// the output buffer) and widened.
    fn load_any(&mut self, fmt: TableFormat, vd: u8, addr: u64, count: u32) -> Result<(), FaultKind> {
        if fmt == TableFormat::F32 {
            return self.load_vector(vd, addr, count);
        }
        let start = vd as usize * self.lanes;
        let n = (count as usize).min(self.lanes);
        let eb = fmt.elem_bytes() as usize;
        let mut bytes = [0u8; 2 * crate::isa::MAX_LANES as usize];
        if n > 0 {
            if self.writable(addr).is_some() {
                return Err(FaultKind::Memory(MemError::Misaligned { addr, align: 4 }));
            }
            self.image.read_bytes(addr, &mut bytes[..n * eb]).map_err(FaultKind::Memory)?;
        }
        for i in 0..self.lanes {
            self.vregs[start + i] = if i < n {
                let mut w = [0u8; 4];
                w[..eb].copy_from_slice(&bytes[i * eb..(i + 1) * eb]);
                fmt.widen(u32::from_le_bytes(w))
            } else {
                0.0
            };
        }
        Ok(())
    }

    /// Loads `count` words from `addr` into `vd`, zeroing the other lanes.
    fn load_vector(&mut self, vd: u8, addr: u64, count: u32) -> Result<(), FaultKind> {
        let start = vd as usize * self.lanes;
        let n = (count as usize).min(self.lanes);
        let end = addr.checked_add(4 * n as u64);
        // The common case, a row of a table: one image lookup for the whole vector.
        if n > 0 && end.is_some_and(|e| !self.windows.iter().any(|w| w.overlaps(addr, e))) {
            let mut words = [0u32; 64];
            if self.image.read_u32s(addr, &mut words[..n]).is_ok() {
                let (loaded, rest) = self.vregs[start..start + self.lanes].split_at_mut(n);
                for (v, &w) in loaded.iter_mut().zip(&words[..n]) {
                    *v = f32::from_bits(w);
                }
                rest.fill(0.0);
                return Ok(());
            }
            // Not one region (or a fault): word by word below gives the exact fault.
        }
        for i in 0..self.lanes {
            let value = if i < count as usize {
                let a = addr
                    .checked_add(4 * i as u64)
                    .ok_or(FaultKind::Memory(MemError::Unmapped { addr, bytes: 4 * count as u64 }))?;
                f32::from_bits(self.read_word(a)?)
            } else {
                0.0
            };
            self.vregs[start + i] = value;
        }
        Ok(())
    }

    /// The element count of a vector memory instruction, checked against the lanes.
    fn count(&self, count: Count) -> Result<u32, FaultKind> {
        match count {
            Count::Imm(n) => Ok(n),
            Count::Reg(r) => {
                let value = self.rf.regs[r as usize];
                u32::try_from(value)
                    .ok()
                    .filter(|&n| n as usize <= self.lanes)
                    .ok_or(FaultKind::CountOutOfRange { value, lanes: self.lanes as u32 })
            }
        }
    }

    /// Checks that `bytes` at `addr` lie in the output buffer or the scratch, aligned to
    /// `align`; returns the index of the first word in `outputs`.
    fn check_store(&self, addr: u64, bytes: u64, align: u64) -> Result<usize, FaultKind> {
        let at =
            self.windows.iter().find_map(|w| w.index(addr, bytes)).filter(|_| addr.is_multiple_of(align));
        let out = self.windows[0];
        at.map(|i| i as usize).ok_or(FaultKind::StoreOutsideOutput {
            addr,
            bytes,
            base: out.base,
            size: out.end - out.base,
        })
    }

    /// The distinct lines of `bytes` at `addr`, appended to `lines`.
    fn push_lines(line_bytes: u32, lines: &mut Vec<u64>, addr: u64, bytes: u64) {
        if bytes == 0 {
            return;
        }
        let line = u64::from(line_bytes);
        let first = addr / line;
        let last = addr.saturating_add(bytes - 1) / line;
        for l in first..=last {
            let a = l * line;
            if !lines.contains(&a) {
                lines.push(a);
            }
        }
    }
}

/// Decodes `program` (already verified): the ops, the shared source table and the switch-target
/// table.
fn decode(program: &CoreProgram, cfg: &CoreConfig) -> (Vec<Decoded>, Vec<u8>, Vec<u32>) {
    let lat = cfg.latency;
    let target = |l: &crate::Label| program.target(*l).unwrap_or(u32::MAX);
    let mut switch_targets = Vec::new();
    let mut srcs: Vec<u8> = Vec::new();
    let v = |r: VReg| V_BASE + r.0;
    let ops = program
        .insts
        .iter()
        .map(|inst| {
            let src_first = srcs.len() as u32;
            let mut dest = NO_DEST;
            let mut class = Class::Alu;
            let mut latency = lat.alu;
            let mut mem = MemKind::None;
            let alu_class = |op: AluOp| match op {
                AluOp::Mul => (Class::MulDiv, lat.mul),
                AluOp::Div | AluOp::Rem => (Class::MulDiv, lat.div),
                _ => (Class::Alu, lat.alu),
            };
            let op = match *inst {
                Inst::Li { rd, imm } => {
                    dest = rd.0;
                    Op::Li { rd: rd.0, imm }
                }
                Inst::Alu { op, rd, ra, rb } => {
                    srcs.extend([ra.0, rb.0]);
                    dest = rd.0;
                    (class, latency) = alu_class(op);
                    Op::Alu { op, rd: rd.0, ra: ra.0, rb: rb.0 }
                }
                Inst::AluI { op, rd, ra, imm } => {
                    srcs.push(ra.0);
                    dest = rd.0;
                    (class, latency) = alu_class(op);
                    Op::AluI { op, rd: rd.0, ra: ra.0, imm }
                }
                Inst::Branch { cond, ra, rb, target: t } => {
                    srcs.extend([ra.0, rb.0]);
                    Op::Branch { cond, ra: ra.0, rb: rb.0, target: target(&t) }
                }
                Inst::Jump { target: t } => {
                    class = Class::None;
                    Op::Jump { target: target(&t) }
                }
                Inst::Switch { ra, ref targets } => {
                    srcs.push(ra.0);
                    let first = switch_targets.len() as u32;
                    switch_targets.extend(targets.iter().map(target));
                    Op::Switch { ra: ra.0, first, len: targets.len() as u32 }
                }
                Inst::LoadU32 { rd, base, offset, lookup } | Inst::LoadU64 { rd, base, offset, lookup } => {
                    srcs.push(base.0);
                    dest = rd.0;
                    (class, mem) = (Class::Load, MemKind::Load);
                    let width = if matches!(inst, Inst::LoadU32 { .. }) { Width::W32 } else { Width::W64 };
                    Op::Load { width, rd: rd.0, base: base.0, offset, lookup }
                }
                Inst::Store { width, rs, base, offset } => {
                    srcs.extend([base.0, rs.0]);
                    (class, mem) = (Class::Store, MemKind::Store);
                    Op::Store { width, rs: rs.0, base: base.0, offset }
                }
                Inst::VLoad { vd, base, offset, count, lookup } => {
                    srcs.push(base.0);
                    dest = v(vd);
                    (class, mem) = (Class::Load, MemKind::Load);
                    Op::VLoad {
                        fmt: TableFormat::F32,
                        vd: vd.0,
                        base: base.0,
                        offset,
                        count: Count::Imm(count),
                        lookup,
                    }
                }
                Inst::VLoadWiden { fmt, vd, base, offset, count, lookup } => {
                    srcs.push(base.0);
                    dest = v(vd);
                    (class, mem) = (Class::Load, MemKind::Load);
                    Op::VLoad { fmt, vd: vd.0, base: base.0, offset, count: Count::Imm(count), lookup }
                }
                Inst::VLoadWidenN { fmt, vd, base, offset, count, lookup } => {
                    srcs.extend([base.0, count.0]);
                    dest = v(vd);
                    (class, mem) = (Class::Load, MemKind::Load);
                    Op::VLoad { fmt, vd: vd.0, base: base.0, offset, count: Count::Reg(count.0), lookup }
                }
                Inst::VLoadQueueWiden { fmt, vd, base, offset, count } => {
                    srcs.push(base.0);
                    dest = v(vd);
                    (class, latency, mem) = (Class::Load, lat.queue_load, MemKind::QueueRead);
                    Op::VLoadQueue { fmt, vd: vd.0, base: base.0, offset, count }
                }
                Inst::VLoadN { vd, base, offset, count, lookup } => {
                    srcs.extend([base.0, count.0]);
                    dest = v(vd);
                    (class, mem) = (Class::Load, MemKind::Load);
                    Op::VLoad {
                        fmt: TableFormat::F32,
                        vd: vd.0,
                        base: base.0,
                        offset,
                        count: Count::Reg(count.0),
                        lookup,
                    }
                }
                Inst::VGather { vd, base, offset, index, scale, count, lookup } => {
                    srcs.push(base.0);
                    match index {
                        GatherIndex::Vector(vi) => srcs.push(v(vi)),
                        GatherIndex::Scalars(first) => {
                            srcs.extend((0..count).map(|i| first.0.saturating_add(i as u8)));
                        }
                    }
                    dest = v(vd);
                    (class, mem) = (Class::Load, MemKind::Load);
                    Op::VGather { vd: vd.0, base: base.0, offset, index, scale, count, lookup }
                }
                Inst::VLoadQueue { vd, base, offset, count } => {
                    srcs.push(base.0);
                    dest = v(vd);
                    (class, latency, mem) = (Class::Load, lat.queue_load, MemKind::QueueRead);
                    Op::VLoadQueue { fmt: TableFormat::F32, vd: vd.0, base: base.0, offset, count }
                }
                Inst::VZero { vd } => {
                    dest = v(vd);
                    (class, latency) = (Class::Vector, lat.vector);
                    Op::VZero { vd: vd.0 }
                }
                Inst::VAdd { vd, va, vb } | Inst::VMul { vd, va, vb } | Inst::VMax { vd, va, vb } => {
                    srcs.extend([v(va), v(vb)]);
                    dest = v(vd);
                    (class, latency) = (Class::Vector, lat.vector);
                    let op = match inst {
                        Inst::VAdd { .. } => VOp::Add,
                        Inst::VMul { .. } => VOp::Mul,
                        _ => VOp::Max,
                    };
                    Op::VBin { op, vd: vd.0, va: va.0, vb: vb.0 }
                }
                Inst::VInt { op, vd, va, vb } => {
                    srcs.extend([v(va), v(vb)]);
                    dest = v(vd);
                    (class, latency) = (Class::Vector, lat.vector);
                    Op::VInt { op, vd: vd.0, va: va.0, vb: vb.0 }
                }
                Inst::VBcast { vd, rs } => {
                    srcs.push(rs.0);
                    dest = v(vd);
                    (class, latency) = (Class::Vector, lat.vector);
                    Op::VBcast { vd: vd.0, rs: rs.0 }
                }
                Inst::VExtract { rd, vs, lane } => {
                    srcs.push(v(vs));
                    dest = rd.0;
                    (class, latency) = (Class::Vector, lat.vector);
                    Op::VExtract { rd: rd.0, vs: vs.0, lane }
                }
                Inst::VIota { vd } => {
                    dest = v(vd);
                    (class, latency) = (Class::Vector, lat.vector);
                    Op::VIota { vd: vd.0 }
                }
                Inst::FBin { op, rd, ra, rb } => {
                    srcs.extend([ra.0, rb.0]);
                    dest = rd.0;
                    (class, latency) = (Class::Vector, lat.vector);
                    Op::FBin { op, rd: rd.0, ra: ra.0, rb: rb.0 }
                }
                Inst::FCvt { rd, ra } => {
                    srcs.push(ra.0);
                    dest = rd.0;
                    (class, latency) = (Class::Vector, lat.vector);
                    Op::FCvt { rd: rd.0, ra: ra.0 }
                }
                Inst::VStore { vs, base, offset, count } => {
                    srcs.extend([base.0, v(vs)]);
                    (class, mem) = (Class::Store, MemKind::Store);
                    Op::VStore { vs: vs.0, base: base.0, offset, count: Count::Imm(count) }
                }
                Inst::VStoreN { vs, base, offset, count } => {
                    srcs.extend([base.0, count.0, v(vs)]);
                    (class, mem) = (Class::Store, MemKind::Store);
                    Op::VStore { vs: vs.0, base: base.0, offset, count: Count::Reg(count.0) }
                }
                Inst::PopControl { rd } => {
                    dest = rd.0;
                    (class, latency, mem) = (Class::Load, lat.queue_pop, MemKind::QueueRead);
                    Op::PopControl { rd: rd.0 }
                }
                Inst::PopOperand { rd } => {
                    dest = rd.0;
                    (class, latency, mem) = (Class::Load, lat.queue_pop, MemKind::QueueRead);
                    Op::PopOperand { rd: rd.0 }
                }
                Inst::GetVar { rd, var } => {
                    srcs.push(VAR_BASE + var.0);
                    dest = rd.0;
                    Op::GetVar { rd: rd.0, var: var.0 }
                }
                Inst::IncrementVar { var, imm } => {
                    srcs.push(VAR_BASE + var.0);
                    dest = VAR_BASE + var.0;
                    Op::IncrementVar { var: var.0, imm }
                }
                Inst::Halt => {
                    class = Class::None;
                    Op::Halt
                }
            };
            Decoded { op, src_first, src_len: srcs.len() as u32 - src_first, dest, class, latency, mem }
        })
        .collect();
    (ops, srcs, switch_targets)
}

/// What functional execution of one instruction leaves to the timing model.
struct Exec {
    next_pc: usize,
    /// The instruction's memory access (`NONE32` for none).
    access: u32,
    /// Issue slots it takes: micro-ops of a vector instruction or vector load/store wider than
    /// the datapath, elements of a gather; 1 otherwise.
    slots: u32,
    /// A predicted branch that was mispredicted.
    mispredicted: bool,
    /// The bytes a load or store touches, `[start, end)` (empty for other instructions; a
    /// gather's from its lowest to past its highest element).
    span: (u64, u64),
}

impl<M> Core<M>
where
    M: Carries<MemRequest> + Carries<MemResponse> + Carries<QueueEntry>,
{
    /// Load or store port micro-ops that move `bytes`.
    #[inline]
    fn port_uops(&self, bytes: u64) -> u32 {
        u32::try_from(bytes.div_ceil(self.datapath_bytes).max(1)).unwrap_or(u32::MAX)
    }

    /// ROB index of sequence number `seq`.
    #[inline]
    fn at(&self, seq: u64) -> usize {
        seq as usize & self.rob_mask
    }

    /// Sets the step timer for the edge of `cycle` unless one at or before it is pending.
    fn wake_at(&mut self, cycle: u64, ctx: &mut Ctx<'_, M>) {
        let tick = self.cfg.clock.edge(cycle);
        if self.timer_at != Tick::MAX && self.timer_at >= ctx.now() && self.timer_at <= tick {
            return;
        }
        self.timer_at = tick;
        ctx.schedule_at(tick, Priority::DEFAULT, STEP_TIMER);
    }

    /// Everything the core does at one wake-up: retire, dispatch (at a clock edge), send
    /// memory requests, and arrange the next wake-up.
    fn step(&mut self, ctx: &mut Ctx<'_, M>) {
        if self.fault.is_some() || self.finish.is_some() {
            return;
        }
        let now = ctx.now();
        let clock = self.cfg.clock;
        let cur = clock.cycle_at(now);
        let at_edge = clock.edge(cur) == now;
        // Work found between edges belongs to the next cycle.
        let floor = if at_edge { cur } else { cur + 1 };
        self.retire(cur, ctx);
        if at_edge && !self.halted {
            self.dispatch(cur, ctx);
            if self.fault.is_some() {
                return;
            }
        }
        self.issue_memory(cur, floor, ctx);
        self.pump(ctx);
        // Jumps and `halt` complete when they dispatch.
        self.retire(cur, ctx);
        self.counters.cycles = self.counters.cycles.max(cur);
        self.check_finish();
        if self.finish.is_none() {
            self.schedule_next(cur, ctx);
        } else {
            // Every chunk is answered: the rows still open are complete.
            while let Some(r) = self.open_rows.pop_front() {
                self.close_row(r, ctx);
            }
        }
    }

    /// Sets the timer for the next cycle at which something can happen without a message.
    fn schedule_next(&mut self, cur: u64, ctx: &mut Ctx<'_, M>) {
        let mut next = u64::MAX;
        if let Some(&Reverse((issue, _))) = self.to_issue.peek() {
            next = next.min(issue);
        }
        if self.halted {
            // One wake at the end, once every result time is known (responses wake it before).
            if let Some(rc) = self.final_retire_cycle() {
                next = next.min(rc);
            }
        } else {
            let full = match self.block {
                Block::None => {
                    next = next.min(cur + 1);
                    false
                }
                Block::Rob => self.tail - self.head >= u64::from(self.cfg.rob_entries),
                Block::Lq => self.lq_used >= self.cfg.lq_entries,
                Block::Sq => self.sq_used >= self.cfg.sq_entries,
                Block::Queue => {
                    if self.ports.queue.is_some_and(|q| ctx.peek(q).is_some()) {
                        next = next.min(cur + 1);
                    }
                    false
                }
                Block::Mispredict => {
                    match self.redirect {
                        Some(Redirect::Until(c)) => next = next.min(c),
                        Some(Redirect::Waiting(_)) => {}
                        None => next = next.min(cur + 1),
                    }
                    false
                }
            };
            if matches!(self.block, Block::Rob | Block::Lq | Block::Sq) {
                if !full {
                    next = next.min(cur + 1);
                } else if let Some(rc) = self.head_retire_cycle() {
                    next = next.min(rc);
                }
            }
        }
        if next != u64::MAX {
            self.wake_at(next.max(cur + 1), ctx);
        }
    }

    /// The cycle the ROB head retires, if its result time is known.
    fn head_retire_cycle(&self) -> Option<u64> {
        if self.head == self.tail {
            return None;
        }
        let c = self.rob[self.at(self.head)].complete;
        (c != UNKNOWN).then(|| self.retire_cycle(c, self.last_retire, self.retired_in_last))
    }

    /// When an instruction whose result is ready at `complete` retires, after the previous
    /// retirement at `last` (with `n` retired in that cycle).
    #[inline]
    fn retire_cycle(&self, complete: u64, last: u64, n: u32) -> u64 {
        let rc = complete.max(last);
        if rc == last && n >= self.cfg.retire_width { rc + 1 } else { rc }
    }

    /// When the youngest instruction in the ROB retires, if every result time is known.
    fn final_retire_cycle(&self) -> Option<u64> {
        if self.head == self.tail {
            return None;
        }
        let (mut last, mut n) = (self.last_retire, self.retired_in_last);
        for seq in self.head..self.tail {
            let c = self.rob[self.at(seq)].complete;
            if c == UNKNOWN {
                return None;
            }
            let rc = self.retire_cycle(c, last, n);
            if rc != last {
                (last, n) = (rc, 0);
            }
            n += 1;
        }
        Some(last)
    }

    /// Retires, in order, every instruction whose retirement cycle is at most `cycle`.
    fn retire(&mut self, cycle: u64, ctx: &mut Ctx<'_, M>) {
        let from = self.head;
        while self.head < self.tail {
            let i = self.at(self.head);
            let (complete, dispatch, mem, access, store_done) = {
                let e = &self.rob[i];
                (e.complete, e.dispatch, e.mem, e.access, e.store_done)
            };
            if complete == UNKNOWN {
                break;
            }
            let rc = self.retire_cycle(complete, self.last_retire, self.retired_in_last);
            if rc > cycle {
                break;
            }
            if rc != self.last_retire {
                self.last_retire = rc;
                self.retired_in_last = 0;
            }
            self.retired_in_last += 1;
            // Cycles nothing retired because this (oldest) instruction was not done.
            let gap = complete.saturating_sub(self.retire_gap_from.max(dispatch));
            if gap > 0 {
                if mem == MemKind::Load {
                    self.counters.stall_operand_memory += gap;
                    ctx.stats().add(self.stats.retire_stall_memory, gap);
                } else {
                    self.counters.stall_operand_latency += gap;
                    ctx.stats().add(self.stats.retire_stall_latency, gap);
                }
            }
            self.retire_gap_from = rc + 1;
            if mem == MemKind::Store {
                self.rob_stores.pop_front();
            }
            match mem {
                MemKind::Load | MemKind::QueueRead => self.lq_used -= 1,
                MemKind::Store if store_done => self.sq_used -= 1,
                MemKind::Store => {
                    if let Some(a) = self.accesses.get_mut(access as usize) {
                        a.retired = true;
                    }
                }
                MemKind::None => {}
            }
            // `halt` stops dispatch, so it is the youngest instruction once dispatched.
            if self.halted && self.head + 1 == self.tail {
                self.halt_retired = Some(rc);
            }
            self.head += 1;
        }
        count_progress(&mut self.counters.retired, self.stats.retired, self.head - from, ctx);
    }

    /// Dispatches up to the width at `cycle`, until blocked or halted.
    fn dispatch(&mut self, cycle: u64, ctx: &mut Ctx<'_, M>) {
        if self.dispatch_cycle != cycle {
            self.dispatch_cycle = cycle;
            self.used = 0;
        }
        let from_tail = self.tail;
        self.dispatch_width(cycle, ctx);
        count_progress(&mut self.counters.instructions, self.stats.instructions, self.tail - from_tail, ctx);
    }

    /// The loop of [`Core::dispatch`]; sets `block` to why it stopped.
    fn dispatch_width(&mut self, cycle: u64, ctx: &mut Ctx<'_, M>) {
        while self.used < self.cfg.issue_width && !self.halted {
            match self.dispatch_one(cycle, ctx) {
                Step::Dispatched => {
                    self.used += 1;
                    self.block = Block::None;
                    if let Some((cause, from)) = self.stall.take() {
                        self.add_stall(cause, cycle.saturating_sub(from), ctx);
                    }
                }
                Step::Blocked(block) => {
                    self.block = block;
                    let cause = match block {
                        Block::Rob | Block::Lq | Block::Sq if self.send_block != SendBlock::None => {
                            Cause::MshrFull
                        }
                        Block::Rob => Cause::RobFull,
                        Block::Lq => Cause::LqFull,
                        Block::Sq => Cause::SqFull,
                        Block::Queue => Cause::QueueEmpty,
                        Block::Mispredict | Block::None => Cause::Mispredict,
                    };
                    let from = if self.used > 0 { cycle + 1 } else { cycle };
                    match self.stall {
                        Some((c, _)) if c == cause => {}
                        Some((c, f)) => {
                            self.add_stall(c, from.saturating_sub(f), ctx);
                            self.stall = Some((cause, from));
                        }
                        None => self.stall = Some((cause, from)),
                    }
                    return;
                }
                Step::Stopped => return,
            }
        }
        self.block = Block::None;
    }

    /// Adds `cycles` to the counter of stall `cause`.
    fn add_stall(&mut self, cause: Cause, cycles: u64, ctx: &mut Ctx<'_, M>) {
        let c = &mut self.counters;
        let counter = match cause {
            Cause::RobFull => &mut c.stall_rob_full,
            Cause::LqFull => &mut c.stall_lq_full,
            Cause::SqFull => &mut c.stall_sq_full,
            Cause::MshrFull => &mut c.stall_memory_slots,
            Cause::QueueEmpty => &mut c.stall_queue,
            Cause::Mispredict => &mut c.stall_mispredict,
        };
        *counter += cycles;
        ctx.stats().add(self.stats.stalls[cause as usize], cycles);
    }

    /// Dispatches the instruction at `pc` at `cycle`: checks its resources, executes it, puts
    /// it in the ROB and schedules what can be scheduled.
    fn dispatch_one(&mut self, cycle: u64, ctx: &mut Ctx<'_, M>) -> Step {
        match self.redirect {
            Some(Redirect::Waiting(_)) => return Step::Blocked(Block::Mispredict),
            Some(Redirect::Until(c)) if c > cycle => return Step::Blocked(Block::Mispredict),
            Some(Redirect::Until(_)) => self.redirect = None,
            None => {}
        }
        let Some(&d) = self.ops.get(self.pc) else {
            return self.fail(FaultKind::RanOffEnd);
        };
        if self.tail - self.head >= u64::from(self.cfg.rob_entries) {
            return Step::Blocked(Block::Rob);
        }
        match d.mem {
            MemKind::Load | MemKind::QueueRead if self.lq_used >= self.cfg.lq_entries => {
                return Step::Blocked(Block::Lq);
            }
            MemKind::Store if self.sq_used >= self.cfg.sq_entries => return Step::Blocked(Block::Sq),
            _ => {}
        }
        let exec = match self.execute(&d, ctx) {
            Ok(x) => x,
            Err(step) => return step,
        };
        self.count_class(d.class, ctx);
        let seq = self.tail;
        let i = self.at(seq);
        // Sources: the ready cycle of each, or a wait on its in-flight writer.
        let mut src_ready = cycle;
        let mut pending = 0u32;
        for k in d.src_first..d.src_first + d.src_len {
            let r = self.srcs[k as usize] as usize;
            let ready = self.rf.ready[r];
            if ready == UNKNOWN {
                let w = self.at(self.rf.writer[r]);
                self.rob[w].waiters.push(seq);
                pending += 1;
            } else {
                src_ready = src_ready.max(ready);
            }
        }
        // A load of bytes that an older store in the ROB writes waits for that store's data
        // (the youngest such store): it then reads them behind the store's write, as a store
        // forwarding through the L1 would give them.
        if d.mem == MemKind::Load
            && !self.rob_stores.is_empty()
            && self.windows.iter().any(|w| w.overlaps(exec.span.0, exec.span.1))
            && let Some(&(s, _, _)) = self
                .rob_stores
                .iter()
                .rev()
                .find(|&&(_, start, end)| start < exec.span.1 && exec.span.0 < end)
        {
            let si = self.at(s);
            match self.rob[si].complete {
                UNKNOWN => {
                    self.rob[si].waiters.push(seq);
                    pending += 1;
                }
                c => src_ready = src_ready.max(c),
            }
        }
        {
            let e = &mut self.rob[i];
            e.pc = self.pc as u32;
            e.dispatch = cycle;
            e.complete = UNKNOWN;
            e.src_ready = src_ready;
            e.pending = pending;
            e.dest = d.dest;
            e.class = d.class;
            e.latency = d.latency;
            e.mem = d.mem;
            e.slots = exec.slots;
            e.access = exec.access;
            e.store_done = false;
            e.waiters.clear();
        }
        if d.dest != NO_DEST {
            self.rf.ready[d.dest as usize] = UNKNOWN;
            self.rf.writer[d.dest as usize] = seq;
        }
        self.tail += 1;
        match d.mem {
            MemKind::Load | MemKind::QueueRead => self.lq_used += 1,
            MemKind::Store => {
                self.sq_used += 1;
                self.rob_stores.push_back((seq, exec.span.0, exec.span.1));
            }
            MemKind::None => {}
        }
        // Nothing waits on an instruction just dispatched, so its result time needs no drain.
        if pending == 0
            && let Some(c) = self.schedule(seq, cycle)
        {
            self.set_complete(seq, i, c);
        }
        if exec.mispredicted {
            self.counters.mispredictions += 1;
            ctx.stats().inc(self.stats.mispredictions);
            let c = self.rob[i].complete;
            self.redirect = Some(if c == UNKNOWN {
                Redirect::Waiting(seq)
            } else {
                Redirect::Until(c + u64::from(self.cfg.mispredict_penalty))
            });
        }
        self.pc = exec.next_pc;
        Step::Dispatched
    }

    /// Schedules an instruction whose sources are all resolved: its issue slot and its memory
    /// issue; returns its result time unless that waits for memory (a load).
    fn schedule(&mut self, seq: u64, floor: u64) -> Option<u64> {
        let i = self.at(seq);
        let (from, class, latency, mem, slots) = {
            let e = &self.rob[i];
            (e.dispatch.max(e.src_ready).max(floor), e.class, e.latency, e.mem, e.slots)
        };
        match mem {
            MemKind::Load | MemKind::Store => {
                let issue = self.calendar.reserve_n(class, from, floor, slots);
                self.to_issue.push(Reverse((issue, seq)));
                // A store is done for retirement once it has issued; its write drains later.
                (mem == MemKind::Store).then_some(issue + 1)
            }
            MemKind::None if class == Class::None => Some(from),
            // A cracked instruction's result waits for its last micro-op.
            _ => Some(self.calendar.reserve_n(class, from, floor, slots) + u64::from(latency)),
        }
    }

    /// Records that `seq` (at ROB index `i`) has its result at cycle `c`: its destination's ready
    /// time, and a redirect that waited for it.
    #[inline]
    fn set_complete(&mut self, seq: u64, i: usize, c: u64) {
        let e = &mut self.rob[i];
        e.complete = c;
        let dest = e.dest;
        if dest != NO_DEST && self.rf.writer[dest as usize] == seq {
            self.rf.ready[dest as usize] = c;
            self.rf.writer[dest as usize] = NO_SEQ;
        }
        if self.redirect == Some(Redirect::Waiting(seq)) {
            self.redirect = Some(Redirect::Until(c + u64::from(self.cfg.mispredict_penalty)));
        }
    }

    /// Records the result times on `work` and schedules the instructions they release.
    fn drain_work(&mut self, floor: u64) {
        while let Some((seq, c)) = self.work.pop() {
            let i = self.at(seq);
            self.set_complete(seq, i, c);
            if self.rob[i].waiters.is_empty() {
                continue;
            }
            let waiters = std::mem::replace(&mut self.rob[i].waiters, std::mem::take(&mut self.scratch));
            for &w in &waiters {
                let wi = self.at(w);
                let e = &mut self.rob[wi];
                e.pending = e.pending.saturating_sub(1);
                e.src_ready = e.src_ready.max(c);
                if e.pending == 0
                    && let Some(c) = self.schedule(w, floor)
                {
                    self.work.push((w, c));
                }
            }
            // Keep both buffers' capacity: no allocation in the steady state.
            let mut waiters = waiters;
            waiters.clear();
            self.scratch = std::mem::replace(&mut self.rob[i].waiters, waiters);
        }
    }

    /// Moves memory instructions whose issue cycle has come to the send stage.
    fn issue_memory(&mut self, cycle: u64, floor: u64, ctx: &mut Ctx<'_, M>) {
        while let Some(&Reverse((issue, seq))) = self.to_issue.peek() {
            if issue > cycle {
                break;
            }
            self.to_issue.pop();
            let i = self.at(seq);
            let a = self.rob[i].access;
            let Some(acc) = self.accesses.get_mut(a as usize) else { continue };
            if acc.lines.is_empty() {
                // A masked access of zero elements touches no line.
                if acc.write {
                    self.rob[i].store_done = true;
                } else {
                    self.work.push((seq, issue + 1));
                }
                self.free_accesses.push(a);
                continue;
            }
            self.send_queue.push_back(a);
        }
        self.drain_work(floor);
        let _ = ctx;
    }

    /// Sends line requests in issue order while miss slots are free and the link accepts them;
    /// reads of a line in flight merge into its request. Once the oldest access waits (for a
    /// slot or the link), the younger ones still merge what is in flight, as loads that hit a
    /// busy MSHR do in an L1D: merging needs neither.
    fn pump(&mut self, ctx: &mut Ctx<'_, M>) {
        self.send_block = SendBlock::None;
        while let Some(&a) = self.send_queue.front() {
            let ai = a as usize;
            while self.accesses[ai].next_line < self.accesses[ai].lines.len() {
                let (line, write, first) = {
                    let acc = &self.accesses[ai];
                    (acc.lines[acc.next_line], acc.write, acc.next_line == 0)
                };
                if let Some(&s) = self.in_flight_lines.get(&line).filter(|_| !write) {
                    self.merge_line(a, s, ctx);
                } else {
                    let Some(s) = self.free_slots.pop() else {
                        self.send_block = SendBlock::Slots;
                        self.merge_behind(ctx);
                        return;
                    };
                    let generation = self.slots[s as usize].generation;
                    let req = MemRequest {
                        id: (u64::from(generation) << 32) | u64::from(s),
                        addr: line,
                        bytes: self.cfg.line_bytes,
                        write,
                        issued: ctx.now(),
                        non_temporal: false,
                    };
                    if ctx.send(self.ports.mem_req, <M as Carries<MemRequest>>::wrap(req)).is_err() {
                        // Woken with Wake::Space when the link frees a slot.
                        self.free_slots.push(s);
                        self.send_block = SendBlock::Link;
                        self.merge_behind(ctx);
                        return;
                    }
                    let slot = &mut self.slots[s as usize];
                    slot.busy = true;
                    slot.line = line;
                    slot.write = write;
                    slot.waiters.clear();
                    slot.waiters.push(a);
                    if !write {
                        self.in_flight_lines.insert(line, s);
                    }
                    self.counters.mem_requests += 1;
                    ctx.stats().inc(self.stats.mem_requests);
                }
                self.line_taken(a, first && !write, ctx);
            }
            self.send_queue.pop_front();
        }
    }

    /// Read access `a`'s next line merges into the request of slot `s`.
    fn merge_line(&mut self, a: u32, s: u32, ctx: &mut Ctx<'_, M>) {
        self.slots[s as usize].waiters.push(a);
        self.counters.merged_requests += 1;
        ctx.stats().inc(self.stats.merged);
    }

    /// Access `a`'s next line has been sent or merged; `starts`: it is a load's first line.
    fn line_taken(&mut self, a: u32, starts: bool, ctx: &mut Ctx<'_, M>) {
        if starts {
            // Latency counts from the first request: waiting for a miss slot is the core's
            // queueing, not the memory's latency.
            self.accesses[a as usize].issued = ctx.now();
            self.change_loads_in_flight(true, ctx);
        }
        self.accesses[a as usize].next_line += 1;
    }

    /// With the oldest access waiting, merges the younger loads' next lines that are in flight
    /// (each access's lines still go in order: one that needs a request waits its turn). An
    /// access whose lines are all taken leaves the queue: its answers may free it before the
    /// queue's head moves.
    fn merge_behind(&mut self, ctx: &mut Ctx<'_, M>) {
        let mut k = 1;
        while k < self.send_queue.len() {
            let a = self.send_queue[k];
            let ai = a as usize;
            if !self.accesses[ai].write {
                while self.accesses[ai].next_line < self.accesses[ai].lines.len() {
                    let acc = &self.accesses[ai];
                    let (line, first) = (acc.lines[acc.next_line], acc.next_line == 0);
                    let Some(&s) = self.in_flight_lines.get(&line) else { break };
                    self.merge_line(a, s, ctx);
                    self.line_taken(a, first, ctx);
                }
                if self.accesses[ai].next_line == self.accesses[ai].lines.len() {
                    self.send_queue.remove(k);
                    continue;
                }
            }
            k += 1;
        }
    }

    /// Counts a load entering (`up`) or leaving flight, keeping the peak and the time integral.
    fn change_loads_in_flight(&mut self, up: bool, ctx: &mut Ctx<'_, M>) {
        let now = ctx.now();
        let dt = now.saturating_sub(self.in_flight_since);
        self.in_flight_ticks += u128::from(self.loads_in_flight) * u128::from(dt);
        self.in_flight_since = now;
        let ticks = u64::try_from(self.in_flight_ticks).unwrap_or(u64::MAX);
        let cycles = self.cfg.clock.ticks_to_cycles(ticks);
        let added = cycles.saturating_sub(self.counters.load_in_flight_cycles);
        if added > 0 {
            self.counters.load_in_flight_cycles = cycles;
            ctx.stats().add(self.stats.in_flight_cycles, added);
        }
        if up {
            self.loads_in_flight += 1;
            if self.loads_in_flight > self.counters.peak_loads_in_flight {
                self.counters.peak_loads_in_flight = self.loads_in_flight;
                ctx.stats().inc(self.stats.peak_in_flight);
            }
        } else {
            self.loads_in_flight = self.loads_in_flight.saturating_sub(1);
        }
    }

    /// Takes every response that has arrived and completes the accesses they finish.
    fn receive_responses(&mut self, ctx: &mut Ctx<'_, M>) {
        let now = ctx.now();
        let clock = self.cfg.clock;
        let floor = clock.cycle_at(clock.next_edge(now));
        while let Some(msg) = ctx.recv(self.ports.mem_resp) {
            let resp = match <M as Carries<MemResponse>>::unwrap_as(msg) {
                Ok(resp) => resp,
                Err(_) => {
                    self.fail(FaultKind::UnexpectedMessage("memory response"));
                    continue;
                }
            };
            let slot = (resp.id & 0xffff_ffff) as usize;
            let generation = (resp.id >> 32) as u32;
            // A response that matches no request in flight is ignored (a memory model bug would
            // show as a core that never finishes, which the watchdog reports).
            let Some(s) = self.slots.get_mut(slot) else { continue };
            if !s.busy || s.generation != generation {
                continue;
            }
            s.busy = false;
            s.generation = s.generation.wrapping_add(1);
            let (line, write) = (s.line, s.write);
            let waiters = std::mem::take(&mut s.waiters);
            if !write && self.in_flight_lines.get(&line) == Some(&(slot as u32)) {
                self.in_flight_lines.remove(&line);
            }
            self.free_slots.push(slot as u32);
            self.last_answer = now;
            for &a in &waiters {
                let Some(acc) = self.accesses.get_mut(a as usize) else { continue };
                acc.lines_left = acc.lines_left.saturating_sub(1);
                if acc.lines_left == 0 {
                    self.finish_access(a, floor, ctx);
                }
            }
            let mut waiters = waiters;
            waiters.clear();
            self.slots[slot].waiters = waiters;
        }
        if self.fault.is_none() {
            self.drain_work(floor);
        }
    }

    /// An access's last line was answered: a load's result is ready at cycle `ready`; a store's
    /// queue entry may be freed.
    fn finish_access(&mut self, a: u32, ready: u64, ctx: &mut Ctx<'_, M>) {
        let acc = &self.accesses[a as usize];
        let (seq, write, retired, row, issued) = (acc.seq, acc.write, acc.retired, acc.row, acc.issued);
        self.free_accesses.push(a);
        if write {
            if retired {
                self.sq_used -= 1;
            } else {
                let i = self.at(seq);
                self.rob[i].store_done = true;
            }
            return;
        }
        self.work.push((seq, ready));
        let latency = ctx.now().saturating_sub(issued);
        let stats = ctx.stats();
        stats.record(self.stats.load_latency, latency);
        if let Some(r) = self.rows.get_mut(row as usize) {
            r.pending -= 1;
            r.start = r.start.min(issued);
            r.done = r.done.max(ctx.now());
            if !r.open && r.pending == 0 {
                self.record_row(row, ctx);
            }
        }
        self.change_loads_in_flight(false, ctx);
    }

    /// Opens the row of a `!lookup` load (`next_addr`: where a continuing chunk would load,
    /// `u64::MAX` for none), closing the oldest open row when there are `OPEN_ROWS`.
    fn open_row(&mut self, next_addr: u64, ctx: &mut Ctx<'_, M>) -> u32 {
        if self.open_rows.len() == OPEN_ROWS
            && let Some(old) = self.open_rows.pop_front()
        {
            self.close_row(old, ctx);
        }
        let timing = RowTiming { start: Tick::MAX, done: 0, pending: 1, next_addr, open: true };
        let r = match self.free_rows.pop() {
            Some(r) => {
                self.rows[r as usize] = timing;
                r
            }
            None => {
                self.rows.push(timing);
                (self.rows.len() - 1) as u32
            }
        };
        self.open_rows.push_back(r);
        r
    }

    /// The open row an unmarked vector load of `bytes` at `addr` continues (the newest that
    /// would load there next), or [`NONE32`].
    fn join_row(&mut self, addr: u64, bytes: u64) -> u32 {
        if bytes == 0 {
            // It requests nothing: the row is timed by its other chunks.
            return NONE32;
        }
        let rows = &mut self.rows;
        let Some(&r) = self.open_rows.iter().rev().find(|&&r| rows[r as usize].next_addr == addr) else {
            return NONE32;
        };
        let row = &mut rows[r as usize];
        row.next_addr = addr.saturating_add(bytes);
        row.pending += 1;
        r
    }

    /// No later load joins row `r`: it is recorded once its chunks are answered.
    fn close_row(&mut self, r: u32, ctx: &mut Ctx<'_, M>) {
        let row = &mut self.rows[r as usize];
        row.open = false;
        if row.pending == 0 {
            self.record_row(r, ctx);
        }
    }

    /// Records row `r`'s latency and frees it.
    fn record_row(&mut self, r: u32, ctx: &mut Ctx<'_, M>) {
        let row = self.rows[r as usize];
        ctx.stats().record(self.stats.lookup_latency, row.done.saturating_sub(row.start));
        self.free_rows.push(r);
    }

    /// Marks the core finished once `halt` has retired and nothing is left in flight.
    fn check_finish(&mut self) {
        if let Some(rc) = self.halt_retired
            && self.fault.is_none()
            && self.finish.is_none()
            && self.head == self.tail
            && self.send_queue.is_empty()
            && self.to_issue.is_empty()
            && self.free_slots.len() == self.slots.len()
        {
            let clock = self.cfg.clock;
            let finish = clock.edge(rc).max(self.last_answer);
            self.finish = Some(finish);
            self.counters.cycles = clock.cycle_at(clock.next_edge(finish));
        }
    }

    /// Takes a free access for the instruction about to enter the ROB at `tail`.
    fn new_access(&mut self, write: bool, row: u32) -> u32 {
        // Accesses number lq_entries + sq_entries and each memory instruction holds a queue
        // entry while its access lives, so one is free whenever the queue check passed.
        let a = self.free_accesses.pop().unwrap_or(NONE32);
        if let Some(acc) = self.accesses.get_mut(a as usize) {
            acc.seq = self.tail;
            acc.lines.clear();
            acc.next_line = 0;
            acc.lines_left = 0;
            acc.write = write;
            acc.row = row;
            acc.issued = 0;
            acc.retired = false;
        }
        a
    }

    /// Adds the lines of `bytes` at `addr` to access `a`.
    fn add_lines(&mut self, a: u32, addr: u64, bytes: u64) {
        let line_bytes = self.cfg.line_bytes;
        if let Some(acc) = self.accesses.get_mut(a as usize) {
            Self::push_lines(line_bytes, &mut acc.lines, addr, bytes);
            acc.lines_left = acc.lines.len() as u32;
        }
    }

    fn count_load(&mut self, lookup: bool, ctx: &mut Ctx<'_, M>) {
        self.counters.loads += 1;
        ctx.stats().inc(self.stats.loads);
        if lookup {
            self.counters.lookups += 1;
            ctx.stats().inc(self.stats.lookups);
        }
    }

    fn count_store(&mut self, ctx: &mut Ctx<'_, M>) {
        self.counters.stores += 1;
        ctx.stats().inc(self.stats.stores);
    }

    fn count_pop(&mut self, ctx: &mut Ctx<'_, M>) {
        self.counters.queue_pops += 1;
        ctx.stats().inc(self.stats.queue_pops);
    }

    /// Counts a dispatched instruction of an arithmetic unit class (loads, stores and queue
    /// reads have their own counters).
    fn count_class(&mut self, class: Class, ctx: &mut Ctx<'_, M>) {
        let c = &mut self.counters;
        let (counter, id) = match class {
            Class::Alu => (&mut c.alu_ops, self.stats.alu_ops),
            Class::MulDiv => (&mut c.muldiv_ops, self.stats.muldiv_ops),
            Class::Vector => (&mut c.vector_ops, self.stats.vector_ops),
            Class::Load | Class::Store | Class::None => return,
        };
        *counter += 1;
        ctx.stats().inc(id);
    }

    fn count_branch(&mut self, ctx: &mut Ctx<'_, M>) {
        self.counters.branches += 1;
        ctx.stats().inc(self.stats.branches);
    }

    /// Executes `d` (the instruction at `pc`) functionally; `Err` if it cannot dispatch (an
    /// empty queue) or faults.
    fn execute(&mut self, d: &Decoded, ctx: &mut Ctx<'_, M>) -> Result<Exec, Step> {
        let mut x =
            Exec { next_pc: self.pc + 1, access: NONE32, slots: 1, mispredicted: false, span: (0, 0) };
        macro_rules! tryf {
            ($e:expr) => {
                match $e {
                    Ok(v) => v,
                    Err(kind) => return Err(self.fail(kind)),
                }
            };
        }
        match d.op {
            Op::Li { rd, imm } => self.rf.regs[rd as usize] = imm,
            Op::Alu { op, rd, ra, rb } => {
                let v = op.apply(self.rf.regs[ra as usize], self.rf.regs[rb as usize]);
                self.rf.regs[rd as usize] = tryf!(v.ok_or(FaultKind::DivByZero));
            }
            Op::AluI { op, rd, ra, imm } => {
                let v = op.apply(self.rf.regs[ra as usize], imm);
                self.rf.regs[rd as usize] = tryf!(v.ok_or(FaultKind::DivByZero));
            }
            Op::Branch { cond, ra, rb, target } => {
                let taken = cond.holds(self.rf.regs[ra as usize], self.rf.regs[rb as usize]);
                if taken {
                    x.next_pc = target as usize;
                }
                let counter = &mut self.bimodal[self.pc];
                x.mispredicted = (*counter >= 2) != taken;
                *counter = if taken { (*counter + 1).min(3) } else { counter.saturating_sub(1) };
                self.count_branch(ctx);
            }
            Op::Jump { target } => x.next_pc = target as usize,
            Op::Switch { ra, first, len } => {
                let value = self.rf.regs[ra as usize];
                let target = u32::try_from(value)
                    .ok()
                    .filter(|&i| i < len)
                    .and_then(|i| self.switch_targets.get((first + i) as usize).copied());
                let t = tryf!(target.ok_or(FaultKind::SwitchOutOfRange { value, targets: len as usize }));
                x.next_pc = t as usize;
                x.mispredicted = self.last_target[self.pc] != t;
                self.last_target[self.pc] = t;
                self.count_branch(ctx);
            }
            Op::Load { width, rd, base, offset, lookup } => {
                let addr = tryf!(self.address(base, offset));
                let value = match width {
                    Width::W32 => i64::from(tryf!(self.read_word(addr))),
                    Width::W64 => {
                        if addr & 7 != 0 {
                            return Err(self.fail(FaultKind::Memory(MemError::Misaligned { addr, align: 8 })));
                        }
                        let lo = tryf!(self.read_word(addr));
                        let hi = tryf!(self.read_word(addr + 4));
                        ((u64::from(hi) << 32) | u64::from(lo)) as i64
                    }
                };
                self.rf.regs[rd as usize] = value;
                // A scalar lookup is a row of one element; only vector loads continue rows.
                let row = if lookup { self.open_row(u64::MAX, ctx) } else { NONE32 };
                x.access = self.new_access(false, row);
                self.add_lines(x.access, addr, width.bytes());
                x.span = (addr, addr.saturating_add(width.bytes()));
                self.count_load(lookup, ctx);
            }
            Op::VLoad { fmt, vd, base, offset, count, lookup } => {
                let count = tryf!(self.count(count));
                let addr = tryf!(self.address(base, offset));
                tryf!(self.load_any(fmt, vd, addr, count));
                let bytes = fmt.elem_bytes() * u64::from(count);
                // A masked load of no element looks nothing up and joins no row.
                let lookup = lookup && bytes > 0;
                let row = if lookup {
                    self.open_row(addr.saturating_add(bytes), ctx)
                } else {
                    self.join_row(addr, bytes)
                };
                x.access = self.new_access(false, row);
                // Its f32 lanes, not the bytes read: a widening load writes as many registers
                // as `vld` (one micro-op each), see the ISA docs.
                x.slots = self.port_uops(4 * u64::from(count));
                self.add_lines(x.access, addr, bytes);
                x.span = (addr, addr.saturating_add(bytes));
                self.count_load(lookup, ctx);
            }
            Op::VGather { vd, base, offset, index, scale, count, lookup } => {
                let b = self.rf.regs[base as usize];
                let start = vd as usize * self.lanes;
                // Gather into a scratch copy first: the index vector may be the destination.
                let mut lanes = [0f32; crate::isa::MAX_LANES as usize];
                let lookup = lookup && count > 0;
                let row = if lookup { self.open_row(u64::MAX, ctx) } else { NONE32 };
                x.access = self.new_access(false, row);
                for (i, lane) in lanes.iter_mut().enumerate().take(count as usize) {
                    let idx = match index {
                        GatherIndex::Vector(v) => {
                            i64::from(self.vregs[v.0 as usize * self.lanes + i].to_bits())
                        }
                        GatherIndex::Scalars(r) => self.rf.regs[r.0 as usize + i],
                    };
                    let off = i128::from(offset) + i128::from(idx) * i128::from(scale);
                    let addr = u64::try_from(i128::from(b) + off).ok();
                    let Some(addr) = addr else {
                        self.free_accesses.push(x.access);
                        let offset = i64::try_from(off).unwrap_or(if off < 0 { i64::MIN } else { i64::MAX });
                        return Err(self.fail(FaultKind::BadAddress { base: b, offset }));
                    };
                    match self.read_word(addr) {
                        Ok(w) => *lane = f32::from_bits(w),
                        Err(kind) => {
                            self.free_accesses.push(x.access);
                            return Err(self.fail(kind));
                        }
                    }
                    self.add_lines(x.access, addr, 4);
                    x.span =
                        if i == 0 { (addr, addr + 4) } else { (x.span.0.min(addr), x.span.1.max(addr + 4)) };
                }
                self.vregs[start..start + self.lanes].copy_from_slice(&lanes[..self.lanes]);
                x.slots = count;
                self.count_load(lookup, ctx);
            }
            Op::VLoadQueue { fmt, vd, base, offset, count } => {
                let addr = tryf!(self.address(base, offset));
                tryf!(self.load_any(fmt, vd, addr, count));
                x.slots = self.port_uops(4 * u64::from(count));
                self.counters.queue_loads += 1;
                ctx.stats().inc(self.stats.queue_loads);
            }
            Op::VZero { vd } => {
                x.slots = self.vector_uops;
                let start = vd as usize * self.lanes;
                self.vregs[start..start + self.lanes].fill(0.0);
            }
            Op::VBin { op, vd, va, vb } => {
                x.slots = self.vector_uops;
                let (d0, a0, b0) =
                    (vd as usize * self.lanes, va as usize * self.lanes, vb as usize * self.lanes);
                for i in 0..self.lanes {
                    let (p, q) = (self.vregs[a0 + i], self.vregs[b0 + i]);
                    self.vregs[d0 + i] = match op {
                        VOp::Add => p + q,
                        VOp::Mul => p * q,
                        VOp::Max => p.max(q),
                    };
                }
            }
            Op::VInt { op, vd, va, vb } => {
                x.slots = self.vector_uops;
                let (d0, a0, b0) =
                    (vd as usize * self.lanes, va as usize * self.lanes, vb as usize * self.lanes);
                for i in 0..self.lanes {
                    let v = op.apply(self.vregs[a0 + i].to_bits(), self.vregs[b0 + i].to_bits());
                    self.vregs[d0 + i] = f32::from_bits(v);
                }
            }
            Op::VBcast { vd, rs } => {
                x.slots = self.vector_uops;
                let start = vd as usize * self.lanes;
                let v = f32::from_bits(self.rf.regs[rs as usize] as u32);
                self.vregs[start..start + self.lanes].fill(v);
            }
            Op::VExtract { rd, vs, lane } => {
                let bits =
                    self.vregs.get(vs as usize * self.lanes + lane as usize).map_or(0, |v| v.to_bits());
                self.rf.regs[rd as usize] = i64::from(bits);
            }
            Op::VIota { vd } => {
                x.slots = self.vector_uops;
                let start = vd as usize * self.lanes;
                for i in 0..self.lanes {
                    self.vregs[start + i] = f32::from_bits(i as u32);
                }
            }
            Op::FBin { op, rd, ra, rb } => {
                let a = f32::from_bits(self.rf.regs[ra as usize] as u32);
                let b = f32::from_bits(self.rf.regs[rb as usize] as u32);
                self.rf.regs[rd as usize] = i64::from(op.apply(a, b).to_bits());
            }
            Op::FCvt { rd, ra } => {
                self.rf.regs[rd as usize] = i64::from((self.rf.regs[ra as usize] as f32).to_bits());
            }
            Op::Store { width, rs, base, offset } => {
                let addr = tryf!(self.address(base, offset));
                let bytes = width.bytes();
                let first = tryf!(self.check_store(addr, bytes, bytes));
                let v = self.rf.regs[rs as usize] as u64;
                self.outputs[first] = f32::from_bits(v as u32);
                if width == Width::W64 {
                    self.outputs[first + 1] = f32::from_bits((v >> 32) as u32);
                }
                x.access = self.new_access(true, NONE32);
                self.add_lines(x.access, addr, bytes);
                x.span = (addr, addr + bytes);
                self.count_store(ctx);
            }
            Op::VStore { vs, base, offset, count } => {
                let count = tryf!(self.count(count));
                let addr = tryf!(self.address(base, offset));
                let bytes = 4 * u64::from(count);
                x.slots = self.port_uops(bytes);
                let first = tryf!(self.check_store(addr, bytes, 4));
                let src = vs as usize * self.lanes;
                self.outputs[first..first + count as usize]
                    .copy_from_slice(&self.vregs[src..src + count as usize]);
                x.access = self.new_access(true, NONE32);
                self.add_lines(x.access, addr, bytes);
                x.span = (addr, addr + bytes);
                self.count_store(ctx);
            }
            Op::PopControl { rd } => {
                let Some(queue) = self.ports.queue else {
                    return Err(self.fail(FaultKind::NoQueue));
                };
                let Some(msg) = ctx.recv(queue) else {
                    return Err(Step::Blocked(Block::Queue));
                };
                let Ok(entry) = <M as Carries<QueueEntry>>::unwrap_as(msg) else {
                    return Err(self.fail(FaultKind::UnexpectedMessage("output queue")));
                };
                self.entry = Some(entry);
                self.next_operand = 0;
                self.rf.regs[rd as usize] = i64::from(entry.control);
                self.count_pop(ctx);
            }
            Op::PopOperand { rd } => {
                let Some(entry) = self.entry else {
                    return Err(self.fail(FaultKind::NoEntry));
                };
                let index = self.next_operand;
                let len = entry.len.min(MAX_OPERANDS as u8);
                if index >= len {
                    return Err(self.fail(FaultKind::OperandOutOfRange { index, len: entry.len }));
                }
                self.next_operand += 1;
                self.rf.regs[rd as usize] = entry.operands[index as usize] as i64;
                self.count_pop(ctx);
            }
            Op::GetVar { rd, var } => self.rf.regs[rd as usize] = self.rf.vars[var as usize],
            Op::IncrementVar { var, imm } => {
                let v = &mut self.rf.vars[var as usize];
                *v = v.wrapping_add(imm);
            }
            Op::Halt => self.halted = true,
        }
        Ok(x)
    }
}

impl<M> Component for Core<M>
where
    M: Carries<MemRequest> + Carries<MemResponse> + Carries<QueueEntry>,
{
    type Msg = M;

    fn name(&self) -> &str {
        &self.name
    }

    fn wake(&mut self, why: Wake, ctx: &mut Ctx<'_, M>) {
        match why {
            Wake::Timer(_) => {
                if ctx.now() >= self.timer_at {
                    self.timer_at = Tick::MAX;
                }
            }
            Wake::Start | Wake::Arrival(_) | Wake::Space(_) => {}
        }
        // Responses are taken at every wake, not only at their own: the tick's work then sees
        // every answer of the tick, whichever of its events woke the core first. And they are
        // taken even after a halt or a fault, so the memory can finish.
        if ctx.peek(self.ports.mem_resp).is_some() {
            self.receive_responses(ctx);
        }
        self.step(ctx);
    }

    fn busy(&self) -> bool {
        self.fault.is_none() && self.finish.is_none()
    }

    fn status(&self) -> String {
        if let Some(f) = &self.fault {
            return format!("faulted: {f}");
        }
        if let Some(t) = self.finish {
            return format!("finished at tick {t}");
        }
        let in_flight = self.requests_in_flight();
        let window = format!(
            "{} in the ROB, {in_flight} requests in flight, {} waiting to be sent",
            self.tail - self.head,
            self.send_queue.len()
        );
        if self.halted {
            return format!("halted; {window}");
        }
        let at = format!("pc {} `{}`", self.pc, self.inst_text(self.pc));
        let head = if self.head < self.tail {
            let e = &self.rob[self.at(self.head)];
            let what = if e.complete != UNKNOWN {
                "done".to_string()
            } else if e.mem == MemKind::Load {
                "waits for memory".to_string()
            } else {
                "waits for a load's result".to_string()
            };
            format!(" (oldest: pc {} `{}` {what})", e.pc, self.inst_text(e.pc as usize))
        } else {
            String::new()
        };
        let send = match self.send_block {
            SendBlock::Slots => "; loads wait for a free miss slot",
            SendBlock::Link => "; requests wait for space on the memory request link",
            SendBlock::None => "",
        };
        match self.block {
            Block::Rob => format!("{at} waits: the ROB is full{head}{send}; {window}"),
            Block::Lq => format!("{at} waits: the load queue is full{head}{send}; {window}"),
            Block::Sq => format!("{at} waits: the store queue is full{head}{send}; {window}"),
            Block::Queue => format!("{at} waits on the output queue; {window}"),
            Block::Mispredict => format!("{at} waits for a mispredicted branch to resolve; {window}"),
            Block::None => format!("{at} is next to dispatch{send}; {window}"),
        }
    }
}

#[cfg(test)]
mod calendar_tests {
    use super::{CLASSES, Calendar, Class, HORIZON};
    use proptest::prelude::*;
    use std::collections::HashMap;

    /// The calendar without a ring or skips: every cycle's count kept, read in turn.
    struct Plain {
        used: HashMap<(usize, u64), u64>,
        limits: [u32; CLASSES],
    }

    impl Plain {
        fn reserve_n(&mut self, k: usize, from: u64, floor: u64, n: u32) -> u64 {
            let limit = u64::from(self.limits[k]);
            let mut left = u64::from(n.max(1));
            let mut c = from.max(floor);
            loop {
                let used = self.used.entry((k, c)).or_insert(0);
                if *used < limit {
                    let take = left.min(limit - *used);
                    *used += take;
                    left -= take;
                    if left == 0 {
                        return c;
                    }
                }
                c += 1;
            }
        }
    }

    const KINDS: [Class; 3] = [Class::Alu, Class::Vector, Class::Load];

    /// Reservations past the ring's reach grow it and are still limited, and the ones made
    /// before the growth are kept.
    #[test]
    fn far_reservations_grow_the_ring_and_keep_the_near_ones() {
        let limits = [1, 1, 1, 1, 1];
        let mut cal = Calendar::new(limits);
        assert_eq!(cal.reserve_n(Class::Alu, 5, 0, 1), 5);
        let far = 3 * HORIZON as u64;
        for i in 0..16 {
            assert_eq!(cal.reserve_n(Class::Alu, far, 0, 1), far + i);
        }
        assert!(cal.horizon > 3 * HORIZON);
        // Cycle 5 is still taken: the next slot from 5 is 6.
        assert_eq!(cal.reserve_n(Class::Alu, 5, 0, 1), 6);
    }

    proptest! {
        /// Skipping runs of full cycles finds the same slots as reading every cycle, with
        /// floors that mostly move forward but sometimes step back a few cycles (a core's wakes
        /// between clock edges step back one), and now and then leap most of the ring ahead.
        #[test]
        fn skips_find_the_slots_a_plain_walk_finds(
            ops in prop::collection::vec((0usize..3, 0u64..40, 0u64..3, 1u32..20, 0u8..3, 0u8..50), 1..400),
        ) {
            let limits = [2, 1, 1, 3, 1];
            let mut fast = Calendar::new(limits);
            let mut plain = Plain { used: HashMap::new(), limits };
            let mut floor = 0u64;
            for (kind, ahead, step, n, back, leap) in ops {
                // Now and then far ahead, so that the ring's words are reused.
                floor += if leap == 0 { HORIZON as u64 - 20 } else { step };
                let f = floor.saturating_sub(u64::from(back) * 2);
                let class = KINDS[kind];
                let got = fast.reserve_n(class, f + ahead, f, n);
                let want = plain.reserve_n(class as usize, f + ahead, f, n);
                prop_assert_eq!(got, want);
            }
        }
    }
}
