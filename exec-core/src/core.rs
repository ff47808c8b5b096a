//! The core component: in-order issue, non-blocking loads, a register scoreboard.
//!
//! Contract (see the crate docs for the model):
//!
//! - Instructions execute functionally when they issue, in program order, so every value is
//!   known at issue; timing only decides *when* they issue. Memory is read-only except the
//!   core's own output buffer, which only this core writes; loads of the output buffer read back
//!   what the core stored there.
//! - Every scalar and vector register has a ready tick. The oldest unissued instruction issues
//!   at a clock edge once its sources are ready; if it cannot, nothing behind it issues. Up to
//!   `issue_width` instructions issue per cycle. A result is ready `latency` cycles after the
//!   issuing edge; a load's result is ready when its last line's response arrives.
//! - A load or store is split into line requests (an access spanning two lines makes two). It
//!   issues when the previous memory instruction's requests have all been sent and a miss slot
//!   is free; its requests then leave as slots free up and the request link accepts them, and
//!   each holds its slot until answered. Stores do not block registers.
//! - `pop_control` waits (asleep) for an entry on the queue link; `pop_operand` reads the
//!   current entry's operands in order. `halt` stops issue; the core is finished when its
//!   requests are answered and its last result is ready ([`Core::finish_tick`]).
//! - A program error (bad address, division by zero, a switch or operand out of range, a store
//!   outside the output buffer, running off the end) is a [`CoreFault`]: execution stops and the
//!   core stops being busy; nothing panics.
//! - Events: the core never ticks while it waits on memory or on the queue; it sleeps until a
//!   response, an arrival or a freed link slot wakes it, sets one timer when it waits only on a
//!   known latency, and one for the next cycle when it used its full issue width.

use crate::isa::{AluOp, Cond, CoreProgram, Inst, NUM_REGS, NUM_VREGS};
use crate::queue::{MAX_OPERANDS, QueueEntry};
use crate::text::format_inst;
use crate::{CoreError, Reg, VReg};
use mem_model::{MemError, MemRequest, MemResponse, MemoryImage};
use sim_core::{
    Carries, Clock, Component, CounterId, Ctx, Frequency, HistogramId, LinkId, Priority, Stats, Tick, Wake,
};
use std::collections::VecDeque;
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;
use thiserror::Error;

/// Functional-unit latencies, in core cycles (each at least 1). Deserializable so that system
/// presets can list them by name (`alu = 1`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Latencies {
    /// Integer ALU ops, `li`, branches.
    pub alu: u32,
    /// Integer multiply.
    pub mul: u32,
    /// Integer divide and remainder.
    pub div: u32,
    /// Vector ops: `vzero`, `vadd`, `vmul`, `vmax`.
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

/// Parameters of a core.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CoreConfig {
    /// The core's clock domain.
    pub clock: Clock,
    /// Instructions issued per cycle, in order (at least 1).
    pub issue_width: u32,
    /// L1D miss slots (MSHRs): line requests, loads and stores, in flight at once.
    pub max_outstanding: u32,
    /// Cache-line size in bytes: memory requests are per line (a power of two, 4 to 4096).
    pub line_bytes: u32,
    /// Functional-unit latencies in cycles.
    pub latency: Latencies,
}

impl CoreConfig {
    /// A Neoverse-V2-class core (REFERENCE.md section 5, an assumption): 6 instructions per
    /// cycle, 16 MSHRs, 64-byte lines, [`Latencies::neoverse_v2_like`], on `clock`.
    pub const fn neoverse_v2_like(clock: Clock) -> Self {
        CoreConfig {
            clock,
            issue_width: 6,
            max_outstanding: 16,
            line_bytes: 64,
            latency: Latencies::neoverse_v2_like(),
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
    /// `base + offset` is negative or overflows.
    #[error("address {base} + {offset} is not a valid address")]
    BadAddress {
        /// The base register's value.
        base: i64,
        /// The offset.
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct CoreCounters {
    /// Instructions issued (each retires at issue in this model).
    pub instructions: u64,
    /// Memory loads (`ld.u32`, `vld`).
    pub loads: u64,
    /// Stores (`vst`).
    pub stores: u64,
    /// Loads marked `!lookup`.
    pub lookups: u64,
    /// `pop_control` and `pop_operand`.
    pub queue_pops: u64,
    /// `vldq`.
    pub queue_loads: u64,
    /// Line requests sent to memory.
    pub mem_requests: u64,
    /// Cycles without issue while the next instruction waited for a load's result.
    pub stall_operand_memory: u64,
    /// Cycles without issue while the next instruction waited for a functional unit's result.
    pub stall_operand_latency: u64,
    /// Cycles without issue while a memory instruction waited for a miss slot or the link.
    pub stall_memory_slots: u64,
    /// Cycles without issue while `pop_control` waited for a queue entry.
    pub stall_queue: u64,
}

/// A register, scalar or vector, for the scoreboard.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RegName {
    R(u8),
    V(u8),
}

impl fmt::Display for RegName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RegName::R(r) => write!(f, "r{r}"),
            RegName::V(v) => write!(f, "v{v}"),
        }
    }
}

/// What keeps the next instruction from issuing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Block {
    /// Nothing (or not evaluated yet).
    None,
    /// A source register is not ready: its load is in flight (`memory`) or its result is due at
    /// a known tick.
    Operand { reg: RegName, memory: bool, ready: Tick },
    /// No miss slot is free, or the previous memory instruction's requests are still queued.
    Slots,
    /// The request link refused a request.
    Link,
    /// `pop_control` found the queue empty.
    Queue,
}

impl Block {
    /// Index into the stall counters.
    fn cause(self) -> usize {
        match self {
            Block::Operand { memory: true, .. } => 0,
            Block::Operand { memory: false, .. } | Block::None => 1,
            Block::Slots | Block::Link => 2,
            Block::Queue => 3,
        }
    }
}

/// A vector lane-wise operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum VOp {
    Add,
    Mul,
    Max,
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
    LoadU32 { rd: u8, base: u8, offset: i64, lookup: bool },
    VLoad { vd: u8, base: u8, offset: i64, count: u32, lookup: bool },
    VLoadQueue { vd: u8, base: u8, offset: i64, count: u32 },
    VZero { vd: u8 },
    VBin { op: VOp, vd: u8, va: u8, vb: u8 },
    VStore { vs: u8, base: u8, offset: i64, count: u32 },
    PopControl { rd: u8 },
    PopOperand { rd: u8 },
    Halt,
}

/// No register: a padding entry in a source list.
const NO_REG: u8 = u8::MAX;

/// A decoded instruction with its sources and result latency.
#[derive(Debug, Clone, Copy)]
struct Decoded {
    op: Op,
    /// Scalar sources (`NO_REG` for none).
    srcs: [u8; 2],
    /// Vector sources (`NO_REG` for none).
    vsrcs: [u8; 2],
    /// Cycles from issue to result.
    latency: u32,
}

/// Where a load's result goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dest {
    Store,
    R(u8),
    V(u8),
}

/// A load or store in flight.
#[derive(Debug, Clone, Copy)]
struct Access {
    dest: Dest,
    /// Unique id: the register it targets is only marked ready by the load that wrote it last.
    uid: u64,
    /// Line requests not yet answered (sent or still queued).
    lines_left: u32,
    /// Issue tick of the instruction.
    issued: Tick,
    lookup: bool,
}

/// A line request waiting for a miss slot or link space.
#[derive(Debug, Clone, Copy)]
struct LineReq {
    access: u32,
    addr: u64,
    write: bool,
}

/// A miss slot: the access its request belongs to, and a generation that makes request ids
/// unique over time.
#[derive(Debug, Clone, Copy)]
struct Slot {
    access: u32,
    generation: u32,
}

const FREE: u32 = u32::MAX;

/// Largest output buffer, in f32 elements (16 GiB of host memory): outputs are held by the
/// core, so an absurd size is a configuration error rather than an allocation failure.
pub const MAX_OUTPUT_ELEMS: u64 = 1 << 32;

/// Scalar register values and the ready tick and pending-load writer of every register.
#[derive(Debug, Clone)]
struct RegFile {
    regs: [i64; NUM_REGS as usize],
    reg_ready: [Tick; NUM_REGS as usize],
    vreg_ready: [Tick; NUM_VREGS as usize],
    /// Uid of the in-flight load that last targeted each register (0: none).
    reg_writer: [u64; NUM_REGS as usize],
    vreg_writer: [u64; NUM_VREGS as usize],
}

/// Statistic ids.
#[derive(Debug, Clone, Copy)]
struct StatIds {
    instructions: CounterId,
    loads: CounterId,
    stores: CounterId,
    lookups: CounterId,
    queue_pops: CounterId,
    queue_loads: CounterId,
    mem_requests: CounterId,
    stalls: [CounterId; 4],
    lookup_latency: HistogramId,
    load_latency: HistogramId,
}

/// The outcome of trying to issue one instruction.
enum Step {
    Issued,
    Blocked(Block),
    Stopped,
}

/// Timer token of the issue timer (the only timer a core sets).
const ISSUE_TIMER: u64 = 0;

/// A core running one program (see the module docs).
pub struct Core<M> {
    name: String,
    cfg: CoreConfig,
    program: CoreProgram,
    ops: Vec<Decoded>,
    switch_targets: Vec<u32>,
    image: Arc<MemoryImage>,
    ports: CorePorts,
    output: OutputBuffer,
    /// One past the output buffer's last byte.
    output_end: u64,
    outputs: Vec<f32>,
    lanes: usize,

    pc: usize,
    /// Scalar values and the scoreboard, boxed to keep `Core` small inside component enums.
    rf: Box<RegFile>,
    /// `NUM_VREGS * lanes` values, register-major.
    vregs: Vec<f32>,
    entry: Option<QueueEntry>,
    next_operand: u8,

    /// Edge of the cycle whose issue slots `used` counts.
    cycle_edge: Tick,
    used: u32,
    /// Tick of the pending issue timer (`Tick::MAX`: none).
    timer_at: Tick,
    block: Block,
    /// First cycle without issue of the current stall, and its cause (`Block::cause`).
    stall_from: Option<u64>,
    stall_cause: usize,

    accesses: Vec<Access>,
    free_accesses: Vec<u32>,
    slots: Vec<Slot>,
    free_slots: Vec<u32>,
    send_queue: VecDeque<LineReq>,
    next_uid: u64,

    halted: bool,
    /// When the last result of a halted core is ready.
    drain_tick: Tick,
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
        if !(1..=1 << 20).contains(&cfg.max_outstanding) {
            return Err(bad(format!("max_outstanding {} is outside 1..=1048576", cfg.max_outstanding)));
        }
        if !cfg.line_bytes.is_power_of_two() || !(4..=4096).contains(&cfg.line_bytes) {
            return Err(bad(format!("line_bytes {} is not a power of two in 4..=4096", cfg.line_bytes)));
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

        let (ops, switch_targets, max_lines) = decode(&program, &cfg);
        let stat = |s: &mut Stats, leaf: &str| s.counter(&format!("{name}.{leaf}"));
        let stats = StatIds {
            instructions: stat(stats, "instructions")?,
            loads: stat(stats, "loads")?,
            stores: stat(stats, "stores")?,
            lookups: stat(stats, "lookups")?,
            queue_pops: stat(stats, "queue_pops")?,
            queue_loads: stat(stats, "queue_loads")?,
            mem_requests: stat(stats, "mem_requests")?,
            stalls: [
                stat(stats, "stall_cycles.operand_memory")?,
                stat(stats, "stall_cycles.operand_latency")?,
                stat(stats, "stall_cycles.memory_slots")?,
                stat(stats, "stall_cycles.queue")?,
            ],
            lookup_latency: stats.histogram(&format!("{name}.lookup_latency"), 1_000_000_000, 3)?,
            load_latency: stats.histogram(&format!("{name}.load_latency"), 1_000_000_000, 3)?,
        };
        let slots = cfg.max_outstanding as usize;
        // Every access in flight holds a slot, except the one whose lines wait to be sent.
        let max_accesses = slots + 1;
        let lanes = program.vector_lanes as usize;
        Ok(Core {
            name: name.to_string(),
            cfg,
            program,
            ops,
            switch_targets,
            image,
            ports,
            output,
            output_end,
            outputs,
            lanes,
            pc: 0,
            rf: Box::new(RegFile {
                regs: [0; NUM_REGS as usize],
                reg_ready: [0; NUM_REGS as usize],
                vreg_ready: [0; NUM_VREGS as usize],
                reg_writer: [0; NUM_REGS as usize],
                vreg_writer: [0; NUM_VREGS as usize],
            }),
            vregs: vec![0.0; NUM_VREGS as usize * lanes],
            entry: None,
            next_operand: 0,
            cycle_edge: Tick::MAX,
            used: 0,
            timer_at: Tick::MAX,
            block: Block::None,
            stall_from: None,
            stall_cause: 0,
            accesses: vec![
                Access { dest: Dest::Store, uid: 0, lines_left: 0, issued: 0, lookup: false };
                max_accesses
            ],
            free_accesses: (0..max_accesses as u32).rev().collect(),
            slots: vec![Slot { access: FREE, generation: 0 }; slots],
            free_slots: (0..slots as u32).rev().collect(),
            send_queue: VecDeque::with_capacity(max_lines),
            next_uid: 1,
            halted: false,
            drain_tick: 0,
            finish: None,
            fault: None,
            counters: CoreCounters::default(),
            stats,
            _msg: PhantomData,
        })
    }

    /// The output buffer's values (0.0 until stored).
    pub fn outputs(&self) -> &[f32] {
        &self.outputs
    }

    /// The output buffer this core writes.
    pub fn output_buffer(&self) -> OutputBuffer {
        self.output
    }

    /// Why execution stopped early, if it did.
    pub fn fault(&self) -> Option<&CoreFault> {
        self.fault.as_ref()
    }

    /// Whether the core has executed `halt`.
    pub fn halted(&self) -> bool {
        self.halted
    }

    /// Tick at which the core halted with all its requests answered and results ready.
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

    /// The lanes of a vector register (`None` if it does not exist).
    pub fn vreg(&self, v: VReg) -> Option<&[f32]> {
        let start = (v.0 as usize).checked_mul(self.lanes)?;
        self.vregs.get(start..start + self.lanes)
    }

    /// Index of the next instruction to issue.
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
        if addr >= self.output.base && addr < self.output_end {
            let offset = addr - self.output.base;
            if offset & 3 != 0 {
                return Err(FaultKind::Memory(MemError::Misaligned { addr, align: 4 }));
            }
            return Ok(self.outputs.get((offset / 4) as usize).map_or(0, |v| v.to_bits()));
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

    /// Loads `count` f32 from `addr` into `vd`, zeroing the other lanes.
    fn load_vector(&mut self, vd: u8, addr: u64, count: u32) -> Result<(), FaultKind> {
        let start = vd as usize * self.lanes;
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

    /// Sets a scalar register written by a non-load instruction.
    #[inline]
    fn set_reg(&mut self, rd: u8, value: i64, ready: Tick) {
        let r = rd as usize;
        self.rf.regs[r] = value;
        self.rf.reg_ready[r] = ready;
        self.rf.reg_writer[r] = 0;
    }

    /// Marks a vector register written by a non-load instruction.
    #[inline]
    fn set_vready(&mut self, vd: u8, ready: Tick) {
        self.rf.vreg_ready[vd as usize] = ready;
        self.rf.vreg_writer[vd as usize] = 0;
    }

    /// The first source of `d` not ready at `edge`, as a block.
    fn operand_block(&self, d: &Decoded, edge: Tick) -> Option<Block> {
        let mut worst: Option<Block> = None;
        let mut consider = |reg: RegName, ready: Tick| {
            if ready > edge {
                let later = match worst {
                    Some(Block::Operand { ready: w, .. }) => ready > w,
                    _ => true,
                };
                if later {
                    worst = Some(Block::Operand { reg, memory: ready == Tick::MAX, ready });
                }
            }
        };
        for &r in &d.srcs {
            if r != NO_REG {
                consider(RegName::R(r), self.rf.reg_ready[r as usize]);
            }
        }
        for &v in &d.vsrcs {
            if v != NO_REG {
                consider(RegName::V(v), self.rf.vreg_ready[v as usize]);
            }
        }
        worst
    }

    /// Whether a memory instruction can take a miss slot now (and why not).
    fn memory_block(&self) -> Option<Block> {
        if !self.send_queue.is_empty() {
            // The previous memory instruction's lines are still waiting; say why.
            if self.free_slots.is_empty() { Some(Block::Slots) } else { Some(Block::Link) }
        } else if self.free_slots.is_empty() || self.free_accesses.is_empty() {
            Some(Block::Slots)
        } else {
            None
        }
    }

    /// Starts an access of `bytes` at `addr` whose result goes to `dest`: queues its line
    /// requests (sent by `pump`).
    fn start_access(&mut self, dest: Dest, addr: u64, bytes: u64, issued: Tick, lookup: bool) {
        let Some(index) = self.free_accesses.pop() else { return };
        let uid = self.next_uid;
        self.next_uid += 1;
        let line = self.cfg.line_bytes as u64;
        let first = addr / line;
        let last = addr.saturating_add(bytes.max(1) - 1) / line;
        let lines = (last - first + 1) as u32;
        self.accesses[index as usize] = Access { dest, uid, lines_left: lines, issued, lookup };
        for l in first..=last {
            self.send_queue.push_back(LineReq { access: index, addr: l * line, write: dest == Dest::Store });
        }
        match dest {
            Dest::R(r) => {
                self.rf.reg_ready[r as usize] = Tick::MAX;
                self.rf.reg_writer[r as usize] = uid;
            }
            Dest::V(v) => {
                self.rf.vreg_ready[v as usize] = Tick::MAX;
                self.rf.vreg_writer[v as usize] = uid;
            }
            Dest::Store => {}
        }
    }

    /// Marks the core finished if it halted and nothing is left in flight.
    fn check_finish(&mut self, now: Tick) {
        if self.halted
            && self.fault.is_none()
            && self.finish.is_none()
            && self.send_queue.is_empty()
            && self.free_slots.len() == self.slots.len()
        {
            self.finish = Some(self.drain_tick.max(now));
        }
    }
}

/// Decodes `program` (already verified) for the hot path; also returns the switch-target
/// table and the most lines any one access can span.
fn decode(program: &CoreProgram, cfg: &CoreConfig) -> (Vec<Decoded>, Vec<u32>, usize) {
    let lat = cfg.latency;
    let target = |l: &crate::Label| program.target(*l).unwrap_or(u32::MAX);
    let mut switch_targets = Vec::new();
    let mut max_bytes = 4u64;
    let ops = program
        .insts
        .iter()
        .map(|inst| {
            let mut d = Decoded { op: Op::Halt, srcs: [NO_REG; 2], vsrcs: [NO_REG; 2], latency: lat.alu };
            let alu_latency = |op: AluOp| match op {
                AluOp::Mul => lat.mul,
                AluOp::Div | AluOp::Rem => lat.div,
                _ => lat.alu,
            };
            d.op = match *inst {
                Inst::Li { rd, imm } => Op::Li { rd: rd.0, imm },
                Inst::Alu { op, rd, ra, rb } => {
                    d.srcs = [ra.0, rb.0];
                    d.latency = alu_latency(op);
                    Op::Alu { op, rd: rd.0, ra: ra.0, rb: rb.0 }
                }
                Inst::AluI { op, rd, ra, imm } => {
                    d.srcs[0] = ra.0;
                    d.latency = alu_latency(op);
                    Op::AluI { op, rd: rd.0, ra: ra.0, imm }
                }
                Inst::Branch { cond, ra, rb, target: t } => {
                    d.srcs = [ra.0, rb.0];
                    Op::Branch { cond, ra: ra.0, rb: rb.0, target: target(&t) }
                }
                Inst::Jump { target: t } => Op::Jump { target: target(&t) },
                Inst::Switch { ra, ref targets } => {
                    d.srcs[0] = ra.0;
                    let first = switch_targets.len() as u32;
                    switch_targets.extend(targets.iter().map(target));
                    Op::Switch { ra: ra.0, first, len: targets.len() as u32 }
                }
                Inst::LoadU32 { rd, base, offset, lookup } => {
                    d.srcs[0] = base.0;
                    Op::LoadU32 { rd: rd.0, base: base.0, offset, lookup }
                }
                Inst::VLoad { vd, base, offset, count, lookup } => {
                    d.srcs[0] = base.0;
                    max_bytes = max_bytes.max(4 * count as u64);
                    Op::VLoad { vd: vd.0, base: base.0, offset, count, lookup }
                }
                Inst::VLoadQueue { vd, base, offset, count } => {
                    d.srcs[0] = base.0;
                    d.latency = lat.queue_load;
                    Op::VLoadQueue { vd: vd.0, base: base.0, offset, count }
                }
                Inst::VZero { vd } => {
                    d.latency = lat.vector;
                    Op::VZero { vd: vd.0 }
                }
                Inst::VAdd { vd, va, vb } | Inst::VMul { vd, va, vb } | Inst::VMax { vd, va, vb } => {
                    d.vsrcs = [va.0, vb.0];
                    d.latency = lat.vector;
                    let op = match inst {
                        Inst::VAdd { .. } => VOp::Add,
                        Inst::VMul { .. } => VOp::Mul,
                        _ => VOp::Max,
                    };
                    Op::VBin { op, vd: vd.0, va: va.0, vb: vb.0 }
                }
                Inst::VStore { vs, base, offset, count } => {
                    d.srcs[0] = base.0;
                    d.vsrcs[0] = vs.0;
                    max_bytes = max_bytes.max(4 * count as u64);
                    Op::VStore { vs: vs.0, base: base.0, offset, count }
                }
                Inst::PopControl { rd } => {
                    d.latency = lat.queue_pop;
                    Op::PopControl { rd: rd.0 }
                }
                Inst::PopOperand { rd } => {
                    d.latency = lat.queue_pop;
                    Op::PopOperand { rd: rd.0 }
                }
                Inst::Halt => Op::Halt,
            };
            d
        })
        .collect();
    // An access of b bytes spans at most b / line + 2 lines (the +2 covers a misaligned start).
    let max_lines = (max_bytes / cfg.line_bytes.max(1) as u64 + 2) as usize;
    (ops, switch_targets, max_lines)
}

impl<M> Core<M>
where
    M: Carries<MemRequest> + Carries<MemResponse> + Carries<QueueEntry>,
{
    /// Sets the issue timer for `tick` unless one at or before it is pending.
    fn wake_at(&mut self, tick: Tick, ctx: &mut Ctx<'_, M>) {
        if self.timer_at != Tick::MAX && self.timer_at >= ctx.now() && self.timer_at <= tick {
            return;
        }
        self.timer_at = tick;
        ctx.schedule_at(tick, Priority::DEFAULT, ISSUE_TIMER);
    }

    /// Sends queued line requests while miss slots are free and the link accepts them.
    fn pump(&mut self, ctx: &mut Ctx<'_, M>) {
        while let Some(&line) = self.send_queue.front() {
            let Some(slot) = self.free_slots.pop() else { return };
            let generation = self.slots[slot as usize].generation;
            let req = MemRequest {
                id: (u64::from(generation) << 32) | u64::from(slot),
                addr: line.addr,
                bytes: self.cfg.line_bytes,
                write: line.write,
                issued: ctx.now(),
                non_temporal: false,
            };
            if ctx.send(self.ports.mem_req, <M as Carries<MemRequest>>::wrap(req)).is_err() {
                // Woken with Wake::Space when the link frees a slot.
                self.free_slots.push(slot);
                return;
            }
            self.slots[slot as usize].access = line.access;
            self.send_queue.pop_front();
            self.counters.mem_requests += 1;
            ctx.stats().inc(self.stats.mem_requests);
        }
    }

    /// Takes every response that has arrived and completes the accesses they finish.
    fn receive_responses(&mut self, ctx: &mut Ctx<'_, M>) {
        let now = ctx.now();
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
            if s.access == FREE || s.generation != generation {
                continue;
            }
            let index = s.access;
            s.access = FREE;
            s.generation = s.generation.wrapping_add(1);
            self.free_slots.push(slot as u32);
            let Some(a) = self.accesses.get_mut(index as usize) else { continue };
            a.lines_left = a.lines_left.saturating_sub(1);
            if a.lines_left > 0 {
                continue;
            }
            let a = *a;
            self.free_accesses.push(index);
            match a.dest {
                Dest::Store => continue,
                Dest::R(r) if self.rf.reg_writer[r as usize] == a.uid => {
                    self.rf.reg_ready[r as usize] = now;
                    self.rf.reg_writer[r as usize] = 0;
                }
                Dest::V(v) if self.rf.vreg_writer[v as usize] == a.uid => {
                    self.rf.vreg_ready[v as usize] = now;
                    self.rf.vreg_writer[v as usize] = 0;
                }
                // A later instruction overwrote the register: its value and timing stand.
                _ => {}
            }
            let latency = now.saturating_sub(a.issued);
            let stats = ctx.stats();
            stats.record(self.stats.load_latency, latency);
            if a.lookup {
                stats.record(self.stats.lookup_latency, latency);
            }
        }
    }

    /// Issues instructions at the current cycle edge until blocked, halted or out of width.
    fn run_issue(&mut self, ctx: &mut Ctx<'_, M>) {
        if self.halted || self.fault.is_some() {
            return;
        }
        let now = ctx.now();
        let clock = self.cfg.clock;
        let edge = clock.next_edge(now);
        if edge > now {
            // Woken between edges (a response or an arrival): issue at the next edge.
            self.wake_at(edge, ctx);
            return;
        }
        if self.cycle_edge != edge {
            self.cycle_edge = edge;
            self.used = 0;
        }
        let cycle = clock.cycle_at(edge);
        while self.used < self.cfg.issue_width {
            match self.issue_one(edge, cycle, ctx) {
                Step::Issued => {
                    self.used += 1;
                    self.block = Block::None;
                    if let Some(from) = self.stall_from.take() {
                        self.add_stall(cycle.saturating_sub(from), ctx);
                    }
                    self.counters.instructions += 1;
                    ctx.stats().inc(self.stats.instructions);
                    ctx.progress();
                    if self.halted {
                        self.check_finish(now);
                        return;
                    }
                }
                Step::Blocked(block) => {
                    self.stall(block, if self.used == 0 { cycle } else { cycle + 1 }, ctx);
                    return;
                }
                Step::Stopped => return,
            }
        }
        // The width is used up. If the next instruction's operands will not be ready next
        // cycle, sleep until they are rather than wake just to find it blocked.
        let next = clock.edge(cycle + 1);
        if let Some(d) = self.ops.get(self.pc).copied()
            && let Some(block) = self.operand_block(&d, next)
        {
            self.stall(block, cycle + 1, ctx);
            return;
        }
        self.wake_at(next, ctx);
    }

    /// Records that issue is blocked from cycle `from` by `block` and arranges the wake-up.
    fn stall(&mut self, block: Block, from: u64, ctx: &mut Ctx<'_, M>) {
        self.block = block;
        if self.stall_from.is_none() {
            self.stall_from = Some(from);
            self.stall_cause = block.cause();
        }
        if let Block::Operand { memory: false, ready, .. } = block {
            // Only a known latency: wake exactly when the operand is ready.
            self.wake_at(self.cfg.clock.next_edge(ready), ctx);
        }
        // Otherwise a response, an arrival or link space wakes the core.
    }

    /// Tries to issue the instruction at `pc` at `edge` (cycle number `cycle`).
    fn issue_one(&mut self, edge: Tick, cycle: u64, ctx: &mut Ctx<'_, M>) -> Step {
        let Some(&d) = self.ops.get(self.pc) else {
            return self.fail(FaultKind::RanOffEnd);
        };
        if let Some(block) = self.operand_block(&d, edge) {
            return Step::Blocked(block);
        }
        let ready = self.cfg.clock.edge(cycle.saturating_add(u64::from(d.latency)));
        let mut next_pc = self.pc + 1;
        match d.op {
            Op::Li { rd, imm } => self.set_reg(rd, imm, ready),
            Op::Alu { op, rd, ra, rb } => {
                let Some(v) = op.apply(self.rf.regs[ra as usize], self.rf.regs[rb as usize]) else {
                    return self.fail(FaultKind::DivByZero);
                };
                self.set_reg(rd, v, ready);
            }
            Op::AluI { op, rd, ra, imm } => {
                let Some(v) = op.apply(self.rf.regs[ra as usize], imm) else {
                    return self.fail(FaultKind::DivByZero);
                };
                self.set_reg(rd, v, ready);
            }
            Op::Branch { cond, ra, rb, target } => {
                if cond.holds(self.rf.regs[ra as usize], self.rf.regs[rb as usize]) {
                    next_pc = target as usize;
                }
            }
            Op::Jump { target } => next_pc = target as usize,
            Op::Switch { ra, first, len } => {
                let value = self.rf.regs[ra as usize];
                let target = u32::try_from(value)
                    .ok()
                    .filter(|&i| i < len)
                    .and_then(|i| self.switch_targets.get((first + i) as usize));
                match target {
                    Some(&t) => next_pc = t as usize,
                    None => return self.fail(FaultKind::SwitchOutOfRange { value, targets: len as usize }),
                }
            }
            Op::LoadU32 { rd, base, offset, lookup } => {
                if let Some(block) = self.memory_block() {
                    return Step::Blocked(block);
                }
                let (addr, word) = match self.address(base, offset).and_then(|a| Ok((a, self.read_word(a)?)))
                {
                    Ok(v) => v,
                    Err(kind) => return self.fail(kind),
                };
                self.rf.regs[rd as usize] = i64::from(word);
                self.start_access(Dest::R(rd), addr, 4, edge, lookup);
                self.count_load(lookup, ctx);
                self.pump(ctx);
            }
            Op::VLoad { vd, base, offset, count, lookup } => {
                if let Some(block) = self.memory_block() {
                    return Step::Blocked(block);
                }
                let addr = match self.address(base, offset) {
                    Ok(a) => a,
                    Err(kind) => return self.fail(kind),
                };
                if let Err(kind) = self.load_vector(vd, addr, count) {
                    return self.fail(kind);
                }
                self.start_access(Dest::V(vd), addr, 4 * u64::from(count), edge, lookup);
                self.count_load(lookup, ctx);
                self.pump(ctx);
            }
            Op::VLoadQueue { vd, base, offset, count } => {
                let addr = match self.address(base, offset) {
                    Ok(a) => a,
                    Err(kind) => return self.fail(kind),
                };
                if let Err(kind) = self.load_vector(vd, addr, count) {
                    return self.fail(kind);
                }
                self.set_vready(vd, ready);
                self.counters.queue_loads += 1;
                ctx.stats().inc(self.stats.queue_loads);
            }
            Op::VZero { vd } => {
                let start = vd as usize * self.lanes;
                self.vregs[start..start + self.lanes].fill(0.0);
                self.set_vready(vd, ready);
            }
            Op::VBin { op, vd, va, vb } => {
                let (d0, a0, b0) =
                    (vd as usize * self.lanes, va as usize * self.lanes, vb as usize * self.lanes);
                for i in 0..self.lanes {
                    let (x, y) = (self.vregs[a0 + i], self.vregs[b0 + i]);
                    self.vregs[d0 + i] = match op {
                        VOp::Add => x + y,
                        VOp::Mul => x * y,
                        VOp::Max => x.max(y),
                    };
                }
                self.set_vready(vd, ready);
            }
            Op::VStore { vs, base, offset, count } => {
                if let Some(block) = self.memory_block() {
                    return Step::Blocked(block);
                }
                let bytes = 4 * u64::from(count);
                let addr = match self.address(base, offset) {
                    Ok(a) => a,
                    Err(kind) => return self.fail(kind),
                };
                let inside = addr >= self.output.base
                    && addr.checked_add(bytes).is_some_and(|end| end <= self.output_end)
                    && (addr - self.output.base) & 3 == 0;
                if !inside {
                    return self.fail(FaultKind::StoreOutsideOutput {
                        addr,
                        bytes,
                        base: self.output.base,
                        size: self.output_end - self.output.base,
                    });
                }
                let first = ((addr - self.output.base) / 4) as usize;
                let src = vs as usize * self.lanes;
                self.outputs[first..first + count as usize]
                    .copy_from_slice(&self.vregs[src..src + count as usize]);
                self.start_access(Dest::Store, addr, bytes, edge, false);
                self.counters.stores += 1;
                ctx.stats().inc(self.stats.stores);
                self.pump(ctx);
            }
            Op::PopControl { rd } => {
                let Some(queue) = self.ports.queue else {
                    return self.fail(FaultKind::NoQueue);
                };
                let Some(msg) = ctx.recv(queue) else {
                    return Step::Blocked(Block::Queue);
                };
                let Ok(entry) = <M as Carries<QueueEntry>>::unwrap_as(msg) else {
                    return self.fail(FaultKind::UnexpectedMessage("output queue"));
                };
                self.entry = Some(entry);
                self.next_operand = 0;
                self.set_reg(rd, i64::from(entry.control), ready);
                self.count_pop(ctx);
            }
            Op::PopOperand { rd } => {
                let Some(entry) = self.entry else {
                    return self.fail(FaultKind::NoEntry);
                };
                let index = self.next_operand;
                let len = entry.len.min(MAX_OPERANDS as u8);
                if index >= len {
                    return self.fail(FaultKind::OperandOutOfRange { index, len: entry.len });
                }
                self.next_operand += 1;
                self.set_reg(rd, entry.operands[index as usize] as i64, ready);
                self.count_pop(ctx);
            }
            Op::Halt => {
                self.halted = true;
                let last =
                    |ready: &[Tick]| ready.iter().copied().filter(|&t| t != Tick::MAX).max().unwrap_or(0);
                self.drain_tick = edge.max(last(&self.rf.reg_ready)).max(last(&self.rf.vreg_ready));
            }
        }
        self.pc = next_pc;
        Step::Issued
    }

    /// Adds `cycles` to the counter of the current stall's cause.
    fn add_stall(&mut self, cycles: u64, ctx: &mut Ctx<'_, M>) {
        let c = &mut self.counters;
        let counter = match self.stall_cause {
            0 => &mut c.stall_operand_memory,
            1 => &mut c.stall_operand_latency,
            2 => &mut c.stall_memory_slots,
            _ => &mut c.stall_queue,
        };
        *counter += cycles;
        let id = self.stats.stalls[self.stall_cause.min(3)];
        ctx.stats().add(id, cycles);
    }

    fn count_load(&mut self, lookup: bool, ctx: &mut Ctx<'_, M>) {
        self.counters.loads += 1;
        ctx.stats().inc(self.stats.loads);
        if lookup {
            self.counters.lookups += 1;
            ctx.stats().inc(self.stats.lookups);
        }
    }

    fn count_pop(&mut self, ctx: &mut Ctx<'_, M>) {
        self.counters.queue_pops += 1;
        ctx.stats().inc(self.stats.queue_pops);
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
            Wake::Start => {}
            Wake::Timer(_) => {
                if ctx.now() >= self.timer_at {
                    self.timer_at = Tick::MAX;
                }
            }
            Wake::Arrival(link) if link == self.ports.mem_resp => {
                // Responses are taken even after a halt or a fault, so the memory can finish.
                self.receive_responses(ctx);
                self.pump(ctx);
                self.check_finish(ctx.now());
                // Only a load's result or a freed slot can unblock issue.
                if !matches!(self.block, Block::Operand { memory: true, .. } | Block::Slots | Block::None) {
                    return;
                }
            }
            Wake::Arrival(_) => {
                // A queue entry: it only matters to a core waiting on the queue.
                if !matches!(self.block, Block::Queue | Block::None) {
                    return;
                }
            }
            Wake::Space(_) => {
                self.pump(ctx);
                if !matches!(self.block, Block::Link | Block::None) {
                    return;
                }
            }
        }
        self.run_issue(ctx);
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
        if self.halted {
            return format!(
                "halted; {in_flight} requests in flight, {} waiting to be sent",
                self.send_queue.len()
            );
        }
        let at = format!("pc {} `{}`", self.pc, self.inst_text(self.pc));
        match self.block {
            Block::Operand { reg, memory: true, .. } => format!("{at} waits for {reg} (load in flight)"),
            Block::Operand { reg, ready, .. } => format!("{at} waits for {reg} (ready at tick {ready})"),
            Block::Slots => format!("{at} waits for a free miss slot ({in_flight} requests in flight)"),
            Block::Link => format!("{at} waits for space on the memory request link"),
            Block::Queue => format!("{at} waits on the output queue"),
            Block::None => format!("{at} is next to issue; {in_flight} requests in flight"),
        }
    }
}
