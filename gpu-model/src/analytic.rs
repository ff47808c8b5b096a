//! The analytic gather model: the estimate a GPU architect writes on a whiteboard, each term
//! named (see the crate docs); it cross-checks the cycle-level model.

use crate::GpuConfig;
use sim_core::{PS_PER_SECOND, Tick};

/// The shape of a gather workload, measured on its actual indices.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GatherShape {
    /// Row lookups.
    pub lookups: u64,
    /// Distinct rows looked up.
    pub distinct_rows: u64,
    /// Bytes per row.
    pub row_bytes: u64,
    /// Bags (pooled output rows).
    pub bags: u64,
    /// Bytes per lookup in the index stream: 8 for PyTorch's default int64 indices, 12 with
    /// an f32 per-sample weight beside each (as the simulated kernel lays them out). Offsets
    /// are int64, one per bag and one more.
    pub index_bytes: u64,
}

/// Bytes of one bag offset (int64, as PyTorch passes them).
const OFFSET_BYTES: u64 = 8;

/// The analytic estimate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GpuEstimate {
    /// Kernel time.
    pub time: Tick,
    /// Bytes moved to and from DRAM.
    pub dram_bytes: u64,
    /// Of those, bytes written (the pooled output rows).
    pub dram_bytes_written: u64,
    /// Row activations, estimated: one per row lookup that misses L2 (random rows of at most
    /// a DRAM page) and one per 1 KiB page of the streamed indices, offsets and outputs.
    pub dram_activations: u64,
    /// Sectors moved between L2 and the SMs: every lookup's sectors (L2 hits included), the
    /// index and offset streams and the output rows.
    pub l2_sectors: u64,
    /// Sectors the SMs load and store (L1 hits included): what the load/store units, L1s and
    /// register files move. The estimate has no L1, so these are its `l2_sectors`.
    pub sm_sectors: u64,
    /// Lookups served from L2 (the simulation's figure counts every L2 hit, stores included).
    pub l2_hits: u64,
    /// Loaded lookup latency (Little's law).
    pub latency: Tick,
}

/// Estimates one gather kernel.
pub fn estimate(cfg: &GpuConfig, shape: &GatherShape) -> GpuEstimate {
    let sector = cfg.sector.bytes();
    let row_traffic = shape.row_bytes.div_ceil(sector) * sector;
    let repeats = shape.lookups.saturating_sub(shape.distinct_rows);
    let footprint = shape.distinct_rows * row_traffic;
    let fits = if footprint == 0 { 1.0 } else { (cfg.l2.bytes() as f64 / footprint as f64).min(1.0) };
    let l2_hits = (repeats as f64 * fits).round() as u64;
    let misses = shape.lookups - l2_hits;
    // Indices and offsets stream in whole sectors; pooled rows stream out.
    let index_stream = shape.lookups * shape.index_bytes + (shape.bags + 1) * OFFSET_BYTES;
    let streams = index_stream.div_ceil(sector) * sector;
    let dram_bytes = misses * row_traffic + streams + shape.bags * row_traffic;
    let achieved = cfg.hbm_bandwidth.bytes_per_second() as f64 * cfg.efficiency(shape.row_bytes);
    let transfer = dram_bytes as f64 / achieved * PS_PER_SECOND as f64;
    let time = cfg.launch_overhead.ps().saturating_add(transfer.ceil() as u64);
    let in_flight = cfg.sms as f64 * cfg.warps_per_sm as f64 * cfg.occupancy * row_traffic as f64;
    let little = (in_flight / achieved * PS_PER_SECOND as f64) as u64;
    let written = shape.bags * row_traffic;
    let dram_activations = misses + (streams + written).div_ceil(1024);
    let l2_sectors = (shape.lookups * row_traffic + streams + written) / sector;
    GpuEstimate {
        time,
        dram_bytes,
        dram_bytes_written: written,
        dram_activations,
        l2_sectors,
        sm_sectors: l2_sectors,
        l2_hits,
        latency: little.max(cfg.dram_latency.ps()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sim_core::ByteSize;

    fn h100() -> GpuConfig {
        crate::config::tests::h100()
    }

    #[test]
    fn no_reuse_costs_rounded_sectors_at_derated_bandwidth() {
        let shape = GatherShape {
            lookups: 1_000_000,
            distinct_rows: 1_000_000,
            row_bytes: 100,
            bags: 0,
            index_bytes: 8,
        };
        let e = estimate(&h100(), &shape);
        // 100 B rows occupy 4 sectors: 128 MB of rows plus 8 MB of int64 indices and one offset.
        assert_eq!(e.dram_bytes, 128_000_000 + 8_000_032);
        let expect = 4_000_000.0 + e.dram_bytes as f64 / (3.35e12 * 0.8) * 1e12;
        assert!((e.time as f64 - expect).abs() < 2.0, "{} vs {expect}", e.time);
        assert_eq!(e.l2_hits, 0);
        // A per-sample weight (f32) rides beside each index: 4 MB more.
        let weighted = estimate(&h100(), &GatherShape { index_bytes: 12, ..shape });
        assert_eq!(weighted.dram_bytes, e.dram_bytes + 4_000_000);
    }

    #[test]
    fn reuse_that_fits_in_l2_is_free_and_never_slower() {
        let hot =
            GatherShape { lookups: 1_000_000, distinct_rows: 1_000, row_bytes: 256, bags: 0, index_bytes: 8 };
        let cold = GatherShape { distinct_rows: 1_000_000, ..hot };
        let (h, c) = (estimate(&h100(), &hot), estimate(&h100(), &cold));
        assert_eq!(h.l2_hits, 999_000);
        assert!(h.time < c.time / 10);
        let mut small = h100();
        small.l2 = ByteSize::parse("1MB").unwrap();
        let mid = GatherShape { distinct_rows: 100_000, ..hot };
        assert!(estimate(&small, &mid).time >= estimate(&h100(), &mid).time, "a larger L2 is never slower");
    }

    #[test]
    fn loaded_latency_follows_littles_law_with_a_floor() {
        let shape = GatherShape { lookups: 1, distinct_rows: 1, row_bytes: 256, bags: 0, index_bytes: 8 };
        let e = estimate(&h100(), &shape);
        // 132 x 64 x 0.71 x 256 B = 1.54 MB in flight at 2.68 TB/s: about 574 ns.
        assert!((570_000..580_000).contains(&e.latency), "{}", e.latency);
        let tiny = GatherShape { row_bytes: 4, ..shape };
        assert_eq!(estimate(&h100(), &tiny).latency, 400_000);
    }

    #[test]
    fn bad_parameters_are_named() {
        let mut c = h100();
        c.occupancy = 1.5;
        assert_eq!(c.validate().unwrap_err().to_string(), "occupancy = 1.5: must be in (0, 1]");
    }

    #[test]
    fn a_launch_overhead_at_the_clocks_limit_saturates() {
        let cfg = GpuConfig { launch_overhead: sim_core::TimeSpan::from_ps(u64::MAX), ..h100() };
        let shape =
            GatherShape { lookups: 1000, distinct_rows: 1000, row_bytes: 128, bags: 10, index_bytes: 8 };
        // It wrapped around to a few nanoseconds.
        assert_eq!(estimate(&cfg, &shape).time, u64::MAX);
    }
}
