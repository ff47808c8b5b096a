//! The streaming reader shared by the line-oriented text formats.
//!
//! A text format is a line parser and a time base; everything else (opening the file, reading
//! line by line with bounded memory, naming the file and line in errors) is the same for all of
//! them, so it lives here once.

use super::error::{ParseProblem, TraceError};
use super::lines::Lines;
use super::{Position, TimeBase, TraceRecord, TraceSource};
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::marker::PhantomData;
use std::path::Path;

/// A line-oriented trace format.
pub trait TextFormat {
    /// What the records' `time` field counts.
    const TIME_BASE: TimeBase;
    /// Parses one non-blank, non-comment line.
    fn parse_line(line: &str) -> Result<TraceRecord, ParseProblem>;
}

/// A streaming reader of a text format `F`.
pub struct TextReader<R, F> {
    lines: Lines<R>,
    _format: PhantomData<fn() -> F>,
}

impl<F: TextFormat> TextReader<BufReader<File>, F> {
    /// Opens the trace at `path` (named by that path in messages).
    pub fn open(path: &Path) -> Result<Self, TraceError> {
        let name = path.display().to_string();
        let file = File::open(path).map_err(|io| TraceError::io(&name, &io))?;
        Ok(Self::new(BufReader::new(file), &name))
    }
}

impl<R: BufRead, F: TextFormat> TextReader<R, F> {
    /// Reads a trace from `reader`, named `name` in messages.
    pub fn new(reader: R, name: &str) -> Self {
        Self { lines: Lines::new(reader, name.to_owned()), _format: PhantomData }
    }
}

impl<R: BufRead, F: TextFormat> TraceSource for TextReader<R, F> {
    fn next_record(&mut self) -> Result<Option<TraceRecord>, TraceError> {
        self.lines.next_with(F::parse_line)
    }
    fn time_base(&self) -> TimeBase {
        F::TIME_BASE
    }
    fn name(&self) -> &str {
        self.lines.name()
    }
    fn position(&self) -> Position {
        Position::Line(self.lines.line())
    }
}
