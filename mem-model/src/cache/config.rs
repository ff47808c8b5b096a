//! Cache configuration: the table a preset writes, and the geometry it validates into.
//!
//! Sizes carry units ("64KiB", "64B", "32B"); plain integers are counts (ways, MSHRs, targets,
//! lookups per cycle) or cycles of the cache's clock in `*_cycles` keys. [`CacheConfig::geometry`]
//! checks every value and names the offending field, so an impossible cache is an error at build
//! time, never a panic or a silently different cache.

use serde::Deserialize;
use sim_core::ByteSize;
use std::fmt;
use std::str::FromStr;
use thiserror::Error;

/// Most sectors a line may have: sector presence is a 64-bit mask per line.
pub const MAX_SECTORS: u64 = 64;
/// Most lines a cache may hold (4 GiB of 64 B lines): a guard against configurations whose tag
/// array alone would exhaust host memory.
pub const MAX_LINES: u64 = 1 << 26;
/// Largest line: downstream requests carry their size in 32 bits, and a megabyte is already far
/// beyond any real cache line.
pub const MAX_LINE_BYTES: u64 = 1 << 20;
/// Most ways per set.
pub const MAX_ASSOCIATIVITY: u32 = 1024;
/// Most MSHRs (their index travels in a 16-bit field of each way).
pub const MAX_MSHRS: u32 = 4096;
/// Most targets per MSHR.
pub const MAX_MSHR_TARGETS: u32 = 1024;
/// Largest hit latency, in cycles (a million cycles is already far beyond any real cache).
pub const MAX_HIT_LATENCY_CYCLES: u64 = 1_000_000;

/// A set-associative, write-back, write-allocate cache, as a preset describes it.
///
/// ```toml
/// size = "64KiB"
/// associativity = 4
/// line = "64B"
/// sector = "32B"            # optional: default one sector per line (unsectored)
/// replacement = "lru"       # lru | srrip | random
/// mshrs = 16
/// mshr_targets = 8          # requests merged into one MSHR
/// hit_latency_cycles = 4
/// lookups_per_cycle = 2     # tag lookups per cycle, shared by all upstream ports
/// writeback_buffer = 8      # optional: default = mshrs
/// non_temporal = "bypass"   # bypass | insert_lru
/// answers_ahead = true      # optional: send answers when produced (false: at their due tick)
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CacheConfig {
    /// Total data capacity.
    pub size: ByteSize,
    /// Ways per set.
    pub associativity: u32,
    /// Line size: the unit of allocation and of tags (a power of two).
    pub line: ByteSize,
    /// Sector size: the unit of validity, fetch and write-back (a power of two dividing the line);
    /// absent or equal to the line means an unsectored cache.
    #[serde(default)]
    pub sector: Option<ByteSize>,
    /// Replacement policy.
    #[serde(default)]
    pub replacement: ReplacementKind,
    /// Miss status holding registers: lines with fetches in flight, and the limit on reads in
    /// flight downstream (one read per run of consecutive sectors fetched; a fetch of more runs
    /// than this goes when no read is in flight).
    pub mshrs: u32,
    /// Requests that may wait on one MSHR (the first miss included).
    #[serde(default = "default_mshr_targets")]
    pub mshr_targets: u32,
    /// Cycles from the tag lookup to the answer of a hit, and from a fill to the answers of the
    /// requests it completes.
    pub hit_latency_cycles: u64,
    /// Tag lookups per cycle, shared by all upstream ports (one per line a request touches).
    #[serde(default = "one")]
    pub lookups_per_cycle: u32,
    /// Writes waiting to be sent downstream (write-backs and bypassed writes); default: `mshrs`.
    #[serde(default)]
    pub writeback_buffer: Option<u32>,
    /// What a request with the non-temporal hint does.
    #[serde(default)]
    pub non_temporal: NonTemporalPolicy,
    /// Whether an answer goes on its link as soon as it is produced, to arrive as if sent when
    /// due (the default, which spares a timer per answer), or waits for its due tick. A host
    /// speed choice: results are the same either way, which a test checks.
    #[serde(default = "yes")]
    pub answers_ahead: bool,
}

fn yes() -> bool {
    true
}

fn default_mshr_targets() -> u32 {
    8
}

fn one() -> u32 {
    1
}

/// The replacement policy, chosen by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ReplacementKind {
    /// Least recently used (true LRU over the ways of a set).
    #[default]
    Lru,
    /// Static re-reference interval prediction (Jaleel et al., ISCA 2010) with 2-bit RRPVs:
    /// lines are inserted with a "long" re-reference prediction and promoted to "near" on a hit,
    /// so a line used once is evicted before lines that were reused.
    Srrip,
    /// A uniformly random way, from a deterministic per-cache stream.
    Random,
}

impl ReplacementKind {
    /// Every valid name, as listed in errors.
    pub const NAMES: &'static str = "lru, srrip, random";

    /// The policy's name in configuration files.
    pub fn name(self) -> &'static str {
        match self {
            ReplacementKind::Lru => "lru",
            ReplacementKind::Srrip => "srrip",
            ReplacementKind::Random => "random",
        }
    }
}

impl fmt::Display for ReplacementKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for ReplacementKind {
    type Err = CacheConfigError;

    fn from_str(name: &str) -> Result<Self, CacheConfigError> {
        match name {
            "lru" => Ok(ReplacementKind::Lru),
            "srrip" => Ok(ReplacementKind::Srrip),
            "random" => Ok(ReplacementKind::Random),
            _ => Err(CacheConfigError::UnknownPolicy { name: name.to_owned() }),
        }
    }
}

impl<'de> Deserialize<'de> for ReplacementKind {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // Through FromStr, so a file and a program get the same message listing the valid names.
        let name = String::deserialize(d)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}

/// What a request carrying the non-temporal hint does in this cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NonTemporalPolicy {
    /// A miss allocates nothing: reads are fetched and relayed, writes forwarded downstream.
    /// Hits are served from the cache (without promoting the line).
    Bypass,
    /// A miss allocates the line at the LRU position (the next victim of its set); hits do not
    /// promote the line.
    #[default]
    InsertLru,
}

/// Why a cache configuration is impossible. Every message names the field at fault.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum CacheConfigError {
    /// A count or size that must be positive is zero.
    #[error("cache {field} must be at least 1")]
    Zero {
        /// The field.
        field: &'static str,
    },
    /// A size that must be a power of two is not.
    #[error("cache {field} ({value}) must be a power of two")]
    NotPowerOfTwo {
        /// The field.
        field: &'static str,
        /// Its value.
        value: ByteSize,
    },
    /// The sector does not divide the line.
    #[error("cache sector ({sector}) must divide line ({line})")]
    SectorDoesNotDivideLine {
        /// The sector size.
        sector: ByteSize,
        /// The line size.
        line: ByteSize,
    },
    /// More sectors per line than a presence mask holds.
    #[error("cache line ({line}) / sector ({sector}) gives more than {MAX_SECTORS} sectors per line")]
    TooManySectors {
        /// The line size.
        line: ByteSize,
        /// The sector size.
        sector: ByteSize,
    },
    /// The size is not a whole number of lines.
    #[error("cache size ({size}) is not a whole number of lines ({line})")]
    SizeNotLines {
        /// The size.
        size: ByteSize,
        /// The line size.
        line: ByteSize,
    },
    /// Fewer lines than ways: not even one set.
    #[error("cache size ({size}) holds {lines} lines, fewer than associativity {associativity}: zero sets")]
    ZeroSets {
        /// The size.
        size: ByteSize,
        /// Lines it holds.
        lines: u64,
        /// Ways per set.
        associativity: u32,
    },
    /// The ways do not divide the lines into whole sets.
    #[error("cache associativity ({associativity}) must divide the {lines} lines of size {size}")]
    AssociativityDoesNotDivide {
        /// Ways per set.
        associativity: u32,
        /// Lines the size holds.
        lines: u64,
        /// The size.
        size: ByteSize,
    },
    /// A size beyond what the model supports.
    #[error("cache {field} ({value}) is above the supported maximum of {max}")]
    SizeTooLarge {
        /// The field.
        field: &'static str,
        /// Its value.
        value: ByteSize,
        /// The largest value accepted.
        max: ByteSize,
    },
    /// A count beyond what the model supports.
    #[error("cache {field} ({value}) is above the supported maximum of {max}")]
    TooLarge {
        /// The field.
        field: &'static str,
        /// Its value.
        value: u64,
        /// The largest value accepted.
        max: u64,
    },
    /// The replacement policy name is not known.
    #[error("cache replacement: unknown policy \"{name}\"; valid policies: {}", ReplacementKind::NAMES)]
    UnknownPolicy {
        /// The name as written.
        name: String,
    },
}

/// A validated cache shape: everything the model derives from a [`CacheConfig`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheGeometry {
    /// Number of sets.
    pub sets: u64,
    /// Ways per set.
    pub ways: u32,
    /// log2 of the line size in bytes.
    pub line_shift: u32,
    /// log2 of the sector size in bytes.
    pub sector_shift: u32,
    /// Sectors per line (1 to 64).
    pub sectors_per_line: u32,
    /// MSHRs.
    pub mshrs: u32,
    /// Targets per MSHR.
    pub mshr_targets: u32,
    /// Writes that may wait to go downstream.
    pub writeback_buffer: u32,
    /// Hit (and fill-to-answer) latency in cycles.
    pub hit_latency_cycles: u64,
    /// Tag lookups per cycle.
    pub lookups_per_cycle: u32,
}

impl CacheGeometry {
    /// Line size in bytes.
    pub fn line_bytes(&self) -> u64 {
        1 << self.line_shift
    }

    /// Sector size in bytes.
    pub fn sector_bytes(&self) -> u64 {
        1 << self.sector_shift
    }
}

impl CacheConfig {
    /// Checks every value and derives the cache's shape.
    pub fn geometry(&self) -> Result<CacheGeometry, CacheConfigError> {
        use CacheConfigError as E;
        let (size, line) = (self.size.bytes(), self.line.bytes());
        let sector = self.sector.unwrap_or(self.line);
        for (field, value) in [("size", size), ("line", line), ("sector", sector.bytes())] {
            if value == 0 {
                return Err(E::Zero { field });
            }
        }
        for (field, value) in [
            ("associativity", u64::from(self.associativity)),
            ("mshrs", u64::from(self.mshrs)),
            ("mshr_targets", u64::from(self.mshr_targets)),
            ("lookups_per_cycle", u64::from(self.lookups_per_cycle)),
            ("writeback_buffer", u64::from(self.writeback_buffer.unwrap_or(1))),
        ] {
            if value == 0 {
                return Err(E::Zero { field });
            }
        }
        if !line.is_power_of_two() {
            return Err(E::NotPowerOfTwo { field: "line", value: self.line });
        }
        if line > MAX_LINE_BYTES {
            let max = ByteSize::from_bytes(MAX_LINE_BYTES);
            return Err(E::SizeTooLarge { field: "line", value: self.line, max });
        }
        if !sector.bytes().is_power_of_two() {
            return Err(E::NotPowerOfTwo { field: "sector", value: sector });
        }
        if sector.bytes() > line || !line.is_multiple_of(sector.bytes()) {
            return Err(E::SectorDoesNotDivideLine { sector, line: self.line });
        }
        if line / sector.bytes() > MAX_SECTORS {
            return Err(E::TooManySectors { line: self.line, sector });
        }
        if !size.is_multiple_of(line) {
            return Err(E::SizeNotLines { size: self.size, line: self.line });
        }
        let lines = size / line;
        if lines > MAX_LINES {
            let max = ByteSize::from_bytes(MAX_LINES * line);
            return Err(E::SizeTooLarge { field: "size", value: self.size, max });
        }
        let too_large =
            |field, value: u64, max: u64| (value > max).then_some(E::TooLarge { field, value, max });
        if let Some(e) = too_large("associativity", self.associativity.into(), MAX_ASSOCIATIVITY.into())
            .or_else(|| too_large("mshrs", self.mshrs.into(), MAX_MSHRS.into()))
            .or_else(|| too_large("mshr_targets", self.mshr_targets.into(), MAX_MSHR_TARGETS.into()))
            .or_else(|| too_large("hit_latency_cycles", self.hit_latency_cycles, MAX_HIT_LATENCY_CYCLES))
            .or_else(|| too_large("lookups_per_cycle", self.lookups_per_cycle.into(), 1024))
            .or_else(|| too_large("writeback_buffer", self.writeback_buffer.unwrap_or(1).into(), 65_536))
        {
            return Err(e);
        }
        let associativity = u64::from(self.associativity);
        if lines < associativity {
            return Err(E::ZeroSets { size: self.size, lines, associativity: self.associativity });
        }
        if !lines.is_multiple_of(associativity) {
            return Err(E::AssociativityDoesNotDivide {
                associativity: self.associativity,
                lines,
                size: self.size,
            });
        }
        Ok(CacheGeometry {
            sets: lines / associativity,
            ways: self.associativity,
            line_shift: line.trailing_zeros(),
            sector_shift: sector.bytes().trailing_zeros(),
            sectors_per_line: (line / sector.bytes()) as u32,
            mshrs: self.mshrs,
            mshr_targets: self.mshr_targets,
            writeback_buffer: self.writeback_buffer.unwrap_or(self.mshrs),
            hit_latency_cycles: self.hit_latency_cycles,
            lookups_per_cycle: self.lookups_per_cycle,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> CacheConfig {
        CacheConfig {
            size: ByteSize::from_bytes(64 << 10),
            associativity: 4,
            line: ByteSize::from_bytes(64),
            sector: None,
            replacement: ReplacementKind::Lru,
            mshrs: 16,
            mshr_targets: 8,
            hit_latency_cycles: 4,
            lookups_per_cycle: 1,
            writeback_buffer: None,
            non_temporal: NonTemporalPolicy::InsertLru,
            answers_ahead: true,
        }
    }

    #[test]
    fn geometry_of_a_64k_4way_cache() {
        let g = base().geometry().unwrap();
        assert_eq!(
            (g.sets, g.ways, g.line_bytes(), g.sector_bytes(), g.sectors_per_line),
            (256, 4, 64, 64, 1)
        );
        assert_eq!(g.writeback_buffer, 16);
    }

    #[test]
    fn policy_names_round_trip() {
        for k in [ReplacementKind::Lru, ReplacementKind::Srrip, ReplacementKind::Random] {
            assert_eq!(k.name().parse::<ReplacementKind>().unwrap(), k);
        }
        let e = "plru".parse::<ReplacementKind>().unwrap_err();
        assert_eq!(
            e.to_string(),
            "cache replacement: unknown policy \"plru\"; valid policies: lru, srrip, random"
        );
    }

    #[test]
    fn absurd_sizes_are_refused_not_allocated() {
        let mut c = base();
        c.size = ByteSize::from_bytes(1 << 40);
        assert!(matches!(c.geometry(), Err(CacheConfigError::SizeTooLarge { field: "size", .. })));
    }
}
