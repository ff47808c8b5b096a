//! Knowledge-graph dictionaries: files of `<id>\t<name>` lines that give every entity and
//! relation name a dense integer id (FB15k-237's `entities.dict` and `relations.dict`, as
//! `DeepGraphLearning/KnowledgeGraphEmbedding` ships them), and triples written with names,
//! `<head>\t<relation>\t<tail>` a line (FB15k-237's `train.txt`, `valid.txt`, `test.txt`), read
//! through them into the integer triples [`crate::parse_triples`] reads from id files.
//!
//! Both readers take lines ending in LF or CRLF (FB15k-237's splits are CRLF, its dictionaries
//! LF), skip blank lines and lines starting with `#`, and keep names exactly as written
//! otherwise (fields are separated by single tabs; spaces belong to the name). A dictionary's
//! ids must be dense: `n` entries hold the ids `0..n-1`, each once, and no name appears twice.
//! Errors are `(line, why)` with the 1-based line at fault (0: the file as a whole), as the
//! crate's other text readers give them; the caller adds the file's name.

use std::collections::HashMap;

/// The 1-based number and the text (without its `\n` or `\r\n`) of each line of `text` that is
/// neither blank nor a `#` comment.
fn content_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.split('\n').enumerate().filter_map(|(n, raw)| {
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        (!line.trim().is_empty() && !line.starts_with('#')).then_some((n + 1, line))
    })
}

/// Names and their dense ids `0..len`, read from a dictionary file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dictionary {
    /// The file it was read from, for messages.
    file: String,
    /// Each name's id.
    ids: HashMap<String, u32>,
}

impl Dictionary {
    /// Reads a dictionary: `<id>\t<name>` lines, the ids `0..n-1` for `n` entries, each once,
    /// in any order, and every name once. `file` names it in the messages of
    /// [`parse_named_triples`].
    pub fn parse(text: &str, file: &str) -> Result<Self, (usize, String)> {
        let mut entries: Vec<(usize, u64, &str)> = Vec::new();
        for (n, line) in content_lines(text) {
            let fields: Vec<&str> = line.split('\t').collect();
            let [id, name] = fields[..] else {
                return Err((
                    n,
                    format!(
                        "expected `id<TAB>name` (2 tab-separated fields), found {} in {line:?}",
                        fields.len()
                    ),
                ));
            };
            if name.is_empty() {
                return Err((n, format!("id {id:?} has an empty name")));
            }
            let id: u64 =
                id.parse().map_err(|_| (n, format!("id {id:?} is not an id (a non-negative integer)")))?;
            entries.push((n, id, name));
        }
        let count = entries.len();
        if count == 0 {
            return Err((0, "no entries".into()));
        }
        if u32::try_from(count).is_err() {
            return Err((0, format!("{count} entries: more than 32-bit ids address")));
        }
        // The line of each id seen, and of each name.
        let mut id_line = vec![0usize; count];
        let mut ids = HashMap::with_capacity(count);
        let mut name_line: HashMap<&str, usize> = HashMap::with_capacity(count);
        for (n, id, name) in entries {
            if id >= count as u64 {
                return Err((
                    n,
                    format!(
                        "id {id} is not below the {count} entries: ids must be dense, 0..{} each once",
                        count - 1
                    ),
                ));
            }
            let first = &mut id_line[id as usize];
            if *first != 0 {
                return Err((n, format!("id {id} is also on line {}: ids must be unique", *first)));
            }
            *first = n;
            if let Some(&before) = name_line.get(name) {
                return Err((n, format!("name {name:?} is also on line {before}: a name has one id")));
            }
            name_line.insert(name, n);
            ids.insert(name.to_string(), id as u32);
        }
        Ok(Self { file: file.to_string(), ids })
    }

    /// Entries (the ids run `0..len()`).
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether it has no entry (never, for a parsed one).
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// The id of `name`, if the dictionary has it.
    pub fn id(&self, name: &str) -> Option<u32> {
        self.ids.get(name).copied()
    }

    /// The file it was read from.
    pub fn file(&self) -> &str {
        &self.file
    }
}

/// Reads knowledge-graph triples written with names, `<head>\t<relation>\t<tail>` a line, into
/// `[head, relation, tail]` ids: heads and tails through `entities`, relations through
/// `relations`. A name the dictionary lacks is an error naming the line, the field and the
/// dictionary's file.
pub fn parse_named_triples(
    text: &str,
    entities: &Dictionary,
    relations: &Dictionary,
) -> Result<Vec<[u32; 3]>, (usize, String)> {
    let mut out = Vec::new();
    for (n, line) in content_lines(text) {
        let fields: Vec<&str> = line.split('\t').collect();
        let [head, relation, tail] = fields[..] else {
            return Err((
                n,
                format!(
                    "expected `head<TAB>relation<TAB>tail` (3 tab-separated fields), found {} in {line:?}",
                    fields.len()
                ),
            ));
        };
        let mut triple = [0u32; 3];
        for (k, (what, name, dict)) in
            [("head", head, entities), ("relation", relation, relations), ("tail", tail, entities)]
                .into_iter()
                .enumerate()
        {
            triple[k] =
                dict.id(name).ok_or_else(|| (n, format!("{what} {name:?} is not in {}", dict.file)))?;
        }
        out.push(triple);
    }
    if out.is_empty() {
        return Err((0, "no triples".into()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dict(text: &str) -> Result<Dictionary, (usize, String)> {
        Dictionary::parse(text, "d.dict")
    }

    #[test]
    fn reads_lf_and_crlf_in_any_order_with_comments_and_blank_lines() {
        let d = dict("# names\n1\t/m/b\r\n\n0\t/m/a\r\n2\tname with spaces\n").unwrap();
        assert_eq!(d.len(), 3);
        assert_eq!((d.id("/m/a"), d.id("/m/b"), d.id("name with spaces")), (Some(0), Some(1), Some(2)));
        assert_eq!(d.id("/m/b\r"), None);
        assert_eq!(d.file(), "d.dict");
    }

    #[test]
    fn bad_dictionaries_name_the_line() {
        for (text, want) in [
            ("0\ta\n1 b\n", (2, "expected `id<TAB>name` (2 tab-separated fields), found 1 in \"1 b\"")),
            ("0\ta\tx\n", (1, "expected `id<TAB>name` (2 tab-separated fields), found 3 in \"0\\ta\\tx\"")),
            ("0\t\n", (1, "id \"0\" has an empty name")),
            ("0\ta\n-1\tb\n", (2, "id \"-1\" is not an id (a non-negative integer)")),
            ("0\ta\nx\tb\n", (2, "id \"x\" is not an id (a non-negative integer)")),
            ("0\ta\n2\tb\n", (2, "id 2 is not below the 2 entries: ids must be dense, 0..1 each once")),
            ("0\ta\n1\tb\n0\tc\n", (3, "id 0 is also on line 1: ids must be unique")),
            ("0\ta\r\n\n1\tb\r\n2\ta\r\n", (4, "name \"a\" is also on line 1: a name has one id")),
            ("# only a comment\n\n", (0, "no entries")),
        ] {
            assert_eq!(dict(text).unwrap_err(), (want.0, want.1.to_string()), "{text:?}");
        }
    }

    #[test]
    fn named_triples_map_through_the_dictionaries() {
        let e = dict("0\t/m/a\n1\t/m/b\n2\t/m/c\n").unwrap();
        let r = Dictionary::parse("0\t/r/x\n1\t/r/y\n", "r.dict").unwrap();
        let t = parse_named_triples("/m/c\t/r/y\t/m/a\r\n# c\n\n/m/a\t/r/x\t/m/b\r\n", &e, &r).unwrap();
        assert_eq!(t, [[2, 1, 0], [0, 0, 1]]);
        for (text, want) in [
            ("/m/a\t/r/x\t/m/b\n/m/a\t/r/z\t/m/b\n", (2, "relation \"/r/z\" is not in r.dict")),
            ("/m/q\t/r/x\t/m/b\n", (1, "head \"/m/q\" is not in d.dict")),
            ("/m/a\t/r/x\t/m/b \n", (1, "tail \"/m/b \" is not in d.dict")),
            (
                "/m/a /r/x /m/b\n",
                (
                    1,
                    "expected `head<TAB>relation<TAB>tail` (3 tab-separated fields), found 1 in \"/m/a /r/x /m/b\"",
                ),
            ),
            (
                "/m/a\t/r/x\t/m/b\t/m/c\n",
                (
                    1,
                    "expected `head<TAB>relation<TAB>tail` (3 tab-separated fields), found 4 in \"/m/a\\t/r/x\\t/m/b\\t/m/c\"",
                ),
            ),
            ("\r\n", (0, "no triples")),
        ] {
            assert_eq!(
                parse_named_triples(text, &e, &r).unwrap_err(),
                (want.0, want.1.to_string()),
                "{text:?}"
            );
        }
    }
}
