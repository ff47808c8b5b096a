//! The trace driver: a requester that replays a trace into the memory over one link pair.
//!
//! Contract: the driver reads records from its [`TraceSource`] one at a time (never more than
//! one ahead) and sends each as a [`MemRequest`] when three things hold: the record is due (its
//! timestamp, or its slot at the injection rate, has come), fewer than `max_in_flight` requests
//! await their responses, and the request link has room. A refused send is retried when the
//! link frees a slot ([`Wake::Space`]); a full in-flight window is retried when a response
//! arrives; an early record waits on one timer. Requests are sent in trace order, each exactly
//! once, with ids 0, 1, 2... Latency is measured from the send to the response's arrival, end
//! to end, into HdrHistograms (picoseconds); the driver also counts reads, writes and bytes,
//! and how late each timed request left ([`Pacing`]). It is finished when the source is
//! exhausted and every response has arrived.
//!
//! A record without a size (the text formats) is a transaction of the request size: its
//! address is aligned down to a multiple of that size, since DRAMsim3 and Ramulator, whose
//! traces these are, drop an address's offset within a transaction. A record with a size (the
//! binary format) moves exactly its bytes, aligned or not.
//!
//! A trace error (a bad line, a corrupted binary file, an address beyond the memory's
//! capacity) stops the driver from issuing more: it waits for the responses in flight, then
//! finishes, and [`TraceDriver::error`] holds the error for the caller to report.

use super::error::{Origin, TraceError};
use super::{TimeBase, TraceRecord, TraceSource};
use crate::{MemRequest, MemResponse};
use sim_core::{
    Carries, Clock, Component, CounterId, Ctx, HistogramId, LinkId, Priority, Stats, StatsError, Tick, Wake,
};
use std::marker::PhantomData;

/// Send times at or past this tick are refused: the clock is 64-bit picoseconds and the memory
/// needs room after the last send to answer it (half the range is about 106 days).
const LAST_DUE: Tick = Tick::MAX / 2;

/// When requests are sent.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Pacing {
    /// At the records' timestamps; records of an untimed source as fast as the memory accepts.
    Timestamps,
    /// Ignore timestamps: as fast as the memory accepts (and the in-flight bound allows).
    Max,
    /// Ignore timestamps: request `i` is due at `i / per_ns` ns. The rate is open loop: a
    /// driver held back by the memory sends its overdue requests as soon as it can.
    Rate {
        /// Requests per nanosecond (above zero).
        per_ns: f64,
    },
}

/// Parameters of a [`TraceDriver`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DriverConfig {
    /// Most requests awaiting a response at once; above zero.
    pub max_in_flight: u32,
    /// Bytes per request for records that carry no size; above zero.
    pub bytes: u32,
    /// When requests are sent.
    pub pacing: Pacing,
    /// Clock of memory-cycle timestamps; required for sources timed in memory cycles.
    pub clock: Option<Clock>,
    /// Bytes of memory: a request that does not fit below it is an error.
    pub capacity: Option<u64>,
}

/// Why a driver could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DriverBuildError {
    /// A parameter is impossible.
    #[error("{what}: {reason}")]
    Invalid {
        /// The parameter.
        what: &'static str,
        /// Why.
        reason: String,
    },
    /// A statistic name collides.
    #[error(transparent)]
    Stats(#[from] StatsError),
}

/// What a driver did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DriverReport {
    /// Reads sent.
    pub reads: u64,
    /// Writes sent.
    pub writes: u64,
    /// Bytes read.
    pub bytes_read: u64,
    /// Bytes written.
    pub bytes_written: u64,
    /// Responses received.
    pub responses: u64,
    /// Tick of the first send.
    pub first_issue: Option<Tick>,
    /// Tick of the first response.
    pub first_response: Option<Tick>,
    /// Tick of the last response.
    pub last_response: Tick,
    /// Tick of the last send.
    pub last_issue: Tick,
    /// Bytes of reads answered after the first response's tick while requests were still to
    /// be sent: the reads of the steady state (see [`DriverReport::steady_window`]). Reads only:
    /// a posted write is answered when the memory accepts it, and a filling write queue
    /// accepts writes faster than the device moves their data.
    pub steady_read_bytes: u64,
    /// Most requests ever in flight at once.
    pub peak_in_flight: u32,
    /// Sum and largest of the read latencies, ps: exact, where the histogram keeps three
    /// significant digits.
    pub read_latency_sum: u64,
    /// See `read_latency_sum`.
    pub read_latency_max: u64,
    /// Paced runs: sum and largest of the send delays (due time to send), ps, exact; the
    /// histogram `issue_delay` saturates at its ceiling.
    pub issue_delay_sum: u64,
    /// See `issue_delay_sum`.
    pub issue_delay_max: u64,
}

impl DriverReport {
    /// Requests sent.
    pub fn requests(&self) -> u64 {
        self.reads + self.writes
    }

    /// Bytes moved.
    pub fn bytes(&self) -> u64 {
        self.bytes_read + self.bytes_written
    }

    /// Simulated time from the first send to the last response (0 before any).
    pub fn active_time(&self) -> Tick {
        self.first_issue.map_or(0, |t| self.last_response.saturating_sub(t))
    }

    /// The steady state: from the first response to the last send (none when the last send
    /// came first). Inside it the memory has been answering for a full latency and the driver
    /// still offers its load, so neither the ramp-up nor the drain, when ever fewer requests
    /// are queued, is in it; [`DriverReport::steady_read_bytes`] were read inside it.
    pub fn steady_window(&self) -> Option<(Tick, Tick)> {
        self.first_response.filter(|&t| t < self.last_issue).map(|t| (t, self.last_issue))
    }
}

/// Statistic ids of a driver.
struct DriverStats {
    reads: CounterId,
    writes: CounterId,
    bytes_read: CounterId,
    bytes_written: CounterId,
    read_latency: HistogramId,
    write_latency: HistogramId,
    issue_delay: HistogramId,
}

/// Largest latency a histogram resolves, in ps (10 ms; longer values are clamped).
const HISTOGRAM_MAX: u64 = 10_000_000_000;

/// A trace-driven requester (see the module docs).
pub struct TraceDriver<M, S> {
    name: String,
    cfg: DriverConfig,
    source: S,
    req: LinkId,
    resp: LinkId,
    /// The source's time base (asked once: the source may be a trait object).
    base: TimeBase,
    /// Picoseconds between requests under [`Pacing::Rate`].
    period_ps: f64,
    /// Whether due ticks come from the trace or the rate (so lateness means something).
    timed: bool,
    /// The next record to send, already read and checked.
    next: Option<TraceRecord>,
    /// The source has nothing more (or failed).
    exhausted: bool,
    in_flight: u32,
    /// A timer is pending for the next record's due tick.
    timer_armed: bool,
    error: Option<TraceError>,
    report: DriverReport,
    stats: DriverStats,
    _msg: PhantomData<fn() -> M>,
}

impl<M, S: TraceSource> TraceDriver<M, S> {
    /// A driver named `name` replaying `source` on `req`, hearing responses on `resp`.
    pub fn new(
        name: &str,
        cfg: DriverConfig,
        source: S,
        req: LinkId,
        resp: LinkId,
        stats: &mut Stats,
    ) -> Result<Self, DriverBuildError> {
        let invalid = |what, reason: &str| Err(DriverBuildError::Invalid { what, reason: reason.into() });
        if cfg.max_in_flight == 0 {
            return invalid("requests in flight", "must be at least 1");
        }
        if cfg.bytes == 0 {
            return invalid("request size", "must be above 0 B");
        }
        let mut period_ps = 0.0;
        if let Pacing::Rate { per_ns } = cfg.pacing {
            if !(per_ns.is_finite() && per_ns > 0.0) {
                return Err(DriverBuildError::Invalid {
                    what: "injection rate",
                    reason: format!("{per_ns} requests/ns is not a positive number"),
                });
            }
            period_ps = 1000.0 / per_ns;
        }
        let base = source.time_base();
        if cfg.pacing == Pacing::Timestamps && base == TimeBase::MemoryCycles && cfg.clock.is_none() {
            return invalid("memory clock", "a trace timed in memory cycles needs the memory's clock");
        }
        let timed = match cfg.pacing {
            Pacing::Timestamps => base != TimeBase::Untimed,
            Pacing::Max => false,
            Pacing::Rate { .. } => true,
        };
        let stats = DriverStats {
            reads: stats.counter_in(name, "reads")?,
            writes: stats.counter_in(name, "writes")?,
            bytes_read: stats.counter_in(name, "bytes_read")?,
            bytes_written: stats.counter_in(name, "bytes_written")?,
            read_latency: stats.histogram_in(name, "read_latency", HISTOGRAM_MAX, 3)?,
            write_latency: stats.histogram_in(name, "write_latency", HISTOGRAM_MAX, 3)?,
            issue_delay: stats.histogram_in(name, "issue_delay", HISTOGRAM_MAX, 3)?,
        };
        Ok(Self {
            name: name.to_owned(),
            cfg,
            source,
            req,
            resp,
            base,
            period_ps,
            timed,
            next: None,
            exhausted: false,
            in_flight: 0,
            timer_armed: false,
            error: None,
            report: DriverReport::default(),
            stats,
            _msg: PhantomData,
        })
    }

    /// What the driver has done so far.
    pub fn report(&self) -> &DriverReport {
        &self.report
    }

    /// The trace error that stopped the driver, if one did.
    pub fn error(&self) -> Option<&TraceError> {
        self.error.as_ref()
    }

    /// Whether the source is exhausted and every response has arrived.
    pub fn finished(&self) -> bool {
        self.exhausted && self.next.is_none() && self.in_flight == 0
    }

    /// Requests awaiting their response.
    pub fn in_flight(&self) -> u32 {
        self.in_flight
    }

    /// The source (for its name, or what it has left).
    pub fn source(&self) -> &S {
        &self.source
    }

    /// Reads the next record into `self.next`, checking it against the memory's capacity.
    fn fetch(&mut self) {
        match self.source.next_record() {
            Ok(Some(mut rec)) => {
                let bytes = rec.bytes.unwrap_or(self.cfg.bytes);
                if rec.bytes.is_none() {
                    // A transaction of the request size (DRAMsim3's and Ramulator's traces): the
                    // one holding the address, as they drop its offset bits.
                    rec.addr -= rec.addr % u64::from(bytes);
                }
                if let Some(capacity) = self.cfg.capacity {
                    let end = rec.addr.checked_add(u64::from(bytes));
                    if end.is_none_or(|end| end > capacity) {
                        let at = Origin::new(self.source.name(), self.source.position());
                        self.fail(TraceError::OutOfRange { at, addr: rec.addr, bytes, capacity });
                        return;
                    }
                }
                self.next = Some(rec);
            }
            Ok(None) => self.exhausted = true,
            Err(e) => self.fail(e),
        }
    }

    fn fail(&mut self, e: TraceError) {
        self.error = Some(e);
        self.exhausted = true;
        self.next = None;
    }

    /// The tick at which `rec`, the `index`-th request, may be sent (saturating).
    #[inline]
    fn due(&self, rec: &TraceRecord, index: u64) -> Tick {
        match self.cfg.pacing {
            Pacing::Max => 0,
            // f64 holds request indices exactly up to 2^53; the product is rounded down.
            Pacing::Rate { .. } => (index as f64 * self.period_ps) as Tick,
            Pacing::Timestamps => match self.base {
                TimeBase::Untimed => 0,
                TimeBase::Picoseconds => rec.time,
                TimeBase::MemoryCycles => self.cfg.clock.map_or(0, |c| c.edge(rec.time)),
            },
        }
    }
}

impl<M, S> TraceDriver<M, S>
where
    M: Carries<MemRequest> + Carries<MemResponse>,
    S: TraceSource,
{
    /// Sends every record that is due, while the window and the link allow.
    fn issue(&mut self, ctx: &mut Ctx<'_, M>) {
        let now = ctx.now();
        loop {
            if self.next.is_none() {
                if self.exhausted {
                    return;
                }
                self.fetch();
                continue;
            }
            let Some(rec) = self.next else { return };
            if self.in_flight >= self.cfg.max_in_flight {
                // Woken by the next response.
                return;
            }
            let index = self.report.requests();
            let due = self.due(&rec, index);
            if due >= LAST_DUE {
                let time = match (self.cfg.pacing, self.base) {
                    (Pacing::Timestamps, TimeBase::MemoryCycles) => format!("{} cycles", rec.time),
                    (Pacing::Timestamps, _) => format!("{} ps", rec.time),
                    _ => format!("{} ps at the injection rate", self.period_ps * index as f64),
                };
                let at = Origin::new(self.source.name(), self.source.position());
                self.fail(TraceError::TimeOverflow { at, index, time });
                return;
            }
            if due > now {
                if !self.timer_armed {
                    self.timer_armed = true;
                    ctx.schedule_at(due, Priority::DEFAULT, 0);
                }
                return;
            }
            let bytes = rec.bytes.unwrap_or(self.cfg.bytes);
            let req = MemRequest {
                id: index,
                addr: rec.addr,
                bytes,
                write: rec.write,
                issued: now,
                non_temporal: rec.non_temporal,
            };
            if ctx.send(self.req, M::wrap(req)).is_err() {
                // Woken by Wake::Space when the memory pops the link.
                return;
            }
            self.next = None;
            self.in_flight += 1;
            // Moving through the trace is progress: a timed trace may wait longer than the
            // watchdog's window between two records, and nothing is stuck then.
            ctx.progress();
            let r = &mut self.report;
            r.peak_in_flight = r.peak_in_flight.max(self.in_flight);
            r.first_issue.get_or_insert(now);
            r.last_issue = now;
            let s = ctx.stats();
            if rec.write {
                r.writes += 1;
                r.bytes_written += u64::from(bytes);
                s.inc(self.stats.writes);
                s.add(self.stats.bytes_written, u64::from(bytes));
            } else {
                r.reads += 1;
                r.bytes_read += u64::from(bytes);
                s.inc(self.stats.reads);
                s.add(self.stats.bytes_read, u64::from(bytes));
            }
            if self.timed {
                let delay = now - due;
                s.record(self.stats.issue_delay, delay);
                r.issue_delay_sum = r.issue_delay_sum.saturating_add(delay);
                r.issue_delay_max = r.issue_delay_max.max(delay);
            }
        }
    }

    /// Takes every response that has arrived.
    fn collect(&mut self, ctx: &mut Ctx<'_, M>) {
        let now = ctx.now();
        while let Some(msg) = ctx.recv(self.resp) {
            // Anything but a response is a wiring error; dropping it leaves the request in
            // flight, which the watchdog then reports.
            let Ok(resp) = Carries::<MemResponse>::unwrap_as(msg) else { continue };
            let latency = now.saturating_sub(resp.issued);
            let h = if resp.write {
                self.stats.write_latency
            } else {
                self.report.read_latency_sum = self.report.read_latency_sum.saturating_add(latency);
                self.report.read_latency_max = self.report.read_latency_max.max(latency);
                self.stats.read_latency
            };
            ctx.stats().record(h, latency);
            self.in_flight = self.in_flight.saturating_sub(1);
            self.report.responses += 1;
            // Counted after the first answer's tick: the window opens there.
            let sending = !(self.exhausted && self.next.is_none());
            if !resp.write && sending && self.report.first_response.is_some_and(|t| now > t) {
                self.report.steady_read_bytes += u64::from(resp.bytes);
            }
            self.report.first_response.get_or_insert(now);
            self.report.last_response = now;
            ctx.progress();
        }
    }
}

impl<M, S> Component for TraceDriver<M, S>
where
    M: Carries<MemRequest> + Carries<MemResponse>,
    S: TraceSource,
{
    type Msg = M;

    fn name(&self) -> &str {
        &self.name
    }

    fn wake(&mut self, why: Wake, ctx: &mut Ctx<'_, M>) {
        match why {
            Wake::Arrival(_) => self.collect(ctx),
            // Only one timer is ever pending: the one for the next record.
            Wake::Timer(_) => self.timer_armed = false,
            Wake::Start | Wake::Space(_) => {}
        }
        self.issue(ctx);
    }

    fn busy(&self) -> bool {
        !self.finished()
    }

    fn status(&self) -> String {
        format!(
            "{} of {} requests answered, {} in flight (max {}){}",
            self.report.responses,
            self.report.requests(),
            self.in_flight,
            self.cfg.max_in_flight,
            if self.next.is_some() { ", next request waiting" } else { "" }
        )
    }
}
