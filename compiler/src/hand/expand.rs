//! Template expansion: directives (`.for`, `.if`, `.let`), placeholders replaced line by line,
//! and the streams of an access-unit text renumbered in definition order.

use super::expr::{Expr, is_name};
use super::values::{Block, Values};
use super::{CHUNK_PLACEHOLDERS, HALF_PLACEHOLDERS, HandError, LANE_PLACEHOLDERS, PLACEHOLDERS, Template};
use crate::workload::Pooling;
use std::fmt::Write as _;

/// The code of a line (before its `#` comment) and the comment.
pub(super) fn split_comment(line: &str) -> (&str, &str) {
    line.find('#').map_or((line, ""), |i| line.split_at(i))
}

/// Where a template line is expanded: its template and line, the core's values, the `.for`
/// block of a kind it is in (and its repetition), the named loops' variables, and whether it
/// is written (lines of a branch not taken are checked for unknown names only).
#[derive(Clone, Copy)]
pub(super) struct Scope<'a> {
    pub(super) t: &'a Template,
    pub(super) no: usize,
    pub(super) v: &'a Values<'a>,
    pub(super) block: Option<(Block, u64)>,
    pub(super) vars: &'a [(String, i64)],
    pub(super) emit: bool,
}

impl Scope<'_> {
    pub(super) fn syntax(&self, message: impl Into<String>) -> HandError {
        HandError::Syntax { template: self.t.name.clone(), line: self.no, message: message.into() }
    }

    /// The value of one name: a named loop's variable, else a placeholder. `Ok(None)` for a
    /// placeholder without a value in a branch not taken.
    pub(super) fn name(&self, name: &str) -> Result<Option<String>, HandError> {
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
    pub(super) fn eval(&self, text: &str) -> Result<Option<String>, HandError> {
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

/// Replaces the placeholders of one template line (its code; the comment is kept as is).
pub(super) fn substitute(scope: &Scope, line: &str) -> Result<String, HandError> {
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
pub(super) fn directive(line: &str) -> Option<&str> {
    let code = split_comment(line).0.trim();
    let word = code.split_whitespace().next().unwrap_or("");
    matches!(word, ".for" | ".let" | ".if" | ".else" | ".end").then_some(code)
}

/// What ended a run of lines.
pub(super) enum Stop {
    /// An `.end` line (its index).
    End(usize),
    /// An `.else` line (its index).
    Else(usize),
    /// The end of the template.
    Eof,
}

/// Expands one template for one core.
pub(super) struct Expander<'a> {
    pub(super) t: &'a Template,
    pub(super) v: &'a Values<'a>,
    pub(super) lines: Vec<&'a str>,
    pub(super) text: String,
    /// For each line of `text`, the template line it comes from (1-based).
    pub(super) from: Vec<usize>,
    /// The enclosing named loops' variables and their values, innermost last.
    pub(super) vars: Vec<(String, i64)>,
}

/// Most repetitions of one named loop (`.for NAME in COUNT`).
pub(super) const MAX_LOOP: i64 = 1 << 16;

impl Expander<'_> {
    pub(super) fn syntax(&self, line: usize, message: impl Into<String>) -> HandError {
        HandError::Syntax { template: self.t.name.clone(), line: line + 1, message: message.into() }
    }

    /// The value of the `.if` condition `cond` on line `i`: a property of the workload, or an
    /// expression over placeholders and bound names, true unless 0 (false in a branch not
    /// taken, where it is only checked).
    pub(super) fn condition(
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
    pub(super) fn lines_from(
        &mut self,
        i: usize,
        block: Option<(Block, u64)>,
        emit: bool,
    ) -> Result<Stop, HandError> {
        // A `.let` lasts to the end of its block.
        let saved = self.vars.len();
        let r = self.lines_in(i, block, emit);
        self.vars.truncate(saved);
        r
    }

    pub(super) fn lines_in(
        &mut self,
        mut i: usize,
        block: Option<(Block, u64)>,
        emit: bool,
    ) -> Result<Stop, HandError> {
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
    pub(super) fn check_free(
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
    pub(super) fn named_loop(
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
pub(super) fn expand(t: &Template, v: &Values) -> Result<(String, Vec<usize>), HandError> {
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
pub(super) fn stream_ids(code: &str) -> Vec<(usize, usize, usize)> {
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
pub(super) fn renumber_streams(t: &Template, text: &str, from: &[usize]) -> Result<String, HandError> {
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
pub(super) fn template_line(from: &[usize], line: usize) -> usize {
    from.get(line.saturating_sub(1)).or(from.last()).copied().unwrap_or(1)
}
