//! The DRAMsim3 and Ramulator text trace readers, each over the bytes as a reader, to the end
//! or the first error.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mem_model::trace::{DramSim3Reader, RamulatorReader, TraceSource};

fn drain(mut source: impl TraceSource) {
    // Every record is at least one byte of input, so this ends.
    while let Ok(Some(_)) = source.next_record() {}
    let _ = source.position();
}

fuzz_target!(|data: &[u8]| {
    drain(DramSim3Reader::new(data, "fuzz.trace"));
    drain(RamulatorReader::new(data, "fuzz.trace"));
});
