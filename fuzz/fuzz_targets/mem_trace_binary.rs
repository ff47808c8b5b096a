//! The binary memory-trace reader over the bytes, to the end or the first error.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mem_model::trace::{BinaryReader, TraceSource};

fuzz_target!(|data: &[u8]| {
    let Ok(mut source) = BinaryReader::new(data, "fuzz.bin") else { return };
    while let Ok(Some(_)) = source.next_record() {}
    let _ = source.position();
});
