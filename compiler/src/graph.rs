//! Graphs for GNN aggregation: a seeded R-MAT generator, or a real graph's edge list read from
//! a file ([`FileGraph`]), and its CSR by destination.
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
//!
//! A file graph (`[graph] file = "...", format = "cora" | "snap"`) is an edge list, one edge a
//! line, read by [`parse_edge_list`] (dae-sim reads the file, relative to the config file that
//! names it, when the config loads):
//!
//! - `format = "snap"` (SNAP's edge lists): `from to`, two vertex ids (non-negative integers)
//!   separated by whitespace, the edge `from -> to`; vertex ids are used as they are, and the
//!   graph has `max id + 1` vertices (or `vertices`, if given, which every id must be below).
//! - `format = "cora"` (LINQS's `cora.cites`): `cited citing`, two paper ids (any tokens), the
//!   edge `citing -> cited` (the second paper cites the first), so a vertex's bag holds the
//!   papers that cite it. Paper ids are mapped to dense vertex ids `0, 1, ...` in order of first
//!   appearance, reading each line left to right (its cited paper, then its citing one); the
//!   graph has as many vertices as distinct papers (`vertices`, if given, must equal that).
//!
//! - `format = "mtx"` (Matrix Market, as SuiteSparse and SNAP's `.mtx` releases): a
//!   `%%MatrixMarket matrix coordinate pattern|real|integer general|symmetric` banner, `%`
//!   comments, a `rows cols entries` size line, then `i j [value]` entries with 1-based ids,
//!   the edge `i -> j` (row to column: the adjacency matrix's convention); values are ignored.
//!   The matrix must be square (its size is the vertex count) and hold exactly `entries`
//!   entries. A `symmetric` matrix stores one triangle: each off-diagonal entry is both
//!   directions, as if `symmetric = true`.
//!
//! In the first two, blank lines and lines starting with `#` are skipped, and a `\r` before the line's
//! end is ignored (CRLF files). `symmetric = true` adds each edge's reverse right after it (a
//! self-loop once), the undirected graph GCN-style layers aggregate over; `dedup = true` then
//! drops every edge equal to an earlier one. Edges keep the file's order otherwise.
//!
//! Either graph may be sampled as GraphSAGE's mini-batches are (`[graph] fanout = k`, after
//! Hamilton, Ying and Leskovec, NeurIPS 2017, whose neighbour sampler draws a fixed number of
//! neighbours per vertex; REFERENCE.md section 4 gives its [15, 10, 5]): every destination keeps
//! at most `k` of its in-neighbours, drawn uniformly without replacement ([`Csr::sample`]), so a
//! hub's thousands of in-neighbours no longer make one bag thousands of lookups long.
//!
//! Self-loops (`v -> v`) are kept by default: vertex `v`'s bag then holds `v` itself, once per
//! such edge, as a GCN layer's `A + I` does. `self_loops = "drop"` removes them after the file
//! is read (the vertex count is the file's all the same), for files where they are artefacts:
//! SNAP's soc-Slashdot0902 has 78,303 of them.

use rand::Rng;
use rand_pcg::Pcg64;
use serde::Deserialize;
use std::sync::Arc;

/// Largest supported `scale` (2^26 vertices; indices and offsets stay 32-bit).
pub const MAX_SCALE: u32 = 26;

/// How the graph of a GNN workload is made: `generator = "rmat"` with its parameters, or
/// `file = "..."` with its `format` (see the module docs).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(try_from = "RawGraph")]
pub enum GraphSpec {
    /// A seeded R-MAT graph (see the module docs).
    Rmat {
        /// log2 of the vertex count.
        scale: u32,
        /// Edges per vertex (Graph500: 16).
        edge_factor: u32,
        /// Probability of the top-left quadrant (Graph500: 0.57).
        a: f64,
        /// Top-right (Graph500: 0.19).
        b: f64,
        /// Bottom-left (Graph500: 0.19).
        c: f64,
        /// In-neighbours sampled per destination vertex (`[graph] fanout`), if any.
        fanout: Option<u32>,
    },
    /// A graph read from an edge-list file.
    File(FileGraph),
}

/// A graph from an edge-list file (see the module docs).
#[derive(Debug, Clone, PartialEq)]
pub struct FileGraph {
    /// The file, as written (relative to the config file that names it).
    pub file: String,
    /// How its lines read.
    pub format: GraphFormat,
    /// Add each edge's reverse.
    pub symmetric: bool,
    /// Drop repeated edges.
    pub dedup: bool,
    /// The vertex count the file must have (a check), if given.
    pub vertices: Option<u64>,
    /// What becomes of the file's self-loops.
    pub self_loops: SelfLoops,
    /// In-neighbours sampled per destination vertex (`[graph] fanout`), if any.
    pub fanout: Option<u32>,
    /// The edges, once the file is read ([`FileGraph::load_text`]).
    pub loaded: Option<Arc<EdgeList>>,
}

/// The line format of a graph file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GraphFormat {
    /// SNAP edge lists: `from to`, integer vertex ids.
    Snap,
    /// LINQS's `cora.cites`: `cited citing`, paper ids mapped to dense ids.
    Cora,
    /// Matrix Market coordinate format: 1-based `i j [value]` entries of a square matrix.
    Mtx,
}

/// What a file graph's self-loops (`v -> v` edges) become (`[graph] self_loops`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SelfLoops {
    /// Kept, as the file has them (the default).
    #[default]
    Keep,
    /// Removed once the file is read.
    Drop,
}

/// A graph's edges, `(source, destination)` in the file's order, over `vertices` vertices.
#[derive(Clone, PartialEq, Eq)]
pub struct EdgeList {
    /// Vertices (dense ids `0..vertices`).
    pub vertices: u64,
    /// The edges.
    pub edges: Vec<(u32, u32)>,
}

impl std::fmt::Debug for EdgeList {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "EdgeList {{ vertices: {}, edges: {} }}", self.vertices, self.edges.len())
    }
}

/// The generators `generator` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Generator {
    Rmat,
}

/// `[graph]` as written: either generator's keys or a file's.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawGraph {
    generator: Option<Generator>,
    scale: Option<u32>,
    edge_factor: Option<u32>,
    a: Option<f64>,
    b: Option<f64>,
    c: Option<f64>,
    file: Option<String>,
    format: Option<GraphFormat>,
    symmetric: Option<bool>,
    dedup: Option<bool>,
    vertices: Option<u64>,
    self_loops: Option<SelfLoops>,
    fanout: Option<u32>,
}

impl TryFrom<RawGraph> for GraphSpec {
    type Error = String;

    fn try_from(r: RawGraph) -> Result<Self, String> {
        let rmat_keys =
            r.scale.is_some() || r.edge_factor.is_some() || r.a.is_some() || r.b.is_some() || r.c.is_some();
        let file_keys = r.format.is_some()
            || r.symmetric.is_some()
            || r.dedup.is_some()
            || r.vertices.is_some()
            || r.self_loops.is_some();
        match (r.generator, r.file) {
            (Some(Generator::Rmat), None) => {
                if file_keys {
                    return Err(
                        "format, symmetric, dedup, vertices and self_loops are for a graph from a file"
                            .into(),
                    );
                }
                let scale = r.scale.ok_or("missing field `scale`")?;
                let edge_factor = r.edge_factor.ok_or("missing field `edge_factor`")?;
                Ok(GraphSpec::Rmat {
                    scale,
                    edge_factor,
                    a: r.a.unwrap_or(0.57),
                    b: r.b.unwrap_or(0.19),
                    c: r.c.unwrap_or(0.19),
                    fanout: r.fanout,
                })
            }
            (None, Some(file)) => {
                if rmat_keys {
                    return Err("scale, edge_factor, a, b and c are for generator = \"rmat\"".into());
                }
                let format = r.format.ok_or("missing field `format` (\"snap\", \"cora\" or \"mtx\")")?;
                Ok(GraphSpec::File(FileGraph {
                    file,
                    format,
                    symmetric: r.symmetric.unwrap_or(false),
                    dedup: r.dedup.unwrap_or(false),
                    vertices: r.vertices,
                    self_loops: r.self_loops.unwrap_or_default(),
                    fanout: r.fanout,
                    loaded: None,
                }))
            }
            (Some(_), Some(_)) => Err("give generator = \"rmat\" or file = \"...\", not both".into()),
            (None, None) => Err("needs generator = \"rmat\" or file = \"...\" (an edge list)".into()),
        }
    }
}

impl FileGraph {
    /// Reads the graph from `text`, the file's contents; `Err((line, why))` names the
    /// 1-based line at fault (0: the file as a whole).
    pub fn load_text(&mut self, text: &str) -> Result<(), (usize, String)> {
        let mut list = parse_edge_list(text, self.format, self.symmetric, self.dedup, self.vertices)?;
        if self.self_loops == SelfLoops::Drop {
            list.edges.retain(|&(s, d)| s != d);
            if list.edges.is_empty() {
                return Err((0, "no edges but self-loops, and self_loops = \"drop\"".into()));
            }
        }
        self.loaded = Some(Arc::new(list));
        Ok(())
    }
}

/// Parses an edge list (see the module docs); `vertices`, if given, is checked.
pub fn parse_edge_list<'a>(
    text: &'a str,
    format: GraphFormat,
    symmetric: bool,
    dedup: bool,
    vertices: Option<u64>,
) -> Result<EdgeList, (usize, String)> {
    let max_vertices = 1u64 << MAX_SCALE;
    if let Some(n) = vertices
        && !(1..=max_vertices).contains(&n)
    {
        return Err((0, format!("vertices = {n} is outside 1..={max_vertices}")));
    }
    if format == GraphFormat::Mtx {
        return parse_matrix_market(text, symmetric, dedup, vertices);
    }
    let limit = vertices.unwrap_or(max_vertices);
    let mut dense: std::collections::HashMap<&'a str, u32> = std::collections::HashMap::new();
    let mut edges: Vec<(u32, u32)> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut top = 0u64;
    for (n, raw) in text.split('\n').enumerate() {
        let line_no = n + 1;
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let fields: Vec<&str> = trimmed.split_whitespace().collect();
        if fields.len() != 2 {
            let what = match format {
                GraphFormat::Cora => "`cited citing`",
                _ => "`from to`",
            };
            return Err((
                line_no,
                format!("expected {what} (2 fields), found {} in {trimmed:?}", fields.len()),
            ));
        }
        let mut id = |token: &'a str| -> Result<u32, String> {
            match format {
                GraphFormat::Snap | GraphFormat::Mtx => {
                    let v: u64 = token
                        .parse()
                        .map_err(|_| format!("{token:?} is not a vertex id (a non-negative integer)"))?;
                    if v >= limit {
                        return Err(match vertices {
                            Some(n) => format!("vertex {v} is not below vertices = {n}"),
                            None => format!("vertex {v} is beyond the {max_vertices} vertices supported"),
                        });
                    }
                    top = top.max(v + 1);
                    Ok(v as u32)
                }
                GraphFormat::Cora => {
                    if let Some(&v) = dense.get(token) {
                        return Ok(v);
                    }
                    let v = dense.len() as u64;
                    if v >= limit {
                        return Err(match vertices {
                            Some(n) => {
                                format!("paper {token:?} is distinct paper {}, beyond vertices = {n}", v + 1)
                            }
                            None => {
                                format!("paper {token:?}: more than the {max_vertices} vertices supported")
                            }
                        });
                    }
                    dense.insert(token, v as u32);
                    top = v + 1;
                    Ok(v as u32)
                }
            }
        };
        let (first, second) =
            (id(fields[0]).map_err(|e| (line_no, e))?, id(fields[1]).map_err(|e| (line_no, e))?);
        // Cora: the second paper cites the first.
        let (src, dst) = match format {
            GraphFormat::Cora => (second, first),
            _ => (first, second),
        };
        let reverse = (symmetric && src != dst).then_some((dst, src));
        for e in std::iter::once((src, dst)).chain(reverse) {
            if !dedup || seen.insert(e) {
                edges.push(e);
            }
        }
        if edges.len() as u64 > u64::from(u32::MAX) {
            return Err((line_no, "more edges than 32-bit offsets hold".into()));
        }
    }
    if edges.is_empty() {
        return Err((0, "no edges".into()));
    }
    let vertices = match vertices {
        Some(n) if format == GraphFormat::Cora && n != top => {
            return Err((0, format!("{top} distinct papers, but vertices = {n}")));
        }
        Some(n) => n,
        None => top,
    };
    Ok(EdgeList { vertices, edges })
}

/// Parses a Matrix Market coordinate file (see the module docs); `vertices`, if given, must be
/// the matrix's size.
fn parse_matrix_market(
    text: &str,
    symmetric: bool,
    dedup: bool,
    vertices: Option<u64>,
) -> Result<EdgeList, (usize, String)> {
    let max_vertices = 1u64 << MAX_SCALE;
    let mut lines =
        text.split('\n').enumerate().map(|(n, raw)| (n + 1, raw.strip_suffix('\r').unwrap_or(raw)));
    let (_, banner) = lines.next().ok_or((0, "empty file".to_string()))?;
    let words: Vec<String> = banner.split_whitespace().map(str::to_ascii_lowercase).collect();
    if words.first().map(String::as_str) != Some("%%matrixmarket") || words.len() != 5 {
        let want = "`%%MatrixMarket matrix coordinate <field> <symmetry>`";
        return Err((1, format!("expected {want}, found {banner:?}")));
    }
    if words[1] != "matrix" || words[2] != "coordinate" {
        let found = format!("{} {}", words[1], words[2]);
        return Err((1, format!("only `matrix coordinate` files are graphs, found `{found}`")));
    }
    let values = match words[3].as_str() {
        "pattern" => 0,
        "real" | "integer" => 1,
        other => return Err((1, format!("field {other:?}: expected pattern, real or integer"))),
    };
    let both = match words[4].as_str() {
        "general" => false,
        "symmetric" => true,
        other => return Err((1, format!("symmetry {other:?}: expected general or symmetric"))),
    };
    let mut size: Option<(u64, usize)> = None;
    let mut edges: Vec<(u32, u32)> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut entries = 0usize;
    for (line_no, line) in lines {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('%') {
            continue;
        }
        let fields: Vec<&str> = trimmed.split_whitespace().collect();
        let Some((n, declared)) = size else {
            let [rows, cols, nnz] = fields[..] else {
                return Err((
                    line_no,
                    format!("expected the size line `rows cols entries`, found {trimmed:?}"),
                ));
            };
            let num = |t: &str, what: &str| -> Result<u64, (usize, String)> {
                t.parse().map_err(|_| (line_no, format!("{what} {t:?} is not a non-negative integer")))
            };
            let (rows, cols, nnz) = (num(rows, "rows")?, num(cols, "cols")?, num(nnz, "entries")?);
            if rows != cols {
                return Err((
                    line_no,
                    format!("a {rows} x {cols} matrix is not square: not an adjacency matrix"),
                ));
            }
            if !(1..=max_vertices).contains(&rows) {
                return Err((line_no, format!("{rows} vertices is outside 1..={max_vertices}")));
            }
            if let Some(v) = vertices.filter(|&v| v != rows) {
                return Err((line_no, format!("the matrix has {rows} vertices, but vertices = {v}")));
            }
            if nnz > u64::from(u32::MAX) {
                return Err((line_no, format!("{nnz} entries: more than 32-bit offsets hold")));
            }
            size = Some((rows, nnz as usize));
            continue;
        };
        if fields.len() != 2 + values {
            let want = if values == 0 { "`i j`" } else { "`i j value`" };
            let found = fields.len();
            return Err((
                line_no,
                format!("expected {want} ({} fields), found {found} in {trimmed:?}", 2 + values),
            ));
        }
        entries += 1;
        if entries > declared {
            return Err((line_no, format!("more entries than the {declared} the size line declares")));
        }
        let id = |t: &str| -> Result<u32, (usize, String)> {
            match t.parse::<u64>() {
                Ok(v) if (1..=n).contains(&v) => Ok((v - 1) as u32),
                _ => Err((line_no, format!("{t:?} is not a vertex id in 1..={n}"))),
            }
        };
        let (src, dst) = (id(fields[0])?, id(fields[1])?);
        if values == 1 && fields[2].parse::<f64>().is_err() {
            return Err((line_no, format!("value {:?} is not a number", fields[2])));
        }
        let reverse = ((both || symmetric) && src != dst).then_some((dst, src));
        for e in std::iter::once((src, dst)).chain(reverse) {
            if !dedup || seen.insert(e) {
                edges.push(e);
            }
        }
        if edges.len() as u64 > u64::from(u32::MAX) {
            return Err((line_no, "more edges than 32-bit offsets hold".into()));
        }
    }
    let Some((vertices, declared)) = size else {
        return Err((0, "no size line `rows cols entries`".into()));
    };
    if entries != declared {
        return Err((0, format!("{entries} entries, but the size line declares {declared}")));
    }
    if edges.is_empty() {
        return Err((0, "no edges".into()));
    }
    Ok(EdgeList { vertices, edges })
}

impl GraphSpec {
    /// Vertices of the graph (0 for a file graph not read yet).
    pub fn vertices(&self) -> u64 {
        match self {
            GraphSpec::Rmat { scale, .. } => 1u64 << (*scale).min(MAX_SCALE),
            GraphSpec::File(f) => f.loaded.as_ref().map_or(0, |l| l.vertices),
        }
    }

    /// Edges of the graph (0 for a file graph not read yet).
    pub fn edges(&self) -> u64 {
        match self {
            GraphSpec::Rmat { edge_factor, .. } => self.vertices() * u64::from(*edge_factor),
            GraphSpec::File(f) => f.loaded.as_ref().map_or(0, |l| l.edges.len() as u64),
        }
    }

    /// In-neighbours sampled per destination vertex, if the graph is sampled.
    pub fn fanout(&self) -> Option<u32> {
        match self {
            GraphSpec::Rmat { fanout, .. } => *fanout,
            GraphSpec::File(f) => f.fanout,
        }
    }

    /// Checks the parameters; `Err((field, message))` names the one at fault.
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        if self.fanout() == Some(0) {
            return Err(("graph.fanout", "must be at least 1 (leave it out to keep every neighbour)".into()));
        }
        match *self {
            GraphSpec::File(ref f) => match &f.loaded {
                Some(_) => Ok(()),
                None => Err((
                    "graph.file",
                    format!(
                        "{:?} has not been read (dae-sim reads it when the config loads; a library user \
                         calls FileGraph::load_text)",
                        f.file
                    ),
                )),
            },
            GraphSpec::Rmat { scale, edge_factor, a, b, c, .. } => {
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

    /// GraphSAGE-style neighbour sampling: every vertex keeps at most `fanout` of its
    /// in-neighbours, drawn uniformly without replacement from `rng` (a vertex with `fanout` or
    /// fewer keeps them all and draws nothing), in their original order. Returns the sampled
    /// graph and, per entry of `sources`, whether it was kept.
    pub fn sample(&self, fanout: u32, rng: &mut Pcg64) -> (Csr, Vec<bool>) {
        let k = fanout as usize;
        let mut kept = vec![true; self.sources.len()];
        let mut offsets = Vec::with_capacity(self.offsets.len());
        offsets.push(0u32);
        let vertices = self.offsets.len().saturating_sub(1);
        let mut sources = Vec::with_capacity(self.sources.len().min(k.saturating_mul(vertices)));
        let mut pick: Vec<u32> = Vec::new();
        for w in self.offsets.windows(2) {
            let (lo, hi) = (w[0] as usize, w[1] as usize);
            let d = hi - lo;
            if d > k {
                // A partial Fisher-Yates shuffle of the positions: its first k are a uniform
                // k-subset; sorted, they keep the bag's order.
                pick.clear();
                pick.extend(0..d as u32);
                for i in 0..k {
                    let j = i + below(rng, (d - i) as u64) as usize;
                    pick.swap(i, j);
                }
                let chosen = &mut pick[..k];
                chosen.sort_unstable();
                kept[lo..hi].fill(false);
                for &p in chosen.iter() {
                    kept[lo + p as usize] = true;
                }
            }
            sources.extend((lo..hi).filter(|&i| kept[i]).map(|i| self.sources[i]));
            offsets.push(sources.len() as u32);
        }
        (Csr { offsets, sources }, kept)
    }
}

/// A uniform integer in `0..n` (`n > 0`), by the multiply-shift reduction of 64 random bits.
fn below(rng: &mut Pcg64, n: u64) -> u64 {
    ((u128::from(rng.next_u64()) * u128::from(n)) >> 64) as u64
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
/// list a message-passing layer scatters over); a file graph's edges as read (none if it has
/// not been read), drawing nothing from `rng`.
pub fn generate_edges(spec: &GraphSpec, rng: &mut Pcg64) -> Vec<(u32, u32)> {
    let (scale, a, b, c) = match spec {
        GraphSpec::Rmat { scale, a, b, c, .. } => (*scale, *a, *b, *c),
        GraphSpec::File(f) => return f.loaded.as_ref().map_or_else(Vec::new, |l| l.edges.clone()),
    };
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

    fn mtx(text: &str, symmetric: bool) -> Result<EdgeList, (usize, String)> {
        parse_edge_list(text, GraphFormat::Mtx, symmetric, false, None)
    }

    #[test]
    fn matrix_market_entries_are_one_based_edges_row_to_column() {
        let text = "%%MatrixMarket matrix coordinate pattern general\n% a comment\n3 3 3\n1 2\n2 3\n3 3\n";
        let g = mtx(text, false).unwrap();
        assert_eq!(g.vertices, 3);
        assert_eq!(g.edges, [(0, 1), (1, 2), (2, 2)]);
        // Values are read and ignored; CRLF and upper-case banners are fine.
        let text = "%%MatrixMarket Matrix Coordinate Real General\r\n2 2 2\r\n1 2 0.5\r\n2 1 -3e2\r\n";
        assert_eq!(mtx(text, false).unwrap().edges, [(0, 1), (1, 0)]);
        // A symmetric matrix stores one triangle: off-diagonal entries are both directions.
        let text = "%%MatrixMarket matrix coordinate integer symmetric\n3 3 2\n2 1 7\n3 3 1\n";
        assert_eq!(mtx(text, false).unwrap().edges, [(1, 0), (0, 1), (2, 2)]);
        // symmetric = true does the same to a general one; dedup then drops repeats.
        let text = "%%MatrixMarket matrix coordinate pattern general\n2 2 2\n1 2\n2 1\n";
        assert_eq!(mtx(text, true).unwrap().edges, [(0, 1), (1, 0), (1, 0), (0, 1)]);
        let g = parse_edge_list(text, GraphFormat::Mtx, true, true, None).unwrap();
        assert_eq!(g.edges, [(0, 1), (1, 0)]);
    }

    #[test]
    fn a_bad_matrix_market_file_names_the_line() {
        let head = "%%MatrixMarket matrix coordinate pattern general\n";
        for (text, line, want) in [
            ("%%MatrixMarket matrix array real general\n2 2\n", 1, "only `matrix coordinate`"),
            ("3 3 1\n1 2\n", 1, "expected `%%MatrixMarket"),
            ("%%MatrixMarket matrix coordinate complex general\n", 1, "field \"complex\""),
            ("%%MatrixMarket matrix coordinate pattern hermitian\n", 1, "symmetry \"hermitian\""),
            (&format!("{head}2 3 1\n1 2\n"), 2, "not square"),
            (&format!("{head}2 2 1\n0 1\n"), 3, "\"0\" is not a vertex id in 1..=2"),
            (&format!("{head}2 2 1\n1 3\n"), 3, "\"3\" is not a vertex id in 1..=2"),
            (&format!("{head}2 2 1\n1 2\n2 1\n"), 4, "more entries than the 1"),
            (&format!("{head}2 2 3\n1 2\n"), 0, "1 entries, but the size line declares 3"),
            (&format!("{head}2 2 1\n1 2 5\n"), 3, "expected `i j` (2 fields), found 3"),
            (
                "%%MatrixMarket matrix coordinate real general\n2 2 1\n1 2 x\n",
                3,
                "value \"x\" is not a number",
            ),
            (head, 0, "no size line"),
        ] {
            let (at, why) = mtx(text, false).unwrap_err();
            assert_eq!(at, line, "{text:?}: {why}");
            assert!(why.contains(want), "{text:?}: {why}");
        }
        let e = parse_edge_list(&format!("{head}2 2 1\n1 2\n"), GraphFormat::Mtx, false, false, Some(3));
        assert!(e.unwrap_err().1.contains("the matrix has 2 vertices, but vertices = 3"));
    }

    #[test]
    fn self_loops_are_kept_unless_dropped() {
        let text = "# SNAP, CRLF\r\n0\t0\r\n0\t1\r\n2\t2\r\n1\t0\r\n";
        let mut g = FileGraph {
            file: "g.txt".into(),
            format: GraphFormat::Snap,
            symmetric: false,
            dedup: false,
            vertices: None,
            self_loops: SelfLoops::Keep,
            fanout: None,
            loaded: None,
        };
        g.load_text(text).unwrap();
        let edges = |g: &FileGraph| g.loaded.as_ref().map(|l| (l.vertices, l.edges.clone()));
        assert_eq!(edges(&g), Some((3, vec![(0, 0), (0, 1), (2, 2), (1, 0)])));
        g.self_loops = SelfLoops::Drop;
        g.load_text(text).unwrap();
        assert_eq!(edges(&g), Some((3, vec![(0, 1), (1, 0)])), "vertex 2 stays, isolated");
        let e = g.load_text("1 1\n").unwrap_err();
        assert_eq!(e, (0, "no edges but self-loops, and self_loops = \"drop\"".to_string()));
        // The key reads from TOML, and only for a file graph.
        let spec: GraphSpec =
            toml::from_str("file = \"g.txt\"\nformat = \"snap\"\nself_loops = \"drop\"\n").unwrap();
        assert!(matches!(spec, GraphSpec::File(FileGraph { self_loops: SelfLoops::Drop, .. })));
        let e = toml::from_str::<GraphSpec>(
            "generator = \"rmat\"\nscale = 4\nedge_factor = 2\nself_loops = \"keep\"\n",
        );
        assert!(e.unwrap_err().to_string().contains("self_loops are for a graph from a file"));
    }

    fn rmat(scale: u32, edge_factor: u32) -> GraphSpec {
        GraphSpec::Rmat { scale, edge_factor, a: 0.57, b: 0.19, c: 0.19, fanout: None }
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
        let spec = GraphSpec::Rmat { scale: 12, edge_factor: 16, a: 0.25, b: 0.25, c: 0.25, fanout: None };
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
    fn sampling_keeps_at_most_fanout_neighbours_in_order() {
        let g = generate(&rmat(10, 16), &mut Pcg64::seed_from_u64(2));
        let (s, kept) = g.sample(5, &mut Pcg64::seed_from_u64(3));
        assert_eq!(s.offsets.len(), g.offsets.len());
        assert_eq!(kept.iter().filter(|&&k| k).count(), s.sources.len());
        let mut sampled_some = false;
        for v in 0..g.offsets.len() - 1 {
            let (lo, hi) = (g.offsets[v] as usize, g.offsets[v + 1] as usize);
            let bag = &s.sources[s.offsets[v] as usize..s.offsets[v + 1] as usize];
            // min(degree, fanout) neighbours: the kept entries of the original bag, in its order.
            assert_eq!(bag.len(), (hi - lo).min(5), "vertex {v}");
            let kept_here: Vec<u32> = (lo..hi).filter(|&i| kept[i]).map(|i| g.sources[i]).collect();
            assert_eq!(bag, kept_here.as_slice(), "vertex {v}");
            sampled_some |= hi - lo > 5;
        }
        assert!(sampled_some, "the graph has vertices above the fanout");
        // Seeded: the same draw again, another with another seed.
        assert_eq!(g.sample(5, &mut Pcg64::seed_from_u64(3)).0, s);
        assert_ne!(g.sample(5, &mut Pcg64::seed_from_u64(4)).0, s);
        // A fanout at or above every degree keeps the graph.
        let max = g.degrees().max().unwrap();
        assert_eq!(g.sample(max, &mut Pcg64::seed_from_u64(3)).0, g);
    }

    #[test]
    fn sampling_draws_every_neighbour_alike() {
        // One vertex with 8 in-neighbours, 3 sampled: each is kept with probability 3/8.
        let g = Csr { offsets: vec![0, 8], sources: (0..8).collect() };
        let mut rng = Pcg64::seed_from_u64(11);
        let mut count = [0u32; 8];
        let trials = 8000;
        for _ in 0..trials {
            let (s, _) = g.sample(3, &mut rng);
            assert!(s.sources.windows(2).all(|w| w[0] < w[1]), "distinct, in order: {:?}", s.sources);
            for &x in &s.sources {
                count[x as usize] += 1;
            }
        }
        // Expected 3000 each, standard deviation about 43.
        for (x, &c) in count.iter().enumerate() {
            assert!((2800..=3200).contains(&c), "neighbour {x} kept {c} times of {trials}");
        }
    }

    #[test]
    fn fanout_reads_from_toml_for_either_graph_and_must_be_positive() {
        let spec: GraphSpec =
            toml::from_str("generator = \"rmat\"\nscale = 4\nedge_factor = 2\nfanout = 3\n").unwrap();
        assert_eq!(spec.fanout(), Some(3));
        assert!(spec.check().is_ok());
        let spec: GraphSpec = toml::from_str("file = \"g.txt\"\nformat = \"snap\"\nfanout = 7\n").unwrap();
        assert_eq!(spec.fanout(), Some(7));
        assert_eq!(rmat(4, 2).fanout(), None);
        let zero = GraphSpec::Rmat { scale: 4, edge_factor: 2, a: 0.57, b: 0.19, c: 0.19, fanout: Some(0) };
        assert_eq!(zero.check().unwrap_err().0, "graph.fanout");
    }

    #[test]
    fn bad_parameters_are_named() {
        assert_eq!(rmat(0, 4).check().unwrap_err().0, "graph.scale");
        assert_eq!(rmat(40, 4).check().unwrap_err().0, "graph.scale");
        assert_eq!(rmat(8, 0).check().unwrap_err().0, "graph.edge_factor");
        let over = GraphSpec::Rmat { scale: 8, edge_factor: 4, a: 0.6, b: 0.3, c: 0.3, fanout: None };
        assert_eq!(over.check().unwrap_err().0, "graph.c");
        let nan = GraphSpec::Rmat { scale: 8, edge_factor: 4, a: f64::NAN, b: 0.1, c: 0.1, fanout: None };
        assert_eq!(nan.check().unwrap_err().0, "graph.a");
        assert!(rmat(8, 4).check().is_ok());
    }
}
