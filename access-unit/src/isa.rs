//! The access-unit program format (the "AU ISA").
//!
//! A program is a chain of traversal units (TUs), outermost first; each TU is one loop level and
//! is mapped onto one layer of the unit's lanes x layers grid. A TU iterates a constant range
//! (`dense`), a range whose bounds are two streams of its parent (`range`: CSR row pointers), or
//! a list of indices read from memory (`indexed`: `count` 32-bit indices from `base`, starting
//! at position `from`; the TU's `ite` stream yields the loaded index, so the list really is read).
//! Streams belong to a TU and produce one value per iteration: `ite` (the induction value),
//! memory loads (`load.u32`/`mem.u32`: a 32-bit element at `base + index * scale`, whose index
//! may be another stream, so loads chain into indirection), buffer streams (`load.row`/`mem.row`:
//! a whole row marshaled into the output queue as one operand, whose value is the row's
//! address), `alu` (index arithmetic) and `fwd` (a value of an enclosing TU, or a constant,
//! carried into this level so it can be marshaled per iteration).
//!
//! Layers (the TMU's lane configurations): `single` (one lane, the default), `lockstep L` (L
//! consecutive iterations advance together, one per lane; a final partial step is masked, so
//! inactive lanes issue and emit nothing) and `broadcast` (a scalar layer whose values all lanes
//! of the lockstep layer below share). Callbacks register a control id and up to four stream
//! operands on a TU event: `begin` (before the TU's first iteration, once per parent
//! iteration), `iter` (every iteration) and `end` (after its last); the control id goes to the
//! control FIFO and the operands (stream heads) to the data FIFO of the output queue. This
//! follows the TMU's traversal/stream/layer/callback model (MICRO 2023, REFERENCE.md section 2)
//! and Ember's target ops (`set_dns_tu`, `set_rng_tu`, `set_mem_str`, `set_alu_str`,
//! `set_fwd_str`, `set_*_layer`, `set_operand`, `set_control_token`).

use thiserror::Error;

/// Most TUs (loop levels) in one program.
pub const MAX_LEVELS: usize = 8;
/// Most streams one TU may drive.
pub const MAX_STREAMS_PER_TU: usize = 16;
/// Most streams in one program (stream ids are one byte).
pub const MAX_STREAMS: usize = 255;
/// Most operands one callback may marshal.
pub const MAX_OPERANDS: usize = 4;
/// Most callback registrations in one program.
pub const MAX_CALLBACKS: usize = 256;
/// Most lanes a lockstep layer may name (a unit may have fewer: it checks its own count).
pub const MAX_LANES: u32 = 64;
/// Largest buffer (row) one stream may marshal.
pub const MAX_ROW_BYTES: u32 = 1 << 20;

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
    /// Positions `from..from + count` of a list of 32-bit indices at `base`; the TU's `ite`
    /// stream loads and yields `index[position]` (one memory read per iteration).
    Indexed {
        /// Address of the index list.
        base: u64,
        /// First position: a constant or a stream of an enclosing TU.
        from: Operand,
        /// Number of positions: a constant or a stream of an enclosing TU.
        count: Operand,
    },
}

/// How a TU's iterations map onto the lanes of its layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Layer {
    /// One lane; iterations are scalar.
    #[default]
    Single,
    /// `lanes` consecutive iterations advance together, one per lane; a final partial step is
    /// masked (inactive lanes issue nothing and emit nothing).
    Lockstep {
        /// Lanes per step (2 to [`MAX_LANES`]).
        lanes: u32,
    },
    /// A scalar layer whose values every lane of the lockstep layer below shares.
    Broadcast,
}

impl Layer {
    /// Lanes one step of this layer occupies.
    pub fn lanes(self) -> u32 {
        match self {
            Layer::Lockstep { lanes } => lanes,
            Layer::Single | Layer::Broadcast => 1,
        }
    }
}

/// A traversal unit: one loop level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tu {
    /// The enclosing TU (`None` for the outermost).
    pub parent: Option<TuId>,
    /// Its iteration space.
    pub bounds: Bounds,
    /// The layer configuration it is mapped to.
    pub layer: Layer,
}

/// A stream operand: another stream's current value or a constant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operand {
    /// The value of a stream of this TU or of an enclosing one.
    Stream(StreamId),
    /// A constant.
    Const(i64),
}

impl Operand {
    /// The stream it reads, if it reads one.
    pub fn stream(self) -> Option<StreamId> {
        match self {
            Operand::Stream(s) => Some(s),
            Operand::Const(_) => None,
        }
    }
}

/// Index arithmetic of `alu` streams (on i64).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
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
    /// The TU's induction value (for an `indexed` TU: the index loaded at the position).
    Ite,
    /// A 32-bit memory load at `base + index * scale` (`mem.u32`); yields the loaded value (an
    /// index or offset), which later streams may use as an index: this is how loads chain into
    /// indirection.
    Load {
        /// Base address.
        base: u64,
        /// Element index.
        index: Operand,
        /// Bytes per element.
        scale: u64,
    },
    /// A buffer stream (`mem.row`): a row of `bytes` at `base + index * scale`, marshaled whole
    /// into the output queue as one operand; yields the row's address.
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
        /// Whether its line requests carry the non-temporal hint (rows with no reuse: a cache
        /// configured for it bypasses them or inserts them at LRU).
        non_temporal: bool,
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
    /// A value of an enclosing TU (or a constant) carried into this level, so begin/iter
    /// events of this level can marshal it.
    Fwd {
        /// What is forwarded.
        src: Operand,
    },
}

impl StreamKind {
    /// The operands it reads each iteration (none for `ite`).
    pub fn operands(&self) -> impl Iterator<Item = Operand> {
        let ops = match *self {
            StreamKind::Ite => [None, None],
            StreamKind::Load { index, .. } | StreamKind::Row { index, .. } => [Some(index), None],
            StreamKind::Alu { a, b, .. } => [Some(a), Some(b)],
            StreamKind::Fwd { src } => [Some(src), None],
        };
        ops.into_iter().flatten()
    }
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

/// A callback registration: on `event` of `tu`, push `control` to the control FIFO and the
/// operands' values (their stream heads) to the data FIFO.
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
    /// Too many TUs, streams, callbacks or operands.
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
    /// A lockstep layer with an impossible lane count.
    #[error("t{tu}: lockstep over {lanes} lanes (must be 2 to {max}; use `single` for one lane)")]
    BadLanes {
        /// The TU.
        tu: u8,
        /// The lanes it asks for.
        lanes: u32,
        /// The most allowed.
        max: u32,
    },
    /// Layers that do not fit together.
    #[error("t{tu}: {why}")]
    BadLayer {
        /// The TU.
        tu: u8,
        /// What is wrong.
        why: &'static str,
    },
    /// A buffer stream of an impossible size.
    #[error("s{stream}: a row of {bytes} bytes (must be 1 to {max})")]
    BadRow {
        /// The stream.
        stream: u8,
        /// Its size.
        bytes: u32,
        /// The most allowed.
        max: u32,
    },
}

/// What a verification error is about (see [`AuProgram::verify_located`]), by index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subject {
    /// Traversal unit `t<n>`.
    Tu(usize),
    /// Stream `s<n>`.
    Stream(usize),
    /// The n-th callback registration, in program order.
    Callback(usize),
}

impl AuProgram {
    /// Number of loop levels; TUs are a chain, so a TU's id is its level.
    pub fn levels(&self) -> usize {
        self.tus.len()
    }

    /// Streams driven by `tu`, in configuration order.
    pub fn streams_of(&self, tu: TuId) -> impl Iterator<Item = (StreamId, &Stream)> {
        self.streams.iter().enumerate().filter(move |(_, s)| s.tu == tu).map(|(i, s)| (StreamId(i as u8), s))
    }

    /// Most lanes any layer of the program uses.
    pub fn max_lanes(&self) -> u32 {
        self.tus.iter().map(|t| t.layer.lanes()).max().unwrap_or(1)
    }

    /// Stream storage one iteration of TU `tu` holds in each of its lanes: its rows, and 8 bytes
    /// per scalar stream (at least 8).
    pub fn iteration_bytes(&self, tu: TuId) -> u64 {
        self.streams_of(tu)
            .map(|(_, s)| match s.kind {
                StreamKind::Row { bytes, .. } => u64::from(bytes),
                _ => 8,
            })
            .sum::<u64>()
            .max(8)
    }

    /// Stream storage one iteration of every layer holds together in a lane: what a lane's
    /// storage must hold at least once (the unit gives every layer of a lane the same depth).
    pub fn lane_iteration_bytes(&self) -> u64 {
        (0..self.tus.len()).map(|t| self.iteration_bytes(TuId(t as u8))).sum()
    }

    /// Checks `o` names a constant or a stream of a TU strictly enclosing `tu`.
    fn outer_operand(&self, o: Operand, tu: usize, what: &str) -> Result<(), AuError> {
        if let Operand::Stream(s) = o
            && self.streams.get(s.0 as usize).is_none_or(|st| st.tu.0 as usize >= tu)
        {
            return Err(AuError::BadReference(format!(
                "{what}: s{} is not a stream of a TU enclosing t{tu}",
                s.0
            )));
        }
        Ok(())
    }

    /// Checks structure, references, layers and limits; every program the simulator runs
    /// passes this, so the timing model never meets a dangling id.
    pub fn verify(&self) -> Result<(), AuError> {
        self.verify_located().map_err(|(_, e)| e)
    }

    /// [`AuProgram::verify`], also naming the TU, stream or callback at fault (`None`: the
    /// program as a whole), so that a parser can point at its line.
    pub fn verify_located(&self) -> Result<(), (Option<Subject>, AuError)> {
        if self.tus.is_empty() {
            return Err((None, AuError::Empty));
        }
        let too_many = |what, count, max| {
            if count > max { Err((None, AuError::TooMany { what, count, max })) } else { Ok(()) }
        };
        too_many("traversal units", self.tus.len(), MAX_LEVELS)?;
        too_many("streams", self.streams.len(), MAX_STREAMS)?;
        too_many("callbacks", self.callbacks.len(), MAX_CALLBACKS)?;
        for (i, s) in self.streams.iter().enumerate() {
            if s.tu.0 as usize >= self.tus.len() {
                let e = AuError::BadReference(format!("s{i}: no TU t{}", s.tu.0));
                return Err((Some(Subject::Stream(i)), e));
            }
        }
        for (i, tu) in self.tus.iter().enumerate() {
            self.verify_tu(i, tu).map_err(|e| (Some(Subject::Tu(i)), e))?;
        }
        for (t, _) in self.tus.iter().enumerate() {
            let n = self.streams_of(TuId(t as u8)).count();
            if n > MAX_STREAMS_PER_TU {
                let e = AuError::TooMany { what: "streams in one TU", count: n, max: MAX_STREAMS_PER_TU };
                return Err((Some(Subject::Tu(t)), e));
            }
        }
        for (i, s) in self.streams.iter().enumerate() {
            self.verify_stream(i, s).map_err(|e| (Some(Subject::Stream(i)), e))?;
        }
        for (k, cb) in self.callbacks.iter().enumerate() {
            self.verify_callback(cb).map_err(|e| (Some(Subject::Callback(k)), e))?;
        }
        Ok(())
    }

    /// The checks of TU `i`.
    fn verify_tu(&self, i: usize, tu: &Tu) -> Result<(), AuError> {
        let expected = i.checked_sub(1).map(|p| TuId(p as u8));
        if tu.parent != expected {
            return Err(AuError::NotAChain { tu: i as u8, expected: i.saturating_sub(1) as u8 });
        }
        match tu.bounds {
            Bounds::Dense { .. } => {}
            Bounds::Range { begin, end } => {
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
            Bounds::Indexed { from, count, .. } => {
                self.outer_operand(from, i, &format!("t{i} from"))?;
                self.outer_operand(count, i, &format!("t{i} count"))?;
                for o in [from, count] {
                    if let Operand::Const(c) = o
                        && c < 0
                    {
                        return Err(AuError::BadReference(format!(
                            "t{i}: indexed position or count {c} is negative"
                        )));
                    }
                }
            }
        }
        // Lockstep lanes share one scalar parent through a broadcast layer, as in the TMU.
        match tu.layer {
            Layer::Single => {}
            Layer::Lockstep { lanes } => {
                if !(2..=MAX_LANES).contains(&lanes) {
                    return Err(AuError::BadLanes { tu: i as u8, lanes, max: MAX_LANES });
                }
                if i > 0 && self.tus[i - 1].layer != Layer::Broadcast {
                    return Err(AuError::BadLayer {
                        tu: i as u8,
                        why: "a lockstep layer's parent must be a broadcast layer",
                    });
                }
            }
            Layer::Broadcast => {
                if !matches!(self.tus.get(i + 1).map(|t| t.layer), Some(Layer::Lockstep { .. })) {
                    return Err(AuError::BadLayer {
                        tu: i as u8,
                        why: "a broadcast layer must have a lockstep layer below it",
                    });
                }
            }
        }
        Ok(())
    }

    /// The checks of stream `i`.
    fn verify_stream(&self, i: usize, s: &Stream) -> Result<(), AuError> {
        match s.kind {
            StreamKind::Row { bytes, .. } if bytes == 0 || bytes > MAX_ROW_BYTES => {
                return Err(AuError::BadRow { stream: i as u8, bytes, max: MAX_ROW_BYTES });
            }
            // Forwarding an own-level value would be a copy: only outer values travel (which
            // the order check below then passes).
            StreamKind::Fwd { src } => self.outer_operand(src, s.tu.0 as usize, &format!("s{i} (fwd)"))?,
            _ => {}
        }
        for o in s.kind.operands() {
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
        Ok(())
    }

    /// The checks of a callback.
    fn verify_callback(&self, cb: &Callback) -> Result<(), AuError> {
        if cb.tu.0 as usize >= self.tus.len() {
            return Err(AuError::BadReference(format!("callback {}: no TU t{}", cb.control, cb.tu.0)));
        }
        let count = cb.operands.len();
        if count > MAX_OPERANDS {
            return Err(AuError::TooMany { what: "callback operands", count, max: MAX_OPERANDS });
        }
        for s in &cb.operands {
            let Some(st) = self.streams.get(s.0 as usize) else {
                return Err(AuError::BadReference(format!("callback {}: no stream s{}", cb.control, s.0)));
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
        Ok(())
    }
}
