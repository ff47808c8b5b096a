//! The compiler end to end, on random shapes: every workload is compiled (at a random `-O`
//! level or a random subset of passes, for a decoupled chip or its core-only twin, on 1-3
//! cores), simulated with `dae_sim::system::run`, and its outputs compared element by element
//! with the reference.
//!
//! # What is drawn
//!
//! - Embedding bags of 1-3 tables of 1-300 rows; one shape in four is a GNN aggregation (one
//!   table of 2^3..2^8 vertex rows, a bag per destination vertex). `dim` 1-70, with 1, 15, 16,
//!   17, 20 and 64 drawn often (widths below, at and just past a vector, and several vectors
//!   with a masked tail). 0-6 bags per table: 0 is an empty batch, no bags at all and
//!   `offsets = [0]` (`WorkloadSpec::validate`, which `compile` calls, accepts `batch = 0`).
//! - Each bag has its own size: 0-5 lookups, and one bag in seven 6-12 (more lookups than the
//!   access unit has lanes). `EmbeddingBagInstance::generate` gives every bag `bag_size`
//!   lookups, so the instances are built here, field by field. About half the lookups come from
//!   a hot set of at most 3 rows, so bags repeat rows (the same row twice in a bag, and across
//!   bags and tables).
//! - Pooling sum, mean or max; per-lookup weights with sum (the spec allows them only there),
//!   half of them multiples of 1/8 in -2..2 and half arbitrary f32 in -4..4, so products and
//!   sums round.
//! - The machine: decoupled or core-only, 1-3 cores (more cores than bags included), 1, 2, 3,
//!   4, 8 or 16 f32 vector lanes, 1, 2, 3, 4 or 8 access-unit lanes, and `-O0`..`-O3` or any
//!   subset of `Pass::ALL` (`Passes::parse`; the empty set and sets without `decouple`
//!   included). Small private caches and an LLC bank per core in front of the fixed-latency
//!   memory model ([`EXPERIMENT`], loaded like `dae-sim --config` loads a file), so a case
//!   simulates in milliseconds.
//!
//! The deterministic corner cases at the end (dim 1, dim 17 with 16 lanes, empty bags first
//! and last, one row read by every lookup, max of negative values, mean and max of an empty
//! bag, an empty batch, one-row tables) each run at every `-O` level, decoupled and core-only,
//! on 1 and 2 cores.
//!
//! # Exactness
//!
//! The comparison is bit for bit, with no tolerance. The loop nest (`compiler::frontend`)
//! defines the order: each output element starts at the pooling's identity (0, or `f32::MIN`
//! for a non-empty max bag and 0 for an empty one), every lookup is folded in one after the
//! other in bag order with one rounding per multiply (`w * x`) and one per add or max (no FMA,
//! no reassociation), and mean multiplies the sum once by `1 / max(len, 1)`. The reference
//! (`EmbeddingBagInstance::reference`) follows the same order with the same roundings, and
//! vectorization only splits a row's columns into lanes (each column keeps its own sequence of
//! operations), so a correct compilation reproduces it exactly, even with weights that round.
//! (This test found the max of an empty bag coming out as -0.0, its identity computed as
//! `0.0 * f32::MIN`; [`max_of_an_empty_bag_is_positive_zero`] keeps it fixed.)
//!
//! # Cases, seed and cost
//!
//! [`CASES`] random cases from the fixed seed [`SEED`], so every run checks the same ones;
//! `PROPTEST_CASES` and `PROPTEST_RNG_SEED` override them to explore (a failure is written to
//! `tests/compiler_props.proptest-regressions` and replayed first on the next run). Each case
//! compiles and simulates one machine, 10-20 ms in a debug build; the whole file runs in a few
//! seconds.

use compiler::{EmbeddingBagInstance, GraphSpec, IndexDistribution, Op, Pass, Passes, Pooling, WorkloadSpec};
use dae_sim::experiment::{Experiment, Overrides, SystemPlan};
use dae_sim::system::DaeSystem;
use proptest::prelude::*;
use proptest::test_runner::{Config, FileFailurePersistence, RngSeed};
use sim_core::procedural::table_value;
use sim_core::{SeedTree, Tick};
use std::sync::OnceLock;

/// Random cases per run of the property (`PROPTEST_CASES` overrides it).
const CASES: u32 = 128;
/// The seed of the cases (`PROPTEST_RNG_SEED` overrides it): fixed, so every run checks the
/// same cases and a failure reproduces; other seeds explore further.
const SEED: u64 = 0xDAE5_EED0;

fn env<T: std::str::FromStr>(name: &str) -> Option<T> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

fn cases() -> u32 {
    env("PROPTEST_CASES").unwrap_or(CASES)
}

fn rng_seed() -> RngSeed {
    RngSeed::Fixed(env("PROPTEST_RNG_SEED").unwrap_or(SEED))
}

/// Two small chips, decoupled and core-only, loaded from an experiment file the way
/// `dae-sim --config` loads one; the cores, lanes and passes are changed per case.
const EXPERIMENT: &str = r#"
[experiment]
name = "compiler-props"
seed = 1
max_sim_time = "2ms"

[[system]]
name = "dae"
kind = "dae"
cores = 1
memory = { model = "simple", latency = "60ns", bandwidth = "200GB/s" }

[system.core]
clock = "2GHz"
issue_width = 4
max_outstanding = 8
line = "64B"
vector_bits = 512
rob_entries = 64
lq_entries = 32
sq_entries = 32
[system.core.latency_cycles]
alu = 1
mul = 2
div = 8
vector = 2
queue_pop = 2
queue_load = 4

[system.access_unit]
storage = "4KiB"
max_outstanding = 16
requests_per_cycle = 2
events_per_cycle = 1
outq_entries = 8
lanes = 4
outq_chunk_entries = 8
outq_chunks = 2
outq_flush_cycles = 16

[system.caches.l1d]
size = "2KiB"
associativity = 2
line = "64B"
mshrs = 4
hit_latency_cycles = 2
[system.caches.l2]
size = "8KiB"
associativity = 4
line = "64B"
mshrs = 8
hit_latency_cycles = 6
[system.caches.llc]
size = "16KiB"
associativity = 4
line = "64B"
mshrs = 16
hit_latency_cycles = 10

[[workload]]
name = "unused"
op = "embedding_bag"
tables = 1
rows = 10
dim = 4
dtype = "f32"
batch = 1
bag_size = 1
indices = { distribution = "uniform" }
"#;

/// What the experiment file gives the cases.
struct Chips {
    /// The decoupled chip.
    dae: DaeSystem,
    /// Its core-only twin (same cores, caches and memory).
    cpu: DaeSystem,
    /// The simulated-time limit of a run.
    max_time: Tick,
    /// A resolved workload the cases' specs start from (fields they do not set keep its
    /// values).
    base: WorkloadSpec,
}

fn chips() -> &'static Chips {
    static CHIPS: OnceLock<Chips> = OnceLock::new();
    CHIPS.get_or_init(|| {
        let dir = tempfile::Builder::new()
            .prefix("dae-sim-compiler-props-")
            .tempdir()
            .expect("temporary directory");
        let path = dir.path().join("experiment.toml");
        std::fs::write(&path, EXPERIMENT).expect("write experiment");
        let exp = Experiment::load(&path, &Overrides::default()).expect("the experiment loads");
        drop(dir);
        let Some((_, SystemPlan::Dae(dae))) = exp.systems.first() else { panic!("a DAE system") };
        assert!(dae.access_unit.is_some());
        let mut cpu = (**dae).clone();
        cpu.access_unit = None;
        Chips {
            dae: (**dae).clone(),
            cpu,
            max_time: exp.max_sim_time.expect("set in the config above"),
            base: exp.file.workload[0].clone(),
        }
    })
}

/// The compiler's passes: an `-O` level or an explicit list.
#[derive(Debug, Clone, PartialEq)]
enum PassSet {
    Level(u8),
    List(Vec<&'static str>),
}

impl PassSet {
    fn passes(&self) -> Passes {
        match self {
            PassSet::Level(l) => Passes::level(*l).expect("a level in 0..=3"),
            PassSet::List(names) => Passes::parse(&names.join(",")).expect("known pass names"),
        }
    }
}

/// The chip a case runs on.
#[derive(Debug, Clone, PartialEq)]
struct Machine {
    decoupled: bool,
    cores: u32,
    vector_lanes: u32,
    au_lanes: u32,
    passes: PassSet,
    /// `partition = "split"`: bags cut across cores (merge-path).
    split: bool,
}

impl Machine {
    fn system(&self) -> DaeSystem {
        let c = chips();
        let mut sys = if self.decoupled { c.dae.clone() } else { c.cpu.clone() };
        sys.cores = self.cores;
        sys.vector_lanes = self.vector_lanes;
        sys.passes = self.passes.passes();
        if self.split {
            sys.partition = dae_sim::config::schema::PartitionSetting::Split;
        }
        if let Some(au) = sys.access_unit.as_mut() {
            au.unit.lanes = self.au_lanes;
        }
        sys
    }
}

/// One lookup as drawn: hot (a row among the first three) or anywhere, and its weight.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Lookup {
    hot: bool,
    raw: u32,
    weight: f32,
}

/// An embedding-bag (or GNN-aggregation) workload with bags of any sizes.
#[derive(Debug, Clone, PartialEq)]
struct Shape {
    /// `EmbeddingBag`, or `GnnAggregate` (one table of `2^scale` rows, a bag per destination
    /// vertex: the graph only sets the shape, the bags are drawn here like any others).
    op: Op,
    pooling: Pooling,
    weighted: bool,
    /// The tables' element type (f32, f16 or bf16: the same values, converted on load).
    dtype: compiler::Dtype,
    tables: u32,
    rows: u64,
    dim: u32,
    batch: u32,
    /// `tables * batch` bags, table-major (bag `g` reads table `g / batch`).
    bags: Vec<Vec<Lookup>>,
    table_seed: u64,
    /// PyTorch's `padding_idx` (embedding bags only; drawn among the hot rows, so bags hold it).
    padding: Option<u32>,
}

impl Shape {
    /// The spec and the instance: CSR offsets over the bags, their row ids (hot lookups folded
    /// onto the first three rows) and weights.
    fn workload(&self) -> (WorkloadSpec, EmbeddingBagInstance) {
        assert_eq!(self.bags.len() as u64, u64::from(self.tables) * u64::from(self.batch));
        let gnn = self.op == Op::GnnAggregate;
        let graph = gnn.then(|| {
            assert!(self.tables == 1 && self.rows.is_power_of_two(), "a graph's one table of 2^scale rows");
            GraphSpec::Rmat {
                scale: self.rows.trailing_zeros(),
                edge_factor: 1,
                a: 0.57,
                b: 0.19,
                c: 0.19,
                fanout: None,
            }
        });
        let spec = WorkloadSpec {
            name: "props".into(),
            op: self.op,
            pooling: self.pooling,
            tables: self.tables,
            rows: self.rows,
            dim: self.dim,
            dtype: self.dtype,
            batch: self.batch,
            // Nominal: the instance's bags have their own sizes.
            bag_size: self.bags.iter().map(Vec::len).max().unwrap_or(0) as u32,
            weights: self.weighted,
            indices: (!gnn).then_some(IndexDistribution::Uniform),
            graph,
            padding_idx: self.padding,
            ..chips().base.clone()
        };
        let mut offsets = vec![0u32];
        let mut indices = Vec::new();
        let mut weights = Vec::new();
        for bag in &self.bags {
            for l in bag {
                let span = if l.hot { self.rows.min(3) } else { self.rows };
                indices.push((u64::from(l.raw) % span) as u32);
                weights.push(l.weight);
            }
            offsets.push(indices.len() as u32);
        }
        let weights = self.weighted.then_some(weights);
        (
            spec,
            EmbeddingBagInstance {
                offsets,
                indices,
                weights,
                kg: None,
                edges: None,
                table_seed: self.table_seed,
            },
        )
    }

    /// A one-line description for failure messages.
    fn describe(&self) -> String {
        let (_, inst) = self.workload();
        let bags: Vec<&[u32]> =
            inst.offsets.windows(2).map(|w| &inst.indices[w[0] as usize..w[1] as usize]).collect();
        format!(
            "{:?} {:?}{}{} {:?} tables {} rows {} dim {} batch {} bags {bags:?} seed {}",
            self.op,
            self.pooling,
            if self.weighted { " weighted" } else { "" },
            self.padding.map_or(String::new(), |p| format!(" padding {p}")),
            self.dtype,
            self.tables,
            self.rows,
            self.dim,
            self.batch,
            self.table_seed
        )
    }
}

/// Compiles `shape` for `machine`, simulates it and compares every output element, bit for bit,
/// with the reference.
fn check(shape: &Shape, machine: &Machine) -> Result<(), String> {
    let (spec, inst) = shape.workload();
    let expect = inst.reference(&spec);
    let sys = machine.system();
    let at = || format!("{} on {machine:?}", shape.describe());
    let compiled =
        compiler::compile(&spec, inst, sys.target_info()).map_err(|e| format!("compile: {e}\n{}", at()))?;
    let r = dae_sim::system::run(&sys, &compiled, &expect, chips().max_time, &SeedTree::new(1))
        .map_err(|e| format!("run: {e}\n{}", at()))?;
    r.verified.map_err(|e| format!("mismatch: {e}\n{}", at()))?;
    // The assembled tensor too: every core's rows in place. A bag cut across cores sums its
    // pieces' partial rows, a different order of the same terms: within the bound of
    // recursive summation, `2 n u sum |terms|` (table values below 1, weights below 4).
    let (_, inst) = shape.workload();
    let dim = shape.dim.max(1) as usize;
    let bound = |k: usize| {
        let g = k / dim;
        let n = inst.offsets.get(g + 1).zip(inst.offsets.get(g)).map_or(0, |(b, a)| b - a) as f32;
        if machine.split && shape.pooling != Pooling::Max {
            2.0 * n * n * 4.0 / (1u32 << 24) as f32
        } else {
            0.0
        }
    };
    // A NaN difference is not within.
    let within = |k: usize, a: f32, b: f32| (a - b).abs() <= bound(k);
    if r.outputs.len() != expect.len()
        || r.outputs
            .iter()
            .zip(&expect)
            .enumerate()
            .any(|(k, (a, b))| a.to_bits() != b.to_bits() && !within(k, *a, *b))
    {
        return Err(format!("assembled outputs {:?} differ from {expect:?}\n{}", r.outputs, at()));
    }
    Ok(())
}

fn pooled() -> impl Strategy<Value = (Pooling, bool)> {
    prop_oneof![
        Just((Pooling::Sum, false)),
        Just((Pooling::Sum, true)),
        Just((Pooling::Mean, false)),
        Just((Pooling::Max, false)),
    ]
}

fn weight() -> impl Strategy<Value = f32> {
    prop_oneof![(-16i32..=16).prop_map(|w| w as f32 / 8.0), -4.0f32..4.0]
}

fn lookup() -> impl Strategy<Value = Lookup> {
    (any::<bool>(), any::<u32>(), weight()).prop_map(|(hot, raw, weight)| Lookup { hot, raw, weight })
}

/// 0-5 lookups, and now and then 6-12 (more than the access unit has lanes: several lockstep
/// rounds per bag).
fn bag() -> impl Strategy<Value = Vec<Lookup>> {
    prop_oneof![
        6 => prop::collection::vec(lookup(), 0..=5),
        1 => prop::collection::vec(lookup(), 6..=12),
    ]
}

fn shape() -> impl Strategy<Value = Shape> {
    let dim = prop_oneof![
        3 => prop::sample::select(vec![1u32, 15, 16, 17, 20, 64]),
        2 => 1u32..=70,
    ];
    // One in four shapes is a GNN aggregation: one table of 2^3..2^8 vertex rows.
    let op = prop_oneof![3 => Just(Op::EmbeddingBag), 1 => Just(Op::GnnAggregate)];
    let padding = prop::option::weighted(0.3, 0u32..3);
    let dtype = prop::sample::select(vec![
        compiler::Dtype::F32,
        compiler::Dtype::F16,
        compiler::Dtype::Bf16,
        compiler::Dtype::Int8,
    ]);
    (op, pooled(), 1u32..=3, 1u64..=300, 3u32..=8, dim, 0u32..=6, (any::<u64>(), dtype), padding)
        .prop_flat_map(
            |(op, (pooling, weighted), tables, rows, scale, dim, batch, (table_seed, dtype), padding)| {
                let (tables, rows) = if op == Op::GnnAggregate { (1, 1 << scale) } else { (tables, rows) };
                // An int8 row's scale and bias follow its values on a 4-byte boundary.
                let dim = if dtype == compiler::Dtype::Int8 { dim.div_ceil(4) * 4 } else { dim };
                let padding = padding.filter(|_| op == Op::EmbeddingBag).map(|p| p % rows.min(3) as u32);
                let bags = (tables * batch) as usize;
                prop::collection::vec(bag(), bags).prop_map(move |bags| Shape {
                    op,
                    pooling,
                    weighted,
                    dtype,
                    tables,
                    rows,
                    dim,
                    batch,
                    bags,
                    table_seed,
                    padding,
                })
            },
        )
}

fn machine() -> impl Strategy<Value = Machine> {
    let names: Vec<&'static str> = Pass::ALL.iter().map(|p| p.name()).collect();
    let passes = prop_oneof![
        2 => (0u8..=3).prop_map(PassSet::Level),
        1 => prop::sample::subsequence(names, 0..=Pass::ALL.len()).prop_map(PassSet::List),
    ];
    (
        any::<bool>(),
        1u32..=3,
        prop::sample::select(vec![1u32, 2, 3, 4, 8, 16]),
        prop::sample::select(vec![1u32, 2, 3, 4, 8]),
        passes,
    )
        .prop_map(|(decoupled, cores, vector_lanes, au_lanes, passes)| Machine {
            decoupled,
            cores,
            vector_lanes,
            au_lanes,
            passes,
            split: false,
        })
}

proptest! {
    #![proptest_config(Config {
        cases: cases(),
        rng_seed: rng_seed(),
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
            "tests/compiler_props.proptest-regressions",
        ))),
        ..Config::default()
    })]

    #[test]
    fn random_shapes_compile_simulate_and_match_the_reference(shape in shape(), machine in machine()) {
        check(&shape, &machine).map_err(TestCaseError::fail)?;
    }

    /// Bags cut across 2 to 5 cores (`partition = "split"`): each piece's partial row verifies
    /// against the pieces' reference bit for bit, and the combined tensor lies within the
    /// rounding of a reordered sum of the workload's reference; shapes that cannot be cut keep
    /// whole bags.
    #[test]
    fn random_shapes_split_across_cores_match_the_reference(
        shape in shape(),
        machine in machine(),
        cores in 2u32..=5,
    ) {
        let machine = Machine { cores, split: true, ..machine };
        check(&shape, &machine).map_err(TestCaseError::fail)?;
    }
}

// ----- Deterministic corner cases: each on every level, decoupled and core-only. -----

/// Every `-O` level on both targets, 16 vector lanes and 4 access-unit lanes, on 1 and 2 cores.
fn every_machine() -> Vec<Machine> {
    let mut v = Vec::new();
    for level in 0..=3 {
        for decoupled in [true, false] {
            for cores in [1, 2] {
                v.push(Machine {
                    decoupled,
                    cores,
                    vector_lanes: 16,
                    au_lanes: 4,
                    passes: PassSet::Level(level),
                    split: false,
                });
            }
        }
    }
    v
}

/// A shape with the given bags (row ids; weights `0.5, 1.25, -0.75, ...` when `weighted`).
fn corner(pooling: Pooling, weighted: bool, tables: u32, rows: u64, dim: u32, bags: &[&[u32]]) -> Shape {
    let batch = bags.len() as u32 / tables;
    assert_eq!(batch * tables, bags.len() as u32, "tables * batch bags");
    let weights = [0.5f32, 1.25, -0.75, 2.0, 0.1, -1.5];
    let mut n = 0;
    let bags = bags
        .iter()
        .map(|b| {
            b.iter()
                .map(|&r| {
                    n += 1;
                    Lookup { hot: false, raw: r, weight: weights[n % weights.len()] }
                })
                .collect()
        })
        .collect();
    Shape {
        op: Op::EmbeddingBag,
        pooling,
        weighted,
        dtype: compiler::Dtype::F32,
        tables,
        rows,
        dim,
        batch,
        bags,
        table_seed: 0x5eed,
        padding: None,
    }
}

/// f16 and bf16 tables (2-byte rows, odd dims that leave rows 2-byte aligned only, tails),
/// weighted and by every pooling, on every level and target.
#[test]
fn narrow_tables_match_the_reference_everywhere() {
    for dtype in [compiler::Dtype::F16, compiler::Dtype::Bf16] {
        for (pooling, weighted, dim) in [
            (Pooling::Sum, true, 17),
            (Pooling::Mean, false, 20),
            (Pooling::Max, false, 3),
            (Pooling::Sum, false, 64),
        ] {
            let mut s = corner(
                pooling,
                weighted,
                2,
                40,
                dim,
                &[&[1, 39, 1], &[], &[0, 5], &[7, 7, 7, 2, 3, 4, 5, 6]],
            );
            s.dtype = dtype;
            check_everywhere(&s);
        }
    }
    // Int8 rows (dim a multiple of 4), dequantized as q * scale + bias, with padding too.
    for (pooling, weighted, dim, padding) in [
        (Pooling::Sum, true, 20, None),
        (Pooling::Mean, false, 4, Some(7)),
        (Pooling::Max, false, 36, Some(1)),
        (Pooling::Sum, false, 64, Some(0)),
    ] {
        let s = Shape {
            dtype: compiler::Dtype::Int8,
            padding,
            ..corner(pooling, weighted, 2, 40, dim, &[&[1, 39, 1], &[], &[0, 5], &[7, 7, 7, 2, 3, 4, 5, 6]])
        };
        check_everywhere(&s);
    }
}

fn check_everywhere(shape: &Shape) {
    let failures: Vec<String> = every_machine().iter().filter_map(|m| check(shape, m).err()).collect();
    assert!(failures.is_empty(), "{} of {} machines failed:\n{}", failures.len(), 16, failures.join("\n"));
}

#[test]
fn dim_1() {
    for (pooling, weighted) in
        [(Pooling::Sum, false), (Pooling::Sum, true), (Pooling::Mean, false), (Pooling::Max, false)]
    {
        check_everywhere(&corner(
            pooling,
            weighted,
            2,
            10,
            1,
            &[&[0, 1], &[2], &[], &[0, 0, 0], &[5], &[1, 2, 3, 4, 9]],
        ));
    }
}

#[test]
fn dim_17_with_16_lanes() {
    for (pooling, weighted) in [(Pooling::Sum, true), (Pooling::Mean, false), (Pooling::Max, false)] {
        check_everywhere(&corner(
            pooling,
            weighted,
            1,
            40,
            17,
            &[&[3, 39, 3], &[0], &[], &[17, 18, 19, 20, 21]],
        ));
    }
}

#[test]
fn empty_bags_at_the_start_and_the_end() {
    for pooling in [Pooling::Sum, Pooling::Mean, Pooling::Max] {
        check_everywhere(&corner(pooling, false, 1, 50, 20, &[&[], &[1, 2], &[3], &[]]));
        // Two tables: the empty bags are the first and last of each table.
        check_everywhere(&corner(pooling, false, 2, 50, 15, &[&[], &[4, 4], &[], &[], &[7], &[]]));
    }
}

#[test]
fn every_lookup_reads_the_same_row() {
    for (pooling, weighted) in [(Pooling::Sum, true), (Pooling::Mean, false), (Pooling::Max, false)] {
        check_everywhere(&corner(pooling, weighted, 1, 8, 16, &[&[7, 7, 7, 7, 7], &[7], &[7, 7]]));
    }
}

#[test]
fn max_pooling_of_negative_values() {
    // Rows of table 0 whose every column is negative, so each output element is the largest of
    // negative values (an initial 0 instead of f32::MIN would show).
    let (seed, dim) = (0x5eed_u64, 3u32);
    let negative: Vec<u32> =
        (0..200u32).filter(|&r| (0..dim).all(|k| table_value(seed, 0, r.into(), k) < 0.0)).take(4).collect();
    assert_eq!(negative.len(), 4, "enough all-negative rows among the first 200");
    let shape = corner(
        Pooling::Max,
        false,
        1,
        200,
        dim,
        &[&negative[..3], &[negative[3]], &[negative[1], negative[1]], &negative],
    );
    let (spec, inst) = shape.workload();
    assert!(inst.reference(&spec).iter().all(|&x| x < 0.0), "a maximum of negative values is negative");
    check_everywhere(&shape);
}

#[test]
fn mean_and_max_of_an_empty_bag_are_zero() {
    for pooling in [Pooling::Mean, Pooling::Max, Pooling::Sum] {
        let shape = corner(pooling, false, 1, 20, 20, &[&[], &[1], &[]]);
        let (spec, inst) = shape.workload();
        let reference = inst.reference(&spec);
        // PyTorch gives +0.0 (not -0.0) for an empty bag, in every mode.
        assert!(reference[..20].iter().chain(&reference[40..]).all(|x| x.to_bits() == 0));
        check_everywhere(&shape);
    }
}

/// The max of an empty bag is +0.0, as in PyTorch (it once came out as -0.0).
#[test]
fn max_of_an_empty_bag_is_positive_zero() {
    let shape = corner(Pooling::Max, false, 1, 20, 20, &[&[], &[1], &[]]);
    for m in every_machine() {
        check(&shape, &m).unwrap();
    }
}

#[test]
fn an_empty_batch_has_no_bags() {
    // batch = 0: no bags, offsets = [0], no indices; every core's range is empty.
    for pooling in [Pooling::Sum, Pooling::Max] {
        check_everywhere(&corner(pooling, false, 2, 5, 17, &[]));
    }
    check_everywhere(&corner(Pooling::Sum, true, 1, 5, 17, &[]));
}

#[test]
fn one_row_tables_and_single_lookups() {
    check_everywhere(&corner(Pooling::Sum, true, 3, 1, 64, &[&[0], &[0], &[0]]));
}

/// Message passing (`gnn_scatter`): every edge of a small R-MAT graph scatter-added into its
/// destination's row, in the edge list's order, on every machine; destinations with no edge
/// (most of a small power-law graph's) keep their zero rows.
#[test]
fn message_passing_scatters_every_edge_on_every_machine() {
    let spec: WorkloadSpec = toml::from_str(
        "name = 'scatter'\nop = 'gnn_scatter'\ndim = 17\ndtype = 'f32'\nbatch = 40\n\
         [graph]\ngenerator = 'rmat'\nscale = 6\nedge_factor = 4\n",
    )
    .expect("a valid workload");
    let spec = spec.resolved().expect("resolves");
    let inst = EmbeddingBagInstance::generate(&spec, &SeedTree::new(9));
    let edges = inst.edges.as_ref().expect("an edge list");
    assert!(!edges.is_empty() && edges.iter().all(|&(_, d)| d < 40));
    verify_on_every_machine(&spec, &inst, |_, _| false);
    // The split machines cut the graph's hubs: their edges scatter into pieces' rows.
    let m = Machine { cores: 4, split: true, ..every_machine()[0].clone() };
    let compiled = compiler::compile(&spec, inst.clone(), m.system().target_info()).expect("compiles");
    assert!(compiled.split.is_some_and(|s| s.cut_bags() > 0), "a hub is cut");
}

/// GraphSAGE-style sampling (`[graph] fanout`): aggregation and message passing over at most
/// `fanout` in-neighbours per destination, on every machine. The scattered edge list is the
/// sampled CSR's, edge for edge.
#[test]
fn sampled_neighbours_aggregate_and_scatter_on_every_machine() {
    for op in ["gnn_aggregate", "gnn_scatter"] {
        let spec: WorkloadSpec = toml::from_str(&format!(
            "name = 'sage'\nop = '{op}'\ndim = 17\ndtype = 'f32'\nbatch = 40\n\
             [graph]\ngenerator = 'rmat'\nscale = 6\nedge_factor = 8\nfanout = 3\n"
        ))
        .expect("a valid workload");
        let spec = spec.resolved().expect("resolves");
        assert_eq!(spec.bag_size, 3, "the expected bag is the fanout, below the mean in-degree");
        let inst = EmbeddingBagInstance::generate(&spec, &SeedTree::new(9));
        let sizes: Vec<u32> = inst.offsets.windows(2).map(|w| w[1] - w[0]).collect();
        assert!(sizes.iter().all(|&n| n <= 3) && sizes.contains(&3), "{sizes:?}");
        let full: WorkloadSpec = toml::from_str(&format!(
            "name = 'sage'\nop = '{op}'\ndim = 17\ndtype = 'f32'\nbatch = 40\n\
             [graph]\ngenerator = 'rmat'\nscale = 6\nedge_factor = 8\n"
        ))
        .expect("a valid workload");
        let full = EmbeddingBagInstance::generate(&full.resolved().expect("resolves"), &SeedTree::new(9));
        assert!(full.indices.len() > inst.indices.len(), "some bags were cut");
        if let Some(edges) = &inst.edges {
            // The sampled edges, grouped by destination in the list's order, are the CSR.
            let mut by_dst: Vec<Vec<u32>> = vec![Vec::new(); 40];
            for &(s, d) in edges {
                by_dst[d as usize].push(s);
            }
            let csr: Vec<u32> = by_dst.concat();
            assert_eq!(csr, inst.indices);
        }
        verify_on_every_machine(&spec, &inst, |_, _| false);
    }
}

/// Compiles and simulates `inst` on every machine and checks its outputs against the reference
/// (within its tolerance where the op has one); `may_refuse` says which compile errors are
/// expected.
fn verify_on_every_machine(
    spec: &WorkloadSpec,
    inst: &EmbeddingBagInstance,
    may_refuse: impl Fn(&Machine, &compiler::CompileError) -> bool,
) {
    let expect = inst.reference(spec);
    // Each machine, and the same with bags cut across two more cores.
    let machines = every_machine()
        .into_iter()
        .flat_map(|m| [m.clone(), Machine { cores: m.cores + 2, split: true, ..m }]);
    for m in machines {
        let sys = m.system();
        match compiler::compile(spec, inst.clone(), sys.target_info()) {
            Err(e) => assert!(may_refuse(&m, &e), "{} on {m:?}: {e}", spec.name),
            Ok(compiled) => {
                let r = dae_sim::system::run(&sys, &compiled, &expect, chips().max_time, &SeedTree::new(1))
                    .expect("runs");
                assert!(r.verified.is_ok(), "{} on {m:?}: {:?}", spec.name, r.verified);
            }
        }
    }
}

/// A bag cut across cores (`partition = "split"`) is checked against the workload's
/// reference, not only the pieces' own: a reference off in a cut bag's element, or in a whole
/// bag's, fails the run; the right one passes, and the pieces were cut.
#[test]
fn a_cut_bag_is_checked_against_the_workload_reference() {
    let long: Vec<u32> = (0..60).map(|k| k * 7 % 50).collect();
    let shape = corner(Pooling::Sum, true, 1, 50, 8, &[&[1, 2], &long, &[3], &[4, 5]]);
    let machine = Machine {
        decoupled: true,
        cores: 4,
        vector_lanes: 8,
        au_lanes: 4,
        passes: PassSet::Level(3),
        split: true,
    };
    let (spec, inst) = shape.workload();
    let expect = inst.reference(&spec);
    let sys = machine.system();
    let compiled = compiler::compile(&spec, inst, sys.target_info()).expect("compiles");
    assert!(compiled.split.as_ref().is_some_and(|s| s.cut_bags() == 1), "the long bag is cut");
    let run = |reference: &[f32]| {
        dae_sim::system::run(&sys, &compiled, reference, chips().max_time, &SeedTree::new(1))
            .expect("runs")
            .verified
    };
    assert_eq!(run(&expect), Ok(()));
    for k in [8 + 3, 3 * 8 + 1] {
        let mut off = expect.clone();
        off[k] += 0.25;
        let err = run(&off).expect_err("a wrong reference element fails");
        assert!(err.contains(&format!("out[{}][{}]", k / 8, k % 8)), "{err}");
    }
}

/// Sparse attention: distinct, sorted blocks of positions per query of each head, weighted by
/// drawn scores, on every machine.
#[test]
fn block_sparse_attention_on_every_machine() {
    let spec: WorkloadSpec = toml::from_str(
        "name = 'attention'\nop = 'sparse_attention'\ntables = 2\nrows = 64\ndim = 20\ndtype = 'f32'\n\
         batch = 3\nbag_size = 12\nblock = 4\n[indices]\ndistribution = 'zipf'\nalpha = 1.1\n",
    )
    .expect("a valid workload");
    let spec = spec.resolved().expect("resolves");
    let inst = EmbeddingBagInstance::generate(&spec, &SeedTree::new(4));
    for bag in inst.offsets.windows(2) {
        let rows = &inst.indices[bag[0] as usize..bag[1] as usize];
        assert_eq!(rows.len(), 12);
        // Ascending, distinct, in whole blocks of 4 consecutive positions.
        assert!(rows.windows(2).all(|w| w[0] < w[1]), "{rows:?}");
        assert!(rows.chunks(4).all(|b| b[0] % 4 == 0 && b.windows(2).all(|w| w[1] == w[0] + 1)), "{rows:?}");
    }
    verify_on_every_machine(&spec, &inst, |_, _| false);
}

/// Knowledge-graph scoring: every model against the true tail and corrupted ones. TransE must
/// match bit for bit, DistMult and ComplEx within the bound of their rounded sums; ComplEx's six
/// element streams per column exceed the unit's four operands per callback until bufferization
/// makes them three rows, so at `-O0` and `-O1` its callback continues in a second entry.
#[test]
fn knowledge_graph_scoring_on_every_machine() {
    for model in ["transe", "distmult", "complex"] {
        let spec: WorkloadSpec = toml::from_str(&format!(
            "name = 'kg'\nop = 'kg_score'\nmodel = '{model}'\nrows = 90\nrelations = 7\nnegatives = 3\n\
             dim = 20\ndtype = 'f32'\nbatch = 5\n[indices]\ndistribution = 'zipf'\nalpha = 1.2\n"
        ))
        .expect("a valid workload");
        let spec = spec.resolved().expect("resolves");
        let inst = EmbeddingBagInstance::generate(&spec, &SeedTree::new(6));
        assert_eq!(inst.indices.len(), 5 * 4);
        assert_eq!(inst.tolerance(&spec).is_none(), model == "transe");
        let expect = inst.reference(&spec);
        // The reference, checked by hand on the first candidate (the true tail) of triple 0.
        let kg = inst.kg.as_ref().expect("triples");
        let v = |table: u32, row: u32, k: u32| table_value(inst.table_seed, table, u64::from(row), k);
        let (h, r, t) = (kg.heads[0], kg.relations[0], inst.indices[0]);
        let exact: f64 = match model {
            "transe" => (0..20).map(|k| -f64::from((v(0, h, k) + v(1, r, k) - v(0, t, k)).abs())).sum(),
            "distmult" => {
                (0..20).map(|k| f64::from(v(0, h, k)) * f64::from(v(1, r, k)) * f64::from(v(0, t, k))).sum()
            }
            _ => (0..10)
                .map(|k| {
                    let (hr, hi, rr, ri, tr, ti) = (
                        v(0, h, k),
                        v(0, h, k + 10),
                        v(1, r, k),
                        v(1, r, k + 10),
                        v(0, t, k),
                        v(0, t, k + 10),
                    );
                    f64::from(hr * rr * tr + hi * rr * ti + hr * ri * ti - hi * ri * tr)
                })
                .sum(),
        };
        assert!((f64::from(expect[0]) - exact).abs() < 1e-5, "{model}: {} vs {exact}", expect[0]);
        if let Some(t) = inst.tolerance(&spec) {
            assert!(t.iter().all(|b| *b > 0.0 && *b < 1e-3), "{t:?}");
        }
        verify_on_every_machine(&spec, &inst, |_, _| false);
    }
}

/// PyTorch's `padding_idx`: a bag of padding only (0 for every pooling), padding first, last
/// and twice, and a bag without it, for each pooling and weighted sum, on every machine. Mean
/// divides by the lookups that are not padding, and max ignores padding rows even where they
/// are the largest.
#[test]
fn padding_lookups_are_left_out_of_their_bags() {
    let bags: &[&[u32]] = &[&[4, 4], &[4, 1, 2], &[2, 3, 4], &[1, 4, 4, 3], &[5], &[]];
    for (pooling, weighted) in
        [(Pooling::Sum, false), (Pooling::Sum, true), (Pooling::Mean, false), (Pooling::Max, false)]
    {
        let shape = Shape { padding: Some(4), ..corner(pooling, weighted, 2, 6, 17, bags) };
        let (spec, inst) = shape.workload();
        assert_eq!(spec.padding_idx, Some(4));
        let reference = inst.reference(&spec);
        assert!(
            reference[..17].iter().all(|x| x.to_bits() == 0),
            "a bag of padding only: {:?}",
            &reference[..17]
        );
        // Bag 1 is [4, 1, 2]: the rows 1 and 2 alone.
        let row = |r: u64, k: u32| table_value(0x5eed, 0, r, k);
        let w = |n: usize| if weighted { [0.5f32, 1.25, -0.75, 2.0, 0.1, -1.5][n % 6] } else { 1.0 };
        for k in 0..17 {
            let (a, b) = (w(4) * row(1, k), w(5) * row(2, k));
            let want = match pooling {
                Pooling::Sum => 0.0 + a + b,
                Pooling::Mean => (0.0 + a + b) * (1.0 / 2.0),
                Pooling::Max => f32::MIN.max(a).max(b),
            };
            assert_eq!(reference[17 + k as usize].to_bits(), want.to_bits(), "{pooling:?} column {k}");
        }
        check_everywhere(&shape);
    }
    // 2-byte rows whose tables end off a 4-byte boundary (5 x 17 x 2 bytes): the padding rows
    // start a row later.
    for (dtype, pooling) in [(compiler::Dtype::F16, Pooling::Max), (compiler::Dtype::Bf16, Pooling::Mean)] {
        let shape = Shape { padding: Some(4), dtype, ..corner(pooling, false, 1, 5, 17, bags) };
        check_everywhere(&shape);
    }
}

/// A TT-EmbeddingBag of `tables` tables with the given bags (row ids), factors and rank.
fn tt_workload(
    pooling: &str,
    tables: u32,
    row_factors: [u32; 3],
    dim_factors: [u32; 3],
    rank: u32,
    bags: &[Vec<u32>],
) -> (WorkloadSpec, EmbeddingBagInstance) {
    let batch = bags.len() as u32 / tables.max(1);
    let dim: u32 = dim_factors.iter().product();
    let spec: WorkloadSpec = toml::from_str(&format!(
        "name = 'tt'\nop = 'tt_embedding_bag'\npooling = '{pooling}'\ntables = {tables}\ndim = {dim}\n\
         dtype = 'f32'\nbatch = {}\nbag_size = 1\n[indices]\ndistribution = 'uniform'\n\
         [tt]\nrow_factors = {row_factors:?}\ndim_factors = {dim_factors:?}\nrank = {rank}\n",
        batch.max(1)
    ))
    .expect("a valid workload");
    // An empty batch (which `resolved` refuses, as a user's file should not have one but
    // `compile` takes).
    let spec = WorkloadSpec { batch, ..spec.resolved().expect("resolves") };
    let mut offsets = vec![0u32];
    let mut indices = Vec::new();
    for b in bags {
        indices.extend(b.iter().map(|&r| r % spec.rows as u32));
        offsets.push(indices.len() as u32);
    }
    let inst =
        EmbeddingBagInstance { offsets, indices, weights: None, kg: None, edges: None, table_seed: 0x77 };
    (spec, inst)
}

/// Element `col` of row `row` of table `table`, decompressed from its cores in f64 straight from
/// the definition (`compiler::TtShape`), independently of `compiler::tt`.
fn tt_value(spec: &WorkloadSpec, seed: u64, table: u32, row: u64, col: u64) -> f64 {
    let tt = spec.tt.as_ref().expect("a TT workload");
    let n: Vec<u64> = tt.row_factors.iter().map(|&f| u64::from(f)).collect();
    let d: Vec<u64> = tt.dim_factors.iter().map(|&f| u64::from(f)).collect();
    let rank = u64::from(tt.rank);
    let (i1, i2, i3) = (row / (n[1] * n[2]), row / n[2] % n[1], row % n[2]);
    let (a1, a2, a3) = (col / (d[1] * d[2]), col / d[2] % d[1], col % d[2]);
    let g2_start = n[0] * d[0];
    let g3_start = g2_start + n[1] * rank * d[1];
    let g = |stored: u64, r: u64| f64::from(table_value(seed, table, stored, r as u32));
    let mut sum = 0.0;
    for r1 in 0..rank {
        for r2 in 0..rank {
            sum += g(i1 * d[0] + a1, r1)
                * g(g2_start + (i2 * rank + r1) * d[1] + a2, r2)
                * g(g3_start + i3 * d[2] + a3, r2);
        }
    }
    sum
}

/// TT-EmbeddingBag: bags of 0, 1 and several lookups (a row twice in a bag, the last row), ranks
/// below, at and past the vector length, dims of 1 and not a multiple of the lanes, several
/// tables and mean pooling, on every machine, within the bound of its rounded sums; the
/// reference itself is checked against a decompression written from the definition.
#[test]
fn tt_embedding_bags_on_every_machine() {
    let bags = |rows: u32| vec![vec![], vec![3], vec![rows - 1, 0, rows - 1], vec![5, 6]];
    for (pooling, tables, row_factors, dim_factors, rank) in [
        ("sum", 2, [3, 4, 5], [2, 3, 1], 5),
        ("mean", 1, [2, 2, 7], [1, 4, 3], 16),
        ("sum", 1, [1, 9, 1], [1, 1, 1], 20),
    ] {
        let rows: u32 = row_factors.iter().product();
        let all: Vec<Vec<u32>> = (0..tables).flat_map(|_| bags(rows)).collect();
        let (spec, inst) = tt_workload(pooling, tables, row_factors, dim_factors, rank, &all);
        let expect = inst.reference(&spec);
        let bounds = inst.tolerance(&spec).expect("TT sums round: a bound per element");
        let dim = spec.dim as usize;
        for (g, bag) in all.iter().enumerate() {
            let table = g as u32 / spec.batch;
            for col in 0..dim {
                let sum: f64 =
                    bag.iter().map(|&r| tt_value(&spec, 0x77, table, u64::from(r), col as u64)).sum();
                let exact = if pooling == "mean" { sum / bag.len().max(1) as f64 } else { sum };
                let (got, bound) = (f64::from(expect[g * dim + col]), f64::from(bounds[g * dim + col]));
                assert!(
                    (got - exact).abs() <= 1e-6 * exact.abs().max(1.0),
                    "bag {g} col {col}: {got} vs {exact}"
                );
                assert!(bound >= 0.0 && bound < 1e-3 * exact.abs().max(1.0), "bound {bound} for {exact}");
            }
        }
        assert!(expect[..dim].iter().all(|&x| x.to_bits() == 0), "an empty bag is +0.0");
        verify_on_every_machine(&spec, &inst, |_, _| false);
    }
}

/// A random TT-EmbeddingBag: tables, row factors, dim factors, rank, bags, mean pooling.
type TtCase = (u32, [u32; 3], [u32; 3], u32, Vec<Vec<u32>>, bool);

/// A random TT-EmbeddingBag (run on a random machine).
fn tt_case() -> impl Strategy<Value = TtCase> {
    (
        1u32..=2,
        [1u32..=5, 1u32..=5, 1u32..=5],
        [1u32..=4, 1u32..=4, 1u32..=4],
        1u32..=20,
        prop::collection::vec(prop::collection::vec(any::<u32>(), 0..=4), 0..=3),
        any::<bool>(),
    )
        .prop_map(|(tables, n, d, rank, bags, mean)| {
            // The same bags for every table.
            let all = (0..tables).flat_map(|_| bags.clone()).collect();
            (tables, n, d, rank, all, mean)
        })
}

proptest! {
    #![proptest_config(Config {
        cases: cases() / 4,
        rng_seed: rng_seed(),
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
            "tests/compiler_props.proptest-regressions",
        ))),
        ..Config::default()
    })]

    #[test]
    fn random_tt_shapes_match_the_reference((tables, n, d, rank, bags, mean) in tt_case(), machine in machine()) {
        let (spec, inst) = tt_workload(if mean { "mean" } else { "sum" }, tables, n, d, rank, &bags);
        let expect = inst.reference(&spec);
        let sys = machine.system();
        let compiled = compiler::compile(&spec, inst, sys.target_info())
            .map_err(|e| TestCaseError::fail(format!("compile: {e} on {machine:?}")))?;
        let r = dae_sim::system::run(&sys, &compiled, &expect, chips().max_time, &SeedTree::new(1))
            .map_err(|e| TestCaseError::fail(format!("run: {e} on {machine:?}")))?;
        prop_assert!(r.verified.is_ok(), "{:?} on {machine:?}", r.verified);
    }
}

/// The asymmetric table-to-core mapping (`partition = "tables"`): tables that differ (two tiny,
/// hot ones and two large, uniform ones, `[[table_indices]]`) map to cores other than the
/// default partition's, and the outputs still verify on every machine, 3 cores included.
#[test]
fn the_table_mapping_verifies_on_every_machine() {
    let spec: WorkloadSpec = toml::from_str(
        "name = 'asym'\nop = 'embedding_bag'\ntables = 4\nrows = 5000\ndim = 20\ndtype = 'f32'\n\
         batch = 12\nbag_size = 6\n[indices]\ndistribution = 'uniform'\n\
         [[table_indices]]\ntables = 2\ndistribution = 'zipf'\nalpha = 1.3\nrows = 8\n",
    )
    .expect("a valid workload");
    let spec = spec.resolved().expect("resolves");
    let inst = EmbeddingBagInstance::generate(&spec, &SeedTree::new(6));
    let expect = inst.reference(&spec);
    let mut machines = every_machine();
    machines.push(Machine {
        decoupled: true,
        cores: 3,
        vector_lanes: 16,
        au_lanes: 4,
        passes: PassSet::Level(3),
        split: false,
    });
    let mut differs = false;
    for m in machines {
        let mut sys = m.system();
        sys.partition = dae_sim::config::schema::PartitionSetting::Tables;
        let target = sys.target_info();
        assert!(matches!(target.partition, compiler::Partition::Tables(_)));
        let compiled = compiler::compile(&spec, inst.clone(), target).expect("compiles");
        let ranges: Vec<_> = compiled.jobs.iter().map(|j| j.bags.clone()).collect();
        differs |= ranges != compiler::partition_by_cost(&inst.offsets, m.cores);
        let r = dae_sim::system::run(&sys, &compiled, &expect, chips().max_time, &SeedTree::new(1))
            .expect("runs");
        assert!(r.verified.is_ok(), "{m:?}: {:?}", r.verified);
    }
    assert!(differs, "the table mapping never differed from the default partition");
}
