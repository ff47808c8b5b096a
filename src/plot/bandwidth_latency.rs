//! Bandwidth-latency plots (`bandwidth-latency.svg`, `latency-curve.svg`): a memory's loaded-latency curves (mean read latency against the
//! bandwidth achieved, one curve per traffic kind) with, optionally, systems' operating points
//! on them (each run's achieved bandwidth and the mean latency its memory saw).

use super::{Area, COLOURS, Field, chart_on, fail, mesh, tick};
use plotters::prelude::*;
use serde_json::Value;

/// One loaded-latency curve of a memory.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadCurve {
    /// What traffic it is ("random 64 B reads").
    pub label: String,
    /// (achieved GB/s, mean read latency ns), light load first.
    pub points: Vec<(f64, f64)>,
}

/// A system's operating points: one per run of a sweep line, in the swept parameter's order.
#[derive(Debug, Clone, PartialEq)]
pub struct OperatingLine {
    /// The line's name (system and workload).
    pub label: String,
    /// (achieved GB/s, mean memory read latency ns, the swept value as text).
    pub points: Vec<(f64, f64, String)>,
}

/// What a bandwidth-latency figure shows.
#[derive(Debug, Clone, PartialEq)]
pub struct BandwidthLatency {
    /// Title.
    pub title: String,
    /// The memory's peak bandwidth, GB/s (drawn as a vertical dashed line).
    pub peak_gb_per_s: f64,
    /// The memory's curves.
    pub curves: Vec<LoadCurve>,
    /// Systems' operating points.
    pub operating: Vec<OperatingLine>,
}

/// The memory's curves take the cool colours of [`COLOURS`], the systems' points the warm ones.
const CURVE_COLOURS: [usize; 6] = [0, 9, 2, 7, 4, 8];
const POINT_COLOURS: [usize; 4] = [3, 1, 6, 5];

/// Draws `f` on `root`.
pub fn draw(f: &BandwidthLatency, root: &Area<'_>) -> Result<(), String> {
    let xs = f.curves.iter().flat_map(|c| c.points.iter().map(|p| p.0));
    let xs = xs.chain(f.operating.iter().flat_map(|o| o.points.iter().map(|p| p.0)));
    let x_hi = xs.fold(f.peak_gb_per_s, f64::max) * 1.08;
    let ys = f.curves.iter().flat_map(|c| c.points.iter().map(|p| p.1));
    let ys: Vec<f64> = ys.chain(f.operating.iter().flat_map(|o| o.points.iter().map(|p| p.1))).collect();
    // Latency grows without bound past saturation: cap the axis at 4x the lightest-load latency
    // or the largest operating point, whichever is higher, so the knee stays visible.
    let y_min = ys.iter().copied().fold(f64::MAX, f64::min);
    let y_ops = f.operating.iter().flat_map(|o| o.points.iter().map(|p| p.1)).fold(0.0, f64::max);
    let y_all = ys.iter().copied().fold(0.0, f64::max);
    let y_hi = if ys.is_empty() { 1.0 } else { y_all.min((4.0 * y_min).max(y_ops * 1.2)) * 1.05 };
    let mut chart =
        chart_on(root, &f.title, 42, 64).build_cartesian_2d(0.0..x_hi, 0.0..y_hi).map_err(fail)?;
    mesh(&mut chart)
        .x_desc("achieved bandwidth (GB/s)")
        .y_desc("mean memory read latency (ns)")
        .x_label_formatter(&|v| tick(*v))
        .y_label_formatter(&|v| tick(*v))
        .draw()
        .map_err(fail)?;
    for (i, c) in f.curves.iter().enumerate() {
        let colour = COLOURS[CURVE_COLOURS[i % CURVE_COLOURS.len()]];
        let pts: Vec<(f64, f64)> = c.points.iter().copied().filter(|p| p.1 <= y_hi).collect();
        chart
            .draw_series(LineSeries::new(pts.iter().copied(), colour.stroke_width(2)))
            .map_err(fail)?
            .label(if f.operating.is_empty() {
                c.label.clone()
            } else {
                format!("memory alone: {}", c.label)
            })
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], colour.stroke_width(2)));
        chart.draw_series(pts.iter().map(|&p| Circle::new(p, 2, colour.filled()))).map_err(fail)?;
    }
    let grey = BLACK.mix(0.5);
    chart
        .draw_series(DashedLineSeries::new(
            [(f.peak_gb_per_s, 0.0), (f.peak_gb_per_s, y_hi)],
            6,
            4,
            grey.stroke_width(1),
        ))
        .map_err(fail)?
        .label(format!("peak {:.0} GB/s", f.peak_gb_per_s))
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], grey.stroke_width(1)));
    for (i, o) in f.operating.iter().enumerate() {
        let colour = COLOURS[POINT_COLOURS[i % POINT_COLOURS.len()]];
        let pts: Vec<(f64, f64)> = o.points.iter().map(|p| (p.0, p.1.min(y_hi))).collect();
        chart
            .draw_series(LineSeries::new(pts.iter().copied(), colour.mix(0.5).stroke_width(1)))
            .map_err(fail)?;
        chart
            .draw_series(pts.iter().map(|&p| TriangleMarker::new(p, 6, colour.filled())))
            .map_err(fail)?
            .label(format!("{} (operating points)", o.label))
            .legend(move |(x, y)| TriangleMarker::new((x + 8, y), 6, colour.filled()));
        // The swept value beside each point: which configuration sits where.
        let style = TextStyle::from(("sans-serif", super::SMALL).into_font()).color(&colour);
        // A label that would sit on an earlier one (points crowded at saturation) is left out.
        let mut placed: Vec<(f64, f64)> = Vec::new();
        let near =
            |a: (f64, f64), b: (f64, f64)| (a.0 - b.0).abs() < x_hi / 40.0 && (a.1 - b.1).abs() < y_hi / 25.0;
        let mut labels = Vec::new();
        for (p, &at) in o.points.iter().zip(&pts) {
            if placed.iter().all(|&q| !near(q, at)) {
                placed.push(at);
                labels.push(Text::new(format!(" {}", p.2), at, style.clone()));
            }
        }
        chart.draw_series(labels).map_err(fail)?;
    }
    chart
        .configure_series_labels()
        .border_style(BLACK)
        .background_style(WHITE.mix(0.9))
        .position(SeriesLabelPosition::UpperLeft)
        .draw()
        .map_err(fail)?;
    Ok(())
}

/// The curves of `dae-sim mem --latency-curve`, one per read ratio, from its
/// `latency-curve.json` (the run draws them from the file's content too, so `dae-sim plot`
/// redraws the same figure).
pub fn from_curve_json(v: &Value, file: &str) -> Result<BandwidthLatency, String> {
    let root = Field::root(file, v);
    let memory = root.get("memory");
    let bytes = root.get("request_bytes").f64()?;
    let mut curves: Vec<LoadCurve> = Vec::new();
    for p in root.get("points").items()? {
        let label = format!("random {bytes} B, {:.0}% reads", p.get("read_ratio").f64()? * 100.0);
        let at = (p.get("achieved_gb_per_s").f64()?, p.get("read_latency_ns").get("mean").f64()?);
        match curves.iter_mut().find(|c| c.label == label) {
            Some(c) => c.points.push(at),
            None => curves.push(LoadCurve { label, points: vec![at] }),
        }
    }
    Ok(BandwidthLatency {
        title: format!("{}: loaded latency (random traffic)", memory.get("name").str()?),
        peak_gb_per_s: memory.get("peak_gb_per_s").f64()?,
        curves,
        operating: Vec::new(),
    })
}

/// Draws the `latency-curve` plot of `v`, a `latency-curve.json` (`file`, for errors), into
/// `dir`: what `dae-sim mem --latency-curve` and `dae-sim plot` both write.
pub fn curve_plot(v: &Value, file: &str, dir: &std::path::Path) -> Result<Vec<std::path::PathBuf>, String> {
    save(&from_curve_json(v, file)?, dir, "latency-curve")
}

/// Whether `v` is the content of a `latency-curve.json`.
pub fn is_curve_json(v: &Value) -> bool {
    v.get("saturation").is_some() && v.get("pattern").is_some()
}

/// A sweep's figure: the memory curves its results carry and, per (system, workload) line,
/// each point's achieved bandwidth and mean memory read latency, tagged with the first axis'
/// value. `None` when the results carry no memory curve.
pub fn from_sweep(results: &Value) -> Option<BandwidthLatency> {
    let curves: Vec<LoadCurve> = results["memory_curves"]
        .as_array()?
        .iter()
        .map(|c| LoadCurve {
            label: c["label"].as_str().unwrap_or("?").to_string(),
            points: c["points"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|p| Some((p[0].as_f64()?, p[1].as_f64()?)))
                .collect(),
        })
        .collect();
    let mut operating: Vec<OperatingLine> = Vec::new();
    let mut peak: f64 = 0.0;
    for p in results["points"].as_array().into_iter().flatten() {
        let axis = p["point"]["axes"][0].as_str().unwrap_or("");
        let value = &p["point"]["values"][axis];
        for run in p["runs"].as_array().into_iter().flatten() {
            let (Some(gbs), Some(lat)) =
                (run["achieved_gb_per_s"].as_f64(), run["stats"]["mem"]["read_latency_ps"]["mean"].as_f64())
            else {
                continue;
            };
            if let Some(share) = run["peak_bandwidth_share"].as_f64().filter(|s| *s > 0.0) {
                peak = peak.max(gbs / share);
            }
            let label = format!(
                "{} {}",
                run["system"].as_str().unwrap_or("?"),
                run["workload"].as_str().unwrap_or("?")
            );
            let at = (gbs, lat / 1e3, format!("{value}"));
            match operating.iter_mut().find(|o| o.label == label) {
                Some(o) => o.points.push(at),
                None => operating.push(OperatingLine { label, points: vec![at] }),
            }
        }
    }
    Some(BandwidthLatency {
        title: "Operating points on the memory's loaded-latency curves".to_string(),
        peak_gb_per_s: peak,
        curves,
        operating,
    })
}

/// Draws `f` into `dir` as `stem.svg` and `stem.png`; returns the files.
pub fn save(
    f: &BandwidthLatency,
    dir: &std::path::Path,
    stem: &str,
) -> Result<Vec<std::path::PathBuf>, String> {
    super::save(dir, stem, (960, 620), |root| draw(f, root))
}
