//! Latency expressions over a preset's named timings ("nCWL + nBL + nWR").
//!
//! Contract: an expression is integers, timing names, `+`, `-`, `*` and parentheses. It is
//! evaluated once, when the preset is resolved; a name the preset does not define is an error
//! that names it, as is a result below zero. Nothing here runs on the hot path.

use std::collections::BTreeMap;

/// Why an expression could not be evaluated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExprError {
    /// A name the preset's timing table does not define.
    UnknownName(String),
    /// The text is not a well-formed expression.
    Syntax(String),
    /// The value is negative or does not fit in 64 bits.
    OutOfRange(i128),
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Num(i128),
    Name(String),
    Plus,
    Minus,
    Star,
    Open,
    Close,
}

fn tokenize(text: &str) -> Result<Vec<Token>, ExprError> {
    let mut out = Vec::new();
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        match c {
            b' ' | b'\t' => i += 1,
            b'+' => {
                out.push(Token::Plus);
                i += 1
            }
            b'-' => {
                out.push(Token::Minus);
                i += 1
            }
            b'*' => {
                out.push(Token::Star);
                i += 1
            }
            b'(' => {
                out.push(Token::Open);
                i += 1
            }
            b')' => {
                out.push(Token::Close);
                i += 1
            }
            b'0'..=b'9' => {
                let start = i;
                while i < b.len() && b[i].is_ascii_digit() {
                    i += 1;
                }
                let v: i128 = text[start..i]
                    .parse()
                    .map_err(|_| ExprError::Syntax(format!("number {} is too large", &text[start..i])))?;
                out.push(Token::Num(v));
            }
            c if c.is_ascii_alphabetic() || c == b'_' => {
                let start = i;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                    i += 1;
                }
                out.push(Token::Name(text[start..i].to_string()));
            }
            _ => {
                let ch = text[i..].chars().next().unwrap_or('?');
                return Err(ExprError::Syntax(format!("unexpected character '{ch}'")));
            }
        }
    }
    Ok(out)
}

struct Parser<'a> {
    tokens: Vec<Token>,
    pos: usize,
    names: &'a BTreeMap<String, u64>,
    /// Parenthesis and sign nesting, bounded so that no input can exhaust the stack.
    depth: u32,
}

const MAX_DEPTH: u32 = 64;

const LIMIT: i128 = 1 << 80;

impl Parser<'_> {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.pos)
    }

    fn next(&mut self) -> Option<Token> {
        let t = self.tokens.get(self.pos).cloned();
        self.pos += 1;
        t
    }

    /// sum := product (('+' | '-') product)*
    fn sum(&mut self) -> Result<i128, ExprError> {
        let mut v = self.product()?;
        while let Some(t) = self.peek() {
            let sign = match t {
                Token::Plus => 1,
                Token::Minus => -1,
                _ => break,
            };
            self.pos += 1;
            v += sign * self.product()?;
            if v.abs() > LIMIT {
                return Err(ExprError::OutOfRange(v));
            }
        }
        Ok(v)
    }

    /// product := atom ('*' atom)*
    fn product(&mut self) -> Result<i128, ExprError> {
        let mut v = self.atom()?;
        while let Some(Token::Star) = self.peek() {
            self.pos += 1;
            v *= self.atom()?;
            if v.abs() > LIMIT {
                return Err(ExprError::OutOfRange(v));
            }
        }
        Ok(v)
    }

    /// atom := number | name | '(' sum ')' | '-' atom
    fn atom(&mut self) -> Result<i128, ExprError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(ExprError::Syntax(format!("nested more than {MAX_DEPTH} deep")));
        }
        let v = self.atom_inner();
        self.depth -= 1;
        v
    }

    fn atom_inner(&mut self) -> Result<i128, ExprError> {
        match self.next() {
            Some(Token::Num(v)) if v <= LIMIT => Ok(v),
            Some(Token::Num(v)) => Err(ExprError::OutOfRange(v)),
            Some(Token::Name(n)) => match self.names.get(&n) {
                Some(v) => Ok(i128::from(*v)),
                None => Err(ExprError::UnknownName(n)),
            },
            Some(Token::Open) => {
                let v = self.sum()?;
                match self.next() {
                    Some(Token::Close) => Ok(v),
                    _ => Err(ExprError::Syntax("missing ')'".into())),
                }
            }
            Some(Token::Minus) => Ok(-self.atom()?),
            Some(t) => Err(ExprError::Syntax(format!("unexpected {t:?}"))),
            None => Err(ExprError::Syntax("expression ends too early".into())),
        }
    }
}

/// The names `text` refers to (none if it does not tokenize: [`eval`] reports that).
pub fn names_in(text: &str) -> Vec<String> {
    tokenize(text)
        .map(|t| t.into_iter().filter_map(|t| if let Token::Name(n) = t { Some(n) } else { None }).collect())
        .unwrap_or_default()
}

/// Evaluates `text` with `names` (timing name to cycles). The result must be at least zero.
pub fn eval(text: &str, names: &BTreeMap<String, u64>) -> Result<u64, ExprError> {
    let tokens = tokenize(text)?;
    if tokens.is_empty() {
        return Err(ExprError::Syntax("empty expression".into()));
    }
    let mut p = Parser { tokens, pos: 0, names, depth: 0 };
    let v = p.sum()?;
    if p.pos != p.tokens.len() {
        return Err(ExprError::Syntax(format!("unexpected {:?}", p.tokens[p.pos])));
    }
    u64::try_from(v).map_err(|_| ExprError::OutOfRange(v))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names() -> BTreeMap<String, u64> {
        [("nCL", 20), ("nBL", 2), ("nCWL", 10), ("nWR", 33)]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect()
    }

    #[test]
    fn evaluates() {
        let n = names();
        assert_eq!(eval("nCWL + nBL + nWR", &n), Ok(45));
        assert_eq!(eval("nCL + nBL + 2 - nCWL", &n), Ok(14));
        assert_eq!(eval("2 * (nBL + 1)", &n), Ok(6));
        assert_eq!(eval(" 7 ", &n), Ok(7));
        assert_eq!(eval("-(1) + 3", &n), Ok(2));
    }

    #[test]
    fn errors() {
        let n = names();
        assert_eq!(eval("nCL + nXYZ", &n), Err(ExprError::UnknownName("nXYZ".into())));
        assert_eq!(eval("nBL - nCL", &n), Err(ExprError::OutOfRange(-18)));
        assert!(matches!(eval("", &n), Err(ExprError::Syntax(_))));
        assert!(matches!(eval("nCL +", &n), Err(ExprError::Syntax(_))));
        assert!(matches!(eval("(nCL", &n), Err(ExprError::Syntax(_))));
        assert!(matches!(eval("nCL nBL", &n), Err(ExprError::Syntax(_))));
        assert!(matches!(eval("nCL / 2", &n), Err(ExprError::Syntax(_))));
        assert!(eval("99999999999999999999999999999999999999999", &n).is_err());
        assert!(eval("1000000000000 * 1000000000000 * 1000000000000", &n).is_err());
        let deep = format!("{}1{}", "(".repeat(10_000), ")".repeat(10_000));
        assert!(matches!(eval(&deep, &n), Err(ExprError::Syntax(_))));
        assert!(matches!(eval(&"-".repeat(10_000), &n), Err(ExprError::Syntax(_))));
    }
}
