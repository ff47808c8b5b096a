//! Trace errors: every one names the trace and where in it the problem is.

use super::Position;
use std::fmt;
use thiserror::Error;

/// A place in a trace: the file (or generator) name and a position in it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Origin {
    /// The trace's name, usually its path as the user gave it.
    pub file: String,
    /// Where in the trace.
    pub pos: Position,
}

impl Origin {
    /// `pos` in `file`.
    pub fn new(file: &str, pos: Position) -> Self {
        Self { file: file.to_owned(), pos }
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // "file:line" is what editors and terminals turn into a jump target.
        match self.pos {
            Position::Start => write!(f, "{}", self.file),
            Position::Line(n) => write!(f, "{}:{n}", self.file),
            Position::Byte(n) => write!(f, "{}: byte {n}", self.file),
            Position::Request(n) => write!(f, "{}: request {n}", self.file),
        }
    }
}

/// What is wrong with one line of a text trace.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ParseProblem {
    /// The line has the wrong number of whitespace-separated fields.
    #[error("expected {expected} fields ({syntax}), found {found}")]
    Fields {
        /// How many fields the format has.
        expected: usize,
        /// What a line looks like.
        syntax: &'static str,
        /// How many the line has.
        found: usize,
    },
    /// The address field is not a number of the expected base, or exceeds 64 bits.
    #[error("invalid address \"{token}\": expected {expected}")]
    Address {
        /// The field as written.
        token: String,
        /// What an address looks like in this format.
        expected: &'static str,
    },
    /// The request kind is not one the format knows.
    #[error("unknown request kind \"{token}\": expected {expected}")]
    Kind {
        /// The field as written.
        token: String,
        /// The accepted kinds.
        expected: &'static str,
    },
    /// The cycle field is not a decimal number that fits in 64 bits.
    #[error("invalid cycle \"{token}\": expected a decimal count of memory cycles")]
    Cycle {
        /// The field as written.
        token: String,
    },
    /// The line holds bytes that are not UTF-8 text.
    #[error("the line is not UTF-8 text")]
    NotText,
    /// The line is longer than any valid line could be.
    #[error("the line is longer than {max} bytes")]
    TooLong {
        /// The longest line accepted.
        max: usize,
    },
}

/// Why a trace could not be read or replayed.
///
/// Errors are plain data (an I/O failure keeps its kind and message), so they can be cloned out
/// of a finished driver and compared in tests.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum TraceError {
    /// The operating system could not open or read the file.
    #[error("{file}: cannot read: {message}")]
    Io {
        /// The trace.
        file: String,
        /// The kind of failure.
        kind: std::io::ErrorKind,
        /// What the operating system said.
        message: String,
    },
    /// A line of a text trace does not parse.
    #[error("{at}: {problem} in \"{text}\"")]
    Parse {
        /// File and line.
        at: Origin,
        /// The line as written (shortened if very long).
        text: String,
        /// What is wrong with it.
        problem: ParseProblem,
    },
    /// A binary trace does not start with the magic bytes.
    #[error("{file}: not a dae-sim binary trace: the file starts with {found}, expected \"DAETRACE\"")]
    BadMagic {
        /// The trace.
        file: String,
        /// The first bytes, escaped.
        found: String,
    },
    /// A binary trace was written in a version of the format this build cannot read.
    #[error(
        "{file}: binary trace format version {found} is not supported (this build reads version {supported})"
    )]
    UnsupportedVersion {
        /// The trace.
        file: String,
        /// The version in the header.
        found: u16,
        /// The version this build reads.
        supported: u16,
    },
    /// A binary trace header has a field value this version does not define.
    #[error("{file}: byte {offset}: invalid header: {problem}")]
    BadHeader {
        /// The trace.
        file: String,
        /// Offset of the field.
        offset: u64,
        /// What is wrong.
        problem: String,
    },
    /// A binary trace ends before its header, records or checksum are complete.
    #[error("{file}: truncated at byte {offset}: {what} needs {missing} more bytes")]
    Truncated {
        /// The trace.
        file: String,
        /// Where the file ends.
        offset: u64,
        /// What was being read ("the header", "record 7 of 100", "the checksum").
        what: String,
        /// Bytes missing.
        missing: u64,
    },
    /// A binary trace's records do not hash to the checksum stored after them.
    #[error(
        "{file}: byte {offset}: checksum mismatch: the file stores {stored:#018x}, its records hash to \
         {computed:#018x}"
    )]
    BadChecksum {
        /// The trace.
        file: String,
        /// Where the checksum starts.
        offset: u64,
        /// The checksum in the file.
        stored: u64,
        /// The FNV-1a 64 of the records read.
        computed: u64,
    },
    /// A binary record has a field value the format does not define.
    #[error("{at}: record {index}: {problem}")]
    BadRecord {
        /// File and byte offset of the record.
        at: Origin,
        /// The record's 0-based index.
        index: u64,
        /// What is wrong.
        problem: String,
    },
    /// A binary trace has bytes after its checksum.
    #[error(
        "{file}: byte {offset}: unexpected data after the checksum (the header promises {records} records)"
    )]
    TrailingData {
        /// The trace.
        file: String,
        /// Where the extra data starts.
        offset: u64,
        /// The record count of the header.
        records: u64,
    },
    /// A request's send time lies beyond what the simulated clock can reach.
    #[error(
        "{at}: the request is due at {time}, beyond the simulator's clock (64-bit picoseconds leave \
         about 106 days)"
    )]
    TimeOverflow {
        /// Where the record was found.
        at: Origin,
        /// The request's 0-based index.
        index: u64,
        /// Its time as the trace or the rate gives it ("18446744073709551615 cycles").
        time: String,
    },
    /// A request lies outside the memory.
    #[error(
        "{at}: address {addr:#x} (+{bytes} B) is outside the memory's capacity of {} ({capacity:#x} B)",
        sim_core::ByteSize::from_bytes(*capacity)
    )]
    OutOfRange {
        /// Where the record was found.
        at: Origin,
        /// Its address.
        addr: u64,
        /// Its size.
        bytes: u32,
        /// The memory's capacity.
        capacity: u64,
    },
    /// A generator parameter is impossible.
    #[error("{what}: {reason}")]
    Invalid {
        /// The parameter.
        what: &'static str,
        /// Why it is impossible.
        reason: String,
    },
}

impl TraceError {
    /// An I/O failure on `file`.
    pub fn io(file: &str, e: &std::io::Error) -> Self {
        TraceError::Io { file: file.to_owned(), kind: e.kind(), message: e.to_string() }
    }
}

/// At most this many characters of an offending line are quoted in a message.
const QUOTE_MAX: usize = 120;

/// The offending text for a message: trimmed, shortened if very long, and with control
/// characters and bidirectional overrides escaped (a binary file read as text would otherwise
/// write them to the terminal; an override would reorder what it shows).
pub(crate) fn quote(text: &str) -> String {
    let t = text.trim();
    let (shown, more) = match t.char_indices().nth(QUOTE_MAX) {
        Some((cut, _)) => (&t[..cut], "..."),
        None => (t, ""),
    };
    let mut out = String::with_capacity(shown.len() + more.len());
    for c in shown.chars() {
        if c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}') {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out + more
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_read_like_editor_locations() {
        assert_eq!(Origin::new("a.trace", Position::Line(12)).to_string(), "a.trace:12");
        assert_eq!(Origin::new("a.bin", Position::Byte(48)).to_string(), "a.bin: byte 48");
        assert_eq!(Origin::new("random", Position::Request(3)).to_string(), "random: request 3");
        assert_eq!(Origin::new("a.bin", Position::Start).to_string(), "a.bin");
    }

    #[test]
    fn long_lines_are_shortened() {
        let long = "x".repeat(500);
        let q = quote(&long);
        assert_eq!(q.len(), QUOTE_MAX + 3);
        assert!(q.ends_with("..."));
        assert_eq!(quote("  0x40 READ 1 \r"), "0x40 READ 1");
    }

    #[test]
    fn control_characters_are_escaped() {
        // The start of a binary trace read as text.
        assert_eq!(
            quote("DAETRACE\u{1}\u{0}\u{2}\u{0}\u{7f}x\ty"),
            "DAETRACE\\u{1}\\u{0}\\u{2}\\u{0}\\u{7f}x\\ty"
        );
        assert_eq!(quote("0x40 \u{202e}DAER 1"), "0x40 \\u{202e}DAER 1");
    }
}
