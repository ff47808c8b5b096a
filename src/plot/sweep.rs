//! A sweep's lines against its first axis (`sweep.svg`, `sweep.png`): throughput in GB/s on top
//! with the memory's peak bandwidth dashed, the mean (solid) and p99 (dashed) lookup latency
//! below, one line per system, workload and value of the other axes. With `littles_law = true`
//! in the `[sweep]` table, a dotted line per line shows what Little's law predicts if the
//! latency stayed at the one measured at the smallest value of the axis.

use super::{
    Area, COLOURS, Chart, Dash, Field, Legend, Swatch, axis_names, chart_on, draw_line, fail, mesh,
    point_label, run_names, save, sweep_axes, tick,
};
use plotters::coord::ranged1d::Ranged;
use plotters::prelude::*;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// One point of a line.
#[derive(Debug, Clone, Copy)]
struct Point {
    x: f64,
    gb_per_s: f64,
    mean_ns: f64,
    p99_ns: f64,
    /// The memory's peak bandwidth (GB/s), where the run reports its share of it.
    peak: Option<f64>,
}

/// One line: a (system, workload) pair over the first axis, the other axes fixed at the values
/// in its label.
#[derive(Debug, Clone)]
struct Line {
    label: String,
    /// The system it ran on.
    system: String,
    points: Vec<Point>,
}

impl Line {
    /// The memory's peak bandwidth along the line.
    fn peak(&self) -> Vec<(f64, f64)> {
        self.points.iter().filter_map(|p| Some((p.x, p.peak?))).collect()
    }
}

/// Throughput by Little's law at a fixed latency: with `gb_per_s0` measured at `x0`, the bytes in
/// flight grow with `x` (`throughput = bytes in flight / latency`), so at `x` the throughput is
/// `gb_per_s0 * x / x0`.
pub fn littles_law(x0: f64, gb_per_s0: f64, x: f64) -> f64 {
    gb_per_s0 * x / x0
}

/// The Little's-law line from `(x0, gb_per_s0)` to `x_max`, as points to draw: straight in
/// `x` (so sampled finely where `x` is drawn on a log axis) and cut where it crosses `y_max`, the
/// top of the panel.
fn littles_law_line(x0: f64, gb_per_s0: f64, x_max: f64, y_max: f64, log_x: bool) -> Vec<(f64, f64)> {
    if x0 <= 0.0 || gb_per_s0 <= 0.0 || x_max <= x0 {
        return Vec::new();
    }
    let x_end = x_max.min(x0 * y_max / gb_per_s0);
    let steps = if log_x { 64 } else { 1 };
    (0..=steps)
        .map(|i| {
            let t = f64::from(i) / f64::from(steps);
            let x = if log_x { x0 * (x_end / x0).powf(t) } else { x0 + (x_end - x0) * t };
            (x, littles_law(x0, gb_per_s0, x).min(y_max))
        })
        .collect()
}

/// The lines of a sweep's results, with the first axis's key.
fn read(results: &Field<'_>) -> Result<(String, Vec<Line>), String> {
    let axes = sweep_axes(results)?;
    let x_axis = axes.first().ok_or_else(|| results.get("points").error("the sweep has no axis"))?.clone();
    let mut lines: Vec<Line> = Vec::new();
    let mut unit = None;
    for p in results.get("points").items()? {
        // A sweep over strings (preset names) has no numeric axis to draw against; sizes,
        // times and frequencies do, in their base unit.
        let Some((x, u)) = axis_number(p.get("point").get("values").get(&x_axis).value()) else { continue };
        unit = unit.or(u);
        let others = point_label(results, &p, &axes).split_off(1);
        for run in p.get("runs").items()? {
            let Some((system, workload)) = run_names(&run)? else { continue };
            let gb_per_s = run.get("achieved_gb_per_s").f64()?;
            // A run that timed no lookup (null latency) has no point on the latency panels.
            let Some(latency) = run.opt("lookup_latency_ps") else { continue };
            let (mean_ns, p99_ns) = (latency.get("mean").f64()? / 1e3, latency.get("p99").f64()? / 1e3);
            let share = run.opt("peak_bandwidth_share").map(|s| s.f64()).transpose()?;
            let peak = share.filter(|s| *s > 0.0).map(|s| gb_per_s / s).filter(|p| p.is_finite());
            let mut label = format!("{system} {workload}");
            if !others.is_empty() {
                label += &format!(" ({})", others.join(", "));
            }
            let point = Point { x, gb_per_s, mean_ns, p99_ns, peak };
            match lines.iter_mut().find(|l| l.label == label) {
                Some(l) => l.points.push(point),
                None => lines.push(Line { label, system: system.to_string(), points: vec![point] }),
            }
        }
    }
    if lines.is_empty() {
        return Err(results
            .get("points")
            .error(&format!("no numeric values of {x_axis} with results to plot")));
    }
    for l in &mut lines {
        l.points.sort_by(|a, b| a.x.total_cmp(&b.x));
    }
    let x_axis = match unit {
        Some(u) => format!("{x_axis} ({u})"),
        None => x_axis,
    };
    Ok((x_axis, lines))
}

/// A sweep value as a number on the first axis, with its unit when it was written with one
/// ("16KiB" is 16384 B).
fn axis_number(v: &Value) -> Option<(f64, Option<&'static str>)> {
    if let Some(x) = v.as_f64() {
        return Some((x, None));
    }
    let text = v.as_str()?;
    if let Ok(b) = sim_core::ByteSize::parse(text) {
        Some((b.bytes() as f64, Some("B")))
    } else if let Ok(t) = sim_core::TimeSpan::parse(text) {
        Some((t.ps() as f64, Some("ps")))
    } else if let Ok(f) = sim_core::Frequency::parse(text) {
        Some((f.hz() as f64, Some("Hz")))
    } else {
        None
    }
}

/// Draws a complete sweep's results (`sweep-results.json`, read from `file`) into `dir` as
/// `sweep.svg` and `sweep.png`. Returns the files.
pub fn sweep_lines(results: &Value, file: &str, dir: &Path) -> Result<Vec<PathBuf>, String> {
    let root = Field::root(file, results);
    let (x_axis, lines) = read(&root)?;
    let littles = results["sweep"]["littles_law"].as_bool().unwrap_or(false);
    let mut figure = Figure::new(x_axis, lines, littles);
    // What varies along the x axis: the first axis, and in zip mode every axis with it. An axis
    // `system.NAME.key` varies only system NAME; any other may vary every system.
    let axes = sweep_axes(&root)?;
    let along = if results["sweep"]["mode"] == "zip" { &axes[..] } else { &axes[..axes.len().min(1)] };
    figure.varied = along
        .iter()
        .map(|a| a.strip_prefix("system.").and_then(|k| k.split_once('.')).map(|(n, _)| n.to_string()))
        .collect();
    // The memory alone, where the results carry its curves (`[sweep.memory_curve]`): the
    // bandwidth at which each kind of traffic saturates it.
    for c in results["memory_curves"].as_array().into_iter().flatten() {
        if let (Some(label), Some(gbs)) = (c["label"].as_str(), c["saturation_gb_per_s"].as_f64()) {
            figure.saturation.push((label.to_string(), gbs));
        }
    }
    let (top_legend, bottom_legend) = figure.legends();
    let width = 980;
    let (top_h, bottom_h) = (420, 380);
    let height = top_h + top_legend.height(width) + bottom_h + bottom_legend.height(width);
    save(dir, "sweep", (width, height), |area| {
        let (top, rest) = area.split_vertically(top_h);
        let (top_key, rest) = rest.split_vertically(top_legend.height(width));
        let (bottom, bottom_key) = rest.split_vertically(bottom_h);
        figure.throughput(&top)?;
        top_legend.draw(&top_key)?;
        figure.latency(&bottom)?;
        bottom_legend.draw(&bottom_key)
    })
}

/// What both panels share: the lines and the first axis, drawn in log2 when wide.
struct Figure {
    x_axis: String,
    lines: Vec<Line>,
    littles: bool,
    /// The systems the x axis varies (`None`: possibly every one).
    varied: Option<Vec<String>>,
    log_x: bool,
    /// The axis range, in drawn units (log2 of the values on a log axis).
    range: (f64, f64),
    /// The memory's peak when every line has the same: drawn once, in black.
    shared_peak: Option<Vec<(f64, f64)>>,
    /// The memory alone saturates at these GB/s (traffic label, GB/s): grey dashed lines.
    saturation: Vec<(String, f64)>,
}

/// Colours of the memory's saturation lines: greys, darkest first.
const SATURATION_GREYS: [RGBColor; 3] =
    [RGBColor(90, 90, 90), RGBColor(140, 140, 140), RGBColor(180, 180, 180)];

impl Figure {
    fn new(x_axis: String, lines: Vec<Line>, littles: bool) -> Self {
        let xs = lines.iter().flat_map(|l| l.points.iter().map(|p| p.x));
        let (lo, hi) = xs.fold((f64::MAX, f64::MIN), |(lo, hi), x| (lo.min(x), hi.max(x)));
        // A wide axis (powers of two, as outstanding requests) is drawn in log2: positions are
        // log2(x), labels the values.
        let log_x = lo > 0.0 && hi / lo >= 16.0;
        let t = |x: f64| if log_x { x.log2() } else { x };
        let range = if lo == hi { (t(lo) - 1.0, t(hi) + 1.0) } else { (t(lo), t(hi)) };
        let first = lines[0].peak();
        let same = |a: &[(f64, f64)]| {
            a.len() == first.len()
                && a.iter().zip(&first).all(|(p, q)| p.0 == q.0 && (p.1 - q.1).abs() <= 1e-9 * q.1.abs())
        };
        let shared_peak = lines.iter().all(|l| same(&l.peak())).then_some(first).filter(|p| !p.is_empty());
        Figure { x_axis, lines, littles, varied: None, log_x, range, shared_peak, saturation: Vec::new() }
    }

    /// A drawn x position.
    fn tx(&self, x: f64) -> f64 {
        if self.log_x { x.log2() } else { x }
    }

    /// The peak line through the drawn axis: a constant peak spans the whole axis.
    fn peak_points(&self, peak: &[(f64, f64)]) -> Vec<(f64, f64)> {
        match peak {
            [(_, p)] => vec![(self.range.0, *p), (self.range.1, *p)],
            _ => peak.iter().map(|&(x, p)| (self.tx(x), p)).collect(),
        }
    }

    /// The legends under the throughput and the latency panel.
    fn legends(&self) -> (Legend, Legend) {
        let short = axis_names(std::slice::from_ref(&self.x_axis)).remove(0);
        let mut top = Vec::new();
        let mut bottom = Vec::new();
        for (i, l) in self.lines.iter().enumerate() {
            let c = COLOURS[i % COLOURS.len()];
            top.push((Swatch::Line(c, Dash::Solid), l.label.clone()));
            if self.shared_peak.is_none() && !l.peak().is_empty() {
                top.push((Swatch::Line(c, Dash::Dashed), format!("{}: memory's peak bandwidth", l.label)));
            }
            if self.law_applies(l) {
                let x0 = l.points[0].x;
                let text = format!("{}: Little's law at the latency measured at {short}={x0}", l.label);
                top.push((Swatch::Line(c, Dash::Dotted), text));
            }
            bottom.push((Swatch::Line(c, Dash::Solid), format!("{}: mean", l.label)));
            bottom.push((Swatch::Line(c, Dash::Dashed), format!("{}: p99", l.label)));
        }
        if let Some(p) = &self.shared_peak {
            let peak = p.iter().map(|q| q.1).fold(0.0, f64::max);
            top.push((
                Swatch::Line(BLACK, Dash::Dashed),
                format!("memory's peak bandwidth ({peak:.0} GB/s)"),
            ));
        }
        for (i, (label, gbs)) in self.saturation.iter().enumerate() {
            let c = SATURATION_GREYS[i % SATURATION_GREYS.len()];
            top.push((
                Swatch::Line(c, Dash::Dashed),
                format!("memory alone saturates: {label} ({gbs:.0} GB/s)"),
            ));
        }
        (Legend(top), Legend(bottom))
    }

    /// A panel's chart: the shared x axis, `y` from zero to `y_max`.
    fn chart<'a, 'b>(
        &self,
        area: &'a Area<'b>,
        title: &str,
        y_desc: &str,
        y_max: f64,
    ) -> Result<Chart<'a, 'b, impl Ranged<ValueType = f64>, impl Ranged<ValueType = f64>>, String> {
        let mut chart = chart_on(area, title, 44, 72)
            .build_cartesian_2d(self.range.0..self.range.1, 0.0..y_max)
            .map_err(fail)?;
        let log_x = self.log_x;
        let x_label = |v: &f64| if log_x { tick(2f64.powf(*v)) } else { tick(*v) };
        let x_desc = if log_x { format!("{} (log scale)", self.x_axis) } else { self.x_axis.clone() };
        // On a log2 axis, one label per power of two (the tick positions plotters would pick
        // fall between them, at values like 5.66).
        let x_ticks = if log_x { (self.range.1 - self.range.0).round().max(1.0) as usize + 1 } else { 10 };
        mesh(&mut chart)
            .x_desc(x_desc)
            .x_labels(x_ticks)
            .x_label_formatter(&x_label)
            .y_desc(y_desc)
            .y_label_formatter(&|v| tick(*v))
            .draw()
            .map_err(fail)?;
        Ok(chart)
    }

    /// Whether Little's law applies to line `l`: what varies along the x axis must include its
    /// system (see `varied`).
    fn law_applies(&self, l: &Line) -> bool {
        self.littles && self.varied.as_ref().is_none_or(|names| names.contains(&l.system))
    }

    /// The top panel: throughput, the memory's peak and (if asked) Little's law.
    fn throughput(&self, area: &Area<'_>) -> Result<(), String> {
        let all = self.lines.iter().flat_map(|l| l.points.iter().flat_map(|p| [Some(p.gb_per_s), p.peak]));
        let sat = self.saturation.iter().map(|s| s.1);
        let y_max = all.flatten().chain(sat).fold(0.0f64, f64::max).max(1e-9) * 1.12;
        let mut title = format!("Throughput against {} (GB/s; memory's peak dashed", self.x_axis);
        title += if self.littles { ", Little's law dotted)" } else { ")" };
        let mut chart = self.chart(area, &title, "GB/s", y_max)?;
        if let Some(p) = &self.shared_peak {
            draw_line(&mut chart, self.peak_points(p), BLACK, 1, Dash::Dashed)?;
        }
        for (i, (_, gbs)) in self.saturation.iter().enumerate() {
            let c = SATURATION_GREYS[i % SATURATION_GREYS.len()];
            draw_line(&mut chart, vec![(self.range.0, *gbs), (self.range.1, *gbs)], c, 1, Dash::Dashed)?;
        }
        let x_max = self.lines.iter().flat_map(|l| l.points.iter().map(|p| p.x)).fold(f64::MIN, f64::max);
        for (i, l) in self.lines.iter().enumerate() {
            let c = COLOURS[i % COLOURS.len()];
            let points: Vec<(f64, f64)> = l.points.iter().map(|p| (self.tx(p.x), p.gb_per_s)).collect();
            draw_line(&mut chart, points.clone(), c, 2, Dash::Solid)?;
            chart.draw_series(points.iter().map(|&p| Circle::new(p, 3, c.filled()))).map_err(fail)?;
            if self.shared_peak.is_none() {
                draw_line(&mut chart, self.peak_points(&l.peak()), c, 1, Dash::Dashed)?;
            }
            if self.law_applies(l) {
                let (x0, g0) = (l.points[0].x, l.points[0].gb_per_s);
                let law = littles_law_line(x0, g0, x_max, y_max, self.log_x);
                draw_line(
                    &mut chart,
                    law.iter().map(|&(x, y)| (self.tx(x), y)).collect(),
                    c,
                    2,
                    Dash::Dotted,
                )?;
            }
        }
        Ok(())
    }

    /// The bottom panel: mean and p99 lookup latency.
    fn latency(&self, area: &Area<'_>) -> Result<(), String> {
        let all = self.lines.iter().flat_map(|l| l.points.iter().flat_map(|p| [p.mean_ns, p.p99_ns]));
        let y_max = all.fold(0.0f64, f64::max).max(1e-9) * 1.12;
        let title = format!("Lookup latency against {} (mean solid, p99 dashed)", self.x_axis);
        let mut chart = self.chart(area, &title, "latency (ns)", y_max)?;
        for (i, l) in self.lines.iter().enumerate() {
            let c = COLOURS[i % COLOURS.len()];
            let mean: Vec<(f64, f64)> = l.points.iter().map(|p| (self.tx(p.x), p.mean_ns)).collect();
            draw_line(&mut chart, mean.clone(), c, 2, Dash::Solid)?;
            chart.draw_series(mean.iter().map(|&p| Circle::new(p, 3, c.filled()))).map_err(fail)?;
            let p99 = l.points.iter().map(|p| (self.tx(p.x), p.p99_ns)).collect();
            draw_line(&mut chart, p99, c, 2, Dash::Dashed)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plot::tests::{check_plot, temp_dir};
    use serde_json::json;

    /// Sweep results over `max_outstanding` (1, 4, 16) for one system: throughput doubling
    /// per point up to a plateau, against an 800 GB/s memory.
    fn results(littles_law: bool) -> Value {
        let point = |i: usize, x: u64, gbs: f64, mean: f64| {
            json!({
                "point": { "index": i, "axes": ["system.dae.max_outstanding"],
                           "values": { "system.dae.max_outstanding": x } },
                "runs": [
                    { "system": "dae", "workload": "rm1", "achieved_gb_per_s": gbs,
                      "peak_bandwidth_share": gbs / 800.0,
                      "lookup_latency_ps": { "p50": mean * 0.9, "p99": mean * 2.0, "mean": mean } },
                    { "system": "gpu", "workload": "rm1", "error": "failed" },
                    { "system": "cpu", "workload": "rm1", "achieved_gb_per_s": 20.0,
                      "peak_bandwidth_share": 20.0 / 800.0,
                      "lookup_latency_ps": { "p50": 1e5, "p99": 3e5, "mean": 1.2e5 } },
                ],
            })
        };
        json!({
            "sweep": { "mode": "product", "littles_law": littles_law },
            "points": [point(0, 1, 10.0, 400e3), point(1, 4, 35.0, 450e3), point(2, 16, 90.0, 700e3)],
        })
    }

    #[test]
    fn littles_law_scales_the_first_point_and_stops_at_the_panel_top() {
        assert_eq!(littles_law(2.0, 10.0, 8.0), 40.0);
        // From 10 GB/s at x = 1 the law reaches the top (100) at x = 10, before the axis ends.
        let line = littles_law_line(1.0, 10.0, 16.0, 100.0, true);
        assert_eq!(line[0], (1.0, 10.0));
        let last = *line.last().unwrap();
        assert!((last.0 - 10.0).abs() < 1e-9 && (last.1 - 100.0).abs() < 1e-9, "{last:?}");
        assert!(line.iter().all(|&(x, y)| (y - 10.0 * x).abs() < 1e-9 * y));
        // On a linear axis two points make the (straight) line.
        assert_eq!(littles_law_line(1.0, 10.0, 4.0, 100.0, false), [(1.0, 10.0), (4.0, 40.0)]);
    }

    #[test]
    fn the_sweep_plot_draws_throughput_latency_and_littles_law_only_when_asked() {
        let tmp = temp_dir("sweep");
        let dir = tmp.path();
        let files = sweep_lines(&results(false), "sweep-results.json", dir).unwrap();
        assert_eq!(files, [dir.join("sweep.svg"), dir.join("sweep.png")]);
        let texts = [
            "Throughput against system.dae.max_outstanding (GB/s",
            "Lookup latency against system.dae.max_outstanding (mean solid, p99 dashed)",
            "dae rm1: mean",
            "dae rm1: p99",
            "memory&apos;s peak bandwidth (800 GB/s)",
            "latency (ns)",
        ];
        let svg = check_plot(&files, &texts);
        assert!(!svg.contains("Little"), "Little's law drawn unasked");
        sweep_lines(&results(true), "sweep-results.json", dir).unwrap();
        let svg = std::fs::read_to_string(dir.join("sweep.svg")).unwrap();
        assert!(svg.contains("dae rm1: Little&apos;s law at the latency measured at max_outstanding=1"));
        // The axis is the DAE system's: the CPU's line, which it does not vary, gets no law.
        assert!(svg.contains("cpu rm1: mean") && !svg.contains("cpu rm1: Little"), "{svg}");
        // Zipped with an axis of the CPU's, the x axis varies both: both get the law.
        let mut zipped = results(true);
        zipped["sweep"]["mode"] = json!("zip");
        for p in zipped["points"].as_array_mut().unwrap() {
            p["point"]["axes"] = json!(["system.dae.max_outstanding", "system.cpu.max_outstanding"]);
        }
        sweep_lines(&zipped, "sweep-results.json", dir).unwrap();
        let svg = std::fs::read_to_string(dir.join("sweep.svg")).unwrap();
        assert!(svg.contains("cpu rm1: Little") && svg.contains("dae rm1: Little"));
        assert!(!svg.contains("saturates"), "no memory curves, no saturation line");
        // With the memory's curves in the results, each curve's saturation gets its line.
        let mut v = results(false);
        v["memory_curves"] =
            json!([{ "label": "random 128 B reads", "saturation_gb_per_s": 640.4, "points": [] }]);
        sweep_lines(&v, "sweep-results.json", dir).unwrap();
        let svg = std::fs::read_to_string(dir.join("sweep.svg")).unwrap();
        assert!(svg.contains("memory alone saturates: random 128 B reads (640 GB/s)"));
    }

    #[test]
    fn a_run_without_its_figures_is_an_error_naming_the_field() {
        let mut v = results(false);
        v["points"][1]["runs"][0]["lookup_latency_ps"] = json!({ "p50": 1 });
        let tmp = temp_dir("sweep-bad");
        let dir = tmp.path();
        let e = sweep_lines(&v, "x/sweep-results.json", dir).unwrap_err();
        assert_eq!(e, "x/sweep-results.json: points[1].runs[0].lookup_latency_ps.mean: missing");
    }
}
