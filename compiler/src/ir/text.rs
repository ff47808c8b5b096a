//! The text form of every level: a printer and a parser that round-trip.
//!
//! ```text
//! func @emb : loop {
//!   mem @offsets : u32[5] readonly
//!   mem @out : f32[4, 8]
//!   %b = for 0, 4 {
//!     %lo = load @offsets, %b
//!   }
//! }
//! ```
//!
//! One op per line: optional results (`%x =`), the opcode, comma-separated arguments (`%value`,
//! an integer, an f32 written with a point or as `inf`/`NaN`, `@memory`), and `{` when the op
//! has a region, closed by a line holding `}`. Indentation is two spaces per level and is not
//! significant when parsing.

use super::{Arg, Elem, Func, Level, Mem, Op, Opcode};
use std::collections::HashMap;
use std::fmt::Write;
use thiserror::Error;

/// A text that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("line {line}: {message}")]
pub struct ParseError {
    /// 1-based line number.
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

/// Prints `f`.
pub fn print(f: &Func) -> String {
    let mut t = format!("func @{} : {} {{\n", f.name, f.level.name());
    for m in &f.mems {
        let shape: Vec<String> = m.shape.iter().map(u64::to_string).collect();
        let ro = if m.readonly { " readonly" } else { "" };
        let nt = if m.nontemporal { " nontemporal" } else { "" };
        let _ = writeln!(t, "  mem @{} : {}[{}]{ro}{nt}", m.name, m.elem.name(), shape.join(", "));
    }
    print_ops(f, &f.body, 1, &mut t);
    t.push_str("}\n");
    t
}

fn print_ops(f: &Func, ops: &[Op], depth: usize, t: &mut String) {
    for op in ops {
        let pad = "  ".repeat(depth);
        t.push_str(&pad);
        if !op.results.is_empty() {
            let names: Vec<String> = op.results.iter().map(|v| format!("%{}", f.name(*v))).collect();
            let _ = write!(t, "{} = ", names.join(", "));
        }
        t.push_str(&op.opcode.name());
        for (i, a) in op.args.iter().enumerate() {
            t.push_str(if i == 0 { " " } else { ", " });
            print_arg(f, *a, t);
        }
        if op.opcode.has_region() {
            t.push_str(" {\n");
            print_ops(f, op.body(), depth + 1, t);
            t.push_str(&pad);
            t.push('}');
        }
        t.push('\n');
    }
}

fn print_arg(f: &Func, a: Arg, t: &mut String) {
    match a {
        Arg::Value(v) => {
            let _ = write!(t, "%{}", f.name(v));
        }
        Arg::Int(i) => {
            let _ = write!(t, "{i}");
        }
        // Debug keeps a point (`1.0`) or an exponent, so the parser tells floats from ints.
        Arg::Float(x) => {
            let _ = write!(t, "{x:?}");
        }
        Arg::Mem(m) => {
            let _ = write!(t, "@{}", f.mem_decl(m).name);
        }
    }
}

/// Parses a function; the result is not verified (see [`super::verify`]).
pub fn parse(text: &str) -> Result<Func, ParseError> {
    let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l.trim())).filter(|(_, l)| !l.is_empty());
    let err = |line: usize, message: String| ParseError { line, message };
    let (n, header) =
        lines.next().ok_or_else(|| err(1, "empty text: expected `func @name : level {`".into()))?;
    let rest = header
        .strip_prefix("func @")
        .and_then(|r| r.strip_suffix('{'))
        .ok_or_else(|| err(n, format!("expected `func @name : level {{`, found `{header}`")))?;
    // The level follows the last colon: a name (the workload's) may hold colons itself.
    let (name, level) =
        rest.rsplit_once(':').ok_or_else(|| err(n, "expected `: level` after the name".into()))?;
    let level = Level::from_name(level.trim())
        .ok_or_else(|| err(n, format!("unknown level `{}` (loop, slc, dlc)", level.trim())))?;
    let mut f = Func::new(name.trim(), level);
    let mut names: HashMap<String, super::Value> = HashMap::new();
    // Open regions: the ops parsed so far at each depth, and the op waiting for its region.
    let mut stack: Vec<(Vec<Op>, Option<Op>)> = vec![(Vec::new(), None)];
    let mut closed = false;
    for (n, line) in lines {
        if closed {
            return Err(err(n, format!("text after the function's closing brace: `{line}`")));
        }
        if line == "}" {
            let (ops, owner) = stack.pop().expect("the function's own level is never popped");
            match owner {
                Some(mut op) => {
                    op.regions = vec![ops];
                    stack.last_mut().expect("an op's region has a parent level").0.push(op);
                }
                None => {
                    f.body = ops;
                    closed = true;
                }
            }
            continue;
        }
        if let Some(decl) = line.strip_prefix("mem @") {
            if stack.len() > 1 || !f.body.is_empty() || !stack[0].0.is_empty() {
                return Err(err(n, "memories are declared before the first op".into()));
            }
            let m = parse_mem(decl).map_err(|m| err(n, m))?;
            if f.mem_named(&m.name).is_some() {
                return Err(err(n, format!("memory @{} declared twice", m.name)));
            }
            f.mems.push(m);
            continue;
        }
        let op = parse_op(&mut f, &mut names, line).map_err(|m| err(n, m))?;
        if op.opcode.has_region() {
            stack.push((Vec::new(), Some(op)));
        } else {
            stack.last_mut().expect("at least the function level is open").0.push(op);
        }
    }
    if !closed {
        return Err(err(text.lines().count().max(1), "missing closing `}`".into()));
    }
    Ok(f)
}

fn parse_mem(decl: &str) -> Result<Mem, String> {
    let (name, rest) = decl.split_once(':').ok_or("expected `mem @name : type[shape]`")?;
    let rest = rest.trim();
    let (ty, rest) = rest.split_once('[').ok_or("expected `[` after the element type")?;
    let elem = match Elem::ALL.into_iter().find(|e| e.name() == ty.trim()) {
        Some(e) => e,
        None => {
            let known: Vec<&str> = Elem::ALL.iter().map(|e| e.name()).collect();
            return Err(format!("unknown element type `{}` ({})", ty.trim(), known.join(", ")));
        }
    };
    let (shape, flags) = rest.split_once(']').ok_or("expected `]` after the shape")?;
    let shape = shape
        .split(',')
        .map(|s| s.trim().parse::<u64>().map_err(|_| format!("bad extent `{}`", s.trim())))
        .collect::<Result<Vec<_>, _>>()?;
    let (mut readonly, mut nontemporal) = (false, false);
    for flag in flags.split_whitespace() {
        match flag {
            "readonly" if !readonly => readonly = true,
            "nontemporal" if !nontemporal => nontemporal = true,
            other => {
                return Err(format!("unknown or repeated memory flag `{other}` (readonly, nontemporal)"));
            }
        }
    }
    Ok(Mem { name: name.trim().to_string(), elem, shape, readonly, nontemporal })
}

fn parse_op(f: &mut Func, names: &mut HashMap<String, super::Value>, line: &str) -> Result<Op, String> {
    let (results, rest) = match line.split_once(" = ") {
        Some((lhs, rhs)) if lhs.starts_with('%') => (lhs, rhs),
        _ => ("", line),
    };
    let rest = rest.trim();
    let (rest, region) = match rest.strip_suffix('{') {
        Some(r) => (r.trim(), true),
        None => (rest, false),
    };
    let (name, args) = rest.split_once(' ').unwrap_or((rest, ""));
    let opcode = Opcode::from_name(name).ok_or_else(|| format!("unknown op `{name}`"))?;
    if region != opcode.has_region() {
        return Err(if region {
            format!("`{name}` takes no region")
        } else {
            format!("`{name}` needs a region: end the line with `{{`")
        });
    }
    let mut parsed_args = Vec::new();
    for a in args.split(',').map(str::trim).filter(|a| !a.is_empty()) {
        parsed_args.push(parse_arg(f, names, a)?);
    }
    let mut result_values = Vec::new();
    for r in results.split(',').map(str::trim).filter(|r| !r.is_empty()) {
        let r = r.strip_prefix('%').ok_or_else(|| format!("result `{r}` must start with %"))?;
        if r.is_empty() || !r.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.') {
            return Err(format!("bad value name `%{r}`"));
        }
        if names.contains_key(r) {
            return Err(format!("value %{r} defined twice"));
        }
        let v = f.value(r);
        names.insert(r.to_string(), v);
        result_values.push(v);
    }
    if result_values.len() != opcode.result_count() {
        return Err(format!(
            "`{name}` defines {} result(s), found {}",
            opcode.result_count(),
            result_values.len()
        ));
    }
    Ok(Op { opcode, results: result_values, args: parsed_args, regions: Vec::new() })
}

fn parse_arg(f: &Func, names: &HashMap<String, super::Value>, a: &str) -> Result<Arg, String> {
    if let Some(v) = a.strip_prefix('%') {
        return names.get(v).map(|v| Arg::Value(*v)).ok_or_else(|| format!("undefined value %{v}"));
    }
    if let Some(m) = a.strip_prefix('@') {
        return f.mem_named(m).map(Arg::Mem).ok_or_else(|| format!("undeclared memory @{m}"));
    }
    if a.contains(['.', 'e', 'E']) || a.contains("inf") || a.contains("NaN") {
        return a.parse::<f32>().map(Arg::Float).map_err(|_| format!("bad float `{a}`"));
    }
    a.parse::<i64>().map(Arg::Int).map_err(|_| format!("bad argument `{a}`"))
}
