//! An address-interleaved interconnect between requesters and banks.
//!
//! Contract: a [`Crossbar`] takes [`MemRequest`]s on N upstream ports and sends each to one of
//! B downstream ports, chosen by its first byte's address: `bank = (addr / granule) % B`, or
//! that digit hashed with the higher ones (see [`BankHash`]), or, for memory-side banks
//! ([`Crossbar::set_memory_side`]), the bank that owns the byte's DRAM pseudo-channel. A request
//! crossing a granule boundary goes whole to the bank of its first byte. Each request and each response spends the topology's
//! latency between its two ports (a fixed number of cycles for a crossbar, `base + hops *
//! per_hop` on a mesh, see [`Topology`]) on top of the links' own latency. Responses go back to
//! the port their request came from with its original id: ids are remapped to the crossbar's
//! own on the way down, so requesters may reuse each other's ids. Answers to writes travel
//! back like any other; requesters that do not care (caches) absorb them.
//!
//! Back-pressure: each bank has `bank_queue` slots for requests travelling to it or waiting for
//! its link, and the crossbar holds at most `max_in_flight` transactions; a request that finds
//! either full waits in its port's one-entry holding register and the port takes nothing more,
//! so its link fills and the requester is refused. Responses are always taken (their
//! transaction's slot already holds them).
//!
//! Bandwidth: without `port_bytes` the model is of latency and buffering, and bandwidth is that
//! of the attached links and components. With it, each port is a link of `port_bytes` a cycle
//! in each direction: a message occupies its channel for whole cycles, a line ceil(line /
//! `port_bytes`) of them and a request or acknowledgement without data one (a flit), and the
//! next message on that channel starts once the last one's cycles are over. A message enters
//! through its source port's inbound channel (an upstream port's requests, a downstream port's
//! responses) and leaves through its destination port's outbound channel, so many requesters
//! sharing one bank, or many banks answering one requester, queue at the shared port; the
//! first flit moves on at once (cut-through), so serialization adds no latency to a message on
//! an idle channel. A message held back by a busy inbound channel stays on its link, which
//! fills and refuses its sender, as a full bank queue does. On a mesh the links between
//! neighbouring nodes have the same width and are shared by every route through them
//! ([`super::mesh_links`]), so a mesh's bisection bounds what crosses it.
//!
//! The same component serves between private caches and the banks of a shared cache, and
//! between those banks and memory channels.
//!
//! Order: in each wake-up the crossbar takes the banks' responses in bank order, then the
//! requests port by port, round robin from a starting port that moves by one every cycle (a
//! rotating-priority arbiter: which port goes first depends on the cycle, never on how the
//! engine's events fell);
//! a tick's arrivals are handled as if its first wake-up had found them all (see
//! [`super::ports`]), whatever the order in which the engine delivered them.
//!
//! Cost: O(1) per message whatever the number of ports, plus, for a crossbar of at most
//! [`POLL_LINKS`] inputs, a peek at each input per arrival wake (one wake per tick when the
//! engine merges its arrivals). A wake-up visits only the ports with
//! something to do, kept in sets: requests arrived (found from the link that woke it), requests
//! held that may fit now (woken by their bank sending or by a transaction ending), responses
//! arrived, messages to send. Messages crossing wait in one FIFO per distinct latency. With
//! `port_bytes`, each port's channels keep the cycle at which they are next free, and a port
//! held back by one waits in a set until its channel is free (a timer at the earliest of
//! those cycles, or any wake after it, hands it back).

use super::cycles::CycleTracker;
use super::flight::Flight;
use super::mesh_links::MeshLinks;
use super::ports::{LinkRoles, PortSet, RoundRobin, SETTLE, Settle};
use super::topology::{Topology, TopologyError};
use crate::dram::AddressMapping;
use crate::{MemRequest, MemResponse};
use serde::Deserialize;
use sim_core::{
    ByteSize, Carries, Clock, Component, CounterId, Ctx, LinkId, Priority, Stats, StatsError, Tick, Wake,
};
use std::collections::VecDeque;
use std::marker::PhantomData;
use thiserror::Error;

/// Input links a crossbar polls when a delivery wakes it, at most. More than a cache's eight:
/// with its arrivals merged into one wake per tick ([`Component::takes_every_input`]), a few
/// dozen peeks cost less than the wakes they spare, and a crossbar's inputs (every private
/// cache, every bank) often deliver in the same cycle.
pub const POLL_LINKS: usize = 64;

/// Most transactions a crossbar may hold.
pub const MAX_IN_FLIGHT: u32 = 1 << 20;

/// An interconnect, as a preset describes it.
///
/// ```toml
/// topology = { kind = "crossbar", cycles = 8 }
/// granule = "64B"        # optional: default the line size given to Crossbar::new
/// hash = "xor"           # optional: none | xor (default none)
/// max_in_flight = 1024   # optional
/// bank_queue = 16        # optional
/// port_bytes = "64B"     # optional: each port's bytes a cycle in each direction (no limit)
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CrossbarConfig {
    /// Connection and latency model.
    pub topology: Topology,
    /// Interleaving unit (a power of two); default: the line size given to [`Crossbar::new`].
    #[serde(default)]
    pub granule: Option<ByteSize>,
    /// How granule indices map to banks.
    #[serde(default)]
    pub hash: BankHash,
    /// Transactions (request sent, response not yet returned) the crossbar holds at most.
    #[serde(default = "default_in_flight")]
    pub max_in_flight: u32,
    /// Requests travelling to or waiting for one downstream port, at most.
    #[serde(default = "default_bank_queue")]
    pub bank_queue: u32,
    /// Bytes each port moves a cycle in each direction (see the module docs); `None`: no limit.
    #[serde(default)]
    pub port_bytes: Option<ByteSize>,
}

impl CrossbarError {
    /// The configuration key at fault, for errors that name one.
    pub fn field(&self) -> Option<&'static str> {
        match self {
            CrossbarError::Zero { field } => Some(field),
            CrossbarError::Granule(_) | CrossbarError::GranuleBelowLine { .. } => Some("granule"),
            CrossbarError::TooManyInFlight(_) => Some("max_in_flight"),
            CrossbarError::Topology(e) => Some(e.key()),
            CrossbarError::NoPorts { .. } | CrossbarError::Stats(_) => None,
        }
    }
}

impl CrossbarConfig {
    /// The interleaving unit: `granule`, or `line` when the configuration names none.
    pub fn granule_or(&self, line: ByteSize) -> ByteSize {
        self.granule.unwrap_or(line)
    }

    /// Checks the values that do not depend on the wiring (`line`: the default granule), so a
    /// configuration can be rejected before anything is built.
    pub fn check(&self, line: ByteSize) -> Result<(), CrossbarError> {
        let granule = self.granule_or(line);
        for (field, v) in [
            ("granule", granule.bytes()),
            ("max_in_flight", u64::from(self.max_in_flight)),
            ("bank_queue", u64::from(self.bank_queue)),
            ("port_bytes", self.port_bytes.map_or(1, |b| b.bytes())),
        ] {
            if v == 0 {
                return Err(CrossbarError::Zero { field });
            }
        }
        if !granule.bytes().is_power_of_two() {
            return Err(CrossbarError::Granule(granule));
        }
        if granule.bytes() < line.bytes() {
            return Err(CrossbarError::GranuleBelowLine { granule, line });
        }
        self.topology.check()?;
        if self.max_in_flight > MAX_IN_FLIGHT {
            return Err(CrossbarError::TooManyInFlight(self.max_in_flight));
        }
        Ok(())
    }
}

fn default_in_flight() -> u32 {
    1024
}

fn default_bank_queue() -> u32 {
    16
}

/// How an address picks its bank.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BankHash {
    /// `bank = g % B` with `g = addr / granule`.
    #[default]
    None,
    /// The bank digit `g % B` (`g = addr / granule`) combined with a fold of the digits above
    /// it, `q = g / B`: `fold = q ^ q >> k ^ q >> 2k` with `k = ceil(log2 B)`; XOR of the two
    /// when B is a power of two (`bank = (g ^ g >> k ^ g >> 2k ^ g >> 3k) % B`), their sum modulo
    /// B otherwise. Higher address bits spread strided accesses that would otherwise hit one
    /// bank, and each run of B granules with the same `q` still meets every bank once, so a
    /// bank's granules are numbered by `q` as without the hash: the set index of a bank of a
    /// shared cache ([`super::Cache::interleaved`]). (A plain XOR folded modulo a B that is not a
    /// power of two gives some banks more than their share of a run, more lines than sets.)
    Xor,
}

/// Why a crossbar could not be built.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum CrossbarError {
    /// A count or size that must be positive is zero.
    #[error("crossbar {field} must be at least 1")]
    Zero {
        /// The field.
        field: &'static str,
    },
    /// The granule is not a power of two.
    #[error("crossbar granule ({0}) must be a power of two")]
    Granule(ByteSize),
    /// Too many transactions.
    #[error("crossbar max_in_flight ({0}) is above the supported maximum of {MAX_IN_FLIGHT}")]
    TooManyInFlight(u32),
    /// The granule is smaller than a line: a line would be split over banks.
    #[error("granule ({granule}) must be at least the line size ({line})")]
    GranuleBelowLine {
        /// The granule.
        granule: ByteSize,
        /// The line size.
        line: ByteSize,
    },
    /// The topology is invalid or does not fit the ports.
    #[error("network topology: {0}")]
    Topology(#[from] TopologyError),
    /// One side has no port.
    #[error("crossbar {name}: no {side} port")]
    NoPorts {
        /// The crossbar's name.
        name: String,
        /// "upstream" or "downstream".
        side: &'static str,
    },
    /// A statistic name collides.
    #[error(transparent)]
    Stats(#[from] StatsError),
}

/// The links of a crossbar.
#[derive(Debug, Clone, Copy)]
pub struct CrossbarLinks<'a> {
    /// Upstream ports: (input link of requests, output link of responses).
    pub upstream: &'a [(LinkId, LinkId)],
    /// Downstream ports: (output link of requests, input link of responses).
    pub downstream: &'a [(LinkId, LinkId)],
}

/// What a link is to the crossbar.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Other,
    UpIn(u32),
    UpOut(u32),
    DownIn(u32),
    DownOut(u32),
}

/// One transaction: where it came from and went, and the message in transit. One cache line:
/// the message is the request on the way down and holds the response's fields on the way back.
#[derive(Debug, Clone, Copy)]
#[repr(align(64))]
struct Slot {
    up: u32,
    bank: u32,
    /// The requester's id.
    id: u64,
    generation: u32,
    active: bool,
    /// Its response was taken (a second answer to the same request is stray).
    returning: bool,
    /// The request with the crossbar's id (on the way down); then the response's address,
    /// size, direction and issue tick (on the way back).
    msg: MemRequest,
}

impl Slot {
    /// The response to send back, with the requester's id.
    #[inline]
    fn response(&self) -> MemResponse {
        let m = &self.msg;
        MemResponse { id: self.id, addr: m.addr, bytes: m.bytes, write: m.write, issued: m.issued }
    }
}

/// Kinds of paced ports (indices of `Crossbar::paced`).
const UP_IN: usize = 0;
const UP_OUT: usize = 1;
const DOWN_IN: usize = 2;
const DOWN_OUT: usize = 3;

/// A port's two channels under `port_bytes`: the cycles at which each is next free.
#[derive(Debug, Clone, Copy, Default)]
struct Channels {
    /// Towards the crossbar (an upstream port's requests, a downstream port's responses).
    inbound: u64,
    /// Away from it.
    outbound: u64,
}

/// An upstream port.
struct UpPort {
    inp: LinkId,
    out: LinkId,
    channels: Channels,
    /// A request taken off the link that could not be routed yet.
    hold: Option<MemRequest>,
    /// Transactions whose responses are due here, in due order.
    staged: VecDeque<u32>,
    blocked: bool,
    stalled: bool,
}

/// A downstream port.
struct DownPort {
    out: LinkId,
    inp: LinkId,
    channels: Channels,
    /// Transactions whose requests are due here, in due order.
    staged: VecDeque<u32>,
    /// Requests travelling here or staged.
    queued: u32,
    blocked: bool,
    requests: CounterId,
    /// Upstream ports holding a request for this port.
    held: PortSet,
}

/// Statistic ids.
struct XbarStats {
    requests: CounterId,
    responses: CounterId,
    /// Requests that carry data (writes) and their responses (acknowledgements, no data).
    write_requests: CounterId,
    write_responses: CounterId,
    bank_full_stalls: CounterId,
    in_flight_full_stalls: CounterId,
    stray_responses: CounterId,
    /// Messages that waited for their port's channel (`port_bytes`), each counted once.
    port_busy_waits: CounterId,
    /// Cycles messages waited for mesh links, summed over the links of their routes.
    link_wait_cycles: CounterId,
}

/// Bytes of payload a message carries over a port or link: a request carries a write's data, a
/// response a read's.
#[inline]
fn payload(request: bool, write: bool, bytes: u32) -> u64 {
    if write == request { u64::from(bytes) } else { 0 }
}

/// An address-interleaved crossbar or mesh (see the module docs for its contract).
pub struct Crossbar<M> {
    name: String,
    cycles: CycleTracker,
    granule_shift: u32,
    hash: BankHash,
    hash_shift: u32,
    /// Memory-side banks: the DRAM's mapping; bank `b` owns the pseudo-channels whose
    /// interleave index is `b` modulo B.
    memory_side: Option<AddressMapping>,
    bank_queue: u32,
    /// Traversal cycles, `[up * banks + bank]`.
    latency: Vec<u64>,
    up: Vec<UpPort>,
    down: Vec<DownPort>,
    slots: Vec<Slot>,
    free: Vec<u32>,
    /// Messages travelling.
    flight: Flight,
    role_of_link: LinkRoles<Role>,
    /// The tick whose arrivals wait to be routed.
    settle: Settle,
    /// At most [`POLL_LINKS`] input links: poll them all when a delivery wakes the crossbar
    /// (see [`super::ports`]), so its arrivals may share one wake per tick.
    scan: bool,
    /// Upstream ports to visit when accepting: requests arrived on their links and not taken,
    /// or a held request that may fit now.
    up_ready: PortSet,
    /// Upstream ports holding a request.
    held: PortSet,
    /// Downstream ports whose response links had an arrival.
    resp_ready: PortSet,
    /// Downstream ports with staged requests and a link that has not refused.
    down_dirty: PortSet,
    /// Upstream ports with staged responses and a link that has not refused.
    up_dirty: PortSet,
    /// `port_bytes`, if the ports are paced.
    port_bytes: Option<u64>,
    /// A mesh's links, shared under `port_bytes` (`None`: a crossbar, or no port width).
    mesh: Option<MeshLinks>,
    /// Ports held back by a busy channel, per kind: upstream inbound and outbound, downstream
    /// inbound and outbound; and the earliest edge at which one of those channels frees.
    paced: [PortSet; 4],
    pace_at: Tick,
    armed: Tick,
    stats: XbarStats,
    _msg: PhantomData<fn() -> M>,
}

impl<M> Crossbar<M> {
    /// A crossbar named `name` in clock domain `clock`, wired to `links`; `line` is the default
    /// interleaving granule.
    pub fn new(
        name: &str,
        cfg: &CrossbarConfig,
        clock: Clock,
        links: CrossbarLinks<'_>,
        line: ByteSize,
        stats: &mut Stats,
    ) -> Result<Self, CrossbarError> {
        for (side, ports) in [("upstream", links.upstream), ("downstream", links.downstream)] {
            if ports.is_empty() {
                return Err(CrossbarError::NoPorts { name: name.to_owned(), side });
            }
        }
        cfg.check(line)?;
        let granule = cfg.granule_or(line);
        let (n_up, n_down) = (links.upstream.len(), links.downstream.len());
        let latency = cfg.topology.latency_table(n_up, n_down)?;
        let mesh = match cfg.port_bytes {
            Some(_) => cfg.topology.mesh_links(n_up, n_down)?,
            None => None,
        };
        let xstats = XbarStats {
            requests: stats.counter_in(name, "requests")?,
            responses: stats.counter_in(name, "responses")?,
            write_requests: stats.counter_in(name, "write_requests")?,
            write_responses: stats.counter_in(name, "write_responses")?,
            bank_full_stalls: stats.counter_in(name, "bank_full_stalls")?,
            in_flight_full_stalls: stats.counter_in(name, "in_flight_full_stalls")?,
            stray_responses: stats.counter_in(name, "stray_responses")?,
            port_busy_waits: stats.counter_in(name, "port_busy_waits")?,
            link_wait_cycles: stats.counter_in(name, "link_wait_cycles")?,
        };
        let mut down = Vec::with_capacity(n_down);
        for (b, &(out, inp)) in links.downstream.iter().enumerate() {
            down.push(DownPort {
                out,
                inp,
                channels: Channels::default(),
                staged: VecDeque::with_capacity(cfg.bank_queue.min(4096) as usize),
                queued: 0,
                blocked: false,
                requests: stats.counter_in(name, &format!("port{b}.requests"))?,
                held: PortSet::new(links.upstream.len()),
            });
        }
        let mut roles = Vec::with_capacity(2 * (n_up + n_down));
        for (u, &(inp, out)) in links.upstream.iter().enumerate() {
            roles.extend([(inp, Role::UpIn(u as u32)), (out, Role::UpOut(u as u32))]);
        }
        for (b, &(out, inp)) in links.downstream.iter().enumerate() {
            roles.extend([(out, Role::DownOut(b as u32)), (inp, Role::DownIn(b as u32))]);
        }
        let slots = cfg.max_in_flight as usize;
        let blank = MemRequest::read(0, 0, 0, 0);
        Ok(Self {
            name: name.to_owned(),
            cycles: CycleTracker::new(clock),
            granule_shift: granule.bytes().trailing_zeros(),
            hash: cfg.hash,
            hash_shift: u64::BITS - (n_down as u64 - 1).leading_zeros(),
            memory_side: None,
            bank_queue: cfg.bank_queue,
            up: links
                .upstream
                .iter()
                .map(|&(inp, out)| UpPort {
                    inp,
                    out,
                    channels: Channels::default(),
                    hold: None,
                    staged: VecDeque::with_capacity(slots.min(1024)),
                    blocked: false,
                    stalled: false,
                })
                .collect(),
            down,
            slots: vec![
                Slot {
                    up: 0,
                    bank: 0,
                    id: 0,
                    generation: 0,
                    active: false,
                    returning: false,
                    msg: blank,
                };
                slots
            ],
            free: (0..slots as u32).rev().collect(),
            flight: if mesh.is_some() { Flight::any_order(slots) } else { Flight::new(&latency, slots) },
            role_of_link: LinkRoles::new(&roles, Role::Other),
            latency,
            settle: Settle::default(),
            scan: n_up + n_down <= POLL_LINKS,
            up_ready: PortSet::new(n_up),
            held: PortSet::new(n_up),
            resp_ready: PortSet::new(n_down),
            down_dirty: PortSet::new(n_down),
            up_dirty: PortSet::new(n_up),
            port_bytes: cfg.port_bytes.map(|b| b.bytes()),
            mesh,
            paced: [PortSet::new(n_up), PortSet::new(n_up), PortSet::new(n_down), PortSet::new(n_down)],
            pace_at: Tick::MAX,
            armed: Tick::MAX,
            stats: xstats,
            _msg: PhantomData,
        })
    }

    /// The crossbar with memory-side banks: a request goes to the bank that owns its first
    /// byte's pseudo-channel under `mapping` ([`AddressMapping::owner`]), so each bank talks to
    /// its own pseudo-channels only, as a GPU's L2 slices sit beside their memory
    /// controllers. The granule and hash are then unused; an address beyond the mapping's
    /// capacity falls back to them (the DRAM refuses it anyway).
    pub fn set_memory_side(&mut self, mapping: AddressMapping) {
        self.memory_side = Some(mapping);
    }

    /// The downstream port serving `addr`.
    #[inline]
    pub fn bank_of(&self, addr: u64) -> usize {
        if let Some(bank) = self.memory_side.as_ref().and_then(|m| m.owner(addr, self.down.len() as u32)) {
            return bank as usize;
        }
        let g = addr >> self.granule_shift;
        let h = match self.hash {
            BankHash::None => g,
            BankHash::Xor if !self.down.len().is_power_of_two() => {
                let banks = self.down.len() as u64;
                let k = self.hash_shift;
                let q = g / banks;
                let fold = q ^ q.checked_shr(k).unwrap_or(0) ^ q.checked_shr(2 * k).unwrap_or(0);
                return ((g % banks + fold % banks) % banks) as usize;
            }
            BankHash::Xor => {
                let k = self.hash_shift;
                let shr = |n: u32| g.checked_shr(n).unwrap_or(0);
                g ^ shr(k) ^ shr(2 * k) ^ shr(3 * k)
            }
        };
        (h % self.down.len() as u64) as usize
    }

    /// Traversal latency in cycles between upstream port `up` and downstream port `bank`.
    pub fn latency_cycles(&self, up: usize, bank: usize) -> Option<u64> {
        if up < self.up.len() && bank < self.down.len() {
            self.latency.get(up * self.down.len() + bank).copied()
        } else {
            None
        }
    }

    /// Transactions in flight.
    pub fn in_flight(&self) -> usize {
        self.slots.len() - self.free.len()
    }

    /// When something entering now, `cycles` from its destination, arrives there.
    #[inline]
    fn due(&mut self, now: Tick, cycles: u64) -> Tick {
        let cycle = self.cycles.cycle_of(now);
        self.cycles.edge(cycle.saturating_add(cycles))
    }

    /// Sends `slot`'s message between upstream port `up` and downstream port `bank`, entering
    /// now (`stats` counts its waits for mesh links).
    #[inline]
    fn travel(&mut self, now: Tick, up: usize, bank: usize, slot: u32, to_bank: bool, stats: &mut Stats) {
        let pair = up * self.down.len() + bank;
        let due = if self.mesh.is_some() {
            self.mesh_due(now, up, bank, slot, to_bank, stats)
        } else {
            self.due(now, self.latency[pair])
        };
        self.flight.push(pair, due, slot, to_bank);
    }

    /// When `slot`'s message, entering now, reaches its far port over a mesh's shared links
    /// (the due tick of [`Crossbar::travel`]).
    #[inline(never)]
    fn mesh_due(
        &mut self,
        now: Tick,
        up: usize,
        bank: usize,
        slot: u32,
        to_bank: bool,
        stats: &mut Stats,
    ) -> Tick {
        let m = &self.slots[slot as usize].msg;
        let flits = self.flits(payload(to_bank, m.write, m.bytes));
        let cycle = self.cycles.cycle_of(now);
        let (at, waited) =
            self.mesh.as_mut().map_or((cycle, 0), |mesh| mesh.traverse(up, bank, to_bank, flits, cycle));
        if waited > 0 {
            stats.add(self.stats.link_wait_cycles, waited);
        }
        self.cycles.edge(at)
    }

    /// Cycles of a port or link that a message of `data` bytes of payload takes: whole cycles
    /// of `port_bytes`, one without data (0 without a port width).
    #[inline]
    fn flits(&self, data: u64) -> u64 {
        self.port_bytes.map_or(0, |width| data.div_ceil(width).max(1))
    }

    /// The channel of port `port` of `kind` (`UP_IN` ...).
    #[inline]
    fn channel(&mut self, kind: usize, port: usize) -> &mut u64 {
        match kind {
            UP_IN => &mut self.up[port].channels.inbound,
            UP_OUT => &mut self.up[port].channels.outbound,
            DOWN_IN => &mut self.down[port].channels.inbound,
            _ => &mut self.down[port].channels.outbound,
        }
    }

    /// Whether port `port`'s channel of `kind` can start a message now (callers ask only with
    /// `port_bytes`). When it cannot, the port waits in `paced` for the channel's free cycle;
    /// the first time it does, `stats` counts the wait.
    #[inline(never)]
    fn channel_free(&mut self, kind: usize, port: usize, now: Tick, stats: &mut Stats) -> bool {
        let cycle = self.cycles.cycle_of(now);
        let free = *self.channel(kind, port);
        if free <= cycle {
            return true;
        }
        if !self.paced[kind].contains(port) {
            self.paced[kind].insert(port);
            stats.inc(self.stats.port_busy_waits);
        }
        let at = self.cycles.edge(free);
        self.pace_at = self.pace_at.min(at);
        false
    }

    /// Occupies port `port`'s channel of `kind` with a message of `data` bytes of payload,
    /// starting now: whole cycles of `port_bytes`, one for a message without data (callers
    /// ask only with `port_bytes`).
    #[inline(never)]
    fn occupy(&mut self, kind: usize, port: usize, now: Tick, data: u64) {
        let cycle = self.cycles.cycle_of(now);
        let flits = self.flits(data);
        let channel = self.channel(kind, port);
        *channel = (*channel).max(cycle) + flits;
    }

    /// Whether a channel may hold messages back (`port_bytes` is set).
    #[inline(always)]
    fn paced(&self) -> bool {
        self.port_bytes.is_some()
    }

    /// Hands the ports held back by channels that are free now back to their work; the others
    /// keep waiting, and `pace_at` becomes the earliest of their channels' free cycles.
    #[inline(always)]
    fn release_paced(&mut self, now: Tick) {
        if self.pace_at <= now {
            self.release_due(now);
        }
    }

    /// The body of [`Crossbar::release_paced`].
    #[inline(never)]
    fn release_due(&mut self, now: Tick) {
        let cycle = self.cycles.cycle_of(now);
        let mut next = Tick::MAX;
        for kind in [UP_IN, UP_OUT, DOWN_IN, DOWN_OUT] {
            let mut from = 0;
            while let Some(p) = self.paced[kind].next_from(from) {
                from = p + 1;
                let free = *self.channel(kind, p);
                if free > cycle {
                    // Still busy: it keeps waiting (and is counted once).
                    next = next.min(self.cycles.edge(free));
                    continue;
                }
                self.paced[kind].remove(p);
                match kind {
                    UP_IN => self.up_ready.insert(p),
                    UP_OUT if !self.up[p].blocked && !self.up[p].staged.is_empty() => self.up_dirty.insert(p),
                    DOWN_IN => self.resp_ready.insert(p),
                    DOWN_OUT if !self.down[p].blocked && !self.down[p].staged.is_empty() => {
                        self.down_dirty.insert(p)
                    }
                    _ => {}
                }
            }
        }
        self.pace_at = next;
    }
}

impl<M> Crossbar<M>
where
    M: Carries<MemRequest> + Carries<MemResponse>,
{
    /// Routes what arrived and what waits, starting the round robin at the cycle's port: takes the
    /// banks' responses, sends what has crossed, accepts requests, sends again.
    fn route(&mut self, now: Tick, ctx: &mut Ctx<'_, M>) {
        // The arbiter's priority rotates by one port per cycle, whatever wakes the crossbar.
        let start = (self.cycles.cycle_of(now) % self.up.len() as u64) as usize;
        self.take_responses(now, ctx);
        self.land(now);
        self.flush(ctx);
        self.accept(now, start, ctx);
        self.land(now);
        self.flush(ctx);
    }

    /// Routes the arrivals of the tick being settled as its first wake would have, had they
    /// all been in (requests in round-robin order from the cycle's port, responses in bank
    /// order).
    fn settle(&mut self, now: Tick, ctx: &mut Ctx<'_, M>) {
        if self.settle.take(now) {
            self.route(now, ctx);
        }
    }

    /// Notes every input link with a message arrived (for crossbars with few links).
    fn poll(&mut self, ctx: &Ctx<'_, M>) {
        for (u, port) in self.up.iter().enumerate() {
            if port.hold.is_none() && ctx.peek(port.inp).is_some() {
                self.up_ready.insert(u);
            }
        }
        for (b, port) in self.down.iter().enumerate() {
            if ctx.peek(port.inp).is_some() {
                self.resp_ready.insert(b);
            }
        }
    }

    /// Sets a timer for the next message to cross.
    fn arm(&mut self, ctx: &mut Ctx<'_, M>) {
        let due = self.flight.next_due().unwrap_or(Tick::MAX).min(self.pace_at);
        if due < self.armed {
            ctx.schedule_at(due, Priority::DEFAULT, 0);
            self.armed = due;
        }
    }

    /// Takes every response that arrived from the banks and starts it back towards its port.
    fn take_responses(&mut self, now: Tick, ctx: &mut Ctx<'_, M>) {
        while let Some(b) = self.resp_ready.next_from(0) {
            self.resp_ready.remove(b);
            loop {
                if self.paced()
                    && (ctx.peek(self.down[b].inp).is_none()
                        || !self.channel_free(DOWN_IN, b, now, ctx.stats()))
                {
                    break;
                }
                let Some(msg) = ctx.recv(self.down[b].inp) else { break };
                let Ok(resp) = Carries::<MemResponse>::unwrap_as(msg) else { continue };
                if self.paced() {
                    self.occupy(DOWN_IN, b, now, payload(false, resp.write, resp.bytes));
                }
                let i = (resp.id & 0xffff_ffff) as usize;
                let ok = self.slots.get(i).is_some_and(|s| {
                    s.active && !s.returning && s.generation == (resp.id >> 32) as u32 && s.bank as usize == b
                });
                if !ok {
                    // Not ours: a wiring error; nobody waits for it.
                    ctx.stats().inc(self.stats.stray_responses);
                    continue;
                }
                let s = &mut self.slots[i];
                s.returning = true;
                let m = &mut s.msg;
                (m.addr, m.bytes, m.write, m.issued) = (resp.addr, resp.bytes, resp.write, resp.issued);
                let up = s.up as usize;
                self.travel(now, up, b, i as u32, false, ctx.stats());
            }
        }
    }

    /// Moves every message that has arrived at its far side to that port's queue.
    #[inline(always)]
    fn land(&mut self, now: Tick) {
        // Inlined: most calls find nothing arrived.
        if self.flight.next_due().is_some_and(|due| due <= now) {
            self.land_due(now);
        }
    }

    /// The body of [`Crossbar::land`].
    #[inline(never)]
    fn land_due(&mut self, now: Tick) {
        while let Some((slot, to_bank)) = self.flight.pop_arrived(now) {
            let s = &self.slots[slot as usize];
            if to_bank {
                let b = s.bank as usize;
                let d = &mut self.down[b];
                d.staged.push_back(slot);
                if !d.blocked {
                    self.down_dirty.insert(b);
                }
            } else {
                let u = s.up as usize;
                let p = &mut self.up[u];
                p.staged.push_back(slot);
                if !p.blocked {
                    self.up_dirty.insert(u);
                }
            }
        }
    }

    /// Sends what the ports have queued, until links refuse: every downstream port in order,
    /// then every upstream port, visiting only those with something to send.
    #[inline(always)]
    fn flush(&mut self, ctx: &mut Ctx<'_, M>) {
        // Inlined: most calls have nothing to send (and with nothing sent, no slot frees).
        if !self.down_dirty.is_empty() || !self.up_dirty.is_empty() {
            self.send_staged(ctx);
        }
    }

    /// The body of [`Crossbar::flush`].
    #[inline(never)]
    fn send_staged(&mut self, ctx: &mut Ctx<'_, M>) {
        let (now, paced) = (ctx.now(), self.paced());
        let mut from = 0;
        while let Some(b) = self.down_dirty.next_from(from) {
            from = b + 1;
            self.down_dirty.remove(b);
            let queued = self.down[b].queued;
            while let Some(&slot) = self.down[b].staged.front() {
                if paced && !self.channel_free(DOWN_OUT, b, now, ctx.stats()) {
                    break;
                }
                let d = &mut self.down[b];
                if ctx.send(d.out, M::wrap(self.slots[slot as usize].msg)).is_err() {
                    d.blocked = true;
                    break;
                }
                d.staged.pop_front();
                d.queued -= 1;
                if paced {
                    let m = &self.slots[slot as usize].msg;
                    self.occupy(DOWN_OUT, b, now, payload(true, m.write, m.bytes));
                }
            }
            let d = &self.down[b];
            if d.queued < queued && !d.held.is_empty() {
                // Room in this bank's queue: the ports held for it try again.
                self.up_ready.union_with(&d.held);
            }
        }
        let out_of_slots = self.free.is_empty();
        let mut from = 0;
        while let Some(u) = self.up_dirty.next_from(from) {
            from = u + 1;
            self.up_dirty.remove(u);
            while let Some(&slot) = self.up[u].staged.front() {
                if paced && !self.channel_free(UP_OUT, u, now, ctx.stats()) {
                    break;
                }
                let p = &mut self.up[u];
                let s = &mut self.slots[slot as usize];
                if ctx.send(p.out, M::wrap(s.response())).is_err() {
                    p.blocked = true;
                    break;
                }
                p.staged.pop_front();
                s.active = false;
                let (write, bytes) = (s.msg.write, s.msg.bytes);
                self.free.push(slot);
                ctx.stats().inc(self.stats.responses);
                if write {
                    ctx.stats().inc(self.stats.write_responses);
                }
                ctx.progress();
                if paced {
                    self.occupy(UP_OUT, u, now, payload(false, write, bytes));
                }
            }
        }
        if out_of_slots && !self.free.is_empty() && !self.held.is_empty() {
            // Transactions free again: every held port tries again.
            self.up_ready.union_with(&self.held);
        }
    }

    /// Routes requests from the upstream ports, round robin from port `start`, while slots and
    /// bank queues allow. Only ports with a request arrived or a held request that may fit now
    /// are visited (the others would take nothing).
    fn accept(&mut self, now: Tick, start: usize, ctx: &mut Ctx<'_, M>) {
        if self.up_ready.is_empty() {
            return;
        }
        let mut walk = RoundRobin::new(start);
        while let Some(u) = walk.next(&self.up_ready) {
            self.serve(u, now, ctx);
        }
    }

    /// Routes the requests of upstream port `u` until its link is empty or a request must wait.
    fn serve(&mut self, u: usize, now: Tick, ctx: &mut Ctx<'_, M>) {
        loop {
            let (req, was_held) = match self.up[u].hold.take() {
                Some(r) => (r, true),
                None => {
                    if self.paced()
                        && ctx.peek(self.up[u].inp).is_some()
                        && !self.channel_free(UP_IN, u, now, ctx.stats())
                    {
                        // It stays on its link until the channel is free.
                        self.up_ready.remove(u);
                        return;
                    }
                    match ctx.recv(self.up[u].inp) {
                        None => {
                            self.up_ready.remove(u);
                            return;
                        }
                        // Anything but a request is a wiring error with nothing to answer.
                        Some(msg) => match Carries::<MemRequest>::unwrap_as(msg) {
                            Ok(r) => {
                                if self.paced() {
                                    self.occupy(UP_IN, u, now, payload(true, r.write, r.bytes));
                                }
                                (r, false)
                            }
                            Err(_) => continue,
                        },
                    }
                }
            };
            let bank = self.bank_of(req.addr);
            let full = if self.down[bank].queued >= self.bank_queue {
                Some(self.stats.bank_full_stalls)
            } else if self.free.is_empty() {
                Some(self.stats.in_flight_full_stalls)
            } else {
                None
            };
            if let Some(stat) = full {
                let port = &mut self.up[u];
                port.hold = Some(req);
                if !port.stalled {
                    port.stalled = true;
                    ctx.stats().inc(stat);
                }
                if !was_held {
                    self.held.insert(u);
                    self.down[bank].held.insert(u);
                }
                // Nothing changes for it until its bank sends or a transaction ends.
                self.up_ready.remove(u);
                return;
            }
            if was_held {
                self.held.remove(u);
                self.down[bank].held.remove(u);
            }
            self.up[u].stalled = false;
            let Some(slot) = self.free.pop() else { return };
            let s = &mut self.slots[slot as usize];
            s.generation = s.generation.wrapping_add(1);
            *s = Slot {
                up: u as u32,
                bank: bank as u32,
                id: req.id,
                generation: s.generation,
                active: true,
                returning: false,
                msg: MemRequest { id: u64::from(slot) | u64::from(s.generation) << 32, ..req },
            };
            self.down[bank].queued += 1;
            ctx.stats().inc(self.stats.requests);
            if req.write {
                ctx.stats().inc(self.stats.write_requests);
            }
            ctx.stats().inc(self.down[bank].requests);
            self.travel(now, u, bank, slot, true, ctx.stats());
        }
    }
}

impl<M> Component for Crossbar<M>
where
    M: Carries<MemRequest> + Carries<MemResponse>,
{
    type Msg = M;

    fn name(&self) -> &str {
        &self.name
    }

    /// With at most [`POLL_LINKS`] inputs it polls them all at any arrival wake.
    fn takes_every_input(&self) -> bool {
        self.scan
    }

    /// Arrivals are routed as if the tick's first wake had found them all, whatever the order
    /// of the deliveries (see `cache/ports.rs`): with many input links they are noted as they
    /// come and routed together once the tick's deliveries are over; with few, a delivery
    /// polls every link. Everything else runs at once.
    fn wake(&mut self, why: Wake, ctx: &mut Ctx<'_, M>) {
        let now = ctx.now();
        // Channels freed by this tick let their ports go before anything else, whatever wakes
        // the crossbar first.
        self.release_paced(now);
        match why {
            Wake::Timer(SETTLE) => {
                self.settle(now, ctx);
                self.arm(ctx);
                return;
            }
            // Past the deliveries of this tick: its arrivals first, as its first wake, before
            // anything this wake changes.
            Wake::Timer(_) | Wake::Space(_) | Wake::Start => self.settle(now, ctx),
            Wake::Arrival(_) => {}
        }
        match why {
            Wake::Timer(_) => {
                if now >= self.armed {
                    self.armed = Tick::MAX;
                }
            }
            Wake::Space(link) => match self.role_of_link.get(link) {
                Role::UpOut(u) => {
                    let p = &mut self.up[u as usize];
                    p.blocked = false;
                    if !p.staged.is_empty() {
                        self.up_dirty.insert(u as usize);
                    }
                }
                Role::DownOut(b) => {
                    let d = &mut self.down[b as usize];
                    d.blocked = false;
                    if !d.staged.is_empty() {
                        self.down_dirty.insert(b as usize);
                    }
                }
                _ => {}
            },
            Wake::Arrival(link) => {
                match self.role_of_link.get(link) {
                    // A held port takes nothing until its request fits, which its bank or a
                    // finishing transaction announces.
                    Role::UpIn(u) if self.up[u as usize].hold.is_none() => self.up_ready.insert(u as usize),
                    Role::DownIn(b) => self.resp_ready.insert(b as usize),
                    _ => {}
                }
                if self.scan {
                    self.poll(ctx);
                    self.route(now, ctx);
                    self.arm(ctx);
                    return;
                }
                // More of this tick's messages may still be on their way in: send what has
                // crossed, and route the arrivals once the tick's deliveries are over.
                self.land(now);
                self.flush(ctx);
                if !self.up_ready.is_empty() || !self.resp_ready.is_empty() {
                    self.settle.book(ctx);
                }
                self.arm(ctx);
                return;
            }
            Wake::Start => {}
        }
        self.route(now, ctx);
        self.arm(ctx);
    }

    fn busy(&self) -> bool {
        self.in_flight() > 0 || !self.held.is_empty()
    }

    fn status(&self) -> String {
        let held = self.up.iter().filter(|u| u.hold.is_some()).count();
        let full: Vec<String> = self
            .down
            .iter()
            .enumerate()
            .filter(|(_, d)| d.queued >= self.bank_queue || d.blocked)
            .map(|(b, d)| {
                format!("port{b} ({} queued{})", d.queued, if d.blocked { ", link full" } else { "" })
            })
            .collect();
        format!(
            "{} transactions in flight, {held} requests held{}",
            self.in_flight(),
            if full.is_empty() { String::new() } else { format!("; waiting on {}", full.join(", ")) }
        )
    }
}
