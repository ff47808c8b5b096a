//! Fast tick-to-cycle conversion for components that run on every event.
//!
//! [`sim_core::Clock`] converts exactly through 128-bit divisions, which cost tens of
//! nanoseconds each; a cache or crossbar converts a few times per event. A [`CycleTracker`]
//! gives the same answers faster: it remembers the cycle of the last tick it saw (time moves
//! forward, mostly by less than a cycle between events), and computes clock edges as
//! `n * q + n * r / hz` with `10^12 = q * hz + r`, which is exact and needs only 64-bit
//! arithmetic while `n * r` fits in 64 bits (about 6 s of simulated time at 3 GHz), falling back
//! to the clock's own arithmetic beyond. A tick outside the remembered cycle finds its cycle as
//! `ceil(t * hz / 10^12)`, a division by a constant, while `t * hz` fits in 64 bits (about 6 ms
//! at 3 GHz; the clock's arithmetic beyond). The common case, a tick in the remembered cycle, is
//! inlined into the caller.

use sim_core::{Clock, PS_PER_SECOND, Tick};

/// A clock with a memory of where time was.
#[derive(Debug, Clone)]
pub struct CycleTracker {
    clock: Clock,
    hz: u64,
    q: u64,
    r: u64,
    /// Cycle `cycle` covers ticks `(lo, hi]`: `lo = edge(cycle - 1)`, `hi = edge(cycle)`.
    cycle: u64,
    lo: Tick,
    hi: Tick,
    /// The last edge asked for.
    edge_n: u64,
    edge_t: Tick,
}

impl CycleTracker {
    /// A tracker for `clock`, at tick 0.
    pub fn new(clock: Clock) -> Self {
        let hz = clock.frequency().hz().max(1);
        Self {
            clock,
            hz,
            q: PS_PER_SECOND / hz,
            r: PS_PER_SECOND % hz,
            cycle: 0,
            lo: 0,
            hi: 0,
            edge_n: 0,
            edge_t: 0,
        }
    }

    /// Tick of the edge that starts cycle `n` (as [`Clock::edge`]).
    #[inline]
    pub fn edge(&mut self, n: u64) -> Tick {
        if n != self.edge_n {
            self.edge_n = n;
            self.edge_t = self.compute_edge(n);
        }
        self.edge_t
    }

    #[inline]
    fn compute_edge(&self, n: u64) -> Tick {
        match (n.checked_mul(self.r), n.checked_mul(self.q)) {
            (Some(nr), Some(nq)) => nq.saturating_add(nr / self.hz),
            _ => self.clock.edge(n),
        }
    }

    /// The cycle whose edge is the first at or after `t`: work arriving at `t` starts there.
    #[inline(always)]
    pub fn cycle_of(&mut self, t: Tick) -> u64 {
        // Inlined: most calls fall in the cycle of the previous one.
        if t > self.lo && t <= self.hi {
            return self.cycle;
        }
        self.move_to(t)
    }

    /// [`CycleTracker::cycle_of`] for a tick outside the remembered cycle.
    #[inline(never)]
    fn move_to(&mut self, t: Tick) -> u64 {
        if t > self.hi {
            let next = self.compute_edge(self.cycle + 1);
            if t <= next {
                self.cycle += 1;
                self.lo = self.hi;
                self.hi = next;
                return self.cycle;
            }
        }
        // The first edge at or after `t` is that of cycle `ceil(t * hz / 10^12)`: edges are
        // `floor(n * 10^12 / hz)`, and `floor(x) >= t` exactly when `x >= t` (`hz <= 10^12`
        // keeps them distinct). The division by a constant needs no divide instruction.
        let c = match t.checked_mul(self.hz) {
            Some(x) => x.div_ceil(PS_PER_SECOND),
            None => self.clock.cycle_at(self.clock.next_edge(t)),
        };
        self.cycle = c;
        self.hi = self.compute_edge(c);
        self.lo = if c == 0 { 0 } else { self.compute_edge(c - 1) };
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use sim_core::Frequency;

    proptest! {
        #[test]
        fn agrees_with_the_clock(hz in 1_000_000u64..=PS_PER_SECOND, steps in prop::collection::vec(0u64..5_000, 1..64), far in 0u64..1 << 62) {
            let clock = Clock::new(Frequency::from_hz(hz)).unwrap();
            let mut t = CycleTracker::new(clock);
            let mut now = 0;
            for s in steps {
                now += s;
                let want = clock.cycle_at(clock.next_edge(now));
                prop_assert_eq!(t.cycle_of(now), want, "tick {}", now);
                prop_assert_eq!(t.edge(want + 3), clock.edge(want + 3));
            }
            prop_assert_eq!(t.cycle_of(far), clock.cycle_at(clock.next_edge(far)));
            prop_assert_eq!(t.edge(far), clock.edge(far));
            prop_assert_eq!(t.cycle_of(0), 0);
        }

        /// A jump to a tick just before, on or after any edge finds the cycle of that edge.
        #[test]
        fn jumps_agree_with_the_clock(hz in 1_000_000u64..=PS_PER_SECOND, n in 1u64..1 << 40, back in 0u64..3, from in 0u64..1 << 40) {
            let clock = Clock::new(Frequency::from_hz(hz)).unwrap();
            let mut t = CycleTracker::new(clock);
            let at = (clock.edge(n) + 1).saturating_sub(back);
            t.cycle_of(from);
            prop_assert_eq!(t.cycle_of(at), clock.cycle_at(clock.next_edge(at)), "tick {}", at);
        }
    }
}
