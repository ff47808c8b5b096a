//! Where a cycle-level run's time went: each core's cycles split by what held its dispatch,
//! each access unit's by what held it, averaged over the chip. The stacked time-breakdown plot
//! draws these; results.json carries them as `time_breakdown`.
//!
//! Both splits are exact partitions of the run (the fractions add up to one): the core counts
//! one dispatch-stall cause per cycle ([`exec_core::CoreCounters`]) and the access unit one
//! stall cause per cycle ([`access_unit::AuCounters`]); what is left before a component
//! finishes is its working time, what is left after it is time spent done (load imbalance).

use access_unit::AuCounters;
use exec_core::CoreCounters;
use serde::{Deserialize, Serialize};
use sim_core::{Clock, Tick};

/// A core's time, as fractions of the run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct CoreTime {
    /// Cycles in which at least one instruction dispatched.
    pub dispatching: f64,
    /// Dispatch held by a full ROB, load queue, store queue or MSHR file: waiting on memory.
    pub memory: f64,
    /// `pop_control` waited for an output-queue entry: the access unit was behind.
    pub queue_empty: f64,
    /// Refilling after a mispredicted branch.
    pub mispredict: f64,
    /// Finished before the run ended.
    pub done: f64,
}

/// An access unit's time, as fractions of the run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct UnitTime {
    /// Generating iterations, issuing requests or waiting for their data.
    pub working: f64,
    /// A layer could not start an iteration: its stream storage was full.
    pub storage_full: f64,
    /// Requests waited: `max_outstanding` were in flight.
    pub request_limit: f64,
    /// An event waited: the core had not freed an output-queue chunk.
    pub queue_full: f64,
    /// Finished before the run ended.
    pub done: f64,
}

/// The chip's time breakdown, averaged over its cores and access units.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct TimeBreakdown {
    /// The cores' time.
    pub core: CoreTime,
    /// The access units' time (none on a chip without them).
    pub access_unit: Option<UnitTime>,
}

impl TimeBreakdown {
    /// The breakdown of this run (`time` long) followed by `next` (`next_time` long): each
    /// part weighted by its run's length, so the parts still add up to one.
    pub fn absorb(&mut self, time: f64, next: &TimeBreakdown, next_time: f64) {
        let total = time + next_time;
        if total <= 0.0 {
            return;
        }
        let mix = |a: f64, b: f64| (a * time + b * next_time) / total;
        let (c, n) = (&mut self.core, &next.core);
        for (a, b) in [
            (&mut c.dispatching, n.dispatching),
            (&mut c.memory, n.memory),
            (&mut c.queue_empty, n.queue_empty),
            (&mut c.mispredict, n.mispredict),
            (&mut c.done, n.done),
        ] {
            *a = mix(*a, b);
        }
        if let (Some(u), Some(n)) = (&mut self.access_unit, &next.access_unit) {
            for (a, b) in [
                (&mut u.working, n.working),
                (&mut u.storage_full, n.storage_full),
                (&mut u.request_limit, n.request_limit),
                (&mut u.queue_full, n.queue_full),
                (&mut u.done, n.done),
            ] {
                *a = mix(*a, b);
            }
        }
    }
}

/// Sums cycles over components, then divides by their number and the run's cycles.
#[derive(Debug, Clone)]
pub struct BreakdownBuilder {
    end: Tick,
    core: [u64; 5],
    cores: u64,
    unit: [u64; 5],
    units: u64,
}

/// Splits `total` cycles into `stalls` (in order), the rest before `finish` and the time after it.
fn split<const N: usize>(
    clock: &Clock,
    end: Tick,
    finish: Option<Tick>,
    stalls: [u64; N],
) -> (u64, [u64; N], u64) {
    let total = clock.cycle_at(end);
    let finished = clock.cycle_at(finish.unwrap_or(end).min(end));
    // Stall intervals are counted up to the finish; clamp so a rounding cycle cannot go negative.
    let stalled: u64 = stalls.iter().sum();
    (finished.saturating_sub(stalled), stalls, total - finished)
}

impl BreakdownBuilder {
    /// A builder for a run that ended at `end`.
    pub fn new(end: Tick) -> Self {
        BreakdownBuilder { end, core: [0; 5], cores: 0, unit: [0; 5], units: 0 }
    }

    /// Adds a core's counters (`finish`: when its last instruction retired).
    pub fn add_core(&mut self, clock: &Clock, c: &CoreCounters, finish: Option<Tick>) {
        let memory = c.stall_rob_full + c.stall_lq_full + c.stall_sq_full + c.stall_memory_slots;
        let (work, [memory, queue, mispredict], done) =
            split(clock, self.end, finish, [memory, c.stall_queue, c.stall_mispredict]);
        for (sum, v) in self.core.iter_mut().zip([work, memory, queue, mispredict, done]) {
            *sum += v;
        }
        self.cores += 1;
    }

    /// Adds an access unit's counters.
    pub fn add_unit(&mut self, clock: &Clock, c: &AuCounters) {
        let stalls = [c.storage_stall_cycles, c.outstanding_stall_cycles, c.outq_stall_cycles];
        let (work, [storage, limit, queue], done) = split(clock, self.end, c.finish_tick, stalls);
        for (sum, v) in self.unit.iter_mut().zip([work, storage, limit, queue, done]) {
            *sum += v;
        }
        self.units += 1;
    }

    /// The averages: each part over the sum of all parts, so they add up to one.
    pub fn finish(&self) -> TimeBreakdown {
        let shares = |v: &[u64; 5]| {
            let total = v.iter().sum::<u64>().max(1) as f64;
            v.map(|x| x as f64 / total)
        };
        let [dispatching, memory, queue_empty, mispredict, done] = shares(&self.core);
        let core = CoreTime { dispatching, memory, queue_empty, mispredict, done };
        let access_unit = (self.units > 0).then(|| {
            let [working, storage_full, request_limit, queue_full, done] = shares(&self.unit);
            UnitTime { working, storage_full, request_limit, queue_full, done }
        });
        TimeBreakdown { core, access_unit }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_add_up_and_land_where_counted() {
        let clock = Clock::new(sim_core::Frequency::parse("1GHz").unwrap()).unwrap();
        // 100 cycles of run; the core finished at cycle 80 after 30 queue-empty and 10 ROB-full cycles.
        let mut b = BreakdownBuilder::new(clock.cycles_to_ticks(100));
        let c = CoreCounters { stall_queue: 30, stall_rob_full: 10, ..Default::default() };
        b.add_core(&clock, &c, Some(clock.cycles_to_ticks(80)));
        let u = AuCounters {
            storage_stall_cycles: 5,
            outq_stall_cycles: 15,
            finish_tick: Some(clock.cycles_to_ticks(50)),
            ..Default::default()
        };
        b.add_unit(&clock, &u);
        let t = b.finish();
        let close = |a: f64, b: f64| (a - b).abs() < 1e-12;
        assert!(close(t.core.dispatching, 0.4), "{t:?}");
        assert!(close(t.core.memory, 0.1) && close(t.core.queue_empty, 0.3) && close(t.core.done, 0.2));
        let a = t.access_unit.unwrap();
        assert!(close(a.working, 0.3) && close(a.storage_full, 0.05) && close(a.queue_full, 0.15));
        assert!(close(a.done, 0.5) && close(a.request_limit, 0.0));
    }

    #[test]
    fn a_chip_without_units_has_no_unit_part() {
        let clock = Clock::new(sim_core::Frequency::parse("1GHz").unwrap()).unwrap();
        let mut b = BreakdownBuilder::new(clock.cycles_to_ticks(10));
        b.add_core(&clock, &CoreCounters::default(), None);
        let t = b.finish();
        assert!(t.access_unit.is_none());
        assert_eq!(t.core.dispatching, 1.0);
    }
}
