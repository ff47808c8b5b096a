//! Sweeps: identical results whatever the thread count, interrupted sweeps resumed without a
//! point lost or run twice, and shards merged into what the unsharded run gives. (Bad sweeps:
//! `bad_input.rs`.)

#[allow(dead_code)] // this suite needs only some of the shared helpers
mod common;

use common::{configs, dae_sim, temp_dir};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A sweep of the small embedding bag on the DAE preset over cores and the output queue's
/// depth: `points` points (a product of 2 x points/2).
fn sweep_config(dir: &Path, axes: &str) -> PathBuf {
    let text = format!(
        r#"[experiment]
name = "sweep-test"
seed = 7

[[system]]
name = "dae"
include = "{dae}"
cores = 2

[[workload]]
include = "{wl}"
batch = 64

[sweep]
{axes}
"#,
        dae = configs().join("systems/dae-hbm3.toml").display(),
        wl = configs().join("workloads/emb-small.toml").display(),
    );
    let path = dir.join("sweep.toml");
    std::fs::write(&path, text).unwrap();
    path
}

const AXES: &str = "[[sweep.axis]]\nkey = \"system.dae.cores\"\nvalues = [1, 2, 3]\n\
                    [[sweep.axis]]\nkey = \"system.dae.access_unit.outq_entries\"\nvalues = [4, 32]\n";

fn run(cfg: &Path, out: &Path, extra: &[&str]) -> std::process::Output {
    let mut args =
        vec!["sweep", "--config", cfg.to_str().unwrap(), "--out", out.to_str().unwrap(), "--quiet"];
    args.extend_from_slice(extra);
    let o = dae_sim(&args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    o
}

fn results(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("sweep-results.json")).unwrap()
}

fn point_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir.join("points"))
        .map(|r| r.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    v.sort();
    v
}

#[test]
fn running_a_sweep_config_as_an_experiment_runs_its_base_point_and_says_so() {
    let dir = temp_dir("sweep-as-experiment");
    let cfg = sweep_config(&dir, AXES);
    let out = dir.join("out");
    let o = dae_sim(&["--config", cfg.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("has a [sweep] section; this runs its base point only"), "{err}");
    // One pair: the base point (2 cores), not the sweep's six.
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    assert_eq!(json["runs"].as_array().map(|r| r.len()), Some(1));
    assert!(!out.join("sweep-results.json").exists());
}

#[test]
fn list_prints_every_point_in_product_order() {
    let dir = temp_dir("sweep-list");
    let cfg = sweep_config(&dir, AXES);
    let o = dae_sim(&["sweep", "--config", cfg.to_str().unwrap(), "--list"]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 6, "{text}");
    assert_eq!(lines[1].trim(), "1  system.dae.cores=1, system.dae.access_unit.outq_entries=32");
    // A shard lists its own points: indices 1, 4 of 0..6 for shard 1/3.
    let o = dae_sim(&["sweep", "--config", cfg.to_str().unwrap(), "--shard", "1/3", "--list"]);
    let text = String::from_utf8_lossy(&o.stdout);
    let index: Vec<&str> = text.lines().filter_map(|l| l.split_whitespace().next()).collect();
    assert_eq!(index, ["1", "4"], "{text}");
    assert!(!dir.join("out").exists());
}

#[test]
fn one_and_two_threads_give_identical_results() {
    let dir = temp_dir("sweep-threads");
    let cfg = sweep_config(&dir, AXES);
    run(&cfg, &dir.join("one"), &["--threads", "1"]);
    run(&cfg, &dir.join("two"), &["--threads", "2"]);
    let (a, b) = (results(&dir.join("one")), results(&dir.join("two")));
    assert_eq!(a, b);
    let v: serde_json::Value = serde_json::from_str(&a).unwrap();
    let points = v["points"].as_array().unwrap();
    assert_eq!(points.len(), 6);
    // The axes reached the runs: more cores, less time on the same work.
    let t = |i: usize| points[i]["runs"][0]["sim_time_ps"].as_u64().unwrap();
    assert!(t(4) < t(0), "3 cores {} vs 1 core {}", t(4), t(0));
    assert_eq!(points[5]["point"]["values"]["system.dae.cores"], 3);
    let svg = std::fs::read_to_string(dir.join("one").join("sweep.svg")).unwrap();
    assert!(
        svg.contains("Throughput against system.dae.cores") && svg.contains("dae emb-small"),
        "sweep.svg"
    );
    for f in ["sweep.png", "breakdown.svg", "breakdown.png"] {
        assert!(dir.join("one").join(f).is_file(), "{f} missing");
    }
    let csv = std::fs::read_to_string(dir.join("one").join("sweep.csv")).unwrap();
    assert_eq!(csv.lines().count(), 7, "{csv}");
    assert!(
        csv.starts_with("point,system.dae.cores,system.dae.access_unit.outq_entries,system,workload"),
        "{csv}"
    );
}

#[test]
fn an_interrupted_sweep_resumes_without_losing_or_rerunning_a_point() {
    let dir = temp_dir("sweep-resume");
    let cfg = sweep_config(&dir, AXES);
    let out = dir.join("out");
    let mut child = Command::new(env!("CARGO_BIN_EXE_dae-sim"))
        .args([
            "sweep",
            "--config",
            cfg.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--quiet",
            "--threads",
            "1",
        ])
        .spawn()
        .unwrap();
    // Interrupt as soon as the first point is written.
    let start = std::time::Instant::now();
    while point_files(&out).is_empty() && start.elapsed().as_secs() < 60 {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let _ = child.kill();
    let _ = child.wait();
    let before: Vec<(PathBuf, std::time::SystemTime)> = point_files(&out)
        .into_iter()
        .map(|p| {
            let m = std::fs::metadata(&p).unwrap().modified().unwrap();
            (p, m)
        })
        .collect();
    assert!(!before.is_empty(), "the first point was written before the interrupt");
    let o =
        dae_sim(&["sweep", "--config", cfg.to_str().unwrap(), "--out", out.to_str().unwrap(), "--resume"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains(&format!("{} points run, {} skipped", 6 - before.len(), before.len())), "{err}");
    // Every point now has results, and the ones written before were not touched.
    assert_eq!(point_files(&out).len(), 6);
    for (p, m) in &before {
        assert_eq!(std::fs::metadata(p).unwrap().modified().unwrap(), *m, "{} was run again", p.display());
    }
    // The resumed sweep equals an uninterrupted one.
    run(&cfg, &dir.join("clean"), &[]);
    assert_eq!(results(&out), results(&dir.join("clean")));
    // The base config edited after the run (same path, same axes): its points are another
    // sweep's, and resuming over them is refused rather than mixing the two.
    let edited = std::fs::read_to_string(&cfg).unwrap().replacen("batch = 64", "batch = 32", 1);
    std::fs::write(&cfg, edited).unwrap();
    let o =
        dae_sim(&["sweep", "--config", cfg.to_str().unwrap(), "--out", out.to_str().unwrap(), "--resume"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && err.contains("belong to another sweep"), "{err}");
}

#[test]
fn two_shards_merge_into_the_unsharded_results() {
    let dir = temp_dir("sweep-shards");
    let cfg = sweep_config(&dir, AXES);
    run(&cfg, &dir.join("all"), &[]);
    run(&cfg, &dir.join("s0"), &["--shard", "0/2"]);
    run(&cfg, &dir.join("s1"), &["--shard", "1/2"]);
    assert_eq!(point_files(&dir.join("s0")).len(), 3);
    assert!(!dir.join("s0").join("sweep-results.json").exists(), "a shard alone is not the whole sweep");
    let merged = dir.join("merged");
    let o = dae_sim(&[
        "merge",
        dir.join("s0").to_str().unwrap(),
        dir.join("s1").to_str().unwrap(),
        "--out",
        merged.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(results(&merged), results(&dir.join("all")));
    // One shard alone is not the sweep: the merge says what is missing and fails.
    let partial = dir.join("partial");
    let o = dae_sim(&["merge", dir.join("s0").to_str().unwrap(), "--out", partial.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && err.contains("merged 3 of 6 points") && err.contains("warning: 3 points"),
        "{err}"
    );
    assert!(!partial.join("sweep-results.json").exists());
}

/// Splits a CSV line into fields, honouring quotes (doubled quotes inside).
fn csv_fields(line: &str) -> Vec<String> {
    let (mut fields, mut field, mut quoted, mut chars) =
        (Vec::new(), String::new(), false, line.chars().peekable());
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                field.push('"');
                chars.next();
            }
            '"' => quoted = !quoted,
            ',' if !quoted => fields.push(std::mem::take(&mut field)),
            c => field.push(c),
        }
    }
    fields.push(field);
    fields
}

#[test]
fn a_failed_point_fails_the_sweep_every_time_and_its_csv_row_stays_well_formed() {
    // The middle point's limit stops its run: an error message with quotes and commas in it.
    let dir = temp_dir("sweep-failed");
    let axes = "mode = \"zip\"\n[[sweep.axis]]\nkey = \"experiment.max_sim_time\"\n\
                values = [\"1ms\", \"100ns\", \"1ms\"]\n";
    let cfg = sweep_config(&dir, axes);
    let text = std::fs::read_to_string(&cfg).unwrap().replacen(
        "seed = 7\n",
        "seed = 7\nmax_sim_time = \"1ms\"\n",
        1,
    );
    std::fs::write(&cfg, text).unwrap();
    let out = dir.join("out");
    let args = ["sweep", "--config", cfg.to_str().unwrap(), "--out", out.to_str().unwrap()];
    let o = dae_sim(&args);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{err}");
    // Without a terminal the bar is hidden: the failure is still said, with its point.
    assert!(err.contains("point 1 (") && err.contains("a pair failed"), "{err}");
    assert!(err.contains("1 with a failed pair"), "{err}");
    let csv = std::fs::read_to_string(out.join("sweep.csv")).unwrap();
    let header = csv_fields(csv.lines().next().unwrap());
    assert_eq!(header.last().map(String::as_str), Some("error"));
    assert!(header.contains(&"verified".to_string()), "{csv}");
    for line in csv.lines().skip(1) {
        assert_eq!(csv_fields(line).len(), header.len(), "{line}");
    }
    assert!(csv.contains("still running after"), "{csv}");
    // Resumed, nothing runs again, and the sweep has still failed.
    let mut resumed = args.to_vec();
    resumed.push("--resume");
    let o = dae_sim(&resumed);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && err.contains("0 points run, 3 skipped as finished, 1 with a failed pair"),
        "{err}"
    );
}

#[test]
fn memory_curves_are_measured_once_and_drawn_with_the_operating_points() {
    let dir = temp_dir("sweep-curves");
    let axes = "[[sweep.axis]]\nkey = \"system.dae.cores\"\nvalues = [1, 2]\n\
                [sweep.memory_curve]\nmemory = \"hbm2\"\nrequests = [\"64B\"]\npoints = 3\n";
    let cfg = sweep_config(&dir, axes);
    let out = dir.join("out");
    let o = run(&cfg, &out, &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let all: serde_json::Value = serde_json::from_str(&results(&out)).unwrap();
    let curves = all["memory_curves"].as_array().expect("the results carry the curves");
    assert_eq!(curves.len(), 1);
    assert_eq!(curves[0]["label"], "random 64 B reads");
    let points = curves[0]["points"].as_array().unwrap();
    assert_eq!(points.len(), 3);
    // Light load first: more offered load, more bandwidth, and latency does not fall.
    let (bw, lat): (Vec<f64>, Vec<f64>) =
        points.iter().map(|p| (p[0].as_f64().unwrap(), p[1].as_f64().unwrap())).unzip();
    assert!(bw[0] < bw[1] && bw[1] < bw[2], "{bw:?}");
    assert!(lat[0] <= lat[2], "{lat:?}");
    let svg = std::fs::read_to_string(out.join("bandwidth-latency.svg")).unwrap();
    for text in ["random 64 B reads", "dae emb-small (operating points)", "achieved bandwidth (GB/s)"] {
        assert!(svg.contains(text), "{text} missing from bandwidth-latency.svg");
    }
    // A resumed sweep takes the curves from memory-curves.json instead of measuring them again.
    let cache = out.join("memory-curves.json");
    let before = std::fs::metadata(&cache).unwrap().modified().unwrap();
    let o = run(&cfg, &out, &["--resume"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(std::fs::metadata(&cache).unwrap().modified().unwrap(), before);
    assert_eq!(results(&out), serde_json::to_string_pretty(&all).unwrap() + "\n");
}

#[test]
fn a_sweep_it_cannot_plot_says_so_and_keeps_its_results() {
    // An axis of names has no numeric x: the plot is skipped, which was said only in a file.
    let dir = temp_dir("sweep-noplot");
    let axes = "[[sweep.axis]]\nkey = \"system.dae.caches.llc.non_temporal\"\nvalues = [\"bypass\", \"insert_lru\"]\n";
    let cfg = sweep_config(&dir, axes);
    let out = dir.join("out");
    let o = run(&cfg, &out, &[]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("no sweep plot") && err.contains("no numeric values"), "{err}");
    assert!(out.join("sweep-results.json").exists() && out.join("sweep.csv").exists());
    assert!(out.join("sweep-plot-error.txt").exists() && !out.join("sweep.png").exists());
}

#[test]
fn a_sweep_over_sizes_plots_them_in_bytes() {
    // "8KiB" and "16KiB" were strings to the plot, which then had no numeric axis.
    let dir = temp_dir("sweep-sizes");
    let axes = "[[sweep.axis]]\nkey = \"system.dae.access_unit.storage\"\nvalues = [\"8KiB\", \"16KiB\"]\n";
    let cfg = sweep_config(&dir, axes);
    let out = dir.join("out");
    let o = run(&cfg, &out, &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(!out.join("sweep-plot-error.txt").exists());
    let svg = std::fs::read_to_string(out.join("sweep.svg")).unwrap();
    assert!(svg.contains("storage (B)") && svg.contains(">\n16000\n<"), "axis label or tick missing");
}

#[test]
fn a_points_warning_is_said_once() {
    // Rows of 17 elements cannot be tiled on 16 lanes; 24 can (by 12). The warning came once
    // per point loaded, and not at all from the main run's printing.
    let dir = temp_dir("sweep-warn");
    let axes = "[[sweep.axis]]\nkey = \"workload.emb-small.dim\"\nvalues = [17, 24]\n\
                [[sweep.axis]]\nkey = \"system.dae.cores\"\nvalues = [1, 2]\n";
    let cfg = sweep_config(&dir, axes);
    let o = run(&cfg, &dir.join("out"), &[]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.matches("tiles its 17-element rows").count(), 1, "{err}");
    assert!(!err.contains("24-element"), "{err}");
}
