//! The core ISA: registers, instructions, programs, and the structural check of a program.
//!
//! A small load/store ISA, just rich enough for the compute side of embedding operations:
//! 64-bit integer scalars for indices, addresses and loop counters; f32 vectors of a
//! configurable number of lanes for the rows; loads from memory (marked when they are embedding
//! lookups), loads of rows the access unit marshaled into the output queue, stores into the
//! core's output buffer, branches, and pops of the access unit's output queue. Control flow names
//! [`Label`]s, which index [`CoreProgram::labels`]; a label resolves to an instruction index.

use crate::CoreError;
use std::fmt;

/// Scalar registers per core.
pub const NUM_REGS: u8 = 32;
/// Vector registers per core.
pub const NUM_VREGS: u8 = 32;
/// Largest vector length in f32 lanes (2048 bits).
pub const MAX_LANES: u32 = 64;

/// A scalar register, `r0` to `r31`, holding an `i64` (there is no hardwired zero).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Reg(pub u8);

/// A vector register, `v0` to `v31`, holding [`CoreProgram::vector_lanes`] f32 values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct VReg(pub u8);

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
        /// An embedding lookup: its latency goes to the lookup-latency histogram.
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
        /// An embedding lookup: its latency goes to the lookup-latency histogram.
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
}

impl Inst {
    /// Every scalar and vector register the instruction names, for range checks.
    fn registers(&self) -> (Vec<Reg>, Vec<VReg>) {
        match self {
            Inst::Li { rd, .. } | Inst::PopControl { rd } | Inst::PopOperand { rd } => (vec![*rd], vec![]),
            Inst::Alu { rd, ra, rb, .. } => (vec![*rd, *ra, *rb], vec![]),
            Inst::AluI { rd, ra, .. } => (vec![*rd, *ra], vec![]),
            Inst::Branch { ra, rb, .. } => (vec![*ra, *rb], vec![]),
            Inst::Jump { .. } | Inst::Halt => (vec![], vec![]),
            Inst::Switch { ra, .. } => (vec![*ra], vec![]),
            Inst::LoadU32 { rd, base, .. } => (vec![*rd, *base], vec![]),
            Inst::VLoad { vd, base, .. } | Inst::VLoadQueue { vd, base, .. } => (vec![*base], vec![*vd]),
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
            Inst::VLoad { count, .. } | Inst::VLoadQueue { count, .. } | Inst::VStore { count, .. } => {
                Some(count)
            }
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
/// range, every register in range, and every element count in `1..=vector_lanes`.
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
    }
    Ok(())
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
