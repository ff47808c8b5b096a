//! Plots of results, each written twice: as SVG (text stays text, for the browser) and as PNG
//! (for the README and anything that shows no SVG). A figure is drawn once, with plotters' SVG
//! backend, and that SVG is rasterised with resvg, so the two files always show the same thing.
//!
//! - [`bars`]: speedup and perf/W over the baseline (`speedup.svg`);
//! - [`sweep`]: a sweep's throughput and latency against its first axis (`sweep.svg`);
//! - [`breakdown`]: where the cores' and access units' time went (`breakdown.svg`);
//! - [`latency`]: the lookup-latency histogram and CDF (`latency.svg`);
//! - [`bandwidth_latency`]: a memory's loaded-latency curves, with a sweep's operating points
//!   on them (`bandwidth-latency.svg`, `latency-curve.svg`).
//!
//! The plots read the figures of `results.json` and `sweep-results.json`: the run that wrote
//! them and `dae-sim plot` later read the same, so a redrawn plot equals the first. A field a
//! plot needs and the file lacks is an error naming the file and the field.

pub mod bandwidth_latency;
pub mod bars;
pub mod breakdown;
pub mod latency;
pub mod sweep;

pub use bars::speedup_bars;
pub use sweep::{littles_law, sweep_lines};

use crate::report;
use plotters::coord::Shift;
use plotters::coord::ranged1d::Ranged;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use resvg::usvg::{self, fontdb};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

/// The whole figure, as the drawing code sees it.
pub(crate) type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

/// A chart with numeric axes on a figure.
pub(crate) type Chart<'a, 'b, X, Y> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<X, Y>>;

/// Line and bar colours, in order: matplotlib's ten, then two of its darker ones (the main
/// experiment has eleven workloads).
pub(crate) const COLOURS: [RGBColor; 12] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
    RGBColor(57, 59, 121),
    RGBColor(140, 109, 49),
];

/// Font sizes in plotters' units: the SVG's pixels are these over 1.24, so a label is 12 px and
/// stays legible in a PNG drawn at 1x.
pub(crate) const TITLE: u32 = 20;
/// Axis labels, legends and bar labels.
pub(crate) const LABEL: u32 = 15;
/// Figures written inside bars.
pub(crate) const SMALL: u32 = 13;

/// A text style of `size`, anchored at `h` and `v`.
pub(crate) fn font(size: u32, h: HPos, v: VPos) -> TextStyle<'static> {
    TextStyle::from(("sans-serif", size).into_font()).pos(Pos::new(h, v))
}

/// About how wide `text` is drawn at `size`, in pixels: plotters without a font backend cannot
/// measure text, and layouts only need to leave room. Generous (DejaVu Sans is a wide font).
pub(crate) fn text_width(text: &str, size: u32) -> i32 {
    (text.chars().count() as f64 * f64::from(size) / 1.24 * 0.6).ceil() as i32
}

/// A log axis's label: only at 1, 2, 3 and 5 times a power of ten, so the labels near the
/// top of a decade do not run into each other.
pub(crate) fn log_tick(v: f64) -> String {
    let lead = v / 10f64.powf(v.log10().floor());
    if [1.0, 2.0, 3.0, 5.0].iter().any(|d| (lead - d).abs() < 1e-6) { tick(v) } else { String::new() }
}

/// Plotters' drawing errors as text.
pub(crate) fn fail(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// An axis label: no more digits than the value has (3500, 12.5, 0.25).
pub(crate) fn tick(v: f64) -> String {
    let s = format!("{v:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Draws `text` on `area` at `at`, a pixel of the whole figure (as a chart's `backend_coord`
/// gives it; `area` may be a panel lower down).
pub(crate) fn text_at(
    area: &Area<'_>,
    at: (i32, i32),
    text: String,
    style: TextStyle<'_>,
) -> Result<(), String> {
    let (x0, y0) = area.get_base_pixel();
    area.draw(&Text::new(text, (at.0 - x0, at.1 - y0), style)).map_err(fail)
}

/// `colour` mixed with white: `t` = 0 keeps it, 1 is white.
pub(crate) fn lighten(c: RGBColor, t: f64) -> RGBColor {
    let mix = |v: u8| (f64::from(v) + (255.0 - f64::from(v)) * t).round() as u8;
    RGBColor(mix(c.0), mix(c.1), mix(c.2))
}

/// How a line is stroked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dash {
    /// A solid line.
    Solid,
    /// Dashes.
    Dashed,
    /// Dots.
    Dotted,
}

impl Dash {
    /// Dash and gap lengths in pixels (`None`: solid).
    fn pattern(self) -> Option<(i32, i32)> {
        match self {
            Dash::Solid => None,
            Dash::Dashed => Some((8, 5)),
            Dash::Dotted => Some((2, 4)),
        }
    }
}

/// Draws a line through `points` (chart coordinates) on `chart`.
pub(crate) fn draw_line<X, Y>(
    chart: &mut Chart<'_, '_, X, Y>,
    points: Vec<(f64, f64)>,
    colour: RGBColor,
    width: u32,
    dash: Dash,
) -> Result<(), String>
where
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    let style = colour.stroke_width(width);
    match dash.pattern() {
        None => chart.draw_series(LineSeries::new(points, style)).map(|_| ()),
        Some((on, off)) => chart.draw_series(DashedLineSeries::new(points, on, off, style)).map(|_| ()),
    }
    .map_err(fail)
}

/// A chart on `area` with `title` and the plots' label sizes; the caller sets the axes.
pub(crate) fn chart_on<'a, 'b>(
    area: &'a DrawingArea<SVGBackend<'b>, Shift>,
    title: &str,
    x_label_area: u32,
    y_label_area: u32,
) -> ChartBuilder<'a, 'b, SVGBackend<'b>> {
    let mut b = ChartBuilder::on(area);
    b.caption(title, ("sans-serif", TITLE))
        .margin(12)
        .margin_right(24)
        .x_label_area_size(x_label_area)
        .y_label_area_size(y_label_area);
    b
}

/// The mesh of `chart` with the plots' label sizes; the caller adds the axes' descriptions.
pub(crate) fn mesh<'a, 'b, 'c, X, Y>(
    chart: &'b mut Chart<'a, 'c, X, Y>,
) -> plotters::chart::MeshStyle<'a, 'b, X, Y, SVGBackend<'c>>
where
    X: Ranged + plotters::coord::ranged1d::ValueFormatter<X::ValueType>,
    Y: Ranged + plotters::coord::ranged1d::ValueFormatter<Y::ValueType>,
{
    let mut m = chart.configure_mesh();
    m.label_style(("sans-serif", LABEL)).axis_desc_style(("sans-serif", LABEL)).light_line_style(WHITE);
    m
}

/// What a legend entry shows beside its text.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Swatch {
    /// A line sample.
    Line(RGBColor, Dash),
    /// A filled box.
    Box(RGBColor),
    /// A filled box (the entry's bars) and a line sample (its lines).
    BoxLine(RGBColor, RGBColor, Dash),
}

/// A legend drawn in its own strip of the figure, below a chart, so it never covers data.
/// Entries run down the columns.
pub(crate) struct Legend(pub Vec<(Swatch, String)>);

/// A legend row's height, the width of a swatch and the length of a line sample, in pixels.
const ROW: i32 = 20;
const SWATCH: i32 = 44;
const SAMPLE: i32 = 36;

impl Legend {
    /// Columns, rows and column width for a strip `width` wide.
    fn layout(&self, width: u32) -> (usize, usize, i32) {
        let n = self.0.len().max(1);
        let widest = self.0.iter().map(|(_, t)| text_width(t, LABEL)).max().unwrap_or(0);
        let col = widest + SWATCH + 36;
        let cols = ((width as i32 - 24) / col.max(1)).clamp(1, n as i32) as usize;
        (cols, n.div_ceil(cols), col)
    }

    /// The strip's height for a figure `width` wide (none without entries).
    pub(crate) fn height(&self, width: u32) -> u32 {
        if self.0.is_empty() { 0 } else { (self.layout(width).1 as i32 * ROW + 16) as u32 }
    }

    /// Draws the entries on `area` (a strip [`Legend::height`] high).
    pub(crate) fn draw(&self, area: &Area<'_>) -> Result<(), String> {
        let (_, rows, col) = self.layout(area.dim_in_pixel().0);
        for (i, (swatch, text)) in self.0.iter().enumerate() {
            let (x, y) = (24 + (i / rows) as i32 * col, 8 + (i % rows) as i32 * ROW + ROW / 2);
            match *swatch {
                Swatch::Line(c, dash) => sample(area, (x, y), SAMPLE, c, dash)?,
                Swatch::Box(c) => {
                    area.draw(&Rectangle::new([(x + 8, y - 6), (x + 28, y + 6)], c.filled())).map_err(fail)?
                }
                Swatch::BoxLine(fill, c, dash) => {
                    area.draw(&Rectangle::new([(x, y - 6), (x + 12, y + 6)], fill.filled())).map_err(fail)?;
                    sample(area, (x + 16, y), SAMPLE - 16, c, dash)?;
                }
            }
            let style = font(LABEL, HPos::Left, VPos::Center);
            area.draw(&Text::new(text.clone(), (x + SWATCH, y), style)).map_err(fail)?;
        }
        Ok(())
    }
}

/// A line sample `len` pixels long from `(x, y)` rightwards, dashed as `dash`.
fn sample(area: &Area<'_>, (x, y): (i32, i32), len: i32, c: RGBColor, dash: Dash) -> Result<(), String> {
    let end = x + len;
    let (on, off) = dash.pattern().unwrap_or((len, 0));
    let mut at = x;
    while at < end {
        let to = (at + on).min(end);
        area.draw(&PathElement::new(vec![(at, y), (to, y)], c.stroke_width(2))).map_err(fail)?;
        at = to + off;
    }
    Ok(())
}

/// The system fonts, loaded once; the PNGs' text is drawn with them.
fn fonts() -> Arc<fontdb::Database> {
    static FONTS: OnceLock<Arc<fontdb::Database>> = OnceLock::new();
    FONTS
        .get_or_init(|| {
            let mut db = fontdb::Database::new();
            db.load_system_fonts();
            // The plots ask for "sans-serif". fontdb maps it to Arial unless fontconfig names
            // another, and a machine may have neither: then take a sans font it has.
            let sans = |db: &fontdb::Database| {
                let q = fontdb::Query { families: &[fontdb::Family::SansSerif], ..Default::default() };
                db.query(&q).is_some()
            };
            if !sans(&db) {
                let have = |name: &str| db.faces().any(|f| f.families.iter().any(|(n, _)| n == name));
                let preferred = ["DejaVu Sans", "Liberation Sans", "Noto Sans", "FreeSans", "Helvetica"];
                let pick =
                    preferred.iter().map(|s| s.to_string()).find(|n| have(n)).or_else(|| {
                        db.faces().next().and_then(|f| f.families.first()).map(|(n, _)| n.clone())
                    });
                if let Some(family) = pick {
                    db.set_sans_serif_family(family);
                }
            }
            if db.is_empty() {
                crate::note!(
                    "warning: no fonts found on this system: the plots' PNG files are drawn without \
                     their text (the SVG files have it); install one (fonts-dejavu-core) to get it"
                );
            }
            Arc::new(db)
        })
        .clone()
}

/// `svg` as a PNG image of its own size (1x), on white.
pub fn rasterise(svg: &str) -> Result<Vec<u8>, String> {
    let opts = usvg::Options { fontdb: fonts(), ..Default::default() };
    let tree = usvg::Tree::from_str(svg, &opts).map_err(|e| format!("reading the SVG back: {e}"))?;
    let size = tree.size().to_int_size();
    let mut pixmap = resvg::tiny_skia::Pixmap::new(size.width(), size.height())
        .ok_or_else(|| format!("a {}x{} image cannot be drawn", size.width(), size.height()))?;
    pixmap.fill(resvg::tiny_skia::Color::WHITE);
    resvg::render(&tree, resvg::tiny_skia::Transform::identity(), &mut pixmap.as_mut());
    // Opaque on white: the premultiplied pixels are the colours.
    let rgb: Vec<[u8; 3]> = pixmap.pixels().iter().map(|p| [p.red(), p.green(), p.blue()]).collect();
    indexed_png(&rgb, size.width(), size.height()).map_err(|e| format!("encoding the PNG: {e}"))
}

/// `rgb` (row-major, `width` x `height`) as a PNG with a palette of its 256 most frequent
/// colours. A plot's flat fills, lines and text take a few hundred colours at most; the rare ones
/// (edges smoothed between two others) take the nearest in the palette, where the eye does
/// not tell them apart. A third of the size of an RGBA PNG.
fn indexed_png(rgb: &[[u8; 3]], width: u32, height: u32) -> Result<Vec<u8>, png::EncodingError> {
    // A plot is mostly long runs of one colour: hash once per run, not once per pixel.
    let runs: Vec<([u8; 3], usize)> = rgb.chunk_by(|a, b| a == b).map(|run| (run[0], run.len())).collect();
    let mut counts: std::collections::HashMap<[u8; 3], u64> = std::collections::HashMap::new();
    for &(c, n) in &runs {
        *counts.entry(c).or_default() += n as u64;
    }
    let mut by_count: Vec<([u8; 3], u64)> = counts.into_iter().collect();
    // Most frequent first; equal counts by colour, so the file is the same every time.
    by_count.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let palette: Vec<[u8; 3]> = by_count.iter().take(256).map(|c| c.0).collect();
    let distance = |a: [u8; 3], b: [u8; 3]| {
        a.iter().zip(b).map(|(x, y)| (i32::from(*x) - i32::from(y)).pow(2)).sum::<i32>()
    };
    let index: std::collections::HashMap<[u8; 3], u8> = by_count
        .iter()
        .map(|&(c, _)| {
            let nearest = (0..palette.len()).min_by_key(|&i| distance(c, palette[i])).unwrap_or(0);
            (c, nearest as u8)
        })
        .collect();
    let mut pixels: Vec<u8> = Vec::with_capacity(rgb.len());
    for &(c, n) in &runs {
        pixels.resize(pixels.len() + n, index.get(&c).copied().unwrap_or(0));
    }
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, width, height);
    encoder.set_color(png::ColorType::Indexed);
    encoder.set_depth(png::BitDepth::Eight);
    encoder.set_palette(palette.concat());
    encoder.set_compression(png::Compression::High);
    // Filters predict smooth gradients; a palette's indices are not one.
    encoder.set_filter(png::Filter::NoFilter);
    encoder.write_header()?.write_image_data(&pixels)?;
    Ok(out)
}

/// Draws a figure of `size` pixels with `draw` (on white) and writes it as `dir/stem.svg` and
/// `dir/stem.png`, each atomically. Returns the two files.
pub fn save<F>(dir: &Path, stem: &str, size: (u32, u32), draw: F) -> Result<Vec<PathBuf>, String>
where
    F: FnOnce(&Area<'_>) -> Result<(), String>,
{
    let svg_path = dir.join(format!("{stem}.svg"));
    let at = |path: &Path, e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        root.fill(&WHITE).map_err(|e| at(&svg_path, &e))?;
        draw(&root).map_err(|e| at(&svg_path, &e))?;
        root.present().map_err(|e| at(&svg_path, &e))?;
    }
    let png_path = dir.join(format!("{stem}.png"));
    let png = rasterise(&svg).map_err(|e| at(&png_path, &e))?;
    report::write_file(dir, &format!("{stem}.svg"), &svg).map_err(|e| at(&svg_path, &e))?;
    report::write_file(dir, &format!("{stem}.png"), &png).map_err(|e| at(&png_path, &e))?;
    Ok(vec![svg_path, png_path])
}

/// A value in a results file, with its place there: a field that is missing or of the wrong
/// type is reported as `FILE: runs[3].time_breakdown.core.memory: missing`.
#[derive(Debug, Clone)]
pub(crate) struct Field<'a> {
    file: &'a str,
    path: String,
    value: &'a Value,
}

impl<'a> Field<'a> {
    /// The whole file's content.
    pub(crate) fn root(file: &'a str, value: &'a Value) -> Self {
        Field { file, path: String::new(), value }
    }

    /// The member `key` (which may be missing).
    pub(crate) fn get(&self, key: &str) -> Field<'a> {
        let path = if self.path.is_empty() { key.to_string() } else { format!("{}.{key}", self.path) };
        Field { file: self.file, path, value: &self.value[key] }
    }

    /// The member `key`, if present and not null.
    pub(crate) fn opt(&self, key: &str) -> Option<Field<'a>> {
        Some(self.get(key)).filter(|f| !f.value.is_null())
    }

    /// The JSON value.
    pub(crate) fn value(&self) -> &'a Value {
        self.value
    }

    /// An error about this field.
    pub(crate) fn error(&self, what: &str) -> String {
        let path = if self.path.is_empty() { "the top level" } else { &self.path };
        format!("{}: {path}: {what}", self.file)
    }

    fn want(&self, kind: &str) -> String {
        self.error(if self.value.is_null() { "missing" } else { kind })
    }

    /// The number.
    pub(crate) fn f64(&self) -> Result<f64, String> {
        self.value.as_f64().ok_or_else(|| self.want("not a number"))
    }

    /// The string.
    pub(crate) fn str(&self) -> Result<&'a str, String> {
        self.value.as_str().ok_or_else(|| self.want("not a string"))
    }

    /// The array's elements.
    pub(crate) fn items(&self) -> Result<Vec<Field<'a>>, String> {
        let items = self.value.as_array().ok_or_else(|| self.want("not a list"))?;
        Ok(items
            .iter()
            .enumerate()
            .map(|(i, value)| Field { file: self.file, path: format!("{}[{i}]", self.path), value })
            .collect())
    }

    /// A list of numbers.
    pub(crate) fn numbers(&self) -> Result<Vec<f64>, String> {
        self.items()?.iter().map(Field::f64).collect()
    }
}

/// A run of a results file: its system and workload, or `None` for a run that failed (it has
/// no figures to draw).
pub(crate) fn run_names<'a>(run: &Field<'a>) -> Result<Option<(&'a str, &'a str)>, String> {
    if run.opt("error").is_some() {
        return Ok(None);
    }
    Ok(Some((run.get("system").str()?, run.get("workload").str()?)))
}

/// Short names for a sweep's axes: each key's last part (`max_outstanding`), or the whole key
/// where two axes would share a short name.
pub(crate) fn axis_names(axes: &[String]) -> Vec<String> {
    let short = |k: &String| k.rsplit('.').next().unwrap_or(k).to_string();
    axes.iter()
        .map(|k| {
            let s = short(k);
            if axes.iter().filter(|o| short(o) == s).count() > 1 { k.clone() } else { s }
        })
        .collect()
}

/// A sweep point's axes that tell its runs apart, as `name=value` texts: in a product every
/// axis; zipped axes move with the first, so only it.
pub(crate) fn point_label(results: &Field<'_>, point: &Field<'_>, axes: &[String]) -> Vec<String> {
    let zip = results.get("sweep").get("mode").value().as_str() == Some("zip");
    let shown = &axes[..if zip { axes.len().min(1) } else { axes.len() }];
    let values = point.get("point").get("values");
    shown.iter().zip(axis_names(shown)).map(|(k, n)| format!("{n}={}", values.get(k).value())).collect()
}

/// A sweep's axes, in config order (the first point's).
pub(crate) fn sweep_axes(results: &Field<'_>) -> Result<Vec<String>, String> {
    let points = results.get("points").items()?;
    let first = points.first().ok_or_else(|| results.get("points").error("no points"))?;
    let axes = first.get("point").get("axes").items()?;
    axes.iter().map(|a| a.str().map(String::from)).collect()
}

/// Draws every plot an experiment's results (`results.json`, read from `file`) have figures for
/// into `dir`: the speedup bars (with a baseline), the time breakdown (runs with one) and the
/// lookup-latency histogram and CDF (runs with a latency profile). Returns the files written.
pub fn experiment_plots(results: &Value, file: &str, dir: &Path) -> Result<Vec<PathBuf>, String> {
    let mut written = Vec::new();
    if !results["baseline"].is_null() {
        let c = report::comparison_from_json(results)
            .ok_or_else(|| format!("{file}: runs: a run without its system or workload"))?;
        written.extend(speedup_bars(&c, dir)?);
    }
    written.extend(breakdown::experiment_breakdown(results, file, dir)?.unwrap_or_default());
    written.extend(latency::latency_plot(results, file, dir)?.unwrap_or_default());
    Ok(written)
}

/// Draws a complete sweep's plots (`sweep-results.json`, read from `file`) into `dir`: the
/// throughput and latency lines, the time breakdown where runs have one, and the operating
/// points on the memory's curves where the results carry them. Returns the files
/// written.
/// Each plot is drawn even when another cannot be (the lines need a numeric first axis); the
/// first error is returned after the others are written.
pub fn sweep_plots(results: &Value, file: &str, dir: &Path) -> Result<Vec<PathBuf>, String> {
    let mut written = Vec::new();
    let mut first_error = None;
    let mut keep = |r: Result<Vec<PathBuf>, String>| match r {
        Ok(files) => written.extend(files),
        Err(e) => {
            first_error.get_or_insert(e);
        }
    };
    keep(sweep_lines(results, file, dir));
    keep(breakdown::sweep_breakdown(results, file, dir).map(Option::unwrap_or_default));
    if let Some(figure) = bandwidth_latency::from_sweep(results) {
        keep(bandwidth_latency::save(&figure, dir, "bandwidth-latency"));
    }
    match first_error {
        Some(e) => Err(e),
        None => Ok(written),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A fresh directory for a test's plots, removed when dropped (also when the test fails).
    pub(crate) fn temp_dir(name: &str) -> tempfile::TempDir {
        tempfile::Builder::new().prefix(&format!("dae-sim-plot-{name}-")).tempdir().unwrap()
    }

    /// Checks a plot's `files` (`X.svg`, `X.png`): the SVG holds every one of `texts`; the PNG
    /// is one (its signature) of the SVG's size (its IHDR chunk, which follows the signature).
    /// Returns the SVG's text.
    pub(crate) fn check_plot(files: &[PathBuf], texts: &[&str]) -> String {
        let [svg_file, png_file] = files else { panic!("{files:?}: not an SVG and a PNG") };
        assert_eq!(svg_file.with_extension("png"), *png_file);
        let svg = std::fs::read_to_string(svg_file).unwrap();
        let num = |key: &str| -> u32 {
            let at = svg.find(&format!("{key}=\"")).unwrap() + key.len() + 2;
            svg[at..].split('"').next().unwrap().parse().unwrap()
        };
        let png = std::fs::read(png_file).unwrap();
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "{} is no PNG", png_file.display());
        assert_eq!(&png[12..16], b"IHDR");
        let be = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
        assert_eq!((be(&png[16..20]), be(&png[20..24])), (num("width"), num("height")), "the PNG's size");
        for text in texts {
            assert!(svg.contains(text), "{text} missing from {}", svg_file.display());
        }
        svg
    }

    #[test]
    fn a_missing_field_names_the_file_and_the_field() {
        let v = serde_json::json!({ "runs": [{ "system": "dae", "lookups": "many" }] });
        let root = Field::root("out/results.json", &v);
        let run = &root.get("runs").items().unwrap()[0];
        assert_eq!(run.get("workload").str().unwrap_err(), "out/results.json: runs[0].workload: missing");
        assert_eq!(run.get("lookups").f64().unwrap_err(), "out/results.json: runs[0].lookups: not a number");
        assert_eq!(root.get("points").items().unwrap_err(), "out/results.json: points: missing");
    }

    #[test]
    fn short_axis_names_stay_apart() {
        let axes = ["system.dae.cores", "system.dae.access_unit.max_outstanding", "system.cpu.cores"]
            .map(String::from);
        assert_eq!(axis_names(&axes), ["system.dae.cores", "max_outstanding", "system.cpu.cores"]);
    }

    #[test]
    fn a_figure_is_written_as_svg_and_as_a_png_of_its_size() {
        let tmp = temp_dir("save");
        let dir = tmp.path();
        let files = save(dir, "t", (120, 80), |root| {
            root.draw(&Text::new("hello", (10, 10), font(LABEL, HPos::Left, VPos::Top))).map_err(fail)
        })
        .unwrap();
        assert_eq!(files, [dir.join("t.svg"), dir.join("t.png")]);
        let svg = check_plot(&files, &["hello"]);
        assert!(svg.contains("width=\"120\" height=\"80\""), "{svg}");
    }
}
