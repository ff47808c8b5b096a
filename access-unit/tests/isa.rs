//! The AU ISA's text form and verifier: every construct round-trips, bad programs get typed,
//! clear errors, and no text makes the parser panic.

use access_unit::{AuError, Bounds, Layer, Operand, StreamKind, parse};
use proptest::prelude::*;

/// One program with every construct: dense/range/indexed TUs, single/lockstep/broadcast
/// layers, ite/load/row/alu/fwd streams (both row flavours, lookup and non-temporal rows,
/// constant and stream operands),
/// callbacks on every event with and without operands.
const EVERY_KIND: &str = ".au
tu t0 = dense 0..4 broadcast
tu t1 = range s1..s2 in t0 lockstep 8
tu t2 = indexed 0x3000 from s7 count 2 in t1
s0 = ite t0
s1 = load.u32 [0x1000 + s0 * 4] in t0
s2 = load.u32 [0x1004 + s0 * 4] in t0
s3 = ite t1
s4 = load.u32 [0x2000 + s3 * 4] in t1
s5 = load.row 256 [0x100000 + s4 * 256] in t1 !lookup
s6 = load.row 64 [0x200000 + 3 * 64] in t1 !nt
s7 = alu.mul s3, 2 in t1
s8 = alu.add s7, -1 in t1
s9 = alu.sub s3, s0 in t1
s10 = alu.div s3, 3 in t1
s11 = alu.rem s3, 3 in t1
s12 = fwd s0 in t1
s13 = fwd 42 in t1
s14 = ite t2
s15 = fwd s3 in t2
on t0 begin -> 9
on t0 iter -> 10 (s0)
on t1 begin -> 0
on t1 iter -> 1 (s5, s12, s13, s8)
on t2 begin -> 5 (s3)
on t2 iter -> 6 (s14, s15)
on t2 end -> 7
on t1 end -> 2 (s0)
on t0 end -> 3
";

#[test]
fn every_construct_round_trips() {
    let p = parse(EVERY_KIND).unwrap();
    let text = p.to_string();
    assert_eq!(text, EVERY_KIND, "the printer writes the canonical form back");
    assert_eq!(parse(&text).unwrap(), p);
    assert_eq!(parse(&text).unwrap().to_string(), text);
    assert_eq!(p.tus[0].layer, Layer::Broadcast);
    assert_eq!(p.tus[1].layer, Layer::Lockstep { lanes: 8 });
    assert_eq!(p.tus[2].layer, Layer::Single);
    assert_eq!(
        p.tus[2].bounds,
        Bounds::Indexed {
            base: 0x3000,
            from: Operand::Stream(access_unit::StreamId(7)),
            count: Operand::Const(2)
        }
    );
    assert_eq!(p.streams[13].kind, StreamKind::Fwd { src: Operand::Const(42) });
    assert_eq!(p.max_lanes(), 8);
}

#[test]
fn mem_is_the_general_name_of_load_and_single_may_be_spelled_out() {
    let a = parse(
        ".au\ntu t0 = dense 0..4 single\ns0 = ite t0\ns1 = mem.u32 [0x10 + s0 * 4] in t0\n\
         s2 = mem.row 64 [0x100 + s1 * 64] in t0 !lookup\non t0 iter -> 1 (s2)\n",
    )
    .unwrap();
    let b = parse(
        ".au\ntu t0 = dense 0..4\ns0 = ite t0\ns1 = load.u32 [0x10 + s0 * 4] in t0\n\
         s2 = load.row 64 [0x100 + s1 * 64] in t0 !lookup\non t0 iter -> 1 (s2)\n",
    )
    .unwrap();
    assert_eq!(a, b);
    assert_eq!(parse(&a.to_string()).unwrap().to_string(), b.to_string());
}

fn err(text: &str) -> String {
    parse(text).unwrap_err().to_string()
}

#[test]
fn the_verifier_rejects_bad_layers_references_and_limits() {
    let h = ".au\n";
    assert!(err(&format!("{h}tu t0 = dense 0..4 lockstep 1\n")).contains("lockstep over 1 lanes"));
    assert!(err(&format!("{h}tu t0 = dense 0..4 lockstep 65\n")).contains("must be 2 to 64"));
    assert!(
        err(&format!("{h}tu t0 = dense 0..4\ntu t1 = dense 0..4 in t0 lockstep 4\n"))
            .contains("parent must be a broadcast layer")
    );
    assert!(
        err(&format!("{h}tu t0 = dense 0..4 broadcast\ntu t1 = dense 0..4 in t0\n"))
            .contains("must have a lockstep layer below")
    );
    assert!(err(&format!("{h}tu t0 = dense 0..4 broadcast\n")).contains("must have a lockstep layer below"));
    assert!(err(&format!("{h}tu t0 = dense 0..4 vector 8\n")).contains("unknown layer \"vector\""));
    assert!(
        err(&format!("{h}tu t0 = indexed 0x100 from s0 count 4\ns0 = ite t0\n"))
            .contains("s0 is not a stream of a TU enclosing t0")
    );
    assert!(err(&format!("{h}tu t0 = indexed 0x100 from -1 count 4\n")).contains("negative"));
    assert!(
        err(&format!("{h}tu t0 = dense 0..4\ns0 = ite t0\ns1 = fwd s0 in t0\n"))
            .contains("s0 is not a stream of a TU enclosing t0")
    );
    assert!(
        err(&format!("{h}tu t0 = dense 0..4\ns0 = load.row 0 [0x0 + 1 * 4] in t0\n"))
            .contains("a row of 0 bytes")
    );
    assert!(
        err(&format!("{h}tu t0 = dense 0..4\ns0 = load.row 2000000 [0x0 + 1 * 4] in t0\n"))
            .contains("must be 1 to 1048576")
    );
    assert!(
        err(&format!("{h}tu t0 = dense 0..4\ns0 = ite t0\non t0 iter -> 1 (s0, s0, s0, s0, s0)\n"))
            .contains("too many callback operands: 5")
    );
    assert!(err(&format!("{h}tu t0 = range s0..s1\n")).contains("a range TU needs a parent"));
    assert!(err(&format!("{h}tu t0 = spiral 0..4\n")).contains("unknown traversal kind"));
    // Typed errors, not just strings.
    let p = access_unit::AuProgram {
        tus: vec![access_unit::Tu {
            parent: None,
            bounds: Bounds::Dense { begin: 0, end: 1 },
            layer: Layer::Lockstep { lanes: 0 },
        }],
        ..Default::default()
    };
    assert_eq!(p.verify(), Err(AuError::BadLanes { tu: 0, lanes: 0, max: 64 }));
}

#[test]
fn a_verifier_error_names_the_line_of_its_tu_stream_or_callback() {
    let line = |text: &str| parse(text).unwrap_err().line;
    // Each program is fine but for the statement on line 4 (comments and blanks count).
    let tu = ".au\ntu t0 = dense 0..4\n# a comment\ntu t1 = dense 0..4 in t0 lockstep 1\ns0 = ite t0\n";
    assert_eq!(line(tu), 4);
    let stream = ".au\ntu t0 = dense 0..4\n\ns0 = alu.div 1, 16 in t5\ns1 = ite t0\n";
    assert_eq!(line(stream), 4);
    let callback = ".au\ntu t0 = dense 0..4\ns0 = ite t0\non t3 iter -> 1\non t0 end -> 2\n";
    assert_eq!(line(callback), 4);
    // A whole-program error has no statement of its own: it points at the end.
    assert_eq!(line(".au\n\n# nothing\n"), 3);
}

proptest! {
    #[test]
    fn no_text_makes_the_parser_panic(text in "\\PC{0,200}") {
        let _ = parse(&format!(".au\n{text}"));
        let _ = parse(&text);
    }

    #[test]
    fn no_truncation_or_edit_of_a_valid_program_panics(cut in 0usize..900, byte in 0u8..128, at in 0usize..900) {
        let bytes = EVERY_KIND.as_bytes();
        let cut = cut.min(bytes.len());
        let _ = parse(&String::from_utf8_lossy(&bytes[..cut]));
        let mut edited = bytes.to_vec();
        let at = at.min(edited.len() - 1);
        edited[at] = byte;
        if let Ok(p) = parse(&String::from_utf8_lossy(&edited)) {
            // Whatever parses prints back to text that parses to the same program.
            prop_assert_eq!(parse(&p.to_string()).unwrap(), p);
        }
    }
}

#[test]
fn row_flags_parse_in_either_order_and_print_in_one() {
    let a = ".au\ntu t0 = dense 0..4\ns0 = ite t0\ns1 = load.row 64 [0x1000 + s0 * 64] in t0 !nt !lookup\n";
    let b = ".au\ntu t0 = dense 0..4\ns0 = ite t0\ns1 = load.row 64 [0x1000 + s0 * 64] in t0 !lookup !nt\n";
    assert_eq!(parse(a).unwrap(), parse(b).unwrap());
    assert_eq!(parse(a).unwrap().to_string(), b);
    // Each at most once.
    assert!(parse(&b.replace("!lookup !nt", "!nt !nt")).is_err());
}
