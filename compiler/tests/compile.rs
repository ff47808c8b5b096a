//! Code generation: partitioning, generated programs, reference semantics, bad workloads.

use compiler::{
    EmbeddingBagInstance, IndexDistribution, Op, Pooling, Target, TargetInfo, WorkloadSpec, compile,
    partition,
};
use sim_core::SeedTree;
use sim_core::procedural::table_value;

fn spec() -> WorkloadSpec {
    WorkloadSpec {
        name: "t".into(),
        op: Op::EmbeddingBag,
        pooling: Pooling::Sum,
        tables: 3,
        rows: 100,
        dim: 20,
        dtype: compiler::Dtype::F32,
        batch: 5,
        bag_size: 4,
        indices: IndexDistribution::Zipf { alpha: 1.1 },
    }
}

#[test]
fn partition_covers_every_bag_once_and_balances() {
    for (bags, parts) in [(15u64, 4u32), (3, 8), (0, 2), (1000, 7)] {
        let p = partition(bags, parts);
        assert_eq!(p.len(), parts as usize);
        assert_eq!(p.first().unwrap().start, 0);
        assert_eq!(p.last().unwrap().end, bags);
        for w in p.windows(2) {
            assert_eq!(w[0].end, w[1].start);
        }
        let sizes: Vec<u64> = p.iter().map(|r| r.end - r.start).collect();
        assert!(sizes.iter().max().unwrap() - sizes.iter().min().unwrap() <= 1, "{sizes:?}");
    }
}

#[test]
fn reference_sums_the_rows_of_each_bag_of_each_table() {
    let s = spec();
    let inst = EmbeddingBagInstance::generate(&s, &SeedTree::new(3));
    assert_eq!(inst.offsets.len(), 16);
    assert_eq!(inst.indices.len(), 60);
    let out = inst.reference(&s);
    // Bag 7 is the third bag of table 1.
    let (g, t) = (7usize, 1u32);
    for k in 0..20 {
        let want: f32 = (inst.offsets[g]..inst.offsets[g + 1])
            .map(|j| table_value(inst.table_seed, t, inst.indices[j as usize] as u64, k))
            .sum();
        assert_eq!(out[g * 20 + k as usize], want);
    }
}

#[test]
fn generated_programs_round_trip_through_their_text_forms() {
    let s = spec();
    let inst = EmbeddingBagInstance::generate(&s, &SeedTree::new(3));
    for target in [Target::Decoupled, Target::CoreOnly] {
        let c = compile(&s, inst.clone(), TargetInfo { target, cores: 4, vector_lanes: 16 }).unwrap();
        assert_eq!(c.jobs.len(), 4);
        for job in &c.jobs {
            let text = exec_core::print(&job.core);
            assert_eq!(exec_core::parse(&text).unwrap(), job.core);
            assert_eq!(job.au.is_some(), target == Target::Decoupled);
            if let Some(au) = &job.au {
                assert_eq!(access_unit::parse(&au.to_string()).unwrap(), *au);
            }
            // dim 20 with 16 lanes: a full and a 4-lane chunk.
            assert!(text.contains(", 16") && text.contains(", 4"), "{text}");
        }
    }
}

#[test]
fn unusable_workloads_and_targets_name_the_field() {
    let inst = EmbeddingBagInstance::generate(&spec(), &SeedTree::new(3));
    let info = TargetInfo { target: Target::Decoupled, cores: 2, vector_lanes: 16 };
    let wide = WorkloadSpec { dim: 300, ..spec() };
    assert_eq!(compile(&wide, inst.clone(), info).unwrap_err().to_string(), "dim: 300 is outside 1..=256");
    let mean = WorkloadSpec { pooling: Pooling::Mean, ..spec() };
    assert!(compile(&mean, inst.clone(), info).unwrap_err().to_string().starts_with("pooling: "));
    let alpha = WorkloadSpec { indices: IndexDistribution::Zipf { alpha: -1.0 }, ..spec() };
    assert!(compile(&alpha, inst.clone(), info).unwrap_err().to_string().starts_with("indices.alpha: "));
    let none = TargetInfo { cores: 0, ..info };
    assert_eq!(compile(&spec(), inst, none).unwrap_err().to_string(), "target: cores must be at least 1");
}

#[test]
fn workload_files_reject_unknown_keys() {
    let text = "name='x'\nop='embedding_bag'\npooling='sum'\ntables=1\nrows=10\ndim=4\ndtype='f32'\nbatch=1\nbag_size=1\nbag_sizes=2\n[indices]\ndistribution='uniform'\n";
    let e = toml::from_str::<WorkloadSpec>(text).unwrap_err();
    assert!(e.message().contains("unknown field `bag_sizes`"), "{e}");
}
