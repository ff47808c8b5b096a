//! Output-queue entries: what the access unit hands the core.

use crate::isa::MAX_OPERANDS;

/// One callback event: a control id and the values of its operands (scalars, or addresses of
/// rows marshaled into the queue), in registration order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutqEntry {
    /// Control id the core dispatches on.
    pub control: u32,
    /// Operand values; only the first `len` are meaningful.
    pub operands: [u64; MAX_OPERANDS],
    /// Number of operands.
    pub len: u8,
}
