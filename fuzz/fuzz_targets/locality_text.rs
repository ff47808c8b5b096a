//! The parser of Meta's `locality_stats.txt` (`dae-sim trace locality`): the bytes as UTF-8
//! text, every block parsed and its derived figures computed, or the first error.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(blocks) = dae_sim::locality::parse(text, "fuzz.txt") {
        for b in &blocks {
            let _ = (b.unique_fraction(), b.lookups_per_table());
            for bin in &b.bins {
                let _ = bin.label();
            }
        }
    }
});
