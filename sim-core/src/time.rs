//! Simulated time and clock domains.
//!
//! Time is a `u64` count of picoseconds (gem5's tick): 2^64 ps is about 213 days of simulated
//! time, far beyond any run. Each component runs in a [`Clock`] domain given by its frequency.
//! Cycle edges are computed from the frequency with integer arithmetic, `edge(n) =
//! floor(n * 10^12 / f)`, so a 3 GHz clock (period 333.33... ps) never drifts: cycle 3 000 000 000
//! falls exactly on 1 s. Converting between cycles and ticks is always explicit.

use crate::units::Frequency;
use thiserror::Error;

/// Simulated time in picoseconds.
pub type Tick = u64;

/// Picoseconds in one second.
pub const PS_PER_SECOND: u64 = 1_000_000_000_000;

/// Why a clock could not be built.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ClockError {
    /// A clock of 0 Hz never ticks.
    #[error("clock frequency must be above 0 Hz")]
    Zero,
    /// Above 1 THz a cycle is shorter than the 1 ps resolution of time.
    #[error("clock frequency {0} is above 1 THz, finer than the 1 ps time resolution")]
    TooFast(Frequency),
}

/// A clock domain: converts between its cycles and ticks, exactly and without drift.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Clock {
    hz: u64,
    /// The period in ps when it is a whole number (1 GHz: 1000), else 0: a fast path.
    period: u64,
}

impl Clock {
    /// A clock running at `freq` (1 Hz to 1 THz).
    pub fn new(freq: Frequency) -> Result<Self, ClockError> {
        match freq.hz() {
            0 => Err(ClockError::Zero),
            hz if hz > PS_PER_SECOND => Err(ClockError::TooFast(freq)),
            hz => {
                Ok(Self { hz, period: if PS_PER_SECOND.is_multiple_of(hz) { PS_PER_SECOND / hz } else { 0 } })
            }
        }
    }

    /// The clock's frequency.
    pub fn frequency(&self) -> Frequency {
        Frequency::from_hz(self.hz)
    }

    /// Tick of the rising edge that starts cycle `n` (cycle 0 starts at tick 0).
    #[inline]
    pub fn edge(&self, n: u64) -> Tick {
        if self.period != 0 {
            return n.saturating_mul(self.period);
        }
        // 64-bit arithmetic while it cannot overflow (the first 18 million cycles); 128 after.
        if let Some(x) = n.checked_mul(PS_PER_SECOND) {
            return x / self.hz;
        }
        let t = (n as u128 * PS_PER_SECOND as u128) / self.hz as u128;
        u64::try_from(t).unwrap_or(Tick::MAX)
    }

    /// The cycle that tick `t` falls in: the largest `n` with `edge(n) <= t`.
    #[inline]
    pub fn cycle_at(&self, t: Tick) -> u64 {
        if let Some(n) = t.checked_div(self.period) {
            return n;
        }
        // edge(n) <= t  <=>  n * 10^12 < (t + 1) * hz
        if let Some(x) = t.checked_add(1).and_then(|t1| t1.checked_mul(self.hz)) {
            return x.div_ceil(PS_PER_SECOND) - 1;
        }
        let x = (t as u128 + 1) * self.hz as u128;
        let n = x.div_ceil(PS_PER_SECOND as u128) - 1;
        u64::try_from(n).unwrap_or(u64::MAX)
    }

    /// The first clock edge at or after `t`.
    #[inline]
    pub fn next_edge(&self, t: Tick) -> Tick {
        let n = self.cycle_at(t);
        let e = self.edge(n);
        if e == t { t } else { self.edge(n + 1) }
    }

    /// The edge `n` cycles after the start of the cycle that `t` falls in.
    #[inline]
    pub fn after_cycles(&self, t: Tick, n: u64) -> Tick {
        self.edge(self.cycle_at(t).saturating_add(n))
    }

    /// Duration of `n` cycles counted from tick 0 (rounded down to whole ticks).
    #[inline]
    pub fn cycles_to_ticks(&self, n: u64) -> Tick {
        self.edge(n)
    }

    /// Duration of `n` cycles rounded up to whole ticks.
    #[inline]
    pub fn cycles_to_ticks_ceil(&self, n: u64) -> Tick {
        let t = (n as u128 * PS_PER_SECOND as u128).div_ceil(self.hz as u128);
        u64::try_from(t).unwrap_or(Tick::MAX)
    }

    /// Whole cycles that fit in a duration of `d` ticks.
    #[inline]
    pub fn ticks_to_cycles(&self, d: Tick) -> u64 {
        let n = (d as u128 * self.hz as u128) / PS_PER_SECOND as u128;
        u64::try_from(n).unwrap_or(u64::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn clock(hz: u64) -> Clock {
        Clock::new(Frequency::from_hz(hz)).expect("valid test clock")
    }

    #[test]
    fn three_gigahertz_has_no_drift() {
        let c = clock(3_000_000_000);
        assert_eq!(c.edge(0), 0);
        assert_eq!(c.edge(1), 333);
        assert_eq!(c.edge(3), 1000);
        assert_eq!(c.edge(3_000_000_000), PS_PER_SECOND);
        assert_eq!(c.cycle_at(332), 0);
        assert_eq!(c.cycle_at(333), 1);
        assert_eq!(c.next_edge(334), 666);
        assert_eq!(c.next_edge(666), 666);
        assert_eq!(c.after_cycles(500, 2), 1000);
        assert_eq!(c.ticks_to_cycles(PS_PER_SECOND), 3_000_000_000);
        assert_eq!(
            (c.cycles_to_ticks(1), c.cycles_to_ticks_ceil(1), c.cycles_to_ticks_ceil(3)),
            (333, 334, 1000)
        );
    }

    #[test]
    fn rejects_impossible_frequencies() {
        assert_eq!(Clock::new(Frequency::from_hz(0)), Err(ClockError::Zero));
        assert!(matches!(Clock::new(Frequency::from_hz(PS_PER_SECOND + 1)), Err(ClockError::TooFast(_))));
        assert!(Clock::new(Frequency::from_hz(PS_PER_SECOND)).is_ok());
    }

    proptest! {
        #[test]
        fn cycle_and_edge_are_inverse(hz in 1u64..=PS_PER_SECOND, n in 0u64..1u64 << 40) {
            let c = clock(hz);
            prop_assert_eq!(c.cycle_at(c.edge(n)), n);
        }

        #[test]
        fn next_edge_is_the_first_edge_at_or_after(hz in 1_000_000u64..=PS_PER_SECOND, t in 0u64..1u64 << 50) {
            let c = clock(hz);
            let e = c.next_edge(t);
            prop_assert!(e >= t);
            prop_assert_eq!(c.edge(c.cycle_at(e)), e);
            if e > t {
                // No edge lies strictly between t and e.
                prop_assert!(c.edge(c.cycle_at(e) - 1) < t);
            }
        }
    }
}
