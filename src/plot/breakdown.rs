//! Where the time went (`breakdown.svg`, `breakdown.png`): one horizontal bar per run for its
//! cores and, on a chip with access units, one for its access units, each stacked from the
//! run's `time_breakdown` shares (src/breakdown.rs), 0 to 100% of the run.

use super::{
    Area, Field, LABEL, Legend, SMALL, Swatch, chart_on, fail, font, mesh, point_label, run_names, save,
    sweep_axes, text_at, text_width,
};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// A part of a bar: its key in `time_breakdown`, its legend text and its colour.
type Part = (&'static str, &'static str, RGBColor);

/// Time spent done: the same grey on both kinds of bar.
const DONE: RGBColor = RGBColor(200, 200, 200);

/// The cores' parts, in the order they stack.
const CORE: [Part; 5] = [
    ("dispatching", "core: dispatching", RGBColor(44, 160, 44)),
    ("memory", "core: stalled on memory (ROB/LQ/SQ/MSHR full)", RGBColor(214, 39, 40)),
    ("queue_empty", "core: output queue empty (access unit behind)", RGBColor(255, 127, 14)),
    ("mispredict", "core: refilling after a mispredicted branch", RGBColor(148, 103, 189)),
    ("done", "core: done (waiting for the others)", DONE),
];

/// The access units' parts, in the order they stack.
const UNIT: [Part; 5] = [
    ("working", "access unit: working", RGBColor(31, 119, 180)),
    ("storage_full", "access unit: stream storage full", RGBColor(140, 86, 75)),
    ("request_limit", "access unit: request limit", RGBColor(227, 119, 194)),
    ("queue_full", "access unit: output queue full", RGBColor(188, 189, 34)),
    ("done", "access unit: done (waiting for the others)", DONE),
];

/// More bars than this in a sweep's plot, and only the first system's are drawn.
const MAX_BARS: usize = 40;

/// One bar: its label, whether it is an access unit's, and its parts' shares.
#[derive(Debug, Clone)]
struct Bar {
    label: String,
    unit: bool,
    shares: [f64; 5],
}

/// The bars of a run (none for a failed run or one without a breakdown), labelled
/// `prefix system / workload (core)`.
fn run_bars(run: &Field<'_>, prefix: &str) -> Result<Vec<Bar>, String> {
    let Some((system, workload)) = run_names(run)? else { return Ok(Vec::new()) };
    let Some(b) = run.opt("time_breakdown") else { return Ok(Vec::new()) };
    let shares = |f: &Field<'_>, parts: &[Part; 5]| -> Result<[f64; 5], String> {
        let mut s = [0.0; 5];
        for (v, (key, _, _)) in s.iter_mut().zip(parts) {
            *v = f.get(key).f64()?;
        }
        Ok(s)
    };
    let label = |what: &str| format!("{prefix}{system} / {workload} ({what})");
    let mut bars = vec![Bar { label: label("core"), unit: false, shares: shares(&b.get("core"), &CORE)? }];
    if let Some(u) = b.opt("access_unit") {
        bars.push(Bar { label: label("access unit"), unit: true, shares: shares(&u, &UNIT)? });
    }
    Ok(bars)
}

/// Draws the time breakdown of an experiment's runs (`results.json`, read from `file`) into
/// `dir`. Returns the files, or `None` when no run has a breakdown (GPU and analytic runs).
pub fn experiment_breakdown(results: &Value, file: &str, dir: &Path) -> Result<Option<Vec<PathBuf>>, String> {
    let root = Field::root(file, results);
    let mut bars = Vec::new();
    for run in root.get("runs").items()? {
        bars.push(run_bars(&run, "")?);
    }
    let title = "Where the time went (share of the run, averaged over the cores and the access units)";
    draw(bars, title, dir)
}

/// Draws the time breakdown of a sweep's runs (`sweep-results.json`, read from `file`) into
/// `dir`: a bar pair per point, system and workload, labelled with the point's axis values;
/// only the first system's when there would be more than 40 bars. Returns the files, or `None`
/// when no run has a breakdown.
pub fn sweep_breakdown(results: &Value, file: &str, dir: &Path) -> Result<Option<Vec<PathBuf>>, String> {
    let root = Field::root(file, results);
    let axes = sweep_axes(&root)?;
    let mut runs = Vec::new();
    for p in root.get("points").items()? {
        let prefix = format!("{}: ", point_label(&root, &p, &axes).join(", "));
        for run in p.get("runs").items()? {
            let system = run_names(&run)?.map(|(s, _)| s.to_string());
            runs.push((system, run_bars(&run, &prefix)?));
        }
    }
    let mut title = "Where the time went, per sweep point (share of the run)".to_string();
    if runs.iter().map(|r| r.1.len()).sum::<usize>() > MAX_BARS {
        let first = runs.iter().find(|r| !r.1.is_empty()).and_then(|r| r.0.clone());
        if let Some(first) = first {
            runs.retain(|r| r.0.as_deref() == Some(first.as_str()));
            title = format!("Where the time went on {first}, per sweep point (share of the run)");
        }
    }
    draw(runs.into_iter().map(|r| r.1).collect(), &title, dir)
}

/// Bar height and the gap between runs, in pixels.
const BAR: u32 = 22;
const GAP: u32 = 10;

/// Draws `runs` (each a run's bars, drawn together) as `breakdown.svg` and `.png`.
fn draw(runs: Vec<Vec<Bar>>, title: &str, dir: &Path) -> Result<Option<Vec<PathBuf>>, String> {
    let runs: Vec<Vec<Bar>> = runs.into_iter().filter(|r| !r.is_empty()).collect();
    if runs.is_empty() {
        return Ok(None);
    }
    let any_unit = runs.iter().flatten().any(|b| b.unit);
    let parts = CORE.iter().chain(if any_unit { &UNIT[..] } else { &[] });
    // One "done" entry when both kinds of bar have one: they share the grey.
    let legend = Legend(
        parts
            .filter(|(key, _, _)| *key != "done")
            .map(|&(_, text, c)| (Swatch::Box(c), text.to_string()))
            .chain([(Swatch::Box(DONE), "done (finished, waiting for the run to end)".to_string())])
            .collect(),
    );
    let label_w = runs.iter().flatten().map(|b| text_width(&b.label, LABEL)).max().unwrap_or(0) as u32 + 16;
    let width = (label_w + 760).max(1000);
    // Bars are stacked from the top; each run's bars sit together, runs apart by a gap.
    let mut slots = Vec::new();
    let mut y = 0;
    for r in &runs {
        for b in r {
            slots.push((y, b));
            y += BAR;
        }
        y += GAP;
    }
    // Room for the title above and the axis below.
    let plot_h = y + 100;
    let legend_h = legend.height(width);
    save(dir, "breakdown", (width, plot_h + legend_h), |area| {
        let (top, key) = area.split_vertically(plot_h);
        bars(&top, title, label_w, y, &slots)?;
        legend.draw(&key)
    })
    .map(Some)
}

/// The chart: x from 0 to 100% of the run, y in pixels from the top (`span` high).
fn bars(area: &Area<'_>, title: &str, label_w: u32, span: u32, slots: &[(u32, &Bar)]) -> Result<(), String> {
    let span = f64::from(span);
    let mut chart =
        chart_on(area, title, 44, label_w).build_cartesian_2d(0.0..100.0, 0.0..span).map_err(fail)?;
    mesh(&mut chart)
        .disable_y_mesh()
        .y_labels(0)
        .x_desc("share of the run's time")
        .x_label_formatter(&|v| format!("{v:.0}%"))
        .draw()
        .map_err(fail)?;
    for &(top, bar) in slots {
        // y grows upwards in the chart: a bar `top` pixels from the top spans these.
        let (y1, y0) = (span - f64::from(top) - 2.0, span - f64::from(top + BAR) + 2.0);
        let parts = if bar.unit { &UNIT } else { &CORE };
        let mut x = 0.0;
        for (&share, &(_, _, c)) in bar.shares.iter().zip(parts) {
            let w = 100.0 * share;
            chart.draw_series([Rectangle::new([(x, y0), (x + w, y1)], c.filled())]).map_err(fail)?;
            // The share written in the part when it has room.
            if w >= 6.0 {
                let dark = 0.299 * f64::from(c.0) + 0.587 * f64::from(c.1) + 0.114 * f64::from(c.2) < 150.0;
                let ink = if dark { WHITE } else { BLACK };
                let style = font(SMALL, HPos::Center, VPos::Center).color(&ink);
                let at = chart.backend_coord(&(x + w / 2.0, (y0 + y1) / 2.0));
                text_at(area, at, format!("{w:.0}%"), style)?;
            }
            x += w;
        }
        let (px, py) = chart.backend_coord(&(0.0, (y0 + y1) / 2.0));
        text_at(area, (px - 8, py), bar.label.clone(), font(LABEL, HPos::Right, VPos::Center))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plot::tests::{check_plot, temp_dir};
    use serde_json::json;

    fn breakdown(unit: bool) -> Value {
        let core =
            json!({ "dispatching": 0.4, "memory": 0.1, "queue_empty": 0.3, "mispredict": 0.0, "done": 0.2 });
        let au = json!({ "working": 0.3, "storage_full": 0.05, "request_limit": 0.0, "queue_full": 0.15, "done": 0.5 });
        if unit {
            json!({ "core": core, "access_unit": au })
        } else {
            json!({ "core": core, "access_unit": null })
        }
    }

    #[test]
    fn an_experiment_gets_a_core_bar_per_run_and_a_unit_bar_where_it_has_units() {
        let v = json!({ "runs": [
            { "system": "dae", "workload": "rm1", "time_breakdown": breakdown(true) },
            { "system": "cpu", "workload": "rm1", "time_breakdown": breakdown(false) },
            { "system": "h100", "workload": "rm1" },
            { "system": "dae", "workload": "gnn", "error": "failed" },
        ]});
        let tmp = temp_dir("breakdown");
        let dir = tmp.path();
        let files = experiment_breakdown(&v, "results.json", dir).unwrap().unwrap();
        let texts = [
            "Where the time went",
            "dae / rm1 (core)",
            "dae / rm1 (access unit)",
            "cpu / rm1 (core)",
            "share of the run&apos;s time",
            "100%",
            "core: stalled on memory (ROB/LQ/SQ/MSHR full)",
            "access unit: stream storage full",
            "access unit: request limit",
            "access unit: output queue full",
            // The access unit's output queue was full 15% of the run (the axis has tens only).
            "15%",
        ];
        let svg = check_plot(&files, &texts);
        assert!(!svg.contains("h100") && !svg.contains("cpu / rm1 (access unit)"));
        // Without any breakdown there is nothing to draw.
        let none = json!({ "runs": [{ "system": "h100", "workload": "rm1" }] });
        assert!(experiment_breakdown(&none, "results.json", dir).unwrap().is_none());
    }

    #[test]
    fn a_missing_share_is_an_error_naming_it() {
        let mut b = breakdown(true);
        b["access_unit"].as_object_mut().unwrap().remove("queue_full");
        let v = json!({ "runs": [{ "system": "dae", "workload": "rm1", "time_breakdown": b }] });
        let tmp = temp_dir("breakdown-bad");
        let dir = tmp.path();
        let e = experiment_breakdown(&v, "r.json", dir).unwrap_err();
        assert_eq!(e, "r.json: runs[0].time_breakdown.access_unit.queue_full: missing");
        assert!(!dir.join("breakdown.svg").exists());
    }

    #[test]
    fn a_sweep_labels_bars_with_the_point_and_keeps_the_first_system_past_40_bars() {
        let point = |i: u64| {
            json!({
                "point": { "index": i, "axes": ["system.dae.cores"], "values": { "system.dae.cores": i } },
                "runs": [
                    { "system": "dae", "workload": "rm1", "time_breakdown": breakdown(true) },
                    { "system": "cpu", "workload": "rm1", "time_breakdown": breakdown(false) },
                ],
            })
        };
        let tmp = temp_dir("breakdown-sweep");
        let dir = tmp.path();
        let few = json!({ "sweep": { "mode": "product" }, "points": [point(1), point(2)] });
        sweep_breakdown(&few, "s.json", dir).unwrap().unwrap();
        let svg = std::fs::read_to_string(dir.join("breakdown.svg")).unwrap();
        assert!(
            svg.contains("cores=2: dae / rm1 (access unit)") && svg.contains("cores=1: cpu / rm1 (core)")
        );
        // 14 points of 3 bars are 42: only dae's 28 are drawn.
        let many =
            json!({ "sweep": { "mode": "product" }, "points": (1..=14).map(point).collect::<Vec<_>>() });
        sweep_breakdown(&many, "s.json", dir).unwrap().unwrap();
        let svg = std::fs::read_to_string(dir.join("breakdown.svg")).unwrap();
        assert!(svg.contains("cores=14: dae / rm1 (core)") && !svg.contains("cpu / rm1"));
        assert!(svg.contains("Where the time went on dae"));
    }
}
