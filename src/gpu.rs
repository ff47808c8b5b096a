//! Glue between workloads and the GPU baseline: the shape of a gather measured on its indices.

use compiler::{EmbeddingBagInstance, WorkloadSpec};

/// Distinct (table, row) pairs among the workload's lookups (bag `g` belongs to table
/// `g / batch`; bags may differ in size).
pub fn distinct_rows(spec: &WorkloadSpec, inst: &EmbeddingBagInstance) -> u64 {
    let batch = spec.batch.max(1) as usize;
    let mut keys: Vec<u64> = Vec::with_capacity(inst.indices.len());
    for (g, w) in inst.offsets.windows(2).enumerate() {
        let table = (g / batch) as u64;
        keys.extend(inst.indices[w[0] as usize..w[1] as usize].iter().map(|&row| table << 32 | row as u64));
    }
    keys.sort_unstable();
    keys.dedup();
    keys.len() as u64
}
