//! Helpers shared by the end-to-end tests: temporary directories and small experiment files.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A fresh, empty directory under the system's temporary directory.
pub fn temp_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("dae-sim-test-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("temporary directory");
    d
}

/// The repository's `configs/` folder.
pub fn configs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("configs")
}

/// A small experiment: the DAE preset at 4 cores, the same without access units, an H100, and
/// the small embedding bag; `extra` is appended (to override or break things).
pub fn small_experiment(dir: &Path, extra: &str) -> PathBuf {
    let c = configs();
    let text = format!(
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

[report]
baseline = "h100"
{extra}"#,
        dae = c.join("systems/dae-hbm3.toml").display(),
        h100 = c.join("systems/h100-sxm.toml").display(),
        wl = c.join("workloads/emb-small.toml").display(),
    );
    let path = dir.join("experiment.toml");
    std::fs::write(&path, text).expect("write experiment");
    path
}

/// Runs the `dae-sim` binary with `args`.
pub fn dae_sim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dae-sim")).args(args).output().expect("run dae-sim")
}
