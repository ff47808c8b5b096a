//! The crossbar: routing by address, answers back to the right port with colliding ids, and the
//! crossbar and mesh latency formulas.

#[path = "cache_harness.rs"]
mod harness;

use harness::*;
use mem_model::MemRequest;
use mem_model::cache::{BankHash, Crossbar, CrossbarConfig, Topology};
use mem_model::dram::{DramPreset, DramSpec};
use sim_core::{ByteSize, Tick};

fn crossbar(cycles: u64) -> CrossbarConfig {
    CrossbarConfig {
        topology: Topology::Crossbar { cycles },
        granule: None,
        hash: BankHash::None,
        max_in_flight: 64,
        bank_queue: 4,
        port_bytes: None,
    }
}

#[test]
fn requests_go_to_the_bank_of_their_address_and_answers_to_their_port() {
    // Two ports with the same ids 0..16; port 1's addresses are 1 MiB higher (same banks).
    let mk = |base: u64| -> Vec<(Tick, MemRequest)> {
        script(&(0..16u64).map(|i| (i * NS, rd(base + i * 64, 64))).collect::<Vec<_>>())
    };
    let f = Fabric::new(&crossbar(3), vec![mk(0), mk(1 << 20)], 4, 10).run();
    for (b, &bank) in f.banks.iter().enumerate() {
        let reads = f.e.probe(bank).reads();
        assert_eq!(reads.len(), 8, "bank {b}");
        assert!(reads.iter().all(|&(a, _)| (a / 64) % 4 == b as u64), "bank {b} got {reads:?}");
    }
    for (port, base) in [(0, 0), (1, 1 << 20)] {
        let d = f.e.driver(f.drivers[port]);
        assert_eq!(d.answers.len(), 16);
        for i in 0..16u64 {
            assert_eq!(d.answer(i).addr, base + i * 64, "port {port} id {i}");
        }
    }
    let x = f.e.xbar(f.xbar);
    assert_eq!(x.in_flight(), 0);
    assert_eq!(f.e.stats().lookup_counter("xbar.port2.requests"), Some(8));
}

#[test]
fn crossbar_latency_is_fixed_each_way() {
    let f = Fabric::new(&crossbar(3), vec![script(&[(0, rd(0, 64)), (0, rd(64, 64))])], 2, 10).run();
    let d = f.e.driver(f.drivers[0]);
    // Four one-cycle links, three cycles each way through the crossbar, ten in the bank.
    for i in 0..2 {
        assert_eq!(d.answer(i).latency(), (4 + 2 * 3 + 10) * NS);
    }
}

#[test]
fn mesh_latency_is_base_plus_hops_times_cycles_per_hop() {
    // A 4 x 1 row: the port at node 0, banks at nodes 0..4: bank b is b hops away.
    let cfg = CrossbarConfig {
        topology: Topology::Mesh {
            cols: 4,
            rows: 1,
            cycles_per_hop: 2,
            base_cycles: 1,
            upstream_nodes: Some(vec![0]),
            downstream_nodes: None,
        },
        ..crossbar(0)
    };
    let reqs: Vec<(Tick, MemRequest)> = (0..4u64).map(|b| (b * 100 * NS, rd(b * 64, 64))).collect();
    let f = Fabric::new(&cfg, vec![script(&reqs)], 4, 10).run();
    let d = f.e.driver(f.drivers[0]);
    for b in 0..4u64 {
        assert_eq!(d.answer(b).latency(), (4 + 2 * (1 + 2 * b) + 10) * NS, "bank {b}");
        assert_eq!(f.e.xbar(f.xbar).latency_cycles(0, b as usize), Some(1 + 2 * b));
    }
}

#[test]
fn xor_hashing_spreads_a_stride_that_modulo_sends_to_one_bank() {
    let f = Fabric::new(&crossbar(1), vec![vec![]], 4, 1);
    let plain = f.e.xbar(f.xbar);
    let stride: Vec<u64> = (0..16).map(|i| i * 4 * 64).collect();
    assert!(stride.iter().all(|&a| plain.bank_of(a) == 0));
    let g = Fabric::new(&CrossbarConfig { hash: BankHash::Xor, ..crossbar(1) }, vec![vec![]], 4, 1);
    let hashed = g.e.xbar(g.xbar);
    let mut per_bank = [0; 4];
    for &a in &stride {
        per_bank[hashed.bank_of(a)] += 1;
    }
    assert_eq!(per_bank, [4, 4, 4, 4]);
    // The granule is the unit: every byte of one granule goes to one bank.
    assert!((0..64).all(|o| hashed.bank_of(4096 + o) == hashed.bank_of(4096)));
}

#[test]
fn memory_side_banks_each_own_whole_pseudo_channels() {
    // The H100's HBM3 with its pseudo-channels hashed, behind 40 banks (a GPU's L2 slices).
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../configs/memory/hbm3-h100.toml");
    let mut preset: DramPreset = toml::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    preset.controller.channel_hash = true;
    let spec = DramSpec::from_preset(preset).unwrap();
    let m = spec.mapping();
    let mut f = Fabric::new(&crossbar(1), vec![vec![]], 40, 1);
    let owners = |x: &Crossbar<_>| {
        let mut owner = std::collections::HashMap::new();
        let mut shared = 0;
        for line in 0..20_000u64 {
            let a = line * 128;
            let pc = m.controller_of(&m.decode(a).unwrap());
            if *owner.entry(pc).or_insert(x.bank_of(a)) != x.bank_of(a) {
                shared += 1;
            }
        }
        (owner.len(), shared)
    };
    // Interleaved by line number, a hashed pseudo-channel is fed by many banks.
    let (pcs, shared) = owners(f.e.xbar(f.xbar));
    assert_eq!(pcs, 160);
    assert!(shared > 10_000, "{shared}");
    // Memory-side, each pseudo-channel has one bank, the mapping's owner, and the 160 spread
    // evenly: 4 per bank.
    let Some(Node::Xbar(x)) = f.e.component_mut(f.xbar) else { panic!("crossbar") };
    x.set_memory_side(m.clone());
    let x = f.e.xbar(f.xbar);
    assert_eq!(owners(x), (160, 0));
    assert!((0..20_000u64).all(|l| x.bank_of(l * 128) as u32 == m.owner(l * 128, 40).unwrap()));
    let mut per_bank = [0; 40];
    for pc in 0..160u32 {
        let a = (0..).map(|l: u64| l * 128).find(|&a| m.controller_of(&m.decode(a).unwrap()) == pc).unwrap();
        per_bank[x.bank_of(a)] += 1;
    }
    assert!(per_bank.iter().all(|&n| n == 4), "{per_bank:?}");
}

#[test]
fn a_full_bank_queue_holds_the_port_back_without_loss() {
    // Bank queue of 4, slow bank, 32 requests to one bank from two ports.
    let mk = |id_base: u64| -> Vec<(Tick, MemRequest)> {
        script(&(0..16u64).map(|i| (0, rd((id_base + i) * 4 * 64, 64))).collect::<Vec<_>>())
    };
    let f = Fabric::new(&crossbar(2), vec![mk(0), mk(16)], 4, 40).run();
    assert_eq!(f.e.probe(f.banks[0]).reads().len(), 32);
    for &d in &f.drivers {
        assert_eq!(f.e.driver(d).answers.len(), 16);
    }
    assert!(f.e.stats().lookup_counter("xbar.bank_full_stalls").unwrap() > 0);
}

/// `port_bytes`: the answer ticks of every driver, merged and sorted.
fn answer_ticks(f: &Fabric) -> Vec<Tick> {
    let mut at: Vec<Tick> =
        f.drivers.iter().flat_map(|&d| f.e.driver(d).answers.iter().map(|a| a.at)).collect();
    at.sort_unstable();
    at
}

#[test]
fn a_banks_port_sends_one_line_per_port_width() {
    // Four requesters, 16 line reads each, all to bank 0 of one. With 32 B ports the bank's
    // answers enter the crossbar one line per two cycles: 64 lines take 126 cycles from the
    // first to the last; without a width they all come back within a few cycles.
    let scripts: Vec<Vec<(Tick, MemRequest)>> = (0..4u64)
        .map(|p| script(&(0..16u64).map(|i| (0, rd((p * 16 + i) * 64, 64))).collect::<Vec<_>>()))
        .collect();
    let paced = CrossbarConfig { port_bytes: Some(ByteSize::from_bytes(32)), ..crossbar(3) };
    let f = Fabric::new(&paced, scripts.clone(), 1, 10).run();
    let at = answer_ticks(&f);
    assert_eq!(at.len(), 64);
    assert_eq!(at[63] - at[0], 126 * NS, "{at:?}");
    assert!(at.windows(2).all(|w| w[1] - w[0] >= 2 * NS), "{at:?}");
    assert!(f.e.stats().lookup_counter("xbar.port_busy_waits").unwrap_or(0) > 0);
    let free = Fabric::new(&crossbar(3), scripts, 1, 10).run();
    let at = answer_ticks(&free);
    assert!(at[63] - at[0] < 64 * NS, "{at:?}");
    assert_eq!(free.e.stats().lookup_counter("xbar.port_busy_waits"), Some(0));
}

#[test]
fn a_requesters_port_takes_one_line_per_port_width() {
    // One requester reading 16 lines spread over four banks: its own port delivers the
    // answers, two cycles a line on 32 B, one on 64 B.
    let reqs: Vec<(Tick, MemRequest)> = (0..16u64).map(|i| (0, rd(i * 64, 64))).collect();
    for (width, gap) in [(32, 2), (64, 1)] {
        let cfg = CrossbarConfig { port_bytes: Some(ByteSize::from_bytes(width)), ..crossbar(3) };
        let f = Fabric::new(&cfg, vec![script(&reqs)], 4, 10).run();
        let at = answer_ticks(&f);
        assert_eq!(at.len(), 16);
        assert!(at.windows(2).all(|w| w[1] - w[0] >= gap * NS), "{width} B: {at:?}");
    }
    // Without a width, answers from different banks share cycles.
    let f = Fabric::new(&crossbar(3), vec![script(&reqs)], 4, 10).run();
    assert!(answer_ticks(&f).windows(2).any(|w| w[1] == w[0]));
}

#[test]
fn written_data_occupies_its_ports_for_its_flits() {
    // Eight 64 B writes from one requester over 16 B ports: each takes four cycles of the
    // requester's inbound channel, so they reach the bank four cycles apart; an acknowledgement
    // (no data) takes one cycle on the way back.
    let reqs: Vec<(Tick, MemRequest)> = (0..8u64).map(|i| (0, wr(i * 64, 64))).collect();
    let cfg = CrossbarConfig { port_bytes: Some(ByteSize::from_bytes(16)), ..crossbar(2) };
    let f = Fabric::new(&cfg, vec![script(&reqs)], 1, 5).run();
    let seen: Vec<Tick> = f.e.probe(f.banks[0]).seen.iter().map(|(t, _)| *t).collect();
    assert_eq!(seen.len(), 8);
    assert!(seen.windows(2).all(|w| w[1] - w[0] == 4 * NS), "{seen:?}");
    let at = answer_ticks(&f);
    assert!(at.windows(2).all(|w| w[1] - w[0] == 4 * NS), "{at:?}");
}

#[test]
fn a_mesh_link_shared_by_two_flows_carries_one_width_a_cycle() {
    // A 4 x 1 row: requester A at node 0 reads bank 0 at node 3, requester B at node 1 reads
    // bank 1 at node 2. Every answer crosses the link from node 2 to node 1: with 32 B ports
    // and links it carries a line per two cycles, so the 32 lines are at least 62 cycles apart
    // from the first answer to the last (64 here: B's first answers come back alone, its bank
    // being nearer). The same ports on a crossbar (no links) deliver both flows at once.
    let mesh = Topology::Mesh {
        cols: 4,
        rows: 1,
        cycles_per_hop: 1,
        base_cycles: 0,
        upstream_nodes: Some(vec![0, 1]),
        downstream_nodes: Some(vec![3, 2]),
    };
    let flow =
        |parity: u64| script(&(0..16u64).map(|i| (0, rd((2 * i + parity) * 64, 64))).collect::<Vec<_>>());
    let width = Some(ByteSize::from_bytes(32));
    let run = |topology: Topology| {
        let cfg = CrossbarConfig { topology, port_bytes: width, ..crossbar(0) };
        answer_ticks(&Fabric::new(&cfg, vec![flow(0), flow(1)], 2, 10).run())
    };
    let at = run(mesh.clone());
    assert_eq!(at.len(), 32);
    assert!((62 * NS..=64 * NS).contains(&(at[31] - at[0])), "{at:?}");
    // In steady state the answers come two per four cycles (one of each flow).
    assert!(at[2..].windows(3).all(|w| w[2] - w[0] == 4 * NS), "{at:?}");
    let at = run(Topology::Crossbar { cycles: 2 });
    assert!(at[31] - at[0] < 40 * NS, "{at:?}");
    // Without a port width the mesh is a latency model: both flows at once.
    let cfg = CrossbarConfig { topology: mesh, ..crossbar(0) };
    let at = answer_ticks(&Fabric::new(&cfg, vec![flow(0), flow(1)], 2, 10).run());
    assert!(at[31] - at[0] < 40 * NS, "{at:?}");
}

#[test]
fn port_busy_waits_count_each_waiting_message_once() {
    // Requester A writes two lines to bank 0, B reads two lines from bank 1, on 16 B ports: no
    // port is shared, so together they wait as often as each alone (a port still busy when
    // another's channel frees is not counted again).
    let a = script(&[(0, wr(0, 64)), (0, wr(128, 64))]);
    let b = script(&[(0, rd(64, 64)), (0, rd(192, 64))]);
    let cfg = CrossbarConfig { port_bytes: Some(ByteSize::from_bytes(16)), ..crossbar(1) };
    let waits = |scripts: Vec<Vec<(Tick, MemRequest)>>| {
        let f = Fabric::new(&cfg, scripts, 2, 5).run();
        f.e.stats().lookup_counter("xbar.port_busy_waits").unwrap_or(0)
    };
    let (alone_a, alone_b) = (waits(vec![a.clone(), vec![]]), waits(vec![vec![], b.clone()]));
    assert!(alone_a > 0 && alone_b > 0, "{alone_a} {alone_b}");
    assert_eq!(waits(vec![a, b]), alone_a + alone_b);
}
