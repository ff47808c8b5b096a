//! Dead-code elimination, run after the passes that leave values unused (a stream read in a
//! callback that no longer needs it would otherwise still be marshaled through the queue).

use crate::ir::{Func, Op, Opcode, Value, walk};
use std::collections::HashSet;

/// Whether removing `op` (when its results are unused) changes nothing else.
fn pure(op: &Op) -> bool {
    !matches!(
        op.opcode,
        Opcode::Store
            | Opcode::VStore
            | Opcode::VSetAcc
            | Opcode::IncrementVar
            | Opcode::For
            | Opcode::SlcFor
            | Opcode::SlcCallback(_)
            | Opcode::DlcConfigure
            | Opcode::DlcComputeLoop
            | Opcode::DlcCase
            | Opcode::DlcCallback
            | Opcode::DlcOperand
            | Opcode::DlcPopOperand
            | Opcode::DlcNextEntry
    ) && !op.results.is_empty()
}

/// Removes unused pure ops of `f` (streams outside callbacks are kept: a TU needs them only
/// when something reads them, but they cost no queue traffic), until nothing changes.
pub fn dce(f: &mut Func) {
    loop {
        let mut used: HashSet<Value> = HashSet::new();
        walk(&f.body, &mut |op| used.extend(op.value_args()));
        let mut removed = false;
        remove(&mut f.body, &used, false, &mut removed);
        if !removed {
            break;
        }
    }
}

fn remove(ops: &mut Vec<Op>, used: &HashSet<Value>, in_code: bool, removed: &mut bool) {
    ops.retain(|op| {
        let dead = in_code && pure(op) && op.results.iter().all(|r| !used.contains(r));
        *removed |= dead;
        !dead
    });
    for op in ops.iter_mut() {
        let code =
            in_code || matches!(op.opcode, Opcode::SlcCallback(_) | Opcode::DlcCase) || op.opcode.is_core();
        for r in &mut op.regions {
            remove(r, used, code, removed);
        }
    }
}
