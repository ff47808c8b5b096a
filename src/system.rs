//! Assembling a DAE (or plain-CPU) system from its parameters and running a compiled workload.
//!
//! The chip is `cores` cores, each with its private caches (L1D, L2) and an access unit unless
//! the system has none, all sharing a banked LLC behind a network, and the memory behind that.
//! Every core, private cache and unit has its own request/response link pair to the level it
//! sends to (a unit: the LLC, or its core's L2 with `attach = "l2"`); each unit feeds its core
//! through an output-queue link of `access_unit.outq_entries` messages, while the queue's own
//! depth is its chunks (`outq_chunk_entries` x `outq_chunks`, held in the core's private L2).
//! After the run the cores' output buffers are compared with the reference result, element by
//! element.

use access_unit::{AccessUnit, AccessUnitConfig, AuPorts, OutqEntry};
use compiler::{CompiledWorkload, Contents, WorkloadSpec};
use exec_core::{Core, CoreConfig, CorePorts, OutputBuffer, QueueEntry};
use hdrhistogram::Histogram;
use mem_model::cache::{Cache, CacheConfig, CacheLinks, Crossbar, CrossbarConfig, CrossbarLinks};
use mem_model::dram::{Dram, DramSpec};
use mem_model::{Backing, MemRequest, MemResponse, MemoryImage, Region, SimpleMemory, SimpleMemoryConfig};
use sim_core::procedural::TableFormat;
use sim_core::{Carries, Component, ComponentId, Ctx, Engine, LinkId, LinkSpec, SeedTree, Stats, Tick, Wake};
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
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
    /// A cache (private L1D/L2 or a shared LLC bank).
    Cache(Cache<Msg>),
    /// The on-chip network between private caches and LLC banks.
    Xbar(Crossbar<Msg>),
    /// The fixed-latency memory.
    Mem(SimpleMemory<Msg>),
    /// The DRAM/HBM memory.
    Dram(Dram<Msg>),
}

/// Forwards a call to whichever component a [`Node`] holds.
macro_rules! each_node {
    ($self:ident, $c:ident => $e:expr) => {
        match $self {
            Node::Core($c) => $e,
            Node::Au($c) => $e,
            Node::Cache($c) => $e,
            Node::Xbar($c) => $e,
            Node::Mem($c) => $e,
            Node::Dram($c) => $e,
        }
    };
}

impl Component for Node {
    type Msg = Msg;
    fn name(&self) -> &str {
        each_node!(self, c => c.name())
    }
    #[inline]
    fn wake(&mut self, why: Wake, ctx: &mut Ctx<'_, Msg>) {
        each_node!(self, c => c.wake(why, ctx))
    }
    fn busy(&self) -> bool {
        each_node!(self, c => c.busy())
    }
    fn status(&self) -> String {
        each_node!(self, c => c.status())
    }
    fn takes_every_input(&self) -> bool {
        each_node!(self, c => c.takes_every_input())
    }
}

/// Access-unit parameters plus the depth of its output queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AccessUnitSpec {
    /// The unit.
    pub unit: AccessUnitConfig,
    /// Capacity of the link from the unit to its core, in output-queue entries (the queue's
    /// own depth is the unit's `outq_chunk_entries` x `outq_chunks`).
    pub outq_entries: u32,
}

/// Where an access unit sends its requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttachPoint {
    /// Its core's private L2.
    L2,
    /// The shared LLC (through the on-chip network), as the TMU does.
    Llc,
}

/// The memory behind the caches.
#[derive(Debug, Clone)]
pub enum MemoryPlan {
    /// Fixed latency plus a bandwidth limit.
    Simple(SimpleMemoryConfig),
    /// The DRAM/HBM model.
    Dram(Arc<DramSpec>),
}

/// The cache hierarchy; each level is optional.
#[derive(Debug, Clone, Default)]
pub struct CachePlan {
    /// Private L1 data cache per core.
    pub l1d: Option<CacheConfig>,
    /// Private L2 per core.
    pub l2: Option<CacheConfig>,
    /// Shared LLC: the configuration of one bank.
    pub llc: Option<CacheConfig>,
    /// LLC banks (0: one per core).
    pub llc_banks: u32,
    /// The network between private caches and LLC banks.
    pub noc: Option<CrossbarConfig>,
}

/// Where a system's hand-written programs come from (`[system.compiler] programs = ...`).
#[derive(Debug, Clone)]
pub enum HandSource {
    /// One template pair for every workload (`programs = "<stem>"`: `<stem>.au`, `<stem>.core`).
    Pair(compiler::hand::HandPrograms),
    /// A directory (`programs = "<dir>/"`): each workload runs `<dir>/<family>.{au,core}`, the
    /// family named by [`compiler::hand::family`]. The pairs the experiment's workloads need
    /// are read when the config loads, keyed by family.
    Dir {
        /// The directory.
        dir: PathBuf,
        /// The pairs read, by family stem.
        pairs: BTreeMap<String, compiler::hand::HandPrograms>,
    },
}

impl HandSource {
    /// The template pair that serves workload `spec`; an error (for that run) if it is a
    /// directory's family that was not read.
    pub fn for_workload(&self, spec: &WorkloadSpec) -> Result<&compiler::hand::HandPrograms, String> {
        match self {
            HandSource::Pair(p) => Ok(p),
            HandSource::Dir { dir, pairs } => {
                let family = compiler::hand::family(spec);
                pairs.get(family).ok_or_else(|| {
                    format!("no {family}.au and {family}.core read from {} for this workload", dir.display())
                })
            }
        }
    }
}

/// A DAE chip, or the same chip without access units.
#[derive(Debug, Clone)]
pub struct DaeSystem {
    /// Number of cores.
    pub cores: u32,
    /// The core.
    pub core: CoreConfig,
    /// f32 lanes per vector register.
    pub vector_lanes: u32,
    /// The compiler passes its programs get.
    pub passes: compiler::Passes,
    /// How its compiler spreads bags over the cores.
    pub partition: crate::config::schema::PartitionSetting,
    /// Hand-written program templates that replace the compiler's programs (`None`: compiled).
    pub programs: Option<HandSource>,
    /// The access unit, if the chip has them.
    pub access_unit: Option<AccessUnitSpec>,
    /// Where access units attach.
    pub attach: AttachPoint,
    /// Caches.
    pub caches: CachePlan,
    /// The memory.
    pub memory: MemoryPlan,
    /// Core cycles each way between the last cache level and the memory (at least 1).
    pub memory_link_cycles: u32,
    /// Time to start an operation on the cores and join them at its end, ps (added to the
    /// simulated time, during which the chip draws its static power).
    pub launch_overhead: Tick,
    /// Energy and power figures (`None`: no power is reported).
    pub power: Option<crate::power::DaePower>,
}

impl DaeSystem {
    /// What the compiler needs to know of this chip: decoupled or core-only, cores, vector
    /// lanes, access-unit lanes and their stream storage.
    pub fn target_info(&self) -> compiler::TargetInfo {
        let target =
            if self.access_unit.is_some() { compiler::Target::Decoupled } else { compiler::Target::CoreOnly };
        compiler::TargetInfo {
            target,
            cores: self.cores,
            vector_lanes: self.vector_lanes,
            au_lanes: self.access_unit.as_ref().map_or(1, |a| a.unit.lanes),
            au_storage_per_lane: self.access_unit.as_ref().map_or(0, |a| a.unit.storage_per_lane()),
            passes: self.passes,
            partition: match self.partition {
                crate::config::schema::PartitionSetting::Cost => compiler::Partition::Cost,
                crate::config::schema::PartitionSetting::Tables => {
                    compiler::Partition::Tables(self.memory_costs())
                }
                crate::config::schema::PartitionSetting::Split => compiler::Partition::Split,
            },
        }
    }

    /// The memory hierarchy as the compiler's table mapping sees it (`compiler::MemoryCosts`),
    /// in core cycles: the private capacity a core's gathers reach (its L2, else its L1D; none
    /// for an access unit attached to the LLC), the LLC (all banks; its hit latency plus the
    /// network both ways, for a crossbar, or a mesh's base cycles), the memory's read latency
    /// (a DRAM's row activation plus its read latency, or the simple model's latency, plus the
    /// memory link's cycles beyond one, both ways), and the
    /// lines in flight (the access unit's outstanding requests, else the L1D's MSHRs or the
    /// core's outstanding loads), and the access unit's lanes.
    pub fn memory_costs(&self) -> compiler::MemoryCosts {
        let period = self.core.clock.frequency().period_ps_floor().max(1);
        let c = &self.caches;
        let reached = match (self.access_unit.is_some(), self.attach) {
            (true, AttachPoint::Llc) => None,
            (true, AttachPoint::L2) => c.l2.as_ref(),
            (false, _) => c.l2.as_ref().or(c.l1d.as_ref()),
        };
        let banks = u64::from(if c.llc_banks == 0 { self.cores } else { c.llc_banks });
        let hop = c.noc.as_ref().map_or(0, |n| match &n.topology {
            mem_model::cache::Topology::Crossbar { cycles } => *cycles,
            mem_model::cache::Topology::Mesh { base_cycles, cycles_per_hop, .. } => {
                base_cycles + cycles_per_hop
            }
        });
        let memory_ps = match &self.memory {
            MemoryPlan::Simple(m) => m.latency.ps(),
            MemoryPlan::Dram(d) => {
                let activate = d.timing("nRCDRD").or_else(|| d.timing("nRCD")).unwrap_or(0);
                d.cycles_to_ps(activate + d.read_latency())
            }
        } + 2 * u64::from(self.memory_link_cycles.saturating_sub(1)) * period;
        let cycles = |v: u64| u32::try_from(v).unwrap_or(u32::MAX);
        compiler::MemoryCosts {
            line_bytes: self.core.line_bytes,
            private_bytes: reached.map_or(0, |l| l.size.bytes()),
            private_cycles: cycles(reached.map_or(0, |l| l.hit_latency_cycles)),
            shared_bytes: c.llc.as_ref().map_or(0, |l| l.size.bytes() * banks),
            shared_cycles: cycles(c.llc.as_ref().map_or(0, |l| l.hit_latency_cycles + 2 * hop)),
            memory_cycles: cycles(memory_ps.div_ceil(period)),
            outstanding: match &self.access_unit {
                Some(a) => a.unit.max_outstanding,
                // The core's misses are bounded by both its own limit and its L1D's MSHRs.
                None => c
                    .l1d
                    .as_ref()
                    .map_or(self.core.max_outstanding, |l| l.mshrs.min(self.core.max_outstanding)),
            },
            lanes: self.access_unit.as_ref().map_or(0, |a| a.unit.lanes),
        }
    }

    /// Peak bandwidth of the memory.
    pub fn peak_bandwidth(&self) -> sim_core::Bandwidth {
        match &self.memory {
            MemoryPlan::Simple(m) => m.bandwidth,
            MemoryPlan::Dram(d) => d.peak_bandwidth(),
        }
    }
}

/// What one run measured.
#[derive(Debug, Clone)]
pub struct RunResult {
    /// Simulated time until the last request was answered, plus the system's launch overhead.
    pub sim_time: Tick,
    /// Lookups performed.
    pub lookups: u64,
    /// Bytes moved by the memory.
    pub bytes: u64,
    /// Memory requests served (by the memory behind the caches).
    pub requests: u64,
    /// Memory requests the cores and access units sent into the hierarchy (line reads and
    /// writes, output-queue chunk writes included): the work a run simulates.
    pub issued_requests: u64,
    /// Instructions the cores retired.
    pub instructions: u64,
    /// Line read requests the access units sent (their stream loads).
    pub au_requests: u64,
    /// Latency of every lookup, in ps, measured at the requester: rows of buffer streams and
    /// loads the compiler tagged as lookups (none when a row is fetched chunk by chunk, as at
    /// `-O0` and `-O1`).
    pub lookup_latency: Histogram<u64>,
    /// Whether every output element equals the reference (the first mismatch otherwise).
    pub verified: Result<(), String>,
    /// The simulated output tensor, `bags x dim` f32 in row-major order, assembled from every
    /// core's output rows (what `--dump-outputs` writes).
    pub outputs: Vec<f32>,
    /// Events the engine processed.
    pub events: u64,
    /// Every statistic of the run.
    pub stats: Stats,
    /// Event counts summed over the chip: the energy model's inputs.
    pub activity: crate::power::Activity,
    /// Where the cores' and access units' time went.
    pub breakdown: crate::breakdown::TimeBreakdown,
    /// What the figures leave out and why (for example lookups that were not timed).
    pub warnings: Vec<String>,
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
        "still running after {limit} ps of simulated time (the limit is experiment.max_sim_time, by default 1 ms plus 10 us per lookup: set it to run longer); busy: {report}"
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

/// The tick at which the last core and access unit finished (`None` if one has not).
fn finish_tick(
    e: &Engine<Node>,
    cores: &[(String, ComponentId)],
    units: &[(String, ComponentId)],
) -> Option<Tick> {
    let mut end = 0;
    for (_, id) in cores.iter().chain(units) {
        let done = match e.component(*id) {
            Some(Node::Core(c)) => c.finish_tick(),
            Some(Node::Au(u)) => u.counters().finish_tick,
            _ => continue,
        };
        end = end.max(done?);
    }
    Some(end)
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
            Contents::Table { format: TableFormat::F32, seed, table, dim } => {
                Backing::Procedural { seed: *seed, table: *table, dim: *dim }
            }
            Contents::Table { format, seed, table, dim } => {
                Backing::Encoded { seed: *seed, table: *table, dim: *dim, format: *format }
            }
            Contents::Output => Backing::Zero,
        };
        img.add(Region { name: r.name.clone(), base: r.base, size: r.size, backing })
            .map_err(|e| build_err("memory image", e))?;
    }
    Ok(img)
}

/// The network when the system names none: a crossbar of 8 cycles each way (an assumption in
/// the range of published mesh traversal latencies for server CPUs).
fn default_noc() -> CrossbarConfig {
    CrossbarConfig {
        topology: mem_model::cache::Topology::Crossbar { cycles: 8 },
        granule: None,
        hash: Default::default(),
        max_in_flight: 4096,
        bank_queue: 64,
        port_bytes: None,
    }
}

/// A cache to build: name, id, downstream links (request out, response in), configuration,
/// and the banks that interleave its lines (1 for a private cache).
type CacheToBuild = (String, ComponentId, (LinkId, LinkId), CacheConfig, u32);

/// Links built while wiring a system: who sends to whom, before the components exist.
#[derive(Default)]
struct Wiring {
    /// Upstream (request in, response out) port pairs of each target component.
    upstream: HashMap<ComponentId, Vec<(LinkId, LinkId)>>,
}

impl Wiring {
    /// Connects `from` to `to` with a request link and a response link; returns them as
    /// `from` sees them (request out, response in).
    fn connect(
        &mut self,
        e: &mut Engine<Node>,
        from: ComponentId,
        to: ComponentId,
        name: &str,
        spec: impl Fn(String, u32) -> LinkSpec,
    ) -> Result<(LinkId, LinkId), SystemError> {
        let req = e.connect(from, to, spec(format!("{name}.req"), 64))?;
        let resp = e.connect(to, from, spec(format!("{name}.resp"), 64))?;
        self.upstream.entry(to).or_default().push((req, resp));
        Ok((req, resp))
    }

    fn ports(&self, id: ComponentId) -> &[(LinkId, LinkId)] {
        self.upstream.get(&id).map_or(&[], Vec::as_slice)
    }
}

/// Where each access unit's output-queue chunks live: one region per core after the workload's
/// data, page-aligned, sized for the largest chunks the unit can build (every entry carrying
/// [`access_unit::MAX_OPERANDS`] rows), so the chunk writes that reach memory stay inside it.
struct QueueRegions {
    first: u64,
    stride: u64,
}

impl QueueRegions {
    fn new(w: &CompiledWorkload, unit: Option<&AccessUnitConfig>) -> Self {
        const PAGE: u64 = 4096;
        let data_end = w.layout.output + w.spec.bags() * w.spec.out_row_bytes();
        let first = data_end.div_ceil(PAGE) * PAGE;
        let stride = unit.map_or(0, |u| {
            let entry = 4 + access_unit::isa::MAX_OPERANDS as u64 * w.spec.row_bytes().max(8);
            (u64::from(u.outq_chunks) * u64::from(u.outq_chunk_entries) * entry).div_ceil(PAGE) * PAGE
        });
        QueueRegions { first, stride }
    }

    /// The region of core `core`; `base(cores)` is one past the last byte of all of them.
    fn base(&self, core: usize) -> u64 {
        self.first + core as u64 * self.stride
    }
}

/// Runs compiled workload `w` on `sys` and checks its outputs against `reference`; a run still
/// going at `max_time` (a program that loops forever) is stopped with an error.
pub fn run(
    sys: &DaeSystem,
    w: &CompiledWorkload,
    reference: &[f32],
    max_time: Tick,
    seeds: &SeedTree,
) -> Result<RunResult, SystemError> {
    let image = Arc::new(memory_image(w)?);
    let mut e: Engine<Node> = Engine::new();
    let clock = sys.core.clock;
    let link = |name: String, capacity: u32| LinkSpec { name, clock, latency_cycles: 1, capacity };
    let line = sim_core::ByteSize::from_bytes(sys.core.line_bytes as u64);
    let mut wiring = Wiring::default();
    let mem = e.reserve();
    // Whatever connects to the memory does so through the memory link.
    let mem_cycles = u64::from(sys.memory_link_cycles.max(1));
    let link_to = move |to: ComponentId| {
        let cycles = if to == mem { mem_cycles } else { 1 };
        move |name: String, capacity: u32| LinkSpec { name, clock, latency_cycles: cycles, capacity }
    };

    // The shared side: the network and the LLC banks, each bank with its own memory port.
    let mut shared_entry = mem;
    // Every cache to build (see `CacheToBuild`).
    let mut caches: Vec<CacheToBuild> = Vec::new();
    // The network's downstream ports, in bank order.
    let mut noc_down = Vec::new();
    if let Some(llc) = &sys.caches.llc {
        let xbar = e.reserve();
        shared_entry = xbar;
        let n = if sys.caches.llc_banks == 0 { sys.cores } else { sys.caches.llc_banks };
        for b in 0..n {
            let bank = e.reserve();
            let name = format!("llc{b}");
            let down = wiring.connect(&mut e, bank, mem, &name, link_to(mem))?;
            noc_down.push(wiring.connect(&mut e, xbar, bank, &format!("noc.to_{name}"), link)?);
            caches.push((name, bank, down, llc.clone(), n));
        }
    }

    let mut cores = Vec::new();
    let mut units = Vec::new();
    let queues = QueueRegions::new(w, sys.access_unit.as_ref().map(|a| &a.unit));
    if let MemoryPlan::Dram(spec) = &sys.memory
        && queues.base(w.jobs.len()) > spec.capacity_bytes()
    {
        return Err(SystemError::Build {
            component: "mem".into(),
            message: format!(
                "the workload's data and queues need {} B, more than the memory's {} B",
                queues.base(w.jobs.len()),
                spec.capacity_bytes()
            ),
        });
    }
    for (i, job) in w.jobs.iter().enumerate() {
        let name = format!("core{i}");
        let core = e.reserve();
        // Private levels, innermost first; each sends to the next, the last to the shared side.
        let levels: Vec<(&str, &CacheConfig)> = [("l1d", &sys.caches.l1d), ("l2", &sys.caches.l2)]
            .into_iter()
            .filter_map(|(n, c)| c.as_ref().map(|c| (n, c)))
            .collect();
        let ids: Vec<ComponentId> = levels.iter().map(|_| e.reserve()).collect();
        let first = ids.first().copied().unwrap_or(shared_entry);
        let (req, resp) = wiring.connect(&mut e, core, first, &name, link_to(first))?;
        for (k, (level, cfg)) in levels.iter().enumerate() {
            let next = ids.get(k + 1).copied().unwrap_or(shared_entry);
            let cname = format!("{name}.{level}");
            let down = wiring.connect(&mut e, ids[k], next, &cname, link_to(next))?;
            caches.push((cname, ids[k], down, (*cfg).clone(), 1));
        }
        let mut queue = None;
        if let (Some(spec), Some(program)) = (sys.access_unit, &job.au) {
            let au_name = format!("{name}.au");
            let au = e.reserve();
            // The core's private L2 (the last private level), if it has one.
            let l2 = sys.caches.l2.is_some().then(|| ids[ids.len() - 1]);
            let target = match (sys.attach, l2) {
                (AttachPoint::L2, Some(l2)) => l2,
                _ => shared_entry,
            };
            let (areq, aresp) = wiring.connect(&mut e, au, target, &au_name, link_to(target))?;
            let outq = e.connect(au, core, link(format!("{au_name}.outq"), spec.outq_entries))?;
            queue = Some(outq);
            // The output queue lives in the core's private L2 whatever serves the unit's reads.
            let queue_port = match l2.filter(|&l2| l2 != target) {
                Some(l2) => Some(wiring.connect(&mut e, au, l2, &format!("{au_name}.queue"), link)?),
                None => None,
            };
            let au_ports = AuPorts { mem_req: areq, mem_resp: aresp, outq, queue: queue_port };
            let unit = AccessUnitConfig { outq_base: queues.base(i), ..spec.unit };
            let unit =
                AccessUnit::new(&au_name, unit, program.clone(), image.clone(), au_ports, e.stats_mut())
                    .map_err(|err| build_err(&au_name, err))?;
            e.install(au, Node::Au(unit))?;
            units.push((au_name, au));
        }
        let core_ports = CorePorts { mem_req: req, mem_resp: resp, queue };
        let out = OutputBuffer { base: job.output_base, elems: job.output_elems };
        let mut c =
            Core::new(&name, sys.core, job.core.clone(), image.clone(), core_ports, out, e.stats_mut())
                .map_err(|err| build_err(&name, err))?;
        if let Some(scratch) = job.scratch {
            c = c.with_scratch(scratch).map_err(|err| build_err(&name, err))?;
        }
        e.install(core, Node::Core(c))?;
        cores.push((name, core));
    }

    // The network sends runs of its granule to each LLC bank (validated: a whole number of lines).
    let noc = sys.caches.noc.clone().unwrap_or_else(default_noc);
    let run_lines = (noc.granule_or(line).bytes() / line.bytes()).max(1);
    for (name, id, (down_req, down_resp), cfg, banks) in &caches {
        let links = CacheLinks { upstream: wiring.ports(*id), down_req: *down_req, down_resp: *down_resp };
        let mut cache =
            Cache::new(name, cfg, clock, links, seeds, e.stats_mut()).map_err(|err| build_err(name, err))?;
        if *banks > 1 {
            // Banks interleave runs of lines: each indexes its sets without the bank digit.
            cache = cache.interleaved(*banks, run_lines);
        }
        e.install(*id, Node::Cache(cache))?;
    }
    if shared_entry != mem {
        let links = CrossbarLinks { upstream: wiring.ports(shared_entry), downstream: &noc_down };
        let x = Crossbar::new("noc", &noc, clock, links, line, e.stats_mut())
            .map_err(|err| build_err("noc", err))?;
        e.install(shared_entry, Node::Xbar(x))?;
    }
    let memory = match &sys.memory {
        MemoryPlan::Simple(cfg) => Node::Mem(
            SimpleMemory::new("mem", *cfg, wiring.ports(mem), e.stats_mut())
                .map_err(|err| build_err("mem", err))?,
        ),
        MemoryPlan::Dram(spec) => Node::Dram(
            Dram::new("mem", spec, wiring.ports(mem), e.stats_mut()).map_err(|err| build_err("mem", err))?,
        ),
    };
    e.install(mem, memory)?;
    // Both memory models drain every arrived request when woken: one wake per cycle's batch. (An
    // access unit, and a cache, crossbar or DRAM that polls its inputs, have all their inputs'
    // arrivals merged by the engine: `Component::takes_every_input`.)
    for &(req, _) in wiring.ports(mem) {
        e.coalesce_arrivals(req)?;
    }

    let summary = e.run(Some(max_time));
    // A fault stops its component, which the engine then sees as a stall: report the fault.
    let memory = [("mem".to_string(), mem)];
    for (name, id) in cores.iter().chain(&units).chain(&memory) {
        let fault = match e.component(*id) {
            Some(Node::Core(c)) => c.fault().map(|f| f.to_string()),
            Some(Node::Au(a)) => a.fault().map(|f| f.to_string()),
            Some(Node::Dram(d)) => d.fault().map(|f| f.to_string()),
            _ => None,
        };
        if let Some(message) = fault {
            return Err(SystemError::Fault { component: name.clone(), message });
        }
    }
    let summary = summary?;
    // A timer left behind by a finished component (an access unit's flush deadline) may lie
    // beyond the limit: only work still held is a run out of time.
    if summary.hit_limit {
        let busy = busy_report(&e);
        if !busy.is_empty() {
            return Err(SystemError::TimeLimit { limit: max_time, report: format!("{busy:?}") });
        }
    }
    // The run ends when the last core and unit have finished (every request of theirs
    // answered), not at the last event: a stale timer firing later is not simulated time.
    let end_tick = finish_tick(&e, &cores, &units).unwrap_or(summary.end_tick);
    if let Some((Node::Dram(d), stats)) = e.component_and_stats_mut(mem) {
        d.finish(end_tick, stats);
    }

    // Outputs equal the reference bit for bit, or lie within its error bound where the
    // operation's sums round (see `EmbeddingBagInstance::tolerance`).
    let dim = w.spec.out_width() as usize;
    let tolerance = w.instance.tolerance(&w.spec);
    let ok = |at: usize, got: f32, want: f32| match &tolerance {
        Some(t) => (got - want).abs() <= t.get(at).copied().unwrap_or(0.0),
        None => got.to_bits() == want.to_bits(),
    };
    // Bags cut across cores: each piece's partial row is checked against the pieces' own
    // reference (the same fold, over the piece's lookups); the pieces are combined below.
    let workload_reference = reference;
    let piece_reference = w.split.as_ref().map(|_| w.instance.reference(&w.spec));
    let reference = piece_reference.as_deref().unwrap_or(reference);
    let mut verified = Ok(());
    let mut outputs = vec![0.0f32; w.spec.bags() as usize * dim];
    for ((name, id), job) in cores.iter().zip(&w.jobs) {
        let Some(Node::Core(c)) = e.component(*id) else { continue };
        let lo = job.bags.start as usize * dim;
        if let Some(dst) = outputs.get_mut(lo..) {
            let n = dst.len().min(c.outputs().len()).min(job.output_elems as usize);
            dst[..n].copy_from_slice(&c.outputs()[..n]);
        }
        let expect = reference.get(lo..lo + job.output_elems as usize).unwrap_or(&[]);
        if let Some(k) =
            (0..expect.len()).find(|&k| !c.outputs().get(k).is_some_and(|&v| ok(lo + k, v, expect[k])))
        {
            // The first mismatch is reported; later cores' outputs are still assembled.
            if verified.is_ok() {
                let got = c.outputs().get(k).copied().unwrap_or(f32::NAN);
                let (bag, col) = ((lo + k) / dim, (lo + k) % dim);
                verified = Err(format!("{name}: out[{bag}][{col}] = {got}, reference {}", expect[k]));
            }
        }
    }

    if let (Some(split), Some(pieces)) = (&w.split, &piece_reference) {
        // The pieces' reference, combined, must be the workload's (within the rounding of the
        // cut bags' reordered sums). The combined outputs are then that too: each piece's row
        // equals the pieces' reference bit for bit (above), and combining is deterministic.
        let expect = split.combine(pieces, dim);
        let magnitudes = || split.combine(&w.instance.magnitudes(&w.spec), dim);
        let mismatch =
            split.first_mismatch(&expect, workload_reference, magnitudes, &w.instance.offsets, dim);
        if let (Ok(()), Some(k)) = (&verified, mismatch) {
            let (got, want) = (expect.get(k).copied(), workload_reference.get(k).copied());
            verified = Err(format!(
                "bags cut across cores: the pieces' reference combined out[{}][{}] = {}, reference {}",
                k / dim.max(1),
                k % dim.max(1),
                got.unwrap_or(f32::NAN),
                want.unwrap_or(f32::NAN)
            ));
        }
        outputs = split.combine(&outputs, dim);
    }

    let stats: &Stats = e.stats();
    let mut lookup_latency =
        Histogram::<u64>::new_with_bounds(1, 1_000_000_000, 3).map_err(|err| build_err("stats", err))?;
    for (name, _) in &cores {
        // Its access unit times the lookups where one was built for the core's program; code
        // the compiler left on the core (no `decouple`) is timed by the core.
        let h = stats
            .lookup_histogram(&format!("{name}.au.lookup_latency"))
            .or_else(|| stats.lookup_histogram(&format!("{name}.lookup_latency")));
        if let Some(h) = h {
            lookup_latency.add(h).map_err(|err| build_err("stats", err))?;
        }
    }
    // The workload's lookups, however the program fetches them (whole rows or chunks).
    let lookups = w.instance.indices.len() as u64;
    let (mut issued_requests, mut instructions, mut au_requests) = (0, 0, 0);
    let mut breakdown = crate::breakdown::BreakdownBuilder::new(end_tick);
    for (_, id) in cores.iter().chain(&units) {
        match e.component(*id) {
            Some(Node::Core(c)) => {
                issued_requests += c.counters().mem_requests;
                instructions += c.counters().instructions;
                breakdown.add_core(&sys.core.clock, &c.counters(), c.finish_tick());
            }
            Some(Node::Au(u)) => {
                let c = u.counters();
                issued_requests += c.requests + c.write_requests;
                au_requests += c.requests;
                if let Some(a) = &sys.access_unit {
                    breakdown.add_unit(&a.unit.clock, &c);
                }
            }
            _ => {}
        }
    }
    let counter = |n: &str| stats.lookup_counter(n).unwrap_or(0);
    // The operation's fork and join around the simulated work.
    let op_time = end_tick.saturating_add(sys.launch_overhead);
    let activity = activity(&e, op_time, &cores, &units, &caches, mem, sys);
    let (bytes, requests) = match e.component(mem) {
        Some(Node::Dram(d)) => {
            let c = d.counters();
            (c.bytes_read + c.bytes_written, c.reads + c.writes)
        }
        _ => (
            counter("mem.bytes_read") + counter("mem.bytes_written"),
            counter("mem.reads") + counter("mem.writes"),
        ),
    };
    Ok(RunResult {
        sim_time: op_time,
        lookups,
        bytes,
        requests,
        issued_requests,
        instructions,
        au_requests,
        lookup_latency,
        verified,
        outputs,
        events: summary.events,
        stats: stats.clone(),
        activity,
        breakdown: breakdown.finish(),
        warnings: warnings(w),
    })
}

/// What a run of `w` cannot measure, said beside its figures.
fn warnings(w: &CompiledWorkload) -> Vec<String> {
    let mut out = Vec::new();
    if w.chunked_rows {
        out.push(
            "its rows do not fit an access-unit lane, so the units stream them in vector-sized chunks \
             and no lookup latency is timed (the latency columns read n/a)"
                .to_string(),
        );
    }
    if let Some(why) = w.unsplit {
        out.push(format!("a bag is longer than a core's share but is not cut across cores: {why}"));
    }
    out
}

/// What the components of a finished run did, summed over the chip (see [`crate::power`]).
fn activity(
    e: &Engine<Node>,
    time_ps: Tick,
    cores: &[(String, ComponentId)],
    units: &[(String, ComponentId)],
    caches: &[CacheToBuild],
    mem: ComponentId,
    sys: &DaeSystem,
) -> crate::power::Activity {
    let mut a = crate::power::Activity { time_ps, ..Default::default() };
    for (_, id) in cores.iter().chain(units) {
        match e.component(*id) {
            Some(Node::Core(c)) => {
                let c = c.counters();
                a.cores += 1;
                a.instructions += c.instructions;
                a.alu_ops += c.alu_ops;
                a.muldiv_ops += c.muldiv_ops;
                a.vector_ops += c.vector_ops;
                a.loads += c.loads;
                a.stores += c.stores;
                a.queue_pops += c.queue_pops;
                a.queue_loads += c.queue_loads;
            }
            Some(Node::Au(u)) => {
                let c = u.counters();
                a.au_requests += c.requests;
                a.au_write_requests += c.write_requests;
                a.au_events += c.events;
                a.au_operands += c.operands;
            }
            _ => {}
        }
    }
    for (name, id, ..) in caches {
        let Some(Node::Cache(c)) = e.component(*id) else { continue };
        let level = if name.ends_with(".l1d") {
            &mut a.l1d
        } else if name.ends_with(".l2") {
            &mut a.l2
        } else {
            &mut a.llc
        };
        let c = c.counters();
        level.instances += 1;
        // Every line access looks up the tags, a bypassed one too.
        level.lookups += c.hits + c.misses + c.sector_misses + c.merged + c.bypasses;
        // A bypassed (or set-busy) miss's data is relayed upstream, not written into the array.
        level.fills += c.fills - c.relayed_fills;
        level.writebacks += c.writebacks;
    }
    // The chip's access units are there, and draw static power, whether a core's program used
    // its unit or not (core-only code, a core with no work).
    a.units = if sys.access_unit.is_some() { a.cores } else { 0 };
    let stats = e.stats();
    let counter = |n: &str| stats.lookup_counter(n).unwrap_or(0);
    // Writes carry their line there and are acknowledged without one; reads go without and
    // come back with theirs.
    let (writes, acks) = (counter("noc.write_requests"), counter("noc.write_responses"));
    a.noc_transfers = writes + counter("noc.responses").saturating_sub(acks);
    a.noc_controls = counter("noc.requests").saturating_sub(writes) + acks;
    match e.component(mem) {
        Some(Node::Dram(d)) => {
            // The bits the device moved: its bursts, not the requests' bytes (a read answered
            // from the write queues moves none).
            let c = d.counters();
            let burst = d.spec().burst_bytes();
            a.dram = mem_model::dram::DramActivity {
                bytes_read: c.bursts_read * burst,
                bytes_written: c.bursts_written * burst,
                activations: c.activations(),
            };
        }
        _ => {
            a.dram.bytes_read = counter("mem.bytes_read");
            a.dram.bytes_written = counter("mem.bytes_written");
        }
    }
    // A fixed-latency memory counts as one stack for its background power.
    a.stacks = match &sys.memory {
        MemoryPlan::Dram(spec) => spec.organization().stacks,
        MemoryPlan::Simple(_) => 1,
    };
    a
}
