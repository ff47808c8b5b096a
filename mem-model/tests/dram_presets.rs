//! The preset files: they parse, resolve and give the documented figures; and bad input gives a
//! clear error naming the bad value.

#[path = "dram_helpers.rs"]
mod helpers;

use helpers::{PRESETS, preset, preset_text, spec};
use mem_model::dram::{DramError, DramPreset, DramSpec, Level};

#[test]
fn every_preset_resolves() {
    for name in PRESETS {
        let s = spec(name);
        assert!(!s.constraints().is_empty(), "{name}");
        assert_eq!(s.read_latency(), s.timing("nCL").unwrap() + s.timing("nBL").unwrap(), "{name}");
    }
}

fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * b.abs()
}

#[test]
fn headline_figures() {
    // (preset, controllers, capacity GiB, peak B/s, tCK ps, burst B)
    let cases: [(&str, u32, u64, f64, u64, u64); 6] = [
        ("hbm2", 8, 4, 256e9, 1000, 64),
        ("hbm2e", 16, 16, 409.6e9, 625, 32),
        ("hbm3-6400", 32, 16, 819.2e9, 625, 32),
        ("hbm3-h100", 160, 80, 3.3472e12, 764, 32),
        ("hbm3e-h200", 192, 144, 4.8e12, 640, 32),
        ("ddr5-4800", 2, 16, 38.4e9, 416, 64),
    ];
    for (name, controllers, gib, peak, tck, burst) in cases {
        let s = spec(name);
        assert_eq!(s.controllers(), controllers, "{name}");
        assert_eq!(s.capacity_bytes(), gib << 30, "{name}");
        assert!(
            close(s.peak_bandwidth().bytes_per_second() as f64, peak, 1e-9),
            "{name}: {}",
            s.peak_bandwidth()
        );
        assert_eq!(s.tck().ps(), tck, "{name}");
        assert_eq!(s.burst_bytes(), burst, "{name}");
        assert_eq!(s.channels() * s.pseudo_channels(), controllers);
    }
    // REFERENCE.md section 3: the H100's 3.35 TB/s, the H200's 4.8 TB/s.
    assert!(close(spec("hbm3-h100").peak_bandwidth().bytes_per_second() as f64, 3.35e12, 0.002));
    assert_eq!(spec("hbm3-6400").peak_bandwidth_per_controller().bytes_per_second(), 25_600_000_000);
}

#[test]
fn hbm3_timings_are_the_reference_ones() {
    // REFERENCE.md section 3, in CK.
    let s = spec("hbm3-6400");
    let want = [
        ("nBL", 2),
        ("nCL", 20),
        ("nRCDRD", 31),
        ("nRCDWR", 15),
        ("nRP", 26),
        ("nRAS", 45),
        ("nRC", 72),
        ("nWR", 33),
        ("nRTP", 9),
        ("nCWL", 10),
        ("nCCDS", 2),
        ("nCCDL", 4),
        ("nCCDR", 3),
        ("nRRDS", 4),
        ("nRRDL", 5),
        ("nFAW", 24),
        ("nWTRS", 7),
        ("nWTRL", 10),
        ("nRTW", 20),
        ("nRFCpb", 320),
        ("nREFI", 6240),
        ("nPPD", 2),
        ("nRFC", 560),
    ];
    for (name, v) in want {
        assert_eq!(s.timing(name), Some(v), "{name}");
    }
    // (derived) unloaded row-conflict latency nRP + nRCD + nCL = 77 CK = 48.125 ns.
    assert_eq!(s.cycles_to_ps(77), 48_125);
    assert_eq!(s.scope(mem_model::dram::Command::RefAb), Level::PseudoChannel);
    assert_eq!(s.organization().banks_per_pseudo_channel(), 32);
}

/// The H200's 24 GB HBM3E stacks are 8-high (Micron: "HBM3E 8-high 24GB ... will ship in the
/// NVIDIA H200"): two stack ids of 24 Gb dies, 24,576 rows a bank.
#[test]
fn h200_stacks_are_eight_high() {
    let s = spec("hbm3e-h200");
    let o = s.organization();
    assert_eq!((o.stacks, o.ranks, o.rows), (6, 2, 24_576));
    assert_eq!(s.capacity_bytes() / u64::from(o.stacks), 24 << 30);
}

fn err(edit: impl FnOnce(&mut DramPreset)) -> String {
    let mut p = preset("hbm3-6400");
    edit(&mut p);
    match DramSpec::from_preset(p) {
        Ok(_) => panic!("the edited preset was accepted"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn unknown_mapping_lists_the_valid_ones() {
    let e = err(|p| p.controller.mapping = "RoChBa".into());
    assert_eq!(
        e,
        "unknown address mapping \"RoChBa\"; valid mappings: RoBaRaCoCh, RoCoBaRaCh, ChRaBaRoCo, RoRaBaCoCh, RoRaBaChCo, RoRaCoBaCh"
    );
}

#[test]
fn timings_that_nothing_uses_are_listed_for_a_warning() {
    for name in PRESETS {
        assert!(spec(name).unused_timings().is_empty(), "{name}: {:?}", spec(name).unused_timings());
    }
    let mut p = preset("hbm3-6400");
    p.timing.insert("nRCDR".into(), 31);
    assert_eq!(DramSpec::from_preset(p).unwrap().unused_timings(), ["nRCDR"]);
}

#[test]
fn used_timings_of_zero_cycles_are_listed_for_a_warning() {
    for name in PRESETS {
        assert_eq!(spec(name).zero_timings().count(), 0, "{name}");
        assert_eq!(spec(name).timing_warnings().count(), 0, "{name}");
    }
    let mut p = preset("hbm3-6400");
    p.timing.insert("nRP".into(), 0);
    // An unused timing of 0 is reported as unused only.
    p.timing.insert("nRCDR".into(), 0);
    let s = DramSpec::from_preset(p).unwrap();
    assert_eq!(s.zero_timings().collect::<Vec<_>>(), ["nRP"]);
    let warnings: Vec<String> = s.timing_warnings().collect();
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(warnings[1].starts_with("timing.nRP is 0 cycles"), "{warnings:?}");
}

#[test]
fn unknown_timing_in_a_constraint_is_named() {
    let e = err(|p| p.constraints[5].latency = "nCWL + nBL + nWTRX".into());
    assert!(e.starts_with("constraint 5: unknown timing \"nWTRX\" in \"nCWL + nBL + nWTRX\""), "{e}");
    assert!(e.contains("nWTRS"), "the known names are listed: {e}");
    let e = err(|p| p.latency.read = "nCL + nBurst".into());
    assert!(e.starts_with("latency.read: unknown timing \"nBurst\""), "{e}");
}

#[test]
fn other_bad_names_and_values() {
    type Edit = Box<dyn FnOnce(&mut DramPreset)>;
    let cases: Vec<(Edit, &str)> = vec![
        (
            Box::new(|p| p.constraints[0].preceding = vec!["ACTIVATE".into()]),
            "constraint 0: unknown command \"ACTIVATE\"; valid commands: ACT, PRE, PREA, RD, WR, RDA, WRA, REFab, REFpb",
        ),
        (
            Box::new(|p| p.constraints[3].level = "sid".into()),
            "constraint 3: unknown level \"sid\"; valid levels: channel, pseudo_channel, rank, bank_group, bank",
        ),
        (Box::new(|p| p.controller.read_queue = 0), "controller.read_queue must be above zero"),
        (Box::new(|p| p.controller.write_queue = 0), "controller.write_queue must be above zero"),
        (Box::new(|p| p.organization.banks = 0), "organization.banks must be above zero"),
        (
            Box::new(|p| p.controller.write_low_watermark = 60),
            "need low < high <= write_queue, got 60 / 48 / 64",
        ),
        (
            Box::new(|p| p.controller.scheduler = "fifo".into()),
            "controller.scheduler: unknown value \"fifo\"; valid values: frfcfs, frfcfs_cap",
        ),
        (
            Box::new(|p| p.controller.page_policy = "adaptive".into()),
            "controller.page_policy: unknown value \"adaptive\"",
        ),
        (
            Box::new(|p| p.controller.refresh = "sometimes".into()),
            "controller.refresh: unknown value \"sometimes\"",
        ),
        (
            Box::new(|p| p.controller.refresh_level = "bank".into()),
            "the all-bank scope must be pseudo_channel or rank",
        ),
        (
            Box::new(|p| p.constraints[0].latency = "nBL - nCL".into()),
            "constraint 0: bad expression \"nBL - nCL\": its value -18 is not a cycle count",
        ),
        (Box::new(|p| p.constraints[0].latency = "nBL +".into()), "constraint 0: bad expression \"nBL +\""),
        // Timings beyond a second once overflowed the picosecond clock into a "deadlock".
        (
            Box::new(|p| {
                p.timing.insert("nCL".into(), 29_514_790_517_935_282);
            }),
            "timing.nCL: 29514790517935282 cycles is more than 1 s at 1.6GHz",
        ),
        (Box::new(|p| p.constraints[0].latency = "nREFI * 1000000".into()), "cycles is more than 1 s"),
        (
            Box::new(|p| {
                p.timing.insert("nBL".into(), 4);
            }),
            "timing.nBL: 4 cycles, but a burst of 8 transfers at 4 per clock takes 2",
        ),
        (
            Box::new(|p| p.controller.interleave = sim_core::ByteSize::from_bytes(48)),
            "controller.interleave: 48B must be a positive multiple of the 32 B burst",
        ),
        (
            Box::new(|p| p.controller.interleave = sim_core::ByteSize::from_bytes(96)),
            "must divide the 32 bursts of a row",
        ),
        (
            Box::new(|p| {
                p.constraints[0].level = "channel".into();
                p.constraints[0].sibling = true;
            }),
            "a sibling constraint needs a level below channel",
        ),
        (
            Box::new(|p| {
                p.constraints[0].level = "bank".into();
                p.constraints[0].preceding = vec!["PREA".into()];
                p.constraints[0].window = 2;
            }),
            "a window constraint at bank needs commands that address single banks",
        ),
        (Box::new(|p| p.constraints[0].window = 0), "window 0 must be between 1 and 16"),
        (
            Box::new(|p| p.constraints[0].following = vec![]),
            "preceding and following must each name at least one command",
        ),
        (
            Box::new(|p| p.organization.ranks = 9),
            "144 banks per pseudo-channel; the controller supports at most 128",
        ),
        (
            Box::new(|p| p.clock.data_rate = sim_core::TransferRate::from_per_second(6_400_000_001)),
            "is not a whole number of Hz",
        ),
    ];
    for (edit, want) in cases {
        let e = err(edit);
        assert!(e.contains(want), "got: {e}\nwanted: {want}");
    }
}

#[test]
fn the_file_format_refuses_unknown_keys_and_bare_numbers() {
    let text = preset_text("hbm3-6400");
    let bad = text.replace("xor_bank = false", "xor_bank = false\nxor_banks = true");
    let e = toml::from_str::<DramPreset>(&bad).unwrap_err().to_string();
    assert!(e.contains("unknown field `xor_banks`"), "{e}");
    let bad = text.replace("data_rate = \"6400MT/s\"", "data_rate = 6400");
    let e = toml::from_str::<DramPreset>(&bad).unwrap_err().to_string();
    assert!(e.contains("missing unit in 6400: expected a transfer rate"), "{e}");
    let bad = text.replace("latency = \"nRCDRD\"", "latency = 31");
    assert!(toml::from_str::<DramPreset>(&bad).is_err());
}

#[test]
fn zero_sized_queue_through_the_error_type() {
    let mut p = preset("hbm3-6400");
    p.controller.read_queue = 0;
    assert_eq!(
        DramSpec::from_preset(p).unwrap_err(),
        DramError::Zero { what: "controller.read_queue".into() }
    );
}

mod robustness {
    use super::helpers::{preset, run_plan};
    use mem_model::MemRequest;
    use mem_model::dram::{DramSpec, check_log};
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

        /// Odd but well-typed presets either resolve or fail with an error; a resolved one
        /// builds a DRAM that serves requests legally.
        #[test]
        fn odd_presets_never_panic(
            counts in proptest::collection::vec(1u32..6, 6),
            rows in 1u32..70_000,
            timing_scale in 0u64..3,
            queues in (1u32..10, 1u32..10, 0u32..10, 0u32..10),
            interleave in 0u64..5,
            ddr5 in any::<bool>(),
            xor in any::<bool>(),
            hash in any::<bool>(),
            seed in any::<u64>(),
        ) {
            let mut p = preset(if ddr5 { "ddr5-4800" } else { "hbm3-6400" });
            let o = &mut p.organization;
            o.stacks = counts[0].min(2);
            o.channels = counts[1];
            o.pseudo_channels = counts[2];
            o.ranks = counts[3];
            o.bank_groups = counts[4];
            o.banks = counts[5];
            o.rows = rows;
            for (k, v) in p.timing.iter_mut() {
                if k != "nBL" {
                    *v = match timing_scale { 0 => *v, 1 => *v / 3, _ => *v * 2 };
                }
            }
            let c = &mut p.controller;
            c.read_queue = queues.0;
            c.write_queue = queues.1;
            c.write_high_watermark = 1 + queues.3 % queues.1;
            c.write_low_watermark = queues.2 % c.write_high_watermark;
            c.interleave = sim_core::ByteSize::from_bytes(32 << interleave);
            c.xor_bank = xor;
            c.channel_hash = hash;
            let spec = match DramSpec::from_preset(p) {
                Ok(s) => s,
                // Only what the model cannot hold may be refused (an interleave wider than a
                // row, too many banks, a latency scaled below zero); the message says which.
                Err(e) => {
                    let text = e.to_string();
                    let known = ["interleave", "banks per pseudo-channel", "bad expression", "xor_bank"];
                    prop_assert!(known.iter().any(|k| text.contains(k)), "{}", text);
                    return Ok(());
                }
            };
            let mut x = seed | 1;
            let plan: Vec<MemRequest> = (0..40u64).map(|i| {
                x ^= x << 13; x ^= x >> 7; x ^= x << 17;
                let addr = x % spec.capacity_bytes();
                if x % 3 == 0 { MemRequest::write(i, addr, 64, i * 3_000) } else { MemRequest::read(i, addr, 64, i * 3_000) }
            }).collect();
            let out = run_plan(&spec, plan, 64, true);
            // Requests that run past the end of the memory are faults; the rest are answered.
            prop_assert_eq!(out.answers.len() as u64 + out.counters.faults, 40);
            prop_assert!(check_log(&spec, &out.log).is_ok());
        }
    }
}
