//! The functional memory image: what the bytes at each address really hold.
//!
//! dae-sim is execution-driven: the indices the access unit loads decide which rows it fetches
//! next, so memory must hold real values. The image is a set of non-overlapping regions, each
//! backed by an array of 32-bit words (offsets, indices), by a procedural f32 table (every
//! element computed from seed, table, row and column, so a 100 GB table costs nothing), by a
//! file (read on demand at the element's offset, so a table on disk costs no host memory
//! either), or by zeros (output buffers, whose values live with the core that writes them). The
//! image is read-only during a run and shared by every component that reads it.

use crate::MemError;
use sim_core::procedural::table_value;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Index of a region in its image.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RegionId(pub u32);

/// What a region's bytes hold.
#[derive(Debug, Clone, PartialEq)]
pub enum Backing {
    /// Little-endian 32-bit words stored in host memory.
    Words(Vec<u32>),
    /// A procedural row-major f32 table of `dim` columns.
    Procedural {
        /// Seed of the table contents.
        seed: u64,
        /// Table number (feeds the value function).
        table: u32,
        /// Columns per row.
        dim: u32,
    },
    /// Little-endian 32-bit words read from a file on demand.
    File(Arc<FileBacking>),
    /// Zeros: write-only buffers whose contents are tracked by their writer.
    Zero,
}

/// An open file whose bytes back a region, from `offset` on.
#[derive(Debug)]
pub struct FileBacking {
    path: PathBuf,
    file: File,
    offset: u64,
    len: u64,
}

impl FileBacking {
    /// Opens `path`; the region's byte 0 is the file's byte `offset`.
    pub fn open(path: &Path, offset: u64) -> Result<Self, MemError> {
        let io =
            |e: std::io::Error| MemError::Io { path: path.display().to_string(), message: e.to_string() };
        let file = File::open(path).map_err(io)?;
        let len = file.metadata().map_err(io)?.len();
        Ok(Self { path: path.to_path_buf(), file, offset, len })
    }

    /// Bytes available from `offset` to the end of the file.
    pub fn available(&self) -> u64 {
        self.len.saturating_sub(self.offset)
    }

    fn read_u32(&self, at: u64) -> Result<u32, MemError> {
        let mut b = [0u8; 4];
        self.file
            .read_exact_at(&mut b, self.offset + at)
            .map_err(|e| MemError::Io { path: self.path.display().to_string(), message: e.to_string() })?;
        Ok(u32::from_le_bytes(b))
    }
}

/// Two file backings are the same when they read the same bytes of the same path.
impl PartialEq for FileBacking {
    fn eq(&self, other: &Self) -> bool {
        self.path == other.path && self.offset == other.offset
    }
}

/// A named address range of the image.
#[derive(Debug, Clone, PartialEq)]
pub struct Region {
    /// Name for reports and errors (`table0`, `indices`).
    pub name: String,
    /// First byte.
    pub base: u64,
    /// Size in bytes.
    pub size: u64,
    /// Contents.
    pub backing: Backing,
}

impl Region {
    /// Whether `[addr, addr + bytes)` lies inside this region.
    fn contains(&self, addr: u64, bytes: u64) -> bool {
        addr >= self.base && addr.checked_add(bytes).is_some_and(|end| end <= self.base + self.size)
    }
}

/// A set of non-overlapping regions.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MemoryImage {
    /// Sorted by base address.
    regions: Vec<Region>,
}

impl MemoryImage {
    /// An empty image.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a region; it must not overlap an existing one.
    pub fn add(&mut self, region: Region) -> Result<RegionId, MemError> {
        if region.size == 0 {
            return Err(MemError::Zero { what: "region size" });
        }
        let Some(end) = region.base.checked_add(region.size) else {
            return Err(MemError::Unmapped { addr: region.base, bytes: region.size });
        };
        if let Backing::Words(w) = &region.backing
            && w.len() as u64 * 4 != region.size
        {
            return Err(MemError::Size { name: region.name, size: region.size, words: w.len() as u64 });
        }
        if let Backing::File(f) = &region.backing
            && f.available() < region.size
        {
            return Err(MemError::Io {
                path: f.path.display().to_string(),
                message: format!(
                    "holds {} B from offset {}, region {} needs {}",
                    f.available(),
                    f.offset,
                    region.name,
                    region.size
                ),
            });
        }
        // Every stored region ends at or below 2^64 (checked above), so `r.base + r.size` fits.
        if let Some(old) = self.regions.iter().find(|r| region.base < r.base + r.size && r.base < end) {
            return Err(MemError::Overlap {
                new: region.name,
                base: region.base,
                size: region.size,
                old: old.name.clone(),
            });
        }
        let at = self.regions.partition_point(|r| r.base < region.base);
        self.regions.insert(at, region);
        Ok(RegionId(at as u32))
    }

    /// The regions, by address.
    pub fn regions(&self) -> &[Region] {
        &self.regions
    }

    /// The region holding `[addr, addr + bytes)`.
    pub fn region_of(&self, addr: u64, bytes: u64) -> Result<&Region, MemError> {
        let i = self.regions.partition_point(|r| r.base <= addr);
        i.checked_sub(1)
            .map(|i| &self.regions[i])
            .filter(|r| r.contains(addr, bytes))
            .ok_or(MemError::Unmapped { addr, bytes })
    }

    fn element(&self, addr: u64) -> Result<(&Region, u64), MemError> {
        if !addr.is_multiple_of(4) {
            return Err(MemError::Misaligned { addr, align: 4 });
        }
        let r = self.region_of(addr, 4)?;
        Ok((r, (addr - r.base) / 4))
    }

    /// The 32-bit word at `addr`.
    pub fn read_u32(&self, addr: u64) -> Result<u32, MemError> {
        let (r, i) = self.element(addr)?;
        Ok(match &r.backing {
            // Sizes are checked at `add`: every word in range exists.
            Backing::Words(w) => w.get(i as usize).copied().unwrap_or(0),
            Backing::Procedural { seed, table, dim } => {
                table_value(*seed, *table, i / *dim as u64, (i % *dim as u64) as u32).to_bits()
            }
            Backing::File(f) => return f.read_u32(i * 4),
            Backing::Zero => 0,
        })
    }

    /// The f32 at `addr`.
    pub fn read_f32(&self, addr: u64) -> Result<f32, MemError> {
        self.read_u32(addr).map(f32::from_bits)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn image() -> MemoryImage {
        let mut m = MemoryImage::new();
        m.add(Region {
            name: "idx".into(),
            base: 0x1000,
            size: 16,
            backing: Backing::Words(vec![5, 6, 7, 8]),
        })
        .unwrap();
        m.add(Region {
            name: "table".into(),
            base: 1 << 40,
            size: 100 << 30,
            backing: Backing::Procedural { seed: 3, table: 1, dim: 64 },
        })
        .unwrap();
        m
    }

    #[test]
    fn reads_words_and_procedural_rows() {
        let m = image();
        assert_eq!(m.read_u32(0x1008).unwrap(), 7);
        // Row 1000, column 5 of a 100 GiB procedural table.
        let addr = (1 << 40) + (1000 * 64 + 5) * 4;
        assert_eq!(m.read_f32(addr).unwrap(), table_value(3, 1, 1000, 5));
    }

    #[test]
    fn reads_file_backed_words_on_demand() {
        let path = std::env::temp_dir().join(format!("dae-sim-image-{}.bin", std::process::id()));
        let words: Vec<u8> = [7u32, 8, 9].iter().flat_map(|w| w.to_le_bytes()).collect();
        std::fs::write(&path, &words).unwrap();
        let mut m = MemoryImage::new();
        let f = Arc::new(FileBacking::open(&path, 4).unwrap());
        m.add(Region { name: "f".into(), base: 0x100, size: 8, backing: Backing::File(f.clone()) }).unwrap();
        assert_eq!((m.read_u32(0x100).unwrap(), m.read_u32(0x104).unwrap()), (8, 9));
        let e =
            m.add(Region { name: "g".into(), base: 0x200, size: 12, backing: Backing::File(f) }).unwrap_err();
        assert!(e.to_string().contains("holds 8 B from offset 4, region g needs 12"), "{e}");
        assert!(FileBacking::open(Path::new("/nonexistent/x"), 0).is_err());
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn rejects_unmapped_misaligned_and_overlapping() {
        let mut m = image();
        assert_eq!(m.read_u32(0x1010), Err(MemError::Unmapped { addr: 0x1010, bytes: 4 }));
        assert_eq!(m.read_u32(0x0), Err(MemError::Unmapped { addr: 0, bytes: 4 }));
        assert_eq!(m.read_u32(0x1002), Err(MemError::Misaligned { addr: 0x1002, align: 4 }));
        let e =
            m.add(Region { name: "x".into(), base: 0x100c, size: 8, backing: Backing::Zero }).unwrap_err();
        assert!(e.to_string().contains("overlaps region idx"), "{e}");
        let e = m.add(Region { name: "w".into(), base: 0x9000, size: 12, backing: Backing::Words(vec![1]) });
        assert_eq!(e.unwrap_err().to_string(), "region w is 12 B but holds 1 words (4 B each)");
        let huge = Region { name: "end".into(), base: u64::MAX - 8, size: 100, backing: Backing::Zero };
        assert!(m.add(huge).is_err(), "a region past 2^64 is refused");
        assert_eq!(m.read_u32(u64::MAX - 3), Err(MemError::Unmapped { addr: u64::MAX - 3, bytes: 4 }));
    }
}
