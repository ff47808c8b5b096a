//! Config fuzz: shipped config files, each run with one value replaced by a bad one (zero,
//! negative, huge, NaN, infinite, empty or unknown strings, a unit dropped or unknown, the wrong
//! type, an empty array or table). Every run must end with results (exit 0), a failed pair whose
//! siblings still report (exit 1), or a configuration error that starts `error: ` and names a
//! file and line (exit 2); never a panic, a signal or a hang.
//!
//! The whole sweep is about 4,000 runs of the release binary (about 3 minutes on 2 cores),
//! so it is ignored by default:
//!
//! ```text
//! cargo test --release --test config_fuzz -- --ignored
//! ```
//!
//! Workloads that read the shared datasets folder beside the repository (`../shared/datasets`)
//! are swept where it is there; the copies are laid out so that their relative paths resolve.
//!
//! Small fixed samples of the memory preset's cases and of one such workload's run with the
//! other tests, so that the harness itself stays in working order.

// The workspaces link `traces/` with a Unix symlink.
#![cfg(unix)]

#[allow(dead_code)] // this suite needs only some of the shared helpers
mod common;

use common::{TestDir, configs, shared_dir, small_experiment_text, temp_dir};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// How a mutated file is run.
#[derive(Debug, Clone, Copy)]
enum Mode {
    /// In a small experiment (the DAE chip at 4 cores, the same without access units, an H100)
    /// on this workload (a path under `configs/`), at batch 8 unless its trace file sets it.
    Experiment(&'static str),
    /// As `dae-sim mem --memory FILE` with a few thousand random requests.
    Memory,
}

/// One run: `file` (under `configs/`) with line `line` (0-based) given `value`.
#[derive(Debug, Clone)]
struct Case {
    file: &'static str,
    mode: Mode,
    line: usize,
    key: String,
    value: String,
}

/// The files of the full sweep and how each is run.
const TARGETS: &[(&str, Mode)] = &[
    ("systems/dae-hbm3.toml", Mode::Experiment("workloads/emb-small.toml")),
    ("systems/h100-sxm.toml", Mode::Experiment("workloads/emb-small.toml")),
    ("memory/hbm3-h100.toml", Mode::Experiment("workloads/emb-small.toml")),
    ("memory/hbm3-energy.toml", Mode::Experiment("workloads/emb-small.toml")),
    ("workloads/emb-small.toml", Mode::Experiment("workloads/emb-small.toml")),
    ("workloads/gnn-cora.toml", Mode::Experiment("workloads/gnn-cora.toml")),
    ("workloads/gnn-scatter.toml", Mode::Experiment("workloads/gnn-scatter.toml")),
    ("workloads/gnn-sage.toml", Mode::Experiment("workloads/gnn-sage.toml")),
    ("workloads/kg-fb15k237.toml", Mode::Experiment("workloads/kg-fb15k237.toml")),
    ("workloads/sparse-attention.toml", Mode::Experiment("workloads/sparse-attention.toml")),
    ("workloads/tt-rec.toml", Mode::Experiment("workloads/tt-rec.toml")),
    ("workloads/dlrm-mlperf-v2.toml", Mode::Experiment("workloads/dlrm-mlperf-v2.toml")),
    ("workloads/criteo-dlrm.toml", Mode::Experiment("workloads/criteo-dlrm.toml")),
    ("memory/hbm3-6400.toml", Mode::Memory),
    ("memory/ddr5-4800.toml", Mode::Memory),
];

/// The files of the full sweep whose workloads read `../shared/datasets` (the shared datasets
/// folder beside the repository): swept where it is there.
const SHARED_TARGETS: &[(&str, Mode)] = &[
    ("workloads/gnn-enron.toml", Mode::Experiment("workloads/gnn-enron.toml")),
    ("workloads/gnn-slashdot.toml", Mode::Experiment("workloads/gnn-slashdot.toml")),
    ("workloads/kg-fb15k237-names.toml", Mode::Experiment("workloads/kg-fb15k237-names.toml")),
];

/// Longest a run may take before it counts as a hang.
const TIMEOUT: Duration = Duration::from_secs(120);

/// `key = value` on one line (no table header, no comment line, not part of a multi-line
/// array): the key and the value without its trailing comment.
fn assignment(line: &str) -> Option<(String, String)> {
    let t = line.trim_start();
    if t.is_empty() || t.starts_with('#') || t.starts_with('[') {
        return None;
    }
    let (key, rest) = t.split_once('=')?;
    let key = key.trim();
    if key.is_empty() || !key.chars().all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c)) {
        return None;
    }
    // The value ends at a `#` outside a string.
    let mut in_string = false;
    let mut end = rest.len();
    for (i, c) in rest.char_indices() {
        match c {
            '"' => in_string = !in_string,
            '#' if !in_string => {
                end = i;
                break;
            }
            _ => {}
        }
    }
    let value = rest[..end].trim();
    let balanced = |open: char, close: char| value.matches(open).count() == value.matches(close).count();
    (!value.is_empty() && balanced('[', ']') && balanced('{', '}'))
        .then(|| (key.to_owned(), value.to_owned()))
}

/// The bad values tried in place of `value`, chosen by its kind.
fn bad_values(value: &str) -> Vec<String> {
    let owned = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    let plain = value.replace('_', "");
    if value == "true" || value == "false" {
        let flipped = if value == "true" { "false" } else { "true" };
        return owned(&[flipped, "0", "\"x\""]);
    }
    if plain.parse::<i64>().is_ok() {
        return owned(&["0", "-1", "1", "4611686018427387904", "2.5", "\"x\""]);
    }
    if plain.parse::<f64>().is_ok() {
        return owned(&["0.0", "-1.0", "nan", "inf", "1e300", "1e-300"]);
    }
    if let Some(inner) = value.strip_prefix('"').and_then(|v| v.strip_suffix('"')) {
        // A quantity with a unit ("3GHz", "64 KiB"): its number and its unit go wrong apart.
        let digits = inner.trim_start_matches(|c: char| c.is_ascii_digit() || c == '.' || c == '-');
        let unit = digits.trim();
        if digits.len() < inner.len()
            && !unit.is_empty()
            && unit.chars().all(|c| c.is_ascii_alphabetic() || c == '/')
        {
            return vec![
                format!("\"0 {unit}\""),
                format!("\"-5 {unit}\""),
                format!("\"1e30 {unit}\""),
                format!("\"0.0001 {unit}\""),
                format!("\"1 {unit}x\""),
                "\"\"".to_owned(),
                "3".to_owned(),
            ];
        }
        return owned(&["\"\"", "\"zzz\"", "\"../../etc\"", "7"]);
    }
    if value.starts_with('[') {
        return owned(&["[]", "[0]", "[-1]", "[\"x\"]"]);
    }
    if value.starts_with('{') {
        return owned(&["{}", "{ kind = \"zzz\" }", "0"]);
    }
    owned(&["0", "\"\""])
}

/// Every case of `file`.
fn cases_of(file: &'static str, mode: Mode) -> Vec<Case> {
    let text = std::fs::read_to_string(configs().join(file)).expect("read a shipped config");
    let mut cases = Vec::new();
    for (line, l) in text.lines().enumerate() {
        let Some((key, value)) = assignment(l) else { continue };
        for bad in bad_values(&value) {
            cases.push(Case { file, mode, line, key: key.clone(), value: bad });
        }
    }
    cases
}

/// A worker's copy of the repository's `configs/`, laid out as the repository is: `repo/configs`
/// with links to its `traces/` (which workloads name as `../../traces/...`) at `repo/traces` and
/// to the shared folder (`../../../shared/...`) at `shared`, beside `repo`. One file at a time
/// is mutated and then restored.
struct Workspace {
    dir: TestDir,
}

impl Workspace {
    /// The copy of `configs/`.
    fn configs(&self) -> std::path::PathBuf {
        self.dir.join("repo").join("configs")
    }

    fn new(tag: &str) -> Workspace {
        let dir = temp_dir(tag);
        let repo = dir.join("repo");
        copy_dir(&configs(), &repo.join("configs"));
        let traces = configs().parent().expect("the repository").join("traces");
        std::os::unix::fs::symlink(traces, repo.join("traces")).expect("link traces/");
        if let Some(shared) = shared_dir() {
            std::os::unix::fs::symlink(shared, dir.join("shared")).expect("link the shared folder");
        }
        Workspace { dir }
    }

    /// Runs `case`: its exit code (None: killed by a signal or the timeout) and stderr.
    fn run(&self, case: &Case) -> (Option<i32>, String) {
        let cfgs = self.configs();
        let path = cfgs.join(case.file);
        let original = std::fs::read_to_string(&path).expect("read the file to mutate");
        let mutated: Vec<String> = original
            .lines()
            .enumerate()
            .map(|(i, l)| {
                if i == case.line {
                    let indent = &l[..l.len() - l.trim_start().len()];
                    format!("{indent}{} = {}", case.key, case.value)
                } else {
                    l.to_owned()
                }
            })
            .collect();
        std::fs::write(&path, mutated.join("\n") + "\n").expect("write the mutated file");
        let out = self.dir.join("out");
        let args: Vec<String> = match case.mode {
            Mode::Experiment(workload) => {
                std::fs::write(cfgs.join("fuzz.toml"), experiment(&cfgs, workload))
                    .expect("write the experiment");
                vec!["--config", "fuzz.toml", "--quiet", "--threads", "1", "--out"]
                    .into_iter()
                    .map(str::to_owned)
                    .chain([out.display().to_string()])
                    .collect()
            }
            Mode::Memory => {
                ["mem", "--memory", case.file, "--pattern", "random", "--requests", "3000", "--out"]
                    .into_iter()
                    .map(str::to_owned)
                    .chain([out.display().to_string()])
                    .collect()
            }
        };
        let result = run_with_timeout(&cfgs, &args, &self.dir.join("stderr.txt"));
        std::fs::write(&path, original).expect("restore the mutated file");
        let _ = std::fs::remove_dir_all(&out);
        result
    }
}

/// The small experiment ([`small_experiment_text`]) on the presets under `root`, on `workload`.
fn experiment(root: &Path, workload: &str) -> String {
    // A workload read from a trace file takes its batch from the file.
    let text = std::fs::read_to_string(configs().join(workload)).unwrap_or_default();
    let batch = if text.contains("[trace]") { "" } else { "batch = 8\n" };
    small_experiment_text(root, workload, batch, "")
}

/// Runs `dae-sim ARGS` in `dir`, killing it after [`TIMEOUT`].
fn run_with_timeout(dir: &Path, args: &[String], stderr: &Path) -> (Option<i32>, String) {
    let file = std::fs::File::create(stderr).expect("create the stderr file");
    let mut child = Command::new(env!("CARGO_BIN_EXE_dae-sim"))
        .current_dir(dir)
        .args(args)
        .stdout(Stdio::null())
        .stderr(file)
        .spawn()
        .expect("run dae-sim");
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for dae-sim") {
            break Some(status);
        }
        if start.elapsed() > TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let err = std::fs::read_to_string(stderr).unwrap_or_default();
    (status.and_then(|s| s.code()), err)
}

/// Recursively copies directory `from` to `to`.
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create a directory");
    for entry in std::fs::read_dir(from).expect("read a directory") {
        let entry = entry.expect("a directory entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("a file type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).expect("copy a file");
        }
    }
}

/// What is wrong with a run's outcome, if anything.
fn fault(code: Option<i32>, err: &str) -> Option<String> {
    let located = || {
        // `error: FILE:LINE:COLUMN: ...`
        err.lines().any(|l| {
            l.strip_prefix("error: ")
                .and_then(|rest| rest.split_once(".toml:"))
                .is_some_and(|(_, at)| at.split(':').next().is_some_and(|n| n.parse::<usize>().is_ok()))
        })
    };
    match code {
        _ if err.contains("panicked") => Some("panicked".to_owned()),
        None => Some("killed by a signal or the timeout".to_owned()),
        Some(0 | 1) => None,
        Some(2) if !err.starts_with("error: ") => Some("exit code 2 without an `error: ` line".to_owned()),
        Some(2) if !located() => Some("an error that names no file and line".to_owned()),
        Some(2) => None,
        Some(c) => Some(format!("exit code {c}")),
    }
}

/// Runs `cases` on `workers` threads; returns the faults, one line each.
fn sweep(cases: &[Case], workers: usize) -> Vec<String> {
    let next = AtomicUsize::new(0);
    let faults = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for w in 0..workers.max(1) {
            let (next, faults) = (&next, &faults);
            scope.spawn(move || {
                let space = Workspace::new(&format!("fuzz-{w}"));
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(case) = cases.get(i) else { break };
                    let (code, err) = space.run(case);
                    if let Some(why) = fault(code, &err) {
                        let tail: String =
                            err.chars().rev().take(300).collect::<Vec<_>>().into_iter().rev().collect();
                        let line = format!(
                            "{}:{}: {} = {} ({:?}): {why}: {}",
                            case.file,
                            case.line + 1,
                            case.key,
                            case.value,
                            case.mode,
                            tail.trim()
                        );
                        faults.lock().expect("the fault list").push(line);
                    }
                }
            });
        }
    });
    faults.into_inner().expect("the fault list")
}

#[test]
fn the_case_generator_finds_keys_values_and_units() {
    assert_eq!(assignment("clock = \"3GHz\"   # a comment"), Some(("clock".into(), "\"3GHz\"".into())));
    assert_eq!(assignment("  nRP = 14"), Some(("nRP".into(), "14".into())));
    assert_eq!(assignment("name = \"a # b\""), Some(("name".into(), "\"a # b\"".into())));
    assert_eq!(assignment("[caches.l1d]"), None);
    assert_eq!(assignment("# x = 1"), None);
    assert_eq!(assignment("values = [1,"), None);
    assert!(bad_values("\"3GHz\"").contains(&"\"0 GHz\"".to_owned()));
    assert!(bad_values("\"64 KiB\"").contains(&"\"1e30 KiB\"".to_owned()));
    assert!(bad_values("16_384").contains(&"-1".to_owned()));
    assert!(bad_values("1.05").contains(&"nan".to_owned()));
    assert!(bad_values("\"zipf\"").contains(&"\"zzz\"".to_owned()));
    assert!(cases_of("memory/hbm3-6400.toml", Mode::Memory).len() > 100);
}

#[test]
fn faults_are_told_from_clean_endings() {
    assert_eq!(fault(Some(0), ""), None);
    assert_eq!(fault(Some(1), "error: emb-small on dae: building core0.au: ..."), None);
    assert_eq!(fault(Some(2), "error: a/b.toml:12:1: x.y: must be above zero (value: 0)\n"), None);
    assert!(fault(Some(2), "error: something went wrong\n").is_some());
    assert!(fault(Some(101), "thread 'main' panicked at src/x.rs:1:1").is_some());
    assert!(fault(None, "").is_some());
    assert!(fault(Some(134), "").is_some());
}

/// A fixed sample (every 25th case of the HBM3-6400 preset, run by `dae-sim mem`).
#[test]
fn a_sample_of_bad_memory_preset_values_ends_cleanly() {
    let cases: Vec<Case> = cases_of("memory/hbm3-6400.toml", Mode::Memory).into_iter().step_by(25).collect();
    assert!(cases.len() >= 8, "{} cases", cases.len());
    let faults = sweep(&cases, 2);
    assert!(faults.is_empty(), "{}", faults.join("\n"));
}

/// A fixed sample (every 8th case) of a workload that reads `../shared/datasets`, where it is
/// there: the workspace's link to it must resolve as the repository's own does.
#[test]
fn a_sample_of_bad_values_in_a_workload_reading_the_shared_folder_ends_cleanly() {
    if shared_dir().is_none() {
        eprintln!("skipped: ../shared/datasets is absent");
        return;
    }
    let (file, mode) = SHARED_TARGETS[0];
    // The copy unmutated must run: else every case could end in a "file not found".
    let text = std::fs::read_to_string(configs().join(file)).expect("read a shipped config");
    let (line, (key, value)) =
        text.lines().enumerate().find_map(|(i, l)| Some((i, assignment(l)?))).expect("an assignment");
    let (code, err) = Workspace::new("fuzz-shared").run(&Case { file, mode, line, key, value });
    assert_eq!(code, Some(0), "{file} unmutated: {err}");
    let cases: Vec<Case> = cases_of(file, mode).into_iter().step_by(8).collect();
    assert!(cases.len() >= 5, "{} cases", cases.len());
    let faults = sweep(&cases, 2);
    assert!(faults.is_empty(), "{}", faults.join("\n"));
}

#[test]
#[ignore = "thousands of runs: cargo test --release --test config_fuzz -- --ignored"]
fn every_bad_value_in_the_shipped_configs_ends_cleanly() {
    let shared: &[(&str, Mode)] = if shared_dir().is_some() {
        SHARED_TARGETS
    } else {
        eprintln!("skipped the workloads that read ../shared/datasets: it is absent");
        &[]
    };
    let cases: Vec<Case> =
        TARGETS.iter().chain(shared).flat_map(|&(file, mode)| cases_of(file, mode)).collect();
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get());
    let start = Instant::now();
    let faults = sweep(&cases, workers);
    eprintln!("{} cases in {:.0} s on {workers} threads", cases.len(), start.elapsed().as_secs_f64());
    assert!(faults.is_empty(), "{} of {} cases:\n{}", faults.len(), cases.len(), faults.join("\n"));
}
