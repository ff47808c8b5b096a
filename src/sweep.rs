//! Design-space sweeps: the `[sweep]` axes of a config expanded into points, each point the
//! config with the axes' values set, run in parallel over a work queue, each written as it
//! finishes (`points/NNNNN.json`, atomically), so an interrupted sweep keeps what finished and
//! `--resume` runs only the rest. `--shard i/N` runs the points whose index is `i` modulo `N`;
//! `merge` joins shards' directories. A point's results depend only on its config and seed, so
//! they are identical whatever the number of threads or shards.
//!
//! Every point is built and validated before any runs: an axis naming a key the config does
//! not have, an empty axis, zipped axes of different lengths or a value of the wrong type
//! (reported with the point and key) all fail first.

use crate::config::schema::{SweepMode, SweepSection};
use crate::config::{ConfigError, Document};
use crate::experiment::{self, Experiment, Overrides};
use crate::report;
use crate::sweep_memory::MemoryCurveSpec;
use serde_json::{Value, json};
use sim_core::hash::{FNV_OFFSET, fnv1a};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use thiserror::Error;

/// Why a sweep cannot run.
#[derive(Debug, Error)]
pub enum SweepError {
    /// The config is invalid.
    #[error("{0}")]
    Config(Box<ConfigError>),
    /// The sweep section is unusable.
    #[error("{at}: {key}: {message}")]
    Axis {
        /// Where: the config file, with the key's line and column where known.
        at: String,
        /// The key at fault.
        key: String,
        /// What is wrong.
        message: String,
    },
    /// A point of the sweep is invalid.
    #[error("point {index} ({values}): {cause}")]
    Point {
        /// The point.
        index: usize,
        /// Its values.
        values: String,
        /// Why.
        cause: Box<ConfigError>,
    },
    /// A shard is malformed.
    #[error("--shard {0}: must be i/N with 0 <= i < N (for example 0/4)")]
    Shard(String),
    /// Results on disk do not belong to this sweep.
    #[error("{0}")]
    Mismatch(String),
    /// Reading or writing results failed.
    #[error("{path}: {message}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What failed.
        message: String,
    },
}

impl From<ConfigError> for SweepError {
    fn from(e: ConfigError) -> Self {
        SweepError::Config(Box::new(e))
    }
}

fn io(path: &Path, e: impl std::fmt::Display) -> SweepError {
    SweepError::Io { path: path.to_path_buf(), message: e.to_string() }
}

/// One point: its index and the value of every axis (key as written, value).
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    /// Index in the sweep (product order: the first axis varies slowest).
    pub index: usize,
    /// `(key, value)` per axis.
    pub values: Vec<(String, toml::Value)>,
}

impl Point {
    /// `key=value, ...`.
    pub fn label(&self) -> String {
        self.values.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(", ")
    }

    fn to_json(&self) -> Value {
        let values: serde_json::Map<String, Value> =
            self.values.iter().map(|(k, v)| (k.clone(), toml_to_json(v))).collect();
        let axes: Vec<&str> = self.values.iter().map(|(k, _)| k.as_str()).collect();
        json!({ "index": self.index, "axes": axes, "values": values })
    }
}

fn toml_to_json(v: &toml::Value) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}

/// A shard: this run's share of the points.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// This shard, from 0.
    pub index: usize,
    /// Shards in all.
    pub count: usize,
}

impl std::str::FromStr for Shard {
    type Err = SweepError;
    fn from_str(s: &str) -> Result<Self, SweepError> {
        let bad = || SweepError::Shard(s.to_string());
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let (index, count) =
            (i.trim().parse::<usize>().map_err(|_| bad())?, n.trim().parse::<usize>().map_err(|_| bad())?);
        if count == 0 || index >= count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

/// A loaded sweep: the base document, its points, and each point's experiment.
pub struct Sweep {
    /// The config file.
    pub path: PathBuf,
    /// Every point, in index order.
    pub points: Vec<Point>,
    /// Each point's experiment, validated.
    pub experiments: Vec<Experiment>,
    /// Where results go.
    pub out_dir: PathBuf,
    /// How the axes combine.
    pub mode: SweepMode,
    /// The memory curves to measure beside it.
    pub memory_curve: Option<MemoryCurveSpec>,
    /// Whether the plot draws Little's law (`[sweep] littles_law`).
    pub littles_law: bool,
}

/// The document path an axis key names: `system.<name>.rest` and `workload.<name>.rest` pick
/// the system or workload of that name; anything else is a path as written.
fn resolve_key(doc: &Document, key: &str) -> Option<String> {
    for section in ["system", "workload"] {
        if let Some(rest) = key.strip_prefix(&format!("{section}.")) {
            let Some(toml::Value::Array(items)) = doc.get(section) else { continue };
            for (i, item) in items.iter().enumerate() {
                let name = item.get("name").and_then(|n| n.as_str()).unwrap_or("");
                if let Some(tail) = rest.strip_prefix(&format!("{name}.")).filter(|_| !name.is_empty()) {
                    let path = format!("{section}[{i}].{tail}");
                    return doc.get(&path).is_some().then_some(path);
                }
            }
        }
    }
    doc.get(key).is_some().then(|| key.to_string())
}

/// For an axis key that names nothing: " (did you mean `...`?)" with the closest key of the
/// table its last existing prefix names, or nothing.
fn key_hint(doc: &Document, key: &str) -> String {
    let Some((parent, last)) = key.rsplit_once('.') else { return String::new() };
    let Some(path) = resolve_key(doc, parent) else { return String::new() };
    let Some(toml::Value::Table(t)) = doc.get(&path) else { return String::new() };
    crate::config::loader::closest(last, t.keys().map(String::as_str)).map_or_else(
        || {
            // Likely a key left at its default: an axis sets only keys the config writes.
            format!(
                " (if `{last}` is a key left at its default, write it in `{parent}` first, with any value)"
            )
        },
        |k| format!(" (did you mean `{parent}.{k}`?)"),
    )
}

/// Expands the axes of `s`, the `[sweep]` of `doc` (where errors point), into points.
fn expand(doc: &Document, s: &SweepSection) -> Result<Vec<Point>, SweepError> {
    let axis_err = |key: String, message: &str| SweepError::Axis {
        at: doc.place(&key).to_string(),
        key,
        message: message.into(),
    };
    if s.axis.is_empty() {
        return Err(axis_err("sweep.axis".into(), "the sweep has no axis"));
    }
    for (k, a) in s.axis.iter().enumerate() {
        if a.values.is_empty() {
            return Err(axis_err(format!("sweep.axis[{k}].values"), "an axis needs at least one value"));
        }
    }
    let mut points = Vec::new();
    match s.mode {
        SweepMode::Zip => {
            let n = s.axis[0].values.len();
            if let Some((k, _)) = s.axis.iter().enumerate().find(|(_, a)| a.values.len() != n) {
                return Err(axis_err(
                    format!("sweep.axis[{k}].values"),
                    "zipped axes must have as many values as the first",
                ));
            }
            for i in 0..n {
                let values = s.axis.iter().map(|a| (a.key.clone(), a.values[i].clone())).collect();
                points.push(Point { index: i, values });
            }
        }
        SweepMode::Product => {
            let total: usize = s.axis.iter().map(|a| a.values.len()).product();
            for i in 0..total {
                let mut rest = i;
                let mut values = vec![(String::new(), toml::Value::Boolean(false)); s.axis.len()];
                for (k, a) in s.axis.iter().enumerate().rev() {
                    values[k] = (a.key.clone(), a.values[rest % a.values.len()].clone());
                    rest /= a.values.len();
                }
                points.push(Point { index: i, values });
            }
        }
    }
    Ok(points)
}

impl Sweep {
    /// Loads `path`, expands its `[sweep]` and validates every point's experiment.
    pub fn load(path: &Path, overrides: &Overrides) -> Result<Self, SweepError> {
        let doc = Document::load(path)?;
        let section: Option<SweepSection> = match doc.get("sweep") {
            None => None,
            Some(_) => doc.deserialize::<crate::config::ExperimentFile>()?.sweep,
        };
        let section = section.ok_or_else(|| SweepError::Axis {
            at: path.display().to_string(),
            key: "sweep".into(),
            message: "the config has no [sweep] section".into(),
        })?;
        let mut resolved = Vec::new();
        for (k, a) in section.axis.iter().enumerate() {
            let key = format!("sweep.axis[{k}].key");
            let p = resolve_key(&doc, &a.key).ok_or_else(|| SweepError::Axis {
                at: doc.place(&key).to_string(),
                key: key.clone(),
                message: format!(
                    "{:?} names no key of the config or its includes{}",
                    a.key,
                    key_hint(&doc, &a.key)
                ),
            })?;
            // Two axes setting one key: the later would silently win at every point, while the
            // results list both values.
            if let Some(j) = resolved.iter().position(|q| *q == p) {
                return Err(SweepError::Axis {
                    at: doc.place(&key).to_string(),
                    key,
                    message: format!("{:?} sets the same key as axis {j} ({p})", a.key),
                });
            }
            resolved.push(p);
        }
        let memory_curve = match &section.memory_curve {
            Some(m) => Some(MemoryCurveSpec::resolve(m, path).map_err(|message| SweepError::Axis {
                at: doc.place("sweep.memory_curve").to_string(),
                key: "sweep.memory_curve".into(),
                message,
            })?),
            None => None,
        };
        let points = expand(&doc, &section)?;
        let mut experiments = Vec::with_capacity(points.len());
        for p in &points {
            let mut d = doc.clone();
            for (k, ((_, v), key)) in p.values.iter().zip(&resolved).enumerate() {
                // Errors about the value point at the axis's values.
                let origin = doc.locate(&format!("sweep.axis[{k}].values")).cloned();
                let set = match origin {
                    Some(origin) => d.set_from(key, v.clone(), origin),
                    None => d.set(key, v.clone()),
                };
                set.map_err(|e| SweepError::Point { index: p.index, values: p.label(), cause: Box::new(e) })?;
            }
            let exp = Experiment::from_document(d, path, overrides).map_err(|e| SweepError::Point {
                index: p.index,
                values: p.label(),
                cause: Box::new(e),
            })?;
            experiments.push(exp);
        }
        // A warning once, however many points share it (each point names its own values).
        let mut said = std::collections::HashSet::new();
        for w in experiments.iter().flat_map(|e| &e.warnings) {
            if said.insert(w) {
                crate::note!("warning: {w}");
            }
        }
        let out_dir = match &overrides.out {
            Some(o) => o.clone(),
            None => experiments[0].out_dir.join("sweep"),
        };
        let littles_law = section.littles_law;
        Ok(Sweep {
            path: path.to_path_buf(),
            points,
            experiments,
            out_dir,
            mode: section.mode,
            memory_curve,
            littles_law,
        })
    }

    /// The manifest: what identifies the sweep's points (config, axes, values), and the plot's
    /// options (carried into `sweep-results.json`, so that `dae-sim plot` draws the same).
    pub fn manifest(&self) -> Value {
        let mut m = json!({
            // Canonical, so shards and resumes that spell the path differently still match.
            "config": std::fs::canonicalize(&self.path).unwrap_or_else(|_| self.path.clone()).display().to_string(),
            "mode": match self.mode { SweepMode::Product => "product", SweepMode::Zip => "zip" },
            "littles_law": self.littles_law,
            "points": self.points.iter().map(Point::to_json).collect::<Vec<_>>(),
            // Every point's resolved config (includes applied, axes set): a base config edited
            // between a run and its resume changes this, where the path and axes stay the same.
            "config_digest": self.config_digest(),
        });
        if let Some(c) = &self.memory_curve {
            m["memory_curve"] = c.to_json();
        }
        m
    }

    /// A digest (64-bit FNV-1a, hex) of every point's resolved config, in point order.
    fn config_digest(&self) -> String {
        let h =
            self.experiments.iter().fold(FNV_OFFSET, |h, exp| fnv1a(h, format!("{:?}", exp.file).as_bytes()));
        format!("{h:016x}")
    }

    fn point_file(dir: &Path, index: usize) -> PathBuf {
        dir.join("points").join(format!("{index:05}.json"))
    }

    /// The indices this run owns (a shard's, or all).
    pub fn selected(&self, shard: Option<Shard>) -> Vec<usize> {
        (0..self.points.len()).filter(|i| shard.is_none_or(|s| i % s.count == s.index)).collect()
    }
}

/// How to run a sweep.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Worker threads.
    pub threads: usize,
    /// Skip points whose results are already written.
    pub resume: bool,
    /// Run only this shard's points.
    pub shard: Option<Shard>,
}

/// What a sweep run did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunSummary {
    /// Points run now.
    pub ran: usize,
    /// Points skipped as already finished (`--resume`).
    pub skipped: usize,
    /// Points whose runs had a failed pair.
    pub failed: usize,
    /// Whether every point of the sweep has results (the combined files were written).
    pub complete: bool,
}

/// Runs `sweep`'s points (see [`RunOptions`]); `progress` hears about each finished point.
pub fn run(
    sweep: &Sweep,
    opts: &RunOptions,
    progress: impl Fn(&Point, bool) + Sync,
) -> Result<RunSummary, SweepError> {
    let dir = &sweep.out_dir;
    let manifest = sweep.manifest();
    let manifest_path = dir.join("sweep.json");
    if manifest_path.exists() {
        let old = read_json(&manifest_path)?;
        if !same_points(&old, &manifest) {
            if !opts.resume {
                // A new sweep over an old directory: start clean rather than mix results.
                let _ = std::fs::remove_dir_all(dir.join("points"));
            } else {
                return Err(SweepError::Mismatch(format!(
                    "{}: --resume, but the results there belong to another sweep (config or axes changed)",
                    manifest_path.display()
                )));
            }
        }
    }
    report::write_json(dir, "sweep.json", &manifest).map_err(|e| io(&manifest_path, e))?;
    let (mut todo, mut skipped) = (Vec::new(), Vec::new());
    let mut summary = RunSummary::default();
    for i in sweep.selected(opts.shard) {
        if opts.resume && Sweep::point_file(dir, i).exists() {
            skipped.push(i);
        } else {
            todo.push(i);
        }
    }
    summary.skipped = skipped.len();
    let (tx, rx) = crossbeam::channel::unbounded::<usize>();
    for &i in &todo {
        let _ = tx.send(i);
    }
    drop(tx);
    let errors: Mutex<Vec<SweepError>> = Mutex::new(Vec::new());
    let failed = std::sync::atomic::AtomicUsize::new(0);
    let threads = opts.threads.clamp(1, todo.len().max(1));
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                while let Ok(i) = rx.recv() {
                    let (p, exp) = (&sweep.points[i], &sweep.experiments[i]);
                    // Points already run in parallel: each runs its pairs on one thread.
                    let outcomes = experiment::run(exp, 1, |_| {});
                    let ok = outcomes.iter().all(experiment::Outcome::succeeded);
                    if !ok {
                        failed.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                    let mut v = report::json(exp, &outcomes);
                    v["point"] = p.to_json();
                    let path = Sweep::point_file(dir, i);
                    let parent = path.parent().unwrap_or(dir);
                    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("point.json");
                    match report::write_json(parent, name, &v) {
                        Ok(_) => progress(p, ok),
                        Err(e) => errors.lock().unwrap_or_else(|p| p.into_inner()).push(io(&path, e)),
                    }
                }
            });
        }
    });
    if let Some(e) = errors.into_inner().unwrap_or_else(|p| p.into_inner()).into_iter().next() {
        return Err(e);
    }
    summary.ran = todo.len();
    summary.failed = failed.into_inner();
    // The points skipped as finished count too: a resumed sweep with a failed point has failed
    // as much as the run that found it. (Only those are read back; this run's are known.)
    for &i in &skipped {
        if point_failed(&read_json(&Sweep::point_file(dir, i))?) {
            summary.failed += 1;
        }
    }
    summary.complete = combine(dir, &manifest)?;
    Ok(summary)
}

/// Whether a point's results hold a failed pair: an error, or outputs that differ from the
/// reference.
fn point_failed(point: &Value) -> bool {
    point["runs"].as_array().into_iter().flatten().any(|r| !r["error"].is_null() || r["verified"].is_object())
}

/// Whether two manifests name the same points: the plot's options may differ (and a manifest
/// written before they existed lacks them).
fn same_points(a: &Value, b: &Value) -> bool {
    let points = |v: &Value| {
        let mut v = v.clone();
        if let Some(m) = v.as_object_mut() {
            // Plot context, not points: changing it keeps the finished points.
            m.remove("littles_law");
            m.remove("memory_curve");
        }
        v
    };
    points(a) == points(b)
}

fn read_json(path: &Path) -> Result<Value, SweepError> {
    let text = std::fs::read_to_string(path).map_err(|e| io(path, e))?;
    serde_json::from_str(&text).map_err(|e| io(path, e))
}

/// Writes `sweep-results.json` and `sweep.csv` into `dir` if every point of `manifest` has its
/// results there; returns whether it did.
fn combine(dir: &Path, manifest: &Value) -> Result<bool, SweepError> {
    let points = manifest["points"].as_array().cloned().unwrap_or_default();
    let mut results = Vec::with_capacity(points.len());
    for (i, _) in points.iter().enumerate() {
        let f = Sweep::point_file(dir, i);
        if !f.exists() {
            return Ok(false);
        }
        results.push(read_json(&f)?);
    }
    let mut all = json!({ "sweep": manifest, "points": results });
    // The memory's curves are context for the plot: failing to measure them loses no result.
    if let Some(spec) = MemoryCurveSpec::from_json(&manifest["memory_curve"]) {
        match spec.curves(dir) {
            Ok(c) => all["memory_curves"] = c,
            Err(e) => crate::note!("warning: memory curves for the bandwidth-latency plot: {e}"),
        }
    }
    let path = dir.join("sweep-results.json");
    report::write_json(dir, "sweep-results.json", &all).map_err(|e| io(&path, e))?;
    report::write_file(dir, "sweep.csv", csv(&results)).map_err(|e| io(&dir.join("sweep.csv"), e))?;
    // The plots are a view of the results: one that cannot be drawn (an axis of strings) loses
    // nothing, and `dae-sim plot` can redraw it.
    if let Err(e) = crate::plot::sweep_plots(&all, &path.display().to_string(), dir) {
        let _ = report::write_file(dir, "sweep-plot-error.txt", format!("{e}\n"));
        crate::note!("note: no sweep plot ({e}); the results and CSV are written");
    }
    Ok(true)
}

/// One row per point and (system, workload) pair: the axes' values, then the pair's figures.
fn csv(results: &[Value]) -> String {
    // The axes in their config order (the values object is keyed, so unordered).
    let keys: Vec<String> = results
        .first()
        .and_then(|r| r["point"]["axes"].as_array())
        .map(|a| a.iter().filter_map(|k| k.as_str().map(String::from)).collect())
        .unwrap_or_default();
    let fields = [
        "sim_time_ps",
        "lookups_per_second",
        "achieved_gb_per_s",
        "peak_bandwidth_share",
        "speedup_vs_baseline",
    ];
    let mut t = String::from("point,");
    for k in &keys {
        t += &format!("{k},");
    }
    t += "system,workload,p50_ps,p99_ps,";
    t += &fields.join(",");
    t += ",verified,error\n";
    let text = |v: &Value| match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        v => v.to_string(),
    };
    for r in results {
        for run in r["runs"].as_array().into_iter().flatten() {
            let mut row = vec![text(&r["point"]["index"])];
            row.extend(keys.iter().map(|k| text(&r["point"]["values"][k])));
            row.push(text(&run["system"]));
            row.push(text(&run["workload"]));
            row.push(text(&run["lookup_latency_ps"]["p50"]));
            row.push(text(&run["lookup_latency_ps"]["p99"]));
            row.extend(fields.iter().map(|f| text(&run[*f])));
            // true, false (a mismatch) or empty (a timing-only model, or a failed pair).
            row.push(match &run["verified"] {
                Value::Bool(b) => b.to_string(),
                Value::Object(_) => "false".into(),
                _ => String::new(),
            });
            row.push(text(&run["error"]));
            t += &row.iter().map(|c| report::csv_field(c)).collect::<Vec<_>>().join(",");
            t.push('\n');
        }
    }
    t
}

/// Joins the results of sweep directories (shards of one sweep) into `out`; every point must
/// be in exactly one of them, or in several with identical results. Returns the points found
/// and the sweep's points: the combined files are written only when they are equal.
pub fn merge(dirs: &[PathBuf], out: &Path) -> Result<(usize, usize), SweepError> {
    let Some(first) = dirs.first() else {
        return Err(SweepError::Mismatch("merge: no directory given".into()));
    };
    let manifest = read_json(&first.join("sweep.json"))?;
    for d in &dirs[1..] {
        if !same_points(&read_json(&d.join("sweep.json"))?, &manifest) {
            return Err(SweepError::Mismatch(format!(
                "{} and {} hold different sweeps",
                first.display(),
                d.display()
            )));
        }
    }
    let n = manifest["points"].as_array().map_or(0, Vec::len);
    let mut found = 0;
    for i in 0..n {
        let mut chosen: Option<Value> = None;
        for d in dirs {
            let f = Sweep::point_file(d, i);
            if f.exists() {
                let v = read_json(&f)?;
                if let Some(c) = &chosen
                    && c != &v
                {
                    return Err(SweepError::Mismatch(format!(
                        "point {i} differs between shards ({})",
                        f.display()
                    )));
                }
                chosen = Some(v);
            }
        }
        if let Some(v) = chosen {
            let path = Sweep::point_file(out, i);
            let parent = path.parent().unwrap_or(out).to_path_buf();
            report::write_json(&parent, &format!("{i:05}.json"), &v).map_err(|e| io(&path, e))?;
            found += 1;
        }
    }
    report::write_json(out, "sweep.json", &manifest).map_err(|e| io(&out.join("sweep.json"), e))?;
    combine(out, &manifest)?;
    Ok((found, n))
}

/// The points as a table, for `--list`: a shard's only, when one is given.
pub fn list(sweep: &Sweep, shard: Option<Shard>) -> String {
    sweep
        .selected(shard)
        .into_iter()
        .map(|i| &sweep.points[i])
        .map(|p| format!("{:>5}  {}\n", p.index, p.label()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_parse_and_bad_ones_are_refused() {
        assert_eq!("1/4".parse::<Shard>().unwrap(), Shard { index: 1, count: 4 });
        for bad in ["3/2", "2/2", "1/0", "x/2", "1", "-1/2"] {
            let e = bad.parse::<Shard>().unwrap_err().to_string();
            assert!(e.contains("must be i/N"), "{bad}: {e}");
        }
    }

    #[test]
    fn product_varies_the_last_axis_fastest_and_zip_takes_values_in_step() {
        let axis = |k: &str, v: &[i64]| crate::config::schema::SweepAxis {
            key: k.into(),
            values: v.iter().map(|&x| toml::Value::Integer(x)).collect(),
        };
        let s = SweepSection {
            mode: SweepMode::Product,
            axis: vec![axis("a", &[1, 2]), axis("b", &[3, 4, 5])],
            ..Default::default()
        };
        let doc = Document::from_str("", Path::new("f")).unwrap();
        let p = expand(&doc, &s).unwrap();
        assert_eq!(p.len(), 6);
        assert_eq!(p[1].label(), "a=1, b=4");
        assert_eq!(p[3].label(), "a=2, b=3");
        let z = SweepSection {
            mode: SweepMode::Zip,
            axis: vec![axis("a", &[1, 2]), axis("b", &[3, 4])],
            ..Default::default()
        };
        assert_eq!(expand(&doc, &z).unwrap()[1].label(), "a=2, b=4");
        let bad = SweepSection {
            mode: SweepMode::Zip,
            axis: vec![axis("a", &[1, 2]), axis("b", &[3])],
            ..Default::default()
        };
        assert!(expand(&doc, &bad).unwrap_err().to_string().contains("sweep.axis[1].values"));
        let empty =
            SweepSection { mode: SweepMode::Product, axis: vec![axis("a", &[])], ..Default::default() };
        assert!(expand(&doc, &empty).unwrap_err().to_string().contains("at least one value"));
    }

    #[test]
    fn an_axis_key_that_names_nothing_gets_a_hint() {
        let doc = Document::from_str("[cache]\nsize = \"1KiB\"\n", Path::new("f")).unwrap();
        assert_eq!(key_hint(&doc, "cache.sise"), " (did you mean `cache.size`?)");
        // A key the config leaves at its default must be written before an axis can set it.
        assert!(key_hint(&doc, "cache.replacement").contains("write it in `cache` first"));
        assert_eq!(key_hint(&doc, "nothing.here"), "");
    }

    #[test]
    fn the_plot_options_do_not_make_another_sweep() {
        let a = json!({ "config": "c.toml", "mode": "zip", "points": [1, 2] });
        let mut b = a.clone();
        b["littles_law"] = json!(true);
        assert!(same_points(&a, &b));
        b["points"] = json!([1, 3]);
        assert!(!same_points(&a, &b));
    }
}
