//! Replacement policies: which valid way of a set makes room for a new line.
//!
//! The tag array always fills an invalid way first; a policy is asked only to choose among valid
//! ways, and only among those its caller marks eligible (a way whose line has a fetch in flight
//! is locked and never chosen). Choosing a victim changes nothing: the caller commits the
//! choice with [`ReplacementPolicy::evict`] once the eviction goes ahead, so a request that
//! stalls after choosing (a full write-back buffer) leaves the policy as it was. Each policy keeps its own per-way state in flat vectors indexed
//! by `set * ways + way`. [`Replacement`] is an enum over the policies so the cache calls them
//! with static dispatch.

use super::config::ReplacementKind;

/// What a replacement policy must do.
pub trait ReplacementPolicy {
    /// A request that may promote the line used way `way` of `set`.
    fn touch(&mut self, set: usize, way: usize);
    /// A new line was placed in way `way` of `set`: at the most-protected position, or at the
    /// LRU position (the next victim) when `at_lru` (non-temporal insertion).
    fn insert(&mut self, set: usize, way: usize, at_lru: bool);
    /// The way of `set` to evict among those for which `eligible` holds; `None` when none does.
    /// Changes nothing: see [`ReplacementPolicy::evict`].
    fn victim(&self, set: usize, eligible: impl Fn(usize) -> bool) -> Option<usize>;
    /// Commits the choice of `way`, just returned by [`ReplacementPolicy::victim`] for `set`
    /// with nothing changed since, as the way evicted (SRRIP ages the set, random moves its
    /// stream on).
    fn evict(&mut self, set: usize, way: usize);
}

/// True LRU: a per-way timestamp of the last use; the victim has the oldest.
#[derive(Debug, Clone)]
pub struct Lru {
    ways: usize,
    stamp: Vec<u64>,
    /// Timestamps of uses so far; starts at 1 so that 0 is below every real use.
    now: u64,
}

impl Lru {
    /// State for `sets` sets of `ways` ways.
    pub fn new(sets: usize, ways: usize) -> Self {
        Self { ways, stamp: vec![0; sets * ways], now: 1 }
    }
}

impl ReplacementPolicy for Lru {
    #[inline]
    fn touch(&mut self, set: usize, way: usize) {
        self.now += 1;
        self.stamp[set * self.ways + way] = self.now;
    }

    #[inline]
    fn insert(&mut self, set: usize, way: usize, at_lru: bool) {
        if at_lru {
            // Below every use: the next victim of its set (ties go to the lowest way).
            self.stamp[set * self.ways + way] = 0;
        } else {
            self.touch(set, way);
        }
    }

    #[inline]
    fn victim(&self, set: usize, eligible: impl Fn(usize) -> bool) -> Option<usize> {
        let stamps = &self.stamp[set * self.ways..(set + 1) * self.ways];
        (0..self.ways).filter(|&w| eligible(w)).min_by_key(|&w| (stamps[w], w))
    }

    #[inline]
    fn evict(&mut self, _set: usize, _way: usize) {}
}

/// Static RRIP with 2-bit re-reference prediction values (RRPV).
///
/// Insertion predicts a "long" re-reference (RRPV 2), a hit predicts "near" (RRPV 0); the victim
/// is a way predicted "distant" (RRPV 3), and when none is, every way of the set ages until one
/// is. A line used once therefore leaves before lines that were reused, even if it was inserted
/// after them: the scan resistance that LRU lacks.
#[derive(Debug, Clone)]
pub struct Srrip {
    ways: usize,
    rrpv: Vec<u8>,
}

impl Srrip {
    /// The largest RRPV: "re-referenced in the distant future".
    pub const DISTANT: u8 = 3;
    /// The insertion RRPV: "re-referenced in the long future".
    pub const LONG: u8 = 2;

    /// State for `sets` sets of `ways` ways.
    pub fn new(sets: usize, ways: usize) -> Self {
        Self { ways, rrpv: vec![Self::DISTANT; sets * ways] }
    }

    /// The RRPV of a way (for tests and reports).
    pub fn rrpv(&self, set: usize, way: usize) -> u8 {
        self.rrpv[set * self.ways + way]
    }
}

impl ReplacementPolicy for Srrip {
    #[inline]
    fn touch(&mut self, set: usize, way: usize) {
        self.rrpv[set * self.ways + way] = 0;
    }

    #[inline]
    fn insert(&mut self, set: usize, way: usize, at_lru: bool) {
        self.rrpv[set * self.ways + way] = if at_lru { Self::DISTANT } else { Self::LONG };
    }

    fn victim(&self, set: usize, eligible: impl Fn(usize) -> bool) -> Option<usize> {
        let rrpv = &self.rrpv[set * self.ways..(set + 1) * self.ways];
        let oldest = (0..rrpv.len()).filter(|&w| eligible(w)).map(|w| rrpv[w]).max()?;
        // The first eligible way to reach DISTANT when the set ages (see `evict`).
        (0..rrpv.len()).find(|&w| eligible(w) && rrpv[w] == oldest)
    }

    fn evict(&mut self, set: usize, way: usize) {
        let rrpv = &mut self.rrpv[set * self.ways..(set + 1) * self.ways];
        // Aging the whole set until the victim (the oldest eligible way) reaches DISTANT, in
        // one step.
        let age = Self::DISTANT - rrpv[way];
        if age > 0 {
            for r in rrpv.iter_mut() {
                *r = (*r + age).min(Self::DISTANT);
            }
        }
    }
}

/// A uniformly random eligible way, from a xorshift64* stream seeded per cache.
#[derive(Debug, Clone)]
pub struct RandomChoice {
    ways: usize,
    state: u64,
}

impl RandomChoice {
    /// A chooser for sets of `ways` ways, seeded with `seed` (any value, zero included).
    pub fn new(ways: usize, seed: u64) -> Self {
        // xorshift must not start at zero; the odd constant makes every seed valid.
        Self { ways, state: seed ^ 0x9e37_79b9_7f4a_7c15 | 1 }
    }

    /// The state after this one.
    #[inline]
    fn step(mut x: u64) -> u64 {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        x
    }
}

impl ReplacementPolicy for RandomChoice {
    #[inline]
    fn touch(&mut self, _set: usize, _way: usize) {}

    #[inline]
    fn insert(&mut self, _set: usize, _way: usize, _at_lru: bool) {}

    fn victim(&self, _set: usize, eligible: impl Fn(usize) -> bool) -> Option<usize> {
        let n = (0..self.ways).filter(|&w| eligible(w)).count() as u64;
        if n == 0 {
            return None;
        }
        // The next draw of the stream, taken by `evict`. The high bits of xorshift64* are the
        // good ones; the modulo bias is below 2^-50.
        let draw = Self::step(self.state).wrapping_mul(0x2545_f491_4f6c_dd1d);
        let k = ((draw >> 11) % n) as usize;
        (0..self.ways).filter(|&w| eligible(w)).nth(k)
    }

    #[inline]
    fn evict(&mut self, _set: usize, _way: usize) {
        self.state = Self::step(self.state);
    }
}

/// The configured policy: one of the above, dispatched statically.
#[derive(Debug, Clone)]
pub enum Replacement {
    /// True LRU.
    Lru(Lru),
    /// Static RRIP.
    Srrip(Srrip),
    /// Random.
    Random(RandomChoice),
}

impl Replacement {
    /// The policy `kind` for `sets` sets of `ways` ways; `seed` feeds the random policy.
    pub fn new(kind: ReplacementKind, sets: usize, ways: usize, seed: u64) -> Self {
        match kind {
            ReplacementKind::Lru => Replacement::Lru(Lru::new(sets, ways)),
            ReplacementKind::Srrip => Replacement::Srrip(Srrip::new(sets, ways)),
            ReplacementKind::Random => Replacement::Random(RandomChoice::new(ways, seed)),
        }
    }

    /// Host hint: a lookup in `set` is coming (see [`sim_core::host::prefetch`]).
    #[inline]
    pub fn prefetch(&self, set: usize) {
        let span = |ways: usize| set * ways..(set + 1) * ways;
        match self {
            Replacement::Lru(p) => sim_core::host::prefetch_slice(p.stamp.get(span(p.ways)).unwrap_or(&[])),
            Replacement::Srrip(p) => sim_core::host::prefetch_slice(p.rrpv.get(span(p.ways)).unwrap_or(&[])),
            Replacement::Random(_) => {}
        }
    }
}

impl ReplacementPolicy for Replacement {
    #[inline]
    fn touch(&mut self, set: usize, way: usize) {
        match self {
            Replacement::Lru(p) => p.touch(set, way),
            Replacement::Srrip(p) => p.touch(set, way),
            Replacement::Random(p) => p.touch(set, way),
        }
    }

    #[inline]
    fn insert(&mut self, set: usize, way: usize, at_lru: bool) {
        match self {
            Replacement::Lru(p) => p.insert(set, way, at_lru),
            Replacement::Srrip(p) => p.insert(set, way, at_lru),
            Replacement::Random(p) => p.insert(set, way, at_lru),
        }
    }

    #[inline]
    fn victim(&self, set: usize, eligible: impl Fn(usize) -> bool) -> Option<usize> {
        match self {
            Replacement::Lru(p) => p.victim(set, eligible),
            Replacement::Srrip(p) => p.victim(set, eligible),
            Replacement::Random(p) => p.victim(set, eligible),
        }
    }

    #[inline]
    fn evict(&mut self, set: usize, way: usize) {
        match self {
            Replacement::Lru(p) => p.evict(set, way),
            Replacement::Srrip(p) => p.evict(set, way),
            Replacement::Random(p) => p.evict(set, way),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lru_evicts_the_least_recently_touched() {
        let mut p = Lru::new(1, 4);
        for w in 0..4 {
            p.insert(0, w, false);
        }
        p.touch(0, 0);
        p.touch(0, 2);
        assert_eq!(p.victim(0, |_| true), Some(1));
        assert_eq!(p.victim(0, |w| w != 1), Some(3));
        p.insert(0, 3, true);
        assert_eq!(p.victim(0, |_| true), Some(3), "inserted at LRU: next victim");
        assert_eq!(p.victim(0, |_| false), None);
    }

    proptest::proptest! {
        /// The victim is the eligible way with the smallest (stamp, way), ties included.
        #[test]
        fn lru_victim_is_the_oldest_eligible_way(
            uses in proptest::collection::vec((0usize..8, proptest::bool::ANY), 0..40),
            locked in 0u8..=255,
        ) {
            let mut p = Lru::new(2, 8);
            for (w, at_lru) in uses {
                p.insert(1, w, at_lru);
            }
            let eligible = |w: usize| locked & (1 << w) == 0;
            let stamps = &p.stamp[8..16];
            let want = (0..8).filter(|&w| eligible(w)).min_by_key(|&w| (stamps[w], w));
            proptest::prop_assert_eq!(p.victim(1, eligible), want);
        }
    }

    #[test]
    fn srrip_evicts_a_line_used_once_before_reused_ones() {
        let mut p = Srrip::new(1, 4);
        for w in 0..4 {
            p.insert(0, w, false);
        }
        for w in [0, 1, 2] {
            p.touch(0, w);
        }
        // Way 3 was never reused: it ages to DISTANT first.
        assert_eq!(p.victim(0, |_| true), Some(3));
        assert_eq!(p.rrpv(0, 3), Srrip::LONG, "choosing changes nothing");
        p.evict(0, 3);
        assert_eq!(p.rrpv(0, 0), 1, "aging moved the reused ways one step, not to DISTANT");
        p.insert(0, 3, false);
        p.touch(0, 3);
        p.insert(0, 1, true);
        assert_eq!(p.victim(0, |_| true), Some(1));
    }

    #[test]
    fn random_is_deterministic_per_seed_and_respects_eligibility() {
        let picks = |seed| {
            let mut p = RandomChoice::new(8, seed);
            (0..64)
                .map(|_| {
                    let w = p.victim(0, |w| w % 2 == 1).unwrap();
                    // Choosing again without evicting draws nothing.
                    assert_eq!(p.victim(0, |w| w % 2 == 1), Some(w));
                    p.evict(0, w);
                    w
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(picks(7), picks(7));
        assert_ne!(picks(7), picks(8));
        assert!(picks(0).iter().all(|w| w % 2 == 1));
        let all = picks(3);
        for w in [1, 3, 5, 7] {
            assert!(all.contains(&w), "way {w} never chosen in 64 draws");
        }
    }
}
