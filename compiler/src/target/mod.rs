//! The target level: access-unit and core programs in the two ISAs' text forms.
//!
//! A DLC function maps onto the access unit ([`au`]) and the core's dispatch loop: `pop_control`,
//! a `switch` over the control ids, one block per `dlc.case` ([`core`] selects its
//! instructions), back to the loop, except after the root traversal's `end` case, which halts.
//! A loop-level function becomes the whole core program of a core-only target.

pub mod au;
pub mod core;

use crate::ir::{Arg, Func, MemId, Opcode};
use std::collections::HashMap;

/// The core's dispatch loop for DLC function `f`.
pub fn dlc_core_text(f: &Func, bases: &HashMap<MemId, u64>, lanes: u32) -> Result<String, String> {
    let config = f.body.iter().find(|o| o.opcode == Opcode::DlcConfigure).ok_or("no dlc.configure_access")?;
    let compute = f.body.iter().find(|o| o.opcode == Opcode::DlcComputeLoop).ok_or("no dlc.compute_loop")?;
    // The root TU's end callback ends the program.
    let root = config
        .body()
        .iter()
        .find(|o| o.opcode == Opcode::DlcTu && o.args[0] == Arg::Int(-1))
        .map(|o| o.result())
        .ok_or("no root TU")?;
    let done = config
        .body()
        .iter()
        .find(|o| {
            o.opcode == Opcode::DlcCallback && o.args[0] == Arg::Value(root) && o.args[1] == Arg::Int(2)
        })
        .and_then(|o| o.args[2].int())
        .ok_or("no callback on the root TU's end")?;
    let cases = compute.body();
    for (n, c) in cases.iter().enumerate() {
        if c.args[0] != Arg::Int(n as i64) {
            return Err(format!("case {n} is out of order (ids must count from 0 in order)"));
        }
    }
    let mut e = core::CoreEmitter::new(f, bases, lanes);
    e.line("loop:");
    e.line("pop_control r1");
    let labels: Vec<String> = (0..cases.len()).map(|n| format!("c{n}")).collect();
    e.line(&format!("switch r1, [{}]", labels.join(", ")));
    // Positions follow the numbering of the whole function.
    e.skip(std::slice::from_ref(config));
    e.skip_one();
    for (n, c) in cases.iter().enumerate() {
        e.line(&format!("c{n}:"));
        e.reset();
        e.skip_one();
        e.emit(c.body())?;
        e.line(if n as i64 == done { "halt" } else { "jmp loop" });
    }
    Ok(e.finish())
}

/// The whole program of a core-only target for loop-level function `f`.
pub fn loop_core_text(f: &Func, bases: &HashMap<MemId, u64>, lanes: u32) -> Result<String, String> {
    let mut e = core::CoreEmitter::new(f, bases, lanes);
    e.emit(&f.body)?;
    e.line("halt");
    Ok(e.finish())
}
