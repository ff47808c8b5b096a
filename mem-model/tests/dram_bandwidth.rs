//! Throughput against its formulas: streaming peak, refresh-limited bandwidth, and the tFAW
//! bound on random accesses. Measured in steady state (between the 10 % and 90 % answers) on
//! one HBM3-6400 channel (two pseudo-channels) to keep the runs short: every bound here is per
//! pseudo-channel, so the number of channels does not change the ratios.

#[path = "dram_helpers.rs"]
mod helpers;

use helpers::spec_with;
use mem_model::dram::DramSpec;
use mem_model::dram::bench::{BenchConfig, Pattern, run};

fn one_channel(refresh: &str) -> DramSpec {
    spec_with("hbm3-6400", |p| {
        p.organization.channels = 1;
        p.controller.refresh = refresh.into();
    })
}

fn steady(spec: &DramSpec, pattern: Pattern, requests: u64, bytes: u32) -> f64 {
    let cfg = BenchConfig::with_bytes(spec, pattern, requests, bytes);
    let r = run(spec, cfg).expect("runs");
    assert_eq!(r.requests, requests);
    r.steady_bandwidth()
}

#[test]
fn streaming_reaches_95_percent_of_peak_without_refresh() {
    let s = one_channel("none");
    let peak = s.peak_bandwidth().bytes_per_second() as f64;
    assert_eq!(peak, 51.2e9);
    let bw = steady(&s, Pattern::Streaming, 20_000, 64);
    assert!(bw <= peak * 1.0001, "{bw} above the peak {peak}");
    assert!(bw >= 0.95 * peak, "streaming reached {:.1} % of peak", 100.0 * bw / peak);
}

#[test]
fn refresh_limited_bandwidth_matches_its_formula() {
    // Each tREFI the pseudo-channel stops for the refresh itself (tRFC), for the wait before it
    // (REFab follows the last ACT by at least tRC in the table, which covers the PREA's tRAS and
    // tRP) and for the first ACT after it (tRCD before the first read):
    //     efficiency = 1 - (tRFC + tRC + tRCD) / tREFI = 1 - (560 + 72 + 31) / 6240 = 0.894.
    // (The plain 1 - tRFC / tREFI = 0.910 ignores the two edges.)
    let (refi, rfc, rc, rcd): (f64, f64, f64, f64) = (6240.0, 560.0, 72.0, 31.0);
    let formula = 1.0 - (rfc + rc + rcd) / refi;
    // Long enough for about ten refreshes in the steady window: 40 us at 51.2 GB/s.
    let n = 35_000;
    let without = steady(&one_channel("none"), Pattern::Streaming, n, 64);
    let with = steady(&one_channel("all_bank"), Pattern::Streaming, n, 64);
    let ratio = with / without;
    assert!((ratio - formula).abs() <= 0.02 * formula, "refresh efficiency {ratio:.4}, formula {formula:.4}");
    assert!(ratio < 1.0 - rfc / refi, "refresh costs at least tRFC per tREFI");
}

#[test]
fn random_32_byte_reads_are_bounded_by_tfaw() {
    // Random rows: every request needs its own ACT. At most 4 ACTs per tFAW per pseudo-channel
    // (tRRD_S alone would allow 6), so per pseudo-channel bandwidth <= 4 x 32 B / (nFAW x tCK).
    let s = one_channel("none");
    let (faw, tck_ps) = (24.0, 625.0);
    let per_pc = 4.0 * 32.0 / (faw * tck_ps * 1e-12);
    let bound = per_pc * f64::from(s.controllers());
    assert!((per_pc - 8.533e9).abs() < 1e6);
    let bw = steady(&s, Pattern::Random, 20_000, 32);
    assert!(bw <= bound * 1.001, "{bw:.3e} above the tFAW bound {bound:.3e}");
    assert!(bw >= 0.85 * bound, "{bw:.3e}: tFAW is not the binding limit ({bound:.3e})");
}
