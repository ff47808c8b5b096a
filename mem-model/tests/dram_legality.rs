//! Every command issued under random traffic is legal: the controller's command log replayed
//! through the independent checker (the constraint table applied to the history, plus row-state
//! rules), over random traces (addresses, sizes, read/write mix, arrival times) and policies.

#[path = "dram_helpers.rs"]
mod helpers;

use helpers::{PRESETS, run_plan, spec, trace, trace_args, variant};
use mem_model::MemRequest;
use mem_model::dram::{DramAddr, DramSpec, check_log};
use proptest::prelude::*;

fn check(s: &DramSpec, plan: Vec<MemRequest>) {
    let n = plan.len();
    // Row accesses: a request's bursts in one interleave chunk (one bank and row) are one.
    let il = s.interleave_bytes();
    let accesses: u64 = plan.iter().map(|r| (r.addr + u64::from(r.bytes) - 1) / il - r.addr / il + 1).sum();
    let o = run_plan(s, plan, 64, true);
    assert_eq!(o.answers.len(), n, "every request is answered");
    assert!(o.fault.is_none());
    let checked = check_log(s, &o.log).unwrap_or_else(|v| panic!("{}: {v}", s.name()));
    assert_eq!(checked, o.log.len());
    let c = &o.counters;
    // Reads answered from the write queues make none.
    let classified = c.row_hits + c.row_misses + c.row_conflicts;
    assert_eq!(classified + c.forwarded_row_accesses, accesses, "each row access classified once");
    assert_eq!(c.served.iter().sum::<u64>(), c.bursts_read + c.bursts_written);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn random_traces_issue_only_legal_commands((which, seed, n, rows, write_pct, gap_ps) in trace_args()) {
        let s = variant(which);
        check(&s, trace(&s, seed, n, rows, write_pct, gap_ps));
    }
}

#[test]
fn long_mixed_traffic_on_every_preset() {
    for name in PRESETS {
        let s = spec(name);
        // Dense enough to fill queues and drain writes, long enough for refreshes.
        check(&s, trace(&s, 7, 3000, 256, 30, 4_000));
    }
}

#[test]
fn write_drain_switches_modes() {
    let s = spec("hbm3-6400");
    let plan = trace(&s, 3, 2000, 16, 60, 500);
    let o = run_plan(&s, plan, 64, true);
    assert!(o.counters.write_drains > 0);
    check_log(&s, &o.log).unwrap();
}

#[test]
fn the_checker_catches_an_illegal_log() {
    // A log that breaks tRCD by one cycle must be refused, naming the constraint.
    let s = spec("hbm3-6400");
    let a = DramAddr { row: 3, ..DramAddr::default() };
    let o = run_plan(&s, vec![MemRequest::read(1, s.mapping().encode(&a).unwrap(), 32, 0)], 4, true);
    let mut log = o.log.clone();
    assert!(check_log(&s, &log).is_ok());
    let rd = log.iter_mut().find(|c| c.cmd.is_read()).unwrap();
    rd.cycle -= 1;
    rd.tick = s.clock().edge(rd.cycle);
    let v = check_log(&s, &log).unwrap_err();
    assert!(v.reason.contains("nRCDRD"), "{v}");
}
