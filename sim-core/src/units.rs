//! Unit-typed configuration values: frequencies, sizes, rates, bandwidths and time spans.
//!
//! Configuration files write quantities with their unit ("3GHz", "64KiB", "6400MT/s",
//! "350ns") so that a bare number can never be misread in the wrong unit. Parsing is exact:
//! the decimal mantissa is read as digits and scaled in integer arithmetic, so "1.98GHz" is
//! exactly 1 980 000 000 Hz, and a value that is not a whole number of the base unit (such as
//! "1.5ps") or does not fit in `u64` is an error rather than a silent rounding. Each type
//! prints in a canonical form that parses back to the same value, and (de)serializes as that
//! string; a bare number in a configuration file is rejected with a message naming the units.

use std::fmt;
use std::str::FromStr;
use thiserror::Error;

/// Why a unit-typed value could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum UnitError {
    /// The text is a number with no unit.
    #[error("missing unit in \"{text}\": expected {expected}")]
    MissingUnit {
        /// The offending text.
        text: String,
        /// What was expected, with an example and the list of units.
        expected: &'static str,
    },
    /// The unit after the number is not one this quantity accepts.
    #[error("unknown unit \"{unit}\" in \"{text}\"; expected one of: {units}")]
    UnknownUnit {
        /// The offending text.
        text: String,
        /// The unit as written.
        unit: String,
        /// The accepted units, comma separated.
        units: &'static str,
    },
    /// The number is missing or malformed (signs, exponents and NaN are not accepted).
    #[error(
        "invalid number in \"{text}\": expected digits with an optional decimal fraction, \
         then a unit, such as \"1.5GHz\""
    )]
    BadNumber {
        /// The offending text.
        text: String,
    },
    /// The value is not a whole number of the base unit.
    #[error("\"{text}\" is not a whole number of {resolution}, the resolution")]
    NotExact {
        /// The offending text.
        text: String,
        /// The smallest representable step, such as "1 ps".
        resolution: &'static str,
    },
    /// The value does not fit in 64 bits of the base unit.
    #[error("\"{text}\" is too large (the maximum is {max})")]
    Overflow {
        /// The offending text.
        text: String,
        /// The largest representable value, in canonical form.
        max: String,
    },
}

/// How one quantity is written: its units and the words used in error messages.
struct Spec {
    /// Canonical units, ascending by scale; `Display` picks from these.
    units: &'static [(&'static str, u64)],
    /// Alternative spellings accepted when parsing but never printed.
    aliases: &'static [(&'static str, u64)],
    /// Example and unit list for the missing-unit message.
    expected: &'static str,
    /// Unit list for the unknown-unit message.
    unit_list: &'static str,
    /// Smallest representable step, for the not-exact message.
    resolution: &'static str,
}

impl Spec {
    /// Parses `text` exactly into a count of the base unit.
    fn parse(&self, text: &str) -> Result<u64, UnitError> {
        let owned = || text.to_owned();
        let bad = || UnitError::BadNumber { text: owned() };
        let trimmed = text.trim();
        let split = trimmed.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(trimmed.len());
        let (number, rest) = trimmed.split_at(split);
        // One optional space between number and unit, as in "2.5 GHz".
        let unit = rest.strip_prefix(' ').unwrap_or(rest);
        let (int, frac) = number.split_once('.').unwrap_or((number, ""));
        let digits_ok = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        if !digits_ok(int) || (number.contains('.') && !digits_ok(frac)) {
            return Err(bad());
        }
        if unit.is_empty() {
            return Err(UnitError::MissingUnit { text: owned(), expected: self.expected });
        }
        let Some(scale) = self.scale_of(unit) else {
            // "1e9Hz" reads as number "1", unit "e9Hz": report the exponent as a bad number.
            let mut chars = unit.chars();
            let exponent = matches!(chars.next(), Some('e' | 'E'))
                && chars.next().is_some_and(|c| c.is_ascii_digit() || c == '+' || c == '-');
            return Err(if exponent {
                bad()
            } else {
                UnitError::UnknownUnit { text: owned(), unit: unit.to_owned(), units: self.unit_list }
            });
        };
        let scale = u128::from(scale);
        // Fraction digits, last first: each partial value scale * 0.d_i d_(i+1)... must be a
        // whole number when the total is, so any remainder means the value is not exact.
        let mut frac_value: u128 = 0;
        for digit in frac.bytes().rev() {
            let t = u128::from(digit - b'0') * scale + frac_value;
            if !t.is_multiple_of(10) {
                return Err(UnitError::NotExact { text: owned(), resolution: self.resolution });
            }
            frac_value = t / 10;
        }
        let overflow = || UnitError::Overflow { text: owned(), max: self.display(u64::MAX) };
        let mut int_value: u128 = 0;
        for digit in int.bytes() {
            int_value = int_value
                .checked_mul(10)
                .and_then(|v| v.checked_add(u128::from(digit - b'0')))
                .ok_or_else(overflow)?;
        }
        int_value
            .checked_mul(scale)
            .and_then(|v| v.checked_add(frac_value))
            .and_then(|v| u64::try_from(v).ok())
            .ok_or_else(overflow)
    }

    /// The scale of `unit` in base units, if it is a unit of this quantity.
    fn scale_of(&self, unit: &str) -> Option<u64> {
        self.units.iter().chain(self.aliases).find(|(name, _)| *name == unit).map(|&(_, scale)| scale)
    }

    /// Formats `value` in the largest unit that shows it exactly, either as a whole number or
    /// as below 1000 with at most three decimals ("1.98GHz", "1980000001Hz").
    fn display(&self, value: u64) -> String {
        let (base, _) = self.units[0];
        let v = u128::from(value);
        for &(name, scale) in self.units.iter().rev() {
            let scale = u128::from(scale);
            let (whole, rest) = (v / scale, v % scale);
            if whole == 0 || (rest != 0 && (whole >= 1000 || (rest * 1000) % scale != 0)) {
                continue;
            }
            if rest == 0 {
                return format!("{whole}{name}");
            }
            let milli = format!("{:03}", rest * 1000 / scale);
            return format!("{whole}.{}{name}", milli.trim_end_matches('0'));
        }
        format!("{value}{base}")
    }
}

/// Defines a `u64` newtype with exact parsing, canonical display and string-only serde.
macro_rules! unit_type {
    ($(#[$doc:meta])* $name:ident, $spec:ident, $getter:ident, $ctor:ident) => {
        $(#[$doc])*
        #[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(u64);

        impl $name {
            /// Parses a value with its unit, exactly.
            pub fn parse(text: &str) -> Result<Self, UnitError> {
                $spec.parse(text).map(Self)
            }

            /// The value from a count of the base unit.
            pub const fn $ctor(value: u64) -> Self {
                Self(value)
            }

            /// The value as a count of the base unit.
            pub const fn $getter(self) -> u64 {
                self.0
            }
        }

        impl FromStr for $name {
            type Err = UnitError;

            fn from_str(text: &str) -> Result<Self, UnitError> {
                Self::parse(text)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&$spec.display(self.0))
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                // Self-describing formats (TOML, JSON) hand bare numbers to the visitor, which
                // can then say the unit is missing rather than just "invalid type".
                if d.is_human_readable() {
                    d.deserialize_any(UnitVisitor(&$spec)).map(Self)
                } else {
                    d.deserialize_str(UnitVisitor(&$spec)).map(Self)
                }
            }
        }
    };
}

/// Serde visitor that accepts only strings and explains why bare numbers are refused.
struct UnitVisitor(&'static Spec);

impl UnitVisitor {
    /// The error for a bare number: unquoted, since it was not written as a string.
    fn missing<E: serde::de::Error>(&self, number: impl fmt::Display) -> E {
        E::custom(format_args!("missing unit in {number}: expected {}", self.0.expected))
    }
}

impl serde::de::Visitor<'_> for UnitVisitor {
    type Value = u64;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a string with a unit: {}", self.0.expected)
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<u64, E> {
        self.0.parse(v).map_err(E::custom)
    }

    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<u64, E> {
        Err(self.missing(v))
    }

    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<u64, E> {
        Err(self.missing(v))
    }

    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<u64, E> {
        Err(self.missing(v))
    }
}

const KI: u64 = 1 << 10;
const MI: u64 = 1 << 20;
const GI: u64 = 1 << 30;
const TI: u64 = 1 << 40;
const K: u64 = 1_000;
const M: u64 = 1_000_000;
const G: u64 = 1_000_000_000;
const T: u64 = 1_000_000_000_000;

static FREQUENCY: Spec = Spec {
    units: &[("Hz", 1), ("kHz", K), ("MHz", M), ("GHz", G)],
    aliases: &[("KHz", K)],
    expected: "a frequency such as \"3GHz\" (units: Hz, kHz, MHz, GHz)",
    unit_list: "Hz, kHz, KHz, MHz, GHz",
    resolution: "1 Hz",
};

static BYTE_SIZE: Spec = Spec {
    units: &[
        ("B", 1),
        ("KB", K),
        ("KiB", KI),
        ("MB", M),
        ("MiB", MI),
        ("GB", G),
        ("GiB", GI),
        ("TB", T),
        ("TiB", TI),
    ],
    aliases: &[],
    expected: "a size such as \"64KiB\" (units: B, KiB, MiB, GiB, TiB, KB, MB, GB, TB)",
    unit_list: "B, KiB, MiB, GiB, TiB, KB, MB, GB, TB",
    resolution: "1 B",
};

static TRANSFER_RATE: Spec = Spec {
    units: &[("T/s", 1), ("kT/s", K), ("MT/s", M), ("GT/s", G)],
    aliases: &[],
    expected: "a transfer rate such as \"6400MT/s\" (units: T/s, kT/s, MT/s, GT/s)",
    unit_list: "T/s, kT/s, MT/s, GT/s",
    resolution: "1 T/s",
};

static BIT_RATE: Spec = Spec {
    units: &[("bps", 1), ("kbps", K), ("Mbps", M), ("Gbps", G), ("Tbps", T)],
    aliases: &[("b/s", 1), ("kb/s", K), ("Mb/s", M), ("Gb/s", G), ("Tb/s", T)],
    expected: "a bit rate such as \"5.23Gbps\" (units: bps, kbps, Mbps, Gbps, Tbps, \
               b/s, kb/s, Mb/s, Gb/s, Tb/s)",
    unit_list: "bps, kbps, Mbps, Gbps, Tbps, b/s, kb/s, Mb/s, Gb/s, Tb/s",
    resolution: "1 bps",
};

static BANDWIDTH: Spec = Spec {
    units: &[
        ("B/s", 1),
        ("KB/s", K),
        ("KiB/s", KI),
        ("MB/s", M),
        ("MiB/s", MI),
        ("GB/s", G),
        ("GiB/s", GI),
        ("TB/s", T),
        ("TiB/s", TI),
    ],
    aliases: &[],
    expected: "a bandwidth such as \"3.35TB/s\" (units: B/s, KB/s, MB/s, GB/s, TB/s, \
               KiB/s, MiB/s, GiB/s, TiB/s)",
    unit_list: "B/s, KB/s, MB/s, GB/s, TB/s, KiB/s, MiB/s, GiB/s, TiB/s",
    resolution: "1 B/s",
};

static TIME_SPAN: Spec = Spec {
    units: &[("ps", 1), ("ns", K), ("us", M), ("ms", G), ("s", T)],
    aliases: &[("µs", M)],
    expected: "a time such as \"350ns\" (units: ps, ns, us, µs, ms, s)",
    unit_list: "ps, ns, us, µs, ms, s",
    resolution: "1 ps",
};

unit_type!(
    /// A frequency in hertz ("3GHz", "1.98GHz", "2.5 GHz"; units Hz, kHz or KHz, MHz, GHz).
    Frequency, FREQUENCY, hz, from_hz
);
unit_type!(
    /// A size in bytes: KiB, MiB, GiB, TiB are binary (1024-based); KB, MB, GB, TB are
    /// decimal (1000-based), as in "64KiB", "50MB", "32B".
    ByteSize, BYTE_SIZE, bytes, from_bytes
);
unit_type!(
    /// A transfer rate in transfers per second ("6400MT/s"; units T/s, kT/s, MT/s, GT/s).
    TransferRate, TRANSFER_RATE, per_second, from_per_second
);
unit_type!(
    /// A per-pin data rate in bits per second ("5.23Gbps" or "5.23Gb/s"; decimal prefixes).
    BitRate, BIT_RATE, bits_per_second, from_bits_per_second
);
unit_type!(
    /// A bandwidth in bytes per second: KB/s..TB/s are decimal, KiB/s..TiB/s binary
    /// ("3.35TB/s").
    Bandwidth, BANDWIDTH, bytes_per_second, from_bytes_per_second
);
unit_type!(
    /// A span of simulated time in picoseconds ("350ns", "3.9us"; units ps, ns, us, µs, ms, s).
    TimeSpan, TIME_SPAN, ps, from_ps
);

/// Picoseconds in one second.
const PS_PER_S: u128 = 1_000_000_000_000;

impl Frequency {
    /// The clock period in whole picoseconds, rounded down; `u64::MAX` for 0 Hz (never ticks).
    pub fn period_ps_floor(self) -> u64 {
        // The quotient is at most 10^12, so the cast cannot truncate.
        PS_PER_S.checked_div(u128::from(self.0)).map_or(u64::MAX, |p| p as u64)
    }
}

impl Bandwidth {
    /// Picoseconds to move `bytes` at this bandwidth, rounded up; saturates at `u64::MAX`
    /// (including for a bandwidth of zero).
    pub fn ps_per_bytes(self, bytes: u64) -> u64 {
        let numerator = u128::from(bytes) * PS_PER_S;
        numerator
            .checked_div(u128::from(self.0))
            .map(|q| q + u128::from(!numerator.is_multiple_of(u128::from(self.0))))
            .and_then(|ps| u64::try_from(ps).ok())
            .unwrap_or(u64::MAX)
    }
}

impl TimeSpan {
    /// A span of `ns` nanoseconds; saturates at `u64::MAX` ps (about 213 days).
    pub const fn from_ns(ns: u64) -> Self {
        Self(ns.saturating_mul(1_000))
    }

    /// A span of `us` microseconds; saturates at `u64::MAX` ps.
    pub const fn from_us(us: u64) -> Self {
        Self(us.saturating_mul(1_000_000))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn frequency_examples() {
        assert_eq!(Frequency::parse("3GHz").unwrap().hz(), 3_000_000_000);
        assert_eq!(Frequency::parse("1.98GHz").unwrap().hz(), 1_980_000_000);
        assert_eq!(Frequency::parse("2.5 GHz").unwrap().hz(), 2_500_000_000);
        assert_eq!(Frequency::parse("100KHz").unwrap().hz(), 100_000);
        assert_eq!(Frequency::parse("100kHz").unwrap().hz(), 100_000);
        assert_eq!(Frequency::parse("0Hz").unwrap().hz(), 0);
    }

    #[test]
    fn other_examples() {
        assert_eq!(ByteSize::parse("64KiB").unwrap().bytes(), 65_536);
        assert_eq!(ByteSize::parse("50MB").unwrap().bytes(), 50_000_000);
        assert_eq!(ByteSize::parse("32B").unwrap().bytes(), 32);
        assert_eq!(ByteSize::parse("1TiB").unwrap().bytes(), 1 << 40);
        assert_eq!(TransferRate::parse("6400MT/s").unwrap().per_second(), 6_400_000_000);
        assert_eq!(BitRate::parse("5.23Gbps").unwrap().bits_per_second(), 5_230_000_000);
        assert_eq!(BitRate::parse("5.23Gb/s").unwrap().bits_per_second(), 5_230_000_000);
        assert_eq!(Bandwidth::parse("3.35TB/s").unwrap().bytes_per_second(), 3_350_000_000_000);
        assert_eq!(TimeSpan::parse("350ns").unwrap().ps(), 350_000);
        assert_eq!(TimeSpan::parse("3.9us").unwrap().ps(), 3_900_000);
        assert_eq!(TimeSpan::parse("3.9µs").unwrap().ps(), 3_900_000);
        assert_eq!(TimeSpan::parse("1.5ns").unwrap().ps(), 1_500);
        assert_eq!(TimeSpan::parse("2s").unwrap().ps(), 2_000_000_000_000);
        assert_eq!(TimeSpan::from_ns(350), TimeSpan::from_ps(350_000));
    }

    #[test]
    fn display_is_canonical() {
        assert_eq!(Frequency::from_hz(3_000_000_000).to_string(), "3GHz");
        assert_eq!(Frequency::from_hz(1_980_000_000).to_string(), "1.98GHz");
        assert_eq!(Frequency::from_hz(1_980_000_001).to_string(), "1980000001Hz");
        assert_eq!(ByteSize::from_bytes(65_536).to_string(), "64KiB");
        assert_eq!(ByteSize::from_bytes(50_000_000).to_string(), "50MB");
        assert_eq!(ByteSize::from_bytes(0).to_string(), "0B");
        assert_eq!(TimeSpan::from_ps(3_900_000).to_string(), "3.9us");
        assert_eq!(TimeSpan::from_ps(1).to_string(), "1ps");
        assert_eq!(Bandwidth::from_bytes_per_second(3_350_000_000_000).to_string(), "3.35TB/s");
    }

    #[test]
    fn exact_fractions_with_many_digits() {
        // 2^-39 TiB is exactly 2 bytes but needs 39 fraction digits.
        let text = "0.000000000001818989403545856475830078125TiB";
        assert_eq!(ByteSize::parse(text).unwrap().bytes(), 2);
        assert_eq!(
            Frequency::parse("1.500000000000000000000000000000000000000000GHz").unwrap().hz(),
            1_500_000_000
        );
    }

    #[test]
    fn errors_quote_the_text() {
        let msg = |r: Result<TimeSpan, UnitError>| r.unwrap_err().to_string();
        assert_eq!(msg(TimeSpan::parse("1.5ps")), "\"1.5ps\" is not a whole number of 1 ps, the resolution");
        assert_eq!(
            ByteSize::parse("64Kib").unwrap_err().to_string(),
            "unknown unit \"Kib\" in \"64Kib\"; expected one of: \
             B, KiB, MiB, GiB, TiB, KB, MB, GB, TB"
        );
        assert_eq!(
            ByteSize::parse("64").unwrap_err().to_string(),
            "missing unit in \"64\": expected a size such as \"64KiB\" \
             (units: B, KiB, MiB, GiB, TiB, KB, MB, GB, TB)"
        );
        assert_eq!(
            msg(TimeSpan::parse("20000000s")),
            "\"20000000s\" is too large (the maximum is 18446744073709551615ps)"
        );
        assert!(msg(TimeSpan::parse("ns")).starts_with("invalid number in \"ns\""));
    }

    #[test]
    fn rejects_malformed_numbers() {
        for text in [
            "", " ", "GHz", "-3GHz", "+3GHz", "1e9Hz", "1E9Hz", "NaN", "NaNHz", "inf", "1..5GHz", ".5GHz",
            "5.GHz", "1.2.3GHz", "1,5GHz", "3  GHz",
        ] {
            let err = Frequency::parse(text).unwrap_err();
            assert!(
                matches!(err, UnitError::BadNumber { .. } | UnitError::UnknownUnit { .. }),
                "{text:?}: {err}"
            );
        }
        assert!(matches!(Frequency::parse("1e9Hz"), Err(UnitError::BadNumber { .. })));
        assert!(matches!(Frequency::parse("3ghz"), Err(UnitError::UnknownUnit { .. })));
    }

    #[test]
    fn overflow_is_an_error() {
        assert_eq!(ByteSize::parse("18446744073709551615B").unwrap().bytes(), u64::MAX);
        for text in ["18446744073709551616B", "16777216TiB", "99999999999999999999999999999999999999999999B"]
        {
            assert!(matches!(ByteSize::parse(text), Err(UnitError::Overflow { .. })), "{text}");
        }
    }

    #[test]
    fn helpers() {
        assert_eq!(Frequency::from_hz(3_000_000_000).period_ps_floor(), 333);
        assert_eq!(Frequency::from_hz(1_000_000_000).period_ps_floor(), 1000);
        assert_eq!(Frequency::from_hz(0).period_ps_floor(), u64::MAX);
        let bw = Bandwidth::parse("1GB/s").unwrap();
        assert_eq!(bw.ps_per_bytes(64), 64_000);
        assert_eq!(Bandwidth::from_bytes_per_second(3).ps_per_bytes(1), 333_333_333_334);
        assert_eq!(Bandwidth::from_bytes_per_second(0).ps_per_bytes(1), u64::MAX);
        assert_eq!(Bandwidth::from_bytes_per_second(1).ps_per_bytes(u64::MAX), u64::MAX);
    }

    #[derive(Debug, serde::Deserialize, serde::Serialize, PartialEq)]
    struct Config {
        f: Frequency,
        size: ByteSize,
        tr: TransferRate,
        br: BitRate,
        bw: Bandwidth,
        t: TimeSpan,
    }

    const GOOD: &str = r#"
        f = "3GHz"
        size = "64KiB"
        tr = "6400MT/s"
        br = "5.23Gbps"
        bw = "3.35TB/s"
        t = "350ns"
    "#;

    #[test]
    fn serde_round_trip() {
        let cfg: Config = toml::from_str(GOOD).unwrap();
        assert_eq!(cfg.f.hz(), 3_000_000_000);
        assert_eq!(cfg.t.ps(), 350_000);
        let json = serde_json::to_string(&cfg).unwrap();
        assert_eq!(
            json,
            r#"{"f":"3GHz","size":"64KiB","tr":"6.4GT/s","br":"5.23Gbps","bw":"3.35TB/s","t":"350ns"}"#
        );
        let back: Config = serde_json::from_str(&json).unwrap();
        assert_eq!(back, cfg);
    }

    #[test]
    fn serde_rejects_bare_numbers() {
        let cases = [
            ("f = 3", "missing unit in 3: expected a frequency such as \"3GHz\""),
            ("size = 64", "missing unit in 64: expected a size such as \"64KiB\" (units: B, KiB"),
            ("tr = 6400", "missing unit in 6400: expected a transfer rate"),
            ("br = 5.23", "missing unit in 5.23: expected a bit rate"),
            ("bw = -1", "missing unit in -1: expected a bandwidth"),
            ("t = 350", "missing unit in 350: expected a time such as \"350ns\""),
        ];
        for (line, want) in cases {
            let key = line.split(' ').next().unwrap();
            let text: String = GOOD
                .lines()
                .map(|l| if l.trim_start().starts_with(&format!("{key} ")) { line } else { l })
                .collect::<Vec<_>>()
                .join("\n");
            let err = toml::from_str::<Config>(&text).unwrap_err().to_string();
            assert!(err.contains(want), "{line}: {err}");
        }
        let err = toml::from_str::<Config>(&GOOD.replace("\"64KiB\"", "\"64Kib\"")).unwrap_err().to_string();
        assert!(err.contains("unknown unit \"Kib\" in \"64Kib\""), "{err}");
        let err = serde_json::from_str::<TimeSpan>("350").unwrap_err().to_string();
        assert!(err.starts_with("missing unit in 350: expected a time"), "{err}");
        let err = serde_json::from_str::<TimeSpan>("true").unwrap_err().to_string();
        assert!(err.contains("expected a string with a unit"), "{err}");
    }

    proptest! {
        #[test]
        fn display_round_trips(v in any::<u64>()) {
            prop_assert_eq!(Frequency::parse(&Frequency::from_hz(v).to_string()), Ok(Frequency::from_hz(v)));
            prop_assert_eq!(ByteSize::parse(&ByteSize::from_bytes(v).to_string()), Ok(ByteSize::from_bytes(v)));
            prop_assert_eq!(TransferRate::parse(&TransferRate::from_per_second(v).to_string()), Ok(TransferRate::from_per_second(v)));
            prop_assert_eq!(BitRate::parse(&BitRate::from_bits_per_second(v).to_string()), Ok(BitRate::from_bits_per_second(v)));
            prop_assert_eq!(Bandwidth::parse(&Bandwidth::from_bytes_per_second(v).to_string()), Ok(Bandwidth::from_bytes_per_second(v)));
            prop_assert_eq!(TimeSpan::parse(&TimeSpan::from_ps(v).to_string()), Ok(TimeSpan::from_ps(v)));
        }

        #[test]
        fn round_units_round_trip(n in 0u64..100_000, k in 0usize..4) {
            // Values that are whole multiples of a unit exercise the non-base units.
            let scale = [1, K, M, G][k];
            let v = n * scale;
            prop_assert_eq!(TimeSpan::parse(&TimeSpan::from_ps(v).to_string()), Ok(TimeSpan::from_ps(v)));
            prop_assert_eq!(ByteSize::parse(&ByteSize::from_bytes(n << (10 * k)).to_string()), Ok(ByteSize::from_bytes(n << (10 * k))));
        }

        #[test]
        fn parse_never_panics(s in "\\PC{0,24}") {
            let _ = Frequency::parse(&s);
            let _ = ByteSize::parse(&s);
            let _ = TimeSpan::parse(&s);
        }
    }
}
