//! End-to-end mode: a workload's dense layers ([`compiler::dense`]) on a system's dense units,
//! as a roofline. Each layer takes the longer of its arithmetic at the units' peak and its
//! bytes at the memory's bandwidth, plus a fixed per-layer overhead (a kernel launch on a GPU,
//! a barrier on the DAE chip). The DAE's per-core vector/matrix units and the GPU's tensor
//! cores are described by their peak rate in the system preset's `[dense]`.

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
                let compute = c.flops / self.peak_flops.max(1.0);
                let memory = c.bytes / self.bandwidth.max(1.0);
                let t = (compute.max(memory) * PS_PER_SECOND as f64).ceil() as Tick + self.layer_overhead;
                LayerTime { name: l.name().to_string(), time: t, compute_bound: compute >= memory }
            })
            .collect()
    }

    /// The time of all layers, one after another.
    pub fn total(&self, layers: &[DenseLayer], batch: u64) -> Tick {
        self.times(layers, batch).iter().map(|t| t.time).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_layer_takes_the_longer_of_compute_and_memory() {
        let u = DenseUnits { peak_flops: 1e12, bandwidth: 1e9, layer_overhead: 1000, elem_bytes: 2 };
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
}
