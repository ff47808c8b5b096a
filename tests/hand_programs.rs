//! Hand-written programs (`programs/`, `[system.compiler] programs = ...`): each shipped pair
//! computes its op family's outputs bit for bit on a small DAE chip, and a missing file or a bad
//! template is a config error naming the file and the key.

use compiler::EmbeddingBagInstance;
use dae_sim::config::ConfigError;
use dae_sim::experiment::{Experiment, Overrides, SystemPlan, run_pair};
use std::path::{Path, PathBuf};

/// The repository's `programs/` folder.
fn programs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("programs")
}

/// The repository's `configs/` folder.
fn configs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("configs")
}

/// A fresh, empty directory under the system's temporary directory.
fn temp_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("dae-sim-test-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("temporary directory");
    d
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
        let m = run_pair(&seeds, exp.max_sim_time, plan, spec, &inst, &reference)
            .unwrap_or_else(|e| panic!("{} on {family}: {e}", spec.name));
        assert_eq!(m.verified, Some(Ok(())), "{} on {family}", spec.name);
        assert_eq!(m.lookups, inst.indices.len() as u64, "{} on {family}", spec.name);
    }
    // A template of another family cannot serve a workload: that pair's error says why.
    let (spec, plan) = (&exp.file.workload[0], &exp.systems[1].1);
    let inst = EmbeddingBagInstance::generate(spec, &seeds);
    let e = run_pair(&seeds, exp.max_sim_time, plan, spec, &inst, &inst.reference(spec)).unwrap_err();
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
