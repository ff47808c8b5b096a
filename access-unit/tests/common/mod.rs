//! What the access unit's engine tests share: the message type and a core stand-in that pops
//! output-queue entries at a set pace.

#![allow(dead_code)]

use access_unit::{AuProgram, OutqEntry, parse};
use mem_model::{MemRequest, MemResponse};
use sim_core::{Clock, Ctx, Frequency, LinkId, Wake};

/// Every message of the test systems.
pub enum Msg {
    Req(MemRequest),
    Resp(MemResponse),
    Outq(OutqEntry),
}

sim_core::carries!(Msg { Req(MemRequest), Resp(MemResponse), Outq(OutqEntry) });

/// The tests' 1 GHz clock.
pub fn clock() -> Clock {
    Clock::new(Frequency::from_hz(1_000_000_000)).unwrap()
}

/// Pops one output-queue entry every `gap` ps (0: everything as it arrives; `u64::MAX`: never)
/// and records it with the tick it was popped.
pub struct Sink {
    pub inp: LinkId,
    pub gap: u64,
    pub got: Vec<OutqEntry>,
    pub at: Vec<u64>,
    armed: bool,
}

impl Sink {
    /// A sink on link `inp` popping every `gap` ps.
    pub fn new(inp: LinkId, gap: u64) -> Sink {
        Sink { inp, gap, got: vec![], at: vec![], armed: false }
    }

    /// Its part of a wake-up: pops what its pace allows, and arms its timer.
    pub fn wake(&mut self, why: Wake, ctx: &mut Ctx<'_, Msg>) {
        if self.gap == u64::MAX {
            return;
        }
        if self.gap == 0 {
            while let Some(Msg::Outq(e)) = ctx.recv(self.inp) {
                self.got.push(e);
                self.at.push(ctx.now());
            }
            return;
        }
        if matches!(why, Wake::Timer(_)) {
            self.armed = false;
            if let Some(Msg::Outq(e)) = ctx.recv(self.inp) {
                self.got.push(e);
                self.at.push(ctx.now());
            }
        }
        if !self.armed && ctx.peek(self.inp).is_some() {
            self.armed = true;
            ctx.schedule_in(self.gap, 0);
        }
    }
}

/// Where the bag programs' offsets, indices and table lie.
pub const OFF: u64 = 0x1000;
pub const IND: u64 = 0x2000;
pub const TAB: u64 = 0x10_0000;

/// An embedding-bag program: `bags` bags over CSR offsets and indices, rows of `row` bytes
/// (a `!lookup` each); `outer` and `inner` are the two layers' suffixes (`""` for single
/// layers, `" broadcast"` and `" lockstep 4"` for the vectorized shape).
pub fn bags_program(bags: u64, row: u64, outer: &str, inner: &str) -> AuProgram {
    let text = format!(
        ".au
tu t0 = dense 0..{bags}{outer}
tu t1 = range s1..s2 in t0{inner}
s0 = ite t0
s1 = load.u32 [{OFF:#x} + s0 * 4] in t0
s2 = load.u32 [{:#x} + s0 * 4] in t0
s3 = ite t1
s4 = load.u32 [{IND:#x} + s3 * 4] in t1
s5 = load.row {row} [{TAB:#x} + s4 * {row}] in t1 !lookup
on t1 begin -> 0
on t1 iter -> 1 (s5)
on t1 end -> 2 (s0)
on t0 end -> 3
",
        OFF + 4
    );
    parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}
