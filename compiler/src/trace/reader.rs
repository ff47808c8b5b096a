//! A streaming `.daeidx` reader: a section (one table of one batch) at a time, its bags one by
//! one, through a buffered reader.
//!
//! Resident memory is one section's `batch + 1` offsets and one bag's row ids. Nothing is
//! allocated from a header count before the count is checked against the file's length (and
//! buffers grow as bytes arrive when the length is unknown), so a corrupt header is an error,
//! never a huge allocation.

use super::format::{CHECKSUM_BYTES, HEADER_BYTES, Header, IndexDtype, TraceError};
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;

/// Initial capacity of buffers whose final size comes from the file: they grow as data
/// arrives beyond it, so a lying count costs at most this before the data runs out.
const GROW_FROM: u64 = 1 << 16;

/// Reads a `.daeidx` trace section by section (see the module docs).
pub struct TraceReader<R: Read> {
    file: String,
    inner: R,
    /// Bytes consumed so far (the offset of the next byte).
    pos: u64,
    crc: crc32fast::Hasher,
    header: Header,
    /// Row ids must be below this (the header's rows, or less if the caller says so).
    row_limit: u64,
    /// The next section to read: `batch * tables + table`.
    next_section: u64,
    /// The section being read: (batch, table), its offsets, and the next bag.
    current: Option<(u32, u32)>,
    offsets: Vec<u64>,
    next_bag: u64,
    /// Row ids read so far, in all sections.
    ids_read: u64,
    finished: bool,
}

impl TraceReader<BufReader<File>> {
    /// Opens `path`, reads and checks its header, and checks the file's length against it.
    pub fn open(path: &Path) -> Result<Self, TraceError> {
        let file = path.display().to_string();
        let io = |error| TraceError::Io { file: file.clone(), error };
        let f = File::open(path).map_err(io)?;
        let len = f.metadata().map_err(io)?.len();
        TraceReader::new(BufReader::new(f), file.clone(), Some(len))
    }
}

impl<R: Read> TraceReader<R> {
    /// A reader of `inner`, named `file` in messages; `len`, the stream's length in bytes if
    /// known, is checked against the header's counts at once.
    pub fn new(mut inner: R, file: String, len: Option<u64>) -> Result<Self, TraceError> {
        let mut b = [0u8; HEADER_BYTES as usize];
        let got =
            read_full(&mut inner, &mut b).map_err(|error| TraceError::Io { file: file.clone(), error })?;
        if got < b.len() {
            // A short file that is not ours at all is better named by its magic.
            if got >= 8 && &b[0..8] != super::MAGIC {
                let mut found = [0u8; 8];
                found.copy_from_slice(&b[0..8]);
                return Err(TraceError::BadMagic { file, found });
            }
            return Err(TraceError::Truncated {
                file,
                offset: got as u64,
                what: format!("the header needs {HEADER_BYTES} bytes, the file has {got}"),
            });
        }
        let header = Header::decode(&file, &b)?;
        let expected = header
            .file_len()
            .ok_or_else(|| TraceError::Counts { file: file.clone(), counts: header.describe() })?;
        if let Some(len) = len {
            if len < expected {
                return Err(TraceError::Truncated {
                    file,
                    offset: len,
                    what: format!("the header's counts ({}) need {expected} bytes", header.describe()),
                });
            }
            if len > expected {
                return Err(TraceError::Trailing {
                    file,
                    offset: expected,
                    extra: len - expected,
                    counts: header.describe(),
                });
            }
        }
        let mut crc = crc32fast::Hasher::new();
        crc.update(&b);
        Ok(Self {
            file,
            inner,
            pos: HEADER_BYTES,
            crc,
            row_limit: header.rows,
            header,
            next_section: 0,
            current: None,
            offsets: Vec::new(),
            next_bag: 0,
            ids_read: 0,
            finished: false,
        })
    }

    /// The file's header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The file's name, as in messages.
    pub fn file(&self) -> &str {
        &self.file
    }

    /// Row ids must also be below `rows` (a table's size), else [`TraceError::RowOutOfRange`].
    pub fn limit_rows(&mut self, rows: u64) {
        self.row_limit = self.row_limit.min(rows);
    }

    /// Reads exactly `buf.len()` bytes, hashing them; `what` names them if the file ends.
    fn take(&mut self, buf: &mut [u8], what: &dyn Fn() -> String) -> Result<(), TraceError> {
        let got = read_full(&mut self.inner, buf)
            .map_err(|error| TraceError::Io { file: self.file.clone(), error })?;
        if got < buf.len() {
            return Err(TraceError::Truncated {
                file: self.file.clone(),
                offset: self.pos + got as u64,
                what: format!("{} needs {} more bytes", what(), buf.len() - got),
            });
        }
        self.crc.update(buf);
        self.pos += buf.len() as u64;
        Ok(())
    }

    fn take_u64(&mut self, what: &dyn Fn() -> String) -> Result<u64, TraceError> {
        let mut b = [0u8; 8];
        self.take(&mut b, what)?;
        Ok(u64::from_le_bytes(b))
    }

    /// Moves to the next section (skipping the unread bags of the current one) and reads its
    /// offsets: `Some((batch, table))`, or `None` after the last (the checksum is then checked).
    pub fn next_section(&mut self) -> Result<Option<(u32, u32)>, TraceError> {
        while self.current.is_some() {
            let mut skip = Vec::new();
            if self.next_bag(&mut skip)?.is_none() {
                break;
            }
        }
        self.current = None;
        if self.next_section >= self.header.sections() {
            self.finish()?;
            return Ok(None);
        }
        let tables = u64::from(self.header.tables.max(1));
        let (batch, table) = ((self.next_section / tables) as u32, (self.next_section % tables) as u32);
        self.next_section += 1;
        let bags = self.header.batch;
        self.offsets.clear();
        self.offsets.reserve(bags.saturating_add(1).min(GROW_FROM) as usize);
        let left = self.header.lookups - self.ids_read;
        for b in 0..=bags {
            let at = self.pos;
            let o = self.take_u64(&|| format!("batch {batch}, table {table}: offsets[{b}]"))?;
            let prev = self.offsets.last().copied();
            let problem = match prev {
                None if o != 0 => Some(format!("offsets[0] is {o}, not 0")),
                Some(p) if o < p => Some(format!(
                    "offsets not monotone: offsets[{b}] = {o} is below offsets[{}] = {p}",
                    b - 1
                )),
                _ if o > left => Some(format!(
                    "offsets[{b}] = {o} runs past the lookup count: {left} of the header's {} row ids are left",
                    self.header.lookups
                )),
                _ => None,
            };
            if let Some(problem) = problem {
                return Err(TraceError::Offsets {
                    file: self.file.clone(),
                    offset: at,
                    batch,
                    table,
                    problem,
                });
            }
            self.offsets.push(o);
        }
        self.current = Some((batch, table));
        self.next_bag = 0;
        Ok(Some((batch, table)))
    }

    /// Reads the next batch whole (all its tables' sections, from the start of one), or
    /// `None` after the last, when the checksum is checked: the unit a workload streams.
    pub fn next_batch(&mut self) -> Result<Option<TraceBatch>, TraceError> {
        let mut batch = TraceBatch { offsets: vec![0], ..TraceBatch::default() };
        let mut bag = Vec::new();
        for _ in 0..self.header.tables.max(1) {
            let Some((number, _)) = self.next_section()? else {
                return Ok(None);
            };
            batch.number = number;
            while self.next_bag(&mut bag)?.is_some() {
                batch.indices.extend_from_slice(&bag);
                batch.offsets.push(batch.indices.len() as u64);
            }
        }
        Ok(Some(batch))
    }

    /// The current section's `batch + 1` offsets (empty before the first section).
    pub fn offsets(&self) -> &[u64] {
        &self.offsets
    }

    /// Reads the next bag of the current section into `out` (cleared first): its bag number,
    /// or `None` at the section's end.
    pub fn next_bag(&mut self, out: &mut Vec<u64>) -> Result<Option<u64>, TraceError> {
        out.clear();
        let Some((batch, table)) = self.current else { return Ok(None) };
        let b = self.next_bag;
        if b >= self.header.batch {
            return Ok(None);
        }
        self.next_bag += 1;
        let n = self.offsets[b as usize + 1] - self.offsets[b as usize];
        out.reserve(n.min(GROW_FROM) as usize);
        let size = usize::from(self.header.dtype.size());
        for k in 0..n {
            let at = self.pos;
            let mut raw = [0u8; 8];
            self.take(&mut raw[..size], &|| format!("batch {batch}, table {table}, bag {b}: row id {k}"))?;
            let id = match self.header.dtype {
                IndexDtype::U32 => u64::from(u32::from_le_bytes([raw[0], raw[1], raw[2], raw[3]])),
                IndexDtype::U64 => u64::from_le_bytes(raw),
            };
            if id >= self.row_limit {
                return Err(TraceError::RowOutOfRange {
                    file: self.file.clone(),
                    offset: at,
                    batch,
                    table,
                    bag: b,
                    id,
                    rows: self.row_limit,
                });
            }
            out.push(id);
        }
        self.ids_read += n;
        Ok(Some(b))
    }

    /// Checks that every row id was read and that the checksum matches, and that nothing
    /// follows it.
    fn finish(&mut self) -> Result<(), TraceError> {
        if self.finished {
            return Ok(());
        }
        if self.ids_read != self.header.lookups {
            return Err(TraceError::Offsets {
                file: self.file.clone(),
                offset: self.pos,
                batch: self.header.batches.saturating_sub(1),
                table: self.header.tables.saturating_sub(1),
                problem: format!(
                    "the sections' offsets end at {} row ids in all, but the header says lookups = {}",
                    self.ids_read, self.header.lookups
                ),
            });
        }
        let computed = self.crc.clone().finalize();
        let at = self.pos;
        let mut b = [0u8; CHECKSUM_BYTES as usize];
        let got = read_full(&mut self.inner, &mut b)
            .map_err(|error| TraceError::Io { file: self.file.clone(), error })?;
        if got < b.len() {
            return Err(TraceError::Truncated {
                file: self.file.clone(),
                offset: at + got as u64,
                what: format!("the checksum needs {} more bytes", b.len() - got),
            });
        }
        let stored = u32::from_le_bytes(b);
        if stored != computed {
            return Err(TraceError::Checksum { file: self.file.clone(), offset: at, stored, computed });
        }
        self.pos += CHECKSUM_BYTES;
        let mut one = [0u8; 1];
        if read_full(&mut self.inner, &mut one)
            .map_err(|error| TraceError::Io { file: self.file.clone(), error })?
            > 0
        {
            return Err(TraceError::Trailing {
                file: self.file.clone(),
                offset: self.pos,
                extra: 1,
                counts: self.header.describe(),
            });
        }
        self.finished = true;
        Ok(())
    }
}

/// Reads until `buf` is full or the stream ends: the bytes read.
fn read_full(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// One batch as [`TraceReader::next_batch`] reads it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TraceBatch {
    /// Its number in the file, from 0.
    pub number: u32,
    /// Table-major CSR offsets over all its tables' bags (`tables x batch + 1`).
    pub offsets: Vec<u64>,
    /// Row ids, table after table.
    pub indices: Vec<u64>,
}

/// One batch of a trace as a workload takes it: table-major CSR offsets (`tables x batch + 1`,
/// over all tables) and the row ids.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Batch {
    /// The file's header.
    pub header: Header,
    /// Table-major CSR offsets.
    pub offsets: Vec<u64>,
    /// Row ids, table after table.
    pub indices: Vec<u64>,
}

/// Reads batch `which` of `path` whole (row ids below `rows`, if given), streaming and checking
/// the rest of the file, checksum included.
pub fn read_all(path: &Path, which: u32, rows: Option<u64>) -> Result<Batch, TraceError> {
    let mut r = TraceReader::open(path)?;
    if let Some(rows) = rows {
        r.limit_rows(rows);
    }
    let header = *r.header();
    if which >= header.batches {
        return Err(TraceError::Header {
            file: r.file().to_string(),
            offset: 16,
            problem: format!("batch {which} asked for, but the file holds {} batches", header.batches),
        });
    }
    let mut found = None;
    while let Some(batch) = r.next_batch()? {
        if batch.number == which {
            found = Some(batch);
        }
    }
    let TraceBatch { offsets, indices, .. } = found.unwrap_or_default();
    Ok(Batch { header, offsets, indices })
}
