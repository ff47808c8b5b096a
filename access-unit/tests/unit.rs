//! The access unit on the engine: functional output, program order, limits and back-pressure.

use access_unit::{AccessUnit, AccessUnitConfig, AuPorts, AuProgram, OutqEntry, parse};
use mem_model::{Backing, MemRequest, MemResponse, MemoryImage, Region, SimpleMemory, SimpleMemoryConfig};
use sim_core::{
    Bandwidth, ByteSize, Clock, Component, Ctx, Engine, Frequency, LinkId, LinkSpec, TimeSpan, Wake,
};
use std::sync::Arc;

enum Msg {
    Req(MemRequest),
    Resp(MemResponse),
    Outq(OutqEntry),
}

sim_core::carries!(Msg { Req(MemRequest), Resp(MemResponse), Outq(OutqEntry) });

/// Pops one output-queue entry every `gap` ps and records it; counts requests in flight.
struct Sink {
    inp: LinkId,
    gap: u64,
    got: Vec<OutqEntry>,
    armed: bool,
}

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
            Node::Sink(s) => {
                if matches!(why, Wake::Timer(_)) {
                    s.armed = false;
                    if let Some(Msg::Outq(e)) = ctx.recv(s.inp) {
                        s.got.push(e);
                    }
                }
                if !s.armed && ctx.peek(s.inp).is_some() {
                    s.armed = true;
                    ctx.schedule_in(s.gap, 0);
                }
            }
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

const OFF: u64 = 0x1000;
const IND: u64 = 0x2000;
const TAB: u64 = 0x10_0000;
const ROW: u64 = 256;

fn bag_program(bags: u64) -> AuProgram {
    parse(&format!(
        ".au
tu t0 = dense 0..{bags}
tu t1 = range s1..s2 in t0
s0 = ite t0
s1 = load.u32 [{OFF:#x} + s0 * 4] in t0
s2 = load.u32 [{:#x} + s0 * 4] in t0
s3 = ite t1
s4 = load.u32 [{IND:#x} + s3 * 4] in t1
s5 = load.row {ROW} [{TAB:#x} + s4 * {ROW}] in t1 !lookup
on t1 begin -> 0
on t1 iter -> 1 (s5)
on t1 end -> 2 (s0)
on t0 end -> 3
",
        OFF + 4
    ))
    .expect("valid program")
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
    end_tick: u64,
    requests: u64,
    lookups: u64,
    max_in_flight: u64,
}

fn run(program: AuProgram, img: MemoryImage, max_outstanding: u32, outq_capacity: u32, sink_gap: u64) -> Run {
    let clock = Clock::new(Frequency::from_hz(1_000_000_000)).unwrap();
    let link = |name: &str, capacity: u32| LinkSpec { name: name.into(), clock, latency_cycles: 1, capacity };
    let mut e: Engine<Node> = Engine::new();
    let (au, mem, sink) = (e.reserve(), e.reserve(), e.reserve());
    let req = e.connect(au, mem, link("req", 1024)).unwrap();
    let resp = e.connect(mem, au, link("resp", 1024)).unwrap();
    let outq = e.connect(au, sink, link("outq", outq_capacity)).unwrap();
    let cfg = AccessUnitConfig {
        clock,
        storage: ByteSize::from_bytes(16 << 10),
        max_outstanding,
        line_bytes: 64,
        requests_per_cycle: 8,
        events_per_cycle: 1,
    };
    let ports = AuPorts { mem_req: req, mem_resp: resp, outq };
    let unit = AccessUnit::new("au", cfg, program, Arc::new(img), ports, e.stats_mut()).unwrap();
    let mcfg = SimpleMemoryConfig {
        latency: TimeSpan::from_ns(100),
        bandwidth: Bandwidth::from_bytes_per_second(64_000_000_000),
    };
    let memory = SimpleMemory::new("mem", mcfg, &[(req, resp)], e.stats_mut()).unwrap();
    e.install(au, Node::Au(unit)).unwrap();
    e.install(mem, Node::Mem(memory)).unwrap();
    e.install(sink, Node::Sink(Sink { inp: outq, gap: sink_gap, got: vec![], armed: false })).unwrap();
    let s = e.run(None).unwrap();
    let Some(Node::Au(a)) = e.component(au) else { unreachable!() };
    assert!(a.finished(), "unit finished");
    let Some(Node::Sink(k)) = e.component(sink) else { unreachable!() };
    assert_eq!(
        e.stats().lookup_counter("mem.reads"),
        Some(a.counters().requests),
        "memory served every request"
    );
    Run {
        entries: k.got.clone(),
        end_tick: s.end_tick,
        requests: a.counters().requests,
        lookups: a.counters().lookups,
        max_in_flight: a.counters().peak_outstanding as u64,
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
    // offsets: 2 loads per bag (5 bags) + index and 4 row lines per lookup.
    assert_eq!(r.requests, 10 + 10 * 5);
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
