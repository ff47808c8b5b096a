//! access-unit: the TMU-like access unit that runs a core's irregular lookups ahead of it.
//!
//! The model follows the Tensor Marshaling Unit (Siracusa et al., MICRO 2023; REFERENCE.md
//! section 2). A program ([`isa::AuProgram`]) is a chain of traversal units, one per loop level
//! (dense, CSR range, or indexed over a list read from memory); each drives streams (induction
//! values, chained loads, buffer rows, index arithmetic, forwarded parent values) and registers
//! callbacks on its begin/iteration/end events. Each TU is mapped onto one layer of a lanes x
//! layers grid (the evaluated TMU: 8 lanes, 4 layers, 2 KiB of stream storage per lane, 128
//! outstanding requests): a `single` layer uses one lane, a `lockstep L` layer advances L
//! consecutive iterations together, one per lane, masking a partial last step, and a
//! `broadcast` layer shares a scalar parent's values with the lanes below. The unit walks the
//! traversal ahead of the core: each layer keeps a window of live iterations whose depth follows
//! from its lanes' storage, loads are split into cache-line requests arbitrated outer layer
//! first and round-robin over lanes, up to the outstanding-request limit, and callback events
//! leave in program order into the output queue: control and data FIFOs in chunks, written into
//! the core's private L2 and handed to the core a chunk at a time, double-buffered so the unit
//! fills one chunk while the core drains the other. A full queue stops the unit: that
//! back-pressure is what couples access and execute. [`unit`](mod@unit) documents the timing rules.
#![warn(missing_docs)]

pub mod isa;
pub mod outq;
pub mod text;
pub mod unit;

pub use isa::{
    AluOp, AuError, AuProgram, Bounds, Callback, Event, Layer, Operand, Stream, StreamId, StreamKind,
    Subject, Tu, TuId,
};
pub use outq::OutqEntry;
pub use text::{ParseError, parse};
pub use unit::{AccessUnit, AccessUnitConfig, AuBuildError, AuCounters, AuFault, AuPorts, OUTQ_BASE};
