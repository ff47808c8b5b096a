//! `dae-sim mem`: the shipped traces in each format, the generators and the loaded-latency
//! sweep. (Bad traces, presets and options: `bad_input.rs`.)

#[allow(dead_code)] // this suite needs only some of the shared helpers
mod common;

use common::{broken_preset, temp_dir};
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

/// The repository root.
fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The memory every test runs on.
fn memory() -> String {
    root().join("configs/memory/hbm3-6400.toml").display().to_string()
}

fn dae_sim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dae-sim")).current_dir(root()).args(args).output().expect("run dae-sim")
}

/// Runs `dae-sim mem` with `args` into `out`, expects success, returns (stdout, the JSON file).
fn mem_ok(out: &Path, args: &[&str]) -> (String, Value) {
    mem_ok_on(&memory(), out, args)
}

/// [`mem_ok`] on the memory `memory` (a preset name or file).
fn mem_ok_on(memory: &str, out: &Path, args: &[&str]) -> (String, Value) {
    let mut all = vec!["mem", "--memory", memory, "--out", out.to_str().unwrap()];
    all.extend_from_slice(args);
    let o = dae_sim(&all);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "dae-sim {all:?} failed: {stderr}");
    assert!(stderr.contains("host speed: "), "{stderr}");
    let json = std::fs::read_to_string(out.join("mem-results.json")).expect("mem-results.json written");
    (String::from_utf8_lossy(&o.stdout).to_string(), serde_json::from_str(&json).expect("valid JSON"))
}

/// Checks the fields every report has and returns `results`.
fn check_report(table: &str, json: &Value) -> Value {
    for row in [
        "memory",
        "traffic",
        "requests",
        "sim time",
        "bandwidth",
        "steady bandwidth",
        "read latency",
        "row buffer",
        "refreshes",
        "channel balance",
    ] {
        assert!(table.lines().any(|l| l.starts_with(row)), "no {row} row in\n{table}");
    }
    assert!(table.contains("% of "), "{table}");
    let r = json["results"].clone();
    let (reads, writes) = (r["reads"].as_u64().unwrap(), r["writes"].as_u64().unwrap());
    assert_eq!(r["requests"].as_u64(), Some(reads + writes));
    let gbps = r["achieved_gb_per_s"].as_f64().unwrap();
    let peak = json["memory"]["peak_gb_per_s"].as_f64().unwrap();
    assert!(gbps > 0.0 && gbps <= peak * 1.001, "{gbps} GB/s against a peak of {peak}");
    assert!((r["percent_of_peak"].as_f64().unwrap() - 100.0 * gbps / peak).abs() < 1e-6);
    // The steady state's figure: none when every request went before the first answer.
    match r["steady_gb_per_s"].as_f64() {
        Some(steady) => {
            assert!(steady > 0.0 && steady <= peak * 1.001, "{steady} GB/s against a peak of {peak}");
            let share = r["steady_percent_of_peak"].as_f64().unwrap();
            assert!((share - 100.0 * steady / peak).abs() < 1e-6);
        }
        None => assert!(r["steady_gb_per_s"].is_null() && r["steady_percent_of_peak"].is_null(), "{r}"),
    }
    if reads > 0 {
        let l = &r["read_latency_ns"];
        assert_eq!(l["count"].as_u64(), Some(reads));
        assert!(l["p50"].as_f64().unwrap() > 0.0);
        assert!(l["p99"].as_f64() >= l["p50"].as_f64());
        assert!(l["max"].as_f64() >= l["p99"].as_f64());
    }
    assert!(r["sim_time_ps"].as_u64().unwrap() > 0);
    r
}

#[test]
fn dramsim3_trace() {
    let dir = temp_dir("dramsim3");
    let (table, json) = mem_ok(&dir, &["--trace", "traces/example.dramsim3.trace", "--format", "dramsim3"]);
    let r = check_report(&table, &json);
    assert_eq!((r["reads"].as_u64(), r["writes"].as_u64()), (Some(32), Some(8)));
    assert_eq!(json["traffic"]["format"], "dramsim3");
    assert_eq!(json["traffic"]["rate"], "timestamps");
    assert!(table.contains("at the trace's timestamps"), "{table}");
    // The last request arrives at cycle 277 (173 ns at 1.6 GHz): the run cannot end before.
    assert!(r["sim_time_ps"].as_u64().unwrap() > 173_125, "{r}");
}

#[test]
fn ramulator_trace() {
    let dir = temp_dir("ramulator");
    let (table, json) = mem_ok(&dir, &["--trace", "traces/example.ramulator.trace", "--format", "ramulator"]);
    let r = check_report(&table, &json);
    assert_eq!((r["reads"].as_u64(), r["writes"].as_u64()), (Some(28), Some(12)));
    assert_eq!(json["traffic"]["rate"], "max");
    // At a fixed rate instead: 40 requests at 0.1/ns take at least 390 ns.
    let (_, json) = mem_ok(
        &dir,
        &["--trace", "traces/example.ramulator.trace", "--format", "ramulator", "--rate", "0.1"],
    );
    assert!(json["results"]["sim_time_ps"].as_u64().unwrap() >= 390_000);
    assert_eq!(json["traffic"]["rate"], 0.1);
}

#[test]
fn binary_trace() {
    let dir = temp_dir("binary");
    let (table, json) = mem_ok(&dir, &["--trace", "traces/example.bin", "--format", "binary"]);
    let r = check_report(&table, &json);
    assert_eq!((r["reads"].as_u64(), r["writes"].as_u64()), (Some(26), Some(6)));
    // Four records of the example are 128 B, the rest 64 B.
    assert_eq!(r["bytes"].as_u64(), Some(4 * 128 + 28 * 64));
}

#[test]
fn generators_and_determinism() {
    let dir = temp_dir("generators");
    let args = ["--pattern", "random", "--requests", "3000", "--read-ratio", "0.7", "--seed", "5"];
    let (table, json) = mem_ok(&dir.join("a"), &args);
    let r = check_report(&table, &json);
    let reads = r["reads"].as_u64().unwrap();
    assert!((1950..=2250).contains(&reads), "{reads} reads of 3000 at 70%");
    assert_eq!(json["traffic"]["pattern"], "random");
    assert_eq!(json["traffic"]["seed"], 5);
    let (_, again) = mem_ok(&dir.join("b"), &args);
    assert_eq!(json, again, "same seed, same results");
    let a = std::fs::read(dir.join("a/mem-results.json")).unwrap();
    assert_eq!(a, std::fs::read(dir.join("b/mem-results.json")).unwrap(), "byte-identical files");
    let (_, other) = mem_ok(&dir.join("c"), &["--requests", "3000", "--read-ratio", "0.7", "--seed", "6"]);
    assert_ne!(json["results"], other["results"]);

    let (table, json) =
        mem_ok(&dir.join("s"), &["--pattern", "stream", "--requests", "3000", "--rate", "max"]);
    let r = check_report(&table, &json);
    assert_eq!(r["writes"].as_u64(), Some(0));
    assert_eq!(json["traffic"]["pattern"], "stream");
}

#[test]
fn json_on_stdout() {
    let dir = temp_dir("json");
    let memory = memory();
    let o = dae_sim(&[
        "mem",
        "--memory",
        &memory,
        "--requests",
        "500",
        "--json",
        "--quiet",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(o.stderr.is_empty(), "--quiet: {}", String::from_utf8_lossy(&o.stderr));
    let printed: Value = serde_json::from_slice(&o.stdout).expect("stdout is JSON");
    let written: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("mem-results.json")).unwrap()).unwrap();
    assert_eq!(printed, written);
}

#[test]
fn latency_curve_small() {
    // One channel of HBM3-6400 (2 pseudo-channels, 51.2 GB/s): the default sweep window (1.25
    // refresh intervals per point) then takes a few thousand requests per point.
    let dir = temp_dir("curve");
    let (memory, _) = broken_preset(&dir, "channels", "channels = 1");
    let o = dae_sim(&[
        "mem",
        "--memory",
        memory.to_str().unwrap(),
        "--latency-curve",
        "--points",
        "3",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let table = String::from_utf8_lossy(&o.stdout);
    assert!(table.contains("saturation (--rate max): 100% reads "), "{table}");
    let rows = table.lines().filter(|l| l.trim_start().starts_with(|c: char| c.is_ascii_digit())).count();
    assert_eq!(rows, 18, "6 read ratios x 3 points:\n{table}");
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("latency-curve.json")).unwrap()).unwrap();
    assert_eq!(json["saturation"].as_array().map(Vec::len), Some(6));
    let points = json["points"].as_array().unwrap();
    assert_eq!(points.len(), 18);
    let peak = json["memory"]["peak_gb_per_s"].as_f64().unwrap();
    assert!((peak - 51.2).abs() < 1e-9, "{peak}");
    for ratio in [1.0, 0.9, 0.8, 0.7, 0.6, 0.5] {
        let curve: Vec<&Value> = points.iter().filter(|p| p["read_ratio"].as_f64() == Some(ratio)).collect();
        assert_eq!(curve.len(), 3);
        let loads: Vec<f64> =
            curve.iter().map(|p| p["offered_load_of_saturation"].as_f64().unwrap()).collect();
        assert_eq!(loads, [0.05, 0.65, 1.25]);
        let bw: Vec<f64> = curve.iter().map(|p| p["achieved_gb_per_s"].as_f64().unwrap()).collect();
        assert!(curve.iter().all(|p| p["data_window_gb_per_s"].as_f64().is_some_and(|w| w <= peak)));
        let p50: Vec<f64> = curve.iter().map(|p| p["read_latency_ns"]["p50"].as_f64().unwrap()).collect();
        // Light load gets what it offers; beyond saturation bandwidth stops growing and
        // latency rises; nothing exceeds the peak.
        let offered = curve[0]["offered_gb_per_s"].as_f64().unwrap();
        assert!((bw[0] - offered).abs() < 0.05 * offered, "{ratio}: {bw:?} vs {offered}");
        assert!(bw[2] < curve[2]["offered_gb_per_s"].as_f64().unwrap(), "{ratio}: saturated");
        assert!(bw.iter().all(|&b| b <= peak), "{bw:?}");
        assert!(p50[2] > 2.0 * p50[0], "{ratio}: {p50:?}");
    }
    // `dae-sim plot` redraws the same figure from the saved JSON (it once refused the file).
    let svg = dir.join("latency-curve.svg");
    let drawn = std::fs::read(&svg).expect("latency-curve.svg written");
    std::fs::remove_file(&svg).unwrap();
    let o = dae_sim(&["plot", dir.join("latency-curve.json").to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(std::fs::read(&svg).unwrap(), drawn);
}

/// Runs `dae-sim mem` on a DRAMsim3 trace of `text` in a fresh directory `tag`; returns the
/// checked report's `results`.
fn dramsim3_results(tag: &str, text: &str) -> Value {
    let dir = temp_dir(tag);
    let trace = dir.join("trace.txt");
    std::fs::write(&trace, text).unwrap();
    let (table, json) = mem_ok(&dir, &["--trace", trace.to_str().unwrap(), "--format", "dramsim3"]);
    check_report(&table, &json)
}

#[test]
fn an_idle_gap_longer_than_a_run_slice_is_simulated_not_spun_on() {
    // 20,000 cycles at 1.6 GHz: 12.5 us between the two reads, beyond the front end's 10 us
    // slices (a run once waited forever for a slice with an event in it).
    let r = dramsim3_results("gap", "0x0 READ 0\n0x40 READ 20000\n");
    assert_eq!(r["reads"].as_u64(), Some(2));
    assert!(r["sim_time_ps"].as_u64().unwrap() > 12_500_000, "{r}");
}

#[test]
fn an_idle_gap_longer_than_the_watchdog_window_is_no_livelock() {
    // 20 million cycles at 1.6 GHz: 12.5 ms between the two reads, beyond the engine's 10 ms
    // livelock window (the driver, waiting for the second read's time, made no progress in it
    // and the run stopped as stalled).
    let r = dramsim3_results("long-gap", "0x0 READ 0\n0x40 READ 20000000\n");
    assert_eq!(r["reads"].as_u64(), Some(2));
    assert!(r["sim_time_ps"].as_u64().unwrap() > 12_500_000_000, "{r}");
}

#[test]
fn posted_writes_count_until_their_data_reaches_the_device() {
    // 31 writes at cycle 0 to different rows of one bank are answered on arrival, but the bank
    // takes a row cycle (tRC, 45 ns) for each: the run, and the bandwidth, must include that.
    let lines: String = (1..32u64).map(|i| format!("{:#x} WRITE 0\n", i << 20)).collect();
    let r = dramsim3_results("writes", &lines);
    assert_eq!(r["writes"].as_u64(), Some(31));
    assert!(r["sim_time_ps"].as_u64().unwrap() > 30 * 45_000, "{r}");
    // Every write's two bursts were issued before the report was made.
    let dram = &r["dram"];
    assert_eq!(dram["row_misses"].as_u64().zip(dram["row_conflicts"].as_u64()), Some((1, 30)), "{dram}");
    let bursts: u64 =
        dram["pseudo_channels"]["bursts"].as_array().unwrap().iter().filter_map(Value::as_u64).sum();
    assert_eq!(bursts, 62, "{dram}");
}

#[test]
fn short_bursts_of_large_requests_stay_under_the_peak() {
    // 100 requests of 256 B at once: the first answer comes long after data started moving on
    // other channels; measured over the data buses' busy time, the figure stays physical.
    let dir = temp_dir("burst");
    for args in [
        &["--pattern", "stream", "--requests", "100", "--size", "256B"][..],
        &["--pattern", "stream", "--requests", "2000", "--read-ratio", "0"][..],
    ] {
        let (table, json) = mem_ok(&dir, args);
        check_report(&table, &json);
    }
}

#[test]
fn a_single_read_reports_its_exact_latency() {
    // One read to a closed bank: every figure is the one latency, a whole number of 625 ps
    // cycles (the histogram alone would round it to three significant digits).
    let r = dramsim3_results("one-read", "0x0 READ 0\n");
    let l = &r["read_latency_ns"];
    let mean = l["mean"].as_f64().unwrap();
    for q in ["p50", "p99", "max"] {
        assert_eq!(l[q].as_f64(), Some(mean), "{l}");
    }
    let cycles = mean * 1000.0 / 625.0;
    assert!((cycles - cycles.round()).abs() < 1e-9, "{mean} ns is not whole cycles");
}

#[test]
fn channels_idle_at_the_end_still_count_their_refreshes() {
    // Two reads to channel 0, 100 us apart: 25 tREFI (3.9 us) for each of the 32 pseudo-channels,
    // though 30 of them never see a request (they counted none once).
    let r = dramsim3_results("idle-refresh", "0x0 READ 0\n0x40 READ 160000\n");
    assert_eq!(r["dram"]["refreshes"].as_u64(), Some(25 * 32), "{}", r["dram"]);
}

#[test]
fn small_requests_on_a_wide_memory_reach_its_peak() {
    // 32 B requests on the H100's HBM3 arrive at 80 a memory cycle at peak: the driver's links
    // once carried at most 64 a cycle, capping the stream at about 77% of peak.
    let dir = temp_dir("wide-small");
    let args = ["--pattern", "stream", "--size", "32B", "--requests", "200000"];
    let (table, json) = mem_ok_on("hbm3-h100", &dir, &args);
    let r = check_report(&table, &json);
    let steady = r["steady_gb_per_s"].as_f64().unwrap();
    let peak = json["memory"]["peak_gb_per_s"].as_f64().unwrap();
    assert!(steady > 0.95 * peak, "{steady} of {peak} GB/s");
}

#[test]
fn text_trace_addresses_are_aligned_to_the_request_size() {
    // DRAMsim3 and Ramulator drop the offset within a transaction: a 64 B read at 0x10 is the
    // two bursts at 0x0, not three from 0x0 to 0x5f.
    let r = dramsim3_results("unaligned", "0x10 READ 0\n0xf0 READ 0\n");
    let bursts: u64 =
        r["dram"]["pseudo_channels"]["bursts"].as_array().unwrap().iter().filter_map(Value::as_u64).sum();
    assert_eq!(bursts, 4, "{}", r["dram"]);
}

#[test]
fn row_buffer_outcomes_count_row_accesses() {
    // A 4 KiB read over a 256 B interleave visits 16 banks (one per pseudo-channel), each closed:
    // 16 misses, not one request's single outcome.
    let dir = temp_dir("big-request-4k");
    let trace = dir.join("trace.txt");
    std::fs::write(&trace, "0x0 READ 0\n").unwrap();
    let (table, json) =
        mem_ok(&dir, &["--trace", trace.to_str().unwrap(), "--format", "dramsim3", "--size", "4KiB"]);
    let r = check_report(&table, &json);
    let d = &r["dram"];
    let outcomes = [d["row_hits"].as_u64(), d["row_misses"].as_u64(), d["row_conflicts"].as_u64()];
    assert_eq!(outcomes, [Some(0), Some(16), Some(0)], "{d}");
}

#[test]
fn a_used_timing_of_zero_cycles_and_an_unused_one_are_warned_of() {
    let dir = temp_dir("zero-timing");
    let (memory, _) = broken_preset(&dir, "nRP", "nRP = 0\nnRPX = 14");
    let m = memory.to_str().unwrap();
    let o = dae_sim(&[
        "mem",
        "--memory",
        m,
        "--pattern",
        "random",
        "--requests",
        "100",
        "--out",
        dir.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains(&format!("warning: {m}: timing.nRP is 0 cycles")), "{err}");
    assert!(err.contains(&format!("warning: {m}: timing.nRPX is used by no constraint")), "{err}");
}
