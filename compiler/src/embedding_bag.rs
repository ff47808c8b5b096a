//! EmbeddingBag: its inputs, drawn from a seed, and its reference semantics.
//!
//! The instance is the table-major CSR that Meta's released embedding traces use: bags of all
//! tables in one sequence (bag `g` belongs to table `g / batch`), `offsets` of length
//! `tables * batch + 1` into one `indices` array of row ids. The reference computes what
//! PyTorch's `nn.EmbeddingBag` computes for each table, `mode="sum"` being
//! `out[g, k] = sum over j in offsets[g]..offsets[g+1] of table[indices[j], k]`, and likewise
//! mean, max and weighted bags and the other families' operations (knowledge-graph scores,
//! attention gathers, message passing). Table values are procedural
//! (`sim_core::procedural::table_value`). Where sums are exact in f32 (plain sums of table values)
//! or follow one order (the reference folds lookups in the compiled order, with the same
//! roundings), simulated outputs must equal the reference bit for bit; sums of products whose
//! order vectorization changes (DistMult, ComplEx, TT) are held to a rounding bound instead
//! (README, "The compiler").

use crate::indices::IndexGenerator;
use crate::workload::{IndexDistribution, KgModel, Pooling, WorkloadSpec};
use sim_core::SeedTree;
use sim_core::procedural::{column_key, format_value, keyed_value, row_params_key};

/// Inputs of one EmbeddingBag run.
#[derive(Debug, Clone, PartialEq)]
pub struct EmbeddingBagInstance {
    /// CSR offsets over all bags of all tables (`bags + 1` entries).
    pub offsets: Vec<u32>,
    /// Row id of every lookup, per table.
    pub indices: Vec<u32>,
    /// Per-lookup weights (when the workload has them): multiples of 1/8 in 1/8..=2, so that
    /// weighted rows stay exact in f32.
    pub weights: Option<Vec<f32>>,
    /// Knowledge-graph scoring: each triple's head entity and relation (the candidate tails are
    /// the bags: `indices`, the true tail first).
    pub kg: Option<KgTriples>,
    /// The edge list `(source, destination)` in its own order (message passing only; the CSR
    /// above holds the same edges grouped by destination, for the reference and partitioning).
    pub edges: Option<Vec<(u32, u32)>>,
    /// Seed of the procedural table contents.
    pub table_seed: u64,
}

/// The heads and relations of knowledge-graph triples.
#[derive(Debug, Clone, PartialEq)]
pub struct KgTriples {
    /// Head entity of each triple.
    pub heads: Vec<u32>,
    /// Relation of each triple.
    pub relations: Vec<u32>,
}

impl EmbeddingBagInstance {
    /// Draws the indices of `spec` from streams of `seeds` named after the workload.
    pub fn generate(spec: &WorkloadSpec, seeds: &SeedTree) -> Self {
        let tree = seeds.child(&format!("workload.{}", spec.name));
        let table_seed = rand::Rng::next_u64(&mut tree.stream("tables"));
        if let Some(g) = &spec.graph {
            // GNN aggregation: bag v holds v's in-neighbours (see crate::graph).
            let edges = crate::graph::generate_edges(g, &mut tree.stream("graph"));
            let mut csr = crate::graph::csr_by_destination(g.vertices(), &edges);
            // A mini-batch aggregates the first `batch` vertices only.
            let bags = (spec.batch as usize).min(csr.offsets.len() - 1);
            csr.offsets.truncate(bags + 1);
            csr.sources.truncate(csr.offsets[bags] as usize);
            let scatter = spec.op == crate::workload::Op::GnnScatter;
            // GraphSAGE-style sampling: at most `fanout` in-neighbours per destination.
            let kept = g.fanout().map(|k| {
                let (sampled, kept) = csr.sample(k, &mut tree.stream("graph.sample"));
                (std::mem::replace(&mut csr, sampled).offsets, kept)
            });
            let weights = spec.weights.then(|| draw_weights(csr.sources.len(), &mut tree.stream("weights")));
            // Message passing walks the edge list itself (into the mini-batch's destinations;
            // of a sampled graph, the sampled edges: a destination's edges appear in the CSR in
            // the list's order, so its n-th edge is the CSR entry `offsets[d] + n`).
            let edges = scatter.then(|| {
                let mut seen = vec![0u32; bags];
                let mut sampled = |d: usize| match &kept {
                    Some((offsets, kept)) => {
                        let at = offsets[d] + seen[d];
                        seen[d] += 1;
                        kept[at as usize]
                    }
                    None => true,
                };
                edges.into_iter().filter(|&(_, d)| (d as usize) < bags && sampled(d as usize)).collect()
            });
            return Self { offsets: csr.offsets, indices: csr.sources, weights, kg: None, edges, table_seed };
        }
        let dist = spec.indices.unwrap_or(crate::workload::IndexDistribution::Uniform);
        if spec.op == crate::workload::Op::SparseAttention {
            return Self::attention(spec, dist, &tree, table_seed);
        }
        if spec.op == crate::workload::Op::KgScore {
            return Self::triples(spec, dist, &tree, table_seed);
        }
        let mut offsets = Vec::with_capacity(spec.bags() as usize + 1);
        let mut indices = Vec::with_capacity(spec.lookups() as usize);
        offsets.push(0);
        for t in 0..spec.tables {
            // Per table: its own distribution, the rows it draws from and its bag size
            // (`[[table_indices]]`).
            let (dist, rows) = spec.table_distribution(t);
            let mut g = IndexGenerator::new(dist, rows, tree.stream(&format!("table{t}.indices")));
            let bag_size = spec.table_bag_size(t);
            for _ in 0..spec.batch {
                for _ in 0..bag_size {
                    indices.push(g.next_index() as u32);
                }
                offsets.push(indices.len() as u32);
            }
        }
        let weights = spec.weights.then(|| draw_weights(indices.len(), &mut tree.stream("weights")));
        Self { offsets, indices, weights, kg: None, edges: None, table_seed }
    }

    /// The instance of an index trace (see [`crate::workload::TraceFiles`]): `offsets` over
    /// `tables x batch` bags and their row ids, checked against the workload (the field named
    /// in an error is `trace.offsets` or `trace.indices`); table values are drawn from `seeds`
    /// as for generated indices.
    pub fn from_trace(
        spec: &WorkloadSpec,
        offsets: &[i64],
        indices: &[i64],
        seeds: &SeedTree,
    ) -> Result<Self, crate::workload::WorkloadError> {
        let bad = |field: &'static str, message: String| crate::workload::WorkloadError { field, message };
        let bags = spec.bags();
        if offsets.len() as u64 != bags + 1 {
            return Err(bad(
                "trace.offsets",
                format!(
                    "{} offsets, but tables x batch + 1 = {} x {} + 1 = {}",
                    offsets.len(),
                    spec.tables,
                    spec.batch,
                    bags + 1
                ),
            ));
        }
        if indices.len() > u32::MAX as usize {
            return Err(bad("trace.indices", format!("{} row ids do not fit 32-bit offsets", indices.len())));
        }
        if offsets.first() != Some(&0) || offsets.last() != Some(&(indices.len() as i64)) {
            return Err(bad(
                "trace.offsets",
                match (offsets.first(), offsets.last()) {
                    (Some(first), Some(last)) => format!(
                        "offsets must run from 0 to the {} row ids; they run from {first} to {last}",
                        indices.len()
                    ),
                    _ => format!("offsets must run from 0 to the {} row ids; there are none", indices.len()),
                },
            ));
        }
        if let Some(g) = offsets.windows(2).position(|w| w[1] < w[0]) {
            return Err(bad(
                "trace.offsets",
                format!("offsets[{}] = {} is below offsets[{g}] = {}", g + 1, offsets[g + 1], offsets[g]),
            ));
        }
        if let Some(j) = indices.iter().position(|&i| i < 0 || i as u64 >= spec.rows) {
            return Err(bad(
                "trace.indices",
                format!("indices[{j}] = {} is outside the table's {} rows", indices[j], spec.rows),
            ));
        }
        let tree = seeds.child(&format!("workload.{}", spec.name));
        let table_seed = rand::Rng::next_u64(&mut tree.stream("tables"));
        Ok(Self {
            offsets: offsets.iter().map(|&o| o as u32).collect(),
            indices: indices.iter().map(|&i| i as u32).collect(),
            weights: None,
            kg: None,
            edges: None,
            table_seed,
        })
    }

    /// Knowledge-graph scoring of the first `batch` of `triples` (`[head, relation, tail]`, in
    /// order; [`parse_triples`] reads them), each against its true tail and `negatives`
    /// corrupted tails drawn uniformly, from the same stream as for drawn triples. Fewer
    /// triples than `batch` is an error naming `batch`.
    pub fn from_triples(
        spec: &WorkloadSpec,
        triples: &[[u32; 3]],
        seeds: &SeedTree,
    ) -> Result<Self, crate::workload::WorkloadError> {
        if triples.len() < spec.batch as usize {
            return Err(crate::workload::WorkloadError {
                field: "batch",
                message: format!("{} triples, but the triples file has {}", spec.batch, triples.len()),
            });
        }
        let tree = seeds.child(&format!("workload.{}", spec.name));
        let table_seed = rand::Rng::next_u64(&mut tree.stream("tables"));
        let mut corrupt =
            IndexGenerator::new(IndexDistribution::Uniform, spec.rows, tree.stream("negatives"));
        let mut kg = KgTriples { heads: Vec::new(), relations: Vec::new() };
        let (mut offsets, mut indices) = (vec![0u32], Vec::new());
        for &[h, r, t] in &triples[..spec.batch as usize] {
            kg.heads.push(h);
            kg.relations.push(r);
            indices.push(t);
            for _ in 0..spec.negatives {
                indices.push(corrupt.next_index() as u32);
            }
            offsets.push(indices.len() as u32);
        }
        Ok(Self { offsets, indices, weights: None, kg: Some(kg), edges: None, table_seed })
    }

    /// Knowledge-graph triples: heads and true tails drawn from `dist` over the entities,
    /// relations uniform, and `negatives` corrupted tails per triple drawn uniformly (as
    /// training and evaluation pipelines corrupt tails).
    fn triples(spec: &WorkloadSpec, dist: IndexDistribution, tree: &SeedTree, table_seed: u64) -> Self {
        let mut entities = IndexGenerator::new(dist, spec.rows, tree.stream("heads"));
        let mut tails = IndexGenerator::new(dist, spec.rows, tree.stream("tails"));
        let mut corrupt =
            IndexGenerator::new(IndexDistribution::Uniform, spec.rows, tree.stream("negatives"));
        let mut rels =
            IndexGenerator::new(IndexDistribution::Uniform, spec.relations, tree.stream("relations"));
        let mut kg = KgTriples { heads: Vec::new(), relations: Vec::new() };
        let (mut offsets, mut indices) = (vec![0u32], Vec::new());
        for _ in 0..spec.batch {
            kg.heads.push(entities.next_index() as u32);
            kg.relations.push(rels.next_index() as u32);
            indices.push(tails.next_index() as u32);
            for _ in 0..spec.negatives {
                indices.push(corrupt.next_index() as u32);
            }
            offsets.push(indices.len() as u32);
        }
        Self { offsets, indices, weights: None, kg: Some(kg), edges: None, table_seed }
    }

    /// Sparse attention: per query, `bag_size / block` distinct blocks of `block` consecutive
    /// positions, drawn from `dist` over the head's blocks, in ascending order (as kernels
    /// gather them); the weights are the attention scores.
    fn attention(spec: &WorkloadSpec, dist: IndexDistribution, tree: &SeedTree, table_seed: u64) -> Self {
        let block = u64::from(spec.block.max(1));
        let blocks = (spec.rows / block).max(1);
        let per_query = (spec.bag_size as u64 / block) as usize;
        let mut offsets = vec![0u32];
        let mut indices = Vec::with_capacity(spec.lookups() as usize);
        let mut chosen: Vec<u64> = Vec::with_capacity(per_query);
        for t in 0..spec.tables {
            let mut g = IndexGenerator::new(dist, blocks, tree.stream(&format!("head{t}.blocks")));
            for _ in 0..spec.batch {
                chosen.clear();
                // Distinct blocks (k is far below the context length, so redraws are rare;
                // validation guarantees enough blocks exist).
                while chosen.len() < per_query {
                    let b = g.next_index();
                    if !chosen.contains(&b) {
                        chosen.push(b);
                    }
                }
                chosen.sort_unstable();
                for &b in &chosen {
                    indices.extend((b * block..(b + 1) * block).map(|p| p as u32));
                }
                offsets.push(indices.len() as u32);
            }
        }
        let weights = Some(draw_weights(indices.len(), &mut tree.stream("scores")));
        Self { offsets, indices, weights, kg: None, edges: None, table_seed }
    }

    /// The reference output: `bags x dim` f32, row-major, computed as the compiled loop nest
    /// does (see `crate::frontend`): lookups folded in bag order, one rounding per multiply and
    /// per add; mean scales by the reciprocal of the length; max starts at `f32::MIN` (0 for an
    /// empty bag). Lookups of the padding index, if there is one, are left out (of the length
    /// too, and a bag of padding only is 0, as in PyTorch).
    pub fn reference(&self, spec: &WorkloadSpec) -> Vec<f32> {
        if let Some(kg) = &self.kg {
            return self.kg_scores(spec, kg).0;
        }
        if let Some(tt) = &spec.tt {
            return crate::tt::reference(self, spec, tt).0;
        }
        self.fold(spec, false)
    }

    /// Per output element, the sum of the magnitudes of the terms [`Self::reference`] folds
    /// (`|w * x|` over the bag's lookups, padding left out), for error bounds of sums taken in
    /// another order (bags cut across cores, [`crate::split`]). Embedding bags and GNN
    /// aggregation only (the ops [`Self::reference`] folds itself).
    pub fn magnitudes(&self, spec: &WorkloadSpec) -> Vec<f32> {
        let spec = WorkloadSpec { pooling: Pooling::Sum, ..spec.clone() };
        self.fold(&spec, true)
    }

    /// The fold of [`Self::reference`] for embedding bags, of each term or (`magnitude`) of its
    /// absolute value.
    fn fold(&self, spec: &WorkloadSpec, magnitude: bool) -> Vec<f32> {
        let dim = spec.dim as usize;
        let mut out = vec![0.0f32; spec.bags() as usize * dim];
        let mut keys: Vec<u64> = Vec::new();
        let mut keyed_table = None;
        let format = spec.dtype.format();
        let mut params_key = 0;
        for g in 0..spec.bags() as usize {
            let table = (g / spec.batch.max(1) as usize) as u32;
            if keyed_table != Some(table) {
                // Column keys once per table: one hash step per element (same values).
                keys = (0..spec.dim).map(|k| column_key(self.table_seed, table, k)).collect();
                params_key = row_params_key(self.table_seed, table);
                keyed_table = Some(table);
            }
            let (lo, hi) = (self.offsets[g], self.offsets[g + 1]);
            let acc = &mut out[g * dim..(g + 1) * dim];
            // PyTorch's `padding_idx`: those lookups are left out of the bag.
            let kept = |j: &u32| spec.padding_idx != Some(self.indices[*j as usize]);
            let count = (lo..hi).filter(kept).count() as u32;
            if spec.pooling == Pooling::Max && count > 0 {
                acc.fill(f32::MIN);
            }
            for j in (lo..hi).filter(kept) {
                let row = self.indices[j as usize] as u64;
                let w = self.weights.as_ref().map(|w| w[j as usize]);
                for (a, &key) in acc.iter_mut().zip(&keys) {
                    // The stored value as the loads read it (an int8 one dequantized).
                    let x = format_value(format, key, params_key, row);
                    let x = w.map_or(x, |w| w * x);
                    let x = if magnitude { x.abs() } else { x };
                    *a = if spec.pooling == Pooling::Max { a.max(x) } else { *a + x };
                }
            }
            if spec.pooling == Pooling::Mean {
                let scale = 1.0 / count.max(1) as f32;
                acc.iter_mut().for_each(|a| *a *= scale);
            }
        }
        out
    }
}

impl EmbeddingBagInstance {
    /// The distinct (table, row) pairs the bags read, sorted (bag `g` reads table `g / batch`;
    /// bags may differ in size): rows as stored, so for a TT-EmbeddingBag the rows of the
    /// cores' slices each lookup reads (`crate::frontend::tt_descriptors`).
    pub fn bag_rows(&self, spec: &WorkloadSpec) -> Vec<(u32, u32)> {
        let batch = spec.batch.max(1) as usize;
        let descriptors = spec.tt.as_ref().map(crate::frontend::tt_descriptors).unwrap_or_default();
        let mut rows = Vec::with_capacity(self.indices.len());
        for (g, w) in self.offsets.windows(2).enumerate() {
            let table = (g / batch) as u32;
            let bag = self.indices[w[0] as usize..w[1] as usize].iter();
            if spec.tt.is_some() {
                rows.extend(bag.flat_map(|&i| {
                    descriptors.iter().map(move |[stride, radix, slice, first]| {
                        (table, (i / stride % radix) * slice + first)
                    })
                }));
            } else {
                rows.extend(bag.map(|&row| (table, row)));
            }
        }
        rows.sort_unstable();
        rows.dedup();
        rows
    }

    /// How far a simulated output may be from [`Self::reference`]: `None` when it must be equal
    /// bit for bit (every op but knowledge-graph scoring with DistMult or ComplEx and
    /// TT-EmbeddingBag, whose sums round; `crate::tt` for the latter's bound), else a bound per
    /// element, `2 n u sum |terms|` for a sum of `n` products (`u` the
    /// unit roundoff, 2^-24): the bound of recursive summation in any order, with a factor 2 to
    /// spare, so any correct order of the compiled code (element by element at `-O0`, lane by
    /// lane then across lanes once vectorized) is within it.
    pub fn tolerance(&self, spec: &WorkloadSpec) -> Option<Vec<f32>> {
        if let Some(tt) = &spec.tt {
            return Some(crate::tt::reference(self, spec, tt).1);
        }
        let kg = self.kg.as_ref()?;
        (spec.model != Some(KgModel::TransE)).then(|| self.kg_scores(spec, kg).1)
    }

    /// Knowledge-graph scores and their error bounds (see [`Self::tolerance`]). Entity values
    /// are procedural table 0, relation values table 1. Every product of three values is exact
    /// in f32 (9-bit numerators), so the exact score is the f64 sum of the products (exact for
    /// any `dim` here), rounded once; TransE's sum of absolute differences is exact in f32 in
    /// any order.
    fn kg_scores(&self, spec: &WorkloadSpec, kg: &KgTriples) -> (Vec<f32>, Vec<f32>) {
        let ent: Vec<u64> = (0..spec.dim).map(|k| column_key(self.table_seed, 0, k)).collect();
        let rel: Vec<u64> = (0..spec.dim).map(|k| column_key(self.table_seed, 1, k)).collect();
        let (mut scores, mut bounds) = (Vec::with_capacity(self.indices.len()), Vec::new());
        for (q, w) in self.offsets.windows(2).enumerate() {
            let (h, r) = (u64::from(kg.heads[q]), u64::from(kg.relations[q]));
            let x = |k: usize| keyed_value(ent[k], h);
            let y = |k: usize| keyed_value(rel[k], r);
            for &t in &self.indices[w[0] as usize..w[1] as usize] {
                let z = |k: usize| keyed_value(ent[k], u64::from(t));
                let terms: Vec<f64> = match spec.model {
                    Some(KgModel::TransE) => {
                        (0..spec.dim as usize).map(|k| -f64::from((x(k) + y(k) - z(k)).abs())).collect()
                    }
                    Some(KgModel::DistMult) => {
                        (0..spec.dim as usize).map(|k| f64::from(x(k) * y(k) * z(k))).collect()
                    }
                    Some(KgModel::ComplEx) => {
                        let half = spec.dim as usize / 2;
                        (0..half)
                            .flat_map(|k| {
                                let (hr, hi, rr, ri, tr, ti) =
                                    (x(k), x(k + half), y(k), y(k + half), z(k), z(k + half));
                                [hr * rr * tr, hi * rr * ti, hr * ri * ti, -(hi * ri * tr)].map(f64::from)
                            })
                            .collect()
                    }
                    None => Vec::new(),
                };
                // `+ 0.0`: an all-zero TransE distance scores +0.0, as the compiled code does.
                scores.push((terms.iter().sum::<f64>() + 0.0) as f32);
                let magnitude: f64 = terms.iter().map(|t| t.abs()).sum();
                bounds.push((2.0 * terms.len() as f64 * magnitude / f64::from(1u32 << 24)) as f32);
            }
        }
        (scores, bounds)
    }
}

/// `n` weights, multiples of 1/8 in 1/8..=2.
fn draw_weights(n: usize, rng: &mut impl rand::Rng) -> Vec<f32> {
    (0..n).map(|_| (rng.next_u64() % 16 + 1) as f32 / 8.0).collect()
}

/// Reads knowledge-graph triples: one `head relation tail` a line (non-negative integer ids,
/// separated by whitespace), entities below `entities` and relations below `relations`; blank
/// lines and lines starting with `#` are skipped, and a `\r` before a line's end is ignored.
/// `Err((line, why))` names the 1-based line at fault (0: the file as a whole).
pub fn parse_triples(text: &str, entities: u64, relations: u64) -> Result<Vec<[u32; 3]>, (usize, String)> {
    let mut out = Vec::new();
    for (n, raw) in text.split('\n').enumerate() {
        let line = raw.strip_suffix('\r').unwrap_or(raw).trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.len() != 3 {
            return Err((
                n + 1,
                format!("expected `head relation tail` (3 fields), found {} in {line:?}", fields.len()),
            ));
        }
        let mut triple = [0u32; 3];
        for (k, (&field, (what, bound, key))) in fields
            .iter()
            .zip([
                ("head", entities, "rows"),
                ("relation", relations, "relations"),
                ("tail", entities, "rows"),
            ])
            .enumerate()
        {
            let id: u64 = field
                .parse()
                .map_err(|_| (n + 1, format!("{what} {field:?} is not an id (a non-negative integer)")))?;
            if id >= bound {
                return Err((n + 1, format!("{what} {id} is not below {key} = {bound}")));
            }
            triple[k] = id as u32;
        }
        out.push(triple);
    }
    if out.is_empty() {
        return Err((0, "no triples".into()));
    }
    Ok(out)
}
