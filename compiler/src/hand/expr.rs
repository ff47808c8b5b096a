//! Placeholder expressions: names, integers and arithmetic in braces, evaluated per line.

use super::HandError;
use super::expand::Scope;

/// Whether `s` is a name (a placeholder or a loop variable): a letter or `_`, then letters,
/// digits and `_`.
pub(super) fn is_name(s: &str) -> bool {
    let mut c = s.chars();
    c.next().is_some_and(|f| f.is_ascii_alphabetic() || f == '_')
        && c.all(|x| x.is_ascii_alphanumeric() || x == '_')
}

/// A recursive-descent evaluator of a placeholder expression; `None` values (a branch not
/// taken) propagate, and arithmetic errors then are not reported.
pub(super) struct Expr<'a> {
    pub(super) s: &'a Scope<'a>,
    pub(super) text: &'a str,
    pub(super) at: usize,
}

impl Expr<'_> {
    pub(super) fn bad(&self, why: String) -> HandError {
        self.s.syntax(format!("bad expression `{{{}}}`: {why}", self.text))
    }

    pub(super) fn skip_ws(&mut self) {
        let rest = &self.text[self.at..];
        self.at += rest.len() - rest.trim_start().len();
    }

    pub(super) fn peek(&mut self) -> Option<char> {
        self.skip_ws();
        self.text[self.at..].chars().next()
    }

    pub(super) fn expect(&mut self, c: char) -> Result<(), HandError> {
        if self.peek() == Some(c) {
            self.at += 1;
            Ok(())
        } else {
            Err(self.bad(format!("expected `{c}`")))
        }
    }

    pub(super) fn apply(&self, op: char, a: Option<i64>, b: Option<i64>) -> Result<Option<i64>, HandError> {
        let (Some(a), Some(b)) = (a, b) else { return Ok(None) };
        let r = match op {
            '+' => a.checked_add(b),
            '-' => a.checked_sub(b),
            '*' => a.checked_mul(b),
            '/' => a.checked_div(b),
            '%' => a.checked_rem(b),
            'm' => Some(a.min(b)),
            'M' => Some(a.max(b)),
            '<' => Some(i64::from(a < b)),
            'l' => Some(i64::from(a <= b)),
            '>' => Some(i64::from(a > b)),
            'g' => Some(i64::from(a >= b)),
            '=' => Some(i64::from(a == b)),
            _ => Some(i64::from(a != b)),
        };
        r.map(Some).ok_or_else(|| self.bad(format!("{a} {op} {b} has no value")))
    }

    /// A comparison (`<`, `<=`, `>`, `>=`, `==`, `!=`: 1 if it holds, else 0), or a shift.
    pub(super) fn compare(&mut self) -> Result<Option<i64>, HandError> {
        let a = self.shift()?;
        let rest = &self.text[self.at..];
        let rest = rest.trim_start();
        let skipped = self.text.len() - self.at - rest.len();
        let op = ["<=", ">=", "==", "!=", "<", ">"].into_iter().find(|op| rest.starts_with(op));
        let Some(op) = op else { return Ok(a) };
        self.at += skipped + op.len();
        let b = self.shift()?;
        let code = match op {
            "<=" => 'l',
            ">=" => 'g',
            "==" => '=',
            "!=" => '!',
            "<" => '<',
            _ => '>',
        };
        self.apply(code, a, b)
    }

    /// `a << b` or `a >> b` (arithmetic; `b` in 0..64), or a sum.
    pub(super) fn shift(&mut self) -> Result<Option<i64>, HandError> {
        let mut a = self.sum()?;
        loop {
            self.skip_ws();
            let rest = &self.text[self.at..];
            let op = if rest.starts_with("<<") {
                '<'
            } else if rest.starts_with(">>") {
                '>'
            } else {
                return Ok(a);
            };
            self.at += 2;
            let b = self.sum()?;
            a = match (a, b) {
                (Some(x), Some(n)) if (0..64).contains(&n) => {
                    Some(if op == '<' { x.wrapping_shl(n as u32) } else { x >> n })
                }
                (Some(x), Some(n)) => return Err(self.bad(format!("shift of {x} by {n}"))),
                _ => None,
            };
        }
    }

    pub(super) fn sum(&mut self) -> Result<Option<i64>, HandError> {
        let mut a = self.product()?;
        while let Some(op @ ('+' | '-')) = self.peek() {
            self.at += 1;
            let b = self.product()?;
            a = self.apply(op, a, b)?;
        }
        Ok(a)
    }

    pub(super) fn product(&mut self) -> Result<Option<i64>, HandError> {
        let mut a = self.atom()?;
        while let Some(op @ ('*' | '/' | '%')) = self.peek() {
            self.at += 1;
            let b = self.atom()?;
            a = self.apply(op, a, b)?;
        }
        Ok(a)
    }

    pub(super) fn atom(&mut self) -> Result<Option<i64>, HandError> {
        match self.peek() {
            Some('(') => {
                self.at += 1;
                let a = self.compare()?;
                self.expect(')')?;
                Ok(a)
            }
            Some('-') => {
                self.at += 1;
                let a = self.atom()?;
                self.apply('-', Some(0), a)
            }
            Some(c) if c.is_ascii_alphanumeric() || c == '_' => {
                let rest = &self.text[self.at..];
                let len = rest.find(|x: char| !(x.is_ascii_alphanumeric() || x == '_')).unwrap_or(rest.len());
                let word = &rest[..len];
                self.at += len;
                if c.is_ascii_digit() {
                    return parse_number(word)
                        .map(Some)
                        .ok_or_else(|| self.bad(format!("bad number `{word}`")));
                }
                if matches!(word, "min" | "max") && self.peek() == Some('(') {
                    self.at += 1;
                    let a = self.sum()?;
                    self.expect(',')?;
                    let b = self.sum()?;
                    self.expect(')')?;
                    return self.apply(if word == "min" { 'm' } else { 'M' }, a, b);
                }
                match self.s.name(word)? {
                    None => Ok(None),
                    Some(value) => parse_number(&value)
                        .map(Some)
                        .ok_or_else(|| self.bad(format!("{{{word}}} = {value} is not a number"))),
                }
            }
            Some(c) => Err(self.bad(format!("unexpected `{c}`"))),
            None => Err(self.bad("it ends too early".into())),
        }
    }
}

/// A decimal or `0x` hexadecimal integer.
pub(super) fn parse_number(s: &str) -> Option<i64> {
    match s.strip_prefix("0x") {
        Some(hex) => i64::from_str_radix(hex, 16).ok(),
        None => s.parse().ok(),
    }
}
