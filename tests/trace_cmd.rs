//! `dae-sim trace gen` and `dae-sim trace info`: deterministic, shaped as asked (skew, dedup,
//! sorted bags, inter-batch reuse), and info's figures equal ones computed by hand; `trace fit`'s
//! fitted trace is the one `trace gen` writes. (Bad options and files: `bad_input.rs`.)

#[allow(dead_code)] // this suite needs only some of the shared helpers
mod common;

use common::{dae_sim, temp_dir};
use compiler::trace::{Header, IndexDtype, TraceReader, TraceWriter};
use std::collections::{HashMap, HashSet};
use std::path::Path;

/// Runs `dae-sim trace ARGS`, which must succeed.
fn trace(args: &[&str]) -> String {
    let mut all = vec!["trace"];
    all.extend_from_slice(args);
    let o = dae_sim(&all);
    assert!(o.status.success(), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Every bag of a `.daeidx` file, per batch: `bags[batch][table]` is a list of bags.
fn bags(path: &Path) -> Vec<Vec<Vec<Vec<u64>>>> {
    let mut r = TraceReader::open(path).unwrap();
    let h = *r.header();
    let mut out = vec![vec![Vec::new(); h.tables as usize]; h.batches as usize];
    let mut bag = Vec::new();
    while let Some((b, t)) = r.next_section().unwrap() {
        while r.next_bag(&mut bag).unwrap().is_some() {
            out[b as usize][t as usize].push(bag.clone());
        }
    }
    out
}

fn generate(dir: &Path, name: &str, extra: &[&str]) -> std::path::PathBuf {
    let out = dir.join(name);
    let mut args = vec!["gen", "--out", out.to_str().unwrap()];
    args.extend_from_slice(extra);
    trace(&args);
    out
}

#[test]
fn gen_is_deterministic_for_a_seed() {
    let dir = temp_dir("trace-gen-seed");
    let opts = ["--tables", "3", "--rows", "5000", "--batch", "64", "--bag-size", "10", "--batches", "2"];
    let a = generate(&dir, "a.daeidx", &[&opts[..], &["--seed", "5", "--distribution", "zipf"]].concat());
    let b = generate(&dir, "b.daeidx", &[&opts[..], &["--seed", "5", "--distribution", "zipf"]].concat());
    let c = generate(&dir, "c.daeidx", &[&opts[..], &["--seed", "6", "--distribution", "zipf"]].concat());
    let (a, b, c) = (std::fs::read(a).unwrap(), std::fs::read(b).unwrap(), std::fs::read(c).unwrap());
    assert_eq!(a, b);
    assert_ne!(a, c);
}

/// The share of lookups that go to the most accessed 1% of `rows` rows.
fn top_percent_share(path: &Path, rows: usize) -> f64 {
    let mut counts: HashMap<u64, u64> = HashMap::new();
    let mut total = 0;
    for bag in bags(path).concat().concat() {
        for i in bag {
            *counts.entry(i).or_insert(0) += 1;
            total += 1;
        }
    }
    let mut c: Vec<u64> = counts.into_values().collect();
    c.sort_unstable_by(|a, b| b.cmp(a));
    c.iter().take(rows / 100).sum::<u64>() as f64 / total as f64
}

#[test]
fn zipf_is_skewed_and_uniform_is_not() {
    let dir = temp_dir("trace-gen-skew");
    // 20 lookups per row on average: uniform counts stay near their mean.
    let opts = ["--rows", "1000", "--batch", "1000", "--bag-size", "20"];
    let z = generate(&dir, "z.daeidx", &[&opts[..], &["--distribution", "zipf", "--alpha", "1.05"]].concat());
    let u = generate(&dir, "u.daeidx", &opts);
    let (zs, us) = (top_percent_share(&z, 1000), top_percent_share(&u, 1000));
    assert!(zs > 0.3, "zipf: the top 1% of rows take {zs:.3} of the lookups");
    assert!(us < 0.02, "uniform: the top 1% of rows take {us:.3} of the lookups");
}

#[test]
fn dedup_and_sorted_bags() {
    let dir = temp_dir("trace-gen-bags");
    let opts = ["--rows", "50", "--batch", "200", "--bag-size", "30", "--tables", "2"];
    let d = generate(&dir, "d.daeidx", &[&opts[..], &["--dedup"]].concat());
    let all = bags(&d).concat().concat();
    assert!(all.iter().all(|b| b.iter().collect::<HashSet<_>>().len() == b.len()), "repeats in a bag");
    assert!(all.iter().any(|b| b.len() < 30), "30 draws of 50 rows repeat some");
    assert!(all.iter().any(|b| !b.is_sorted()), "unsorted without --sorted");
    let s = generate(&dir, "s.daeidx", &[&opts[..], &["--sorted"]].concat());
    let all = bags(&s).concat().concat();
    assert!(all.iter().all(|b| b.is_sorted() && b.len() == 30));
    assert!(all.iter().any(|b| b.windows(2).any(|w| w[0] == w[1])), "repeats kept without --dedup");
}

#[test]
fn reuse_draws_that_share_of_a_batch_from_the_previous_one() {
    let dir = temp_dir("trace-gen-reuse");
    let opts = ["--rows", "100000000", "--batch", "500", "--bag-size", "20", "--batches", "3"];
    for (reuse, lo, hi) in [("0.5", 0.46, 0.54), ("0", 0.0, 0.001)] {
        let p = generate(&dir, "r.daeidx", &[&opts[..], &["--reuse", reuse]].concat());
        let b = bags(&p);
        for k in 1..3 {
            let before: HashSet<u64> = b[k - 1][0].concat().into_iter().collect();
            let now = b[k][0].concat();
            let hits = now.iter().filter(|i| before.contains(i)).count() as f64 / now.len() as f64;
            assert!(
                (lo..=hi).contains(&hits),
                "--reuse {reuse}: batch {k}: {hits:.3} of the lookups hit batch {}",
                k - 1
            );
        }
    }
}

#[test]
fn info_figures_equal_those_computed_by_hand() {
    let dir = temp_dir("trace-info");
    let p = dir.join("hand.daeidx");
    // Table 0: bags [1, 1, 2] and [3]; table 1: bags [5] and [5, 5, 5, 6].
    let mut w = TraceWriter::create(&p, Header::new(IndexDtype::U64, 2, 1, 2, 10)).unwrap();
    w.write_section(&[0, 3, 4], &[1, 1, 2, 3]).unwrap();
    w.write_section(&[0, 1, 5], &[5, 5, 5, 5, 6]).unwrap();
    w.finish().unwrap();
    let out = trace(&["info", p.to_str().unwrap(), "--json", "--dim", "16", "--dtype", "f16"]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!((v["tables"].as_u64(), v["batch"].as_u64(), v["bags"].as_u64()), (Some(2), Some(2), Some(4)));
    assert_eq!(v["lookups"], 9);
    assert_eq!(v["lookups_per_bag"]["mean"], 2.25);
    assert_eq!(
        (v["lookups_per_bag"]["min"].as_u64(), v["lookups_per_bag"]["max"].as_u64()),
        (Some(1), Some(4))
    );
    // Unique rows: {1, 2, 3} and {5, 6}.
    assert_eq!(v["per_table"][0]["unique_rows"], 3);
    assert_eq!(v["per_table"][0]["unique_fraction"], 0.75);
    assert_eq!(v["per_table"][1]["unique_rows"], 2);
    assert_eq!(v["per_table"][1]["unique_fraction"], 0.4);
    assert_eq!(v["unique_rows"], 5);
    assert_eq!(v["unique_fraction"], 5.0 / 9.0);
    // Accessed once: rows 2, 3, 6; twice: row 1; four times: row 5.
    let hist: Vec<(String, u64, u64)> = v["reuse_histogram"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            (
                b["accesses"].as_str().unwrap().to_string(),
                b["rows"].as_u64().unwrap(),
                b["lookups"].as_u64().unwrap(),
            )
        })
        .collect();
    // Meta's bins: 1, 2, 3-4, ...
    assert_eq!(hist, [("1".to_string(), 3, 3), ("2".to_string(), 1, 2), ("3-4".to_string(), 1, 4)]);
    // 5 rows of 16 f16 values.
    assert_eq!(v["working_set"]["bytes"], 5 * 32);
    let text = trace(&["info", p.to_str().unwrap()]);
    assert!(text.contains("5 unique rows x 256 B = 1280 B") && text.contains("the defaults"), "{text}");
}

#[test]
fn npy_output_reads_back_with_the_same_figures() {
    let dir = temp_dir("trace-npy");
    let opts = ["--tables", "2", "--rows", "300", "--batch", "40", "--bag-size", "6", "--seed", "3"];
    let d = generate(&dir, "t.daeidx", &opts);
    generate(&dir, "t.npy", &[&opts[..], &["--format", "npy"]].concat());
    let (o, i) = (dir.join("t.offsets.npy"), dir.join("t.indices.npy"));
    let a: serde_json::Value =
        serde_json::from_str(&trace(&["info", d.to_str().unwrap(), "--json"])).unwrap();
    let b: serde_json::Value = serde_json::from_str(&trace(&[
        "info",
        "--offsets",
        o.to_str().unwrap(),
        "--indices",
        i.to_str().unwrap(),
        "--tables",
        "2",
        "--json",
    ]))
    .unwrap();
    for k in ["tables", "batch", "lookups", "unique_rows", "per_table", "reuse_histogram", "working_set"] {
        assert_eq!(a[k], b[k], "{k}");
    }
    assert_eq!(dae_sim::npy_read::read_ints(&o).unwrap().len(), 81);
}

#[test]
fn rmat_and_kg_files_read_back() {
    let dir = temp_dir("trace-graphs");
    let g = generate(&dir, "g.txt", &["--kind", "rmat", "--scale", "8", "--edge-factor", "4"]);
    let v: serde_json::Value =
        serde_json::from_str(&trace(&["info", "--kind", "snap", g.to_str().unwrap(), "--json"])).unwrap();
    assert_eq!(v["edges"], 1024);
    assert!(v["vertices"].as_u64().unwrap() <= 256);
    assert!(v["in_degree"]["max"].as_u64().unwrap() > 16, "R-MAT's skew: {v}");
    let k = generate(
        &dir,
        "k.tsv",
        &["--kind", "kg", "--entities", "100", "--relations", "5", "--triples", "500"],
    );
    let v: serde_json::Value =
        serde_json::from_str(&trace(&["info", "--kind", "kg", k.to_str().unwrap(), "--json"])).unwrap();
    assert_eq!(v["triples"], 500);
    assert!(v["entity_ids"].as_u64().unwrap() <= 100 && v["relation_ids"].as_u64().unwrap() <= 5, "{v}");
}

#[test]
fn info_on_the_shipped_datasets_matches_their_readmes() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("traces");
    let v: serde_json::Value =
        serde_json::from_str(&trace(&["info", root.join("cora/cora.cites").to_str().unwrap(), "--json"]))
            .unwrap();
    // traces/cora/README.md and ../shared/datasets/README.md: 2,708 papers, 5,429 citations,
    // at most 166 citations of one paper.
    assert_eq!((v["vertices"].as_u64(), v["edges"].as_u64()), (Some(2708), Some(5429)));
    assert_eq!(v["in_degree"]["max"], 166);
    let f = root.join("fb15k-237/test.ids.tsv");
    let v: serde_json::Value =
        serde_json::from_str(&trace(&["info", "--kind", "kg", f.to_str().unwrap(), "--json"])).unwrap();
    assert_eq!(
        (v["triples"].as_u64(), v["entity_ids"].as_u64(), v["relation_ids"].as_u64()),
        (Some(20466), Some(14541), Some(237))
    );
    let ex = root.join("example.daeidx");
    let v: serde_json::Value =
        serde_json::from_str(&trace(&["info", ex.to_str().unwrap(), "--json"])).unwrap();
    assert_eq!(v["lookups"], 512);
}

/// A graph or triples file compressed with gzip (`NAME.gz`) gives the figures of the file
/// itself: Cora's `.cites.gz` is still told a Cora file by the name before `.gz`, and the
/// triples read the same; a `.daeidx.gz` is refused with advice, not misread.
#[test]
fn info_reads_gz_files_as_the_files_they_compress() {
    use std::io::Write;
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("traces");
    let dir = temp_dir("info-gz");
    let gz = |from: &Path, name: &str| {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        e.write_all(&std::fs::read(from).unwrap()).unwrap();
        let p = dir.join(name);
        std::fs::write(&p, e.finish().unwrap()).unwrap();
        p
    };
    let json = |args: &[&str]| -> serde_json::Value {
        let mut v: serde_json::Value = serde_json::from_str(&trace(args)).unwrap();
        v["file"] = serde_json::Value::Null;
        v
    };
    for (plain, name, kind) in [
        (root.join("cora/cora.cites"), "cora.cites.gz", None),
        (root.join("fb15k-237/test.ids.tsv"), "test.ids.tsv.gz", Some("kg")),
    ] {
        let packed = gz(&plain, name);
        let args = |f: &Path| {
            let mut a = vec!["info".to_string(), f.display().to_string(), "--json".to_string()];
            a.extend(kind.map(|k| ["--kind".to_string(), k.to_string()]).into_iter().flatten());
            a
        };
        let (a, b) = (args(&plain), args(&packed));
        let ra: Vec<&str> = a.iter().map(String::as_str).collect();
        let rb: Vec<&str> = b.iter().map(String::as_str).collect();
        assert_eq!(json(&ra), json(&rb), "{name}");
    }
    let ex = gz(&root.join("example.daeidx"), "example.daeidx.gz");
    let o = dae_sim(&["trace", "info", ex.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && err.contains("decompress it first"), "{err}");
}

/// A valid file of no batches that claims 2^32 - 1 tables gives its figures, not an allocation.
#[test]
fn a_file_of_no_batches_claiming_many_tables_gives_figures() {
    let dir = temp_dir("trace-many-tables");
    let out = dir.join("x.daeidx");
    TraceWriter::create(&out, Header::new(IndexDtype::U32, u32::MAX, 0, 5, 10)).unwrap().finish().unwrap();
    let v: serde_json::Value =
        serde_json::from_str(&trace(&["info", out.to_str().unwrap(), "--json"])).unwrap();
    assert_eq!((v["tables"].as_u64(), v["lookups"].as_u64()), (Some(u64::from(u32::MAX)), Some(0)));
}

/// `trace info` on triples written with names reads them through `--entity-dict` and
/// `--relation-dict` (CRLF or LF), and a name a dictionary lacks is an error naming the file
/// and the line.
#[test]
fn kg_info_reads_names_through_the_dictionaries() {
    let dir = temp_dir("trace-kg-names");
    let (t, e, r) = (dir.join("t.txt"), dir.join("e.dict"), dir.join("r.dict"));
    std::fs::write(&e, "0\t/m/a\n2\t/m/c\n1\t/m/b\n").unwrap();
    std::fs::write(&r, "0\t/r/x\n").unwrap();
    std::fs::write(&t, "/m/c\t/r/x\t/m/a\r\n/m/c\t/r/x\t/m/c\r\n").unwrap();
    let args = [
        "info",
        t.to_str().unwrap(),
        "--entity-dict",
        e.to_str().unwrap(),
        "--relation-dict",
        r.to_str().unwrap(),
    ];
    let v: serde_json::Value = serde_json::from_str(&trace(&[&args[..], &["--json"]].concat())).unwrap();
    assert_eq!(
        (v["triples"].as_u64(), v["entities_seen"].as_u64(), v["entity_ids"].as_u64()),
        (Some(2), Some(2), Some(3))
    );
    assert_eq!((v["entity_dict_entries"].as_u64(), v["relation_dict_entries"].as_u64()), (Some(3), Some(1)));
    std::fs::write(&t, "/m/c\t/r/x\t/m/a\r\n/m/z\t/r/x\t/m/c\r\n").unwrap();
    let o = dae_sim(&[&["trace"], &args[..]].concat());
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains(&format!("t.txt:2: head \"/m/z\" is not in {}", e.display())), "{err}");
}

/// A Criteo record: `label`, 13 integer fields (`5`) and the categorical fields `cats` (fewer
/// than 26: the line is trimmed there), tab-separated.
fn criteo_line(label: u8, cats: &[&str]) -> String {
    format!("{label}{}\t{}", "\t5".repeat(13), cats.join("\t"))
}

/// `trace criteo` maps each categorical value to row `value mod rows` of its table, one bag per
/// record and table; missing values (empty or trimmed) become row 0 or empty bags; a partial
/// last batch is dropped; a bad value is an error naming the file, the line and the column.
#[test]
fn criteo_records_become_rows_by_the_hashing_trick() {
    let dir = temp_dir("trace-criteo");
    let full: Vec<String> = (0..26).map(|c| format!("{:08x}", 0x0100_0000 * c + 1000 + c)).collect();
    let full: Vec<&str> = full.iter().map(String::as_str).collect();
    let mut missing_c2 = full.clone();
    missing_c2[1] = "";
    let input = dir.join("train.txt");
    // Record 1 full (LF), 2 trimmed after C23 (CRLF), a blank line, 3 with C2 empty, 4 and 5
    // full (5 without a final newline: it is dropped with its partial batch).
    let text = format!(
        "{}\n{}\r\n\n{}\n{}\n{}",
        criteo_line(1, &full),
        criteo_line(0, &full[..23]),
        criteo_line(0, &missing_c2),
        criteo_line(0, &full),
        criteo_line(1, &full)
    );
    std::fs::write(&input, &text).unwrap();
    let out = dir.join("c.daeidx");
    let run = |extra: &[&str]| {
        let mut args =
            vec!["criteo", input.to_str().unwrap(), "--out", out.to_str().unwrap(), "--rows", "1000"];
        args.extend_from_slice(extra);
        trace(&args)
    };
    let said = run(&["--batch", "2"]);
    assert!(said.contains("4 records as 2 batches of 2 bags x 26 tables"), "{said}");
    assert!(said.contains("1 trailing records (a partial batch) dropped; 4 missing values"), "{said}");
    let h = *TraceReader::open(&out).unwrap().header();
    assert_eq!((h.tables, h.batches, h.batch, h.rows, h.lookups), (26, 2, 2, 1000, 104));
    let b = bags(&out);
    // Value 0x0100_0000 c + 1000 + c: row (16,777,216 c + 1000 + c) mod 1000 = (216 c + c) mod 1000.
    let row = |c: u64| vec![(0x0100_0000 * c + 1000 + c) % 1000];
    for c in 0..26u64 {
        let t = c as usize;
        assert_eq!(b[0][t][0], row(c), "record 1, C{}", c + 1);
        let trimmed = if c >= 23 { vec![0] } else { row(c) };
        assert_eq!(b[0][t][1], trimmed, "record 2, C{}", c + 1);
        assert_eq!(b[1][t][0], if c == 1 { vec![0] } else { row(c) }, "record 3, C{}", c + 1);
        assert_eq!(b[1][t][1], row(c), "record 4, C{}", c + 1);
    }
    // Dropped: the missing values' bags are empty.
    run(&["--batch", "4", "--missing", "drop"]);
    let b = bags(&out);
    assert_eq!(b.len(), 1);
    assert_eq!(b[0][1][2], Vec::<u64>::new(), "C2 of record 3");
    assert_eq!(b[0][24][1], Vec::<u64>::new(), "C25 of record 2, trimmed");
    assert_eq!(b[0][24][0], row(24));
    // --records: only the first ones.
    let said = run(&["--batch", "1", "--records", "3"]);
    assert!(said.contains("3 records as 3 batches of 1 bags"), "{said}");
    // Bad input: the file, the line and the column.
    let mut bad = full.clone();
    bad[4] = "12x45678";
    std::fs::write(&input, format!("{}\n\n{}\n", criteo_line(0, &full), criteo_line(0, &bad))).unwrap();
    for (args, want) in [
        (
            vec!["--rows", "10", "--batch", "1"],
            "train.txt:3: column C5 (field 19): \"12x45678\" is not a categorical value (1 to 8 hex digits)",
        ),
        (vec!["--rows", "10", "--batch", "3", "--records", "1"], "1 records make no full batch of --batch 3"),
        (vec!["--rows", "0"], "--rows and --batch must be at least 1"),
    ] {
        let mut all = vec!["trace", "criteo", input.to_str().unwrap(), "--out", out.to_str().unwrap()];
        all.extend(args);
        let o = dae_sim(&all);
        let err = String::from_utf8_lossy(&o.stderr).to_string();
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains(want) && !err.contains("panicked"), "{want}: {err}");
    }
    // `--out` naming the click log itself is refused before anything is written (it once
    // truncated the log, then failed reading it a second time).
    let before = std::fs::read(&input).unwrap();
    let o = dae_sim(&[
        "trace",
        "criteo",
        input.to_str().unwrap(),
        "--out",
        input.to_str().unwrap(),
        "--rows",
        "10",
    ]);
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("is the input file itself"), "{err}");
    assert_eq!(std::fs::read(&input).unwrap(), before);
}

/// The committed Criteo slice: `trace info` counts 1,000 records x 26 tables of one lookup, and
/// as many unique rows as distinct (column, value) pairs in the raw records (7,639, counted
/// with `awk` in ../shared/datasets/README.md), plus row 0 of the 12 columns with missing
/// values, less one hash collision: C13's `5a777c73` and `4e8bba73` are both 7,780,083 mod
/// 10,000,000 (traces/criteo/README.md). With the shared raw file, the conversion is redone
/// (the same bytes) and the (column, row) pairs are counted from its text.
#[test]
fn criteo_slice_info_matches_the_raw_records() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let slice = root.join("traces/criteo/train-1000.daeidx");
    let v: serde_json::Value =
        serde_json::from_str(&trace(&["info", slice.to_str().unwrap(), "--json"])).unwrap();
    assert_eq!(
        (v["tables"].as_u64(), v["batch"].as_u64(), v["batches"].as_u64()),
        (Some(26), Some(100), Some(10))
    );
    assert_eq!((v["bags"].as_u64(), v["lookups"].as_u64()), (Some(26_000), Some(26_000)));
    assert_eq!(
        (v["lookups_per_bag"]["min"].as_u64(), v["lookups_per_bag"]["max"].as_u64()),
        (Some(1), Some(1))
    );
    assert_eq!(v["unique_rows"], 7_639 + 12 - 1);
    assert_eq!(v["per_table"][12]["unique_rows"], 551, "C13: 552 values on 551 rows");
    let raw = root.join("../shared/datasets/criteo/train.txt");
    if !raw.exists() {
        eprintln!("skipped the comparison with the raw records: {} is absent", raw.display());
        return;
    }
    let dir = temp_dir("trace-criteo-slice");
    let convert = |name: &str, rows: &str| {
        let out = dir.join(name);
        trace(&[
            "criteo",
            raw.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--rows",
            rows,
            "--batch",
            "100",
        ]);
        out
    };
    let again = convert("again.daeidx", "10000000");
    assert_eq!(std::fs::read(&again).unwrap(), std::fs::read(&slice).unwrap(), "the committed bytes");
    // Distinct (column, row) pairs, counted from the text: fields 15..40, trimmed ones empty.
    let text = std::fs::read_to_string(&raw).unwrap();
    let mut pairs = HashSet::new();
    let mut per_column: Vec<HashSet<u64>> = vec![HashSet::new(); 26];
    for line in text.lines() {
        let fields: Vec<&str> = line.split('\t').collect();
        for (c, rows) in per_column.iter_mut().enumerate() {
            let value = fields.get(14 + c).copied().unwrap_or("");
            let row = if value.is_empty() { 0 } else { u64::from_str_radix(value, 16).unwrap() % 10_000_000 };
            pairs.insert((c, row));
            rows.insert(row);
        }
    }
    assert_eq!(v["unique_rows"].as_u64(), Some(pairs.len() as u64));
    for (c, rows) in per_column.iter().enumerate() {
        assert_eq!(v["per_table"][c]["unique_rows"].as_u64(), Some(rows.len() as u64), "C{}", c + 1);
    }
    // A small hash size folds distinct values onto shared rows: fewer unique rows.
    let small = convert("small.daeidx", "1000");
    let s: serde_json::Value =
        serde_json::from_str(&trace(&["info", small.to_str().unwrap(), "--json"])).unwrap();
    assert!(s["unique_rows"].as_u64().unwrap() < 7_639, "{}", s["unique_rows"]);
}

/// `trace fit` on a small locality file: the figures it prints for the fitted alpha are those
/// `trace info` gives on the trace its `trace gen` line writes.
#[test]
fn fit_figures_are_those_of_the_generated_trace() {
    let dir = temp_dir("trace-fit");
    // Half the rows looked up once, 30 % twice, 20 % three times or more.
    let stats = dir.join("stats.txt");
    std::fs::write(
        &stats,
        "tiny_t4_bs8.pt\nLocality stats after processing 1 batches of size 8\nAvg # of indices: 8000\n\
         Avg # of unique cols: 4000\nAvg col size: 2.0\nHistogram of col sizes:\n(0, 1]: 0.500\n(1, 2]: 0.300\n\
         (2+: 0.200\n[0, 1, 2]\n['0.000', '0.500', '0.800', '1.000']\n\
         Ratio of index distribution at different column sizes:\n(0, 1]: 0.250\n(1, 2]: 0.300\n(2+: 0.450\n\
         [0, 1, 2]\n['0.000', '0.250', '0.550', '1.000']\n",
    )
    .unwrap();
    let s = stats.to_str().unwrap();
    let out = trace(&["fit", "--locality", s, "--rows", "5000", "--grid", "7", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    // 8000 indices / 4 tables.
    assert_eq!((v["lookups"].as_u64(), v["rows"].as_u64()), (Some(2000), Some(5000)));
    let alpha = v["alpha"].as_f64().unwrap();
    assert!((0.5..=2.0).contains(&alpha), "{alpha}");
    assert_eq!(
        out,
        trace(&["fit", "--locality", s, "--rows", "5000", "--grid", "7", "--json"]),
        "deterministic"
    );
    let p = dir.join("fitted.daeidx");
    let mut args: Vec<String> =
        v["reproduce"].as_str().unwrap().split_whitespace().skip(2).map(String::from).collect();
    args.extend(["--out".into(), p.to_str().unwrap().into()]);
    trace(&args.iter().map(String::as_str).collect::<Vec<_>>());
    let info: serde_json::Value =
        serde_json::from_str(&trace(&["info", p.to_str().unwrap(), "--json"])).unwrap();
    assert_eq!(info["lookups"], 2000);
    assert!(
        (info["unique_fraction"].as_f64().unwrap() - v["unique_fraction"]["zipf"].as_f64().unwrap()).abs()
            < 1e-12
    );
    // info's bins 1 and 2 are the fit's first two; the fit's last (3+) holds the rest.
    let h = info["reuse_histogram"].as_array().unwrap();
    let unique = info["unique_rows"].as_f64().unwrap();
    let fit = v["reuse_histogram"].as_array().unwrap();
    for k in 0..2 {
        assert_eq!(
            h[k]["rows"].as_f64().unwrap() / unique,
            fit[k]["rows"]["zipf"].as_f64().unwrap(),
            "bin {k}"
        );
    }
    let text = trace(&["fit", "--locality", s, "--rows", "5000", "--grid", "7"]);
    assert!(text.contains("fitted alpha") && text.contains("8000 / 4"), "{text}");
}
