//! The experiment driver: from a config file to one result per (system, workload) pair.
//!
//! Loading checks everything before anything runs: syntax, units, unknown keys, ranges, and
//! references between sections, each error naming the file, line, key and value. Running keeps
//! going when one pair fails (a fault, a deadlock): that pair's row carries the error and the
//! others' results are kept.

use crate::config::loader::tidy;
use crate::config::schema::{
    AccessUnitSetting, Attach, ExperimentFile, MemoryModel, SystemKind, SystemSection,
};
use crate::config::{ConfigError, Document, dram_error};
use crate::system::{AccessUnitSpec, AttachPoint, CachePlan, DaeSystem, HandSource, MemoryPlan, RunResult};
use access_unit::AccessUnitConfig;
use compiler::{CompiledWorkload, EmbeddingBagInstance, WorkloadSpec};
use exec_core::CoreConfig;
use gpu_model::{GatherShape, GpuConfig};
use hdrhistogram::Histogram;
use mem_model::SimpleMemoryConfig;
use mem_model::dram::DramSpec;
use sim_core::{Clock, PS_PER_SECOND, SeedTree, Tick};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// A system ready to run.
#[derive(Debug, Clone)]
pub enum SystemPlan {
    /// Simulated cycle by cycle.
    Dae(Box<DaeSystem>),
    /// A GPU: simulated where it has a cycle-level model, always estimated analytically.
    Gpu(Box<GpuPlan>),
}

/// A GPU system ready to run.
#[derive(Debug, Clone)]
pub struct GpuPlan {
    /// The analytic model's parameters (shared with the simulation).
    pub cfg: GpuConfig,
    /// The cycle-level model, when the preset has `[gpu_sim]`.
    pub sim: Option<gpu_model::GpuSim>,
    /// Power figures.
    pub power: Option<gpu_model::GpuPower>,
}

/// A loaded, validated experiment.
#[derive(Debug, Clone)]
pub struct Experiment {
    /// The config file.
    pub path: PathBuf,
    /// Its contents.
    pub file: ExperimentFile,
    /// Its systems, in file order, with their names.
    pub systems: Vec<(String, SystemPlan)>,
    /// Output directory.
    pub out_dir: PathBuf,
    /// `experiment.max_sim_time`: the simulated-time limit of each run (see
    /// [`Experiment::time_limit`] for the default).
    pub max_sim_time: Option<Tick>,
    /// The instances of workloads that read an index trace or a triples file, by workload name.
    pub traces: HashMap<String, EmbeddingBagInstance>,
    /// The `.daeidx` files of workloads that read one, by workload name: streamed batch by
    /// batch ([`crate::stream`]).
    pub trace_files: HashMap<String, PathBuf>,
    /// Each system's dense units (systems with `[dense]`), by name.
    pub dense: HashMap<String, crate::dense::DenseUnits>,
    /// Warnings about the experiment that do not stop it (rows the vectorizer cannot tile),
    /// for the caller to print once.
    pub warnings: Vec<String>,
}

/// Command-line settings that override the file.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    /// Master seed.
    pub seed: Option<u64>,
    /// Output directory.
    pub out: Option<PathBuf>,
}

fn required<'a, T>(doc: &Document, path: String, v: &'a Option<T>) -> Result<&'a T, ConfigError> {
    v.as_ref().ok_or_else(|| doc.error_at(&path, "required for a system of kind \"dae\""))
}

/// Applies the optional overrides of preset values, each (value, key under `section`, field,
/// upper bound); a value outside `1..=bound` is an error naming its key.
fn override_bounded<const N: usize>(
    doc: &Document,
    section: &str,
    overrides: [(Option<u32>, &str, &mut u32, u32); N],
) -> Result<(), ConfigError> {
    for (value, key, field, max) in overrides {
        if let Some(v) = value {
            if !(1..=max).contains(&v) {
                return Err(doc.error_at(&format!("{section}.{key}"), format!("must be 1 to {max}")));
            }
            *field = v;
        }
    }
    Ok(())
}

/// Most cores a system may have, and most LLC banks.
const MAX_CORES: u32 = 4096;

fn dae_system(doc: &Document, i: usize, s: &SystemSection) -> Result<DaeSystem, ConfigError> {
    let at = |key: &str| format!("system[{i}].{key}");
    let cores = *required(doc, at("cores"), &s.cores)?;
    if cores == 0 || cores > MAX_CORES {
        return Err(doc.error_at(&at("cores"), format!("must be in 1..={MAX_CORES}")));
    }
    let c = required(doc, at("core"), &s.core)?;
    let clock = Clock::new(c.clock).map_err(|e| doc.error_at(&at("core.clock"), e.to_string()))?;
    let line = u32::try_from(c.line.bytes())
        .ok()
        .filter(|l| l.is_power_of_two() && (16..=4096).contains(l))
        .ok_or_else(|| doc.error_at(&at("core.line"), "must be a power of two from 16B to 4KiB"))?;
    // Vector registers and the datapath: whole 32-bit lanes, at most the ISA's.
    let max_bits = 32 * exec_core::isa::MAX_LANES;
    let bits_ok = |bits: u32| bits != 0 && bits.is_multiple_of(32) && bits <= max_bits;
    let bits_err = |key: &str| doc.error_at(&at(key), format!("must be a multiple of 32 up to {max_bits}"));
    if !bits_ok(c.vector_bits) {
        return Err(bits_err("core.vector_bits"));
    }
    // The bounds of `exec_core::Core::new`, checked here to name the file and key.
    for (v, key, max) in
        [(c.issue_width, "core.issue_width", 1024), (c.max_outstanding, "core.max_outstanding", 1 << 20)]
    {
        if !(1..=max).contains(&v) {
            return Err(doc.error_at(&at(key), format!("must be 1 to {max}")));
        }
    }
    let l = c.latency_cycles;
    for (v, key) in [
        (l.alu, "alu"),
        (l.mul, "mul"),
        (l.div, "div"),
        (l.vector, "vector"),
        (l.queue_pop, "queue_pop"),
        (l.queue_load, "queue_load"),
    ] {
        if v == 0 {
            return Err(doc.error_at(&at(&format!("core.latency_cycles.{key}")), "must be at least 1 cycle"));
        }
    }
    let preset = CoreConfig::neoverse_v2_like(clock);
    let mut core = CoreConfig {
        clock,
        issue_width: c.issue_width,
        max_outstanding: c.max_outstanding,
        line_bytes: line,
        latency: l,
        ..preset
    };
    let window = exec_core::core::MAX_WINDOW;
    override_bounded(
        doc,
        &at("core"),
        [
            (c.rob_entries, "rob_entries", &mut core.rob_entries, window),
            (c.lq_entries, "lq_entries", &mut core.lq_entries, window),
            (c.sq_entries, "sq_entries", &mut core.sq_entries, window),
            (c.retire_width, "retire_width", &mut core.retire_width, 1024),
        ],
    )?;
    if let Some(p) = c.mispredict_penalty {
        // A million cycles is far beyond any real pipeline; more is a typo that would run on.
        if p > 1_000_000 {
            return Err(doc.error_at(&at("core.mispredict_penalty"), "must be 0 to 1000000 cycles"));
        }
        core.mispredict_penalty = p;
    }
    if let Some(bits) = c.datapath_bits {
        if !bits_ok(bits) {
            return Err(bits_err("core.datapath_bits"));
        }
        core.datapath_bits = bits;
    }
    if let Some(fu) = c.functional_units {
        for (v, key) in [
            (fu.alu, "alu"),
            (fu.muldiv, "muldiv"),
            (fu.vector, "vector"),
            (fu.load, "load"),
            (fu.store, "store"),
        ] {
            if !(1..=64).contains(&v) {
                return Err(doc.error_at(&at(&format!("core.functional_units.{key}")), "must be 1 to 64"));
            }
        }
        core.fu = fu;
    }
    let access_unit = match required(doc, at("access_unit"), &s.access_unit)? {
        AccessUnitSetting::None => None,
        AccessUnitSetting::Unit(a) => {
            for (v, key) in [
                (a.max_outstanding, "max_outstanding"),
                (a.requests_per_cycle, "requests_per_cycle"),
                (a.events_per_cycle, "events_per_cycle"),
                (a.outq_entries, "outq_entries"),
            ] {
                if v == 0 {
                    return Err(doc.error_at(&at(&format!("access_unit.{key}")), "must be at least 1"));
                }
            }
            if a.storage.bytes() < 64 {
                return Err(doc.error_at(&at("access_unit.storage"), "must be at least 64B"));
            }
            let mut unit = AccessUnitConfig {
                clock,
                storage: a.storage,
                max_outstanding: a.max_outstanding,
                line_bytes: line,
                requests_per_cycle: a.requests_per_cycle,
                events_per_cycle: a.events_per_cycle,
                ..AccessUnitConfig::tmu_like(clock)
            };
            override_bounded(
                doc,
                &at("access_unit"),
                [
                    (a.lanes, "lanes", &mut unit.lanes, 64),
                    (a.layers, "layers", &mut unit.layers, 8),
                    (a.outq_chunk_entries, "outq_chunk_entries", &mut unit.outq_chunk_entries, 1 << 16),
                    (a.outq_chunks, "outq_chunks", &mut unit.outq_chunks, 64),
                ],
            )?;
            if let Some(f) = a.outq_flush_cycles {
                unit.outq_flush_cycles = f;
            }
            if u64::from(unit.lanes) > a.storage.bytes() / 64 {
                // Either key may be the one at fault: name both.
                return Err(doc.error_at(
                    &at("access_unit.storage"),
                    format!(
                        "{} over {} lanes (access_unit.lanes) leaves less than 64 B per lane",
                        a.storage, unit.lanes
                    ),
                ));
            }
            Some(AccessUnitSpec { unit, outq_entries: a.outq_entries })
        }
    };
    let m = required(doc, at("memory"), &s.memory)?;
    let memory = match m.model {
        MemoryModel::Simple => {
            let need =
                |key: &str| doc.error_at(&at(&format!("memory.{key}")), "required for model = \"simple\"");
            let latency = m.latency.ok_or_else(|| need("latency"))?;
            let bandwidth = m.bandwidth.ok_or_else(|| need("bandwidth"))?;
            let cfg = SimpleMemoryConfig { latency, bandwidth };
            if let Some((field, why)) = cfg.out_of_range() {
                return Err(doc.error_at(&at(&format!("memory.{field}")), why));
            }
            MemoryPlan::Simple(cfg)
        }
        MemoryModel::Dram => {
            let preset = m.dram.clone().ok_or_else(|| {
                doc.error_at(
                    &at("memory.dram"),
                    "required for model = \"dram\" (include a preset from configs/memory/)",
                )
            })?;
            let spec = DramSpec::from_preset(preset).map_err(|e| dram_error(doc, &at("memory.dram"), &e))?;
            MemoryPlan::Dram(Arc::new(spec))
        }
    };
    // The memory link in whole core cycles (at least one).
    let memory_link_cycles = match m.link_latency {
        None => 1,
        Some(t) => {
            // Exactly, rounded up: 12 ns at 3 GHz is 36 cycles (a whole-ps period would give 37).
            let cycles =
                (u128::from(t.ps()) * u128::from(clock.frequency().hz())).div_ceil(1_000_000_000_000);
            u32::try_from(cycles.max(1)).ok().filter(|&c| c <= 1_000_000).ok_or_else(|| {
                doc.error_at(&at("memory.link_latency"), "must be at most a million core cycles")
            })?
        }
    };
    let mut caches = CachePlan::default();
    if let Some(cs) = &s.caches {
        let banks = cs.llc_banks.unwrap_or(0);
        if banks > MAX_CORES {
            return Err(doc
                .error_at(&at("caches.llc_banks"), format!("must be 0 (one bank per core) to {MAX_CORES}")));
        }
        // Lines of the whole chip: per core the private levels, per bank the LLC.
        let mut chip_lines = 0u64;
        let copies = [u64::from(cores), u64::from(cores), u64::from(if banks == 0 { cores } else { banks })];
        for ((key, level), copies) in
            [("l1d", &cs.l1d), ("l2", &cs.l2), ("llc", &cs.llc)].into_iter().zip(copies)
        {
            if let Some(cfg) = level {
                let g =
                    cfg.geometry().map_err(|e| doc.error_at(&at(&format!("caches.{key}")), e.to_string()))?;
                chip_lines = chip_lines.saturating_add(g.sets * u64::from(g.ways) * copies);
                if cfg.line.bytes() != line as u64 {
                    return Err(doc.error_at(
                        &at(&format!("caches.{key}.line")),
                        format!("must equal core.line ({line} B)"),
                    ));
                }
            }
        }
        // Each simulated line costs the host its tag and replacement state (tens of bytes), all
        // allocated when the chip is built: past this many, the chip would not fit in memory.
        if chip_lines > mem_model::cache::MAX_LINES {
            return Err(doc.error_at(
                &at("caches"),
                format!(
                    "the chip's caches hold {chip_lines} lines in all ({cores} cores' private levels and \
                     every LLC bank), above the supported maximum of {}",
                    mem_model::cache::MAX_LINES
                ),
            ));
        }
        if let Some(noc) = &s.noc {
            noc.check(c.line).map_err(|e| {
                doc.error_at(&at(&format!("noc.{}", e.field().unwrap_or("topology"))), e.to_string())
            })?;
        }
        caches = CachePlan {
            l1d: cs.l1d.clone(),
            l2: cs.l2.clone(),
            llc: cs.llc.clone(),
            llc_banks: cs.llc_banks.unwrap_or(0),
            noc: s.noc.clone(),
        };
    }
    let attach = match &s.access_unit {
        Some(AccessUnitSetting::Unit(a)) if a.attach == Attach::L2 => {
            if caches.l2.is_none() {
                return Err(doc.error_at(&at("access_unit.attach"), "\"l2\" needs a caches.l2 level"));
            }
            AttachPoint::L2
        }
        _ => AttachPoint::Llc,
    };
    let mut passes = compiler::Passes::default();
    if let Some(cs) = &s.compiler {
        if let Some(level) = cs.opt_level {
            passes = compiler::Passes::level(level).ok_or_else(|| {
                doc.error_at(&at("compiler.opt_level"), format!("{level} is not a level (0 to 3)"))
            })?;
        }
        if let Some(list) = &cs.passes {
            // One name an element: an empty one, or "a,b" in one string, is a slip.
            if let Some(bad) = list.iter().find(|n| n.trim().is_empty() || n.contains(',')) {
                return Err(doc.error_at(&at("compiler.passes"), format!("\"{bad}\" is not one pass name")));
            }
            passes = compiler::Passes::parse(&list.join(","))
                .map_err(|e| doc.error_at(&at("compiler.passes"), e))?;
        }
    }
    let programs = match s.compiler.as_ref().and_then(|cs| cs.programs.as_deref()) {
        Some(_) if access_unit.is_none() => {
            return Err(doc.error_at(&at("compiler.programs"), "hand-written programs need an access unit"));
        }
        Some(value) => Some(hand_source(doc, &at("compiler.programs"), value)?),
        None => None,
    };
    let window = crate::power::Window {
        rob_entries: core.rob_entries,
        lq_entries: core.lq_entries,
        sq_entries: core.sq_entries,
        // Without an L1D the core's own request limit is its MSHRs.
        mshrs: caches.l1d.as_ref().map_or(core.max_outstanding, |l| l.mshrs),
    };
    let storage = access_unit.as_ref().map(|a| a.unit.storage.bytes());
    let power = dae_power(doc, i, s, &caches, window, storage)?;
    Ok(DaeSystem {
        power,
        cores,
        core,
        vector_lanes: c.vector_bits / 32,
        access_unit,
        attach,
        caches,
        memory,
        memory_link_cycles,
        launch_overhead: s.launch_overhead.map_or(0, |t| t.ps()),
        passes,
        partition: s.compiler.as_ref().map_or_else(Default::default, |cs| cs.partition),
        programs,
    })
}

/// The power figures of DAE system `i`: every table its components need, each figure finite
/// and not negative; errors name the file and key.
fn dae_power(
    doc: &Document,
    i: usize,
    s: &SystemSection,
    caches: &CachePlan,
    window: crate::power::Window,
    storage: Option<u64>,
) -> Result<Option<crate::power::DaePower>, ConfigError> {
    let has_unit = storage.is_some();
    let Some(p) = &s.power else { return Ok(None) };
    let at = |key: &str| format!("system[{i}].power.{key}");
    let need = |key: &str, why: &str| doc.error_at(&at(key), format!("required: {why}"));
    for (key, given) in [
        ("tdp_w", p.tdp_w),
        ("static_w", p.static_w),
        ("onchip_pj_per_sector", p.onchip_pj_per_sector),
        ("sm_pj_per_sector", p.sm_pj_per_sector),
    ] {
        if given.is_some() {
            return Err(
                doc.error_at(&at(key), "is a GPU figure; a DAE chip gives core, caches, noc and dram")
            );
        }
    }
    let core = p.core.ok_or_else(|| need("core", "the chip's cores"))?;
    let dram =
        p.dram.ok_or_else(|| need("dram", "the chip's memory (include configs/memory/*-energy.toml)"))?;
    let access_unit = match (has_unit, p.access_unit) {
        (true, None) => return Err(need("access_unit", "the chip has access units")),
        (true, a) => a,
        (false, _) => None,
    };
    let figures = p.caches.unwrap_or(crate::power::CachesPower { l1d: None, l2: None, llc: None });
    let has = [caches.l1d.is_some(), caches.l2.is_some(), caches.llc.is_some()];
    for ((key, given), has) in figures.levels().into_iter().zip(has) {
        if has && given.is_none() {
            return Err(need(&format!("caches.{key}"), &format!("the chip has a {key}")));
        }
    }
    let noc = match (caches.llc.is_some(), p.noc) {
        (true, None) => return Err(need("noc", "the chip has an LLC behind a network")),
        (_, n) => n,
    };
    let power = crate::power::DaePower { core, access_unit, caches: figures, noc, dram };
    power.validate().map_err(|e| doc.error_at(&at(&e.key), e.to_string()))?;
    // The figures are quoted for one window, one storage size and one size per cache: priced
    // here for this chip's.
    let size = |c: &Option<mem_model::cache::CacheConfig>| c.as_ref().map_or(0, |c| c.size.bytes());
    let power = power.for_chip(window, storage, [size(&caches.l1d), size(&caches.l2), size(&caches.llc)]);
    Ok(Some(power))
}

/// The power figures of GPU system `i`, checked; errors name the file and key.
fn gpu_power(
    doc: &Document,
    i: usize,
    s: &SystemSection,
) -> Result<Option<gpu_model::GpuPower>, ConfigError> {
    let Some(p) = &s.power else { return Ok(None) };
    let at = |key: &str| format!("system[{i}].power.{key}");
    for (key, given) in [
        ("core", p.core.is_some()),
        ("access_unit", p.access_unit.is_some()),
        ("caches", p.caches.is_some()),
        ("noc", p.noc.is_some()),
    ] {
        if given {
            return Err(doc.error_at(
                &at(key),
                "is a DAE figure; a GPU gives tdp_w, static_w, onchip_pj_per_sector and dram",
            ));
        }
    }
    let need = |key: &str| doc.error_at(&at(key), "required for a GPU's power");
    let power = gpu_model::GpuPower {
        tdp_w: p.tdp_w.ok_or_else(|| need("tdp_w"))?,
        static_w: p.static_w.ok_or_else(|| need("static_w"))?,
        onchip_pj_per_sector: p.onchip_pj_per_sector.ok_or_else(|| need("onchip_pj_per_sector"))?,
        sm_pj_per_sector: p.sm_pj_per_sector.unwrap_or(0.0),
        dram: p.dram.ok_or_else(|| need("dram"))?,
    };
    power.validate().map_err(|e| doc.error_at(&at(&e.field), e.to_string()))?;
    Ok(Some(power))
}

/// The hand-written programs named by the key at `key` (relative to the file that sets it, as
/// `include` resolves its path): a directory (the value ends with `/` or names one), whose
/// pairs [`load_hand_families`] reads once the workloads are known, or the stem of one pair,
/// read now.
fn hand_source(doc: &Document, key: &str, value: &str) -> Result<HandSource, ConfigError> {
    let path = relative_to(doc, key, value);
    if value.ends_with('/') || value.ends_with(std::path::MAIN_SEPARATOR) || path.is_dir() {
        if !path.is_dir() {
            return Err(doc.error_at(key, format!("{} is not a directory", path.display())));
        }
        return Ok(HandSource::Dir { dir: path, pairs: Default::default() });
    }
    Ok(HandSource::Pair(hand_programs(doc, key, &path)?))
}

/// Reads the templates `<stem>.au` and `<stem>.core` (`stem` a path without extension); an
/// error names the file and the key at `key`.
fn hand_programs(
    doc: &Document,
    key: &str,
    stem: &Path,
) -> Result<compiler::hand::HandPrograms, ConfigError> {
    let read = |ext: &str| {
        let mut path = stem.as_os_str().to_owned();
        path.push(format!(".{ext}"));
        let path = PathBuf::from(path);
        std::fs::read_to_string(&path)
            .map(|text| compiler::hand::Template { name: path.display().to_string(), text })
            .map_err(|e| doc.error_at(key, format!("cannot read {}: {e}", path.display())))
    };
    Ok(compiler::hand::HandPrograms { au: read("au")?, core: read("core")? })
}

/// Reads, for a directory of hand-written programs, the pair of each workload's family
/// (`<dir>/<family>.{au,core}`, [`compiler::hand::family`]) that is not read yet; an error names
/// the workload, the file and the key at `key`.
fn load_hand_families(
    doc: &Document,
    key: &str,
    source: &mut HandSource,
    workloads: &[WorkloadSpec],
) -> Result<(), ConfigError> {
    let HandSource::Dir { dir, pairs } = source else { return Ok(()) };
    for w in workloads {
        let family = compiler::hand::family(w);
        if !pairs.contains_key(family) {
            let read = |ext: &str| {
                let path = dir.join(format!("{family}.{ext}"));
                std::fs::read_to_string(&path)
                    .map(|text| compiler::hand::Template { name: path.display().to_string(), text })
                    .map_err(|e| {
                        let why = format!(
                            "workload {} needs {family}: cannot read {}: {e}",
                            w.name,
                            path.display()
                        );
                        doc.error_at(key, why)
                    })
            };
            let p = compiler::hand::HandPrograms { au: read("au")?, core: read("core")? };
            pairs.insert(family.to_string(), p);
        }
    }
    Ok(())
}

/// Where a workload's `.daeidx` trace is and how many batches it holds (read once, with its
/// first batch, when the config is loaded).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceSource {
    /// The file, resolved against the config file that names it.
    pub path: PathBuf,
    /// Its batches.
    pub batches: u64,
}

/// Reads the index trace of `spec` (the workload at config key `key`), if it names one: its
/// `.npy` files relative to the file that names them, checked against the workload; with the
/// `.daeidx` file it came from, if it did. Errors name the file and key.
pub fn read_trace(
    doc: &Document,
    key: &str,
    spec: &WorkloadSpec,
    seeds: &SeedTree,
) -> Result<Option<(EmbeddingBagInstance, Option<TraceSource>)>, ConfigError> {
    let Some(t) = &spec.trace else { return Ok(None) };
    let prefix = if key.is_empty() { String::new() } else { format!("{key}.") };
    let path = |field: &str, file: &str| relative_to(doc, &format!("{prefix}trace.{field}"), file);
    let read = |field: &str, path: &Path| {
        crate::npy_read::read_ints(path)
            .map_err(|e| doc.error_at(&format!("{prefix}trace.{field}"), e.to_string()))
    };
    // The arrays, and the .npy files they came from (which errors in their contents name).
    let mut source = None;
    let (offsets, indices, files) = match t {
        compiler::TraceFiles::Npy { offsets, indices } => {
            let (o, i) = (path("offsets", offsets), path("indices", indices));
            (read("offsets", &o)?, read("indices", &i)?, Some((o, i)))
        }
        compiler::TraceFiles::NpyLengths { lengths, indices } => {
            let (l, i) = (path("lengths", lengths), path("indices", indices));
            let offsets = offsets_of_lengths(&read("lengths", &l)?).map_err(|e| {
                doc.error_at(&format!("{prefix}trace.lengths"), format!("{}: {e}", l.display()))
            })?;
            (offsets, read("indices", &i)?, Some((l, i)))
        }
        compiler::TraceFiles::Daeidx { file } => {
            let (o, i, s) = read_daeidx(doc, &format!("{prefix}trace.file"), file, spec)?;
            source = Some(s);
            (o, i, None)
        }
    };
    let inst = EmbeddingBagInstance::from_trace(spec, &offsets, &indices, seeds).map_err(|e| {
        let lengths = matches!(t, compiler::TraceFiles::NpyLengths { .. });
        let message = match (&files, e.field) {
            (Some((o, _)), "trace.offsets") if lengths => {
                format!("{}: as offsets (0, then the lengths' running sums): {}", o.display(), e.message)
            }
            (Some((o, _)), "trace.offsets") => format!("{}: {}", o.display(), e.message),
            (Some((_, i)), "trace.indices") => format!("{}: {}", i.display(), e.message),
            _ => e.message,
        };
        let field = if lengths && e.field == "trace.offsets" { "trace.lengths" } else { e.field };
        doc.error_at(&format!("{prefix}{field}"), message)
    })?;
    Ok(Some((inst, source)))
}

/// CSR offsets of bag `lengths` (0, then their running sums), or why they cannot be: a
/// negative length, naming its position.
fn offsets_of_lengths(lengths: &[i64]) -> Result<Vec<i64>, String> {
    let mut offsets = Vec::with_capacity(lengths.len() + 1);
    offsets.push(0i64);
    for (k, &n) in lengths.iter().enumerate() {
        if n < 0 {
            return Err(format!("lengths[{k}] = {n} is negative"));
        }
        let last = offsets[offsets.len() - 1];
        offsets.push(last.saturating_add(n));
    }
    Ok(offsets)
}

/// Reads the first batch of the `.daeidx` trace `file` (config key `at`) as table-major CSR
/// offsets and row ids, after checking its tables, batch and rows against the workload's; the
/// rest of the file is streamed through and checked (checksum included), so a bad trace fails
/// before any run. (Its later batches are read again as they run: [`crate::stream`].) Errors name the key
/// and the file.
fn read_daeidx(
    doc: &Document,
    at: &str,
    file: &str,
    spec: &WorkloadSpec,
) -> Result<(Vec<i64>, Vec<i64>, TraceSource), ConfigError> {
    let path = relative_to(doc, at, file);
    let err = |e: compiler::trace::TraceError| doc.error_at(at, e.to_string());
    let header = *compiler::trace::TraceReader::open(&path).map_err(err)?.header();
    let shown = path.display().to_string();
    for (what, trace, workload) in [
        ("tables", u64::from(header.tables), u64::from(spec.tables)),
        ("bags per table (batch)", header.batch, u64::from(spec.batch)),
    ] {
        if trace != workload {
            let key = if what == "tables" { "tables" } else { "batch" };
            return Err(doc.error_at(
                at,
                format!("{shown}: the trace has {trace} {what}, but the workload's {key} = {workload}"),
            ));
        }
    }
    if header.rows > spec.rows {
        return Err(doc.error_at(
            at,
            format!(
                "{shown}: the trace's row ids run below rows = {}, more than the workload's rows = {}",
                header.rows, spec.rows
            ),
        ));
    }
    if header.batches == 0 {
        return Err(doc.error_at(at, format!("{shown}: the trace holds no batch")));
    }
    let batch = compiler::trace::read_all(&path, 0, Some(spec.rows)).map_err(err)?;
    // Offsets are at most the file's length and row ids below the workload's 32-bit rows.
    let source = TraceSource { path, batches: u64::from(header.batches) };
    Ok((signed(&batch.offsets), signed(&batch.indices), source))
}

/// A trace's offsets or row ids as the signed values [`EmbeddingBagInstance::from_trace`]
/// checks (a value past `i64::MAX`, which no trace can hold below its rows, saturates).
pub(crate) fn signed(v: &[u64]) -> Vec<i64> {
    v.iter().map(|&x| i64::try_from(x).unwrap_or(i64::MAX)).collect()
}

/// Reads the inputs workload `spec` (at config key `key`) takes from files, if any: an index
/// trace ([`read_trace`], with its `.daeidx` file if it is one) or a knowledge-graph triples
/// file ([`read_triples`]). (A graph file is read before the spec is resolved: [`read_graph`].)
pub fn read_inputs(
    doc: &Document,
    key: &str,
    spec: &WorkloadSpec,
    seeds: &SeedTree,
) -> Result<Option<(EmbeddingBagInstance, Option<TraceSource>)>, ConfigError> {
    match read_trace(doc, key, spec, seeds)? {
        Some(read) => Ok(Some(read)),
        None => Ok(read_triples(doc, key, spec, seeds)?.map(|inst| (inst, None))),
    }
}

/// `file`'s contents (the value of config key `at`, relative to the file that sets it;
/// decompressed if its name ends in `.gz`: [`crate::data_file`]), or an error naming the key
/// and the file.
fn read_text(doc: &Document, at: &str, file: &str) -> Result<(PathBuf, String), ConfigError> {
    let path = relative_to(doc, at, file);
    match crate::data_file::read_text(&path) {
        Ok(text) => Ok((path, text)),
        Err(e) => Err(doc.error_at(at, e.to_string())),
    }
}

/// An error in `path` at 1-based `line` (0: the file as a whole) reported at config key `at`.
fn file_error(doc: &Document, at: &str, path: &Path, (line, why): (usize, String)) -> ConfigError {
    match line {
        0 => doc.error_at(at, format!("{}: {why}", path.display())),
        n => doc.error_at(at, format!("{}:{n}: {why}", path.display())),
    }
}

/// Reads the edge list of `spec`'s graph (the workload at config key `key`) if it comes from a
/// file (`[graph] file`, relative to the config file that sets it) into the spec, so that
/// [`WorkloadSpec::resolved`] sees its vertices and edges. Errors name the key, the file and
/// the line.
pub fn read_graph(doc: &Document, key: &str, spec: &mut WorkloadSpec) -> Result<(), ConfigError> {
    let Some(compiler::GraphSpec::File(g)) = &mut spec.graph else { return Ok(()) };
    let prefix = if key.is_empty() { String::new() } else { format!("{key}.") };
    let at = format!("{prefix}graph.file");
    let (path, text) = read_text(doc, &at, &g.file)?;
    g.load_text(&text).map_err(|e| file_error(doc, &at, &path, e))
}

/// Reads the triples file of knowledge-graph workload `spec` (at config key `key`), if it names
/// one, relative to the file that names it: the instance of its first `batch` triples, with
/// negatives drawn from `seeds`. With `entity_dict` and `relation_dict` the file holds names,
/// read through those dictionaries (which must fit the workload's `rows` and `relations`).
/// Errors name the key, the file and the line.
pub fn read_triples(
    doc: &Document,
    key: &str,
    spec: &WorkloadSpec,
    seeds: &SeedTree,
) -> Result<Option<EmbeddingBagInstance>, ConfigError> {
    let Some(file) = &spec.triples else { return Ok(None) };
    let prefix = if key.is_empty() { String::new() } else { format!("{key}.") };
    let at = format!("{prefix}triples");
    let (path, text) = read_text(doc, &at, file)?;
    let triples = match (&spec.entity_dict, &spec.relation_dict) {
        (Some(e), Some(r)) => {
            let dict = |field: &str, file: &str, what: &str, limit: u64, limit_key: &str| {
                let at = format!("{prefix}{field}");
                let (path, text) = read_text(doc, &at, file)?;
                let d = compiler::kg_dict::Dictionary::parse(&text, &path.display().to_string())
                    .map_err(|e| file_error(doc, &at, &path, e))?;
                if d.len() as u64 > limit {
                    return Err(doc.error_at(
                        &at,
                        format!(
                            "{}: {} {what}, more than the workload's {limit_key} = {limit}",
                            path.display(),
                            d.len()
                        ),
                    ));
                }
                Ok(d)
            };
            let ents = dict("entity_dict", e, "entities", spec.rows, "rows")?;
            let rels = dict("relation_dict", r, "relations", spec.relations, "relations")?;
            compiler::kg_dict::parse_named_triples(&text, &ents, &rels)
        }
        _ => compiler::parse_triples(&text, spec.rows, spec.relations),
    }
    .map_err(|e| file_error(doc, &at, &path, e))?;
    EmbeddingBagInstance::from_triples(spec, &triples, seeds).map(Some).map_err(|e| {
        doc.error_at(&format!("{prefix}{}", e.field), format!("{}: {}", path.display(), e.message))
    })
}

/// The mean bag size of an instance, rounded up (at least 1).
pub fn mean_bag(inst: &EmbeddingBagInstance) -> u32 {
    let bags = inst.offsets.len().saturating_sub(1).max(1);
    (inst.indices.len().div_ceil(bags)).max(1) as u32
}

/// `file` resolved against the directory of the config file that sets `key` (as `include`s
/// are), tidied for messages.
fn relative_to(doc: &Document, key: &str, file: &str) -> PathBuf {
    let dir = doc.locate(key).and_then(|l| l.file.parent()).unwrap_or(Path::new(""));
    tidy(&dir.join(file))
}

/// GPU system `i`: its analytic parameters and, with `[gpu_sim]`, its cycle-level model on the
/// `[memory]` DRAM preset; errors name the file and key.
pub fn gpu_system(doc: &Document, i: usize, s: &SystemSection) -> Result<GpuPlan, ConfigError> {
    let at = |key: &str| format!("system[{i}].{key}");
    let cfg = s.gpu.ok_or_else(|| doc.error_at(&at("gpu"), "required for kind = \"gpu\""))?;
    let named = |section: &str, e: gpu_model::GpuError| {
        let gpu_model::GpuError::Range { field, why, .. } = e;
        doc.error_at(&at(&format!("{section}.{field}")), why)
    };
    cfg.validate().map_err(|e| named("gpu", e))?;
    // The DAE and CPU systems' launch and memory link: a GPU preset has its own.
    for (set, key, instead) in [
        (
            s.launch_overhead.is_some(),
            "launch_overhead",
            "launch is gpu.launch_overhead and gpu_sim.launch_latency",
        ),
        (
            s.memory.as_ref().is_some_and(|m| m.link_latency.is_some()),
            "memory.link_latency",
            "memory path is gpu_sim.dram_link_cycles",
        ),
    ] {
        if set {
            return Err(doc.error_at(&at(key), format!("is for DAE and CPU systems; a GPU's {instead}")));
        }
    }
    let sim = match &s.gpu_sim {
        None => None,
        Some(sim) => {
            sim.validate(&cfg).map_err(|e| named("gpu_sim", e))?;
            for (key, c) in [("l1", &sim.l1), ("l2.bank", &sim.l2.bank)] {
                c.geometry().map_err(|e| doc.error_at(&at(&format!("gpu_sim.{key}")), e.to_string()))?;
            }
            let need = || {
                doc.error_at(&at("memory"), "a GPU with [gpu_sim] needs model = \"dram\" and a dram preset")
            };
            let m = s.memory.as_ref().ok_or_else(need)?;
            let preset = match (&m.model, &m.dram) {
                (MemoryModel::Dram, Some(p)) => p.clone(),
                _ => return Err(need()),
            };
            let spec = DramSpec::from_preset(preset).map_err(|e| dram_error(doc, &at("memory.dram"), &e))?;
            // The analytic model and the simulation must describe one memory: the simulated
            // bandwidth is reported as a share of gpu.hbm_bandwidth.
            let (analytic, simulated) = (
                cfg.hbm_bandwidth.bytes_per_second() as f64,
                spec.peak_bandwidth().bytes_per_second() as f64,
            );
            if (analytic - simulated).abs() > 0.02 * simulated {
                // Either side may be the one edited: name the memory preset's file too.
                let memory = doc.place(&at("memory.dram.name")).shown_file();
                return Err(doc.error_at(
                    &at("gpu.hbm_bandwidth"),
                    format!(
                        "{} differs from the peak of the memory the simulation runs on ({}, memory.dram in {})",
                        cfg.hbm_bandwidth,
                        spec.peak_bandwidth(),
                        memory.display()
                    ),
                ));
            }
            Some(gpu_model::GpuSim { gpu: cfg, sim: sim.clone(), dram: Arc::new(spec) })
        }
    };
    Ok(GpuPlan { cfg, sim, power: gpu_power(doc, i, s)? })
}

/// The dense units of system `i` from its `[dense]`; `memory_peak` (bytes/s) is the default
/// bandwidth, `cores` the chip's core count (none for a GPU). Errors name the file and key.
fn dense_units(
    doc: &Document,
    i: usize,
    d: &crate::config::schema::DenseSection,
    memory_peak: f64,
    cores: Option<u32>,
) -> Result<crate::dense::DenseUnits, ConfigError> {
    let at = |key: &str| format!("system[{i}].dense.{key}");
    let (key, tflops) = match (d.peak_tflops, d.peak_tflops_per_core, cores) {
        (Some(t), None, _) => ("peak_tflops", t),
        (None, Some(t), Some(n)) => ("peak_tflops_per_core", t * f64::from(n)),
        (None, Some(_), None) => {
            return Err(doc.error_at(&at("peak_tflops_per_core"), "is for chips of cores: give peak_tflops"));
        }
        _ => {
            return Err(
                doc.error_at(&at("peak_tflops"), "give exactly one of peak_tflops and peak_tflops_per_core")
            );
        }
    };
    if !(tflops.is_finite() && tflops > 0.0) {
        return Err(doc.error_at(&at(key), "must be a finite number above 0"));
    }
    let elem_bytes = d.bytes_per_element.unwrap_or(2);
    if !matches!(elem_bytes, 1 | 2 | 4 | 8) {
        return Err(doc.error_at(&at("bytes_per_element"), "must be 1, 2, 4 or 8"));
    }
    let bandwidth = d.bandwidth.map_or(memory_peak, |b| b.bytes_per_second() as f64);
    if bandwidth <= 0.0 {
        return Err(doc.error_at(&at("bandwidth"), "must be above zero"));
    }
    Ok(crate::dense::DenseUnits {
        peak_flops: tflops * 1e12,
        bandwidth,
        layer_overhead: d.layer_overhead.ps(),
        gemm_overhead: d.gemm_overhead.map_or(0, |t| t.ps()),
        elem_bytes: u64::from(elem_bytes),
    })
}

/// Loads a GPU system preset on its own (as an experiment's `[[system]]` includes it); it must
/// have a cycle-level model. Errors name the file and key.
pub fn load_gpu_system(path: &Path) -> Result<gpu_model::GpuSim, ConfigError> {
    #[derive(serde::Deserialize)]
    struct Systems {
        system: Vec<SystemSection>,
    }
    let text = format!("[[system]]\nname = \"gpu\"\ninclude = {:?}\n", path.display().to_string());
    // The wrapper sits beside nothing: the include is resolved against the working directory.
    let doc = Document::from_str(&text, Path::new("gpu-calibrate"))?;
    let f: Systems = doc.deserialize()?;
    let Some(s) = f.system.first() else { return Err(doc.error_at("system", "no system")) };
    if s.kind != SystemKind::Gpu {
        return Err(doc.error_at("system[0].kind", "must be \"gpu\""));
    }
    gpu_system(&doc, 0, s)?
        .sim
        .ok_or_else(|| doc.error_at("system[0]", "the GPU has no [gpu_sim] (cycle-level model)"))
}

impl Experiment {
    /// The simulated-time limit of a run on `inst`: `experiment.max_sim_time` if given, else
    /// 1 ms plus 10 us per row lookup. The slowest shipped runs take tens of nanoseconds a
    /// lookup, so no sound run comes near it, while a program stuck in a loop is reported after
    /// seconds of host time rather than the half hour a fixed second of simulated time took.
    pub fn time_limit(&self, inst: &EmbeddingBagInstance) -> Tick {
        self.max_sim_time.unwrap_or_else(|| {
            let lookups = inst.indices.len() as u64;
            (PS_PER_SECOND / 1000).saturating_add(lookups.saturating_mul(PS_PER_SECOND / 100_000))
        })
    }

    /// Loads and validates `path`, applying `overrides`.
    pub fn load(path: &Path, overrides: &Overrides) -> Result<Self, ConfigError> {
        Self::from_document(Document::load(path)?, path, overrides)
    }

    /// Validates an already loaded (and possibly edited: a sweep point) document as the
    /// experiment of config file `path`, applying `overrides`.
    pub fn from_document(mut doc: Document, path: &Path, overrides: &Overrides) -> Result<Self, ConfigError> {
        if let Some(seed) = overrides.seed {
            let seed = i64::try_from(seed)
                .map_err(|_| doc.error_at("experiment.seed", "--seed must fit 63 bits"))?;
            doc.set("experiment.seed", toml::Value::Integer(seed))?;
        }
        // `memory = "hbm3-h100"` reads naturally (`dae-sim mem --memory` takes preset names) but
        // a system's memory is a table; say how to name a preset rather than serde's "expected
        // struct MemorySection".
        if let Some(toml::Value::Array(systems)) = doc.get("system") {
            for i in 0..systems.len() {
                let key = format!("system[{i}].memory");
                if let Some(toml::Value::String(name)) = doc.get(&key) {
                    let hint = format!(
                        "a system's memory is a table, not a preset name: write [system.memory] with \
                         model = \"dram\" and [system.memory.dram] with include = \"memory/{name}.toml\" \
                         (a path relative to this file; presets are in configs/memory/)"
                    );
                    return Err(doc.error_at(&key, hint));
                }
            }
        }
        let file: ExperimentFile = doc.deserialize()?;
        if file.system.is_empty() {
            return Err(doc.error_at("system", "the experiment has no [[system]]"));
        }
        if file.workload.is_empty() {
            return Err(doc.error_at("workload", "the experiment has no [[workload]]"));
        }
        // The name is the default output folder (out/NAME): one folder, not a path.
        if let Some(why) = crate::dump::bad_name(&file.experiment.name) {
            return Err(doc.error_at("experiment.name", format!("{why}: it names the folder out/NAME")));
        }
        let mut systems = Vec::new();
        let mut dense = HashMap::new();
        for (i, s) in file.system.iter().enumerate() {
            if systems.iter().any(|(n, _)| n == &s.name) {
                return Err(doc.error_at(&format!("system[{i}].name"), "two systems have this name"));
            }
            if s.name.trim().is_empty() {
                return Err(
                    doc.error_at(&format!("system[{i}].name"), "must not be empty (reports name systems)")
                );
            }
            let plan = match s.kind {
                SystemKind::Dae => SystemPlan::Dae(Box::new(dae_system(&doc, i, s)?)),
                SystemKind::Gpu => SystemPlan::Gpu(Box::new(gpu_system(&doc, i, s)?)),
            };
            if let Some(d) = &s.dense {
                let (peak, cores) = match &plan {
                    SystemPlan::Dae(sys) => (memory_peak(sys), Some(sys.cores)),
                    SystemPlan::Gpu(g) => (g.cfg.hbm_bandwidth.bytes_per_second() as f64, None),
                };
                dense.insert(s.name.clone(), dense_units(&doc, i, d, peak, cores)?);
            }
            systems.push((s.name.clone(), plan));
        }
        let mut file = file;
        for i in 0..file.workload.len() {
            // A graph file is read first: the graph sets the workload's shape.
            read_graph(&doc, &format!("workload[{i}]"), &mut file.workload[i])?;
            file.workload[i] = file.workload[i]
                .resolved()
                .map_err(|e| doc.error_at(&format!("workload[{i}].{}", e.field), e.message.clone()))?;
            let w = &file.workload[i];
            if file.workload[..i].iter().any(|o| o.name == w.name) {
                return Err(doc.error_at(&format!("workload[{i}].name"), "two workloads have this name"));
            }
            if w.name.trim().is_empty() {
                return Err(doc
                    .error_at(&format!("workload[{i}].name"), "must not be empty (reports name workloads)"));
            }
        }
        // Index traces and triples files are read and checked now, so a bad one fails before
        // any run.
        let seeds = SeedTree::new(file.experiment.seed);
        let mut traces = HashMap::new();
        let mut trace_files = HashMap::new();
        for i in 0..file.workload.len() {
            let mut held = 1;
            if let Some((inst, source)) =
                read_inputs(&doc, &format!("workload[{i}]"), &file.workload[i], &seeds)?
            {
                if file.workload[i].trace.is_some() {
                    file.workload[i].bag_size = mean_bag(&inst);
                }
                if let Some(source) = source {
                    held = source.batches;
                    trace_files.insert(file.workload[i].name.clone(), source.path);
                }
                traces.insert(file.workload[i].name.clone(), inst);
            }
            let w = &mut file.workload[i];
            if w.batches > held && w.trace.is_some() {
                return Err(doc.error_at(
                    &format!("workload[{i}].batches"),
                    format!("{} batches asked for, but the trace holds {held}", w.batches),
                ));
            }
            if w.batches == 0 {
                w.batches = held;
            }
        }
        // Hand-written programs must instantiate for every workload (placeholders, syntax); a
        // directory's are read now, a pair per family the workloads need.
        for (i, (_, plan)) in systems.iter_mut().enumerate() {
            let SystemPlan::Dae(sys) = plan else { continue };
            let key = format!("system[{i}].compiler.programs");
            let Some(source) = &mut sys.programs else { continue };
            load_hand_families(&doc, &key, source, &file.workload)?;
            let au_lanes = sys.target_info().au_lanes;
            let Some(source) = &sys.programs else { continue };
            for w in &file.workload {
                let p = source.for_workload(w).map_err(|e| doc.error_at(&key, e))?;
                compiler::hand::check(w, p, sys.vector_lanes, au_lanes).map_err(|e| {
                    doc.error_at(
                        &format!("system[{i}].compiler.programs"),
                        format!("workload {}: {e}", w.name),
                    )
                })?;
            }
        }
        if let Some(b) = &file.report.baseline
            && !systems.iter().any(|(n, _)| n == b)
        {
            return Err(doc.error_at("report.baseline", format!("no system is named \"{b}\"")));
        }
        let mut warnings = untiled_rows(&systems, &file.workload);
        warnings.extend(timing_warnings(&systems));
        let out_dir = overrides.out.clone().unwrap_or_else(|| match &file.experiment.output {
            Some(o) => PathBuf::from(o),
            None => PathBuf::from("out").join(&file.experiment.name),
        });
        let max_sim_time = file.experiment.max_sim_time.map(|t| t.ps());
        if max_sim_time == Some(0) {
            return Err(
                doc.error_at("experiment.max_sim_time", "must be above zero (every run would stop at once)")
            );
        }
        Ok(Self {
            path: path.to_path_buf(),
            file,
            systems,
            out_dir,
            max_sim_time,
            traces,
            trace_files,
            dense,
            warnings,
        })
    }

    /// The inputs of workload `spec`: its index trace or triples file, or indices drawn from
    /// [`Self::seeds`].
    pub fn instance(&self, spec: &WorkloadSpec) -> EmbeddingBagInstance {
        self.traces
            .get(&spec.name)
            .cloned()
            .unwrap_or_else(|| EmbeddingBagInstance::generate(spec, &self.seeds()))
    }

    /// The random streams of a run: every workload's inputs are drawn from these.
    pub fn seeds(&self) -> SeedTree {
        SeedTree::new(self.file.experiment.seed)
    }
}

/// The result of one (system, workload) pair.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// System name.
    pub system: String,
    /// Workload name.
    pub workload: String,
    /// "cycle-level" (timed and computed), "cycle-timing" (timed only: the simulated GPU) or
    /// "analytic".
    pub model: &'static str,
    /// The measurements, or why there are none.
    pub result: Result<Measured, String>,
    /// Host seconds the pair took (not part of results.json: it varies run to run).
    pub host_seconds: f64,
}

/// The figures of one pair.
#[derive(Debug, Clone)]
pub struct Measured {
    /// Simulated (or estimated) time.
    pub time: Tick,
    /// Lookups performed.
    pub lookups: u64,
    /// Bytes moved to and from memory.
    pub bytes: u64,
    /// Lookup latency percentiles in ps: p50, p99, mean; `None` when no lookup was timed (a
    /// program whose loads carry no `!lookup` mark, as the ladder's `-O0` and `-O1` ones).
    pub latency: Option<(u64, u64, f64)>,
    /// Functional check: `Some(Ok)` verified, `Some(Err)` mismatch, `None` not computed.
    pub verified: Option<Result<(), String>>,
    /// Engine events (cycle-level runs).
    pub events: u64,
    /// Every statistic (cycle-level runs).
    pub stats: Option<serde_json::Value>,
    /// Memory-level parallelism and latency profile (cycle-level runs).
    pub mlp: Option<MlpProfile>,
    /// Where the cores' and access units' time went (cycle-level DAE and CPU runs).
    pub breakdown: Option<crate::breakdown::TimeBreakdown>,
    /// The simulated output tensor, `bags x dim` f32 row-major (cycle-level runs; the analytic
    /// GPU model computes none). Not part of results.json: `--dump-outputs` writes it.
    pub outputs: Option<Vec<f32>>,
    /// Energy per component (systems with power figures).
    pub energy: Option<crate::power::EnergyReport>,
    /// The memory's peak bandwidth in bytes per second (HBM or the fixed-latency model's).
    pub peak_bytes_per_second: f64,
    /// A simulated GPU's analytic estimate, reported beside it as a cross-check.
    pub analytic_time: Option<Tick>,
    /// End-to-end mode: the workload's dense layers on the system's dense units.
    pub dense_time: Option<Tick>,
    /// What the figures leave out and why (said after the run and kept in results.json).
    pub warnings: Vec<String>,
}

/// A warning per DRAM timing of a system's memory that no constraint or latency uses (a
/// misspelt name would change nothing) or that is used and 0 cycles (likely a typo).
fn timing_warnings(systems: &[(String, SystemPlan)]) -> Vec<String> {
    let mut out = Vec::new();
    for (name, plan) in systems {
        let spec = match plan {
            SystemPlan::Dae(s) => match &s.memory {
                MemoryPlan::Dram(spec) => Some(spec.as_ref()),
                _ => None,
            },
            SystemPlan::Gpu(g) => g.sim.as_ref().map(|sim| sim.dram.as_ref()),
        };
        if let Some(spec) = spec {
            out.extend(spec.timing_warnings().map(|w| format!("system `{name}`: memory {w}")));
        }
    }
    out
}

/// Rows the vectorizer cannot tile on a DAE chip's access units (compiled programs only): no
/// chunk between half the vector length and the whole tiles `dim` (17 on 16 lanes), or a row
/// of one element, so the unit streams the row element by element and no lookup is timed (its
/// latency reads n/a). A warning each, not an error: the figures are what such code gives.
fn untiled_rows(systems: &[(String, SystemPlan)], workloads: &[WorkloadSpec]) -> Vec<String> {
    let mut warnings = Vec::new();
    for (name, plan) in systems {
        let SystemPlan::Dae(sys) = plan else { continue };
        if sys.access_unit.is_none() || sys.programs.is_some() || !sys.passes.has(compiler::Pass::Vectorize) {
            continue;
        }
        let lanes = i64::from(sys.vector_lanes);
        for w in workloads.iter().filter(|w| w.op != compiler::workload::Op::TtEmbeddingBag) {
            if compiler::passes::vectorize::tiling_chunk(i64::from(w.dim), lanes).is_some() {
                continue;
            }
            let why = if w.dim < 2 {
                format!("its rows are {} element(s), too short for vectors", w.dim)
            } else {
                format!("no chunk of {}..={lanes} lanes tiles its {}-element rows", (lanes + 1) / 2, w.dim)
            };
            warnings.push(format!(
                "{name} on {}: {why}, so its access units stream them element by element (slower, and \
                 no lookup latency is timed)",
                w.name
            ));
        }
    }
    warnings
}

/// Peak bandwidth of a DAE or CPU system's memory, in bytes per second.
fn memory_peak(sys: &DaeSystem) -> f64 {
    match &sys.memory {
        MemoryPlan::Simple(c) => c.bandwidth.bytes_per_second() as f64,
        MemoryPlan::Dram(spec) => spec.peak_bandwidth().bytes_per_second() as f64,
    }
}

pub(crate) fn measured(sys: &DaeSystem, r: RunResult) -> Measured {
    let h = &r.lookup_latency;
    let mlp = Some(MlpProfile::of(sys, &r));
    let energy = sys.power.as_ref().map(|p| crate::power::energy(p, &r.activity));
    Measured {
        energy,
        peak_bytes_per_second: memory_peak(sys),
        time: r.sim_time,
        lookups: r.lookups,
        bytes: r.bytes,
        latency: latency_summary(h),
        verified: Some(r.verified),
        events: r.events,
        stats: Some(r.stats.to_json()),
        mlp,
        breakdown: Some(r.breakdown),
        outputs: Some(r.outputs),
        analytic_time: None,
        dense_time: None,
        warnings: r.warnings,
    }
}

/// Upper edges of the lookup-latency histogram's bins, in multiples of the L1D hit latency
/// (the last bin is open): log-spaced, so the paper's 10x and 100x marks are bin edges.
pub const LATENCY_BIN_EDGES: [u64; 9] = [1, 2, 5, 10, 20, 50, 100, 200, 500];

/// Where the lookup-latency CDF is sampled: from 1x to [`CDF_END`] x the unit, this many points
/// a decade.
pub const CDF_PER_DECADE: u32 = 8;
/// See [`CDF_PER_DECADE`].
pub const CDF_END: f64 = 2000.0;

/// `x` to three significant digits, so the CDF's points read as 1.33x, 1.78x, ...
fn three_digits(x: f64) -> f64 {
    format!("{x:.2e}").parse().unwrap_or(x)
}

/// [`Measured::latency`] of the lookup latencies `h`: p50, p99 and mean, none when it is empty.
pub fn latency_summary(h: &Histogram<u64>) -> Option<(u64, u64, f64)> {
    (!h.is_empty()).then(|| (h.value_at_quantile(0.5), h.value_at_quantile(0.99), h.mean()))
}

/// The CDF of `h` (latencies in ps) in multiples of `unit_ps`: `(units, fraction of lookups at
/// or below)` at log-spaced points from 1x to [`CDF_END`]x ([`CDF_PER_DECADE`] a decade), then,
/// when some lookups took longer, the slowest one's at 1, so the CDF always ends at 1.
pub fn latency_cdf(h: &hdrhistogram::Histogram<u64>, unit_ps: u64) -> Vec<(f64, f64)> {
    let total = h.len().max(1) as f64;
    let at = |units: f64| {
        let edge = (units * unit_ps as f64).round() as u64;
        (units, h.count_between(0, edge) as f64 / total)
    };
    let mut points: Vec<(f64, f64)> = (0..)
        .map(|k| three_digits(10f64.powf(f64::from(k) / f64::from(CDF_PER_DECADE))))
        .take_while(|&u| u < CDF_END)
        .chain([CDF_END])
        .map(at)
        .collect();
    let slowest = h.max() as f64 / unit_ps.max(1) as f64;
    if !h.is_empty() && points.last().is_some_and(|p| p.1 < 1.0) {
        points.push((three_digits(slowest).max(CDF_END), 1.0));
    }
    points
}

/// How a cycle-level run used the memory system: lookup latency in multiples of the L1D hit
/// latency (the paper's Fig. 3), lookups in flight and HBM utilization.
#[derive(Debug, Clone, PartialEq)]
pub struct MlpProfile {
    /// The latency unit: the L1D hit latency in ps (one core cycle without an L1D).
    pub unit_ps: u64,
    /// What the unit is ("L1D hit" or "core cycle").
    pub unit: &'static str,
    /// Fraction of lookups per bin: `<= 1x`, `1-2x`, ..., `> 500x` ([`LATENCY_BIN_EDGES`]).
    pub bins: Vec<f64>,
    /// The lookup-latency CDF: `(units, fraction of lookups at or below)` ([`latency_cdf`]).
    pub latency_cdf: Vec<(f64, f64)>,
    /// Fraction of lookups slower than 10 and than 100 units.
    pub above_10x: f64,
    /// See `above_10x`.
    pub above_100x: f64,
    /// Mean lookup latency in units.
    pub mean_units: f64,
    /// Timed row fetches ("lookups" of the latency histogram: one per lookup for embedding
    /// bags, several for a knowledge-graph triple or a TT lookup) in flight per core, averaged
    /// over the run (sum of latencies / run time / cores; Little's law, exact for the average;
    /// the run's time includes the system's launch overhead, as the other averages do).
    pub in_flight_per_core: f64,
    /// Memory bandwidth used over the run as a fraction of the memory's peak.
    pub hbm_utilization: f64,
    /// The same per core (`hbm_utilization / cores`).
    pub hbm_utilization_per_core: f64,
    /// Compute throughput: instructions retired over the cores' peak (issue width per cycle).
    pub compute_utilization: f64,
    /// Access throughput: the access units' line requests over their peak (requests per cycle),
    /// zero without access units.
    pub access_utilization: f64,
}

impl MlpProfile {
    fn of(sys: &DaeSystem, r: &RunResult) -> MlpProfile {
        let cycle = sys.core.clock.cycles_to_ticks(1).max(1);
        let (unit_ps, unit) = match &sys.caches.l1d {
            Some(l1) => (cycle * l1.hit_latency_cycles.max(1), "L1D hit"),
            None => (cycle, "core cycle"),
        };
        let h = &r.lookup_latency;
        let total = h.len().max(1) as f64;
        let above = |units: u64| {
            let edge = units * unit_ps;
            h.count_between(edge + 1, u64::MAX) as f64 / total
        };
        let mut bins = Vec::with_capacity(LATENCY_BIN_EDGES.len() + 1);
        let mut below = 0.0;
        for &e in &LATENCY_BIN_EDGES {
            let upto = 1.0 - above(e);
            bins.push(upto - below);
            below = upto;
        }
        bins.push(1.0 - below);
        let time = r.sim_time.max(1) as f64;
        let latency_sum = h.mean() * h.len() as f64;
        let peak = memory_peak(sys);
        let achieved = r.bytes as f64 * PS_PER_SECOND as f64 / time;
        let hbm_utilization = if peak > 0.0 { achieved / peak } else { 0.0 };
        let cores = f64::from(sys.cores.max(1));
        let core_cycles = time / cycle as f64 * cores;
        let compute_utilization =
            r.instructions as f64 / (core_cycles * f64::from(sys.core.issue_width.max(1)));
        let access_utilization = match &sys.access_unit {
            Some(a) => {
                let au_cycles = time / a.unit.clock.cycles_to_ticks(1).max(1) as f64 * cores;
                r.au_requests as f64 / (au_cycles * f64::from(a.unit.requests_per_cycle.max(1)))
            }
            None => 0.0,
        };
        MlpProfile {
            unit_ps,
            unit,
            bins,
            latency_cdf: latency_cdf(h, unit_ps),
            above_10x: above(10),
            above_100x: above(100),
            mean_units: h.mean() / unit_ps as f64,
            in_flight_per_core: latency_sum / time / cores,
            hbm_utilization,
            hbm_utilization_per_core: hbm_utilization / cores,
            compute_utilization,
            access_utilization,
        }
    }
}

/// Runs one workload on one system.
pub fn run_pair(
    seeds: &SeedTree,
    max_sim_time: Tick,
    plan: &SystemPlan,
    spec: &WorkloadSpec,
    inst: &EmbeddingBagInstance,
    reference: &[f32],
) -> Result<Measured, String> {
    match plan {
        SystemPlan::Dae(sys) => {
            run_dae(seeds, max_sim_time, sys, spec, inst, reference).map(|r| measured(sys, r))
        }
        SystemPlan::Gpu(plan) => run_gpu(seeds, max_sim_time, plan, spec, inst).map(|(m, _)| m),
    }
}

/// Compiles workload `spec` on `inputs` for the DAE or CPU system `sys` (or instantiates its
/// hand-written programs) and runs it, checking the outputs against `reference`.
pub fn run_dae(
    seeds: &SeedTree,
    max_sim_time: Tick,
    sys: &DaeSystem,
    spec: &WorkloadSpec,
    inst: &EmbeddingBagInstance,
    reference: &[f32],
) -> Result<RunResult, String> {
    let target = sys.target_info();
    let mut compiled: CompiledWorkload =
        compiler::compile(spec, inst.clone(), target).map_err(|e| format!("compile: {e}"))?;
    if let Some(source) = &sys.programs {
        let p = source.for_workload(spec).map_err(|e| format!("programs: {e}"))?;
        compiled =
            compiler::hand::instantiate(&compiled, &p.au, &p.core, target.vector_lanes, target.au_lanes)
                .map_err(|e| format!("programs: {e}"))?;
    }
    crate::system::run(sys, &compiled, reference, max_sim_time, seeds).map_err(|e| e.to_string())
}

/// Runs one workload on a GPU: the cycle-level model where the preset has one, with the analytic
/// estimate beside it; the analytic estimate alone otherwise.
pub(crate) fn run_gpu(
    seeds: &SeedTree,
    max_sim_time: Tick,
    plan: &GpuPlan,
    spec: &WorkloadSpec,
    inst: &EmbeddingBagInstance,
) -> Result<(Measured, Option<Histogram<u64>>), String> {
    // Rows as stored: a TT lookup gathers its slices' rows (the analytic model leaves out the
    // contraction's arithmetic; the simulation counts it).
    let per_lookup = spec.tt.as_ref().map_or(1, compiler::TtShape::lookup_rows);
    // The kernel's mapping (its thread groups and their rows) sets how many loads are in flight.
    let kernel = std::sync::Arc::new(crate::gpu_kernel::kernel(spec, inst));
    let rows_in_flight =
        kernel.row_unroll.or(plan.sim.as_ref().map(|s| s.sim.kernel.row_unroll)).unwrap_or(1);
    let shape = GatherShape {
        lookups: inst.indices.len() as u64 * per_lookup,
        distinct_rows: inst.bag_rows(spec).len() as u64,
        row_bytes: spec.stored_row_bytes(),
        bags: spec.bags(),
        index_bytes: crate::gpu_kernel::index_bytes(inst),
        groups: u64::from(kernel.bags()),
        group_rows: kernel.rows.len() as u64,
        longest_group: kernel.longest_bag(),
        groups_per_warp: u64::from(kernel.bags_per_warp()),
        rows_in_flight: u64::from(rows_in_flight),
        indices_per_load: u64::from(kernel.group_lanes()),
    };
    let analytic = gpu_model::estimate(&plan.cfg, &shape);
    let peak = plan.cfg.hbm_bandwidth.bytes_per_second() as f64;
    let lookups = inst.indices.len() as u64;
    let Some(sim) = &plan.sim else {
        let energy =
            plan.power.map(|p| crate::power::EnergyReport::of_gpu(&p.energy(&analytic), analytic.time));
        let l = analytic.latency;
        return Ok((
            Measured {
                energy,
                peak_bytes_per_second: peak,
                time: analytic.time,
                lookups,
                bytes: analytic.dram_bytes,
                latency: Some((l, l, l as f64)),
                verified: None,
                events: 0,
                stats: None,
                mlp: None,
                breakdown: None,
                outputs: None,
                analytic_time: None,
                dense_time: None,
                warnings: Vec::new(),
            },
            None,
        ));
    };
    let r = gpu_model::sim::run(sim, kernel, seeds, max_sim_time).map_err(|e| e.to_string())?;
    let energy = plan.power.map(|p| crate::power::EnergyReport::of_gpu(&p.energy(&r.activity), r.time));
    let h = &r.latency;
    let m = Measured {
        energy,
        peak_bytes_per_second: peak,
        time: r.time,
        lookups,
        bytes: r.activity.dram_bytes,
        latency: latency_summary(h),
        verified: None,
        events: r.events,
        stats: None,
        mlp: None,
        breakdown: None,
        outputs: None,
        analytic_time: Some(analytic.time),
        dense_time: None,
        warnings: Vec::new(),
    };
    Ok((m, Some(r.latency)))
}

/// End-to-end mode: the time system `name`'s dense units take for `spec`'s dense layers, over
/// all its batches (none without dense layers or units).
pub(crate) fn dense_time(exp: &Experiment, name: &str, spec: &WorkloadSpec) -> Option<Tick> {
    let units = exp.dense.get(name)?;
    (!spec.dense.is_empty())
        .then(|| units.total(&spec.dense, u64::from(spec.batch.max(1))).saturating_mul(spec.batches.max(1)))
}

/// The model a system runs: "cycle-level" (DAE and CPU), "cycle-timing" (the simulated GPU)
/// or "analytic".
pub(crate) fn model_of(plan: &SystemPlan) -> &'static str {
    match plan {
        SystemPlan::Gpu(g) if g.sim.is_none() => "analytic",
        SystemPlan::Gpu(_) => "cycle-timing",
        SystemPlan::Dae(_) => "cycle-level",
    }
}

/// Runs one (system, workload) pair of a single-batch workload.
fn run_one(
    exp: &Experiment,
    name: &str,
    plan: &SystemPlan,
    spec: &WorkloadSpec,
    input: &PairInput,
) -> Outcome {
    let t0 = Instant::now();
    let result = run_pair(&exp.seeds(), exp.time_limit(&input.0), plan, spec, &input.0, &input.1);
    Outcome::of(exp, name, plan, spec, result, t0.elapsed().as_secs_f64())
}

impl Outcome {
    /// Whether the pair ran and, where it computes outputs, they equal the reference: a
    /// mismatch is as much a failure as a run that stopped.
    pub fn succeeded(&self) -> bool {
        matches!(&self.result, Ok(m) if !matches!(m.verified, Some(Err(_))))
    }

    /// The outcome of system `name` (`plan`) on `spec`: `result` with the time of the
    /// workload's dense layers on that system added (end-to-end mode).
    pub(crate) fn of(
        exp: &Experiment,
        name: &str,
        plan: &SystemPlan,
        spec: &WorkloadSpec,
        mut result: Result<Measured, String>,
        host_seconds: f64,
    ) -> Outcome {
        if let Ok(m) = &mut result {
            m.dense_time = dense_time(exp, name, spec);
        }
        Outcome {
            system: name.to_string(),
            workload: spec.name.clone(),
            model: model_of(plan),
            result,
            host_seconds,
        }
    }
}

/// A workload's instance and reference output, shared by the pairs that run it.
type PairInput = (EmbeddingBagInstance, Vec<f32>);

/// A workload's [`PairInput`], made by the first of its pairs to start and dropped when the
/// last one ends, so that at most `threads` workloads' inputs are held at once.
struct SharedInput {
    input: Mutex<Option<Arc<PairInput>>>,
    left: AtomicUsize,
}

/// What [`run`] reports as it goes.
#[derive(Debug, Clone, Copy)]
pub enum Progress<'a> {
    /// A (system, workload) pair has ended.
    Pair(&'a Outcome),
    /// Batch `done` of `count` of a workload of several batches has run on every system.
    Batch {
        /// The workload.
        workload: &'a str,
        /// Batches run so far.
        done: u64,
        /// Batches in all.
        count: u64,
    },
}

/// Runs every (system, workload) pair on up to `threads` worker threads; `progress` hears
/// about each pair as it ends (in the order they end), and about each batch of a workload of
/// several. The outcomes come back in the config's order, workload by workload, and do not
/// depend on `threads`: each pair is its own simulation with its own seeds. A workload of
/// several batches runs them one after another on the same threads ([`crate::stream`]).
pub fn run(exp: &Experiment, threads: usize, mut progress: impl FnMut(Progress<'_>)) -> Vec<Outcome> {
    let workloads = &exp.file.workload;
    let systems = exp.systems.len();
    // Single-batch pairs, workload-major: the pool takes them in this order.
    let pairs: Vec<(usize, usize)> = (0..workloads.len())
        .filter(|&w| workloads[w].batches <= 1)
        .flat_map(|w| (0..systems).map(move |s| (w, s)))
        .collect();
    let shared: Vec<SharedInput> = workloads
        .iter()
        .map(|_| SharedInput { input: Mutex::new(None), left: AtomicUsize::new(systems) })
        .collect();
    let mut slots: Vec<Option<Outcome>> = (0..workloads.len() * systems).map(|_| None).collect();
    let next = AtomicUsize::new(0);
    let (tx, rx) = crossbeam::channel::unbounded::<(usize, Outcome)>();
    std::thread::scope(|scope| {
        for _ in 0..threads.clamp(1, pairs.len().max(1)) {
            let tx = tx.clone();
            let (pairs, shared, next) = (&pairs, &shared, &next);
            scope.spawn(move || {
                while let Some(&(w, s)) = pairs.get(next.fetch_add(1, Ordering::Relaxed)) {
                    let spec = &workloads[w];
                    let input = {
                        let mut slot = shared[w].input.lock().unwrap_or_else(|p| p.into_inner());
                        slot.get_or_insert_with(|| {
                            let inst = exp.instance(spec);
                            let reference = inst.reference(spec);
                            Arc::new((inst, reference))
                        })
                        .clone()
                    };
                    let (name, plan) = &exp.systems[s];
                    let o = run_one(exp, name, plan, spec, &input);
                    drop(input);
                    if shared[w].left.fetch_sub(1, Ordering::AcqRel) == 1 {
                        shared[w].input.lock().unwrap_or_else(|p| p.into_inner()).take();
                    }
                    if tx.send((w * systems + s, o)).is_err() {
                        return;
                    }
                }
            });
        }
        drop(tx);
        for (k, o) in rx {
            progress(Progress::Pair(&o));
            slots[k] = Some(o);
        }
    });
    let mut out = Vec::with_capacity(slots.len());
    for (w, spec) in workloads.iter().enumerate() {
        if spec.batches > 1 {
            let on_batch = |done, count| progress(Progress::Batch { workload: &spec.name, done, count });
            for o in crate::stream::run_workload(exp, spec, threads, on_batch) {
                progress(Progress::Pair(&o));
                out.push(o);
            }
            continue;
        }
        out.extend(slots[w * systems..(w + 1) * systems].iter_mut().filter_map(Option::take));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn histogram(latencies_ps: &[u64]) -> hdrhistogram::Histogram<u64> {
        let mut h = hdrhistogram::Histogram::new_with_bounds(1, 1_000_000_000, 3).unwrap();
        for &l in latencies_ps {
            h.record(l).unwrap();
        }
        h
    }

    #[test]
    fn the_cdf_is_log_spaced_monotone_and_ends_at_one() {
        // Lookups of 2 to 400 units of 1 ns.
        let h = histogram(&(1..=200).map(|i| i * 2_000).collect::<Vec<_>>());
        let cdf = latency_cdf(&h, 1_000);
        assert_eq!(cdf.first().unwrap().0, 1.0);
        assert_eq!(*cdf.last().unwrap(), (CDF_END, 1.0));
        // Eight points a decade: 1, 1.33, 1.78, 2.37, ... 10 is the ninth.
        assert_eq!(cdf[1].0, 1.33);
        assert_eq!(cdf[8].0, 10.0);
        assert_eq!(cdf.len(), 28, "{cdf:?}");
        assert!(cdf.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1), "{cdf:?}");
        // Half the lookups take at most 200 units.
        let at_200 = cdf.iter().find(|p| p.0 == 178.0).unwrap().1;
        assert!((at_200 - 0.445).abs() < 0.01, "{at_200}");
    }

    #[test]
    fn lookups_all_at_15x_make_the_cdf_jump_between_10x_and_20x() {
        let h = histogram(&[15_000; 100]);
        let cdf = latency_cdf(&h, 1_000);
        assert!(cdf.iter().filter(|p| p.0 <= 10.0).all(|p| p.1 == 0.0), "{cdf:?}");
        assert!(cdf.iter().filter(|p| p.0 >= 20.0).all(|p| p.1 == 1.0), "{cdf:?}");
    }

    #[test]
    fn lookups_slower_than_2000x_end_the_cdf_at_the_slowest() {
        let h = histogram(&[5_000, 3_000_000]);
        let cdf = latency_cdf(&h, 1_000);
        let n = cdf.len();
        assert_eq!(cdf[n - 2], (CDF_END, 0.5));
        assert_eq!(cdf[n - 1].1, 1.0);
        assert!((cdf[n - 1].0 - 3000.0).abs() <= 3.0, "{:?}", cdf[n - 1]);
    }
}
