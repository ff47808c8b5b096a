//! The constraint table compiled for the hot path.
//!
//! Contract: the preset's constraints (level, preceding set, following set, latency, window,
//! sibling) are turned once into, for each preceding command, a flat list of updates to apply
//! when it issues: "raise `ready_at[following]` of this node (or of its siblings, or of every
//! node of a level below it) to issue cycle + latency". Checking a command is then the maximum of
//! one `ready_at` entry per level on its path, as in Ramulator 2. Window constraints (tFAW) keep
//! the last n issue cycles per node.
//!
//! Semantics, which the independent checker in [`crate::dram::checker`] re-implements: a command
//! addresses one node at its *scope* level (a bank; PREA and REFab the whole `refresh_level`
//! node) and with it the subtree below. A non-sibling constraint at level L applies between two
//! commands whose subtrees share a level-L node, i.e. whose ancestors agree at level
//! min(L, scope(p), scope(f)). So the update goes to the level U = min(L, scope(f)) at which the
//! following command is checked: to the preceding command's ancestor at U, or, when the
//! preceding command addresses a wider scope than U, to every U-node of its subtree.

use crate::dram::command::{CmdSet, Command, Level, NUM_COMMANDS};
use crate::dram::spec::DramSpec;

/// What an update touches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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

/// One compiled update: raise `ready_at[follow]` at `level` to `cycle + latency`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Update {
    pub(crate) level: Level,
    pub(crate) follow: Command,
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
/// a tight loop: raise `ready_at[follow]` of the node at `level` to `cycle + latency`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct NodeUpdate {
    pub(crate) level: u8,
    pub(crate) follow: u8,
    pub(crate) latency: u32,
}

/// The compiled table (see the module docs).
#[derive(Debug, Clone)]
pub(crate) struct TimingTable {
    /// Updates grouped by preceding command: `updates[start[c]..start[c + 1]]`.
    pub(crate) updates: Vec<Update>,
    pub(crate) start: [usize; NUM_COMMANDS + 1],
    /// The [`Target::Node`] updates with latencies below 2^32, grouped the same way.
    pub(crate) node_updates: Vec<NodeUpdate>,
    pub(crate) node_start: [usize; NUM_COMMANDS + 1],
    /// Window histories.
    pub(crate) windows: Vec<WindowSpec>,
    /// Scope of each command.
    pub(crate) scope: [Level; NUM_COMMANDS],
}

impl TimingTable {
    /// Compiles the constraints of `spec`.
    pub(crate) fn new(spec: &DramSpec) -> TimingTable {
        let scope = Command::ALL.map(|c| spec.scope(c));
        let mut windows: Vec<WindowSpec> = Vec::new();
        let mut per_cmd: Vec<Vec<Update>> = vec![Vec::new(); NUM_COMMANDS];
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
                        Update { level: c.level, follow: f, latency: c.latency, target: Target::Window(id) }
                    } else if c.sibling {
                        Update { level: c.level, follow: f, latency: c.latency, target: Target::Sibling }
                    } else {
                        let level = c.level.min(scope[f.index()]);
                        let target = if scope[p.index()] >= level { Target::Node } else { Target::Broadcast };
                        Update { level, follow: f, latency: c.latency, target }
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
        let mut updates = Vec::new();
        let mut start = [0usize; NUM_COMMANDS + 1];
        let mut node_updates = Vec::new();
        let mut node_start = [0usize; NUM_COMMANDS + 1];
        for (i, list) in per_cmd.into_iter().enumerate() {
            start[i] = updates.len();
            node_start[i] = node_updates.len();
            for u in list {
                match (u.target, u32::try_from(u.latency)) {
                    (Target::Node, Ok(latency)) => node_updates.push(NodeUpdate {
                        level: u.level as u8,
                        follow: u.follow as u8,
                        latency,
                    }),
                    _ => updates.push(u),
                }
            }
        }
        start[NUM_COMMANDS] = updates.len();
        node_start[NUM_COMMANDS] = node_updates.len();
        TimingTable { updates, start, node_updates, node_start, windows, scope }
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
