//! Line-by-line reading of text traces with bounded memory.
//!
//! Both text formats are one request per line. Lines are read into one reused buffer of at
//! most [`MAX_LINE`] bytes, so a file of any size, even one with no newline at all, costs a few
//! kilobytes. Blank lines and `#` comments (to the end of the line) are skipped: neither format
//! uses `#`, and comments let the shipped examples explain themselves.

use super::Position;
use super::error::{Origin, ParseProblem, TraceError, quote};
use std::io::{BufRead, Read};

/// The longest line accepted, in bytes; real lines are under 64.
pub(crate) const MAX_LINE: usize = 4096;

/// A text trace read one line at a time.
pub(crate) struct Lines<R> {
    reader: R,
    name: String,
    buf: Vec<u8>,
    /// 1-based number of the line last read (0 before the first).
    line: u64,
    done: bool,
}

impl<R: BufRead> Lines<R> {
    /// Lines of `reader`, named `name` in messages.
    pub(crate) fn new(reader: R, name: String) -> Self {
        Self { reader, name, buf: Vec::with_capacity(128), line: 0, done: false }
    }

    /// The trace's name.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// The number of the line last read.
    pub(crate) fn line(&self) -> u64 {
        self.line
    }

    /// Reads lines until one holds something other than blanks and comments, and parses it
    /// with `parse`; `None` at the end of the file. Errors name the file, line and text.
    pub(crate) fn next_with<T>(
        &mut self,
        mut parse: impl FnMut(&str) -> Result<T, ParseProblem>,
    ) -> Result<Option<T>, TraceError> {
        while !self.done {
            self.buf.clear();
            let limit = MAX_LINE as u64 + 1;
            let n = (&mut self.reader)
                .take(limit)
                .read_until(b'\n', &mut self.buf)
                .map_err(|io| TraceError::io(&self.name, &io))?;
            if n == 0 {
                self.done = true;
                break;
            }
            self.line += 1;
            let at = || Origin::new(&self.name, Position::Line(self.line));
            if self.buf.len() > MAX_LINE && self.buf.last() != Some(&b'\n') {
                self.done = true;
                let text = quote(&String::from_utf8_lossy(&self.buf));
                return Err(TraceError::Parse {
                    at: at(),
                    text,
                    problem: ParseProblem::TooLong { max: MAX_LINE },
                });
            }
            let Ok(text) = std::str::from_utf8(&self.buf) else {
                self.done = true;
                let text = quote(&String::from_utf8_lossy(&self.buf));
                return Err(TraceError::Parse { at: at(), text, problem: ParseProblem::NotText });
            };
            let content = text.split('#').next().unwrap_or("").trim();
            if content.is_empty() {
                continue;
            }
            return match parse(content) {
                Ok(v) => Ok(Some(v)),
                Err(problem) => {
                    self.done = true;
                    Err(TraceError::Parse { at: at(), text: quote(text), problem })
                }
            };
        }
        Ok(None)
    }
}

/// Parses a hexadecimal address with an optional `0x`/`0X` prefix (up to 64 bits).
pub(crate) fn parse_hex(token: &str) -> Option<u64> {
    let digits = token.strip_prefix("0x").or_else(|| token.strip_prefix("0X")).unwrap_or(token);
    // from_str_radix accepts a leading '+', which no trace writer produces.
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u64::from_str_radix(digits, 16).ok()
}

/// Parses a decimal number (up to 64 bits), digits only.
pub(crate) fn parse_dec(token: &str) -> Option<u64> {
    if token.is_empty() || !token.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    token.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(text: &[u8]) -> Vec<Result<(u64, String), String>> {
        let mut l = Lines::new(text, "t".into());
        let mut out = Vec::new();
        loop {
            match l.next_with(|s| Ok(s.to_owned())) {
                Ok(Some(s)) => out.push(Ok((l.line(), s))),
                Ok(None) => break,
                Err(e) => {
                    out.push(Err(e.to_string()));
                    break;
                }
            }
        }
        out
    }

    #[test]
    fn skips_blanks_and_comments_and_counts_lines() {
        let got = all(b"# header\n\n  a b  \r\nc # trailing\n   # only\nd");
        assert_eq!(got, vec![Ok((3, "a b".into())), Ok((4, "c".into())), Ok((6, "d".into()))]);
    }

    #[test]
    fn overlong_and_binary_lines_are_errors() {
        let mut long = vec![b'a'; MAX_LINE + 10];
        long.push(b'\n');
        let got = all(&long);
        assert_eq!(got.len(), 1);
        let e = got[0].clone().unwrap_err();
        assert!(e.starts_with("t:1: the line is longer than 4096 bytes in \"aaaa"), "{e}");
        // Exactly MAX_LINE bytes plus the newline is fine.
        let mut ok = vec![b'a'; MAX_LINE];
        ok.push(b'\n');
        assert!(all(&ok)[0].is_ok());
        let got = all(b"ok\n\xff\xfe\n");
        assert_eq!(got[1], Err("t:2: the line is not UTF-8 text in \"\u{fffd}\u{fffd}\"".into()));
    }

    #[test]
    fn numbers() {
        assert_eq!(parse_hex("0x1F40"), Some(0x1f40));
        assert_eq!(parse_hex("0X1f40"), Some(0x1f40));
        assert_eq!(parse_hex("1f40"), Some(0x1f40));
        assert_eq!(parse_hex("0xffffffffffffffff"), Some(u64::MAX));
        assert_eq!(parse_hex("0x1ffffffffffffffff"), None);
        for bad in ["", "0x", "+1f", "0x-1", "0xg", "1_0"] {
            assert_eq!(parse_hex(bad), None, "{bad}");
        }
        assert_eq!(parse_dec("8000"), Some(8000));
        for bad in ["", "-1", "+1", "1e3", "0x10", "18446744073709551616"] {
            assert_eq!(parse_dec(bad), None, "{bad}");
        }
    }
}
