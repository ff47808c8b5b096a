//! Microbenchmarks that calibrate the cycle-level GPU against measured H100 behaviour (an H100
//! SXM5 80GB measured with `scripts/h100_measure.py`, docs/h100-measured.md, and REFERENCE.md
//! section 3): an unloaded pointer chase, a streaming read, a gather whose rows
//! live in L2, and the loaded-latency curve of random DRAM gathers.
//!
//! Each is a [`GatherKernel`] the same SM model runs; none is special-cased. The pointer chase is
//! one thread group walking rows at random addresses far apart (one row at a time, as the row
//! loop does, so each load waits for the previous); the stream reads consecutive rows; the L2
//! gather draws rows from a footprint a fraction of the L2's; the curve runs the random gather
//! with more and more bags in flight.

use crate::kernel::GatherKernel;
use crate::sim::{self, GpuSim, GpuSimError, SimRun};
use sim_core::{PS_PER_SECOND, SeedTree, Tick};
use std::sync::Arc;

/// How large the microbenchmarks are: `1.0` is the size `dae-sim gpu-calibrate` runs; tests
/// use smaller ones.
#[derive(Debug, Clone, Copy)]
pub struct Scale(pub f64);

/// One point of the loaded-latency curve.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CurvePoint {
    /// Thread groups (bags) the kernel runs at once at most.
    pub groups: u64,
    /// Achieved DRAM read bandwidth, bytes per second.
    pub bytes_per_second: f64,
    /// Mean row latency, ps.
    pub mean_latency: f64,
}

/// Every calibration figure.
#[derive(Debug, Clone, PartialEq)]
pub struct Calibration {
    /// Unloaded DRAM pointer-chase latency (mean of the chain's loads), ps.
    pub pointer_chase: f64,
    /// Median latency of loads that hit L2 in the SM's own partition and in the other, ps.
    pub l2_hit: [f64; 2],
    /// Streaming read bandwidth, bytes per second (launch excluded).
    pub stream: f64,
    /// Row bandwidth of the L2-resident gather, bytes per second (launch excluded).
    pub l2_gather: f64,
    /// The loaded-latency curve, lightest load first.
    pub curve: Vec<CurvePoint>,
    /// Peak DRAM bandwidth, bytes per second.
    pub peak: f64,
}

/// Address spacing of pointer-chase rows: beyond the L2's reach and its slices' interleave.
const CHASE_STRIDE: u64 = 1 << 20;
/// Where the index, offsets and output streams live: above every table.
const STREAMS: u64 = 1 << 36;

fn kernel(bags: Vec<Vec<u64>>, dim: u32) -> GatherKernel {
    GatherKernel::from_bags(bags, dim, STREAMS)
}

/// A 64-bit mix (splitmix64's finaliser): deterministic pseudo-random rows.
fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// Random row addresses in `[0, footprint)`, row-aligned, from stream `seed`.
fn random_rows(n: u64, footprint: u64, row: u64, seed: u64) -> Vec<u64> {
    let slots = (footprint / row).max(1);
    (0..n).map(|i| mix(seed ^ mix(i)) % slots * row).collect()
}

fn seconds(t: Tick) -> f64 {
    t as f64 / PS_PER_SECOND as f64
}

/// Runs one kernel with a generous time limit.
fn go(gpu: &GpuSim, k: GatherKernel, seeds: &SeedTree) -> Result<SimRun, GpuSimError> {
    sim::run(gpu, Arc::new(k), seeds, 50 * PS_PER_SECOND / 1000)
}

/// Bandwidth of `bytes` from the first row load to the end: the steady state a bandwidth
/// test reports, without the launch and the first offsets and indices.
fn bandwidth(r: &SimRun, bytes: u64) -> f64 {
    let t = r.time.saturating_sub(r.sms.first_row.min(r.time)).max(1);
    bytes as f64 / seconds(t)
}

/// Rows a bandwidth microbenchmark's thread group keeps in flight: such kernels unroll their
/// independent loads, unlike the library's gather loop.
const BENCH_UNROLL: u32 = 8;

/// Runs every microbenchmark at `scale`.
pub fn run(gpu: &GpuSim, scale: Scale, seeds: &SeedTree) -> Result<Calibration, GpuSimError> {
    // The benchmarks' tables span 64 GiB below their index and output streams (so nothing
    // they gather stays in the L2): a smaller memory cannot hold them.
    let need = STREAMS + (1 << 32);
    if gpu.dram.capacity_bytes() < need {
        return Err(GpuSimError::Build {
            component: "calibration".into(),
            message: format!(
                "the benchmarks need {} GiB of memory, above the preset's {} GiB (they gather from \
                 64 GiB of tables, as on an 80 GB H100)",
                need >> 30,
                gpu.dram.capacity_bytes() >> 30
            ),
        });
    }
    let mut bench = gpu.clone();
    bench.sim.kernel.row_unroll = BENCH_UNROLL;
    let bench = &bench;
    let n = |base: f64| ((base * scale.0).round() as u64).max(1);
    let sms = u64::from(gpu.gpu.sms);
    let l2 = gpu.gpu.l2.bytes();
    // Thread groups the GPU holds at once for 32-element rows (4 per warp).
    let slots = sms * u64::from(gpu.sim.blocks_per_sm(&gpu.gpu)) * u64::from(gpu.sim.warps_per_block()) * 4;

    // Pointer chase: one group of 4 lanes, 32 B rows 1 MiB apart over 64 GiB (no reuse).
    let chase = (0..n(400.0)).map(|i| (mix(i) % (1 << 16)) * CHASE_STRIDE).collect();
    let r = go(gpu, kernel(vec![chase], 8), seeds)?;
    let pointer_chase = r.latency.mean();

    // L2 hit latency, near and far: a chain over 24 rows one L1 way apart (so they share one
    // L1 set of fewer ways and keep evicting each other there), walked ten times: L2-resident
    // after the first pass. A row lies in the slice that owns its pseudo-channel (slices are
    // memory-side); SM 0 sits in the first partition.
    let slices = gpu.sim.l2.banks;
    let parts = u64::from(gpu.sim.l2.partitions);
    let stride = (gpu.sim.l1.size.bytes() / u64::from(gpu.sim.l1.associativity.max(1))).max(128);
    let mapping = gpu.dram.mapping();
    // The search is bounded: with one partition no slice is far, and a mapping could leave a
    // partition without rows at this stride.
    let ring = |near: bool| -> Option<Vec<u64>> {
        let rows: Vec<u64> = (0..1u64 << 20)
            .map(|i| i * stride)
            .filter(|&a| {
                let slice = u64::from(mapping.owner(a, slices).unwrap_or(0));
                (slice * parts / u64::from(slices.max(1)) == 0) == near
            })
            .take(24)
            .collect();
        (!rows.is_empty()).then(|| (0..240).map(|k| rows[k % rows.len()]).collect())
    };
    let mut l2_hit = [0.0; 2];
    for (k, near) in [(0, true), (1, false)] {
        l2_hit[k] = match ring(near) {
            Some(rows) => go(gpu, kernel(vec![rows], 8), seeds)?.latency.value_at_quantile(0.5) as f64,
            // No far slice (one partition): the far figure is the near one.
            None => l2_hit[0],
        };
    }

    // Streaming read: 512 B rows at consecutive addresses, a bag per warp slot (the scale sets
    // the rows per bag, never the parallelism).
    let bags = sms * 48;
    let per = n(16.0).max(8);
    let stream: Vec<Vec<u64>> = (0..bags).map(|b| (0..per).map(|j| (b * per + j) * 512).collect()).collect();
    let bytes = bags * per * 512;
    let r = go(bench, kernel(stream, 128), seeds)?;
    let stream = bandwidth(&r, bytes);

    // L2-resident gather: 128 B rows over a sixty-fourth of the L2 (first touches are few),
    // loaded with ld.global.cg so the L1s do not serve them, as L2 bandwidth tests do.
    let foot = l2 / 64;
    let bags = slots;
    let per = n(32.0).max(16);
    let gather: Vec<Vec<u64>> =
        (0..bags).map(|b| random_rows(per, foot, 128, b.wrapping_mul(0x9e37))).collect();
    let mut k = kernel(gather, 32);
    k.bypass_l1 = true;
    let r = go(bench, k, seeds)?;
    let l2_gather = bandwidth(&r, bags * per * 128);

    // Loaded latency: random 128 B rows over 32 GiB, 16 rows per bag; the load grows with the
    // number of bags (groups) resident at once, from one per SM to the whole GPU's slots.
    let mut curve = Vec::new();
    for frac in [0.004, 0.03, 0.125, 0.25, 0.5, 1.0] {
        let groups = ((slots as f64 * frac) as u64).max(1);
        let bags: Vec<Vec<u64>> = (0..groups)
            .map(|b| random_rows(n(16.0).max(4), 32 << 30, 128, 0x5eed ^ b.wrapping_mul(0x9e37_79b9)))
            .collect();
        let rows: u64 = bags.iter().map(|b| b.len() as u64).sum();
        let r = go(bench, kernel(bags, 32), seeds)?;
        curve.push(CurvePoint {
            groups,
            bytes_per_second: bandwidth(&r, rows * 128),
            mean_latency: r.latency.mean(),
        });
    }
    Ok(Calibration {
        pointer_chase,
        l2_hit,
        stream,
        l2_gather,
        curve,
        peak: gpu.gpu.hbm_bandwidth.bytes_per_second() as f64,
    })
}

impl Calibration {
    /// The figures as a table, each beside its measured target.
    pub fn table(&self) -> String {
        let mut s = String::new();
        let tb = |b: f64| b / 1e12;
        s += &format!(
            "{:<34} {:>14}   {}\n",
            "figure", "model", "measured: H100 SXM5 80GB (docs/h100-measured.md); REFERENCE.md s3"
        );
        s += &format!(
            "{:<34} {:>11.0} ns   334 ns; 365-410 ns\n",
            "pointer chase, unloaded",
            self.pointer_chase / 1e3
        );
        s += &format!("{:<34} {:>11.0} ns   about 150 ns\n", "L2 hit, near partition", self.l2_hit[0] / 1e3);
        s += &format!("{:<34} {:>11.0} ns   about 270 ns\n", "L2 hit, far partition", self.l2_hit[1] / 1e3);
        s += &format!(
            "{:<34} {:>8.2} TB/s   3.08 TB/s (92%); 81-92% of peak ({:.0}% here)\n",
            "streaming read",
            tb(self.stream),
            100.0 * self.stream / self.peak
        );
        s += &format!("{:<34} {:>8.2} TB/s   about 9.5-10 TB/s\n", "L2-resident gather", tb(self.l2_gather));
        s += "loaded latency (random 128 B rows; measured with millions in flight: 2.45 TB/s, 73%):\n";
        for p in &self.curve {
            s += &format!(
                "  {:>6} groups  {:>6.2} TB/s ({:>3.0}% of peak)  {:>6.0} ns\n",
                p.groups,
                tb(p.bytes_per_second),
                100.0 * p.bytes_per_second / self.peak,
                p.mean_latency / 1e3
            );
        }
        s
    }
}
