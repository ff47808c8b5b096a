//! The memory-trace front end: drives the memory system alone from a trace or a generator.
//!
//! A trace is a sequence of [`TraceRecord`]s (address, read or write, optional size, optional
//! issue time) read from a [`TraceSource`]. Sources stream: text traces are read one line at a
//! time and binary traces one record at a time, so a trace of any length costs a few kilobytes
//! of host memory. Sources exist for
//!
//! - the DRAMsim3 text format, `0xADDR READ|WRITE CYCLE` ([`dramsim3`]);
//! - the Ramulator 2 `LoadStoreTrace` text format, `LD|ST ADDR` ([`ramulator`]);
//! - a compact, checksummed binary format of our own ([`binary`]);
//! - seeded random and streaming generators ([`generator`]).
//!
//! A [`TraceDriver`] replays a source into the memory over one link pair: at the records'
//! timestamps, at a fixed injection rate, or as fast as the memory accepts, with a bound on
//! requests in flight, and measures latency at the requester, end to end. Every error names the
//! trace (file and line, or byte offset for binary files) and the offending text.

pub mod binary;
pub mod dramsim3;
pub mod driver;
pub mod error;
pub mod generator;
mod lines;
pub mod ramulator;
pub mod text;

pub use binary::{BinaryReader, BinaryWriter};
pub use dramsim3::DramSim3Reader;
pub use driver::{DriverBuildError, DriverConfig, DriverReport, Pacing, TraceDriver};
pub use error::{Origin, ParseProblem, TraceError};
pub use generator::{Generator, GeneratorConfig, Pattern};
pub use ramulator::RamulatorReader;
pub use text::{TextFormat, TextReader};

use std::fmt;
use std::path::Path;
use std::str::FromStr;

/// What the `time` field of a source's records means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TimeBase {
    /// Records carry no time: they are issued as fast as the memory accepts them (or at the
    /// driver's injection rate).
    Untimed,
    /// Picoseconds from the start of the run.
    Picoseconds,
    /// Cycles of the memory's clock, from cycle 0 at the start of the run.
    MemoryCycles,
}

/// One request of a trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TraceRecord {
    /// First byte.
    pub addr: u64,
    /// Write (true) or read.
    pub write: bool,
    /// Bytes to move; `None` takes the driver's request size (text formats carry no size).
    pub bytes: Option<u32>,
    /// Issue time in the source's [`TimeBase`] (0 for untimed sources).
    pub time: u64,
    /// The data will not be reused soon (a cache hint carried to the request).
    pub non_temporal: bool,
}

impl TraceRecord {
    /// A read of the driver's request size at `addr`, issued at `time`.
    pub fn read(addr: u64, time: u64) -> Self {
        Self { addr, write: false, bytes: None, time, non_temporal: false }
    }

    /// A write of the driver's request size at `addr`, issued at `time`.
    pub fn write(addr: u64, time: u64) -> Self {
        Self { addr, write: true, bytes: None, time, non_temporal: false }
    }
}

/// Where in its source a record was found, for error messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Position {
    /// Before the first record (header problems, configuration).
    Start,
    /// A 1-based line of a text trace.
    Line(u64),
    /// A byte offset into a binary trace.
    Byte(u64),
    /// The 0-based index of a generated request.
    Request(u64),
}

/// A stream of trace records.
///
/// `next_record` returns `Ok(None)` once the source is exhausted and keeps doing so; an error
/// ends the stream (the driver stops reading after the first one).
pub trait TraceSource {
    /// The next record, `None` at the end.
    fn next_record(&mut self) -> Result<Option<TraceRecord>, TraceError>;
    /// What the records' `time` means.
    fn time_base(&self) -> TimeBase;
    /// The trace's name in messages: its file path, or the generator's description.
    fn name(&self) -> &str;
    /// Where the record last returned by `next_record` was found.
    fn position(&self) -> Position;
    /// How many records the source holds, if it knows (binary header, generators).
    fn len_hint(&self) -> Option<u64> {
        None
    }
}

impl<S: TraceSource + ?Sized> TraceSource for Box<S> {
    fn next_record(&mut self) -> Result<Option<TraceRecord>, TraceError> {
        (**self).next_record()
    }
    fn time_base(&self) -> TimeBase {
        (**self).time_base()
    }
    fn name(&self) -> &str {
        (**self).name()
    }
    fn position(&self) -> Position {
        (**self).position()
    }
    fn len_hint(&self) -> Option<u64> {
        (**self).len_hint()
    }
}

/// The trace file formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TraceFormat {
    /// DRAMsim3: `0xADDR READ|WRITE CYCLE`.
    DramSim3,
    /// Ramulator 2 `LoadStoreTrace`: `LD|ST ADDR`.
    Ramulator,
    /// dae-sim's binary format (see [`binary`]).
    Binary,
}

impl TraceFormat {
    /// Every format, in the order they are documented.
    pub const ALL: [TraceFormat; 3] = [TraceFormat::DramSim3, TraceFormat::Ramulator, TraceFormat::Binary];

    /// The format's name on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            TraceFormat::DramSim3 => "dramsim3",
            TraceFormat::Ramulator => "ramulator",
            TraceFormat::Binary => "binary",
        }
    }
}

impl fmt::Display for TraceFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for TraceFormat {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|f| f.as_str() == s)
            .ok_or_else(|| format!("unknown trace format \"{s}\": expected dramsim3, ramulator or binary"))
    }
}

/// Opens the trace file at `path` in `format` as a boxed, streaming source.
pub fn open(path: &Path, format: TraceFormat) -> Result<Box<dyn TraceSource + Send>, TraceError> {
    Ok(match format {
        TraceFormat::DramSim3 => Box::new(DramSim3Reader::open(path)?),
        TraceFormat::Ramulator => Box::new(RamulatorReader::open(path)?),
        TraceFormat::Binary => Box::new(BinaryReader::open(path)?),
    })
}

/// A source over records held in memory (for tests and small programmatic traces).
#[derive(Debug, Clone)]
pub struct VecSource {
    name: String,
    base: TimeBase,
    records: std::vec::IntoIter<TraceRecord>,
    index: u64,
    len: u64,
}

impl VecSource {
    /// A source named `name` yielding `records`, whose times are in `base`.
    pub fn new(name: &str, base: TimeBase, records: Vec<TraceRecord>) -> Self {
        let len = records.len() as u64;
        Self { name: name.to_owned(), base, records: records.into_iter(), index: 0, len }
    }
}

impl TraceSource for VecSource {
    fn next_record(&mut self) -> Result<Option<TraceRecord>, TraceError> {
        let r = self.records.next();
        if r.is_some() {
            self.index += 1;
        }
        Ok(r)
    }
    fn time_base(&self) -> TimeBase {
        self.base
    }
    fn name(&self) -> &str {
        &self.name
    }
    fn position(&self) -> Position {
        Position::Request(self.index.saturating_sub(1))
    }
    fn len_hint(&self) -> Option<u64> {
        Some(self.len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_names_round_trip() {
        for f in TraceFormat::ALL {
            assert_eq!(f.as_str().parse::<TraceFormat>(), Ok(f));
        }
        let e = "dramsim".parse::<TraceFormat>().unwrap_err();
        assert_eq!(e, "unknown trace format \"dramsim\": expected dramsim3, ramulator or binary");
    }

    #[test]
    fn vec_source_counts_positions() {
        let mut s =
            VecSource::new("v", TimeBase::Untimed, vec![TraceRecord::read(0, 0), TraceRecord::write(64, 0)]);
        assert_eq!(s.len_hint(), Some(2));
        assert_eq!(s.next_record().unwrap(), Some(TraceRecord::read(0, 0)));
        assert_eq!(s.position(), Position::Request(0));
        assert_eq!(s.next_record().unwrap(), Some(TraceRecord::write(64, 0)));
        assert_eq!(s.position(), Position::Request(1));
        assert_eq!(s.next_record().unwrap(), None);
        assert_eq!(s.next_record().unwrap(), None);
    }
}
