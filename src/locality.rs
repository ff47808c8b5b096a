//! Meta's embedding-bag locality statistics (`locality_stats.txt` of `facebookresearch/dlrm_datasets`,
//! `../shared/datasets/dlrm-locality-stats/`) and the fit of a Zipf index generator to them.
//!
//! A file holds one block per synthetic trace (`fbgemm_t856_bs65536_0.pt`, ...):
//!
//! ```text
//! fbgemm_t856_bs65536_0.pt
//! Locality stats after processing 1 batches of size 65536
//! Avg # of indices: 468084223
//! Avg # of unique cols: 61644628
//! Avg col size: 7.6
//! Histogram of col sizes:
//! (0, 1]: 0.423
//! (1, 2]: 0.165
//! ...
//! (32768+: 0.000
//! [0, 1, 2, 4, ..., 32768]
//! ['0.000', '0.423', ..., '1.000']
//! Ratio of index distribution at different column sizes:
//! (0, 1]: 0.056
//! ...
//! ```
//!
//! What the figures mean, read from the numbers themselves: a "col" is one row of one table
//! (the unique count is of (table, row) pairs: 856 tables share no row ids); its "size" is its
//! reuse factor, how many of the batch's lookups (indices) name it, so the average col size is
//! indices / unique rows (887,017,990 / 128,435,723 = 6.9). The histogram gives the share of
//! the unique rows whose reuse lies in each bin `(lo, hi]`: 1, 2, 3-4, 5-8, ..., and more than
//! 32,768. The "ratio of index distribution" gives the share of the lookups that those rows
//! take (bin `(0, 1]`: 0.473 of the rows x 1 lookup / 6.9 = 0.069 of the lookups, as printed).
//! Each histogram is followed by its bin edges and its cumulative form, which are checked.
//!
//! [`fit_zipf`] searches the Zipf exponent whose generated lookups best match a block's two
//! histograms; `trace info` bins its reuse histogram the same way ([`bin_of`]).

use compiler::IndexDistribution;
use compiler::indices::IndexGenerator;
use sim_core::SeedTree;
use std::path::Path;
use thiserror::Error;

/// Why a locality-statistics file could not be read.
#[derive(Debug, Error)]
pub enum LocalityError {
    /// The file could not be read.
    #[error("{file}: {error}")]
    Io {
        /// The file.
        file: String,
        /// What the system said.
        error: std::io::Error,
    },
    /// A line is bad (`line` 0: the file as a whole).
    #[error("{file}{}: {message}", if *.line == 0 { String::new() } else { format!(":{line}") })]
    Parse {
        /// The file.
        file: String,
        /// The 1-based line.
        line: usize,
        /// What is wrong.
        message: String,
    },
}

/// One reuse bin: rows looked up more than `lo` and at most `hi` times (`hi` `None`: no bound).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bin {
    /// Exclusive lower bound of the reuse factor.
    pub lo: u64,
    /// Inclusive upper bound, `None` for the last, open bin.
    pub hi: Option<u64>,
    /// Share of the unique rows whose reuse lies in the bin.
    pub rows: f64,
    /// Share of the lookups those rows take ("ratio of index distribution").
    pub lookups: f64,
}

impl Bin {
    /// The reuse factors of the bin as text: `1`, `2`, `3-4`, ..., `32769+`.
    pub fn label(&self) -> String {
        bin_label(self.lo, self.hi)
    }
}

/// `1`, `2`, `3-4`, ... for the bin `(lo, hi]`; `lo+1` and a `+` for an open one.
pub fn bin_label(lo: u64, hi: Option<u64>) -> String {
    match hi {
        Some(h) if h == lo + 1 => h.to_string(),
        Some(h) => format!("{}-{h}", lo + 1),
        None => format!("{}+", lo + 1),
    }
}

/// The reuse bin of a row looked up `count` (at least 1) times, Meta's bins `(0, 1]`, `(1, 2]`,
/// `(2, 4]`, ...: bin `k` holds the counts `2^(k-1) + 1 ..= 2^k` (bin 0: exactly 1).
pub fn bin_of(count: u64) -> usize {
    let c = count.max(1);
    (64 - (c - 1).leading_zeros()) as usize
}

/// The bounds `(lo, hi]` of [`bin_of`]'s bin `k`.
pub fn bin_bounds(k: usize) -> (u64, u64) {
    let pow = |e: usize| u32::try_from(e).ok().and_then(|e| 1u64.checked_shl(e)).unwrap_or(u64::MAX);
    if k == 0 { (0, 1) } else { (pow(k - 1), pow(k)) }
}

/// One block of a locality-statistics file: the figures of one synthetic trace.
#[derive(Debug, Clone, PartialEq)]
pub struct Block {
    /// The trace's name (`fbgemm_t856_bs65536_0.pt`).
    pub name: String,
    /// The 1-based line of the name.
    pub line: usize,
    /// Batches the statistics cover.
    pub batches: u64,
    /// Samples per batch.
    pub batch_size: u64,
    /// Tables, from a `_t<N>_` in the name, if there is one.
    pub tables: Option<u64>,
    /// Lookups ("Avg # of indices").
    pub indices: u64,
    /// Distinct (table, row) pairs ("Avg # of unique cols").
    pub unique_rows: u64,
    /// Average reuse factor as printed ("Avg col size", one decimal).
    pub avg_reuse: f64,
    /// The reuse histogram, Meta's bins in order.
    pub bins: Vec<Bin>,
}

impl Block {
    /// Unique rows per lookup.
    pub fn unique_fraction(&self) -> f64 {
        if self.indices == 0 { 0.0 } else { self.unique_rows as f64 / self.indices as f64 }
    }

    /// Mean lookups per table (`indices / tables`), when the name gives the tables.
    pub fn lookups_per_table(&self) -> Option<u64> {
        self.tables.filter(|&t| t > 0).map(|t| self.indices / t)
    }

    /// Mean unique rows per table (`unique_rows / tables`), when the name gives the tables.
    pub fn unique_rows_per_table(&self) -> Option<u64> {
        self.tables.filter(|&t| t > 0).map(|t| self.unique_rows / t)
    }
}

/// Reads a locality-statistics file.
pub fn read(path: &Path) -> Result<Vec<Block>, LocalityError> {
    let file = path.display().to_string();
    let text =
        std::fs::read_to_string(path).map_err(|error| LocalityError::Io { file: file.clone(), error })?;
    parse(&text, &file)
}

/// A cursor over the lines of a file, 1-based, skipping nothing.
struct Lines<'a> {
    lines: Vec<&'a str>,
    next: usize,
    file: &'a str,
}

impl<'a> Lines<'a> {
    fn err(&self, line: usize, message: impl Into<String>) -> LocalityError {
        LocalityError::Parse { file: self.file.to_string(), line, message: message.into() }
    }

    /// The next line and its number; an error naming `what` at the end of the file.
    fn take(&mut self, what: &str) -> Result<(usize, &'a str), LocalityError> {
        match self.lines.get(self.next) {
            Some(l) => {
                self.next += 1;
                Ok((self.next, l.trim_end()))
            }
            None => Err(self.err(self.next, format!("the file ends where {what} was expected"))),
        }
    }

    /// The next line, which must start with `prefix`; what follows it.
    fn field(&mut self, prefix: &str) -> Result<(usize, &'a str), LocalityError> {
        let (n, l) = self.take(&format!("`{prefix}`"))?;
        match l.strip_prefix(prefix) {
            Some(rest) => Ok((n, rest.trim())),
            None => Err(self.err(n, format!("expected `{prefix}...`, found `{l}`"))),
        }
    }

    fn number<T: std::str::FromStr>(&mut self, prefix: &str) -> Result<T, LocalityError> {
        let (n, v) = self.field(prefix)?;
        v.parse()
            .map_err(|_| self.err(n, format!("`{v}` after `{prefix}` is not a number of the right kind")))
    }
}

/// A share: a finite number from 0 to 1 (a little over 1 allowed for rounding).
fn share(s: &str) -> Option<f64> {
    s.trim().parse::<f64>().ok().filter(|v| v.is_finite() && (0.0..=1.001).contains(v))
}

/// `_t<N>_` in a trace's name: its tables.
fn tables_of(name: &str) -> Option<u64> {
    name.split(['_', '.']).find_map(|p| p.strip_prefix('t').and_then(|n| n.parse().ok()))
}

/// Reads a histogram: Meta's bin lines `(0, 1]: v`, `(1, 2]: v`, `(2, 4]: v`, ... ([`bin_bounds`])
/// to an open `(lo+: v`; then the edges `[0, 1, ...]` and the cumulative shares.
fn histogram(l: &mut Lines<'_>) -> Result<Vec<(u64, Option<u64>, f64)>, LocalityError> {
    let mut bins: Vec<(u64, Option<u64>, f64)> = Vec::new();
    loop {
        let (lo, hi) = bin_bounds(bins.len());
        let (n, line) = l.take("a histogram bin")?;
        let bad = |l: &Lines<'_>, what: &str| l.err(n, format!("expected {what}, found `{line}`"));
        let want = if bins.is_empty() {
            format!("the bin `({lo}, {hi}]: SHARE`")
        } else {
            format!("the bin `({lo}, {hi}]: SHARE` or `({lo}+: SHARE`")
        };
        let Some((label, value)) = line.split_once(':') else {
            return Err(bad(l, &want));
        };
        let label: String = label.chars().filter(|c| !c.is_whitespace()).collect();
        let hi = if label == format!("({lo},{hi}]") {
            Some(hi)
        } else if label == format!("({lo}+") && !bins.is_empty() {
            None
        } else {
            return Err(bad(l, &want));
        };
        let v = share(value).ok_or_else(|| bad(l, "a share from 0 to 1 after the bin"))?;
        bins.push((lo, hi, v));
        if hi.is_none() {
            break;
        }
        if bins.len() > 63 {
            return Err(l.err(n, "more than 63 bins without the open one"));
        }
    }
    // The edges: every bin's lower bound.
    let (n, line) = l.take("the bin edges `[0, 1, ...]`")?;
    let edges: Option<Vec<u64>> = line
        .strip_prefix('[')
        .and_then(|s| s.strip_suffix(']'))
        .map(|s| s.split(',').map(|x| x.trim().parse().ok()).collect::<Option<Vec<u64>>>())
        .unwrap_or(None);
    let want: Vec<u64> = bins.iter().map(|b| b.0).collect();
    if edges.as_ref() != Some(&want) {
        return Err(l.err(n, format!("expected the bin edges {want:?}, found `{line}`")));
    }
    // The cumulative shares: 0, then after each bin; rounded to 3 decimals, as are the bins.
    let (n, line) = l.take("the cumulative shares `['0.000', ...]`")?;
    let cum: Option<Vec<f64>> = line
        .strip_prefix('[')
        .and_then(|s| s.strip_suffix(']'))
        .map(|s| s.split(',').map(|x| share(x.trim().trim_matches('\''))).collect::<Option<Vec<f64>>>())
        .unwrap_or(None);
    let Some(cum) = cum.filter(|c| c.len() == bins.len() + 1) else {
        return Err(l.err(
            n,
            format!("expected {} cumulative shares `['0.000', ...]`, found `{line}`", bins.len() + 1),
        ));
    };
    let mut sum = 0.0;
    for (k, &c) in cum.iter().enumerate() {
        if (c - sum).abs() > 0.0005 * (k as f64 + 1.0) + 1e-9 {
            return Err(
                l.err(n, format!("cumulative share {k} is {c}, but the bins before it add up to {sum:.3}"))
            );
        }
        sum += bins.get(k).map_or(0.0, |b| b.2);
    }
    Ok(bins)
}

/// Parses a locality-statistics file's text; `file` names it in errors.
pub fn parse(text: &str, file: &str) -> Result<Vec<Block>, LocalityError> {
    let mut l = Lines { lines: text.lines().collect(), next: 0, file };
    let mut blocks = Vec::new();
    loop {
        while l.lines.get(l.next).is_some_and(|s| s.trim().is_empty()) {
            l.next += 1;
        }
        if l.next >= l.lines.len() {
            break;
        }
        let (line, name) = l.take("a trace name")?;
        if name.contains(':') || name.contains(' ') {
            return Err(l.err(line, format!("expected a trace name (`fbgemm_..._0.pt`), found `{name}`")));
        }
        let (n, head) = l.field("Locality stats after processing ")?;
        let nums: Option<(u64, u64)> = head
            .split_once(" batches of size ")
            .and_then(|(a, b)| Some((a.trim().parse().ok()?, b.trim().parse().ok()?)));
        let Some((batches, batch_size)) = nums else {
            return Err(l.err(n, format!("expected `N batches of size B`, found `{head}`")));
        };
        let indices: u64 = l.number("Avg # of indices:")?;
        let unique_rows: u64 = l.number("Avg # of unique cols:")?;
        let (n, v) = l.field("Avg col size:")?;
        let avg_reuse = v.parse::<f64>().ok().filter(|x| x.is_finite() && *x >= 0.0);
        let Some(avg_reuse) = avg_reuse else {
            return Err(l.err(n, format!("`{v}` after `Avg col size:` is not a number")));
        };
        if unique_rows > indices {
            return Err(l.err(n - 1, format!("{unique_rows} unique rows but only {indices} indices")));
        }
        l.field("Histogram of col sizes:")?;
        let rows = histogram(&mut l)?;
        let (n, _) = l.field("Ratio of index distribution")?;
        let lookups = histogram(&mut l)?;
        let same =
            rows.len() == lookups.len() && rows.iter().zip(&lookups).all(|(a, b)| (a.0, a.1) == (b.0, b.1));
        if !same {
            return Err(l.err(n, "the index distribution's bins differ from the histogram's"));
        }
        let bins = rows
            .iter()
            .zip(&lookups)
            .map(|(r, x)| Bin { lo: r.0, hi: r.1, rows: r.2, lookups: x.2 })
            .collect();
        let tables = tables_of(name);
        blocks.push(Block {
            name: name.to_string(),
            line,
            batches,
            batch_size,
            tables,
            indices,
            unique_rows,
            avg_reuse,
            bins,
        });
    }
    if blocks.is_empty() {
        return Err(LocalityError::Parse { file: file.to_string(), line: 0, message: "no blocks".into() });
    }
    Ok(blocks)
}

// ---------------------------------------------------------------------------------------------
// Fitting a Zipf generator

/// The reuse figures of a set of lookups, in a block's bins.
#[derive(Debug, Clone, PartialEq)]
pub struct Reuse {
    /// Lookups.
    pub lookups: u64,
    /// Distinct rows.
    pub unique_rows: u64,
    /// Per bin of the block: (share of the rows, share of the lookups).
    pub bins: Vec<(f64, f64)>,
}

impl Reuse {
    /// Unique rows per lookup.
    pub fn unique_fraction(&self) -> f64 {
        if self.lookups == 0 { 0.0 } else { self.unique_rows as f64 / self.lookups as f64 }
    }
}

/// The reuse figures of row-lookup counts (one count per distinct row), in `bins`' bins (a
/// count above the last bounded bin goes to the open one).
pub fn reuse_in_bins(counts: impl IntoIterator<Item = u64>, bins: &[Bin]) -> Reuse {
    let mut acc = vec![(0u64, 0u64); bins.len()];
    let (mut lookups, mut unique) = (0u64, 0u64);
    for c in counts {
        let k = bins.iter().position(|b| b.hi.is_none_or(|h| c <= h)).unwrap_or(bins.len().saturating_sub(1));
        if let Some(a) = acc.get_mut(k) {
            a.0 += 1;
            a.1 += c;
        }
        lookups += c;
        unique += 1;
    }
    let share = |x: u64, of: u64| if of == 0 { 0.0 } else { x as f64 / of as f64 };
    Reuse {
        lookups,
        unique_rows: unique,
        bins: acc.iter().map(|&(r, x)| (share(r, unique), share(x, lookups))).collect(),
    }
}

/// The distance between a block's histograms and `r`'s: the L1 distance of the rows' shares
/// plus that of the lookups' shares (0 to 4).
pub fn distance(block: &Block, r: &Reuse) -> f64 {
    block
        .bins
        .iter()
        .zip(&r.bins)
        .map(|(b, &(rows, lookups))| (b.rows - rows).abs() + (b.lookups - lookups).abs())
        .sum()
}

/// Draws `lookups` Zipf(`alpha`) rows of a `rows`-row table, as `trace gen --tables 1
/// --distribution zipf --alpha A --rows R --seed S` draws table 0's (with `--batch B --bag-size
/// K`, `B x K` = `lookups`, no `--dedup` or `--reuse`), and counts each row's lookups.
pub fn zipf_counts(alpha: f64, rows: u64, lookups: u64, seed: u64) -> Vec<u64> {
    let stream = SeedTree::new(seed).stream("trace.table0");
    let mut g = IndexGenerator::new(IndexDistribution::Zipf { alpha }, rows, stream);
    let mut ids: Vec<u64> = (0..lookups).map(|_| g.next_index()).collect();
    ids.sort_unstable();
    let mut counts = Vec::new();
    let mut i = 0;
    while i < ids.len() {
        let j = i + ids[i..].iter().take_while(|&&x| x == ids[i]).count();
        counts.push((j - i) as u64);
        i = j;
    }
    counts
}

/// How [`fit_zipf`] searches.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FitOptions {
    /// Rows of the generated table.
    pub rows: u64,
    /// Lookups drawn per evaluation.
    pub lookups: u64,
    /// Seed of the draws (the same for every alpha, so the distance is a deterministic and
    /// smooth function of alpha).
    pub seed: u64,
    /// Smallest alpha searched (above 0).
    pub min_alpha: f64,
    /// Largest alpha searched.
    pub max_alpha: f64,
    /// Grid points before the refinement (at least 2).
    pub grid: u32,
}

/// The result of [`fit_zipf`].
#[derive(Debug, Clone, PartialEq)]
pub struct Fit {
    /// The fitted exponent.
    pub alpha: f64,
    /// Its distance to the block ([`distance`]).
    pub distance: f64,
    /// The generated lookups' figures at that alpha.
    pub reuse: Reuse,
    /// Every (alpha, distance) evaluated, in order.
    pub evaluations: Vec<(f64, f64)>,
}

/// Searches the Zipf exponent whose `lookups` generated lookups over `rows` rows best match
/// `block`'s histograms ([`distance`]): a grid of `grid` points over `[min_alpha, max_alpha]`,
/// then golden-section search between the best point's neighbours, to 0.001.
pub fn fit_zipf(block: &Block, o: &FitOptions) -> Fit {
    let mut evaluations = Vec::new();
    let mut eval = |alpha: f64| {
        let r = reuse_in_bins(zipf_counts(alpha, o.rows, o.lookups, o.seed), &block.bins);
        let d = distance(block, &r);
        evaluations.push((alpha, d));
        (d, r)
    };
    let n = o.grid.max(2);
    let step = (o.max_alpha - o.min_alpha) / f64::from(n - 1);
    let mut best: Option<(f64, f64, Reuse)> = None;
    let keep = |a: f64, (d, r): (f64, Reuse), best: &mut Option<(f64, f64, Reuse)>| {
        if best.as_ref().is_none_or(|b| d < b.1) {
            *best = Some((a, d, r));
        }
    };
    for i in 0..n {
        let a = o.min_alpha + step * f64::from(i);
        let e = eval(a);
        keep(a, e, &mut best);
    }
    let centre = best.as_ref().map_or(o.min_alpha, |b| b.0);
    let (mut lo, mut hi) = ((centre - step).max(o.min_alpha), (centre + step).min(o.max_alpha));
    let g = (5f64.sqrt() - 1.0) / 2.0;
    let (mut x1, mut x2) = (hi - g * (hi - lo), lo + g * (hi - lo));
    let (mut e1, mut e2) = (eval(x1), eval(x2));
    while hi - lo > 0.001 {
        if e1.0 <= e2.0 {
            hi = x2;
            (x2, e2) = (x1, e1);
            x1 = hi - g * (hi - lo);
            e1 = eval(x1);
        } else {
            lo = x1;
            (x1, e1) = (x2, e2);
            x2 = lo + g * (hi - lo);
            e2 = eval(x2);
        }
    }
    keep(x1, e1, &mut best);
    keep(x2, e2, &mut best);
    // Rounded to 0.001 and evaluated there, so that the figures are those of the alpha printed.
    let alpha = best.map_or(o.min_alpha, |b| b.0);
    let alpha = ((alpha * 1000.0).round() / 1000.0).clamp(o.min_alpha, o.max_alpha);
    let (distance, reuse) = eval(alpha);
    Fit { alpha, distance, reuse, evaluations }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A block's text with the given bins (shares of rows and lookups), cumulative forms
    /// computed.
    fn block_text(name: &str, rows: &[f64], lookups: &[f64]) -> String {
        let mut s = format!(
            "{name}\nLocality stats after processing 1 batches of size 64\nAvg # of indices: 1000\nAvg # of unique cols: 400\nAvg col size: 2.5\nHistogram of col sizes:\n"
        );
        let hist = |s: &mut String, v: &[f64]| {
            let mut edges = vec!["0".to_string()];
            for (k, x) in v.iter().enumerate() {
                if k + 1 == v.len() {
                    *s += &format!("({}+: {x:.3}\n", bin_bounds(k).0);
                } else {
                    let (lo, hi) = bin_bounds(k);
                    *s += &format!("({lo}, {hi}]: {x:.3}\n");
                    edges.push(hi.to_string());
                }
            }
            *s += &format!("[{}]\n", edges.join(", "));
            let mut c = 0.0;
            let mut cum = vec!["'0.000'".to_string()];
            for x in v {
                c += x;
                cum.push(format!("'{c:.3}'"));
            }
            *s += &format!("[{}]\n", cum.join(", "));
        };
        hist(&mut s, rows);
        s += "Ratio of index distribution at different column sizes:\n";
        hist(&mut s, lookups);
        s + "\n"
    }

    #[test]
    fn bins_are_metas() {
        let got: Vec<usize> =
            [1, 2, 3, 4, 5, 8, 9, 16, 17, 32768, 32769].iter().map(|&c| bin_of(c)).collect();
        assert_eq!(got, [0, 1, 2, 2, 3, 3, 4, 4, 5, 15, 16]);
        assert_eq!((bin_bounds(0), bin_bounds(1), bin_bounds(2)), ((0, 1), (1, 2), (2, 4)));
        assert_eq!(
            (bin_label(0, Some(1)), bin_label(2, Some(4)), bin_label(32768, None)),
            ("1".into(), "3-4".into(), "32769+".into())
        );
    }

    #[test]
    fn parses_blocks() {
        let text = block_text("fbgemm_t8_bs64_0.pt", &[0.5, 0.3, 0.2], &[0.2, 0.24, 0.56])
            + &block_text("other.pt", &[0.6, 0.4], &[0.3, 0.7]);
        let b = parse(&text, "x.txt").unwrap();
        assert_eq!(b.len(), 2);
        assert_eq!(
            (b[0].name.as_str(), b[0].line, b[0].tables, b[0].batch_size),
            ("fbgemm_t8_bs64_0.pt", 1, Some(8), 64)
        );
        assert_eq!((b[0].indices, b[0].unique_rows, b[0].avg_reuse), (1000, 400, 2.5));
        assert_eq!(b[0].unique_fraction(), 0.4);
        assert_eq!(b[0].lookups_per_table(), Some(125));
        assert_eq!(b[0].bins[2], Bin { lo: 2, hi: None, rows: 0.2, lookups: 0.56 });
        assert_eq!(b[0].bins[1].label(), "2");
        assert_eq!((b[1].line, b[1].tables, b[1].bins.len()), (19, None, 2));
    }

    #[test]
    fn malformed_lines_are_named() {
        let good = block_text("a_t2.pt", &[0.5, 0.3, 0.2], &[0.2, 0.24, 0.56]);
        let cases: [(&str, &str, usize, &str); 7] = [
            ("Avg # of indices: 1000", "Avg # of indices: lots", 3, "not a number"),
            ("Avg # of unique cols: 400", "Avg # of unique cols: 4000", 4, "unique rows but only"),
            ("(1, 2]: 0.300", "(1, 3]: 0.300", 8, "expected the bin `(1, 2]: SHARE` or `(1+: SHARE`"),
            ("(2+: 0.200", "(4+: 0.200", 9, "`(2+: SHARE`, found `(4+: 0.200`"),
            ("'0.500', '0.800'", "'0.500', '0.900'", 11, "cumulative share 2"),
            ("Histogram of col sizes:", "Histogram of rows:", 6, "expected `Histogram of col sizes:...`"),
            ("(0, 1]: 0.500", "(0, 1]: 5.0", 7, "a share from 0 to 1"),
        ];
        for (from, to, line, says) in cases {
            let text = good.replacen(from, to, 1);
            assert_ne!(text, good, "{from}");
            let e = parse(&text, "bad.txt").unwrap_err().to_string();
            assert!(e.starts_with(&format!("bad.txt:{line}: ")) && e.contains(says), "{to}: {e}");
        }
        let e = parse(&good[..good.find("Ratio").unwrap()], "cut.txt").unwrap_err().to_string();
        assert!(e.starts_with("cut.txt:") && e.contains("the file ends"), "{e}");
        assert_eq!(parse("\n\n", "empty.txt").unwrap_err().to_string(), "empty.txt: no blocks");
    }

    #[test]
    fn fit_finds_the_alpha_that_made_the_histograms() {
        // Histograms of 30,000 Zipf(1.2) lookups over 100,000 rows, seed 7, as Meta prints them.
        let bins: Vec<Bin> = (0..17)
            .map(|k| Bin {
                lo: bin_bounds(k).0,
                hi: (k < 16).then(|| bin_bounds(k).1),
                rows: 0.0,
                lookups: 0.0,
            })
            .collect();
        let r = reuse_in_bins(zipf_counts(1.2, 100_000, 30_000, 7), &bins);
        let rows: Vec<f64> = r.bins.iter().map(|b| b.0).collect();
        let lookups: Vec<f64> = r.bins.iter().map(|b| b.1).collect();
        let block = &parse(&block_text("z.pt", &rows, &lookups), "z.txt").unwrap()[0];
        let o =
            FitOptions { rows: 100_000, lookups: 30_000, seed: 8, min_alpha: 0.6, max_alpha: 1.8, grid: 13 };
        let f = fit_zipf(block, &o);
        assert!((f.alpha - 1.2).abs() < 0.03, "alpha {} (distance {})", f.alpha, f.distance);
        assert!(f.distance < 0.1, "{}", f.distance);
        assert_eq!(f, fit_zipf(block, &o), "deterministic");
    }
}
