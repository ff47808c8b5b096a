//! Reference topologies that measure the engine's own speed.
//!
//! Two shapes bound what a model can expect from the engine: a *ping-pong* pair (one message in
//! flight, so every event is a queue push and pop with a tiny heap) and a *fan-out/fan-in* hub
//! with many leaves (a wide heap, many links). Both are driven through the public engine API
//! exactly as hardware models are, so their events per second are the engine's real overhead per
//! event. Used by `cargo bench -p sim-core` and by `dae-sim bench engine`.

use crate::engine::{Component, Ctx, Engine, EngineError, Wake};
use crate::link::{LinkId, LinkSpec};
use crate::time::Clock;
use crate::units::Frequency;
use std::time::Instant;

/// A node of the benchmark topologies (one enum: static dispatch, as real models use).
pub enum Node {
    /// Bounces every message back, `rounds` times in all (the initiator) or forever (the echo).
    Pong {
        /// Component name.
        name: String,
        /// Output link.
        out: Option<LinkId>,
        /// Input link.
        inp: Option<LinkId>,
        /// Messages left to send; `None` echoes without limit.
        left: Option<u64>,
    },
    /// Sends one message to each leaf, waits for all replies, repeats `rounds` times.
    Hub {
        /// Component name.
        name: String,
        /// Links to the leaves.
        outs: Vec<LinkId>,
        /// Replies still awaited in this round.
        awaited: usize,
        /// Rounds left.
        rounds: u64,
    },
}

impl Component for Node {
    type Msg = u64;

    fn name(&self) -> &str {
        match self {
            Node::Pong { name, .. } | Node::Hub { name, .. } => name,
        }
    }

    fn wake(&mut self, why: Wake, ctx: &mut Ctx<'_, u64>) {
        match self {
            Node::Pong { out, inp, left, .. } => {
                let (Some(out), Some(inp)) = (*out, *inp) else { return };
                let fire = match why {
                    Wake::Start => left.is_some(),
                    Wake::Arrival(_) => ctx.recv(inp).is_some(),
                    _ => false,
                };
                if fire {
                    if let Some(n) = left {
                        if *n == 0 {
                            return;
                        }
                        *n -= 1;
                    }
                    // Capacity 1 with one message in flight: the send cannot be refused.
                    let _ = ctx.send(out, 0);
                }
            }
            Node::Hub { outs, awaited, rounds, .. } => {
                if let Wake::Arrival(l) = why
                    && ctx.recv(l).is_some()
                {
                    *awaited -= 1;
                }
                if *awaited == 0 && *rounds > 0 {
                    *rounds -= 1;
                    for &o in outs.iter() {
                        let _ = ctx.send(o, 0);
                    }
                    *awaited = outs.len();
                }
            }
        }
    }
}

fn spec(name: String) -> LinkSpec {
    // 1 GHz, 1-cycle links: the clock rate does not change the work per event.
    let clock = Clock::new(Frequency::from_hz(1_000_000_000)).expect("1 GHz is a valid clock");
    LinkSpec { name, clock, latency_cycles: 1, capacity: 1 }
}

/// A ping-pong pair that exchanges `messages` messages in all.
pub fn ping_pong(messages: u64) -> Result<Engine<Node>, EngineError> {
    let mut e = Engine::new();
    let a = e.reserve();
    let b = e.reserve();
    let ab = e.connect(a, b, spec("ping".into()))?;
    let ba = e.connect(b, a, spec("pong".into()))?;
    e.install(
        a,
        Node::Pong { name: "a".into(), out: Some(ab), inp: Some(ba), left: Some(messages.div_ceil(2)) },
    )?;
    e.install(b, Node::Pong { name: "b".into(), out: Some(ba), inp: Some(ab), left: None })?;
    Ok(e)
}

/// A hub with `leaves` leaves, each echoing; `rounds` rounds of one message to every leaf.
pub fn fan_out_fan_in(leaves: usize, rounds: u64) -> Result<Engine<Node>, EngineError> {
    let mut e = Engine::new();
    let hub = e.reserve();
    let mut outs = Vec::with_capacity(leaves);
    for i in 0..leaves {
        let leaf = e.reserve();
        let o = e.connect(hub, leaf, spec(format!("hub.to{i}")))?;
        let r = e.connect(leaf, hub, spec(format!("hub.from{i}")))?;
        e.install(leaf, Node::Pong { name: format!("leaf{i}"), out: Some(r), inp: Some(o), left: None })?;
        outs.push(o);
    }
    e.install(hub, Node::Hub { name: "hub".into(), outs, awaited: 0, rounds })?;
    Ok(e)
}

/// One measurement: events processed and host seconds spent.
#[derive(Debug, Clone, Copy)]
pub struct Measurement {
    /// Events the engine processed.
    pub events: u64,
    /// Host wall-clock seconds of the run (construction excluded).
    pub seconds: f64,
}

impl Measurement {
    /// Events per host second.
    pub fn events_per_second(&self) -> f64 {
        self.events as f64 / self.seconds.max(1e-12)
    }
}

/// Runs a built engine to completion and times it.
pub fn measure(mut engine: Engine<Node>) -> Result<Measurement, EngineError> {
    let t0 = Instant::now();
    let s = engine.run(None)?;
    Ok(Measurement { events: s.events, seconds: t0.elapsed().as_secs_f64() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ping_pong_processes_one_event_per_message() {
        let m = measure(ping_pong(1000).unwrap()).unwrap();
        // 2 start events + 1000 arrivals.
        assert_eq!(m.events, 1002);
    }

    #[test]
    fn fan_out_processes_two_events_per_leaf_per_round() {
        let m = measure(fan_out_fan_in(64, 10).unwrap()).unwrap();
        assert_eq!(m.events, 65 + 10 * 64 * 2);
    }
}
