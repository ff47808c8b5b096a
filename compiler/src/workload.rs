//! Workload descriptions: what users write in `configs/workloads/*.toml`.
//!
//! ```toml
//! name = "dlrm-small"
//! op = "embedding_bag"
//! pooling = "sum"
//! tables = 4
//! rows = 1000000
//! dim = 64
//! dtype = "f32"
//! batch = 256
//! bag_size = 20
//! [indices]
//! distribution = "zipf"      # or "uniform"
//! alpha = 1.05
//! ```

use serde::Deserialize;
use thiserror::Error;

/// The operation a workload runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Op {
    /// PyTorch `nn.EmbeddingBag` over several tables.
    EmbeddingBag,
}

/// How the rows of a bag are combined.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Pooling {
    /// Sum of the rows.
    Sum,
    /// Mean of the rows.
    Mean,
    /// Element-wise maximum.
    Max,
}

/// Element type of the tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Dtype {
    /// 32-bit float.
    F32,
    /// 16-bit float.
    F16,
    /// bfloat16.
    Bf16,
    /// 8-bit integer rows with scale and bias.
    Int8,
}

/// Distribution of lookup indices.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(tag = "distribution", rename_all = "snake_case", deny_unknown_fields)]
pub enum IndexDistribution {
    /// Every row equally likely.
    Uniform,
    /// Zipf with exponent `alpha` over rows ranked by popularity, ranks randomly permuted onto
    /// row ids (as FBGEMM's benchmarks do).
    Zipf {
        /// Exponent (FBGEMM uses 1.15 for training, 1.09 for inference).
        alpha: f64,
    },
}

/// A workload as written in TOML.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkloadSpec {
    /// Name used in reports.
    pub name: String,
    /// The operation.
    pub op: Op,
    /// Pooling of each bag.
    pub pooling: Pooling,
    /// Number of tables.
    pub tables: u32,
    /// Rows per table.
    pub rows: u64,
    /// Columns per row.
    pub dim: u32,
    /// Element type.
    pub dtype: Dtype,
    /// Bags per table (samples in the batch).
    pub batch: u32,
    /// Lookups per bag.
    pub bag_size: u32,
    /// How indices are drawn.
    pub indices: IndexDistribution,
}

/// A workload the compiler cannot take, naming the field at fault.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{field}: {message}")]
pub struct WorkloadError {
    /// The field (as written in the workload file).
    pub field: &'static str,
    /// What is wrong with it.
    pub message: String,
}

fn bad(field: &'static str, message: impl Into<String>) -> WorkloadError {
    WorkloadError { field, message: message.into() }
}

impl WorkloadSpec {
    /// Checks the values the code generator relies on.
    pub fn validate(&self) -> Result<(), WorkloadError> {
        if self.pooling != Pooling::Sum {
            return Err(bad(
                "pooling",
                format!("{:?} pooling is not supported yet; use \"sum\"", self.pooling),
            ));
        }
        if self.dtype != Dtype::F32 {
            return Err(bad("dtype", format!("{:?} tables are not supported yet; use \"f32\"", self.dtype)));
        }
        if self.tables == 0 {
            return Err(bad("tables", "must be at least 1"));
        }
        if self.rows == 0 || self.rows > u32::MAX as u64 {
            return Err(bad("rows", format!("{} is outside 1..=4294967295 (indices are 32-bit)", self.rows)));
        }
        if self.dim == 0 || self.dim > crate::codegen::MAX_DIM {
            return Err(bad("dim", format!("{} is outside 1..={}", self.dim, crate::codegen::MAX_DIM)));
        }
        let lookups = self.tables as u64 * self.batch as u64 * self.bag_size as u64;
        if lookups > u32::MAX as u64 {
            return Err(bad("batch", format!("{lookups} lookups in all do not fit 32-bit offsets")));
        }
        if let IndexDistribution::Zipf { alpha } = self.indices
            && !(alpha.is_finite() && alpha > 0.0)
        {
            return Err(bad("indices.alpha", format!("{alpha} must be a positive number")));
        }
        Ok(())
    }

    /// Bytes of one table row.
    pub fn row_bytes(&self) -> u64 {
        self.dim as u64 * 4
    }

    /// Bags in all tables.
    pub fn bags(&self) -> u64 {
        self.tables as u64 * self.batch as u64
    }

    /// Lookups in all tables.
    pub fn lookups(&self) -> u64 {
        self.bags() * self.bag_size as u64
    }
}
