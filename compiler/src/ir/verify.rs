//! The verifier of every level: which ops may appear where, their arguments, and scoping.
//!
//! - Loop level: core ops only.
//! - SLC: `slc.for` nests (nothing else at the top level) holding streams (`slc.mem`,
//!   `slc.vmem`, `slc.buf`, ALU streams) and callbacks; a callback's body holds core ops and
//!   `slc.from_stream`, and may not define streams. Streams read only read-only memories.
//! - DLC: one `dlc.configure_access` (TUs, streams, callbacks, operands) and one
//!   `dlc.compute_loop` of `dlc.case`s, whose bodies hold core ops and `dlc.pop_operand`.
//!
//! Everywhere: a value is used only where it is visible (defined earlier in an enclosing
//! region, or the induction variable of an enclosing loop), memory accesses give one index per
//! dimension, no op stores into a read-only memory, and only ops that take a region have one
//! (the text form could not show any other).

use super::{Arg, Func, Level, Op, Opcode, Value};
use std::collections::HashSet;
use thiserror::Error;

/// A function that breaks a rule of its level.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{func}: `{op}`: {message}")]
pub struct VerifyError {
    /// The function.
    pub func: String,
    /// The offending op's opcode.
    pub op: String,
    /// What is wrong.
    pub message: String,
}

/// Where an op sits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Context {
    /// Core code: the loop level, a callback or case body.
    Core,
    /// Core code inside an SLC callback (may read streams).
    Callback,
    /// Core code inside a DLC case (may pop operands).
    Case,
    /// An SLC function's top level (only `slc.for`).
    SlcTop,
    /// The SLC access nest.
    Slc,
    /// A DLC function's top level.
    DlcTop,
    /// Inside `dlc.configure_access`.
    Configure,
    /// Inside `dlc.compute_loop`.
    ComputeLoop,
}

impl Context {
    /// Where this is, in words (for messages).
    fn describe(self) -> &'static str {
        match self {
            Context::Core => "core code",
            Context::Callback => "an SLC callback",
            Context::Case => "a DLC case",
            Context::SlcTop => "an SLC function's top level (only slc.for)",
            Context::Slc => "an SLC access loop (streams, loops and callbacks)",
            Context::DlcTop => "a DLC function's top level (dlc.configure_access, dlc.compute_loop)",
            Context::Configure => "dlc.configure_access",
            Context::ComputeLoop => "dlc.compute_loop (only dlc.case)",
        }
    }
}

/// Checks `f` against the rules of its level.
pub fn verify(f: &Func) -> Result<(), VerifyError> {
    let ctx = match f.level {
        Level::Loop => Context::Core,
        Level::Slc => Context::SlcTop,
        Level::Dlc => Context::DlcTop,
    };
    let mut scope = Vec::new();
    let mut defined = HashSet::new();
    check_ops(f, &f.body, ctx, &mut scope, &mut defined)?;
    if f.level == Level::Dlc {
        for opcode in [Opcode::DlcConfigure, Opcode::DlcComputeLoop] {
            let n = f.body.iter().filter(|o| o.opcode == opcode).count();
            if n != 1 {
                return Err(VerifyError {
                    func: f.name.clone(),
                    op: opcode.name(),
                    message: format!("a DLC function holds exactly one, found {n}"),
                });
            }
        }
    }
    Ok(())
}

fn check_ops(
    f: &Func,
    ops: &[Op],
    ctx: Context,
    scope: &mut Vec<Value>,
    defined: &mut HashSet<Value>,
) -> Result<(), VerifyError> {
    let mark = scope.len();
    for op in ops {
        let fail = |message: String| VerifyError { func: f.name.clone(), op: op.opcode.name(), message };
        if !allowed(op.opcode, ctx) {
            return Err(fail(format!("not allowed in {}", ctx.describe())));
        }
        for v in op.value_args() {
            if !scope.contains(&v) {
                return Err(fail(format!("%{} is used where it is not defined", f.name(v))));
            }
        }
        check_args(f, op).map_err(fail)?;
        if op.results.len() != op.opcode.result_count() {
            return Err(fail(format!(
                "defines {} results, expected {}",
                op.results.len(),
                op.opcode.result_count()
            )));
        }
        for &r in &op.results {
            if !defined.insert(r) {
                return Err(fail(format!("%{} is defined twice", f.name(r))));
            }
        }
        if !op.opcode.has_region() && !op.regions.is_empty() {
            return Err(fail("takes no region".into()));
        }
        if op.opcode.has_region() {
            if op.regions.len() != 1 {
                return Err(fail("needs exactly one region".into()));
            }
            let inner = match (op.opcode, ctx) {
                (Opcode::SlcFor, _) => Context::Slc,
                (Opcode::SlcCallback(_), _) => Context::Callback,
                (Opcode::DlcConfigure, _) => Context::Configure,
                (Opcode::DlcComputeLoop, _) => Context::ComputeLoop,
                (Opcode::DlcCase, _) => Context::Case,
                (_, c) => c,
            };
            // A loop's induction variable is visible in its body only.
            let iv = matches!(op.opcode, Opcode::For | Opcode::SlcFor);
            if iv {
                scope.push(op.result());
            }
            check_ops(f, op.body(), inner, scope, defined)?;
            if iv {
                scope.pop();
            }
        } else {
            scope.extend(op.results.iter().copied());
        }
    }
    scope.truncate(mark);
    Ok(())
}

fn allowed(op: Opcode, ctx: Context) -> bool {
    match ctx {
        Context::Core => op.is_core(),
        Context::Callback => op.is_core() || op == Opcode::SlcFromStream,
        Context::Case => op.is_core() || matches!(op, Opcode::DlcPopOperand | Opcode::DlcNextEntry),
        Context::SlcTop => op == Opcode::SlcFor,
        Context::Slc => matches!(
            op,
            Opcode::SlcFor
                | Opcode::SlcMem
                | Opcode::SlcVMem
                | Opcode::SlcBuf
                | Opcode::SlcAlu(_)
                | Opcode::SlcCallback(_)
        ),
        Context::DlcTop => matches!(op, Opcode::DlcConfigure | Opcode::DlcComputeLoop),
        Context::Configure => matches!(
            op,
            Opcode::DlcTu
                | Opcode::DlcIte
                | Opcode::DlcMem
                | Opcode::DlcVMem
                | Opcode::DlcBuf
                | Opcode::DlcAlu(_)
                | Opcode::DlcFwd
                | Opcode::DlcCallback
                | Opcode::DlcOperand
        ),
        Context::ComputeLoop => op == Opcode::DlcCase,
    }
}

/// Checks the number and kinds of `op`'s arguments.
fn check_args(f: &Func, op: &Op) -> Result<(), String> {
    let a = &op.args;
    let scalar = |x: &Arg| matches!(x, Arg::Value(_) | Arg::Int(_));
    let number = |x: &Arg| matches!(x, Arg::Value(_) | Arg::Int(_) | Arg::Float(_));
    let all = |xs: &[Arg], p: &dyn Fn(&Arg) -> bool| xs.iter().all(p);
    // A memory access: `@m` then `extra_before` args, then one index per dimension (less
    // `fewer` for row accesses), then `extra_after` args.
    let access = |skip: usize, fewer: usize, after: usize| -> Result<(), String> {
        let m = a.get(skip).and_then(|x| x.mem()).ok_or("expects a memory argument")?;
        let decl = f.mem_decl(m);
        let rank = decl.shape.len() - fewer.min(decl.shape.len());
        if a.len() != skip + 1 + rank + after {
            return Err(format!(
                "@{} has {} dimension(s): expected {} index argument(s)",
                decl.name,
                decl.shape.len(),
                rank
            ));
        }
        if !all(&a[skip + 1..skip + 1 + rank], &scalar) {
            return Err("indices must be values or integers".into());
        }
        Ok(())
    };
    // A stream (`skip` = 1 for DLC's TU argument) reads only read-only memory; a store writes
    // only writable memory.
    let stream = |skip: usize, fewer: usize, after: usize| -> Result<(), String> {
        let m = a.get(skip).and_then(|x| x.mem()).ok_or("expects a memory argument")?;
        if !f.mem_decl(m).readonly {
            return Err(format!("streams read only read-only memories, not @{}", f.mem_decl(m).name));
        }
        access(skip, fewer, after)
    };
    let store = |after: usize| -> Result<(), String> {
        access(0, 0, after)?;
        let m = a[0].mem().expect("checked by access");
        if f.mem_decl(m).readonly {
            return Err(format!("stores into read-only @{}", f.mem_decl(m).name));
        }
        Ok(())
    };
    let count = |n: usize| -> Result<(), String> {
        if a.len() == n && all(a, &number) {
            Ok(())
        } else {
            Err(format!("expects {n} value or constant argument(s)"))
        }
    };
    match op.opcode {
        Opcode::For | Opcode::SlcFor => {
            if !(2..=3).contains(&a.len()) || !all(a, &scalar) {
                return Err("expects LO, HI and an optional constant STEP".into());
            }
            if let Some(s) = a.get(2)
                && !matches!(s, Arg::Int(1..))
            {
                return Err("STEP must be a positive constant".into());
            }
            Ok(())
        }
        Opcode::Load => access(0, 0, 0),
        Opcode::Store => store(1),
        Opcode::VLoad => access(0, 0, 1),
        Opcode::VStore => store(2),
        Opcode::Int(_) | Opcode::Float(_) | Opcode::VFloat(_) | Opcode::SlcAlu(_) => count(2),
        Opcode::IToF | Opcode::VBcast | Opcode::SlcFromStream => count(1),
        // A buffer of a narrow memory names the memory last.
        Opcode::VLoadBuf if matches!(a.last(), Some(Arg::Mem(_))) && a.len() == 4 => {
            if all(&a[..3], &number) { Ok(()) } else { Err("expects BUF, OFF, N and a memory".into()) }
        }
        Opcode::VLoadBuf => count(3),
        Opcode::DlcPopOperand if matches!(a.as_slice(), [Arg::Mem(_)]) => Ok(()),
        Opcode::VRedSum => count(2),
        Opcode::GetVar | Opcode::IncrementVar => match a.as_slice() {
            [Arg::Int(0..=15)] => Ok(()),
            _ => Err("expects a variable number 0..=15".into()),
        },
        Opcode::VGetAcc => match a.as_slice() {
            [Arg::Int(0..=15)] => Ok(()),
            _ => Err("expects an accumulator number 0..=15".into()),
        },
        Opcode::VSetAcc => match a.as_slice() {
            [Arg::Int(0..=15), Arg::Value(_)] => Ok(()),
            _ => Err("expects an accumulator number 0..=15 and a value".into()),
        },
        Opcode::SlcMem => stream(0, 0, 0),
        Opcode::SlcVMem => stream(0, 0, 1),
        Opcode::SlcBuf => stream(0, 1, 0),
        Opcode::SlcCallback(_)
        | Opcode::DlcConfigure
        | Opcode::DlcComputeLoop
        | Opcode::DlcPopOperand
        | Opcode::DlcNextEntry => count(0),
        Opcode::DlcTu => {
            if a.len() != 4 || !all(a, &scalar) || !matches!(a[3], Arg::Int(1..)) {
                return Err("expects PARENT (or -1), LO, HI, STEP".into());
            }
            Ok(())
        }
        Opcode::DlcIte => count(1),
        Opcode::DlcMem => stream(1, 0, 0),
        Opcode::DlcVMem => stream(1, 0, 1),
        Opcode::DlcBuf => stream(1, 1, 0),
        Opcode::DlcAlu(_) => count(3),
        Opcode::DlcFwd => count(2),
        Opcode::DlcCallback => match a.as_slice() {
            [Arg::Value(_), Arg::Int(0..=2), Arg::Int(0..)] => Ok(()),
            _ => Err("expects TU, EVENT (0 begin, 1 iter, 2 end), ID".into()),
        },
        Opcode::DlcOperand => match a.as_slice() {
            [Arg::Int(0..), Arg::Value(_)] => Ok(()),
            _ => Err("expects ID, STREAM".into()),
        },
        Opcode::DlcCase => match a.as_slice() {
            [Arg::Int(0..)] => Ok(()),
            _ => Err("expects a control id".into()),
        },
    }
}
