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
    /// TT-EmbeddingBag's descriptors and scratch, with its shape.
    tt: Option<(TtLayout, Scratch, TtShape)>,
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
const NOT_TT: &str = "the workload has no tensor-train cores (only op = \"tt_embedding_bag\" has)";

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

    /// The value of a TT-EmbeddingBag placeholder, `None` for a workload without TT cores.
    fn tt_value(&self, name: &str) -> Option<Result<String, String>> {
        let (l, scratch, t) = self.tt.as_ref()?;
        let lanes = u64::from(self.lanes.max(1));
        let rank = u64::from(t.rank);
        let core_scratch =
            scratch.base + (self.core as u64).min(u64::from(scratch.cores).saturating_sub(1)) * scratch.bytes;
        let n = match name {
            "rank" => rank,
            "rank_bytes" => 4 * rank,
            "rank_chunks" => rank.div_ceil(lanes),
            "d1" | "d2" | "d3" => t.factor(usize::from(name.as_bytes()[1] - b'1')).1,
            "n1" | "n2" | "n3" => t.factor(usize::from(name.as_bytes()[1] - b'1')).0,
            "stride1" => t.stride(0),
            "stride2" => t.stride(1),
            "g1_start" | "g2_start" | "g3_start" => t.core_start(usize::from(name.as_bytes()[1] - b'1')),
            "g1_rows" | "g2_rows" | "g3_rows" => t.slice_rows(usize::from(name.as_bytes()[1] - b'1')),
            "slice_rows" => t.lookup_rows(),
            "tt_rows" => return Some(Ok(format!("{:#x}", l.descriptors))),
            "tt_scratch" => return Some(Ok(format!("{core_scratch:#x}"))),
            "tt_scratch_bytes" => scratch.bytes,
            "tt_acc" => {
                let need = u64::from(self.spec.dim) * rank * 4;
                if need > scratch.bytes && !self.stand_in {
                    return Some(Err(format!(
                        "the core's scratch ({} bytes) cannot hold dim x rank = {} x {rank} f32 \
                         ({need} bytes)",
                        scratch.bytes, self.spec.dim
                    )));
                }
                return Some(Ok(format!("{core_scratch:#x}")));
            }
            _ => return None,
        };
        Some(Ok(n.to_string()))
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
            "stored_rows" => dec(self.spec.stored_rows()),
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
            "rank" | "rank_bytes" | "rank_chunks" | "d1" | "d2" | "d3" | "n1" | "n2" | "n3" | "stride1"
            | "stride2" | "g1_start" | "g2_start" | "g3_start" | "g1_rows" | "g2_rows" | "g3_rows"
            | "slice_rows" | "tt_rows" | "tt_scratch" | "tt_scratch_bytes" | "tt_acc" => {
                self.tt_value(name).unwrap_or_else(|| Err(NOT_TT.to_string()))
            }
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

/// Where a template line is expanded: its template and line, the core's values, the `.for`
/// block of a kind it is in (and its repetition), the named loops' variables, and whether it
/// is written (lines of a branch not taken are checked for unknown names only).
#[derive(Clone, Copy)]
struct Scope<'a> {
    t: &'a Template,
    no: usize,
    v: &'a Values<'a>,
    block: Option<(Block, u64)>,
    vars: &'a [(String, i64)],
    emit: bool,
}

impl Scope<'_> {
    fn syntax(&self, message: impl Into<String>) -> HandError {
        HandError::Syntax { template: self.t.name.clone(), line: self.no, message: message.into() }
    }

    /// The value of one name: a named loop's variable, else a placeholder. `Ok(None)` for a
    /// placeholder without a value in a branch not taken.
    fn name(&self, name: &str) -> Result<Option<String>, HandError> {
        if let Some((_, n)) = self.vars.iter().rev().find(|(v, _)| v == name) {
            return Ok(Some(n.to_string()));
        }
        match self.v.get(name, self.block) {
            None => {
                let mut known: Vec<&str> = Vec::new();
                for &n in PLACEHOLDERS.iter().chain(CHUNK_PLACEHOLDERS).chain(HALF_PLACEHOLDERS) {
                    if !known.contains(&n) {
                        known.push(n);
                    }
                }
                known.extend(LANE_PLACEHOLDERS);
                Err(HandError::UnknownPlaceholder {
                    template: self.t.name.clone(),
                    line: self.no,
                    name: name.to_string(),
                    known: known.join(", "),
                })
            }
            Some(_) if !self.emit => Ok(None),
            Some(Err(why)) => Err(HandError::Unavailable {
                template: self.t.name.clone(),
                line: self.no,
                name: name.to_string(),
                why,
            }),
            Some(Ok(value)) => Ok(Some(value)),
        }
    }

    /// The value of `{text}`: a name, or an integer expression over names and numbers
    /// (`+ - * / %`, parentheses, `min(a, b)`, `max(a, b)`). `None` in a branch not taken.
    fn eval(&self, text: &str) -> Result<Option<String>, HandError> {
        let text = text.trim();
        if is_name(text) {
            return self.name(text);
        }
        let mut e = Expr { s: self, text, at: 0 };
        let n = e.compare()?;
        e.skip_ws();
        if e.at < text.len() {
            return Err(e.bad(format!("unexpected `{}`", &text[e.at..])));
        }
        Ok(n.map(|n| n.to_string()))
    }
}

/// Whether `s` is a name (a placeholder or a loop variable): a letter or `_`, then letters,
/// digits and `_`.
fn is_name(s: &str) -> bool {
    let mut c = s.chars();
    c.next().is_some_and(|f| f.is_ascii_alphabetic() || f == '_')
        && c.all(|x| x.is_ascii_alphanumeric() || x == '_')
}

/// A recursive-descent evaluator of a placeholder expression; `None` values (a branch not
/// taken) propagate, and arithmetic errors then are not reported.
struct Expr<'a> {
    s: &'a Scope<'a>,
    text: &'a str,
    at: usize,
}

impl Expr<'_> {
    fn bad(&self, why: String) -> HandError {
        self.s.syntax(format!("bad expression `{{{}}}`: {why}", self.text))
    }

    fn skip_ws(&mut self) {
        let rest = &self.text[self.at..];
        self.at += rest.len() - rest.trim_start().len();
    }

    fn peek(&mut self) -> Option<char> {
        self.skip_ws();
        self.text[self.at..].chars().next()
    }

    fn expect(&mut self, c: char) -> Result<(), HandError> {
        if self.peek() == Some(c) {
            self.at += 1;
            Ok(())
        } else {
            Err(self.bad(format!("expected `{c}`")))
        }
    }

    fn apply(&self, op: char, a: Option<i64>, b: Option<i64>) -> Result<Option<i64>, HandError> {
        let (Some(a), Some(b)) = (a, b) else { return Ok(None) };
        let r = match op {
            '+' => a.checked_add(b),
            '-' => a.checked_sub(b),
            '*' => a.checked_mul(b),
            '/' => a.checked_div(b),
            '%' => a.checked_rem(b),
            'm' => Some(a.min(b)),
            'M' => Some(a.max(b)),
            '<' => Some(i64::from(a < b)),
            'l' => Some(i64::from(a <= b)),
            '>' => Some(i64::from(a > b)),
            'g' => Some(i64::from(a >= b)),
            '=' => Some(i64::from(a == b)),
            _ => Some(i64::from(a != b)),
        };
        r.map(Some).ok_or_else(|| self.bad(format!("{a} {op} {b} has no value")))
    }

    /// A comparison (`<`, `<=`, `>`, `>=`, `==`, `!=`: 1 if it holds, else 0), or a shift.
    fn compare(&mut self) -> Result<Option<i64>, HandError> {
        let a = self.shift()?;
        let rest = &self.text[self.at..];
        let rest = rest.trim_start();
        let skipped = self.text.len() - self.at - rest.len();
        let op = ["<=", ">=", "==", "!=", "<", ">"].into_iter().find(|op| rest.starts_with(op));
        let Some(op) = op else { return Ok(a) };
        self.at += skipped + op.len();
        let b = self.shift()?;
        let code = match op {
            "<=" => 'l',
            ">=" => 'g',
            "==" => '=',
            "!=" => '!',
            "<" => '<',
            _ => '>',
        };
        self.apply(code, a, b)
    }

    /// `a << b` or `a >> b` (arithmetic; `b` in 0..64), or a sum.
    fn shift(&mut self) -> Result<Option<i64>, HandError> {
        let mut a = self.sum()?;
        loop {
            self.skip_ws();
            let rest = &self.text[self.at..];
            let op = if rest.starts_with("<<") {
                '<'
            } else if rest.starts_with(">>") {
                '>'
            } else {
                return Ok(a);
            };
            self.at += 2;
            let b = self.sum()?;
            a = match (a, b) {
                (Some(x), Some(n)) if (0..64).contains(&n) => {
                    Some(if op == '<' { x.wrapping_shl(n as u32) } else { x >> n })
                }
                (Some(x), Some(n)) => return Err(self.bad(format!("shift of {x} by {n}"))),
                _ => None,
            };
        }
    }

    fn sum(&mut self) -> Result<Option<i64>, HandError> {
        let mut a = self.product()?;
        while let Some(op @ ('+' | '-')) = self.peek() {
            self.at += 1;
            let b = self.product()?;
            a = self.apply(op, a, b)?;
        }
        Ok(a)
    }

    fn product(&mut self) -> Result<Option<i64>, HandError> {
        let mut a = self.atom()?;
        while let Some(op @ ('*' | '/' | '%')) = self.peek() {
            self.at += 1;
            let b = self.atom()?;
            a = self.apply(op, a, b)?;
        }
        Ok(a)
    }

    fn atom(&mut self) -> Result<Option<i64>, HandError> {
        match self.peek() {
            Some('(') => {
                self.at += 1;
                let a = self.compare()?;
                self.expect(')')?;
                Ok(a)
            }
            Some('-') => {
                self.at += 1;
                let a = self.atom()?;
                self.apply('-', Some(0), a)
            }
            Some(c) if c.is_ascii_alphanumeric() || c == '_' => {
                let rest = &self.text[self.at..];
                let len = rest.find(|x: char| !(x.is_ascii_alphanumeric() || x == '_')).unwrap_or(rest.len());
                let word = &rest[..len];
                self.at += len;
                if c.is_ascii_digit() {
                    return parse_number(word)
                        .map(Some)
                        .ok_or_else(|| self.bad(format!("bad number `{word}`")));
                }
                if matches!(word, "min" | "max") && self.peek() == Some('(') {
                    self.at += 1;
                    let a = self.sum()?;
                    self.expect(',')?;
                    let b = self.sum()?;
                    self.expect(')')?;
                    return self.apply(if word == "min" { 'm' } else { 'M' }, a, b);
                }
                match self.s.name(word)? {
                    None => Ok(None),
                    Some(value) => parse_number(&value)
                        .map(Some)
                        .ok_or_else(|| self.bad(format!("{{{word}}} = {value} is not a number"))),
                }
            }
            Some(c) => Err(self.bad(format!("unexpected `{c}`"))),
            None => Err(self.bad("it ends too early".into())),
        }
    }
}

/// A decimal or `0x` hexadecimal integer.
fn parse_number(s: &str) -> Option<i64> {
    match s.strip_prefix("0x") {
        Some(hex) => i64::from_str_radix(hex, 16).ok(),
        None => s.parse().ok(),
    }
}

/// Replaces the placeholders of one template line (its code; the comment is kept as is).
fn substitute(scope: &Scope, line: &str) -> Result<String, HandError> {
    let (code, comment) = split_comment(line);
    let mut out = String::with_capacity(line.len() + 16);
    let mut rest = code;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let Some(close) = after.find('}') else {
            return Err(scope.syntax(format!("unclosed `{{` in \"{}\"", code.trim())));
        };
        if let Some(value) = scope.eval(&after[..close])? {
            out.push_str(&value);
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
    matches!(word, ".for" | ".let" | ".if" | ".else" | ".end").then_some(code)
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
    /// The enclosing named loops' variables and their values, innermost last.
    vars: Vec<(String, i64)>,
}

/// Most repetitions of one named loop (`.for NAME in COUNT`).
const MAX_LOOP: i64 = 1 << 16;

impl Expander<'_> {
    fn syntax(&self, line: usize, message: impl Into<String>) -> HandError {
        HandError::Syntax { template: self.t.name.clone(), line: line + 1, message: message.into() }
    }

    /// The value of the `.if` condition `cond` on line `i`: a property of the workload, or an
    /// expression over placeholders and bound names, true unless 0 (false in a branch not
    /// taken, where it is only checked).
    fn condition(
        &self,
        i: usize,
        cond: &str,
        block: Option<(Block, u64)>,
        emit: bool,
    ) -> Result<bool, HandError> {
        match cond {
            "multi_table" => return Ok(self.v.spec.tables > 1),
            "weighted" => return Ok(self.v.weights.is_some()),
            "mean" => return Ok(self.v.spec.pooling == Pooling::Mean),
            _ => {}
        }
        let bound = self.v.get(cond, block).is_some() || self.vars.iter().any(|(v, _)| v == cond);
        if cond.is_empty() || (is_name(cond) && !bound) {
            return Err(self.syntax(
                i,
                format!("unknown condition `{cond}` (multi_table, weighted, mean, or an expression)"),
            ));
        }
        let scope = Scope { t: self.t, no: i + 1, v: self.v, block, vars: &self.vars, emit };
        Ok(scope.eval(cond)?.is_some_and(|n| n != "0"))
    }

    /// Expands lines from `i` up to the `.end` or `.else` that closes the enclosing block (or
    /// the end), with `block` (its kind and repetition) inside a `.for` block; writes them only
    /// if `emit` (lines of a branch not taken are checked for unknown placeholders only).
    fn lines_from(&mut self, i: usize, block: Option<(Block, u64)>, emit: bool) -> Result<Stop, HandError> {
        // A `.let` lasts to the end of its block.
        let saved = self.vars.len();
        let r = self.lines_in(i, block, emit);
        self.vars.truncate(saved);
        r
    }

    fn lines_in(&mut self, mut i: usize, block: Option<(Block, u64)>, emit: bool) -> Result<Stop, HandError> {
        while i < self.lines.len() {
            let line = self.lines[i];
            let Some(d) = directive(line) else {
                let scope = Scope { t: self.t, no: i + 1, v: self.v, block, vars: &self.vars, emit };
                let s = substitute(&scope, line)?;
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
                [".for", name, "in", ..] if is_name(name) => {
                    i = self.named_loop(i, d, name, block, emit)?;
                }
                [".let", name, "=", ..] if is_name(name) => {
                    self.check_free(i, ".let", name, block)?;
                    let expr = d.split_once('=').map_or("", |(_, e)| e);
                    let scope = Scope { t: self.t, no: i + 1, v: self.v, block, vars: &self.vars, emit };
                    let value = scope.eval(expr)?.and_then(|n| n.parse().ok()).unwrap_or(0);
                    self.vars.push((name.to_string(), value));
                    i += 1;
                }
                [".if", ..] => {
                    let holds = self.condition(i, d[".if".len()..].trim(), block, emit)?;
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
                             `.for NAME in COUNT`, `.let NAME = VALUE`, `.if CONDITION`, `.else`, `.end`)"
                        ),
                    ));
                }
            }
        }
        Ok(Stop::Eof)
    }

    /// An error unless `name` may be bound by a `.for NAME in` or `.let NAME =` on line `i`: it
    /// is not a placeholder, a block kind or a name already bound.
    fn check_free(
        &self,
        i: usize,
        what: &str,
        name: &str,
        block: Option<(Block, u64)>,
    ) -> Result<(), HandError> {
        let taken = self.v.get(name, block).is_some()
            || self.vars.iter().any(|(v, _)| v == name)
            || Block::parse(name).is_some()
            || matches!(name, "min" | "max");
        if taken {
            return Err(
                self.syntax(i, format!("`{what} {name}`: the name is taken (a placeholder or a bound name)"))
            );
        }
        Ok(())
    }

    /// Expands the named loop `.for NAME in COUNT` on line `i` (directive text `d`): its block
    /// once per value `0..COUNT` of `{NAME}`, COUNT an expression over placeholders (and
    /// enclosing loops' variables). Returns the line after its `.end`.
    fn named_loop(
        &mut self,
        i: usize,
        d: &str,
        name: &str,
        block: Option<(Block, u64)>,
        emit: bool,
    ) -> Result<usize, HandError> {
        self.check_free(i, ".for", name, block)?;
        let count_text = d[".for".len()..].trim_start()[name.len()..].trim_start()["in".len()..].trim();
        let scope = Scope { t: self.t, no: i + 1, v: self.v, block, vars: &self.vars, emit };
        let count = scope.eval(count_text.trim_start_matches('{').trim_end_matches('}'))?;
        // A first pass finds the block's end and checks it; then one per value.
        self.vars.push((name.to_string(), 0));
        let end = self.lines_from(i + 1, block, false);
        self.vars.pop();
        let end = match end? {
            Stop::End(end) => end,
            Stop::Else(e) => return Err(self.syntax(e, "`.else` without an `.if`")),
            Stop::Eof => return Err(self.syntax(i, format!("`.for {name}` without its `.end`"))),
        };
        if let Some(count) = count.filter(|_| emit) {
            let n: i64 = count.parse().unwrap_or(-1);
            if !(0..=MAX_LOOP).contains(&n) {
                return Err(self.syntax(i, format!("`.for {name}`: count {count} outside 0..={MAX_LOOP}")));
            }
            for k in 0..n {
                self.vars.push((name.to_string(), k));
                let r = self.lines_from(i + 1, block, true);
                self.vars.pop();
                r?;
            }
        }
        Ok(end + 1)
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
        vars: Vec::new(),
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
