//! dae-sim: experiments on Decoupled Access-Execute processors for embedding operations.
//!
//! The binary's library half: configuration loading ([`config`]), system assembly and runs
//! ([`system`]), the experiment driver ([`experiment`]), reports ([`report`]), `.npy` dumps of
//! outputs and inputs ([`dump`], [`npy`]), energy and power ([`power`]), where the time went
//! ([`breakdown`]), `.npy` index traces ([`npy_read`]), data files read as text,
//! gzip-compressed or not ([`data_file`]), Criteo click logs ([`criteo`]), Meta's locality
//! statistics and the Zipf fit to them ([`locality`]) and the `trace gen` / `trace info` /
//! `trace criteo` / `trace locality` / `trace fit` commands ([`trace_cmd`]); workloads of many
//! batches ([`stream`]), dense layers as a roofline ([`dense`]), a workload as the GPU's gather
//! kernel ([`gpu_kernel`]), the memory-only front end ([`mem_frontend`]), design-space sweeps
//! ([`sweep`]) with their memory curves ([`sweep_memory`]), and the plots ([`plot`]). The
//! hardware models live in the workspace crates below it.
#![warn(missing_docs)]

/// `eprintln!` that ignores a failed write: progress lines and notes on standard error must
/// never stop a run or lose its results (a closed pipe, `2>&1 | head`), where `eprintln!`
/// panics.
#[macro_export]
macro_rules! note {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr().lock(), $($arg)*);
    }};
}

pub mod breakdown;
pub mod config;
pub mod criteo;
pub mod data_file;
pub mod dense;
pub mod dump;
pub mod experiment;
pub mod gpu_kernel;
pub mod locality;
pub mod mem_frontend;
pub mod npy;
pub mod npy_read;
pub mod plot;
pub mod power;
pub mod report;
pub mod stream;
pub mod sweep;
pub mod sweep_memory;
pub mod system;
pub mod trace_cmd;
