//! A small writer of NumPy `.npy` files (format version 1.0), so outputs and inputs of a run can
//! be loaded with `numpy.load` and compared with PyTorch or NumPy.
//!
//! A file is the magic `\x93NUMPY`, the version (1, 0), the header's length as a little-endian
//! u16, and the header: a Python dict literal
//! `{'descr': '<f4', 'fortran_order': False, 'shape': (16, 64), }` padded with spaces and ended
//! by a newline so that the data starts at a multiple of 64 bytes, as NumPy writes it. The data
//! follows in C (row-major) order, little-endian.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::marker::PhantomData;
use std::path::{Path, PathBuf};
use thiserror::Error;

/// The magic string that starts every `.npy` file.
pub const MAGIC: &[u8; 6] = b"\x93NUMPY";

/// Where the data starts: magic, version, header length and header fill a multiple of this.
pub const ALIGN: usize = 64;

/// An element type with a NumPy dtype.
pub trait Element: Copy {
    /// The dtype string of the header (`'<f4'`, `'<u4'`, `'<i8'`).
    const DESCR: &'static str;
    /// Bytes per element.
    const SIZE: usize;
    /// Appends the little-endian bytes of `self` to `out`.
    fn put(self, out: &mut Vec<u8>);
}

impl Element for f32 {
    const DESCR: &'static str = "<f4";
    const SIZE: usize = 4;
    fn put(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes());
    }
}

impl Element for u32 {
    const DESCR: &'static str = "<u4";
    const SIZE: usize = 4;
    fn put(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes());
    }
}

impl Element for i64 {
    const DESCR: &'static str = "<i8";
    const SIZE: usize = 8;
    fn put(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes());
    }
}

/// Why an array could not be written.
#[derive(Debug, Error)]
pub enum NpyError {
    /// The file could not be created or written.
    #[error("writing {}: {error}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What the system said.
        error: io::Error,
    },
    /// The shape does not match the number of elements given.
    #[error("{}: shape {shape:?} holds {expected} elements, but {got} were given", path.display())]
    Shape {
        /// The file.
        path: PathBuf,
        /// The shape asked for.
        shape: Vec<usize>,
        /// Elements the shape holds.
        expected: usize,
        /// Elements given.
        got: usize,
    },
    /// The header would not fit version 1.0's 16-bit length (a shape of thousands of axes).
    #[error("{}: the header of shape {shape:?} is too long for .npy version 1.0", path.display())]
    HeaderTooLong {
        /// The file.
        path: PathBuf,
        /// The shape asked for.
        shape: Vec<usize>,
    },
}

/// The shape as a Python tuple: `()`, `(5,)`, `(3, 4)`.
fn shape_tuple(shape: &[usize]) -> String {
    match shape {
        [] => "()".to_string(),
        [n] => format!("({n},)"),
        _ => format!("({})", shape.iter().map(usize::to_string).collect::<Vec<_>>().join(", ")),
    }
}

/// Magic, version, header length and header of an array of dtype `descr` and shape `shape`;
/// its length is a multiple of [`ALIGN`]. `None` if the header does not fit version 1.0.
pub fn preamble(descr: &str, shape: &[usize]) -> Option<Vec<u8>> {
    let dict = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {}, }}", shape_tuple(shape));
    // Magic (6), version (2) and length (2) come before the header, which ends in '\n'.
    let unpadded = MAGIC.len() + 2 + 2 + dict.len() + 1;
    let total = unpadded.div_ceil(ALIGN) * ALIGN;
    let header_len = u16::try_from(total - MAGIC.len() - 4).ok()?;
    let mut out = Vec::with_capacity(total);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&[1, 0]);
    out.extend_from_slice(&header_len.to_le_bytes());
    out.extend_from_slice(dict.as_bytes());
    out.resize(total - 1, b' ');
    out.push(b'\n');
    Some(out)
}

/// The whole file: preamble and data. `None` on a shape that does not hold `data.len()`
/// elements or a header too long for version 1.0.
pub fn encode<T: Element>(shape: &[usize], data: &[T]) -> Option<Vec<u8>> {
    if elements(shape) != Some(data.len()) {
        return None;
    }
    let mut out = preamble(T::DESCR, shape)?;
    out.reserve(data.len() * T::SIZE);
    for &v in data {
        v.put(&mut out);
    }
    Some(out)
}

fn elements(shape: &[usize]) -> Option<usize> {
    shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d))
}

/// Writes `data`, of shape `shape` in C order, to the `.npy` file `path` (replacing it).
pub fn write<T: Element>(path: &Path, shape: &[usize], data: &[T]) -> Result<(), NpyError> {
    if elements(shape) != Some(data.len()) {
        return Err(shape_error(path, shape, data.len()));
    }
    let mut w = Writer::create(path, shape)?;
    w.extend(data)?;
    w.finish()
}

fn shape_error(path: &Path, shape: &[usize], got: usize) -> NpyError {
    NpyError::Shape {
        path: path.to_path_buf(),
        shape: shape.to_vec(),
        expected: elements(shape).unwrap_or(usize::MAX),
        got,
    }
}

/// A `.npy` file written piece by piece, so a large array need not be held whole: create it
/// with its shape, [`Writer::extend`] it with the elements in C order, then [`Writer::finish`].
pub struct Writer<T: Element> {
    path: PathBuf,
    shape: Vec<usize>,
    file: BufWriter<File>,
    expected: usize,
    written: usize,
    buf: Vec<u8>,
    _elem: PhantomData<T>,
}

impl<T: Element> Writer<T> {
    /// Creates (or truncates) `path` and writes the header of an array of shape `shape`.
    pub fn create(path: &Path, shape: &[usize]) -> Result<Self, NpyError> {
        let expected = elements(shape).ok_or_else(|| shape_error(path, shape, 0))?;
        let head = preamble(T::DESCR, shape)
            .ok_or_else(|| NpyError::HeaderTooLong { path: path.to_path_buf(), shape: shape.to_vec() })?;
        let io = |error| NpyError::Io { path: path.to_path_buf(), error };
        let mut file = BufWriter::new(File::create(path).map_err(io)?);
        file.write_all(&head).map_err(io)?;
        Ok(Writer {
            path: path.to_path_buf(),
            shape: shape.to_vec(),
            file,
            expected,
            written: 0,
            buf: Vec::new(),
            _elem: PhantomData,
        })
    }

    /// Appends elements; more than the shape holds is an error.
    pub fn extend(&mut self, data: &[T]) -> Result<(), NpyError> {
        let total = self.written.saturating_add(data.len());
        if total > self.expected {
            return Err(shape_error(&self.path, &self.shape, total));
        }
        // In chunks of 64 KiB, so a large slice is never copied whole.
        for chunk in data.chunks((64 * 1024 / T::SIZE).max(1)) {
            self.buf.clear();
            for &v in chunk {
                v.put(&mut self.buf);
            }
            self.file
                .write_all(&self.buf)
                .map_err(|error| NpyError::Io { path: self.path.clone(), error })?;
        }
        self.written = total;
        Ok(())
    }

    /// Checks that every element was given and flushes the file.
    pub fn finish(mut self) -> Result<(), NpyError> {
        if self.written != self.expected {
            return Err(shape_error(&self.path, &self.shape, self.written));
        }
        self.file.flush().map_err(|error| NpyError::Io { path: self.path.clone(), error })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The dtype, shape and data bytes of a `.npy` file, checking everything else on the way.
    fn parse(bytes: &[u8]) -> (String, Vec<usize>, &[u8]) {
        assert_eq!(&bytes[..6], MAGIC);
        assert_eq!(&bytes[6..8], &[1, 0], "version 1.0");
        let len = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
        let start = 10 + len;
        assert_eq!(start % ALIGN, 0, "data starts at a multiple of 64 bytes");
        let header = std::str::from_utf8(&bytes[10..start]).unwrap();
        assert!(header.ends_with('\n'));
        let dict = header.trim_end_matches('\n').trim_end_matches(' ');
        assert!(dict.starts_with("{'descr': '") && dict.ends_with(", }"), "{dict}");
        let descr = dict["{'descr': '".len()..].split('\'').next().unwrap().to_string();
        assert!(dict.contains("'fortran_order': False"), "{dict}");
        let tuple = dict.split("'shape': (").nth(1).unwrap().split(')').next().unwrap();
        let shape = tuple.split(',').map(str::trim).filter(|s| !s.is_empty()).map(|s| s.parse().unwrap());
        (descr, shape.collect(), &bytes[start..])
    }

    #[test]
    fn a_2d_f32_array_round_trips_with_an_aligned_header() {
        let data: Vec<f32> = (0..12).map(|i| i as f32 * 0.5 - 1.0).collect();
        let bytes = encode(&[3, 4], &data).unwrap();
        let (descr, shape, body) = parse(&bytes);
        assert_eq!((descr.as_str(), shape), ("<f4", vec![3, 4]));
        let back: Vec<f32> =
            body.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect();
        assert_eq!(back, data);
        // NumPy's own preamble for this array, byte for byte: 128 bytes in all.
        let dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }";
        let mut numpy = b"\x93NUMPY\x01\x00\x76\x00".to_vec();
        numpy.extend_from_slice(dict.as_bytes());
        numpy.resize(127, b' ');
        numpy.push(b'\n');
        assert_eq!(bytes[..128], numpy[..]);
    }

    #[test]
    fn integer_dtypes_and_1d_and_0d_shapes() {
        let bytes = encode(&[3], &[1u32, 2, u32::MAX]).unwrap();
        let (descr, shape, body) = parse(&bytes);
        assert_eq!((descr.as_str(), shape, body.len()), ("<u4", vec![3], 12));
        assert_eq!(&body[8..], &[0xff; 4]);
        assert!(String::from_utf8_lossy(&bytes).contains("'shape': (3,), }"));

        let bytes = encode(&[2, 2], &[-1i64, 0, 1, i64::MAX]).unwrap();
        let (descr, shape, body) = parse(&bytes);
        assert_eq!((descr.as_str(), shape), ("<i8", vec![2, 2]));
        let back: Vec<i64> =
            body.chunks_exact(8).map(|c| i64::from_le_bytes(c.try_into().unwrap())).collect();
        assert_eq!(back, [-1, 0, 1, i64::MAX]);

        let bytes = encode::<f32>(&[], &[7.0]).unwrap();
        let (_, shape, body) = parse(&bytes);
        assert_eq!((shape, body), (vec![], &7.0f32.to_le_bytes()[..]));
        assert!(String::from_utf8_lossy(&bytes).contains("'shape': (), }"));
        // An empty array: zero rows.
        let bytes = encode::<f32>(&[0, 64], &[]).unwrap();
        assert_eq!(bytes.len(), 128);
        assert_eq!(parse(&bytes).1, vec![0, 64]);
    }

    #[test]
    fn headers_of_every_length_are_padded_to_64_bytes() {
        for dims in 0..40 {
            // One axis of 1 to 2401 elements, the others of one: the header grows by 3 bytes
            // per axis and crosses several 64-byte boundaries.
            let mut shape = vec![1; dims];
            if let Some(first) = shape.first_mut() {
                *first = 7usize.pow(dims as u32 % 5);
            }
            let n: usize = shape.iter().product();
            let bytes = encode(&shape, &vec![0.0f32; n]).unwrap();
            let (_, back, body) = parse(&bytes);
            assert_eq!(back, shape);
            assert_eq!(body.len(), n * 4);
        }
        assert!(preamble("<f4", &vec![1; 30_000]).is_none(), "too long for a 16-bit length");
    }

    #[test]
    fn a_wrong_shape_is_refused_and_io_errors_name_the_path() {
        assert!(encode(&[2, 3], &[0.0f32; 5]).is_none());
        let tmp = tempfile::Builder::new().prefix("dae-sim-npy-").tempdir().unwrap();
        let dir = tmp.path();
        let path = dir.join("a.npy");
        let e = write(&path, &[2, 3], &[0.0f32; 5]).unwrap_err();
        assert!(e.to_string().contains("a.npy") && e.to_string().contains("holds 6"), "{e}");
        write(&path, &[2, 3], &[1.5f32; 6]).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(bytes, encode(&[2, 3], &[1.5f32; 6]).unwrap());
        let missing = dir.join("no-such-dir").join("b.npy");
        let e = write(&missing, &[1], &[0u32]).unwrap_err();
        assert!(matches!(e, NpyError::Io { .. }));
        assert!(e.to_string().contains(&missing.display().to_string()), "{e}");
        // Piece by piece: the same bytes; too many or too few elements are errors.
        let mut w = Writer::<i64>::create(&path, &[3, 2]).unwrap();
        w.extend(&[1, 2]).unwrap();
        w.extend(&[]).unwrap();
        w.extend(&[3, 4, 5, 6]).unwrap();
        assert!(w.extend(&[7]).is_err());
        w.finish().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), encode(&[3, 2], &[1i64, 2, 3, 4, 5, 6]).unwrap());
        let mut w = Writer::<i64>::create(&path, &[3, 2]).unwrap();
        w.extend(&[1, 2]).unwrap();
        let e = w.finish().unwrap_err();
        assert!(e.to_string().contains("holds 6 elements, but 2 were given"), "{e}");
        tmp.close().unwrap();
    }
}
