//! A small system for the integration tests: one core, a `SimpleMemory`, and optionally a
//! producer that plays the access unit by sending queue entries on a schedule.

#![allow(dead_code)]

use exec_core::{Core, CoreConfig, CorePorts, Latencies, OutputBuffer, QueueEntry};
use mem_model::{MemRequest, MemResponse, MemoryImage, SimpleMemory, SimpleMemoryConfig};
use sim_core::{
    Bandwidth, Clock, Component, ComponentId, Ctx, Engine, EngineError, Frequency, LinkId, LinkSpec,
    Priority, RunSummary, Tick, TimeSpan, Wake,
};
use std::sync::Arc;

/// The test model's message set.
#[derive(Debug, Clone)]
pub enum Msg {
    Req(MemRequest),
    Resp(MemResponse),
    Queue(QueueEntry),
}

sim_core::carries!(Msg { Req(MemRequest), Resp(MemResponse), Queue(QueueEntry) });

/// Sends its entries on `out`, one every `interval` ticks from `start`, waiting when the link
/// is full.
pub struct Producer {
    pub entries: Vec<QueueEntry>,
    pub next: usize,
    pub start: Tick,
    pub interval: Tick,
    pub out: Option<LinkId>,
    /// Tick each entry was sent.
    pub sent_at: Vec<Tick>,
    /// Priority of its send timers: among events of one tick, it sends before or after others.
    pub priority: Priority,
}

impl Producer {
    fn send_due(&mut self, ctx: &mut Ctx<'_, Msg>) {
        let Some(out) = self.out else { return };
        while self.next < self.entries.len() {
            let due = self.start + self.interval * self.next as Tick;
            if due > ctx.now() {
                ctx.schedule_at(due, self.priority, 0);
                return;
            }
            if ctx.send(out, Msg::Queue(self.entries[self.next])).is_err() {
                return; // woken by Space
            }
            self.sent_at.push(ctx.now());
            self.next += 1;
        }
    }
}

/// The components of the test model (a core is much larger than the others).
#[allow(clippy::large_enum_variant)]
pub enum Node {
    Core(Core<Msg>),
    Mem(SimpleMemory<Msg>),
    Producer(Producer),
}

impl Component for Node {
    type Msg = Msg;
    fn name(&self) -> &str {
        match self {
            Node::Core(c) => c.name(),
            Node::Mem(m) => m.name(),
            Node::Producer(_) => "producer",
        }
    }
    fn wake(&mut self, why: Wake, ctx: &mut Ctx<'_, Msg>) {
        match self {
            Node::Core(c) => c.wake(why, ctx),
            Node::Mem(m) => m.wake(why, ctx),
            Node::Producer(p) => p.send_due(ctx),
        }
    }
    fn busy(&self) -> bool {
        match self {
            Node::Core(c) => c.busy(),
            Node::Mem(m) => m.busy(),
            Node::Producer(p) => p.next < p.entries.len(),
        }
    }
    fn status(&self) -> String {
        match self {
            Node::Core(c) => c.status(),
            Node::Mem(m) => m.status(),
            Node::Producer(p) => format!("{} of {} entries sent", p.next, p.entries.len()),
        }
    }
}

/// A 1 GHz clock: one cycle is 1000 ps, which keeps expected times readable.
pub fn clock() -> Clock {
    Clock::new(Frequency::from_hz(1_000_000_000)).expect("valid clock")
}

/// A core config for tests: 1 GHz, the given width and MSHRs, 64-byte lines, small latencies,
/// and the Neoverse-V2-like window, units and penalty except where a test changes them.
pub fn core_config(issue_width: u32, max_outstanding: u32) -> CoreConfig {
    CoreConfig {
        clock: clock(),
        issue_width,
        max_outstanding,
        line_bytes: 64,
        latency: Latencies { alu: 1, mul: 3, div: 10, vector: 2, queue_pop: 2, queue_load: 5 },
        // A datapath as wide as the widest vector: nothing is cracked unless a test says so.
        datapath_bits: 2048,
        ..CoreConfig::neoverse_v2_like(clock())
    }
}

/// A memory with 100 ns latency and 1 TB/s (64 B take 64 ps).
pub fn memory_config() -> SimpleMemoryConfig {
    SimpleMemoryConfig {
        latency: TimeSpan::from_ns(100),
        bandwidth: Bandwidth::from_bytes_per_second(1_000_000_000_000),
    }
}

/// How to build a test system.
pub struct Setup {
    pub cfg: CoreConfig,
    pub mem: SimpleMemoryConfig,
    pub image: MemoryImage,
    pub output: OutputBuffer,
    /// Capacity of the request and response links.
    pub link_capacity: u32,
    /// Entries, first send tick and interval for a producer on a queue link.
    pub queue: Option<(Vec<QueueEntry>, Tick, Tick)>,
    /// Priority of the producer's sends (default: [`Priority::DEFAULT`]).
    pub queue_priority: Priority,
}

impl Setup {
    pub fn new(image: MemoryImage, output: OutputBuffer) -> Self {
        Setup {
            cfg: core_config(1, 16),
            mem: memory_config(),
            image,
            output,
            link_capacity: 64,
            queue: None,
            queue_priority: Priority::DEFAULT,
        }
    }
}

/// A built system.
pub struct System {
    pub engine: Engine<Node>,
    pub core: ComponentId,
    pub producer: Option<ComponentId>,
}

impl System {
    pub fn build(setup: Setup, program: &str) -> Result<System, exec_core::CoreError> {
        let program = exec_core::parse(program)?;
        let mut engine: Engine<Node> = Engine::new();
        let core = engine.reserve();
        let mem = engine.reserve();
        let spec = |name: &str| LinkSpec {
            name: name.to_string(),
            clock: clock(),
            latency_cycles: 1,
            capacity: setup.link_capacity,
        };
        let req = engine.connect(core, mem, spec("core.req")).expect("link");
        let resp = engine.connect(mem, core, spec("core.resp")).expect("link");
        let mut producer = None;
        let mut queue = None;
        if let Some((entries, start, interval)) = setup.queue {
            let p = engine.reserve();
            let q = engine
                .connect(
                    p,
                    core,
                    LinkSpec { name: "core.outq".into(), clock: clock(), latency_cycles: 1, capacity: 4 },
                )
                .expect("link");
            let node = Producer {
                entries,
                next: 0,
                start,
                interval,
                out: Some(q),
                sent_at: Vec::new(),
                priority: setup.queue_priority,
            };
            engine.install(p, Node::Producer(node)).expect("install");
            queue = Some(q);
            producer = Some(p);
        }
        let ports = CorePorts { mem_req: req, mem_resp: resp, queue };
        let c = Core::new(
            "core",
            setup.cfg,
            program,
            Arc::new(setup.image),
            ports,
            setup.output,
            engine.stats_mut(),
        )?;
        let m = SimpleMemory::new("mem", setup.mem, &[(req, resp)], engine.stats_mut()).expect("memory");
        engine.install(core, Node::Core(c)).expect("install");
        engine.install(mem, Node::Mem(m)).expect("install");
        Ok(System { engine, core, producer })
    }

    pub fn run(&mut self) -> Result<RunSummary, EngineError> {
        self.engine.run(Some(1_000_000_000_000))
    }

    pub fn core(&self) -> &Core<Msg> {
        match self.engine.component(self.core) {
            Some(Node::Core(c)) => c,
            _ => panic!("no core"),
        }
    }

    pub fn producer(&self) -> &Producer {
        match self.producer.and_then(|p| self.engine.component(p)) {
            Some(Node::Producer(p)) => p,
            _ => panic!("no producer"),
        }
    }
}

/// The test clock's period in ps (1 GHz).
pub const CYCLE: u64 = 1000;

/// A setup with no memory contents and no output buffer.
pub fn no_memory() -> Setup {
    Setup::new(MemoryImage::new(), OutputBuffer { base: 0, elems: 0 })
}

/// Builds and runs `text` on `setup` to the end; the core must not fault.
pub fn run(setup: Setup, text: &str) -> System {
    let mut sys = System::build(setup, text).expect("builds");
    sys.run().expect("runs to the end");
    assert_eq!(sys.core().fault(), None);
    sys
}

/// The cycle the core finished at (on an edge).
pub fn finish_cycles(sys: &System) -> u64 {
    let t = sys.core().finish_tick().expect("finished");
    assert_eq!(t % CYCLE, 0, "finishes at an edge");
    t / CYCLE
}
