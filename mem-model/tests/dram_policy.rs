//! The controller implements its policy: a reference scheduler written plainly here (every
//! queued burst in a list, every candidate looked at every cycle, legality asked of the
//! [`Device`] command by command) must issue exactly the commands the model issues, at the same
//! cycles, on random traces. The model's per-bank candidates, age-ordered bus, timing wheel and
//! shortcuts (an entry's next burst taking over, pushes that change nothing) are what it checks;
//! `dram_legality.rs` checks the commands against the constraint table, `dram_schedule.rs` the
//! model's wake-up predictions.
//!
//! The policy (module docs of `mem-model/src/dram/controller.rs`): per command bus, the oldest
//! legal candidate, where a bank's column candidate is its oldest burst that hits the open row
//! and its row candidate its oldest other burst (ACT to a closed bank, PRE to a conflict), in
//! the queue of the current mode; under FR-FCFS-cap a bank offers its hit until `row_hit_cap`
//! column commands since its ACT, then its miss; under closed pages a column command
//! auto-precharges unless another queued burst hits the row. The column pick goes first under
//! FR-FCFS-cap, else the older pick; the second bus then takes its pick if still legal, else
//! its oldest candidate still legal outside the first one's bank. The mode is decided once a
//! cycle, before its first command. Refresh, where on, goes first: a unit that falls due owes
//! a refresh, its banks take no other command, and it gets its precharge (PRE or PREA) and its
//! refresh as soon as the device allows. The reference runs every controller every cycle in
//! index order, idle ones too, so it also checks the model's replay of the refreshes that
//! sleeping controllers owe. Admission: a cycle's arrivals are queued before its runs, burst by
//! burst in arrival order; a burst whose queue is full makes the port wait (later requests
//! wait behind it), and the room a cycle's commands free is taken once every controller has run,
//! so what it admits goes from the next cycle. Links never fill.

#[path = "dram_helpers.rs"]
mod helpers;

use helpers::{Lcg, in_time_order, random_requests, run_plan_as, spec_with};
use mem_model::MemRequest;
use mem_model::dram::{
    Command, ControllerConfig, Device, DramAddr, DramPreset, DramSpec, IssuedCommand, Level, PagePolicy,
    RefreshMode, Scheduler,
};
use proptest::prelude::*;
use std::collections::{HashMap, VecDeque};

/// One queued burst.
#[derive(Debug, Clone, Copy)]
struct Burst {
    seq: u64,
    a: DramAddr,
    /// Its burst address (for reads answered from the write queue).
    addr: u64,
}

/// One refresh unit: the whole pseudo-channel or one rank.
#[derive(Debug)]
struct Unit {
    /// Next cycle it falls due.
    due: u64,
    pending: bool,
    /// Its banks, in bank-index order.
    banks: Vec<DramAddr>,
    /// Per-bank refresh: the bank refreshed next.
    cursor: usize,
}

/// One pseudo-channel's reference controller.
#[derive(Debug, Default)]
struct Pc {
    /// Read and write queues, oldest first.
    queue: [Vec<Burst>; 2],
    write_mode: bool,
    /// Column commands since the bank's ACT, by bank key.
    streak: HashMap<(u32, u32, u32), u32>,
    units: Vec<Unit>,
    /// Cycles between two dues of a unit.
    interval: u64,
    /// Per-bank refresh (else all-bank).
    per_bank: bool,
}

/// The refresh units of pseudo-channel `pc` of channel `ch` (the refresh module's schedule:
/// every interval, the units of all controllers spread over the first one when staggered).
fn units(spec: &DramSpec, ch: u32, pc: u32) -> (Vec<Unit>, u64) {
    let (cfg, o) = (spec.controller(), spec.organization());
    if cfg.refresh == RefreshMode::None {
        return (Vec::new(), 0);
    }
    let per_rank = o.bank_groups * o.banks;
    let count = if cfg.refresh_level == Level::Rank { o.ranks } else { 1 };
    let per_unit = o.banks_per_pseudo_channel() / count;
    let interval = match cfg.refresh {
        RefreshMode::PerBank => (spec.refresh_interval() / u64::from(per_unit)).max(1),
        _ => spec.refresh_interval().max(1),
    };
    let units = (0..count)
        .map(|u| {
            let banks = (u * per_unit..(u + 1) * per_unit)
                .map(|b| DramAddr {
                    channel: ch,
                    pseudo_channel: pc,
                    rank: b / per_rank,
                    bank_group: b / o.banks % o.bank_groups,
                    bank: b % o.banks,
                    row: 0,
                    column: 0,
                })
                .collect();
            let due = if cfg.refresh_stagger {
                let k = u64::from((ch * o.pseudo_channels + pc) * count + u);
                let n = u64::from(o.controllers() * count);
                (interval * (k + 1) / n).max(1)
            } else {
                interval
            };
            Unit { due, pending: false, banks, cursor: 0 }
        })
        .collect();
    (units, interval)
}

/// A candidate: (age, index in the active queue, command).
type Cand = (u64, usize, Command);

fn bank_key(a: &DramAddr) -> (u32, u32, u32) {
    (a.rank, a.bank_group, a.bank)
}

/// The reference run: every controller at every cycle from cycle 0 until all is done; returns
/// the commands and the last cycle.
fn reference(spec: &DramSpec, plan: &[MemRequest]) -> (Vec<IssuedCommand>, u64) {
    let cfg = *spec.controller();
    let o = spec.organization();
    let burst = spec.burst_bytes();
    let clock = spec.clock();
    let mut dev = Device::new(spec);
    let mut pcs: Vec<Pc> = (0..o.controllers())
        .map(|i| {
            let (units, interval) = units(spec, i / o.pseudo_channels, i % o.pseudo_channels);
            let per_bank = cfg.refresh == RefreshMode::PerBank;
            Pc { units, interval, per_bank, ..Pc::default() }
        })
        .collect();
    let mut queued_writes: HashMap<u64, u32> = HashMap::new();
    let mut log = Vec::new();
    let mut seq = 0;
    let mut next = 0;
    // The port: requests arrived and not yet wholly queued, oldest first, each with the bursts
    // it has queued (`None`: not yet taken, so not yet checked against the write queue).
    let mut port: VecDeque<(MemRequest, Option<usize>)> = VecDeque::new();
    // Requests are sent on a DRAM clock edge and arrive over a 1-cycle link on the next one.
    let arrival = |r: &MemRequest| clock.cycle_at(r.issued) + 1;
    let mut cycle = 0;
    // Queues the port's requests in order, burst by burst, until a queue is full.
    let mut admit = |port: &mut VecDeque<(MemRequest, Option<usize>)>,
                     pcs: &mut Vec<Pc>,
                     queued_writes: &mut HashMap<u64, u32>| {
        while let Some((r, queued)) = port.front_mut() {
            let start = r.addr / burst * burst;
            let end = (r.addr + u64::from(r.bytes)).div_ceil(burst) * burst;
            let bursts: Vec<u64> = (start..end).step_by(burst as usize).collect();
            let done = match *queued {
                Some(n) => n,
                None if !r.write && bursts.iter().all(|b| queued_writes.get(b).is_some_and(|&n| n > 0)) => {
                    port.pop_front(); // answered from the write queue
                    continue;
                }
                None => 0,
            };
            *queued = Some(done);
            let d = r.write as usize;
            for (k, &b) in bursts.iter().enumerate().skip(done) {
                let a = spec.mapping().decode(b).expect("in range");
                let i = spec.mapping().controller_of(&a) as usize;
                if pcs[i].queue[d].len() as u32 >= [cfg.read_queue, cfg.write_queue][d] {
                    // Full: the port waits for room, keeping arrival order.
                    return;
                }
                seq += 1;
                pcs[i].queue[d].push(Burst { seq, a, addr: b });
                if r.write {
                    *queued_writes.entry(b).or_default() += 1;
                }
                *queued = Some(k + 1);
            }
            port.pop_front();
        }
    };
    loop {
        // This cycle's arrivals are queued before any controller runs (deliveries come first).
        while next < plan.len() && arrival(&plan[next]) <= cycle {
            port.push_back((plan[next], None));
            next += 1;
        }
        admit(&mut port, &mut pcs, &mut queued_writes);
        for pc in &mut pcs {
            run(&cfg, &mut dev, pc, cycle, &mut queued_writes, &mut log, clock);
        }
        // Room the runs freed is taken once they are over; what it queues waits for the next
        // cycle.
        admit(&mut port, &mut pcs, &mut queued_writes);
        if next == plan.len() && port.is_empty() && pcs.iter().all(|p| p.queue.iter().all(Vec::is_empty)) {
            return (log, cycle);
        }
        cycle += 1;
        assert!(cycle < 50_000_000, "the reference scheduler does not finish");
    }
}

/// Bank `key`'s candidates (column, row) in the queue of the current mode.
fn candidates(cfg: &ControllerConfig, dev: &Device, pc: &Pc, key: (u32, u32, u32)) -> [Option<Cand>; 2] {
    let d = pc.write_mode as usize;
    let q = &pc.queue[d];
    let Some(first) = q.iter().position(|b| bank_key(&b.a) == key) else { return [None, None] };
    let open = dev.open_row(&q[first].a);
    let Some(open) = open else {
        return [None, Some((q[first].seq, first, Command::Act))];
    };
    let hits = |q: &[Burst]| q.iter().filter(|b| bank_key(&b.a) == key && b.a.row == open).count();
    let hit = q.iter().position(|b| bank_key(&b.a) == key && b.a.row == open);
    let miss = q.iter().position(|b| bank_key(&b.a) == key && b.a.row != open);
    let mut col = hit.map(|i| {
        let more = hits(q) >= 2 || hits(&pc.queue[1 - d]) > 0;
        let auto = cfg.page_policy == PagePolicy::Closed && !more;
        let cmd = match (pc.write_mode, auto) {
            (false, false) => Command::Rd,
            (false, true) => Command::RdA,
            (true, false) => Command::Wr,
            (true, true) => Command::WrA,
        };
        (q[i].seq, i, cmd)
    });
    let mut row = miss.map(|i| (q[i].seq, i, Command::Pre));
    if cfg.scheduler == Scheduler::FrFcfsCap && col.is_some() && row.is_some() {
        if pc.streak.get(&key).copied().unwrap_or(0) >= cfg.row_hit_cap {
            col = None;
        } else {
            row = None;
        }
    }
    [col, row]
}

/// The banks of units that owe a refresh: regular commands leave them alone.
fn blocked(pc: &Pc) -> Vec<(u32, u32, u32)> {
    let owing = pc.units.iter().filter(|u| u.pending);
    if pc.per_bank {
        owing.map(|u| bank_key(&u.banks[u.cursor])).collect()
    } else {
        owing.flat_map(|u| u.banks.iter().map(bank_key)).collect()
    }
}

/// The oldest legal candidate of bus `kind` (0: column, 1: row), skipping bank `skip`.
fn pick(
    cfg: &ControllerConfig,
    dev: &Device,
    pc: &Pc,
    kind: usize,
    cycle: u64,
    skip: Option<(u32, u32, u32)>,
) -> Option<Cand> {
    let d = pc.write_mode as usize;
    let mut keys: Vec<(u32, u32, u32)> = pc.queue[d].iter().map(|b| bank_key(&b.a)).collect();
    keys.sort_unstable();
    keys.dedup();
    let blocked = blocked(pc);
    keys.into_iter()
        .filter(|&k| Some(k) != skip && !blocked.contains(&k))
        .filter_map(|k| candidates(cfg, dev, pc, k)[kind])
        .filter(|&(_, i, cmd)| dev.can_issue(cmd, &pc.queue[d][i].a, cycle))
        .min_by_key(|c| c.0)
}

/// One cycle of one pseudo-channel's reference controller.
fn run(
    cfg: &ControllerConfig,
    dev: &mut Device,
    pc: &mut Pc,
    cycle: u64,
    queued_writes: &mut HashMap<u64, u32>,
    log: &mut Vec<IssuedCommand>,
    clock: sim_core::Clock,
) {
    let (r, w) = (pc.queue[0].len() as u32, pc.queue[1].len() as u32);
    let due = if pc.write_mode {
        r > 0 && w <= cfg.write_low_watermark
    } else {
        w > 0 && (w >= cfg.write_high_watermark || r == 0)
    };
    for u in &mut pc.units {
        if !u.pending && u.due <= cycle {
            u.pending = true;
            u.due += pc.interval;
        }
    }
    if due {
        pc.write_mode = !pc.write_mode;
    }
    // Refresh first: per owing unit, its precharge and its refresh if the device allows them.
    for u in &mut pc.units {
        for _ in 0..2 {
            if !u.pending {
                break;
            }
            let (cmd, a) = if pc.per_bank {
                let a = u.banks[u.cursor];
                (if dev.open_row(&a).is_some() { Command::Pre } else { Command::RefPb }, a)
            } else {
                let open = u.banks.iter().any(|a| dev.open_row(a).is_some());
                (if open { Command::PreA } else { Command::RefAb }, u.banks[0])
            };
            if !dev.can_issue(cmd, &a, cycle) {
                break;
            }
            log.push(IssuedCommand {
                tick: clock.edge(cycle),
                cycle,
                cmd,
                channel: a.channel,
                pseudo_channel: a.pseudo_channel,
                rank: a.rank,
                bank_group: a.bank_group,
                bank: a.bank,
                row: dev.open_row(&a).unwrap_or(u32::MAX),
                column: 0,
            });
            dev.issue(cmd, &a, cycle)
                .unwrap_or_else(|e| panic!("the reference issued an illegal {cmd}: {e}"));
            if cmd.is_refresh() {
                u.pending = false;
                u.cursor = (u.cursor + 1) % u.banks.len();
            }
        }
    }
    let col = pick(cfg, dev, pc, 0, cycle, None);
    let row = pick(cfg, dev, pc, 1, cycle, None);
    let col_first = row.is_none()
        || (col.is_some() && (cfg.scheduler == Scheduler::FrFcfsCap || col.unwrap().0 < row.unwrap().0));
    let order = if col_first { [(col, 0), (row, 1)] } else { [(row, 1), (col, 0)] };
    let mut first: Option<(u32, u32, u32)> = None;
    for (c, kind) in order {
        let Some(mut c) = c else { continue };
        if let Some(f) = first {
            // The first command moved the queue: find the pick again by its age, and keep it if
            // it is still its bank's candidate and still legal.
            let d = pc.write_mode as usize;
            let again = pc.queue[d].iter().position(|b| b.seq == c.0).and_then(|i| {
                let key = bank_key(&pc.queue[d][i].a);
                let x = candidates(cfg, dev, pc, key)[kind]?;
                (key != f && x.0 == c.0 && dev.can_issue(x.2, &pc.queue[d][x.1].a, cycle)).then_some(x)
            });
            match again.or_else(|| pick(cfg, dev, pc, kind, cycle, Some(f))) {
                Some(x) => c = x,
                None => continue,
            }
        }
        let d = pc.write_mode as usize;
        let b = pc.queue[d][c.1];
        let key = bank_key(&b.a);
        let mut entry = IssuedCommand {
            tick: clock.edge(cycle),
            cycle,
            cmd: c.2,
            channel: b.a.channel,
            pseudo_channel: b.a.pseudo_channel,
            rank: b.a.rank,
            bank_group: b.a.bank_group,
            bank: b.a.bank,
            row: b.a.row,
            column: 0,
        };
        match c.2 {
            Command::Act => {
                pc.streak.insert(key, 0);
            }
            Command::Pre => entry.row = dev.open_row(&b.a).unwrap_or(u32::MAX),
            _ => {
                entry.column = b.a.column;
                *pc.streak.entry(key).or_default() += 1;
                pc.queue[d].remove(c.1);
                if c.2.is_write() {
                    let n = queued_writes.get_mut(&b.addr).expect("queued");
                    *n -= 1;
                }
            }
        }
        dev.issue(c.2, &b.a, cycle)
            .unwrap_or_else(|e| panic!("the reference issued an illegal {}: {e}", c.2));
        log.push(entry);
        first = Some(key);
    }
}

/// `spec` with refresh `refresh`, queues of 4096 bursts and watermarks `high`/`low`.
fn variant(name: &str, refresh: &str, scheduler: &str, page: &str, high: u32, low: u32) -> DramSpec {
    variant_with_queues(name, refresh, scheduler, page, (high, low), 4096)
}

/// [`variant`] with read and write queues of `queue` bursts each.
fn variant_with_queues(
    name: &str,
    refresh: &str,
    scheduler: &str,
    page: &str,
    (high, low): (u32, u32),
    queue: u32,
) -> DramSpec {
    spec_with(name, |p: &mut DramPreset| {
        p.controller.refresh = refresh.into();
        p.controller.read_queue = queue;
        p.controller.write_queue = queue;
        p.controller.write_high_watermark = high;
        p.controller.write_low_watermark = low;
        p.controller.scheduler = scheduler.into();
        p.controller.page_policy = page.into();
        p.controller.row_hit_cap = 4;
    })
}

/// `n` requests on DRAM clock edges over the first two pseudo-channels, `rows` rows of two banks
/// per bank group, up to `gap` cycles apart, `write_pct` % writes, 32 to 128 B.
fn plan(s: &DramSpec, seed: u64, n: usize, rows: u32, write_pct: u64, gap: u64) -> Vec<MemRequest> {
    let mut cycle = 0;
    let next_tick = |r: &mut Lcg| {
        cycle += r.next(gap + 1);
        s.clock().edge(cycle)
    };
    random_requests(s, seed, n, (rows, 2), &[32, 64, 128], write_pct, next_tick)
}

/// Asserts that the model and the reference issue the same commands; returns them.
fn check(s: &DramSpec, plan: Vec<MemRequest>) -> Vec<IssuedCommand> {
    let (want, last) = reference(s, &plan);
    // Refreshes of channels asleep at the end are booked up to the reference's last cycle.
    let got = run_plan_as(s, plan, 1 << 16, true, Some(s.clock().edge(last)), false);
    // A controller left owing a refresh at the end stays awake for it and may issue past the
    // reference's last cycle, where the reference stopped.
    let got: Vec<IssuedCommand> = got.log.into_iter().filter(|c| c.cycle <= last).collect();
    let (got, want) = (in_time_order(&got), in_time_order(&want));
    let show = |c: &IssuedCommand| {
        format!(
            "c{} {} ch{} pc{} r{} bg{} b{} row {} col {}",
            c.cycle, c.cmd, c.channel, c.pseudo_channel, c.rank, c.bank_group, c.bank, c.row, c.column
        )
    };
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        let same =
            (g.cycle, g.cmd, g.channel, g.pseudo_channel, g.rank, g.bank_group, g.bank, g.row, g.column)
                == (
                    w.cycle,
                    w.cmd,
                    w.channel,
                    w.pseudo_channel,
                    w.rank,
                    w.bank_group,
                    w.bank,
                    w.row,
                    w.column,
                );
        assert!(
            same,
            "{}: command {i}: the model issued {}, the reference {}\n  model:     {:?}\n  reference: {:?}",
            s.name(),
            show(g),
            show(w),
            got[i.saturating_sub(4)..(i + 2).min(got.len())].iter().map(show).collect::<Vec<_>>(),
            want[i.saturating_sub(4)..(i + 2).min(want.len())].iter().map(show).collect::<Vec<_>>(),
        );
    }
    assert_eq!(got.len(), want.len(), "{}: commands issued, model and reference", s.name());
    got
}

/// Presets and policies the properties run over.
fn policy(which: u32) -> DramSpec {
    match which {
        0 => variant("hbm3-6400", "none", "frfcfs_cap", "open", 24, 8),
        1 => variant("hbm3-6400", "none", "frfcfs", "open", 24, 8),
        2 => variant("hbm3-6400", "none", "frfcfs", "closed", 6, 2),
        3 => variant("ddr5-4800", "none", "frfcfs_cap", "open", 12, 4),
        4 => variant("hbm2", "none", "frfcfs", "open", 8, 2),
        5 => variant("hbm3-h100", "none", "frfcfs_cap", "closed", 16, 4),
        6 => variant("hbm3-6400", "all_bank", "frfcfs_cap", "open", 24, 8),
        7 => variant("hbm3-h100", "per_bank", "frfcfs_cap", "open", 16, 4),
        8 => variant("ddr5-4800", "all_bank", "frfcfs", "closed", 12, 4),
        _ => variant("hbm2e", "per_bank", "frfcfs", "open", 8, 2),
    }
}

/// Presets and policies with queues of `queue` bursts, small enough that dense traffic fills
/// them: the port then waits, and room freed by a cycle's commands is taken once the cycle's
/// runs are over.
fn small_queue_policy(which: u32, queue: u32) -> DramSpec {
    let marks = (queue * 3 / 4, queue / 4);
    match which % 5 {
        0 => variant_with_queues("hbm3-6400", "none", "frfcfs_cap", "open", marks, queue),
        1 => variant_with_queues("hbm3-h100", "per_bank", "frfcfs_cap", "open", marks, queue),
        2 => variant_with_queues("ddr5-4800", "all_bank", "frfcfs", "closed", marks, queue),
        3 => variant_with_queues("hbm2", "none", "frfcfs", "open", marks, queue),
        _ => variant_with_queues("hbm2e", "per_bank", "frfcfs", "closed", marks, queue),
    }
}

/// A random trace's parameters for [`plan`]: (seed, requests, rows, write %, gap), with up to
/// `max_n` requests at most `max_gap` cycles apart.
fn traffic(max_n: usize, max_gap: u64) -> impl Strategy<Value = (u64, usize, u32, u64, u64)> {
    (any::<u64>(), 1usize..max_n, 1u32..6, 0u64..60, 0u64..=max_gap)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    #[test]
    fn the_model_issues_what_a_plain_reference_scheduler_issues(
        which in 0u32..10,
        (seed, n, rows, write_pct, gap) in traffic(200, 11),
    ) {
        let s = policy(which);
        check(&s, plan(&s, seed, n, rows, write_pct, gap));
    }

    #[test]
    fn with_full_queues_the_model_issues_what_the_reference_issues(
        which in 0u32..5,
        queue in 4u32..17,
        (seed, n, rows, write_pct, gap) in traffic(300, 2),
    ) {
        let s = small_queue_policy(which, queue);
        check(&s, plan(&s, seed, n, rows, write_pct, gap));
    }
}

#[test]
fn dense_mixed_traffic_matches_the_reference_on_every_policy() {
    for which in 0..10 {
        let s = policy(which);
        let log = check(&s, plan(&s, 40 + u64::from(which), 1500, 4, 35, 2));
        // The traffic exercises what the policy can issue: row hits, misses and conflicts in
        // both directions (with auto-precharge under closed pages).
        let closed = s.controller().page_policy == PagePolicy::Closed;
        let kinds: &[Command] = if closed {
            &[Command::Act, Command::Pre, Command::Rd, Command::Wr, Command::RdA, Command::WrA]
        } else {
            &[Command::Act, Command::Pre, Command::Rd, Command::Wr]
        };
        for &k in kinds {
            assert!(log.iter().filter(|c| c.cmd == k).count() >= 20, "{}: too few {k}", s.name());
        }
    }
}

#[test]
fn dense_traffic_into_small_queues_matches_the_reference() {
    for which in 0..5 {
        let s = small_queue_policy(which, 8);
        let log = check(&s, plan(&s, 70 + u64::from(which), 1500, 4, 35, 0));
        assert!(log.len() > 3000, "{}: {} commands", s.name(), log.len());
    }
}
