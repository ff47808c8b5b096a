//! The constraint table compiled for the hot path.
//!
//! Contract: the preset's constraints (level, preceding set, following set, latency, window,
//! sibling) are turned once into, for each preceding command, a flat list of updates to apply
//! when it issues: "raise this `ready_at` slot of this node (or of its siblings, or of every
//! node of a level below it) to issue cycle + latency". Checking a command is then the maximum of
//! one `ready_at` slot per level on its path, as in Ramulator 2. Window constraints (tFAW) keep
//! the last n issue cycles per node.
//!
//! Semantics, which the independent checker in [`crate::dram::checker`] re-implements: a command
//! addresses one node at its *scope* level (a bank; PREA and REFab the whole `refresh_level`
//! node) and with it the subtree below. A non-sibling constraint at level L applies between two
//! commands whose subtrees share a level-L node, i.e. whose ancestors agree at level
//! min(L, scope(p), scope(f)). So the update goes to the level U = min(L, scope(f)) at which the
//! following command is checked: to the preceding command's ancestor at U, or, when the
//! preceding command addresses a wider scope than U, to every U-node of its subtree.
//!
//! Slots. A node does not keep one `ready_at` per command but one per *class*: at each level,
//! the following commands that every update landing at that level treats alike (same preceding
//! commands, targets and latencies) share a slot, since their values can never differ. HBM3's
//! channel level, for instance, has two: the row bus (ACT, PRE, PREA, REFab, REFpb) and the
//! column bus (RD, WR, RDA, WRA); RD and RDA share a slot everywhere. A command no update ever
//! reaches at a level has no slot there and is not checked there. This halves the updates per
//! issued command and the reads per check without changing a single value.

use crate::dram::command::{CmdSet, Command, Level, NUM_COMMANDS, NUM_LEVELS};
use crate::dram::spec::DramSpec;

/// "No slot": no update ever reaches this command at this level.
pub(crate) const NO_SLOT: u8 = u8::MAX;

/// What an update touches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Target {
    /// The issuing command's node at the update level.
    Node,
    /// Every other node at the level under the same parent.
    Sibling,
    /// Every node at the update level under the issuing command's scope node.
    Broadcast,
    /// The node's window history number `.0`: applies once it holds `window` commands.
    Window(u16),
}

/// One compiled update: raise `ready_at[slot]` of the node(s) at `level` to `cycle + latency`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Update {
    pub(crate) level: Level,
    pub(crate) slot: u8,
    pub(crate) latency: u64,
    pub(crate) target: Target,
}

/// A window history kept per node of `level` for the commands of `preceding`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct WindowSpec {
    pub(crate) level: Level,
    pub(crate) size: usize,
    pub(crate) preceding: CmdSet,
}

/// An update of the issuing command's own node, the common case, kept apart so that it runs in
/// a tight loop: raise `ready_at[slot]` of the node at `level` to `cycle + latency`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct NodeUpdate {
    pub(crate) level: Level,
    pub(crate) slot: u8,
    pub(crate) latency: u32,
}

/// The compiled table (see the module docs).
#[derive(Debug, Clone)]
pub(crate) struct TimingTable {
    /// Slots per node at each level.
    pub(crate) width: [usize; NUM_LEVELS],
    /// `slot[level][command]`: the command's slot in a node of that level, or [`NO_SLOT`].
    pub(crate) slot: [[u8; NUM_COMMANDS]; NUM_LEVELS],
    /// Updates other than own-node ones, grouped by preceding command:
    /// `updates[start[c]..start[c + 1]]`.
    pub(crate) updates: Vec<Update>,
    pub(crate) start: [usize; NUM_COMMANDS + 1],
    /// The [`Target::Node`] updates with latencies below 2^32, grouped the same way.
    pub(crate) node_updates: Vec<NodeUpdate>,
    pub(crate) node_start: [usize; NUM_COMMANDS + 1],
    /// Window histories.
    pub(crate) windows: Vec<WindowSpec>,
    /// Per command, whether it enters any window history.
    pub(crate) in_window: CmdSet,
    /// Scope of each command.
    pub(crate) scope: [Level; NUM_COMMANDS],
}

/// An update before slots are assigned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Raw {
    level: Level,
    follow: Command,
    latency: u64,
    target: Target,
}

impl TimingTable {
    /// Compiles the constraints of `spec`.
    pub(crate) fn new(spec: &DramSpec) -> TimingTable {
        let scope = Command::ALL.map(|c| spec.scope(c));
        let mut windows: Vec<WindowSpec> = Vec::new();
        let mut per_cmd: Vec<Vec<Raw>> = vec![Vec::new(); NUM_COMMANDS];
        for c in spec.constraints() {
            let window = if c.window > 1 {
                let w = WindowSpec { level: c.level, size: c.window as usize, preceding: c.preceding };
                let id = match windows.iter().position(|x| *x == w) {
                    Some(i) => i,
                    None => {
                        windows.push(w);
                        windows.len() - 1
                    }
                };
                Some(id as u16)
            } else {
                None
            };
            for p in c.preceding.iter() {
                for f in c.following.iter() {
                    let u = if let Some(id) = window {
                        Raw { level: c.level, follow: f, latency: c.latency, target: Target::Window(id) }
                    } else if c.sibling {
                        Raw { level: c.level, follow: f, latency: c.latency, target: Target::Sibling }
                    } else {
                        let level = c.level.min(scope[f.index()]);
                        let target = if scope[p.index()] >= level { Target::Node } else { Target::Broadcast };
                        Raw { level, follow: f, latency: c.latency, target }
                    };
                    let list = &mut per_cmd[p.index()];
                    // Rows that differ only in latency merge into the stricter one.
                    match list
                        .iter_mut()
                        .find(|x| x.level == u.level && x.follow == u.follow && x.target == u.target)
                    {
                        Some(x) => x.latency = x.latency.max(u.latency),
                        None => list.push(u),
                    }
                }
            }
        }

        // Slots: per level, following commands with the same signature (every update landing
        // there for them: preceding command, target, latency) share one.
        let mut slot = [[NO_SLOT; NUM_COMMANDS]; NUM_LEVELS];
        let mut width = [0usize; NUM_LEVELS];
        for level in Level::ALL {
            let mut seen: Vec<Vec<(usize, Target, u64)>> = Vec::new();
            for f in Command::ALL {
                let mut sig: Vec<(usize, Target, u64)> = Vec::new();
                for (p, list) in per_cmd.iter().enumerate() {
                    for u in list.iter().filter(|u| u.level == level && u.follow == f) {
                        sig.push((p, u.target, u.latency));
                    }
                }
                if sig.is_empty() {
                    continue;
                }
                sig.sort();
                let k = match seen.iter().position(|s| *s == sig) {
                    Some(k) => k,
                    None => {
                        seen.push(sig);
                        seen.len() - 1
                    }
                };
                slot[level.index()][f.index()] = k as u8;
            }
            width[level.index()] = seen.len();
        }

        let mut updates = Vec::new();
        let mut start = [0usize; NUM_COMMANDS + 1];
        let mut node_updates = Vec::new();
        let mut node_start = [0usize; NUM_COMMANDS + 1];
        for (i, list) in per_cmd.into_iter().enumerate() {
            start[i] = updates.len();
            node_start[i] = node_updates.len();
            let mut done: Vec<(Level, u8, Target)> = Vec::new();
            for u in list {
                let s = slot[u.level.index()][u.follow.index()];
                // Commands sharing a slot get the same update from this command: apply it once.
                if done.contains(&(u.level, s, u.target)) {
                    continue;
                }
                done.push((u.level, s, u.target));
                match (u.target, u32::try_from(u.latency)) {
                    (Target::Node, Ok(latency)) => {
                        node_updates.push(NodeUpdate { level: u.level, slot: s, latency })
                    }
                    _ => {
                        updates.push(Update { level: u.level, slot: s, latency: u.latency, target: u.target })
                    }
                }
            }
        }
        start[NUM_COMMANDS] = updates.len();
        node_start[NUM_COMMANDS] = node_updates.len();
        let in_window = Command::ALL
            .into_iter()
            .filter(|c| windows.iter().any(|w| w.preceding.contains(*c)))
            .fold(CmdSet::EMPTY, CmdSet::with);
        TimingTable { width, slot, updates, start, node_updates, node_start, windows, in_window, scope }
    }

    /// How far `x`'s issue can delay `c` at `level` (its `ready_at` slot of that level): the
    /// level L such that this slot can only have moved at nodes under `x`'s ancestor at L;
    /// `None` when it cannot move anywhere. Lets a controller look again at just the candidates
    /// a command may have delayed.
    pub(crate) fn reach(&self, x: Command, c: Command, level: Level) -> Option<Level> {
        let slot = self.slot[level.index()][c.index()];
        if slot == NO_SLOT {
            return None;
        }
        let mut reach: Option<Level> = None;
        let mut widen = |l: Level| reach = Some(reach.map_or(l, |r| r.min(l)));
        for u in self.node_updates_of(x) {
            if u.level == level && u.slot == slot {
                widen(level);
            }
        }
        for u in self.updates_of(x) {
            if u.level == level && u.slot == slot {
                widen(match u.target {
                    Target::Node | Target::Window(_) => level,
                    // Every node under the parent.
                    Target::Sibling => Level::ALL[level.index() - 1],
                    Target::Broadcast => self.scope[x.index()],
                });
            }
        }
        reach
    }

    /// The updates other than [`TimingTable::node_updates_of`] applied when `cmd` issues.
    #[inline]
    pub(crate) fn updates_of(&self, cmd: Command) -> &[Update] {
        &self.updates[self.start[cmd.index()]..self.start[cmd.index() + 1]]
    }

    /// The own-node updates applied when `cmd` issues.
    #[inline]
    pub(crate) fn node_updates_of(&self, cmd: Command) -> &[NodeUpdate] {
        &self.node_updates[self.node_start[cmd.index()]..self.node_start[cmd.index() + 1]]
    }
}
