//! Caches and the interconnect between them.
//!
//! A [`Cache`] is one set-associative, sectored, write-back/write-allocate cache with MSHRs that
//! merge misses to the same line, a replacement policy chosen by name, a hit latency and a tag
//! lookup bandwidth, as an engine component with any number of upstream ports and one
//! downstream port. A [`Crossbar`] routes requests from N upstream ports to B downstream ports
//! by address interleaving, with a crossbar or mesh latency and, optionally, a width per port
//! and mesh link. Hierarchies are built by
//! composition: a private L1 and L2 are two caches in a row; a shared, banked last-level cache
//! is a crossbar in front of B caches (one per bank); memory channels sit behind another
//! crossbar.
//!
//! | file | job |
//! |---|---|
//! | `config.rs` | [`CacheConfig`], its validation into a [`CacheGeometry`] |
//! | `cycles.rs` | fast tick-to-cycle conversion |
//! | `sector.rs` | sector masks of byte ranges |
//! | `tags.rs` | the tag array: lines, valid and dirty sectors, locks |
//! | `replacement.rs` | [`ReplacementPolicy`]: LRU, SRRIP, random |
//! | `mshr.rs` | MSHRs and their targets |
//! | `ports.rs` | sets of ports with work; how a tick's arrivals are gathered |
//! | `component.rs` | the [`Cache`] component |
//! | `topology.rs` | [`Topology`]: crossbar and mesh latency |
//! | `flight.rs` | messages crossing an interconnect, in arrival order |
//! | `mesh_links.rs` | a mesh's XY routes and each link's busy cycles, under a port width |
//! | `xbar.rs` | the [`Crossbar`] component |

mod component;
mod config;
mod cycles;
mod flight;
mod mesh_links;
mod mshr;
pub(crate) mod ports;
mod replacement;
mod sector;
mod tags;
mod topology;
mod xbar;

pub use component::{Cache, CacheBuildError, CacheCounters, CacheLinks};
pub use config::{
    CacheConfig, CacheConfigError, CacheGeometry, MAX_ASSOCIATIVITY, MAX_HIT_LATENCY_CYCLES, MAX_LINE_BYTES,
    MAX_LINES, MAX_MSHR_TARGETS, MAX_MSHRS, MAX_SECTORS, NonTemporalPolicy, ReplacementKind,
};
pub use replacement::{Lru, RandomChoice, Replacement, ReplacementPolicy, Srrip};
pub use sector::{SectorMask, Sectors};
pub use topology::{MAX_MESH_NODES, MAX_TOPOLOGY_CYCLES, Topology, TopologyError};
pub use xbar::{BankHash, Crossbar, CrossbarConfig, CrossbarError, CrossbarLinks, MAX_IN_FLIGHT, POLL_LINKS};
