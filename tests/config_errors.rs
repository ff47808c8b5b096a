//! Bad configs give one clear error line naming file, line, key and value; never a panic.

mod common;

use common::{dae_sim, small_experiment, temp_dir};

/// Runs dae-sim on `config` and returns its stderr, asserting a clean failure.
fn fails(config: &std::path::Path) -> String {
    let o = dae_sim(&["--config", config.to_str().unwrap(), "--quiet"]);
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert_eq!(o.status.code(), Some(2), "exit code; stderr: {err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(err.starts_with("error: "), "{err}");
    err
}

#[test]
fn malformed_toml_names_file_line_and_column() {
    let dir = temp_dir("malformed");
    let path = dir.join("bad.toml");
    std::fs::write(&path, "[experiment]\nname = \"x\"\nseed = = 3\n").unwrap();
    let err = fails(&path);
    assert!(err.contains(&format!("{}:3:", path.display())), "{err}");
    assert!(err.contains("invalid TOML"), "{err}");
}

#[test]
fn unknown_key_is_named_with_a_suggestion() {
    let dir = temp_dir("unknown-key");
    let cfg = small_experiment(&dir, "");
    let text =
        std::fs::read_to_string(&cfg).unwrap().replace("cores = 4\naccess_unit", "cors = 4\naccess_unit");
    std::fs::write(&cfg, text).unwrap();
    let err = fails(&cfg);
    assert!(err.contains("system[1].cors: unknown field `cors`"), "{err}");
    assert!(err.contains("(did you mean `cores`?)"), "{err}");
    assert!(err.contains(&format!("{}:13:1", cfg.display())), "{err}");
}

#[test]
fn a_missing_unit_is_named_with_the_value() {
    let dir = temp_dir("missing-unit");
    let cfg = small_experiment(&dir, "");
    let text = std::fs::read_to_string(&cfg)
        .unwrap()
        .replace("cores = 4\naccess_unit = \"none\"", "cores = 4\naccess_unit = \"none\"\ncore.clock = 3");
    std::fs::write(&cfg, text).unwrap();
    let err = fails(&cfg);
    assert!(err.contains("system[1].core.clock: missing unit in 3"), "{err}");
    assert!(err.contains("\"3GHz\""), "{err}");
}

#[test]
fn a_wrong_unit_and_an_impossible_value_are_named() {
    let dir = temp_dir("wrong-unit");
    let cfg = small_experiment(&dir, "");
    let text = std::fs::read_to_string(&cfg)
        .unwrap()
        .replace("cores = 4\naccess_unit = \"none\"", "cores = 0\naccess_unit = \"none\"");
    std::fs::write(&cfg, text).unwrap();
    let err = fails(&cfg);
    assert!(err.contains("system[1].cores: must be in 1..=4096 (value: 0)"), "{err}");
    let text = std::fs::read_to_string(&cfg)
        .unwrap()
        .replace("cores = 0", "cores = 2\nmemory.latency = \"120 nsec\"");
    std::fs::write(&cfg, text).unwrap();
    let err = fails(&cfg);
    assert!(err.contains("system[1].memory.latency: unknown unit \"nsec\""), "{err}");
}

#[test]
fn a_missing_config_and_a_bad_baseline_are_errors() {
    let err = fails(std::path::Path::new("/nonexistent/experiment.toml"));
    assert!(err.contains("/nonexistent/experiment.toml: cannot read"), "{err}");
    let dir = temp_dir("baseline");
    let cfg = small_experiment(&dir, "");
    let text = std::fs::read_to_string(&cfg).unwrap().replace("baseline = \"h100\"", "baseline = \"a100\"");
    std::fs::write(&cfg, text).unwrap();
    let err = fails(&cfg);
    assert!(err.contains("report.baseline: no system is named \"a100\""), "{err}");
}

#[test]
fn out_of_range_core_and_access_unit_sizes_are_named() {
    for (edit, key, why) in [
        ("core = { rob_entries = 4000000000 }", "system[1].core.rob_entries", "must be 1 to 65536"),
        ("core = { lq_entries = 0 }", "system[1].core.lq_entries", "must be 1 to 65536"),
        (
            "core = { functional_units = { alu = 0, muldiv = 1, vector = 1, load = 1, store = 1 } }",
            "system[1].core.functional_units.alu",
            "must be 1 to 64",
        ),
    ] {
        let dir = temp_dir("core-range");
        let cfg = small_experiment(&dir, "");
        // The second system (the plain CPU) gets the bad value.
        let text = std::fs::read_to_string(&cfg).unwrap().replace(
            "cores = 4\naccess_unit = \"none\"",
            &format!("cores = 4\naccess_unit = \"none\"\n{edit}"),
        );
        std::fs::write(&cfg, text).unwrap();
        let err = fails(&cfg);
        assert!(err.contains(key) && err.contains(why), "{edit}: {err}");
    }
    let dir = temp_dir("au-range");
    let cfg = small_experiment(&dir, "");
    let text = std::fs::read_to_string(&cfg).unwrap().replacen(
        "cores = 4\n",
        "cores = 4\naccess_unit = { storage = \"16KiB\", max_outstanding = 8, requests_per_cycle = 1, \
         events_per_cycle = 1, outq_entries = 8, lanes = 65 }\n",
        1,
    );
    std::fs::write(&cfg, text).unwrap();
    let err = fails(&cfg);
    assert!(err.contains("system[0].access_unit.lanes") && err.contains("must be 1 to 64"), "{err}");
}

#[test]
fn bad_workloads_and_compiler_settings_name_the_file_and_field() {
    let dir = temp_dir("bad-workload");
    let base = "name = \"w\"\nop = \"embedding_bag\"\ntables = 1\nrows = 100\ndim = 8\ndtype = \"f32\"\n\
                batch = 2\nbag_size = 4\n[indices]\ndistribution = \"uniform\"\n";
    for (n, (edit, want)) in [
        (("op = \"embedding_bag\"", "op = \"spmv\""), "unknown variant `spmv`"),
        (("dim = 8\ndtype = \"f32\"", "dim = 10\ndtype = \"int8\""), "dim: 10 is not a multiple of 4"),
        (
            (
                "op = \"embedding_bag\"\ntables = 1\nrows = 100\ndim = 8\ndtype = \"f32\"\nbatch = 2\nbag_size = 4",
                "op = \"kg_score\"\nrows = 100\ndim = 8\ndtype = \"int8\"\nbatch = 2\nrelations = 2\nmodel = \"distmult\"",
            ),
            "dtype: int8 rows are for embedding bags",
        ),
        (
            (
                "\"embedding_bag\"\ntables = 1\nrows = 100\ndim = 8\ndtype = \"f32\"",
                "\"tt_embedding_bag\"\ntables = 1\nrows = 100\ndim = 8\ndtype = \"bf16\"",
            ),
            "dtype: Bf16 cores: a TT-EmbeddingBag's cores are f32",
        ),
        (
            ("batch = 2", "batch = 2\npooling = \"max\"\nweights = true"),
            "weights: per-lookup weights need pooling",
        ),
        (
            ("op = \"embedding_bag\"", "op = \"sparse_attention\"\nblock = 3"),
            "block: 3 does not divide bag_size 4",
        ),
        (
            ("batch = 2", "batch = 2\nmodel = \"transe\""),
            "model: model, relations and negatives are for op = \"kg_score\"",
        ),
        (("dtype = \"f32\"", "dtype = \"f32\"\nmodel = \"rotate\""), "unknown variant `rotate`"),
        (
            ("batch = 2", "batch = 2\npadding_idx = 100"),
            "padding_idx: 100 is not a row of the 100-row tables",
        ),
        (
            ("op = \"embedding_bag\"", "op = \"sparse_attention\"\npadding_idx = 0"),
            "padding_idx: only op = \"embedding_bag\" takes a padding index",
        ),
        (
            ("op = \"embedding_bag\"", "op = \"tt_embedding_bag\""),
            "tt: required for op = \"tt_embedding_bag\"",
        ),
        (
            ("uniform\"\n", "uniform\"\n[tt]\nrow_factors = [4, 5, 5]\ndim_factors = [2, 2, 2]\nrank = 4\n"),
            "tt: only op = \"tt_embedding_bag\" takes a [tt] shape",
        ),
        (
            ("\"embedding_bag\"\ntables = 1\nrows = 100", "\"tt_embedding_bag\"\ntables = 1\nrows = 101"),
            "tt.row_factors: their product 100 is less than rows = 101",
        ),
        (
            (
                "\"embedding_bag\"\ntables = 1\nrows = 100\ndim = 8",
                "\"tt_embedding_bag\"\ntables = 1\nrows = 100\ndim = 9",
            ),
            "tt.dim_factors: their product 8 is not dim = 9",
        ),
        (
            ("op = \"embedding_bag\"", "op = \"tt_embedding_bag\"\npooling = \"max\""),
            "pooling: a TT-EmbeddingBag pools by sum or mean",
        ),
        (
            ("op = \"embedding_bag\"", "op = \"tt_embedding_bag\""),
            "tt: row_factors and dim_factors take three factors each",
        ),
        (
            ("uniform\"\n", "uniform\"\n[[table_indices]]\ndistribution = \"zipf\"\n"),
            "table_indices: entry 0: distribution = \"zipf\" needs alpha",
        ),
        (
            ("uniform\"\n", "uniform\"\n[[table_indices]]\ndistribution = \"uniform\"\nrows = 101\n"),
            "table_indices: entry 0: rows = 101 is outside 1..=100",
        ),
        (
            ("uniform\"\n", "uniform\"\n[[table_indices]]\ntables = 2\ndistribution = \"uniform\"\n"),
            "table_indices: the entries cover 2 tables, but the workload has 1",
        ),
        (
            ("uniform\"\n", "uniform\"\n[[table_indices]]\ndistribution = \"normal\"\n"),
            "unknown variant `normal`",
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let path = dir.join(format!("w{n}.toml"));
        let mut text = base.replace(edit.0, edit.1);
        let shapeless = want.starts_with("tt: required") || want.starts_with("tt: only");
        if edit.1.contains("tt_embedding_bag") && !shapeless {
            // A TT workload's shape, at the end (a TOML table takes the keys after it).
            let factors = if want.contains("three factors") { "[100]" } else { "[4, 5, 5]" };
            text.push_str(&format!("[tt]\nrow_factors = {factors}\ndim_factors = [2, 2, 2]\nrank = 4\n"));
        }
        std::fs::write(&path, text).unwrap();
        let o = dae_sim(&["compile", "--workload", path.to_str().unwrap()]);
        let err = String::from_utf8_lossy(&o.stderr).to_string();
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(!err.contains("panicked"), "{err}");
        assert!(err.contains(&path.display().to_string()) && err.contains(want), "{edit:?}: {err}");
    }
    for (edit, key, why) in [
        ("compiler = { opt_level = 4 }", "system[0].compiler.opt_level", "4 is not a level (0 to 3)"),
        (
            "compiler = { passes = [\"decouple\", \"unroll\"] }",
            "system[0].compiler.passes",
            "unknown pass `unroll`",
        ),
        (
            "compiler = { partition = \"tablewise\" }",
            "system[0].compiler.partition",
            "unknown variant `tablewise`, expected `cost` or `tables`",
        ),
    ] {
        let cfg = small_experiment(&dir, "");
        let text = std::fs::read_to_string(&cfg).unwrap().replacen(
            "cores = 4\n",
            &format!("cores = 4\n{edit}\n"),
            1,
        );
        std::fs::write(&cfg, text).unwrap();
        let err = fails(&cfg);
        assert!(err.contains(key) && err.contains(why), "{edit}: {err}");
    }
}
