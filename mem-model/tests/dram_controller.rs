//! The controller through the component: command sequences (row hit, closed bank, conflict),
//! unloaded latencies against their formulas, request splitting, posted writes, refresh on
//! schedule, schedulers, faults and statistics.
//!
//! Latencies are measured at the requester and include two link hops of one DRAM clock each
//! (request in, response out): unloaded read latency = (1 + [tRP] + tRCD + tCL + nBL + 1) tCK.

#[path = "dram_helpers.rs"]
mod helpers;

use helpers::{Outcome, run_plan, run_plan_to, run_two_ports, spec, spec_with};
use mem_model::MemRequest;
use mem_model::dram::{Command, DramAddr, DramSpec, IssuedCommand, check_log};

const TCK: u64 = 625;

fn addr(s: &DramSpec, pc: u32, rank: u32, bg: u32, bank: u32, row: u32, column: u32) -> u64 {
    let a = DramAddr { channel: 0, pseudo_channel: pc, rank, bank_group: bg, bank, row, column };
    s.mapping().encode(&a).expect("in range")
}

fn read(id: u64, a: u64, bytes: u32, at: u64) -> MemRequest {
    MemRequest::read(id, a, bytes, at)
}

/// The commands of pseudo-channel (0, 0), as (cycle, command, row, column).
fn pc0(log: &[IssuedCommand]) -> Vec<(u64, Command, u32, u32)> {
    log.iter()
        .filter(|c| c.channel == 0 && c.pseudo_channel == 0)
        .map(|c| (c.cycle, c.cmd, c.row, c.column))
        .collect()
}

fn latency(o: &Outcome, id: u64, sent: u64) -> u64 {
    o.answer(id) - sent
}

#[test]
fn hit_miss_conflict_sequences_and_latencies() {
    let s = spec("hbm3-6400");
    let t1 = 100_000; // 100 ns = cycle 160
    let t2 = 200_000;
    let plan = vec![
        read(1, addr(&s, 0, 0, 0, 0, 5, 0), 32, 0),
        read(2, addr(&s, 0, 0, 0, 0, 5, 1), 32, t1),
        read(3, addr(&s, 0, 0, 0, 0, 9, 0), 32, t2),
    ];
    let o = run_plan(&s, plan, 16, true);
    let (rcd, cl, bl, rp) = (31, 20, 2, 26);
    // Closed bank: ACT, RD.
    let cmds = pc0(&o.log);
    assert_eq!(cmds[0], (1, Command::Act, 5, 0));
    assert_eq!(cmds[1], (1 + rcd, Command::Rd, 5, 0));
    assert_eq!(latency(&o, 1, 0), (1 + rcd + cl + bl + 1) * TCK, "tRCD + tCL + burst + 2 hops");
    // Row hit: RD only.
    assert_eq!(cmds[2], (161, Command::Rd, 5, 1));
    assert_eq!(latency(&o, 2, t1), (1 + cl + bl + 1) * TCK, "tCL + burst + 2 hops");
    // Conflict: PRE, ACT, RD.
    assert_eq!(
        cmds[3..],
        [(321, Command::Pre, 5, 0), (321 + rp, Command::Act, 9, 0), (321 + rp + rcd, Command::Rd, 9, 0)]
    );
    assert_eq!(latency(&o, 3, t2), (1 + rp + rcd + cl + bl + 1) * TCK, "tRP + tRCD + tCL + burst + 2 hops");
    assert_eq!((1 + rp + rcd + cl + bl + 1) * TCK, 81 * 625);
    let c = &o.counters;
    assert_eq!((c.row_hits, c.row_misses, c.row_conflicts), (1, 1, 1));
    assert_eq!((c.activations(), c.precharges(), c.bursts_read), (2, 1, 3));
    check_log(&s, &o.log).unwrap();
}

#[test]
fn a_request_is_split_into_bursts() {
    let s = spec("hbm3-6400");
    // 64 B on 32 B bursts: two RDs to consecutive columns of one row (same bank: tCCD_L apart).
    let o = run_plan(&s, vec![read(1, addr(&s, 0, 0, 0, 0, 3, 4), 64, 0)], 4, true);
    let cmds = pc0(&o.log);
    assert_eq!(cmds, [(1, Command::Act, 3, 0), (32, Command::Rd, 3, 4), (36, Command::Rd, 3, 5)]);
    assert_eq!(latency(&o, 1, 0), (1 + 31 + 4 + 22 + 1) * TCK, "answered when the last burst's data is back");
    // 100 B starting 16 B into a burst touches 4 bursts.
    let o = run_plan(&s, vec![read(1, addr(&s, 0, 0, 0, 0, 3, 0) + 16, 100, 0)], 4, true);
    assert_eq!(o.log.iter().filter(|c| c.cmd.is_read()).count(), 4);
    assert_eq!(o.counters.bursts_read, 4);
    assert_eq!(o.counters.bytes_read, 100);
    // A 1 KiB request spans four 256 B interleave chunks, so four pseudo-channels.
    let o = run_plan(&s, vec![read(1, 0, 1024, 0)], 4, true);
    let pcs: std::collections::BTreeSet<(u32, u32)> =
        o.log.iter().map(|c| (c.channel, c.pseudo_channel)).collect();
    assert_eq!(pcs.len(), 4);
    assert_eq!(o.answers.len(), 1);
}

#[test]
fn writes_are_acknowledged_when_queued() {
    let s = spec("hbm3-6400");
    let a = addr(&s, 0, 1, 2, 3, 7, 0);
    let o = run_plan(&s, vec![MemRequest::write(1, a, 64, 0), read(2, a, 32, 1_000_000)], 4, true);
    assert_eq!(o.answer(1), 2 * TCK, "posted: two link hops");
    let cmds = pc0(&o.log);
    assert_eq!(cmds[0].1, Command::Act);
    assert_eq!(cmds[1], (1 + 15, Command::Wr, 7, 0), "nRCDWR = 15");
    assert_eq!(cmds[2].1, Command::Wr);
    assert_eq!(o.counters.bursts_written, 2);
    assert_eq!(o.counters.writes, 1);
    check_log(&s, &o.log).unwrap();
}

/// Reads to random rows of pseudo-channel (0, 0) every `gap` ps until `end`.
fn busy_plan(s: &DramSpec, gap: u64, end: u64) -> Vec<MemRequest> {
    let mut x = 12345u64;
    (0..end / gap)
        .map(|i| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let b = ((x >> 33) % 32) as u32;
            let row = ((x >> 45) % 1024) as u32;
            read(i, addr(s, 0, b / 16, (b / 4) % 4, b % 4, row, 0), 32, i * gap)
        })
        .collect()
}

#[test]
fn refresh_on_schedule_blocks_the_pseudo_channel_for_trfc() {
    let s = spec("hbm3-6400");
    let (refi, rfc) = (6240u64, 560u64);
    let end = 20_000_000; // 20 us = 32 000 cycles
    let o = run_plan(&s, busy_plan(&s, 10_000, end), 4096, true);
    check_log(&s, &o.log).unwrap();
    let cmds = pc0(&o.log);
    let refs: Vec<u64> = cmds.iter().filter(|c| c.1 == Command::RefAb).map(|c| c.0).collect();
    assert_eq!(refs.len() as u64, o.end_tick / TCK / refi, "one REFab per tREFI: {refs:?}");
    for (k, &t) in refs.iter().enumerate() {
        let due = (k as u64 + 1) * refi;
        // Due at k x tREFI; issued once PREA (after tRTP/tRAS) and tRP allow: within ~tRAS + tRP.
        assert!(t >= due && t <= due + 45 + 26 + 10, "REFab {k} at {t}, due {due}");
        // Nothing activates during tRFC, and the queue starts again right after it.
        let next_act = cmds.iter().find(|c| c.1 == Command::Act && c.0 > t).map(|c| c.0).unwrap();
        assert!(next_act >= t + rfc && next_act <= t + rfc + 2, "ACT at {next_act} after REFab at {t}");
    }
    // The other channels had no work: they scheduled nothing, not even refresh. Pseudo-channel
    // (0, 1) shares channel 0's command buses, so it is kept refreshed, on the same schedule.
    assert!(o.log.iter().all(|c| c.channel == 0));
    let sibling: Vec<u64> = o.log.iter().filter(|c| c.pseudo_channel == 1).map(|c| c.cycle).collect();
    assert!(o.log.iter().filter(|c| c.pseudo_channel == 1).all(|c| c.cmd == Command::RefAb));
    assert_eq!(sibling, (1..=refs.len() as u64).map(|k| k * refi).collect::<Vec<_>>());
    assert_eq!(o.counters.refreshes(), 2 * refs.len() as u64);
}

#[test]
fn an_idle_channel_sleeps_and_catches_up_on_refresh() {
    let s = spec("hbm3-6400");
    let a = addr(&s, 0, 0, 0, 0, 5, 0);
    let later = 20_000_000; // 20 us: 32 000 cycles, five tREFI
    let o = run_plan(&s, vec![read(1, a, 32, 0), read(2, a, 32, later)], 4, true);
    // A handful of events, whatever the idle time: nothing ticks while idle.
    assert!(o.events <= 20, "{} events", o.events);
    let refs: Vec<(u64, Command)> = pc0(&o.log)
        .into_iter()
        .filter(|c| matches!(c.1, Command::PreA | Command::RefAb))
        .map(|c| (c.0, c.1))
        .collect();
    // The first refresh finds the row open (PREA at the due cycle, REFab tRP later); the
    // others find everything closed and go at the due cycle.
    assert_eq!(
        refs,
        [
            (6240, Command::PreA),
            (6266, Command::RefAb),
            (12480, Command::RefAb),
            (18720, Command::RefAb),
            (24960, Command::RefAb),
            (31200, Command::RefAb),
        ]
    );
    // The second read then finds the bank closed: a miss, not a hit.
    assert_eq!(o.counters.row_misses, 2);
    assert_eq!(latency(&o, 2, later), 55 * TCK);
    check_log(&s, &o.log).unwrap();
}

#[test]
fn the_refreshes_of_channels_idle_at_the_end_are_counted() {
    let s = spec("hbm3-6400");
    let a = addr(&s, 0, 0, 0, 0, 5, 0);
    // 20 us: five tREFI. Only channel 0 sees traffic; the other 15 sleep throughout.
    let plan = vec![read(1, a, 32, 0), read(2, a, 32, 20_000_000)];
    let o = run_plan(&s, plan.clone(), 4, false);
    assert_eq!(
        o.counters.refreshes(),
        2 * 5,
        "channel 0's two pseudo-channels, caught up by the second read"
    );
    let o = run_plan_to(&s, plan, 4, false, Some(o.end_tick));
    assert_eq!(o.counters.refreshes(), 32 * 5, "every pseudo-channel's five, once finished");
    assert_eq!(o.stats.lookup_counter("mem.refreshes"), Some(32 * 5));
}

#[test]
fn row_hit_cap_and_plain_frfcfs_differ() {
    // Row 5 is open; then one request to row 9 arrives, followed by eight more hits to row 5.
    let run = |scheduler: &str, cap: u32| {
        let s = spec_with("hbm3-6400", |p| {
            p.controller.scheduler = scheduler.into();
            p.controller.row_hit_cap = cap;
        });
        let mut plan = vec![read(0, addr(&s, 0, 0, 0, 0, 5, 0), 32, 0)];
        plan.push(read(1, addr(&s, 0, 0, 0, 0, 9, 0), 32, 100_000));
        for i in 0..8 {
            plan.push(read(2 + i, addr(&s, 0, 0, 0, 0, 5, 1 + i as u32), 32, 100_000));
        }
        let o = run_plan(&s, plan, 64, true);
        check_log(&s, &o.log).unwrap();
        let order: Vec<u64> = o.answers.iter().map(|(r, _)| r.id).collect();
        (order, o.counters)
    };
    // Hits first (cap 16): the conflicting request waits for all eight hits.
    let (order, c) = run("frfcfs_cap", 16);
    assert_eq!(order.last(), Some(&1), "{order:?}");
    assert_eq!(c.row_conflicts, 1);
    // Cap 2: the open row has served one hit (request 0), one more, then the conflict goes.
    let (order, _) = run("frfcfs_cap", 2);
    assert_eq!(order[..3], [0, 2, 1], "{order:?}");
    // Plain FR-FCFS: the oldest ready command wins, so the older conflict closes the row first
    // and the hits pay for it.
    let (order, c) = run("frfcfs", 16);
    assert_eq!(order[..2], [0, 1], "{order:?}");
    assert!(c.row_conflicts >= 2, "{c:?}");
}

#[test]
fn closed_page_policy_auto_precharges() {
    let s = spec_with("hbm3-6400", |p| p.controller.page_policy = "closed".into());
    let plan = (0..6).map(|i| read(i, addr(&s, 0, 0, 0, 0, i as u32, 0), 32, i * 200_000)).collect();
    let o = run_plan(&s, plan, 8, true);
    let cmds = pc0(&o.log);
    assert!(cmds.iter().all(|c| matches!(c.1, Command::Act | Command::RdA)), "{cmds:?}");
    assert_eq!((o.counters.row_misses, o.counters.row_conflicts), (6, 0));
    check_log(&s, &o.log).unwrap();
}

#[test]
fn per_bank_refresh_issues_refpb() {
    let s = spec_with("hbm3-6400", |p| p.controller.refresh = "per_bank".into());
    let o = run_plan(&s, busy_plan(&s, 20_000, 12_000_000), 4096, true);
    check_log(&s, &o.log).unwrap();
    let refpb = o.log.iter().filter(|c| c.cmd == Command::RefPb && c.pseudo_channel == 0).count() as u64;
    // One bank every tREFI / 32 banks = 195 cycles.
    let want = o.end_tick / TCK / (6240 / 32);
    assert!(refpb + 2 >= want && refpb <= want, "{refpb} REFpb, expected about {want}");
    assert_eq!(o.log.iter().filter(|c| c.cmd == Command::RefAb).count(), 0);
}

#[test]
fn an_address_beyond_the_capacity_is_a_fault_naming_it() {
    let s = spec("hbm3-6400");
    let cap = s.capacity_bytes();
    let o = run_plan(&s, vec![read(1, cap - 16, 32, 0), read(2, 64, 32, 1000)], 4, false);
    let f = o.fault.expect("a fault");
    assert_eq!((f.id, f.addr, f.bytes, f.capacity), (1, cap - 16, 32, cap));
    let text = f.to_string();
    assert!(text.contains(&format!("{:#x}", cap - 16)) && text.contains("outside"), "{text}");
    // The faulty request is dropped; the next one is served.
    assert_eq!(o.answers.iter().map(|a| a.0.id).collect::<Vec<_>>(), [2]);
    assert_eq!(o.counters.faults, 1);
    assert_eq!(o.stats.lookup_counter("mem.faults"), Some(1));
    let o = run_plan(&s, vec![read(1, u64::MAX - 4, 32, 0)], 4, false);
    assert_eq!(o.fault.map(|f| f.addr), Some(u64::MAX - 4));
}

#[test]
fn statistics_and_counters_agree() {
    let s = spec("hbm3-6400");
    let plan = (0..200u64).map(|i| read(i, i * 4096 + (i % 3) * 32, 64, i * 2_000)).collect();
    let o = run_plan(&s, plan, 256, false);
    let st = &o.stats;
    let c = &o.counters;
    assert_eq!(st.lookup_counter("mem.reads"), Some(200));
    assert_eq!(st.lookup_counter("mem.bytes_read"), Some(200 * 64));
    assert_eq!(st.lookup_counter("mem.bursts_read"), Some(c.bursts_read));
    assert_eq!(c.bursts_read, 400);
    assert_eq!(st.lookup_counter("mem.row_hits"), Some(c.row_hits));
    assert_eq!(c.row_hits + c.row_misses + c.row_conflicts, 200);
    assert_eq!(st.lookup_counter("mem.activations"), Some(c.activations()));
    assert_eq!(st.lookup_counter("mem.commands.ACT"), Some(c.activations()));
    let served: u64 = (0..32).map(|i| st.lookup_counter(&format!("mem.pc{i:02}.served")).unwrap()).sum();
    assert_eq!(served, 400);
    assert_eq!(c.served.iter().sum::<u64>(), 400);
    assert!(c.imbalance() >= 1.0);
    let h = st.lookup_histogram("mem.read_latency_ps").unwrap();
    assert_eq!(h.len(), 200);
    assert!(h.min() >= 22 * TCK);
    assert!((c.mean_read_latency_ps() - h.mean()).abs() < 0.01 * h.mean());
}

#[test]
fn staggered_refresh_spreads_the_pseudo_channels_over_trefi() {
    let refi = 6240u64;
    for stagger in [false, true] {
        let s = spec_with("hbm3-6400", |p| p.controller.refresh_stagger = stagger);
        // Every pseudo-channel busy for about 12 us (two tREFI) with 32 B reads to bank 0.
        let o = s.organization();
        let mut plan = Vec::new();
        let mut id = 0;
        for t in (0..7_500_000u64).step_by(40_000) {
            for ch in 0..o.channels {
                for pc in 0..o.pseudo_channels {
                    let a = DramAddr {
                        channel: ch,
                        pseudo_channel: pc,
                        rank: 0,
                        bank_group: 0,
                        bank: 0,
                        row: (t / 40_000) as u32 % 64,
                        column: 0,
                    };
                    id += 1;
                    plan.push(read(id, s.mapping().encode(&a).unwrap(), 32, t));
                }
            }
        }
        let out = run_plan(&s, plan, 4096, true);
        check_log(&s, &out.log).unwrap();
        let pcs = s.controllers() as u64;
        // The first REFab of each pseudo-channel.
        let mut first = vec![u64::MAX; pcs as usize];
        for c in out.log.iter().filter(|c| c.cmd == Command::RefAb) {
            let k = (c.channel * o.pseudo_channels + c.pseudo_channel) as usize;
            first[k] = first[k].min(c.cycle);
        }
        for (k, &t) in first.iter().enumerate() {
            let due = if stagger { refi * (k as u64 + 1) / pcs } else { refi };
            // Issued once PREA and tRP allow: within about tRAS + tRP of its due cycle.
            assert!(
                t >= due && t <= due + 45 + 26 + 10,
                "stagger {stagger}: PC {k} first REFab at {t}, due {due}"
            );
        }
        let distinct: std::collections::BTreeSet<u64> = first.iter().map(|t| t / 100).collect();
        if stagger {
            assert!(distinct.len() > pcs as usize / 2, "spread: {first:?}");
        } else {
            assert_eq!(distinct.len(), 1, "all together: {first:?}");
        }
    }
}

#[test]
fn sleeping_pseudo_channels_replay_their_refreshes_in_time() {
    // One 32 B read every 500 ns at random: each pseudo-channel sleeps for tens of
    // microseconds while its channel's other pseudo-channel works. Its owed per-bank refreshes
    // must be replayed when they fell due, merged with its sibling's commands; replayed after
    // them, they were pushed into the present at tRREFD apart and held reads for up to 3.4 us.
    let s = spec("hbm3-h100");
    let mut x = 0x1234_5678_9abc_def1u64;
    let plan: Vec<MemRequest> = (0..400u64)
        .map(|i| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            read(i, (x % s.capacity_bytes()) & !31, 32, i * 500_000)
        })
        .collect();
    let o = run_plan(&s, plan.clone(), 64, true);
    check_log(&s, &o.log).unwrap();
    let worst = plan.iter().map(|r| latency(&o, r.id, r.issued)).max().unwrap();
    // At worst a conflict behind one per-bank refresh: PRE, REFpb (tRFCpb, 200 ns), then ACT
    // and RD, with a row activated just before the refresh fell due (tRAS) wasted.
    assert!(worst < 400_000, "worst read latency {worst} ps");
    // Sleepers are caught up while their sibling works, so the two pseudo-channels of a
    // channel are refreshed alike (before, a sleeper's backlog was cut short).
    let mut per_pc = std::collections::HashMap::new();
    for c in o.log.iter().filter(|c| c.cmd == Command::RefPb) {
        *per_pc.entry((c.channel, c.pseudo_channel)).or_insert(0i64) += 1;
    }
    for ch in 0..80 {
        let (a, b) = (per_pc.get(&(ch, 0)).copied().unwrap_or(0), per_pc.get(&(ch, 1)).copied().unwrap_or(0));
        assert!((a - b).abs() <= 1, "channel {ch}: {a} and {b} REFpb");
    }
}

#[test]
fn a_long_sleep_skips_whole_refresh_periods_exactly() {
    // Reads, then 300 us of sleep (about 75 refresh intervals), reads again, then 1 ms. With the
    // command log on, every owed refresh is replayed one by one; without it, a channel that has
    // only refreshed for two periods skips whole periods at once. Everything observable must
    // be the same: every answer's tick, every command count, every statistic but the skips.
    for name in ["hbm3-6400", "hbm3-h100", "hbm2", "ddr5-4800"] {
        let s = spec(name);
        let mut plan = Vec::new();
        for (k, at) in [0u64, 300_000_000, 1_300_000_000].into_iter().enumerate() {
            for i in 0..6u64 {
                let o = s.organization();
                let (pc, bg) = (i as u32 % o.pseudo_channels, i as u32 % o.bank_groups);
                let a = addr(&s, pc, 0, bg, 0, 5 + i as u32, 0);
                plan.push(read(10 * k as u64 + i, a, 64, at + 1_000 * i));
            }
        }
        let replayed = run_plan(&s, plan.clone(), 16, true);
        let skipped = run_plan(&s, plan, 16, false);
        assert_eq!(replayed.answers, skipped.answers, "{name}");
        assert_eq!(replayed.counters.refresh_periods_skipped, 0, "{name}: the log replays all");
        assert!(
            skipped.counters.refresh_periods_skipped > 50,
            "{name}: {}",
            skipped.counters.refresh_periods_skipped
        );
        let without_skips = |c: &mem_model::dram::DramCounters| mem_model::dram::DramCounters {
            refresh_periods_skipped: 0,
            ..c.clone()
        };
        assert_eq!(without_skips(&replayed.counters), without_skips(&skipped.counters), "{name}");
        assert!(replayed.counters.refreshes() > 100, "{name}: {}", replayed.counters.refreshes());
        assert_eq!(replayed.stats.to_json(), skipped.stats.to_json(), "{name}");
    }
}

#[test]
fn a_read_of_bursts_still_queued_to_be_written_is_answered_from_the_write_queue() {
    let s = spec("hbm3-6400");
    let (a, b) = (addr(&s, 0, 0, 0, 0, 5, 0), addr(&s, 0, 0, 1, 0, 5, 0));
    // A 64 B write, then reads of its second half, of all of it, and of 64 B it overlaps by
    // half (32 B bursts), all before its WR can issue (ACT + tRCD after it arrives).
    let plan = vec![
        MemRequest::write(1, a, 64, 0),
        read(2, a + 32, 32, 2 * TCK),
        read(3, a, 64, 3 * TCK),
        read(4, a + 32, 64, 4 * TCK),
        read(5, b, 64, 5 * TCK),
    ];
    let o = run_plan(&s, plan, 16, true);
    assert_eq!(o.counters.forwarded_reads, 2);
    assert_eq!(o.counters.forwarded_row_accesses, 2);
    assert_eq!(o.counters.reads, 4);
    // Forwarded: one link hop each way.
    assert_eq!(latency(&o, 2, 2 * TCK), 2 * TCK);
    assert_eq!(latency(&o, 3, 3 * TCK), 2 * TCK);
    // The others go to the device: one RD per burst of theirs, the write's two WRs.
    let count = |c: Command| o.log.iter().filter(|x| x.cmd == c).count();
    assert_eq!((count(Command::Rd), count(Command::Wr)), (4, 2));
    assert!(latency(&o, 4, 4 * TCK) > 20 * TCK && latency(&o, 5, 5 * TCK) > 20 * TCK);
    // Once written, the bursts are read from the device again.
    let late = vec![MemRequest::write(1, a, 64, 0), read(2, a, 64, 2000 * TCK)];
    let o = run_plan(&s, late, 16, true);
    assert_eq!(o.counters.forwarded_reads, 0);
}

#[test]
fn same_tick_requests_of_two_ports_are_taken_in_port_order_whatever_the_delivery_order() {
    // Two reads to one bank, different rows, sent in the same tick from ports 0 and 1: the one
    // queued first is older and opens its row first. Which one that is depends on the memory
    // cycle (the starting port rotates), never on which requester the engine ran first.
    let s = spec("hbm3-6400");
    let plans = |at: u64| {
        [vec![read(1, addr(&s, 0, 0, 0, 0, 3, 0), 64, at)], vec![read(2, addr(&s, 0, 0, 0, 0, 9, 0), 64, at)]]
    };
    let period = s.clock().edge(1);
    let mut firsts = Vec::new();
    for at in [0, period] {
        let [a, b] = run_two_ports(&s, plans(at), false);
        let [a2, b2] = run_two_ports(&s, plans(at), true);
        assert_eq!((&a, &b), (&a2, &b2), "delivery order changed the outcome (sent at {at} ps)");
        firsts.push(if a[0].1 < b[0].1 { 0 } else { 1 });
    }
    assert_ne!(firsts[0], firsts[1], "the first port taken rotates with the cycle");
}
