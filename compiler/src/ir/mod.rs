//! The compiler's IRs: one generic, structured op form shared by the loop level, SLC and DLC.
//!
//! As in MLIR's generic form, every level is a [`Func`] of nested [`Op`]s: an op has an
//! [`Opcode`] (whose dialect prefix, `slc.` or `dlc.`, names its level; loop-level and core
//! ops have none), results, arguments (values, integer or float constants, memories), and
//! regions (nested op lists). Values are small indices into the function's value arena
//! ([`Value`]); memories are indices into its memory table ([`MemId`]). Regions own their ops,
//! so a function is a tree, with no shared or cyclic ownership.
//!
//! Scoping: a value is visible after the op defining it, in the same region and in regions
//! nested in later ops; a loop's result (`%k = for 0, 64 { ... }`) is its induction variable,
//! visible only inside its region. [`text`] prints and parses the form (print, parse, print
//! gives the same text); each level's verifier ([`verify`]) checks which opcodes it allows and
//! that every value is defined before it is used.

pub mod build;
pub mod opcode;
pub mod text;
pub mod verify;

pub use opcode::{Event, FloatOp, IntOp, Level, Opcode};

/// Queue-alignment variables of the core (`get_var`/`increment_var` operands are below it).
pub const NUM_VARS: i64 = 16;

/// An SSA value: an index into [`Func::values`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Value(pub u32);

/// A memory (an array of the workload): an index into [`Func::mems`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MemId(pub u32);

/// Element type of a memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Elem {
    /// 32-bit unsigned integer (offsets, indices).
    U32,
    /// 32-bit float.
    F32,
    /// IEEE half precision, read as f32 (every load converts).
    F16,
    /// bfloat16, read as f32 (every load converts).
    Bf16,
    /// 8-bit signed integer, read as f32 (every load converts; an int8 row's values, which the
    /// code then scales and offsets by the row's own scale and bias).
    I8,
}

impl Elem {
    /// Every element type.
    pub const ALL: [Elem; 5] = [Elem::U32, Elem::F32, Elem::F16, Elem::Bf16, Elem::I8];

    /// The name in the text form.
    pub fn name(self) -> &'static str {
        match self {
            Elem::U32 => "u32",
            Elem::F32 => "f32",
            Elem::F16 => "f16",
            Elem::Bf16 => "bf16",
            Elem::I8 => "i8",
        }
    }

    /// Bytes of one element in memory.
    pub fn bytes(self) -> u64 {
        self.narrow().map_or(4, |f| f.elem_bytes())
    }

    /// The stored format of an element that loads convert to f32 (`None` for 32-bit ones).
    pub fn narrow(self) -> Option<sim_core::procedural::TableFormat> {
        use sim_core::procedural::TableFormat;
        match self {
            Elem::U32 | Elem::F32 => None,
            Elem::F16 => Some(TableFormat::F16),
            Elem::Bf16 => Some(TableFormat::Bf16),
            Elem::I8 => Some(TableFormat::Int8),
        }
    }

    /// The element type of tables in `dtype` (`None`: the IR has no element for it).
    pub fn of_table(dtype: crate::workload::Dtype) -> Option<Elem> {
        match dtype {
            crate::workload::Dtype::F32 => Some(Elem::F32),
            crate::workload::Dtype::F16 => Some(Elem::F16),
            crate::workload::Dtype::Bf16 => Some(Elem::Bf16),
            crate::workload::Dtype::Int8 => Some(Elem::I8),
        }
    }

    /// Whether it holds floating-point values (a table's element).
    pub fn is_float(self) -> bool {
        self != Elem::U32
    }
}

/// A memory declaration: a named, row-major array.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mem {
    /// Name (`tables`), written `@tables`.
    pub name: String,
    /// Element type.
    pub elem: Elem,
    /// Extent of each dimension, outermost first.
    pub shape: Vec<u64>,
    /// Whether the kernel only reads it (what the access unit may load).
    pub readonly: bool,
    /// Whether its rows see no reuse, so loads of it carry the non-temporal hint.
    pub nontemporal: bool,
}

impl Mem {
    /// Elements of the innermost dimension (a row).
    pub fn row_elems(&self) -> u64 {
        self.shape.last().copied().unwrap_or(1)
    }
}

/// An op argument.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Arg {
    /// A value.
    Value(Value),
    /// An integer constant.
    Int(i64),
    /// An f32 constant.
    Float(f32),
    /// A memory.
    Mem(MemId),
}

impl Arg {
    /// The value, if this is one.
    pub fn value(self) -> Option<Value> {
        match self {
            Arg::Value(v) => Some(v),
            _ => None,
        }
    }

    /// The integer constant, if this is one.
    pub fn int(self) -> Option<i64> {
        match self {
            Arg::Int(i) => Some(i),
            _ => None,
        }
    }

    /// The memory, if this is one.
    pub fn mem(self) -> Option<MemId> {
        match self {
            Arg::Mem(m) => Some(m),
            _ => None,
        }
    }
}

/// One operation.
#[derive(Debug, Clone, PartialEq)]
pub struct Op {
    /// What it does.
    pub opcode: Opcode,
    /// Values it defines (a loop's induction variable, for loops).
    pub results: Vec<Value>,
    /// Its arguments.
    pub args: Vec<Arg>,
    /// Nested regions (a loop body, a callback body).
    pub regions: Vec<Vec<Op>>,
}

impl Op {
    /// An op without regions.
    pub fn new(opcode: Opcode, results: Vec<Value>, args: Vec<Arg>) -> Self {
        Op { opcode, results, args, regions: Vec::new() }
    }

    /// Its single result (panics if it has none: only for ops that always define one).
    pub fn result(&self) -> Value {
        self.results[0]
    }

    /// The values among its arguments.
    pub fn value_args(&self) -> impl Iterator<Item = Value> + '_ {
        self.args.iter().filter_map(|a| a.value())
    }

    /// Its body (first region), empty for ops without one.
    pub fn body(&self) -> &[Op] {
        self.regions.first().map(Vec::as_slice).unwrap_or(&[])
    }
}

/// A function: memories, a value arena and the op tree.
#[derive(Debug, Clone, PartialEq)]
pub struct Func {
    /// Name (the workload's).
    pub name: String,
    /// The level its ops belong to.
    pub level: Level,
    /// Memories, in declaration order.
    pub mems: Vec<Mem>,
    /// Names of the values (unique within the function), by [`Value`] index.
    pub values: Vec<String>,
    /// Top-level ops.
    pub body: Vec<Op>,
    /// An index of `values` that keeps [`Func::value`] constant-time.
    naming: Naming,
}

/// The names taken and, per hint, the next suffix to try: [`Func::value`] would otherwise
/// scan every name for every new value, quadratic in the unrolled loops of a large function.
/// It indexes a prefix of `values` and catches up with names pushed behind its back. Not part
/// of a function's identity: two functions with the same values compare equal.
#[derive(Debug, Clone, Default)]
struct Naming {
    taken: std::collections::HashSet<String>,
    next: std::collections::HashMap<String, u32>,
    indexed: usize,
}

impl PartialEq for Naming {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Func {
    /// An empty function.
    pub fn new(name: &str, level: Level) -> Self {
        Func {
            name: name.into(),
            level,
            mems: Vec::new(),
            values: Vec::new(),
            body: Vec::new(),
            naming: Naming::default(),
        }
    }

    /// A new value named `hint`, made unique with a numeric suffix when taken.
    pub fn value(&mut self, hint: &str) -> Value {
        let naming = &mut self.naming;
        if naming.indexed > self.values.len() {
            *naming = Naming::default();
        }
        naming.taken.extend(self.values[naming.indexed..].iter().cloned());
        let mut name = hint.to_string();
        if naming.taken.contains(&name) {
            let n = naming.next.entry(hint.to_string()).or_insert(1);
            loop {
                name = format!("{hint}{n}");
                *n += 1;
                if !naming.taken.contains(&name) {
                    break;
                }
            }
        }
        naming.taken.insert(name.clone());
        self.values.push(name);
        naming.indexed = self.values.len();
        Value(self.values.len() as u32 - 1)
    }

    /// Declares a memory.
    pub fn mem(&mut self, name: &str, elem: Elem, shape: Vec<u64>, readonly: bool) -> MemId {
        self.mems.push(Mem { name: name.into(), elem, shape, readonly, nontemporal: false });
        MemId(self.mems.len() as u32 - 1)
    }

    /// The memory named `name`.
    pub fn mem_named(&self, name: &str) -> Option<MemId> {
        self.mems.iter().position(|m| m.name == name).map(|i| MemId(i as u32))
    }

    /// The declaration of `m`.
    pub fn mem_decl(&self, m: MemId) -> &Mem {
        &self.mems[m.0 as usize]
    }

    /// The name of `v`.
    pub fn name(&self, v: Value) -> &str {
        &self.values[v.0 as usize]
    }
}

/// Calls `f` on every op of `ops` and of their regions, outer ops first.
pub fn walk<'a>(ops: &'a [Op], f: &mut impl FnMut(&'a Op)) {
    for op in ops {
        f(op);
        for r in &op.regions {
            walk(r, f);
        }
    }
}
