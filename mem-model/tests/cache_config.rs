//! Cache and crossbar configurations: presets parse, impossible values are refused with an error
//! that names the field, and nothing panics.

#[path = "cache_harness.rs"]
mod harness;

use harness::*;
use mem_model::cache::{
    BankHash, Cache, CacheBuildError, CacheConfig, CacheConfigError, CacheLinks, Crossbar, CrossbarConfig,
    CrossbarError, CrossbarLinks, NonTemporalPolicy, ReplacementKind, Topology,
};
use sim_core::{ByteSize, Engine, SeedTree, Stats};

const GOOD: &str = r#"
size = "64KiB"
associativity = 4
line = "64B"
sector = "32B"
replacement = "srrip"
mshrs = 16
mshr_targets = 4
hit_latency_cycles = 4
lookups_per_cycle = 2
writeback_buffer = 8
non_temporal = "bypass"
"#;

/// `GOOD` with `key`'s line replaced by `line` (or removed when `line` is empty).
fn edited(key: &str, line: &str) -> String {
    GOOD.lines()
        .map(|l| if l.starts_with(&format!("{key} ")) { line.to_owned() } else { l.to_owned() })
        .collect::<Vec<_>>()
        .join("\n")
}

fn parse(text: &str) -> Result<CacheConfig, String> {
    toml::from_str::<CacheConfig>(text).map_err(|e| e.to_string())
}

fn geometry_error(text: &str) -> String {
    parse(text).unwrap().geometry().unwrap_err().to_string()
}

#[test]
fn a_full_preset_parses_into_the_expected_geometry() {
    let cfg = parse(GOOD).unwrap();
    assert_eq!(cfg.replacement, ReplacementKind::Srrip);
    assert_eq!(cfg.non_temporal, NonTemporalPolicy::Bypass);
    let g = cfg.geometry().unwrap();
    assert_eq!((g.sets, g.ways, g.sectors_per_line, g.mshrs, g.writeback_buffer), (256, 4, 2, 16, 8));
    // Optional keys default: unsectored, LRU, 8 targets, one lookup per cycle, insert at LRU.
    let minimal =
        parse("size = \"1KiB\"\nassociativity = 2\nline = \"64B\"\nmshrs = 2\nhit_latency_cycles = 1")
            .unwrap();
    assert_eq!(minimal.replacement, ReplacementKind::Lru);
    assert_eq!(minimal.non_temporal, NonTemporalPolicy::InsertLru);
    let g = minimal.geometry().unwrap();
    assert_eq!((g.sectors_per_line, g.mshr_targets, g.lookups_per_cycle, g.writeback_buffer), (1, 8, 1, 2));
}

#[test]
fn impossible_shapes_name_the_field() {
    let cases = [
        (
            edited("size", "size = \"128B\""),
            "cache size (128B) holds 2 lines, fewer than associativity 4: zero sets",
        ),
        (
            edited("associativity", "associativity = 3"),
            "cache associativity (3) must divide the 1024 lines of size 64KiB",
        ),
        (edited("sector", "sector = \"48B\""), "cache sector (48B) must be a power of two"),
        (edited("sector", "sector = \"128B\""), "cache sector (128B) must divide line (64B)"),
        (edited("line", "line = \"96B\""), "cache line (96B) must be a power of two"),
        (
            edited("line", "line = \"8KiB\""),
            "cache line (8KiB) / sector (32B) gives more than 64 sectors per line",
        ),
        (edited("size", "size = \"1000B\""), "cache size (1KB) is not a whole number of lines (64B)"),
        (edited("associativity", "associativity = 0"), "cache associativity must be at least 1"),
        (edited("mshrs", "mshrs = 0"), "cache mshrs must be at least 1"),
        (edited("mshr_targets", "mshr_targets = 0"), "cache mshr_targets must be at least 1"),
        (edited("lookups_per_cycle", "lookups_per_cycle = 0"), "cache lookups_per_cycle must be at least 1"),
        (edited("writeback_buffer", "writeback_buffer = 0"), "cache writeback_buffer must be at least 1"),
        (edited("size", "size = \"0B\""), "cache size must be at least 1"),
        (edited("line", "line = \"2MiB\""), "cache line (2MiB) is above the supported maximum of 1MiB"),
        (edited("size", "size = \"1TiB\""), "cache size (1TiB) is above the supported maximum of 4GiB"),
        (
            edited("hit_latency_cycles", "hit_latency_cycles = 18446744073709551615"),
            "cache hit_latency_cycles (18446744073709551615) is above the supported maximum of 1000000",
        ),
    ];
    for (text, want) in cases {
        assert_eq!(geometry_error(&text), want);
    }
}

#[test]
fn an_unknown_policy_lists_the_valid_ones() {
    let e = parse(&edited("replacement", "replacement = \"plru\"")).unwrap_err();
    assert!(e.contains("replacement = \"plru\""), "{e}");
    assert!(
        e.contains("cache replacement: unknown policy \"plru\"; valid policies: lru, srrip, random"),
        "{e}"
    );
    let e = parse(&edited("non_temporal", "non_temporal = \"stream\"")).unwrap_err();
    assert!(e.contains("non_temporal") && e.contains("bypass") && e.contains("insert_lru"), "{e}");
}

#[test]
fn unknown_keys_and_bare_numbers_are_refused() {
    let e = parse(&format!("{GOOD}\nways = 4")).unwrap_err();
    assert!(e.contains("unknown field `ways`"), "{e}");
    let e = parse(&edited("size", "size = 65536")).unwrap_err();
    assert!(e.contains("missing unit"), "{e}");
    let e = parse(&edited("mshrs", "")).unwrap_err();
    assert!(e.contains("missing field `mshrs`"), "{e}");
}

#[test]
fn building_checks_the_config_and_the_wiring() {
    let mut e: Engine<Node> = Engine::new();
    let (a, b) = (e.reserve(), e.reserve());
    let l = e.connect(a, b, spec("l", 1)).unwrap();
    let m = e.connect(b, a, spec("m", 1)).unwrap();
    let mut stats = Stats::new();
    let bad = parse(&edited("associativity", "associativity = 3")).unwrap();
    let links = CacheLinks { upstream: &[(l, m)], down_req: l, down_resp: m };
    let err = Cache::<Msg>::new("c", &bad, clock(), links, &SeedTree::new(0), &mut stats).err().unwrap();
    assert!(matches!(err, CacheBuildError::Config(CacheConfigError::AssociativityDoesNotDivide { .. })));
    let good = parse(GOOD).unwrap();
    let none = CacheLinks { upstream: &[], down_req: l, down_resp: m };
    let err = Cache::<Msg>::new("c", &good, clock(), none, &SeedTree::new(0), &mut stats).err().unwrap();
    assert_eq!(err.to_string(), "cache c: no upstream port");
    Cache::<Msg>::new("c", &good, clock(), links, &SeedTree::new(0), &mut stats).unwrap();
    let err = Cache::<Msg>::new("c", &good, clock(), links, &SeedTree::new(0), &mut stats).err().unwrap();
    assert!(matches!(err, CacheBuildError::Stats(_)), "a second cache of the same name: {err}");
}

#[test]
fn crossbar_presets_parse_and_bad_ones_name_the_field() {
    let x: CrossbarConfig = toml::from_str(
        r#"topology = { kind = "mesh", cols = 4, rows = 2, cycles_per_hop = 2, downstream_nodes = [0, 7] }
           hash = "xor""#,
    )
    .unwrap();
    assert_eq!(x.hash, BankHash::Xor);
    assert_eq!((x.max_in_flight, x.bank_queue, x.granule), (1024, 16, None));
    assert!(matches!(x.topology, Topology::Mesh { base_cycles: 0, .. }));
    let e = toml::from_str::<CrossbarConfig>(r#"topology = { kind = "ring", cycles = 2 }"#).unwrap_err();
    assert!(e.to_string().contains("unknown variant `ring`"), "{e}");
    let e = toml::from_str::<CrossbarConfig>(r#"topology = { kind = "crossbar", cycles = 2, hops = 1 }"#)
        .unwrap_err();
    assert!(e.to_string().contains("unknown field `hops`"), "{e}");

    let mut e: Engine<Node> = Engine::new();
    let (a, b) = (e.reserve(), e.reserve());
    let l = e.connect(a, b, spec("l", 1)).unwrap();
    let m = e.connect(b, a, spec("m", 1)).unwrap();
    let mut stats = Stats::new();
    let links = CrossbarLinks { upstream: &[(l, m)], downstream: &[(l, m)] };
    let line = ByteSize::from_bytes(64);
    let build = |cfg: &CrossbarConfig, stats: &mut Stats| {
        Crossbar::<Msg>::new("x", cfg, clock(), links, line, stats).err().map(|e| e.to_string())
    };
    let bad_granule = CrossbarConfig { granule: Some(ByteSize::from_bytes(48)), ..x.clone() };
    assert_eq!(build(&bad_granule, &mut stats).unwrap(), "crossbar granule (48B) must be a power of two");
    let zero = CrossbarConfig { bank_queue: 0, ..x.clone() };
    assert_eq!(build(&zero, &mut stats).unwrap(), "crossbar bank_queue must be at least 1");
    let zero_width = CrossbarConfig { port_bytes: Some(ByteSize::from_bytes(0)), ..x.clone() };
    assert_eq!(build(&zero_width, &mut stats).unwrap(), "crossbar port_bytes must be at least 1");
    // downstream_nodes lists two nodes but there is one downstream port.
    assert_eq!(
        build(&x, &mut stats).unwrap(),
        "network topology: mesh downstream_nodes lists 2 nodes but there are 1 ports"
    );
    let none = CrossbarLinks { upstream: &[], downstream: &[(l, m)] };
    let err = Crossbar::<Msg>::new("x", &x, clock(), none, line, &mut stats).err().unwrap();
    assert!(matches!(err, CrossbarError::NoPorts { side: "upstream", .. }));
}
