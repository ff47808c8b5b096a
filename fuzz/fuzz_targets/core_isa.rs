//! The core ISA text parser; a program that parses must print and parse back to itself.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(program) = exec_core::parse(text) else { return };
    let printed = exec_core::print(&program);
    let again = exec_core::parse(&printed)
        .unwrap_or_else(|e| panic!("the printed program does not parse: {e}\n{printed}"));
    assert_eq!(program, again, "print then parse changed the program:\n{printed}");
});
