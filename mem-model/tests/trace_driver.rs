//! The trace driver: every request exactly once, in order, at its time, within the in-flight
//! bound, through back-pressure; errors stop it cleanly.

use mem_model::trace::{
    DramSim3Reader, DriverConfig, Pacing, RamulatorReader, TimeBase, TraceDriver, TraceRecord, TraceSource,
    VecSource,
};
use mem_model::{MemRequest, MemResponse, SimpleMemory, SimpleMemoryConfig};
use sim_core::{
    Bandwidth, Clock, Component, ComponentId, Ctx, Engine, Frequency, LinkId, LinkSpec, Priority, TimeSpan,
    Wake,
};
use std::collections::VecDeque;

enum Msg {
    Req(MemRequest),
    Resp(MemResponse),
}

sim_core::carries!(Msg { Req(MemRequest), Resp(MemResponse) });

type Source = Box<dyn TraceSource>;

/// A memory that records every request it gets and answers each after a delay that varies with
/// its id, so answers come back out of order.
struct Recorder {
    inp: LinkId,
    out: LinkId,
    /// (request, arrival tick)
    seen: Vec<(MemRequest, u64)>,
    /// Answers due, unordered.
    due: Vec<(u64, MemResponse)>,
    /// Answers refused by a full link, in order.
    blocked: VecDeque<MemResponse>,
    outstanding: u32,
    peak: u32,
}

impl Recorder {
    fn delay(id: u64) -> u64 {
        // 20 to 83 ns, scrambled by id.
        20_000 + (id.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 58) * 1000
    }

    fn flush(&mut self, ctx: &mut Ctx<'_, Msg>) {
        while let Some(r) = self.blocked.front().copied() {
            if ctx.send(self.out, Msg::Resp(r)).is_err() {
                return;
            }
            self.blocked.pop_front();
            self.outstanding -= 1;
        }
    }
}

#[allow(clippy::large_enum_variant)]
enum Node {
    Driver(TraceDriver<Msg, Source>),
    Simple(SimpleMemory<Msg>),
    Rec(Recorder),
}

impl Component for Node {
    type Msg = Msg;
    fn name(&self) -> &str {
        match self {
            Node::Driver(d) => d.name(),
            Node::Simple(m) => m.name(),
            Node::Rec(_) => "rec",
        }
    }
    fn wake(&mut self, why: Wake, ctx: &mut Ctx<'_, Msg>) {
        match self {
            Node::Driver(d) => d.wake(why, ctx),
            Node::Simple(m) => m.wake(why, ctx),
            Node::Rec(r) => {
                let now = ctx.now();
                while let Some(Msg::Req(q)) = ctx.recv(r.inp) {
                    r.seen.push((q, now));
                    r.outstanding += 1;
                    r.peak = r.peak.max(r.outstanding);
                    let at = now + Recorder::delay(q.id);
                    r.due.push((at, q.respond()));
                    ctx.schedule_at(at, Priority::DEFAULT, 0);
                }
                let mut i = 0;
                while i < r.due.len() {
                    if r.due[i].0 <= now {
                        let (_, resp) = r.due.swap_remove(i);
                        r.blocked.push_back(resp);
                    } else {
                        i += 1;
                    }
                }
                r.flush(ctx);
            }
        }
    }
    fn busy(&self) -> bool {
        match self {
            Node::Driver(d) => d.busy(),
            Node::Simple(m) => m.busy(),
            Node::Rec(r) => r.outstanding > 0,
        }
    }
}

/// 1 GHz: 1 cycle = 1000 ps.
fn ghz() -> Clock {
    Clock::new(Frequency::from_hz(1_000_000_000)).unwrap()
}

fn config(max_in_flight: u32, pacing: Pacing) -> DriverConfig {
    DriverConfig { max_in_flight, bytes: 64, pacing, clock: Some(ghz()), capacity: None }
}

struct Run {
    engine: Engine<Node>,
    driver: ComponentId,
    mem: ComponentId,
}

impl Run {
    fn driver(&self) -> &TraceDriver<Msg, Source> {
        match self.engine.component(self.driver) {
            Some(Node::Driver(d)) => d,
            _ => unreachable!(),
        }
    }
    fn recorder(&self) -> &Recorder {
        match self.engine.component(self.mem) {
            Some(Node::Rec(r)) => r,
            _ => unreachable!(),
        }
    }
}

/// Runs `source` through a driver into a recorder (or a SimpleMemory when `simple` is given),
/// over links of `capacity` messages and one 1 GHz cycle of latency.
fn run(source: Source, cfg: DriverConfig, capacity: u32, simple: Option<SimpleMemoryConfig>) -> Run {
    let mut e: Engine<Node> = Engine::new();
    let (drv, mem) = (e.reserve(), e.reserve());
    let spec = |name: &str| LinkSpec { name: name.into(), clock: ghz(), latency_cycles: 1, capacity };
    let req = e.connect(drv, mem, spec("req")).unwrap();
    let resp = e.connect(mem, drv, spec("resp")).unwrap();
    let d = TraceDriver::new("drv", cfg, source, req, resp, e.stats_mut()).unwrap();
    e.install(drv, Node::Driver(d)).unwrap();
    let m = match simple {
        Some(c) => Node::Simple(SimpleMemory::new("mem", c, &[(req, resp)], e.stats_mut()).unwrap()),
        None => Node::Rec(Recorder {
            inp: req,
            out: resp,
            seen: vec![],
            due: vec![],
            blocked: VecDeque::new(),
            outstanding: 0,
            peak: 0,
        }),
    };
    e.install(mem, m).unwrap();
    e.run(None).unwrap();
    let r = Run { engine: e, driver: drv, mem };
    assert!(r.driver().finished());
    r
}

fn records(n: u64) -> Vec<TraceRecord> {
    (0..n)
        .map(|i| {
            let addr = (i * 7919 % 1000) * 64;
            if i % 3 == 0 { TraceRecord::write(addr, 0) } else { TraceRecord::read(addr, 0) }
        })
        .collect()
}

#[test]
fn every_request_exactly_once_in_trace_order() {
    let recs = records(2000);
    let src = Box::new(VecSource::new("v", TimeBase::Untimed, recs.clone()));
    let r = run(src, config(8, Pacing::Max), 4, None);
    let seen = &r.recorder().seen;
    assert_eq!(seen.len(), recs.len());
    for (i, ((q, _), want)) in seen.iter().zip(&recs).enumerate() {
        assert_eq!(q.id, i as u64);
        assert_eq!((q.addr, q.write, q.bytes), (want.addr, want.write, 64));
    }
    let rep = r.driver().report();
    assert_eq!(rep.responses, 2000);
    assert_eq!(rep.writes, 667);
    assert_eq!(rep.reads, 1333);
    assert_eq!(rep.bytes(), 2000 * 64);
    assert_eq!(r.driver().in_flight(), 0);
    let stats = r.engine.stats();
    assert_eq!(stats.lookup_counter("drv.reads"), Some(1333));
    assert_eq!(stats.lookup_counter("drv.bytes_written"), Some(667 * 64));
    assert_eq!(stats.lookup_histogram("drv.read_latency").map(|h| h.len()), Some(1333));
    assert_eq!(stats.lookup_histogram("drv.write_latency").map(|h| h.len()), Some(667));
}

#[test]
fn in_flight_bound_is_respected_and_reached() {
    for bound in [1, 3, 16] {
        let src = Box::new(VecSource::new("v", TimeBase::Untimed, records(500)));
        let r = run(src, config(bound, Pacing::Max), 64, None);
        assert_eq!(r.recorder().peak, bound, "memory-side peak");
        assert_eq!(r.driver().report().peak_in_flight, bound);
        assert_eq!(r.recorder().seen.len(), 500);
    }
}

#[test]
fn little_law_with_simple_memory() {
    // 100 ns memory with a huge bandwidth and 4 requests in flight: each request takes 100 ns
    // plus two 1 ns hops (plus 1 ps of transfer), so 400 requests take 100 rounds of 102 ns.
    let mem = SimpleMemoryConfig {
        latency: TimeSpan::from_ns(100),
        bandwidth: Bandwidth::parse("64TB/s").unwrap(),
    };
    let src = Box::new(VecSource::new("v", TimeBase::Untimed, records(400)));
    let r = run(src, config(4, Pacing::Max), 16, Some(mem));
    let rep = *r.driver().report();
    assert_eq!(rep.responses, 400);
    assert_eq!(rep.peak_in_flight, 4);
    assert_eq!(rep.first_issue, Some(0));
    let round = 102_001;
    assert!((100 * round - 1000..=100 * round + 1000).contains(&rep.last_response), "{}", rep.last_response);
    let h = r.engine.stats().lookup_histogram("drv.read_latency").unwrap();
    assert!((101_900..=102_100).contains(&h.value_at_quantile(0.5)), "{}", h.value_at_quantile(0.5));
    let mem_reads = r.engine.stats().lookup_counter("mem.reads").unwrap();
    assert_eq!(mem_reads, rep.reads);
    // The steady state runs from the first answer (request 0's, round 1) to the last send
    // (round 99, on the answers to requests 392-395). The reads answered inside it, after the
    // first one's tick: requests 1 to 395 (each round's answers come 1 ps apart).
    let (first, last) = rep.steady_window().unwrap();
    assert_eq!(Some(first), rep.first_response);
    assert!((round - 1000..=round + 1000).contains(&first), "{first}");
    assert!((99 * round - 1000..=99 * round + 1000).contains(&last), "{last}");
    assert_eq!(rep.last_issue, last);
    let reads = records(400)[1..=395].iter().filter(|r| !r.write).count() as u64;
    assert_eq!(rep.steady_read_bytes, reads * 64);
}

#[test]
fn back_pressure_on_a_one_slot_link() {
    // The memory answers out of order and the links hold one message: sends are refused often,
    // yet everything arrives once.
    let src = Box::new(VecSource::new("v", TimeBase::Untimed, records(300)));
    let r = run(src, config(64, Pacing::Max), 1, None);
    assert_eq!(r.recorder().seen.len(), 300);
    let ids: Vec<u64> = r.recorder().seen.iter().map(|(q, _)| q.id).collect();
    assert_eq!(ids, (0..300).collect::<Vec<_>>());
    let refused: u64 = r.engine.link_reports().iter().map(|l| l.refused).sum();
    assert!(refused > 0, "the test should exercise refusals");
}

#[test]
fn dramsim3_cycles_are_issue_times_in_the_memory_clock() {
    let text = "0x0 READ 0\n0x40 READ 10\n0x80 WRITE 10\n# gap\n0xc0 READ 100\n0x100 READ 50\n";
    let src = Box::new(DramSim3Reader::new(text.as_bytes(), "t.trace"));
    let r = run(src, config(16, Pacing::Timestamps), 16, None);
    let arrivals: Vec<u64> = r.recorder().seen.iter().map(|&(_, t)| t).collect();
    // Sent at cycle x (x ns at 1 GHz), received one link cycle later; cycle 50 comes after
    // cycle 100 in the file, so it goes right after it.
    assert_eq!(arrivals, [1_000, 11_000, 11_000, 101_000, 101_000]);
    let delay = r.engine.stats().lookup_histogram("drv.issue_delay").unwrap();
    assert_eq!(delay.len(), 5);
    assert!(delay.equivalent(delay.max(), 50_000), "{}", delay.max());
}

#[test]
fn picosecond_timestamps_and_record_sizes() {
    let recs = vec![
        TraceRecord { addr: 0, write: false, bytes: Some(32), time: 500, non_temporal: true },
        TraceRecord { addr: 64, write: true, bytes: None, time: 2_500, non_temporal: false },
    ];
    let src = Box::new(VecSource::new("v", TimeBase::Picoseconds, recs));
    let r = run(src, config(16, Pacing::Timestamps), 16, None);
    let seen = &r.recorder().seen;
    assert_eq!(
        (seen[0].0.bytes, seen[0].0.non_temporal, seen[0].0.issued, seen[0].1),
        (32, true, 500, 1_500)
    );
    assert_eq!((seen[1].0.bytes, seen[1].0.issued), (64, 2_500));
}

#[test]
fn injection_rate_spaces_requests() {
    // 0.5 requests per ns: one every 2 ns, whatever the trace's own timestamps say.
    let text = "0x0 READ 1000\n0x40 READ 1000\n0x80 READ 1000\n0xc0 READ 1000\n";
    let src = Box::new(DramSim3Reader::new(text.as_bytes(), "t.trace"));
    let r = run(src, config(16, Pacing::Rate { per_ns: 0.5 }), 16, None);
    let issued: Vec<u64> = r.recorder().seen.iter().map(|(q, _)| q.issued).collect();
    assert_eq!(issued, [0, 2_000, 4_000, 6_000]);
    // Max ignores the timestamps altogether.
    let src = Box::new(DramSim3Reader::new(text.as_bytes(), "t.trace"));
    let r = run(src, config(16, Pacing::Max), 16, None);
    assert!(r.recorder().seen.iter().all(|(q, _)| q.issued == 0));
}

#[test]
fn rate_beyond_what_the_bound_allows_falls_behind_and_catches_up() {
    // 10 requests/ns offered, 2 in flight, ~20-80 ns per request: the driver runs late, never
    // breaks the bound, and still sends everything.
    let src = Box::new(VecSource::new("v", TimeBase::Untimed, records(200)));
    let r = run(src, config(2, Pacing::Rate { per_ns: 10.0 }), 16, None);
    assert_eq!(r.recorder().seen.len(), 200);
    assert_eq!(r.recorder().peak, 2);
    let delay = r.engine.stats().lookup_histogram("drv.issue_delay").unwrap();
    assert!(delay.max() > 1_000_000, "{}", delay.max());
}

#[test]
fn send_delays_past_the_histograms_ceiling_are_summed_exactly() {
    // One in flight to a memory answering in 1 ms, 30 requests due 0.1 ns apart: the last
    // waits about 29 ms to be sent, beyond the issue-delay histogram's ceiling (2^34 ps, about
    // 17 ms), where it saturates. The report's sum and max are exact.
    let slow = SimpleMemoryConfig {
        latency: TimeSpan::from_ns(1_000_000),
        bandwidth: Bandwidth::from_bytes_per_second(1_000_000_000_000),
    };
    let src = Box::new(VecSource::new("v", TimeBase::Untimed, records(30)));
    let r = run(src, config(1, Pacing::Rate { per_ns: 10.0 }), 16, Some(slow));
    let rep = r.driver().report();
    assert_eq!(rep.responses, 30);
    assert!(rep.issue_delay_max > 28_000_000_000 && rep.issue_delay_max < 30_000_000_000, "{rep:?}");
    let h = r.engine.stats().lookup_histogram("drv.issue_delay").unwrap();
    assert!(h.max() < rep.issue_delay_max, "the histogram saturates: {}", h.max());
    // Request k waits about k ms: the sum is about 435 ms.
    assert!((430_000_000_000..440_000_000_000).contains(&rep.issue_delay_sum), "{}", rep.issue_delay_sum);
}

#[test]
fn address_beyond_capacity_stops_the_driver_with_file_and_line() {
    let text = "LD 0x0\nST 0xfc0\nLD 0x1000\nLD 0x40\n";
    let src = Box::new(RamulatorReader::new(text.as_bytes(), "t.trace"));
    let cfg = DriverConfig { capacity: Some(4096), ..config(4, Pacing::Max) };
    let r = run(src, cfg, 16, None);
    assert_eq!(r.recorder().seen.len(), 2);
    assert_eq!(
        r.driver().error().map(|e| e.to_string()).as_deref(),
        Some("t.trace:3: address 0x1000 (+64 B) is outside the memory's capacity of 4KiB (0x1000 B)")
    );
    // A request that starts inside but ends outside is out of range too: 48 B requests align
    // 0xff0 (4080) to itself, and it ends at 4128.
    let src = Box::new(RamulatorReader::new(&b"LD 0xff0\n"[..], "t.trace"));
    let r = run(src, DriverConfig { bytes: 48, ..cfg }, 16, None);
    assert!(r.driver().error().is_some());
    assert!(r.recorder().seen.is_empty());
}

#[test]
fn sizeless_records_are_aligned_to_the_request_size() {
    // As DRAMsim3 and Ramulator drop the offset within a transaction: 0xfe0 is the 64 B at 0xfc0,
    // inside a 4 KiB memory; with 48 B requests 0x64 (100) is the one at 96.
    let text = "LD 0xfe0\nLD 0x47\n";
    let src = Box::new(RamulatorReader::new(text.as_bytes(), "t.trace"));
    let cfg = DriverConfig { capacity: Some(4096), ..config(4, Pacing::Max) };
    let r = run(src, cfg, 16, None);
    assert!(r.driver().error().is_none());
    let addrs: Vec<u64> = r.recorder().seen.iter().map(|(q, _)| q.addr).collect();
    assert_eq!(addrs, [0xfc0, 0x40]);
    let src = Box::new(RamulatorReader::new(&b"LD 0x64\n"[..], "t.trace"));
    let r = run(src, DriverConfig { bytes: 48, ..cfg }, 16, None);
    assert_eq!(r.recorder().seen.iter().map(|(q, _)| q.addr).collect::<Vec<_>>(), [96]);
}

#[test]
fn a_time_beyond_the_clock_stops_the_driver_with_file_and_line() {
    // The largest cycle count saturated to the end of time and the run ended in a "deadlock"
    // that named no file. Now the record is refused where it is; the one before it is served.
    let text = "0x0 READ 0\n0x40 READ 18446744073709551615\n0x80 READ 1\n";
    let src = Box::new(DramSim3Reader::new(text.as_bytes(), "t.trace"));
    let r = run(src, config(4, Pacing::Timestamps), 16, None);
    assert_eq!(r.recorder().seen.len(), 1);
    let err = r.driver().error().map(|e| e.to_string()).unwrap_or_default();
    assert!(err.starts_with("t.trace:2: the request is due at 18446744073709551615 cycles, beyond"), "{err}");
    // A rate so low that the second request falls beyond the clock.
    let src = Box::new(VecSource::new("v", TimeBase::Untimed, records(3)));
    let r = run(src, config(4, Pacing::Rate { per_ns: 1e-30 }), 16, None);
    assert_eq!(r.recorder().seen.len(), 1);
    assert!(r.driver().error().is_some_and(|e| e.to_string().contains("at the injection rate")));
}

#[test]
fn parse_error_mid_trace_stops_after_the_requests_before_it() {
    let text = "LD 0x0\nLD 0x40\nLX 0x80\nLD 0xc0\n";
    let src = Box::new(RamulatorReader::new(text.as_bytes(), "bad.trace"));
    let r = run(src, config(4, Pacing::Max), 16, None);
    assert_eq!(r.recorder().seen.len(), 2);
    assert_eq!(r.driver().report().responses, 2);
    assert_eq!(
        r.driver().error().map(|e| e.to_string()).as_deref(),
        Some("bad.trace:3: unknown request kind \"LX\": expected LD or ST in \"LX 0x80\"")
    );
}

#[test]
fn impossible_driver_configurations() {
    let build = |cfg: DriverConfig, base: TimeBase| {
        let mut e: Engine<Node> = Engine::new();
        let (a, b) = (e.reserve(), e.reserve());
        let spec = LinkSpec { name: "l".into(), clock: ghz(), latency_cycles: 1, capacity: 1 };
        let l = e.connect(a, b, spec).unwrap();
        let src: Source = Box::new(VecSource::new("v", base, vec![]));
        TraceDriver::<Msg, Source>::new("d", cfg, src, l, l, e.stats_mut()).err().map(|e| e.to_string())
    };
    let ok = config(4, Pacing::Max);
    assert_eq!(build(ok, TimeBase::Untimed), None);
    assert_eq!(
        build(DriverConfig { max_in_flight: 0, ..ok }, TimeBase::Untimed).as_deref(),
        Some("requests in flight: must be at least 1")
    );
    assert_eq!(
        build(DriverConfig { bytes: 0, ..ok }, TimeBase::Untimed).as_deref(),
        Some("request size: must be above 0 B")
    );
    assert_eq!(
        build(config(4, Pacing::Rate { per_ns: 0.0 }), TimeBase::Untimed).as_deref(),
        Some("injection rate: 0 requests/ns is not a positive number")
    );
    assert_eq!(
        build(DriverConfig { clock: None, ..config(4, Pacing::Timestamps) }, TimeBase::MemoryCycles)
            .as_deref(),
        Some("memory clock: a trace timed in memory cycles needs the memory's clock")
    );
}

#[test]
fn an_empty_trace_finishes_at_once() {
    let src = Box::new(VecSource::new("v", TimeBase::Untimed, vec![]));
    let r = run(src, config(4, Pacing::Max), 4, None);
    assert_eq!(*r.driver().report(), Default::default());
}
