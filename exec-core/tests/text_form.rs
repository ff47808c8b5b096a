//! The text form: round trips and parse errors.

use exec_core::{
    AluOp, Cond, CoreProgram, FOp, GatherIndex, Inst, Label, Reg, VIntOp, VReg, Var, Width, parse, print,
    verify,
};
use proptest::prelude::*;

/// A program with every instruction kind (and every ALU op and condition).
const EVERY_KIND: &str = "\
.core lanes=16
start:
    li r1, 5
    li r31, -9223372036854775808
    add r1, r2, r3
    sub r1, r2, r3
    mul r1, r2, r3
    div r1, r2, r3
    rem r1, r2, r3
    shl r1, r2, r3
    shr r1, r2, r3
    and r1, r2, r3
    or r1, r2, r3
    min r1, r2, r3
    max r1, r2, r3
    addi r1, r2, -4
    subi r1, r2, 4
    muli r1, r2, 128
    divi r1, r2, 3
    remi r1, r2, 3
    shli r1, r2, 2
    shri r1, r2, 2
    andi r1, r2, 255
    ori r1, r2, 1
    mini r1, r2, 0
    maxi r1, r2, 0
loop:
    beq r1, r2, start
    bne r1, r2, loop
    blt r1, r2, done
    bge r1, r2, done
    jmp loop
    switch r1, [start, loop, done]
    switch r2, []
    ld.u32 r1, [r2 + 16]
    ld.u32 r1, [r2 - 8]
    ld.u32 r1, [r2 + 0] !lookup
    vld v1, [r2 + 0], 16
    vld v31, [r2 + 64], 3 !lookup
    vldq v1, [r2 + 64], 16
    vzero v0
    vadd v0, v0, v1
    vmul v2, v0, v1
    vmax v3, v2, v1
    vst v0, [r4 + 0], 16
    pop_control r1
    pop_operand r2
    ld.u64 r1, [r2 + 8]
    ld.u64 r1, [r2 - 8] !lookup
    st.u32 r3, [r4 + 4]
    st.u64 r3, [r4 + 8]
    vld v1, [r2 + 0], r5
    vld v1, [r2 + 64], r5 !lookup
    vst v1, [r4 + 0], r6
    vgather v1, [r2 + 0], v3 * 96, 16 !lookup
    vgather v2, [r2 - 4], r8 * 4, 4
    fadd r1, r2, r3
    fsub r1, r2, r3
    fmul r1, r2, r3
    fmax r1, r2, r3
    fcvt r1, r2
    vadd.i32 v1, v2, v3
    vsub.i32 v1, v2, v3
    vmul.i32 v1, v2, v3
    vbcast v1, r2
    vext r1, v2, 15
    viota v4
    get_var r1, v15
    increment_var v0, -1
done:
    halt
end:
";

#[test]
fn every_instruction_kind_round_trips() {
    let p = parse(EVERY_KIND).expect("parses");
    assert_eq!(verify(&p), Ok(()));
    assert_eq!(print(&p), EVERY_KIND, "print(parse(text)) must give the text back");
    assert_eq!(parse(&print(&p)).expect("reparses"), p);
    // Spot-check the structure, so that a printer and parser that agree on a wrong form fail.
    assert_eq!(p.vector_lanes, 16);
    assert_eq!(p.insts[1], Inst::Li { rd: Reg(31), imm: i64::MIN });
    assert_eq!(p.insts[13], Inst::AluI { op: AluOp::Add, rd: Reg(1), ra: Reg(2), imm: -4 });
    assert_eq!(p.insts[26], Inst::Branch { cond: Cond::Lt, ra: Reg(1), rb: Reg(2), target: Label(2) });
    assert_eq!(p.insts[29], Inst::Switch { ra: Reg(1), targets: vec![Label(0), Label(1), Label(2)] });
    assert_eq!(p.insts[32], Inst::LoadU32 { rd: Reg(1), base: Reg(2), offset: -8, lookup: false });
    assert_eq!(p.insts[35], Inst::VLoad { vd: VReg(31), base: Reg(2), offset: 64, count: 3, lookup: true });
    assert_eq!(p.labels.iter().map(|l| l.1).collect::<Vec<_>>(), vec![0, 24, 66, 67]);
    assert_eq!(p.insts[45], Inst::LoadU64 { rd: Reg(1), base: Reg(2), offset: -8, lookup: true });
    assert_eq!(p.insts[47], Inst::Store { width: Width::W64, rs: Reg(3), base: Reg(4), offset: 8 });
    assert_eq!(
        p.insts[49],
        Inst::VLoadN { vd: VReg(1), base: Reg(2), offset: 64, count: Reg(5), lookup: true }
    );
    assert_eq!(p.insts[50], Inst::VStoreN { vs: VReg(1), base: Reg(4), offset: 0, count: Reg(6) });
    assert_eq!(
        p.insts[51],
        Inst::VGather {
            vd: VReg(1),
            base: Reg(2),
            offset: 0,
            index: GatherIndex::Vector(VReg(3)),
            scale: 96,
            count: 16,
            lookup: true
        }
    );
    assert_eq!(
        p.insts[52],
        Inst::VGather {
            vd: VReg(2),
            base: Reg(2),
            offset: -4,
            index: GatherIndex::Scalars(Reg(8)),
            scale: 4,
            count: 4,
            lookup: false
        }
    );
    assert_eq!(p.insts[55], Inst::FBin { op: FOp::Mul, rd: Reg(1), ra: Reg(2), rb: Reg(3) });
    assert_eq!(p.insts[59], Inst::VInt { op: VIntOp::Sub, vd: VReg(1), va: VReg(2), vb: VReg(3) });
    assert_eq!(p.insts[62], Inst::VExtract { rd: Reg(1), vs: VReg(2), lane: 15 });
    assert_eq!(p.insts[64], Inst::GetVar { rd: Reg(1), var: Var(15) });
    assert_eq!(p.insts[65], Inst::IncrementVar { var: Var(0), imm: -1 });
    let kinds: std::collections::HashSet<_> = p.insts.iter().map(std::mem::discriminant).collect();
    assert_eq!(kinds.len(), 30, "every Inst variant appears");
}

#[test]
fn new_instruction_errors() {
    let err = |body: &str| parse(&format!(".core lanes=4\n    {body}\n")).unwrap_err().to_string();
    assert_eq!(err("get_var r1, v16"), "line 2: register v16 out of range");
    assert_eq!(err("increment_var r1, 1"), "line 2: expected a variable, found \"r1\"");
    assert_eq!(err("vext r1, v2, 4"), "line 2: lane 4 is outside 0..4 (the vector lanes)");
    assert_eq!(err("vgather v1, [r2 + 0], v3, 4"), "line 2: expected \"*\", found \",\"");
    assert_eq!(err("vgather v1, [r2 + 0], v3 * 4, 5"), "line 2: count 5 is outside 1..=4 (the vector lanes)");
    assert_eq!(err("vgather v1, [r2 + 0], v3 * 4294967296, 4"), "line 2: invalid number \"4294967296\"");
    assert_eq!(err("st.u16 r1, [r2 + 0]"), "line 2: unknown instruction \"st.u16\"");
    // A gather from scalars must name existing registers for every lane (checked by verify).
    let p = parse(".core lanes=4\n    vgather v1, [r2 + 0], r30 * 4, 4\n").unwrap();
    assert!(matches!(verify(&p), Err(exec_core::CoreError::Register { reg, .. }) if reg == "r33"));
}

#[test]
fn comments_and_hex_are_accepted_but_not_printed() {
    let text = ".core lanes=4   # four lanes\n# a full-line comment\ntop:  # the loop\n  addi r1, r1, 0x10 # step\n  jmp top\n";
    let p = parse(text).expect("parses");
    assert_eq!(print(&p), ".core lanes=4\ntop:\n    addi r1, r1, 16\n    jmp top\n");
}

#[test]
fn unknown_instruction_names_line_and_text() {
    let text =
        ".core lanes=16\n    li r1, 0\n\n# comment\n    vzero v0\n    vadd v0, v0, v0\n    vsub v0, v0, v1\n";
    assert_eq!(parse(text).unwrap_err().to_string(), "line 7: unknown instruction \"vsub\"");
}

#[test]
fn bad_register_names_line_and_register() {
    let text = ".core lanes=16\n    add r1, r40, r2\n";
    assert_eq!(parse(text).unwrap_err().to_string(), "line 2: register r40 out of range");
    let text = ".core lanes=16\n    halt\n    vadd v0, v0, v32\n";
    assert_eq!(parse(text).unwrap_err().to_string(), "line 3: register v32 out of range");
}

#[test]
fn unknown_label_names_line_and_label() {
    let text = ".core lanes=16\nbar:\n    jmp foo\n";
    let e = parse(text).unwrap_err();
    assert_eq!(e.to_string(), "line 3: unknown label \"foo\"");
    assert_eq!(e.line, 3);
    let text = ".core lanes=16\n    switch r1, [a, b]\na:\n    halt\n";
    assert_eq!(parse(text).unwrap_err().to_string(), "line 2: unknown label \"b\"");
}

#[test]
fn out_of_order_labels_round_trip_after_canonicalize() {
    let mut p = CoreProgram {
        vector_lanes: 8,
        insts: vec![Inst::Jump { target: Label(0) }, Inst::Jump { target: Label(1) }, Inst::Halt],
        labels: vec![("exit".into(), 2), ("entry".into(), 0)],
    };
    let text = print(&p);
    assert_eq!(text, ".core lanes=8\nentry:\n    jmp exit\n    jmp entry\nexit:\n    halt\n");
    p.canonicalize();
    assert_eq!(parse(&text).expect("parses"), p);
}

// ---- random valid programs ----

fn reg() -> impl Strategy<Value = Reg> {
    (0u8..32).prop_map(Reg)
}

fn vreg() -> impl Strategy<Value = VReg> {
    (0u8..32).prop_map(VReg)
}

fn inst(lanes: u32, labels: u32) -> impl Strategy<Value = Inst> {
    let label = (0..labels.max(1)).prop_map(Label);
    let count = 1..=lanes;
    let alu = prop::sample::select(AluOp::ALL.to_vec());
    let cond = prop::sample::select(Cond::ALL.to_vec());
    let old_kinds =
        prop_oneof![
            (reg(), any::<i64>()).prop_map(|(rd, imm)| Inst::Li { rd, imm }),
            (alu.clone(), reg(), reg(), reg()).prop_map(|(op, rd, ra, rb)| Inst::Alu { op, rd, ra, rb }),
            (alu, reg(), reg(), any::<i64>()).prop_map(|(op, rd, ra, imm)| Inst::AluI { op, rd, ra, imm }),
            (reg(), reg(), any::<i64>(), any::<bool>())
                .prop_map(|(rd, base, offset, lookup)| Inst::LoadU32 { rd, base, offset, lookup }),
            (vreg(), reg(), any::<i64>(), count.clone(), any::<bool>()).prop_map(
                |(vd, base, offset, count, lookup)| Inst::VLoad { vd, base, offset, count, lookup }
            ),
            (vreg(), reg(), any::<i64>(), count.clone())
                .prop_map(|(vd, base, offset, count)| Inst::VLoadQueue { vd, base, offset, count }),
            (vreg(), reg(), any::<i64>(), count).prop_map(|(vs, base, offset, count)| Inst::VStore {
                vs,
                base,
                offset,
                count
            }),
            vreg().prop_map(|vd| Inst::VZero { vd }),
            (vreg(), vreg(), vreg()).prop_map(|(vd, va, vb)| Inst::VAdd { vd, va, vb }),
            (vreg(), vreg(), vreg()).prop_map(|(vd, va, vb)| Inst::VMul { vd, va, vb }),
            (vreg(), vreg(), vreg()).prop_map(|(vd, va, vb)| Inst::VMax { vd, va, vb }),
            reg().prop_map(|rd| Inst::PopControl { rd }),
            reg().prop_map(|rd| Inst::PopOperand { rd }),
            Just(Inst::Halt),
        ];
    let count2 = 1..=lanes;
    let new_kinds =
        prop_oneof![
            (reg(), reg(), any::<i64>(), any::<bool>())
                .prop_map(|(rd, base, offset, lookup)| Inst::LoadU64 { rd, base, offset, lookup }),
            (any::<bool>(), reg(), reg(), any::<i64>()).prop_map(|(w, rs, base, offset)| Inst::Store {
                width: if w { Width::W64 } else { Width::W32 },
                rs,
                base,
                offset
            }),
            (vreg(), reg(), any::<i64>(), reg(), any::<bool>()).prop_map(
                |(vd, base, offset, count, lookup)| Inst::VLoadN { vd, base, offset, count, lookup }
            ),
            (vreg(), reg(), any::<i64>(), reg()).prop_map(|(vs, base, offset, count)| Inst::VStoreN {
                vs,
                base,
                offset,
                count
            }),
            (vreg(), reg(), any::<i64>(), vreg(), any::<u32>(), count2.clone(), any::<bool>()).prop_map(
                |(vd, base, offset, vi, scale, count, lookup)| Inst::VGather {
                    vd,
                    base,
                    offset,
                    index: GatherIndex::Vector(vi),
                    scale,
                    count,
                    lookup
                }
            ),
            (vreg(), reg(), any::<i64>(), any::<u32>(), 1..=lanes.min(32), any::<bool>()).prop_flat_map(
                |(vd, base, offset, scale, count, lookup)| (0u8..=(32 - count.min(32)) as u8).prop_map(
                    move |first| {
                        Inst::VGather {
                            vd,
                            base,
                            offset,
                            index: GatherIndex::Scalars(Reg(first)),
                            scale,
                            count,
                            lookup,
                        }
                    }
                )
            ),
            (prop::sample::select(FOp::ALL.to_vec()), reg(), reg(), reg())
                .prop_map(|(op, rd, ra, rb)| Inst::FBin { op, rd, ra, rb }),
            (reg(), reg()).prop_map(|(rd, ra)| Inst::FCvt { rd, ra }),
            (prop::sample::select(VIntOp::ALL.to_vec()), vreg(), vreg(), vreg())
                .prop_map(|(op, vd, va, vb)| Inst::VInt { op, vd, va, vb }),
            (vreg(), reg()).prop_map(|(vd, rs)| Inst::VBcast { vd, rs }),
            (reg(), vreg(), 0..lanes).prop_map(|(rd, vs, lane)| Inst::VExtract { rd, vs, lane }),
            vreg().prop_map(|vd| Inst::VIota { vd }),
            (reg(), 0u8..16).prop_map(|(rd, v)| Inst::GetVar { rd, var: Var(v) }),
            (0u8..16, any::<i64>()).prop_map(|(v, imm)| Inst::IncrementVar { var: Var(v), imm }),
        ];
    let any = prop_oneof![2 => old_kinds, 1 => new_kinds];
    let branches = prop_oneof![
        (cond, reg(), reg(), label.clone()).prop_map(|(cond, ra, rb, target)| Inst::Branch {
            cond,
            ra,
            rb,
            target
        }),
        label.clone().prop_map(|target| Inst::Jump { target }),
        (reg(), prop::collection::vec(label, 0..5)).prop_map(|(ra, targets)| Inst::Switch { ra, targets }),
    ];
    if labels == 0 { any.boxed() } else { prop_oneof![3 => any, 1 => branches].boxed() }
}

fn program() -> impl Strategy<Value = CoreProgram> {
    (1u32..=64, 1usize..40, 0u32..6).prop_flat_map(|(lanes, len, nlabels)| {
        (
            prop::collection::vec(inst(lanes, nlabels), len),
            prop::collection::vec(0..=len as u32, nlabels as usize),
        )
            .prop_map(move |(insts, mut positions)| {
                positions.sort_unstable();
                let labels = positions.into_iter().enumerate().map(|(i, at)| (format!("l{i}"), at)).collect();
                CoreProgram { vector_lanes: lanes, insts, labels }
            })
    })
}

proptest! {
    #[test]
    fn random_programs_round_trip(p in program()) {
        prop_assert_eq!(verify(&p), Ok(()));
        let text = print(&p);
        let back = parse(&text);
        prop_assert!(back.is_ok(), "{:?}\n{}", back, text);
        let back = back.unwrap();
        prop_assert_eq!(print(&back), text);
        prop_assert_eq!(back, p);
    }

    #[test]
    fn arbitrary_text_never_panics(text in "(\\.core lanes=[0-9]{1,3}\n)?([a-z_.0-9]{0,8}( [-+\\[\\]!a-z0-9,]{0,12}){0,4}:?\n){0,6}") {
        let _ = parse(&text);
    }
}

/// The widening loads (`vld.f16`, `vld.bf16`, `vld.i8`, masked, and the queue forms).
const WIDENING: &str = "\
.core lanes=16
    vld.f16 v1, [r2 + 6], 16 !lookup
    vld.bf16 v2, [r2 - 2], 3
    vld.i8 v3, [r2 + 1], r5 !lookup
    vldq.f16 v4, [r3 + 2], 8
    vldq.bf16 v5, [r3 + 0], 1
    vldq.i8 v6, [r3 + 7], 16
    halt
";

#[test]
fn widening_loads_round_trip() {
    use exec_core::isa::TableFormat;
    let p = parse(WIDENING).expect("parses");
    assert_eq!(verify(&p), Ok(()));
    assert_eq!(print(&p), WIDENING);
    assert_eq!(parse(&print(&p)).expect("reparses"), p);
    assert_eq!(
        p.insts[0],
        Inst::VLoadWiden {
            fmt: TableFormat::F16,
            vd: VReg(1),
            base: Reg(2),
            offset: 6,
            count: 16,
            lookup: true
        }
    );
    assert_eq!(
        p.insts[1],
        Inst::VLoadWiden {
            fmt: TableFormat::Bf16,
            vd: VReg(2),
            base: Reg(2),
            offset: -2,
            count: 3,
            lookup: false
        }
    );
    assert_eq!(
        p.insts[2],
        Inst::VLoadWidenN {
            fmt: TableFormat::Int8,
            vd: VReg(3),
            base: Reg(2),
            offset: 1,
            count: Reg(5),
            lookup: true
        }
    );
    assert_eq!(
        p.insts[5],
        Inst::VLoadQueueWiden { fmt: TableFormat::Int8, vd: VReg(6), base: Reg(3), offset: 7, count: 16 }
    );
    for bad in [
        "vld.f32 v1, [r2 + 0], 4",
        "vld.u8 v1, [r2 + 0], 4",
        "vldq.i8 v1, [r2 + 0], r4",
        "vld.f16 v1, [r2 + 0], 17",
    ] {
        assert!(parse(&format!(".core lanes=16\n    {bad}\n")).is_err(), "{bad}");
    }
}
