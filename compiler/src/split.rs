//! Bags cut across cores: merge-path partitioning (`[system.compiler] partition = "split"`).
//!
//! The default partition ([`crate::codegen::partition_by_cost`]) gives each core whole bags, so
//! a bag with more lookups than a core's share (a hub of a power-law graph) holds one core up
//! while the others wait. Merge-path partitioning (Merrill and Garland's CSR SpMV, cuSPARSE's
//! `CSR_ALG2`, which the GPU baseline's GNN aggregation follows) instead walks the path of
//! lookups and bag ends (a bag's end costs one, its setup and store) and cuts it into `cores`
//! pieces of equal length wherever they fall: a boundary inside a bag cuts the bag there, so no
//! core holds more than its share plus one. (Here only a bag of at least 1/16 of a core's share
//! is cut; a boundary inside a shorter one moves to the next bag, as the default partition
//! places it, so workloads without long bags keep the default partition's ranges.)
//!
//! Each piece of a cut bag is compiled as a bag of its own (the program is unchanged: the
//! pieces are the bags of an instance with the cut points added to its offsets) and stores a
//! partial row; [`SplitBags::combine`] folds a bag's partial rows in piece order, as far
//! atomic adds (or maxima) at the shared cache would (GPUs' L2 atomics, which the GPU model
//! charges the same way: as each piece's store). The model times the stores, not the atomic
//! operations: there are at most `cores - 1` cut points, so at most that many partial rows
//! beyond one per bag.
//!
//! Only pooling that partial results combine exactly is cut: sums (weighted or not) and maxima
//! without a padding index, over one table (a piece keeps its bag's table only when there is
//! one). Other workloads keep whole bags ([`cut_allowed`] says why).

use crate::embedding_bag::EmbeddingBagInstance;
use crate::workload::{Op, Pooling, WorkloadSpec};
use std::ops::Range;

/// A workload's bags cut for its cores: the pieces as a workload of their own, how they make up
/// the bags, and each core's range of pieces.
#[derive(Debug, Clone, PartialEq)]
pub struct Cut {
    /// The workload with a bag per piece (`batch` the piece count).
    pub spec: WorkloadSpec,
    /// The instance with the cut points in its offsets (message passing: its edges' destinations
    /// are pieces, [`SplitBags::edges_to_pieces`]).
    pub instance: EmbeddingBagInstance,
    /// How the pieces make up the bags.
    pub split: SplitBags,
    /// Each core's contiguous range of pieces.
    pub parts: Vec<Range<u64>>,
}

/// `inst`'s bags cut for `cores` cores ([`merge_path`]) as a workload of pieces, or `None` when
/// no bag needs cutting (the default partition's ranges then stand). The caller has checked
/// [`cut_allowed`], and that `bags + cores` fits a `u32` (pieces are numbered as bags are).
pub fn cut(spec: &WorkloadSpec, inst: &EmbeddingBagInstance, cores: u32) -> Option<Cut> {
    let m = merge_path(&inst.offsets, cores, spec.pooling);
    if m.split.cut_bags() == 0 {
        return None;
    }
    let batch = u32::try_from(m.split.pieces()).ok()?;
    let edges = inst.edges.as_ref().map(|e| m.split.edges_to_pieces(&m.offsets, e));
    Some(Cut {
        spec: WorkloadSpec { batch, ..spec.clone() },
        instance: EmbeddingBagInstance { offsets: m.offsets, edges, ..inst.clone() },
        split: m.split,
        parts: m.parts,
    })
}

/// Whether `offsets` (CSR, `bags + 1` entries) has a bag that costs more than a core's share
/// of `cores` (a lookup and a bag's end costing one each): when such bags cannot be cut, the
/// run says why.
pub fn has_long_bag(offsets: &[u32], cores: u32) -> bool {
    let bags = offsets.len().saturating_sub(1) as u64;
    let longest = offsets.windows(2).map(|w| u64::from(w[1] - w[0]) + 1).max().unwrap_or(0);
    let total = offsets.last().map_or(0, |&l| u64::from(l)) + bags;
    longest > total / u64::from(cores.max(1))
}

/// How the pieces of a split instance make up its bags.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SplitBags {
    /// Per bag, its first piece; `bags + 1` entries, the last one the piece count.
    pub first_piece: Vec<u32>,
    /// How a bag's partial rows combine.
    pub pooling: Pooling,
}

/// A merge-path partition: the pieces' CSR offsets, how they make up the bags, and each core's
/// range of pieces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MergePath {
    /// CSR offsets of the pieces (the bags' offsets with the cut points added).
    pub offsets: Vec<u32>,
    /// Pieces per bag.
    pub split: SplitBags,
    /// Each core's contiguous range of pieces.
    pub parts: Vec<Range<u64>>,
}

/// A bag is cut only when it holds at least this fraction (1/16) of a core's share: moving a
/// boundary past a shorter one, as the default partition does, leaves its core at most 1/16
/// over its share, where a cut would cost a partial row and a bag's setup.
const MIN_CUT: u64 = 16;

/// Whether `spec`'s bags may be cut: `Err` says why not.
pub fn cut_allowed(spec: &WorkloadSpec) -> Result<(), &'static str> {
    if !matches!(spec.op, Op::EmbeddingBag | Op::GnnAggregate | Op::GnnScatter) {
        return Err("only embedding bags and GNN aggregation and message passing are cut");
    }
    if spec.tables > 1 {
        return Err("bags of several tables are not cut (a piece would lose its bag's table)");
    }
    match (spec.pooling, spec.padding_idx) {
        (Pooling::Sum, _) | (Pooling::Max, None) => Ok(()),
        (Pooling::Mean, _) => Err("mean pooling is not cut (the partial sums would need the bag's length)"),
        (Pooling::Max, Some(_)) => {
            Err("max pooling with a padding index is not cut (a piece of padding only is 0)")
        }
    }
}

/// Cuts the bags of CSR `offsets` into `parts` ranges of equal cost, a lookup costing one and a
/// bag's end one, as [`crate::codegen::partition_by_cost`] weighs them, but at any lookup: the
/// boundary of range `k` is the point `total * k / parts` along that path, and a bag it falls
/// inside is cut there if it holds at least 1/16 of a range's cost (else the boundary moves to
/// the next bag, as in [`crate::codegen::partition_by_cost`], whose ranges this then gives).
pub fn merge_path(offsets: &[u32], parts: u32, pooling: Pooling) -> MergePath {
    let bags = offsets.len().saturating_sub(1);
    let parts = u64::from(parts.max(1));
    // The path's position of bag `g`'s first lookup: the lookups and bag ends before it.
    let start = |g: usize| u64::from(offsets[g]) + g as u64;
    let total = if bags == 0 { 0 } else { start(bags) };
    // Each boundary as (bag, lookup): the range after it starts at that lookup of that bag.
    let mut cuts: Vec<(usize, u32)> = Vec::with_capacity(parts as usize + 1);
    cuts.push((0, offsets.first().copied().unwrap_or(0)));
    for k in 1..parts {
        if bags == 0 {
            cuts.push((0, offsets.first().copied().unwrap_or(0)));
            continue;
        }
        let d = total * k / parts;
        // The last bag whose first lookup lies at or before `d` (`start` grows with `g`).
        let (mut lo, mut hi) = (0usize, bags - 1);
        while lo < hi {
            let mid = lo + (hi - lo).div_ceil(2);
            if start(mid) <= d { lo = mid } else { hi = mid - 1 }
        }
        let g = lo;
        // Bag `g`'s lookups lie at `start(g)..start(g) + len`, its end at the next step. A bag
        // too short to matter is not cut: the boundary moves to the next bag, as the default
        // partition places it.
        let lookup = u64::from(offsets[g]) + d.saturating_sub(start(g));
        let len = u64::from(offsets[g + 1] - offsets[g]);
        let inside = lookup > u64::from(offsets[g]) && lookup < u64::from(offsets[g + 1]);
        cuts.push(if d == start(g) {
            // At a bag's start (an empty one's too, as the default partition places it).
            (g, offsets[g])
        } else if lookup >= u64::from(offsets[g + 1]) || (inside && len * MIN_CUT < total / parts) {
            (g + 1, offsets[g + 1])
        } else {
            (g, lookup as u32)
        });
    }
    cuts.push((bags, offsets.last().copied().unwrap_or(0)));

    // The pieces: every bag, with the cut points strictly inside it added.
    let mut pieces = vec![offsets.first().copied().unwrap_or(0)];
    let mut first_piece = Vec::with_capacity(bags + 1);
    // Each boundary's piece: the piece that starts at it.
    let mut boundary_piece = vec![0u64; cuts.len()];
    let mut next_cut = 0;
    for g in 0..bags {
        first_piece.push((pieces.len() - 1) as u32);
        while next_cut < cuts.len() && cuts[next_cut].0 == g && cuts[next_cut].1 == offsets[g] {
            boundary_piece[next_cut] = (pieces.len() - 1) as u64;
            next_cut += 1;
        }
        while next_cut < cuts.len() && cuts[next_cut].0 == g {
            // A cut strictly inside bag `g` (after its start, before its end).
            let at = cuts[next_cut].1;
            if *pieces.last().unwrap_or(&0) != at {
                pieces.push(at);
            }
            boundary_piece[next_cut] = (pieces.len() - 1) as u64;
            next_cut += 1;
        }
        pieces.push(offsets[g + 1]);
    }
    first_piece.push((pieces.len() - 1) as u32);
    for b in boundary_piece.iter_mut().skip(next_cut) {
        *b = (pieces.len() - 1) as u64;
    }
    let parts = boundary_piece.windows(2).map(|w| w[0]..w[1]).collect();
    MergePath { offsets: pieces, split: SplitBags { first_piece, pooling }, parts }
}

impl SplitBags {
    /// Bags.
    pub fn bags(&self) -> u64 {
        self.first_piece.len().saturating_sub(1) as u64
    }

    /// Pieces.
    pub fn pieces(&self) -> u64 {
        self.first_piece.last().copied().unwrap_or(0) as u64
    }

    /// Bags cut into more than one piece.
    pub fn cut_bags(&self) -> u64 {
        self.first_piece.windows(2).filter(|w| w[1] - w[0] > 1).count() as u64
    }

    /// Message passing's edges `(source, destination)`, each destination replaced by the piece
    /// its edge falls in. A destination's `n`-th edge in the list is lookup `n` of its bag (the
    /// CSR keeps the list's order), so it goes to the piece holding the bag's lookup `n`;
    /// `piece_offsets` are the pieces' CSR offsets. An edge into no bag (`d` at or past the
    /// bags) keeps its distance past the end: it goes to `pieces + d - bags`.
    pub fn edges_to_pieces(&self, piece_offsets: &[u32], edges: &[(u32, u32)]) -> Vec<(u32, u32)> {
        let mut seen = vec![0u32; self.bags() as usize];
        edges
            .iter()
            .map(|&(s, d)| {
                let (Some(n), Some(w)) =
                    (seen.get_mut(d as usize), self.first_piece.get(d as usize..d as usize + 2))
                else {
                    let past = (u64::from(d) + self.pieces()).saturating_sub(self.bags());
                    return (s, u32::try_from(past).unwrap_or(u32::MAX));
                };
                let at = piece_offsets[w[0] as usize] + *n;
                *n += 1;
                // The last piece of the bag starting at or before lookup `at`.
                let mut p = w[0];
                while p + 1 < w[1] && piece_offsets[p as usize + 1] <= at {
                    p += 1;
                }
                (s, p)
            })
            .collect()
    }

    /// The first element (index into `combined`) at which the bags' rows folded from the
    /// pieces' reference (`combined`, by [`SplitBags::combine`]) are not the workload's
    /// `reference`: they must be equal bit for bit in a bag that was not cut or that pools by
    /// maximum, and within the bound of a sum taken in another order, `2 n u sum |terms|`
    /// (`n` the bag's lookups, `u` 2^-24, `magnitudes` the pieces' sums of `|terms|`, combined),
    /// in a cut bag that sums. `magnitudes` is called only if some element differs (once).
    /// `piece_offsets`: the pieces' CSR offsets.
    pub fn first_mismatch(
        &self,
        combined: &[f32],
        reference: &[f32],
        magnitudes: impl FnOnce() -> Vec<f32>,
        piece_offsets: &[u32],
        dim: usize,
    ) -> Option<usize> {
        if combined.len() != reference.len() {
            return Some(combined.len().min(reference.len()));
        }
        if combined.iter().zip(reference).all(|(a, b)| a.to_bits() == b.to_bits()) {
            return None;
        }
        let magnitudes = magnitudes();
        if magnitudes.len() != reference.len() {
            return Some(magnitudes.len().min(reference.len()));
        }
        let dim = dim.max(1);
        (0..combined.len()).find(|&k| {
            let g = k / dim;
            let (Some(&a), Some(&b)) = (self.first_piece.get(g), self.first_piece.get(g + 1)) else {
                return true;
            };
            let (a, b) = (a as usize, b as usize);
            let (got, want) = (combined[k], reference[k]);
            if b <= a + 1 || self.pooling == Pooling::Max {
                return got.to_bits() != want.to_bits();
            }
            let n = f64::from(piece_offsets[b] - piece_offsets[a]);
            let bound = 2.0 * n * f64::from(magnitudes[k]) / f64::from(1u32 << 24);
            // A NaN difference is not within.
            let within = f64::from(got - want).abs() <= bound;
            !within
        })
    }

    /// The bags' rows from the pieces' (`pieces x dim`, row-major): each bag's partial rows
    /// folded in piece order, added (sum) or their maximum taken (max).
    pub fn combine(&self, rows: &[f32], dim: usize) -> Vec<f32> {
        let mut out = vec![0.0f32; self.bags() as usize * dim];
        for (g, w) in self.first_piece.windows(2).enumerate() {
            let acc = &mut out[g * dim..(g + 1) * dim];
            for p in w[0] as usize..w[1] as usize {
                let Some(row) = rows.get(p * dim..(p + 1) * dim) else { break };
                if p == w[0] as usize {
                    acc.copy_from_slice(row);
                } else if self.pooling == Pooling::Max {
                    acc.iter_mut().zip(row).for_each(|(a, &x)| *a = a.max(x));
                } else {
                    acc.iter_mut().zip(row).for_each(|(a, &x)| *a += x);
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The cost of core `k`'s pieces: lookups plus one per piece that ends a bag.
    fn costs(m: &MergePath) -> Vec<u64> {
        let ends: std::collections::HashSet<u32> = m.split.first_piece.iter().copied().collect();
        m.parts
            .iter()
            .map(|r| {
                (r.start..r.end)
                    .map(|p| {
                        let len = u64::from(m.offsets[p as usize + 1] - m.offsets[p as usize]);
                        len + u64::from(ends.contains(&(p as u32 + 1)))
                    })
                    .sum()
            })
            .collect()
    }

    #[test]
    fn a_hub_is_cut_evenly() {
        // One bag of 100 lookups among three of 2: 110 steps (lookups and bag ends), 27 or 28 a core.
        let offsets = [0, 2, 102, 104, 106];
        let m = merge_path(&offsets, 4, Pooling::Sum);
        assert_eq!(m.offsets, vec![0, 2, 26, 54, 81, 102, 104, 106]);
        assert_eq!(m.split.first_piece, vec![0, 1, 5, 6, 7]);
        assert_eq!(m.parts, vec![0..2, 2..3, 3..4, 4..7]);
        assert_eq!(costs(&m), vec![27, 28, 27, 28]);
        assert_eq!(m.split.cut_bags(), 1);
    }

    #[test]
    fn no_core_holds_much_more_than_its_share() {
        let mut x = 12345u64;
        for parts in [1u32, 2, 3, 7, 16, 64] {
            for _ in 0..50 {
                let mut offsets = vec![0u32];
                let bags = (x % 40) as usize;
                for _ in 0..bags {
                    x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    let len = if x >> 60 == 0 { (x >> 32) % 500 } else { (x >> 32) % 6 } as u32;
                    offsets.push(offsets.last().unwrap() + len);
                }
                let m = merge_path(&offsets, parts, Pooling::Sum);
                assert_eq!(m.parts.len(), parts as usize);
                assert_eq!(m.parts.first().map(|r| r.start), Some(0));
                assert_eq!(m.parts.last().map(|r| r.end), Some(m.split.pieces()));
                assert!(m.parts.windows(2).all(|w| w[0].end == w[1].start));
                // Every original boundary is still a piece boundary, and no piece is empty
                // unless its bag is.
                for (g, w) in offsets.windows(2).enumerate() {
                    let (a, b) = (m.split.first_piece[g] as usize, m.split.first_piece[g + 1] as usize);
                    assert_eq!((m.offsets[a], m.offsets[b]), (w[0], w[1]));
                    assert!(b == a + 1 || (a + 1..=b).all(|p| m.offsets[p] > m.offsets[p - 1]));
                }
                let total = u64::from(*offsets.last().unwrap()) + bags as u64;
                let share = total.div_ceil(u64::from(parts));
                for c in costs(&m) {
                    assert!(c <= share + share / MIN_CUT + 2, "{c} over {share} for {offsets:?} on {parts}");
                }
                assert!(m.split.cut_bags() < u64::from(parts));
                // Where nothing is cut, the default partition's ranges.
                if m.split.cut_bags() == 0 {
                    assert_eq!(m.parts, crate::codegen::partition_by_cost(&offsets, parts));
                }
            }
        }
    }

    #[test]
    fn short_bags_keep_the_default_partition() {
        // Bags of 0 to 15 lookups (a sampled graph's, empty ones included) on many cores: none
        // reaches 1/16 of a share, so nothing is cut and the ranges are the default's.
        let mut x = 99u64;
        for parts in [3u32, 16, 64] {
            let mut offsets = vec![0u32];
            for _ in 0..5000 {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                offsets.push(offsets.last().unwrap() + ((x >> 33) % 16) as u32 * u32::from(x >> 62 != 0));
            }
            let m = merge_path(&offsets, parts, Pooling::Sum);
            assert_eq!(m.split.cut_bags(), 0);
            assert_eq!(m.offsets, offsets);
            assert_eq!(m.parts, crate::codegen::partition_by_cost(&offsets, parts));
        }
    }

    #[test]
    fn a_combined_row_must_be_the_reference_within_the_rounding_of_its_cut() {
        // Bag 0 cut into two pieces of 2 lookups each; bag 1 whole (one piece of 1).
        let split = SplitBags { first_piece: vec![0, 2, 3], pooling: Pooling::Sum };
        let offsets = [0, 2, 4, 5];
        let reference = [1.0f32, 2.0];
        let magnitudes = [4.0f32, 2.0];
        // 2 n u sum|terms| = 2 * 4 * 4 / 2^24 for the cut bag's element.
        let bound = 32.0 / (1u32 << 24) as f32;
        assert_eq!(split.first_mismatch(&[1.0, 2.0], &reference, || magnitudes.to_vec(), &offsets, 1), None);
        assert_eq!(
            split.first_mismatch(&[1.0 + bound * 0.9, 2.0], &reference, || magnitudes.to_vec(), &offsets, 1),
            None
        );
        assert_eq!(
            split.first_mismatch(&[1.0 + bound * 2.0, 2.0], &reference, || magnitudes.to_vec(), &offsets, 1),
            Some(0)
        );
        assert_eq!(
            split.first_mismatch(&[f32::NAN, 2.0], &reference, || magnitudes.to_vec(), &offsets, 1),
            Some(0)
        );
        // The whole bag must be equal bit for bit, as must a cut bag's maximum.
        let off = f32::from_bits(2.0f32.to_bits() + 1);
        assert_eq!(
            split.first_mismatch(&[1.0, off], &reference, || magnitudes.to_vec(), &offsets, 1),
            Some(1)
        );
        let max = SplitBags { pooling: Pooling::Max, ..split.clone() };
        let near = f32::from_bits(1.0f32.to_bits() + 1);
        assert_eq!(
            max.first_mismatch(&[near, 2.0], &reference, || magnitudes.to_vec(), &offsets, 1),
            Some(0)
        );
        assert_eq!(split.first_mismatch(&[1.0], &reference, || magnitudes.to_vec(), &offsets, 1), Some(1));
    }

    #[test]
    fn partial_rows_combine_in_piece_order() {
        let split = SplitBags { first_piece: vec![0, 2, 3], pooling: Pooling::Sum };
        let rows = [1.0, 2.0, 10.0, 20.0, 5.0, 6.0];
        assert_eq!(split.combine(&rows, 2), vec![11.0, 22.0, 5.0, 6.0]);
        let max = SplitBags { pooling: Pooling::Max, ..split };
        assert_eq!(max.combine(&[1.0, 30.0, 10.0, 20.0, 5.0, 6.0], 2), vec![10.0, 30.0, 5.0, 6.0]);
    }

    #[test]
    fn an_edge_goes_to_the_piece_of_its_position_in_the_bag() {
        // Bag 0 has edges at lookups 0..2, bag 1 at 2..102 cut at 26, 54 and 81.
        let m = merge_path(&[0, 2, 102, 104, 106], 4, Pooling::Sum);
        let mut edges = vec![(7, 0), (8, 0)];
        edges.extend((0..100).map(|k| (k, 1)));
        edges.extend([(1, 2), (2, 3), (3, 2), (4, 3), (5, 9)]);
        let placed = m.split.edges_to_pieces(&m.offsets, &edges);
        let pieces: Vec<u32> = placed.iter().map(|e| e.1).collect();
        assert_eq!(&pieces[..2], &[0, 0]);
        // Bag 1's 24 first edges (lookups 2..26) in piece 1, then 28, 27 and 21.
        for (p, n) in [(1u32, 24usize), (2, 28), (3, 27), (4, 21)] {
            assert_eq!(pieces[2..102].iter().filter(|&&x| x == p).count(), n);
        }
        assert!(pieces[2..102].windows(2).all(|w| w[0] <= w[1]));
        // Bags 2 and 3 are pieces 5 and 6; an edge into vertex 9, past the 4 bags, keeps its
        // distance past the last piece.
        assert_eq!(&pieces[102..], &[5, 6, 5, 6, 12]);
        assert!(placed.iter().zip(&edges).all(|(a, b)| a.0 == b.0));
    }
}
