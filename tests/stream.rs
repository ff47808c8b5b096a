//! Workloads of several batches ([`dae_sim::stream`]): a trace's batches run back to back add
//! up exactly to the batches run alone, the number of threads does not change a figure, and a
//! batch count the inputs cannot give is an error naming the key.

#[allow(dead_code)] // this suite needs only some of the shared helpers
mod common;

use common::{configs, dae_sim, run_config, small_experiment, temp_dir};
use compiler::trace::{Header, IndexDtype, TraceWriter};
use dae_sim::experiment::{self, Experiment, Measured, Outcome, Overrides, Progress};
use std::path::Path;

/// Bags of table 0 and table 1 in batch `b` (3 bags each over 50 rows): `(offsets, ids)` each.
fn batch(b: u64) -> [(Vec<u64>, Vec<u64>); 2] {
    let ids = |n: u64, salt: u64| (0..n).map(|j| (j * 17 + 3 + salt * 11) % 50).collect::<Vec<_>>();
    [(vec![0, 2, 2, 5], ids(5, b)), (vec![0, 1, 5, 7 + b], ids(7 + b, b + 5))]
}

/// Writes `path` holding `batches` (numbers into [`batch`]) of 2 tables x 3 bags over 50 rows.
fn write_trace(path: &Path, batches: &[u64]) {
    let header = Header::new(IndexDtype::U32, 2, batches.len() as u32, 3, 50);
    let mut w = TraceWriter::create(path, header).unwrap();
    for &b in batches {
        for (offsets, ids) in batch(b) {
            w.write_section(&offsets, &ids).unwrap();
        }
    }
    w.finish().unwrap();
}

/// A workload `name` reading `file`, 2 tables x 3 bags over 50 rows; `extra` lines appended
/// before `[trace]`.
fn workload(name: &str, file: &str, extra: &str) -> String {
    format!(
        "\n[[workload]]\nname = \"{name}\"\nop = \"embedding_bag\"\ntables = 2\nrows = 50\ndim = 24\n\
         dtype = \"f32\"\nbatch = 3\n{extra}\n[workload.trace]\nfile = \"{file}\"\n"
    )
}

/// The figures of `system` on workload "t".
fn outcome<'a>(outs: &'a [Outcome], system: &str) -> &'a Measured {
    let o = outs.iter().find(|o| o.system == system && o.workload == "t").unwrap();
    o.result.as_ref().unwrap_or_else(|e| panic!("{system}: {e}"))
}

#[test]
fn a_traces_batches_back_to_back_add_up_to_each_batch_alone() {
    // Three experiments, one workload "t" each (the name seeds the tables' values): reading
    // both batches, the first, the second.
    let load = |tag: &str, batches: &[u64]| {
        let dir = temp_dir(&format!("stream-sum-{tag}"));
        write_trace(&dir.join("t.daeidx"), batches);
        let cfg = small_experiment(&dir, &workload("t", "t.daeidx", ""));
        (Experiment::load(&cfg, &Overrides::default()).unwrap(), dir)
    };
    // Each directory is kept to the end: the runs below stream the traces from them.
    let ((both_exp, both_dir), (first_exp, _first_dir), (second_exp, _second_dir)) =
        (load("both", &[0, 1]), load("first", &[0]), load("second", &[1]));
    let exps = [both_exp, first_exp, second_exp];
    assert_eq!(exps[0].file.workload[1].batches, 2, "every batch of the trace by default");
    let dir = both_dir;
    let o = run_config(&dir.join("experiment.toml"), &dir.join("out"));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let results: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("out/results.json")).unwrap()).unwrap();
    let run = results["runs"].as_array().unwrap().iter().find(|r| r["workload"] == "t").unwrap();
    assert_eq!((run["batches"].as_u64(), run["lookups"].as_u64()), (Some(2), Some(25)));
    // The functional pass reads, compiles and reduces the same batches.
    let [b, f, s] = exps
        .each_ref()
        .map(|e| dae_sim::stream::check_workload(e, &e.file.workload[1], 2, |_, _| {}).unwrap());
    assert_eq!((b.batches, b.lookups), (2, 12 + 13));
    assert_eq!(b.output_sum, f.output_sum + s.output_sum);
    assert_ne!(f.output_sum, s.output_sum);
    let [both, first, second] = exps.each_ref().map(|e| experiment::run(e, 1, |_| {}));
    for system in ["dae", "cpu", "h100"] {
        let (b, f, s) = (outcome(&both, system), outcome(&first, system), outcome(&second, system));
        assert_eq!(b.time, f.time + s.time, "{system}");
        assert_eq!(b.lookups, f.lookups + s.lookups, "{system}");
        assert_eq!(b.lookups, 12 + 13, "{system}");
        assert_eq!(b.bytes, f.bytes + s.bytes, "{system}");
        assert_eq!(b.events, f.events + s.events, "{system}");
        if system != "h100" {
            assert_eq!(b.verified, Some(Ok(())), "{system}");
            // The outputs kept (and dumped) are the first batch's, those of its inputs.
            assert!(b.outputs.is_some() && b.outputs == f.outputs, "{system}");
            // Statistics add up: the memory's reads of both batches.
            let reads = |m: &Measured| m.stats.as_ref().unwrap()["mem"]["reads"].as_u64().unwrap();
            assert_eq!(reads(b), reads(f) + reads(s), "{system}");
            // The merged latency percentiles lie between the batches' own.
            let p99 = |m: &Measured| m.latency.expect("lookups were timed").1;
            let (lo, hi) = (p99(f).min(p99(s)), p99(f).max(p99(s)));
            assert!(
                lo <= p99(b) && p99(b) <= hi,
                "{system}: p99 {:?} {:?} {:?}",
                b.latency,
                f.latency,
                s.latency
            );
            let e = |m: &Measured| m.energy.as_ref().unwrap().total_j();
            assert!((e(b) - e(f) - e(s)).abs() <= 1e-9 * e(b), "{system}: energy");
        }
    }
}

#[test]
fn threads_do_not_change_a_figure() {
    let dir = temp_dir("stream-threads");
    let cfg = small_experiment(&dir, "");
    let mut exp = Experiment::load(&cfg, &Overrides::default()).unwrap();
    exp.file.workload[0].batches = 4;
    let spec = exp.file.workload[0].clone();
    let mut seen = Vec::new();
    let one = dae_sim::stream::run_workload(&exp, &spec, 1, |done, count| seen.push((done, count)));
    assert_eq!(seen, [(1, 4), (2, 4), (3, 4), (4, 4)]);
    let three = dae_sim::stream::run_workload(&exp, &spec, 3, |_, _| {});
    for (a, b) in one.iter().zip(&three) {
        let (a, b) = (a.result.as_ref().unwrap(), b.result.as_ref().unwrap());
        assert_eq!(
            (a.time, a.lookups, a.bytes, a.events, a.latency, &a.stats, &a.outputs),
            (b.time, b.lookups, b.bytes, b.events, b.latency, &b.stats, &b.outputs)
        );
        assert_eq!(a.breakdown, b.breakdown);
        assert_eq!(a.lookups, 4 * spec.lookups());
    }
    // Batches draw their own indices: four batches are not one batch four times over.
    let single = experiment::run(&Experiment::load(&cfg, &Overrides::default()).unwrap(), 1, |_| {});
    let dae = |outs: &[Outcome]| outs.iter().find(|o| o.system == "dae").unwrap().result.clone().unwrap();
    assert_eq!(dae(&single).lookups * 4, dae(&one).lookups);
    assert_ne!(dae(&single).time * 4, dae(&one).time);
}

#[test]
fn pairs_on_several_threads_give_the_same_results_in_the_same_order() {
    let dir = temp_dir("run-threads");
    // Three single-batch workloads (emb-small and two variants under other names) and one of
    // two batches: 3 x 4 pairs.
    let c = configs();
    let extra = format!(
        "[[workload]]\ninclude = \"{wl}\"\nname = \"b\"\nbatch = 8\n\n\
         [[workload]]\ninclude = \"{wl}\"\nname = \"c\"\nbatches = 2\n\n\
         [[workload]]\ninclude = \"{wl}\"\nname = \"d\"\ndim = 32\n",
        wl = c.join("workloads/emb-small.toml").display()
    );
    let cfg = small_experiment(&dir, &extra);
    let exp = Experiment::load(&cfg, &Overrides::default()).unwrap();
    let (mut pairs, mut batches) = (0, Vec::new());
    let one = experiment::run(&exp, 1, |p| match p {
        Progress::Pair(_) => pairs += 1,
        Progress::Batch { workload, done, count } => batches.push((workload.to_string(), done, count)),
    });
    let three = experiment::run(&exp, 3, |_| {});
    assert_eq!(pairs, 12);
    assert_eq!(batches, [("c".to_string(), 1, 2), ("c".to_string(), 2, 2)]);
    let order =
        |outs: &[Outcome]| outs.iter().map(|o| (o.workload.clone(), o.system.clone())).collect::<Vec<_>>();
    assert_eq!(order(&one), order(&three));
    assert_eq!(
        order(&one)[..4],
        [("emb-small", "dae"), ("emb-small", "cpu"), ("emb-small", "h100"), ("b", "dae")]
            .map(|(w, s)| (w.to_string(), s.to_string()))
    );
    assert_eq!(dae_sim::report::json(&exp, &one), dae_sim::report::json(&exp, &three));
}

#[test]
fn a_batch_count_the_inputs_cannot_give_is_an_error_naming_the_key() {
    let dir = temp_dir("stream-bad");
    write_trace(&dir.join("two.daeidx"), &[0, 1]);
    for (extra, want) in [
        (workload("w", "two.daeidx", "batches = 3"), "3 batches asked for, but the trace holds 2"),
        (
            "\n[[workload]]\ninclude = \"WL\"\nbatches = 2\n"
                .replace("WL", &common::configs().join("workloads/gnn-cora.toml").display().to_string()),
            "only embedding_bag and tt_embedding_bag workloads",
        ),
    ] {
        let cfg = small_experiment(&dir, &extra);
        let o = dae_sim(&["--config", cfg.to_str().unwrap(), "--quiet"]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains("batches") && err.contains(want) && !err.contains("panicked"), "{want}: {err}");
    }
}
