//! One pseudo-channel's memory controller: queues, scheduler, page policy, refresh.
//!
//! Contract: the controller holds bursts (one column access each) in a read and a write queue,
//! and, each time it is run at a cycle, issues whatever the policy picks among the commands the
//! device allows *at that cycle*, then returns the next cycle at which something could become
//! legal (or a refresh falls due), or `u64::MAX` when it has nothing to do. It never polls: a
//! caller runs it at the returned cycle, or earlier when `Controller::push` says so.
//!
//! Scheduling. Entries are kept in per-bank lists in arrival order, so each bank offers at most
//! two candidates: its oldest row hit (a column command) and its oldest non-hit (ACT for a closed
//! bank, PRE for a conflict). FR-FCFS picks, per command bus, the oldest candidate that is legal
//! now; FR-FCFS-cap prefers a bank's row hits but lets an older conflicting request through once
//! `row_hit_cap` hits in a row were served. Row and column commands are picked separately and
//! both may issue in one cycle when the preset's bus constraints allow it (HBM's separate row
//! and column command buses); with a single command bus (DDR5) the second is refused by the
//! table. Write-drain mode switches the active queue between reads and writes on watermarks.
//!
//! Cost. A command's earliest cycle is the maximum of a part shared by all banks of the
//! pseudo-channel (channel and pseudo-channel levels: tRRD, tFAW, buses) and a bank-local part
//! (rank, bank group, bank). Per command type, candidates wait in a heap keyed by their local
//! part until it has passed, then in a heap keyed by age; a run looks only at the oldest
//! candidate of each command type whose shared part allows it now, re-checking its local part
//! (which may have moved later) before use, and sleeps until the earliest (local, shared) bound.
//! A run therefore costs a few heap operations, not a pass over the queue; candidates are
//! recomputed only for banks whose list or row state changed, and re-filed only if they changed.

use crate::dram::command::{Command, Level, NUM_COMMANDS};
use crate::dram::device::{CLOSED, Device, NodePath};
use crate::dram::mapping::DramAddr;
use crate::dram::refresh::Refresh;
use crate::dram::spec::{DramSpec, PagePolicy, Scheduler};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// "No entry".
const NIL: u16 = u16::MAX;
/// No request (refresh commands).
pub(crate) const NO_REQ: u32 = u32::MAX;

/// The first command issued on behalf of an entry: how its request is classified.
pub(crate) const FIRST_NONE: u8 = 0;
/// Its first command was an ACT: a row miss (closed bank).
pub(crate) const FIRST_ACT: u8 = 1;
/// Its first command was a PRE: a row conflict.
pub(crate) const FIRST_PRE: u8 = 2;

/// Candidate kinds: a bank's column (row-hit) candidate and its row (ACT/PRE) candidate.
const COL: usize = 0;
const ROW: usize = 1;

#[derive(Debug, Clone, Copy)]
struct Entry {
    next: u16,
    row: u32,
    column: u32,
    seq: u64,
    req: u32,
    first: u8,
}

#[derive(Debug, Clone, Copy)]
struct BankSched {
    head: [u16; 2],
    tail: [u16; 2],
    /// Column commands to the open row since its ACT.
    streak: u32,
    /// Candidates must be recomputed (the bank is on the dirty list, or parked by refresh).
    dirty: bool,
    /// Per kind, bumped when the candidate changes; heap items of older versions are stale.
    version: [u32; 2],
    /// Per kind, whether the current candidate sits in a heap.
    filed: [bool; 2],
    /// Candidate entry per kind, or NIL.
    cand: [u16; 2],
    cmd: [Command; 2],
}

/// A heap item's payload: version, bank and kind.
#[inline]
fn pack(version: u32, bank: usize, kind: usize) -> u64 {
    (u64::from(version) << 16) | ((bank as u64) << 1) | kind as u64
}

#[inline]
fn unpack(p: u64) -> (u32, usize, usize) {
    ((p >> 16) as u32, ((p >> 1) & 0x7fff) as usize, (p & 1) as usize)
}

/// A command a controller issued, for the component's bookkeeping.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Issued {
    pub(crate) cycle: u64,
    pub(crate) cmd: Command,
    /// Bank index within the pseudo-channel (for PREA/REFab: the unit's first bank).
    pub(crate) bank: u16,
    pub(crate) row: u32,
    pub(crate) column: u32,
    /// The request served (column commands), else [`NO_REQ`].
    pub(crate) req: u32,
    /// The entry's first command (column commands).
    pub(crate) first: u8,
}

/// What one run produced besides commands.
#[derive(Debug, Default)]
pub(crate) struct RunOut {
    pub(crate) issued: Vec<Issued>,
    /// Entries that left the queues (column commands issued).
    pub(crate) freed: u32,
    /// Times write-drain mode was entered.
    pub(crate) drains: u32,
}

/// One pseudo-channel controller (see the module docs).
#[derive(Debug, Clone)]
pub(crate) struct Controller {
    ch: usize,
    /// This pseudo-channel's node index at its level.
    pc_node: usize,
    entries: Vec<Entry>,
    free: Vec<u16>,
    banks: Vec<BankSched>,
    paths: Vec<NodePath>,
    dirty: Vec<u16>,
    /// Per command: (cycle the local part may pass, payload) of candidates not yet known to
    /// be locally ready. Kept per command so that a wake can respect that command's shared part.
    pending: Vec<BinaryHeap<Reverse<(u64, u64)>>>,
    /// Per command: (age, payload) of candidates whose local part has passed.
    ready: Vec<BinaryHeap<Reverse<(u64, u64)>>>,
    len: [u32; 2],
    cap: [u32; 2],
    write_mode: bool,
    seq: u64,
    high: u32,
    low: u32,
    scheduler: Scheduler,
    cap_hits: u32,
    page: PagePolicy,
    refresh_level: Level,
    pub(crate) refresh: Refresh,
}

impl Controller {
    /// The controller of pseudo-channel `pc` of channel `ch`.
    pub(crate) fn new(spec: &DramSpec, device: &Device, ch: u32, pc: u32) -> Controller {
        let o = spec.organization();
        let c = spec.controller();
        let n = o.banks_per_pseudo_channel();
        let paths = (0..n)
            .map(|b| {
                let a = DramAddr {
                    channel: ch,
                    pseudo_channel: pc,
                    rank: b / (o.bank_groups * o.banks),
                    bank_group: (b / o.banks) % o.bank_groups,
                    bank: b % o.banks,
                    row: 0,
                    column: 0,
                };
                device.path(&a)
            })
            .collect();
        let capacity = (c.read_queue + c.write_queue) as usize;
        let blank = BankSched {
            head: [NIL; 2],
            tail: [NIL; 2],
            streak: 0,
            dirty: false,
            version: [0; 2],
            filed: [false; 2],
            cand: [NIL; 2],
            cmd: [Command::Rd, Command::Act],
        };
        let heap = || BinaryHeap::with_capacity(4 * n as usize);
        Controller {
            ch: ch as usize,
            pc_node: pc as usize,
            entries: vec![
                Entry { next: NIL, row: 0, column: 0, seq: 0, req: NO_REQ, first: FIRST_NONE };
                capacity
            ],
            free: (0..capacity as u16).rev().collect(),
            banks: vec![blank; n as usize],
            paths,
            dirty: Vec::with_capacity(n as usize),
            pending: (0..NUM_COMMANDS).map(|_| heap()).collect(),
            ready: (0..NUM_COMMANDS).map(|_| heap()).collect(),
            len: [0; 2],
            cap: [c.read_queue, c.write_queue],
            write_mode: false,
            seq: 0,
            high: c.write_high_watermark,
            low: c.write_low_watermark,
            scheduler: c.scheduler,
            cap_hits: c.row_hit_cap,
            page: c.page_policy,
            refresh_level: c.refresh_level,
            refresh: Refresh::new(c.refresh, c.refresh_level, spec.refresh_interval(), n, o.ranks),
        }
    }

    /// Bank index within the pseudo-channel of a coordinate.
    #[inline]
    pub(crate) fn bank_index(spec_banks: (u32, u32), a: &DramAddr) -> u16 {
        let (bgs, banks) = spec_banks;
        ((a.rank * bgs + a.bank_group) * banks + a.bank) as u16
    }

    /// Whether the read (or write) queue has room.
    #[inline]
    pub(crate) fn can_accept(&self, write: bool) -> bool {
        self.len[write as usize] < self.cap[write as usize]
    }

    /// Whether the controller has nothing to do (no entries, no refresh owed).
    #[inline]
    pub(crate) fn is_idle(&self) -> bool {
        self.len[0] == 0 && self.len[1] == 0 && !self.refresh.any_pending()
    }

    /// Entries queued (reads, writes).
    pub(crate) fn queued(&self) -> (u32, u32) {
        (self.len[0], self.len[1])
    }

    #[inline]
    fn mark_dirty(&mut self, b: usize) {
        if !self.banks[b].dirty {
            self.banks[b].dirty = true;
            self.dirty.push(b as u16);
        }
    }

    /// Marks every bank holding entries dirty (after a mode switch or a refresh).
    fn dirty_all(&mut self, mask: u128) {
        for b in 0..self.banks.len() {
            let bank = &self.banks[b];
            if mask & (1u128 << b) != 0 && (bank.head[0] != NIL || bank.head[1] != NIL) {
                // Parked banks are dirty but off the list: put them back on it.
                self.banks[b].dirty = false;
                self.mark_dirty(b);
            }
        }
    }

    /// Whether a switch between the read and write queues is due.
    fn switch_due(&self) -> bool {
        let (r, w) = (self.len[0], self.len[1]);
        if self.write_mode { w == 0 || (w <= self.low && r > 0) } else { w > 0 && (w >= self.high || r == 0) }
    }

    /// Queues a burst arriving at `cycle` and returns the cycle at which the controller must run
    /// because of it (at the latest). The caller has checked [`Controller::can_accept`].
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn push(
        &mut self,
        dev: &Device,
        write: bool,
        bank: u16,
        row: u32,
        column: u32,
        req: u32,
        cycle: u64,
    ) -> u64 {
        let Some(i) = self.free.pop() else { return cycle };
        let d = write as usize;
        self.seq += 1;
        self.entries[i as usize] = Entry { next: NIL, row, column, seq: self.seq, req, first: FIRST_NONE };
        let b = &mut self.banks[bank as usize];
        if b.tail[d] == NIL {
            b.head[d] = i;
        } else {
            self.entries[b.tail[d] as usize].next = i;
        }
        b.tail[d] = i;
        self.len[d] += 1;
        if self.switch_due() || self.refresh.any_pending() {
            // A mode switch or a refresh is owed: let a run decide.
            self.mark_dirty(bank as usize);
            return cycle;
        }
        // Only this bank's candidates changed: wake when they can go.
        self.banks[bank as usize].dirty = true;
        let shared = dev.shared(self.ch, self.pc_node);
        let wake = self.place(dev, bank as usize, cycle, &shared);
        wake.min(self.refresh.next_due()).max(cycle)
    }

    /// Replays the refreshes that fell due while the controller was idle, up to `cycle` (see
    /// [`crate::dram::refresh`]). Call before queueing into an idle controller.
    pub(crate) fn catch_up(&mut self, dev: &mut Device, cycle: u64, out: &mut RunOut) {
        for u in 0..self.refresh.units.len() {
            // Bounded: each pass issues a command or leaves.
            for _ in 0..1_000_000 {
                let (pending, due) = (self.refresh.units[u].pending, self.refresh.units[u].due);
                if !pending {
                    if due > cycle {
                        break;
                    }
                    self.refresh.mark_due(due);
                }
                let since = self.refresh.units[u].since;
                let (cmd, b) = self.refresh_need(dev, u);
                let at = since.max(dev.earliest_on(self.ch, cmd, &self.paths[b as usize]));
                if at > cycle {
                    break;
                }
                self.issue_refresh(dev, u, cmd, b, at, out);
                self.refresh.units[u].since = at;
            }
        }
    }

    fn refresh_need(&self, dev: &Device, u: usize) -> (Command, u16) {
        let first = self.refresh.units[u].first_bank;
        let any_open = dev.any_open(self.ch, self.refresh_level, &self.paths[first as usize]);
        self.refresh
            .needed(u, any_open, |b| dev.row_of(self.ch, self.paths[b as usize].at(Level::Bank)) != CLOSED)
    }

    fn issue_refresh(&mut self, dev: &mut Device, u: usize, cmd: Command, b: u16, at: u64, out: &mut RunOut) {
        let path = self.paths[b as usize];
        let row = dev.row_of(self.ch, path.at(Level::Bank));
        dev.issue_at(self.ch, cmd, &path, 0, at);
        out.issued.push(Issued { cycle: at, cmd, bank: b, row, column: 0, req: NO_REQ, first: FIRST_NONE });
        self.refresh.issued(u, cmd);
        // Closing rows (or ending the block) changes the banks' candidates.
        self.dirty_all(self.refresh.units[u].banks);
    }

    /// Recomputes bank `b`'s candidates (no timing).
    fn recompute(&mut self, dev: &Device, b: usize) {
        let d = self.write_mode as usize;
        let open = dev.row_of(self.ch, self.paths[b].at(Level::Bank));
        let bank = &mut self.banks[b];
        bank.dirty = false;
        bank.cand = [NIL; 2];
        let head = bank.head[d];
        if head == NIL {
            return;
        }
        if open == CLOSED {
            bank.cand[ROW] = head;
            bank.cmd[ROW] = Command::Act;
            return;
        }
        let (mut hit, mut miss, mut more) = (NIL, NIL, false);
        let closed = self.page == PagePolicy::Closed;
        let mut i = head;
        while i != NIL {
            let e = &self.entries[i as usize];
            if e.row == open {
                if hit == NIL {
                    hit = i;
                } else {
                    more = true;
                }
            } else if miss == NIL {
                miss = i;
            }
            if hit != NIL && miss != NIL && (!closed || more) {
                break;
            }
            i = e.next;
        }
        if closed && hit != NIL && !more {
            // A queued request of the other direction may still hit the row.
            let mut j = bank.head[1 - d];
            while j != NIL {
                let e = &self.entries[j as usize];
                if e.row == open {
                    more = true;
                    break;
                }
                j = e.next;
            }
        }
        if hit != NIL {
            bank.cand[COL] = hit;
            bank.cmd[COL] = match (d == 1, closed && !more) {
                (false, false) => Command::Rd,
                (false, true) => Command::RdA,
                (true, false) => Command::Wr,
                (true, true) => Command::WrA,
            };
        }
        if miss != NIL {
            bank.cand[ROW] = miss;
            bank.cmd[ROW] = Command::Pre;
        }
        if self.scheduler == Scheduler::FrFcfsCap && bank.cand[COL] != NIL && bank.cand[ROW] != NIL {
            if bank.streak >= self.cap_hits {
                bank.cand[COL] = NIL;
            } else {
                bank.cand[ROW] = NIL;
            }
        }
    }

    /// Recomputes bank `b` and files the candidates that changed in the heaps; returns the
    /// earliest cycle at which a new candidate may be legal (`u64::MAX`: none new).
    fn place(&mut self, dev: &Device, b: usize, cycle: u64, shared: &[u64; NUM_COMMANDS]) -> u64 {
        let before = self.banks[b];
        self.recompute(dev, b);
        let mut wake = u64::MAX;
        for kind in [COL, ROW] {
            let bank = &mut self.banks[b];
            let e = bank.cand[kind];
            if e == before.cand[kind] && bank.cmd[kind] == before.cmd[kind] && before.filed[kind] {
                // Unchanged and still in its heap: nothing to do.
                continue;
            }
            bank.version[kind] = bank.version[kind].wrapping_add(1);
            bank.filed[kind] = e != NIL;
            if e == NIL {
                continue;
            }
            let cmd = bank.cmd[kind];
            let payload = pack(bank.version[kind], b, kind);
            let local = dev.local(self.ch, cmd, &self.paths[b]);
            if local <= cycle {
                self.ready[cmd.index()].push(Reverse((self.entries[e as usize].seq, payload)));
            } else {
                self.pending[cmd.index()].push(Reverse((local, payload)));
            }
            wake = wake.min(local.max(shared[cmd.index()]));
        }
        wake
    }

    /// Whether a heap payload still describes the bank's current candidate. An item of a bank
    /// awaiting recomputation is dropped, and the bank told to re-file its candidate.
    #[inline]
    fn current(&mut self, payload: u64) -> Option<(usize, usize)> {
        let (version, b, kind) = unpack(payload);
        let bank = self.banks.get_mut(b)?;
        if bank.version[kind] != version || bank.cand[kind] == NIL {
            return None;
        }
        if bank.dirty {
            bank.filed[kind] = false;
            return None;
        }
        Some((b, kind))
    }

    /// Files the dirty banks' candidates.
    fn settle(&mut self, dev: &Device, cycle: u64, blocked: u128, shared: &[u64; NUM_COMMANDS]) {
        let mut i = 0;
        while i < self.dirty.len() {
            let b = self.dirty[i] as usize;
            i += 1;
            if blocked & (1u128 << b) != 0 {
                // Parked: stays dirty, re-listed when its refresh is done.
                continue;
            }
            self.place(dev, b, cycle, shared);
        }
        self.dirty.clear();
    }

    /// Moves candidates of `cmd` whose local part has passed into its ready heap.
    fn drain_pending(&mut self, cmd: Command, cycle: u64) {
        while let Some(&Reverse((t, payload))) = self.pending[cmd.index()].peek() {
            if t > cycle {
                break;
            }
            self.pending[cmd.index()].pop();
            if let Some((b, kind)) = self.current(payload) {
                let seq = self.entries[self.banks[b].cand[kind] as usize].seq;
                self.ready[cmd.index()].push(Reverse((seq, payload)));
            }
        }
    }

    /// The oldest candidate of command `cmd` legal at `cycle` (its shared part allows it).
    fn best_of(
        &mut self,
        dev: &Device,
        cmd: Command,
        cycle: u64,
        blocked: u128,
    ) -> Option<(u64, usize, usize)> {
        while let Some(&Reverse((seq, payload))) = self.ready[cmd.index()].peek() {
            let Some((b, kind)) = self.current(payload) else {
                self.ready[cmd.index()].pop();
                continue;
            };
            if blocked & (1u128 << b) != 0 {
                // Parked until its refresh is done (then recomputed and re-filed).
                self.ready[cmd.index()].pop();
                self.banks[b].dirty = true;
                self.banks[b].filed[kind] = false;
                continue;
            }
            let local = dev.local(self.ch, cmd, &self.paths[b]);
            if local > cycle {
                // Another command moved its local part: wait again.
                self.ready[cmd.index()].pop();
                self.pending[cmd.index()].push(Reverse((local, payload)));
                continue;
            }
            return Some((seq, b, kind));
        }
        None
    }

    fn update_mode(&mut self, out: &mut RunOut) -> bool {
        if !self.switch_due() {
            return false;
        }
        self.write_mode = !self.write_mode;
        if self.write_mode {
            out.drains += 1;
        }
        self.dirty_all(u128::MAX);
        true
    }

    /// Issues bank `b`'s candidate of `kind` at `cycle`.
    fn issue_candidate(&mut self, dev: &mut Device, b: usize, kind: usize, cycle: u64, out: &mut RunOut) {
        let path = self.paths[b];
        let bank = &mut self.banks[b];
        let (i, cmd) = (bank.cand[kind], bank.cmd[kind]);
        // The candidate is consumed: its heap item is now stale.
        bank.filed[kind] = false;
        bank.version[kind] = bank.version[kind].wrapping_add(1);
        let e = self.entries[i as usize];
        let closing = dev.row_of(self.ch, path.at(Level::Bank));
        dev.issue_at(self.ch, cmd, &path, e.row, cycle);
        let first = &mut self.entries[i as usize].first;
        match cmd {
            Command::Act => {
                if *first == FIRST_NONE {
                    *first = FIRST_ACT;
                }
                bank.streak = 0;
                out.issued.push(Issued {
                    cycle,
                    cmd,
                    bank: b as u16,
                    row: e.row,
                    column: 0,
                    req: NO_REQ,
                    first: 0,
                });
            }
            Command::Pre => {
                if *first == FIRST_NONE {
                    *first = FIRST_PRE;
                }
                out.issued.push(Issued {
                    cycle,
                    cmd,
                    bank: b as u16,
                    row: closing,
                    column: 0,
                    req: NO_REQ,
                    first: 0,
                });
            }
            _ => {
                bank.streak += 1;
                out.issued.push(Issued {
                    cycle,
                    cmd,
                    bank: b as u16,
                    row: e.row,
                    column: e.column,
                    req: e.req,
                    first: e.first,
                });
                // Unlink the entry (it is near the head: the oldest hit).
                let d = cmd.is_write() as usize;
                if bank.head[d] == i {
                    bank.head[d] = e.next;
                } else {
                    let mut p = bank.head[d];
                    while p != NIL && self.entries[p as usize].next != i {
                        p = self.entries[p as usize].next;
                    }
                    if p != NIL {
                        self.entries[p as usize].next = e.next;
                    }
                    if bank.tail[d] == i {
                        bank.tail[d] = p;
                    }
                }
                if bank.head[d] == NIL {
                    bank.tail[d] = NIL;
                }
                self.len[d] -= 1;
                self.free.push(i);
                out.freed += 1;
            }
        }
        self.mark_dirty(b);
    }

    /// Runs the controller at `cycle` (see the module docs); returns the next cycle to run it,
    /// or `u64::MAX` when it is idle.
    pub(crate) fn run(&mut self, dev: &mut Device, cycle: u64, out: &mut RunOut) -> u64 {
        let mut next = u64::MAX;
        self.refresh.mark_due(cycle);
        self.update_mode(out);

        // Refresh first: a pending unit blocks its banks until its REF is out.
        let units = if self.refresh.any_pending() { self.refresh.units.len() } else { 0 };
        for u in 0..units {
            // At most a precharge and a refresh in one cycle, if the table allows both.
            for _ in 0..2 {
                if !self.refresh.units[u].pending {
                    break;
                }
                let (cmd, b) = self.refresh_need(dev, u);
                let at = dev.earliest_on(self.ch, cmd, &self.paths[b as usize]);
                if at > cycle {
                    next = next.min(at);
                    break;
                }
                self.issue_refresh(dev, u, cmd, b, cycle, out);
            }
        }

        let blocked = self.refresh.blocked();
        let shared = dev.shared(self.ch, self.pc_node);
        self.settle(dev, cycle, blocked, &shared);

        // The oldest legal candidate per command bus.
        let cols = if self.write_mode { [Command::Wr, Command::WrA] } else { [Command::Rd, Command::RdA] };
        let mut best_col: Option<(u64, usize, usize)> = None;
        let mut best_row: Option<(u64, usize, usize)> = None;
        for (cmds, best) in [([Command::Act, Command::Pre], &mut best_row), (cols, &mut best_col)] {
            for cmd in cmds {
                if shared[cmd.index()] > cycle {
                    continue;
                }
                self.drain_pending(cmd, cycle);
                if let Some(c) = self.best_of(dev, cmd, cycle, blocked)
                    && best.is_none_or(|x| c.0 < x.0)
                {
                    *best = Some(c);
                }
            }
        }

        if best_col.is_some() || best_row.is_some() {
            // Policy order between the two buses' picks.
            let col_first = match (best_col, best_row) {
                (Some(c), Some(r)) => self.scheduler == Scheduler::FrFcfsCap || c.0 < r.0,
                _ => true,
            };
            let picks = if col_first { [best_col, best_row] } else { [best_row, best_col] };
            let mut first_bank = usize::MAX;
            for (_, b, kind) in picks.into_iter().flatten() {
                if b == first_bank {
                    continue;
                }
                if first_bank != usize::MAX
                    && dev.earliest_on(self.ch, self.banks[b].cmd[kind], &self.paths[b]) > cycle
                {
                    // The first issue took the bus or changed timing.
                    continue;
                }
                self.issue_candidate(dev, b, kind, cycle, out);
                first_bank = b;
            }
            if self.update_mode(out) {
                next = next.min(cycle + 1);
            }
        }

        if self.len[0] == 0 && self.len[1] == 0 && !self.refresh.any_pending() {
            return u64::MAX;
        }
        // When can anything go next? Stale heap items only make the answer early, never late.
        let blocked = self.refresh.blocked();
        let shared = dev.shared(self.ch, self.pc_node);
        self.settle(dev, cycle, blocked, &shared);
        let cols = if self.write_mode { [Command::Wr, Command::WrA] } else { [Command::Rd, Command::RdA] };
        let kinds = [Command::Act, Command::Pre, cols[0], cols[1]];
        for cmd in kinds {
            let c = cmd.index();
            // A ready candidate goes when the shared part allows (if its local part moved, the
            // run at that cycle finds out and files it again).
            while let Some(&Reverse((_, payload))) = self.ready[c].peek() {
                if self.current(payload).is_some() {
                    next = next.min(shared[c].max(cycle + 1));
                    break;
                }
                self.ready[c].pop();
            }
            // A waiting candidate goes no earlier than its local part and the shared part.
            while let Some(&Reverse((t, payload))) = self.pending[c].peek() {
                if self.current(payload).is_some() {
                    next = next.min(t.max(shared[c]).max(cycle + 1));
                    break;
                }
                self.pending[c].pop();
            }
        }
        next = next.min(self.refresh.next_due());
        // Nothing can ever be issued before the next cycle.
        next.max(cycle + 1)
    }
}
