//! The DRAM model's own speed: simulated requests per host second.
//!
//! Contract: [`run`] builds an engine with one closed-loop requester and a [`Dram`], drives a
//! number of read requests through it (random addresses or one sequential stream, keeping a fixed
//! number outstanding) and times the engine run alone (construction excluded). Everything goes
//! through the public component API and the engine's links, so the figure includes the link and
//! event overhead a real system pays. Used by `cargo bench -p mem-model --bench dram` and by the
//! binary's `dae-sim bench mem`.

use crate::dram::component::Dram;
use crate::dram::error::DramError;
use crate::dram::spec::DramSpec;
use crate::{MemRequest, MemResponse};
use sim_core::{Component, Ctx, Engine, EngineError, LinkId, LinkSpec, PS_PER_SECOND, Wake};
use std::time::Instant;
use thiserror::Error;

/// Address pattern of a benchmark.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pattern {
    /// Uniformly random, request-aligned addresses over the whole capacity.
    Random,
    /// One sequential stream from address 0 (wrapping at the capacity).
    Streaming,
}

/// What to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BenchConfig {
    /// Address pattern.
    pub pattern: Pattern,
    /// Read requests in all.
    pub requests: u64,
    /// Bytes per request.
    pub request_bytes: u32,
    /// Requests kept outstanding.
    pub outstanding: u32,
    /// Seed of the random pattern.
    pub seed: u64,
}

impl BenchConfig {
    /// `requests` reads of 64 B (a cache line); see [`BenchConfig::with_bytes`].
    pub fn new(spec: &DramSpec, pattern: Pattern, requests: u64) -> Self {
        Self::with_bytes(spec, pattern, requests, 64)
    }

    /// `requests` reads of `request_bytes`, with enough outstanding to fill half of every read
    /// queue (deep enough to saturate streaming and random traffic alike).
    pub fn with_bytes(spec: &DramSpec, pattern: Pattern, requests: u64, request_bytes: u32) -> Self {
        let bursts = u64::from(request_bytes.max(1)).div_ceil(spec.burst_bytes()).max(1);
        let fill = u64::from(spec.controllers()) * u64::from(spec.controller().read_queue) / 2 / bursts;
        BenchConfig {
            pattern,
            requests,
            request_bytes,
            outstanding: u32::try_from(fill.clamp(1, 1 << 20)).unwrap_or(1),
            seed: 0x9E37_79B9_7F4A_7C15,
        }
    }
}

/// One measurement.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BenchResult {
    /// Requests completed.
    pub requests: u64,
    /// Host seconds of the engine run.
    pub seconds: f64,
    /// Simulated time of the run, ps.
    pub simulated_ps: u64,
    /// Bytes moved.
    pub bytes: u64,
    /// Engine events processed.
    pub events: u64,
    /// Simulated ticks at which 10 % and 90 % of the requests had been answered.
    pub steady_window_ps: (u64, u64),
}

impl BenchResult {
    /// Simulated requests per host second.
    pub fn requests_per_second(&self) -> f64 {
        self.requests as f64 / self.seconds.max(1e-12)
    }

    /// Achieved (simulated) bandwidth over the whole run, bytes per second.
    pub fn bandwidth(&self) -> f64 {
        self.bytes as f64 * PS_PER_SECOND as f64 / self.simulated_ps.max(1) as f64
    }

    /// Steady-state bandwidth, bytes per second: the bytes answered between the 10 % and 90 %
    /// marks over the time between them (no ramp-up, no drain).
    pub fn steady_bandwidth(&self) -> f64 {
        let (a, b) = self.steady_window_ps;
        let bytes = self.bytes as f64 * 0.8;
        bytes * PS_PER_SECOND as f64 / b.saturating_sub(a).max(1) as f64
    }
}

/// Why a benchmark could not run.
#[derive(Debug, Error)]
pub enum BenchError {
    /// The DRAM could not be built.
    #[error(transparent)]
    Dram(#[from] DramError),
    /// The engine failed.
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// Fewer responses than requests came back.
    #[error("only {got} of {want} requests were answered")]
    Lost {
        /// Answers received.
        got: u64,
        /// Requests sent.
        want: u64,
    },
}

/// The benchmark's message set.
#[derive(Debug)]
pub enum BenchMsg {
    /// A request.
    Req(MemRequest),
    /// A response.
    Resp(MemResponse),
}

sim_core::carries!(BenchMsg { Req(MemRequest), Resp(MemResponse) });

/// The closed-loop requester.
pub struct Requester {
    req: LinkId,
    resp: LinkId,
    cfg: BenchConfig,
    capacity: u64,
    sent: u64,
    answered: u64,
    outstanding: u32,
    rng: u64,
    /// A request refused by the full link, to send first.
    held: Option<MemRequest>,
    /// Ticks of the answers that reached 10 % and 90 % of the requests.
    marks: (u64, u64),
}

impl Requester {
    fn next_addr(&mut self) -> u64 {
        let size = u64::from(self.cfg.request_bytes.max(1));
        let slots = (self.capacity / size).max(1);
        // A mask where the count of slots allows: the same values without a division.
        let slot = |x: u64| if slots.is_power_of_two() { x & (slots - 1) } else { x % slots };
        match self.cfg.pattern {
            Pattern::Streaming => slot(self.sent) * size,
            Pattern::Random => {
                // xorshift64*: cheap, deterministic, good enough to spread over banks.
                self.rng ^= self.rng >> 12;
                self.rng ^= self.rng << 25;
                self.rng ^= self.rng >> 27;
                slot(self.rng.wrapping_mul(0x2545_F491_4F6C_DD1D)) * size
            }
        }
    }

    fn wake(&mut self, ctx: &mut Ctx<'_, BenchMsg>) {
        while let Some(msg) = ctx.recv(self.resp) {
            if matches!(msg, BenchMsg::Resp(_)) {
                self.answered += 1;
                self.outstanding -= 1;
                if self.answered == self.cfg.requests / 10 {
                    self.marks.0 = ctx.now();
                }
                if self.answered == self.cfg.requests - self.cfg.requests / 10 {
                    self.marks.1 = ctx.now();
                }
            }
        }
        while self.outstanding < self.cfg.outstanding
            && (self.held.is_some() || self.sent < self.cfg.requests)
        {
            let req = match self.held.take() {
                Some(r) => r,
                None => {
                    let addr = self.next_addr();
                    self.sent += 1;
                    MemRequest::read(self.sent, addr, self.cfg.request_bytes, ctx.now())
                }
            };
            match ctx.send(self.req, BenchMsg::Req(req)) {
                Ok(()) => self.outstanding += 1,
                Err(BenchMsg::Req(r)) => {
                    self.held = Some(r);
                    break;
                }
                Err(_) => break,
            }
        }
    }
}

/// A node of the benchmark engine.
pub enum Node {
    /// The requester.
    Gen(Box<Requester>),
    /// The memory.
    Mem(Box<Dram<BenchMsg>>),
}

impl Component for Node {
    type Msg = BenchMsg;

    fn name(&self) -> &str {
        match self {
            Node::Gen(_) => "bench.requester",
            Node::Mem(m) => m.name(),
        }
    }

    fn wake(&mut self, why: Wake, ctx: &mut Ctx<'_, BenchMsg>) {
        match self {
            Node::Gen(g) => g.wake(ctx),
            Node::Mem(m) => m.wake(why, ctx),
        }
    }

    fn busy(&self) -> bool {
        match self {
            Node::Gen(g) => g.answered < g.cfg.requests,
            Node::Mem(m) => m.busy(),
        }
    }

    fn status(&self) -> String {
        match self {
            Node::Gen(g) => format!("{} of {} answered", g.answered, g.cfg.requests),
            Node::Mem(m) => m.status(),
        }
    }

    fn takes_every_input(&self) -> bool {
        matches!(self, Node::Mem(m) if m.takes_every_input())
    }
}

/// Builds the benchmark engine for `spec` and `cfg` (the memory is named "mem").
pub fn build(spec: &DramSpec, cfg: BenchConfig) -> Result<Engine<Node>, BenchError> {
    let mut e: Engine<Node> = Engine::new();
    let (gen_id, mem_id) = (e.reserve(), e.reserve());
    let link = |name: &str| LinkSpec {
        name: name.into(),
        clock: spec.clock(),
        latency_cycles: 1,
        capacity: cfg.outstanding.max(1),
    };
    let req = e.connect(gen_id, mem_id, link("bench.req"))?;
    let resp = e.connect(mem_id, gen_id, link("bench.resp"))?;
    // Both ends drain their input on every wake: a cycle's requests (and a cycle's answers)
    // cost one event, as they would between components that exchange them in batches.
    e.coalesce_arrivals(req)?;
    e.coalesce_arrivals(resp)?;
    let mem = Dram::new("mem", spec, &[(req, resp)], e.stats_mut())?;
    let requester = Requester {
        req,
        resp,
        cfg,
        capacity: spec.capacity_bytes(),
        sent: 0,
        answered: 0,
        outstanding: 0,
        rng: cfg.seed | 1,
        held: None,
        marks: (0, 0),
    };
    e.install(gen_id, Node::Gen(Box::new(requester)))?;
    e.install(mem_id, Node::Mem(Box::new(mem)))?;
    Ok(e)
}

/// Runs the benchmark (see the module docs).
pub fn run(spec: &DramSpec, cfg: BenchConfig) -> Result<BenchResult, BenchError> {
    let mut e = build(spec, cfg)?;
    let t0 = Instant::now();
    let summary = e.run(None)?;
    let seconds = t0.elapsed().as_secs_f64();
    let answered = e.stats().lookup_counter("mem.reads").unwrap_or(0);
    let (got, marks) = match e.component(sim_core::ComponentId::from_index(0)) {
        Some(Node::Gen(g)) => (g.answered, g.marks),
        _ => (0, (0, 0)),
    };
    if got < cfg.requests {
        return Err(BenchError::Lost { got, want: cfg.requests });
    }
    Ok(BenchResult {
        requests: answered,
        seconds,
        simulated_ps: summary.end_tick,
        bytes: answered * u64::from(cfg.request_bytes),
        events: summary.events,
        steady_window_ps: marks,
    })
}
