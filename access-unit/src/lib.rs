//! access-unit: the TMU-like access unit that runs a core's irregular lookups ahead of it.
//!
//! The model follows the Tensor Marshaling Unit (Siracusa et al., MICRO 2023; REFERENCE.md
//! section 2). A program ([`isa::AuProgram`]) is a chain of traversal units, one per loop level;
//! each drives streams (induction values, chained loads, index arithmetic) and registers
//! callbacks on its begin/iteration/end events. The unit walks the traversal ahead of the core:
//! every loop level keeps a window of live iterations whose depth is set by the stream storage
//! (the evaluated TMU has 2 KB per lane, 8 lanes), loads are split into cache-line requests and
//! issued outermost level first, up to an outstanding-request limit (128 in the evaluated unit),
//! and callback events leave, in program order, through the output queue to the core. A full
//! output queue stops the unit: that back-pressure is what couples access and execute.
//!
//! This first model keeps the unit's structure and limits; lanes, lockstep/broadcast layers and
//! the double-buffered chunked output queue are refined in later work.

pub mod isa;
pub mod outq;
pub mod text;
pub mod unit;

pub use isa::{
    AluOp, AuError, AuProgram, Bounds, Callback, Event, Operand, Stream, StreamId, StreamKind, Tu, TuId,
};
pub use outq::OutqEntry;
pub use text::{ParseError, parse};
pub use unit::{AccessUnit, AccessUnitConfig, AuCounters, AuFault, AuPorts};
