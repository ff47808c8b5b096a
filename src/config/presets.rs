//! Presets named on the command line (`mem --memory hbm3-h100`, `gpu-calibrate --system h200`):
//! a TOML file of a folder of `configs/`, looked up under the working directory, then under the
//! source tree the binary was built from, so a name works from any directory.

use crate::config::loader::closest;
use std::path::{Path, PathBuf};

/// A name that matches no preset of its kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownPreset {
    /// " (did you mean `x`?)" or nothing.
    pub hint: String,
    /// The presets of that kind, sorted.
    pub available: Vec<String>,
}

/// Where presets of `folder` (`memory`, `systems`) are searched: `configs/<folder>` under the
/// working directory, then under the source tree the binary was built from.
pub fn dirs(folder: &str) -> Vec<PathBuf> {
    let here = Path::new("configs").join(folder);
    let built = Path::new(env!("CARGO_MANIFEST_DIR")).join("configs").join(folder);
    if here.canonicalize().ok() == built.canonicalize().ok() { vec![here] } else { vec![here, built] }
}

/// `arg` as a file (it exists, holds a `/` or ends in `.toml`), else the preset of `folder` it
/// names. `of_kind` says whether a file of the folder is a preset of the kind asked for (the
/// folders also hold files that only others include); it lists the names for the error.
pub fn resolve(arg: &str, folder: &str, of_kind: impl Fn(&Path) -> bool) -> Result<PathBuf, UnknownPreset> {
    let path = Path::new(arg);
    if path.exists() || arg.contains('/') || arg.ends_with(".toml") {
        return Ok(path.to_path_buf());
    }
    let mut names = Vec::new();
    for dir in dirs(folder) {
        let candidate = dir.join(format!("{arg}.toml"));
        if candidate.is_file() {
            return Ok(candidate);
        }
        for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let p = e.path();
            if p.extension().is_some_and(|x| x == "toml")
                && let Some(stem) = p.file_stem().and_then(|s| s.to_str())
                && of_kind(&p)
            {
                names.push(stem.to_owned());
            }
        }
    }
    names.sort();
    names.dedup();
    let hint = closest(arg, names.iter().map(String::as_str))
        .map_or(String::new(), |n| format!(" (did you mean `{n}`?)"));
    Err(UnknownPreset { hint, available: names })
}
