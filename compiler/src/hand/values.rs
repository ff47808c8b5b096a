//! The values of a template's placeholders for one core's job: addresses from the layout, the
//! job's ranges, the workload's shapes, and the `.for` blocks' repetition counts.

use crate::layout::{KgLayout, Scratch, TtLayout};
use crate::workload::{TtShape, WorkloadSpec};
use std::ops::Range;

/// The kinds of `.for` block: what one repetition of the block stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Block {
    /// A vector of a row (`ceil(dim / lanes)` of them).
    Chunk,
    /// A vector of half a row (`ceil(dim / 2 / lanes)`; ComplEx's real and imaginary parts).
    Half,
    /// A vector lane (`lanes` of them).
    Lane,
}

impl Block {
    pub(super) fn parse(word: &str) -> Option<Block> {
        match word {
            "chunk" => Some(Block::Chunk),
            "half" => Some(Block::Half),
            "lane" => Some(Block::Lane),
            _ => None,
        }
    }
}

/// The addresses and sizes one core's instance is made of.
pub(super) struct Values<'a> {
    pub(super) spec: &'a WorkloadSpec,
    pub(super) offsets: u64,
    pub(super) indices: u64,
    pub(super) weights: Option<u64>,
    /// Destination of each edge (message passing).
    pub(super) dst: Option<u64>,
    /// This core's edges (message passing).
    pub(super) edges: Option<Range<u64>>,
    /// Knowledge-graph scoring's extra arrays.
    pub(super) kg: Option<KgLayout>,
    /// TT-EmbeddingBag's descriptors and scratch, with its shape.
    pub(super) tt: Option<(TtLayout, Scratch, TtShape)>,
    pub(super) tables: u64,
    pub(super) out: u64,
    pub(super) bags: Range<u64>,
    pub(super) lookups: Range<u64>,
    pub(super) lanes: u32,
    pub(super) au_lanes: u32,
    pub(super) core: usize,
    pub(super) cores: usize,
    /// Stand-in values for [`check`]: every placeholder has one.
    pub(super) stand_in: bool,
}

pub(super) const NOT_SCATTER: &str = "the workload has no edge list (only op = \"gnn_scatter\" has)";
pub(super) const NOT_KG: &str = "the workload has no triples (only op = \"kg_score\" has)";
pub(super) const NOT_TT: &str = "the workload has no tensor-train cores (only op = \"tt_embedding_bag\" has)";

impl Values<'_> {
    pub(super) fn chunks(&self) -> u64 {
        u64::from(self.spec.dim).div_ceil(u64::from(self.lanes.max(1)))
    }

    /// Columns of half a row, if `dim` is even.
    pub(super) fn half(&self) -> Result<u64, String> {
        let dim = u64::from(self.spec.dim);
        if dim % 2 == 1 && !self.stand_in {
            return Err(format!("dim = {dim} is odd: a row has no halves"));
        }
        Ok(dim / 2)
    }

    pub(super) fn halves(&self) -> Result<u64, String> {
        Ok(self.half()?.div_ceil(u64::from(self.lanes.max(1))))
    }

    /// The value of a TT-EmbeddingBag placeholder, `None` for a workload without TT cores.
    pub(super) fn tt_value(&self, name: &str) -> Option<Result<String, String>> {
        let (l, scratch, t) = self.tt.as_ref()?;
        let lanes = u64::from(self.lanes.max(1));
        let rank = u64::from(t.rank);
        let core_scratch =
            scratch.base + (self.core as u64).min(u64::from(scratch.cores).saturating_sub(1)) * scratch.bytes;
        let n = match name {
            "rank" => rank,
            "rank_bytes" => 4 * rank,
            "rank_chunks" => rank.div_ceil(lanes),
            "d1" | "d2" | "d3" => t.factor(usize::from(name.as_bytes()[1] - b'1')).1,
            "n1" | "n2" | "n3" => t.factor(usize::from(name.as_bytes()[1] - b'1')).0,
            "stride1" => t.stride(0),
            "stride2" => t.stride(1),
            "g1_start" | "g2_start" | "g3_start" => t.core_start(usize::from(name.as_bytes()[1] - b'1')),
            "g1_rows" | "g2_rows" | "g3_rows" => t.slice_rows(usize::from(name.as_bytes()[1] - b'1')),
            "slice_rows" => t.lookup_rows(),
            "tt_rows" => return Some(Ok(format!("{:#x}", l.descriptors))),
            "tt_scratch" => return Some(Ok(format!("{core_scratch:#x}"))),
            "tt_scratch_bytes" => scratch.bytes,
            "tt_acc" => {
                let need = u64::from(self.spec.dim) * rank * 4;
                if need > scratch.bytes && !self.stand_in {
                    return Some(Err(format!(
                        "the core's scratch ({} bytes) cannot hold dim x rank = {} x {rank} f32 \
                         ({need} bytes)",
                        scratch.bytes, self.spec.dim
                    )));
                }
                return Some(Ok(format!("{core_scratch:#x}")));
            }
            _ => return None,
        };
        Some(Ok(n.to_string()))
    }

    /// How many times a `.for` block of `kind` repeats.
    pub(super) fn repeats(&self, kind: Block) -> Result<u64, String> {
        match kind {
            Block::Chunk => Ok(self.chunks()),
            Block::Half => self.halves(),
            Block::Lane => Ok(u64::from(self.lanes)),
        }
    }

    /// The value of placeholder `name` (repetition `i` of a `.for` block of kind `kind` inside
    /// one): `None` if no placeholder has that name, `Some(Err(why))` if it has no value here.
    pub(super) fn get(&self, name: &str, block: Option<(Block, u64)>) -> Option<Result<String, String>> {
        let row_bytes = self.spec.row_bytes();
        // The templates load rows with `vld` (f32 lanes): other dtypes need the compiler.
        if self.spec.dtype != crate::workload::Dtype::F32
            && matches!(name, "row_bytes" | "chunk_offset" | "imag_offset" | "tables")
        {
            return Some(Err(format!(
                "the hand-written templates read f32 rows; dtype = {:?} needs the compiled programs",
                self.spec.dtype
            )));
        }
        // The templates stack tables at `t * rows`: tables of their own rows need the compiler.
        if !self.spec.uniform_tables() && matches!(name, "rows" | "stored_rows") {
            return Some(Err(
                "the tables differ in rows ([[table_indices]] rows): the templates' table base `t * rows` \
                 does not find them; use the compiled programs"
                    .into(),
            ));
        }
        let hex = |a: u64| Ok(format!("{a:#x}"));
        let dec = |n: u64| Ok(n.to_string());
        let lanes = u64::from(self.lanes);
        let dim = u64::from(self.spec.dim);
        let inside = |kinds: &[Block], f: &dyn Fn(u64) -> Result<u64, String>| match block {
            Some((k, c)) if kinds.contains(&k) => f(c).map(|n| n.to_string()),
            _ => Err(match kinds {
                [Block::Chunk] => "only inside a `.for chunk` block".to_string(),
                [Block::Half] => "only inside a `.for half` block".to_string(),
                [Block::Lane] => "only inside a `.for lane` block".to_string(),
                _ => "only inside a `.for chunk` or `.for half` block".to_string(),
            }),
        };
        let chunk_or_half = [Block::Chunk, Block::Half];
        let kg =
            |f: &dyn Fn(&KgLayout) -> u64| self.kg.as_ref().map_or(Err(NOT_KG.to_string()), |k| hex(f(k)));
        let is_kg = self.kg.is_some();
        Some(match name {
            "offsets" => hex(self.offsets),
            "offsets_next" => hex(self.offsets + 4),
            "indices" => hex(self.indices),
            "weights" => match self.weights {
                Some(w) => hex(w),
                None => Err("the workload has no per-lookup weights (`weights = true`)".into()),
            },
            "tables" => hex(self.tables),
            "out" => hex(self.out),
            "out_start" => hex(self.out + self.bags.start * self.spec.out_row_bytes()),
            "out_end" => hex(self.out + self.bags.end * self.spec.out_row_bytes()),
            "bag_start" => dec(self.bags.start),
            "bag_end" => dec(self.bags.end),
            "bags" => dec(self.bags.end - self.bags.start),
            "lookup_start" => dec(self.lookups.start),
            "lookup_end" => dec(self.lookups.end),
            "rows" => dec(self.spec.rows),
            "stored_rows" => dec(self.spec.stored_rows()),
            "dim" => dec(u64::from(self.spec.dim)),
            "row_bytes" => dec(row_bytes),
            "batch" => dec(u64::from(self.spec.batch.max(1))),
            "num_tables" => dec(u64::from(self.spec.tables)),
            "lanes" => dec(lanes),
            "au_lanes" => dec(u64::from(self.au_lanes)),
            "chunks" => dec(self.chunks()),
            "vfree" => dec(2 * self.chunks()),
            "vfree1" => dec(2 * self.chunks() + 1),
            "vfree2" => dec(2 * self.chunks() + 2),
            "vfree3" => dec(2 * self.chunks() + 3),
            "core" => dec(self.core as u64),
            "cores" => dec(self.cores as u64),
            "out_row_bytes" => dec(self.spec.out_row_bytes()),
            "src" => self.dst.map_or(Err(NOT_SCATTER.into()), |_| hex(self.indices)),
            "dst" => self.dst.map_or(Err(NOT_SCATTER.into()), hex),
            "edge_start" => self.edges.as_ref().map_or(Err(NOT_SCATTER.into()), |e| dec(e.start)),
            "edge_end" => self.edges.as_ref().map_or(Err(NOT_SCATTER.into()), |e| dec(e.end)),
            "edges" => self.edges.as_ref().map_or(Err(NOT_SCATTER.into()), |e| dec(e.end - e.start)),
            "heads" => kg(&|k| k.heads),
            "rels" => kg(&|k| k.relations),
            "relation_table" => kg(&|k| k.relation_table),
            "relations" if is_kg => dec(self.spec.relations),
            "candidates" if is_kg => dec(self.spec.out_width()),
            "negatives" if is_kg => dec(u64::from(self.spec.negatives)),
            "relations" | "candidates" | "negatives" => Err(NOT_KG.into()),
            "rank" | "rank_bytes" | "rank_chunks" | "d1" | "d2" | "d3" | "n1" | "n2" | "n3" | "stride1"
            | "stride2" | "g1_start" | "g2_start" | "g3_start" | "g1_rows" | "g2_rows" | "g3_rows"
            | "slice_rows" | "tt_rows" | "tt_scratch" | "tt_scratch_bytes" | "tt_acc" => {
                self.tt_value(name).unwrap_or_else(|| Err(NOT_TT.to_string()))
            }
            "half" => self.half().map(|h| h.to_string()),
            "halves" => self.halves().map(|h| h.to_string()),
            "chunk" => inside(&chunk_or_half, &|c| Ok(c)),
            "chunk_offset" => inside(&chunk_or_half, &|c| Ok(c * lanes * 4)),
            "chunk_lanes" => match block {
                Some((Block::Half, c)) => self.half().map(|h| lanes.min(h - c * lanes).to_string()),
                _ => inside(&[Block::Chunk], &|c| Ok(lanes.min(dim - c * lanes))),
            },
            "acc" => inside(&[Block::Chunk], &|c| Ok(c)),
            "tmp" => inside(&[Block::Chunk], &|c| Ok(self.chunks() + c)),
            "imag_offset" => inside(&[Block::Half], &|c| Ok((self.half()? + c * lanes) * 4)),
            "re" => inside(&[Block::Half], &|c| Ok(c)),
            "im" => inside(&[Block::Half], &|c| Ok(self.halves()? + c)),
            "lane" => inside(&[Block::Lane], &|l| Ok(l)),
            _ => return None,
        })
    }
}
