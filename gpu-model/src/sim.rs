//! The cycle-level GPU: SMs, their L1s, the crossbar to a two-partition L2, and HBM, on the
//! shared engine and memory model; [`run`] simulates one gather kernel on it.
//!
//! Wiring: each SM sends line requests to its own L1 (sectored, stores pass through); the L1s'
//! misses cross a crossbar whose latency is `near_cycles` to the L2 slices of the SM's own
//! partition and `far_cycles` to the others' (a two-node mesh); each slice has its own port to
//! the DRAM, `dram_link_cycles` away each way. Slices are memory-side: a line goes to the slice
//! that owns its pseudo-channel ([`Crossbar::set_memory_side`]), so a slice's misses go to its
//! own pseudo-channels only and a full controller queue holds up only the slice that feeds it
//! (where an L2 line fits in one DRAM interleave chunk, as in every preset: a line is routed by
//! its first byte). Pseudo-channel `c` belongs to slice `c % slices`: where the count does not
//! divide (the H200's 192 over 40), some slices own one more pseudo-channel than others. The
//! kernel's time runs from the launch to the last block's last store acknowledged.

use crate::GpuEstimate;
use crate::config::{GpuConfig, GpuSimConfig};
use crate::kernel::{GatherKernel, KernelError};
use crate::sm::{BlockScheduler, Sm, SmCounters, SmParams};
use hdrhistogram::Histogram;
use mem_model::cache::{Cache, CacheLinks, Crossbar, CrossbarConfig, CrossbarLinks, Topology};
use mem_model::dram::{Dram, DramSpec};
use mem_model::{MemRequest, MemResponse};
use sim_core::{
    ByteSize, Clock, Component, ComponentId, Ctx, Engine, LinkId, LinkSpec, SeedTree, Tick, Wake,
};
use std::collections::HashMap;
use std::sync::Arc;
use thiserror::Error;

/// Every message of the GPU model.
#[derive(Debug, Clone, Copy)]
pub enum GpuMsg {
    /// A memory request.
    Req(MemRequest),
    /// A memory response.
    Resp(MemResponse),
}

sim_core::carries!(GpuMsg { Req(MemRequest), Resp(MemResponse) });

/// Every component of the GPU model (one enum: static dispatch on the hot path).
#[allow(clippy::large_enum_variant)]
pub enum GpuNode {
    /// A streaming multiprocessor.
    Sm(Sm<GpuMsg>),
    /// An L1 or an L2 slice.
    Cache(Cache<GpuMsg>),
    /// The crossbar between the L1s and the L2 slices.
    Xbar(Crossbar<GpuMsg>),
    /// The HBM.
    Dram(Dram<GpuMsg>),
}

macro_rules! each_node {
    ($self:ident, $c:ident => $e:expr) => {
        match $self {
            GpuNode::Sm($c) => $e,
            GpuNode::Cache($c) => $e,
            GpuNode::Xbar($c) => $e,
            GpuNode::Dram($c) => $e,
        }
    };
}

impl Component for GpuNode {
    type Msg = GpuMsg;
    fn name(&self) -> &str {
        each_node!(self, c => c.name())
    }
    #[inline]
    fn wake(&mut self, why: Wake, ctx: &mut Ctx<'_, GpuMsg>) {
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

/// A GPU ready to simulate: the analytic parameters (SM count, clock, warps), the cycle-level
/// ones and the HBM.
#[derive(Debug, Clone)]
pub struct GpuSim {
    /// The shared parameters.
    pub gpu: GpuConfig,
    /// The cycle-level parameters.
    pub sim: GpuSimConfig,
    /// The HBM.
    pub dram: Arc<DramSpec>,
}

/// What one simulated kernel did.
#[derive(Debug, Clone)]
pub struct SimRun {
    /// Kernel time, launch included.
    pub time: Tick,
    /// Activity in the analytic model's terms (for the power model and the cross-check); its
    /// latency is the simulated mean row latency.
    pub activity: GpuEstimate,
    /// Latency of every row line load, from issue to data, ps.
    pub latency: Histogram<u64>,
    /// Bytes read from DRAM.
    pub dram_bytes_read: u64,
    /// L1 hits (accesses that found every sector).
    pub l1_hits: u64,
    /// L1 accesses.
    pub l1_accesses: u64,
    /// L2 accesses.
    pub l2_accesses: u64,
    /// All SMs' work, summed (`finished` is the latest).
    pub sms: SmCounters,
    /// Theoretical occupancy of the kernel.
    pub occupancy: f64,
    /// Blocks in the grid.
    pub blocks: u32,
    /// Engine events.
    pub events: u64,
}

impl SimRun {
    /// Achieved DRAM bandwidth, bytes per second.
    pub fn dram_bytes_per_second(&self) -> f64 {
        let bytes = self.activity.dram_bytes as f64;
        bytes * sim_core::PS_PER_SECOND as f64 / self.time.max(1) as f64
    }
}

/// Why a simulation could not run or finish.
#[derive(Debug, Error)]
pub enum GpuSimError {
    /// The kernel description is inconsistent.
    #[error("kernel: {0}")]
    Kernel(#[from] KernelError),
    /// A component could not be built.
    #[error("{component}: {message}")]
    Build {
        /// The component.
        component: String,
        /// Why.
        message: String,
    },
    /// The engine stopped: a deadlock or the time limit.
    #[error("{0}")]
    Engine(String),
    /// The kernel touched memory beyond the HBM's capacity.
    #[error("{0}")]
    Fault(String),
}

fn build(component: &str, e: impl std::fmt::Display) -> GpuSimError {
    GpuSimError::Build { component: component.to_owned(), message: e.to_string() }
}

#[derive(Default)]
struct Wiring {
    upstream: HashMap<ComponentId, Vec<(LinkId, LinkId)>>,
}

impl Wiring {
    /// A request link `from -> to` and a response link back, both `latency` cycles.
    fn connect(
        &mut self,
        e: &mut Engine<GpuNode>,
        (from, to): (ComponentId, ComponentId),
        name: &str,
        clock: Clock,
        latency: u64,
        capacity: u32,
    ) -> Result<(LinkId, LinkId), GpuSimError> {
        let spec = |n: String| LinkSpec { name: n, clock, latency_cycles: latency.max(1), capacity };
        let req = e.connect(from, to, spec(format!("{name}.req"))).map_err(|x| build(name, x))?;
        let resp = e.connect(to, from, spec(format!("{name}.resp"))).map_err(|x| build(name, x))?;
        self.upstream.entry(to).or_default().push((req, resp));
        Ok((req, resp))
    }

    fn ports(&self, id: ComponentId) -> &[(LinkId, LinkId)] {
        self.upstream.get(&id).map_or(&[], Vec::as_slice)
    }
}

/// Simulates `kernel` on `gpu`; stops with an error past `max_time`.
pub fn run(
    gpu: &GpuSim,
    kernel: Arc<GatherKernel>,
    seeds: &SeedTree,
    max_time: Tick,
) -> Result<SimRun, GpuSimError> {
    kernel.validate()?;
    let (g, s) = (&gpu.gpu, &gpu.sim);
    let clock = Clock::new(g.clock).map_err(|e| build("clock", e))?;
    let mut e: Engine<GpuNode> = Engine::new();
    let mut wiring = Wiring::default();
    let (sms, banks, parts) = (g.sms, s.l2.banks, s.l2.partitions);
    let dram = e.reserve();
    let xbar = e.reserve();
    // Every cache: name, id, downstream links, configuration, banks interleaving its lines (1
    // for an L1), and whether it is an L2 slice.
    let mut caches = Vec::new();
    let mut xbar_down = Vec::new();
    for b in 0..banks {
        let bank = e.reserve();
        let name = format!("l2.slice{b}");
        let down = wiring.connect(&mut e, (bank, dram), &name, clock, s.dram_link_cycles, 256)?;
        xbar_down.push(wiring.connect(&mut e, (xbar, bank), &format!("xbar.to_{b}"), clock, 1, 256)?);
        caches.push((name, bank, down, &s.l2.bank, banks, true));
    }
    let blocks_per_sm = s.blocks_per_sm(g);
    let blocks = kernel.blocks(s.kernel.threads_per_block);
    let scheduler = BlockScheduler::new(blocks, blocks_per_sm * sms);
    let launch_delay = s.launch_latency.ps();
    let mut sm_ids = Vec::new();
    for i in 0..sms {
        let (sm, l1) = (e.reserve(), e.reserve());
        let name = format!("sm{i}");
        let (req, resp) = wiring.connect(&mut e, (sm, l1), &name, clock, 1, 64)?;
        let l1_name = format!("{name}.l1");
        let down = wiring.connect(&mut e, (l1, xbar), &l1_name, clock, 1, 64)?;
        caches.push((l1_name, l1, down, &s.l1, 1, false));
        let p = SmParams {
            index: i,
            sms,
            blocks_per_sm,
            threads_per_block: s.kernel.threads_per_block,
            schedulers: s.schedulers,
            alu_latency_cycles: s.alu_latency_cycles,
            lsu_lines_per_cycle: s.lsu_lines_per_cycle,
            row_unroll: s.kernel.row_unroll,
            instructions_per_row: s.kernel.instructions_per_row,
            launch_delay,
        };
        let unit = Sm::new(&name, p, kernel.clone(), scheduler.clone(), clock, req, resp, e.stats_mut())
            .map_err(|x| build(&name, x))?;
        e.install(sm, GpuNode::Sm(unit)).map_err(|x| build(&name, x))?;
        sm_ids.push(sm);
    }
    for (name, id, (down_req, down_resp), cfg, banks, _) in &caches {
        let links = CacheLinks { upstream: wiring.ports(*id), down_req: *down_req, down_resp: *down_resp };
        let mut c = Cache::new(name, cfg, clock, links, seeds, e.stats_mut()).map_err(|x| build(name, x))?;
        if *banks > 1 {
            // Slices own pseudo-channels: runs of the DRAM's interleave unit.
            c = c.interleaved(*banks, (gpu.dram.interleave_bytes() / cfg.line.bytes()).max(1));
        }
        e.install(*id, GpuNode::Cache(c)).map_err(|x| build(name, x))?;
    }
    // Two partitions as a two-node row: SMs and slices split evenly, halves in order.
    let topology = Topology::Mesh {
        cols: parts,
        rows: 1,
        cycles_per_hop: s.l2.far_cycles - s.l2.near_cycles,
        base_cycles: s.l2.near_cycles,
        upstream_nodes: Some((0..sms).map(|i| i * parts / sms).collect()),
        downstream_nodes: Some((0..banks).map(|b| b * parts / banks).collect()),
    };
    let cfg = CrossbarConfig {
        topology,
        granule: None,
        // Unused: slices are memory-side (below).
        hash: mem_model::cache::BankHash::None,
        max_in_flight: s.l2.max_in_flight,
        bank_queue: s.l2.bank_queue,
        // The slices' own lookups bound their bandwidth (fitted, docs/h100-measured.md).
        port_bytes: None,
    };
    let links = CrossbarLinks { upstream: wiring.ports(xbar), downstream: &xbar_down };
    let line = ByteSize::from_bytes(s.l2.bank.line.bytes());
    let mut x =
        Crossbar::new("xbar", &cfg, clock, links, line, e.stats_mut()).map_err(|x| build("xbar", x))?;
    x.set_memory_side(gpu.dram.mapping().clone());
    e.install(xbar, GpuNode::Xbar(x)).map_err(|x| build("xbar", x))?;
    let d = Dram::new("hbm", &gpu.dram, wiring.ports(dram), e.stats_mut()).map_err(|x| build("hbm", x))?;
    e.install(dram, GpuNode::Dram(d)).map_err(|x| build("hbm", x))?;
    // (With few enough ports the engine merges them all: `Component::takes_every_input`.)
    for &(req, _) in wiring.ports(dram) {
        e.coalesce_arrivals(req).map_err(|x| build("hbm", x))?;
    }

    let summary = e.run(Some(max_time));
    if let Some(GpuNode::Dram(d)) = e.component(dram)
        && let Some(f) = d.fault()
    {
        return Err(GpuSimError::Fault(format!("hbm: {f}")));
    }
    let summary = summary.map_err(|x| GpuSimError::Engine(x.to_string()))?;
    if summary.hit_limit {
        return Err(GpuSimError::Engine(format!(
            "the kernel was still running at the limit of {max_time} ps"
        )));
    }

    let mut total = SmCounters::default();
    let mut latency =
        Histogram::<u64>::new_with_bounds(1, 1_000_000_000, 3).map_err(|x| build("stats", x))?;
    for (i, id) in sm_ids.iter().enumerate() {
        if let Some(GpuNode::Sm(sm)) = e.component(*id) {
            let c = sm.counters();
            total.blocks += c.blocks;
            total.requests += c.requests;
            total.instructions += c.instructions;
            total.flops += c.flops;
            total.sectors += c.sectors;
            total.finished = total.finished.max(c.finished);
            total.first_row = total.first_row.min(c.first_row);
        }
        if let Some(h) = e.stats().lookup_histogram(&format!("sm{i}.lookup_latency")) {
            latency.add(h).map_err(|x| build("stats", x))?;
        }
    }
    let (mut l1_hits, mut l1_accesses, mut l2_accesses, mut l2_hits, mut l2_sectors) = (0, 0, 0, 0, 0);
    for (_, id, _, _, _, l2) in &caches {
        if let Some(GpuNode::Cache(c)) = e.component(*id) {
            let k = c.counters();
            if *l2 {
                l2_accesses += k.reads + k.writes;
                l2_hits += k.hits;
                // What the L1s (and the stores they pass on) move to and from the L2.
                l2_sectors += k.upstream_sectors;
            } else {
                l1_accesses += k.reads + k.writes;
                l1_hits += k.hits;
            }
        }
    }
    if let Some((GpuNode::Dram(d), stats)) = e.component_and_stats_mut(dram) {
        d.finish(total.finished, stats);
    }
    let counters = match e.component(dram) {
        Some(GpuNode::Dram(d)) => d.counters(),
        _ => return Err(build("hbm", "missing")),
    };
    // A kernel with no block still takes its launch.
    let time = total.finished.max(launch_delay);
    let act = mem_model::dram::Command::Act.index();
    let dram_bytes = counters.bytes_read + counters.bytes_written;
    let mean = latency.mean() as u64;
    let activity = GpuEstimate {
        time,
        dram_bytes,
        dram_bytes_written: counters.bytes_written,
        dram_activations: counters.commands[act],
        l2_sectors,
        sm_sectors: total.sectors,
        l2_hits,
        latency: mean,
    };
    Ok(SimRun {
        time,
        activity,
        latency,
        dram_bytes_read: counters.bytes_read,
        l1_hits,
        l1_accesses,
        l2_accesses,
        sms: total,
        occupancy: s.occupancy(g),
        blocks,
        events: e.events(),
    })
}
