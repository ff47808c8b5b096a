//! The DRAMsim3 text trace format: `0xADDR READ|WRITE CYCLE`, one request per line.
//!
//! This is what DRAMsim3's trace-driven CPU reads (`is >> hex >> addr >> op >> dec >> cycle`):
//! a hexadecimal address (the `0x` prefix is optional, as `std::hex` makes it), the request
//! kind, and the memory-clock cycle at which the request arrives at the controller. Fields are
//! separated by any whitespace. DRAMsim3 takes `WRITE`, `write`, `P_MEM_WR` and `BOFF` as
//! writes and anything else as a read; this reader accepts those and `READ`, `read` and
//! `P_MEM_RD` as reads, and rejects any other kind instead of silently reading it, since a typo
//! would otherwise turn writes into reads. Cycles need not increase: a request whose cycle has
//! passed is issued at once, as DRAMsim3 does.
//!
//! ```text
//! 0x1f40 READ 0
//! 0x2040 WRITE 12
//! ```

use super::error::ParseProblem;
use super::lines::{parse_dec, parse_hex};
use super::text::{TextFormat, TextReader};
use super::{TimeBase, TraceRecord};
use std::io::{self, Write};

/// What a line looks like, for messages.
const SYNTAX: &str = "ADDR READ|WRITE CYCLE";

/// Parses one (non-blank, comment-free) line.
pub fn parse_line(line: &str) -> Result<TraceRecord, ParseProblem> {
    let mut fields = line.split_ascii_whitespace();
    let (Some(addr), Some(kind), Some(cycle), None) =
        (fields.next(), fields.next(), fields.next(), fields.next())
    else {
        return Err(ParseProblem::Fields {
            expected: 3,
            syntax: SYNTAX,
            found: line.split_ascii_whitespace().count(),
        });
    };
    let addr = parse_hex(addr).ok_or_else(|| ParseProblem::Address {
        token: addr.to_owned(),
        expected: "a hexadecimal number of at most 64 bits, such as 0x1f40",
    })?;
    let write = match kind {
        "READ" | "read" | "P_MEM_RD" => false,
        "WRITE" | "write" | "P_MEM_WR" | "BOFF" => true,
        _ => {
            return Err(ParseProblem::Kind {
                token: kind.to_owned(),
                expected: "READ or WRITE (also read, write, P_MEM_RD, P_MEM_WR, BOFF)",
            });
        }
    };
    let cycle = parse_dec(cycle).ok_or_else(|| ParseProblem::Cycle { token: cycle.to_owned() })?;
    Ok(TraceRecord { addr, write, bytes: None, time: cycle, non_temporal: false })
}

/// Writes `rec` as one DRAMsim3 line; its `time` is the arrival cycle (the size is not part of
/// the format and is dropped).
pub fn write_record<W: Write>(w: &mut W, rec: &TraceRecord) -> io::Result<()> {
    let kind = if rec.write { "WRITE" } else { "READ" };
    writeln!(w, "{:#x} {kind} {}", rec.addr, rec.time)
}

/// The DramSim3 text format.
pub struct DramSim3;

impl TextFormat for DramSim3 {
    const TIME_BASE: TimeBase = TimeBase::MemoryCycles;
    fn parse_line(line: &str) -> Result<TraceRecord, ParseProblem> {
        parse_line(line)
    }
}

/// A streaming reader of DRAMsim3 traces.
pub type DramSim3Reader<R> = TextReader<R, DramSim3>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_the_dramsim3_spellings() {
        assert_eq!(parse_line("0x1f40 READ 7"), Ok(TraceRecord::read(0x1f40, 7)));
        assert_eq!(parse_line("1F40\tWRITE\t  8"), Ok(TraceRecord::write(0x1f40, 8)));
        assert_eq!(parse_line("0X10 write 0"), Ok(TraceRecord::write(0x10, 0)));
        assert_eq!(parse_line("0x10 P_MEM_WR 0").map(|r| r.write), Ok(true));
        assert_eq!(parse_line("0x10 BOFF 0").map(|r| r.write), Ok(true));
        assert_eq!(parse_line("0x10 P_MEM_RD 0").map(|r| r.write), Ok(false));
        assert_eq!(parse_line("0x10 read 0").map(|r| r.write), Ok(false));
    }

    #[test]
    fn write_then_parse() {
        let mut out = Vec::new();
        write_record(&mut out, &TraceRecord::write(0xde_adbe_efc0, 99)).unwrap();
        assert_eq!(out, b"0xdeadbeefc0 WRITE 99\n");
        assert_eq!(
            parse_line(std::str::from_utf8(&out).unwrap().trim()),
            Ok(TraceRecord::write(0xde_adbe_efc0, 99))
        );
    }
}
