//! DRAM model speed: simulated requests per host second on HBM3-6400 (32 pseudo-channels),
//! one million 64 B reads, random and streaming, through the engine and its links.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use mem_model::dram::bench::{BenchConfig, Pattern, run};
use mem_model::dram::{DramPreset, DramSpec};

fn hbm3() -> DramSpec {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../configs/memory/hbm3-6400.toml");
    let text = std::fs::read_to_string(path).expect("configs/memory/hbm3-6400.toml");
    let preset: DramPreset = toml::from_str(&text).expect("the preset parses");
    DramSpec::from_preset(preset).expect("the preset resolves")
}

fn dram(c: &mut Criterion) {
    let spec = hbm3();
    let requests = 1_000_000u64;
    let mut g = c.benchmark_group("dram_hbm3_6400");
    g.throughput(Throughput::Elements(requests));
    for (name, pattern) in [("random", Pattern::Random), ("streaming", Pattern::Streaming)] {
        let cfg = BenchConfig::new(&spec, pattern, requests);
        g.bench_function(name, |b| b.iter(|| run(&spec, cfg).expect("the benchmark runs")));
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10);
    targets = dram
}
criterion_main!(benches);
