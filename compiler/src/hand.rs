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
//! `.if CONDITION` [`.else`] `.end` keeps its lines only when the workload has the property
//! (`multi_table`: more than one table; `weighted`: per-lookup weights), so one template can
//! leave out what a workload does not need; the streams of an access-unit text are then
//! renumbered in the order they are defined, so the template numbers them as if every block
//! were kept. Comments (`#` to the end of the line) are left alone. The texts are then parsed
//! and verified by the two ISAs' parsers; every error names the template and its line
//! (`programs/README.md` documents the placeholders and the shipped templates).
//!
//! The compiler still plans the layout and partitions the bags ([`crate::compile`]); only the
//! programs are replaced. This module reads no files: the caller hands it the texts.

use crate::codegen::CompiledWorkload;
use crate::layout::KgLayout;
use crate::workload::{KgModel, Op, Pooling, WorkloadSpec};
use std::fmt::Write as _;
use std::ops::Range;
use thiserror::Error;

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

/// The kinds of `.for` block: what one repetition of the block stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Block {
    /// A vector of a row (`ceil(dim / lanes)` of them).
    Chunk,
    /// A vector of half a row (`ceil(dim / 2 / lanes)`; ComplEx's real and imaginary parts).
    Half,
    /// A vector lane (`lanes` of them).
    Lane,
}

impl Block {
    fn parse(word: &str) -> Option<Block> {
        match word {
            "chunk" => Some(Block::Chunk),
            "half" => Some(Block::Half),
            "lane" => Some(Block::Lane),
            _ => None,
        }
    }
}

/// The addresses and sizes one core's instance is made of.
struct Values<'a> {
    spec: &'a WorkloadSpec,
    offsets: u64,
    indices: u64,
    weights: Option<u64>,
    /// Destination of each edge (message passing).
    dst: Option<u64>,
    /// This core's edges (message passing).
    edges: Option<Range<u64>>,
    /// Knowledge-graph scoring's extra arrays.
    kg: Option<KgLayout>,
    tables: u64,
    out: u64,
    bags: Range<u64>,
    lookups: Range<u64>,
    lanes: u32,
    au_lanes: u32,
    core: usize,
    cores: usize,
    /// Stand-in values for [`check`]: every placeholder has one.
    stand_in: bool,
}

const NOT_SCATTER: &str = "the workload has no edge list (only op = \"gnn_scatter\" has)";
const NOT_KG: &str = "the workload has no triples (only op = \"kg_score\" has)";

impl Values<'_> {
    fn chunks(&self) -> u64 {
        u64::from(self.spec.dim).div_ceil(u64::from(self.lanes.max(1)))
    }

    /// Columns of half a row, if `dim` is even.
    fn half(&self) -> Result<u64, String> {
        let dim = u64::from(self.spec.dim);
        if dim % 2 == 1 && !self.stand_in {
            return Err(format!("dim = {dim} is odd: a row has no halves"));
        }
        Ok(dim / 2)
    }

    fn halves(&self) -> Result<u64, String> {
        Ok(self.half()?.div_ceil(u64::from(self.lanes.max(1))))
    }

    /// How many times a `.for` block of `kind` repeats.
    fn repeats(&self, kind: Block) -> Result<u64, String> {
        match kind {
            Block::Chunk => Ok(self.chunks()),
            Block::Half => self.halves(),
            Block::Lane => Ok(u64::from(self.lanes)),
        }
    }

    /// The value of placeholder `name` (repetition `i` of a `.for` block of kind `kind` inside
    /// one): `None` if no placeholder has that name, `Some(Err(why))` if it has no value here.
    fn get(&self, name: &str, block: Option<(Block, u64)>) -> Option<Result<String, String>> {
        let row_bytes = self.spec.row_bytes();
        // The templates load rows with `vld` (f32 lanes): other dtypes need the compiler.
        if self.spec.dtype != crate::workload::Dtype::F32
            && matches!(name, "row_bytes" | "chunk_offset" | "imag_offset" | "tables")
        {
            return Some(Err(format!(
                "the hand-written templates read f32 rows; dtype = {:?} needs the compiled programs",
                self.spec.dtype
            )));
        }
        let hex = |a: u64| Ok(format!("{a:#x}"));
        let dec = |n: u64| Ok(n.to_string());
        let lanes = u64::from(self.lanes);
        let dim = u64::from(self.spec.dim);
        let inside = |kinds: &[Block], f: &dyn Fn(u64) -> Result<u64, String>| match block {
            Some((k, c)) if kinds.contains(&k) => f(c).map(|n| n.to_string()),
            _ => Err(match kinds {
                [Block::Chunk] => "only inside a `.for chunk` block".to_string(),
                [Block::Half] => "only inside a `.for half` block".to_string(),
                [Block::Lane] => "only inside a `.for lane` block".to_string(),
                _ => "only inside a `.for chunk` or `.for half` block".to_string(),
            }),
        };
        let chunk_or_half = [Block::Chunk, Block::Half];
        let kg =
            |f: &dyn Fn(&KgLayout) -> u64| self.kg.as_ref().map_or(Err(NOT_KG.to_string()), |k| hex(f(k)));
        let is_kg = self.kg.is_some();
        Some(match name {
            "offsets" => hex(self.offsets),
            "offsets_next" => hex(self.offsets + 4),
            "indices" => hex(self.indices),
            "weights" => match self.weights {
                Some(w) => hex(w),
                None => Err("the workload has no per-lookup weights (`weights = true`)".into()),
            },
            "tables" => hex(self.tables),
            "out" => hex(self.out),
            "out_start" => hex(self.out + self.bags.start * self.spec.out_row_bytes()),
            "out_end" => hex(self.out + self.bags.end * self.spec.out_row_bytes()),
            "bag_start" => dec(self.bags.start),
            "bag_end" => dec(self.bags.end),
            "bags" => dec(self.bags.end - self.bags.start),
            "lookup_start" => dec(self.lookups.start),
            "lookup_end" => dec(self.lookups.end),
            "rows" => dec(self.spec.rows),
            "dim" => dec(u64::from(self.spec.dim)),
            "row_bytes" => dec(row_bytes),
            "batch" => dec(u64::from(self.spec.batch.max(1))),
            "num_tables" => dec(u64::from(self.spec.tables)),
            "lanes" => dec(lanes),
            "au_lanes" => dec(u64::from(self.au_lanes)),
            "chunks" => dec(self.chunks()),
            "vfree" => dec(2 * self.chunks()),
            "vfree1" => dec(2 * self.chunks() + 1),
            "vfree2" => dec(2 * self.chunks() + 2),
            "vfree3" => dec(2 * self.chunks() + 3),
            "core" => dec(self.core as u64),
            "cores" => dec(self.cores as u64),
            "out_row_bytes" => dec(self.spec.out_row_bytes()),
            "src" => self.dst.map_or(Err(NOT_SCATTER.into()), |_| hex(self.indices)),
            "dst" => self.dst.map_or(Err(NOT_SCATTER.into()), hex),
            "edge_start" => self.edges.as_ref().map_or(Err(NOT_SCATTER.into()), |e| dec(e.start)),
            "edge_end" => self.edges.as_ref().map_or(Err(NOT_SCATTER.into()), |e| dec(e.end)),
            "edges" => self.edges.as_ref().map_or(Err(NOT_SCATTER.into()), |e| dec(e.end - e.start)),
            "heads" => kg(&|k| k.heads),
            "rels" => kg(&|k| k.relations),
            "relation_table" => kg(&|k| k.relation_table),
            "relations" if is_kg => dec(self.spec.relations),
            "candidates" if is_kg => dec(self.spec.out_width()),
            "negatives" if is_kg => dec(u64::from(self.spec.negatives)),
            "relations" | "candidates" | "negatives" => Err(NOT_KG.into()),
            "half" => self.half().map(|h| h.to_string()),
            "halves" => self.halves().map(|h| h.to_string()),
            "chunk" => inside(&chunk_or_half, &|c| Ok(c)),
            "chunk_offset" => inside(&chunk_or_half, &|c| Ok(c * lanes * 4)),
            "chunk_lanes" => match block {
                Some((Block::Half, c)) => self.half().map(|h| lanes.min(h - c * lanes).to_string()),
                _ => inside(&[Block::Chunk], &|c| Ok(lanes.min(dim - c * lanes))),
            },
            "acc" => inside(&[Block::Chunk], &|c| Ok(c)),
            "tmp" => inside(&[Block::Chunk], &|c| Ok(self.chunks() + c)),
            "imag_offset" => inside(&[Block::Half], &|c| Ok((self.half()? + c * lanes) * 4)),
            "re" => inside(&[Block::Half], &|c| Ok(c)),
            "im" => inside(&[Block::Half], &|c| Ok(self.halves()? + c)),
            "lane" => inside(&[Block::Lane], &|l| Ok(l)),
            _ => return None,
        })
    }
}

/// The code of a line (before its `#` comment) and the comment.
fn split_comment(line: &str) -> (&str, &str) {
    line.find('#').map_or((line, ""), |i| line.split_at(i))
}

/// Replaces the placeholders of one template line (its code; the comment is kept as is).
fn substitute(
    t: &Template,
    no: usize,
    line: &str,
    v: &Values,
    block: Option<(Block, u64)>,
    emit: bool,
) -> Result<String, HandError> {
    let (code, comment) = split_comment(line);
    let mut out = String::with_capacity(line.len() + 16);
    let mut rest = code;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let Some(close) = after.find('}') else {
            return Err(HandError::Syntax {
                template: t.name.clone(),
                line: no,
                message: format!("unclosed `{{` in \"{}\"", code.trim()),
            });
        };
        let name = after[..close].trim();
        match v.get(name, block) {
            None => {
                let mut known: Vec<&str> = Vec::new();
                for &n in PLACEHOLDERS.iter().chain(CHUNK_PLACEHOLDERS).chain(HALF_PLACEHOLDERS) {
                    if !known.contains(&n) {
                        known.push(n);
                    }
                }
                known.extend(LANE_PLACEHOLDERS);
                return Err(HandError::UnknownPlaceholder {
                    template: t.name.clone(),
                    line: no,
                    name: name.to_string(),
                    known: known.join(", "),
                });
            }
            // In a branch not taken only the names are checked.
            Some(_) if !emit => {}
            Some(Err(why)) => {
                return Err(HandError::Unavailable {
                    template: t.name.clone(),
                    line: no,
                    name: name.to_string(),
                    why,
                });
            }
            Some(Ok(value)) => out.push_str(&value),
        }
        rest = &after[close + 1..];
    }
    out.push_str(rest);
    out.push_str(comment);
    Ok(out)
}

/// A directive line (`.for chunk`, `.if multi_table`, `.else`, `.end`, ...), if `line` is one.
fn directive(line: &str) -> Option<&str> {
    let code = split_comment(line).0.trim();
    let word = code.split_whitespace().next().unwrap_or("");
    matches!(word, ".for" | ".if" | ".else" | ".end").then_some(code)
}

/// What ended a run of lines.
enum Stop {
    /// An `.end` line (its index).
    End(usize),
    /// An `.else` line (its index).
    Else(usize),
    /// The end of the template.
    Eof,
}

/// Expands one template for one core.
struct Expander<'a> {
    t: &'a Template,
    v: &'a Values<'a>,
    lines: Vec<&'a str>,
    text: String,
    /// For each line of `text`, the template line it comes from (1-based).
    from: Vec<usize>,
}

impl Expander<'_> {
    fn syntax(&self, line: usize, message: impl Into<String>) -> HandError {
        HandError::Syntax { template: self.t.name.clone(), line: line + 1, message: message.into() }
    }

    /// The value of an `.if` condition.
    fn condition(&self, i: usize, name: &str) -> Result<bool, HandError> {
        match name {
            "multi_table" => Ok(self.v.spec.tables > 1),
            "weighted" => Ok(self.v.weights.is_some()),
            _ => Err(self.syntax(i, format!("unknown condition `{name}` (multi_table, weighted)"))),
        }
    }

    /// Expands lines from `i` up to the `.end` or `.else` that closes the enclosing block (or
    /// the end), with `block` (its kind and repetition) inside a `.for` block; writes them only
    /// if `emit` (lines of a branch not taken are checked for unknown placeholders only).
    fn lines_from(
        &mut self,
        mut i: usize,
        block: Option<(Block, u64)>,
        emit: bool,
    ) -> Result<Stop, HandError> {
        while i < self.lines.len() {
            let line = self.lines[i];
            let Some(d) = directive(line) else {
                let s = substitute(self.t, i + 1, line, self.v, block, emit)?;
                if emit {
                    let _ = writeln!(self.text, "{s}");
                    self.from.push(i + 1);
                }
                i += 1;
                continue;
            };
            let words: Vec<&str> = d.split_whitespace().collect();
            match words[..] {
                [".end"] => return Ok(Stop::End(i)),
                [".else"] => return Ok(Stop::Else(i)),
                [".for", word] if Block::parse(word).is_some() => {
                    let kind = Block::parse(word).unwrap_or(Block::Chunk);
                    if block.is_some() {
                        return Err(self.syntax(i, "`.for` blocks do not nest"));
                    }
                    // A first pass finds the block's end and checks it; then one per repetition.
                    let end = match self.lines_from(i + 1, Some((kind, 0)), false)? {
                        Stop::End(end) => end,
                        Stop::Else(e) => return Err(self.syntax(e, "`.else` without an `.if`")),
                        Stop::Eof => return Err(self.syntax(i, format!("`.for {word}` without its `.end`"))),
                    };
                    if emit {
                        let repeats = self
                            .v
                            .repeats(kind)
                            .map_err(|why| self.syntax(i, format!("`.for {word}`: {why}")))?;
                        for c in 0..repeats {
                            self.lines_from(i + 1, Some((kind, c)), true)?;
                        }
                    }
                    i = end + 1;
                }
                [".if", name] => {
                    let holds = self.condition(i, name)?;
                    i = match self.lines_from(i + 1, block, emit && holds)? {
                        Stop::End(end) => end + 1,
                        Stop::Else(e) => match self.lines_from(e + 1, block, emit && !holds)? {
                            Stop::End(end) => end + 1,
                            Stop::Else(e) => return Err(self.syntax(e, "a second `.else` for one `.if`")),
                            Stop::Eof => return Err(self.syntax(i, "`.if` without its `.end`")),
                        },
                        Stop::Eof => return Err(self.syntax(i, "`.if` without its `.end`")),
                    };
                }
                _ => {
                    return Err(self.syntax(
                        i,
                        format!(
                            "unknown directive `{d}` (`.for chunk`, `.for half`, `.for lane`, \
                             `.if CONDITION`, `.else`, `.end`)"
                        ),
                    ));
                }
            }
        }
        Ok(Stop::Eof)
    }
}

/// Expands `t` for one core: placeholders replaced, `.for chunk` blocks repeated, `.if` blocks
/// resolved. Returns the text and, for each of its lines, the template line it comes from.
fn expand(t: &Template, v: &Values) -> Result<(String, Vec<usize>), HandError> {
    let mut e = Expander {
        t,
        v,
        lines: t.text.lines().collect(),
        text: String::with_capacity(t.text.len() * 2),
        from: Vec::new(),
    };
    match e.lines_from(0, None, true)? {
        Stop::Eof => Ok((e.text, e.from)),
        Stop::End(i) => Err(e.syntax(i, "`.end` without a block")),
        Stop::Else(i) => Err(e.syntax(i, "`.else` without an `.if`")),
    }
}

/// The stream ids (`sN`, not part of a longer word) in `code`: (byte offset, length, N).
fn stream_ids(code: &str) -> Vec<(usize, usize, usize)> {
    let b = code.as_bytes();
    let word = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let mut ids = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b's' && (i == 0 || !word(b[i - 1])) {
            let digits = b[i + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
            let after = i + 1 + digits;
            if digits > 0 && (after == b.len() || !word(b[after])) {
                if let Ok(n) = code[i + 1..after].parse() {
                    ids.push((i, after - i, n));
                }
                i = after;
                continue;
            }
        }
        i += 1;
    }
    ids
}

/// Renumbers the streams of an expanded access-unit text `s0, s1, ...` in the order they are
/// defined, so that an `.if` block may leave some out; a reference to a stream that is not
/// defined is an error naming its line.
fn renumber_streams(t: &Template, text: &str, from: &[usize]) -> Result<String, HandError> {
    let mut map = std::collections::HashMap::new();
    for line in text.lines() {
        let code = split_comment(line).0.trim_start();
        if let Some(&(0, len, n)) = stream_ids(code).first()
            && code[len..].trim_start().starts_with('=')
        {
            let next = map.len();
            map.entry(n).or_insert(next);
        }
    }
    let mut out = String::with_capacity(text.len());
    for (k, line) in text.lines().enumerate() {
        let (code, comment) = split_comment(line);
        let mut at = 0;
        for (pos, len, n) in stream_ids(code) {
            let Some(new) = map.get(&n) else {
                return Err(HandError::Syntax {
                    template: t.name.clone(),
                    line: template_line(from, k + 1),
                    message: format!("s{n} is not defined (left out by an `.if`?)"),
                });
            };
            let _ = write!(out, "{}s{new}", &code[at..pos]);
            at = pos + len;
        }
        let _ = writeln!(out, "{}{comment}", &code[at..]);
    }
    Ok(out)
}

/// The template line an error on line `line` (1-based) of the expanded text comes from.
fn template_line(from: &[usize], line: usize) -> usize {
    from.get(line.saturating_sub(1)).or(from.last()).copied().unwrap_or(1)
}

/// Instantiates both templates for one core.
fn instance(
    programs: &HandPrograms,
    v: &Values,
) -> Result<(access_unit::AuProgram, exec_core::CoreProgram), HandError> {
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
