//! The compiler IR text parser; a function that parses must print and parse back to the same
//! text (compared as text: an f32 NaN constant is not equal to itself).
#![no_main]

use compiler::ir::text::{parse, print};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(func) = parse(text) else { return };
    let printed = print(&func);
    let again = parse(&printed).unwrap_or_else(|e| panic!("the printed IR does not parse: {e}\n{printed}"));
    assert_eq!(printed, print(&again), "print then parse changed the IR:\n{printed}");
});
