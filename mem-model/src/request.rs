//! Memory requests and responses.

use sim_core::Tick;

/// A read or write of `bytes` at `addr`, sent by a requester to the memory system.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemRequest {
    /// Requester-chosen id, returned in the response.
    pub id: u64,
    /// First byte.
    pub addr: u64,
    /// Bytes to move (a cache line for line requests).
    pub bytes: u32,
    /// Write (true) or read.
    pub write: bool,
    /// Tick at which the requester issued it (latency is measured end to end from here).
    pub issued: Tick,
    /// The data will not be reused soon: caches bypass it or insert it at LRU.
    pub non_temporal: bool,
}

/// The answer to a [`MemRequest`]: for a read the data is ready, for a write it is accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemResponse {
    /// The request's id.
    pub id: u64,
    /// The request's address.
    pub addr: u64,
    /// The request's size.
    pub bytes: u32,
    /// Whether it was a write.
    pub write: bool,
    /// When the request was issued.
    pub issued: Tick,
}

impl MemRequest {
    /// A read of `bytes` at `addr`.
    pub fn read(id: u64, addr: u64, bytes: u32, issued: Tick) -> Self {
        Self { id, addr, bytes, write: false, issued, non_temporal: false }
    }

    /// A write of `bytes` at `addr`.
    pub fn write(id: u64, addr: u64, bytes: u32, issued: Tick) -> Self {
        Self { id, addr, bytes, write: true, issued, non_temporal: false }
    }

    /// The response that completes this request.
    pub fn respond(&self) -> MemResponse {
        MemResponse {
            id: self.id,
            addr: self.addr,
            bytes: self.bytes,
            write: self.write,
            issued: self.issued,
        }
    }
}
