//! Hand-written programs: the shipped templates in `programs/` instantiate for every core of
//! small workloads of their op family, and bad templates are errors naming the template, the
//! line and what is wrong. (That the programs compute the right outputs is checked by running
//! them: the root crate's `tests/hand_programs.rs`.)

use access_unit::{Bounds, StreamKind};
use compiler::hand::{self, HandError, HandPrograms, Template};
use compiler::{
    CompiledWorkload, EmbeddingBagInstance, Partition, Passes, Target, TargetInfo, WorkloadSpec, compile,
};
use exec_core::{Inst, Reg};
use sim_core::SeedTree;
use std::path::Path;

const LANES: u32 = 16;
const AU_LANES: u32 = 8;

/// The shipped templates `programs/<family>.{au,core}`.
fn shipped(family: &str) -> HandPrograms {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../programs");
    let read = |ext: &str| {
        let path = dir.join(format!("{family}.{ext}"));
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        Template { name: format!("programs/{family}.{ext}"), text }
    };
    HandPrograms { au: read("au"), core: read("core") }
}

/// A small embedding bag (3 tables, dim 20: one full vector and a partial one), with `extra`
/// top-level keys.
fn spec(extra: &str) -> WorkloadSpec {
    let text = format!(
        "name = \"t\"\nop = \"embedding_bag\"\ntables = 3\nrows = 100\ndim = 20\ndtype = \"f32\"\n\
         batch = 5\nbag_size = 4\n{extra}\n[indices]\ndistribution = \"uniform\"\n"
    );
    toml::from_str::<WorkloadSpec>(&text).unwrap().resolved().unwrap()
}

/// A small GNN aggregation: bags of every size, dim 100 (six full vectors and a partial one).
fn gnn() -> WorkloadSpec {
    let text = "name = \"g\"\nop = \"gnn_aggregate\"\ndim = 100\ndtype = \"f32\"\nbatch = 40\n\
                [graph]\ngenerator = \"rmat\"\nscale = 8\nedge_factor = 4\n";
    toml::from_str::<WorkloadSpec>(text).unwrap().resolved().unwrap()
}

fn compiled(spec: &WorkloadSpec, cores: u32) -> CompiledWorkload {
    let inst = EmbeddingBagInstance::generate(spec, &SeedTree::new(3));
    let target = TargetInfo {
        target: Target::Decoupled,
        cores,
        vector_lanes: LANES,
        au_lanes: AU_LANES,
        au_storage_per_lane: 0,
        passes: Passes::default(),
        partition: Partition::Cost,
    };
    compile(spec, inst, target).unwrap()
}

fn instantiate(c: &CompiledWorkload, p: &HandPrograms) -> Result<CompiledWorkload, HandError> {
    hand::instantiate(c, &p.au, &p.core, LANES, AU_LANES)
}

#[test]
fn every_shipped_template_instantiates_with_each_cores_bags_and_addresses() {
    for (family, spec) in [
        ("embedding-bag-sum", spec("")),
        ("embedding-bag-sum", gnn()),
        ("embedding-bag-weighted", spec("weights = true")),
        ("embedding-bag-mean", spec("pooling = \"mean\"")),
        ("embedding-bag-max", spec("pooling = \"max\"")),
    ] {
        let p = shipped(family);
        assert_eq!(hand::check(&spec, &p, LANES, AU_LANES), Ok(()), "{family}");
        // 4 cores, and more cores than bags: some cores get none.
        for cores in [4, spec.bags() as u32 + 3] {
            let c = compiled(&spec, cores);
            let h = instantiate(&c, &p).unwrap_or_else(|e| panic!("{family}: {e}"));
            assert_eq!((h.layout, &h.regions, h.jobs.len()), (c.layout, &c.regions, c.jobs.len()));
            let chunks = spec.dim.div_ceil(LANES) as usize;
            for (job, orig) in h.jobs.iter().zip(&c.jobs) {
                let what = format!("{family}, {cores} cores, bags {:?}", job.bags);
                assert_eq!(
                    (&job.bags, job.output_base, job.output_elems),
                    (&orig.bags, orig.output_base, orig.output_elems)
                );
                let au = job.au.as_ref().expect("an access-unit program");
                // The core's bag range is the outer traversal, whose text shows it.
                assert_eq!(au.tus[0].bounds, Bounds::Dense { begin: job.bags.start, end: job.bags.end });
                assert!(au.to_string().contains(&format!("dense {}..{}", job.bags.start, job.bags.end)));
                // The layout's addresses: offsets, rows and (weighted) the weights.
                let bases: Vec<u64> = au
                    .streams
                    .iter()
                    .filter_map(|s| match s.kind {
                        StreamKind::Load { base, .. } | StreamKind::Row { base, .. } => Some(base),
                        _ => None,
                    })
                    .collect();
                for b in [c.layout.offsets, c.layout.offsets + 4, c.layout.indices, c.layout.tables] {
                    assert!(bases.contains(&b), "{what}: no stream reads {b:#x}");
                }
                assert_eq!(c.layout.weights.is_some_and(|w| bases.contains(&w)), spec.weights, "{what}");
                // The core writes its own output rows, every element of a row once per store.
                assert_eq!(job.core.vector_lanes, LANES);
                assert_eq!(job.core.insts[0], Inst::Li { rd: Reg(3), imm: job.output_base as i64 }, "{what}");
                let stores: Vec<u32> = job
                    .core
                    .insts
                    .iter()
                    .filter_map(|i| match i {
                        Inst::VStore { count, .. } => Some(*count),
                        _ => None,
                    })
                    .collect();
                assert_eq!(stores.len(), chunks, "{what}");
                assert_eq!(stores.iter().sum::<u32>(), spec.dim, "{what}");
            }
        }
    }
}

fn template(name: &str, text: &str) -> Template {
    Template { name: name.into(), text: text.into() }
}

/// The shipped sum programs with one of the two replaced.
fn with_core(text: &str) -> HandPrograms {
    HandPrograms { core: template("x.core", text), ..shipped("embedding-bag-sum") }
}

fn with_au(text: &str) -> HandPrograms {
    HandPrograms { au: template("x.au", text), ..shipped("embedding-bag-sum") }
}

#[test]
fn an_unknown_placeholder_is_an_error_naming_it_and_its_line() {
    let c = compiled(&spec(""), 2);
    let p = with_core(".core lanes={lanes}\n    # {not checked in comments}\n    li r1, {bogus}\n    halt\n");
    let e = instantiate(&c, &p).unwrap_err();
    assert!(
        matches!(&e, HandError::UnknownPlaceholder { template, line: 3, name, .. }
            if template == "x.core" && name == "bogus"),
        "{e:?}"
    );
    let text = e.to_string();
    assert!(text.starts_with("x.core:3: unknown placeholder {bogus} (known: offsets, "), "{text}");
    assert_eq!(hand::check(&spec(""), &p, LANES, AU_LANES), Err(e));
    // A per-chunk placeholder outside a block, and a brace left open.
    let e = instantiate(&c, &with_core(".core lanes={lanes}\n    vzero v{acc}\n")).unwrap_err();
    assert_eq!(e.to_string(), "x.core:2: {acc}: only inside a `.for chunk` block");
    let e = instantiate(&c, &with_core(".core lanes={lanes\n    halt\n")).unwrap_err();
    assert_eq!(e.to_string(), "x.core:1: unclosed `{` in \".core lanes={lanes\"");
}

#[test]
fn weights_of_an_unweighted_workload_are_an_error() {
    let weighted = shipped("embedding-bag-weighted");
    let line = weighted.au.text.lines().position(|l| l.split('#').next().unwrap().contains("{weights}"));
    // Not a bad template (`check` passes it), but it cannot serve this workload.
    assert_eq!(hand::check(&spec(""), &weighted, LANES, AU_LANES), Ok(()));
    let e = instantiate(&compiled(&spec(""), 2), &weighted).unwrap_err();
    assert_eq!(
        e,
        HandError::Unavailable {
            template: "programs/embedding-bag-weighted.au".into(),
            line: line.unwrap() + 1,
            name: "weights".into(),
            why: "the workload has no per-lookup weights (`weights = true`)".into(),
        }
    );
}

#[test]
fn parse_errors_point_at_the_template_line_and_the_core() {
    let c = compiled(&spec(""), 3);
    let core =
        ".core lanes={lanes}\n.for chunk   # a block\n    vzero v{acc}\n    vfrob v{acc}\n.end\n    halt\n";
    let e = instantiate(&c, &with_core(core)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "x.core:4: unknown instruction \"vfrob\" (instantiated for core 0)",
        "the expanded text's line 3 is the template's line 4"
    );
    let au = ".au\ntu t0 = dense {bag_start}..{bag_end}\ns0 = ite t0\ns1 = alu.mod s0, 2 in t0\n";
    let e = instantiate(&c, &with_au(au)).unwrap_err();
    assert!(
        matches!(&e, HandError::Parse { template, line: 4, core: 0, message }
            if template == "x.au" && message.contains("unknown alu operation \"mod\"")),
        "{e:?}"
    );
    // Too many chunks for the registers: v32 does not exist.
    let wide = spec("").clone();
    let wide = WorkloadSpec { dim: 16 * 17, ..wide };
    let e = hand::check(&wide, &shipped("embedding-bag-sum"), LANES, AU_LANES).unwrap_err();
    assert!(e.to_string().contains("register v32 out of range"), "{e}");
    // A core template for other vector lengths.
    let e = instantiate(&c, &with_core(".core lanes=8\n    halt\n")).unwrap_err();
    assert_eq!(e, HandError::Lanes { template: "x.core".into(), found: 8, expected: LANES });
}

#[test]
fn chunk_blocks_are_closed_flat_and_known() {
    let c = compiled(&spec(""), 1);
    for (text, line, message) in [
        (".core lanes=16\n.for chunk\n    vzero v{acc}\n", 2, "`.for chunk` without its `.end`"),
        (".core lanes=16\n    halt\n.end\n", 3, "`.end` without a block"),
        (".core lanes=16\n.for chunk\n.for chunk\n.end\n.end\n", 3, "`.for` blocks do not nest"),
        (".core lanes=16\n.for chunk\n.for lane\n.end\n.end\n", 3, "`.for` blocks do not nest"),
        (".core lanes=16\n.for lane\n    halt\n", 2, "`.for lane` without its `.end`"),
        (
            ".core lanes=16\n.for row\n.end\n",
            2,
            "unknown directive `.for row` (`.for chunk`, `.for half`, `.for lane`, `.for NAME in COUNT`, \
             `.let NAME = VALUE`, `.if CONDITION`, `.else`, `.end`)",
        ),
        (".core lanes=16\n.if multi_table\n    halt\n", 2, "`.if` without its `.end`"),
        (".core lanes=16\n.else\n", 2, "`.else` without an `.if`"),
        (
            ".core lanes=16\n.if sparse\n.end\n",
            2,
            "unknown condition `sparse` (multi_table, weighted, mean, or an expression)",
        ),
        (".core lanes=16\n.if weighted\n.else\n.else\n.end\n", 4, "a second `.else` for one `.if`"),
    ] {
        let e = instantiate(&c, &with_core(text)).unwrap_err();
        assert_eq!(e, HandError::Syntax { template: "x.core".into(), line, message: message.into() });
    }
    // Each chunk: its offset, lanes (the last one partial) and registers.
    let p = with_core(
        ".core lanes={lanes}\n.for chunk\n    vld v{tmp}, [r1 + {chunk_offset}], {chunk_lanes}\n\
         .end\n    vzero v{vfree}\n    halt\n",
    );
    let job = &instantiate(&c, &p).unwrap().jobs[0];
    assert_eq!(
        exec_core::print(&job.core).lines().collect::<Vec<_>>()[1..4],
        ["    vld v2, [r1 + 0], 16", "    vld v3, [r1 + 64], 4", "    vzero v4",]
    );
}

#[test]
fn if_blocks_keep_what_the_workload_needs_and_streams_are_renumbered() {
    // The shipped templates leave the table base out for one table: no index arithmetic.
    let alu = |c: &CompiledWorkload| {
        let au = c.jobs[0].au.as_ref().unwrap();
        au.streams.iter().filter(|s| matches!(s.kind, StreamKind::Alu { .. })).count()
    };
    let sum = shipped("embedding-bag-sum");
    assert_eq!(alu(&instantiate(&compiled(&spec(""), 2), &sum).unwrap()), 3);
    let one = instantiate(&compiled(&gnn(), 2), &sum).unwrap();
    assert_eq!(alu(&one), 0);
    let au = one.jobs[0].au.as_ref().unwrap().to_string();
    assert!(au.contains("s5 = load.row 400 [0x") && au.contains("on t1 iter -> 0 (s5)"), "{au}");
    // Lines of a branch not taken may name values the workload lacks, but no unknown name.
    let c = compiled(&spec(""), 1);
    let core = ".core lanes=16\n.if weighted\n    li r1, {weights}\n.else\n    halt\n.end\n";
    let h = instantiate(&c, &with_core(core)).unwrap();
    assert_eq!(exec_core::print(&h.jobs[0].core), ".core lanes=16\n    halt\n");
    let e = instantiate(&c, &with_core(&core.replace("{weights}", "{weight}"))).unwrap_err();
    assert!(matches!(e, HandError::UnknownPlaceholder { line: 3, .. }), "{e:?}");
    // A reference to a stream an `.if` left out is an error, not another stream.
    let au = ".au\ntu t0 = dense {bag_start}..{bag_end}\ns0 = ite t0\n.if weighted\n\
              s1 = alu.add s0, 1 in t0\n.end\ns2 = alu.add s1, 1 in t0 # uses s1\n";
    let e = instantiate(&c, &with_au(au)).unwrap_err();
    assert_eq!(e.to_string(), "x.au:7: s1 is not defined (left out by an `.if`?)");
}

/// Placeholders of one op family only: message passing's and knowledge-graph scoring's.
const SCATTER_ONLY: &[&str] = &["src", "dst", "edge_start", "edge_end", "edges"];
const KG_ONLY: &[&str] = &["heads", "rels", "relation_table", "relations", "candidates", "negatives"];
/// TT-EmbeddingBag's.
const TT_ONLY: &[&str] = &[
    "rank",
    "rank_bytes",
    "rank_chunks",
    "d1",
    "d2",
    "d3",
    "n1",
    "n2",
    "n3",
    "stride1",
    "stride2",
    "g1_start",
    "g2_start",
    "g3_start",
    "g1_rows",
    "g2_rows",
    "g3_rows",
    "slice_rows",
    "tt_rows",
    "tt_scratch",
    "tt_scratch_bytes",
    "tt_acc",
];

/// A core template with one `li` per name in `names`, and one per block placeholder.
fn li_template(names: &[&str]) -> String {
    let mut core = ".core lanes={lanes}\n".to_string();
    for name in names {
        core += &format!("    li r1, {{{name}}}\n");
    }
    for (block, names) in [
        ("chunk", hand::CHUNK_PLACEHOLDERS),
        ("half", hand::HALF_PLACEHOLDERS),
        ("lane", hand::LANE_PLACEHOLDERS),
    ] {
        core += &format!(".for {block}\n");
        for name in names {
            core += &format!("    li r1, {{{name}}}\n");
        }
        core += ".end\n";
    }
    core + "    halt\n"
}

#[test]
fn every_listed_placeholder_has_a_value() {
    let mut core = ".core lanes={lanes}\n".to_string();
    for name in hand::PLACEHOLDERS {
        core += &format!("    li r1, {{{name}}}\n");
    }
    core += ".for chunk\n";
    for name in hand::CHUNK_PLACEHOLDERS {
        core += &format!("    li r1, {{{name}}}\n");
    }
    core += ".end\n    halt\n";
    let c = compiled(&spec("weights = true"), 2);
    let bag_start = Inst::Li { rd: Reg(1), imm: c.jobs[1].bags.start as i64 };
    // A weighted bag has every placeholder but message passing's, knowledge-graph scoring's and
    // TT-EmbeddingBag's.
    let generic: Vec<&str> = hand::PLACEHOLDERS
        .iter()
        .copied()
        .filter(|n| !SCATTER_ONLY.contains(n) && !KG_ONLY.contains(n) && !TT_ONLY.contains(n))
        .collect();
    let lis = |h: &CompiledWorkload, job: usize| {
        h.jobs[job].core.insts.iter().filter(|i| matches!(i, Inst::Li { .. })).count()
    };
    let h = instantiate(&c, &with_core(&li_template(&generic))).unwrap();
    assert_eq!(h.jobs[1].core.insts[8], bag_start, "{{bag_start}} is the ninth placeholder");
    let chunks = spec("").dim.div_ceil(LANES) as usize;
    let per_block = chunks * hand::CHUNK_PLACEHOLDERS.len()
        + (spec("").dim / 2).div_ceil(LANES) as usize * hand::HALF_PLACEHOLDERS.len()
        + LANES as usize * hand::LANE_PLACEHOLDERS.len();
    assert_eq!(lis(&h, 1), generic.len() + per_block);
    for name in SCATTER_ONLY.iter().chain(KG_ONLY).chain(TT_ONLY) {
        let e = instantiate(&c, &with_core(&li_template(&[name]))).unwrap_err();
        assert!(matches!(&e, HandError::Unavailable { line: 2, name: n, .. } if n == name), "{e:?}");
    }
    // Message passing and knowledge-graph scoring have theirs (and the generic ones).
    for (spec, only) in
        [(scatter(2), SCATTER_ONLY), (kg("distmult", 7, 20), KG_ONLY), (tt(2, [2, 3, 2], 5, ""), TT_ONLY)]
    {
        let names: Vec<&str> = generic.iter().chain(only).copied().filter(|&n| n != "weights").collect();
        let h = instantiate(&compiled(&spec, 3), &with_core(&li_template(&names))).unwrap();
        assert!(lis(&h, 0) > names.len(), "{}", spec.name);
    }
}

/// GNN message passing over a small power-law graph, dim 20 (a full vector and a partial one),
/// `batch` destinations.
fn scatter(batch: u32) -> WorkloadSpec {
    let text = format!(
        "name = \"s\"\nop = \"gnn_scatter\"\ndim = 20\ndtype = \"f32\"\nbatch = {batch}\n\
         [graph]\ngenerator = \"rmat\"\nscale = 8\nedge_factor = 4\n"
    );
    toml::from_str::<WorkloadSpec>(&text).unwrap().resolved().unwrap()
}

/// Knowledge-graph scoring with `model`, `batch` triples of 4 negatives, rows of `dim`.
fn kg(model: &str, batch: u32, dim: u32) -> WorkloadSpec {
    let text = format!(
        "name = \"k\"\nop = \"kg_score\"\nmodel = \"{model}\"\nrows = 300\nrelations = 7\n\
         negatives = 4\ndim = {dim}\ndtype = \"f32\"\nbatch = {batch}\n\
         [indices]\ndistribution = \"uniform\"\n"
    );
    toml::from_str::<WorkloadSpec>(&text).unwrap().resolved().unwrap()
}

#[test]
fn each_workload_names_its_family() {
    assert_eq!(hand::family(&spec("")), "embedding-bag-sum");
    assert_eq!(hand::family(&gnn()), "embedding-bag-sum");
    assert_eq!(hand::family(&spec("weights = true")), "embedding-bag-weighted");
    assert_eq!(hand::family(&spec("pooling = \"mean\"")), "embedding-bag-mean");
    assert_eq!(hand::family(&spec("pooling = \"max\"")), "embedding-bag-max");
    assert_eq!(hand::family(&scatter(10)), "gnn-scatter");
    assert_eq!(hand::family(&kg("transe", 2, 8)), "kg-transe");
    assert_eq!(hand::family(&kg("distmult", 2, 8)), "kg-distmult");
    assert_eq!(hand::family(&kg("complex", 2, 8)), "kg-complex");
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs/workloads/sparse-attention.toml"),
    )
    .unwrap();
    let attention = toml::from_str::<WorkloadSpec>(&text).unwrap().resolved().unwrap();
    assert_eq!(hand::family(&attention), "embedding-bag-weighted", "a weighted sum bag per query");
}

#[test]
fn message_passing_cores_walk_their_own_edges() {
    let spec = scatter(10);
    let p = shipped("gnn-scatter");
    assert_eq!(hand::check(&spec, &p, LANES, AU_LANES), Ok(()));
    // More cores than destinations: some cores have no edges.
    for cores in [1, 3, 13] {
        let c = compiled(&spec, cores);
        let h = instantiate(&c, &p).unwrap_or_else(|e| panic!("{cores} cores: {e}"));
        let edges = c.instance.edges.as_ref().unwrap();
        let mut next = 0;
        for job in &h.jobs {
            let au = job.au.as_ref().unwrap();
            let Bounds::Dense { begin, end } = au.tus[0].bounds else { panic!("{au}") };
            assert_eq!(begin, next, "{cores} cores: the ranges tile the edge list");
            let into = edges.iter().filter(|&&(_, d)| job.bags.contains(&u64::from(d))).count() as u64;
            assert_eq!(end - begin, into, "{cores} cores, bags {:?}", job.bags);
            next = end;
        }
        assert_eq!(next, edges.len() as u64);
        // The destination's row and the source's row: the dst list and the feature table.
        let au = h.jobs[0].au.as_ref().unwrap();
        let bases: Vec<u64> = au
            .streams
            .iter()
            .filter_map(|s| match s.kind {
                StreamKind::Load { base, .. } | StreamKind::Row { base, .. } => Some(base),
                _ => None,
            })
            .collect();
        assert_eq!(bases, [c.layout.indices, c.layout.dst.unwrap(), c.layout.tables]);
    }
}

#[test]
fn knowledge_graph_cores_store_one_score_per_candidate() {
    for model in ["transe", "distmult", "complex"] {
        let spec = kg(model, 5, 20);
        let p = shipped(&format!("kg-{model}"));
        assert_eq!(hand::check(&spec, &p, LANES, AU_LANES), Ok(()), "{model}");
        for cores in [2, 7] {
            let c = compiled(&spec, cores);
            let h = instantiate(&c, &p).unwrap_or_else(|e| panic!("{model}: {e}"));
            for job in &h.jobs {
                assert_eq!(job.output_elems, (job.bags.end - job.bags.start) * 5);
                assert_eq!(job.core.insts[0], Inst::Li { rd: Reg(3), imm: job.output_base as i64 });
                let end = job.output_base + job.output_elems * 4;
                assert_eq!(job.core.insts[1], Inst::Li { rd: Reg(4), imm: end as i64 }, "{model}");
                let au = job.au.as_ref().unwrap();
                assert_eq!(au.tus[0].bounds, Bounds::Dense { begin: job.bags.start, end: job.bags.end });
            }
        }
    }
    // ComplEx pairs each vector of the real half with the imaginary one: 20 columns, 10 a half.
    let c = compiled(&kg("complex", 2, 20), 1);
    let core = exec_core::print(&instantiate(&c, &shipped("kg-complex")).unwrap().jobs[0].core);
    assert!(core.contains("vldq v5, [r2 + 0], 10\n") && core.contains("vldq v6, [r2 + 40], 10\n"), "{core}");
}

#[test]
fn a_placeholder_the_workload_lacks_is_an_error_naming_the_template_and_line() {
    let bag = compiled(&spec(""), 2);
    let line_of = |text: &str, name: &str| {
        text.lines().position(|l| l.split('#').next().unwrap().contains(&format!("{{{name}}}"))).unwrap() + 1
    };
    let p = shipped("gnn-scatter");
    let e = instantiate(&bag, &p).unwrap_err();
    assert_eq!(
        e,
        HandError::Unavailable {
            template: "programs/gnn-scatter.au".into(),
            line: line_of(&p.au.text, "edge_start"),
            name: "edge_start".into(),
            why: "the workload has no edge list (only op = \"gnn_scatter\" has)".into(),
        }
    );
    assert!(e.to_string().starts_with("programs/gnn-scatter.au:"), "{e}");
    let p = shipped("kg-distmult");
    let e = instantiate(&bag, &p).unwrap_err();
    assert_eq!(
        e,
        HandError::Unavailable {
            template: "programs/kg-distmult.au".into(),
            line: line_of(&p.au.text, "candidates"),
            name: "candidates".into(),
            why: "the workload has no triples (only op = \"kg_score\" has)".into(),
        }
    );
    // Templates of another family are not bad templates: `check` passes them.
    assert_eq!(hand::check(&spec(""), &p, LANES, AU_LANES), Ok(()));
    // Halves of an odd row.
    let odd = compiled(&WorkloadSpec { dim: 21, ..spec("") }, 1);
    let e = instantiate(&odd, &with_core(".core lanes={lanes}\n    li r1, {half}\n    halt\n")).unwrap_err();
    assert_eq!(e.to_string(), "x.core:2: {half}: dim = 21 is odd: a row has no halves");
    let e = instantiate(&odd, &with_core(".core lanes={lanes}\n.for half\n.end\n    halt\n")).unwrap_err();
    assert_eq!(e.to_string(), "x.core:2: `.for half`: dim = 21 is odd: a row has no halves");
    let e = instantiate(&odd, &with_core(".core lanes={lanes}\n    li r1, {lane}\n    halt\n")).unwrap_err();
    assert_eq!(e.to_string(), "x.core:2: {lane}: only inside a `.for lane` block");
    let e = instantiate(&odd, &with_core(".core lanes={lanes}\n.for lane\n    li r1, {acc}\n.end\n"))
        .unwrap_err();
    assert_eq!(e.to_string(), "x.core:3: {acc}: only inside a `.for chunk` block");
}

#[test]
fn lane_and_half_blocks_repeat_per_lane_and_per_vector_of_half_a_row() {
    // dim 20 at 16 lanes: halves of 10, one vector each; 16 lanes.
    let c = compiled(&spec(""), 1);
    let p = with_core(
        ".core lanes={lanes}\n.for half\n    vldq v{re}, [r1 + {chunk_offset}], {chunk_lanes}\n\
         vldq v{im}, [r1 + {imag_offset}], {chunk_lanes}\n.end\n.for lane\n    vext r2, v0, {lane}\n.end\n\
         li r3, {halves}\n    halt\n",
    );
    let core = exec_core::print(&instantiate(&c, &p).unwrap().jobs[0].core);
    let lines: Vec<&str> = core.lines().collect();
    assert_eq!(lines[1..3], ["    vldq v0, [r1 + 0], 10", "    vldq v1, [r1 + 40], 10"]);
    assert_eq!(lines[3..19].iter().filter(|l| l.starts_with("    vext r2, v0, ")).count(), 16);
    assert_eq!(lines[18], "    vext r2, v0, 15");
    assert_eq!(lines[19], "    li r3, 1");
}

/// A small TT-EmbeddingBag: `tables` tables of 8 x 9 x 10 rows, dim `d1 x d2 x d3`, `rank`.
fn tt(tables: u32, dims: [u32; 3], rank: u32, extra: &str) -> WorkloadSpec {
    let text = format!(
        "name = \"tt\"\nop = \"tt_embedding_bag\"\ntables = {tables}\ndim = {}\ndtype = \"f32\"\n\
         batch = 6\nbag_size = 3\n{extra}\n[indices]\ndistribution = \"uniform\"\n\
         [tt]\nrow_factors = [8, 9, 10]\ndim_factors = {dims:?}\nrank = {rank}\n",
        dims.iter().product::<u32>()
    );
    toml::from_str::<WorkloadSpec>(&text).unwrap().resolved().unwrap()
}

/// The lines of core 0's instance of `text` (a core template) for workload `spec`.
fn core_lines(spec: &WorkloadSpec, text: &str) -> Result<Vec<String>, HandError> {
    let h = instantiate(&compiled(spec, 2), &with_core(text))?;
    Ok(exec_core::print(&h.jobs[0].core).lines().skip(1).map(|l| l.trim().to_string()).collect())
}

#[test]
fn expressions_named_loops_and_lets_compute_what_a_template_needs() {
    let spec = tt(1, [2, 3, 2], 5, "");
    // Expressions over placeholders, with C precedence, min/max, shifts and comparisons.
    let lines = core_lines(
        &spec,
        ".core lanes={lanes}\n    li r1, {(d1 * d2 + 1) * rank - 3 / 2 % 5}\n\
         li r2, {min(lanes, rank) - max(d3, 9)}\n    li r3, {1 << d2 >> 1}\n    li r4, {rank >= 5}\n\
         li r5, {-rank}\n    li r6, {tables + 16}\n    halt\n",
    )
    .unwrap();
    let tables = compiled(&spec, 2).layout.tables as i64;
    let table_line = format!("li r6, {}", tables + 16);
    assert_eq!(lines[..6], ["li r1, 34", "li r2, -4", "li r3, 4", "li r4, 1", "li r5, -5", &table_line]);
    // Named loops nest (in each other and in a `.for chunk` block), `.let` lasts to the end of
    // its block, and `.if` takes an expression.
    let text = ".core lanes={lanes}\n.let base = 10\n.for a in d1\n.for b in a + 1\n\
                .let x = base + a * 4 + b\n\
                li r{x}, {a}\n.if b == a\n    li r1, {b}\n.end\n.end\n.end\n.for chunk\n.for k in 2\n\
                li r2, {chunk * 10 + k}\n.end\n.end\n    halt\n";
    let lines = core_lines(&spec, text).unwrap();
    assert_eq!(
        lines,
        ["li r10, 0", "li r1, 0", "li r14, 1", "li r15, 1", "li r1, 1", "li r2, 0", "li r2, 1", "halt"]
    );
    // A loop of 0 repetitions writes nothing; its lines are still checked.
    let lines =
        core_lines(&spec, ".core lanes={lanes}\n.for i in rank - 5\n    li r1, {i}\n.end\n    halt\n")
            .unwrap();
    assert_eq!(lines, ["halt"]);
    let e = core_lines(&spec, ".core lanes={lanes}\n.for i in 0\n    li r1, {bogus}\n.end\n").unwrap_err();
    assert!(matches!(&e, HandError::UnknownPlaceholder { line: 3, name, .. } if name == "bogus"), "{e:?}");
    // Errors name the template line.
    for (text, line, message) in [
        (".core lanes=16\n    li r1, {rank +}\n", 2, "bad expression `{rank +}`: it ends too early"),
        (
            ".core lanes=16\n    li r1, {rank / (d1 - 2)}\n",
            2,
            "bad expression `{rank / (d1 - 2)}`: 5 / 0 has no value",
        ),
        (".core lanes=16\n    li r1, {(rank}\n", 2, "bad expression `{(rank}`: expected `)`"),
        (
            ".core lanes=16\n    li r1, {rank \u{e9}}\n",
            2,
            "bad expression `{rank \u{e9}}`: unexpected `\u{e9}`",
        ),
        (".core lanes=16\n    li r1, {\u{a0}\u{e9}}\n", 2, "bad expression `{\u{e9}}`: unexpected `\u{e9}`"),
        (".core lanes=16\n    li r1, {rank rank}\n", 2, "bad expression `{rank rank}`: unexpected `rank`"),
        (
            ".core lanes=16\n.for rank in 2\n.end\n",
            2,
            "`.for rank`: the name is taken (a placeholder or a bound name)",
        ),
        (
            ".core lanes=16\n.for i in 2\n.for i in 2\n.end\n.end\n",
            3,
            "`.for i`: the name is taken (a placeholder or a bound name)",
        ),
        (".core lanes=16\n.let d1 = 2\n", 2, "`.let d1`: the name is taken (a placeholder or a bound name)"),
        (".core lanes=16\n.for i in 2\n", 2, "`.for i` without its `.end`"),
        (".core lanes=16\n.for i in 0 - 1\n.end\n", 2, "`.for i`: count -1 outside 0..=65536"),
    ] {
        let e = core_lines(&spec, text).unwrap_err();
        assert_eq!(
            e,
            HandError::Syntax { template: "x.core".into(), line, message: message.into() },
            "{text}"
        );
    }
    // A bound name is gone after its block.
    let e = core_lines(&spec, ".core lanes=16\n.for i in 2\n.end\n    li r1, {i}\n").unwrap_err();
    assert!(matches!(&e, HandError::UnknownPlaceholder { line: 4, name, .. } if name == "i"), "{e:?}");
}

#[test]
fn tt_templates_instantiate_for_every_core_and_shape() {
    let p = shipped("tt-embedding-bag");
    // Ranks below, at and past the vector length (and not a multiple of it), several tables,
    // mean pooling, dims of 1; more cores than bags.
    for spec in [
        tt(2, [2, 3, 2], 5, ""),
        tt(1, [1, 4, 3], 16, "pooling = \"mean\""),
        tt(3, [2, 2, 2], 20, ""),
        tt(1, [1, 1, 1], 20, "pooling = \"mean\""),
        tt(2, [4, 4, 4], 16, ""),
    ] {
        assert_eq!(hand::check(&spec, &p, LANES, AU_LANES), Ok(()), "{:?}", spec.tt);
        for cores in [3, spec.bags() as u32 + 2] {
            let c = compiled(&spec, cores);
            let h = instantiate(&c, &p).unwrap_or_else(|e| panic!("{:?}: {e}", spec.tt));
            let scratch = c.layout.scratch.expect("a TT workload has a scratch");
            for (k, (job, orig)) in h.jobs.iter().zip(&c.jobs).enumerate() {
                assert_eq!((&job.bags, job.scratch), (&orig.bags, orig.scratch));
                let au = job.au.as_ref().unwrap();
                assert_eq!(au.tus[0].bounds, Bounds::Dense { begin: job.bags.start, end: job.bags.end });
                // One callback a lookup with its three slices: G1's and G3's each one row of the
                // whole slice, G2's its address.
                let rows: Vec<u32> = au
                    .streams
                    .iter()
                    .filter_map(|s| match s.kind {
                        StreamKind::Row { bytes, .. } => Some(bytes),
                        _ => None,
                    })
                    .collect();
                let shape = spec.tt.as_ref().unwrap();
                let slice = |c: usize| (shape.slice_rows(c) * spec.stored_row_bytes()) as u32;
                assert_eq!(rows, [slice(0), slice(2)]);
                assert_eq!(au.callbacks[0].operands.len(), 3);
                // The core's accumulators are its own scratch.
                let base = scratch.block(k).base as i64;
                assert!(job.core.insts.contains(&Inst::Li { rd: Reg(6), imm: base }), "core {k}");
            }
        }
    }
}

#[test]
fn a_tt_value_the_workload_lacks_is_an_error_naming_the_template_and_line() {
    let p = shipped("tt-embedding-bag");
    let line_of = |text: &str, name: &str| {
        text.lines().position(|l| l.split('#').next().unwrap().contains(&format!("{{{name}}}"))).unwrap() + 1
    };
    // A dense embedding bag has no TT cores.
    let e = instantiate(&compiled(&spec(""), 2), &p).unwrap_err();
    assert_eq!(
        e,
        HandError::Unavailable {
            template: "programs/tt-embedding-bag.au".into(),
            line: line_of(&p.au.text, "stride1"),
            name: "stride1".into(),
            why: "the workload has no tensor-train cores (only op = \"tt_embedding_bag\" has)".into(),
        }
    );
    // ... which `check` does not hold against the template.
    assert_eq!(hand::check(&spec(""), &p, LANES, AU_LANES), Ok(()));
    // A scratch too small for dim x rank accumulators (dim 64, rank 4: 1024 bytes of 640).
    let small = tt(1, [4, 4, 4], 4, "");
    let e = instantiate(&compiled(&small, 2), &p).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "programs/tt-embedding-bag.core:{}: {{tt_acc}}: the core's scratch (640 bytes) cannot hold \
             dim x rank = 64 x 4 f32 (1024 bytes)",
            line_of(&p.core.text, "tt_acc")
        )
    );
}

/// A workload with a padding index is refused by name: no template skips padding lookups.
#[test]
fn a_padding_index_is_refused_not_summed() {
    let spec: WorkloadSpec = toml::from_str(
        "name = 'p'\nop = 'embedding_bag'\ntables = 1\nrows = 50\ndim = 16\ndtype = 'f32'\nbatch = 2\n\
         bag_size = 3\npadding_idx = 0\n[indices]\ndistribution = 'uniform'\n",
    )
    .unwrap();
    let spec = spec.resolved().unwrap();
    let p = shipped("embedding-bag-sum");
    let e = hand::check(&spec, &p, LANES, AU_LANES).unwrap_err();
    assert!(e.to_string().contains("cannot run a padding index (padding_idx)"), "{e}");
}

/// Tables of their own rows are stacked by `@table_base`, not at `t * rows`: the templates'
/// table base would read the wrong rows, so `{rows}` refuses them, naming why.
#[test]
fn templates_refuse_tables_of_different_rows() {
    let spec = spec("table_indices = [{ rows = 10 }]");
    let c = compiled(&spec, 2);
    let e = instantiate(&c, &shipped("embedding-bag-sum")).unwrap_err().to_string();
    assert!(e.contains("rows") && e.contains("differ in rows") && e.contains("compiled programs"), "{e}");
    // Tables alike still instantiate.
    let c = compiled(&spec_alike(), 2);
    assert!(instantiate(&c, &shipped("embedding-bag-sum")).is_ok());
}

fn spec_alike() -> WorkloadSpec {
    spec("table_indices = [{ rows = 100 }]")
}
