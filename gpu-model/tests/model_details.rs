//! Details of the GPU model checked against its own docs (the crate's module docs, README's "The
//! GPU model" and DESIGN.md section 7): occupancy, block scheduling, coalescing, L1/L2 use,
//! the launch, the kernel mapping, the analytic estimate and power, and edge cases.
//!
//! The GPU is built by hand with the H100 SXM preset's values (`configs/systems/h100-sxm.toml`,
//! which this crate does not read), with fewer SMs where a test says so, and its HBM from
//! `configs/memory/hbm3-h100.toml`.

use gpu_model::{GatherKernel, GpuConfig, GpuSim, GpuSimConfig, KernelConfig, L2Config, SimRun};
use mem_model::cache::{CacheConfig, NonTemporalPolicy, ReplacementKind};
use mem_model::dram::{DramPreset, DramSpec};
use sim_core::{Bandwidth, ByteSize, Frequency, PS_PER_SECOND, SeedTree, TimeSpan};
use std::sync::Arc;

// ---------------------------------------------------------------------------------------------
// Building the GPU
// ---------------------------------------------------------------------------------------------

/// `configs/memory/hbm3-h100.toml` with the channel hash the GPU system presets set
/// (configs/systems/h100-sxm.toml).
fn hbm() -> Arc<DramSpec> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../configs/memory/hbm3-h100.toml");
    let mut preset: DramPreset = toml::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    preset.controller.channel_hash = true;
    Arc::new(DramSpec::from_preset(preset).unwrap())
}

fn cache(size: &str, ways: u32, mshrs: u32, targets: u32, hit: u64, nt: NonTemporalPolicy) -> CacheConfig {
    CacheConfig {
        size: ByteSize::parse(size).unwrap(),
        associativity: ways,
        line: ByteSize::parse("128B").unwrap(),
        sector: Some(ByteSize::parse("32B").unwrap()),
        replacement: ReplacementKind::Lru,
        mshrs,
        mshr_targets: targets,
        hit_latency_cycles: hit,
        lookups_per_cycle: 1,
        writeback_buffer: None,
        non_temporal: nt,
        answers_ahead: true,
    }
}

/// The H100 SXM preset's values with `sms` SMs (the L2 as the preset's: 40 slices, 50 MiB).
fn h100(sms: u32) -> GpuSim {
    let gpu = GpuConfig {
        sms,
        clock: Frequency::parse("1.98GHz").unwrap(),
        hbm_bandwidth: Bandwidth::parse("3.35TB/s").unwrap(),
        dram_latency: TimeSpan::parse("335ns").unwrap(),
        l2_latency: Some(TimeSpan::parse("210ns").unwrap()),
        l2: ByteSize::parse("50MiB").unwrap(),
        sector: ByteSize::parse("32B").unwrap(),
        launch_overhead: TimeSpan::parse("4us").unwrap(),
        warps_per_sm: 64,
        occupancy: 0.71,
        efficiency_32b: 0.27,
        efficiency_64b: 0.52,
        efficiency_128b: 0.73,
    };
    let sim = GpuSimConfig {
        schedulers: 4,
        alu_latency_cycles: 4,
        registers_per_sm: 65536,
        max_blocks_per_sm: 32,
        lsu_lines_per_cycle: 1,
        launch_latency: TimeSpan::parse("3us").unwrap(),
        l1: cache("256KiB", 16, 256, 8, 34, NonTemporalPolicy::Bypass),
        l2: L2Config {
            banks: 40,
            partitions: 2,
            near_cycles: 100,
            far_cycles: 220,
            max_in_flight: 65536,
            bank_queue: 512,
            bank: cache("1280KiB", 16, 512, 16, 60, NonTemporalPolicy::InsertLru),
        },
        dram_link_cycles: 84,
        kernel: KernelConfig {
            threads_per_block: 512,
            registers_per_thread: 40,
            row_unroll: 1,
            instructions_per_row: 6,
        },
    };
    gpu.validate().unwrap();
    sim.validate(&gpu).unwrap();
    GpuSim { gpu, sim, dram: hbm() }
}

fn run(gpu: &GpuSim, k: GatherKernel) -> SimRun {
    gpu_model::sim::run(gpu, Arc::new(k), &SeedTree::new(7), PS_PER_SECOND / 100).unwrap()
}

/// Where the index, offset and output streams live (far above every row used here).
const STREAMS: u64 = 1 << 36;
/// Row spacing that keeps rows in distinct lines, slices' runs and DRAM rows.
const FAR: u64 = 1 << 20;

/// `bags` bags of `per` distinct rows each, `FAR` apart, of `dim` f32 values.
fn distinct(bags: u64, per: u64, dim: u32) -> GatherKernel {
    let v = (0..bags).map(|b| (0..per).map(|r| (b * per + r) * FAR).collect()).collect();
    GatherKernel::from_bags(v, dim, STREAMS)
}

// ---------------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------------

/// Rows of `dim` f32 values at the given addresses, one row per bag.
fn one_row_bags(addrs: &[u64], dim: u32) -> GatherKernel {
    GatherKernel::from_bags(addrs.iter().map(|&a| vec![a]).collect(), dim, STREAMS)
}

#[test]
fn a_warp_instruction_touches_each_sector_once() {
    // 32 B rows: groups of 4 lanes, 8 bags a warp, so one row load of the warp carries the 8
    // bags' rows. All 8 read the same row: one line request, one sector. Offsets: 9 x 8 B = 72 B
    // (3 sectors); indices 8 x 8 B = 64 B (2); outputs 8 x 32 B = 256 B (2 lines, 8 sectors).
    let gpu = h100(1);
    let r = run(&gpu, one_row_bags(&[0; 8], 8));
    assert_eq!((r.sms.requests, r.sms.sectors), (5, 3 + 2 + 1 + 8));
}

#[test]
fn coalescing_counts_only_the_sectors_a_warp_touches_not_the_gap_between_them() {
    // DESIGN.md s7 "coalescing into 32 B sectors"; sm.rs: "one request per 128 B line touched
    // (the L1 sectors them)"; REFERENCE.md s3: "rows cost ceil(bytes/32) sectors". Two bags of
    // one warp read 32 B rows in the same 128 B line: at bytes 0 and 32 (adjacent sectors) or
    // at 0 and 96 (sectors 0 and 3). Either way the warp needs two sectors; the other six bags'
    // rows are far away. Both kernels must touch and fetch the same number of sectors.
    let gpu = h100(1);
    let others: Vec<u64> = (1..7).map(|i| i * FAR).collect();
    let with = |second: u64| {
        let mut a = vec![0, second];
        a.extend(&others);
        run(&gpu, one_row_bags(&a, 8))
    };
    let (adjacent, apart) = (with(32), with(96));
    assert_eq!(
        apart.sms.sectors, adjacent.sms.sectors,
        "sectors the SM sent for: rows 0 and 96 vs rows 0 and 32 (DRAM bytes read {} vs {})",
        apart.dram_bytes_read, adjacent.dram_bytes_read
    );
    assert_eq!(
        apart.dram_bytes_read, adjacent.dram_bytes_read,
        "DRAM bytes read: rows 0 and 96 vs rows 0 and 32"
    );
}

#[test]
fn l2_sectors_are_at_least_the_bytes_dram_delivered_through_l2() {
    // GpuEstimate::l2_sectors: "Sectors moved between L2 and the SMs" (power.rs charges each
    // one). With no reuse across SMs, everything read from DRAM went through L2 to the SM, so
    // l2_sectors x 32 B is at least the DRAM bytes read. Here the L1 hits are one-sector row
    // loads (one bag reading the same 32 B row 400 times) and the misses are 16-sector index
    // chunks (128 B of index stream per row): sim.rs scales the SMs' sectors by the L1's hit
    // rate counted in accesses, not sectors.
    let gpu = h100(1);
    let mut k = GatherKernel::from_bags(vec![vec![0; 400]], 8, STREAMS);
    k.index_bytes = 128;
    let r = run(&gpu, k);
    assert!(r.l1_hits > 300, "the row loads hit L1: {} of {}", r.l1_hits, r.l1_accesses);
    assert!(
        r.activity.l2_sectors * 32 >= r.dram_bytes_read,
        "l2_sectors {} x 32 B = {} B < {} B read from DRAM (SM sectors {}, L1 {} hits of {})",
        r.activity.l2_sectors,
        r.activity.l2_sectors * 32,
        r.dram_bytes_read,
        r.sms.sectors,
        r.l1_hits,
        r.l1_accesses
    );
}

#[test]
fn a_kernel_with_no_bags_still_costs_its_launch() {
    // SimRun::time: "Kernel time, launch included"; README: "The kernel's time runs from the
    // launch (3 us) to its last store". An empty grid is still launched.
    let gpu = h100(2);
    let k = GatherKernel::from_bags(vec![], 32, STREAMS);
    let r = run(&gpu, k);
    assert_eq!(r.blocks, 0);
    assert!(r.time >= gpu.sim.launch_latency.ps(), "time {} ps", r.time);
}

#[test]
fn bags_of_zero_rows_launch_and_store_their_outputs() {
    let gpu = h100(2);
    let k = GatherKernel::from_bags(vec![vec![]; 100], 32, STREAMS);
    let r = run(&gpu, k);
    // 100 bags of 4 a warp, 64 a block: 2 blocks; each warp loads its offsets and writes its
    // 4 zero outputs (512 B, 4 lines); no row is loaded.
    assert_eq!(r.blocks, 2);
    assert_eq!(r.sms.blocks, 2);
    assert_eq!(r.sms.flops, 0);
    assert_eq!(r.sms.first_row, u64::MAX);
    assert!(r.time > gpu.sim.launch_latency.ps());
}

#[test]
fn readme_occupancy_three_blocks_of_sixteen_warps() {
    // README: "FBGEMM's 512-thread blocks at 40 registers per thread give 3 blocks, 48 warps
    // (75% occupancy)"; the limit is the least of warps, registers and the block limit.
    let gpu = h100(1);
    assert_eq!(gpu.sim.blocks_per_sm(&gpu.gpu), 3);
    assert!((gpu.sim.occupancy(&gpu.gpu) - 0.75).abs() < 1e-12);
    let mut s = gpu.sim.clone();
    s.kernel.registers_per_thread = 32; // registers allow 4 blocks, warps 4: 4
    assert_eq!(s.blocks_per_sm(&gpu.gpu), 4);
    s.kernel.threads_per_block = 128; // warps allow 16, registers 16, limit 32: 16
    assert_eq!(s.blocks_per_sm(&gpu.gpu), 16);
    s.max_blocks_per_sm = 5;
    assert_eq!(s.blocks_per_sm(&gpu.gpu), 5);
}

/// Kernel time less the launch, in SM cycles.
fn cycles(gpu: &GpuSim, r: &SimRun) -> f64 {
    (r.time - gpu.sim.launch_latency.ps()) as f64 * gpu.gpu.clock.hz() as f64 / PS_PER_SECOND as f64
}

#[test]
fn resident_blocks_run_together_and_the_rest_wait_for_a_freed_slot() {
    // One SM holds 3 blocks of 16 warps (README). 128-element rows: one bag a warp, 16 a block.
    // Each bag walks a chain of 20 distinct far rows (latency bound, a row at a time). 3 blocks
    // run as one wave; a 4th waits for a freed slot, doubling the time.
    let gpu = h100(1);
    let t = |bags| cycles(&gpu, &run(&gpu, distinct(bags, 20, 128)));
    let (one, three, four) = (t(16), t(48), t(64));
    assert!(three < 1.3 * one, "3 resident blocks took {three:.0} cycles, one {one:.0}");
    assert!(four > 1.7 * one, "a 4th block must wait: {four:.0} cycles, one {one:.0}");
}

#[test]
fn more_bags_than_resident_warps_all_run() {
    // 2 SMs x 3 blocks resident; the grid has 23 blocks of 64 bags (32-element rows, 4 bags a
    // warp) with bags of 0 to 6 rows: every block and row is run once.
    let gpu = h100(2);
    let bags: Vec<Vec<u64>> =
        (0..1450u64).map(|b| (0..b % 7).map(|r| (b * 7 + r) * 4096).collect()).collect();
    let rows: u64 = bags.iter().map(|b| b.len() as u64).sum();
    let k = GatherKernel::from_bags(bags, 32, STREAMS);
    let flops = k.flops_per_row;
    let r = run(&gpu, k);
    assert_eq!(r.blocks, 23);
    assert_eq!(r.sms.blocks, 23);
    assert_eq!(r.sms.flops, rows * flops);
}

#[test]
fn each_scheduler_issues_one_warp_instruction_a_cycle() {
    // sm.rs: "Each warp scheduler issues one warp instruction per cycle; a warp's accumulate
    // occupies its scheduler for its instruction count". A compute-bound kernel on one SM: 48
    // warps (3 blocks), one bag each of one 128-element row with 2 x 32 x 2000 flops: 2000
    // arithmetic instructions + 6 a row. Four schedulers: at least total / 4 cycles, and
    // with 12 warps on each, close to it.
    // The same kernel without the arithmetic gives the memory's share.
    let gpu = h100(1);
    let mut k = distinct(48, 1, 128);
    let memory = cycles(&gpu, &run(&gpu, k.clone()));
    k.flops_per_row = 2 * 32 * 2000;
    let r = run(&gpu, k);
    assert_eq!(r.sms.instructions, 48 * 2006);
    let bound = (48 * 2006) as f64 / 4.0;
    let c = cycles(&gpu, &r);
    assert!(c >= bound, "{c:.0} cycles for {bound:.0} cycles of issue");
    assert!(c <= bound + memory, "{c:.0} cycles for {bound:.0} cycles of issue and {memory:.0} of memory");
}

#[test]
fn the_lsu_sends_at_most_one_line_a_cycle() {
    // sm.rs: at most `lsu_lines_per_cycle` (1) line requests per cycle. 48 warps, each one bag
    // of 64 rows all in L1 after the first (every row the same 512 B = 4 lines): the L1 serves
    // the rows, so the SM's line rate bounds the time.
    // The L1 takes 4 lookups a cycle here, so only the LSU limits the rate.
    let mut gpu = h100(1);
    gpu.sim.l1.lookups_per_cycle = 4;
    let v: Vec<Vec<u64>> = (0..48).map(|_| vec![0u64; 64]).collect();
    let r = run(&gpu, GatherKernel::from_bags(v.clone(), 128, STREAMS));
    let c = cycles(&gpu, &r);
    // From the first row load on (the offsets and indices come before).
    let rows = (r.time - r.sms.first_row) as f64 * gpu.gpu.clock.hz() as f64 / PS_PER_SECOND as f64;
    assert!(48.0 * 64.0 * 4.0 <= rows, "{} row lines in {rows:.0} cycles", 48 * 64 * 4);
    assert!(48.0 * 64.0 * 4.0 > 0.85 * rows, "LSU-bound: {} row lines in {rows:.0} cycles", 48 * 64 * 4);
    assert!(r.sms.requests as f64 <= c, "{} requests in {c:.0} cycles", r.sms.requests);
    // Two a cycle: faster.
    gpu.sim.lsu_lines_per_cycle = 2;
    let r2 = run(&gpu, GatherKernel::from_bags(v, 128, STREAMS));
    let rows2 = (r2.time - r2.sms.first_row) as f64 * gpu.gpu.clock.hz() as f64 / PS_PER_SECOND as f64;
    assert!(rows2 < 0.7 * rows, "2 lines a cycle: {rows2:.0} cycles of rows, 1: {rows:.0}");
}

#[test]
fn rows_not_a_multiple_of_32_bytes_cost_the_sectors_they_span() {
    // 40 B rows (10 floats: groups of 4 lanes, 8 bags a warp), 8 bags of one row each, packed
    // back to back from byte 0: 320 B, lines 0-2, 10 sectors, in 3 requests. A lone row at byte
    // 120 spans sectors 3 and 4 of two lines: 2 requests, 2 sectors.
    let gpu = h100(1);
    let packed = run(&gpu, one_row_bags(&(0..8).map(|i| i * 40).collect::<Vec<_>>(), 10));
    let lone = run(&gpu, one_row_bags(&[120], 10));
    // Streams: offsets (72 B: 3 sectors, or 16 B: 1), indices (64 B: 2, or 8 B: 1), outputs
    // (320 B over 3 lines: 10 sectors, or 40 B: 2).
    assert_eq!((packed.sms.requests, packed.sms.sectors), (1 + 1 + 3 + 3, 3 + 2 + 10 + 10));
    assert_eq!((lone.sms.requests, lone.sms.sectors), (1 + 1 + 2 + 1, 1 + 1 + 2 + 2));
}

#[test]
fn row_unroll_keeps_that_many_rows_in_flight_up_to_the_group() {
    // KernelConfig::row_unroll / GatherKernel::row_unroll ("at most the group's lanes"). One
    // bag of 64 distinct far rows (latency bound): 4 rows at a time take about a quarter of
    // the time; with 4-lane groups (8 floats a row) asking for 8 is the same as 4.
    let gpu = h100(1);
    let t = |dim, unroll| {
        let mut k = distinct(1, 64, dim);
        k.row_unroll = Some(unroll);
        cycles(&gpu, &run(&gpu, k))
    };
    let (one, four) = (t(32, 1), t(32, 4));
    assert!(four < 0.4 * one && four > 0.2 * one, "unroll 4: {four:.0} cycles, 1: {one:.0}");
    let (four, eight) = (t(8, 4), t(8, 8));
    assert!((eight - four).abs() <= 0.02 * four, "4-lane groups: unroll 8 {eight:.0} cycles, 4 {four:.0}");
}

#[test]
fn a_row_of_several_lines_is_one_lookup_timed_to_its_last_line() {
    // README, the lookup-latency column: "from the first request of a row to its arrival (the
    // whole row)". 4 bags of 8 distinct 512 B rows (4 lines each): 32 lookups, 32 latencies,
    // none shorter than a DRAM access.
    let gpu = h100(1);
    let r = run(&gpu, distinct(4, 8, 128));
    assert_eq!(r.latency.len(), 32, "one latency per row, not per line");
    assert!(r.latency.min() >= 200_000, "min {} ps", r.latency.min());
}
