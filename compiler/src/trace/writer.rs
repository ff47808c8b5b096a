//! Writes `.daeidx` traces, a section (one table of one batch) at a time.
//!
//! The lookup count goes into the header, which comes first, but a generator (with per-bag
//! dedup) knows it only at the end: the writer puts a provisional header, streams the
//! sections, then rewrites the header and appends the CRC-32, combined from the header's and
//! the sections' (CRC-32 combines, so the sections are never read back).

use super::format::{HEADER_BYTES, Header, IndexDtype, TraceError};
use std::fs::File;
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::path::Path;

/// Writes a `.daeidx` trace (see the module docs).
pub struct TraceWriter<W: Write + Seek> {
    file: String,
    out: W,
    header: Header,
    /// CRC-32 of the bytes after the header.
    body: crc32fast::Hasher,
    sections: u64,
    lookups: u64,
    scratch: Vec<u8>,
}

impl TraceWriter<BufWriter<File>> {
    /// Creates `path` for the shape of `header`: its batches of tables of bags, row ids of
    /// its type below its rows (its `lookups` is ignored: [`TraceWriter::finish`] counts them).
    pub fn create(path: &Path, header: Header) -> Result<Self, TraceError> {
        let file = path.display().to_string();
        let f = File::create(path).map_err(|error| TraceError::Io { file: file.clone(), error })?;
        TraceWriter::new(BufWriter::new(f), file, header)
    }
}

impl<W: Write + Seek> TraceWriter<W> {
    /// A writer into `out` (named `file` in messages); see [`TraceWriter::create`].
    pub fn new(mut out: W, file: String, header: Header) -> Result<Self, TraceError> {
        if header.rows > header.dtype.max_rows() {
            return Err(TraceError::Write {
                file,
                problem: format!(
                    "rows = {} exceed what {} row ids address",
                    header.rows,
                    header.dtype.name()
                ),
            });
        }
        let header = Header { lookups: 0, ..header };
        out.write_all(&header.encode()).map_err(|error| TraceError::Io { file: file.clone(), error })?;
        Ok(Self {
            file,
            out,
            header,
            body: crc32fast::Hasher::new(),
            sections: 0,
            lookups: 0,
            scratch: Vec::new(),
        })
    }

    fn put(&mut self) -> Result<(), TraceError> {
        self.body.update(&self.scratch);
        self.out
            .write_all(&self.scratch)
            .map_err(|error| TraceError::Io { file: self.file.clone(), error })?;
        self.scratch.clear();
        Ok(())
    }

    /// Appends the next section: `offsets` (`batch + 1`, from 0, never decreasing) over
    /// `ids` (each below `rows`).
    pub fn write_section(&mut self, offsets: &[u64], ids: &[u64]) -> Result<(), TraceError> {
        let bad = |problem: String| TraceError::Write { file: self.file.clone(), problem };
        if self.sections >= self.header.sections() {
            return Err(bad(format!(
                "more sections than the {} the header promises",
                self.header.sections()
            )));
        }
        if offsets.len() as u64 != self.header.batch + 1
            || offsets.first() != Some(&0)
            || offsets.last() != Some(&(ids.len() as u64))
            || offsets.windows(2).any(|w| w[1] < w[0])
        {
            return Err(bad(format!(
                "section {}: offsets must be {} values from 0, never decreasing, to the {} row ids",
                self.sections,
                self.header.batch + 1,
                ids.len()
            )));
        }
        if let Some(id) = ids.iter().find(|&&i| i >= self.header.rows) {
            return Err(bad(format!(
                "section {}: row id {id} is not below rows = {}",
                self.sections, self.header.rows
            )));
        }
        for &o in offsets {
            self.scratch.extend_from_slice(&o.to_le_bytes());
        }
        self.put()?;
        for chunk in ids.chunks(1 << 14) {
            for &i in chunk {
                match self.header.dtype {
                    // Checked above: below rows, which u32 ids address.
                    IndexDtype::U32 => self.scratch.extend_from_slice(&(i as u32).to_le_bytes()),
                    IndexDtype::U64 => self.scratch.extend_from_slice(&i.to_le_bytes()),
                }
            }
            self.put()?;
        }
        self.sections += 1;
        self.lookups += ids.len() as u64;
        Ok(())
    }

    /// Writes the final header and the checksum; every section must have been written.
    pub fn finish(mut self) -> Result<Header, TraceError> {
        let io = |file: &str, error| TraceError::Io { file: file.to_string(), error };
        if self.sections != self.header.sections() {
            return Err(TraceError::Write {
                file: self.file.clone(),
                problem: format!(
                    "{} sections written, the header promises {}",
                    self.sections,
                    self.header.sections()
                ),
            });
        }
        self.header.lookups = self.lookups;
        let head = self.header.encode();
        let mut crc = crc32fast::Hasher::new();
        crc.update(&head);
        crc.combine(&self.body);
        let end = self.out.stream_position().map_err(|e| io(&self.file, e))?;
        self.out.seek(SeekFrom::Start(0)).map_err(|e| io(&self.file, e))?;
        self.out.write_all(&head).map_err(|e| io(&self.file, e))?;
        self.out.seek(SeekFrom::Start(end)).map_err(|e| io(&self.file, e))?;
        self.out.write_all(&crc.finalize().to_le_bytes()).map_err(|e| io(&self.file, e))?;
        self.out.flush().map_err(|e| io(&self.file, e))?;
        debug_assert!(end >= HEADER_BYTES);
        Ok(self.header)
    }
}
