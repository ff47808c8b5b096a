//! TT-EmbeddingBag's reference semantics: rows decompressed from their tensor-train cores,
//! pooled per bag (TT-Rec, REFERENCE.md section 4; the shape is [`TtShape`]).
//!
//! Core values are procedural (table `t`'s stored row `s`, column `r` is
//! `sim_core::procedural::table_value(seed, t, s, r)`, multiples of 1/256 in -1..1), so every
//! product of a `G1`, a `G2` and a `G3` value is exact in f64, and so is the sum of a bag's
//! products: the reference is that sum rounded once. The compiled code rounds on the way (the
//! partial contraction `T = G1 x G2` is exact in f32 for ranks up to 64, each `T x G3` product
//! and each add round), so outputs are checked against a bound per element, `2 n u sum |terms|`
//! over the `n` products `T[r2] * G3[r2]` of the element (`u` = 2^-24) as for knowledge-graph
//! scores, which holds for any order of the adds.

use crate::embedding_bag::EmbeddingBagInstance;
use crate::workload::{Pooling, TtShape, WorkloadSpec};
use sim_core::procedural::{column_key, keyed_value};

/// The reference output of a TT-EmbeddingBag (`bags x dim`, row-major) and each element's
/// error bound.
pub fn reference(inst: &EmbeddingBagInstance, spec: &WorkloadSpec, tt: &TtShape) -> (Vec<f32>, Vec<f32>) {
    let dim = spec.dim as usize;
    let rank = tt.rank as usize;
    let (d1, d2, d3) = (tt.factor(0).1 as usize, tt.factor(1).1 as usize, tt.factor(2).1 as usize);
    let (mut out, mut bounds) =
        (vec![0.0f32; spec.bags() as usize * dim], vec![0.0f32; spec.bags() as usize * dim]);
    let (mut sum, mut magnitude) = (vec![0.0f64; dim], vec![0.0f64; dim]);
    let mut t_row = vec![0.0f64; d1 * d2 * rank];
    for (g, w) in inst.offsets.windows(2).enumerate() {
        let table = (g / spec.batch.max(1) as usize) as u32;
        let keys: Vec<u64> = (0..tt.rank).map(|r| column_key(inst.table_seed, table, r)).collect();
        let value = |row: u64, r: usize| f64::from(keyed_value(keys[r], row));
        sum.fill(0.0);
        magnitude.fill(0.0);
        for &index in &inst.indices[w[0] as usize..w[1] as usize] {
            let i = u64::from(index);
            let slice = |c: usize| tt.core_start(c) + tt.digit(c, i) * tt.slice_rows(c);
            let (s1, s2, s3) = (slice(0), slice(1), slice(2));
            // T[a1, a2, r2] = sum over r1 of G1[a1][r1] * G2[r1][a2][r2] (exact).
            for a1 in 0..d1 {
                for a2 in 0..d2 {
                    for r2 in 0..rank {
                        t_row[(a1 * d2 + a2) * rank + r2] = (0..rank)
                            .map(|r1| value(s1 + a1 as u64, r1) * value(s2 + (r1 * d2 + a2) as u64, r2))
                            .sum();
                    }
                }
            }
            for p in 0..d1 * d2 {
                for a3 in 0..d3 {
                    let col = p * d3 + a3;
                    for r2 in 0..rank {
                        let term = t_row[p * rank + r2] * value(s3 + a3 as u64, r2);
                        sum[col] += term;
                        magnitude[col] += term.abs();
                    }
                }
            }
        }
        let terms = (w[1] - w[0]) as usize * rank;
        let scale = if spec.pooling == Pooling::Mean { 1.0 / (w[1] - w[0]).max(1) as f32 } else { 1.0 };
        let u = 1.0 / f64::from(1u32 << 24);
        for k in 0..dim {
            let bound = 2.0 * terms as f64 * u * magnitude[k];
            let (value, bound) = if spec.pooling == Pooling::Mean {
                // Then one rounded multiply by the rounded reciprocal.
                ((sum[k] as f32) * scale, (bound + 4.0 * u * sum[k].abs()) * f64::from(scale))
            } else {
                // `+ 0.0`: an empty bag is +0.0, as the compiled code stores.
                (sum[k] as f32 + 0.0, bound)
            };
            out[g * dim + k] = value;
            bounds[g * dim + k] = bound as f32;
        }
    }
    (out, bounds)
}
