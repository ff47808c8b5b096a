//! The compilation pipeline: a workload to per-core access-unit and core programs.
//!
//! The front end lowers the workload to the loop level ([`crate::frontend`]). Work is
//! partitioned across cores as contiguous ranges of bags ([`Partition`]): by default of nearly
//! equal cost (lookups plus one per bag, so bags of skewed sizes balance as far as whole bags
//! can), or with tables mapped to cores by their estimated cost
//! ([`crate::mapping`]), or of exactly equal cost with long bags cut where a core's share ends
//! (merge-path, [`crate::split`]: the pieces are compiled as bags and combined after the run);
//! each core's function is the loop nest over its range. For a decoupled target the enabled passes
//! ([`crate::passes`]) then run in order (decouple to SLC, vectorize, bufferize, simplify-mem,
//! hoist, align-queues), SLC lowers to DLC, and DLC maps onto the access unit and the core's dispatch
//! loop ([`crate::target`]). For a core-only target the core runs the loop level itself, with
//! its own loads, after vectorize and simplify-mem. Every stage's text can be recorded
//! ([`Stages`]) for `dae-sim compile --emit` and `--print-after-all`.

use crate::embedding_bag::EmbeddingBagInstance;
use crate::frontend;
use crate::ir::{Arg, Func, MemId, text, verify};
use crate::layout::{DataRegion, Layout};
use crate::mapping::MemoryCosts;
use crate::passes::{
    Pass, PassError, Passes, align, bufferize, dce, decouple, hoist, nontemporal, simplify_mem, to_dlc,
    vectorize,
};
use crate::workload::{WorkloadError, WorkloadSpec};
use access_unit::AuProgram;
use exec_core::CoreProgram;
use std::collections::HashMap;
use std::ops::Range;
use thiserror::Error;

/// Widest row a workload may have (bufferized rows are marshaled whole; this bounds a row to
/// 16 KiB).
pub const MAX_DIM: u32 = 4096;

/// Where the lookups run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// Each core has an access unit that runs the lookups ahead of it.
    Decoupled,
    /// The cores run everything themselves.
    CoreOnly,
}

/// Machine parameters the code generator needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TargetInfo {
    /// Decoupled or core-only.
    pub target: Target,
    /// Cores to spread the work over.
    pub cores: u32,
    /// f32 lanes of a vector register.
    pub vector_lanes: u32,
    /// Lanes of the access unit (decoupled targets): the innermost loop advances in lockstep
    /// over them, under a broadcast layer. 1 keeps every level single-lane.
    pub au_lanes: u32,
    /// Stream storage of each access-unit lane in bytes (0: unlimited). Outer layers' rows
    /// that do not fit go to the core as addresses ([`crate::target::au::au_program`]).
    pub au_storage_per_lane: u64,
    /// The passes to run.
    pub passes: Passes,
    /// How the bags are spread over the cores.
    pub partition: Partition,
}

/// How the bags are spread over the cores (`[system.compiler] partition`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Partition {
    /// `"cost"`: contiguous ranges of equal lookups-plus-bags ([`partition_by_cost`]), blind
    /// to tables.
    #[default]
    Cost,
    /// `"tables"`: tables on contiguous cores in proportion to their estimated cost
    /// ([`crate::mapping::partition_by_tables`]), from the memory hierarchy's parameters.
    Tables(MemoryCosts),
    /// `"split"`: ranges of equal lookups-plus-bags that may cut a bag, each piece storing a
    /// partial row ([`crate::split`]); workloads whose bags cannot be cut fall back to
    /// [`Partition::Cost`].
    Split,
}

impl Partition {
    /// The bag range of each of `target`'s cores for `inst`.
    pub fn split(
        &self,
        spec: &WorkloadSpec,
        inst: &EmbeddingBagInstance,
        target: &TargetInfo,
    ) -> Vec<Range<u64>> {
        match self {
            Partition::Cost | Partition::Split => partition_by_cost(&inst.offsets, target.cores),
            Partition::Tables(mem) => {
                crate::mapping::partition_by_tables(spec, inst, mem, target.cores, target.vector_lanes)
            }
        }
    }
}

/// The programs and data of one core.
#[derive(Debug, Clone, PartialEq)]
pub struct CoreJob {
    /// Bags (global numbering) this core computes.
    pub bags: Range<u64>,
    /// The access unit's program (decoupled targets only).
    pub au: Option<AuProgram>,
    /// The core's program.
    pub core: CoreProgram,
    /// First byte of this core's output rows.
    pub output_base: u64,
    /// f32 elements of its output rows.
    pub output_elems: u64,
    /// Its private scratch, if the op needs one (TT-EmbeddingBag; padding with mean or max).
    pub scratch: Option<exec_core::OutputBuffer>,
}

/// A compiled workload: data, per-core programs and the reference result.
#[derive(Debug, Clone, PartialEq)]
pub struct CompiledWorkload {
    /// The workload.
    pub spec: WorkloadSpec,
    /// Its inputs.
    pub instance: EmbeddingBagInstance,
    /// Where its arrays live.
    pub layout: Layout,
    /// Memory contents.
    pub regions: Vec<DataRegion>,
    /// One job per core.
    pub jobs: Vec<CoreJob>,
    /// Whether some core's access unit streams rows in vector-sized chunks, because a whole row
    /// does not fit a lane: such rows are not timed as lookups (their latency reads n/a).
    pub chunked_rows: bool,
    /// Under `partition = "split"`: how the pieces (the bags of `spec` and `instance`, whose
    /// offsets hold the cut points) make up the workload's bags ([`crate::split`]).
    pub split: Option<crate::split::SplitBags>,
    /// Under `partition = "split"`, why this workload's bags were not cut, when a bag is longer
    /// than a core's share (otherwise cutting would change little and nothing is said).
    pub unsplit: Option<&'static str>,
}

/// Why a workload could not be compiled.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum CompileError {
    /// The workload description is unusable.
    #[error(transparent)]
    Workload(#[from] WorkloadError),
    /// The target is unusable.
    #[error("target: {0}")]
    Target(String),
    /// A pass could not transform the program.
    #[error(transparent)]
    Pass(#[from] PassError),
    /// The program needs more than the target has (registers, traversal units, streams).
    #[error("resources: {0}")]
    Resources(String),
    /// Generated code failed to parse or verify (a compiler bug, reported rather than hidden).
    #[error("internal: generated {what} program is invalid: {message}")]
    Internal {
        /// Which program.
        what: &'static str,
        /// The verifier's message.
        message: String,
    },
}

/// Splits the bags of CSR `offsets` (`bags + 1` entries) into `parts` contiguous ranges of
/// nearly equal cost, a bag costing its lookups plus one (its own setup and store): the range
/// boundaries are where the running cost crosses `k / parts` of the total. No range then costs
/// more than its share plus one bag, which matters when bag sizes are skewed (the in-degrees of
/// a power-law graph) and an equal *count* of bags would leave one core with most of the work.
pub fn partition_by_cost(offsets: &[u32], parts: u32) -> Vec<Range<u64>> {
    let bags = offsets.len().saturating_sub(1) as u64;
    let parts = u64::from(parts.max(1));
    let cost = |g: u64| u64::from(offsets[g as usize]) + g;
    let total = if bags == 0 { 0 } else { cost(bags) };
    let mut ranges = Vec::with_capacity(parts as usize);
    let mut start = 0u64;
    for k in 1..=parts {
        // The first boundary at or past this part's share (binary search on the running cost).
        let target = total * k / parts;
        let (mut lo, mut hi) = (start, bags);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if cost(mid) < target { lo = mid + 1 } else { hi = mid }
        }
        let end = if k == parts { bags } else { lo };
        ranges.push(start..end);
        start = end;
    }
    ranges
}

/// The text of each stage of one compilation, for `--emit` and `--print-after-all`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Stages {
    /// The loop level, before partitioning.
    pub loop_level: String,
    /// Per core: `(stage, text)` after partitioning, after each pass that ran, and the targets
    /// (`slc`, `dlc`, `au`, `core`).
    pub cores: Vec<Vec<(String, String)>>,
}

/// Compiles `spec` with inputs `inst` for `target`.
pub fn compile(
    spec: &WorkloadSpec,
    inst: EmbeddingBagInstance,
    target: TargetInfo,
) -> Result<CompiledWorkload, CompileError> {
    compile_with_stages(spec, inst, target, None)
}

/// Like [`compile`], recording the text of every stage in `stages`.
pub fn compile_with_stages(
    spec: &WorkloadSpec,
    inst: EmbeddingBagInstance,
    target: TargetInfo,
    mut stages: Option<&mut Stages>,
) -> Result<CompiledWorkload, CompileError> {
    spec.validate()?;
    if target.cores == 0 {
        return Err(CompileError::Target("cores must be at least 1".into()));
    }
    if !(1..=64).contains(&target.vector_lanes) {
        return Err(CompileError::Target(format!("vector lanes {} outside 1..=64", target.vector_lanes)));
    }
    if inst.offsets.len() as u64 != spec.bags() + 1 || inst.weights.is_some() != spec.weights {
        return Err(CompileError::Internal {
            what: "instance",
            message: format!(
                "{} offsets for {} bags, or weights that the workload does not declare",
                inst.offsets.len(),
                spec.bags()
            ),
        });
    }
    if spec.op == crate::workload::Op::GnnScatter && inst.edges.is_none() {
        return Err(CompileError::Internal {
            what: "instance",
            message: "message passing without an edge list".into(),
        });
    }
    // Merge-path partitioning: the pieces of cut bags are compiled as bags of their own.
    let mut unsplit = None;
    let cut = if target.partition == Partition::Split {
        // Piece numbers are u32, as bag numbers are: at most `cores - 1` pieces more.
        if inst.offsets.len() as u64 + u64::from(target.cores) > u64::from(u32::MAX) {
            return Err(CompileError::Target(format!("{} bags are too many to cut", inst.offsets.len() - 1)));
        }
        match crate::split::cut_allowed(spec) {
            Ok(()) => crate::split::cut(spec, &inst, target.cores),
            Err(why) => {
                unsplit = crate::split::has_long_bag(&inst.offsets, target.cores).then_some(why);
                None
            }
        }
    } else {
        None
    };
    let (spec, inst, split, cut_parts) = match cut {
        Some(c) => (c.spec, c.instance, Some(c.split), Some(c.parts)),
        None => (spec.clone(), inst, None, None),
    };
    let spec = &spec;
    // Each core's destinations (bags) and the range of the root loop it runs: the bags
    // themselves, or for message passing its edges, grouped core by core.
    let parts = cut_parts.unwrap_or_else(|| target.partition.split(spec, &inst, &target));
    let (loop_fn, placed, loop_ranges) = match (&inst.edges, spec.op) {
        (Some(edges), crate::workload::Op::GnnScatter) => {
            let (ordered, ranges) = edges_by_core(edges, &parts);
            let placed = EmbeddingBagInstance {
                indices: ordered.iter().map(|&(s, _)| s).collect(),
                edges: Some(ordered),
                ..inst.clone()
            };
            (frontend::lower_scatter(spec, edges.len() as u64), placed, ranges)
        }
        (_, crate::workload::Op::KgScore) => {
            let model = spec.model.ok_or(WorkloadError { field: "model", message: "required".into() })?;
            (frontend::lower_kg(spec, model, inst.indices.len() as u64), inst.clone(), parts.clone())
        }
        (_, crate::workload::Op::TtEmbeddingBag) => {
            let tt = spec.tt.as_ref().ok_or(WorkloadError { field: "tt", message: "required".into() })?;
            (frontend::lower_tt(spec, tt, inst.indices.len() as u64), inst.clone(), parts.clone())
        }
        _ => (frontend::lower(spec, inst.indices.len() as u64), inst.clone(), parts.clone()),
    };
    // The layout reserves the scratch the `hoist` pass will use: its memory has the same shape
    // on every core, so one core's passes tell.
    let hoisted = match loop_ranges.first() {
        Some(range) => hoisted_bytes(&restrict(&loop_fn, range), target, &inst, spec),
        None => 0,
    };
    let layout = Layout::plan_with_hoisted(spec, &placed, target.cores, hoisted);
    let regions = layout.regions(spec, &placed);
    check(&loop_fn, "loop level")?;
    let mut bases = bases(&loop_fn, &layout);
    if let Some(s) = stages.as_deref_mut() {
        s.loop_level = text::print(&loop_fn);
    }
    let mut jobs = Vec::new();
    let mut chunked_rows = false;
    for (core_index, (bags, range)) in parts.into_iter().zip(&loop_ranges).enumerate() {
        // Each core's own scratch.
        let scratch = layout.scratch.map(|s| s.block(core_index));
        for (name, offset) in crate::layout::scratch_offsets(spec) {
            if let (Some(m), Some(s)) = (loop_fn.mem_named(name), scratch) {
                bases.insert(m, s.base + offset);
            }
        }
        let mut record: Vec<(String, String)> = Vec::new();
        let hoisted_at =
            scratch.filter(|_| hoisted > 0).map(|s| s.base + crate::layout::hoisted_offset(spec));
        let lower = |target: TargetInfo, record: &mut Vec<(String, String)>| {
            lower_core(&loop_fn, range, target, &bases, hoisted_at, &inst, spec, record)
        };
        let mut lowered = lower(target, &mut record);
        if let Ok((Some(au), _)) = &lowered
            && target.passes.has(Pass::Bufferize)
            && target.au_storage_per_lane > 0
            && au.lane_iteration_bytes() > target.au_storage_per_lane
        {
            // Whole rows do not fit a lane even with the outer ones left to the core: stream
            // them in vector-sized chunks instead, one callback a chunk.
            let chunked = TargetInfo { passes: target.passes.without(Pass::Bufferize), ..target };
            record.clear();
            lowered = lower(chunked, &mut record);
            chunked_rows = true;
        }
        // The stages so far are kept even when a later one fails: they show where.
        if let Some(s) = stages.as_deref_mut() {
            s.cores.push(record);
        }
        let (au, core_text) = lowered?;
        let core = exec_core::parse(&core_text)
            .map_err(|e| CompileError::Internal { what: "core", message: format!("{e}\n{core_text}") })?;
        let output_base = layout.output + bags.start * spec.out_row_bytes();
        let output_elems = (bags.end - bags.start) * spec.out_width();
        jobs.push(CoreJob { bags, au, core, output_base, output_elems, scratch });
    }
    Ok(CompiledWorkload {
        spec: spec.clone(),
        instance: inst,
        layout,
        regions,
        jobs,
        chunked_rows,
        split,
        unsplit,
    })
}

/// `edges` grouped by the core owning their destination (`parts`: each core's destinations),
/// in their own order within a core, and each core's range in the result.
fn edges_by_core(edges: &[(u32, u32)], parts: &[Range<u64>]) -> (Vec<(u32, u32)>, Vec<Range<u64>>) {
    let core_of =
        |d: u32| parts.partition_point(|r| r.end <= u64::from(d)).min(parts.len().saturating_sub(1));
    let mut counts = vec![0usize; parts.len() + 1];
    for &(_, d) in edges {
        counts[core_of(d) + 1] += 1;
    }
    for c in 0..parts.len() {
        counts[c + 1] += counts[c];
    }
    let ranges = counts.windows(2).map(|w| w[0] as u64..w[1] as u64).collect();
    let mut next = counts;
    let mut ordered = vec![(0, 0); edges.len()];
    for &e in edges {
        let c = core_of(e.1);
        ordered[next[c]] = e;
        next[c] += 1;
    }
    (ordered, ranges)
}

/// Verifies a stage's function; a failure is a compiler bug.
fn check(f: &Func, stage: &'static str) -> Result<(), CompileError> {
    verify::verify(f)
        .map_err(|e| CompileError::Internal { what: stage, message: format!("{e}\n{}", text::print(f)) })
}

/// Byte addresses of the loop function's memories.
fn bases(f: &Func, l: &Layout) -> HashMap<MemId, u64> {
    let mut b = HashMap::new();
    for (name, addr) in [
        (frontend::OFFSETS, Some(l.offsets)),
        (frontend::INDICES, Some(l.indices)),
        (frontend::SRC, Some(l.indices)),
        (frontend::DST, l.dst),
        (frontend::HEADS, l.kg.map(|k| k.heads)),
        (frontend::RELS, l.kg.map(|k| k.relations)),
        (frontend::RELATION_TABLE, l.kg.map(|k| k.relation_table)),
        (frontend::TT_ROWS, l.tt.map(|t| t.descriptors)),
        (frontend::WEIGHTS, l.weights),
        (frontend::TABLES, Some(l.tables)),
        (frontend::TABLE_BASE, l.table_base),
        (frontend::ROW_PARAMS, Some(l.tables)),
        (frontend::OUT, Some(l.output)),
    ] {
        if let (Some(m), Some(a)) = (f.mem_named(name), addr) {
            b.insert(m, a);
        }
    }
    b
}

/// The loop function restricted to bags `bags` (its root loop's bounds).
fn restrict(f: &Func, bags: &Range<u64>) -> Func {
    let mut g = f.clone();
    if let Some(root) = g.body.first_mut() {
        root.args[0] = Arg::Int(bags.start as i64);
        root.args[1] = Arg::Int(bags.end as i64);
    }
    g
}

/// Bytes of scratch the `hoist` pass's memory takes in loop function `f` (restricted to a
/// core's range) under `target`. Only the pipeline with whole rows is probed: hoisting needs a
/// row's chunks in one callback, so the chunked fallback (rows too wide for the access unit's
/// lanes, no `bufferize`) never declares the memory. A pipeline that fails here counts as none:
/// lowering the core reports its error.
fn hoisted_bytes(f: &Func, target: TargetInfo, inst: &EmbeddingBagInstance, spec: &WorkloadSpec) -> u64 {
    if target.target == Target::CoreOnly
        || !target.passes.has(Pass::Decouple)
        || !target.passes.has(Pass::Hoist)
    {
        return 0;
    }
    let Ok(g) = slc_passes(f.clone(), target, inst, spec, &mut Vec::new()) else { return 0 };
    g.mem_named(hoist::HOISTED).map_or(0, |m| {
        let d = g.mem_decl(m);
        d.shape.iter().product::<u64>() * d.elem.bytes()
    })
}

/// One core's programs: the passes, then the targets.
#[allow(clippy::too_many_arguments)]
fn lower_core(
    loop_fn: &Func,
    bags: &Range<u64>,
    target: TargetInfo,
    bases: &HashMap<MemId, u64>,
    hoisted_at: Option<u64>,
    inst: &EmbeddingBagInstance,
    spec: &WorkloadSpec,
    record: &mut Vec<(String, String)>,
) -> Result<(Option<AuProgram>, String), CompileError> {
    let p = target.passes;
    let vl = target.vector_lanes;
    let mut f = restrict(loop_fn, bags);
    record.push(("partition".into(), text::print(&f)));
    if target.target == Target::CoreOnly || !p.has(Pass::Decouple) {
        if p.has(Pass::Vectorize) {
            f = step(vectorize::vectorize(&f, vl), Pass::Vectorize, record)?;
        }
        if p.has(Pass::SimplifyMem) {
            f = step(simplify_mem::simplify_mem(&f), Pass::SimplifyMem, record)?;
        }
        let core = crate::target::loop_core_text(&f, bases, vl).map_err(CompileError::Resources)?;
        record.push(("core".into(), core.clone()));
        return Ok((None, core));
    }
    f = slc_passes(f, target, inst, spec, record)?;
    let mut bases = bases.clone();
    if let Some(m) = f.mem_named(hoist::HOISTED) {
        let at = hoisted_at.ok_or(CompileError::Internal {
            what: "layout",
            message: format!("no scratch reserved for @{}", hoist::HOISTED),
        })?;
        bases.insert(m, at);
    }
    let dlc = to_dlc::slc_to_dlc(&f)?;
    check(&dlc, "dlc")?;
    record.push(("dlc".into(), text::print(&dlc)));
    let au = crate::target::au::au_program(&dlc, &bases, target.au_lanes, target.au_storage_per_lane)
        .map_err(CompileError::Resources)?;
    record.push(("au".into(), au.to_string()));
    let core = crate::target::dlc_core_text(&dlc, &bases, vl).map_err(CompileError::Resources)?;
    record.push(("core".into(), core.clone()));
    Ok((Some(au), core))
}

/// A pass's result after dead-code elimination, verified and recorded.
fn step(mut f: Func, pass: Pass, record: &mut Vec<(String, String)>) -> Result<Func, CompileError> {
    dce::dce(&mut f);
    check(&f, pass.name())?;
    record.push((pass.name().into(), text::print(&f)));
    Ok(f)
}

/// The decoupled target's passes, from the loop level to SLC (recorded as `slc`).
fn slc_passes(
    mut f: Func,
    target: TargetInfo,
    inst: &EmbeddingBagInstance,
    spec: &WorkloadSpec,
    record: &mut Vec<(String, String)>,
) -> Result<Func, CompileError> {
    let p = target.passes;
    let vl = target.vector_lanes;
    f = step(decouple::decouple(&f)?, Pass::Decouple, record)?;
    if p.has(Pass::NonTemporal) {
        // The share of lookups that revisit a row an earlier one touched.
        let lookups = inst.indices.len().max(1) as f64;
        let reuse = 1.0 - inst.bag_rows(spec).len() as f64 / lookups;
        f = step(nontemporal::nontemporal(&f, &[(frontend::TABLES, reuse)]), Pass::NonTemporal, record)?;
    }
    if p.has(Pass::Vectorize) {
        f = step(vectorize::vectorize(&f, vl), Pass::Vectorize, record)?;
    }
    if p.has(Pass::Bufferize) {
        f = step(bufferize::bufferize(&f), Pass::Bufferize, record)?;
    }
    if p.has(Pass::SimplifyMem) {
        f = step(simplify_mem::simplify_mem(&f), Pass::SimplifyMem, record)?;
    }
    if p.has(Pass::Hoist) {
        f = step(hoist::hoist(&f)?, Pass::Hoist, record)?;
    }
    if p.has(Pass::AlignQueues) {
        f = step(align::align_queues(&f), Pass::AlignQueues, record)?;
    }
    record.push(("slc".into(), text::print(&f)));
    Ok(f)
}
