//! Hierarchical statistics: named counters and HdrHistograms.
//!
//! Statistics are named by dotted paths ("dae.core3.au.outstanding") and dumped as a JSON tree
//! that follows those paths. A component registers its statistics once, at construction, and
//! keeps the returned small integer ids; the hot path then updates by id, with no hashing,
//! string handling or allocation. Names are checked at registration so that the tree is always
//! well formed: no duplicates, no empty segments, and no name that is a group of another.

use hdrhistogram::Histogram;
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use thiserror::Error;

/// Id of a registered counter, valid for the [`Stats`] that issued it.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CounterId(u32);

/// Id of a registered histogram, valid for the [`Stats`] that issued it.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct HistogramId(u32);

/// Why a statistic could not be registered.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum StatsError {
    /// The name is empty or has an empty segment ("a..b", ".a", "a.").
    #[error("invalid statistic name \"{0}\": expected non-empty segments separated by dots")]
    BadName(String),
    /// The name is already registered.
    #[error("statistic \"{0}\" is already registered")]
    Duplicate(String),
    /// One name is a group path of the other, so the JSON tree could not hold both.
    #[error("statistic \"{name}\" conflicts with \"{existing}\": one is a group of the other")]
    Conflict {
        /// The name being registered.
        name: String,
        /// The registered name it conflicts with.
        existing: String,
    },
    /// The histogram bounds or precision are invalid.
    #[error("histogram \"{name}\": {reason}")]
    BadHistogram {
        /// The name being registered.
        name: String,
        /// What hdrhistogram rejected.
        reason: String,
    },
    /// More statistics of one kind than ids can number.
    #[error("too many statistics to register \"{0}\"")]
    TooMany(String),
}

/// What a name refers to.
#[derive(Copy, Clone, Debug)]
enum Slot {
    Counter(u32),
    /// A counter holding a largest value so far: runs merge by maximum, not by sum.
    Peak(u32),
    Histogram(u32),
}

/// A registry of named counters and histograms, updated by id.
#[derive(Clone, Debug, Default)]
pub struct Stats {
    names: BTreeMap<String, Slot>,
    counters: Vec<u64>,
    histograms: Vec<Histogram<u64>>,
}

impl Stats {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers a counter starting at zero and returns its id.
    pub fn counter(&mut self, name: &str) -> Result<CounterId, StatsError> {
        self.check_name(name)?;
        let id = u32::try_from(self.counters.len()).map_err(|_| StatsError::TooMany(name.to_owned()))?;
        self.counters.push(0);
        self.names.insert(name.to_owned(), Slot::Counter(id));
        Ok(CounterId(id))
    }

    /// Registers a *peak* counter starting at zero: updated like any counter (a component
    /// raises it to each new largest value), but [`Stats::absorb`] keeps the larger of two
    /// runs' values instead of adding them, as the peak of several runs is their largest.
    pub fn peak(&mut self, name: &str) -> Result<CounterId, StatsError> {
        let id = self.counter(name)?;
        self.names.insert(name.to_owned(), Slot::Peak(id.0));
        Ok(id)
    }

    /// Registers peak counter `leaf` of the component named `scope` (see [`Stats::peak`]).
    pub fn peak_in(&mut self, scope: &str, leaf: &str) -> Result<CounterId, StatsError> {
        self.peak(&format!("{scope}.{leaf}"))
    }

    /// Registers counter `leaf` of the component named `scope` (`scope.leaf`), as every
    /// component names its statistics under its own hierarchical name.
    pub fn counter_in(&mut self, scope: &str, leaf: &str) -> Result<CounterId, StatsError> {
        self.counter(&format!("{scope}.{leaf}"))
    }

    /// Registers histogram `leaf` of the component named `scope` (see [`Stats::histogram`]).
    pub fn histogram_in(
        &mut self,
        scope: &str,
        leaf: &str,
        max_value: u64,
        sigfig: u8,
    ) -> Result<HistogramId, StatsError> {
        self.histogram(&format!("{scope}.{leaf}"), max_value, sigfig)
    }

    /// Registers a histogram of values in `1..=max_value` with `sigfig` significant digits
    /// (0 to 5) and returns its id.
    pub fn histogram(&mut self, name: &str, max_value: u64, sigfig: u8) -> Result<HistogramId, StatsError> {
        self.check_name(name)?;
        let histogram =
            Histogram::new_with_bounds(1, max_value, sigfig).map_err(|e| StatsError::BadHistogram {
                name: name.to_owned(),
                reason: format!("{e:?} (max_value {max_value}, sigfig {sigfig})"),
            })?;
        let id = u32::try_from(self.histograms.len()).map_err(|_| StatsError::TooMany(name.to_owned()))?;
        self.histograms.push(histogram);
        self.names.insert(name.to_owned(), Slot::Histogram(id));
        Ok(HistogramId(id))
    }

    /// Adds `n` to a counter, saturating at `u64::MAX`.
    ///
    /// Panics if `id` came from another registry, which is a programming error.
    #[inline]
    pub fn add(&mut self, id: CounterId, n: u64) {
        let c = &mut self.counters[id.0 as usize];
        *c = c.saturating_add(n);
    }

    /// Adds one to a counter.
    #[inline]
    pub fn inc(&mut self, id: CounterId) {
        self.add(id, 1);
    }

    /// Records `v` in a histogram; values above its maximum are clamped to the maximum.
    #[inline]
    pub fn record(&mut self, id: HistogramId, v: u64) {
        self.histograms[id.0 as usize].saturating_record(v);
    }

    /// The current value of a counter.
    pub fn counter_value(&self, id: CounterId) -> u64 {
        self.counters[id.0 as usize]
    }

    /// A histogram, for reading.
    pub fn histogram_ref(&self, id: HistogramId) -> &Histogram<u64> {
        &self.histograms[id.0 as usize]
    }

    /// The value of the counter called `name`, if there is one.
    pub fn lookup_counter(&self, name: &str) -> Option<u64> {
        match self.names.get(name)? {
            Slot::Counter(id) | Slot::Peak(id) => Some(self.counter_value(CounterId(*id))),
            Slot::Histogram(_) => None,
        }
    }

    /// The histogram called `name`, if there is one.
    pub fn lookup_histogram(&self, name: &str) -> Option<&Histogram<u64>> {
        match self.names.get(name)? {
            Slot::Histogram(id) => Some(self.histogram_ref(HistogramId(*id))),
            Slot::Counter(_) | Slot::Peak(_) => None,
        }
    }

    /// Adds `other`'s counters and histograms to those of the same names here, registering the
    /// ones this registry lacks: the statistics of several runs of one system as one run's
    /// (counters add, peak counters keep the larger; histograms merge exactly, percentiles
    /// included).
    pub fn absorb(&mut self, other: &Stats) -> Result<(), StatsError> {
        for (name, slot) in &other.names {
            match (*slot, self.names.get(name).copied()) {
                (Slot::Counter(from), Some(Slot::Counter(to))) => {
                    let c = &mut self.counters[to as usize];
                    *c = c.saturating_add(other.counters[from as usize]);
                }
                (Slot::Peak(from), Some(Slot::Peak(to))) => {
                    let c = &mut self.counters[to as usize];
                    *c = (*c).max(other.counters[from as usize]);
                }
                (Slot::Histogram(from), Some(Slot::Histogram(to))) => {
                    let src = &other.histograms[from as usize];
                    self.histograms[to as usize].add(src).map_err(|e| StatsError::BadHistogram {
                        name: name.clone(),
                        reason: format!("cannot merge: {e:?}"),
                    })?;
                }
                (Slot::Peak(from), None) => {
                    let id = self.peak(name)?;
                    self.add(id, other.counters[from as usize]);
                }
                (Slot::Counter(from), None) => {
                    let id = self.counter(name)?;
                    self.add(id, other.counters[from as usize]);
                }
                (Slot::Histogram(from), None) => {
                    self.check_name(name)?;
                    let id = u32::try_from(self.histograms.len())
                        .map_err(|_| StatsError::TooMany(name.to_owned()))?;
                    self.histograms.push(other.histograms[from as usize].clone());
                    self.names.insert(name.to_owned(), Slot::Histogram(id));
                }
                (_, Some(_)) => return Err(StatsError::Duplicate(name.clone())),
            }
        }
        Ok(())
    }

    /// All statistics as a JSON tree following the dotted names, with keys sorted.
    ///
    /// Counters are integers; histograms are objects with `count`, `min`, `max`, `mean`,
    /// `p50`, `p90`, `p99` and `p999` (all zero when nothing was recorded).
    pub fn to_json(&self) -> Value {
        let mut root = Map::new();
        'names: for (name, slot) in &self.names {
            let value = match *slot {
                Slot::Counter(id) | Slot::Peak(id) => json!(self.counters[id as usize]),
                Slot::Histogram(id) => histogram_json(&self.histograms[id as usize]),
            };
            let (groups, leaf) = name.rsplit_once('.').unwrap_or(("", name));
            let mut node = &mut root;
            for group in groups.split('.').filter(|g| !g.is_empty()) {
                let child = node.entry(group).or_insert_with(|| Value::Object(Map::new()));
                node = match child {
                    Value::Object(map) => map,
                    // Unreachable: registration rejects a name that is also a group.
                    _ => continue 'names,
                };
            }
            node.insert(leaf.to_owned(), value);
        }
        Value::Object(root)
    }

    /// Checks that `name` is well formed and fits in the tree beside the registered names.
    fn check_name(&self, name: &str) -> Result<(), StatsError> {
        if name.split('.').any(str::is_empty) {
            return Err(StatsError::BadName(name.to_owned()));
        }
        if self.names.contains_key(name) {
            return Err(StatsError::Duplicate(name.to_owned()));
        }
        let conflict =
            |existing: &str| StatsError::Conflict { name: name.to_owned(), existing: existing.to_owned() };
        // A registered name that is a group of `name`: "a" or "a.b" for "a.b.c".
        for (i, _) in name.match_indices('.') {
            if self.names.contains_key(&name[..i]) {
                return Err(conflict(&name[..i]));
            }
        }
        // A registered name inside `name` as a group: the first key at or after "name." in
        // sorted order starts with "name." if any does.
        let group = format!("{name}.");
        match self.names.range(group.clone()..).next() {
            Some((existing, _)) if existing.starts_with(&group) => Err(conflict(existing)),
            _ => Ok(()),
        }
    }
}

/// The JSON summary of one histogram.
fn histogram_json(h: &Histogram<u64>) -> Value {
    if h.is_empty() {
        // hdrhistogram leaves max undefined when empty; report zeros instead.
        return json!({
            "count": 0, "min": 0, "max": 0, "mean": 0.0,
            "p50": 0, "p90": 0, "p99": 0, "p999": 0,
        });
    }
    json!({
        "count": h.len(),
        "min": h.min(),
        "max": h.max(),
        "mean": h.mean(),
        "p50": h.value_at_quantile(0.50),
        "p90": h.value_at_quantile(0.90),
        "p99": h.value_at_quantile(0.99),
        "p999": h.value_at_quantile(0.999),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absorbing_adds_counters_merges_histograms_and_registers_new_names() {
        let mut a = Stats::new();
        let ca = a.counter("x.reads").unwrap();
        let ha = a.histogram("x.latency", 1000, 3).unwrap();
        a.add(ca, 5);
        a.record(ha, 10);
        let mut b = Stats::new();
        let cb = b.counter("x.reads").unwrap();
        let hb = b.histogram("x.latency", 1000, 3).unwrap();
        let only_b = b.counter("y.writes").unwrap();
        b.add(cb, 7);
        b.add(only_b, 2);
        for v in [20, 30, 40] {
            b.record(hb, v);
        }
        a.absorb(&b).unwrap();
        assert_eq!(a.lookup_counter("x.reads"), Some(12));
        assert_eq!(a.lookup_counter("y.writes"), Some(2));
        let h = a.lookup_histogram("x.latency").unwrap();
        assert_eq!((h.len(), h.min(), h.max()), (4, 10, 40));
        // A counter in one and a histogram in the other cannot be merged.
        let mut c = Stats::new();
        c.histogram("x.reads", 10, 1).unwrap();
        assert_eq!(a.absorb(&c), Err(StatsError::Duplicate("x.reads".into())));
    }

    #[test]
    fn absorbing_keeps_the_larger_peak_and_registers_new_peaks_as_peaks() {
        let (mut a, mut b) = (Stats::new(), Stats::new());
        let pa = a.peak_in("core0", "in_flight.peak").unwrap();
        a.add(pa, 24);
        let pb = b.peak_in("core0", "in_flight.peak").unwrap();
        b.add(pb, 17);
        a.absorb(&b).unwrap();
        assert_eq!(a.lookup_counter("core0.in_flight.peak"), Some(24), "the larger, not 41");
        // Registered from another run, it stays a peak for the runs after.
        let mut fresh = Stats::new();
        fresh.absorb(&b).unwrap();
        fresh.absorb(&a).unwrap();
        assert_eq!(fresh.lookup_counter("core0.in_flight.peak"), Some(24));
        assert_eq!(fresh.to_json()["core0"]["in_flight"]["peak"], 24);
        // A peak and a plain counter of one name are different statistics.
        let mut c = Stats::new();
        c.counter("core0.in_flight.peak").unwrap();
        assert_eq!(a.absorb(&c), Err(StatsError::Duplicate("core0.in_flight.peak".into())));
    }

    #[test]
    fn counters_count() {
        let mut s = Stats::new();
        let a = s.counter("dae.core0.issued").unwrap();
        let b = s.counter("dae.core1.issued").unwrap();
        s.inc(a);
        s.add(a, 41);
        s.add(b, u64::MAX);
        s.inc(b);
        assert_eq!(s.counter_value(a), 42);
        assert_eq!(s.counter_value(b), u64::MAX);
        assert_eq!(s.lookup_counter("dae.core0.issued"), Some(42));
        assert_eq!(s.lookup_counter("dae.core0"), None);
        assert!(s.lookup_histogram("dae.core0.issued").is_none());
    }

    #[test]
    fn bad_names() {
        let mut s = Stats::new();
        for name in ["", ".", "a..b", ".a", "a."] {
            assert_eq!(s.counter(name), Err(StatsError::BadName(name.into())));
        }
        assert_eq!(
            s.counter("a..b").unwrap_err().to_string(),
            "invalid statistic name \"a..b\": expected non-empty segments separated by dots"
        );
    }

    #[test]
    fn duplicates_and_conflicts() {
        let mut s = Stats::new();
        s.counter("a.b").unwrap();
        assert_eq!(s.counter("a.b"), Err(StatsError::Duplicate("a.b".into())));
        assert_eq!(s.histogram("a.b", 100, 2), Err(StatsError::Duplicate("a.b".into())));
        let err = s.counter("a.b.c").unwrap_err();
        assert_eq!(
            err.to_string(),
            "statistic \"a.b.c\" conflicts with \"a.b\": one is a group of the other"
        );
        assert_eq!(s.counter("a"), Err(StatsError::Conflict { name: "a".into(), existing: "a.b".into() }));
        // Siblings sharing a text prefix are fine: "a.bc" is not inside "a.b".
        s.counter("a.bc").unwrap();
        s.counter("a.b-c").unwrap();
        s.counter("ab").unwrap();
    }

    #[test]
    fn histogram_percentiles() {
        let mut s = Stats::new();
        let h = s.histogram("lat", 1_000_000, 3).unwrap();
        for v in 1..=100 {
            s.record(h, v);
        }
        let hist = s.histogram_ref(h);
        assert_eq!(hist.len(), 100);
        assert_eq!(hist.value_at_quantile(0.5), 50);
        assert_eq!(hist.value_at_quantile(0.99), 99);
        assert_eq!(hist.min(), 1);
        assert_eq!(hist.max(), 100);
        assert!((hist.mean() - 50.5).abs() < 1e-9);
        assert_eq!(s.lookup_histogram("lat").map(|h| h.len()), Some(100));
    }

    #[test]
    fn histogram_clamps_out_of_range_values() {
        let mut s = Stats::new();
        let h = s.histogram("q", 1000, 3).unwrap();
        s.record(h, 0);
        s.record(h, u64::MAX);
        let hist = s.histogram_ref(h);
        assert_eq!(hist.len(), 2);
        assert_eq!(hist.min(), 0);
        assert!(hist.max() >= 1000 && hist.max() < 1010, "{}", hist.max());
    }

    #[test]
    fn bad_histogram_bounds() {
        let mut s = Stats::new();
        assert!(matches!(s.histogram("h", 1, 3), Err(StatsError::BadHistogram { .. })));
        assert!(matches!(s.histogram("h", 1000, 6), Err(StatsError::BadHistogram { .. })));
        // A failed registration leaves the name free.
        s.histogram("h", 1000, 3).unwrap();
    }

    #[test]
    fn json_shape() {
        let mut s = Stats::new();
        let issued = s.counter("dae.core0.issued").unwrap();
        s.counter("dae.core1.issued").unwrap();
        let lat = s.histogram("dae.core0.au.latency", 1000, 3).unwrap();
        s.histogram("dae.idle", 1000, 3).unwrap();
        s.counter("total").unwrap();
        s.add(issued, 7);
        for v in [10, 20, 30, 40] {
            s.record(lat, v);
        }
        let want = json!({
            "dae": {
                "core0": {
                    "au": {
                        "latency": {
                            "count": 4, "min": 10, "max": 40, "mean": 25.0,
                            "p50": 20, "p90": 40, "p99": 40, "p999": 40,
                        }
                    },
                    "issued": 7,
                },
                "core1": { "issued": 0 },
                "idle": {
                    "count": 0, "min": 0, "max": 0, "mean": 0.0,
                    "p50": 0, "p90": 0, "p99": 0, "p999": 0,
                },
            },
            "total": 0,
        });
        assert_eq!(s.to_json(), want);
        let text = serde_json::to_string(&s.to_json()).unwrap();
        assert!(text.starts_with(r#"{"dae":{"core0":{"au":{"latency":{"count":4,"max":40,"#));
    }
}
