//! Hand-written programs: access-unit and core program templates, instantiated per core in place
//! of the compiler's output.
//!
//! A template is program text (the `.au` or `.core` format) with placeholders in braces that are
//! replaced, for each core's job, by that job's bag range and the layout's addresses:
//! `{bag_start}`, `{offsets}`, `{out_start}`, ... ([`PLACEHOLDERS`]). A block between a line
//! `.for chunk` and a line `.end` is repeated once per vector of a row (`dim` over the core's
//! vector lanes, the last one partial), with per-chunk placeholders ([`CHUNK_PLACEHOLDERS`]):
//! that is how one template keeps a row of any width in vector registers. A block
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
use crate::workload::WorkloadSpec;
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
    "core",
    "cores",
];

/// Placeholders valid only inside a `.for chunk` block.
pub const CHUNK_PLACEHOLDERS: &[&str] = &["chunk", "chunk_offset", "chunk_lanes", "acc", "tmp"];

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
    /// A malformed template: an unclosed brace, an unmatched or nested block.
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

/// The addresses and sizes one core's instance is made of.
struct Values<'a> {
    spec: &'a WorkloadSpec,
    offsets: u64,
    indices: u64,
    weights: Option<u64>,
    tables: u64,
    out: u64,
    bags: Range<u64>,
    lookups: Range<u64>,
    lanes: u32,
    au_lanes: u32,
    core: usize,
    cores: usize,
}

impl Values<'_> {
    fn chunks(&self) -> u64 {
        u64::from(self.spec.dim).div_ceil(u64::from(self.lanes.max(1)))
    }

    /// The value of placeholder `name` (chunk `chunk` inside a `.for chunk` block): `None` if
    /// no placeholder has that name, `Some(Err(why))` if it has no value here.
    fn get(&self, name: &str, chunk: Option<u64>) -> Option<Result<String, String>> {
        let row_bytes = self.spec.row_bytes();
        let hex = |a: u64| Ok(format!("{a:#x}"));
        let dec = |n: u64| Ok(n.to_string());
        let lanes = u64::from(self.lanes);
        let per_chunk = |f: &dyn Fn(u64) -> u64| match chunk {
            Some(c) => Ok(f(c).to_string()),
            None => Err("only inside a `.for chunk` block".to_string()),
        };
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
            "out_start" => hex(self.out + self.bags.start * row_bytes),
            "out_end" => hex(self.out + self.bags.end * row_bytes),
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
            "core" => dec(self.core as u64),
            "cores" => dec(self.cores as u64),
            "chunk" => per_chunk(&|c| c),
            "chunk_offset" => per_chunk(&|c| c * lanes * 4),
            "chunk_lanes" => per_chunk(&|c| lanes.min(u64::from(self.spec.dim) - c * lanes)),
            "acc" => per_chunk(&|c| c),
            "tmp" => per_chunk(&|c| self.chunks() + c),
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
    chunk: Option<u64>,
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
        match v.get(name, chunk) {
            None => {
                let known = PLACEHOLDERS.iter().chain(CHUNK_PLACEHOLDERS).copied().collect::<Vec<_>>();
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

/// A directive line (`.for chunk`, `.if multi_table`, `.else`, `.end`), if `line` is one.
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
    /// the end), with `chunk` inside a `.for chunk` block; writes them only if `emit` (lines of
    /// a branch not taken are checked for unknown placeholders only).
    fn lines_from(&mut self, mut i: usize, chunk: Option<u64>, emit: bool) -> Result<Stop, HandError> {
        while i < self.lines.len() {
            let line = self.lines[i];
            let Some(d) = directive(line) else {
                let s = substitute(self.t, i + 1, line, self.v, chunk, emit)?;
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
                [".for", "chunk"] => {
                    if chunk.is_some() {
                        return Err(self.syntax(i, "`.for chunk` blocks do not nest"));
                    }
                    // A first pass finds the block's end and checks it; then one per chunk.
                    let end = match self.lines_from(i + 1, Some(0), false)? {
                        Stop::End(end) => end,
                        Stop::Else(e) => return Err(self.syntax(e, "`.else` without an `.if`")),
                        Stop::Eof => return Err(self.syntax(i, "`.for chunk` without its `.end`")),
                    };
                    if emit {
                        for c in 0..self.v.chunks() {
                            self.lines_from(i + 1, Some(c), true)?;
                        }
                    }
                    i = end + 1;
                }
                [".if", name] => {
                    let holds = self.condition(i, name)?;
                    i = match self.lines_from(i + 1, chunk, emit && holds)? {
                        Stop::End(end) => end + 1,
                        Stop::Else(e) => match self.lines_from(e + 1, chunk, emit && !holds)? {
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
                        format!("unknown directive `{d}` (`.for chunk`, `.if CONDITION`, `.else`, `.end`)"),
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
    for (i, job) in out.jobs.iter_mut().enumerate() {
        let l = &compiled.layout;
        let v = Values {
            spec: &compiled.spec,
            offsets: l.offsets,
            indices: l.indices,
            weights: l.weights,
            tables: l.tables,
            out: l.output,
            bags: job.bags.clone(),
            lookups: lookup(job.bags.start)..lookup(job.bags.end),
            lanes,
            au_lanes,
            core: i,
            cores,
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
/// placeholder the workload has no value for (`{weights}` of an unweighted workload) gets a
/// stand-in too: a template of another op family is not a bad template, and [`instantiate`]
/// reports it for that workload.
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
        tables: 4 << 20,
        out: 5 << 20,
        bags: 0..spec.bags(),
        lookups: 0..spec.lookups(),
        lanes,
        au_lanes,
        core: 0,
        cores: 1,
    };
    instance(programs, &v).map(|_| ())
}
