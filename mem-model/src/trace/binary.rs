//! dae-sim's binary trace format: a small header, fixed-size little-endian records, a checksum.
//!
//! Text traces cost a parse per request and about 20 bytes per line; this format costs one
//! 24-byte copy and carries what text formats cannot (request size, time in picoseconds, the
//! non-temporal hint). Layout, all integers little-endian:
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 8 | magic `DAETRACE` (ASCII) |
//! | 8 | 2 | version, 1 |
//! | 10 | 2 | flags: bits 0-1 time unit (0 untimed, 1 picoseconds, 2 memory-clock cycles); other bits 0 |
//! | 12 | 4 | reserved, 0 |
//! | 16 | 8 | record count N |
//! | 24 | 24 x N | records |
//! | 24 + 24 N | 8 | FNV-1a 64 of the N x 24 record bytes |
//!
//! Each record:
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 8 | address |
//! | 8 | 8 | time, in the header's unit (0 when untimed: a reader refuses anything else) |
//! | 16 | 2 | size in bytes (0: the driver's request size) |
//! | 18 | 1 | kind: 0 read, 1 write |
//! | 19 | 1 | hints: bit 0 non-temporal; other bits 0 |
//! | 20 | 4 | reserved, 0 |
//!
//! Reserved fields must be zero so a later version can give them a meaning. The reader streams
//! one record at a time and checks the checksum after the last record, so a corrupted file is
//! reported (with the stored and computed sums) when the replay reaches its end; a truncated
//! file, wrong magic bytes, an unknown version or an undefined field value are reported where
//! they are found, with the byte offset.

use super::error::{Origin, TraceError};
use super::{Position, TimeBase, TraceRecord, TraceSource};
use sim_core::hash::{FNV_OFFSET, fnv1a};
use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::Path;

/// The first eight bytes of every binary trace.
pub const MAGIC: [u8; 8] = *b"DAETRACE";
/// The format version this build writes and reads.
pub const VERSION: u16 = 1;
/// Header bytes.
pub const HEADER_LEN: u64 = 24;
/// Bytes per record.
pub const RECORD_LEN: u64 = 24;
/// Checksum bytes after the records.
pub const CHECKSUM_LEN: u64 = 8;

/// Flag bits that hold the time unit.
const TIME_MASK: u16 = 0b11;
/// Hint bit: non-temporal.
const HINT_NON_TEMPORAL: u8 = 1;

fn time_flags(base: TimeBase) -> u16 {
    match base {
        TimeBase::Untimed => 0,
        TimeBase::Picoseconds => 1,
        TimeBase::MemoryCycles => 2,
    }
}

/// Encodes one record.
fn encode(rec: &TraceRecord, base: TimeBase) -> io::Result<[u8; RECORD_LEN as usize]> {
    let size = match rec.bytes {
        None => 0,
        Some(0) => return Err(io::Error::new(io::ErrorKind::InvalidInput, "a record of 0 bytes")),
        Some(b) => u16::try_from(b).map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("a record of {b} B does not fit the 16-bit size"),
            )
        })?,
    };
    let time = if base == TimeBase::Untimed { 0 } else { rec.time };
    let mut r = [0u8; RECORD_LEN as usize];
    r[0..8].copy_from_slice(&rec.addr.to_le_bytes());
    r[8..16].copy_from_slice(&time.to_le_bytes());
    r[16..18].copy_from_slice(&size.to_le_bytes());
    r[18] = u8::from(rec.write);
    r[19] = if rec.non_temporal { HINT_NON_TEMPORAL } else { 0 };
    Ok(r)
}

/// Writes a binary trace: header, records, then (in [`BinaryWriter::finish`]) the checksum and
/// the record count, which is why the writer needs to seek.
pub struct BinaryWriter<W: Write + Seek> {
    out: W,
    base: TimeBase,
    records: u64,
    hash: u64,
}

impl BinaryWriter<BufWriter<File>> {
    /// Creates (or truncates) the file at `path`.
    pub fn create(path: &Path, base: TimeBase) -> io::Result<Self> {
        Self::new(BufWriter::new(File::create(path)?), base)
    }
}

impl<W: Write + Seek> BinaryWriter<W> {
    /// Starts a trace on `out` whose record times are in `base`.
    pub fn new(mut out: W, base: TimeBase) -> io::Result<Self> {
        let mut h = [0u8; HEADER_LEN as usize];
        h[0..8].copy_from_slice(&MAGIC);
        h[8..10].copy_from_slice(&VERSION.to_le_bytes());
        h[10..12].copy_from_slice(&time_flags(base).to_le_bytes());
        // Bytes 12..24 (reserved, record count) stay zero until finish().
        out.write_all(&h)?;
        Ok(Self { out, base, records: 0, hash: FNV_OFFSET })
    }

    /// Appends a record; fails on a size of 0 or above 65535 bytes.
    pub fn write(&mut self, rec: &TraceRecord) -> io::Result<()> {
        let r = encode(rec, self.base)?;
        self.out.write_all(&r)?;
        self.hash = fnv1a(self.hash, &r);
        self.records += 1;
        Ok(())
    }

    /// Records written so far.
    pub fn records(&self) -> u64 {
        self.records
    }

    /// Writes the checksum and the record count and returns the output, flushed.
    pub fn finish(mut self) -> io::Result<W> {
        self.out.write_all(&self.hash.to_le_bytes())?;
        let end = self.out.stream_position()?;
        self.out.seek(SeekFrom::Start(16))?;
        self.out.write_all(&self.records.to_le_bytes())?;
        self.out.seek(SeekFrom::Start(end))?;
        self.out.flush()?;
        Ok(self.out)
    }
}

/// A streaming reader of binary traces.
pub struct BinaryReader<R> {
    input: R,
    name: String,
    base: TimeBase,
    count: u64,
    /// Records returned so far.
    index: u64,
    /// Byte offset of the next unread byte.
    offset: u64,
    hash: u64,
    done: bool,
}

impl BinaryReader<BufReader<File>> {
    /// Opens the trace at `path` and checks its header.
    pub fn open(path: &Path) -> Result<Self, TraceError> {
        let name = path.display().to_string();
        let file = File::open(path).map_err(|io| TraceError::io(&name, &io))?;
        Self::new(BufReader::new(file), &name)
    }
}

impl<R: Read> BinaryReader<R> {
    /// Reads the header from `input` (named `name` in messages) and checks it.
    pub fn new(input: R, name: &str) -> Result<Self, TraceError> {
        let mut r = Self {
            input,
            name: name.to_owned(),
            base: TimeBase::Untimed,
            count: 0,
            index: 0,
            offset: 0,
            hash: FNV_OFFSET,
            done: false,
        };
        let mut h = [0u8; HEADER_LEN as usize];
        // The magic comes first so that a file in another format is named as such, not as a
        // truncated trace.
        let got = r.fill(&mut h)?;
        if got < MAGIC.len() || h[0..8] != MAGIC {
            return Err(TraceError::BadMagic { file: r.name, found: escape(&h[..got.min(8)]) });
        }
        if got < h.len() {
            return Err(r.truncated(got, h.len(), "the header".into()));
        }
        let version = u16::from_le_bytes([h[8], h[9]]);
        if version != VERSION {
            return Err(TraceError::UnsupportedVersion { file: r.name, found: version, supported: VERSION });
        }
        let flags = u16::from_le_bytes([h[10], h[11]]);
        let bad_header =
            |offset, problem: String| TraceError::BadHeader { file: name.to_owned(), offset, problem };
        if flags & !TIME_MASK != 0 {
            return Err(bad_header(10, format!("flags {flags:#06x}: bits 2-15 are reserved and must be 0")));
        }
        r.base = match flags & TIME_MASK {
            0 => TimeBase::Untimed,
            1 => TimeBase::Picoseconds,
            2 => TimeBase::MemoryCycles,
            _ => {
                return Err(bad_header(
                    10,
                    format!(
                        "flags {flags:#06x}: time unit 3 is undefined (0 untimed, 1 ps, 2 memory cycles)"
                    ),
                ));
            }
        };
        if h[12..16] != [0; 4] {
            return Err(bad_header(12, "bytes 12-15 are reserved and must be 0".into()));
        }
        r.count = u64::from_le_bytes(h[16..24].try_into().unwrap_or([0; 8]));
        Ok(r)
    }

    /// Reads into `buf` until it is full or the input ends; returns the bytes read.
    fn fill(&mut self, buf: &mut [u8]) -> Result<usize, TraceError> {
        let mut got = 0;
        while got < buf.len() {
            match self.input.read(&mut buf[got..]) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(io) => return Err(TraceError::io(&self.name, &io)),
            }
        }
        self.offset += got as u64;
        Ok(got)
    }

    fn truncated(&mut self, got: usize, want: usize, what: String) -> TraceError {
        self.done = true;
        TraceError::Truncated {
            file: self.name.clone(),
            offset: self.offset,
            what,
            missing: (want - got) as u64,
        }
    }

    /// Reads the checksum after the last record and checks that nothing follows it.
    fn finish(&mut self) -> Result<(), TraceError> {
        self.done = true;
        let mut c = [0u8; CHECKSUM_LEN as usize];
        let got = self.fill(&mut c)?;
        if got < c.len() {
            return Err(self.truncated(got, c.len(), "the checksum".into()));
        }
        let stored = u64::from_le_bytes(c);
        if stored != self.hash {
            return Err(TraceError::BadChecksum {
                file: self.name.clone(),
                offset: self.offset - CHECKSUM_LEN,
                stored,
                computed: self.hash,
            });
        }
        let at = self.offset;
        let mut extra = [0u8; 1];
        if self.fill(&mut extra)? > 0 {
            return Err(TraceError::TrailingData {
                file: self.name.clone(),
                offset: at,
                records: self.count,
            });
        }
        Ok(())
    }

    /// The header's record count.
    pub fn count(&self) -> u64 {
        self.count
    }
}

impl<R: Read> TraceSource for BinaryReader<R> {
    fn next_record(&mut self) -> Result<Option<TraceRecord>, TraceError> {
        if self.done {
            return Ok(None);
        }
        if self.index == self.count {
            self.finish()?;
            return Ok(None);
        }
        let start = self.offset;
        let mut r = [0u8; RECORD_LEN as usize];
        let got = self.fill(&mut r)?;
        if got < r.len() {
            let what = format!("record {} of {}", self.index, self.count);
            return Err(self.truncated(got, r.len(), what));
        }
        let bad = |problem: String| TraceError::BadRecord {
            at: Origin::new(&self.name, Position::Byte(start)),
            index: self.index,
            problem,
        };
        let le64 = |b: &[u8]| u64::from_le_bytes(b.try_into().unwrap_or([0; 8]));
        let write = match r[18] {
            0 => false,
            1 => true,
            k => return Err(bad(format!("kind {k} is undefined (0 read, 1 write)"))),
        };
        if r[19] & !HINT_NON_TEMPORAL != 0 {
            return Err(bad(format!("hint bits {:#04x} are undefined (bit 0: non-temporal)", r[19])));
        }
        if r[20..24] != [0; 4] {
            return Err(bad("reserved bytes 20-23 must be 0".into()));
        }
        let time = le64(&r[8..16]);
        if self.base == TimeBase::Untimed && time != 0 {
            // The header says untimed: a time here (written by mistake, or a damaged record the
            // checksum would catch only at the end) would otherwise be dropped without a word.
            return Err(bad(format!("time {time} in an untimed trace (header time unit 0): must be 0")));
        }
        self.hash = fnv1a(self.hash, &r);
        self.index += 1;
        let size = u16::from_le_bytes([r[16], r[17]]);
        Ok(Some(TraceRecord {
            addr: le64(&r[0..8]),
            write,
            bytes: (size != 0).then_some(u32::from(size)),
            time,
            non_temporal: r[19] & HINT_NON_TEMPORAL != 0,
        }))
    }
    fn time_base(&self) -> TimeBase {
        self.base
    }
    fn name(&self) -> &str {
        &self.name
    }
    fn position(&self) -> Position {
        Position::Byte(self.offset.saturating_sub(RECORD_LEN))
    }
    fn len_hint(&self) -> Option<u64> {
        Some(self.count)
    }
}

/// The first bytes of a file, printable in a message.
fn escape(bytes: &[u8]) -> String {
    let mut s = String::from("\"");
    for &b in bytes {
        s.extend(std::ascii::escape_default(b).map(char::from));
    }
    s.push('"');
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    #[test]
    fn empty_trace_is_header_and_checksum() {
        let out =
            BinaryWriter::new(Cursor::new(Vec::new()), TimeBase::Picoseconds).unwrap().finish().unwrap();
        let bytes = out.into_inner();
        assert_eq!(bytes.len() as u64, HEADER_LEN + CHECKSUM_LEN);
        assert_eq!(&bytes[0..8], b"DAETRACE");
        assert_eq!(&bytes[8..12], &[1, 0, 1, 0]);
        assert_eq!(&bytes[24..32], &FNV_OFFSET.to_le_bytes());
        let mut r = BinaryReader::new(&bytes[..], "e").unwrap();
        assert_eq!(r.time_base(), TimeBase::Picoseconds);
        assert_eq!(r.next_record().unwrap(), None);
    }

    #[test]
    fn record_layout_is_as_documented() {
        let rec = TraceRecord {
            addr: 0x0102_0304_0506_0708,
            write: true,
            bytes: Some(64),
            time: 9,
            non_temporal: true,
        };
        let r = encode(&rec, TimeBase::Picoseconds).unwrap();
        assert_eq!(r, [8, 7, 6, 5, 4, 3, 2, 1, 9, 0, 0, 0, 0, 0, 0, 0, 64, 0, 1, 1, 0, 0, 0, 0]);
        assert!(encode(&TraceRecord { bytes: Some(65536), ..rec }, TimeBase::Untimed).is_err());
        assert!(encode(&TraceRecord { bytes: Some(0), ..rec }, TimeBase::Untimed).is_err());
        // Untimed traces store time 0 whatever the record says.
        assert_eq!(&encode(&rec, TimeBase::Untimed).unwrap()[8..16], &[0; 8]);
    }

    #[test]
    fn a_time_in_an_untimed_trace_is_refused() {
        let rec = TraceRecord { addr: 64, write: false, bytes: None, time: 0, non_temporal: false };
        let mut w = BinaryWriter::new(Cursor::new(Vec::new()), TimeBase::Untimed).unwrap();
        w.write(&rec).unwrap();
        let mut bytes = w.finish().unwrap().into_inner();
        assert_eq!(BinaryReader::new(&bytes[..], "t").unwrap().next_record().unwrap(), Some(rec));
        // A time written into the record (checksum fixed up, so only the time is wrong).
        let at = HEADER_LEN as usize + 8;
        bytes[at] = 5;
        let end = bytes.len() - CHECKSUM_LEN as usize;
        let sum = fnv1a(FNV_OFFSET, &bytes[HEADER_LEN as usize..end]);
        bytes[end..].copy_from_slice(&sum.to_le_bytes());
        let e = BinaryReader::new(&bytes[..], "t").unwrap().next_record().unwrap_err().to_string();
        assert!(e.contains("time 5 in an untimed trace") && e.contains("t"), "{e}");
    }
}
