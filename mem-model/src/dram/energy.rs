//! DRAM energy: per bit moved, per row activation, and background power per stack.
//!
//! The figures live beside the memory presets (`configs/memory/*-energy.toml`), each with its
//! source; the DAE systems and the GPU both take their HBM figures from there, so the two sides
//! of a comparison pay the same per bit.

use serde::Deserialize;
use thiserror::Error;

/// Energy figures of a DRAM (deserializable: an `[power.dram]` table names them).
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DramEnergy {
    /// Energy per bit read: column access, on-die data movement, TSVs and the interface.
    pub read_pj_per_bit: f64,
    /// Energy per bit written.
    pub write_pj_per_bit: f64,
    /// Energy of one row activation and its precharge.
    pub activate_pj: f64,
    /// Background power of one stack (refresh, standby, idle interface), in watts.
    pub background_w_per_stack: f64,
}

/// A DRAM energy figure that is negative or not a number.
#[derive(Debug, Clone, PartialEq, Error)]
#[error("{field} = {value}: must be a finite number of at least 0")]
pub struct DramEnergyError {
    /// The key.
    pub field: &'static str,
    /// Its value.
    pub value: f64,
}

/// What a DRAM did, for its energy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DramActivity {
    /// Bytes read.
    pub bytes_read: u64,
    /// Bytes written.
    pub bytes_written: u64,
    /// Row activations.
    pub activations: u64,
}

impl DramEnergy {
    /// Checks that every figure is finite and not negative.
    pub fn validate(&self) -> Result<(), DramEnergyError> {
        for (field, value) in [
            ("read_pj_per_bit", self.read_pj_per_bit),
            ("write_pj_per_bit", self.write_pj_per_bit),
            ("activate_pj", self.activate_pj),
            ("background_w_per_stack", self.background_w_per_stack),
        ] {
            if !(value.is_finite() && value >= 0.0) {
                return Err(DramEnergyError { field, value });
            }
        }
        Ok(())
    }

    /// Dynamic energy of `a`, in joules: bits read and written times their energy per bit,
    /// plus activations times the activation energy.
    pub fn dynamic_j(&self, a: &DramActivity) -> f64 {
        let pj = a.bytes_read as f64 * 8.0 * self.read_pj_per_bit
            + a.bytes_written as f64 * 8.0 * self.write_pj_per_bit
            + a.activations as f64 * self.activate_pj;
        pj * 1e-12
    }

    /// Background power of `stacks` stacks, in watts.
    pub fn background_w(&self, stacks: u32) -> f64 {
        self.background_w_per_stack * f64::from(stacks)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dynamic_energy_is_bits_times_energy_per_bit_plus_activations() {
        let e = DramEnergy {
            read_pj_per_bit: 2.0,
            write_pj_per_bit: 3.0,
            activate_pj: 500.0,
            background_w_per_stack: 1.5,
        };
        let a = DramActivity { bytes_read: 1000, bytes_written: 100, activations: 10 };
        // 8000 bit x 2 pJ + 800 bit x 3 pJ + 10 x 500 pJ = 16000 + 2400 + 5000 = 23400 pJ.
        assert!((e.dynamic_j(&a) - 23_400e-12).abs() < 1e-18);
        assert!((e.background_w(5) - 7.5).abs() < 1e-12);
    }

    #[test]
    fn negative_or_nan_figures_are_named() {
        let mut e = DramEnergy {
            read_pj_per_bit: 2.0,
            write_pj_per_bit: 3.0,
            activate_pj: 500.0,
            background_w_per_stack: 1.5,
        };
        assert!(e.validate().is_ok());
        e.activate_pj = -1.0;
        assert_eq!(e.validate().unwrap_err().field, "activate_pj");
        e.activate_pj = f64::NAN;
        assert_eq!(e.validate().unwrap_err().field, "activate_pj");
    }
}
