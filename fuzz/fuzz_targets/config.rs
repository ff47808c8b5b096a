//! The experiment-config loader: bytes as UTF-8 -> `Document::from_str` (includes resolved
//! against `configs/`, as if the text were a file there) -> `Experiment::from_document`
//! (deserialisation and validation, reading the files it names). Never runs the experiment.
#![no_main]

use dae_sim::config::loader::Document;
use dae_sim::experiment::{Experiment, Overrides};
use libfuzzer_sys::fuzz_target;
use std::path::PathBuf;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let path = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../configs/fuzz.toml"));
    let Ok(doc) = Document::from_str(text, &path) else { return };
    let _ = Experiment::from_document(doc, &path, &Overrides::default());
});
