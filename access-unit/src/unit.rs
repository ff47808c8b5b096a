//! The access unit's timing model: a lanes x layers grid of traversal windows, line requests
//! arbitrated outer layer first and round-robin over lanes, and callbacks leaving in program
//! order through a chunked, double-buffered output queue.
//!
//! Contract: the unit runs one [`AuProgram`] from tick 0. It sends cache-line read requests
//! (stream loads) on `mem_req` and cache-line write requests (output-queue chunks) on `queue` when
//! given (the core's L2) or else `mem_req`, never more
//! than `max_outstanding` of them in flight, receives their answers on `mem_resp`, and pushes
//! one [`OutqEntry`] per callback event on `outq`, in program order, a chunk at a time. It
//! sleeps while it waits for memory, for the core to take entries, or for its own flush timer,
//! and is finished once the outermost TU's end event has been written and its chunk handed to
//! the core.
//!
//! Grid: each TU is one layer. Every layer keeps a FIFO window of live iterations; a `single` or
//! `broadcast` layer uses one lane, a `lockstep L` layer spawns L consecutive iterations at once,
//! one per lane (a final partial step spawns only the active lanes: masked lanes issue and emit
//! nothing), and emits a step's events only once every active lane of the step is ready. An
//! iteration is spawned when its lane has room (a step waits while any lane it uses is full,
//! even if masked tails leave other lanes idle) and, below the outermost layer, once the parent
//! iteration's streams that deeper layers read (CSR bounds, indexed positions, operands of their
//! streams) have arrived, not its other streams (a query's head row does not hold back the
//! candidates' fetches; the parent's events still wait for all of them); its streams start in
//! configuration order as their operands become ready, and its loads queue on its lane. The
//! window depth comes from the stream storage: `storage` is the unit's total, each lane gets
//! `storage / lanes` (TMU: 8 x 2 KiB), and every layer of a lane gets the same depth: the
//! lane's storage over the bytes one iteration of every layer holds together (rows, 8 bytes per
//! scalar stream), so wide rows mean a shallower window, as in the TMU where storage sets stream
//! depth (a child's iterations derive from its parent's, so unequal depths would only idle
//! storage). A storage that cannot hold one such iteration is refused at build.
//!
//! Arbitration, per cycle up to `requests_per_cycle` lines: output-queue chunk writes first (the
//! core waits on them), then layers outermost first, round-robin among the lanes of a layer, in
//! order within a lane. Callback events are written in program order, up to
//! `events_per_cycle`.
//!
//! Output queue: control ids (4 bytes each) and operands (8 bytes per scalar, the whole row for a
//! buffer stream) are written into a chunk of `outq_chunk_entries` entries. A chunk is sealed
//! when it is full, when the program's last event is in it, or when it has been left partial for
//! `outq_flush_cycles` cycles (0: as soon as the unit stalls; `u32::MAX`: only at the end), so
//! the core is never starved by a chunk that would not fill. A sealed chunk's bytes are written
//! to memory at `outq_base` (line writes on the memory port, so the queue's traffic is counted
//! where the unit is attached); once they are acknowledged its entries are handed to the core
//! through the `outq` link. A chunk's buffer frees only once the core has popped all of its
//! entries (the link's returned credits tell the unit), so `outq_chunks` counts every chunk: the
//! one it fills, complete ones waiting for their writes or for room in the link, and the one the
//! core is reading. With none free it stalls; with 2, the unit fills one while the core reads the
//! other, and never writes into a chunk the core has not finished. The link is the core's view
//! of the queue: its capacity is the system's `access_unit.outq_entries`, set by the system
//! builder (the shipped DAE preset gives it one chunk).
//!
//! Host cost: a wake repeats spawn, issue, publish and emit passes until none moves. Spawning
//! and emitting are skipped while nothing they read has changed (dirty flags), arbitration scans
//! a per-layer bitmask of lanes with queued loads, and a lockstep step's readiness check resumes
//! where the last one stopped; none of this changes what is simulated.

use crate::isa::{
    AluOp, AuProgram, Bounds, Event, Layer, MAX_LEVELS, MAX_OPERANDS, MAX_STREAMS_PER_TU, Operand, StreamKind,
};
use crate::outq::OutqEntry;
use mem_model::{MemError, MemRequest, MemResponse, MemoryImage};
use sim_core::{
    ByteSize, Carries, Clock, Component, CounterId, Ctx, HistogramId, LinkId, Priority, Stats, StatsError,
    Tick, Wake,
};
use std::collections::VecDeque;
use std::marker::PhantomData;
use std::sync::Arc;
use thiserror::Error;

/// Default address of the output queue's chunks (an otherwise unused region; the image need
/// not map it, since queue writes are timing-only).
pub const OUTQ_BASE: u64 = 0x7f00_0000_0000;

/// Parameters of an access unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AccessUnitConfig {
    /// Clock domain (the core's clock in the TMU).
    pub clock: Clock,
    /// Total stream storage of all lanes (TMU: 8 lanes x 2 KiB); each lane gets
    /// `storage / lanes` ([`AccessUnitConfig::storage_per_lane`]).
    pub storage: ByteSize,
    /// Most memory requests (line reads and queue writes) in flight (TMU: 128).
    pub max_outstanding: u32,
    /// Bytes per memory request (a cache line).
    pub line_bytes: u32,
    /// Line requests issued per cycle.
    pub requests_per_cycle: u32,
    /// Callback events written to the output queue per cycle.
    pub events_per_cycle: u32,
    /// Lanes per layer (TMU: 8); a lockstep layer may use at most this many.
    pub lanes: u32,
    /// Layers (TMU: 4 traversal groups); a program may have at most this many TUs.
    pub layers: u32,
    /// Entries per output-queue chunk.
    pub outq_chunk_entries: u32,
    /// Chunks of the queue in all: the one the unit fills, complete ones not yet handed to the
    /// core, and the one the core is reading (2: it fills one while the core reads the other).
    pub outq_chunks: u32,
    /// Cycles a partial chunk may wait for more entries before it is published anyway (0: as
    /// soon as the unit stalls; `u32::MAX`: only when the program ends).
    pub outq_flush_cycles: u32,
    /// Address of the output queue in memory (chunk writes go there).
    pub outq_base: u64,
}

impl AccessUnitConfig {
    /// The evaluated TMU (REFERENCE.md section 2): 8 lanes, 4 layers, 2 KiB of stream storage per
    /// lane, 128 outstanding requests, 64-byte lines, a double-buffered output queue. Issue width
    /// (4 lines per cycle), one event per cycle, 32-entry chunks and a 64-cycle flush timeout are
    /// our assumptions: the paper does not give them.
    pub fn tmu_like(clock: Clock) -> Self {
        Self {
            clock,
            storage: ByteSize::from_bytes(8 * 2048),
            max_outstanding: 128,
            line_bytes: 64,
            requests_per_cycle: 4,
            events_per_cycle: 1,
            lanes: 8,
            layers: 4,
            outq_chunk_entries: 32,
            outq_chunks: 2,
            outq_flush_cycles: 64,
            outq_base: OUTQ_BASE,
        }
    }

    /// Stream storage of one lane (`storage / lanes`).
    pub fn storage_per_lane(&self) -> u64 {
        self.storage.bytes() / self.lanes.max(1) as u64
    }
}

/// The unit's links.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AuPorts {
    /// Requests to memory.
    pub mem_req: LinkId,
    /// Answers from memory.
    pub mem_resp: LinkId,
    /// Callback events to the core.
    pub outq: LinkId,
    /// Where output-queue chunk writes go, with their answers: the core's private L2, where the
    /// TMU's queue lives (REFERENCE.md section 2), when the unit's reads are served elsewhere
    /// (the LLC). `None`: on `mem_req`, like the reads.
    pub queue: Option<(LinkId, LinkId)>,
}

/// Why the unit stopped early.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum AuFault {
    /// A load touched memory the image does not have.
    #[error("stream s{stream}: {source}")]
    Memory {
        /// The stream whose load faulted.
        stream: u8,
        /// The memory error.
        source: MemError,
    },
    /// Index arithmetic failed (overflow or division by zero).
    #[error("stream s{stream}: {what}")]
    Arithmetic {
        /// The stream.
        stream: u8,
        /// What went wrong.
        what: &'static str,
    },
}

/// Why a unit could not be built.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum AuBuildError {
    /// The program is invalid.
    #[error(transparent)]
    Program(#[from] crate::isa::AuError),
    /// A parameter is zero.
    #[error("access unit: {0} must be above zero")]
    Zero(&'static str),
    /// The program needs more of the grid than the unit has.
    #[error("access unit: the program needs {need} {what}, the unit has {have} (`access_unit.{what}`)")]
    DoesNotFit {
        /// What is short (layers, lanes).
        what: &'static str,
        /// How many the program needs.
        need: u32,
        /// How many the unit has.
        have: u32,
    },
    /// A lane's stream storage cannot hold one iteration of every layer.
    #[error(
        "access unit: each lane's stream storage ({per_lane} B: `access_unit.storage` over {lanes} lanes) cannot \
         hold one iteration of the program's layers ({need} B: rows plus 8 B per scalar stream); \
         `access_unit.storage` needs at least {} B",
        need * u64::from(*lanes)
    )]
    StorageTooSmall {
        /// Bytes of storage per lane.
        per_lane: u64,
        /// The unit's lanes.
        lanes: u32,
        /// Bytes one iteration of every layer holds together.
        need: u64,
    },
    /// A statistic name collides.
    #[error(transparent)]
    Stats(#[from] StatsError),
}

/// What the unit did, for reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AuCounters {
    /// Line read requests sent (stream loads).
    pub requests: u64,
    /// Lookup rows fetched.
    pub lookups: u64,
    /// Callback events written to the output queue.
    pub events: u64,
    /// Operands written to the output queue with those events.
    pub operands: u64,
    /// Most requests (reads and writes) in flight at once.
    pub peak_outstanding: u32,
    /// Tick at which the last chunk was handed to the core (when finished).
    pub finish_tick: Option<Tick>,
    /// Line read requests per layer (TU level), outermost first.
    pub layer_requests: [u64; MAX_LEVELS],
    /// Line write requests of output-queue chunks.
    pub write_requests: u64,
    /// Chunks written and handed to the core.
    pub chunks_written: u64,
    /// Of those, chunks published partial (flush timeout or program end).
    pub chunks_flushed: u64,
    /// Lane slots left idle by masked tails of lockstep steps.
    pub masked_lanes: u64,
    /// Cycles some layer could not spawn an iteration because its stream storage was full
    /// (and neither later cause held: the three stall counts are disjoint).
    pub storage_stall_cycles: u64,
    /// Cycles requests waited because `max_outstanding` were in flight (and the output queue
    /// had room).
    pub outstanding_stall_cycles: u64,
    /// Cycles an event waited because no output-queue chunk was free.
    pub outq_stall_cycles: u64,
    /// Element loads (`ite`, `mem`) served from their stream's line buffer: the line they
    /// needed was the one the stream had just requested.
    pub line_reuses: u64,
}

const NO_PARENT: u64 = u64::MAX;
/// No iteration (an empty sharer chain).
const NO_SEQ: u64 = u64::MAX;
/// Request ids: level (8 bits) | local stream (8 bits) | iteration seq (48 bits); queue writes
/// use this level tag with the chunk's sequence number.
const WRITE_TAG: u64 = 0xff;
const SEQ_MASK: u64 = (1 << 48) - 1;
/// Timer tokens.
const CYCLE_TIMER: u64 = 0;
const FLUSH_TIMER: u64 = 1;

/// One live iteration of a loop level.
#[derive(Debug, Clone)]
struct Iteration {
    seq: u64,
    parent: u64,
    /// Position in the TU's iteration space (the induction value, or the index-list position).
    pos: u64,
    /// Index among its parent's children: sets its lane and lockstep step.
    j: u64,
    lane: u8,
    values: [u64; MAX_STREAMS_PER_TU],
    addr: [u64; MAX_STREAMS_PER_TU],
    first_issue: [Tick; MAX_STREAMS_PER_TU],
    lines_total: [u16; MAX_STREAMS_PER_TU],
    lines_issued: [u16; MAX_STREAMS_PER_TU],
    lines_left: [u16; MAX_STREAMS_PER_TU],
    /// Per stream: the next iteration waiting for the line this one's request brings (a chain
    /// through the window, see [`LineBuffer`]).
    sharer_next: [u64; MAX_STREAMS_PER_TU],
    started: u32,
    ready: u32,
    pre_emitted: u8,
    post_emitted: u8,
    bounds_known: bool,
    child_begin: u64,
    child_next: u64,
    child_end: u64,
    children_done: bool,
}

impl Iteration {
    fn new(seq: u64, parent: u64, pos: u64, j: u64, lane: u8) -> Self {
        Self {
            seq,
            parent,
            pos,
            j,
            lane,
            values: [0; MAX_STREAMS_PER_TU],
            addr: [0; MAX_STREAMS_PER_TU],
            first_issue: [0; MAX_STREAMS_PER_TU],
            lines_total: [0; MAX_STREAMS_PER_TU],
            lines_issued: [0; MAX_STREAMS_PER_TU],
            lines_left: [0; MAX_STREAMS_PER_TU],
            sharer_next: [NO_SEQ; MAX_STREAMS_PER_TU],
            started: 0,
            ready: 0,
            pre_emitted: 0,
            post_emitted: 0,
            bounds_known: false,
            child_begin: 0,
            child_next: 0,
            child_end: 0,
            children_done: false,
        }
    }
}

/// The last line an element stream (`ite`, `mem`) requested: a later element of the same
/// stream in the same line takes its value from here instead of requesting the line again, as
/// a stream unit reading consecutive 4-byte elements fetches each line once.
#[derive(Debug, Clone, Copy)]
struct LineBuffer {
    /// Line address (`u64::MAX`: empty).
    line: u64,
    /// The iteration whose request brings the line.
    owner: u64,
    /// Whether the line has arrived.
    arrived: bool,
    /// The last iteration to join the owner's chain of sharers (`NO_SEQ`: none yet); only the
    /// current line takes new sharers, so one tail per stream suffices.
    tail: u64,
}

impl LineBuffer {
    const EMPTY: LineBuffer = LineBuffer { line: u64::MAX, owner: NO_SEQ, arrived: false, tail: NO_SEQ };
}

/// One layer: its streams, its window of live iterations and its per-lane issue queues.
struct Level {
    /// Per stream: the line it last requested (element streams only).
    line_buffers: [LineBuffer; MAX_STREAMS_PER_TU],
    /// Global ids of this level's streams, in configuration order.
    streams: Vec<u8>,
    all_ready: u32,
    /// This level's streams that deeper levels read (their bounds or their streams' operands):
    /// an iteration's children are spawned once these have arrived, not all of its streams,
    /// so a row the children never read does not hold back their fetches.
    needed: u32,
    /// Lanes one step occupies (1 unless lockstep).
    lanes: u32,
    lockstep: bool,
    /// Base of the index list of an `indexed` TU (its `ite` streams load from it).
    indexed_base: Option<u64>,
    /// Iterations one lane holds at most (its share of the storage; the window holds `depth`
    /// per lane in all).
    depth: u32,
    /// Per lane: live iterations in the window. Masked tails leave lanes idle, so a window
    /// below its total can still have a full lane: a step waits while any of its lanes is full.
    lane_live: Vec<u32>,
    window: VecDeque<Iteration>,
    head_seq: u64,
    next_seq: u64,
    /// Per lane: loads waiting to issue lines, (iteration seq, local stream), in order.
    issue: Vec<VecDeque<(u64, u8)>>,
    /// Bit per lane whose `issue` queue is non-empty (at most 64 lanes), so arbitration finds
    /// the next lane with a bit scan instead of visiting every queue.
    pending: u64,
    /// Lane that gets the next turn (round-robin).
    rr: usize,
    /// The head's lockstep step is known ready below this seq (readiness only grows, so a
    /// check resumes where the last one stopped).
    step_checked: u64,
    /// Callbacks emitted after an iteration becomes ready: iter of this TU, begin of the child.
    pre: Vec<usize>,
    /// Callbacks emitted after an iteration's children: end of the child TU.
    post: Vec<usize>,
    /// Outermost level: next position; inner levels: parent iteration being expanded.
    gen_cursor: u64,
}

impl Level {
    /// Whether a step of `n` iterations from child index `j0` finds room on each of its lanes.
    fn step_fits(&self, j0: u64, n: u64) -> bool {
        let lanes = self.lanes as u64;
        (0..n).all(|i| self.lane_live[((j0 + i) % lanes) as usize] < self.depth)
    }

    /// Drops the window's head iteration, freeing its lane's storage.
    fn retire_head(&mut self) {
        if let Some(it) = self.window.pop_front() {
            self.lane_live[it.lane as usize] -= 1;
            self.head_seq += 1;
        }
    }
}

/// One output-queue chunk: entries written by the unit, then its bytes written to memory, then
/// its entries handed to the core, which pops them.
struct Chunk {
    seq: u64,
    entries: Vec<OutqEntry>,
    data_bytes: u64,
    sealed: bool,
    lines: u32,
    issued: u32,
    acked: u32,
    sent: usize,
    /// Entries handed to the core (over all chunks) once this chunk's last one was: the core
    /// has consumed the chunk, and its slot is free, once it has popped that many.
    handed_end: Option<u64>,
}

/// Statistic ids.
struct AuStats {
    requests: CounterId,
    lookups: CounterId,
    events: CounterId,
    operands: CounterId,
    write_requests: CounterId,
    chunks: CounterId,
    /// Most requests in flight at once, added when the unit finishes.
    peak_outstanding: CounterId,
    layer_requests: Vec<CounterId>,
    lookup_latency: HistogramId,
}

/// The access unit (see the module docs).
pub struct AccessUnit<M> {
    name: String,
    cfg: AccessUnitConfig,
    program: AuProgram,
    image: Arc<MemoryImage>,
    ports: AuPorts,
    levels: Vec<Level>,
    /// (level, local index) of each global stream.
    place: Vec<(u8, u8)>,
    root_begin: u64,
    root_end: u64,
    root_pre: Vec<usize>,
    root_post: Vec<usize>,
    root_pre_emitted: usize,
    root_post_emitted: usize,
    /// Data-FIFO bytes each callback writes.
    cb_bytes: Vec<u64>,
    chunks: VecDeque<Chunk>,
    next_chunk: u64,
    /// Entries handed to the core through `outq` so far.
    handed: u64,
    ctrl_stride: u64,
    data_stride: u64,
    /// Tick of the last entry written into the partial chunk.
    last_touch: Tick,
    outstanding: u32,
    cycle: u64,
    issued_this_cycle: u32,
    emitted_this_cycle: u32,
    timer_at: Option<Tick>,
    flush_at: Option<Tick>,
    /// The outermost end event has been written.
    emitted_all: bool,
    finished: bool,
    fault: Option<AuFault>,
    /// Found in the last pass: a layer full with more to spawn; an event with no free chunk.
    storage_blocked: bool,
    outq_blocked: bool,
    /// Something `generate` / `emit_one` read has changed since they last ran to a standstill
    /// (readiness, windows, chunks, the cycle): unset, a pass would find the same result, so
    /// it is skipped and the blocked flags above keep their values.
    gen_dirty: bool,
    emit_dirty: bool,
    /// The last emit pass stopped on the per-cycle event budget: a new cycle may unblock it.
    emit_budget_hit: bool,
    /// Lines of sealed chunks not yet issued (0: the write loop has nothing to look at).
    write_lines: u64,
    /// Start of the open stall interval per cause: storage, outstanding limit, output queue.
    stall_since: [Option<Tick>; 3],
    counters: AuCounters,
    stats: AuStats,
    _msg: PhantomData<fn() -> M>,
}

/// What one attempt to emit achieved.
enum Emit {
    Sent,
    Popped,
    Blocked,
}

fn round_up(bytes: u64, line: u64) -> u64 {
    bytes.div_ceil(line).saturating_mul(line)
}

impl<M> AccessUnit<M> {
    /// A unit named `name` that will run `program` against `image`.
    pub fn new(
        name: &str,
        cfg: AccessUnitConfig,
        program: AuProgram,
        image: Arc<MemoryImage>,
        ports: AuPorts,
        stats: &mut Stats,
    ) -> Result<Self, AuBuildError> {
        program.verify()?;
        for (v, what) in [
            (cfg.max_outstanding, "max_outstanding"),
            (cfg.line_bytes, "line size"),
            (cfg.requests_per_cycle, "requests per cycle"),
            (cfg.events_per_cycle, "events per cycle"),
            (cfg.lanes, "lanes"),
            (cfg.layers, "layers"),
            (cfg.outq_chunk_entries, "outq_chunk_entries"),
            (cfg.outq_chunks, "outq_chunks"),
        ] {
            if v == 0 {
                return Err(AuBuildError::Zero(what));
            }
        }
        let nlev = program.tus.len();
        if nlev as u32 > cfg.layers {
            return Err(AuBuildError::DoesNotFit { what: "layers", need: nlev as u32, have: cfg.layers });
        }
        if program.max_lanes() > cfg.lanes {
            return Err(AuBuildError::DoesNotFit {
                what: "lanes",
                need: program.max_lanes(),
                have: cfg.lanes,
            });
        }
        let line = cfg.line_bytes as u64;
        // Every layer of a lane gets the same depth: a child's iterations derive from its
        // parent's, so a deeper parent than child (or the reverse) only idles storage.
        let lane_iteration = program.lane_iteration_bytes();
        let depth = (cfg.storage_per_lane() / lane_iteration).min(1 << 16) as usize;
        if depth == 0 {
            return Err(AuBuildError::StorageTooSmall {
                per_lane: cfg.storage_per_lane(),
                lanes: cfg.lanes,
                need: lane_iteration,
            });
        }
        let mut place = vec![(0u8, 0u8); program.streams.len()];
        let mut levels = Vec::with_capacity(nlev);
        for l in 0..nlev {
            let tu = program.tus[l];
            let streams: Vec<u8> = program
                .streams
                .iter()
                .enumerate()
                .filter(|(_, s)| s.tu.0 as usize == l)
                .map(|(i, _)| i as u8)
                .collect();
            for (k, &g) in streams.iter().enumerate() {
                place[g as usize] = (l as u8, k as u8);
            }
            let lanes = tu.layer.lanes();
            // Each lane holds its own iterations (`lane_live` bounds each by `depth`): with a
            // depth of one, a lane fetches its next iteration only once the current one's events
            // are in the output queue.
            let capacity = depth * lanes as usize;
            let cbs = |tu: usize, ev: Event| -> Vec<usize> {
                program
                    .callbacks
                    .iter()
                    .enumerate()
                    .filter(|(_, c)| c.tu.0 as usize == tu && c.event == ev)
                    .map(|(i, _)| i)
                    .collect()
            };
            let mut pre = cbs(l, Event::Iter);
            pre.extend(cbs(l + 1, Event::Begin));
            levels.push(Level {
                line_buffers: [LineBuffer::EMPTY; MAX_STREAMS_PER_TU],
                all_ready: if streams.len() >= 32 { u32::MAX } else { (1u32 << streams.len()) - 1 },
                needed: 0,
                streams,
                lanes,
                lockstep: matches!(tu.layer, Layer::Lockstep { .. }),
                indexed_base: match tu.bounds {
                    Bounds::Indexed { base, .. } => Some(base),
                    _ => None,
                },
                depth: depth as u32,
                lane_live: vec![0; lanes as usize],
                window: VecDeque::with_capacity(capacity),
                head_seq: 0,
                next_seq: 0,
                issue: vec![VecDeque::with_capacity(depth * 2); lanes as usize],
                pending: 0,
                rr: 0,
                step_checked: 0,
                pre,
                post: cbs(l + 1, Event::End),
                gen_cursor: 0,
            });
        }
        for (l, tu) in program.tus.iter().enumerate() {
            let bounds = match tu.bounds {
                Bounds::Dense { .. } => [None, None],
                Bounds::Range { begin, end } => [Some(begin), Some(end)],
                Bounds::Indexed { from, count, .. } => [from.stream(), count.stream()],
            };
            let operands = program
                .streams_of(crate::isa::TuId(l as u8))
                .flat_map(|(_, s)| s.kind.operands().filter_map(Operand::stream));
            for s in bounds.into_iter().flatten().chain(operands) {
                let (lv, k) = place[s.0 as usize];
                if (lv as usize) < l {
                    levels[lv as usize].needed |= 1 << k;
                }
            }
        }
        // The outermost TU's bounds are constants (the verifier allows no streams there).
        let konst = |o: Operand| match o {
            Operand::Const(c) => c.max(0) as u64,
            Operand::Stream(_) => 0,
        };
        let (root_begin, root_end) = match program.tus[0].bounds {
            Bounds::Dense { begin, end } => (begin, end),
            Bounds::Indexed { from, count, .. } => (konst(from), konst(from).saturating_add(konst(count))),
            Bounds::Range { .. } => (0, 0),
        };
        levels[0].gen_cursor = root_begin;
        let root = |ev: Event| -> Vec<usize> {
            program
                .callbacks
                .iter()
                .enumerate()
                .filter(|(_, c)| c.tu.0 == 0 && c.event == ev)
                .map(|(i, _)| i)
                .collect()
        };
        let (root_pre, root_post) = (root(Event::Begin), root(Event::End));
        // The data FIFO holds 8 bytes per scalar operand and the whole row of a buffer stream.
        let cb_bytes: Vec<u64> = program
            .callbacks
            .iter()
            .map(|c| {
                c.operands
                    .iter()
                    .map(|s| match program.streams[s.0 as usize].kind {
                        StreamKind::Row { bytes, .. } => bytes as u64,
                        _ => 8,
                    })
                    .sum()
            })
            .collect();
        let entries = cfg.outq_chunk_entries as u64;
        let ctrl_stride = round_up(entries * 4, line);
        let data_stride = round_up(entries.saturating_mul(cb_bytes.iter().copied().max().unwrap_or(0)), line);
        let stats = AuStats {
            requests: stats.counter_in(name, "requests")?,
            lookups: stats.counter_in(name, "lookups")?,
            events: stats.counter_in(name, "events")?,
            operands: stats.counter_in(name, "operands")?,
            write_requests: stats.counter_in(name, "write_requests")?,
            chunks: stats.counter_in(name, "chunks")?,
            peak_outstanding: stats.peak_in(name, "peak_outstanding")?,
            layer_requests: (0..nlev)
                .map(|l| stats.counter_in(name, &format!("layer{l}.requests")))
                .collect::<Result<_, _>>()?,
            lookup_latency: stats.histogram_in(name, "lookup_latency", 1_000_000_000, 3)?,
        };
        Ok(Self {
            name: name.to_string(),
            cfg,
            program,
            image,
            ports,
            levels,
            place,
            root_begin,
            root_end,
            root_pre,
            root_post,
            root_pre_emitted: 0,
            root_post_emitted: 0,
            cb_bytes,
            chunks: VecDeque::with_capacity(cfg.outq_chunks.min(64) as usize),
            next_chunk: 0,
            handed: 0,
            ctrl_stride,
            data_stride,
            last_touch: 0,
            outstanding: 0,
            cycle: u64::MAX,
            issued_this_cycle: 0,
            emitted_this_cycle: 0,
            timer_at: None,
            flush_at: None,
            emitted_all: false,
            finished: false,
            fault: None,
            storage_blocked: false,
            outq_blocked: false,
            gen_dirty: true,
            emit_dirty: true,
            emit_budget_hit: false,
            write_lines: 0,
            stall_since: [None; 3],
            counters: AuCounters::default(),
            stats,
            _msg: PhantomData,
        })
    }

    /// Whether the outermost end event has been handed to the core.
    pub fn finished(&self) -> bool {
        self.finished
    }

    /// Why the unit stopped early, if it did.
    pub fn fault(&self) -> Option<&AuFault> {
        self.fault.as_ref()
    }

    /// What the unit did.
    pub fn counters(&self) -> AuCounters {
        self.counters
    }

    /// Value of an operand for iteration `idx` of level `l`: its own streams or its ancestors'.
    fn operand(&self, l: usize, idx: usize, o: Operand) -> Option<u64> {
        match o {
            Operand::Const(c) => Some(c as u64),
            Operand::Stream(s) => {
                let (lv, k) = self.place[s.0 as usize];
                let (lv, k) = (lv as usize, k as usize);
                let mut it = &self.levels[l].window[idx];
                let mut at = l;
                while at > lv {
                    let parent = &self.levels[at - 1];
                    it = &parent.window[(it.parent - parent.head_seq) as usize];
                    at -= 1;
                }
                (it.ready & (1 << k) != 0).then_some(it.values[k])
            }
        }
    }

    /// Value of stream `s` on the current program-order path (the window heads).
    fn head_value(&self, s: u8) -> u64 {
        let (lv, k) = self.place[s as usize];
        self.levels[lv as usize].window.front().map_or(0, |it| it.values[k as usize])
    }

    fn spawn(&mut self, l: usize, parent: u64, pos: u64, j: u64) {
        let lev = &mut self.levels[l];
        let lane = (j % lev.lanes as u64) as u8;
        lev.lane_live[lane as usize] += 1;
        let mut it = Iteration::new(lev.next_seq, parent, pos, j, lane);
        lev.next_seq += 1;
        for (k, &g) in lev.streams.iter().enumerate() {
            // An indexed TU's induction value is a load: `evaluate` issues it.
            if let (StreamKind::Ite, None) = (self.program.streams[g as usize].kind, lev.indexed_base) {
                it.values[k] = pos;
                it.ready |= 1 << k;
                it.started |= 1 << k;
            }
        }
        lev.window.push_back(it);
        let idx = lev.window.len() - 1;
        self.evaluate(l, idx);
    }

    /// Starts every stream of iteration `idx` of level `l` whose operands are ready.
    fn evaluate(&mut self, l: usize, idx: usize) {
        // Called for every new iteration and every finished load: readiness may have changed.
        self.gen_dirty = true;
        self.emit_dirty = true;
        let line = self.cfg.line_bytes as u64;
        for k in 0..self.levels[l].streams.len() {
            let it = &self.levels[l].window[idx];
            if it.started & (1 << k) != 0 {
                continue;
            }
            let g = self.levels[l].streams[k];
            let kind = self.program.streams[g as usize].kind;
            let computed = match kind {
                StreamKind::Ite => {
                    let Some(base) = self.levels[l].indexed_base else { continue };
                    // Indexed traversal: the index list is read like a `mem.u32` stream.
                    (Operand::Const(it.pos as i64), base, 4, 4u64)
                }
                StreamKind::Alu { op, a, b } => {
                    let (Some(a), Some(b)) = (self.operand(l, idx, a), self.operand(l, idx, b)) else {
                        continue;
                    };
                    let (a, b) = (a as i64, b as i64);
                    let v = match op {
                        AluOp::Add => a.checked_add(b),
                        AluOp::Sub => a.checked_sub(b),
                        AluOp::Mul => a.checked_mul(b),
                        AluOp::Div => a.checked_div(b),
                        AluOp::Rem => a.checked_rem(b),
                    };
                    let Some(v) = v else {
                        self.fault =
                            Some(AuFault::Arithmetic { stream: g, what: "overflow or division by zero" });
                        return;
                    };
                    let it = &mut self.levels[l].window[idx];
                    it.values[k] = v as u64;
                    it.ready |= 1 << k;
                    it.started |= 1 << k;
                    continue;
                }
                StreamKind::Fwd { src } => {
                    let Some(v) = self.operand(l, idx, src) else { continue };
                    let it = &mut self.levels[l].window[idx];
                    it.values[k] = v;
                    it.ready |= 1 << k;
                    it.started |= 1 << k;
                    continue;
                }
                StreamKind::Load { base, index, scale } => (index, base, scale, 4u64),
                StreamKind::Row { base, index, scale, bytes, .. } => (index, base, scale, bytes as u64),
            };
            let (index, base, scale, bytes) = computed;
            let Some(i) = self.operand(l, idx, index) else { continue };
            let Some(addr) = i.checked_mul(scale).and_then(|o| o.checked_add(base)) else {
                self.fault = Some(AuFault::Arithmetic { stream: g, what: "address overflow" });
                return;
            };
            let value = match kind {
                StreamKind::Row { .. } => match self.image.region_of(addr, bytes) {
                    // A row yields its address; check it is mapped so a bad index faults here.
                    Ok(_) => addr,
                    Err(source) => {
                        self.fault = Some(AuFault::Memory { stream: g, source });
                        return;
                    }
                },
                _ => match self.image.read_u32(addr) {
                    Ok(v) => v as u64,
                    Err(source) => {
                        self.fault = Some(AuFault::Memory { stream: g, source });
                        return;
                    }
                },
            };
            let Some(last) = addr.checked_add(bytes - 1) else {
                self.fault = Some(AuFault::Arithmetic { stream: g, what: "address overflow" });
                return;
            };
            let lines = (last / line - addr / line + 1).min(u16::MAX as u64) as u16;
            let lev = &mut self.levels[l];
            let it = &mut lev.window[idx];
            let (seq, lane) = (it.seq, it.lane as usize);
            it.values[k] = value;
            it.addr[k] = addr;
            it.lines_total[k] = lines;
            it.lines_left[k] = lines;
            it.started |= 1 << k;
            let element = !matches!(kind, StreamKind::Row { .. }) && lines == 1;
            let buffer = lev.line_buffers[k];
            if element && buffer.line == addr / line {
                self.counters.line_reuses += 1;
                if buffer.arrived {
                    it.lines_left[k] = 0;
                    it.ready |= 1 << k;
                } else {
                    // Join the owner's chain of sharers: its response readies them all.
                    let last = if buffer.tail == NO_SEQ { buffer.owner } else { buffer.tail };
                    if let Some(t) =
                        last.checked_sub(lev.head_seq).and_then(|i| lev.window.get_mut(i as usize))
                    {
                        t.sharer_next[k] = seq;
                        lev.line_buffers[k].tail = seq;
                    }
                }
                continue;
            }
            if element {
                lev.line_buffers[k] =
                    LineBuffer { line: addr / line, owner: seq, arrived: false, tail: NO_SEQ };
            }
            lev.issue[lane].push_back((seq, k as u8));
            lev.pending |= 1 << lane;
        }
    }

    /// Spawns `n` iterations (one step) of level `l` at positions `first..first + n`.
    fn spawn_step(&mut self, l: usize, parent: u64, first: u64, j0: u64, n: u64) {
        for i in 0..n {
            self.spawn(l, parent, first + i, j0 + i);
            if self.fault.is_some() {
                return;
            }
        }
        // A partial lockstep step leaves its other lanes idle (masked).
        self.counters.masked_lanes += self.levels[l].lanes as u64 - n;
    }

    /// Spawns steps while windows have room and parents' bounds are known.
    fn generate(&mut self) -> bool {
        if !self.gen_dirty {
            return false;
        }
        self.gen_dirty = false;
        let mut any = false;
        self.storage_blocked = false;
        for l in 0..self.levels.len() {
            loop {
                if self.fault.is_some() {
                    return any;
                }
                let lanes = self.levels[l].lanes as u64;
                if l == 0 {
                    let next = self.levels[0].gen_cursor;
                    if next >= self.root_end {
                        break;
                    }
                    let n = (self.root_end - next).min(lanes);
                    if !self.levels[0].step_fits(next - self.root_begin, n) {
                        self.storage_blocked = true;
                        break;
                    }
                    self.levels[0].gen_cursor += n;
                    self.spawn_step(0, NO_PARENT, next, next - self.root_begin, n);
                    any = true;
                    continue;
                }
                let pseq = self.levels[l].gen_cursor;
                let plev = &self.levels[l - 1];
                if pseq >= plev.next_seq {
                    break;
                }
                let pidx = (pseq - plev.head_seq) as usize;
                if plev.window[pidx].ready & plev.needed != plev.needed {
                    break;
                }
                if !plev.window[pidx].bounds_known {
                    let p = &plev.window[pidx];
                    let bounds = match self.program.tus[l].bounds {
                        Bounds::Dense { begin, end } => Some((begin, end)),
                        Bounds::Range { begin, end } => Some((
                            p.values[self.place[begin.0 as usize].1 as usize],
                            p.values[self.place[end.0 as usize].1 as usize],
                        )),
                        Bounds::Indexed { from, count, .. } => {
                            let b = self.operand(l - 1, pidx, from).unwrap_or(0);
                            let c = self.operand(l - 1, pidx, count).unwrap_or(0);
                            b.checked_add(c).map(|e| (b, e))
                        }
                    };
                    let Some((b, e)) = bounds else {
                        self.fault = Some(AuFault::Arithmetic {
                            stream: u8::MAX,
                            what: "indexed traversal position overflow",
                        });
                        return any;
                    };
                    let p = &mut self.levels[l - 1].window[pidx];
                    p.bounds_known = true;
                    p.child_begin = b;
                    p.child_next = b;
                    p.child_end = e.max(b);
                }
                let p = &self.levels[l - 1].window[pidx];
                let (next, end, begin) = (p.child_next, p.child_end, p.child_begin);
                if next < end {
                    let n = (end - next).min(lanes);
                    // Per lane, not the window's total: a masked tail's idle lanes do not lend
                    // their storage to the next parent's step, whose first lanes may be full.
                    if !self.levels[l].step_fits(next - begin, n) {
                        self.storage_blocked = true;
                        break;
                    }
                    self.levels[l - 1].window[pidx].child_next += n;
                    self.spawn_step(l, pseq, next, next - begin, n);
                } else {
                    self.levels[l - 1].window[pidx].children_done = true;
                    self.emit_dirty = true;
                    self.levels[l].gen_cursor += 1;
                }
                any = true;
            }
        }
        any
    }

    fn outermost_done(&self) -> bool {
        self.levels[0].gen_cursor >= self.root_end
    }

    /// Whether every lane of the lockstep step at the head of level `l` is ready (the step
    /// advances together; masked lanes were never spawned, so they do not hold it back).
    fn step_ready(&mut self, l: usize) -> bool {
        let lev = &mut self.levels[l];
        let Some(h) = lev.window.front() else { return false };
        let (lanes, parent) = (lev.lanes as u64, h.parent);
        let step = h.j / lanes;
        // Members before `step_checked` were seen ready (a step is spawned whole, and members
        // stay ready), so only the rest need a look.
        let mut seq = lev.step_checked.max(h.seq);
        while let Some(it) = lev.window.get((seq - lev.head_seq) as usize) {
            if it.parent != parent || it.j / lanes != step {
                break;
            }
            if it.ready != lev.all_ready {
                lev.step_checked = seq;
                return false;
            }
            seq += 1;
        }
        lev.step_checked = seq;
        true
    }

    /// Whether some line (a load or a queue write) waits to issue.
    fn issue_pending(&self) -> bool {
        self.write_lines > 0 || self.levels.iter().any(|l| l.pending != 0)
    }

    /// Seals the partial chunk being filled; `flush` marks one sealed before it was full.
    fn seal_back(&mut self, flush: bool) {
        let line = self.cfg.line_bytes as u64;
        let Some(c) = self.chunks.back_mut() else { return };
        if c.sealed || c.entries.is_empty() {
            return;
        }
        c.sealed = true;
        let ctrl = (c.entries.len() as u64 * 4).div_ceil(line);
        c.lines = u32::try_from(ctrl + c.data_bytes.div_ceil(line)).unwrap_or(u32::MAX);
        self.write_lines += c.lines as u64;
        // A sealed back chunk means the next event needs a free one.
        self.emit_dirty = true;
        if flush {
            self.counters.chunks_flushed += 1;
        }
    }

    /// Address of line `i` of chunk `c`: its control lines, then its data lines.
    fn chunk_line_addr(&self, c: &Chunk, i: u32) -> u64 {
        let line = self.cfg.line_bytes as u64;
        let slot = c.seq % self.cfg.outq_chunks as u64;
        let ctrl = (c.entries.len() as u64 * 4).div_ceil(line);
        let base = self.cfg.outq_base;
        if (i as u64) < ctrl {
            base.wrapping_add(slot.wrapping_mul(self.ctrl_stride)).wrapping_add(i as u64 * line)
        } else {
            let data = base.wrapping_add((self.cfg.outq_chunks as u64).wrapping_mul(self.ctrl_stride));
            data.wrapping_add(slot.wrapping_mul(self.data_stride)).wrapping_add((i as u64 - ctrl) * line)
        }
    }
}

impl<M> AccessUnit<M>
where
    M: Carries<MemRequest> + Carries<MemResponse> + Carries<OutqEntry>,
{
    fn can_issue(&self) -> bool {
        self.issued_this_cycle < self.cfg.requests_per_cycle && self.outstanding < self.cfg.max_outstanding
    }

    fn count_request(&mut self) {
        self.outstanding += 1;
        self.counters.peak_outstanding = self.counters.peak_outstanding.max(self.outstanding);
        self.issued_this_cycle += 1;
    }

    fn issue(&mut self, ctx: &mut Ctx<'_, M>) -> bool {
        let line = self.cfg.line_bytes as u64;
        let mut any = false;
        // Queue writes first: the core waits on them.
        let chunks = if self.write_lines > 0 { self.chunks.len() } else { 0 };
        for ci in 0..chunks {
            while self.can_issue() {
                let c = &self.chunks[ci];
                if !c.sealed || c.issued >= c.lines {
                    break;
                }
                let addr = self.chunk_line_addr(c, c.issued);
                let id = (WRITE_TAG << 56) | (c.seq & SEQ_MASK);
                let req = MemRequest::write(id, addr, self.cfg.line_bytes, ctx.now());
                let link = self.ports.queue.map_or(self.ports.mem_req, |(req, _)| req);
                if ctx.send(link, M::wrap(req)).is_err() {
                    return any;
                }
                self.chunks[ci].issued += 1;
                self.write_lines -= 1;
                self.count_request();
                self.counters.write_requests += 1;
                let id = self.stats.write_requests;
                ctx.stats().inc(id);
                any = true;
            }
        }
        // Then layers outermost first, round-robin over lanes, in order within a lane.
        for l in 0..self.levels.len() {
            while self.can_issue() {
                let lev = &mut self.levels[l];
                if lev.pending == 0 {
                    break;
                }
                // Round-robin: the first lane with work at or after `rr`, else the first one.
                let later = lev.pending & (u64::MAX << lev.rr);
                let lane = if later != 0 { later } else { lev.pending }.trailing_zeros() as usize;
                let Some(&(seq, k)) = lev.issue[lane].front() else { break };
                let Some(idx) =
                    seq.checked_sub(lev.head_seq).map(|i| i as usize).filter(|&i| i < lev.window.len())
                else {
                    lev.issue[lane].pop_front();
                    if lev.issue[lane].is_empty() {
                        lev.pending &= !(1 << lane);
                    }
                    continue;
                };
                let it = &mut lev.window[idx];
                let k = k as usize;
                let addr = (it.addr[k] / line + it.lines_issued[k] as u64) * line;
                let id = ((l as u64) << 56) | ((k as u64) << 48) | (seq & SEQ_MASK);
                let mut req = MemRequest::read(id, addr, self.cfg.line_bytes, ctx.now());
                req.non_temporal = matches!(
                    self.program.streams[lev.streams[k] as usize].kind,
                    StreamKind::Row { non_temporal: true, .. }
                );
                if ctx.send(self.ports.mem_req, M::wrap(req)).is_err() {
                    return any;
                }
                if it.lines_issued[k] == 0 {
                    it.first_issue[k] = ctx.now();
                }
                it.lines_issued[k] += 1;
                // Drop a fully issued load at once: its iteration may retire before we return.
                if it.lines_issued[k] >= it.lines_total[k] {
                    lev.issue[lane].pop_front();
                    if lev.issue[lane].is_empty() {
                        lev.pending &= !(1 << lane);
                    }
                }
                lev.rr = if lane + 1 == lev.issue.len() { 0 } else { lane + 1 };
                self.count_request();
                self.counters.requests += 1;
                self.counters.layer_requests[l] += 1;
                let (a, b) = (self.stats.requests, self.stats.layer_requests[l]);
                let s = ctx.stats();
                s.inc(a);
                s.inc(b);
                any = true;
            }
        }
        any
    }

    fn complete(&mut self, resp: MemResponse, ctx: &mut Ctx<'_, M>) {
        let l = (resp.id >> 56) as usize;
        let k = ((resp.id >> 48) & 0xff) as usize;
        let seq = resp.id & SEQ_MASK;
        self.outstanding = self.outstanding.saturating_sub(1);
        if l as u64 == WRITE_TAG {
            let front = self.chunks.front().map_or(0, |c| c.seq);
            if let Some(c) = seq.checked_sub(front).and_then(|i| self.chunks.get_mut(i as usize)) {
                c.acked += 1;
            }
            ctx.progress();
            return;
        }
        let Some(lev) = self.levels.get_mut(l) else { return };
        let Some(idx) = seq.checked_sub(lev.head_seq).map(|i| i as usize).filter(|&i| i < lev.window.len())
        else {
            return;
        };
        let it = &mut lev.window[idx];
        it.lines_left[k] = it.lines_left[k].saturating_sub(1);
        if it.lines_left[k] > 0 {
            return;
        }
        it.ready |= 1 << k;
        let first = it.first_issue[k];
        let sharer = it.sharer_next[k];
        let g = lev.streams[k] as usize;
        if lev.line_buffers[k].owner == seq {
            lev.line_buffers[k].arrived = true;
        }
        if let StreamKind::Row { lookup: true, .. } = self.program.streams[g].kind {
            self.counters.lookups += 1;
            let (c, h, now) = (self.stats.lookups, self.stats.lookup_latency, ctx.now());
            let s = ctx.stats();
            s.inc(c);
            s.record(h, now - first);
        }
        ctx.progress();
        self.evaluate(l, idx);
        // The iterations that took this line from the stream's buffer while it was on its way
        // (evaluating adds no iteration to the window, so the chain's positions hold).
        let mut next = sharer;
        while self.fault.is_none() {
            let lev = &mut self.levels[l];
            let Some(i) =
                next.checked_sub(lev.head_seq).map(|i| i as usize).filter(|&i| i < lev.window.len())
            else {
                break;
            };
            let s = &mut lev.window[i];
            s.lines_left[k] = 0;
            s.ready |= 1 << k;
            next = s.sharer_next[k];
            self.evaluate(l, i);
        }
    }

    /// Hands complete, written chunks to the core in order, and frees the slots of the chunks
    /// the core has consumed: popped all of, which the link's returned credits tell.
    fn publish(&mut self, ctx: &mut Ctx<'_, M>) -> bool {
        let outq = self.ports.outq;
        let mut any = false;
        let popped = self.handed - ctx.unpopped(outq) as u64;
        while self.chunks.front().and_then(|c| c.handed_end).is_some_and(|end| popped >= end) {
            self.chunks.pop_front();
            self.emit_dirty = true;
            ctx.progress();
            any = true;
        }
        for c in self.chunks.iter_mut() {
            if c.handed_end.is_some() {
                continue;
            }
            if !c.sealed || c.acked < c.lines {
                break;
            }
            while c.sent < c.entries.len() {
                // A refused send registers us for a Wake::Space when the core pops.
                if ctx.send(outq, M::wrap(c.entries[c.sent])).is_err() {
                    return any;
                }
                c.sent += 1;
                self.handed += 1;
                any = true;
            }
            c.handed_end = Some(self.handed);
            self.counters.chunks_written += 1;
            let id = self.stats.chunks;
            ctx.stats().inc(id);
            ctx.progress();
            any = true;
        }
        any
    }

    /// Writes callback `cb`, with operands read from the window heads, into the chunk being
    /// filled; false when the per-cycle budget is spent or no chunk is free.
    fn send_callback(&mut self, cb: usize, ctx: &mut Ctx<'_, M>) -> bool {
        if self.emitted_this_cycle >= self.cfg.events_per_cycle {
            self.emit_budget_hit = true;
            return false;
        }
        let need_new = self.chunks.back().is_none_or(|c| c.sealed);
        if need_new && self.chunks.len() >= self.cfg.outq_chunks as usize {
            self.outq_blocked = true;
            return false;
        }
        let c = &self.program.callbacks[cb];
        let mut entry =
            OutqEntry { control: c.control, operands: [0; MAX_OPERANDS], len: c.operands.len() as u8 };
        for (i, s) in c.operands.iter().enumerate() {
            entry.operands[i] = self.head_value(s.0);
        }
        if need_new {
            let cap = self.cfg.outq_chunk_entries.min(1 << 12) as usize;
            self.chunks.push_back(Chunk {
                seq: self.next_chunk,
                entries: Vec::with_capacity(cap),
                data_bytes: 0,
                sealed: false,
                lines: 0,
                issued: 0,
                acked: 0,
                sent: 0,
                handed_end: None,
            });
            self.next_chunk += 1;
        }
        let bytes = self.cb_bytes[cb];
        let Some(chunk) = self.chunks.back_mut() else { return false };
        let entry_len = entry.len;
        chunk.entries.push(entry);
        chunk.data_bytes += bytes;
        if chunk.entries.len() >= self.cfg.outq_chunk_entries as usize {
            self.seal_back(false);
        }
        self.last_touch = ctx.now();
        self.emitted_this_cycle += 1;
        self.counters.events += 1;
        let id = self.stats.events;
        ctx.stats().inc(id);
        let operands = u64::from(entry_len);
        self.counters.operands += operands;
        let id = self.stats.operands;
        ctx.stats().add(id, operands);
        true
    }

    /// Emits the next callback event in program order, or retires a finished iteration.
    fn emit_one(&mut self, ctx: &mut Ctx<'_, M>) -> Emit {
        if self.emitted_all {
            return Emit::Blocked;
        }
        if self.root_pre_emitted < self.root_pre.len() {
            let cb = self.root_pre[self.root_pre_emitted];
            if !self.send_callback(cb, ctx) {
                return Emit::Blocked;
            }
            self.root_pre_emitted += 1;
            return Emit::Sent;
        }
        let nlev = self.levels.len();
        for l in 0..nlev {
            let parent_seq = if l == 0 {
                NO_PARENT
            } else {
                self.levels[l - 1].window.front().map_or(NO_PARENT, |p| p.seq)
            };
            let head = self.levels[l].window.front();
            let has_child_of_parent = head.is_some_and(|h| l == 0 || h.parent == parent_seq);
            if !has_child_of_parent {
                if l == 0 {
                    if !self.outermost_done() {
                        return Emit::Blocked;
                    }
                    if self.root_post_emitted < self.root_post.len() {
                        let cb = self.root_post[self.root_post_emitted];
                        if !self.send_callback(cb, ctx) {
                            return Emit::Blocked;
                        }
                        self.root_post_emitted += 1;
                        return Emit::Sent;
                    }
                    self.emitted_all = true;
                    ctx.progress();
                    return Emit::Blocked;
                }
                // The parent's queued children are all out: close it once all are generated.
                let p = self.levels[l - 1].window.front().map(|p| (p.children_done, p.post_emitted as usize));
                let Some((true, emitted)) = p else { return Emit::Blocked };
                if let Some(&cb) = self.levels[l - 1].post.get(emitted) {
                    if !self.send_callback(cb, ctx) {
                        return Emit::Blocked;
                    }
                    if let Some(p) = self.levels[l - 1].window.front_mut() {
                        p.post_emitted += 1;
                    }
                    return Emit::Sent;
                }
                self.levels[l - 1].retire_head();
                self.gen_dirty = true;
                return Emit::Popped;
            }
            let Some(h) = self.levels[l].window.front() else { return Emit::Blocked };
            let (ready, pre_emitted) = (h.ready == self.levels[l].all_ready, h.pre_emitted as usize);
            if !ready || (self.levels[l].lockstep && !self.step_ready(l)) {
                return Emit::Blocked;
            }
            if let Some(&cb) = self.levels[l].pre.get(pre_emitted) {
                if !self.send_callback(cb, ctx) {
                    return Emit::Blocked;
                }
                if let Some(h) = self.levels[l].window.front_mut() {
                    h.pre_emitted += 1;
                }
                return Emit::Sent;
            }
            if l + 1 == nlev {
                self.levels[l].retire_head();
                self.gen_dirty = true;
                return Emit::Popped;
            }
        }
        Emit::Blocked
    }

    /// Opens or closes the stall intervals; `active` per cause, in `stall_since` order.
    fn account_stalls(&mut self, now: Tick, active: [bool; 3]) {
        // Nearly every step changes nothing: no interval opens or closes.
        if active == self.stall_since.map(|s| s.is_some()) {
            return;
        }
        for (i, &on) in active.iter().enumerate() {
            match (on, self.stall_since[i]) {
                (true, None) => self.stall_since[i] = Some(now),
                (false, Some(t)) => {
                    let cycles = self.cfg.clock.cycle_at(now) - self.cfg.clock.cycle_at(t);
                    let c = &mut self.counters;
                    *[
                        &mut c.storage_stall_cycles,
                        &mut c.outstanding_stall_cycles,
                        &mut c.outq_stall_cycles,
                    ][i] += cycles;
                    self.stall_since[i] = None;
                }
                _ => {}
            }
        }
    }

    fn step(&mut self, ctx: &mut Ctx<'_, M>) {
        let cycle = self.cfg.clock.cycle_at(ctx.now());
        if cycle != self.cycle {
            self.cycle = cycle;
            self.issued_this_cycle = 0;
            self.emitted_this_cycle = 0;
            // The budget is all a new cycle changes for `emit_one`.
            if self.emit_budget_hit {
                self.emit_budget_hit = false;
                self.emit_dirty = true;
            }
        }
        while let Some(msg) = ctx.recv(self.ports.mem_resp) {
            if let Ok(resp) = Carries::<MemResponse>::unwrap_as(msg) {
                self.complete(resp, ctx);
            }
        }
        if let Some((_, queue_resp)) = self.ports.queue {
            while let Some(msg) = ctx.recv(queue_resp) {
                if let Ok(resp) = Carries::<MemResponse>::unwrap_as(msg) {
                    self.complete(resp, ctx);
                }
            }
        }
        loop {
            if self.fault.is_some() || self.finished {
                return;
            }
            loop {
                let mut moved = self.generate();
                moved |= self.issue(ctx);
                moved |= self.publish(ctx);
                if self.emit_dirty {
                    self.emit_dirty = false;
                    self.outq_blocked = false;
                    while matches!(self.emit_one(ctx), Emit::Sent | Emit::Popped) {
                        moved = true;
                    }
                }
                if !moved || self.fault.is_some() {
                    break;
                }
            }
            // Flush rule: the last chunk goes out at the end; a partial chunk that has waited
            // `outq_flush_cycles` for more entries goes out too, so the core is not starved.
            let partial = self.chunks.back().is_some_and(|c| !c.sealed && !c.entries.is_empty());
            let emit_capped = self.emitted_this_cycle >= self.cfg.events_per_cycle;
            if partial && self.emitted_all {
                self.seal_back(true);
                continue;
            }
            if partial && !emit_capped && self.cfg.outq_flush_cycles != u32::MAX {
                let deadline =
                    self.cfg.clock.after_cycles(self.last_touch, self.cfg.outq_flush_cycles as u64);
                if ctx.now() >= deadline {
                    self.seal_back(true);
                    continue;
                }
                if self.flush_at != Some(deadline) {
                    self.flush_at = Some(deadline);
                    ctx.schedule_at(deadline, Priority::DEFAULT, FLUSH_TIMER);
                }
            }
            break;
        }
        // No free slot and the oldest chunk is with the core: its next pop may free it.
        if self.outq_blocked && self.chunks.front().is_some_and(|c| c.handed_end.is_some()) {
            ctx.wake_on_pop(self.ports.outq);
        }
        let now = ctx.now();
        if self.emitted_all && self.chunks.iter().all(|c| c.handed_end.is_some()) && self.fault.is_none() {
            self.finished = true;
            self.counters.finish_tick = Some(now);
            // Checkable from the results: never above `max_outstanding`.
            let id = self.stats.peak_outstanding;
            ctx.stats().add(id, u64::from(self.counters.peak_outstanding));
            self.account_stalls(now, [false; 3]);
            ctx.progress();
            return;
        }
        let outstanding_full = self.outstanding >= self.cfg.max_outstanding && self.issue_pending();
        // One cause per cycle, the one furthest downstream first, so the causes add up (the
        // time breakdown stacks them): a full output queue holds everything behind it, and a
        // full request limit holds the storage that waits on it.
        let queue_full = self.outq_blocked;
        let limit = outstanding_full && !queue_full;
        let storage = self.storage_blocked && !queue_full && !limit;
        self.account_stalls(now, [storage, limit, queue_full]);
        // Only the per-cycle budgets hold us back: come back next cycle. Otherwise sleep until
        // a response arrives, the output queue or request link frees a slot, or a flush is due.
        let issue_capped = self.issued_this_cycle >= self.cfg.requests_per_cycle
            && self.outstanding < self.cfg.max_outstanding
            && self.issue_pending();
        let emit_capped = self.emitted_this_cycle >= self.cfg.events_per_cycle;
        if issue_capped || emit_capped {
            let next = self.cfg.clock.edge(cycle + 1);
            if self.timer_at.is_none_or(|t| t > next || t < ctx.now()) {
                self.timer_at = Some(next);
                ctx.schedule_at(next, Priority::DEFAULT, CYCLE_TIMER);
            }
        }
    }
}

impl<M> Component for AccessUnit<M>
where
    M: Carries<MemRequest> + Carries<MemResponse> + Carries<OutqEntry>,
{
    type Msg = M;

    fn name(&self) -> &str {
        &self.name
    }

    /// Its step takes every input, whatever woke it.
    fn takes_every_input(&self) -> bool {
        true
    }

    fn wake(&mut self, why: Wake, ctx: &mut Ctx<'_, M>) {
        match why {
            Wake::Timer(CYCLE_TIMER) => self.timer_at = None,
            Wake::Timer(FLUSH_TIMER) => self.flush_at = None,
            _ => {}
        }
        self.step(ctx);
    }

    fn busy(&self) -> bool {
        !self.finished && self.fault.is_none()
    }

    fn status(&self) -> String {
        let windows: Vec<String> = self
            .levels
            .iter()
            .map(|l| format!("{}/{}", l.window.len(), l.depth as usize * l.lanes as usize))
            .collect();
        let chunks: Vec<String> = self
            .chunks
            .iter()
            .map(|c| {
                let state = if c.handed_end.is_some() {
                    "with the core"
                } else if !c.sealed {
                    "filling"
                } else if c.acked < c.lines {
                    "writing"
                } else {
                    "waiting for the core"
                };
                format!("{} entries {state}", c.entries.len())
            })
            .collect();
        format!(
            "{} requests in flight; windows {}; outq chunks [{}] of {}",
            self.outstanding,
            windows.join(" "),
            chunks.join(", "),
            self.cfg.outq_chunks
        )
    }
}
