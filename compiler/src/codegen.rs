//! Code generation: an EmbeddingBag to per-core access-unit and core programs.
//!
//! Work is partitioned across cores as contiguous ranges of bags of nearly equal cost (lookups
//! plus one per bag, so skewed bags such as a power-law graph's in-neighbour lists balance). For
//! a decoupled target each core gets an access-unit program (a dense TU over its bags, a range
//! TU over each bag's CSR slice, chained index and row loads, callbacks at bag begin, per
//! lookup and at bag end) and a core program that dispatches on control ids and accumulates the
//! marshaled rows in vector registers. For a core-only target the core runs the same loop nest
//! itself, with its own loads: the loop-level program of the baseline CPU. This is the
//! unoptimized lowering (one callback per lookup, induction values marshaled through the queue);
//! the optimization ladder of Ember (vectorization, bufferization, queue alignment) comes with
//! the full pipeline.

use crate::embedding_bag::EmbeddingBagInstance;
use crate::layout::{DataRegion, Layout};
use crate::workload::{WorkloadError, WorkloadSpec};
use access_unit::AuProgram;
use exec_core::CoreProgram;
use std::fmt::Write;
use std::ops::Range;
use thiserror::Error;

/// Widest row this code generator keeps in registers: 16 accumulators of 16 f32.
pub const MAX_DIM: u32 = 256;

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
    /// Lanes of the access unit (decoupled targets): lookups of one bag advance in lockstep
    /// over them, under a broadcast layer of bags. 1 keeps both levels single-lane.
    pub au_lanes: u32,
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

/// Compiles `spec` with inputs `inst` for `target`.
pub fn compile(
    spec: &WorkloadSpec,
    inst: EmbeddingBagInstance,
    target: TargetInfo,
) -> Result<CompiledWorkload, CompileError> {
    spec.validate()?;
    if target.cores == 0 {
        return Err(CompileError::Target("cores must be at least 1".into()));
    }
    if !(1..=64).contains(&target.vector_lanes) {
        return Err(CompileError::Target(format!("vector lanes {} outside 1..=64", target.vector_lanes)));
    }
    let accumulators = spec.dim.div_ceil(target.vector_lanes);
    if accumulators > 16 {
        return Err(CompileError::Target(format!(
            "dim {} needs {accumulators} vector accumulators of {} lanes; at most 16 fit",
            spec.dim, target.vector_lanes
        )));
    }
    let layout = Layout::plan(spec, &inst);
    let regions = layout.regions(spec, &inst);
    let mut jobs = Vec::new();
    if inst.offsets.len() as u64 != spec.bags() + 1 {
        return Err(CompileError::Internal {
            what: "instance",
            message: format!("{} offsets for {} bags", inst.offsets.len(), spec.bags()),
        });
    }
    for bags in partition_by_cost(&inst.offsets, target.cores) {
        let (au, core_text) = match target.target {
            Target::Decoupled => (
                Some(au_program(spec, &layout, &bags, target.au_lanes)?),
                dae_core_text(spec, &layout, target.vector_lanes),
            ),
            Target::CoreOnly => (None, loop_core_text(spec, &layout, &bags, target.vector_lanes)),
        };
        let core = exec_core::parse(&core_text)
            .map_err(|e| CompileError::Internal { what: "core", message: e.to_string() })?;
        let output_base = layout.output + bags.start * spec.row_bytes();
        let output_elems = (bags.end - bags.start) * spec.dim as u64;
        jobs.push(CoreJob { bags, au, core, output_base, output_elems });
    }
    Ok(CompiledWorkload { spec: spec.clone(), instance: inst, layout, regions, jobs })
}

fn au_program(
    spec: &WorkloadSpec,
    l: &Layout,
    bags: &Range<u64>,
    au_lanes: u32,
) -> Result<AuProgram, CompileError> {
    let rb = spec.row_bytes();
    // Bags broadcast over the lanes, a bag's lookups in lockstep across them (the TMU's
    // layout for embedding bags); a single-lane unit keeps both levels single.
    let (outer, inner) = if au_lanes >= 2 {
        (" broadcast".to_string(), format!(" lockstep {au_lanes}"))
    } else {
        Default::default()
    };
    let text = format!(
        "\
.au
tu t0 = dense {g0}..{g1}{outer}
tu t1 = range s1..s2 in t0{inner}
s0 = ite t0
s1 = load.u32 [{off:#x} + s0 * 4] in t0
s2 = load.u32 [{off1:#x} + s0 * 4] in t0
s3 = alu.div s0, {batch} in t0
s4 = alu.mul s3, {rows} in t0
s5 = ite t1
s6 = load.u32 [{ind:#x} + s5 * 4] in t1
s7 = alu.add s6, s4 in t1
s8 = load.row {rb} [{tab:#x} + s7 * {rb}] in t1 !lookup
on t1 begin -> 0
on t1 iter -> 1 (s8)
on t1 end -> 2 (s0)
on t0 end -> 3
",
        g0 = bags.start,
        g1 = bags.end,
        off = l.offsets,
        off1 = l.offsets + 4,
        batch = spec.batch.max(1),
        rows = spec.rows,
        ind = l.indices,
        tab = l.tables,
    );
    access_unit::parse(&text)
        .map_err(|e| CompileError::Internal { what: "access-unit", message: e.to_string() })
}

/// Chunks of a row: (byte offset, lanes) per vector register.
fn chunks(spec: &WorkloadSpec, lanes: u32) -> Vec<(u64, u32)> {
    (0..spec.dim.div_ceil(lanes))
        .map(|i| (i as u64 * lanes as u64 * 4, (spec.dim - i * lanes).min(lanes)))
        .collect()
}

/// The decoupled core's compute loop: dispatch on control ids from the output queue.
fn dae_core_text(spec: &WorkloadSpec, l: &Layout, lanes: u32) -> String {
    let c = chunks(spec, lanes);
    let mut t = format!(
        ".core lanes={lanes}\nloop:\n    pop_control r1\n    switch r1, [begin, iter, end, done]\nbegin:\n"
    );
    for i in 0..c.len() {
        let _ = writeln!(t, "    vzero v{i}");
    }
    t.push_str("    jmp loop\niter:\n    pop_operand r2\n");
    // All loads first, then the adds: an in-order core would otherwise wait on each chunk.
    for (i, &(off, n)) in c.iter().enumerate() {
        let _ = writeln!(t, "    vldq v{}, [r2 + {off}], {n}", 16 + i);
    }
    for i in 0..c.len() {
        let _ = writeln!(t, "    vadd v{i}, v{i}, v{}", 16 + i);
    }
    let _ = write!(t, "    jmp loop\nend:\n    pop_operand r3\n    muli r4, r3, {}\n", spec.row_bytes());
    for (i, &(off, n)) in c.iter().enumerate() {
        let _ = writeln!(t, "    vst v{i}, [r4 + {}], {n}", l.output + off);
    }
    t.push_str("    jmp loop\ndone:\n    halt\n");
    t
}

/// The core-only loop nest: the core loads offsets, indices and rows itself.
fn loop_core_text(spec: &WorkloadSpec, l: &Layout, bags: &Range<u64>, lanes: u32) -> String {
    let c = chunks(spec, lanes);
    let rb = spec.row_bytes();
    let mut t = format!(
        ".core lanes={lanes}\n    li r1, {}\n    li r2, {}\nouter:\n    bge r1, r2, done\n    muli r3, r1, 4\n    \
         ld.u32 r4, [r3 + {}]\n    ld.u32 r5, [r3 + {}]\n    divi r6, r1, {}\n    muli r6, r6, {}\n",
        bags.start,
        bags.end,
        l.offsets,
        l.offsets + 4,
        spec.batch.max(1),
        spec.rows
    );
    for i in 0..c.len() {
        let _ = writeln!(t, "    vzero v{i}");
    }
    let _ = write!(
        t,
        "inner:\n    bge r4, r5, store\n    muli r7, r4, 4\n    ld.u32 r8, [r7 + {}]\n    add r8, r8, r6\n    \
         muli r9, r8, {rb}\n",
        l.indices
    );
    // The row's first load stands for the lookup: its latency is the lookup latency.
    for (i, &(off, n)) in c.iter().enumerate() {
        let tag = if i == 0 { " !lookup" } else { "" };
        let _ = writeln!(t, "    vld v{}, [r9 + {}], {n}{tag}", 16 + i, l.tables + off);
    }
    for i in 0..c.len() {
        let _ = writeln!(t, "    vadd v{i}, v{i}, v{}", 16 + i);
    }
    let _ = write!(t, "    addi r4, r4, 1\n    jmp inner\nstore:\n    muli r10, r1, {rb}\n");
    for (i, &(off, n)) in c.iter().enumerate() {
        let _ = writeln!(t, "    vst v{i}, [r10 + {}], {n}", l.output + off);
    }
    t.push_str("    addi r1, r1, 1\n    jmp outer\ndone:\n    halt\n");
    t
}
