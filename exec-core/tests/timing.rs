//! Timing: latency chains, memory round trips, and memory-level parallelism bounded by MSHRs.
//!
//! The test system runs at 1 GHz (1 cycle = 1000 ps); memory answers 100 ns after a request
//! reaches it, plus 64 ps to move a 64-byte line, plus a 1-cycle link each way. One load's
//! round trip is therefore 102,064 ps, and the next dependent instruction issues at the
//! following edge: 103 cycles per dependent load.

mod common;

use common::{Setup, System, clock};
use exec_core::{FaultKind, OutputBuffer, Reg};
use mem_model::{Backing, MemoryImage, Region};
use sim_core::Component;

const CYCLE: u64 = 1000;
const ROUND_TRIP: u64 = 102_064;

fn no_memory() -> Setup {
    Setup::new(MemoryImage::new(), OutputBuffer { base: 0, elems: 0 })
}

fn run(setup: Setup, text: &str) -> System {
    let mut sys = System::build(setup, text).expect("builds");
    sys.run().expect("runs to the end");
    assert_eq!(sys.core().fault(), None);
    sys
}

#[test]
fn dependent_addi_chain_takes_n_times_alu_latency() {
    let n = 100u64;
    for alu in [1u32, 4] {
        let text = format!(".core lanes=1\n{}    halt\n", "    addi r1, r1, 1\n".repeat(n as usize));
        let mut setup = no_memory();
        setup.cfg.latency.alu = alu;
        let sys = run(setup, &text);
        let core = sys.core();
        assert_eq!(core.reg(Reg(1)), Some(n as i64));
        assert_eq!(core.finish_tick(), Some(clock().edge(n * alu as u64)), "alu latency {alu}");
        assert_eq!(core.counters().instructions, n + 1);
        assert_eq!(core.counters().stall_operand_latency, (n - 1) * (alu as u64 - 1));
        // One wake-up per issue cycle at most: the core never ticks through a latency.
        assert!(sys.engine.events() <= n + 5, "{} events", sys.engine.events());
    }
}

#[test]
fn mul_and_div_latencies_apply() {
    // r2 = r1 * r1 (mul 3), r3 = r2 / r1 (div 10), r4 = r3 + r3 (alu 1): 14 cycles after li.
    let text =
        ".core lanes=1\n    li r1, 6\n    mul r2, r1, r1\n    div r3, r2, r1\n    add r4, r3, r3\n    halt\n";
    let sys = run(no_memory(), text);
    assert_eq!(sys.core().reg(Reg(4)), Some(12));
    assert_eq!(sys.core().finish_tick(), Some(clock().edge(1 + 3 + 10 + 1)));
}

#[test]
fn issue_width_bounds_independent_instructions() {
    let n = 40u64;
    let body: String = (0..n).map(|i| format!("    li r{}, {i}\n", i % 32)).collect();
    let text = format!(".core lanes=1\n{body}    halt\n");
    for (width, cycles) in [(1u32, 40u64), (4, 10), (8, 5)] {
        let mut setup = no_memory();
        setup.cfg.issue_width = width;
        let sys = run(setup, &text);
        assert_eq!(sys.core().finish_tick(), Some(clock().edge(cycles)), "width {width}");
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
    let finish = |n: u64| {
        let sys = run(Setup::new(chain_image(n), OutputBuffer { base: 0, elems: 0 }), &chase_program(n));
        let core = sys.core();
        assert_eq!(core.reg(Reg(1)), Some(0x1000 + 64 * n as i64), "the chase followed the pointers");
        assert!(sys.engine.events() < 10 * n + 10, "{} events for {n} loads", sys.engine.events());
        let c = core.counters();
        // Every load but the first waits a whole round trip for its address.
        assert!(c.stall_operand_memory >= (n - 1) * 102, "{c:?}");
        core.finish_tick().unwrap()
    };
    // The first load issues at cycle 1 (after the li).
    assert_eq!(finish(1), CYCLE + ROUND_TRIP);
    for n in [10u64, 50] {
        let t = finish(n) - CYCLE;
        assert!(t >= n * ROUND_TRIP && t <= n * (ROUND_TRIP + CYCLE), "{n} loads took {t} ps");
        // Exactly: each round trip is rounded up to the next cycle edge.
        assert_eq!(t, (n - 1) * 103 * CYCLE + ROUND_TRIP);
    }
}

#[test]
fn independent_loads_are_bounded_by_mshrs() {
    let n = 64u64;
    let body: String = (0..n).map(|i| format!("    ld.u32 r{}, [r31 + {}]\n", 1 + i % 8, 64 * i)).collect();
    let text = format!(".core lanes=1\n    li r31, 0x1000\n{body}    halt\n");
    for k in [1u64, 2, 4, 8, 16] {
        let mut setup = Setup::new(chain_image(n), OutputBuffer { base: 0, elems: 0 });
        setup.cfg.max_outstanding = k as u32;
        let sys = run(setup, &text);
        let core = sys.core();
        let t = core.finish_tick().unwrap() - CYCLE;
        // Little's law: k requests per ~103-cycle round trip. Slack: within a batch the k
        // loads issue one per cycle (k cycles), and each batch rounds up to an edge.
        let batches = n.div_ceil(k);
        let ideal = batches * 103 * CYCLE;
        let slack = (k + 2 * batches) * CYCLE;
        assert!(t + CYCLE >= ideal && t <= ideal + slack, "k={k}: {t} ps, ideal {ideal} ps");
        assert_eq!(core.counters().mem_requests, n);
        let mem_busy = core.counters().stall_memory_slots;
        if k < n {
            assert!(mem_busy > 0, "k={k}: loads waited for MSHRs");
        }
    }
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
    // 16 f32 at 0x1020: bytes 0x1020..0x1060 straddle the lines at 0x1000 and 0x1040.
    let text = ".core lanes=16\n    li r1, 0x1020\n    vld v0, [r1 + 0], 16 !lookup\n    vld v1, [r1 + 32], 8\n    vadd v2, v0, v1\n    halt\n";
    let mut setup = Setup::new(m, OutputBuffer { base: 0, elems: 0 });
    setup.cfg.max_outstanding = 1;
    let sys = run(setup, text);
    let c = sys.core().counters();
    assert_eq!((c.loads, c.lookups, c.mem_requests), (2, 1, 3));
    // One MSHR: three round trips in sequence, each started at the edge after the previous
    // answer; the vadd (2 cycles) follows the last.
    let lookup = sys.engine.stats().lookup_histogram("core.lookup_latency").unwrap();
    assert_eq!(lookup.len(), 1);
    // The lookup's two lines took two round trips (the second sent when the first returned).
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
    assert_eq!(sys.core().status(), "pc 2 `ld.u32 r1, [r1 + 0]` waits for r1 (load in flight)");
    assert!(sys.core().busy());
    sys.run().unwrap();
    assert!(!sys.core().busy());
    assert!(sys.core().status().starts_with("finished at tick"), "{}", sys.core().status());

    let text = ".core lanes=1\n    li r1, 3\n    mul r2, r1, r1\n    addi r3, r2, 1\n    halt\n";
    let mut sys = System::build(no_memory(), text).unwrap();
    sys.engine.run(Some(2 * CYCLE + 1)).unwrap();
    assert_eq!(sys.core().status(), "pc 2 `addi r3, r2, 1` waits for r2 (ready at tick 4000)");

    let body: String = (0..4).map(|i| format!("    ld.u32 r{}, [r31 + {}]\n", i + 1, 64 * i)).collect();
    let text = format!(".core lanes=1\n    li r31, 0x1000\n{body}    halt\n");
    let mut setup = Setup::new(chain_image(4), OutputBuffer { base: 0, elems: 0 });
    setup.cfg.max_outstanding = 2;
    let mut sys = System::build(setup, &text).unwrap();
    sys.engine.run(Some(10 * CYCLE)).unwrap();
    assert_eq!(
        sys.core().status(),
        "pc 3 `ld.u32 r3, [r31 + 128]` waits for a free miss slot (2 requests in flight)"
    );
}
