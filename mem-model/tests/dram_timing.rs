//! Tight timing gates: every constraint of the HBM3 preset, driven on the device directly.
//!
//! For each constraint row, each (preceding, following) command pair and each placement of the
//! following command relative to the preceding one (same bank, another bank of the bank group,
//! another bank group, another stack id, another pseudo-channel), the test issues the preceding
//! command (after whatever setup the row state needs), then asks for the following command's
//! bound and checks that the command is illegal one cycle before it and legal on it. The bound
//! must equal what the independent checker derives from the table; and every row of the table
//! must be the binding one in at least one scenario, so no constraint goes untested.

#[path = "dram_helpers.rs"]
mod helpers;

use helpers::{spec, spec_with};
use mem_model::dram::{Command, Device, DramAddr, DramSpec, Level, Oracle};

/// The device and the independent checker, fed the same commands.
struct Pair<'a> {
    dev: Device,
    oracle: Oracle<'a>,
    last: u64,
}

impl<'a> Pair<'a> {
    fn new(spec: &'a DramSpec) -> Self {
        Pair { dev: Device::new(spec), oracle: Oracle::new(spec), last: 0 }
    }

    /// Issues `cmd` at the first legal cycle at or after `from`; returns it.
    fn asap(&mut self, cmd: Command, a: &DramAddr, from: u64) -> u64 {
        let e = self.dev.earliest(cmd, a);
        assert_eq!(e, self.oracle.earliest(cmd, a), "{cmd} at {a:?}: device and checker disagree");
        let t = e.max(from);
        self.dev.issue(cmd, a, t).unwrap_or_else(|err| panic!("{err}"));
        self.oracle.check_and_push(cmd, a, t).unwrap_or_else(|err| panic!("{cmd} at {t}: {err}"));
        self.last = self.last.max(t);
        t
    }

    /// Issues whatever the row state needs before `cmd` can go to `a`.
    fn prepare(&mut self, cmd: Command, a: &DramAddr) {
        let open = self.dev.open_row(a);
        match cmd {
            Command::Act | Command::RefPb if open.is_some() => {
                self.asap(Command::Pre, a, self.last);
            }
            Command::Pre if open.is_none() => {
                self.asap(Command::Act, a, self.last);
            }
            c if c.is_column() => {
                if open.is_some() && open != Some(a.row) {
                    self.asap(Command::Pre, a, self.last);
                }
                if self.dev.open_row(a) != Some(a.row) {
                    self.asap(Command::Act, a, self.last);
                }
            }
            Command::RefAb if self.dev.state_allows(cmd, a).is_err() => {
                self.asap(Command::PreA, a, self.last);
            }
            _ => {}
        }
    }
}

/// Coordinates that first differ from `base` at `level` (`None`: identical).
fn diverge(spec: &DramSpec, base: DramAddr, level: Option<Level>) -> Option<DramAddr> {
    let o = spec.organization();
    let mut a = base;
    match level {
        None => {}
        Some(Level::Channel) => return None,
        Some(Level::PseudoChannel) if o.pseudo_channels > 1 => a.pseudo_channel = 1,
        Some(Level::Rank) if o.ranks > 1 => a.rank = 1,
        Some(Level::BankGroup) if o.bank_groups > 1 => a.bank_group = 1,
        Some(Level::Bank) if o.banks > 1 => a.bank = 1,
        Some(_) => return None,
    }
    Some(a)
}

/// Runs every scenario of `spec`; returns, per constraint, whether it was binding somewhere.
fn sweep(spec: &DramSpec) -> (Vec<bool>, usize) {
    let mut binding = vec![false; spec.constraints().len()];
    let mut scenarios = 0;
    let base = DramAddr { channel: 0, pseudo_channel: 0, rank: 0, bank_group: 0, bank: 0, row: 5, column: 3 };
    let placements =
        [None, Some(Level::Bank), Some(Level::BankGroup), Some(Level::Rank), Some(Level::PseudoChannel)];
    for (k, c) in spec.constraints().iter().enumerate() {
        for p in c.preceding.iter() {
            for f in c.following.iter() {
                for place in placements {
                    let Some(fa) = diverge(spec, base, place) else { continue };
                    let pa = base;
                    let mut pair = Pair::new(spec);
                    // Setup: open (or close) what the following command needs, well before.
                    if fa != pa {
                        pair.prepare(f, &fa);
                    }
                    pair.prepare(p, &pa);
                    let start = (pair.last + 1000).max(10_000);
                    if c.window > 1 {
                        // The window's earlier commands: ACTs to other banks of the same node.
                        assert_eq!(p, Command::Act, "window constraints are ACT windows here");
                        let o = spec.organization();
                        let mut extra = 0;
                        'banks: for rank in 0..o.ranks {
                            for bg in 0..o.bank_groups {
                                for bank in 0..o.banks {
                                    let a = DramAddr { rank, bank_group: bg, bank, ..pa };
                                    let clash = |x: &DramAddr| {
                                        x.rank == a.rank && x.bank_group == a.bank_group && x.bank == a.bank
                                    };
                                    if extra + 1 == c.window || clash(&pa) || clash(&fa) {
                                        if extra + 1 == c.window {
                                            break 'banks;
                                        }
                                        continue;
                                    }
                                    pair.asap(Command::Act, &a, start);
                                    extra += 1;
                                }
                            }
                        }
                    }
                    pair.asap(p, &pa, start);
                    pair.prepare(f, &fa);
                    let bound = pair.dev.earliest(f, &fa);
                    let oracle_bound = pair.oracle.earliest(f, &fa);
                    assert_eq!(bound, oracle_bound, "constraint {k}: {p} then {f} at {place:?}");
                    pair.dev.state_allows(f, &fa).unwrap_or_else(|e| panic!("constraint {k}: {e}"));
                    if bound > 0 {
                        assert!(
                            !pair.dev.can_issue(f, &fa, bound - 1),
                            "constraint {k}: {f} legal before {bound}"
                        );
                        let mut o = pair.oracle.clone();
                        assert!(
                            o.check_and_push(f, &fa, bound - 1).is_err(),
                            "checker: {f} legal before {bound}"
                        );
                    }
                    assert!(pair.dev.can_issue(f, &fa, bound), "constraint {k}: {f} illegal at {bound}");
                    pair.oracle.clone().check_and_push(f, &fa, bound).unwrap();
                    if pair.oracle.requirement(k, f, &fa, 0) == bound {
                        binding[k] = true;
                    }
                    scenarios += 1;
                }
            }
        }
    }
    (binding, scenarios)
}

#[test]
fn every_hbm3_constraint_is_tight() {
    let s = spec("hbm3-6400");
    let (binding, scenarios) = sweep(&s);
    assert!(scenarios > 500, "only {scenarios} scenarios");
    let missing: Vec<String> = binding
        .iter()
        .enumerate()
        .filter(|(_, b)| !**b)
        .map(|(k, _)| {
            let c = &s.constraints()[k];
            format!("#{k} {} {} -> {} {}", c.level, c.preceding, c.following, c.expr)
        })
        .collect();
    assert!(missing.is_empty(), "never binding: {missing:#?}");
}

#[test]
fn device_and_checker_agree_on_every_preset() {
    for name in helpers::PRESETS {
        let (_, scenarios) = sweep(&spec(name));
        assert!(scenarios > 100, "{name}: {scenarios}");
    }
    // Per-rank refresh scope (DDR5) and PREA/REFab broadcasts are covered above; a per-bank
    // variant of HBM3 as well.
    let (_, n) = sweep(&spec_with("hbm3-6400", |p| p.controller.refresh = "per_bank".into()));
    assert!(n > 500);
}

fn at(rank: u32, bg: u32, bank: u32, row: u32) -> DramAddr {
    DramAddr { channel: 0, pseudo_channel: 0, rank, bank_group: bg, bank, row, column: 0 }
}

#[test]
fn hbm3_numbers_by_hand() {
    let s = spec("hbm3-6400");
    let mut d = Device::new(&s);
    let a = at(0, 0, 0, 7);
    // ACT -> RD on the same bank: nRCDRD = 31.
    d.issue(Command::Act, &a, 100).unwrap();
    assert!(!d.can_issue(Command::Rd, &a, 130));
    assert!(d.can_issue(Command::Rd, &a, 131));
    assert!(d.issue(Command::Rd, &a, 130).is_err());
    // ACT -> WR: nRCDWR = 15.
    assert_eq!(d.earliest(Command::Wr, &a), 115);
    // RD -> RD: same bank group nCCDL = 4, other bank group nCCDS = 2, other stack id nCCDR = 3.
    let other_bg = at(0, 1, 0, 7);
    let other_sid = at(1, 0, 0, 7);
    assert_eq!(d.earliest(Command::Act, &other_bg), 104, "tRRD_S = 4");
    d.issue(Command::Act, &other_bg, 104).unwrap();
    d.issue(Command::Act, &other_sid, 108).unwrap();
    d.issue(Command::Rd, &a, 131).unwrap();
    assert_eq!(d.earliest(Command::Rd, &a), 135);
    assert_eq!(d.earliest(Command::Rd, &at(0, 0, 1, 7)), 135, "same bank group: nCCDL");
    assert_eq!(d.earliest(Command::Rd, &other_bg), 135, "nRCDRD from its ACT at 104 (nCCDS alone: 133)");
    assert_eq!(d.earliest(Command::Rd, &other_sid), 139, "nRCDRD from its ACT at 108");
    let mut e = Device::new(&s);
    for (i, x) in [a, other_bg, other_sid].iter().enumerate() {
        e.issue(Command::Act, x, 8 * i as u64).unwrap();
    }
    e.issue(Command::Rd, &a, 100).unwrap();
    assert_eq!(e.earliest(Command::Rd, &other_bg), 102, "nCCDS");
    assert_eq!(e.earliest(Command::Rd, &other_sid), 103, "nCCDR");
    assert_eq!(e.earliest(Command::Wr, &other_bg), 120, "nRTW");
    // RD -> PRE nRTP = 9, but ACT -> PRE nRAS = 45 binds: 145.
    assert_eq!(d.earliest(Command::Pre, &a), 145);
    // A row command and a column command in the same cycle: separate buses.
    d.issue(Command::Rd, &other_bg, 140).unwrap();
    assert!(d.can_issue(Command::Act, &at(0, 2, 0, 1), 140));
    // But not two column commands.
    assert!(!d.can_issue(Command::Rd, &at(1, 0, 0, 7), 140));
}

#[test]
fn hbm3_four_activation_window() {
    let s = spec("hbm3-6400");
    let mut d = Device::new(&s);
    // Four ACTs to different bank groups, as fast as tRRD_S = 4 allows: 0, 4, 8, 12.
    for (i, bg) in (0..4).enumerate() {
        let t = d.earliest(Command::Act, &at(0, bg, 0, 1));
        assert_eq!(t, 4 * i as u64);
        d.issue(Command::Act, &at(0, bg, 0, 1), t).unwrap();
    }
    // The fifth waits for tFAW = 24 after the first, not tRRD_S after the fourth (16).
    let fifth = at(1, 0, 1, 1);
    assert!(!d.can_issue(Command::Act, &fifth, 23));
    assert!(d.can_issue(Command::Act, &fifth, 24));
}

#[test]
fn hbm3_refresh_blocks_the_pseudo_channel_for_trfc() {
    let s = spec("hbm3-6400");
    let mut d = Device::new(&s);
    d.issue(Command::RefAb, &at(0, 0, 0, 0), 1000).unwrap();
    for a in [at(0, 0, 0, 1), at(1, 3, 3, 1)] {
        assert!(!d.can_issue(Command::Act, &a, 1559));
        assert!(d.can_issue(Command::Act, &a, 1560), "nRFC = 560");
    }
    // The other pseudo-channel is not blocked (beyond the shared row bus).
    let other = DramAddr { pseudo_channel: 1, ..at(0, 0, 0, 1) };
    assert!(d.can_issue(Command::Act, &other, 1001));
    // REFab needs every bank of the pseudo-channel closed.
    d.issue(Command::Act, &at(1, 2, 3, 9), 2000).unwrap();
    assert!(d.state_allows(Command::RefAb, &at(0, 0, 0, 0)).is_err());
    d.issue(Command::PreA, &at(0, 0, 0, 0), 2045).unwrap();
    assert_eq!(d.earliest(Command::RefAb, &at(0, 0, 0, 0)), 2072, "nRC after the ACT binds over nRP");
}

#[test]
fn ddr5_has_one_command_bus() {
    let s = spec("ddr5-4800");
    let mut d = Device::new(&s);
    let a = at(0, 0, 0, 1);
    d.issue(Command::Act, &a, 0).unwrap();
    d.issue(Command::Rd, &a, 39).unwrap();
    // Unlike HBM, no ACT in the RD's cycle, nor in the next (RD is a 2-cycle command).
    assert!(!d.can_issue(Command::Act, &at(0, 1, 0, 1), 40));
    assert!(d.can_issue(Command::Act, &at(0, 1, 0, 1), 41));
}
