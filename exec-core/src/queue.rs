//! Output-queue entries: what the access unit hands the core.
//!
//! Each entry is one callback event of the access unit (the TMU's begin/iteration/end events):
//! a control id, which `pop_control` returns and the core program dispatches on, and up to four
//! operands, which `pop_operand` returns in order. An operand is a scalar (a bag index, a
//! weight's bits) or the address of a row the access unit marshaled into the queue, which the
//! core reads with `vldq`.

/// Operands an entry can carry.
pub const MAX_OPERANDS: usize = 4;

/// One callback event from the access unit: a control id and up to 4 operands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct QueueEntry {
    /// The callback id that `pop_control` returns.
    pub control: u32,
    /// The operands; only the first `len` are meaningful.
    pub operands: [u64; 4],
    /// Operands carried, `0..=4` (a larger value is treated as 4 by [`QueueEntry::operands`];
    /// the core faults when a program pops past the carried operands).
    pub len: u8,
}

impl QueueEntry {
    /// An entry with `control` and `operands`; `None` if there are more than four operands.
    pub fn new(control: u32, operands: &[u64]) -> Option<Self> {
        if operands.len() > MAX_OPERANDS {
            return None;
        }
        let mut entry = QueueEntry { control, operands: [0; 4], len: operands.len() as u8 };
        entry.operands[..operands.len()].copy_from_slice(operands);
        Some(entry)
    }

    /// The carried operands.
    pub fn operands(&self) -> &[u64] {
        &self.operands[..(self.len as usize).min(MAX_OPERANDS)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_and_reads_entries() {
        let e = QueueEntry::new(7, &[1, 2]).unwrap();
        assert_eq!(e.control, 7);
        assert_eq!(e.operands(), &[1, 2]);
        assert!(QueueEntry::new(0, &[0; 5]).is_none());
        let odd = QueueEntry { control: 0, operands: [1, 2, 3, 4], len: 200 };
        assert_eq!(odd.operands(), &[1, 2, 3, 4]);
    }
}
