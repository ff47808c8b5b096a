//! Vectorization (Ember's SlcVectorizer and CallbackVectorizer): loops over a row's elements
//! become loops over chunks of `VL` elements.
//!
//! A loop qualifies when its bounds are constants and its induction variable is used only as
//! the last index of loads and stores (a row, element by element). Its step becomes `VL`; loads
//! and stores become vector loads and stores of `min(VL, hi - k)` elements (a constant when
//! `VL` divides the trip count, else computed each step: the tail mask); f32 arithmetic on
//! vectors becomes lane-wise, with scalar operands broadcast. In SLC, an innermost access loop's
//! element streams become vector streams (`slc.vmem`) and its `iter` callback is vectorized the
//! same way. Chunks tile the row exactly (the largest divisor of its length between `VL/2` and
//! `VL`), so no vector stream reads past a row; a row without such a divisor stays scalar on
//! the access unit. Core loops inside callbacks and at the loop level are vectorized in place,
//! with the same chunks where they exist (so accesses line up), else `VL` and a masked tail.

use crate::ir::opcode::FloatOp;
use crate::ir::{Arg, Event, Func, IntOp, Op, Opcode, Value};
use std::collections::{HashMap, HashSet};

/// Vectorizes every qualifying loop of `f` (any level) with vector length `vl`.
pub fn vectorize(f: &Func, vl: u32) -> Func {
    let mut out = f.clone();
    let mut body = std::mem::take(&mut out.body);
    vectorize_ops(&mut out, &mut body, vl as i64);
    out.body = body;
    out
}

fn vectorize_ops(f: &mut Func, ops: &mut Vec<Op>, vl: i64) {
    let mut out = Vec::with_capacity(ops.len());
    for mut op in std::mem::take(ops) {
        match op.opcode {
            Opcode::For => {
                if let Some(v) = core_loop(f, &op, vl) {
                    out.extend(hoist_invariants(v));
                    continue;
                }
            }
            Opcode::SlcFor => {
                if let Some(v) = access_loop(f, &op, vl) {
                    out.push(v);
                    continue;
                }
            }
            _ => {}
        }
        for r in &mut op.regions {
            vectorize_ops(f, r, vl);
        }
        out.push(op);
    }
    *ops = out;
}

/// Moves a core loop's invariant broadcasts and arithmetic before it: the ops, then the loop.
pub(crate) fn hoist_invariants(mut l: Op) -> Vec<Op> {
    let mut varying: HashSet<Value> = l.results.iter().copied().collect();
    let mut hoisted = Vec::new();
    let mut kept = Vec::new();
    for op in std::mem::take(&mut l.regions[0]) {
        let invariant =
            matches!(op.opcode, Opcode::VBcast | Opcode::Int(_) | Opcode::Float(_) | Opcode::IToF)
                && !op.value_args().any(|v| varying.contains(&v));
        if invariant {
            hoisted.push(op);
        } else {
            varying.extend(op.results.iter().copied());
            kept.push(op);
        }
    }
    l.regions[0] = kept;
    hoisted.push(l);
    hoisted
}

fn const_bounds(op: &Op) -> Option<(i64, i64)> {
    match (op.args.first(), op.args.get(1), op.args.get(2)) {
        (Some(Arg::Int(lo)), Some(Arg::Int(hi)), None | Some(Arg::Int(1))) => Some((*lo, *hi)),
        _ => None,
    }
}

/// The chunk that tiles a row of `len` elements exactly: the largest divisor of `len` up to
/// `vl`, if it is at least half of `vl` (or the whole row, when shorter than `vl`).
pub fn tiling_chunk(len: i64, vl: i64) -> Option<i64> {
    if len <= vl {
        return (len >= 2).then_some(len);
    }
    ((vl + 1) / 2..=vl).rev().find(|c| len % c == 0)
}

/// A core loop over elements: chunks that tile the row if there are (so its chunks line up
/// with the access unit's), else `vl` with a masked tail.
fn core_loop(f: &mut Func, op: &Op, vl: i64) -> Option<Op> {
    let (lo, hi) = const_bounds(op)?;
    let vl = tiling_chunk(hi - lo, vl).unwrap_or(vl);
    let iv = op.result();
    let mut prefix = Vec::new();
    let count = tail_count(f, lo, hi, vl, iv, &mut prefix);
    let mut body = prefix;
    body.extend(vector_body(f, op.body(), &HashSet::from([iv]), &HashSet::new(), count)?);
    Some(Op {
        opcode: Opcode::For,
        results: op.results.clone(),
        args: vec![Arg::Int(lo), Arg::Int(hi), Arg::Int(vl)],
        regions: vec![body],
    })
}

/// The element count of a step: `VL`, or `min(VL, hi - k)` when `VL` does not divide the trip.
fn tail_count(f: &mut Func, lo: i64, hi: i64, vl: i64, k: Value, out: &mut Vec<Op>) -> Arg {
    if (hi - lo) % vl == 0 {
        return Arg::Int(vl);
    }
    let rem = f.value("rem");
    let n = f.value("n");
    out.push(Op::new(Opcode::Int(IntOp::Sub), vec![rem], vec![Arg::Int(hi), Arg::Value(k)]));
    out.push(Op::new(Opcode::Int(IntOp::Min), vec![n], vec![Arg::Value(rem), Arg::Int(vl)]));
    Arg::Value(n)
}

/// An innermost access loop over elements, with its `iter` callback.
fn access_loop(f: &mut Func, op: &Op, vl: i64) -> Option<Op> {
    let (lo, hi) = const_bounds(op)?;
    // Vector streams read whole chunks: chunks must tile the row, so none reads past its end
    // (and out of the table).
    let vl = tiling_chunk(hi - lo, vl)?;
    let iv = op.result();
    let mut streams = HashSet::new();
    let mut narrow = HashMap::new();
    let mut body = Vec::new();
    let mut callback = None;
    // The element index and `k + c` streams of it (a row's second half, ComplEx's imaginary
    // parts): chunk-aligned like k itself.
    let mut element: HashSet<Value> = HashSet::from([iv]);
    for inner in op.body() {
        match inner.opcode {
            Opcode::SlcAlu(IntOp::Add) if matches!(inner.args.as_slice(), [Arg::Value(x), Arg::Int(_)] if *x == iv) =>
            {
                element.insert(inner.result());
                body.push(inner.clone());
            }
            Opcode::SlcMem => {
                let (last, rest) = inner.args.split_last()?;
                let offset_free = rest.iter().all(|a| !a.value().is_some_and(|v| element.contains(&v)));
                if !last.value().is_some_and(|v| element.contains(&v)) || !offset_free {
                    return None;
                }
                streams.insert(inner.result());
                if let Some(m) = inner.args[0].mem().filter(|m| f.mem_decl(*m).elem.narrow().is_some()) {
                    narrow.insert(inner.result(), m);
                }
                let mut args = inner.args.clone();
                args.push(Arg::Int(vl));
                body.push(Op::new(Opcode::SlcVMem, inner.results.clone(), args));
            }
            Opcode::SlcCallback(Event::Iter) if callback.is_none() => callback = Some(inner),
            // Begin and end happen outside the iterations: they do not change.
            Opcode::SlcCallback(Event::Begin | Event::End) => body.push(inner.clone()),
            _ => return None,
        }
    }
    let cb = callback?;
    // Inside the callback: which values are vectors (streams read) and which hold k.
    let mut vectors = HashSet::new();
    let mut ks = HashSet::new();
    let mut reads = Vec::new();
    let mut rest = Vec::new();
    for c in cb.body() {
        if c.opcode == Opcode::SlcFromStream {
            let src = c.args[0].value()?;
            if streams.contains(&src) {
                vectors.insert(c.result());
                if let Some(&m) = narrow.get(&src) {
                    narrow.insert(c.result(), m);
                }
            }
            if src == iv {
                ks.insert(c.result());
            }
            reads.push(c.clone());
        } else {
            rest.push(c.clone());
        }
    }
    let mut prefix = Vec::new();
    let count = if (hi - lo) % vl == 0 {
        Arg::Int(vl)
    } else {
        let k = match ks.iter().next() {
            Some(k) => *k,
            None => {
                let k = f.value("k_");
                reads.push(Op::new(Opcode::SlcFromStream, vec![k], vec![Arg::Value(iv)]));
                ks.insert(k);
                k
            }
        };
        tail_count(f, lo, hi, vl, k, &mut prefix)
    };
    // A vector stream marshals its chunk into the queue; the operand is its address there,
    // from which the core loads the vector.
    let mut chunk_loads = Vec::new();
    let mut as_chunk = HashMap::new();
    let mut loaded = HashSet::new();
    for h in vectors {
        let x = f.value(&format!("{}v", f.name(h)));
        let mut args = vec![Arg::Value(h), Arg::Int(0), count];
        // A narrow memory's chunk: the core's load converts, so it names the memory.
        if let Some(m) = narrow.get(&h) {
            args.push(Arg::Mem(*m));
        }
        chunk_loads.push(Op::new(Opcode::VLoadBuf, vec![x], args));
        as_chunk.insert(h, x);
        loaded.insert(x);
    }
    chunk_loads.sort_by_key(|o| o.args[0].value());
    super::decouple::rename(&mut rest, &as_chunk);
    let mut cb_body = reads;
    cb_body.extend(prefix);
    cb_body.extend(chunk_loads);
    cb_body.extend(vector_body(f, &rest, &ks, &loaded, count)?);
    body.push(Op { regions: vec![cb_body], ..cb.clone() });
    Some(Op {
        opcode: Opcode::SlcFor,
        results: op.results.clone(),
        args: vec![Arg::Int(lo), Arg::Int(hi), Arg::Int(vl)],
        regions: vec![body],
    })
}

/// Vectorizes straight-line `ops` along element index `ks` (values equal to it); `vectors`
/// holds values that already are vectors. `None` if some op does not vectorize.
fn vector_body(
    f: &mut Func,
    ops: &[Op],
    ks: &HashSet<Value>,
    vectors: &HashSet<Value>,
    count: Arg,
) -> Option<Vec<Op>> {
    let mut vec: HashSet<Value> = vectors.clone();
    let mut bcast: HashMap<String, Value> = HashMap::new();
    let mut out = Vec::new();
    // Scalars loaded from written memory (accumulators), and the sums folded into them.
    let mut accumulators: HashSet<Value> = HashSet::new();
    let mut reduced: HashSet<Value> = HashSet::new();
    // The element index and `k + c` values (a row's other part, read at the same offset).
    let mut ks: HashSet<Value> = ks.clone();
    for op in ops {
        let uses_k = |args: &[Arg]| args.iter().any(|a| a.value().is_some_and(|v| ks.contains(&v)));
        let a = &op.args;
        match op.opcode {
            Opcode::Int(IntOp::Add) if matches!(a.as_slice(), [Arg::Value(x), Arg::Int(_)] if ks.contains(x)) =>
            {
                ks.insert(op.result());
                out.push(op.clone());
            }
            Opcode::Load | Opcode::Store => {
                let n = if op.opcode == Opcode::Load { a.len() } else { a.len() - 1 };
                let idx = &a[1..n];
                if !uses_k(idx) {
                    // A reduction's store: once per chunk instead of once per element.
                    let reduction =
                        op.opcode == Opcode::Store && a[n].value().is_some_and(|v| reduced.contains(&v));
                    if (op.opcode == Opcode::Store && !reduction) || uses_k(a) {
                        return None;
                    }
                    if op.opcode == Opcode::Load && a[0].mem().is_some_and(|m| !f.mem_decl(m).readonly) {
                        accumulators.insert(op.result());
                    }
                    out.push(op.clone());
                    continue;
                }
                let (last, rest) = idx.split_last()?;
                if !last.value().is_some_and(|v| ks.contains(&v)) || uses_k(rest) {
                    return None;
                }
                let mut args = a[..n].to_vec();
                args.push(count);
                if op.opcode == Opcode::Load {
                    vec.insert(op.result());
                    out.push(Op::new(Opcode::VLoad, op.results.clone(), args));
                } else {
                    let x = as_vector(f, a[n], &vec, &mut bcast, &mut out);
                    args.push(x);
                    out.push(Op::new(Opcode::VStore, vec![], args));
                }
            }
            Opcode::Float(FloatOp::Add)
                if a.iter().any(|x| x.value().is_some_and(|v| accumulators.contains(&v)))
                    && a.iter().any(|x| x.value().is_some_and(|v| vec.contains(&v)))
                    // Folded back into memory: a scalar read for its value (an int8 row's
                    // bias) is an operand like any other.
                    && ops.iter().any(|o| o.opcode == Opcode::Store && o.args.last() == Some(&Arg::Value(op.result()))) =>
            {
                // `acc + v`, a reduction: add the chunk's lanes to the scalar accumulator.
                let (acc, v) = if a[0].value().is_some_and(|v| accumulators.contains(&v)) {
                    (a[0], a[1])
                } else {
                    (a[1], a[0])
                };
                let h = f.value("h");
                out.push(Op::new(Opcode::VRedSum, vec![h], vec![v, count]));
                out.push(Op::new(Opcode::Float(FloatOp::Add), op.results.clone(), vec![acc, Arg::Value(h)]));
                reduced.insert(op.result());
            }
            Opcode::Float(o) if a.iter().any(|x| x.value().is_some_and(|v| vec.contains(&v))) => {
                if matches!(o, FloatOp::Sub | FloatOp::Div) {
                    return None;
                }
                let x = as_vector(f, a[0], &vec, &mut bcast, &mut out);
                let y = as_vector(f, a[1], &vec, &mut bcast, &mut out);
                vec.insert(op.result());
                out.push(Op::new(Opcode::VFloat(o), op.results.clone(), vec![x, y]));
            }
            Opcode::For => return None,
            _ => {
                if uses_k(a) || a.iter().any(|x| x.value().is_some_and(|v| vec.contains(&v))) {
                    return None;
                }
                out.push(op.clone());
            }
        }
    }
    Some(out)
}

/// `a` as a vector: itself, or a broadcast of the scalar (one per scalar).
fn as_vector(
    f: &mut Func,
    a: Arg,
    vec: &HashSet<Value>,
    bcast: &mut HashMap<String, Value>,
    out: &mut Vec<Op>,
) -> Arg {
    if a.value().is_some_and(|v| vec.contains(&v)) {
        return a;
    }
    let key = format!("{a:?}");
    if let Some(v) = bcast.get(&key) {
        return Arg::Value(*v);
    }
    let hint = match a {
        Arg::Value(v) => format!("{}v", f.name(v)),
        _ => "splat".to_string(),
    };
    let v = f.value(&hint);
    out.push(Op::new(Opcode::VBcast, vec![v], vec![a]));
    bcast.insert(key, v);
    Arg::Value(v)
}
