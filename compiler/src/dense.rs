//! Dense layers around an embedding operation, for end-to-end mode: their shapes as a workload
//! lists them (`[[workload.dense]]`) and the work they cost. They are not compiled: each
//! system runs them on its dense units as a roofline (the root crate's `dense` module).
//!
//! ```toml
//! [[workload.dense]]
//! kind = "mlp"                      # GEMMs of batch x sizes[i] by sizes[i] x sizes[i+1]
//! name = "bottom_mlp"
//! sizes = [13, 512, 256, 128]
//!
//! [[workload.dense]]
//! kind = "attention"                # per sample: QK^T and PV over every head
//! name = "attention"
//! heads = 16
//! queries = 1
//! keys = 2048
//! head_dim = 128
//! ```

use serde::Deserialize;

/// One dense layer (or a stack of them).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum DenseLayer {
    /// A multilayer perceptron over the batch: one GEMM per pair of consecutive widths.
    Mlp {
        /// Name in reports.
        name: String,
        /// Layer widths, input first.
        sizes: Vec<u64>,
    },
    /// Attention per sample: scores `queries x keys` per head, then the weighted sum of values.
    Attention {
        /// Name in reports.
        name: String,
        /// Heads.
        heads: u64,
        /// Queries per sample.
        queries: u64,
        /// Keys (and values) per sample.
        keys: u64,
        /// Elements per head.
        head_dim: u64,
    },
}

/// The work of a dense layer: arithmetic and the bytes it must move at least.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DenseCost {
    /// Floating-point operations (2 per multiply-add).
    pub flops: f64,
    /// Bytes read and written: weights once, activations in and out.
    pub bytes: f64,
}

impl DenseLayer {
    /// The layer's name.
    pub fn name(&self) -> &str {
        match self {
            DenseLayer::Mlp { name, .. } | DenseLayer::Attention { name, .. } => name,
        }
    }

    /// Checks the shape; the message names the field at fault.
    pub fn validate(&self) -> Result<(), String> {
        match self {
            DenseLayer::Mlp { sizes, .. } => {
                if sizes.len() < 2 {
                    return Err("sizes: an MLP needs at least an input and an output width".into());
                }
                if let Some(i) = sizes.iter().position(|&w| w == 0) {
                    return Err(format!("sizes[{i}] = 0: every width must be at least 1"));
                }
            }
            DenseLayer::Attention { heads, queries, keys, head_dim, .. } => {
                for (field, v) in
                    [("heads", heads), ("queries", queries), ("keys", keys), ("head_dim", head_dim)]
                {
                    if *v == 0 {
                        return Err(format!("{field}: must be at least 1"));
                    }
                }
            }
        }
        Ok(())
    }

    /// The matrix products the layer runs one after another (each a kernel of its own on a GPU,
    /// a step that needs the previous one's whole output on a chip of cores): an MLP's one per
    /// pair of consecutive widths, attention's two (scores, then the weighted sum of values).
    pub fn gemms(&self) -> u64 {
        match self {
            DenseLayer::Mlp { sizes, .. } => sizes.len().saturating_sub(1) as u64,
            DenseLayer::Attention { .. } => 2,
        }
    }

    /// The work for `batch` samples with `elem_bytes` per element.
    pub fn cost(&self, batch: u64, elem_bytes: u64) -> DenseCost {
        let (b, e) = (batch as f64, elem_bytes as f64);
        match self {
            DenseLayer::Mlp { sizes, .. } => {
                sizes.windows(2).fold(DenseCost { flops: 0.0, bytes: 0.0 }, |c, w| {
                    let (i, o) = (w[0] as f64, w[1] as f64);
                    DenseCost { flops: c.flops + 2.0 * b * i * o, bytes: c.bytes + e * (i * o + b * (i + o)) }
                })
            }
            DenseLayer::Attention { heads, queries, keys, head_dim, .. } => {
                let (h, q, k, d) = (*heads as f64, *queries as f64, *keys as f64, *head_dim as f64);
                // QK^T and PV: 2 q k d flops each; Q, K, V in and the output out.
                DenseCost { flops: b * h * 4.0 * q * k * d, bytes: e * b * h * (2.0 * q * d + 2.0 * k * d) }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mlp_and_attention_costs_count_every_gemm() {
        let mlp = DenseLayer::Mlp { name: "m".into(), sizes: vec![13, 512, 256] };
        let c = mlp.cost(128, 2);
        assert_eq!(c.flops, 2.0 * 128.0 * (13.0 * 512.0 + 512.0 * 256.0));
        assert_eq!(c.bytes, 2.0 * (13.0 * 512.0 + 128.0 * 525.0 + 512.0 * 256.0 + 128.0 * 768.0));
        let att = DenseLayer::Attention { name: "a".into(), heads: 2, queries: 1, keys: 64, head_dim: 8 };
        assert_eq!(att.cost(3, 2).flops, 3.0 * 2.0 * 4.0 * 64.0 * 8.0);
        assert_eq!((mlp.gemms(), att.gemms()), (2, 2));
        assert!(DenseLayer::Mlp { name: "x".into(), sizes: vec![4] }.validate().is_err());
        let zero = DenseLayer::Mlp { name: "x".into(), sizes: vec![4, 0, 2] };
        assert_eq!(zero.validate().unwrap_err(), "sizes[1] = 0: every width must be at least 1");
        let bad = DenseLayer::Attention { name: "a".into(), heads: 0, queries: 1, keys: 1, head_dim: 1 };
        assert_eq!(bad.validate().unwrap_err(), "heads: must be at least 1");
    }
}
