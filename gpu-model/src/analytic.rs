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
    /// The kernel's thread groups: each walks its bags' rows one load batch after another
    /// (FBGEMM's mapping gives a bag to a group; some kernels split long bags over several).
    pub groups: u64,
    /// Rows the groups load in all (the kernel's rows: a knowledge-graph triple's head and
    /// relation rows included).
    pub group_rows: u64,
    /// Rows of the longest group's chain of loads.
    pub longest_group: u64,
    /// Groups per warp (32 lanes over the group's lanes).
    pub groups_per_warp: u64,
    /// Rows a group has in flight at once, at most one per lane (1 for FBGEMM's row loop, the
    /// kernel's `row_unroll` otherwise; a preset without `[gpu_sim]` takes FBGEMM's 1).
    pub rows_in_flight: u64,
    /// Indices a group loads at once, one per lane, before walking their rows (FBGEMM: the
    /// group's lanes).
    pub indices_per_load: u64,
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
    // Little's law on the loads' concurrency: resident groups each keep `rows_in_flight` rows
    // in flight, one unloaded latency each (DRAM or an L2 hit), and no group finishes before
    // its own chain of row and index loads: a kernel with few or long bags is latency-bound,
    // not bandwidth-bound. Loaded latency and the instructions between loads are left out.
    let slots =
        f64::from(cfg.sms) * f64::from(cfg.warps_per_sm) * cfg.occupancy * shape.groups_per_warp as f64;
    let hit_share = if shape.lookups == 0 { 0.0 } else { l2_hits as f64 / shape.lookups as f64 };
    let row_latency =
        (1.0 - hit_share) * cfg.dram_latency.ps() as f64 + hit_share * cfg.l2_hit_latency().ps() as f64;
    // A group of `rows` waits for its indices (one load per `indices_per_load` rows) and its
    // rows, `rows_in_flight` at a time.
    let (ipl, unroll) =
        (shape.indices_per_load.max(1), shape.rows_in_flight.clamp(1, shape.indices_per_load.max(1)));
    let group_chain = |rows: u64| {
        rows.div_ceil(unroll) as f64 * row_latency + rows.div_ceil(ipl) as f64 * cfg.dram_latency.ps() as f64
    };
    // Each resident slot walks its share of the groups one after another; the longest group
    // bounds the kernel from below whatever the slots.
    let groups = shape.groups.max(1);
    let mean_rows = shape.group_rows.div_ceil(groups);
    let waves = (groups as f64 / slots.max(1.0)).ceil();
    let chain = (waves * group_chain(mean_rows)).max(group_chain(shape.longest_group));
    let time = cfg.launch_overhead.ps().saturating_add(transfer.max(chain).ceil() as u64);
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

    /// A gather whose loads' concurrency never binds: one-row groups, many rows in flight.
    fn wide(lookups: u64, distinct_rows: u64, row_bytes: u64, bags: u64) -> GatherShape {
        GatherShape {
            lookups,
            distinct_rows,
            row_bytes,
            bags,
            index_bytes: 8,
            groups: lookups.max(1),
            group_rows: lookups,
            longest_group: 1,
            groups_per_warp: 32,
            rows_in_flight: 1 << 20,
            indices_per_load: 1 << 20,
        }
    }

    #[test]
    fn no_reuse_costs_rounded_sectors_at_derated_bandwidth() {
        let shape = wide(1_000_000, 1_000_000, 100, 0);
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
        let hot = wide(1_000_000, 1_000, 256, 0);
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
        let shape = wide(1, 1, 256, 0);
        let e = estimate(&h100(), &shape);
        // 132 x 64 x 0.71 x 256 B = 1.54 MB in flight at 2.68 TB/s: about 574 ns.
        assert!((570_000..580_000).contains(&e.latency), "{}", e.latency);
        let tiny = GatherShape { row_bytes: 4, ..shape };
        assert_eq!(estimate(&h100(), &tiny).latency, 400_000);
    }

    /// FBGEMM's row loop: 1024 bags of 80 rows, one group a bag, each loading one row after
    /// another, take 80 unloaded latencies whatever the bandwidth (RM1 on the H100).
    #[test]
    fn few_long_bags_are_bound_by_their_chains_of_loads() {
        let chained = GatherShape {
            groups: 1024,
            group_rows: 81_920,
            longest_group: 80,
            groups_per_warp: 4,
            rows_in_flight: 1,
            indices_per_load: 8,
            ..wide(81_920, 81_920, 128, 1024)
        };
        // 80 rows and 10 loads of 8 indices, 400 ns each.
        let e = estimate(&h100(), &chained);
        assert_eq!(e.time, 4_000_000 + 90 * 400_000);
        // Four rows in flight: a quarter of the rows' part.
        let unrolled = estimate(&h100(), &GatherShape { rows_in_flight: 4, ..chained });
        assert_eq!(unrolled.time, 4_000_000 + 30 * 400_000);
        // No more rows in flight than the group has lanes (one index each).
        let wide_unroll = estimate(&h100(), &GatherShape { rows_in_flight: 1024, ..chained });
        assert_eq!(wide_unroll.time, 4_000_000 + 20 * 400_000);
        // Rows found in L2 wait its latency instead (half of them: 40 x 400 + 40 x 200 ns).
        let hot = estimate(&h100(), &GatherShape { distinct_rows: 40_960, ..chained });
        assert_eq!(hot.l2_hits, 40_960);
        assert_eq!(hot.time, 4_000_000 + 50 * 400_000 + 40 * 200_000);
        // Short groups each wait for their own indices and a whole row latency: 3-row groups
        // (a TT lookup's slices) at 4 rows in flight cost one row latency and one index load.
        let short = GatherShape {
            groups: 1000,
            group_rows: 3000,
            longest_group: 3,
            groups_per_warp: 4,
            rows_in_flight: 4,
            indices_per_load: 8,
            ..wide(3000, 3000, 128, 1000)
        };
        assert_eq!(estimate(&h100(), &short).time, 4_000_000 + 2 * 400_000);
        // More groups than the resident warps hold (a group a warp): each slot walks its
        // share of them, one after another, longer than the rows' transfer takes.
        let many = GatherShape {
            groups: 1 << 20,
            group_rows: 1 << 24,
            longest_group: 16,
            groups_per_warp: 1,
            rows_in_flight: 1,
            indices_per_load: 32,
            ..wide(1 << 24, 1 << 24, 128, 1 << 20)
        };
        let waves = (f64::from(1 << 20) / (132.0 * 64.0 * 0.71)).ceil();
        let want = 4e6 + waves * (16.0 * 400_000.0 + 400_000.0);
        assert!((estimate(&h100(), &many).time as f64 - want).abs() < 2.0);
        // A bandwidth-bound gather keeps its transfer time.
        let e = estimate(&h100(), &wide(1_000_000, 1_000_000, 128, 0));
        let expect = 4e6 + e.dram_bytes as f64 / (3.35e12 * 0.8) * 1e12;
        assert!((e.time as f64 - expect).abs() < 2.0);
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
        let shape = wide(1000, 1000, 128, 10);
        // It wrapped around to a few nanoseconds.
        assert_eq!(estimate(&cfg, &shape).time, u64::MAX);
    }
}
