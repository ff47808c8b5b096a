//! Instruction selection and register allocation for core ops: a loop-level function, or the
//! cases of a DLC compute loop, to the core ISA's text.
//!
//! Registers are allocated by linear scan over the ops in program order: a value holds its
//! register from its definition to its last use, where a use inside a loop that the value was
//! defined outside of lasts to the end of that loop (it is read again every iteration). Integer
//! constants fold into immediates and memory offsets. An innermost loop with constant bounds and at most
//! [`UNROLL_LIMIT`] iterations is unrolled, its induction variable a constant in each copy
//! (the chunk loops over a row, which then address their chunks with immediate offsets). Vector
//! accumulators (`vgetacc`/`vsetacc`) live in `v0`.. for the whole program. Scalar registers
//! `r28`..`r30` are scratch; `r1` holds the control id.

use crate::ir::opcode::FloatOp;
use crate::ir::{Arg, Func, MemId, Op, Opcode, Value, walk};
use std::collections::{HashMap, VecDeque};
use std::fmt::Write;

/// Innermost loops with at most this many iterations and constant bounds are unrolled.
pub const UNROLL_LIMIT: i64 = 32;
const FIRST_REG: u8 = 2;
const LAST_REG: u8 = 27;
const SCRATCH: [u8; 3] = [28, 29, 30];
const LAST_VREG: u8 = 31;

/// Where a value lives.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Loc {
    R(u8),
    V(u8),
    Int(i64),
    F(f32),
}

/// Emits core code for regions of one function.
pub struct CoreEmitter<'a> {
    f: &'a Func,
    bases: &'a HashMap<MemId, u64>,
    lanes: u32,
    text: String,
    labels: u32,
    loc: HashMap<Value, Loc>,
    last_use: HashMap<Value, usize>,
    loop_end: HashMap<Value, usize>,
    pos: usize,
    free_r: VecDeque<u8>,
    free_v: VecDeque<u8>,
    /// The index terms whose address scratch register 0 holds, while nothing changed them.
    addr_memo: Option<Vec<(u8, i64)>>,
    live: Vec<Value>,
    accs: u8,
    /// Values computed straight into an accumulator (their only use is the `vsetacc` after
    /// them), which saves the move.
    pin: HashMap<Value, u8>,
    /// Values that are all-zero vectors (an accumulator set from one is zeroed in place).
    zeros: std::collections::HashSet<Value>,
    /// Each value's position in the op numbering (a loop's body follows its loop op, up to
    /// `loop_end`).
    def: HashMap<Value, usize>,
    /// The induction values of the loops being emitted, outermost first.
    loops: Vec<Value>,
}

/// An op the core cannot run or a program that does not fit its registers.
pub type EmitError = String;

impl<'a> CoreEmitter<'a> {
    /// An emitter for `f`'s ops, with memory `m` at byte address `bases[m]`.
    pub fn new(f: &'a Func, bases: &'a HashMap<MemId, u64>, lanes: u32) -> Self {
        let mut e = CoreEmitter {
            f,
            bases,
            lanes,
            text: format!(".core lanes={lanes}\n"),
            labels: 0,
            loc: HashMap::new(),
            last_use: HashMap::new(),
            loop_end: HashMap::new(),
            pos: 0,
            free_r: VecDeque::new(),
            free_v: VecDeque::new(),
            addr_memo: None,
            live: Vec::new(),
            accs: 0,
            pin: HashMap::new(),
            zeros: Default::default(),
            def: HashMap::new(),
            loops: Vec::new(),
        };
        let mut uses: HashMap<Value, usize> = HashMap::new();
        walk(&f.body, &mut |op| {
            for v in op.value_args() {
                *uses.entry(v).or_default() += 1;
            }
        });
        pin_accumulators(&f.body, &uses, &mut e.pin);
        let mut accs = 0u8;
        walk(&f.body, &mut |op| {
            if matches!(op.opcode, Opcode::VGetAcc | Opcode::VSetAcc) {
                accs = accs.max(op.args[0].int().unwrap_or(0) as u8 + 1);
            }
        });
        e.accs = accs;
        let mut pos = 0;
        number(&f.body, &mut pos, &mut Vec::new(), &mut e.def, &mut e.last_use, &mut e.loop_end);
        e.reset();
        e
    }

    /// Frees every register (between independent regions such as callback cases).
    pub fn reset(&mut self) {
        // Registers are reused oldest-freed first, which spreads false dependencies.
        self.free_r = (FIRST_REG..=LAST_REG).collect();
        // With narrow memories, the last vector register is the widening loads' scratch.
        let narrow = self.f.mems.iter().any(|m| m.elem.narrow().is_some());
        self.free_v = (self.accs..=LAST_VREG - u8::from(narrow)).collect();
        self.addr_memo = None;
        self.live.clear();
        self.loc.clear();
    }

    /// Appends a line of text (a label or an instruction).
    pub fn line(&mut self, s: &str) {
        if s.ends_with(':') {
            // Control flow merges here: nothing is known of the scratch register.
            self.addr_memo = None;
            let _ = writeln!(self.text, "{s}");
        } else {
            let _ = writeln!(self.text, "    {s}");
        }
    }

    /// The program text so far.
    pub fn finish(self) -> String {
        self.text
    }

    /// Emits `ops`.
    pub fn emit(&mut self, ops: &[Op]) -> Result<(), EmitError> {
        for op in ops {
            self.pos += 1;
            self.free_dead();
            self.emit_op(op)?;
        }
        Ok(())
    }

    /// Skips one op that holds no code (a region's owner).
    pub fn skip_one(&mut self) {
        self.pos += 1;
    }

    /// Skips `ops` (keeps positions in step with the numbering).
    pub fn skip(&mut self, ops: &[Op]) {
        let mut n = 0;
        walk(ops, &mut |_| n += 1);
        self.pos += n;
    }

    fn free_dead(&mut self) {
        let pos = self.pos;
        let (dead, keep): (Vec<Value>, Vec<Value>) =
            self.live.iter().partition(|v| self.last_use.get(v).copied().unwrap_or(0) < pos);
        self.live = keep;
        for v in dead {
            self.release(v);
        }
    }

    fn release(&mut self, v: Value) {
        match self.loc.remove(&v) {
            Some(Loc::R(r)) => self.free_r.push_back(r),
            Some(Loc::V(r)) if r >= self.accs => self.free_v.push_back(r),
            _ => {}
        }
    }

    fn alloc_r(&mut self, v: Value) -> Result<u8, EmitError> {
        // A register may be rewritten: an address computed from it is stale.
        self.addr_memo = None;
        let r = self.free_r.pop_front().ok_or_else(|| {
            format!("more than {} live scalar values at %{}", LAST_REG - FIRST_REG + 1, self.f.name(v))
        })?;
        self.loc.insert(v, Loc::R(r));
        self.live.push(v);
        Ok(r)
    }

    fn alloc_v(&mut self, v: Value) -> Result<u8, EmitError> {
        if let Some(&n) = self.pin.get(&v) {
            self.loc.insert(v, Loc::V(n));
            return Ok(n);
        }
        let r = self.free_v.pop_front().ok_or_else(|| {
            format!("more than {} live vector values at %{}", LAST_VREG + 1 - self.accs, self.f.name(v))
        })?;
        self.loc.insert(v, Loc::V(r));
        self.live.push(v);
        Ok(r)
    }

    fn arg(&self, a: Arg) -> Result<Loc, EmitError> {
        Ok(match a {
            Arg::Value(v) => {
                *self.loc.get(&v).ok_or_else(|| format!("%{} has no location", self.f.name(v)))?
            }
            Arg::Int(i) => Loc::Int(i),
            Arg::Float(x) => Loc::F(x),
            Arg::Mem(_) => return Err("a memory where a value was expected".into()),
        })
    }

    /// A scalar register holding `a` (constants go into scratch register `scratch`).
    fn reg(&mut self, a: Arg, scratch: usize) -> Result<u8, EmitError> {
        match self.arg(a)? {
            Loc::R(r) => Ok(r),
            Loc::Int(i) => {
                self.line(&format!("li r{}, {i}", SCRATCH[scratch]));
                Ok(SCRATCH[scratch])
            }
            Loc::F(x) => {
                self.line(&format!("li r{}, {}", SCRATCH[scratch], x.to_bits()));
                Ok(SCRATCH[scratch])
            }
            Loc::V(_) => Err("a vector where a scalar was expected".into()),
        }
    }

    fn vreg(&mut self, a: Arg) -> Result<u8, EmitError> {
        match self.arg(a)? {
            Loc::V(r) => Ok(r),
            _ => Err("a scalar where a vector was expected (vectorize with vbcast)".into()),
        }
    }

    /// `[rX + off]` for element `idx` of memory `m`; uses scratch register 0.
    fn address(&mut self, m: MemId, idx: &[Arg]) -> Result<String, EmitError> {
        let decl = self.f.mem_decl(m);
        let mut stride = 1u64;
        let mut strides = vec![0u64; decl.shape.len()];
        for d in (0..decl.shape.len()).rev() {
            strides[d] = stride;
            stride *= decl.shape[d];
        }
        let mut offset = *self.bases.get(&m).ok_or_else(|| format!("@{} has no address", decl.name))? as i64;
        let mut terms = Vec::new();
        let eb = decl.elem.bytes() as i64;
        for (a, s) in idx.iter().zip(&strides) {
            match self.arg(*a)? {
                Loc::Int(i) => offset += i * *s as i64 * eb,
                Loc::R(r) => terms.push((r, *s as i64 * eb)),
                _ => return Err("an index must be an integer".into()),
            }
        }
        let base = SCRATCH[0];
        if self.addr_memo.as_ref() == Some(&terms) {
            return Ok(if offset < 0 {
                format!("[r{base} - {}]", -offset)
            } else {
                format!("[r{base} + {offset}]")
            });
        }
        self.addr_memo = Some(terms.clone());
        match terms.as_slice() {
            [] => self.line(&format!("li r{base}, 0")),
            [(r, s), rest @ ..] => {
                self.line(&format!("muli r{base}, r{r}, {s}"));
                for (r, s) in rest {
                    self.line(&format!("muli r{}, r{r}, {s}", SCRATCH[2]));
                    self.line(&format!("add r{base}, r{base}, r{}", SCRATCH[2]));
                }
            }
        }
        Ok(if offset < 0 { format!("[r{base} - {}]", -offset) } else { format!("[r{base} + {offset}]") })
    }

    /// Whether a load of `m` at `idx` is the first element of an embedding row that its loop
    /// looks up: the row's index must change with the innermost loop around the load other than
    /// the one walking the row's columns. A row read again for every iteration of that loop (a
    /// knowledge-graph query's head and relation rows, for each candidate) is no new lookup.
    fn is_lookup(&self, m: MemId, idx: &[Arg]) -> bool {
        let d = self.f.mem_decl(m);
        let first_element = d.readonly
            && d.elem.is_float()
            && d.shape.len() >= 2
            && matches!(idx.last().map(|a| self.arg(*a)), Some(Ok(Loc::Int(0))));
        let Some((column, row)) = idx.split_last() else { return false };
        let column = column.value();
        let Some(&l) = self.loops.iter().rev().find(|&&iv| Some(iv) != column) else { return first_element };
        let (start, end) =
            (self.def.get(&l).copied().unwrap_or(0), self.loop_end.get(&l).copied().unwrap_or(0));
        first_element
            && row
                .iter()
                .filter_map(|a| a.value())
                .all(|v| self.def.get(&v).is_some_and(|&p| start < p && p <= end))
    }

    /// The element count operand of a vector access: an immediate or a register.
    fn count(&mut self, a: Arg) -> Result<String, EmitError> {
        match self.arg(a)? {
            Loc::Int(n) if (1..=self.lanes as i64).contains(&n) => Ok(n.to_string()),
            Loc::Int(n) => Err(format!("vector count {n} outside 1..={}", self.lanes)),
            Loc::R(r) => Ok(format!("r{r}")),
            _ => Err("a vector count must be an integer".into()),
        }
    }

    fn emit_op(&mut self, op: &Op) -> Result<(), EmitError> {
        let a = &op.args;
        match op.opcode {
            Opcode::For => return self.emit_loop(op),
            Opcode::Load => {
                let m = a[0].mem().ok_or("load without memory")?;
                let lookup = if self.is_lookup(m, &a[1..]) { " !lookup" } else { "" };
                let addr = self.address(m, &a[1..])?;
                let rd = self.alloc_r(op.result())?;
                match self.f.mem_decl(m).elem.narrow() {
                    // A narrow element: a one-lane widening load, then its lane.
                    Some(fmt) => {
                        let suffix = exec_core::isa::format_suffix(fmt);
                        self.line(&format!("vld.{suffix} v{LAST_VREG}, {addr}, 1{lookup}"));
                        self.line(&format!("vext r{rd}, v{LAST_VREG}, 0"));
                    }
                    None => self.line(&format!("ld.u32 r{rd}, {addr}{lookup}")),
                }
            }
            Opcode::Store => {
                let m = a[0].mem().ok_or("store without memory")?;
                let n = a.len() - 1;
                let rs = self.reg(a[n], 1)?;
                let addr = self.address(m, &a[1..n])?;
                self.line(&format!("st.u32 r{rs}, {addr}"));
            }
            Opcode::Int(o) => {
                let (x, y) = (self.arg(a[0])?, self.arg(a[1])?);
                if let (Loc::Int(x), Loc::Int(y)) = (x, y) {
                    let c = o.apply(x, y).ok_or("integer division by zero in a constant")?;
                    self.loc.insert(op.result(), Loc::Int(c));
                    return Ok(());
                }
                let name = o.name();
                let ra = self.reg(a[0], 1)?;
                let rd = self.alloc_r(op.result())?;
                match y {
                    Loc::Int(imm) => self.line(&format!("{name}i r{rd}, r{ra}, {imm}")),
                    _ => {
                        let rb = self.reg(a[1], 2)?;
                        self.line(&format!("{name} r{rd}, r{ra}, r{rb}"));
                    }
                }
            }
            Opcode::Float(o) => {
                let name = match o {
                    FloatOp::Add => "fadd",
                    FloatOp::Sub => "fsub",
                    FloatOp::Mul => "fmul",
                    FloatOp::Div => "fdiv",
                    FloatOp::Max => "fmax",
                };
                let ra = self.reg(a[0], 1)?;
                let rb = self.reg(a[1], 2)?;
                let rd = self.alloc_r(op.result())?;
                self.line(&format!("{name} r{rd}, r{ra}, r{rb}"));
            }
            Opcode::IToF => {
                let ra = self.reg(a[0], 1)?;
                let rd = self.alloc_r(op.result())?;
                self.line(&format!("fcvt r{rd}, r{ra}"));
            }
            Opcode::VLoad => {
                let m = a[0].mem().ok_or("vload without memory")?;
                let n = a.len() - 1;
                let lookup = if self.is_lookup(m, &a[1..n]) { " !lookup" } else { "" };
                let count = self.count(a[n])?;
                let addr = self.address(m, &a[1..n])?;
                let vd = self.alloc_v(op.result())?;
                let suffix = self.f.mem_decl(m).elem.narrow().map(exec_core::isa::format_suffix);
                let vld = suffix.map_or("vld".to_string(), |s| format!("vld.{s}"));
                self.line(&format!("{vld} v{vd}, {addr}, {count}{lookup}"));
            }
            Opcode::VStore => {
                let m = a[0].mem().ok_or("vstore without memory")?;
                let n = a.len() - 2;
                let vs = self.vreg(a[n + 1])?;
                let count = self.count(a[n])?;
                let addr = self.address(m, &a[1..n])?;
                self.line(&format!("vst v{vs}, {addr}, {count}"));
            }
            Opcode::VFloat(o) => {
                let name = match o {
                    FloatOp::Add => "vadd",
                    FloatOp::Mul => "vmul",
                    FloatOp::Max => "vmax",
                    FloatOp::Sub | FloatOp::Div => {
                        return Err(format!("the core ISA has no vector {}", o.name()));
                    }
                };
                let (va, vb) = (self.vreg(a[0])?, self.vreg(a[1])?);
                let vd = self.alloc_v(op.result())?;
                self.line(&format!("{name} v{vd}, v{va}, v{vb}"));
            }
            Opcode::VBcast => {
                if self.arg(a[0])? == Loc::F(0.0) {
                    self.zeros.insert(op.result());
                    let vd = self.alloc_v(op.result())?;
                    self.line(&format!("vzero v{vd}"));
                } else {
                    let rs = self.reg(a[0], 1)?;
                    let vd = self.alloc_v(op.result())?;
                    self.line(&format!("vbcast v{vd}, r{rs}"));
                }
            }
            Opcode::VRedSum => {
                let vs = self.vreg(a[0])?;
                // A non-constant count is a masked tail, whose other lanes are zero: sum them all.
                let lanes = match self.arg(a[1])? {
                    Loc::Int(n) => n,
                    _ => i64::from(self.lanes),
                };
                let rd = self.alloc_r(op.result())?;
                self.line(&format!("vext r{rd}, v{vs}, 0"));
                for lane in 1..lanes {
                    self.line(&format!("vext r{}, v{vs}, {lane}", SCRATCH[1]));
                    self.line(&format!("fadd r{rd}, r{rd}, r{}", SCRATCH[1]));
                }
            }
            Opcode::VLoadBuf => {
                let rb = self.reg(a[0], 1)?;
                let count = self.count(a[2])?;
                // A buffer of a narrow memory's elements (its memory named last).
                let elem = a.get(3).and_then(|m| m.mem()).map(|m| self.f.mem_decl(m).elem);
                let eb = elem.map_or(4, |e| e.bytes() as i64);
                let vldq = match elem.and_then(|e| e.narrow()) {
                    Some(fmt) => format!("vldq.{}", exec_core::isa::format_suffix(fmt)),
                    None => "vldq".to_string(),
                };
                let addr = match self.arg(a[1])? {
                    Loc::Int(off) => format!("[r{rb} + {}]", off * eb),
                    Loc::R(r) => {
                        self.line(&format!("muli r{}, r{r}, {eb}", SCRATCH[2]));
                        self.line(&format!("add r{}, r{}, r{rb}", SCRATCH[2], SCRATCH[2]));
                        format!("[r{} + 0]", SCRATCH[2])
                    }
                    _ => return Err("a buffer offset must be an integer".into()),
                };
                let vd = self.alloc_v(op.result())?;
                self.line(&format!("{vldq} v{vd}, {addr}, {count}"));
            }
            Opcode::VGetAcc => {
                let n = a[0].int().ok_or("vgetacc needs a slot")? as u8;
                self.loc.insert(op.result(), Loc::V(n));
            }
            Opcode::VSetAcc => {
                let n = a[0].int().ok_or("vsetacc needs a slot")? as u8;
                if a[1].value().is_some_and(|v| self.zeros.contains(&v)) {
                    self.line(&format!("vzero v{n}"));
                    return Ok(());
                }
                let vs = self.vreg(a[1])?;
                if vs != n {
                    // A move: maxNum(x, x) = x.
                    self.line(&format!("vmax v{n}, v{vs}, v{vs}"));
                }
            }
            Opcode::GetVar => {
                let n = a[0].int().ok_or("get_var needs a variable")?;
                let rd = self.alloc_r(op.result())?;
                self.line(&format!("get_var r{rd}, v{n}"));
            }
            Opcode::IncrementVar => {
                let n = a[0].int().ok_or("increment_var needs a variable")?;
                self.line(&format!("increment_var v{n}, 1"));
            }
            Opcode::DlcNextEntry => {
                // The continuation entry's control id is known: only the entry matters.
                let rd = self.alloc_r(op.result())?;
                self.line(&format!("pop_control r{rd}"));
            }
            Opcode::DlcPopOperand => {
                let rd = self.alloc_r(op.result())?;
                self.line(&format!("pop_operand r{rd}"));
                // A narrow element marshaled as a one-element buffer: load it from the queue.
                if let Some(fmt) =
                    a.first().and_then(|m| m.mem()).and_then(|m| self.f.mem_decl(m).elem.narrow())
                {
                    let suffix = exec_core::isa::format_suffix(fmt);
                    self.line(&format!("vldq.{suffix} v{LAST_VREG}, [r{rd} + 0], 1"));
                    self.line(&format!("vext r{rd}, v{LAST_VREG}, 0"));
                }
            }
            other => return Err(format!("`{}` is not a core op", other.name())),
        }
        Ok(())
    }

    fn emit_loop(&mut self, op: &Op) -> Result<(), EmitError> {
        let iv = op.result();
        let step = op.args.get(2).and_then(|s| s.int()).unwrap_or(1);
        let (lo, hi) = (self.arg(op.args[0])?, self.arg(op.args[1])?);
        let start = self.pos;
        if let (Loc::Int(lo), Loc::Int(hi)) = (lo, hi) {
            let trips = if hi > lo { (hi - lo + step - 1) / step } else { 0 };
            // Innermost loops only: a row's chunks, not the loops around them.
            let innermost = !op.body().iter().any(|o| o.opcode == Opcode::For);
            if trips <= UNROLL_LIMIT && innermost {
                self.loops.push(iv);
                for t in 0..trips {
                    self.pos = start;
                    self.loc.insert(iv, Loc::Int(lo + t * step));
                    let before: Vec<Value> = self.live.clone();
                    self.emit(op.body())?;
                    // Values of this copy die with it.
                    let fresh: Vec<Value> =
                        self.live.iter().filter(|v| !before.contains(v)).copied().collect();
                    self.live.retain(|v| before.contains(v));
                    for v in fresh {
                        self.release(v);
                    }
                }
                self.loops.pop();
                self.pos = start;
                self.skip(op.body());
                self.loc.remove(&iv);
                return Ok(());
            }
        }
        let n = self.labels;
        self.labels += 1;
        let riv = self.alloc_r(iv)?;
        match lo {
            Loc::Int(i) => self.line(&format!("li r{riv}, {i}")),
            Loc::R(r) => self.line(&format!("addi r{riv}, r{r}, 0")),
            _ => return Err("loop bounds must be integers".into()),
        }
        // The bound lives through the loop: a constant one gets its own register.
        let bound = self.f.values.len() as u32 + n;
        let rhi = match hi {
            Loc::R(r) => r,
            Loc::Int(i) => {
                let r = self.free_r.pop_front().ok_or("no register for a loop bound")?;
                self.line(&format!("li r{r}, {i}"));
                self.loc.insert(Value(bound), Loc::R(r));
                r
            }
            _ => return Err("loop bounds must be integers".into()),
        };
        self.line(&format!("L{n}:"));
        self.line(&format!("bge r{riv}, r{rhi}, X{n}"));
        self.loops.push(iv);
        self.emit(op.body())?;
        self.loops.pop();
        self.addr_memo = None;
        self.line(&format!("addi r{riv}, r{riv}, {step}"));
        self.line(&format!("jmp L{n}"));
        self.line(&format!("X{n}:"));
        if let Loc::Int(_) = hi {
            self.release(Value(bound));
        }
        Ok(())
    }
}

/// Finds values defined by a vector op right before the `vsetacc` that is their only use.
fn pin_accumulators(ops: &[Op], uses: &HashMap<Value, usize>, pin: &mut HashMap<Value, u8>) {
    for pair in ops.windows(2) {
        let (def, set) = (&pair[0], &pair[1]);
        let vector =
            matches!(def.opcode, Opcode::VFloat(_) | Opcode::VBcast | Opcode::VLoad | Opcode::VLoadBuf);
        if let (true, Opcode::VSetAcc, [Arg::Int(n), Arg::Value(v)]) =
            (vector, set.opcode, set.args.as_slice())
            && def.results.as_slice() == [*v]
            && uses.get(v) == Some(&1)
        {
            pin.insert(*v, *n as u8);
        }
    }
    for op in ops {
        for r in &op.regions {
            pin_accumulators(r, uses, pin);
        }
    }
}

/// Numbers ops in program order; records each value's last use (a use inside a loop the value
/// was defined outside of lasts to the loop's end) and each loop's end.
fn number(
    ops: &[Op],
    pos: &mut usize,
    loops: &mut Vec<(usize, usize, Value)>,
    def: &mut HashMap<Value, usize>,
    last: &mut HashMap<Value, usize>,
    loop_end: &mut HashMap<Value, usize>,
) {
    for op in ops {
        *pos += 1;
        let here = *pos;
        let is_loop = matches!(op.opcode, Opcode::For);
        let mut end = here;
        if is_loop {
            let mut n = 0;
            walk(op.body(), &mut |_| n += 1);
            end = here + n;
        }
        for v in op.value_args() {
            let d = def.get(&v).copied().unwrap_or(0);
            // Loop bounds are read every iteration.
            let mut eff = if is_loop { end } else { here };
            if let Some(&(_, e, _)) = loops.iter().find(|(s, _, _)| d < *s) {
                eff = eff.max(e);
            }
            let l = last.entry(v).or_insert(0);
            *l = (*l).max(eff);
        }
        for &r in &op.results {
            def.insert(r, here);
            last.entry(r).or_insert(here);
        }
        if is_loop {
            let iv = op.result();
            last.insert(iv, end);
            loop_end.insert(iv, end);
            loops.push((here, end, iv));
            number(op.body(), pos, loops, def, last, loop_end);
            loops.pop();
        } else {
            for r in &op.regions {
                number(r, pos, loops, def, last, loop_end);
            }
        }
    }
}
