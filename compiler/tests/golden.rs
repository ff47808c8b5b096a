//! Golden files: the text of each compilation stage of a few small workloads, checked in under
//! `tests/golden/<workload>/<stage>-<level>.txt`, so that any change to what the compiler emits
//! shows up in review as a diff of those files.
//!
//! For each workload: `loop.txt` (the loop level, the same at every level), and for `-O0`..`-O3`
//! on the decoupled target core 0's `slc`, `dlc`, `au` and `core` stages (`slc-O2.txt`, ...),
//! and for `-O3` on the core-only target core 0's program (`core-cpu-O3.txt`). Two cores,
//! 16-lane vectors, an 8-lane access unit.
//!
//! `UPDATE_GOLDEN=1 cargo test -p compiler --test golden` rewrites the files (and removes files
//! no workload produces any more); without it, a missing, different or stale file fails the
//! test with the file's name and its first differing line.

use compiler::{
    EmbeddingBagInstance, Partition, Passes, Stages, Target, TargetInfo, WorkloadSpec, compile_with_stages,
};
use sim_core::SeedTree;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Seed of every golden workload's inputs.
const SEED: u64 = 11;
const CORES: u32 = 2;

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests").join("golden")
}

/// A workload from its TOML text (so fields added later take their defaults).
fn workload(text: &str) -> WorkloadSpec {
    toml::from_str::<WorkloadSpec>(text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

fn embedding_bag(name: &str, pooling: &str, weights: bool) -> WorkloadSpec {
    workload(&format!(
        "name = \"{name}\"\nop = \"embedding_bag\"\npooling = \"{pooling}\"\nweights = {weights}\n\
         tables = 2\nrows = 1000\ndim = 32\ndtype = \"f32\"\nbatch = 4\nbag_size = 3\n\
         [indices]\ndistribution = \"uniform\"\n"
    ))
}

fn gnn(name: &str) -> WorkloadSpec {
    workload(&format!(
        "name = \"{name}\"\nop = \"gnn_aggregate\"\ndim = 16\ndtype = \"f32\"\n\
         [graph]\ngenerator = \"rmat\"\nscale = 6\nedge_factor = 4\n"
    ))
}

/// The texts of one workload's golden files, by file name.
fn generate(spec: &WorkloadSpec) -> BTreeMap<String, String> {
    let spec = spec.resolved().expect("a valid workload");
    let inst = EmbeddingBagInstance::generate(&spec, &SeedTree::new(SEED));
    let mut files = BTreeMap::new();
    let runs = (0..=3u8).map(|l| (Target::Decoupled, l, format!("O{l}"))).chain([(
        Target::CoreOnly,
        3,
        "cpu-O3".to_string(),
    )]);
    for (target, level, suffix) in runs {
        let info = TargetInfo {
            target,
            cores: CORES,
            vector_lanes: 16,
            au_lanes: 8,
            au_storage_per_lane: 2048,
            passes: Passes::level(level).expect("levels 0..=3 exist"),
            partition: Partition::Cost,
        };
        let mut stages = Stages::default();
        if let Err(e) = compile_with_stages(&spec, inst.clone(), info, Some(&mut stages)) {
            panic!("{} at -{suffix} does not compile: {e}", spec.name);
        }
        // The loop level does not depend on the target or the level: one file for all.
        let previous = files.insert("loop.txt".to_string(), stages.loop_level.clone());
        if let Some(p) = previous {
            assert_eq!(p, stages.loop_level, "{}: the loop level differs at -{suffix}", spec.name);
        }
        let core0 = stages.cores.first().expect("one entry per core");
        let wanted: &[&str] =
            if target == Target::Decoupled { &["slc", "dlc", "au", "core"] } else { &["core"] };
        for stage in wanted {
            let text = core0
                .iter()
                .find(|(s, _)| s == stage)
                .map(|(_, t)| t.clone())
                .unwrap_or_else(|| panic!("{} at -{suffix}: core 0 has no `{stage}` stage", spec.name));
            files.insert(format!("{stage}-{suffix}.txt"), text);
        }
    }
    files
}

/// Where `expected` and `actual` first differ, as a short diff-like report.
fn first_difference(expected: &str, actual: &str) -> String {
    let (e, a): (Vec<&str>, Vec<&str>) = (expected.lines().collect(), actual.lines().collect());
    let n = e.iter().zip(&a).take_while(|(x, y)| x == y).count();
    let line = |l: &[&str]| l.get(n).map_or("<end of file>".to_string(), |s| format!("`{s}`"));
    let mut m = format!(
        "first difference at line {}:\n  - golden:    {}\n  + generated: {}",
        n + 1,
        line(&e),
        line(&a)
    );
    if e.len() != a.len() {
        let _ = write!(m, "\n  ({} lines in the golden file, {} generated)", e.len(), a.len());
    } else if n == e.len() {
        // Same lines: only the final newline differs.
        m = "the texts differ only in their final newline".into();
    }
    m
}

/// Compares (or, with `UPDATE_GOLDEN=1`, writes) the golden files of `spec`.
fn check(spec: WorkloadSpec) {
    let dir = golden_dir().join(&spec.name);
    let files = generate(&spec);
    let update = std::env::var("UPDATE_GOLDEN").is_ok_and(|v| v == "1");
    let on_disk: Vec<String> = std::fs::read_dir(&dir)
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().into_string().ok()).filter(|n| n.ends_with(".txt")).collect()
        })
        .unwrap_or_default();
    if update {
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("cannot create {}: {e}", dir.display()));
        for (name, text) in &files {
            let path = dir.join(name);
            std::fs::write(&path, text).unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
        }
        for stale in on_disk.iter().filter(|n| !files.contains_key(*n)) {
            let path = dir.join(stale);
            std::fs::remove_file(&path).unwrap_or_else(|e| panic!("cannot remove {}: {e}", path.display()));
        }
        return;
    }
    let mut failures = Vec::new();
    for (name, text) in &files {
        let path = dir.join(name);
        match std::fs::read_to_string(&path) {
            Err(e) => failures.push(format!("{}: cannot read it ({e})", path.display())),
            Ok(want) if want != *text => {
                failures.push(format!("{}: {}", path.display(), first_difference(&want, text)))
            }
            Ok(_) => {}
        }
    }
    for stale in on_disk.iter().filter(|n| !files.contains_key(*n)) {
        failures.push(format!("{}: no stage produces this file any more", dir.join(stale).display()));
    }
    assert!(
        failures.is_empty(),
        "{} golden file(s) of `{}` do not match what the compiler generates:\n{}\n\
         If the change is deliberate, rerun with UPDATE_GOLDEN=1 \
         (UPDATE_GOLDEN=1 cargo test -p compiler --test golden) and review the diff of tests/golden/.",
        failures.len(),
        spec.name,
        failures.join("\n")
    );
}

#[test]
fn golden_embedding_bag_sum() {
    check(embedding_bag("emb-sum", "sum", false));
}

#[test]
fn golden_embedding_bag_mean() {
    check(embedding_bag("emb-mean", "mean", false));
}

#[test]
fn golden_embedding_bag_max() {
    check(embedding_bag("emb-max", "max", false));
}

#[test]
fn golden_embedding_bag_weighted_sum() {
    check(embedding_bag("emb-weighted", "sum", true));
}

#[test]
fn golden_gnn_aggregation() {
    check(gnn("gnn"));
}

#[test]
fn golden_kg_distmult() {
    check(workload(
        "name = \"kg\"\nop = \"kg_score\"\nmodel = \"distmult\"\nrows = 100\nrelations = 5\nnegatives = 2\n\
         dim = 32\ndtype = \"f32\"\nbatch = 4\n[indices]\ndistribution = \"uniform\"\n",
    ));
}

#[test]
fn golden_kg_transe() {
    check(workload(
        "name = \"kg-transe\"\nop = \"kg_score\"\nmodel = \"transe\"\nrows = 100\nrelations = 5\nnegatives = 2\n\
         dim = 32\ndtype = \"f32\"\nbatch = 4\n[indices]\ndistribution = \"uniform\"\n",
    ));
}

/// ComplEx: before bufferization a column's six element streams are more operands than a queue
/// entry carries, so its callback continues in a second entry (`dlc.next_entry`).
#[test]
fn golden_kg_complex() {
    check(workload(
        "name = \"kg-complex\"\nop = \"kg_score\"\nmodel = \"complex\"\nrows = 100\nrelations = 5\nnegatives = 2\n\
         dim = 32\ndtype = \"f32\"\nbatch = 4\n[indices]\ndistribution = \"uniform\"\n",
    ));
}

#[test]
fn golden_sparse_attention() {
    check(workload(
        "name = \"attention\"\nop = \"sparse_attention\"\ntables = 2\nrows = 64\ndim = 32\ndtype = \"f32\"\n\
         batch = 2\nbag_size = 8\nblock = 2\n[indices]\ndistribution = \"uniform\"\n",
    ));
}

/// f16 tables: the same loop nest, with widening loads (`vld.f16`, `vldq.f16`) and 2-byte
/// element streams.
#[test]
fn golden_embedding_bag_f16() {
    check(workload(
        "name = \"emb-f16\"\nop = \"embedding_bag\"\npooling = \"sum\"\nweights = true\n\
         tables = 2\nrows = 1000\ndim = 32\ndtype = \"f16\"\nbatch = 4\nbag_size = 3\n\
         [indices]\ndistribution = \"uniform\"\n",
    ));
}

/// Int8 rows (FBGEMM's fused 8-bit row-wise), with a padding index: each row's scale and bias
/// read beside its values and dequantized on the core.
#[test]
fn golden_embedding_bag_int8() {
    check(workload(
        "name = \"emb-int8\"\nop = \"embedding_bag\"\npooling = \"sum\"\npadding_idx = 0\n\
         tables = 2\nrows = 1000\ndim = 32\ndtype = \"int8\"\nbatch = 4\nbag_size = 3\n\
         [indices]\ndistribution = \"uniform\"\n",
    ));
}

#[test]
fn golden_gnn_message_passing() {
    check(workload(
        "name = \"gnn-scatter\"\nop = \"gnn_scatter\"\ndim = 16\ndtype = \"f32\"\nbatch = 32\n\
         [graph]\ngenerator = \"rmat\"\nscale = 6\nedge_factor = 4\n",
    ));
}

#[test]
fn first_difference_names_the_line() {
    assert_eq!(
        first_difference("a\nb\nc\n", "a\nx\nc\n"),
        "first difference at line 2:\n  - golden:    `b`\n  + generated: `x`"
    );
    assert_eq!(
        first_difference("a\n", "a\nb\n"),
        "first difference at line 2:\n  - golden:    <end of file>\n  + generated: `b`\n  (1 lines in the golden file, 2 generated)"
    );
    assert_eq!(first_difference("a\n", "a"), "the texts differ only in their final newline");
}

#[test]
fn golden_tt_embedding_bag() {
    check(workload(
        "name = \"tt\"\nop = \"tt_embedding_bag\"\ntables = 2\ndim = 8\ndtype = \"f32\"\nbatch = 2\nbag_size = 2\n\
         [indices]\ndistribution = \"uniform\"\n[tt]\nrow_factors = [4, 5, 6]\ndim_factors = [2, 2, 2]\nrank = 4\n",
    ));
}
