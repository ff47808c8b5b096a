//! Finer properties of the caches and the crossbar that their docs, the README and DESIGN.md
//! section 3 state, checked through the public API: sector-exact fetches and write-backs, the
//! lookup edge misses leave at, replacement state on stalls, banks behind the XOR hash, the
//! non-temporal hint, back-pressure, and statistics that add up. Each test names the doc it
//! holds the model to.

#[path = "cache_harness.rs"]
mod harness;

use harness::*;
use mem_model::MemRequest;
use mem_model::cache::{BankHash, Cache, CacheConfig, CacheLinks, CrossbarConfig, Topology};
use sim_core::{Clock, ComponentId, Engine, Frequency, SeedTree, Tick};

const L: u64 = 64;

/// Runs `reqs`, one every 10 ns, through `cfg` over a 5-cycle memory.
fn spaced(cfg: &CacheConfig, reqs: &[MemRequest]) -> Single {
    let timed: Vec<(Tick, MemRequest)> =
        reqs.iter().enumerate().map(|(i, &r)| (i as u64 * 10 * NS, r)).collect();
    Single::new(cfg, vec![script(&timed)], 5, 4).run()
}

/// One cache between drivers and a probe, with separate capacities for the upstream links and
/// the downstream links, and optionally interleaved as one of `banks` banks.
struct Rig {
    e: Engine<Node>,
    drivers: Vec<ComponentId>,
    cache: ComponentId,
    probe: ComponentId,
}

fn rig(
    cfg: &CacheConfig,
    scripts: Vec<Vec<(Tick, MemRequest)>>,
    mem_latency: u64,
    up_cap: u32,
    down_cap: u32,
    interleave: Option<(u32, u64)>,
) -> Rig {
    let mut e: Engine<Node> = Engine::new();
    let drivers: Vec<ComponentId> = scripts.iter().map(|_| e.reserve()).collect();
    let (cache, probe) = (e.reserve(), e.reserve());
    let mut ups = vec![];
    for (i, &d) in drivers.iter().enumerate() {
        let req = e.connect(d, cache, spec(&format!("d{i}.req"), up_cap)).unwrap();
        let resp = e.connect(cache, d, spec(&format!("d{i}.resp"), up_cap)).unwrap();
        ups.push((req, resp));
    }
    let down_req = e.connect(cache, probe, spec("down.req", down_cap)).unwrap();
    let down_resp = e.connect(probe, cache, spec("down.resp", down_cap)).unwrap();
    let links = CacheLinks { upstream: &ups, down_req, down_resp };
    let mut c = Cache::new("l1", cfg, clock(), links, &SeedTree::new(1), e.stats_mut()).unwrap();
    if let Some((banks, run)) = interleave {
        c = c.interleaved(banks, run);
    }
    for ((&d, script), &(req, resp)) in drivers.iter().zip(scripts).zip(&ups) {
        e.install(d, Node::Driver(Driver::new(&format!("cpu{}", d.index()), req, resp, script))).unwrap();
    }
    e.install(cache, Node::Cache(c)).unwrap();
    e.install(probe, Node::Probe(Probe::new("mem", down_req, down_resp, mem_latency))).unwrap();
    let mut r = Rig { e, drivers, cache, probe };
    r.e.run(None).unwrap_or_else(|err| panic!("{err}"));
    r
}

impl Rig {
    fn driver(&self, i: usize) -> &Driver {
        self.e.driver(self.drivers[i])
    }
    fn cache(&self) -> &Cache<Msg> {
        self.e.cache(self.cache)
    }
    fn probe(&self) -> &Probe {
        self.e.probe(self.probe)
    }
}

// ---------------------------------------------------------------------------------------------
// Timing

/// component.rs module doc: "work that arrives between edges starts at the next edge". A miss
/// looked up at an edge cannot leave for the level below before that edge.
#[test]
fn a_miss_arriving_between_edges_goes_down_at_the_lookup_edge_not_before() {
    let mut cfg = one_set();
    cfg.hit_latency_cycles = 3;
    let ghz3 = Clock::new(Frequency::from_hz(3_000_000_000)).unwrap();
    // Sent at 300.5 ns, in at 301.5 ns: the lookup is at the edge of cycle 905, 301.666 ns.
    let s = Single::clocked(&cfg, vec![script(&[(300 * NS + 500, rd(0, 64))])], 100, 4, ghz3).run();
    let edge = ghz3.edge(905);
    assert_eq!(edge, 301_666);
    let (at, _) = s.probe().seen[0];
    // The one-cycle 1 GHz link adds 1 ns to the departure.
    assert!(at >= edge + NS, "the miss reached memory at {at} ps: it left before the lookup edge {edge}");
}

/// component.rs module doc: lookups_per_cycle bounds lookups over all ports; a hit is ready
/// hit_latency cycles after its lookup. With two lookups per cycle and three ports of hits at
/// once, two are answered in the first cycle and the third a cycle later.
#[test]
fn lookups_per_cycle_are_shared_by_all_ports() {
    let mut cfg = one_set();
    cfg.lookups_per_cycle = 2;
    // Each port first writes a whole line (no fetch), then reads it at 100 ns.
    let mk = |line: u64| script(&[(0, wr(line * L, 64)), (100 * NS, rd(line * L, 8))]);
    let s = Single::new(&cfg, vec![mk(0), mk(1), mk(2)], 10, 4).run();
    let mut at: Vec<Tick> = (0..3).map(|p| s.driver(p).answer(1).at / NS).collect();
    at.sort_unstable();
    assert_eq!(at, [106, 106, 107]);
}

// ---------------------------------------------------------------------------------------------
// Replacement

/// config.rs NonTemporalPolicy::InsertLru: "hits do not promote the line". A non-temporal read
/// hit leaves the line where it was in the LRU order.
#[test]
fn a_non_temporal_hit_does_not_promote_under_insert_lru() {
    let cfg = one_set_with(r#"non_temporal = "insert_lru""#);
    let base = [wr(0, 64), wr(L, 64), wr(2 * L, 64), wr(3 * L, 64)];
    let mut reqs = base.to_vec();
    reqs.extend([nt(rd(0, 64)), wr(4 * L, 64)]);
    let s = spaced(&cfg, &reqs);
    assert_eq!(s.probe().writes(), vec![(0, 64)], "line 0 stayed least recently used");
    // Without the hint the hit promotes line 0 and line 1 goes.
    let mut plain = base.to_vec();
    plain.extend([rd(0, 64), wr(4 * L, 64)]);
    let s = spaced(&cfg, &plain);
    assert_eq!(s.probe().writes(), vec![(L, 64)]);
}

/// config.rs NonTemporalPolicy::Bypass: "Hits are served from the cache (without promoting the
/// line)".
#[test]
fn a_non_temporal_hit_does_not_promote_under_bypass() {
    let cfg = one_set_with(r#"non_temporal = "bypass""#);
    let reqs = [wr(0, 64), wr(L, 64), wr(2 * L, 64), wr(3 * L, 64), nt(rd(0, 8)), wr(4 * L, 64)];
    let s = spaced(&cfg, &reqs);
    assert_eq!(s.probe().writes(), vec![(0, 64)]);
    assert_eq!(s.cache().counters().hits, 1);
}

/// config.rs NonTemporalPolicy::InsertLru under SRRIP: a non-temporal miss is the next victim
/// even though lines inserted before it were never reused.
#[test]
fn a_non_temporal_insert_is_the_next_srrip_victim() {
    let cfg = one_set_with(
        r#"replacement = "srrip"
                      non_temporal = "insert_lru""#,
    );
    let reqs = [wr(0, 64), wr(L, 64), wr(2 * L, 64), nt(wr(3 * L, 64)), wr(4 * L, 64)];
    let s = spaced(&cfg, &reqs);
    assert_eq!(s.probe().writes(), vec![(3 * L, 64)]);
}

/// LRU victim order with writes as uses: a write hit promotes the line like a read.
#[test]
fn a_write_hit_promotes_the_line_under_lru() {
    let reqs = [wr(0, 64), wr(L, 64), wr(2 * L, 64), wr(3 * L, 64), wr(0, 8), wr(4 * L, 64), wr(5 * L, 64)];
    let s = spaced(&one_set_with(""), &reqs);
    assert_eq!(s.probe().writes(), vec![(L, 64), (2 * L, 64)]);
}

// ---------------------------------------------------------------------------------------------
// Sectors and merging

/// component.rs: "a read that needs sectors the MSHR is not fetching adds one more downstream
/// read to it"; a read of sectors already pending merges without a read.
#[test]
fn reads_of_other_sectors_of_a_line_in_flight_add_one_read_each() {
    let cfg = one_set_with(r#"sector = "16B""#);
    let reqs = [(0, rd(0, 16)), (0, rd(16, 16)), (0, rd(0, 32)), (0, rd(48, 16))];
    let s = Single::new(&cfg, vec![script(&reqs)], 100, 8).run();
    assert_eq!(s.probe().reads(), vec![(0, 16), (16, 16), (48, 16)]);
    let c = s.cache().counters();
    assert_eq!((c.misses, c.sector_misses, c.merged, c.fills), (1, 2, 1, 3));
    assert_eq!(s.cache().mshrs_in_use(), 0);
    // Lookups in cycles 1..4; each read's fill is back 102 cycles after its lookup.
    let at: Vec<Tick> = (0..4).map(|i| s.driver(0).answer(i).at / NS).collect();
    assert_eq!(at, [108, 109, 109, 111]);
}

/// component.rs: "a write miss fetches only the sectors it writes partially". A write whose
/// first and last sectors are partial and middle sectors whole must not fetch the middle ones.
#[test]
fn a_write_miss_fetches_only_its_partial_sectors() {
    let cfg = one_set_with(r#"sector = "16B""#);
    // Bytes 8..56: sector 0 partial, sectors 1 and 2 whole, sector 3 partial.
    let s = spaced(&cfg, &[wr(8, 48)]);
    let fetched: u64 = s.probe().reads().iter().map(|&(_, b)| u64::from(b)).sum();
    assert_eq!(fetched, 32, "sectors 0 and 3 only, got {:?}", s.probe().reads());
}

/// The same for a write to a present line that lacks its first and last sectors.
#[test]
fn a_write_to_a_present_line_fetches_only_its_partial_sectors() {
    let cfg = one_set_with(r#"sector = "16B""#);
    // Line 0 present with sector 1 valid, then a write of bytes 8..56.
    let s = spaced(&cfg, &[wr(16, 16), wr(8, 48)]);
    let fetched: u64 = s.probe().reads().iter().map(|&(_, b)| u64::from(b)).sum();
    assert_eq!(fetched, 32, "sectors 0 and 3 only, got {:?}", s.probe().reads());
}

/// A read of a present line fetches only the sectors it lacks: a read of sectors 0..4 of a line
/// whose sectors 1 and 2 are valid and dirty must not read them again from below (which would
/// overwrite the dirty data).
#[test]
fn a_read_of_a_present_line_does_not_refetch_its_valid_sectors() {
    let cfg = one_set_with(r#"sector = "16B""#);
    let s = spaced(&cfg, &[wr(16, 32), rd(0, 64)]);
    let fetched: u64 = s.probe().reads().iter().map(|&(_, b)| u64::from(b)).sum();
    assert_eq!(fetched, 32, "sectors 0 and 3 only, got {:?}", s.probe().reads());
}

/// component.rs: a write to a line being filled waits in the line, is answered after the hit
/// latency, makes the line dirty, and costs no second read.
#[test]
fn a_write_to_a_line_being_filled_is_answered_at_once_and_dirties_it() {
    let reqs = [(0, rd(0, 64)), (0, wr(8, 8)), (0, rd(16, 8))];
    let s = Single::new(&one_set(), vec![script(&reqs)], 100, 8).run();
    let d = s.driver(0);
    assert_eq!(d.answer(1).at, (2 + 4 + 1) * NS, "the write, looked up in cycle 2");
    assert_eq!(d.answer(0).at, 108 * NS);
    assert_eq!(d.answer(2).at, 108 * NS, "the read after the write still waits for the fill");
    assert_eq!(s.probe().reads(), vec![(0, 64)]);
    assert!(s.cache().is_dirty(0));
    let c = s.cache().counters();
    assert_eq!((c.misses, c.merged, c.hits), (1, 2, 0));
}

// ---------------------------------------------------------------------------------------------
// Write-back

/// A dirty line evicted twice over its life is written back once per dirty residency, at its
/// own address, and a line read back clean is not written again.
#[test]
fn write_backs_happen_once_per_dirty_residency() {
    let reqs = [
        wr(0, 64),
        wr(L, 64),
        wr(2 * L, 64),
        wr(3 * L, 64),
        wr(4 * L, 64), // evicts 0 (dirty)
        rd(0, 64),     // evicts 1 (dirty), refetches 0 clean
        rd(5 * L, 64), // evicts 2 (dirty)
        rd(6 * L, 64), // evicts 3 (dirty)
        rd(7 * L, 64), // evicts 4 (dirty)
        rd(8 * L, 64), // evicts 0, clean now: no write
    ];
    let s = spaced(&one_set_with(""), &reqs);
    assert_eq!(s.probe().writes(), vec![(0, 64), (L, 64), (2 * L, 64), (3 * L, 64), (4 * L, 64)]);
    let c = s.cache().counters();
    assert_eq!((c.evictions, c.writebacks), (6, 5));
}

/// component.rs back-pressure: "the write buffer full" holds the port; writeback_full_stalls
/// counts it; nothing is lost.
#[test]
fn a_full_writeback_buffer_holds_the_port_and_loses_nothing() {
    let cfg = one_set_with("writeback_buffer = 1\nlookups_per_cycle = 2");
    // Four dirty lines, then eight more full-line writes at once: each evicts a dirty line, two
    // are looked up per cycle, and one write-back fits the buffer: the second of a cycle waits.
    let mut reqs: Vec<(Tick, MemRequest)> = (0..4).map(|i| (i * NS, wr(i * L, 64))).collect();
    reqs.extend((4..12).map(|i| (50 * NS, wr(i * L, 64))));
    let r = rig(&cfg, vec![script(&reqs)], 5, 16, 1, None);
    assert_eq!(r.driver(0).answers.len(), 12);
    let writes = r.probe().writes();
    assert_eq!(writes, (0..8).map(|i| (i * L, 64)).collect::<Vec<_>>());
    assert!(r.cache().counters().writeback_full_stalls > 0);
}

// ---------------------------------------------------------------------------------------------
// Back-pressure below

/// component.rs: "Downstream ... requests ... in order" and "Nothing is dropped": with a
/// one-slot downstream link, misses looked up in one cycle go down one per cycle, in order.
#[test]
fn a_full_downstream_link_delays_misses_in_order() {
    let mut cfg = one_set();
    cfg.lookups_per_cycle = 4;
    let reqs: Vec<(Tick, MemRequest)> = (0..4).map(|i| (0, rd(i * L, 64))).collect();
    let r = rig(&cfg, vec![script(&reqs)], 10, 8, 1, None);
    let seen: Vec<(Tick, u64)> = r.probe().seen.iter().map(|&(t, q)| (t / NS, q.addr)).collect();
    assert_eq!(seen, [(2, 0), (3, L), (4, 2 * L), (5, 3 * L)]);
    assert_eq!(r.driver(0).answers.len(), 4);
}

// ---------------------------------------------------------------------------------------------
// MSHRs

/// component.rs: no MSHR holds the port; the held miss is looked up again when a fill frees one
/// (in the fill's cycle), and the stall is counted once.
#[test]
fn a_miss_without_an_mshr_waits_for_the_fill_that_frees_one() {
    let mut cfg = one_set();
    cfg.mshrs = 1;
    let reqs = [(0, rd(0, 64)), (0, rd(L, 64)), (0, rd(2 * L, 64))];
    let s = Single::new(&cfg, vec![script(&reqs)], 100, 8).run();
    let seen: Vec<Tick> = s.probe().seen.iter().map(|&(t, _)| t / NS).collect();
    // Fills reach the cache at 103 and 205.
    assert_eq!(seen, [2, 104, 206]);
    assert_eq!(s.cache().counters().mshr_full_stalls, 2);
    let at: Vec<Tick> = (0..3).map(|i| s.driver(0).answer(i).at / NS).collect();
    assert_eq!(at, [108, 210, 312]);
}

// ---------------------------------------------------------------------------------------------
// Shared caches

/// Cache::interleaved: a bank of a shared cache indexes its sets with the bank's digit taken
/// out, so the lines a bank sees fill every set. A direct-mapped 4-set bank 1 of 4 holds lines
/// 1, 5, 9, 13 together.
#[test]
fn an_interleaved_bank_uses_every_set() {
    let cfg = config(
        r#"size = "256B"
           associativity = 1
           line = "64B"
           mshrs = 4
           hit_latency_cycles = 1"#,
    );
    let lines = [1u64, 5, 9, 13];
    let mut reqs: Vec<(Tick, MemRequest)> = lines.iter().map(|&l| (0, wr(l * L, 64))).collect();
    reqs.extend(lines.iter().map(|&l| (100 * NS, rd(l * L, 64))));
    let r = rig(&cfg, vec![script(&reqs)], 10, 8, 8, Some((4, 1)));
    assert!(r.probe().seen.is_empty(), "no eviction, no fetch: {:?}", r.probe().seen);
    assert_eq!(r.cache().counters().hits, 4);
    // Runs of 2 lines over 2 banks: bank 0 sees lines 0, 1, 4, 5: sets 0, 1, 2, 3.
    let lines = [0u64, 1, 4, 5];
    let mut reqs: Vec<(Tick, MemRequest)> = lines.iter().map(|&l| (0, wr(l * L, 64))).collect();
    reqs.extend(lines.iter().map(|&l| (100 * NS, rd(l * L, 64))));
    let r = rig(&cfg, vec![script(&reqs)], 10, 8, 8, Some((2, 2)));
    assert!(r.probe().seen.is_empty(), "no eviction, no fetch: {:?}", r.probe().seen);
}

// ---------------------------------------------------------------------------------------------
// Crossbar

fn xbar_cfg(cycles: u64, bank_queue: u32) -> CrossbarConfig {
    CrossbarConfig {
        topology: Topology::Crossbar { cycles },
        granule: None,
        hash: BankHash::None,
        max_in_flight: 64,
        bank_queue,
        port_bytes: None,
    }
}

/// xbar.rs: "round robin from a starting port that moves by one every cycle". Two ports send to
/// one bank with a one-slot queue in the same cycle: the port whose turn the cycle is goes first.
#[test]
fn the_crossbar_arbiter_rotates_with_the_cycle() {
    for (sent, first) in [(0, 1usize), (NS, 0), (2 * NS, 1), (3 * NS, 0)] {
        let scripts = vec![
            vec![(sent, MemRequest { id: 0, ..rd(0, 64) })],
            vec![(sent, MemRequest { id: 0, ..rd(4 * 64, 64) })],
        ];
        let f = Fabric::new(&xbar_cfg(3, 1), scripts, 2, 10).run();
        let reads = f.e.probe(f.banks[0]).seen.clone();
        assert_eq!(reads.len(), 2);
        let want = if first == 0 { 0 } else { 4 * 64 };
        // Arrival at cycle sent/NS + 1: its port (mod 2) goes first.
        assert_eq!(reads[0].1.addr, want, "sent at {sent}: port {first} should win");
    }
}

/// xbar.rs: a request crossing a granule boundary goes whole to the bank of its first byte.
#[test]
fn a_request_crossing_a_granule_goes_whole_to_its_first_bank() {
    let f = Fabric::new(&xbar_cfg(1, 4), vec![script(&[(0, rd(32, 64))])], 2, 5).run();
    assert_eq!(f.e.probe(f.banks[0]).reads(), vec![(32, 64)]);
    assert!(f.e.probe(f.banks[1]).reads().is_empty());
}

/// topology.rs: a crossbar of 0 cycles adds nothing to the links' latency, either way.
#[test]
fn a_zero_cycle_crossbar_adds_only_the_links_latency() {
    // Crossbar of 0 cycles: only the links' latency remains.
    let f = Fabric::new(&xbar_cfg(0, 4), vec![script(&[(0, rd(0, 64))])], 1, 10).run();
    assert_eq!(f.e.driver(f.drivers[0]).answer(0).latency(), (4 + 10) * NS);
}

// ---------------------------------------------------------------------------------------------
// Accounting

/// xorshift64*.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) % n
    }
}

/// README, cache statistics: "hits + misses + merged + bypasses + sector misses equal the line
/// accesses"; reads and writes count requests; fills count every read below; write-backs and
/// forwarded writes are every write below.
#[test]
fn statistics_add_up_on_random_traffic() {
    for (seed, nt_policy, sector) in
        [(1u64, "bypass", 16), (2, "insert_lru", 32), (3, "bypass", 64), (4, "insert_lru", 16)]
    {
        let cfg = config(&format!(
            r#"size = "512B"
               associativity = 2
               line = "64B"
               sector = "{sector}B"
               mshrs = 3
               mshr_targets = 2
               hit_latency_cycles = 2
               writeback_buffer = 2
               non_temporal = "{nt_policy}""#
        ));
        let mut r = Rng((seed * 0x9e37_79b9) | 1);
        let mut t = 0;
        let reqs: Vec<(Tick, MemRequest)> = (0..400u64)
            .map(|id| {
                t += r.below(3) * NS;
                let addr = r.below(4096);
                let bytes = 1 + r.below(150) as u32;
                let write = r.below(3) == 0;
                let non_temporal = r.below(5) == 0;
                (t, MemRequest { id, addr, bytes, write, issued: 0, non_temporal })
            })
            .collect();
        let lines: u64 =
            reqs.iter().map(|(_, q)| (q.addr + u64::from(q.bytes) - 1) / L - q.addr / L + 1).sum();
        let s = Single::new(&cfg, vec![reqs.clone()], 20, 2).run();
        let c = s.cache().counters();
        assert_eq!(s.driver(0).answers.len(), reqs.len());
        assert_eq!(c.hits + c.misses + c.merged + c.bypasses + c.sector_misses, lines, "seed {seed}: {c:?}");
        assert_eq!(c.reads + c.writes, reqs.len() as u64);
        assert_eq!(c.writes, reqs.iter().filter(|(_, q)| q.write).count() as u64);
        assert_eq!(c.fills, s.probe().reads().len() as u64);
        assert!(c.writebacks <= c.evictions);
        // Writes below: write-backs, plus bypassed and set-busy writes (one per line access).
        assert!(s.probe().writes().len() as u64 >= c.writebacks);
        // The registered statistics are the counters.
        assert_eq!(s.stat("hits"), c.hits);
        assert_eq!(s.stat("sector_misses"), c.sector_misses);
        let h = s.e.stats().lookup_histogram("l1.hit_latency").unwrap();
        let m = s.e.stats().lookup_histogram("l1.miss_latency").unwrap();
        assert_eq!(h.len() + m.len(), reqs.len() as u64, "every request in one latency histogram");
        assert_eq!(s.cache().mshrs_in_use(), 0);
    }
}

/// README: "every write, hit or miss, is recorded in hit_latency; miss_latency holds the reads
/// that waited for one".
#[test]
fn writes_go_to_the_hit_histogram_and_waiting_reads_to_the_miss_one() {
    let reqs = [(0, wr(8, 8)), (0, wr(L, 64)), (0, rd(2 * L, 8)), (200 * NS, rd(2 * L, 8))];
    let s = Single::new(&one_set(), vec![script(&reqs)], 100, 8).run();
    let h = s.e.stats().lookup_histogram("l1.hit_latency").unwrap();
    let m = s.e.stats().lookup_histogram("l1.miss_latency").unwrap();
    assert_eq!((h.len(), m.len()), (3, 1));
    assert_eq!(h.max(), 4);
}

/// component.rs "Order": a tick's requests are looked up round robin from the pointer, "as if
/// the tick's first wake-up had found them all, whatever the order in which the engine
/// delivered them", and each answer goes to its own port although ids collide. Ten ports (more
/// than the eight a cache polls, so the deferred path), wired so that the engine delivers them
/// in reverse port order.
#[test]
fn many_ports_are_served_in_port_order_and_answered_on_their_own_port() {
    let n = 10usize;
    let cfg = config(
        r#"size = "4KiB"
           associativity = 4
           line = "64B"
           mshrs = 4
           hit_latency_cycles = 4"#,
    );
    let mut e: Engine<Node> = Engine::new();
    let drivers: Vec<ComponentId> = (0..n).map(|_| e.reserve()).collect();
    let (cache, probe) = (e.reserve(), e.reserve());
    // Port p is driven by driver n - 1 - p.
    let mut ups = vec![];
    let mut links_of = vec![None; n];
    for (i, &d) in drivers.iter().enumerate().rev() {
        let req = e.connect(d, cache, spec(&format!("d{i}.req"), 4)).unwrap();
        let resp = e.connect(cache, d, spec(&format!("d{i}.resp"), 4)).unwrap();
        ups.push((req, resp));
        links_of[i] = Some((req, resp));
    }
    let down_req = e.connect(cache, probe, spec("down.req", 4)).unwrap();
    let down_resp = e.connect(probe, cache, spec("down.resp", 4)).unwrap();
    let links = CacheLinks { upstream: &ups, down_req, down_resp };
    let c = Cache::new("l1", &cfg, clock(), links, &SeedTree::new(1), e.stats_mut()).unwrap();
    for (i, &d) in drivers.iter().enumerate() {
        let (req, resp) = links_of[i].unwrap();
        // Every driver uses id 0; driver i writes line i.
        let s = vec![(0, MemRequest { id: 0, ..wr(i as u64 * L, 64) })];
        e.install(d, Node::Driver(Driver::new(&format!("cpu{i}"), req, resp, s))).unwrap();
    }
    e.install(cache, Node::Cache(c)).unwrap();
    e.install(probe, Node::Probe(Probe::new("mem", down_req, down_resp, 10))).unwrap();
    e.run(None).unwrap_or_else(|err| panic!("{err}"));
    for (i, &d) in drivers.iter().enumerate() {
        let a = e.driver(d).answer(0);
        assert_eq!(a.addr, i as u64 * L, "driver {i} got another's answer");
        // Port n - 1 - i is looked up in cycle 1 + (n - 1 - i).
        let port = (n - 1 - i) as u64;
        assert_eq!(a.at, (1 + port + 4 + 1) * NS, "driver {i} (port {port})");
    }
}

/// xbar.rs back-pressure: at most max_in_flight transactions; a port that finds none free is
/// held (counted once) and nothing is lost.
#[test]
fn the_crossbar_holds_at_most_max_in_flight_transactions() {
    let cfg = CrossbarConfig { max_in_flight: 2, ..xbar_cfg(1, 16) };
    let reqs: Vec<(Tick, MemRequest)> = (0..6u64).map(|i| (0, rd(i * 64, 64))).collect();
    let f = Fabric::new(&cfg, vec![script(&reqs)], 2, 20).run();
    let mut seen: Vec<(Tick, MemRequest)> = f.banks.iter().flat_map(|&b| f.e.probe(b).seen.clone()).collect();
    seen.sort_by_key(|&(t, _)| t);
    assert_eq!(seen.len(), 6);
    // Two go at once; each later pair waits for a response to free its slots.
    assert_eq!(seen[0].0, seen[1].0);
    assert!(seen[2].0 >= seen[0].0 + 20 * NS, "{seen:?}");
    assert_eq!(f.e.driver(f.drivers[0]).answers.len(), 6);
    assert!(f.e.stats().lookup_counter("xbar.in_flight_full_stalls").unwrap() > 0);
}

/// README "banks index their sets with the bank's digit taken out" (Cache::interleaved) under the
/// crossbar's XOR hash with a bank count that is not a power of two: the lines a bank receives
/// still spread over its sets (the hash permutes the banks within each run of B lines, see
/// BankHash::Xor). Three banks, bank 0 direct mapped with 16 sets: its first 16 lines all fit.
#[test]
fn an_interleaved_bank_behind_an_xor_hash_uses_every_set() {
    let f = Fabric::new(&CrossbarConfig { hash: BankHash::Xor, ..xbar_cfg(1, 4) }, vec![vec![]], 3, 1);
    let x = f.e.xbar(f.xbar);
    let lines: Vec<u64> = (0..).filter(|&l| x.bank_of(l * L) == 0).take(16).collect();
    let cfg = config(
        r#"size = "1KiB"
           associativity = 1
           line = "64B"
           mshrs = 4
           hit_latency_cycles = 1"#,
    );
    let mut reqs: Vec<(Tick, MemRequest)> = lines.iter().map(|&l| (0, wr(l * L, 64))).collect();
    reqs.extend(lines.iter().map(|&l| (100 * NS, rd(l * L, 64))));
    let r = rig(&cfg, vec![script(&reqs)], 10, 32, 8, Some((3, 1)));
    assert_eq!(r.cache().counters().evictions, 0, "lines {lines:?} conflict in a 16-set bank");
}

/// config.rs: the sector is "the unit of validity, fetch and write-back". A line with only
/// sectors 0 and 3 dirty (1 and 2 never valid) should write back those two sectors, not the
/// 64-byte span that includes two sectors the cache does not hold: one write per run of dirty
/// sectors.
#[test]
fn a_write_back_does_not_cover_sectors_the_line_never_held() {
    let cfg = one_set_with(r#"sector = "16B""#);
    let reqs = [wr(0, 16), wr(48, 16), wr(L, 64), wr(2 * L, 64), wr(3 * L, 64), wr(4 * L, 64)];
    let s = spaced(&cfg, &reqs);
    assert!(s.probe().reads().is_empty());
    let first: Vec<(u64, u32)> = s.probe().writes().into_iter().filter(|&(a, _)| a < L).collect();
    let bytes: u32 = first.iter().map(|&(_, b)| b).sum();
    assert_eq!(bytes, 32, "line 0's write-back: {first:?}");
}

/// component.rs `access`: a lookup "changes nothing on a stall". A write miss held by a full
/// write-back buffer must not draw from the random policy's stream (or age SRRIP's set) for the
/// victim it cannot evict yet: the lines evicted are those of a run in which nothing stalls.
#[test]
fn a_stall_on_the_write_back_buffer_changes_no_replacement_state() {
    for policy in ["random", "srrip"] {
        let evicted = |buffer: u32, down_cap: u32| {
            let cfg = one_set_with(&format!(
                r#"replacement = "{policy}"
                   writeback_buffer = {buffer}
                   lookups_per_cycle = 2"#
            ));
            // Four dirty lines, then full-line writes two at a time: each evicts a dirty line,
            // and with a one-write buffer the second of a pair waits (on its retries too).
            let mut reqs: Vec<(Tick, MemRequest)> = (0..4).map(|i| (i * NS, wr(i * L, 64))).collect();
            reqs.extend((4..24).map(|i| (50 * NS + (i / 2) * 20 * NS, wr(i * L, 64))));
            reqs.extend((0..24).map(|i| (800 * NS, rd(i * L, 64))));
            let r = rig(&cfg, vec![script(&reqs)], 5, 64, down_cap, None);
            assert_eq!(r.driver(0).answers.len(), reqs.len());
            (r.probe().writes(), r.cache().counters().writeback_full_stalls)
        };
        let (free, none) = evicted(8, 8);
        let (held, stalls) = evicted(1, 1);
        assert_eq!(none, 0);
        assert!(stalls > 0, "{policy}: the buffer never filled");
        assert_eq!(held, free, "{policy}: the victims depend on the stalls");
    }
}
