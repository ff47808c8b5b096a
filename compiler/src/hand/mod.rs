//! Hand-written programs: access-unit and core program templates, instantiated per core in place
//! of the compiler's output.
//!
//! A template is program text (the `.au` or `.core` format) with placeholders in braces that are
//! replaced, for each core's job, by that job's bag range and the layout's addresses:
//! `{bag_start}`, `{offsets}`, `{out_start}`, ... ([`PLACEHOLDERS`]; some exist only for one op
//! family, such as `{edge_start}` of message passing or `{heads}` of knowledge-graph scoring,
//! and using one for a workload without it is an error naming the template and line). A block
//! between a line `.for chunk` and a line `.end` is repeated once per vector of a row (`dim`
//! over the core's vector lanes, the last one partial), with per-chunk placeholders
//! ([`CHUNK_PLACEHOLDERS`]): that is how one template keeps a row of any width in vector
//! registers. `.for half` repeats its block once per vector of half a row (ComplEx's real and
//! imaginary parts, [`HALF_PLACEHOLDERS`]) and `.for lane` once per vector lane (a horizontal
//! sum, [`LANE_PLACEHOLDERS`]). A block
//! `.if CONDITION` (optionally `.else`) `.end` keeps its lines only when the workload has the
//! property
//! (`multi_table`: more than one table; `weighted`: per-lookup weights; `mean`: mean pooling),
//! so one template can leave out what a workload does not need; the streams of an access-unit text are then
//! renumbered in the order they are defined, so the template numbers them as if every block
//! were kept. A placeholder may also be an integer expression (`{(a1 * rank + k * lanes) * 4}`,
//! `{min(lanes, rank)}`), `.for NAME in COUNT` repeats its block with `{NAME}` = `0..COUNT`
//! (named loops nest), `.let NAME = VALUE` binds a name to the end of its block and `.if EXPR`
//! takes an expression: what the TT-EmbeddingBag template needs to unroll its contraction for
//! any shape. Comments (`#` to the end of the line) are left alone. The texts are then parsed
//! and verified by the two ISAs' parsers; every error names the template and its line
//! (`programs/README.md` documents the placeholders and the shipped templates).
//!
//! The compiler still plans the layout and partitions the bags ([`crate::compile`]); only the
//! programs are replaced. This module reads no files: the caller hands it the texts.

use crate::codegen::CompiledWorkload;
use crate::layout::{KgLayout, Scratch, TtLayout};
use crate::workload::{KgModel, Op, Pooling, TtShape, WorkloadSpec};
use thiserror::Error;

mod expand;
mod expr;
mod values;

use expand::{expand, renumber_streams, template_line};
use values::Values;

/// One template: its text and the name errors give it (usually its file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    /// Name in error messages, e.g. `programs/embedding-bag-sum.au`.
    pub name: String,
    /// The template text.
    pub text: String,
}

/// A pair of templates: the access unit's and the core's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HandPrograms {
    /// The access-unit program template (`.au`).
    pub au: Template,
    /// The core program template (`.core`).
    pub core: Template,
}

/// Placeholders valid anywhere in a template.
pub const PLACEHOLDERS: &[&str] = &[
    "offsets",
    "offsets_next",
    "indices",
    "weights",
    "tables",
    "out",
    "out_start",
    "out_end",
    "bag_start",
    "bag_end",
    "bags",
    "lookup_start",
    "lookup_end",
    "rows",
    "dim",
    "row_bytes",
    "batch",
    "num_tables",
    "lanes",
    "au_lanes",
    "chunks",
    "vfree",
    "vfree1",
    "vfree2",
    "vfree3",
    "core",
    "cores",
    "out_row_bytes",
    "src",
    "dst",
    "edge_start",
    "edge_end",
    "edges",
    "heads",
    "rels",
    "relation_table",
    "relations",
    "candidates",
    "negatives",
    "half",
    "halves",
    "rank",
    "rank_bytes",
    "rank_chunks",
    "d1",
    "d2",
    "d3",
    "n1",
    "n2",
    "n3",
    "stride1",
    "stride2",
    "g1_start",
    "g2_start",
    "g3_start",
    "g1_rows",
    "g2_rows",
    "g3_rows",
    "slice_rows",
    "stored_rows",
    "tt_rows",
    "tt_scratch",
    "tt_scratch_bytes",
    "tt_acc",
];

/// Placeholders valid only inside a `.for chunk` block.
pub const CHUNK_PLACEHOLDERS: &[&str] = &["chunk", "chunk_offset", "chunk_lanes", "acc", "tmp"];

/// Placeholders valid only inside a `.for half` block (a vector of half a row: ComplEx).
pub const HALF_PLACEHOLDERS: &[&str] = &["chunk", "chunk_offset", "imag_offset", "chunk_lanes", "re", "im"];

/// Placeholders valid only inside a `.for lane` block.
pub const LANE_PLACEHOLDERS: &[&str] = &["lane"];

/// The stem of the template pair (`<stem>.au`, `<stem>.core`) that serves workload `spec`'s op
/// family, as the shipped templates in `programs/` are named: `embedding-bag-sum`,
/// `embedding-bag-weighted`, `embedding-bag-mean`, `embedding-bag-max` (embedding bags and GNN
/// aggregation by pooling and weights; sparse attention is a weighted sum bag over its heads'
/// stacked caches), `gnn-scatter` (message passing), `kg-transe`, `kg-distmult`, `kg-complex`
/// (knowledge-graph scoring by model), `tt-embedding-bag` (TT-EmbeddingBag). A system whose
/// `programs` names a directory runs each workload with the pair of this stem there.
pub fn family(spec: &WorkloadSpec) -> &'static str {
    match spec.op {
        Op::GnnScatter => "gnn-scatter",
        Op::TtEmbeddingBag => "tt-embedding-bag",
        Op::KgScore => match spec.model {
            Some(KgModel::TransE) => "kg-transe",
            Some(KgModel::ComplEx) => "kg-complex",
            // `resolved` requires a model; DistMult is the workload files' default example.
            Some(KgModel::DistMult) | None => "kg-distmult",
        },
        Op::EmbeddingBag | Op::GnnAggregate | Op::SparseAttention => match spec.pooling {
            Pooling::Sum if spec.weights => "embedding-bag-weighted",
            Pooling::Sum => "embedding-bag-sum",
            Pooling::Mean => "embedding-bag-mean",
            Pooling::Max => "embedding-bag-max",
        },
    }
}

/// Why a template could not be instantiated.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum HandError {
    /// A placeholder that does not exist.
    #[error("{template}:{line}: unknown placeholder {{{name}}} (known: {known})")]
    UnknownPlaceholder {
        /// The template.
        template: String,
        /// Its line, from 1.
        line: usize,
        /// The name written.
        name: String,
        /// The names that exist, for the message.
        known: String,
    },
    /// A placeholder that exists but has no value here (`{weights}` of an unweighted workload,
    /// `{acc}` outside a `.for chunk` block).
    #[error("{template}:{line}: {{{name}}}: {why}")]
    Unavailable {
        /// The template.
        template: String,
        /// Its line, from 1.
        line: usize,
        /// The placeholder.
        name: String,
        /// Why it has no value.
        why: String,
    },
    /// A workload feature the templates do not implement.
    #[error("{template}: the hand-written programs cannot run {what}; use the compiler")]
    Unsupported {
        /// The template.
        template: String,
        /// What the workload has.
        what: String,
    },
    /// A malformed template: an unclosed brace, an unmatched or nested block (or a `.for half`
    /// block for a workload whose rows have no halves).
    #[error("{template}:{line}: {message}")]
    Syntax {
        /// The template.
        template: String,
        /// Its line, from 1.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// The instantiated text does not parse or verify.
    #[error("{template}:{line}: {message} (instantiated for core {core})")]
    Parse {
        /// The template.
        template: String,
        /// The template line the error comes from, from 1.
        line: usize,
        /// The core whose instance failed.
        core: usize,
        /// The parser's message.
        message: String,
    },
    /// The core template's vector length is not the machine's.
    #[error(
        "{template}: the program is for {found} vector lanes, the cores have {expected} (write `.core lanes={{lanes}}`)"
    )]
    Lanes {
        /// The template.
        template: String,
        /// Lanes of the program.
        found: u32,
        /// Lanes of the cores.
        expected: u32,
    },
}

/// Instantiates both templates for one core.
fn instance(
    programs: &HandPrograms,
    v: &Values,
) -> Result<(access_unit::AuProgram, exec_core::CoreProgram), HandError> {
    if v.spec.padding_idx.is_some() {
        // No shipped template skips padding lookups: refused rather than silently summed.
        return Err(HandError::Unsupported {
            template: programs.au.name.clone(),
            what: "a padding index (padding_idx): the templates do not skip padding lookups".into(),
        });
    }
    let (au_text, au_from) = expand(&programs.au, v)?;
    let au_text = renumber_streams(&programs.au, &au_text, &au_from)?;
    let au = access_unit::parse(&au_text).map_err(|e| HandError::Parse {
        template: programs.au.name.clone(),
        line: template_line(&au_from, e.line),
        core: v.core,
        message: e.message,
    })?;
    let (core_text, core_from) = expand(&programs.core, v)?;
    let core = exec_core::parse(&core_text).map_err(|e| HandError::Parse {
        template: programs.core.name.clone(),
        line: template_line(&core_from, e.line),
        core: v.core,
        message: e.kind.to_string(),
    })?;
    if core.vector_lanes != v.lanes {
        return Err(HandError::Lanes {
            template: programs.core.name.clone(),
            found: core.vector_lanes,
            expected: v.lanes,
        });
    }
    Ok((au, core))
}

/// `compiled` with each core's programs replaced by `au` and `core` instantiated for its job
/// (its bag range, the layout's addresses), for cores of `lanes` f32 vector lanes and access
/// units of `au_lanes` lanes.
pub fn instantiate(
    compiled: &CompiledWorkload,
    au: &Template,
    core: &Template,
    lanes: u32,
    au_lanes: u32,
) -> Result<CompiledWorkload, HandError> {
    let programs = HandPrograms { au: au.clone(), core: core.clone() };
    let mut out = compiled.clone();
    let cores = out.jobs.len();
    let offsets = &compiled.instance.offsets;
    let lookup = |bag: u64| offsets.get(bag as usize).map_or(0, |&o| u64::from(o));
    // Message passing: the compiler lays the edge list out core by core (each core's edges are
    // those into its destinations, in list order), so a core's edges start after every edge
    // into an earlier destination.
    let edge_starts = compiled.instance.edges.as_ref().map(|edges| {
        let bags = compiled.spec.bags() as usize;
        let mut before = vec![0u64; bags + 1];
        for &(_, d) in edges {
            if let Some(n) = before.get_mut(d as usize + 1) {
                *n += 1;
            }
        }
        for b in 0..bags {
            before[b + 1] += before[b];
        }
        move |bag: u64| before.get(bag as usize).or(before.last()).copied().unwrap_or(0)
    });
    for (i, job) in out.jobs.iter_mut().enumerate() {
        let l = &compiled.layout;
        let v = Values {
            spec: &compiled.spec,
            offsets: l.offsets,
            indices: l.indices,
            weights: l.weights,
            dst: l.dst,
            edges: edge_starts.as_ref().map(|e| e(job.bags.start)..e(job.bags.end)),
            kg: l.kg,
            tt: l.tt.zip(l.scratch).zip(compiled.spec.tt.clone()).map(|((t, s), shape)| (t, s, shape)),
            tables: l.tables,
            out: l.output,
            bags: job.bags.clone(),
            lookups: lookup(job.bags.start)..lookup(job.bags.end),
            lanes,
            au_lanes,
            core: i,
            cores,
            stand_in: false,
        };
        let (au, core) = instance(&programs, &v)?;
        job.au = Some(au);
        job.core = core;
    }
    // The hand-written programs replace the compiler's, its row chunking included.
    out.chunked_rows = false;
    Ok(out)
}

/// Checks the templates themselves for workload `spec` (a resolved spec) without compiling it:
/// the blocks are well formed, every placeholder exists, and the texts parse with the layout's
/// addresses replaced by stand-ins, for errors a config can report before anything runs. A
/// placeholder the workload has no value for (`{weights}` of an unweighted workload, `{heads}`
/// of one that is not knowledge-graph scoring, `{half}` of an odd `dim`) gets a stand-in too: a
/// template of another op family is not a bad template, and [`instantiate`] reports it for that
/// workload.
pub fn check(
    spec: &WorkloadSpec,
    programs: &HandPrograms,
    lanes: u32,
    au_lanes: u32,
) -> Result<(), HandError> {
    let v = Values {
        spec,
        offsets: 1 << 20,
        indices: 2 << 20,
        weights: Some(3 << 20),
        dst: Some(6 << 20),
        edges: Some(0..spec.lookups()),
        kg: Some(KgLayout { heads: 7 << 20, relations: 8 << 20, relation_table: 9 << 20 }),
        // A workload without TT cores gets a one-row-per-core stand-in shape.
        tt: Some((
            TtLayout { descriptors: 10 << 20 },
            Scratch { base: 11 << 20, bytes: 1 << 16, cores: 1 },
            spec.tt.clone().unwrap_or(TtShape { row_factors: vec![1; 3], dim_factors: vec![1; 3], rank: 1 }),
        )),
        tables: 4 << 20,
        out: 5 << 20,
        bags: 0..spec.bags(),
        lookups: 0..spec.lookups(),
        lanes,
        au_lanes,
        core: 0,
        cores: 1,
        stand_in: true,
    };
    instance(programs, &v).map(|_| ())
}
