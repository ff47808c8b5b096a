//! Replacement, write-back, sectors and the non-temporal hint, observed from below: which lines
//! the cache writes back, which it fetches, and what it still holds.
//!
//! The cache has one set of four 64 B ways, so every line competes for the same ways. Lines are
//! named by their number: line `n` is address `64 n`. Full-line writes allocate without a fetch
//! and leave the line dirty, so an eviction shows up downstream as a write-back.

#[path = "cache_harness.rs"]
mod harness;

use harness::*;
use mem_model::MemRequest;
use mem_model::cache::CacheConfig;
use sim_core::Tick;

const L: u64 = 64;

/// Runs `reqs`, one every 10 ns, through `cfg`.
fn run(cfg: &CacheConfig, reqs: &[MemRequest]) -> Single {
    let timed: Vec<(Tick, MemRequest)> =
        reqs.iter().enumerate().map(|(i, &r)| (i as u64 * 10 * NS, r)).collect();
    Single::new(cfg, vec![script(&timed)], 5, 4).run()
}

#[test]
fn lru_evicts_the_least_recently_used_line() {
    let reqs = [
        wr(0, 64),
        wr(L, 64),
        wr(2 * L, 64),
        wr(3 * L, 64),
        // Use order now: 0, 2, 1 (line 3 last used before them).
        rd(0, 64),
        rd(2 * L, 64),
        rd(L, 64),
        wr(4 * L, 64), // evicts line 3
        wr(5 * L, 64), // evicts line 0
    ];
    let s = run(&one_set_with(r#"replacement = "lru""#), &reqs);
    assert_eq!(s.probe().writes(), vec![(3 * L, 64), (0, 64)]);
    assert!(s.probe().reads().is_empty());
    for line in [1, 2, 4, 5] {
        assert!(s.cache().holds(line * L, 64), "line {line}");
    }
    assert!(!s.cache().holds(0, 64) && !s.cache().holds(3 * L, 64));
    let c = s.cache().counters();
    assert_eq!((c.evictions, c.writebacks, c.hits, c.misses), (2, 2, 3, 6));
}

#[test]
fn srrip_evicts_a_line_used_once_where_lru_evicts_an_old_reused_one() {
    // Lines 0-2 are written and read again (reused); line 3 arrives after them and is never
    // reused. LRU evicts the oldest use (line 0); SRRIP predicts line 3 is re-referenced last.
    let reqs = [
        wr(0, 64),
        wr(L, 64),
        wr(2 * L, 64),
        rd(0, 64),
        rd(L, 64),
        rd(2 * L, 64),
        wr(3 * L, 64),
        wr(4 * L, 64),
    ];
    let lru = run(&one_set_with(r#"replacement = "lru""#), &reqs);
    let srrip = run(&one_set_with(r#"replacement = "srrip""#), &reqs);
    assert_eq!(lru.probe().writes(), vec![(0, 64)]);
    assert_eq!(srrip.probe().writes(), vec![(3 * L, 64)]);
    assert!(srrip.cache().holds(0, 64) && !srrip.cache().holds(3 * L, 64));
}

#[test]
fn random_replacement_is_deterministic_and_evicts_an_unlocked_line() {
    let reqs: Vec<MemRequest> = (0..12).map(|i| wr(i * L, 64)).collect();
    let a = run(&one_set_with(r#"replacement = "random""#), &reqs);
    let b = run(&one_set_with(r#"replacement = "random""#), &reqs);
    assert_eq!(a.probe().writes(), b.probe().writes(), "same seed, same victims");
    assert_eq!(a.probe().writes().len(), 8);
    let lru = run(&one_set_with(r#"replacement = "lru""#), &reqs);
    assert_ne!(a.probe().writes(), lru.probe().writes(), "random is not LRU in disguise");
}

#[test]
fn a_dirty_line_is_written_back_exactly_once_and_a_clean_one_not_at_all() {
    let reqs = [
        wr(8, 8), // partial: fetches line 0, then dirties it
        rd(L, 64),
        rd(2 * L, 64),
        rd(3 * L, 64),
        rd(4 * L, 64), // evicts line 0: one write-back
        rd(5 * L, 64), // evicts line 1, clean: nothing written
        rd(6 * L, 64),
    ];
    let s = run(&one_set_with(""), &reqs);
    assert_eq!(s.probe().writes(), vec![(0, 64)]);
    let c = s.cache().counters();
    assert_eq!((c.evictions, c.writebacks), (3, 1));
    // The write-back follows the line's fetch: the order downstream is read 0, ..., write 0.
    let order: Vec<(bool, u64)> = s.probe().seen.iter().map(|(_, r)| (r.write, r.addr)).collect();
    assert_eq!(
        order[..6],
        [(false, 0), (false, L), (false, 2 * L), (false, 3 * L), (true, 0), (false, 4 * L)]
    );
}

#[test]
fn sectored_lines_fetch_only_the_sectors_touched() {
    let cfg = one_set_with(r#"sector = "32B""#);
    let reqs = [
        rd(0, 32),     // miss: fetches sector 0 only
        rd(32, 32),    // the line is present, sector 1 is not: a sector miss
        rd(0, 64),     // both sectors valid: a hit
        wr(L, 32),     // covers sector 0 of line 1: allocated without a fetch
        wr(L + 36, 8), // part of sector 1, absent: fetched
        rd(L + 8, 8),  // hit in the written sector
        rd(2 * L, 64), // a full-line read fetches both sectors at once
    ];
    let s = run(&cfg, &reqs);
    assert_eq!(s.probe().reads(), vec![(0, 32), (32, 32), (L + 32, 32), (2 * L, 64)]);
    let c = s.cache().counters();
    assert_eq!((c.misses, c.sector_misses, c.hits), (3, 2, 2));
    assert!(s.cache().holds(0, 64) && s.cache().holds(L, 64));
}

#[test]
fn a_sectored_write_back_spans_only_the_dirty_sectors() {
    let cfg = one_set_with(r#"sector = "16B""#);
    let mut reqs = vec![wr(16, 16), wr(L, 64), wr(2 * L, 64), wr(3 * L, 64), wr(4 * L, 64)];
    reqs.push(rd(0, 4));
    let s = run(&cfg, &reqs);
    // Line 0 had only sector 1 dirty: 16 bytes at 16 go down.
    assert_eq!(s.probe().writes()[0], (16, 16));
}

#[test]
fn non_temporal_bypass_allocates_nothing() {
    let cfg = one_set_with(r#"non_temporal = "bypass""#);
    let reqs = [
        nt(rd(0, 64)),     // miss: fetched and relayed, not kept
        nt(rd(0, 64)),     // so it misses again
        nt(wr(L + 8, 8)),  // a write miss is forwarded as is
        rd(2 * L, 64),     // an ordinary miss allocates
        nt(rd(2 * L, 64)), // and a non-temporal read hits it
    ];
    let s = run(&cfg, &reqs);
    assert_eq!(s.probe().reads(), vec![(0, 64), (0, 64), (2 * L, 64)]);
    assert_eq!(s.probe().writes(), vec![(L + 8, 8)]);
    assert!(!s.cache().holds(0, 64) && !s.cache().holds(L + 8, 8) && s.cache().holds(2 * L, 64));
    let c = s.cache().counters();
    assert_eq!((c.bypasses, c.hits, c.misses), (3, 1, 1));
    let d = s.driver(0);
    assert_eq!(d.answer(0).latency(), (1 + 4 + 1 + 1 + 5 + 1) * NS, "relayed with the fill latency");
    assert_eq!(d.answer(2).latency(), (1 + 4 + 1) * NS, "a forwarded write is answered at once");
}

#[test]
fn non_temporal_reads_of_one_line_share_one_bypass_fetch() {
    let cfg = one_set_with(r#"non_temporal = "bypass""#);
    let s =
        Single::new(&cfg, vec![script(&[(0, nt(rd(0, 8))), (0, nt(rd(8, 8))), (0, nt(rd(0, 16)))])], 50, 4)
            .run();
    assert_eq!(s.probe().reads(), vec![(0, 64)]);
    assert_eq!(s.driver(0).answers.len(), 3);
    assert_eq!(s.cache().counters().merged, 2);
}

#[test]
fn non_temporal_insert_lru_makes_the_line_the_next_victim() {
    // Lines 0-2 are ordinary and dirty; line 3 is read non-temporally, then line 4 needs a way.
    let cfg = one_set_with(r#"non_temporal = "insert_lru""#);
    let base = [wr(0, 64), wr(L, 64), wr(2 * L, 64)];
    let mut reqs = base.to_vec();
    reqs.extend([nt(rd(3 * L, 64)), wr(4 * L, 64)]);
    let s = run(&cfg, &reqs);
    assert!(s.probe().writes().is_empty(), "line 3 (clean) was the victim, no dirty line left");
    assert!(!s.cache().holds(3 * L, 64) && s.cache().holds(0, 64));
    // The same without the hint evicts the least recently used line, 0.
    let mut plain = base.to_vec();
    plain.extend([rd(3 * L, 64), wr(4 * L, 64)]);
    let s = run(&cfg, &plain);
    assert_eq!(s.probe().writes(), vec![(0, 64)]);
    assert!(s.cache().holds(3 * L, 64));
}
