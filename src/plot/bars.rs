//! An experiment's speedup and perf/W over the baseline as grouped bars, one bar per system and
//! workload plus the geometric means, on a log scale with the baseline's 1.0 marked
//! (`speedup.svg` and `speedup.png`).

use super::{Area, COLOURS, LABEL, SMALL, chart_on, fail, font, log_tick, mesh, save, text_at, text_width};
use crate::report::Comparison;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};
use std::path::{Path, PathBuf};

/// Draws `c` into `dir` as `speedup.svg` and `speedup.png`: speedup on top, perf/W below.
/// Returns the files.
pub fn speedup_bars(c: &Comparison, dir: &Path) -> Result<Vec<PathBuf>, String> {
    let groups: Vec<String> = c.workloads.iter().cloned().chain(["geomean".to_string()]).collect();
    let width = (160 + 90 * groups.len() as u32).max(640);
    save(dir, "speedup", (width, 760), |root| draw(c, &groups, root))
}

fn draw(c: &Comparison, groups: &[String], root: &Area<'_>) -> Result<(), String> {
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
        let title = format!("{what} over {} (x, log scale; higher is better)", c.baseline);
        let mut chart =
            chart_on(area, &title, 36, 64).build_cartesian_2d(0.0..n, (lo..hi).log_scale()).map_err(fail)?;
        mesh(&mut chart)
            .disable_x_mesh()
            .x_labels(0)
            .y_desc(format!("{what} vs {}", c.baseline))
            .y_label_formatter(&|v| log_tick(*v))
            .draw()
            .map_err(fail)?;
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
                .map_err(fail)?
                .label(sys.name.clone())
                .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 10, y + 5)], colour.filled()));
            // Each bar's figure above it, where the bar is wide enough to hold it.
            for (g, v) in vals.iter().chain([geo]).enumerate() {
                let Some(v) = *v else { continue };
                let x0 = g as f64 + 0.1 + bar * si as f64;
                let (left, top) = chart.backend_coord(&(x0, v.max(lo)));
                let right = chart.backend_coord(&(x0 + bar * 0.9, lo)).0;
                let text = format!("{v:.2}");
                if right - left >= text_width(&text, SMALL) {
                    let style = font(SMALL, HPos::Center, VPos::Bottom);
                    text_at(root, ((left + right) / 2, top - 2), text, style)?;
                }
            }
        }
        // The baseline's 1.0 and a divider before the geometric means.
        chart.draw_series(LineSeries::new([(0.0, 1.0), (n, 1.0)], BLACK.stroke_width(1))).map_err(fail)?;
        chart
            .draw_series(LineSeries::new([(n - 1.0, lo), (n - 1.0, hi)], BLACK.mix(0.3).stroke_width(1)))
            .map_err(fail)?;
        chart
            .configure_series_labels()
            .border_style(BLACK)
            .background_style(WHITE.mix(0.9))
            .label_font(("sans-serif", LABEL))
            .position(SeriesLabelPosition::UpperRight)
            .draw()
            .map_err(fail)?;
        // Workload names under their groups.
        for (g, name) in groups.iter().enumerate() {
            let (px, py) = chart.backend_coord(&(g as f64 + 0.5, lo));
            text_at(root, (px, py + 6), name.clone(), font(LABEL, HPos::Center, VPos::Top))?;
        }
    }
    Ok(())
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
        let tmp = crate::plot::tests::temp_dir("bars");
        let dir = tmp.path();
        let files = speedup_bars(&c, dir).unwrap();
        let texts = ["dlrm-rm1", "gnn", "geomean", "dae", "cpu", "Speedup over h100", "Performance per watt"];
        let svg = crate::plot::tests::check_plot(&files, &texts);
        // Two workloads and the geomean: 160 + 3 x 90 px is below the 640 px minimum.
        assert!(svg.contains("width=\"640\" height=\"760\""));
        // Two panels: dae has 3 bars in each (2 workloads and the geomean), cpu 2 (a missing
        // figure draws no bar); each panel's legend adds one swatch per system.
        assert_eq!(svg.matches("fill=\"#1F77B4\"").count(), 2 * 3 + 2);
        assert_eq!(svg.matches("fill=\"#FF7F0E\"").count(), 2 * 2 + 2);
    }
}
