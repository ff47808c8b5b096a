//! The validated, name-resolved description of a DRAM system.
//!
//! Contract: [`DramSpec::from_preset`] checks a [`DramPreset`] completely and resolves every
//! name once: levels and commands to enum values, latency expressions to cycle counts, policy
//! and mapping names to enums. An unknown name fails fast with an error that names it (and the
//! valid ones). A `DramSpec` is therefore always buildable; the model built from it never looks
//! a name up again.

use crate::dram::command::{CmdSet, Command, Level};
use crate::dram::error::DramError;
use crate::dram::expr::{self, ExprError};
use crate::dram::mapping::{AddressMapping, MappingGeometry, MappingScheme};
use crate::dram::preset::{ConstraintPreset, DramPreset};
use sim_core::{Bandwidth, ByteSize, Clock, Frequency, PS_PER_SECOND, TimeSpan, TransferRate};
use std::collections::BTreeMap;

/// Geometry of the whole memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Organization {
    /// HBM stacks (DDR: 1).
    pub stacks: u32,
    /// Channels per stack.
    pub channels_per_stack: u32,
    /// Channels in all (`stacks * channels_per_stack`).
    pub channels: u32,
    /// Pseudo-channels per channel.
    pub pseudo_channels: u32,
    /// Ranks (stack ids) per pseudo-channel.
    pub ranks: u32,
    /// Bank groups per rank.
    pub bank_groups: u32,
    /// Banks per bank group.
    pub banks: u32,
    /// Rows per bank.
    pub rows: u32,
    /// Bytes per row (one pseudo-channel's page).
    pub row_bytes: u64,
    /// Bursts per row.
    pub columns: u32,
    /// Data bus width of a pseudo-channel, in bits.
    pub bus_width_bits: u32,
    /// Transfers per burst.
    pub burst_length: u32,
    /// Bytes per burst (`bus_width_bits / 8 * burst_length`).
    pub burst_bytes: u64,
}

impl Organization {
    /// Banks per pseudo-channel (over all its ranks).
    pub fn banks_per_pseudo_channel(&self) -> u32 {
        self.ranks * self.bank_groups * self.banks
    }

    /// Pseudo-channel controllers in all.
    pub fn controllers(&self) -> u32 {
        self.channels * self.pseudo_channels
    }

    /// Nodes of `level` under one node of the level above (channels: per memory).
    pub fn count(&self, level: Level) -> u32 {
        match level {
            Level::Channel => self.channels,
            Level::PseudoChannel => self.pseudo_channels,
            Level::Rank => self.ranks,
            Level::BankGroup => self.bank_groups,
            Level::Bank => self.banks,
        }
    }
}

/// One resolved row of the constraint table: after a command of `preceding` issues to a node of
/// `level`, a command of `following` to that node (or, with `sibling`, to another node of the
/// level under the same parent) waits at least `latency` cycles; with `window` = n > 1 the wait
/// counts from the n-th most recent preceding command (tFAW: n = 4).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Constraint {
    /// The level.
    pub level: Level,
    /// Commands that start it.
    pub preceding: CmdSet,
    /// Commands it delays.
    pub following: CmdSet,
    /// Minimum distance in cycles.
    pub latency: u64,
    /// 1 for an ordinary constraint; n for an n-activation window.
    pub window: u32,
    /// Whether it applies between sibling nodes rather than within one node.
    pub sibling: bool,
    /// The latency expression as written.
    pub expr: String,
}

/// How the controller picks among ready commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheduler {
    /// First-ready, first-come-first-served: the oldest request whose next command is legal.
    FrFcfs,
    /// FR-FCFS preferring row hits, but at most `row_hit_cap` hits in a row to a bank while an
    /// older request to that bank waits for another row.
    FrFcfsCap,
}

/// When rows are closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PagePolicy {
    /// Rows stay open until a request needs another row.
    Open,
    /// A column access auto-precharges (RDA/WRA) unless another queued request hits the row.
    Closed,
}

/// How refresh is issued.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefreshMode {
    /// No refresh (for measuring peak bandwidth).
    None,
    /// REFab to each refresh unit every refresh interval.
    AllBank,
    /// REFpb to each bank in turn, every refresh interval / banks per unit.
    PerBank,
}

/// Controller parameters (per pseudo-channel controller).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ControllerConfig {
    /// Read queue entries.
    pub read_queue: u32,
    /// Write queue entries.
    pub write_queue: u32,
    /// Write-drain high watermark (entries).
    pub write_high_watermark: u32,
    /// Write-drain low watermark (entries).
    pub write_low_watermark: u32,
    /// Scheduling policy.
    pub scheduler: Scheduler,
    /// Row-hit cap for [`Scheduler::FrFcfsCap`].
    pub row_hit_cap: u32,
    /// Page policy.
    pub page_policy: PagePolicy,
    /// Refresh mode.
    pub refresh: RefreshMode,
    /// Level refreshed (and precharged by PREA) as one unit.
    pub refresh_level: Level,
    /// Whether the refresh units' schedules are spread over one interval.
    pub refresh_stagger: bool,
}

/// A validated DRAM system (see the module docs).
#[derive(Debug, Clone)]
pub struct DramSpec {
    name: String,
    standard: String,
    org: Organization,
    data_rate: TransferRate,
    transfers_per_clock: u32,
    clock: Clock,
    timings: BTreeMap<String, u64>,
    constraints: Vec<Constraint>,
    read_latency: u64,
    refresh_interval: u64,
    controller: ControllerConfig,
    mapping: AddressMapping,
    interleave_bytes: u64,
    unused: Vec<String>,
}

const SCHEDULERS: &str = "frfcfs, frfcfs_cap";
const PAGE_POLICIES: &str = "open, closed";
const REFRESH_MODES: &str = "all_bank, per_bank, none";

fn positive(v: u32, what: &str) -> Result<u32, DramError> {
    if v == 0 { Err(DramError::Zero { what: what.to_string() }) } else { Ok(v) }
}

fn invalid(what: impl Into<String>, reason: impl Into<String>) -> DramError {
    DramError::Invalid { what: what.into(), reason: reason.into() }
}

/// How many bursts of `burst_bytes` make up `size`: a positive whole number, or an error naming
/// the preset key `what`.
fn whole_bursts(what: &str, size: ByteSize, burst_bytes: u64) -> Result<u32, DramError> {
    let bytes = size.bytes();
    if bytes == 0 || !bytes.is_multiple_of(burst_bytes) {
        return Err(invalid(
            what,
            format!("{size} must be a positive multiple of the {burst_bytes} B burst"),
        ));
    }
    u32::try_from(bytes / burst_bytes).map_err(|_| invalid(what, "too many bursts"))
}

/// A second of cycles at the preset's clock, the bound of every timing and latency: far beyond
/// any DRAM's, and far enough from the 64-bit picosecond clock that sums of them cannot
/// overflow (a larger one ended the run as a "deadlock" that named nothing).
struct OneSecond(Frequency);

impl OneSecond {
    /// `cycles`, or an error naming `what` if they are more than a second.
    fn check(&self, what: &str, cycles: u64) -> Result<u64, DramError> {
        if cycles > self.0.hz() {
            return Err(invalid(what, format!("{cycles} cycles is more than 1 s at {}", self.0)));
        }
        Ok(cycles)
    }
}

/// Evaluates a latency expression, turning expression errors into [`DramError`]s; the value
/// is at most a second of cycles.
fn latency(
    context: &str,
    text: &str,
    timings: &BTreeMap<String, u64>,
    second: &OneSecond,
) -> Result<u64, DramError> {
    let cycles = expr::eval(text, timings).map_err(|e| match e {
        ExprError::UnknownName(name) => DramError::UnknownTiming {
            context: context.to_string(),
            name,
            expr: text.to_string(),
            known: timings.keys().cloned().collect::<Vec<_>>().join(", "),
        },
        ExprError::Syntax(reason) => {
            DramError::BadExpression { context: context.to_string(), expr: text.to_string(), reason }
        }
        ExprError::OutOfRange(v) => DramError::BadExpression {
            context: context.to_string(),
            expr: text.to_string(),
            reason: format!("its value {v} is not a cycle count (0 or more)"),
        },
    })?;
    second.check(context, cycles)
}

/// Timings the model reads by name, besides those the expressions use: write data latency
/// (`nCWL + nBL`) and the activation delay the compiler's cost model counts.
const READ_BY_NAME: [&str; 4] = ["nBL", "nCWL", "nRCD", "nRCDRD"];

/// The timings that no expression uses and the model does not read: harmless, but a misspelt
/// name (`nRCDR` for `nRCDRD`) would change nothing, so front ends warn about them.
fn unused_timings(preset: &DramPreset) -> Vec<String> {
    let mut used: std::collections::BTreeSet<String> = READ_BY_NAME.iter().map(|n| n.to_string()).collect();
    let texts = [&preset.latency.read, &preset.latency.refresh_interval]
        .into_iter()
        .chain(preset.constraints.iter().map(|c| &c.latency));
    for text in texts {
        used.extend(expr::names_in(text));
    }
    preset.timing.keys().filter(|n| !used.contains(*n)).cloned().collect()
}

impl DramSpec {
    /// Validates `preset` and resolves all its names (see the module docs).
    pub fn from_preset(preset: DramPreset) -> Result<DramSpec, DramError> {
        let o = &preset.organization;
        let stacks = positive(o.stacks, "organization.stacks")?;
        let channels_per_stack = positive(o.channels, "organization.channels")?;
        let pseudo_channels = positive(o.pseudo_channels, "organization.pseudo_channels")?;
        let ranks = positive(o.ranks, "organization.ranks")?;
        let bank_groups = positive(o.bank_groups, "organization.bank_groups")?;
        let banks = positive(o.banks, "organization.banks")?;
        let rows = positive(o.rows, "organization.rows")?;
        let bus_width_bits = positive(o.bus_width_bits, "organization.bus_width_bits")?;
        let burst_length = positive(o.burst_length, "organization.burst_length")?;
        let channels = stacks
            .checked_mul(channels_per_stack)
            .ok_or_else(|| invalid("organization.channels", "too many channels"))?;
        let controllers = u64::from(channels) * u64::from(pseudo_channels);
        if controllers > 4096 {
            return Err(invalid(
                "organization",
                format!("{controllers} pseudo-channels; the model supports at most 4096"),
            ));
        }
        let banks_per_pc = u64::from(ranks) * u64::from(bank_groups) * u64::from(banks);
        if banks_per_pc > 128 {
            return Err(invalid(
                "organization",
                format!("{banks_per_pc} banks per pseudo-channel; the controller supports at most 128"),
            ));
        }
        let bits = u64::from(bus_width_bits) * u64::from(burst_length);
        if !bits.is_multiple_of(8) {
            return Err(invalid(
                "organization.burst_length",
                format!("a burst of {burst_length} x {bus_width_bits} bits is not a whole number of bytes"),
            ));
        }
        let burst_bytes = bits / 8;
        let row_bytes = o.row_bytes.bytes();
        let columns = whole_bursts("organization.row_bytes", o.row_bytes, burst_bytes)?;
        let org = Organization {
            stacks,
            channels_per_stack,
            channels,
            pseudo_channels,
            ranks,
            bank_groups,
            banks,
            rows,
            row_bytes,
            columns,
            bus_width_bits,
            burst_length,
            burst_bytes,
        };

        // Clock: tCK = transfers_per_clock / data_rate, which must be a whole number of Hz.
        let tpc = positive(preset.clock.transfers_per_clock, "clock.transfers_per_clock")?;
        let rate = preset.clock.data_rate.per_second();
        if rate == 0 {
            return Err(DramError::Zero { what: "clock.data_rate".into() });
        }
        if !rate.is_multiple_of(u64::from(tpc)) {
            return Err(invalid(
                "clock",
                format!("{} / {tpc} transfers per clock is not a whole number of Hz", preset.clock.data_rate),
            ));
        }
        let clock = Clock::new(Frequency::from_hz(rate / u64::from(tpc)))?;
        if !burst_length.is_multiple_of(tpc) {
            return Err(invalid(
                "organization.burst_length",
                format!("{burst_length} transfers is not a whole number of {tpc}-transfer clocks"),
            ));
        }
        let timings = preset.timing.clone();
        let second = OneSecond(clock.frequency());
        for (name, &v) in &timings {
            second.check(&format!("timing.{name}"), v)?;
        }
        let unused = unused_timings(&preset);
        if let Some(&nbl) = timings.get("nBL")
            && nbl != u64::from(burst_length / tpc)
        {
            return Err(invalid(
                "timing.nBL",
                format!(
                    "{nbl} cycles, but a burst of {burst_length} transfers at {tpc} per clock takes {}",
                    burst_length / tpc
                ),
            ));
        }

        // Controller.
        let c = &preset.controller;
        let read_queue = positive(c.read_queue, "controller.read_queue")?;
        let write_queue = positive(c.write_queue, "controller.write_queue")?;
        if read_queue > 4096 || write_queue > 4096 {
            return Err(invalid("controller", "queues hold at most 4096 entries each"));
        }
        if c.write_low_watermark >= c.write_high_watermark || c.write_high_watermark > write_queue {
            return Err(invalid(
                "controller.write_low_watermark/write_high_watermark",
                format!(
                    "need low < high <= write_queue, got {} / {} / {write_queue}",
                    c.write_low_watermark, c.write_high_watermark
                ),
            ));
        }
        let scheduler = match c.scheduler.as_str() {
            "frfcfs" => Scheduler::FrFcfs,
            "frfcfs_cap" => Scheduler::FrFcfsCap,
            other => {
                return Err(DramError::UnknownPolicy {
                    field: "scheduler",
                    name: other.into(),
                    valid: SCHEDULERS,
                });
            }
        };
        let row_hit_cap = positive(c.row_hit_cap, "controller.row_hit_cap")?;
        let page_policy = match c.page_policy.as_str() {
            "open" => PagePolicy::Open,
            "closed" => PagePolicy::Closed,
            other => {
                return Err(DramError::UnknownPolicy {
                    field: "page_policy",
                    name: other.into(),
                    valid: PAGE_POLICIES,
                });
            }
        };
        let refresh = match c.refresh.as_str() {
            "all_bank" => RefreshMode::AllBank,
            "per_bank" => RefreshMode::PerBank,
            "none" => RefreshMode::None,
            other => {
                return Err(DramError::UnknownPolicy {
                    field: "refresh",
                    name: other.into(),
                    valid: REFRESH_MODES,
                });
            }
        };
        let refresh_level = Level::from_name(&c.refresh_level).ok_or_else(|| DramError::UnknownLevel {
            context: "controller.refresh_level".into(),
            name: c.refresh_level.clone(),
            valid: Level::VALID,
        })?;
        if !matches!(refresh_level, Level::PseudoChannel | Level::Rank) {
            return Err(invalid(
                "controller.refresh_level",
                format!("\"{refresh_level}\": the all-bank scope must be pseudo_channel or rank"),
            ));
        }
        let controller = ControllerConfig {
            read_queue,
            write_queue,
            write_high_watermark: c.write_high_watermark,
            write_low_watermark: c.write_low_watermark,
            scheduler,
            row_hit_cap,
            page_policy,
            refresh,
            refresh_level,
            refresh_stagger: c.refresh_stagger,
        };

        // Mapping.
        let scheme = MappingScheme::from_name(&c.mapping)?;
        let interleave_bytes = c.interleave.bytes();
        let interleave_bursts = whole_bursts("controller.interleave", c.interleave, burst_bytes)?;
        let geometry = MappingGeometry {
            channels,
            pseudo_channels,
            ranks,
            bank_groups,
            banks,
            rows,
            columns,
            burst_bytes,
        };
        let mapping = AddressMapping::new(scheme, geometry, interleave_bursts, c.xor_bank)?
            .with_channel_hash(c.channel_hash);
        if c.channel_hash && !mapping.can_hash_channels() {
            return Err(invalid(
                "controller.channel_hash",
                format!(
                    "mapping {} puts the pseudo-channel above every other field, so there is nothing to hash \
                     it with: set channel_hash = false or pick a mapping with fields above Ch",
                    c.mapping
                ),
            ));
        }

        // Latencies.
        let read_latency = latency("latency.read", &preset.latency.read, &timings, &second)?;
        let refresh_interval =
            latency("latency.refresh_interval", &preset.latency.refresh_interval, &timings, &second)?;
        if refresh != RefreshMode::None && refresh_interval == 0 {
            return Err(DramError::Zero { what: "latency.refresh_interval".into() });
        }
        if refresh == RefreshMode::PerBank {
            let per_unit = match refresh_level {
                Level::Rank => u64::from(bank_groups) * u64::from(banks),
                _ => banks_per_pc,
            };
            if refresh_interval / per_unit == 0 {
                return Err(invalid(
                    "latency.refresh_interval",
                    format!("{refresh_interval} cycles cannot be shared among {per_unit} banks"),
                ));
            }
        }

        let mut constraints = Vec::with_capacity(preset.constraints.len());
        for (index, row) in preset.constraints.iter().enumerate() {
            constraints.push(resolve_constraint(index, row, &timings, refresh_level, &second)?);
        }
        // An all-bank refresh that blocks its unit for a whole interval or more leaves no time to
        // serve anything: the run would livelock, so refuse the preset here.
        if refresh == RefreshMode::AllBank {
            let blocked = constraints
                .iter()
                .filter(|c| {
                    !c.sibling && c.preceding.contains(Command::RefAb) && c.following.contains(Command::Act)
                })
                .map(|c| c.latency)
                .max()
                .unwrap_or(0);
            if blocked >= refresh_interval {
                return Err(invalid(
                    "latency.refresh_interval",
                    format!(
                        "{refresh_interval} cycles leave no time between refreshes: a refresh blocks its banks \
                         for {blocked} cycles (the REFab -> ACT constraint, tRFC)"
                    ),
                ));
            }
            // A row opened right after a refresh must be readable before the next one closes
            // it, or no column command ever goes.
            let activate = constraints
                .iter()
                .filter(|c| {
                    !c.sibling
                        && c.preceding.contains(Command::Act)
                        && [Command::Rd, Command::Wr].iter().any(|&x| c.following.contains(x))
                })
                .map(|c| c.latency)
                .max()
                .unwrap_or(0);
            if blocked + activate >= refresh_interval {
                return Err(invalid(
                    "latency.refresh_interval",
                    format!(
                        "{refresh_interval} cycles between refreshes cannot fit a refresh ({blocked} cycles, \
                         tRFC) and a row activation ({activate} cycles from ACT to RD or WR, tRCD): no read \
                         or write would ever issue"
                    ),
                ));
            }
        }

        Ok(DramSpec {
            name: preset.name,
            standard: preset.standard,
            org,
            data_rate: preset.clock.data_rate,
            transfers_per_clock: tpc,
            clock,
            timings,
            constraints,
            read_latency,
            refresh_interval,
            controller,
            mapping,
            interleave_bytes,
            unused,
        })
    }

    /// The preset's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The standard it follows.
    pub fn standard(&self) -> &str {
        &self.standard
    }

    /// Geometry.
    pub fn organization(&self) -> &Organization {
        &self.org
    }

    /// Channels over all stacks.
    pub fn channels(&self) -> u32 {
        self.org.channels
    }

    /// Pseudo-channels per channel.
    pub fn pseudo_channels(&self) -> u32 {
        self.org.pseudo_channels
    }

    /// Pseudo-channel controllers in all (`channels * pseudo_channels`).
    pub fn controllers(&self) -> u32 {
        self.org.controllers()
    }

    /// Bytes per burst (one column command).
    pub fn burst_bytes(&self) -> u64 {
        self.org.burst_bytes
    }

    /// Bytes addressable.
    pub fn capacity_bytes(&self) -> u64 {
        self.mapping.capacity()
    }

    /// The per-pin data rate.
    pub fn data_rate(&self) -> TransferRate {
        self.data_rate
    }

    /// Data transfers per command-clock cycle.
    pub fn transfers_per_clock(&self) -> u32 {
        self.transfers_per_clock
    }

    /// The command clock.
    pub fn clock(&self) -> Clock {
        self.clock
    }

    /// The command clock period, rounded down to whole picoseconds.
    pub fn tck(&self) -> TimeSpan {
        TimeSpan::from_ps(self.clock.frequency().period_ps_floor())
    }

    /// Peak data bandwidth: every pseudo-channel moving `bus_width_bits` at the data rate.
    pub fn peak_bandwidth(&self) -> Bandwidth {
        let bytes = u128::from(self.controllers())
            * u128::from(self.org.bus_width_bits)
            * u128::from(self.data_rate.per_second())
            / 8;
        Bandwidth::from_bytes_per_second(u64::try_from(bytes).unwrap_or(u64::MAX))
    }

    /// Peak bandwidth of one pseudo-channel.
    pub fn peak_bandwidth_per_controller(&self) -> Bandwidth {
        let bytes = u128::from(self.org.bus_width_bits) * u128::from(self.data_rate.per_second()) / 8;
        Bandwidth::from_bytes_per_second(u64::try_from(bytes).unwrap_or(u64::MAX))
    }

    /// The named timings, in cycles.
    pub fn timings(&self) -> &BTreeMap<String, u64> {
        &self.timings
    }

    /// The preset's timings that no constraint or latency uses and the model does not read
    /// (front ends warn: a misspelt name changes nothing).
    pub fn unused_timings(&self) -> &[String] {
        &self.unused
    }

    /// The timings that are used and 0 cycles: legal (a constraint of 0 holds nothing back, as
    /// in Ramulator), but no DRAM command takes no time, so front ends warn of a likely typo.
    pub fn zero_timings(&self) -> impl Iterator<Item = &str> + '_ {
        self.timings.iter().filter(|&(n, &v)| v == 0 && !self.unused.contains(n)).map(|(n, _)| n.as_str())
    }

    /// A warning per [`DramSpec::unused_timings`] and [`DramSpec::zero_timings`] entry, naming
    /// its key.
    pub fn timing_warnings(&self) -> impl Iterator<Item = String> + '_ {
        let unused = self.unused.iter().map(|t| {
            format!("timing.{t} is used by no constraint or latency (a misspelt name changes nothing)")
        });
        let zero = self.zero_timings().map(|t| {
            format!("timing.{t} is 0 cycles: the constraints and latencies built on it hold nothing back")
        });
        unused.chain(zero)
    }

    /// A named timing, in cycles.
    pub fn timing(&self, name: &str) -> Option<u64> {
        self.timings.get(name).copied()
    }

    /// The constraint table.
    pub fn constraints(&self) -> &[Constraint] {
        &self.constraints
    }

    /// Cycles from RD issue to the last data beat.
    pub fn read_latency(&self) -> u64 {
        self.read_latency
    }

    /// Cycles between all-bank refreshes of one unit.
    pub fn refresh_interval(&self) -> u64 {
        self.refresh_interval
    }

    /// Controller parameters.
    pub fn controller(&self) -> &ControllerConfig {
        &self.controller
    }

    /// The address mapping.
    pub fn mapping(&self) -> &AddressMapping {
        &self.mapping
    }

    /// Bytes kept in one pseudo-channel and row before the mapping's fields start.
    pub fn interleave_bytes(&self) -> u64 {
        self.interleave_bytes
    }

    /// The level a command addresses: the bank, or the all-bank scope for PREA and REFab.
    pub fn scope(&self, cmd: Command) -> Level {
        if cmd.is_all_bank() { self.controller.refresh_level } else { Level::Bank }
    }

    /// Ticks (ps) of `cycles` command-clock cycles.
    pub fn cycles_to_ps(&self, cycles: u64) -> u64 {
        self.clock.cycles_to_ticks(cycles)
    }

    /// The command clock period in exact picoseconds, if it is a whole number.
    pub fn tck_ps_exact(&self) -> Option<u64> {
        let hz = self.clock.frequency().hz();
        PS_PER_SECOND.is_multiple_of(hz).then(|| PS_PER_SECOND / hz)
    }
}

fn resolve_constraint(
    index: usize,
    row: &ConstraintPreset,
    timings: &BTreeMap<String, u64>,
    refresh_level: Level,
    second: &OneSecond,
) -> Result<Constraint, DramError> {
    let context = format!("constraint {index}");
    let summary = format!(
        "{} [{}] -> [{}] \"{}\"",
        row.level,
        row.preceding.join(", "),
        row.following.join(", "),
        row.latency
    );
    let bad = |reason: String| DramError::BadConstraint { index, summary: summary.clone(), reason };
    let level = Level::from_name(&row.level).ok_or_else(|| DramError::UnknownLevel {
        context: context.clone(),
        name: row.level.clone(),
        valid: Level::VALID,
    })?;
    let set = |names: &[String]| -> Result<CmdSet, DramError> {
        let mut s = CmdSet::EMPTY;
        for n in names {
            let c = Command::from_name(n).ok_or_else(|| DramError::UnknownCommand {
                context: context.clone(),
                name: n.clone(),
                valid: Command::VALID,
            })?;
            s = s.with(c);
        }
        Ok(s)
    };
    let preceding = set(&row.preceding)?;
    let following = set(&row.following)?;
    if preceding.is_empty() || following.is_empty() {
        return Err(bad("preceding and following must each name at least one command".into()));
    }
    let lat = latency(&context, &row.latency, timings, second)?;
    if row.window == 0 || row.window > 16 {
        return Err(bad(format!("window {} must be between 1 and 16", row.window)));
    }
    let scope = |c: Command| if c.is_all_bank() { refresh_level } else { Level::Bank };
    let all_reach =
        |s: CmdSet| s.iter().all(|c| scope(c) >= level) && following.iter().all(|c| scope(c) >= level);
    if row.sibling {
        if row.window != 1 {
            return Err(bad("a sibling constraint cannot have a window".into()));
        }
        if level == Level::Channel {
            return Err(bad(
                "channels are independent: a sibling constraint needs a level below channel".into()
            ));
        }
        if !all_reach(preceding) {
            return Err(bad(format!(
                "a sibling constraint at {level} needs commands that address single {level}s \
                 (PREA/REFab address the whole {refresh_level})"
            )));
        }
    }
    if row.window > 1 && !all_reach(preceding) {
        return Err(bad(format!(
            "a window constraint at {level} needs commands that address single {level}s \
             (PREA/REFab address the whole {refresh_level})"
        )));
    }
    Ok(Constraint {
        level,
        preceding,
        following,
        latency: lat,
        window: row.window,
        sibling: row.sibling,
        expr: row.latency.clone(),
    })
}
