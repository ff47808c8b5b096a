//! gpu-model: the GPU baseline, simulated cycle by cycle and estimated analytically beside it.
//!
//! The cycle-level model ([`sim`]) runs a gather kernel on SMs ([`sm`]) with resident blocks
//! limited by warps, registers and the block limit (occupancy), the library's mapping
//! ([`kernel`]: FBGEMM's TBE gives a bag to a group of 4-32 lanes that loads one row at a time;
//! other families balance long bags over groups), warp instructions coalesced into 128 B line
//! requests, a sectored L1 per SM, a crossbar to a two-partition L2 (near and far latency), and
//! the HBM model of `mem-model` behind memory-side L2 slices; the kernel's time runs from its
//! launch to its last store. Its parameters are in the GPU preset's `[gpu_sim]`, each with its
//! source (REFERENCE.md section 3), and [`calibration`] checks them against measured H100
//! behaviour: pointer chase, L2 hit latency, streaming and L2 bandwidth, the loaded-latency
//! curve.
//!
//! The analytic model ([`analytic`]) is the whiteboard estimate, each term named: every lookup
//! moves its row rounded up to whole 32 B sectors; lookups whose row is already in L2 (estimated
//! from the reuse in the indices, scaled down when the distinct rows outgrow the L2) cost no
//! DRAM traffic; DRAM time is that traffic over peak bandwidth times an efficiency for random
//! rows of that size (the preset's `efficiency_*`: measured on an H100, `docs/h100-measured.md`;
//! they replaced REFERENCE.md section 3's placeholders), plus launch and tail, unless the
//! kernel's thread groups take longer walking their chains of row and index loads at unloaded
//! latency (Little's law on the loads in flight: few or long bags make a gather latency-bound);
//! the loaded latency follows Little's law. Reports show it beside the simulation and warn when the two
//! differ by more than 25%. [`power`] turns either's activity into energy.
#![warn(missing_docs)]

pub mod analytic;
pub mod calibration;
pub mod config;
pub mod kernel;
pub mod power;
pub mod sim;
pub mod sm;

pub use analytic::{GatherShape, GpuEstimate, estimate};
pub use config::{GpuConfig, GpuError, GpuSimConfig, KernelConfig, L2Config};
pub use kernel::{GatherKernel, KernelError};
pub use power::{GpuEnergy, GpuPower, GpuPowerError};
pub use sim::{GpuSim, GpuSimError, SimRun};
