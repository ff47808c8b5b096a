//! Finer properties of the access unit stated in its docs, README.md ("The machine"), DESIGN.md
//! section 4 and REFERENCE.md section 2, checked from outside the unit (a recording memory and a
//! recording core): storage depth per lane (masked lockstep steps included), the request limit,
//! per-cycle caps, arbitration, line requests, the double-buffered output queue, empty ranges,
//! callback order, stall counters, and randomized CSR batches against a reference.

mod common;

use access_unit::{AccessUnit, AccessUnitConfig, AuCounters, AuPorts, AuProgram, OutqEntry, parse};
use common::{IND, Msg, OFF, Sink, TAB, bags_program, clock};
use mem_model::{Backing, MemRequest, MemResponse, MemoryImage, Region};
use sim_core::{ByteSize, Component, Ctx, Engine, LinkId, LinkSpec, Priority, Wake};
use std::sync::Arc;

/// A memory that answers every request after `lat(request)` ps, with no bandwidth limit, and
/// logs what it saw: (tick received, request) and (tick answered, request id).
struct RecMem {
    inp: LinkId,
    out: LinkId,
    lat: fn(&MemRequest) -> u64,
    pending: Vec<(u64, MemResponse)>,
    reqs: Vec<(u64, MemRequest)>,
    resps: Vec<(u64, MemRequest)>,
}

#[allow(clippy::large_enum_variant)]
enum Node {
    Au(AccessUnit<Msg>),
    Mem(RecMem),
    Sink(Sink),
}

impl Component for Node {
    type Msg = Msg;
    fn name(&self) -> &str {
        match self {
            Node::Au(a) => a.name(),
            Node::Mem(_) => "mem",
            Node::Sink(_) => "sink",
        }
    }
    fn wake(&mut self, why: Wake, ctx: &mut Ctx<'_, Msg>) {
        match self {
            Node::Au(a) => a.wake(why, ctx),
            Node::Mem(m) => {
                let now = ctx.now();
                while let Some(msg) = ctx.recv(m.inp) {
                    if let Msg::Req(r) = msg {
                        let done = now + (m.lat)(&r);
                        m.reqs.push((now, r));
                        m.pending.push((done, r.respond()));
                        ctx.schedule_at(done, Priority::DEFAULT, 0);
                    }
                }
                m.pending.sort_by_key(|p| p.0);
                while let Some(&(done, resp)) = m.pending.first() {
                    if done > now {
                        break;
                    }
                    if ctx.send(m.out, Msg::Resp(resp)).is_err() {
                        panic!("response link full");
                    }
                    let req = m.reqs.iter().find(|(_, r)| r.id == resp.id && r.addr == resp.addr).unwrap().1;
                    m.resps.push((now, req));
                    m.pending.remove(0);
                    ctx.progress();
                }
            }
            Node::Sink(s) => s.wake(why, ctx),
        }
    }
    fn busy(&self) -> bool {
        match self {
            Node::Au(a) => a.busy(),
            Node::Mem(m) => !m.pending.is_empty(),
            Node::Sink(_) => false,
        }
    }
    fn status(&self) -> String {
        match self {
            Node::Au(a) => a.status(),
            _ => String::new(),
        }
    }
}

const DATA: u64 = 0x8000;

fn tmu() -> AccessUnitConfig {
    AccessUnitConfig::tmu_like(clock())
}

fn image(offsets: Vec<u32>, indices: Vec<u32>, data: Vec<u32>) -> MemoryImage {
    let mut m = MemoryImage::new();
    let w = |v: Vec<u32>| if v.is_empty() { vec![0] } else { v };
    for (name, base, words) in
        [("offsets", OFF, w(offsets)), ("indices", IND, w(indices)), ("data", DATA, w(data))]
    {
        m.add(Region {
            name: name.into(),
            base,
            size: words.len() as u64 * 4,
            backing: Backing::Words(words),
        })
        .unwrap();
    }
    m.add(Region {
        name: "table".into(),
        base: TAB,
        size: 1 << 20,
        backing: Backing::Procedural { seed: 1, table: 0, dim: 64 },
    })
    .unwrap();
    m
}

struct Run {
    entries: Vec<OutqEntry>,
    at: Vec<u64>,
    counters: AuCounters,
    /// (tick the memory received it, request)
    reqs: Vec<(u64, MemRequest)>,
    /// (tick the memory answered it, request)
    resps: Vec<(u64, MemRequest)>,
    finished: bool,
}

impl Run {
    fn events(&self) -> Vec<(u32, Vec<u64>)> {
        self.entries.iter().map(|e| (e.control, e.operands[..e.len as usize].to_vec())).collect()
    }
    fn reads(&self) -> Vec<(u64, u64)> {
        self.reqs.iter().filter(|(_, r)| !r.write).map(|(t, r)| (*t, r.addr)).collect()
    }
    /// Most requests the memory held at once (received, not yet answered), reads and writes.
    fn memory_in_flight(&self) -> usize {
        let mut ev: Vec<(u64, i32)> = self.reqs.iter().map(|(t, _)| (*t, 1)).collect();
        // An answer at the same tick as a request leaves first (sorted -1 before +1).
        ev.extend(self.resps.iter().map(|(t, _)| (*t, -1)));
        ev.sort();
        let (mut n, mut peak) = (0i32, 0i32);
        for (_, d) in ev {
            n += d;
            peak = peak.max(n);
        }
        peak as usize
    }
}

/// Runs `program` to completion (or to `until` ps), memory latency `lat`, a core link of
/// `outq` entries popped every `gap` ps.
fn run_full(
    program: AuProgram,
    img: MemoryImage,
    cfg: AccessUnitConfig,
    outq: u32,
    gap: u64,
    lat: fn(&MemRequest) -> u64,
    until: Option<u64>,
) -> Run {
    let clock = cfg.clock;
    let link = |name: &str, capacity: u32| LinkSpec { name: name.into(), clock, latency_cycles: 1, capacity };
    let mut e: Engine<Node> = Engine::new();
    let (au, mem, sink) = (e.reserve(), e.reserve(), e.reserve());
    let req = e.connect(au, mem, link("req", 4096)).unwrap();
    let resp = e.connect(mem, au, link("resp", 4096)).unwrap();
    let oq = e.connect(au, sink, link("outq", outq)).unwrap();
    let ports = AuPorts { mem_req: req, mem_resp: resp, outq: oq, queue: None };
    let unit = AccessUnit::new("au", cfg, program, Arc::new(img), ports, e.stats_mut()).unwrap();
    e.install(au, Node::Au(unit)).unwrap();
    e.install(
        mem,
        Node::Mem(RecMem { inp: req, out: resp, lat, pending: vec![], reqs: vec![], resps: vec![] }),
    )
    .unwrap();
    e.install(sink, Node::Sink(Sink::new(oq, gap))).unwrap();
    let r = e.run(until);
    if until.is_none() {
        r.unwrap();
    }
    let Some(Node::Au(a)) = e.component(au) else { unreachable!() };
    let (finished, counters) = (a.finished(), a.counters());
    if until.is_none() {
        assert!(finished, "unit finished: {}", a.status());
    }
    let Some(Node::Mem(m)) = e.component(mem) else { unreachable!() };
    let (reqs, resps) = (m.reqs.clone(), m.resps.clone());
    let Some(Node::Sink(k)) = e.component(sink) else { unreachable!() };
    Run { entries: k.got.clone(), at: k.at.clone(), counters, reqs, resps, finished }
}

fn flat(_: &MemRequest) -> u64 {
    100_000
}

fn run(program: AuProgram, img: MemoryImage, cfg: AccessUnitConfig) -> Run {
    run_full(program, img, cfg, 1024, 0, flat, None)
}

fn p(text: &str) -> AuProgram {
    parse(text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

/// The bag program of tests/unit.rs with a row of `row` bytes.
fn bag_program(bags: u64, row: u64) -> AuProgram {
    bags_program(bags, row, "", "")
}

fn expected_bags(offsets: &[u32], indices: &[u32], row: u64) -> Vec<(u32, Vec<u64>)> {
    let mut v = vec![];
    for b in 0..offsets.len() - 1 {
        v.push((0, vec![]));
        for j in offsets[b]..offsets[b + 1].max(offsets[b]) {
            v.push((1, vec![TAB + indices[j as usize] as u64 * row]));
        }
        v.push((2, vec![b as u64]));
    }
    v.push((3, vec![]));
    v
}

// ---------------------------------------------------------------------------------------------
// Per-lane storage budget with masked lockstep tails.

/// A broadcast parent of two iterations: the first has 9 children (a full step of 8 lanes and
/// a masked step of 1), the second 1 (a masked step). Rows of 64 B at TAB + child * 64.
fn uneven_children() -> AuProgram {
    p(&format!(
        ".au
tu t0 = dense 0..2 broadcast
tu t1 = range s1..s2 in t0 lockstep 8
s0 = ite t0
s1 = alu.mul s0, 9 in t0
s2 = alu.add s0, 9 in t0
s3 = ite t1
s4 = load.row 64 [{TAB:#x} + s3 * 64] in t1
on t1 iter -> 1 (s3)
on t1 end -> 2 (s0)
"
    ))
}

#[test]
fn uneven_children_program_has_the_bounds_the_storage_test_assumes() {
    let r = run(uneven_children(), image(vec![], vec![], vec![]), tmu());
    let mut want: Vec<(u32, Vec<u64>)> = (0..9u64).map(|i| (1, vec![i])).collect();
    want.push((2, vec![0]));
    want.push((1, vec![9]));
    want.push((2, vec![1]));
    assert_eq!(r.events(), want);
    assert_eq!(r.counters.masked_lanes, 7 + 7);
}

#[test]
fn a_lane_never_holds_more_iterations_than_its_storage_allows_with_masked_tails() {
    // One lane-iteration: t0 has 3 scalars (24 B), t1 one scalar and a 64 B row (72 B): 96 B.
    // A depth of 2 per lane: 192 B per lane, 8 lanes.
    let cfg = AccessUnitConfig { storage: ByteSize::from_bytes(8 * 192), ..tmu() };
    // Rows do not come back within the window looked at: every row requested is live, so it
    // holds its lane's storage.
    let r = run_full(
        uneven_children(),
        image(vec![], vec![], vec![]),
        cfg,
        1024,
        0,
        |_| 1_000_000,
        Some(500_000),
    );
    let rows: Vec<u64> = r.reads().iter().map(|&(_, a)| (a - TAB) / 64).collect();
    assert!(rows.contains(&0) && rows.contains(&8), "parent 0's two steps were requested: {rows:?}");
    // Lane 0's iterations: child 0 and child 8 of parent 0, child 9 (j = 0) of parent 1.
    let lane0: Vec<u64> = rows.iter().copied().filter(|&v| v == 0 || v == 8 || v == 9).collect();
    assert!(
        lane0.len() <= 2,
        "lane 0 holds {} iterations at once with a depth of 2: rows {rows:?}",
        lane0.len()
    );
}

#[test]
fn a_single_layer_holds_storage_per_lane_over_its_iteration_bytes_rows() {
    // One scalar and a 256 B row: 264 B an iteration; 2 KiB per lane holds 7 (REFERENCE.md
    // section 2: 8 lanes x 2 KiB). Lockstep 8 uses all eight lanes: 56.
    for (layer, want) in [("", 7), (" lockstep 8", 56)] {
        let prog = p(&format!(
            ".au\ntu t0 = dense 0..200{layer}\ns0 = ite t0\ns1 = load.row 256 [{TAB:#x} + s0 * 256] in t0\n\
             on t0 iter -> 1 (s0)\n"
        ));
        // A request limit that does not bind (56 rows of 4 lines).
        let cfg = AccessUnitConfig { max_outstanding: 1024, ..tmu() };
        let r = run_full(prog, image(vec![], vec![], vec![]), cfg, 1024, 0, |_| 1_000_000, Some(500_000));
        let rows: std::collections::BTreeSet<u64> = r.reads().iter().map(|&(_, a)| (a - TAB) / 256).collect();
        assert_eq!(rows.len(), want, "layer {layer:?}: rows requested while none has come back");
    }
}

#[test]
fn the_memory_never_holds_more_requests_than_the_limit_reads_and_queue_writes_together() {
    let offsets: Vec<u32> = (0..=12).map(|b| b * 6).collect();
    let indices: Vec<u32> = (0..72).map(|j| (j * 37) % 500).collect();
    for limit in [1, 2, 5, 17] {
        // Small chunks so queue writes compete with reads for the limit.
        let cfg = AccessUnitConfig { max_outstanding: limit, outq_chunk_entries: 2, ..tmu() };
        let r = run_full(
            bag_program(12, 256),
            image(offsets.clone(), indices.clone(), vec![]),
            cfg,
            4,
            3_000,
            flat,
            None,
        );
        assert_eq!(r.events(), expected_bags(&offsets, &indices, 256));
        let seen = r.memory_in_flight();
        assert!(seen <= limit as usize, "limit {limit}: the memory held {seen} requests at once");
        assert!(r.counters.peak_outstanding <= limit);
        assert!(r.reqs.iter().any(|(_, q)| q.write), "queue writes went to memory");
    }
}

#[test]
fn an_unaligned_row_spanning_lines_requests_each_line_it_touches_once() {
    // Rows of 100 B at 100 B strides: row i covers [100 i, 100 i + 100), 2 or 3 lines.
    let prog = p(&format!(
        ".au\ntu t0 = dense 0..6\ns0 = ite t0\ns1 = load.row 100 [{:#x} + s0 * 100] in t0 !lookup\n\
         on t0 iter -> 1 (s1)\n",
        TAB + 36
    ));
    let r = run(prog, image(vec![], vec![], vec![]), tmu());
    let want: Vec<(u32, Vec<u64>)> = (0..6u64).map(|i| (1, vec![TAB + 36 + 100 * i])).collect();
    assert_eq!(r.events(), want);
    let mut got: Vec<u64> = r.reads().iter().map(|&(_, a)| a).collect();
    got.sort();
    let mut need = vec![];
    for i in 0..6u64 {
        let (a, b) = (TAB + 36 + 100 * i, TAB + 36 + 100 * i + 99);
        need.extend((a / 64..=b / 64).map(|l| l * 64));
    }
    need.sort();
    assert_eq!(got, need, "one request per line of each row, line-aligned");
    assert_eq!(r.counters.lookups, 6);
}

#[test]
fn a_range_whose_end_is_before_its_begin_is_empty_but_opens_and_closes() {
    let offsets = vec![0, 3, 1, 4, 4];
    let indices = vec![5, 6, 7, 8];
    let r = run(bag_program(4, 64), image(offsets.clone(), indices.clone(), vec![]), tmu());
    assert_eq!(r.events(), expected_bags(&offsets, &indices, 64));
    // A dense root with end before begin: begin and end events, no iteration.
    let prog = p(".au\ntu t0 = dense 5..2\ntu t1 = dense 0..3 in t0\ns0 = ite t0\non t0 begin -> 7\n\
                  on t0 iter -> 8 (s0)\non t1 begin -> 9\non t0 end -> 10\n");
    let r = run(prog, image(vec![], vec![], vec![]), tmu());
    assert_eq!(r.events(), vec![(7, vec![]), (10, vec![])]);
    assert!(r.reqs.iter().all(|(_, q)| q.write));
}

#[test]
fn an_indexed_root_and_a_zero_count_indexed_level() {
    let list: Vec<u32> = (0..20).map(|i| 1000 + 3 * i).collect();
    let prog = p(&format!(
        ".au\ntu t0 = indexed {DATA:#x} from 2 count 5\ntu t1 = indexed {DATA:#x} from s1 count s2 in t0\n\
         s0 = ite t0\ns1 = alu.sub s0, 1000 in t0\ns2 = alu.rem s0, 2 in t0\ns3 = ite t1\n\
         on t0 iter -> 1 (s0)\non t1 begin -> 2 (s2)\non t1 iter -> 3 (s3)\non t1 end -> 4\n"
    ));
    let r = run(prog, image(vec![], vec![], list.clone()), tmu());
    let mut want = vec![];
    for pos in 2..7usize {
        let v = list[pos] as u64;
        let (from, count) = ((v - 1000) as usize, v % 2);
        want.push((1, vec![v]));
        want.push((2, vec![count]));
        for &x in &list[from..from + count as usize] {
            want.push((3, vec![x as u64]));
        }
        want.push((4, vec![]));
    }
    assert_eq!(r.events(), want);
}

/// One lockstep step of 4 lanes, each loading a 128 B row (two lines) and sending its index.
fn four_lanes_of_rows() -> AuProgram {
    p(&format!(
        ".au\ntu t0 = dense 0..4 lockstep 4\ns0 = ite t0\ns1 = load.row 128 [{TAB:#x} + s0 * 128] in t0\n\
         on t0 iter -> 1 (s0)\n"
    ))
}

/// Rows of lane 3 (child 3 mod 4) take 5 us; the others 100 ns.
fn lane3_slow(r: &MemRequest) -> u64 {
    if !r.write && r.addr >= TAB && ((r.addr - TAB) / 128) % 4 == 3 { 5_000_000 } else { 100_000 }
}

#[test]
fn a_lockstep_step_emits_only_once_every_active_lane_is_ready() {
    let prog = four_lanes_of_rows();
    let cfg = AccessUnitConfig { outq_chunk_entries: 1, ..tmu() };
    let r = run_full(prog, image(vec![], vec![], vec![]), cfg, 64, 0, lane3_slow, None);
    assert_eq!(r.events(), (0..4u64).map(|i| (1, vec![i])).collect::<Vec<_>>());
    assert!(r.at[0] >= 5_000_000, "lane 0's event reached the core at {} ps, before lane 3's row", r.at[0]);
}

#[test]
fn lanes_of_a_layer_take_line_requests_round_robin() {
    // One step of 4 lanes, 2-line rows, one request a cycle: lanes alternate line by line.
    let prog = four_lanes_of_rows();
    let cfg = AccessUnitConfig { requests_per_cycle: 1, ..tmu() };
    let r = run(prog, image(vec![], vec![], vec![]), cfg);
    let rows: Vec<u64> = r.reads().iter().map(|&(_, a)| (a - TAB) / 128).collect();
    assert_eq!(rows, vec![0, 1, 2, 3, 0, 1, 2, 3]);
    let ticks: Vec<u64> = r.reads().iter().map(|&(t, _)| t).collect();
    assert!(ticks.windows(2).all(|w| w[0] < w[1]), "one request per cycle: {ticks:?}");
}

#[test]
fn at_most_requests_per_cycle_lines_and_events_per_cycle_events() {
    let prog = p(&format!(
        ".au\ntu t0 = dense 0..64 lockstep 8\ns0 = ite t0\ns1 = load.row 256 [{TAB:#x} + s0 * 256] in t0\n\
         on t0 iter -> 1 (s0)\n"
    ));
    let cfg =
        AccessUnitConfig { requests_per_cycle: 3, events_per_cycle: 2, outq_chunk_entries: 64, ..tmu() };
    let r = run(prog, image(vec![], vec![], vec![]), cfg);
    let mut per_tick = std::collections::BTreeMap::<u64, u32>::new();
    for (t, q) in &r.reqs {
        if !q.write {
            *per_tick.entry(*t).or_default() += 1;
        }
    }
    assert!(per_tick.values().all(|&n| n <= 3), "{per_tick:?}");
    assert_eq!(r.reads().len(), 64 * 4);
    // 64 events at 2 a cycle take 32 cycles at least after the first row is back (~100 ns).
    assert!(r.counters.finish_tick.unwrap() >= 100_000 + 32_000);
}

#[test]
fn a_partial_chunk_goes_out_after_the_flush_timeout_not_before_not_much_later() {
    // Row 0 is back at ~100 ns, row 1 only at 20 us: event 0 sits alone in a partial chunk.
    fn lat(r: &MemRequest) -> u64 {
        if !r.write && r.addr >= TAB + 64 { 20_000_000 } else { 100_000 }
    }
    let prog = p(&format!(
        ".au\ntu t0 = dense 0..2\ns0 = ite t0\ns1 = load.row 64 [{TAB:#x} + s0 * 64] in t0\non t0 iter -> 1 (s0)\n"
    ));
    let t = |flush: u32| {
        let cfg = AccessUnitConfig { outq_flush_cycles: flush, outq_chunk_entries: 16, ..tmu() };
        let r = run_full(prog.clone(), image(vec![], vec![], vec![]), cfg, 64, 0, lat, None);
        assert_eq!(r.events(), vec![(1, vec![0]), (1, vec![1])]);
        r.at[0]
    };
    let (never, f0, f1000) = (t(u32::MAX), t(0), t(1000));
    assert!(never >= 20_000_000, "flush only at the end: {never}");
    // Event 0 is written at ~102 ns; its chunk write takes 100 ns more.
    assert!(f0 < 400_000, "flush 0: {f0}");
    assert!((1_100_000..1_500_000).contains(&f1000), "flush 1000 cycles: {f1000}");
}

fn counting_loop(n: u64) -> AuProgram {
    p(&format!(".au\ntu t0 = dense 0..{n}\ns0 = ite t0\non t0 iter -> 1 (s0)\n"))
}

#[test]
fn double_buffering_never_overwrites_the_chunk_the_core_is_reading() {
    // 4-entry chunks, two of them, the core's window one chunk (the DAE preset's shape: 32, 2,
    // 32), and a core taking an entry every 10 ns. Chunk c lives in slot c % 2: the unit may
    // write chunk c + 2 only once the core has read all of chunk c (REFERENCE.md section 2:
    // "the core consumes a full chunk while the unit fills the other").
    let cfg =
        AccessUnitConfig { outq_chunk_entries: 4, outq_chunks: 2, outq_flush_cycles: u32::MAX, ..tmu() };
    let r = run_full(counting_loop(40), image(vec![], vec![], vec![]), cfg, 4, 10_000, |_| 1_000, None);
    assert_eq!(r.events(), (0..40u64).map(|i| (1, vec![i])).collect::<Vec<_>>());
    for (t, q) in r.reqs.iter().filter(|(_, q)| q.write) {
        let c = (q.id & ((1 << 48) - 1)) as usize;
        if c >= 2 {
            let read_by = r.at[4 * (c - 2) + 3];
            assert!(
                *t >= read_by,
                "chunk {c} written at {t} ps into slot {}, whose chunk {} the core reads until {read_by} ps",
                c % 2,
                c - 2
            );
        }
    }
}

#[test]
fn a_stalled_core_leaves_the_unit_two_chunks_in_all() {
    // The core never pops: its window (one chunk) fills, then the unit may fill one more chunk
    // and must stop: two chunks of entries in all (the DAE preset's comment: "the core side
    // holds one chunk: two in all with the unit's filling one").
    let cfg =
        AccessUnitConfig { outq_chunk_entries: 4, outq_chunks: 2, outq_flush_cycles: u32::MAX, ..tmu() };
    let r = run_full(
        counting_loop(40),
        image(vec![], vec![], vec![]),
        cfg,
        4,
        u64::MAX,
        |_| 1_000,
        Some(2_000_000),
    );
    assert!(!r.finished);
    assert!(r.counters.events <= 8, "{} events written with a stalled core", r.counters.events);
}

/// Latency from a hash of the address: 20 to 620 ns, so answers come back out of order.
fn scrambled(r: &MemRequest) -> u64 {
    20_000 + (r.addr.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40) % 600_000
}

/// The bag program with a broadcast bag layer over a lockstep element layer (the compiler's
/// shape for vectorized lookups).
fn lockstep_bags(bags: u64, row: u64, lanes: u32) -> AuProgram {
    bags_program(bags, row, " broadcast", &format!(" lockstep {lanes}"))
}

#[test]
fn loaded_indices_and_program_order_survive_out_of_order_answers_and_tight_limits() {
    let mut seed = 12345u64;
    let mut rnd = |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    for case in 0..24 {
        let bags = 1 + rnd(20);
        let mut offsets = vec![0u32];
        for _ in 0..bags {
            let last = *offsets.last().unwrap();
            offsets.push(last + rnd(13) as u32);
        }
        let n = *offsets.last().unwrap();
        let indices: Vec<u32> = (0..n).map(|_| rnd(3000) as u32).collect();
        let row = [4u64, 64, 100, 256][case % 4];
        let cfg = AccessUnitConfig {
            max_outstanding: [1, 3, 16, 128][(case / 4) % 4] as u32,
            outq_chunk_entries: [1, 3, 32][case % 3] as u32,
            outq_flush_cycles: [0, 64, u32::MAX][(case / 3) % 3],
            storage: ByteSize::from_bytes(8 * [400, 2048][case % 2]),
            ..tmu()
        };
        let lanes = [2u32, 4, 8][case % 3];
        for (what, prog) in
            [("single", bag_program(bags, row)), ("lockstep", lockstep_bags(bags, row, lanes))]
        {
            let r = run_full(
                prog,
                image(offsets.clone(), indices.clone(), vec![]),
                cfg,
                8,
                2_000 * (case as u64 % 3),
                scrambled,
                None,
            );
            assert_eq!(r.events(), expected_bags(&offsets, &indices, row), "case {case} {what}: {offsets:?}");
            assert_eq!(r.counters.lookups, n as u64, "case {case} {what}");
            assert!(r.memory_in_flight() <= cfg.max_outstanding as usize, "case {case} {what}");
        }
    }
}

#[test]
fn operands_keep_registration_order_across_levels_and_kinds() {
    let prog = p(&format!(
        ".au\ntu t0 = dense 2..4\ntu t1 = dense 0..3 in t0\ns0 = ite t0\ns1 = alu.mul s0, 10 in t0\n\
         s2 = ite t1\ns3 = load.row 64 [{TAB:#x} + s2 * 64] in t1\ns4 = fwd s1 in t1\ns5 = alu.add s2, s1 in t1\n\
         on t1 iter -> 5 (s5, s0, s3, s4)\non t1 iter -> 6 (s2)\non t1 begin -> 4 (s1, s0)\n\
         on t1 end -> 7 (s0, s1)\non t0 iter -> 3 (s1)\n"
    ));
    let r = run_full(prog, image(vec![], vec![], vec![]), tmu(), 64, 0, scrambled, None);
    let mut want = vec![];
    for o in 2..4u64 {
        want.push((3, vec![10 * o]));
        want.push((4, vec![10 * o, o]));
        for i in 0..3u64 {
            want.push((5, vec![i + 10 * o, o, TAB + i * 64, 10 * o]));
            want.push((6, vec![i]));
        }
        want.push((7, vec![o, 10 * o]));
    }
    assert_eq!(r.events(), want);
}

#[test]
fn chunk_writes_carry_control_ids_and_whole_rows_in_separate_slots() {
    // 4-entry chunks; each entry a scalar and a 100 B row: 108 B of data. 10 entries: chunks of
    // 4, 4, 2 -> (1 + 7) + (1 + 7) + (1 + 4) line writes.
    let prog = p(&format!(
        ".au\ntu t0 = dense 0..10\ns0 = ite t0\ns1 = load.row 100 [{TAB:#x} + s0 * 100] in t0\n\
         on t0 iter -> 1 (s0, s1)\n"
    ));
    let base = 0x40_0000_0000u64;
    let cfg = AccessUnitConfig { outq_chunk_entries: 4, outq_base: base, ..tmu() };
    let r = run(prog, image(vec![], vec![], vec![]), cfg);
    let writes: Vec<(u64, u64)> =
        r.reqs.iter().filter(|(_, q)| q.write).map(|(_, q)| (q.id & ((1 << 48) - 1), q.addr)).collect();
    assert_eq!(writes.len(), 8 + 8 + 5, "{writes:x?}");
    assert_eq!(r.counters.chunks_written, 3);
    assert_eq!(r.counters.chunks_flushed, 1);
    for c in 0..3u64 {
        let mut lines: Vec<u64> = writes.iter().filter(|w| w.0 == c).map(|w| w.1).collect();
        lines.sort();
        lines.dedup();
        assert_eq!(lines.len(), if c < 2 { 8 } else { 5 }, "chunk {c}: distinct lines");
        assert!(lines.iter().all(|a| a % 64 == 0 && *a >= base));
    }
    // Chunks 0 and 1 are in different slots: no line shared.
    let of =
        |c: u64| writes.iter().filter(|w| w.0 == c).map(|w| w.1).collect::<std::collections::BTreeSet<_>>();
    assert!(of(0).is_disjoint(&of(1)));
    assert!(of(2).is_subset(&of(0)), "chunk 2 reuses chunk 0's slot");
}

#[test]
fn program_order_with_a_lockstep_layer_over_a_scalar_child() {
    // Broadcast bags -> lockstep elements (4 lanes) -> a scalar pair per element.
    let prog = p(&format!(
        ".au\ntu t0 = dense 0..3 broadcast\ntu t1 = dense 0..6 in t0 lockstep 4\ntu t2 = dense 0..2 in t1\n\
         s0 = ite t0\ns1 = ite t1\ns2 = alu.mul s0, 6 in t1\ns3 = alu.add s2, s1 in t1\n\
         s4 = load.row 64 [{TAB:#x} + s3 * 64] in t1\ns5 = ite t2\ns6 = alu.mul s3, 2 in t2\n\
         s7 = alu.add s6, s5 in t2\ns8 = load.u32 [{DATA:#x} + s7 * 4] in t2\n\
         on t0 iter -> 10 (s0)\non t1 begin -> 11 (s0)\non t1 iter -> 12 (s3, s4)\non t2 begin -> 13 (s3)\n\
         on t2 iter -> 14 (s7, s8)\non t2 end -> 15 (s1)\non t1 end -> 16 (s0)\n"
    ));
    let data: Vec<u32> = (0..36).map(|i| 5000 + i * i).collect();
    for (max_outstanding, chunk) in [(128, 32), (2, 3)] {
        let cfg = AccessUnitConfig { max_outstanding, outq_chunk_entries: chunk, ..tmu() };
        let r = run_full(prog.clone(), image(vec![], vec![], data.clone()), cfg, 4, 1_000, scrambled, None);
        let mut want = vec![];
        for o in 0..3u64 {
            want.push((10, vec![o]));
            want.push((11, vec![o]));
            for i in 0..6u64 {
                let e = 6 * o + i;
                want.push((12, vec![e, TAB + e * 64]));
                want.push((13, vec![e]));
                for k in 0..2u64 {
                    want.push((14, vec![2 * e + k, data[(2 * e + k) as usize] as u64]));
                }
                want.push((15, vec![i]));
            }
            want.push((16, vec![o]));
        }
        assert_eq!(r.events(), want, "limit {max_outstanding}, chunk {chunk}");
        assert_eq!(r.counters.masked_lanes, 3 * 2);
    }
}

#[test]
fn stall_cycles_are_disjoint_and_bounded_by_the_run() {
    let offsets: Vec<u32> = (0..=16).map(|b| b * 8).collect();
    let indices: Vec<u32> = (0..128).map(|j| (j * 7919) % 1000).collect();
    // (limit, storage, chunks, core gap, the cause that must show): outstanding, storage, outq.
    for (limit, storage, chunks, gap, cause) in
        [(2, 8 * 2048, 2, 0, 0), (128, 8 * 296, 2, 0, 1), (128, 8 * 2048, 1, 20_000, 2)]
    {
        let cfg = AccessUnitConfig {
            max_outstanding: limit,
            storage: ByteSize::from_bytes(storage),
            outq_chunks: chunks,
            outq_chunk_entries: 8,
            ..tmu()
        };
        let r = run_full(
            bag_program(16, 256),
            image(offsets.clone(), indices.clone(), vec![]),
            cfg,
            8,
            gap,
            flat,
            None,
        );
        assert_eq!(r.events(), expected_bags(&offsets, &indices, 256));
        let c = r.counters;
        let total = c.storage_stall_cycles + c.outstanding_stall_cycles + c.outq_stall_cycles;
        let cycles = c.finish_tick.unwrap() / 1_000;
        assert!(total <= cycles, "{total} stall cycles in a {cycles}-cycle run: {c:?}");
        let by_cause = [c.outstanding_stall_cycles, c.storage_stall_cycles, c.outq_stall_cycles];
        assert!(by_cause[cause] > 0, "cause {cause} not counted: {c:?}");
    }
}

#[test]
fn with_room_for_one_iteration_the_next_is_fetched_only_after_the_current_one_is_done() {
    // 264 B an iteration, 264 B a lane: depth 1 (README, "Stream depth").
    let prog = p(&format!(
        ".au\ntu t0 = dense 0..6\ns0 = ite t0\ns1 = load.row 256 [{TAB:#x} + s0 * 256] in t0\non t0 iter -> 1 (s0)\n"
    ));
    let cfg = AccessUnitConfig { storage: ByteSize::from_bytes(8 * 264), ..tmu() };
    let r = run(prog, image(vec![], vec![], vec![]), cfg);
    assert_eq!(r.events(), (0..6u64).map(|i| (1, vec![i])).collect::<Vec<_>>());
    for i in 1..6u64 {
        let first_req =
            r.reads().iter().filter(|&&(_, a)| (a - TAB) / 256 == i).map(|&(t, _)| t).min().unwrap();
        let prev_done = r
            .resps
            .iter()
            .filter(|(_, q)| !q.write && (q.addr - TAB) / 256 == i - 1)
            .map(|&(t, _)| t)
            .max()
            .unwrap();
        assert!(
            first_req > prev_done,
            "row {i} requested at {first_req} ps, row {} answered at {prev_done} ps",
            i - 1
        );
    }
}

#[test]
fn outer_layer_lines_go_before_inner_ones_and_streams_in_configuration_order() {
    // 14 parents live (16 KiB in one lane over 1104 B), 16 lines each at one request a cycle:
    // the parents' lines are still queued when the first children appear (~120 ns).
    let prog = p(&format!(
        ".au\ntu t0 = dense 0..14\ntu t1 = dense 0..2 in t0\ns0 = ite t0\ns1 = load.row 1024 [{TAB:#x} + s0 * 1024] in t0\n\
         s2 = ite t1\ns3 = load.row 64 [{:#x} + s2 * 64] in t1\non t1 iter -> 1 (s3)\n",
        TAB + 0x8_0000
    ));
    let cfg = AccessUnitConfig { lanes: 1, requests_per_cycle: 1, max_outstanding: 1024, ..tmu() };
    let r = run(prog, image(vec![], vec![], vec![]), cfg);
    let reads = r.reads();
    let last_parent = reads.iter().filter(|&&(_, a)| a < TAB + 0x8_0000).map(|&(t, _)| t).max().unwrap();
    let first_child = reads.iter().filter(|&&(_, a)| a >= TAB + 0x8_0000).map(|&(t, _)| t).min().unwrap();
    assert!(last_parent > 150_000, "the test needs parent lines queued after the first child: {last_parent}");
    assert!(
        first_child > last_parent,
        "a child line at {first_child} ps before a parent line at {last_parent} ps"
    );

    // Two rows of one iteration: s1's lines, then s2's, iteration by iteration.
    let prog = p(&format!(
        ".au\ntu t0 = dense 0..3\ns0 = ite t0\ns1 = load.row 128 [{TAB:#x} + s0 * 128] in t0\n\
         s2 = load.row 128 [{:#x} + s0 * 128] in t0\non t0 iter -> 1 (s1, s2)\n",
        TAB + 0x8_0000
    ));
    let r = run(prog, image(vec![], vec![], vec![]), AccessUnitConfig { requests_per_cycle: 1, ..tmu() });
    let order: Vec<(u64, u64)> = r
        .reads()
        .iter()
        .map(|&(_, a)| if a >= TAB + 0x8_0000 { (2, (a - TAB - 0x8_0000) / 64) } else { (1, (a - TAB) / 64) })
        .collect();
    assert_eq!(
        order,
        vec![(1, 0), (1, 1), (2, 0), (2, 1), (1, 2), (1, 3), (2, 2), (2, 3), (1, 4), (1, 5), (2, 4), (2, 5)]
    );
}

// ---------------------------------------------------------------------------------------------
// A child waits for the parent streams it reads, and only those.

/// Reads of the `data` region (a parent's row) take 5 us; the others 100 ns.
fn data_slow(r: &MemRequest) -> u64 {
    if !r.write && (DATA..DATA + 0x1000).contains(&r.addr) { 5_000_000 } else { 100_000 }
}

#[test]
fn children_with_constant_bounds_fetch_before_a_parent_row_they_do_not_read_arrives() {
    // A knowledge-graph query's shape: the parent's row (a head embedding) is slow; its
    // children (candidate rows) have constant bounds and read nothing of the parent.
    let prog = p(&format!(
        ".au\ntu t0 = dense 0..2\ntu t1 = dense 0..4 in t0\ns0 = ite t0\n\
         s1 = load.row 64 [{DATA:#x} + s0 * 64] in t0\ns2 = ite t1\n\
         s3 = load.row 64 [{TAB:#x} + s2 * 64] in t1\n\
         on t0 iter -> 0 (s1)\non t1 iter -> 1 (s3)\non t1 end -> 2 (s0)\n"
    ));
    let r = run_full(prog, image(vec![], vec![], vec![0; 64]), tmu(), 1024, 0, data_slow, None);
    let mut want = vec![];
    for q in 0..2u64 {
        want.push((0, vec![DATA + q * 64]));
        want.extend((0..4u64).map(|c| (1, vec![TAB + c * 64])));
        want.push((2, vec![q]));
    }
    assert_eq!(r.events(), want, "events stay in program order");
    let first_child = r.reads().iter().filter(|&&(_, a)| a >= TAB).map(|&(t, _)| t).min().unwrap();
    assert!(
        first_child < 1_000_000,
        "the first candidate row was requested at {first_child} ps, after the head row"
    );
    assert!(r.at[0] >= 5_000_000, "the parent's event left before its row arrived: {} ps", r.at[0]);
}

#[test]
fn a_grandchild_waits_for_the_grandparent_stream_it_reads() {
    // s1 (slow, in t0) is read by t2's row address two levels down; t1 reads nothing of t0.
    let prog = p(&format!(
        ".au\ntu t0 = dense 0..2\ntu t1 = dense 0..2 in t0\ntu t2 = dense 0..2 in t1\ns0 = ite t0\n\
         s1 = load.u32 [{DATA:#x} + s0 * 4] in t0\ns2 = ite t1\ns3 = ite t2\n\
         s4 = alu.add s1, s3 in t2\ns5 = load.row 64 [{TAB:#x} + s4 * 64] in t2\n\
         on t2 iter -> 1 (s5)\n"
    ));
    let data = vec![10, 20];
    let r = run_full(prog, image(vec![], vec![], data), tmu(), 1024, 0, data_slow, None);
    let mut want = vec![];
    for base in [10u64, 20] {
        for _ in 0..2 {
            want.extend((0..2u64).map(|c| (1, vec![TAB + (base + c) * 64])));
        }
    }
    assert_eq!(r.events(), want);
    let first_row = r.reads().iter().filter(|&&(_, a)| a >= TAB).map(|&(t, _)| t).min().unwrap();
    assert!(first_row >= 5_000_000, "a row was requested at {first_row} ps, before its index arrived");
}
