//! A memory with a fixed access latency and a bandwidth limit.
//!
//! Contract: requests arrive on input ports (one link pair per requester); each is served in
//! arrival order by a single server that moves `bandwidth` bytes per second, then answered on the
//! port it came from after `latency`. Unloaded, a request of `b` bytes is answered `latency +
//! b / bandwidth` after it arrives (plus the two link hops); under load, requests queue for the
//! server, so latency rises and achieved bandwidth never exceeds the limit. The memory sleeps
//! when it has nothing to answer.

use crate::{MemError, MemRequest, MemResponse};
use sim_core::{
    Bandwidth, Carries, Component, CounterId, Ctx, LinkId, Priority, Stats, StatsError, Tick, TimeSpan, Wake,
};
use std::collections::VecDeque;
use std::marker::PhantomData;

/// Parameters of a [`SimpleMemory`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SimpleMemoryConfig {
    /// Access latency added to every request.
    pub latency: TimeSpan,
    /// Peak data bandwidth of the single server.
    pub bandwidth: Bandwidth,
}

impl SimpleMemoryConfig {
    /// The first parameter out of range, as (field, why), for a configuration to name with its
    /// own key: a zero bandwidth, or a latency above [`MAX_LATENCY`].
    pub fn out_of_range(&self) -> Option<(&'static str, &'static str)> {
        if self.bandwidth.bytes_per_second() == 0 {
            Some(("bandwidth", "must be above zero"))
        } else if self.latency > MAX_LATENCY {
            Some(("latency", "must be at most 1 s"))
        } else {
            None
        }
    }
}

/// One requester's pair of links and its answers waiting to leave.
struct Port {
    inp: LinkId,
    out: LinkId,
    /// Answers in completion order (completion ticks never decrease within a port).
    ready: VecDeque<(Tick, MemResponse)>,
    /// A timer is pending for the head of `ready`.
    armed: bool,
}

/// Statistic ids of a memory.
struct MemStats {
    reads: CounterId,
    writes: CounterId,
    bytes_read: CounterId,
    bytes_written: CounterId,
    busy_ps: CounterId,
}

/// The longest access latency a configuration may give a simple memory: 1 s, far beyond any
/// memory, and far enough from the clock's limit that time sums cannot overflow.
pub const MAX_LATENCY: TimeSpan = TimeSpan::from_ps(sim_core::PS_PER_SECOND);

/// Fixed-latency, bandwidth-limited memory (see the module docs).
pub struct SimpleMemory<M> {
    name: String,
    cfg: SimpleMemoryConfig,
    ports: Vec<Port>,
    /// Port index of each input link, indexed by link index.
    port_of_link: Vec<u32>,
    /// When the server finishes its last accepted transfer.
    server_free: Tick,
    stats: MemStats,
    _msg: PhantomData<fn() -> M>,
}

impl<M> SimpleMemory<M> {
    /// A memory named `name` answering on `ports` (input link, output link) pairs.
    pub fn new(
        name: &str,
        cfg: SimpleMemoryConfig,
        ports: &[(LinkId, LinkId)],
        stats: &mut Stats,
    ) -> Result<Self, MemoryBuildError> {
        if cfg.bandwidth.bytes_per_second() == 0 {
            return Err(MemError::Zero { what: "memory bandwidth" }.into());
        }
        let max_link = ports.iter().map(|p| p.0.index()).max().unwrap_or(0);
        let mut port_of_link = vec![u32::MAX; max_link + 1];
        for (i, p) in ports.iter().enumerate() {
            port_of_link[p.0.index()] = i as u32;
        }
        let stats = MemStats {
            reads: stats.counter_in(name, "reads")?,
            writes: stats.counter_in(name, "writes")?,
            bytes_read: stats.counter_in(name, "bytes_read")?,
            bytes_written: stats.counter_in(name, "bytes_written")?,
            busy_ps: stats.counter_in(name, "busy_ps")?,
        };
        Ok(Self {
            name: name.to_string(),
            cfg,
            ports: ports
                .iter()
                .map(|&(inp, out)| Port { inp, out, ready: VecDeque::new(), armed: false })
                .collect(),
            port_of_link,
            server_free: 0,
            stats,
            _msg: PhantomData,
        })
    }

    /// Requests still being served or waiting to be answered.
    pub fn outstanding(&self) -> usize {
        self.ports.iter().map(|p| p.ready.len()).sum()
    }
}

/// Why a memory could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MemoryBuildError {
    /// A parameter is impossible.
    #[error(transparent)]
    Mem(#[from] MemError),
    /// A statistic name collides.
    #[error(transparent)]
    Stats(#[from] StatsError),
}

impl<M> SimpleMemory<M>
where
    M: Carries<MemRequest> + Carries<MemResponse>,
{
    fn accept(&mut self, port: usize, req: MemRequest, ctx: &mut Ctx<'_, M>) {
        let now = ctx.now();
        let start = now.max(self.server_free);
        let transfer = self.cfg.bandwidth.ps_per_bytes(req.bytes as u64);
        // Saturating: the configs bound the latency (MAX_LATENCY), a library user may not.
        self.server_free = start.saturating_add(transfer);
        let done = self.server_free.saturating_add(self.cfg.latency.ps());
        let s = ctx.stats();
        s.add(self.stats.busy_ps, transfer);
        if req.write {
            s.inc(self.stats.writes);
            s.add(self.stats.bytes_written, req.bytes as u64);
        } else {
            s.inc(self.stats.reads);
            s.add(self.stats.bytes_read, req.bytes as u64);
        }
        let p = &mut self.ports[port];
        p.ready.push_back((done, req.respond()));
        if !p.armed {
            p.armed = true;
            ctx.schedule_at(done, Priority::DEFAULT, port as u64);
        }
    }

    /// Sends every answer of `port` that is due; re-arms the timer for the next one.
    fn drain(&mut self, port: usize, ctx: &mut Ctx<'_, M>) {
        let now = ctx.now();
        let p = &mut self.ports[port];
        while let Some(&(done, resp)) = p.ready.front() {
            if done > now {
                p.armed = true;
                ctx.schedule_at(done, Priority::DEFAULT, port as u64);
                return;
            }
            if ctx.send(p.out, M::wrap(resp)).is_err() {
                // Woken by Wake::Space when the requester pops.
                p.armed = false;
                return;
            }
            p.ready.pop_front();
            ctx.progress();
        }
        p.armed = false;
    }
}

impl<M> Component for SimpleMemory<M>
where
    M: Carries<MemRequest> + Carries<MemResponse>,
{
    type Msg = M;

    fn name(&self) -> &str {
        &self.name
    }

    fn wake(&mut self, why: Wake, ctx: &mut Ctx<'_, M>) {
        match why {
            Wake::Arrival(link) => {
                let port = self.port_of_link.get(link.index()).copied().unwrap_or(u32::MAX) as usize;
                if port >= self.ports.len() {
                    return;
                }
                while let Some(msg) = ctx.recv(self.ports[port].inp) {
                    // A memory only understands requests; anything else is a wiring error that
                    // the watchdog would report as a stuck requester, so it is dropped here.
                    if let Ok(req) = Carries::<MemRequest>::unwrap_as(msg) {
                        self.accept(port, req, ctx);
                    }
                }
            }
            Wake::Timer(port) => self.drain(port as usize, ctx),
            Wake::Space(link) => {
                if let Some(port) = self.ports.iter().position(|p| p.out == link)
                    && !self.ports[port].armed
                {
                    self.drain(port, ctx);
                }
            }
            Wake::Start => {}
        }
    }

    fn busy(&self) -> bool {
        self.outstanding() > 0
    }

    fn status(&self) -> String {
        format!("{} answers waiting", self.outstanding())
    }
}
