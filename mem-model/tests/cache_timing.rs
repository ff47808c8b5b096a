//! Cache timing: hit and miss latency, lookup bandwidth, write answers, split requests.
//!
//! All clocks are 1 GHz and all links one cycle; the probe memory answers 100 cycles after a
//! request arrives. A hit therefore takes link + hit latency + link, and a miss adds the
//! downstream round trip (link + 100 + link) to that.

#[path = "cache_harness.rs"]
mod harness;

use harness::*;
use sim_core::{Clock, Frequency};

#[test]
fn a_hit_costs_the_hit_latency_and_a_miss_adds_the_downstream_round_trip() {
    let s = Single::new(&one_set(), vec![script(&[(0, rd(0, 64)), (200 * NS, rd(0, 64))])], 100, 4).run();
    let d = s.driver(0);
    let (miss, hit) = (d.answer(0), d.answer(1));
    assert_eq!(hit.latency(), (1 + 4 + 1) * NS, "link + 4-cycle hit + link");
    assert_eq!(
        miss.latency(),
        (1 + 4 + 1) * NS + (1 + 100 + 1) * NS,
        "the hit's cost plus the round trip below"
    );
    assert_eq!(s.probe().reads(), vec![(0, 64)]);
    assert_eq!((s.stat("hits"), s.stat("misses")), (1, 1));
    let h = s.e.stats().lookup_histogram("l1.hit_latency").unwrap();
    assert_eq!((h.len(), h.max()), (1, 4));
    let m = s.e.stats().lookup_histogram("l1.miss_latency").unwrap();
    assert_eq!((m.len(), m.max()), (1, 4 + 102));
}

#[test]
fn lookups_per_cycle_bound_the_tag_bandwidth() {
    // Four full-line writes arrive together: they need no fetch and are answered after the hit
    // latency, one cycle apart with one lookup per cycle, two by two with two.
    let reqs: Vec<_> = (0..4).map(|i| (0, wr(i * 64, 64))).collect();
    for (lookups, want) in [(1, [6, 7, 8, 9]), (2, [6, 6, 7, 7])] {
        let mut cfg = one_set();
        cfg.lookups_per_cycle = lookups;
        let s = Single::new(&cfg, vec![script(&reqs)], 100, 8).run();
        let at: Vec<u64> = (0..4).map(|i| s.driver(0).answer(i).at / NS).collect();
        assert_eq!(at, want, "{lookups} lookups per cycle");
        assert!(s.probe().seen.is_empty(), "full-line writes fetch nothing");
    }
}

#[test]
fn writes_are_answered_after_the_tag_access_even_when_they_miss() {
    // A partial write to an absent line: the line is fetched (write-allocate) but the write is
    // answered after the hit latency; a read of the line meanwhile waits for the fill.
    let s = Single::new(&one_set(), vec![script(&[(0, wr(8, 8)), (50 * NS, rd(0, 64))])], 100, 4).run();
    let d = s.driver(0);
    assert_eq!(d.answer(0).latency(), 6 * NS);
    // The fill reaches the cache at 1 + 1 + 100 + 1 = 103 ns; the read is answered 4 cycles later.
    assert_eq!(d.answer(1).at, (103 + 4 + 1) * NS);
    assert_eq!(s.probe().reads(), vec![(0, 64)], "one fetch, shared by the write and the read");
    assert!(s.probe().writes().is_empty());
    assert_eq!((s.stat("misses"), s.stat("merged")), (1, 1));
    assert!(s.cache().is_dirty(0));
}

#[test]
fn a_request_crossing_lines_is_answered_once_after_its_last_line() {
    // 96 bytes from 32: lines 0 and 1, looked up in cycles 1 and 2, fetched separately.
    let reqs = [(0, rd(32, 96)), (300 * NS, rd(64, 32))];
    let s = Single::new(&one_set(), vec![script(&reqs)], 100, 4).run();
    let d = s.driver(0);
    assert_eq!(d.answers.len(), 2);
    // Line 1's fill arrives at 2 + 1 + 100 + 1 = 104 ns: answered 4 cycles later, plus the link.
    assert_eq!(d.answer(0).at, (104 + 4 + 1) * NS);
    assert_eq!(d.answer(0).addr, 32, "the answer carries the original request");
    assert_eq!(s.probe().reads(), vec![(0, 64), (64, 64)]);
    assert_eq!(d.answer(1).latency(), 6 * NS, "the second line stayed");
    assert_eq!((s.stat("misses"), s.stat("hits"), s.stat("reads")), (2, 1, 2));
}

#[test]
fn an_idle_cache_schedules_nothing() {
    // One miss, then silence: the run ends with the last answer, having processed only a
    // handful of events (no per-cycle ticking while waiting 100 cycles for memory).
    let mut s = Single::new(&one_set(), vec![script(&[(0, rd(0, 64))])], 100, 4);
    let summary = s.e.run(None).unwrap();
    assert_eq!(summary.end_tick, 108 * NS);
    assert!(summary.events < 16, "{} events for one miss", summary.events);
}

#[test]
fn a_cache_in_a_faster_clock_counts_its_own_cycles_and_starts_work_on_its_edges() {
    // A 3 GHz cache with a 3-cycle (1 ns) hit behind 1 GHz links.
    let mut cfg = one_set();
    cfg.hit_latency_cycles = 3;
    let ghz3 = Clock::new(Frequency::from_hz(3_000_000_000)).unwrap();
    let reqs = [(0, rd(0, 64)), (200 * NS, rd(0, 64)), (300 * NS + 500, rd(0, 64))];
    let s = Single::clocked(&cfg, vec![script(&reqs)], 100, 4, ghz3).run();
    let d = s.driver(0);
    assert_eq!(d.answer(1).latency(), (1 + 1 + 1) * NS);
    assert_eq!(d.answer(0).latency(), (1 + 1 + 1) * NS + (1 + 100 + 1) * NS);
    // Sent at 300.5 ns, in at 301.5 ns: the lookup waits for the edge at 301.667 ns (cycle 905),
    // and the hit is due at cycle 908, 302.667 ns.
    assert_eq!(d.answer(2).at, 302_666 + NS);
}
