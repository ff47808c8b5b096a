//! dae-sim: experiments on Decoupled Access-Execute processors for embedding operations.
//!
//! The binary's library half: configuration loading ([`config`]), system assembly and runs
//! ([`system`]), the GPU baseline glue ([`gpu`]), the experiment driver ([`experiment`]) and
//! reports ([`report`]). The hardware models live in the workspace crates below it.

pub mod config;
pub mod experiment;
pub mod gpu;
pub mod mem_frontend;
pub mod report;
pub mod system;
