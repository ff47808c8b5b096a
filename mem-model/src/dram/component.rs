//! The DRAM as an engine component: [`Dram`], plug-compatible with [`crate::SimpleMemory`].
//!
//! Contract: requests arrive on input ports (one link pair per requester) and are answered on
//! the port they came from. A request of any size is cut into bursts (the bursts overlapping
//! `[addr, addr + bytes)`, at least one): a 64 B request on a 32 B-burst pseudo-channel is two
//! column commands, and with a 256 B interleave both go to the same pseudo-channel and row.
//! Bursts are queued at the pseudo-channel controllers that own them ([`crate::dram::mapping`]).
//!
//! * Reads are answered when the last burst's data has returned: RD issue + `latency.read`
//!   (nCL + nBL) cycles, at that clock edge.
//! * Writes are posted: answered as soon as all their bursts are accepted into the write queues
//!   (the controller owns the data from then on), as DRAMsim3 and Ramulator do.
//! * A read whose every burst is still queued to be written is answered from the write queues
//!   at once (`forwarded_reads`), as DRAMsim3 and Ramulator 2 do; one that only overlaps them
//!   goes to the device.
//! * A request that touches bytes at or beyond the capacity is a *fault*: it is dropped
//!   unanswered, counted (`faults`) and the first one is kept ([`Dram::fault`], also shown in
//!   [`Component::status`]), as exec-core's cores record theirs. The front end checks
//!   [`Dram::fault`] after a run.
//! * A full controller queue leaves the rest of the request (and later ones from the same port)
//!   in the link, which back-pressures the requester; other ports carry on. Room that a cycle's
//!   commands free is taken once every controller has run in that cycle, and what it admits is
//!   scheduled from the next cycle, as a front end that sends before each controller cycle (the
//!   order of Ramulator 2's memory system) sees it.
//! * Per-requester response order follows completion, not arrival.
//! * Requests arriving in the same tick on different ports are taken port by port, from a
//!   starting port that moves by one every memory cycle, whatever the order in which the engine
//!   delivered them: with at most [`POLL_PORTS`] ports an arrival wake polls them all (see
//!   [`Component::takes_every_input`]); with more, each delivery notes its port and the tick's
//!   ports are taken together once its deliveries are over (as the caches do, `cache/ports.rs`).
//!
//! Event-driven: the component keeps, per controller, the next cycle it must run (`u64::MAX`
//! when idle) and one engine timer at the earliest of those and of the earliest data return.
//! When the timer fires, every controller due at that cycle runs, in index order. A pseudo-
//! channel with no work schedules nothing (its refreshes are replayed when a request or a
//! sibling pseudo-channel's run needs them, see [`crate::dram::refresh`]); with work it sleeps
//! until its next command can be legal.
//! One engine event serves every controller and every data return of a cycle, which keeps the
//! engine's queue small when hundreds of pseudo-channels are busy; the commands of a cycle's
//! runs are booked together afterwards, in the order they issued. A request's address is
//! decoded once per interleave chunk it touches: the bursts of a chunk share bank and row and
//! are queued as one controller entry.

use crate::cache::ports::{PortSet, RoundRobin, SETTLE, Settle};
use crate::dram::command::{Command, NUM_COMMANDS};
use crate::dram::controller::{
    BurstRun, Controller, FIRST_ACT, FIRST_COUNTED, FIRST_PRE, Issued, NO_REQ, Owed, RunOut,
};
use crate::dram::counters::{DramCounters, StatIds};
use crate::dram::device::Device;
use crate::dram::error::DramError;
use crate::dram::log::IssuedCommand;
use crate::dram::spec::DramSpec;
use crate::{MemRequest, MemResponse};
use sim_core::address_map::AddressMap;
use sim_core::{Carries, Clock, Component, Ctx, LinkId, Priority, Stats, Tick, Wake};
use std::collections::VecDeque;
use std::fmt;
use std::marker::PhantomData;

/// Ports a DRAM polls when an arrival wakes it, at most (see [`Component::takes_every_input`]).
pub const POLL_PORTS: usize = 64;

/// Refresh commands a catch-up replays before booking them: the memory it holds stays bounded
/// however long the channel slept.
const CATCH_UP_BATCH: usize = 4096;

/// A request the DRAM refused because it lies outside the capacity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DramFault {
    /// The request's id.
    pub id: u64,
    /// Its first byte.
    pub addr: u64,
    /// Its size.
    pub bytes: u32,
    /// The DRAM's capacity in bytes.
    pub capacity: u64,
    /// When it arrived.
    pub tick: Tick,
}

impl fmt::Display for DramFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "request {} at tick {}: address {:#x} ({} B) is outside the DRAM's {} B (last valid address {:#x})",
            self.id,
            self.tick,
            self.addr,
            self.bytes,
            self.capacity,
            self.capacity.saturating_sub(1)
        )
    }
}

/// Cycle/tick conversion with a multiply-only fast path for whole-picosecond periods.
#[derive(Debug, Clone, Copy)]
struct Ticker {
    clock: Clock,
    /// The period in whole picoseconds, if it is one, and `floor(2^64 / period)`: dividing a
    /// tick by the period is then a multiplication and one correction (a hardware division
    /// takes tens of cycles, once per request).
    ps: Option<(u64, u64)>,
}

impl Ticker {
    fn new(clock: Clock, ps: Option<u64>) -> Ticker {
        Ticker { clock, ps: ps.map(|p| (p, if p == 1 { 0 } else { u64::MAX / p })) }
    }

    #[inline]
    fn tick(self, cycle: u64) -> Tick {
        match self.ps {
            Some((p, _)) => cycle.saturating_mul(p),
            None => self.clock.edge(cycle),
        }
    }

    /// `t / p` by the reciprocal: the estimate is at most one short.
    #[inline]
    fn div(t: u64, p: u64, inv: u64) -> u64 {
        if p == 1 {
            return t;
        }
        let q = ((u128::from(t) * u128::from(inv)) >> 64) as u64;
        if t - q * p >= p { q + 1 } else { q }
    }

    #[inline]
    fn cycle_floor(self, t: Tick) -> u64 {
        match self.ps {
            Some((p, inv)) => Ticker::div(t, p, inv),
            None => self.clock.cycle_at(t),
        }
    }

    #[inline]
    fn cycle_ceil(self, t: Tick) -> u64 {
        match self.ps {
            Some((p, inv)) => {
                let q = Ticker::div(t, p, inv);
                if q * p == t { q } else { q + 1 }
            }
            None => {
                let c = self.clock.cycle_at(t);
                if self.clock.edge(c) == t { c } else { c + 1 }
            }
        }
    }
}

/// A request being served.
#[derive(Debug, Clone, Copy)]
struct ReqState {
    req: MemRequest,
    arrival: Tick,
    port: u32,
    /// Bursts not yet done (reads: data returned; writes: WR issued).
    remaining: u32,
}

/// The part of a request not yet queued (its controller's queue was full).
#[derive(Debug, Clone, Copy)]
struct Split {
    slot: u32,
    next: u64,
    end: u64,
}

#[derive(Debug)]
struct Port {
    inp: LinkId,
    out: LinkId,
    waiting: VecDeque<MemResponse>,
    split: Option<Split>,
}

/// A DRAM or HBM memory (see the module docs).
pub struct Dram<M> {
    name: String,
    spec: DramSpec,
    ticker: Ticker,
    device: Device,
    ctrls: Vec<Controller>,
    wake_at: Vec<u64>,
    /// The minimum of `wake_at` (kept as it changes, so re-arming the timer is O(1)).
    min_wake: u64,
    /// (cycle, request) of read bursts whose data is on its way, in cycle order.
    completions: VecDeque<(u64, u32)>,
    reqs: Vec<ReqState>,
    free_reqs: Vec<u32>,
    live: usize,
    ports: Vec<Port>,
    port_of_in: Vec<u32>,
    port_of_out: Vec<u32>,
    blocked_ports: usize,
    /// Few ports: an arrival wake takes every port's arrivals, in rotating port order.
    poll: bool,
    /// The ports with arrivals to take (polled at an arrival wake, or noted by each delivery
    /// and taken when the tick settles).
    arrived: PortSet,
    settle: Settle,
    timer_at: Tick,
    out: RunOut,
    log: Option<Vec<IssuedCommand>>,
    counters: DramCounters,
    ids: StatIds,
    fault: Option<DramFault>,
    read_latency: u64,
    /// Cycles from a WR to the end of its data burst (nCWL + nBL), and of one burst (nBL).
    write_latency: u64,
    burst_cycles: u64,
    /// Cycles at which the first data burst began (`u64::MAX`: none yet) and the last ended;
    /// ticks only when the counters are read.
    data_cycles: (u64, u64),
    capacity: u64,
    pcs: u32,
    /// Bursts per interleave chunk (consecutive bursts in one bank and row).
    chunk: u32,
    /// log2 of the burst size, if it is a power of two.
    burst_shift: Option<u32>,
    bank_groups: u32,
    banks: u32,
    /// Bursts queued to be written, by burst address: a read of only such bursts is answered
    /// from the write queues, as DRAMsim3 and Ramulator 2 do.
    queued_writes: AddressMap<u32>,
    /// Run every controller with work at every memory cycle (see [`Dram::set_run_every_cycle`]).
    every_cycle: bool,
    _msg: PhantomData<fn() -> M>,
}

impl<M> Dram<M> {
    /// A DRAM named `name` built from `spec`, answering on `ports` (input link, output link)
    /// pairs; registers its statistics under `name` in `stats`.
    pub fn new(
        name: &str,
        spec: &DramSpec,
        ports: &[(LinkId, LinkId)],
        stats: &mut Stats,
    ) -> Result<Self, DramError> {
        let ids = StatIds::register(stats, name, spec.controllers())?;
        let device = Device::new(spec);
        let o = spec.organization();
        let mut ctrls = Vec::with_capacity(spec.controllers() as usize);
        for ch in 0..o.channels {
            for pc in 0..o.pseudo_channels {
                ctrls.push(Controller::new(spec, &device, ch, pc));
            }
        }
        let map = |f: fn(&(LinkId, LinkId)) -> LinkId| {
            let max = ports.iter().map(|p| f(p).index()).max().map_or(0, |m| m + 1);
            let mut v = vec![u32::MAX; max];
            for (i, p) in ports.iter().enumerate() {
                v[f(p).index()] = i as u32;
            }
            v
        };
        let counters = DramCounters { served: vec![0; ctrls.len()], ..DramCounters::default() };
        Ok(Dram {
            name: name.to_string(),
            ticker: Ticker::new(spec.clock(), spec.tck_ps_exact()),
            wake_at: vec![u64::MAX; ctrls.len()],
            min_wake: u64::MAX,
            ctrls,
            device,
            completions: VecDeque::with_capacity(1024),
            reqs: Vec::new(),
            free_reqs: Vec::new(),
            live: 0,
            port_of_in: map(|p| p.0),
            port_of_out: map(|p| p.1),
            ports: ports
                .iter()
                .map(|&(inp, out)| Port { inp, out, waiting: VecDeque::new(), split: None })
                .collect(),
            blocked_ports: 0,
            poll: ports.len() <= POLL_PORTS,
            arrived: PortSet::new(ports.len()),
            settle: Settle::default(),
            timer_at: Tick::MAX,
            out: RunOut::default(),
            log: None,
            counters,
            ids,
            fault: None,
            read_latency: spec.read_latency(),
            write_latency: spec.timing("nCWL").unwrap_or(0) + spec.timing("nBL").unwrap_or(0),
            burst_cycles: spec.timing("nBL").unwrap_or(0),
            data_cycles: (u64::MAX, 0),
            capacity: spec.capacity_bytes(),
            pcs: o.pseudo_channels,
            chunk: (spec.interleave_bytes() / spec.burst_bytes()) as u32,
            burst_shift: spec.burst_bytes().is_power_of_two().then(|| spec.burst_bytes().trailing_zeros()),
            bank_groups: o.bank_groups,
            banks: o.banks,
            queued_writes: AddressMap::default(),
            every_cycle: false,
            spec: spec.clone(),
            _msg: PhantomData,
        })
    }

    /// The specification it was built from.
    pub fn spec(&self) -> &DramSpec {
        &self.spec
    }

    /// A snapshot of its counters.
    pub fn counters(&self) -> DramCounters {
        let mut c = self.counters.clone();
        let first = self.data_cycles.0;
        c.first_data_tick = (first != u64::MAX).then(|| self.ticker.tick(first));
        c.last_data_tick = self.last_data_tick();
        c
    }

    /// When the last data burst so far ends (0 before any): [`DramCounters::last_data_tick`].
    pub fn last_data_tick(&self) -> Tick {
        let (first, last) = self.data_cycles;
        if first == u64::MAX { 0 } else { self.ticker.tick(last) }
    }

    /// Turns the command log on (clearing it) or off.
    pub fn set_command_log(&mut self, on: bool) {
        self.log = on.then(Vec::new);
    }

    /// Verification mode: every controller with work runs at every memory cycle, not only at
    /// the cycle its scheduler predicted. A controller's run at a cycle where nothing can issue
    /// changes nothing (its contract), so the commands issued, and every answer, must be those
    /// of a normal run; a difference means some prediction came too late and the model issued
    /// a command later than its policy says (`mem-model/tests/dram_schedule.rs`). Many times
    /// slower: for tests.
    pub fn set_run_every_cycle(&mut self, on: bool) {
        self.every_cycle = on;
    }

    /// Commands issued since the log was turned on (empty when it is off).
    pub fn command_log(&self) -> &[IssuedCommand] {
        self.log.as_deref().unwrap_or(&[])
    }

    /// The first request refused for lying outside the capacity, if any.
    pub fn fault(&self) -> Option<&DramFault> {
        self.fault.as_ref()
    }

    /// Requests accepted and not yet finished (answered reads; issued writes).
    pub fn outstanding(&self) -> usize {
        self.live
    }

    fn queued(&self) -> (u64, u64) {
        self.ctrls.iter().fold((0, 0), |(r, w), c| {
            let (a, b) = c.queued();
            (r + u64::from(a), w + u64::from(b))
        })
    }
}

impl<M> Dram<M>
where
    M: Carries<MemRequest> + Carries<MemResponse>,
{
    /// Pulls requests from port `p` until its link is empty or a queue is full; `after_runs`:
    /// into room that the current cycle's runs freed (see [`Dram::feed`]).
    fn pull(&mut self, p: usize, after_runs: bool, ctx: &mut Ctx<'_, M>) {
        loop {
            if self.ports[p].split.is_some() {
                if !self.feed(p, after_runs, ctx) {
                    return;
                }
                continue;
            }
            let Some(msg) = ctx.recv(self.ports[p].inp) else { return };
            // A memory only understands requests; anything else is a wiring error that the
            // watchdog reports as a stuck requester, so it is dropped here.
            if let Ok(req) = Carries::<MemRequest>::unwrap_as(msg) {
                self.admit(p, req, ctx);
            }
        }
    }

    /// Takes a new request: checks its range and starts queueing its bursts.
    fn admit(&mut self, p: usize, req: MemRequest, ctx: &mut Ctx<'_, M>) {
        let now = ctx.now();
        let len = u64::from(req.bytes.max(1));
        let in_range = req.addr.checked_add(len).is_some_and(|end| end <= self.capacity);
        if !in_range {
            self.counters.faults += 1;
            ctx.stats().inc(self.ids.faults);
            if self.fault.is_none() {
                self.fault = Some(DramFault {
                    id: req.id,
                    addr: req.addr,
                    bytes: req.bytes,
                    capacity: self.capacity,
                    tick: now,
                });
            }
            return;
        }
        let burst = self.spec.burst_bytes();
        let (start, end) = match self.burst_shift {
            Some(s) => (req.addr >> s << s, (req.addr + len + burst - 1) >> s << s),
            None => (req.addr - req.addr % burst, (req.addr + len).div_ceil(burst) * burst),
        };
        let s = ctx.stats();
        if req.write {
            self.counters.writes += 1;
            self.counters.bytes_written += u64::from(req.bytes);
            s.inc(self.ids.writes);
            s.add(self.ids.bytes_written, u64::from(req.bytes));
        } else {
            self.counters.reads += 1;
            self.counters.bytes_read += u64::from(req.bytes);
            s.inc(self.ids.reads);
            s.add(self.ids.bytes_read, u64::from(req.bytes));
            if self.forwardable(start, end) {
                let chunk = self.spec.interleave_bytes();
                self.counters.forwarded_reads += 1;
                self.counters.forwarded_row_accesses += (end - 1) / chunk - start / chunk + 1;
                s.inc(self.ids.forwarded_reads);
                // Answered from the write queues at once, the link adding its latency.
                self.send(p, req.respond(), ctx);
                return;
            }
        }
        let bursts = u32::try_from((end - start) / burst).unwrap_or(u32::MAX);
        let state = ReqState { req, arrival: now, port: p as u32, remaining: bursts };
        let slot = match self.free_reqs.pop() {
            Some(s) => {
                self.reqs[s as usize] = state;
                s
            }
            None => {
                self.reqs.push(state);
                (self.reqs.len() - 1) as u32
            }
        };
        self.live += 1;
        self.ports[p].split = Some(Split { slot, next: start, end });
    }

    /// Takes the requests of the ports in `arrived`, port by port from a first port that moves
    /// by one every memory cycle, and empties it.
    fn take_arrived(&mut self, ctx: &mut Ctx<'_, M>) {
        let first = (self.ticker.cycle_floor(ctx.now()) % self.ports.len().max(1) as u64) as usize;
        let mut walk = RoundRobin::new(first);
        while let Some(p) = walk.next(&self.arrived) {
            self.arrived.remove(p);
            // A port with a request half queued waits for space, keeping arrival order.
            if self.ports[p].split.is_none() {
                self.pull(p, false, ctx);
            }
        }
    }

    /// Whether every burst of `start..end` is queued to be written: a read of them is answered
    /// from the write queues.
    #[inline]
    fn forwardable(&self, start: u64, end: u64) -> bool {
        let burst = self.spec.burst_bytes();
        !self.queued_writes.is_empty()
            && (start..end).step_by(burst as usize).all(|a| self.queued_writes.contains_key(&a))
    }

    /// The address of the burst at `column` of `row` in bank `bank` of controller `ctrl`.
    fn burst_address(&self, ctrl: usize, bank: u16, row: u32, column: u32) -> Option<u64> {
        let (ch, pc) = (ctrl as u32 / self.pcs, ctrl as u32 % self.pcs);
        let a = Controller::bank_addr((self.bank_groups, self.banks), ch, pc, u32::from(bank), row, column);
        self.spec.mapping().encode(&a)
    }

    /// Queues the remaining bursts of port `p`'s current request; false if a queue is full.
    /// `after_runs`: into room that the current cycle's runs freed. They are over, so what it
    /// queues waits for the next cycle, and sleepers replay what they owe up to this one.
    fn feed(&mut self, p: usize, after_runs: bool, ctx: &mut Ctx<'_, M>) -> bool {
        let Some(mut split) = self.ports[p].split else { return true };
        let burst = self.spec.burst_bytes();
        let write = self.reqs[split.slot as usize].req.write;
        let cycle = self.ticker.cycle_ceil(ctx.now());
        while split.next < split.end {
            let Some(a) = self.spec.mapping().decode(split.next) else { break };
            let i = self.spec.mapping().controller_of(&a) as usize;
            // The bursts left in this interleave chunk share the bank and row: one entry.
            let left = match self.burst_shift {
                Some(s) => (split.end - split.next) >> s,
                None => (split.end - split.next) / burst,
            };
            let lo = if self.chunk.is_power_of_two() {
                a.column & (self.chunk - 1)
            } else {
                a.column % self.chunk
            };
            let run = u64::from(self.chunk - lo).min(left);
            let n = run.min(u64::from(self.ctrls[i].room(write))).min(u64::from(u16::MAX));
            if n == 0 {
                self.ports[p].split = Some(split);
                self.blocked_ports += 1;
                return false;
            }
            if self.ctrls[i].is_idle() {
                // Before any run of this cycle, sleepers owing a refresh now run in index order;
                // after them, they replay what they owe up to and including this cycle.
                let ch = i / self.pcs as usize;
                let before = if after_runs { usize::MAX } else { ch * self.pcs as usize };
                self.catch_up(ch, cycle, before, ctx.stats());
                self.absorb(ctx);
            }
            let bank = Controller::bank_index((self.bank_groups, self.banks), &a);
            // The rest of a chunk that a full queue cut: the same row access as its first part,
            // which was queued first and is classified for both.
            let counted = lo != 0 && split.next / burst > self.reqs[split.slot as usize].req.addr / burst;
            let run = BurstRun {
                write,
                bank,
                row: a.row,
                column: a.column,
                count: n as u16,
                req: split.slot,
                counted,
            };
            let mut wake = self.ctrls[i].push(&self.device, run, cycle);
            if self.every_cycle {
                wake = cycle;
            }
            if after_runs {
                wake = wake.max(cycle + 1);
            }
            self.wake_at[i] = self.wake_at[i].min(wake);
            self.min_wake = self.min_wake.min(wake);
            if write {
                for k in 0..n {
                    *self.queued_writes.entry(split.next + k * burst).or_default() += 1;
                }
            }
            split.next += n * burst;
        }
        self.ports[p].split = None;
        if write {
            // Posted write: acknowledged once the controllers hold all its data.
            let r = self.reqs[split.slot as usize];
            self.send(r.port as usize, r.req.respond(), ctx);
        }
        true
    }

    /// Sends (or queues behind a full link) a response on port `p`.
    fn send(&mut self, p: usize, resp: MemResponse, ctx: &mut Ctx<'_, M>) {
        let port = &mut self.ports[p];
        if !port.waiting.is_empty() {
            port.waiting.push_back(resp);
            return;
        }
        if let Err(msg) = ctx.send(port.out, M::wrap(resp)) {
            // Woken by Wake::Space when the requester pops.
            if let Ok(resp) = Carries::<MemResponse>::unwrap_as(msg) {
                port.waiting.push_back(resp);
            }
        }
        ctx.progress();
    }

    fn drain(&mut self, p: usize, ctx: &mut Ctx<'_, M>) {
        let port = &mut self.ports[p];
        while let Some(resp) = port.waiting.pop_front() {
            if let Err(msg) = ctx.send(port.out, M::wrap(resp)) {
                if let Ok(resp) = Carries::<MemResponse>::unwrap_as(msg) {
                    port.waiting.push_front(resp);
                }
                return;
            }
        }
    }

    fn free_req(&mut self, slot: u32) {
        self.free_reqs.push(slot);
        self.live -= 1;
    }

    /// One read burst's data has returned.
    fn complete(&mut self, slot: u32, ctx: &mut Ctx<'_, M>) {
        let r = &mut self.reqs[slot as usize];
        r.remaining = r.remaining.saturating_sub(1);
        if r.remaining > 0 {
            return;
        }
        let r = *r;
        let latency = ctx.now().saturating_sub(r.arrival);
        self.counters.read_responses += 1;
        self.counters.read_latency_sum_ps = self.counters.read_latency_sum_ps.saturating_add(latency);
        self.counters.read_latency_max_ps = self.counters.read_latency_max_ps.max(latency);
        ctx.stats().record(self.ids.read_latency, latency);
        self.send(r.port as usize, r.req.respond(), ctx);
        self.free_req(slot);
    }

    /// Books the commands the controllers just issued (in the order they issued them).
    fn absorb(&mut self, ctx: &mut Ctx<'_, M>) {
        self.absorb_into(ctx.stats());
    }

    fn absorb_into(&mut self, stats: &mut Stats) {
        let mut out = std::mem::take(&mut self.out);
        for is in out.issued.drain(..) {
            self.book(usize::from(is.ctrl), &is, stats);
        }
        if out.drains > 0 {
            self.counters.write_drains += u64::from(out.drains);
            stats.add(self.ids.write_drains, u64::from(out.drains));
            out.drains = 0;
        }
        // `out.freed` accumulates: `advance` retries blocked ports once the cycle's runs are done,
        // and clears it.
        self.out = out;
    }

    fn book(&mut self, i: usize, is: &Issued, stats: &mut Stats) {
        let cmd = is.cmd;
        self.counters.commands[cmd.index()] += 1;
        stats.inc(self.ids.commands[cmd.index()]);
        match cmd {
            Command::Act => stats.inc(self.ids.activations),
            Command::Pre | Command::PreA => stats.inc(self.ids.precharges),
            Command::RefAb | Command::RefPb => stats.inc(self.ids.refreshes),
            _ => {}
        }
        if let Some(log) = &mut self.log {
            let b = u32::from(is.bank);
            let per_rank = self.bank_groups * self.banks;
            log.push(IssuedCommand {
                tick: self.ticker.tick(is.cycle),
                cycle: is.cycle,
                cmd,
                channel: i as u32 / self.pcs,
                pseudo_channel: i as u32 % self.pcs,
                rank: b / per_rank,
                bank_group: (b / self.banks) % self.bank_groups,
                bank: b % self.banks,
                row: is.row,
                column: is.column,
            });
        }
        if !cmd.is_column() || is.req == NO_REQ {
            return;
        }
        self.counters.served[i] += 1;
        stats.inc(self.ids.served[i]);
        if is.first != FIRST_COUNTED {
            let (counter, id) = match is.first {
                FIRST_ACT => (&mut self.counters.row_misses, self.ids.row_misses),
                FIRST_PRE => (&mut self.counters.row_conflicts, self.ids.row_conflicts),
                _ => (&mut self.counters.row_hits, self.ids.row_hits),
            };
            *counter += 1;
            stats.inc(id);
        }
        let data_end = is.cycle + if cmd.is_read() { self.read_latency } else { self.write_latency };
        let (first, last) = &mut self.data_cycles;
        *first = (*first).min(data_end.saturating_sub(self.burst_cycles));
        *last = (*last).max(data_end);
        if cmd.is_read() {
            self.counters.bursts_read += 1;
            stats.inc(self.ids.bursts_read);
            self.completions.push_back((is.cycle + self.read_latency, is.req));
        } else {
            self.counters.bursts_written += 1;
            stats.inc(self.ids.bursts_written);
            if let Some(a) = self.burst_address(i, is.bank, is.row, is.column)
                && let Some(n) = self.queued_writes.get_mut(&a)
            {
                *n -= 1;
                if *n == 0 {
                    self.queued_writes.remove(&a);
                }
            }
            let r = &mut self.reqs[is.req as usize];
            r.remaining = r.remaining.saturating_sub(1);
            if r.remaining == 0 {
                self.free_req(is.req);
            }
        }
    }

    /// Books the refreshes that pseudo-channels asleep at the end of a run owed up to `end`
    /// (the run's last tick). A sleeping pseudo-channel replays its refreshes only when it or
    /// a sibling next has work, so without this a channel idle at the end would count none
    /// after its last command. Call once, after the last engine run.
    pub fn finish(&mut self, end: Tick, stats: &mut Stats) {
        let cycle = self.ticker.cycle_floor(end);
        for i in 0..self.ctrls.len() {
            // Awake only for a refresh (the run stopped with its timer pending): replayed too.
            if self.ctrls[i].queued() == (0, 0) {
                self.wake_at[i] = u64::MAX;
            }
        }
        for ch in 0..self.ctrls.len() / self.pcs as usize {
            self.catch_up(ch, cycle, usize::MAX, stats);
        }
        self.absorb_into(stats);
    }

    /// Replays, merged in time order, the refreshes that the sleeping controllers of channel
    /// `ch` owe up to `cycle`, and wakes any left owing one it cannot issue yet. Called before
    /// controller `before` (an index) runs at `cycle`: the sleepers' refreshes happened before
    /// its commands, and the channel's command buses must see them in that order (replayed
    /// later, they would all be pushed past the last command of a busy sibling, blocking their
    /// banks for microseconds). Within `cycle` itself controllers go in index order, as if
    /// every one ran every cycle: a sleeper below `before` replays what it owes at `cycle`,
    /// one at or above it is woken to run at `cycle` in its turn.
    fn catch_up(&mut self, ch: usize, cycle: u64, before: usize, stats: &mut Stats) {
        let sleepers = self.channel_ctrls(ch);
        loop {
            // A long idle spell owes many refreshes: book them as they go, not all at the end.
            if self.out.issued.len() >= CATCH_UP_BATCH {
                self.absorb_into(stats);
            }
            let mut best: Option<(usize, Owed)> = None;
            for j in sleepers.clone() {
                if self.wake_at[j] != u64::MAX {
                    continue;
                }
                if let Some(o) = self.ctrls[j].owed(&self.device, cycle)
                    && (o.at < cycle || j < before)
                    && best.is_none_or(|(_, b)| o.at < b.at)
                {
                    best = Some((j, o));
                }
            }
            let Some((j, o)) = best else { break };
            if self.skip_idle_periods(ch, o.at, cycle, stats) {
                continue;
            }
            self.ctrls[j].replay(&mut self.device, o, &mut self.out);
        }
        for j in sleepers {
            if self.wake_at[j] == u64::MAX && self.ctrls[j].refresh.any_pending() {
                let at = if j < before { cycle + 1 } else { cycle };
                self.wake_at[j] = at;
                self.min_wake = self.min_wake.min(at);
            }
        }
    }

    /// Skips whole refresh periods of a channel that only refreshes, when the replay has reached
    /// `at` and must go on to `cycle`: every pseudo-channel asleep with its banks closed, at
    /// least two periods past the channel's last other command (by then every refresh goes at
    /// its due cycle, so one period repeats the one before it exactly, shifted), and at least
    /// three periods still to replay (the last two are replayed as they come). The device's
    /// timing slots and the refresh schedules move by the periods skipped and their refreshes
    /// are counted, so everything after is as if each had been issued; the command log, which
    /// would miss them, turns it off. Replaying is linear in idle time: a trace idle for
    /// seconds would otherwise replay millions of refreshes per pseudo-channel.
    fn skip_idle_periods(&mut self, ch: usize, at: u64, cycle: u64, stats: &mut Stats) -> bool {
        let ctrls = self.channel_ctrls(ch);
        let Some((period, _, _)) = self.ctrls[ctrls.start].refresh.pattern() else { return false };
        let last_work = ctrls.clone().map(|j| self.ctrls[j].last_work).max().unwrap_or(0);
        if self.log.is_some()
            || at < last_work.saturating_add(2 * period)
            || cycle < at.saturating_add(3 * period)
            || ctrls.clone().any(|j| self.wake_at[j] != u64::MAX || self.ctrls[j].any_open())
        {
            return false;
        }
        let k = (cycle - at) / period - 2;
        let by = k * period;
        self.counters.refresh_periods_skipped += k;
        self.device.shift(ch, by);
        for j in ctrls {
            let refresh = &mut self.ctrls[j].refresh;
            refresh.shift(by);
            let Some((_, n, cmd)) = refresh.pattern() else { continue };
            let n = n * k;
            self.counters.commands[cmd.index()] += n;
            stats.add(self.ids.commands[cmd.index()], n);
            stats.add(self.ids.refreshes, n);
        }
        true
    }

    /// Whether a sleeping controller of channel `ch` owes a refresh by `cycle`.
    #[inline]
    fn sleepers_owe(&self, ch: usize, cycle: u64) -> bool {
        self.channel_ctrls(ch)
            .any(|j| self.wake_at[j] == u64::MAX && self.ctrls[j].refresh.next_due() <= cycle)
    }

    /// The indices of channel `ch`'s controllers (channel-major).
    #[inline]
    fn channel_ctrls(&self, ch: usize) -> std::ops::Range<usize> {
        let first = ch * self.pcs as usize;
        first..first + self.pcs as usize
    }

    /// Does everything due at the current tick: data returns and controller runs.
    fn advance(&mut self, ctx: &mut Ctx<'_, M>) {
        let now = ctx.now();
        let cycle = self.ticker.cycle_floor(now);
        while let Some(&(done, slot)) = self.completions.front() {
            if done > cycle {
                break;
            }
            self.completions.pop_front();
            self.complete(slot, ctx);
        }
        // One pass, in index order: every controller due runs once a cycle, as if all ran every
        // cycle; then blocked ports take the room it freed (module docs).
        if self.min_wake <= cycle {
            self.min_wake = u64::MAX;
            for i in 0..self.ctrls.len() {
                if self.wake_at[i] <= cycle {
                    if self.pcs > 1 {
                        let ch = i / self.pcs as usize;
                        if self.sleepers_owe(ch, cycle) {
                            self.catch_up(ch, cycle, i, ctx.stats());
                        }
                    }
                    let mut next = self.ctrls[i].run(&mut self.device, cycle, &mut self.out);
                    if self.every_cycle && next != u64::MAX {
                        next = cycle + 1;
                    }
                    self.wake_at[i] = next;
                }
                self.min_wake = self.min_wake.min(self.wake_at[i]);
            }
            self.absorb(ctx);
            if self.out.freed > 0 && self.blocked_ports > 0 {
                self.retry_blocked(ctx);
            }
        }
        self.out.freed = 0;
    }

    /// Lets the blocked ports take the room that the current cycle's runs freed.
    fn retry_blocked(&mut self, ctx: &mut Ctx<'_, M>) {
        self.blocked_ports = 0;
        for p in 0..self.ports.len() {
            if self.ports[p].split.is_some() {
                self.pull(p, true, ctx);
            }
        }
    }

    /// Keeps one engine timer at the earliest pending cycle.
    fn rearm(&mut self, ctx: &mut Ctx<'_, M>) {
        let next = self.completions.front().map_or(u64::MAX, |c| c.0).min(self.min_wake);
        if next == u64::MAX {
            return;
        }
        let t = self.ticker.tick(next).max(ctx.now());
        if t < self.timer_at {
            self.timer_at = t;
            ctx.schedule_at(t, Priority::DEFAULT, 0);
        }
    }
}

impl<M> Component for Dram<M>
where
    M: Carries<MemRequest> + Carries<MemResponse>,
{
    type Msg = M;

    fn name(&self) -> &str {
        &self.name
    }

    /// With at most [`POLL_PORTS`] ports it polls them all at any arrival wake, in a port order
    /// that rotates every memory cycle. With more, each arrival wake notes its port, and the
    /// tick's ports are taken in the same rotating order once the tick's deliveries are over.
    fn takes_every_input(&self) -> bool {
        self.poll
    }

    fn wake(&mut self, why: Wake, ctx: &mut Ctx<'_, M>) {
        match why {
            Wake::Arrival(_) if self.poll => {
                for p in 0..self.ports.len() {
                    if ctx.peek(self.ports[p].inp).is_some() {
                        self.arrived.insert(p);
                    }
                }
                self.take_arrived(ctx);
            }
            Wake::Arrival(link) => {
                let p = self.port_of_in.get(link.index()).copied().unwrap_or(u32::MAX) as usize;
                if p < self.ports.len() {
                    self.arrived.insert(p);
                    self.settle.book(ctx);
                }
                return;
            }
            Wake::Timer(SETTLE) => {
                self.settle.take(ctx.now());
                self.take_arrived(ctx);
            }
            Wake::Timer(_) => {
                if ctx.now() >= self.timer_at {
                    self.timer_at = Tick::MAX;
                }
                self.advance(ctx);
            }
            Wake::Space(link) => {
                let p = self.port_of_out.get(link.index()).copied().unwrap_or(u32::MAX) as usize;
                if p < self.ports.len() {
                    self.drain(p, ctx);
                }
            }
            Wake::Start => {}
        }
        self.rearm(ctx);
    }

    fn busy(&self) -> bool {
        self.live > 0 || self.ports.iter().any(|p| !p.waiting.is_empty() || p.split.is_some())
    }

    fn status(&self) -> String {
        let (r, w) = self.queued();
        let mut s = format!(
            "{} requests in flight, {r} read and {w} write bursts queued, {} data returns pending",
            self.live,
            self.completions.len()
        );
        if let Some(f) = &self.fault {
            s.push_str(&format!("; faulted: {f}"));
        }
        s
    }
}

// The command count array and the log must agree on the command set.
const _: () = assert!(NUM_COMMANDS == Command::ALL.len());

#[cfg(test)]
mod tests {
    use super::Ticker;

    #[test]
    fn the_reciprocal_divides_exactly() {
        for p in [1u64, 2, 3, 416, 625, 1000, 1_000_003] {
            let inv = if p == 1 { 0 } else { u64::MAX / p };
            let mut x = 0x9E37_79B9_7F4A_7C15u64;
            for t in (0..10_000u64).chain([u64::MAX, u64::MAX - 1, u64::MAX / 2]) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                for v in [t, x, x >> 20] {
                    assert_eq!(Ticker::div(v, p, inv), v / p, "{v} / {p}");
                }
            }
        }
    }
}
