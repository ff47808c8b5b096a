//! Engine speed: events per second for a ping-pong pair and a 64-leaf fan-out/fan-in.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use sim_core::bench::{fan_out_fan_in, measure, ping_pong};

fn engine(c: &mut Criterion) {
    let mut g = c.benchmark_group("engine");
    let messages = 1_000_000u64;
    g.throughput(Throughput::Elements(messages + 2));
    g.bench_function("ping_pong", |b| {
        b.iter(|| measure(ping_pong(messages).expect("builds")).expect("runs"))
    });
    let rounds = 8_000u64;
    g.throughput(Throughput::Elements(65 + rounds * 64 * 2));
    g.bench_function("fan_out_fan_in_64", |b| {
        b.iter(|| measure(fan_out_fan_in(64, rounds).expect("builds")).expect("runs"))
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10);
    targets = engine
}
criterion_main!(benches);
