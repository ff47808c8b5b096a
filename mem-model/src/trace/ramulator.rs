//! The Ramulator 2 `LoadStoreTrace` text format: `LD|ST ADDR`, one request per line.
//!
//! Ramulator 2's `LoadStoreTrace` front end splits each line at spaces into exactly two
//! fields: `LD` (a read) or `ST` (a write), then the address, hexadecimal when it starts with
//! `0x` or `0X` and decimal otherwise. Lines carry no time: the requests are injected as fast as
//! the memory accepts them, or at the driver's injection rate. This reader accepts any
//! whitespace between the fields and an address up to 64 bits (Ramulator parses it with
//! `stoll`, so it stops at 63).
//!
//! ```text
//! LD 0x1f40
//! ST 8256
//! ```

use super::error::ParseProblem;
use super::lines::{parse_dec, parse_hex};
use super::text::{TextFormat, TextReader};
use super::{TimeBase, TraceRecord};
use std::io::{self, Write};

/// What a line looks like, for messages.
const SYNTAX: &str = "LD|ST ADDR";

/// Parses one (non-blank, comment-free) line.
pub fn parse_line(line: &str) -> Result<TraceRecord, ParseProblem> {
    let mut fields = line.split_ascii_whitespace();
    let (Some(kind), Some(addr), None) = (fields.next(), fields.next(), fields.next()) else {
        return Err(ParseProblem::Fields {
            expected: 2,
            syntax: SYNTAX,
            found: line.split_ascii_whitespace().count(),
        });
    };
    let write = match kind {
        "LD" => false,
        "ST" => true,
        _ => return Err(ParseProblem::Kind { token: kind.to_owned(), expected: "LD or ST" }),
    };
    let hex = addr.starts_with("0x") || addr.starts_with("0X");
    let value = if hex { parse_hex(addr) } else { parse_dec(addr) };
    let addr = value.ok_or_else(|| ParseProblem::Address {
        token: addr.to_owned(),
        expected: "0x then hexadecimal digits, or decimal digits (at most 64 bits)",
    })?;
    Ok(TraceRecord { addr, write, bytes: None, time: 0, non_temporal: false })
}

/// Writes `rec` as one Ramulator line (hexadecimal address; time and size are dropped).
pub fn write_record<W: Write>(w: &mut W, rec: &TraceRecord) -> io::Result<()> {
    let kind = if rec.write { "ST" } else { "LD" };
    writeln!(w, "{kind} {:#x}", rec.addr)
}

/// The Ramulator text format.
pub struct Ramulator;

impl TextFormat for Ramulator {
    const TIME_BASE: TimeBase = TimeBase::Untimed;
    fn parse_line(line: &str) -> Result<TraceRecord, ParseProblem> {
        parse_line(line)
    }
}

/// A streaming reader of Ramulator `LoadStoreTrace` traces.
pub type RamulatorReader<R> = TextReader<R, Ramulator>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_and_decimal_addresses() {
        assert_eq!(parse_line("LD 0x1f40"), Ok(TraceRecord::read(0x1f40, 0)));
        assert_eq!(parse_line("ST 0X1F40"), Ok(TraceRecord::write(0x1f40, 0)));
        assert_eq!(parse_line("LD 8000"), Ok(TraceRecord::read(8000, 0)));
        assert_eq!(parse_line("ST\t\t64"), Ok(TraceRecord::write(64, 0)));
        // Without the prefix, hex digits are not decimal.
        assert!(matches!(parse_line("LD 1f40"), Err(ParseProblem::Address { .. })));
        assert!(matches!(parse_line("ld 0x40"), Err(ParseProblem::Kind { .. })));
    }

    #[test]
    fn write_then_parse() {
        let mut out = Vec::new();
        write_record(&mut out, &TraceRecord::read(0x40, 5)).unwrap();
        assert_eq!(out, b"LD 0x40\n");
        assert_eq!(parse_line("LD 0x40"), Ok(TraceRecord::read(0x40, 0)));
    }
}
