//! Plots: a run writes every plot its results have figures for, as SVG and PNG, and
//! `dae-sim plot` redraws the same files from results.json alone.

#[allow(dead_code)] // this suite needs only some of the shared helpers
mod common;

use common::{dae_sim, small_experiment, temp_dir};

const PLOTS: [&str; 3] = ["speedup", "breakdown", "latency"];

#[test]
fn a_run_writes_its_plots_and_plot_redraws_them_from_the_results() {
    let dir = temp_dir("plots");
    let cfg = small_experiment(&dir, "");
    let out = dir.join("out");
    let o = dae_sim(&["--config", cfg.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("speedup.png") && err.contains("latency.svg"), "{err}");
    let mut first = Vec::new();
    for stem in PLOTS {
        for ext in ["svg", "png"] {
            let f = out.join(format!("{stem}.{ext}"));
            first.push(std::fs::read(&f).unwrap_or_else(|e| panic!("{}: {e}", f.display())));
            std::fs::remove_file(&f).unwrap();
        }
    }
    // The CDF the latency plot draws is in results.json.
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    let cdf = json["runs"][0]["memory_level_parallelism"]["lookup_latency_cdf"].as_array().unwrap();
    assert_eq!(cdf.last().unwrap()[1], 1.0, "{cdf:?}");
    let o = dae_sim(&["plot", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let again: Vec<Vec<u8>> = PLOTS
        .iter()
        .flat_map(|s| ["svg", "png"].map(|e| std::fs::read(out.join(format!("{s}.{e}"))).unwrap()))
        .collect();
    assert!(again == first, "a redrawn plot differs from the first");
}

#[test]
fn plot_names_the_file_and_field_a_results_file_lacks() {
    let dir = temp_dir("plots-bad");
    let file = dir.join("results.json");
    let runs = r#"{ "baseline": null, "runs": [{ "system": "dae", "workload": "w",
                   "time_breakdown": { "core": { "dispatching": 1.0 } } }] }"#;
    std::fs::write(&file, runs).unwrap();
    let o = dae_sim(&["plot", file.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("results.json: runs[0].time_breakdown.core.memory: missing"), "{err}");
}
