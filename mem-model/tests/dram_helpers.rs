//! Shared helpers of the DRAM tests: preset loading and a scripted requester.
//! (Included by the `dram_*` tests with `#[path]`; as its own test target it holds no tests.)
#![allow(dead_code)]

use mem_model::dram::{Dram, DramAddr, DramCounters, DramFault, DramPreset, DramSpec, IssuedCommand};
use mem_model::{MemRequest, MemResponse};
use sim_core::{Component, Ctx, Engine, LinkId, LinkSpec, Priority, Tick, Wake};

/// Every preset file under configs/memory.
pub const PRESETS: [&str; 6] = ["hbm2", "hbm2e", "hbm3-6400", "hbm3-h100", "hbm3e-h200", "ddr5-4800"];

/// The text of configs/memory/`name`.toml.
pub fn preset_text(name: &str) -> String {
    let path = format!("{}/../configs/memory/{name}.toml", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The parsed preset `name`.
pub fn preset(name: &str) -> DramPreset {
    toml::from_str(&preset_text(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// The resolved preset `name`.
pub fn spec(name: &str) -> DramSpec {
    DramSpec::from_preset(preset(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// The resolved preset `name` after `edit`.
pub fn spec_with(name: &str, edit: impl FnOnce(&mut DramPreset)) -> DramSpec {
    let mut p = preset(name);
    edit(&mut p);
    DramSpec::from_preset(p).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// The test message set.
#[derive(Debug)]
pub enum Msg {
    Req(MemRequest),
    Resp(MemResponse),
}

sim_core::carries!(Msg { Req(MemRequest), Resp(MemResponse) });

/// Sends planned requests at planned ticks and records the answers.
pub struct Script {
    req: LinkId,
    resp: LinkId,
    plan: Vec<MemRequest>,
    next: usize,
    held: Option<MemRequest>,
    pub answers: Vec<(MemResponse, Tick)>,
}

impl Script {
    fn wake(&mut self, ctx: &mut Ctx<'_, Msg>) {
        while let Some(m) = ctx.recv(self.resp) {
            if let Msg::Resp(r) = m {
                self.answers.push((r, ctx.now()));
            }
        }
        loop {
            let r = match self.held.take() {
                Some(r) => r,
                None => match self.plan.get(self.next) {
                    Some(r) if r.issued <= ctx.now() => {
                        self.next += 1;
                        *r
                    }
                    Some(r) => {
                        ctx.schedule_at(r.issued, Priority::DEFAULT, 0);
                        return;
                    }
                    None => return,
                },
            };
            if let Err(Msg::Req(r)) = ctx.send(self.req, Msg::Req(r)) {
                self.held = Some(r);
                return;
            }
        }
    }
}

pub enum Node {
    Script(Script),
    Mem(Box<Dram<Msg>>),
}

impl Component for Node {
    type Msg = Msg;
    fn name(&self) -> &str {
        match self {
            Node::Script(_) => "cpu",
            Node::Mem(m) => m.name(),
        }
    }
    fn wake(&mut self, why: Wake, ctx: &mut Ctx<'_, Msg>) {
        match self {
            Node::Script(s) => s.wake(ctx),
            Node::Mem(m) => m.wake(why, ctx),
        }
    }
    fn busy(&self) -> bool {
        match self {
            Node::Script(s) => s.next < s.plan.len() || s.held.is_some(),
            Node::Mem(m) => m.busy(),
        }
    }
}

/// What a scripted run produced.
pub struct Outcome {
    /// (response, arrival tick at the requester), in arrival order.
    pub answers: Vec<(MemResponse, Tick)>,
    pub log: Vec<IssuedCommand>,
    pub counters: DramCounters,
    pub fault: Option<DramFault>,
    pub events: u64,
    pub end_tick: Tick,
    pub stats: sim_core::Stats,
}

impl Outcome {
    /// Arrival tick of the answer to request `id`.
    pub fn answer(&self, id: u64) -> Tick {
        self.answers
            .iter()
            .find(|(r, _)| r.id == id)
            .map(|a| a.1)
            .unwrap_or_else(|| panic!("no answer to {id}"))
    }
}

/// Runs `plan` (requests with their send tick in `issued`, sorted) through a DRAM of `spec`,
/// over 1-cycle links of the DRAM clock with room for `capacity` messages.
pub fn run_plan(spec: &DramSpec, plan: Vec<MemRequest>, capacity: u32, log: bool) -> Outcome {
    run_plan_to(spec, plan, capacity, log, None)
}

/// [`run_plan`], then [`Dram::finish`] at `end` (when given) before reading the results.
pub fn run_plan_to(
    spec: &DramSpec,
    plan: Vec<MemRequest>,
    capacity: u32,
    log: bool,
    end: Option<Tick>,
) -> Outcome {
    run_plan_as(spec, plan, capacity, log, end, false)
}

/// [`run_plan_to`], and if `every_cycle`, every busy controller run at
/// every memory cycle ([`Dram::set_run_every_cycle`]).
pub fn run_plan_as(
    spec: &DramSpec,
    mut plan: Vec<MemRequest>,
    capacity: u32,
    log: bool,
    end: Option<Tick>,
    every_cycle: bool,
) -> Outcome {
    plan.sort_by_key(|r| r.issued);
    let mut e: Engine<Node> = Engine::new();
    let (cpu, mem) = (e.reserve(), e.reserve());
    let link = |name: &str| LinkSpec { name: name.into(), clock: spec.clock(), latency_cycles: 1, capacity };
    let req = e.connect(cpu, mem, link("req")).unwrap();
    let resp = e.connect(mem, cpu, link("resp")).unwrap();
    let mut dram = Dram::new("mem", spec, &[(req, resp)], e.stats_mut()).unwrap();
    dram.set_command_log(log);
    dram.set_run_every_cycle(every_cycle);
    e.install(cpu, Node::Script(Script { req, resp, plan, next: 0, held: None, answers: Vec::new() }))
        .unwrap();
    e.install(mem, Node::Mem(Box::new(dram))).unwrap();
    let summary = e.run(None).unwrap_or_else(|err| panic!("{err}"));
    if let (Some(end), Some((Node::Mem(m), stats))) = (end, e.component_and_stats_mut(mem)) {
        m.finish(end, stats);
    }
    let Some(Node::Script(s)) = e.component(cpu) else { unreachable!() };
    let Some(Node::Mem(m)) = e.component(mem) else { unreachable!() };
    Outcome {
        answers: s.answers.clone(),
        log: m.command_log().to_vec(),
        counters: m.counters(),
        fault: m.fault().copied(),
        events: summary.events,
        end_tick: summary.end_tick,
        stats: e.stats().clone(),
    }
}

/// Runs two scripted requesters on ports 0 and 1 of one DRAM of `spec`; with `port1_first`, the
/// requester of port 1 is built first, so the engine delivers its same-tick requests first.
/// Returns each port's (response, arrival tick) in arrival order.
pub fn run_two_ports(
    spec: &DramSpec,
    plans: [Vec<MemRequest>; 2],
    port1_first: bool,
) -> [Vec<(MemResponse, Tick)>; 2] {
    let mut e: Engine<Node> = Engine::new();
    let (first, second) = (e.reserve(), e.reserve());
    let cpus = if port1_first { [second, first] } else { [first, second] };
    let mem = e.reserve();
    let link =
        |name: &str| LinkSpec { name: name.into(), clock: spec.clock(), latency_cycles: 1, capacity: 16 };
    let ports: Vec<(LinkId, LinkId)> = cpus
        .iter()
        .map(|&c| (e.connect(c, mem, link("req")).unwrap(), e.connect(mem, c, link("resp")).unwrap()))
        .collect();
    let dram = Dram::new("mem", spec, &ports, e.stats_mut()).unwrap();
    for ((&c, &(req, resp)), plan) in cpus.iter().zip(&ports).zip(plans) {
        e.install(c, Node::Script(Script { req, resp, plan, next: 0, held: None, answers: Vec::new() }))
            .unwrap();
    }
    e.install(mem, Node::Mem(Box::new(dram))).unwrap();
    e.run(None).unwrap_or_else(|err| panic!("{err}"));
    cpus.map(|c| match e.component(c) {
        Some(Node::Script(s)) => s.answers.clone(),
        _ => unreachable!(),
    })
}

/// A small deterministic generator (the traces must not depend on proptest internals).
pub struct Lcg(pub u64);

impl Lcg {
    pub fn next(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (self.0 >> 33) % n.max(1)
    }
}

/// `n` requests over `rows` rows of every bank of the first two pseudo-channels, `gap_ps` apart
/// at most, `write_pct` % writes, sizes 32 B to 256 B.
pub fn trace(s: &DramSpec, seed: u64, n: usize, rows: u32, write_pct: u64, gap_ps: u64) -> Vec<MemRequest> {
    let mut t = 0;
    let next_tick = |r: &mut Lcg| {
        t += r.next(gap_ps + 1);
        t
    };
    random_requests(s, seed, n, (rows, s.organization().banks), &[32, 64, 128, 256], write_pct, next_tick)
}

/// `n` requests over `rows` rows of the first `banks` banks of every bank group of the first two
/// pseudo-channels, a size from `sizes`, `write_pct` % writes, each sent at the tick
/// `next_tick` draws (non-decreasing).
pub fn random_requests(
    s: &DramSpec,
    seed: u64,
    n: usize,
    (rows, banks): (u32, u32),
    sizes: &[u32],
    write_pct: u64,
    mut next_tick: impl FnMut(&mut Lcg) -> Tick,
) -> Vec<MemRequest> {
    let o = s.organization();
    let mut r = Lcg(seed);
    (0..n as u64)
        .map(|id| {
            let t = next_tick(&mut r);
            let c = r.next(u64::from(o.controllers().min(2))) as u32;
            let a = DramAddr {
                channel: c / o.pseudo_channels,
                pseudo_channel: c % o.pseudo_channels,
                rank: r.next(u64::from(o.ranks)) as u32,
                bank_group: r.next(u64::from(o.bank_groups)) as u32,
                bank: r.next(u64::from(banks.min(o.banks))) as u32,
                row: r.next(u64::from(rows.min(o.rows))) as u32,
                column: r.next(u64::from(o.columns)) as u32,
            };
            let bytes = sizes[r.next(sizes.len() as u64) as usize];
            let addr = s.mapping().encode(&a).expect("in range").min(s.capacity_bytes() - u64::from(bytes));
            if r.next(100) < write_pct {
                MemRequest::write(id, addr, bytes, t)
            } else {
                MemRequest::read(id, addr, bytes, t)
            }
        })
        .collect()
}

/// `log` in time order (cycle, then channel and pseudo-channel; the order within one
/// pseudo-channel's cycle kept). The log itself is in the order commands were decided, and a
/// sleeping pseudo-channel's refreshes are decided (replayed, at their own cycles) when it or
/// its sibling next has work.
pub fn in_time_order(log: &[IssuedCommand]) -> Vec<IssuedCommand> {
    let mut log = log.to_vec();
    log.sort_by_key(|c| (c.cycle, c.channel, c.pseudo_channel));
    log
}

/// Random arguments of [`trace`] over [`variant`]: (variant, seed, requests, rows, write %,
/// largest gap in ps).
pub fn trace_args() -> impl proptest::strategy::Strategy<Value = (u32, u64, usize, u32, u64, u64)> {
    (0u32..8, proptest::prelude::any::<u64>(), 20usize..300, 1u32..64, 0u64..70, 0u64..30_000)
}

/// Eight preset and policy variants, `which` in 0..8: HBM3-6400, DDR5, HBM2, per-bank refresh,
/// closed page with plain FR-FCFS, tiny queues with XOR bank hashing, HBM3e with channel hashing,
/// HBM2e.
pub fn variant(which: u32) -> DramSpec {
    match which {
        0 => spec("hbm3-6400"),
        1 => spec("ddr5-4800"),
        2 => spec("hbm2"),
        3 => spec_with("hbm3-6400", |p| p.controller.refresh = "per_bank".into()),
        4 => spec_with("hbm3-6400", |p| {
            p.controller.page_policy = "closed".into();
            p.controller.scheduler = "frfcfs".into();
        }),
        5 => spec_with("hbm3-6400", |p| {
            p.controller.read_queue = 4;
            p.controller.write_queue = 4;
            p.controller.write_high_watermark = 3;
            p.controller.write_low_watermark = 1;
            p.controller.xor_bank = true;
        }),
        6 => spec_with("hbm3e-h200", |p| p.controller.channel_hash = true),
        _ => spec("hbm2e"),
    }
}
