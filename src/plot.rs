//! Plots of an experiment's results: speedup and perf/W over the baseline as grouped bars, one
//! bar per system and workload plus the geometric means, on a log scale with the baseline's
//! 1.0 marked. SVG (text stays text, so no font files are needed).

use crate::report::Comparison;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::path::Path;

/// Bar colours, one per system in order.
const COLOURS: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
];

/// Draws `c` into the SVG file `path`: speedup on top, perf/W below.
pub fn speedup_bars(c: &Comparison, path: &Path) -> Result<(), String> {
    let err = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
    let groups: Vec<String> = c.workloads.iter().cloned().chain(["geomean".to_string()]).collect();
    let width = (160 + 90 * groups.len() as u32).max(640);
    let root = SVGBackend::new(path, (width, 760)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let (top, bottom) = root.split_vertically(380);
    type Pick = fn(&crate::report::SystemComparison) -> (Vec<Option<f64>>, Option<f64>);
    let panels: [(&str, Pick); 2] = [
        ("Speedup", |s| (s.speedup.clone(), s.geomean_speedup)),
        ("Performance per watt", |s| (s.perf_per_watt.clone(), s.geomean_perf_per_watt)),
    ];
    for (area, (what, pick)) in [&top, &bottom].into_iter().zip(panels) {
        let values: Vec<(Vec<Option<f64>>, Option<f64>)> = c.systems.iter().map(pick).collect();
        let all: Vec<f64> = values
            .iter()
            .flat_map(|(v, g)| v.iter().chain([g]).flatten().copied())
            .filter(|v| *v > 0.0)
            .collect();
        let lo = all.iter().copied().fold(1.0f64, f64::min) / 1.5;
        // Headroom above the tallest bar for the legend (a quarter of the log axis or more).
        let hi = all.iter().copied().fold(1.0f64, f64::max) * 4.0;
        let n = groups.len() as f64;
        let mut chart = ChartBuilder::on(area)
            .caption(
                format!("{what} over {} (x, log scale; higher is better)", c.baseline),
                ("sans-serif", 20),
            )
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(56)
            .build_cartesian_2d(0.0..n, (lo..hi).log_scale())
            .map_err(|e| err(&e))?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(0)
            .y_desc(format!("{what} vs {}", c.baseline))
            .y_label_formatter(&|v| format!("{v:.2}"))
            .draw()
            .map_err(|e| err(&e))?;
        let k = values.len().max(1) as f64;
        let bar = 0.8 / k;
        for (si, ((vals, geo), sys)) in values.iter().zip(&c.systems).enumerate() {
            let colour = COLOURS[si % COLOURS.len()];
            let bars = vals.iter().chain([geo]).enumerate().filter_map(|(g, v)| {
                let v = (*v)?;
                let x0 = g as f64 + 0.1 + bar * si as f64;
                Some(Rectangle::new([(x0, lo), (x0 + bar * 0.9, v.max(lo))], colour.filled()))
            });
            chart
                .draw_series(bars)
                .map_err(|e| err(&e))?
                .label(sys.name.clone())
                .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 10, y + 5)], colour.filled()));
        }
        // The baseline's 1.0 and a divider before the geometric means.
        chart
            .draw_series(LineSeries::new([(0.0, 1.0), (n, 1.0)], BLACK.stroke_width(1)))
            .map_err(|e| err(&e))?;
        chart
            .draw_series(LineSeries::new([(n - 1.0, lo), (n - 1.0, hi)], BLACK.mix(0.3).stroke_width(1)))
            .map_err(|e| err(&e))?;
        chart
            .configure_series_labels()
            .border_style(BLACK)
            .background_style(WHITE.mix(0.9))
            .position(SeriesLabelPosition::UpperRight)
            .draw()
            .map_err(|e| err(&e))?;
        // Workload names under their groups.
        for (g, name) in groups.iter().enumerate() {
            let (px, py) = chart.backend_coord(&(g as f64 + 0.5, lo));
            let style =
                TextStyle::from(("sans-serif", 13).into_font()).pos(Pos::new(HPos::Center, VPos::Top));
            // Chart coordinates are the whole image's: draw on the root.
            root.draw(&Text::new(name.clone(), (px, py + 6), style)).map_err(|e| err(&e))?;
        }
    }
    root.present().map_err(|e| err(&e))?;
    Ok(())
}

/// One line of a sweep plot: a (system, workload) pair over the first axis, the other axes
/// fixed at the values in its label.
struct Line {
    label: String,
    points: Vec<(f64, f64, f64, f64)>,
    bound: Option<f64>,
}

/// Draws a complete sweep's results (`sweep-results.json`) into `dir`: `sweep.svg`, with
/// throughput (lookups/s, the HBM-bandwidth bound dashed) and p50/p99 lookup latency against
/// the first axis, one line per system, workload and value of the other axes. Returns the file.
pub fn sweep_lines(results: &serde_json::Value, dir: &Path) -> Result<std::path::PathBuf, String> {
    let path = dir.join("sweep.svg");
    let err = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
    let points = results["points"].as_array().ok_or("sweep-results.json has no points")?;
    let axes: Vec<String> = points
        .first()
        .and_then(|p| p["point"]["axes"].as_array())
        .map(|a| a.iter().filter_map(|k| k.as_str().map(String::from)).collect())
        .unwrap_or_default();
    let x_axis = axes.first().ok_or("the sweep has no axis")?.clone();
    // In a product, the other axes' values tell lines apart; zipped axes move with the first.
    let split = results["sweep"]["mode"].as_str() != Some("zip");
    let mut lines: Vec<Line> = Vec::new();
    for p in points {
        let Some(x) = p["point"]["values"][&x_axis].as_f64() else { continue };
        let others: Vec<String> = axes[1..]
            .iter()
            .filter(|_| split)
            .map(|k| format!("{}={}", k.rsplit('.').next().unwrap_or(k), p["point"]["values"][k]))
            .collect();
        for run in p["runs"].as_array().into_iter().flatten() {
            let (Some(rate), Some(p50), Some(p99)) = (
                run["lookups_per_second"].as_f64(),
                run["lookup_latency_ps"]["p50"].as_f64(),
                run["lookup_latency_ps"]["p99"].as_f64(),
            ) else {
                continue;
            };
            let mut label = format!(
                "{} {}",
                run["system"].as_str().unwrap_or("?"),
                run["workload"].as_str().unwrap_or("?")
            );
            if !others.is_empty() {
                label += &format!(" ({})", others.join(", "));
            }
            // The HBM bound in lookups/s: peak bandwidth over the bytes a lookup moved.
            let gbs = run["achieved_gb_per_s"].as_f64().unwrap_or(0.0);
            let share = run["peak_bandwidth_share"].as_f64().unwrap_or(0.0);
            let bound = (gbs > 0.0 && share > 0.0).then(|| gbs / share * 1e9 / (gbs * 1e9 / rate));
            match lines.iter_mut().find(|l| l.label == label) {
                Some(l) => l.points.push((x, rate, p50 / 1e3, p99 / 1e3)),
                None => lines.push(Line { label, points: vec![(x, rate, p50 / 1e3, p99 / 1e3)], bound }),
            }
        }
    }
    if lines.is_empty() {
        return Err(format!("{}: no numeric values of {x_axis} with results to plot", path.display()));
    }
    for l in &mut lines {
        l.points.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    let xs: Vec<f64> = lines.iter().flat_map(|l| l.points.iter().map(|p| p.0)).collect();
    let (x_lo, x_hi) =
        (xs.iter().copied().fold(f64::MAX, f64::min), xs.iter().copied().fold(f64::MIN, f64::max));
    let log_x = x_lo > 0.0 && x_hi / x_lo >= 16.0;
    let root = SVGBackend::new(&path, (960, 820)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let (top, bottom) = root.split_vertically(410);
    let rates: Vec<f64> = lines.iter().flat_map(|l| l.points.iter().map(|p| p.1).chain(l.bound)).collect();
    let y_hi = rates.iter().copied().fold(0.0f64, f64::max) * 1.3 / 1e9;
    let lat: Vec<f64> = lines.iter().flat_map(|l| l.points.iter().flat_map(|p| [p.2, p.3])).collect();
    let lat_hi = lat.iter().copied().fold(0.0f64, f64::max) * 1.4;
    let x_name = x_axis.clone();
    // A wide axis (powers of two, as outstanding requests) is drawn in log2: positions are
    // log2(x), labels the values.
    let tx = move |x: f64| if log_x { x.log2() } else { x };
    let (xl, xh) = if x_lo == x_hi { (tx(x_lo) - 1.0, tx(x_hi) + 1.0) } else { (tx(x_lo), tx(x_hi)) };
    let x_label = move |v: &f64| {
        if log_x { format!("{}", (2f64.powf(*v) * 100.0).round() / 100.0) } else { format!("{v}") }
    };
    macro_rules! panel {
        ($area:expr, $x:expr, $title:expr, $ydesc:expr, $yr:expr, $draw:expr, $legend:expr) => {{
            let mut chart = ChartBuilder::on($area)
                .caption($title, ("sans-serif", 20))
                .margin(12)
                .x_label_area_size(40)
                .y_label_area_size(64)
                .build_cartesian_2d($x, $yr)
                .map_err(|e| err(&e))?;
            chart
                .configure_mesh()
                .x_desc(if log_x { format!("{x_name} (log scale)") } else { x_name.clone() })
                .x_label_formatter(&x_label)
                .y_desc($ydesc)
                .draw()
                .map_err(|e| err(&e))?;
            $draw(&mut chart)?;
            chart
                .configure_series_labels()
                .border_style(BLACK)
                .background_style(WHITE.mix(0.9))
                .position($legend)
                .draw()
                .map_err(|e| err(&e))?;
        }};
    }
    let title_t = format!("Throughput against {x_axis}");
    let title_l = format!("Lookup latency against {x_axis} (p50 solid, p99 dashed)");
    let throughput = |chart: &mut ChartContext<'_, SVGBackend<'_>, _>| -> Result<(), String> {
        for (i, l) in lines.iter().enumerate() {
            let c = COLOURS[i % COLOURS.len()];
            chart
                .draw_series(LineSeries::new(
                    l.points.iter().map(|p| (tx(p.0), p.1 / 1e9)),
                    c.stroke_width(2),
                ))
                .map_err(|e| err(&e))?
                .label(l.label.clone())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], c.stroke_width(2)));
            chart
                .draw_series(l.points.iter().map(|p| Circle::new((tx(p.0), p.1 / 1e9), 3, c.filled())))
                .map_err(|e| err(&e))?;
            if let Some(b) = l.bound {
                let dashes = DashedLineSeries::new([(xl, b / 1e9), (xh, b / 1e9)], 6, 4, c.stroke_width(1));
                chart
                    .draw_series(dashes)
                    .map_err(|e| err(&e))?
                    .label(format!("{}: HBM bound", l.label))
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], c.stroke_width(1)));
            }
        }
        Ok(())
    };
    let latency = |chart: &mut ChartContext<'_, SVGBackend<'_>, _>| -> Result<(), String> {
        for (i, l) in lines.iter().enumerate() {
            let c = COLOURS[i % COLOURS.len()];
            chart
                .draw_series(LineSeries::new(l.points.iter().map(|p| (tx(p.0), p.2)), c.stroke_width(2)))
                .map_err(|e| err(&e))?
                .label(l.label.clone())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], c.stroke_width(2)));
            chart
                .draw_series(DashedLineSeries::new(
                    l.points.iter().map(|p| (tx(p.0), p.3)),
                    6,
                    4,
                    c.stroke_width(2),
                ))
                .map_err(|e| err(&e))?;
        }
        Ok(())
    };
    // Throughput rises to the right, so its legend goes top left, under the bound's line.
    panel!(&top, xl..xh, title_t, "G lookups/s", 0.0..y_hi, throughput, SeriesLabelPosition::UpperLeft);
    panel!(&bottom, xl..xh, title_l, "latency (ns)", 0.0..lat_hi, latency, SeriesLabelPosition::UpperMiddle);
    root.present().map_err(|e| err(&e))?;
    drop(root);
    Ok(dir.join("sweep.svg"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::SystemComparison;

    #[test]
    fn bars_are_drawn_for_every_system_and_the_geomean() {
        let c = Comparison {
            baseline: "h100".into(),
            workloads: vec!["dlrm-rm1".into(), "gnn".into()],
            systems: vec![
                SystemComparison {
                    name: "dae".into(),
                    speedup: vec![Some(4.75), Some(0.87)],
                    perf_per_watt: vec![Some(7.2), Some(2.0)],
                    geomean_speedup: Some(2.03),
                    geomean_perf_per_watt: Some(3.8),
                },
                SystemComparison {
                    name: "cpu".into(),
                    speedup: vec![Some(2.95), None],
                    perf_per_watt: vec![Some(5.6), None],
                    geomean_speedup: Some(2.95),
                    geomean_perf_per_watt: Some(5.6),
                },
            ],
        };
        let dir = std::env::temp_dir().join(format!("dae-sim-plot-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("speedup.svg");
        speedup_bars(&c, &path).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        for text in ["dlrm-rm1", "gnn", "geomean", "dae", "cpu", "Speedup over h100", "Performance per watt"]
        {
            assert!(svg.contains(text), "{text} missing");
        }
        // Two panels: dae has 3 bars in each (2 workloads and the geomean), cpu 2 (a missing
        // figure draws no bar); each panel's legend adds one swatch per system.
        assert_eq!(svg.matches("fill=\"#1F77B4\"").count(), 2 * 3 + 2);
        assert_eq!(svg.matches("fill=\"#FF7F0E\"").count(), 2 * 2 + 2);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
