//! The `dae-sim` command line.

use anyhow::{Context, Result, anyhow, bail};
use clap::{Args, Parser, Subcommand, ValueEnum};
use dae_sim::config::Document;
use dae_sim::experiment::{self, Experiment, Overrides};
use dae_sim::report;
use sim_core::SeedTree;
use std::path::PathBuf;
use std::process::ExitCode;

const EXAMPLES: &str = "\
Examples:
  dae-sim --config configs/h100-vs-dae.toml            run an experiment: table + out/<name>/results.json
  dae-sim --config configs/h100-vs-dae.toml --seed 7   same experiment, other random indices
  dae-sim compile --workload configs/workloads/emb-small.toml --emit au
  dae-sim bench engine                                 events per second of the simulation engine";

/// Cycle-level simulator of Decoupled Access-Execute processors for embedding operations.
#[derive(Parser, Debug)]
#[command(name = "dae-sim", version, after_help = EXAMPLES)]
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
    /// Measure the simulator's own speed.
    Bench {
        /// What to measure.
        #[arg(value_enum)]
        what: BenchTarget,
    },
}

#[derive(Args, Debug, Clone, Default)]
struct RunArgs {
    /// Experiment config file.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Output directory (default: the config's `experiment.output`, else out/<name>).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Master seed (overrides `experiment.seed`).
    #[arg(long, value_name = "N")]
    seed: Option<u64>,
    /// Print only the table.
    #[arg(long)]
    quiet: bool,
}

#[derive(Args, Debug)]
struct CompileArgs {
    /// Workload file.
    #[arg(long, value_name = "FILE")]
    workload: PathBuf,
    /// Cores to partition the work over.
    #[arg(long, default_value_t = 1)]
    cores: u32,
    /// Which core's programs to print.
    #[arg(long, default_value_t = 0)]
    core_index: usize,
    /// Target cores without access units (prints the loop program the core runs alone).
    #[arg(long)]
    core_only: bool,
    /// f32 lanes per vector register.
    #[arg(long, default_value_t = 16)]
    lanes: u32,
    /// Seed of the workload's indices.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// What to print.
    #[arg(long, value_enum, default_value_t = Emit::All)]
    emit: Emit,
}

#[derive(ValueEnum, Clone, Copy, Debug)]
enum Emit {
    Au,
    Core,
    All,
}

#[derive(ValueEnum, Clone, Copy, Debug)]
enum BenchTarget {
    /// Events per second: a ping-pong pair and a 64-leaf fan-out/fan-in.
    Engine,
}

fn run(args: &RunArgs) -> Result<bool> {
    let Some(config) = &args.config else {
        bail!("no experiment given: use --config FILE (for example --config configs/h100-vs-dae.toml)");
    };
    let overrides = Overrides { seed: args.seed, out: args.out.clone() };
    let exp = Experiment::load(config, &overrides)?;
    let pairs = exp.systems.len() * exp.file.workload.len();
    let mut done = 0;
    let outcomes = experiment::run(&exp, |o| {
        done += 1;
        if !args.quiet {
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
            eprintln!("[{done}/{pairs}] {} on {} ({}): {detail}", o.workload, o.system, o.model);
        }
    });
    print!("{}", report::table(&exp, &outcomes));
    let path = report::write_json(&exp.out_dir, "results.json", &report::json(&exp, &outcomes))
        .with_context(|| format!("writing results into {}", exp.out_dir.display()))?;
    if !args.quiet {
        eprintln!("results: {}", path.display());
    }
    let ok = outcomes.iter().all(|o| matches!(&o.result, Ok(m) if !matches!(m.verified, Some(Err(_)))));
    for o in &outcomes {
        match &o.result {
            Err(e) => eprintln!("error: {} on {}: {e}", o.workload, o.system),
            Ok(m) => {
                if let Some(Err(e)) = &m.verified {
                    eprintln!(
                        "error: {} on {}: outputs differ from the reference: {e}",
                        o.workload, o.system
                    );
                }
            }
        }
    }
    Ok(ok)
}

fn compile(args: &CompileArgs) -> Result<()> {
    let doc = Document::load(&args.workload)?;
    let spec: compiler::WorkloadSpec = doc.deserialize()?;
    spec.validate().map_err(|e| doc.error_at(e.field, e.message.clone()))?;
    let inst = compiler::EmbeddingBagInstance::generate(&spec, &SeedTree::new(args.seed));
    let target = compiler::TargetInfo {
        target: if args.core_only { compiler::Target::CoreOnly } else { compiler::Target::Decoupled },
        cores: args.cores,
        vector_lanes: args.lanes,
    };
    let compiled = compiler::compile(&spec, inst, target)?;
    let job = compiled
        .jobs
        .get(args.core_index)
        .ok_or_else(|| anyhow!("--core-index {} is not below --cores {}", args.core_index, args.cores))?;
    if let (Emit::Au | Emit::All, Some(au)) = (args.emit, &job.au) {
        print!("{au}");
    }
    if let Emit::Core | Emit::All = args.emit {
        print!("{}", exec_core::print(&job.core));
    }
    Ok(())
}

fn bench_engine() -> Result<()> {
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
    println!("engine, median of {reps} runs, one thread:");
    println!("  ping-pong pair          {:>7.1} M events/s", median(pp) / 1e6);
    println!("  fan-out/fan-in, 64 leaves {:>5.1} M events/s", median(fan) / 1e6);
    Ok(())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match &cli.command {
        None => run(&cli.run),
        Some(Command::Run(args)) => run(args),
        Some(Command::Compile(args)) => compile(args).map(|()| true),
        Some(Command::Bench { what: BenchTarget::Engine }) => bench_engine().map(|()| true),
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}
