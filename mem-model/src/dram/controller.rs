//! One pseudo-channel's memory controller: queues, scheduler, page policy, refresh.
//!
//! Contract: the controller holds bursts (one column access each) in a read and a write queue,
//! and, each time it is run at a cycle, issues whatever the policy picks among the commands the
//! device allows *at that cycle*, then returns the next cycle at which something could become
//! legal (or a refresh falls due), or `u64::MAX` when it has nothing to do. It never polls: a
//! caller runs it at the returned cycle, or earlier when `Controller::push` says so. Running it
//! at a cycle where nothing can issue changes nothing, so an early wake costs time, never
//! behaviour; and a run leaves nothing legal behind it at its cycle, so running it again there
//! issues something only for a request that arrived in between. A DRAM that runs its busy
//! controllers at every cycle (`Dram::set_run_every_cycle`) must therefore issue exactly what
//! the sleeping ones do, which `mem-model/tests/dram_schedule.rs` checks: a wake-up predicted
//! too late would show there as a command issued later than the policy says.
//!
//! Scheduling. Bursts are kept in per-bank lists in arrival order, so each bank offers at most
//! two candidates: its oldest row hit (a column command, on the column bus) and its oldest
//! non-hit (ACT for a closed bank, PRE for a conflict, on the row bus). FR-FCFS picks, per
//! command bus, the oldest candidate that is legal now; FR-FCFS-cap prefers a bank's row hits but
//! lets an older conflicting request through once `row_hit_cap` hits in a row were served. Row
//! and column commands are picked separately and both may issue in one cycle when the preset's
//! bus constraints allow it (HBM's separate row and column command buses); with a single command
//! bus (DDR5) the second is refused by the table. When the first command issued takes the other
//! pick's bank or delays it, the other bus takes its oldest candidate still legal. Write-drain
//! mode switches the active queue between reads and writes on watermarks, as Ramulator 2 does:
//! to writes at the high watermark or when no read waits, back to reads once one waits and the
//! writes are at the low watermark. The mode is decided once per cycle, before its first
//! command, and stays while both queues are empty. Banks of a refresh unit that owes a refresh
//! are left alone until it is issued. A bank's candidates are recomputed whenever its queue,
//! row state or streak changes, so they are always those of the current state.
//!
//! Entries. Consecutive bursts of one request that share a bank and row (a 64 B line on 32 B
//! bursts, up to an interleave chunk) are queued as one entry holding a burst count. This is
//! exact, not an approximation: such bursts arrive together with consecutive arrival numbers,
//! so no other burst is ever ordered between them, and the entry's age is that of its next
//! burst. Queue lengths and row-hit counts still count bursts.
//!
//! Cost. A command's earliest cycle is the maximum of a part shared by all banks of the
//! pseudo-channel (channel and pseudo-channel levels: tRRD, tFAW, buses) and a bank-local part
//! (rank, bank group, bank). Each bus keeps its candidates as bank bit sets: which banks have
//! one, which of the bus's two commands (its *lanes*) it is, and which have the bank-level slot
//! of their local part passed (`ready`). A candidate whose bank slot lies ahead (tRCD, tRP,
//! tRAS: the long waits) waits in a timing wheel (bank bit sets per future cycle, 64 cycles
//! ahead; a later cycle waits in the last slot and is looked at again then). A bank slot only
//! moves when a command of this controller reaches it (the timing table says which lanes,
//! under which node; in practice the bank's own commands), so `ready` stays exact. The rank and
//! bank-group slots (tCCD, tRRD_L: short waits that every command moves) are read when picking:
//! a run touches only the wheel slots that came due, takes per bus the oldest ready candidate
//! whose shared part and group slots allow it, and sleeps until the earliest wheel slot or
//! shared part. The column bus also keeps its candidates in age order (a bank's next burst
//! usually keeps its predecessor's place), so its pick walks from the oldest and stops at the
//! first legal one; the row bus, where few candidates are eligible at once (tFAW), takes the
//! oldest of the eligible set. Per-bank hit counts make a bank's candidates a lookup rather
//! than a walk of its list; a burst appended behind an older one of its kind, or the next
//! burst of the entry just served, changes nothing else and skips the recomputation. No pass
//! over the queues, no heap, no allocation.

use crate::dram::command::{Command, Level, NUM_COMMANDS, NUM_LEVELS};
use crate::dram::device::{CLOSED, Device, NodePath};
use crate::dram::mapping::DramAddr;
use crate::dram::refresh::Refresh;
use crate::dram::spec::{DramSpec, PagePolicy, Scheduler};

/// "No entry".
const NIL: u16 = u16::MAX;
/// No request (refresh commands).
pub(crate) const NO_REQ: u32 = u32::MAX;

/// The first command issued on behalf of an entry (a row access): how it is classified.
pub(crate) const FIRST_NONE: u8 = 0;
/// Its first command was an ACT: a row miss (closed bank).
pub(crate) const FIRST_ACT: u8 = 1;
/// Its first command was a PRE: a row conflict.
pub(crate) const FIRST_PRE: u8 = 2;
/// Its first burst has been issued, and classified: its later bursts are not counted again.
pub(crate) const FIRST_COUNTED: u8 = 3;

/// Candidate kinds, one per command bus: a bank's column (row-hit) candidate and its row
/// (ACT/PRE) candidate.
const COL: usize = 0;
const ROW: usize = 1;

/// Lanes: the two commands of each bus, `2 * kind + alt` (RD or WR, RDA or WRA, ACT, PRE).
const LANES: usize = 4;

/// Slots of the timing wheel: candidates whose bank slot passes within this many cycles wait
/// in the slot of that cycle.
const WHEEL: u64 = 64;

/// A set of banks of one pseudo-channel, bit `b` for bank index `b` ([`DramSpec`] allows at
/// most 128 banks per pseudo-channel). Two 64-bit words rather than a `u128`: testing, setting
/// and iterating then cost a word operation or two instead of 128-bit shifts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Banks([u64; 2]);

impl Banks {
    const NONE: Banks = Banks([0; 2]);

    fn from_u128(m: u128) -> Banks {
        Banks([m as u64, (m >> 64) as u64])
    }

    /// Banks `first..first + n`.
    fn range(first: usize, n: usize) -> Banks {
        let mut m = Banks::NONE;
        for b in first..first + n {
            m.set(b);
        }
        m
    }

    #[inline]
    fn has(self, b: usize) -> bool {
        (self.0[b >> 6] >> (b & 63)) & 1 != 0
    }

    #[inline]
    fn set(&mut self, b: usize) {
        self.0[b >> 6] |= 1 << (b & 63);
    }

    #[inline]
    fn unset(&mut self, b: usize) {
        self.0[b >> 6] &= !(1 << (b & 63));
    }

    /// Sets or unsets bank `b`.
    #[inline]
    fn put(&mut self, b: usize, on: bool) {
        if on {
            self.set(b);
        } else {
            self.unset(b);
        }
    }

    #[inline]
    fn is_empty(self) -> bool {
        self.0[0] | self.0[1] == 0
    }

    /// The banks, lowest first.
    #[inline]
    fn iter(self) -> Bits {
        Bits { lo: self.0[0], hi: self.0[1] }
    }
}

impl std::ops::BitAnd for Banks {
    type Output = Banks;

    #[inline]
    fn bitand(self, o: Banks) -> Banks {
        Banks([self.0[0] & o.0[0], self.0[1] & o.0[1]])
    }
}

impl std::ops::BitOr for Banks {
    type Output = Banks;

    #[inline]
    fn bitor(self, o: Banks) -> Banks {
        Banks([self.0[0] | o.0[0], self.0[1] | o.0[1]])
    }
}

impl std::ops::BitOrAssign for Banks {
    #[inline]
    fn bitor_assign(&mut self, o: Banks) {
        *self = *self | o;
    }
}

impl std::ops::Not for Banks {
    type Output = Banks;

    #[inline]
    fn not(self) -> Banks {
        Banks([!self.0[0], !self.0[1]])
    }
}

/// The members of a [`Banks`], lowest first.
struct Bits {
    lo: u64,
    hi: u64,
}

impl Iterator for Bits {
    type Item = usize;

    #[inline]
    fn next(&mut self) -> Option<usize> {
        if self.lo != 0 {
            let b = self.lo.trailing_zeros() as usize;
            self.lo &= self.lo - 1;
            Some(b)
        } else if self.hi != 0 {
            let b = self.hi.trailing_zeros() as usize;
            self.hi &= self.hi - 1;
            Some(64 + b)
        } else {
            None
        }
    }
}

/// Queued bursts of one request in one bank and row, consecutive columns and arrival numbers.
#[derive(Debug, Clone, Copy)]
struct Entry {
    next: u16,
    /// Bursts left.
    count: u16,
    row: u32,
    /// Column of the next burst.
    column: u32,
    /// Arrival number of the next burst.
    seq: u64,
    req: u32,
    first: u8,
}

/// A bank: its queues (read and write lists), open row and row-hit streak, and where its
/// commands' local parts are kept.
#[derive(Debug, Clone, Copy)]
struct Bank {
    head: [u16; 2],
    tail: [u16; 2],
    /// Bursts per list.
    len: [u16; 2],
    /// Bursts per list that hit the open row (0 while the bank is closed).
    hits: [u16; 2],
    /// The open row (the device's row state, mirrored), or [`CLOSED`].
    open: u32,
    /// Column commands to the open row since its ACT.
    streak: u32,
    /// Per command, the `ready_at` slot of its local part at the bank level.
    bank_at: [u32; NUM_COMMANDS],
    /// Per command, the `ready_at` slots of its local part at the rank and bank-group levels.
    group_at: [[u32; 2]; NUM_COMMANDS],
}

/// The candidates of one command bus, at most one per bank (see the module docs).
#[derive(Debug, Clone)]
struct Bus {
    /// Candidate entry per bank (meaningful where `present`).
    entry: Vec<u16>,
    /// Its age: the arrival number of its next burst (meaningful where `present`).
    seq: Vec<u64>,
    /// Banks with a candidate.
    present: Banks,
    /// Banks whose candidate is the bus's second command (PRE; RDA or WRA).
    alt: Banks,
    /// Banks whose candidate's bank slot has passed (a subset of `present`).
    ready: Banks,
    /// Whether the bus keeps `order`: the column bus does (a column pick usually stops after
    /// two or three candidates, while most bank-ready candidates are eligible); the row bus,
    /// whose candidates come and go with every ACT and PRE and of which few are eligible at a
    /// time (tFAW), scans the eligible ones instead.
    ordered: bool,
    /// The banks with a candidate, oldest candidate first: `order[..len]`; and each one's
    /// position there. A pick walks this from the oldest and stops at the first legal one.
    order: Vec<u8>,
    pos: Vec<u8>,
    len: usize,
}

impl Bus {
    fn new(banks: usize, ordered: bool) -> Bus {
        Bus {
            ordered,
            entry: vec![NIL; banks],
            seq: vec![0; banks],
            present: Banks::NONE,
            alt: Banks::NONE,
            ready: Banks::NONE,
            order: vec![0; banks],
            pos: vec![0; banks],
            len: 0,
        }
    }

    /// Whether bank `b` is in `order`.
    #[inline]
    fn in_order(&self, b: usize) -> bool {
        let p = self.pos[b] as usize;
        p < self.len && self.order[p] as usize == b
    }

    /// Puts bank `b` at its place in `order` by age `seq[b]`, moving it from where it was (a
    /// candidate replaced by a slightly younger one rarely moves).
    #[inline]
    fn place(&mut self, b: usize) {
        if !self.ordered {
            return;
        }
        let s = self.seq[b];
        let mut p = if self.in_order(b) {
            self.pos[b] as usize
        } else {
            self.len += 1;
            self.len - 1
        };
        while p > 0 && self.seq[self.order[p - 1] as usize] > s {
            let o = self.order[p - 1];
            self.order[p] = o;
            self.pos[o as usize] = p as u8;
            p -= 1;
        }
        while p + 1 < self.len && self.seq[self.order[p + 1] as usize] < s {
            let o = self.order[p + 1];
            self.order[p] = o;
            self.pos[o as usize] = p as u8;
            p += 1;
        }
        self.order[p] = b as u8;
        self.pos[b] = p as u8;
    }

    /// Takes bank `b` out of `order` (if it is there).
    #[inline]
    fn unplace(&mut self, b: usize) {
        if !self.ordered || !self.in_order(b) {
            return;
        }
        for p in self.pos[b] as usize..self.len - 1 {
            let o = self.order[p + 1];
            self.order[p] = o;
            self.pos[o as usize] = p as u8;
        }
        self.len -= 1;
    }

    /// The banks of `lane` (0: plain command, 1: alt) among `m`.
    #[inline]
    fn lane(&self, m: Banks, alt: usize) -> Banks {
        if alt == 1 { m & self.alt } else { m & !self.alt }
    }

    /// The lane (0 or 1) of bank `b`'s candidate.
    #[inline]
    fn alt_of(&self, b: usize) -> usize {
        self.alt.has(b) as usize
    }

    /// Drops bank `b`'s candidate.
    #[inline]
    fn clear(&mut self, b: usize) {
        self.present.unset(b);
        self.ready.unset(b);
        self.unplace(b);
    }
}

/// Bursts to queue: one request's consecutive bursts in one bank and row, consecutive columns.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BurstRun {
    pub(crate) write: bool,
    /// Bank index within the pseudo-channel.
    pub(crate) bank: u16,
    pub(crate) row: u32,
    /// Column of the first burst.
    pub(crate) column: u32,
    /// Bursts.
    pub(crate) count: u16,
    /// The request served.
    pub(crate) req: u32,
    /// They continue a row access already queued, which is classified for them.
    pub(crate) counted: bool,
}

/// A command a controller issued, for the component's bookkeeping.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Issued {
    pub(crate) cycle: u64,
    /// The controller's index (channel-major).
    pub(crate) ctrl: u16,
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

/// A refresh command a sleeping controller owes (see [`Controller::owed`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Owed {
    unit: usize,
    cmd: Command,
    bank: u16,
    /// The cycle it goes at.
    pub(crate) at: u64,
}

/// What one run produced besides commands.
#[derive(Debug, Default)]
pub(crate) struct RunOut {
    pub(crate) issued: Vec<Issued>,
    /// Bursts that left the queues (column commands issued).
    pub(crate) freed: u32,
    /// Times write-drain mode was entered.
    pub(crate) drains: u32,
}

/// One pseudo-channel controller (see the module docs).
#[derive(Debug, Clone)]
pub(crate) struct Controller {
    ch: usize,
    /// Index among all controllers (channel-major).
    index: u16,
    entries: Vec<Entry>,
    free: Vec<u16>,
    banks: Vec<Bank>,
    paths: Vec<NodePath>,
    /// Per command, the `ready_at` slots of its shared part (channel, pseudo-channel).
    shared_at: [[u32; 2]; NUM_COMMANDS],
    /// Per mode (`write_mode as usize`) and issued command `x`, the lanes whose bank-level slot
    /// `x` can delay, as (lane, level) pairs: only at banks under `x`'s bank's ancestor at that
    /// level (from [`crate::dram::timing::TimingTable::reach`]).
    lane_reach: [[Vec<(u8, u8)>; NUM_COMMANDS]; 2],
    /// Per bank and level, the banks under the bank's ancestor at that level.
    under: Vec<[Banks; NUM_LEVELS]>,
    /// Candidates per bus: `bus[COL]`, `bus[ROW]`.
    bus: [Bus; 2],
    /// Banks with an open row (the mirror of `Bank::open`), and banks with queued bursts in
    /// either direction: a refresh looks at just these rather than at every bank of its unit,
    /// whose state an idle controller no longer has in the host's cache.
    open_banks: Banks,
    queued_banks: Banks,
    /// The command of each lane in the current mode.
    lane_cmd: [Command; LANES],
    /// Timing wheel: per slot, per kind, the banks to look at again at that cycle.
    wheel: Vec<[Banks; 2]>,
    /// Per lane, the slots holding banks filed in that lane.
    occupied: [u64; LANES],
    /// The wheel has been looked at up to this cycle; its slots hold the cycles after it.
    wheel_cycle: u64,
    len: [u32; 2],
    cap: [u32; 2],
    write_mode: bool,
    seq: u64,
    high: u32,
    low: u32,
    scheduler: Scheduler,
    cap_hits: u32,
    page: PagePolicy,
    pub(crate) refresh: Refresh,
    /// Cycle of the last command other than a refresh (see `Dram`'s catch-up).
    pub(crate) last_work: u64,
    /// Cycle of the last command issued from the queues (`u64::MAX`: none yet). The mode is
    /// decided once per cycle, before the cycle's first command, as a controller that runs
    /// every cycle decides it: a switch that falls due once a cycle has issued waits for the
    /// next cycle, however many times the controller runs in this one.
    issued_at: u64,
}

impl Controller {
    /// The controller of pseudo-channel `pc` of channel `ch`.
    pub(crate) fn new(spec: &DramSpec, device: &Device, ch: u32, pc: u32) -> Controller {
        let o = spec.organization();
        let c = spec.controller();
        let n = o.banks_per_pseudo_channel();
        let paths: Vec<NodePath> = (0..n)
            .map(|b| device.path(&Controller::bank_addr((o.bank_groups, o.banks), ch, pc, b, 0, 0)))
            .collect();
        let banks = paths
            .iter()
            .map(|p| {
                let at = Command::ALL.map(|cmd| device.check_slots(cmd, p));
                Bank {
                    head: [NIL; 2],
                    tail: [NIL; 2],
                    len: [0; 2],
                    hits: [0; 2],
                    open: CLOSED,
                    streak: 0,
                    bank_at: at.map(|a| a[4]),
                    group_at: at.map(|a| [a[2], a[3]]),
                }
            })
            .collect();
        let shared_at = Command::ALL.map(|cmd| {
            let at = device.check_slots(cmd, &paths[0]);
            [at[0], at[1]]
        });
        let lane_reach = [false, true].map(|write| {
            Command::ALL.map(|x| {
                Controller::lanes(write)
                    .into_iter()
                    .enumerate()
                    .filter_map(|(lane, c)| {
                        device.table.reach(x, c, Level::Bank).map(|l| (lane as u8, l as u8))
                    })
                    .collect()
            })
        });
        let per_node = [n, n, o.bank_groups * o.banks, o.banks, 1].map(|x| x as usize);
        let under = (0..n as usize).map(|b| per_node.map(|per| Banks::range(b - b % per, per))).collect();
        // One entry per burst at most.
        let capacity = (c.read_queue + c.write_queue) as usize;
        Controller {
            ch: ch as usize,
            index: (ch * o.pseudo_channels + pc) as u16,
            entries: vec![
                Entry {
                    next: NIL,
                    count: 0,
                    row: 0,
                    column: 0,
                    seq: 0,
                    req: NO_REQ,
                    first: FIRST_NONE
                };
                capacity
            ],
            free: (0..capacity as u16).rev().collect(),
            banks,
            paths,
            shared_at,
            lane_reach,
            under,
            bus: [Bus::new(n as usize, true), Bus::new(n as usize, false)],
            open_banks: Banks::NONE,
            queued_banks: Banks::NONE,
            lane_cmd: Controller::lanes(false),
            wheel: vec![[Banks::NONE; 2]; WHEEL as usize],
            occupied: [0; LANES],
            wheel_cycle: 0,
            len: [0; 2],
            cap: [c.read_queue, c.write_queue],
            write_mode: false,
            seq: 0,
            high: c.write_high_watermark,
            low: c.write_low_watermark,
            scheduler: c.scheduler,
            cap_hits: c.row_hit_cap,
            page: c.page_policy,
            last_work: 0,
            issued_at: u64::MAX,
            refresh: Refresh::new(
                c.refresh,
                c.refresh_level,
                spec.refresh_interval(),
                n,
                o.ranks,
                c.refresh_stagger.then(|| (ch * o.pseudo_channels + pc, spec.controllers())),
            ),
        }
    }

    /// Bank index within the pseudo-channel of a coordinate.
    #[inline]
    pub(crate) fn bank_index(spec_banks: (u32, u32), a: &DramAddr) -> u16 {
        let (bgs, banks) = spec_banks;
        ((a.rank * bgs + a.bank_group) * banks + a.bank) as u16
    }

    /// The coordinate of bank index `b` of pseudo-channel `pc` of channel `ch` (the inverse of
    /// [`Controller::bank_index`]), at `row` and `column`.
    pub(crate) fn bank_addr(
        spec_banks: (u32, u32),
        ch: u32,
        pc: u32,
        b: u32,
        row: u32,
        column: u32,
    ) -> DramAddr {
        let (bgs, banks) = spec_banks;
        DramAddr {
            channel: ch,
            pseudo_channel: pc,
            rank: b / (bgs * banks),
            bank_group: (b / banks) % bgs,
            bank: b % banks,
            row,
            column,
        }
    }

    /// Bursts the read (or write) queue has room for.
    #[inline]
    pub(crate) fn room(&self, write: bool) -> u32 {
        self.cap[write as usize] - self.len[write as usize]
    }

    /// Whether the controller has nothing to do (no entries, no refresh owed).
    #[inline]
    pub(crate) fn is_idle(&self) -> bool {
        self.len[0] == 0 && self.len[1] == 0 && !self.refresh.any_pending()
    }

    /// Bursts queued (reads, writes).
    pub(crate) fn queued(&self) -> (u32, u32) {
        (self.len[0], self.len[1])
    }

    /// The lanes' commands in read or write mode.
    fn lanes(write: bool) -> [Command; LANES] {
        let (plain, auto) = if write { (Command::Wr, Command::WrA) } else { (Command::Rd, Command::RdA) };
        [plain, auto, Command::Act, Command::Pre]
    }

    /// The lane of bank `b`'s candidate of `kind` (which must be present).
    #[inline]
    fn lane_of(&self, kind: usize, b: usize) -> usize {
        2 * kind + self.bus[kind].alt_of(b)
    }

    /// The bank-level slot of `cmd`'s earliest cycle at bank `b` (`ready`: the channel's
    /// `ready_at` slots).
    #[inline]
    fn bank_part(&self, ready: &[u64], cmd: Command, b: usize) -> u64 {
        ready[self.banks[b].bank_at[cmd.index()] as usize]
    }

    /// The rank and bank-group slots of `cmd`'s earliest cycle at bank `b`.
    #[inline]
    fn group_part(&self, ready: &[u64], cmd: Command, b: usize) -> u64 {
        let [r, g] = self.banks[b].group_at[cmd.index()];
        ready[r as usize].max(ready[g as usize])
    }

    /// The shared part of `cmd`'s earliest cycle (the same for every bank).
    #[inline]
    fn shared(&self, ready: &[u64], cmd: Command) -> u64 {
        let [c, p] = self.shared_at[cmd.index()];
        ready[c as usize].max(ready[p as usize])
    }

    /// Whether a switch between the read and write queues is due: to writes at the high
    /// watermark or when no read waits, back to reads at the low watermark (or none left) once a
    /// read waits, as Ramulator 2's controller decides. With both queues empty the mode stays:
    /// a switch then would depend on when an idle controller happens to run.
    #[inline]
    fn switch_due(&self) -> bool {
        let (r, w) = (self.len[0], self.len[1]);
        if self.write_mode { r > 0 && w <= self.low } else { w > 0 && (w >= self.high || r == 0) }
    }

    /// Queues `run`, arriving at `cycle`, and returns the cycle at which the controller must run
    /// because of it (at the latest). The caller has checked [`Controller::room`].
    pub(crate) fn push(&mut self, dev: &Device, run: BurstRun, cycle: u64) -> u64 {
        let Some(i) = self.free.pop() else { return cycle };
        let BurstRun { write, bank, row, column, count, req, counted } = run;
        let d = write as usize;
        let first = if counted { FIRST_COUNTED } else { FIRST_NONE };
        let e = Entry { next: NIL, count, row, column, seq: self.seq + 1, req, first };
        self.seq += u64::from(count);
        self.entries[i as usize] = e;
        let b = &mut self.banks[bank as usize];
        // An entry appended behind others cannot change the bank's candidates when an older one
        // of its kind (hit or miss) is already queued, nor when the bank is closed (the head
        // is the ACT candidate), nor, with open pages, in the other direction.
        let open_page = self.page == PagePolicy::Open;
        let hit = b.open != CLOSED && row == b.open;
        let unchanged = if d == self.write_mode as usize {
            b.len[d] > 0
                && (b.open == CLOSED || (hit && b.hits[d] > 0 && open_page) || (!hit && b.len[d] > b.hits[d]))
        } else {
            open_page
        };
        if b.tail[d] == NIL {
            b.head[d] = i;
            self.queued_banks.set(bank as usize);
        } else {
            self.entries[b.tail[d] as usize].next = i;
        }
        b.tail[d] = i;
        b.len[d] += count;
        if hit {
            b.hits[d] += count;
        }
        self.len[d] += u32::from(count);
        let changed = !unchanged && self.update_bank(dev, bank as usize, cycle);
        if self.switch_due() || self.refresh.any_pending() {
            // A mode switch or a refresh is owed: let a run decide.
            return cycle;
        }
        // Only this bank's candidates changed: wake when they can go.
        let wake = if changed { self.earliest_of(dev.ready(self.ch), bank as usize) } else { u64::MAX };
        wake.min(self.refresh.next_due()).max(cycle)
    }

    /// The earliest refresh command this sleeping controller owes and can issue by `cycle`,
    /// marking the units that fell due meanwhile as pending (see [`crate::dram::refresh`]).
    /// The component replays the owed commands of a channel's sleeping controllers merged in
    /// time order ([`Controller::replay`]): they share the channel's command buses, so
    /// replaying one controller's backlog after another's would push it past the present.
    pub(crate) fn owed(&mut self, dev: &Device, cycle: u64) -> Option<Owed> {
        let mut best: Option<Owed> = None;
        for u in 0..self.refresh.units.len() {
            let (pending, due) = (self.refresh.units[u].pending, self.refresh.units[u].due);
            if !pending {
                if due > cycle {
                    continue;
                }
                self.refresh.mark_due(due);
            }
            let since = self.refresh.units[u].since;
            let (cmd, bank) = self.refresh_need(u);
            let at = since.max(dev.earliest_on(self.ch, cmd, &self.paths[bank as usize]));
            if at <= cycle && best.is_none_or(|b| at < b.at) {
                best = Some(Owed { unit: u, cmd, bank, at });
            }
        }
        best
    }

    /// Whether any bank is open.
    pub(crate) fn any_open(&self) -> bool {
        !self.open_banks.is_empty()
    }

    /// Issues an owed refresh command found by [`Controller::owed`].
    pub(crate) fn replay(&mut self, dev: &mut Device, o: Owed, out: &mut RunOut) {
        self.issue_refresh(dev, o.unit, o.cmd, o.bank, o.at, out);
        self.refresh.units[o.unit].since = o.at;
    }

    fn refresh_need(&self, u: usize) -> (Command, u16) {
        // The mirror of the device's row state: exact, and already in the host's cache.
        let open = self.open_banks;
        let any_open = !(Banks::from_u128(self.refresh.units[u].banks) & open).is_empty();
        self.refresh.needed(u, any_open, |b| open.has(b as usize))
    }

    fn issue_refresh(&mut self, dev: &mut Device, u: usize, cmd: Command, b: u16, at: u64, out: &mut RunOut) {
        let path = self.paths[b as usize];
        let row = dev.row_of(self.ch, path.at(Level::Bank));
        dev.issue_at(self.ch, cmd, &path, 0, at);
        if !cmd.is_refresh() {
            self.last_work = self.last_work.max(at);
        }
        out.issued.push(Issued {
            cycle: at,
            ctrl: self.index,
            cmd,
            bank: b,
            row,
            column: 0,
            req: NO_REQ,
            first: FIRST_NONE,
        });
        self.refresh.issued(u, cmd);
        self.recheck(dev, cmd, b as usize, at);
        // Closing rows changes the banks' candidates; a bank with nothing queued has none.
        let unit = Banks::from_u128(self.refresh.units[u].banks);
        for b in (unit & self.open_banks).iter() {
            let open = dev.row_of(self.ch, self.paths[b].at(Level::Bank));
            if open != self.banks[b].open {
                self.set_open(b, open);
            }
        }
        for b in (unit & self.queued_banks).iter() {
            self.update_bank(dev, b, at);
        }
    }

    /// Bank `b`'s candidates in the current state, per kind: (entry or NIL, whether it is the
    /// bus's second command).
    #[inline]
    fn candidates(&self, b: usize) -> [(u16, bool); 2] {
        let mut cand = [(NIL, false); 2];
        let d = self.write_mode as usize;
        let bank = &self.banks[b];
        let head = bank.head[d];
        if head == NIL {
            return cand;
        }
        let open = bank.open;
        if open == CLOSED {
            cand[ROW] = (head, false);
            return cand;
        }
        // The oldest hit and the oldest miss; the counts spare the walk when there is none, and
        // the head is one of them.
        let hits = bank.hits[d];
        let head_hits = self.entries[head as usize].row == open;
        let first = |hit: bool| {
            let mut i = head;
            while i != NIL && (self.entries[i as usize].row == open) != hit {
                i = self.entries[i as usize].next;
            }
            i
        };
        let hit = if hits == 0 {
            NIL
        } else if head_hits {
            head
        } else {
            first(true)
        };
        let miss = if hits == bank.len[d] {
            NIL
        } else if !head_hits {
            head
        } else {
            first(false)
        };
        if hit != NIL {
            // Closed page: auto-precharge unless another queued burst (of either direction)
            // hits the row.
            let more = hits >= 2 || bank.hits[1 - d] > 0;
            cand[COL] = (hit, self.page == PagePolicy::Closed && !more);
        }
        if miss != NIL {
            cand[ROW] = (miss, true);
        }
        if self.scheduler == Scheduler::FrFcfsCap && hit != NIL && miss != NIL {
            if bank.streak >= self.cap_hits {
                cand[COL].0 = NIL;
            } else {
                cand[ROW].0 = NIL;
            }
        }
        cand
    }

    /// Sets bank `b`'s open row (`CLOSED`: none) and its lists' hit counts.
    fn set_open(&mut self, b: usize, open: u32) {
        self.open_banks.put(b, open != CLOSED);
        let bank = &mut self.banks[b];
        bank.open = open;
        bank.hits = [0; 2];
        if open == CLOSED {
            return;
        }
        for d in 0..2 {
            let mut i = bank.head[d];
            while i != NIL {
                let e = &self.entries[i as usize];
                if e.row == open {
                    bank.hits[d] += e.count;
                }
                i = e.next;
            }
        }
    }

    /// Brings bank `b`'s candidates up to date at `cycle`; returns whether any changed.
    #[inline]
    fn update_bank(&mut self, dev: &Device, b: usize, cycle: u64) -> bool {
        let [col, row] = self.candidates(b);
        let ready = dev.ready(self.ch);
        let col = self.set_candidate(ready, COL, b, col, cycle);
        let row = self.set_candidate(ready, ROW, b, row, cycle);
        col | row
    }

    /// Makes `cand` (entry or NIL, alt) bank `b`'s candidate of `kind`; returns whether it
    /// changed.
    #[inline]
    fn set_candidate(&mut self, ready: &[u64], kind: usize, b: usize, cand: (u16, bool), cycle: u64) -> bool {
        let (e, alt) = cand;
        let bus = &mut self.bus[kind];
        if e == NIL {
            if bus.present.has(b) || (bus.ordered && bus.in_order(b)) {
                bus.clear(b);
            }
            return false;
        }
        if bus.present.has(b) && bus.entry[b] == e && bus.alt.has(b) == alt {
            // Unchanged: its readiness (or its wheel slot) still stands.
            return false;
        }
        bus.entry[b] = e;
        bus.seq[b] = self.entries[e as usize].seq;
        bus.present.set(b);
        bus.place(b);
        bus.alt.put(b, alt);
        let at = self.bank_part(ready, self.lane_cmd[2 * kind + alt as usize], b);
        self.file(kind, b, at, cycle);
        true
    }

    /// The earliest cycle at which bank `b`'s candidates may be legal (`u64::MAX`: it has none).
    fn earliest_of(&self, ready: &[u64], b: usize) -> u64 {
        let mut e = u64::MAX;
        for kind in [COL, ROW] {
            if self.bus[kind].present.has(b) {
                let cmd = self.lane_cmd[self.lane_of(kind, b)];
                let at = self.bank_part(ready, cmd, b).max(self.group_part(ready, cmd, b));
                e = e.min(at.max(self.shared(ready, cmd)));
            }
        }
        e
    }

    /// Records that bank `b`'s candidate of `kind` has its bank slot pass at `at`.
    #[inline]
    fn file(&mut self, kind: usize, b: usize, at: u64, cycle: u64) {
        if at <= cycle {
            self.bus[kind].ready.set(b);
        } else {
            self.bus[kind].ready.unset(b);
            // Later than the wheel reaches: wait in its last slot and look again then.
            let t = at.clamp(self.wheel_cycle + 1, self.wheel_cycle + WHEEL);
            let slot = (t % WHEEL) as usize;
            self.wheel[slot][kind].set(b);
            self.occupied[self.lane_of(kind, b)] |= 1 << slot;
        }
    }

    /// Looks at the candidates of the wheel slots due by `cycle`.
    #[inline]
    fn advance_wheel(&mut self, dev: &Device, cycle: u64) {
        if cycle <= self.wheel_cycle {
            return;
        }
        let span = cycle - self.wheel_cycle;
        let range = if span >= WHEEL {
            u64::MAX
        } else {
            ((1u64 << span) - 1).rotate_left(((self.wheel_cycle + 1) % WHEEL) as u32)
        };
        self.wheel_cycle = cycle;
        for kind in [COL, ROW] {
            let due = (self.occupied[2 * kind] | self.occupied[2 * kind + 1]) & range;
            if due != 0 {
                self.fire(dev, kind, due, cycle);
            }
        }
    }

    /// Looks again at the candidates of `kind` in wheel slots `due`.
    fn fire(&mut self, dev: &Device, kind: usize, due: u64, cycle: u64) {
        self.occupied[2 * kind] &= !due;
        self.occupied[2 * kind + 1] &= !due;
        let mut look = Banks::NONE;
        for s in Banks([due, 0]).iter() {
            look |= std::mem::take(&mut self.wheel[s][kind]);
        }
        // Candidates that left or were found ready meanwhile need nothing.
        for b in (look & self.bus[kind].present & !self.bus[kind].ready).iter() {
            let at = self.bank_part(dev.ready(self.ch), self.lane_cmd[self.lane_of(kind, b)], b);
            self.file(kind, b, at, cycle);
        }
    }

    /// After `x` issued at bank `b` at `cycle`: files again the ready candidates whose bank slot
    /// it moved past `cycle` (only those it can reach, see `lane_reach`).
    #[inline]
    fn recheck(&mut self, dev: &Device, x: Command, b: usize, cycle: u64) {
        let ready = dev.ready(self.ch);
        let mode = self.write_mode as usize;
        for k in 0..self.lane_reach[mode][x.index()].len() {
            let (lane, level) = self.lane_reach[mode][x.index()][k];
            let (lane, kind) = (lane as usize, lane as usize / 2);
            let cmd = self.lane_cmd[lane];
            let bus = &self.bus[kind];
            if level as usize == Level::Bank.index() {
                // The common case: the command's own bank.
                if bus.ready.has(b) && bus.alt_of(b) == lane & 1 {
                    let at = self.bank_part(ready, cmd, b);
                    if at > cycle {
                        self.file(kind, b, at, cycle);
                    }
                }
                continue;
            }
            for c in bus.lane(bus.ready & self.under[b][level as usize], lane & 1).iter() {
                let at = self.bank_part(ready, cmd, c);
                if at > cycle {
                    self.file(kind, c, at, cycle);
                }
            }
        }
    }

    /// The first cycle after the wheel's current one at which `lane` has banks to look at
    /// (`u64::MAX`: none).
    #[inline]
    fn wheel_next(&self, lane: usize) -> u64 {
        let occupied = self.occupied[lane];
        if occupied == 0 {
            return u64::MAX;
        }
        let from = self.wheel_cycle + 1;
        from + u64::from(occupied.rotate_right((from % WHEEL) as u32).trailing_zeros())
    }

    /// The oldest candidate of bus `kind` legal at `cycle`: (age, bank); age `u64::MAX`: none.
    /// `blocked`: banks left alone for refresh.
    #[inline]
    fn pick(&self, ready: &[u64], kind: usize, cycle: u64, blocked: Banks) -> (u64, usize) {
        let bus = &self.bus[kind];
        let none = (u64::MAX, 0);
        let waiting = bus.ready & !blocked;
        if waiting.is_empty() {
            return none;
        }
        let cmds = [self.lane_cmd[2 * kind], self.lane_cmd[2 * kind + 1]];
        let lanes = [self.shared(ready, cmds[0]) <= cycle, self.shared(ready, cmds[1]) <= cycle];
        let m = match lanes {
            [true, true] => waiting,
            [true, false] => waiting & !bus.alt,
            [false, true] => waiting & bus.alt,
            [false, false] => return none,
        };
        if bus.ordered {
            // Oldest first; only the group slots are left to check.
            for &b in &bus.order[..bus.len] {
                let b = b as usize;
                if m.has(b) && self.group_part(ready, cmds[bus.alt_of(b)], b) <= cycle {
                    return (bus.seq[b], b);
                }
            }
            return none;
        }
        let mut best = none;
        for b in m.iter() {
            let seq = bus.seq[b];
            // Only a candidate older than the best so far needs its group slots read.
            if seq < best.0 && self.group_part(ready, cmds[bus.alt_of(b)], b) <= cycle {
                best = (seq, b);
            }
        }
        best
    }

    /// Switches between the read and write queues if a switch is due.
    #[inline]
    fn update_mode(&mut self, dev: &Device, cycle: u64, out: &mut RunOut) {
        if self.switch_due() {
            self.switch_mode(dev, cycle, out);
        }
    }

    fn switch_mode(&mut self, dev: &Device, cycle: u64, out: &mut RunOut) {
        self.write_mode = !self.write_mode;
        if self.write_mode {
            out.drains += 1;
        }
        self.lane_cmd = Controller::lanes(self.write_mode);
        // Every candidate now comes from the other queue.
        for bus in &mut self.bus {
            bus.present = Banks::NONE;
            bus.ready = Banks::NONE;
            bus.alt = Banks::NONE;
            bus.len = 0;
        }
        for b in 0..self.banks.len() {
            if self.banks[b].head[self.write_mode as usize] != NIL {
                self.update_bank(dev, b, cycle);
            }
        }
    }

    /// Issues bank `b`'s candidate of `kind` at `cycle`.
    fn issue_candidate(&mut self, dev: &mut Device, b: usize, kind: usize, cycle: u64, out: &mut RunOut) {
        let cmd = self.lane_cmd[self.lane_of(kind, b)];
        let bus = &mut self.bus[kind];
        let i = bus.entry[b] as usize;
        // The candidate is consumed (it keeps its place in `order` until its successor, usually
        // the same entry's next burst, takes it; or `update_bank` drops it).
        bus.present.unset(b);
        bus.ready.unset(b);
        let e = self.entries[i];
        let bank = &mut self.banks[b];
        dev.issue_at(self.ch, cmd, &self.paths[b], e.row, cycle);
        self.last_work = self.last_work.max(cycle);
        self.issued_at = cycle;
        let mut issued = Issued {
            cycle,
            ctrl: self.index,
            cmd,
            bank: b as u16,
            row: e.row,
            column: 0,
            req: NO_REQ,
            first: 0,
        };
        // Whether the entry's next burst simply takes over as the column candidate: an open page
        // (no auto-precharge to decide) and no row-hit cap that the streak could flip (none, no
        // miss waiting, or the streak still short of it: the bank's row candidate stays held).
        let mut continued = false;
        match cmd {
            Command::Act => {
                if e.first == FIRST_NONE {
                    self.entries[i].first = FIRST_ACT;
                }
                bank.streak = 0;
                self.set_open(b, e.row);
            }
            Command::Pre => {
                if e.first == FIRST_NONE {
                    self.entries[i].first = FIRST_PRE;
                }
                issued.row = bank.open;
                self.set_open(b, CLOSED);
            }
            _ => {
                bank.streak += 1;
                issued.column = e.column;
                issued.req = e.req;
                issued.first = e.first;
                let d = cmd.is_write() as usize;
                bank.len[d] -= 1;
                bank.hits[d] -= 1;
                self.len[d] -= 1;
                out.freed += 1;
                if e.count > 1 {
                    // The entry's next burst.
                    continued = self.page == PagePolicy::Open
                        && (self.scheduler != Scheduler::FrFcfsCap
                            || bank.hits[d] == bank.len[d]
                            || bank.streak < self.cap_hits);
                    let next = &mut self.entries[i];
                    next.first = FIRST_COUNTED;
                    next.count -= 1;
                    next.column += 1;
                    next.seq += 1;
                } else {
                    // Unlink the entry (it is near the head: the oldest hit).
                    let i = i as u16;
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
                        if bank.head[1 - d] == NIL {
                            self.queued_banks.unset(b);
                        }
                    }
                    self.free.push(i);
                }
                if cmd.closes_bank() {
                    self.set_open(b, CLOSED);
                }
            }
        }
        out.issued.push(issued);
        self.recheck(dev, cmd, b, cycle);
        if continued {
            // Same entry, same lane, same place in `order` (its bursts' arrival numbers are
            // consecutive, so no other candidate lies between them); only its age and bank slot
            // are new.
            let bus = &mut self.bus[COL];
            bus.seq[b] = e.seq + 1;
            bus.present.set(b);
            let at = self.bank_part(dev.ready(self.ch), cmd, b);
            self.file(COL, b, at, cycle);
        } else {
            self.update_bank(dev, b, cycle);
        }
    }

    /// Runs the controller at `cycle` (see the module docs); returns the next cycle to run it,
    /// or `u64::MAX` when it is idle.
    pub(crate) fn run(&mut self, dev: &mut Device, cycle: u64, out: &mut RunOut) -> u64 {
        let mut next = u64::MAX;
        self.refresh.mark_due(cycle);
        if self.issued_at != cycle {
            self.update_mode(dev, cycle, out);
        }

        // Refresh first: a pending unit blocks its banks until its REF is out.
        if self.refresh.any_pending() {
            next = self.run_refresh(dev, cycle, out);
        }
        let blocked = Banks::from_u128(self.refresh.blocked());
        self.advance_wheel(dev, cycle);

        // The oldest legal candidate per command bus.
        let row = self.pick(dev.ready(self.ch), ROW, cycle, blocked);
        let col = self.pick(dev.ready(self.ch), COL, cycle, blocked);
        if row.0 != u64::MAX || col.0 != u64::MAX {
            // Policy order between the two buses' picks: the column pick first under FR-FCFS-cap
            // (row hits first), else the older one.
            let col_first = row.0 == u64::MAX
                || (col.0 != u64::MAX && (self.scheduler == Scheduler::FrFcfsCap || col.0 < row.0));
            let picks = if col_first { [(col, COL), (row, ROW)] } else { [(row, ROW), (col, COL)] };
            let mut first_bank = usize::MAX;
            for ((seq, mut b), kind) in picks {
                if seq == u64::MAX {
                    continue;
                }
                if first_bank != usize::MAX
                    && (b == first_bank
                        || dev.earliest_on(self.ch, self.lane_cmd[self.lane_of(kind, b)], &self.paths[b])
                            > cycle)
                {
                    // The first issue took this pick's bank or delayed it: the oldest candidate
                    // still legal, if any, goes instead. (The first issue can delay candidates
                    // but makes none legal outside its own bank, so a pick still legal is
                    // still the oldest.)
                    let mut others = blocked;
                    others.set(first_bank);
                    let (seq, next) = self.pick(dev.ready(self.ch), kind, cycle, others);
                    if seq == u64::MAX {
                        continue;
                    }
                    b = next;
                }
                self.issue_candidate(dev, b, kind, cycle, out);
                first_bank = b;
            }
        }
        if self.switch_due() {
            // Due once this cycle issued: made at the next cycle's run (see `issued_at`).
            next = next.min(cycle + 1);
        }

        if self.len[0] == 0 && self.len[1] == 0 && !self.refresh.any_pending() {
            return u64::MAX;
        }
        // When can anything go next? A ready candidate when its command's shared part allows; a
        // waiting one no earlier than its wheel slot and that shared part.
        for kind in [ROW, COL] {
            let live = self.bus[kind].ready & !blocked;
            for alt in 0..2 {
                let lane = 2 * kind + alt;
                let ready = !self.bus[kind].lane(live, alt).is_empty();
                let wheel = self.wheel_next(lane);
                if ready || wheel != u64::MAX {
                    let shared = self.shared(dev.ready(self.ch), self.lane_cmd[lane]);
                    next = next.min(if ready { shared } else { wheel.max(shared) });
                }
            }
        }
        next = next.min(self.refresh.next_due());
        // Nothing can ever be issued before the next cycle.
        next.max(cycle + 1)
    }

    /// The refresh part of a run: issues what the pending units need (at most a precharge and a
    /// refresh each, if the table allows both in one cycle); returns the cycle at which the next
    /// of them may go (`u64::MAX`: none waits).
    fn run_refresh(&mut self, dev: &mut Device, cycle: u64, out: &mut RunOut) -> u64 {
        let mut next = u64::MAX;
        for u in 0..self.refresh.units.len() {
            for _ in 0..2 {
                if !self.refresh.units[u].pending {
                    break;
                }
                let (cmd, b) = self.refresh_need(u);
                let at = dev.earliest_on(self.ch, cmd, &self.paths[b as usize]);
                if at > cycle {
                    next = next.min(at);
                    break;
                }
                self.issue_refresh(dev, u, cmd, b, cycle, out);
            }
        }
        next
    }
}
