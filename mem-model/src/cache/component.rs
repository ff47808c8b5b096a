//! The cache as an engine component.
//!
//! Contract: a [`Cache`] accepts [`MemRequest`]s on one or more upstream ports (an input link of
//! requests and an output link of responses each) and answers every one exactly once, on the port
//! it came from, with a [`MemResponse`] carrying the request's own id; ids of different ports may
//! collide and are never confused. Downstream it sends reads (fills) and writes (write-backs,
//! bypassed writes) on one request link with ids of its own, and takes the answers on one
//! response link; answers to its writes are absorbed.
//!
//! Timing, in cycles of the cache's clock (work that arrives between edges starts at the next
//! edge):
//! - a request is split into line accesses, one tag lookup each; `lookups_per_cycle` lookups
//!   happen per cycle over all ports (round robin), and the request is answered once all its
//!   line accesses are done, at the latest of their ready times;
//! - a read access that hits is ready `hit_latency_cycles` after its lookup; one that misses is
//!   ready `hit_latency_cycles` after the fill that completes it arrives (the fill goes through
//!   the same pipeline as a hit), so an unloaded miss costs the hit latency plus the downstream
//!   round trip;
//! - a write access is ready `hit_latency_cycles` after its lookup, hit or miss (write-back,
//!   write-allocate: the write waits in the line, or in the MSHR's fetch, not in the requester);
//! - a fetch reads exactly the sectors needed and not yet valid or on their way: a read miss
//!   those the access touches, a read of a present line those it lacks, a write (miss or not)
//!   those it writes partially (a write covering whole sectors needs no fetch). It sends one
//!   downstream read per run of consecutive sectors (a request is an address and a size, not a
//!   sector mask), so the usual fetch, a single run, is one read; its MSHR retires when all its
//!   reads are back;
//! - misses to a line with a fetch in flight merge into its MSHR (no second read); a read that
//!   needs sectors the MSHR is not fetching adds a fetch of those to it;
//! - an evicted line writes back its dirty sectors only, one downstream write per run of them;
//! - what a lookup sends downstream (fetches, write-backs, forwarded writes) leaves at the
//!   lookup's edge, not at the tick the request arrived (or later, while the link refuses).
//!
//! Back-pressure: a port's request is taken off its link into a one-entry holding register and
//! looked up from there; when it cannot proceed (no MSHR, no target slot, its fetch's reads
//! would take the reads in flight past the MSHR count, its write-back's writes would overflow
//! the write buffer, or too many of the port's answers waiting) it stays there and the port
//! takes nothing more, so its link fills and the requester is refused; a stalled lookup changes
//! nothing, replacement state included. A fetch (write-back) of more runs than the MSHR count
//! (write buffer) goes when no read (write) is queued or in flight, so it never waits forever;
//! a single run needs one free slot, as it always did. A miss whose
//! set has every way locked by fetches does not wait: it is served without allocating. Nothing
//! is dropped. Fills are always taken, so the cache never blocks the level below. The cache
//! sleeps when idle: it runs on arrivals, freed link slots and its own timers, set only for
//! known work (the next answer due, the next cycle's lookups).
//!
//! Order: lookups go round robin over the ports with a request, from a pointer that moves past
//! each port offered a turn; a tick's requests are looked up as if the tick's first wake-up had
//! found them all (see [`super::ports`]), whatever the order in which the engine delivered them.
//!
//! Cost: a wake-up visits only the ports with something to do (a request arrived or being
//! looked up, an answer due), found from the link that woke it and from a queue of answer due
//! times, so a cache with many idle ports costs no more per request than one with a single port.

use super::config::{CacheConfig, CacheConfigError, CacheGeometry, NonTemporalPolicy};
use super::cycles::CycleTracker;
use super::mshr::{MshrFile, Target};
use super::ports::{LinkRoles, PortSet, RoundRobin, SCAN_LINKS, SETTLE, Settle};
use super::replacement::{Replacement, ReplacementPolicy};
use super::sector::{SectorMask, Sectors};
use super::tags::{Lookup, NO_MSHR, TagArray};
use crate::{MemRequest, MemResponse};
use sim_core::{
    Carries, Clock, Component, CounterId, Ctx, HistogramId, LinkId, Priority, SeedTree, Stats, StatsError,
    Tick, Wake,
};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::marker::PhantomData;
use thiserror::Error;

/// Downstream ids of writes have this bit set; their answers are absorbed.
const WRITE_ID: u64 = 1 << 63;
/// No request index.
const NONE: u32 = u32::MAX;
/// Largest latency the latency histograms resolve, in cycles (larger values are clamped).
const LATENCY_HISTOGRAM_MAX: u64 = 1 << 24;

/// The links of a cache.
#[derive(Debug, Clone, Copy)]
pub struct CacheLinks<'a> {
    /// Upstream ports: (input link of requests, output link of responses), one pair each.
    pub upstream: &'a [(LinkId, LinkId)],
    /// Requests to the next level.
    pub down_req: LinkId,
    /// Responses from the next level.
    pub down_resp: LinkId,
}

/// Why a cache could not be built.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum CacheBuildError {
    /// The configuration is impossible.
    #[error(transparent)]
    Config(#[from] CacheConfigError),
    /// A statistic name collides.
    #[error(transparent)]
    Stats(#[from] StatsError),
    /// A cache must serve at least one upstream port.
    #[error("cache {name}: no upstream port")]
    NoUpstream {
        /// The cache's name.
        name: String,
    },
}

/// The cache's event counts (also registered as statistics under the cache's name).
///
/// Lookup outcomes count line accesses: a request crossing a line boundary counts once per line.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheCounters {
    /// Read requests accepted from upstream.
    pub reads: u64,
    /// Write requests accepted from upstream.
    pub writes: u64,
    /// Accesses that found every sector they need (or, for writes, the line) present.
    pub hits: u64,
    /// Accesses whose line was absent, other than bypasses and merges: allocated, or served
    /// without a way (`set_busy_misses`).
    pub misses: u64,
    /// Accesses whose line was present but that had to fetch missing sectors.
    pub sector_misses: u64,
    /// Accesses that merged into a fetch already in flight.
    pub merged: u64,
    /// Non-temporal misses that allocated nothing (reads relayed, writes forwarded).
    pub bypasses: u64,
    /// Valid lines evicted to make room.
    pub evictions: u64,
    /// Write-backs sent downstream: one write per run of consecutive dirty sectors of an evicted
    /// line (one per dirty line when its dirty sectors are consecutive, as in any unsectored
    /// cache), as `fills` counts one per read.
    pub writebacks: u64,
    /// Fill answers received from downstream.
    pub fills: u64,
    /// Times a port stalled for want of an MSHR, a target slot or a read slot.
    pub mshr_full_stalls: u64,
    /// Misses served without allocating because every way of the set had a fetch in flight
    /// (counted in `misses` too).
    pub set_busy_misses: u64,
    /// Times a port stalled because the write-back buffer was full.
    pub writeback_full_stalls: u64,
    /// Sectors (of this cache's sector size) that the requests accepted from upstream touch: the
    /// traffic between this level and the one above (a GPU's L2 and its SMs).
    pub upstream_sectors: u64,
    /// Fill answers (in `fills`) for misses that allocated no way (bypasses, set-busy misses):
    /// relayed upstream, written into no line, so `fills - relayed_fills` is what the array
    /// was written.
    pub relayed_fills: u64,
}

/// How many counts [`CacheCounters`] has.
const COUNTS: usize = 15;

/// Statistic ids, in the order of [`CacheCounters`]' fields.
struct StatIds {
    counters: [CounterId; COUNTS],
    hit_latency: HistogramId,
    miss_latency: HistogramId,
}

/// Statistic names (leaves under the cache's name), in the order of [`CacheCounters`]' fields.
const COUNTER_NAMES: [&str; COUNTS] = [
    "reads",
    "writes",
    "hits",
    "misses",
    "sector_misses",
    "merged",
    "bypasses",
    "evictions",
    "writebacks",
    "fills",
    "mshr_full_stalls",
    "set_busy_misses",
    "writeback_full_stalls",
    "upstream_sectors",
    "relayed_fills",
];

/// Index of each count in the cache's count array, in the order of [`CacheCounters`]' fields.
#[derive(Debug, Clone, Copy)]
enum Count {
    Reads,
    Writes,
    Hits,
    Misses,
    SectorMisses,
    Merged,
    Bypasses,
    Evictions,
    Writebacks,
    Fills,
    MshrFullStalls,
    SetBusyMisses,
    WritebackFullStalls,
    UpstreamSectors,
    RelayedFills,
}

impl CacheCounters {
    fn from_array(c: [u64; COUNTS]) -> Self {
        Self {
            reads: c[Count::Reads as usize],
            writes: c[Count::Writes as usize],
            hits: c[Count::Hits as usize],
            misses: c[Count::Misses as usize],
            sector_misses: c[Count::SectorMisses as usize],
            merged: c[Count::Merged as usize],
            bypasses: c[Count::Bypasses as usize],
            evictions: c[Count::Evictions as usize],
            writebacks: c[Count::Writebacks as usize],
            fills: c[Count::Fills as usize],
            mshr_full_stalls: c[Count::MshrFullStalls as usize],
            set_busy_misses: c[Count::SetBusyMisses as usize],
            writeback_full_stalls: c[Count::WritebackFullStalls as usize],
            upstream_sectors: c[Count::UpstreamSectors as usize],
            relayed_fills: c[Count::RelayedFills as usize],
        }
    }
}

/// What a link is to this cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Other,
    Input(u32),
    Output(u32),
    DownReq,
}

/// Why a port's request could not be looked up now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stall {
    Mshr,
    Writeback,
    Answers,
}

/// The result of one line access.
enum Outcome {
    /// Done at the lookup: ready after the hit latency.
    Done,
    /// Waiting on an MSHR as a target.
    Waiting,
    /// Cannot proceed now.
    Stall(Stall),
}

/// One upstream port.
struct Port {
    inp: LinkId,
    out: LinkId,
    /// The request being looked up, taken off the input link.
    head: Option<MemRequest>,
    /// Line accesses of `head` done, and in all.
    next_part: u64,
    parts: u64,
    /// The request index of `head`, or `NONE` while it needs none.
    request: u32,
    /// Requests accepted and not yet answered.
    inflight: u32,
    /// Due ticks of the answers sent ahead of time ([`Ctx::send_at`]), in due order: until its
    /// due tick such an answer still counts against `answers_cap`, as it would waiting here.
    sent_ahead: VecDeque<Tick>,
    /// Answers and the tick each is due, in due order (while the link refuses, and after it).
    answers: VecDeque<(Tick, MemResponse)>,
    last_due: Tick,
    /// The output link refused; wait for `Wake::Space`.
    out_blocked: bool,
    stalled: Option<Stall>,
}

/// A request with line accesses still outstanding.
#[derive(Debug, Clone, Copy)]
struct Request {
    port: u32,
    resp: MemResponse,
    parts_left: u64,
    due_cycle: u64,
    start_cycle: u64,
    waited: bool,
}

/// A set-associative, sectored, write-back cache (see the module docs for its contract).
pub struct Cache<M> {
    name: String,
    geo: CacheGeometry,
    cycles: CycleTracker,
    sectors: Sectors,
    non_temporal: NonTemporalPolicy,
    tags: TagArray,
    policy: Replacement,
    mshrs: MshrFile,
    /// Downstream reads queued or in flight (at most the MSHR count, or the runs of one fetch).
    reads_in_flight: u32,
    /// Writes queued for downstream (at most the write-back buffer, or the runs of one
    /// write-back).
    writes_queued: u32,
    write_seq: u64,
    /// Requests for downstream, in order, each `issued` at the edge it leaves (or, while the link
    /// refuses, as soon after as it has room).
    down: VecDeque<MemRequest>,
    down_req: LinkId,
    down_resp: LinkId,
    down_blocked: bool,
    ports: Vec<Port>,
    role_of_link: LinkRoles<Role>,
    requests: Vec<Request>,
    free_requests: Vec<u32>,
    /// Most requests a port may have unanswered.
    answers_cap: u32,
    /// Answers go on the link when produced ([`CacheConfig::answers_ahead`]).
    answers_ahead: bool,
    /// Targets being completed by a fill (reused buffer).
    scratch: Vec<u32>,
    /// The cycle of the lookups being counted, its edge (where what they send leaves), and
    /// lookups used in it.
    cycle: u64,
    cycle_edge: Tick,
    used: u32,
    rr: usize,
    /// Ports offered lookups: those with a request being looked up or arrived on their link
    /// (and perhaps taken since: a port leaves when its link is found empty).
    ready: PortSet,
    /// (due tick of its first answer, port) of every port with answers whose link has not
    /// refused: one entry each.
    answer_due: BinaryHeap<Reverse<(Tick, u32)>>,
    /// The first of those due ticks (`Tick::MAX`: none), at hand without touching the queue.
    next_answer: Tick,
    /// Ports with an answer due now (reused set).
    due_ports: PortSet,
    now: Tick,
    /// Earliest timer pending, or `Tick::MAX`.
    armed: Tick,
    /// When a port stalled on `answers_cap` may go again: the first due tick of its answers sent
    /// ahead (`Tick::MAX`: no such stall).
    retire_at: Tick,
    /// The tick whose lookups wait for all its requests to be in.
    settle: Settle,
    /// Counts, the values last added to the statistics, and which differ (one bit per count):
    /// statistics are brought up to date at the end of every wake, touching only what changed.
    counts: [u64; COUNTS],
    flushed: [u64; COUNTS],
    changed: u16,
    ids: StatIds,
    _msg: PhantomData<fn() -> M>,
}

impl<M> Cache<M> {
    /// A cache named `name` (statistics go under it) in clock domain `clock`, wired to `links`.
    /// The random replacement policy draws from the stream `seeds.seed_for(name)`.
    pub fn new(
        name: &str,
        cfg: &CacheConfig,
        clock: Clock,
        links: CacheLinks<'_>,
        seeds: &SeedTree,
        stats: &mut Stats,
    ) -> Result<Self, CacheBuildError> {
        let geo = cfg.geometry()?;
        if links.upstream.is_empty() {
            return Err(CacheBuildError::NoUpstream { name: name.to_owned() });
        }
        let mut counters = [None; COUNTS];
        for (slot, leaf) in counters.iter_mut().zip(COUNTER_NAMES) {
            *slot = Some(stats.counter_in(name, leaf)?);
        }
        let ids = StatIds {
            counters: counters.map(|c| c.unwrap_or_else(|| unreachable!("every counter was registered"))),
            hit_latency: stats.histogram_in(name, "hit_latency", LATENCY_HISTOGRAM_MAX, 2)?,
            miss_latency: stats.histogram_in(name, "miss_latency", LATENCY_HISTOGRAM_MAX, 2)?,
        };
        let mut roles = vec![(links.down_req, Role::DownReq)];
        for (p, &(inp, out)) in links.upstream.iter().enumerate() {
            roles.extend([(inp, Role::Input(p as u32)), (out, Role::Output(p as u32))]);
        }
        let targets = u64::from(geo.mshrs) * u64::from(geo.mshr_targets);
        let in_pipeline = u64::from(geo.lookups_per_cycle) * (geo.hit_latency_cycles + 2);
        // Enough that the cap never binds before the MSHRs do; it only stops a requester that
        // keeps sending while it does not take its answers.
        let answers_cap = (targets + in_pipeline).min(u64::from(u32::MAX - 1)) as u32;
        let ports = links
            .upstream
            .iter()
            .map(|&(inp, out)| Port {
                inp,
                out,
                head: None,
                next_part: 0,
                parts: 0,
                request: NONE,
                inflight: 0,
                sent_ahead: VecDeque::new(),
                answers: VecDeque::with_capacity(answers_cap.min(4096) as usize),
                last_due: 0,
                out_blocked: false,
                stalled: None,
            })
            .collect::<Vec<_>>();
        let request_slots = targets as usize + ports.len();
        let seed = seeds.seed_for(name);
        Ok(Self {
            name: name.to_owned(),
            geo,
            cycles: CycleTracker::new(clock),
            sectors: Sectors::new(geo.line_shift, geo.sector_shift),
            non_temporal: cfg.non_temporal,
            tags: TagArray::new(geo.sets, geo.ways as usize),
            policy: Replacement::new(
                cfg.replacement,
                geo.sets as usize,
                geo.ways as usize,
                (seed >> 64) as u64 ^ seed as u64,
            ),
            mshrs: MshrFile::new(geo.mshrs, geo.mshr_targets),
            reads_in_flight: 0,
            writes_queued: 0,
            write_seq: 0,
            down: VecDeque::with_capacity((geo.mshrs + geo.writeback_buffer) as usize),
            down_req: links.down_req,
            down_resp: links.down_resp,
            down_blocked: false,
            ports,
            role_of_link: LinkRoles::new(&roles, Role::Other),
            requests: vec![
                Request {
                    port: 0,
                    resp: MemRequest::read(0, 0, 0, 0).respond(),
                    parts_left: 0,
                    due_cycle: 0,
                    start_cycle: 0,
                    waited: false,
                };
                request_slots
            ],
            free_requests: (0..request_slots as u32).rev().collect(),
            answers_cap,
            answers_ahead: cfg.answers_ahead,
            scratch: Vec::with_capacity(geo.mshr_targets as usize),
            cycle: 0,
            cycle_edge: 0,
            used: 0,
            rr: 0,
            ready: PortSet::new(links.upstream.len()),
            answer_due: BinaryHeap::with_capacity(links.upstream.len()),
            next_answer: Tick::MAX,
            due_ports: PortSet::new(links.upstream.len()),
            now: 0,
            armed: Tick::MAX,
            retire_at: Tick::MAX,
            settle: Settle::default(),
            counts: [0; COUNTS],
            flushed: [0; COUNTS],
            changed: 0,
            ids,
            _msg: PhantomData,
        })
    }

    /// This cache as one of `banks` banks of a shared cache that interleave runs of
    /// `run_lines` lines (a [`super::Crossbar`]'s granule over the line size; bank
    /// `(line / run_lines) % banks` without hashing): its sets are indexed with the bank's
    /// digit taken out of the line number, so every set is used. The same holds behind the
    /// crossbar's XOR hash, which only permutes the banks within each run of `banks` granules
    /// (see [`super::BankHash::Xor`]).
    pub fn interleaved(mut self, banks: u32, run_lines: u64) -> Self {
        let tags = std::mem::replace(&mut self.tags, TagArray::new(1, 1));
        self.tags = tags.interleaved(u64::from(banks), run_lines);
        self
    }

    /// The validated shape of this cache.
    pub fn geometry(&self) -> &CacheGeometry {
        &self.geo
    }

    /// Event counts so far (the same values as the registered statistics).
    pub fn counters(&self) -> CacheCounters {
        CacheCounters::from_array(self.counts)
    }

    /// Adds one to a count.
    #[inline]
    fn bump(&mut self, c: Count) {
        self.bump_by(c, 1);
    }

    /// Adds `n` to a count.
    #[inline]
    fn bump_by(&mut self, c: Count, n: u64) {
        self.counts[c as usize] += n;
        self.changed |= 1 << c as usize;
    }

    /// Whether every byte of `[addr, addr + bytes)` is in a valid sector of the cache.
    pub fn holds(&self, addr: u64, bytes: u64) -> bool {
        let end = addr.saturating_add(bytes.max(1));
        let ls = self.geo.line_shift;
        let lb = self.geo.line_bytes();
        (addr >> ls..=(end - 1) >> ls).all(|line| {
            let base = line << ls;
            let lo = addr.max(base) - base;
            let hi = end.min(base.saturating_add(lb)) - base;
            self.tags.holds(line, self.sectors.touched(lo, hi))
        })
    }

    /// Whether the line holding `addr` is present and has dirty sectors.
    pub fn is_dirty(&self, addr: u64) -> bool {
        let line = addr >> self.geo.line_shift;
        let set = self.tags.set_of(line);
        self.tags.find(set, line).is_some_and(|w| self.tags.way(set, w).dirty != 0)
    }

    /// MSHRs in use.
    pub fn mshrs_in_use(&self) -> usize {
        self.mshrs.active()
    }

    /// Requests accepted and not yet answered, over all ports.
    pub fn outstanding(&self) -> usize {
        self.ports.iter().map(|p| p.inflight as usize).sum()
    }

    /// The cycle in which something looked up in `cycle` (or completed by a fill in it) is due.
    #[inline]
    fn due_cycle(&self, cycle: u64) -> u64 {
        cycle.saturating_add(self.geo.hit_latency_cycles)
    }

    /// Whether port `p` has, or can get, a request index.
    #[inline]
    fn request_room(&self, p: usize) -> bool {
        self.ports[p].request != NONE || !self.free_requests.is_empty()
    }

    /// The request index of port `p`'s head, allocated now if needed (check `request_room`).
    fn request_index(&mut self, p: usize, cycle: u64) -> u32 {
        let port = &mut self.ports[p];
        if port.request == NONE
            && let Some(head) = port.head
            && let Some(r) = self.free_requests.pop()
        {
            self.requests[r as usize] = Request {
                port: p as u32,
                resp: head.respond(),
                parts_left: port.parts,
                due_cycle: 0,
                start_cycle: cycle,
                waited: false,
            };
            port.request = r;
        }
        port.request
    }

    /// Queues the downstream reads of `sectors` of `line` for MSHR `m`, one per run of
    /// consecutive sectors (check [`Cache::read_room`]), leaving at this cycle's lookup edge.
    fn fetch(&mut self, m: u16, line: u64, sectors: SectorMask, non_temporal: bool) {
        let e = self.mshrs.get_mut(m);
        e.pending |= sectors;
        let id = u64::from(m) | u64::from(e.generation) << 32;
        for run in Sectors::runs(sectors) {
            let (offset, bytes) = self.sectors.span(run);
            self.mshrs.get_mut(m).reads += 1;
            self.reads_in_flight += 1;
            self.down.push_back(MemRequest {
                id,
                addr: (line << self.geo.line_shift) + offset,
                bytes: bytes as u32,
                write: false,
                issued: self.cycle_edge,
                non_temporal,
            });
        }
    }

    /// Queues a downstream write of `bytes` at `addr` (a write-back run, or a bypassed write),
    /// leaving at this cycle's lookup edge.
    fn write_down(&mut self, addr: u64, bytes: u64, non_temporal: bool) {
        self.write_seq += 1;
        self.writes_queued += 1;
        self.down.push_back(MemRequest {
            id: WRITE_ID | self.write_seq,
            addr,
            bytes: bytes as u32,
            write: true,
            issued: self.cycle_edge,
            non_temporal,
        });
    }

    /// Whether a fetch of `sectors` may go: its reads fit below the MSHR count, or nothing is
    /// read (a fetch of more runs than MSHRs would otherwise never go). One run, the usual
    /// fetch, needs a read slot free.
    #[inline]
    fn read_room(&self, sectors: SectorMask) -> bool {
        let runs = Sectors::run_count(sectors);
        self.reads_in_flight + runs <= self.geo.mshrs || self.reads_in_flight == 0
    }

    /// Whether `runs` writes may join the write buffer: they fit, or it is empty.
    #[inline]
    fn write_room(&self, runs: u32) -> bool {
        self.writes_queued + runs <= self.geo.writeback_buffer || self.writes_queued == 0
    }

    /// Whether a new MSHR fetching `sectors` can be started.
    #[inline]
    fn mshr_room(&self, sectors: SectorMask) -> bool {
        self.mshrs.has_free() && self.read_room(sectors)
    }
}

impl<M> Cache<M>
where
    M: Carries<MemRequest> + Carries<MemResponse>,
{
    /// Runs everything that can run now, then sets a timer for the next known work.
    fn pump(&mut self, ctx: &mut Ctx<'_, M>) {
        self.take_fills(ctx);
        self.flush_down(ctx);
        self.send_answers(ctx);
        self.look_up(ctx);
    }

    /// The second half of [`Cache::pump`]: lookups and what they let go.
    fn look_up(&mut self, ctx: &mut Ctx<'_, M>) {
        let more = self.lookups(ctx);
        self.flush_down(ctx);
        self.send_answers(ctx);
        self.arm(more, ctx);
    }

    /// Runs the lookups deferred from the deliveries of this tick, as its first wake would
    /// have, had every request been in.
    fn settle(&mut self, ctx: &mut Ctx<'_, M>) {
        if self.settle.take(self.now) {
            self.look_up(ctx);
        }
    }

    /// Takes every answer from downstream.
    #[inline]
    fn take_fills(&mut self, ctx: &mut Ctx<'_, M>) {
        while let Some(msg) = ctx.recv(self.down_resp) {
            // Anything but a response is a wiring error; it has no request to answer.
            if let Ok(resp) = Carries::<MemResponse>::unwrap_as(msg) {
                self.fill(resp, ctx);
            }
        }
    }

    /// One downstream answer: a fill completes sectors, answers the targets it satisfies and
    /// retires its MSHR when its last read is back. Answers to writes are absorbed.
    #[inline(never)]
    fn fill(&mut self, resp: MemResponse, ctx: &mut Ctx<'_, M>) {
        if resp.id & WRITE_ID != 0 {
            return;
        }
        let Some(m) = self.mshrs.lookup(resp.id & 0xffff_ffff, (resp.id >> 32) as u32) else {
            return;
        };
        let e = *self.mshrs.get(m);
        if e.reads == 0 {
            return;
        }
        self.bump(Count::Fills);
        if e.way.is_none() {
            self.bump(Count::RelayedFills);
        }
        self.reads_in_flight -= 1;
        let got =
            self.sectors.touched_in_line(e.line << self.geo.line_shift, resp.addr, u64::from(resp.bytes));
        let set = self.tags.set_of(e.line);
        let avail = match e.way {
            Some(w) => self.tags.mark(set, w as usize, got, 0),
            None => e.arrived | got,
        };
        let last = e.reads == 1;
        {
            let em = self.mshrs.get_mut(m);
            em.reads -= 1;
            em.arrived |= got;
            em.pending &= !got;
        }
        let cycle = self.cycles.cycle_of(self.now);
        let due = self.due_cycle(cycle);
        let mut done = std::mem::take(&mut self.scratch);
        done.clear();
        // On the last read, everyone left is answered: a target can only wait for data in flight.
        self.mshrs.take_ready(m, avail, last, |t| done.push(t.request));
        for &r in &done {
            self.finish_part(r, due, ctx);
        }
        self.scratch = done;
        if last {
            if let Some(w) = e.way {
                self.tags.set_lock(set, w as usize, NO_MSHR);
            }
            self.mshrs.release(m);
        }
    }

    /// One line access of request `r` is ready in cycle `due`; answers the request after its
    /// last.
    fn finish_part(&mut self, r: u32, due: u64, ctx: &mut Ctx<'_, M>) {
        let q = &mut self.requests[r as usize];
        q.due_cycle = q.due_cycle.max(due);
        q.parts_left -= 1;
        if q.parts_left == 0 {
            let q = *q;
            self.free_requests.push(r);
            self.answer(q.port as usize, q.due_cycle, q.resp, q.start_cycle, q.waited, ctx);
        }
    }

    /// Queues the answer to a request on its port, due at the start of cycle `due_cycle`.
    fn answer(
        &mut self,
        p: usize,
        due_cycle: u64,
        resp: MemResponse,
        start_cycle: u64,
        waited: bool,
        ctx: &mut Ctx<'_, M>,
    ) {
        let h = if waited { self.ids.miss_latency } else { self.ids.hit_latency };
        ctx.stats().record(h, due_cycle.saturating_sub(start_cycle));
        let due = self.cycles.edge(due_cycle);
        let port = &mut self.ports[p];
        // Due ticks are produced in time order; the max only guards the FIFO's order.
        let due = due.max(port.last_due);
        port.last_due = due;
        let first = port.answers.is_empty() && !port.out_blocked;
        if first && self.answers_ahead {
            // Nothing ahead of it: it goes on the link now, to arrive as if sent when due, and
            // needs no timer. The link holds it meanwhile; were the link full now, it would be
            // full at the due tick too (every message in it was sent before this one).
            if ctx.send_at(port.out, M::wrap(resp), due).is_ok() {
                port.inflight -= 1;
                port.sent_ahead.push_back(due);
                ctx.progress();
                return;
            }
            port.out_blocked = true;
        }
        port.answers.push_back((due, resp));
        if first && !self.answers_ahead {
            // Sent when due, by `send_answers`.
            self.queue_answers(p as u32, due);
        }
    }

    /// Sends downstream what is queued, until the link refuses.
    #[inline(always)]
    fn flush_down(&mut self, ctx: &mut Ctx<'_, M>) {
        // Inlined: most wakes have nothing to send.
        if !self.down_blocked && !self.down.is_empty() {
            self.send_down(ctx);
        }
    }

    /// The body of [`Cache::flush_down`]. A request goes on the link now, to leave at its lookup's
    /// edge (`issued`, at or after now; a refused one leaves when the link has room). It takes
    /// its slot of the link from now: this cache is the link's only sender, and a slot that frees
    /// before the edge wakes it to send what was refused, so everything leaves when it would
    /// have, sent at the edge.
    #[inline(never)]
    fn send_down(&mut self, ctx: &mut Ctx<'_, M>) {
        while let Some(&req) = self.down.front() {
            if ctx.send_at(self.down_req, M::wrap(req), req.issued).is_err() {
                self.down_blocked = true;
                return;
            }
            self.down.pop_front();
            if req.write {
                self.writes_queued -= 1;
            }
        }
    }

    /// Puts port `p`, whose first answer is due at `due`, in the queue of ports with answers.
    #[inline]
    fn queue_answers(&mut self, p: u32, due: Tick) {
        self.answer_due.push(Reverse((due, p)));
        self.next_answer = self.next_answer.min(due);
    }

    /// Sends every answer that is due, port by port in port order, until a port's link
    /// refuses.
    #[inline(always)]
    fn send_answers(&mut self, ctx: &mut Ctx<'_, M>) {
        // Inlined: most calls find nothing due.
        if self.next_answer <= self.now {
            self.send_due(ctx);
        }
    }

    /// The body of [`Cache::send_answers`].
    #[inline(never)]
    fn send_due(&mut self, ctx: &mut Ctx<'_, M>) {
        let now = self.now;
        while let Some(&Reverse((due, p))) = self.answer_due.peek() {
            if due > now {
                break;
            }
            self.answer_due.pop();
            self.due_ports.insert(p as usize);
        }
        self.next_answer = self.answer_due.peek().map_or(Tick::MAX, |&Reverse((due, _))| due);
        while let Some(p) = self.due_ports.next_from(0) {
            self.due_ports.remove(p);
            let port = &mut self.ports[p];
            let mut later = None;
            while let Some(&(due, resp)) = port.answers.front() {
                if due > now {
                    later = Some(due);
                    break;
                }
                if ctx.send(port.out, M::wrap(resp)).is_err() {
                    // Out of the queue until the link has room.
                    port.out_blocked = true;
                    break;
                }
                port.answers.pop_front();
                port.inflight -= 1;
                ctx.progress();
            }
            if let Some(due) = later {
                self.queue_answers(p as u32, due);
            }
        }
    }

    /// Looks up as many line accesses as this cycle allows, round robin over the ports. Returns
    /// whether lookups are left for the next cycle.
    ///
    /// The round-robin pointer moves past every port offered a turn, so each gets one in n; a
    /// port with nothing to look up would take no turn, so only the ready ones are visited: a
    /// round that the lookup budget does not cut short brings the pointer back where it
    /// started, and one that it cuts leaves it after the last port that looked up.
    fn lookups(&mut self, ctx: &mut Ctx<'_, M>) -> bool {
        if self.ready.is_empty() {
            // No port to visit (the cycle's count catches up at the next call).
            return false;
        }
        let cycle = self.cycles.cycle_of(self.now);
        if cycle != self.cycle {
            self.cycle = cycle;
            self.cycle_edge = self.cycles.edge(cycle);
            self.used = 0;
        }
        let n = self.ports.len();
        if self.used >= self.geo.lookups_per_cycle {
            return self.more_lookups(ctx);
        }
        let start = self.rr;
        loop {
            let mut moved = false;
            let mut walk = RoundRobin::new(start);
            while let Some(p) = walk.next(&self.ready) {
                if self.step(p, cycle, ctx) {
                    self.used += 1;
                    moved = true;
                    if self.used >= self.geo.lookups_per_cycle {
                        self.rr = if p + 1 == n { 0 } else { p + 1 };
                        return self.more_lookups(ctx);
                    }
                }
            }
            if !moved {
                return false;
            }
        }
    }

    /// Whether a port has a request being looked up or waiting on its link (ports found with
    /// neither leave the ready set).
    fn more_lookups(&mut self, ctx: &mut Ctx<'_, M>) -> bool {
        let mut from = 0;
        while let Some(p) = self.ready.next_from(from) {
            let port = &self.ports[p];
            if port.head.is_some() || ctx.peek(port.inp).is_some() {
                return true;
            }
            self.ready.remove(p);
            from = p + 1;
        }
        false
    }

    /// One line access for port `p`, taking a new request if it has none. Returns whether a
    /// lookup was done.
    fn step(&mut self, p: usize, cycle: u64, ctx: &mut Ctx<'_, M>) -> bool {
        let Some(req) = self.head(p, ctx) else { return false };
        if req.bytes == 0 {
            // Nothing to look up: answered as a hit, touching no line.
            self.ports[p].head = None;
            self.bump(Count::Hits);
            self.answer(p, self.due_cycle(cycle), req.respond(), cycle, false, ctx);
            return true;
        }
        let (parts, next_part) = (self.ports[p].parts, self.ports[p].next_part);
        if parts > 1 && self.ports[p].request == NONE {
            // A request of several lines needs its index from the first line on, to gather them.
            if !self.request_room(p) {
                self.note_stall(p, Stall::Mshr);
                return false;
            }
            self.request_index(p, cycle);
        }
        match self.access(p, req, cycle) {
            Outcome::Stall(why) => {
                self.note_stall(p, why);
                return false;
            }
            Outcome::Done => {
                let due = self.due_cycle(cycle);
                match self.ports[p].request {
                    NONE => self.answer(p, due, req.respond(), cycle, false, ctx),
                    r => self.finish_part(r, due, ctx),
                }
            }
            Outcome::Waiting => {
                let r = self.ports[p].request;
                self.requests[r as usize].waited = true;
            }
        }
        let port = &mut self.ports[p];
        port.stalled = None;
        port.next_part = next_part + 1;
        if port.next_part >= parts {
            port.head = None;
            port.request = NONE;
        }
        true
    }

    /// Port `p`'s request being looked up, taken off its link if it has none and may take one.
    fn head(&mut self, p: usize, ctx: &mut Ctx<'_, M>) -> Option<MemRequest> {
        if let Some(h) = self.ports[p].head {
            return Some(h);
        }
        if self.unanswered(p) >= self.answers_cap {
            self.note_stall(p, Stall::Answers);
            if let Some(&due) = self.ports[p].sent_ahead.front() {
                self.retire_at = self.retire_at.min(due);
            }
            return None;
        }
        let req = loop {
            let Some(msg) = ctx.recv(self.ports[p].inp) else {
                // Nothing more arrived: no turn until something does.
                self.ready.remove(p);
                return None;
            };
            // Anything but a request is a wiring error with nothing to answer.
            if let Ok(req) = Carries::<MemRequest>::unwrap_as(msg) {
                break req;
            }
        };
        let ls = self.geo.line_shift;
        // The request behind this one is looked up next on this port, a cycle or more from
        // now: bring its set's tags and replacement state into the host's cache meanwhile (a
        // lookup in a large simulated cache otherwise waits for host memory).
        if let Some(next) = ctx.peek_queued(self.ports[p].inp).and_then(Carries::<MemRequest>::view) {
            let set = self.tags.set_of(next.addr >> ls);
            self.tags.prefetch(set);
            self.policy.prefetch(set);
        }
        let last = req.addr.saturating_add(u64::from(req.bytes).max(1)) - 1;
        let port = &mut self.ports[p];
        port.head = Some(req);
        port.next_part = 0;
        port.parts = (last >> ls) - (req.addr >> ls) + 1;
        port.request = NONE;
        port.inflight += 1;
        if req.write {
            self.bump(Count::Writes);
        } else {
            self.bump(Count::Reads);
        }
        let sectors = (last >> self.geo.sector_shift) - (req.addr >> self.geo.sector_shift) + 1;
        self.bump_by(Count::UpstreamSectors, sectors);
        Some(req)
    }

    /// Port `p`'s requests not yet answered, or answered ahead of time but not yet due.
    fn unanswered(&mut self, p: usize) -> u32 {
        let port = &mut self.ports[p];
        while port.sent_ahead.front().is_some_and(|&due| due <= self.now) {
            port.sent_ahead.pop_front();
        }
        port.inflight + port.sent_ahead.len() as u32
    }

    /// Counts a stall once per episode.
    fn note_stall(&mut self, p: usize, why: Stall) {
        let port = &mut self.ports[p];
        if port.stalled == Some(why) {
            return;
        }
        port.stalled = Some(why);
        match why {
            Stall::Mshr => self.bump(Count::MshrFullStalls),
            Stall::Writeback => self.bump(Count::WritebackFullStalls),
            Stall::Answers => {}
        }
    }

    /// Looks up the next line access of port `p`'s request `req`; changes nothing on a stall.
    fn access(&mut self, p: usize, req: MemRequest, cycle: u64) -> Outcome {
        let ls = self.geo.line_shift;
        let line = (req.addr >> ls) + self.ports[p].next_part;
        let base = line << ls;
        let end = req.addr.saturating_add(u64::from(req.bytes));
        let lo = req.addr.max(base) - base;
        let hi = end.min(base.saturating_add(self.geo.line_bytes())) - base;
        let need = self.sectors.touched(lo, hi);
        let nt = req.non_temporal;
        let set = self.tags.set_of(line);
        match self.tags.lookup(set, line) {
            Lookup::Present(w) if req.write => self.write_present(set, w, line, (lo, hi), nt),
            Lookup::Present(w) => self.read_present(p, set, w, line, need, nt, cycle),
            Lookup::Absent(empty) => self.absent(p, req, set, line, (lo, hi), empty, cycle),
        }
    }

    /// A read of `need` in a line that is present.
    #[allow(clippy::too_many_arguments)]
    fn read_present(
        &mut self,
        p: usize,
        set: usize,
        w: usize,
        line: u64,
        need: SectorMask,
        nt: bool,
        cycle: u64,
    ) -> Outcome {
        let missing = need & !self.tags.way(set, w).valid;
        if missing == 0 {
            if !nt {
                self.policy.touch(set, w);
            }
            self.bump(Count::Hits);
            return Outcome::Done;
        }
        let lock = self.tags.lock(set, w);
        let m = if lock != NO_MSHR {
            let m = lock;
            let uncovered = missing & !self.mshrs.get(m).pending;
            let read_room = uncovered == 0 || self.read_room(uncovered);
            if !self.mshrs.target_room(m) || !self.request_room(p) || !read_room {
                return Outcome::Stall(Stall::Mshr);
            }
            if uncovered != 0 {
                self.fetch(m, line, uncovered, nt);
                self.bump(Count::SectorMisses);
            } else {
                self.bump(Count::Merged);
            }
            m
        } else {
            if !self.mshr_room(missing) || !self.request_room(p) {
                return Outcome::Stall(Stall::Mshr);
            }
            let Some(m) = self.mshrs.allocate(line, Some(w as u32)) else {
                return Outcome::Stall(Stall::Mshr);
            };
            self.tags.set_lock(set, w, m);
            self.fetch(m, line, missing, nt);
            self.bump(Count::SectorMisses);
            m
        };
        let r = self.request_index(p, cycle);
        self.mshrs.add_target(m, Target { request: r, need });
        if !nt {
            self.policy.touch(set, w);
        }
        Outcome::Waiting
    }

    /// A write of bytes `[lo, hi)` of a line that is present: whole sectors become valid and
    /// dirty at once; partly written sectors not present are fetched (or already are), and
    /// nothing else.
    fn write_present(&mut self, set: usize, w: usize, line: u64, (lo, hi): (u64, u64), nt: bool) -> Outcome {
        let need = self.sectors.touched(lo, hi);
        let full = self.sectors.covered(lo, hi);
        let partial = need & !full & !self.tags.way(set, w).valid;
        let lock = self.tags.lock(set, w);
        let pending = if lock != NO_MSHR { self.mshrs.get(lock).pending } else { 0 };
        let fetch = partial & !pending;
        if fetch != 0 {
            if lock != NO_MSHR {
                if !self.read_room(fetch) {
                    return Outcome::Stall(Stall::Mshr);
                }
                self.fetch(lock, line, fetch, nt);
            } else {
                if !self.mshr_room(fetch) {
                    return Outcome::Stall(Stall::Mshr);
                }
                let Some(m) = self.mshrs.allocate(line, Some(w as u32)) else {
                    return Outcome::Stall(Stall::Mshr);
                };
                self.tags.set_lock(set, w, m);
                self.fetch(m, line, fetch, nt);
            }
            self.bump(Count::SectorMisses);
        } else if partial != 0 {
            self.bump(Count::Merged);
        } else {
            self.bump(Count::Hits);
        }
        self.tags.mark(set, w, full, need);
        if !nt {
            self.policy.touch(set, w);
        }
        Outcome::Done
    }

    /// An access to a line that is absent: merge into a bypass in flight, bypass, or allocate
    /// (`empty` is an empty way of the set, if there is one).
    #[allow(clippy::too_many_arguments)]
    fn absent(
        &mut self,
        p: usize,
        req: MemRequest,
        set: usize,
        line: u64,
        (lo, hi): (u64, u64),
        empty: Option<usize>,
        cycle: u64,
    ) -> Outcome {
        let need = self.sectors.touched(lo, hi);
        let nt = req.non_temporal;
        if let Some(m) = self.mshrs.find_bypass(line) {
            // A bypassing read of this line is in flight: a read it covers rides along; anything
            // else waits for it to finish, so a line is never both bypassed and allocated.
            let e = self.mshrs.get(m);
            let covered = need & !(e.pending | e.arrived) == 0;
            if req.write || !covered || !self.mshrs.target_room(m) || !self.request_room(p) {
                return Outcome::Stall(Stall::Mshr);
            }
            let r = self.request_index(p, cycle);
            self.mshrs.add_target(m, Target { request: r, need });
            self.bump(Count::Merged);
            return Outcome::Waiting;
        }
        if nt && self.non_temporal == NonTemporalPolicy::Bypass {
            let out = self.unallocated(p, req, line, (lo, hi), cycle);
            if !matches!(out, Outcome::Stall(_)) {
                self.bump(Count::Bypasses);
            }
            return out;
        }
        let full = if req.write { self.sectors.covered(lo, hi) } else { 0 };
        let fetch = need & !full;
        if fetch != 0 && (!self.mshr_room(fetch) || (!req.write && !self.request_room(p))) {
            return Outcome::Stall(Stall::Mshr);
        }
        let tags = &self.tags;
        // Choosing changes nothing: the choice is committed (`evict`) past the last stall.
        let Some(v) = empty.or_else(|| self.policy.victim(set, |w| tags.unlocked(set, w))) else {
            return self.set_busy(p, req, line, (lo, hi), cycle);
        };
        let old = self.tags.line(set, v);
        let victim = self.tags.way(set, v);
        let write_back = old.is_some() && victim.dirty != 0;
        if write_back && !self.write_room(Sectors::run_count(victim.dirty)) {
            return Outcome::Stall(Stall::Writeback);
        }
        if empty.is_none() {
            self.policy.evict(set, v);
        }
        if let Some(old) = old {
            self.bump(Count::Evictions);
            if write_back {
                // Only the sectors written: a sector never held has nothing to write.
                for run in Sectors::runs(victim.dirty) {
                    let (offset, bytes) = self.sectors.span(run);
                    self.write_down((old << self.geo.line_shift) + offset, bytes, false);
                    self.bump(Count::Writebacks);
                }
            }
        }
        let dirty = if req.write { need } else { 0 };
        self.tags.install(set, v, line, full, dirty);
        self.policy.insert(set, v, nt);
        self.bump(Count::Misses);
        if fetch != 0 {
            let Some(m) = self.mshrs.allocate(line, Some(v as u32)) else {
                // Unreachable: `mshr_room` was checked above and nothing allocated since (the
                // write-back queues writes, not reads).
                return Outcome::Done;
            };
            self.tags.set_lock(set, v, m);
            self.fetch(m, line, fetch, nt);
            if !req.write {
                let r = self.request_index(p, cycle);
                self.mshrs.add_target(m, Target { request: r, need });
                return Outcome::Waiting;
            }
        }
        Outcome::Done
    }

    /// An access to an absent line whose set has every way locked by a fetch: served without
    /// allocating (see [`Cache::unallocated`]) rather than holding the port, and every request
    /// behind it, until a fill frees a way. A cache that allocates at fill time would evict one
    /// of those lines instead; neither blocks the bank.
    fn set_busy(&mut self, p: usize, req: MemRequest, line: u64, span: (u64, u64), cycle: u64) -> Outcome {
        let out = self.unallocated(p, req, line, span, cycle);
        if !matches!(out, Outcome::Stall(_)) {
            self.bump(Count::Misses);
            self.bump(Count::SetBusyMisses);
        }
        out
    }

    /// Serves an access to bytes `[lo, hi)` of absent `line` without allocating a way: a read
    /// fetches for itself (later reads of the line ride along, see `absent`), a write goes down
    /// as it is.
    fn unallocated(
        &mut self,
        p: usize,
        req: MemRequest,
        line: u64,
        (lo, hi): (u64, u64),
        cycle: u64,
    ) -> Outcome {
        let nt = req.non_temporal;
        if req.write {
            if !self.write_room(1) {
                return Outcome::Stall(Stall::Writeback);
            }
            self.write_down((line << self.geo.line_shift) + lo, hi - lo, nt);
            return Outcome::Done;
        }
        let need = self.sectors.touched(lo, hi);
        if !self.mshr_room(need) || !self.request_room(p) {
            return Outcome::Stall(Stall::Mshr);
        }
        let Some(m) = self.mshrs.allocate(line, None) else {
            return Outcome::Stall(Stall::Mshr);
        };
        self.fetch(m, line, need, nt);
        let r = self.request_index(p, cycle);
        self.mshrs.add_target(m, Target { request: r, need });
        Outcome::Waiting
    }

    /// Sets a timer for the earliest known work: the next answer due on a port that can send,
    /// and the next cycle's lookups when this cycle's ran out.
    fn arm(&mut self, more_lookups: bool, ctx: &mut Ctx<'_, M>) {
        let lookups = if more_lookups { self.cycles.edge(self.cycle + 1) } else { Tick::MAX };
        let next = lookups.min(self.next_answer).min(self.retire_at);
        if next < self.armed {
            ctx.schedule_at(next, Priority::DEFAULT, 0);
            self.armed = next;
        }
    }

    /// Adds the counts since the last flush to the registered statistics.
    #[inline]
    fn flush_stats(&mut self, ctx: &mut Ctx<'_, M>) {
        while self.changed != 0 {
            let i = self.changed.trailing_zeros() as usize;
            self.changed &= self.changed - 1;
            ctx.stats().add(self.ids.counters[i], self.counts[i] - self.flushed[i]);
            self.flushed[i] = self.counts[i];
        }
    }
}

impl<M> Component for Cache<M>
where
    M: Carries<MemRequest> + Carries<MemResponse>,
{
    type Msg = M;

    fn name(&self) -> &str {
        &self.name
    }

    /// With at most eight inputs (`SCAN_LINKS`) it polls them all at any arrival wake.
    fn takes_every_input(&self) -> bool {
        self.ports.len() <= SCAN_LINKS
    }

    /// Requests are looked up as if the tick's first wake had found every one that arrives in
    /// that tick, whatever the order of the deliveries (see `cache/ports.rs`): a cache with few
    /// ports polls them when a delivery wakes it; one with many defers its lookups until the
    /// tick's deliveries are over. Everything else runs at once.
    fn wake(&mut self, why: Wake, ctx: &mut Ctx<'_, M>) {
        self.now = ctx.now();
        match why {
            Wake::Timer(SETTLE) => {
                self.settle(ctx);
                self.flush_stats(ctx);
                return;
            }
            // Past the deliveries of this tick: its deferred lookups first, before anything
            // this wake changes.
            Wake::Timer(_) | Wake::Space(_) | Wake::Start => self.settle(ctx),
            Wake::Arrival(_) => {}
        }
        match why {
            Wake::Timer(_) => {
                if self.now >= self.armed {
                    self.armed = Tick::MAX;
                }
                if self.now >= self.retire_at {
                    self.retire_at = Tick::MAX;
                }
            }
            Wake::Space(link) => match self.role_of_link.get(link) {
                Role::DownReq => self.down_blocked = false,
                Role::Output(p) => {
                    let port = &mut self.ports[p as usize];
                    if port.out_blocked {
                        port.out_blocked = false;
                        if let Some(&(due, _)) = port.answers.front() {
                            self.queue_answers(p, due);
                        }
                    }
                }
                _ => {}
            },
            Wake::Arrival(link) => {
                if let Role::Input(p) = self.role_of_link.get(link) {
                    self.ready.insert(p as usize);
                }
                if self.ports.len() > SCAN_LINKS {
                    // Other ports' requests of this tick may still be on their way in.
                    self.take_fills(ctx);
                    self.flush_down(ctx);
                    self.send_answers(ctx);
                    self.settle.book(ctx);
                    self.flush_stats(ctx);
                    return;
                }
                for (p, port) in self.ports.iter().enumerate() {
                    if ctx.peek(port.inp).is_some() {
                        self.ready.insert(p);
                    }
                }
            }
            Wake::Start => {}
        }
        self.pump(ctx);
        self.flush_stats(ctx);
    }

    fn busy(&self) -> bool {
        self.mshrs.active() > 0
            || !self.down.is_empty()
            || self.ports.iter().any(|p| p.head.is_some() || !p.answers.is_empty())
    }

    fn status(&self) -> String {
        let stalled: Vec<String> = self
            .ports
            .iter()
            .enumerate()
            .filter_map(|(i, p)| p.stalled.filter(|_| p.head.is_some()).map(|s| format!("port {i} on {s:?}")))
            .collect();
        format!(
            "{} of {} MSHRs busy, {} reads in flight, {} requests queued downstream{}, {} answers waiting{}",
            self.mshrs.active(),
            self.geo.mshrs,
            self.reads_in_flight,
            self.down.len(),
            if self.down_blocked { " (link full)" } else { "" },
            self.ports.iter().map(|p| p.answers.len()).sum::<usize>(),
            if stalled.is_empty() { String::new() } else { format!("; stalled: {}", stalled.join(", ")) },
        )
    }
}
