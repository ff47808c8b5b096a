//! Lookup latency in multiples of the L1D hit latency (`latency.svg`, `latency.png`), as the
//! paper's Fig. 3 draws it: on top the histogram (the share of lookups in each of
//! `lookup_latency_bins`, a bar per run), below the CDF (`lookup_latency_cdf`, a line per run),
//! both against a log axis with 10x and 100x marked.
//!
//! Colours tell workloads apart and line styles (and bar shades) systems; with one workload,
//! colours tell the systems apart.

use super::{
    Area, COLOURS, Chart, Dash, Field, Legend, Swatch, chart_on, draw_line, fail, lighten, mesh, run_names,
    save,
};
use plotters::coord::ranged1d::Ranged;
use plotters::prelude::*;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The axis: from half the unit (room for the `<= 1x` bin) to 2000x.
const X_RANGE: (f64, f64) = (0.5, 2000.0);

/// Where the open last bin's bars end.
const LAST_EDGE: f64 = 2000.0;

/// One run's latency profile.
#[derive(Debug, Clone)]
struct Run {
    label: String,
    /// The run's system and workload, by their order of first appearance.
    system: usize,
    workload: usize,
    unit: String,
    bins: Vec<f64>,
    cdf: Vec<(f64, f64)>,
}

/// The runs with a latency profile and the histogram's bin edges.
fn read<'a>(results: &Field<'a>) -> Result<(Vec<Run>, Vec<f64>), String> {
    let (mut systems, mut workloads): (Vec<&'a str>, Vec<&'a str>) = (Vec::new(), Vec::new());
    let index = |names: &mut Vec<&'a str>, name: &'a str| {
        names.iter().position(|n| *n == name).unwrap_or_else(|| {
            names.push(name);
            names.len() - 1
        })
    };
    let mut runs = Vec::new();
    let mut edges: Option<Vec<f64>> = None;
    for run in results.get("runs").items()? {
        let Some((system, workload)) = run_names(&run)? else { continue };
        let Some(p) = run.opt("memory_level_parallelism") else { continue };
        let e = p.get("lookup_latency_bin_edges").numbers()?;
        let bins = p.get("lookup_latency_bins").numbers()?;
        if bins.len() != e.len() + 1 {
            return Err(p.get("lookup_latency_bins").error("not one bin more than there are edges"));
        }
        if edges.as_ref().is_some_and(|old| *old != e) {
            return Err(p.get("lookup_latency_bin_edges").error("differ from the first run's"));
        }
        edges = Some(e);
        let mut cdf = Vec::new();
        for point in p.get("lookup_latency_cdf").items()? {
            match point.numbers()?[..] {
                [units, fraction] => cdf.push((units, fraction)),
                _ => return Err(point.error("not a pair [units, fraction]")),
            }
        }
        runs.push(Run {
            label: format!("{system} / {workload}"),
            system: index(&mut systems, system),
            workload: index(&mut workloads, workload),
            unit: p.get("latency_unit").str()?.to_string(),
            bins,
            cdf,
        });
    }
    Ok((runs, edges.unwrap_or_default()))
}

/// Draws the lookup-latency histogram and CDF of an experiment's runs (`results.json`, read
/// from `file`) into `dir`. Returns the files, or `None` when no run has a latency profile.
pub fn latency_plot(results: &Value, file: &str, dir: &Path) -> Result<Option<Vec<PathBuf>>, String> {
    let (runs, edges) = read(&Field::root(file, results))?;
    if runs.is_empty() {
        return Ok(None);
    }
    let many_workloads = runs.iter().any(|r| r.workload > 0);
    let styles: Vec<Style> = runs.iter().map(|r| Style::of(r, many_workloads)).collect();
    let units: Vec<&str> = runs.iter().map(|r| r.unit.as_str()).collect();
    let unit = if units.iter().all(|u| *u == units[0]) {
        format!("multiples of the {} latency", units[0])
    } else {
        "multiples of each run's unit (L1D hit, or a core cycle without an L1D)".to_string()
    };
    let legend = Legend(
        runs.iter()
            .zip(&styles)
            .map(|(r, s)| (Swatch::BoxLine(s.fill, s.colour, s.dash), r.label.clone()))
            .collect(),
    );
    let width = 1000;
    let (top_h, bottom_h) = (400, 400);
    let size = (width, top_h + bottom_h + legend.height(width));
    save(dir, "latency", size, |area| {
        let (top, rest) = area.split_vertically(top_h);
        let (bottom, key) = rest.split_vertically(bottom_h);
        histogram(&top, &runs, &styles, &edges, &unit)?;
        cdf(&bottom, &runs, &styles, &unit)?;
        legend.draw(&key)
    })
    .map(Some)
}

/// How a run is drawn.
struct Style {
    colour: RGBColor,
    fill: RGBColor,
    dash: Dash,
}

impl Style {
    /// Colour by workload and dash and shade by system; by system alone with one workload.
    fn of(r: &Run, many_workloads: bool) -> Style {
        let (colour, variant) = if many_workloads { (r.workload, r.system) } else { (r.system, 0) };
        let colour = COLOURS[colour % COLOURS.len()];
        let dash = [Dash::Solid, Dash::Dashed, Dash::Dotted][variant % 3];
        let fill = lighten(colour, [0.0, 0.5, 0.75][variant % 3]);
        Style { colour, fill, dash }
    }
}

/// A panel against the log latency axis, `y` from zero to `y_max` %.
fn chart<'a, 'b>(
    area: &'a Area<'b>,
    title: &str,
    unit: &str,
    y_desc: &str,
    y_max: f64,
) -> Result<Chart<'a, 'b, impl Ranged<ValueType = f64>, impl Ranged<ValueType = f64>>, String> {
    let mut chart = chart_on(area, title, 44, 72)
        .build_cartesian_2d((X_RANGE.0..X_RANGE.1).log_scale(), 0.0..y_max)
        .map_err(fail)?;
    mesh(&mut chart)
        .x_desc(format!("lookup latency ({unit}, log scale)"))
        .x_label_formatter(&|v| format!("{v}x"))
        .y_desc(y_desc)
        .y_label_formatter(&|v| format!("{v:.0}%"))
        .draw()
        .map_err(fail)?;
    // The paper's marks: lookups slower than 10 and than 100 L1D hits (the axis labels them).
    for mark in [10.0, 100.0] {
        draw_line(&mut chart, vec![(mark, 0.0), (mark, y_max)], BLACK, 1, Dash::Dashed)?;
    }
    Ok(chart)
}

/// The histogram: per bin, a bar per run, side by side within the bin's span of the log axis.
fn histogram(
    area: &Area<'_>,
    runs: &[Run],
    styles: &[Style],
    edges: &[f64],
    unit: &str,
) -> Result<(), String> {
    let y_max = runs.iter().flat_map(|r| &r.bins).fold(0.0f64, |m, b| m.max(100.0 * b)).max(1.0) * 1.12;
    let title = "Lookup latency histogram (share of lookups per bin; the last bin holds all above 500x)";
    let mut chart = chart(area, title, unit, "share of lookups", y_max)?;
    // Bin i spans edge i - 1 to edge i: the first from the axis's start, the last to its end.
    let lows = std::iter::once(X_RANGE.0).chain(edges.iter().copied());
    let highs = edges.iter().copied().chain([LAST_EDGE]);
    let n = runs.len() as f64;
    for (b, (lo, hi)) in lows.zip(highs).enumerate() {
        let (l0, l1) = (lo.ln(), hi.ln());
        for (i, (r, s)) in runs.iter().zip(styles).enumerate() {
            let at = |t: f64| (l0 + (l1 - l0) * (0.08 + 0.84 * t / n)).exp();
            let v = 100.0 * r.bins[b];
            if v > 0.0 {
                let rect = Rectangle::new([(at(i as f64), 0.0), (at(i as f64 + 0.85), v)], s.fill.filled());
                chart.draw_series([rect]).map_err(fail)?;
            }
        }
    }
    Ok(())
}

/// The CDF: a line per run.
fn cdf(area: &Area<'_>, runs: &[Run], styles: &[Style], unit: &str) -> Result<(), String> {
    let title =
        "Lookup latency CDF (share of lookups at or below; 10x and 100x marked, as the paper's Fig. 3)";
    let mut chart = chart(area, title, unit, "lookups at or below", 100.0)?;
    for (r, s) in runs.iter().zip(styles) {
        let points = r.cdf.iter().filter(|p| p.0 <= X_RANGE.1).map(|&(u, f)| (u, 100.0 * f)).collect();
        draw_line(&mut chart, points, s.colour, 2, s.dash)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plot::tests::{check_plot, temp_dir};
    use serde_json::json;

    fn profile(bins: &[f64], cdf: &[[f64; 2]]) -> Value {
        json!({
            "latency_unit": "L1D hit",
            "lookup_latency_bin_edges": [1, 2, 5, 10, 20, 50, 100, 200, 500],
            "lookup_latency_bins": bins,
            "lookup_latency_cdf": cdf,
        })
    }

    #[test]
    fn the_latency_plot_draws_histogram_and_cdf_per_run() {
        let fast = profile(
            &[0.0, 0.0, 0.5, 0.5, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
            &[[1.0, 0.0], [5.0, 0.5], [10.0, 1.0], [2000.0, 1.0]],
        );
        let slow = profile(
            &[0.0, 0.0, 0.0, 0.0, 0.2, 0.3, 0.3, 0.2, 0.0, 0.0],
            &[[1.0, 0.0], [20.0, 0.2], [100.0, 0.8], [200.0, 1.0], [2000.0, 1.0]],
        );
        let v = json!({ "runs": [
            { "system": "dae", "workload": "rm1", "memory_level_parallelism": fast },
            { "system": "cpu", "workload": "rm1", "memory_level_parallelism": slow },
            { "system": "h100", "workload": "rm1" },
        ]});
        let tmp = temp_dir("latency");
        let dir = tmp.path();
        let files = latency_plot(&v, "results.json", dir).unwrap().unwrap();
        let texts = [
            "Lookup latency histogram",
            "Lookup latency CDF",
            "multiples of the L1D hit latency, log scale",
            "dae / rm1",
            "cpu / rm1",
            "10x",
            "100x",
        ];
        let svg = check_plot(&files, &texts);
        assert!(!svg.contains("h100"));
        // One workload: the colours tell the systems apart; dae's two bars are blue.
        assert_eq!(svg.matches("fill=\"#1F77B4\"").count(), 2 + 1, "two bars and the legend's box");
    }

    #[test]
    fn a_profile_without_its_cdf_is_an_error_naming_it() {
        let mut p = profile(&[0.1; 10], &[]);
        p.as_object_mut().unwrap().remove("lookup_latency_cdf");
        let v = json!({ "runs": [{ "system": "dae", "workload": "rm1", "memory_level_parallelism": p }] });
        let tmp = temp_dir("latency-bad");
        let dir = tmp.path();
        let e = latency_plot(&v, "r.json", dir).unwrap_err();
        assert_eq!(e, "r.json: runs[0].memory_level_parallelism.lookup_latency_cdf: missing");
        let none = json!({ "runs": [{ "system": "h100", "workload": "rm1" }] });
        assert!(latency_plot(&none, "r.json", dir).unwrap().is_none());
    }
}
