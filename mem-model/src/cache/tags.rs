//! The tag array: which line each way of each set holds, and the state of its sectors.
//!
//! A way holds a line number (address / line size) or nothing, a mask of valid sectors, a mask
//! of dirty sectors, and the MSHR fetching into it, if any (such a way is locked: it cannot be
//! evicted until its fetches are back). A dirty sector may be not yet valid: a partial write
//! to a sector being fetched marks it dirty at once and the fill makes it valid.
//!
//! Layout: the four words of a way sit together and the ways of a set follow each other, so a
//! lookup reads one contiguous block whose words it needs next (state, lock, the victim's
//! state) are already on hand; the loads of a set are independent, so a lookup in a large,
//! cold cache waits for memory about once rather than once per array. Line numbers and locks
//! are stored complemented, so that an empty, unlocked way is all zero bits: the array comes
//! from zeroed memory that the system maps lazily, and a large cache costs nothing for the
//! sets a run never touches.

use super::sector::SectorMask;

/// Marks a way that holds no line.
const NO_LINE: u64 = u64::MAX;
/// Marks a way with no fetch in flight.
pub const NO_MSHR: u16 = u16::MAX;

/// Word of a way: the complement of its line number (zero: [`NO_LINE`]).
const LINE: usize = 0;
/// Word of a way: its valid sectors.
const VALID: usize = 1;
/// Word of a way: its dirty sectors.
const DIRTY: usize = 2;
/// Word of a way: the complement of the MSHR fetching into it (zero: [`NO_MSHR`]).
const LOCK: usize = 3;

/// Sector state of one way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Way {
    /// Sectors holding data.
    pub valid: SectorMask,
    /// Sectors written since the fill (to be written back on eviction).
    pub dirty: SectorMask,
}

/// Where a line is, or where it could go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lookup {
    /// The line is in this way.
    Present(usize),
    /// The line is absent; this way of the set holds no line, if any does.
    Absent(Option<usize>),
}

/// Tags and sector state of every way, set by set.
#[derive(Debug, Clone)]
pub struct TagArray {
    sets: u64,
    /// `sets - 1` when `sets` is a power of two (the usual case: a mask instead of a division).
    mask: Option<u64>,
    /// Banks the line numbers are interleaved over, in runs of `1 << run_shift` lines (the
    /// network's granule): a bank of a shared cache sees every `banks`-th run, so its set
    /// comes from the line number with the bank's digit taken out.
    banks: u64,
    run_shift: u32,
    ways: usize,
    /// Every way, `[set * ways + way]`: its words [`LINE`], [`VALID`], [`DIRTY`], [`LOCK`].
    slots: Vec<[u64; 4]>,
}

impl TagArray {
    /// An empty array of `sets` sets of `ways` ways.
    pub fn new(sets: u64, ways: usize) -> Self {
        let n = sets as usize * ways;
        let empty = [!NO_LINE, 0, 0, u64::from(!NO_MSHR)];
        let mask = sets.is_power_of_two().then(|| sets - 1);
        Self { sets, mask, banks: 1, run_shift: 0, ways, slots: vec![empty; n] }
    }

    /// The same array as one bank of `banks` (at least 1) that interleave runs of `run_lines`
    /// consecutive lines (a power of two; 1: single lines).
    pub fn interleaved(mut self, banks: u64, run_lines: u64) -> Self {
        self.banks = banks.max(1);
        self.run_shift = run_lines.max(1).ilog2();
        self
    }

    /// The set of line number `line`.
    #[inline]
    pub fn set_of(&self, line: u64) -> usize {
        let line = if self.banks > 1 {
            // Run number divided by the banks, then the line's place in its run.
            let s = self.run_shift;
            (((line >> s) / self.banks) << s) | (line & ((1 << s) - 1))
        } else {
            line
        };
        match self.mask {
            Some(m) => (line & m) as usize,
            None => (line % self.sets) as usize,
        }
    }

    #[inline]
    fn slots(&self, set: usize) -> &[[u64; 4]] {
        &self.slots[set * self.ways..(set + 1) * self.ways]
    }

    #[inline]
    fn slot(&self, set: usize, way: usize) -> &[u64; 4] {
        &self.slots[set * self.ways + way]
    }

    #[inline]
    fn slot_mut(&mut self, set: usize, way: usize) -> &mut [u64; 4] {
        &mut self.slots[set * self.ways + way]
    }

    /// Host hint: a lookup in `set` is coming (see [`sim_core::host::prefetch`]).
    #[inline]
    pub fn prefetch(&self, set: usize) {
        sim_core::host::prefetch_slice(self.slots(set));
    }

    /// The way of `set` holding `line`, if any.
    #[inline]
    pub fn find(&self, set: usize, line: u64) -> Option<usize> {
        let key = !line;
        self.slots(set).iter().position(|s| s[LINE] == key)
    }

    /// The way of `set` holding `line`, or else an empty way, in one pass.
    #[inline]
    pub fn lookup(&self, set: usize, line: u64) -> Lookup {
        let key = !line;
        let mut empty = None;
        for (w, s) in self.slots(set).iter().enumerate() {
            if s[LINE] == key {
                return Lookup::Present(w);
            }
            if s[LINE] == !NO_LINE && empty.is_none() {
                empty = Some(w);
            }
        }
        Lookup::Absent(empty)
    }

    /// The line number in a way, if any.
    #[inline]
    pub fn line(&self, set: usize, way: usize) -> Option<u64> {
        let l = !self.slot(set, way)[LINE];
        (l != NO_LINE).then_some(l)
    }

    /// The state of a way.
    #[inline]
    pub fn way(&self, set: usize, way: usize) -> Way {
        let s = self.slot(set, way);
        Way { valid: s[VALID], dirty: s[DIRTY] }
    }

    /// Makes `valid` sectors of a way valid and `dirty` ones dirty; returns its valid sectors.
    #[inline]
    pub fn mark(&mut self, set: usize, way: usize, valid: SectorMask, dirty: SectorMask) -> SectorMask {
        let s = self.slot_mut(set, way);
        s[VALID] |= valid;
        s[DIRTY] |= dirty;
        s[VALID]
    }

    /// Whether a way has no fetch in flight (so it may be evicted).
    #[inline]
    pub fn unlocked(&self, set: usize, way: usize) -> bool {
        self.slot(set, way)[LOCK] == u64::from(!NO_MSHR)
    }

    /// The MSHR fetching into a way, or [`NO_MSHR`].
    #[inline]
    pub fn lock(&self, set: usize, way: usize) -> u16 {
        !(self.slot(set, way)[LOCK] as u16)
    }

    /// Records MSHR `m` as fetching into a way ([`NO_MSHR`]: none).
    #[inline]
    pub fn set_lock(&mut self, set: usize, way: usize, m: u16) {
        self.slot_mut(set, way)[LOCK] = u64::from(!m);
    }

    /// Places `line` in a way with the given sector state, no fetch in flight.
    #[inline]
    pub fn install(&mut self, set: usize, way: usize, line: u64, valid: SectorMask, dirty: SectorMask) {
        *self.slot_mut(set, way) = [!line, valid, dirty, u64::from(!NO_MSHR)];
    }

    /// Whether `line` is present with every sector of `sectors` valid (for tests and checks).
    pub fn holds(&self, line: u64, sectors: SectorMask) -> bool {
        let set = self.set_of(line);
        self.find(set, line).is_some_and(|w| self.way(set, w).valid & sectors == sectors)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn install_find_and_lock() {
        let odd = TagArray::new(3, 2);
        assert_eq!(odd.set_of(10), 1);
        let mut t = TagArray::new(4, 2);
        assert_eq!(t.set_of(9), 1);
        // A bank of 64 sees lines 5, 69, 133, ...: they fill consecutive sets, not one.
        let banked = TagArray::new(4, 2).interleaved(64, 1);
        assert_eq!([5, 69, 133, 197].map(|l| banked.set_of(l)), [0, 1, 2, 3]);
        // Runs of 4 lines over 2 banks: bank 1 sees lines 4-7, 12-15, ...: sets 0-3, then 0-3.
        let runs = TagArray::new(8, 2).interleaved(2, 4);
        assert_eq!([4, 5, 6, 7, 12, 13, 20].map(|l| runs.set_of(l)), [0, 1, 2, 3, 4, 5, 0]);
        assert_eq!(t.find(1, 9), None);
        assert_eq!(t.lookup(1, 9), Lookup::Absent(Some(0)));
        t.install(1, 0, 9, 0b1, 0);
        assert_eq!(t.find(1, 9), Some(0));
        assert_eq!(t.lookup(1, 9), Lookup::Present(0));
        assert_eq!(t.lookup(1, 5), Lookup::Absent(Some(1)));
        assert!(t.holds(9, 0b1));
        assert!(!t.holds(9, 0b11));
        t.set_lock(1, 0, 3);
        assert!(!t.unlocked(1, 0));
        assert_eq!(t.lock(1, 0), 3);
        assert_eq!(t.line(1, 0), Some(9));
        assert_eq!(t.line(1, 1), None);
    }
}
