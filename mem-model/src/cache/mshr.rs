//! Miss status holding registers: the lines being fetched and the requests waiting on them.
//!
//! An MSHR tracks one line: the way it fills (none for a bypassing read, which allocates
//! nothing), the sectors requested from downstream and not yet back, the sectors that arrived
//! (for a bypass, which has no way to hold them), how many downstream reads are in flight for
//! it, and up to `targets` waiting requests, each with the sectors it needs. A later miss to the
//! same line merges into the MSHR as another target instead of reading the line again. All
//! storage is allocated once: entries, a flat target array (`targets` slots per entry) and a free
//! list, so no request allocates.

use super::sector::SectorMask;

/// A request waiting on an MSHR: which request (an index the cache chose) and what it needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Target {
    /// The cache's index of the waiting request.
    pub request: u32,
    /// The sectors that must be valid before it is answered.
    pub need: SectorMask,
}

/// One line with fetches in flight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mshr {
    /// Line number.
    pub line: u64,
    /// The way being filled, or `None` for a bypassing read.
    pub way: Option<u32>,
    /// Sectors requested downstream and not yet arrived.
    pub pending: SectorMask,
    /// Sectors arrived so far (what a bypass has to answer from).
    pub arrived: SectorMask,
    /// Downstream reads in flight.
    pub reads: u32,
    /// Reuse count of this entry, part of the downstream id so a stray answer is recognised.
    pub generation: u32,
    /// Targets waiting.
    pub targets: u32,
    /// In use.
    pub active: bool,
}

/// The MSHRs of one cache.
#[derive(Debug, Clone)]
pub struct MshrFile {
    entries: Vec<Mshr>,
    targets: Vec<Target>,
    per: usize,
    free: Vec<u16>,
    bypasses: u32,
}

impl MshrFile {
    /// `count` MSHRs (at most 65 535) of `targets` targets each.
    pub fn new(count: u32, targets: u32) -> Self {
        let idle = Mshr {
            line: 0,
            way: None,
            pending: 0,
            arrived: 0,
            reads: 0,
            generation: 0,
            targets: 0,
            active: false,
        };
        Self {
            entries: vec![idle; count as usize],
            targets: vec![Target { request: 0, need: 0 }; count as usize * targets as usize],
            per: targets as usize,
            // Popped from the end: entry 0 is used first, which keeps ids readable in traces.
            free: (0..count as u16).rev().collect(),
            bypasses: 0,
        }
    }

    /// Whether an entry is free.
    #[inline]
    pub fn has_free(&self) -> bool {
        !self.free.is_empty()
    }

    /// Entries in use.
    #[inline]
    pub fn active(&self) -> usize {
        self.entries.len() - self.free.len()
    }

    /// Takes a free entry for `line`, filling `way` (`None`: a bypass).
    #[inline]
    pub fn allocate(&mut self, line: u64, way: Option<u32>) -> Option<u16> {
        let i = self.free.pop()?;
        let e = &mut self.entries[i as usize];
        e.line = line;
        e.way = way;
        e.pending = 0;
        e.arrived = 0;
        e.reads = 0;
        e.targets = 0;
        e.active = true;
        e.generation = e.generation.wrapping_add(1);
        if way.is_none() {
            self.bypasses += 1;
        }
        Some(i)
    }

    /// Frees an entry (its reads and targets must be done).
    #[inline]
    pub fn release(&mut self, i: u16) {
        let e = &mut self.entries[i as usize];
        if !e.active {
            return;
        }
        e.active = false;
        if e.way.is_none() {
            self.bypasses -= 1;
        }
        self.free.push(i);
    }

    /// An entry.
    #[inline]
    pub fn get(&self, i: u16) -> &Mshr {
        &self.entries[i as usize]
    }

    /// An entry, for update.
    #[inline]
    pub fn get_mut(&mut self, i: u16) -> &mut Mshr {
        &mut self.entries[i as usize]
    }

    /// The entry of index `i` if it is active with generation `generation`.
    #[inline]
    pub fn lookup(&self, i: u64, generation: u32) -> Option<u16> {
        let e = self.entries.get(usize::try_from(i).ok()?)?;
        (e.active && e.generation == generation).then_some(i as u16)
    }

    /// The bypass entry for `line`, if one is active (bypasses have no way to find them by).
    #[inline]
    pub fn find_bypass(&self, line: u64) -> Option<u16> {
        if self.bypasses == 0 {
            return None;
        }
        self.entries.iter().position(|e| e.active && e.way.is_none() && e.line == line).map(|i| i as u16)
    }

    /// Whether entry `i` can take another target.
    #[inline]
    pub fn target_room(&self, i: u16) -> bool {
        (self.entries[i as usize].targets as usize) < self.per
    }

    /// Adds a target to entry `i` (the caller checked [`MshrFile::target_room`]).
    #[inline]
    pub fn add_target(&mut self, i: u16, t: Target) {
        let e = &mut self.entries[i as usize];
        let k = e.targets as usize;
        if k < self.per {
            self.targets[i as usize * self.per + k] = t;
            e.targets += 1;
        }
    }

    /// Removes and passes to `done` every target of entry `i` whose needs are all in `avail`
    /// (every target when `all`), keeping the others in their order.
    #[inline]
    pub fn take_ready(&mut self, i: u16, avail: SectorMask, all: bool, mut done: impl FnMut(Target)) {
        let e = &mut self.entries[i as usize];
        let slots = &mut self.targets[i as usize * self.per..][..e.targets as usize];
        let mut kept = 0;
        for k in 0..slots.len() {
            let t = slots[k];
            if all || t.need & !avail == 0 {
                done(t);
            } else {
                slots[kept] = t;
                kept += 1;
            }
        }
        e.targets = kept as u32;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocate_merge_and_release() {
        let mut f = MshrFile::new(2, 2);
        let a = f.allocate(10, Some(0)).unwrap();
        let b = f.allocate(11, None).unwrap();
        assert!(f.allocate(12, Some(1)).is_none());
        assert_eq!(f.find_bypass(11), Some(b));
        assert_eq!(f.find_bypass(10), None);
        f.add_target(a, Target { request: 1, need: 0b01 });
        f.add_target(a, Target { request: 2, need: 0b10 });
        assert!(!f.target_room(a));
        let mut got = vec![];
        f.take_ready(a, 0b10, false, |t| got.push(t.request));
        assert_eq!(got, [2]);
        f.take_ready(a, 0, true, |t| got.push(t.request));
        assert_eq!(got, [2, 1]);
        let g = f.get(a).generation;
        assert_eq!(f.lookup(a as u64, g), Some(a));
        f.release(a);
        assert_eq!(f.lookup(a as u64, g), None);
        f.release(b);
        assert_eq!(f.find_bypass(11), None);
        assert_eq!(f.active(), 0);
    }
}
