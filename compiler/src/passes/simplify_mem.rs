//! Memory-op simplification (Ember's SimplifyMemOps): a bag's output row lives in vector
//! accumulators instead of being loaded and stored for every lookup.
//!
//! Within one iteration of a loop `B` (a bag), every vector access to a written memory at row
//! `B`'s induction variable and a constant column becomes an accumulator access (`vgetacc` /
//! `vsetacc`, one accumulator per chunk), and the row is stored once, at the end of the
//! iteration: at the end of `B`'s body on the loop level, in the `end` callback of `B`'s inner
//! loop in SLC (created if there is none). Core loops over a row's chunks (constant bounds, at
//! most 16 steps) are unrolled first, so columns become constants. It applies only when the
//! first access of each chunk in an iteration is a store (the row is initialized, not
//! accumulated onto memory) and every access to the memory in `B` is such a vector access; the
//! row must fit in 16 accumulators. Otherwise the function is left as it was.

use crate::ir::{Arg, Event, Func, MemId, Op, Opcode, Value, walk};
use std::collections::HashMap;

/// Most accumulators (vector registers kept for rows).
pub const MAX_ACCUMULATORS: usize = 16;
const UNROLL: i64 = 16;

/// Simplifies `f` (loop level or SLC).
pub fn simplify_mem(f: &Func) -> Func {
    let mut out = f.clone();
    let mut body = std::mem::take(&mut out.body);
    visit(&mut out, &mut body);
    out.body = body;
    out
}

fn visit(f: &mut Func, ops: &mut [Op]) {
    for op in ops.iter_mut() {
        if matches!(op.opcode, Opcode::For | Opcode::SlcFor) {
            let mut candidate = op.clone();
            if promote(f, &mut candidate) {
                *op = candidate;
                continue;
            }
        }
        for r in &mut op.regions {
            visit(f, r);
        }
    }
}

/// One promoted access.
struct Access {
    store: bool,
    column: i64,
}

/// Tries the promotion in loop `b`; on success rewrites it and returns true.
fn promote(f: &mut Func, b: &mut Op) -> bool {
    let slc = b.opcode == Opcode::SlcFor;
    let iv = b.result();
    unroll_core_loops(f, &mut b.regions[0], slc);
    // The values that stand for B's row index: the iv itself, or its reads in callbacks.
    let mut row_vals = vec![iv];
    walk(b.body(), &mut |op| {
        if op.opcode == Opcode::SlcFromStream && op.args[0] == Arg::Value(iv) {
            row_vals.push(op.result());
        }
    });
    // Find the written memory accessed at the row, and check every access of it.
    let mut target: Option<MemId> = None;
    let mut accesses = Vec::new();
    let mut ok = true;
    walk(b.body(), &mut |op| {
        let Some(m) = op.args.first().and_then(|a| a.mem()) else { return };
        if f.mem_decl(m).readonly
            || !matches!(op.opcode, Opcode::Load | Opcode::Store | Opcode::VLoad | Opcode::VStore)
        {
            return;
        }
        if target.is_some_and(|t| t != m) {
            ok = false;
            return;
        }
        target = Some(m);
        let vector = matches!(op.opcode, Opcode::VLoad | Opcode::VStore);
        match (vector, op.args.get(1), op.args.get(2), op.args.get(3)) {
            (true, Some(Arg::Value(r)), Some(Arg::Int(c)), Some(_)) if row_vals.contains(r) => {
                accesses.push(Access { store: op.opcode == Opcode::VStore, column: *c })
            }
            _ => ok = false,
        }
    });
    let Some(m) = target else { return false };
    if !ok || accesses.is_empty() || f.mem_decl(m).shape.len() != 2 {
        return false;
    }
    let mut columns: Vec<i64> = accesses.iter().map(|a| a.column).collect();
    columns.sort_unstable();
    columns.dedup();
    if columns.len() > MAX_ACCUMULATORS {
        return false;
    }
    for c in &columns {
        if !accesses.iter().find(|a| a.column == *c).is_some_and(|a| a.store) {
            return false;
        }
    }
    let slot: HashMap<i64, i64> = columns.iter().enumerate().map(|(i, c)| (*c, i as i64)).collect();
    // Chunks tile the row: each runs to the next one's column (the last to the row's end).
    let row_len = f.mem_decl(m).row_elems() as i64;
    let counts: HashMap<i64, Arg> = columns
        .iter()
        .enumerate()
        .map(|(i, c)| (*c, Arg::Int(columns.get(i + 1).copied().unwrap_or(row_len) - c)))
        .collect();
    rewrite(&mut b.regions[0], m, &slot);
    // The flush: one store per chunk at the end of the iteration.
    let mut flush = Vec::new();
    let row = if slc { f.value(&format!("{}_", f.name(iv))) } else { iv };
    if slc {
        flush.push(Op::new(Opcode::SlcFromStream, vec![row], vec![Arg::Value(iv)]));
    }
    for c in &columns {
        let v = f.value("acc");
        flush.push(Op::new(Opcode::VGetAcc, vec![v], vec![Arg::Int(slot[c])]));
        flush.push(Op::new(
            Opcode::VStore,
            vec![],
            vec![Arg::Mem(m), Arg::Value(row), Arg::Int(*c), counts[c], Arg::Value(v)],
        ));
    }
    if !slc {
        b.regions[0].extend(flush);
        return true;
    }
    let body = &mut b.regions[0];
    match body.iter().position(|o| o.opcode == Opcode::SlcFor) {
        Some(j) => {
            let child = &mut body[j].regions[0];
            match child.iter().position(|o| o.opcode == Opcode::SlcCallback(Event::End)) {
                Some(e) => append_to_callback(&mut child[e], flush),
                None => child.push(Op {
                    opcode: Opcode::SlcCallback(Event::End),
                    results: vec![],
                    args: vec![],
                    regions: vec![flush],
                }),
            }
        }
        None => match body.iter().position(|o| o.opcode == Opcode::SlcCallback(Event::Iter)) {
            Some(i) => append_to_callback(&mut body[i], flush),
            None => return false,
        },
    }
    true
}

/// Appends `ops` to a callback, keeping its stream reads first.
fn append_to_callback(cb: &mut Op, ops: Vec<Op>) {
    let (reads, rest): (Vec<Op>, Vec<Op>) = ops.into_iter().partition(|o| o.opcode == Opcode::SlcFromStream);
    let body = &mut cb.regions[0];
    let first_other = body.iter().position(|o| o.opcode != Opcode::SlcFromStream).unwrap_or(body.len());
    for (n, r) in reads.into_iter().enumerate() {
        body.insert(first_other + n, r);
    }
    body.extend(rest);
}

fn rewrite(ops: &mut [Op], m: MemId, slot: &HashMap<i64, i64>) {
    for op in ops.iter_mut() {
        let hit = op.args.first() == Some(&Arg::Mem(m));
        match op.opcode {
            Opcode::VLoad if hit => {
                let c = op.args[2].int().expect("checked: a constant column");
                *op = Op::new(Opcode::VGetAcc, op.results.clone(), vec![Arg::Int(slot[&c])]);
            }
            Opcode::VStore if hit => {
                let c = op.args[2].int().expect("checked: a constant column");
                let v = op.args[4];
                *op = Op::new(Opcode::VSetAcc, vec![], vec![Arg::Int(slot[&c]), v]);
            }
            _ => {
                for r in &mut op.regions {
                    rewrite(r, m, slot);
                }
            }
        }
    }
}

/// Unrolls core loops with constant bounds and at most [`UNROLL`] steps (in callbacks only, for
/// SLC).
fn unroll_core_loops(f: &mut Func, ops: &mut Vec<Op>, in_slc: bool) {
    let mut out = Vec::with_capacity(ops.len());
    for mut op in std::mem::take(ops) {
        let unrollable = op.opcode == Opcode::For && !in_slc;
        if unrollable && let Some(copies) = unroll(f, &op) {
            out.extend(copies);
            continue;
        }
        let inner_slc = in_slc && !matches!(op.opcode, Opcode::SlcCallback(_));
        for r in &mut op.regions {
            unroll_core_loops(f, r, inner_slc);
        }
        out.push(op);
    }
    *ops = out;
}

fn unroll(f: &mut Func, op: &Op) -> Option<Vec<Op>> {
    let (lo, hi, step) = match op.args.as_slice() {
        [Arg::Int(lo), Arg::Int(hi)] => (*lo, *hi, 1),
        [Arg::Int(lo), Arg::Int(hi), Arg::Int(s)] => (*lo, *hi, *s),
        _ => return None,
    };
    let trips = if hi > lo { (hi - lo + step - 1) / step } else { 0 };
    if trips > UNROLL {
        return None;
    }
    let mut out = Vec::new();
    for t in 0..trips {
        let mut map: HashMap<Value, Arg> = HashMap::from([(op.result(), Arg::Int(lo + t * step))]);
        let mut body = op.body().to_vec();
        let mut defined = Vec::new();
        walk(&body, &mut |o| defined.extend(o.results.iter().copied()));
        for v in defined {
            let hint = f.name(v).to_string();
            map.insert(v, Arg::Value(f.value(&hint)));
        }
        substitute(&mut body, &map);
        // Nested loops in the copy may unroll too.
        unroll_core_loops(f, &mut body, false);
        out.extend(body);
    }
    Some(out)
}

fn substitute(ops: &mut [Op], map: &HashMap<Value, Arg>) {
    for op in ops {
        for a in &mut op.args {
            if let Arg::Value(v) = a
                && let Some(n) = map.get(v)
            {
                *a = *n;
            }
        }
        for r in &mut op.results {
            if let Some(Arg::Value(n)) = map.get(r) {
                *r = *n;
            }
        }
        for r in &mut op.regions {
            substitute(r, map);
        }
    }
}
