//! Glue between workloads and the GPU baseline: the shape of a gather measured on its indices.

use compiler::{EmbeddingBagInstance, WorkloadSpec};

/// Distinct (table, row) pairs among the workload's lookups.
pub fn distinct_rows(spec: &WorkloadSpec, inst: &EmbeddingBagInstance) -> u64 {
    let per_table = (spec.batch as usize) * (spec.bag_size as usize);
    let mut keys: Vec<u64> = inst
        .indices
        .iter()
        .enumerate()
        .map(|(j, &row)| ((j / per_table.max(1)) as u64) << 32 | row as u64)
        .collect();
    keys.sort_unstable();
    keys.dedup();
    keys.len() as u64
}
