//! Bufferization of compound values (Ember's BufferCompoundTypes): a whole row per callback.
//!
//! A vectorized access loop over all the elements of rows (bounds `0..row length`, only vector
//! streams `slc.vmem` over rows and an `iter` callback) is replaced, in its parent loop, by one
//! buffer stream per row (`slc.buf`: the row marshaled as one operand; streams reading one row
//! at two offsets, `k` and `k + c`, share it) and one `iter` callback of the parent that holds
//! the loop as a core loop reading the buffers (`vload.buf`). The unit then sends one callback
//! per row instead of one per chunk.

use super::decouple::rename;
use crate::ir::{Arg, Event, Func, IntOp, Op, Opcode, Value};
use std::collections::HashMap;

/// Bufferizes every qualifying loop of SLC function `f`.
pub fn bufferize(f: &Func) -> Func {
    let mut out = f.clone();
    let mut body = std::mem::take(&mut out.body);
    walk_loops(&mut out, &mut body);
    for op in body.iter_mut() {
        hoist_rows(op);
    }
    out.body = body;
    out
}

/// Moves buffer streams whose row does not change with their loop (a knowledge-graph triple's
/// head and relation rows, read for each candidate tail) out to the loop that sets the row, so
/// the unit fetches them once per iteration there.
fn hoist_rows(l: &mut Op) {
    if l.opcode != Opcode::SlcFor {
        return;
    }
    let body = &mut l.regions[0];
    let Some(c) = body.iter().position(|o| o.opcode == Opcode::SlcFor) else { return };
    hoist_rows(&mut body[c]);
    // Values the child loop defines (its induction variable and streams) pin a row to it.
    let child = &body[c];
    let mut local: Vec<Value> = vec![child.result()];
    local.extend(child.body().iter().flat_map(|o| o.results.iter().copied()));
    let (moved, kept): (Vec<Op>, Vec<Op>) = child
        .body()
        .iter()
        .cloned()
        .partition(|o| o.opcode == Opcode::SlcBuf && !o.value_args().any(|v| local.contains(&v)));
    if moved.is_empty() {
        return;
    }
    body[c].regions[0] = kept;
    for (n, op) in moved.into_iter().enumerate() {
        body.insert(c + n, op);
    }
}

fn walk_loops(f: &mut Func, ops: &mut [Op]) {
    for op in ops.iter_mut() {
        if op.opcode != Opcode::SlcFor {
            continue;
        }
        if let Some(new_body) = try_parent(f, op) {
            op.regions = vec![new_body];
        }
        walk_loops(f, &mut op.regions[0]);
    }
}

/// If `parent`'s child loop qualifies, `parent`'s new body.
fn try_parent(f: &mut Func, parent: &Op) -> Option<Vec<Op>> {
    let body = parent.body();
    let at = body.iter().position(|o| o.opcode == Opcode::SlcFor)?;
    let child = &body[at];
    if body.iter().any(|o| o.opcode == Opcode::SlcCallback(Event::Iter)) {
        return None;
    }
    let (lo, hi, step) = match child.args.as_slice() {
        [Arg::Int(lo), Arg::Int(hi), Arg::Int(vl)] if *lo == 0 && *vl > 1 => (*lo, *hi, *vl),
        _ => return None,
    };
    let k = child.result();
    let mut bufs: Vec<Op> = Vec::new();
    let mut callbacks: HashMap<Event, &Op> = HashMap::new();
    // `k + c` indices (a row read at two offsets) and, per vector stream, its buffer and offset.
    let mut offset_of: HashMap<Value, i64> = HashMap::from([(k, 0)]);
    let mut buffer_of: HashMap<Value, (Value, i64)> = HashMap::new();
    let mut row_len = hi;
    for inner in child.body() {
        match inner.opcode {
            Opcode::SlcAlu(IntOp::Add) => match inner.args.as_slice() {
                [Arg::Value(x), Arg::Int(c)] if *x == k => {
                    offset_of.insert(inner.result(), *c);
                    row_len = row_len.max(hi + c);
                }
                _ => return None,
            },
            Opcode::SlcVMem => {
                let m = inner.args[0].mem()?;
                let n = inner.args.len();
                let offset = inner.args[n - 2].value().and_then(|v| offset_of.get(&v).copied())?;
                // Whole rows, chunk by chunk (with offsets, the chunks of the row's parts); an
                // int8 row's values, whose scale and bias ride along in the buffer.
                let (elems, elem) = (f.mem_decl(m).row_elems() as i64, f.mem_decl(m).elem);
                if elems != row_len && !(elem == crate::ir::Elem::I8 && elems == row_len + 8) {
                    return None;
                }
                let row = &inner.args[..n - 2];
                let buffer = match bufs.iter().find(|b| b.args.as_slice() == row) {
                    Some(b) => b.result(),
                    None => {
                        bufs.push(Op::new(Opcode::SlcBuf, inner.results.clone(), row.to_vec()));
                        inner.result()
                    }
                };
                buffer_of.insert(inner.result(), (buffer, offset));
            }
            Opcode::SlcCallback(e) => {
                callbacks.insert(e, inner);
            }
            _ => return None,
        }
    }
    callbacks.get(&Event::Iter)?;
    // The parent's new iter callback: the child's begin, a core loop over the chunks, its end.
    let mut reads: Vec<Op> = Vec::new();
    let mut read_of: HashMap<Value, Value> = HashMap::new();
    let mut alias: HashMap<Value, Value> = HashMap::new();
    let mut sections: Vec<Vec<Op>> = Vec::new();
    // Each read of a vector stream (before reads of one buffer merge): its offset in the row.
    let mut chunk_offset: HashMap<Value, i64> = HashMap::new();
    let kc = f.value("k");
    for e in Event::ALL {
        let Some(cb) = callbacks.get(&e) else {
            sections.push(Vec::new());
            continue;
        };
        let mut ops = Vec::new();
        for c in cb.body() {
            if c.opcode != Opcode::SlcFromStream {
                ops.push(c.clone());
                continue;
            }
            let mut src = c.args[0].value()?;
            if let Some(&(buffer, offset)) = buffer_of.get(&src) {
                // A vector stream's read becomes its buffer's, at its offset in the row.
                src = buffer;
                chunk_offset.insert(c.result(), offset);
            }
            if src == k {
                alias.insert(c.result(), kc);
            } else if let Some(&r) = read_of.get(&src) {
                alias.insert(c.result(), r);
            } else {
                read_of.insert(src, c.result());
                reads.push(Op::new(Opcode::SlcFromStream, c.results.clone(), vec![Arg::Value(src)]));
            }
        }
        sections.push(ops);
    }
    // In the loop, each chunk load reads its buffer at the chunk's offset (plus its stream's
    // offset in the row).
    let mut loop_body = Vec::new();
    let mut iter_ops = std::mem::take(&mut sections[1]);
    for op in &mut iter_ops {
        if op.opcode != Opcode::VLoadBuf {
            continue;
        }
        let Some(h) = op.args[0].value() else { continue };
        if let Some(&o) = chunk_offset.get(&h) {
            if o == 0 {
                op.args[1] = Arg::Value(kc);
            } else {
                let at = f.value("kc");
                loop_body.push(Op::new(Opcode::Int(IntOp::Add), vec![at], vec![Arg::Value(kc), Arg::Int(o)]));
                op.args[1] = Arg::Value(at);
            }
        }
    }
    rename(&mut iter_ops, &alias);
    loop_body.extend(iter_ops);
    let mut cb_body = reads;
    let mut begin = std::mem::take(&mut sections[0]);
    let mut end = std::mem::take(&mut sections[2]);
    rename(&mut begin, &alias);
    rename(&mut end, &alias);
    cb_body.extend(begin);
    // Loop-invariant ops (the broadcast of a lookup's weight) move before the loop.
    cb_body.extend(super::vectorize::hoist_invariants(Op {
        opcode: Opcode::For,
        results: vec![kc],
        args: vec![Arg::Int(lo), Arg::Int(hi), Arg::Int(step)],
        regions: vec![loop_body],
    }));
    cb_body.extend(end);
    let mut new_body: Vec<Op> = body[..at].to_vec();
    new_body.extend(bufs);
    new_body.extend(body[at + 1..].iter().cloned());
    new_body.push(Op {
        opcode: Opcode::SlcCallback(Event::Iter),
        results: vec![],
        args: vec![],
        regions: vec![cb_body],
    });
    Some(new_body)
}
