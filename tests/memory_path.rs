//! The DAE and CPU systems' path to memory and their launch: `memory.link_latency` adds its
//! time to every lookup that reaches the memory, twice (there and back), and `launch_overhead`
//! adds its time to each run once; a GPU system refuses both (it has its own).

#[allow(dead_code)] // this suite needs only some of the shared helpers
mod common;

use common::{configs, run_config, run_results, temp_dir};
use std::path::Path;

/// Runs two plain-CPU systems on the small embedding bag, the preset and one with `tweak`
/// written into its `[[system]]`: each run's (lookup-latency p50, simulated time) in ps.
fn preset_and(tweak: &str) -> [(u64, u64); 2] {
    let dir = temp_dir("memory-path");
    let dae = configs().join("systems/dae-hbm3.toml");
    let wl = configs().join("workloads/emb-small.toml");
    let text = format!(
        "[experiment]\nname = \"path\"\nseed = 7\n\n\
         [[system]]\nname = \"preset\"\ninclude = \"{dae}\"\ncores = 4\naccess_unit = \"none\"\n\n\
         [[system]]\nname = \"tweaked\"\ninclude = \"{dae}\"\ncores = 4\naccess_unit = \"none\"\n{tweak}\n\n\
         [[workload]]\ninclude = \"{wl}\"\n",
        dae = dae.display(),
        wl = wl.display(),
    );
    let cfg = dir.join("path.toml");
    std::fs::write(&cfg, text).unwrap();
    let json = run_results(&cfg, &dir.join("out"));
    let runs = json["runs"].as_array().unwrap();
    let get = |name: &str| {
        let r = runs.iter().find(|r| r["system"] == name).unwrap();
        (r["lookup_latency_ps"]["p50"].as_u64().unwrap(), r["sim_time_ps"].as_u64().unwrap())
    };
    [get("preset"), get("tweaked")]
}

#[test]
fn the_memory_link_adds_its_latency_there_and_back() {
    // The preset's 12.33 ns is 37 core cycles each way; "0.3ns" is the one-cycle minimum.
    // A lookup that reaches the memory crosses the link twice: 2 x 36 cycles = 24 ns.
    let [preset, near] = preset_and("memory.link_latency = \"0.3ns\"");
    let saved = preset.0 as i64 - near.0 as i64;
    assert!((23_000..=25_000).contains(&saved), "p50 {} vs {} ps", preset.0, near.0);
    assert!(near.1 < preset.1, "{near:?} {preset:?}");
}

#[test]
fn the_launch_overhead_adds_its_time_once() {
    // The preset's fork and join (1 us) against none: the simulated work is the same.
    let [preset, none] = preset_and("launch_overhead = \"0ns\"");
    assert_eq!(preset.1 - none.1, 1_000_000, "{preset:?} {none:?}");
    assert_eq!(preset.0, none.0);
}

#[test]
fn a_gpu_refuses_the_dae_systems_memory_link_and_launch() {
    let dir = temp_dir("memory-path-gpu");
    let h100 = configs().join("systems/h100-sxm.toml");
    let wl = configs().join("workloads/emb-small.toml");
    for (tweak, hint) in [
        ("memory.link_latency = \"10ns\"", "gpu_sim.dram_link_cycles"),
        ("launch_overhead = \"1us\"", "gpu.launch_overhead"),
    ] {
        let text = format!(
            "[experiment]\nname = \"g\"\n\n[[system]]\nname = \"h100\"\ninclude = \"{}\"\n{tweak}\n\n\
             [[workload]]\ninclude = \"{}\"\n",
            h100.display(),
            wl.display()
        );
        let cfg = dir.join("gpu.toml");
        std::fs::write(&cfg, text).unwrap();
        let o = run_config(&cfg, &dir.join("o"));
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains("gpu.toml:7") && err.contains(hint), "{err}");
    }
}

#[test]
fn the_memory_link_converts_to_whole_cycles_exactly() {
    // At 3 GHz, 12 ns is 36 cycles (a 333 ps whole-ps period once made it 37); 12.33 ns, the
    // preset's, is 37; anything shorter than a cycle is one.
    let dir = temp_dir("memory-link-cycles");
    for (latency, cycles) in [("12ns", 36u32), ("12.33ns", 37), ("0.1ns", 1), ("333ps", 1), ("334ps", 2)] {
        let sys = one_core_plan(&dir, &format!("memory.link_latency = \"{latency}\""));
        assert_eq!(sys.memory_link_cycles, cycles, "{latency}");
    }
}

/// The plan of a one-core system from the DAE preset with `tweak` written into its
/// `[[system]]`, on the small embedding bag (loaded, not run).
fn one_core_plan(dir: &Path, tweak: &str) -> dae_sim::system::DaeSystem {
    let text = format!(
        "[experiment]\nname = \"l\"\n[[system]]\nname = \"dae\"\ninclude = \"{}\"\ncores = 1\n{tweak}\n\
         [[workload]]\ninclude = \"{}\"\n",
        configs().join("systems/dae-hbm3.toml").display(),
        configs().join("workloads/emb-small.toml").display()
    );
    let cfg = dir.join("l.toml");
    std::fs::write(&cfg, text).unwrap();
    let exp = dae_sim::experiment::Experiment::load(&cfg, &Default::default()).unwrap();
    let dae_sim::experiment::SystemPlan::Dae(sys) = &exp.systems[0].1 else { panic!("a DAE system") };
    (**sys).clone()
}

#[test]
fn llc_banks_use_every_set_whatever_the_network_granule() {
    // A 32 KiB table over four 4 KiB LLC banks (16 KiB in all): with 256 B or 4 KiB runs per
    // bank, each bank once indexed its sets by line / banks as if single lines were
    // interleaved, used a quarter of them (or less) and missed 17x as often.
    let dir = temp_dir("llc-granule");
    let dae = configs().join("systems/dae-hbm3.toml");
    let wl = dir.join("table.toml");
    std::fs::write(
        &wl,
        "name = \"t32k\"\nop = \"embedding_bag\"\npooling = \"sum\"\ntables = 1\nrows = 128\ndim = 64\n\
         dtype = \"f32\"\nbatch = 256\nbag_size = 32\n[indices]\ndistribution = \"uniform\"\n",
    )
    .unwrap();
    let mut text = String::from("[experiment]\nname = \"g\"\nseed = 42\n");
    for (name, granule) in [("g64", "64B"), ("g256", "256B"), ("g4k", "4KiB")] {
        text += &format!(
            "[[system]]\nname = \"{name}\"\ninclude = \"{}\"\ncores = 4\ncaches.llc.size = \"16KiB\"\n\
             noc = {{ topology = {{ kind = \"crossbar\", cycles = 8 }}, granule = \"{granule}\" }}\n",
            dae.display()
        );
    }
    text += &format!("[[workload]]\ninclude = \"{}\"\n", wl.display());
    let cfg = dir.join("g.toml");
    std::fs::write(&cfg, text).unwrap();
    let json = run_results(&cfg, &dir.join("out"));
    let misses = |name: &str| {
        let r = json["runs"].as_array().unwrap().iter().find(|r| r["system"] == name).unwrap();
        (0..4).map(|b| r["stats"][format!("llc{b}")]["misses"].as_u64().unwrap()).sum::<u64>()
    };
    let line = misses("g64");
    // The table and its indices are about 1000 lines: compulsory misses, a few more.
    assert!((900..1300).contains(&line), "{line}");
    for name in ["g256", "g4k"] {
        let m = misses(name);
        assert!(m.abs_diff(line) * 20 < line, "{name}: {m} misses against {line} with line interleave");
    }
}

#[test]
fn a_plain_cores_cost_model_counts_the_tighter_of_its_two_miss_limits() {
    // The core bounds its misses by core.max_outstanding and by its L1D's MSHRs; the partition's
    // cost model used the MSHRs alone.
    let dir = temp_dir("miss-limits");
    for (tweak, want) in [("core.max_outstanding = 4", 4u32), ("caches.l1d.mshrs = 8", 8), ("", 16)] {
        let sys = one_core_plan(&dir, &format!("access_unit = \"none\"\n{tweak}"));
        assert_eq!(sys.memory_costs().outstanding, want, "{tweak}");
    }
}
