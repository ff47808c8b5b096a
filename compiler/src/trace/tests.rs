//! Round trips and every corruption of a `.daeidx` file, each with its message.

use super::*;
use std::path::{Path, PathBuf};
use tempfile::TempDir;

/// A fresh directory of a test's own, removed when dropped (also when the test fails).
fn scratch() -> TempDir {
    tempfile::Builder::new().prefix("daeidx-").tempdir().unwrap()
}

/// 2 batches x 2 tables x 3 bags over 50 rows, sections of sizes (2,0,3), (1,4,2), (0,0,1),
/// (3,3,3).
/// A section: its offsets and row ids.
type Section = (Vec<u64>, Vec<u64>);

fn sections() -> Vec<Section> {
    let sizes = [[2u64, 0, 3], [1, 4, 2], [0, 0, 1], [3, 3, 3]];
    let mut next = 0u64;
    sizes
        .iter()
        .map(|s| {
            let mut offsets = vec![0u64];
            for &n in s {
                offsets.push(offsets.last().unwrap() + n);
            }
            let ids = (0..offsets[3])
                .map(|_| {
                    next += 1;
                    (next * 17 + 3) % 50
                })
                .collect();
            (offsets, ids)
        })
        .collect()
}

fn write(dir: &Path, name: &str, dtype: IndexDtype) -> PathBuf {
    let p = dir.join(name);
    let mut w = TraceWriter::create(&p, Header::new(dtype, 2, 2, 3, 50)).unwrap();
    for (o, i) in sections() {
        w.write_section(&o, &i).unwrap();
    }
    let h = w.finish().unwrap();
    assert_eq!(h.lookups, 22);
    p
}

/// Every section as read back.
fn read_back(p: &Path) -> Result<Vec<Section>, TraceError> {
    let mut r = TraceReader::open(p)?;
    let mut out = Vec::new();
    let mut bag = Vec::new();
    while r.next_section()?.is_some() {
        let offsets = r.offsets().to_vec();
        let mut ids = Vec::new();
        while r.next_bag(&mut bag)?.is_some() {
            ids.extend_from_slice(&bag);
        }
        out.push((offsets, ids));
    }
    Ok(out)
}

#[test]
fn round_trips_give_the_same_arrays() {
    let dir = scratch();
    for (name, dtype, len) in [
        ("u32.daeidx", IndexDtype::U32, 48 + 4 * 4 * 8 + 22 * 4 + 4),
        ("u64.daeidx", IndexDtype::U64, 48 + 4 * 4 * 8 + 22 * 8 + 4),
    ] {
        let p = write(dir.path(), name, dtype);
        assert_eq!(std::fs::metadata(&p).unwrap().len(), len);
        assert_eq!(read_back(&p).unwrap(), sections(), "{name}");
        let r = TraceReader::open(&p).unwrap();
        assert_eq!(*r.header(), Header { dtype, tables: 2, batches: 2, batch: 3, rows: 50, lookups: 22 });
        // The workload's view of batch 1: table-major CSR over both tables.
        let b = read_all(&p, 1, Some(50)).unwrap();
        assert_eq!(b.offsets, [0, 0, 0, 1, 4, 7, 10]);
        let s = sections();
        assert_eq!(b.indices, [s[2].1.clone(), s[3].1.clone()].concat());
    }
}

#[test]
fn the_checksum_is_the_crc32_of_the_bytes_before_it() {
    let dir = scratch();
    let bytes = std::fs::read(write(dir.path(), "crc.daeidx", IndexDtype::U32)).unwrap();
    let (body, sum) = bytes.split_at(bytes.len() - 4);
    assert_eq!(u32::from_le_bytes(sum.try_into().unwrap()), crc32fast::hash(body));
}

/// The message of reading `bytes` (written to a file named `name` in `dir`) whole.
fn error_of(dir: &Path, name: &str, bytes: &[u8], rows: Option<u64>) -> String {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    let e = match read_all(&p, 0, rows) {
        Ok(_) => panic!("{name}: read without error"),
        Err(e) => e.to_string(),
    };
    assert!(e.starts_with(&p.display().to_string()), "{e}");
    e
}

/// `bytes` with its checksum recomputed (so that the corruption, not the checksum, is found).
fn resealed(mut bytes: Vec<u8>) -> Vec<u8> {
    let n = bytes.len() - 4;
    let sum = crc32fast::hash(&bytes[..n]);
    bytes[n..].copy_from_slice(&sum.to_le_bytes());
    bytes
}

#[test]
fn each_corruption_has_its_message_with_file_and_offset() {
    let dir = scratch();
    let good = std::fs::read(write(dir.path(), "good.daeidx", IndexDtype::U32)).unwrap();
    let n = good.len();
    let mut flipped = good.clone();
    flipped[n - 2] ^= 0x40;
    let e = error_of(dir.path(), "sum.daeidx", &flipped, None);
    assert!(e.contains(&format!("byte {}: checksum mismatch: stored", n - 4)), "{e}");
    // A flipped data byte is caught by the checksum too.
    let mut data = good.clone();
    // The last row id's low bit: still in range.
    data[n - 8] ^= 0x01;
    assert!(error_of(dir.path(), "data.daeidx", &data, None).contains("checksum mismatch"));
    for cut in [0usize, 5, 47, 48, 100, n - 5, n - 1] {
        let e = error_of(dir.path(), "cut.daeidx", &good[..cut], None);
        assert!(e.contains(&format!("truncated at byte {cut}")), "{cut}: {e}");
    }
    let mut magic = good.clone();
    magic[0] = b'X';
    let e = error_of(dir.path(), "magic.daeidx", &magic, None);
    assert!(e.contains("byte 0: bad magic") && e.contains("not a .daeidx"), "{e}");
    let mut version = good.clone();
    version[8] = 7;
    assert!(
        error_of(dir.path(), "version.daeidx", &version, None)
            .contains("byte 8: unsupported format version 7")
    );
    let mut dtype = good.clone();
    dtype[10] = 2;
    assert!(
        error_of(dir.path(), "dtype.daeidx", &dtype, None)
            .contains("byte 10: unknown row id type 2 (4 for u32, 8 for u64)")
    );
    // Section 0's offsets (2, 2, 5) become (2, 1, 5): offsets[2] sits at byte 48 + 16.
    let mut mono = good.clone();
    mono[64..72].copy_from_slice(&1u64.to_le_bytes());
    let e = error_of(dir.path(), "mono.daeidx", &resealed(mono), None);
    assert!(
        e.contains("byte 64: batch 0, table 0: offsets not monotone: offsets[2] = 1 is below offsets[1] = 2"),
        "{e}"
    );
    // The last offset of the last section ending short of the lookup count.
    let last = n - 4 - 9 * 4 - 8;
    let mut short = good.clone();
    short[last..last + 8].copy_from_slice(&8u64.to_le_bytes());
    let e = error_of(dir.path(), "short.daeidx", &resealed(short), None);
    assert!(
        e.contains("the sections' offsets end at 21 row ids in all, but the header says lookups = 22"),
        "{e}"
    );
    // A row id beyond the header's rows, and beyond a table size the caller gives.
    let mut id = good.clone();
    id[80..84].copy_from_slice(&50u32.to_le_bytes());
    let e = error_of(dir.path(), "id.daeidx", &resealed(id), None);
    assert!(
        e.contains("byte 80: batch 0, table 0, bag 0: row id 50 is out of range for a table of 50 rows"),
        "{e}"
    );
    let e = error_of(dir.path(), "small.daeidx", &good, Some(10));
    assert!(e.contains("is out of range for a table of 10 rows"), "{e}");
    // Absurd counts: 2^60 lookups, and counts that overflow 64 bits; no allocation either way.
    let mut huge = good.clone();
    huge[40..48].copy_from_slice(&(1u64 << 60).to_le_bytes());
    let e = error_of(dir.path(), "huge.daeidx", &huge, None);
    assert!(
        e.contains(&format!("truncated at byte {n}: the header's counts"))
            && e.contains("1152921504606846976 lookups"),
        "{e}"
    );
    let mut over = good.clone();
    over[24..32].copy_from_slice(&u64::MAX.to_le_bytes());
    assert!(error_of(dir.path(), "over.daeidx", &over, None).contains("overflow 64-bit file sizes"));
    let mut extra = good.clone();
    extra.push(0);
    assert!(
        error_of(dir.path(), "extra.daeidx", &extra, None)
            .contains(&format!("byte {n}: 1 bytes after the checksum"))
    );
}

#[test]
fn a_stream_of_unknown_length_with_a_lying_header_is_an_error_not_an_allocation() {
    let dir = scratch();
    let good = std::fs::read(write(dir.path(), "stream.daeidx", IndexDtype::U64)).unwrap();
    let mut huge = good.clone();
    // 2^60 bags per table: the offsets would need 2^63 bytes.
    huge[24..32].copy_from_slice(&(1u64 << 58).to_le_bytes());
    let mut r = TraceReader::new(std::io::Cursor::new(huge), "stream".into(), None).unwrap();
    let e = loop {
        match r.next_section() {
            Ok(Some(_)) => {}
            Ok(None) => panic!("read a lying file"),
            Err(e) => break e.to_string(),
        }
    };
    assert!(e.contains("truncated") || e.contains("offsets"), "{e}");
}

#[test]
fn arbitrary_bytes_never_panic() {
    let dir = scratch();
    let good = std::fs::read(write(dir.path(), "fuzz.daeidx", IndexDtype::U32)).unwrap();
    let mut x = 0x1234_5678u64;
    for k in 0..400 {
        let mut b = good.clone();
        for _ in 0..1 + k % 4 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let at = (x >> 33) as usize % b.len();
            b[at] = (x >> 13) as u8;
        }
        let _ = read_all_bytes(&b);
    }
}

fn read_all_bytes(b: &[u8]) -> Result<(), TraceError> {
    let mut r = TraceReader::new(std::io::Cursor::new(b), "x".into(), Some(b.len() as u64))?;
    let mut bag = Vec::new();
    while r.next_section()?.is_some() {
        while r.next_bag(&mut bag)?.is_some() {}
    }
    Ok(())
}

#[test]
fn the_writer_refuses_what_the_reader_would() {
    let dir = scratch();
    let p = dir.path().join("w.daeidx");
    let mut w = TraceWriter::create(&p, Header::new(IndexDtype::U32, 1, 1, 2, 10)).unwrap();
    assert!(w.write_section(&[0, 2, 1], &[1]).is_err());
    assert!(w.write_section(&[0, 1, 2], &[1, 10]).unwrap_err().to_string().contains("row id 10"));
    assert!(TraceWriter::create(&p, Header::new(IndexDtype::U32, 1, 1, 2, 1 << 33)).is_err());
    let w = TraceWriter::create(&p, Header::new(IndexDtype::U32, 1, 1, 2, 10)).unwrap();
    assert!(w.finish().unwrap_err().to_string().contains("0 sections written"));
}

#[test]
fn a_file_built_from_the_readme_tables_alone_reads_back() {
    // What traces/README.md's Python example writes: one batch, one table, bags [3, 1] and [4]
    // over 10 rows, u32 row ids.
    let mut b = b"DAEINDEX".to_vec();
    b.extend_from_slice(&1u16.to_le_bytes());
    b.extend_from_slice(&[4, 0]);
    for x in [1u32, 1, 0] {
        b.extend_from_slice(&x.to_le_bytes());
    }
    for x in [2u64, 10, 3, 0, 2, 3] {
        b.extend_from_slice(&x.to_le_bytes());
    }
    for x in [3u32, 1, 4] {
        b.extend_from_slice(&x.to_le_bytes());
    }
    let sum = crc32fast::hash(&b);
    b.extend_from_slice(&sum.to_le_bytes());
    let dir = scratch();
    let p = dir.path().join("readme.daeidx");
    std::fs::write(&p, &b).unwrap();
    let batch = read_all(&p, 0, None).unwrap();
    assert_eq!((batch.offsets, batch.indices), (vec![0, 2, 3], vec![3, 1, 4]));
    assert_eq!(batch.header, Header { lookups: 3, ..Header::new(IndexDtype::U32, 1, 1, 2, 10) });
}
