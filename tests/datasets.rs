//! The workloads of real shapes and data: MLPerf DLRM-v2's tables (per-table rows and bag
//! sizes), the Cora citation graph, FB15k-237's triples and Criteo's click logs read from
//! `traces/` (and, from `../shared/datasets` when it is there, FB15k-237's named triples and
//! SNAP's email-Enron and gzip-compressed soc-Slashdot0902 graphs); their simulated outputs
//! equal the reference. Meta's locality statistics (`../shared/datasets`, when there) parse,
//! with the figures of the file's text. (Bad data files: `bad_input.rs`.)

#[allow(dead_code)] // this suite needs only some of the shared helpers
mod common;

use common::{configs, dae_sim, run_config, shared_dir, small_experiment, temp_dir};
use compiler::kg_dict::{Dictionary, parse_named_triples};
use dae_sim::experiment::{Experiment, Overrides};
use std::path::{Path, PathBuf};

/// `sub` in the shared datasets folder beside the repository (`../shared/datasets`), or `None`,
/// with a note on stderr, where it is absent (a checkout without it skips these checks).
fn shared(sub: &str) -> Option<PathBuf> {
    let p = shared_dir().map(|s| s.join("datasets").join(sub)).filter(|p| p.exists());
    if p.is_none() {
        eprintln!("skipped: ../shared/datasets/{sub} is absent");
    }
    p
}

/// The rows of `stdout`'s main table naming `workload`.
fn rows_of<'a>(stdout: &'a str, workload: &str) -> Vec<&'a str> {
    stdout
        .lines()
        .filter(|l| {
            let mut f = l.split_whitespace().skip(1);
            f.next() == Some(workload) && f.next().is_some_and(|m| m.starts_with("cycle-") || m == "analytic")
        })
        .collect()
}

/// Runs the small experiment `cfg` (see `common::small_experiment`) with its output in `dir`:
/// each of `workloads` has a row on each of the 3 systems, verified on the 2 simulated ones
/// (the DAE chip and the plain cores).
fn runs_verified(cfg: &Path, dir: &Path, workloads: &[&str]) {
    let o = run_config(cfg, &dir.join("out"));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&o.stderr));
    for name in workloads {
        let rows = rows_of(&stdout, name);
        assert_eq!(rows.len(), 3, "{stdout}");
        assert_eq!(rows.iter().filter(|l| l.ends_with("verified")).count(), 2, "{stdout}");
    }
}

/// The small experiment (see `common::small_experiment`) in `dir` with the shipped workloads
/// `configs/workloads/NAME.toml` added, each at its batch.
fn with_workloads(dir: &Path, workloads: &[(&str, u32)]) -> PathBuf {
    let extra: String = workloads
        .iter()
        .map(|(name, batch)| {
            let wl = configs().join("workloads").join(format!("{name}.toml"));
            format!("\n[[workload]]\ninclude = \"{}\"\nbatch = {batch}\n", wl.display())
        })
        .collect();
    small_experiment(dir, &extra)
}

/// Tables of different rows and bag sizes (mean pooling, a padding index, f16 rows) run verified
/// on the DAE chip, on the plain cores and with tables mapped to cores by cost.
#[test]
fn tables_of_their_own_rows_and_bag_sizes_run_verified() {
    let dir = temp_dir("per-table");
    let wl = dir.join("mixed.toml");
    std::fs::write(
        &wl,
        "name = \"mixed\"\nop = \"embedding_bag\"\npooling = \"mean\"\ntables = 4\nrows = 3000\ndim = 24\n\
         dtype = \"f16\"\nbatch = 6\npadding_idx = 2\n\
         table_indices = [{ rows = 40, bag_size = 3 }, { bag_size = 1 }, { rows = 9, bag_size = 30 }, \
         { rows = 700, bag_size = 5, distribution = \"zipf\", alpha = 1.1 }]\n\
         [indices]\ndistribution = \"uniform\"\n",
    )
    .unwrap();
    let extra = format!(
        "\n[[system]]\nname = \"mapped\"\ninclude = \"{}\"\ncores = 4\ncompiler = {{ partition = \"tables\" }}\n\
         \n[[workload]]\ninclude = \"{}\"\n",
        configs().join("systems/dae-hbm3.toml").display(),
        wl.display()
    );
    let cfg = small_experiment(&dir, &extra);
    let exp = Experiment::load(&cfg, &Overrides::default()).unwrap();
    let spec = exp.file.workload.iter().find(|w| w.name == "mixed").unwrap();
    assert_eq!(exp.instance(spec).indices.len(), 6 * 39);
    let o = run_config(&cfg, &dir.join("out"));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&o.stderr));
    let rows = rows_of(&stdout, "mixed");
    assert_eq!(rows.len(), 4, "{stdout}");
    assert_eq!(rows.iter().filter(|l| l.ends_with("verified")).count(), 3, "{stdout}");
}

/// The shipped DLRM-v2 workload fits both systems' 80 GiB of HBM in f16 (52.3 GB of tables),
/// and in f32 (104.5 GB) it is refused with the memory's capacity, not run.
#[test]
fn mlperf_dlrm_v2_fits_the_hbm_in_f16_and_not_in_f32() {
    let dir = temp_dir("dlrm-v2");
    let wl = configs().join("workloads/dlrm-mlperf-v2.toml");
    let extra = format!("\n[[workload]]\ninclude = \"{}\"\nbatch = 2\n", wl.display());
    let cfg = small_experiment(&dir, &extra);
    let o = run_config(&cfg, &dir.join("out"));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&o.stderr));
    let rows = rows_of(&stdout, "dlrm-mlperf-v2");
    assert_eq!(rows.len(), 3, "{stdout}");
    assert_eq!(rows.iter().filter(|l| l.ends_with("verified")).count(), 2, "{stdout}");
    let f32 = format!("\n[[workload]]\ninclude = \"{}\"\nbatch = 2\ndtype = \"f32\"\n", wl.display());
    let cfg = small_experiment(&dir, &f32);
    let o = run_config(&cfg, &dir.join("out"));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(
        stderr.contains("dlrm-mlperf-v2 on dae") && stderr.contains("more than the memory's"),
        "{stderr}"
    );
    assert!(stderr.contains("dlrm-mlperf-v2 on h100") && !stderr.contains("panicked"), "{stderr}");
}

/// The real graph (Cora) and knowledge graph (FB15k-237) run verified, read through the
/// workload files' relative paths, in an experiment and in `dae-sim compile`.
#[test]
fn cora_and_fb15k237_run_verified() {
    let dir = temp_dir("real-data");
    let cfg = with_workloads(&dir, &[("gnn-cora", 300), ("kg-fb15k237", 12)]);
    let exp = Experiment::load(&cfg, &Overrides::default()).unwrap();
    let cora = exp.file.workload.iter().find(|w| w.name == "gnn-cora").unwrap();
    assert_eq!((cora.rows, cora.batch, cora.bag_size), (2708, 300, 3));
    let kg = exp.file.workload.iter().find(|w| w.name == "kg-fb15k237").unwrap();
    let inst = exp.instance(kg);
    assert_eq!(inst.kg.as_ref().unwrap().heads[..2], [4092, 14132], "the file's first triples");
    runs_verified(&cfg, &dir, &["gnn-cora", "kg-fb15k237"]);
    for name in ["gnn-cora.toml", "kg-fb15k237.toml"] {
        let wl = configs().join("workloads").join(name);
        let o = dae_sim(&["compile", "--workload", wl.to_str().unwrap(), "--emit", "au", "--cores", "4"]);
        assert!(o.status.success(), "{name}: {}", String::from_utf8_lossy(&o.stderr));
    }
}

/// FB15k-237's test split as shipped (names, CRLF) read through its dictionaries gives exactly
/// the 20,466 triples of the committed id file, in the same order, in the library, in
/// `trace info` and in a workload (`kg-fb15k237-names.toml`), which runs verified.
#[test]
fn fb15k237_names_through_the_dictionaries_equal_the_id_file() {
    let Some(d) = shared("fb15k-237") else { return };
    let read = |p: &Path| std::fs::read_to_string(p).unwrap();
    let ents = Dictionary::parse(&read(&d.join("entities.dict")), "entities.dict").unwrap();
    let rels = Dictionary::parse(&read(&d.join("relations.dict")), "relations.dict").unwrap();
    assert_eq!((ents.len(), rels.len()), (14_541, 237));
    let test = read(&d.join("test.txt"));
    assert_eq!(test.matches("\r\n").count(), 20_466, "CRLF line ends");
    let named = parse_named_triples(&test, &ents, &rels).unwrap();
    let ids_file = configs().join("../traces/fb15k-237/test.ids.tsv");
    let ids = compiler::parse_triples(&read(&ids_file), 14_541, 237).unwrap();
    assert_eq!(named.len(), 20_466);
    assert!(named == ids, "the named triples differ from test.ids.tsv");
    let path = |name: &str| d.join(name).to_str().unwrap().to_string();
    let (t, e, r) = (path("test.txt"), path("entities.dict"), path("relations.dict"));
    let o = dae_sim(&["trace", "info", &t, "--entity-dict", &e, "--relation-dict", &r, "--json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        (v["triples"].as_u64(), v["entities_seen"].as_u64(), v["relations_seen"].as_u64()),
        (Some(20_466), Some(10_348), Some(224))
    );
    assert_eq!(
        (v["entity_dict_entries"].as_u64(), v["relation_dict_entries"].as_u64()),
        (Some(14_541), Some(237))
    );
    // The workload reads the same triples as kg-fb15k237.toml and runs verified.
    let dir = temp_dir("fb15k-names");
    let cfg = with_workloads(&dir, &[("kg-fb15k237", 12), ("kg-fb15k237-names", 12)]);
    let exp = Experiment::load(&cfg, &Overrides::default()).unwrap();
    let inst = |name: &str| exp.instance(exp.file.workload.iter().find(|w| w.name == name).unwrap());
    let (a, b) = (inst("kg-fb15k237"), inst("kg-fb15k237-names"));
    let (ka, kb) = (a.kg.as_ref().unwrap(), b.kg.as_ref().unwrap());
    assert_eq!((&ka.heads, &ka.relations), (&kb.heads, &kb.relations));
    let tails = |i: &compiler::EmbeddingBagInstance| -> Vec<u32> {
        i.offsets[..i.offsets.len() - 1].iter().map(|&o| i.indices[o as usize]).collect()
    };
    assert_eq!(tails(&a), tails(&b));
    let o = run_config(&cfg, &dir.join("out"));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&o.stderr));
    let rows = rows_of(&stdout, "kg-fb15k237-names");
    assert_eq!(rows.iter().filter(|l| l.ends_with("verified")).count(), 2, "{stdout}");
}

/// The real DLRM trace (Criteo's first 100 records, 26 hashed tables) runs verified in the
/// shipped experiment's systems, read through the workload's relative path.
#[test]
fn criteo_dlrm_runs_verified() {
    let dir = temp_dir("criteo");
    let extra =
        format!("\n[[workload]]\ninclude = \"{}\"\n", configs().join("workloads/criteo-dlrm.toml").display());
    let cfg = small_experiment(&dir, &extra);
    let exp = Experiment::load(&cfg, &Overrides::default()).unwrap();
    let spec = exp.file.workload.iter().find(|w| w.name == "criteo-dlrm").unwrap();
    let inst = exp.instance(spec);
    assert_eq!((inst.offsets.len(), inst.indices.len(), spec.bag_size), (26 * 100 + 1, 2600, 1));
    runs_verified(&cfg, &dir, &["criteo-dlrm"]);
}

/// `dae-sim trace info --json` on `file` (with `args` before it), parsed.
fn info_json(file: &Path, args: &[&str]) -> serde_json::Value {
    let mut all = vec!["trace", "info", file.to_str().unwrap(), "--json"];
    all.extend_from_slice(args);
    let o = dae_sim(&all);
    assert!(o.status.success(), "{}: {}", file.display(), String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// `trace info` on SNAP's two graphs as shipped in `../shared/datasets` (email-Enron as LF
/// text; soc-Slashdot0902 as SNAP's own `.txt.gz`, CRLF inside, decompressed as it is read)
/// prints the counts the datasets README measured another way, on the files themselves with
/// `wc`, `awk` and `sort -u` (and checked again, with `zcat | tr -d '\r' | awk` counting edge
/// lines, distinct ids, `$1 == $2` lines and per-id maxima, when this test was written):
/// Enron 36,692 vertices, 367,662 edges, all distinct, no self-loops, the largest degree
/// 1,383 both ways (the graph is symmetric); Slashdot 82,168 vertices, 948,464 edges, all
/// distinct, 78,303 self-loops, the largest out-degree 2,511 and in-degree 2,553.
#[test]
fn trace_info_on_the_snap_graphs_gives_the_measured_counts() {
    let (Some(enron), Some(slashdot)) =
        (shared("snap-email-enron/email-Enron.txt"), shared("snap-soc-slashdot0902/soc-Slashdot0902.txt.gz"))
    else {
        return;
    };
    let figures = |v: &serde_json::Value| {
        [
            &v["vertices"],
            &v["edges"],
            &v["distinct_edges"],
            &v["self_loops"],
            &v["out_degree"]["max"],
            &v["in_degree"]["max"],
        ]
        .map(|x| x.as_u64().unwrap_or(u64::MAX))
    };
    let v = info_json(&enron, &["--kind", "snap"]);
    assert_eq!(v["kind"], "graph (snap)");
    assert_eq!(figures(&v), [36_692, 367_662, 367_662, 0, 1_383, 1_383], "{v}");
    // A `.txt.gz`, as a `.txt`, is a SNAP graph by --kind; it is decompressed by its name.
    let v = info_json(&slashdot, &["--kind", "snap"]);
    assert_eq!(figures(&v), [82_168, 948_464, 948_464, 78_303, 2_511, 2_553], "{v}");
    assert_eq!(v["file"].as_str(), slashdot.to_str());
    // The text form says the same.
    let o = dae_sim(&["trace", "info", slashdot.to_str().unwrap(), "--kind", "snap"]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for line in ["vertices: 82168\n", "edges: 948464\n", "self_loops: 78303\n"] {
        assert!(text.contains(line), "{line:?} in {text}");
    }
}

/// The shipped SNAP workloads (`gnn-enron.toml`, `gnn-slashdot.toml`, read from
/// `../shared/datasets` through their relative paths, the Slashdot one gzip-compressed) load
/// with the whole graph and run verified on the DAE chip and on the plain cores, at a batch of
/// 128 destination vertices. The edges into vertices 0..127 were counted with `awk` on the
/// files (`$2 < 128`): 9,867 for Enron; 13,605 for Slashdot, of which 127 are self-loops,
/// which the workload drops (`self_loops = "drop"`: 948,464 - 78,303 = 870,161 edges in all).
#[test]
fn the_snap_graph_workloads_run_verified() {
    if shared("snap-email-enron").is_none() || shared("snap-soc-slashdot0902").is_none() {
        return;
    }
    let dir = temp_dir("snap-graphs");
    let cfg = with_workloads(&dir, &[("gnn-enron", 128), ("gnn-slashdot", 128)]);
    let exp = Experiment::load(&cfg, &Overrides::default()).unwrap();
    for (name, vertices, edges, batch_edges) in
        [("gnn-enron", 36_692, 367_662, 9_867), ("gnn-slashdot", 82_168, 870_161, 13_478)]
    {
        let spec = exp.file.workload.iter().find(|w| w.name == name).unwrap();
        let g = spec.graph.as_ref().unwrap();
        assert_eq!(
            (g.vertices(), g.edges(), spec.rows, spec.batch),
            (vertices, edges, vertices, 128),
            "{name}"
        );
        let inst = exp.instance(spec);
        assert_eq!((inst.offsets.len(), inst.indices.len()), (129, batch_edges), "{name}");
    }
    runs_verified(&cfg, &dir, &["gnn-enron", "gnn-slashdot"]);
}

/// Meta's two `locality_stats.txt` files parse: 17 blocks in 2021 and 16 in 2022, with the
/// figures of the text; `trace locality` prints them.
#[test]
fn meta_locality_stats_parse() {
    let Some(dir) = shared("dlrm-locality-stats") else { return };
    let y2021 = dae_sim::locality::read(&dir.join("2021/locality_stats.txt")).unwrap();
    let y2022 = dae_sim::locality::read(&dir.join("2022/locality_stats.txt")).unwrap();
    assert_eq!((y2021.len(), y2022.len()), (17, 16));
    // 2021, the first block (lines 1-45): fbgemm_t856_bs65536.pt.
    let b = &y2021[0];
    assert_eq!(
        (b.name.as_str(), b.line, b.batches, b.batch_size, b.tables),
        ("fbgemm_t856_bs65536.pt", 1, 1, 65536, Some(856))
    );
    assert_eq!((b.indices, b.unique_rows, b.avg_reuse), (887_017_990, 128_435_723, 6.9));
    assert_eq!(b.bins.len(), 17);
    assert_eq!((b.bins[0].label(), b.bins[0].rows, b.bins[0].lookups), ("1".to_string(), 0.473, 0.069));
    assert_eq!((b.bins[2].label(), b.bins[2].rows, b.bins[2].lookups), ("3-4".to_string(), 0.139, 0.068));
    assert_eq!((b.bins[16].label(), b.bins[16].hi, b.bins[16].lookups), ("32769+".to_string(), None, 0.019));
    // 2021 block 1 (line 47): fbgemm_t856_bs65536_0.pt.
    assert_eq!(
        (y2021[1].name.as_str(), y2021[1].line, y2021[1].indices),
        ("fbgemm_t856_bs65536_0.pt", 47, 468_084_223)
    );
    // 2022, the last block (line 691): fbgemm_t788_bs131072_15.pt, 1,405,354,672 indices.
    let b = &y2022[15];
    assert_eq!(
        (b.name.as_str(), b.line, b.batch_size, b.tables),
        ("fbgemm_t788_bs131072_15.pt", 691, 131072, Some(788))
    );
    assert_eq!((b.indices, b.unique_rows, b.avg_reuse), (1_405_354_672, 110_263_419, 12.7));
    assert_eq!(y2022[0].bins[0].rows, 0.342);
    assert_eq!(y2022[0].bins[16].lookups, 0.076);
    // Every block's shares add up to 1 within the file's rounding.
    for b in y2021.iter().chain(&y2022) {
        let (r, l): (f64, f64) =
            (b.bins.iter().map(|x| x.rows).sum(), b.bins.iter().map(|x| x.lookups).sum());
        assert!((r - 1.0).abs() < 0.01 && (l - 1.0).abs() < 0.01, "{}: {r} {l}", b.name);
    }
    let f = dir.join("2022/locality_stats.txt");
    let o = dae_sim(&["trace", "locality", f.to_str().unwrap(), "--block", "0"]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        text.contains("16 blocks")
            && text.contains("lookups 1405163864, unique rows 110259238, unique/lookups 0.0785")
            && text.contains("32769+        0.000    0.076"),
        "{text}"
    );
}
