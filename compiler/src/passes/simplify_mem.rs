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
//!
//! Beyond Ember: stores to scratch that the same code loads back are forwarded
//! (`forward_stores`), and a vectorized reduction into one scalar of a written memory (a knowledge-graph
//! score, an element of a TT row) keeps its partial sums in a vector accumulator across the
//! row's chunks and is stored once (`reduce_in_accumulator`).

use crate::ir::{Arg, Event, Func, MemId, Op, Opcode, Value, walk};
use std::collections::HashMap;

/// Most accumulators (vector registers kept for rows).
pub const MAX_ACCUMULATORS: usize = 16;
const UNROLL: i64 = 16;

/// Simplifies `f` (loop level or SLC).
pub fn simplify_mem(f: &Func) -> Func {
    let mut out = f.clone();
    let mut body = std::mem::take(&mut out.body);
    forward_stores(&out, &mut body, &mut HashMap::new(), &mut HashMap::new());
    drop_dead_scratch_stores(&out, &mut body);
    visit(&mut out, &mut body);
    // Rows accumulated across a loop, then scalar reductions, take the accumulators after the
    // bags' rows.
    carry_rows(&mut out, &mut body);
    let slot = next_slot(&body);
    if slot < MAX_ACCUMULATORS as i64 {
        reduce_in_accumulator(&mut out, &mut body, slot);
    }
    out.body = body;
    out
}

/// The first accumulator no op of `ops` uses.
fn next_slot(ops: &[Op]) -> i64 {
    let mut slot = 0;
    walk(ops, &mut |op| {
        if matches!(op.opcode, Opcode::VGetAcc | Opcode::VSetAcc) {
            slot = slot.max(op.args[0].int().unwrap_or(0) + 1);
        }
    });
    slot
}

/// Keeps in vector accumulators the rows that a core loop accumulates into memory at a place
/// the loop does not change (a TT lookup's partial contraction `T[a1, a2, :] += w * row`,
/// one row per pair, over the rank): each chunk is loaded once before the loop and stored once
/// after it, instead of a load and a store per iteration. The loop's inner loops over the
/// row's chunks are unrolled first (constant bounds, at most 16 steps), so columns are
/// constants. Only when every access of the memory in the loop is such a chunk, at the same
/// row, and the chunks fit the accumulators left.
fn carry_rows(f: &mut Func, ops: &mut Vec<Op>) {
    let mut out = Vec::with_capacity(ops.len());
    for mut op in std::mem::take(ops) {
        if op.opcode == Opcode::For {
            let slot = next_slot(&op.regions[0]).max(next_slot(&out));
            let mut candidate = op.clone();
            if let Some((pre, post)) = carried_row(f, &mut candidate, slot) {
                out.extend(pre);
                out.push(candidate);
                out.extend(post);
                continue;
            }
        }
        for r in &mut op.regions {
            carry_rows(f, r);
        }
        out.push(op);
    }
    *ops = out;
}

/// A carried row: its index arguments and its chunks (column, element count).
type CarriedRow = (Vec<Arg>, Vec<(i64, Arg)>);

/// Rewrites core loop `l` if it carries one row of a written memory; the ops before and after.
fn carried_row(f: &mut Func, l: &mut Op, first_slot: i64) -> Option<(Vec<Op>, Vec<Op>)> {
    let iv = l.result();
    // Inner loops over chunks, unrolled.
    let mut body = Vec::new();
    for o in std::mem::take(&mut l.regions[0]) {
        match (o.opcode, unroll(f, &o)) {
            (Opcode::For, Some(copies)) => body.extend(copies),
            _ => body.push(o),
        }
    }
    if body.iter().any(|o| !o.regions.is_empty()) {
        return None;
    }
    let defined: std::collections::HashSet<Value> =
        body.iter().flat_map(|o| o.results.clone()).chain([iv]).collect();
    let place = |o: &Op| -> Option<(Vec<Arg>, i64, Arg)> {
        // `@m, ROW.., COLUMN, N`: the row invariant, the column constant.
        let n = if o.opcode == Opcode::VLoad { o.args.len() } else { o.args.len() - 1 };
        if n < 3 {
            return None;
        }
        let (row, rest) = o.args[1..n].split_at(n - 3);
        let invariant = row.iter().all(|a| a.value().is_none_or(|v| !defined.contains(&v)));
        match rest {
            // The element count too must be known before the loop (no masked tail computed in it).
            [Arg::Int(c), count] if invariant && count.value().is_none_or(|v| !defined.contains(&v)) => {
                Some((row.to_vec(), *c, *count))
            }
            _ => None,
        }
    };
    // The memory: a written one accessed by vector loads and stores at one invariant row only.
    let accesses = |m: MemId| -> Option<CarriedRow> {
        let mut row: Option<Vec<Arg>> = None;
        let mut columns: Vec<(i64, Arg)> = Vec::new();
        for o in body.iter().filter(|o| o.args.first() == Some(&Arg::Mem(m))) {
            if !matches!(o.opcode, Opcode::VLoad | Opcode::VStore) {
                return None;
            }
            let (r, c, n) = place(o)?;
            if row.get_or_insert_with(|| r.clone()) != &r {
                return None;
            }
            if !columns.iter().any(|(x, _)| *x == c) {
                columns.push((c, n));
            }
        }
        Some((row?, columns))
    };
    let written: Vec<MemId> = body
        .iter()
        .filter(|o| o.opcode == Opcode::VLoad)
        .filter_map(|o| o.args[0].mem())
        .filter(|&m| !f.mem_decl(m).readonly)
        .collect();
    let (m, (row, columns)) = written.into_iter().find_map(|m| accesses(m).map(|a| (m, a)))?;
    // A row only read in the loop needs no store after it.
    let stored = body.iter().any(|o| o.opcode == Opcode::VStore && o.args.first() == Some(&Arg::Mem(m)));

    if first_slot + columns.len() as i64 > MAX_ACCUMULATORS as i64 {
        return None;
    }
    let slot = |c: i64| first_slot + columns.iter().position(|(x, _)| *x == c).unwrap_or(0) as i64;
    for o in &mut body {
        if o.args.first() != Some(&Arg::Mem(m)) {
            continue;
        }
        let c = o.args[1 + row.len()].int().unwrap_or(0);
        *o = if o.opcode == Opcode::VLoad {
            Op::new(Opcode::VGetAcc, o.results.clone(), vec![Arg::Int(slot(c))])
        } else {
            let v = *o.args.last().unwrap_or(&Arg::Int(0));
            Op::new(Opcode::VSetAcc, vec![], vec![Arg::Int(slot(c)), v])
        };
    }
    l.regions[0] = body;
    let at = |c: i64, n: Arg| {
        let mut a = vec![Arg::Mem(m)];
        a.extend(row.iter().copied());
        a.extend([Arg::Int(c), n]);
        a
    };
    let (mut pre, mut post) = (Vec::new(), Vec::new());
    for &(c, n) in &columns {
        let (x, y) = (f.value("row"), f.value("row"));
        pre.push(Op::new(Opcode::VLoad, vec![x], at(c, n)));
        pre.push(Op::new(Opcode::VSetAcc, vec![], vec![Arg::Int(slot(c)), Arg::Value(x)]));
        if stored {
            post.push(Op::new(Opcode::VGetAcc, vec![y], vec![Arg::Int(slot(c))]));
            let mut args = at(c, n);
            args.push(Arg::Value(y));
            post.push(Op::new(Opcode::VStore, vec![], args));
        }
    }
    Some((pre, post))
}

/// Store-to-load forwarding for the scalars of written memories at constant places (an int8
/// lookup's scale and bias, parked in the core's scratch): a load of what the same code stored
/// earlier, with no store to the memory between, becomes the stored value. A value flows into
/// nested regions (a row's loop in the same callback) that do not store to its memory, but
/// never out of one, so nothing crosses from one callback into another or from one iteration
/// into the next.
fn forward_stores(
    f: &Func,
    ops: &mut Vec<Op>,
    known: &mut HashMap<(MemId, Vec<i64>), Arg>,
    subst: &mut HashMap<Value, Arg>,
) {
    let mut kept = Vec::with_capacity(ops.len());
    for mut op in std::mem::take(ops) {
        for a in &mut op.args {
            if let Some(n) = a.value().and_then(|v| subst.get(&v)) {
                *a = *n;
            }
        }
        let mem = op.args.first().and_then(|a| a.mem()).filter(|&m| !f.mem_decl(m).readonly);
        let place = |args: &[Arg]| args.iter().map(|a| a.int()).collect::<Option<Vec<i64>>>();
        match (op.opcode, mem) {
            (Opcode::Load, Some(m)) => {
                if let Some(v) = place(&op.args[1..]).and_then(|p| known.get(&(m, p))) {
                    subst.insert(op.result(), *v);
                    continue;
                }
            }
            (Opcode::Store, Some(m)) => {
                let n = op.args.len();
                match place(&op.args[1..n - 1]) {
                    Some(p) => {
                        known.insert((m, p), op.args[n - 1]);
                    }
                    None => known.retain(|k, _| k.0 != m),
                }
            }
            (Opcode::VStore | Opcode::VSetAcc, Some(m)) => known.retain(|k, _| k.0 != m),
            _ => {}
        }
        if !op.regions.is_empty() {
            // What a region stores may be what a later iteration loads: nothing of those
            // memories flows in, and their values are unknown after it.
            let mut stored = Vec::new();
            walk(&op.regions.concat(), &mut |o| {
                if matches!(o.opcode, Opcode::Store | Opcode::VStore | Opcode::VSetAcc)
                    && let Some(m) = o.args.first().and_then(|a| a.mem())
                {
                    stored.push(m);
                }
            });
            known.retain(|k, _| !stored.contains(&k.0));
            for r in &mut op.regions {
                let mut inner = known.clone();
                forward_stores(f, r, &mut inner, subst);
            }
        }
        kept.push(op);
    }
    *ops = kept;
}

/// Removes the stores to a written memory other than the output that nothing loads any more
/// (after [`forward_stores`]: scratch the code no longer reads back).
fn drop_dead_scratch_stores(f: &Func, ops: &mut Vec<Op>) {
    let mut loaded = Vec::new();
    walk(ops, &mut |o| {
        if matches!(o.opcode, Opcode::Load | Opcode::VLoad)
            && let Some(m) = o.args.first().and_then(|a| a.mem())
        {
            loaded.push(m);
        }
    });
    let dead = |o: &Op| {
        matches!(o.opcode, Opcode::Store | Opcode::VStore)
            && o.args.first().and_then(|a| a.mem()).is_some_and(|m| {
                let d = f.mem_decl(m);
                !d.readonly && d.name != crate::frontend::OUT && !loaded.contains(&m)
            })
    };
    fn strip(ops: &mut Vec<Op>, dead: &dyn Fn(&Op) -> bool) {
        ops.retain(|o| !dead(o));
        for o in ops {
            for r in &mut o.regions {
                strip(r, dead);
            }
        }
    }
    strip(ops, &dead);
}

/// In every vectorized core loop that folds each chunk into one scalar of a written memory
/// (`a = load M[i]; h = vredsum t; s = a + h; store M[i], s`, the index the same for every
/// chunk: a knowledge-graph score, a TT row element), keeps the partial sums lane by lane in
/// vector accumulator `slot` instead (one `vfadd` per chunk), and folds them into the scalar
/// once, after the loop: one horizontal sum, one load and one store instead of one each per
/// chunk. The order of the adds changes, as it does when a reduction is vectorized at all
/// (the outputs' error bound allows any order). Only loops of two chunks or more whose chunks
/// tile their range (no masked tail, whose unused lanes could hold values that are not zero).
fn reduce_in_accumulator(f: &mut Func, ops: &mut Vec<Op>, slot: i64) {
    let mut out = Vec::with_capacity(ops.len());
    for mut op in std::mem::take(ops) {
        if op.opcode == Opcode::For
            && let Some((pre, post)) = reduction(f, &mut op, slot)
        {
            out.extend(pre);
            out.push(op);
            out.extend(post);
            continue;
        }
        for r in &mut op.regions {
            reduce_in_accumulator(f, r, slot);
        }
        out.push(op);
    }
    *ops = out;
}

/// Rewrites core loop `l` if it holds one such reduction; returns the ops to put before and
/// after it.
fn reduction(f: &mut Func, l: &mut Op, slot: i64) -> Option<(Vec<Op>, Vec<Op>)> {
    let [Arg::Int(lo), Arg::Int(hi), Arg::Int(step)] = l.args.as_slice() else { return None };
    let step = *step;
    if hi - lo <= step {
        // One chunk: nothing to save.
        return None;
    }
    let body = l.regions.first()?;
    if body.iter().any(|o| !o.regions.is_empty()) {
        return None;
    }
    let defined: std::collections::HashSet<Value> = body.iter().flat_map(|o| o.results.clone()).collect();
    let uses = |v: Value| body.iter().flat_map(|o| o.value_args()).filter(|&u| u == v).count();
    // The reduction's four ops, by position.
    let (mut load, mut sum, mut add, mut store) = (None, None, None, None);
    for (n, o) in body.iter().enumerate() {
        if o.opcode != Opcode::VRedSum || o.args.get(1) != Some(&Arg::Int(step)) || uses(o.result()) != 1 {
            continue;
        }
        let h = o.result();
        let Some(a) = body.iter().position(|x| {
            x.opcode == Opcode::Float(crate::ir::opcode::FloatOp::Add) && x.value_args().any(|v| v == h)
        }) else {
            continue;
        };
        let acc = body[a].value_args().find(|&v| v != h)?;
        let ld = body.iter().position(|x| x.opcode == Opcode::Load && x.results.first() == Some(&acc))?;
        let st = body.iter().position(|x| {
            x.opcode == Opcode::Store && x.args.last() == Some(&Arg::Value(body[a].result()))
        })?;
        let (m, index) = (body[ld].args[0], &body[ld].args[1..]);
        let st_index = &body[st].args[1..body[st].args.len() - 1];
        let invariant = index.iter().all(|x| x.value().is_none_or(|v| !defined.contains(&v)));
        // The memory is read and written only here in the loop, at the same place.
        let others = body.iter().enumerate().any(|(i, x)| i != ld && i != st && x.args.first() == Some(&m));
        if st_index != index || !invariant || others || uses(acc) != 1 || uses(body[a].result()) != 1 {
            return None;
        }
        (load, sum, add, store) = (Some(ld), Some(n), Some(a), Some(st));
        break;
    }
    let (ld, n, a, st) = (load?, sum?, add?, store?);
    let body = &mut l.regions[0];
    let chunk = body[n].args[0];
    let scalar_load = body[ld].clone();
    let scalar_add = body[a].clone();
    let scalar_store = body[st].clone();
    let (got, next) = (f.value("part"), f.value("part"));
    let replacement = [
        Op::new(Opcode::VGetAcc, vec![got], vec![Arg::Int(slot)]),
        Op::new(Opcode::VFloat(crate::ir::opcode::FloatOp::Add), vec![next], vec![Arg::Value(got), chunk]),
        Op::new(Opcode::VSetAcc, vec![], vec![Arg::Int(slot), Arg::Value(next)]),
    ];
    let mut kept: Vec<Op> = Vec::with_capacity(body.len());
    for (i, o) in std::mem::take(body).into_iter().enumerate() {
        if i == st {
            kept.extend(replacement.iter().cloned());
        } else if i != ld && i != n && i != a {
            kept.push(o);
        }
    }
    *body = kept;
    let zero = f.value("zero");
    let pre = vec![
        Op::new(Opcode::VBcast, vec![zero], vec![Arg::Float(0.0)]),
        Op::new(Opcode::VSetAcc, vec![], vec![Arg::Int(slot), Arg::Value(zero)]),
    ];
    let (total, h) = (f.value("part"), f.value("h"));
    let mut post = vec![
        Op::new(Opcode::VGetAcc, vec![total], vec![Arg::Int(slot)]),
        Op::new(Opcode::VRedSum, vec![h], vec![Arg::Value(total), Arg::Int(step)]),
        scalar_load,
    ];
    let acc = post[2].result();
    post.push(Op::new(scalar_add.opcode, scalar_add.results.clone(), vec![Arg::Value(acc), Arg::Value(h)]));
    post.push(scalar_store);
    Some((pre, post))
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
