//! The command trace: every command a [`crate::dram::Dram`] issued, for validation.
//!
//! Contract: recording is off by default and costs one branch per command; when on
//! ([`crate::dram::Dram::set_command_log`]), each command is appended in the order the controllers
//! issued it. Refreshes an idle controller replays (see [`crate::dram::refresh`]) are appended when
//! they are replayed, so the log is sorted by controller run, not strictly by tick: sort by
//! `(cycle, index)` before replaying it, as [`crate::dram::checker`] does.

use crate::dram::command::Command;
use crate::dram::mapping::DramAddr;
use sim_core::Tick;

/// One issued command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IssuedCommand {
    /// Tick of the clock edge it issued on.
    pub tick: Tick,
    /// The command-clock cycle.
    pub cycle: u64,
    /// The command.
    pub cmd: Command,
    /// Channel over all stacks.
    pub channel: u32,
    /// Pseudo-channel within the channel.
    pub pseudo_channel: u32,
    /// Rank (stack id). For PREA/REFab at pseudo-channel scope: 0.
    pub rank: u32,
    /// Bank group; 0 for PREA/REFab.
    pub bank_group: u32,
    /// Bank; 0 for PREA/REFab.
    pub bank: u32,
    /// ACT: the row opened; PRE: the row closed; column commands: the row accessed; else 0 or
    /// the closed-row marker `u32::MAX`.
    pub row: u32,
    /// Column (in bursts) of column commands; 0 otherwise.
    pub column: u32,
}

impl IssuedCommand {
    /// The command's coordinates (row and column as logged).
    pub fn addr(&self) -> DramAddr {
        DramAddr {
            channel: self.channel,
            pseudo_channel: self.pseudo_channel,
            rank: self.rank,
            bank_group: self.bank_group,
            bank: self.bank,
            row: self.row,
            column: self.column,
        }
    }
}
