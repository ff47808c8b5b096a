//! Assembling a DAE (or plain-CPU) system from its parameters and running a compiled workload.
//!
//! The chip is `cores` cores, each with an access unit unless the system has none, all sharing
//! one memory. Every core and unit has its own request/response link pair to the memory; each
//! unit feeds its core through an output-queue link whose capacity is the queue's depth. After
//! the run the cores' output buffers are compared with the reference result, element by element.

use access_unit::{AccessUnit, AccessUnitConfig, AuPorts, OutqEntry};
use compiler::{CompiledWorkload, Contents};
use exec_core::{Core, CoreConfig, CorePorts, OutputBuffer, QueueEntry};
use hdrhistogram::Histogram;
use mem_model::{Backing, MemRequest, MemResponse, MemoryImage, Region, SimpleMemory, SimpleMemoryConfig};
use sim_core::{Carries, Component, Ctx, Engine, LinkSpec, Stats, Tick, Wake};
use std::sync::Arc;
use thiserror::Error;

/// Every message of a DAE system.
#[derive(Debug, Clone, Copy)]
pub enum Msg {
    /// A memory request.
    Req(MemRequest),
    /// A memory response.
    Resp(MemResponse),
    /// An output-queue entry from an access unit to its core.
    Outq(OutqEntry),
}

sim_core::carries!(Msg { Req(MemRequest), Resp(MemResponse), Outq(OutqEntry) });

/// The core reads the access unit's entries as its own queue-entry type: same fields.
impl Carries<QueueEntry> for Msg {
    fn wrap(e: QueueEntry) -> Self {
        Msg::Outq(OutqEntry { control: e.control, operands: e.operands, len: e.len })
    }
    fn unwrap_as(self) -> Result<QueueEntry, Self> {
        if let Msg::Outq(e) = self {
            Ok(QueueEntry { control: e.control, operands: e.operands, len: e.len })
        } else {
            Err(self)
        }
    }
}

/// Every component of a DAE system (one enum: static dispatch on the hot path).
// Components sit inline in the engine's table; boxing the large ones would add an indirection
// to every event.
#[allow(clippy::large_enum_variant)]
pub enum Node {
    /// A core.
    Core(Core<Msg>),
    /// An access unit.
    Au(AccessUnit<Msg>),
    /// The memory.
    Mem(SimpleMemory<Msg>),
}

impl Component for Node {
    type Msg = Msg;
    fn name(&self) -> &str {
        match self {
            Node::Core(c) => c.name(),
            Node::Au(a) => a.name(),
            Node::Mem(m) => m.name(),
        }
    }
    #[inline]
    fn wake(&mut self, why: Wake, ctx: &mut Ctx<'_, Msg>) {
        match self {
            Node::Core(c) => c.wake(why, ctx),
            Node::Au(a) => a.wake(why, ctx),
            Node::Mem(m) => m.wake(why, ctx),
        }
    }
    fn busy(&self) -> bool {
        match self {
            Node::Core(c) => c.busy(),
            Node::Au(a) => a.busy(),
            Node::Mem(m) => m.busy(),
        }
    }
    fn status(&self) -> String {
        match self {
            Node::Core(c) => c.status(),
            Node::Au(a) => a.status(),
            Node::Mem(m) => m.status(),
        }
    }
}

/// Access-unit parameters plus the depth of its output queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AccessUnitSpec {
    /// The unit.
    pub unit: AccessUnitConfig,
    /// Output-queue capacity in entries.
    pub outq_entries: u32,
}

/// A DAE chip, or the same chip without access units.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DaeSystem {
    /// Number of cores.
    pub cores: u32,
    /// The core.
    pub core: CoreConfig,
    /// f32 lanes per vector register.
    pub vector_lanes: u32,
    /// The access unit, if the chip has them.
    pub access_unit: Option<AccessUnitSpec>,
    /// The memory.
    pub memory: SimpleMemoryConfig,
}

/// What one run measured.
#[derive(Debug, Clone)]
pub struct RunResult {
    /// Simulated time until the last request was answered.
    pub sim_time: Tick,
    /// Lookups performed.
    pub lookups: u64,
    /// Bytes moved by the memory.
    pub bytes: u64,
    /// Memory requests served.
    pub requests: u64,
    /// Latency of every lookup, in ps, measured at the requester.
    pub lookup_latency: Histogram<u64>,
    /// Whether every output element equals the reference (the first mismatch otherwise).
    pub verified: Result<(), String>,
    /// Events the engine processed.
    pub events: u64,
    /// Every statistic of the run.
    pub stats: serde_json::Value,
}

/// Why a run could not produce a result.
#[derive(Debug, Error)]
pub enum SystemError {
    /// A component could not be built from its parameters.
    #[error("building {component}: {message}")]
    Build {
        /// The component.
        component: String,
        /// What was wrong.
        message: String,
    },
    /// The engine stopped: deadlock, livelock or a wiring error.
    #[error(transparent)]
    Engine(#[from] sim_core::EngineError),
    /// The run was still going at its simulated-time limit.
    #[error(
        "still running after {limit} ps of simulated time (raise experiment.max_sim_time if this is expected); busy: {report}"
    )]
    TimeLimit {
        /// The limit.
        limit: Tick,
        /// Who was still busy.
        report: String,
    },
    /// A component faulted during execution.
    #[error("{component} faulted: {message}")]
    Fault {
        /// The component.
        component: String,
        /// The fault.
        message: String,
    },
}

fn build_err(component: &str, e: impl std::fmt::Display) -> SystemError {
    SystemError::Build { component: component.to_string(), message: e.to_string() }
}

/// Names and states of the components still busy.
fn busy_report(e: &Engine<Node>) -> Vec<String> {
    (0..e.component_count())
        .filter_map(|i| e.component(sim_core::ComponentId::from_index(i)))
        .filter(|c| c.busy())
        .map(|c| format!("{}: {}", c.name(), c.status()))
        .take(8)
        .collect()
}

/// The functional memory image holding a compiled workload's data.
pub fn memory_image(w: &CompiledWorkload) -> Result<MemoryImage, SystemError> {
    let mut img = MemoryImage::new();
    for r in &w.regions {
        let backing = match &r.contents {
            Contents::Words(v) => Backing::Words(v.clone()),
            Contents::Table { seed, table, dim } => {
                Backing::Procedural { seed: *seed, table: *table, dim: *dim }
            }
            Contents::Output => Backing::Zero,
        };
        img.add(Region { name: r.name.clone(), base: r.base, size: r.size, backing })
            .map_err(|e| build_err("memory image", e))?;
    }
    Ok(img)
}

/// Runs compiled workload `w` on `sys` and checks its outputs against `reference`; a run still
/// going at `max_time` (a program that loops forever) is stopped with an error.
pub fn run(
    sys: &DaeSystem,
    w: &CompiledWorkload,
    reference: &[f32],
    max_time: Tick,
) -> Result<RunResult, SystemError> {
    let image = Arc::new(memory_image(w)?);
    let mut e: Engine<Node> = Engine::new();
    let clock = sys.core.clock;
    let link = |name: String, capacity: u32| LinkSpec { name, clock, latency_cycles: 1, capacity };
    let mem = e.reserve();
    let mut ports = Vec::new();
    let mut cores = Vec::new();
    let mut units = Vec::new();
    for (i, job) in w.jobs.iter().enumerate() {
        let name = format!("core{i}");
        let core = e.reserve();
        let req = e.connect(core, mem, link(format!("{name}.req"), 1024))?;
        let resp = e.connect(mem, core, link(format!("{name}.resp"), 1024))?;
        ports.push((req, resp));
        let mut queue = None;
        if let (Some(spec), Some(program)) = (sys.access_unit, &job.au) {
            let au_name = format!("{name}.au");
            let au = e.reserve();
            let areq = e.connect(au, mem, link(format!("{au_name}.req"), 1024))?;
            let aresp = e.connect(mem, au, link(format!("{au_name}.resp"), 1024))?;
            let outq = e.connect(au, core, link(format!("{au_name}.outq"), spec.outq_entries))?;
            ports.push((areq, aresp));
            queue = Some(outq);
            let au_ports = AuPorts { mem_req: areq, mem_resp: aresp, outq };
            let unit =
                AccessUnit::new(&au_name, spec.unit, program.clone(), image.clone(), au_ports, e.stats_mut())
                    .map_err(|err| build_err(&au_name, err))?;
            e.install(au, Node::Au(unit))?;
            units.push((au_name, au));
        }
        let core_ports = CorePorts { mem_req: req, mem_resp: resp, queue };
        let out = OutputBuffer { base: job.output_base, elems: job.output_elems };
        let c = Core::new(&name, sys.core, job.core.clone(), image.clone(), core_ports, out, e.stats_mut())
            .map_err(|err| build_err(&name, err))?;
        e.install(core, Node::Core(c))?;
        cores.push((name, core));
    }
    let m =
        SimpleMemory::new("mem", sys.memory, &ports, e.stats_mut()).map_err(|err| build_err("mem", err))?;
    e.install(mem, Node::Mem(m))?;

    let summary = e.run(Some(max_time));
    // A fault stops its component, which the engine then sees as a stall: report the fault.
    for (name, id) in cores.iter().chain(&units) {
        let fault = match e.component(*id) {
            Some(Node::Core(c)) => c.fault().map(|f| f.to_string()),
            Some(Node::Au(a)) => a.fault().map(|f| f.to_string()),
            _ => None,
        };
        if let Some(message) = fault {
            return Err(SystemError::Fault { component: name.clone(), message });
        }
    }
    let summary = summary?;
    if summary.hit_limit {
        return Err(SystemError::TimeLimit { limit: max_time, report: format!("{:?}", busy_report(&e)) });
    }

    let dim = w.spec.dim as usize;
    let mut verified = Ok(());
    for ((name, id), job) in cores.iter().zip(&w.jobs) {
        let Some(Node::Core(c)) = e.component(*id) else { continue };
        let lo = job.bags.start as usize * dim;
        let expect = reference.get(lo..lo + job.output_elems as usize).unwrap_or(&[]);
        if let Some(k) =
            (0..expect.len()).find(|&k| c.outputs().get(k).map(|v| v.to_bits()) != Some(expect[k].to_bits()))
        {
            let got = c.outputs().get(k).copied().unwrap_or(f32::NAN);
            let (bag, col) = ((lo + k) / dim, (lo + k) % dim);
            verified = Err(format!("{name}: out[{bag}][{col}] = {got}, reference {}", expect[k]));
            break;
        }
    }

    let stats: &Stats = e.stats();
    let lat_name = if sys.access_unit.is_some() { "au.lookup_latency" } else { "lookup_latency" };
    let mut lookup_latency =
        Histogram::<u64>::new_with_bounds(1, 1_000_000_000, 3).map_err(|err| build_err("stats", err))?;
    let mut lookups = 0;
    for (name, _) in &cores {
        if let Some(h) = stats.lookup_histogram(&format!("{name}.{lat_name}")) {
            lookups += h.len();
            lookup_latency.add(h).map_err(|err| build_err("stats", err))?;
        }
    }
    let counter = |n: &str| stats.lookup_counter(n).unwrap_or(0);
    Ok(RunResult {
        sim_time: summary.end_tick,
        lookups,
        bytes: counter("mem.bytes_read") + counter("mem.bytes_written"),
        requests: counter("mem.reads") + counter("mem.writes"),
        lookup_latency,
        verified,
        events: summary.events,
        stats: stats.to_json(),
    })
}
