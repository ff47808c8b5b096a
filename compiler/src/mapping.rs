//! Mapping tables to cores asymmetrically, by their estimated cost (after "Asymmetric data
//! flows for DLRM on multi-core accelerators", ICCD 2024; REFERENCE.md section 4).
//!
//! The default partition ([`crate::codegen::partition_by_cost`]) cuts the table-major list of
//! bags into contiguous ranges of equal *count* cost (a lookup costs 1 wherever its row is), so
//! every table of equal shape gets the same number of cores, whether its lookups hit a cache or
//! go to HBM. [`partition_by_tables`] instead estimates what a lookup of each table costs and
//! gives each table cores in proportion to its total estimated cost.
//!
//! # The cost model ([`table_costs`])
//!
//! Per table, from the instance (indices are known at compile time): `L` lookups (rows as
//! stored, so a TT lookup counts its three slices), `D` distinct rows, footprint `F = D x row
//! bytes`, and the share of lookups that revisit a row, `r = 1 - D / L` (the share the
//! `nontemporal` pass uses). A revisit can hit where the table's rows stay:
//!
//! - in the core's private caches ([`MemoryCosts::private_bytes`]), with probability
//!   `min(1, P / F)` where `P` is the private capacity the table gets: all of it if the table
//!   has at least a core's worth of lookups (`c = cores x L / sum L >= 1`, every one of its
//!   cores sees all its rows), else the share `c` of a core it shares with others;
//! - else in the shared LLC ([`MemoryCosts::shared_bytes`]): tables are ranked by lookups per
//!   footprint byte (the hottest first, what an LRU cache keeps longest) and fill the LLC in
//!   that order, a table getting `S = min(F, what is left)`, hit with probability `min(1, S /
//!   F)`;
//! - a first touch, or a revisit that finds neither, goes to memory.
//!
//! So `h_p = r min(1, P/F)`, `h_s = (r - h_p) min(1, S/F)`, `m = 1 - h_p - h_s`, and a line
//! costs `h_p t_p + h_s t_s + m t_m` cycles of latency ([`MemoryCosts`]: the L2 (or L1D) hit
//! latency, the LLC's bank plus two network traversals, the memory's read latency, all in core
//! cycles, from the system's configuration). A row's lines are fetched together, so a lookup
//! waits about one line's latency; a core keeps `k` lookups in flight (an access unit's lanes,
//! each walking one lookup at a time, bounded by its outstanding lines over the row's `l`
//! lines; a core alone, its L1D MSHRs over `l`), so a lookup costs `latency / k` cycles of
//! gathering plus `ceil(dim / vector lanes)` cycles of the core's pooling (one vector operation
//! per register of the row); a bag adds `ceil(out / vector lanes) + 1` (its store and loop).
//! These are estimates for proportions, not a timing model: bandwidth, bank conflicts and
//! queueing are left out. (On the 16-core `dae-hbm3` chip of `configs/asymmetric-mapping.toml`
//! the model prices a lookup of the 256-row table (mostly LLC hits) at 0.54 of a uniform
//! table's (HBM); in the simulation its cores took about half the uniform tables' cores' time
//! under the default partition, but latencies grow with load, which the model leaves out: see
//! README.md.)
//!
//! # The mapping ([`partition_by_tables`])
//!
//! The rest of the pipeline needs each core's bags to be one contiguous range (the root loop's
//! bounds, `{bag_start}` of hand-written programs, the output rows a core writes), so tables
//! keep their order and go to contiguous cores, each table getting a (fractional) number of
//! cores proportional to its estimated cost `W_t`:
//!
//! 1. Every bag costs `per_bag + lookups x per_lookup(table)`; the cut between cores `k - 1`
//!    and `k` is where the running cost crosses `k / cores` of the total `W` (so every core's
//!    estimated cost is `W / cores` up to one bag, and table `t` spans `cores x W_t / W`
//!    cores: a costly table several of its own, several cheap tables one between them).
//! 2. A cut within [`SNAP`] of a core's share of a table boundary moves to it, so that a table
//!    whose share is close to whole numbers of cores has them to itself (its cores' caches
//!    see its rows only), at a bounded cost in balance.
//!
//! (An integer apportionment, a whole number of cores per table by the greedy LPT-like rule,
//! was tried first: with 8 tables on 16 cores it rounds every table to 2 cores, which is the
//! default partition again; fractional shares keep the balance.)
//!
//! With equal costs per lookup the cuts are those of [`crate::codegen::partition_by_cost`]
//! (up to the snapping), so tables that are alike are mapped as before.

use crate::embedding_bag::EmbeddingBagInstance;
use crate::workload::WorkloadSpec;
use std::ops::Range;

/// What the cost model knows of the memory hierarchy, per core (latencies in core cycles).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MemoryCosts {
    /// Cache line bytes.
    pub line_bytes: u32,
    /// Private cache capacity the lookups of one core reach (its L2, or L1D without one; 0
    /// when the access unit sends its requests to the LLC).
    pub private_bytes: u64,
    /// Latency of a hit there.
    pub private_cycles: u32,
    /// Capacity of the shared LLC, all banks (0 without one).
    pub shared_bytes: u64,
    /// Latency of an LLC hit, network both ways included.
    pub shared_cycles: u32,
    /// Latency of a memory read.
    pub memory_cycles: u32,
    /// Lines one core's gathers keep in flight (its access unit's outstanding requests, or
    /// its L1D's MSHRs).
    pub outstanding: u32,
    /// Lanes of its access unit, each walking one lookup at a time (0: the core gathers
    /// alone).
    pub lanes: u32,
}

/// The estimated cost of one table's lookups.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TableCost {
    /// Lookups (rows as stored).
    pub lookups: u64,
    /// Distinct rows read.
    pub distinct: u64,
    /// Bytes of those rows.
    pub footprint: u64,
    /// Estimated share of lookups that hit the private caches.
    pub private_hits: f64,
    /// Estimated share of lookups that hit the shared LLC.
    pub shared_hits: f64,
    /// Estimated cycles per lookup (see the module docs).
    pub per_lookup: f64,
}

/// Per-table cost estimates of `inst` on `cores` cores with `vector_lanes` f32 lanes.
pub fn table_costs(
    spec: &WorkloadSpec,
    inst: &EmbeddingBagInstance,
    mem: &MemoryCosts,
    cores: u32,
    vector_lanes: u32,
) -> Vec<TableCost> {
    let tables = spec.tables.max(1) as usize;
    let batch = spec.batch.max(1) as usize;
    let per_lookup_rows = spec.tt.as_ref().map_or(1, crate::workload::TtShape::lookup_rows);
    let mut lookups = vec![0u64; tables];
    for (g, w) in inst.offsets.windows(2).enumerate() {
        let t = (g / batch).min(tables - 1);
        lookups[t] += u64::from(w[1].saturating_sub(w[0])) * per_lookup_rows;
    }
    let mut distinct = vec![0u64; tables];
    for (t, _) in inst.bag_rows(spec) {
        distinct[(t as usize).min(tables - 1)] += 1;
    }
    let row_bytes = spec.stored_row_bytes();
    let footprint: Vec<u64> = distinct.iter().map(|&d| d * row_bytes).collect();
    // The LLC, filled hottest table first (lookups per footprint byte).
    let mut order: Vec<usize> = (0..tables).collect();
    let density = |t: usize| lookups[t] as f64 / footprint[t].max(1) as f64;
    order.sort_by(|&a, &b| density(b).total_cmp(&density(a)).then(a.cmp(&b)));
    let mut shared = vec![0u64; tables];
    let mut left = mem.shared_bytes;
    for t in order {
        shared[t] = footprint[t].min(left);
        left -= shared[t];
    }
    let all: u64 = lookups.iter().sum::<u64>().max(1);
    let lines = row_bytes.div_ceil(u64::from(mem.line_bytes.max(1))) as f64;
    let lanes = u64::from(vector_lanes.max(1));
    let compute = u64::from(spec.stored_dim()).div_ceil(lanes) as f64;
    let by_lines = (f64::from(mem.outstanding.max(1)) / lines.max(1.0)).max(1.0);
    let in_flight = if mem.lanes == 0 { by_lines } else { by_lines.min(f64::from(mem.lanes)) };
    (0..tables)
        .map(|t| {
            let (l, f) = (lookups[t], footprint[t].max(1) as f64);
            let reuse = if l == 0 { 0.0 } else { 1.0 - distinct[t] as f64 / l as f64 };
            let core_share = f64::from(cores) * l as f64 / all as f64;
            let private = mem.private_bytes as f64 * core_share.min(1.0);
            let private_hits = reuse * (private / f).min(1.0);
            let shared_hits = (reuse - private_hits) * (shared[t] as f64 / f).min(1.0);
            let memory = 1.0 - private_hits - shared_hits;
            let latency = private_hits * f64::from(mem.private_cycles)
                + shared_hits * f64::from(mem.shared_cycles)
                + memory * f64::from(mem.memory_cycles);
            TableCost {
                lookups: l,
                distinct: distinct[t],
                footprint: footprint[t],
                private_hits,
                shared_hits,
                per_lookup: latency / in_flight + compute,
            }
        })
        .collect()
}

/// Splits the bags of `inst` over `parts` cores by the tables' estimated costs (see the module
/// docs): contiguous ranges, in order, covering every bag once; a table of at least a core's
/// worth of cost has cores of its own.
pub fn partition_by_tables(
    spec: &WorkloadSpec,
    inst: &EmbeddingBagInstance,
    mem: &MemoryCosts,
    parts: u32,
    vector_lanes: u32,
) -> Vec<Range<u64>> {
    let costs = table_costs(spec, inst, mem, parts, vector_lanes);
    let per_lookup: Vec<f64> = costs.iter().map(|c| c.per_lookup).collect();
    let lanes = u64::from(vector_lanes.max(1));
    let per_bag = spec.out_width().div_ceil(lanes) as f64 + 1.0;
    partition_weighted(&inst.offsets, spec.batch, &per_lookup, per_bag, parts)
}

/// How far (in shares of one core's estimated cost) a cut between cores moves to meet a table
/// boundary: a table's bags stay off a neighbour's cores unless that would unbalance a core by
/// more than an eighth of its share.
pub const SNAP: f64 = 0.125;

/// The mapping of [`partition_by_tables`] for bags of CSR `offsets`, table `g / batch` owning
/// bag `g` (a bag past the last table belongs to the last), a lookup of table `t` costing
/// `per_lookup[t]` (1 if missing or not a finite non-negative number) and every bag `per_bag`
/// besides.
pub fn partition_weighted(
    offsets: &[u32],
    batch: u32,
    per_lookup: &[f64],
    per_bag: f64,
    parts: u32,
) -> Vec<Range<u64>> {
    let bags = offsets.len().saturating_sub(1) as u64;
    let parts = parts.max(1) as usize;
    let batch = u64::from(batch.max(1));
    let tables = bags.div_ceil(batch).max(1) as usize;
    let table_of = |g: u64| ((g / batch) as usize).min(tables - 1);
    let lookup_cost = |t: usize| per_lookup.get(t).copied().filter(|c| c.is_finite() && *c >= 0.0);
    // Running estimated cost before each bag.
    let mut prefix = Vec::with_capacity(bags as usize + 1);
    prefix.push(0.0f64);
    for g in 0..bags {
        let n = f64::from(offsets[g as usize + 1].saturating_sub(offsets[g as usize]));
        let c = per_bag.max(0.0) + n * lookup_cost(table_of(g)).unwrap_or(1.0);
        prefix.push(prefix[g as usize] + c);
    }
    let total = prefix[bags as usize];
    if bags == 0 || total <= 0.0 || !total.is_finite() {
        return crate::codegen::partition_by_cost(offsets, parts as u32);
    }
    let mean = total / parts as f64;
    // Table boundaries, as bag numbers, in order.
    let boundaries: Vec<u64> = (1..tables as u64).map(|t| (t * batch).min(bags)).collect();
    let first_at_or_past = |target: f64, from: u64| {
        let (mut lo, mut hi) = (from, bags);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if prefix[mid as usize] < target { lo = mid + 1 } else { hi = mid }
        }
        lo
    };
    let mut ranges = Vec::with_capacity(parts);
    let mut start = 0u64;
    for k in 1..=parts {
        let end = if k == parts {
            bags
        } else {
            // The cut where the running cost crosses k shares, moved to the nearest table
            // boundary within SNAP of a share (never back to or before the previous cut).
            let target = mean * k as f64;
            let cut = first_at_or_past(target, start);
            let i = boundaries.partition_point(|&b| prefix[b as usize] < target);
            let near = [i.checked_sub(1), Some(i)]
                .into_iter()
                .flatten()
                .filter_map(|i| boundaries.get(i).copied())
                .filter(|&b| b > start && (prefix[b as usize] - target).abs() <= SNAP * mean)
                .min_by(|&a, &b| {
                    (prefix[a as usize] - target).abs().total_cmp(&(prefix[b as usize] - target).abs())
                });
            near.unwrap_or(cut).max(start)
        };
        ranges.push(start..end);
        start = end;
    }
    ranges
}

#[cfg(test)]
mod tests {
    use super::*;

    fn uniform_offsets(bags: u32, per_bag: u32) -> Vec<u32> {
        (0..=bags).map(|g| g * per_bag).collect()
    }

    #[test]
    fn equal_tables_get_equal_cores() {
        let offsets = uniform_offsets(4 * 8, 5);
        let r = partition_weighted(&offsets, 8, &[1.0; 4], 1.0, 8);
        let expect: Vec<Range<u64>> = (0..8).map(|k| k * 4..(k + 1) * 4).collect();
        assert_eq!(r, expect);
    }

    #[test]
    fn a_costly_table_gets_more_cores() {
        // Table 1's lookups cost 7x table 0's: of 8 cores, it should get 7.
        let offsets = uniform_offsets(2 * 64, 10);
        let r = partition_weighted(&offsets, 64, &[1.0, 7.0], 0.0, 8);
        let on_table_1 = r.iter().filter(|r| r.start >= 64).count();
        assert_eq!(on_table_1, 7, "{r:?}");
        assert_eq!(r[0], 0..64);
    }

    #[test]
    fn small_tables_share_a_core() {
        // Six cheap tables worth one core between them and two costly ones on 4 cores: the
        // cheap ones share core 0, and the costly ones 1.5 cores each.
        let offsets = uniform_offsets(8 * 16, 4);
        let mut cost = vec![1.0; 6];
        cost.extend([9.0, 9.0]);
        let r = partition_weighted(&offsets, 16, &cost, 0.0, 4);
        assert_eq!(r.len(), 4);
        assert_eq!(r[0], 0..96, "{r:?}");
        assert!(r[1].start == 96 && r[1].end < 112 && r[2].start < 112 && r[2].end > 112, "{r:?}");
        assert_eq!(r[3].end, 128);
    }

    #[test]
    fn a_cut_near_a_table_boundary_moves_to_it() {
        // Two tables of 10 bags, the first 5% costlier: the even cut falls just inside it,
        // within SNAP, so it moves to the boundary.
        let offsets = uniform_offsets(20, 1);
        let r = partition_weighted(&offsets, 10, &[1.1, 1.0], 0.0, 2);
        assert_eq!(r, vec![0..10, 10..20]);
        // Far from any boundary, the cut stays where the cost is even.
        let r = partition_weighted(&offsets, 10, &[3.0, 1.0], 0.0, 2);
        assert_eq!(r, vec![0..7, 7..20]);
    }
}
