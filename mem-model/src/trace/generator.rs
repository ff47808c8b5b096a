//! Built-in traffic generators: uniform random and streaming (sequential) addresses.
//!
//! A generator produces `requests` untimed records of `bytes` each over the address window
//! `[base, base + range)`: *random* picks every address uniformly among the window's
//! request-size-aligned slots, *stream* walks the slots in order and wraps at the end of the
//! window. Each request is a read with probability `read_ratio` (0 to 1), a write otherwise.
//! When the requests are issued is the driver's business (its injection rate, or as fast as the
//! memory accepts), so one generator serves both bandwidth and loaded-latency runs.
//!
//! Randomness comes from a SplitMix64 stream whose seed is the generator's entry of a
//! [`SeedTree`] (keyed by its name), so the same seed and name give the same requests on every
//! machine, whatever else the run contains. SplitMix64 is small, fast and passes BigCrush;
//! this crate does not depend on `rand`, so it is implemented here in a few lines.

use super::error::TraceError;
use super::{Position, TimeBase, TraceRecord, TraceSource};
use sim_core::SeedTree;

/// How addresses are chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Pattern {
    /// Uniformly random request-aligned addresses.
    Random,
    /// Consecutive request-aligned addresses, wrapping at the end of the window.
    Stream,
}

impl Pattern {
    /// The pattern's name on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Pattern::Random => "random",
            Pattern::Stream => "stream",
        }
    }
}

/// What a generator produces.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GeneratorConfig {
    /// Address pattern.
    pub pattern: Pattern,
    /// Requests to generate.
    pub requests: u64,
    /// First byte of the address window; a multiple of `bytes`.
    pub base: u64,
    /// Bytes in the address window; at least `bytes`.
    pub range: u64,
    /// Bytes per request; above zero.
    pub bytes: u32,
    /// Fraction of reads, 0 to 1.
    pub read_ratio: f64,
}

/// SplitMix64: one 64-bit state, one add and a mix per output.
#[derive(Debug, Clone)]
struct SplitMix64(u64);

impl SplitMix64 {
    #[inline]
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let z = self.0;
        let z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        let z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0) without modulo bias (Lemire's multiply-and-reject).
    #[inline]
    fn below(&mut self, n: u64) -> u64 {
        let mut m = u128::from(self.next_u64()) * u128::from(n);
        if (m as u64) < n {
            let threshold = n.wrapping_neg() % n;
            while (m as u64) < threshold {
                m = u128::from(self.next_u64()) * u128::from(n);
            }
        }
        (m >> 64) as u64
    }

    /// Uniform in `[0, 1)` with 53 bits of precision.
    #[inline]
    fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

/// A seeded generator of untimed records (see the module docs).
#[derive(Debug, Clone)]
pub struct Generator {
    name: String,
    cfg: GeneratorConfig,
    /// Request-sized slots in the window.
    slots: u64,
    rng: SplitMix64,
    /// Records produced so far.
    index: u64,
}

impl Generator {
    /// A generator named `name` (its name in messages and its key in `seeds`).
    pub fn new(name: &str, cfg: GeneratorConfig, seeds: &SeedTree) -> Result<Self, TraceError> {
        let invalid = |what, reason: String| Err(TraceError::Invalid { what, reason });
        if cfg.bytes == 0 {
            return invalid("request size", "must be above 0 B".into());
        }
        let size = u64::from(cfg.bytes);
        if !(0.0..=1.0).contains(&cfg.read_ratio) {
            return invalid("read ratio", format!("{} is not between 0 and 1", cfg.read_ratio));
        }
        if cfg.range < size {
            return invalid("address range", format!("{} B holds no request of {} B", cfg.range, cfg.bytes));
        }
        if !cfg.base.is_multiple_of(size) {
            return invalid(
                "address base",
                format!("{:#x} is not a multiple of the {} B request size", cfg.base, cfg.bytes),
            );
        }
        let slots = cfg.range / size;
        if cfg.base.checked_add(slots * size).is_none() {
            return invalid("address range", format!("{:#x} + {} B goes past 2^64", cfg.base, cfg.range));
        }
        let seed = seeds.seed_for(name);
        let rng = SplitMix64((seed >> 64) as u64 ^ seed as u64);
        Ok(Self { name: name.to_owned(), cfg, slots, rng, index: 0 })
    }

    /// The generator's parameters.
    pub fn config(&self) -> &GeneratorConfig {
        &self.cfg
    }
}

impl Iterator for Generator {
    type Item = TraceRecord;

    #[inline]
    fn next(&mut self) -> Option<TraceRecord> {
        if self.index >= self.cfg.requests {
            return None;
        }
        let slot = match self.cfg.pattern {
            Pattern::Random => self.rng.below(self.slots),
            Pattern::Stream => self.index % self.slots,
        };
        // Exact ratios of 0 and 1 draw nothing, so all-read traffic is the same whatever the
        // ratio's float rounding.
        let write = match self.cfg.read_ratio {
            r if r >= 1.0 => false,
            r if r <= 0.0 => true,
            r => self.rng.unit() >= r,
        };
        self.index += 1;
        Some(TraceRecord {
            addr: self.cfg.base + slot * u64::from(self.cfg.bytes),
            write,
            bytes: Some(self.cfg.bytes),
            time: 0,
            non_temporal: false,
        })
    }
}

impl TraceSource for Generator {
    #[inline]
    fn next_record(&mut self) -> Result<Option<TraceRecord>, TraceError> {
        Ok(self.next())
    }
    fn time_base(&self) -> TimeBase {
        TimeBase::Untimed
    }
    fn name(&self) -> &str {
        &self.name
    }
    fn position(&self) -> Position {
        Position::Request(self.index.saturating_sub(1))
    }
    fn len_hint(&self) -> Option<u64> {
        Some(self.cfg.requests)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix_reference_values() {
        // The first outputs from state 0, as published with the algorithm.
        let mut r = SplitMix64(0);
        assert_eq!(r.next_u64(), 0xe220_a839_7b1d_cdaf);
        assert_eq!(r.next_u64(), 0x6e78_9e6a_a1b9_65f4);
    }

    #[test]
    fn below_stays_in_range_and_covers_it() {
        let mut r = SplitMix64(7);
        let mut seen = [0u32; 7];
        for _ in 0..7000 {
            seen[r.below(7) as usize] += 1;
        }
        assert!(seen.iter().all(|&c| (800..1200).contains(&c)), "{seen:?}");
        assert_eq!(r.below(1), 0);
        let u = r.unit();
        assert!((0.0..1.0).contains(&u));
    }
}
