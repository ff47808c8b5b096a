//! The DRAM and HBM model: device timing as data, per-pseudo-channel controllers, and the
//! [`Dram`] component, plug-compatible with [`crate::SimpleMemory`].
//!
//! The design follows Ramulator 2. A preset (a TOML file under `configs/memory/`, parsed into a
//! [`DramPreset`]) describes the hierarchy channel -> pseudo-channel -> rank (HBM3 stack id) ->
//! bank group -> bank, the named timings in cycles, and the timing constraints *as data*: each
//! row says at which level, after which commands, which commands must wait how long (an
//! expression over the timings such as "nCWL + nBL + nWR"), over which window (tFAW) and whether
//! it applies to sibling nodes (tCCD_R between stack ids). [`DramSpec::from_preset`] resolves
//! every name once into integers and fails fast, naming anything unknown.
//!
//! The [`Device`] answers "earliest legal cycle for this command here" from a `ready_at` array
//! per node and command class (commands the constraints treat alike share a slot); controllers
//! ([`controller`]) pick among legal commands (FR-FCFS or FR-FCFS with a row-hit cap; open or
//! closed pages; write drain on watermarks; all-bank or per-bank refresh) and sleep until the
//! next cycle at which something can become legal, so an idle pseudo-channel costs nothing. The command bus is data too: HBM presets let a row and a
//! column command issue in the same cycle, DDR5's single bus does not.
//!
//! Module map: [`command`] (commands, levels), [`preset`] (file format), [`expr`] (latency
//! expressions), [`spec`] (validated form), [`mapping`] (address mapping), [`timing`] (the table
//! compiled for the hot path), [`device`] (node state), [`refresh`], [`controller`],
//! [`component`] ([`Dram`]), [`counters`], [`log`] (command trace), [`checker`] (independent
//! legality checker), [`bench`](mod@bench) (speed measurement).

pub mod bench;
pub mod checker;
pub mod command;
pub mod component;
pub mod controller;
pub mod counters;
pub mod device;
pub mod energy;
pub mod error;
pub mod expr;
pub mod log;
pub mod mapping;
pub mod preset;
pub mod refresh;
pub mod spec;
pub mod timing;

pub use checker::{Oracle, Violation, check_log};
pub use command::{CmdSet, Command, Level};
pub use component::{Dram, DramFault, POLL_PORTS};
pub use counters::DramCounters;
pub use device::{Device, DeviceError};
pub use energy::{DramActivity, DramEnergy, DramEnergyError};
pub use error::DramError;
pub use log::IssuedCommand;
pub use mapping::{AddressMapping, DramAddr, MappingScheme};
pub use preset::DramPreset;
pub use spec::{Constraint, ControllerConfig, DramSpec, Organization, PagePolicy, RefreshMode, Scheduler};
