//! The access-unit program of a DLC function: its `dlc.configure_access` mapped onto the unit.
//!
//! TUs map one to one (a vectorized TU iterates chunk numbers; its induction value is
//! `lo + chunk * VL`, an ALU stream). Multi-dimensional memory indices become ALU streams that
//! compute the linear element (or row) index. Layers: with a unit of two or more lanes, the
//! innermost TU runs in lockstep over the lanes and its parent is a broadcast layer (the TMU's
//! mapping of embedding bags; a lone TU runs in lockstep alone); the others are single-lane. Buffer streams over read-only f32
//! memories are the lookups whose latency is reported. An ALU stream that only adds a
//! constant to a memory index (`offsets[b + 1]`) folds into the memory stream's base address,
//! so it takes no stream storage. The program is fitted to the unit's stream storage: outer
//! layers' rows become addresses for the core to load when a lane cannot hold two iterations
//! ([`au_program`]).

use crate::ir::{Arg, Func, IntOp, MemId, Op, Opcode, Value};
use access_unit::isa::{
    AluOp, AuProgram, Bounds, Callback, Event, Layer, Operand, Stream, StreamId, StreamKind, Tu, TuId,
};
use std::collections::HashMap;

/// Builds the access-unit program of DLC function `f` for a unit of `au_lanes` lanes with
/// `storage_per_lane` bytes of stream storage each (0: unlimited). When a lane's storage cannot
/// hold two iterations of every layer (the least that lets a layer fetch one iteration while
/// the core is handed the previous one), the buffer streams of the outer layers (a
/// knowledge-graph query's head and relation rows, fetched once for all its candidates) pass the
/// core their row's address instead of the row, and the core loads the row itself; the innermost
/// layer's rows, the gathers, stay with the unit. If even one iteration does not fit then, the
/// code generator leaves bufferization out (rows streamed in chunks); the unit refuses a
/// storage that cannot hold that either.
pub fn au_program(
    f: &Func,
    bases: &HashMap<MemId, u64>,
    au_lanes: u32,
    storage_per_lane: u64,
) -> Result<AuProgram, String> {
    let p = build(f, bases, au_lanes, None)?;
    let outer = p.tus.len().saturating_sub(1);
    if storage_per_lane == 0 || 2 * p.lane_iteration_bytes() <= storage_per_lane || outer == 0 {
        return Ok(p);
    }
    // Too many streams once demoted: the unit reports what does not fit.
    Ok(build(f, bases, au_lanes, Some(TuId(outer as u8))).unwrap_or(p))
}

/// The program of `f`; with `demote_below`, buffer streams of TUs before that one pass their
/// row's address instead of the row.
fn build(
    f: &Func,
    bases: &HashMap<MemId, u64>,
    au_lanes: u32,
    demote_below: Option<TuId>,
) -> Result<AuProgram, String> {
    let config = f
        .body
        .iter()
        .find(|o| o.opcode == Opcode::DlcConfigure)
        .ok_or("the DLC function has no dlc.configure_access")?;
    let folded = foldable_offsets(config.body());
    let mut b = AuBuilder {
        f,
        bases,
        p: AuProgram::default(),
        tus: HashMap::new(),
        streams: HashMap::new(),
        folded,
        alus: HashMap::new(),
        demote_below,
    };
    let mut callbacks: Vec<(u32, Callback)> = Vec::new();
    for op in config.body() {
        match op.opcode {
            Opcode::DlcAlu(_) if b.folded.contains_key(&op.result()) => {}
            Opcode::DlcTu => b.tu(op)?,
            Opcode::DlcIte => b.ite(op)?,
            Opcode::DlcMem | Opcode::DlcVMem | Opcode::DlcBuf => b.mem(op)?,
            Opcode::DlcAlu(o) => {
                let t = b.tu_of(op.args[0])?;
                let (x, y) = (b.operand(op.args[1])?, b.operand(op.args[2])?);
                let s = b.push(t, StreamKind::Alu { op: alu(o)?, a: x, b: y })?;
                b.streams.insert(op.result(), s);
            }
            Opcode::DlcFwd => {
                let t = b.tu_of(op.args[0])?;
                let src = b.operand(op.args[1])?;
                let s = b.push(t, StreamKind::Fwd { src })?;
                b.streams.insert(op.result(), s);
            }
            Opcode::DlcCallback => {
                let tu = b.tu_of(op.args[0])?;
                let event = match op.args[1].int() {
                    Some(0) => Event::Begin,
                    Some(1) => Event::Iter,
                    _ => Event::End,
                };
                let control = op.args[2].int().ok_or("a callback id must be an integer")? as u32;
                callbacks.push((control, Callback { tu, event, control, operands: Vec::new() }));
            }
            Opcode::DlcOperand => {
                let id = op.args[0].int().ok_or("an operand's callback id must be an integer")? as u32;
                let s = b.stream_of(op.args[1])?;
                let cb = callbacks
                    .iter_mut()
                    .find(|(c, _)| *c == id)
                    .ok_or_else(|| format!("operand for unregistered callback {id}"))?;
                cb.1.operands.push(s);
            }
            other => return Err(format!("`{}` in dlc.configure_access", other.name())),
        }
    }
    let n = b.p.tus.len();
    if au_lanes >= 2 && n >= 1 {
        // A lone TU (message passing's walk over edges) spreads its iterations over the lanes
        // too: nothing above it to broadcast.
        b.p.tus[n - 1].layer = Layer::Lockstep { lanes: au_lanes };
        if n >= 2 {
            b.p.tus[n - 2].layer = Layer::Broadcast;
        }
    }
    b.p.callbacks = callbacks.into_iter().map(|(_, c)| c).collect();
    b.p.verify().map_err(|e| format!("the access unit cannot run this program: {e}"))?;
    Ok(b.p)
}

/// ALU streams `x + c` (or `c + x`) used only as memory indices: value -> (x, c).
fn foldable_offsets(ops: &[Op]) -> HashMap<Value, (Value, i64)> {
    let mut candidates = HashMap::new();
    for op in ops {
        if let (Opcode::DlcAlu(IntOp::Add), [_, a, b]) = (op.opcode, op.args.as_slice()) {
            match (*a, *b) {
                (Arg::Value(x), Arg::Int(c)) | (Arg::Int(c), Arg::Value(x)) => {
                    candidates.insert(op.result(), (x, c));
                }
                _ => {}
            }
        }
    }
    // Any use other than as an index of a memory stream keeps the stream.
    for op in ops {
        let indices = match op.opcode {
            Opcode::DlcMem | Opcode::DlcBuf => 2..op.args.len(),
            Opcode::DlcVMem => 2..op.args.len() - 1,
            _ => 0..0,
        };
        for (i, a) in op.args.iter().enumerate() {
            if let Arg::Value(v) = a
                && !indices.contains(&i)
            {
                candidates.remove(v);
            }
        }
    }
    candidates
}

fn alu(o: IntOp) -> Result<AluOp, String> {
    Ok(match o {
        IntOp::Add => AluOp::Add,
        IntOp::Sub => AluOp::Sub,
        IntOp::Mul => AluOp::Mul,
        IntOp::Div => AluOp::Div,
        IntOp::Rem => AluOp::Rem,
        IntOp::Min | IntOp::Max => return Err(format!("the access unit's ALU has no {}", o.name())),
    })
}

struct AuBuilder<'a> {
    f: &'a Func,
    bases: &'a HashMap<MemId, u64>,
    p: AuProgram,
    tus: HashMap<Value, (TuId, i64, i64)>,
    streams: HashMap<Value, StreamId>,
    /// Index streams folded into addresses: value -> (stream, constant added).
    folded: HashMap<Value, (Value, i64)>,
    /// Address arithmetic already built, shared by the streams that need it.
    alus: HashMap<(TuId, AluOp, Operand, Operand), StreamId>,
    /// Buffer streams of TUs before this one become address streams.
    demote_below: Option<TuId>,
}

impl AuBuilder<'_> {
    fn push(&mut self, tu: TuId, kind: StreamKind) -> Result<StreamId, String> {
        if self.p.streams.len() >= access_unit::isa::MAX_STREAMS {
            return Err(format!("more than {} streams", access_unit::isa::MAX_STREAMS));
        }
        self.p.streams.push(Stream { tu, kind });
        Ok(StreamId(self.p.streams.len() as u8 - 1))
    }

    /// An address-arithmetic stream `a op b` in TU `t`, shared with any identical one.
    fn alu(&mut self, t: TuId, op: AluOp, a: Operand, b: Operand) -> Result<StreamId, String> {
        if let Some(&s) = self.alus.get(&(t, op, a, b)) {
            return Ok(s);
        }
        let s = self.push(t, StreamKind::Alu { op, a, b })?;
        self.alus.insert((t, op, a, b), s);
        Ok(s)
    }

    fn tu_of(&self, a: Arg) -> Result<TuId, String> {
        a.value().and_then(|v| self.tus.get(&v)).map(|t| t.0).ok_or_else(|| "not a TU".to_string())
    }

    fn stream_of(&self, a: Arg) -> Result<StreamId, String> {
        a.value().and_then(|v| self.streams.get(&v)).copied().ok_or_else(|| format!("{a:?} is not a stream"))
    }

    fn operand(&self, a: Arg) -> Result<Operand, String> {
        match a {
            Arg::Int(i) => Ok(Operand::Const(i)),
            _ => self.stream_of(a).map(Operand::Stream),
        }
    }

    fn tu(&mut self, op: &Op) -> Result<(), String> {
        let parent = match op.args[0] {
            Arg::Int(-1) => None,
            a => Some(self.tu_of(a)?),
        };
        let step = op.args[3].int().unwrap_or(1);
        let id = TuId(self.p.tus.len() as u8);
        if self.p.tus.len() >= access_unit::isa::MAX_LEVELS {
            return Err(format!("more than {} nested loops (traversal units)", access_unit::isa::MAX_LEVELS));
        }
        let bounds = match (op.args[1], op.args[2]) {
            (Arg::Int(lo), Arg::Int(hi)) => {
                let chunks = if hi > lo { (hi - lo + step - 1) / step } else { 0 };
                if step > 1 {
                    Bounds::Dense { begin: 0, end: chunks as u64 }
                } else {
                    Bounds::Dense { begin: lo.max(0) as u64, end: hi.max(0) as u64 }
                }
            }
            (lo, hi) if step == 1 => {
                let p = parent.ok_or("the root TU needs constant bounds")?;
                let mut as_stream = |a: Arg| -> Result<StreamId, String> {
                    match a {
                        Arg::Int(c) => self.push(
                            p,
                            StreamKind::Alu { op: AluOp::Add, a: Operand::Const(c), b: Operand::Const(0) },
                        ),
                        _ => self.stream_of(a),
                    }
                };
                let (b, e) = (as_stream(lo)?, as_stream(hi)?);
                Bounds::Range { begin: b, end: e }
            }
            _ => return Err("a vectorized TU needs constant bounds".into()),
        };
        self.p.tus.push(Tu { parent, bounds, layer: Layer::Single });
        let lo = op.args[1].int().unwrap_or(0);
        self.tus.insert(op.result(), (id, lo, step));
        Ok(())
    }

    fn ite(&mut self, op: &Op) -> Result<(), String> {
        let v = op.args[0].value().ok_or("dlc.ite needs a TU")?;
        let (t, lo, step) = *self.tus.get(&v).ok_or("dlc.ite of an unknown TU")?;
        let mut s = self.push(t, StreamKind::Ite)?;
        if step > 1 {
            s = self.push(
                t,
                StreamKind::Alu { op: AluOp::Mul, a: Operand::Stream(s), b: Operand::Const(step) },
            )?;
            if lo != 0 {
                s = self.push(
                    t,
                    StreamKind::Alu { op: AluOp::Add, a: Operand::Stream(s), b: Operand::Const(lo) },
                )?;
            }
        }
        self.streams.insert(op.result(), s);
        Ok(())
    }

    /// `dlc.mem`, `dlc.vmem` and `dlc.buf`.
    fn mem(&mut self, op: &Op) -> Result<(), String> {
        let t = self.tu_of(op.args[0])?;
        let m = op.args[1].mem().ok_or("a memory stream needs a memory")?;
        let decl = self.f.mem_decl(m);
        let base = *self.bases.get(&m).ok_or_else(|| format!("@{} has no address", decl.name))?;
        let elem_bytes = decl.elem.bytes();
        let row_elems = decl.row_elems();
        let (idx, kind): (&[Arg], u8) = match op.opcode {
            Opcode::DlcMem => (&op.args[2..], 0),
            Opcode::DlcVMem => (&op.args[2..op.args.len() - 1], 1),
            _ => (&op.args[2..], 2),
        };
        // Strides in elements (for buffers, in rows over the leading dimensions).
        let dims: Vec<u64> =
            if kind == 2 { decl.shape[..decl.shape.len() - 1].to_vec() } else { decl.shape.clone() };
        let mut stride = 1u64;
        let mut strides = vec![0u64; dims.len()];
        for d in (0..dims.len()).rev() {
            strides[d] = stride;
            stride *= dims[d];
        }
        let mut constant = 0i64;
        let mut index: Option<StreamId> = None;
        for (a, s) in idx.iter().zip(&strides) {
            // An index `x + c` reads `x` and moves the base by `c` elements.
            let mut a = *a;
            while let Some(&(x, c)) = a.value().and_then(|v| self.folded.get(&v)) {
                constant += c * *s as i64;
                a = Arg::Value(x);
            }
            match a {
                Arg::Int(c) => constant += c * *s as i64,
                a => {
                    let mut term = self.stream_of(a)?;
                    if *s != 1 {
                        // Scaled where the index is produced (once per iteration of its TU).
                        let at = self.p.streams[term.0 as usize].tu;
                        term = self.alu(at, AluOp::Mul, Operand::Stream(term), Operand::Const(*s as i64))?;
                    }
                    index = Some(match index {
                        None => term,
                        Some(acc) => {
                            // At the later of the two TUs (streams of enclosing TUs are visible).
                            let at =
                                self.p.streams[acc.0 as usize].tu.max(self.p.streams[term.0 as usize].tu);
                            self.alu(at, AluOp::Add, Operand::Stream(acc), Operand::Stream(term))?
                        }
                    });
                }
            }
        }
        let index = index.map_or(Operand::Const(0), Operand::Stream);
        let unit = if kind == 2 { row_elems * elem_bytes } else { elem_bytes };
        let base = (base as i64 + constant * unit as i64) as u64;
        if kind == 2 && self.demote_below.is_some_and(|d| t < d) {
            // The row's address, which the core loads from as it would from the buffer.
            let offset = match index {
                Operand::Const(c) => Operand::Const(c * unit as i64),
                i => Operand::Stream(self.alu(t, AluOp::Mul, i, Operand::Const(unit as i64))?),
            };
            let s = self.alu(t, AluOp::Add, offset, Operand::Const(base as i64))?;
            self.streams.insert(op.result(), s);
            return Ok(());
        }
        let stream_kind = match kind {
            // A narrow element (the unit's loads are 32-bit): marshaled as a one-element buffer,
            // which the core loads from the queue with a widening load.
            0 if decl.elem.narrow().is_some() => StreamKind::Row {
                base,
                index,
                scale: unit,
                bytes: elem_bytes as u32,
                lookup: decl.readonly,
                non_temporal: decl.nontemporal,
            },
            0 => StreamKind::Load { base, index, scale: unit },
            1 => {
                let vl = op.args.last().and_then(|a| a.int()).ok_or("dlc.vmem needs a vector length")?;
                StreamKind::Row {
                    base,
                    index,
                    scale: unit,
                    bytes: (vl as u64 * elem_bytes) as u32,
                    lookup: false,
                    non_temporal: decl.nontemporal,
                }
            }
            _ => StreamKind::Row {
                base,
                index,
                scale: unit,
                bytes: (row_elems * elem_bytes) as u32,
                lookup: decl.readonly && decl.elem.is_float(),
                non_temporal: decl.nontemporal,
            },
        };
        let s = self.push(t, stream_kind)?;
        self.streams.insert(op.result(), s);
        Ok(())
    }
}
