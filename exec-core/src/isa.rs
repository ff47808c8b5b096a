//! The core ISA: registers, instructions, programs, and the structural check of a program.
//!
//! A small load/store ISA, just rich enough for the compute side of embedding operations:
//! 64-bit integer scalars for indices, addresses and loop counters; vectors of a configurable
//! number of 32-bit lanes for the rows; loads from memory (scalar, vector, masked vector and
//! gather, marked when they are embedding lookups), loads of rows the access unit marshaled into
//! the output queue, scalar and vector stores into the core's output buffer, branches, pops of
//! the access unit's output queue, and Ember's queue-alignment variables. Control flow names
//! [`Label`]s, which index [`CoreProgram::labels`]; a label resolves to an instruction index.
//!
//! Values: a scalar register holds 64 bits, read as `i64` by integer ops; scalar float ops
//! ([`FOp`], `fcvt`) read and write the low 32 bits as an f32 (the result is the f32's bits,
//! zero-extended), so a weight popped from the queue or loaded with `ld.u32` is used as is. A
//! vector lane holds 32 bits: f32 for `vadd`/`vmul`/`vmax`, a wrapping i32 for the
//! [`VIntOp`]s and the lane indices of a gather (read as unsigned). Vector loads move bits, so
//! one `vld` loads rows of f32 or vectors of u32 indices alike.
//!
//! Widening loads (`vld.f16`, `vld.bf16`, `vld.i8` and their masked and queue-buffer forms
//! `vldq.f16`, ...) read `count` 2-byte or 1-byte elements, at any alignment, and convert each
//! to an f32 lane exactly (an int8 to its integer value; dequantizing is the program's `vmul`
//! and `vadd`). The conversion happens in the load pipe, as Arm SVE's widening loads (`LD1H`
//! into 32-bit lanes plus `FCVT`, fused): same latency and issue cost as `vld` (a micro-op per
//! `datapath_bits` of f32 lanes written: SVE's `LD1H` fills one register per micro-op),
//! fewer bytes.
//!
//! Masks: the masked forms of `vld` and `vst` take their element count from a scalar register
//! at run time (a prefix mask, the tail mask of a vectorized loop, which is the only mask shape
//! Ember's vectorizer produces); lanes past the count are zero.
//!
//! Variables: [`NUM_VARS`] core-side counters (`get_var`, `increment_var`, Ember's
//! queue-alignment variables), all zero at start. They replace induction values the access unit
//! would otherwise marshal through the queue: the core counts the events itself.

use crate::CoreError;
pub use sim_core::procedural::TableFormat;
use std::fmt;

/// Scalar registers per core.
pub const NUM_REGS: u8 = 32;
/// Vector registers per core.
pub const NUM_VREGS: u8 = 32;
/// Largest vector length in f32 lanes (2048 bits).
pub const MAX_LANES: u32 = 64;
/// Queue-alignment variables per core (`v0` to `v15` in `get_var` and `increment_var`).
pub const NUM_VARS: u8 = 16;

/// A scalar register, `r0` to `r31`, holding an `i64` (there is no hardwired zero).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Reg(pub u8);

/// A vector register, `v0` to `v31`, holding [`CoreProgram::vector_lanes`] f32 values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct VReg(pub u8);

/// A queue-alignment variable, `v0` to `v15`, holding an `i64` counter. It is written `vN`
/// like a vector register but only appears in `get_var` and `increment_var`, whose mnemonic
/// says which file it names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Var(pub u8);

impl fmt::Display for Var {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "v{}", self.0)
    }
}

/// The width of a scalar memory access.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Width {
    /// 4 bytes, zero-extended on load, the low 32 bits on store (`.u32`).
    W32,
    /// 8 bytes (`.u64`), 8-byte aligned.
    W64,
}

impl Width {
    /// Bytes moved.
    pub fn bytes(self) -> u64 {
        match self {
            Width::W32 => 4,
            Width::W64 => 8,
        }
    }

    /// The mnemonic suffix (`u32`).
    pub fn suffix(self) -> &'static str {
        match self {
            Width::W32 => "u32",
            Width::W64 => "u64",
        }
    }
}

/// A scalar f32 operation on the low 32 bits of two scalar registers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FOp {
    /// `a + b`.
    Add,
    /// `a - b`.
    Sub,
    /// `a * b`.
    Mul,
    /// `max(a, b)` (IEEE maxNum: a NaN operand gives the other).
    Max,
    /// `a / b` (IEEE: a zero divisor gives an infinity or NaN, not a fault).
    Div,
}

impl FOp {
    /// Every operation, in declaration order.
    pub const ALL: [FOp; 5] = [FOp::Add, FOp::Sub, FOp::Mul, FOp::Max, FOp::Div];

    /// The mnemonic (`fadd`).
    pub fn mnemonic(self) -> &'static str {
        match self {
            FOp::Add => "fadd",
            FOp::Sub => "fsub",
            FOp::Mul => "fmul",
            FOp::Max => "fmax",
            FOp::Div => "fdiv",
        }
    }

    /// The operation whose mnemonic is `name`.
    pub fn from_mnemonic(name: &str) -> Option<FOp> {
        FOp::ALL.into_iter().find(|op| op.mnemonic() == name)
    }

    /// Applies the operation.
    pub fn apply(self, a: f32, b: f32) -> f32 {
        match self {
            FOp::Add => a + b,
            FOp::Sub => a - b,
            FOp::Mul => a * b,
            FOp::Max => a.max(b),
            FOp::Div => a / b,
        }
    }
}

/// A lane-wise vector integer operation on wrapping 32-bit lanes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum VIntOp {
    /// `a + b`, wrapping.
    Add,
    /// `a - b`, wrapping.
    Sub,
    /// `a * b`, wrapping.
    Mul,
}

impl VIntOp {
    /// Every operation, in declaration order.
    pub const ALL: [VIntOp; 3] = [VIntOp::Add, VIntOp::Sub, VIntOp::Mul];

    /// The mnemonic (`vadd.i32`).
    pub fn mnemonic(self) -> &'static str {
        match self {
            VIntOp::Add => "vadd.i32",
            VIntOp::Sub => "vsub.i32",
            VIntOp::Mul => "vmul.i32",
        }
    }

    /// The operation whose mnemonic is `name`.
    pub fn from_mnemonic(name: &str) -> Option<VIntOp> {
        VIntOp::ALL.into_iter().find(|op| op.mnemonic() == name)
    }

    /// Applies the operation to one lane's bits.
    pub fn apply(self, a: u32, b: u32) -> u32 {
        match self {
            VIntOp::Add => a.wrapping_add(b),
            VIntOp::Sub => a.wrapping_sub(b),
            VIntOp::Mul => a.wrapping_mul(b),
        }
    }
}

/// Where a gather's per-lane indices come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GatherIndex {
    /// Lane `i` of a vector register, read as a `u32`.
    Vector(VReg),
    /// Scalar register `first + i`, read as an `i64` (the registers must exist for every lane).
    Scalars(Reg),
}

/// A branch target: an index into [`CoreProgram::labels`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Label(pub u32);

impl fmt::Display for Reg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "r{}", self.0)
    }
}

impl fmt::Display for VReg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "v{}", self.0)
    }
}

/// A two-operand integer operation on `i64`.
///
/// Add, Sub and Mul wrap; Div and Rem truncate toward zero and fault on a zero divisor (and
/// wrap for `i64::MIN / -1`); shifts use the low 6 bits of the amount and `Shr` is arithmetic;
/// Min and Max compare signed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AluOp {
    /// `a + b`, wrapping.
    Add,
    /// `a - b`, wrapping.
    Sub,
    /// `a * b`, wrapping.
    Mul,
    /// `a / b`; a zero divisor is a fault.
    Div,
    /// `a % b`; a zero divisor is a fault.
    Rem,
    /// `a << (b & 63)`.
    Shl,
    /// `a >> (b & 63)`, arithmetic.
    Shr,
    /// Bitwise and.
    And,
    /// Bitwise or.
    Or,
    /// Signed minimum.
    Min,
    /// Signed maximum.
    Max,
}

impl AluOp {
    /// Every operation, in declaration order.
    pub const ALL: [AluOp; 11] = [
        AluOp::Add,
        AluOp::Sub,
        AluOp::Mul,
        AluOp::Div,
        AluOp::Rem,
        AluOp::Shl,
        AluOp::Shr,
        AluOp::And,
        AluOp::Or,
        AluOp::Min,
        AluOp::Max,
    ];

    /// The mnemonic of the register form (`add`); the immediate form appends `i` (`addi`).
    pub fn mnemonic(self) -> &'static str {
        match self {
            AluOp::Add => "add",
            AluOp::Sub => "sub",
            AluOp::Mul => "mul",
            AluOp::Div => "div",
            AluOp::Rem => "rem",
            AluOp::Shl => "shl",
            AluOp::Shr => "shr",
            AluOp::And => "and",
            AluOp::Or => "or",
            AluOp::Min => "min",
            AluOp::Max => "max",
        }
    }

    /// The operation whose register-form mnemonic is `name`.
    pub fn from_mnemonic(name: &str) -> Option<AluOp> {
        AluOp::ALL.into_iter().find(|op| op.mnemonic() == name)
    }

    /// Applies the operation; `None` for a division or remainder by zero.
    pub fn apply(self, a: i64, b: i64) -> Option<i64> {
        Some(match self {
            AluOp::Add => a.wrapping_add(b),
            AluOp::Sub => a.wrapping_sub(b),
            AluOp::Mul => a.wrapping_mul(b),
            AluOp::Div if b == 0 => return None,
            AluOp::Div => a.wrapping_div(b),
            AluOp::Rem if b == 0 => return None,
            AluOp::Rem => a.wrapping_rem(b),
            // wrapping_shl/shr take the amount modulo 64, the documented semantics.
            AluOp::Shl => a.wrapping_shl(b as u32),
            AluOp::Shr => a.wrapping_shr(b as u32),
            AluOp::And => a & b,
            AluOp::Or => a | b,
            AluOp::Min => a.min(b),
            AluOp::Max => a.max(b),
        })
    }
}

/// A branch condition: a signed comparison of two scalar registers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Cond {
    /// `a == b`.
    Eq,
    /// `a != b`.
    Ne,
    /// `a < b`, signed.
    Lt,
    /// `a >= b`, signed.
    Ge,
}

impl Cond {
    /// Every condition, in declaration order.
    pub const ALL: [Cond; 4] = [Cond::Eq, Cond::Ne, Cond::Lt, Cond::Ge];

    /// The branch mnemonic (`beq`).
    pub fn mnemonic(self) -> &'static str {
        match self {
            Cond::Eq => "beq",
            Cond::Ne => "bne",
            Cond::Lt => "blt",
            Cond::Ge => "bge",
        }
    }

    /// The condition whose branch mnemonic is `name`.
    pub fn from_mnemonic(name: &str) -> Option<Cond> {
        Cond::ALL.into_iter().find(|c| c.mnemonic() == name)
    }

    /// Whether the branch is taken.
    pub fn holds(self, a: i64, b: i64) -> bool {
        match self {
            Cond::Eq => a == b,
            Cond::Ne => a != b,
            Cond::Lt => a < b,
            Cond::Ge => a >= b,
        }
    }
}

/// One instruction. Addresses are `base register + offset` in bytes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Inst {
    /// `rd = imm`.
    Li {
        /// Destination.
        rd: Reg,
        /// The value.
        imm: i64,
    },
    /// `rd = ra op rb`.
    Alu {
        /// The operation.
        op: AluOp,
        /// Destination.
        rd: Reg,
        /// First source.
        ra: Reg,
        /// Second source.
        rb: Reg,
    },
    /// `rd = ra op imm`.
    AluI {
        /// The operation.
        op: AluOp,
        /// Destination.
        rd: Reg,
        /// Source.
        ra: Reg,
        /// Immediate second operand.
        imm: i64,
    },
    /// Jumps to `target` if `cond(ra, rb)` holds.
    Branch {
        /// The comparison.
        cond: Cond,
        /// First compared register.
        ra: Reg,
        /// Second compared register.
        rb: Reg,
        /// Where to go when taken.
        target: Label,
    },
    /// Jumps to `target`.
    Jump {
        /// Where to go.
        target: Label,
    },
    /// Jumps to `targets[ra]`; a value out of range is a fault.
    Switch {
        /// The selector.
        ra: Reg,
        /// One target per selector value, from 0.
        targets: Vec<Label>,
    },
    /// `rd` = the zero-extended 32-bit word at `base + offset`.
    LoadU32 {
        /// Destination.
        rd: Reg,
        /// Address base.
        base: Reg,
        /// Byte offset.
        offset: i64,
        /// An embedding lookup starts here: its row (this load and the vector loads that continue
        /// it at the next address) is timed into the lookup-latency histogram.
        lookup: bool,
    },
    /// `vd` = `count` consecutive f32 from `base + offset`; the other lanes are zero.
    VLoad {
        /// Destination.
        vd: VReg,
        /// Address base.
        base: Reg,
        /// Byte offset.
        offset: i64,
        /// Elements loaded, `1..=vector_lanes`.
        count: u32,
        /// An embedding lookup starts here: its row (this load and the vector loads that continue
        /// it at the next address) is timed into the lookup-latency histogram.
        lookup: bool,
    },
    /// Like [`Inst::VLoad`], from a row the access unit marshaled into the output queue: no
    /// memory request, and the queue-load latency.
    VLoadQueue {
        /// Destination.
        vd: VReg,
        /// Address base (a marshaled row's address, usually from `pop_operand`).
        base: Reg,
        /// Byte offset.
        offset: i64,
        /// Elements loaded, `1..=vector_lanes`.
        count: u32,
    },
    /// A widening [`Inst::VLoad`] (`vld.f16`): `count` elements of `fmt` (not f32) from
    /// `base + offset`, each converted to an f32 lane; the other lanes are zero.
    VLoadWiden {
        /// The stored element format.
        fmt: TableFormat,
        /// Destination.
        vd: VReg,
        /// Address base.
        base: Reg,
        /// Byte offset.
        offset: i64,
        /// Elements loaded, `1..=vector_lanes`.
        count: u32,
        /// An embedding lookup starts here: its row (this load and the vector loads that continue
        /// it at the next address) is timed into the lookup-latency histogram.
        lookup: bool,
    },
    /// Masked [`Inst::VLoadWiden`]: the element count from a register at run time.
    VLoadWidenN {
        /// The stored element format.
        fmt: TableFormat,
        /// Destination.
        vd: VReg,
        /// Address base.
        base: Reg,
        /// Byte offset.
        offset: i64,
        /// The register holding the element count.
        count: Reg,
        /// An embedding lookup starts here: its row (this load and the vector loads that continue
        /// it at the next address) is timed into the lookup-latency histogram.
        lookup: bool,
    },
    /// A widening [`Inst::VLoadQueue`] (`vldq.f16`): from a row the access unit marshaled.
    VLoadQueueWiden {
        /// The stored element format.
        fmt: TableFormat,
        /// Destination.
        vd: VReg,
        /// Address base (a marshaled row's address).
        base: Reg,
        /// Byte offset.
        offset: i64,
        /// Elements loaded, `1..=vector_lanes`.
        count: u32,
    },
    /// `vd` = all zeros.
    VZero {
        /// Destination.
        vd: VReg,
    },
    /// `vd = va + vb`, lane by lane.
    VAdd {
        /// Destination.
        vd: VReg,
        /// First source.
        va: VReg,
        /// Second source.
        vb: VReg,
    },
    /// `vd = va * vb`, lane by lane.
    VMul {
        /// Destination.
        vd: VReg,
        /// First source.
        va: VReg,
        /// Second source.
        vb: VReg,
    },
    /// `vd = max(va, vb)`, lane by lane.
    VMax {
        /// Destination.
        vd: VReg,
        /// First source.
        va: VReg,
        /// Second source.
        vb: VReg,
    },
    /// Stores the first `count` lanes of `vs` at `base + offset`, inside the output buffer.
    VStore {
        /// The stored register.
        vs: VReg,
        /// Address base.
        base: Reg,
        /// Byte offset.
        offset: i64,
        /// Elements stored, `1..=vector_lanes`.
        count: u32,
    },
    /// `rd` = the control id of the next output-queue entry (waits while the queue is empty).
    PopControl {
        /// Destination.
        rd: Reg,
    },
    /// `rd` = the next operand of the current output-queue entry.
    PopOperand {
        /// Destination.
        rd: Reg,
    },
    /// Stops the core once its memory requests complete.
    Halt,
    /// `rd` = the 64-bit word at `base + offset` (8-byte aligned).
    LoadU64 {
        /// Destination.
        rd: Reg,
        /// Address base.
        base: Reg,
        /// Byte offset.
        offset: i64,
        /// An embedding lookup starts here: its row (this load and the vector loads that continue
        /// it at the next address) is timed into the lookup-latency histogram.
        lookup: bool,
    },
    /// Stores the low `width` bytes of `rs` at `base + offset`, inside the output buffer.
    Store {
        /// 4 or 8 bytes.
        width: Width,
        /// The stored register.
        rs: Reg,
        /// Address base.
        base: Reg,
        /// Byte offset.
        offset: i64,
    },
    /// Masked [`Inst::VLoad`]: loads as many elements as `count` holds at run time
    /// (`0..=vector_lanes`, else a fault); the other lanes are zero.
    VLoadN {
        /// Destination.
        vd: VReg,
        /// Address base.
        base: Reg,
        /// Byte offset.
        offset: i64,
        /// The register holding the element count.
        count: Reg,
        /// An embedding lookup starts here: its row (this load and the vector loads that continue
        /// it at the next address) is timed into the lookup-latency histogram.
        lookup: bool,
    },
    /// Masked [`Inst::VStore`]: stores as many lanes as `count` holds at run time.
    VStoreN {
        /// The stored register.
        vs: VReg,
        /// Address base.
        base: Reg,
        /// Byte offset.
        offset: i64,
        /// The register holding the element count.
        count: Reg,
    },
    /// Gather: lane `i < count` of `vd` = the 32-bit word at `base + offset + index_i * scale`;
    /// the other lanes are zero. Each distinct line is one memory request.
    VGather {
        /// Destination.
        vd: VReg,
        /// Address base.
        base: Reg,
        /// Byte offset.
        offset: i64,
        /// Where the lane indices come from.
        index: GatherIndex,
        /// Bytes per index step.
        scale: u32,
        /// Lanes gathered, `1..=vector_lanes`.
        count: u32,
        /// An embedding lookup starts here: its row (this load and the vector loads that continue
        /// it at the next address) is timed into the lookup-latency histogram.
        lookup: bool,
    },
    /// `rd = ra op rb` on f32 values in the low 32 bits.
    FBin {
        /// The operation.
        op: FOp,
        /// Destination.
        rd: Reg,
        /// First source.
        ra: Reg,
        /// Second source.
        rb: Reg,
    },
    /// `rd` = the bits of `ra` (an `i64`) converted to f32.
    FCvt {
        /// Destination.
        rd: Reg,
        /// Source.
        ra: Reg,
    },
    /// `vd = va op vb` on wrapping 32-bit integer lanes.
    VInt {
        /// The operation.
        op: VIntOp,
        /// Destination.
        vd: VReg,
        /// First source.
        va: VReg,
        /// Second source.
        vb: VReg,
    },
    /// Every lane of `vd` = the low 32 bits of `rs`.
    VBcast {
        /// Destination.
        vd: VReg,
        /// Source.
        rs: Reg,
    },
    /// `rd` = lane `lane` of `vs`, zero-extended.
    VExtract {
        /// Destination.
        rd: Reg,
        /// Source.
        vs: VReg,
        /// The lane, `0..vector_lanes`.
        lane: u32,
    },
    /// Lane `i` of `vd` = `i` as a u32 (lane indices, for tail masks and strided gathers).
    VIota {
        /// Destination.
        vd: VReg,
    },
    /// `rd` = the value of queue-alignment variable `var`.
    GetVar {
        /// Destination.
        rd: Reg,
        /// The variable.
        var: Var,
    },
    /// Adds `imm` to queue-alignment variable `var` (wrapping).
    IncrementVar {
        /// The variable.
        var: Var,
        /// The increment.
        imm: i64,
    },
}

impl Inst {
    /// Every scalar and vector register the instruction names, for range checks (a gather from
    /// scalar registers names its first and last index register; variables are checked apart).
    fn registers(&self) -> (Vec<Reg>, Vec<VReg>) {
        match self {
            Inst::LoadU64 { rd, base, .. } => (vec![*rd, *base], vec![]),
            Inst::Store { rs, base, .. } => (vec![*rs, *base], vec![]),
            Inst::VLoadN { vd, base, count, .. } => (vec![*base, *count], vec![*vd]),
            Inst::VStoreN { vs, base, count, .. } => (vec![*base, *count], vec![*vs]),
            Inst::VGather { vd, base, index: GatherIndex::Vector(vi), .. } => (vec![*base], vec![*vd, *vi]),
            Inst::VGather { vd, base, index: GatherIndex::Scalars(first), count, .. } => {
                let last = u32::from(first.0) + count.saturating_sub(1);
                (vec![*base, *first, Reg(last.min(255) as u8)], vec![*vd])
            }
            Inst::FBin { rd, ra, rb, .. } => (vec![*rd, *ra, *rb], vec![]),
            Inst::FCvt { rd, ra } => (vec![*rd, *ra], vec![]),
            Inst::VInt { vd, va, vb, .. } => (vec![], vec![*vd, *va, *vb]),
            Inst::VBcast { vd, rs } => (vec![*rs], vec![*vd]),
            Inst::VExtract { rd, vs, .. } => (vec![*rd], vec![*vs]),
            Inst::VIota { vd } => (vec![], vec![*vd]),
            Inst::GetVar { rd, .. } => (vec![*rd], vec![]),
            Inst::IncrementVar { .. } => (vec![], vec![]),
            Inst::Li { rd, .. } | Inst::PopControl { rd } | Inst::PopOperand { rd } => (vec![*rd], vec![]),
            Inst::Alu { rd, ra, rb, .. } => (vec![*rd, *ra, *rb], vec![]),
            Inst::AluI { rd, ra, .. } => (vec![*rd, *ra], vec![]),
            Inst::Branch { ra, rb, .. } => (vec![*ra, *rb], vec![]),
            Inst::Jump { .. } | Inst::Halt => (vec![], vec![]),
            Inst::Switch { ra, .. } => (vec![*ra], vec![]),
            Inst::LoadU32 { rd, base, .. } => (vec![*rd, *base], vec![]),
            Inst::VLoad { vd, base, .. }
            | Inst::VLoadQueue { vd, base, .. }
            | Inst::VLoadWiden { vd, base, .. }
            | Inst::VLoadQueueWiden { vd, base, .. } => (vec![*base], vec![*vd]),
            Inst::VLoadWidenN { vd, base, count, .. } => (vec![*base, *count], vec![*vd]),
            Inst::VStore { vs, base, .. } => (vec![*base], vec![*vs]),
            Inst::VZero { vd } => (vec![], vec![*vd]),
            Inst::VAdd { vd, va, vb } | Inst::VMul { vd, va, vb } | Inst::VMax { vd, va, vb } => {
                (vec![], vec![*vd, *va, *vb])
            }
        }
    }

    /// The labels the instruction names.
    pub fn labels(&self) -> &[Label] {
        match self {
            Inst::Branch { target, .. } | Inst::Jump { target } => std::slice::from_ref(target),
            Inst::Switch { targets, .. } => targets,
            _ => &[],
        }
    }

    /// The element count of a vector memory instruction.
    pub fn count(&self) -> Option<u32> {
        match *self {
            Inst::VLoad { count, .. }
            | Inst::VLoadQueue { count, .. }
            | Inst::VLoadWiden { count, .. }
            | Inst::VLoadQueueWiden { count, .. }
            | Inst::VStore { count, .. }
            | Inst::VGather { count, .. } => Some(count),
            _ => None,
        }
    }
}

/// A core program: the vector length, the instructions, and the labels.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CoreProgram {
    /// f32 lanes per vector register, `1..=64` (16 = 512 bits).
    pub vector_lanes: u32,
    /// The instructions; execution starts at index 0.
    pub insts: Vec<Inst>,
    /// Label name and the instruction index it marks (`insts.len()` marks the end).
    ///
    /// `parse(print(p)) == p` holds when labels are listed in order of their instruction index,
    /// which is the order the parser produces; [`CoreProgram::canonicalize`] puts any program in
    /// that order.
    pub labels: Vec<(String, u32)>,
}

impl CoreProgram {
    /// The instruction index that `label` marks, if it exists.
    pub fn target(&self, label: Label) -> Option<u32> {
        self.labels.get(label.0 as usize).map(|l| l.1)
    }

    /// Reorders the labels by instruction index (stable) and renumbers the references, so
    /// that the program round-trips through its text form exactly.
    pub fn canonicalize(&mut self) {
        let mut order: Vec<usize> = (0..self.labels.len()).collect();
        order.sort_by_key(|&i| self.labels[i].1);
        let mut new_index = vec![0u32; self.labels.len()];
        for (new, &old) in order.iter().enumerate() {
            new_index[old] = new as u32;
        }
        let old_labels = std::mem::take(&mut self.labels);
        self.labels = order.iter().map(|&i| old_labels[i].clone()).collect();
        let renumber = |l: &mut Label| {
            if let Some(&n) = new_index.get(l.0 as usize) {
                l.0 = n;
            }
        };
        for inst in &mut self.insts {
            match inst {
                Inst::Branch { target, .. } | Inst::Jump { target } => renumber(target),
                Inst::Switch { targets, .. } => targets.iter_mut().for_each(renumber),
                _ => {}
            }
        }
    }
}

/// Whether `name` can be a label: an identifier of letters, digits, `_`, `.` and `$`, not
/// starting with a digit.
pub fn valid_label_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_' || c == '.' || c == '$')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.' || c == '$')
}

/// Checks a program's structure: a non-empty program, lanes in `1..=64`, well-formed unique
/// label names marking instructions of the program (or its end), every label reference in
/// range, every register and variable in range (all the index registers of a gather from
/// scalars), every element count in `1..=vector_lanes` and every extracted lane below it.
pub fn verify(program: &CoreProgram) -> Result<(), CoreError> {
    if program.insts.is_empty() {
        return Err(CoreError::EmptyProgram);
    }
    if !(1..=MAX_LANES).contains(&program.vector_lanes) {
        return Err(CoreError::Lanes(program.vector_lanes));
    }
    let len = program.insts.len();
    let mut names = std::collections::HashSet::with_capacity(program.labels.len());
    for (name, target) in &program.labels {
        if !valid_label_name(name) {
            return Err(CoreError::LabelName(name.clone()));
        }
        if !names.insert(name.as_str()) {
            return Err(CoreError::DuplicateLabel(name.clone()));
        }
        if *target as usize > len {
            return Err(CoreError::LabelTarget { name: name.clone(), target: *target, len });
        }
    }
    let text = |i: usize| crate::text::format_inst(program, &program.insts[i]);
    for (index, inst) in program.insts.iter().enumerate() {
        let (regs, vregs) = inst.registers();
        let bad = regs
            .iter()
            .find(|r| r.0 >= NUM_REGS)
            .map(|r| r.to_string())
            .or_else(|| vregs.iter().find(|v| v.0 >= NUM_VREGS).map(|v| v.to_string()));
        if let Some(reg) = bad {
            return Err(CoreError::Register { index, inst: text(index), reg });
        }
        if let Some(label) = inst.labels().iter().find(|l| l.0 as usize >= program.labels.len()) {
            return Err(CoreError::Label {
                index,
                inst: text(index),
                label: label.0,
                labels: program.labels.len(),
            });
        }
        if let Some(count) = inst.count()
            && !(1..=program.vector_lanes).contains(&count)
        {
            return Err(CoreError::Count { index, inst: text(index), count, lanes: program.vector_lanes });
        }
        match *inst {
            Inst::GetVar { var, .. } | Inst::IncrementVar { var, .. } if var.0 >= NUM_VARS => {
                return Err(CoreError::Register { index, inst: text(index), reg: format!("variable {var}") });
            }
            Inst::VExtract { lane, .. } if lane >= program.vector_lanes => {
                return Err(CoreError::Lane { index, inst: text(index), lane, lanes: program.vector_lanes });
            }
            _ => {}
        }
    }
    Ok(())
}

/// The mnemonic suffix of a widening load's element format (`f16`, `bf16`, `i8`; `f32` has
/// none).
pub fn format_suffix(fmt: TableFormat) -> &'static str {
    match fmt {
        TableFormat::F32 => "f32",
        TableFormat::F16 => "f16",
        TableFormat::Bf16 => "bf16",
        TableFormat::Int8 => "i8",
    }
}

/// The narrow format whose suffix is `name`.
pub fn format_from_suffix(name: &str) -> Option<TableFormat> {
    [TableFormat::F16, TableFormat::Bf16, TableFormat::Int8].into_iter().find(|f| format_suffix(*f) == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prog(insts: Vec<Inst>, labels: Vec<(&str, u32)>) -> CoreProgram {
        CoreProgram {
            vector_lanes: 16,
            insts,
            labels: labels.into_iter().map(|(n, i)| (n.to_string(), i)).collect(),
        }
    }

    #[test]
    fn alu_semantics() {
        assert_eq!(AluOp::Div.apply(7, 0), None);
        assert_eq!(AluOp::Rem.apply(7, 0), None);
        assert_eq!(AluOp::Div.apply(i64::MIN, -1), Some(i64::MIN));
        assert_eq!(AluOp::Div.apply(-7, 2), Some(-3));
        assert_eq!(AluOp::Rem.apply(-7, 2), Some(-1));
        assert_eq!(AluOp::Shl.apply(1, 65), Some(2));
        assert_eq!(AluOp::Shr.apply(-8, 1), Some(-4));
        assert_eq!(AluOp::Add.apply(i64::MAX, 1), Some(i64::MIN));
        assert_eq!(AluOp::Min.apply(-1, 3), Some(-1));
        assert_eq!(AluOp::Max.apply(-1, 3), Some(3));
        for op in AluOp::ALL {
            assert_eq!(AluOp::from_mnemonic(op.mnemonic()), Some(op));
        }
        assert!(Cond::Lt.holds(-1, 0) && !Cond::Ge.holds(-1, 0));
    }

    #[test]
    fn verify_rejects_each_structural_error() {
        let ok = prog(vec![Inst::Jump { target: Label(0) }, Inst::Halt], vec![("top", 0)]);
        assert_eq!(verify(&ok), Ok(()));
        assert_eq!(verify(&prog(vec![], vec![])), Err(CoreError::EmptyProgram));
        let mut lanes = ok.clone();
        lanes.vector_lanes = 65;
        assert_eq!(verify(&lanes), Err(CoreError::Lanes(65)));
        let bad_label = prog(vec![Inst::Jump { target: Label(1) }], vec![("top", 0)]);
        assert!(matches!(verify(&bad_label), Err(CoreError::Label { index: 0, label: 1, .. })));
        let bad_reg = prog(vec![Inst::Li { rd: Reg(32), imm: 0 }], vec![]);
        let e = verify(&bad_reg).unwrap_err();
        assert_eq!(e.to_string(), "instruction 0 `li r32, 0`: register r32 out of range");
        let bad_vreg = prog(vec![Inst::VZero { vd: VReg(40) }], vec![]);
        assert!(matches!(verify(&bad_vreg), Err(CoreError::Register { reg, .. }) if reg == "v40"));
        let bad_count = prog(vec![Inst::VStore { vs: VReg(0), base: Reg(0), offset: 0, count: 17 }], vec![]);
        assert!(matches!(verify(&bad_count), Err(CoreError::Count { count: 17, .. })));
        let zero_count =
            prog(vec![Inst::VLoadQueue { vd: VReg(0), base: Reg(0), offset: 0, count: 0 }], vec![]);
        assert!(matches!(verify(&zero_count), Err(CoreError::Count { count: 0, .. })));
        let dup = prog(vec![Inst::Halt], vec![("a", 0), ("a", 1)]);
        assert_eq!(verify(&dup), Err(CoreError::DuplicateLabel("a".into())));
        let past_end = prog(vec![Inst::Halt], vec![("a", 2)]);
        assert!(matches!(verify(&past_end), Err(CoreError::LabelTarget { target: 2, .. })));
        let bad_name = prog(vec![Inst::Halt], vec![("1a", 0)]);
        assert_eq!(verify(&bad_name), Err(CoreError::LabelName("1a".into())));
    }

    #[test]
    fn canonicalize_sorts_labels_and_renumbers() {
        let mut p = prog(
            vec![
                Inst::Jump { target: Label(0) },
                Inst::Switch { ra: Reg(1), targets: vec![Label(1), Label(0)] },
            ],
            vec![("end", 2), ("top", 0)],
        );
        p.canonicalize();
        assert_eq!(p.labels, vec![("top".to_string(), 0), ("end".to_string(), 2)]);
        assert_eq!(p.insts[0], Inst::Jump { target: Label(1) });
        assert_eq!(p.insts[1], Inst::Switch { ra: Reg(1), targets: vec![Label(0), Label(1)] });
    }
}
