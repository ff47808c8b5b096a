//! The fixed-latency, bandwidth-limited memory: unloaded latency and peak bandwidth formulas.

use mem_model::{MemRequest, MemResponse, SimpleMemory, SimpleMemoryConfig};
use sim_core::{Bandwidth, Clock, Component, Ctx, Engine, Frequency, LinkId, LinkSpec, TimeSpan, Wake};

enum Msg {
    Req(MemRequest),
    Resp(MemResponse),
}

sim_core::carries!(Msg { Req(MemRequest), Resp(MemResponse) });

/// Sends `n` requests of `bytes` at start (retrying when refused) and records answer ticks.
struct Requester {
    req: LinkId,
    resp: LinkId,
    n: u64,
    sent: u64,
    bytes: u32,
    answers: Vec<(u64, u64)>,
}

enum Node {
    Req(Requester),
    Mem(SimpleMemory<Msg>),
}

impl Component for Node {
    type Msg = Msg;
    fn name(&self) -> &str {
        match self {
            Node::Req(_) => "cpu",
            Node::Mem(m) => m.name(),
        }
    }
    fn wake(&mut self, why: Wake, ctx: &mut Ctx<'_, Msg>) {
        match self {
            Node::Mem(m) => m.wake(why, ctx),
            Node::Req(r) => {
                while let Some(Msg::Resp(a)) = ctx.recv(r.resp) {
                    r.answers.push((a.id, ctx.now()));
                }
                while r.sent < r.n {
                    let m = MemRequest::read(r.sent, r.sent * 64, r.bytes, ctx.now());
                    if ctx.send(r.req, Msg::Req(m)).is_err() {
                        break;
                    }
                    r.sent += 1;
                }
            }
        }
    }
    fn busy(&self) -> bool {
        match self {
            Node::Req(r) => (r.answers.len() as u64) < r.n,
            Node::Mem(m) => m.busy(),
        }
    }
}

/// Runs `n` requests of `bytes` through a memory of `latency` and `bandwidth`.
fn run(n: u64, bytes: u32, latency: &str, bandwidth: &str, link_capacity: u32) -> Vec<(u64, u64)> {
    let clock = Clock::new(Frequency::from_hz(1_000_000_000)).unwrap();
    let mut e: Engine<Node> = Engine::new();
    let (cpu, mem) = (e.reserve(), e.reserve());
    let spec = |name: &str, capacity| LinkSpec { name: name.into(), clock, latency_cycles: 1, capacity };
    let req = e.connect(cpu, mem, spec("req", link_capacity)).unwrap();
    let resp = e.connect(mem, cpu, spec("resp", link_capacity)).unwrap();
    let cfg = SimpleMemoryConfig {
        latency: TimeSpan::parse(latency).unwrap(),
        bandwidth: Bandwidth::parse(bandwidth).unwrap(),
    };
    let m = SimpleMemory::new("mem", cfg, &[(req, resp)], e.stats_mut()).unwrap();
    e.install(cpu, Node::Req(Requester { req, resp, n, sent: 0, bytes, answers: vec![] })).unwrap();
    e.install(mem, Node::Mem(m)).unwrap();
    e.run(None).unwrap();
    let Some(Node::Req(r)) = e.component(cpu) else { unreachable!() };
    assert_eq!(e.stats().lookup_counter("mem.bytes_read"), Some(n * bytes as u64));
    r.answers.clone()
}

#[test]
fn unloaded_latency_is_link_plus_transfer_plus_latency_plus_link() {
    // 64 B at 64 GB/s is 1 ns; two 1 ns link hops; 100 ns access.
    let a = run(1, 64, "100ns", "64GB/s", 4);
    assert_eq!(a, vec![(0, 1_000 + 1_000 + 100_000 + 1_000)]);
}

#[test]
fn many_requests_drain_at_exactly_the_peak_bandwidth_in_order() {
    let n = 1000;
    let a = run(n, 64, "100ns", "64GB/s", 2048);
    let ids: Vec<u64> = a.iter().map(|x| x.0).collect();
    assert_eq!(ids, (0..n).collect::<Vec<_>>(), "first come, first served");
    // The server starts at 1 ns and moves one 64 B request per ns.
    for (k, &(_, t)) in a.iter().enumerate() {
        assert_eq!(t, 1_000 + (k as u64 + 1) * 1_000 + 100_000 + 1_000);
    }
}

#[test]
fn a_full_response_link_holds_answers_back_without_loss() {
    // Link capacity 2 both ways: the requester is throttled, the memory waits on the link.
    let a = run(50, 64, "10ns", "640GB/s", 2);
    assert_eq!(a.iter().map(|x| x.0).collect::<Vec<_>>(), (0..50).collect::<Vec<_>>());
}

#[test]
fn zero_bandwidth_is_refused() {
    let mut s = sim_core::Stats::new();
    let cfg =
        SimpleMemoryConfig { latency: TimeSpan::from_ns(1), bandwidth: Bandwidth::from_bytes_per_second(0) };
    let e = SimpleMemory::<Msg>::new("mem", cfg, &[], &mut s).err().unwrap();
    assert_eq!(e.to_string(), "memory bandwidth must be above zero");
}
