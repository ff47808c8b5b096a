//! Energy and power of a simulated DAE (or plain-CPU) chip, computed after a run from the
//! event counts its components recorded.
//!
//! Per component, dynamic energy is the sum of event counts times an energy per event, and
//! static (background) energy is a power times the simulated time:
//!
//! ```text
//! core   = cores x static_w x t + instructions x instruction_pj
//!          + alu x alu_pj + muldiv x muldiv_pj + vector x vector_pj + loads x load_pj
//!          + stores x store_pj + queue_pops x queue_pop_pj + queue_loads x queue_load_pj
//! au     = units x static_w x t + requests x request_pj + write_requests x write_request_pj
//!          + events x event_pj + operands x operand_pj
//! cache  = instances x static_w x t + (lookups + fills + writebacks) x access_pj   (per level)
//! noc    = messages with a line (read answers, writes) x transfer_pj
//!          + messages without (read requests, write acknowledgements) x control_pj
//! dram   = stacks x background_w_per_stack x t + bits x pJ/bit + activations x activate_pj
//! ```
//!
//! `fills` are lines written into the array (data relayed past a bypassing cache is not one);
//! DRAM bits are those of the bursts the device moved. A core's `static_w` and `instruction_pj`
//! are quoted for one window and priced for the chip's by [`CorePower::for_window`]; a unit's
//! `static_w` for one stream storage, by [`AccessUnitPower::for_storage`]; a cache's figures for
//! one capacity, by [`CachePower::for_size`].
//!
//! Average power is the total over `t`. The figures come from the `[power]` table of the
//! system's preset, each with its source (`configs/systems/dae-hbm3.toml`); the DRAM's from the
//! memory's energy file (`configs/memory/hbm3-energy.toml`). The GPU's model is
//! [`gpu_model::power`].

use mem_model::dram::{DramActivity, DramEnergy};
use serde::Deserialize;
use sim_core::PS_PER_SECOND;

/// `[power.core]`: one core's figures.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CorePower {
    /// Static power of one core (leakage, clock tree), in watts.
    pub static_w: f64,
    /// Energy every dispatched instruction pays: fetch, decode, rename, ROB, issue, retire.
    pub instruction_pj: f64,
    /// An integer ALU operation, on top of `instruction_pj`.
    pub alu_pj: f64,
    /// A multiply or divide.
    pub muldiv_pj: f64,
    /// A vector/FP operation on a whole vector register.
    pub vector_pj: f64,
    /// A load's address generation and load-queue work (its cache access is the cache's).
    pub load_pj: f64,
    /// A store's address generation and store-queue work.
    pub store_pj: f64,
    /// A pop of the output queue (`pop_control`, `pop_operand`): a read of the queue chunk.
    pub queue_pop_pj: f64,
    /// A `vldq`: a row read from the queue chunk in the private L2.
    pub queue_load_pj: f64,
    /// The window sizes `static_w` and `instruction_pj` are quoted at, and how much of them
    /// grows with the window (`None`: the figures do not depend on it).
    #[serde(default)]
    pub window: Option<WindowPower>,
}

/// `[power.core.window]`: the instruction window the core's figures are quoted at. A core with
/// a larger ROB, load/store queues or L1D MSHRs leaks more and spends more per instruction (the
/// queues are searched associatively): the shares scale with the mean of the four structures'
/// size ratios, the rest of the figures stays.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WindowPower {
    /// Reorder-buffer entries of the quoted core.
    pub rob_entries: u32,
    /// Load-queue entries of the quoted core.
    pub lq_entries: u32,
    /// Store-queue entries of the quoted core.
    pub sq_entries: u32,
    /// L1D MSHRs of the quoted core.
    pub mshrs: u32,
    /// Share of `static_w` that scales with the window.
    pub static_share: f64,
    /// Share of `instruction_pj` that scales with the window.
    pub instruction_share: f64,
}

/// A core's window: ROB, load-queue and store-queue entries and L1D MSHRs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// Reorder-buffer entries.
    pub rob_entries: u32,
    /// Load-queue entries.
    pub lq_entries: u32,
    /// Store-queue entries.
    pub sq_entries: u32,
    /// L1D MSHRs.
    pub mshrs: u32,
}

impl Window {
    /// The four sizes, each with its key.
    pub fn sizes(&self) -> [(&'static str, u32); 4] {
        [
            ("rob_entries", self.rob_entries),
            ("lq_entries", self.lq_entries),
            ("sq_entries", self.sq_entries),
            ("mshrs", self.mshrs),
        ]
    }
}

impl WindowPower {
    /// The window the figures are quoted at.
    pub fn quoted(&self) -> Window {
        Window {
            rob_entries: self.rob_entries,
            lq_entries: self.lq_entries,
            sq_entries: self.sq_entries,
            mshrs: self.mshrs,
        }
    }
}

impl CorePower {
    /// The figures of a core with window `w`: `static_w` and `instruction_pj` with their window
    /// shares scaled by the mean size ratio of `w` to the quoted window (unchanged without
    /// `[power.core.window]`). The result has no window left to scale.
    pub fn for_window(&self, w: Window) -> CorePower {
        let Some(q) = self.window else { return *self };
        let ratios = w.sizes().into_iter().zip(q.quoted().sizes());
        let f = ratios.map(|((_, n), (_, of))| f64::from(n) / f64::from(of.max(1))).sum::<f64>() / 4.0;
        let scale = |x: f64, share: f64| x * (1.0 - share + share * f);
        CorePower {
            static_w: scale(self.static_w, q.static_share),
            instruction_pj: scale(self.instruction_pj, q.instruction_share),
            window: None,
            ..*self
        }
    }
}

/// `[power.access_unit]`: one access unit's figures.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AccessUnitPower {
    /// Static power of one unit, in watts.
    pub static_w: f64,
    /// A line read request: address generation, tracking, the line written to stream storage.
    pub request_pj: f64,
    /// A line write of an output-queue chunk.
    pub write_request_pj: f64,
    /// A callback event written to the output queue.
    pub event_pj: f64,
    /// An operand written with an event.
    pub operand_pj: f64,
    /// The stream storage `static_w` is quoted at, and the leakage of storage beyond it
    /// (`None`: the figure does not depend on the storage).
    #[serde(default)]
    pub storage: Option<StoragePower>,
}

/// `[power.access_unit.storage]`: the stream storage a unit's `static_w` is quoted at.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoragePower {
    /// Stream storage of the quoted unit.
    pub bytes: sim_core::ByteSize,
    /// Leakage of each MiB of storage more (or less) than that, in watts.
    pub static_w_per_mib: f64,
}

impl AccessUnitPower {
    /// The figures of a unit with `storage` bytes of stream storage: `static_w` moved by the
    /// leakage of the difference to the quoted storage (never below zero). The result has no
    /// storage left to scale.
    pub fn for_storage(&self, storage: u64) -> AccessUnitPower {
        let Some(q) = self.storage else { return *self };
        let mib = (storage as f64 - q.bytes.bytes() as f64) / (1u64 << 20) as f64;
        AccessUnitPower {
            static_w: (self.static_w + mib * q.static_w_per_mib).max(0.0),
            storage: None,
            ..*self
        }
    }
}

/// One cache level's figures (`[power.caches.l1d]`, `.l2`, `.llc`).
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CachePower {
    /// Energy of one line access (lookup, fill or write-back) at the quoted size, in pJ.
    pub access_pj: f64,
    /// Static power of one instance (one private cache, one LLC bank) of the quoted size, in
    /// watts.
    pub static_w: f64,
    /// The capacity of one instance the figures are quoted at (`None`: they apply at any size).
    #[serde(default)]
    pub size: Option<sim_core::ByteSize>,
}

impl CachePower {
    /// The figures of an instance of `bytes`: `static_w` scaled by the size ratio (leakage goes
    /// with the cells) and `access_pj` by its square root (longer word and bit lines and a larger
    /// H-tree: Horowitz, ISSCC 2014, gives 10, 20 and 100 pJ per 64-bit read of 8 KB, 32 KB and
    /// 1 MB SRAMs, about the square root of capacity). Unchanged without a quoted `size`; the
    /// result has no size left to scale.
    pub fn for_size(&self, bytes: u64) -> CachePower {
        let Some(q) = self.size else { return *self };
        let ratio = bytes as f64 / q.bytes().max(1) as f64;
        CachePower { access_pj: self.access_pj * ratio.sqrt(), static_w: self.static_w * ratio, size: None }
    }
}

/// `[power.caches]`.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CachesPower {
    /// The private L1 data caches.
    pub l1d: Option<CachePower>,
    /// The private L2s.
    pub l2: Option<CachePower>,
    /// One LLC bank.
    pub llc: Option<CachePower>,
}

impl CachesPower {
    /// The levels, each with its key.
    pub fn levels(&self) -> [(&'static str, Option<CachePower>); 3] {
        [("l1d", self.l1d), ("l2", self.l2), ("llc", self.llc)]
    }
}

/// `[power.noc]`.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NocPower {
    /// One message carrying a line across the network (a read's answer, a write), in pJ.
    pub transfer_pj: f64,
    /// One message without data (a read request, a write's acknowledgement: an address and a
    /// command), in pJ (`None`: `transfer_pj`, as if it carried a line).
    #[serde(default)]
    pub control_pj: Option<f64>,
}

impl NocPower {
    /// The energy of one message without data (`control_pj`, or a line's without it).
    pub fn control_message_pj(&self) -> f64 {
        self.control_pj.unwrap_or(self.transfer_pj)
    }
}

/// The power figures of a DAE or CPU chip.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DaePower {
    /// Per core.
    pub core: CorePower,
    /// Per access unit (needed when the chip has them).
    pub access_unit: Option<AccessUnitPower>,
    /// Per cache level (needed for each level the chip has).
    pub caches: CachesPower,
    /// The network (needed when the chip has an LLC).
    pub noc: Option<NocPower>,
    /// The DRAM.
    pub dram: DramEnergy,
}

/// A figure out of its range: its key under `[power]`, its value and the range.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{key} = {value}: {why}")]
pub struct PowerFigureError {
    /// The key, relative to `[power]` (`core.static_w`).
    pub key: String,
    /// Its value.
    pub value: f64,
    /// The range it must be in.
    pub why: &'static str,
}

impl DaePower {
    /// Every figure with its key relative to `[power]`.
    fn figures(&self) -> Vec<(String, f64)> {
        let c = &self.core;
        let mut v: Vec<(String, f64)> = [
            ("core.static_w", c.static_w),
            ("core.instruction_pj", c.instruction_pj),
            ("core.alu_pj", c.alu_pj),
            ("core.muldiv_pj", c.muldiv_pj),
            ("core.vector_pj", c.vector_pj),
            ("core.load_pj", c.load_pj),
            ("core.store_pj", c.store_pj),
            ("core.queue_pop_pj", c.queue_pop_pj),
            ("core.queue_load_pj", c.queue_load_pj),
            ("dram.read_pj_per_bit", self.dram.read_pj_per_bit),
            ("dram.write_pj_per_bit", self.dram.write_pj_per_bit),
            ("dram.activate_pj", self.dram.activate_pj),
            ("dram.background_w_per_stack", self.dram.background_w_per_stack),
        ]
        .into_iter()
        .map(|(k, x)| (k.to_string(), x))
        .collect();
        if let Some(w) = &c.window {
            v.push(("core.window.static_share".into(), w.static_share));
            v.push(("core.window.instruction_share".into(), w.instruction_share));
        }
        if let Some(a) = &self.access_unit {
            if let Some(st) = &a.storage {
                v.push(("access_unit.storage.static_w_per_mib".into(), st.static_w_per_mib));
            }
            for (k, x) in [
                ("static_w", a.static_w),
                ("request_pj", a.request_pj),
                ("write_request_pj", a.write_request_pj),
                ("event_pj", a.event_pj),
                ("operand_pj", a.operand_pj),
            ] {
                v.push((format!("access_unit.{k}"), x));
            }
        }
        for (level, c) in self.caches.levels() {
            if let Some(c) = c {
                v.push((format!("caches.{level}.access_pj"), c.access_pj));
                v.push((format!("caches.{level}.static_w"), c.static_w));
            }
        }
        if let Some(n) = &self.noc {
            v.push(("noc.transfer_pj".into(), n.transfer_pj));
            v.push(("noc.control_pj".into(), n.control_message_pj()));
        }
        v
    }

    /// The figures priced for a chip whose cores have window `window`, whose access units (if
    /// any) have `storage` bytes of stream storage and whose L1D, L2 and LLC bank hold
    /// `cache_bytes` (0 for a level it lacks): the quoted figures scaled to those sizes.
    pub fn for_chip(&self, window: Window, storage: Option<u64>, cache_bytes: [u64; 3]) -> DaePower {
        let [l1d, l2, llc] = cache_bytes;
        let size = |c: Option<CachePower>, bytes: u64| c.map(|c| c.for_size(bytes));
        DaePower {
            core: self.core.for_window(window),
            access_unit: match (self.access_unit, storage) {
                (Some(a), Some(bytes)) => Some(a.for_storage(bytes)),
                (a, _) => a,
            },
            caches: CachesPower {
                l1d: size(self.caches.l1d, l1d),
                l2: size(self.caches.l2, l2),
                llc: size(self.caches.llc, llc),
            },
            ..*self
        }
    }

    /// Checks that every figure is finite and not negative, the window's shares at most 1 and
    /// its sizes and the quoted storage at least 1; the error names the first that is not.
    pub fn validate(&self) -> Result<(), PowerFigureError> {
        let bad = |key: String, value: f64, why| Err(PowerFigureError { key, value, why });
        if let Some((key, value)) = self.figures().into_iter().find(|(_, x)| !(x.is_finite() && *x >= 0.0)) {
            return bad(key, value, "must be a finite number of at least 0");
        }
        if let Some(w) = &self.core.window {
            for (key, share) in [("static_share", w.static_share), ("instruction_share", w.instruction_share)]
            {
                if share > 1.0 {
                    return bad(format!("core.window.{key}"), share, "must be a share (0 to 1)");
                }
            }
            for (key, n) in w.quoted().sizes() {
                if n == 0 {
                    return bad(format!("core.window.{key}"), 0.0, "must be at least 1");
                }
            }
        }
        if self.access_unit.and_then(|a| a.storage).is_some_and(|st| st.bytes.bytes() == 0) {
            return bad("access_unit.storage.bytes".into(), 0.0, "must be at least 1B");
        }
        for (level, c) in self.caches.levels() {
            if c.and_then(|c| c.size).is_some_and(|size| size.bytes() == 0) {
                return bad(format!("caches.{level}.size"), 0.0, "must be at least 1B");
            }
        }
        Ok(())
    }
}

/// Event counts of one cache level, summed over its instances.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CacheActivity {
    /// Instances (private caches or LLC banks).
    pub instances: u64,
    /// Line lookups (hits, misses, sector misses, merged and bypassed accesses).
    pub lookups: u64,
    /// Lines filled from below.
    pub fills: u64,
    /// Dirty lines written back.
    pub writebacks: u64,
}

impl CacheActivity {
    /// Array accesses: lookups, fills and write-backs.
    pub fn accesses(&self) -> u64 {
        self.lookups + self.fills + self.writebacks
    }
}

/// What a run did, summed over the chip: the inputs of the energy model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Activity {
    /// Simulated time, ps.
    pub time_ps: u64,
    /// Cores.
    pub cores: u64,
    /// Instructions dispatched.
    pub instructions: u64,
    /// Integer ALU instructions.
    pub alu_ops: u64,
    /// Multiplies and divides.
    pub muldiv_ops: u64,
    /// Vector/FP instructions.
    pub vector_ops: u64,
    /// Memory loads.
    pub loads: u64,
    /// Stores.
    pub stores: u64,
    /// Output-queue pops.
    pub queue_pops: u64,
    /// `vldq` row reads.
    pub queue_loads: u64,
    /// Access units (one per core of a chip that has them, used by its program or not).
    pub units: u64,
    /// Access-unit line read requests.
    pub au_requests: u64,
    /// Access-unit chunk write requests.
    pub au_write_requests: u64,
    /// Callback events.
    pub au_events: u64,
    /// Operands written with them.
    pub au_operands: u64,
    /// L1D caches.
    pub l1d: CacheActivity,
    /// L2 caches.
    pub l2: CacheActivity,
    /// LLC banks.
    pub llc: CacheActivity,
    /// Messages carrying a line across the network (read answers, writes).
    pub noc_transfers: u64,
    /// Messages without data (read requests, write acknowledgements).
    pub noc_controls: u64,
    /// DRAM bytes and activations.
    pub dram: DramActivity,
    /// HBM stacks (1 for a DDR or fixed-latency memory).
    pub stacks: u32,
}

impl Activity {
    /// Adds the events of `next`, a later run of the same chip (its cores, units, instances
    /// and stacks stay as they are): the activity of two runs back to back.
    pub fn absorb(&mut self, next: &Activity) {
        // Every field named, none elided: a new one fails to compile here until it is decided
        // whether it adds up (an event count) or stays (a count of hardware).
        let Activity {
            time_ps,
            cores: _,
            instructions,
            alu_ops,
            muldiv_ops,
            vector_ops,
            loads,
            stores,
            queue_pops,
            queue_loads,
            units: _,
            au_requests,
            au_write_requests,
            au_events,
            au_operands,
            l1d,
            l2,
            llc,
            noc_transfers,
            noc_controls,
            dram: DramActivity { bytes_read, bytes_written, activations },
            stacks: _,
        } = *next;
        for (sum, v) in [
            (&mut self.time_ps, time_ps),
            (&mut self.instructions, instructions),
            (&mut self.alu_ops, alu_ops),
            (&mut self.muldiv_ops, muldiv_ops),
            (&mut self.vector_ops, vector_ops),
            (&mut self.loads, loads),
            (&mut self.stores, stores),
            (&mut self.queue_pops, queue_pops),
            (&mut self.queue_loads, queue_loads),
            (&mut self.au_requests, au_requests),
            (&mut self.au_write_requests, au_write_requests),
            (&mut self.au_events, au_events),
            (&mut self.au_operands, au_operands),
            (&mut self.noc_transfers, noc_transfers),
            (&mut self.noc_controls, noc_controls),
            (&mut self.dram.bytes_read, bytes_read),
            (&mut self.dram.bytes_written, bytes_written),
            (&mut self.dram.activations, activations),
        ] {
            *sum += v;
        }
        for (level, n) in [(&mut self.l1d, l1d), (&mut self.l2, l2), (&mut self.llc, llc)] {
            let CacheActivity { instances: _, lookups, fills, writebacks } = n;
            level.lookups += lookups;
            level.fills += fills;
            level.writebacks += writebacks;
        }
    }
}

/// Energy of a run, per component, in joules.
#[derive(Debug, Clone, PartialEq)]
pub struct EnergyReport {
    /// Simulated time, s.
    pub seconds: f64,
    /// Per component: name, static joules, dynamic joules, in a fixed order.
    pub components: Vec<(String, f64, f64)>,
    /// Whether the power was bounded by a TDP (GPUs).
    pub tdp_bound: bool,
}

impl EnergyReport {
    /// Adds the energy of `next`, a later run of the same system: seconds and each component's
    /// joules add up.
    pub fn absorb(&mut self, next: &EnergyReport) {
        self.seconds += next.seconds;
        for (mine, theirs) in self.components.iter_mut().zip(&next.components) {
            mine.1 += theirs.1;
            mine.2 += theirs.2;
        }
        self.tdp_bound |= next.tdp_bound;
    }

    /// Total energy, J.
    pub fn total_j(&self) -> f64 {
        self.components.iter().map(|(_, s, d)| s + d).sum()
    }

    /// Static energy, J.
    pub fn static_j(&self) -> f64 {
        self.components.iter().map(|(_, s, _)| s).sum()
    }

    /// Average power, W (0 for a run of no time).
    pub fn average_w(&self) -> f64 {
        if self.seconds > 0.0 { self.total_j() / self.seconds } else { 0.0 }
    }

    /// The GPU's energy in the same form.
    pub fn of_gpu(e: &gpu_model::GpuEnergy, time_ps: u64) -> Self {
        // Under the TDP bound the dynamic parts are scaled down together so they sum to it.
        let dynamic = e.dram_j + e.onchip_j;
        let scale = if dynamic > 0.0 { ((e.total_j - e.static_j).max(0.0) / dynamic).min(1.0) } else { 1.0 };
        EnergyReport {
            seconds: time_ps as f64 / PS_PER_SECOND as f64,
            components: vec![
                ("static".into(), e.static_j.min(e.total_j), 0.0),
                ("dram".into(), 0.0, e.dram_j * scale),
                ("onchip".into(), 0.0, e.onchip_j * scale),
            ],
            tdp_bound: e.tdp_bound,
        }
    }
}

/// The energy of a run that did `a` on a chip with figures `p` (see the module docs).
pub fn energy(p: &DaePower, a: &Activity) -> EnergyReport {
    let t = a.time_ps as f64 / PS_PER_SECOND as f64;
    let pj = |n: u64, e: f64| n as f64 * e * 1e-12;
    let c = &p.core;
    let core_dynamic = pj(a.instructions, c.instruction_pj)
        + pj(a.alu_ops, c.alu_pj)
        + pj(a.muldiv_ops, c.muldiv_pj)
        + pj(a.vector_ops, c.vector_pj)
        + pj(a.loads, c.load_pj)
        + pj(a.stores, c.store_pj)
        + pj(a.queue_pops, c.queue_pop_pj)
        + pj(a.queue_loads, c.queue_load_pj);
    let mut components = vec![("core".to_string(), a.cores as f64 * c.static_w * t, core_dynamic)];
    if let Some(u) = &p.access_unit {
        let dynamic = pj(a.au_requests, u.request_pj)
            + pj(a.au_write_requests, u.write_request_pj)
            + pj(a.au_events, u.event_pj)
            + pj(a.au_operands, u.operand_pj);
        components.push(("access_unit".into(), a.units as f64 * u.static_w * t, dynamic));
    }
    for (name, level, act) in
        [("l1d", &p.caches.l1d, &a.l1d), ("l2", &p.caches.l2, &a.l2), ("llc", &p.caches.llc, &a.llc)]
    {
        if let Some(l) = level {
            components.push((
                name.into(),
                act.instances as f64 * l.static_w * t,
                pj(act.accesses(), l.access_pj),
            ));
        }
    }
    if let Some(n) = &p.noc {
        components.push((
            "noc".into(),
            0.0,
            pj(a.noc_transfers, n.transfer_pj) + pj(a.noc_controls, n.control_message_pj()),
        ));
    }
    components.push(("dram".into(), p.dram.background_w(a.stacks) * t, p.dram.dynamic_j(&a.dram)));
    EnergyReport { seconds: t, components, tdp_bound: false }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figures() -> DaePower {
        DaePower {
            core: CorePower {
                static_w: 0.5,
                instruction_pj: 100.0,
                alu_pj: 1.0,
                muldiv_pj: 3.0,
                vector_pj: 20.0,
                load_pj: 4.0,
                store_pj: 5.0,
                queue_pop_pj: 6.0,
                queue_load_pj: 7.0,
                window: None,
            },
            access_unit: Some(AccessUnitPower {
                static_w: 0.1,
                request_pj: 10.0,
                write_request_pj: 11.0,
                event_pj: 2.0,
                operand_pj: 1.0,
                storage: None,
            }),
            caches: CachesPower {
                l1d: Some(CachePower { access_pj: 10.0, static_w: 0.01, size: None }),
                l2: None,
                llc: Some(CachePower { access_pj: 50.0, static_w: 0.1, size: None }),
            },
            noc: Some(NocPower { transfer_pj: 20.0, control_pj: None }),
            dram: DramEnergy {
                read_pj_per_bit: 2.0,
                write_pj_per_bit: 3.0,
                activate_pj: 1000.0,
                background_w_per_stack: 1.0,
            },
        }
    }

    fn get(r: &EnergyReport, name: &str) -> (f64, f64) {
        r.components.iter().find(|(n, _, _)| n == name).map(|(_, s, d)| (*s, *d)).unwrap()
    }

    #[test]
    fn a_larger_window_and_more_storage_cost_their_shares() {
        let mut core = figures().core;
        let quoted = Window { rob_entries: 320, lq_entries: 128, sq_entries: 72, mshrs: 16 };
        core.window = Some(WindowPower {
            rob_entries: quoted.rob_entries,
            lq_entries: quoted.lq_entries,
            sq_entries: quoted.sq_entries,
            mshrs: quoted.mshrs,
            static_share: 0.2,
            instruction_share: 0.25,
        });
        // The quoted window costs what the figures say.
        let same = core.for_window(quoted);
        assert_eq!((same.static_w, same.instruction_pj, same.window), (0.5, 100.0, None));
        // Everything doubled: mean ratio 2, so 0.5 x 1.2 W and 100 x 1.25 pJ.
        let double = Window { rob_entries: 640, lq_entries: 256, sq_entries: 144, mshrs: 32 };
        let d = core.for_window(double);
        assert!((d.static_w - 0.6).abs() < 1e-12 && (d.instruction_pj - 125.0).abs() < 1e-12, "{d:?}");
        // The ROB alone doubled: mean ratio 1.25.
        let rob = core.for_window(Window { rob_entries: 640, ..quoted });
        assert!((rob.static_w - 0.525).abs() < 1e-12, "{rob:?}");
        assert_eq!(figures().core.for_window(double), figures().core, "no window table, no scaling");

        let mut unit = figures().access_unit.unwrap();
        unit.storage =
            Some(StoragePower { bytes: sim_core::ByteSize::from_bytes(16 << 10), static_w_per_mib: 0.08 });
        // 256 KiB: 240 KiB more at 0.08 W per MiB.
        let big = unit.for_storage(256 << 10);
        assert!((big.static_w - (0.1 + 0.08 * 240.0 / 1024.0)).abs() < 1e-12, "{big:?}");
        assert_eq!(unit.for_storage(16 << 10).static_w, 0.1);
        assert_eq!(unit.for_storage(0).static_w, 0.1 - 0.08 / 64.0);
    }

    #[test]
    fn energy_by_hand() {
        let a = Activity {
            time_ps: 1_000_000, // 1 us
            cores: 2,
            instructions: 1000,
            alu_ops: 500,
            muldiv_ops: 10,
            vector_ops: 100,
            loads: 200,
            stores: 20,
            queue_pops: 50,
            queue_loads: 5,
            units: 2,
            au_requests: 300,
            au_write_requests: 30,
            au_events: 60,
            au_operands: 120,
            l1d: CacheActivity { instances: 2, lookups: 220, fills: 30, writebacks: 0 },
            l2: CacheActivity::default(),
            llc: CacheActivity { instances: 4, lookups: 330, fills: 300, writebacks: 10 },
            noc_transfers: 700,
            noc_controls: 0,
            dram: DramActivity { bytes_read: 19_200, bytes_written: 1_920, activations: 100 },
            stacks: 5,
        };
        let r = energy(&figures(), &a);
        let close = |x: f64, y: f64| (x - y).abs() < 1e-15;
        // Core: 2 x 0.5 W x 1 us = 1 uJ static; dynamic 1000x100 + 500x1 + 10x3 + 100x20
        // + 200x4 + 20x5 + 50x6 + 5x7 = 100000 + 500 + 30 + 2000 + 800 + 100 + 300 + 35
        // = 103765 pJ.
        let (s, d) = get(&r, "core");
        assert!(close(s, 1e-6) && close(d, 103_765e-12), "{s} {d}");
        // Access units: 2 x 0.1 W x 1 us = 0.2 uJ; 300x10 + 30x11 + 60x2 + 120x1 = 3570 pJ.
        let (s, d) = get(&r, "access_unit");
        assert!(close(s, 0.2e-6) && close(d, 3570e-12), "{s} {d}");
        // L1D: 2 x 0.01 W x 1 us = 20 nJ; 250 accesses x 10 pJ. LLC: 4 x 0.1 W x 1 us; 640 x 50.
        let (s, d) = get(&r, "l1d");
        assert!(close(s, 20e-9) && close(d, 2500e-12), "{s} {d}");
        let (s, d) = get(&r, "llc");
        assert!(close(s, 0.4e-6) && close(d, 32_000e-12), "{s} {d}");
        assert!(r.components.iter().all(|(n, _, _)| n != "l2"), "no L2 figures: no L2 component");
        let (s, d) = get(&r, "noc");
        assert!(close(s, 0.0) && close(d, 14_000e-12));
        // Messages without data pay `control_pj`, or a line's energy without it.
        let mut p = figures();
        let a = Activity { noc_controls: 100, ..a };
        assert!(close(get(&energy(&p, &a), "noc").1, 800.0 * 20e-12));
        p.noc = Some(NocPower { transfer_pj: 20.0, control_pj: Some(5.0) });
        assert!(close(get(&energy(&p, &a), "noc").1, (700.0 * 20.0 + 100.0 * 5.0) * 1e-12));
        // DRAM: 5 stacks x 1 W x 1 us = 5 uJ; 153600 bit x 2 + 15360 bit x 3 + 100 x 1000 pJ
        // = 307200 + 46080 + 100000 = 453280 pJ.
        let (s, d) = get(&r, "dram");
        assert!(close(s, 5e-6) && close(d, 453_280e-12), "{s} {d}");
        let total = 1e-6
            + 103_765e-12
            + 0.2e-6
            + 3570e-12
            + 20e-9
            + 2500e-12
            + 0.4e-6
            + 32_000e-12
            + 14_000e-12
            + 5e-6
            + 453_280e-12;
        assert!(close(r.total_j(), total));
        assert!((r.average_w() - total / 1e-6).abs() < 1e-9);
        assert!(close(r.static_j(), 1e-6 + 0.2e-6 + 20e-9 + 0.4e-6 + 5e-6));
    }

    #[test]
    fn negative_and_nan_figures_are_named_by_key() {
        let mut p = figures();
        assert!(p.validate().is_ok());
        p.caches.llc = Some(CachePower { access_pj: -1.0, static_w: 0.1, size: None });
        assert_eq!(p.validate().unwrap_err().key, "caches.llc.access_pj");
        let mut p = figures();
        p.core.vector_pj = f64::NAN;
        assert_eq!(p.validate().unwrap_err().key, "core.vector_pj");
    }

    #[test]
    fn cache_figures_follow_the_size_they_price() {
        let l2 = CachePower {
            access_pj: 80.0,
            static_w: 0.08,
            size: Some(sim_core::ByteSize::from_bytes(1 << 20)),
        };
        let at = |bytes: u64| l2.for_size(bytes);
        assert_eq!(at(1 << 20), CachePower { size: None, ..l2 }, "quoted size: the figures");
        assert_eq!(at(4 << 20), CachePower { access_pj: 160.0, static_w: 0.32, size: None });
        assert_eq!(at(256 << 10), CachePower { access_pj: 40.0, static_w: 0.02, size: None });
        let any = CachePower { size: None, ..l2 };
        assert_eq!(any.for_size(4 << 20), any, "no quoted size, no scaling");
        let mut p = figures();
        p.caches.l1d = Some(CachePower { size: Some(sim_core::ByteSize::from_bytes(0)), ..l2 });
        assert_eq!(p.validate().unwrap_err().key, "caches.l1d.size");
    }
}
