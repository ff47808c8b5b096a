//! The deadlock and livelock watchdog.
//!
//! A simulation that cannot move must end with an explanation, never hang. The engine declares a
//! *deadlock* when its event queue is empty while work is still pending: a component reports
//! itself busy, or a link still holds messages. It declares a *livelock* when events keep firing
//! but no component has reported progress (for example, a retired instruction) for a whole
//! window of simulated time. Both produce a [`StallReport`]: who is busy and why, which links are
//! full, and who waits on whom.

use crate::link::LinkReport;
use crate::time::Tick;
use std::fmt;
use thiserror::Error;

/// Watchdog settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WatchdogConfig {
    /// Simulated time without any progress after which the run is a livelock (`None`: never).
    pub livelock_window: Option<Tick>,
}

impl Default for WatchdogConfig {
    fn default() -> Self {
        // 10 ms of simulated time with no retirement is millions of cycles of any component.
        Self { livelock_window: Some(10_000_000_000) }
    }
}

/// A busy component at the moment the watchdog fired.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockedComponent {
    /// The component's name.
    pub name: String,
    /// What the component says it is waiting for.
    pub status: String,
}

/// Who is stuck, and on what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StallReport {
    /// Tick at which the watchdog fired.
    pub tick: Tick,
    /// Components that still hold work.
    pub blocked: Vec<BlockedComponent>,
    /// Links that still hold messages (full ones first).
    pub links: Vec<LinkReport>,
}

impl fmt::Display for StallReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "at tick {} ps:", self.tick)?;
        for c in &self.blocked {
            writeln!(f, "  component {} is busy: {}", c.name, c.status)?;
        }
        for l in &self.links {
            let state = if l.occupancy >= l.capacity as usize { "FULL" } else { "holding" };
            write!(f, "  link {} ({} -> {}) {} {}/{}", l.name, l.from, l.to, state, l.occupancy, l.capacity)?;
            if l.sender_waiting {
                write!(f, "; {} waits on {} to pop", l.from, l.to)?;
            }
            writeln!(f)?;
        }
        Ok(())
    }
}

/// Why a run stopped without finishing its work.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum StallError {
    /// Nothing can move but work is pending.
    #[error("deadlock: no event is pending but work remains\n{0}")]
    Deadlock(StallReport),
    /// Events fire but nothing makes progress.
    #[error("livelock: no progress for {window} ps\n{report}")]
    Livelock {
        /// The livelock window that elapsed.
        window: Tick,
        /// The state at the moment it fired.
        report: StallReport,
    },
}
