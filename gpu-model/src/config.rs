//! The GPU's parameters: the analytic model's `[gpu]` table and the cycle-level model's
//! `[gpu_sim]` table, each checked with the offending field named.

use sim_core::{Bandwidth, ByteSize, Frequency, TimeSpan};
use thiserror::Error;

/// Most SMs a GPU may have: far beyond any real part (an H100 SXM has 132).
pub const MAX_SMS: u32 = 4096;

/// Parameters of a GPU (deserializable, so presets list them by name).
#[derive(Debug, Clone, Copy, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GpuConfig {
    /// Streaming multiprocessors.
    pub sms: u32,
    /// SM clock.
    pub clock: Frequency,
    /// Peak HBM bandwidth.
    pub hbm_bandwidth: Bandwidth,
    /// Unloaded DRAM access latency.
    pub dram_latency: TimeSpan,
    /// Unloaded L2 hit latency, the mean over the near and far partitions (`None`: priced as
    /// `dram_latency`, an upper bound).
    #[serde(default)]
    pub l2_latency: Option<TimeSpan>,
    /// L2 capacity.
    pub l2: ByteSize,
    /// DRAM access granule.
    pub sector: ByteSize,
    /// Kernel launch plus tail.
    pub launch_overhead: TimeSpan,
    /// Resident warps per SM at full occupancy.
    pub warps_per_sm: u32,
    /// Achieved occupancy of the gather kernel (0..=1).
    pub occupancy: f64,
    /// Fraction of peak bandwidth reached by random 32 B rows.
    pub efficiency_32b: f64,
    /// ... by random 64 B rows.
    pub efficiency_64b: f64,
    /// ... by random rows of 128 B or more.
    pub efficiency_128b: f64,
}

/// Why a GPU configuration is unusable.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum GpuError {
    /// A parameter is out of its range.
    #[error("{field} = {value}: {why}")]
    Range {
        /// The parameter.
        field: &'static str,
        /// Its value.
        value: String,
        /// The range it must be in.
        why: String,
    },
}

/// The error for parameter `field` at `value`, outside the range `why` gives.
fn range(field: &'static str, value: String, why: &str) -> Result<(), GpuError> {
    Err(GpuError::Range { field, value, why: why.into() })
}

impl GpuConfig {
    /// Checks every parameter's range.
    pub fn validate(&self) -> Result<(), GpuError> {
        // Upper bounds keep a typo from allocating the host's memory away (each SM is simulated
        // with its own L1 and warp state): far beyond any real part.
        if !(1..=MAX_SMS).contains(&self.sms) {
            return range("sms", self.sms.to_string(), "must be 1 to 4096");
        }
        if self.clock.hz() == 0 {
            return range("clock", self.clock.to_string(), "must be above 0 Hz");
        }
        if self.hbm_bandwidth.bytes_per_second() == 0 {
            return range("hbm_bandwidth", self.hbm_bandwidth.to_string(), "must be above zero");
        }
        if !self.sector.bytes().is_power_of_two() {
            // A DRAM access granule is a power of two (32 B on NVIDIA parts).
            return range("sector", self.sector.to_string(), "must be a power of two (32B on NVIDIA parts)");
        }
        if self.dram_latency.ps() == 0 {
            return range("dram_latency", self.dram_latency.to_string(), "must be above zero");
        }
        if let Some(l) = self.l2_latency
            && l.ps() == 0
        {
            return range("l2_latency", l.to_string(), "must be above zero");
        }
        if !(1..=1024).contains(&self.warps_per_sm) {
            return range("warps_per_sm", self.warps_per_sm.to_string(), "must be 1 to 1024");
        }
        for (field, v) in [
            ("occupancy", self.occupancy),
            ("efficiency_32b", self.efficiency_32b),
            ("efficiency_64b", self.efficiency_64b),
            ("efficiency_128b", self.efficiency_128b),
        ] {
            if !(v > 0.0 && v <= 1.0) {
                return range(field, v.to_string(), "must be in (0, 1]");
            }
        }
        Ok(())
    }

    /// The unloaded L2 hit latency (`dram_latency` where the preset gives none).
    pub fn l2_hit_latency(&self) -> TimeSpan {
        self.l2_latency.unwrap_or(self.dram_latency)
    }

    /// Achievable fraction of peak for random rows of `row_bytes`.
    pub fn efficiency(&self, row_bytes: u64) -> f64 {
        match row_bytes {
            0..=32 => self.efficiency_32b,
            33..=64 => self.efficiency_64b,
            _ => self.efficiency_128b,
        }
    }
}

/// The cycle-level model's parameters (`[gpu_sim]`): the SM's issue resources and occupancy
/// limits, its L1, the two-partition L2 and the library kernel's mapping. The memory is the
/// system's `[memory]` DRAM preset.
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GpuSimConfig {
    /// Warp schedulers per SM, each issuing one warp instruction per cycle.
    pub schedulers: u32,
    /// Cycles from a warp instruction's issue to a dependent one's.
    pub alu_latency_cycles: u64,
    /// Registers per SM.
    pub registers_per_sm: u32,
    /// Resident blocks per SM at most.
    pub max_blocks_per_sm: u32,
    /// Coalesced line requests the load/store unit sends to the L1 per cycle.
    pub lsu_lines_per_cycle: u32,
    /// From the host's launch to the first block running.
    pub launch_latency: TimeSpan,
    /// Each SM's L1 data cache (sectored).
    pub l1: mem_model::cache::CacheConfig,
    /// The shared L2.
    pub l2: L2Config,
    /// Cycles (SM clock) from an L2 slice to the memory controllers, each way.
    pub dram_link_cycles: u64,
    /// How the library kernel maps the gather onto warps.
    pub kernel: KernelConfig,
}

/// The L2: `banks` slices split evenly over `partitions`; an SM reaches the slices of its own
/// partition in `near_cycles` and the others in `far_cycles`, each way.
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct L2Config {
    /// Slices (address-interleaved banks).
    pub banks: u32,
    /// Partitions (1 or 2 on NVIDIA parts).
    pub partitions: u32,
    /// Crossbar cycles each way to a slice of the SM's partition.
    pub near_cycles: u64,
    /// Crossbar cycles each way to a slice of the other partition.
    pub far_cycles: u64,
    /// Requests the crossbar holds in flight at most.
    pub max_in_flight: u32,
    /// Requests queued for one slice at most.
    pub bank_queue: u32,
    /// One slice.
    pub bank: mem_model::cache::CacheConfig,
}

/// The library kernel's mapping (FBGEMM's table-batched embedding forward kernel for bags).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KernelConfig {
    /// Threads per block.
    pub threads_per_block: u32,
    /// Registers per thread (sets occupancy with `registers_per_sm`).
    pub registers_per_thread: u32,
    /// Rows a thread group has in flight per iteration of its row loop.
    pub row_unroll: u32,
    /// Warp instructions per row beyond its loads (shuffle, address, accumulate).
    pub instructions_per_row: u32,
}

impl GpuSimConfig {
    /// Checks every count and the L2's shape; `l2_bytes` is the analytic model's L2, which the
    /// slices must add up to.
    pub fn validate(&self, gpu: &GpuConfig) -> Result<(), GpuError> {
        // Upper bounds far beyond any real part: state is allocated per scheduler, slice and
        // in-flight request, so a typo must not reach the allocator.
        for (field, v, max) in [
            ("schedulers", self.schedulers, 64),
            ("registers_per_sm", self.registers_per_sm, 1 << 24),
            ("max_blocks_per_sm", self.max_blocks_per_sm, 1024),
            ("lsu_lines_per_cycle", self.lsu_lines_per_cycle, 1024),
            ("l2.banks", self.l2.banks, 4096),
            ("l2.max_in_flight", self.l2.max_in_flight, mem_model::cache::MAX_IN_FLIGHT),
            ("l2.bank_queue", self.l2.bank_queue, 1 << 16),
            ("kernel.registers_per_thread", self.kernel.registers_per_thread, 255),
            ("kernel.row_unroll", self.kernel.row_unroll, 1024),
        ] {
            if !(1..=max).contains(&v) {
                return range(field, v.to_string(), &format!("must be 1 to {max}"));
            }
        }
        let k = &self.kernel;
        if k.threads_per_block == 0 || !k.threads_per_block.is_multiple_of(32) || k.threads_per_block > 1024 {
            return range(
                "kernel.threads_per_block",
                k.threads_per_block.to_string(),
                "must be a multiple of 32 in 32..=1024",
            );
        }
        if !(1..=2).contains(&self.l2.partitions) || !self.l2.banks.is_multiple_of(self.l2.partitions) {
            return range(
                "l2.partitions",
                self.l2.partitions.to_string(),
                "must be 1 or 2 and divide l2.banks",
            );
        }
        if self.l2.far_cycles < self.l2.near_cycles {
            return range("l2.far_cycles", self.l2.far_cycles.to_string(), "must be at least l2.near_cycles");
        }
        if self.dram_link_cycles == 0 {
            return range("dram_link_cycles", "0".into(), "must be at least 1");
        }
        if self.l2.bank.size.bytes() * u64::from(self.l2.banks) != gpu.l2.bytes() {
            return range(
                "l2.bank.size",
                self.l2.bank.size.to_string(),
                "times l2.banks must equal gpu.l2 (the analytic model's L2)",
            );
        }
        // The GPU's L1s and L2 slices are simulated line by line: the same budget as a chip's
        // caches.
        let lines = |c: &mem_model::cache::CacheConfig| c.size.bytes() / c.line.bytes().max(1);
        let all = lines(&self.l1)
            .saturating_mul(u64::from(gpu.sms))
            .saturating_add(lines(&self.l2.bank).saturating_mul(u64::from(self.l2.banks)));
        if all > mem_model::cache::MAX_LINES {
            return range(
                "l1.size",
                self.l1.size.to_string(),
                "with every SM's L1 and every L2 slice, more lines than the supported 67108864",
            );
        }
        if self.blocks_per_sm(gpu) == 0 {
            // Name the limit that leaves no room: the warp slots or the registers.
            return if gpu.warps_per_sm < self.warps_per_block() {
                range(
                    "kernel.threads_per_block",
                    k.threads_per_block.to_string(),
                    "needs more warps than gpu.warps_per_sm gives an SM",
                )
            } else {
                range(
                    "kernel.registers_per_thread",
                    k.registers_per_thread.to_string(),
                    "leaves no room for one block on an SM",
                )
            };
        }
        Ok(())
    }

    /// Warps per block.
    pub fn warps_per_block(&self) -> u32 {
        self.kernel.threads_per_block / 32
    }

    /// Resident blocks per SM: the least of the block limit, the warp slots and the registers
    /// (the occupancy calculator's rule, without allocation granularity).
    pub fn blocks_per_sm(&self, gpu: &GpuConfig) -> u32 {
        let by_warps = gpu.warps_per_sm / self.warps_per_block().max(1);
        // In 64 bits: 255 registers x 1024 threads fits u32, but the product must not wrap
        // whatever a caller passes before validation.
        let per_block = u64::from(self.kernel.registers_per_thread.max(1))
            * u64::from(self.kernel.threads_per_block.max(1));
        let by_regs = u32::try_from(u64::from(self.registers_per_sm) / per_block).unwrap_or(u32::MAX);
        self.max_blocks_per_sm.min(by_warps).min(by_regs)
    }

    /// Theoretical occupancy: resident warps over the SM's warp slots.
    pub fn occupancy(&self, gpu: &GpuConfig) -> f64 {
        f64::from(self.blocks_per_sm(gpu) * self.warps_per_block()) / f64::from(gpu.warps_per_sm.max(1))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// An H100-like configuration for the crate's tests.
    pub(crate) fn h100() -> GpuConfig {
        GpuConfig {
            sms: 132,
            clock: Frequency::parse("1.98GHz").unwrap(),
            hbm_bandwidth: Bandwidth::parse("3.35TB/s").unwrap(),
            dram_latency: TimeSpan::parse("400ns").unwrap(),
            l2_latency: Some(TimeSpan::parse("200ns").unwrap()),
            l2: ByteSize::parse("50MB").unwrap(),
            sector: ByteSize::parse("32B").unwrap(),
            launch_overhead: TimeSpan::parse("4us").unwrap(),
            warps_per_sm: 64,
            occupancy: 0.71,
            efficiency_32b: 0.4,
            efficiency_64b: 0.6,
            efficiency_128b: 0.8,
        }
    }

    #[test]
    fn a_sector_that_is_not_a_power_of_two_or_a_zero_latency_is_refused() {
        assert_eq!(h100().validate(), Ok(()));
        for (sector, ok) in [("3B", false), ("0B", false), ("48B", false), ("32B", true), ("64B", true)] {
            let cfg = GpuConfig { sector: ByteSize::parse(sector).unwrap(), ..h100() };
            let r = cfg.validate();
            assert_eq!(r.is_ok(), ok, "{sector}: {r:?}");
            if let Err(e) = r {
                assert!(e.to_string().starts_with("sector = "), "{e}");
            }
        }
        let cfg = GpuConfig { dram_latency: TimeSpan::parse("0ns").unwrap(), ..h100() };
        let e = cfg.validate().unwrap_err().to_string();
        assert!(e.starts_with("dram_latency = ") && e.contains("above zero"), "{e}");
    }
}
