//! Data files read whole as text, gzip-compressed or not: graph edge lists (`[graph] file`),
//! triples files and dictionaries in a workload, and the files `dae-sim trace info` reads.
//!
//! A file whose name ends in `.gz` is decompressed as it is read (SNAP distributes its larger
//! edge lists as `.txt.gz`; several gzip members one after another, as `cat a.gz b.gz` makes,
//! read as one file). The text it decompresses to is bounded: decompression stops one byte
//! past [`MAX_DECOMPRESSED`] bytes (1 GiB) and the file is refused, so a small file that would
//! unpack to far more (a "zip bomb") takes at most about twice the limit in memory (the
//! buffer grows by doubling) and no more. Any other file is read as it is. Either way the
//! text must be UTF-8; every error names the file.

use flate2::read::MultiGzDecoder;
use std::io::Read;
use std::path::Path;
use thiserror::Error;

/// The most bytes a `.gz` data file may decompress to (1 GiB).
pub const MAX_DECOMPRESSED: u64 = 1 << 30;

/// Why a data file could not be read; each names the file.
#[derive(Debug, Error)]
pub enum DataFileError {
    /// The file could not be opened or read (or, not compressed, is not UTF-8 text).
    #[error("{file}: cannot read: {error}")]
    Io {
        /// The file.
        file: String,
        /// What the system said.
        error: std::io::Error,
    },
    /// A `.gz` file is not gzip data, or is corrupt or truncated.
    #[error("{file}: cannot decompress (gzip): {error}")]
    Gzip {
        /// The file.
        file: String,
        /// What the decoder said.
        error: std::io::Error,
    },
    /// A `.gz` file decompresses to more than the limit.
    #[error("{file}: decompresses to more than {limit} bytes, the limit for a .gz data file")]
    TooLarge {
        /// The file.
        file: String,
        /// The limit, in bytes.
        limit: u64,
    },
    /// A `.gz` file's text is not UTF-8.
    #[error("{file}: decompressed text is not UTF-8 (at byte {offset})")]
    NotUtf8 {
        /// The file.
        file: String,
        /// The offset of the first bad byte in the decompressed text.
        offset: usize,
    },
}

/// Whether `path` names a gzip-compressed file (its name ends in `.gz`).
pub fn is_gzip(path: &Path) -> bool {
    path.extension().is_some_and(|e| e.eq_ignore_ascii_case("gz"))
}

/// The extension that tells what `path` holds: its last one, or for a `.gz` file the one
/// before it (`cora.cites.gz`: `cites`).
pub fn content_extension(path: &Path) -> Option<&str> {
    let name = path.file_name()?.to_str()?;
    // A `.gz` name ends in three ASCII bytes, so this cut is on a character boundary.
    let name = if is_gzip(path) { &name[..name.len() - 3] } else { name };
    Path::new(name).extension()?.to_str()
}

/// The text of `path` (decompressed if its name ends in `.gz`, up to [`MAX_DECOMPRESSED`]
/// bytes).
pub fn read_text(path: &Path) -> Result<String, DataFileError> {
    read_text_limited(path, MAX_DECOMPRESSED)
}

/// [`read_text`] with the decompressed size bounded by `limit` bytes instead.
pub fn read_text_limited(path: &Path, limit: u64) -> Result<String, DataFileError> {
    let file = || path.display().to_string();
    if !is_gzip(path) {
        return std::fs::read_to_string(path).map_err(|error| DataFileError::Io { file: file(), error });
    }
    let f = std::fs::File::open(path).map_err(|error| DataFileError::Io { file: file(), error })?;
    let mut reader = std::io::BufReader::new(f);
    // Say plainly when the file is not gzip at all (the decoder's own words are "invalid gzip
    // header" or, for an empty file, "failed to fill whole buffer"). The first two bytes are
    // read whole (a pipe may give them one at a time) and put back in front of the rest.
    let mut head = Vec::with_capacity(2);
    (&mut reader)
        .take(2)
        .read_to_end(&mut head)
        .map_err(|error| DataFileError::Io { file: file(), error })?;
    if !head.starts_with(&[0x1f, 0x8b]) {
        let what = if head.is_empty() { "the file is empty" } else { "no 1f 8b magic at byte 0" };
        let error = std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("not gzip data ({what}); a plain text file's name must not end in .gz"),
        );
        return Err(DataFileError::Gzip { file: file(), error });
    }
    let mut bytes = Vec::new();
    MultiGzDecoder::new(std::io::Cursor::new(head).chain(reader))
        .take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|error| DataFileError::Gzip { file: file(), error })?;
    if bytes.len() as u64 > limit {
        return Err(DataFileError::TooLarge { file: file(), limit });
    }
    String::from_utf8(bytes)
        .map_err(|e| DataFileError::NotUtf8 { file: file(), offset: e.utf8_error().valid_up_to() })
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::Compression;
    use flate2::write::GzEncoder;
    use std::io::Write;
    use std::path::PathBuf;
    use tempfile::TempDir;

    /// A fresh directory of a test's own, removed when dropped (also when the test fails).
    fn scratch() -> TempDir {
        tempfile::Builder::new().prefix("dae-sim-data-file-").tempdir().unwrap()
    }

    /// A file `name` holding `bytes` in `dir`.
    fn file(dir: &TempDir, name: &str, bytes: &[u8]) -> PathBuf {
        let p = dir.path().join(name);
        std::fs::write(&p, bytes).unwrap();
        p
    }

    fn gzip(text: &[u8]) -> Vec<u8> {
        let mut e = GzEncoder::new(Vec::new(), Compression::default());
        e.write_all(text).unwrap();
        e.finish().unwrap()
    }

    const EDGES: &str = "# a SNAP header\r\n0\t1\r\n1\t0\r\n2\t2\r\n";

    #[test]
    fn a_gz_file_reads_as_the_text_it_compresses() {
        let dir = scratch();
        let plain = file(&dir, "g.txt", EDGES.as_bytes());
        let gz = file(&dir, "g.txt.gz", &gzip(EDGES.as_bytes()));
        assert_eq!(read_text(&plain).unwrap(), EDGES);
        assert_eq!(read_text(&gz).unwrap(), EDGES);
        // Two members one after another read as one text; an upper-case suffix is gzip too.
        let two = [gzip(b"0 1\n"), gzip(b"1 2\n")].concat();
        assert_eq!(read_text(&file(&dir, "two.TXT.GZ", &two)).unwrap(), "0 1\n1 2\n");
        // An empty text compresses to a valid, empty file.
        assert_eq!(read_text(&file(&dir, "empty.gz", &gzip(b""))).unwrap(), "");
    }

    #[test]
    fn a_corrupt_or_truncated_gz_file_is_an_error_naming_it() {
        let dir = scratch();
        let good = gzip(EDGES.as_bytes());
        let mut flipped = good.clone();
        let mid = flipped.len() / 2;
        flipped[mid] ^= 0xff;
        for (name, bytes) in [
            ("plain.txt.gz", EDGES.as_bytes().to_vec()),
            ("truncated.gz", good[..good.len() - 6].to_vec()),
            ("flipped.gz", flipped),
            ("empty-file.gz", Vec::new()),
        ] {
            let p = file(&dir, name, &bytes);
            let e = read_text(&p).unwrap_err();
            let msg = e.to_string();
            assert!(matches!(e, DataFileError::Gzip { .. }), "{name}: {msg}");
            assert!(msg.starts_with(&format!("{}: cannot decompress (gzip): ", p.display())), "{msg}");
            // Files that are not gzip at all say so.
            let not_gzip = matches!(name, "plain.txt.gz" | "empty-file.gz");
            assert_eq!(msg.contains("not gzip data"), not_gzip, "{msg}");
        }
        let missing = std::env::temp_dir().join("dae-sim-no-such-file.txt.gz");
        let msg = read_text(&missing).unwrap_err().to_string();
        assert!(msg.starts_with(&format!("{}: cannot read: ", missing.display())), "{msg}");
        let latin1 = file(&dir, "latin1.gz", &gzip(b"0 1\n# caf\xe9\n"));
        let msg = read_text(&latin1).unwrap_err().to_string();
        assert_eq!(msg, format!("{}: decompressed text is not UTF-8 (at byte 9)", latin1.display()));
    }

    #[test]
    fn a_gz_file_that_decompresses_beyond_the_limit_is_refused() {
        let dir = scratch();
        let text = "0 1\n".repeat(1000);
        let p = file(&dir, "big.gz", &gzip(text.as_bytes()));
        assert_eq!(read_text_limited(&p, 4000).unwrap(), text, "exactly the limit is fine");
        let e = read_text_limited(&p, 3999).unwrap_err();
        assert!(matches!(e, DataFileError::TooLarge { limit: 3999, .. }), "{e}");
        let want =
            format!("{}: decompresses to more than 3999 bytes, the limit for a .gz data file", p.display());
        assert_eq!(e.to_string(), want);
        // A plain file is read as it is, with no limit.
        let plain = file(&dir, "big.txt", text.as_bytes());
        assert_eq!(read_text_limited(&plain, 10).unwrap(), text);
    }

    #[test]
    fn the_content_extension_looks_through_gz() {
        for (path, ext) in [
            ("a/cora.cites.gz", Some("cites")),
            ("cora.cites", Some("cites")),
            ("m.mtx.GZ", Some("mtx")),
            ("soc-Slashdot0902.txt.gz", Some("txt")),
            ("edges.gz", None),
            ("edges", None),
        ] {
            assert_eq!(content_extension(Path::new(path)), ext, "{path}");
        }
    }
}
