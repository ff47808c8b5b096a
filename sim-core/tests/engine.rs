//! Engine behaviour: back-pressure, event order, deadlock and livelock detection.

use sim_core::{
    Clock, Component, ComponentId, Ctx, Engine, EngineError, Frequency, LinkId, LinkSpec, Priority,
    StallError, Wake, WatchdogConfig,
};

fn clock() -> Clock {
    Clock::new(Frequency::from_hz(1_000_000_000)).unwrap()
}

fn spec(name: &str, latency_cycles: u64, capacity: u32) -> LinkSpec {
    LinkSpec { name: name.into(), clock: clock(), latency_cycles, capacity }
}

/// The test models: a greedy producer, a slow consumer, a component that waits forever,
/// a spinner that never progresses, and a recorder of wake order.
enum Toy {
    Producer { out: LinkId, next: u64, total: u64, refusals: u64 },
    Consumer { inp: LinkId, got: Vec<u64>, timer_armed: bool, expect: u64 },
    Waiter { name: String, inp: LinkId, out: Option<LinkId>, fill: bool },
    Spinner,
    Recorder { order: Vec<u64> },
}

impl Component for Toy {
    type Msg = u64;
    fn name(&self) -> &str {
        match self {
            Toy::Producer { .. } => "producer",
            Toy::Consumer { .. } => "consumer",
            Toy::Waiter { name, .. } => name,
            Toy::Spinner => "spinner",
            Toy::Recorder { .. } => "recorder",
        }
    }

    fn wake(&mut self, why: Wake, ctx: &mut Ctx<'_, u64>) {
        match self {
            Toy::Producer { out, next, total, refusals } => {
                while *next < *total {
                    match ctx.send(*out, *next) {
                        Ok(()) => *next += 1,
                        Err(_) => {
                            *refusals += 1;
                            break;
                        }
                    }
                }
            }
            Toy::Consumer { inp, got, timer_armed, .. } => {
                // Pops one message every 10 ns: much slower than the producer.
                if matches!(why, Wake::Timer(_)) {
                    *timer_armed = false;
                    if let Some(m) = ctx.recv(*inp) {
                        got.push(m);
                        ctx.progress();
                    }
                }
                if !*timer_armed && ctx.peek(*inp).is_some() {
                    *timer_armed = true;
                    ctx.schedule_in(10_000, 0);
                }
            }
            Toy::Waiter { out, fill, .. } => {
                if let (Some(o), true) = (*out, *fill) {
                    while ctx.send(o, 7).is_ok() {}
                }
            }
            Toy::Spinner => ctx.schedule_in(1_000, 0),
            Toy::Recorder { order } => match why {
                Wake::Start => {
                    ctx.schedule_at(500, Priority::LATE, 3);
                    ctx.schedule_at(500, Priority::DEFAULT, 1);
                    ctx.schedule_at(500, Priority::DEFAULT, 2);
                    ctx.schedule_at(100, Priority::LATE, 0);
                    ctx.schedule_at(500, Priority::DELIVERY, 9);
                }
                Wake::Timer(t) => order.push(t),
                _ => {}
            },
        }
    }

    fn busy(&self) -> bool {
        match self {
            Toy::Producer { next, total, .. } => next < total,
            Toy::Consumer { got, expect, .. } => (got.len() as u64) < *expect,
            Toy::Waiter { .. } | Toy::Spinner => true,
            Toy::Recorder { .. } => false,
        }
    }

    fn status(&self) -> String {
        match self {
            Toy::Waiter { inp, .. } => format!("waiting for a message on link {}", inp.index()),
            _ => String::new(),
        }
    }
}

#[test]
fn full_link_back_pressures_without_loss_or_reordering() {
    let mut e = Engine::new();
    let p = e.reserve();
    let c = e.reserve();
    let l = e.connect(p, c, spec("p_to_c", 2, 4)).unwrap();
    e.install(p, Toy::Producer { out: l, next: 0, total: 200, refusals: 0 }).unwrap();
    e.install(c, Toy::Consumer { inp: l, got: vec![], timer_armed: false, expect: 200 }).unwrap();
    let s = e.run(None).unwrap();
    let Some(Toy::Consumer { got, .. }) = e.component(c) else { panic!("consumer") };
    assert_eq!(got, &(0..200).collect::<Vec<u64>>(), "every message, in order");
    let Some(Toy::Producer { refusals, .. }) = e.component(p) else { panic!("producer") };
    assert!(*refusals > 100, "the producer was held back {refusals} times");
    let r = &e.link_reports()[0];
    assert_eq!((r.sent, r.occupancy), (200, 0));
    // The consumer's pace (one per 10 ns) sets the run length, not the producer's.
    assert!(s.end_tick >= 200 * 10_000, "end tick {}", s.end_tick);
}

#[test]
fn same_tick_events_run_in_priority_then_insertion_order() {
    let mut e = Engine::new();
    let r = e.add(Toy::Recorder { order: vec![] });
    e.run(None).unwrap();
    let Some(Toy::Recorder { order }) = e.component(r) else { panic!() };
    assert_eq!(order, &[0, 9, 1, 2, 3]);
}

#[test]
fn deadlock_is_reported_with_blocked_components_and_full_links() {
    let mut e = Engine::new();
    let a = e.reserve();
    let b = e.reserve();
    let ab = e.connect(a, b, spec("a_to_b", 1, 2)).unwrap();
    let ba = e.connect(b, a, spec("b_to_a", 1, 2)).unwrap();
    // a fills its link to b; b never pops and waits on a message from a that never comes.
    e.install(a, Toy::Waiter { name: "a".into(), inp: ba, out: Some(ab), fill: true }).unwrap();
    e.install(b, Toy::Waiter { name: "b".into(), inp: ab, out: Some(ba), fill: false }).unwrap();
    let err = e.run(None).unwrap_err();
    let EngineError::Stall(StallError::Deadlock(report)) = &err else { panic!("{err}") };
    let names: Vec<&str> = report.blocked.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["a", "b"]);
    assert_eq!(report.links.len(), 1);
    assert!(report.links[0].sender_waiting);
    let text = err.to_string();
    assert!(text.contains("deadlock"), "{text}");
    assert!(text.contains("link a_to_b (a -> b) FULL 2/2; a waits on b to pop"), "{text}");
    assert!(text.contains("component b is busy: waiting for a message on link 0"), "{text}");
}

#[test]
fn livelock_is_reported_when_nothing_progresses() {
    let mut e = Engine::new();
    e.add(Toy::Spinner);
    e.set_watchdog(WatchdogConfig { livelock_window: Some(1_000_000) });
    let err = e.run(None).unwrap_err();
    assert!(matches!(err, EngineError::Stall(StallError::Livelock { window: 1_000_000, .. })), "{err}");
    assert!(err.to_string().contains("component spinner is busy"));
}

#[test]
fn run_stops_at_the_time_limit_and_resumes() {
    let mut e = Engine::new();
    e.add(Toy::Spinner);
    e.set_watchdog(WatchdogConfig { livelock_window: None });
    let s = e.run(Some(10_000)).unwrap();
    assert!(s.hit_limit);
    assert_eq!(s.end_tick, 10_000);
    let s = e.run(Some(20_000)).unwrap();
    assert_eq!((s.end_tick, s.events), (20_000, 10));
}

#[test]
fn bad_links_and_missing_components_are_errors() {
    let mut e: Engine<Toy> = Engine::new();
    let a = e.reserve();
    assert!(matches!(e.connect(a, a, spec("zero", 0, 1)), Err(EngineError::Link(_))));
    let err = e.connect(a, a, spec("empty", 1, 0)).unwrap_err();
    assert_eq!(err.to_string(), "link empty: capacity must be at least 1 message");
    assert_eq!(e.run(None).unwrap_err(), EngineError::Missing(0));
}

/// Sends `per_tick` messages at each of ticks 0, 1000 and 1001; or drains all its inputs at
/// every wake and counts its arrival wakes.
enum Burst {
    Sender {
        out: LinkId,
        per_tick: u64,
    },
    /// `takes_all`: it says it takes every input at any wake (it does).
    Drainer {
        inps: Vec<LinkId>,
        wakes: u64,
        got: Vec<u64>,
        takes_all: bool,
    },
}

impl Component for Burst {
    type Msg = u64;
    fn name(&self) -> &str {
        "burst"
    }
    fn wake(&mut self, why: Wake, ctx: &mut Ctx<'_, u64>) {
        match self {
            Burst::Sender { out, per_tick } => {
                if matches!(why, Wake::Start) {
                    ctx.schedule_at(1000, Priority::DEFAULT, 0);
                    ctx.schedule_at(1001, Priority::DEFAULT, 0);
                }
                for i in 0..*per_tick {
                    ctx.send(*out, ctx.now() * 100 + i).unwrap();
                }
            }
            Burst::Drainer { inps, wakes, got, .. } => {
                if matches!(why, Wake::Arrival(_)) {
                    *wakes += 1;
                }
                for inp in inps.iter() {
                    while let Some(m) = ctx.recv(*inp) {
                        got.push(m);
                    }
                }
            }
        }
    }
    fn takes_every_input(&self) -> bool {
        matches!(self, Burst::Drainer { takes_all: true, .. })
    }
}

/// `senders` senders of `per_tick` messages a tick (at ticks 0, 1000 and 1001) into one
/// drainer (saying it takes every input at any wake if `takes_all`), after `wire(engine, links,
/// drainer)`: (arrival wakes, messages in the order taken, events).
fn burst_run(
    senders: usize,
    per_tick: u64,
    takes_all: bool,
    wire: impl FnOnce(&mut Engine<Burst>, &[LinkId], ComponentId),
) -> (u64, Vec<u64>, u64) {
    let mut e = Engine::new();
    let ids: Vec<_> = (0..senders).map(|_| e.reserve()).collect();
    let d = e.reserve();
    let links: Vec<_> = ids.iter().map(|&s| e.connect(s, d, spec("burst", 1, 64)).unwrap()).collect();
    wire(&mut e, &links, d);
    for (&s, &l) in ids.iter().zip(&links) {
        e.install(s, Burst::Sender { out: l, per_tick }).unwrap();
    }
    e.install(d, Burst::Drainer { inps: links, wakes: 0, got: vec![], takes_all }).unwrap();
    let summary = e.run(None).unwrap();
    let Some(Burst::Drainer { wakes, got, .. }) = e.component(d) else { panic!("drainer") };
    (*wakes, got.clone(), summary.events)
}

#[test]
fn coalescing_links_wake_once_per_arrival_tick_and_lose_nothing() {
    let (plain_wakes, plain_got, plain_events) = burst_run(1, 5, false, |_, _, _| {});
    let (wakes, got, events) = burst_run(1, 5, false, |e, links, _| e.coalesce_arrivals(links[0]).unwrap());
    assert_eq!(plain_wakes, 15, "one wake per message by default");
    assert_eq!(wakes, 3, "one wake per arrival tick (0, 1000 and 1001 plus the latency)");
    assert_eq!(got, plain_got, "the same messages in the same order");
    assert_eq!(got.len(), 15);
    assert_eq!(plain_events - events, 12);
}

#[test]
fn merged_inputs_wake_once_per_arrival_tick_and_lose_nothing() {
    // Three senders of 2 messages a tick into one drainer, whose arrivals merge or not.
    let (plain_wakes, plain_got, plain_events) = burst_run(3, 2, false, |_, _, _| {});
    let (wakes, got, events) = burst_run(3, 2, false, |e, _, d| e.merge_arrivals(d).unwrap());
    assert_eq!(plain_wakes, 18, "one wake per message by default");
    assert_eq!(wakes, 3, "one wake per arrival tick, whichever input");
    assert_eq!(got, plain_got, "the same messages in the same order");
    assert_eq!(got.len(), 18);
    assert_eq!(plain_events - events, 15);
    let mut other: Engine<Burst> = Engine::new();
    assert!(matches!(other.merge_arrivals(ComponentId::from_index(0)), Err(EngineError::BadSlot(0))));
}

#[test]
fn a_component_that_takes_every_input_has_its_arrivals_merged_by_the_engine() {
    let merged = burst_run(3, 2, false, |e, _, d| e.merge_arrivals(d).unwrap());
    let (wakes, got, events) = burst_run(3, 2, true, |_, _, _| {});
    assert_eq!((wakes, &got, events), (merged.0, &merged.1, merged.2));
    assert_eq!(wakes, 3, "one wake per arrival tick, with no call to merge_arrivals");
}

#[test]
fn coalescing_an_unknown_link_is_an_error() {
    let mut e: Engine<Burst> = Engine::new();
    let a = e.reserve();
    let l = e.connect(a, a, spec("self", 1, 1)).unwrap();
    assert!(e.coalesce_arrivals(l).is_ok());
    let mut other: Engine<Burst> = Engine::new();
    assert!(matches!(other.coalesce_arrivals(l), Err(EngineError::UnknownLink(0))));
}

/// Sends ahead of time, or drains its inputs recording (tick, message).
enum Ahead {
    /// At start, sends each (message, depart) with `send_at`; at each timer tick, sends the
    /// message listed for it with `send`, noting those refused.
    Sender {
        out: LinkId,
        at_start: Vec<(u64, u64)>,
        later: Vec<(u64, u64)>,
        refused: Vec<u64>,
    },
    Drainer {
        inps: Vec<LinkId>,
        wakes: u64,
        got: Vec<(u64, u64)>,
    },
}

impl Component for Ahead {
    type Msg = u64;
    fn name(&self) -> &str {
        "ahead"
    }
    fn wake(&mut self, why: Wake, ctx: &mut Ctx<'_, u64>) {
        match self {
            Ahead::Sender { out, at_start, later, refused } => {
                if matches!(why, Wake::Start) {
                    for &(m, depart) in at_start.iter() {
                        ctx.send_at(*out, m, depart).unwrap();
                    }
                    for &(_, t) in later.iter() {
                        ctx.schedule_at(t, Priority::DEFAULT, 0);
                    }
                    return;
                }
                if !matches!(why, Wake::Timer(_)) {
                    return;
                }
                let now = ctx.now();
                for &(m, _) in later.iter().filter(|(_, t)| *t == now) {
                    if ctx.send(*out, m).is_err() {
                        refused.push(m);
                    }
                }
            }
            Ahead::Drainer { inps, wakes, got } => {
                if matches!(why, Wake::Arrival(_)) {
                    *wakes += 1;
                }
                for inp in inps.iter() {
                    while let Some(m) = ctx.recv(*inp) {
                        got.push((ctx.now(), m));
                    }
                }
            }
        }
    }
}

#[test]
fn a_message_sent_ahead_arrives_as_if_sent_when_it_departs_and_keeps_its_links_order() {
    let mut e = Engine::new();
    let (a, b, d) = (e.reserve(), e.reserve(), e.reserve());
    let la = e.connect(a, d, spec("a", 1, 4)).unwrap();
    let lb = e.connect(b, d, spec("b", 1, 4)).unwrap();
    e.merge_arrivals(d).unwrap();
    // Link a: message 1 departs at 5 ns, message 2 "at 2 ns" but behind message 1, message 5
    // sent plainly at 1 ns, behind both.
    let at_start = vec![(1, 5000), (2, 2000)];
    e.install(a, Ahead::Sender { out: la, at_start, later: vec![(5, 1000)], refused: vec![] }).unwrap();
    // Link b: message 3 now, message 4 at 5 ns: after the group's wake at 6 ns was booked
    // by message 1, and after the one at 1 ns by message 3.
    let b_sender = Ahead::Sender { out: lb, at_start: vec![(3, 0)], later: vec![(4, 5000)], refused: vec![] };
    e.install(b, b_sender).unwrap();
    e.install(d, Ahead::Drainer { inps: vec![la, lb], wakes: 0, got: vec![] }).unwrap();
    e.run(None).unwrap();
    let Some(Ahead::Drainer { wakes, got, .. }) = e.component(d) else { panic!("drainer") };
    assert_eq!(got, &vec![(1000, 3), (6000, 1), (6000, 2), (6000, 5), (6000, 4)]);
    assert_eq!(*wakes, 2, "one merged wake per arrival tick, however the arrivals were booked");
}

#[test]
fn a_message_sent_ahead_holds_its_slot_from_the_send() {
    let mut e = Engine::new();
    let (a, d) = (e.reserve(), e.reserve());
    let l = e.connect(a, d, spec("a", 1, 1)).unwrap();
    let later = vec![(2, 1000), (3, 10_000)];
    e.install(a, Ahead::Sender { out: l, at_start: vec![(1, 9000)], later, refused: vec![] }).unwrap();
    e.install(d, Ahead::Drainer { inps: vec![l], wakes: 0, got: vec![] }).unwrap();
    e.run(None).unwrap();
    // Message 1 holds the link's one slot from tick 0 until it arrives (10 ns) and is taken:
    // message 2 is refused at 1 ns; message 3, sent at 10 ns after the drainer took 1, goes.
    let Some(Ahead::Sender { refused, .. }) = e.component(a) else { panic!("sender") };
    assert_eq!(refused, &vec![2]);
    let Some(Ahead::Drainer { got, .. }) = e.component(d) else { panic!("drainer") };
    assert_eq!(got, &vec![(10_000, 1), (11_000, 3)]);
}

#[test]
fn a_message_arrives_on_the_clock_edge_its_latency_after_the_first_edge_it_can_leave_on() {
    // 3 GHz: edges at 0, 333, 666, 1000, 1333 ps (the period is not a whole number of ticks).
    let ghz3 = Clock::new(Frequency::from_hz(3_000_000_000)).unwrap();
    let link =
        |name: &str, latency_cycles| LinkSpec { name: name.into(), clock: ghz3, latency_cycles, capacity: 8 };
    let mut e = Engine::new();
    let (a, b, d) = (e.reserve(), e.reserve(), e.reserve());
    let one = e.connect(a, d, link("one", 1)).unwrap();
    let two = e.connect(b, d, link("two", 2)).unwrap();
    // Departures on edges, and one between edges (400 ps), which takes as long as one from the
    // edge before it (333 ps: 333 -> 666).
    let at_start = vec![(1, 0), (2, 333), (3, 400), (4, 1000)];
    e.install(a, Ahead::Sender { out: one, at_start, later: vec![], refused: vec![] }).unwrap();
    e.install(b, Ahead::Sender { out: two, at_start: vec![(5, 333)], later: vec![], refused: vec![] })
        .unwrap();
    e.install(d, Ahead::Drainer { inps: vec![one, two], wakes: 0, got: vec![] }).unwrap();
    e.run(None).unwrap();
    let Some(Ahead::Drainer { got, .. }) = e.component(d) else { panic!("drainer") };
    // Adding a 334 ps latency instead would deliver at 334, 667, 734, 1334 and 1001: a tick past
    // the edge, which a receiver working on its edges reads as a cycle later.
    assert_eq!(got, &vec![(333, 1), (666, 2), (733, 3), (1000, 5), (1333, 4)]);
}

/// A sender that sends three messages, then asks to be woken at each of the receiver's pops
/// and notes, at each wake, the tick and how many of its messages are still unpopped; beside
/// the slow consumer.
enum PopWatch {
    Sender { out: LinkId, seen: Vec<(u64, usize)> },
    Receiver(Toy),
}

impl Component for PopWatch {
    type Msg = u64;
    fn name(&self) -> &str {
        match self {
            PopWatch::Sender { .. } => "watcher",
            PopWatch::Receiver(t) => t.name(),
        }
    }
    fn wake(&mut self, why: Wake, ctx: &mut Ctx<'_, u64>) {
        match self {
            PopWatch::Sender { out, seen } => {
                if matches!(why, Wake::Start) {
                    for m in 0..3 {
                        ctx.send(*out, m).unwrap();
                    }
                }
                let left = ctx.unpopped(*out);
                seen.push((ctx.now(), left));
                if left > 0 {
                    ctx.wake_on_pop(*out);
                }
            }
            PopWatch::Receiver(t) => t.wake(why, ctx),
        }
    }
    fn busy(&self) -> bool {
        match self {
            PopWatch::Sender { .. } => false,
            PopWatch::Receiver(t) => t.busy(),
        }
    }
}

#[test]
fn a_sender_sees_what_its_receiver_has_not_popped_and_is_woken_at_its_pops() {
    let mut e = Engine::new();
    let (w, c) = (e.reserve(), e.reserve());
    // Room for all three: the wakes come from the pops, not from a refused send.
    let l = e.connect(w, c, spec("w_to_c", 1, 4)).unwrap();
    e.install(w, PopWatch::Sender { out: l, seen: vec![] }).unwrap();
    let consumer = Toy::Consumer { inp: l, got: vec![], timer_armed: false, expect: 3 };
    e.install(c, PopWatch::Receiver(consumer)).unwrap();
    e.run(None).unwrap();
    let Some(PopWatch::Sender { seen, .. }) = e.component(w) else { panic!("watcher") };
    // The consumer pops one every 10 ns from the first arrival (1 ns).
    assert_eq!(seen, &vec![(0, 3), (11_000, 2), (21_000, 1), (31_000, 0)]);
}
