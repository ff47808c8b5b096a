//! Loading experiment configs: TOML files with `include`, merged into one table that remembers
//! where every key was written.
//!
//! Any table — the top level, a sub-table, or one entry of an array of tables — may say
//! `include = "relative/path.toml"`. The named file (relative to the file holding the `include`)
//! is loaded recursively and forms the base; the including table's own keys are laid over it.
//! Tables merge key by key, while scalars and arrays replace whatever the base had (a scalar may
//! replace a table and vice versa); a table that names another `kind` than the one it lands on,
//! or has an `include` of its own, replaces it too (the old keys would mean nothing to the new
//! one: see `overlay`). Alongside the merged [`toml::Table`], a [`Document`] keeps
//! the file, line and column of every key and array element, so that errors found while
//! deserializing, or by later semantic validation, can point at the exact line a user has to
//! edit — even when that line lives in an included file.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Component, Path, PathBuf};

use serde::Deserialize as _;
use toml::Value;
use toml::de::{DeTable, DeValue};

/// The key whose string value names a file to merge under the table that contains it.
const INCLUDE_KEY: &str = "include";

/// The pseudo-file recorded for values given by [`Document::set`].
const COMMAND_LINE: &str = "<command line>";

/// A place in a config file. Line and column are 1-based (column counts characters); values
/// set from the command line have line and column 0.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Location {
    /// The file, as named by the user or joined from the including file's directory.
    pub file: PathBuf,
    /// 1-based line number (0 when there is no line, e.g. for the command line).
    pub line: usize,
    /// 1-based column in characters (0 when there is no line).
    pub column: usize,
}

impl Location {
    fn start_of(file: &Path) -> Self {
        Location { file: file.to_path_buf(), line: 1, column: 1 }
    }

    fn command_line() -> Self {
        Location { file: PathBuf::from(COMMAND_LINE), line: 0, column: 0 }
    }

    /// The file as messages show it: joined include paths folded (`systems/../memory/x.toml`
    /// reads `memory/x.toml`, see [`tidy`]). For display only; the file itself is read by the
    /// path as joined.
    pub fn shown_file(&self) -> PathBuf {
        let out = tidy(&self.file);
        if out.as_os_str().is_empty() { self.file.clone() } else { out }
    }
}

/// `path` without `.` components and with `dir/..` pairs folded (lexically), for messages.
pub fn tidy(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir if matches!(out.components().next_back(), Some(Component::Normal(_))) => {
                out.pop();
            }
            c => out.push(c),
        }
    }
    out
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.shown_file().display(), self.line, self.column)
    }
}

/// Why an `include` could not be honoured.
#[derive(Debug, thiserror::Error)]
pub enum IncludeProblem {
    /// The `include` value is not a string.
    #[error("include must be a string naming a TOML file")]
    NotAString,
    /// The file includes itself, directly or through other files.
    #[error("include cycle: {}", chain_text(.chain))]
    Cycle {
        /// The files from the first one of the cycle back to itself.
        chain: Vec<PathBuf>,
    },
    /// The included file could not be read.
    #[error("cannot read {}: {io}", .path.display())]
    Unreadable {
        /// The resolved path of the included file.
        path: PathBuf,
        /// What the operating system said.
        io: std::io::Error,
    },
    /// The included file itself is broken (bad TOML, or a bad include of its own).
    #[error("{0}")]
    InIncludedFile(Box<ConfigError>),
}

fn chain_text(chain: &[PathBuf]) -> String {
    chain.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(" -> ")
}

/// Everything that can go wrong while loading, overriding or deserializing a config.
///
/// The `Display` form is one line that starts with the location, so it can be printed as is.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The top-level config file could not be read.
    #[error("{}: cannot read: {io}", .file.display())]
    Io {
        /// The file that was asked for.
        file: PathBuf,
        /// What the operating system said.
        io: std::io::Error,
    },
    /// A file is not valid TOML.
    #[error("{location}: invalid TOML: {message}")]
    Syntax {
        /// Where the parser gave up.
        location: Location,
        /// The first line of the parser's message.
        message: String,
    },
    /// An `include` key could not be honoured.
    #[error("{location}: include = {value}: {problem}")]
    Include {
        /// Where the `include` key was written.
        location: Location,
        /// The include value, rendered as TOML (e.g. `"base.toml"`).
        value: String,
        /// What went wrong.
        problem: IncludeProblem,
    },
    /// A key has a bad value, is unknown, misses a field, or failed later validation.
    #[error("{location}: {}{message}{}", key_prefix(.key), value_suffix(.value))]
    Invalid {
        /// Where the key was written (or its closest ancestor, for missing fields).
        location: Location,
        /// The key path, e.g. `system[0].core.clock`; empty for the top-level table.
        key: String,
        /// What is wrong, possibly ending in a "did you mean" hint.
        message: String,
        /// The offending value rendered as TOML, when it is a scalar.
        value: Option<String>,
    },
}

fn key_prefix(key: &str) -> String {
    if key.is_empty() { String::new() } else { format!("{key}: ") }
}

fn value_suffix(value: &Option<String>) -> String {
    value.as_ref().map(|v| format!(" (value: {v})")).unwrap_or_default()
}

/// Where each key and array element of a table was written; mirrors the shape of the value.
#[derive(Debug, Clone, Default)]
struct Provenance {
    /// Where this key (or array element) was written.
    here: Option<Location>,
    /// Provenance of a table's keys.
    keys: BTreeMap<String, Provenance>,
    /// Provenance of an array's elements.
    items: Vec<Provenance>,
    /// The table had its own `include`: laid over another table, it replaces it (its include
    /// is its whole base) instead of merging into it.
    included: bool,
}

impl Provenance {
    fn at(location: Location) -> Self {
        Provenance { here: Some(location), ..Provenance::default() }
    }
}

/// A merged config table together with where each of its keys came from.
#[derive(Debug, Clone)]
pub struct Document {
    table: toml::Table,
    provenance: Provenance,
}

impl Document {
    /// Loads `path` and everything it includes.
    pub fn load(path: &Path) -> Result<Document, ConfigError> {
        let text =
            std::fs::read_to_string(path).map_err(|io| ConfigError::Io { file: path.to_path_buf(), io })?;
        Self::from_str(&text, path)
    }

    /// Parses text as if it were the file `path` (for tests and for stdin); includes are resolved
    /// relative to path's parent.
    pub fn from_str(text: &str, path: &Path) -> Result<Document, ConfigError> {
        let mut stack = vec![identity(path)];
        let (table, provenance) = load_text(text, path, &mut stack)?;
        Ok(Document { table, provenance })
    }

    /// The merged table.
    pub fn table(&self) -> &toml::Table {
        &self.table
    }

    /// Where the key at `path` (`system[1].core.clock`, `experiment.seed`, `workload[0]`) was
    /// written: the file and position of the key (for an array element, the position of the
    /// element/the `[[x]]` header). Falls back to the closest ancestor that has a location; the
    /// empty path is the start of the top-level file. `None` only if `path` does not parse.
    pub fn locate(&self, path: &str) -> Option<&Location> {
        let segments = parse_path(path)?;
        let mut node = &self.provenance;
        let mut best = node.here.as_ref();
        for segment in &segments {
            let next = match segment {
                Segment::Key(key) => node.keys.get(key),
                Segment::Index(index) => node.items.get(*index),
            };
            let Some(next) = next else { break };
            node = next;
            best = node.here.as_ref().or(best);
        }
        best
    }

    /// The value at a path in the merged table (same path syntax as [`Document::locate`]), if
    /// any. The empty path names the top-level table, which is not a value, so it gives `None`.
    pub fn get(&self, path: &str) -> Option<&toml::Value> {
        let segments = parse_path(path)?;
        let (first, rest) = segments.split_first()?;
        let Segment::Key(key) = first else { return None };
        let mut value = self.table.get(key)?;
        for segment in rest {
            value = match (segment, value) {
                (Segment::Key(key), Value::Table(table)) => table.get(key)?,
                (Segment::Index(index), Value::Array(array)) => array.get(*index)?,
                _ => return None,
            };
        }
        Some(value)
    }

    /// Overrides (or adds) a value at a dotted path, e.g. from the command line
    /// (`experiment.seed`); records the given origin as its location (file `<command line>`,
    /// line 0, col 0). Missing intermediate tables are created; indexing past the end of an
    /// array, or descending into a non-table, is an error.
    pub fn set(&mut self, path: &str, value: toml::Value) -> Result<(), ConfigError> {
        self.set_from(path, value, Location::command_line())
    }

    /// [`Document::set`], recording `origin` as the value's location (a sweep axis's values,
    /// say), so that errors about the value point there.
    pub fn set_from(&mut self, path: &str, value: toml::Value, origin: Location) -> Result<(), ConfigError> {
        let fail = |message: String| ConfigError::Invalid {
            location: origin.clone(),
            key: path.to_owned(),
            message,
            value: None,
        };
        let segments = parse_path(path).ok_or_else(|| fail("cannot set: malformed key path".into()))?;
        if segments.is_empty() {
            return Err(fail("cannot set: empty key path".into()));
        }
        // Work on the root as a Value so tables and arrays share one recursive walk.
        let mut root = Value::Table(std::mem::take(&mut self.table));
        let result = set_in(&mut root, &mut self.provenance, &segments, 0, value, &origin).map_err(fail);
        if let Value::Table(table) = root {
            self.table = table;
        }
        result
    }

    /// Removes the key at a dotted path (a command-line edit, as [`Document::set`]); whether
    /// there was one.
    pub fn remove(&mut self, path: &str) -> bool {
        let Some(segments) = parse_path(path) else { return false };
        let mut root = Value::Table(std::mem::take(&mut self.table));
        let removed = remove_in(&mut root, &segments);
        if let Value::Table(table) = root {
            self.table = table;
        }
        removed
    }

    /// Deserializes the merged table into T, turning errors into ConfigError with the key path,
    /// the file/line/column where that key was written, the offending value, and — for unknown
    /// keys or enum variants — a "did you mean `x`?" suggestion.
    pub fn deserialize<T: serde::de::DeserializeOwned>(&self) -> Result<T, ConfigError> {
        serde_path_to_error::deserialize(self.table.clone()).map_err(|error| {
            let mut segments = Vec::new();
            for segment in error.path().iter() {
                match segment {
                    serde_path_to_error::Segment::Seq { index } => segments.push(Segment::Index(*index)),
                    serde_path_to_error::Segment::Map { key } => segments.push(Segment::Key(key.clone())),
                    serde_path_to_error::Segment::Enum { variant } => {
                        segments.push(Segment::Key(variant.clone()))
                    }
                    // Nothing after an untracked step can be located; keep the known prefix.
                    serde_path_to_error::Segment::Unknown => break,
                }
            }
            let mut message = first_line(error.inner().message()).to_owned();
            // serde reports an unknown field while reading the key, i.e. at the parent's path;
            // point at the key itself so that its line is found.
            let unknown = quoted_after(&message, "unknown field `").map(|f| Segment::Key(f.to_owned()));
            if let Some(field) = unknown.filter(|field| segments.last() != Some(field)) {
                segments.push(field);
            }
            if let Some(hint) = suggestion(&message) {
                message.push_str(&format!(" (did you mean `{hint}`?)"));
            }
            self.error_at(&format_path(&segments), message)
        })
    }

    /// Where errors about `path` point: its location ([`Document::locate`]), else the
    /// document's own, else the command line.
    pub fn place(&self, path: &str) -> Location {
        self.locate(path).or(self.provenance.here.as_ref()).cloned().unwrap_or_else(Location::command_line)
    }

    /// Turns a semantic validation failure found later (by the caller, after deserialize) into a
    /// ConfigError at `path` with the same location and value lookup.
    pub fn error_at(&self, path: &str, message: impl Into<String>) -> ConfigError {
        let location = self.place(path);
        let value = self.get(path).filter(|v| !matches!(v, Value::Table(_) | Value::Array(_)));
        ConfigError::Invalid {
            location,
            key: path.to_owned(),
            message: message.into(),
            value: value.map(|v| v.to_string()),
        }
    }
}

/// A key or array index in a path such as `system[1].core.clock`.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    Key(String),
    Index(usize),
}

/// Parses `a.b[2].c` (keys that are not bare may be written `"quoted"`). The empty string is
/// the top-level table.
fn parse_path(path: &str) -> Option<Vec<Segment>> {
    let mut segments = Vec::new();
    let mut chars = path.chars().peekable();
    // A key is expected at the start and after every '.'.
    let mut want_key = true;
    while let Some(&c) = chars.peek() {
        if c == '[' {
            chars.next();
            let mut digits = String::new();
            for c in chars.by_ref() {
                if c == ']' {
                    break;
                }
                digits.push(c);
            }
            segments.push(Segment::Index(digits.parse().ok()?));
            want_key = false;
        } else if want_key {
            let mut key = String::new();
            if c == '"' {
                chars.next();
                let mut closed = false;
                while let Some(c) = chars.next() {
                    match c {
                        '"' => {
                            closed = true;
                            break;
                        }
                        '\\' => key.push(chars.next()?),
                        c => key.push(c),
                    }
                }
                if !closed {
                    return None;
                }
            } else {
                while let Some(&c) = chars.peek() {
                    if matches!(c, '.' | '[' | ']' | '"') {
                        break;
                    }
                    key.push(c);
                    chars.next();
                }
                if key.is_empty() {
                    return None;
                }
            }
            segments.push(Segment::Key(key));
            want_key = false;
        } else if c == '.' {
            chars.next();
            want_key = true;
        } else {
            return None;
        }
    }
    // A trailing '.' promises a key that never came.
    if want_key && !segments.is_empty() {
        return None;
    }
    Some(segments)
}

/// Renders segments in the syntax [`parse_path`] reads.
fn format_path(segments: &[Segment]) -> String {
    let mut out = String::new();
    for segment in segments {
        match segment {
            Segment::Index(index) => out.push_str(&format!("[{index}]")),
            Segment::Key(key) => {
                if !out.is_empty() {
                    out.push('.');
                }
                let bare =
                    !key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
                if bare {
                    out.push_str(key);
                } else {
                    out.push('"');
                    for c in key.chars() {
                        if c == '"' || c == '\\' {
                            out.push('\\');
                        }
                        out.push(c);
                    }
                    out.push('"');
                }
            }
        }
    }
    out
}

/// What identifies a file for cycle detection: its canonical path where it has one.
fn identity(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

/// Parses one file's text and resolves its includes; `stack` holds the files being loaded.
fn load_text(
    text: &str,
    file: &Path,
    stack: &mut Vec<PathBuf>,
) -> Result<(toml::Table, Provenance), ConfigError> {
    let lines = LineIndex::new(text);
    let syntax = |error: toml::de::Error| ConfigError::Syntax {
        location: lines.location(file, error.span().map_or(0, |span| span.start)),
        message: syntax_message(&error, text),
    };
    let parsed = DeTable::parse(text).map_err(syntax)?;
    let mut provenance = Provenance::at(Location::start_of(file));
    provenance.keys = table_provenance(parsed.get_ref(), file, &lines);
    // The spanned tree has served its purpose; let toml build the plain values from it.
    let mut table = toml::Table::deserialize(toml::de::Deserializer::from(parsed)).map_err(syntax)?;
    resolve_includes(&mut table, &mut provenance, file, stack)?;
    Ok((table, provenance))
}

fn table_provenance(table: &DeTable<'_>, file: &Path, lines: &LineIndex) -> BTreeMap<String, Provenance> {
    table
        .iter()
        .map(|(key, value)| {
            let mut node = value_provenance(value.get_ref(), file, lines);
            node.here = Some(lines.location(file, key.span().start));
            (key.get_ref().to_string(), node)
        })
        .collect()
}

fn value_provenance(value: &DeValue<'_>, file: &Path, lines: &LineIndex) -> Provenance {
    match value {
        DeValue::Table(table) => {
            Provenance { keys: table_provenance(table, file, lines), ..Provenance::default() }
        }
        DeValue::Array(array) => Provenance {
            items: array
                .iter()
                .map(|item| {
                    let mut node = value_provenance(item.get_ref(), file, lines);
                    // For `[[x]]` entries the parser spans the header, which is what we want.
                    node.here = Some(lines.location(file, item.span().start));
                    node
                })
                .collect(),
            ..Provenance::default()
        },
        _ => Provenance::default(),
    }
}

/// Resolves includes in every table below and including `table`, innermost first, so that a
/// table's own (already resolved) contents are what gets laid over its include.
fn resolve_includes(
    table: &mut toml::Table,
    provenance: &mut Provenance,
    file: &Path,
    stack: &mut Vec<PathBuf>,
) -> Result<(), ConfigError> {
    for (key, value) in table.iter_mut() {
        let node = provenance.keys.entry(key.clone()).or_default();
        resolve_in_value(value, node, file, stack)?;
    }
    let Some(include) = table.remove(INCLUDE_KEY) else { return Ok(()) };
    let include_provenance = provenance.keys.remove(INCLUDE_KEY).unwrap_or_default();
    let location = include_provenance
        .here
        .or_else(|| provenance.here.clone())
        .unwrap_or_else(|| Location::start_of(file));
    let fail =
        |problem| ConfigError::Include { location: location.clone(), value: include.to_string(), problem };
    let Value::String(target) = &include else { return Err(fail(IncludeProblem::NotAString)) };
    let target = file.parent().unwrap_or(Path::new("")).join(target);
    let id = identity(&target);
    if let Some(start) = stack.iter().position(|open| *open == id) {
        let mut chain = stack[start..].to_vec();
        chain.push(id);
        return Err(fail(IncludeProblem::Cycle { chain }));
    }
    let text = std::fs::read_to_string(&target)
        .map_err(|io| fail(IncludeProblem::Unreadable { path: target.clone(), io }))?;
    stack.push(id);
    let loaded = load_text(&text, &target, stack);
    stack.pop();
    let (mut base, mut base_provenance) =
        loaded.map_err(|inner| fail(IncludeProblem::InIncludedFile(Box::new(inner))))?;
    overlay(&mut base, &mut base_provenance, std::mem::take(table), std::mem::take(&mut provenance.keys));
    *table = base;
    provenance.keys = base_provenance.keys;
    provenance.included = true;
    Ok(())
}

fn resolve_in_value(
    value: &mut Value,
    provenance: &mut Provenance,
    file: &Path,
    stack: &mut Vec<PathBuf>,
) -> Result<(), ConfigError> {
    match value {
        Value::Table(table) => resolve_includes(table, provenance, file, stack),
        Value::Array(array) => {
            provenance.items.resize_with(array.len(), Provenance::default);
            for (item, node) in array.iter_mut().zip(provenance.items.iter_mut()) {
                resolve_in_value(item, node, file, stack)?;
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// Lays `top` over `base`: tables merge key by key, anything else in `top` replaces. A table
/// that names a different `kind` (a tagged choice, such as a network topology) replaces: the
/// old kind's keys mean nothing to the new one. So does a table with its own `include` (a
/// GPU preset's `[memory.dram] include = "../memory/hbm2e.toml"` over its parent's HBM3
/// preset): merged, the parent's keys that the new preset lacks would stay behind.
fn overlay(
    base: &mut toml::Table,
    base_provenance: &mut Provenance,
    top: toml::Table,
    mut top_provenance: BTreeMap<String, Provenance>,
) {
    for (key, value) in top {
        let node = top_provenance.remove(&key).unwrap_or_default();
        match (base.get_mut(&key), value) {
            (Some(Value::Table(base_table)), Value::Table(top_table))
                if !node.included && !kind_changes(base_table, &top_table) =>
            {
                let base_node = base_provenance.keys.entry(key).or_default();
                overlay(base_table, base_node, top_table, node.keys);
                // The including file wrote this key last, so that is where it "is".
                if node.here.is_some() {
                    base_node.here = node.here;
                }
            }
            (_, value) => {
                base_provenance.keys.insert(key.clone(), node);
                base.insert(key, value);
            }
        }
    }
}

/// Whether `top` names a `kind` other than the one `base` names.
fn kind_changes(base: &toml::Table, top: &toml::Table) -> bool {
    matches!((base.get("kind"), top.get("kind")), (Some(a), Some(b)) if a != b)
}

/// Sets `segments[depth..]` below `slot` to `value`, creating missing tables.
/// Removes the key `segments` leads to below `slot`; whether there was one.
fn remove_in(slot: &mut Value, segments: &[Segment]) -> bool {
    match (segments, slot) {
        ([Segment::Key(k)], Value::Table(t)) => t.remove(k).is_some(),
        ([Segment::Key(k), rest @ ..], Value::Table(t)) => t.get_mut(k).is_some_and(|c| remove_in(c, rest)),
        ([Segment::Index(i), rest @ ..], Value::Array(a)) => {
            a.get_mut(*i).is_some_and(|c| remove_in(c, rest))
        }
        _ => false,
    }
}

fn set_in(
    slot: &mut Value,
    provenance: &mut Provenance,
    segments: &[Segment],
    depth: usize,
    value: Value,
    origin: &Location,
) -> Result<(), String> {
    let Some(segment) = segments.get(depth) else {
        *slot = value;
        *provenance = Provenance::at(origin.clone());
        return Ok(());
    };
    let parent = || {
        if depth == 0 { "the top level".to_owned() } else { format!("`{}`", format_path(&segments[..depth])) }
    };
    match (segment, slot) {
        (Segment::Key(key), Value::Table(table)) => {
            let node = provenance.keys.entry(key.clone()).or_default();
            let child = table.entry(key.clone()).or_insert_with(|| {
                // A new key: it, and any table created on the way down, came from the origin.
                node.here = Some(origin.clone());
                Value::Table(toml::Table::new())
            });
            set_in(child, node, segments, depth + 1, value, origin)
        }
        (Segment::Index(index), Value::Array(array)) => {
            let len = array.len();
            let child = array.get_mut(*index).ok_or_else(|| {
                format!("cannot set: index {index} is past the end of {} ({len} elements)", parent())
            })?;
            provenance.items.resize_with(len, Provenance::default);
            let node = provenance.items.get_mut(*index).ok_or("cannot set: internal inconsistency")?;
            set_in(child, node, segments, depth + 1, value, origin)
        }
        (Segment::Key(_), other) => {
            Err(format!("cannot set: {} is {}, not a table", parent(), article(other.type_str())))
        }
        (Segment::Index(_), other) => {
            Err(format!("cannot set: {} is {}, not an array", parent(), article(other.type_str())))
        }
    }
}

fn article(noun: &str) -> String {
    let vowel = noun.starts_with(['a', 'e', 'i', 'o', 'u']);
    format!("{} {noun}", if vowel { "an" } else { "a" })
}

/// Byte offsets of line starts, for turning spans into line and column numbers.
struct LineIndex<'t> {
    text: &'t str,
    starts: Vec<usize>,
}

impl<'t> LineIndex<'t> {
    fn new(text: &'t str) -> Self {
        let starts = std::iter::once(0).chain(text.match_indices('\n').map(|(at, _)| at + 1)).collect();
        LineIndex { text, starts }
    }

    fn location(&self, file: &Path, offset: usize) -> Location {
        let line = self.starts.partition_point(|&start| start <= offset).max(1);
        let start = self.starts.get(line - 1).copied().unwrap_or(0);
        // Columns count characters; a span ending mid-character (never expected) counts bytes.
        let column = match self.text.get(start..offset) {
            Some(prefix) => prefix.chars().count(),
            None => offset.saturating_sub(start),
        };
        Location { file: file.to_path_buf(), line, column: column + 1 }
    }
}

/// The first line of a TOML error's message, naming the key where toml's message does not
/// ("duplicate key" points at the key, but does not say it).
fn syntax_message(error: &toml::de::Error, text: &str) -> String {
    let message = first_line(error.message());
    let key = error.span().and_then(|span| text.get(span)).map(str::trim);
    match key {
        Some(key) if message == "duplicate key" && !key.is_empty() && !key.contains('\n') => {
            format!("duplicate key `{key}`")
        }
        _ => message.to_owned(),
    }
}

fn first_line(message: &str) -> &str {
    message.lines().next().unwrap_or("").trim_end()
}

/// The text between `prefix` and the next backtick, if `message` starts with `prefix`.
fn quoted_after<'m>(message: &'m str, prefix: &str) -> Option<&'m str> {
    let rest = message.strip_prefix(prefix)?;
    rest.split('`').next()
}

/// For serde's "unknown field/variant `a`, expected one of `b`, `c`", the expected name closest
/// to `a`, if it is close enough to be a plausible typo.
fn suggestion(message: &str) -> Option<String> {
    let unknown =
        quoted_after(message, "unknown field `").or_else(|| quoted_after(message, "unknown variant `"))?;
    let (_, expected) = message.split_once(", expected ")?;
    // Backticked names sit at odd positions when splitting on backticks.
    closest(unknown, expected.split('`').skip(1).step_by(2)).map(str::to_owned)
}

/// The candidate closest to `unknown`, if it is close enough to be a plausible typo (at most a
/// third of its characters, or two, changed): the "did you mean" of every name the user types.
pub(crate) fn closest<'a>(unknown: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let limit = 2.max(unknown.chars().count() / 3);
    candidates
        .into_iter()
        .map(|name| (edit_distance(unknown, name), name))
        .filter(|&(distance, name)| {
            distance <= limit && distance < unknown.chars().count().max(name.chars().count())
        })
        .min_by_key(|&(distance, _)| distance)
        .map(|(_, name)| name)
}

/// Levenshtein distance over characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let substitution = diagonal + usize::from(ca != cb);
            diagonal = row[j + 1];
            row[j + 1] = substitution.min(row[j] + 1).min(diagonal + 1);
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    /// A scratch directory under the system temp dir, removed on drop.
    struct Scratch(tempfile::TempDir);

    impl Scratch {
        fn new(name: &str) -> Self {
            let dir = tempfile::Builder::new().prefix(&format!("dae-sim-loader-{name}-")).tempdir();
            Scratch(dir.expect("create scratch dir"))
        }

        /// Writes `text` to `relative` (creating folders) and returns the full path.
        fn write(&self, relative: &str, text: &str) -> PathBuf {
            let path = self.0.path().join(relative);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).expect("create folder");
            }
            std::fs::write(&path, text).expect("write file");
            path
        }
    }

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct Core {
        cores: u32,
        #[serde(default)]
        clock: Option<String>,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct System {
        name: String,
        core: Core,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct Experiment {
        seed: u64,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct Config {
        experiment: Experiment,
        system: Vec<System>,
    }

    fn parse(text: &str) -> Document {
        Document::from_str(text, Path::new("configs/x.toml")).expect("valid config")
    }

    fn loc(document: &Document, path: &str) -> (String, usize, usize) {
        let location = document.locate(path).expect("located");
        (location.file.display().to_string(), location.line, location.column)
    }

    #[test]
    fn include_merges_deeply_and_scalar_replaces_table() {
        let dir = Scratch::new("merge");
        dir.write(
            "base.toml",
            "top = 1\nlist = [1, 2]\n[core]\ncores = 4\nclock = \"1GHz\"\n[access_unit]\ndepth = 8\n",
        );
        let main = dir.write(
            "main.toml",
            "include = \"base.toml\"\nlist = [3]\naccess_unit = \"none\"\n[core]\nclock = \"3GHz\"\n",
        );
        let document = Document::load(&main).expect("loads");
        let table = document.table();
        assert!(table.get("include").is_none());
        assert_eq!(document.get("top"), Some(&Value::Integer(1)));
        assert_eq!(document.get("list"), Some(&Value::Array(vec![Value::Integer(3)])));
        assert_eq!(document.get("access_unit"), Some(&Value::String("none".into())));
        assert_eq!(document.get("core.cores"), Some(&Value::Integer(4)));
        assert_eq!(document.get("core.clock"), Some(&Value::String("3GHz".into())));
        // A table over a scalar replaces it too.
        let over = dir.write("over.toml", "include = \"main.toml\"\n[access_unit]\ndepth = 2\n");
        let document = Document::load(&over).expect("loads");
        assert_eq!(document.get("access_unit.depth"), Some(&Value::Integer(2)));
    }

    #[test]
    fn a_table_with_its_own_include_replaces_the_one_it_lands_on() {
        // A GPU preset over its parent's: the new memory preset is the whole base, so none of
        // the parent preset's keys stay behind; keys written beside the include still apply,
        // and a later table without an include still merges into it.
        let dir = Scratch::new("own-include");
        dir.write("hbm3.toml", "name = \"hbm3\"\n[timing]\nnCL = 20\nnCCDR = 3\n");
        dir.write("hbm2e.toml", "name = \"hbm2e\"\n[timing]\nnCL = 14\n");
        dir.write("parent.toml", "[memory.dram]\ninclude = \"hbm3.toml\"\n");
        let child = dir.write(
            "child.toml",
            "include = \"parent.toml\"\n[memory.dram]\ninclude = \"hbm2e.toml\"\n[memory.dram.timing]\nnRP = 14\n",
        );
        let document = Document::load(&child).expect("loads");
        assert_eq!(document.get("memory.dram.name"), Some(&Value::String("hbm2e".into())));
        assert_eq!(document.get("memory.dram.timing.nCL"), Some(&Value::Integer(14)));
        assert_eq!(document.get("memory.dram.timing.nRP"), Some(&Value::Integer(14)));
        assert_eq!(document.get("memory.dram.timing.nCCDR"), None);
        let over = dir.write("over.toml", "include = \"child.toml\"\n[memory.dram.timing]\nnCL = 15\n");
        let document = Document::load(&over).expect("loads");
        assert_eq!(document.get("memory.dram.timing.nCL"), Some(&Value::Integer(15)));
        assert_eq!(document.get("memory.dram.timing.nRP"), Some(&Value::Integer(14)));
    }

    #[test]
    fn a_table_of_another_kind_replaces_rather_than_merges() {
        let dir = Scratch::new("kind");
        dir.write("base.toml", "[noc.topology]\nkind = \"crossbar\"\ncycles = 8\n");
        let main = dir.write(
            "main.toml",
            "include = \"base.toml\"\nnoc.topology = { kind = \"mesh\", cols = 2, rows = 2 }\n",
        );
        let document = Document::load(&main).expect("loads");
        assert_eq!(document.get("noc.topology.cols"), Some(&Value::Integer(2)));
        assert_eq!(document.get("noc.topology.cycles"), None);
        // The same kind still merges key by key.
        let same =
            dir.write("same.toml", "include = \"base.toml\"\nnoc.topology = { kind = \"crossbar\" }\n");
        let document = Document::load(&same).expect("loads");
        assert_eq!(document.get("noc.topology.cycles"), Some(&Value::Integer(8)));
    }

    #[test]
    fn array_of_tables_entries_have_their_own_includes() {
        let dir = Scratch::new("aot");
        dir.write("systems/small.toml", "name = \"small\"\n[core]\ncores = 2\n");
        dir.write("systems/big.toml", "name = \"big\"\n[core]\ncores = 64\n");
        let main = dir.write(
            "main.toml",
            "[experiment]\nseed = 7\n\n[[system]]\ninclude = \"systems/small.toml\"\n\n\
             [[system]]\ninclude = \"systems/big.toml\"\nname = \"bigger\"\n",
        );
        let document = Document::load(&main).expect("loads");
        let config: Config = document.deserialize().expect("deserializes");
        assert_eq!(config.system.len(), 2);
        assert_eq!(config.system[0], System { name: "small".into(), core: Core { cores: 2, clock: None } });
        assert_eq!(config.system[1].name, "bigger");
        assert_eq!(config.system[1].core.cores, 64);
        // The element is located at its `[[system]]` header.
        assert_eq!(document.locate("system[1]").map(|l| (l.line, l.column)), Some((7, 1)));
    }

    #[test]
    fn nested_includes_resolve_relative_to_the_including_file() {
        let dir = Scratch::new("nested");
        dir.write("common/core.toml", "cores = 8\nclock = \"2GHz\"\n");
        dir.write("common/system.toml", "name = \"s\"\n[core]\ninclude = \"core.toml\"\nclock = \"4GHz\"\n");
        let main = dir.write(
            "configs/main.toml",
            "[experiment]\nseed = 1\n[[system]]\ninclude = \"../common/system.toml\"\n",
        );
        let document = Document::load(&main).expect("loads");
        let config: Config = document.deserialize().expect("deserializes");
        assert_eq!(config.system[0].core, Core { cores: 8, clock: Some("4GHz".into()) });
        // Keys from included files point into those files.
        let cores = document.locate("system[0].core.cores").expect("located");
        assert!(cores.file.ends_with("common/core.toml"), "{}", cores.file.display());
        assert_eq!((cores.line, cores.column), (1, 1));
        let clock = document.locate("system[0].core.clock").expect("located");
        assert!(clock.file.ends_with("system.toml"), "{}", clock.file.display());
        assert_eq!((clock.line, clock.column), (4, 1));
        let name = document.locate("system[0].name").expect("located");
        assert!(name.file.ends_with("system.toml"));
        assert_eq!(name.line, 1);
        // The merged `core` table was written last in system.toml's `[core]` header.
        let core = document.locate("system[0].core").expect("located");
        assert!(core.file.ends_with("system.toml"));
        assert_eq!((core.line, core.column), (2, 2));
        // Messages fold the joined `configs/../common/`.
        assert!(core.file.to_string_lossy().contains("configs/../common/system.toml"));
        assert!(core.to_string().ends_with("/common/system.toml:2:2"), "{core}");
        assert!(!core.to_string().contains(".."), "{core}");
    }

    #[test]
    fn shown_files_fold_parent_steps_lexically() {
        let shown = |p: &str| Location { file: PathBuf::from(p), line: 1, column: 1 }.shown_file();
        assert_eq!(shown("systems/../memory/x.toml"), PathBuf::from("memory/x.toml"));
        assert_eq!(shown("./a/./b.toml"), PathBuf::from("a/b.toml"));
        assert_eq!(shown("../a/b/../../c.toml"), PathBuf::from("../c.toml"));
        assert_eq!(shown("/r/configs/../m.toml"), PathBuf::from("/r/m.toml"));
        assert_eq!(shown("x.toml"), PathBuf::from("x.toml"));
    }

    #[test]
    fn include_cycle_is_reported_at_the_include() {
        let dir = Scratch::new("cycle");
        dir.write("a.toml", "x = 1\ninclude = \"b.toml\"\n");
        dir.write("b.toml", "include = \"a.toml\"\n");
        let error = Document::load(&dir.0.path().join("a.toml")).expect_err("cycle");
        let text = error.to_string();
        assert!(text.contains("a.toml:2:1: include = \"b.toml\": "), "{text}");
        assert!(text.contains("b.toml:1:1: include = \"a.toml\": include cycle: "), "{text}");
        let ConfigError::Include { problem: IncludeProblem::InIncludedFile(inner), .. } = error else {
            panic!("unexpected {error:?}");
        };
        assert!(matches!(*inner, ConfigError::Include { problem: IncludeProblem::Cycle { .. }, .. }));
    }

    #[test]
    fn missing_include_and_non_string_include() {
        let document =
            Document::from_str("a = 1\n\n[t]\n  include = \"nope.toml\"\n", Path::new("/nonexistent/x.toml"));
        let error = document.expect_err("missing");
        let text = error.to_string();
        assert!(
            text.starts_with(
                "/nonexistent/x.toml:4:3: include = \"nope.toml\": cannot read /nonexistent/nope.toml: "
            ),
            "{text}"
        );
        let error = Document::from_str("include = 5\n", Path::new("x.toml")).expect_err("not a string");
        assert_eq!(error.to_string(), "x.toml:1:1: include = 5: include must be a string naming a TOML file");
    }

    #[test]
    fn syntax_error_location() {
        let error = Document::from_str("a = 1\nb = [1, 2\nc = 3\n", Path::new("configs/x.toml"))
            .expect_err("bad toml");
        let ConfigError::Syntax { location, message } = &error else { panic!("unexpected {error:?}") };
        assert_eq!((location.line, location.column), (3, 1), "{error}");
        assert!(!message.contains('\n'));
        assert!(error.to_string().starts_with("configs/x.toml:3:1: invalid TOML: "), "{error}");
        let error = Document::from_str("a = 1\nb = 2x\n", Path::new("x.toml")).expect_err("bad toml");
        assert!(error.to_string().starts_with("x.toml:2:"), "{error}");
    }

    #[test]
    fn a_duplicate_key_is_named() {
        let error =
            Document::from_str("[experiment]\nname = \"x\"\nseed = 1\nseed = 2\n", Path::new("x.toml"))
                .expect_err("duplicate");
        assert_eq!(error.to_string(), "x.toml:4:1: invalid TOML: duplicate key `seed`");
        let error =
            Document::from_str("[a]\nb = 1\n[a]\nc = 2\n", Path::new("x.toml")).expect_err("duplicate");
        assert_eq!(error.to_string(), "x.toml:3:2: invalid TOML: duplicate key `a`");
    }

    #[test]
    fn syntax_error_in_included_file_names_both_files() {
        let dir = Scratch::new("syntax");
        dir.write("bad.toml", "ok = 1\noops = \n");
        let error =
            Document::from_str("include = \"bad.toml\"\n", &dir.0.path().join("main.toml")).expect_err("bad");
        let text = error.to_string();
        assert!(text.contains("main.toml:1:1: include = \"bad.toml\": "), "{text}");
        assert!(text.contains("bad.toml:2:"), "{text}");
        assert!(text.contains("invalid TOML: "), "{text}");
    }

    #[test]
    fn unknown_key_suggests_and_points_at_the_key() {
        let document = parse(
            "[experiment]\nseed = 1\n\n[[system]]\nname = \"a\"\n[system.core]\ncores = 4\n\n[[system]]\n\
             name = \"b\"\n[system.core]\ncors = 8\ncores = 8\n",
        );
        let error = document.deserialize::<Config>().expect_err("unknown key");
        let text = error.to_string();
        assert!(
            text.starts_with("configs/x.toml:12:1: system[1].core.cors: unknown field `cors`, expected"),
            "{text}"
        );
        assert!(text.ends_with("(did you mean `cores`?) (value: 8)"), "{text}");
        let ConfigError::Invalid { key, value, .. } = &error else { panic!("unexpected {error:?}") };
        assert_eq!(key, "system[1].core.cors");
        assert_eq!(value.as_deref(), Some("8"));
        // Nothing close enough: no suggestion.
        let document = parse("system = []\n[experiment]\nseed = 1\nwhatever = true\n");
        let text = document.deserialize::<Config>().expect_err("unknown key").to_string();
        assert!(
            text.starts_with("configs/x.toml:4:1: experiment.whatever: unknown field `whatever`"),
            "{text}"
        );
        assert!(!text.contains("did you mean"), "{text}");
    }

    #[test]
    fn wrong_type_reports_path_and_value() {
        let document = parse("system = []\n[experiment]\n  seed = \"eight\"\n");
        let error = document.deserialize::<Config>().expect_err("wrong type");
        let text = error.to_string();
        assert!(
            text.starts_with("configs/x.toml:3:3: experiment.seed: invalid type: string \"eight\""),
            "{text}"
        );
        assert!(text.ends_with(" (value: \"eight\")"), "{text}");
        let document =
            parse("[experiment]\nseed = 1\n[[system]]\nname = \"a\"\ncore = { cores = \"eight\" }\n");
        let text = document.deserialize::<Config>().expect_err("wrong type").to_string();
        assert!(text.starts_with("configs/x.toml:5:10: system[0].core.cores: invalid type"), "{text}");
    }

    #[test]
    fn missing_field_locates_the_parent() {
        let document = parse("[experiment]\nseed = 1\n\n[[system]]\nname = \"a\"\n");
        let text = document.deserialize::<Config>().expect_err("missing").to_string();
        assert_eq!(text, "configs/x.toml:4:1: system[0]: missing field `core`");
        let document = parse("system = []\n");
        let text = document.deserialize::<Config>().expect_err("missing").to_string();
        assert_eq!(text, "configs/x.toml:1:1: missing field `experiment`");
    }

    #[test]
    fn remove_drops_a_key_inside_arrays_of_tables_and_nothing_else() {
        let mut document = parse("[[w]]\nname = \"a\"\n[w.indices]\nalpha = 1.0\n[[w]]\nname = \"b\"\n");
        assert!(document.remove("w[0].indices"));
        assert_eq!(document.get("w[0].indices"), None);
        assert_eq!(document.get("w[0].name"), Some(&Value::String("a".into())));
        for absent in ["w[0].indices", "w[1].indices", "w[2].name", "w.name", "x", "w[0"] {
            assert!(!document.remove(absent), "{absent}");
        }
        assert!(document.remove("w[1].name"));
        assert_eq!(document.get("w[1].name"), None);
    }

    #[test]
    fn set_overrides_and_records_the_command_line() {
        let mut document =
            parse("[experiment]\nseed = 1\n[[system]]\nname = \"a\"\n[system.core]\ncores = 4\n");
        document.set("experiment.seed", Value::Integer(42)).expect("set");
        document.set("system[0].core.clock", Value::String("2GHz".into())).expect("set");
        document.set("new.deep.key", Value::Boolean(true)).expect("set");
        let config: Config = {
            let mut copy = document.clone();
            copy.table.remove("new");
            copy.deserialize().expect("deserializes")
        };
        assert_eq!(config.experiment.seed, 42);
        assert_eq!(config.system[0].core.clock.as_deref(), Some("2GHz"));
        assert_eq!(document.get("new.deep.key"), Some(&Value::Boolean(true)));
        assert_eq!(loc(&document, "experiment.seed"), ("<command line>".into(), 0, 0));
        assert_eq!(loc(&document, "new.deep"), ("<command line>".into(), 0, 0));
        assert_eq!(loc(&document, "system[0].core.cores"), ("configs/x.toml".into(), 6, 1));
        let error = document.set("system[3].name", Value::Integer(1)).expect_err("out of range");
        assert!(error.to_string().contains("past the end of `system` (1 elements)"), "{error}");
        let error = document.set("experiment.seed.x", Value::Integer(1)).expect_err("not a table");
        assert!(error.to_string().contains("`experiment.seed` is an integer, not a table"), "{error}");
        assert!(document.set("", Value::Integer(1)).is_err());
        assert!(document.set("a..b", Value::Integer(1)).is_err());
        // A bad override is reported at the command line.
        document.set("experiment.seed", Value::String("x".into())).expect("set");
        let text = document.deserialize::<Config>().expect_err("bad").to_string();
        assert!(text.starts_with("<command line>:0:0: experiment.seed: invalid type"), "{text}");
    }

    #[test]
    fn error_at_uses_location_and_value() {
        let document =
            parse("[experiment]\nseed = 1\n[[system]]\nname = \"a\"\n[system.core]\nclock = \"3Ghz\"\n");
        let error = document.error_at("system[0].core.clock", "unknown unit \"Ghz\" in \"3Ghz\"");
        assert_eq!(
            error.to_string(),
            "configs/x.toml:6:1: system[0].core.clock: unknown unit \"Ghz\" in \"3Ghz\" (value: \"3Ghz\")"
        );
        // Tables get no value suffix; unknown paths fall back to the closest ancestor.
        let error = document.error_at("system[0].core", "bad core");
        assert_eq!(error.to_string(), "configs/x.toml:5:9: system[0].core: bad core");
        assert_eq!(loc(&document, "system[0].core.missing.deeper"), ("configs/x.toml".into(), 5, 9));
        assert_eq!(loc(&document, ""), ("configs/x.toml".into(), 1, 1));
    }

    #[test]
    fn locate_and_get_arrays_and_quoted_keys() {
        let document = parse("workload = [\n  \"a\",\n  \"b\",\n]\n\"odd.key\" = { x = 1 }\n");
        assert_eq!(loc(&document, "workload[1]"), ("configs/x.toml".into(), 3, 3));
        assert_eq!(document.get("workload[1]"), Some(&Value::String("b".into())));
        assert_eq!(document.get("workload[2]"), None);
        assert_eq!(document.get("\"odd.key\".x"), Some(&Value::Integer(1)));
        assert_eq!(loc(&document, "\"odd.key\".x"), ("configs/x.toml".into(), 5, 15));
        assert_eq!(document.locate("a..b"), None);
        assert_eq!(format_path(&parse_path("\"odd.key\".x[2]").unwrap_or_default()), "\"odd.key\".x[2]");
    }

    #[test]
    fn unknown_variant_gets_a_suggestion() {
        #[derive(Debug, Deserialize)]
        #[serde(rename_all = "snake_case")]
        enum Mode {
            Decoupled,
            Coupled,
        }
        #[derive(Debug, Deserialize)]
        struct WithMode {
            #[allow(dead_code)]
            mode: Mode,
        }
        let document = parse("mode = \"decupled\"\n");
        let text = document.deserialize::<WithMode>().expect_err("bad variant").to_string();
        assert!(text.starts_with("configs/x.toml:1:1: mode: unknown variant `decupled`"), "{text}");
        assert!(text.ends_with("(did you mean `decoupled`?) (value: \"decupled\")"), "{text}");
    }

    #[test]
    fn io_error_names_the_file() {
        let error = Document::load(Path::new("/nonexistent/dir/x.toml")).expect_err("missing");
        assert!(error.to_string().starts_with("/nonexistent/dir/x.toml: cannot read: "), "{error}");
    }

    #[test]
    fn edit_distance_basics() {
        assert_eq!(edit_distance("cors", "cores"), 1);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }
}
