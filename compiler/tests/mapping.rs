//! The asymmetric table-to-core mapping (`compiler::mapping`): for any table mix and core
//! count, the cores' ranges cover every bag exactly once, in order; each table's bags lie on
//! a contiguous run of cores no longer than its estimated share allows; every core's estimated
//! cost stays within a bag and the snapping margin of its share; and workloads whose tables
//! differ give their costly tables more cores.

use compiler::mapping::{MemoryCosts, SNAP, partition_by_tables, partition_weighted, table_costs};
use compiler::{EmbeddingBagInstance, WorkloadSpec};
use proptest::prelude::*;
use sim_core::SeedTree;

/// The 16-core `dae-hbm3` chip's hierarchy as `DaeSystem::memory_costs` derives it.
const DAE: MemoryCosts = MemoryCosts {
    line_bytes: 64,
    private_bytes: 0,
    private_cycles: 0,
    shared_bytes: 16 << 20,
    shared_cycles: 40,
    memory_cycles: 104,
    outstanding: 128,
    lanes: 8,
};

/// Bag sizes per table, per-lookup costs per table, a per-bag cost and a core count.
fn mixes() -> impl Strategy<Value = (Vec<Vec<u32>>, Vec<f64>, f64, u32)> {
    (1usize..6, 0usize..9, 1u32..20).prop_flat_map(|(tables, batch, parts)| {
        (
            prop::collection::vec(prop::collection::vec(0u32..30, batch), tables),
            prop::collection::vec(prop_oneof![Just(1.0), 0.01f64..50.0], tables),
            prop_oneof![Just(0.0), 0.0f64..10.0],
            Just(parts),
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn every_bag_once_and_tables_on_contiguous_cores((sizes, cost, per_bag, parts) in mixes()) {
        let batch = sizes[0].len() as u32;
        let mut offsets = vec![0u32];
        for s in sizes.iter().flatten() {
            offsets.push(offsets.last().unwrap() + s);
        }
        let bags = (offsets.len() - 1) as u64;
        let r = partition_weighted(&offsets, batch, &cost, per_bag, parts);
        // One range per core, in order, covering 0..bags exactly once.
        prop_assert_eq!(r.len(), parts as usize);
        prop_assert_eq!(r[0].start, 0);
        prop_assert_eq!(r.last().unwrap().end, bags);
        prop_assert!(r.windows(2).all(|w| w[0].end == w[1].start && w[0].start <= w[0].end), "{:?}", r);
        // Estimated costs: each core within a bag and the snapping margin of its share.
        let bag_cost = |g: u64| {
            let t = (g / u64::from(batch.max(1))) as usize;
            per_bag + f64::from(offsets[g as usize + 1] - offsets[g as usize]) * cost[t]
        };
        let total: f64 = (0..bags).map(bag_cost).sum();
        let mean = total / f64::from(parts);
        let largest = (0..bags).map(bag_cost).fold(0.0, f64::max);
        for core in &r {
            let c: f64 = core.clone().map(bag_cost).sum();
            prop_assert!(c <= mean * (1.0 + 2.0 * SNAP) + largest + 1e-9, "{:?}: {} vs {}", r, c, mean);
        }
        // A table's bags lie on contiguous cores, at most its share rounded up plus 2 (the
        // cores it shares at either end).
        if batch > 0 {
            for t in 0..sizes.len() {
                let lo = t as u64 * u64::from(batch);
                let hi = lo + u64::from(batch);
                let cores: Vec<usize> =
                    (0..r.len()).filter(|&k| r[k].start < hi && r[k].end > lo).collect();
                prop_assert!(cores.windows(2).all(|w| w[1] == w[0] + 1), "{:?}", cores);
                let table_cost: f64 = (lo..hi).map(bag_cost).sum();
                let share = if mean > 0.0 { table_cost / mean } else { 0.0 };
                // Only cores that hold some of its bags count: an empty range between two of
                // them (work of no cost spread thinner than the cores) holds nothing.
                let holding = cores.iter().filter(|&&k| r[k].start < r[k].end).count();
                prop_assert!(holding as f64 <= share.ceil() + 2.0, "table {}: {:?} share {}", t, cores, share);
            }
        }
    }
}

fn workload(text: &str) -> (WorkloadSpec, EmbeddingBagInstance) {
    let spec: WorkloadSpec = toml::from_str(text).expect("a valid workload");
    let spec = spec.resolved().expect("resolves");
    let inst = EmbeddingBagInstance::generate(&spec, &SeedTree::new(5));
    (spec, inst)
}

const MIXED: &str = "name = 'mixed'\nop = 'embedding_bag'\ntables = 4\nrows = 1000000\ndim = 64\n\
    dtype = 'f32'\nbatch = 64\nbag_size = 20\n[indices]\ndistribution = 'uniform'\n\
    [[table_indices]]\ntables = 2\ndistribution = 'zipf'\nalpha = 1.2\nrows = 100\n";

#[test]
fn per_table_distributions_draw_from_their_rows() {
    let (spec, inst) = workload(MIXED);
    let per_table = (64 * 20) as usize;
    for (t, lookups) in inst.indices.chunks(per_table).enumerate() {
        let max = *lookups.iter().max().unwrap();
        if t < 2 {
            assert!(max < 100, "table {t}: row {max} past the entry's 100 rows");
        } else {
            assert!(max >= 100, "table {t} draws from all {} rows", spec.rows);
        }
    }
}

#[test]
fn hot_small_tables_cost_less_and_get_fewer_cores() {
    let (spec, inst) = workload(MIXED);
    let costs = table_costs(&spec, &inst, &DAE, 8, 16);
    assert!(costs[0].shared_hits > 0.9 && costs[3].shared_hits < 0.05, "{costs:?}");
    assert!(costs[0].per_lookup < 0.7 * costs[3].per_lookup, "{costs:?}");
    let r = partition_by_tables(&spec, &inst, &DAE, 8, 16);
    // The default partition gives the two hot tables (bags 0..128) 4 of the 8 cores; they get
    // fewer here, and the cold ones more.
    let hot = r.iter().filter(|c| c.start < 128 && c.end > c.start).count();
    let cold = r.iter().filter(|c| c.end > 128 && c.end > c.start).count();
    assert!(hot < 4 && cold > 4, "{r:?}");
    // Tables that are alike are mapped as the default partition maps them
    let (spec, inst) = workload(
        &MIXED
            .replace("rows = 100\n", "")
            .replace("alpha = 1.2", "alpha = 1.05")
            .replace("tables = 2\n", "tables = 4\n"),
    );
    let even = partition_by_tables(&spec, &inst, &DAE, 8, 16);
    // (within a bag: the sampled tables' costs differ a little), each on 2 cores of its own.
    let default = compiler::partition_by_cost(&inst.offsets, 8);
    for (a, b) in even.iter().zip(&default) {
        assert!(a.start.abs_diff(b.start) <= 1 && a.end.abs_diff(b.end) <= 1, "{even:?}");
    }
    assert!([64, 128, 192].iter().all(|&b| even.iter().any(|r| r.start == b)), "{even:?}");
}
