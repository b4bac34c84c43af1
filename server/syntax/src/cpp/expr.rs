//! The integer expressions of `#if` and `#elif`, after `defined` and the
//! macros are replaced: literals (decimal, octal, hexadecimal, with `u`/`l`
//! suffixes, character constants), identifiers left over (0, as C says),
//! unary `+ - ! ~`, the binary operators of C with C's precedence, `?:`
//! and parentheses. Arithmetic is on i64 and wraps; division by zero is
//! an error, as gfortran's preprocessor says.

/// The value of `text`, or why it has none.
pub fn evaluate(text: &str) -> Result<i64, String> {
    let tokens = lex(text)?;
    if tokens.is_empty() {
        return Err("#if with no expression".into());
    }
    let mut p = Parser { tokens, at: 0 };
    let v = p.conditional()?;
    match p.tokens.get(p.at) {
        None => Ok(v),
        Some(t) => Err(format!("missing binary operator before `{}`", t.show())),
    }
}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Num(i64),
    Op(&'static str),
}

impl Tok {
    fn show(&self) -> String {
        match self {
            Tok::Num(n) => n.to_string(),
            Tok::Op(o) => o.to_string(),
        }
    }
}

/// Operators, longest first so that `<<` is not read as `<`.
const OPERATORS: [&str; 23] = [
    "<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "+", "-", "*", "/", "%", "<", ">", "&", "^",
    "|", "!", "~", "?", ":", "(",
];

fn lex(text: &str) -> Result<Vec<Tok>, String> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c.is_ascii_digit() {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push(Tok::Num(number(&text[start..i])?));
        } else if c.is_ascii_alphabetic() || c == b'_' {
            // An identifier no macro replaced: 0.
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push(Tok::Num(0));
        } else if c == b'\'' {
            let end = text[i + 1..]
                .find('\'')
                .ok_or("missing terminating ' character")?;
            let inner = &text[i + 1..i + 1 + end];
            let v = match inner.as_bytes() {
                [ch] => i64::from(*ch),
                [b'\\', b'n'] => 10,
                [b'\\', b't'] => 9,
                [b'\\', b'0'] => 0,
                [b'\\', ch] => i64::from(*ch),
                _ => return Err(format!("character constant '{inner}' is not one character")),
            };
            out.push(Tok::Num(v));
            i += end + 2;
        } else if c == b')' {
            out.push(Tok::Op(")"));
            i += 1;
        } else if let Some(op) = OPERATORS.iter().find(|o| text[i..].starts_with(**o)) {
            out.push(Tok::Op(op));
            i += op.len();
        } else {
            let ch = text[i..].chars().next().unwrap_or('?');
            return Err(format!(
                "token `{ch}` is not valid in preprocessor expressions"
            ));
        }
    }
    Ok(out)
}

/// A C integer literal with its suffixes dropped.
fn number(s: &str) -> Result<i64, String> {
    let digits = s.trim_end_matches(['u', 'U', 'l', 'L']);
    let parsed = if let Some(h) = digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"))
    {
        u64::from_str_radix(h, 16)
    } else if digits.len() > 1 && digits.starts_with('0') {
        u64::from_str_radix(&digits[1..], 8)
    } else {
        digits.parse::<u64>()
    };
    parsed
        .map(|v| v as i64)
        .map_err(|_| format!("invalid integer constant `{s}` in #if"))
}

struct Parser {
    tokens: Vec<Tok>,
    at: usize,
}

/// Binary operators by precedence level, loosest first (after `?:`).
const LEVELS: [&[&str]; 10] = [
    &["||"],
    &["&&"],
    &["|"],
    &["^"],
    &["&"],
    &["==", "!="],
    &["<", ">", "<=", ">="],
    &["<<", ">>"],
    &["+", "-"],
    &["*", "/", "%"],
];

impl Parser {
    fn peek_op(&self) -> Option<&'static str> {
        match self.tokens.get(self.at) {
            Some(Tok::Op(o)) => Some(o),
            _ => None,
        }
    }

    fn expect(&mut self, op: &str) -> Result<(), String> {
        if self.peek_op() == Some(op) {
            self.at += 1;
            Ok(())
        } else {
            Err(match self.tokens.get(self.at) {
                Some(t) => format!("expected `{op}` before `{}`", t.show()),
                None => format!("expected `{op}` at the end of the expression"),
            })
        }
    }

    fn conditional(&mut self) -> Result<i64, String> {
        let c = self.binary(0)?;
        if self.peek_op() != Some("?") {
            return Ok(c);
        }
        self.at += 1;
        let a = self.conditional()?;
        self.expect(":")?;
        let b = self.conditional()?;
        Ok(if c != 0 { a } else { b })
    }

    fn binary(&mut self, level: usize) -> Result<i64, String> {
        if level == LEVELS.len() {
            return self.unary();
        }
        let mut v = self.binary(level + 1)?;
        while let Some(op) = self.peek_op().filter(|o| LEVELS[level].contains(o)) {
            self.at += 1;
            let r = self.binary(level + 1)?;
            v = apply(op, v, r)?;
        }
        Ok(v)
    }

    fn unary(&mut self) -> Result<i64, String> {
        match self.tokens.get(self.at).cloned() {
            Some(Tok::Num(n)) => {
                self.at += 1;
                Ok(n)
            }
            Some(Tok::Op("(")) => {
                self.at += 1;
                let v = self.conditional()?;
                self.expect(")")?;
                Ok(v)
            }
            Some(Tok::Op(op @ ("+" | "-" | "!" | "~"))) => {
                self.at += 1;
                let v = self.unary()?;
                Ok(match op {
                    "+" => v,
                    "-" => v.wrapping_neg(),
                    "!" => i64::from(v == 0),
                    _ => !v,
                })
            }
            Some(t) => Err(format!("operator `{}` has no left operand", t.show())),
            None => Err("#if expression ends where an operand is expected".into()),
        }
    }
}

fn apply(op: &str, a: i64, b: i64) -> Result<i64, String> {
    Ok(match op {
        "||" => i64::from(a != 0 || b != 0),
        "&&" => i64::from(a != 0 && b != 0),
        "|" => a | b,
        "^" => a ^ b,
        "&" => a & b,
        "==" => i64::from(a == b),
        "!=" => i64::from(a != b),
        "<" => i64::from(a < b),
        ">" => i64::from(a > b),
        "<=" => i64::from(a <= b),
        ">=" => i64::from(a >= b),
        "<<" => a.wrapping_shl(b as u32),
        ">>" => a.wrapping_shr(b as u32),
        "+" => a.wrapping_add(b),
        "-" => a.wrapping_sub(b),
        "*" => a.wrapping_mul(b),
        "/" | "%" if b == 0 => return Err("division by zero in #if".into()),
        "/" => a.wrapping_div(b),
        _ => a.wrapping_rem(b),
    })
}

#[cfg(test)]
mod tests {
    use super::evaluate;

    #[test]
    fn c_precedence_and_literals() {
        assert_eq!(evaluate("1 + 2 * 3"), Ok(7));
        assert_eq!(evaluate("(1 + 2) * 3"), Ok(9));
        assert_eq!(evaluate("0x10 + 010 + 10L"), Ok(34));
        assert_eq!(evaluate("1 || 0 && 0"), Ok(1));
        assert_eq!(evaluate("!0 && ~0 == -1"), Ok(1));
        assert_eq!(evaluate("8 == 8 ? 2 : 3"), Ok(2));
        assert_eq!(evaluate("1 << 4 >> 2"), Ok(4));
        assert_eq!(evaluate("UNDEFINED_NAME == 0"), Ok(1));
        assert_eq!(evaluate("-7 / 2"), Ok(-3));
        assert_eq!(evaluate("'A' == 65"), Ok(1));
    }

    #[test]
    fn errors_say_what_is_wrong() {
        assert!(evaluate("1 / 0").unwrap_err().contains("division by zero"));
        assert!(evaluate("").is_err());
        assert!(evaluate("(1").is_err());
        assert!(evaluate("1 2")
            .unwrap_err()
            .contains("missing binary operator"));
        assert!(evaluate("1 +").is_err());
        assert!(evaluate("1 @ 2").is_err());
    }
}
