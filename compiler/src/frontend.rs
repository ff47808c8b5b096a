//! The front end: a workload to its loop-level IR (what PyTorch computes, as loops).
//!
//! An embedding bag (and GNN aggregation, a bag per destination vertex) is the loop nest of
//! Ember's artifact: for each bag `b` of each table, `out[b, k] = pool over j in
//! offsets[b]..offsets[b+1] of w[j] * table[indices[j] + table_base(b), k]`. Tables are stacked
//! into one memory (`@tables`, row `t * rows + index`; when `[[table_indices]]` give tables
//! rows of their own, row `@table_base[t] + index`, the table's first row read from a small
//! array, as FBGEMM's kernels read `weights_offsets[t]`). Accumulation is in `@out`: it is set to
//! the pooling's identity first, then each lookup is folded in, one lookup after the other in
//! bag order (that order, with one rounding per multiply and per add, is the reference's).
//!
//! - sum: `out = 0`, `out += w * x`;
//! - mean: the sum, then `out *= 1 / max(len, 1)` (as FBGEMM, which PyTorch's CPU path uses,
//!   scales by the reciprocal of the length);
//! - max: `out = m`, `out = max(out, x)`, where `m` is `f32::MIN` for a non-empty bag and 0
//!   for an empty one (PyTorch gives 0 for an empty bag; table values are finite, so starting
//!   at `f32::MIN` instead of `-inf` gives the same maximum).

use crate::ir::build::{Builder, i, v};
use crate::ir::opcode::FloatOp;
use crate::ir::{Arg, Elem, Func, IntOp, Level, MemId, Opcode, Value};
use crate::workload::{KgModel, Pooling, TtShape, WorkloadSpec};

/// The memories of an embedding-bag function, by name.
pub const OFFSETS: &str = "offsets";
/// Row ids of the lookups.
pub const INDICES: &str = "indices";
/// Per-lookup weights.
pub const WEIGHTS: &str = "weights";
/// The stacked tables.
pub const TABLES: &str = "tables";
/// The first stacked row of each table, when tables differ in rows.
pub const TABLE_BASE: &str = "table_base";
/// Head entity of each triple (knowledge-graph scoring).
pub const HEADS: &str = "heads";
/// Relation of each triple (knowledge-graph scoring).
pub const RELS: &str = "rels";
/// The relation table (knowledge-graph scoring; `@tables` holds the entities).
pub const RELATION_TABLE: &str = "relation_table";
/// Source vertex of each edge (message passing).
pub const SRC: &str = "src";
/// Destination vertex of each edge (message passing).
pub const DST: &str = "dst";
/// The output rows.
pub const OUT: &str = "out";
/// TT-EmbeddingBag: the stored-row descriptors of a lookup's slices ([`tt_descriptors`]).
pub const TT_ROWS: &str = "tt_rows";
/// TT-EmbeddingBag: the core's scratch rows (a lookup's slices, then the partial contraction).
pub const TT_SCRATCH: &str = "tt_scratch";
/// TT-EmbeddingBag: the partial contraction `G1 x G2`, in the core's scratch after the slices.
pub const TT_PARTIAL: &str = "tt_partial";
/// With a padding index and mean or max pooling: the bag's count of lookups that are not
/// padding, in the core's scratch.
pub const BAG_COUNT: &str = "bag_count";
/// Int8 tables: the same rows as `@tables`, read as f32 words for each row's scale and bias
/// (after its `dim` values).
pub const ROW_PARAMS: &str = "row_params";
/// Int8 tables: the current lookup's scale and bias, in the core's scratch (after the count),
/// so the row's element callbacks read them instead of carrying them as operands.
pub const QUANT: &str = "quant";

/// The element type of `spec`'s table memories: f32, or f16/bf16, whose loads convert to f32
/// (a validated spec has no other).
fn table_elem(spec: &WorkloadSpec) -> Elem {
    Elem::of_table(spec.dtype).unwrap_or(Elem::F32)
}

/// The loop-level function of `spec` (a resolved spec) over bags `0..bags`, for an instance
/// with `lookups` lookups in all.
pub fn lower(spec: &WorkloadSpec, lookups: u64) -> Func {
    let mut f = Func::new(&spec.name, Level::Loop);
    let bags = spec.bags();
    let dim = spec.dim as i64;
    let offsets = f.mem(OFFSETS, Elem::U32, vec![bags + 1], true);
    let indices = f.mem(INDICES, Elem::U32, vec![lookups.max(1)], true);
    let weights = spec.weights.then(|| f.mem(WEIGHTS, Elem::F32, vec![lookups.max(1)], true));
    // With a padding index, each table's padding row follows the tables (`Layout::padding`).
    let table_rows = match spec.padding_idx {
        Some(_) => crate::layout::first_padding_row(spec) + spec.tables as u64,
        None => spec.stacked_rows(),
    };
    // Tables of different rows: each one's first row from `@table_base`.
    let table_base =
        (!spec.uniform_tables()).then(|| f.mem(TABLE_BASE, Elem::U32, vec![spec.tables as u64], true));
    let int8 = spec.dtype == crate::workload::Dtype::Int8;
    // An int8 row is `dim` values then its f32 scale and bias: the row's pitch is `dim + 8`.
    let pitch = if int8 { u64::from(spec.dim) + 8 } else { u64::from(spec.dim) };
    let tables = f.mem(TABLES, table_elem(spec), vec![table_rows, pitch], true);
    let params = int8.then(|| f.mem(ROW_PARAMS, Elem::F32, vec![table_rows, pitch / 4], true));
    let quant = int8.then(|| f.mem(QUANT, Elem::F32, vec![2], false));
    let out = f.mem(OUT, Elem::F32, vec![bags, spec.dim as u64], false);
    // With a padding index, mean and max count the bag's other lookups in the core's scratch.
    let count = (spec.padding_idx.is_some() && spec.pooling != Pooling::Sum)
        .then(|| f.mem(BAG_COUNT, Elem::F32, vec![1], false));
    let m = |x: MemId| Arg::Mem(x);
    let mut b = Builder::new(&mut f);
    let (bag, lo, hi, base) = open_bag(&mut b, spec, offsets, table_base);
    // The pooling's identity.
    let init = match spec.pooling {
        Pooling::Sum | Pooling::Mean => Arg::Float(0.0),
        Pooling::Max => {
            // -1 for a non-empty bag, 0 for an empty one, times f32::MAX: f32::MIN or +0.0
            // (multiplying 0 by f32::MIN would give -0.0).
            let len = b.val(Opcode::Int(IntOp::Sub), "len", vec![v(hi), v(lo)]);
            let nonempty = b.val(Opcode::Int(IntOp::Min), "nonempty", vec![v(len), i(1)]);
            let neg = b.val(Opcode::Int(IntOp::Sub), "neg", vec![i(0), v(nonempty)]);
            let flag = b.val(Opcode::IToF, "flag", vec![v(neg)]);
            v(fop(&mut b, FloatOp::Mul, "init", v(flag), Arg::Float(f32::MAX)))
        }
    };
    let k = b.open(Opcode::For, "k", vec![i(0), i(dim)]).expect("iv");
    b.op(Opcode::Store, "", vec![m(out), v(bag), v(k), init]);
    b.close();
    if let Some(c) = count {
        b.op(Opcode::Store, "", vec![m(c), i(0), Arg::Float(0.0)]);
    }
    // The bag's table's padding row (see below).
    let first_pad = crate::layout::first_padding_row(spec) as i64;
    let pad_row = spec.padding_idx.map(|_| match base {
        Some((table, _)) if table_base.is_some() => {
            v(b.val(Opcode::Int(IntOp::Add), "pad", vec![v(table), i(first_pad)]))
        }
        Some((_, base)) => {
            // Table `base / rows`'s padding row.
            let table = b.val(Opcode::Int(IntOp::Div), "tp", vec![v(base), i(spec.rows as i64)]);
            v(b.val(Opcode::Int(IntOp::Add), "pad", vec![v(table), i(first_pad)]))
        }
        None => i(first_pad),
    });
    let j = b.open(Opcode::For, "j", vec![v(lo), v(hi)]).expect("iv");
    let index = b.val(Opcode::Load, "i", vec![m(indices), v(j)]);
    let mut row = match base {
        Some((_, base)) => b.val(Opcode::Int(IntOp::Add), "r", vec![v(index), v(base)]),
        None => index,
    };
    let w = weights.map(|w| b.val(Opcode::Load, "w", vec![m(w), v(j)]));
    // PyTorch's `padding_idx`: the access unit redirects a padding lookup to its table's padding
    // row (zeros, which leave a sum as it is, or f32::MIN, which leaves a maximum), with its
    // ALU streams only: `ne` = 1 for a lookup that counts, 0 for padding (`(i + R - p) % R` is 0
    // only for `i = p`, as row ids are below `R`), and the row moves by `(1 - ne) * (P - r)`.
    let counts = spec.padding_idx.zip(pad_row).map(|(p, pad_row)| {
        let rows = spec.rows as i64;
        let shifted = b.val(Opcode::Int(IntOp::Add), "u", vec![v(index), i(rows - i64::from(p))]);
        let e = b.val(Opcode::Int(IntOp::Rem), "e", vec![v(shifted), i(rows)]);
        let e1 = b.val(Opcode::Int(IntOp::Add), "e1", vec![v(e), i(rows - 1)]);
        let ne = b.val(Opcode::Int(IntOp::Div), "ne", vec![v(e1), i(rows)]);
        let eq = b.val(Opcode::Int(IntOp::Sub), "eq", vec![i(1), v(ne)]);
        let gap = b.val(Opcode::Int(IntOp::Sub), "gap", vec![pad_row, v(row)]);
        let shift = b.val(Opcode::Int(IntOp::Mul), "shift", vec![v(eq), v(gap)]);
        row = b.val(Opcode::Int(IntOp::Add), "rp", vec![v(row), v(shift)]);
        ne
    });
    // Mean and max count the lookups that are not padding, on the core.
    if let (Some(c), Some(ne)) = (count, counts) {
        let kept = b.val(Opcode::IToF, "kept", vec![v(ne)]);
        let n = b.val(Opcode::Load, "n", vec![m(c), i(0)]);
        let n1 = fop(&mut b, FloatOp::Add, "n1", v(n), v(kept));
        b.op(Opcode::Store, "", vec![m(c), i(0), v(n1)]);
    }
    // An int8 row's scale and bias, read by the access unit, kept in the core's scratch.
    if let (Some(params), Some(quant)) = (params, quant) {
        for (n, name) in ["scale", "bias"].into_iter().enumerate() {
            let x = b.val(Opcode::Load, name, vec![m(params), v(row), i(dim / 4 + n as i64)]);
            b.op(Opcode::Store, "", vec![m(quant), i(n as i64), v(x)]);
        }
    }
    let k = b.open(Opcode::For, "k", vec![i(0), i(dim)]).expect("iv");
    let mut x = b.val(Opcode::Load, "x", vec![m(tables), v(row), v(k)]);
    if let Some(quant) = quant {
        // Dequantized as FBGEMM does: q * scale + bias.
        let scale = b.val(Opcode::Load, "sc", vec![m(quant), i(0)]);
        let bias = b.val(Opcode::Load, "bi", vec![m(quant), i(1)]);
        let q = fop(&mut b, FloatOp::Mul, "qs", v(x), v(scale));
        x = fop(&mut b, FloatOp::Add, "dq", v(q), v(bias));
    }
    if let Some(w) = w {
        x = fop(&mut b, FloatOp::Mul, "wx", v(w), v(x));
    }
    let acc = b.val(Opcode::Load, "a", vec![m(out), v(bag), v(k)]);
    let fold = if spec.pooling == Pooling::Max { FloatOp::Max } else { FloatOp::Add };
    let s = fop(&mut b, fold, "s", v(acc), v(x));
    b.op(Opcode::Store, "", vec![m(out), v(bag), v(k), v(s)]);
    b.close();
    b.close();
    match (spec.pooling, count) {
        (Pooling::Mean, None) => scale_by_length(&mut b, out, bag, (lo, hi), dim),
        (Pooling::Mean, Some(c)) => {
            let n = b.val(Opcode::Load, "n", vec![m(c), i(0)]);
            let nf = fop(&mut b, FloatOp::Max, "nf", v(n), Arg::Float(1.0));
            let scale = fop(&mut b, FloatOp::Div, "scale", Arg::Float(1.0), v(nf));
            scale_rows(&mut b, out, bag, scale, dim);
        }
        (Pooling::Max, Some(c)) => {
            // A bag of padding only pools to +0.0: its maximum times 0, plus +0.0.
            let n = b.val(Opcode::Load, "n", vec![m(c), i(0)]);
            let nf = fop(&mut b, FloatOp::Max, "nf", v(n), Arg::Float(1.0));
            let any = fop(&mut b, FloatOp::Div, "any", v(n), v(nf));
            let k = b.open(Opcode::For, "k", vec![i(0), i(dim)]).expect("iv");
            let a = b.val(Opcode::Load, "a", vec![m(out), v(bag), v(k)]);
            let y = fop(&mut b, FloatOp::Mul, "y", v(a), v(any));
            let z = fop(&mut b, FloatOp::Add, "z", v(y), Arg::Float(0.0));
            b.op(Opcode::Store, "", vec![m(out), v(bag), v(k), v(z)]);
            b.close();
        }
        _ => {}
    }
    b.close();
    b.finish();
    f
}

/// Appends `x OP y` (f32).
fn fop(b: &mut Builder, op: FloatOp, hint: &str, x: Arg, y: Arg) -> Value {
    b.val(Opcode::Float(op), hint, vec![x, y])
}

/// The bag's table and that table's first row in the stacked tables.
type TableBase = Option<(Value, Value)>;

/// Opens the loop over bags `0..bags` and reads the bag's lookups `lo..hi`; with several
/// tables, also its table and the table's first row in the stacked tables: `t * stored_rows`,
/// or `@table_base[t]` when the tables differ in rows (`table_base`).
fn open_bag(
    b: &mut Builder,
    spec: &WorkloadSpec,
    offsets: MemId,
    table_base: Option<MemId>,
) -> (Value, Value, Value, TableBase) {
    let bag = b.open(Opcode::For, "b", vec![i(0), i(spec.bags() as i64)]).expect("a loop defines its iv");
    let next = b.val(Opcode::Int(IntOp::Add), "b1", vec![v(bag), i(1)]);
    let lo = b.val(Opcode::Load, "lo", vec![Arg::Mem(offsets), v(bag)]);
    let hi = b.val(Opcode::Load, "hi", vec![Arg::Mem(offsets), v(next)]);
    let base = (spec.tables > 1).then(|| {
        let table = b.val(Opcode::Int(IntOp::Div), "t", vec![v(bag), i(spec.batch.max(1) as i64)]);
        let base = match table_base {
            Some(m) => b.val(Opcode::Load, "base", vec![Arg::Mem(m), v(table)]),
            None => b.val(Opcode::Int(IntOp::Mul), "base", vec![v(table), i(spec.stored_rows() as i64)]),
        };
        (table, base)
    });
    (bag, lo, hi, base)
}

/// The mean of a bag's sum of `hi - lo` lookups: `out[bag, k] *= 1 / max(hi - lo, 1)` for `k` in
/// `0..dim`.
fn scale_by_length(b: &mut Builder, out: MemId, bag: Value, (lo, hi): (Value, Value), dim: i64) {
    let len = b.val(Opcode::Int(IntOp::Sub), "len", vec![v(hi), v(lo)]);
    let n = b.val(Opcode::Int(IntOp::Max), "n", vec![v(len), i(1)]);
    let nf = b.val(Opcode::IToF, "nf", vec![v(n)]);
    let scale = b.val(Opcode::Float(FloatOp::Div), "scale", vec![Arg::Float(1.0), v(nf)]);
    scale_rows(b, out, bag, scale, dim);
}

/// `out[bag, k] *= scale` for `k` in `0..dim`: mean pooling's last step.
fn scale_rows(b: &mut Builder, out: MemId, bag: Value, scale: Value, dim: i64) {
    let k = b.open(Opcode::For, "k", vec![i(0), i(dim)]).expect("iv");
    let a = b.val(Opcode::Load, "a", vec![Arg::Mem(out), v(bag), v(k)]);
    let y = b.val(Opcode::Float(FloatOp::Mul), "y", vec![v(a), v(scale)]);
    b.op(Opcode::Store, "", vec![Arg::Mem(out), v(bag), v(k), v(y)]);
    b.close();
}

/// The stored-row descriptor of each row of a TT lookup's slices, four words per row (the
/// contents of `@tt_rows`): the place value and radix of the digit that selects its core's
/// slice, the slice's stored rows, and the row's place in the table's stored rows when the
/// digit is 0. A lookup of row id `i` reads stored row
/// `first + (i / stride % radix) * slice_rows` for each descriptor, in order: `G1`'s slice,
/// then `G2`'s, then `G3`'s.
pub fn tt_descriptors(tt: &TtShape) -> Vec<[u32; 4]> {
    let mut rows = Vec::new();
    for c in 0..3 {
        let (n, _) = tt.factor(c);
        for r in 0..tt.slice_rows(c) {
            rows.push([tt.stride(c), n, tt.slice_rows(c), tt.core_start(c) + r].map(|x| x as u32));
        }
    }
    rows
}

/// The loop-level function of a TT-EmbeddingBag (`op = "tt_embedding_bag"`) over an instance
/// of `lookups` lookups. Each lookup copies the rows of its three slices, as described by
/// `@tt_rows` ([`tt_descriptors`]), into the core's scratch `@tt_scratch` (one loop over the
/// slices' rows: the access unit's traversal units form a chain), then contracts them:
/// `T[a1, a2, :] = sum over r1 of G1[a1][r1] * G2[r1][a2][:]` into scratch rows after the
/// slices, then `out[b, (a1 d2 + a2) d3 + a3] += sum over r2 of T[a1, a2, r2] * G3[a3][r2]`,
/// the pooling's sum folded into the second contraction. Mean scales the sum at the bag's end.
pub fn lower_tt(spec: &WorkloadSpec, tt: &TtShape, lookups: u64) -> Func {
    let mut f = Func::new(&spec.name, Level::Loop);
    let rank = i64::from(tt.rank);
    let (d1, d2, d3) = (tt.factor(0).1 as i64, tt.factor(1).1 as i64, tt.factor(2).1 as i64);
    let slices = tt.lookup_rows() as i64;
    let offsets = f.mem(OFFSETS, Elem::U32, vec![spec.bags() + 1], true);
    let indices = f.mem(INDICES, Elem::U32, vec![lookups.max(1)], true);
    let desc = f.mem(TT_ROWS, Elem::U32, vec![slices as u64, 4], true);
    let tables = f.mem(TABLES, Elem::F32, vec![spec.tables as u64 * spec.stored_rows(), rank as u64], true);
    let scratch = f.mem(TT_SCRATCH, Elem::F32, vec![slices as u64, rank as u64], false);
    // The partial contraction in a memory of its own, after the slices in the scratch: no access
    // to the slices touches it, so its rows can live in registers.
    let partial = f.mem(TT_PARTIAL, Elem::F32, vec![(d1 * d2) as u64, rank as u64], false);
    let out = f.mem(OUT, Elem::F32, vec![spec.bags(), spec.dim as u64], false);
    let m = |x: MemId| Arg::Mem(x);
    let mut b = Builder::new(&mut f);
    let (bag, lo, hi, base) = open_bag(&mut b, spec, offsets, None);
    let k = b.open(Opcode::For, "k", vec![i(0), i(spec.dim as i64)]).expect("iv");
    b.op(Opcode::Store, "", vec![m(out), v(bag), v(k), Arg::Float(0.0)]);
    b.close();
    let j = b.open(Opcode::For, "j", vec![v(lo), v(hi)]).expect("iv");
    let index = b.val(Opcode::Load, "i", vec![m(indices), v(j)]);
    // The slices' rows into the scratch.
    let q = b.open(Opcode::For, "q", vec![i(0), i(slices)]).expect("iv");
    let word = |b: &mut Builder, w: i64, hint: &str| b.val(Opcode::Load, hint, vec![m(desc), v(q), i(w)]);
    let stride = word(&mut b, 0, "stride");
    let radix = word(&mut b, 1, "radix");
    let slice = word(&mut b, 2, "slice");
    let first = word(&mut b, 3, "first");
    let place = b.val(Opcode::Int(IntOp::Div), "place", vec![v(index), v(stride)]);
    let digit = b.val(Opcode::Int(IntOp::Rem), "digit", vec![v(place), v(radix)]);
    let skip = b.val(Opcode::Int(IntOp::Mul), "skip", vec![v(digit), v(slice)]);
    let mut row = b.val(Opcode::Int(IntOp::Add), "row", vec![v(skip), v(first)]);
    if let Some((_, base)) = base {
        row = b.val(Opcode::Int(IntOp::Add), "r", vec![v(row), v(base)]);
    }
    let k = b.open(Opcode::For, "k", vec![i(0), i(rank)]).expect("iv");
    let x = b.val(Opcode::Load, "x", vec![m(tables), v(row), v(k)]);
    b.op(Opcode::Store, "", vec![m(scratch), v(q), v(k), v(x)]);
    b.close();
    b.close();
    // The contraction, one (a1, a2) pair of the row's columns at a time.
    let a1 = b.open(Opcode::For, "a1", vec![i(0), i(d1)]).expect("iv");
    let a2 = b.open(Opcode::For, "a2", vec![i(0), i(d2)]).expect("iv");
    let p0 = b.val(Opcode::Int(IntOp::Mul), "p0", vec![v(a1), i(d2)]);
    let p = b.val(Opcode::Int(IntOp::Add), "p", vec![v(p0), v(a2)]);
    let t = p;
    let k = b.open(Opcode::For, "k", vec![i(0), i(rank)]).expect("iv");
    b.op(Opcode::Store, "", vec![m(partial), v(t), v(k), Arg::Float(0.0)]);
    b.close();
    let r1 = b.open(Opcode::For, "r1", vec![i(0), i(rank)]).expect("iv");
    let w = b.val(Opcode::Load, "w", vec![m(scratch), v(a1), v(r1)]);
    let g0 = b.val(Opcode::Int(IntOp::Mul), "g0", vec![v(r1), i(d2)]);
    let g1 = b.val(Opcode::Int(IntOp::Add), "g1", vec![v(g0), v(a2)]);
    let g = b.val(Opcode::Int(IntOp::Add), "g", vec![v(g1), i(d1)]);
    let k = b.open(Opcode::For, "k", vec![i(0), i(rank)]).expect("iv");
    let y = b.val(Opcode::Load, "y", vec![m(scratch), v(g), v(k)]);
    let acc = b.val(Opcode::Load, "acc", vec![m(partial), v(t), v(k)]);
    let wy = fop(&mut b, FloatOp::Mul, "wy", v(w), v(y));
    let s = fop(&mut b, FloatOp::Add, "s", v(acc), v(wy));
    b.op(Opcode::Store, "", vec![m(partial), v(t), v(k), v(s)]);
    b.close();
    b.close();
    let a3 = b.open(Opcode::For, "a3", vec![i(0), i(d3)]).expect("iv");
    let c0 = b.val(Opcode::Int(IntOp::Mul), "c0", vec![v(p), i(d3)]);
    let col = b.val(Opcode::Int(IntOp::Add), "col", vec![v(c0), v(a3)]);
    let g3 = b.val(Opcode::Int(IntOp::Add), "g3", vec![v(a3), i(d1 + rank * d2)]);
    let k = b.open(Opcode::For, "k", vec![i(0), i(rank)]).expect("iv");
    let z = b.val(Opcode::Load, "z", vec![m(partial), v(t), v(k)]);
    let y = b.val(Opcode::Load, "y", vec![m(scratch), v(g3), v(k)]);
    let zy = fop(&mut b, FloatOp::Mul, "zy", v(z), v(y));
    let acc = b.val(Opcode::Load, "a", vec![m(out), v(bag), v(col)]);
    let s = fop(&mut b, FloatOp::Add, "s", v(acc), v(zy));
    b.op(Opcode::Store, "", vec![m(out), v(bag), v(col), v(s)]);
    b.close();
    b.close();
    b.close();
    b.close();
    b.close();
    if spec.pooling == Pooling::Mean {
        scale_by_length(&mut b, out, bag, (lo, hi), spec.dim as i64);
    }
    b.close();
    b.finish();
    f
}

/// The loop-level function of message passing (`op = "gnn_scatter"`) over `edges` edges: for
/// each edge, in the list's order, `out[dst[e], k] += x[src[e], k]`. `@out` starts at zero (the
/// output buffer is zeroed, as `torch.zeros` before `index_add_`).
pub fn lower_scatter(spec: &WorkloadSpec, edges: u64) -> Func {
    let mut f = Func::new(&spec.name, Level::Loop);
    let dim = spec.dim as i64;
    let src = f.mem(SRC, Elem::U32, vec![edges.max(1)], true);
    let dst = f.mem(DST, Elem::U32, vec![edges.max(1)], true);
    let tables = f.mem(TABLES, table_elem(spec), vec![spec.rows, spec.dim as u64], true);
    let out = f.mem(OUT, Elem::F32, vec![spec.bags(), spec.dim as u64], false);
    let m = |x: MemId| Arg::Mem(x);
    let mut b = Builder::new(&mut f);
    let e = b.open(Opcode::For, "e", vec![i(0), i(edges as i64)]).expect("iv");
    let s = b.val(Opcode::Load, "s", vec![m(src), v(e)]);
    let d = b.val(Opcode::Load, "d", vec![m(dst), v(e)]);
    let k = b.open(Opcode::For, "k", vec![i(0), i(dim)]).expect("iv");
    let x = b.val(Opcode::Load, "x", vec![m(tables), v(s), v(k)]);
    let a = b.val(Opcode::Load, "a", vec![m(out), v(d), v(k)]);
    let y = b.val(Opcode::Float(FloatOp::Add), "y", vec![v(a), v(x)]);
    b.op(Opcode::Store, "", vec![m(out), v(d), v(k), v(y)]);
    b.close();
    b.close();
    b.finish();
    f
}

/// The loop-level function of knowledge-graph scoring: for each triple `q` and each candidate
/// tail `c` of its bag (the true tail, then the negatives), `out[c]` = the model's score of
/// `(heads[q], rels[q], indices[c])`, summed over the row in column order. Subtraction is
/// written as adding the negation (`x + (-1 * z)`) and `|e|` as `max(e, -e)`, which the core's
/// vector unit has.
pub fn lower_kg(spec: &WorkloadSpec, model: KgModel, candidates: u64) -> Func {
    let mut f = Func::new(&spec.name, Level::Loop);
    let c_per = spec.out_width() as i64;
    let heads = f.mem(HEADS, Elem::U32, vec![spec.batch.max(1) as u64], true);
    let rels = f.mem(RELS, Elem::U32, vec![spec.batch.max(1) as u64], true);
    let cands = f.mem(INDICES, Elem::U32, vec![candidates.max(1)], true);
    let ent = f.mem(TABLES, table_elem(spec), vec![spec.rows, spec.dim as u64], true);
    let rel = f.mem(RELATION_TABLE, table_elem(spec), vec![spec.relations, spec.dim as u64], true);
    let out = f.mem(OUT, Elem::F32, vec![candidates.max(1)], false);
    let m = |x: MemId| Arg::Mem(x);
    let mut b = Builder::new(&mut f);
    let q = b.open(Opcode::For, "q", vec![i(0), i(spec.batch as i64)]).expect("iv");
    let h = b.val(Opcode::Load, "h", vec![m(heads), v(q)]);
    let r = b.val(Opcode::Load, "r", vec![m(rels), v(q)]);
    let c0 = b.val(Opcode::Int(IntOp::Mul), "c0", vec![v(q), i(c_per)]);
    let c1 = b.val(Opcode::Int(IntOp::Add), "c1", vec![v(c0), i(c_per)]);
    let c = b.open(Opcode::For, "c", vec![v(c0), v(c1)]).expect("iv");
    let t = b.val(Opcode::Load, "t", vec![m(cands), v(c)]);
    b.op(Opcode::Store, "", vec![m(out), v(c), Arg::Float(0.0)]);
    let half = if model == KgModel::ComplEx { spec.dim as i64 / 2 } else { spec.dim as i64 };
    let k = b.open(Opcode::For, "k", vec![i(0), i(half)]).expect("iv");
    let term = match model {
        KgModel::TransE => {
            let x = b.val(Opcode::Load, "x", vec![m(ent), v(h), v(k)]);
            let y = b.val(Opcode::Load, "y", vec![m(rel), v(r), v(k)]);
            let z = b.val(Opcode::Load, "z", vec![m(ent), v(t), v(k)]);
            let xy = fop(&mut b, FloatOp::Add, "xy", v(x), v(y));
            let nz = fop(&mut b, FloatOp::Mul, "nz", v(z), Arg::Float(-1.0));
            let e = fop(&mut b, FloatOp::Add, "e", v(xy), v(nz));
            let ne = fop(&mut b, FloatOp::Mul, "ne", v(e), Arg::Float(-1.0));
            let dist = fop(&mut b, FloatOp::Max, "dist", v(e), v(ne));
            // The score is minus the distance.
            fop(&mut b, FloatOp::Mul, "term", v(dist), Arg::Float(-1.0))
        }
        KgModel::DistMult => {
            let x = b.val(Opcode::Load, "x", vec![m(ent), v(h), v(k)]);
            let y = b.val(Opcode::Load, "y", vec![m(rel), v(r), v(k)]);
            let z = b.val(Opcode::Load, "z", vec![m(ent), v(t), v(k)]);
            let xy = fop(&mut b, FloatOp::Mul, "xy", v(x), v(y));
            fop(&mut b, FloatOp::Mul, "term", v(xy), v(z))
        }
        KgModel::ComplEx => {
            let ki = b.val(Opcode::Int(IntOp::Add), "ki", vec![v(k), i(half)]);
            let hr = b.val(Opcode::Load, "hr", vec![m(ent), v(h), v(k)]);
            let hi = b.val(Opcode::Load, "hi", vec![m(ent), v(h), v(ki)]);
            let rr = b.val(Opcode::Load, "rr", vec![m(rel), v(r), v(k)]);
            let ri = b.val(Opcode::Load, "ri", vec![m(rel), v(r), v(ki)]);
            let tr = b.val(Opcode::Load, "tr", vec![m(ent), v(t), v(k)]);
            let ti = b.val(Opcode::Load, "ti", vec![m(ent), v(t), v(ki)]);
            // Re(h r conj(t)) = hr rr tr + hi rr ti + hr ri ti - hi ri tr.
            let prod = |b: &mut Builder, a: Value, x: Value, y: Value| {
                let p = fop(b, FloatOp::Mul, "p", v(a), v(x));
                fop(b, FloatOp::Mul, "p", v(p), v(y))
            };
            let t1 = prod(&mut b, hr, rr, tr);
            let t2 = prod(&mut b, hi, rr, ti);
            let t3 = prod(&mut b, hr, ri, ti);
            let t4 = prod(&mut b, hi, ri, tr);
            let n4 = fop(&mut b, FloatOp::Mul, "n4", v(t4), Arg::Float(-1.0));
            let s12 = fop(&mut b, FloatOp::Add, "s", v(t1), v(t2));
            let s123 = fop(&mut b, FloatOp::Add, "s", v(s12), v(t3));
            fop(&mut b, FloatOp::Add, "term", v(s123), v(n4))
        }
    };
    let acc = b.val(Opcode::Load, "acc", vec![m(out), v(c)]);
    let sum = fop(&mut b, FloatOp::Add, "sum", v(acc), v(term));
    b.op(Opcode::Store, "", vec![m(out), v(c), v(sum)]);
    b.close();
    b.close();
    b.close();
    b.finish();
    f
}
