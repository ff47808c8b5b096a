//! MSHRs: merging, target limits, back-pressure when they run out, and per-port bookkeeping.

#[path = "cache_harness.rs"]
mod harness;

use harness::*;
use mem_model::MemRequest;
use sim_core::Tick;

#[test]
fn misses_to_one_line_merge_into_one_fetch() {
    let n = 6;
    let reqs: Vec<(Tick, MemRequest)> = (0..n).map(|i| (0, rd(i * 8, 8))).collect();
    let s = Single::new(&one_set(), vec![script(&reqs)], 100, 8).run();
    assert_eq!(s.probe().reads(), vec![(0, 64)], "exactly one downstream read");
    let d = s.driver(0);
    assert_eq!(d.answers.len(), n as usize);
    // All wait for the same fill (at 103 ns) and are answered together.
    for i in 0..n {
        assert_eq!(d.answer(i).at, (103 + 4 + 1) * NS, "request {i}");
    }
    let c = s.cache().counters();
    assert_eq!((c.misses, c.merged, c.fills), (1, n - 1, 1));
}

#[test]
fn a_full_mshr_holds_further_misses_until_its_fill() {
    // Two targets per MSHR: the third request to the line waits for the fill, then hits.
    let mut cfg = one_set();
    cfg.mshr_targets = 2;
    let reqs: Vec<(Tick, MemRequest)> = (0..5).map(|i| (0, rd(i * 8, 8))).collect();
    let s = Single::new(&cfg, vec![script(&reqs)], 100, 8).run();
    assert_eq!(s.probe().reads(), vec![(0, 64)]);
    let d = s.driver(0);
    let at: Vec<Tick> = (0..5).map(|i| d.answer(i).at / NS).collect();
    // The fill arrives at 103: the two targets are answered at 108; the held request is looked up
    // in the fill's cycle and hits (108), then one per cycle.
    assert_eq!(at, [108, 108, 108, 109, 110]);
    let c = s.cache().counters();
    assert_eq!((c.misses, c.merged, c.hits, c.mshr_full_stalls), (1, 1, 3, 1));
}

#[test]
fn more_misses_than_mshrs_are_held_back_and_all_answered() {
    let cfg = config(
        r#"size = "4KiB"
           associativity = 4
           line = "64B"
           mshrs = 4
           hit_latency_cycles = 2"#,
    );
    let n = 48;
    let reqs: Vec<(Tick, MemRequest)> = (0..n).map(|i| (0, rd(i * 64, 64))).collect();
    let s = Single::new(&cfg, vec![script(&reqs)], 50, 2).run();
    let p = s.probe();
    assert_eq!(p.reads().len(), n as usize);
    assert_eq!(p.max_reads_in_flight, 4, "never more reads below than MSHRs");
    let d = s.driver(0);
    for i in 0..n {
        d.answer(i);
    }
    assert!(d.refusals > 0, "the requester felt the back-pressure");
    assert!(s.cache().counters().mshr_full_stalls > 0);
    assert_eq!(s.cache().mshrs_in_use(), 0);
}

#[test]
fn sector_misses_in_flight_never_exceed_the_mshr_count_either() {
    // One MSHR: a read of sector 1 while sector 0 is being fetched would need a second read
    // below; with one MSHR it waits.
    let cfg = config(
        r#"size = "256B"
           associativity = 4
           line = "64B"
           sector = "16B"
           mshrs = 1
           hit_latency_cycles = 1"#,
    );
    let reqs: Vec<(Tick, MemRequest)> = (0..4).map(|i| (0, rd(i * 16, 16))).collect();
    let s = Single::new(&cfg, vec![script(&reqs)], 20, 8).run();
    assert_eq!(s.probe().max_reads_in_flight, 1);
    assert_eq!(s.probe().reads(), vec![(0, 16), (16, 16), (32, 16), (48, 16)]);
    assert_eq!(s.driver(0).answers.len(), 4);
}

#[test]
fn ids_that_collide_across_ports_are_answered_on_their_own_port() {
    // Both ports use ids 0..8; port 0 reads lines 0..8, port 1 lines 64..72, interleaved with
    // hits so answers come back out of order.
    let mk = |base: u64| -> Vec<(Tick, MemRequest)> {
        let mut v = vec![];
        for i in 0..8u64 {
            v.push((i * 3 * NS, rd(base + (i % 3) * 64, 64)));
        }
        script(&v)
    };
    let cfg = config(
        r#"size = "8KiB"
           associativity = 4
           line = "64B"
           mshrs = 8
           hit_latency_cycles = 3
           lookups_per_cycle = 2"#,
    );
    let s = Single::new(&cfg, vec![mk(0), mk(64 * 64)], 30, 4).run();
    for (port, base) in [(0, 0), (1, 64 * 64)] {
        let d = s.driver(port);
        assert_eq!(d.answers.len(), 8);
        for i in 0..8u64 {
            assert_eq!(d.answer(i).addr, base + (i % 3) * 64, "port {port} id {i}");
        }
    }
    assert_eq!(s.probe().reads().len(), 6, "three lines per port, fetched once each");
}

#[test]
fn a_one_slot_response_link_slows_the_cache_without_losing_answers() {
    // Links of capacity 1: answers wait in the cache for the link, misses and hits interleave.
    let reqs: Vec<(Tick, MemRequest)> = (0..64).map(|i| (0, rd((i % 8) * 64, 64))).collect();
    let s = Single::new(&one_set(), vec![script(&reqs)], 10, 1).run();
    assert_eq!(s.driver(0).answers.len(), 64);
}

#[test]
fn a_request_larger_than_the_cache_with_one_mshr_completes() {
    // 1 KiB read and write through a 256 B cache with one MSHR: 16 line accesses each, every
    // one evicting an earlier line of the same request.
    let mut cfg = one_set();
    cfg.mshrs = 1;
    let reqs = [(0, rd(32, 1024)), (0, wr(4096 + 8, 1024)), (0, rd(0, 0))];
    let s = Single::new(&cfg, vec![script(&reqs)], 10, 2).run();
    let d = s.driver(0);
    assert_eq!(d.answers.len(), 3);
    assert_eq!(d.answer(0).addr, 32);
    assert_eq!(s.probe().reads().len(), 17 + 2, "17 lines read, plus the write's two partial lines");
    assert_eq!(s.probe().max_reads_in_flight, 1);
    assert_eq!(s.cache().counters().misses, 17 + 17);
}

#[test]
fn zero_hit_latency_and_zero_byte_requests_are_answered() {
    let mut cfg = one_set();
    cfg.hit_latency_cycles = 0;
    let reqs = [(0, rd(0, 64)), (50 * NS, rd(0, 64)), (60 * NS, wr(64, 0))];
    let s = Single::new(&cfg, vec![script(&reqs)], 10, 2).run();
    let d = s.driver(0);
    assert_eq!(d.answer(1).latency(), 2 * NS, "two link hops, nothing else");
    assert_eq!(d.answer(2).latency(), 2 * NS);
    assert_eq!(d.answer(0).latency(), (2 + 12) * NS);
    assert!(!s.cache().holds(64, 1), "a zero-byte write touches nothing");
}

#[test]
fn ports_share_the_lookups_round_robin() {
    // Two ports, each with eight full-line writes at once, one lookup per cycle: they alternate.
    let mk = |base: u64| script(&(0..8u64).map(|i| (0, wr(base + (i % 2) * 64, 64))).collect::<Vec<_>>());
    let s = Single::new(&one_set(), vec![mk(0), mk(128)], 10, 8).run();
    let last = |p: usize| s.driver(p).answers.iter().map(|a| a.at).max().unwrap();
    assert_eq!(last(0).abs_diff(last(1)), NS, "neither port starves the other");
    assert_eq!(last(0).max(last(1)), (1 + 15 + 4 + 1) * NS, "sixteen lookups in sixteen cycles");
}

#[test]
fn a_miss_to_a_set_whose_ways_all_wait_for_fills_goes_without_allocating() {
    // Direct mapped, one set: A's fill holds the only way. B, C and D used to wait in the port
    // for that fill (and everything behind them with it); now B and C fetch for themselves
    // without allocating, D writes through, and A alone is cached afterwards.
    let cfg = config(
        r#"size = "64B"
           associativity = 1
           line = "64B"
           mshrs = 4
           hit_latency_cycles = 4"#,
    );
    let (a, b, c, d) = (0, 64, 128, 192);
    let reqs = [
        (0, rd(a, 64)),
        (0, rd(b, 64)),
        (0, rd(c, 8)),
        (0, wr(d, 8)),
        (300 * NS, rd(a, 8)),
        (300 * NS, rd(b, 64)),
    ];
    let s = Single::new(&cfg, vec![script(&reqs)], 100, 8).run();
    let reads: Vec<u64> = s.probe().reads().iter().map(|r| r.0).collect();
    assert_eq!(reads, [a, b, c, b], "B is fetched again: it was never installed");
    assert_eq!(s.probe().writes(), vec![(d, 8)]);
    let drv = s.driver(0);
    let at: Vec<Tick> = (0..6).map(|i| drv.answer(i).at / NS).collect();
    // Lookups one per cycle from 0: the three reads' fills arrive 100 ns after their lookups.
    assert_eq!(&at[..3], [108, 109, 110], "no read waited for another's fill");
    assert!(at[3] < 10, "the write is done at its lookup: {at:?}");
    assert!(at[4] < 310 && at[5] > 400, "A hits, B misses again: {at:?}");
    let k = s.cache().counters();
    assert_eq!((k.misses, k.set_busy_misses, k.hits, k.bypasses), (5, 3, 1, 0));
}

#[test]
fn a_requester_that_takes_no_answers_is_held_at_the_answer_cap() {
    // A warm-up miss, then far more hits to its line than the cache may leave unanswered, from a
    // requester that takes no answers between 500 ns and 5 us.
    let cfg = one_set();
    let answers_cap =
        cfg.mshrs * cfg.mshr_targets + cfg.lookups_per_cycle * (cfg.hit_latency_cycles as u32 + 2);
    let hits = 3 * answers_cap as u64;
    let mut reqs = vec![(0, rd(0, 8))];
    reqs.extend((0..hits).map(|_| (1000 * NS, rd(0, 8))));
    let link = 4;
    let mut s = Single::new(&cfg, vec![script(&reqs)], 100, link);
    let d = s.drivers[0];
    if let Some(harness::Node::Driver(drv)) = s.e.component_mut(d) {
        drv.deaf = (500 * NS, 5000 * NS);
    }
    let s = s.run();
    let d = s.driver(0);
    assert_eq!(d.answers.len() as u64, hits + 1, "every request answered in the end");
    // Before 5 us the cache took the cap's worth of hits plus the answers that left it (the
    // response link's `link` slots), and the request link holds `link` more: the rest were
    // refused. The same count as when the cache kept every answer until its due tick (checked
    // against that code); by 5 us every answer sent ahead is due, so this does not tell whether
    // one not yet due counts against the cap.
    let sent_while_deaf = d.sent_at.iter().filter(|&&t| t < 5000 * NS).count() as u64;
    assert_eq!(sent_while_deaf, 1 + u64::from(answers_cap) + 2 * u64::from(link));
    assert!(d.refusals > 0);
}
