//! Code generation: partitioning, generated programs, reference semantics, bad workloads.

use compiler::{
    EmbeddingBagInstance, IndexDistribution, Op, Partition, Passes, Pooling, Target, TargetInfo,
    WorkloadSpec, compile, partition_by_cost,
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
        weights: false,
        block: 0,
        model: None,
        relations: 0,
        negatives: 0,
        tt: None,
        padding_idx: None,
        dense: Vec::new(),
        batches: 1,
        trace: None,
        triples: None,
        entity_dict: None,
        relation_dict: None,
        table_indices: Vec::new(),
        indices: Some(IndexDistribution::Zipf { alpha: 1.1 }),
        graph: None,
    }
}

#[test]
fn partition_covers_every_bag_once_and_balances_cost() {
    let csr = |sizes: &[u32]| {
        let mut o = vec![0u32];
        for s in sizes {
            o.push(o.last().unwrap() + s);
        }
        o
    };
    let equal = csr(&[4; 15]);
    let skewed = csr(&[1, 1, 1, 1, 200, 1, 1, 1, 1, 1, 1, 1, 50, 50, 1, 1]);
    for (offsets, parts) in [
        (equal.clone(), 4u32),
        (csr(&[2, 2, 2]), 8),
        (csr(&[]), 2),
        (csr(&[3; 1000]), 7),
        (skewed.clone(), 3),
    ] {
        let p = partition_by_cost(&offsets, parts);
        let bags = offsets.len() as u64 - 1;
        assert_eq!(p.len(), parts as usize);
        assert_eq!(p.first().unwrap().start, 0);
        assert_eq!(p.last().unwrap().end, bags);
        for w in p.windows(2) {
            assert_eq!(w[0].end, w[1].start);
        }
        // No part exceeds its share by more than one bag.
        let cost = |r: &std::ops::Range<u64>| {
            (offsets[r.end as usize] - offsets[r.start as usize]) as u64 + r.end - r.start
        };
        let total = cost(&(0..bags));
        let biggest = offsets.windows(2).map(|w| (w[1] - w[0]) as u64 + 1).max().unwrap_or(0);
        for r in &p {
            assert!(cost(r) <= total.div_ceil(parts as u64) + biggest, "{p:?} of {offsets:?}");
        }
    }
    // Equal bags split as evenly by count as by cost.
    let sizes: Vec<u64> = partition_by_cost(&equal, 4).iter().map(|r| r.end - r.start).collect();
    assert!(sizes.iter().max().unwrap() - sizes.iter().min().unwrap() <= 1, "{sizes:?}");
    // Boundaries fall where the running cost crosses each third: the heavy bag closes the
    // first part, and no part holds two heavy bags.
    let p = partition_by_cost(&skewed, 3);
    assert_eq!(p, vec![0..5, 5..10, 10..16]);
    assert!(!p.iter().any(|r| r.contains(&4) && (r.contains(&12) || r.contains(&13))), "{p:?}");
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
        let c = compile(
            &s,
            inst.clone(),
            TargetInfo {
                target,
                cores: 4,
                vector_lanes: 16,
                au_lanes: 8,
                au_storage_per_lane: 0,
                passes: Passes::default(),
                partition: Partition::Cost,
            },
        )
        .unwrap();
        assert_eq!(c.jobs.len(), 4);
        for job in &c.jobs {
            let text = exec_core::print(&job.core);
            assert_eq!(exec_core::parse(&text).unwrap(), job.core);
            assert_eq!(job.au.is_some(), target == Target::Decoupled);
            if let Some(au) = &job.au {
                assert_eq!(access_unit::parse(&au.to_string()).unwrap(), *au);
            }
            // dim 20 with 16 lanes: two 10-lane chunks that tile the row.
            assert!(text.contains(", 10") && !text.contains(", 16"), "{text}");
        }
    }
}

#[test]
fn unusable_workloads_and_targets_name_the_field() {
    let inst = EmbeddingBagInstance::generate(&spec(), &SeedTree::new(3));
    let info = TargetInfo {
        target: Target::Decoupled,
        cores: 2,
        vector_lanes: 16,
        au_lanes: 8,
        au_storage_per_lane: 0,
        passes: Passes::default(),
        partition: Partition::Cost,
    };
    let wide = WorkloadSpec { dim: 5000, ..spec() };
    assert_eq!(compile(&wide, inst.clone(), info).unwrap_err().to_string(), "dim: 5000 is outside 1..=4096");
    let weighted_max = WorkloadSpec { pooling: Pooling::Max, weights: true, ..spec() };
    assert!(compile(&weighted_max, inst.clone(), info).unwrap_err().to_string().starts_with("weights: "));
    let alpha = WorkloadSpec { indices: Some(IndexDistribution::Zipf { alpha: -1.0 }), ..spec() };
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

fn gnn() -> WorkloadSpec {
    toml::from_str(
        r#"
name = "g"
op = "gnn_aggregate"
dim = 20
dtype = "f32"
[graph]
generator = "rmat"
scale = 9
edge_factor = 6
"#,
    )
    .unwrap()
}

#[test]
fn gnn_aggregation_resolves_to_one_table_with_a_bag_per_vertex() {
    let w = gnn().resolved().unwrap();
    assert_eq!((w.tables, w.rows, w.batch, w.bag_size), (1, 512, 512, 6));
    let inst = EmbeddingBagInstance::generate(&w, &SeedTree::new(3));
    assert_eq!(inst.offsets.len(), 513);
    assert_eq!(inst.indices.len(), 512 * 6);
    // Bags are in-neighbour lists of a power-law graph: very unequal sizes.
    let sizes: Vec<u32> = inst.offsets.windows(2).map(|p| p[1] - p[0]).collect();
    assert!(sizes.iter().max().unwrap() > &30 && sizes.contains(&0), "{sizes:?}");
    // The reference is the neighbour sum.
    let r = inst.reference(&w);
    let v = sizes.iter().position(|&s| s > 3).unwrap();
    for k in [0usize, 19] {
        let want: f32 = inst.indices[inst.offsets[v] as usize..inst.offsets[v + 1] as usize]
            .iter()
            .map(|&u| table_value(inst.table_seed, 0, u as u64, k as u32))
            .sum();
        assert_eq!(r[v * 20 + k], want);
    }
    let out = compile(
        &w,
        inst,
        TargetInfo {
            target: Target::CoreOnly,
            cores: 4,
            vector_lanes: 16,
            au_lanes: 8,
            au_storage_per_lane: 0,
            passes: Passes::default(),
            partition: Partition::Cost,
        },
    )
    .unwrap();
    assert_eq!(out.jobs.len(), 4);
}

#[test]
fn gnn_and_embedding_bag_fields_do_not_mix() {
    let with_tables = WorkloadSpec { tables: 2, ..gnn() };
    assert_eq!(with_tables.resolved().unwrap_err().field, "tables");
    let no_graph = WorkloadSpec { graph: None, ..gnn() };
    assert_eq!(no_graph.resolved().unwrap_err().field, "graph");
    let bag_with_graph = WorkloadSpec { graph: gnn().graph, ..spec() };
    assert_eq!(bag_with_graph.resolved().unwrap_err().field, "graph");
    let bag_without_indices = WorkloadSpec { indices: None, ..spec() };
    assert_eq!(bag_without_indices.resolved().unwrap_err().field, "indices");
    let bad_scale: WorkloadSpec = toml::from_str(
        "name = \"g\"\nop = \"gnn_aggregate\"\ndim = 4\ndtype = \"f32\"\n[graph]\ngenerator = \"rmat\"\nscale = 0\nedge_factor = 2\n",
    )
    .unwrap();
    assert_eq!(bad_scale.resolved().unwrap_err().field, "graph.scale");
    assert!(spec().resolved().is_ok());
}

#[test]
fn nontemporal_marks_tables_without_reuse_and_the_access_unit_loads_them_so() {
    let passes = Passes::parse("decouple,nontemporal,vectorize,bufferize,simplify-mem,align-queues").unwrap();
    let info = TargetInfo {
        target: Target::Decoupled,
        cores: 2,
        vector_lanes: 16,
        au_lanes: 8,
        au_storage_per_lane: 0,
        passes,
        partition: Partition::Cost,
    };
    // Uniform over a large table: almost no row is looked up twice.
    let cold = WorkloadSpec { rows: 1_000_000, indices: Some(IndexDistribution::Uniform), ..spec() };
    // A few rows for many lookups: nearly every lookup reuses a row.
    let hot = WorkloadSpec { rows: 4, ..spec() };
    for (s, marked) in [(cold, true), (hot, false)] {
        let (c, stages) = compile_staged(&s, info);
        let au = c.jobs[0].au.as_ref().unwrap().to_string();
        assert_eq!(au.contains(" !nt"), marked, "{au}");
        let slc = core0_stage(&stages, "slc");
        assert_eq!(slc.contains("readonly nontemporal"), marked, "{slc}");
    }
}

#[test]
fn outer_rows_go_to_the_core_as_addresses_when_a_lane_cannot_hold_two_iterations() {
    // DistMult at 200 dimensions: head and relation rows (800 B each) per query, a tail row per
    // candidate, 2456 B per lane once bufferized.
    let spec = kg(200);
    let au = |storage: u64| first_au(&spec, storage);
    let rows_in = |p: &access_unit::AuProgram, tu: u8| {
        p.streams
            .iter()
            .filter(|s| s.tu.0 == tu && matches!(s.kind, access_unit::isa::StreamKind::Row { .. }))
            .count()
    };
    // Unlimited, or room for two: the unit fetches all three rows.
    for storage in [0, 2 * 2456] {
        let p = au(storage);
        assert_eq!(p.lane_iteration_bytes(), 2456);
        assert_eq!((rows_in(&p, 0), rows_in(&p, 1)), (2, 1), "{p}");
    }
    // The TMU's 2 KiB, or one byte short of two iterations: the tail rows only; the head and
    // relation operands are their rows' addresses, `table + index * 800`.
    for storage in [2048, 2 * 2456 - 1] {
        let p = au(storage);
        assert_eq!((rows_in(&p, 0), rows_in(&p, 1)), (0, 1), "{p}");
        assert!(p.lane_iteration_bytes() * 2 <= 2048, "{} B", p.lane_iteration_bytes());
        let text = p.to_string();
        assert!(text.contains("alu.mul s1, 800 in t0") && text.contains("alu.mul s2, 800 in t0"), "{text}");
        assert_eq!(access_unit::parse(&text).unwrap(), p);
    }
}

/// Compiles `s` (instance seed 5) for `info`, recording every stage.
fn compile_staged(s: &WorkloadSpec, info: TargetInfo) -> (compiler::CompiledWorkload, compiler::Stages) {
    let inst = EmbeddingBagInstance::generate(s, &SeedTree::new(5));
    let mut stages = compiler::Stages::default();
    let c = compiler::compile_with_stages(s, inst, info, Some(&mut stages)).unwrap();
    (c, stages)
}

/// Core 0's text after stage `name` of a compile that recorded its stages.
fn core0_stage<'a>(stages: &'a compiler::Stages, name: &str) -> &'a str {
    &stages.cores[0].iter().find(|(n, _)| n == name).expect("the stage was recorded").1
}

/// One core at `-O3`, 16 vector lanes, an 8-lane unit of `storage` bytes a lane (decoupled).
fn one_core(target: Target, storage: u64) -> TargetInfo {
    TargetInfo {
        target,
        cores: 1,
        vector_lanes: 16,
        au_lanes: 8,
        au_storage_per_lane: storage,
        passes: Passes::default(),
        partition: Partition::Cost,
    }
}

/// Core 0's access-unit program of `spec` on [`one_core`], decoupled.
fn first_au(spec: &WorkloadSpec, storage: u64) -> access_unit::AuProgram {
    let inst = EmbeddingBagInstance::generate(spec, &SeedTree::new(3));
    let c = compile(spec, inst, one_core(Target::Decoupled, storage)).unwrap();
    c.jobs[0].au.clone().unwrap()
}

/// DistMult scoring of 4 triples at `dim` dimensions.
fn kg(dim: u32) -> WorkloadSpec {
    toml::from_str::<WorkloadSpec>(&format!(
        "name = \"kg\"\nop = \"kg_score\"\nmodel = \"distmult\"\nrows = 100\nrelations = 5\nnegatives = 2\n\
         dim = {dim}\ndtype = \"f32\"\nbatch = 4\n[indices]\ndistribution = \"uniform\"\n"
    ))
    .unwrap()
    .resolved()
    .unwrap()
}

#[test]
fn the_plain_core_times_a_candidates_tail_row_and_not_the_rows_it_reloads() {
    // The head and relation rows are loaded again for every candidate; only the tail row
    // changes with it. An embedding bag's rows are all lookups.
    let count = |spec: &WorkloadSpec| {
        let inst = EmbeddingBagInstance::generate(spec, &SeedTree::new(3));
        let text =
            exec_core::print(&compile(spec, inst, one_core(Target::CoreOnly, 0)).unwrap().jobs[0].core);
        (text.matches("!lookup").count(), text.matches("vld ").count())
    };
    // Three rows of two 16-lane chunks each, one of them looked up.
    assert_eq!(count(&kg(32)), (1, 6));
    assert_eq!(count(&spec()).0, 1);
}

#[test]
fn rows_wider_than_a_lane_are_streamed_in_chunks() {
    // 600 f32 (2400 B) rows: whole, one does not fit the TMU's 2 KiB lane.
    let wide = WorkloadSpec { dim: 600, ..spec() };
    let au = |storage: u64| first_au(&wide, storage);
    let widest = |p: &access_unit::AuProgram| {
        p.streams
            .iter()
            .filter_map(|s| match s.kind {
                access_unit::isa::StreamKind::Row { bytes, .. } => Some(bytes),
                _ => None,
            })
            .max()
    };
    assert_eq!(widest(&au(0)), Some(2400));
    let chunked = au(2048);
    // 40 chunks of 15 lanes (the widest vector that tiles 600 in 16 lanes), 60 B each.
    assert_eq!(widest(&chunked), Some(60), "{chunked}");
    assert!(chunked.lane_iteration_bytes() <= 2048);
    // The fallback is said, so that a run can warn that no lookup is timed.
    let chunks = |spec: &WorkloadSpec, storage: u64| {
        let inst = EmbeddingBagInstance::generate(spec, &SeedTree::new(3));
        compile(spec, inst, one_core(Target::Decoupled, storage)).unwrap().chunked_rows
    };
    assert!(chunks(&wide, 2048));
    assert!(!chunks(&wide, 0));
    assert!(!chunks(&spec(), 2048));
}

/// `hoist` (in `-O2` and `-O3`, not `-O1`) computes a knowledge-graph triple's `h * r` once per
/// triple: the head and relation rows go to the core with the candidates' `begin` event, and a
/// candidate's callback multiplies one product by its tail's row instead of two.
#[test]
fn hoist_sends_a_triples_rows_once_with_the_begin_event() {
    assert!(!Passes::level(1).unwrap().has(compiler::Pass::Hoist));
    assert!(Passes::level(2).unwrap().has(compiler::Pass::Hoist));
    assert!(Passes::level(3).unwrap().has(compiler::Pass::Hoist));
    let s: WorkloadSpec = toml::from_str(
        "name = \"kg\"\nop = \"kg_score\"\nmodel = \"distmult\"\nrows = 100\nrelations = 5\nnegatives = 2\n\
         dim = 32\ndtype = \"f32\"\nbatch = 4\n[indices]\ndistribution = \"uniform\"\n",
    )
    .unwrap();
    let s = s.resolved().unwrap();
    let o3 = Passes::level(3).unwrap();
    for (passes, hoisted) in [(o3, true), (o3.without(compiler::Pass::Hoist), false)] {
        let info = TargetInfo { cores: 2, passes, ..one_core(Target::Decoupled, 0) };
        let (c, stages) = compile_staged(&s, info);
        let au = c.jobs[0].au.as_ref().unwrap().to_string();
        assert_eq!(au.contains("on t1 begin"), hoisted, "{au}");
        // A candidate's callback: `(h * r) * t`, with `h * r` loaded back when hoisted.
        let slc = core0_stage(&stages, "slc");
        let candidate = &slc[slc.find("slc.on_iter").unwrap()..];
        assert_eq!(candidate.matches("vfmul").count(), if hoisted { 1 } else { 2 }, "{slc}");
        assert_eq!(c.layout.scratch.is_some(), hoisted);
    }
}

/// `partition = "split"`: a one-table workload whose middle bag holds most lookups is cut
/// across the cores, each core's pieces cost its share (plus one), and the pieces' reference
/// combined is the workload's; a three-table workload, or mean pooling, keeps whole bags and
/// says why once a bag is longer than a core's share.
#[test]
fn split_cuts_a_long_bag_and_falls_back_where_it_cannot() {
    let one = WorkloadSpec { tables: 1, batch: 6, ..spec() };
    let sizes = [2u32, 3, 90, 1, 2, 2];
    let mut offsets = vec![0u32];
    for s in sizes {
        offsets.push(offsets.last().unwrap() + s);
    }
    let indices: Vec<u32> = (0..offsets[6]).map(|k| k * 7 % 100).collect();
    let inst = EmbeddingBagInstance { offsets, indices, weights: None, kg: None, edges: None, table_seed: 5 };
    let info = TargetInfo {
        target: Target::Decoupled,
        cores: 4,
        vector_lanes: 16,
        au_lanes: 8,
        au_storage_per_lane: 0,
        passes: Passes::default(),
        partition: Partition::Split,
    };
    let c = compile(&one, inst.clone(), info).unwrap();
    let split = c.split.as_ref().expect("cut");
    assert_eq!((split.bags(), split.cut_bags()), (6, 1));
    // 100 lookups and 6 bag ends: 26 or 27 steps a core, where whole bags leave one core 90 lookups
    // or more.
    let pieces: Vec<u64> = c.jobs.iter().map(|j| j.bags.end - j.bags.start).collect();
    assert_eq!(pieces.iter().sum::<u64>(), split.pieces());
    let lookups: Vec<u32> = c
        .jobs
        .iter()
        .map(|j| c.instance.offsets[j.bags.end as usize] - c.instance.offsets[j.bags.start as usize])
        .collect();
    assert!(lookups.iter().all(|&n| (23..=27).contains(&n)), "{lookups:?}");
    assert_eq!(c.spec.bags(), split.pieces());
    assert_eq!(split.combine(&c.instance.reference(&c.spec), 20), inst.reference(&one));
    assert_eq!(c.unsplit, None);

    let whole = compile(&one, inst.clone(), TargetInfo { partition: Partition::Cost, ..info }).unwrap();
    assert!(whole.split.is_none());
    let most = whole
        .jobs
        .iter()
        .map(|j| inst.offsets[j.bags.end as usize] - inst.offsets[j.bags.start as usize])
        .max();
    assert!(most >= Some(90), "{most:?}");

    let mean = WorkloadSpec { pooling: Pooling::Mean, ..one.clone() };
    let c = compile(&mean, inst.clone(), info).unwrap();
    assert!(c.split.is_none());
    assert!(c.unsplit.expect("a reason").starts_with("mean pooling"));
    // Short bags: nothing worth saying.
    let even = EmbeddingBagInstance { offsets: vec![0, 2, 4, 6, 8, 10, 12], indices: vec![1; 12], ..inst };
    assert_eq!(compile(&mean, even, info).unwrap().unsplit, None);
}
