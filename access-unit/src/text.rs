//! The text form of access-unit programs: printed by the compiler, written by hand, and
//! parsed back, with `parse(print(p)) == p` and `print(parse(print(p))) == print(p)`.
//!
//! ```text
//! .au
//! tu t0 = dense 0..512 broadcast          # layer: single (default, not printed), broadcast
//! tu t1 = range s1..s2 in t0 lockstep 8   # or lockstep L
//! tu t2 = indexed 0x3000 from s3 count 4 in t1   # positions s3..s3+4 of a u32 list
//! s0 = ite t0
//! s1 = load.u32 [0x1000 + s0 * 4] in t0   # also accepted: mem.u32
//! s2 = load.u32 [0x1004 + s0 * 4] in t0
//! s3 = ite t1
//! s4 = load.u32 [0x2000 + s3 * 4] in t1
//! s5 = load.row 256 [0x100000 + s4 * 256] in t1 !lookup   # buffer stream; also: mem.row
//!                                          # (`!nt` after it: non-temporal line requests)
//! s6 = alu.add s3, 1 in t1
//! s7 = fwd s0 in t1                       # a value of an enclosing TU (or a constant)
//! s8 = ite t2                             # the index loaded at each position
//! on t1 begin -> 0
//! on t1 iter -> 1 (s5, s7)
//! on t1 end -> 2 (s0)
//! ```
//!
//! Callback lines register both the control id (control FIFO) and the operands whose stream
//! heads go to the data FIFO, so one line is one Ember `register_callback` plus its
//! `register_operand`s. `#` starts a comment.

use crate::isa::{
    AluOp, AuProgram, Bounds, Callback, Event, Layer, Operand, Stream, StreamId, StreamKind, Subject, Tu,
    TuId,
};
use std::fmt::{self, Write};
use thiserror::Error;

/// A parse error with its line number (1-based) and the offending text.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("line {line}: {message}")]
pub struct ParseError {
    /// Line number, from 1.
    pub line: usize,
    /// What is wrong, quoting the text.
    pub message: String,
}

fn operand(o: &Operand) -> String {
    match o {
        Operand::Stream(s) => format!("s{}", s.0),
        Operand::Const(c) => c.to_string(),
    }
}

fn alu_name(op: AluOp) -> &'static str {
    match op {
        AluOp::Add => "add",
        AluOp::Sub => "sub",
        AluOp::Mul => "mul",
        AluOp::Div => "div",
        AluOp::Rem => "rem",
    }
}

fn event_name(e: Event) -> &'static str {
    match e {
        Event::Begin => "begin",
        Event::Iter => "iter",
        Event::End => "end",
    }
}

impl fmt::Display for AuProgram {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, ".au")?;
        for (i, tu) in self.tus.iter().enumerate() {
            write!(f, "tu t{i} = ")?;
            match tu.bounds {
                Bounds::Dense { begin, end } => write!(f, "dense {begin}..{end}")?,
                Bounds::Range { begin, end } => write!(f, "range s{}..s{}", begin.0, end.0)?,
                Bounds::Indexed { base, from, count } => {
                    write!(f, "indexed {base:#x} from {} count {}", operand(&from), operand(&count))?
                }
            }
            if let Some(p) = tu.parent {
                write!(f, " in t{}", p.0)?;
            }
            match tu.layer {
                // Single is the default and is left out, so existing programs print unchanged.
                Layer::Single => {}
                Layer::Lockstep { lanes } => write!(f, " lockstep {lanes}")?,
                Layer::Broadcast => write!(f, " broadcast")?,
            }
            writeln!(f)?;
        }
        for (i, s) in self.streams.iter().enumerate() {
            let mut line = format!("s{i} = ");
            match s.kind {
                StreamKind::Ite => {
                    let _ = write!(line, "ite t{}", s.tu.0);
                }
                StreamKind::Load { base, index, scale } => {
                    let _ =
                        write!(line, "load.u32 [{base:#x} + {} * {scale}] in t{}", operand(&index), s.tu.0);
                }
                StreamKind::Row { base, index, scale, bytes, lookup, non_temporal } => {
                    let _ = write!(
                        line,
                        "load.row {bytes} [{base:#x} + {} * {scale}] in t{}",
                        operand(&index),
                        s.tu.0
                    );
                    if lookup {
                        line.push_str(" !lookup");
                    }
                    if non_temporal {
                        line.push_str(" !nt");
                    }
                }
                StreamKind::Alu { op, a, b } => {
                    let _ =
                        write!(line, "alu.{} {}, {} in t{}", alu_name(op), operand(&a), operand(&b), s.tu.0);
                }
                StreamKind::Fwd { src } => {
                    let _ = write!(line, "fwd {} in t{}", operand(&src), s.tu.0);
                }
            }
            writeln!(f, "{line}")?;
        }
        for cb in &self.callbacks {
            write!(f, "on t{} {} -> {}", cb.tu.0, event_name(cb.event), cb.control)?;
            if !cb.operands.is_empty() {
                let ops: Vec<String> = cb.operands.iter().map(|s| format!("s{}", s.0)).collect();
                write!(f, " ({})", ops.join(", "))?;
            }
            writeln!(f)?;
        }
        Ok(())
    }
}

/// A cursor over one line's tokens.
struct Line<'a> {
    no: usize,
    rest: &'a str,
}

impl<'a> Line<'a> {
    fn err(&self, message: impl Into<String>) -> ParseError {
        ParseError { line: self.no, message: message.into() }
    }

    fn skip_ws(&mut self) {
        self.rest = self.rest.trim_start();
    }

    fn eat(&mut self, token: &str) -> Result<(), ParseError> {
        self.skip_ws();
        match self.rest.strip_prefix(token) {
            Some(r) => {
                self.rest = r;
                Ok(())
            }
            None => Err(self.err(format!("expected \"{token}\" at \"{}\"", self.rest))),
        }
    }

    fn try_eat(&mut self, token: &str) -> bool {
        self.skip_ws();
        match self.rest.strip_prefix(token) {
            Some(r) => {
                self.rest = r;
                true
            }
            None => false,
        }
    }

    fn word(&mut self) -> &'a str {
        self.skip_ws();
        let end = self
            .rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.' || c == '-'))
            .unwrap_or(self.rest.len());
        // `..` separates range bounds: stop before it.
        let end = self.rest[..end].find("..").unwrap_or(end);
        let (w, r) = self.rest.split_at(end);
        self.rest = r;
        w
    }

    fn number(&mut self) -> Result<i64, ParseError> {
        let w = self.word();
        let parsed = match w.strip_prefix("0x") {
            Some(hex) => i64::from_str_radix(hex, 16).ok(),
            None => w.parse().ok(),
        };
        parsed.ok_or_else(|| self.err(format!("expected a number, found \"{w}\"")))
    }

    fn unsigned(&mut self) -> Result<u64, ParseError> {
        let w = self.word();
        let parsed = match w.strip_prefix("0x") {
            Some(hex) => u64::from_str_radix(hex, 16).ok(),
            None => w.parse().ok(),
        };
        parsed.ok_or_else(|| self.err(format!("expected an unsigned number, found \"{w}\"")))
    }

    fn id(&mut self, prefix: char) -> Result<u8, ParseError> {
        let w = self.word();
        w.strip_prefix(prefix)
            .and_then(|n| n.parse::<u8>().ok())
            .ok_or_else(|| self.err(format!("expected {prefix}<number>, found \"{w}\"")))
    }

    fn operand(&mut self) -> Result<Operand, ParseError> {
        self.skip_ws();
        if self.rest.starts_with('s') {
            Ok(Operand::Stream(StreamId(self.id('s')?)))
        } else {
            Ok(Operand::Const(self.number()?))
        }
    }

    fn end(&mut self) -> Result<(), ParseError> {
        self.skip_ws();
        if self.rest.is_empty() { Ok(()) } else { Err(self.err(format!("unexpected \"{}\"", self.rest))) }
    }
}

fn alu_op(l: &Line, name: &str) -> Result<AluOp, ParseError> {
    Ok(match name {
        "add" => AluOp::Add,
        "sub" => AluOp::Sub,
        "mul" => AluOp::Mul,
        "div" => AluOp::Div,
        "rem" => AluOp::Rem,
        _ => return Err(l.err(format!("unknown alu operation \"{name}\""))),
    })
}

/// `[BASE + INDEX * SCALE] in tN`
fn address(l: &mut Line) -> Result<(u64, Operand, u64), ParseError> {
    l.eat("[")?;
    let base = l.unsigned()?;
    l.eat("+")?;
    let index = l.operand()?;
    l.eat("*")?;
    let scale = l.unsigned()?;
    l.eat("]")?;
    Ok((base, index, scale))
}

fn in_tu(l: &mut Line) -> Result<TuId, ParseError> {
    l.eat("in")?;
    Ok(TuId(l.id('t')?))
}

fn parse_tu(l: &mut Line, expect: usize) -> Result<Tu, ParseError> {
    let id = l.id('t')?;
    if id as usize != expect {
        return Err(l.err(format!("expected t{expect} next, found t{id}")));
    }
    l.eat("=")?;
    let bounds = match l.word() {
        "dense" => {
            let begin = l.unsigned()?;
            l.eat("..")?;
            Bounds::Dense { begin, end: l.unsigned()? }
        }
        "range" => {
            let begin = StreamId(l.id('s')?);
            l.eat("..")?;
            Bounds::Range { begin, end: StreamId(l.id('s')?) }
        }
        "indexed" => {
            let base = l.unsigned()?;
            l.eat("from")?;
            let from = l.operand()?;
            l.eat("count")?;
            Bounds::Indexed { base, from, count: l.operand()? }
        }
        w => return Err(l.err(format!("unknown traversal kind \"{w}\" (dense, range, indexed)"))),
    };
    let parent = if l.try_eat("in") { Some(TuId(l.id('t')?)) } else { None };
    let layer = match l.word() {
        "" | "single" => Layer::Single,
        "broadcast" => Layer::Broadcast,
        "lockstep" => {
            let lanes = u32::try_from(l.unsigned()?).map_err(|_| l.err("lane count does not fit 32 bits"))?;
            Layer::Lockstep { lanes }
        }
        w => return Err(l.err(format!("unknown layer \"{w}\" (single, lockstep N, broadcast)"))),
    };
    Ok(Tu { parent, bounds, layer })
}

fn parse_stream(l: &mut Line, expect: usize) -> Result<Stream, ParseError> {
    let id = l.id('s')?;
    if id as usize != expect {
        return Err(l.err(format!("expected s{expect} next, found s{id}")));
    }
    l.eat("=")?;
    let op = l.word();
    let (tu, kind) = match op {
        "ite" => (TuId(l.id('t')?), StreamKind::Ite),
        // `mem.*` is the general name of memory streams; `load.*` is the original spelling.
        "load.u32" | "mem.u32" => {
            let (base, index, scale) = address(l)?;
            (in_tu(l)?, StreamKind::Load { base, index, scale })
        }
        "load.row" | "mem.row" => {
            let bytes = u32::try_from(l.unsigned()?).map_err(|_| l.err("row size does not fit 32 bits"))?;
            let (base, index, scale) = address(l)?;
            let tu = in_tu(l)?;
            // Flags in either order, each at most once (printed `!lookup !nt`).
            let (mut lookup, mut non_temporal) = (false, false);
            loop {
                if !lookup && l.try_eat("!lookup") {
                    lookup = true;
                } else if !non_temporal && l.try_eat("!nt") {
                    non_temporal = true;
                } else {
                    break;
                }
            }
            (tu, StreamKind::Row { base, index, scale, bytes, lookup, non_temporal })
        }
        _ => match op.strip_prefix("alu.") {
            Some(name) => {
                let op = alu_op(l, name)?;
                let a = l.operand()?;
                l.eat(",")?;
                let b = l.operand()?;
                (in_tu(l)?, StreamKind::Alu { op, a, b })
            }
            None if op == "fwd" => {
                let src = l.operand()?;
                (in_tu(l)?, StreamKind::Fwd { src })
            }
            None => return Err(l.err(format!("unknown stream kind \"{op}\""))),
        },
    };
    Ok(Stream { tu, kind })
}

fn parse_callback(l: &mut Line) -> Result<Callback, ParseError> {
    let tu = TuId(l.id('t')?);
    let event = match l.word() {
        "begin" => Event::Begin,
        "iter" => Event::Iter,
        "end" => Event::End,
        w => return Err(l.err(format!("unknown event \"{w}\" (begin, iter, end)"))),
    };
    l.eat("->")?;
    let control = u32::try_from(l.unsigned()?).map_err(|_| l.err("control id does not fit 32 bits"))?;
    let mut operands = Vec::new();
    if l.try_eat("(") {
        loop {
            operands.push(StreamId(l.id('s')?));
            if l.try_eat(")") {
                break;
            }
            l.eat(",")?;
        }
    }
    Ok(Callback { tu, event, control, operands })
}

/// Parses and verifies a program in text form. `#` starts a comment.
pub fn parse(text: &str) -> Result<AuProgram, ParseError> {
    let mut p = AuProgram::default();
    let mut header = false;
    // The line of each TU, stream and callback, for the verifier's errors.
    let (mut tu_lines, mut stream_lines, mut callback_lines) = (Vec::new(), Vec::new(), Vec::new());
    for (i, raw) in text.lines().enumerate() {
        let content = raw.split('#').next().unwrap_or("").trim();
        if content.is_empty() {
            continue;
        }
        let mut l = Line { no: i + 1, rest: content };
        if !header {
            l.eat(".au")?;
            l.end()?;
            header = true;
            continue;
        }
        if l.try_eat("tu ") {
            let tu = parse_tu(&mut l, p.tus.len())?;
            p.tus.push(tu);
            tu_lines.push(l.no);
        } else if l.try_eat("on ") {
            let cb = parse_callback(&mut l)?;
            p.callbacks.push(cb);
            callback_lines.push(l.no);
        } else if l.rest.starts_with('s') {
            let s = parse_stream(&mut l, p.streams.len())?;
            p.streams.push(s);
            stream_lines.push(l.no);
        } else {
            return Err(l.err(format!("unknown statement \"{content}\"")));
        }
        l.end()?;
    }
    if !header {
        return Err(ParseError { line: 1, message: "missing \".au\" header".into() });
    }
    p.verify_located().map_err(|(subject, e)| {
        let line = match subject {
            Some(Subject::Tu(i)) => tu_lines.get(i),
            Some(Subject::Stream(i)) => stream_lines.get(i),
            Some(Subject::Callback(i)) => callback_lines.get(i),
            None => None,
        };
        // Whole-program errors (no TU, too many of something) point at the last line.
        ParseError { line: line.copied().unwrap_or(text.lines().count().max(1)), message: e.to_string() }
    })?;
    Ok(p)
}
