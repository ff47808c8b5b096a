//! The dataset text readers: SNAP, Cora and Matrix Market edge lists, integer KG triples, KG
//! dictionaries with triples of names, and Criteo TSV records. The first byte picks the reader
//! and its options; the rest, as UTF-8, is the file.
#![no_main]

use compiler::GraphFormat;
use compiler::kg_dict::{Dictionary, parse_named_triples};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else { return };
    let Ok(text) = std::str::from_utf8(rest) else { return };
    // Vertex counts stay small so a large id is an error, not a large allocation.
    let vertices = Some(1 + u64::from(pick >> 4) * 257);
    let (symmetric, dedup) = (pick & 0x10 != 0, pick & 0x20 != 0);
    match pick % 6 {
        0 => drop(compiler::graph::parse_edge_list(text, GraphFormat::Snap, symmetric, dedup, vertices)),
        1 => drop(compiler::graph::parse_edge_list(text, GraphFormat::Cora, symmetric, dedup, vertices)),
        2 => drop(compiler::graph::parse_edge_list(text, GraphFormat::Mtx, symmetric, dedup, vertices)),
        3 => drop(compiler::parse_triples(text, 1000, 50)),
        4 => {
            // A dictionary, then triples of its names, split at the first NUL.
            let (dict, triples) = text.split_once('\0').unwrap_or((text, ""));
            if let Ok(d) = Dictionary::parse(dict, "fuzz.dict") {
                let _ = parse_named_triples(triples, &d, &d);
            }
        }
        _ => {
            for line in text.lines() {
                if let Ok(record) = dae_sim::criteo::parse_record(line) {
                    for value in record {
                        let _ = dae_sim::criteo::row(value, 10_000_000, dae_sim::criteo::Missing::Zero);
                    }
                }
            }
        }
    }
});
