//! Device state: per node `ready_at` cycles, window histories and bank row state.
//!
//! Contract: the device answers "earliest legal cycle for this command at this address" and
//! records issued commands; it never decides what to issue (the controller does). Timing is the
//! maximum of one `ready_at[command]` per level on the command's path (channel, pseudo-channel,
//! rank, bank group, bank), kept up to date by the compiled constraint table
//! ([`crate::dram::timing`]). Row state follows the commands: ACT opens the addressed row, PRE,
//! RDA and WRA close the bank, PREA closes every bank of its scope. Each channel's state is
//! separate, so channels never interact; the pseudo-channels of a channel share the channel
//! node, where the command-bus constraints of the preset live.
//!
//! All arrays are flat and preallocated; issuing a command touches a dozen integers. A node keeps
//! one `ready_at` per command *class* of its level (see [`crate::dram::timing`]); slot 0 of a
//! channel's array is always 0, so a precomputed check can read it for a level where a command
//! has nothing to wait for.

use crate::dram::command::{Command, Level, NUM_LEVELS};
use crate::dram::mapping::DramAddr;
use crate::dram::spec::DramSpec;
use crate::dram::timing::{NO_SLOT, Target, TimingTable};
use std::fmt;

/// Row state of a closed bank.
pub(crate) const CLOSED: u32 = u32::MAX;
/// An empty slot of a window history.
const EMPTY: u64 = u64::MAX;

/// Node indices of one address, level by level, within its channel, and where each node's
/// `ready_at` slots start in the channel's flat array.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct NodePath {
    pub(crate) node: [u32; NUM_LEVELS],
    pub(crate) slot: [u32; NUM_LEVELS],
}

impl NodePath {
    #[inline]
    pub(crate) fn at(&self, l: Level) -> usize {
        self.node[l.index()] as usize
    }
}

/// State of one channel and everything below it.
#[derive(Debug, Clone)]
pub(crate) struct ChannelState {
    /// `ready[base[level] + node * width[level] + slot]`: one flat array for all levels, after
    /// the always-zero slot 0.
    ready: Vec<u64>,
    /// Open row per bank node, or [`CLOSED`].
    pub(crate) open_row: Vec<u32>,
    /// `hist[window][node * size ..][..size]`, oldest first.
    hist: Vec<Vec<u64>>,
}

/// Why a command could not be issued (from [`Device::issue`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeviceError {
    /// A timing constraint forbids it before `earliest`.
    TooEarly {
        /// The command.
        cmd: Command,
        /// The cycle asked for.
        cycle: u64,
        /// The first legal cycle.
        earliest: u64,
    },
    /// The row state forbids it (RD to a closed bank, ACT to an open one ...).
    State {
        /// The command.
        cmd: Command,
        /// Why.
        reason: &'static str,
    },
    /// The address is outside the organisation.
    Address(DramAddr),
}

impl fmt::Display for DeviceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeviceError::TooEarly { cmd, cycle, earliest } => {
                write!(f, "{cmd} at cycle {cycle} is too early: first legal cycle is {earliest}")
            }
            DeviceError::State { cmd, reason } => write!(f, "{cmd} is illegal: {reason}"),
            DeviceError::Address(a) => write!(f, "address {a:?} is outside the organisation"),
        }
    }
}

impl std::error::Error for DeviceError {}

/// The state of every channel of a DRAM system (see the module docs).
#[derive(Debug, Clone)]
pub struct Device {
    pub(crate) table: TimingTable,
    /// Children per parent at each level (index 0: 1, the channel node itself).
    fanout: [u32; NUM_LEVELS],
    /// Nodes per channel at each level.
    nodes: [usize; NUM_LEVELS],
    /// Start of each level's slots in a channel's flat `ready` array.
    base: [usize; NUM_LEVELS],
    /// Slots per node at each level.
    width: [usize; NUM_LEVELS],
    channels: Vec<ChannelState>,
    org_channels: u32,
}

impl Device {
    /// A device in its reset state: every bank closed, every command legal at cycle 0.
    pub fn new(spec: &DramSpec) -> Device {
        let o = spec.organization();
        let fanout = [1, o.pseudo_channels, o.ranks, o.bank_groups, o.banks];
        let mut nodes = [1usize; NUM_LEVELS];
        for l in 1..NUM_LEVELS {
            nodes[l] = nodes[l - 1] * fanout[l] as usize;
        }
        let table = TimingTable::new(spec);
        let width = table.width;
        // Slot 0 reads as "no constraint".
        let mut base = [1usize; NUM_LEVELS];
        for l in 1..NUM_LEVELS {
            base[l] = base[l - 1] + nodes[l - 1] * width[l - 1];
        }
        let total = base[NUM_LEVELS - 1] + nodes[NUM_LEVELS - 1] * width[NUM_LEVELS - 1];
        let state = ChannelState {
            ready: vec![0u64; total],
            open_row: vec![CLOSED; nodes[Level::Bank.index()]],
            hist: table.windows.iter().map(|w| vec![EMPTY; nodes[w.level.index()] * w.size]).collect(),
        };
        Device {
            table,
            fanout,
            nodes,
            base,
            width,
            channels: vec![state; o.channels as usize],
            org_channels: o.channels,
        }
    }

    /// The node path of `a` within its channel (no range check).
    #[inline]
    pub(crate) fn path(&self, a: &DramAddr) -> NodePath {
        let f = &self.fanout;
        let pc = a.pseudo_channel;
        let rank = pc * f[2] + a.rank;
        let bg = rank * f[3] + a.bank_group;
        let bank = bg * f[4] + a.bank;
        let node = [0, pc, rank, bg, bank];
        let slot = std::array::from_fn(|l| (self.base[l] + node[l] as usize * self.width[l]) as u32);
        NodePath { node, slot }
    }

    fn check_addr(&self, a: &DramAddr) -> Result<(), DeviceError> {
        let f = &self.fanout;
        let ok = a.channel < self.org_channels
            && a.pseudo_channel < f[1]
            && a.rank < f[2]
            && a.bank_group < f[3]
            && a.bank < f[4];
        if ok { Ok(()) } else { Err(DeviceError::Address(*a)) }
    }

    /// The scope (addressed level) of `cmd`.
    pub fn scope(&self, cmd: Command) -> Level {
        self.table.scope[cmd.index()]
    }

    /// Earliest cycle at which the timing constraints allow `cmd` at `a` (row state aside).
    /// For PREA and REFab only the coordinates down to their scope matter.
    pub fn earliest(&self, cmd: Command, a: &DramAddr) -> u64 {
        if self.check_addr(a).is_err() {
            return u64::MAX;
        }
        let path = self.path(a);
        self.earliest_on(a.channel as usize, cmd, &path)
    }

    /// Whether the row state allows `cmd` at `a`: RD/WR/RDA/WRA need `a.row` open, ACT and
    /// REFpb a closed bank, REFab every bank of its scope closed, PRE an open bank.
    pub fn state_allows(&self, cmd: Command, a: &DramAddr) -> Result<(), DeviceError> {
        self.check_addr(a)?;
        let path = self.path(a);
        let ch = &self.channels[a.channel as usize];
        let open = ch.open_row[path.at(Level::Bank)];
        let reason = match cmd {
            Command::Act | Command::RefPb if open != CLOSED => "the bank is open",
            Command::Pre if open == CLOSED => "the bank is closed",
            c if c.is_column() && open != a.row => {
                if open == CLOSED {
                    "the bank is closed"
                } else {
                    "another row is open"
                }
            }
            Command::RefAb => {
                let range = self.subtree(Level::Bank, self.scope(cmd), &path);
                if ch.open_row[range].iter().any(|r| *r != CLOSED) {
                    "a bank of the refresh scope is open"
                } else {
                    return Ok(());
                }
            }
            _ => return Ok(()),
        };
        Err(DeviceError::State { cmd, reason })
    }

    /// Whether `cmd` at `a` is legal at `cycle` (row state and timing).
    pub fn can_issue(&self, cmd: Command, a: &DramAddr, cycle: u64) -> bool {
        self.state_allows(cmd, a).is_ok() && self.earliest(cmd, a) <= cycle
    }

    /// Issues `cmd` at `a` at `cycle` after checking that it is legal.
    pub fn issue(&mut self, cmd: Command, a: &DramAddr, cycle: u64) -> Result<(), DeviceError> {
        self.state_allows(cmd, a)?;
        let earliest = self.earliest(cmd, a);
        if cycle < earliest {
            return Err(DeviceError::TooEarly { cmd, cycle, earliest });
        }
        let path = self.path(a);
        self.issue_at(a.channel as usize, cmd, &path, a.row, cycle);
        Ok(())
    }

    /// The open row of the bank at `a`, if any.
    pub fn open_row(&self, a: &DramAddr) -> Option<u32> {
        self.check_addr(a).ok()?;
        let r = self.channels[a.channel as usize].open_row[self.path(a).at(Level::Bank)];
        (r != CLOSED).then_some(r)
    }

    /// Range of `level` node indices under the `scope` node of `path`.
    #[inline]
    pub(crate) fn subtree(&self, level: Level, scope: Level, path: &NodePath) -> std::ops::Range<usize> {
        let per = self.nodes[level.index()] / self.nodes[scope.index()];
        let first = path.at(scope) * per;
        first..first + per
    }

    /// Earliest cycle for `cmd` on `path` of channel `ch` (timing only).
    #[inline]
    pub(crate) fn earliest_on(&self, ch: usize, cmd: Command, path: &NodePath) -> u64 {
        let ready = &self.channels[ch].ready;
        let c = cmd.index();
        let mut e = 0;
        for l in 0..=self.table.scope[c].index() {
            let s = self.table.slot[l][c];
            if s != NO_SLOT {
                e = e.max(ready[path.slot[l] as usize + s as usize]);
            }
        }
        e
    }

    /// Where `cmd`'s check on `path` reads, level by level (slot 0, always 0, where it has
    /// nothing to wait for): `max_at` over these is [`Device::earliest_on`]. Precomputed by the
    /// controllers, which check the same few (bank, command) pairs over and over.
    pub(crate) fn check_slots(&self, cmd: Command, path: &NodePath) -> [u32; NUM_LEVELS] {
        let c = cmd.index();
        std::array::from_fn(|l| {
            let s = self.table.slot[l][c];
            if l > self.table.scope[c].index() || s == NO_SLOT { 0 } else { path.slot[l] + u32::from(s) }
        })
    }

    /// Channel `ch`'s `ready_at` slots, to read at [`Device::check_slots`] indices.
    #[inline]
    pub(crate) fn ready(&self, ch: usize) -> &[u64] {
        &self.channels[ch].ready
    }

    /// The open row of bank node `bank` of channel `ch`, or [`CLOSED`].
    #[inline]
    pub(crate) fn row_of(&self, ch: usize, bank: usize) -> u32 {
        self.channels[ch].open_row[bank]
    }

    /// Records `cmd` issued at `cycle` on `path` of channel `ch`, opening `row` for ACT.
    /// The caller has checked legality.
    /// Moves every timing slot of channel `ch` `by` cycles later: the channel as it would be had
    /// everything it did happened `by` cycles later (slot 0, always zero, stays). Window
    /// histories are left: the caller shifts only a channel whose last activation is older
    /// than any window.
    pub(crate) fn shift(&mut self, ch: usize, by: u64) {
        for slot in self.channels[ch].ready.iter_mut().skip(1) {
            *slot = slot.saturating_add(by);
        }
    }

    pub(crate) fn issue_at(&mut self, ch: usize, cmd: Command, path: &NodePath, row: u32, cycle: u64) {
        let scope = self.table.scope[cmd.index()];
        let state = &mut self.channels[ch];
        // Window histories first: their updates read the history including this command.
        if self.table.in_window.contains(cmd) {
            for (w, spec) in self.table.windows.iter().enumerate() {
                if spec.preceding.contains(cmd) {
                    let node = path.at(spec.level);
                    let slots = &mut state.hist[w][node * spec.size..(node + 1) * spec.size];
                    slots.copy_within(1.., 0);
                    if let Some(last) = slots.last_mut() {
                        *last = cycle;
                    }
                }
            }
        }
        let ready = &mut state.ready;
        for u in self.table.node_updates_of(cmd) {
            let at = cycle + u64::from(u.latency);
            let slot = &mut ready[path.slot[u.level.index()] as usize + u.slot as usize];
            *slot = (*slot).max(at);
        }
        for u in self.table.updates_of(cmd) {
            let l = u.level.index();
            let (width, s) = (self.width[l], usize::from(u.slot));
            let at = cycle.saturating_add(u.latency);
            match u.target {
                Target::Node => {
                    let slot = &mut ready[path.slot[l] as usize + s];
                    *slot = (*slot).max(at);
                }
                Target::Sibling => {
                    // The nodes under the parent (never the channel level: validated).
                    let fan = self.fanout[l] as usize;
                    let me = path.node[l] as usize;
                    let first = path.node[l - 1] as usize * fan;
                    for n in first..first + fan {
                        if n != me {
                            let slot = &mut ready[self.base[l] + n * width + s];
                            *slot = (*slot).max(at);
                        }
                    }
                }
                Target::Broadcast => {
                    let per = self.nodes[l] / self.nodes[scope.index()];
                    let first = path.at(scope) * per;
                    for n in first..first + per {
                        let slot = &mut ready[self.base[l] + n * width + s];
                        *slot = (*slot).max(at);
                    }
                }
                Target::Window(w) => {
                    let size = self.table.windows[w as usize].size;
                    let node = path.node[l] as usize;
                    let oldest = state.hist[w as usize][node * size];
                    if oldest != EMPTY {
                        let slot = &mut ready[path.slot[l] as usize + s];
                        *slot = (*slot).max(oldest.saturating_add(u.latency));
                    }
                }
            }
        }
        let bank = path.at(Level::Bank);
        match cmd {
            Command::Act => state.open_row[bank] = row,
            Command::Pre | Command::RdA | Command::WrA => state.open_row[bank] = CLOSED,
            Command::PreA => {
                let per = self.nodes[Level::Bank.index()] / self.nodes[scope.index()];
                let first = path.at(scope) * per;
                state.open_row[first..first + per].fill(CLOSED);
            }
            _ => {}
        }
    }
}
