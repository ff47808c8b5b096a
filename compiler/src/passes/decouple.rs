//! Decoupling (Ember's ChooseDecoupling and ScfToSlc): a loop-level function to SLC.
//!
//! The access side is what the access unit can compute: loads of read-only memories whose
//! indices it can compute, the index arithmetic the unit's ALU streams have (add, sub, mul,
//! div, rem), and the loops that hold such loads. Everything else (f32 arithmetic, stores,
//! loads of written memories, loops without access loads) is compute and moves into callbacks:
//! compute before a loop's inner access loop into that loop's `begin` callback, compute after it
//! into its `end` callback, compute of an innermost access loop into its `iter` callback. Each
//! access value a callback uses is read with `slc.from_stream` at its start (a marshaled
//! operand). The access loops must form a chain, as the unit's traversal units do.

use super::PassError;
use crate::ir::{Arg, Event, Func, IntOp, Level, Op, Opcode, Value};
use std::collections::{HashMap, HashSet};

/// Decouples `f` (loop level) into an SLC function.
pub fn decouple(f: &Func) -> Result<Func, PassError> {
    let mut access = HashSet::new();
    let mut loops = HashSet::new();
    classify(f, &f.body, &mut access, &mut loops);
    let mut out = f.clone();
    out.level = Level::Slc;
    out.body = Vec::new();
    let mut body = Vec::new();
    for op in &f.body {
        if op.opcode == Opcode::For && loops.contains(&op.result()) {
            body.push(access_loop(&mut out, op, &access, &loops)?);
        } else {
            return Err(PassError::new(
                "decouple",
                format!("`{}` at the top level is not inside an access loop", op.opcode.name()),
            ));
        }
    }
    out.body = body;
    Ok(out)
}

/// Whether the access unit's ALU streams have this operation.
fn alu(op: IntOp) -> bool {
    !matches!(op, IntOp::Min | IntOp::Max)
}

/// Marks access values and access loops in `ops`; returns whether `ops` hold an access load.
fn classify(f: &Func, ops: &[Op], access: &mut HashSet<Value>, loops: &mut HashSet<Value>) -> bool {
    let is_access = |a: &Arg, access: &HashSet<Value>| match a {
        Arg::Value(v) => access.contains(v),
        Arg::Int(_) | Arg::Mem(_) => true,
        Arg::Float(_) => false,
    };
    let mut any = false;
    for op in ops {
        match op.opcode {
            Opcode::For => {
                let bounds = op.args.iter().all(|a| is_access(a, access));
                if bounds {
                    let before: HashSet<Value> = access.clone();
                    access.insert(op.result());
                    if classify(f, op.body(), access, loops) {
                        loops.insert(op.result());
                        any = true;
                        continue;
                    }
                    // No access load inside: a compute loop; undo what assumed otherwise.
                    *access = before;
                }
            }
            Opcode::Load => {
                let m = op.args[0].mem().expect("verified: a load names its memory");
                if f.mem_decl(m).readonly && op.args.iter().all(|a| is_access(a, access)) {
                    access.insert(op.result());
                    any = true;
                }
            }
            Opcode::Int(o) if alu(o) && op.args.iter().all(|a| is_access(a, access)) => {
                access.insert(op.result());
            }
            _ => {}
        }
    }
    any
}

/// Builds the `slc.for` of access loop `op`.
fn access_loop(
    out: &mut Func,
    op: &Op,
    access: &HashSet<Value>,
    loops: &HashSet<Value>,
) -> Result<Op, PassError> {
    let mut body = Vec::new();
    let mut compute = Vec::new();
    let mut child: Option<Op> = None;
    for inner in op.body() {
        match inner.opcode {
            Opcode::For if loops.contains(&inner.result()) => {
                if child.is_some() {
                    return Err(PassError::new(
                        "decouple",
                        "two access loops side by side: the access unit's traversal units form a chain \
                         (fuse the loops in the workload's lowering)",
                    ));
                }
                let mut c = access_loop(out, inner, access, loops)?;
                if !compute.is_empty() {
                    let cb = callback(out, Event::Begin, std::mem::take(&mut compute), access);
                    c.regions[0].insert(0, cb);
                }
                child = Some(c);
            }
            Opcode::Load if access.contains(&inner.result()) => {
                body.push(Op { opcode: Opcode::SlcMem, ..inner.clone() });
            }
            Opcode::Int(o) if access.contains(&inner.result()) => {
                body.push(Op { opcode: Opcode::SlcAlu(o), ..inner.clone() });
            }
            _ => compute.push(inner.clone()),
        }
    }
    match child {
        Some(mut c) => {
            if !compute.is_empty() {
                c.regions[0].push(callback(out, Event::End, compute, access));
            }
            body.push(c);
        }
        None if !compute.is_empty() => body.push(callback(out, Event::Iter, compute, access)),
        None => {}
    }
    check_no_crossing(out, &body)?;
    Ok(Op { opcode: Opcode::SlcFor, results: op.results.clone(), args: op.args.clone(), regions: vec![body] })
}

/// A callback on `event` holding `ops`, reading the access values they use from streams.
fn callback(out: &mut Func, event: Event, mut ops: Vec<Op>, access: &HashSet<Value>) -> Op {
    let mut used = Vec::new();
    crate::ir::walk(&ops, &mut |op| {
        for v in op.value_args() {
            if access.contains(&v) && !used.contains(&v) {
                used.push(v);
            }
        }
    });
    let mut map = HashMap::new();
    let mut body = Vec::new();
    for v in used {
        let hint = format!("{}_", out.name(v));
        let r = out.value(&hint);
        map.insert(v, r);
        body.push(Op::new(Opcode::SlcFromStream, vec![r], vec![Arg::Value(v)]));
    }
    rename(&mut ops, &map);
    body.extend(ops);
    Op { opcode: Opcode::SlcCallback(event), results: vec![], args: vec![], regions: vec![body] }
}

/// Replaces uses of values by `map` in `ops` and their regions.
pub(crate) fn rename(ops: &mut [Op], map: &HashMap<Value, Value>) {
    for op in ops {
        for a in &mut op.args {
            if let Arg::Value(v) = a
                && let Some(n) = map.get(v)
            {
                *v = *n;
            }
        }
        for r in &mut op.regions {
            rename(r, map);
        }
    }
}

/// Compute values cannot travel from one callback to another: each callback runs on its own.
fn check_no_crossing(f: &Func, body: &[Op]) -> Result<(), PassError> {
    let mut defined_in: HashMap<Value, usize> = HashMap::new();
    let mut callbacks = Vec::new();
    crate::ir::walk(body, &mut |op| {
        if matches!(op.opcode, Opcode::SlcCallback(_)) {
            callbacks.push(op);
        }
    });
    for (n, cb) in callbacks.iter().enumerate() {
        crate::ir::walk(cb.body(), &mut |op| {
            for &r in &op.results {
                defined_in.insert(r, n);
            }
        });
    }
    for (n, cb) in callbacks.iter().enumerate() {
        let mut bad = None;
        crate::ir::walk(cb.body(), &mut |op| {
            for v in op.value_args() {
                if defined_in.get(&v).is_some_and(|&d| d != n) {
                    bad = Some(v);
                }
            }
        });
        if let Some(v) = bad {
            return Err(PassError::new(
                "decouple",
                format!(
                    "compute value %{} is used in a different callback than the one defining it",
                    f.name(v)
                ),
            ));
        }
    }
    Ok(())
}
