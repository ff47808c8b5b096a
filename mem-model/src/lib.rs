//! mem-model: the memory system every requester in dae-sim talks to.
//!
//! Requests carry an id, address, size, direction, the requester's port and the tick they were
//! issued; responses come back over links and latency is measured at the requester, end to end.
//! This crate holds the functional memory image (the values that indices, offsets and tables
//! really have; large read-only tables are procedural, see `sim_core::procedural`) and the
//! timing models, all engine components behind the same request interface:
//!
//! - [`cache`]: set-associative, sectored, write-back caches with MSHRs, and the crossbar or mesh
//!   between private caches, shared-cache banks and memory controllers;
//! - [`dram`]: the bank-level DRAM/HBM model after Ramulator 2 (timing constraints as data,
//!   per-pseudo-channel FR-FCFS controllers, refresh, address mappings), with presets under
//!   `configs/memory/` whose values cite their sources (REFERENCE.md section 3);
//! - [`SimpleMemory`]: a single server with a fixed access latency and a bandwidth limit
//!   (service time = bytes / bandwidth, first come first served), for `model = "simple"` and
//!   for tests that want a memory without DRAM timing;
//! - [`trace`]: the memory-only front end's trace readers, generators and driver.
#![warn(missing_docs)]

pub mod cache;
pub mod dram;
pub mod image;
pub mod request;
pub mod simple;
pub mod trace;

pub use image::{Backing, FileBacking, MemoryImage, Region, RegionId};
pub use request::{MemRequest, MemResponse};
pub use simple::{SimpleMemory, SimpleMemoryConfig};

use thiserror::Error;

/// Errors of the memory model.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum MemError {
    /// An access touched no region of the image.
    #[error("address {addr:#x} ({bytes} B) is outside every memory region")]
    Unmapped {
        /// First byte accessed.
        addr: u64,
        /// Bytes accessed.
        bytes: u64,
    },
    /// An element access was not aligned to the element size.
    #[error("address {addr:#x} is not aligned to {align} B")]
    Misaligned {
        /// The address.
        addr: u64,
        /// Required alignment.
        align: u64,
    },
    /// Two regions overlap.
    #[error("region {new} [{base:#x}, +{size}) overlaps region {old}")]
    Overlap {
        /// The region being added.
        new: String,
        /// Its base.
        base: u64,
        /// Its size.
        size: u64,
        /// The region it collides with.
        old: String,
    },
    /// A file backing could not be read.
    #[error("{path}: {message}")]
    Io {
        /// The file.
        path: String,
        /// What went wrong.
        message: String,
    },
    /// A word-backed region's size does not match its words.
    #[error("region {name} is {size} B but holds {words} words (4 B each)")]
    Size {
        /// The region.
        name: String,
        /// Its declared size.
        size: u64,
        /// Words it holds.
        words: u64,
    },
    /// A configuration value is impossible.
    #[error("{what} must be above zero")]
    Zero {
        /// What was zero.
        what: &'static str,
    },
}
