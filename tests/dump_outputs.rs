//! `--dump-outputs` and `--dump-inputs`: the dumped outputs equal sum pooling recomputed from the
//! dumped inputs alone, read back with a `.npy` parser written here (not the simulator's writer).

#[allow(dead_code)] // this suite needs only some of the shared helpers
mod common;

use common::{dae_sim, small_experiment, temp_dir};
use compiler::EmbeddingBagInstance;
use dae_sim::experiment::{Experiment, Overrides};
use std::path::Path;

/// A `.npy` file read back: dtype, shape and data bytes.
struct Npy {
    descr: String,
    shape: Vec<usize>,
    data: Vec<u8>,
}

impl Npy {
    fn read(path: &Path) -> Npy {
        let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(&bytes[..8], b"\x93NUMPY\x01\x00", "{}: magic and version 1.0", path.display());
        let len = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
        assert_eq!((10 + len) % 64, 0, "{}: data aligned to 64 bytes", path.display());
        let header = std::str::from_utf8(&bytes[10..10 + len]).unwrap();
        assert!(header.ends_with('\n') && header.contains("'fortran_order': False"), "{header}");
        let field = |key: &str| header.split(&format!("'{key}': ")).nth(1).unwrap().to_string();
        let descr = field("descr").trim_start_matches('\'').split('\'').next().unwrap().to_string();
        let shape = field("shape");
        let shape = shape.trim_start_matches('(').split(')').next().unwrap();
        let shape: Vec<usize> =
            shape.split(',').map(str::trim).filter(|s| !s.is_empty()).map(|s| s.parse().unwrap()).collect();
        let data = bytes[10 + len..].to_vec();
        let elem = if descr == "<i8" { 8 } else { 4 };
        assert_eq!(data.len(), shape.iter().product::<usize>() * elem, "{}: data size", path.display());
        Npy { descr, shape, data }
    }

    fn f32s(&self) -> Vec<f32> {
        assert_eq!(self.descr, "<f4");
        self.data.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect()
    }

    fn i64s(&self) -> Vec<i64> {
        assert_eq!(self.descr, "<i8");
        self.data.chunks_exact(8).map(|c| i64::from_le_bytes(c.try_into().unwrap())).collect()
    }
}

/// `output[g] = sum over j in offsets[g]..offsets[g+1] of table_rows[k]`, `rows[k]` being
/// `(bag_tables[g], indices[j])`: PyTorch's `embedding_bag(mode="sum")` per table.
fn sum_pooling(inputs: &Path) -> (Vec<usize>, Vec<f32>) {
    let offsets = Npy::read(&inputs.join("offsets.npy")).i64s();
    let indices = Npy::read(&inputs.join("indices.npy")).i64s();
    let tables = Npy::read(&inputs.join("bag_tables.npy")).i64s();
    let rows = Npy::read(&inputs.join("rows.npy"));
    let values = Npy::read(&inputs.join("table_rows.npy"));
    assert_eq!(rows.shape.len(), 2);
    assert_eq!(rows.shape[1], 2);
    assert_eq!(values.shape.len(), 2);
    assert_eq!(values.shape[0], rows.shape[0]);
    let (rows, dim, values) = (rows.i64s(), values.shape[1], values.f32s());
    let rows: Vec<(i64, i64)> = rows.chunks_exact(2).map(|p| (p[0], p[1])).collect();
    assert!(rows.windows(2).all(|w| w[0] < w[1]), "rows sorted and unique");
    let bags = offsets.len() - 1;
    assert_eq!(tables.len(), bags);
    assert_eq!(offsets[0], 0);
    assert_eq!(offsets[bags] as usize, indices.len());
    let mut out = vec![0.0f32; bags * dim];
    let mut touched = vec![false; rows.len()];
    for g in 0..bags {
        for &row in &indices[offsets[g] as usize..offsets[g + 1] as usize] {
            let k = rows.binary_search(&(tables[g], row)).expect("every looked-up row is dumped");
            touched[k] = true;
            for (o, v) in out[g * dim..(g + 1) * dim].iter_mut().zip(&values[k * dim..(k + 1) * dim]) {
                *o += v;
            }
        }
    }
    assert!(touched.iter().all(|&t| t), "only looked-up rows are dumped");
    (vec![bags, dim], out)
}

#[test]
fn dumped_outputs_equal_sum_pooling_of_the_dumped_inputs() {
    let dir = temp_dir("dump");
    // The small embedding bag, plus a small graph: one table, bags of different sizes.
    let extra = "\n[[workload]]\nname = \"gnn-tiny\"\nop = \"gnn_aggregate\"\ndim = 8\ndtype = \"f32\"\n\
                 batch = 60\n[workload.graph]\ngenerator = \"rmat\"\nscale = 8\nedge_factor = 4\n";
    let cfg = small_experiment(&dir, extra);
    let (out, npy) = (dir.join("out"), dir.join("npy"));
    let (cfg_s, out_s, npy_s) = (cfg.to_str().unwrap(), out.to_str().unwrap(), npy.to_str().unwrap());
    let dump = |extra: &[&str]| {
        let mut args = vec!["--config", cfg_s, "--out", out_s, "--dump-outputs", npy_s];
        args.extend_from_slice(extra);
        dae_sim(&args)
    };
    let o = dump(&["--dump-inputs"]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    assert!(out.join("results.json").is_file());
    assert!(stderr.contains("dumped 14 .npy files under"), "{stderr}");

    let exp = Experiment::load(&cfg, &Overrides::default()).unwrap();
    for spec in &exp.file.workload {
        let wl = npy.join(&spec.name);
        let (shape, expect) = sum_pooling(&wl.join("inputs"));
        assert_eq!(shape, [spec.bags() as usize, spec.dim as usize], "{}", spec.name);
        assert!(expect.iter().any(|&v| v != 0.0), "{}: outputs of zeros would prove nothing", spec.name);
        // The dumped inputs are the experiment's: the library's reference agrees.
        let inst = EmbeddingBagInstance::generate(spec, &exp.seeds());
        assert_eq!(inst.reference(spec), expect, "{}", spec.name);
        for system in ["dae", "cpu"] {
            let got = Npy::read(&wl.join(system).join("output.npy"));
            assert_eq!(got.shape, shape, "{}/{system}", spec.name);
            let got = got.f32s();
            let same = got.iter().zip(&expect).all(|(a, b)| a.to_bits() == b.to_bits());
            assert!(same, "{}/{system}: output.npy differs from the recomputation", spec.name);
        }
        assert!(!wl.join("h100").exists(), "the analytic GPU model computes no outputs");
    }
    // Again into the same folder with every pair stopped by the time limit: no output.npy of
    // the first run may stay beside this run's inputs.
    let text = std::fs::read_to_string(&cfg).unwrap().replacen(
        "seed = 42\n",
        "seed = 42\nmax_sim_time = \"1ns\"\n",
        1,
    );
    std::fs::write(&cfg, text).unwrap();
    let o = dump(&[]);
    assert!(!o.status.success(), "every pair stopped");
    for spec in &exp.file.workload {
        for system in ["dae", "cpu"] {
            let stale = npy.join(&spec.name).join(system).join("output.npy");
            assert!(!stale.exists(), "{} stayed from the earlier run", stale.display());
        }
    }
}

#[test]
fn an_unwritable_dump_dir_is_an_error_naming_it_and_results_are_kept() {
    let dir = temp_dir("dump-errors");
    let cfg = small_experiment(&dir, "");
    let cfg = cfg.to_str().unwrap();

    // A file where the folder should be: refused before anything runs.
    let file = dir.join("a-file");
    std::fs::write(&file, "").unwrap();
    let out = dir.join("out1");
    let o =
        dae_sim(&["--config", cfg, "--out", out.to_str().unwrap(), "--dump-outputs", file.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(&file.display().to_string()) && !stderr.contains("panicked"), "{stderr}");

    // A workload's folder that cannot be made: found after the runs, whose results are kept.
    let npy = dir.join("npy");
    std::fs::create_dir_all(&npy).unwrap();
    std::fs::write(npy.join("emb-small"), "").unwrap();
    let out = dir.join("out2");
    let o = dae_sim(&[
        "run",
        "--config",
        cfg,
        "--out",
        out.to_str().unwrap(),
        "--quiet",
        "--dump-outputs",
        npy.to_str().unwrap(),
        "--dump-inputs",
    ]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    let blocked = npy.join("emb-small").join("inputs");
    assert!(stderr.contains(&format!("creating directory {}", blocked.display())), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    assert_eq!(json["runs"].as_array().unwrap().len(), 3, "results written before the dump");
}

#[test]
fn dump_inputs_needs_dump_outputs_and_a_system_named_inputs_is_refused() {
    let dir = temp_dir("dump-flags");
    let cfg = small_experiment(&dir, "");
    let o = dae_sim(&["--config", cfg.to_str().unwrap(), "--dump-inputs"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--dump-outputs"));

    // A simulated system named like the inputs' folder is refused before anything runs.
    let extra = format!(
        "\n[[system]]\nname = \"inputs\"\ninclude = \"{}\"\ncores = 1\n",
        common::configs().join("systems/dae-hbm3.toml").display()
    );
    let cfg = small_experiment(&dir, &extra);
    let (out, npy) = (dir.join("out"), dir.join("npy"));
    let args = ["--config", cfg.to_str().unwrap(), "--out", out.to_str().unwrap()];
    let o = dae_sim(&[&args[..], &["--dump-outputs", npy.to_str().unwrap(), "--dump-inputs"]].concat());
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("cannot dump system \"inputs\""), "{stderr}");
    assert!(!out.exists(), "nothing ran");
}

/// What an op reads besides its bags is dumped too: a knowledge-graph triple's heads and
/// relations (and their rows, from the relation table 1), and the scores' shape is
/// `[triples, 1 + negatives]`.
#[test]
fn knowledge_graph_inputs_and_score_shapes_are_dumped() {
    let dir = temp_dir("dump-kg");
    let extra = "\n[[workload]]\nname = \"kg\"\nop = \"kg_score\"\nmodel = \"transe\"\nrows = 40\nrelations = 3\n\
                 negatives = 2\ndim = 8\ndtype = \"f32\"\nbatch = 5\n[workload.indices]\ndistribution = \"uniform\"\n";
    let cfg = small_experiment(&dir, extra);
    let npy = dir.join("npy");
    let o = dae_sim(&[
        "--config",
        cfg.to_str().unwrap(),
        "--out",
        dir.join("out").to_str().unwrap(),
        "--dump-outputs",
        npy.to_str().unwrap(),
        "--dump-inputs",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let inputs = npy.join("kg/inputs");
    let heads = Npy::read(&inputs.join("heads.npy"));
    assert_eq!((heads.shape.clone(), heads.i64s().len()), (vec![5], 5));
    assert_eq!(Npy::read(&inputs.join("relations.npy")).shape, vec![5]);
    let rows = Npy::read(&inputs.join("rows.npy"));
    assert_eq!(rows.shape[1], 2);
    let tables: Vec<i64> = rows.i64s().chunks(2).map(|pair| pair[0]).collect();
    assert!(tables.contains(&0) && tables.contains(&1), "entity and relation rows: {tables:?}");
    assert_eq!(Npy::read(&npy.join("kg/dae/output.npy")).shape, vec![5, 3]);
}
