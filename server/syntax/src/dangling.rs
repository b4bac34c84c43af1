//! Statements that end where an operand is still expected (`y = x +`,
//! `y = x + &` followed by `end`), found on the free-form parse text
//! before the grammar's error recovery spreads such a statement into the
//! statements after it (often as "the subroutine is never closed" at its
//! header). Each one becomes a syntax error over the statement's own lines.

/// One statement left without its last operand: the byte range of the
/// statement in the parse text and the message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dangling {
    pub start: usize,
    pub end: usize,
    pub message: String,
}

/// Operators after which an operand must follow. `/` is not among them
/// (DATA and COMMON lists end with it), nor `*` after PRINT or READ.
const BINARY: &[&str] = &[
    "**", "==", "/=", "<=", ">=", "+", "-", "*", "=", "<", ">", "(", ",",
];

/// The statements of `text[start..end]` (free-form parse text) that end
/// after an operator.
pub fn dangling_statements(text: &str, start: usize, end: usize) -> Vec<Dangling> {
    let region = text.get(start..end).unwrap_or("");
    let mut out = Vec::new();
    // The statement being read: its start, the end of its last code
    // and that code's last token, unless a line of it is not understood.
    let mut stmt: Option<Statement> = None;
    let mut offset = start;
    for raw in region.split_inclusive('\n') {
        let line_start = offset;
        offset += raw.len();
        let line = raw.trim_end_matches(['\n', '\r']);
        let Some(code) = code_of(line) else {
            // A line ending inside a character literal: give up on it.
            stmt = None;
            continue;
        };
        let trimmed = code.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let lead = code.len() - code.trim_start().len();
        let (body, continued) = match trimmed.strip_suffix('&') {
            Some(b) => (b.trim_end(), true),
            None => (trimmed, false),
        };
        let (body, body_at) = match body.strip_prefix('&') {
            Some(b) => (
                b.trim_start(),
                line_start + lead + body.len() - b.trim_start().len(),
            ),
            None => (body, line_start + lead),
        };
        if let Some(s) = &stmt {
            if s.open_operator().is_some() && starts_with_end(body) {
                // Continued into an END statement: the statement ends
                // before it, and the END starts a statement of its own.
                out.extend(s.report(true));
                stmt = None;
            }
        }
        stmt.get_or_insert_with(|| Statement::new(body_at))
            .add(body, body_at);
        if !continued {
            if let Some(s) = stmt.take() {
                if let Some(d) = s.report(false) {
                    out.push(d);
                }
            }
        }
    }
    out
}

struct Statement {
    start: usize,
    /// Where its last code ends.
    end: usize,
    /// Its first words, lower case (to tell `print *`).
    head: String,
    last: String,
}

impl Statement {
    fn new(start: usize) -> Statement {
        Statement {
            start,
            end: start,
            head: String::new(),
            last: String::new(),
        }
    }

    fn add(&mut self, body: &str, at: usize) {
        if body.is_empty() {
            return;
        }
        if self.head.len() < 16 {
            self.head.push_str(&body.to_ascii_lowercase());
            self.head.push(' ');
        }
        self.end = at + body.len();
        self.last = last_token(body).to_string();
    }

    fn open_operator(&self) -> Option<&str> {
        let t = self.last.as_str();
        let dotted = t.len() > 2 && t.starts_with('.') && t.ends_with('.') && {
            let w = t[1..t.len() - 1].to_ascii_lowercase();
            matches!(
                w.as_str(),
                "and" | "or" | "not" | "eqv" | "neqv" | "eq" | "ne" | "lt" | "le" | "gt" | "ge"
            )
        };
        if dotted {
            return Some(t);
        }
        if !BINARY.contains(&t) {
            return None;
        }
        let words: Vec<&str> = self.head.split_whitespace().collect();
        let io_star = t == "*"
            && matches!(
                words.first().copied(),
                Some("print" | "read" | "print*" | "read*")
            );
        // A statement label or a lone keyword line is not an expression.
        (!io_star && self.start < self.end).then_some(t)
    }

    fn report(&self, into_end: bool) -> Option<Dangling> {
        let op = self.open_operator()?;
        let what = if op == "(" {
            "the parenthesis `(` is never closed".to_string()
        } else {
            format!("an operand is missing after `{op}`")
        };
        let message = if into_end {
            format!(
                "syntax error: the statement is continued into the END statement after it; {what}"
            )
        } else {
            format!("syntax error: the statement ends here; {what}")
        };
        Some(Dangling {
            start: self.start,
            end: self.end,
            message,
        })
    }
}

/// The code of a free-form line without its `!` comment; `None` when the
/// line ends inside a character literal.
fn code_of(line: &str) -> Option<&str> {
    let mut quote: Option<u8> = None;
    for (i, b) in line.bytes().enumerate() {
        match quote {
            Some(q) if b == q => quote = None,
            Some(_) => {}
            None => match b {
                b'\'' | b'"' => quote = Some(b),
                b'!' => return Some(&line[..i]),
                _ => {}
            },
        }
    }
    quote.is_none().then_some(line)
}

/// The last token of a line's code: a dotted operator, a run of operator
/// characters, or the last word/number.
fn last_token(body: &str) -> &str {
    let b = body.as_bytes();
    let Some(&c) = b.last() else {
        return "";
    };
    if !c.is_ascii() {
        // Not an operator (and not a place to cut the text).
        return "";
    }
    if c == b'.' {
        // `.and.`: letters between two dots.
        let inner = &body[..body.len() - 1];
        let letters = inner.len()
            - inner
                .trim_end_matches(|x: char| x.is_ascii_alphabetic())
                .len();
        let open = inner.len() - letters;
        if letters > 0 && open > 0 && inner.as_bytes()[open - 1] == b'.' {
            return &body[open - 1..];
        }
        return &body[body.len() - 1..];
    }
    if c.is_ascii_alphanumeric() || c == b'_' || c == b'\'' || c == b'"' || c == b')' {
        return &body[body.len() - 1..];
    }
    // Operator characters (at most two: `**`, `==`, `<=`).
    let ops = body.len()
        - body
            .trim_end_matches(|x: char| "+-*/=<>(,".contains(x))
            .len();
    let n = ops.min(2);
    let tok = &body[body.len() - n..];
    if BINARY.contains(&tok) {
        tok
    } else {
        &body[body.len() - 1..]
    }
}

/// Whether a statement starts with the keyword END (`end`, `end do`,
/// `endif`, `end subroutine f`) rather than a name like `endval = 1`.
fn starts_with_end(body: &str) -> bool {
    let lower = body.to_ascii_lowercase();
    let Some(rest) = lower.strip_prefix("end") else {
        return false;
    };
    let word: String = rest
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    let after = rest[word.len()..].trim_start();
    let keyword = matches!(
        word.as_str(),
        "" | "if"
            | "do"
            | "subroutine"
            | "function"
            | "program"
            | "module"
            | "select"
            | "where"
            | "forall"
            | "associate"
            | "block"
            | "type"
            | "interface"
    );
    keyword && !after.starts_with('=') && !after.starts_with('(')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(text: &str) -> Vec<(String, String)> {
        dangling_statements(text, 0, text.len())
            .into_iter()
            .map(|d| (text[d.start..d.end].to_string(), d.message))
            .collect()
    }

    #[test]
    fn a_statement_ending_in_an_operator_is_reported_over_its_lines() {
        let text = "subroutine e(x, y)\n  real(8) :: x, y\n  y = x + &\n      2.0d0 *\n  y = 2*y\nend subroutine\n";
        let f = found(text);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].0, "y = x + &\n      2.0d0 *");
        assert_eq!(
            f[0].1,
            "syntax error: the statement ends here; an operand is missing after `*`"
        );
    }

    #[test]
    fn a_statement_continued_into_end_is_reported_before_it() {
        let text = "subroutine e(x, y)\n  real(8) :: x, y\n  y = x + &\n      2.0d0 * &\n\nend subroutine\n";
        let f = found(text);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].0, "y = x + &\n      2.0d0 *");
        assert!(f[0].1.contains("continued into the END statement"), "{f:?}");
        // Fixed form normalised: an empty continuation line, then END.
        let text = "      SUBROUTINE E(X, Y)\n      DOUBLE PRECISION X, Y\n      Y = X + &\n     & 2.0D0 * &\n     &\n      END\n";
        let f = found(text);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].0, "Y = X + &\n     & 2.0D0 *");
    }

    #[test]
    fn complete_statements_are_not_reported() {
        let text = "      x = '\u{1f300}' // \"\"\u{1f300}\n      DATA A /1.0, 2.0/\n      COMMON /B/\n      PRINT *\n      READ *\n      x = 'a + ' // \"b,\"\n      if (x .and. y) z = -1\n      x = y ! trailing +\n10    CONTINUE\n      endval = 1 +&\n  2\n#define X +\n      call f(a, &\n! comment (\n        b)\n      c = 'open &\n      &string ='\n      y = x .and.\n";
        let f = found(text);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].0, "y = x .and.");
    }
}
