//! Bounded latency links: the only way components talk.
//!
//! A link is a FIFO from one component to another with a fixed latency of at least one cycle of
//! its clock (a message sent on an edge arrives on the edge `latency` cycles later; one sent
//! between edges, as long after) and a capacity in messages.
//!
//! Each message normally wakes its receiver once. A link may instead *coalesce* arrivals
//! ([`crate::Engine::coalesce_arrivals`]): messages that arrive at the same tick then share one
//! wake, which spares an event per message when a component answers many requests in one cycle;
//! its receiver must take every arrived message when it is woken. A receiver may go further and
//! *merge* the arrivals of all its input links ([`crate::Engine::merge_arrivals`]): one wake per
//! tick for all of them. A message occupies the link from the tick it is sent
//! until the receiver pops it, so a receiver that stops popping back-pressures its sender: a send
//! into a full link is refused and the sender is woken (with [`crate::Wake::Space`]) as soon as
//! the receiver frees a slot. Latency is constant, so messages arrive in the order they were
//! sent; a message sent ahead of time ([`crate::Ctx::send_at`]) arrives the latency after the
//! tick it names, and one sent after it never arrives before it. The link's latency is also the
//! lookahead a parallel engine would use for messages (as in DAM and SST); back-pressure is not
//! delayed yet: the [`crate::Wake::Space`] reaches the sender in the tick the receiver frees the
//! slot, so a parallel engine would first have to give it a latency across partitions (a model
//! change, `docs/performance.md`).

use crate::engine::ComponentId;
use crate::time::{Clock, Tick};
use std::collections::VecDeque;
use thiserror::Error;

/// Index of a link in its engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LinkId(pub(crate) u32);

impl LinkId {
    /// The link's index in its engine (dense, from 0).
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// How to build a link: its name, clock, latency and capacity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkSpec {
    /// Hierarchical name used in reports (`dae.core0.to_mem`).
    pub name: String,
    /// Clock domain the latency is counted in.
    pub clock: Clock,
    /// Latency in cycles of `clock`; at least 1.
    pub latency_cycles: u64,
    /// Messages the link holds (in flight plus waiting to be popped); at least 1.
    pub capacity: u32,
}

/// Why a link could not be built.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum LinkError {
    /// Zero-latency links would let components see each other's state in the same tick.
    #[error("link {name}: latency must be at least 1 cycle")]
    ZeroLatency {
        /// The link's name.
        name: String,
    },
    /// A zero-capacity link can never carry a message.
    #[error("link {name}: capacity must be at least 1 message")]
    ZeroCapacity {
        /// The link's name.
        name: String,
    },
    /// A link endpoint names a component the engine does not have.
    #[error("link {name}: endpoint {endpoint} is not a component of this engine")]
    UnknownEndpoint {
        /// The link's name.
        name: String,
        /// The missing component's index.
        endpoint: u32,
    },
}

/// Run-time state of one link, owned by the engine.
#[derive(Debug)]
pub(crate) struct LinkState<M> {
    pub(crate) name: String,
    pub(crate) from: ComponentId,
    pub(crate) to: ComponentId,
    pub(crate) capacity: u32,
    /// Messages with their arrival tick, oldest first.
    pub(crate) fifo: VecDeque<(Tick, M)>,
    /// The sender was refused and waits to be woken when a slot frees.
    pub(crate) sender_waiting: bool,
    pub(crate) sent: u64,
    pub(crate) refused: u64,
    /// The wake group whose messages arriving at the same tick share one
    /// [`crate::Wake::Arrival`] ([`NO_WAKE_GROUP`]: none, a wake per message): the link's own
    /// when it coalesces ([`crate::Engine::coalesce_arrivals`]), its receiver's when that
    /// merges its inputs ([`crate::Engine::merge_arrivals`]).
    pub(crate) wake_group: u32,
    /// The clock the latency is counted in, and the latency in its cycles.
    clock: Clock,
    latency_cycles: u64,
    /// The last departure asked about and its arrival: a sender sends many messages per tick.
    memo: (Tick, Tick),
}

/// A link in no wake group.
pub(crate) const NO_WAKE_GROUP: u32 = u32::MAX;

impl<M> LinkState<M> {
    pub(crate) fn new(spec: LinkSpec, from: ComponentId, to: ComponentId) -> Result<Self, LinkError> {
        if spec.latency_cycles == 0 {
            return Err(LinkError::ZeroLatency { name: spec.name });
        }
        if spec.capacity == 0 {
            return Err(LinkError::ZeroCapacity { name: spec.name });
        }
        Ok(Self {
            name: spec.name,
            from,
            to,
            capacity: spec.capacity,
            fifo: VecDeque::with_capacity(spec.capacity.min(1024) as usize),
            sender_waiting: false,
            sent: 0,
            refused: 0,
            wake_group: NO_WAKE_GROUP,
            memo: (Tick::MAX, Tick::MAX),
            clock: spec.clock,
            latency_cycles: spec.latency_cycles,
        })
    }

    /// When a message sent at `now` arrives: `latency_cycles` periods later, measured between the
    /// clock's edges, so that a message sent on an edge arrives exactly on the edge that many
    /// cycles later. (Adding the latency rounded up to whole ticks would land 1 ps past that edge
    /// on a clock whose period is not a whole number of ticks, 3 GHz for one, and a receiver
    /// that starts work on its next edge would see a 1-cycle link take 2.) A message sent
    /// between edges arrives the same span later. Senders mostly send several messages per
    /// tick: the last answer is kept.
    #[inline]
    pub(crate) fn arrival(&mut self, now: Tick) -> Tick {
        if now != self.memo.0 {
            let n = self.clock.cycle_at(now);
            let span = self.clock.edge(n.saturating_add(self.latency_cycles)) - self.clock.edge(n);
            self.memo = (now, now.saturating_add(span));
        }
        self.memo.1
    }

    #[inline]
    pub(crate) fn is_full(&self) -> bool {
        self.fifo.len() >= self.capacity as usize
    }
}

/// A snapshot of one link, for reports and for the watchdog.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkReport {
    /// The link's name.
    pub name: String,
    /// Name of the sending component.
    pub from: String,
    /// Name of the receiving component.
    pub to: String,
    /// Messages held now.
    pub occupancy: usize,
    /// Messages the link can hold.
    pub capacity: u32,
    /// Whether the sender is blocked waiting for a free slot.
    pub sender_waiting: bool,
    /// Messages sent over the whole run.
    pub sent: u64,
    /// Sends refused because the link was full.
    pub refused: u64,
}
