//! Non-temporal hints (beyond Ember): rows of a table that the batch does not reuse are loaded
//! with the non-temporal hint, so a cache configured for it (the LLC's `non_temporal` policy)
//! does not fill them and keeps its capacity for what is reused (offsets, indices, hot rows).
//!
//! The decision is per memory, from the instance: the fraction of lookups that touch a row an
//! earlier lookup of the batch already touched. Below [`REUSE_THRESHOLD`] the memory is marked
//! `nontemporal`; buffer and vector streams over it then carry the hint.

use crate::ir::Func;

/// Memories whose rows are reused by fewer than this fraction of lookups get the hint.
pub const REUSE_THRESHOLD: f64 = 0.05;

/// Marks the read-only row memories of `f` named in `reuse` (memory name, reused fraction)
/// whose reuse is below [`REUSE_THRESHOLD`].
pub fn nontemporal(f: &Func, reuse: &[(&str, f64)]) -> Func {
    let mut out = f.clone();
    for m in &mut out.mems {
        let low = reuse.iter().any(|(name, r)| *name == m.name && *r < REUSE_THRESHOLD);
        if low && m.readonly && m.elem.is_float() && m.shape.len() >= 2 {
            m.nontemporal = true;
        }
    }
    out
}
