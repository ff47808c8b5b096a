//! Workloads whose indices come from an index trace (`.npy` offsets and row ids, the layout of
//! Meta's released traces, or a `.daeidx` file): simulated outputs equal the reference of the
//! trace. (Bad traces: `bad_input.rs`.)

#[allow(dead_code)] // this suite needs only some of the shared helpers
mod common;

use common::{dae_sim, daeidx_workload, run_config, small_experiment, temp_dir, trace_workload};
use dae_sim::experiment::{Experiment, Overrides};
use std::path::Path;

/// Loads the workload `wl` (named `name`, the trace of [`trace_workload`]) into the small
/// experiment and checks its instance, then runs it: verified on both cycle-level systems, and
/// `compile` reads the trace too.
fn runs_verified(dir: &Path, wl: &Path, name: &str) {
    let cfg = small_experiment(dir, &format!("\n[[workload]]\ninclude = \"{}\"\n", wl.display()));
    let exp = Experiment::load(&cfg, &Overrides::default()).unwrap();
    let spec = exp.file.workload.iter().find(|w| w.name == name).unwrap();
    let inst = exp.instance(spec);
    assert_eq!(inst.offsets, [0, 2, 2, 5, 6, 10, 12]);
    assert_eq!(inst.indices[4], (4 * 17 + 3) % 50);
    assert_eq!(spec.bag_size, 2, "the trace's mean bag, rounded up");
    let o = run_config(&cfg, &dir.join("out"));
    let table = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{table}\n{}", String::from_utf8_lossy(&o.stderr));
    let traced: Vec<&str> = table.lines().filter(|l| l.contains(name) && l.contains("cycle-level")).collect();
    assert_eq!(traced.len(), 2, "{table}");
    assert!(traced.iter().all(|l| l.ends_with("verified")), "{table}");
    let o = dae_sim(&["compile", "--workload", wl.to_str().unwrap(), "--emit", "au"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn a_traced_workload_runs_verified_on_every_system() {
    let dir = temp_dir("trace-ok");
    let wl = trace_workload(&dir, None);
    runs_verified(&dir, &wl, "traced");
}

#[test]
fn a_trace_of_bag_lengths_runs_as_its_offsets() {
    // PyTorch's other form: lengths (2, 0, 3 / 1, 4, 2) instead of offsets.
    let dir = temp_dir("trace-lengths");
    trace_workload(&dir, None);
    let lengths: [i64; 6] = [2, 0, 3, 1, 4, 2];
    dae_sim::npy::write(&dir.join("lengths.npy"), &[lengths.len()], &lengths).unwrap();
    let wl = common::write_workload(&dir, "traced", "lengths = \"lengths.npy\"\nindices = \"indices.npy\"");
    runs_verified(&dir, &wl, "traced");
}

#[test]
fn a_daeidx_traced_workload_runs_verified() {
    // Its first batch is the trace of the .npy test; the second runs after it.
    let dir = temp_dir("daeidx-ok");
    let wl = daeidx_workload(&dir);
    runs_verified(&dir, &wl, "daeidx");
}
