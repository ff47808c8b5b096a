//! Sector masks: which sectors of a line a byte range touches, covers or spans, and the runs
//! of consecutive sectors a mask is made of (one downstream request each).
//!
//! A line of up to 64 sectors keeps its valid and dirty state as one `u64` each, bit `s` for
//! sector `s`. An unsectored cache is the case of one sector per line.

/// Bit `s` set: sector `s` of the line.
pub type SectorMask = u64;

/// Sector arithmetic of one cache's line and sector sizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sectors {
    line_shift: u32,
    sector_shift: u32,
}

impl Sectors {
    /// Sectors of `1 << sector_shift` bytes in lines of `1 << line_shift` bytes (at most 64).
    pub const fn new(line_shift: u32, sector_shift: u32) -> Self {
        Self { line_shift, sector_shift }
    }

    /// Bits `first..=last` (both below 64, `first <= last`).
    #[inline]
    pub fn bits(first: u32, last: u32) -> SectorMask {
        (u64::MAX >> (63 - last)) & (u64::MAX << first)
    }

    /// The sectors that bytes `[lo, hi)` of a line touch (offsets within the line,
    /// `lo < hi <= line`).
    #[inline]
    pub fn touched(&self, lo: u64, hi: u64) -> SectorMask {
        if hi <= lo {
            return 0;
        }
        Self::bits((lo >> self.sector_shift) as u32, ((hi - 1) >> self.sector_shift) as u32)
    }

    /// The sectors that bytes `[lo, hi)` of a line cover entirely.
    #[inline]
    pub fn covered(&self, lo: u64, hi: u64) -> SectorMask {
        let size = 1u64 << self.sector_shift;
        let first = lo.div_ceil(size);
        let end = hi >> self.sector_shift;
        if first >= end { 0 } else { Self::bits(first as u32, (end - 1) as u32) }
    }

    /// The sectors of the line starting at `base` that the range `[addr, addr + bytes)` touches,
    /// clamped to the line (used for fills, whose range comes from downstream).
    #[inline]
    pub fn touched_in_line(&self, base: u64, addr: u64, bytes: u64) -> SectorMask {
        let line_end = base.saturating_add(1 << self.line_shift);
        let lo = addr.clamp(base, line_end);
        let hi = addr.saturating_add(bytes).clamp(base, line_end);
        self.touched(lo - base, hi - base)
    }

    /// The byte range `(offset, bytes)` from the first to the last sector of a non-empty mask.
    #[inline]
    pub fn span(&self, mask: SectorMask) -> (u64, u64) {
        let first = u64::from(mask.trailing_zeros());
        let last = u64::from(63 - mask.leading_zeros());
        (first << self.sector_shift, (last - first + 1) << self.sector_shift)
    }

    /// How many runs of consecutive sectors `mask` has.
    #[inline]
    pub fn run_count(mask: SectorMask) -> u32 {
        // A run starts at each set bit whose lower neighbour is clear.
        (mask & !(mask << 1)).count_ones()
    }

    /// The runs of consecutive sectors of `mask`, lowest first, each as a mask.
    #[inline]
    pub fn runs(mut mask: SectorMask) -> impl Iterator<Item = SectorMask> {
        std::iter::from_fn(move || {
            if mask == 0 {
                return None;
            }
            let first = mask.trailing_zeros();
            let len = (!(mask >> first)).trailing_zeros();
            let run = Self::bits(first, first + len - 1);
            mask &= !run;
            Some(run)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_of_byte_ranges() {
        let s = Sectors::new(6, 5); // 64 B lines, 32 B sectors
        assert_eq!(s.touched(0, 32), 0b01);
        assert_eq!(s.touched(31, 33), 0b11);
        assert_eq!(s.touched(32, 64), 0b10);
        assert_eq!(s.covered(0, 64), 0b11);
        assert_eq!(s.covered(1, 64), 0b10);
        assert_eq!(s.covered(1, 63), 0);
        assert_eq!(s.span(0b10), (32, 32));
        assert_eq!(s.touched_in_line(128, 100, 60), 0b01);
        assert_eq!(s.touched_in_line(128, 0, u64::MAX), 0b11);
        let wide = Sectors::new(12, 6); // 64 sectors
        assert_eq!(wide.touched(0, 4096), u64::MAX);
        assert_eq!(wide.covered(0, 4096), u64::MAX);
        assert_eq!(Sectors::run_count(0), 0);
        assert_eq!(Sectors::run_count(0b0110), 1);
        assert_eq!(Sectors::run_count(0b1001), 2);
        assert_eq!(Sectors::run_count(u64::MAX), 1);
        assert_eq!(Sectors::runs(0b1101_1001).collect::<Vec<_>>(), [0b1, 0b1_1000, 0b1100_0000]);
        assert_eq!(Sectors::runs(u64::MAX).collect::<Vec<_>>(), [u64::MAX]);
        assert_eq!(Sectors::runs(1 << 63 | 1).collect::<Vec<_>>(), [1, 1 << 63]);
        assert_eq!(wide.span(1 << 63), (4032, 64));
    }
}
