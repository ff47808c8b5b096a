//! The experiment file's schema: what each key means and its unit.
//!
//! Every table rejects unknown keys (the loader suggests the closest valid one); every value with
//! a unit is a string carrying it ("3GHz", "64KiB", "350ns", "3.35TB/s"); plain integers are
//! counts (cores, entries, cycles in `*_cycles` keys).

use compiler::WorkloadSpec;
use serde::Deserialize;
use sim_core::{Bandwidth, ByteSize, Frequency, TimeSpan};

/// The whole experiment file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExperimentFile {
    /// Name, seed and output directory.
    pub experiment: ExperimentSection,
    /// Systems to compare.
    #[serde(default)]
    pub system: Vec<SystemSection>,
    /// Workloads to run on each system.
    #[serde(default)]
    pub workload: Vec<WorkloadSpec>,
    /// Report settings.
    #[serde(default)]
    pub report: ReportSection,
    /// Design-space sweep axes (`dae-sim sweep`; a plain run ignores them).
    #[serde(default)]
    pub sweep: Option<SweepSection>,
}

/// `[sweep]`: axes over config keys, combined as a cartesian product or zipped.
///
/// ```toml
/// [sweep]
/// mode = "product"            # or "zip" (axes of equal length, taken in step)
/// littles_law = true          # draw Little's law on the plot (optional)
/// [[sweep.axis]]
/// key = "system.dae.access_unit.outq_entries"   # system.<name>.…, workload.<name>.…, or a path
/// values = [2, 4, 8, 16, 32]
/// ```
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SweepSection {
    /// How the axes combine.
    #[serde(default)]
    pub mode: SweepMode,
    /// Draw on the sweep plot, per line, the throughput Little's law predicts at the latency
    /// measured at the first axis's smallest value. A plot option: it changes no point.
    #[serde(default)]
    pub littles_law: bool,
    /// The axes, in order (the first varies slowest in a product).
    #[serde(default)]
    pub axis: Vec<SweepAxis>,
    /// The memory's loaded-latency curves to measure beside the sweep (see
    /// [`crate::sweep_memory`]).
    #[serde(default)]
    pub memory_curve: Option<MemoryCurveSection>,
}

/// `[sweep.memory_curve]`
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemoryCurveSection {
    /// The memory: a file relative to the config, or a preset name in `configs/memory/`.
    pub memory: String,
    /// Request sizes, one curve each.
    #[serde(default = "default_curve_requests")]
    pub requests: Vec<sim_core::ByteSize>,
    /// Injection rates per curve.
    #[serde(default = "default_curve_points")]
    pub points: u32,
}

fn default_curve_requests() -> Vec<sim_core::ByteSize> {
    vec![sim_core::ByteSize::from_bytes(64)]
}

fn default_curve_points() -> u32 {
    12
}

/// How sweep axes combine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SweepMode {
    /// Every combination.
    #[default]
    Product,
    /// The i-th value of every axis together.
    Zip,
}

/// One sweep axis.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SweepAxis {
    /// The config key, by dotted path.
    pub key: String,
    /// Its values.
    pub values: Vec<toml::Value>,
}

/// `[experiment]`
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExperimentSection {
    /// Name (also the default output directory `out/<name>`).
    pub name: String,
    /// Master seed of every random stream.
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// Output directory, relative to the working directory.
    pub output: Option<String>,
    /// Simulated time after which a run is stopped as runaway (default: 1 ms plus 10 us per
    /// lookup of the batch, see `Experiment::time_limit`).
    pub max_sim_time: Option<TimeSpan>,
}

fn default_seed() -> u64 {
    1
}

/// `[report]`
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReportSection {
    /// System the others' speedups are relative to.
    pub baseline: Option<String>,
    /// Also report each system against the one listed before it (a ladder of steps, such as
    /// the `-O` levels), with compute and access throughput.
    #[serde(default)]
    pub steps: bool,
}

/// What a system is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SystemKind {
    /// Cores, optionally with access units, and memory: simulated cycle by cycle.
    Dae,
    /// A GPU.
    Gpu,
}

/// `[[system]]`: a DAE chip (with or without access units) or a GPU.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SystemSection {
    /// Name in reports.
    pub name: String,
    /// DAE/CPU chip or GPU.
    pub kind: SystemKind,
    /// Free text for reports.
    pub description: Option<String>,
    /// Cores (DAE systems).
    pub cores: Option<u32>,
    /// The core (DAE systems).
    pub core: Option<CoreSection>,
    /// The access unit, or "none" for a plain CPU (DAE systems).
    pub access_unit: Option<AccessUnitSetting>,
    /// The cache hierarchy (DAE systems; absent: cores talk to memory directly).
    pub caches: Option<CachesSection>,
    /// The on-chip network between private caches and LLC banks.
    pub noc: Option<mem_model::cache::CrossbarConfig>,
    /// The memory (DAE systems).
    pub memory: Option<MemorySection>,
    /// DAE and CPU systems: time to start an operation on every core and join them at its end
    /// (a fork/join barrier), added to each run's time (default none). A GPU's launch is
    /// `gpu.launch_overhead` and `gpu_sim.launch_latency`.
    pub launch_overhead: Option<TimeSpan>,
    /// The GPU (GPU systems).
    pub gpu: Option<gpu_model::GpuConfig>,
    /// A GPU's cycle-level model (`[gpu_sim]`); without it the GPU is estimated analytically.
    #[serde(default)]
    pub gpu_sim: Option<gpu_model::GpuSimConfig>,
    /// The dense units that run a workload's dense layers in end-to-end mode.
    #[serde(default)]
    pub dense: Option<DenseSection>,
    /// How the compiler optimizes this system's programs (DAE systems; default `-O3`).
    pub compiler: Option<CompilerSection>,
    /// Energy and power figures (absent: the reports give no power for this system).
    pub power: Option<PowerSection>,
}

/// `[dense]` of a system: its dense units for end-to-end mode (`crate::dense`).
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DenseSection {
    /// Peak dense rate of the whole chip in TFLOP/s at `bytes_per_element` (a GPU's datasheet
    /// figure); or see `peak_tflops_per_core`.
    #[serde(default)]
    pub peak_tflops: Option<f64>,
    /// Peak dense rate of one core (DAE and CPU chips): the chip's is this times `cores`, so it
    /// follows a change of the core count. Exactly one of the two is given.
    #[serde(default)]
    pub peak_tflops_per_core: Option<f64>,
    /// Bandwidth the layers stream at (default: the system's memory peak).
    #[serde(default)]
    pub bandwidth: Option<Bandwidth>,
    /// Fixed time per layer (a kernel launch, a fork).
    pub layer_overhead: TimeSpan,
    /// Fixed time per matrix product of a layer (a GEMM kernel; a barrier after each on a chip
    /// of cores; default 0).
    #[serde(default)]
    pub gemm_overhead: Option<TimeSpan>,
    /// Bytes per element of weights and activations (default 2: bf16).
    #[serde(default)]
    pub bytes_per_element: Option<u32>,
}

/// `[system.power]`: energy per event and static power. Keys carry their unit as a suffix:
/// `_pj` (picojoules per event), `_pj_per_bit`, `_w` (watts). A DAE/CPU chip gives `core`,
/// `dram`, `access_unit` (with access units), a table per cache level it has and `noc` (with an
/// LLC); a GPU gives `tdp_w`, `static_w`, `onchip_pj_per_sector` and `dram`. See
/// [`crate::power`] and [`gpu_model::power`] for the formulas.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PowerSection {
    /// Per core (DAE/CPU).
    pub core: Option<crate::power::CorePower>,
    /// Per access unit (DAE).
    pub access_unit: Option<crate::power::AccessUnitPower>,
    /// Per cache level (DAE/CPU).
    pub caches: Option<crate::power::CachesPower>,
    /// The on-chip network (DAE/CPU).
    pub noc: Option<crate::power::NocPower>,
    /// The DRAM (both kinds).
    pub dram: Option<mem_model::dram::DramEnergy>,
    /// Thermal design power (GPU).
    pub tdp_w: Option<f64>,
    /// Static power with a kernel resident (GPU).
    pub static_w: Option<f64>,
    /// Energy per 32 B sector between L2 and an SM (GPU).
    pub onchip_pj_per_sector: Option<f64>,
    /// Energy per 32 B sector inside an SM, L1 hits included (GPU; optional).
    pub sm_pj_per_sector: Option<f64>,
}

/// `[system.compiler]`: an optimization level, or an explicit list of passes.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CompilerSection {
    /// `-O` level, 0 to 3 (Ember's emb-opt0..3).
    pub opt_level: Option<u8>,
    /// Pass names, replacing the level's set (`["decouple", "vectorize"]`).
    pub passes: Option<Vec<String>>,
    /// Hand-written programs instead of the compiler's, relative to the file that sets it (as
    /// `include`): the path, without extension, of the templates `<stem>.au` and `<stem>.core`,
    /// or a directory (ending in `/`, or naming one) from which each workload runs
    /// `<dir>/<family>.{au,core}` of its op family (`compiler::hand::family`); see
    /// `programs/README.md`.
    pub programs: Option<String>,
    /// How bags are spread over the cores: `"cost"` (default), `"tables"` or `"split"`.
    #[serde(default)]
    pub partition: PartitionSetting,
}

/// `compiler.partition`
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PartitionSetting {
    /// Contiguous ranges of bags of equal lookups plus bags, blind to tables
    /// (`compiler::partition_by_cost`).
    #[default]
    Cost,
    /// Tables mapped to cores in proportion to their estimated cost, from this system's cache
    /// sizes and latencies (`compiler::mapping`).
    Tables,
    /// Ranges of equal lookups plus bags that may cut a bag (merge-path), its pieces' partial
    /// rows combined as the shared cache's atomics would (`compiler::split`).
    Split,
}

/// `[system.core]`
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CoreSection {
    /// Clock frequency.
    pub clock: Frequency,
    /// Instructions issued per cycle.
    pub issue_width: u32,
    /// L1D MSHRs: memory requests in flight.
    pub max_outstanding: u32,
    /// Cache line size.
    pub line: ByteSize,
    /// Vector register width in bits.
    pub vector_bits: u32,
    /// Latencies in core cycles.
    pub latency_cycles: exec_core::Latencies,
    /// Reorder-buffer entries (default: the Neoverse-V2-class preset's).
    pub rob_entries: Option<u32>,
    /// Load-queue entries (default: the preset's).
    pub lq_entries: Option<u32>,
    /// Store-queue entries (default: the preset's).
    pub sq_entries: Option<u32>,
    /// Instructions retired per cycle (default: the preset's).
    pub retire_width: Option<u32>,
    /// Cycles lost after a mispredicted branch resolves (default: the preset's).
    pub mispredict_penalty: Option<u32>,
    /// Functional units per class (default: the preset's).
    pub functional_units: Option<exec_core::FuCounts>,
    /// Bits a vector pipe or load/store port handles per micro-op; wider vector instructions
    /// are cracked (default: the preset's 128).
    pub datapath_bits: Option<u32>,
}

/// `access_unit = "none"` or an `[system.access_unit]` table.
#[derive(Debug, Clone)]
pub enum AccessUnitSetting {
    /// No access unit: the plain CPU.
    None,
    /// An access unit per core.
    Unit(AccessUnitSection),
}

impl<'de> Deserialize<'de> for AccessUnitSetting {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = AccessUnitSetting;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("\"none\" or an access-unit table")
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Self::Value, E> {
                if s == "none" {
                    Ok(AccessUnitSetting::None)
                } else {
                    Err(E::custom(format!("\"{s}\" is not \"none\"; give \"none\" or an access-unit table")))
                }
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, m: A) -> Result<Self::Value, A::Error> {
                AccessUnitSection::deserialize(serde::de::value::MapAccessDeserializer::new(m))
                    .map(AccessUnitSetting::Unit)
            }
        }
        d.deserialize_any(V)
    }
}

/// `[system.access_unit]`
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AccessUnitSection {
    /// Total stream storage.
    pub storage: ByteSize,
    /// Line requests in flight.
    pub max_outstanding: u32,
    /// Line requests issued per cycle.
    pub requests_per_cycle: u32,
    /// Callback events written per cycle.
    pub events_per_cycle: u32,
    /// Output-queue entries the core side holds (the link from the unit to the core).
    pub outq_entries: u32,
    /// Lanes (default: the TMU's 8).
    pub lanes: Option<u32>,
    /// Layers (default: the TMU's 4).
    pub layers: Option<u32>,
    /// Entries per output-queue chunk (default 32).
    pub outq_chunk_entries: Option<u32>,
    /// Chunks the unit fills ahead (default 2: double buffering).
    pub outq_chunks: Option<u32>,
    /// Cycles a partial chunk waits for more entries before it is flushed (default 64).
    pub outq_flush_cycles: Option<u32>,
    /// Where the unit's requests enter the hierarchy: "llc" (default, as the TMU) or "l2".
    #[serde(default)]
    pub attach: Attach,
}

/// `access_unit.attach`
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Attach {
    /// The core's private L2.
    L2,
    /// The shared LLC.
    #[default]
    Llc,
}

/// `[system.caches]`: each level optional.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CachesSection {
    /// Private L1 data cache.
    pub l1d: Option<mem_model::cache::CacheConfig>,
    /// Private L2.
    pub l2: Option<mem_model::cache::CacheConfig>,
    /// One bank of the shared LLC.
    pub llc: Option<mem_model::cache::CacheConfig>,
    /// LLC banks (default: one per core).
    pub llc_banks: Option<u32>,
}

/// `[system.memory]`
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemorySection {
    /// Timing model: "simple" (fixed latency, bandwidth limit) or "dram" (the HBM/DRAM model).
    pub model: MemoryModel,
    /// Access latency ("simple").
    pub latency: Option<TimeSpan>,
    /// Peak bandwidth ("simple").
    pub bandwidth: Option<Bandwidth>,
    /// The DRAM preset ("dram"): usually `include = "../memory/hbm3-h100.toml"`.
    pub dram: Option<mem_model::dram::DramPreset>,
    /// DAE and CPU systems: latency each way between the last cache level and the memory's
    /// queues (the network to the memory controller, its front end and the PHY); default one
    /// core cycle. GPU systems set `gpu_sim.dram_link_cycles` instead.
    pub link_latency: Option<TimeSpan>,
}

/// Memory timing models.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemoryModel {
    /// Fixed latency plus a bandwidth limit.
    Simple,
    /// Channels, banks and timing constraints.
    Dram,
}
