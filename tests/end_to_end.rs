//! End-to-end mode: a workload's dense layers run on each system's dense units as a roofline,
//! beside the simulated embedding operation.

#[allow(dead_code)] // this suite needs only some of the shared helpers
mod common;

use common::{config_error, edit_file, run_config, run_results, small_experiment, temp_dir};

/// `text` (the small experiment) with MLPs `(name, sizes)` added to its workload.
fn with_mlps(text: String, mlps: &[(&str, &[u64])]) -> String {
    let dense: String = mlps
        .iter()
        .map(|(name, sizes)| {
            format!("[[workload.dense]]\nkind = \"mlp\"\nname = \"{name}\"\nsizes = {sizes:?}\n")
        })
        .collect();
    text.replace("\n[report]", &format!("\n{dense}\n[report]"))
}

#[test]
fn dense_layers_add_a_roofline_time_and_an_embedding_share() {
    let dir = temp_dir("end-to-end");
    let cfg = small_experiment(&dir, "");
    // The workload of the small experiment gets a bottom and a top MLP.
    edit_file(&cfg, |text| {
        with_mlps(text, &[("bottom", &[13, 512, 256, 64]), ("top", &[100, 1024, 512, 1])])
    });
    let out = dir.join("out");
    let o = run_config(&cfg, &out);
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
    // Small layers at a small batch: on the H100 each MLP costs about its fixed overheads, a
    // 3 us launch and 5.1 us per GEMM (six in all): 36.6 us and a roofline under 1 us. The
    // small experiment's chips have 4 cores, 0.77 TFLOP/s of vector units (4 x 0.192): the
    // layers' flops take about 32.5 us beside two 1 us forks and six 1 us barriers. The DAE
    // and CPU systems share their dense units.
    assert!((36_600_000..38_000_000).contains(&dense["h100"]), "{dense:?}");
    assert!((40_000_000..44_000_000).contains(&dense["dae"]), "{dense:?}");
    assert_eq!(dense["dae"], dense["cpu"]);
    assert!(out.join("speedup.svg").exists());
    // results.csv carries the same end-to-end figures.
    let csv = std::fs::read_to_string(out.join("results.csv")).unwrap();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    for (line, r) in csv.lines().skip(1).zip(runs) {
        let row: Vec<&str> = line.split(',').collect();
        assert_eq!(row[col("dense_time_ps")], r["dense_time_ps"].to_string(), "{line}");
        assert_eq!(row[col("end_to_end_time_ps")], r["end_to_end_time_ps"].to_string(), "{line}");
        let speedup = row[col("end_to_end_speedup_vs_baseline")].parse::<f64>().unwrap();
        assert!((speedup - r["end_to_end_speedup_vs_baseline"].as_f64().unwrap()).abs() < 1e-12, "{line}");
    }
}

#[test]
fn a_bad_dense_layer_names_the_key() {
    let dir = temp_dir("end-to-end-bad");
    let cfg = small_experiment(&dir, "");
    edit_file(&cfg, |text| with_mlps(text, &[("m", &[13])]));
    let err = config_error(&cfg);
    assert!(err.contains("workload[0].dense") && err.contains("sizes"), "{err}");
}

#[test]
fn a_chip_of_cores_has_the_dense_rate_of_its_cores() {
    // The DAE preset gives a rate per core: 4 cores have 4/64 of the 64-core chip's 12.3
    // TFLOP/s, where a fixed chip-wide figure once stayed at 64 cores' whatever `cores` said.
    let dir = temp_dir("dense-per-core");
    let exp =
        dae_sim::experiment::Experiment::load(&small_experiment(&dir, ""), &Default::default()).unwrap();
    let peak = |name: &str| exp.dense[name].peak_flops;
    assert!((peak("dae") - 4.0 * 0.192e12).abs() < 1.0, "{}", peak("dae"));
    assert_eq!(peak("dae"), peak("cpu"), "both have 4 cores");
    assert_eq!(peak("h100"), 989e12, "a GPU keeps its datasheet figure");
    // Both forms at once are refused.
    let text = std::fs::read_to_string(dir.join("experiment.toml")).unwrap();
    let both = text.replacen("cores = 4\n", "cores = 4\ndense.peak_tflops = 10.0\n", 1);
    std::fs::write(dir.join("both.toml"), both).unwrap();
    let err = dae_sim::experiment::Experiment::load(&dir.join("both.toml"), &Default::default()).unwrap_err();
    assert!(err.to_string().contains("exactly one of peak_tflops and peak_tflops_per_core"), "{err}");
}

#[test]
fn the_h100_dense_layers_match_the_measured_mlps() {
    // docs/h100-dense.json (docs/h100-measured.md, "Dense layers"): the DLRM MLPs of
    // configs/h100-vs-dae.toml on an H100 SXM5 in BF16, each layer one GEMM with its bias and
    // ReLU fused, replayed as a CUDA graph from a cold L2 (the GPU's time; the model adds its
    // 3 us launch on top).
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/h100-dense.json");
    let measured: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let dir = temp_dir("dense-h100");
    let exp =
        dae_sim::experiment::Experiment::load(&small_experiment(&dir, ""), &Default::default()).unwrap();
    let h100 = &exp.dense["h100"];
    let mlps = measured["mlps"].as_array().unwrap();
    assert_eq!(mlps.len(), 6);
    for m in mlps {
        let sizes: Vec<u64> = m["sizes"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).collect();
        let (batch, us) = (m["batch"].as_u64().unwrap(), m["fused_cold"]["median_us"].as_f64().unwrap());
        let mlp = compiler::dense::DenseLayer::Mlp { name: "m".into(), sizes: sizes.clone() };
        let t = h100.total(std::slice::from_ref(&mlp), batch) - h100.layer_overhead;
        let ratio = t as f64 / (us * 1e6);
        // The fit's residuals are -8% to +15%: one overhead per GEMM cannot tell the bottom
        // MLPs' tiny GEMMs from the top MLPs' 1024-wide ones, which run under the tensor cores'
        // peak that the roofline takes.
        assert!((0.85..1.2).contains(&ratio), "{sizes:?} at batch {batch}: model {t} ps, measured {us} us");
    }
}

#[test]
fn overheads_at_the_clocks_limit_saturate_instead_of_wrapping() {
    // A dense overhead far beyond any real one: the end-to-end time must not wrap around to a
    // few microseconds (it did, with "embedding share 100%").
    let dir = temp_dir("dense-saturate");
    let cfg = small_experiment(&dir, "");
    edit_file(&cfg, |text| {
        with_mlps(text, &[("m", &[13, 64])]).replacen(
            "name = \"h100\"\n",
            "name = \"h100\"\ndense.gemm_overhead = \"10000000s\"\n",
            1,
        )
    });
    let json = run_results(&cfg, &dir.join("out"));
    let h100 = json["runs"].as_array().unwrap().iter().find(|r| r["system"] == "h100").unwrap();
    let (d, e) = (h100["dense_time_ps"].as_u64().unwrap(), h100["end_to_end_time_ps"].as_u64().unwrap());
    assert!(d >= 10_000_000 * 1_000_000_000_000 && e >= d, "dense {d}, end to end {e}");
}

#[test]
fn a_simple_memory_latency_beyond_a_second_is_refused() {
    let dir = temp_dir("simple-latency");
    let cfg = small_experiment(&dir, "");
    edit_file(&cfg, |text| {
        text.replacen(
            "cores = 4\n",
            "cores = 4\nmemory = { model = \"simple\", latency = \"2s\", bandwidth = \"1TB/s\" }\n",
            1,
        )
    });
    let err = config_error(&cfg);
    assert!(err.contains("system[0].memory.latency") && err.contains("at most 1 s"), "{err}");
}
