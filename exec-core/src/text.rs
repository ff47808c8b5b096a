//! The text form of core programs: a printer and a parser that round-trip.
//!
//! ```text
//! .core lanes=16
//! loop:
//!     pop_control r1            # comments run from '#' to the end of the line
//!     ld.u32 r2, [r3 + 16] !lookup
//!     vld v1, [r2 - 64], 16 !lookup
//!     vld v2, [r2 + 0], r5          # masked: the count is r5's value at run time
//!     vgather v3, [r6 + 0], v4 * 96, 16 !lookup   # lane i: [r6 + v4[i] * 96]
//!     vgather v5, [r6 + 8], r8 * 4, 4             # lane i: [r6 + 8 + r(8+i) * 4]
//!     ld.u64 r7, [r3 + 8]
//!     st.u32 r7, [r9 + 0]
//!     fadd r7, r7, r8               # f32 in the low 32 bits
//!     vadd.i32 v6, v6, v7           # 32-bit integer lanes
//!     get_var r10, v0               # queue-alignment variable 0 (not a vector register)
//!     increment_var v0, 1
//!     switch r1, [loop, done]
//! done:
//!     halt
//! ```
//!
//! The first line (after blank and comment lines) is the `.core lanes=N` header; then each line
//! is a label (`name:`) or one instruction. The printer writes instructions with a 4-space
//! indent, immediates in decimal and memory offsets as `+ n` or `- n`; the parser also takes
//! hexadecimal (`0x40`), any indentation, `[r2]` for `[r2 + 0]`, and comments. For a program
//! whose labels are in instruction order (all parsed programs; see
//! [`CoreProgram::canonicalize`]), `parse(print(p)) == p`, and `print(parse(t))` is a fixed
//! point of printing. Errors name the line and the offending text; the parser never panics.

use crate::isa::{
    AluOp, Cond, CoreProgram, FOp, GatherIndex, Inst, Label, MAX_LANES, NUM_REGS, NUM_VARS, NUM_VREGS, Reg,
    VIntOp, VReg, Var, Width,
};
use std::collections::HashMap;
use std::fmt::{self, Write as _};
use std::str::FromStr;
use thiserror::Error;

/// What is wrong with a line of program text.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ParseErrorKind {
    /// The `.core lanes=N` header is missing.
    #[error("expected the header \".core lanes=N\", found \"{0}\"")]
    MissingHeader(String),
    /// The header's lane count is outside `1..=64`.
    #[error("lanes={0} is outside 1..={MAX_LANES}")]
    Lanes(String),
    /// The mnemonic is not an instruction.
    #[error("unknown instruction \"{0}\"")]
    UnknownInstruction(String),
    /// A register number is too large.
    #[error("register {0} out of range")]
    RegisterOutOfRange(String),
    /// Something else than the expected operand.
    #[error("expected {expected}, found {found}")]
    Expected {
        /// What the parser wanted.
        expected: &'static str,
        /// What it found (quoted), or "end of line".
        found: String,
    },
    /// A number that does not fit or does not parse.
    #[error("invalid number \"{0}\"")]
    BadNumber(String),
    /// A branch names a label that is never defined.
    #[error("unknown label \"{0}\"")]
    UnknownLabel(String),
    /// A label is defined twice.
    #[error("label \"{0}\" is defined twice")]
    DuplicateLabel(String),
    /// A label name is not an identifier.
    #[error("invalid label name \"{0}\"")]
    BadLabelName(String),
    /// An element count outside `1..=lanes`.
    #[error("count {count} is outside 1..={lanes} (the vector lanes)")]
    Count {
        /// The count written.
        count: u64,
        /// The program's lanes.
        lanes: u32,
    },
    /// A `vext` lane outside `0..lanes`.
    #[error("lane {lane} is outside 0..{lanes} (the vector lanes)")]
    Lane {
        /// The lane written.
        lane: u32,
        /// The program's lanes.
        lanes: u32,
    },
    /// Text after the last operand.
    #[error("unexpected \"{0}\" after the operands")]
    Trailing(String),
    /// The program has no instruction.
    #[error("the program has no instructions")]
    Empty,
}

/// A parse error: the 1-based line and what is wrong there.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("line {line}: {kind}")]
pub struct ParseError {
    /// 1-based line number.
    pub line: usize,
    /// What is wrong.
    pub kind: ParseErrorKind,
}

/// Prints a program in its text form.
pub fn print(program: &CoreProgram) -> String {
    let mut out = String::with_capacity(32 + program.insts.len() * 24);
    let _ = writeln!(out, ".core lanes={}", program.vector_lanes);
    // Labels in instruction order; ties keep their order in `labels`.
    let mut order: Vec<&(String, u32)> = program.labels.iter().collect();
    order.sort_by_key(|l| l.1);
    let mut next = order.iter().peekable();
    for (i, inst) in program.insts.iter().enumerate() {
        while let Some(l) = next.next_if(|l| l.1 as usize <= i) {
            let _ = writeln!(out, "{}:", l.0);
        }
        let _ = writeln!(out, "    {}", format_inst(program, inst));
    }
    for l in next {
        let _ = writeln!(out, "{}:", l.0);
    }
    out
}

impl fmt::Display for CoreProgram {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&print(self))
    }
}

impl FromStr for CoreProgram {
    type Err = ParseError;
    fn from_str(s: &str) -> Result<Self, ParseError> {
        parse(s)
    }
}

/// One instruction in text form, with label names from `program` (a label index the program
/// does not have prints as `<label N>`, which does not parse).
pub fn format_inst(program: &CoreProgram, inst: &Inst) -> String {
    let label = |l: &Label| match program.labels.get(l.0 as usize) {
        Some((name, _)) => name.clone(),
        None => format!("<label {}>", l.0),
    };
    let mem = |base: &Reg, offset: i64| {
        if offset < 0 {
            format!("[{base} - {}]", offset.unsigned_abs())
        } else {
            format!("[{base} + {offset}]")
        }
    };
    let lookup = |l: bool| if l { " !lookup" } else { "" };
    match inst {
        Inst::Li { rd, imm } => format!("li {rd}, {imm}"),
        Inst::Alu { op, rd, ra, rb } => format!("{} {rd}, {ra}, {rb}", op.mnemonic()),
        Inst::AluI { op, rd, ra, imm } => format!("{}i {rd}, {ra}, {imm}", op.mnemonic()),
        Inst::Branch { cond, ra, rb, target } => format!("{} {ra}, {rb}, {}", cond.mnemonic(), label(target)),
        Inst::Jump { target } => format!("jmp {}", label(target)),
        Inst::Switch { ra, targets } => {
            let names: Vec<String> = targets.iter().map(label).collect();
            format!("switch {ra}, [{}]", names.join(", "))
        }
        Inst::LoadU32 { rd, base, offset, lookup: l } => {
            format!("ld.u32 {rd}, {}{}", mem(base, *offset), lookup(*l))
        }
        Inst::VLoad { vd, base, offset, count, lookup: l } => {
            format!("vld {vd}, {}, {count}{}", mem(base, *offset), lookup(*l))
        }
        Inst::VLoadQueue { vd, base, offset, count } => format!("vldq {vd}, {}, {count}", mem(base, *offset)),
        Inst::VLoadWiden { fmt, vd, base, offset, count, lookup: l } => {
            format!(
                "vld.{} {vd}, {}, {count}{}",
                crate::isa::format_suffix(*fmt),
                mem(base, *offset),
                lookup(*l)
            )
        }
        Inst::VLoadWidenN { fmt, vd, base, offset, count, lookup: l } => {
            format!(
                "vld.{} {vd}, {}, {count}{}",
                crate::isa::format_suffix(*fmt),
                mem(base, *offset),
                lookup(*l)
            )
        }
        Inst::VLoadQueueWiden { fmt, vd, base, offset, count } => {
            format!("vldq.{} {vd}, {}, {count}", crate::isa::format_suffix(*fmt), mem(base, *offset))
        }
        Inst::VZero { vd } => format!("vzero {vd}"),
        Inst::VAdd { vd, va, vb } => format!("vadd {vd}, {va}, {vb}"),
        Inst::VMul { vd, va, vb } => format!("vmul {vd}, {va}, {vb}"),
        Inst::VMax { vd, va, vb } => format!("vmax {vd}, {va}, {vb}"),
        Inst::VStore { vs, base, offset, count } => format!("vst {vs}, {}, {count}", mem(base, *offset)),
        Inst::PopControl { rd } => format!("pop_control {rd}"),
        Inst::PopOperand { rd } => format!("pop_operand {rd}"),
        Inst::Halt => "halt".to_string(),
        Inst::LoadU64 { rd, base, offset, lookup: l } => {
            format!("ld.u64 {rd}, {}{}", mem(base, *offset), lookup(*l))
        }
        Inst::Store { width, rs, base, offset } => {
            format!("st.{} {rs}, {}", width.suffix(), mem(base, *offset))
        }
        Inst::VLoadN { vd, base, offset, count, lookup: l } => {
            format!("vld {vd}, {}, {count}{}", mem(base, *offset), lookup(*l))
        }
        Inst::VStoreN { vs, base, offset, count } => format!("vst {vs}, {}, {count}", mem(base, *offset)),
        Inst::VGather { vd, base, offset, index, scale, count, lookup: l } => {
            let index = match index {
                GatherIndex::Vector(v) => v.to_string(),
                GatherIndex::Scalars(r) => r.to_string(),
            };
            format!("vgather {vd}, {}, {index} * {scale}, {count}{}", mem(base, *offset), lookup(*l))
        }
        Inst::FBin { op, rd, ra, rb } => format!("{} {rd}, {ra}, {rb}", op.mnemonic()),
        Inst::FCvt { rd, ra } => format!("fcvt {rd}, {ra}"),
        Inst::VInt { op, vd, va, vb } => format!("{} {vd}, {va}, {vb}", op.mnemonic()),
        Inst::VBcast { vd, rs } => format!("vbcast {vd}, {rs}"),
        Inst::VExtract { rd, vs, lane } => format!("vext {rd}, {vs}, {lane}"),
        Inst::VIota { vd } => format!("viota {vd}"),
        Inst::GetVar { rd, var } => format!("get_var {rd}, {var}"),
        Inst::IncrementVar { var, imm } => format!("increment_var {var}, {imm}"),
    }
}

/// Parses a program from its text form.
pub fn parse(text: &str) -> Result<CoreProgram, ParseError> {
    // Pass 1: the header, the labels and the instruction lines, so that branches may name
    // labels defined further down.
    let mut lanes: Option<u32> = None;
    let mut labels: Vec<(String, u32)> = Vec::new();
    let mut label_index: HashMap<&str, u32> = HashMap::new();
    let mut inst_lines: Vec<(usize, &str)> = Vec::new();
    let mut last_line = 1;
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        last_line = line;
        let body = raw.split_once('#').map_or(raw, |(code, _)| code).trim();
        if body.is_empty() {
            continue;
        }
        let err = |kind| ParseError { line, kind };
        if lanes.is_none() {
            lanes = Some(parse_header(body).map_err(err)?);
            continue;
        }
        if let Some(name) = body.strip_suffix(':') {
            let name = name.trim_end();
            if !crate::isa::valid_label_name(name) {
                return Err(err(ParseErrorKind::BadLabelName(name.to_string())));
            }
            let index = labels.len() as u32;
            if label_index.insert(name, index).is_some() {
                return Err(err(ParseErrorKind::DuplicateLabel(name.to_string())));
            }
            labels.push((name.to_string(), inst_lines.len() as u32));
            continue;
        }
        inst_lines.push((line, body));
    }
    let Some(lanes) = lanes else {
        return Err(ParseError { line: last_line, kind: ParseErrorKind::MissingHeader(String::new()) });
    };
    if inst_lines.is_empty() {
        return Err(ParseError { line: last_line, kind: ParseErrorKind::Empty });
    }
    // Pass 2: the instructions.
    let mut insts = Vec::with_capacity(inst_lines.len());
    for (line, body) in inst_lines {
        let inst = parse_inst(body, lanes, &label_index).map_err(|kind| ParseError { line, kind })?;
        insts.push(inst);
    }
    Ok(CoreProgram { vector_lanes: lanes, insts, labels })
}

fn parse_header(body: &str) -> Result<u32, ParseErrorKind> {
    let missing = || ParseErrorKind::MissingHeader(body.to_string());
    let rest =
        body.strip_prefix(".core").filter(|r| r.starts_with(char::is_whitespace)).ok_or_else(missing)?;
    let value = rest.trim().strip_prefix("lanes").ok_or_else(missing)?;
    let value = value.trim_start().strip_prefix('=').ok_or_else(missing)?.trim();
    match parse_uint(value) {
        Some(n) if (1..=MAX_LANES as u64).contains(&n) => Ok(n as u32),
        _ => Err(ParseErrorKind::Lanes(value.to_string())),
    }
}

/// Parses a decimal or `0x` hexadecimal unsigned number.
fn parse_uint(s: &str) -> Option<u64> {
    if let Some(hex) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        if hex.is_empty() || hex.starts_with('+') {
            return None;
        }
        u64::from_str_radix(hex, 16).ok()
    } else if s.starts_with('+') {
        None
    } else {
        s.parse().ok()
    }
}

/// A cursor over one instruction's operand text.
struct Cursor<'a> {
    s: &'a str,
}

fn quoted(s: &str) -> String {
    if s.is_empty() { "end of line".to_string() } else { format!("\"{s}\"") }
}

fn is_word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '.' || c == '$' || c == '!'
}

impl<'a> Cursor<'a> {
    fn skip_ws(&mut self) {
        self.s = self.s.trim_start();
    }

    /// The next token (a word, or one punctuation character), without consuming it.
    fn peek_token(&mut self) -> &'a str {
        self.skip_ws();
        let end = self.s.find(|c: char| !is_word_char(c)).unwrap_or(self.s.len());
        if end == 0 { self.s.chars().next().map_or("", |c| &self.s[..c.len_utf8()]) } else { &self.s[..end] }
    }

    fn next_token(&mut self) -> &'a str {
        let t = self.peek_token();
        self.s = &self.s[t.len()..];
        t
    }

    fn eat(&mut self, c: char) -> bool {
        self.skip_ws();
        match self.s.strip_prefix(c) {
            Some(rest) => {
                self.s = rest;
                true
            }
            None => false,
        }
    }

    fn expect(&mut self, c: char, expected: &'static str) -> Result<(), ParseErrorKind> {
        if self.eat(c) {
            Ok(())
        } else {
            Err(ParseErrorKind::Expected { expected, found: quoted(self.peek_token()) })
        }
    }

    fn comma(&mut self) -> Result<(), ParseErrorKind> {
        self.expect(',', "\",\"")
    }

    fn register(&mut self, prefix: char, limit: u8, expected: &'static str) -> Result<u8, ParseErrorKind> {
        let t = self.peek_token();
        let number =
            t.strip_prefix(prefix).filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
        let Some(number) = number else {
            return Err(ParseErrorKind::Expected { expected, found: quoted(t) });
        };
        self.next_token();
        match number.parse::<u32>() {
            Ok(n) if n < limit as u32 => Ok(n as u8),
            _ => Err(ParseErrorKind::RegisterOutOfRange(t.to_string())),
        }
    }

    fn reg(&mut self) -> Result<Reg, ParseErrorKind> {
        self.register('r', NUM_REGS, "a scalar register").map(Reg)
    }

    fn vreg(&mut self) -> Result<VReg, ParseErrorKind> {
        self.register('v', NUM_VREGS, "a vector register").map(VReg)
    }

    fn var(&mut self) -> Result<Var, ParseErrorKind> {
        self.register('v', NUM_VARS, "a variable").map(Var)
    }

    /// Whether the next token is a scalar register name (`r` and a digit).
    fn at_reg(&mut self) -> bool {
        let t = self.peek_token();
        t.len() > 1 && t.starts_with('r') && t.as_bytes()[1].is_ascii_digit()
    }

    /// An unsigned number that fits a `u32`.
    fn u32(&mut self) -> Result<u32, ParseErrorKind> {
        let t = self.peek_token();
        let v = self.magnitude(false)?;
        u32::try_from(v).map_err(|_| ParseErrorKind::BadNumber(t.to_string()))
    }

    /// A signed immediate: optional sign, then decimal or `0x` hexadecimal.
    fn imm(&mut self) -> Result<i64, ParseErrorKind> {
        let negative = if self.eat('-') {
            true
        } else {
            self.eat('+');
            false
        };
        self.magnitude(negative)
    }

    /// An unsigned number, negated if `negative`, that must fit an `i64`.
    fn magnitude(&mut self, negative: bool) -> Result<i64, ParseErrorKind> {
        let t = self.peek_token();
        if !t.starts_with(|c: char| c.is_ascii_digit()) {
            return Err(ParseErrorKind::Expected { expected: "a number", found: quoted(t) });
        }
        self.next_token();
        let bad = || ParseErrorKind::BadNumber(if negative { format!("-{t}") } else { t.to_string() });
        let magnitude = parse_uint(t).ok_or_else(bad)?;
        let value = if negative { -i128::from(magnitude) } else { i128::from(magnitude) };
        i64::try_from(value).map_err(|_| bad())
    }

    /// `[rB + off]`, `[rB - off]` or `[rB]`.
    fn mem(&mut self) -> Result<(Reg, i64), ParseErrorKind> {
        self.expect('[', "\"[\"")?;
        let base = self.reg()?;
        let offset = if self.eat('+') {
            self.magnitude(false)?
        } else if self.eat('-') {
            self.magnitude(true)?
        } else {
            0
        };
        self.expect(']', "\"]\"")?;
        Ok((base, offset))
    }

    fn count(&mut self, lanes: u32) -> Result<u32, ParseErrorKind> {
        let t = self.next_token();
        let n = parse_uint(t)
            .ok_or_else(|| ParseErrorKind::Expected { expected: "a count", found: quoted(t) })?;
        if !(1..=lanes as u64).contains(&n) {
            return Err(ParseErrorKind::Count { count: n, lanes });
        }
        Ok(n as u32)
    }

    fn label(&mut self, labels: &HashMap<&str, u32>) -> Result<Label, ParseErrorKind> {
        let t = self.peek_token();
        if !crate::isa::valid_label_name(t) {
            return Err(ParseErrorKind::Expected { expected: "a label", found: quoted(t) });
        }
        self.next_token();
        labels.get(t).map(|&i| Label(i)).ok_or_else(|| ParseErrorKind::UnknownLabel(t.to_string()))
    }

    /// The optional ` !lookup` flag.
    fn lookup_flag(&mut self) -> bool {
        if self.peek_token() == "!lookup" {
            self.next_token();
            true
        } else {
            false
        }
    }

    fn end(&mut self) -> Result<(), ParseErrorKind> {
        self.skip_ws();
        if self.s.is_empty() { Ok(()) } else { Err(ParseErrorKind::Trailing(self.s.to_string())) }
    }
}

fn parse_inst(body: &str, lanes: u32, labels: &HashMap<&str, u32>) -> Result<Inst, ParseErrorKind> {
    let (mnemonic, rest) = body.split_once(char::is_whitespace).unwrap_or((body, ""));
    let mut c = Cursor { s: rest };
    let c = &mut c;
    let vbin = |c: &mut Cursor<'_>| -> Result<(VReg, VReg, VReg), ParseErrorKind> {
        let vd = c.vreg()?;
        c.comma()?;
        let va = c.vreg()?;
        c.comma()?;
        Ok((vd, va, c.vreg()?))
    };
    let inst = match mnemonic {
        "li" => {
            let rd = c.reg()?;
            c.comma()?;
            Inst::Li { rd, imm: c.imm()? }
        }
        "jmp" => Inst::Jump { target: c.label(labels)? },
        "switch" => {
            let ra = c.reg()?;
            c.comma()?;
            c.expect('[', "\"[\"")?;
            let mut targets = Vec::new();
            if !c.eat(']') {
                loop {
                    targets.push(c.label(labels)?);
                    if c.eat(']') {
                        break;
                    }
                    c.comma()?;
                }
            }
            Inst::Switch { ra, targets }
        }
        "ld.u32" => {
            let rd = c.reg()?;
            c.comma()?;
            let (base, offset) = c.mem()?;
            Inst::LoadU32 { rd, base, offset, lookup: c.lookup_flag() }
        }
        "vld" | "vst"
            if {
                // The masked forms: `vld v1, [r2 + 0], r3`.
                let mut ahead = Cursor { s: c.s };
                ahead.vreg().is_ok()
                    && ahead.comma().is_ok()
                    && ahead.mem().is_ok()
                    && ahead.comma().is_ok()
                    && ahead.at_reg()
            } =>
        {
            let v = c.vreg()?;
            c.comma()?;
            let (base, offset) = c.mem()?;
            c.comma()?;
            let count = c.reg()?;
            if mnemonic == "vld" {
                Inst::VLoadN { vd: v, base, offset, count, lookup: c.lookup_flag() }
            } else {
                Inst::VStoreN { vs: v, base, offset, count }
            }
        }
        m if m.split_once('.').is_some_and(|(op, f)| {
            matches!(op, "vld" | "vldq") && crate::isa::format_from_suffix(f).is_some()
        }) =>
        {
            let (op, f) = m.split_once('.').unwrap_or_default();
            let fmt = crate::isa::format_from_suffix(f).unwrap_or_default();
            let vd = c.vreg()?;
            c.comma()?;
            let (base, offset) = c.mem()?;
            c.comma()?;
            if op == "vld" && c.at_reg() {
                let count = c.reg()?;
                Inst::VLoadWidenN { fmt, vd, base, offset, count, lookup: c.lookup_flag() }
            } else {
                let count = c.count(lanes)?;
                if op == "vld" {
                    Inst::VLoadWiden { fmt, vd, base, offset, count, lookup: c.lookup_flag() }
                } else {
                    Inst::VLoadQueueWiden { fmt, vd, base, offset, count }
                }
            }
        }
        "vld" | "vldq" | "vst" => {
            let v = c.vreg()?;
            c.comma()?;
            let (base, offset) = c.mem()?;
            c.comma()?;
            let count = c.count(lanes)?;
            match mnemonic {
                "vld" => Inst::VLoad { vd: v, base, offset, count, lookup: c.lookup_flag() },
                "vldq" => Inst::VLoadQueue { vd: v, base, offset, count },
                _ => Inst::VStore { vs: v, base, offset, count },
            }
        }
        "ld.u64" => {
            let rd = c.reg()?;
            c.comma()?;
            let (base, offset) = c.mem()?;
            Inst::LoadU64 { rd, base, offset, lookup: c.lookup_flag() }
        }
        "st.u32" | "st.u64" => {
            let rs = c.reg()?;
            c.comma()?;
            let (base, offset) = c.mem()?;
            let width = if mnemonic == "st.u32" { Width::W32 } else { Width::W64 };
            Inst::Store { width, rs, base, offset }
        }
        "vgather" => {
            let vd = c.vreg()?;
            c.comma()?;
            let (base, offset) = c.mem()?;
            c.comma()?;
            let index =
                if c.at_reg() { GatherIndex::Scalars(c.reg()?) } else { GatherIndex::Vector(c.vreg()?) };
            c.expect('*', "\"*\"")?;
            let scale = c.u32()?;
            c.comma()?;
            let count = c.count(lanes)?;
            Inst::VGather { vd, base, offset, index, scale, count, lookup: c.lookup_flag() }
        }
        "fcvt" => {
            let rd = c.reg()?;
            c.comma()?;
            Inst::FCvt { rd, ra: c.reg()? }
        }
        "vbcast" => {
            let vd = c.vreg()?;
            c.comma()?;
            Inst::VBcast { vd, rs: c.reg()? }
        }
        "vext" => {
            let rd = c.reg()?;
            c.comma()?;
            let vs = c.vreg()?;
            c.comma()?;
            let lane = c.u32()?;
            if lane >= lanes {
                return Err(ParseErrorKind::Lane { lane, lanes });
            }
            Inst::VExtract { rd, vs, lane }
        }
        "viota" => Inst::VIota { vd: c.vreg()? },
        "get_var" => {
            let rd = c.reg()?;
            c.comma()?;
            Inst::GetVar { rd, var: c.var()? }
        }
        "increment_var" => {
            let var = c.var()?;
            c.comma()?;
            Inst::IncrementVar { var, imm: c.imm()? }
        }
        "vzero" => Inst::VZero { vd: c.vreg()? },
        "vadd" => {
            let (vd, va, vb) = vbin(c)?;
            Inst::VAdd { vd, va, vb }
        }
        "vmul" => {
            let (vd, va, vb) = vbin(c)?;
            Inst::VMul { vd, va, vb }
        }
        "vmax" => {
            let (vd, va, vb) = vbin(c)?;
            Inst::VMax { vd, va, vb }
        }
        "pop_control" => Inst::PopControl { rd: c.reg()? },
        "pop_operand" => Inst::PopOperand { rd: c.reg()? },
        "halt" => Inst::Halt,
        m => {
            if let Some(op) = FOp::from_mnemonic(m) {
                let rd = c.reg()?;
                c.comma()?;
                let ra = c.reg()?;
                c.comma()?;
                Inst::FBin { op, rd, ra, rb: c.reg()? }
            } else if let Some(op) = VIntOp::from_mnemonic(m) {
                let (vd, va, vb) = vbin(c)?;
                Inst::VInt { op, vd, va, vb }
            } else if let Some(cond) = Cond::from_mnemonic(m) {
                let ra = c.reg()?;
                c.comma()?;
                let rb = c.reg()?;
                c.comma()?;
                Inst::Branch { cond, ra, rb, target: c.label(labels)? }
            } else if let Some(op) = AluOp::from_mnemonic(m) {
                let rd = c.reg()?;
                c.comma()?;
                let ra = c.reg()?;
                c.comma()?;
                Inst::Alu { op, rd, ra, rb: c.reg()? }
            } else if let Some(op) = m.strip_suffix('i').and_then(AluOp::from_mnemonic) {
                let rd = c.reg()?;
                c.comma()?;
                let ra = c.reg()?;
                c.comma()?;
                Inst::AluI { op, rd, ra, imm: c.imm()? }
            } else {
                return Err(ParseErrorKind::UnknownInstruction(m.to_string()));
            }
        }
    };
    c.end()?;
    Ok(inst)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> String {
        match parse(text) {
            Ok(p) => panic!("parsed:\n{p}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn accepts_hex_comments_and_short_memory_operands() {
        let p = parse(
            "# a comment\n\n.core lanes = 8 # header\n  start:\nli r1, 0x10\n\tld.u32 r2, [r1]  !lookup\n addi r3, r1, -0x8\n",
        )
        .unwrap();
        assert_eq!(p.vector_lanes, 8);
        assert_eq!(p.labels, vec![("start".to_string(), 0)]);
        assert_eq!(p.insts[0], Inst::Li { rd: Reg(1), imm: 16 });
        assert_eq!(p.insts[1], Inst::LoadU32 { rd: Reg(2), base: Reg(1), offset: 0, lookup: true });
        assert_eq!(p.insts[2], Inst::AluI { op: AluOp::Add, rd: Reg(3), ra: Reg(1), imm: -8 });
        assert_eq!(
            print(&p),
            ".core lanes=8\nstart:\n    li r1, 16\n    ld.u32 r2, [r1 + 0] !lookup\n    addi r3, r1, -8\n"
        );
    }

    #[test]
    fn extreme_immediates_round_trip() {
        let text = ".core lanes=1\n    li r1, -9223372036854775808\n    ld.u32 r1, [r2 - 9223372036854775808]\n    \
                    ld.u32 r1, [r2 + 9223372036854775807]\n    halt\n";
        let p = parse(text).unwrap();
        assert_eq!(p.insts[1], Inst::LoadU32 { rd: Reg(1), base: Reg(2), offset: i64::MIN, lookup: false });
        assert_eq!(print(&p), text);
        assert_eq!(
            err(".core lanes=1\n    li r1, 9223372036854775808\n"),
            "line 2: invalid number \"9223372036854775808\""
        );
    }

    #[test]
    fn error_messages() {
        assert_eq!(err(""), "line 1: expected the header \".core lanes=N\", found \"\"");
        assert_eq!(err("halt\n"), "line 1: expected the header \".core lanes=N\", found \"halt\"");
        assert_eq!(
            err(".corelanes=4\n"),
            "line 1: expected the header \".core lanes=N\", found \".corelanes=4\""
        );
        assert_eq!(err(".core lanes=65\nhalt"), "line 1: lanes=65 is outside 1..=64");
        assert_eq!(err(".core lanes=4\n"), "line 1: the program has no instructions");
        assert_eq!(
            err(".core lanes=4\n    vld v1, [r1 + 0], 5\n"),
            "line 2: count 5 is outside 1..=4 (the vector lanes)"
        );
        assert_eq!(err(".core lanes=4\n    add r1, r2\n"), "line 2: expected \",\", found end of line");
        assert_eq!(
            err(".core lanes=4\n    add r1, v2, r3\n"),
            "line 2: expected a scalar register, found \"v2\""
        );
        assert_eq!(err(".core lanes=4\n    halt r1\n"), "line 2: unexpected \"r1\" after the operands");
        assert_eq!(err(".core lanes=4\na:\na:\n    halt\n"), "line 3: label \"a\" is defined twice");
        assert_eq!(err(".core lanes=4\n9a:\n    halt\n"), "line 2: invalid label name \"9a\"");
        assert_eq!(err(".core lanes=4\n    li r1, x\n"), "line 2: expected a number, found \"x\"");
        assert_eq!(err(".core lanes=4\n    li r1, 0xzz\n"), "line 2: invalid number \"0xzz\"");
        assert_eq!(err(".core lanes=4\n    vzero v32\n"), "line 2: register v32 out of range");
        assert_eq!(err(".core lanes=4\n    switch r1, [\n"), "line 2: expected a label, found end of line");
        assert_eq!(err(".core lanes=4\n    subii r1, r1, 1\n"), "line 2: unknown instruction \"subii\"");
    }

    #[test]
    fn never_panics_on_odd_text() {
        for text in [
            ".core lanes=4\n    ld.u32 r1, [r2 - -3]",
            ".core lanes=4\n    ld.u32 r1, [r2 + ",
            ".core lanes=4\n    é",
            ".core lanes=4\n    li é, 3",
            ".core lanes=4\n    li r1, -",
            ".core lanes=4\n    vld v1, [r1 + 0], 0x",
            ".core lanes=4\n:\n    halt",
            ".core lanes=\n",
            ".core lanes=99999999999999999999999\n",
        ] {
            assert!(parse(text).is_err(), "{text}");
        }
    }
}
