//! Randomized hierarchies: every request answered exactly once, nothing lost between levels.
//!
//! Random reads and writes (sizes 1 to 160 bytes, so many cross lines; some non-temporal) go from
//! several requesters with colliding ids through small caches with few MSHRs and one- or
//! two-slot links, so that merging, sector misses, evictions, write-backs and back-pressure all
//! happen often. Configurations vary with the case.

#[path = "cache_harness.rs"]
mod harness;

use harness::*;
use mem_model::cache::{
    BankHash, Cache, CacheConfig, CacheLinks, Crossbar, CrossbarConfig, CrossbarLinks, Topology,
};
use mem_model::{MemRequest, SimpleMemory, SimpleMemoryConfig};
use proptest::prelude::*;
use sim_core::{Bandwidth, ByteSize, Component, ComponentId, Engine, SeedTree, Tick, TimeSpan};

/// xorshift64*: the tests' own deterministic stream.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        (self.next() >> 11) % n
    }
}

/// `n` random requests over a `footprint`-byte region, ids 0..n, a few nanoseconds apart.
fn traffic(seed: u64, n: usize, footprint: u64) -> Vec<(Tick, MemRequest)> {
    // SplitMix64's finaliser: neighbouring seeds give unrelated streams (xorshift needs non-zero).
    let z = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    let z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    let mut r = Rng((z ^ (z >> 31)) | 1);
    let mut t = 0;
    (0..n as u64)
        .map(|id| {
            t += r.below(4) * NS;
            let addr = r.below(footprint);
            let bytes = 1 + r.below(160) as u32;
            let write = r.below(3) == 0;
            let non_temporal = r.below(8) == 0;
            (t, MemRequest { id, addr, bytes, write, issued: 0, non_temporal })
        })
        .collect()
}

/// Knobs a case varies.
#[derive(Debug, Clone)]
struct Knobs {
    sector: u64,
    mshrs: u32,
    targets: u32,
    lookups: u32,
    policy: &'static str,
    non_temporal: &'static str,
    cap: u32,
}

fn knobs() -> impl Strategy<Value = Knobs> {
    (
        prop::sample::select(vec![16u64, 32, 64]),
        1u32..6,
        1u32..4,
        1u32..3,
        prop::sample::select(vec!["lru", "srrip", "random"]),
        prop::sample::select(vec!["bypass", "insert_lru"]),
        1u32..3,
    )
        .prop_map(|(sector, mshrs, targets, lookups, policy, non_temporal, cap)| Knobs {
            sector,
            mshrs,
            targets,
            lookups,
            policy,
            non_temporal,
            cap,
        })
}

fn cache_cfg(size: &str, ways: u32, hit: u64, k: &Knobs) -> CacheConfig {
    config(&format!(
        r#"size = "{size}"
           associativity = {ways}
           line = "64B"
           sector = "{}B"
           replacement = "{}"
           mshrs = {}
           mshr_targets = {}
           hit_latency_cycles = {hit}
           lookups_per_cycle = {}
           writeback_buffer = 2
           non_temporal = "{}""#,
        k.sector, k.policy, k.mshrs, k.targets, k.lookups, k.non_temporal
    ))
}

/// Drivers -> private L1 each -> L2 (shared by all L1s through its ports) -> SimpleMemory.
fn l1_l2_memory(
    k: &Knobs,
    scripts: Vec<Vec<(Tick, MemRequest)>>,
) -> (Engine<Node>, Vec<ComponentId>, Vec<ComponentId>, ComponentId) {
    let mut e: Engine<Node> = Engine::new();
    let drivers: Vec<ComponentId> = scripts.iter().map(|_| e.reserve()).collect();
    let l1s: Vec<ComponentId> = scripts.iter().map(|_| e.reserve()).collect();
    let (l2, mem) = (e.reserve(), e.reserve());
    let mut l2_ups = vec![];
    let l1_cfg = cache_cfg("512B", 2, 2, k);
    let l2_cfg = cache_cfg("2KiB", 4, 6, &Knobs { mshrs: k.mshrs + 2, ..k.clone() });
    for (i, (&d, &l1)) in drivers.iter().zip(&l1s).enumerate() {
        let up = (
            e.connect(d, l1, spec(&format!("d{i}.req"), k.cap)).unwrap(),
            e.connect(l1, d, spec(&format!("d{i}.resp"), k.cap)).unwrap(),
        );
        let down = (
            e.connect(l1, l2, spec(&format!("l1_{i}.req"), k.cap)).unwrap(),
            e.connect(l2, l1, spec(&format!("l1_{i}.resp"), k.cap)).unwrap(),
        );
        l2_ups.push(down);
        let links = CacheLinks { upstream: &[up], down_req: down.0, down_resp: down.1 };
        let c = Cache::new(&format!("l1_{i}"), &l1_cfg, clock(), links, &SeedTree::new(7), e.stats_mut())
            .unwrap();
        e.install(l1, Node::Cache(c)).unwrap();
        e.install(d, Node::Driver(Driver::new(&format!("cpu{i}"), up.0, up.1, scripts[i].clone()))).unwrap();
    }
    let mreq = e.connect(l2, mem, spec("mem.req", k.cap)).unwrap();
    let mresp = e.connect(mem, l2, spec("mem.resp", k.cap)).unwrap();
    let links = CacheLinks { upstream: &l2_ups, down_req: mreq, down_resp: mresp };
    let c = Cache::new("l2", &l2_cfg, clock(), links, &SeedTree::new(7), e.stats_mut()).unwrap();
    e.install(l2, Node::Cache(c)).unwrap();
    let mcfg =
        SimpleMemoryConfig { latency: TimeSpan::from_ns(30), bandwidth: Bandwidth::parse("32GB/s").unwrap() };
    let m = SimpleMemory::new("mem", mcfg, &[(mreq, mresp)], e.stats_mut()).unwrap();
    e.install(mem, Node::Mem(m)).unwrap();
    (e, drivers, l1s, l2)
}

/// Checks every driver got exactly one answer per request, for the request's own address.
fn all_answered_once(e: &Engine<Node>, drivers: &[ComponentId], scripts: &[Vec<(Tick, MemRequest)>]) {
    for (&d, script) in drivers.iter().zip(scripts) {
        let drv = e.driver(d);
        assert_eq!(drv.answers.len(), script.len(), "{}: answers", drv.name);
        let mut seen = vec![false; script.len()];
        for a in &drv.answers {
            let i = a.id as usize;
            assert!(!seen[i], "{}: request {i} answered twice", drv.name);
            seen[i] = true;
            assert_eq!(a.addr, script[i].1.addr, "{}: request {i} answered with another's address", drv.name);
        }
    }
}

fn counter(e: &Engine<Node>, name: &str) -> u64 {
    e.stats().lookup_counter(name).unwrap_or_else(|| panic!("no statistic {name}"))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn l1_l2_memory_answers_every_request_exactly_once(seed in any::<u64>(), k in knobs(), ports in 1usize..4) {
        let scripts: Vec<_> = (0..ports).map(|p| traffic(seed.wrapping_add(p as u64), 300, 6 << 10)).collect();
        let (mut e, drivers, l1s, l2) = l1_l2_memory(&k, scripts.clone());
        e.run(None).unwrap_or_else(|err| panic!("{err}"));
        all_answered_once(&e, &drivers, &scripts);
        // Nothing lost between levels: every read an L1 sent was filled, every write it sent
        // arrived, and the L2 saw exactly those.
        let mut l1_reads_below = 0;
        let mut l1_writes_below = 0;
        let mut l1_set_busy = 0;
        for &c in &l1s {
            let cache = e.cache(c);
            prop_assert_eq!(cache.mshrs_in_use(), 0);
            prop_assert_eq!(cache.outstanding(), 0);
            let name = cache.name().to_owned();
            l1_reads_below += counter(&e, &format!("{name}.fills"));
            l1_writes_below += counter(&e, &format!("{name}.writebacks"));
            l1_set_busy += counter(&e, &format!("{name}.set_busy_misses"));
        }
        prop_assert_eq!(counter(&e, "l2.reads"), l1_reads_below);
        if k.non_temporal == "insert_lru" {
            // Without bypass, an L1 writes downstream to write back, or to write through a
            // set whose every way waits for a fill (a set-busy miss that is a write).
            let writes = counter(&e, "l2.writes");
            prop_assert!(writes >= l1_writes_below && writes <= l1_writes_below + l1_set_busy);
        }
        prop_assert_eq!(e.cache(l2).mshrs_in_use(), 0);
        prop_assert_eq!(counter(&e, "mem.reads"), counter(&e, "l2.fills"));
    }
}

/// Drivers -> private L1s -> crossbar -> two LLC banks -> crossbar -> one recording memory.
struct Shared {
    e: Engine<Node>,
    drivers: Vec<ComponentId>,
    l1s: Vec<ComponentId>,
    banks: Vec<ComponentId>,
    mem: ComponentId,
}

fn shared_llc(
    k: &Knobs,
    scripts: Vec<Vec<(Tick, MemRequest)>>,
    topology: Topology,
    port_bytes: Option<u64>,
) -> Shared {
    let mut e: Engine<Node> = Engine::new();
    let n = scripts.len();
    let drivers: Vec<ComponentId> = (0..n).map(|_| e.reserve()).collect();
    let l1s: Vec<ComponentId> = (0..n).map(|_| e.reserve()).collect();
    let x1 = e.reserve();
    let banks: Vec<ComponentId> = (0..2).map(|_| e.reserve()).collect();
    let x2 = e.reserve();
    let mem = e.reserve();
    let l1_cfg = cache_cfg("512B", 2, 2, k);
    let llc_cfg =
        cache_cfg("1KiB", 4, 8, &Knobs { non_temporal: "insert_lru", mshrs: k.mshrs + 1, ..k.clone() });
    let mut x1_ups = vec![];
    for i in 0..n {
        let up = (
            e.connect(drivers[i], l1s[i], spec(&format!("d{i}.req"), k.cap)).unwrap(),
            e.connect(l1s[i], drivers[i], spec(&format!("d{i}.resp"), k.cap)).unwrap(),
        );
        let down = (
            e.connect(l1s[i], x1, spec(&format!("l1_{i}.req"), k.cap)).unwrap(),
            e.connect(x1, l1s[i], spec(&format!("l1_{i}.resp"), k.cap)).unwrap(),
        );
        x1_ups.push(down);
        let links = CacheLinks { upstream: &[up], down_req: down.0, down_resp: down.1 };
        let c = Cache::new(&format!("l1_{i}"), &l1_cfg, clock(), links, &SeedTree::new(3), e.stats_mut())
            .unwrap();
        e.install(l1s[i], Node::Cache(c)).unwrap();
        e.install(drivers[i], Node::Driver(Driver::new(&format!("cpu{i}"), up.0, up.1, scripts[i].clone())))
            .unwrap();
    }
    let mut x1_downs = vec![];
    let mut x2_ups = vec![];
    for (b, &bank) in banks.iter().enumerate() {
        let up = (
            e.connect(x1, bank, spec(&format!("llc{b}.req"), k.cap)).unwrap(),
            e.connect(bank, x1, spec(&format!("llc{b}.resp"), k.cap)).unwrap(),
        );
        let down = (
            e.connect(bank, x2, spec(&format!("llc{b}.mreq"), k.cap)).unwrap(),
            e.connect(x2, bank, spec(&format!("llc{b}.mresp"), k.cap)).unwrap(),
        );
        x1_downs.push(up);
        x2_ups.push(down);
        let links = CacheLinks { upstream: &[up], down_req: down.0, down_resp: down.1 };
        let c = Cache::new(&format!("llc{b}"), &llc_cfg, clock(), links, &SeedTree::new(3), e.stats_mut())
            .unwrap();
        e.install(bank, Node::Cache(c)).unwrap();
    }
    let mem_links = (
        e.connect(x2, mem, spec("mem.req", k.cap)).unwrap(),
        e.connect(mem, x2, spec("mem.resp", k.cap)).unwrap(),
    );
    let xcfg = CrossbarConfig {
        topology,
        granule: None,
        hash: BankHash::Xor,
        max_in_flight: 8,
        bank_queue: 2,
        port_bytes: port_bytes.map(ByteSize::from_bytes),
    };
    let line = ByteSize::from_bytes(64);
    let links = CrossbarLinks { upstream: &x1_ups, downstream: &x1_downs };
    let x = Crossbar::new("x1", &xcfg, clock(), links, line, e.stats_mut()).unwrap();
    e.install(x1, Node::Xbar(x)).unwrap();
    let links = CrossbarLinks { upstream: &x2_ups, downstream: &[mem_links] };
    let x = Crossbar::new(
        "x2",
        &CrossbarConfig { topology: Topology::Crossbar { cycles: 2 }, ..xcfg },
        clock(),
        links,
        line,
        e.stats_mut(),
    )
    .unwrap();
    e.install(x2, Node::Xbar(x)).unwrap();
    e.install(mem, Node::Probe(Probe::new("mem", mem_links.0, mem_links.1, 20))).unwrap();
    Shared { e, drivers, l1s, banks, mem }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    #[test]
    fn a_shared_banked_llc_answers_everything_and_loses_no_write(
        seed in any::<u64>(),
        k in knobs(),
        mesh in any::<bool>(),
        port_bytes in prop_oneof![Just(None), (1u64..=128).prop_map(Some)],
    ) {
        let scripts: Vec<_> = (0..3).map(|p| traffic(seed ^ (p as u64) << 40, 250, 4 << 10)).collect();
        let topology = if mesh {
            Topology::Mesh { cols: 2, rows: 2, cycles_per_hop: 1, base_cycles: 1, upstream_nodes: None, downstream_nodes: None }
        } else {
            Topology::Crossbar { cycles: 3 }
        };
        let mut s = shared_llc(&k, scripts.clone(), topology, port_bytes);
        s.e.run(None).unwrap_or_else(|err| panic!("{err}"));
        all_answered_once(&s.e, &s.drivers, &scripts);
        // Functional shadow of dirty data: each written line is still dirty in the writer's L1
        // or in its LLC bank, or memory received a write covering the written bytes.
        let mem_writes = s.e.probe(s.mem).writes();
        for (i, script) in scripts.iter().enumerate() {
            let l1 = s.e.cache(s.l1s[i]);
            for (_, r) in script.iter().filter(|(_, r)| r.write) {
                let end = r.addr + u64::from(r.bytes);
                for line in r.addr / 64..=(end - 1) / 64 {
                    let (lo, hi) = (r.addr.max(line * 64), end.min(line * 64 + 64));
                    let in_llc = s.banks.iter().any(|&b| s.e.cache(b).is_dirty(line * 64));
                    let in_mem = mem_writes.iter().any(|&(a, n)| a <= lo && hi <= a + u64::from(n));
                    prop_assert!(
                        l1.is_dirty(line * 64) || in_llc || in_mem,
                        "cpu{} write {:#x}+{} lost in line {}", i, r.addr, r.bytes, line
                    );
                }
            }
        }
        for &b in &s.banks {
            prop_assert_eq!(s.e.cache(b).mshrs_in_use(), 0);
        }
    }
}

#[test]
fn runs_repeat_bit_for_bit() {
    let k = Knobs {
        sector: 32,
        mshrs: 3,
        targets: 2,
        lookups: 1,
        policy: "random",
        non_temporal: "bypass",
        cap: 1,
    };
    // Unpaced and with 24 B ports (a line in three cycles).
    let run = |port_bytes: Option<u64>| {
        let scripts: Vec<_> = (0..3).map(|p| traffic(99 + p, 400, 4 << 10)).collect();
        let mut s = shared_llc(&k, scripts, Topology::Crossbar { cycles: 2 }, port_bytes);
        let summary = s.e.run(None).unwrap();
        let answers: Vec<Vec<Answer>> = s.drivers.iter().map(|&d| s.e.driver(d).answers.clone()).collect();
        (summary.end_tick, summary.events, answers, s.e.stats().to_json())
    };
    for port_bytes in [None, Some(24)] {
        assert_eq!(run(port_bytes), run(port_bytes));
    }
}
