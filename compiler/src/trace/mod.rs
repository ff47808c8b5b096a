//! `.daeidx`, dae-sim's binary index trace: the row ids of embedding-bag lookups, table by
//! table and batch by batch, in CSR form, with a CRC-32 over the whole file.
//!
//! The byte layout is specified in `traces/README.md` (and in [`format`](mod@format)); [`TraceWriter`]
//! writes it, [`TraceReader`] streams it back a table (one batch's offsets of one table) at a
//! time, and [`read_all`] reads one batch into the workload's table-major CSR. Every problem
//! with a file is a [`TraceError`] naming the file and the byte offset.

pub mod format;
pub mod reader;
pub mod writer;

pub use format::{HEADER_BYTES, Header, IndexDtype, MAGIC, TraceError, VERSION};
pub use reader::{Batch, TraceBatch, TraceReader, read_all};
pub use writer::TraceWriter;

#[cfg(test)]
mod tests;
