//! Loop-invariant hoisting into `begin` callbacks (beyond Ember): per-iteration work that does
//! not depend on the iteration moves to the loop's `begin` callback, which the access unit
//! raises once per iteration of the enclosing loop.
//!
//! In an SLC loop `L`'s `iter` callback, a value is invariant when it does not change from one
//! iteration of `L` to the next: a constant, a read of a stream defined outside `L` (an outer
//! loop's row or index, buffered rows included), or a pure op whose operands are all invariant
//! (arithmetic, a read of a buffer operand or of a read-only memory; never an accumulator or a
//! written memory). Inside a chunk loop of the callback (a core `for` over a row's chunks, with
//! constant bounds that its step tiles), the chunk index is invariant too, since the same loop
//! is rebuilt in `begin`. Each invariant vector computed with arithmetic that a non-invariant op
//! reads (a knowledge-graph triple's `h * r`, `h + r` or complex products) is computed in `begin`
//! instead and stored in a row of the core's scratch memory `@hoisted` (one row per value,
//! indexed by chunk column; the chunks do not fit the 16 vector accumulators at 200
//! dimensions); the `iter` callback loads it back with one vector load per chunk. A value is
//! stored only when a chunk's elements are all of it (its lanes past the step are zero, as
//! lane-wise arithmetic on chunk loads leaves them), so loading it back changes nothing. Loads and
//! broadcasts alone are left where they are: reloading a scratch row would cost as much. The
//! stream reads that only the moved ops needed leave the `iter` callback, so the access unit
//! marshals those streams with the `begin` event instead. The pass fires only where at least one
//! such arithmetic op moves; otherwise the function is returned unchanged.

use super::{PassError, dce, decouple};
use crate::ir::{Arg, Elem, Event, FloatOp, Func, MemId, Op, Opcode, Value, walk};
use std::collections::{HashMap, HashSet};

/// The name of the scratch memory holding the hoisted values (one row per value, one column
/// per element of the chunk loop's range); code generation places it in the core's scratch.
pub const HOISTED: &str = "hoisted";

/// The scratch rows handed out so far: how many, and the widest.
#[derive(Debug, Default)]
struct Rows {
    count: u64,
    width: u64,
}

/// Hoists loop-invariant callback code of SLC function `f` into `begin` callbacks. Fails if `f`
/// already declares a memory named [`HOISTED`].
pub fn hoist(f: &Func) -> Result<Func, PassError> {
    if f.mem_named(HOISTED).is_some() {
        return Err(PassError::new("hoist", format!("the function already has a memory @{HOISTED}")));
    }
    let mut out = f.clone();
    let mut body = std::mem::take(&mut out.body);
    // The scratch memory's id is the next one; it is declared once its shape is known.
    let mem = MemId(out.mems.len() as u32);
    let mut rows = Rows::default();
    visit(&mut out, &mut body, mem, &mut rows);
    if rows.count == 0 {
        return Ok(f.clone());
    }
    out.mem(HOISTED, Elem::F32, vec![rows.count, rows.width], false);
    out.body = body;
    // The moved ops' originals, and the stream reads only they used.
    dce::dce(&mut out);
    Ok(out)
}

fn visit(f: &mut Func, ops: &mut [Op], mem: MemId, rows: &mut Rows) {
    for op in ops.iter_mut() {
        if op.opcode == Opcode::SlcFor {
            hoist_loop(f, op, mem, rows);
        }
        for r in &mut op.regions {
            visit(f, r, mem, rows);
        }
    }
}

/// Whether `op` may be computed once and reused: no side effect, and its result depends only on
/// its operands (a written memory or an accumulator may change between iterations).
fn reusable(f: &Func, op: &Op) -> bool {
    let readonly = || op.args.first().and_then(|a| a.mem()).is_some_and(|m| f.mem_decl(m).readonly);
    op.regions.is_empty()
        && match op.opcode {
            Opcode::Int(_)
            | Opcode::Float(_)
            | Opcode::IToF
            | Opcode::VFloat(_)
            | Opcode::VBcast
            | Opcode::VRedSum
            | Opcode::VLoadBuf => true,
            Opcode::Load | Opcode::VLoad => readonly(),
            _ => false,
        }
}

/// Whether every value operand of `op` is in `invariant`.
fn operands_in(op: &Op, invariant: &HashSet<Value>) -> bool {
    op.value_args().all(|v| invariant.contains(&v))
}

/// A chunk loop's bounds and step, if it qualifies: constant, non-negative, tiled by the step,
/// and a body without nested regions.
fn chunk_loop(op: &Op) -> Option<(i64, i64, i64)> {
    if op.opcode != Opcode::For || op.body().iter().any(|o| !o.regions.is_empty()) {
        return None;
    }
    let (lo, hi, step) = match op.args.as_slice() {
        [Arg::Int(lo), Arg::Int(hi)] => (*lo, *hi, 1),
        [Arg::Int(lo), Arg::Int(hi), Arg::Int(s)] => (*lo, *hi, *s),
        _ => return None,
    };
    (lo >= 0 && hi > lo && step > 0 && (hi - lo) % step == 0).then_some((lo, hi, step))
}

/// Hoists from `l`'s `iter` callback into its `begin` callback (created if missing); returns
/// whether anything moved.
fn hoist_loop(f: &mut Func, l: &mut Op, mem: MemId, rows: &mut Rows) -> bool {
    let Some(iter_at) = l.body().iter().position(|o| o.opcode == Opcode::SlcCallback(Event::Iter)) else {
        return false;
    };
    // Everything `l` defines changes with its iterations (its streams, its induction variable).
    let mut inside: HashSet<Value> = HashSet::from([l.result()]);
    walk(l.body(), &mut |o| inside.extend(o.results.iter().copied()));

    let callback = &l.regions[0][iter_at].regions[0];
    let mut invariant: HashSet<Value> = HashSet::new();
    for o in callback {
        let outer_read = o.opcode == Opcode::SlcFromStream && o.value_args().all(|s| !inside.contains(&s));
        if outer_read || (reusable(f, o) && operands_in(o, &invariant)) {
            invariant.extend(o.results.iter().copied());
        }
    }

    let mut begin_code: Vec<Op> = Vec::new();
    let mut begin_reads: HashMap<Value, Value> = existing_begin_reads(l);
    let mut rewrites: Vec<(usize, Vec<(usize, u64)>)> = Vec::new();
    for (at, o) in callback.iter().enumerate() {
        let Some((_, hi, step)) = chunk_loop(o) else { continue };
        let stored = stored_values(f, o, &invariant, step);
        if stored.is_empty() {
            continue;
        }
        let first_row = rows.count;
        rows.count += stored.len() as u64;
        rows.width = rows.width.max(hi as u64);
        let placed: Vec<(usize, u64)> =
            stored.iter().enumerate().map(|(n, &i)| (i, first_row + n as u64)).collect();
        begin_code.extend(begin_copy(f, callback, at, &placed, mem, step, &mut begin_reads));
        rewrites.push((at, placed));
    }
    if rewrites.is_empty() {
        return false;
    }
    // The iter callback loads each stored value back from its row, chunk by chunk.
    let callback = &mut l.regions[0][iter_at].regions[0];
    for (at, placed) in rewrites {
        let chunk_op = &mut callback[at];
        let (iv, step) = (chunk_op.result(), chunk_op.args.get(2).copied().unwrap_or(Arg::Int(1)));
        for (i, row) in placed {
            let o = &mut chunk_op.regions[0][i];
            *o = Op::new(
                Opcode::VLoad,
                o.results.clone(),
                vec![Arg::Mem(mem), Arg::Int(row as i64), Arg::Value(iv), step],
            );
        }
    }
    add_to_begin(l, iter_at, begin_code);
    true
}

/// The stream reads of `l`'s existing `begin` callback, by stream.
fn existing_begin_reads(l: &Op) -> HashMap<Value, Value> {
    l.body()
        .iter()
        .filter(|o| o.opcode == Opcode::SlcCallback(Event::Begin))
        .flat_map(|cb| cb.body())
        .filter(|o| o.opcode == Opcode::SlcFromStream)
        .filter_map(|o| Some((o.args.first()?.value()?, o.result())))
        .collect()
}

/// The positions in chunk loop `chunks`' body of the invariant values worth storing: vectors
/// computed with arithmetic and read by an op that is not invariant. Only vectors whose lanes
/// from the loop's step on are zero qualify (built lane-wise from loads of at most a step's
/// elements), so a step's elements stored and loaded back give the same vector.
fn stored_values(f: &Func, chunks: &Op, invariant: &HashSet<Value>, step: i64) -> Vec<usize> {
    let mut inv = invariant.clone();
    inv.insert(chunks.result());
    // Invariant values that cost arithmetic to recompute.
    let mut computed: HashSet<Value> = HashSet::new();
    // Vectors that are zero from lane `step` on.
    let mut within_step: HashSet<Value> = HashSet::new();
    for o in chunks.body() {
        let Some(&r) = o.results.first() else { continue };
        let fits = match o.opcode {
            Opcode::VLoad | Opcode::VLoadBuf => {
                o.args.last().and_then(|a| a.int()).is_some_and(|n| n <= step)
            }
            // 0 op 0 is 0 for each of these (not for a division).
            Opcode::VFloat(FloatOp::Add | FloatOp::Sub | FloatOp::Mul | FloatOp::Max) => {
                o.value_args().all(|v| within_step.contains(&v))
            }
            _ => false,
        };
        if fits {
            within_step.insert(r);
        }
        if reusable(f, o) && operands_in(o, &inv) {
            inv.insert(r);
            if matches!(o.opcode, Opcode::VFloat(_)) || o.value_args().any(|v| computed.contains(&v)) {
                computed.insert(r);
            }
        }
    }
    let variant = |o: &&Op| o.results.is_empty() || o.results.iter().any(|r| !inv.contains(r));
    let read_by_variant: HashSet<Value> =
        chunks.body().iter().filter(variant).flat_map(|o| o.value_args()).collect();
    let worth = |r: &Value| computed.contains(r) && read_by_variant.contains(r) && within_step.contains(r);
    chunks
        .body()
        .iter()
        .enumerate()
        .filter(|(_, o)| matches!(o.opcode, Opcode::VFloat(_)) && o.results.first().is_some_and(worth))
        .map(|(i, _)| i)
        .collect()
}

/// The `begin` code computing the values `placed` (body position, row) of the chunk loop at
/// `callback[at]` and storing them: the ops they depend on, renamed, with the callback's stream
/// reads shared through `reads` (stream to the value `begin` reads it into).
fn begin_copy(
    f: &mut Func,
    callback: &[Op],
    at: usize,
    placed: &[(usize, u64)],
    mem: MemId,
    step: i64,
    reads: &mut HashMap<Value, Value>,
) -> Vec<Op> {
    let chunks = &callback[at];
    // What the stored values depend on, walking back through the loop body, then the callback.
    let mut needed: HashSet<Value> = placed.iter().map(|&(i, _)| chunks.body()[i].result()).collect();
    let keep_body = depended_on(chunks.body(), &mut needed);
    let keep_top = depended_on(&callback[..at], &mut needed);
    // Copies get fresh results; their operands are renamed once all copies exist.
    let mut rename: HashMap<Value, Value> = HashMap::new();
    let fresh = |f: &mut Func, v: Value, rename: &mut HashMap<Value, Value>| {
        let hint = f.name(v).to_string();
        let n = f.value(&hint);
        rename.insert(v, n);
        n
    };
    let copy = |f: &mut Func, o: &Op, rename: &mut HashMap<Value, Value>| {
        let mut c = o.clone();
        c.results = o.results.iter().map(|&r| fresh(f, r, rename)).collect();
        c
    };
    let mut code = Vec::new();
    for (o, _) in callback[..at].iter().zip(&keep_top).filter(|(_, k)| **k) {
        if o.opcode == Opcode::SlcFromStream
            && let Some(stream) = o.args.first().and_then(|a| a.value())
        {
            // One read per stream in `begin`: a second would pop a second operand.
            let v = match reads.get(&stream) {
                Some(&v) => v,
                None => {
                    let c = copy(f, o, &mut rename);
                    reads.insert(stream, c.result());
                    let v = c.result();
                    code.push(c);
                    v
                }
            };
            rename.insert(o.result(), v);
            continue;
        }
        code.push(copy(f, o, &mut rename));
    }
    let iv = fresh(f, chunks.result(), &mut rename);
    let mut loop_body: Vec<Op> = chunks
        .body()
        .iter()
        .zip(&keep_body)
        .filter(|(_, k)| **k)
        .map(|(o, _)| copy(f, o, &mut rename))
        .collect();
    for &(i, row) in placed {
        let value = chunks.body()[i].result();
        loop_body.push(Op::new(
            Opcode::VStore,
            vec![],
            vec![Arg::Mem(mem), Arg::Int(row as i64), Arg::Value(iv), Arg::Int(step), Arg::Value(value)],
        ));
    }
    code.push(Op {
        opcode: Opcode::For,
        results: vec![iv],
        args: chunks.args.clone(),
        regions: vec![loop_body],
    });
    decouple::rename(&mut code, &rename);
    code
}

/// Which of `ops` compute a value in `needed`, walking back; adds their operands to `needed`.
fn depended_on(ops: &[Op], needed: &mut HashSet<Value>) -> Vec<bool> {
    let mut keep = vec![false; ops.len()];
    for (i, o) in ops.iter().enumerate().rev() {
        if o.results.iter().any(|r| needed.contains(r)) {
            keep[i] = true;
            needed.extend(o.value_args());
        }
    }
    keep
}

/// Adds `code` to `l`'s `begin` callback (its stream reads after the callback's own, the rest at
/// its end), or makes it the callback, right before the `iter` callback at `iter_at`.
fn add_to_begin(l: &mut Op, iter_at: usize, code: Vec<Op>) {
    let body = &mut l.regions[0];
    match body.iter().position(|o| o.opcode == Opcode::SlcCallback(Event::Begin)) {
        Some(b) => {
            let (reads, rest): (Vec<Op>, Vec<Op>) =
                code.into_iter().partition(|o| o.opcode == Opcode::SlcFromStream);
            let cb = &mut body[b].regions[0];
            let first_other = cb.iter().position(|o| o.opcode != Opcode::SlcFromStream).unwrap_or(cb.len());
            cb.splice(first_other..first_other, reads);
            cb.extend(rest);
        }
        None => body.insert(
            iter_at,
            Op {
                opcode: Opcode::SlcCallback(Event::Begin),
                results: vec![],
                args: vec![],
                regions: vec![code],
            },
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{text, verify};

    /// A triple's candidates: `h * r` is the same for every candidate, `(h * r) * t` is not.
    const SCORES: &str = "func @score : slc {
  mem @tables : f32[8, 20] readonly
  mem @out : f32[4]
  %q = slc.for 0, 2 {
    %h = slc.buf @tables, %q
    %c = slc.for 0, 2 {
      %t = slc.buf @tables, %c
      slc.on_iter {
        %c_ = slc.from_stream %c
        %h_ = slc.from_stream %h
        %t_ = slc.from_stream %t
        %k = for 0, 20, 10 {
          %hv = vload.buf %h_, %k, 10
          %tv = vload.buf %t_, %k, 10
          %hh = vfmul %hv, %hv
          %s = vfmul %hh, %tv
          %x = vredsum %s, 10
          store @out, %c_, %x
        }
      }
    }
  }
}
";

    fn parsed(t: &str) -> Func {
        let f = text::parse(t).expect("parses");
        verify::verify(&f).expect("verifies");
        f
    }

    /// The callback of `event` on the loop whose induction variable is named `iv`.
    fn callback<'a>(f: &'a Func, iv: &str, event: Event) -> Option<&'a [Op]> {
        let mut found = None;
        walk(&f.body, &mut |o| {
            if o.opcode == Opcode::SlcFor && f.name(o.result()) == iv {
                found = o.body().iter().find(|c| c.opcode == Opcode::SlcCallback(event)).map(|c| c.body());
            }
        });
        found
    }

    fn opcodes(ops: &[Op]) -> Vec<String> {
        let mut names = Vec::new();
        walk(ops, &mut |o| names.push(o.opcode.name()));
        names
    }

    #[test]
    fn invariant_arithmetic_moves_to_begin() {
        let f = parsed(SCORES);
        let g = hoist(&f).expect("hoists");
        verify::verify(&g).expect("the result verifies");
        let m = g.mem_named(HOISTED).expect("a scratch memory");
        assert_eq!(g.mem_decl(m).shape, vec![1, 20]);
        let begin = callback(&g, "c", Event::Begin).expect("a begin callback");
        assert_eq!(opcodes(begin), ["slc.from_stream", "for", "vload.buf", "vfmul", "vstore"]);
        let iter = callback(&g, "c", Event::Iter).expect("the iter callback");
        // The head's row is no longer read per candidate; its square is loaded back.
        assert_eq!(
            opcodes(iter),
            ["slc.from_stream", "slc.from_stream", "for", "vload.buf", "vload", "vfmul", "vredsum", "store"]
        );
        let text = text::print(&g);
        assert!(text.contains("%hh = vload @hoisted, 0, %k, 10"), "{text}");
        assert!(text.contains("%s = vfmul %hh, %tv"), "{text}");
        // The text form round-trips.
        assert_eq!(text::print(&parsed(&text)), text);
    }

    /// The pass finds nothing to hoist in `text` and returns it as it was.
    fn unchanged(text: &str) {
        let f = parsed(text);
        assert_eq!(hoist(&f).expect("runs"), f);
    }

    #[test]
    fn nothing_invariant_leaves_the_function_unchanged() {
        // `h * t` depends on the candidate; the head's row alone is only a load.
        unchanged(&SCORES.replace("%hh = vfmul %hv, %hv", "%hh = vfmul %hv, %tv"));
        // No outer stream: everything the callback reads changes with the candidate.
        unchanged(&SCORES.replace("%h_ = slc.from_stream %h", "%h_ = slc.from_stream %t"));
    }

    #[test]
    fn written_memories_and_accumulators_are_not_invariant() {
        unchanged(
            &SCORES
                .replace("mem @out : f32[4]", "mem @out : f32[4]\n  mem @w : f32[20]")
                .replace("%hv = vload.buf %h_, %k, 10", "%hv = vload @w, %k, 10"),
        );
    }

    #[test]
    fn vectors_wider_than_a_chunk_stay() {
        // `h + 1` has ones past the chunk's 10 lanes, which a chunk of scratch would not keep.
        unchanged(
            &SCORES
                .replace("%t_ = slc.from_stream %t", "%t_ = slc.from_stream %t\n        %one = vbcast 1.0")
                .replace("%hh = vfmul %hv, %hv", "%hh = vfadd %hv, %one"),
        );
    }

    #[test]
    fn an_existing_begin_callback_keeps_its_reads_first() {
        let f = parsed(&SCORES.replace(
            "      slc.on_iter {",
            "      slc.on_begin {\n        %h0 = slc.from_stream %h\n        store @out, 0, 0.0\n      }\n      slc.on_iter {",
        ));
        let g = hoist(&f).expect("hoists");
        verify::verify(&g).expect("the result verifies");
        let begin = callback(&g, "c", Event::Begin).expect("a begin callback");
        // The head's row is read once, by the callback's own read.
        assert_eq!(opcodes(begin), ["slc.from_stream", "store", "for", "vload.buf", "vfmul", "vstore"]);
        assert!(text::print(&g).contains("vload.buf %h0, %k1, 10"), "{}", text::print(&g));
    }

    #[test]
    fn an_existing_hoisted_memory_is_an_error() {
        let f =
            parsed(&SCORES.replace("mem @out : f32[4]", "mem @out : f32[4]\n  mem @hoisted : f32[1, 20]"));
        assert!(hoist(&f).is_err());
    }
}
