//! A streaming multiprocessor running a gather kernel's blocks.
//!
//! Contract: the SM holds up to `blocks_per_sm` resident blocks, takes new ones from the shared
//! [`BlockScheduler`] as its blocks retire, and runs each warp's program (see
//! [`crate::kernel`]): load the bags' offsets; per chunk of `group` rows, load the chunk's
//! indices; per row (or `row_unroll` rows), load every group's row, then spend the accumulate's
//! warp instructions on the warp's scheduler; finally store the pooled rows. A warp instruction's
//! addresses are coalesced per 128 B line touched, one request per run of the 32 B sectors they
//! touch in it (sectors between two runs are not fetched). A
//! warp waits for every line of a load before its next step, as the scoreboard stalls the first
//! instruction that uses the data. Stores are posted: only the kernel's end waits for them.
//!
//! Issue: the load/store unit sends at most `lsu_lines_per_cycle` line requests per cycle into
//! the L1; a full link holds the rest until it has space. Each warp scheduler issues one warp
//! instruction per cycle; a warp's accumulate occupies its scheduler for its instruction count
//! and the warp resumes `alu_latency_cycles` after the last one.

use crate::kernel::GatherKernel;
use mem_model::cache::Sectors;
use mem_model::{MemRequest, MemResponse};
use sim_core::{
    Carries, Clock, Component, CounterId, Ctx, HistogramId, LinkId, Priority, Stats, StatsError, Tick, Wake,
};
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::marker::PhantomData;
use std::ops::Range;
use std::rc::Rc;
use std::sync::Arc;

/// Bytes per L1 line (the unit a warp instruction's addresses are coalesced into).
pub const LINE_BYTES: u64 = 128;

/// A line's 32 B sectors: a line's requests cover the sectors a warp touches, no others.
const SECTORS: Sectors = Sectors::new(LINE_BYTES.trailing_zeros(), 5);

/// The bytes `[start, end)` of a request or answer at `addr` of `bytes` (at least one).
fn span(addr: u64, bytes: u32) -> (u64, u64) {
    (addr, addr + u64::from(bytes.max(1)))
}

/// Whether two byte ranges `[start, end)` share a byte: a row waits for the requests that carry
/// any of its bytes.
fn overlaps(a: (u64, u64), b: (u64, u64)) -> bool {
    a.0 < b.1 && b.0 < a.1
}

/// The GPU's block scheduler (the hardware's work distributor): hands out the grid's blocks in
/// order to SMs with a free slot. The first wave goes breadth first (block `i` to SM `i % sms`),
/// as the hardware fills SMs. After it, the slots freed in one tick are served together at the
/// tick's end, lowest SM index (then slot) first: which SM gets the next block is then a rule,
/// not the order in which the host happened to run the SMs of that tick.
#[derive(Debug)]
pub struct BlockScheduler {
    next: Cell<u32>,
    total: u32,
    /// Free slots waiting for a block, as (SM index, slot).
    asks: RefCell<Vec<(u32, u32)>>,
    /// Blocks handed out and not yet collected, as (SM index, slot, block).
    grants: RefCell<Vec<(u32, u32, u32)>>,
}

impl BlockScheduler {
    /// A scheduler of `total` blocks whose first `first_wave` are placed statically.
    pub fn new(total: u32, first_wave: u32) -> Rc<Self> {
        Rc::new(Self {
            next: Cell::new(first_wave.min(total)),
            total,
            asks: RefCell::new(Vec::new()),
            grants: RefCell::new(Vec::new()),
        })
    }

    /// Slot `slot` of SM `sm` is free; it is served by the next [`BlockScheduler::serve`].
    fn ask(&self, sm: u32, slot: u32) {
        self.asks.borrow_mut().push((sm, slot));
    }

    /// Hands the next blocks to the waiting slots, lowest SM index and slot first (a slot left
    /// without one when the grid is done waits for nothing).
    fn serve(&self) {
        let mut asks = self.asks.borrow_mut();
        asks.sort_unstable();
        let mut grants = self.grants.borrow_mut();
        for (sm, slot) in asks.drain(..) {
            let b = self.next.get();
            if b < self.total {
                self.next.set(b + 1);
                grants.push((sm, slot, b));
            }
        }
    }

    /// The blocks handed to SM `sm`, as (slot, block), taken out of the scheduler.
    fn collect(&self, sm: u32) -> Vec<(u32, u32)> {
        let mut grants = self.grants.borrow_mut();
        let mine = grants.iter().filter(|g| g.0 == sm).map(|g| (g.1, g.2)).collect();
        grants.retain(|g| g.0 != sm);
        mine
    }
}

/// Parameters of one SM.
#[derive(Debug, Clone, Copy)]
pub struct SmParams {
    /// SM index.
    pub index: u32,
    /// SMs on the chip.
    pub sms: u32,
    /// Resident blocks at most.
    pub blocks_per_sm: u32,
    /// Threads per block.
    pub threads_per_block: u32,
    /// Warp schedulers.
    pub schedulers: u32,
    /// Dependent-issue latency, cycles.
    pub alu_latency_cycles: u64,
    /// Line requests per cycle.
    pub lsu_lines_per_cycle: u32,
    /// Rows per group per step.
    pub row_unroll: u32,
    /// Warp instructions per row beyond the loads and the arithmetic.
    pub instructions_per_row: u32,
    /// Ticks from the start to the first block.
    pub launch_delay: Tick,
}

/// What one SM did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SmCounters {
    /// Blocks run.
    pub blocks: u64,
    /// Line requests sent (reads and writes).
    pub requests: u64,
    /// Warp instructions issued for arithmetic.
    pub instructions: u64,
    /// Floating-point operations done.
    pub flops: u64,
    /// 32 B sectors the requests touched.
    pub sectors: u64,
    /// When the SM's last block and store finished.
    pub finished: Tick,
    /// When the SM sent its first row load (`Tick::MAX` if none).
    pub first_row: Tick,
}

impl Default for SmCounters {
    fn default() -> Self {
        Self {
            blocks: 0,
            requests: 0,
            instructions: 0,
            flops: 0,
            sectors: 0,
            finished: 0,
            first_row: Tick::MAX,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Offsets,
    Indices,
    Rows,
    Compute,
}

#[derive(Debug, Clone)]
struct Warp {
    live: bool,
    bags: Range<u32>,
    longest: u32,
    l_start: u32,
    j: u32,
    step: u32,
    phase: Phase,
    pending: u32,
    /// The rows of the current row step: (first byte, end byte, line requests of it not yet
    /// answered). A row's lookup latency runs to the answer of its last line.
    rows: Vec<(u64, u64, u32)>,
}

impl Warp {
    /// A warp at the start of its program over `bags` (live unless it has none).
    fn new(bags: Range<u32>, longest: u32) -> Self {
        Warp {
            live: !bags.is_empty(),
            bags,
            longest,
            l_start: 0,
            j: 0,
            step: 0,
            phase: Phase::Offsets,
            pending: 0,
            rows: Vec::new(),
        }
    }
}

const TIMER_DRAIN: u64 = u64::MAX;
const TIMER_LAUNCH: u64 = u64::MAX - 1;
/// The end of a tick in which a block slot freed: the block scheduler serves the tick's asks.
const TIMER_BLOCKS: u64 = u64::MAX - 2;
/// Request id layout: the warp slot in the low 32 bits, then the kind.
const ID_ROW: u64 = 1 << 32;
const ID_WRITE: u64 = 1 << 33;

struct Ids {
    requests: CounterId,
    row_latency: HistogramId,
}

/// A streaming multiprocessor.
pub struct Sm<M> {
    name: String,
    p: SmParams,
    kernel: Arc<GatherKernel>,
    scheduler: Rc<BlockScheduler>,
    clock: Clock,
    req: LinkId,
    resp: LinkId,
    warps: Vec<Warp>,
    /// Live warps of each block slot.
    block_live: Vec<u32>,
    /// Next free cycle of each warp scheduler.
    sched_free: Vec<u64>,
    issue: VecDeque<MemRequest>,
    drain_at: Option<Tick>,
    drained_cycle: Option<u64>,
    /// A [`TIMER_BLOCKS`] is booked at the current tick.
    blocks_booked: bool,
    blocked: bool,
    writes_pending: u64,
    started: bool,
    group: u32,
    counters: SmCounters,
    ids: Ids,
    scratch: Vec<(u64, u64, u64)>,
    _msg: PhantomData<M>,
}

impl<M> Sm<M>
where
    M: Carries<MemRequest> + Carries<MemResponse>,
{
    /// An SM running `kernel`'s blocks, sending line requests on `req` and hearing on `resp`.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        name: &str,
        p: SmParams,
        kernel: Arc<GatherKernel>,
        scheduler: Rc<BlockScheduler>,
        clock: Clock,
        req: LinkId,
        resp: LinkId,
        stats: &mut Stats,
    ) -> Result<Self, StatsError> {
        let warps_per_block = p.threads_per_block / crate::kernel::WARP_LANES;
        let idle = Warp::new(0..0, 0);
        let ids = Ids {
            requests: stats.counter_in(name, "requests")?,
            row_latency: stats.histogram_in(name, "lookup_latency", 1_000_000_000, 3)?,
        };
        Ok(Self {
            name: name.to_owned(),
            group: kernel.group_lanes(),
            kernel,
            scheduler,
            clock,
            req,
            resp,
            warps: vec![idle; (p.blocks_per_sm * warps_per_block) as usize],
            block_live: vec![0; p.blocks_per_sm as usize],
            sched_free: vec![0; p.schedulers.max(1) as usize],
            issue: VecDeque::new(),
            drain_at: None,
            drained_cycle: None,
            blocks_booked: false,
            blocked: false,
            writes_pending: 0,
            started: false,
            counters: SmCounters::default(),
            ids,
            scratch: Vec::new(),
            p,
            _msg: PhantomData,
        })
    }

    /// What the SM did so far.
    pub fn counters(&self) -> SmCounters {
        self.counters
    }

    fn warps_per_block(&self) -> usize {
        (self.p.threads_per_block / crate::kernel::WARP_LANES) as usize
    }

    /// The first wave: this SM's share of the grid's first blocks, breadth first over SMs.
    fn first_wave(&mut self, ctx: &mut Ctx<'_, M>) {
        self.started = true;
        let total = self.kernel.blocks(self.p.threads_per_block);
        for slot in 0..self.p.blocks_per_sm {
            let block = self.p.index + slot * self.p.sms;
            if block < total {
                self.launch(slot as usize, block, ctx);
            }
        }
        self.kick(ctx);
    }

    /// Places block `block` in slot `slot` and starts its warps.
    fn launch(&mut self, slot: usize, block: u32, ctx: &mut Ctx<'_, M>) {
        let per_warp = self.kernel.bags_per_warp();
        let bags = self.kernel.bags();
        let first = block * self.kernel.bags_per_block(self.p.threads_per_block);
        let wpb = self.warps_per_block();
        self.counters.blocks += 1;
        let mut starts = Vec::new();
        for w in 0..wpb {
            let lo = (first + w as u32 * per_warp).min(bags);
            let hi = (lo + per_warp).min(bags);
            if lo == hi {
                continue;
            }
            let longest = (lo..hi).map(|b| self.kernel.bag(b).len() as u32).max().unwrap_or(0);
            let i = slot * wpb + w;
            self.warps[i] = Warp::new(lo..hi, longest);
            starts.push(i);
        }
        self.block_live[slot] = starts.len() as u32;
        if starts.is_empty() {
            self.retire(slot, ctx);
        }
        for i in starts {
            // The bags' offsets: one coalesced load of `bags + 1` int64s.
            let bags = &self.warps[i].bags;
            let k = &self.kernel;
            let ranges = [(k.offsets_base + u64::from(bags.start) * 8, u64::from(bags.len() as u32 + 1) * 8)];
            self.load(i, &ranges, false, ctx);
        }
    }

    /// A block slot emptied: ask for the grid's next block, served at the tick's end.
    fn retire(&mut self, slot: usize, ctx: &mut Ctx<'_, M>) {
        self.scheduler.ask(self.p.index, slot as u32);
        if !self.blocks_booked {
            self.blocks_booked = true;
            ctx.schedule_at(ctx.now(), Priority::LATE, TIMER_BLOCKS);
        }
    }

    /// The tick's end: the block scheduler serves every slot freed in the tick (the first SM
    /// to get here serves them all), and this SM launches the blocks it was given.
    fn take_blocks(&mut self, ctx: &mut Ctx<'_, M>) {
        self.blocks_booked = false;
        self.scheduler.serve();
        for (slot, block) in self.scheduler.collect(self.p.index) {
            self.launch(slot as usize, block, ctx);
        }
    }

    /// Coalesces `ranges` (address, bytes) into line reads for warp `w` and queues them; the
    /// warp waits for all of them. For rows (`row`), each range is timed as one lookup.
    fn load(&mut self, w: usize, ranges: &[(u64, u64)], row: bool, ctx: &mut Ctx<'_, M>) {
        let before = self.issue.len();
        let bypass = row && self.kernel.bypass_l1;
        if row {
            self.counters.first_row = self.counters.first_row.min(ctx.now());
        }
        self.coalesce(w as u64 | if row { ID_ROW } else { 0 }, ranges, false, bypass, ctx.now());
        if row {
            // Each row waits for the requests that carry any of its bytes.
            let sent = self.issue.range(before..);
            let mut rows = std::mem::take(&mut self.warps[w].rows);
            rows.clear();
            for &(a, b) in ranges {
                let end = a + b.max(1);
                let n = sent.clone().filter(|r| overlaps((a, end), span(r.addr, r.bytes))).count();
                rows.push((a, end, n as u32));
            }
            self.warps[w].rows = rows;
        }
        self.warps[w].pending = (self.issue.len() - before) as u32;
        if self.warps[w].pending == 0 {
            // Nothing to load (an empty chunk): carry on at once.
            self.advance(w, ctx);
        }
    }

    /// Queues posted writes of `ranges`.
    fn store(&mut self, ranges: &[(u64, u64)], now: Tick) {
        let before = self.issue.len();
        // Stores go through to L2 (the L1 is write-through for global memory).
        self.coalesce(ID_WRITE, ranges, true, true, now);
        self.writes_pending += (self.issue.len() - before) as u64;
    }

    /// Queues one request per line `ranges` touch; `bypass` sets the non-temporal hint, which
    /// the L1 (configured to bypass) passes to L2 without allocating.
    fn coalesce(&mut self, id: u64, ranges: &[(u64, u64)], write: bool, bypass: bool, now: Tick) {
        // (line, first byte, end byte) of every line touched, merged per line.
        let mut lines = std::mem::take(&mut self.scratch);
        lines.clear();
        for &(addr, bytes) in ranges {
            let end = addr + bytes.max(1);
            let mut a = addr;
            while a < end {
                let line = a / LINE_BYTES;
                let stop = end.min((line + 1) * LINE_BYTES);
                lines.push((line, a, stop));
                a = stop;
            }
        }
        lines.sort_unstable();
        let mut i = 0;
        while i < lines.len() {
            let line = lines[i].0;
            let base = line * LINE_BYTES;
            // The sectors the warp touches in this line, and its bytes' span.
            let (mut mask, mut lo, mut hi) = (0, u64::MAX, 0);
            while i < lines.len() && lines[i].0 == line {
                let (_, a, b) = lines[i];
                mask |= SECTORS.touched(a - base, b - base);
                (lo, hi) = (lo.min(a), hi.max(b));
                i += 1;
            }
            // One request per run of touched sectors: sectors between them are not fetched.
            for run in Sectors::runs(mask) {
                let (offset, len) = SECTORS.span(run);
                let start = lo.max(base + offset);
                let end = hi.min(base + offset + len);
                let bytes = (end - start) as u32;
                let mut r = if write {
                    MemRequest::write(id, start, bytes, now)
                } else {
                    MemRequest::read(id, start, bytes, now)
                };
                r.non_temporal = bypass;
                self.issue.push_back(r);
            }
        }
        self.scratch = lines;
    }

    /// Warp `w`'s outstanding loads are all back, or its accumulate is done: its next step.
    fn advance(&mut self, w: usize, ctx: &mut Ctx<'_, M>) {
        let g = self.group;
        match self.warps[w].phase {
            Phase::Offsets => {
                if self.warps[w].longest == 0 {
                    self.finish(w, ctx);
                } else {
                    self.load_indices(w, ctx);
                }
            }
            Phase::Indices => {
                self.warps[w].j = 0;
                self.load_rows(w, ctx);
            }
            Phase::Rows => self.compute(w, ctx),
            Phase::Compute => {
                if let Some(scatter) = &self.kernel.scatter {
                    let rb = u64::from(self.kernel.row_bytes);
                    let warp = &self.warps[w];
                    let ranges: Vec<(u64, u64)> = warp
                        .bags
                        .clone()
                        .flat_map(|b| self.step_rows(b, warp).map(|r| (scatter[r], rb)))
                        .collect();
                    self.store(&ranges, ctx.now());
                }
                let warp = &mut self.warps[w];
                warp.j += warp.step;
                if warp.j < g && warp.l_start + warp.j < warp.longest {
                    self.load_rows(w, ctx);
                } else {
                    warp.l_start += g;
                    if warp.l_start < warp.longest {
                        self.load_indices(w, ctx);
                    } else {
                        self.finish(w, ctx);
                    }
                }
            }
        }
    }

    /// The rows of bag `b` that warp `warp`'s current step loads.
    fn step_rows(&self, b: u32, warp: &Warp) -> Range<usize> {
        let bag = self.kernel.bag(b);
        let lo = (bag.start + (warp.l_start + warp.j) as usize).min(bag.end);
        let hi = (lo + warp.step as usize).min(bag.end);
        lo..hi
    }

    fn load_indices(&mut self, w: usize, ctx: &mut Ctx<'_, M>) {
        let g = u64::from(self.group);
        let k = &self.kernel;
        let warp = &mut self.warps[w];
        warp.phase = Phase::Indices;
        let ib = u64::from(k.index_bytes);
        let ranges: Vec<(u64, u64)> = warp
            .bags
            .clone()
            .filter_map(|b| {
                let bag = k.bag(b);
                let start = bag.start as u64 + u64::from(warp.l_start);
                let n = (bag.end as u64).saturating_sub(start).min(g);
                (n > 0).then(|| (k.index_base + start * ib, n * ib))
            })
            .collect();
        self.load(w, &ranges, false, ctx);
    }

    fn load_rows(&mut self, w: usize, ctx: &mut Ctx<'_, M>) {
        let g = self.group;
        let warp = &mut self.warps[w];
        warp.phase = Phase::Rows;
        warp.step = self.kernel.row_unroll.unwrap_or(self.p.row_unroll).max(1).min(g - warp.j);
        let warp = &self.warps[w];
        let rb = u64::from(self.kernel.row_bytes);
        let ranges: Vec<(u64, u64)> = warp
            .bags
            .clone()
            .flat_map(|b| self.step_rows(b, warp).map(|r| (self.kernel.rows[r], rb)))
            .collect();
        self.load(w, &ranges, true, ctx);
    }

    /// The step's accumulate on the warp's scheduler: the rows' arithmetic spread over the
    /// group's lanes (2 flops per lane per fused multiply-add) plus the fixed per-row work.
    fn compute(&mut self, w: usize, ctx: &mut Ctx<'_, M>) {
        let k = &self.kernel;
        let warp = &mut self.warps[w];
        warp.phase = Phase::Compute;
        let rows = u64::from(warp.step);
        let arith = (k.flops_per_row * rows).div_ceil(2 * u64::from(self.group));
        let instructions = arith + u64::from(self.p.instructions_per_row) * rows;
        let warp = &self.warps[w];
        let groups: u64 = warp.bags.clone().map(|b| self.step_rows(b, warp).len() as u64).sum();
        self.counters.flops += k.flops_per_row * groups;
        self.counters.instructions += instructions;
        let s = w % self.sched_free.len();
        let start = self.sched_free[s].max(self.clock.cycle_at(ctx.now()));
        self.sched_free[s] = start + instructions;
        let done = self.clock.edge(start + instructions + self.p.alu_latency_cycles);
        ctx.schedule_at(done, Priority::DEFAULT, w as u64);
    }

    fn finish(&mut self, w: usize, ctx: &mut Ctx<'_, M>) {
        let k = &self.kernel;
        let warp = &mut self.warps[w];
        warp.live = false;
        let ob = u64::from(k.output_bytes);
        if ob > 0 && k.scatter.is_none() {
            let ranges: Vec<(u64, u64)> =
                warp.bags.clone().map(|b| (k.output_base + u64::from(b) * ob, ob)).collect();
            self.store(&ranges, ctx.now());
        }
        let slot = w / self.warps_per_block();
        self.block_live[slot] -= 1;
        if self.block_live[slot] == 0 {
            self.retire(slot, ctx);
        }
        self.counters.finished = self.counters.finished.max(ctx.now());
    }

    /// Sends queued requests now if this cycle's issue slots are unused, else at the next cycle.
    fn kick(&mut self, ctx: &mut Ctx<'_, M>) {
        if self.blocked || self.issue.is_empty() || self.drain_at.is_some() {
            return;
        }
        let cycle = self.clock.cycle_at(ctx.now());
        if self.drained_cycle == Some(cycle) {
            let at = self.clock.edge(cycle + 1);
            self.drain_at = Some(at);
            ctx.schedule_at(at, Priority::DEFAULT, TIMER_DRAIN);
        } else {
            self.drain(ctx);
        }
    }

    fn drain(&mut self, ctx: &mut Ctx<'_, M>) {
        self.drained_cycle = Some(self.clock.cycle_at(ctx.now()));
        for _ in 0..self.p.lsu_lines_per_cycle {
            let Some(r) = self.issue.pop_front() else { break };
            if ctx.send(self.req, M::wrap(r)).is_err() {
                self.issue.push_front(r);
                self.blocked = true;
                return;
            }
            self.counters.requests += 1;
            self.counters.sectors += (r.addr + u64::from(r.bytes.max(1)) - 1) / 32 - r.addr / 32 + 1;
            ctx.stats().inc(self.ids.requests);
        }
        self.kick(ctx);
    }

    fn on_response(&mut self, r: MemResponse, ctx: &mut Ctx<'_, M>) {
        let now = ctx.now();
        if r.id & ID_WRITE != 0 {
            self.writes_pending -= 1;
            self.counters.finished = self.counters.finished.max(now);
            return;
        }
        let w = (r.id & 0xffff_ffff) as usize;
        if r.id & ID_ROW != 0 {
            // A row is timed once its last line is back, from the step's issue.
            let id = self.ids.row_latency;
            for row in self.warps[w]
                .rows
                .iter_mut()
                .filter(|row| row.2 > 0 && overlaps((row.0, row.1), span(r.addr, r.bytes)))
            {
                row.2 -= 1;
                if row.2 == 0 {
                    ctx.stats().record(id, now.saturating_sub(r.issued).max(1));
                }
            }
        }
        self.warps[w].pending -= 1;
        if self.warps[w].pending == 0 {
            self.advance(w, ctx);
        }
    }
}

impl<M> Component for Sm<M>
where
    M: Carries<MemRequest> + Carries<MemResponse>,
{
    type Msg = M;

    fn name(&self) -> &str {
        &self.name
    }

    fn wake(&mut self, why: Wake, ctx: &mut Ctx<'_, M>) {
        match why {
            Wake::Start => {
                if self.p.launch_delay == 0 {
                    self.first_wave(ctx);
                } else {
                    ctx.schedule_at(self.p.launch_delay, Priority::DEFAULT, TIMER_LAUNCH);
                }
                return;
            }
            Wake::Timer(TIMER_LAUNCH) => self.first_wave(ctx),
            Wake::Timer(TIMER_BLOCKS) => self.take_blocks(ctx),
            Wake::Timer(TIMER_DRAIN) => {
                self.drain_at = None;
                if !self.blocked {
                    self.drain(ctx);
                }
            }
            Wake::Timer(w) => self.advance(w as usize, ctx),
            Wake::Arrival(_) => {
                while let Some(m) = ctx.recv(self.resp) {
                    // Only responses arrive on the response link.
                    if let Ok(r) = <M as Carries<MemResponse>>::unwrap_as(m) {
                        self.on_response(r, ctx);
                    }
                }
            }
            Wake::Space(_) => self.blocked = false,
        }
        self.kick(ctx);
    }

    fn busy(&self) -> bool {
        !self.started
            || self.warps.iter().any(|w| w.live)
            || self.writes_pending > 0
            || !self.issue.is_empty()
    }

    fn status(&self) -> String {
        let live = self.warps.iter().filter(|w| w.live).count();
        format!(
            "{live} live warps, {} requests queued, {} stores outstanding{}",
            self.issue.len(),
            self.writes_pending,
            if self.blocked { ", L1 link full" } else { "" }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::BlockScheduler;

    #[test]
    fn slots_freed_together_get_blocks_by_sm_then_slot_whatever_order_they_asked_in() {
        // Blocks 0-3 went out in the first wave; 4, 5 and 6 are left.
        let s = BlockScheduler::new(7, 4);
        for (sm, slot) in [(5, 0), (2, 1), (9, 0), (2, 0)] {
            s.ask(sm, slot);
        }
        s.serve();
        assert_eq!(s.collect(2), vec![(0, 4), (1, 5)]);
        assert_eq!(s.collect(5), vec![(0, 6)]);
        assert_eq!(s.collect(9), vec![], "the grid ran out");
        assert_eq!(s.collect(2), vec![], "collected once");
        s.ask(1, 0);
        s.serve();
        assert_eq!(s.collect(1), vec![]);
    }
}
