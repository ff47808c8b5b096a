//! Criteo click logs as embedding lookups: the raw TSV of the Kaggle Display Advertising
//! Challenge (`<label>\t<I1>..<I13>\t<C1>..<C26>`, 40 tab-separated fields, an empty field for a
//! missing value, categorical values hashed to 32 bits and written in hex) read a record at a
//! time, and the hashing trick that maps a categorical value to a row of its table.
//!
//! A record may stop early: copies that trim trailing empty fields (such as the shared
//! `criteo/train.txt`, whose lines have 37, 38 or 40 fields) read as if the missing fields were
//! empty. Lines end in LF or CRLF, the last may lack its end, and blank lines are skipped. The
//! label must be 0 or 1, an integer feature empty or an integer, a categorical value empty or
//! 1 to 8 hex digits; anything else is an error naming the file, the line and the column
//! (a [`TraceCmdError`], as the other readers of `dae-sim trace` give).
//! `dae-sim trace criteo` ([`crate::trace_cmd`]) turns the records into a `.daeidx` trace.

use crate::trace_cmd::TraceCmdError;
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

/// Integer features (I1..I13).
pub const INTEGER_FEATURES: usize = 13;
/// Categorical features (C1..C26): one embedding table each.
pub const CATEGORICAL_FEATURES: usize = 26;
/// Fields of a full record: the label, the integer and the categorical features.
pub const FIELDS: usize = 1 + INTEGER_FEATURES + CATEGORICAL_FEATURES;
/// The longest line read, in bytes (a full record is under 400): a file without line ends is
/// an error, not an allocation.
pub const MAX_LINE: usize = 1 << 16;

/// One record's categorical values, C1..C26, `None` where missing.
pub type Categoricals = [Option<u32>; CATEGORICAL_FEATURES];

/// The categorical values of one line (without its line end), or what is wrong with it,
/// naming the column.
pub fn parse_record(line: &str) -> Result<Categoricals, String> {
    let fields: Vec<&str> = line.split('\t').collect();
    if fields.len() > FIELDS {
        return Err(format!(
            "{} tab-separated fields, more than the {FIELDS} of a record (label, I1..I13, C1..C26)",
            fields.len()
        ));
    }
    let label = fields[0];
    if label != "0" && label != "1" {
        let shown: String = label.chars().take(40).collect();
        return Err(format!("label {shown:?} is not 0 or 1 (is it a tab-separated Criteo file?)"));
    }
    for (k, &v) in fields.iter().enumerate().skip(1).take(INTEGER_FEATURES) {
        if !v.is_empty() && v.parse::<i64>().is_err() {
            return Err(format!("column I{k} (field {}): {v:?} is not an integer", k + 1));
        }
    }
    let mut out = [None; CATEGORICAL_FEATURES];
    for (c, &v) in fields.iter().skip(1 + INTEGER_FEATURES).enumerate() {
        if v.is_empty() {
            continue;
        }
        if v.len() > 8 || !v.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(format!(
                "column C{} (field {}): {v:?} is not a categorical value (1 to 8 hex digits)",
                c + 1,
                c + 2 + INTEGER_FEATURES
            ));
        }
        // 1 to 8 hex digits: a u32.
        out[c] = u32::from_str_radix(v, 16).ok();
    }
    Ok(out)
}

/// What a missing categorical value becomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Missing {
    /// The value 0, so row 0 (DLRM's preprocessing reads an empty field as `"0"`): every bag
    /// holds one lookup.
    Zero,
    /// No lookup: the bag is empty.
    Drop,
}

/// The row of categorical `value` in a table of `rows` rows (the hashing trick: the value mod
/// `rows`), or none for a dropped missing value.
pub fn row(value: Option<u32>, rows: u64, missing: Missing) -> Option<u64> {
    match (value, missing) {
        (Some(v), _) => Some(u64::from(v) % rows.max(1)),
        (None, Missing::Zero) => Some(0),
        (None, Missing::Drop) => None,
    }
}

/// Streams the records of a Criteo file, a line at a time.
pub struct CriteoReader {
    file: String,
    input: BufReader<File>,
    line: usize,
    buf: Vec<u8>,
}

impl CriteoReader {
    /// Opens `path`.
    pub fn open(path: &Path) -> Result<Self, TraceCmdError> {
        let file = path.display().to_string();
        let f = File::open(path).map_err(|error| TraceCmdError::Io { file: file.clone(), error })?;
        Ok(Self { file, input: BufReader::new(f), line: 0, buf: Vec::new() })
    }

    /// The 1-based line of the last record read (0 before the first).
    pub fn line(&self) -> usize {
        self.line
    }

    fn bad(&self, message: String) -> TraceCmdError {
        TraceCmdError::Parse { file: self.file.clone(), line: self.line, message }
    }

    /// The next record's categorical values, or `None` at the end of the file.
    pub fn next_record(&mut self) -> Result<Option<Categoricals>, TraceCmdError> {
        loop {
            self.buf.clear();
            let n = (&mut self.input)
                .take(MAX_LINE as u64 + 1)
                .read_until(b'\n', &mut self.buf)
                .map_err(|error| TraceCmdError::Io { file: self.file.clone(), error })?;
            if n == 0 {
                return Ok(None);
            }
            self.line += 1;
            let mut bytes = &self.buf[..];
            if let Some(b) = bytes.strip_suffix(b"\n") {
                bytes = b.strip_suffix(b"\r").unwrap_or(b);
            } else if n > MAX_LINE {
                return Err(self.bad(format!("a line longer than {MAX_LINE} bytes: not a Criteo file")));
            }
            if bytes.is_empty() {
                continue;
            }
            let text = std::str::from_utf8(bytes).map_err(|_| self.bad("not UTF-8 text".into()))?;
            return parse_record(text).map(Some).map_err(|m| self.bad(m));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_trimmed_and_missing_fields() {
        let ints = "\t1".repeat(INTEGER_FEATURES);
        let cats: Vec<String> =
            (0..CATEGORICAL_FEATURES).map(|c| format!("{:08x}", c * 0x0900_0001)).collect();
        let full = format!("1{ints}\t{}", cats.join("\t"));
        let r = parse_record(&full).unwrap();
        assert_eq!(r[0], Some(0));
        assert_eq!(r[25], Some(25 * 0x0900_0001));
        // The last three categoricals trimmed, C2 empty, I1 empty.
        let trimmed = format!("0\t{}\t{}\t\t{}", &ints[2..], cats[0], cats[2..23].join("\t"));
        let r = parse_record(&trimmed).unwrap();
        assert_eq!((r[0], r[1], r[2]), (Some(0), None, Some(0x1200_0002)));
        assert_eq!((r[22], r[23], r[24], r[25]), (Some(0xc600_0016), None, None, None));
        assert_eq!(parse_record("0").unwrap(), [None; CATEGORICAL_FEATURES]);
    }

    #[test]
    fn bad_fields_name_the_column() {
        let ints = "\t5".repeat(INTEGER_FEATURES);
        for (line, want) in [
            (
                format!("0{ints}\tabc\t12345678g"),
                "column C2 (field 16): \"12345678g\" is not a categorical value",
            ),
            (
                format!("0{ints}\tabc\t123456789"),
                "column C2 (field 16): \"123456789\" is not a categorical value",
            ),
            (format!("0{ints}\t-1"), "column C1 (field 15): \"-1\" is not a categorical value"),
            (format!("0\t1\t2\tx{}", "\t".repeat(10)), "column I3 (field 4): \"x\" is not an integer"),
            ("2\t1".into(), "label \"2\" is not 0 or 1"),
            ("0,1,2".into(), "label \"0,1,2\" is not 0 or 1 (is it a tab-separated Criteo file?)"),
            (format!("0{}", "\t".repeat(40)), "41 tab-separated fields, more than the 40 of a record"),
        ] {
            let err = parse_record(&line).unwrap_err();
            assert!(err.starts_with(want), "{line:?}: {err}");
        }
    }

    #[test]
    fn rows_by_the_hashing_trick() {
        assert_eq!(row(Some(0xffff_ffff), 1000, Missing::Zero), Some(4_294_967_295 % 1000));
        assert_eq!(row(Some(7), 1 << 40, Missing::Drop), Some(7));
        assert_eq!(row(None, 1000, Missing::Zero), Some(0));
        assert_eq!(row(None, 1000, Missing::Drop), None);
    }
}
