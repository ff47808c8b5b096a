//! A sweep's memory curves: the loaded-latency curves of the memory its systems use (random
//! reads of each requested size, as `dae-sim mem --latency-curve` measures them at 100% reads),
//! computed once beside the sweep so its bandwidth-latency plot can place every point's
//! operating point on them. Asked for with `[sweep.memory_curve]`:
//!
//! ```toml
//! [sweep.memory_curve]
//! memory = "memory/hbm3-h100.toml"   # relative to the config, or a preset name
//! requests = ["64B", "128B"]         # one curve per request size (default 64B)
//! points = 12                        # injection rates per curve (default 12)
//! ```
//!
//! The curves are cached in `memory-curves.json` in the sweep's directory, keyed by what was
//! asked, so a resumed or merged sweep does not measure them again.

use crate::config::schema::MemoryCurveSection;
use crate::mem_frontend::{self, Curve, CurveOptions};
use crate::report;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// What a sweep's memory curves are: resolved and checked when the sweep loads.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryCurveSpec {
    /// The memory file.
    pub memory: PathBuf,
    /// Request sizes in bytes, one curve each.
    pub requests: Vec<u32>,
    /// Injection rates per curve.
    pub points: u32,
}

/// Seed of the curves' traffic (fixed: the curves describe the memory, not the sweep).
const CURVE_SEED: u64 = 1;

/// How a cached curve's bandwidth was measured; a cache without it (measured over the data
/// buses' busy window, which a run's drain lowered) is measured again.
const CURVE_METHOD: &str = "steady state: bytes read from the first answer to the last send";

impl MemoryCurveSpec {
    /// Resolves `section` against the config at `config`: a path relative to the config's
    /// directory, else a preset name. Loads the memory so a bad one fails before any point runs.
    pub fn resolve(section: &MemoryCurveSection, config: &Path) -> Result<Self, String> {
        let near = config.parent().unwrap_or(Path::new(".")).join(&section.memory);
        let memory = if near.is_file() {
            near
        } else {
            mem_frontend::resolve_memory(&section.memory).map_err(|e| format!("memory: {e}"))?
        };
        mem_frontend::load_memory(&memory).map_err(|e| format!("memory: {e}"))?;
        // Absolute: the manifest carries it to a merge that may run from another directory.
        let memory = std::fs::canonicalize(&memory).unwrap_or(memory);
        if section.points == 0 {
            return Err("points: must be at least 1".into());
        }
        let mut requests = Vec::new();
        for (i, r) in section.requests.iter().enumerate() {
            match u32::try_from(r.bytes()) {
                Ok(b) if b > 0 => requests.push(b),
                _ => return Err(format!("requests[{i}]: {r} is not a request size (1 B to 4 GiB)")),
            }
        }
        if requests.is_empty() {
            return Err("requests: give at least one request size".into());
        }
        Ok(MemoryCurveSpec { memory, requests, points: section.points })
    }

    /// Its entry in the sweep's manifest.
    pub fn to_json(&self) -> Value {
        json!({ "memory": self.memory.display().to_string(), "requests": self.requests, "points": self.points })
    }

    /// Reads it back from a manifest entry.
    pub fn from_json(v: &Value) -> Option<Self> {
        let requests: Option<Vec<u32>> = v["requests"]
            .as_array()?
            .iter()
            .map(|r| r.as_u64().and_then(|r| u32::try_from(r).ok()))
            .collect();
        Some(MemoryCurveSpec {
            memory: PathBuf::from(v["memory"].as_str()?),
            requests: requests?,
            points: u32::try_from(v["points"].as_u64()?).ok()?,
        })
    }

    /// The curves, from `dir/memory-curves.json` if it holds these, else measured and saved.
    pub fn curves(&self, dir: &Path) -> Result<Value, String> {
        let cache = dir.join("memory-curves.json");
        if let Ok(text) = std::fs::read_to_string(&cache)
            && let Ok(v) = serde_json::from_str::<Value>(&text)
            && v["spec"] == self.to_json()
            && v["method"] == CURVE_METHOD
        {
            return Ok(v["curves"].clone());
        }
        let preset = mem_frontend::load_memory(&self.memory).map_err(|e| e.to_string())?;
        let mut curves = Vec::new();
        for &bytes in &self.requests {
            let opts = CurveOptions {
                points: self.points,
                requests: None,
                bytes,
                in_flight: None,
                seed: CURVE_SEED,
                read_ratios: &[1.0],
            };
            let curve = mem_frontend::latency_curve(&preset, &opts).map_err(|e| e.to_string())?;
            let label = format!("random {bytes} B reads");
            curves.push(curve_json(&label, &curve));
        }
        let curves = Value::Array(curves);
        report::write_json(
            dir,
            "memory-curves.json",
            &json!({ "spec": self.to_json(), "method": CURVE_METHOD, "curves": curves }),
        )
        .map_err(|e| format!("{}: {e}", cache.display()))?;
        Ok(curves)
    }
}

/// A curve as the sweep's results carry it (`memory_curves`): its label, its saturation
/// bandwidth and its points as `[achieved GB/s, mean read latency ns]`, light load first.
fn curve_json(label: &str, curve: &Curve) -> Value {
    let points: Vec<Value> = curve
        .points
        .iter()
        .map(|p| json!([p.run.achieved_gb_per_s(), p.run.read_latency.mean / 1e3]))
        .collect();
    json!({ "label": label, "saturation_gb_per_s": curve.saturation.first().map(|s| s.1), "points": points })
}
