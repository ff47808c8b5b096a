//! A gather kernel's work, as the addresses it touches, and the library mapping onto warps.
//!
//! Contract: a [`GatherKernel`] lists bags in CSR form (`bag_offsets` over `rows`), each row by
//! the address of its first byte; every bag reads its part of the index stream, loads its rows
//! one after another, and writes its pooled output. FBGEMM's table-batched forward kernel maps
//! one bag to a *thread group* of `kThreadGroupSize` lanes, the row's `dim` spread over the lanes
//! four elements (one 16 B vector for f32) at a time: 4, 8, 16 or 32 lanes, so a warp holds 32 /
//! group bags that step through their row loops together. A group loads its next
//! `group` indices with one coalesced load, then each row in turn, accumulating it before
//! loading the next (the CUDA path of `load_and_accumulate`; the manual unroll is ROCm's).

use thiserror::Error;

/// Lanes per warp.
pub const WARP_LANES: u32 = 32;

/// One gather kernel.
#[derive(Debug, Clone, PartialEq)]
pub struct GatherKernel {
    /// CSR offsets over `rows`: bag `b` reads `rows[bag_offsets[b]..bag_offsets[b + 1]]`.
    pub bag_offsets: Vec<u32>,
    /// Address of each row a bag reads, in order.
    pub rows: Vec<u64>,
    /// Bytes per row as stored.
    pub row_bytes: u32,
    /// Elements per row (sets the thread-group size).
    pub dim: u32,
    /// Bytes of index stream per row (indices, plus per-row weights where there are some).
    pub index_bytes: u32,
    /// Start of the index stream; bag `b`'s part starts at `bag_offsets[b] * index_bytes`.
    pub index_base: u64,
    /// Start of the bag offsets (8 B each, as FBGEMM's int64 offsets).
    pub offsets_base: u64,
    /// Start of the pooled outputs, `output_bytes` per bag.
    pub output_base: u64,
    /// Bytes of output per bag.
    pub output_bytes: u32,
    /// Where each row is scatter-added (atomically, in L2) instead of pooled, when the kernel is
    /// a message-passing scatter: one address per row.
    pub scatter: Option<Vec<u64>>,
    /// Floating-point operations per row (2 per fused multiply-add).
    pub flops_per_row: u64,
    /// Rows are loaded with `ld.global.cg`: cached in L2 only, never allocated in the L1.
    pub bypass_l1: bool,
    /// Rows a group loads at once when the kernel is not FBGEMM's one-row loop (at most the
    /// group's lanes); `None` takes the GPU preset's `kernel.row_unroll`.
    pub row_unroll: Option<u32>,
}

/// Why a kernel description is unusable.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum KernelError {
    /// The offsets do not describe the rows.
    #[error("bag offsets must start at 0, never decrease and end at the {rows} rows (found {found})")]
    Offsets {
        /// Rows listed.
        rows: usize,
        /// The offending offset.
        found: u64,
    },
    /// A row or output size is zero.
    #[error("{field} must be at least 1")]
    Zero {
        /// The field.
        field: &'static str,
    },
    /// The scatter list's length differs from the rows'.
    #[error("scatter lists {got} addresses for {want} rows")]
    Scatter {
        /// Addresses listed.
        got: usize,
        /// Rows.
        want: usize,
    },
}

impl GatherKernel {
    /// A plain f32 gather: `bags[b]` lists bag `b`'s row addresses, rows of `dim` values, 8 B
    /// indices, one pooled row out per bag, 2 flops per element; the index, offset and output
    /// streams at `streams`, 4 GiB apart.
    pub fn from_bags(bags: Vec<Vec<u64>>, dim: u32, streams: u64) -> Self {
        let mut bag_offsets = vec![0u32];
        let mut rows = Vec::new();
        for b in bags {
            rows.extend(b);
            bag_offsets.push(rows.len() as u32);
        }
        GatherKernel {
            bag_offsets,
            rows,
            row_bytes: dim * 4,
            dim,
            index_bytes: 8,
            index_base: streams,
            offsets_base: streams + (1 << 32),
            output_base: streams + (2 << 32),
            output_bytes: dim * 4,
            scatter: None,
            flops_per_row: 2 * u64::from(dim),
            bypass_l1: false,
            row_unroll: None,
        }
    }

    /// Checks the CSR structure and sizes.
    pub fn validate(&self) -> Result<(), KernelError> {
        let rows = self.rows.len();
        let bad = |found: u64| Err(KernelError::Offsets { rows, found });
        match (self.bag_offsets.first(), self.bag_offsets.last()) {
            (Some(0), Some(&last)) if last as usize == rows => {}
            (first, last) => return bad(u64::from(*first.or(last).unwrap_or(&u32::MAX))),
        }
        if let Some(w) = self.bag_offsets.windows(2).find(|w| w[1] < w[0]) {
            return bad(u64::from(w[1]));
        }
        for (field, v) in
            [("row_bytes", self.row_bytes), ("dim", self.dim), ("index_bytes", self.index_bytes)]
        {
            if v == 0 {
                return Err(KernelError::Zero { field });
            }
        }
        if let Some(s) = &self.scatter
            && s.len() != rows
        {
            return Err(KernelError::Scatter { got: s.len(), want: rows });
        }
        Ok(())
    }

    /// Bags.
    pub fn bags(&self) -> u32 {
        self.bag_offsets.len().saturating_sub(1) as u32
    }

    /// The rows of bag `b`.
    pub fn bag(&self, b: u32) -> std::ops::Range<usize> {
        self.bag_offsets[b as usize] as usize..self.bag_offsets[b as usize + 1] as usize
    }

    /// Lanes per bag: the row's 4-element vectors, a power of two in 4..=32 (FBGEMM's
    /// `kThreadGroupSize`).
    pub fn group_lanes(&self) -> u32 {
        self.dim.div_ceil(4).next_power_of_two().clamp(4, WARP_LANES)
    }

    /// Bags per warp.
    pub fn bags_per_warp(&self) -> u32 {
        WARP_LANES / self.group_lanes()
    }

    /// Bags per block of `threads` threads.
    pub fn bags_per_block(&self, threads: u32) -> u32 {
        threads / WARP_LANES * self.bags_per_warp()
    }

    /// Blocks in the grid for blocks of `threads` threads.
    pub fn blocks(&self, threads: u32) -> u32 {
        self.bags().div_ceil(self.bags_per_block(threads).max(1))
    }

    /// The same kernel with every bag cut into groups of at most `rows` rows, each its own
    /// bag (a load-balanced mapping: merge-path SpMM, split-KV attention); each piece writes a
    /// partial output, as the atomics that combine them in L2 would.
    pub fn split(mut self, rows: usize) -> Self {
        let rows = rows.max(1);
        let mut offsets = vec![0u32];
        for w in self.bag_offsets.windows(2) {
            let (lo, hi) = (w[0] as usize, w[1] as usize);
            let mut at = lo;
            while at < hi {
                at = (at + rows).min(hi);
                offsets.push(at as u32);
            }
            if lo == hi {
                offsets.push(hi as u32);
            }
        }
        self.bag_offsets = offsets;
        self
    }

    /// The rows of the kernel's longest bag (its thread group's chain of loads).
    pub fn longest_bag(&self) -> u64 {
        self.bag_offsets.windows(2).map(|w| u64::from(w[1].saturating_sub(w[0]))).max().unwrap_or(0)
    }

    /// Bytes the kernel reads as rows (each row's whole bytes).
    pub fn row_bytes_read(&self) -> u64 {
        self.rows.len() as u64 * u64::from(self.row_bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kernel(dim: u32, bags: &[u32]) -> GatherKernel {
        let mut next = 0u64;
        let bags = bags
            .iter()
            .map(|&n| {
                let rows = (next..next + u64::from(n)).map(|r| r * 4096).collect();
                next += u64::from(n);
                rows
            })
            .collect();
        GatherKernel::from_bags(bags, dim, 1 << 40)
    }

    #[test]
    fn groups_follow_fbgemm_thread_group_sizes() {
        for (dim, lanes, per_warp) in
            [(8, 4, 8), (32, 8, 4), (64, 16, 2), (128, 32, 1), (256, 32, 1), (100, 32, 1)]
        {
            let k = kernel(dim, &[1]);
            assert_eq!((k.group_lanes(), k.bags_per_warp()), (lanes, per_warp), "dim {dim}");
        }
        let k = kernel(32, &[3; 1000]);
        assert_eq!(k.bags_per_block(512), 64);
        assert_eq!(k.blocks(512), 16);
    }

    #[test]
    fn split_cuts_long_bags_and_keeps_every_row() {
        let k = kernel(32, &[70, 0, 5]).split(32);
        assert_eq!(k.bag_offsets, vec![0, 32, 64, 70, 70, 75]);
        assert!(k.validate().is_ok());
    }

    #[test]
    fn bad_offsets_and_sizes_are_refused() {
        let mut k = kernel(32, &[2, 3]);
        assert!(k.validate().is_ok());
        k.bag_offsets = vec![0, 4, 3, 5];
        assert_eq!(
            k.validate().unwrap_err().to_string(),
            KernelError::Offsets { rows: 5, found: 3 }.to_string()
        );
        let mut k = kernel(32, &[2]);
        k.bag_offsets = vec![1, 2];
        assert!(matches!(k.validate(), Err(KernelError::Offsets { found: 1, .. })));
        let mut k = kernel(32, &[2]);
        k.scatter = Some(vec![0]);
        assert_eq!(k.validate().unwrap_err(), KernelError::Scatter { got: 1, want: 2 });
        let mut k = kernel(32, &[2]);
        k.row_bytes = 0;
        assert_eq!(k.validate().unwrap_err(), KernelError::Zero { field: "row_bytes" });
    }
}
