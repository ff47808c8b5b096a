//! The access unit's timing model: traversal windows, line requests, in-order callbacks.
//!
//! Contract: the unit runs one [`AuProgram`] from tick 0. It sends cache-line read requests on
//! `mem_req` (never more than `max_outstanding` in flight), receives their answers on
//! `mem_resp`, and pushes one [`OutqEntry`] per callback event on `outq`, in program order. It
//! sleeps while it waits for memory or for space in the output queue, and is finished once the
//! outermost TU's end event has left.
//!
//! Every loop level keeps a FIFO window of live iterations. An iteration is spawned when its
//! window has room and, below the outermost level, when its parent iteration's values (the CSR
//! bounds) have arrived; its streams are evaluated in configuration order as their operands
//! become ready, and its loads queue for issue. Requests issue outermost level first and in
//! order within a level, up to `requests_per_cycle`; callback events leave in program order, up
//! to `events_per_cycle`. A window's depth is the stream storage divided evenly among the levels
//! and by the bytes one iteration of that level holds (its loaded rows and 8 bytes per scalar),
//! so wide rows mean a shallower window, as in the TMU where storage sets stream depth.

use crate::isa::{AluOp, AuProgram, Bounds, Event, MAX_OPERANDS, MAX_STREAMS_PER_TU, Operand, StreamKind};
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

/// Parameters of an access unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AccessUnitConfig {
    /// Clock domain (the core's clock in the TMU).
    pub clock: Clock,
    /// Total stream storage (lanes x storage per lane; TMU: 8 x 2 KiB).
    pub storage: ByteSize,
    /// Most line requests in flight (TMU: 128).
    pub max_outstanding: u32,
    /// Bytes per memory request (a cache line).
    pub line_bytes: u32,
    /// Line requests issued per cycle.
    pub requests_per_cycle: u32,
    /// Callback events written to the output queue per cycle.
    pub events_per_cycle: u32,
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
    /// A statistic name collides.
    #[error(transparent)]
    Stats(#[from] StatsError),
}

/// What the unit did, for reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AuCounters {
    /// Line requests sent.
    pub requests: u64,
    /// Lookup rows fetched.
    pub lookups: u64,
    /// Callback events pushed.
    pub events: u64,
    /// Most line requests in flight at once.
    pub peak_outstanding: u32,
    /// Tick at which the last event left (when finished).
    pub finish_tick: Option<Tick>,
}

const NO_PARENT: u64 = u64::MAX;

/// One live iteration of a loop level.
#[derive(Debug, Clone)]
struct Iteration {
    seq: u64,
    parent: u64,
    values: [u64; MAX_STREAMS_PER_TU],
    addr: [u64; MAX_STREAMS_PER_TU],
    first_issue: [Tick; MAX_STREAMS_PER_TU],
    lines_total: [u16; MAX_STREAMS_PER_TU],
    lines_issued: [u16; MAX_STREAMS_PER_TU],
    lines_left: [u16; MAX_STREAMS_PER_TU],
    started: u32,
    ready: u32,
    pre_emitted: u8,
    post_emitted: u8,
    bounds_known: bool,
    child_next: u64,
    child_end: u64,
    children_done: bool,
}

impl Iteration {
    fn new(seq: u64, parent: u64) -> Self {
        Self {
            seq,
            parent,
            values: [0; MAX_STREAMS_PER_TU],
            addr: [0; MAX_STREAMS_PER_TU],
            first_issue: [0; MAX_STREAMS_PER_TU],
            lines_total: [0; MAX_STREAMS_PER_TU],
            lines_issued: [0; MAX_STREAMS_PER_TU],
            lines_left: [0; MAX_STREAMS_PER_TU],
            started: 0,
            ready: 0,
            pre_emitted: 0,
            post_emitted: 0,
            bounds_known: false,
            child_next: 0,
            child_end: 0,
            children_done: false,
        }
    }
}

/// One loop level: its streams, its window of live iterations and its issue queue.
struct Level {
    /// Global ids of this level's streams, in configuration order.
    streams: Vec<u8>,
    all_ready: u32,
    capacity: usize,
    window: VecDeque<Iteration>,
    head_seq: u64,
    next_seq: u64,
    /// Loads waiting to issue lines: (iteration seq, local stream).
    issue: VecDeque<(u64, u8)>,
    /// Callbacks emitted after an iteration becomes ready: iter of this TU, begin of the child.
    pre: Vec<usize>,
    /// Callbacks emitted after an iteration's children: end of the child TU.
    post: Vec<usize>,
    /// Outermost level: next induction value; inner levels: parent iteration being expanded.
    gen_cursor: u64,
}

/// Statistic ids.
struct AuStats {
    requests: CounterId,
    lookups: CounterId,
    events: CounterId,
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
    root_pre: Vec<usize>,
    root_post: Vec<usize>,
    root_pre_emitted: usize,
    root_post_emitted: usize,
    outstanding: u32,
    cycle: u64,
    issued_this_cycle: u32,
    emitted_this_cycle: u32,
    timer_at: Option<Tick>,
    finished: bool,
    fault: Option<AuFault>,
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
        ] {
            if v == 0 {
                return Err(AuBuildError::Zero(what));
            }
        }
        let nlev = program.tus.len();
        let mut place = vec![(0u8, 0u8); program.streams.len()];
        let mut levels = Vec::with_capacity(nlev);
        for l in 0..nlev {
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
            let bytes: u64 = streams
                .iter()
                .map(|&g| match program.streams[g as usize].kind {
                    StreamKind::Row { bytes, .. } => bytes as u64,
                    _ => 8,
                })
                .sum::<u64>()
                .max(8);
            let capacity = (cfg.storage.bytes() / nlev as u64 / bytes).clamp(2, 1 << 16) as usize;
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
            let gen_cursor = match program.tus[l].bounds {
                Bounds::Dense { begin, .. } if l == 0 => begin,
                _ => 0,
            };
            levels.push(Level {
                all_ready: if streams.len() == 32 { u32::MAX } else { (1u32 << streams.len()) - 1 },
                streams,
                capacity,
                window: VecDeque::with_capacity(capacity),
                head_seq: 0,
                next_seq: 0,
                issue: VecDeque::with_capacity(capacity * 2),
                pre,
                post: cbs(l + 1, Event::End),
                gen_cursor,
            });
        }
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
        let stats = AuStats {
            requests: stats.counter(&format!("{name}.requests"))?,
            lookups: stats.counter(&format!("{name}.lookups"))?,
            events: stats.counter(&format!("{name}.events"))?,
            lookup_latency: stats.histogram(&format!("{name}.lookup_latency"), 1_000_000_000, 3)?,
        };
        Ok(Self {
            name: name.to_string(),
            cfg,
            program,
            image,
            ports,
            levels,
            place,
            root_pre,
            root_post,
            root_pre_emitted: 0,
            root_post_emitted: 0,
            outstanding: 0,
            cycle: u64::MAX,
            issued_this_cycle: 0,
            emitted_this_cycle: 0,
            timer_at: None,
            finished: false,
            fault: None,
            counters: AuCounters::default(),
            stats,
            _msg: PhantomData,
        })
    }

    /// Whether the outermost end event has left.
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

    fn spawn(&mut self, l: usize, parent: u64, ite: u64) {
        let lev = &mut self.levels[l];
        let mut it = Iteration::new(lev.next_seq, parent);
        lev.next_seq += 1;
        for (k, &g) in lev.streams.iter().enumerate() {
            if let StreamKind::Ite = self.program.streams[g as usize].kind {
                it.values[k] = ite;
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
        let line = self.cfg.line_bytes as u64;
        for k in 0..self.levels[l].streams.len() {
            let it = &self.levels[l].window[idx];
            if it.started & (1 << k) != 0 {
                continue;
            }
            let g = self.levels[l].streams[k];
            let kind = self.program.streams[g as usize].kind;
            let (index, base, scale, bytes) = match kind {
                StreamKind::Ite => continue,
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
                StreamKind::Load { base, index, scale } => (index, base, scale, 4u64),
                StreamKind::Row { base, index, scale, bytes, .. } => (index, base, scale, bytes as u64),
            };
            let Some(i) = self.operand(l, idx, index) else { continue };
            let Some(addr) = i.checked_mul(scale).and_then(|o| o.checked_add(base)) else {
                self.fault = Some(AuFault::Arithmetic { stream: g, what: "address overflow" });
                return;
            };
            let value = match kind {
                StreamKind::Load { .. } => match self.image.read_u32(addr) {
                    Ok(v) => v as u64,
                    Err(source) => {
                        self.fault = Some(AuFault::Memory { stream: g, source });
                        return;
                    }
                },
                // A row yields its address; check it is mapped so a bad index faults here.
                _ => match self.image.region_of(addr, bytes) {
                    Ok(_) => addr,
                    Err(source) => {
                        self.fault = Some(AuFault::Memory { stream: g, source });
                        return;
                    }
                },
            };
            let lines = ((addr + bytes - 1) / line - addr / line + 1).min(u16::MAX as u64) as u16;
            let lev = &mut self.levels[l];
            let seq = lev.window[idx].seq;
            let it = &mut lev.window[idx];
            it.values[k] = value;
            it.addr[k] = addr;
            it.lines_total[k] = lines;
            it.lines_left[k] = lines;
            it.started |= 1 << k;
            lev.issue.push_back((seq, k as u8));
        }
    }

    /// Spawns iterations while windows have room and parents' bounds are known.
    fn generate(&mut self) -> bool {
        let mut any = false;
        for l in 0..self.levels.len() {
            loop {
                if self.fault.is_some() || self.levels[l].window.len() >= self.levels[l].capacity {
                    break;
                }
                if l == 0 {
                    let Bounds::Dense { end, .. } = self.program.tus[0].bounds else { break };
                    let next = self.levels[0].gen_cursor;
                    if next >= end {
                        break;
                    }
                    self.levels[0].gen_cursor += 1;
                    self.spawn(0, NO_PARENT, next);
                    any = true;
                    continue;
                }
                let pseq = self.levels[l].gen_cursor;
                let (upper, _) = self.levels.split_at_mut(l);
                let plev = &mut upper[l - 1];
                if pseq >= plev.next_seq {
                    break;
                }
                let all = plev.all_ready;
                let pidx = (pseq - plev.head_seq) as usize;
                if plev.window[pidx].ready != all {
                    break;
                }
                if !plev.window[pidx].bounds_known {
                    let (b, e) = match self.program.tus[l].bounds {
                        Bounds::Dense { begin, end } => (begin, end),
                        Bounds::Range { begin, end } => {
                            let p = &plev.window[pidx];
                            (
                                p.values[self.place[begin.0 as usize].1 as usize],
                                p.values[self.place[end.0 as usize].1 as usize],
                            )
                        }
                    };
                    let p = &mut plev.window[pidx];
                    p.bounds_known = true;
                    p.child_next = b;
                    p.child_end = e;
                }
                let p = &mut plev.window[pidx];
                if p.child_next < p.child_end {
                    let v = p.child_next;
                    p.child_next += 1;
                    self.spawn(l, pseq, v);
                } else {
                    p.children_done = true;
                    self.levels[l].gen_cursor += 1;
                }
                any = true;
            }
        }
        any
    }

    fn outermost_done(&self) -> bool {
        match self.program.tus[0].bounds {
            Bounds::Dense { end, .. } => self.levels[0].gen_cursor >= end,
            Bounds::Range { .. } => true,
        }
    }
}

impl<M> AccessUnit<M>
where
    M: Carries<MemRequest> + Carries<MemResponse> + Carries<OutqEntry>,
{
    fn issue(&mut self, ctx: &mut Ctx<'_, M>) -> bool {
        let line = self.cfg.line_bytes as u64;
        let mut any = false;
        for l in 0..self.levels.len() {
            while self.issued_this_cycle < self.cfg.requests_per_cycle
                && self.outstanding < self.cfg.max_outstanding
            {
                let lev = &mut self.levels[l];
                let Some(&(seq, k)) = lev.issue.front() else { break };
                let it = &mut lev.window[(seq - lev.head_seq) as usize];
                let k = k as usize;
                if it.lines_issued[k] == it.lines_total[k] {
                    lev.issue.pop_front();
                    continue;
                }
                let addr = (it.addr[k] / line + it.lines_issued[k] as u64) * line;
                // id: level (8 bits) | local stream (8 bits) | iteration seq (48 bits).
                let id = ((l as u64) << 56) | ((k as u64) << 48) | (seq & ((1 << 48) - 1));
                let req = MemRequest::read(id, addr, self.cfg.line_bytes, ctx.now());
                if ctx.send(self.ports.mem_req, M::wrap(req)).is_err() {
                    return any;
                }
                if it.lines_issued[k] == 0 {
                    it.first_issue[k] = ctx.now();
                }
                it.lines_issued[k] += 1;
                self.outstanding += 1;
                self.counters.peak_outstanding = self.counters.peak_outstanding.max(self.outstanding);
                self.issued_this_cycle += 1;
                self.counters.requests += 1;
                let id = self.stats.requests;
                ctx.stats().inc(id);
                any = true;
            }
        }
        any
    }

    fn complete(&mut self, resp: MemResponse, ctx: &mut Ctx<'_, M>) {
        let l = (resp.id >> 56) as usize;
        let k = ((resp.id >> 48) & 0xff) as usize;
        let seq = resp.id & ((1 << 48) - 1);
        self.outstanding = self.outstanding.saturating_sub(1);
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
        let g = lev.streams[k] as usize;
        if let StreamKind::Row { lookup: true, .. } = self.program.streams[g].kind {
            self.counters.lookups += 1;
            let (c, h, now) = (self.stats.lookups, self.stats.lookup_latency, ctx.now());
            let s = ctx.stats();
            s.inc(c);
            s.record(h, now - first);
        }
        ctx.progress();
        self.evaluate(l, idx);
    }

    /// Sends callback `cb` with operands read from the window heads.
    fn send_callback(&mut self, cb: usize, ctx: &mut Ctx<'_, M>) -> bool {
        if self.emitted_this_cycle >= self.cfg.events_per_cycle {
            return false;
        }
        let c = &self.program.callbacks[cb];
        let mut entry =
            OutqEntry { control: c.control, operands: [0; MAX_OPERANDS], len: c.operands.len() as u8 };
        for (i, s) in c.operands.iter().enumerate() {
            entry.operands[i] = self.head_value(s.0);
        }
        // A refused send registers us for a Wake::Space when the core pops.
        if ctx.send(self.ports.outq, M::wrap(entry)).is_err() {
            return false;
        }
        self.emitted_this_cycle += 1;
        self.counters.events += 1;
        let id = self.stats.events;
        ctx.stats().inc(id);
        true
    }

    /// Emits the next callback event in program order, or retires a finished iteration.
    fn emit_one(&mut self, ctx: &mut Ctx<'_, M>) -> Emit {
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
                    self.finished = true;
                    self.counters.finish_tick = Some(ctx.now());
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
                let plev = &mut self.levels[l - 1];
                plev.window.pop_front();
                plev.head_seq += 1;
                return Emit::Popped;
            }
            let Some(h) = self.levels[l].window.front() else { return Emit::Blocked };
            if h.ready != self.levels[l].all_ready {
                return Emit::Blocked;
            }
            if let Some(&cb) = self.levels[l].pre.get(h.pre_emitted as usize) {
                if !self.send_callback(cb, ctx) {
                    return Emit::Blocked;
                }
                if let Some(h) = self.levels[l].window.front_mut() {
                    h.pre_emitted += 1;
                }
                return Emit::Sent;
            }
            if l + 1 == nlev {
                let lev = &mut self.levels[l];
                lev.window.pop_front();
                lev.head_seq += 1;
                return Emit::Popped;
            }
        }
        Emit::Blocked
    }

    fn step(&mut self, ctx: &mut Ctx<'_, M>) {
        let cycle = self.cfg.clock.cycle_at(ctx.now());
        if cycle != self.cycle {
            self.cycle = cycle;
            self.issued_this_cycle = 0;
            self.emitted_this_cycle = 0;
        }
        while let Some(msg) = ctx.recv(self.ports.mem_resp) {
            if let Ok(resp) = Carries::<MemResponse>::unwrap_as(msg) {
                self.complete(resp, ctx);
            }
        }
        loop {
            if self.fault.is_some() || self.finished {
                return;
            }
            let mut moved = self.generate();
            moved |= self.issue(ctx);
            while matches!(self.emit_one(ctx), Emit::Sent | Emit::Popped) {
                moved = true;
            }
            if !moved {
                break;
            }
        }
        // Only the per-cycle budgets hold us back: come back next cycle. Otherwise sleep until
        // a response arrives or the output queue or request link frees a slot.
        let issue_capped = self.issued_this_cycle >= self.cfg.requests_per_cycle
            && self.outstanding < self.cfg.max_outstanding
            && self.levels.iter().any(|l| !l.issue.is_empty());
        let emit_capped = self.emitted_this_cycle >= self.cfg.events_per_cycle;
        if issue_capped || emit_capped {
            let next = self.cfg.clock.edge(cycle + 1);
            if self.timer_at.is_none_or(|t| t > next || t < ctx.now()) {
                self.timer_at = Some(next);
                ctx.schedule_at(next, Priority::DEFAULT, 0);
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

    fn wake(&mut self, why: Wake, ctx: &mut Ctx<'_, M>) {
        if let Wake::Timer(_) = why {
            self.timer_at = None;
        }
        self.step(ctx);
    }

    fn busy(&self) -> bool {
        !self.finished && self.fault.is_none()
    }

    fn status(&self) -> String {
        let windows: Vec<String> =
            self.levels.iter().map(|l| format!("{}/{}", l.window.len(), l.capacity)).collect();
        format!("{} requests in flight; windows {}", self.outstanding, windows.join(" "))
    }
}
