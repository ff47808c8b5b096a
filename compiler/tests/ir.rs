//! The generic IR's text form and verifier: every stage the pipeline records round-trips
//! through the parser and verifies; hand-written invalid functions fail with their message.

use compiler::ir::text::{self, ParseError};
use compiler::ir::verify::{self, VerifyError};
use compiler::ir::{Arg, Level, MemId, Opcode, Value};
use compiler::{
    EmbeddingBagInstance, Partition, Pass, Passes, Stages, Target, TargetInfo, WorkloadSpec,
    compile_with_stages,
};
use sim_core::SeedTree;

/// A workload from its TOML text (so fields added later take their defaults).
fn workload(text: &str) -> WorkloadSpec {
    toml::from_str::<WorkloadSpec>(text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

fn embedding_bag(name: &str, pooling: &str, weights: bool, dim: u32) -> WorkloadSpec {
    workload(&format!(
        "name = \"{name}\"\nop = \"embedding_bag\"\npooling = \"{pooling}\"\nweights = {weights}\n\
         tables = 2\nrows = 50\ndim = {dim}\ndtype = \"f32\"\nbatch = 3\nbag_size = 3\n\
         [indices]\ndistribution = \"zipf\"\nalpha = 1.05\n"
    ))
}

fn gnn(name: &str, dim: u32) -> WorkloadSpec {
    workload(&format!(
        "name = \"{name}\"\nop = \"gnn_aggregate\"\ndim = {dim}\ndtype = \"f32\"\n\
         [graph]\ngenerator = \"rmat\"\nscale = 5\nedge_factor = 3\n"
    ))
}

/// Every pooling, weighted sums, GNN aggregation (with empty and skewed bags), message passing
/// and block-sparse attention, at row
/// widths that divide the vector (64, 8: one chunk narrower than the vector) and that do not
/// (20: two chunks of 10).
fn workloads() -> Vec<WorkloadSpec> {
    let mut w = Vec::new();
    for dim in [20, 64, 8] {
        w.push(embedding_bag(&format!("sum{dim}"), "sum", false, dim));
        w.push(embedding_bag(&format!("mean{dim}"), "mean", false, dim));
        w.push(embedding_bag(&format!("max{dim}"), "max", false, dim));
        w.push(embedding_bag(&format!("weighted{dim}"), "sum", true, dim));
    }
    w.push(gnn("gnn16", 16));
    w.push(gnn("gnn20", 20));
    w.push(workload(
        "name = \"scatter\"\nop = \"gnn_scatter\"\ndim = 24\ndtype = \"f32\"\nbatch = 20\n\
         [graph]\ngenerator = \"rmat\"\nscale = 5\nedge_factor = 3\n",
    ));
    w.push(workload(
        "name = \"attention\"\nop = \"sparse_attention\"\ntables = 2\nrows = 64\ndim = 32\ndtype = \"f32\"\n\
         batch = 3\nbag_size = 8\nblock = 2\n[indices]\ndistribution = \"uniform\"\n",
    ));
    w
}

/// The stages the pipeline records for one core, in order.
fn expected_stages(target: Target, passes: Passes) -> Vec<&'static str> {
    let mut s = vec!["partition"];
    if target == Target::CoreOnly {
        s.extend([Pass::Vectorize, Pass::SimplifyMem].into_iter().filter(|p| passes.has(*p)).map(Pass::name));
        s.push("core");
    } else {
        s.extend(Pass::ALL.into_iter().filter(|p| passes.has(*p)).map(Pass::name));
        s.extend(["slc", "dlc", "au", "core"]);
    }
    s
}

/// The line where `a` and `b` first differ, both sides shown.
fn first_difference(a: &str, b: &str) -> String {
    let (x, y): (Vec<&str>, Vec<&str>) = (a.lines().collect(), b.lines().collect());
    let n = x.iter().zip(&y).take_while(|(p, q)| p == q).count();
    format!("line {}: `{}` vs `{}`", n + 1, x.get(n).unwrap_or(&"<end>"), y.get(n).unwrap_or(&"<end>"))
}

/// `t` parses, prints back to itself, verifies, and is at `level`.
fn check_ir(t: &str, level: Level) -> Result<(), String> {
    let f = text::parse(t).map_err(|e| format!("does not parse: {e}"))?;
    let again = text::print(&f);
    if again != t {
        return Err(format!("print(parse(t)) differs from t at {}", first_difference(t, &again)));
    }
    verify::verify(&f).map_err(|e| format!("does not verify: {e}"))?;
    if f.level != level {
        return Err(format!("is at level {}, expected {}", f.level.name(), level.name()));
    }
    Ok(())
}

#[test]
fn every_recorded_stage_round_trips_and_verifies() {
    let mut failures = Vec::new();
    let mut checked = 0;
    for spec in workloads() {
        let spec = spec.resolved().expect("a valid workload");
        let inst = EmbeddingBagInstance::generate(&spec, &SeedTree::new(5));
        for target in [Target::Decoupled, Target::CoreOnly] {
            for level in 0..=3u8 {
                for cores in [1, 3] {
                    let passes = Passes::level(level).expect("levels 0..=3 exist");
                    let info = TargetInfo {
                        target,
                        cores,
                        vector_lanes: 16,
                        au_lanes: 8,
                        au_storage_per_lane: 0,
                        passes,
                        partition: Partition::Cost,
                    };
                    let what = format!("{} {target:?} -O{level} cores={cores}", spec.name);
                    let mut stages = Stages::default();
                    let compiled = match compile_with_stages(&spec, inst.clone(), info, Some(&mut stages)) {
                        Ok(c) => c,
                        Err(e) => {
                            failures.push(format!("{what}: does not compile: {e}"));
                            continue;
                        }
                    };
                    if let Err(e) = check_ir(&stages.loop_level, Level::Loop) {
                        failures.push(format!("{what}, loop level: {e}"));
                    }
                    assert_eq!(stages.cores.len(), cores as usize, "{what}: one stage list per core");
                    for (c, (record, job)) in stages.cores.iter().zip(&compiled.jobs).enumerate() {
                        let names: Vec<&str> = record.iter().map(|(s, _)| s.as_str()).collect();
                        if names != expected_stages(target, passes) {
                            failures.push(format!("{what}, core {c}: stages {names:?}"));
                        }
                        for (stage, t) in record {
                            let at = format!("{what}, core {c}, stage `{stage}`");
                            checked += 1;
                            let result = match stage.as_str() {
                                "au" => check_au(t, job.au.as_ref()),
                                "core" => check_core(t, &job.core),
                                "dlc" => check_ir(t, Level::Dlc),
                                "partition" => check_ir(t, Level::Loop),
                                _ if target == Target::CoreOnly => check_ir(t, Level::Loop),
                                _ => check_ir(t, Level::Slc),
                            };
                            if let Err(e) = result {
                                failures.push(format!("{at}: {e}\n{t}"));
                            }
                        }
                    }
                }
            }
        }
    }
    assert!(checked > 1000, "only {checked} stages checked");
    assert!(failures.is_empty(), "{} failure(s):\n{}", failures.len(), failures.join("\n\n"));
}

/// An access-unit program's text parses to the compiled program and prints back to itself.
fn check_au(t: &str, compiled: Option<&access_unit::AuProgram>) -> Result<(), String> {
    let p = access_unit::parse(t).map_err(|e| format!("access_unit::parse: {e}"))?;
    if p.to_string() != t {
        return Err(format!(
            "printing the parsed program differs at {}",
            first_difference(t, &p.to_string())
        ));
    }
    if Some(&p) != compiled {
        return Err("parses to a different program than the compiled job's".into());
    }
    Ok(())
}

/// A core program's text parses to the compiled program and prints back to itself.
fn check_core(t: &str, compiled: &exec_core::CoreProgram) -> Result<(), String> {
    let p = exec_core::parse(t).map_err(|e| format!("exec_core::parse: {e}"))?;
    let again = exec_core::print(&p);
    if again != t {
        return Err(format!("printing the parsed program differs at {}", first_difference(t, &again)));
    }
    if p != *compiled {
        return Err("parses to a different program than the compiled job's".into());
    }
    Ok(())
}

#[test]
fn every_opcode_name_parses_back_to_itself() {
    let all = Opcode::all();
    for o in &all {
        assert_eq!(Opcode::from_name(&o.name()), Some(*o), "{}", o.name());
    }
    // Names are unique, and every region-owning opcode has a name with no spaces.
    let mut names: Vec<String> = all.iter().map(|o| o.name()).collect();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), all.len());
    assert!(names.iter().all(|n| !n.is_empty() && !n.contains([' ', ',', '{'])));
    assert_eq!(Opcode::from_name("fma"), None);
    for l in [Level::Loop, Level::Slc, Level::Dlc] {
        assert_eq!(Level::from_name(l.name()), Some(l));
    }
}

/// Parses `t` (which must parse) and verifies it.
fn verify_text(t: &str) -> Result<(), VerifyError> {
    let f = text::parse(t).unwrap_or_else(|e| panic!("{e}\n{t}"));
    verify::verify(&f)
}

fn verify_err(t: &str) -> String {
    match verify_text(t) {
        Ok(()) => panic!("verifies, but should not:\n{t}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn verifier_accepts_a_hand_written_function_of_each_level() {
    let loop_level = "func @ok : loop {
  mem @a : f32[4, 8] readonly
  mem @o : f32[4, 8]
  %i = for 0, 4 {
    %k = for 0, 8, 4 {
      %x = vload @a, %i, %k, 4
      vstore @o, %i, %k, 4, %x
    }
  }
}
";
    assert_eq!(verify_text(loop_level), Ok(()));
    let slc = "func @ok : slc {
  mem @a : f32[4, 8] readonly
  mem @o : f32[4, 8]
  %i = slc.for 0, 4 {
    %x = slc.buf @a, %i
    slc.on_iter {
      %i_ = slc.from_stream %i
      %x_ = slc.from_stream %x
      %v = vload.buf %x_, 0, 8
      vstore @o, %i_, 0, 8, %v
    }
  }
}
";
    assert_eq!(verify_text(slc), Ok(()));
    let dlc = "func @ok : dlc {
  mem @a : f32[4, 8] readonly
  dlc.configure_access {
    %t = dlc.tu -1, 0, 4, 1
    %i = dlc.ite %t
    dlc.callback %t, 1, 0
    dlc.operand 0, %i
  }
  dlc.compute_loop {
    dlc.case 0 {
      %x = dlc.pop_operand
    }
  }
}
";
    assert_eq!(verify_text(dlc), Ok(()));
}

#[test]
fn verifier_rejects_a_use_of_an_undefined_value() {
    // The parser rejects a name it has not seen...
    let t = "func @u : loop {\n  mem @a : f32[4]\n  store @a, 0, %ghost\n}\n";
    assert_eq!(text::parse(t).unwrap_err().to_string(), "line 3: undefined value %ghost");
    // ...and the verifier a value that no op defines (a pass's bug, not a text's).
    let mut f = text::parse("func @u : loop {\n  mem @a : f32[4]\n}\n").unwrap();
    let ghost = f.value("ghost");
    f.body.push(compiler::ir::Op::new(
        Opcode::Store,
        vec![],
        vec![Arg::Mem(MemId(0)), Arg::Int(0), Arg::Value(ghost)],
    ));
    assert_eq!(
        verify::verify(&f).unwrap_err().to_string(),
        "u: `store`: %ghost is used where it is not defined"
    );
    // A value defined twice (also only a pass can make one).
    let mut f = text::parse("func @d : loop {\n  mem @a : f32[4]\n  %x = add 1, 2\n}\n").unwrap();
    let x = f.body[0].results[0];
    f.body.push(compiler::ir::Op::new(
        Opcode::Int(compiler::ir::IntOp::Add),
        vec![x],
        vec![Arg::Int(3), Arg::Int(4)],
    ));
    assert_eq!(verify::verify(&f).unwrap_err().to_string(), "d: `add`: %x is defined twice");
    assert_eq!(f.name(Value(0)), "x");
}

#[test]
fn verifier_rejects_a_value_used_outside_its_loop() {
    let after_loop = "func @scope : loop {
  mem @a : f32[4]
  %i = for 0, 4 {
    %x = load @a, %i
  }
  store @a, 0, %x
}
";
    assert_eq!(verify_err(after_loop), "scope: `store`: %x is used where it is not defined");
    let iv_after_loop = "func @iv : loop {
  mem @a : f32[4]
  %i = for 0, 4 {
  }
  store @a, %i, 1.0
}
";
    assert_eq!(verify_err(iv_after_loop), "iv: `store`: %i is used where it is not defined");
    // A compute value of one callback is not visible in another.
    let across_callbacks = "func @cb : slc {
  mem @a : f32[4] readonly
  mem @o : f32[4]
  %i = slc.for 0, 4 {
    %x = slc.mem @a, %i
    slc.on_iter {
      %x_ = slc.from_stream %x
      %y = fadd %x_, 1.0
    }
    slc.on_end {
      store @o, 0, %y
    }
  }
}
";
    assert_eq!(verify_err(across_callbacks), "cb: `store`: %y is used where it is not defined");
}

#[test]
fn verifier_rejects_a_store_into_a_readonly_memory() {
    let t = "func @ro : loop {
  mem @a : f32[4] readonly
  %i = for 0, 4 {
    store @a, %i, 1.0
  }
}
";
    assert_eq!(verify_err(t), "ro: `store`: stores into read-only @a");
    let vector =
        "func @ro : loop {\n  mem @a : f32[4] readonly\n  %v = vbcast 1.0\n  vstore @a, 0, 4, %v\n}\n";
    assert_eq!(verify_err(vector), "ro: `vstore`: stores into read-only @a");
    // Streams read only read-only memories.
    let stream =
        "func @st : slc {\n  mem @o : f32[4]\n  %i = slc.for 0, 4 {\n    %x = slc.mem @o, %i\n  }\n}\n";
    assert_eq!(verify_err(stream), "st: `slc.mem`: streams read only read-only memories, not @o");
}

#[test]
fn verifier_rejects_the_wrong_number_of_indices() {
    let t = "func @idx : loop {
  mem @t : f32[4, 8] readonly
  %i = for 0, 4 {
    %x = load @t, %i
  }
}
";
    assert_eq!(verify_err(t), "idx: `load`: @t has 2 dimension(s): expected 2 index argument(s)");
    // A buffer stream names a row: one index fewer than the memory's dimensions.
    let buf = "func @buf : slc {\n  mem @t : f32[4, 8] readonly\n  %i = slc.for 0, 4 {\n    %x = slc.buf @t, %i, 0\n  }\n}\n";
    assert_eq!(verify_err(buf), "buf: `slc.buf`: @t has 2 dimension(s): expected 1 index argument(s)");
}

#[test]
fn verifier_rejects_an_slc_op_at_the_loop_level() {
    let t = "func @lvl : loop {
  mem @a : u32[4] readonly
  %i = for 0, 4 {
    %s = slc.mem @a, %i
  }
}
";
    assert_eq!(verify_err(t), "lvl: `slc.mem`: not allowed in core code");
    let dlc = "func @lvl : loop {\n  %x = dlc.pop_operand\n}\n";
    assert_eq!(verify_err(dlc), "lvl: `dlc.pop_operand`: not allowed in core code");
}

#[test]
fn verifier_rejects_a_core_op_at_the_slc_top_level_and_in_an_access_loop() {
    let top = "func @top : slc {\n  %x = add 1, 2\n}\n";
    assert_eq!(verify_err(top), "top: `add`: not allowed in an SLC function's top level (only slc.for)");
    let in_loop = "func @nest : slc {
  mem @a : f32[4] readonly
  %i = slc.for 0, 4 {
    %x = load @a, %i
  }
}
";
    assert_eq!(
        verify_err(in_loop),
        "nest: `load`: not allowed in an SLC access loop (streams, loops and callbacks)"
    );
    // Nor a stream outside every loop: it would have no traversal unit.
    let stream = "func @s : slc {\n  mem @a : f32[4] readonly\n  %x = slc.mem @a, 0\n}\n";
    assert_eq!(verify_err(stream), "s: `slc.mem`: not allowed in an SLC function's top level (only slc.for)");
}

#[test]
fn verifier_rejects_a_dlc_case_outside_the_compute_loop() {
    let t = "func @case : dlc {
  dlc.configure_access {
    %t = dlc.tu -1, 0, 4, 1
    dlc.case 0 {
    }
  }
  dlc.compute_loop {
  }
}
";
    assert_eq!(verify_err(t), "case: `dlc.case`: not allowed in dlc.configure_access");
    let top = "func @case : dlc {\n  dlc.case 0 {\n  }\n}\n";
    assert_eq!(
        verify_err(top),
        "case: `dlc.case`: not allowed in a DLC function's top level (dlc.configure_access, dlc.compute_loop)"
    );
    let core_in_loop = "func @case : dlc {\n  dlc.compute_loop {\n    %x = add 1, 2\n  }\n}\n";
    assert_eq!(verify_err(core_in_loop), "case: `add`: not allowed in dlc.compute_loop (only dlc.case)");
    // One configuration and one compute loop.
    let two = "func @two : dlc {
  dlc.configure_access {
  }
  dlc.compute_loop {
  }
  dlc.compute_loop {
  }
}
";
    assert_eq!(verify_err(two), "two: `dlc.compute_loop`: a DLC function holds exactly one, found 2");
    let none = "func @none : dlc {\n  dlc.compute_loop {\n  }\n}\n";
    assert_eq!(verify_err(none), "none: `dlc.configure_access`: a DLC function holds exactly one, found 0");
}

#[test]
fn verifier_rejects_from_stream_outside_a_callback() {
    let in_loop = "func @fs : slc {
  mem @a : f32[4] readonly
  %i = slc.for 0, 4 {
    %x = slc.mem @a, %i
    %y = slc.from_stream %x
  }
}
";
    assert_eq!(
        verify_err(in_loop),
        "fs: `slc.from_stream`: not allowed in an SLC access loop (streams, loops and callbacks)"
    );
    let at_loop_level = "func @fs : loop {\n  %i = for 0, 4 {\n    %x = slc.from_stream %i\n  }\n}\n";
    assert_eq!(verify_err(at_loop_level), "fs: `slc.from_stream`: not allowed in core code");
    let in_case = "func @fs : dlc {
  dlc.configure_access {
    %t = dlc.tu -1, 0, 4, 1
    %i = dlc.ite %t
  }
  dlc.compute_loop {
    dlc.case 0 {
      %x = slc.from_stream %i
    }
  }
}
";
    assert_eq!(verify_err(in_case), "fs: `slc.from_stream`: not allowed in a DLC case");
    // Inside a callback, also in a core loop there, it is fine.
    let ok = "func @fs : slc {
  mem @a : f32[4] readonly
  mem @o : f32[4]
  %i = slc.for 0, 4 {
    %x = slc.mem @a, %i
    slc.on_iter {
      %k = for 0, 2 {
        %x_ = slc.from_stream %x
        store @o, %k, %x_
      }
    }
  }
}
";
    assert_eq!(verify_text(ok), Ok(()));
}

#[test]
fn verifier_rejects_a_region_on_an_op_without_one() {
    // The text form cannot show it (the parser refuses it), so only a pass could make one; the
    // printer would drop it silently.
    let mut f = text::parse("func @r : loop {\n  mem @a : f32[4]\n  %x = add 1, 2\n}\n").unwrap();
    f.body[0].regions = vec![vec![]];
    assert_eq!(verify::verify(&f).unwrap_err().to_string(), "r: `add`: takes no region");
}

fn parse_err(t: &str) -> ParseError {
    match text::parse(t) {
        Ok(f) => panic!("parses, but should not:\n{t}\n{}", text::print(&f)),
        Err(e) => e,
    }
}

#[test]
fn parser_rejects_an_unknown_op() {
    let e = parse_err("func @p : loop {\n  mem @a : f32[4]\n  %x = fma 1.0, 2.0\n}\n");
    assert_eq!((e.line, e.message.as_str()), (3, "unknown op `fma`"));
    assert_eq!(e.to_string(), "line 3: unknown op `fma`");
}

#[test]
fn parser_rejects_a_missing_closing_brace() {
    // The loop's `}` is missing: the function's closes the loop, and the function stays open.
    let e = parse_err("func @p : loop {\n  %i = for 0, 4 {\n    %x = add %i, 1\n}\n");
    assert_eq!(e.to_string(), "line 4: missing closing `}`");
    let e = parse_err("func @p : loop {\n");
    assert_eq!(e.to_string(), "line 1: missing closing `}`");
}

#[test]
fn parser_rejects_an_unknown_element_type() {
    let e = parse_err("func @p : loop {\n  mem @a : f32[4]\n  mem @b : u8[4, 4] readonly\n}\n");
    assert_eq!(e.to_string(), "line 3: unknown element type `u8` (u32, f32, f16, bf16, i8)");
}

#[test]
fn parser_rejects_a_value_defined_twice() {
    let e = parse_err("func @p : loop {\n  %x = add 1, 2\n  %i = for 0, 4 {\n    %x = add 3, 4\n  }\n}\n");
    assert_eq!(e.to_string(), "line 4: value %x defined twice");
}

#[test]
fn parser_rejects_a_region_on_an_op_without_one() {
    let e = parse_err("func @p : loop {\n  mem @a : f32[4]\n  %x = load @a, 0 {\n  }\n}\n");
    assert_eq!(e.to_string(), "line 3: `load` takes no region");
    let e = parse_err("func @p : loop {\n  %i = for 0, 4\n}\n");
    assert_eq!(e.to_string(), "line 2: `for` needs a region: end the line with `{`");
}

#[test]
fn parser_takes_any_function_name_and_reports_other_mistakes_by_line() {
    // A workload's name becomes the function's: colons and dashes included.
    let t = "func @dlrm:rm-1 : loop {\n  mem @a : f32[4]\n}\n";
    let f = text::parse(t).unwrap();
    assert_eq!((f.name.as_str(), f.level), ("dlrm:rm-1", Level::Loop));
    assert_eq!(text::print(&f), t);
    for (t, want) in [
        ("", "line 1: empty text: expected `func @name : level {`"),
        ("func @p : tensor {\n}\n", "line 1: unknown level `tensor` (loop, slc, dlc)"),
        ("func @p : loop {\n}\n}\n", "line 3: text after the function's closing brace: `}`"),
        (
            "func @p : loop {\n  %x = add 1, 2\n  mem @a : f32[4]\n}\n",
            "line 3: memories are declared before the first op",
        ),
        ("func @p : loop {\n  %x = load @nope, 0\n}\n", "line 2: undeclared memory @nope"),
        ("func @p : loop {\n  add 1, 2\n}\n", "line 2: `add` defines 1 result(s), found 0"),
        (
            "func @p : loop {\n  mem @a : f32[4] hot\n}\n",
            "line 2: unknown or repeated memory flag `hot` (readonly, nontemporal)",
        ),
    ] {
        assert_eq!(parse_err(t).to_string(), want, "{t}");
    }
}

#[test]
fn floats_round_trip_exactly() {
    for x in
        [0.0f32, -0.0, 1.0, 0.1, f32::MIN, f32::MAX, f32::MIN_POSITIVE, 1e-40, f32::INFINITY, -f32::INFINITY]
    {
        let mut f = text::parse("func @p : loop {\n  mem @a : f32[4]\n}\n").unwrap();
        f.body.push(compiler::ir::Op::new(
            Opcode::Store,
            vec![],
            vec![Arg::Mem(MemId(0)), Arg::Int(0), Arg::Float(x)],
        ));
        let t = text::print(&f);
        let g = text::parse(&t).unwrap_or_else(|e| panic!("{e}\n{t}"));
        assert_eq!(g.body[0].args[2], Arg::Float(x), "{t}");
        assert_eq!(text::print(&g), t);
    }
}
