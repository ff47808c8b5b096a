//! Power-law graphs for GNN aggregation: a seeded R-MAT generator and its CSR by destination.
//!
//! R-MAT (Chakrabarti, Zhan and Faloutsos, SDM 2004) places each edge by descending `scale`
//! levels of the adjacency matrix, choosing one of four quadrants with probabilities a, b, c and
//! d = 1 - a - b - c at each level. The defaults are Graph500's (a = 0.57, b = 0.19, c = 0.19),
//! which give the skewed, power-law degrees of social and product graphs. As Graph500 does,
//! vertex labels are then scrambled (here by an affine permutation of `0..2^scale`), so a
//! vertex's degree says nothing about where its row lies in memory. Every generated edge is
//! kept, duplicates and self-loops included (Graph500's edge list keeps them too), so a graph of
//! `2^scale` vertices has exactly `edge_factor * 2^scale` edges.
//!
//! Aggregation sums, for every vertex, the feature rows of its in-neighbours, which is an
//! EmbeddingBag over one table: bag `v` holds the sources of the edges into `v`.

use rand::Rng;
use rand_pcg::Pcg64;
use serde::Deserialize;

/// Largest supported `scale` (2^26 vertices; indices and offsets stay 32-bit).
pub const MAX_SCALE: u32 = 26;

/// How the graph of a GNN workload is made.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(tag = "generator", rename_all = "snake_case", deny_unknown_fields)]
pub enum GraphSpec {
    /// A seeded R-MAT graph (see the module docs).
    Rmat {
        /// log2 of the vertex count.
        scale: u32,
        /// Edges per vertex (Graph500: 16).
        edge_factor: u32,
        /// Probability of the top-left quadrant (Graph500: 0.57).
        #[serde(default = "rmat_a")]
        a: f64,
        /// Top-right (Graph500: 0.19).
        #[serde(default = "rmat_bc")]
        b: f64,
        /// Bottom-left (Graph500: 0.19).
        #[serde(default = "rmat_bc")]
        c: f64,
    },
}

fn rmat_a() -> f64 {
    0.57
}

fn rmat_bc() -> f64 {
    0.19
}

impl GraphSpec {
    /// Vertices of the graph.
    pub fn vertices(&self) -> u64 {
        match *self {
            GraphSpec::Rmat { scale, .. } => 1u64 << scale.min(MAX_SCALE),
        }
    }

    /// Edges of the graph.
    pub fn edges(&self) -> u64 {
        match *self {
            GraphSpec::Rmat { edge_factor, .. } => self.vertices() * u64::from(edge_factor),
        }
    }

    /// Checks the parameters; `Err((field, message))` names the one at fault.
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        match *self {
            GraphSpec::Rmat { scale, edge_factor, a, b, c } => {
                if !(1..=MAX_SCALE).contains(&scale) {
                    return Err(("graph.scale", format!("{scale} is outside 1..={MAX_SCALE}")));
                }
                if edge_factor == 0 {
                    return Err(("graph.edge_factor", "must be at least 1".into()));
                }
                if self.edges() > u64::from(u32::MAX) {
                    return Err((
                        "graph.edge_factor",
                        format!("{} edges do not fit 32-bit offsets", self.edges()),
                    ));
                }
                for (field, p) in [("graph.a", a), ("graph.b", b), ("graph.c", c)] {
                    if !(p.is_finite() && (0.0..=1.0).contains(&p)) {
                        return Err((field, format!("{p} is not a probability")));
                    }
                }
                if a + b + c > 1.0 {
                    return Err(("graph.c", format!("a + b + c = {} exceeds 1", a + b + c)));
                }
                Ok(())
            }
        }
    }
}

/// A graph in compressed sparse rows by destination: the in-neighbours of vertex `v` are
/// `sources[offsets[v]..offsets[v + 1]]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Csr {
    /// `vertices + 1` offsets into `sources`.
    pub offsets: Vec<u32>,
    /// Source vertex of every edge, grouped by destination in generation order.
    pub sources: Vec<u32>,
}

impl Csr {
    /// In-degree of every vertex.
    pub fn degrees(&self) -> impl Iterator<Item = u32> + '_ {
        self.offsets.windows(2).map(|w| w[1] - w[0])
    }
}

/// A uniform f64 in [0, 1) from 53 random bits.
fn unit(rng: &mut Pcg64) -> f64 {
    (rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// Generates the graph of `spec` from `rng` (the spec must have passed [`GraphSpec::check`]).
pub fn generate(spec: &GraphSpec, rng: &mut Pcg64) -> Csr {
    csr_by_destination(spec.vertices(), &generate_edges(spec, rng))
}

/// The edges of the graph of `spec`, `(source, destination)`, in generation order (the edge
/// list a message-passing layer scatters over).
pub fn generate_edges(spec: &GraphSpec, rng: &mut Pcg64) -> Vec<(u32, u32)> {
    let GraphSpec::Rmat { scale, a, b, c, .. } = *spec;
    let n = spec.vertices();
    let mask = n - 1;
    // Label scrambling: an odd multiplier is coprime with 2^scale, so this is a permutation.
    let mul = (rng.next_u64() & mask) | 1;
    let add = rng.next_u64() & mask;
    let scramble = |v: u64| v.wrapping_mul(mul).wrapping_add(add) & mask;
    let (ab, abc) = (a + b, a + b + c);
    let mut edges: Vec<(u32, u32)> = Vec::with_capacity(spec.edges() as usize);
    for _ in 0..spec.edges() {
        let (mut src, mut dst) = (0u64, 0u64);
        for _ in 0..scale {
            let r = unit(rng);
            let (i, j) = if r < a {
                (0, 0)
            } else if r < ab {
                (0, 1)
            } else if r < abc {
                (1, 0)
            } else {
                (1, 1)
            };
            src = src << 1 | i;
            dst = dst << 1 | j;
        }
        edges.push((scramble(src) as u32, scramble(dst) as u32));
    }
    edges
}

/// The CSR by destination of `edges` over `n` vertices.
pub fn csr_by_destination(n: u64, edges: &[(u32, u32)]) -> Csr {
    // Counting sort by destination keeps each vertex's edges in generation order.
    let mut offsets = vec![0u32; n as usize + 1];
    for &(_, d) in edges {
        offsets[d as usize + 1] += 1;
    }
    for v in 0..n as usize {
        offsets[v + 1] += offsets[v];
    }
    let mut next = offsets.clone();
    let mut sources = vec![0u32; edges.len()];
    for &(s, d) in edges {
        sources[next[d as usize] as usize] = s;
        next[d as usize] += 1;
    }
    Csr { offsets, sources }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn rmat(scale: u32, edge_factor: u32) -> GraphSpec {
        GraphSpec::Rmat { scale, edge_factor, a: 0.57, b: 0.19, c: 0.19 }
    }

    #[test]
    fn sizes_and_csr_are_consistent() {
        let spec = rmat(10, 8);
        let g = generate(&spec, &mut Pcg64::seed_from_u64(1));
        assert_eq!(g.offsets.len(), 1025);
        assert_eq!(g.sources.len(), 8192);
        assert_eq!(*g.offsets.last().unwrap(), 8192);
        assert!(g.offsets.windows(2).all(|w| w[0] <= w[1]));
        assert!(g.sources.iter().all(|&s| s < 1024));
    }

    #[test]
    fn degrees_are_skewed_like_a_power_law() {
        let spec = rmat(14, 16);
        let g = generate(&spec, &mut Pcg64::seed_from_u64(7));
        let mut d: Vec<u32> = g.degrees().collect();
        d.sort_unstable_by(|a, b| b.cmp(a));
        let top1: u64 = d[..d.len() / 100].iter().map(|&x| u64::from(x)).sum();
        let share = top1 as f64 / g.sources.len() as f64;
        // Uniform placement would give the top 1% about 2% of the edges; R-MAT gives far more.
        assert!(share > 0.15, "top 1% of vertices hold {share:.3} of the edges");
        assert!(d.iter().filter(|&&x| x == 0).count() > d.len() / 10, "many isolated vertices");
    }

    #[test]
    fn uniform_quadrants_give_flat_degrees() {
        let spec = GraphSpec::Rmat { scale: 12, edge_factor: 16, a: 0.25, b: 0.25, c: 0.25 };
        let g = generate(&spec, &mut Pcg64::seed_from_u64(3));
        let max = g.degrees().max().unwrap();
        assert!(max < 50, "Erdos-Renyi-like graph, max in-degree {max}");
    }

    #[test]
    fn same_seed_same_graph() {
        let spec = rmat(8, 4);
        let a = generate(&spec, &mut Pcg64::seed_from_u64(5));
        let b = generate(&spec, &mut Pcg64::seed_from_u64(5));
        let c = generate(&spec, &mut Pcg64::seed_from_u64(6));
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn bad_parameters_are_named() {
        assert_eq!(rmat(0, 4).check().unwrap_err().0, "graph.scale");
        assert_eq!(rmat(40, 4).check().unwrap_err().0, "graph.scale");
        assert_eq!(rmat(8, 0).check().unwrap_err().0, "graph.edge_factor");
        let over = GraphSpec::Rmat { scale: 8, edge_factor: 4, a: 0.6, b: 0.3, c: 0.3 };
        assert_eq!(over.check().unwrap_err().0, "graph.c");
        let nan = GraphSpec::Rmat { scale: 8, edge_factor: 4, a: f64::NAN, b: 0.1, c: 0.1 };
        assert_eq!(nan.check().unwrap_err().0, "graph.a");
        assert!(rmat(8, 4).check().is_ok());
    }
}
