//! Power and energy: results.json carries them, more work costs more energy on real runs, and
//! bad figures are config errors naming the file and key.

#[allow(dead_code)] // this suite needs only some of the shared helpers
mod common;

use common::{config_error, configs, dae_sim, edit_file, small_experiment, temp_dir};
use dae_sim::experiment::{Experiment, Measured, Overrides, SystemPlan, run_pair};
use dae_sim::power::EnergyReport;

#[test]
fn results_carry_power_energy_per_lookup_and_perf_per_watt() {
    let dir = temp_dir("power-json");
    let cfg = small_experiment(&dir, "");
    let out = dir.join("out");
    let o = dae_sim(&["--config", cfg.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let table = String::from_utf8_lossy(&o.stdout);
    for column in ["power W", "nJ/lookup", "lookups/s/W", "perf/W vs h100", "geomean dae vs h100"] {
        assert!(table.contains(column), "{column} missing: {table}");
    }
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    for r in json["runs"].as_array().unwrap() {
        let p = &r["power"];
        let w = p["average_power_w"].as_f64().unwrap();
        let nj = p["energy_per_lookup_nj"].as_f64().unwrap();
        let ppw = p["lookups_per_second_per_watt"].as_f64().unwrap();
        assert!(w > 0.0 && nj > 0.0 && ppw > 0.0, "{r}");
        // perf/W = lookups/s / W = 1 / (J per lookup).
        assert!((ppw * nj * 1e-9 - 1.0).abs() < 1e-9, "{ppw} {nj}");
        let sum: f64 =
            p["components"].as_object().unwrap().values().map(|c| c["total_j"].as_f64().unwrap()).sum();
        assert!((sum - p["energy_j"].as_f64().unwrap()).abs() <= 1e-12 * sum.max(1.0), "{p}");
        assert_eq!(r["average_power_w"], p["average_power_w"]);
        let system = r["system"].as_str().unwrap();
        let names: Vec<&str> = p["components"].as_object().unwrap().keys().map(String::as_str).collect();
        match system {
            "dae" => assert!(names.contains(&"access_unit") && names.contains(&"dram"), "{names:?}"),
            "cpu" => assert!(!names.contains(&"access_unit") && names.contains(&"core"), "{names:?}"),
            _ => assert!(names.contains(&"onchip"), "{names:?}"),
        }
        if system == "h100" {
            assert!((r["perf_per_watt_vs_baseline"].as_f64().unwrap() - 1.0).abs() < 1e-12);
            assert!(w <= 700.0, "bounded by the TDP: {w}");
        }
    }
    let g = &json["geomean_vs_baseline"]["dae"];
    assert!(g["speedup"].as_f64().unwrap() > 0.0 && g["perf_per_watt"].as_f64().unwrap() > 0.0, "{g}");
    assert!(!table.contains("reached its TDP"), "the stock H100 stays under its TDP here: {table}");
}

#[test]
fn a_gpu_run_at_its_tdp_is_pointed_out() {
    // Static power equal to the TDP: any dynamic energy passes it, so the energy is capped at
    // TDP x time while the kernel runs as fast as before, and the table must say so.
    let dir = temp_dir("power-tdp");
    let cfg = small_experiment(&dir, "");
    edit_file(&cfg, |text| {
        text.replacen("name = \"h100\"\n", "name = \"h100\"\npower.tdp_w = 60.0\npower.static_w = 60.0\n", 1)
    });
    let o = dae_sim(&["--config", cfg.to_str().unwrap(), "--out", dir.join("out").to_str().unwrap()]);
    let table = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(table.contains("note: emb-small on h100 reached its TDP"), "{table}");
}

/// Runs the small workload at `batch` bags on the system named `system`.
fn measure(system: &str, batch: u32) -> Measured {
    let dir = temp_dir(&format!("power-mono-{system}-{batch}"));
    let cfg = small_experiment(&dir, "");
    edit_file(&cfg, |text| {
        text.replace("[[workload]]\ninclude = ", &format!("[[workload]]\nbatch = {batch}\ninclude = "))
    });
    let exp = Experiment::load(&cfg, &Overrides::default()).unwrap();
    let spec = &exp.file.workload[0];
    assert_eq!(spec.batch, batch);
    let inst = exp.instance(spec);
    let reference = inst.reference(spec);
    let plan: &SystemPlan = &exp.systems.iter().find(|(n, _)| n == system).unwrap().1;
    run_pair(&exp.seeds(), exp.time_limit(&inst), plan, spec, &inst, &reference).unwrap()
}

fn part(e: &EnergyReport, name: &str) -> (f64, f64) {
    e.components.iter().find(|(n, _, _)| n == name).map(|(_, s, d)| (*s, *d)).unwrap()
}

#[test]
fn more_traffic_and_more_instructions_cost_more_energy() {
    for system in ["dae", "cpu", "h100"] {
        let (small, large) = (measure(system, 16), measure(system, 64));
        let (es, el) = (small.energy.as_ref().unwrap(), large.energy.as_ref().unwrap());
        assert!(large.bytes > small.bytes, "{system}: more bags move more bytes");
        // Dynamic energy grows with the work; the total also carries static power over the
        // run's time, which a GPU with idle slots keeps about the same for 16 and 64 bags.
        let dynamic = |e: &EnergyReport| e.components.iter().map(|(_, _, d)| d).sum::<f64>();
        assert!(dynamic(el) > dynamic(es), "{system}: {} vs {}", dynamic(el), dynamic(es));
        if system != "h100" {
            assert!(el.total_j() > es.total_j(), "{system}: {} vs {}", el.total_j(), es.total_j());
        }
        assert!(part(el, "dram").1 > part(es, "dram").1, "{system}: more DRAM traffic, more DRAM energy");
        if system != "h100" {
            let (si, li) = (instructions(&small), instructions(&large));
            assert!(li > si, "{system}: more bags retire more instructions");
            assert!(part(el, "core").1 > part(es, "core").1, "{system}: more instructions, more core energy");
        }
    }
}

/// Instructions the cores dispatched, from the run's statistics.
fn instructions(m: &Measured) -> u64 {
    fn sum(v: &serde_json::Value, key: &str) -> u64 {
        match v {
            serde_json::Value::Object(map) => {
                map.iter().map(|(k, x)| if k == key { x.as_u64().unwrap_or(0) } else { sum(x, key) }).sum()
            }
            _ => 0,
        }
    }
    sum(m.stats.as_ref().unwrap(), "instructions")
}

#[test]
fn a_negative_energy_figure_names_the_file_and_key() {
    let dir = temp_dir("power-negative");
    let cfg = small_experiment(&dir, "");
    edit_file(&cfg, |text| {
        text.replacen("cores = 4\n", "cores = 4\n[system.power.caches.l2]\naccess_pj = -3.0\n", 1)
    });
    let err = config_error(&cfg);
    assert!(err.contains("system[0].power.caches.l2.access_pj"), "{err}");
    assert!(err.contains("must be a finite number of at least 0"), "{err}");
    assert!(err.contains(&format!("{}:", cfg.display())), "names the file that set it: {err}");
}

#[test]
fn a_missing_gpu_figure_names_the_preset_and_key() {
    let dir = temp_dir("power-missing");
    let preset = std::fs::read_to_string(configs().join("systems/h100-sxm.toml")).unwrap();
    assert!(preset.contains("tdp_w = 700.0"));
    let memory = configs().join("memory");
    let broken: String = preset
        .lines()
        .filter(|l| !l.starts_with("tdp_w"))
        .map(|l| l.replace("../memory/", &format!("{}/", memory.display())))
        .collect::<Vec<_>>()
        .join("\n");
    let gpu = dir.join("gpu.toml");
    std::fs::write(&gpu, broken).unwrap();
    let cfg = small_experiment(&dir, "");
    edit_file(&cfg, |text| {
        text.replace(
            &configs().join("systems/h100-sxm.toml").display().to_string(),
            &gpu.display().to_string(),
        )
    });
    let err = config_error(&cfg);
    assert!(err.contains("system[2].power.tdp_w"), "{err}");
    assert!(err.contains("required"), "{err}");
}

#[test]
fn a_gpu_figure_on_a_dae_chip_is_refused_by_key() {
    let dir = temp_dir("power-gpu-key-on-dae");
    let cfg = small_experiment(&dir, "");
    edit_file(&cfg, |text| text.replacen("cores = 4\n", "cores = 4\n[system.power]\ntdp_w = 5.0\n", 1));
    let err = config_error(&cfg);
    assert!(err.contains("system[0].power.tdp_w"), "{err}");
    assert!(err.contains("is a GPU figure"), "{err}");
}
