//! The vocabulary of the device: commands, hierarchy levels and command sets.
//!
//! Contract: names are looked up once, when a preset is resolved ([`Command::from_name`],
//! [`Level::from_name`]); everything after that works on the small integers these enums stand
//! for, so the hot path indexes arrays instead of comparing strings.

use std::fmt;

/// A DRAM command. The set is fixed (it is what a controller knows how to use); the timing
/// between commands is data (see [`crate::dram::spec::Constraint`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum Command {
    /// Activate: open a row in a closed bank.
    Act = 0,
    /// Precharge one bank (close its row).
    Pre = 1,
    /// Precharge all banks of the all-bank scope (see `refresh_level`).
    PreA = 2,
    /// Read one burst from the open row.
    Rd = 3,
    /// Write one burst to the open row.
    Wr = 4,
    /// Read with auto-precharge.
    RdA = 5,
    /// Write with auto-precharge.
    WrA = 6,
    /// Refresh all banks of the all-bank scope.
    RefAb = 7,
    /// Refresh one bank.
    RefPb = 8,
}

/// Number of commands; arrays indexed by command have this length.
pub const NUM_COMMANDS: usize = 9;

impl Command {
    /// Every command, in index order.
    pub const ALL: [Command; NUM_COMMANDS] = [
        Command::Act,
        Command::Pre,
        Command::PreA,
        Command::Rd,
        Command::Wr,
        Command::RdA,
        Command::WrA,
        Command::RefAb,
        Command::RefPb,
    ];

    /// The names used in presets and logs, in index order.
    pub const NAMES: [&'static str; NUM_COMMANDS] =
        ["ACT", "PRE", "PREA", "RD", "WR", "RDA", "WRA", "REFab", "REFpb"];

    /// The valid names as one comma-separated string, for error messages.
    pub const VALID: &'static str = "ACT, PRE, PREA, RD, WR, RDA, WRA, REFab, REFpb";

    /// The command's index (0..9).
    #[inline]
    pub const fn index(self) -> usize {
        self as usize
    }

    /// The command at `index`, if any.
    pub fn from_index(index: usize) -> Option<Command> {
        Command::ALL.get(index).copied()
    }

    /// The command called `name` (exact, case-sensitive: "REFab" and "REFpb" differ by case only
    /// in their tails).
    pub fn from_name(name: &str) -> Option<Command> {
        Command::NAMES.iter().position(|n| *n == name).and_then(Command::from_index)
    }

    /// The command's preset name.
    pub fn name(self) -> &'static str {
        Command::NAMES[self.index()]
    }

    /// Whether it is a column (CAS) command: it moves data and needs the row open.
    #[inline]
    pub const fn is_column(self) -> bool {
        matches!(self, Command::Rd | Command::Wr | Command::RdA | Command::WrA)
    }

    /// Whether it reads.
    #[inline]
    pub const fn is_read(self) -> bool {
        matches!(self, Command::Rd | Command::RdA)
    }

    /// Whether it writes.
    #[inline]
    pub const fn is_write(self) -> bool {
        matches!(self, Command::Wr | Command::WrA)
    }

    /// Whether it closes the bank it addresses (PRE, RDA, WRA; PREA closes a whole scope).
    #[inline]
    pub const fn closes_bank(self) -> bool {
        matches!(self, Command::Pre | Command::RdA | Command::WrA)
    }

    /// Whether it addresses a whole all-bank scope rather than one bank.
    #[inline]
    pub const fn is_all_bank(self) -> bool {
        matches!(self, Command::PreA | Command::RefAb)
    }

    /// Whether it is a refresh.
    #[inline]
    pub const fn is_refresh(self) -> bool {
        matches!(self, Command::RefAb | Command::RefPb)
    }
}

impl fmt::Display for Command {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A level of the DRAM hierarchy, outermost first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum Level {
    /// A channel (HBM: one 64-bit channel of a stack; DDR: one DIMM channel). Shared command
    /// buses live here.
    Channel = 0,
    /// A pseudo-channel (HBM) or sub-channel (DDR5): owns a data bus and a controller.
    PseudoChannel = 1,
    /// A rank; for HBM3 the stack id (SID) of a multi-die stack.
    Rank = 2,
    /// A bank group.
    BankGroup = 3,
    /// A bank: holds the row state.
    Bank = 4,
}

/// Number of levels.
pub const NUM_LEVELS: usize = 5;

impl Level {
    /// Every level, outermost first.
    pub const ALL: [Level; NUM_LEVELS] =
        [Level::Channel, Level::PseudoChannel, Level::Rank, Level::BankGroup, Level::Bank];

    /// The names used in presets, outermost first.
    pub const NAMES: [&'static str; NUM_LEVELS] = ["channel", "pseudo_channel", "rank", "bank_group", "bank"];

    /// The valid names, for error messages.
    pub const VALID: &'static str = "channel, pseudo_channel, rank, bank_group, bank";

    /// The level's depth (0 = channel).
    #[inline]
    pub const fn index(self) -> usize {
        self as usize
    }

    /// The level called `name`.
    pub fn from_name(name: &str) -> Option<Level> {
        Level::NAMES.iter().position(|n| *n == name).map(|i| Level::ALL[i])
    }

    /// The level's preset name.
    pub fn name(self) -> &'static str {
        Level::NAMES[self.index()]
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A set of commands, as a bit mask.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct CmdSet(u16);

impl CmdSet {
    /// The empty set.
    pub const EMPTY: CmdSet = CmdSet(0);

    /// Adds `c`.
    pub fn with(self, c: Command) -> CmdSet {
        CmdSet(self.0 | (1 << c.index()))
    }

    /// Whether `c` is in the set.
    #[inline]
    pub const fn contains(self, c: Command) -> bool {
        self.0 & (1 << c as u8) != 0
    }

    /// Whether the set is empty.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The commands of the set, in index order.
    pub fn iter(self) -> impl Iterator<Item = Command> {
        Command::ALL.into_iter().filter(move |c| self.contains(*c))
    }
}

impl fmt::Display for CmdSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.iter().map(Command::name).collect();
        write!(f, "[{}]", names.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for c in Command::ALL {
            assert_eq!(Command::from_name(c.name()), Some(c));
            assert_eq!(Command::from_index(c.index()), Some(c));
        }
        for l in Level::ALL {
            assert_eq!(Level::from_name(l.name()), Some(l));
        }
        assert_eq!(Command::from_name("REFAB"), None);
        assert_eq!(Level::from_name("sid"), None);
        let s = CmdSet::EMPTY.with(Command::Rd).with(Command::RdA);
        assert_eq!(s.to_string(), "[RD, RDA]");
        assert!(s.contains(Command::RdA) && !s.contains(Command::Wr));
    }
}
