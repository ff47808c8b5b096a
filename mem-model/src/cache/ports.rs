//! Finding the ports that have work without looking at the others.
//!
//! Components with many ports keep a [`PortSet`] per kind of pending work (ports with requests
//! arrived, ports with messages to send), so that a wake-up visits only the ports that have
//! something to do, in ascending or round-robin order. Two levels: a word of 64 members, and a
//! summary bit per word saying it is not empty, so finding the next member costs a few word
//! operations for any set of up to 4096 members (one more summary word per 4096 beyond).
//!
//! Arrivals. A component that polled every input link on every wake-up saw, at its first wake
//! of a tick, every message arriving in that tick, whichever delivery woke it; the engine
//! delivers a tick's messages one wake-up each, in send order. To decide as if it had seen them
//! all without polling, a component with many input links notes each arrival as it is
//! delivered and acts on them once the tick's deliveries are over: at a timer of priority
//! [`SETTLE_PRIORITY`] (right after the deliveries, which come first in their tick, before any
//! component's own timers) or at its next wake-up of another kind, whichever comes first. A
//! component with at most [`SCAN_LINKS`] input links polls them instead when a delivery wakes
//! it: a few peeks cost less than a timer.

use sim_core::{Ctx, LinkId, Priority, Tick};

/// Timer token of the timer that acts on a tick's arrivals.
pub const SETTLE: u64 = u64::MAX;
/// Priority of that timer: after every delivery of its tick, before the components' own timers.
pub const SETTLE_PRIORITY: Priority = Priority(Priority::DELIVERY.0 + 1);
/// Input links a component polls when a delivery wakes it, at most.
pub const SCAN_LINKS: usize = 8;

/// The tick whose arrivals wait for its deliveries to be over: a component books the
/// [`SETTLE`] timer at most once a tick, and acts on the tick's arrivals when it fires (or at
/// its next wake of another kind in that tick).
#[derive(Debug, Clone, Copy)]
pub struct Settle(Tick);

impl Default for Settle {
    fn default() -> Self {
        Settle(Tick::MAX)
    }
}

impl Settle {
    /// Books the [`SETTLE`] timer for the current tick, unless it is booked already.
    #[inline]
    pub fn book<M>(&mut self, ctx: &mut Ctx<'_, M>) {
        let now = ctx.now();
        if self.0 != now {
            self.0 = now;
            ctx.schedule_at(now, SETTLE_PRIORITY, SETTLE);
        }
    }

    /// Whether tick `now` has arrivals waiting to be acted on; they are taken (false after).
    #[inline]
    pub fn take(&mut self, now: Tick) -> bool {
        let due = self.0 == now;
        if due {
            self.0 = Tick::MAX;
        }
        due
    }
}

/// What each of a component's links is to it, found by link id. The table spans only the
/// component's own link ids (usually a handful of neighbours), so it stays small and warm
/// however many links the engine has.
#[derive(Debug, Clone)]
pub struct LinkRoles<R> {
    base: usize,
    roles: Vec<R>,
    other: R,
}

impl<R: Copy> LinkRoles<R> {
    /// Roles of `links`; any other link is `other`.
    pub fn new(links: &[(LinkId, R)], other: R) -> Self {
        let base = links.iter().map(|(l, _)| l.index()).min().unwrap_or(0);
        let end = links.iter().map(|(l, _)| l.index() + 1).max().unwrap_or(0);
        let mut roles = vec![other; end.saturating_sub(base)];
        for &(l, r) in links {
            roles[l.index() - base] = r;
        }
        Self { base, roles, other }
    }

    /// The role of `link`.
    #[inline]
    pub fn get(&self, link: LinkId) -> R {
        link.index().checked_sub(self.base).and_then(|i| self.roles.get(i)).copied().unwrap_or(self.other)
    }
}

/// A set of integers below a fixed bound. Members below 64 sit in the set itself (most
/// components have fewer ports than that); the others in words behind a summary.
#[derive(Debug, Clone, Default)]
pub struct PortSet {
    /// Members below 64.
    low: u64,
    /// Members from 64 on: bit `i % 64` of `high[i / 64 - 1]`.
    high: Vec<u64>,
    /// Bit `k % 64` of `summary[k / 64]`: `high[k]` is not zero.
    summary: Vec<u64>,
    len: usize,
}

impl PortSet {
    /// An empty set of integers below `n`.
    pub fn new(n: usize) -> Self {
        let high = n.saturating_sub(64).div_ceil(64);
        Self { low: 0, high: vec![0; high], summary: vec![0; high.div_ceil(64)], len: 0 }
    }

    /// Whether there is no member.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether `i` is a member.
    #[inline]
    pub fn contains(&self, i: usize) -> bool {
        let b = 1u64 << (i % 64);
        if i < 64 { self.low & b != 0 } else { self.high.get(i / 64 - 1).is_some_and(|w| w & b != 0) }
    }

    /// Adds `i`.
    #[inline]
    pub fn insert(&mut self, i: usize) {
        let b = 1u64 << (i % 64);
        if i < 64 {
            if self.low & b == 0 {
                self.low |= b;
                self.len += 1;
            }
            return;
        }
        let k = i / 64 - 1;
        let word = &mut self.high[k];
        if *word & b == 0 {
            if *word == 0 {
                self.summary[k / 64] |= 1 << (k % 64);
            }
            *word |= b;
            self.len += 1;
        }
    }

    /// Removes `i`.
    #[inline]
    pub fn remove(&mut self, i: usize) {
        let b = 1u64 << (i % 64);
        if i < 64 {
            if self.low & b != 0 {
                self.low &= !b;
                self.len -= 1;
            }
            return;
        }
        let k = i / 64 - 1;
        let word = &mut self.high[k];
        if *word & b != 0 {
            *word &= !b;
            if *word == 0 {
                self.summary[k / 64] &= !(1 << (k % 64));
            }
            self.len -= 1;
        }
    }

    /// Adds every member of `other` (a set of the same bound).
    pub fn union_with(&mut self, other: &PortSet) {
        self.len += (other.low & !self.low).count_ones() as usize;
        self.low |= other.low;
        for (s, &o) in other.summary.iter().enumerate() {
            let mut bits = o;
            while bits != 0 {
                let k = s * 64 + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                let added = other.high[k] & !self.high[k];
                if added != 0 {
                    self.high[k] |= added;
                    self.summary[s] |= 1 << (k % 64);
                    self.len += added.count_ones() as usize;
                }
            }
        }
    }

    /// The smallest member at or above `from`, if any.
    #[inline(always)]
    pub fn next_from(&self, from: usize) -> Option<usize> {
        // Inlined: the common case is a member in the low word, or none beyond it.
        if from < 64 {
            let word = self.low & (u64::MAX << from);
            if word != 0 {
                return Some(word.trailing_zeros() as usize);
            }
            if self.high.is_empty() {
                return None;
            }
        }
        self.next_far(from)
    }

    /// [`PortSet::next_from`] past the low word.
    #[inline(never)]
    fn next_far(&self, from: usize) -> Option<usize> {
        if self.len == 0 {
            return None;
        }
        if from < 64 {
            return self.next_high_from(0);
        }
        let mask = u64::MAX << (from % 64);
        let k = from / 64 - 1;
        let word = *self.high.get(k)? & mask;
        if word != 0 {
            return Some((k + 1) * 64 + word.trailing_zeros() as usize);
        }
        self.next_high_from(k + 1)
    }

    /// The smallest member in the first non-empty high word at or after word `k`.
    fn next_high_from(&self, k: usize) -> Option<usize> {
        let mut s = k / 64;
        let mut bits = *self.summary.get(s)? & (u64::MAX << (k % 64));
        loop {
            if bits != 0 {
                let k = s * 64 + bits.trailing_zeros() as usize;
                return Some((k + 1) * 64 + self.high[k].trailing_zeros() as usize);
            }
            s += 1;
            bits = *self.summary.get(s)?;
        }
    }
}

/// A walk over a [`PortSet`]'s members in round-robin order: from `start` up, then from 0 up to
/// `start`. The set is read afresh at every step, so members taken out or put in meanwhile are
/// seen as a walk over the live set would see them.
#[derive(Debug, Clone, Copy)]
pub struct RoundRobin {
    start: usize,
    from: usize,
    wrapped: bool,
}

impl RoundRobin {
    /// A walk starting at member `start`.
    #[inline]
    pub fn new(start: usize) -> Self {
        Self { start, from: start, wrapped: false }
    }

    /// The next member of `set` in the walk, if any is left.
    #[inline]
    pub fn next(&mut self, set: &PortSet) -> Option<usize> {
        loop {
            match set.next_from(self.from) {
                Some(p) if !self.wrapped || p < self.start => {
                    self.from = p + 1;
                    return Some(p);
                }
                None if !self.wrapped && self.start > 0 => (self.from, self.wrapped) = (0, true),
                _ => return None,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    fn members(s: &PortSet) -> Vec<usize> {
        let (mut got, mut at) = (vec![], 0);
        while let Some(i) = s.next_from(at) {
            got.push(i);
            at = i + 1;
        }
        got
    }

    proptest! {
        #[test]
        fn agrees_with_a_btreeset(
            n in 1usize..10_000,
            ops in prop::collection::vec((any::<bool>(), any::<u32>()), 0..400),
            probes in prop::collection::vec(any::<u32>(), 1..40),
        ) {
            let mut s = PortSet::new(n);
            let mut model = BTreeSet::new();
            for (add, x) in ops {
                let i = x as usize % n;
                if add {
                    s.insert(i);
                    model.insert(i);
                } else {
                    s.remove(i);
                    model.remove(&i);
                }
                prop_assert_eq!(s.is_empty(), model.is_empty());
            }
            for p in probes {
                let from = p as usize % (n + 1);
                prop_assert_eq!(s.next_from(from), model.range(from..).next().copied());
            }
            let mut other = PortSet::new(n);
            for i in (0..n).step_by(7) {
                other.insert(i);
                model.insert(i);
            }
            s.union_with(&other);
            prop_assert_eq!(members(&s), model.iter().copied().collect::<Vec<_>>());
            for i in model.iter().copied().collect::<Vec<_>>() {
                s.remove(i);
            }
            prop_assert!(s.is_empty());
            prop_assert_eq!(s.next_from(0), None);
        }

        #[test]
        fn a_round_robin_walk_visits_each_member_once_from_its_start(
            n in 1usize..300,
            members in prop::collection::btree_set(0usize..300, 0..40),
            start in 0usize..300,
        ) {
            let mut s = PortSet::new(n);
            let members: Vec<usize> = members.into_iter().filter(|&m| m < n).collect();
            for &m in &members {
                s.insert(m);
            }
            let start = start % n;
            let mut walk = RoundRobin::new(start);
            let mut got = vec![];
            while let Some(p) = walk.next(&s) {
                got.push(p);
            }
            let want: Vec<usize> = members.iter().copied().filter(|&m| m >= start)
                .chain(members.iter().copied().filter(|&m| m < start)).collect();
            prop_assert_eq!(got, want);
        }
    }
}
