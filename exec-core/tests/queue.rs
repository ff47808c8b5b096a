//! Queue mode: the core pops entries that a producer (standing in for the access unit) sends.

mod common;

use common::{Setup, System, clock};
use exec_core::{FaultKind, OutputBuffer, QueueEntry, Reg};
use mem_model::{Backing, MemoryImage, Region};
use sim_core::procedural::table_value;
use sim_core::{Bandwidth, Priority, Tick};

const TABLE: u64 = 0x10_0000;
const OUT: u64 = 0x80_0000;
const DIM: u32 = 16;

/// Pops (control, scalar, row address) entries: sums the scalars in r9 and the rows (read
/// with `vldq`) in v0; control 1 ends the loop.
const PROGRAM: &str = "\
.core lanes=16
    li r9, 0
    li r10, 0x800000
    vzero v0
loop:
    pop_control r1
    switch r1, [work, done]
work:
    pop_operand r3          # a scalar
    pop_operand r4          # the address of a marshaled row
    add r9, r9, r3
    vldq v1, [r4 + 0], 16
    vadd v0, v0, v1
    jmp loop
done:
    vst v0, [r10 + 0], 16
    halt
";

fn image() -> MemoryImage {
    let mut m = MemoryImage::new();
    m.add(Region {
        name: "rows".into(),
        base: TABLE,
        size: 100 * DIM as u64 * 4,
        backing: Backing::Procedural { seed: 9, table: 0, dim: DIM },
    })
    .unwrap();
    m
}

fn entries(n: u64) -> Vec<QueueEntry> {
    let mut v: Vec<QueueEntry> = (0..n)
        .map(|i| QueueEntry::new(0, &[i * 3 + 1, TABLE + (i * 7 % 100) * DIM as u64 * 4]).unwrap())
        .collect();
    v.push(QueueEntry::new(1, &[]).unwrap());
    v
}

fn run(n: u64, start: u64, interval: u64) -> System {
    let mut setup = Setup::new(image(), OutputBuffer { base: OUT, elems: DIM as u64 });
    setup.queue = Some((entries(n), start, interval));
    let mut sys = System::build(setup, PROGRAM).expect("builds");
    sys.run().expect("runs to the end");
    let core = sys.core();
    assert_eq!(core.fault(), None);
    assert!(core.halted());
    assert_eq!(core.reg(Reg(9)), Some((0..n as i64).map(|i| i * 3 + 1).sum()));
    let want: Vec<f32> = (0..DIM).map(|c| (0..n).map(|i| table_value(9, 0, i * 7 % 100, c)).sum()).collect();
    assert_eq!(core.outputs(), &want[..]);
    let counters = core.counters();
    assert_eq!(counters.queue_pops, 3 * n + 1);
    assert_eq!(counters.queue_loads, n);
    assert_eq!(counters.loads, 0, "vldq sends no memory request");
    sys
}

#[test]
fn pops_and_sums_entries() {
    run(20, 0, 0);
}

#[test]
fn sleeps_while_the_queue_is_empty() {
    let n = 20;
    let cycle = clock().edge(1);
    let interval = 1000 * cycle;
    let start = 5000 * cycle;
    let sys = run(n, start, interval);
    let core = sys.core();
    let last_sent = *sys.producer().sent_at.last().unwrap();
    assert_eq!(last_sent, start + n * interval);
    // The final entry arrives a cycle after it is sent; then pop, switch, store, and the
    // store's ~103-cycle round trip to memory.
    let finish = core.finish_tick().unwrap();
    assert!(finish > last_sent + 100 * cycle && finish < last_sent + 120 * cycle, "finish {finish}");
    // ~25,000 cycles passed; a core that ticked while waiting would need that many events.
    let events = sys.engine.events();
    assert!(events < 20 * (n + 1), "{events} events");
    let stalled = core.counters().stall_queue;
    assert!(stalled > 24_000 && stalled < 25_100, "{stalled} cycles waiting on the queue");
}

/// A load that the tick's queue entry lets dispatch, to a line whose answer from memory arrives
/// in that same tick, must see that answer, whichever of the tick's two arrivals the engine
/// delivers first: the core takes memory answers at every wake, not only at the answer's own.
/// Taken only at its own wake, the answer came after the load when the queue entry was
/// delivered first, and the load merged into the answered request (one memory request instead
/// of two, and the load done at once).
#[test]
fn a_load_sees_the_answers_of_its_tick_whichever_arrival_wakes_the_core_first() {
    // The first load misses; `pop_control` stops dispatch until the entry arrives; the second
    // load, to the same line, dispatches with it.
    let program = "\
.core lanes=1
    li r2, 0x100000
    ld.u64 r1, [r2 + 0]
    pop_control r3
    ld.u64 r4, [r2 + 8]
    halt
";
    let outcome = |start: Tick, priority: Priority| {
        let mut setup = Setup::new(image(), OutputBuffer { base: OUT, elems: 0 });
        setup.cfg.issue_width = 4;
        // 64 B take one cycle: the answer lands on a clock edge, where queue entries land.
        setup.mem.bandwidth = Bandwidth::from_bytes_per_second(64_000_000_000);
        setup.queue = Some((vec![QueueEntry::new(1, &[]).unwrap()], start, 0));
        setup.queue_priority = priority;
        let mut sys = System::build(setup, program).expect("builds");
        sys.run().expect("runs to the end");
        let core = sys.core();
        assert_eq!(core.fault(), None);
        (core.counters().mem_requests, core.finish_tick())
    };
    // The entry is sent one cycle before it arrives. Sweep its send across the first load's
    // round trip (the answer lands at cycle 104): one of these sends lands in the answer's tick.
    let cycle = clock().edge(1);
    let mut merged = 0;
    for k in 90..115 {
        let first = outcome(k * cycle, Priority::DELIVERY);
        let last = outcome(k * cycle, Priority::LATE);
        assert_eq!(first, last, "entry sent at cycle {k}: sent before or after the memory's answer");
        merged += u64::from(first.0 == 1);
    }
    // Both kinds of outcome occur in the sweep: entries early enough merge, later ones do not.
    assert!(merged > 0 && merged < 25, "{merged} of 25 sends merged");
}

fn fault_with(program: &str, queue: Vec<QueueEntry>) -> exec_core::CoreFault {
    let mut setup = Setup::new(image(), OutputBuffer { base: OUT, elems: 16 });
    setup.queue = Some((queue, 0, 1000));
    let mut sys = System::build(setup, program).unwrap();
    // Entries the core never popped stay on the link, so the engine may end the run with a
    // deadlock report; either way the caller reads the core's fault.
    let _ = sys.run();
    sys.core().fault().cloned().expect("faults")
}

#[test]
fn popping_past_the_operands_faults() {
    let f = fault_with(
        ".core lanes=4\n    pop_control r1\n    pop_operand r2\n    pop_operand r3\n    halt\n",
        vec![QueueEntry::new(0, &[5]).unwrap()],
    );
    assert_eq!(f.pc, 2);
    assert_eq!(f.kind, FaultKind::OperandOutOfRange { index: 1, len: 1 });
    assert_eq!(f.to_string(), "pc 2 `pop_operand r3`: pop_operand reads operand 1 of an entry carrying 1");
    let f =
        fault_with(".core lanes=4\n    pop_operand r2\n    halt\n", vec![QueueEntry::new(0, &[5]).unwrap()]);
    assert_eq!(f.kind, FaultKind::NoEntry);
}

#[test]
fn a_starved_core_is_reported_by_the_watchdog() {
    // The producer sends one entry; the program wants two: the run ends in a deadlock whose
    // report says the core waits on the queue.
    let mut setup = Setup::new(image(), OutputBuffer { base: OUT, elems: 16 });
    setup.queue = Some((vec![QueueEntry::new(0, &[]).unwrap()], 0, 1000));
    let mut sys =
        System::build(setup, ".core lanes=4\n    pop_control r1\n    pop_control r2\n    halt\n").unwrap();
    let err = sys.run().unwrap_err().to_string();
    assert!(err.contains("deadlock"), "{err}");
    assert!(err.contains("component core is busy: pc 1 `pop_control r2` waits on the output queue"), "{err}");
}
