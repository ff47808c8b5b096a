//! End-to-end mode: a workload's dense layers ([`compiler::dense`]) on a system's dense units,
//! as a roofline. Each layer takes the longer of its arithmetic at the units' peak and its
//! bytes at the memory's bandwidth, plus a fixed per-layer overhead (a kernel launch on a GPU,
//! a fork on the DAE chip) and a fixed time per matrix product it runs (a small GEMM kernel
//! on a GPU, measured on an H100 at 5.1 us with its epilogue: `docs/h100-measured.md`; a
//! barrier after each on the DAE chip). The DAE's per-core vector/matrix units and the
//! GPU's tensor cores are described by their peak rate in the system preset's `[dense]`.

use compiler::dense::DenseLayer;
use sim_core::{PS_PER_SECOND, Tick};

/// A system's dense units.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DenseUnits {
    /// Peak dense rate, flop/s.
    pub peak_flops: f64,
    /// Memory bandwidth the layers stream at, bytes/s.
    pub bandwidth: f64,
    /// Fixed time per layer.
    pub layer_overhead: Tick,
    /// Fixed time per matrix product of a layer ([`DenseLayer::gemms`]).
    pub gemm_overhead: Tick,
    /// Bytes per element of weights and activations.
    pub elem_bytes: u64,
}

/// One layer's roofline time.
#[derive(Debug, Clone, PartialEq)]
pub struct LayerTime {
    /// The layer.
    pub name: String,
    /// Its time, overhead included.
    pub time: Tick,
    /// Whether its arithmetic (not its bytes) set the time.
    pub compute_bound: bool,
}

impl DenseUnits {
    /// The time of every layer for `batch` samples.
    pub fn times(&self, layers: &[DenseLayer], batch: u64) -> Vec<LayerTime> {
        layers
            .iter()
            .map(|l| {
                let c = l.cost(batch, self.elem_bytes);
                // The config checks both rates above zero; the floor only keeps a hand-built
                // zero from dividing 0 by 0 (a huge quotient saturates the tick conversion).
                let compute = c.flops / self.peak_flops.max(f64::MIN_POSITIVE);
                let memory = c.bytes / self.bandwidth.max(f64::MIN_POSITIVE);
                // Saturating: a preset's overheads are bounded only by the time type.
                let fixed = self.layer_overhead.saturating_add(l.gemms().saturating_mul(self.gemm_overhead));
                let t = ((compute.max(memory) * PS_PER_SECOND as f64).ceil() as Tick).saturating_add(fixed);
                LayerTime { name: l.name().to_string(), time: t, compute_bound: compute >= memory }
            })
            .collect()
    }

    /// The time of all layers, one after another.
    pub fn total(&self, layers: &[DenseLayer], batch: u64) -> Tick {
        self.times(layers, batch).iter().fold(0, |sum, t| sum.saturating_add(t.time))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_layer_takes_the_longer_of_compute_and_memory() {
        let u = DenseUnits {
            peak_flops: 1e12,
            bandwidth: 1e9,
            layer_overhead: 1000,
            gemm_overhead: 0,
            elem_bytes: 2,
        };
        // 2 x 1 x 1000 x 1000 = 2e6 flops (2 us) against 2 x (1e6 + 2000) bytes (2.004 ms).
        let mlp = DenseLayer::Mlp { name: "m".into(), sizes: vec![1000, 1000] };
        let t = &u.times(std::slice::from_ref(&mlp), 1)[0];
        assert!(!t.compute_bound);
        // (Rounded up to whole picoseconds from a float: within one.)
        assert!(t.time.abs_diff(2_004_000_000 + 1000) <= 1, "{}", t.time);
        // At a batch of a million samples and 1 TB/s the arithmetic (2e12 flops, 2 s) dominates
        // the bytes (4 GB, 4 ms).
        let fast = DenseUnits { bandwidth: 1e12, ..u };
        let t = &fast.times(std::slice::from_ref(&mlp), 1_000_000)[0];
        assert!(t.compute_bound);
        assert!(u.total(&[mlp.clone(), mlp], 1).abs_diff(2 * (2_004_000_000 + 1000)) <= 2);
    }

    #[test]
    fn each_matrix_product_of_a_layer_pays_the_gemm_overhead() {
        let u = DenseUnits {
            peak_flops: 1e21,
            bandwidth: 1e21,
            layer_overhead: 3000,
            gemm_overhead: 5000,
            elem_bytes: 2,
        };
        // Three GEMMs and a negligible roofline: one layer overhead and three GEMM overheads.
        let mlp = DenseLayer::Mlp { name: "m".into(), sizes: vec![13, 512, 256, 32] };
        let t = u.times(std::slice::from_ref(&mlp), 128)[0].time;
        assert!((3000 + 3 * 5000..3000 + 3 * 5000 + 2).contains(&t), "{t}");
        let att = DenseLayer::Attention { name: "a".into(), heads: 1, queries: 1, keys: 1, head_dim: 1 };
        let t = u.times(std::slice::from_ref(&att), 1)[0].time;
        assert!((3000 + 2 * 5000..3000 + 2 * 5000 + 2).contains(&t), "{t}");
    }

    #[test]
    fn a_rate_below_one_flop_per_second_is_taken_as_given() {
        // 2 flops at 0.1 flop/s: 20 s (a floor of 1 flop/s once made it 2 s).
        let u = DenseUnits {
            peak_flops: 0.1,
            bandwidth: 1e21,
            layer_overhead: 0,
            gemm_overhead: 0,
            elem_bytes: 2,
        };
        let mlp = DenseLayer::Mlp { name: "m".into(), sizes: vec![1, 1] };
        assert_eq!(u.total(std::slice::from_ref(&mlp), 1), 20 * PS_PER_SECOND);
    }
}
