//! Every command issued under random traffic is legal: the controller's command log replayed
//! through the independent checker (the constraint table applied to the history, plus row-state
//! rules), over random traces (addresses, sizes, read/write mix, arrival times) and policies.

#[path = "dram_helpers.rs"]
mod helpers;

use helpers::{PRESETS, run_plan, spec, spec_with};
use mem_model::MemRequest;
use mem_model::dram::{DramAddr, DramSpec, check_log};
use proptest::prelude::*;

/// A small deterministic generator (the traces must not depend on proptest internals).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (self.0 >> 33) % n.max(1)
    }
}

/// `n` requests over `rows` rows of every bank of the first two pseudo-channels, `gap_ps` apart
/// at most, `write_pct` % writes, sizes 32 B to 256 B.
fn trace(s: &DramSpec, seed: u64, n: usize, rows: u32, write_pct: u64, gap_ps: u64) -> Vec<MemRequest> {
    let o = s.organization();
    let mut r = Lcg(seed);
    let mut t = 0;
    (0..n as u64)
        .map(|id| {
            t += r.next(gap_ps + 1);
            let pcs = o.controllers().min(2);
            let c = r.next(u64::from(pcs)) as u32;
            let a = DramAddr {
                channel: c / o.pseudo_channels,
                pseudo_channel: c % o.pseudo_channels,
                rank: r.next(u64::from(o.ranks)) as u32,
                bank_group: r.next(u64::from(o.bank_groups)) as u32,
                bank: r.next(u64::from(o.banks)) as u32,
                row: r.next(u64::from(rows.min(o.rows))) as u32,
                column: r.next(u64::from(o.columns)) as u32,
            };
            let addr = s.mapping().encode(&a).expect("in range");
            let bytes = [32, 64, 128, 256][r.next(4) as usize];
            let addr = addr.min(s.capacity_bytes() - bytes as u64);
            if r.next(100) < write_pct {
                MemRequest::write(id, addr, bytes, t)
            } else {
                MemRequest::read(id, addr, bytes, t)
            }
        })
        .collect()
}

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

fn variant(which: u32) -> DramSpec {
    match which {
        0 => spec("hbm3-6400"),
        1 => spec("ddr5-4800"),
        2 => spec("hbm2"),
        3 => spec_with("hbm3-6400", |p| p.controller.refresh = "per_bank".into()),
        4 => spec_with("hbm3-6400", |p| {
            p.controller.page_policy = "closed".into();
            p.controller.scheduler = "frfcfs".into();
        }),
        5 => spec_with("hbm3-6400", |p| {
            p.controller.read_queue = 4;
            p.controller.write_queue = 4;
            p.controller.write_high_watermark = 3;
            p.controller.write_low_watermark = 1;
            p.controller.xor_bank = true;
        }),
        6 => spec_with("hbm3e-h200", |p| p.controller.channel_hash = true),
        _ => spec("hbm2e"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn random_traces_issue_only_legal_commands(
        which in 0u32..8,
        seed in any::<u64>(),
        n in 20usize..300,
        rows in 1u32..64,
        write_pct in 0u64..70,
        gap_ps in 0u64..30_000,
    ) {
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
