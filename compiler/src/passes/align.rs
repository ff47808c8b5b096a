//! Queue alignment (Ember's ReplaceToValOps): core-side counters replace induction values
//! marshaled through the queue.
//!
//! Callbacks arrive in program order, so the core can count the iterations of a loop with
//! constant bounds itself: a queue-alignment variable, incremented at the last callback of each
//! iteration (the `end` callback of the loop's inner loop, created if missing, or the loop's own
//! `iter` callback for an innermost loop), gives every callback inside the iteration the
//! induction value as `lo + step * var` (`lo + step * (var % trips)` for a loop that restarts
//! with its parent). The unit then marshals fewer operands.

use crate::ir::{Arg, Event, Func, IntOp, NUM_VARS, Op, Opcode, Value};

/// Aligns queues in SLC function `f`.
pub fn align_queues(f: &Func) -> Func {
    let mut out = f.clone();
    let mut body = std::mem::take(&mut out.body);
    let mut next_var = 0;
    for op in body.iter_mut() {
        visit(&mut out, op, true, &mut next_var);
    }
    out.body = body;
    out
}

fn visit(f: &mut Func, l: &mut Op, root: bool, next_var: &mut i64) {
    if l.opcode != Opcode::SlcFor {
        return;
    }
    if let (Some(Arg::Int(lo)), Some(Arg::Int(hi))) = (l.args.first().copied(), l.args.get(1).copied())
        && *next_var < NUM_VARS
    {
        let step = l.args.get(2).and_then(|a| a.int()).unwrap_or(1);
        let trips = if hi > lo { (hi - lo + step - 1) / step } else { 0 };
        let var = *next_var;
        let iv = l.result();
        let mut used = false;
        for inner in l.regions[0].iter_mut() {
            replace_reads(f, inner, iv, var, lo, step, (!root).then_some(trips), &mut used);
        }
        if used && place_increment(l, var) {
            *next_var += 1;
        }
    }
    for inner in l.regions[0].iter_mut() {
        visit(f, inner, false, next_var);
    }
}

/// In callbacks under `op`, replaces reads of stream `iv` with the counter's value.
#[allow(clippy::too_many_arguments)]
fn replace_reads(
    f: &mut Func,
    op: &mut Op,
    iv: Value,
    var: i64,
    lo: i64,
    step: i64,
    trips: Option<i64>,
    used: &mut bool,
) {
    match op.opcode {
        Opcode::SlcCallback(_) => {
            let body = &mut op.regions[0];
            let mut out = Vec::with_capacity(body.len());
            let mut tail = Vec::new();
            for c in body.drain(..) {
                if c.opcode == Opcode::SlcFromStream && c.args[0] == Arg::Value(iv) {
                    *used = true;
                    // get_var, then only the arithmetic that changes the value.
                    let mut steps: Vec<(IntOp, i64)> = Vec::new();
                    if let Some(t) = trips {
                        steps.push((IntOp::Rem, t));
                    }
                    if step != 1 {
                        steps.push((IntOp::Mul, step));
                    }
                    if lo != 0 {
                        steps.push((IntOp::Add, lo));
                    }
                    let mut x = if steps.is_empty() { c.result() } else { f.value("count") };
                    tail.push(Op::new(Opcode::GetVar, vec![x], vec![Arg::Int(var)]));
                    for (n, (op, k)) in steps.iter().enumerate() {
                        let r = if n + 1 == steps.len() { c.result() } else { f.value("count") };
                        tail.push(Op::new(Opcode::Int(*op), vec![r], vec![Arg::Value(x), Arg::Int(*k)]));
                        x = r;
                    }
                } else if c.opcode == Opcode::SlcFromStream {
                    out.push(c);
                } else {
                    tail.push(c);
                }
            }
            // Stream reads stay first; the counter's arithmetic precedes the other ops.
            out.extend(tail);
            *body = out;
        }
        Opcode::SlcFor => {
            for inner in op.regions[0].iter_mut() {
                replace_reads(f, inner, iv, var, lo, step, trips, used);
            }
        }
        _ => {}
    }
}

/// Appends `increment_var` to the last callback of each iteration of `l`.
fn place_increment(l: &mut Op, var: i64) -> bool {
    let inc = Op::new(Opcode::IncrementVar, vec![], vec![Arg::Int(var)]);
    let body = &mut l.regions[0];
    if let Some(c) = body.iter().position(|o| o.opcode == Opcode::SlcFor) {
        let child = &mut body[c].regions[0];
        match child.iter().position(|o| o.opcode == Opcode::SlcCallback(Event::End)) {
            Some(e) => child[e].regions[0].push(inc),
            None => child.push(Op {
                opcode: Opcode::SlcCallback(Event::End),
                results: vec![],
                args: vec![],
                regions: vec![vec![inc]],
            }),
        }
        return true;
    }
    match body.iter().position(|o| o.opcode == Opcode::SlcCallback(Event::Iter)) {
        Some(i) => {
            body[i].regions[0].push(inc);
            true
        }
        None => false,
    }
}
