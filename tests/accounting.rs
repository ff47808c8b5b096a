//! The top-level accounting: sim time, bandwidth, latency, speedups, power and
//! the system builder, each against README.md's column definitions and "Power and energy".

#[allow(dead_code)] // this suite needs only some of the shared helpers
mod common;

use common::{
    bypassing_llc, close, configs, edit_file, energy_part, load, measure_plan, plan, run_results,
    small_experiment, sum_over, temp_dir,
};
use dae_sim::experiment::{Measured, SystemPlan};
use dae_sim::power::EnergyReport;
use serde_json::Value;

// ---------------------------------------------------------------------------------------------
// sim time: the launch overhead is added once, and only once.

#[test]
fn launch_overhead_is_added_once_to_time_and_static_energy() {
    let (_d, exp) = load("rev-launch", "", |t| t);
    let SystemPlan::Dae(sys) = plan(&exp, "dae") else { panic!() };
    let mut none = sys.clone();
    none.launch_overhead = 0;
    let mut two = sys.clone();
    two.launch_overhead = 2_000_000;
    let a = measure_plan(&exp, &SystemPlan::Dae(none));
    let b = measure_plan(&exp, &SystemPlan::Dae(two));
    assert_eq!(b.time - a.time, 2_000_000, "launch overhead added exactly once");
    assert_eq!(a.bytes, b.bytes);
    // The static energy grows by the chip's static power over the 2 us, nothing else changes.
    let (ea, eb) = (a.energy.as_ref().unwrap(), b.energy.as_ref().unwrap());
    assert!(close(eb.seconds - ea.seconds, 2e-6));
    let p = sys.power.as_ref().unwrap();
    let static_w = 4.0 * p.core.static_w
        + 4.0 * p.access_unit.unwrap().static_w
        + 4.0 * (p.caches.l1d.unwrap().static_w + p.caches.l2.unwrap().static_w)
        + 4.0 * p.caches.llc.unwrap().static_w
        + p.dram.background_w(5);
    let grew = eb.static_j() - ea.static_j();
    assert!(close(grew, static_w * 2e-6), "static energy grew {grew} J, expected {} J", static_w * 2e-6);
    let dynamic = |e: &EnergyReport| e.total_j() - e.static_j();
    assert!(close(dynamic(ea), dynamic(eb)), "dynamic energy does not depend on the launch");
}

// ---------------------------------------------------------------------------------------------
// results.json: GB/s, % peak, lookups/s, power, nJ/lookup, perf/W, speedups and geomeans.

/// The small experiment with two workloads (so geomeans are over two) run by the binary.
fn two_workload_results(tag: &str) -> Value {
    let dir = temp_dir(tag);
    let cfg = small_experiment(&dir, "");
    let wl = configs().join("workloads/emb-small.toml");
    edit_file(&cfg, |t| {
        t.replace(
            "[report]",
            &format!(
                "[[workload]]\ninclude = \"{}\"\nname = \"emb-b\"\nbatch = 24\n\n[report]",
                wl.display()
            ),
        )
    });
    run_results(&cfg, &dir.join("out"))
}

#[test]
fn results_json_columns_follow_their_definitions() {
    let v = two_workload_results("rev-columns");
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 6);
    let find = |s: &str, w: &str| runs.iter().find(|r| r["system"] == s && r["workload"] == w).unwrap();
    for r in runs {
        let t = r["sim_time_ps"].as_f64().unwrap() * 1e-12;
        let lookups = r["lookups"].as_f64().unwrap();
        let bytes = r["bytes"].as_f64().unwrap();
        assert!(close(r["lookups_per_second"].as_f64().unwrap(), lookups / t));
        assert!(close(r["achieved_gb_per_s"].as_f64().unwrap(), bytes / t / 1e9));
        if r["model"] == "cycle-level" {
            // Bytes moved by the memory: its reads and writes.
            let mem = &r["stats"]["mem"];
            let moved = mem["bytes_read"].as_u64().unwrap() + mem["bytes_written"].as_u64().unwrap();
            assert_eq!(bytes as u64, moved, "{}", r["system"]);
            // HBM3 H100 preset: 3.35 TB/s (from the preset, within its rounding).
            let peak = bytes / t / r["peak_bandwidth_share"].as_f64().unwrap();
            assert!((peak / 3.35e12 - 1.0).abs() < 0.01, "peak {peak}");
        }
        // Power: energy over time; nJ/lookup: energy over lookups; perf/W: lookups/s over W.
        let p = &r["power"];
        let e = p["energy_j"].as_f64().unwrap();
        let w = p["average_power_w"].as_f64().unwrap();
        assert!(close(w, e / t), "{}: {w} W vs {} J / {t} s", r["system"], e);
        let comps: f64 =
            p["components"].as_object().unwrap().values().map(|c| c["total_j"].as_f64().unwrap()).sum();
        assert!(close(comps, e));
        assert!(close(p["energy_per_lookup_nj"].as_f64().unwrap(), e * 1e9 / lookups));
        assert!(close(r["lookups_per_second_per_watt"].as_f64().unwrap(), lookups / t / w));
        // Speedup and perf/W over the baseline on the same workload.
        let b = find("h100", r["workload"].as_str().unwrap());
        let bt = b["sim_time_ps"].as_f64().unwrap();
        assert!(close(r["speedup_vs_baseline"].as_f64().unwrap(), bt / r["sim_time_ps"].as_f64().unwrap()));
        let ppw = |x: &Value| x["lookups_per_second_per_watt"].as_f64().unwrap();
        assert!(close(r["perf_per_watt_vs_baseline"].as_f64().unwrap(), ppw(r) / ppw(b)));
    }
    for sys in ["dae", "cpu"] {
        let g = &v["geomean_vs_baseline"][sys];
        let s: Vec<f64> = ["emb-small", "emb-b"]
            .iter()
            .map(|w| find(sys, w)["speedup_vs_baseline"].as_f64().unwrap())
            .collect();
        let p: Vec<f64> = ["emb-small", "emb-b"]
            .iter()
            .map(|w| find(sys, w)["perf_per_watt_vs_baseline"].as_f64().unwrap())
            .collect();
        assert!(close(g["speedup"].as_f64().unwrap(), (s[0] * s[1]).sqrt()));
        assert!(close(g["perf_per_watt"].as_f64().unwrap(), (p[0] * p[1]).sqrt()));
    }
    assert!(v["geomean_vs_baseline"].get("h100").is_none(), "the baseline has no geomean against itself");
}

// ---------------------------------------------------------------------------------------------
// Power: each component's activity counted once, from the run's own statistics.

#[test]
fn cache_energy_counts_every_line_access_fill_and_writeback() {
    cache_energy_check("rev-cache-energy", |t| t, false);
}

#[test]
fn cache_energy_counts_bypassed_line_accesses() {
    // Uniform indices over many rows: little reuse, so the `nontemporal` pass marks the rows
    // and the LLC (non_temporal = "bypass" in the preset) bypasses them.
    cache_energy_check("rev-cache-bypass", bypassing_llc, true);
}

fn cache_energy_check(tag: &str, edit: impl FnOnce(String) -> String, need_bypass: bool) {
    let (_d, exp) = load(tag, "", edit);
    let SystemPlan::Dae(sys) = plan(&exp, "dae") else { panic!() };
    let m = measure_plan(&exp, plan(&exp, "dae"));
    let stats = m.stats.as_ref().unwrap();
    let e = m.energy.as_ref().unwrap();
    let p = sys.power.as_ref().unwrap();
    let is_llc = |k: &str| k.starts_with("llc");
    // README "Power and energy": caches pay access_pj per lookup, fill or write-back (data
    // relayed past the array is no fill); README (cache statistics): every line access is
    // exactly one of hits, misses, merged or bypasses, plus sector misses.
    let accesses = ["hits", "misses", "merged", "bypasses", "sector_misses", "fills", "writebacks"]
        .iter()
        .map(|c| sum_over(stats, is_llc, c))
        .sum::<u64>()
        - sum_over(stats, is_llc, "relayed_fills");
    let bypasses = sum_over(stats, is_llc, "bypasses");
    if need_bypass {
        assert!(bypasses > 0, "the workload was meant to bypass the LLC");
    }
    let want = accesses as f64 * p.caches.llc.unwrap().access_pj * 1e-12;
    let got = energy_part(e, "llc").1;
    assert!(
        close(got, want),
        "LLC dynamic energy {got} J, expected {want} J for {accesses} accesses ({bypasses} of them bypasses)"
    );
}

#[test]
fn noc_and_dram_energy_follow_their_counters() {
    let (_d, exp) = load("rev-noc-energy", "", |t| t);
    let SystemPlan::Dae(sys) = plan(&exp, "dae") else { panic!() };
    let m = measure_plan(&exp, plan(&exp, "dae"));
    let stats = m.stats.as_ref().unwrap();
    let e = m.energy.as_ref().unwrap();
    let p = sys.power.as_ref().unwrap();
    let noc = &stats["noc"];
    let n = |k: &str| noc[k].as_u64().unwrap();
    // Writes carry their line and are acknowledged without one; reads are the other way round.
    let with_line = n("write_requests") + n("responses") - n("write_responses");
    let without = n("requests") - n("write_requests") + n("write_responses");
    assert!(with_line > 0 && without > 0);
    let (line_pj, control_pj) = (p.noc.unwrap().transfer_pj, p.noc.unwrap().control_message_pj());
    assert!(control_pj < line_pj, "the preset prices a message without data below a line");
    let want = (with_line as f64 * line_pj + without as f64 * control_pj) * 1e-12;
    assert!(close(energy_part(e, "noc").1, want), "{} J, expected {want} J", energy_part(e, "noc").1);
    let mem = &stats["mem"];
    let bits_r = mem["bytes_read"].as_u64().unwrap() as f64 * 8.0;
    let bits_w = mem["bytes_written"].as_u64().unwrap() as f64 * 8.0;
    assert!(bits_r > 0.0);
    let (_, dram_dyn) = energy_part(e, "dram");
    let transfer = (bits_r * p.dram.read_pj_per_bit + bits_w * p.dram.write_pj_per_bit) * 1e-12;
    assert!(dram_dyn >= transfer, "DRAM dynamic {dram_dyn} J below its transfers' {transfer} J");
}

// ---------------------------------------------------------------------------------------------
// Latency: p50/p99 from the requester's histogram, in ps.

#[test]
fn dae_chip_running_core_only_code_reports_the_cores_lookup_latency() {
    // The same core-only code (vectorized, so its row loads carry `!lookup` marks) on the DAE
    // chip and on the CPU: the README says p50/p99 read n/a only where no lookup was timed.
    let (_d, exp) = load("rev-core-only", "", |t| {
        t.replace(
            "name = \"dae\"\ninclude",
            "name = \"dae\"\ncompiler.passes = [\"vectorize\", \"simplify-mem\"]\ninclude",
        )
        .replace(
            "name = \"cpu\"\ninclude",
            "name = \"cpu\"\ncompiler.passes = [\"vectorize\", \"simplify-mem\"]\ninclude",
        )
    });
    let cpu = measure_plan(&exp, plan(&exp, "cpu"));
    assert!(cpu.latency.is_some(), "the CPU times its lookups");
    let dae = measure_plan(&exp, plan(&exp, "dae"));
    let stats = dae.stats.as_ref().unwrap();
    let timed = stats["core0"]["lookup_latency"]["count"].as_u64().unwrap_or(0);
    assert!(
        dae.latency.is_some(),
        "the DAE chip's cores timed lookups (core0.lookup_latency holds {timed}), yet p50/p99 read n/a"
    );
}

#[test]
fn access_units_idle_in_core_only_code_still_draw_static_power() {
    // A DAE chip has an access unit per core (its power figures must include them): running
    // core-only code leaves them idle, not absent.
    let (_d, exp) = load("rev-au-static", "", |t| {
        t.replace(
            "name = \"dae\"\ninclude",
            "name = \"dae\"\ncompiler.passes = [\"vectorize\", \"simplify-mem\"]\ninclude",
        )
    });
    let SystemPlan::Dae(sys) = plan(&exp, "dae") else { panic!() };
    let m = measure_plan(&exp, plan(&exp, "dae"));
    let e = m.energy.as_ref().unwrap();
    let (s, _) = energy_part(e, "access_unit");
    let want = 4.0 * sys.power.unwrap().access_unit.unwrap().static_w * e.seconds;
    assert!(close(s, want), "access units' static energy {s} J, expected {want} J (4 units)");
}

// ---------------------------------------------------------------------------------------------
// The system builder: values set in the config reach the built components.

/// The small experiment with `lines` added to system `system`'s table; `system`'s run.
fn run_with(tag: &str, system: &str, lines: &str) -> Measured {
    let (_d, exp) = load(tag, "", |t| {
        t.replacen(&format!("name = \"{system}\"\n"), &format!("name = \"{system}\"\n{lines}\n"), 1)
    });
    measure_plan(&exp, plan(&exp, system))
}

#[test]
fn llc_banks_set_the_banks_built_and_their_static_power() {
    let m = run_with("rev-banks", "dae", "caches.llc_banks = 3");
    let stats = m.stats.as_ref().unwrap().as_object().unwrap();
    let banks: Vec<&String> = stats.keys().filter(|k| k.starts_with("llc")).collect();
    assert_eq!(banks, ["llc0", "llc1", "llc2"]);
    let e = m.energy.as_ref().unwrap();
    assert!(close(energy_part(e, "llc").0, 3.0 * 0.08 * e.seconds));
    // The default: one bank per core; cores static per core.
    let d = run_with("rev-banks-default", "dae", "");
    let stats = d.stats.as_ref().unwrap().as_object().unwrap();
    assert_eq!(stats.keys().filter(|k| k.starts_with("llc")).count(), 4);
    let e = d.energy.as_ref().unwrap();
    assert!(close(energy_part(e, "core").0, 4.0 * 0.5 * e.seconds));
    assert!(close(energy_part(e, "l1d").0, 4.0 * 0.02 * e.seconds));
    assert!(close(energy_part(e, "l2").0, 4.0 * 0.08 * e.seconds));
}

#[test]
fn access_unit_limits_reach_the_units() {
    let base = run_with("rev-au-base", "dae", "");
    let one = run_with("rev-au-one", "dae", "access_unit.max_outstanding = 1");
    let peak = |m: &Measured| {
        let s = m.stats.as_ref().unwrap();
        (0..4).map(|c| s[format!("core{c}")]["au"]["peak_outstanding"].as_u64().unwrap()).max().unwrap()
    };
    assert!(peak(&base) > 1, "the preset's 128 outstanding are used: {}", peak(&base));
    assert_eq!(peak(&one), 1, "max_outstanding = 1 reaches the unit");
    assert!(one.time > base.time);
    let slow =
        run_with("rev-au-rpc", "dae", "access_unit.requests_per_cycle = 1\naccess_unit.outq_entries = 1");
    assert_ne!(slow.time, base.time, "requests_per_cycle and outq_entries change the run");
}

#[test]
fn core_cache_memory_and_network_settings_change_the_run() {
    let base = run_with("rev-cpu-base", "cpu", "");
    for (tag, lines) in [
        ("rev-cpu-mshr", "caches.l1d.mshrs = 1"),
        ("rev-cpu-outst", "core.max_outstanding = 1"),
        ("rev-cpu-l1", "caches.l1d.hit_latency_cycles = 40"),
        ("rev-cpu-llc", "caches.llc.hit_latency_cycles = 200"),
        ("rev-cpu-link", "memory.link_latency = \"100ns\""),
        ("rev-cpu-noc", "noc.topology = { kind = \"crossbar\", cycles = 80 }"),
    ] {
        let m = run_with(tag, "cpu", lines);
        assert!(m.time > base.time, "{lines}: {} ps, not above the preset's {} ps", m.time, base.time);
    }
    // A smaller L1D holds less: more misses on the same run.
    let misses = |m: &Measured| {
        let s = m.stats.as_ref().unwrap();
        (0..4).map(|c| s[format!("core{c}")]["l1d"]["misses"].as_u64().unwrap()).sum::<u64>()
    };
    let small = run_with("rev-cpu-l1size", "cpu", "caches.l1d.size = \"1KiB\"\ncaches.l1d.associativity = 1");
    assert!(misses(&small) > misses(&base), "{} vs {}", misses(&small), misses(&base));
}

#[test]
fn cores_without_bags_still_draw_static_power() {
    // Two bags (2 tables x batch 1) on 4 cores: two cores get nothing to do but are on the chip.
    let (_d, exp) = load("rev-few-bags", "", |t| {
        t.replace("[[workload]]\ninclude = ", "[[workload]]\nbatch = 1\ninclude = ")
    });
    for system in ["dae", "cpu"] {
        let SystemPlan::Dae(sys) = plan(&exp, system) else { panic!() };
        let m = measure_plan(&exp, plan(&exp, system));
        let e = m.energy.as_ref().unwrap();
        let p = sys.power.as_ref().unwrap();
        assert!(close(energy_part(e, "core").0, 4.0 * p.core.static_w * e.seconds), "{system}: core static");
        assert!(
            close(energy_part(e, "l1d").0, 4.0 * p.caches.l1d.unwrap().static_w * e.seconds),
            "{system}: l1d static"
        );
        if let Some(a) = p.access_unit {
            assert!(
                close(energy_part(e, "access_unit").0, 4.0 * a.static_w * e.seconds),
                "{system}: access-unit static"
            );
        }
    }
}

#[test]
fn batches_add_up_with_one_launch_each() {
    // README: a workload of several batches runs them back to back; its figures are their sums.
    let one = {
        let (_d, exp) = load("rev-batch1", "", |t| t);
        measure_plan(&exp, plan(&exp, "dae"))
    };
    let dir = temp_dir("rev-batches");
    let cfg = small_experiment(&dir, "");
    edit_file(&cfg, |t| t.replace("[[workload]]\ninclude = ", "[[workload]]\nbatches = 2\ninclude = "));
    let v = run_results(&cfg, &dir.join("out"));
    let r = v["runs"].as_array().unwrap().iter().find(|r| r["system"] == "dae").unwrap();
    assert_eq!(r["batches"], 2);
    assert_eq!(r["lookups"].as_u64().unwrap(), 2 * one.lookups);
    let t = r["sim_time_ps"].as_f64().unwrap() * 1e-12;
    let p = &r["power"];
    assert!(close(p["average_power_w"].as_f64().unwrap(), p["energy_j"].as_f64().unwrap() / t));
    // Each batch is an operation of its own: its launch is paid per batch (2 x 1 us at least).
    assert!(r["sim_time_ps"].as_u64().unwrap() >= 2_000_000);
}
