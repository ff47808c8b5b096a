//! Refresh bookkeeping of one pseudo-channel controller.
//!
//! Contract: each refresh *unit* (the whole pseudo-channel, or one rank, per `refresh_level`)
//! falls due every refresh interval on a fixed schedule (due cycles do not drift when a refresh
//! is late, as in Ramulator 2). By default every unit's first due cycle is the end of the first
//! interval, so all pseudo-channels refresh together, as in Ramulator 2; with `refresh_stagger`
//! the units of all controllers are spread evenly over the interval (as DRAMsim3's staggered
//! policy and real controllers do), so at any time only a few pseudo-channels are refreshing. A due unit is *pending*: the controller stops issuing anything
//! else to its banks, precharges them (PREA, or PRE for one bank) and issues the refresh as soon
//! as the constraint table allows; the table's REF -> ACT latency (tRFC) then keeps the banks
//! blocked. Per-bank mode refreshes one bank of the unit every interval / banks (round robin)
//! with REFpb, blocking only that bank.
//!
//! An idle controller schedules nothing, not even refreshes: the refreshes that fall due while
//! it sleeps are replayed at the cycles it would have issued them, before any controller of
//! its channel issues a command (a request waking it, or a sibling pseudo-channel's run). The
//! sleepers of a channel are replayed together in time order, since they share its command
//! buses: a backlog replayed after a sibling's later commands would be pushed into the present.
//! Within the cycle of the run that triggers the replay, controllers keep their index order, as
//! if all of them ran every cycle: a sleeper ahead of the running controller replays what it
//! owes at that cycle first, one behind it is woken to run in its turn.
//! The refreshes of channels still asleep at the end of a run are replayed up to its last tick
//! then (`Dram::finish`), so every refresh that fell due is counted. A
//! channel that has only refreshed for two pattern periods repeats itself exactly, so the
//! component skips whole periods of a long sleep at once (`Dram`'s catch-up): the schedules
//! and the device's timing slots move on by the periods skipped and their refreshes are
//! counted, which keeps a trace idle for seconds from replaying millions of commands.

use crate::dram::command::{Command, Level};
use crate::dram::spec::RefreshMode;

/// One refresh unit's schedule.
#[derive(Debug, Clone)]
pub(crate) struct Unit {
    /// Next cycle at which the unit falls due.
    pub(crate) due: u64,
    /// A refresh is owed and not yet issued.
    pub(crate) pending: bool,
    /// Cycle since which it is owed (and, during catch-up, the last replayed command).
    pub(crate) since: u64,
    /// Bank indices (within the pseudo-channel) of the unit.
    pub(crate) banks: u128,
    /// First bank index of the unit.
    pub(crate) first_bank: u16,
    /// Banks in the unit.
    pub(crate) count: u16,
    /// Per-bank mode: offset of the next bank to refresh.
    pub(crate) cursor: u16,
}

/// Refresh state of one controller (see the module docs).
#[derive(Debug, Clone)]
pub(crate) struct Refresh {
    pub(crate) mode: RefreshMode,
    pub(crate) units: Vec<Unit>,
    /// Cycles between two dues of one unit.
    interval: u64,
    /// Kept up to date by `mark_due` and `issued`, since a controller asks at every run: the
    /// earliest due cycle of a unit not pending, the units pending and the banks they block.
    next_due: u64,
    pending: u32,
    blocked: u128,
}

impl Refresh {
    /// Units for `banks_per_pc` banks, `ranks` ranks, refreshed at `level` every
    /// `refresh_interval` cycles (all-bank) or `refresh_interval / banks per unit` (per-bank).
    /// `stagger`, (this controller's index, controllers): the units of all controllers fall due
    /// at evenly spread cycles of the first interval, rather than all at its end.
    pub(crate) fn new(
        mode: RefreshMode,
        level: Level,
        refresh_interval: u64,
        banks_per_pc: u32,
        ranks: u32,
        stagger: Option<(u32, u32)>,
    ) -> Refresh {
        let unit_count = if level == Level::Rank { ranks } else { 1 };
        let per_unit = banks_per_pc / unit_count;
        let interval = match mode {
            RefreshMode::PerBank => (refresh_interval / u64::from(per_unit)).max(1),
            _ => refresh_interval.max(1),
        };
        let units = if mode == RefreshMode::None {
            Vec::new()
        } else {
            (0..unit_count)
                .map(|u| {
                    let first = u * per_unit;
                    let banks = (first..first + per_unit).fold(0u128, |m, b| m | (1u128 << b));
                    // Slot k of n due at interval * (k + 1) / n: once in the first interval.
                    let due = match stagger {
                        Some((ctrl, ctrls)) => {
                            let (k, n) =
                                (u64::from(ctrl * unit_count + u), u64::from(ctrls.max(1) * unit_count));
                            (interval * (k + 1) / n).max(1)
                        }
                        None => interval,
                    };
                    Unit {
                        due,
                        pending: false,
                        since: 0,
                        banks,
                        first_bank: first as u16,
                        count: per_unit as u16,
                        cursor: 0,
                    }
                })
                .collect()
        };
        let mut r = Refresh { mode, units, interval, next_due: u64::MAX, pending: 0, blocked: 0 };
        r.settle();
        r
    }

    /// Recomputes the cached summaries from the units.
    fn settle(&mut self) {
        self.next_due = self.units.iter().filter(|u| !u.pending).map(|u| u.due).min().unwrap_or(u64::MAX);
        self.pending = self.units.iter().filter(|u| u.pending).count() as u32;
        let mut m = 0;
        for u in &self.units {
            if u.pending {
                m |= match self.mode {
                    RefreshMode::PerBank => 1u128 << (u.first_bank + u.cursor),
                    _ => u.banks,
                };
            }
        }
        self.blocked = m;
    }

    /// Marks units due at or before `cycle` as pending.
    #[inline]
    pub(crate) fn mark_due(&mut self, cycle: u64) {
        if cycle < self.next_due {
            return;
        }
        for u in &mut self.units {
            if !u.pending && u.due <= cycle {
                u.pending = true;
                u.since = u.due;
                u.due = u.due.saturating_add(self.interval);
            }
        }
        self.settle();
    }

    /// Whether any unit owes a refresh.
    #[inline]
    pub(crate) fn any_pending(&self) -> bool {
        self.pending > 0
    }

    /// Banks that regular scheduling must leave alone.
    #[inline]
    pub(crate) fn blocked(&self) -> u128 {
        self.blocked
    }

    /// Earliest due cycle of a unit that is not already pending.
    #[inline]
    pub(crate) fn next_due(&self) -> u64 {
        self.next_due
    }

    /// The command unit `u` needs next and the bank index it addresses (for PREA/REFab, the
    /// unit's first bank, whose path holds the scope node); `open(bank)` says whether a bank is
    /// open, `any_open` whether any bank of the unit is.
    pub(crate) fn needed(&self, u: usize, any_open: bool, bank_open: impl Fn(u16) -> bool) -> (Command, u16) {
        let unit = &self.units[u];
        match self.mode {
            RefreshMode::PerBank => {
                let b = unit.first_bank + unit.cursor;
                (if bank_open(b) { Command::Pre } else { Command::RefPb }, b)
            }
            _ => (if any_open { Command::PreA } else { Command::RefAb }, unit.first_bank),
        }
    }

    /// The refresh pattern: the cycles after which it repeats (every unit due again, per-bank
    /// cursors back where they were), the refresh commands issued in that time and their kind;
    /// none without refresh.
    pub(crate) fn pattern(&self) -> Option<(u64, u64, Command)> {
        let units = self.units.len() as u64;
        match (self.mode, self.units.first()) {
            (RefreshMode::None, _) | (_, None) => None,
            (RefreshMode::PerBank, Some(u)) => {
                let per_unit = u64::from(u.count.max(1));
                Some((self.interval * per_unit, units * per_unit, Command::RefPb))
            }
            _ => Some((self.interval, units, Command::RefAb)),
        }
    }

    /// Moves the schedule `by` cycles later (whole pattern periods skipped while asleep).
    pub(crate) fn shift(&mut self, by: u64) {
        for u in &mut self.units {
            u.due = u.due.saturating_add(by);
            u.since = u.since.saturating_add(by);
        }
        self.settle();
    }

    /// Records that `cmd` was issued for unit `u`: a refresh settles it.
    pub(crate) fn issued(&mut self, u: usize, cmd: Command) {
        if cmd.is_refresh() {
            let unit = &mut self.units[u];
            unit.pending = false;
            if self.mode == RefreshMode::PerBank {
                unit.cursor = (unit.cursor + 1) % unit.count.max(1);
            }
            self.settle();
        }
    }
}
