//! Opcodes of every level, with their text names.
//!
//! Core ops (no prefix) are what a core executes: loops, loads, stores, integer and f32
//! arithmetic, vector ops and queue-alignment variables. They form the whole loop level and
//! the bodies of SLC callbacks and DLC cases. `slc.` ops describe the access side as loops over
//! streams; `dlc.` ops configure the access unit and hold the compute loop.

/// The IR level a function is at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Level {
    /// Loop level: what the plain CPU runs.
    Loop,
    /// Structured lookup-compute.
    Slc,
    /// Decoupled lookup-compute: access configuration plus compute loop.
    Dlc,
}

impl Level {
    /// The name in the text form (`func @x : slc`).
    pub fn name(self) -> &'static str {
        match self {
            Level::Loop => "loop",
            Level::Slc => "slc",
            Level::Dlc => "dlc",
        }
    }

    /// The level named `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        [Level::Loop, Level::Slc, Level::Dlc].into_iter().find(|l| l.name() == name)
    }
}

/// Integer arithmetic on i64 (core ops, SLC `alu` streams, DLC `alu` streams).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IntOp {
    /// a + b
    Add,
    /// a - b
    Sub,
    /// a * b
    Mul,
    /// a / b
    Div,
    /// a % b
    Rem,
    /// min(a, b)
    Min,
    /// max(a, b)
    Max,
}

impl IntOp {
    const ALL: [IntOp; 7] =
        [IntOp::Add, IntOp::Sub, IntOp::Mul, IntOp::Div, IntOp::Rem, IntOp::Min, IntOp::Max];

    /// The mnemonic (`add`).
    pub fn name(self) -> &'static str {
        match self {
            IntOp::Add => "add",
            IntOp::Sub => "sub",
            IntOp::Mul => "mul",
            IntOp::Div => "div",
            IntOp::Rem => "rem",
            IntOp::Min => "min",
            IntOp::Max => "max",
        }
    }

    /// Applies it (`None` for a zero divisor).
    pub fn apply(self, a: i64, b: i64) -> Option<i64> {
        Some(match self {
            IntOp::Add => a.wrapping_add(b),
            IntOp::Sub => a.wrapping_sub(b),
            IntOp::Mul => a.wrapping_mul(b),
            IntOp::Div => a.checked_div(b)?,
            IntOp::Rem => a.checked_rem(b)?,
            IntOp::Min => a.min(b),
            IntOp::Max => a.max(b),
        })
    }
}

/// f32 arithmetic (scalar `fadd`, vector `vfadd`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FloatOp {
    /// a + b
    Add,
    /// a - b
    Sub,
    /// a * b
    Mul,
    /// a / b
    Div,
    /// max(a, b)
    Max,
}

impl FloatOp {
    const ALL: [FloatOp; 5] = [FloatOp::Add, FloatOp::Sub, FloatOp::Mul, FloatOp::Div, FloatOp::Max];

    /// The mnemonic without its prefix (`add`).
    pub fn name(self) -> &'static str {
        match self {
            FloatOp::Add => "add",
            FloatOp::Sub => "sub",
            FloatOp::Mul => "mul",
            FloatOp::Div => "div",
            FloatOp::Max => "max",
        }
    }

    /// Applies it (max is IEEE maxNum, as the core's `fmax`).
    pub fn apply(self, a: f32, b: f32) -> f32 {
        match self {
            FloatOp::Add => a + b,
            FloatOp::Sub => a - b,
            FloatOp::Mul => a * b,
            FloatOp::Div => a / b,
            FloatOp::Max => a.max(b),
        }
    }
}

/// A TU event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Event {
    /// Before the loop's first iteration.
    Begin,
    /// Every iteration.
    Iter,
    /// After its last iteration.
    End,
}

impl Event {
    /// Every event, in program order.
    pub const ALL: [Event; 3] = [Event::Begin, Event::Iter, Event::End];

    /// The name (`begin`).
    pub fn name(self) -> &'static str {
        match self {
            Event::Begin => "begin",
            Event::Iter => "iter",
            Event::End => "end",
        }
    }
}

/// An operation code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Opcode {
    /// `%i = for LO, HI[, STEP] { .. }`: a counted loop; the result is its induction variable.
    For,
    /// `%x = load @m, I..`: one element.
    Load,
    /// `store @m, I.., X`: one element.
    Store,
    /// `%x = OP A, B`: integer arithmetic.
    Int(IntOp),
    /// `%x = fOP A, B`: f32 arithmetic.
    Float(FloatOp),
    /// `%x = itof A`: integer to f32.
    IToF,
    /// `%v = vload @m, I.., N`: N (at most the vector length) consecutive elements of the last
    /// dimension from index I; the other lanes are zero.
    VLoad,
    /// `vstore @m, I.., N, V`: the first N lanes of V.
    VStore,
    /// `%v = vfOP A, B`: lane-wise f32 arithmetic.
    VFloat(FloatOp),
    /// `%v = vbcast X`: X in every lane.
    VBcast,
    /// `%x = vredsum V, N`: the sum of V's first N lanes, lane 0 first (a reduction's chunk).
    VRedSum,
    /// `%v = vload.buf B, OFF, N`: N elements from element OFF of buffer operand B (a row the
    /// access unit marshaled).
    VLoadBuf,
    /// `%v = vgetacc N`: vector accumulator N (a vector register that lives across loop
    /// iterations and callbacks; made by memory-op simplification).
    VGetAcc,
    /// `vsetacc N, V`: sets vector accumulator N.
    VSetAcc,
    /// `%x = get_var N`: queue-alignment variable N.
    GetVar,
    /// `increment_var N`.
    IncrementVar,
    /// `%i = slc.for LO, HI[, STEP] { .. }`: a loop the access unit runs (a TU); with a STEP
    /// above 1 it is vectorized, its induction variable the first element of each step.
    SlcFor,
    /// `%s = slc.mem @m, I..`: a stream of loaded elements.
    SlcMem,
    /// `%s = slc.vmem @m, I.., VL`: a stream of VL-element vectors (the last index the first).
    SlcVMem,
    /// `%s = slc.buf @m, I..`: a buffer stream: the whole row at I.. marshaled as one operand.
    SlcBuf,
    /// `%s = slc.OP A, B`: an ALU stream.
    SlcAlu(IntOp),
    /// `slc.on_EVENT { .. }`: a callback on the enclosing loop's event; its body is core ops.
    SlcCallback(Event),
    /// `%x = slc.from_stream S`: the head of stream S (a marshaled operand), in a callback.
    SlcFromStream,
    /// `dlc.configure_access { .. }`: the access unit's configuration.
    DlcConfigure,
    /// `%t = dlc.tu PARENT, LO, HI, STEP`: a traversal unit (PARENT is -1 for the root).
    DlcTu,
    /// `%s = dlc.ite T`: T's induction variable as a stream.
    DlcIte,
    /// `%s = dlc.mem T, @m, I..`: a memory stream of T.
    DlcMem,
    /// `%s = dlc.vmem T, @m, I.., VL`: a vector memory stream of T.
    DlcVMem,
    /// `%s = dlc.buf T, @m, I..`: a buffer stream of T.
    DlcBuf,
    /// `%s = dlc.OP T, A, B`: an ALU stream of T.
    DlcAlu(IntOp),
    /// `%s = dlc.fwd T, A`: a value of an enclosing TU carried into T.
    DlcFwd,
    /// `dlc.callback T, EVENT, ID`: control id ID on T's event (0 begin, 1 iter, 2 end).
    DlcCallback,
    /// `dlc.operand ID, S`: marshal stream S with callback ID.
    DlcOperand,
    /// `dlc.compute_loop { dlc.case .. }`: the core's dispatch loop.
    DlcComputeLoop,
    /// `dlc.case ID { .. }`: what the core does for control id ID.
    DlcCase,
    /// `%x = dlc.pop_operand`: the next marshaled operand of the current case.
    DlcPopOperand,
    /// `%c = dlc.next_entry`: moves to the queue's next entry, a continuation of the current
    /// case's callback (a callback of more operands than an entry carries is split).
    DlcNextEntry,
}

impl Opcode {
    /// Every opcode, for parsing and tests.
    pub fn all() -> Vec<Opcode> {
        let mut v = vec![Opcode::For, Opcode::Load, Opcode::Store];
        v.extend(IntOp::ALL.map(Opcode::Int));
        v.extend(FloatOp::ALL.map(Opcode::Float));
        v.extend([Opcode::IToF, Opcode::VLoad, Opcode::VStore]);
        v.extend(FloatOp::ALL.map(Opcode::VFloat));
        v.extend([
            Opcode::VBcast,
            Opcode::VRedSum,
            Opcode::VLoadBuf,
            Opcode::VGetAcc,
            Opcode::VSetAcc,
            Opcode::GetVar,
            Opcode::IncrementVar,
            Opcode::SlcFor,
            Opcode::SlcMem,
            Opcode::SlcVMem,
            Opcode::SlcBuf,
        ]);
        v.extend(IntOp::ALL.map(Opcode::SlcAlu));
        v.extend(Event::ALL.map(Opcode::SlcCallback));
        v.extend([
            Opcode::SlcFromStream,
            Opcode::DlcConfigure,
            Opcode::DlcTu,
            Opcode::DlcIte,
            Opcode::DlcMem,
            Opcode::DlcVMem,
            Opcode::DlcBuf,
        ]);
        v.extend(IntOp::ALL.map(Opcode::DlcAlu));
        v.extend([
            Opcode::DlcFwd,
            Opcode::DlcCallback,
            Opcode::DlcOperand,
            Opcode::DlcComputeLoop,
            Opcode::DlcCase,
            Opcode::DlcPopOperand,
            Opcode::DlcNextEntry,
        ]);
        v
    }

    /// The text name.
    pub fn name(self) -> String {
        match self {
            Opcode::For => "for".into(),
            Opcode::Load => "load".into(),
            Opcode::Store => "store".into(),
            Opcode::Int(op) => op.name().into(),
            Opcode::Float(op) => format!("f{}", op.name()),
            Opcode::IToF => "itof".into(),
            Opcode::VLoad => "vload".into(),
            Opcode::VStore => "vstore".into(),
            Opcode::VFloat(op) => format!("vf{}", op.name()),
            Opcode::VBcast => "vbcast".into(),
            Opcode::VRedSum => "vredsum".into(),
            Opcode::VLoadBuf => "vload.buf".into(),
            Opcode::VGetAcc => "vgetacc".into(),
            Opcode::VSetAcc => "vsetacc".into(),
            Opcode::GetVar => "get_var".into(),
            Opcode::IncrementVar => "increment_var".into(),
            Opcode::SlcFor => "slc.for".into(),
            Opcode::SlcMem => "slc.mem".into(),
            Opcode::SlcVMem => "slc.vmem".into(),
            Opcode::SlcBuf => "slc.buf".into(),
            Opcode::SlcAlu(op) => format!("slc.{}", op.name()),
            Opcode::SlcCallback(e) => format!("slc.on_{}", e.name()),
            Opcode::SlcFromStream => "slc.from_stream".into(),
            Opcode::DlcConfigure => "dlc.configure_access".into(),
            Opcode::DlcTu => "dlc.tu".into(),
            Opcode::DlcIte => "dlc.ite".into(),
            Opcode::DlcMem => "dlc.mem".into(),
            Opcode::DlcVMem => "dlc.vmem".into(),
            Opcode::DlcBuf => "dlc.buf".into(),
            Opcode::DlcAlu(op) => format!("dlc.{}", op.name()),
            Opcode::DlcFwd => "dlc.fwd".into(),
            Opcode::DlcCallback => "dlc.callback".into(),
            Opcode::DlcOperand => "dlc.operand".into(),
            Opcode::DlcComputeLoop => "dlc.compute_loop".into(),
            Opcode::DlcCase => "dlc.case".into(),
            Opcode::DlcPopOperand => "dlc.pop_operand".into(),
            Opcode::DlcNextEntry => "dlc.next_entry".into(),
        }
    }

    /// The opcode named `name`.
    pub fn from_name(name: &str) -> Option<Opcode> {
        Opcode::all().into_iter().find(|o| o.name() == name)
    }

    /// Whether it is a core op (loop level, callback and case bodies).
    pub fn is_core(self) -> bool {
        !self.name().contains('.') || self == Opcode::VLoadBuf
    }

    /// Whether it has one region.
    pub fn has_region(self) -> bool {
        matches!(
            self,
            Opcode::For
                | Opcode::SlcFor
                | Opcode::SlcCallback(_)
                | Opcode::DlcConfigure
                | Opcode::DlcComputeLoop
                | Opcode::DlcCase
        )
    }

    /// How many results it defines.
    pub fn result_count(self) -> usize {
        match self {
            Opcode::Store
            | Opcode::VStore
            | Opcode::IncrementVar
            | Opcode::VSetAcc
            | Opcode::SlcCallback(_)
            | Opcode::DlcConfigure
            | Opcode::DlcCallback
            | Opcode::DlcOperand
            | Opcode::DlcComputeLoop
            | Opcode::DlcCase => 0,
            _ => 1,
        }
    }
}
