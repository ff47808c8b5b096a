//! `--dump-outputs DIR` and `--dump-inputs`: every simulated output tensor, and the inputs it was
//! computed from, as NumPy `.npy` files, so dae-sim can be checked against PyTorch or NumPy
//! without its procedural tables.
//!
//! ```text
//! DIR/<workload>/<system>/output.npy   f32 [bags, dim]: the simulated outputs (DAE and CPU
//!                                      systems; the analytic GPU model computes none; of the
//!                                      first batch in a workload of several)
//! DIR/<workload>/inputs/offsets.npy    i64 [bags + 1]: CSR offsets into indices over all bags
//!                                      of all tables, table-major (bag g is of table g / batch)
//! DIR/<workload>/inputs/indices.npy    i64 [lookups]: the row id of every lookup in its table
//! DIR/<workload>/inputs/bag_tables.npy i64 [bags]: the table of every bag
//! DIR/<workload>/inputs/rows.npy       i64 [n, 2]: the (table, row) pairs the lookups touch,
//!                                      sorted and unique
//! DIR/<workload>/inputs/table_rows.npy f32 [n, dim]: the values of those rows
//! ```
//!
//! So `output[g] = sum of table_rows[k]` over the lookups `j` in `offsets[g]..offsets[g + 1]`,
//! where `rows[k] = (bag_tables[g], indices[j])` (lookups of a workload's `padding_idx` left
//! out, as `nn.EmbeddingBag(padding_idx=...)` does; `table_rows` holds the values as the loads
//! read them: f16/bf16 rows converted, int8 rows dequantized). A TT-EmbeddingBag's rows are its rows as
//! stored: the rows of `rank` values of its tensor-train cores that the lookups' slices cover
//! (`compiler::TtShape` gives the storage order), from which its rows are contracted.

use crate::experiment::{Experiment, Outcome, SystemPlan};
use crate::npy::{self, NpyError, Writer};
use compiler::{EmbeddingBagInstance, WorkloadSpec};
use sim_core::procedural::{column_key, format_value, row_params_key};
use std::io;
use std::path::{Path, PathBuf};
use thiserror::Error;

/// The folder of a workload's inputs, beside its systems' folders.
pub const INPUTS: &str = "inputs";

/// What to dump, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DumpOptions {
    /// The folder to write into (created if missing).
    pub dir: PathBuf,
    /// Also write each workload's inputs.
    pub inputs: bool,
}

/// Why a dump could not be written.
#[derive(Debug, Error)]
pub enum DumpError {
    /// A folder could not be created.
    #[error("creating directory {}: {error}", path.display())]
    Dir {
        /// The folder.
        path: PathBuf,
        /// What the system said.
        error: io::Error,
    },
    /// A workload or system name cannot name a folder.
    #[error("cannot dump {what} \"{name}\": {why}")]
    Name {
        /// "workload" or "system".
        what: &'static str,
        /// The name.
        name: String,
        /// Why not.
        why: &'static str,
    },
    /// A file could not be written.
    #[error(transparent)]
    Npy(#[from] NpyError),
}

/// Why `name` cannot be a single folder name, if it cannot.
pub(crate) fn bad_name(name: &str) -> Option<&'static str> {
    if name.is_empty() || name == "." || name == ".." {
        Some("the name is not a folder name")
    } else if name.contains(['/', '\\', '\0']) {
        Some("the name holds a path separator")
    } else {
        None
    }
}

/// Systems whose outputs are dumped: those simulated cycle by cycle.
fn dumped_systems(exp: &Experiment) -> impl Iterator<Item = &str> {
    exp.systems.iter().filter(|(_, p)| matches!(p, SystemPlan::Dae(_))).map(|(n, _)| n.as_str())
}

/// Checks, before anything runs, that every name can be a folder and that `opts.dir` can be
/// created, so a bad `--dump-outputs` fails at once rather than after the simulations.
pub fn check(exp: &Experiment, opts: &DumpOptions) -> Result<(), DumpError> {
    for w in &exp.file.workload {
        if let Some(why) = bad_name(&w.name) {
            return Err(DumpError::Name { what: "workload", name: w.name.clone(), why });
        }
    }
    for s in dumped_systems(exp) {
        if let Some(why) = bad_name(s) {
            return Err(DumpError::Name { what: "system", name: s.to_string(), why });
        }
        if opts.inputs && s == INPUTS {
            let why = "with --dump-inputs its folder would be that of the inputs; rename the system";
            return Err(DumpError::Name { what: "system", name: s.to_string(), why });
        }
    }
    create_dir(&opts.dir)
}

fn create_dir(path: &Path) -> Result<(), DumpError> {
    std::fs::create_dir_all(path).map_err(|error| DumpError::Dir { path: path.to_path_buf(), error })
}

/// Writes every outcome's output tensor (and, with `opts.inputs`, every workload's inputs);
/// returns the files written. Pairs that failed or computed no outputs are skipped (and an
/// `output.npy` left there by an earlier run removed); outputs that differ from the reference
/// are written all the same.
pub fn dump(exp: &Experiment, outcomes: &[Outcome], opts: &DumpOptions) -> Result<Vec<PathBuf>, DumpError> {
    check(exp, opts)?;
    let mut files = Vec::new();
    for spec in &exp.file.workload {
        let dir = opts.dir.join(&spec.name);
        if opts.inputs {
            let inst = exp.instance(spec);
            files.extend(write_inputs(&dir.join(INPUTS), spec, &inst)?);
        }
        for o in outcomes.iter().filter(|o| o.workload == spec.name) {
            let sys_dir = dir.join(&o.system);
            let path = sys_dir.join("output.npy");
            let Some(out) = o.result.as_ref().ok().and_then(|m| m.outputs.as_ref()) else {
                // No outputs this time: an earlier run's file would pass for this run's.
                let _ = std::fs::remove_file(&path);
                continue;
            };
            create_dir(&sys_dir)?;
            npy::write(&path, &[spec.bags() as usize, spec.out_width() as usize], out)?;
            files.push(path);
        }
    }
    Ok(files)
}

/// The table of every bag (bag `g` belongs to table `g / batch`).
fn bag_tables(spec: &WorkloadSpec, bags: usize) -> impl Iterator<Item = u32> {
    let batch = spec.batch.max(1) as usize;
    (0..bags).map(move |g| (g / batch) as u32)
}

/// The (table, row) pairs the lookups of `inst` touch, sorted and unique.
pub fn touched_rows(spec: &WorkloadSpec, inst: &EmbeddingBagInstance) -> Vec<(u32, u32)> {
    let mut rows = inst.bag_rows(spec);
    // Knowledge-graph triples also read their head (entity table 0) and relation (table 1).
    if let Some(kg) = &inst.kg {
        rows.extend(kg.heads.iter().map(|&h| (0, h)));
        rows.extend(kg.relations.iter().map(|&r| (1, r)));
    }
    rows.sort_unstable();
    rows.dedup();
    rows
}

/// Writes the inputs of `inst` into `dir` (see the module's description); returns the files.
pub fn write_inputs(
    dir: &Path,
    spec: &WorkloadSpec,
    inst: &EmbeddingBagInstance,
) -> Result<Vec<PathBuf>, DumpError> {
    create_dir(dir)?;
    let bags = inst.offsets.len().saturating_sub(1);
    // Rows as stored: a TT table's rows are its cores' rows of `rank` values.
    let dim = spec.stored_dim() as usize;
    let offsets: Vec<i64> = inst.offsets.iter().map(|&o| i64::from(o)).collect();
    let indices: Vec<i64> = inst.indices.iter().map(|&i| i64::from(i)).collect();
    let tables: Vec<i64> = bag_tables(spec, bags).map(i64::from).collect();
    let rows = touched_rows(spec, inst);
    let pairs: Vec<i64> = rows.iter().flat_map(|&(t, r)| [i64::from(t), i64::from(r)]).collect();
    let file = |name: &str| dir.join(name);
    npy::write(&file("offsets.npy"), &[offsets.len()], &offsets)?;
    npy::write(&file("indices.npy"), &[indices.len()], &indices)?;
    npy::write(&file("bag_tables.npy"), &[tables.len()], &tables)?;
    npy::write(&file("rows.npy"), &[rows.len(), 2], &pairs)?;
    // The row values, as the reference computes them (`EmbeddingBagInstance::reference`), one
    // row at a time: the rows of a large workload take more memory than its indices.
    let mut w = Writer::<f32>::create(&file("table_rows.npy"), &[rows.len(), dim])?;
    let mut keys: Vec<u64> = Vec::new();
    let mut keyed_table = None;
    let mut values = vec![0.0f32; dim];
    // Values as the loads read them: f16/bf16 converted, int8 dequantized (`q * scale + bias`).
    let format = if spec.tt.is_some() { sim_core::procedural::TableFormat::F32 } else { spec.dtype.format() };
    let mut params_key = 0;
    for &(table, row) in &rows {
        if keyed_table != Some(table) {
            keys = (0..spec.stored_dim()).map(|k| column_key(inst.table_seed, table, k)).collect();
            params_key = row_params_key(inst.table_seed, table);
            keyed_table = Some(table);
        }
        for (v, &key) in values.iter_mut().zip(&keys) {
            *v = format_value(format, key, params_key, u64::from(row));
        }
        w.extend(&values)?;
    }
    w.finish()?;
    let mut written: Vec<PathBuf> = ["offsets", "indices", "bag_tables", "rows", "table_rows"]
        .iter()
        .map(|n| file(&format!("{n}.npy")))
        .collect();
    // What an op reads besides bags: per-lookup weights, a triple's head and relation, the
    // edge list of message passing (`[n, 2]`: source, destination).
    if let Some(weights) = &inst.weights {
        npy::write(&file("weights.npy"), &[weights.len()], weights)?;
        written.push(file("weights.npy"));
    }
    if let Some(kg) = &inst.kg {
        for (name, v) in [("heads", &kg.heads), ("relations", &kg.relations)] {
            let v: Vec<i64> = v.iter().map(|&x| i64::from(x)).collect();
            npy::write(&file(&format!("{name}.npy")), &[v.len()], &v)?;
            written.push(file(&format!("{name}.npy")));
        }
    }
    if let Some(edges) = &inst.edges {
        let flat: Vec<i64> = edges.iter().flat_map(|&(s, d)| [i64::from(s), i64::from(d)]).collect();
        npy::write(&file("edges.npy"), &[edges.len(), 2], &flat)?;
        written.push(file("edges.npy"));
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_are_not_one_folder_are_refused() {
        for bad in ["", ".", "..", "a/b", "a\\b", "../x"] {
            assert!(bad_name(bad).is_some(), "{bad:?}");
        }
        for good in ["dae", "dlrm-rm1", "h100 sxm", "x.y", "..a"] {
            assert_eq!(bad_name(good), None, "{good:?}");
        }
    }
}
