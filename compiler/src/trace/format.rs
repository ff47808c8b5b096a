//! The `.daeidx` byte layout: the header, its checks, and the errors of a bad file.
//!
//! All integers are little-endian. A file is a 48-byte header, then for every batch (in order)
//! and every table of it (in order) a section, then a CRC-32 of every byte before it:
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 8 | magic: the ASCII bytes `DAEINDEX` |
//! | 8 | 2 | format version: 1 |
//! | 10 | 1 | row id type: 4 (u32) or 8 (u64), its size in bytes |
//! | 11 | 1 | reserved, 0 |
//! | 12 | 4 | tables T |
//! | 16 | 4 | batches N |
//! | 20 | 4 | reserved, 0 |
//! | 24 | 8 | batch B: bags per table in each batch |
//! | 32 | 8 | rows R: every row id is below R |
//! | 40 | 8 | lookups L: row ids in the whole file |
//!
//! A section is `B + 1` u64 offsets (the first 0, never decreasing; bag `b` holds row ids
//! `offsets[b]..offsets[b + 1]`), then `offsets[B]` row ids of the header's type. The file is
//! therefore exactly `48 + N T (B + 1) 8 + L size + 4` bytes, which the reader checks against
//! the file's length before it allocates anything, so that no header can make it allocate
//! more than the file holds.

use thiserror::Error;

/// The first 8 bytes of every `.daeidx` file.
pub const MAGIC: &[u8; 8] = b"DAEINDEX";

/// The format version this code reads and writes.
pub const VERSION: u16 = 1;

/// Bytes of the header.
pub const HEADER_BYTES: u64 = 48;

/// Bytes of the checksum at the end.
pub const CHECKSUM_BYTES: u64 = 4;

/// The type of the stored row ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexDtype {
    /// 32-bit row ids (rows up to 2^32).
    U32,
    /// 64-bit row ids.
    U64,
}

impl IndexDtype {
    /// Bytes per row id (the header's code).
    pub fn size(self) -> u8 {
        match self {
            IndexDtype::U32 => 4,
            IndexDtype::U64 => 8,
        }
    }

    /// The type whose code is `code`, if any.
    pub fn from_code(code: u8) -> Option<Self> {
        match code {
            4 => Some(IndexDtype::U32),
            8 => Some(IndexDtype::U64),
            _ => None,
        }
    }

    /// The largest row count this type can address.
    pub fn max_rows(self) -> u64 {
        match self {
            IndexDtype::U32 => 1 << 32,
            IndexDtype::U64 => u64::MAX,
        }
    }

    /// The name used in messages and `trace info`.
    pub fn name(self) -> &'static str {
        match self {
            IndexDtype::U32 => "u32",
            IndexDtype::U64 => "u64",
        }
    }
}

/// The counts a `.daeidx` header carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// Type of the row ids.
    pub dtype: IndexDtype,
    /// Tables per batch.
    pub tables: u32,
    /// Batches, one after the other.
    pub batches: u32,
    /// Bags per table in each batch.
    pub batch: u64,
    /// Row ids are below this.
    pub rows: u64,
    /// Row ids in the whole file.
    pub lookups: u64,
}

impl Header {
    /// The header of `batches` batches of `tables` tables of `batch` bags, row ids of type
    /// `dtype` below `rows`, before any lookup (a writer's shape).
    pub fn new(dtype: IndexDtype, tables: u32, batches: u32, batch: u64, rows: u64) -> Self {
        Header { dtype, tables, batches, batch, rows, lookups: 0 }
    }

    /// The header's 48 bytes.
    pub fn encode(&self) -> [u8; HEADER_BYTES as usize] {
        let mut b = [0u8; HEADER_BYTES as usize];
        b[0..8].copy_from_slice(MAGIC);
        b[8..10].copy_from_slice(&VERSION.to_le_bytes());
        b[10] = self.dtype.size();
        b[12..16].copy_from_slice(&self.tables.to_le_bytes());
        b[16..20].copy_from_slice(&self.batches.to_le_bytes());
        b[24..32].copy_from_slice(&self.batch.to_le_bytes());
        b[32..40].copy_from_slice(&self.rows.to_le_bytes());
        b[40..48].copy_from_slice(&self.lookups.to_le_bytes());
        b
    }

    /// Decodes and checks a header read from `file` (its fields, not yet the file's length).
    pub fn decode(file: &str, b: &[u8; HEADER_BYTES as usize]) -> Result<Self, TraceError> {
        let u16_at = |o: usize| u16::from_le_bytes([b[o], b[o + 1]]);
        let u32_at = |o: usize| u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]);
        let u64_at = |o: usize| {
            let mut x = [0u8; 8];
            x.copy_from_slice(&b[o..o + 8]);
            u64::from_le_bytes(x)
        };
        if &b[0..8] != MAGIC {
            let mut found = [0u8; 8];
            found.copy_from_slice(&b[0..8]);
            return Err(TraceError::BadMagic { file: file.into(), found });
        }
        let version = u16_at(8);
        if version != VERSION {
            return Err(TraceError::Version { file: file.into(), version });
        }
        let dtype =
            IndexDtype::from_code(b[10]).ok_or(TraceError::Dtype { file: file.into(), code: b[10] })?;
        let bad = |offset: u64, problem: String| TraceError::Header { file: file.into(), offset, problem };
        if b[11] != 0 {
            return Err(bad(11, format!("reserved byte is {}, not 0", b[11])));
        }
        if u32_at(20) != 0 {
            return Err(bad(20, format!("reserved field is {}, not 0", u32_at(20))));
        }
        let h = Header {
            dtype,
            tables: u32_at(12),
            batches: u32_at(16),
            batch: u64_at(24),
            rows: u64_at(32),
            lookups: u64_at(40),
        };
        if h.rows > dtype.max_rows() {
            return Err(bad(32, format!("rows = {} exceed what {} row ids address", h.rows, dtype.name())));
        }
        if h.rows == 0 && h.lookups > 0 {
            return Err(bad(32, format!("rows = 0, but the file holds {} row ids", h.lookups)));
        }
        Ok(h)
    }

    /// Sections in the file: batches x tables.
    pub fn sections(&self) -> u64 {
        u64::from(self.tables) * u64::from(self.batches)
    }

    /// The file's length the counts imply, or `None` if it does not fit 64 bits.
    pub fn file_len(&self) -> Option<u64> {
        let offsets = self.sections().checked_mul(self.batch.checked_add(1)?)?.checked_mul(8)?;
        let ids = self.lookups.checked_mul(u64::from(self.dtype.size()))?;
        HEADER_BYTES.checked_add(offsets)?.checked_add(ids)?.checked_add(CHECKSUM_BYTES)
    }

    /// The counts in words, for messages.
    pub fn describe(&self) -> String {
        format!(
            "{} batches x {} tables x {} bags, {} lookups of {}",
            self.batches,
            self.tables,
            self.batch,
            self.lookups,
            self.dtype.name()
        )
    }
}

/// What is wrong with a `.daeidx` file; every message names the file and the byte offset.
#[derive(Debug, Error)]
pub enum TraceError {
    /// The file could not be opened, read or written.
    #[error("{file}: {error}")]
    Io {
        /// The file.
        file: String,
        /// What the system said.
        error: std::io::Error,
    },
    /// The first 8 bytes are not `DAEINDEX`.
    #[error(
        "{file}: byte 0: bad magic {found:02x?}: not a .daeidx index trace (expected the bytes \"DAEINDEX\")"
    )]
    BadMagic {
        /// The file.
        file: String,
        /// The bytes found.
        found: [u8; 8],
    },
    /// A version this code does not read.
    #[error("{file}: byte 8: unsupported format version {version} (this dae-sim reads version 1)")]
    Version {
        /// The file.
        file: String,
        /// The version found.
        version: u16,
    },
    /// An unknown row id type.
    #[error("{file}: byte 10: unknown row id type {code} (4 for u32, 8 for u64)")]
    Dtype {
        /// The file.
        file: String,
        /// The code found.
        code: u8,
    },
    /// Another header field is invalid.
    #[error("{file}: byte {offset}: invalid header: {problem}")]
    Header {
        /// The file.
        file: String,
        /// The field's offset.
        offset: u64,
        /// What is wrong.
        problem: String,
    },
    /// The header's counts do not fit 64 bits: no file can hold them.
    #[error("{file}: byte 12: header counts ({counts}) overflow 64-bit file sizes")]
    Counts {
        /// The file.
        file: String,
        /// The counts in words.
        counts: String,
    },
    /// The file ends before what the header promises.
    #[error("{file}: truncated at byte {offset}: {what}")]
    Truncated {
        /// The file.
        file: String,
        /// Where it ends.
        offset: u64,
        /// What was being read, and how much was needed.
        what: String,
    },
    /// Bytes follow what the header promises.
    #[error("{file}: byte {offset}: {extra} bytes after the checksum ({counts})")]
    Trailing {
        /// The file.
        file: String,
        /// Where the extra bytes start.
        offset: u64,
        /// How many.
        extra: u64,
        /// The header's counts in words.
        counts: String,
    },
    /// A section's offsets are not a CSR over its row ids.
    #[error("{file}: byte {offset}: batch {batch}, table {table}: {problem}")]
    Offsets {
        /// The file.
        file: String,
        /// The offending offset's position in the file.
        offset: u64,
        /// Its batch.
        batch: u32,
        /// Its table.
        table: u32,
        /// What is wrong.
        problem: String,
    },
    /// A row id is not below the table's rows.
    #[error(
        "{file}: byte {offset}: batch {batch}, table {table}, bag {bag}: row id {id} is out of range for a table of {rows} rows"
    )]
    RowOutOfRange {
        /// The file.
        file: String,
        /// The row id's position in the file.
        offset: u64,
        /// Its batch.
        batch: u32,
        /// Its table.
        table: u32,
        /// Its bag.
        bag: u64,
        /// The row id.
        id: u64,
        /// The rows it must be below.
        rows: u64,
    },
    /// The stored checksum differs from the bytes' CRC-32.
    #[error("{file}: byte {offset}: checksum mismatch: stored {stored:#010x}, computed {computed:#010x}")]
    Checksum {
        /// The file.
        file: String,
        /// The checksum's position.
        offset: u64,
        /// The stored CRC-32.
        stored: u32,
        /// The CRC-32 of the bytes before it.
        computed: u32,
    },
    /// A writer was given data that does not match its header or its own rules.
    #[error("{file}: {problem}")]
    Write {
        /// The file.
        file: String,
        /// What is wrong.
        problem: String,
    },
}
