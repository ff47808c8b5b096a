//! The out-of-order model's finer rules against its documented behaviour (crate docs, core.rs
//! module docs, README "The machine", DESIGN.md section 5): tiny windows, queue pops,
//! callbacks, loaded trip counts, variables, gathers, lookup rows with empty chunks, widening
//! loads, loads of stored words, the end of a run, and merging behind a waiting miss.
//!
//! Test system as in timing.rs: 1 GHz, memory 100 ns + 64 ps a line + a 1-cycle link each way,
//! so a load issued at cycle t has its result at cycle t + 103.

mod common;

use common::{CYCLE, Setup, finish_cycles, no_memory, run};
use exec_core::{OutputBuffer, QueueEntry, Reg, Var};
use mem_model::{Backing, MemoryImage, Region};
use sim_core::Component;

/// `size` bytes of zero words at `base`.
fn zero_image(base: u64, size: u64) -> MemoryImage {
    let mut m = MemoryImage::new();
    m.add(Region { name: "t".into(), base, size, backing: Backing::Words(vec![0; (size / 4) as usize]) })
        .unwrap();
    m
}

// ---------------------------------------------------------------------------------------------
// Issue-slot calendar and long latencies.

/// Core docs: "An instruction issues once its sources are ready and a functional unit of its
/// class ... has a slot". Sixteen ALU ops that all wait for one long-latency divide must still
/// share the single ALU, one a cycle, however far in the future the divide's result lies.
#[test]
fn consumers_of_a_long_latency_result_share_the_units() {
    let body: String = (0..16).map(|i| format!("    addi r{}, r1, 1\n", 2 + i)).collect();
    let text = format!(".core lanes=1\n    divi r1, r1, 1\n{body}    halt\n");
    for div in [1000u32, 5000] {
        let mut setup = no_memory();
        setup.cfg.issue_width = 8;
        setup.cfg.retire_width = 32;
        setup.cfg.fu.alu = 1;
        setup.cfg.latency.div = div;
        let sys = run(setup, &text);
        // The divide completes at `div`; the 16 adds issue at div..div+15 on the one ALU, the
        // last result at div + 16.
        assert_eq!(finish_cycles(&sys), u64::from(div) + 16, "div latency {div}");
    }
}

// ---------------------------------------------------------------------------------------------
// Window sizes.

/// A ROB of one entry: each instruction dispatches only once the previous one has retired,
/// whatever the dispatch width.
#[test]
fn a_rob_of_one_serializes_the_window() {
    let n = 20u64;
    let body: String = (0..n).map(|i| format!("    li r{}, {i}\n", i % 30)).collect();
    let text = format!(".core lanes=1\n{body}    halt\n");
    let mut setup = no_memory();
    setup.cfg.issue_width = 4;
    setup.cfg.rob_entries = 1;
    let sys = run(setup, &text);
    // li i dispatches at cycle i and retires at i + 1; the halt dispatches and retires at n.
    assert_eq!(finish_cycles(&sys), n);
    let c = sys.core().counters();
    assert_eq!((c.instructions, c.retired), (n + 1, n + 1));
    // One dispatches every cycle: no cycle without dispatch, so no stall cycle is counted.
    assert_eq!(c.stall_rob_full, 0, "{c:?}");
    // The same with a ROB large enough: 4 a cycle (the last li at cycle 4, ready at 5, when
    // the halt dispatches and retires).
    let mut setup = no_memory();
    setup.cfg.issue_width = 4;
    let sys = run(setup, &text);
    assert_eq!(finish_cycles(&sys), n / 4);
}

/// A load queue of one entry with a pop_control/pop_operand pair: each pop holds the entry
/// until it retires, so the pops serialize at the queue-pop latency.
#[test]
fn queue_pops_take_load_queue_entries() {
    let text = ".core lanes=1\n    pop_control r1\n    pop_operand r2\n    pop_operand r3\n    halt\n";
    let entries = vec![QueueEntry::new(5, &[6, 7]).unwrap()];
    let time = |lq: u32| {
        let mut setup = no_memory();
        setup.cfg.issue_width = 4;
        setup.cfg.lq_entries = lq;
        setup.queue = Some((entries.clone(), 0, 0));
        let sys = run(setup, text);
        let core = sys.core();
        assert_eq!((core.reg(Reg(1)), core.reg(Reg(2)), core.reg(Reg(3))), (Some(5), Some(6), Some(7)));
        (finish_cycles(&sys), core.counters().stall_lq_full)
    };
    let (wide, s_wide) = time(8);
    let (one, s_one) = time(1);
    // queue_pop = 2 in the test config: three pops in a row on one LQ entry cost 2 more
    // cycles each than three pops at once.
    assert_eq!(one, wide + 4, "lq 1: {one}, lq 8: {wide}");
    assert_eq!(s_wide, 0);
    // Cycles 1 and 3: nothing dispatched while the one entry was held.
    assert_eq!(s_one, 2);
}

// ---------------------------------------------------------------------------------------------
// Callback dispatch.

/// Core docs: "A `pop_control` followed by a `switch` on the callback id thus costs a queue
/// load, then an indirect branch that mispredicts whenever the callback differs from the
/// previous one." Alternating callbacks cost queue_pop + alu + penalty each.
#[test]
fn an_alternating_callback_costs_a_queue_load_a_branch_and_the_penalty() {
    let text = ".core lanes=1\nloop:\n    pop_control r1\n    switch r1, [a, b, done]\na:\n    jmp loop\nb:\n    \
                jmp loop\ndone:\n    halt\n";
    let time = |n: u32, alternating: bool| {
        let mut entries: Vec<QueueEntry> =
            (0..n).map(|i| QueueEntry::new(if alternating { i % 2 } else { 0 }, &[]).unwrap()).collect();
        entries.push(QueueEntry::new(2, &[]).unwrap());
        let mut setup = no_memory();
        setup.cfg.issue_width = 4;
        setup.queue = Some((entries, 0, 0));
        let sys = run(setup, text);
        (finish_cycles(&sys), sys.core().counters())
    };
    let (t20, c20) = time(20, true);
    let (t40, c40) = time(40, true);
    assert_eq!(c40.mispredictions - c20.mispredictions, 20);
    // queue_pop (2) + switch (1) + penalty (10) per callback.
    assert_eq!(t40 - t20, 20 * (2 + 1 + 10), "{t20} {t40}");
    // The same callback every time: the switch predicts it; pop and switch still wait for the
    // pop's latency, but dispatch does not stop: iterations overlap.
    let (s20, _) = time(20, false);
    let (s40, _) = time(40, false);
    assert!(s40 - s20 < 20 * 3, "{s20} {s40}");
}

// ---------------------------------------------------------------------------------------------
// Branches, zero-trip loops.

/// A loop whose trip count is loaded from memory as 0: the loop guard's branch waits for the
/// load, mispredicts (first execution predicts fall-through) and dispatch resumes `penalty`
/// cycles after it resolves; the body never runs.
#[test]
fn a_zero_trip_loop_with_a_loaded_count_waits_for_the_load_and_the_penalty() {
    let text = ".core lanes=1\n    li r31, 0x1000\n    ld.u32 r2, [r31 + 4]\n    li r1, 0\n    \
                bge r1, r2, done\nloop:\n    addi r3, r3, 1\n    addi r1, r1, 1\n    blt r1, r2, loop\ndone:\n    \
                halt\n";
    let mut setup = Setup::new(zero_image(0x1000, 64), OutputBuffer { base: 0, elems: 0 });
    setup.cfg.issue_width = 4;
    let sys = run(setup, text);
    let core = sys.core();
    assert_eq!(core.reg(Reg(3)), Some(0), "the body never ran");
    let c = core.counters();
    assert_eq!((c.branches, c.mispredictions), (1, 1));
    // li at 0 (ready 1), the load issues at 1 (result 104), the branch resolves at 105, the
    // halt dispatches 10 cycles later and retires at once.
    assert_eq!(finish_cycles(&sys), 104 + 1 + 10);
    assert_eq!(c.stall_mispredict, 115 - 1, "{c:?}");
}

// ---------------------------------------------------------------------------------------------
// Queue-alignment variables.

#[test]
fn increment_var_chains_take_alu_latencies_and_get_var_waits_for_them() {
    let text = format!(
        ".core lanes=1\n{}    get_var r1, v3\n    increment_var v4, 1\n    get_var r2, v4\n    halt\n",
        "    increment_var v3, 2\n".repeat(10)
    );
    let mut setup = no_memory();
    setup.cfg.issue_width = 16;
    setup.cfg.retire_width = 16;
    setup.cfg.latency.alu = 4;
    let sys = run(setup, &text);
    let core = sys.core();
    assert_eq!((core.reg(Reg(1)), core.reg(Reg(2))), (Some(20), Some(1)));
    assert_eq!((core.var(Var(3)), core.var(Var(4))), (Some(20), Some(1)));
    // Ten dependent increments and the get_var: 11 x 4 cycles. The v4 chain is independent.
    assert_eq!(finish_cycles(&sys), 44);
}

// ---------------------------------------------------------------------------------------------
// Gathers.

/// A gather takes one load-port slot per element, and its lanes in one line make one request;
/// a second gather of the same line in flight merges into it.
#[test]
fn a_gather_takes_a_slot_per_element_and_one_request_per_line() {
    let text = ".core lanes=16\n    li r1, 0x1000\n    viota v1\n    vgather v2, [r1 + 0], v1 * 4, 16\n    \
                vgather v3, [r1 + 0], v1 * 4, 16\n    halt\n";
    let time = |ports: u32| {
        let mut setup = Setup::new(zero_image(0x1000, 4096), OutputBuffer { base: 0, elems: 0 });
        setup.cfg.issue_width = 8;
        setup.cfg.fu.load = ports;
        let sys = run(setup, text);
        let c = sys.core().counters();
        assert_eq!((c.loads, c.mem_requests, c.merged_requests), (2, 1, 1), "{ports} ports");
        finish_cycles(&sys)
    };
    // One port: the first gather's 16 element slots take cycles 2..17 and its request leaves
    // at 17 (at 2 with 16 ports); the second merges into that request, so the run ends with
    // the first gather's answer: 15 cycles later on one port.
    let one = time(1);
    let sixteen = time(16);
    assert_eq!(one - sixteen, 15, "1 port: {one}, 16 ports: {sixteen}");
}

// ---------------------------------------------------------------------------------------------
// Lookup rows.

/// A lookup row continued by a masked load of zero elements (a vectorized loop's empty tail)
/// is still timed: the lookup histogram gets its one row.
#[test]
fn a_row_continued_by_an_empty_masked_chunk_is_still_timed() {
    let text = ".core lanes=16\n    li r31, 0x1000\n    li r5, 0\n    vld v1, [r31 + 0], 16 !lookup\n    \
                vld v2, [r31 + 64], r5\n    halt\n";
    let sys = run(Setup::new(zero_image(0x1000, 4096), OutputBuffer { base: 0, elems: 0 }), text);
    let c = sys.core().counters();
    assert_eq!((c.loads, c.lookups, c.mem_requests), (2, 1, 1));
    let h = sys.engine.stats().lookup_histogram("core.lookup_latency").expect("histogram");
    assert_eq!(h.len(), 1, "the lookup's row was never recorded");
}

/// The same with the lookup's own first chunk empty: it looks nothing up, so it is no lookup,
/// and the lookup counter and the lookup-latency histogram agree.
#[test]
fn an_empty_masked_lookup_is_no_lookup() {
    let text =
        ".core lanes=16\n    li r31, 0x1000\n    li r5, 0\n    vld v1, [r31 + 0], r5 !lookup\n    halt\n";
    let sys = run(Setup::new(zero_image(0x1000, 4096), OutputBuffer { base: 0, elems: 0 }), text);
    let c = sys.core().counters();
    assert_eq!((c.loads, c.lookups, c.mem_requests), (1, 0, 0));
    let h = sys.engine.stats().lookup_histogram("core.lookup_latency").expect("histogram");
    assert_eq!(h.len(), c.lookups, "lookups counted but not in the lookup-latency histogram");
}

// ---------------------------------------------------------------------------------------------
// Widening loads.

/// isa.rs: a widening load converts "in the load pipe ... same latency and issue cost as
/// `vld`, fewer bytes". 48 vld.f16 of 16 lanes on 128-bit ports should take as many port
/// slots as 48 vld of 16 lanes (each a 512-bit destination, four 128-bit micro-ops).
#[test]
fn a_widening_load_has_the_issue_cost_of_vld() {
    let time = |suffix: &str| {
        let body: String =
            (0..48).map(|i| format!("    vld{suffix} v{}, [r1 + {}], 16\n", i % 30, 64 * i)).collect();
        let text = format!(".core lanes=16\n    li r1, 0x1000\n{body}    halt\n");
        let mut setup = Setup::new(zero_image(0x1000, 48 * 64), OutputBuffer { base: 0, elems: 0 });
        setup.cfg.issue_width = 8;
        setup.cfg.retire_width = 16;
        setup.cfg.max_outstanding = 64;
        setup.cfg.fu.load = 3;
        setup.cfg.datapath_bits = 128;
        let sys = run(setup, &text);
        assert_eq!(sys.core().counters().mem_requests, 48);
        finish_cycles(&sys)
    };
    let f32_time = time("");
    let f16_time = time(".f16");
    assert_eq!(f16_time, f32_time, "vld.f16 {f16_time} cycles, vld {f32_time}");
}

// ---------------------------------------------------------------------------------------------
// Stores and loads of what was stored.

/// A load of an output-buffer word that an older, not yet executed store writes cannot have
/// its value before the store's data exists: a consumer of the loaded value must finish after
/// the stored value is computed (here a 1000-cycle divide) plus its own latency.
#[test]
fn a_load_of_a_stored_word_does_not_get_its_value_before_the_store_data() {
    let text = ".core lanes=1\n    li r10, 0x2000\n    li r1, 7\n    divi r1, r1, 1\n    st.u32 r1, [r10 + 0]\n    \
                ld.u32 r2, [r10 + 0]\n    divi r3, r2, 1\n    st.u32 r3, [r10 + 4]\n    halt\n";
    let mut setup = no_memory();
    setup.output = OutputBuffer { base: 0x2000, elems: 2 };
    setup.cfg.issue_width = 4;
    setup.cfg.latency.div = 1000;
    let sys = run(setup, text);
    let core = sys.core();
    assert_eq!(core.outputs(), &[f32::from_bits(7), f32::from_bits(7)]);
    // r1 is ready at ~1001; the load cannot deliver 7 before then, so r3 cannot be ready
    // before ~2001.
    let t = core.finish_tick().unwrap() / CYCLE;
    assert!(t >= 2001, "finished at cycle {t}: the load's consumer ran before the stored value existed");
}

// ---------------------------------------------------------------------------------------------
// Program end.

/// Statistics are complete at the end: `cycles` is the finish cycle, every dispatched
/// instruction retired, nothing left in flight, and a store's write issued just before the
/// halt is waited for.
#[test]
fn the_end_waits_for_the_last_write_and_stats_are_complete() {
    let text = ".core lanes=1\n    li r10, 0x2000\n    li r1, 3\n    st.u32 r1, [r10 + 0]\n    halt\n";
    let mut setup = no_memory();
    setup.output = OutputBuffer { base: 0x2000, elems: 1 };
    setup.cfg.issue_width = 4;
    let sys = run(setup, text);
    let core = sys.core();
    let t = core.finish_tick().unwrap();
    let c = core.counters();
    // The store issues at cycle 1 (r1 ready), its write is answered a round trip later.
    assert!(t >= CYCLE + 102_064, "finish {t} before the write was answered");
    assert_eq!(c.cycles, t.div_ceil(CYCLE), "{c:?}");
    assert_eq!((c.instructions, c.retired, c.stores, c.mem_requests), (4, 4, 1, 1));
    assert_eq!(core.requests_in_flight(), 0);
    assert_eq!(core.rob_occupancy(), 0);
    assert!(!core.busy());
}

// ---------------------------------------------------------------------------------------------
// MSHR merging and issue order.

/// Core docs: "A read of a line already in flight merges into that request; any other line
/// needs one of `max_outstanding` miss slots". With one MSHR, load C reads the line that load A
/// has in flight while load B (another line) waits for the slot: C should merge into A's
/// request (2 requests, 2 round trips), not queue behind B and fetch the line again.
#[test]
fn a_load_to_a_line_in_flight_merges_while_an_older_miss_waits_for_a_slot() {
    let text = ".core lanes=1\n    li r31, 0x1000\n    ld.u32 r1, [r31 + 0]\n    ld.u32 r2, [r31 + 64]\n    \
                ld.u32 r3, [r31 + 4]\n    halt\n";
    let mut setup = Setup::new(zero_image(0x1000, 4096), OutputBuffer { base: 0, elems: 0 });
    setup.cfg.issue_width = 4;
    setup.cfg.max_outstanding = 1;
    let sys = run(setup, text);
    let c = sys.core().counters();
    let t = finish_cycles(&sys);
    assert_eq!((c.loads, c.mem_requests, c.merged_requests), (3, 2, 1), "finish {t}: {c:?}");
    assert!(t < 3 * 103, "{t}");
}
