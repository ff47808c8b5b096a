//! The preset file format: what a `configs/memory/*.toml` file holds, as written.
//!
//! Contract: a [`DramPreset`] is only parsed text. Names (levels, commands, timings, mapping,
//! policies) are still strings and latencies still expressions; [`DramSpec::from_preset`]
//! resolves them once, failing with an error that names anything unknown. Every table refuses
//! unknown keys, so a misspelt key is an error rather than a silently ignored value.
//!
//! ```toml
//! name = "HBM3-6400"
//! standard = "HBM3"
//! [organization]            # counts per parent; channels per stack
//! stacks = 1
//! channels = 16
//! pseudo_channels = 2
//! ranks = 2                 # HBM3 stack ids
//! bank_groups = 4
//! banks = 4                 # per bank group
//! rows = 16384
//! row_bytes = "1KiB"        # per pseudo-channel
//! bus_width_bits = 32       # per pseudo-channel
//! burst_length = 8          # transfers per burst
//! [clock]
//! data_rate = "6400MT/s"
//! transfers_per_clock = 4   # tCK = transfers_per_clock / data_rate = 625 ps
//! [timing]                  # cycles of tCK
//! nCL = 20
//! [latency]
//! read = "nCL + nBL"        # RD issue to last data beat
//! refresh_interval = "nREFI"
//! [controller]
//! read_queue = 128
//! # ...
//! [[constraints]]
//! level = "bank"
//! preceding = ["ACT"]
//! following = ["RD", "RDA"]
//! latency = "nRCDRD"
//! ```
//!
//! [`DramSpec::from_preset`]: crate::dram::DramSpec::from_preset

use serde::Deserialize;
use sim_core::{ByteSize, TransferRate};
use std::collections::BTreeMap;

/// A whole preset file.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DramPreset {
    /// Short name used in reports ("HBM3-6400").
    pub name: String,
    /// The standard it follows ("HBM3", "DDR5"); informational.
    pub standard: String,
    /// Hierarchy and geometry.
    pub organization: OrganizationPreset,
    /// Command clock.
    pub clock: ClockPreset,
    /// Named timings in cycles of the command clock (`nCL = 20`).
    pub timing: BTreeMap<String, u64>,
    /// Latencies the controller needs, as expressions over `timing`.
    pub latency: LatencyPreset,
    /// Controller policies and sizes.
    pub controller: ControllerPreset,
    /// The timing constraint table.
    pub constraints: Vec<ConstraintPreset>,
}

/// Geometry: counts per parent node, outermost first.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OrganizationPreset {
    /// HBM stacks (DDR: DIMM channels; use 1).
    pub stacks: u32,
    /// Channels per stack.
    pub channels: u32,
    /// Pseudo-channels (DDR5: sub-channels) per channel; 1 for legacy HBM or DDR4.
    pub pseudo_channels: u32,
    /// Ranks (HBM3: stack ids) per pseudo-channel.
    pub ranks: u32,
    /// Bank groups per rank.
    pub bank_groups: u32,
    /// Banks per bank group.
    pub banks: u32,
    /// Rows per bank.
    pub rows: u32,
    /// Bytes of one row as seen by one pseudo-channel (its page size).
    pub row_bytes: ByteSize,
    /// Data bus width of one pseudo-channel, in bits.
    pub bus_width_bits: u32,
    /// Transfers (beats) per burst.
    pub burst_length: u32,
}

/// The command clock, from the data rate.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClockPreset {
    /// Per-pin data rate.
    pub data_rate: TransferRate,
    /// Data transfers per command-clock cycle (DDR: 2; HBM3: 4).
    pub transfers_per_clock: u32,
}

/// Latencies that are not constraints between two commands.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LatencyPreset {
    /// Cycles from a RD's issue to its last data beat ("nCL + nBL").
    pub read: String,
    /// Cycles between two all-bank refreshes of one refresh unit ("nREFI").
    pub refresh_interval: String,
}

/// Controller policies and sizes (per pseudo-channel controller).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ControllerPreset {
    /// Read queue entries (bursts).
    pub read_queue: u32,
    /// Write queue entries (bursts).
    pub write_queue: u32,
    /// Enter write-drain mode when the write queue holds this many entries.
    pub write_high_watermark: u32,
    /// Leave write-drain mode when it holds this many or fewer (and reads wait).
    pub write_low_watermark: u32,
    /// "frfcfs" (ready first, then oldest) or "frfcfs_cap" (ready row hits first, at most
    /// `row_hit_cap` in a row while an older request to the bank waits).
    pub scheduler: String,
    /// Consecutive row hits allowed while a conflicting request waits (frfcfs_cap).
    pub row_hit_cap: u32,
    /// "open" (rows stay open until a conflict) or "closed" (auto-precharge when no queued
    /// request hits the row).
    pub page_policy: String,
    /// "all_bank", "per_bank" or "none".
    pub refresh: String,
    /// Level refreshed (and precharged by PREA) as a unit: "pseudo_channel" or "rank".
    pub refresh_level: String,
    /// Spread the refresh units' schedules evenly over one interval instead of refreshing
    /// every unit at the same cycle (default false, as Ramulator 2; DRAMsim3 staggers).
    #[serde(default)]
    pub refresh_stagger: bool,
    /// Address mapping scheme ("RoCoBaRaCh", ...).
    pub mapping: String,
    /// Bytes mapped to one pseudo-channel and row before the mapping's fields start (a
    /// multiple of the burst size; the low column bits).
    pub interleave: ByteSize,
    /// XOR the bank and bank-group index with the low row bits.
    pub xor_bank: bool,
    /// Rotate the pseudo-channel index by a hash of the address's higher fields, as GPUs hash
    /// their memory partitions (default false; see [`crate::dram::mapping`]).
    #[serde(default)]
    pub channel_hash: bool,
}

fn one() -> u32 {
    1
}

/// One row of the constraint table, as written.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConstraintPreset {
    /// Level whose nodes the constraint applies to ("bank", "rank", ...).
    pub level: String,
    /// Commands that start the constraint.
    pub preceding: Vec<String>,
    /// Commands it delays.
    pub following: Vec<String>,
    /// Cycles, as an expression over the timing names.
    pub latency: String,
    /// For tFAW-style constraints: the following command waits `latency` after the
    /// `window`-th most recent preceding command (default 1: the most recent).
    #[serde(default = "one")]
    pub window: u32,
    /// Applies between different nodes of the level that share a parent (tCCD_R between stack
    /// ids, rank-to-rank switches) instead of within one node.
    #[serde(default)]
    pub sibling: bool,
}
