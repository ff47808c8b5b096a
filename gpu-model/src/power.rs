//! GPU power: static power plus activity-based dynamic power, bounded by the TDP.
//!
//! For one gather kernel of time `t` (launch overhead included) and its activity, simulated
//! ([`crate::sim::SimRun::activity`], the cycle-level runs) or estimated ([`crate::estimate`]):
//!
//! ```text
//! E_dyn = dram_read_bits x read_pj_per_bit + dram_written_bits x write_pj_per_bit
//!       + activations x activate_pj + l2_sectors x onchip_pj_per_sector
//!       + sm_sectors x sm_pj_per_sector
//! P     = min(tdp_w, static_w + E_dyn / t)            E = P x t
//! ```
//!
//! `static_w` is the board's power with clocks up and a kernel resident (leakage, clock trees,
//! HBM background and PHYs, voltage regulators), so the DRAM's background figure is not added
//! again. `onchip_pj_per_sector` is what a 32 B sector costs between the L2 and an SM (L2 read,
//! crossbar), paid by the sectors that reach the L2; `sm_pj_per_sector` what it costs inside the
//! SM (L1, load/store unit, register file, the warp instructions that issue and accumulate it),
//! paid by every sector the SMs load or store, L1 hits included. Both sources give the traffic
//! figures in a [`GpuEstimate`].

use crate::GpuEstimate;
use mem_model::dram::{DramActivity, DramEnergy};
use serde::Deserialize;
use sim_core::PS_PER_SECOND;
use thiserror::Error;

/// `[power]` of a GPU system.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GpuPower {
    /// Thermal design power: the most the board may draw, in watts.
    pub tdp_w: f64,
    /// Power with clocks up and a kernel resident, before any traffic, in watts.
    pub static_w: f64,
    /// Energy of one 32 B sector between L2 and an SM, in pJ.
    pub onchip_pj_per_sector: f64,
    /// Energy of one 32 B sector inside an SM (L1, load/store unit, register file, warp
    /// instructions), L1 hits included, in pJ (0 when not given: all of it in
    /// `onchip_pj_per_sector`).
    #[serde(default)]
    pub sm_pj_per_sector: f64,
    /// The HBM's energy figures.
    pub dram: DramEnergy,
}

/// A GPU power figure out of its range.
#[derive(Debug, Clone, PartialEq, Error)]
#[error("{field} = {value}: {why}")]
pub struct GpuPowerError {
    /// The key, relative to `[power]` (`dram.activate_pj`).
    pub field: String,
    /// Its value.
    pub value: f64,
    /// The range.
    pub why: &'static str,
}

/// The energy of one kernel.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GpuEnergy {
    /// Static energy (`static_w x t`), in joules.
    pub static_j: f64,
    /// DRAM dynamic energy, in joules (before the TDP bound).
    pub dram_j: f64,
    /// On-chip dynamic energy (L2 to SMs), in joules (before the TDP bound).
    pub onchip_j: f64,
    /// Energy after the TDP bound, in joules.
    pub total_j: f64,
    /// Average power after the TDP bound, in watts.
    pub average_w: f64,
    /// Whether the TDP bound applied.
    pub tdp_bound: bool,
}

impl GpuPower {
    /// Checks every figure: finite, not negative, `static_w` at most `tdp_w`, `tdp_w` above 0.
    pub fn validate(&self) -> Result<(), GpuPowerError> {
        let bad = |field: &str, value: f64, why| Err(GpuPowerError { field: field.into(), value, why });
        for (field, value) in [
            ("tdp_w", self.tdp_w),
            ("static_w", self.static_w),
            ("onchip_pj_per_sector", self.onchip_pj_per_sector),
            ("sm_pj_per_sector", self.sm_pj_per_sector),
        ] {
            if !(value.is_finite() && value >= 0.0) {
                return bad(field, value, "must be a finite number of at least 0");
            }
        }
        if self.tdp_w <= 0.0 {
            return bad("tdp_w", self.tdp_w, "must be above 0");
        }
        if self.static_w > self.tdp_w {
            return bad("static_w", self.static_w, "must not exceed tdp_w");
        }
        self.dram.validate().map_err(|e| GpuPowerError {
            field: format!("dram.{}", e.field),
            value: e.value,
            why: "must be a finite number of at least 0",
        })
    }

    /// The energy and average power of the kernel whose time and activity are `e`, simulated or
    /// estimated (see the module docs).
    pub fn energy(&self, e: &GpuEstimate) -> GpuEnergy {
        let t = e.time as f64 / PS_PER_SECOND as f64;
        let dram = DramActivity {
            bytes_read: e.dram_bytes - e.dram_bytes_written.min(e.dram_bytes),
            bytes_written: e.dram_bytes_written.min(e.dram_bytes),
            activations: e.dram_activations,
        };
        let dram_j = self.dram.dynamic_j(&dram);
        let onchip_j = (e.l2_sectors as f64 * self.onchip_pj_per_sector
            + e.sm_sectors as f64 * self.sm_pj_per_sector)
            * 1e-12;
        let static_j = self.static_w * t;
        let unbounded = static_j + dram_j + onchip_j;
        let cap = self.tdp_w * t;
        let tdp_bound = unbounded > cap;
        let total_j = unbounded.min(cap);
        let average_w = if t > 0.0 { total_j / t } else { 0.0 };
        GpuEnergy { static_j, dram_j, onchip_j, total_j, average_w, tdp_bound }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn power() -> GpuPower {
        GpuPower {
            tdp_w: 700.0,
            static_w: 100.0,
            onchip_pj_per_sector: 50.0,
            sm_pj_per_sector: 0.0,
            dram: DramEnergy {
                read_pj_per_bit: 2.0,
                write_pj_per_bit: 2.0,
                activate_pj: 1000.0,
                background_w_per_stack: 1.0,
            },
        }
    }

    fn kernel(time: u64, bytes: u64) -> GpuEstimate {
        GpuEstimate {
            time,
            dram_bytes: bytes,
            dram_bytes_written: 0,
            dram_activations: 1000,
            l2_sectors: bytes / 32,
            sm_sectors: bytes / 32,
            l2_hits: 0,
            latency: 0,
        }
    }

    #[test]
    fn static_plus_dynamic_by_hand() {
        // 1 us, 1 MB: static 100 W x 1 us = 100 uJ; DRAM 8e6 bit x 2 pJ = 16 uJ, 1000 ACT x
        // 1 nJ = 1 uJ; on-chip 31250 sectors x 50 pJ = 1.5625 uJ. Total 118.5625 uJ: 118.5625 W.
        let e = power().energy(&kernel(1_000_000, 1_000_000));
        assert!((e.static_j - 100e-6).abs() < 1e-12);
        assert!((e.dram_j - 17e-6).abs() < 1e-12);
        assert!((e.onchip_j - 1.5625e-6).abs() < 1e-12);
        assert!((e.average_w - 118.5625).abs() < 1e-6, "{}", e.average_w);
        assert!(!e.tdp_bound);
    }

    #[test]
    fn power_is_bounded_by_the_tdp() {
        // 1 GB in 1 us would be 16 mJ of DRAM energy alone: 16 kW, capped at 700 W.
        let e = power().energy(&kernel(1_000_000, 1_000_000_000));
        assert!(e.tdp_bound);
        assert!((e.average_w - 700.0).abs() < 1e-9);
        assert!((e.total_j - 700e-6).abs() < 1e-12);
    }

    #[test]
    fn bad_figures_are_named() {
        let mut p = power();
        p.static_w = 800.0;
        assert_eq!(p.validate().unwrap_err().field, "static_w");
        let mut p = power();
        p.dram.read_pj_per_bit = -1.0;
        assert_eq!(p.validate().unwrap_err().field, "dram.read_pj_per_bit");
    }
}
