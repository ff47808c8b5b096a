//! An address-interleaved interconnect between requesters and banks.
//!
//! Contract: a [`Crossbar`] takes [`MemRequest`]s on N upstream ports and sends each to one of
//! B downstream ports, chosen by its first byte's address: `bank = (addr / granule) % B`, or the
//! same of an XOR-folded index (see [`BankHash`]). A request crossing a granule boundary goes
//! whole to the bank of its first byte. Each request and each response spends the topology's
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
//! transaction's slot already holds them). The model is of latency and buffering; bandwidth is
//! that of the attached links and components.
//!
//! The same component serves between private caches and the banks of a shared cache, and
//! between those banks and memory channels.

use super::cycles::CycleTracker;
use super::topology::{Topology, TopologyError};
use crate::{MemRequest, MemResponse};
use serde::Deserialize;
use sim_core::{
    ByteSize, Carries, Clock, Component, CounterId, Ctx, LinkId, Priority, Stats, StatsError, Tick, Wake,
};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::marker::PhantomData;
use thiserror::Error;

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
    /// `bank = (g ^ g >> k ^ g >> 2k ^ g >> 3k) % B` with `k = ceil(log2 B)`: higher address
    /// bits spread strided accesses that would otherwise hit one bank.
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
    /// The topology does not fit the ports.
    #[error("crossbar topology: {0}")]
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
    UpOut(u32),
    DownOut(u32),
}

/// One transaction: where it came from and went, and the message in transit.
#[derive(Debug, Clone, Copy)]
struct Slot {
    up: u32,
    bank: u32,
    /// The requester's id.
    id: u64,
    generation: u32,
    active: bool,
    /// Its response was taken (a second answer to the same request is stray).
    returning: bool,
    /// The request with the crossbar's id (on the way down).
    req: MemRequest,
    /// The response with the requester's id (on the way back).
    resp: MemResponse,
}

/// An upstream port.
struct UpPort {
    inp: LinkId,
    out: LinkId,
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
    /// Transactions whose requests are due here, in due order.
    staged: VecDeque<u32>,
    /// Requests travelling here or staged.
    queued: u32,
    blocked: bool,
    requests: CounterId,
}

/// Statistic ids.
struct XbarStats {
    requests: CounterId,
    responses: CounterId,
    bank_full_stalls: CounterId,
    in_flight_full_stalls: CounterId,
    stray_responses: CounterId,
}

/// An address-interleaved crossbar or mesh (see the module docs for its contract).
pub struct Crossbar<M> {
    name: String,
    cycles: CycleTracker,
    granule_shift: u32,
    hash: BankHash,
    hash_shift: u32,
    bank_queue: u32,
    /// Traversal cycles, `[up * banks + bank]`.
    latency: Vec<u64>,
    up: Vec<UpPort>,
    down: Vec<DownPort>,
    slots: Vec<Slot>,
    free: Vec<u32>,
    /// Messages travelling: (due, order, slot, towards the bank).
    flight: BinaryHeap<Reverse<(Tick, u64, u32, bool)>>,
    order: u64,
    role_of_link: Vec<Role>,
    rr: usize,
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
        let granule = cfg.granule.unwrap_or(line);
        for (field, v) in [
            ("granule", granule.bytes()),
            ("max_in_flight", u64::from(cfg.max_in_flight)),
            ("bank_queue", u64::from(cfg.bank_queue)),
        ] {
            if v == 0 {
                return Err(CrossbarError::Zero { field });
            }
        }
        if !granule.bytes().is_power_of_two() {
            return Err(CrossbarError::Granule(granule));
        }
        if cfg.max_in_flight > MAX_IN_FLIGHT {
            return Err(CrossbarError::TooManyInFlight(cfg.max_in_flight));
        }
        let (n_up, n_down) = (links.upstream.len(), links.downstream.len());
        let latency = cfg.topology.latency_table(n_up, n_down)?;
        let counter = |s: &mut Stats, leaf: &str| s.counter(&format!("{name}.{leaf}"));
        let xstats = XbarStats {
            requests: counter(stats, "requests")?,
            responses: counter(stats, "responses")?,
            bank_full_stalls: counter(stats, "bank_full_stalls")?,
            in_flight_full_stalls: counter(stats, "in_flight_full_stalls")?,
            stray_responses: counter(stats, "stray_responses")?,
        };
        let mut down = Vec::with_capacity(n_down);
        for (b, &(out, inp)) in links.downstream.iter().enumerate() {
            down.push(DownPort {
                out,
                inp,
                staged: VecDeque::with_capacity(cfg.bank_queue.min(4096) as usize),
                queued: 0,
                blocked: false,
                requests: counter(stats, &format!("port{b}.requests"))?,
            });
        }
        let max_link = links
            .upstream
            .iter()
            .chain(links.downstream)
            .flat_map(|&(a, b)| [a.index(), b.index()])
            .max()
            .unwrap_or(0);
        let mut role_of_link = vec![Role::Other; max_link + 1];
        for (u, &(_, out)) in links.upstream.iter().enumerate() {
            role_of_link[out.index()] = Role::UpOut(u as u32);
        }
        for (b, &(out, _)) in links.downstream.iter().enumerate() {
            role_of_link[out.index()] = Role::DownOut(b as u32);
        }
        let slots = cfg.max_in_flight as usize;
        let blank = MemRequest::read(0, 0, 0, 0);
        Ok(Self {
            name: name.to_owned(),
            cycles: CycleTracker::new(clock),
            granule_shift: granule.bytes().trailing_zeros(),
            hash: cfg.hash,
            hash_shift: u64::BITS - (n_down as u64 - 1).leading_zeros(),
            bank_queue: cfg.bank_queue,
            latency,
            up: links
                .upstream
                .iter()
                .map(|&(inp, out)| UpPort {
                    inp,
                    out,
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
                    req: blank,
                    resp: blank.respond()
                };
                slots
            ],
            free: (0..slots as u32).rev().collect(),
            flight: BinaryHeap::with_capacity(slots),
            order: 0,
            role_of_link,
            rr: 0,
            armed: Tick::MAX,
            stats: xstats,
            _msg: PhantomData,
        })
    }

    /// The downstream port serving `addr`.
    #[inline]
    pub fn bank_of(&self, addr: u64) -> usize {
        let g = addr >> self.granule_shift;
        let h = match self.hash {
            BankHash::None => g,
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

    fn travel(&mut self, due: Tick, slot: u32, to_bank: bool) {
        self.order += 1;
        self.flight.push(Reverse((due, self.order, slot, to_bank)));
    }
}

impl<M> Crossbar<M>
where
    M: Carries<MemRequest> + Carries<MemResponse>,
{
    fn pump(&mut self, ctx: &mut Ctx<'_, M>) {
        let now = ctx.now();
        self.take_responses(now, ctx);
        self.land(now);
        self.flush(ctx);
        self.accept(now, ctx);
        self.land(now);
        self.flush(ctx);
        if let Some(Reverse((due, ..))) = self.flight.peek()
            && *due < self.armed
        {
            ctx.schedule_at(*due, Priority::DEFAULT, 0);
            self.armed = *due;
        }
    }

    /// Takes every response from the banks and starts it back towards its port.
    fn take_responses(&mut self, now: Tick, ctx: &mut Ctx<'_, M>) {
        for b in 0..self.down.len() {
            while let Some(msg) = ctx.recv(self.down[b].inp) {
                let Ok(resp) = Carries::<MemResponse>::unwrap_as(msg) else { continue };
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
                s.resp = MemResponse { id: s.id, ..resp };
                let lat = self.latency[s.up as usize * self.down.len() + b];
                let due = self.due(now, lat);
                self.travel(due, i as u32, false);
            }
        }
    }

    /// Moves every message that has arrived at its far side to that port's queue.
    fn land(&mut self, now: Tick) {
        while let Some(&Reverse((due, _, slot, to_bank))) = self.flight.peek() {
            if due > now {
                return;
            }
            self.flight.pop();
            let s = &self.slots[slot as usize];
            if to_bank {
                self.down[s.bank as usize].staged.push_back(slot);
            } else {
                self.up[s.up as usize].staged.push_back(slot);
            }
        }
    }

    /// Sends what the ports have queued, until links refuse.
    fn flush(&mut self, ctx: &mut Ctx<'_, M>) {
        for d in &mut self.down {
            if d.blocked {
                continue;
            }
            while let Some(&slot) = d.staged.front() {
                if ctx.send(d.out, M::wrap(self.slots[slot as usize].req)).is_err() {
                    d.blocked = true;
                    break;
                }
                d.staged.pop_front();
                d.queued -= 1;
            }
        }
        for u in &mut self.up {
            if u.blocked {
                continue;
            }
            while let Some(&slot) = u.staged.front() {
                let s = &mut self.slots[slot as usize];
                if ctx.send(u.out, M::wrap(s.resp)).is_err() {
                    u.blocked = true;
                    break;
                }
                u.staged.pop_front();
                s.active = false;
                self.free.push(slot);
                ctx.stats().inc(self.stats.responses);
                ctx.progress();
            }
        }
    }

    /// Routes requests from the upstream ports, round robin, while slots and bank queues allow.
    fn accept(&mut self, now: Tick, ctx: &mut Ctx<'_, M>) {
        let n = self.up.len();
        self.rr = (self.rr + 1) % n;
        for k in 0..n {
            let u = (self.rr + k) % n;
            loop {
                let req = match self.up[u].hold.take() {
                    Some(r) => r,
                    None => match ctx.recv(self.up[u].inp) {
                        None => break,
                        // Anything but a request is a wiring error with nothing to answer.
                        Some(msg) => match Carries::<MemRequest>::unwrap_as(msg) {
                            Ok(r) => r,
                            Err(_) => continue,
                        },
                    },
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
                    break;
                }
                self.up[u].stalled = false;
                let Some(slot) = self.free.pop() else { break };
                let s = &mut self.slots[slot as usize];
                s.generation = s.generation.wrapping_add(1);
                *s = Slot {
                    up: u as u32,
                    bank: bank as u32,
                    id: req.id,
                    generation: s.generation,
                    active: true,
                    returning: false,
                    req: MemRequest { id: u64::from(slot) | u64::from(s.generation) << 32, ..req },
                    resp: s.resp,
                };
                self.down[bank].queued += 1;
                ctx.stats().inc(self.stats.requests);
                ctx.stats().inc(self.down[bank].requests);
                let due = self.due(now, self.latency[u * self.down.len() + bank]);
                self.travel(due, slot, true);
            }
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

    fn wake(&mut self, why: Wake, ctx: &mut Ctx<'_, M>) {
        match why {
            Wake::Timer(_) => {
                if ctx.now() >= self.armed {
                    self.armed = Tick::MAX;
                }
            }
            Wake::Space(link) => match self.role_of_link.get(link.index()) {
                Some(&Role::UpOut(u)) => self.up[u as usize].blocked = false,
                Some(&Role::DownOut(b)) => self.down[b as usize].blocked = false,
                _ => {}
            },
            Wake::Arrival(_) | Wake::Start => {}
        }
        self.pump(ctx);
    }

    fn busy(&self) -> bool {
        self.in_flight() > 0 || self.up.iter().any(|u| u.hold.is_some())
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
