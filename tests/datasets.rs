//! The workloads of real shapes and data: MLPerf DLRM-v2's tables (per-table rows and bag
//! sizes), and their simulated outputs equal the reference.

mod common;

use common::{configs, dae_sim, small_experiment, temp_dir};
use dae_sim::experiment::{Experiment, Overrides};

/// The rows of `stdout`'s main table naming `workload`.
fn rows_of<'a>(stdout: &'a str, workload: &str) -> Vec<&'a str> {
    stdout
        .lines()
        .filter(|l| {
            let mut f = l.split_whitespace().skip(1);
            f.next() == Some(workload) && f.next().is_some_and(|m| m.starts_with("cycle-") || m == "analytic")
        })
        .collect()
}

/// Tables of different rows and bag sizes (mean pooling, a padding index, f16 rows) run verified
/// on the DAE chip, on the plain cores and with tables mapped to cores by cost.
#[test]
fn tables_of_their_own_rows_and_bag_sizes_run_verified() {
    let dir = temp_dir("per-table");
    let wl = dir.join("mixed.toml");
    std::fs::write(
        &wl,
        "name = \"mixed\"\nop = \"embedding_bag\"\npooling = \"mean\"\ntables = 4\nrows = 3000\ndim = 24\n\
         dtype = \"f16\"\nbatch = 6\npadding_idx = 2\n\
         table_indices = [{ rows = 40, bag_size = 3 }, { bag_size = 1 }, { rows = 9, bag_size = 30 }, \
         { rows = 700, bag_size = 5, distribution = \"zipf\", alpha = 1.1 }]\n\
         [indices]\ndistribution = \"uniform\"\n",
    )
    .unwrap();
    let extra = format!(
        "\n[[system]]\nname = \"mapped\"\ninclude = \"{}\"\ncores = 4\ncompiler = {{ partition = \"tables\" }}\n\
         \n[[workload]]\ninclude = \"{}\"\n",
        configs().join("systems/dae-hbm3.toml").display(),
        wl.display()
    );
    let cfg = small_experiment(&dir, &extra);
    let exp = Experiment::load(&cfg, &Overrides::default()).unwrap();
    let spec = exp.file.workload.iter().find(|w| w.name == "mixed").unwrap();
    assert_eq!(exp.instance(spec).indices.len(), 6 * 39);
    let o =
        dae_sim(&["--config", cfg.to_str().unwrap(), "--quiet", "--out", dir.join("out").to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&o.stderr));
    let rows = rows_of(&stdout, "mixed");
    assert_eq!(rows.len(), 4, "{stdout}");
    assert_eq!(rows.iter().filter(|l| l.ends_with("verified")).count(), 3, "{stdout}");
}

/// The shipped DLRM-v2 workload fits both systems' 80 GiB of HBM in f16 (52.3 GB of tables),
/// and in f32 (104.5 GB) it is refused with the memory's capacity, not run.
#[test]
fn mlperf_dlrm_v2_fits_the_hbm_in_f16_and_not_in_f32() {
    let dir = temp_dir("dlrm-v2");
    let wl = configs().join("workloads/dlrm-mlperf-v2.toml");
    let extra = format!("\n[[workload]]\ninclude = \"{}\"\nbatch = 2\n", wl.display());
    let cfg = small_experiment(&dir, &extra);
    let o =
        dae_sim(&["--config", cfg.to_str().unwrap(), "--quiet", "--out", dir.join("out").to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&o.stderr));
    let rows = rows_of(&stdout, "dlrm-mlperf-v2");
    assert_eq!(rows.len(), 3, "{stdout}");
    assert_eq!(rows.iter().filter(|l| l.ends_with("verified")).count(), 2, "{stdout}");
    let f32 = format!("\n[[workload]]\ninclude = \"{}\"\nbatch = 2\ndtype = \"f32\"\n", wl.display());
    let cfg = small_experiment(&dir, &f32);
    let o =
        dae_sim(&["--config", cfg.to_str().unwrap(), "--quiet", "--out", dir.join("out").to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(
        stderr.contains("dlrm-mlperf-v2 on dae") && stderr.contains("more than the memory's"),
        "{stderr}"
    );
    assert!(stderr.contains("dlrm-mlperf-v2 on h100") && !stderr.contains("panicked"), "{stderr}");
}
