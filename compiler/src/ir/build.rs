//! A builder that appends ops to a function, opening and closing regions.

use super::{Arg, Func, Op, Opcode, Value};

/// Appends ops to a [`Func`]'s body; `open`/`close` nest regions.
pub struct Builder<'f> {
    /// The function being built.
    pub func: &'f mut Func,
    /// Open regions: the ops built so far in each, with the op that will own it.
    stack: Vec<(Vec<Op>, Option<Op>)>,
}

impl<'f> Builder<'f> {
    /// A builder appending to `func`'s top level.
    pub fn new(func: &'f mut Func) -> Self {
        let body = std::mem::take(&mut func.body);
        Builder { func, stack: vec![(body, None)] }
    }

    /// Appends an op; returns its result, if it defines one (named `hint`).
    pub fn op(&mut self, opcode: Opcode, hint: &str, args: Vec<Arg>) -> Option<Value> {
        let results = if opcode.result_count() == 1 { vec![self.func.value(hint)] } else { vec![] };
        let r = results.first().copied();
        self.push(Op::new(opcode, results, args));
        r
    }

    /// Appends an op that defines a value.
    pub fn val(&mut self, opcode: Opcode, hint: &str, args: Vec<Arg>) -> Value {
        self.op(opcode, hint, args).expect("opcode defines a result")
    }

    /// Appends a finished op.
    pub fn push(&mut self, op: Op) {
        self.stack.last_mut().expect("the top level is always open").0.push(op);
    }

    /// Opens the region of a new op (a loop's result, its induction variable, is returned).
    pub fn open(&mut self, opcode: Opcode, hint: &str, args: Vec<Arg>) -> Option<Value> {
        let results = if opcode.result_count() == 1 { vec![self.func.value(hint)] } else { vec![] };
        let r = results.first().copied();
        self.stack.push((Vec::new(), Some(Op::new(opcode, results, args))));
        r
    }

    /// Closes the innermost open region.
    pub fn close(&mut self) {
        let (ops, owner) = self.stack.pop().expect("close matches open");
        let mut op = owner.expect("close matches open: the top level is never closed");
        op.regions = vec![ops];
        self.push(op);
    }

    /// Finishes: the built ops become the function's body.
    pub fn finish(mut self) {
        assert_eq!(self.stack.len(), 1, "every opened region is closed");
        self.func.body = self.stack.pop().expect("the top level").0;
    }
}

/// `Arg::Value` shorthand.
pub fn v(x: Value) -> Arg {
    Arg::Value(x)
}

/// `Arg::Int` shorthand.
pub fn i(x: i64) -> Arg {
    Arg::Int(x)
}
