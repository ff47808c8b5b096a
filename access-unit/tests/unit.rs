//! The access unit on the engine: functional output, program order, limits and back-pressure.

mod common;

use access_unit::{AccessUnit, AccessUnitConfig, AuCounters, AuPorts, AuProgram, OutqEntry, parse};
use common::{IND, Msg, OFF, Sink, TAB, bags_program, clock};
use mem_model::{Backing, MemoryImage, Region, SimpleMemory, SimpleMemoryConfig};
use sim_core::{Bandwidth, ByteSize, Component, Ctx, Engine, LinkSpec, TimeSpan, Wake};
use std::sync::Arc;

// Components live inline in the engine's table; boxing would add an indirection per event.
#[allow(clippy::large_enum_variant)]
enum Node {
    Au(AccessUnit<Msg>),
    Mem(SimpleMemory<Msg>),
    Sink(Sink),
}

impl Component for Node {
    type Msg = Msg;
    fn name(&self) -> &str {
        match self {
            Node::Au(a) => a.name(),
            Node::Mem(m) => m.name(),
            Node::Sink(_) => "sink",
        }
    }
    fn wake(&mut self, why: Wake, ctx: &mut Ctx<'_, Msg>) {
        match self {
            Node::Au(a) => a.wake(why, ctx),
            Node::Mem(m) => m.wake(why, ctx),
            Node::Sink(s) => s.wake(why, ctx),
        }
    }
    fn busy(&self) -> bool {
        match self {
            Node::Au(a) => a.busy(),
            Node::Mem(m) => m.busy(),
            Node::Sink(_) => false,
        }
    }
    fn status(&self) -> String {
        match self {
            Node::Au(a) => a.status(),
            Node::Mem(m) => m.status(),
            Node::Sink(_) => String::new(),
        }
    }
}

const ROW: u64 = 256;

fn bag_program(bags: u64) -> AuProgram {
    bags_program(bags, ROW, "", "")
}

fn image(offsets: Vec<u32>, indices: Vec<u32>) -> MemoryImage {
    let mut m = MemoryImage::new();
    // An empty batch still maps one (never read) index word.
    let indices = if indices.is_empty() { vec![0] } else { indices };
    let n = indices.len() as u64;
    m.add(Region {
        name: "offsets".into(),
        base: OFF,
        size: offsets.len() as u64 * 4,
        backing: Backing::Words(offsets),
    })
    .unwrap();
    m.add(Region { name: "indices".into(), base: IND, size: n * 4, backing: Backing::Words(indices) })
        .unwrap();
    m.add(Region {
        name: "table".into(),
        base: TAB,
        size: 1000 * ROW,
        backing: Backing::Procedural { seed: 1, table: 0, dim: 64 },
    })
    .unwrap();
    m
}

struct Run {
    entries: Vec<OutqEntry>,
    /// Tick each entry was popped by the sink.
    at: Vec<u64>,
    end_tick: u64,
    requests: u64,
    lookups: u64,
    max_in_flight: u64,
    counters: AuCounters,
    bytes_written: u64,
}

/// The evaluated TMU at 1 GHz with the old tests' issue width and 16 KiB of storage in one lane
/// (so scalar programs keep the whole budget).
fn one_lane(max_outstanding: u32) -> AccessUnitConfig {
    AccessUnitConfig {
        max_outstanding,
        requests_per_cycle: 8,
        lanes: 1,
        ..AccessUnitConfig::tmu_like(clock())
    }
}

fn run(program: AuProgram, img: MemoryImage, max_outstanding: u32, outq_capacity: u32, sink_gap: u64) -> Run {
    run_cfg(program, img, one_lane(max_outstanding), outq_capacity, sink_gap)
}

fn run_cfg(
    program: AuProgram,
    img: MemoryImage,
    cfg: AccessUnitConfig,
    outq_capacity: u32,
    sink_gap: u64,
) -> Run {
    let clock = cfg.clock;
    let link = |name: &str, capacity: u32| LinkSpec { name: name.into(), clock, latency_cycles: 1, capacity };
    let mut e: Engine<Node> = Engine::new();
    let (au, mem, sink) = (e.reserve(), e.reserve(), e.reserve());
    let req = e.connect(au, mem, link("req", 1024)).unwrap();
    let resp = e.connect(mem, au, link("resp", 1024)).unwrap();
    let outq = e.connect(au, sink, link("outq", outq_capacity)).unwrap();
    let ports = AuPorts { mem_req: req, mem_resp: resp, outq, queue: None };
    let unit = AccessUnit::new("au", cfg, program, Arc::new(img), ports, e.stats_mut()).unwrap();
    let mcfg = SimpleMemoryConfig {
        latency: TimeSpan::from_ns(100),
        bandwidth: Bandwidth::from_bytes_per_second(64_000_000_000),
    };
    let memory = SimpleMemory::new("mem", mcfg, &[(req, resp)], e.stats_mut()).unwrap();
    e.install(au, Node::Au(unit)).unwrap();
    e.install(mem, Node::Mem(memory)).unwrap();
    e.install(sink, Node::Sink(Sink::new(outq, sink_gap))).unwrap();
    let s = e.run(None).unwrap();
    let Some(Node::Au(a)) = e.component(au) else { unreachable!() };
    assert!(a.finished(), "unit finished: {}", a.status());
    let c = a.counters();
    let Some(Node::Sink(k)) = e.component(sink) else { unreachable!() };
    assert_eq!(e.stats().lookup_counter("mem.reads"), Some(c.requests), "memory served every read");
    assert_eq!(e.stats().lookup_counter("mem.writes"), Some(c.write_requests), "and every queue write");
    assert_eq!(c.layer_requests.iter().sum::<u64>(), c.requests, "per-layer requests add up");
    assert_eq!(k.got.len() as u64, c.events, "every event reached the core");
    Run {
        entries: k.got.clone(),
        at: k.at.clone(),
        end_tick: s.end_tick,
        requests: c.requests,
        lookups: c.lookups,
        max_in_flight: c.peak_outstanding as u64,
        counters: c,
        bytes_written: e.stats().lookup_counter("mem.bytes_written").unwrap_or(0),
    }
}

fn expected_events(offsets: &[u32], indices: &[u32]) -> Vec<(u32, Vec<u64>)> {
    let mut v = vec![];
    for b in 0..offsets.len() - 1 {
        v.push((0, vec![]));
        for j in offsets[b]..offsets[b + 1] {
            v.push((1, vec![TAB + indices[j as usize] as u64 * ROW]));
        }
        v.push((2, vec![b as u64]));
    }
    v.push((3, vec![]));
    v
}

fn events(r: &Run) -> Vec<(u32, Vec<u64>)> {
    r.entries.iter().map(|e| (e.control, e.operands[..e.len as usize].to_vec())).collect()
}

#[test]
fn text_form_round_trips() {
    let p = bag_program(7);
    let text = p.to_string();
    assert_eq!(parse(&text).unwrap(), p);
    assert_eq!(parse(&text).unwrap().to_string(), text);
}

#[test]
fn parse_errors_name_the_line() {
    let e = parse(".au\ntu t0 = dense 0..4\ns0 = ite t0\ns1 = lod.u32 [0x0 + s0 * 4] in t0\n").unwrap_err();
    assert_eq!(e.to_string(), "line 4: unknown stream kind \"lod.u32\"");
    let e = parse(".au\ntu t0 = dense 0..4\ns0 = ite t0\non t0 iter -> 1 (s7)\n").unwrap_err();
    assert!(e.to_string().contains("no stream s7"), "{e}");
}

#[test]
fn csr_traversal_with_chained_loads_emits_every_event_in_program_order() {
    let offsets = vec![0, 3, 3, 4, 9, 10];
    let indices = vec![5, 999, 0, 17, 1, 1, 2, 3, 4, 500];
    let r = run(bag_program(5), image(offsets.clone(), indices.clone()), 128, 64, 1_000);
    assert_eq!(events(&r), expected_events(&offsets, &indices));
    assert_eq!(r.lookups, 10);
    // Each element stream fetches each line once (the offsets' two streams and the index
    // stream all fit one line), then 4 row lines per lookup.
    assert_eq!(r.requests, 2 + 1 + 10 * 4);
    assert_eq!(r.counters.line_reuses, 2 * 4 + 9, "the other elements came from the line buffers");
    assert!(r.max_in_flight <= 128);
}

#[test]
fn empty_bags_and_empty_batches_still_close_properly() {
    let r = run(bag_program(3), image(vec![0, 0, 0, 0], vec![]), 16, 4, 1_000);
    assert_eq!(events(&r), expected_events(&[0, 0, 0, 0], &[]));
    let r = run(bag_program(0), image(vec![0], vec![]), 16, 4, 1_000);
    assert_eq!(events(&r), vec![(3, vec![])]);
}

fn big_bags(bags: u32, per_bag: u32) -> (Vec<u32>, Vec<u32>) {
    let offsets: Vec<u32> = (0..=bags).map(|b| b * per_bag).collect();
    let indices: Vec<u32> = (0..bags * per_bag).map(|j| (j * 7919) % 1000).collect();
    (offsets, indices)
}

#[test]
fn more_outstanding_requests_run_faster_until_bandwidth_bounds() {
    let (offsets, indices) = big_bags(32, 16);
    let t = |mlp| {
        let r = run(bag_program(32), image(offsets.clone(), indices.clone()), mlp, 256, 1);
        assert!(
            r.max_in_flight <= mlp as u64,
            "{} requests in flight with a limit of {mlp}",
            r.max_in_flight
        );
        assert!(r.max_in_flight >= (mlp as u64).min(16), "the unit uses its MLP: peak {}", r.max_in_flight);
        r.end_tick
    };
    let (t1, t4, t32, t128) = (t(1), t(4), t(32), t(128));
    assert!(t1 > 3 * t4, "MLP 1: {t1} ps, MLP 4: {t4} ps");
    assert!(t4 > 2 * t32, "MLP 4: {t4} ps, MLP 32: {t32} ps");
    assert!(t128 <= t32, "MLP 128: {t128} ps, MLP 32: {t32} ps");
    // 64 GB/s moves 64 B per ns: 5 lines per lookup bound the run from below.
    let lines = 32 * 16 * 5 + 64;
    assert!(t128 >= lines * 1_000, "never faster than the bandwidth bound: {t128} ps");
}

#[test]
fn a_slow_core_back_pressures_the_unit_through_the_output_queue() {
    let (offsets, indices) = big_bags(8, 8);
    // The sink pops one entry per 50 ns: 8 * (8 + 2) + 1 = 81 entries take at least 4 us.
    let r = run(bag_program(8), image(offsets.clone(), indices.clone()), 128, 4, 50_000);
    assert_eq!(events(&r), expected_events(&offsets, &indices));
    assert!(r.end_tick >= 81 * 50_000, "{}", r.end_tick);
}

fn dense_image(words: Vec<u32>) -> MemoryImage {
    let mut m = image(vec![0], vec![0]);
    m.add(Region {
        name: "data".into(),
        base: DATA,
        size: words.len() as u64 * 4,
        backing: Backing::Words(words),
    })
    .unwrap();
    m
}

const DATA: u64 = 0x8000;

/// The TMU at 1 GHz, with overrides.
fn tmu() -> AccessUnitConfig {
    AccessUnitConfig::tmu_like(clock())
}

#[test]
fn a_dense_loop_marshals_induction_and_loaded_values() {
    let p = parse(&format!(
        ".au\ntu t0 = dense 3..10\ns0 = ite t0\ns1 = load.u32 [{DATA:#x} + s0 * 4] in t0\n\
         on t0 begin -> 4\non t0 iter -> 5 (s0, s1)\non t0 end -> 6\n"
    ))
    .unwrap();
    let words: Vec<u32> = (0..16).map(|i| 100 + i * i).collect();
    let r = run_cfg(p, dense_image(words.clone()), tmu(), 64, 0);
    let mut want = vec![(4, vec![])];
    want.extend((3..10u64).map(|i| (5, vec![i, words[i as usize] as u64])));
    want.push((6, vec![]));
    assert_eq!(events(&r), want);
    assert_eq!(r.requests, 1, "the seven words share one line, fetched once");
    assert_eq!(r.counters.line_reuses, 6);
    // Every load overlaps: the whole loop takes about one memory round trip, not seven.
    assert!(r.end_tick < 2 * 100_000 + 50_000, "{} ps", r.end_tick);
    assert!(r.end_tick > 100_000, "{} ps", r.end_tick);
}

#[test]
fn element_streams_fetch_each_line_once_whether_it_is_on_its_way_or_arrived() {
    // 40 words over 3 lines, a slow consumer: early elements join a line in flight, later ones
    // find it arrived in the buffer; either way the values are the memory's.
    let p = parse(&format!(
        ".au\ntu t0 = dense 0..40\ns0 = ite t0\ns1 = load.u32 [{DATA:#x} + s0 * 4] in t0\n\
         on t0 iter -> 5 (s0, s1)\non t0 end -> 6\n"
    ))
    .unwrap();
    let words: Vec<u32> = (0..40).map(|i| 7 * i + 1).collect();
    for (outq, gap) in [(64, 0), (2, 50_000)] {
        let r = run(p.clone(), dense_image(words.clone()), 16, outq, gap);
        let mut want: Vec<_> = (0..40u64).map(|i| (5, vec![i, words[i as usize] as u64])).collect();
        want.push((6, vec![]));
        assert_eq!(events(&r), want, "outq {outq}, gap {gap}");
        assert_eq!(r.requests, 3, "outq {outq}, gap {gap}: 160 bytes, 3 lines");
        assert_eq!(r.counters.line_reuses, 37);
    }
}

#[test]
fn an_indexed_traversal_reads_its_index_list_from_memory() {
    // For each outer i: positions 2i..2i+2 of the list at DATA; each index drives a row load.
    let p = parse(&format!(
        ".au\ntu t0 = dense 0..3\ntu t1 = indexed {DATA:#x} from s1 count 2 in t0\n\
         s0 = ite t0\ns1 = alu.mul s0, 2 in t0\ns2 = ite t1\n\
         s3 = load.row {ROW} [{TAB:#x} + s2 * {ROW}] in t1 !lookup\ns4 = fwd s0 in t1\n\
         on t1 iter -> 1 (s2, s3, s4)\non t1 end -> 2\n"
    ))
    .unwrap();
    let list = vec![7, 3, 999, 0, 5, 5];
    let r = run_cfg(p, dense_image(list.clone()), tmu(), 64, 0);
    let mut want = vec![];
    for i in 0..3u64 {
        for j in 0..2 {
            let idx = list[(2 * i + j) as usize] as u64;
            want.push((1, vec![idx, TAB + idx * ROW, i]));
        }
        want.push((2, vec![]));
    }
    assert_eq!(events(&r), want);
    // The 6 index words share one line, then 6 rows of 4 lines.
    assert_eq!(r.requests, 1 + 6 * 4);
    assert_eq!(r.counters.layer_requests[..2], [0, 25]);
}

#[test]
fn chained_indirection_row_addresses_come_from_loaded_indices() {
    // offsets -> indices -> rows: the rows' addresses (buffer operands) prove the indices were
    // really loaded from the image, and every row costs its lines.
    let offsets = vec![0, 2, 5];
    let indices = vec![11, 22, 33, 44, 55];
    let r = run_cfg(bag_program(2), image(offsets.clone(), indices.clone()), tmu(), 64, 0);
    assert_eq!(events(&r), expected_events(&offsets, &indices));
    let rows: Vec<u64> = r.entries.iter().filter(|e| e.control == 1).map(|e| e.operands[0]).collect();
    assert_eq!(rows, indices.iter().map(|&i| TAB + i as u64 * ROW).collect::<Vec<_>>());
    assert_eq!(r.lookups, 5);
    // A row can only be fetched after its index, which comes after the offsets: three serial
    // round trips at least.
    assert!(r.end_tick > 3 * 100_000, "{} ps", r.end_tick);
    // Buffer operands are marshaled whole: the queue writes hold every row.
    assert!(r.bytes_written >= 5 * ROW, "{} bytes written", r.bytes_written);
    // One line per offsets stream and one for the indices: every element after the first in a
    // line comes from its stream's line buffer.
    assert_eq!(r.counters.layer_requests[..2], [2, 1 + 5 * 4]);
}

fn lockstep_program(n: u64, lanes: &str) -> AuProgram {
    parse(&format!(
        ".au\ntu t0 = dense 0..{n}{lanes}\ns0 = ite t0\ns1 = load.row {ROW} [{TAB:#x} + s0 * {ROW}] in t0\n\
         on t0 iter -> 1 (s0, s1)\non t0 end -> 2\n"
    ))
    .unwrap()
}

#[test]
fn lockstep_lanes_mask_the_tail_and_emit_in_lane_order() {
    let r = run_cfg(lockstep_program(13, " lockstep 8"), image(vec![0], vec![0]), tmu(), 64, 0);
    let mut want: Vec<(u32, Vec<u64>)> = (0..13u64).map(|i| (1, vec![i, TAB + i * ROW])).collect();
    want.push((2, vec![]));
    assert_eq!(events(&r), want, "entries only from active lanes, in lane order");
    assert_eq!(r.counters.masked_lanes, 3, "the second step has 5 active lanes of 8");
    assert_eq!(r.requests, 13 * 4, "masked lanes issue nothing");

    // Under a broadcast parent, every parent iteration gets its own masked tail.
    let p = parse(&format!(
        ".au\ntu t0 = dense 0..2 broadcast\ntu t1 = dense 0..13 in t0 lockstep 8\ns0 = ite t0\ns1 = ite t1\n\
         s2 = load.row {ROW} [{TAB:#x} + s1 * {ROW}] in t1\non t1 iter -> 1 (s0, s1)\non t1 end -> 2 (s0)\n"
    ))
    .unwrap();
    let r = run_cfg(p, image(vec![0], vec![0]), tmu(), 64, 0);
    let mut want = vec![];
    for o in 0..2u64 {
        want.extend((0..13u64).map(|i| (1, vec![o, i])));
        want.push((2, vec![o]));
    }
    assert_eq!(events(&r), want);
    assert_eq!(r.counters.masked_lanes, 6);
}

#[test]
fn lockstep_lanes_use_every_lanes_storage_and_run_faster_than_one_lane() {
    let t = |layer: &str| {
        let r = run_cfg(lockstep_program(200, layer), image(vec![0], vec![0]), tmu(), 512, 0);
        assert_eq!(r.entries.len(), 201);
        (r.end_tick, r.max_in_flight)
    };
    // One lane holds 2 KiB / 264 B = 7 rows; eight lanes hold eight times that, so more rows
    // are in flight at once (the peak also counts the queue's writes).
    let (single, single_mlp) = t("");
    let (vector, vector_mlp) = t(" lockstep 8");
    assert!(vector_mlp > single_mlp, "8 lanes: {vector_mlp} in flight, 1 lane: {single_mlp}");
    assert!(3 * vector < 2 * single, "lockstep {vector} ps, single {single} ps");
    // Still bound by bandwidth: 200 rows read and marshaled (written) at 64 B/ns.
    assert!(vector >= 2 * 200 * ROW * 1_000 / 64, "lockstep {vector} ps");
}

/// An engine with the links of a unit not yet built, to try building one.
fn unbuilt() -> (Engine<Node>, AuPorts) {
    let clock = clock();
    let mut e: Engine<Node> = Engine::new();
    let (a, b) = (e.reserve(), e.reserve());
    let link = |name: &str| LinkSpec { name: name.into(), clock, latency_cycles: 1, capacity: 4 };
    let ports = AuPorts {
        mem_req: e.connect(a, b, link("q")).unwrap(),
        mem_resp: e.connect(b, a, link("r")).unwrap(),
        outq: e.connect(a, b, link("o")).unwrap(),
        queue: None,
    };
    (e, ports)
}

#[test]
fn a_unit_too_small_for_the_program_is_refused() {
    let (mut e, ports) = unbuilt();
    let img = Arc::new(image(vec![0], vec![0]));
    let cfg = AccessUnitConfig { lanes: 4, ..tmu() };
    let err = AccessUnit::<Msg>::new(
        "au",
        cfg,
        lockstep_program(13, " lockstep 8"),
        img.clone(),
        ports,
        e.stats_mut(),
    )
    .err()
    .unwrap();
    assert_eq!(
        err.to_string(),
        "access unit: the program needs 8 lanes, the unit has 4 (`access_unit.lanes`)"
    );
    let cfg = AccessUnitConfig { layers: 1, ..tmu() };
    let err = AccessUnit::<Msg>::new("au2", cfg, bag_program(1), img, ports, e.stats_mut()).err().unwrap();
    assert_eq!(
        err.to_string(),
        "access unit: the program needs 2 layers, the unit has 1 (`access_unit.layers`)"
    );
}

#[test]
fn the_outstanding_limit_is_never_exceeded_and_stalls_are_counted() {
    let (offsets, indices) = big_bags(16, 16);
    for limit in [1, 3, 8] {
        let cfg = AccessUnitConfig { max_outstanding: limit, ..tmu() };
        let r = run_cfg(bag_program(16), image(offsets.clone(), indices.clone()), cfg, 64, 0);
        assert_eq!(events(&r), expected_events(&offsets, &indices));
        assert_eq!(r.max_in_flight, limit as u64, "the limit is reached and never passed");
        assert!(r.counters.outstanding_stall_cycles > 0, "limit {limit}: stalls counted");
    }
}

#[test]
fn a_tiny_stream_storage_stalls_the_traversal() {
    let (offsets, indices) = big_bags(16, 16);
    let t = |storage: u64| {
        let cfg = AccessUnitConfig { storage: ByteSize::from_bytes(storage), lanes: 1, ..tmu() };
        let r = run_cfg(bag_program(16), image(offsets.clone(), indices.clone()), cfg, 64, 0);
        assert_eq!(events(&r), expected_events(&offsets, &indices));
        r
    };
    // One iteration of both layers: three scalars (24 B), then two (16 B) and a row.
    let one = 24 + 16 + ROW;
    let (tiny, big) = (t(one), t(16 << 10));
    assert!(tiny.counters.storage_stall_cycles > 0);
    assert!(tiny.counters.storage_stall_cycles > big.counters.storage_stall_cycles);
    assert!(tiny.end_tick > 2 * big.end_tick, "tiny {} ps, big {} ps", tiny.end_tick, big.end_tick);
    // A depth of one: a bag's two bounds, one index line and one row's four lines read, and
    // the four lines of the row it writes into the output queue, at most.
    assert!(tiny.max_in_flight <= 11, "{} lines in flight", tiny.max_in_flight);
    assert!(big.max_in_flight > 11, "{} lines in flight", big.max_in_flight);
}

#[test]
fn a_storage_that_cannot_hold_one_iteration_is_refused() {
    let (mut e, ports) = unbuilt();
    let img = Arc::new(image(vec![0], vec![0]));
    // Two lanes of 295 B each, one byte short of the 296 B iteration.
    let cfg = AccessUnitConfig { storage: ByteSize::from_bytes(2 * 295), lanes: 2, ..tmu() };
    let err =
        AccessUnit::<Msg>::new("au", cfg, bag_program(1), img.clone(), ports, e.stats_mut()).err().unwrap();
    assert_eq!(
        err.to_string(),
        "access unit: each lane's stream storage (295 B: `access_unit.storage` over 2 lanes) cannot hold one \
         iteration of the program's layers (296 B: rows plus 8 B per scalar stream); `access_unit.storage` \
         needs at least 592 B"
    );
    let cfg = AccessUnitConfig { storage: ByteSize::from_bytes(2 * 296), lanes: 2, ..tmu() };
    assert!(AccessUnit::<Msg>::new("au2", cfg, bag_program(1), img, ports, e.stats_mut()).is_ok());
}

#[test]
fn callbacks_of_every_event_and_level_arrive_in_program_order() {
    // Three levels: bags (CSR) -> elements -> an indexed pair per element.
    let p = parse(&format!(
        ".au\ntu t0 = dense 0..3\ntu t1 = range s1..s2 in t0\ntu t2 = indexed {DATA:#x} from s4 count 2 in t1\n\
         s0 = ite t0\ns1 = load.u32 [{OFF:#x} + s0 * 4] in t0\ns2 = load.u32 [{:#x} + s0 * 4] in t0\n\
         s3 = ite t1\ns4 = alu.mul s3, 2 in t1\ns5 = ite t2\n\
         on t0 begin -> 100\non t0 iter -> 101 (s0)\non t1 begin -> 102 (s0)\non t1 iter -> 103 (s3)\n\
         on t2 begin -> 104 (s3)\non t2 iter -> 105 (s5)\non t2 end -> 106\non t1 end -> 107 (s0)\n\
         on t0 end -> 108\n",
        OFF + 4
    ))
    .unwrap();
    let offsets = vec![0, 2, 2, 3];
    let list: Vec<u32> = (0..6).map(|i| 1000 + i).collect();
    let mut img = image(offsets.clone(), vec![0]);
    img.add(Region { name: "list".into(), base: DATA, size: 24, backing: Backing::Words(list.clone()) })
        .unwrap();
    // A slow, narrow output path and a tiny memory window make the timing irregular.
    let cfg = AccessUnitConfig { max_outstanding: 2, outq_chunk_entries: 3, ..tmu() };
    let r = run_cfg(p, img, cfg, 2, 7_000);
    let mut want = vec![(100, vec![])];
    for b in 0..3u64 {
        want.push((101, vec![b]));
        want.push((102, vec![b]));
        for j in offsets[b as usize]..offsets[b as usize + 1] {
            let j = j as u64;
            want.push((103, vec![j]));
            want.push((104, vec![j]));
            for k in 0..2 {
                want.push((105, vec![list[(2 * j + k) as usize] as u64]));
            }
            want.push((106, vec![]));
        }
        want.push((107, vec![b]));
    }
    want.push((108, vec![]));
    assert_eq!(events(&r), want);
}

/// Sizes of the groups of entries the core saw at the same tick.
fn groups(r: &Run) -> Vec<usize> {
    let mut g: Vec<usize> = vec![];
    for (i, t) in r.at.iter().enumerate() {
        if i > 0 && r.at[i - 1] == *t {
            *g.last_mut().unwrap() += 1;
        } else {
            g.push(1);
        }
    }
    g
}

#[test]
fn the_output_queue_hands_over_whole_chunks_and_writes_them_to_memory() {
    let (offsets, indices) = big_bags(8, 8);
    // 8 bags x (8 + 2) + 1 = 81 entries; 16-entry chunks, published only when full or at the end.
    let cfg = AccessUnitConfig { outq_chunk_entries: 16, outq_flush_cycles: u32::MAX, ..tmu() };
    let r = run_cfg(bag_program(8), image(offsets.clone(), indices.clone()), cfg, 64, 0);
    assert_eq!(events(&r), expected_events(&offsets, &indices));
    assert_eq!(groups(&r), vec![16, 16, 16, 16, 16, 1], "entries become visible a chunk at a time");
    assert_eq!(r.counters.chunks_written, 6);
    assert_eq!(r.counters.chunks_flushed, 1, "only the last chunk goes out partial");
    // Each full chunk: 16 control ids (one line) + 8 bytes per bag id + 256 B per row.
    assert!(r.counters.write_requests >= 6 * 2, "{}", r.counters.write_requests);
    assert!(r.bytes_written >= 64 * ROW + 81 * 4, "{}", r.bytes_written);

    // A short flush timeout publishes partial chunks while the unit waits on memory.
    let cfg = AccessUnitConfig { outq_chunk_entries: 16, outq_flush_cycles: 0, max_outstanding: 4, ..tmu() };
    let r = run_cfg(bag_program(8), image(offsets.clone(), indices.clone()), cfg, 64, 0);
    assert_eq!(events(&r), expected_events(&offsets, &indices));
    assert!(r.counters.chunks_flushed > 1, "{:?}", r.counters);
    assert!(groups(&r).iter().all(|&g| g <= 16));
}

#[test]
fn one_chunk_of_depth_stalls_more_than_double_buffering() {
    let (offsets, indices) = big_bags(16, 8);
    let t = |chunks: u32| {
        let cfg = AccessUnitConfig {
            outq_chunk_entries: 8,
            outq_chunks: chunks,
            outq_flush_cycles: u32::MAX,
            ..one_lane(128)
        };
        // The core's window is one chunk and it takes an entry every 4 ns.
        let r = run_cfg(bag_program(16), image(offsets.clone(), indices.clone()), cfg, 8, 4_000);
        assert_eq!(events(&r), expected_events(&offsets, &indices));
        r
    };
    let (one, two) = (t(1), t(2));
    assert!(one.counters.outq_stall_cycles > 0);
    assert!(
        one.counters.outq_stall_cycles > two.counters.outq_stall_cycles,
        "1 chunk: {} stall cycles, 2 chunks: {}",
        one.counters.outq_stall_cycles,
        two.counters.outq_stall_cycles
    );
    assert!(one.end_tick > two.end_tick, "1 chunk: {} ps, 2 chunks: {} ps", one.end_tick, two.end_tick);
}

#[test]
fn a_bad_index_faults_instead_of_panicking() {
    let clock = clock();
    let link = |name: &str, capacity: u32| LinkSpec { name: name.into(), clock, latency_cycles: 1, capacity };
    let mut e: Engine<Node> = Engine::new();
    let (au, mem, sink) = (e.reserve(), e.reserve(), e.reserve());
    let req = e.connect(au, mem, link("req", 64)).unwrap();
    let resp = e.connect(mem, au, link("resp", 64)).unwrap();
    let outq = e.connect(au, sink, link("outq", 64)).unwrap();
    let ports = AuPorts { mem_req: req, mem_resp: resp, outq, queue: None };
    // Index 5000 is past the 1000-row table.
    let img = image(vec![0, 2], vec![3, 5000]);
    let unit = AccessUnit::new("au", tmu(), bag_program(1), Arc::new(img), ports, e.stats_mut()).unwrap();
    let mcfg = SimpleMemoryConfig {
        latency: TimeSpan::from_ns(100),
        bandwidth: Bandwidth::from_bytes_per_second(64_000_000_000),
    };
    e.install(au, Node::Au(unit)).unwrap();
    let memory = SimpleMemory::new("mem", mcfg, &[(req, resp)], e.stats_mut()).unwrap();
    e.install(mem, Node::Mem(memory)).unwrap();
    e.install(sink, Node::Sink(Sink::new(outq, 0))).unwrap();
    let _ = e.run(None);
    let Some(Node::Au(a)) = e.component(au) else { unreachable!() };
    assert!(!a.finished());
    assert!(a.fault().is_some_and(|f| f.to_string().starts_with("stream s5")), "{:?}", a.fault());
}
