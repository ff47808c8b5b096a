//! Scaffolding shared by the cache tests (included with `#[path]`; it holds no tests itself): a
//! scripted requester, a recording fixed-latency memory, and builders for small hierarchies.
//! Every clock is 1 GHz and every link one cycle, so times read directly in nanoseconds.
#![allow(dead_code)]

use mem_model::cache::{Cache, CacheConfig, CacheLinks, Crossbar, CrossbarConfig, CrossbarLinks};
use mem_model::{MemRequest, MemResponse, SimpleMemory};
use sim_core::{
    ByteSize, Clock, Component, ComponentId, Ctx, Engine, Frequency, LinkId, LinkSpec, Priority, SeedTree,
    Tick, Wake,
};
use std::collections::VecDeque;

/// Picoseconds per cycle of every clock here.
pub const NS: Tick = 1_000;

/// The test systems' message type.
#[derive(Debug)]
pub enum Msg {
    Req(MemRequest),
    Resp(MemResponse),
}

sim_core::carries!(Msg { Req(MemRequest), Resp(MemResponse) });

/// The 1 GHz clock of every component.
pub fn clock() -> Clock {
    Clock::new(Frequency::from_hz(1_000_000_000)).unwrap()
}

/// A one-cycle link holding `capacity` messages.
pub fn spec(name: &str, capacity: u32) -> LinkSpec {
    LinkSpec { name: name.into(), clock: clock(), latency_cycles: 1, capacity }
}

/// An answer as the requester saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Answer {
    pub id: u64,
    pub addr: u64,
    pub sent: Tick,
    pub at: Tick,
}

impl Answer {
    /// End-to-end latency.
    pub fn latency(&self) -> Tick {
        self.at - self.sent
    }
}

/// Sends its script in order, each request no earlier than its tick (later when refused), and
/// records every answer.
pub struct Driver {
    pub name: String,
    pub req: LinkId,
    pub resp: LinkId,
    pub script: Vec<(Tick, MemRequest)>,
    pub next: usize,
    pub sent_at: Vec<Tick>,
    pub answers: Vec<Answer>,
    pub refusals: u64,
    /// Ticks `[from, to)` during which the driver takes no answers (its response link fills).
    pub deaf: (Tick, Tick),
    armed: Option<Tick>,
    deaf_timer: bool,
}

impl Driver {
    pub fn new(name: &str, req: LinkId, resp: LinkId, script: Vec<(Tick, MemRequest)>) -> Self {
        Self {
            name: name.into(),
            req,
            resp,
            script,
            next: 0,
            sent_at: vec![],
            answers: vec![],
            refusals: 0,
            deaf: (0, 0),
            armed: None,
            deaf_timer: false,
        }
    }

    fn wake(&mut self, why: Wake, ctx: &mut Ctx<'_, Msg>) {
        if let Wake::Timer(_) = why {
            self.armed = None;
        }
        let now = ctx.now();
        let deaf = now >= self.deaf.0 && now < self.deaf.1;
        if !self.deaf_timer && self.deaf.1 > now {
            // Wake when the deaf spell ends, to take what piled up.
            ctx.schedule_at(self.deaf.1, Priority::DEFAULT, 1);
            self.deaf_timer = true;
        }
        while let Some(m) = if deaf { None } else { ctx.recv(self.resp) } {
            let Msg::Resp(r) = m else { panic!("{} got a request", self.name) };
            let sent = self
                .script
                .iter()
                .position(|(_, q)| q.id == r.id)
                .map_or(0, |i| self.sent_at.get(i).copied().unwrap_or(0));
            self.answers.push(Answer { id: r.id, addr: r.addr, sent, at: ctx.now() });
            ctx.progress();
        }
        while let Some(&(t, req)) = self.script.get(self.next) {
            if t > ctx.now() {
                if self.armed.is_none_or(|a| a > t) {
                    ctx.schedule_at(t, Priority::DEFAULT, 0);
                    self.armed = Some(t);
                }
                break;
            }
            let req = MemRequest { issued: ctx.now(), ..req };
            if ctx.send(self.req, Msg::Req(req)).is_err() {
                self.refusals += 1;
                break;
            }
            self.sent_at.push(ctx.now());
            self.next += 1;
        }
    }

    /// Answers by id, for scripts whose ids are unique.
    pub fn answer(&self, id: u64) -> Answer {
        let mut it = self.answers.iter().filter(|a| a.id == id);
        let a = *it.next().unwrap_or_else(|| panic!("{}: request {id} never answered", self.name));
        assert!(it.next().is_none(), "{}: request {id} answered twice", self.name);
        a
    }
}

/// A memory that answers every request `latency` cycles after it arrives, in order, and records
/// what it saw.
pub struct Probe {
    pub name: String,
    pub inp: LinkId,
    pub out: LinkId,
    pub latency: Tick,
    pub seen: Vec<(Tick, MemRequest)>,
    queue: VecDeque<(Tick, MemResponse)>,
    armed: bool,
    blocked: bool,
    pub reads_in_flight: u64,
    pub max_reads_in_flight: u64,
}

impl Probe {
    pub fn new(name: &str, inp: LinkId, out: LinkId, latency_cycles: u64) -> Self {
        Self {
            name: name.into(),
            inp,
            out,
            latency: latency_cycles * NS,
            seen: vec![],
            queue: VecDeque::new(),
            armed: false,
            blocked: false,
            reads_in_flight: 0,
            max_reads_in_flight: 0,
        }
    }

    fn wake(&mut self, why: Wake, ctx: &mut Ctx<'_, Msg>) {
        match why {
            Wake::Timer(_) => self.armed = false,
            Wake::Space(_) => self.blocked = false,
            _ => {}
        }
        while let Some(m) = ctx.recv(self.inp) {
            let Msg::Req(r) = m else { panic!("{} got a response", self.name) };
            self.seen.push((ctx.now(), r));
            if !r.write {
                self.reads_in_flight += 1;
                self.max_reads_in_flight = self.max_reads_in_flight.max(self.reads_in_flight);
            }
            self.queue.push_back((ctx.now() + self.latency, r.respond()));
        }
        while !self.blocked
            && let Some(&(due, resp)) = self.queue.front()
        {
            if due > ctx.now() {
                if !self.armed {
                    ctx.schedule_at(due, Priority::DEFAULT, 0);
                    self.armed = true;
                }
                break;
            }
            if ctx.send(self.out, Msg::Resp(resp)).is_err() {
                self.blocked = true;
                break;
            }
            if !resp.write {
                self.reads_in_flight -= 1;
            }
            self.queue.pop_front();
        }
    }

    /// Reads seen, as (addr, bytes).
    pub fn reads(&self) -> Vec<(u64, u32)> {
        self.seen.iter().filter(|(_, r)| !r.write).map(|(_, r)| (r.addr, r.bytes)).collect()
    }

    /// Writes seen, as (addr, bytes).
    pub fn writes(&self) -> Vec<(u64, u32)> {
        self.seen.iter().filter(|(_, r)| r.write).map(|(_, r)| (r.addr, r.bytes)).collect()
    }
}

/// Every kind of component the tests build (boxing the large ones would only slow the tests).
#[allow(clippy::large_enum_variant)]
pub enum Node {
    Driver(Driver),
    Cache(Cache<Msg>),
    Xbar(Crossbar<Msg>),
    Probe(Probe),
    Mem(SimpleMemory<Msg>),
}

impl Component for Node {
    type Msg = Msg;

    fn name(&self) -> &str {
        match self {
            Node::Driver(d) => &d.name,
            Node::Cache(c) => c.name(),
            Node::Xbar(x) => x.name(),
            Node::Probe(p) => &p.name,
            Node::Mem(m) => m.name(),
        }
    }

    fn wake(&mut self, why: Wake, ctx: &mut Ctx<'_, Msg>) {
        match self {
            Node::Driver(d) => d.wake(why, ctx),
            Node::Cache(c) => c.wake(why, ctx),
            Node::Xbar(x) => x.wake(why, ctx),
            Node::Probe(p) => p.wake(why, ctx),
            Node::Mem(m) => m.wake(why, ctx),
        }
    }

    fn busy(&self) -> bool {
        match self {
            Node::Driver(d) => d.next < d.script.len() || d.answers.len() < d.script.len(),
            Node::Cache(c) => c.busy(),
            Node::Xbar(x) => x.busy(),
            Node::Probe(p) => !p.queue.is_empty(),
            Node::Mem(m) => m.busy(),
        }
    }

    fn status(&self) -> String {
        match self {
            Node::Driver(d) => format!("sent {} of {}, {} answers", d.next, d.script.len(), d.answers.len()),
            Node::Cache(c) => c.status(),
            Node::Xbar(x) => x.status(),
            Node::Probe(p) => format!("{} queued", p.queue.len()),
            Node::Mem(m) => m.status(),
        }
    }
}

/// Typed access to the components of a finished run.
pub trait Nodes {
    fn driver(&self, id: ComponentId) -> &Driver;
    fn cache(&self, id: ComponentId) -> &Cache<Msg>;
    fn probe(&self, id: ComponentId) -> &Probe;
    fn xbar(&self, id: ComponentId) -> &Crossbar<Msg>;
}

impl Nodes for Engine<Node> {
    fn driver(&self, id: ComponentId) -> &Driver {
        match self.component(id) {
            Some(Node::Driver(d)) => d,
            _ => panic!("not a driver"),
        }
    }
    fn cache(&self, id: ComponentId) -> &Cache<Msg> {
        match self.component(id) {
            Some(Node::Cache(c)) => c,
            _ => panic!("not a cache"),
        }
    }
    fn probe(&self, id: ComponentId) -> &Probe {
        match self.component(id) {
            Some(Node::Probe(p)) => p,
            _ => panic!("not a probe"),
        }
    }
    fn xbar(&self, id: ComponentId) -> &Crossbar<Msg> {
        match self.component(id) {
            Some(Node::Xbar(x)) => x,
            _ => panic!("not a crossbar"),
        }
    }
}

/// A cache configuration from TOML text (tests write configs as presets do).
pub fn config(text: &str) -> CacheConfig {
    toml::from_str(text).unwrap_or_else(|e| panic!("bad test config: {e}"))
}

/// A small cache: one set of four 64 B ways (LRU), 4 MSHRs of 8 targets, 4-cycle hits.
pub fn one_set() -> CacheConfig {
    one_set_with("")
}

/// [`one_set`] with `extra` TOML keys (a replacement policy, sectors, ...).
pub fn one_set_with(extra: &str) -> CacheConfig {
    config(&format!(
        r#"size = "256B"
           associativity = 4
           line = "64B"
           mshrs = 4
           hit_latency_cycles = 4
           {extra}"#
    ))
}

/// Drivers (one per script) on the upstream ports of one cache over a [`Probe`] of
/// `mem_latency` cycles.
pub struct Single {
    pub e: Engine<Node>,
    pub drivers: Vec<ComponentId>,
    pub cache: ComponentId,
    pub probe: ComponentId,
}

impl Single {
    pub fn new(cfg: &CacheConfig, scripts: Vec<Vec<(Tick, MemRequest)>>, mem_latency: u64, cap: u32) -> Self {
        Self::clocked(cfg, scripts, mem_latency, cap, clock())
    }

    /// The same with the cache in its own clock domain (links stay at 1 GHz).
    pub fn clocked(
        cfg: &CacheConfig,
        scripts: Vec<Vec<(Tick, MemRequest)>>,
        mem_latency: u64,
        cap: u32,
        cache_clock: Clock,
    ) -> Self {
        let mut e: Engine<Node> = Engine::new();
        let drivers: Vec<ComponentId> = scripts.iter().map(|_| e.reserve()).collect();
        let (cache, probe) = (e.reserve(), e.reserve());
        let mut ups = vec![];
        for (i, &d) in drivers.iter().enumerate() {
            let req = e.connect(d, cache, spec(&format!("d{i}.req"), cap)).unwrap();
            let resp = e.connect(cache, d, spec(&format!("d{i}.resp"), cap)).unwrap();
            ups.push((req, resp));
        }
        let down_req = e.connect(cache, probe, spec("down.req", cap)).unwrap();
        let down_resp = e.connect(probe, cache, spec("down.resp", cap)).unwrap();
        let links = CacheLinks { upstream: &ups, down_req, down_resp };
        let c = Cache::new("l1", cfg, cache_clock, links, &SeedTree::new(1), e.stats_mut()).unwrap();
        for ((&d, script), &(req, resp)) in drivers.iter().zip(scripts).zip(&ups) {
            e.install(d, Node::Driver(Driver::new(&format!("cpu{}", d.index()), req, resp, script))).unwrap();
        }
        e.install(cache, Node::Cache(c)).unwrap();
        e.install(probe, Node::Probe(Probe::new("mem", down_req, down_resp, mem_latency))).unwrap();
        Self { e, drivers, cache, probe }
    }

    /// Runs to the end; panics on a stall.
    pub fn run(mut self) -> Self {
        self.e.run(None).unwrap_or_else(|err| panic!("{err}"));
        self
    }

    pub fn driver(&self, i: usize) -> &Driver {
        self.e.driver(self.drivers[i])
    }
    pub fn cache(&self) -> &Cache<Msg> {
        self.e.cache(self.cache)
    }
    pub fn probe(&self) -> &Probe {
        self.e.probe(self.probe)
    }
    pub fn stat(&self, leaf: &str) -> u64 {
        self.e.stats().lookup_counter(&format!("l1.{leaf}")).unwrap_or_else(|| panic!("no stat l1.{leaf}"))
    }
}

/// One driver's script with requests at the given ticks, ids 0, 1, 2...
pub fn script(reqs: &[(Tick, MemRequest)]) -> Vec<(Tick, MemRequest)> {
    reqs.iter().enumerate().map(|(i, &(t, r))| (t, MemRequest { id: i as u64, ..r })).collect()
}

/// A read of `bytes` at `addr`.
pub fn rd(addr: u64, bytes: u32) -> MemRequest {
    MemRequest::read(0, addr, bytes, 0)
}

/// A write of `bytes` at `addr`.
pub fn wr(addr: u64, bytes: u32) -> MemRequest {
    MemRequest::write(0, addr, bytes, 0)
}

/// The same request with the non-temporal hint.
pub fn nt(r: MemRequest) -> MemRequest {
    MemRequest { non_temporal: true, ..r }
}

/// A crossbar between `ups` drivers and `banks` probes.
pub struct Fabric {
    pub e: Engine<Node>,
    pub drivers: Vec<ComponentId>,
    pub xbar: ComponentId,
    pub banks: Vec<ComponentId>,
}

impl Fabric {
    pub fn new(
        cfg: &CrossbarConfig,
        scripts: Vec<Vec<(Tick, MemRequest)>>,
        banks: usize,
        mem_latency: u64,
    ) -> Self {
        let mut e: Engine<Node> = Engine::new();
        let drivers: Vec<ComponentId> = scripts.iter().map(|_| e.reserve()).collect();
        let xbar = e.reserve();
        let bank_ids: Vec<ComponentId> = (0..banks).map(|_| e.reserve()).collect();
        let mut ups = vec![];
        for (i, &d) in drivers.iter().enumerate() {
            ups.push((
                e.connect(d, xbar, spec(&format!("u{i}.req"), 8)).unwrap(),
                e.connect(xbar, d, spec(&format!("u{i}.resp"), 8)).unwrap(),
            ));
        }
        let mut downs = vec![];
        for (b, &p) in bank_ids.iter().enumerate() {
            downs.push((
                e.connect(xbar, p, spec(&format!("b{b}.req"), 8)).unwrap(),
                e.connect(p, xbar, spec(&format!("b{b}.resp"), 8)).unwrap(),
            ));
        }
        let links = CrossbarLinks { upstream: &ups, downstream: &downs };
        let x = Crossbar::new("xbar", cfg, clock(), links, ByteSize::from_bytes(64), e.stats_mut()).unwrap();
        for ((&d, script), &(req, resp)) in drivers.iter().zip(scripts).zip(&ups) {
            e.install(d, Node::Driver(Driver::new(&format!("cpu{}", d.index()), req, resp, script))).unwrap();
        }
        e.install(xbar, Node::Xbar(x)).unwrap();
        for (b, (&p, &(req, resp))) in bank_ids.iter().zip(&downs).enumerate() {
            e.install(p, Node::Probe(Probe::new(&format!("bank{b}"), req, resp, mem_latency))).unwrap();
        }
        Self { e, drivers, xbar, banks: bank_ids }
    }

    pub fn run(mut self) -> Self {
        self.e.run(None).unwrap_or_else(|err| panic!("{err}"));
        self
    }
}
