//! Timing of the out-of-order model: latency chains, out-of-order issue, functional-unit and
//! dispatch bounds, memory-level parallelism bounded by MSHRs, the load queue and the ROB (by
//! Little's law), ROB-full stalls, and branch mispredictions.
//!
//! The test system runs at 1 GHz (1 cycle = 1000 ps); memory answers 100 ns after a request
//! reaches it, plus 64 ps to move a 64-byte line, plus a 1-cycle link each way. One load's
//! round trip is therefore 102,064 ps, and its result is ready at the following edge: 103
//! cycles after the load issues.

mod common;

use common::{CYCLE, Setup, System, clock, finish_cycles, no_memory, run};
use exec_core::{FaultKind, OutputBuffer, Reg};
use mem_model::{Backing, MemoryImage, Region};
use sim_core::Component;

const ROUND_TRIP: u64 = 102_064;

#[test]
fn dependent_chain_takes_the_sum_of_latencies() {
    // addi (1) -> muli (3) -> divi (10), 20 times, all on r1: 280 cycles exactly, with a wide
    // front end and more units than the chain can use.
    let step = "    addi r1, r1, 1\n    muli r1, r1, 3\n    divi r1, r1, 2\n";
    let text = format!(".core lanes=1\n{}    halt\n", step.repeat(20));
    let mut setup = no_memory();
    setup.cfg.issue_width = 4;
    let sys = run(setup, &text);
    let core = sys.core();
    let mut want = 0i64;
    for _ in 0..20 {
        want = (want + 1) * 3 / 2;
    }
    assert_eq!(core.reg(Reg(1)), Some(want));
    assert_eq!(finish_cycles(&sys), 20 * (1 + 3 + 10));
    let c = core.counters();
    assert_eq!((c.instructions, c.retired), (61, 61));
    // The oldest instruction waited on the chain nearly all the time (retirement stalls).
    assert!(c.stall_operand_latency > 200 && c.stall_operand_memory == 0, "{c:?}");
    // One wake per dispatch cycle (16) plus the end: the core does not tick through latencies.
    assert!(sys.engine.events() <= 30, "{} events", sys.engine.events());

    for alu in [1u32, 4] {
        let n = 100u64;
        let text = format!(".core lanes=1\n{}    halt\n", "    addi r1, r1, 1\n".repeat(n as usize));
        let mut setup = no_memory();
        setup.cfg.latency.alu = alu;
        let sys = run(setup, &text);
        assert_eq!(sys.core().reg(Reg(1)), Some(n as i64));
        assert_eq!(finish_cycles(&sys), n * alu as u64, "alu latency {alu}");
        assert!(sys.engine.events() <= n + 5, "{} events", sys.engine.events());
    }
}

#[test]
fn independent_chains_issue_out_of_order() {
    // Chain A on r1 (addi, muli, divi: 14 cycles a step) and chain B on r2 (four muli: 12
    // cycles a step), interleaved. Out of order they overlap: the run takes the longer chain's
    // 280 cycles; issued in order it would take far longer.
    let mut body = String::new();
    for _ in 0..20 {
        body.push_str("    addi r1, r1, 1\n    muli r2, r2, 1\n    muli r1, r1, 3\n    muli r2, r2, 1\n");
        body.push_str("    divi r1, r1, 2\n    muli r2, r2, 1\n    muli r2, r2, 1\n");
    }
    let text = format!(".core lanes=1\n{body}    halt\n");
    let mut setup = no_memory();
    setup.cfg.issue_width = 4;
    let sys = run(setup, &text);
    assert_eq!(finish_cycles(&sys), 280);
    // Pipelined units: one multiply/divide unit still serves both chains.
    let mut setup = no_memory();
    setup.cfg.issue_width = 4;
    setup.cfg.fu.muldiv = 1;
    let sys = run(setup, &text);
    assert_eq!(finish_cycles(&sys), 280);
}

#[test]
fn dispatch_width_and_units_bound_independent_instructions() {
    let n = 40u64;
    let body: String = (0..n).map(|i| format!("    li r{}, {i}\n", i % 32)).collect();
    let text = format!(".core lanes=1\n{body}    halt\n");
    for (width, alus, cycles) in [(1u32, 8u32, 40u64), (4, 8, 10), (8, 8, 5), (8, 2, 20), (8, 5, 8)] {
        let mut setup = no_memory();
        setup.cfg.issue_width = width;
        setup.cfg.retire_width = 16;
        setup.cfg.fu.alu = alus;
        let sys = run(setup, &text);
        assert_eq!(finish_cycles(&sys), cycles, "width {width}, {alus} ALUs");
    }
    // 40 independent multiplies (3 cycles) on 1 or 2 pipelined units: one issue per unit and
    // cycle, the last result 3 cycles after the last issue.
    let body: String = (0..n).map(|i| format!("    mul r{}, r30, r31\n", i % 30)).collect();
    let text = format!(".core lanes=1\n{body}    halt\n");
    for (units, cycles) in [(1u32, 39 + 3), (2, 19 + 3), (8, 4 + 3)] {
        let mut setup = no_memory();
        setup.cfg.issue_width = 8;
        setup.cfg.retire_width = 16;
        setup.cfg.fu.muldiv = units;
        let sys = run(setup, &text);
        assert_eq!(finish_cycles(&sys), cycles, "{units} multiply units");
    }
}

#[test]
fn vectors_wider_than_the_datapath_are_cracked_into_micro_ops() {
    // 40 independent 16-lane (512-bit) vadds on 4 vector pipes (latency 2): a 512-bit datapath
    // issues 4 a cycle, a 128-bit one (Neoverse V2) cracks each into 4 micro-ops, so 1 a cycle.
    let n = 40u64;
    let body: String = (0..n).map(|i| format!("    vadd v{}, v30, v31\n", i % 30)).collect();
    let text = format!(".core lanes=16\n{body}    halt\n");
    for (bits, cycles) in [(512u32, 9 + 2), (256, 19 + 2), (128, 39 + 2)] {
        let mut setup = no_memory();
        setup.cfg.issue_width = 8;
        setup.cfg.retire_width = 16;
        setup.cfg.fu.vector = 4;
        setup.cfg.datapath_bits = bits;
        let sys = run(setup, &text);
        assert_eq!(finish_cycles(&sys), cycles, "{bits}-bit datapath");
    }
    // A lone vadd still takes its latency, its micro-ops issuing together.
    let mut setup = no_memory();
    setup.cfg.fu.vector = 4;
    setup.cfg.datapath_bits = 128;
    let sys = run(setup, ".core lanes=16\n    vadd v0, v1, v2\n    halt\n");
    assert_eq!(finish_cycles(&sys), 2);
}

#[test]
fn vector_loads_take_a_port_slot_per_datapath_width() {
    // 48 loads of distinct 64 B rows on 3 load ports, with MSHRs for all: whole rows issue 3 a
    // cycle (16 cycles), 128-bit micro-ops 3 a cycle (64 cycles); each answer comes a round
    // trip after its load issues, so the run ends 48 cycles later on the narrow ports.
    let mut m = MemoryImage::new();
    m.add(Region {
        name: "t".into(),
        base: 0x1000,
        size: 48 * 64,
        backing: Backing::Procedural { seed: 1, table: 0, dim: 16 },
    })
    .unwrap();
    let body: String = (0..48).map(|i| format!("    vld v{}, [r1 + {}], 16\n", i % 30, 64 * i)).collect();
    let text = format!(".core lanes=16\n    li r1, 0x1000\n{body}    halt\n");
    let mut finish = Vec::new();
    for bits in [512u32, 128] {
        let mut setup = Setup::new(m.clone(), OutputBuffer { base: 0, elems: 0 });
        setup.cfg.issue_width = 8;
        setup.cfg.retire_width = 16;
        setup.cfg.max_outstanding = 64;
        setup.cfg.fu.load = 3;
        setup.cfg.datapath_bits = bits;
        let sys = run(setup, &text);
        let c = sys.core().counters();
        assert_eq!((c.loads, c.mem_requests), (48, 48), "{bits}-bit");
        finish.push(finish_cycles(&sys));
    }
    assert_eq!(finish[1] - finish[0], 64 - 16, "{finish:?}");
}

#[test]
fn retire_width_bounds_retirement() {
    // 64 independent li behind a 10-cycle divide: all are done when the divide retires, then
    // retire `retire_width` a cycle.
    let body: String = (0..64).map(|i| format!("    li r{}, {i}\n", 2 + i % 28)).collect();
    let text = format!(".core lanes=1\n    divi r1, r1, 3\n{body}    halt\n");
    for (rw, cycles) in [(8u32, 10 + 65 / 8), (4, 10 + 65 / 4), (16, 10 + 65 / 16)] {
        let mut setup = no_memory();
        setup.cfg.issue_width = 16;
        setup.cfg.fu.alu = 16;
        setup.cfg.retire_width = rw;
        let sys = run(setup, &text);
        assert_eq!(finish_cycles(&sys), cycles, "retire width {rw}");
    }
}

/// Words at 0x1000, one per 64-byte line, each the address of the next: a pointer chase.
fn chain_image(n: u64) -> MemoryImage {
    let mut words = vec![0u32; (16 * (n + 1)) as usize];
    for i in 0..=n {
        words[(16 * i) as usize] = (0x1000 + 64 * (i + 1)) as u32;
    }
    let mut m = MemoryImage::new();
    m.add(Region {
        name: "chain".into(),
        base: 0x1000,
        size: 4 * words.len() as u64,
        backing: Backing::Words(words),
    })
    .unwrap();
    m
}

fn chase_program(n: u64) -> String {
    format!(".core lanes=1\n    li r1, 0x1000\n{}    halt\n", "    ld.u32 r1, [r1 + 0]\n".repeat(n as usize))
}

#[test]
fn dependent_loads_take_n_round_trips() {
    for n in [1u64, 10, 50] {
        let sys = run(Setup::new(chain_image(n), OutputBuffer { base: 0, elems: 0 }), &chase_program(n));
        let core = sys.core();
        assert_eq!(core.reg(Reg(1)), Some(0x1000 + 64 * n as i64), "the chase followed the pointers");
        assert!(sys.engine.events() < 10 * n + 10, "{} events for {n} loads", sys.engine.events());
        let c = core.counters();
        // The li is ready at cycle 1; each load then takes 103 cycles to its result.
        assert_eq!(finish_cycles(&sys), 1 + 103 * n, "{n} loads");
        assert_eq!(c.peak_loads_in_flight, 1);
        // Nothing retires while the oldest load waits: 103 cycles a load, less the cycle in
        // which the previous instruction retired.
        assert_eq!(c.stall_operand_memory, 102 * n, "{c:?}");
        let h = sys.engine.stats().lookup_histogram("core.load_latency").unwrap();
        // Every load took one round trip (to the histogram's 3 significant digits).
        assert!(
            h.equivalent(h.min(), ROUND_TRIP) && h.equivalent(h.max(), ROUND_TRIP),
            "{}..{}",
            h.min(),
            h.max()
        );
    }
}

/// `n` independent loads of distinct lines, each followed by `filler` independent ALU ops.
fn independent_loads(n: u64, filler: usize) -> String {
    let mut t = String::from(".core lanes=1\n    li r31, 0x1000\n");
    for i in 0..n {
        t.push_str(&format!("    ld.u32 r{}, [r31 + {}]\n", 1 + i % 8, 64 * i));
        t.push_str(&"    addi r20, r21, 1\n".repeat(filler));
    }
    t.push_str("    halt\n");
    t
}

#[test]
fn memory_parallelism_is_bounded_by_mshrs_lq_and_rob_littles_law() {
    let n = 256u64;
    struct Case {
        name: &'static str,
        mshrs: u32,
        lq: u32,
        rob: u32,
        filler: usize,
        bound: u64,
    }
    let cases = [
        Case { name: "mshr", mshrs: 4, lq: 128, rob: 320, filler: 0, bound: 4 },
        Case { name: "mshr", mshrs: 16, lq: 128, rob: 320, filler: 1, bound: 16 },
        Case { name: "lq", mshrs: 64, lq: 8, rob: 320, filler: 0, bound: 8 },
        Case { name: "lq", mshrs: 64, lq: 24, rob: 320, filler: 1, bound: 24 },
        // Each load takes 4 ROB entries (itself and 3 fillers): 48 entries hold 12 loads.
        Case { name: "rob", mshrs: 64, lq: 128, rob: 48, filler: 3, bound: 12 },
        Case { name: "rob", mshrs: 64, lq: 128, rob: 128, filler: 3, bound: 32 },
    ];
    for case in cases {
        let mut setup = Setup::new(chain_image(n), OutputBuffer { base: 0, elems: 0 });
        setup.cfg.issue_width = 8;
        setup.cfg.fu.alu = 8;
        setup.cfg.max_outstanding = case.mshrs;
        setup.cfg.lq_entries = case.lq;
        setup.cfg.rob_entries = case.rob;
        let sys = run(setup, &independent_loads(n, case.filler));
        let core = sys.core();
        let c = core.counters();
        let what = format!("{} bound {}: {c:?}", case.name, case.bound);
        assert_eq!(c.mem_requests, n, "{what}");
        // The binding bound is reached and never exceeded.
        assert_eq!(c.peak_loads_in_flight, case.bound, "{what}");
        // Little's law: loads in flight = throughput x time in flight. Throughput comes from the
        // run time, time in flight from the measured load latencies.
        let cycles = (core.finish_tick().unwrap() - CYCLE) as f64 / CYCLE as f64;
        let throughput = n as f64 / cycles;
        let latency = sys.engine.stats().lookup_histogram("core.load_latency").unwrap().mean() / CYCLE as f64;
        let in_flight = throughput * latency;
        let b = case.bound as f64;
        assert!((in_flight - b).abs() < 0.1 * b, "{what}: {in_flight:.2} in flight by Little's law");
        assert!(
            (c.avg_loads_in_flight() - in_flight).abs() < 0.05 * b,
            "{what}: avg {}",
            c.avg_loads_in_flight()
        );
        // The stall counters name the binding bound.
        let (rob, lq, mshr) = (c.stall_rob_full, c.stall_lq_full, c.stall_memory_slots);
        match case.name {
            "mshr" => assert!(mshr > 0 && lq == 0 && rob == 0, "{what}"),
            "lq" => assert!(lq > 0 && mshr == 0 && rob == 0, "{what}"),
            _ => assert!(rob > 0 && lq == 0 && mshr == 0, "{what}"),
        }
    }
}

#[test]
fn loads_to_a_line_in_flight_merge_into_one_request() {
    // 32 loads, four to each of 8 lines, one MSHR: 8 requests, 24 merged; each line costs one
    // round trip.
    let body: String = (0..32)
        .map(|i| format!("    ld.u32 r{}, [r31 + {}]\n", 1 + i % 8, 64 * (i / 4) + 4 * (i % 4)))
        .collect();
    let text = format!(".core lanes=1\n    li r31, 0x1000\n{body}    halt\n");
    let mut setup = Setup::new(chain_image(8), OutputBuffer { base: 0, elems: 0 });
    setup.cfg.issue_width = 4;
    setup.cfg.max_outstanding = 1;
    let sys = run(setup, &text);
    let c = sys.core().counters();
    assert_eq!((c.loads, c.mem_requests, c.merged_requests), (32, 8, 24));
    assert_eq!(sys.engine.stats().lookup_counter("mem.reads"), Some(8));
    let t = sys.core().finish_tick().unwrap();
    assert!(t > 8 * ROUND_TRIP && t < 8 * ROUND_TRIP + 30 * CYCLE, "{t}");
}

#[test]
fn a_full_rob_stops_dispatch() {
    // A load that misses (103 cycles) at the head, then 100 independent ALU ops: dispatch
    // (4 a cycle) stops with exactly `rob_entries` instructions in the window until the load's
    // result is back at cycle 103.
    let text = format!(
        ".core lanes=1\n    ld.u32 r1, [r31 + 0x1000]\n{}    halt\n",
        "    addi r2, r3, 1\n".repeat(100)
    );
    for rob in [32u64, 64] {
        let mut setup = Setup::new(chain_image(1), OutputBuffer { base: 0, elems: 0 });
        setup.cfg.issue_width = 4;
        setup.cfg.rob_entries = rob as u32;
        let mut sys = System::build(setup, &text).unwrap();
        sys.engine.run(Some(50 * CYCLE)).unwrap();
        let core = sys.core();
        assert_eq!(core.counters().instructions, rob, "dispatch stopped at the ROB size");
        assert_eq!(core.rob_occupancy() as u64, rob);
        assert!(core.status().contains("the ROB is full"), "{}", core.status());
        assert!(
            core.status().contains("(oldest: pc 0 `ld.u32 r1, [r31 + 4096]` waits for memory)"),
            "{}",
            core.status()
        );
        sys.run().unwrap();
        let c = sys.core().counters();
        // Stalled from the cycle after the ROB filled (rob / 4) to cycle 103.
        assert_eq!(c.stall_rob_full, 103 - rob / 4, "{c:?}");
        assert_eq!(c.retired, 102);
    }
    // A ROB larger than the program never fills.
    let mut setup = Setup::new(chain_image(1), OutputBuffer { base: 0, elems: 0 });
    setup.cfg.issue_width = 4;
    let sys = run(setup, &text);
    assert_eq!(sys.core().counters().stall_rob_full, 0);
    // The load retires at 103, then the other 101 at 8 a cycle.
    assert_eq!(finish_cycles(&sys), 103 + 102usize.div_ceil(8) as u64 - 1);
}

#[test]
fn a_full_store_queue_stops_dispatch() {
    // 32 stores to the output buffer: each holds its store-queue entry until its write is
    // answered (103 cycles), so a 4-entry store queue lets 4 writes overlap at a time.
    let body: String = (0..32).map(|i| format!("    st.u32 r1, [r30 + {}]\n", 64 * i)).collect();
    let text = format!(".core lanes=1\n    li r30, 0x100000\n{body}    halt\n");
    let mut setup = no_memory();
    setup.output = OutputBuffer { base: 0x10_0000, elems: 16 * 32 };
    setup.cfg.issue_width = 4;
    setup.cfg.sq_entries = 4;
    setup.cfg.max_outstanding = 64;
    let sys = run(setup, &text);
    let c = sys.core().counters();
    assert!(c.stall_sq_full > 6 * 100, "{c:?}");
    let t = finish_cycles_any(&sys);
    assert!((8 * 102..8 * 104 + 10).contains(&t), "{t} cycles");
}

fn finish_cycles_any(sys: &System) -> u64 {
    sys.core().finish_tick().expect("finished").div_ceil(CYCLE)
}

/// A loop of `n` iterations whose inner branch goes to the next instruction either way, so
/// that both programs execute the same instructions; `pattern` decides its direction.
fn branch_loop(n: u64, alternating: bool) -> String {
    let cond = if alternating { "beq r4, r5, next" } else { "beq r5, r5, next" };
    format!(
        ".core lanes=1\n    li r2, {n}\n    li r5, 0\nloop:\n    andi r4, r1, 1\n    {cond}\nnext:\n    \
         addi r1, r1, 1\n    blt r1, r2, loop\n    halt\n"
    )
}

#[test]
fn mispredictions_cost_the_penalty() {
    let n = 100u64;
    let time = |alternating: bool, penalty: u32| {
        let mut setup = no_memory();
        setup.cfg.issue_width = 4;
        setup.cfg.mispredict_penalty = penalty;
        let sys = run(setup, &branch_loop(n, alternating));
        assert_eq!(sys.core().reg(Reg(1)), Some(n as i64));
        (finish_cycles(&sys), sys.core().counters())
    };
    let (alt, c_alt) = time(true, 10);
    let (taken, c_taken) = time(false, 10);
    // 2-bit counters starting weakly not-taken: an alternating branch always mispredicts;
    // an always-taken one only the first time; the loop branch the first and the last time.
    assert_eq!(c_alt.branches, 2 * n);
    assert_eq!(c_alt.mispredictions, n + 2);
    assert_eq!(c_taken.mispredictions, 3);
    // Each misprediction stops dispatch for the penalty: 10 more cycles of penalty cost
    // exactly 10 cycles per misprediction.
    let (alt20, _) = time(true, 20);
    let (taken20, _) = time(false, 20);
    assert_eq!(alt20 - alt, 10 * (n + 2));
    assert_eq!(taken20 - taken, 10 * 3);
    assert!(alt > taken + (n - 1) * 10, "alternating {alt} vs taken {taken}");
    assert!(c_alt.stall_mispredict >= (n + 2) * 10, "{c_alt:?}");
}

#[test]
fn a_switch_predicts_its_last_target() {
    // The same callback id every time: one misprediction (the first); alternating ids: all.
    let text = |ids: &str| {
        format!(
            ".core lanes=1\n    li r2, 40\n    li r3, {ids}\nloop:\n    andi r4, r1, 1\n    mul r4, r4, r3\n    \
             switch r4, [a, b]\na:\n    jmp tail\nb:\n    jmp tail\ntail:\n    addi r1, r1, 1\n    blt r1, r2, loop\n    halt\n"
        )
    };
    let mut setup = no_memory();
    setup.cfg.issue_width = 4;
    let same = run(setup, &text("0"));
    let mut setup = no_memory();
    setup.cfg.issue_width = 4;
    let alternating = run(setup, &text("1"));
    // Switches mispredict 1 and 40 times; the loop branch twice in both.
    assert_eq!(same.core().counters().mispredictions, 1 + 2);
    assert_eq!(alternating.core().counters().mispredictions, 40 + 2);
    assert!(finish_cycles(&alternating) > finish_cycles(&same) + 39 * 10);
}

#[test]
fn rows_spanning_two_lines_make_two_requests() {
    let mut m = MemoryImage::new();
    m.add(Region {
        name: "t".into(),
        base: 0x1000,
        size: 4096,
        backing: Backing::Procedural { seed: 1, table: 0, dim: 16 },
    })
    .unwrap();
    // 16 f32 at 0x1020 straddle the lines at 0x1000 and 0x1040; the second load's line 0x1040
    // is then in flight and merges.
    let text = ".core lanes=16\n    li r1, 0x1020\n    vld v0, [r1 + 0], 16 !lookup\n    vld v1, [r1 + 32], 8\n    vadd v2, v0, v1\n    halt\n";
    let mut setup = Setup::new(m, OutputBuffer { base: 0, elems: 0 });
    setup.cfg.max_outstanding = 1;
    let sys = run(setup, text);
    let c = sys.core().counters();
    assert_eq!((c.loads, c.lookups, c.mem_requests, c.merged_requests), (2, 1, 2, 1));
    let lookup = sys.engine.stats().lookup_histogram("core.lookup_latency").unwrap();
    assert_eq!(lookup.len(), 1);
    // One MSHR: the lookup's two lines take two round trips in sequence.
    let lat = lookup.max();
    assert!((2 * ROUND_TRIP..2 * ROUND_TRIP + 2 * CYCLE).contains(&lat), "lookup latency {lat}");
}

#[test]
fn division_by_zero_faults_without_panicking() {
    let text = ".core lanes=1\n    li r1, 5\n    li r2, 0\n    div r3, r1, r2\n    halt\n";
    let mut sys = System::build(no_memory(), text).unwrap();
    let summary = sys.run().expect("the faulted core is not busy, so the run ends");
    let core = sys.core();
    let f = core.fault().expect("faults");
    assert_eq!((f.pc, &f.kind), (2, &FaultKind::DivByZero));
    assert_eq!(f.to_string(), "pc 2 `div r3, r1, r2`: division by zero");
    assert!(!core.halted());
    assert!(summary.events < 10);
    assert!(core.status().starts_with("faulted: pc 2"), "{}", core.status());
}

#[test]
fn status_says_what_the_core_waits_for() {
    let n = 5;
    let mut sys =
        System::build(Setup::new(chain_image(n), OutputBuffer { base: 0, elems: 0 }), &chase_program(n))
            .unwrap();
    let s = sys.engine.run(Some(50 * CYCLE)).unwrap();
    assert!(s.hit_limit);
    // Width 1: the whole chase and the halt are dispatched; the halt waits to retire.
    assert_eq!(sys.core().status(), "halted; 6 in the ROB, 1 requests in flight, 0 waiting to be sent");
    assert!(sys.core().busy());
    sys.run().unwrap();
    assert!(!sys.core().busy());
    assert!(sys.core().status().starts_with("finished at tick"), "{}", sys.core().status());

    let body: String = (0..6).map(|i| format!("    ld.u32 r{}, [r31 + {}]\n", i + 1, 64 * i)).collect();
    let text = format!(".core lanes=1\n    li r31, 0x1000\n{body}    halt\n");
    let mut setup = Setup::new(chain_image(6), OutputBuffer { base: 0, elems: 0 });
    setup.cfg.max_outstanding = 2;
    setup.cfg.lq_entries = 3;
    let mut sys = System::build(setup, &text).unwrap();
    sys.engine.run(Some(10 * CYCLE)).unwrap();
    assert_eq!(
        sys.core().status(),
        "pc 4 `ld.u32 r4, [r31 + 192]` waits: the load queue is full (oldest: pc 1 `ld.u32 r1, [r31 + 0]` \
         waits for memory); loads wait for a free miss slot; 3 in the ROB, 2 requests in flight, 1 waiting to be sent"
    );
    sys.run().unwrap();
    let c = sys.core().counters();
    assert!(c.stall_memory_slots > 0 && c.stall_lq_full == 0, "{c:?}");
}

#[test]
fn the_clock_is_respected() {
    // At 3 GHz a 100-op ALU chain takes 100 cycles of 333.33 ps.
    let text = format!(".core lanes=1\n{}    halt\n", "    addi r1, r1, 1\n".repeat(100));
    let mut setup = no_memory();
    let c3 = exec_core::CoreConfig::neoverse_v2_like_3ghz();
    setup.cfg = exec_core::CoreConfig { latency: setup.cfg.latency, ..c3 };
    let sys = run(setup, &text);
    assert_eq!(sys.core().finish_tick(), Some(c3.clock.edge(100)));
    let _ = clock();
}

#[test]
fn a_lookup_is_timed_over_its_whole_row() {
    // A 128 B row in two vector chunks, the second an unmarked load at the next address, and
    // one request at a time: the lookup waits for both lines, two round trips (it was timed by
    // its first chunk alone, one). A load elsewhere does not join the row.
    let text = ".core lanes=16\n    li r31, 0x1000\n    vld v1, [r31 + 0], 16 !lookup\n    \
                vld v2, [r31 + 64], 16\n    vld v3, [r31 + 256], 16\n    halt\n";
    let mut setup = Setup::new(chain_image(8), OutputBuffer { base: 0, elems: 0 });
    setup.cfg.max_outstanding = 1;
    let sys = run(setup, text);
    let h = sys.engine.stats().lookup_histogram("core.lookup_latency").expect("histogram");
    assert_eq!(h.len(), 1);
    let latency = h.max();
    assert!(latency > 2 * ROUND_TRIP && latency < 2 * ROUND_TRIP + 10 * CYCLE, "{latency}");
}
