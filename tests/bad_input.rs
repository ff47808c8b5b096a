//! Every user-facing error path on bad input, a test each (or a table of cases where many checks
//! share one shape, as a workload's field checks do): experiment configs, workload files, index
//! traces (`.daeidx`, `.npy`), graph and triples files, memory traces and presets for
//! `dae-sim mem`, sweeps and `trace gen`'s options. Each runs the `dae-sim` binary on a small bad
//! input written to a temporary directory and checks that it fails cleanly (exit code 2, one
//! `error: ` line, no panic) with a message that names the file, the line, key or byte offset,
//! and the value at fault.

#[allow(dead_code)] // this suite needs only some of the shared helpers
mod common;

use common::{
    TestDir, broken_preset, configs, dae_sim_in, daeidx_workload, small_experiment, temp_dir, trace_workload,
    write_workload,
};
use dae_sim::experiment::{Experiment, Overrides};
use std::path::{Path, PathBuf};

/// Runs `dae-sim ARGS` in `dir`, which must fail cleanly: exit code 2, no panic, and a message
/// that starts with `error: `. Returns stderr.
fn fails(dir: &Path, args: &[&str]) -> String {
    let (code, err) = dae_sim_in(dir, args);
    assert_eq!(code, Some(2), "dae-sim {args:?}: exit code; stderr: {err}");
    assert!(!err.contains("panicked"), "dae-sim {args:?}: {err}");
    assert!(err.starts_with("error: "), "dae-sim {args:?}: {err}");
    err
}

/// Asserts that `err` holds each of `parts`.
fn says(err: &str, parts: &[&str]) {
    for p in parts {
        assert!(err.contains(p), "{p:?} is not in: {err}");
    }
}

/// `dae-sim --config CONFIG --quiet`, which must fail cleanly; returns stderr.
fn config_fails(config: &Path) -> String {
    fails(Path::new("."), &["--config", config.to_str().unwrap(), "--quiet"])
}

/// `dae-sim compile --workload WORKLOAD`, which must fail cleanly; returns stderr.
fn compile_fails(workload: &Path) -> String {
    fails(Path::new("."), &["compile", "--workload", workload.to_str().unwrap()])
}

/// The small experiment (see [`small_experiment`]) in a fresh directory `tag`, with its first
/// `from` replaced by `to`: the directory (keep it while the file is used) and the file.
fn edited_experiment(tag: &str, from: &str, to: &str) -> (TestDir, PathBuf) {
    let dir = temp_dir(tag);
    let cfg = small_experiment(&dir, "");
    let text = std::fs::read_to_string(&cfg).unwrap();
    assert!(text.contains(from), "{from:?} is not in the small experiment");
    std::fs::write(&cfg, text.replacen(from, to, 1)).unwrap();
    (dir, cfg)
}

// ---------------------------------------------------------------------------------------------
// Experiment configs

#[test]
fn malformed_toml_names_file_line_and_column() {
    let dir = temp_dir("malformed");
    let path = dir.join("bad.toml");
    std::fs::write(&path, "[experiment]\nname = \"x\"\nseed = = 3\n").unwrap();
    let err = config_fails(&path);
    says(&err, &[&format!("{}:3:8: invalid TOML", path.display())]);
}

#[test]
fn a_memory_preset_name_in_a_system_says_how_to_name_one() {
    // serde said "invalid type: string, expected struct MemorySection".
    let (_dir, cfg) = edited_experiment(
        "memory-name",
        "cores = 4\naccess_unit",
        "cores = 4\nmemory = \"hbm3-h100\"\naccess_unit",
    );
    let err = config_fails(&cfg);
    says(
        &err,
        &[
            "system[1].memory: a system's memory is a table, not a preset name",
            "include = \"memory/hbm3-h100.toml\"",
        ],
    );
    assert!(!err.contains("MemorySection"), "{err}");
}

#[test]
fn unknown_key_is_named_with_a_suggestion() {
    let (_dir, cfg) = edited_experiment("unknown-key", "cores = 4\naccess_unit", "cors = 4\naccess_unit");
    let at = format!("{}:13:1: system[1].cors: unknown field `cors`", cfg.display());
    says(&config_fails(&cfg), &[&at, "(did you mean `cores`?)", "(value: 4)"]);
}

#[test]
fn a_value_of_the_wrong_type_names_the_key_and_the_value() {
    let (_dir, cfg) =
        edited_experiment("wrong-type", "cores = 4\naccess_unit", "cores = \"four\"\naccess_unit");
    let err = config_fails(&cfg);
    says(&err, &[&format!("{}:13:", cfg.display()), "system[1].cores: invalid type: string \"four\""]);
}

#[test]
fn a_missing_unit_is_named_with_the_value() {
    let (_dir, cfg) = edited_experiment(
        "missing-unit",
        "cores = 4\naccess_unit = \"none\"",
        "cores = 4\naccess_unit = \"none\"\ncore.clock = 3",
    );
    says(&config_fails(&cfg), &["system[1].core.clock: missing unit in 3", "\"3GHz\"", "(value: 3)"]);
}

#[test]
fn an_impossible_value_is_named_with_the_value() {
    let (_dir, cfg) =
        edited_experiment("impossible-value", "cores = 4\naccess_unit", "cores = 0\naccess_unit");
    let err = config_fails(&cfg);
    assert!(err.contains("system[1].cores: must be in 1..=4096 (value: 0)"), "{err}");
}

#[test]
fn a_wrong_unit_is_named_with_the_units_known() {
    let (_dir, cfg) = edited_experiment(
        "wrong-unit",
        "cores = 4\naccess_unit",
        "cores = 2\nmemory.latency = \"120 nsec\"\naccess_unit",
    );
    let err = config_fails(&cfg);
    says(&err, &["system[1].memory.latency: unknown unit \"nsec\"", "expected one of: ps, ns"]);
}

#[test]
fn a_missing_config_and_a_bad_baseline_are_errors() {
    let err = config_fails(Path::new("/nonexistent/experiment.toml"));
    assert!(err.contains("/nonexistent/experiment.toml: cannot read"), "{err}");
    let (_dir, cfg) = edited_experiment("baseline", "baseline = \"h100\"", "baseline = \"a100\"");
    let err = config_fails(&cfg);
    assert!(err.contains("report.baseline: no system is named \"a100\""), "{err}");
}

/// For each (edit, key, why): the small experiment with the line `edit` added after `anchor`
/// (in tag's directory) is refused at load with an error naming `key` and saying `why`.
fn each_edit_is_refused(tag: &str, anchor: &str, cases: &[(&str, &str, &str)]) {
    for (edit, key, why) in cases {
        let (_dir, cfg) = edited_experiment(tag, anchor, &format!("{anchor}\n{edit}"));
        let err = config_fails(&cfg);
        assert!(err.contains(key) && err.contains(why), "{edit}: {err}");
    }
}

#[test]
fn names_that_would_be_paths_or_blank_are_refused() {
    // The experiment's name is its default output folder: "../x" once wrote outside out/, "/x"
    // into any absolute folder and "" into out/ itself. Blank system and workload names left
    // blank report columns.
    for (from, to, key) in [
        ("name = \"small\"", "name = \"../escaped\"", "experiment.name"),
        ("name = \"small\"", "name = \"/tmp/abs\"", "experiment.name"),
        ("name = \"small\"", "name = \"\"", "experiment.name"),
        ("name = \"cpu\"", "name = \" \"", "system[1].name"),
    ] {
        let (_dir, cfg) = edited_experiment("names", from, to);
        let err = config_fails(&cfg);
        assert!(err.contains(key), "{to}: {err}");
    }
    // A zero time limit stopped every run at once, each failing "still running after 0 ps".
    let (_dir, cfg) = edited_experiment("names", "seed = 42", "seed = 42\nmax_sim_time = \"0ns\"");
    let err = config_fails(&cfg);
    assert!(err.contains("experiment.max_sim_time") && err.contains("above zero"), "{err}");
    let (_dir, cfg) = edited_experiment("names", "[report]", "name = \"\"\n[report]");
    let err = config_fails(&cfg);
    assert!(err.contains("workload[0].name") && err.contains("must not be empty"), "{err}");
}

/// The plain CPU system's table in the small experiment: edits after it apply to system[1].
const CPU_SYSTEM: &str = "cores = 4\naccess_unit = \"none\"";

#[test]
fn out_of_range_core_and_access_unit_sizes_are_named() {
    // The second system (the plain CPU) gets the bad value.
    each_edit_is_refused(
        "core-range",
        CPU_SYSTEM,
        &[
            ("core = { rob_entries = 4000000000 }", "system[1].core.rob_entries", "must be 1 to 65536"),
            ("core = { lq_entries = 0 }", "system[1].core.lq_entries", "must be 1 to 65536"),
            (
                "core = { functional_units = { alu = 0, muldiv = 1, vector = 1, load = 1, store = 1 } }",
                "system[1].core.functional_units.alu",
                "must be 1 to 64",
            ),
            ("core = { datapath_bits = 100 }", "system[1].core.datapath_bits", "multiple of 32 up to 2048"),
            ("memory = { link_latency = \"1ms\" }", "system[1].memory.link_latency", "at most a million"),
        ],
    );
    let (_dir, cfg) = edited_experiment(
        "au-range",
        "cores = 4\n",
        "cores = 4\naccess_unit = { storage = \"16KiB\", max_outstanding = 8, requests_per_cycle = 1, \
         events_per_cycle = 1, outq_entries = 8, lanes = 65 }\n",
    );
    let err = config_fails(&cfg);
    assert!(err.contains("system[0].access_unit.lanes") && err.contains("must be 1 to 64"), "{err}");
}

#[test]
fn values_the_components_would_refuse_at_build_are_named_at_load() {
    // Each once failed only when its pair ran, without the file or the key.
    each_edit_is_refused(
        "build-range",
        CPU_SYSTEM,
        &[
            (
                "core = { max_outstanding = 4000000000 }",
                "system[1].core.max_outstanding",
                "must be 1 to 1048576",
            ),
            (
                "core = { mispredict_penalty = 4000000000 }",
                "system[1].core.mispredict_penalty",
                "must be 0 to",
            ),
            (
                "noc = { topology = { kind = \"crossbar\", cycles = 8 }, max_in_flight = 0 }",
                "noc.max_in_flight",
                "at least 1",
            ),
            (
                "noc = { topology = { kind = \"crossbar\", cycles = 8 }, bank_queue = 0 }",
                "noc.bank_queue",
                "at least 1",
            ),
            (
                "noc = { topology = { kind = \"crossbar\", cycles = 8 }, port_bytes = \"0B\" }",
                "noc.port_bytes",
                "at least 1",
            ),
            (
                "noc = { topology = { kind = \"crossbar\", cycles = 8 }, max_in_flight = 4000000000 }",
                "noc.max_in_flight",
                "above the supported maximum",
            ),
            (
                "noc = { topology = { kind = \"crossbar\", cycles = 9000000000000000000 } }",
                "noc.topology.cycles",
                "above the supported maximum of 1000000 cycles",
            ),
            (
                "noc = { topology = { kind = \"mesh\", cols = 0, rows = 2, cycles_per_hop = 1 } }",
                "noc.topology.cols",
                "at least 1",
            ),
            (
                "noc = { topology = { kind = \"mesh\", cols = 2, rows = 2, cycles_per_hop = 1, \
                 upstream_nodes = [0, 9] } }",
                "noc.topology.upstream_nodes",
                "upstream_nodes[1] = 9 is outside the 4 nodes",
            ),
            (
                "noc = { topology = { kind = \"crossbar\", cycles = 8 }, granule = \"32B\" }",
                "noc.granule",
                "must be at least the line size (64B)",
            ),
            (
                "caches.llc_banks = 100000",
                "system[1].caches.llc_banks",
                "must be 0 (one bank per core) to 4096",
            ),
        ],
    );
}

#[test]
fn gpu_values_that_would_panic_or_exhaust_the_host_are_named_at_load() {
    each_edit_is_refused(
        "gpu-range",
        "name = \"h100\"",
        &[
            // 8388608 x 512 threads once wrapped to 0 in u32 and divided by it.
            (
                "gpu_sim.kernel.registers_per_thread = 8388608",
                "gpu_sim.kernel.registers_per_thread",
                "must be 1 to 255",
            ),
            ("gpu.sms = 100000", "system[2].gpu.sms", "must be 1 to 4096"),
            ("gpu_sim.schedulers = 4294967295", "gpu_sim.schedulers", "must be 1 to 64"),
            ("gpu_sim.l1.size = \"4GiB\"", "gpu_sim.l1.size", "more lines than the supported"),
            ("gpu.clock = \"0GHz\"", "gpu.clock", "must be above 0 Hz"),
            ("gpu_sim.l2.max_in_flight = 4294967295", "gpu_sim.l2.max_in_flight", "must be 1 to 1048576"),
            // Too few warp slots for a block: the threads per block, not the registers.
            (
                "gpu.warps_per_sm = 8",
                "gpu_sim.kernel.threads_per_block",
                "needs more warps than gpu.warps_per_sm",
            ),
            // The simulated bandwidth is reported as a share of this: it must be the memory's.
            (
                "gpu.hbm_bandwidth = \"0.5TB/s\"",
                "system[2].gpu.hbm_bandwidth",
                "differs from the peak of the memory",
            ),
            // Either side may be the one edited: the message names the memory preset's file too.
            ("gpu.hbm_bandwidth = \"0.5TB/s\"", "system[2].gpu.hbm_bandwidth", "memory.dram in "),
            ("gpu.hbm_bandwidth = \"0.5TB/s\"", "system[2].gpu.hbm_bandwidth", "/memory/hbm3-h100.toml)"),
        ],
    );
}

#[test]
fn caches_too_large_for_host_memory_are_refused_before_anything_is_built() {
    // Four 4 GiB LLC banks pass every per-cache check, but their tags and replacement state
    // would take about 8 GiB of host memory, allocated when the chip is built: an abort.
    let (_dir, cfg) = edited_experiment(
        "huge-llc",
        "cores = 4\naccess_unit = \"none\"",
        "cores = 4\naccess_unit = \"none\"\ncaches.llc.size = \"4GiB\"",
    );
    let err = config_fails(&cfg);
    says(&err, &["system[1].caches: the chip's caches hold", "above the supported maximum of 67108864"]);
}

#[test]
fn too_little_stream_storage_for_the_lanes_names_both_keys() {
    let (_dir, cfg) =
        edited_experiment("au-storage", "cores = 4\n", "cores = 4\naccess_unit.storage = \"100B\"\n");
    let err = config_fails(&cfg);
    says(
        &err,
        &[
            &format!("{}:", cfg.display()),
            "system[0].access_unit.storage: 100B over 8 lanes (access_unit.lanes)",
        ],
    );
}

#[test]
fn a_zero_sized_output_queue_names_the_key_and_the_value() {
    let (_dir, cfg) =
        edited_experiment("zero-outq", "cores = 4\n", "cores = 4\naccess_unit.outq_entries = 0\n");
    let err = config_fails(&cfg);
    says(
        &err,
        &[
            &format!("{}:", cfg.display()),
            "system[0].access_unit.outq_entries: must be at least 1 (value: 0)",
        ],
    );
}

/// System presets are included by path: a preset that does not exist is an include that
/// cannot be read, named where it is included.
#[test]
fn an_unknown_system_preset_names_the_include_and_the_file() {
    let (_dir, cfg) = edited_experiment("missing-include", "systems/h100-sxm.toml", "systems/h900-sxm.toml");
    let err = config_fails(&cfg);
    says(&err, &[&format!("{}:18:1: include = \"", cfg.display()), "cannot read ", "h900-sxm.toml"]);
}

#[test]
fn an_included_file_with_bad_toml_names_that_file_and_its_line() {
    let dir = temp_dir("bad-include");
    std::fs::write(dir.join("base.toml"), "kind = \"dae\"\ncores = [\n").unwrap();
    let cfg = small_experiment(&dir, "");
    let text = std::fs::read_to_string(&cfg).unwrap();
    let dae = configs().join("systems/dae-hbm3.toml").display().to_string();
    std::fs::write(&cfg, text.replacen(&dae, "base.toml", 1)).unwrap();
    let err = config_fails(&cfg);
    says(&err, &["include = \"base.toml\"", "base.toml:2:", "invalid TOML"]);
}

// ---------------------------------------------------------------------------------------------
// Workload files

#[test]
fn bad_workloads_and_compiler_settings_name_the_file_and_field() {
    let dir = temp_dir("bad-workload");
    let base = "name = \"w\"\nop = \"embedding_bag\"\ntables = 1\nrows = 100\ndim = 8\ndtype = \"f32\"\n\
                batch = 2\nbag_size = 4\n[indices]\ndistribution = \"uniform\"\n";
    for (n, (edit, want)) in [
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
                "op = \"embedding_bag\"\ntables = 1\nrows = 100\ndim = 8\ndtype = \"f32\"\nbatch = 2\nbag_size = 4",
                "op = \"kg_score\"\nrows = 100\ndim = 8\ndtype = \"f32\"\nbatch = 2\nrelations = 2\nmodel = \"distmult\"\npooling = \"max\"",
            ),
            "pooling: kg_score scores each candidate tail; it pools nothing",
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
        let err = compile_fails(&path);
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
            "compiler = { passes = [\"decouple\", \"decouple\"] }",
            "system[0].compiler.passes",
            "pass `decouple` is listed twice",
        ),
        ("compiler = { passes = [\"\"] }", "system[0].compiler.passes", "\"\" is not one pass name"),
        (
            "compiler = { passes = [\"decouple,vectorize\"] }",
            "system[0].compiler.passes",
            "\"decouple,vectorize\" is not one pass name",
        ),
        (
            "compiler = { partition = \"tablewise\" }",
            "system[0].compiler.partition",
            "unknown variant `tablewise`, expected one of `cost`, `tables`, `split`",
        ),
    ] {
        let (_dir, cfg) = edited_experiment("bad-compiler", "cores = 4\n", &format!("cores = 4\n{edit}\n"));
        let err = config_fails(&cfg);
        assert!(err.contains(key) && err.contains(why), "{edit}: {err}");
    }
}

/// A small embedding-bag workload `w.toml` in a fresh directory `tag`, with `extra` appended:
/// the directory (keep it while the file is used) and the file.
fn workload(tag: &str, op: &str, extra: &str) -> (TestDir, PathBuf) {
    let dir = temp_dir(tag);
    let path = dir.join("w.toml");
    let text = format!(
        "name = \"w\"\nop = \"{op}\"\ntables = 1\nrows = 100\ndim = 8\ndtype = \"f32\"\nbatch = 2\n\
         bag_size = 4\n{extra}"
    );
    std::fs::write(&path, text).unwrap();
    (dir, path)
}

#[test]
fn an_unknown_op_names_the_file_line_and_the_known_ones() {
    let (_dir, wl) = workload("unknown-op", "spmv", "[indices]\ndistribution = \"uniform\"\n");
    let line = format!("{}:2:1: op: unknown variant `spmv`", wl.display());
    says(&compile_fails(&wl), &[&line, "expected one of `embedding_bag`"]);
}

#[test]
fn a_zipf_alpha_that_is_not_positive_names_the_key_and_the_value() {
    let (_dir, wl) =
        workload("bad-alpha", "embedding_bag", "[indices]\ndistribution = \"zipf\"\nalpha = -1.0\n");
    let err = compile_fails(&wl);
    let line = format!("{}:11:1: indices.alpha: -1 must be a positive number (value: -1.0)", wl.display());
    assert!(err.contains(&line), "{err}");
}

#[test]
fn a_bad_npy_trace_names_the_file_the_key_and_the_fault() {
    let dir = temp_dir("trace-bad");
    let outside: Vec<i64> = (0..12).map(|j| if j == 7 { 50 } else { j }).collect();
    let wl = trace_workload(&dir, Some(&outside));
    let err = compile_fails(&wl);
    assert!(err.contains(&wl.display().to_string()), "{err}");
    says(&err, &["trace.indices", "indices.npy: indices[7] = 50 is outside the table's 50 rows"]);
    // Offsets for another batch, a missing file, and an array of floats.
    let text = std::fs::read_to_string(&wl).unwrap();
    for (edit, want) in [
        (text.replace("batch = 3", "batch = 4"), "7 offsets, but tables x batch + 1 = 2 x 4 + 1 = 9"),
        (text.replace("\"indices.npy\"", "\"missing.npy\""), "missing.npy: cannot read"),
    ] {
        std::fs::write(&wl, edit).unwrap();
        says(&compile_fails(&wl), &[want]);
    }
    std::fs::write(&wl, &text).unwrap();
    dae_sim::npy::write(&dir.join("indices.npy"), &[2], &[0.5f32, 1.5]).unwrap();
    let err = compile_fails(&wl);
    assert!(err.contains("trace.indices") && err.contains("not a little-endian integer"), "{err}");
}

#[test]
fn a_negative_row_id_in_a_npy_trace_names_the_file_and_the_element() {
    let dir = temp_dir("trace-negative");
    let rows: Vec<i64> = (0..12).map(|j| if j == 3 { -1 } else { j }).collect();
    let wl = trace_workload(&dir, Some(&rows));
    let err = compile_fails(&wl);
    says(&err, &["trace.indices", "indices.npy: indices[3] = -1 is outside the table's 50 rows"]);
}

#[test]
fn bad_bag_lengths_in_a_npy_trace_name_the_file_and_the_element() {
    let dir = temp_dir("trace-lengths-bad");
    trace_workload(&dir, None);
    let wl = write_workload(&dir, "traced", "lengths = \"lengths.npy\"\nindices = \"indices.npy\"");
    for (lengths, want) in [
        (vec![2i64, 0, -3, 1, 4, 2], "lengths.npy: lengths[2] = -3 is negative"),
        (vec![2, 0, 3, 1, 4], "lengths.npy: as offsets (0, then the lengths' running sums): 6 offsets"),
    ] {
        dae_sim::npy::write(&dir.join("lengths.npy"), &[lengths.len()], &lengths).unwrap();
        let err = compile_fails(&wl);
        says(&err, &["trace.lengths", want]);
    }
    // Offsets that start above 0 are named with their values (once Rust's `Some(1)`).
    let offsets: [i64; 7] = [1, 2, 2, 5, 6, 10, 12];
    dae_sim::npy::write(&dir.join("offsets.npy"), &[offsets.len()], &offsets).unwrap();
    let wl = write_workload(&dir, "offs", "offsets = \"offsets.npy\"\nindices = \"indices.npy\"");
    says(&compile_fails(&wl), &["offsets must run from 0 to the 12 row ids; they run from 1 to 12"]);
    let both = write_workload(&dir, "both", "lengths = \"l.npy\"\noffsets = \"o.npy\"\nindices = \"i.npy\"");
    says(&compile_fails(&both), &["trace", "give offsets or lengths, not both"]);
}

#[test]
fn a_daeidx_trace_of_another_shape_or_a_corrupt_one_names_the_key_and_file() {
    let dir = temp_dir("daeidx-bad");
    let wl = daeidx_workload(&dir);
    let text = std::fs::read_to_string(&wl).unwrap();
    for (edit, want) in [
        (
            text.replace("batch = 3", "batch = 4"),
            "the trace has 3 bags per table (batch), but the workload's batch = 4",
        ),
        (text.replace("tables = 2", "tables = 3"), "the trace has 2 tables, but the workload's tables = 3"),
        (
            text.replace("rows = 50", "rows = 40"),
            "the trace's row ids run below rows = 50, more than the workload's rows = 40",
        ),
        (text.replace("file = ", "offsets = \"o.npy\"\nfile = "), "not both"),
    ] {
        std::fs::write(&wl, edit).unwrap();
        says(&compile_fails(&wl), &["trace", want]);
    }
    std::fs::write(&wl, &text).unwrap();
    let p = dir.join("t.daeidx");
    let mut bytes = std::fs::read(&p).unwrap();
    let n = bytes.len();
    bytes[n - 1] ^= 1;
    std::fs::write(&p, bytes).unwrap();
    says(&compile_fails(&wl), &["trace.file", "t.daeidx: byte", "checksum mismatch"]);
}

#[test]
fn a_npy_trace_without_its_other_array_names_the_key() {
    let dir = temp_dir("trace-half");
    let wl = write_workload(&dir, "half", "offsets = \"offsets.npy\"");
    let err = compile_fails(&wl);
    says(&err, &[&format!("{}:", wl.display()), "trace"]);
}

// ---------------------------------------------------------------------------------------------
// `.daeidx` index traces, read by `trace info`: a file from `trace gen` with bytes corrupted.
// 1 table of 4 bags of 3 u32 row ids below 100: the header (48 bytes), offsets 0, 3, 6, 9, 12
// (bytes 48 to 88), 12 row ids (88 to 136), the CRC-32 (136 to 140).

/// `trace info` on a generated `t.daeidx` after `corrupt` has changed its bytes; returns stderr.
fn corrupt_daeidx(tag: &str, corrupt: impl FnOnce(&mut Vec<u8>)) -> String {
    let dir = temp_dir(tag);
    let shape = ["--tables", "1", "--rows", "100", "--batch", "4", "--bag-size", "3"];
    let (code, err) = dae_sim_in(&dir, &[&["trace", "gen", "--out", "t.daeidx"][..], &shape].concat());
    assert_eq!(code, Some(0), "{err}");
    let mut bytes = std::fs::read(dir.join("t.daeidx")).unwrap();
    assert_eq!(bytes.len(), 140, "the layout above");
    corrupt(&mut bytes);
    std::fs::write(dir.join("t.daeidx"), bytes).unwrap();
    fails(&dir, &["trace", "info", "t.daeidx"])
}

#[test]
fn dictionaries_with_another_kind_than_kg_are_refused() {
    let dir = temp_dir("info-dicts");
    let trace = configs().join("../traces/example.daeidx").display().to_string();
    let args = ["trace", "info", &trace, "--kind", "daeidx", "--entity-dict", "e", "--relation-dict", "r"];
    let err = fails(&dir, &args);
    says(
        &err,
        &["--entity-dict and --relation-dict read a knowledge-graph triples file", "not --kind daeidx"],
    );
}

#[test]
fn daeidx_wrong_magic_names_byte_0_and_the_bytes_found() {
    let err = corrupt_daeidx("daeidx-magic", |b| b[..4].copy_from_slice(b"JUNK"));
    says(&err, &["t.daeidx: byte 0: bad magic [4a, 55, 4e, 4b, 4e, 44, 45, 58]", "\"DAEINDEX\""]);
}

#[test]
fn daeidx_wrong_version_names_byte_8_and_the_version() {
    let err = corrupt_daeidx("daeidx-version", |b| b[8] = 7);
    says(&err, &["t.daeidx: byte 8: unsupported format version 7 (this dae-sim reads version 1)"]);
}

#[test]
fn daeidx_unknown_row_id_type_names_byte_10_and_the_code() {
    let err = corrupt_daeidx("daeidx-dtype", |b| b[10] = 2);
    says(&err, &["t.daeidx: byte 10: unknown row id type 2"]);
}

#[test]
fn daeidx_truncated_file_names_its_length_and_what_the_header_needs() {
    let err = corrupt_daeidx("daeidx-truncated", |b| b.truncate(100));
    says(&err, &["t.daeidx: truncated at byte 100: the header's counts", "need 140 bytes"]);
}

#[test]
fn daeidx_truncated_header_names_the_byte() {
    let err = corrupt_daeidx("daeidx-short", |b| b.truncate(8));
    says(&err, &["t.daeidx: truncated at byte 8: the header needs 48 bytes, the file has 8"]);
}

#[test]
fn daeidx_corrupted_checksum_names_its_byte_and_both_sums() {
    let err = corrupt_daeidx("daeidx-checksum", |b| b[139] ^= 0x80);
    says(&err, &["t.daeidx: byte 136: checksum mismatch: stored 0x", ", computed 0x"]);
}

#[test]
fn daeidx_row_id_out_of_range_names_its_byte_bag_and_value() {
    let err = corrupt_daeidx("daeidx-row", |b| b[92..96].copy_from_slice(&100u32.to_le_bytes()));
    says(
        &err,
        &["t.daeidx: byte 92: batch 0, table 0, bag 0: row id 100 is out of range for a table of 100 rows"],
    );
}

#[test]
fn daeidx_offsets_that_decrease_name_their_byte_and_values() {
    let err = corrupt_daeidx("daeidx-offsets", |b| b[64..72].copy_from_slice(&2u64.to_le_bytes()));
    says(
        &err,
        &[
            "t.daeidx: byte 64: batch 0, table 0: offsets not monotone: offsets[2] = 2 is below offsets[1] = 3",
        ],
    );
}

// ---------------------------------------------------------------------------------------------
// `.npy` arrays, read by `trace info --offsets --indices`: one bag of 3 row ids.

/// `trace info` on `o.npy` (offsets 0, 3) and `i.npy`, whose bytes `indices` writes; returns
/// stderr.
fn bad_npy(tag: &str, indices: impl FnOnce(&Path)) -> String {
    let dir = temp_dir(tag);
    dae_sim::npy::write(&dir.join("o.npy"), &[2], &[0i64, 3]).unwrap();
    indices(&dir.join("i.npy"));
    fails(&dir, &["trace", "info", "--offsets", "o.npy", "--indices", "i.npy", "--tables", "1"])
}

#[test]
fn npy_without_the_magic_names_the_file_and_offset_0() {
    let err = bad_npy("npy-magic", |p| std::fs::write(p, b"NUMPY\x01\x00{}").unwrap());
    says(&err, &["i.npy: not a .npy file (no \\x93NUMPY magic at offset 0)"]);
}

#[test]
fn npy_header_without_a_dtype_names_the_file() {
    let header = "{'fortran_order': False, 'shape': (3,), }\n";
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend_from_slice(&(header.len() as u16).to_le_bytes());
    bytes.extend_from_slice(header.as_bytes());
    let err = bad_npy("npy-header", |p| std::fs::write(p, &bytes).unwrap());
    says(&err, &["i.npy: header has no 'descr'"]);
}

#[test]
fn npy_of_floats_names_the_file_and_the_dtype() {
    let err = bad_npy("npy-dtype", |p| dae_sim::npy::write(p, &[3], &[0.5f32, 1.0, 2.0]).unwrap());
    says(&err, &["i.npy: dtype '<f4' is not a little-endian integer"]);
}

#[test]
fn npy_negative_index_names_the_file_the_element_and_the_value() {
    let err = bad_npy("npy-negative", |p| dae_sim::npy::write(p, &[3], &[4i64, -7, 2]).unwrap());
    assert_eq!(err.trim_end(), "error: i.npy: indices[1] = -7 is negative");
}

// ---------------------------------------------------------------------------------------------
// Graph and knowledge-graph files

/// A missing file, a malformed line or an id out of range, in a graph file or a triples file,
/// is an error naming the config file, the key, the data file and its line; never a panic.
#[test]
fn bad_graph_and_triples_files_name_the_file_the_line_and_the_key() {
    let dir = temp_dir("bad-files");
    let write = |name: &str, text: &str| {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    };
    let graph = write(
        "g.toml",
        "name = \"g\"\nop = \"gnn_aggregate\"\ndim = 8\ndtype = \"f32\"\n\n[graph]\nfile = \"data/g.txt\"\n\
         format = \"snap\"\nvertices = 4\n",
    );
    let kg = write(
        "kg.toml",
        "name = \"kg\"\nop = \"kg_score\"\nmodel = \"transe\"\nrows = 10\nrelations = 3\nnegatives = 2\n\
         dim = 8\ndtype = \"f32\"\nbatch = 2\ntriples = \"data/t.tsv\"\n",
    );
    std::fs::create_dir_all(dir.join("data")).unwrap();
    let data = |name: &str| dir.join("data").join(name);
    let run = |wl: &Path| {
        let err = compile_fails(wl);
        assert!(err.contains(&wl.display().to_string()), "the config file: {err}");
        err
    };
    // Missing files.
    let err = run(&graph);
    assert!(err.contains("graph.file") && err.contains("data/g.txt: cannot read"), "{err}");
    let err = run(&kg);
    assert!(err.contains("triples") && err.contains("data/t.tsv: cannot read"), "{err}");
    // Malformed lines and ids out of range, with their line numbers.
    for (text, want) in [
        ("# c\n0 1\n1 2 3\n", "g.txt:3: expected `from to` (2 fields), found 3"),
        ("0 1\n2 four\n", "g.txt:2: \"four\" is not a vertex id"),
        ("0 1\n1 2\n3 4\n", "g.txt:3: vertex 4 is not below vertices = 4"),
    ] {
        std::fs::write(data("g.txt"), text).unwrap();
        let err = run(&graph);
        assert!(err.contains("graph.file") && err.contains(want), "{want}: {err}");
    }
    for (text, want) in [
        ("0\t1\t2\n3\t1\n", "t.tsv:2: expected `head relation tail` (3 fields), found 2"),
        ("0\t1\t2\n3\t3\t4\n", "t.tsv:2: relation 3 is not below relations = 3"),
        ("0\t1\t10\n", "t.tsv:1: tail 10 is not below rows = 10"),
        ("0\t1\t2\n", "data/t.tsv: 2 triples, but the triples file has 1"),
    ] {
        std::fs::write(data("t.tsv"), text).unwrap();
        let err = run(&kg);
        let key = if want.contains("but the triples file") { "batch:" } else { "triples" };
        assert!(err.contains(want) && err.contains(key), "{want}: {err}");
    }
    // In an experiment, the key is the workload's.
    std::fs::write(data("g.txt"), "0 1\n1 x\n").unwrap();
    let cfg = small_experiment(&dir, &format!("\n[[workload]]\ninclude = \"{}\"\n", graph.display()));
    let e = Experiment::load(&cfg, &Overrides::default()).unwrap_err().to_string();
    assert!(e.contains("workload[1].graph.file") && e.contains("g.txt:2: \"x\" is not a vertex id"), "{e}");
    // Good files run.
    std::fs::write(data("g.txt"), "0 1\n1 2\n3 0\n").unwrap();
    std::fs::write(data("t.tsv"), "0\t1\t2\n3\t2\t9\n").unwrap();
    for wl in [&graph, &kg] {
        let (code, err) = dae_sim_in(&dir, &["compile", "--workload", wl.to_str().unwrap()]);
        assert_eq!(code, Some(0), "{err}");
    }
}

/// A graph file whose name ends in `.gz` but that is not gzip data (or is cut short) is an
/// error naming the config file, the key and the data file, in a workload and in `trace info`;
/// the same edges compressed read and compile. (The decompressed-size limit:
/// `data_file`'s unit tests.)
#[test]
fn a_corrupt_gz_graph_file_names_the_file_and_the_key() {
    use std::io::Write;
    let dir = temp_dir("bad-gz");
    std::fs::create_dir_all(dir.join("data")).unwrap();
    let wl = dir.join("g.toml");
    std::fs::write(
        &wl,
        "name = \"g\"\nop = \"gnn_aggregate\"\ndim = 8\ndtype = \"f32\"\n\n[graph]\nfile = \"data/g.txt.gz\"\n\
         format = \"snap\"\nself_loops = \"drop\"\n",
    )
    .unwrap();
    let gz = dir.join("data/g.txt.gz");
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(b"# CRLF\r\n0\t1\r\n1\t1\r\n1\t2\r\n3\t0\r\n").unwrap();
    let good = e.finish().unwrap();
    for bytes in [b"0 1\n1 2\n".to_vec(), good[..good.len() / 2].to_vec()] {
        std::fs::write(&gz, bytes).unwrap();
        let err = compile_fails(&wl);
        assert!(err.contains(&wl.display().to_string()), "the config file: {err}");
        says(&err, &["graph.file", "data/g.txt.gz: cannot decompress (gzip): "]);
        let err = fails(&dir, &["trace", "info", "--kind", "snap", "data/g.txt.gz"]);
        assert!(err.starts_with("error: data/g.txt.gz: cannot decompress (gzip): "), "{err}");
    }
    std::fs::write(&gz, &good).unwrap();
    let (code, err) = dae_sim_in(&dir, &["compile", "--workload", wl.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{err}");
}

/// `trace info --kind KIND FILE` on a file `name` holding `text`, which must fail; returns stderr.
fn info_fails(tag: &str, kind: &str, name: &str, text: &str) -> String {
    let dir = temp_dir(tag);
    std::fs::write(dir.join(name), text).unwrap();
    fails(&dir, &["trace", "info", "--kind", kind, name])
}

#[test]
fn snap_line_that_does_not_parse_names_the_file_the_line_and_the_token() {
    let err = info_fails("snap-line", "snap", "g.txt", "# edges\n0 1\n1 -2\n");
    assert_eq!(err.trim_end(), "error: g.txt:3: \"-2\" is not a vertex id (a non-negative integer)");
}

#[test]
fn matrix_market_bad_banner_names_line_1_and_what_it_found() {
    let err = info_fails("mtx-banner", "mtx", "g.mtx", "%%MatrixMarket matrix array real general\n2 2\n");
    says(&err, &["g.mtx:1: only `matrix coordinate` files are graphs, found `matrix array`"]);
}

#[test]
fn matrix_market_bad_size_line_names_the_line_and_the_value() {
    let text = "%%MatrixMarket matrix coordinate pattern general\n% a comment\n3 three 2\n1 2\n";
    let err = info_fails("mtx-size", "mtx", "g.mtx", text);
    says(&err, &["g.mtx:3: cols \"three\" is not a non-negative integer"]);
}

#[test]
fn cora_paper_beyond_the_vertex_count_names_the_file_the_line_and_the_paper() {
    let dir = temp_dir("cora-id");
    std::fs::write(dir.join("g.cites"), "35 1033\n35 103482\n1033 4242\n").unwrap();
    let wl = dir.join("cora.toml");
    let text = "name = \"cora\"\nop = \"gnn_aggregate\"\ndim = 8\ndtype = \"f32\"\n\n[graph]\n\
                file = \"g.cites\"\nformat = \"cora\"\nvertices = 3\n";
    std::fs::write(&wl, text).unwrap();
    let err = compile_fails(&wl);
    says(&err, &["graph.file", "g.cites:3: paper \"4242\" is distinct paper 4, beyond vertices = 3"]);
}

#[test]
fn triples_line_that_does_not_parse_names_the_file_the_line_and_the_field() {
    let err = info_fails("kg-line", "kg", "t.tsv", "0\t1\t2\n3\tr\t4\n");
    assert_eq!(err.trim_end(), "error: t.tsv:2: relation \"r\" is not an id (a non-negative integer)");
}

// ---------------------------------------------------------------------------------------------
// Memory traces and presets for `dae-sim mem`

/// The HBM3-6400 preset.
fn memory() -> String {
    configs().join("memory/hbm3-6400.toml").display().to_string()
}

/// `dae-sim mem --memory HBM3-6400 --trace FILE --format FORMAT` on a file `name` holding
/// `bytes`, which must fail; returns stderr.
fn mem_trace_fails(tag: &str, format: &str, name: &str, bytes: &[u8]) -> String {
    let dir = temp_dir(tag);
    std::fs::write(dir.join(name), bytes).unwrap();
    fails(&dir, &["mem", "--memory", &memory(), "--trace", name, "--format", format])
}

#[test]
fn dramsim3_line_that_does_not_parse_names_the_file_the_line_and_the_text() {
    let err =
        mem_trace_fails("dramsim3-line", "dramsim3", "bad.trace", b"0x40 READ 1\n# fine\n0x80 RAED 2\n");
    assert_eq!(
        err.trim_end(),
        "error: bad.trace:3: unknown request kind \"RAED\": expected READ or WRITE (also read, write, \
         P_MEM_RD, P_MEM_WR, BOFF) in \"0x80 RAED 2\""
    );
}

#[test]
fn ramulator_line_that_does_not_parse_names_the_file_the_line_and_the_address() {
    let err = mem_trace_fails("ramulator-line", "ramulator", "bad.trace", b"LD 0x40\nLD 40x\n");
    says(&err, &["error: bad.trace:2: invalid address \"40x\"", "in \"LD 40x\""]);
}

#[test]
fn address_beyond_capacity_names_file_line_and_address() {
    let text = b"LD 0x0\nLD 0xffffffffffffffc0\n";
    let err = mem_trace_fails("mem-capacity", "ramulator", "far.trace", text);
    says(
        &err,
        &["error: far.trace:2: address 0xffffffffffffffc0 (+64 B) is outside the memory's capacity of "],
    );
}

#[test]
fn trace_without_requests_is_an_error_naming_the_file() {
    for (tag, format, name, bytes) in [
        ("empty-text", "dramsim3", "empty.trace", &b"# only a comment\n\n"[..]),
        ("empty-ramulator", "ramulator", "empty.trace", &b""[..]),
    ] {
        let err = mem_trace_fails(tag, format, name, bytes);
        assert_eq!(err.trim_end(), format!("error: {name}: the trace holds no requests"), "{format}");
    }
}

#[test]
fn binary_trace_with_a_bad_magic_names_the_file_and_the_bytes_found() {
    let err = mem_trace_fails("binary-magic", "binary", "bad.bin", b"DAEINDEX\x01\x00\x00\x00");
    says(
        &err,
        &["error: bad.bin: not a dae-sim binary trace: the file starts with", "expected \"DAETRACE\""],
    );
}

#[test]
fn binary_trace_with_a_broken_checksum_names_the_file_its_byte_and_both_sums() {
    let mut bytes = std::fs::read(configs().join("../traces/example.bin")).unwrap();
    bytes[24 + 8] ^= 1;
    let err = mem_trace_fails("binary-checksum", "binary", "bad.bin", &bytes);
    says(
        &err,
        &["error: bad.bin: byte 792: checksum mismatch: the file stores 0x", "its records hash to 0x"],
    );
}

#[test]
fn unknown_preset_and_bad_options() {
    let here = Path::new(".");
    let err = fails(here, &["mem", "--memory", "hbm3-64OO"]);
    assert!(
        err.starts_with("error: unknown memory preset \"hbm3-64OO\" (did you mean `hbm3-6400`?)"),
        "{err}"
    );
    assert!(err.contains("hbm3-6400"), "{err}");
    // The folder's energy table is included by systems, not a memory: it is not offered.
    assert!(err.contains("hbm3-h100") && !err.contains("hbm3-energy"), "{err}");
    let err = fails(here, &["mem", "--memory", "/nonexistent/mem.toml"]);
    assert!(err.starts_with("error: /nonexistent/mem.toml: cannot read: "), "{err}");
    let memory = memory();
    let err = fails(here, &["mem", "--memory", &memory, "--read-ratio", "1.5"]);
    assert_eq!(err.trim_end(), "error: read ratio: 1.5 is not between 0 and 1");
    let err = fails(here, &["mem", "--memory", &memory, "--in-flight", "0"]);
    assert_eq!(err.trim_end(), "error: requests in flight: must be at least 1");
    let err = fails(here, &["mem", "--memory", &memory, "--trace", "none.trace", "--format", "dramsim3"]);
    assert!(err.starts_with("error: none.trace: cannot read: "), "{err}");
    // clap's own usage errors keep its exit code 2 too.
    let (code, _) = dae_sim_in(here, &["mem", "--memory", &memory, "--rate", "fast"]);
    assert_eq!(code, Some(2));
    let (code, _) = dae_sim_in(here, &["mem", "--memory", &memory, "--trace", "example.bin"]);
    assert_eq!(code, Some(2), "--trace needs --format");
    // A simple memory's latency past a second (sums of it once wrapped around).
    let dir = temp_dir("mem-simple-latency");
    let preset = dir.join("slow.toml");
    std::fs::write(
        &preset,
        "model = \"simple\"\nlatency = \"2s\"\nbandwidth = \"1TB/s\"\ncapacity = \"1GiB\"\nclock = \"1GHz\"\n",
    )
    .unwrap();
    let err = fails(here, &["mem", "--memory", preset.to_str().unwrap(), "--requests", "10"]);
    says(&err, &["slow.toml", "latency", "at most 1 s"]);
}

#[test]
fn bad_memory_file_names_file_line_and_key() {
    let dir = temp_dir("bad-memory");
    let base = std::fs::read_to_string(memory()).unwrap();
    let file = dir.join("mem.toml");
    std::fs::write(&file, format!("{base}\nunknown_key = 1\n")).unwrap();
    let err = fails(&dir, &["mem", "--memory", "mem.toml"]);
    says(&err, &["error: mem.toml:", "unknown_key"]);
}

#[test]
fn unknown_mapping_names_file_line_and_key() {
    let dir = temp_dir("bad-mapping");
    let (_, line) = broken_preset(&dir, "mapping", "mapping = \"RoBaCoCh\"");
    let at = format!("error: broken.toml:{line}:1: controller.mapping: unknown address mapping \"RoBaCoCh\"");
    says(&fails(&dir, &["mem", "--memory", "broken.toml"]), &[&at, "valid mappings: RoBaRaCoCh"]);
}

#[test]
fn zero_sized_queue_names_file_line_and_key() {
    let dir = temp_dir("zero-queue");
    let (_, line) = broken_preset(&dir, "read_queue", "read_queue = 0");
    let err = fails(&dir, &["mem", "--memory", "broken.toml"]);
    let want = format!("error: broken.toml:{line}:1: controller.read_queue: must be above zero (value: 0)");
    assert_eq!(err.trim_end(), want);
}

/// A preset included by a system (`[memory.dram] include = ...`) is a file of its own: its
/// errors name that file and line, under the system's key path, not the system's `include`.
#[test]
fn a_bad_value_in_a_systems_memory_preset_names_the_preset_file_and_line() {
    let h100 = configs().join("systems/h100-sxm.toml").display().to_string();
    // The DAE chip's memory (built for the DAE and CPU systems) and the H100's (its simulation).
    for (i, anchor) in [(0, "cores = 4\n".to_owned()), (2, format!("include = \"{h100}\"\n"))] {
        let (dir, cfg) = edited_experiment(
            &format!("preset-in-system-{i}"),
            &anchor,
            &format!("{anchor}memory.dram.include = \"broken.toml\"\n"),
        );
        let (_, line) = broken_preset(&dir, "read_queue", "read_queue = 0");
        let err = config_fails(&cfg);
        let want = format!(
            "broken.toml:{line}:1: system[{i}].memory.dram.controller.read_queue: must be above zero (value: 0)"
        );
        says(&err, &[&want]);
    }
}

#[test]
fn a_refresh_longer_than_its_interval_is_refused_at_load() {
    // nRFC (560 cycles) blocks the pseudo-channel at every refresh: an interval no longer than
    // that leaves no time to serve anything, which once showed only as a livelock at run time.
    let dir = temp_dir("rfc-interval");
    let (_, line) = broken_preset(&dir, "refresh_interval", "refresh_interval = \"nRFC\"");
    let err = fails(&dir, &["mem", "--memory", "broken.toml", "--requests", "100"]);
    let at = format!("error: broken.toml:{line}:1: latency.refresh_interval: 560 cycles leave no time");
    says(&err, &[&at, "blocks its banks for 560 cycles"]);
}

// ---------------------------------------------------------------------------------------------
// Sweeps and `trace gen`'s options

#[test]
fn bad_sweeps_are_refused_before_any_point_runs() {
    let dir = temp_dir("sweep-bad");
    let cases = [
        ("[[sweep.axis]]\nkey = \"system.dae.no_such_key\"\nvalues = [1]\n", "names no key"),
        // A typo gets the closest key of the table it is in.
        (
            "[[sweep.axis]]\nkey = \"system.dae.access_unit.max_outstandng\"\nvalues = [1]\n",
            "(did you mean `system.dae.access_unit.max_outstanding`?)",
        ),
        ("[[sweep.axis]]\nkey = \"system.dae.cores\"\nvalues = []\n", "at least one value"),
        ("[[sweep.axis]]\nkey = \"system.dae.cores\"\nvalues = [\"four\"]\n", "point 0"),
        (
            "mode = \"zip\"\n[[sweep.axis]]\nkey = \"system.dae.cores\"\nvalues = [1, 2]\n\
             [[sweep.axis]]\nkey = \"workload.emb-small.batch\"\nvalues = [8]\n",
            "as many values",
        ),
        (
            "[[sweep.axis]]\nkey = \"system.dae.cores\"\nvalues = [1]\n\
             [sweep.memory_curve]\nmemory = \"no-such-memory\"\n",
            "sweep.memory_curve",
        ),
        (
            "[[sweep.axis]]\nkey = \"system.dae.cores\"\nvalues = [1]\n\
             [sweep.memory_curve]\nmemory = \"hbm2\"\nrequests = []\n",
            "at least one request size",
        ),
        (
            "[[sweep.axis]]\nkey = \"system.dae.cores\"\nvalues = [1, 2]\n\
             [[sweep.axis]]\nkey = \"system[0].cores\"\nvalues = [3, 4]\n",
            "sets the same key as axis 0 (system[0].cores)",
        ),
    ];
    for (axes, want) in cases {
        let cfg = small_experiment(&dir, &format!("\n[sweep]\n{axes}"));
        let err = fails(&dir, &["sweep", "--config", cfg.to_str().unwrap(), "--out", "out"]);
        says(&err, &[&format!("{}:", cfg.display()), want]);
        // The file's name is followed by the line of the key at fault.
        let place = format!("{}:", cfg.display());
        let after = err.split_once(place.as_str()).map_or("", |(_, rest)| rest);
        assert!(after.starts_with(|c: char| c.is_ascii_digit()), "{axes}: no line in {err}");
        assert!(!dir.join("out").exists(), "{axes}: nothing runs");
    }
    let axes = "\n[sweep]\n[[sweep.axis]]\nkey = \"system.dae.cores\"\nvalues = [1, 2]\n";
    let cfg = small_experiment(&dir, axes);
    let err = fails(&dir, &["sweep", "--config", cfg.to_str().unwrap(), "--shard", "3/2"]);
    assert!(err.contains("--shard 3/2"), "{err}");
}

#[test]
fn bad_trace_gen_options_name_the_option_and_the_value() {
    let dir = temp_dir("trace-bad-opts");
    for (args, want) in [
        (vec!["--reuse", "1.5"], "--reuse 1.5: must be between 0 and 1"),
        (vec!["--distribution", "zipf", "--alpha=-1"], "--alpha -1: must be a positive number"),
        // The uniform draws have no exponent; it was silently ignored.
        (vec!["--alpha", "3"], "--alpha 3: applies to --distribution zipf, not uniform"),
        (vec!["--format", "npy", "--batches", "2"], "holds one batch"),
        (vec!["--tables", "0"], "--tables, --rows, --batch and --batches must be at least 1"),
        // Once an allocation failure (an abort, a backtrace) and an empty x.daeidx left behind.
        (
            vec!["--tables", "100000", "--batch", "100000", "--bag-size", "100000"],
            "more than this machine can allocate",
        ),
        // The per-table generators alone (an abort with a backtrace, exit 134).
        (
            vec!["--tables", "4294967295", "--batch", "1", "--bag-size", "1"],
            "--tables 4294967295: a generator",
        ),
    ] {
        let mut all = vec!["trace", "gen", "--out", "x.daeidx"];
        all.extend(args);
        says(&fails(&dir, &all), &[want]);
        assert!(!dir.join("x.daeidx").exists());
    }
}

/// A bad locality-statistics file (`trace locality`, `trace fit`) names the file and the line;
/// bad `trace fit` options name the option.
#[test]
fn bad_locality_stats_name_the_file_and_line() {
    let dir = temp_dir("locality-bad");
    let good = "x_t2.pt\nLocality stats after processing 1 batches of size 4\nAvg # of indices: 100\n\
                Avg # of unique cols: 50\nAvg col size: 2.0\nHistogram of col sizes:\n(0, 1]: 1.000\n(1+: 0.000\n\
                [0, 1]\n['0.000', '1.000', '1.000']\nRatio of index distribution at different column sizes:\n\
                (0, 1]: 1.000\n(1+: 0.000\n[0, 1]\n['0.000', '1.000', '1.000']\n";
    std::fs::write(dir.join("good.txt"), good).unwrap();
    for (name, from, to, want) in [
        (
            "cols.txt",
            "unique cols: 50",
            "unique cols: fifty",
            "cols.txt:4: `fifty` after `Avg # of unique cols:`",
        ),
        (
            "bin.txt",
            "(1+: 0.000\n[",
            "(2+: 0.000\n[",
            "bin.txt:8: expected the bin `(1, 2]: SHARE` or `(1+: SHARE`",
        ),
        ("edges.txt", "[0, 1]", "[0, 2]", "edges.txt:9: expected the bin edges [0, 1]"),
    ] {
        std::fs::write(dir.join(name), good.replacen(from, to, 1)).unwrap();
        says(&fails(&dir, &["trace", "locality", name]), &[want]);
        says(&fails(&dir, &["trace", "fit", "--locality", name, "--rows", "10"]), &[want]);
    }
    says(&fails(&dir, &["trace", "locality", "absent.txt"]), &["absent.txt: "]);
    for (args, want) in [
        (vec!["--block", "3"], "--block 3: good.txt has 1 blocks (0 to 0)"),
        (vec!["--min-alpha", "2", "--max-alpha", "1"], "--min-alpha 2 and --max-alpha 1"),
        // A grid that ran for hours; a range whose grid missed every useful exponent.
        (vec!["--grid", "100000000"], "--grid 100000000: 2 to 1000"),
        (vec!["--max-alpha", "1e300"], "at most 100"),
        (vec!["--lookups", "0"], "lookups 0: both must be at least 1"),
    ] {
        let mut all = vec!["trace", "fit", "--locality", "good.txt", "--rows", "10"];
        all.extend(args);
        says(&fails(&dir, &all), &[want]);
    }
}

/// Bad dictionaries and named triples: a name missing from a dictionary, a duplicate or
/// out-of-range id, a dictionary larger than the workload's table, dictionaries without the
/// other or without triples; each an error naming the config file, the key, the data file and
/// its line; never a panic.
#[test]
fn bad_dictionaries_name_the_key_the_file_and_the_line() {
    let dir = temp_dir("bad-dicts");
    std::fs::create_dir_all(dir.join("data")).unwrap();
    let kg = dir.join("kg.toml");
    let base = "name = \"kg\"\nop = \"kg_score\"\nmodel = \"transe\"\nrows = 4\nrelations = 2\nnegatives = 2\n\
                dim = 8\ndtype = \"f32\"\nbatch = 2\n";
    let files = "triples = \"data/t.txt\"\nentity_dict = \"data/e.dict\"\nrelation_dict = \"data/r.dict\"\n";
    let data = |name: &str, text: &str| std::fs::write(dir.join("data").join(name), text).unwrap();
    let run = |toml: &str| {
        std::fs::write(&kg, toml).unwrap();
        let o = common::dae_sim(&["compile", "--workload", kg.to_str().unwrap()]);
        let err = String::from_utf8_lossy(&o.stderr).to_string();
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(!err.contains("panicked") && err.contains(&kg.display().to_string()), "{err}");
        err
    };
    data("e.dict", "0\t/m/a\n1\t/m/b\n2\t/m/c\n");
    data("r.dict", "0\t/r/x\r\n1\t/r/y\r\n");
    data("t.txt", "/m/a\t/r/x\t/m/b\r\n/m/c\t/r/y\t/m/a\r\n");
    let toml = format!("{base}{files}");
    std::fs::write(&kg, &toml).unwrap();
    let o = common::dae_sim(&["compile", "--workload", kg.to_str().unwrap()]);
    assert!(o.status.success(), "good files compile: {}", String::from_utf8_lossy(&o.stderr));
    for (file, text, key, want) in [
        ("t.txt", "/m/a\t/r/x\t/m/b\n/m/d\t/r/x\t/m/a\n", "triples", "t.txt:2: head \"/m/d\" is not in "),
        ("t.txt", "/m/a\t/r/z\t/m/b\n", "triples", "t.txt:1: relation \"/r/z\" is not in "),
        ("t.txt", "/m/a /r/x /m/b\n", "triples", "t.txt:1: expected `head<TAB>relation<TAB>tail`"),
        ("e.dict", "0\t/m/a\n1\t/m/b\n0\t/m/c\n", "entity_dict", "e.dict:3: id 0 is also on line 1"),
        ("e.dict", "0\t/m/a\n1\t/m/b\n5\t/m/c\n", "entity_dict", "e.dict:3: id 5 is not below the 3 entries"),
        ("e.dict", "0\t/m/a\n1\t/m/b\n2\t/m/a\n", "entity_dict", "e.dict:3: name \"/m/a\" is also on line 1"),
        (
            "e.dict",
            "0\t/m/a\n1\t/m/b\n2\t/m/c\n3\t/m/d\n4\t/m/e\n",
            "entity_dict",
            "e.dict: 5 entities, more than the workload's rows = 4",
        ),
        (
            "r.dict",
            "0\t/r/x\n1\n",
            "relation_dict",
            "r.dict:2: expected `id<TAB>name` (2 tab-separated fields), found 1",
        ),
    ] {
        let keep = std::fs::read_to_string(dir.join("data").join(file)).unwrap();
        data(file, text);
        let err = run(&toml);
        assert!(err.contains(key) && err.contains(want), "{want}: {err}");
        data(file, &keep);
    }
    for (toml, want) in [
        (
            format!("{base}triples = \"data/t.txt\"\nrelation_dict = \"data/r.dict\"\n"),
            "entity_dict: required with relation_dict",
        ),
        (
            format!("{base}triples = \"data/t.txt\"\nentity_dict = \"data/e.dict\"\n"),
            "relation_dict: required with entity_dict",
        ),
        (
            format!(
                "{base}entity_dict = \"data/e.dict\"\nrelation_dict = \"data/r.dict\"\n[indices]\ndistribution = \"uniform\"\n"
            ),
            "entity_dict: dictionaries are for a triples file of names",
        ),
        (format!("{base}{files}").replace("data/e.dict", "data/none.dict"), "data/none.dict: cannot read"),
    ] {
        let err = run(&toml);
        assert!(err.contains(want), "{want}: {err}");
    }
}

#[test]
fn options_that_would_be_ignored_are_refused() {
    // Each of these ran and silently dropped one of its options.
    let trace = configs().join("../traces/example.dramsim3.trace");
    let wl = configs().join("workloads/emb-small.toml");
    let trace = trace.to_str().unwrap();
    let wl = wl.to_str().unwrap();
    for args in [
        vec!["mem", "--memory", "hbm3-6400", "--trace", trace, "--format", "dramsim3", "--requests", "5"],
        vec!["mem", "--memory", "hbm3-6400", "--latency-curve", "--rate", "5"],
        vec!["mem", "--memory", "hbm3-6400", "--latency-curve", "--read-ratio", "0.5"],
        vec!["compile", "--workload", wl, "-O", "2", "--passes", "decouple"],
        vec!["compile", "--workload", wl, "--core-only", "--passes", "decouple"],
        vec!["--config", wl, "mem", "--memory", "hbm3-6400"],
        vec!["trace", "info", trace, "--offsets", "o.npy", "--indices", "i.npy"],
    ] {
        let o = common::dae_sim(&args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("cannot be used with"), "{args:?}: {err}");
    }
    let o = common::dae_sim(&["bench", "engine", "--lookups", "5"]);
    assert!(String::from_utf8_lossy(&o.stderr).contains("options of `bench stream`, not `bench engine`"));
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn a_seed_beyond_63_bits_is_refused_as_the_option_it_is() {
    // It was refused as the config file's `experiment.seed`, at the file's line, with its value.
    let cfg = common::configs().join("h100-vs-dae.toml");
    let o = common::dae_sim(&["--config", cfg.to_str().unwrap(), "--seed", "18446744073709551615"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("--seed") && err.contains("not in 0..=9223372036854775807"), "{err}");
}

#[test]
fn an_output_that_cannot_be_written_leaves_the_others() {
    // results.json a directory: the error names it, and the CSV and plots are still written
    // (they were skipped, and the message named only the folder).
    let dir = temp_dir("out-json-dir");
    let cfg = small_experiment(&dir, "");
    let out = dir.join("out");
    std::fs::create_dir_all(out.join("results.json")).unwrap();
    let o = common::run_config(&cfg, &out);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_ne!(o.status.code(), Some(0), "{err}");
    assert!(err.contains(&out.join("results.json").display().to_string()), "{err}");
    assert!(out.join("results.csv").is_file() && out.join("speedup.svg").is_file(), "{err}");
}

#[test]
fn negative_numbers_get_the_options_own_message() {
    // clap took "-0.1" for an unknown flag ("unexpected argument '-0' found").
    let cfg = common::configs().join("sweep-mlp.toml");
    let cfg = cfg.to_str().unwrap();
    for (args, want) in [
        (vec!["mem", "--memory", "hbm3-6400", "--read-ratio", "-0.1"], "-0.1 is not between 0 and 1"),
        (vec!["mem", "--memory", "hbm3-6400", "--rate", "-1"], "invalid rate \"-1\""),
        (vec!["gpu-calibrate", "--scale", "-1"], "--scale -1: must be in (0, 100]"),
        (vec!["sweep", "--config", cfg, "--shard", "-1/2"], "--shard -1/2: must be i/N"),
    ] {
        let o = common::dae_sim(&args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(want) && !err.contains("unexpected argument"), "{args:?}: {err}");
    }
}
