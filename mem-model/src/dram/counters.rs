//! What a DRAM counts: the [`DramCounters`] snapshot and the statistics registered under the
//! component's name.
//!
//! Contract: every statistic is registered once at construction (`{name}.reads`,
//! `{name}.row_hits`, `{name}.commands.ACT`, `{name}.pc07.served`, `{name}.read_latency_ps`
//! ...) and updated by id on the hot path; the same figures are kept in plain integers so that
//! [`crate::dram::Dram::counters`] can hand a snapshot to the front end (per-channel balance,
//! row-buffer locality) without going through the statistics tree.
//!
//! Row-buffer outcome is classified per row access, at its first column command, by what its
//! first burst needed: nothing (hit: the row was open, possibly opened for an earlier request),
//! an ACT (miss: the bank was closed) or a PRE (conflict: another row was open). A row access is
//! a request's bursts in one bank and row (one controller entry): a 64 B request on 32 B bursts
//! is one, a 4 KiB request over a 256 B interleave sixteen, one per bank it visits.

use crate::dram::command::{Command, NUM_COMMANDS};
use sim_core::{CounterId, HistogramId, Stats, StatsError, Tick};

/// Counts of a DRAM since construction.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DramCounters {
    /// Read requests accepted.
    pub reads: u64,
    /// Write requests accepted.
    pub writes: u64,
    /// Bytes of read requests.
    pub bytes_read: u64,
    /// Bytes of write requests.
    pub bytes_written: u64,
    /// Read bursts (RD/RDA) issued.
    pub bursts_read: u64,
    /// Write bursts (WR/WRA) issued.
    pub bursts_written: u64,
    /// Row accesses whose first burst found its row open.
    pub row_hits: u64,
    /// Row accesses whose first burst found its bank closed.
    pub row_misses: u64,
    /// Row accesses whose first burst found another row open.
    pub row_conflicts: u64,
    /// Commands issued, indexed by [`Command::index`].
    pub commands: [u64; NUM_COMMANDS],
    /// Bursts served per pseudo-channel controller (channel-major).
    pub served: Vec<u64>,
    /// Read responses sent.
    pub read_responses: u64,
    /// Sum of read latencies (arrival at the DRAM to response), ps.
    pub read_latency_sum_ps: u64,
    /// Largest read latency, ps.
    pub read_latency_max_ps: u64,
    /// Times a controller entered write-drain mode.
    pub write_drains: u64,
    /// Reads answered from the write queues: every burst they read was still queued to be
    /// written (counted in `reads` too, not in `read_responses`' latencies).
    pub forwarded_reads: u64,
    /// The row accesses those reads would have made (one per interleave chunk they touch), so
    /// that hits, misses, conflicts and these add up to every request's row accesses.
    pub forwarded_row_accesses: u64,
    /// Requests refused because they lie outside the capacity.
    pub faults: u64,
    /// Refresh pattern periods that sleeping channels skipped instead of replaying them one
    /// command at a time (their refreshes are in `commands`; see `Dram`'s catch-up).
    pub refresh_periods_skipped: u64,
    /// Tick at which the first data burst (read or write) began on a data bus.
    pub first_data_tick: Option<Tick>,
    /// Tick at which the last data burst so far ended: with `first_data_tick`, the window over
    /// which the memory moved data (posted writes included, which are acknowledged long before
    /// their data reaches the device).
    pub last_data_tick: Tick,
}

impl DramCounters {
    /// ACT commands.
    pub fn activations(&self) -> u64 {
        self.commands[Command::Act.index()]
    }

    /// PRE and PREA commands.
    pub fn precharges(&self) -> u64 {
        self.commands[Command::Pre.index()] + self.commands[Command::PreA.index()]
    }

    /// REFab and REFpb commands.
    pub fn refreshes(&self) -> u64 {
        self.commands[Command::RefAb.index()] + self.commands[Command::RefPb.index()]
    }

    /// Mean read latency in ps (0 without reads).
    pub fn mean_read_latency_ps(&self) -> f64 {
        if self.read_responses == 0 {
            0.0
        } else {
            self.read_latency_sum_ps as f64 / self.read_responses as f64
        }
    }

    /// Fraction of classified row accesses that were row hits.
    pub fn row_hit_rate(&self) -> f64 {
        let n = self.row_hits + self.row_misses + self.row_conflicts;
        if n == 0 { 0.0 } else { self.row_hits as f64 / n as f64 }
    }

    /// Busiest pseudo-channel's bursts over the mean (1.0: perfectly balanced; 0 when idle).
    pub fn imbalance(&self) -> f64 {
        let total: u64 = self.served.iter().sum();
        let max = self.served.iter().copied().max().unwrap_or(0);
        if total == 0 { 0.0 } else { max as f64 * self.served.len() as f64 / total as f64 }
    }
}

/// Statistic ids registered by a DRAM.
#[derive(Debug, Clone)]
pub(crate) struct StatIds {
    pub(crate) reads: CounterId,
    pub(crate) writes: CounterId,
    pub(crate) bytes_read: CounterId,
    pub(crate) bytes_written: CounterId,
    pub(crate) bursts_read: CounterId,
    pub(crate) bursts_written: CounterId,
    pub(crate) row_hits: CounterId,
    pub(crate) row_misses: CounterId,
    pub(crate) row_conflicts: CounterId,
    pub(crate) activations: CounterId,
    pub(crate) precharges: CounterId,
    pub(crate) refreshes: CounterId,
    pub(crate) commands: [CounterId; NUM_COMMANDS],
    pub(crate) served: Vec<CounterId>,
    pub(crate) write_drains: CounterId,
    pub(crate) forwarded_reads: CounterId,
    pub(crate) faults: CounterId,
    pub(crate) read_latency: HistogramId,
}

impl StatIds {
    /// Registers the statistics of a DRAM called `name` with `controllers` pseudo-channels.
    pub(crate) fn register(stats: &mut Stats, name: &str, controllers: u32) -> Result<StatIds, StatsError> {
        let mut c = |leaf: &str| stats.counter_in(name, leaf);
        let reads = c("reads")?;
        let writes = c("writes")?;
        let bytes_read = c("bytes_read")?;
        let bytes_written = c("bytes_written")?;
        let bursts_read = c("bursts_read")?;
        let bursts_written = c("bursts_written")?;
        let row_hits = c("row_hits")?;
        let row_misses = c("row_misses")?;
        let row_conflicts = c("row_conflicts")?;
        let activations = c("activations")?;
        let precharges = c("precharges")?;
        let refreshes = c("refreshes")?;
        let write_drains = c("write_drains")?;
        let forwarded_reads = c("forwarded_reads")?;
        let faults = c("faults")?;
        let mut commands = Vec::with_capacity(NUM_COMMANDS);
        for cmd in Command::ALL {
            commands.push(c(&format!("commands.{}", cmd.name()))?);
        }
        let width = controllers.saturating_sub(1).to_string().len();
        let mut served = Vec::with_capacity(controllers as usize);
        for i in 0..controllers {
            served.push(c(&format!("pc{i:0width$}.served"))?);
        }
        // Latencies up to 1 s (in ps), 3 significant digits.
        let read_latency = stats.histogram_in(name, "read_latency_ps", 1_000_000_000_000, 3)?;
        let commands: [CounterId; NUM_COMMANDS] =
            commands.try_into().map_err(|_| StatsError::TooMany(format!("{name}.commands")))?;
        Ok(StatIds {
            reads,
            writes,
            bytes_read,
            bytes_written,
            bursts_read,
            bursts_written,
            row_hits,
            row_misses,
            row_conflicts,
            activations,
            precharges,
            refreshes,
            commands,
            served,
            write_drains,
            forwarded_reads,
            faults,
            read_latency,
        })
    }
}
