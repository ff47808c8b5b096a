//! Passes over the IRs, each switchable by name, and the `-O` levels that group them.
//!
//! The optimization ladder of Ember (emb-opt0..3) is `-O0`..`-O3`:
//!
//! | level | passes |
//! |---|---|
//! | `-O0` | `decouple`, `simplify-mem` |
//! | `-O1` | `-O0` + `vectorize` |
//! | `-O2` | `-O1` + `bufferize`, `hoist` |
//! | `-O3` | `-O2` + `align-queues` |
//!
//! `simplify-mem` (keeping a bag's output row in vector registers instead of loading and
//! storing it per lookup) is on at every level, as Ember's SimplifyMemOps runs in its default
//! pipeline; it can only apply once a row's chunks are in one callback, that is after
//! bufferization, so at `-O0` and `-O1` it finds nothing to do. On a core-only target
//! `decouple`, `bufferize` and `align-queues` do not apply; `vectorize` and `simplify-mem`
//! transform the loop-level program the core runs.
//!
//! `hoist` (beyond Ember, at `-O2` and `-O3`, after `simplify-mem`) moves an inner loop's
//! loop-invariant vector arithmetic (a knowledge-graph triple's `h * r`) from its `iter`
//! callback to its `begin` callback, once per outer iteration, and keeps the results in a row
//! of the core's scratch; like `simplify-mem`, it needs a row's chunks in one callback, so it
//! finds nothing before bufferization, and nothing on a core-only target (no callbacks).
//!
//! `nontemporal` (beyond Ember, in no level: add it with `--passes` or `passes = [...]`) marks
//! tables whose rows the batch does not reuse, so the access unit's loads of them carry the
//! non-temporal hint.

pub mod align;
pub mod bufferize;
pub mod dce;
pub mod decouple;
pub mod hoist;
pub mod nontemporal;
pub mod simplify_mem;
pub mod to_dlc;
pub mod vectorize;

use thiserror::Error;

/// A pass that cannot transform its input.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("pass {pass}: {message}")]
pub struct PassError {
    /// The pass.
    pub pass: &'static str,
    /// Why.
    pub message: String,
}

impl PassError {
    /// An error of `pass`.
    pub fn new(pass: &'static str, message: impl Into<String>) -> Self {
        PassError { pass, message: message.into() }
    }
}

/// A switchable pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Pass {
    /// Loop level to SLC: lookups to the access unit, compute to callbacks.
    Decouple,
    /// Rows in vector chunks instead of elements.
    Vectorize,
    /// One callback per row with the row marshaled as a buffer.
    Bufferize,
    /// Core-side counters instead of marshaled induction values.
    AlignQueues,
    /// A bag's output row in registers instead of memory.
    SimplifyMem,
    /// Non-temporal hints on rows the batch does not reuse (beyond Ember; in no `-O` level).
    NonTemporal,
    /// Loop-invariant callback code into `begin` callbacks (beyond Ember).
    Hoist,
}

impl Pass {
    /// Every pass, in pipeline order.
    pub const ALL: [Pass; 7] = [
        Pass::Decouple,
        Pass::NonTemporal,
        Pass::Vectorize,
        Pass::Bufferize,
        Pass::SimplifyMem,
        Pass::Hoist,
        Pass::AlignQueues,
    ];

    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Pass::Decouple => "decouple",
            Pass::Vectorize => "vectorize",
            Pass::Bufferize => "bufferize",
            Pass::AlignQueues => "align-queues",
            Pass::SimplifyMem => "simplify-mem",
            Pass::NonTemporal => "nontemporal",
            Pass::Hoist => "hoist",
        }
    }

    /// The pass named `name`.
    pub fn from_name(name: &str) -> Option<Pass> {
        Pass::ALL.into_iter().find(|p| p.name() == name)
    }
}

/// A set of enabled passes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Passes(u8);

impl Passes {
    /// The passes of optimization level `level` (0..=3).
    pub fn level(level: u8) -> Option<Passes> {
        let mut p = Passes(0).with(Pass::Decouple).with(Pass::SimplifyMem);
        if level > 3 {
            return None;
        }
        for (l, pass) in
            [(1, Pass::Vectorize), (2, Pass::Bufferize), (2, Pass::Hoist), (3, Pass::AlignQueues)]
        {
            if level >= l {
                p = p.with(pass);
            }
        }
        Some(p)
    }

    /// Parses a comma-separated list of pass names (an empty list enables none; a name twice
    /// is an error, as a typo for another pass would be).
    pub fn parse(list: &str) -> Result<Passes, String> {
        let mut p = Passes(0);
        if list.trim().is_empty() {
            return Ok(p);
        }
        for name in list.split(',').map(str::trim) {
            if name.is_empty() {
                return Err(format!("an empty pass name in `{list}`"));
            }
            let pass = Pass::from_name(name).ok_or_else(|| {
                let known: Vec<&str> = Pass::ALL.iter().map(|p| p.name()).collect();
                format!("unknown pass `{name}` (known: {})", known.join(", "))
            })?;
            if p.has(pass) {
                return Err(format!("pass `{name}` is listed twice"));
            }
            p = p.with(pass);
        }
        Ok(p)
    }

    /// This set plus `pass`.
    pub fn with(self, pass: Pass) -> Passes {
        Passes(self.0 | 1 << pass as u8)
    }

    /// This set without `pass`.
    pub fn without(self, pass: Pass) -> Passes {
        Passes(self.0 & !(1 << pass as u8))
    }

    /// Whether `pass` is enabled.
    pub fn has(self, pass: Pass) -> bool {
        self.0 & (1 << pass as u8) != 0
    }

    /// The enabled passes' names, in pipeline order.
    pub fn names(self) -> Vec<&'static str> {
        Pass::ALL.into_iter().filter(|p| self.has(*p)).map(Pass::name).collect()
    }
}

impl Default for Passes {
    /// `-O3`.
    fn default() -> Self {
        Passes::level(3).expect("level 3 exists")
    }
}
