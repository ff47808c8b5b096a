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
use sim_core::procedural::{TableFormat, column_key, keyed_value, row_byte, row_params_key};
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
    /// A procedural row-major table of `dim` columns stored in a narrower `format` (f16, bf16,
    /// or int8 rows with their scale and bias: see [`sim_core::procedural`]): the same values,
    /// really encoded, so loads see the format's bytes. Rows are `format.row_bytes(dim)` apart.
    Encoded {
        /// Seed of the table contents.
        seed: u64,
        /// Table number (feeds the value function).
        table: u32,
        /// Columns per row.
        dim: u32,
        /// How rows are stored.
        format: TableFormat,
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
    /// Per region (same order), the column keys of a procedural table
    /// ([`sim_core::procedural::column_key`]), so reading an element costs one hash step.
    keys: Vec<Box<[u64]>>,
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
        if let Backing::Procedural { dim: 0, .. } | Backing::Encoded { dim: 0, .. } = region.backing {
            return Err(MemError::Zero { what: "procedural table dim" });
        }
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
        let keys: Box<[u64]> = match region.backing {
            Backing::Procedural { seed, table, dim } => {
                (0..dim).map(|c| column_key(seed, table, c)).collect()
            }
            // The column keys, then the row-parameter key.
            Backing::Encoded { seed, table, dim, .. } => {
                (0..dim).map(|c| column_key(seed, table, c)).chain([row_params_key(seed, table)]).collect()
            }
            _ => Box::new([]),
        };
        let at = self.regions.partition_point(|r| r.base < region.base);
        self.regions.insert(at, region);
        self.keys.insert(at, keys);
        Ok(RegionId(at as u32))
    }

    /// The regions, by address.
    pub fn regions(&self) -> &[Region] {
        &self.regions
    }

    /// The region holding `[addr, addr + bytes)`.
    pub fn region_of(&self, addr: u64, bytes: u64) -> Result<&Region, MemError> {
        self.index_of(addr, bytes).map(|i| &self.regions[i])
    }

    /// The index of the region holding `[addr, addr + bytes)`.
    fn index_of(&self, addr: u64, bytes: u64) -> Result<usize, MemError> {
        let i = self.regions.partition_point(|r| r.base <= addr);
        i.checked_sub(1)
            .filter(|&i| self.regions[i].contains(addr, bytes))
            .ok_or(MemError::Unmapped { addr, bytes })
    }

    /// The 32-bit word at `addr`.
    pub fn read_u32(&self, addr: u64) -> Result<u32, MemError> {
        let mut w = [0u32];
        self.read_u32s(addr, &mut w)?;
        Ok(w[0])
    }

    /// The `out.len()` bytes from `addr`, which must lie in one region, at any alignment (the
    /// elements of a narrow table, an int8 row's scale and bias).
    pub fn read_bytes(&self, addr: u64, out: &mut [u8]) -> Result<(), MemError> {
        let ri = self.index_of(addr, (out.len() as u64).max(1))?;
        let r = &self.regions[ri];
        let first = addr - r.base;
        if let Backing::Encoded { dim, format, .. } = r.backing {
            let keys = &self.keys[ri];
            let (cols, params) = keys.split_at(dim as usize);
            let row_bytes = format.row_bytes(dim);
            for (k, o) in out.iter_mut().enumerate() {
                let at = first + k as u64;
                *o = row_byte(format, cols, params[0], at / row_bytes, at % row_bytes);
            }
            return Ok(());
        }
        // Word-backed regions: the words holding the bytes (regions are whole words).
        let start = first & !3;
        let end = (first + out.len() as u64).div_ceil(4) * 4;
        let mut words = vec![0u32; ((end - start) / 4) as usize];
        self.read_u32s(r.base + start, &mut words)?;
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        let skip = (first - start) as usize;
        out.copy_from_slice(&bytes[skip..skip + out.len()]);
        Ok(())
    }

    /// The zero-extended little-endian value of the `bytes` (1, 2 or 4) at `addr`, at any
    /// alignment.
    pub fn read_narrow(&self, addr: u64, bytes: u64) -> Result<u32, MemError> {
        let mut b = [0u8; 4];
        let n = bytes.clamp(1, 4) as usize;
        self.read_bytes(addr, &mut b[..n])?;
        Ok(u32::from_le_bytes(b))
    }

    /// The `out.len()` consecutive 32-bit words from `addr`, which must lie in one region (a
    /// vector load of a row): one region lookup, and for a procedural table one hash step per
    /// word.
    pub fn read_u32s(&self, addr: u64, out: &mut [u32]) -> Result<(), MemError> {
        if let Ok(r) = self.region_of(addr, (out.len() as u64 * 4).max(4))
            && matches!(r.backing, Backing::Encoded { .. })
        {
            // An encoded table's words are its bytes, at any alignment.
            for (k, o) in out.iter_mut().enumerate() {
                *o = self.read_narrow(addr + 4 * k as u64, 4)?;
            }
            return Ok(());
        }
        if !addr.is_multiple_of(4) {
            return Err(MemError::Misaligned { addr, align: 4 });
        }
        let bytes = out.len() as u64 * 4;
        let ri = self.index_of(addr, bytes.max(4))?;
        let r = &self.regions[ri];
        let first = (addr - r.base) / 4;
        match &r.backing {
            // Sizes are checked at `add`: every word in range exists.
            Backing::Words(w) => {
                let from = first as usize;
                out.copy_from_slice(&w[from..from + out.len()]);
            }
            Backing::Procedural { dim, .. } => {
                let keys = &self.keys[ri];
                let dim = u64::from(*dim).max(1);
                let (mut row, mut col) = (first / dim, (first % dim) as usize);
                for o in out.iter_mut() {
                    *o = keyed_value(keys[col], row).to_bits();
                    col += 1;
                    if col == keys.len() {
                        (row, col) = (row + 1, 0);
                    }
                }
            }
            Backing::File(f) => {
                for (k, o) in out.iter_mut().enumerate() {
                    *o = f.read_u32((first + k as u64) * 4)?;
                }
            }
            Backing::Zero => out.fill(0),
            Backing::Encoded { .. } => unreachable!("encoded regions are read byte by byte above"),
        }
        Ok(())
    }

    /// The f32 at `addr`.
    pub fn read_f32(&self, addr: u64) -> Result<f32, MemError> {
        self.read_u32(addr).map(f32::from_bits)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sim_core::procedural::table_value;

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
    fn bulk_reads_equal_word_reads_across_row_ends() {
        let m = image();
        // 70 words from column 60 of row 7: they cross into row 8 and row 9's start.
        let addr = (1 << 40) + (7 * 64 + 60) * 4;
        let mut bulk = [0u32; 70];
        m.read_u32s(addr, &mut bulk).unwrap();
        for (k, w) in bulk.iter().enumerate() {
            assert_eq!(*w, m.read_u32(addr + 4 * k as u64).unwrap(), "word {k}");
            let (row, col) = ((7 * 64 + 60 + k as u64) / 64, ((60 + k) % 64) as u32);
            assert_eq!(f32::from_bits(*w), table_value(3, 1, row, col));
        }
        let mut two = [0u32; 2];
        m.read_u32s(0x1008, &mut two).unwrap();
        assert_eq!(two, [7, 8]);
        // A read running off its region is refused whole.
        assert_eq!(m.read_u32s(0x100c, &mut two), Err(MemError::Unmapped { addr: 0x100c, bytes: 8 }));
        let mut none: [u32; 0] = [];
        assert!(m.read_u32s(0x1000, &mut none).is_ok());
        let zero_dim = Region {
            name: "z".into(),
            base: 0x2000,
            size: 64,
            backing: Backing::Procedural { seed: 1, table: 0, dim: 0 },
        };
        assert!(image().add(zero_dim).is_err());
    }

    #[test]
    fn reads_encoded_tables_byte_by_byte() {
        use sim_core::procedural::{f16_to_f32, format_value};
        let mut m = image();
        let (dim, base) = (5u32, 1u64 << 44);
        for (n, format) in [TableFormat::F16, TableFormat::Bf16, TableFormat::Int8].into_iter().enumerate() {
            let base = base + (n as u64) * (1 << 30);
            let backing = Backing::Encoded { seed: 3, table: 2, dim, format };
            m.add(Region { name: format!("t{n}"), base, size: 1000 * format.row_bytes(dim), backing })
                .unwrap();
            let keys: Vec<u64> = (0..dim).map(|c| column_key(3, 2, c)).collect();
            let pk = row_params_key(3, 2);
            for row in [0u64, 7, 999] {
                let at = base + row * format.row_bytes(dim);
                for c in 0..dim as u64 {
                    let bits = m.read_narrow(at + c * format.elem_bytes(), format.elem_bytes()).unwrap();
                    let mut x = format.widen(bits);
                    if format == TableFormat::Int8 {
                        let f = |o: u64| f32::from_bits(m.read_narrow(at + o, 4).unwrap());
                        x = sim_core::procedural::dequantize(x as i8, f(5), f(9));
                        // The same word through read_u32s, unaligned.
                        let mut w = [0u32];
                        m.read_u32s(at + 5, &mut w).unwrap();
                        assert_eq!(f32::from_bits(w[0]), f(5));
                    }
                    assert_eq!(x, format_value(format, keys[c as usize], pk, row));
                    if format == TableFormat::F16 {
                        assert_eq!(f16_to_f32(bits as u16), table_value(3, 2, row, c as u32));
                    }
                }
            }
            // The last byte is readable, the next is not.
            let end = base + 1000 * format.row_bytes(dim);
            assert!(m.read_narrow(end - 1, 1).is_ok());
            assert!(m.read_narrow(end - 1, 2).is_err());
        }
        // Word-backed regions read as bytes too.
        assert_eq!(m.read_narrow(0x1009, 2).unwrap(), 0);
        assert_eq!(m.read_narrow(0x1008, 1).unwrap(), 7);
    }

    #[test]
    fn reads_file_backed_words_on_demand() {
        let file = tempfile::Builder::new().prefix("dae-sim-image-").suffix(".bin").tempfile().unwrap();
        let path = file.path();
        let words: Vec<u8> = [7u32, 8, 9].iter().flat_map(|w| w.to_le_bytes()).collect();
        std::fs::write(path, &words).unwrap();
        let mut m = MemoryImage::new();
        let f = Arc::new(FileBacking::open(path, 4).unwrap());
        m.add(Region { name: "f".into(), base: 0x100, size: 8, backing: Backing::File(f.clone()) }).unwrap();
        assert_eq!((m.read_u32(0x100).unwrap(), m.read_u32(0x104).unwrap()), (8, 9));
        let e =
            m.add(Region { name: "g".into(), base: 0x200, size: 12, backing: Backing::File(f) }).unwrap_err();
        assert!(e.to_string().contains("holds 8 B from offset 4, region g needs 12"), "{e}");
        assert!(FileBacking::open(Path::new("/nonexistent/x"), 0).is_err());
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
