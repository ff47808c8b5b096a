//! Reading 1-D integer `.npy` arrays (format 1.0 to 3.0): the index traces users convert from
//! PyTorch (`np.save("indices.npy", t.numpy())`).
//!
//! Accepted dtypes: little-endian `<i4`, `<u4`, `<i8`, `<u8` (and `|i1`/`|u1`), C order, one
//! dimension (or a scalar-free shape `(n,)`). Every error names the file and, for bad data, the
//! byte offset or element position, and nothing panics on any input.

use std::path::Path;
use thiserror::Error;

/// Why an array could not be read.
#[derive(Debug, Error, PartialEq, Eq)]
#[error("{path}: {message}")]
pub struct NpyReadError {
    /// The file.
    pub path: String,
    /// What is wrong (with a byte offset where it helps).
    pub message: String,
}

/// Decodes one element's little-endian bytes (`None` if it does not fit an `i64`).
type Decode = fn(&[u8]) -> Option<i64>;

/// Reads a 1-D integer array as `i64`s.
pub fn read_ints(path: &Path) -> Result<Vec<i64>, NpyReadError> {
    let err = |message: String| NpyReadError { path: path.display().to_string(), message };
    let bytes = std::fs::read(path).map_err(|e| err(format!("cannot read: {e}")))?;
    parse_ints(&bytes).map_err(err)
}

/// Parses the bytes of a 1-D integer `.npy` file.
pub fn parse_ints(bytes: &[u8]) -> Result<Vec<i64>, String> {
    if bytes.len() < 10 || &bytes[..6] != b"\x93NUMPY" {
        return Err("not a .npy file (no \\x93NUMPY magic at offset 0)".into());
    }
    let (header_len, start) = match bytes[6] {
        1 => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10usize),
        2 | 3 if bytes.len() >= 12 => {
            (u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize, 12)
        }
        v => return Err(format!("unsupported .npy version {v} at offset 6")),
    };
    let end = start
        .checked_add(header_len)
        .filter(|&e| e <= bytes.len())
        .ok_or("header runs past the end of the file")?;
    let header = std::str::from_utf8(&bytes[start..end]).map_err(|_| "header is not text".to_string())?;
    // The header is a Python dict literal, padded with spaces and ended by a newline.
    let dict = header.trim_end();
    if !(dict.starts_with('{') && dict.ends_with('}')) {
        // A version 2 header may be up to 4 GiB: quote its start only.
        let start: String = dict.chars().take(80).collect();
        let more = if start.len() < dict.len() { "..." } else { "" };
        return Err(format!("header {start:?}{more} is not a dictionary ({{...}})"));
    }
    let field = |key: &str| -> Option<&str> {
        let at = header.find(&format!("'{key}'"))?;
        let rest = header[at + key.len() + 2..].trim_start().strip_prefix(':')?.trim_start();
        Some(rest)
    };
    let descr = field("descr")
        .and_then(|r| r.strip_prefix('\''))
        .and_then(|r| r.split('\'').next())
        .ok_or("header has no 'descr'")?;
    match field("fortran_order") {
        Some(r) if r.starts_with("False") => {}
        Some(r) if r.starts_with("True") => return Err("Fortran-ordered arrays are not supported".into()),
        _ => return Err("header has no 'fortran_order': False or True".into()),
    }
    let shape = field("shape")
        .and_then(|r| r.strip_prefix('('))
        .and_then(|r| r.split(')').next())
        .ok_or("header has no 'shape'")?;
    let dims: Vec<&str> = shape.split(',').map(str::trim).filter(|d| !d.is_empty()).collect();
    let [n] = dims.as_slice() else {
        return Err(format!("shape ({shape}) is not one-dimensional"));
    };
    let n: usize = n.parse().map_err(|_| format!("bad shape ({shape})"))?;
    let (size, read): (usize, Decode) = match descr {
        "<i4" => (4, |b| Some(i64::from(i32::from_le_bytes(b.try_into().ok()?)))),
        "<u4" => (4, |b| Some(i64::from(u32::from_le_bytes(b.try_into().ok()?)))),
        "<i8" => (8, |b| Some(i64::from_le_bytes(b.try_into().ok()?))),
        "<u8" => (8, |b| i64::try_from(u64::from_le_bytes(b.try_into().ok()?)).ok()),
        "|i1" => (1, |b| Some(i64::from(b[0] as i8))),
        "|u1" => (1, |b| Some(i64::from(b[0]))),
        other => return Err(format!("dtype '{other}' is not a little-endian integer (<i4, <u4, <i8, <u8)")),
    };
    let data = &bytes[end..];
    if data.len() != n.saturating_mul(size) {
        return Err(format!(
            "{} data bytes at offset {end}, but shape ({n},) of {descr} needs {}",
            data.len(),
            n.saturating_mul(size)
        ));
    }
    data.chunks_exact(size)
        .enumerate()
        .map(|(i, c)| read(c).ok_or_else(|| format!("element {i} does not fit a signed 64-bit integer")))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrays_written_by_our_writer_read_back() {
        let dir = tempfile::Builder::new().prefix("npy-read-").tempdir().unwrap();
        let p = dir.path().join("a.npy");
        crate::npy::write(&p, &[4], &[3i64, -1, 0, 1 << 40]).unwrap();
        assert_eq!(read_ints(&p).unwrap(), vec![3, -1, 0, 1 << 40]);
        crate::npy::write(&p, &[3], &[7u32, 0, u32::MAX]).unwrap();
        assert_eq!(read_ints(&p).unwrap(), vec![7, 0, i64::from(u32::MAX)]);
    }

    #[test]
    fn bad_files_are_errors_not_panics() {
        assert!(parse_ints(b"").unwrap_err().contains("magic"));
        assert!(parse_ints(b"\x93NUMPY\x01\x00\xff\xff").unwrap_err().contains("past the end"));
        let file = |descr: &str, shape: &str, data: usize| {
            let h = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}\n");
            let mut f = b"\x93NUMPY\x01\x00".to_vec();
            f.extend_from_slice(&(h.len() as u16).to_le_bytes());
            f.extend_from_slice(h.as_bytes());
            f.extend(std::iter::repeat_n(0u8, data));
            f
        };
        assert!(parse_ints(&file("<f4", "(1,)", 4)).unwrap_err().contains("not a little-endian integer"));
        assert!(parse_ints(&file("<i4", "(1, 1)", 4)).unwrap_err().contains("not one-dimensional"));
        assert!(parse_ints(&file("<i8", "(1,)", 4)).unwrap_err().contains("needs 8"));
        assert_eq!(parse_ints(&file("<i4", "(2,)", 8)).unwrap(), vec![0, 0]);
        // A header that is not a dict literal, or lacks a key, is refused, not guessed at.
        let raw = |h: &str| {
            let mut f = b"\x93NUMPY\x01\x00".to_vec();
            f.extend_from_slice(&(h.len() as u16).to_le_bytes());
            f.extend_from_slice(h.as_bytes());
            f.extend_from_slice(&[0; 4]);
            f
        };
        let no_brace = raw("'descr': '<i4', 'fortran_order': False, 'shape': (1,), \n");
        assert!(parse_ints(&no_brace).unwrap_err().contains("not a dictionary"));
        // A long one is quoted by its start.
        let long = parse_ints(&raw(&"x".repeat(5000))).unwrap_err();
        assert!(long.contains("...") && long.len() < 200, "{long}");
        let no_order = raw("{'descr': '<i4', 'shape': (1,), }\n");
        assert!(parse_ints(&no_order).unwrap_err().contains("no 'fortran_order'"));
        assert_eq!(
            parse_ints(&raw("{'descr': '<i4', 'fortran_order': False, 'shape': (1,), }   \n")).unwrap(),
            vec![0]
        );
        // Arbitrary bytes after a valid magic never panic.
        for n in 0..64u8 {
            let mut g = b"\x93NUMPY\x01\x00".to_vec();
            g.extend((0..n).map(|i| i.wrapping_mul(37)));
            let _ = parse_ints(&g);
        }
    }
}
