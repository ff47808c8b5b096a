//! Workloads whose indices come from an index trace (`.npy` offsets and row ids, the layout of
//! Meta's released traces): simulated outputs equal the reference of the trace, and a bad trace
//! is an error naming the file, the key and what is wrong.

mod common;

use common::{dae_sim, small_experiment, temp_dir};
use dae_sim::experiment::{Experiment, Overrides};
use std::path::Path;

/// Writes a trace of 2 tables x 3 bags (sizes 2, 0, 3 / 1, 4, 2) over 50 rows and a workload
/// naming it; `indices` replaces the row ids when given.
fn trace_workload(dir: &Path, indices: Option<&[i64]>) -> std::path::PathBuf {
    let offsets: [i64; 7] = [0, 2, 2, 5, 6, 10, 12];
    let rows: Vec<i64> =
        indices.map(<[i64]>::to_vec).unwrap_or_else(|| (0..12).map(|j| (j * 17 + 3) % 50).collect());
    dae_sim::npy::write(&dir.join("offsets.npy"), &[offsets.len()], &offsets).unwrap();
    dae_sim::npy::write(&dir.join("indices.npy"), &[rows.len()], &rows).unwrap();
    write_workload(dir, "traced", "offsets = \"offsets.npy\"\nindices = \"indices.npy\"")
}

/// Writes workload `name`, 2 tables x 3 bags over 50 rows, with `trace` as its `[trace]`.
fn write_workload(dir: &Path, name: &str, trace: &str) -> std::path::PathBuf {
    let wl = dir.join(format!("{name}.toml"));
    let text = format!(
        "name = \"{name}\"\nop = \"embedding_bag\"\ntables = 2\nrows = 50\ndim = 24\ndtype = \"f32\"\nbatch = 3\n\
         [trace]\n{trace}\n"
    );
    std::fs::write(&wl, text).unwrap();
    wl
}

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
    let o =
        dae_sim(&["--config", cfg.to_str().unwrap(), "--quiet", "--out", dir.join("out").to_str().unwrap()]);
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
fn a_bad_trace_names_the_file_the_key_and_the_fault() {
    let dir = temp_dir("trace-bad");
    let outside: Vec<i64> = (0..12).map(|j| if j == 7 { 50 } else { j }).collect();
    let wl = trace_workload(&dir, Some(&outside));
    let o = dae_sim(&["compile", "--workload", wl.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains(&wl.display().to_string()), "{err}");
    assert!(
        err.contains("trace.indices") && err.contains("indices[7] = 50 is outside the table's 50 rows"),
        "{err}"
    );
    // Offsets for another batch, a missing file, and an array of floats.
    let text = std::fs::read_to_string(&wl).unwrap();
    for (edit, want) in [
        (text.replace("batch = 3", "batch = 4"), "7 offsets, but tables x batch + 1 = 2 x 4 + 1 = 9"),
        (text.replace("\"indices.npy\"", "\"missing.npy\""), "missing.npy: cannot read"),
    ] {
        std::fs::write(&wl, edit).unwrap();
        let o = dae_sim(&["compile", "--workload", wl.to_str().unwrap()]);
        let err = String::from_utf8_lossy(&o.stderr).to_string();
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains(want) && !err.contains("panicked"), "{want}: {err}");
    }
    std::fs::write(&wl, &text).unwrap();
    dae_sim::npy::write(&dir.join("indices.npy"), &[2], &[0.5f32, 1.5]).unwrap();
    let o = dae_sim(&["compile", "--workload", wl.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert!(err.contains("trace.indices") && err.contains("not a little-endian integer"), "{err}");
}

/// Writes the trace of [`trace_workload`] as a `.daeidx` file (its first batch, and a second)
/// and a workload naming it.
fn daeidx_workload(dir: &Path) -> std::path::PathBuf {
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

#[test]
fn a_daeidx_traced_workload_runs_verified() {
    // Its first batch is the trace of the .npy test; the second runs after it.
    let dir = temp_dir("daeidx-ok");
    let wl = daeidx_workload(&dir);
    runs_verified(&dir, &wl, "daeidx");
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
        let o = dae_sim(&["compile", "--workload", wl.to_str().unwrap()]);
        let err = String::from_utf8_lossy(&o.stderr).to_string();
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains("trace") && err.contains(want) && !err.contains("panicked"), "{want}: {err}");
    }
    std::fs::write(&wl, &text).unwrap();
    let p = dir.join("t.daeidx");
    let mut bytes = std::fs::read(&p).unwrap();
    let n = bytes.len();
    bytes[n - 1] ^= 1;
    std::fs::write(&p, bytes).unwrap();
    let o = dae_sim(&["compile", "--workload", wl.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert!(
        err.contains("trace.file") && err.contains("t.daeidx: byte") && err.contains("checksum mismatch"),
        "{err}"
    );
}
