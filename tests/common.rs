//! Helpers shared by the end-to-end tests: temporary directories, small experiment, workload and
//! trace files, and running the binary.

use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A test's own directory under the system's temporary directory, removed with its contents
/// when dropped (also when the test fails and unwinds), so that test runs leave nothing behind.
/// It reads as a [`Path`]; keep it alive until the test's last use, binaries it runs included.
#[derive(Debug)]
pub struct TestDir(tempfile::TempDir);

impl Deref for TestDir {
    type Target = Path;

    fn deref(&self) -> &Path {
        self.0.path()
    }
}

impl AsRef<Path> for TestDir {
    fn as_ref(&self) -> &Path {
        self
    }
}

/// A fresh, empty directory `dae-sim-test-TAG-XXXXXX` (see [`TestDir`]).
pub fn temp_dir(tag: &str) -> TestDir {
    let dir = tempfile::Builder::new().prefix(&format!("dae-sim-test-{tag}-")).tempdir();
    TestDir(dir.expect("temporary directory"))
}

/// The repository's `configs/` folder.
pub fn configs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("configs")
}

/// The shared folder beside the repository (`../shared`), where it holds `datasets/`; a checkout
/// without it skips what needs it.
pub fn shared_dir() -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared");
    p.join("datasets").is_dir().then_some(p)
}

/// A small experiment: the DAE preset at 4 cores, the same without access units, an H100, and
/// the small embedding bag; `extra` is appended (to override or break things).
pub fn small_experiment(dir: &Path, extra: &str) -> PathBuf {
    let path = dir.join("experiment.toml");
    let text = small_experiment_text(&configs(), "workloads/emb-small.toml", "", extra);
    std::fs::write(&path, text).expect("write experiment");
    path
}

/// The text of [`small_experiment`] with its presets under `root` (a `configs/` folder), on
/// `workload` (a path under it) followed by `workload_extra` lines, and `extra` appended.
pub fn small_experiment_text(root: &Path, workload: &str, workload_extra: &str, extra: &str) -> String {
    format!(
        r#"[experiment]
name = "small"
seed = 42

[[system]]
name = "dae"
include = "{dae}"
cores = 4

[[system]]
name = "cpu"
include = "{dae}"
cores = 4
access_unit = "none"

[[system]]
name = "h100"
include = "{h100}"

[[workload]]
include = "{wl}"
{workload_extra}
[report]
baseline = "h100"
{extra}"#,
        dae = root.join("systems/dae-hbm3.toml").display(),
        h100 = root.join("systems/h100-sxm.toml").display(),
        wl = root.join(workload).display(),
    )
}

/// Runs the `dae-sim` binary with `args`.
pub fn dae_sim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dae-sim")).args(args).output().expect("run dae-sim")
}

/// Runs the main command on config `cfg`, writing into `out`, without progress lines.
pub fn run_config(cfg: &Path, out: &Path) -> Output {
    dae_sim(&["--config", cfg.to_str().unwrap(), "--quiet", "--out", out.to_str().unwrap()])
}

/// Rewrites the file at `path` through `edit` (a test's change to a written config).
pub fn edit_file(path: &Path, edit: impl FnOnce(String) -> String) {
    let text = std::fs::read_to_string(path).expect("read the file to edit");
    std::fs::write(path, edit(text)).expect("write the edited file");
}

/// Runs the experiment `cfg`, which must fail as a bad configuration (exit code 2, no panic);
/// returns its stderr.
pub fn config_error(cfg: &Path) -> String {
    let o = dae_sim(&["--config", cfg.to_str().unwrap(), "--quiet"]);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(2), "exit code; stderr: {err}");
    assert!(!err.contains("panicked"), "{err}");
    err
}

/// Runs the experiment `cfg` with its outputs under `out`, checks that it succeeded, and
/// returns its `results.json`.
pub fn run_results(cfg: &Path, out: &Path) -> serde_json::Value {
    let o = run_config(cfg, out);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).expect("results.json"))
        .expect("results.json is JSON")
}

/// Runs the `dae-sim` binary with `args` in `dir` (relative paths are then `dir`'s): its exit
/// code and its stderr.
pub fn dae_sim_in(dir: &Path, args: &[&str]) -> (Option<i32>, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_dae-sim"))
        .current_dir(dir)
        .args(args)
        .output()
        .expect("run dae-sim");
    (o.status.code(), String::from_utf8_lossy(&o.stderr).into_owned())
}

/// The HBM3-6400 memory preset written to `dir` with the first line that starts with `key =`
/// replaced by `line`: the file and the 1-based number of the replaced line.
pub fn broken_preset(dir: &Path, key: &str, line: &str) -> (PathBuf, usize) {
    let text = std::fs::read_to_string(configs().join("memory/hbm3-6400.toml")).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let at = lines.iter().position(|l| l.starts_with(&format!("{key} ="))).expect("key in the preset");
    lines[at] = line.to_owned();
    let file = dir.join("broken.toml");
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    (file, at + 1)
}

/// Writes a trace of 2 tables x 3 bags (sizes 2, 0, 3 / 1, 4, 2) over 50 rows and a workload
/// naming it; `indices` replaces the row ids when given.
pub fn trace_workload(dir: &Path, indices: Option<&[i64]>) -> PathBuf {
    let offsets: [i64; 7] = [0, 2, 2, 5, 6, 10, 12];
    let rows: Vec<i64> =
        indices.map(<[i64]>::to_vec).unwrap_or_else(|| (0..12).map(|j| (j * 17 + 3) % 50).collect());
    dae_sim::npy::write(&dir.join("offsets.npy"), &[offsets.len()], &offsets).unwrap();
    dae_sim::npy::write(&dir.join("indices.npy"), &[rows.len()], &rows).unwrap();
    write_workload(dir, "traced", "offsets = \"offsets.npy\"\nindices = \"indices.npy\"")
}

/// Writes workload `name`, 2 tables x 3 bags over 50 rows, with `trace` as its `[trace]`.
pub fn write_workload(dir: &Path, name: &str, trace: &str) -> PathBuf {
    let wl = dir.join(format!("{name}.toml"));
    let text = format!(
        "name = \"{name}\"\nop = \"embedding_bag\"\ntables = 2\nrows = 50\ndim = 24\ndtype = \"f32\"\nbatch = 3\n\
         [trace]\n{trace}\n"
    );
    std::fs::write(&wl, text).unwrap();
    wl
}

/// Writes the trace of [`trace_workload`] as a `.daeidx` file (its first batch, and a second)
/// and a workload naming it.
pub fn daeidx_workload(dir: &Path) -> PathBuf {
    use compiler::trace::{Header, IndexDtype, TraceWriter};
    let rows: Vec<u64> = (0..12).map(|j| (j * 17 + 3) % 50).collect();
    let mut w =
        TraceWriter::create(&dir.join("t.daeidx"), Header::new(IndexDtype::U32, 2, 2, 3, 50)).unwrap();
    w.write_section(&[0, 2, 2, 5], &rows[..5]).unwrap();
    w.write_section(&[0, 1, 5, 7], &rows[5..]).unwrap();
    w.write_section(&[0, 1, 1, 1], &[49]).unwrap();
    w.write_section(&[0, 0, 0, 0], &[]).unwrap();
    w.finish().unwrap();
    write_workload(dir, "daeidx", "file = \"t.daeidx\"")
}

/// Sums the counter `leaf` over every object of `stats` (a run's statistics tree) whose key
/// satisfies `group`.
pub fn sum_over(stats: &serde_json::Value, group: impl Fn(&str) -> bool, leaf: &str) -> u64 {
    stats
        .as_object()
        .expect("statistics are an object")
        .iter()
        .filter(|(k, _)| group(k))
        .map(|(_, v)| v[leaf].as_u64().unwrap_or(0))
        .sum()
}

/// Whether two energies agree to a part in a billion.
pub fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1e-30)
}

/// The (static, dynamic) energy of component `name` in `e`.
pub fn energy_part(e: &dae_sim::power::EnergyReport, name: &str) -> (f64, f64) {
    e.components
        .iter()
        .find(|(n, _, _)| n == name)
        .map(|(_, s, d)| (*s, *d))
        .expect("component in the report")
}

/// Loads the [`small_experiment`] with `extra` appended and `edit` applied to its text.
pub fn load(
    tag: &str,
    extra: &str,
    edit: impl FnOnce(String) -> String,
) -> (TestDir, dae_sim::experiment::Experiment) {
    let dir = temp_dir(tag);
    let cfg = small_experiment(&dir, extra);
    edit_file(&cfg, edit);
    let exp = dae_sim::experiment::Experiment::load(&cfg, &dae_sim::experiment::Overrides::default())
        .expect("the edited experiment loads");
    (dir, exp)
}

/// The plan of system `system` in `exp`.
pub fn plan<'a>(
    exp: &'a dae_sim::experiment::Experiment,
    system: &str,
) -> &'a dae_sim::experiment::SystemPlan {
    &exp.systems.iter().find(|(n, _)| n == system).expect("the system is in the experiment").1
}

/// Runs `plan` on the experiment's first workload.
pub fn measure_plan(
    exp: &dae_sim::experiment::Experiment,
    plan: &dae_sim::experiment::SystemPlan,
) -> dae_sim::experiment::Measured {
    let spec = &exp.file.workload[0];
    let inst = exp.instance(spec);
    let reference = inst.reference(spec);
    dae_sim::experiment::run_pair(&exp.seeds(), exp.time_limit(&inst), plan, spec, &inst, &reference)
        .expect("the pair runs")
}

/// An edit of [`small_experiment`]'s text under which the DAE chip's LLC bypasses the access
/// units' row reads: uniform indices over a million rows (little reuse), so the `nontemporal`
/// pass marks the table and the preset's LLC (`non_temporal = "bypass"`) does not fill it.
pub fn bypassing_llc(t: String) -> String {
    t.replace(
        "name = \"dae\"\ninclude",
        "name = \"dae\"\ncompiler.passes = [\"decouple\", \"nontemporal\", \"vectorize\", \"bufferize\", \"simplify-mem\", \"align-queues\"]\ninclude",
    )
    .replace(
        "[[workload]]\ninclude = ",
        "[[workload]]\nrows = 1000000\nbatch = 32\nindices = { distribution = \"uniform\" }\ninclude = ",
    )
}
