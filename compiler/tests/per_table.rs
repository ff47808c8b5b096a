//! Tables that differ (`[[table_indices]]`): per-table bag sizes and rows. Each table's bags
//! hold exactly its own number of lookups, tables are stored in their own rows one after the
//! other, and the shipped MLPerf DLRM-v2 workload has the reference's shape.

use compiler::{Contents, EmbeddingBagInstance, Layout, WorkloadSpec};
use sim_core::SeedTree;

fn workload(text: &str) -> WorkloadSpec {
    toml::from_str::<WorkloadSpec>(text).expect("parses").resolved().expect("resolves")
}

/// Four tables: bag sizes 3, 1, 100 and the workload's 7; rows 50, 1000 (all), 8, 1000.
const MIXED: &str = "name = 'm'\nop = 'embedding_bag'\ntables = 4\nrows = 1000\ndim = 8\n\
    dtype = 'f32'\nbatch = 5\nbag_size = 7\n\
    table_indices = [{ rows = 50, bag_size = 3 }, { bag_size = 1 }, { rows = 8, bag_size = 100, \
    distribution = 'zipf', alpha = 1.2 }]\n[indices]\ndistribution = 'uniform'\n";

#[test]
fn per_table_bag_sizes_generate_exactly_their_lookups() {
    let spec = workload(MIXED);
    let sizes = [3u32, 1, 100, 7];
    assert_eq!(spec.lookups(), 5 * 111);
    let inst = EmbeddingBagInstance::generate(&spec, &SeedTree::new(1));
    assert_eq!(inst.indices.len(), 5 * 111, "sum of the sizes per sample");
    for (g, w) in inst.offsets.windows(2).enumerate() {
        let t = g / 5;
        assert_eq!(w[1] - w[0], sizes[t], "bag {g} of table {t}");
        let rows = [50, 1000, 8, 1000][t];
        assert!(inst.indices[w[0] as usize..w[1] as usize].iter().all(|&i| i < rows), "table {t}");
    }
    assert_eq!((0..4).map(|t| spec.table_bag_size(t)).collect::<Vec<_>>(), sizes);
    // Without a bag_size of its own, every table needs one from an entry.
    let text = MIXED.replace("bag_size = 7\n", "");
    let e = toml::from_str::<WorkloadSpec>(&text).unwrap().resolved().unwrap_err();
    assert_eq!(e.field, "bag_size");
    assert!(e.message.contains("[[table_indices]]"), "{e}");
    let all = text.replace(
        "distribution = 'zipf', alpha = 1.2 }]",
        "distribution = 'zipf', alpha = 1.2 }, \
         { bag_size = 2 }]",
    );
    let spec = workload(&all);
    assert_eq!(spec.lookups(), 5 * 106);
    assert_eq!(spec.bag_size, 27, "nominal: 106 lookups over 4 tables per sample, rounded up");
}

#[test]
fn tables_of_their_own_rows_are_stored_one_after_the_other() {
    let spec = workload(MIXED);
    assert!(!spec.uniform_tables());
    assert_eq!([0, 1, 2, 3, 4].map(|t| spec.table_first_row(t)), [0, 50, 1050, 1058, 2058]);
    assert_eq!(spec.stacked_rows(), 2058);
    let inst = EmbeddingBagInstance::generate(&spec, &SeedTree::new(1));
    let layout = Layout::plan(&spec, &inst, 2);
    let regions = layout.regions(&spec, &inst);
    let row_bytes = spec.row_bytes();
    for (t, first, rows) in [(0u32, 0u64, 50u64), (1, 50, 1000), (2, 1050, 8), (3, 1058, 1000)] {
        let r = regions.iter().find(|r| r.name == format!("table{t}")).unwrap();
        assert_eq!((r.base, r.size), (layout.tables + first * row_bytes, rows * row_bytes), "table {t}");
    }
    let base = regions.iter().find(|r| r.name == "table_base").expect("a table_base array");
    assert_eq!(base.contents, Contents::Words(vec![0, 50, 1050, 1058]));
    assert!(base.base >= layout.tables + 2058 * row_bytes, "after the tables");
    // Tables alike: stacked at t * rows, no array.
    let alike = workload(&MIXED.replace("rows = 50, ", "").replace("rows = 8, ", ""));
    assert!(alike.uniform_tables());
    let inst = EmbeddingBagInstance::generate(&alike, &SeedTree::new(1));
    let layout = Layout::plan(&alike, &inst, 2);
    assert_eq!(layout.table_base, None);
    assert!(layout.regions(&alike, &inst).iter().all(|r| r.name != "table_base"));
}

#[test]
fn bad_per_table_entries_are_named() {
    for (edit, field, want) in [
        ("bag_size = 3 }", "table_indices", "entry 0: bag_size must be at least 1"),
        ("rows = 50, ", "table_indices", "entry 0: rows = 5000 is outside 1..=1000"),
        ("distribution = 'zipf', ", "table_indices", "entry 2: alpha is only for distribution = \"zipf\""),
    ] {
        let replacement = match edit {
            "bag_size = 3 }" => "bag_size = 0 }",
            "rows = 50, " => "rows = 5000, ",
            _ => "",
        };
        let text = MIXED.replace(edit, replacement);
        let e = toml::from_str::<WorkloadSpec>(&text).unwrap().resolved().unwrap_err();
        assert_eq!(e.field, field, "{e}");
        assert!(e.message.contains(want), "{want}: {e}");
    }
    // A padding index must be a row of every table.
    let text = MIXED.replace("bag_size = 7\n", "bag_size = 7\npadding_idx = 9\n");
    let e = toml::from_str::<WorkloadSpec>(&text).unwrap().resolved().unwrap_err();
    assert_eq!(e.field, "padding_idx", "{e}");
    assert!(e.message.contains("8-row tables of [[table_indices]] entry 2"), "{e}");
}

#[test]
fn the_mlperf_dlrm_v2_workload_has_the_references_shape() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../configs/workloads/dlrm-mlperf-v2.toml");
    let spec = workload(&std::fs::read_to_string(path).unwrap());
    let rows = [
        40000000u64,
        39060,
        17295,
        7424,
        20265,
        3,
        7122,
        1543,
        63,
        40000000,
        3067956,
        405282,
        10,
        2209,
        11938,
        155,
        4,
        976,
        14,
        40000000,
        40000000,
        40000000,
        590152,
        12973,
        108,
        36,
    ];
    let hots = [3u32, 2, 1, 2, 6, 1, 1, 1, 1, 7, 3, 8, 1, 6, 9, 5, 1, 1, 1, 12, 100, 27, 10, 3, 1, 1];
    assert_eq!((spec.tables, spec.dim), (26, 128));
    for t in 0..26u32 {
        assert_eq!((spec.table_rows(t), spec.table_bag_size(t)), (rows[t as usize], hots[t as usize]));
    }
    assert_eq!(spec.stacked_rows(), 204_184_588);
    assert_eq!(spec.lookups(), 214 * u64::from(spec.batch));
    // f16 rows fit the 80 GiB of HBM; f32 rows would not.
    assert_eq!(spec.row_bytes(), 256);
    assert!(spec.stacked_rows() * spec.row_bytes() < 80 << 30);
    assert!(spec.stacked_rows() * 512 > 80 << 30);
    let small = WorkloadSpec { batch: 3, ..spec };
    let inst = EmbeddingBagInstance::generate(&small, &SeedTree::new(2));
    assert_eq!(inst.indices.len(), 3 * 214);
    for (g, w) in inst.offsets.windows(2).enumerate() {
        let t = g / 3;
        let bag = &inst.indices[w[0] as usize..w[1] as usize];
        assert_eq!(bag.len() as u32, hots[t]);
        assert!(bag.iter().all(|&i| u64::from(i) < rows[t]), "table {t}");
    }
}
