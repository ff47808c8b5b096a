//! Reports: the terminal table and `results.json`.
//!
//! `results.json` holds only simulated figures (no host timings), so the same config and seed
//! give a byte-identical file. It is written to a temporary file and renamed into place, so an
//! interrupted run never leaves a truncated one.

use crate::experiment::{Experiment, LATENCY_BIN_EDGES, Measured, MlpProfile, Outcome};
use serde_json::{Value, json};
use sim_core::PS_PER_SECOND;
use std::fmt::Write;
use std::io;
use std::path::{Path, PathBuf};

/// Simulated time in a readable unit.
pub fn fmt_time(ps: u64) -> String {
    let ps = ps as f64;
    match ps {
        p if p >= 1e12 => format!("{:.3} s", p / 1e12),
        p if p >= 1e9 => format!("{:.3} ms", p / 1e9),
        p if p >= 1e6 => format!("{:.3} us", p / 1e6),
        p => format!("{:.1} ns", p / 1e3),
    }
}

fn fmt_rate(per_s: f64) -> String {
    match per_s {
        r if r >= 1e9 => format!("{:.2} G", r / 1e9),
        r if r >= 1e6 => format!("{:.2} M", r / 1e6),
        r if r >= 1e3 => format!("{:.2} k", r / 1e3),
        r => format!("{r:.0}"),
    }
}

fn per_second(count: u64, ps: u64) -> f64 {
    if ps == 0 { 0.0 } else { count as f64 * PS_PER_SECOND as f64 / ps as f64 }
}

/// Speedup of each outcome over the baseline system on the same workload.
fn speedup(exp: &Experiment, all: &[Outcome], o: &Outcome) -> Option<f64> {
    let base = exp.file.report.baseline.as_ref()?;
    let b = all.iter().find(|b| &b.system == base && b.workload == o.workload)?;
    match (&b.result, &o.result) {
        (Ok(b), Ok(m)) if m.time > 0 => Some(b.time as f64 / m.time as f64),
        _ => None,
    }
}

/// Lookups per second per watt of a measured pair (`None` without power figures).
fn perf_per_watt(m: &Measured) -> Option<f64> {
    let e = m.energy.as_ref()?;
    let w = e.average_w();
    (w > 0.0 && m.time > 0).then(|| per_second(m.lookups, m.time) / w)
}

/// Performance per watt of each outcome over the baseline system's on the same workload.
fn perf_per_watt_ratio(exp: &Experiment, all: &[Outcome], o: &Outcome) -> Option<f64> {
    let base = exp.file.report.baseline.as_ref()?;
    let b = all.iter().find(|b| &b.system == base && b.workload == o.workload)?;
    match (&b.result, &o.result) {
        (Ok(b), Ok(m)) => Some(perf_per_watt(m)? / perf_per_watt(b)?),
        _ => None,
    }
}

/// The memory bandwidth a pair achieved as a share of its memory's peak.
fn peak_share(m: &Measured) -> Option<f64> {
    (m.peak_bytes_per_second > 0.0 && m.time > 0)
        .then(|| per_second(m.bytes, m.time) / m.peak_bytes_per_second)
}

/// Energy per lookup in nJ (`None` without power figures or lookups).
fn nj_per_lookup(m: &Measured) -> Option<f64> {
    let e = m.energy.as_ref()?;
    (m.lookups > 0).then(|| e.total_j() * 1e9 / m.lookups as f64)
}

/// One system's geometric means over the workloads, relative to the baseline, with how many
/// workloads each covers: a pair that failed (or has no power figures) has no ratio, and a mean
/// over fewer workloads than the system ran says so rather than passing for the whole set.
struct Geomean {
    system: String,
    speedup: Option<f64>,
    perf_per_watt: Option<f64>,
    /// Workloads with a speedup and with a perf/W ratio.
    with_speedup: usize,
    with_perf_per_watt: usize,
    /// Workloads the system ran (failed ones included).
    workloads: usize,
}

impl Geomean {
    /// " (over N of M workloads)" for a mean that leaves some out, else nothing.
    fn coverage(n: usize, of: usize) -> String {
        if n < of { format!(" (over {n} of {of} workloads)") } else { String::new() }
    }
}

/// Per system other than the baseline: geometric means over the workloads of the speedup and
/// of perf/W relative to the baseline.
fn geomeans(exp: &Experiment, all: &[Outcome]) -> Vec<Geomean> {
    let mut systems: Vec<&str> = Vec::new();
    for o in all {
        if !systems.contains(&o.system.as_str()) && exp.file.report.baseline.as_deref() != Some(&o.system) {
            systems.push(&o.system);
        }
    }
    systems
        .into_iter()
        .map(|sys| {
            let of = |f: &dyn Fn(&Outcome) -> Option<f64>| {
                let v: Vec<f64> = all.iter().filter(|o| o.system == sys).filter_map(f).collect();
                (geomean(&v), v.len())
            };
            let (speedup, with_speedup) = of(&|o| speedup(exp, all, o));
            let (perf_per_watt, with_perf_per_watt) = of(&|o| perf_per_watt_ratio(exp, all, o));
            Geomean {
                system: sys.to_string(),
                speedup,
                perf_per_watt,
                with_speedup,
                with_perf_per_watt,
                workloads: all.iter().filter(|o| o.system == sys).count(),
            }
        })
        .collect()
}

/// Every system's speedup and perf/W over the baseline, per workload and as geometric means:
/// what the bar plot draws.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    /// The baseline system.
    pub baseline: String,
    /// Workloads, in run order.
    pub workloads: Vec<String>,
    /// Per system other than the baseline: name, then per workload (in `workloads` order) the
    /// speedup and the perf/W ratio, then their geometric means.
    pub systems: Vec<SystemComparison>,
}

/// One system's figures in a [`Comparison`].
#[derive(Debug, Clone, PartialEq)]
pub struct SystemComparison {
    /// The system.
    pub name: String,
    /// Speedup over the baseline per workload.
    pub speedup: Vec<Option<f64>>,
    /// Perf/W over the baseline's per workload.
    pub perf_per_watt: Vec<Option<f64>>,
    /// Geometric mean of the speedups.
    pub geomean_speedup: Option<f64>,
    /// Geometric mean of the perf/W ratios.
    pub geomean_perf_per_watt: Option<f64>,
}

/// The comparison in `results.json`'s figures (`None` without a baseline): one reading serves the
/// run that wrote them and `dae-sim plot` later.
pub fn comparison_from_json(v: &Value) -> Option<Comparison> {
    let baseline = v["baseline"].as_str()?.to_string();
    let runs = v["runs"].as_array()?;
    let mut workloads: Vec<String> = Vec::new();
    let mut names: Vec<String> = Vec::new();
    for r in runs {
        let (s, w) = (r["system"].as_str()?.to_string(), r["workload"].as_str()?.to_string());
        if !workloads.contains(&w) {
            workloads.push(w);
        }
        if s != baseline && !names.contains(&s) {
            names.push(s);
        }
    }
    let systems = names
        .into_iter()
        .map(|name| {
            let of = |w: &String, key: &str| {
                runs.iter()
                    .find(|r| r["system"] == name.as_str() && r["workload"] == w.as_str())
                    .and_then(|r| r[key].as_f64())
            };
            let g = &v["geomean_vs_baseline"][&name];
            SystemComparison {
                speedup: workloads.iter().map(|w| of(w, "speedup_vs_baseline")).collect(),
                perf_per_watt: workloads.iter().map(|w| of(w, "perf_per_watt_vs_baseline")).collect(),
                geomean_speedup: g["speedup"].as_f64(),
                geomean_perf_per_watt: g["perf_per_watt"].as_f64(),
                name,
            }
        })
        .collect();
    Some(Comparison { baseline, workloads, systems })
}

/// The terminal table.
pub fn table(exp: &Experiment, all: &[Outcome]) -> String {
    let base = exp.file.report.baseline.clone().unwrap_or_default();
    let header = [
        "system".to_string(),
        "workload".into(),
        "model".into(),
        "sim time".into(),
        "lookups/s".into(),
        "GB/s".into(),
        "% peak".into(),
        "p50 lat".into(),
        "p99 lat".into(),
        if base.is_empty() { "speedup".into() } else { format!("vs {base}") },
        "power W".into(),
        "nJ/lookup".into(),
        "lookups/s/W".into(),
        if base.is_empty() { "perf/W".into() } else { format!("perf/W vs {base}") },
        // Last, so a row's verdict ends the line.
        "verified".into(),
    ];
    let mut rows = vec![header.to_vec()];
    for o in all {
        let mut r = vec![o.system.clone(), o.workload.clone(), o.model.to_string()];
        match &o.result {
            Ok(m) => {
                r.push(fmt_time(m.time));
                r.push(fmt_rate(per_second(m.lookups, m.time)));
                r.push(format!("{:.1}", per_second(m.bytes, m.time) / 1e9));
                r.push(peak_share(m).map_or("-".into(), |p| format!("{:.1}%", 100.0 * p)));
                r.push(m.latency.map_or("n/a".into(), |l| fmt_time(l.0)));
                r.push(m.latency.map_or("n/a".into(), |l| fmt_time(l.1)));
                r.push(speedup(exp, all, o).map_or("-".into(), |s| format!("{s:.2}x")));
                let dash = || "-".to_string();
                r.push(m.energy.as_ref().map_or_else(dash, |e| format!("{:.1}", e.average_w())));
                r.push(nj_per_lookup(m).map_or_else(dash, |n| format!("{n:.2}")));
                r.push(perf_per_watt(m).map_or_else(dash, fmt_rate));
                r.push(perf_per_watt_ratio(exp, all, o).map_or_else(dash, |x| format!("{x:.2}x")));
                r.push(match &m.verified {
                    Some(Ok(())) => "verified".into(),
                    Some(Err(_)) => "MISMATCH".into(),
                    None => "n/a".into(),
                });
            }
            Err(_) => {
                // The reason goes below the table, where a long message cannot widen a column.
                r.push("FAILED".into());
                r.extend(std::iter::repeat_n(String::new(), 11));
            }
        }
        rows.push(r);
    }
    let mut t = layout(&rows);
    for o in all {
        if let Err(e) = &o.result {
            let _ = writeln!(t, "FAILED {} on {}: {}", o.workload, o.system, e.lines().next().unwrap_or(""));
        }
    }
    if !base.is_empty() {
        for g in geomeans(exp, all) {
            let x = |v: Option<f64>, n: usize| {
                v.map_or("-".into(), |v| format!("{v:.2}x{}", Geomean::coverage(n, g.workloads)))
            };
            let _ = writeln!(
                t,
                "geomean {} vs {base}: speedup {}, perf/W {}",
                g.system,
                x(g.speedup, g.with_speedup),
                x(g.perf_per_watt, g.with_perf_per_watt)
            );
        }
    }
    t.push_str(&gpu_cross_check(all));
    t.push_str(&end_to_end_table(exp, all));
    t.push_str(&energy_table(all));
    t.push_str(&mlp_table(all));
    t.push_str(&breakdown_table(all));
    if exp.file.report.steps {
        t.push_str(&steps_table(all));
    }
    t
}

/// End-to-end time: the embedding operation then the dense layers (`None` without them).
pub fn end_to_end(m: &Measured) -> Option<u64> {
    // Saturating: a config may give overheads up to the clock's limit.
    m.dense_time.map(|d| m.time.saturating_add(d))
}

/// End-to-end speedup over the baseline on the same workload.
fn end_to_end_speedup(exp: &Experiment, all: &[Outcome], o: &Outcome) -> Option<f64> {
    let base = exp.file.report.baseline.as_ref()?;
    let b = all.iter().find(|x| &x.system == base && x.workload == o.workload)?;
    let (Ok(bm), Ok(m)) = (&b.result, &o.result) else { return None };
    Some(end_to_end(bm)? as f64 / end_to_end(m)?.max(1) as f64)
}

/// The end-to-end table: embedding time, dense time, their sum and the embedding's share
/// (empty when no workload has dense layers on a system with dense units).
fn end_to_end_table(exp: &Experiment, all: &[Outcome]) -> String {
    let base = exp.file.report.baseline.clone().unwrap_or_default();
    let vs = if base.is_empty() { "-".to_string() } else { format!("vs {base}") };
    let mut rows = vec![
        ["system", "workload", "embedding", "dense", "end-to-end", "embedding share", vs.as_str()]
            .map(String::from)
            .to_vec(),
    ];
    for o in all {
        let Ok(m) = &o.result else { continue };
        let (Some(d), Some(total)) = (m.dense_time, end_to_end(m)) else { continue };
        rows.push(vec![
            o.system.clone(),
            o.workload.clone(),
            fmt_time(m.time),
            fmt_time(d),
            fmt_time(total),
            format!("{:.0}%", 100.0 * m.time as f64 / total.max(1) as f64),
            end_to_end_speedup(exp, all, o).map_or("-".into(), |x| format!("{x:.2}x")),
        ]);
    }
    if rows.len() == 1 {
        return String::new();
    }
    format!("\nEnd to end (dense layers as a roofline on each system's dense units):\n{}", layout(&rows))
}

/// How far a GPU simulation may stray from its analytic estimate before the report warns.
pub const CROSS_CHECK_TOLERANCE: f64 = 0.25;

/// A simulated GPU's time over its analytic estimate (`None` where there is no estimate).
pub fn sim_over_analytic(m: &Measured) -> Option<f64> {
    m.analytic_time.filter(|&a| a > 0).map(|a| m.time as f64 / a as f64)
}

/// The cycle-level GPU beside its analytic estimate, with a warning where they differ by more
/// than [`CROSS_CHECK_TOLERANCE`] (empty when no GPU was simulated).
fn gpu_cross_check(all: &[Outcome]) -> String {
    let mut rows =
        vec![["system", "workload", "simulated", "analytic", "ratio", ""].map(String::from).to_vec()];
    for o in all {
        let Ok(m) = &o.result else { continue };
        let (Some(a), Some(r)) = (m.analytic_time, sim_over_analytic(m)) else { continue };
        let warn =
            if (r - 1.0).abs() > CROSS_CHECK_TOLERANCE { "WARNING: differ by more than 25%" } else { "" };
        rows.push(vec![
            o.system.clone(),
            o.workload.clone(),
            fmt_time(m.time),
            fmt_time(a),
            format!("{r:.2}x"),
            warn.into(),
        ]);
    }
    if rows.len() == 1 {
        return String::new();
    }
    format!("\nGPU: cycle-level model beside the analytic estimate (time):\n{}", layout(&rows))
}

/// Geometric mean (`None` for no values).
fn geomean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| (v.iter().map(|x| x.ln()).sum::<f64>() / v.len() as f64).exp())
}

/// The ladder: per workload, each system against the one before it (step) and the first
/// (cumulative), with compute and access throughput as fractions of peak; geometric means of
/// the speedups over the workloads.
fn steps_table(all: &[Outcome]) -> String {
    let mut rows = vec![
        ["workload", "system", "sim time", "step", "cumulative", "compute", "access"]
            .map(String::from)
            .to_vec(),
    ];
    let mut workloads: Vec<&str> = Vec::new();
    for o in all {
        if !workloads.contains(&o.workload.as_str()) {
            workloads.push(&o.workload);
        }
    }
    // Per system (by position in the ladder): step and cumulative speedups over workloads.
    let mut step_speedups: Vec<(String, Vec<f64>, Vec<f64>)> = Vec::new();
    for w in workloads {
        let runs: Vec<&Outcome> = all.iter().filter(|o| o.workload == w).collect();
        let first = runs.first().and_then(|o| o.result.as_ref().ok()).map(|m| m.time);
        let mut prev: Option<u64> = None;
        for (i, o) in runs.iter().enumerate() {
            let Ok(m) = &o.result else {
                rows.push(vec![w.to_string(), o.system.clone(), "FAILED".into()]);
                prev = None;
                continue;
            };
            let ratio = |base: Option<u64>| base.filter(|_| m.time > 0).map(|b| b as f64 / m.time as f64);
            let (step, cum) = (ratio(prev), ratio(first));
            if step_speedups.len() <= i {
                step_speedups.push((o.system.clone(), Vec::new(), Vec::new()));
            }
            if i > 0 {
                step_speedups[i].1.extend(step);
                step_speedups[i].2.extend(cum);
            }
            let pct = |x: Option<f64>| x.map_or("-".into(), |x| format!("{:.1}%", 100.0 * x));
            let (compute, access) = match &m.mlp {
                Some(p) => (pct(Some(p.compute_utilization)), pct(Some(p.access_utilization))),
                None => ("-".into(), "-".into()),
            };
            let x = |s: Option<f64>| {
                if i == 0 { "-".into() } else { s.map_or("-".into(), |s| format!("{s:.2}x")) }
            };
            rows.push(vec![
                w.to_string(),
                o.system.clone(),
                fmt_time(m.time),
                x(step),
                x(cum),
                compute,
                access,
            ]);
            prev = Some(m.time);
        }
    }
    for (system, steps, cums) in step_speedups.iter().skip(1) {
        let g = |v: &[f64]| geomean(v).map_or("-".into(), |g| format!("{g:.2}x"));
        rows.push(vec!["geomean".into(), system.clone(), String::new(), g(steps), g(cums)]);
    }
    format!(
        "\nSteps: each system against the one before it and the first; throughput as % of peak:\n{}",
        layout(&rows)
    )
}

/// Lays out `rows` (the first is the header) in aligned columns.
fn layout(rows: &[Vec<String>]) -> String {
    let cols = rows.first().map_or(0, Vec::len);
    let widths: Vec<usize> =
        (0..cols).map(|c| rows.iter().map(|r| r.get(c).map_or(0, |s| s.len())).max().unwrap_or(0)).collect();
    let mut t = String::new();
    for (i, r) in rows.iter().enumerate() {
        let cells: Vec<String> = r.iter().zip(&widths).map(|(s, w)| format!("{s:<w$}")).collect();
        let _ = writeln!(t, "{}", cells.join("  ").trim_end());
        if i == 0 {
            let _ = writeln!(t, "{}", "-".repeat(widths.iter().sum::<usize>() + 2 * (cols.max(1) - 1)));
        }
    }
    t
}

/// Energy per lookup by component, in nJ (empty when no run has power figures).
fn energy_table(all: &[Outcome]) -> String {
    let mut names: Vec<String> = Vec::new();
    for o in all {
        if let Ok(Measured { energy: Some(e), .. }) = &o.result {
            for (n, _, _) in &e.components {
                if !names.contains(n) {
                    names.push(n.clone());
                }
            }
        }
    }
    if names.is_empty() {
        return String::new();
    }
    let mut header = vec!["system".to_string(), "workload".into(), "static %".into()];
    header.extend(names.iter().cloned());
    let mut rows = vec![header];
    for o in all {
        let Ok(m @ Measured { energy: Some(e), .. }) = &o.result else { continue };
        let per =
            |j: f64| if m.lookups == 0 { "-".into() } else { format!("{:.2}", j * 1e9 / m.lookups as f64) };
        let total = e.total_j();
        let mut r = vec![
            o.system.clone(),
            o.workload.clone(),
            if total > 0.0 { format!("{:.0}%", 100.0 * e.static_j() / total) } else { "-".into() },
        ];
        for n in &names {
            r.push(e.components.iter().find(|(c, _, _)| c == n).map_or("-".into(), |(_, s, d)| per(s + d)));
        }
        rows.push(r);
    }
    let mut t = format!("\nEnergy per lookup by component, nJ (static and dynamic):\n{}", layout(&rows));
    // The GPU's power model caps energy at TDP x time without slowing the kernel: say where it
    // did, since the perf/W of those runs is flattered by the cap.
    for o in all {
        if let Ok(Measured { energy: Some(e), .. }) = &o.result
            && e.tdp_bound
        {
            let _ = writeln!(
                t,
                "note: {} on {} reached its TDP: energy is capped at TDP x time and the kernel is not \
                 slowed (perf/W is optimistic)",
                o.workload, o.system
            );
        }
    }
    t
}

/// The JSON form of an energy report.
fn energy_json(m: &Measured, e: &crate::power::EnergyReport) -> Value {
    let components: serde_json::Map<String, Value> = e
        .components
        .iter()
        .map(|(n, s, d)| (n.clone(), json!({ "static_j": s, "dynamic_j": d, "total_j": s + d })))
        .collect();
    json!({
        "average_power_w": e.average_w(),
        "energy_j": e.total_j(),
        "static_energy_j": e.static_j(),
        "energy_per_lookup_nj": nj_per_lookup(m),
        "lookups_per_second_per_watt": perf_per_watt(m),
        "tdp_bound": e.tdp_bound,
        "components": components,
    })
}

/// The memory-level-parallelism table of the cycle-level runs (empty when there are none).
fn mlp_table(all: &[Outcome]) -> String {
    let mut rows = vec![
        ["system", "workload", "mean lat", ">10x", ">100x", "in flight/core", "mem util", "mem util/core"]
            .map(String::from)
            .to_vec(),
    ];
    let mut unit = "";
    for o in all {
        let Ok(Measured { mlp: Some(p), latency, .. }) = &o.result else { continue };
        unit = p.unit;
        // Without timed lookups the latency figures (and Little's law's lookups in flight) are
        // unknown, not zero.
        let timed = |text: String| if latency.is_some() { text } else { "n/a".into() };
        rows.push(vec![
            o.system.clone(),
            o.workload.clone(),
            timed(format!("{:.1}x", p.mean_units)),
            timed(format!("{:.0}%", 100.0 * p.above_10x)),
            timed(format!("{:.0}%", 100.0 * p.above_100x)),
            timed(format!("{:.1}", p.in_flight_per_core)),
            format!("{:.1}%", 100.0 * p.hbm_utilization),
            format!("{:.2}%", 100.0 * p.hbm_utilization_per_core),
        ]);
    }
    if rows.len() == 1 {
        return String::new();
    }
    format!(
        "\nLookup latency in multiples of the {unit} latency, lookups in flight, memory bandwidth used:\n{}",
        layout(&rows)
    )
}

/// Where the cycle-level runs' time went (empty when there are none).
fn breakdown_table(all: &[Outcome]) -> String {
    let mut rows = vec![
        [
            "system",
            "workload",
            "dispatch",
            "memory",
            "q empty",
            "mispred",
            "done",
            "| AU work",
            "storage",
            "req limit",
            "q full",
            "done",
        ]
        .map(String::from)
        .to_vec(),
    ];
    let pct = |v: f64| format!("{:.0}%", 100.0 * v);
    for o in all {
        let Ok(Measured { breakdown: Some(b), .. }) = &o.result else { continue };
        let c = &b.core;
        let mut row = vec![o.system.clone(), o.workload.clone()];
        row.extend([c.dispatching, c.memory, c.queue_empty, c.mispredict, c.done].map(pct));
        match &b.access_unit {
            Some(a) => {
                row.push(format!("| {}", pct(a.working)));
                row.extend([a.storage_full, a.request_limit, a.queue_full, a.done].map(pct));
            }
            None => row.extend(["| -", "-", "-", "-", "-"].map(String::from)),
        }
        rows.push(row);
    }
    if rows.len() == 1 {
        return String::new();
    }
    format!(
        "\nWhere the time went (shares of the run, averaged over the cores and over the access units):\n{}",
        layout(&rows)
    )
}

/// The JSON form of a memory-level-parallelism profile.
fn mlp_json(p: &MlpProfile) -> Value {
    json!({
        "latency_unit": p.unit,
        "latency_unit_ps": p.unit_ps,
        // Bin i holds the lookups above edge i - 1 and at most edge i (the last bin is open).
        "lookup_latency_bin_edges": LATENCY_BIN_EDGES,
        "lookup_latency_bins": p.bins,
        // [units, fraction of lookups at or below], log-spaced from 1x to 2000x.
        "lookup_latency_cdf": p.latency_cdf,
        "above_10x": p.above_10x,
        "above_100x": p.above_100x,
        "mean_latency_units": p.mean_units,
        "in_flight_lookups_per_core": p.in_flight_per_core,
        "memory_utilization": p.hbm_utilization,
        "memory_utilization_per_core": p.hbm_utilization_per_core,
        "compute_utilization": p.compute_utilization,
        "access_utilization": p.access_utilization,
    })
}

/// The content of `results.json`.
pub fn json(exp: &Experiment, all: &[Outcome]) -> Value {
    let runs: Vec<Value> = all
        .iter()
        .map(|o| {
            let mut v = json!({ "system": o.system, "workload": o.workload, "model": o.model });
            // Batches run back to back ([`crate::stream`]): the figures are their sums.
            let batches =
                exp.file.workload.iter().find(|w| w.name == o.workload).map_or(1, |w| w.batches.max(1));
            v["batches"] = json!(batches);
            match &o.result {
                Ok(m) => {
                    v["sim_time_ps"] = json!(m.time);
                    v["lookups"] = json!(m.lookups);
                    v["lookups_per_second"] = json!(per_second(m.lookups, m.time));
                    v["bytes"] = json!(m.bytes);
                    v["achieved_gb_per_s"] = json!(per_second(m.bytes, m.time) / 1e9);
                    v["peak_bandwidth_share"] = json!(peak_share(m));
                    if let (Some(d), Some(total)) = (m.dense_time, end_to_end(m)) {
                        v["dense_time_ps"] = json!(d);
                        v["end_to_end_time_ps"] = json!(total);
                        v["end_to_end_speedup_vs_baseline"] = json!(end_to_end_speedup(exp, all, o));
                    }
                    if let Some(a) = m.analytic_time {
                        v["analytic_time_ps"] = json!(a);
                        v["sim_over_analytic"] = json!(sim_over_analytic(m));
                    }
                    v["lookup_latency_ps"] =
                        m.latency.map_or(Value::Null, |l| json!({ "p50": l.0, "p99": l.1, "mean": l.2 }));
                    if !m.warnings.is_empty() {
                        v["warnings"] = json!(m.warnings);
                    }
                    v["verified"] = match &m.verified {
                        Some(Ok(())) => json!(true),
                        Some(Err(e)) => json!({ "mismatch": e }),
                        None => Value::Null,
                    };
                    v["speedup_vs_baseline"] = json!(speedup(exp, all, o));
                    if let Some(e) = &m.energy {
                        v["power"] = energy_json(m, e);
                        v["average_power_w"] = json!(e.average_w());
                        v["energy_per_lookup_nj"] = json!(nj_per_lookup(m));
                        v["lookups_per_second_per_watt"] = json!(perf_per_watt(m));
                        v["perf_per_watt_vs_baseline"] = json!(perf_per_watt_ratio(exp, all, o));
                    }
                    v["events"] = json!(m.events);
                    if let Some(p) = &m.mlp {
                        v["memory_level_parallelism"] = mlp_json(p);
                    }
                    if let Some(b) = &m.breakdown {
                        v["time_breakdown"] = json!(b);
                    }
                    if let Some(s) = &m.stats {
                        v["stats"] = s.clone();
                    }
                }
                Err(e) => v["error"] = json!(e),
            }
            v
        })
        .collect();
    let geomean: serde_json::Map<String, Value> = geomeans(exp, all)
        .into_iter()
        .map(|g| {
            let v = json!({
                "speedup": g.speedup,
                "perf_per_watt": g.perf_per_watt,
                "workloads": g.workloads,
                "workloads_with_speedup": g.with_speedup,
                "workloads_with_perf_per_watt": g.with_perf_per_watt,
            });
            (g.system, v)
        })
        .collect();
    json!({
        "experiment": exp.file.experiment.name,
        "seed": exp.file.experiment.seed,
        "baseline": exp.file.report.baseline,
        "runs": runs,
        "geomean_vs_baseline": geomean,
    })
}

/// Writes `value` as pretty JSON to `dir/name`, atomically (temporary file, then rename).
pub fn write_json(dir: &Path, name: &str, value: &Value) -> io::Result<PathBuf> {
    let mut text = serde_json::to_string_pretty(value).map_err(io::Error::other)?;
    text.push('\n');
    write_file(dir, name, text)
}

/// Writes `contents` (text or bytes) to `dir/name` through a temporary file, so a reader never
/// sees half of it.
pub fn write_file(dir: &Path, name: &str, contents: impl AsRef<[u8]>) -> io::Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    let path = dir.join(name);
    let tmp = dir.join(format!(".{name}.tmp"));
    std::fs::write(&tmp, contents)?;
    std::fs::rename(&tmp, &path)?;
    Ok(path)
}

/// One CSV field: quoted (inner quotes doubled) when it holds a comma, a quote or a newline.
pub fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) { format!("\"{}\"", s.replace('"', "\"\"")) } else { s.to_string() }
}

/// The results as CSV, one row per (system, workload) in run order, the table's figures in
/// plain units (ps, per second, W, nJ; empty where a figure does not apply): for spreadsheets
/// and plotting scripts. A failed pair has its error in the last column.
pub fn csv(exp: &Experiment, all: &[Outcome]) -> String {
    let mut t = String::from(
        "system,workload,model,sim_time_ps,lookups,lookups_per_second,achieved_gb_per_s,\
         peak_bandwidth_share,p50_ps,p99_ps,speedup_vs_baseline,average_power_w,energy_per_lookup_nj,\
         lookups_per_second_per_watt,perf_per_watt_vs_baseline,analytic_time_ps,dense_time_ps,\
         end_to_end_time_ps,end_to_end_speedup_vs_baseline,verified,error\n",
    );
    let num = |v: Option<f64>| v.map_or(String::new(), |v| format!("{v}"));
    for o in all {
        let mut f = vec![csv_field(&o.system), csv_field(&o.workload), csv_field(o.model)];
        match &o.result {
            Ok(m) => {
                f.extend([
                    m.time.to_string(),
                    m.lookups.to_string(),
                    num(Some(per_second(m.lookups, m.time))),
                    num(Some(per_second(m.bytes, m.time) / 1e9)),
                    num(peak_share(m)),
                    m.latency.map_or(String::new(), |l| l.0.to_string()),
                    m.latency.map_or(String::new(), |l| l.1.to_string()),
                    num(speedup(exp, all, o)),
                    num(m.energy.as_ref().map(|e| e.average_w())),
                    num(nj_per_lookup(m)),
                    num(perf_per_watt(m)),
                    num(perf_per_watt_ratio(exp, all, o)),
                    m.analytic_time.map_or(String::new(), |a| a.to_string()),
                    // Empty unless the workload lists dense layers and the system has dense units.
                    m.dense_time.map_or(String::new(), |d| d.to_string()),
                    end_to_end(m).map_or(String::new(), |t| t.to_string()),
                    num(end_to_end_speedup(exp, all, o)),
                    match &m.verified {
                        Some(Ok(())) => "true".into(),
                        Some(Err(_)) => "false".into(),
                        None => String::new(),
                    },
                    match &m.verified {
                        Some(Err(e)) => csv_field(e),
                        _ => String::new(),
                    },
                ]);
            }
            Err(e) => {
                f.extend(std::iter::repeat_n(String::new(), 17));
                f.push(csv_field(e));
            }
        }
        t.push_str(&f.join(","));
        t.push('\n');
    }
    t
}
