//! Address mapping: physical byte address to (channel, pseudo-channel, rank, bank group, bank,
//! row, column).
//!
//! Contract: a scheme is chosen by name once; decoding is then shifts and masks (or, for counts
//! that are not powers of two such as the H100's 80 channels, divisions), with no allocation.
//! Decoding is a bijection between `[0, capacity)` and the device's coordinates, so no two
//! addresses share a burst.
//!
//! How an address is cut (low bits first):
//! 1. the byte offset within a burst (`burst_bytes`);
//! 2. the low column bits: `interleave / burst_bytes` consecutive bursts stay in one
//!    pseudo-channel and row (the channel-interleaving granularity);
//! 3. the scheme's fields, read from the right of its name: in "RoCoBaRaCh" the channel
//!    (`Ch`) comes next, then the rank (`Ra`), the bank (`Ba`), the rest of the column (`Co`)
//!    and the row (`Ro`) last.
//!
//! `Ch` counts pseudo-channels of all stacks, channel index fastest (so consecutive chunks go to
//! different channels before they share a channel's command bus); `Ba` counts bank groups and
//! banks, bank group fastest (so consecutive chunks of one pseudo-channel alternate bank groups
//! and pay tCCD_S, not tCCD_L). With `xor_bank`, the bank index is XORed with the low row bits
//! (permutation-based interleaving, which spreads row-conflicting strides over banks). With
//! `channel_hash`, the pseudo-channel index is rotated (modulo the pseudo-channel count, which
//! need not be a power of two) by a hash of the fields above `Ch`, as GPUs hash the memory
//! partition index against *partition camping*: thousands of warps that stream from
//! addresses a power-of-two stride apart would otherwise all start on the few pseudo-channels
//! that stride maps to, and advance over them together. GPGPU-Sim/Accel-Sim model the same with
//! their IPOLY partition indexing (Rau, "Pseudo-randomly interleaved memory", ISCA 1991). The
//! rotation does not depend on `Ch` itself, so the mapping stays a bijection.

use crate::dram::error::DramError;

/// A DRAM coordinate: where one burst lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct DramAddr {
    /// Channel, counted over all stacks (stack-major).
    pub channel: u32,
    /// Pseudo-channel within the channel.
    pub pseudo_channel: u32,
    /// Rank (HBM3 stack id) within the pseudo-channel.
    pub rank: u32,
    /// Bank group within the rank.
    pub bank_group: u32,
    /// Bank within the bank group.
    pub bank: u32,
    /// Row within the bank.
    pub row: u32,
    /// Column, in bursts, within the row.
    pub column: u32,
}

/// The address mapping schemes, by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MappingScheme {
    /// Row, bank, rank, column, channel (channel lowest): cache-line interleaving with whole
    /// rows kept in one bank (Ramulator's RoBaRaCoCh).
    RoBaRaCoCh,
    /// Row, column, bank, rank, channel: channel-interleaved, then rank and bank, so streams
    /// spread over every bank before they reuse one (the default for streaming).
    RoCoBaRaCh,
    /// Channel, rank, bank, row, column: each channel holds one contiguous slice.
    ChRaBaRoCo,
    /// Row, rank, bank, column, channel.
    RoRaBaCoCh,
    /// Row, rank, bank, channel, column (DRAMsim3's rorabgbachco).
    RoRaBaChCo,
    /// Row, rank, column, bank, channel: channel-interleaved, then bank groups and banks within
    /// one rank, so a stream's consecutive bursts in a pseudo-channel alternate bank groups
    /// (tCCD_S) without switching stack ids (tCCD_R), as GPU memory controllers interleave.
    RoRaCoBaCh,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    Ch,
    Ra,
    Ba,
    Ro,
    Co,
}

impl MappingScheme {
    /// Every scheme.
    pub const ALL: [MappingScheme; 6] = [
        MappingScheme::RoBaRaCoCh,
        MappingScheme::RoCoBaRaCh,
        MappingScheme::ChRaBaRoCo,
        MappingScheme::RoRaBaCoCh,
        MappingScheme::RoRaBaChCo,
        MappingScheme::RoRaCoBaCh,
    ];

    /// The valid names, for error messages.
    pub const VALID: &'static str = "RoBaRaCoCh, RoCoBaRaCh, ChRaBaRoCo, RoRaBaCoCh, RoRaBaChCo, RoRaCoBaCh";

    /// The scheme's name.
    pub fn name(self) -> &'static str {
        match self {
            MappingScheme::RoBaRaCoCh => "RoBaRaCoCh",
            MappingScheme::RoCoBaRaCh => "RoCoBaRaCh",
            MappingScheme::ChRaBaRoCo => "ChRaBaRoCo",
            MappingScheme::RoRaBaCoCh => "RoRaBaCoCh",
            MappingScheme::RoRaBaChCo => "RoRaBaChCo",
            MappingScheme::RoRaCoBaCh => "RoRaCoBaCh",
        }
    }

    /// The scheme called `name`, or an error listing the valid names.
    pub fn from_name(name: &str) -> Result<Self, DramError> {
        MappingScheme::ALL
            .into_iter()
            .find(|s| s.name() == name)
            .ok_or_else(|| DramError::UnknownMapping { name: name.to_string(), valid: MappingScheme::VALID })
    }

    /// Fields from the least significant (rightmost in the name) up.
    fn fields_low_first(self) -> [Field; 5] {
        use Field::*;
        match self {
            MappingScheme::RoBaRaCoCh => [Ch, Co, Ra, Ba, Ro],
            MappingScheme::RoCoBaRaCh => [Ch, Ra, Ba, Co, Ro],
            MappingScheme::ChRaBaRoCo => [Co, Ro, Ba, Ra, Ch],
            MappingScheme::RoRaBaCoCh => [Ch, Co, Ba, Ra, Ro],
            MappingScheme::RoRaBaChCo => [Co, Ch, Ba, Ra, Ro],
            MappingScheme::RoRaCoBaCh => [Ch, Ba, Co, Ra, Ro],
        }
    }
}

/// A mixed-radix digit: power-of-two sizes use shifts and masks.
#[derive(Debug, Clone, Copy)]
struct Radix {
    size: u64,
    shift: Option<u32>,
}

impl Radix {
    fn new(size: u64) -> Self {
        Radix { size, shift: size.is_power_of_two().then(|| size.trailing_zeros()) }
    }

    /// (x mod size, x / size).
    #[inline]
    fn split(self, x: u64) -> (u64, u64) {
        match self.shift {
            Some(s) => (x & (self.size - 1), x >> s),
            None => (x % self.size, x / self.size),
        }
    }
}

/// Geometry the mapping needs, per the organisation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MappingGeometry {
    /// Channels over all stacks.
    pub channels: u32,
    /// Pseudo-channels per channel.
    pub pseudo_channels: u32,
    /// Ranks per pseudo-channel.
    pub ranks: u32,
    /// Bank groups per rank.
    pub bank_groups: u32,
    /// Banks per bank group.
    pub banks: u32,
    /// Rows per bank.
    pub rows: u32,
    /// Bursts per row.
    pub columns: u32,
    /// Bytes per burst.
    pub burst_bytes: u64,
}

/// Decoding by shifts and masks, for a mapping whose every size is a power of two (every
/// preset): the general digit loop divides, this does not.
#[derive(Debug, Clone, Copy)]
struct Pow2 {
    /// log2 of the burst size.
    burst: u32,
    /// log2 of the interleave (in bursts).
    interleave: u32,
    /// Per field (indexed by `Field`), its shift in the chunk index and its mask.
    shift: [u32; 5],
    mask: [u64; 5],
    /// log2 of the channels (the low part of `Ch`) and of the bank groups (of `Ba`).
    channels: u32,
    bank_groups: u32,
}

/// A resolved mapping (see the module docs).
#[derive(Debug, Clone)]
pub struct AddressMapping {
    scheme: MappingScheme,
    geometry: MappingGeometry,
    burst: Radix,
    interleave: Radix,
    /// Digit of each field, low first.
    digits: [(Field, Radix); 5],
    pow2: Option<Pow2>,
    xor_bank: bool,
    /// Rotate the pseudo-channel index by a hash of the fields above it.
    channel_hash: bool,
    /// Pseudo-channels over all stacks (the `Ch` field's size).
    pseudo_channels: u64,
    /// Per field (indexed by `Field`), a mask keeping its digit in the hash's key: all ones for
    /// the fields above `Ch` in the scheme, zero for `Ch` and the fields below it.
    hashed: [u64; 5],
    capacity: u64,
}

impl AddressMapping {
    /// Builds a mapping; `interleave_bursts` bursts stay together (must divide `columns`).
    pub fn new(
        scheme: MappingScheme,
        geometry: MappingGeometry,
        interleave_bursts: u32,
        xor_bank: bool,
    ) -> Result<Self, DramError> {
        let g = geometry;
        if interleave_bursts == 0 || !g.columns.is_multiple_of(interleave_bursts) {
            return Err(DramError::Invalid {
                what: format!("controller.interleave ({interleave_bursts} bursts)"),
                reason: format!("must divide the {} bursts of a row", g.columns),
            });
        }
        let bank_count = u64::from(g.bank_groups) * u64::from(g.banks);
        if xor_bank && !bank_count.is_power_of_two() {
            return Err(DramError::Invalid {
                what: "controller.xor_bank".into(),
                reason: format!("needs a power-of-two number of banks per rank, not {bank_count}"),
            });
        }
        let size = |f: Field| -> u64 {
            match f {
                Field::Ch => u64::from(g.channels) * u64::from(g.pseudo_channels),
                Field::Ra => u64::from(g.ranks),
                Field::Ba => bank_count,
                Field::Ro => u64::from(g.rows),
                Field::Co => u64::from(g.columns / interleave_bursts),
            }
        };
        let fields = scheme.fields_low_first();
        let digits = fields.map(|f| (f, Radix::new(size(f))));
        let capacity = fields
            .iter()
            .try_fold(g.burst_bytes * u64::from(interleave_bursts), |acc, f| acc.checked_mul(size(*f)))
            .ok_or_else(|| DramError::Invalid {
                what: "organization".into(),
                reason: "the capacity does not fit in 64 bits".into(),
            })?;
        let log2 = |x: u64| x.is_power_of_two().then(|| x.trailing_zeros());
        let pow2 = (|| {
            let mut shift = [0u32; 5];
            let mut mask = [0u64; 5];
            let mut at = 0;
            for (field, radix) in digits {
                let bits = log2(radix.size)?;
                shift[field as usize] = at;
                mask[field as usize] = radix.size - 1;
                at += bits;
            }
            Some(Pow2 {
                burst: log2(g.burst_bytes)?,
                interleave: log2(u64::from(interleave_bursts))?,
                shift,
                mask,
                channels: log2(u64::from(g.channels))?,
                bank_groups: log2(u64::from(g.bank_groups))?,
            })
        })();
        Ok(AddressMapping {
            scheme,
            geometry,
            burst: Radix::new(g.burst_bytes),
            interleave: Radix::new(u64::from(interleave_bursts)),
            digits,
            pow2,
            xor_bank,
            channel_hash: false,
            pseudo_channels: u64::from(g.channels) * u64::from(g.pseudo_channels),
            hashed: {
                let ch = fields.iter().position(|&f| f == Field::Ch).unwrap_or(0);
                let mut m = [0u64; 5];
                for &f in &fields[ch + 1..] {
                    m[f as usize] = u64::MAX;
                }
                m
            },
            capacity,
        })
    }

    /// The mapping with pseudo-channel hashing on or off (see the module docs).
    pub fn with_channel_hash(mut self, on: bool) -> Self {
        self.channel_hash = on;
        self
    }

    /// Whether the scheme has fields above `Ch` for `channel_hash` to hash (none when `Ch` is
    /// the most significant field: the hash would then change nothing).
    pub fn can_hash_channels(&self) -> bool {
        self.hashed.iter().any(|m| *m != 0)
    }

    /// The rotation of the pseudo-channel index for the digits `v` of the fields above `Ch` in
    /// the scheme (the others are ignored, so the chunks below `Ch`, which a scheme keeps
    /// together in one pseudo-channel, stay together): a multiplicative hash, so neighbouring
    /// rows, columns and banks get unrelated rotations.
    #[inline]
    fn rotation(&self, v: &[u64; 5]) -> u64 {
        let d = |f: Field| v[f as usize] & self.hashed[f as usize];
        let key = d(Field::Ra) ^ (d(Field::Ba) << 8) ^ (d(Field::Co) << 20) ^ (d(Field::Ro) << 36);
        (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 32) % self.pseudo_channels
    }

    /// The scheme.
    pub fn scheme(&self) -> MappingScheme {
        self.scheme
    }

    /// Whether bank XOR hashing is on.
    pub fn xor_bank(&self) -> bool {
        self.xor_bank
    }

    /// Bytes addressable.
    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    /// Index of the pseudo-channel controller that owns `a` (channel-major).
    #[inline]
    pub fn controller_of(&self, a: &DramAddr) -> u32 {
        a.channel * self.geometry.pseudo_channels + a.pseudo_channel
    }

    /// The position of `a`'s pseudo-channel in the `Ch` field's order: channels fastest, so
    /// where `Ch` is the lowest field (unhashed), `interleave_index % n` of consecutive chunks
    /// cycles through `0..n`.
    #[inline]
    pub fn interleave_index(&self, a: &DramAddr) -> u32 {
        a.pseudo_channel * self.geometry.channels + a.channel
    }

    /// Which of `banks` memory-side cache banks owns byte `addr`: the bank its pseudo-channel's
    /// [`AddressMapping::interleave_index`] falls to, modulo `banks` (at least 1); `None` beyond
    /// the capacity.
    #[inline]
    pub fn owner(&self, addr: u64, banks: u32) -> Option<u32> {
        self.decode(addr).map(|a| self.interleave_index(&a) % banks.max(1))
    }

    /// Where the burst holding byte `addr` lives; `None` beyond the capacity.
    #[inline]
    pub fn decode(&self, addr: u64) -> Option<DramAddr> {
        if addr >= self.capacity {
            return None;
        }
        if let Some(p) = &self.pow2 {
            let burst = addr >> p.burst;
            let col_lo = burst & ((1 << p.interleave) - 1);
            let x = burst >> p.interleave;
            let v: [u64; 5] = std::array::from_fn(|f| (x >> p.shift[f]) & p.mask[f]);
            let (mut ch, ra, mut ba, ro, co) = (v[0], v[1], v[2], v[3], v[4]);
            if self.channel_hash {
                ch = (ch + self.rotation(&v)) & p.mask[Field::Ch as usize];
            }
            if self.xor_bank {
                ba ^= ro & p.mask[Field::Ba as usize];
            }
            return Some(DramAddr {
                channel: (ch & ((1 << p.channels) - 1)) as u32,
                pseudo_channel: (ch >> p.channels) as u32,
                rank: ra as u32,
                bank_group: (ba & ((1 << p.bank_groups) - 1)) as u32,
                bank: (ba >> p.bank_groups) as u32,
                row: ro as u32,
                column: ((co << p.interleave) | col_lo) as u32,
            });
        }
        Some(self.decode_digits(addr))
    }

    /// [`AddressMapping::decode`] digit by digit, for any sizes (`addr` is in range).
    fn decode_digits(&self, addr: u64) -> DramAddr {
        let g = &self.geometry;
        let (_, burst) = self.burst.split(addr);
        let (col_lo, mut x) = self.interleave.split(burst);
        let mut v = [0u64; 5];
        for (field, radix) in self.digits {
            let (d, rest) = radix.split(x);
            v[field as usize] = d;
            x = rest;
        }
        let (mut ch, ra, mut ba, ro, co) = (v[0], v[1], v[2], v[3], v[4]);
        if self.channel_hash {
            ch = (ch + self.rotation(&v)) % self.pseudo_channels;
        }
        if self.xor_bank {
            let n = u64::from(g.bank_groups) * u64::from(g.banks);
            ba ^= ro & (n - 1);
        }
        let channels = u64::from(g.channels);
        let bgs = u64::from(g.bank_groups);
        // Every value is below a u32 count, so the casts cannot truncate.
        DramAddr {
            channel: (ch % channels) as u32,
            pseudo_channel: (ch / channels) as u32,
            rank: ra as u32,
            bank_group: (ba % bgs) as u32,
            bank: (ba / bgs) as u32,
            row: ro as u32,
            column: (co * self.interleave.size + col_lo) as u32,
        }
    }

    /// The first byte of the burst at `a` (the inverse of [`AddressMapping::decode`]); `None`
    /// if a coordinate is out of range.
    pub fn encode(&self, a: &DramAddr) -> Option<u64> {
        let g = &self.geometry;
        let ok = a.channel < g.channels
            && a.pseudo_channel < g.pseudo_channels
            && a.rank < g.ranks
            && a.bank_group < g.bank_groups
            && a.bank < g.banks
            && a.row < g.rows
            && a.column < g.columns;
        if !ok {
            return None;
        }
        let il = self.interleave.size;
        let mut ba = u64::from(a.bank) * u64::from(g.bank_groups) + u64::from(a.bank_group);
        if self.xor_bank {
            let n = u64::from(g.bank_groups) * u64::from(g.banks);
            ba ^= u64::from(a.row) & (n - 1);
        }
        let mut v = [0u64; 5];
        v[Field::Ch as usize] = u64::from(a.pseudo_channel) * u64::from(g.channels) + u64::from(a.channel);
        v[Field::Ra as usize] = u64::from(a.rank);
        v[Field::Ba as usize] = ba;
        v[Field::Ro as usize] = u64::from(a.row);
        v[Field::Co as usize] = u64::from(a.column) / il;
        if self.channel_hash {
            let n = self.pseudo_channels;
            v[Field::Ch as usize] = (v[Field::Ch as usize] + n - self.rotation(&v)) % n;
        }
        let mut x = 0u64;
        for (field, radix) in self.digits.iter().rev() {
            x = x * radix.size + v[*field as usize];
        }
        Some((x * il + u64::from(a.column) % il) * g.burst_bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn geometry() -> MappingGeometry {
        MappingGeometry {
            channels: 3,
            pseudo_channels: 2,
            ranks: 2,
            bank_groups: 2,
            banks: 2,
            rows: 4,
            columns: 8,
            burst_bytes: 32,
        }
    }

    #[test]
    fn every_scheme_is_a_bijection() {
        for scheme in MappingScheme::ALL {
            for (xor, hash) in [(false, false), (true, false), (false, true), (true, true)] {
                for il in [1, 2, 4] {
                    let m = AddressMapping::new(scheme, geometry(), il, xor).unwrap().with_channel_hash(hash);
                    assert_eq!(m.capacity(), 3 * 2 * 2 * 2 * 2 * 4 * 8 * 32);
                    let mut seen = std::collections::HashSet::new();
                    for burst in 0..m.capacity() / 32 {
                        let a = m.decode(burst * 32 + 5).unwrap();
                        assert!(seen.insert(a), "{scheme:?} maps two bursts to {a:?}");
                        assert_eq!(
                            m.encode(&a),
                            Some(burst * 32),
                            "{scheme:?} xor={xor} hash={hash} il={il}"
                        );
                    }
                    assert_eq!(m.decode(m.capacity()), None);
                }
            }
        }
    }

    #[test]
    fn the_power_of_two_decoder_agrees_with_the_digit_loop() {
        let g = MappingGeometry {
            channels: 4,
            pseudo_channels: 2,
            ranks: 2,
            bank_groups: 4,
            banks: 2,
            ..geometry()
        };
        for scheme in MappingScheme::ALL {
            for (xor, hash) in [(false, false), (true, false), (false, true), (true, true)] {
                for il in [1, 2, 4] {
                    let m = AddressMapping::new(scheme, g, il, xor).unwrap().with_channel_hash(hash);
                    assert!(m.pow2.is_some());
                    for addr in (0..m.capacity()).step_by(7) {
                        assert_eq!(
                            m.decode(addr),
                            Some(m.decode_digits(addr)),
                            "{scheme:?} xor={xor} hash={hash} il={il}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn channel_interleaving_puts_consecutive_chunks_on_different_channels() {
        let m = AddressMapping::new(MappingScheme::RoCoBaRaCh, geometry(), 2, false).unwrap();
        let chunk = |i: u64| m.decode(i * 64).unwrap();
        assert_eq!((chunk(0).channel, chunk(0).pseudo_channel, chunk(0).column), (0, 0, 0));
        assert_eq!(chunk(0), m.decode(32).map(|a| DramAddr { column: 0, ..a }).unwrap());
        assert_eq!((chunk(1).channel, chunk(1).pseudo_channel), (1, 0));
        assert_eq!((chunk(3).channel, chunk(3).pseudo_channel), (0, 1));
        // After all 6 pseudo-channels, the rank changes, then the bank group.
        assert_eq!(chunk(6).rank, 1);
        assert_eq!((chunk(12).rank, chunk(12).bank_group), (0, 1));
    }

    #[test]
    fn channel_hashing_spreads_a_power_of_two_stride() {
        // The H100's 160 pseudo-channels, 128 B per pseudo-channel: streams starting 8 KiB apart
        // (64 chunks) all start on the 5 pseudo-channels that are multiples of 32 unhashed.
        let g = MappingGeometry {
            channels: 80,
            pseudo_channels: 2,
            ranks: 4,
            bank_groups: 4,
            banks: 4,
            rows: 1 << 10,
            columns: 32,
            burst_bytes: 32,
        };
        let pcs = |hash: bool| {
            let m =
                AddressMapping::new(MappingScheme::RoRaCoBaCh, g, 4, false).unwrap().with_channel_hash(hash);
            let set: std::collections::HashSet<u32> =
                (0..1000u64).map(|k| m.controller_of(&m.decode(k * 8192).unwrap())).collect();
            set.len()
        };
        assert_eq!(pcs(false), 5);
        assert!(pcs(true) > 140, "{}", pcs(true));
        // Fields below `Ch` stay out of the hash: RoRaBaChCo keeps a row's chunks (its
        // columns) together in one pseudo-channel, hashed or not.
        let m = AddressMapping::new(MappingScheme::RoRaBaChCo, g, 4, false).unwrap().with_channel_hash(true);
        let row = u64::from(g.columns) * 32;
        for r in 0..64u64 {
            let pc = |a: u64| m.controller_of(&m.decode(a).unwrap());
            assert!((0..row).step_by(128).all(|o| pc(r * row + o) == pc(r * row)), "row {r}");
        }
    }

    #[test]
    fn unknown_names_list_the_valid_ones() {
        let e = MappingScheme::from_name("RoBaCh").unwrap_err();
        assert_eq!(
            e.to_string(),
            "unknown address mapping \"RoBaCh\"; valid mappings: RoBaRaCoCh, RoCoBaRaCh, ChRaBaRoCo, \
             RoRaBaCoCh, RoRaBaChCo, RoRaCoBaCh"
        );
    }
}
