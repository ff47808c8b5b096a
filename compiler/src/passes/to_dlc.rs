//! SLC to DLC (Ember's SlcToDlc): the access nest becomes an access-unit configuration, the
//! callbacks become the cases of the core's compute loop.
//!
//! Each `slc.for` becomes a traversal unit (`dlc.tu`) whose induction variable is an `ite`
//! stream; streams keep their values; each callback gets a control id, in program order, and
//! registers the streams it reads as operands (`dlc.operand`, in the order its
//! `slc.from_stream`s read them, which become `dlc.pop_operand`s). The root loop's `end` event
//! gets a final callback: the core's signal that the traversal is over.

use super::PassError;
use crate::ir::{Arg, Event, Func, Level, Op, Opcode, Value};

/// Lowers an SLC function to DLC.
pub fn slc_to_dlc(f: &Func) -> Result<Func, PassError> {
    let [root] = f.body.as_slice() else {
        return Err(PassError::new("slc-to-dlc", "an SLC function holds exactly one root loop"));
    };
    let mut out = f.clone();
    out.level = Level::Dlc;
    out.body = Vec::new();
    let mut config = Vec::new();
    let mut cases = Vec::new();
    // Element streams of narrow memories, whose pops load the element from the queue.
    let mut narrow = std::collections::HashMap::new();
    crate::ir::walk(&f.body, &mut |op| {
        if op.opcode == Opcode::SlcMem
            && let Some(m) = op.args[0].mem().filter(|m| f.mem_decl(*m).elem.narrow().is_some())
        {
            narrow.insert(op.result(), m);
        }
    });
    let root_tu = lower_loop(&mut out, root, None, &mut config, &mut cases, &narrow)?;
    // The root's end: the traversal is over.
    let done = cases.len() as i64;
    let has_root_end = root.body().iter().any(|o| o.opcode == Opcode::SlcCallback(Event::End));
    if !has_root_end {
        config.push(Op::new(
            Opcode::DlcCallback,
            vec![],
            vec![Arg::Value(root_tu), Arg::Int(2), Arg::Int(done)],
        ));
        cases.push(Op {
            opcode: Opcode::DlcCase,
            results: vec![],
            args: vec![Arg::Int(done)],
            regions: vec![vec![]],
        });
    }
    out.body = vec![
        Op { opcode: Opcode::DlcConfigure, results: vec![], args: vec![], regions: vec![config] },
        Op { opcode: Opcode::DlcComputeLoop, results: vec![], args: vec![], regions: vec![cases] },
    ];
    Ok(out)
}

fn lower_loop(
    out: &mut Func,
    op: &Op,
    parent: Option<Value>,
    config: &mut Vec<Op>,
    cases: &mut Vec<Op>,
    narrow: &std::collections::HashMap<Value, crate::ir::MemId>,
) -> Result<Value, PassError> {
    let tu = out.value(&format!("t{}", out.name(op.result())));
    let mut args = vec![parent.map_or(Arg::Int(-1), Arg::Value)];
    args.extend_from_slice(&op.args[..2]);
    args.push(op.args.get(2).copied().unwrap_or(Arg::Int(1)));
    config.push(Op::new(Opcode::DlcTu, vec![tu], args));
    config.push(Op::new(Opcode::DlcIte, vec![op.result()], vec![Arg::Value(tu)]));
    let with_tu = |inner: &Op, opcode: Opcode| {
        let mut args = vec![Arg::Value(tu)];
        args.extend_from_slice(&inner.args);
        Op::new(opcode, inner.results.clone(), args)
    };
    for inner in op.body() {
        match inner.opcode {
            Opcode::SlcFor => {
                lower_loop(out, inner, Some(tu), config, cases, narrow)?;
            }
            Opcode::SlcMem => config.push(with_tu(inner, Opcode::DlcMem)),
            Opcode::SlcVMem => config.push(with_tu(inner, Opcode::DlcVMem)),
            Opcode::SlcBuf => config.push(with_tu(inner, Opcode::DlcBuf)),
            Opcode::SlcAlu(a) => config.push(with_tu(inner, Opcode::DlcAlu(a))),
            Opcode::SlcCallback(event) => {
                let id = cases.len() as i64;
                let code = match event {
                    Event::Begin => 0,
                    Event::Iter => 1,
                    Event::End => 2,
                };
                config.push(Op::new(
                    Opcode::DlcCallback,
                    vec![],
                    vec![Arg::Value(tu), Arg::Int(code), Arg::Int(id)],
                ));
                let mut body = Vec::new();
                // A callback of more operands than an entry carries continues in further
                // entries, registered on the same event right after it (the unit emits an
                // event's callbacks one after the other): each has its own id, and the case
                // moves to it (`dlc.next_entry`) before popping its operands.
                let mut entry = id;
                let mut in_entry = 0;
                let mut continuations = 0;
                for c in inner.body() {
                    if c.opcode == Opcode::SlcFromStream {
                        if in_entry == access_unit::isa::MAX_OPERANDS {
                            continuations += 1;
                            entry = id + continuations;
                            in_entry = 0;
                            config.push(Op::new(
                                Opcode::DlcCallback,
                                vec![],
                                vec![Arg::Value(tu), Arg::Int(code), Arg::Int(entry)],
                            ));
                            let next = out.value("entry");
                            body.push(Op::new(Opcode::DlcNextEntry, vec![next], vec![]));
                        }
                        in_entry += 1;
                        config.push(Op::new(Opcode::DlcOperand, vec![], vec![Arg::Int(entry), c.args[0]]));
                        let mem = c.args[0].value().and_then(|v| narrow.get(&v)).map(|m| Arg::Mem(*m));
                        body.push(Op::new(
                            Opcode::DlcPopOperand,
                            c.results.clone(),
                            mem.into_iter().collect(),
                        ));
                    } else {
                        body.push(c.clone());
                    }
                }
                cases.push(Op {
                    opcode: Opcode::DlcCase,
                    results: vec![],
                    args: vec![Arg::Int(id)],
                    regions: vec![body],
                });
                // The continuations' ids, never dispatched (their case pops them).
                for k in 1..=continuations {
                    cases.push(Op {
                        opcode: Opcode::DlcCase,
                        results: vec![],
                        args: vec![Arg::Int(id + k)],
                        regions: vec![vec![]],
                    });
                }
            }
            other => {
                return Err(PassError::new(
                    "slc-to-dlc",
                    format!("unexpected `{}` in an access loop", other.name()),
                ));
            }
        }
    }
    Ok(tu)
}
