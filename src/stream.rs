//! Workloads of many batches, run one batch after another with one batch in memory at a time:
//! how a trace far larger than memory (or a generator of a billion lookups) runs.
//!
//! A workload with `batches = N` takes its batches from a [`Batches`] source: the next batch
//! of its `.daeidx` trace, read incrementally ([`compiler::trace::TraceReader::next_batch`]),
//! or indices drawn afresh for each batch from the batch's own seed (the tables' values stay
//! those of batch 0: one model, many requests). Each batch is compiled, simulated from a cold
//! chip and checked against its reference like a one-batch run; the batches then add up as if
//! run back to back: times, bytes, requests, events and energy add, latency histograms and
//! statistics merge exactly, the time breakdown is weighted by each batch's time. What stays
//! in memory is one batch's indices, compiled programs, reference and simulated chip, plus
//! the running sums (and the first batch's outputs, which `--dump-outputs` writes beside the
//! first batch's inputs): resident memory is bounded by the batch, not by the trace
//! (`dae-sim bench stream` measures it). Not modelled: state carried from one batch to the
//! next (cache contents), as each batch starts from a cold chip.

use crate::experiment::{Experiment, Measured, Outcome, SystemPlan};
use crate::system::RunResult;
use compiler::trace::TraceReader;
use compiler::{EmbeddingBagInstance, WorkloadSpec};
use hdrhistogram::Histogram;
use sim_core::SeedTree;
use std::fs::File;
use std::io::BufReader;
use std::time::Instant;

/// Where a workload's batches come from.
enum Source {
    /// Drawn from seeds: batch `b > 0` from the child seed `batch{b}`.
    Generated,
    /// Read from a `.daeidx` trace, batch after batch.
    Trace(Box<TraceReader<BufReader<File>>>),
}

/// The batches of one workload, produced one at a time.
pub struct Batches<'a> {
    spec: &'a WorkloadSpec,
    seeds: SeedTree,
    source: Source,
    next: u64,
    count: u64,
    /// Batch 0's table seed: every batch looks rows up in the same tables.
    table_seed: Option<u64>,
}

impl<'a> Batches<'a> {
    /// The batches of workload `spec` of experiment `exp` (`spec.batches` of them, at least one).
    pub fn open(exp: &Experiment, spec: &'a WorkloadSpec) -> Result<Self, String> {
        let source = match exp.trace_files.get(&spec.name) {
            Some(path) => {
                let mut r = TraceReader::open(path).map_err(|e| e.to_string())?;
                r.limit_rows(spec.rows);
                Source::Trace(Box::new(r))
            }
            None => Source::Generated,
        };
        Ok(Batches {
            spec,
            seeds: exp.seeds(),
            source,
            next: 0,
            count: spec.batches.max(1),
            table_seed: None,
        })
    }

    /// How many batches there are.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The next batch's inputs, `None` after the last; errors name the trace file, batch and
    /// byte offset.
    pub fn next_batch(&mut self) -> Result<Option<EmbeddingBagInstance>, String> {
        if self.next >= self.count {
            return Ok(None);
        }
        let b = self.next;
        self.next += 1;
        let mut inst = match &mut self.source {
            Source::Generated if b == 0 => EmbeddingBagInstance::generate(self.spec, &self.seeds),
            Source::Generated => {
                EmbeddingBagInstance::generate(self.spec, &self.seeds.child(&format!("batch{b}")))
            }
            Source::Trace(r) => {
                let file = r.file().to_string();
                let Some(batch) = r.next_batch().map_err(|e| e.to_string())? else {
                    return Err(format!("{file}: ends after {b} batches, {} expected", self.count));
                };
                EmbeddingBagInstance::from_trace(
                    self.spec,
                    &crate::experiment::signed(&batch.offsets),
                    &crate::experiment::signed(&batch.indices),
                    &self.seeds,
                )
                .map_err(|e| format!("{file}: batch {b}: {e}"))?
            }
        };
        match self.table_seed {
            Some(seed) => inst.table_seed = seed,
            None => self.table_seed = Some(inst.table_seed),
        }
        Ok(Some(inst))
    }
}

/// The running sums of one system over the batches so far.
enum Sums {
    /// Nothing run yet.
    Empty,
    /// A DAE or CPU system: its runs merged.
    Dae(Box<RunResult>),
    /// A GPU: its figures summed, with its merged latency histogram (the simulated GPU's).
    Gpu(Box<Measured>, Option<Histogram<u64>>),
}

/// One system's progress through the batches.
struct Running {
    sums: Sums,
    /// Why it stopped (the batch that failed), if it did.
    error: Option<String>,
    host_seconds: f64,
}

/// Adds run `next` (batch `b`) to `total` (errors say what failed; the caller names the
/// batch).
fn absorb_run(total: &mut RunResult, next: RunResult, b: u64) -> Result<(), String> {
    total.breakdown.absorb(total.sim_time as f64, &next.breakdown, next.sim_time as f64);
    total.sim_time += next.sim_time;
    total.lookups += next.lookups;
    total.bytes += next.bytes;
    total.requests += next.requests;
    total.issued_requests += next.issued_requests;
    total.instructions += next.instructions;
    total.au_requests += next.au_requests;
    total.events += next.events;
    total.lookup_latency.add(&next.lookup_latency).map_err(|e| format!("merging latencies: {e:?}"))?;
    total.stats.absorb(&next.stats).map_err(|e| format!("merging statistics: {e}"))?;
    total.activity.absorb(&next.activity);
    for w in next.warnings {
        if !total.warnings.contains(&w) {
            total.warnings.push(w);
        }
    }
    if total.verified.is_ok() {
        total.verified = next.verified.map_err(|e| format!("batch {b}: {e}"));
    }
    // The outputs stay the first batch's (all of them would grow with the trace): those of
    // the inputs `--dump-inputs` writes.
    Ok(())
}

/// Adds a GPU's figures for the next batch to `total` (errors say what failed; the caller
/// names the batch).
fn absorb_gpu(
    total: &mut Measured,
    hist: &mut Option<Histogram<u64>>,
    next: Measured,
    next_hist: Option<Histogram<u64>>,
) -> Result<(), String> {
    total.time += next.time;
    total.lookups += next.lookups;
    total.bytes += next.bytes;
    total.events += next.events;
    total.analytic_time = match (total.analytic_time, next.analytic_time) {
        (Some(a), Some(n)) => Some(a + n),
        _ => None,
    };
    if let (Some(e), Some(n)) = (&mut total.energy, &next.energy) {
        e.absorb(n);
    }
    if let (Some(h), Some(n)) = (hist.as_mut(), next_hist.as_ref()) {
        h.add(n).map_err(|e| format!("merging latencies: {e:?}"))?;
        total.latency = crate::experiment::latency_summary(h);
    }
    Ok(())
}

/// What one batch gave on one system.
enum Step {
    /// A DAE or CPU run.
    Dae(Box<RunResult>),
    /// A GPU's figures and latency histogram.
    Gpu(Box<Measured>, Option<Histogram<u64>>),
}

/// Runs batch `b` (inputs `inst`) on every system of `exp`.
fn run_batch(
    exp: &Experiment,
    spec: &WorkloadSpec,
    inst: &EmbeddingBagInstance,
) -> Vec<(Result<Step, String>, f64)> {
    let seeds = exp.seeds();
    let reference = inst.reference(spec);
    exp.systems
        .iter()
        .map(|(_, plan)| {
            let t0 = Instant::now();
            let step = match plan {
                SystemPlan::Dae(sys) => {
                    crate::experiment::run_dae(&seeds, exp.time_limit(inst), sys, spec, inst, &reference)
                        .map(|r| Step::Dae(Box::new(r)))
                }
                SystemPlan::Gpu(g) => crate::experiment::run_gpu(&seeds, exp.time_limit(inst), g, spec, inst)
                    .map(|(m, h)| Step::Gpu(Box::new(m), h)),
            };
            (step, t0.elapsed().as_secs_f64())
        })
        .collect()
}

impl Running {
    /// Adds batch `b`'s step (which took `host` seconds).
    fn absorb(&mut self, step: Result<Step, String>, host: f64, b: u64) {
        self.host_seconds += host;
        if self.error.is_some() {
            return;
        }
        let merged = step.and_then(|step| match (&mut self.sums, step) {
            (Sums::Dae(total), Step::Dae(next)) => absorb_run(total, *next, b),
            (Sums::Gpu(total, hist), Step::Gpu(next, h)) => absorb_gpu(total, hist, *next, h),
            (Sums::Empty, Step::Dae(next)) => {
                self.sums = Sums::Dae(next);
                Ok(())
            }
            (Sums::Empty, Step::Gpu(next, h)) => {
                self.sums = Sums::Gpu(next, h);
                Ok(())
            }
            _ => Err("a system changed kind between batches".to_string()),
        });
        if let Err(e) = merged {
            self.error = Some(format!("batch {b}: {e}"));
        }
    }
}

/// Reads the batches of workload `spec` of `exp` and hands each to `work` on one of `threads`
/// worker threads, then its result to `merge(batch, result, count)` in batch order (so the
/// merge does not depend on the threads). At most `threads` batches wait for a worker, as many
/// run, and the finished ones wait for the merge: memory stays bounded by a few batches. An
/// error reading the inputs ends it after the batches before it are merged.
fn pipeline<T: Send>(
    exp: &Experiment,
    spec: &WorkloadSpec,
    threads: usize,
    work: impl Fn(&Experiment, &WorkloadSpec, &EmbeddingBagInstance) -> T + Sync,
    mut merge: impl FnMut(u64, T, u64),
) -> Result<(), String> {
    let mut batches = Batches::open(exp, spec)?;
    let count = batches.count();
    let threads = threads.max(1);
    let (work_tx, work_rx) = crossbeam::channel::bounded::<(u64, EmbeddingBagInstance)>(threads);
    let (done_tx, done_rx) = crossbeam::channel::bounded(threads);
    let work = &work;
    std::thread::scope(|scope| {
        for _ in 0..threads {
            let (work_rx, done_tx) = (work_rx.clone(), done_tx.clone());
            scope.spawn(move || {
                for (b, inst) in work_rx {
                    if done_tx.send((b, work(exp, spec, &inst))).is_err() {
                        return;
                    }
                }
            });
        }
        drop((work_rx, done_tx));
        let reader = scope.spawn(move || {
            let mut b = 0;
            loop {
                match batches.next_batch() {
                    Ok(Some(inst)) => {
                        if work_tx.send((b, inst)).is_err() {
                            return Ok(());
                        }
                        b += 1;
                    }
                    Ok(None) => return Ok(()),
                    Err(e) => return Err(e),
                }
            }
        });
        let mut pending = std::collections::BTreeMap::new();
        let mut next = 0;
        for (b, result) in done_rx {
            pending.insert(b, result);
            while let Some(result) = pending.remove(&next) {
                merge(next, result, count);
                next += 1;
            }
        }
        reader.join().unwrap_or_else(|_| Err("the batch reader panicked".to_string()))
    })
}

/// What [`check_workload`] found.
#[derive(Debug, Clone, PartialEq)]
pub struct FunctionalSummary {
    /// Batches read.
    pub batches: u64,
    /// Lookups in them.
    pub lookups: u64,
    /// Sum of every reference output, summed in batch order: a fingerprint of the inputs.
    pub output_sum: f64,
}

/// The functional pass of a workload of many batches, without timing: each batch is read (or
/// drawn), its reference outputs computed and its programs compiled for every DAE or CPU
/// system of `exp`, on `threads` threads. What a trace far too long to simulate can still be
/// checked with; `dae-sim bench stream --functional` measures its memory.
pub fn check_workload(
    exp: &Experiment,
    spec: &WorkloadSpec,
    threads: usize,
    mut on_batch: impl FnMut(u64, u64),
) -> Result<FunctionalSummary, String> {
    let check =
        |exp: &Experiment, spec: &WorkloadSpec, inst: &EmbeddingBagInstance| -> Result<(u64, f64), String> {
            let reference = inst.reference(spec);
            for (name, plan) in &exp.systems {
                if let SystemPlan::Dae(sys) = plan {
                    compiler::compile(spec, inst.clone(), sys.target_info())
                        .map_err(|e| format!("{name}: compile: {e}"))?;
                }
            }
            Ok((inst.indices.len() as u64, reference.iter().map(|&x| f64::from(x)).sum()))
        };
    let mut sum = FunctionalSummary { batches: 0, lookups: 0, output_sum: 0.0 };
    let mut first_error = None;
    pipeline(exp, spec, threads, check, |b, result, count| {
        match result {
            Ok((lookups, x)) if first_error.is_none() => {
                sum.batches += 1;
                sum.lookups += lookups;
                sum.output_sum += x;
            }
            Ok(_) => {}
            Err(e) => {
                first_error.get_or_insert(format!("batch {b}: {e}"));
            }
        }
        on_batch(b + 1, count);
    })?;
    match first_error {
        Some(e) => Err(e),
        None => Ok(sum),
    }
}

/// Runs workload `spec` of `exp`, batch after batch, on every system, with `threads` batches
/// in flight at once; `on_batch(done, count)` hears after each batch. Batches are merged in
/// their order whatever the threads, so the results do not depend on them. A system whose
/// batch fails stops there with the error (naming the batch); the others go on. A trace that
/// turns out bad part-way stops every system still running with its error.
pub fn run_workload(
    exp: &Experiment,
    spec: &WorkloadSpec,
    threads: usize,
    mut on_batch: impl FnMut(u64, u64),
) -> Vec<Outcome> {
    let mut running: Vec<Running> =
        exp.systems.iter().map(|_| Running { sums: Sums::Empty, error: None, host_seconds: 0.0 }).collect();
    let merged = pipeline(exp, spec, threads, run_batch, |b, steps, count| {
        for (r, (step, host)) in running.iter_mut().zip(steps) {
            r.absorb(step, host, b);
        }
        on_batch(b + 1, count);
    });
    if let Err(e) = merged {
        for r in running.iter_mut().filter(|r| r.error.is_none()) {
            r.error = Some(e.clone());
        }
    }
    exp.systems
        .iter()
        .zip(running)
        .map(|((name, plan), r)| {
            let result = match (r.error, r.sums, plan) {
                (Some(e), _, _) => Err(e),
                (None, Sums::Dae(total), SystemPlan::Dae(sys)) => {
                    Ok(crate::experiment::measured(sys, *total))
                }
                (None, Sums::Gpu(total, _), _) => Ok(*total),
                (None, _, _) => Err("no batch ran".to_string()),
            };
            Outcome::of(exp, name, plan, spec, result, r.host_seconds)
        })
        .collect()
}

/// The process's peak resident memory so far in bytes (`VmHWM` of `/proc/self/status`), where
/// the host has it.
pub fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.trim_start_matches("VmHWM:").trim().trim_end_matches("kB").trim().parse().ok()?;
    Some(kib * 1024)
}
