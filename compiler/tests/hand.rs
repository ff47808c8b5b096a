//! Hand-written programs: the shipped templates in `programs/` instantiate for every core of
//! small workloads of their op family, and bad templates are errors naming the template, the
//! line and what is wrong. (That the programs compute the right outputs is checked by running
//! them: the root crate's `tests/hand_programs.rs`.)

use access_unit::{Bounds, StreamKind};
use compiler::hand::{self, HandError, HandPrograms, Template};
use compiler::{CompiledWorkload, EmbeddingBagInstance, Passes, Target, TargetInfo, WorkloadSpec, compile};
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
        passes: Passes::default(),
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
        (".core lanes=16\n.for chunk\n.for chunk\n.end\n.end\n", 3, "`.for chunk` blocks do not nest"),
        (
            ".core lanes=16\n.for row\n.end\n",
            2,
            "unknown directive `.for row` (`.for chunk`, `.if CONDITION`, `.else`, `.end`)",
        ),
        (".core lanes=16\n.if multi_table\n    halt\n", 2, "`.if` without its `.end`"),
        (".core lanes=16\n.else\n", 2, "`.else` without an `.if`"),
        (".core lanes=16\n.if sparse\n.end\n", 2, "unknown condition `sparse` (multi_table, weighted)"),
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
    let h = instantiate(&c, &with_core(&core)).unwrap();
    let lis = h.jobs[1].core.insts.iter().filter(|i| matches!(i, Inst::Li { .. })).count();
    assert_eq!(lis, hand::PLACEHOLDERS.len() + 2 * hand::CHUNK_PLACEHOLDERS.len());
    let bag_start = Inst::Li { rd: Reg(1), imm: h.jobs[1].bags.start as i64 };
    assert_eq!(h.jobs[1].core.insts[8], bag_start, "{{bag_start}} is the ninth placeholder");
}
