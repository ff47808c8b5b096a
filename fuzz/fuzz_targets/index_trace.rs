//! The `.daeidx` index-trace reader over the bytes: every section and bag to the end (where the
//! checksum is checked) or the first error.
#![no_main]

use compiler::trace::TraceReader;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(mut reader) = TraceReader::new(data, "fuzz.daeidx".to_string(), Some(data.len() as u64)) else {
        return;
    };
    let mut bag = Vec::new();
    loop {
        match reader.next_section() {
            Ok(Some(_)) => {}
            _ => return,
        }
        let _ = reader.offsets().len();
        while let Ok(Some(_)) = reader.next_bag(&mut bag) {}
    }
});
