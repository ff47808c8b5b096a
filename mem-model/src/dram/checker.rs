//! An independent legality checker: the constraint table replayed over a command history.
//!
//! Contract: [`Oracle`] keeps every command it is given and answers, from the preset's
//! constraint rows directly (no `ready_at` arrays, no compiled table), the earliest cycle at
//! which a command is legal, and whether the row state allows it. [`check_log`] replays a
//! [`crate::dram::Dram`] command log through it and reports the first violation. It shares no
//! timing code with [`crate::dram::device`], so the two can check each other.
//!
//! Rule, per constraint row (level L, preceding P, following F, latency, window W, sibling):
//! a command f in F at coordinates t_f (pseudo-channel, rank, bank group, bank; a PREA or REFab
//! only down to its scope) and an earlier command p in P at t_p *meet* at L when they agree on
//! every coordinate down to level min(L, scope(p), scope(f)) (siblings: down to the level above
//! L, and differ at L). Then f must come at least `latency` cycles after the W-th most recent
//! such p.

use crate::dram::command::{Command, Level};
use crate::dram::log::IssuedCommand;
use crate::dram::mapping::DramAddr;
use crate::dram::spec::DramSpec;
use std::fmt;

/// A command that broke a rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// Position in the (cycle-sorted) replay.
    pub position: usize,
    /// The command.
    pub cmd: Command,
    /// Where.
    pub addr: DramAddr,
    /// When.
    pub cycle: u64,
    /// What was broken.
    pub reason: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "command #{} {} at cycle {} {:?}: {}",
            self.position, self.cmd, self.cycle, self.addr, self.reason
        )
    }
}

#[derive(Debug, Clone, Copy)]
struct Rec {
    cycle: u64,
    cmd: Command,
    /// pseudo-channel, rank, bank group, bank.
    coord: [u32; 4],
}

/// The replaying checker (see the module docs).
#[derive(Debug, Clone)]
pub struct Oracle<'a> {
    spec: &'a DramSpec,
    /// History per channel, in issue order.
    history: Vec<Vec<Rec>>,
    /// Open row per (channel, pseudo-channel, rank, bank group, bank).
    open: std::collections::HashMap<(u32, [u32; 4]), u32>,
}

fn coord(a: &DramAddr) -> [u32; 4] {
    [a.pseudo_channel, a.rank, a.bank_group, a.bank]
}

/// Whether coordinates agree on every level from pseudo-channel down to `level`.
fn agree(x: &[u32; 4], y: &[u32; 4], level: Level) -> bool {
    let depth = level.index(); // channel: 0 coordinates, bank: all 4
    x[..depth] == y[..depth]
}

impl<'a> Oracle<'a> {
    /// An empty history for `spec`.
    pub fn new(spec: &'a DramSpec) -> Self {
        Oracle { spec, history: vec![Vec::new(); spec.channels() as usize], open: Default::default() }
    }

    /// Commands recorded so far.
    pub fn len(&self) -> usize {
        self.history.iter().map(Vec::len).sum()
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn scope(&self, c: Command) -> Level {
        if c.is_all_bank() { self.spec.controller().refresh_level } else { Level::Bank }
    }

    /// The cycle constraint `index` alone demands for `cmd` at `a` (0 when it does not apply).
    /// Only history with `cycle + latency > floor` is looked at: with `floor = 0` the answer is
    /// exact, with a larger floor any answer at or below it is reported as `floor`.
    pub fn requirement(&self, index: usize, cmd: Command, a: &DramAddr, floor: u64) -> u64 {
        let Some(c) = self.spec.constraints().get(index) else { return 0 };
        if !c.following.contains(cmd) {
            return 0;
        }
        let Some(history) = self.history.get(a.channel as usize) else { return 0 };
        let me = coord(a);
        let sf = self.scope(cmd);
        let mut found = 0u32;
        for r in history.iter().rev() {
            if r.cycle.saturating_add(c.latency) <= floor {
                // Older commands cannot push the requirement above the floor (for windows, the
                // W-th match is older still).
                return floor;
            }
            if !c.preceding.contains(r.cmd) {
                continue;
            }
            let meets = if c.sibling {
                let parent = Level::ALL[c.level.index() - 1];
                agree(&r.coord, &me, parent) && !agree(&r.coord, &me, c.level)
            } else {
                let m = c.level.min(self.scope(r.cmd)).min(sf);
                agree(&r.coord, &me, m)
            };
            if meets {
                found += 1;
                if found == c.window {
                    return r.cycle.saturating_add(c.latency).max(floor);
                }
            }
        }
        floor
    }

    /// Earliest cycle the constraint table allows `cmd` at `a`, given the history.
    pub fn earliest(&self, cmd: Command, a: &DramAddr) -> u64 {
        (0..self.spec.constraints().len()).map(|i| self.requirement(i, cmd, a, 0)).max().unwrap_or(0)
    }

    /// Whether the row state allows `cmd` at `a`.
    pub fn state_ok(&self, cmd: Command, a: &DramAddr) -> Result<(), String> {
        let me = coord(a);
        let open = self.open.get(&(a.channel, me)).copied();
        match cmd {
            Command::Act | Command::RefPb if open.is_some() => Err(format!("{cmd} to an open bank")),
            Command::Pre if open.is_none() => Err("PRE to a closed bank".into()),
            c if c.is_column() && open != Some(a.row) => {
                Err(format!("{c} to row {} while the bank has {:?} open", a.row, open))
            }
            Command::RefAb => {
                let scope = self.scope(cmd);
                match self.open.keys().find(|(ch, k)| *ch == a.channel && agree(k, &me, scope)) {
                    Some((_, k)) => Err(format!("REFab while bank {k:?} is open")),
                    None => Ok(()),
                }
            }
            _ => Ok(()),
        }
    }

    /// Records `cmd` at `a` at `cycle` without checking it.
    pub fn push(&mut self, cmd: Command, a: &DramAddr, cycle: u64) {
        let me = coord(a);
        match cmd {
            Command::Act => {
                self.open.insert((a.channel, me), a.row);
            }
            Command::Pre | Command::RdA | Command::WrA => {
                self.open.remove(&(a.channel, me));
            }
            Command::PreA => {
                let scope = self.scope(cmd);
                self.open.retain(|(ch, k), _| !(*ch == a.channel && agree(k, &me, scope)));
            }
            _ => {}
        }
        if let Some(h) = self.history.get_mut(a.channel as usize) {
            h.push(Rec { cycle, cmd, coord: me });
        }
    }

    /// Checks `cmd` at `a` at `cycle` against the history, then records it.
    pub fn check_and_push(&mut self, cmd: Command, a: &DramAddr, cycle: u64) -> Result<(), String> {
        let o = self.spec.organization();
        let in_range = a.channel < o.channels
            && a.pseudo_channel < o.pseudo_channels
            && a.rank < o.ranks
            && a.bank_group < o.bank_groups
            && a.bank < o.banks
            && (!(cmd == Command::Act || cmd.is_column()) || a.row < o.rows)
            && (!cmd.is_column() || a.column < o.columns);
        if !in_range {
            return Err("coordinates outside the organisation".into());
        }
        self.state_ok(cmd, a)?;
        for (i, c) in self.spec.constraints().iter().enumerate() {
            let need = self.requirement(i, cmd, a, cycle);
            if need > cycle {
                return Err(format!(
                    "constraint {i} ({} {} -> {} latency {} = {}{}) needs cycle {need}",
                    c.level,
                    c.preceding,
                    c.following,
                    c.expr,
                    c.latency,
                    if c.window > 1 { format!(", window {}", c.window) } else { String::new() },
                ));
            }
        }
        self.push(cmd, a, cycle);
        Ok(())
    }
}

/// Replays `log` (sorted by cycle, ties in log order) and returns the number of commands checked
/// or the first violation. Also checks that each tick is its cycle's clock edge.
pub fn check_log(spec: &DramSpec, log: &[IssuedCommand]) -> Result<usize, Violation> {
    let mut order: Vec<usize> = (0..log.len()).collect();
    order.sort_by_key(|&i| (log[i].cycle, i));
    let mut oracle = Oracle::new(spec);
    for (position, &i) in order.iter().enumerate() {
        let c = &log[i];
        let a = c.addr();
        let fail = |reason: String| Violation { position, cmd: c.cmd, addr: a, cycle: c.cycle, reason };
        if spec.clock().edge(c.cycle) != c.tick {
            return Err(fail(format!("tick {} is not the edge of cycle {}", c.tick, c.cycle)));
        }
        oracle.check_and_push(c.cmd, &a, c.cycle).map_err(fail)?;
    }
    Ok(log.len())
}
