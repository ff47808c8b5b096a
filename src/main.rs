//! The `dae-sim` command line.

use anyhow::{Context, Result, anyhow, bail};
use clap::{Args, Parser, Subcommand, ValueEnum};
use dae_sim::config::Document;
use dae_sim::dump::{self, DumpOptions};
use dae_sim::experiment::{self, Experiment, Overrides, Progress};
use dae_sim::mem_frontend;
use dae_sim::report;
use dae_sim::trace_cmd::at_least_one;
use mem_model::trace::{Pattern, TraceFormat};
use sim_core::{ByteSize, SeedTree};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

/// `print!` that returns a failed write to standard output (a full disk, a closed pipe) as an
/// error, where `print!` would panic.
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        write!(std::io::stdout().lock(), $($arg)*).context("writing to standard output")
    }};
}

/// `println!` that returns a failed write as an error (see `out!`).
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        writeln!(std::io::stdout().lock(), $($arg)*).context("writing to standard output")
    }};
}

const EXAMPLES: &str = "\
Examples:
  dae-sim --config configs/h100-vs-dae.toml            run an experiment: table + out/<name>/results.json
  dae-sim --config configs/h100-vs-dae.toml --seed 7   same experiment, other random indices
  dae-sim --config configs/h100-vs-dae.toml --dump-outputs out/npy --dump-inputs
                                                       also write outputs and inputs as .npy files
  dae-sim compile --workload configs/workloads/emb-small.toml --emit au
  dae-sim bench engine                                 events per second of the simulation engine";

/// Cycle-level simulator of Decoupled Access-Execute processors for embedding operations.
#[derive(Parser, Debug)]
#[command(name = "dae-sim", version, after_help = EXAMPLES, args_conflicts_with_subcommands = true)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    run: RunArgs,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run an experiment (the default command).
    Run(RunArgs),
    /// Compile a workload and print the generated programs.
    Compile(CompileArgs),
    /// Drive the memory system alone from a trace file or a traffic generator.
    #[command(after_help = MEM_EXAMPLES)]
    Mem(MemArgs),
    /// Run a design-space sweep: the config's `[sweep]` axes, every point in parallel.
    Sweep(SweepArgs),
    /// Join the result directories of a sweep's shards.
    Merge {
        /// Shard result directories (each holds sweep.json and points/).
        #[arg(required = true, value_name = "DIR")]
        dirs: Vec<PathBuf>,
        /// Where the merged results go.
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
    },
    /// Redraw the plots from saved results (SVG and PNG), without re-running anything.
    ///
    /// A sweep's directory or sweep-results.json gives sweep, breakdown and (with its memory
    /// curves) bandwidth-latency; an experiment's
    /// results.json (or its directory) gives speedup (with a baseline), breakdown and latency;
    /// the latency-curve.json of `dae-sim mem --latency-curve` (or its directory) gives
    /// latency-curve.
    Plot {
        /// A results file or the directory that holds it.
        #[arg(value_name = "PATH")]
        path: PathBuf,
    },
    /// Run the GPU model's calibration microbenchmarks and print them beside the measured
    /// H100 figures.
    GpuCalibrate {
        /// GPU system: a preset name from configs/systems/ (h100-sxm, h200, h100-pcie, a100-sxm)
        /// or a TOML file.
        #[arg(long, value_name = "NAME|FILE", default_value = "h100-sxm")]
        system: String,
        /// Size of the microbenchmarks (1.0 = full; smaller is faster and noisier).
        #[arg(long, allow_negative_numbers = true, value_name = "X", default_value_t = 1.0)]
        scale: f64,
    },
    /// Generate synthetic traces, convert Criteo click logs and print a trace's figures
    /// (traces/README.md).
    Trace {
        #[command(subcommand)]
        command: dae_sim::trace_cmd::TraceCommand,
    },
    /// Measure the simulator's own speed.
    Bench {
        /// What to measure.
        #[arg(value_enum)]
        what: BenchTarget,
        /// stream: lookups to run, generated batch by batch (rounded up to whole batches)
        /// [default: 100000000].
        #[arg(long, value_parser = at_least_one::<u64>())]
        lookups: Option<u64>,
        /// stream: run this `.daeidx` trace (configs/bench-stream.toml's shape) instead.
        #[arg(long, value_name = "FILE")]
        trace: Option<PathBuf>,
        /// stream: batches simulated at once (default: every host core); results do not
        /// depend on it.
        #[arg(long, value_parser = at_least_one::<usize>())]
        threads: Option<usize>,
        /// stream: read, compile and compute the reference of every batch without simulating
        /// them (how a trace too long to simulate is checked).
        #[arg(long)]
        functional: bool,
    },
}

#[derive(Args, Debug, Clone)]
struct SweepArgs {
    /// Experiment config file with a `[sweep]` section.
    #[arg(long, value_name = "FILE")]
    config: PathBuf,
    /// Print the points (with --shard, that shard's) and exit.
    #[arg(long)]
    list: bool,
    /// Worker threads (default: every host core).
    #[arg(long, value_name = "N", value_parser = at_least_one::<usize>())]
    threads: Option<usize>,
    /// Skip points whose results are already written.
    #[arg(long)]
    resume: bool,
    /// Run only shard i of N (points whose index is i modulo N), e.g. 0/4.
    #[arg(long, allow_hyphen_values = true, value_name = "i/N")]
    shard: Option<String>,
    /// Output directory (default: the experiment's, plus /sweep).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// No progress lines.
    #[arg(long)]
    quiet: bool,
}

#[derive(Args, Debug, Clone, Default)]
struct RunArgs {
    /// Experiment config file.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Output directory (default: the config's `experiment.output`, else out/<name>).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Master seed (overrides `experiment.seed`), 0 to 2^63 - 1.
    #[arg(long, allow_negative_numbers = true, value_name = "N", value_parser = clap::value_parser!(u64).range(0..=i64::MAX as u64))]
    seed: Option<u64>,
    /// Print only the table.
    #[arg(long)]
    quiet: bool,
    /// Write every simulated output tensor as DIR/<workload>/<system>/output.npy (NumPy, f32,
    /// bags x dim).
    #[arg(long, value_name = "DIR")]
    dump_outputs: Option<PathBuf>,
    /// With --dump-outputs, also write each workload's inputs (offsets, indices, bag tables and
    /// the table rows they touch) into DIR/<workload>/inputs/.
    #[arg(long, requires = "dump_outputs")]
    dump_inputs: bool,
    /// Pairs simulated at once (default: every host core); results do not depend on it.
    #[arg(long, value_name = "N", value_parser = at_least_one::<usize>())]
    threads: Option<usize>,
}

#[derive(Args, Debug)]
struct CompileArgs {
    /// Workload file.
    #[arg(long, value_name = "FILE")]
    workload: PathBuf,
    /// Cores to partition the work over.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=4096))]
    cores: u32,
    /// Which core's programs to print.
    #[arg(long, default_value_t = 0)]
    core_index: usize,
    /// Cut long bags across the cores (merge-path), as `[system.compiler] partition = "split"`.
    #[arg(long)]
    split: bool,
    /// Target cores without access units (prints the loop program the core runs alone).
    #[arg(long)]
    core_only: bool,
    /// f32 lanes per vector register.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..=64))]
    lanes: u32,
    /// Access-unit lanes: a bag's lookups advance in lockstep over them (1: single-lane).
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..=64))]
    au_lanes: u32,
    /// Stream storage of each access-unit lane in bytes (the TMU's 2 KiB; 0: unlimited). Outer
    /// layers' rows that do not fit go to the core as addresses.
    #[arg(long, default_value_t = 2048)]
    au_storage_per_lane: u64,
    /// Seed of the workload's indices.
    #[arg(long, allow_negative_numbers = true, default_value_t = 1)]
    seed: u64,
    /// Optimization level (Ember's emb-opt0..3).
    #[arg(short = 'O', value_name = "LEVEL", default_value_t = 3, value_parser = clap::value_parser!(u8).range(0..=3))]
    opt_level: u8,
    /// Comma-separated passes to run instead of the level's (decouple, nontemporal, vectorize,
    /// bufferize, simplify-mem, hoist, align-queues).
    #[arg(long, value_name = "LIST", conflicts_with_all = ["opt_level", "core_only"])]
    passes: Option<String>,
    /// What to print: an IR level or a target program.
    #[arg(long, value_enum, default_value_t = Emit::All)]
    emit: Emit,
    /// Print the IR after every pass (of the chosen core).
    #[arg(long)]
    print_after_all: bool,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum Emit {
    /// The loop level (before partitioning).
    Loop,
    /// SLC after the passes.
    Slc,
    /// DLC.
    Dlc,
    /// The access-unit program.
    Au,
    /// The core program.
    Core,
    /// Every stage.
    All,
}

#[derive(ValueEnum, Clone, Copy, Debug)]
enum BenchTarget {
    /// Events per second: a ping-pong pair and a 64-leaf fan-out/fan-in.
    Engine,
    /// Requests per host second of the HBM3-6400 model: 1M random and 1M streaming reads.
    Mem,
    /// Simulated memory requests per host second of the DAE system (configs/bench-system.toml).
    System,
    /// Peak resident memory streaming many batches through the DAE system
    /// (configs/bench-stream.toml; --lookups or --trace).
    Stream,
}

const MEM_EXAMPLES: &str = "\
Examples:
  dae-sim mem --memory hbm3-6400                                     100k random 64 B reads, as fast as accepted
  dae-sim mem --memory configs/memory/hbm3-6400.toml --pattern stream --read-ratio 0.7 --rate 4
  dae-sim mem --memory hbm3-6400 --trace traces/example.dramsim3.trace --format dramsim3
  dae-sim mem --memory hbm3-6400 --latency-curve                     bandwidth-latency curves, 100-50% reads";

/// Requests of a generated single run, unless --requests says otherwise.
const MEM_REQUESTS: u64 = 100_000;

#[derive(Args, Debug)]
struct MemArgs {
    /// Memory: a TOML file, or the name of a preset in configs/memory/ (such as hbm3-6400).
    #[arg(long, value_name = "FILE|NAME")]
    memory: String,
    /// Trace file to replay instead of generated traffic.
    #[arg(
        long,
        value_name = "FILE",
        requires = "format",
        conflicts_with_all = ["pattern", "read_ratio", "latency_curve", "requests"]
    )]
    trace: Option<PathBuf>,
    /// Format of --trace.
    #[arg(long, value_enum, requires = "trace")]
    format: Option<FormatArg>,
    /// Generated traffic: uniformly random or streaming (sequential) addresses [default: random].
    #[arg(long, value_enum)]
    pattern: Option<PatternArg>,
    /// Generated requests [default: 100000; with --latency-curve, per point: enough for 1.25
    /// refresh intervals of simulated time at the point's rate].
    #[arg(long, value_name = "N", value_parser = at_least_one::<u64>())]
    requests: Option<u64>,
    /// Fraction of generated requests that are reads, 0 to 1 [default: 1].
    #[arg(long, allow_negative_numbers = true, value_name = "R")]
    read_ratio: Option<f64>,
    /// Injection rate in requests per ns, or "max" (as fast as the memory accepts) [default: the
    /// trace's timestamps, else max].
    #[arg(long, allow_negative_numbers = true, value_name = "X|max")]
    rate: Option<mem_frontend::Rate>,
    /// Bytes per request (generated requests, and trace records without a size).
    #[arg(long, value_name = "SIZE", default_value = "64B")]
    size: ByteSize,
    /// Most requests in flight [default: peak bandwidth x 1 us / size, between 16 and 65536].
    #[arg(long, value_name = "N")]
    in_flight: Option<u32>,
    /// Master seed of the generators.
    #[arg(long, allow_negative_numbers = true, value_name = "N", default_value_t = 1)]
    seed: u64,
    /// Output directory for mem-results.json or latency-curve.json.
    #[arg(long, value_name = "DIR", default_value = "out/mem")]
    out: PathBuf,
    /// Print the JSON report on stdout instead of the table.
    #[arg(long)]
    json: bool,
    /// Sweep the injection rate of random traffic at 100, 90, 80, 70, 60 and 50% reads.
    #[arg(long, conflicts_with_all = ["rate", "read_ratio", "pattern"])]
    latency_curve: bool,
    /// Injection rates per read ratio in --latency-curve (5% to 125% of the saturation
    /// bandwidth measured at --rate max).
    #[arg(long, value_name = "N", default_value_t = 16, requires = "latency_curve")]
    points: u32,
    /// No host-speed line on stderr.
    #[arg(long)]
    quiet: bool,
}

#[derive(ValueEnum, Clone, Copy, Debug)]
enum FormatArg {
    /// `0xADDR READ|WRITE CYCLE` lines.
    Dramsim3,
    /// Ramulator 2 LoadStoreTrace: `LD|ST ADDR` lines.
    Ramulator,
    /// dae-sim's binary format (traces/README.md).
    Binary,
}

#[derive(ValueEnum, Clone, Copy, Debug)]
enum PatternArg {
    /// Uniformly random, request-aligned addresses over the whole memory.
    Random,
    /// Sequential addresses.
    Stream,
}

/// Creates the output directory before anything runs, so an `--out` that cannot be one (an
/// existing file, a path that cannot be created) fails at once, not after the simulations.
fn prepare_out(dir: &std::path::Path) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("output directory {}", dir.display()))
}

fn run(args: &RunArgs) -> Result<bool> {
    let Some(config) = &args.config else {
        bail!("no experiment given: use --config FILE (for example --config configs/h100-vs-dae.toml)");
    };
    let overrides = Overrides { seed: args.seed, out: args.out.clone() };
    let exp = Experiment::load(config, &overrides)?;
    for w in &exp.warnings {
        dae_sim::note!("warning: {w}");
    }
    if exp.file.sweep.is_some() && !args.quiet {
        // A sweep config is an experiment too: its own values are the base point.
        dae_sim::note!(
            "note: {} has a [sweep] section; this runs its base point only (`dae-sim sweep --config {}` runs every point)",
            config.display(),
            config.display()
        );
    }
    let dump = args.dump_outputs.clone().map(|dir| DumpOptions { dir, inputs: args.dump_inputs });
    if let Some(d) = &dump {
        dump::check(&exp, d).context("--dump-outputs")?;
    }
    prepare_out(&exp.out_dir)?;
    let pairs = exp.systems.len() * exp.file.workload.len();
    let mut done = 0;
    let threads = args.threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let outcomes = experiment::run(&exp, threads, |p| {
        if args.quiet {
            return;
        }
        match p {
            Progress::Pair(o) => {
                done += 1;
                let detail = match &o.result {
                    Ok(m) if m.events > 0 => format!(
                        "{} events in {:.2} s ({:.2} M events/s)",
                        m.events,
                        o.host_seconds,
                        m.events as f64 / o.host_seconds.max(1e-9) / 1e6
                    ),
                    Ok(_) => format!("{:.3} s", o.host_seconds),
                    Err(e) => format!("FAILED: {e}"),
                };
                dae_sim::note!("[{done}/{pairs}] {} on {} ({}): {detail}", o.workload, o.system, o.model);
            }
            // About twenty lines per workload, however many batches it has.
            Progress::Batch { workload, done, count } if done == count || done % (count / 20).max(1) == 0 => {
                dae_sim::note!("    {workload}: batch {done} of {count} run on every system");
            }
            Progress::Batch { .. } => {}
        }
    });
    // A failed print (a full disk) still writes the results; its error comes after.
    let printed = out!("{}", report::table(&exp, &outcomes));
    let results = report::json(&exp, &outcomes);
    // Each output is written whatever became of the others (a results.json that cannot be
    // written still leaves the CSV and the plots); each failure is said, and the run fails.
    let path = exp.out_dir.join("results.json");
    let json = report::write_json(&exp.out_dir, "results.json", &results)
        .with_context(|| format!("writing {}", path.display()));
    let csv_path = exp.out_dir.join("results.csv");
    let csv = report::write_file(&exp.out_dir, "results.csv", report::csv(&exp, &outcomes))
        .with_context(|| format!("writing {}", csv_path.display()));
    // The plots draw the figures of results.json, as `dae-sim plot` reads them back later.
    let plots = dae_sim::plot::experiment_plots(&results, &path.display().to_string(), &exp.out_dir)
        .map_err(|e| anyhow!("plotting: {e}"));
    if !args.quiet {
        let written: Vec<String> = (json.iter().chain(csv.iter()).chain(plots.iter().flatten()))
            .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .collect();
        if !written.is_empty() {
            dae_sim::note!("results in {}: {}", exp.out_dir.display(), written.join(", "));
        }
    }
    // Said now, so that a failed print or dump below cannot hide them.
    let mut unwritten = 0;
    for failed in [json.err(), csv.err(), plots.err()].into_iter().flatten() {
        dae_sim::note!("error: {failed:#}");
        unwritten += 1;
    }
    printed?;
    // After results.json, so a dump that fails loses no results; its error comes last.
    let dumped = match &dump {
        Some(d) => dump::dump(&exp, &outcomes, d).map(|files| {
            if !args.quiet {
                dae_sim::note!("dumped {} .npy files under {}", files.len(), d.dir.display());
            }
        }),
        None => Ok(()),
    };
    let ok = outcomes.iter().all(experiment::Outcome::succeeded);
    for o in &outcomes {
        match &o.result {
            Err(e) => dae_sim::note!("error: {} on {}: {e}", o.workload, o.system),
            Ok(m) => {
                for w in &m.warnings {
                    dae_sim::note!("warning: {} on {}: {w}", o.workload, o.system);
                }
                if let Some(Err(e)) = &m.verified {
                    dae_sim::note!(
                        "error: {} on {}: outputs differ from the reference: {e}",
                        o.workload,
                        o.system
                    );
                }
            }
        }
    }
    dumped.context("--dump-outputs")?;
    if unwritten > 0 {
        bail!("{unwritten} of the outputs in {} could not be written (above)", exp.out_dir.display());
    }
    Ok(ok)
}

fn compile(args: &CompileArgs) -> Result<()> {
    let doc = Document::load(&args.workload)?;
    let mut spec: compiler::WorkloadSpec = doc.deserialize()?;
    dae_sim::experiment::read_graph(&doc, "", &mut spec)?;
    let spec = spec.resolved().map_err(|e| doc.error_at(e.field, e.message.clone()))?;
    let seeds = SeedTree::new(args.seed);
    let inst = match dae_sim::experiment::read_inputs(&doc, "", &spec, &seeds)? {
        Some((inst, _)) => inst,
        None => compiler::EmbeddingBagInstance::generate(&spec, &seeds),
    };
    let passes = match &args.passes {
        Some(list) => compiler::Passes::parse(list).map_err(|e| anyhow!("--passes: {e}"))?,
        None => compiler::Passes::level(args.opt_level)
            .ok_or_else(|| anyhow!("-O{}: no such level", args.opt_level))?,
    };
    let target = compiler::TargetInfo {
        target: if args.core_only { compiler::Target::CoreOnly } else { compiler::Target::Decoupled },
        cores: args.cores,
        vector_lanes: args.lanes,
        au_lanes: args.au_lanes,
        au_storage_per_lane: args.au_storage_per_lane,
        passes,
        partition: if args.split { compiler::Partition::Split } else { compiler::Partition::Cost },
    };
    if args.core_index >= args.cores as usize {
        bail!("--core-index {} is not below --cores {}", args.core_index, args.cores);
    }
    let mut stages = compiler::Stages::default();
    let compiled = compiler::compile_with_stages(&spec, inst, target, Some(&mut stages));
    let empty = Vec::new();
    let core = stages.cores.get(args.core_index).unwrap_or(&empty);
    if let Err(e) = compiled {
        // What was built before the failure shows where it failed.
        if args.print_after_all {
            for (name, text) in core {
                outln!("// ----- after {name} -----")?;
                out!("{text}")?;
            }
        }
        return Err(e).with_context(|| format!("compiling {}", args.workload.display()));
    }
    let stage = |name: &str| core.iter().rev().find(|(n, _)| n == name).map(|(_, t)| t.as_str());
    if args.print_after_all {
        for (name, text) in core {
            outln!("// ----- after {name} -----")?;
            out!("{text}")?;
        }
        return Ok(());
    }
    let wanted: &[&str] = match args.emit {
        Emit::Loop => {
            out!("{}", stages.loop_level)?;
            return Ok(());
        }
        Emit::Slc => &["slc"],
        Emit::Dlc => &["dlc"],
        Emit::Au => &["au"],
        Emit::Core => &["core"],
        Emit::All => &["partition", "slc", "dlc", "au", "core"],
    };
    for name in wanted {
        match stage(name) {
            Some(text) => {
                if args.emit == Emit::All {
                    outln!("// ----- {name} -----")?;
                }
                out!("{text}")?;
            }
            None if args.emit != Emit::All => {
                bail!(
                    "no {name} stage: a core-only target or a pass list without decouple stops at the loop level"
                )
            }
            None => {}
        }
    }
    Ok(())
}

/// The host a speed benchmark runs on, as its first line (`host: CPU, N cores`): a speed figure
/// means little without it, and this project's machines have changed under it.
fn host() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo").ok().and_then(|info| {
        info.lines().find_map(|l| {
            let (key, value) = l.split_once(':')?;
            (key.trim() == "model name").then(|| value.trim().to_string())
        })
    });
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    format!("host: {}, {cores} cores", cpu.as_deref().unwrap_or("CPU model unknown"))
}

fn bench_engine() -> Result<()> {
    outln!("{}", host())?;
    use sim_core::bench::{fan_out_fan_in, measure, ping_pong};
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let reps = 5;
    let mut pp = Vec::new();
    let mut fan = Vec::new();
    for _ in 0..reps {
        pp.push(measure(ping_pong(10_000_000)?)?.events_per_second());
        fan.push(measure(fan_out_fan_in(64, 80_000)?)?.events_per_second());
    }
    outln!("engine, median of {reps} runs, one thread:")?;
    outln!("  ping-pong pair          {:>7.1} M events/s", median(pp) / 1e6)?;
    outln!("  fan-out/fan-in, 64 leaves {:>5.1} M events/s", median(fan) / 1e6)?;
    Ok(())
}

fn mem(args: &MemArgs) -> Result<()> {
    use mem_frontend::{CurveOptions, RunOptions, Traffic};
    let path = mem_frontend::resolve_memory(&args.memory)?;
    let preset = mem_frontend::load_memory(&path)?;
    if let mem_frontend::MemoryModel::Dram(spec) = &preset.model {
        for w in spec.timing_warnings() {
            dae_sim::note!("warning: {}: {w}", path.display());
        }
    }
    prepare_out(&args.out)?;
    let bytes = u32::try_from(args.size.bytes())
        .map_err(|_| anyhow!("--size {}: must be below 4 GiB (a request size is 32 bits)", args.size))?;
    if args.latency_curve {
        let opts = CurveOptions {
            points: args.points,
            requests: args.requests,
            bytes,
            in_flight: args.in_flight,
            seed: args.seed,
            read_ratios: &mem_frontend::CURVE_READ_RATIOS,
        };
        let t0 = Instant::now();
        let curve = mem_frontend::latency_curve(&preset, &opts)?;
        let host = t0.elapsed().as_secs_f64();
        let value = mem_frontend::curve_json(&preset, &opts, &curve);
        if args.json {
            outln!("{}", serde_json::to_string_pretty(&value)?)?;
        } else {
            out!("{}", mem_frontend::curve_table(&preset, &curve))?;
        }
        let file = report::write_json(&args.out, "latency-curve.json", &value)
            .with_context(|| format!("writing latency-curve.json into {}", args.out.display()))?;
        dae_sim::plot::bandwidth_latency::curve_plot(&value, &file.display().to_string(), &args.out)
            .map_err(|e| anyhow!("plotting: {e}"))?;
        if !args.quiet {
            let requests = curve.requests();
            dae_sim::note!(
                "{} points, {requests} requests in {host:.2} s ({:.2} M requests per host second); results: {}",
                curve.points.len(),
                requests as f64 / host.max(1e-9) / 1e6,
                file.display()
            );
        }
        return Ok(());
    }
    let traffic = match (&args.trace, args.format) {
        (Some(path), Some(format)) => Traffic::Trace {
            path: path.clone(),
            format: match format {
                FormatArg::Dramsim3 => TraceFormat::DramSim3,
                FormatArg::Ramulator => TraceFormat::Ramulator,
                FormatArg::Binary => TraceFormat::Binary,
            },
        },
        _ => Traffic::Generated {
            pattern: match args.pattern.unwrap_or(PatternArg::Random) {
                PatternArg::Random => Pattern::Random,
                PatternArg::Stream => Pattern::Stream,
            },
            requests: args.requests.unwrap_or(MEM_REQUESTS),
            read_ratio: args.read_ratio.unwrap_or(1.0),
        },
    };
    let opts = RunOptions {
        rate: args.rate.unwrap_or(mem_frontend::Rate::Auto),
        bytes,
        in_flight: args.in_flight,
        seed: args.seed,
    };
    let run = mem_frontend::run(&preset, &traffic, &opts)?;
    let value = mem_frontend::json(&preset, &traffic, &opts, &run);
    // A failed print (a full disk) still writes the results file; its error comes after.
    let printed = if args.json {
        outln!("{}", serde_json::to_string_pretty(&value)?)
    } else {
        out!("{}", mem_frontend::table(&preset, &traffic, &opts, &run))
    };
    let file = report::write_json(&args.out, "mem-results.json", &value)
        .with_context(|| format!("writing mem-results.json into {}", args.out.display()))?;
    printed?;
    if !args.quiet {
        dae_sim::note!(
            "host speed: {:.2} M requests/s ({} requests, {} events in {:.3} s); results: {}",
            run.host_requests_per_s() / 1e6,
            run.driver.requests(),
            run.events,
            run.host_seconds,
            file.display()
        );
    }
    Ok(())
}

fn bench_mem() -> Result<()> {
    outln!("{}", host())?;
    use mem_model::dram::bench::{self as dram_bench, BenchConfig, Pattern as BenchPattern};
    let preset = mem_frontend::load_memory(&mem_frontend::resolve_memory("hbm3-6400")?)?;
    let mem_frontend::MemoryModel::Dram(spec) = &preset.model else {
        bail!("{}: not a DRAM preset", preset.file.display());
    };
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (reps, requests) = (3, 1_000_000);
    outln!("{}, {requests} reads of 64 B, median of {reps} runs, one thread:", spec.name())?;
    outln!("  DRAM model alone (mem-model's closed-loop bench requester):")?;
    for (label, pattern) in [("random", BenchPattern::Random), ("stream", BenchPattern::Streaming)] {
        let cfg = BenchConfig::new(spec, pattern, requests);
        let mut speeds = Vec::new();
        let mut gbps = 0.0;
        for _ in 0..reps {
            let r = dram_bench::run(spec, cfg)?;
            speeds.push(r.requests_per_second());
            gbps = r.bandwidth() / 1e9;
        }
        outln!("    {label:<8} {:>7.2} M requests/s  ({gbps:.1} GB/s simulated)", median(speeds) / 1e6)?;
    }
    outln!("  through `dae-sim mem` (trace driver + generator, as fast as accepted):")?;
    for (pattern, speed) in mem_frontend::bench(&preset, requests, reps)? {
        outln!("    {:<8} {:>7.2} M requests/s", pattern.as_str(), speed / 1e6)?;
    }
    Ok(())
}

/// `configs/NAME` under the working directory, else under the source tree the binary was built
/// from.
fn shipped_config(name: &str) -> PathBuf {
    let here = PathBuf::from("configs").join(name);
    if here.is_file() { here } else { PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("configs").join(name) }
}

fn bench_system() -> Result<()> {
    outln!("{}", host())?;
    use dae_sim::experiment::SystemPlan;
    let path = shipped_config("bench-system.toml");
    let exp = Experiment::load(&path, &Overrides::default())?;
    let reps = 3;
    outln!(
        "{}: simulated memory requests per host second, median of {reps} runs, one thread:",
        path.display()
    )?;
    let seeds = SeedTree::new(exp.file.experiment.seed);
    for spec in &exp.file.workload {
        let inst = exp.instance(spec);
        let reference = inst.reference(spec);
        for (name, plan) in &exp.systems {
            let SystemPlan::Dae(sys) = plan else { continue };
            let compiled = compiler::compile(spec, inst.clone(), sys.target_info())?;
            let mut runs = Vec::new();
            for _ in 0..reps {
                let t0 = Instant::now();
                let r = dae_sim::system::run(sys, &compiled, &reference, exp.time_limit(&inst), &seeds)?;
                let secs = t0.elapsed().as_secs_f64();
                if let Err(e) = &r.verified {
                    bail!("{} on {name}: outputs differ from the reference: {e}", spec.name);
                }
                runs.push((r.issued_requests as f64 / secs, secs, r.issued_requests, r.events));
            }
            runs.sort_by(|a, b| a.0.total_cmp(&b.0));
            let (rate, secs, requests, events) = runs[runs.len() / 2];
            outln!(
                "  {} on {name} ({} cores): {:.2} M requests/s ({requests} requests, {events} events, {secs:.1} s)",
                spec.name,
                sys.cores,
                rate / 1e6
            )?;
        }
    }
    Ok(())
}

/// Streams `lookups` generated lookups (or the `.daeidx` file `trace`) through the DAE system of
/// configs/bench-stream.toml, a batch at a time, and reports the peak resident memory.
fn bench_stream(
    lookups: u64,
    trace: Option<&std::path::Path>,
    threads: usize,
    functional: bool,
) -> Result<()> {
    let path = shipped_config("bench-stream.toml");
    let mut doc = Document::load(&path)?;
    if let Some(file) = trace {
        let file = file.to_str().ok_or_else(|| anyhow!("{}: not a UTF-8 path", file.display()))?;
        doc.remove("workload[0].indices");
        doc.set("workload[0].trace.file", toml::Value::String(file.to_string()))?;
    }
    let mut exp = Experiment::from_document(doc, &path, &Overrides::default())?;
    if trace.is_none() {
        // Whole batches of the workload's shape, as many as `lookups` needs.
        let w = &mut exp.file.workload[0];
        w.batches = lookups.div_ceil(w.lookups().max(1)).max(1);
    }
    let spec = &exp.file.workload[0];
    let count = spec.batches.max(1);
    let source = trace.map_or_else(|| "generated on the fly".to_string(), |t| t.display().to_string());
    outln!("{}", host())?;
    outln!(
        "{}: {count} batches of {} lookups ({source}), {threads} at a time",
        path.display(),
        spec.lookups()
    )?;
    let rss_before = dae_sim::stream::peak_rss_bytes();
    let t0 = Instant::now();
    let mut last_print = Instant::now();
    let progress = |done: u64, count: u64| {
        if last_print.elapsed().as_secs() >= 30 || done == count {
            last_print = Instant::now();
            let rss = dae_sim::stream::peak_rss_bytes()
                .map_or("n/a".into(), |b| format!("{:.0} MiB", b as f64 / 1048576.0));
            dae_sim::note!(
                "  {done}/{count} batches, {:.0} s, peak RSS so far {rss}",
                t0.elapsed().as_secs_f64()
            );
        }
    };
    if functional {
        let sum = dae_sim::stream::check_workload(&exp, spec, threads, progress)
            .map_err(|e| anyhow!("{}: {e}", spec.name))?;
        let secs = t0.elapsed().as_secs_f64();
        outln!(
            "  functional: {} batches, {} lookups read, compiled and reduced in {secs:.0} s host ({:.2} M lookups/s); output sum {:.6e}",
            sum.batches,
            sum.lookups,
            sum.lookups as f64 / secs / 1e6,
            sum.output_sum
        )?;
    } else {
        let outcomes = dae_sim::stream::run_workload(&exp, spec, threads, progress);
        let secs = t0.elapsed().as_secs_f64();
        for o in outcomes {
            let m = o.result.map_err(|e| anyhow!("{} on {}: {e}", o.workload, o.system))?;
            if let Some(Err(e)) = &m.verified {
                bail!("{} on {}: outputs differ from the reference: {e}", o.workload, o.system);
            }
            outln!(
                "  {} lookups verified on {} in {secs:.0} s host ({:.2} M lookups/s); simulated {:.3} ms",
                m.lookups,
                o.system,
                m.lookups as f64 / secs / 1e6,
                m.time as f64 / 1e9
            )?;
        }
    }
    let mib = |b: Option<u64>| {
        b.map_or("n/a (no /proc/self/status)".into(), |b| format!("{:.1} MiB", b as f64 / 1048576.0))
    };
    outln!(
        "  peak RSS: {} (after loading the config: {})",
        mib(dae_sim::stream::peak_rss_bytes()),
        mib(rss_before)
    )?;
    Ok(())
}

fn sweep(args: &SweepArgs) -> Result<bool> {
    use dae_sim::sweep::{self, RunOptions, Shard, Sweep};
    // Every check (shard, axes, every point's config) before any point runs.
    let shard = args.shard.as_deref().map(str::parse::<Shard>).transpose()?;
    let overrides = Overrides { seed: None, out: args.out.clone() };
    let sw = Sweep::load(&args.config, &overrides)?;
    if args.list {
        out!("{}", sweep::list(&sw, shard))?;
        return Ok(true);
    }
    prepare_out(&sw.out_dir)?;
    let threads = args.threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let todo = sw.selected(shard).len();
    let t0 = std::time::Instant::now();
    let quiet = args.quiet;
    // Points done, points per minute and the time left; drawn only on a terminal.
    let bar = if quiet { indicatif::ProgressBar::hidden() } else { indicatif::ProgressBar::new(todo as u64) };
    bar.set_style(
        indicatif::ProgressStyle::with_template("{wide_bar} {pos}/{len} points  {msg}  ETA {eta}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let opts = RunOptions { threads, resume: args.resume, shard };
    let summary = sweep::run(&sw, &opts, |p, ok| {
        bar.inc(1);
        let minutes = t0.elapsed().as_secs_f64() / 60.0;
        bar.set_message(format!("{:.1} points/min", bar.position() as f64 / minutes.max(1e-9)));
        let line = if ok {
            format!("point {} ({}) done: {} of {todo}", p.index, p.label(), bar.position())
        } else {
            format!("point {} ({}): a pair failed (see its results)", p.index, p.label())
        };
        // The bar draws only on a terminal (failures above it); a log (a batch job's) hears of
        // every point.
        if bar.is_hidden() {
            if !quiet {
                dae_sim::note!("{line}");
            }
        } else if !ok {
            bar.println(line);
        }
    })?;
    bar.finish_and_clear();
    if !quiet {
        dae_sim::note!(
            "{} points run, {} skipped as finished, {} with a failed pair; results in {}{}",
            summary.ran,
            summary.skipped,
            summary.failed,
            sw.out_dir.display(),
            if summary.complete {
                " (sweep-results.json, sweep.csv)"
            } else {
                " (points/: the sweep is not complete)"
            }
        );
    }
    Ok(summary.failed == 0)
}

fn plot(path: &std::path::Path) -> Result<()> {
    let file = if path.is_dir() {
        [path.join("sweep-results.json"), path.join("results.json"), path.join("latency-curve.json")]
            .into_iter()
            .find(|f| f.exists())
            .ok_or_else(|| {
                anyhow!(
                    "{}: holds neither sweep-results.json, results.json nor latency-curve.json",
                    path.display()
                )
            })?
    } else {
        path.to_path_buf()
    };
    let text = std::fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))?;
    let v: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("{}: not JSON", file.display()))?;
    let dir = file.parent().unwrap_or(std::path::Path::new("."));
    let name = file.display().to_string();
    let written = if dae_sim::plot::bandwidth_latency::is_curve_json(&v) {
        dae_sim::plot::bandwidth_latency::curve_plot(&v, &name, dir)
    } else if v.get("points").is_some() {
        dae_sim::plot::sweep_plots(&v, &name, dir)
    } else {
        dae_sim::plot::experiment_plots(&v, &name, dir)
    }
    .map_err(|e| anyhow!(e))?;
    if written.is_empty() {
        bail!("{name}: nothing to plot (no baseline, time breakdown or lookup-latency profile)");
    }
    for f in written {
        dae_sim::note!("wrote {}", f.display());
    }
    Ok(())
}

/// `--system` of `gpu-calibrate`: a file, or a preset of `configs/systems/` (here, else in the
/// tree the binary was built from, as `mem --memory` finds its presets).
fn gpu_preset(arg: &str) -> Result<PathBuf> {
    let gpu = |p: &std::path::Path| dae_sim::experiment::load_gpu_system(p).is_ok();
    dae_sim::config::presets::resolve(arg, "systems", gpu).map_err(|e| {
        anyhow!(
            "--system {arg}: no such file or GPU preset (presets in {}: {})",
            shipped_config("systems").display(),
            e.available.join(", ")
        )
    })
}

fn gpu_calibrate(system: &str, scale: f64) -> Result<()> {
    if !(scale > 0.0 && scale <= 100.0) {
        bail!("--scale {scale}: must be in (0, 100]");
    }
    let system = &gpu_preset(system)?;
    let gpu =
        dae_sim::experiment::load_gpu_system(system).with_context(|| format!("{}", system.display()))?;
    let t0 = std::time::Instant::now();
    let cal =
        gpu_model::calibration::run(&gpu, gpu_model::calibration::Scale(scale), &sim_core::SeedTree::new(1))
            .map_err(|e| anyhow!("{}: {e}", system.display()))?;
    outln!("GPU calibration of {} ({:.1} s host)\n", system.display(), t0.elapsed().as_secs_f64())?;
    out!("{}", cal.table())?;
    Ok(())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match &cli.command {
        None => run(&cli.run),
        Some(Command::Run(args)) => run(args),
        Some(Command::Compile(args)) => compile(args).map(|()| true),
        Some(Command::Sweep(args)) => sweep(args),
        Some(Command::Plot { path }) => plot(path).map(|()| true),
        Some(Command::Merge { dirs, out }) => dae_sim::sweep::merge(dirs, out)
            .map(|(found, total)| {
                dae_sim::note!("merged {found} of {total} points into {}", out.display());
                if found < total {
                    dae_sim::note!(
                        "warning: {} points have no results in the directories given: no \
                         sweep-results.json until every shard is merged",
                        total - found
                    );
                }
                found == total
            })
            .map_err(Into::into),
        Some(Command::GpuCalibrate { system, scale }) => gpu_calibrate(system, *scale).map(|()| true),
        Some(Command::Trace { command }) => {
            dae_sim::trace_cmd::run(command, &mut std::io::stdout().lock()).map(|()| true).map_err(Into::into)
        }
        Some(Command::Bench { what: BenchTarget::Stream, lookups, trace, threads, functional }) => {
            let threads =
                threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
            bench_stream(lookups.unwrap_or(100_000_000), trace.as_deref(), threads, *functional)
                .map(|()| true)
        }
        Some(Command::Bench { what, lookups, trace, threads, functional })
            if lookups.is_some() || trace.is_some() || threads.is_some() || *functional =>
        {
            Err(anyhow!(
                "--lookups, --trace, --threads and --functional are options of `bench stream`, not `bench {}`",
                what.to_possible_value().map_or_else(String::new, |v| v.get_name().to_string())
            ))
        }
        Some(Command::Bench { what: BenchTarget::Engine, .. }) => bench_engine().map(|()| true),
        Some(Command::Mem(args)) => mem(args).map(|()| true),
        Some(Command::Bench { what: BenchTarget::Mem, .. }) => bench_mem().map(|()| true),
        Some(Command::Bench { what: BenchTarget::System, .. }) => bench_system().map(|()| true),
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            dae_sim::note!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_host_line_names_the_cpu_and_its_cores() {
        let line = super::host();
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert!(line.starts_with("host: ") && line.ends_with(&format!(", {cores} cores")), "{line}");
        if let Ok(info) = std::fs::read_to_string("/proc/cpuinfo")
            && info.contains("model name")
        {
            assert!(!line.contains("CPU model unknown"), "{line}");
        }
    }
}
