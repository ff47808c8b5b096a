//! Functional execution: an embedding bag written in the core ISA gives the reference sums.

mod common;

use common::{Setup, System};
use exec_core::{FaultKind, OutputBuffer};
use mem_model::{Backing, MemoryImage, Region};
use sim_core::procedural::table_value;

const OFFSETS: u64 = 0x1000;
const INDICES: u64 = 0x2000;
const TABLE: u64 = 0x10_0000;
const OUT: u64 = 0x80_0000;
const DIM: u64 = 24;
const ROWS: u64 = 1000;
const SEED: u64 = 42;
const TABLE_ID: u32 = 3;

/// Sum pooling over bags: for each bag b, out[b] = sum of table rows indices[offsets[b]..
/// offsets[b+1]]. Rows are 24 f32 (96 B, so most rows straddle two 64-byte lines): one 16-lane
/// and one 8-lane load per row.
fn program(bags: usize) -> String {
    format!(
        "\
.core lanes=16
    li r1, 0                # bag
    li r2, {bags}
    li r10, {OFFSETS}
    li r11, {INDICES}
    li r12, {TABLE}
    li r13, {OUT}
bag:
    bge r1, r2, done
    shli r3, r1, 2
    add r3, r3, r10
    ld.u32 r4, [r3 + 0]     # first index of the bag
    ld.u32 r5, [r3 + 4]     # one past the last
    vzero v0
    vzero v1
idx:
    bge r4, r5, store
    shli r6, r4, 2
    add r6, r6, r11
    ld.u32 r7, [r6 + 0]     # row id
    muli r7, r7, {row}
    add r7, r7, r12
    vld v2, [r7 + 0], 16 !lookup
    vld v3, [r7 + 64], 8 !lookup
    vadd v0, v0, v2
    vadd v1, v1, v3
    addi r4, r4, 1
    jmp idx
store:
    muli r8, r1, {row}
    add r8, r8, r13
    vst v0, [r8 + 0], 16
    vst v1, [r8 + 64], 8
    addi r1, r1, 1
    jmp bag
done:
    halt
",
        row = DIM * 4
    )
}

/// Bags of varied sizes (including an empty one) over pseudo-random rows.
fn bags() -> (Vec<u32>, Vec<u32>) {
    let sizes = [3usize, 0, 7, 1, 12, 5, 2, 9];
    let mut offsets = vec![0u32];
    let mut indices = Vec::new();
    let mut x = 12345u64;
    for s in sizes {
        for _ in 0..s {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            indices.push(((x >> 33) % ROWS) as u32);
        }
        offsets.push(indices.len() as u32);
    }
    (offsets, indices)
}

fn image(offsets: &[u32], indices: &[u32], bags: usize) -> MemoryImage {
    let mut m = MemoryImage::new();
    let words = |name: &str, base, w: &[u32]| Region {
        name: name.into(),
        base,
        size: 4 * w.len() as u64,
        backing: Backing::Words(w.to_vec()),
    };
    m.add(words("offsets", OFFSETS, offsets)).unwrap();
    m.add(words("indices", INDICES, indices)).unwrap();
    m.add(Region {
        name: "table".into(),
        base: TABLE,
        size: ROWS * DIM * 4,
        backing: Backing::Procedural { seed: SEED, table: TABLE_ID, dim: DIM as u32 },
    })
    .unwrap();
    m.add(Region { name: "out".into(), base: OUT, size: bags as u64 * DIM * 4, backing: Backing::Zero })
        .unwrap();
    m
}

fn reference(offsets: &[u32], indices: &[u32]) -> Vec<f32> {
    let mut out = Vec::new();
    for b in 0..offsets.len() - 1 {
        for col in 0..DIM as u32 {
            let rows = &indices[offsets[b] as usize..offsets[b + 1] as usize];
            out.push(rows.iter().map(|&r| table_value(SEED, TABLE_ID, r as u64, col)).sum());
        }
    }
    out
}

fn run_bag(link_capacity: u32, max_outstanding: u32, issue_width: u32) -> System {
    let (offsets, indices) = bags();
    let n = offsets.len() - 1;
    let mut setup =
        Setup::new(image(&offsets, &indices, n), OutputBuffer { base: OUT, elems: n as u64 * DIM });
    setup.link_capacity = link_capacity;
    setup.cfg.max_outstanding = max_outstanding;
    setup.cfg.issue_width = issue_width;
    let mut sys = System::build(setup, &program(n)).expect("builds");
    sys.run().expect("runs to the end");
    let core = sys.core();
    assert_eq!(core.fault(), None);
    assert!(core.halted());
    let want = reference(&offsets, &indices);
    assert!(want.iter().any(|&v| v != 0.0), "the reference is not trivially zero");
    assert_eq!(core.outputs(), &want[..], "outputs equal the reference sums exactly");
    let c = core.counters();
    let lookups = 2 * indices.len() as u64;
    assert_eq!(c.lookups, lookups);
    assert_eq!(c.loads, lookups + indices.len() as u64 + 2 * n as u64);
    assert_eq!(c.stores, 2 * n as u64);
    let stats = sys.engine.stats();
    assert_eq!(stats.lookup_counter("core.lookups"), Some(lookups));
    assert_eq!(stats.lookup_counter("core.instructions"), Some(c.instructions));
    assert_eq!(stats.lookup_histogram("core.lookup_latency").map(|h| h.len()), Some(lookups));
    assert_eq!(stats.lookup_histogram("core.load_latency").map(|h| h.len()), Some(c.loads));
    // Every line request was answered: the memory saw as many as the core sent.
    let mem = stats.lookup_counter("mem.reads").unwrap() + stats.lookup_counter("mem.writes").unwrap();
    assert_eq!(mem, c.mem_requests);
    sys
}

#[test]
fn embedding_bag_matches_reference() {
    let sys = run_bag(64, 16, 1);
    let c = sys.core().counters();
    // Rows of 96 B at 96-B strides straddle a line boundary half the time: row loads need more
    // lines than row loads count (some of them merged into a request already in flight).
    assert!(c.mem_requests + c.merged_requests > c.loads + c.stores, "{c:?}");
    let lookup = sys.engine.stats().lookup_histogram("core.lookup_latency").unwrap();
    // 100 ns memory + 2 link hops of 1 ns: no request is faster. A lookup that merges into a
    // line already in flight waits only for the rest of that trip, so the bound holds for most
    // lookups rather than all.
    assert!(
        lookup.value_at_quantile(0.5) >= 102_000,
        "median lookup latency {}",
        lookup.value_at_quantile(0.5)
    );
    assert!(c.merged_requests > 0 || lookup.min() >= 102_000, "min lookup latency {}", lookup.min());
}

#[test]
fn embedding_bag_is_correct_under_back_pressure_and_wide_issue() {
    // A one-message request link refuses sends; one MSHR serialises everything.
    run_bag(1, 1, 1);
    run_bag(1, 4, 4);
    run_bag(2, 64, 8);
}

#[test]
fn loads_of_the_output_buffer_read_back_stores() {
    let mut m = MemoryImage::new();
    m.add(Region {
        name: "w".into(),
        base: 0x100,
        size: 16,
        backing: Backing::Words(vec![1.5f32.to_bits(), 2.5f32.to_bits(), 0, 0]),
    })
    .unwrap();
    let text = "\
.core lanes=4
    li r1, 0x100
    li r2, 0x1000
    vld v0, [r1 + 0], 4         # [1.5, 2.5, 0, 0]
    vadd v0, v0, v0             # [3, 5, 0, 0]
    vst v0, [r2 + 4], 4         # out = [0, 3, 5, 0, 0]
    vld v1, [r2 + 0], 4         # reads back [0, 3, 5, 0]
    vadd v1, v1, v0             # [3, 8, 5, 0]
    vst v1, [r2 + 0], 4         # out = [3, 8, 5, 0, 0]
    ld.u32 r3, [r2 + 4]
    halt
";
    let mut sys = System::build(Setup::new(m, OutputBuffer { base: 0x1000, elems: 5 }), text).unwrap();
    sys.run().unwrap();
    let core = sys.core();
    assert_eq!(core.fault(), None);
    assert_eq!(core.outputs(), &[3.0, 8.0, 5.0, 0.0, 0.0]);
    assert_eq!(core.reg(exec_core::Reg(3)), Some(i64::from(8.0f32.to_bits())));
}

fn fault_of(text: &str, image: MemoryImage) -> exec_core::CoreFault {
    let mut sys = System::build(Setup::new(image, OutputBuffer { base: 0x1000, elems: 4 }), text).unwrap();
    // A faulted core is not busy: the run ends normally and the caller reads the fault.
    sys.run().expect("a fault ends the run quietly");
    let core = sys.core();
    assert!(!core.halted());
    assert_eq!(core.finish_tick(), None);
    core.fault().cloned().expect("faults")
}

#[test]
fn program_errors_are_faults_not_panics() {
    let words = || {
        let mut m = MemoryImage::new();
        m.add(Region { name: "w".into(), base: 0x100, size: 16, backing: Backing::Words(vec![1, 2, 3, 4]) })
            .unwrap();
        m
    };
    let f = fault_of(".core lanes=4\n    li r1, 0x200\n    ld.u32 r2, [r1 + 0]\n    halt\n", words());
    assert_eq!(f.pc, 1);
    assert_eq!(
        f.to_string(),
        "pc 1 `ld.u32 r2, [r1 + 0]`: address 0x200 (4 B) is outside every memory region"
    );
    let f = fault_of(".core lanes=4\n    li r1, 0x100\n    vld v0, [r1 + 2], 1\n    halt\n", words());
    assert!(matches!(f.kind, FaultKind::Memory(mem_model::MemError::Misaligned { addr: 0x102, .. })), "{f}");
    let f = fault_of(".core lanes=4\n    li r1, 0x100\n    vld v0, [r1 + 8], 4\n    halt\n", words());
    assert!(matches!(f.kind, FaultKind::Memory(_)), "a row running off the region faults: {f}");
    let f = fault_of(".core lanes=4\n    li r1, 0\n    ld.u32 r2, [r1 - 4]\n    halt\n", words());
    assert_eq!(f.kind, FaultKind::BadAddress { base: 0, offset: -4 });
    let f = fault_of(".core lanes=4\n    li r1, 0x1008\n    vst v0, [r1 + 0], 4\n    halt\n", words());
    assert!(matches!(f.kind, FaultKind::StoreOutsideOutput { addr: 0x1008, bytes: 16, .. }), "{f}");
    let f = fault_of(".core lanes=4\n    li r1, 0x1002\n    vst v0, [r1 + 0], 1\n    halt\n", words());
    assert!(matches!(f.kind, FaultKind::StoreOutsideOutput { .. }), "misaligned store: {f}");
    let f = fault_of(".core lanes=4\n    li r1, 3\na:\nb:\n    switch r1, [a, b]\n", words());
    assert_eq!(f.kind, FaultKind::SwitchOutOfRange { value: 3, targets: 2 });
    let f = fault_of(".core lanes=4\n    li r1, -1\na:\n    switch r1, [a]\n", words());
    assert_eq!(f.kind, FaultKind::SwitchOutOfRange { value: -1, targets: 1 });
    let f = fault_of(".core lanes=4\n    li r1, 1\n", words());
    assert_eq!((f.pc, f.kind), (1, FaultKind::RanOffEnd));
    let f = fault_of(".core lanes=4\n    li r1, 7\n    remi r2, r1, 0\n    halt\n", words());
    assert_eq!(f.kind, FaultKind::DivByZero);
}

#[test]
fn switch_dispatches_on_the_selector() {
    let text = "\
.core lanes=4
    li r1, 2
    li r5, 0
    switch r1, [zero, one, two]
zero:
    addi r5, r5, 1
one:
    addi r5, r5, 10
two:
    addi r5, r5, 100
    halt
";
    let mut sys =
        System::build(Setup::new(MemoryImage::new(), OutputBuffer { base: 0, elems: 0 }), text).unwrap();
    sys.run().unwrap();
    assert_eq!(sys.core().fault(), None);
    assert_eq!(sys.core().reg(exec_core::Reg(5)), Some(100));
}

#[test]
fn bad_configurations_are_errors() {
    let build = |f: &dyn Fn(&mut Setup)| {
        let mut s = Setup::new(MemoryImage::new(), OutputBuffer { base: 0x1000, elems: 4 });
        f(&mut s);
        System::build(s, ".core lanes=4\n    halt\n").err().map(|e| e.to_string())
    };
    assert_eq!(build(&|_| {}), None);
    assert_eq!(
        build(&|s| s.cfg.issue_width = 0).as_deref(),
        Some("core core: issue_width must be at least 1")
    );
    assert!(build(&|s| s.cfg.max_outstanding = 0).is_some());
    assert!(build(&|s| s.cfg.line_bytes = 48).is_some());
    assert!(build(&|s| s.cfg.latency.div = 0).is_some());
    assert!(build(&|s| s.output.base = 2).is_some());
    assert!(build(&|s| s.output = OutputBuffer { base: 16, elems: u64::MAX / 2 }).is_some());
    assert!(build(&|s| s.output = OutputBuffer { base: 16, elems: 1 << 60 }).is_some());
    let no_queue = System::build(
        Setup::new(MemoryImage::new(), OutputBuffer { base: 0, elems: 0 }),
        ".core lanes=4\n    pop_control r1\n    halt\n",
    );
    assert!(no_queue.err().unwrap().to_string().contains("no queue link"));
}

/// Words 0..64 at 0x100 (word i holds i * 10) and f32 1.5, 2.5 at 0x400.
fn small_image() -> MemoryImage {
    let mut m = MemoryImage::new();
    let words: Vec<u32> = (0..64).map(|i| i * 10).collect();
    m.add(Region { name: "w".into(), base: 0x100, size: 256, backing: Backing::Words(words) }).unwrap();
    m.add(Region {
        name: "f".into(),
        base: 0x400,
        size: 8,
        backing: Backing::Words(vec![1.5f32.to_bits(), 2.5f32.to_bits()]),
    })
    .unwrap();
    m
}

#[test]
fn new_instructions_execute() {
    let text = "\
.core lanes=4
    li r1, 0x100
    li r2, 0x1000              # output buffer
    ld.u64 r3, [r1 + 8]        # words 2 and 3: 20 | 30 << 32
    st.u64 r3, [r2 + 0]        # out[0..2] = bits 20, 30
    st.u32 r3, [r2 + 8]        # out[2] = bits 20
    viota v1                   # [0, 1, 2, 3]
    vbcast v2, r9              # r9 = 0: [0; 4]
    li r9, 3
    vbcast v2, r9              # [3, 3, 3, 3]
    vmul.i32 v3, v1, v2        # [0, 3, 6, 9]
    vadd.i32 v3, v3, v2        # [3, 6, 9, 12]
    vsub.i32 v4, v3, v1        # [3, 5, 7, 9]
    vgather v5, [r1 + 0], v4 * 4, 4 !lookup   # words 3, 5, 7, 9
    li r10, 7
    li r11, 1
    li r12, 60
    vgather v6, [r1 + 4], r10 * 4, 3          # words 8, 2, 61
    vext r13, v5, 3            # 90
    vext r14, v6, 2            # 610
    li r15, 2
    vld v7, [r1 + 0], r15      # [0, 10, 0, 0]
    vst v7, [r2 + 12], r15     # out[3..5] = bits 0, 10
    li r16, 0x400
    ld.u32 r17, [r16 + 0]      # 1.5
    ld.u32 r18, [r16 + 4]      # 2.5
    fadd r19, r17, r18         # 4.0
    fmul r20, r17, r18         # 3.75
    fsub r21, r17, r18         # -1.0
    fmax r22, r17, r18         # 2.5
    li r23, -3
    fcvt r24, r23              # -3.0
    increment_var v0, 5
    increment_var v0, -2
    increment_var v3, 1
    get_var r25, v0            # 3
    get_var r26, v3            # 1
    get_var r27, v15           # 0
    halt
";
    let mut setup = Setup::new(small_image(), OutputBuffer { base: 0x1000, elems: 8 });
    setup.cfg.issue_width = 4;
    let mut sys = System::build(setup, text).unwrap();
    sys.run().unwrap();
    let core = sys.core();
    assert_eq!(core.fault(), None);
    assert!(core.finish_tick().is_some());
    let r = |n: u8| core.reg(exec_core::Reg(n)).unwrap();
    let f = |n: u8| f32::from_bits(r(n) as u32);
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(r(3), 20 | (30 << 32));
    assert_eq!(bits(core.vreg(exec_core::VReg(4)).unwrap()), vec![3, 5, 7, 9]);
    assert_eq!(bits(core.vreg(exec_core::VReg(5)).unwrap()), vec![30, 50, 70, 90]);
    assert_eq!(bits(core.vreg(exec_core::VReg(6)).unwrap()), vec![80, 20, 610, 0]);
    assert_eq!((r(13), r(14)), (90, 610));
    assert_eq!(bits(core.vreg(exec_core::VReg(7)).unwrap()), vec![0, 10, 0, 0]);
    assert_eq!((f(19), f(20), f(21), f(22), f(24)), (4.0, 3.75, -1.0, 2.5, -3.0));
    assert!(r(19) >= 0, "float results are zero-extended bits");
    assert_eq!((r(25), r(26), r(27)), (3, 1, 0));
    assert_eq!(core.var(exec_core::Var(0)), Some(3));
    assert_eq!(bits(core.outputs()), vec![20, 30, 20, 0, 10, 0, 0, 0]);
    let c = core.counters();
    // ld.u64, 2 gathers, masked vld, 2 ld.u32; 2 scalar stores and a masked vector store.
    assert_eq!((c.loads, c.lookups, c.stores), (6, 1, 3));
    // Lines per access: ld.u64 1, st.u64 1, st.u32 1, the vector-index gather 1 (its four
    // words lie in 0x100..0x124), the scalar-index gather 2 (0x100 and 0x1c0), the masked vld
    // 1, the masked vst 1, the two ld.u32 1 each; reads of a line in flight merge.
    assert_eq!(c.mem_requests + c.merged_requests, 10);
    assert!(c.merged_requests > 0);
}

#[test]
fn new_instruction_faults() {
    let fault = |text: &str| fault_of(text, small_image());
    let f = fault(".core lanes=4\n    li r1, 5\n    vld v0, [r2 + 0x100], r1\n    halt\n");
    assert_eq!(f.kind, FaultKind::CountOutOfRange { value: 5, lanes: 4 });
    let f = fault(".core lanes=4\n    li r1, -1\n    vst v0, [r2 + 0x1000], r1\n    halt\n");
    assert_eq!(f.kind, FaultKind::CountOutOfRange { value: -1, lanes: 4 });
    let f = fault(".core lanes=4\n    li r1, -100\n    vgather v0, [r2 + 0], r1 * 4, 1\n    halt\n");
    assert_eq!(f.kind, FaultKind::BadAddress { base: 0, offset: -400 });
    let f = fault(".core lanes=4\n    li r1, 0x104\n    ld.u64 r2, [r1 + 0]\n    halt\n");
    assert!(matches!(f.kind, FaultKind::Memory(mem_model::MemError::Misaligned { align: 8, .. })), "{f}");
    let f = fault(".core lanes=4\n    li r1, 0x1004\n    st.u64 r2, [r1 + 0]\n    halt\n");
    assert!(matches!(f.kind, FaultKind::StoreOutsideOutput { .. }), "{f}");
    let f = fault(".core lanes=4\n    li r1, 0x100c\n    st.u32 r2, [r1 + 4]\n    halt\n");
    assert!(matches!(f.kind, FaultKind::StoreOutsideOutput { addr: 0x1010, .. }), "{f}");
}

#[test]
fn zero_count_masked_accesses_touch_no_line() {
    let text =
        ".core lanes=4\n    li r1, 0x100\n    vld v0, [r1 + 0], r9\n    vst v0, [r1 + 0xf00], r9\n    halt\n";
    let mut sys =
        System::build(Setup::new(small_image(), OutputBuffer { base: 0x1000, elems: 4 }), text).unwrap();
    sys.run().unwrap();
    let core = sys.core();
    assert_eq!(core.fault(), None);
    assert!(core.finish_tick().is_some());
    assert_eq!(core.counters().mem_requests, 0);
}

/// A widening load reads an encoded table's f16, bf16 or int8 row and gives the values the
/// procedural table defines (int8: dequantized with the row's scale and bias, as a program
/// does it, `vmul` then `vadd`).
#[test]
fn widening_loads_read_encoded_tables() {
    use sim_core::procedural::{TableFormat, dequantize, keyed_q, keyed_scale_bias, row_params_key};
    const D: u32 = 20;
    for format in [TableFormat::F16, TableFormat::Bf16, TableFormat::Int8] {
        let row_bytes = format.row_bytes(D);
        let suffix = exec_core::isa::format_suffix(format);
        let mut m = MemoryImage::new();
        m.add(Region {
            name: "table".into(),
            base: TABLE,
            size: ROWS * row_bytes,
            backing: Backing::Encoded { seed: SEED, table: TABLE_ID, dim: D, format },
        })
        .unwrap();
        m.add(Region { name: "out".into(), base: OUT, size: 3 * u64::from(D) * 4, backing: Backing::Zero })
            .unwrap();
        let rows = [0u64, 7, 999];
        let mut text = String::from(".core lanes=16\n    li r13, 0x800000\n");
        for (n, row) in rows.iter().enumerate() {
            let at = TABLE + row * row_bytes;
            text += &format!("    li r2, {at}\n    li r5, 4\n");
            text += &format!("    vld.{suffix} v1, [r2 + 0], 16 !lookup\n");
            text += &format!("    vld.{suffix} v2, [r2 + {}], r5\n", 16 * format.elem_bytes());
            if format == TableFormat::Int8 {
                // Scale and bias after the values (unaligned words).
                text += &format!("    ld.u32 r6, [r2 + {D}]\n    ld.u32 r7, [r2 + {}]\n", D + 4);
                text += "    vbcast v3, r6\n    vbcast v4, r7\n";
                text +=
                    "    vmul v1, v1, v3\n    vadd v1, v1, v4\n    vmul v2, v2, v3\n    vadd v2, v2, v4\n";
            }
            let out = n as u64 * u64::from(D) * 4;
            text += &format!("    vst v1, [r13 + {out}], 16\n    vst v2, [r13 + {}], 4\n", out + 64);
        }
        text += "    halt\n";
        let setup = Setup::new(m, OutputBuffer { base: OUT, elems: 3 * u64::from(D) });
        let mut sys = System::build(setup, &text).expect("builds");
        sys.run().expect("runs");
        assert_eq!(sys.core().fault(), None, "{format:?}");
        let got = sys.core().outputs().to_vec();
        let mut want = Vec::new();
        for &row in &rows {
            for col in 0..D {
                want.push(match format {
                    TableFormat::Int8 => {
                        let key = sim_core::procedural::column_key(SEED, TABLE_ID, col);
                        let (s, b) = keyed_scale_bias(row_params_key(SEED, TABLE_ID), row);
                        dequantize(keyed_q(key, row), s, b)
                    }
                    _ => table_value(SEED, TABLE_ID, row, col),
                });
            }
        }
        assert_eq!(got, want, "{format:?}");
        assert!(want.iter().any(|&x| x != 0.0));
    }
}
