//! The event-driven engine: components, wake-ups and deterministic event order.
//!
//! Contract: a [`Component`] owns its state and is only ever run by the engine, through
//! [`Component::wake`], when one of its own timers fires, when a message arrives on one of its
//! input links, or when a full output link it was refused by frees a slot. An idle component
//! schedules nothing and costs nothing. Events fire in (tick, priority, insertion sequence)
//! order, so two runs of the same model are identical bit for bit.
//!
//! The engine is generic over the component type: a model made of one `enum` of component kinds
//! gets static dispatch on the hot path; `Box<dyn Component<Msg = M>>` also works where
//! flexibility matters more than a few nanoseconds per event.

use crate::event_queue::EventQueue;
use crate::link::{LinkError, LinkId, LinkReport, LinkSpec, LinkState, NO_WAKE_GROUP};
use crate::stats::Stats;
use crate::time::Tick;
use crate::watchdog::{BlockedComponent, StallError, StallReport, WatchdogConfig};
use std::collections::VecDeque;
use thiserror::Error;

/// Index of a component in its engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ComponentId(pub(crate) u32);

impl ComponentId {
    /// The component's index in its engine (dense, from 0).
    pub fn index(self) -> usize {
        self.0 as usize
    }

    /// The id of the component at `index` (for walking an engine's components).
    pub fn from_index(index: usize) -> Self {
        Self(index as u32)
    }
}

/// Order among events of the same tick: lower runs first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Priority(pub u8);

impl Priority {
    /// Message deliveries and freed-slot notices: before clocked work of the same tick.
    pub const DELIVERY: Priority = Priority(64);
    /// A component's own timers.
    pub const DEFAULT: Priority = Priority(128);
    /// Work that must see everything else of its tick (end-of-cycle bookkeeping).
    pub const LATE: Priority = Priority(192);
}

/// Why a component is being run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wake {
    /// Once, at tick 0, before anything else.
    Start,
    /// A timer the component scheduled, with the token it chose.
    Timer(u64),
    /// A message is ready on this input link.
    Arrival(LinkId),
    /// This output link, which refused a send, has a free slot.
    Space(LinkId),
}

/// A simulated hardware block.
pub trait Component {
    /// The message type carried by the links of this model.
    type Msg;
    /// Hierarchical name (`dae.core0.au`), used in reports.
    fn name(&self) -> &str;
    /// Runs the component for one wake-up.
    fn wake(&mut self, why: Wake, ctx: &mut Ctx<'_, Self::Msg>);
    /// Whether the component still holds unfinished work (the watchdog asks when nothing moves).
    fn busy(&self) -> bool {
        false
    }
    /// One line on what the component waits for, for watchdog reports.
    fn status(&self) -> String {
        String::new()
    }
    /// Whether every arrival wake takes what has arrived on all of its inputs, whichever link
    /// the wake names. The engine then merges the arrivals of all its input links into one wake
    /// per tick ([`Engine::merge_arrivals`]) when it starts running, which spares wakes and
    /// changes nothing the component does.
    fn takes_every_input(&self) -> bool {
        false
    }
}

impl<M> Component for Box<dyn Component<Msg = M>> {
    type Msg = M;
    fn name(&self) -> &str {
        (**self).name()
    }
    fn wake(&mut self, why: Wake, ctx: &mut Ctx<'_, M>) {
        (**self).wake(why, ctx)
    }
    fn busy(&self) -> bool {
        (**self).busy()
    }
    fn status(&self) -> String {
        (**self).status()
    }
    fn takes_every_input(&self) -> bool {
        (**self).takes_every_input()
    }
}

/// Engine state that components reach through [`Ctx`]: time, the event queue, links, stats.
pub struct Kernel<M> {
    now: Tick,
    queue: EventQueue,
    links: Vec<LinkState<M>>,
    stats: Stats,
    /// Per wake group (see [`LinkState`]'s `wake_group`), the ticks of its arrival wakes still
    /// pending, earliest first: one wake per tick, however the group's links' latencies (or
    /// [`Ctx::send_at`]) interleave their arrivals.
    wake_groups: Vec<VecDeque<Tick>>,
    events: u64,
    last_progress: Tick,
}

impl<M> Kernel<M> {
    #[inline]
    fn push(&mut self, tick: Tick, priority: Priority, target: ComponentId, why: Wake) {
        self.queue.push(tick, priority, target, why);
    }

    /// Notes an arrival at `tick`, earlier than the group's last pending wake (links of different
    /// latencies, or a send ahead of time), in a wake group's pending ticks; returns whether it
    /// needs a wake of its own (no other arrival of the group is pending at that tick).
    #[cold]
    #[inline(never)]
    fn join_out_of_order(pending: &mut VecDeque<Tick>, tick: Tick) -> bool {
        let at = pending.partition_point(|&t| t < tick);
        if pending.get(at) == Some(&tick) {
            return false;
        }
        pending.insert(at, tick);
        true
    }
}

/// What a component may do while it runs: read the time, schedule its own timers, send and
/// receive on its links, update statistics, report progress.
pub struct Ctx<'a, M> {
    kernel: &'a mut Kernel<M>,
    me: ComponentId,
}

impl<M> Ctx<'_, M> {
    /// The current tick.
    #[inline]
    pub fn now(&self) -> Tick {
        self.kernel.now
    }

    /// The running component's id.
    #[inline]
    pub fn me(&self) -> ComponentId {
        self.me
    }

    /// Wakes this component with `Wake::Timer(token)` at `tick` (not before now).
    #[inline]
    pub fn schedule_at(&mut self, tick: Tick, priority: Priority, token: u64) {
        let tick = tick.max(self.kernel.now);
        self.kernel.push(tick, priority, self.me, Wake::Timer(token));
    }

    /// Wakes this component with `Wake::Timer(token)` after `delay` ticks.
    #[inline]
    pub fn schedule_in(&mut self, delay: Tick, token: u64) {
        let tick = self.kernel.now.saturating_add(delay);
        self.kernel.push(tick, Priority::DEFAULT, self.me, Wake::Timer(token));
    }

    /// Whether a send on `link` would be accepted now.
    #[inline]
    pub fn can_send(&self, link: LinkId) -> bool {
        !self.kernel.links[link.index()].is_full()
    }

    /// Messages on output `link` that its receiver has not popped yet: the link's capacity less
    /// the sender's credits, each pop returning one (the same back-pressure `send` obeys).
    #[inline]
    pub fn unpopped(&self, link: LinkId) -> usize {
        let l = &self.kernel.links[link.index()];
        debug_assert_eq!(l.from, self.me, "{} asks about a link it does not send on", l.name);
        l.fifo.len()
    }

    /// Asks for a [`Wake::Space`] on output `link` at the receiver's next pop, as a refused send
    /// does, for a sender that waits on the receiver's progress rather than on room.
    #[inline]
    pub fn wake_on_pop(&mut self, link: LinkId) {
        self.kernel.links[link.index()].sender_waiting = true;
    }

    /// Sends `msg` on `link`; it arrives after the link's latency. A full link refuses and gives
    /// the message back; the sender is then woken with [`Wake::Space`] when a slot frees.
    #[inline(always)]
    pub fn send(&mut self, link: LinkId, msg: M) -> Result<(), M> {
        self.send_at(link, msg, self.kernel.now)
    }

    /// Sends `msg` on `link` now as if it left at tick `depart` (not before now): it arrives the
    /// link's latency after `depart`, and never before the message sent ahead of it (a later
    /// `depart` than that message's keeps the link's order). It occupies a slot of the link from
    /// now. A sender that knows now when a message will leave (an answer due a fixed number of
    /// cycles ahead) spares the timer that would send it then. Refused as [`Ctx::send`].
    #[inline(always)]
    pub fn send_at(&mut self, link: LinkId, msg: M, depart: Tick) -> Result<(), M> {
        let depart = depart.max(self.kernel.now);
        let l = &mut self.kernel.links[link.index()];
        debug_assert_eq!(l.from, self.me, "{} sends on a link it does not own", l.name);
        if l.is_full() {
            l.sender_waiting = true;
            l.refused += 1;
            return Err(msg);
        }
        let mut arrival = l.arrival(depart);
        if let Some(&(ahead, _)) = l.fifo.back() {
            // A message sent ahead of time may be due after this one: keep the link's order.
            arrival = arrival.max(ahead);
        }
        l.fifo.push_back((arrival, msg));
        l.sent += 1;
        let (to, group) = (l.to, l.wake_group);
        // A link in a wake group finds the group's wake for this tick already pending when
        // another message of the group arrives at the same tick (arrivals lie in the future, so
        // it cannot have fired yet).
        if group != NO_WAKE_GROUP {
            let pending = &mut self.kernel.wake_groups[group as usize];
            match pending.back() {
                Some(&last) if last == arrival => return Ok(()),
                Some(&last) if last > arrival => {
                    if !Kernel::<M>::join_out_of_order(pending, arrival) {
                        return Ok(());
                    }
                }
                _ => pending.push_back(arrival),
            }
        }
        self.kernel.push(arrival, Priority::DELIVERY, to, Wake::Arrival(link));
        Ok(())
    }

    /// Pops the oldest message that has arrived on input `link`, if any.
    #[inline]
    pub fn recv(&mut self, link: LinkId) -> Option<M> {
        let now = self.kernel.now;
        let l = &mut self.kernel.links[link.index()];
        debug_assert_eq!(l.to, self.me, "{} receives on a link it does not own", l.name);
        match l.fifo.front() {
            Some((arrival, _)) if *arrival <= now => {}
            _ => return None,
        }
        let (_, msg) = l.fifo.pop_front()?;
        if l.sender_waiting {
            l.sender_waiting = false;
            let from = l.from;
            self.kernel.push(now, Priority::DELIVERY, from, Wake::Space(link));
        }
        Some(msg)
    }

    /// The oldest arrived message on input `link`, without popping it.
    #[inline]
    pub fn peek(&self, link: LinkId) -> Option<&M> {
        let l = &self.kernel.links[link.index()];
        match l.fifo.front() {
            Some((arrival, m)) if *arrival <= self.kernel.now => Some(m),
            _ => None,
        }
    }

    /// The oldest message queued on input `link`, whether or not it has arrived yet. Only for
    /// host-side hints such as prefetching a table the message will index: a model must not
    /// let it change simulated behaviour, which would let a component see the future.
    #[inline]
    pub fn peek_queued(&self, link: LinkId) -> Option<&M> {
        self.kernel.links[link.index()].fifo.front().map(|(_, m)| m)
    }

    /// Statistics registry (register names at construction; increment by id here).
    #[inline]
    pub fn stats(&mut self) -> &mut Stats {
        &mut self.kernel.stats
    }

    /// Tells the watchdog that useful work completed (an instruction retired, a request served).
    #[inline]
    pub fn progress(&mut self) {
        self.kernel.last_progress = self.kernel.now;
    }
}

/// Errors from building or running an engine.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum EngineError {
    /// A link could not be built.
    #[error(transparent)]
    Link(#[from] LinkError),
    /// A reserved component id was never filled in.
    #[error("component slot {0} was reserved but never installed")]
    Missing(u32),
    /// A component id does not belong to this engine or is already filled.
    #[error("component slot {0} does not exist or is already installed")]
    BadSlot(u32),
    /// A link id does not belong to this engine.
    #[error("link {0} does not exist in this engine")]
    UnknownLink(u32),
    /// The run stopped because nothing could move.
    #[error(transparent)]
    Stall(#[from] StallError),
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunSummary {
    /// Tick of the last event processed.
    pub end_tick: Tick,
    /// Events processed in this run.
    pub events: u64,
    /// Whether the run stopped at the time limit with events still pending.
    pub hit_limit: bool,
}

/// The simulation engine: components, links and the event queue.
pub struct Engine<C: Component> {
    components: Vec<Option<C>>,
    kernel: Kernel<C::Msg>,
    watchdog: WatchdogConfig,
    started: bool,
}

impl<C: Component> Default for Engine<C> {
    fn default() -> Self {
        Self::new()
    }
}

impl<C: Component> Engine<C> {
    /// An empty engine at tick 0.
    pub fn new() -> Self {
        Self {
            components: Vec::new(),
            kernel: Kernel {
                now: 0,
                queue: EventQueue::new(),
                links: Vec::new(),
                stats: Stats::new(),
                wake_groups: Vec::new(),
                events: 0,
                last_progress: 0,
            },
            watchdog: WatchdogConfig::default(),
            started: false,
        }
    }

    /// Replaces the watchdog settings.
    pub fn set_watchdog(&mut self, cfg: WatchdogConfig) {
        self.watchdog = cfg;
    }

    /// Adds a component and returns its id.
    pub fn add(&mut self, c: C) -> ComponentId {
        self.components.push(Some(c));
        ComponentId(self.components.len() as u32 - 1)
    }

    /// Reserves an id for a component built later (so links to it can be made first).
    pub fn reserve(&mut self) -> ComponentId {
        self.components.push(None);
        ComponentId(self.components.len() as u32 - 1)
    }

    /// Fills a reserved slot.
    pub fn install(&mut self, id: ComponentId, c: C) -> Result<(), EngineError> {
        match self.components.get_mut(id.index()) {
            Some(slot @ None) => {
                *slot = Some(c);
                Ok(())
            }
            _ => Err(EngineError::BadSlot(id.0)),
        }
    }

    /// Connects `from` to `to` with a new link.
    pub fn connect(
        &mut self,
        from: ComponentId,
        to: ComponentId,
        spec: LinkSpec,
    ) -> Result<LinkId, EngineError> {
        for end in [from, to] {
            if end.index() >= self.components.len() {
                return Err(LinkError::UnknownEndpoint { name: spec.name, endpoint: end.0 }.into());
            }
        }
        self.kernel.links.push(LinkState::new(spec, from, to)?);
        Ok(LinkId(self.kernel.links.len() as u32 - 1))
    }

    /// Makes `link` coalesce arrivals: messages arriving at the same tick share one
    /// [`Wake::Arrival`], so its receiver must drain every arrived message when woken (with
    /// [`Ctx::recv`] until it returns `None`). Fails for a link this engine does not have.
    pub fn coalesce_arrivals(&mut self, link: LinkId) -> Result<(), EngineError> {
        let k = &mut self.kernel;
        let l = k.links.get_mut(link.index()).ok_or(EngineError::UnknownLink(link.0))?;
        // A link already in a group (its receiver's) coalesces already.
        if l.wake_group == NO_WAKE_GROUP {
            l.wake_group = k.wake_groups.len() as u32;
            k.wake_groups.push(VecDeque::new());
        }
        Ok(())
    }

    /// Makes every link into `component` that exists now merge its arrivals with the others':
    /// messages arriving at the same tick on any of them share one [`Wake::Arrival`], which
    /// names one of those links. The component must therefore take every arrived message of
    /// every input whenever it wakes for an arrival, whichever link the wake names (an access
    /// unit's step does). A component that says so ([`Component::takes_every_input`]) gets this
    /// when the engine starts running; calling it directly is for the others, after connecting
    /// the component's inputs. Fails for an id this engine does not have.
    pub fn merge_arrivals(&mut self, component: ComponentId) -> Result<(), EngineError> {
        if component.index() >= self.components.len() {
            return Err(EngineError::BadSlot(component.0));
        }
        let k = &mut self.kernel;
        let group = k.wake_groups.len() as u32;
        k.wake_groups.push(VecDeque::new());
        for l in k.links.iter_mut().filter(|l| l.to == component) {
            l.wake_group = group;
        }
        Ok(())
    }

    /// The statistics registry (register stat names here while building the model).
    pub fn stats_mut(&mut self) -> &mut Stats {
        &mut self.kernel.stats
    }

    /// The statistics registry.
    pub fn stats(&self) -> &Stats {
        &self.kernel.stats
    }

    /// The current tick.
    pub fn now(&self) -> Tick {
        self.kernel.now
    }

    /// The tick of the earliest pending event (`None`: nothing is pending). A caller running
    /// in slices starts the next slice there, so an idle gap costs one step.
    pub fn next_event(&self) -> Option<Tick> {
        self.kernel.queue.next_tick()
    }

    /// Events processed so far.
    pub fn events(&self) -> u64 {
        self.kernel.events
    }

    /// Number of component slots.
    pub fn component_count(&self) -> usize {
        self.components.len()
    }

    /// A component, for reading its results after a run.
    pub fn component(&self, id: ComponentId) -> Option<&C> {
        self.components.get(id.index()).and_then(Option::as_ref)
    }

    /// A component, mutably, for configuring it between runs (turning on a trace, say).
    pub fn component_mut(&mut self, id: ComponentId) -> Option<&mut C> {
        self.components.get_mut(id.index()).and_then(Option::as_mut)
    }

    /// A component and the statistics registry together, for a component that books its last
    /// figures after the run (see `mem_model::dram::Dram::finish`).
    pub fn component_and_stats_mut(&mut self, id: ComponentId) -> Option<(&mut C, &mut Stats)> {
        let c = self.components.get_mut(id.index()).and_then(Option::as_mut)?;
        Some((c, &mut self.kernel.stats))
    }

    /// Snapshots of every link.
    pub fn link_reports(&self) -> Vec<LinkReport> {
        self.kernel.links.iter().map(|l| self.link_report(l)).collect()
    }

    fn link_report(&self, l: &LinkState<C::Msg>) -> LinkReport {
        let name_of = |id: ComponentId| {
            self.component(id).map_or_else(|| format!("<slot {}>", id.0), |c| c.name().to_string())
        };
        LinkReport {
            name: l.name.clone(),
            from: name_of(l.from),
            to: name_of(l.to),
            occupancy: l.fifo.len(),
            capacity: l.capacity,
            sender_waiting: l.sender_waiting,
            sent: l.sent,
            refused: l.refused,
        }
    }

    fn stall_report(&self) -> StallReport {
        let blocked = self
            .components
            .iter()
            .flatten()
            .filter(|c| c.busy())
            .map(|c| BlockedComponent { name: c.name().to_string(), status: c.status() })
            .collect();
        let mut links: Vec<LinkReport> =
            self.kernel.links.iter().filter(|l| !l.fifo.is_empty()).map(|l| self.link_report(l)).collect();
        links.sort_by_key(|l| (l.occupancy < l.capacity as usize, l.name.clone()));
        StallReport { tick: self.kernel.now, blocked, links }
    }

    /// Runs until no event is pending (or the next event lies beyond `until`). Returns an error
    /// naming the blocked components and links when the model deadlocks or livelocks.
    pub fn run(&mut self, until: Option<Tick>) -> Result<RunSummary, EngineError> {
        if !self.started {
            if let Some(i) = self.components.iter().position(Option::is_none) {
                return Err(EngineError::Missing(i as u32));
            }
            for i in 0..self.components.len() {
                self.kernel.push(0, Priority(0), ComponentId(i as u32), Wake::Start);
                if self.components[i].as_ref().is_some_and(Component::takes_every_input) {
                    self.merge_arrivals(ComponentId(i as u32))?;
                }
            }
            self.started = true;
        }
        let first = self.kernel.events;
        let limit = until.unwrap_or(Tick::MAX);
        while let Some(tick) = self.kernel.queue.next_tick() {
            if tick > limit {
                return Ok(RunSummary {
                    end_tick: self.kernel.now,
                    events: self.kernel.events - first,
                    hit_limit: true,
                });
            }
            let Some((_, target, why)) = self.kernel.queue.pop() else { break };
            self.kernel.now = tick;
            self.kernel.events += 1;
            if let Wake::Arrival(link) = why {
                let group = self.kernel.links[link.index()].wake_group;
                if group != NO_WAKE_GROUP {
                    // Its wake is this one: later arrivals of the group at this tick are in already.
                    let pending = &mut self.kernel.wake_groups[group as usize];
                    if pending.front() == Some(&tick) {
                        pending.pop_front();
                    }
                }
            }
            if let Some(c) = self.components[target.index()].as_mut() {
                let mut ctx = Ctx { kernel: &mut self.kernel, me: target };
                c.wake(why, &mut ctx);
            }
            if let Some(window) = self.watchdog.livelock_window
                && self.kernel.now.saturating_sub(self.kernel.last_progress) > window
            {
                if self.components.iter().flatten().any(|c| c.busy()) {
                    return Err(StallError::Livelock { window, report: self.stall_report() }.into());
                }
                // Nobody holds work: events without progress are legitimate (idle clocks).
                self.kernel.last_progress = self.kernel.now;
            }
        }
        let stuck = self.components.iter().flatten().any(|c| c.busy())
            || self.kernel.links.iter().any(|l| !l.fifo.is_empty());
        if stuck {
            return Err(StallError::Deadlock(self.stall_report()).into());
        }
        Ok(RunSummary { end_tick: self.kernel.now, events: self.kernel.events - first, hit_limit: false })
    }
}
