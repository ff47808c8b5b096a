//! sim-core: the engine under every dae-sim model.
//!
//! Time is `u64` picoseconds, as gem5's tick; components live in clock domains whose cycle edges
//! are computed exactly from their frequency. An event scheduler runs components in (tick,
//! priority, insertion sequence) order, so runs repeat bit for bit. Components talk only
//! through bounded links with a latency of at least one cycle and back-pressure, sleep when idle
//! and are woken by arrivals or their own timers (the event-driven design of DRAMSys and DAM
//! rather than per-cycle ticking). Statistics are counters and HdrHistograms named
//! hierarchically; randomness comes from per-component PCG streams derived from a master seed
//! and the component's name; a watchdog turns deadlock and livelock into a report instead of a
//! hang; configuration values carry units ("3GHz", "64KiB", "6400MT/s", "350ns").
#![warn(missing_docs)]

pub mod address_map;
pub mod bench;
pub mod engine;
mod event_queue;
pub mod hash;
pub mod host;
pub mod link;
pub mod message;
pub mod procedural;
pub mod rng;
pub mod stats;
pub mod time;
pub mod units;
pub mod watchdog;

pub use engine::{Component, ComponentId, Ctx, Engine, EngineError, Priority, RunSummary, Wake};
pub use link::{LinkError, LinkId, LinkReport, LinkSpec};
pub use message::Carries;
pub use rng::SeedTree;
pub use stats::{CounterId, HistogramId, Stats, StatsError};
pub use time::{Clock, ClockError, PS_PER_SECOND, Tick};
pub use units::{Bandwidth, BitRate, ByteSize, Frequency, TimeSpan, TransferRate, UnitError};
pub use watchdog::{BlockedComponent, StallError, StallReport, WatchdogConfig};
