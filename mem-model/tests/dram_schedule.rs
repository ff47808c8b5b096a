//! The scheduler never issues a command later than its policy says: a run in which every busy
//! controller is run at every memory cycle ([`Dram::set_run_every_cycle`]) must issue the same
//! commands at the same cycles, and answer every request at the same tick, as the normal run, in
//! which a controller sleeps until the cycle it predicted. The legality checker
//! (`dram_legality.rs`) catches a command issued too early; this catches one issued too late,
//! which would be legal and only make the model slower than the policy it claims.
//!
//! [`Dram::set_run_every_cycle`]: mem_model::dram::Dram::set_run_every_cycle

#[path = "dram_helpers.rs"]
mod helpers;

use helpers::{Lcg, Outcome, PRESETS, in_time_order, run_plan_as, spec, trace, trace_args, variant};
use mem_model::MemRequest;
use mem_model::dram::DramSpec;
use proptest::prelude::*;

/// The first place where `a` (normal) and `b` (every cycle) differ, described, or `None`.
/// Commands are compared in time order ([`in_time_order`]): polling moves the moment a sleeping
/// pseudo-channel's refreshes are decided, not their cycles.
fn difference(a: &Outcome, b: &Outcome) -> Option<String> {
    let (la, lb) = (in_time_order(&a.log), in_time_order(&b.log));
    for (i, (x, y)) in la.iter().zip(&lb).enumerate() {
        if x != y {
            let from = i.saturating_sub(3);
            return Some(format!(
                "command {i} differs:\n  normal:      {:?}\n  every cycle: {:?}",
                &la[from..(i + 2).min(la.len())],
                &lb[from..(i + 2).min(lb.len())]
            ));
        }
    }
    if la.len() != lb.len() {
        return Some(format!("{} commands normally, {} run every cycle", la.len(), lb.len()));
    }
    let answers = |o: &Outcome| {
        let mut v: Vec<(u64, u64)> = o.answers.iter().map(|(r, t)| (r.id, *t)).collect();
        v.sort_unstable();
        v
    };
    let (x, y) = (answers(a), answers(b));
    if let Some(i) = (0..x.len().min(y.len())).find(|&i| x[i] != y[i]) {
        return Some(format!(
            "answer to request {}: at {} normally, at {} run every cycle",
            x[i].0, x[i].1, y[i].1
        ));
    }
    if x.len() != y.len() {
        return Some(format!("{} answers normally, {} run every cycle", x.len(), y.len()));
    }
    if a.counters != b.counters {
        // The fields that differ, one per line.
        let (x, y) = (format!("{:#?}", a.counters), format!("{:#?}", b.counters));
        let lines: Vec<String> = x
            .lines()
            .zip(y.lines())
            .filter(|(p, q)| p != q)
            .map(|(p, q)| format!("  normal {}, every cycle {}", p.trim(), q.trim()))
            .collect();
        return Some(format!("counters differ:\n{}", lines.join("\n")));
    }
    None
}

/// Runs `plan` both ways (command log on, or off when `log` is false) and asserts they agree.
fn same_both_ways(s: &DramSpec, plan: Vec<MemRequest>, capacity: u32, log: bool) {
    let n = plan.len();
    let normal = run_plan_as(s, plan.clone(), capacity, log, None, false);
    let polled = run_plan_as(s, plan, capacity, log, None, true);
    assert_eq!(normal.answers.len(), n, "{}: every request is answered", s.name());
    if let Some(d) = difference(&normal, &polled) {
        panic!("{}: {d}", s.name());
    }
    // The check is not empty: the polled run really ran more often.
    assert!(
        polled.events >= normal.events,
        "{}: {} events polled, {} normally",
        s.name(),
        polled.events,
        normal.events
    );
}

/// `n` reads of `bytes` at uniformly random aligned addresses over the whole capacity (every
/// pseudo-channel), `gap_ps` apart at most; `write_pct` % writes.
fn spread(s: &DramSpec, seed: u64, n: usize, bytes: u32, write_pct: u64, gap_ps: u64) -> Vec<MemRequest> {
    let mut r = Lcg(seed);
    let slots = s.capacity_bytes() / u64::from(bytes);
    let mut t = 0;
    (0..n as u64)
        .map(|id| {
            t += r.next(gap_ps + 1);
            let addr = (r.next(u64::MAX >> 1) % slots) * u64::from(bytes);
            if r.next(100) < write_pct {
                MemRequest::write(id, addr, bytes, t)
            } else {
                MemRequest::read(id, addr, bytes, t)
            }
        })
        .collect()
}

/// `n` sequential reads of `bytes` from address 0, all sent at once (the link's capacity paces
/// them, as `dae-sim bench mem`'s streaming pattern is paced by its requester).
fn stream(n: usize, bytes: u32) -> Vec<MemRequest> {
    (0..n as u64).map(|id| MemRequest::read(id, id * u64::from(bytes), bytes, 0)).collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    #[test]
    fn random_traces_are_scheduled_as_when_polled_every_cycle((which, seed, n, rows, write_pct, gap_ps) in trace_args()) {
        let s = variant(which);
        same_both_ways(&s, trace(&s, seed, n, rows, write_pct, gap_ps), 64, true);
    }
}

#[test]
fn random_and_streaming_traffic_on_every_preset_are_scheduled_as_when_polled() {
    for name in PRESETS {
        let s = spec(name);
        // Saturating random reads over every pseudo-channel (the bench's random pattern).
        same_both_ways(&s, spread(&s, 11, 2000, 64, 0, 0), 256, true);
        // A mix with writes, dense enough to drain them and long enough for refreshes.
        same_both_ways(&s, spread(&s, 5, 2000, 64, 30, 3_000), 64, true);
        // One sequential stream (the bench's streaming pattern).
        same_both_ways(&s, stream(3000, 64), 256, true);
    }
}

#[test]
fn every_policy_variant_under_dense_mixed_traffic_is_scheduled_as_when_polled() {
    for which in 0..8 {
        let s = variant(which);
        same_both_ways(&s, trace(&s, 17 + u64::from(which), 1500, 8, 40, 1_000), 64, true);
    }
}

#[test]
fn long_idle_spells_are_scheduled_as_when_polled() {
    // Bursts of traffic microseconds apart: sleeping pseudo-channels replay their refreshes,
    // and with the log off whole refresh periods are skipped.
    for which in [0, 1, 3] {
        let s = variant(which);
        let mut plan = trace(&s, 23, 400, 16, 20, 500);
        for (k, r) in plan.iter_mut().enumerate() {
            r.issued += (k as u64 / 100) * 40_000_000;
        }
        same_both_ways(&s, plan.clone(), 64, true);
        same_both_ways(&s, plan, 64, false);
    }
}
