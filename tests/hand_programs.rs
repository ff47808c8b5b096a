//! Hand-written programs (`programs/`, `[system.compiler] programs = ...`): each shipped pair
//! computes its op family's outputs on a small DAE chip (bit for bit, or within the stated
//! tolerance of knowledge-graph DistMult and ComplEx scores), a directory serves each workload
//! with its family's pair, and a missing file or a bad template is a config error naming the
//! file and the key.

#[allow(dead_code)] // this suite needs only some of the shared helpers
mod common;

use common::{configs, temp_dir};
use compiler::EmbeddingBagInstance;
use dae_sim::config::ConfigError;
use dae_sim::experiment::{Experiment, Overrides, SystemPlan, run_pair};
use dae_sim::system::HandSource;
use std::path::{Path, PathBuf};

/// The repository's `programs/` folder.
fn programs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("programs")
}

/// An experiment with one system per `(name, programs = stem)` on the DAE preset at 4 cores,
/// and the workloads `workloads` (TOML `[[workload]]` bodies).
fn experiment(dir: &Path, systems: &[(&str, &str)], workloads: &[&str]) -> PathBuf {
    let dae = configs().join("systems/dae-hbm3.toml");
    let mut text = "[experiment]\nname = \"hand\"\nseed = 7\n".to_string();
    for (name, stem) in systems {
        text += &format!(
            "\n[[system]]\nname = \"{name}\"\ninclude = \"{}\"\ncores = 4\ncompiler = {{ programs = \"{stem}\" }}\n",
            dae.display()
        );
    }
    for w in workloads {
        text += &format!("\n[[workload]]\n{w}\n");
    }
    let path = dir.join("experiment.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// An embedding bag of 3 tables, dim 40 (two full vectors of 16 and one of 8), with `extra`.
fn bag(name: &str, extra: &str) -> String {
    format!(
        "name = \"{name}\"\nop = \"embedding_bag\"\ntables = 3\nrows = 5000\ndim = 40\ndtype = \"f32\"\n\
         batch = 12\nbag_size = 6\n{extra}\nindices = {{ distribution = \"zipf\", alpha = 1.05 }}"
    )
}

/// GNN aggregation over a small power-law graph: bags of every size, empty ones included.
fn graph(name: &str, extra: &str) -> String {
    format!(
        "name = \"{name}\"\nop = \"gnn_aggregate\"\ndim = 24\ndtype = \"f32\"\nbatch = 96\n{extra}\n\
         graph = {{ generator = \"rmat\", scale = 9, edge_factor = 4 }}"
    )
}

#[test]
fn hand_written_programs_compute_every_op_family_bit_for_bit() {
    let dir = temp_dir("hand-programs");
    let p = programs();
    let stem = |family: &str| p.join(family).display().to_string();
    let families = ["embedding-bag-sum", "embedding-bag-weighted", "embedding-bag-mean", "embedding-bag-max"];
    let systems: Vec<(&str, String)> = families.iter().map(|f| (*f, stem(f))).collect();
    let systems: Vec<(&str, &str)> = systems.iter().map(|(n, s)| (*n, s.as_str())).collect();
    let workloads = [
        ("embedding-bag-sum", bag("bag-sum", "")),
        ("embedding-bag-sum", graph("gnn-sum", "")),
        ("embedding-bag-weighted", bag("bag-weighted", "weights = true")),
        ("embedding-bag-mean", bag("bag-mean", "pooling = \"mean\"")),
        ("embedding-bag-mean", graph("gnn-mean", "pooling = \"mean\"")),
        ("embedding-bag-max", bag("bag-max", "pooling = \"max\"")),
        ("embedding-bag-max", graph("gnn-max", "pooling = \"max\"")),
    ];
    let bodies: Vec<&str> = workloads.iter().map(|(_, w)| w.as_str()).collect();
    let exp = Experiment::load(&experiment(&dir, &systems, &bodies), &Overrides::default())
        .unwrap_or_else(|e| panic!("{e}"));
    let seeds = exp.seeds();
    for ((family, _), spec) in workloads.iter().zip(&exp.file.workload) {
        let inst = EmbeddingBagInstance::generate(spec, &seeds);
        if spec.graph.is_some() {
            assert!(inst.offsets.windows(2).any(|w| w[0] == w[1]), "{}: no empty bag", spec.name);
        }
        let reference = inst.reference(spec);
        assert!(reference.iter().any(|&v| v != 0.0), "{}", spec.name);
        let (_, plan) = exp.systems.iter().find(|(n, _)| n == family).unwrap();
        let SystemPlan::Dae(sys) = plan else { panic!("a DAE system") };
        assert!(sys.programs.is_some());
        let m = run_pair(&seeds, exp.time_limit(&inst), plan, spec, &inst, &reference)
            .unwrap_or_else(|e| panic!("{} on {family}: {e}", spec.name));
        assert_eq!(m.verified, Some(Ok(())), "{} on {family}", spec.name);
        assert_eq!(m.lookups, inst.indices.len() as u64, "{} on {family}", spec.name);
    }
    // A template of another family cannot serve a workload: that pair's error says why.
    let (spec, plan) = (&exp.file.workload[0], &exp.systems[1].1);
    let inst = EmbeddingBagInstance::generate(spec, &seeds);
    let e = run_pair(&seeds, exp.time_limit(&inst), plan, spec, &inst, &inst.reference(spec)).unwrap_err();
    assert!(
        e.starts_with("programs: ") && e.contains("{weights}: the workload has no per-lookup weights"),
        "{e}"
    );
}

fn load_error(dir: &Path, stem: &str) -> String {
    let cfg = experiment(dir, &[("hand", stem)], &[&bag("bag-sum", "")]);
    match Experiment::load(&cfg, &Overrides::default()) {
        Err(e @ ConfigError::Invalid { .. }) => e.to_string(),
        Err(e) => panic!("not a key error: {e}"),
        Ok(_) => panic!("{stem} loaded"),
    }
}

/// A TT-EmbeddingBag of `tables` tables, rows of `dim_factors`, `rank`, with `extra`.
fn tt(
    name: &str,
    tables: u32,
    row_factors: [u32; 3],
    dim_factors: [u32; 3],
    rank: u32,
    extra: &str,
) -> String {
    format!(
        "name = \"{name}\"\nop = \"tt_embedding_bag\"\ntables = {tables}\ndim = {}\ndtype = \"f32\"\n\
         batch = 4\nbag_size = 5\n{extra}\nindices = {{ distribution = \"zipf\", alpha = 1.1 }}\n\
         tt = {{ row_factors = {row_factors:?}, dim_factors = {dim_factors:?}, rank = {rank} }}",
        dim_factors.iter().product::<u32>()
    )
}

#[test]
fn tt_embedding_bags_verify_with_the_hand_programs() {
    let dir = temp_dir("hand-programs-tt");
    let stem = programs().join("tt-embedding-bag").display().to_string();
    let workloads = [
        // Rank 5 (a partial vector), two tables, rows of 12.
        tt("tt-rank5", 2, [3, 4, 5], [2, 3, 2], 5, ""),
        // Rank 16 (one full vector), mean pooling.
        tt("tt-mean", 1, [2, 2, 7], [1, 4, 3], 16, "pooling = \"mean\""),
        // Rank 20 (a full vector and a partial one), three tables.
        tt("tt-rank20", 3, [3, 3, 3], [2, 2, 2], 20, ""),
        // Rows of one column.
        tt("tt-dim1", 2, [4, 3, 2], [1, 1, 1], 7, "pooling = \"mean\""),
        // tt-rec's shape, rows of 64 from cores of rank 16, several tables.
        tt("tt-rec", 2, [10, 10, 10], [4, 4, 4], 16, ""),
    ];
    let bodies: Vec<&str> = workloads.iter().map(String::as_str).collect();
    let exp = Experiment::load(&experiment(&dir, &[("hand", &stem)], &bodies), &Overrides::default())
        .unwrap_or_else(|e| panic!("{e}"));
    let seeds = exp.seeds();
    let (_, plan) = &exp.systems[0];
    for spec in &exp.file.workload {
        assert_eq!(compiler::hand::family(spec), "tt-embedding-bag");
        let generated = EmbeddingBagInstance::generate(spec, &seeds);
        // The same tables with bags of 0, 1 and several lookups (a row twice, the last row):
        // per table, an empty bag, a single lookup, a repeated row; more cores (4) than the
        // non-empty bags of one table, so some cores get only empty bags or none.
        let rows = spec.rows as u32;
        let shapes = [vec![], vec![3 % rows], vec![rows - 1, 0, rows - 1], vec![]];
        let mut offsets = vec![0u32];
        let mut indices = Vec::new();
        for _ in 0..spec.tables {
            for b in &shapes {
                indices.extend(b);
                offsets.push(indices.len() as u32);
            }
        }
        let corners = EmbeddingBagInstance { offsets, indices, ..generated.clone() };
        for (what, inst) in [("generated", &generated), ("corners", &corners)] {
            let reference = inst.reference(spec);
            assert!(reference.iter().any(|&v| v != 0.0), "{} {what}", spec.name);
            let m = run_pair(&seeds, exp.time_limit(inst), plan, spec, inst, &reference)
                .unwrap_or_else(|e| panic!("{} {what}: {e}", spec.name));
            assert_eq!(m.verified, Some(Ok(())), "{} {what}", spec.name);
            assert_eq!(m.lookups, inst.indices.len() as u64, "{} {what}", spec.name);
        }
    }
    // A workload of another family has no TT shape: the error names the template and line.
    let cfg = experiment(&dir, &[("hand", &stem)], &[&bag("bag-sum", "")]);
    let exp = Experiment::load(&cfg, &Overrides::default()).unwrap_or_else(|e| panic!("{e}"));
    let spec = &exp.file.workload[0];
    let inst = EmbeddingBagInstance::generate(spec, &seeds);
    let e = run_pair(&seeds, exp.time_limit(&inst), &exp.systems[0].1, spec, &inst, &inst.reference(spec))
        .unwrap_err();
    assert!(e.starts_with(&format!("programs: {stem}.au:")), "{e}");
    assert!(e.contains(": {stride1}: the workload has no tensor-train cores"), "{e}");
}

#[test]
fn a_missing_file_or_a_bad_template_is_a_config_error_naming_the_file_and_key() {
    let dir = temp_dir("hand-programs-errors");
    // The stem is relative to the config file's directory, as `include` paths are.
    let text = load_error(&dir, "nope");
    let missing = dir.join("nope.au");
    assert!(text.contains("system[0].compiler.programs: cannot read "), "{text}");
    assert!(text.contains(&missing.display().to_string()) && text.contains("(value: \"nope\")"), "{text}");
    let sum = std::fs::read_to_string(programs().join("embedding-bag-sum.au")).unwrap();
    std::fs::write(dir.join("bad.au"), sum.replace("{au_lanes}", "{au_lane}")).unwrap();
    std::fs::copy(programs().join("embedding-bag-sum.core"), dir.join("bad.core")).unwrap();
    let text = load_error(&dir, "bad");
    let line = sum.lines().position(|l| l.contains("{au_lanes}")).unwrap() + 1;
    let file = dir.join("bad.au").display().to_string();
    assert!(text.contains("system[0].compiler.programs: workload bag-sum: "), "{text}");
    assert!(text.contains(&format!("{file}:{line}: unknown placeholder {{au_lane}}")), "{text}");
    // Hand-written programs need an access unit to run on.
    let cfg = experiment(&dir, &[("hand", "bad")], &[&bag("bag-sum", "")]);
    let text =
        std::fs::read_to_string(&cfg).unwrap().replace("cores = 4\n", "cores = 4\naccess_unit = \"none\"\n");
    std::fs::write(&cfg, text).unwrap();
    let e = Experiment::load(&cfg, &Overrides::default()).map(|_| ()).unwrap_err().to_string();
    assert!(e.contains("system[0].compiler.programs: hand-written programs need an access unit"), "{e}");
}

/// Message passing over a small power-law graph: dim 24 (a full vector and a partial one),
/// `batch` destinations (some with no edges in).
fn scatter(name: &str, batch: u32) -> String {
    format!(
        "name = \"{name}\"\nop = \"gnn_scatter\"\ndim = 24\ndtype = \"f32\"\nbatch = {batch}\n\
         graph = {{ generator = \"rmat\", scale = 9, edge_factor = 4 }}"
    )
}

/// Knowledge-graph scoring with `model`: `batch` triples of 6 negatives, rows of `dim`.
fn triples(name: &str, model: &str, batch: u32, dim: u32) -> String {
    format!(
        "name = \"{name}\"\nop = \"kg_score\"\nmodel = \"{model}\"\nrows = 2000\nrelations = 11\n\
         negatives = 6\ndim = {dim}\ndtype = \"f32\"\nbatch = {batch}\n\
         indices = {{ distribution = \"uniform\" }}"
    )
}

#[test]
fn a_directory_serves_every_op_family_with_its_own_programs() {
    let dir = temp_dir("hand-programs-dir");
    // The directory relative to the config file, as `include` paths are.
    let rel = pathdiff(&programs(), &dir);
    let workloads = [
        ("embedding-bag-sum", bag("bag-sum", "")),
        ("embedding-bag-weighted", bag("bag-weighted", "weights = true")),
        ("embedding-bag-mean", graph("gnn-mean", "pooling = \"mean\"")),
        ("embedding-bag-max", bag("bag-max", "pooling = \"max\"")),
        ("gnn-scatter", scatter("scatter", 96)),
        // Fewer destinations than cores: a core with no edges.
        ("gnn-scatter", scatter("scatter-few", 3)),
        // Rows of 40: two full vectors and a partial one (ComplEx: halves of 16 and 4).
        ("kg-transe", triples("transe", "transe", 9, 40)),
        ("kg-distmult", triples("distmult", "distmult", 9, 40)),
        ("kg-complex", triples("complex", "complex", 9, 40)),
        // Fewer triples than cores, rows of 20 (ComplEx: one partial vector a half).
        ("kg-transe", triples("transe-few", "transe", 3, 20)),
        ("kg-distmult", triples("distmult-few", "distmult", 3, 20)),
        ("kg-complex", triples("complex-few", "complex", 3, 20)),
        ("tt-embedding-bag", tt("tt", 2, [3, 4, 5], [2, 3, 2], 5, "")),
        (
            "embedding-bag-weighted",
            "name = \"attention\"\nop = \"sparse_attention\"\ntables = 3\nrows = 512\ndim = 20\n\
             dtype = \"f32\"\nbatch = 5\nbag_size = 16\nblock = 4\nindices = { distribution = \"uniform\" }"
                .to_string(),
        ),
    ];
    let bodies: Vec<&str> = workloads.iter().map(|(_, w)| w.as_str()).collect();
    let exp =
        Experiment::load(&experiment(&dir, &[("hand", &format!("{rel}/"))], &bodies), &Overrides::default())
            .unwrap_or_else(|e| panic!("{e}"));
    let seeds = exp.seeds();
    let (_, plan) = &exp.systems[0];
    let SystemPlan::Dae(sys) = plan else { panic!("a DAE system") };
    let Some(HandSource::Dir { pairs, .. }) = &sys.programs else { panic!("a directory") };
    let mut families: Vec<&str> = workloads.iter().map(|(f, _)| *f).collect();
    families.sort_unstable();
    families.dedup();
    assert_eq!(
        pairs.keys().map(String::as_str).collect::<Vec<_>>(),
        families,
        "the families needed, once each"
    );
    for ((family, _), spec) in workloads.iter().zip(&exp.file.workload) {
        assert_eq!(compiler::hand::family(spec), *family);
        let inst = EmbeddingBagInstance::generate(spec, &seeds);
        let reference = inst.reference(spec);
        assert!(reference.iter().any(|&v| v != 0.0), "{}", spec.name);
        if spec.name.ends_with("-few") {
            assert!(spec.bags() < 4, "{}: a core without work", spec.name);
        }
        let m = run_pair(&seeds, exp.time_limit(&inst), plan, spec, &inst, &reference)
            .unwrap_or_else(|e| panic!("{} on {family}: {e}", spec.name));
        assert_eq!(m.verified, Some(Ok(())), "{} on {family}", spec.name);
        assert_eq!(m.lookups, inst.indices.len() as u64, "{}", spec.name);
        let outputs = m.outputs.as_ref().map_or(0, |o| o.len());
        assert!(outputs == 0 || outputs == reference.len(), "{}", spec.name);
    }
}

/// `to` relative to `from` (both absolute), as a string with `/` separators.
fn pathdiff(to: &Path, from: &Path) -> String {
    let (to, from): (Vec<_>, Vec<_>) = (to.components().collect(), from.components().collect());
    let common = to.iter().zip(&from).take_while(|(a, b)| a == b).count();
    let mut parts: Vec<String> = vec!["..".into(); from.len() - common];
    parts.extend(to[common..].iter().map(|c| c.as_os_str().to_string_lossy().into_owned()));
    parts.join("/")
}

#[test]
fn a_directory_without_a_workloads_family_is_a_config_error_naming_the_file_and_key() {
    let dir = temp_dir("hand-programs-dir-errors");
    let programs_dir = dir.join("mine");
    std::fs::create_dir_all(&programs_dir).unwrap();
    for ext in ["au", "core"] {
        std::fs::copy(
            programs().join(format!("embedding-bag-sum.{ext}")),
            programs_dir.join(format!("embedding-bag-sum.{ext}")),
        )
        .unwrap();
    }
    // Only the families the workloads need are read: a sum bag runs.
    let cfg = experiment(&dir, &[("hand", "mine/")], &[&bag("bag-sum", "")]);
    Experiment::load(&cfg, &Overrides::default()).unwrap_or_else(|e| panic!("{e}"));
    let cfg = experiment(&dir, &[("hand", "mine")], &[&bag("bag-sum", ""), &triples("kg", "distmult", 2, 8)]);
    let e = Experiment::load(&cfg, &Overrides::default()).map(|_| ()).unwrap_err().to_string();
    let file = programs_dir.join("kg-distmult.au").display().to_string();
    assert!(e.contains("system[0].compiler.programs: workload kg needs kg-distmult: cannot read "), "{e}");
    assert!(e.contains(&file), "{e}");
    // A value ending in `/` must name a directory.
    let cfg = experiment(&dir, &[("hand", "nowhere/")], &[&bag("bag-sum", "")]);
    let e = Experiment::load(&cfg, &Overrides::default()).map(|_| ()).unwrap_err().to_string();
    assert!(e.contains("system[0].compiler.programs: ") && e.contains("nowhere is not a directory"), "{e}");
    // A bad template in the directory is reported for the workload that needs it.
    let sum = std::fs::read_to_string(programs().join("embedding-bag-sum.core")).unwrap();
    std::fs::write(programs_dir.join("embedding-bag-sum.core"), sum.replace("{out_end}", "{out_ends}"))
        .unwrap();
    let cfg = experiment(&dir, &[("hand", "mine/")], &[&bag("bag-sum", "")]);
    let e = Experiment::load(&cfg, &Overrides::default()).map(|_| ()).unwrap_err().to_string();
    let file = programs_dir.join("embedding-bag-sum.core").display().to_string();
    assert!(e.contains("system[0].compiler.programs: workload bag-sum: ") && e.contains(&file), "{e}");
    assert!(e.contains("unknown placeholder {out_ends}"), "{e}");
}
