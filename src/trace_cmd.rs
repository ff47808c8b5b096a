//! `dae-sim trace gen`, `dae-sim trace info`, `dae-sim trace criteo`, `dae-sim trace locality`
//! and `dae-sim trace fit`: seeded synthetic traces (embedding lookups as `.daeidx` or `.npy`,
//! R-MAT graphs as SNAP edge lists, knowledge-graph triples), the figures of a trace (counts,
//! bag sizes, unique rows, reuse histogram, working set), Criteo click logs converted to a
//! `.daeidx` trace of 26 tables ([`crate::criteo`]), and Meta's locality statistics with the
//! Zipf exponent that best matches them ([`crate::locality`]).
//!
//! `info` streams a `.daeidx` trace section by section; what it keeps is a count per distinct
//! row (per table), which the unique-row and reuse figures need.

use clap::{Args, Subcommand, ValueEnum};
use compiler::indices::IndexGenerator;
use compiler::trace::{Header, IndexDtype, TraceError, TraceReader, TraceWriter};
use compiler::{Dtype, GraphFormat, GraphSpec, IndexDistribution};
use rand::Rng;
use serde_json::{Value, json};
use sim_core::SeedTree;
use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use thiserror::Error;

/// Why a `trace` command failed.
#[derive(Debug, Error)]
pub enum TraceCmdError {
    /// A `.daeidx` file is bad or could not be written.
    #[error(transparent)]
    Trace(#[from] TraceError),
    /// A `.npy` file could not be written.
    #[error(transparent)]
    NpyWrite(#[from] crate::npy::NpyError),
    /// A `.npy` file could not be read.
    #[error(transparent)]
    NpyRead(#[from] crate::npy_read::NpyReadError),
    /// A locality-statistics file is bad.
    #[error(transparent)]
    Locality(#[from] crate::locality::LocalityError),
    /// A text file (a Criteo file among them) could not be read or written.
    #[error("{file}: {error}")]
    Io {
        /// The file.
        file: String,
        /// What the system said.
        error: std::io::Error,
    },
    /// A data file could not be read (a `.gz` one among them: [`crate::data_file`]).
    #[error(transparent)]
    DataFile(#[from] crate::data_file::DataFileError),
    /// A text file's line is bad (`line` 0: the file as a whole, named without a line).
    #[error("{file}{}: {message}", at_line(*.line))]
    Parse {
        /// The file.
        file: String,
        /// The 1-based line.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// The options do not make sense together.
    #[error("{0}")]
    Usage(String),
}

/// `:LINE` for a 1-based line, nothing for 0 (the file as a whole).
fn at_line(line: usize) -> String {
    if line == 0 { String::new() } else { format!(":{line}") }
}

fn usage(message: impl Into<String>) -> TraceCmdError {
    TraceCmdError::Usage(message.into())
}

/// `dae-sim trace ...`.
#[derive(Subcommand, Debug)]
pub enum TraceCommand {
    /// Generate a seeded synthetic trace: embedding lookups (.daeidx or .npy), an R-MAT graph
    /// (SNAP edge list) or knowledge-graph triples (TSV).
    Gen(GenArgs),
    /// Print a trace's figures: counts, bag sizes, unique rows, reuse histogram, working set.
    Info(InfoArgs),
    /// Convert Criteo click logs (TSV: label, I1..I13, C1..C26) to a .daeidx trace of 26
    /// tables, one lookup per record and table, row = categorical value mod --rows.
    Criteo(CriteoArgs),
    /// Print the blocks of a locality-statistics file (Meta's dlrm_datasets
    /// `locality_stats.txt`): lookups, unique rows, unique fraction, reuse histogram.
    Locality(LocalityArgs),
    /// Fit the Zipf exponent whose generated lookups best match a block of a
    /// locality-statistics file (reuse histogram of rows and of lookups).
    Fit(FitArgs),
}

/// `trace locality`'s options.
#[derive(Args, Debug, Clone)]
pub struct LocalityArgs {
    /// The locality-statistics file.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// Only this block (0-based, in file order).
    #[arg(long, value_name = "N")]
    pub block: Option<usize>,
    /// JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// `trace fit`'s options.
#[derive(Args, Debug, Clone)]
pub struct FitArgs {
    /// The locality-statistics file.
    #[arg(long, value_name = "FILE")]
    pub locality: PathBuf,
    /// The block to fit (0-based, in file order).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub block: usize,
    /// Rows of the generated table.
    #[arg(long, value_name = "R")]
    pub rows: u64,
    /// Lookups generated per evaluation (default: the block's lookups per table, from the
    /// `_t<N>_` of its name).
    #[arg(long, value_name = "L")]
    pub lookups: Option<u64>,
    /// Seed of the draws (the same draws for every alpha).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Smallest alpha searched.
    #[arg(long, default_value_t = 0.5)]
    pub min_alpha: f64,
    /// Largest alpha searched.
    #[arg(long, default_value_t = 2.0)]
    pub max_alpha: f64,
    /// Grid points over [min, max] before the golden-section refinement.
    #[arg(long, default_value_t = 31)]
    pub grid: u32,
    /// JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// What a missing categorical value becomes (`trace criteo --missing`).
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum MissingArg {
    /// The value 0, so row 0, as DLRM's preprocessing reads an empty field: every bag holds
    /// one lookup.
    Zero,
    /// No lookup: the bag is empty.
    Drop,
}

/// `trace criteo`'s options.
#[derive(Args, Debug, Clone)]
pub struct CriteoArgs {
    /// The Criteo TSV file (`<label>\t<I1>..<I13>\t<C1>..<C26>` lines; trailing empty fields
    /// may be trimmed).
    #[arg(value_name = "INPUT")]
    pub input: PathBuf,
    /// Output .daeidx file.
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
    /// Rows of every table, the hash size: categorical value v goes to row v mod N.
    #[arg(long, value_name = "N")]
    pub rows: u64,
    /// Records per batch (bags per table); a last partial batch is dropped.
    #[arg(long, default_value_t = 128)]
    pub batch: u64,
    /// Convert only the first N records.
    #[arg(long, value_name = "N")]
    pub records: Option<u64>,
    /// What a missing categorical value becomes.
    #[arg(long, value_enum, default_value_t = MissingArg::Zero)]
    pub missing: MissingArg,
}

/// What `trace gen` makes.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum GenKind {
    /// Embedding-bag lookups.
    Embedding,
    /// An R-MAT graph (Graph500: a = 0.57, b = 0.19, c = 0.19), as a SNAP edge list.
    Rmat,
    /// Knowledge-graph triples, `head\trelation\ttail` a line.
    Kg,
}

/// The index distribution of `trace gen`.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum DistArg {
    /// Every row equally likely.
    Uniform,
    /// Zipf with exponent --alpha, popularity ranks randomly permuted onto row ids.
    Zipf,
}

/// The output format of embedding lookups.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutFormat {
    /// dae-sim's binary index trace (traces/README.md).
    Daeidx,
    /// Two .npy files, Meta's layout: OUT.offsets.npy (tables x batch + 1, int64, table-major
    /// CSR) and OUT.indices.npy (int64).
    Npy,
}

/// The row id type of a `.daeidx` file.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum IdType {
    /// 32-bit row ids.
    U32,
    /// 64-bit row ids.
    U64,
}

/// `trace gen`'s options.
#[derive(Args, Debug, Clone)]
pub struct GenArgs {
    /// What to generate.
    #[arg(long, value_enum, default_value_t = GenKind::Embedding)]
    pub kind: GenKind,
    /// Output file (.daeidx; with --format npy, OUT.offsets.npy and OUT.indices.npy).
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
    /// Master seed: the same seed and options give the same file.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Embedding: tables.
    #[arg(long, default_value_t = 1)]
    pub tables: u32,
    /// Embedding: rows per table.
    #[arg(long, default_value_t = 1_000_000)]
    pub rows: u64,
    /// Embedding: bags per table in a batch.
    #[arg(long, default_value_t = 256)]
    pub batch: u64,
    /// Embedding: lookups drawn per bag (fewer with --dedup).
    #[arg(long, default_value_t = 20, value_parser = at_least_one::<u64>())]
    pub bag_size: u64,
    /// Embedding: batches, one after the other.
    #[arg(long, default_value_t = 1)]
    pub batches: u32,
    /// Embedding: index distribution (kg: of the entities).
    #[arg(long, value_enum, default_value_t = DistArg::Uniform)]
    pub distribution: DistArg,
    /// Zipf exponent, with --distribution zipf [default: 1.05].
    #[arg(long)]
    pub alpha: Option<f64>,
    /// Embedding: drop repeated rows within a bag (bags then hold at most --bag-size).
    #[arg(long)]
    pub dedup: bool,
    /// Embedding: sort each bag's row ids.
    #[arg(long)]
    pub sorted: bool,
    /// Embedding: fraction of each batch's lookups (after the first batch) drawn from the
    /// previous batch's lookups of the same table, 0 to 1.
    #[arg(long, default_value_t = 0.0)]
    pub reuse: f64,
    /// Embedding: output format.
    #[arg(long, value_enum, default_value_t = OutFormat::Daeidx)]
    pub format: OutFormat,
    /// Embedding: row id type of a .daeidx file [default: u32 if rows fit, else u64].
    #[arg(long, value_enum)]
    pub id_type: Option<IdType>,
    /// R-MAT: log2 of the vertex count.
    #[arg(long, default_value_t = 10)]
    pub scale: u32,
    /// R-MAT: edges per vertex.
    #[arg(long, default_value_t = 16)]
    pub edge_factor: u32,
    /// KG: entities.
    #[arg(long, default_value_t = 1000)]
    pub entities: u64,
    /// KG: relations.
    #[arg(long, default_value_t = 10)]
    pub relations: u64,
    /// KG: triples.
    #[arg(long, default_value_t = 10_000, value_parser = at_least_one::<u64>())]
    pub triples: u64,
}

/// What `trace info` reads.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum InfoKind {
    /// A .daeidx index trace.
    Daeidx,
    /// A .npy offsets/indices pair (--offsets, --indices).
    Npy,
    /// A SNAP edge list (`from to` lines).
    Snap,
    /// LINQS Cora's `.cites` (`cited citing` lines).
    Cora,
    /// A Matrix Market coordinate file (`.mtx`).
    Mtx,
    /// Knowledge-graph triples (`head relation tail` integer lines, or names with
    /// --entity-dict and --relation-dict).
    Kg,
}

/// The row type for the working-set estimate.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowDtype {
    /// 32-bit float.
    F32,
    /// 16-bit float.
    F16,
    /// bfloat16.
    Bf16,
    /// int8 rows with an f32 scale and bias.
    Int8,
}

/// `trace info`'s options.
#[derive(Args, Debug, Clone)]
pub struct InfoArgs {
    /// The trace (a .daeidx file, a graph or a triples file).
    #[arg(value_name = "FILE", required_unless_present = "offsets")]
    pub file: Option<PathBuf>,
    /// What FILE is [default: daeidx for .daeidx, cora for .cites, mtx for .mtx (also with .gz
    /// after), npy with --offsets]. A graph or triples file ending in .gz is decompressed.
    #[arg(long, value_enum)]
    pub kind: Option<InfoKind>,
    /// A .npy offsets file (table-major CSR over tables x batch), instead of FILE.
    #[arg(long, value_name = "FILE", requires = "indices", conflicts_with = "file")]
    pub offsets: Option<PathBuf>,
    /// The .npy row ids that go with --offsets.
    #[arg(long, value_name = "FILE", requires = "offsets")]
    pub indices: Option<PathBuf>,
    /// Tables in the .npy pair (the offsets split into this many tables).
    #[arg(long, default_value_t = 1)]
    pub tables: u64,
    /// Values per row, for the working set [default: 64].
    #[arg(long, value_parser = at_least_one::<u32>())]
    pub dim: Option<u32>,
    /// Row type, for the working set [default: f32].
    #[arg(long, value_enum)]
    pub dtype: Option<RowDtype>,
    /// Knowledge-graph triples written with names: the entity dictionary (`<id>\t<name>`
    /// lines, dense ids).
    #[arg(long, value_name = "FILE", requires = "relation_dict")]
    pub entity_dict: Option<PathBuf>,
    /// The relation dictionary that goes with --entity-dict.
    #[arg(long, value_name = "FILE", requires = "entity_dict")]
    pub relation_dict: Option<PathBuf>,
    /// JSON instead of the text table.
    #[arg(long)]
    pub json: bool,
}

/// Runs a `trace` command, printing on `out`.
pub fn run(cmd: &TraceCommand, out: &mut dyn Write) -> Result<(), TraceCmdError> {
    let written = match cmd {
        TraceCommand::Gen(a) => gen_cmd(a).map(|files| {
            let names: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
            format!("wrote {}\n", names.join(", "))
        })?,
        TraceCommand::Info(a) => info(a)?,
        TraceCommand::Criteo(a) => criteo_cmd(a)?.to_string(),
        TraceCommand::Locality(a) => locality_cmd(a)?,
        TraceCommand::Fit(a) => fit_cmd(a)?,
    };
    out.write_all(written.as_bytes()).map_err(|error| TraceCmdError::Io { file: "stdout".into(), error })
}

// ---------------------------------------------------------------------------------------------
// trace gen

/// Generates what `a` asks for; the files written.
pub fn gen_cmd(a: &GenArgs) -> Result<Vec<PathBuf>, TraceCmdError> {
    match a.kind {
        GenKind::Embedding => gen_embedding(a),
        GenKind::Rmat => gen_rmat(a),
        GenKind::Kg => gen_kg(a),
    }
}

/// The parser of a command-line count that must be at least one (zero would run nothing, or
/// write an empty trace).
pub fn at_least_one<T: TryFrom<u64> + Clone + Send + Sync + 'static>()
-> clap::builder::RangedU64ValueParser<T> {
    clap::builder::RangedU64ValueParser::<T>::new().range(1..)
}

fn distribution(a: &GenArgs) -> Result<IndexDistribution, TraceCmdError> {
    match (a.distribution, a.alpha) {
        // An exponent the uniform draws would silently ignore.
        (DistArg::Uniform, Some(alpha)) => {
            Err(usage(format!("--alpha {alpha}: applies to --distribution zipf, not uniform")))
        }
        (DistArg::Uniform, None) => Ok(IndexDistribution::Uniform),
        (DistArg::Zipf, alpha) => match alpha.unwrap_or(1.05) {
            alpha if alpha.is_finite() && alpha > 0.0 => Ok(IndexDistribution::Zipf { alpha }),
            alpha => Err(usage(format!("--alpha {alpha}: must be a positive number"))),
        },
    }
}

/// Draws the sections of an embedding trace, batch by batch and table by table, handing each
/// (offsets, row ids) to `sink`; one section's arrays and one batch's row ids per table (for
/// --reuse) are held.
fn draw_sections(
    a: &GenArgs,
    dist: IndexDistribution,
    mut sink: impl FnMut(&[u64], &[u64]) -> Result<(), TraceCmdError>,
) -> Result<(), TraceCmdError> {
    let seeds = SeedTree::new(a.seed);
    let mut gens: Vec<IndexGenerator> = (0..a.tables)
        .map(|t| IndexGenerator::new(dist, a.rows, seeds.stream(&format!("trace.table{t}"))))
        .collect();
    let mut reuse_rng = seeds.stream("trace.reuse");
    let mut previous: Vec<Vec<u64>> = vec![Vec::new(); a.tables as usize];
    let mut bag = Vec::new();
    for _ in 0..a.batches {
        for t in 0..a.tables as usize {
            let (mut offsets, mut ids) = (vec![0u64], Vec::new());
            for _ in 0..a.batch {
                bag.clear();
                for _ in 0..a.bag_size {
                    let prev = &previous[t];
                    // 53 random bits against the ratio: exact for 0 and 1.
                    let u = (reuse_rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
                    let id = if !prev.is_empty() && u < a.reuse {
                        prev[(reuse_rng.next_u64() % prev.len() as u64) as usize]
                    } else {
                        gens[t].next_index()
                    };
                    bag.push(id);
                }
                if a.dedup {
                    // Keeps each row's first lookup, in draw order.
                    let mut seen = std::collections::HashSet::with_capacity(bag.len());
                    bag.retain(|&i| seen.insert(i));
                }
                if a.sorted {
                    bag.sort_unstable();
                }
                ids.extend_from_slice(&bag);
                offsets.push(ids.len() as u64);
            }
            sink(&offsets, &ids)?;
            if a.reuse > 0.0 {
                previous[t] = ids;
            }
        }
    }
    Ok(())
}

/// Whether this machine can allocate `n` values of `T` at once (`None`: a count beyond the
/// address space).
fn allocatable<T>(n: Option<usize>) -> bool {
    n.is_some_and(|n| Vec::<T>::new().try_reserve_exact(n).is_ok())
}

/// The options of an embedding trace, checked before any file is created (a refused run
/// leaves nothing behind): the distribution it gives, or why not. The row ids held at once
/// must also fit this machine's memory: a section's (`batch x bag_size`) per table, which
/// `--reuse` draws from, and for `.npy` every table's.
fn check_gen(a: &GenArgs) -> Result<IndexDistribution, TraceCmdError> {
    let dist = distribution(a)?;
    if a.tables == 0 || a.rows == 0 || a.batch == 0 || a.batches == 0 {
        return Err(usage("--tables, --rows, --batch and --batches must be at least 1"));
    }
    if !(0.0..=1.0).contains(&a.reuse) {
        return Err(usage(format!("--reuse {}: must be between 0 and 1", a.reuse)));
    }
    // One index generator and one previous section per table, held for the whole run.
    let per_table = std::mem::size_of::<IndexGenerator>() + std::mem::size_of::<Vec<u64>>();
    let state = usize::try_from(a.tables).ok().and_then(|t| t.checked_mul(per_table));
    if !allocatable::<u8>(state) {
        return Err(usage(format!(
            "--tables {}: a generator per table ({per_table} B each) is more than this machine can allocate",
            a.tables
        )));
    }
    // A section being drawn, each table's previous one when --reuse draws from it, and for
    // .npy every table's row ids, twice over while they are converted.
    let section = a.batch.checked_mul(a.bag_size);
    let kept = if a.reuse > 0.0 { u64::from(a.tables) } else { 0 };
    let held = match a.format {
        OutFormat::Daeidx => section.and_then(|n| n.checked_mul(1 + kept)),
        OutFormat::Npy => section.and_then(|n| n.checked_mul(1 + kept + 2 * u64::from(a.tables))),
    };
    if !allocatable::<u64>(held.and_then(|n| usize::try_from(n).ok())) {
        return Err(usage(format!(
            "--batch {} x --bag-size {} over {} tables: {} row ids held at once, more than this machine \
             can allocate ({})",
            a.batch,
            a.bag_size,
            a.tables,
            held.map_or_else(|| "over 2^64".to_string(), |n| n.to_string()),
            match a.format {
                OutFormat::Daeidx =>
                    "a .daeidx trace is drawn one table's bags of a batch at a time: shrink \
                                      --batch or --bag-size and raise --batches",
                OutFormat::Npy =>
                    "a .npy pair holds the whole batch: shrink --batch, --bag-size or --tables, \
                                   or write a .daeidx trace",
            }
        )));
    }
    Ok(dist)
}

fn gen_embedding(a: &GenArgs) -> Result<Vec<PathBuf>, TraceCmdError> {
    let dist = check_gen(a)?;
    match a.format {
        OutFormat::Daeidx => {
            let dtype = match a.id_type {
                Some(IdType::U64) => IndexDtype::U64,
                Some(IdType::U32) => IndexDtype::U32,
                None if a.rows <= IndexDtype::U32.max_rows() => IndexDtype::U32,
                None => IndexDtype::U64,
            };
            let mut w =
                TraceWriter::create(&a.out, Header::new(dtype, a.tables, a.batches, a.batch, a.rows))?;
            draw_sections(a, dist, |o, i| w.write_section(o, i).map_err(Into::into))?;
            w.finish()?;
            Ok(vec![a.out.clone()])
        }
        OutFormat::Npy => {
            if a.batches != 1 {
                return Err(usage("--format npy holds one batch (tables x batch bags): use --batches 1"));
            }
            if a.rows > i64::MAX as u64 {
                return Err(usage(format!("--rows {}: .npy row ids are int64", a.rows)));
            }
            let (mut offsets, mut indices) = (vec![0i64], Vec::new());
            draw_sections(a, dist, |o, i| {
                let base = indices.len() as i64;
                offsets.extend(o[1..].iter().map(|&x| base + x as i64));
                indices.extend(i.iter().map(|&x| x as i64));
                Ok(())
            })?;
            let stem = a.out.with_extension("");
            let (op, ip) = (stem.with_extension("offsets.npy"), stem.with_extension("indices.npy"));
            crate::npy::write(&op, &[offsets.len()], &offsets)?;
            crate::npy::write(&ip, &[indices.len()], &indices)?;
            Ok(vec![op, ip])
        }
    }
}

fn create_text(path: &Path) -> Result<std::io::BufWriter<std::fs::File>, TraceCmdError> {
    std::fs::File::create(path)
        .map(std::io::BufWriter::new)
        .map_err(|error| TraceCmdError::Io { file: path.display().to_string(), error })
}

fn gen_rmat(a: &GenArgs) -> Result<Vec<PathBuf>, TraceCmdError> {
    let spec = GraphSpec::Rmat {
        scale: a.scale,
        edge_factor: a.edge_factor,
        a: 0.57,
        b: 0.19,
        c: 0.19,
        fanout: None,
    };
    spec.check().map_err(|(field, m)| {
        usage(format!("--{}: {m}", field.trim_start_matches("graph.").replace('_', "-")))
    })?;
    let mut rng = SeedTree::new(a.seed).stream("trace.rmat");
    let edges = compiler::graph::generate_edges(&spec, &mut rng);
    let mut f = create_text(&a.out)?;
    let io = |error| TraceCmdError::Io { file: a.out.display().to_string(), error };
    writeln!(
        f,
        "# R-MAT graph (Graph500: a = 0.57, b = 0.19, c = 0.19), scale {}, edge factor {}, seed {}\n# {} vertices, {} edges (duplicates and self-loops kept)\n# from\tto",
        a.scale,
        a.edge_factor,
        a.seed,
        spec.vertices(),
        edges.len()
    )
    .map_err(io)?;
    for (s, d) in edges {
        writeln!(f, "{s}\t{d}").map_err(io)?;
    }
    f.flush().map_err(io)?;
    Ok(vec![a.out.clone()])
}

fn gen_kg(a: &GenArgs) -> Result<Vec<PathBuf>, TraceCmdError> {
    if a.entities == 0 || a.relations == 0 {
        return Err(usage("--entities and --relations must be at least 1"));
    }
    let seeds = SeedTree::new(a.seed);
    let dist = distribution(a)?;
    let mut ent = IndexGenerator::new(dist, a.entities, seeds.stream("trace.kg.entities"));
    let mut rel =
        IndexGenerator::new(IndexDistribution::Uniform, a.relations, seeds.stream("trace.kg.relations"));
    let mut f = create_text(&a.out)?;
    let io = |error| TraceCmdError::Io { file: a.out.display().to_string(), error };
    writeln!(
        f,
        "# synthetic KG: {} entities, {} relations, {} triples, seed {}\n# head\trelation\ttail",
        a.entities, a.relations, a.triples, a.seed
    )
    .map_err(io)?;
    for _ in 0..a.triples {
        let (h, r, t) = (ent.next_index(), rel.next_index(), ent.next_index());
        writeln!(f, "{h}\t{r}\t{t}").map_err(io)?;
    }
    f.flush().map_err(io)?;
    Ok(vec![a.out.clone()])
}

// ---------------------------------------------------------------------------------------------
// trace criteo

/// What `trace criteo` wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CriteoSummary {
    /// The trace.
    pub out: PathBuf,
    /// Records converted (`batches x batch`).
    pub records: u64,
    /// Full batches written.
    pub batches: u32,
    /// Records per batch.
    pub batch: u64,
    /// Rows per table.
    pub rows: u64,
    /// Records after the last full batch, not written.
    pub dropped: u64,
    /// Missing categorical values among the records written.
    pub missing: u64,
    /// What a missing value became.
    pub missing_as: MissingArg,
}

impl std::fmt::Display for CriteoSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let missing = match self.missing_as {
            MissingArg::Zero => "read as the value 0 (row 0)",
            MissingArg::Drop => "dropped (empty bags)",
        };
        writeln!(
            f,
            "wrote {}: {} records as {} batches of {} bags x 26 tables, row = value mod {}; \
             {} trailing records (a partial batch) dropped; {} missing values {missing}",
            self.out.display(),
            self.records,
            self.batches,
            self.batch,
            self.rows,
            self.dropped,
            self.missing
        )
    }
}

/// Converts Criteo click logs to a `.daeidx` trace: 26 tables (C1..C26), a bag per record and
/// table holding the row `value mod --rows` (or, for a missing value, row 0 or nothing), batches
/// of `--batch` records; a last partial batch is dropped. The input is read twice, a record at
/// a time: once to check it and count the records (the header needs the batch count), once to
/// write; one batch's row ids are held.
pub fn criteo_cmd(a: &CriteoArgs) -> Result<CriteoSummary, TraceCmdError> {
    use crate::criteo::{CATEGORICAL_FEATURES, CriteoReader, Missing};
    if a.rows == 0 || a.batch == 0 {
        return Err(usage("--rows and --batch must be at least 1"));
    }
    // Creating the output truncates it: the click log must not be it.
    if let (Ok(i), Ok(o)) = (a.input.canonicalize(), a.out.canonicalize())
        && i == o
    {
        return Err(usage(format!(
            "--out {} is the input file itself: writing the trace would erase the click log",
            a.out.display()
        )));
    }
    let limit = a.records.unwrap_or(u64::MAX);
    let mut r = CriteoReader::open(&a.input)?;
    let mut records = 0u64;
    while records < limit && r.next_record()?.is_some() {
        records += 1;
    }
    let (batches, dropped) = (records / a.batch, records % a.batch);
    if batches == 0 {
        return Err(usage(format!(
            "{}: {records} records make no full batch of --batch {}",
            a.input.display(),
            a.batch
        )));
    }
    let batches = u32::try_from(batches)
        .map_err(|_| usage(format!("{batches} batches: more than a .daeidx file holds (2^32 - 1)")))?;
    let dtype = if a.rows <= IndexDtype::U32.max_rows() { IndexDtype::U32 } else { IndexDtype::U64 };
    let header = Header::new(dtype, CATEGORICAL_FEATURES as u32, batches, a.batch, a.rows);
    let mut w = TraceWriter::create(&a.out, header)?;
    let missing_as = match a.missing {
        MissingArg::Zero => Missing::Zero,
        MissingArg::Drop => Missing::Drop,
    };
    let mut r = CriteoReader::open(&a.input)?;
    let mut offsets = vec![vec![0u64]; CATEGORICAL_FEATURES];
    let mut ids = vec![Vec::new(); CATEGORICAL_FEATURES];
    let mut missing = 0u64;
    for _ in 0..batches {
        for t in 0..CATEGORICAL_FEATURES {
            offsets[t].truncate(1);
            ids[t].clear();
        }
        for _ in 0..a.batch {
            let Some(rec) = r.next_record()? else {
                return Err(usage(format!("{}: shorter on the second reading", a.input.display())));
            };
            for (t, v) in rec.into_iter().enumerate() {
                missing += u64::from(v.is_none());
                ids[t].extend(crate::criteo::row(v, a.rows, missing_as));
                offsets[t].push(ids[t].len() as u64);
            }
        }
        for t in 0..CATEGORICAL_FEATURES {
            w.write_section(&offsets[t], &ids[t])?;
        }
    }
    w.finish()?;
    Ok(CriteoSummary {
        out: a.out.clone(),
        records: u64::from(batches) * a.batch,
        batches,
        batch: a.batch,
        rows: a.rows,
        dropped,
        missing,
        missing_as: a.missing,
    })
}

// ---------------------------------------------------------------------------------------------
// trace info

/// Figures of one table (or of all of them).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TableStats {
    /// Bags.
    pub bags: u64,
    /// Lookups.
    pub lookups: u64,
    /// The smallest bag.
    pub min_bag: u64,
    /// The largest bag.
    pub max_bag: u64,
    /// Lookups of each distinct row.
    pub counts: HashMap<u64, u64>,
}

impl TableStats {
    fn bag(&mut self, ids: &[u64]) {
        let n = ids.len() as u64;
        self.min_bag = if self.bags == 0 { n } else { self.min_bag.min(n) };
        self.max_bag = self.max_bag.max(n);
        self.bags += 1;
        self.lookups += n;
        for &i in ids {
            *self.counts.entry(i).or_insert(0) += 1;
        }
    }

    /// Distinct rows.
    pub fn unique(&self) -> u64 {
        self.counts.len() as u64
    }

    /// Distinct rows per lookup (0 without lookups).
    pub fn unique_fraction(&self) -> f64 {
        if self.lookups == 0 { 0.0 } else { self.unique() as f64 / self.lookups as f64 }
    }

    /// Mean lookups per bag.
    pub fn mean_bag(&self) -> f64 {
        if self.bags == 0 { 0.0 } else { self.lookups as f64 / self.bags as f64 }
    }
}

/// Rows and lookups by how often a row is accessed (its reuse factor: its lookups in the whole
/// trace, per table), in Meta's bins ([`crate::locality::bin_of`]): bucket `k` holds the rows
/// accessed `2^(k-1) + 1 ..= 2^k` times (1, 2, 3-4, 5-8, ...).
pub fn reuse_histogram<'a>(tables: impl IntoIterator<Item = &'a TableStats>) -> Vec<(u64, u64)> {
    let mut h: Vec<(u64, u64)> = Vec::new();
    for t in tables {
        for &c in t.counts.values() {
            let k = crate::locality::bin_of(c);
            if h.len() <= k {
                h.resize(k + 1, (0, 0));
            }
            h[k].0 += 1;
            h[k].1 += c;
        }
    }
    h
}

/// The figures of an index trace.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexStats {
    /// Tables.
    pub tables: u64,
    /// Bags per table in a batch.
    pub batch: u64,
    /// Batches.
    pub batches: u64,
    /// Per table, over every batch.
    pub per_table: Vec<TableStats>,
}

impl IndexStats {
    /// The tables' figures together (distinct rows counted per table).
    pub fn overall(&self) -> TableStats {
        let mut all = TableStats::default();
        for t in &self.per_table {
            all.min_bag = if all.bags == 0 { t.min_bag } else { all.min_bag.min(t.min_bag) };
            all.max_bag = all.max_bag.max(t.max_bag);
            all.bags += t.bags;
            all.lookups += t.lookups;
        }
        all
    }

    /// Distinct (table, row) pairs.
    pub fn unique(&self) -> u64 {
        self.per_table.iter().map(TableStats::unique).sum()
    }
}

/// Streams a `.daeidx` trace into its figures.
pub fn daeidx_stats(path: &Path) -> Result<(IndexStats, compiler::trace::Header), TraceCmdError> {
    let mut r = TraceReader::open(path)?;
    let h = *r.header();
    // Grown as sections arrive, not from the header's table count: a file of no batches may
    // claim 2^32 tables.
    let mut per_table: Vec<TableStats> = Vec::new();
    let mut bag = Vec::new();
    while let Some((_, t)) = r.next_section()? {
        let t = t as usize;
        if per_table.len() <= t {
            per_table.resize(t + 1, TableStats::default());
        }
        while r.next_bag(&mut bag)?.is_some() {
            per_table[t].bag(&bag);
        }
    }
    let stats =
        IndexStats { tables: u64::from(h.tables), batch: h.batch, batches: u64::from(h.batches), per_table };
    Ok((stats, h))
}

/// The figures of a `.npy` pair: table-major CSR offsets over `tables` tables and the row ids.
pub fn npy_stats(offsets: &Path, indices: &Path, tables: u64) -> Result<IndexStats, TraceCmdError> {
    let o = crate::npy_read::read_ints(offsets)?;
    let i = crate::npy_read::read_ints(indices)?;
    let name = offsets.display().to_string();
    let bad = |message: String| TraceCmdError::Parse { file: name.clone(), line: 0, message };
    let bags = o.len().saturating_sub(1) as u64;
    if tables == 0 || !bags.is_multiple_of(tables) {
        return Err(bad(format!("{bags} bags do not split into --tables {tables}")));
    }
    if o.first() != Some(&0) || o.last() != Some(&(i.len() as i64)) || o.windows(2).any(|w| w[1] < w[0]) {
        return Err(bad(format!("offsets must run from 0, never decreasing, to the {} row ids", i.len())));
    }
    if let Some(j) = i.iter().position(|&x| x < 0) {
        return Err(TraceCmdError::Parse {
            file: indices.display().to_string(),
            line: 0,
            message: format!("indices[{j}] = {} is negative", i[j]),
        });
    }
    let batch = bags / tables;
    let mut per_table = vec![TableStats::default(); tables as usize];
    let mut ids = Vec::new();
    for (b, w) in o.windows(2).enumerate() {
        ids.clear();
        ids.extend(i[w[0] as usize..w[1] as usize].iter().map(|&x| x as u64));
        per_table[(b as u64 / batch.max(1)) as usize].bag(&ids);
    }
    Ok(IndexStats { tables, batch, batches: 1, per_table })
}

/// The row bytes for the working set, and how they were chosen.
fn row_bytes(a: &InfoArgs) -> (u64, String) {
    let dim = a.dim.unwrap_or(64);
    let dtype = a.dtype.unwrap_or(RowDtype::F32);
    let d = match dtype {
        RowDtype::F32 => Dtype::F32,
        RowDtype::F16 => Dtype::F16,
        RowDtype::Bf16 => Dtype::Bf16,
        RowDtype::Int8 => Dtype::Int8,
    };
    let name = format!("{dtype:?}").to_lowercase();
    let given = match (a.dim.is_some(), a.dtype.is_some()) {
        (true, true) => "given",
        (false, false) => "the defaults; --dim and --dtype set them",
        _ => "partly the defaults (64, f32)",
    };
    (d.format().row_bytes(dim), format!("dim {dim} x {name}, {given}"))
}

fn info(a: &InfoArgs) -> Result<String, TraceCmdError> {
    let kind = match (a.kind, &a.file, &a.offsets) {
        (Some(k), _, _) => k,
        (None, Some(_), None) if a.entity_dict.is_some() => InfoKind::Kg,
        (None, _, Some(_)) => InfoKind::Npy,
        (None, Some(f), None) => match crate::data_file::content_extension(f) {
            Some("daeidx") => InfoKind::Daeidx,
            Some("cites") => InfoKind::Cora,
            Some("mtx") => InfoKind::Mtx,
            _ => {
                return Err(usage(format!(
                    "{}: say what it is with --kind (daeidx, snap, cora, mtx, kg)",
                    f.display()
                )));
            }
        },
        (None, None, None) => return Err(usage("give a FILE or --offsets and --indices")),
    };
    if kind != InfoKind::Kg && a.entity_dict.is_some() {
        // Dictionaries only name a triples file's entities and relations: ignoring them would
        // hide a mistaken --kind.
        return Err(usage(format!(
            "--entity-dict and --relation-dict read a knowledge-graph triples file (--kind kg), not --kind {}",
            format!("{kind:?}").to_lowercase()
        )));
    }
    let file =
        || a.file.clone().ok_or_else(|| usage(format!("--kind {kind:?}: give the FILE").to_lowercase()));
    let value = match kind {
        InfoKind::Daeidx => {
            let f = file()?;
            if crate::data_file::is_gzip(&f) {
                return Err(usage(format!(
                    "{}: a .daeidx trace is streamed as it is, not through gzip: decompress it first",
                    f.display()
                )));
            }
            let (s, h) = daeidx_stats(&f)?;
            let mut v = index_json(&s, a);
            v["file"] = json!(f.display().to_string());
            v["format"] = json!(format!(
                ".daeidx version {}, {} row ids, rows < {}",
                compiler::trace::VERSION,
                h.dtype.name(),
                h.rows
            ));
            v
        }
        InfoKind::Npy => {
            let (Some(o), Some(i)) = (&a.offsets, &a.indices) else {
                return Err(usage("--kind npy needs --offsets and --indices"));
            };
            let s = npy_stats(o, i, a.tables)?;
            let mut v = index_json(&s, a);
            v["file"] = json!(format!("{} + {}", o.display(), i.display()));
            v["format"] = json!(".npy offsets and indices (table-major CSR)");
            v
        }
        InfoKind::Snap | InfoKind::Cora | InfoKind::Mtx => graph_json(&file()?, kind)?,
        InfoKind::Kg => kg_json(&file()?, a)?,
    };
    if a.json {
        return Ok(format!("{}\n", serde_json::to_string_pretty(&value).unwrap_or_default()));
    }
    Ok(text(&value))
}

fn index_json(s: &IndexStats, a: &InfoArgs) -> Value {
    let table = |t: &TableStats| {
        json!({
            "bags": t.bags, "lookups": t.lookups,
            "lookups_per_bag": {"mean": t.mean_bag(), "min": t.min_bag, "max": t.max_bag},
            "unique_rows": t.unique(), "unique_fraction": t.unique_fraction(),
        })
    };
    let all = s.overall();
    let unique = s.unique();
    let (bytes, how) = row_bytes(a);
    let hist: Vec<Value> = reuse_histogram(&s.per_table)
        .iter()
        .enumerate()
        .map(|(k, &(rows, lookups))| {
            let (lo, hi) = crate::locality::bin_bounds(k);
            json!({"accesses": crate::locality::bin_label(lo, Some(hi)), "rows": rows, "lookups": lookups})
        })
        .collect();
    json!({
        "kind": "index trace",
        "tables": s.tables, "batch": s.batch, "batches": s.batches,
        "bags": all.bags, "lookups": all.lookups,
        "lookups_per_bag": {"mean": all.mean_bag(), "min": all.min_bag, "max": all.max_bag},
        "unique_rows": unique,
        "unique_fraction": if all.lookups == 0 { 0.0 } else { unique as f64 / all.lookups as f64 },
        "per_table": s.per_table.iter().map(table).collect::<Vec<_>>(),
        "reuse_histogram": hist,
        "working_set": {"bytes": unique.saturating_mul(bytes), "row_bytes": bytes, "rows": unique, "row": how},
    })
}

/// The text of `path`, decompressed if its name ends in `.gz` ([`crate::data_file`]).
fn read_text(path: &Path) -> Result<String, TraceCmdError> {
    Ok(crate::data_file::read_text(path)?)
}

fn graph_json(path: &Path, kind: InfoKind) -> Result<Value, TraceCmdError> {
    let (format, name) = match kind {
        InfoKind::Cora => (GraphFormat::Cora, "cora"),
        InfoKind::Mtx => (GraphFormat::Mtx, "mtx"),
        _ => (GraphFormat::Snap, "snap"),
    };
    let text = read_text(path)?;
    let g =
        compiler::graph::parse_edge_list(&text, format, false, false, None).map_err(|(line, message)| {
            TraceCmdError::Parse { file: path.display().to_string(), line, message }
        })?;
    let n = g.vertices as usize;
    let (mut indeg, mut outdeg) = (vec![0u64; n], vec![0u64; n]);
    let mut distinct = std::collections::HashSet::new();
    let mut self_loops = 0u64;
    for &(s, d) in &g.edges {
        outdeg[s as usize] += 1;
        indeg[d as usize] += 1;
        distinct.insert((s, d));
        self_loops += u64::from(s == d);
    }
    let isolated = (0..n).filter(|&v| indeg[v] == 0 && outdeg[v] == 0).count();
    let stats = |d: &[u64]| {
        let max = d.iter().copied().max().unwrap_or(0);
        json!({"mean": g.edges.len() as f64 / n.max(1) as f64, "max": max, "zero": d.iter().filter(|&&x| x == 0).count()})
    };
    Ok(json!({
        "kind": format!("graph ({name})"),
        "file": path.display().to_string(),
        "vertices": g.vertices, "edges": g.edges.len(), "distinct_edges": distinct.len(),
        "self_loops": self_loops, "isolated_vertices": isolated,
        "in_degree": stats(&indeg), "out_degree": stats(&outdeg),
    }))
}

fn kg_json(path: &Path, a: &InfoArgs) -> Result<Value, TraceCmdError> {
    let text = read_text(path)?;
    let parse_error = |p: &Path| {
        let file = p.display().to_string();
        move |(line, message)| TraceCmdError::Parse { file, line, message }
    };
    let mut dicts = None;
    let triples = match (&a.entity_dict, &a.relation_dict) {
        (Some(e), Some(r)) => {
            let dict = |p: &PathBuf| {
                compiler::kg_dict::Dictionary::parse(&read_text(p)?, &p.display().to_string())
                    .map_err(parse_error(p))
            };
            let (ents, rels) = (dict(e)?, dict(r)?);
            let t = compiler::kg_dict::parse_named_triples(&text, &ents, &rels).map_err(parse_error(path))?;
            dicts = Some((ents.len(), rels.len()));
            t
        }
        _ => compiler::parse_triples(&text, 1 << 32, 1 << 32).map_err(parse_error(path))?,
    };
    let mut ents = std::collections::HashSet::new();
    let mut rels = std::collections::HashSet::new();
    let (mut max_e, mut max_r) = (0u32, 0u32);
    for &[h, r, t] in &triples {
        ents.insert(h);
        ents.insert(t);
        rels.insert(r);
        max_e = max_e.max(h).max(t);
        max_r = max_r.max(r);
    }
    let mut v = json!({
        "kind": "knowledge-graph triples",
        "file": path.display().to_string(),
        "triples": triples.len(),
        "entities_seen": ents.len(), "entity_ids": if triples.is_empty() { 0 } else { u64::from(max_e) + 1 },
        "relations_seen": rels.len(), "relation_ids": if triples.is_empty() { 0 } else { u64::from(max_r) + 1 },
    });
    if let Some((e, r)) = dicts {
        v["kind"] = json!("knowledge-graph triples (names, through dictionaries)");
        v["entity_dict_entries"] = json!(e);
        v["relation_dict_entries"] = json!(r);
    }
    Ok(v)
}

/// The text form of `info`'s figures.
fn text(v: &Value) -> String {
    let mut s = String::new();
    let g = |k: &str| v.get(k).cloned().unwrap_or(Value::Null);
    s += &format!("{}: {}\n", g("file").as_str().unwrap_or(""), g("kind").as_str().unwrap_or(""));
    if g("kind") == "index trace" {
        s += &format!("format: {}\n", g("format").as_str().unwrap_or(""));
        s += &format!(
            "tables {}, batch {} (bags per table), batches {}: {} bags, {} lookups\n\n",
            g("tables"),
            g("batch"),
            g("batches"),
            g("bags"),
            g("lookups")
        );
        s += "table      bags    lookups  per bag: mean   min   max  unique rows  unique/lookups\n";
        let row = |name: String, t: &Value| {
            let p = &t["lookups_per_bag"];
            format!(
                "{name:<5} {:>9} {:>10} {:>15.2} {:>5} {:>5} {:>12} {:>15.4}\n",
                t["bags"].to_string(),
                t["lookups"].to_string(),
                p["mean"].as_f64().unwrap_or(0.0),
                p["min"].to_string(),
                p["max"].to_string(),
                t["unique_rows"].to_string(),
                t["unique_fraction"].as_f64().unwrap_or(0.0)
            )
        };
        for (k, t) in g("per_table").as_array().into_iter().flatten().enumerate() {
            s += &row(k.to_string(), t);
        }
        s += &row("all".into(), v);
        s += "\nreuse histogram (rows of every table by their lookups in the trace, in Meta's bins (lo, hi]):\naccesses          rows     lookups\n";
        for b in g("reuse_histogram").as_array().into_iter().flatten() {
            s += &format!(
                "{:<12} {:>9} {:>11}\n",
                b["accesses"].as_str().unwrap_or(""),
                b["rows"].to_string(),
                b["lookups"].to_string()
            );
        }
        let w = g("working_set");
        let bytes = w["bytes"].as_u64().unwrap_or(0);
        s += &format!(
            "\nworking set: {} unique rows x {} B = {bytes} B ({:.2} MiB; rows of {})\n",
            w["rows"],
            w["row_bytes"],
            bytes as f64 / (1u64 << 20) as f64,
            w["row"].as_str().unwrap_or("")
        );
    } else {
        for (k, val) in v.as_object().into_iter().flatten() {
            if k != "file" && k != "kind" {
                s += &format!("{k}: {val}\n");
            }
        }
    }
    s
}

// ---------------------------------------------------------------------------------------------
// trace locality, trace fit

fn block_json(index: usize, b: &crate::locality::Block) -> Value {
    let bins: Vec<Value> = b
        .bins
        .iter()
        .map(|x| json!({"reuse": x.label(), "lo": x.lo, "hi": x.hi, "rows": x.rows, "lookups": x.lookups}))
        .collect();
    json!({
        "block": index, "name": b.name, "line": b.line,
        "batches": b.batches, "batch_size": b.batch_size, "tables": b.tables,
        "lookups": b.indices, "unique_rows": b.unique_rows, "unique_fraction": b.unique_fraction(),
        "avg_reuse": b.avg_reuse,
        "lookups_per_table": b.lookups_per_table(),
        "unique_rows_per_table": b.unique_rows_per_table(),
        "reuse_histogram": bins,
    })
}

fn pick_block<'a>(
    blocks: &'a [crate::locality::Block],
    n: usize,
    file: &Path,
) -> Result<&'a crate::locality::Block, TraceCmdError> {
    blocks.get(n).ok_or_else(|| {
        usage(format!(
            "--block {n}: {} has {} blocks (0 to {})",
            file.display(),
            blocks.len(),
            blocks.len() - 1
        ))
    })
}

fn locality_cmd(a: &LocalityArgs) -> Result<String, TraceCmdError> {
    let blocks = crate::locality::read(&a.file)?;
    let chosen: Vec<(usize, &crate::locality::Block)> = match a.block {
        Some(n) => vec![(n, pick_block(&blocks, n, &a.file)?)],
        None => blocks.iter().enumerate().collect(),
    };
    if a.json {
        let v = json!({
            "file": a.file.display().to_string(),
            "blocks_in_file": blocks.len(),
            "blocks": chosen.iter().map(|&(i, b)| block_json(i, b)).collect::<Vec<_>>(),
        });
        return Ok(format!("{}\n", serde_json::to_string_pretty(&v).unwrap_or_default()));
    }
    let mut s = format!(
        "{}: {} blocks (reuse of a row: its lookups in the batch; shares of the unique rows and of the lookups)\n",
        a.file.display(),
        blocks.len()
    );
    for (i, b) in chosen {
        s += &format!(
            "\nblock {i}: {} (line {}): {} batch(es) of {} samples{}\n",
            b.name,
            b.line,
            b.batches,
            b.batch_size,
            b.tables.map_or(String::new(), |t| format!(", {t} tables"))
        );
        s += &format!(
            "  lookups {}, unique rows {}, unique/lookups {:.4}, average reuse {} (file) {:.2} (lookups / unique rows)\n",
            b.indices,
            b.unique_rows,
            b.unique_fraction(),
            b.avg_reuse,
            if b.unique_rows == 0 { 0.0 } else { b.indices as f64 / b.unique_rows as f64 }
        );
        if let (Some(l), Some(u)) = (b.lookups_per_table(), b.unique_rows_per_table()) {
            s += &format!("  per table (mean): {l} lookups, {u} unique rows\n");
        }
        s += "  reuse          rows  lookups\n";
        for x in &b.bins {
            s += &format!("  {:<11} {:>7.3} {:>8.3}\n", x.label(), x.rows, x.lookups);
        }
    }
    Ok(s)
}

fn fit_cmd(a: &FitArgs) -> Result<String, TraceCmdError> {
    use crate::locality::{FitOptions, fit_zipf};
    let blocks = crate::locality::read(&a.locality)?;
    let b = pick_block(&blocks, a.block, &a.locality)?;
    let (lookups, how) = match (a.lookups, b.lookups_per_table()) {
        (Some(l), _) => (l, "given by --lookups".to_string()),
        (None, Some(l)) => {
            (l, format!("the block's lookups per table, {} / {}", b.indices, b.tables.unwrap_or(1)))
        }
        (None, None) => {
            return Err(usage(format!(
                "{}: the name gives no table count (`_t<N>_`): give --lookups",
                b.name
            )));
        }
    };
    const MAX_LOOKUPS: u64 = 100_000_000;
    if a.rows == 0 || lookups == 0 || lookups > MAX_LOOKUPS {
        return Err(usage(format!(
            "--rows {} and lookups {lookups}: both must be at least 1, and lookups at most {MAX_LOOKUPS}",
            a.rows
        )));
    }
    // Each grid point draws every lookup again, and an exponent above 100 puts every draw on
    // the first row: the bounds keep a typo from running for hours or searching a useless range.
    const MAX_ALPHA: f64 = 100.0;
    const MAX_GRID: u32 = 1000;
    let ok = |x: f64| x.is_finite() && x > 0.0 && x <= MAX_ALPHA;
    if !(ok(a.min_alpha) && ok(a.max_alpha) && a.min_alpha < a.max_alpha && (2..=MAX_GRID).contains(&a.grid))
    {
        return Err(usage(format!(
            "--min-alpha {} and --max-alpha {}: positive, at most {MAX_ALPHA}, min below max; \
             --grid {}: 2 to {MAX_GRID}",
            a.min_alpha, a.max_alpha, a.grid
        )));
    }
    let o = FitOptions {
        rows: a.rows,
        lookups,
        seed: a.seed,
        min_alpha: a.min_alpha,
        max_alpha: a.max_alpha,
        grid: a.grid,
    };
    let f = fit_zipf(b, &o);
    let reproduce = format!(
        "dae-sim trace gen --tables 1 --rows {} --batch {lookups} --bag-size 1 --distribution zipf --alpha {:.3} --seed {}",
        a.rows, f.alpha, a.seed
    );
    if a.json {
        let bins: Vec<Value> = b
            .bins
            .iter()
            .zip(&f.reuse.bins)
            .map(|(x, &(rows, lk))| {
                json!({"reuse": x.label(), "rows": {"meta": x.rows, "zipf": rows}, "lookups": {"meta": x.lookups, "zipf": lk}})
            })
            .collect();
        let v = json!({
            "file": a.locality.display().to_string(), "block": a.block, "name": b.name,
            "rows": a.rows, "lookups": lookups, "lookups_from": how, "seed": a.seed,
            "alpha": f.alpha, "distance": f.distance,
            "unique_fraction": {"meta": b.unique_fraction(), "zipf": f.reuse.unique_fraction()},
            "reuse_histogram": bins,
            "evaluations": f.evaluations.iter().map(|&(x, d)| json!([x, d])).collect::<Vec<_>>(),
            "reproduce": reproduce,
        });
        return Ok(format!("{}\n", serde_json::to_string_pretty(&v).unwrap_or_default()));
    }
    let mut s = format!("{} block {}: {} (line {})\n", a.locality.display(), a.block, b.name, b.line);
    s += &format!(
        "one Zipf table of {} rows, {lookups} lookups ({how}), seed {}; {} evaluations over alpha {} to {}\n",
        a.rows,
        a.seed,
        f.evaluations.len(),
        a.min_alpha,
        a.max_alpha
    );
    s += &format!(
        "fitted alpha {:.3}, distance {:.4} (L1 of the rows' shares + L1 of the lookups' shares, 0 to 4)\n",
        f.alpha, f.distance
    );
    s += &format!(
        "unique/lookups: meta {:.4}, zipf {:.4}\n\n{:<11} {:>10} {:>6} {:>15} {:>6}\n",
        b.unique_fraction(),
        f.reuse.unique_fraction(),
        "reuse",
        "rows: meta",
        "zipf",
        "lookups: meta",
        "zipf"
    );
    for (x, &(rows, lk)) in b.bins.iter().zip(&f.reuse.bins) {
        s += &format!("{:<11} {:>10.3} {:>6.3} {:>15.3} {:>6.3}\n", x.label(), x.rows, rows, x.lookups, lk);
    }
    s += &format!("\nthe fitted trace: {reproduce}\n");
    Ok(s)
}
