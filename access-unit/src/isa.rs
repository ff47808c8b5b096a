//! The access-unit program format (the "AU ISA").
//!
//! A program is a chain of traversal units (TUs), outermost first. A TU iterates a constant range
//! (`dense`) or a range whose bounds are two streams of its parent (`range`: CSR row pointers).
//! Streams belong to a TU and produce one value per iteration: `ite` (the induction value),
//! `load` (a memory load at `base + index * scale`, whose index may be another stream, so loads
//! chain into indirection), and `alu` (index arithmetic). Callbacks register a control id and up
//! to four stream operands on a TU event: `begin` (before the TU's first iteration, once per
//! parent iteration), `iter` (every iteration) and `end` (after its last). This follows the
//! TMU's traversal/stream/callback model (MICRO 2023) and Ember's DLC `configure_access_engine`.

use thiserror::Error;

/// Most TUs (loop levels) in one program.
pub const MAX_LEVELS: usize = 8;
/// Most streams one TU may drive.
pub const MAX_STREAMS_PER_TU: usize = 16;
/// Most operands one callback may marshal.
pub const MAX_OPERANDS: usize = 4;

/// Index of a TU in its program (`t0`, `t1`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TuId(pub u8);

/// Index of a stream in its program (`s0`, `s1`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StreamId(pub u8);

/// The iteration space of a TU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bounds {
    /// `begin..end` with constant bounds.
    Dense {
        /// First value.
        begin: u64,
        /// One past the last value.
        end: u64,
    },
    /// `begin..end` read from two streams of the parent TU.
    Range {
        /// Stream holding the first value.
        begin: StreamId,
        /// Stream holding one past the last value.
        end: StreamId,
    },
}

/// A traversal unit: one loop level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tu {
    /// The enclosing TU (`None` for the outermost).
    pub parent: Option<TuId>,
    /// Its iteration space.
    pub bounds: Bounds,
}

/// A stream operand: another stream's current value or a constant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operand {
    /// The value of a stream of this TU or of an enclosing one.
    Stream(StreamId),
    /// A constant.
    Const(i64),
}

/// Index arithmetic of `alu` streams (on i64).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AluOp {
    /// a + b
    Add,
    /// a - b
    Sub,
    /// a * b
    Mul,
    /// a / b (division by zero faults)
    Div,
    /// a % b (division by zero faults)
    Rem,
}

/// What a stream produces each iteration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamKind {
    /// The TU's induction value.
    Ite,
    /// A 32-bit load at `base + index * scale`; yields the loaded value (an index or offset),
    /// which later streams may use as an index: this is how loads chain into indirection.
    Load {
        /// Base address.
        base: u64,
        /// Element index.
        index: Operand,
        /// Bytes per element.
        scale: u64,
    },
    /// A row of `bytes` at `base + index * scale`; yields the row's address. The row itself
    /// travels to the core through the output queue.
    Row {
        /// Base address.
        base: u64,
        /// Row index.
        index: Operand,
        /// Bytes per row.
        scale: u64,
        /// Bytes loaded.
        bytes: u32,
        /// Whether these loads are the embedding lookups whose latency is reported.
        lookup: bool,
    },
    /// `a op b`.
    Alu {
        /// The operation.
        op: AluOp,
        /// Left operand.
        a: Operand,
        /// Right operand.
        b: Operand,
    },
}

/// A stream and the TU that drives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stream {
    /// The TU it advances with.
    pub tu: TuId,
    /// What it produces.
    pub kind: StreamKind,
}

/// A TU event a callback can be registered on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Event {
    /// Before the TU's first iteration.
    Begin,
    /// Every iteration.
    Iter,
    /// After the TU's last iteration.
    End,
}

/// A callback registration: on `event` of `tu`, push `control` and the operands' values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Callback {
    /// The TU whose event triggers it.
    pub tu: TuId,
    /// The event.
    pub event: Event,
    /// Control id the core dispatches on.
    pub control: u32,
    /// Streams whose values are marshaled with it (at most [`MAX_OPERANDS`]).
    pub operands: Vec<StreamId>,
}

/// A complete access-unit program.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AuProgram {
    /// TUs, outermost first.
    pub tus: Vec<Tu>,
    /// Streams in configuration order (arbitration order within a TU).
    pub streams: Vec<Stream>,
    /// Callback registrations in program order.
    pub callbacks: Vec<Callback>,
}

/// Why a program is not valid.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum AuError {
    /// The program has no TU.
    #[error("the program has no traversal unit")]
    Empty,
    /// Too many TUs, streams or operands.
    #[error("too many {what}: {count} (at most {max})")]
    TooMany {
        /// What overflowed.
        what: &'static str,
        /// How many there are.
        count: usize,
        /// The limit.
        max: usize,
    },
    /// TUs must form a chain: t0 outermost, each t(i+1) nested in t(i).
    #[error("t{tu} must be nested in t{expected} (TUs form a chain, outermost first)")]
    NotAChain {
        /// The offending TU.
        tu: u8,
        /// The parent it needs.
        expected: u8,
    },
    /// A reference to something that does not exist or is not visible there.
    #[error("{0}")]
    BadReference(String),
}

impl AuProgram {
    /// Level (0 = outermost) of each TU; TUs are a chain, so a TU's id is its level.
    pub fn levels(&self) -> usize {
        self.tus.len()
    }

    /// Streams driven by `tu`, in configuration order.
    pub fn streams_of(&self, tu: TuId) -> impl Iterator<Item = (StreamId, &Stream)> {
        self.streams.iter().enumerate().filter(move |(_, s)| s.tu == tu).map(|(i, s)| (StreamId(i as u8), s))
    }

    /// Checks structure and references; every program the simulator runs passes this.
    pub fn verify(&self) -> Result<(), AuError> {
        if self.tus.is_empty() {
            return Err(AuError::Empty);
        }
        let too_many =
            |what, count, max| if count > max { Err(AuError::TooMany { what, count, max }) } else { Ok(()) };
        too_many("traversal units", self.tus.len(), MAX_LEVELS)?;
        too_many("streams", self.streams.len(), 255)?;
        for (i, tu) in self.tus.iter().enumerate() {
            let expected = i.checked_sub(1).map(|p| TuId(p as u8));
            if tu.parent != expected {
                return Err(AuError::NotAChain { tu: i as u8, expected: i.saturating_sub(1) as u8 });
            }
            if let Bounds::Range { begin, end } = tu.bounds {
                let Some(parent) = tu.parent else {
                    return Err(AuError::BadReference(format!("t{i}: a range TU needs a parent")));
                };
                for s in [begin, end] {
                    if self.streams.get(s.0 as usize).map(|st| st.tu) != Some(parent) {
                        return Err(AuError::BadReference(format!(
                            "t{i}: bound s{} is not a stream of t{}",
                            s.0, parent.0
                        )));
                    }
                }
            }
        }
        for (t, _) in self.tus.iter().enumerate() {
            too_many("streams in one TU", self.streams_of(TuId(t as u8)).count(), MAX_STREAMS_PER_TU)?;
        }
        for (i, s) in self.streams.iter().enumerate() {
            if s.tu.0 as usize >= self.tus.len() {
                return Err(AuError::BadReference(format!("s{i}: no TU t{}", s.tu.0)));
            }
            let operands: Vec<Operand> = match s.kind {
                StreamKind::Ite => vec![],
                StreamKind::Load { index, .. } => vec![index],
                StreamKind::Row { index, bytes, .. } => {
                    if bytes == 0 {
                        return Err(AuError::BadReference(format!("s{i}: a row of 0 bytes")));
                    }
                    vec![index]
                }
                StreamKind::Alu { a, b, .. } => vec![a, b],
            };
            for o in operands {
                if let Operand::Stream(src) = o {
                    // Streams are evaluated in order, so a stream may only read earlier ones
                    // of its own TU or streams of enclosing TUs.
                    let ok = self
                        .streams
                        .get(src.0 as usize)
                        .is_some_and(|st| st.tu < s.tu || (st.tu == s.tu && (src.0 as usize) < i));
                    if !ok {
                        return Err(AuError::BadReference(format!(
                            "s{i}: operand s{} is not an earlier stream of t{} or of an enclosing TU",
                            src.0, s.tu.0
                        )));
                    }
                }
            }
        }
        for cb in &self.callbacks {
            if cb.tu.0 as usize >= self.tus.len() {
                return Err(AuError::BadReference(format!("callback {}: no TU t{}", cb.control, cb.tu.0)));
            }
            too_many("callback operands", cb.operands.len(), MAX_OPERANDS)?;
            for s in &cb.operands {
                let Some(st) = self.streams.get(s.0 as usize) else {
                    return Err(AuError::BadReference(format!(
                        "callback {}: no stream s{}",
                        cb.control, s.0
                    )));
                };
                // Begin/end happen outside the TU's iterations: only enclosing TUs' values exist.
                let visible = match cb.event {
                    Event::Iter => st.tu <= cb.tu,
                    Event::Begin | Event::End => st.tu < cb.tu,
                };
                if !visible {
                    return Err(AuError::BadReference(format!(
                        "callback {}: s{} (of t{}) has no value at that event of t{}",
                        cb.control, s.0, st.tu.0, cb.tu.0
                    )));
                }
            }
        }
        Ok(())
    }
}
