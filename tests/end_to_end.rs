//! End-to-end mode: a workload's dense layers run on each system's dense units as a roofline,
//! beside the simulated embedding operation.

#[allow(dead_code)] // this suite needs only some of the shared helpers
mod common;

use common::{dae_sim, small_experiment, temp_dir};

#[test]
fn dense_layers_add_a_roofline_time_and_an_embedding_share() {
    let dir = temp_dir("end-to-end");
    let cfg = small_experiment(&dir, "");
    // The workload of the small experiment gets a bottom and a top MLP.
    let text = std::fs::read_to_string(&cfg).unwrap().replace(
        "\n[report]",
        "\n[[workload.dense]]\nkind = \"mlp\"\nname = \"bottom\"\nsizes = [13, 512, 256, 64]\n\
         [[workload.dense]]\nkind = \"mlp\"\nname = \"top\"\nsizes = [100, 1024, 512, 1]\n\n[report]",
    );
    std::fs::write(&cfg, text).unwrap();
    let out = dir.join("out");
    let o = dae_sim(&["--config", cfg.to_str().unwrap(), "--quiet", "--out", out.to_str().unwrap()]);
    let table = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(o.status.success(), "{table}\n{}", String::from_utf8_lossy(&o.stderr));
    assert!(table.contains("End to end"), "{table}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    let runs = json["runs"].as_array().unwrap();
    let mut dense = std::collections::HashMap::new();
    for r in runs {
        let (t, d, e) = (
            r["sim_time_ps"].as_u64().unwrap(),
            r["dense_time_ps"].as_u64().unwrap(),
            r["end_to_end_time_ps"].as_u64().unwrap(),
        );
        assert_eq!(e, t + d, "{r}");
        dense.insert(r["system"].as_str().unwrap().to_string(), d);
    }
    // Small layers at a small batch: each costs about its fixed overhead, a 3 us kernel launch
    // on the H100 and a 1 us barrier on the DAE chip; the DAE and CPU systems share their dense
    // units.
    assert!((6_000_000..7_000_000).contains(&dense["h100"]), "{dense:?}");
    assert!((2_000_000..3_000_000).contains(&dense["dae"]), "{dense:?}");
    assert_eq!(dense["dae"], dense["cpu"]);
    assert!(out.join("speedup.svg").exists());
}

#[test]
fn a_bad_dense_layer_names_the_key() {
    let dir = temp_dir("end-to-end-bad");
    let cfg = small_experiment(&dir, "");
    let text = std::fs::read_to_string(&cfg).unwrap().replace(
        "\n[report]",
        "\n[[workload.dense]]\nkind = \"mlp\"\nname = \"m\"\nsizes = [13]\n\n[report]",
    );
    std::fs::write(&cfg, text).unwrap();
    let o = dae_sim(&["--config", cfg.to_str().unwrap(), "--quiet"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("workload[0].dense") && err.contains("sizes"), "{err}");
}
