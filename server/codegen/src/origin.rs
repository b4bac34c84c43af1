//! Where a derivative's code comes from: the one-line comment that heads
//! each statement's block in a generated adjoint (its reverse sweep) and
//! tangent, `! <file>:<line>: <primal statement>`, and its reading back
//! (the editor goes from a primal statement to its blocks and back).
//!
//! Contract: the generators know no files; the caller gives an
//! [`Origin`], which renders a span as `<file>:<line>: <text>` (the
//! host's document and 1-based line, the statement's text) or `None`
//! when it has no place. [`parse`] reads what [`comment`] wrote, and
//! nothing else: a file name without `:`, a line number, then `: `.

use dfort_ir::Span;

/// Renders a statement's place (`file:line: text`), or `None`.
pub type Origin<'a> = &'a dyn Fn(Span) -> Option<String>;

/// An [`Origin`] that knows no places: no comments are written.
pub fn nowhere(_: Span) -> Option<String> {
    None
}

/// The most characters of the primal statement a comment quotes.
const QUOTED: usize = 72;

/// The place text an origin renders: `file:line: statement`, the
/// statement on one line, cut at [`QUOTED`] characters.
pub fn place(file: &str, line: u32, statement: &str) -> String {
    let words: Vec<&str> = statement.split_whitespace().collect();
    let mut text = words.join(" ");
    if text.chars().count() > QUOTED {
        text = text.chars().take(QUOTED - 3).collect::<String>() + "...";
    }
    format!("{file}:{line}: {text}")
}

/// The comment line heading the block of the statement at `span`.
pub fn comment(origin: Origin, span: Span) -> Option<String> {
    origin(span).map(|p| format!("! {p}"))
}

/// What a comment line [`comment`] wrote names: the file (as written)
/// and the 1-based line.
pub fn parse(line: &str) -> Option<(&str, u32)> {
    let rest = line.trim_start().strip_prefix("! ")?;
    let (place, _) = rest.split_once(": ")?;
    let (file, number) = place.rsplit_once(':')?;
    if file.is_empty() || file.contains(char::is_whitespace) {
        return None;
    }
    let n: u32 = number.parse().ok()?;
    (n > 0).then_some((file, n))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_comment_reads_back_as_its_file_and_line() {
        let p = place("bratu.f", 12, "   f(1) =   -2.0*x(1)\n");
        assert_eq!(p, "bratu.f:12: f(1) = -2.0*x(1)");
        assert_eq!(parse(&format!("    ! {p}")), Some(("bratu.f", 12)));
    }

    #[test]
    fn a_long_statement_is_cut() {
        let p = place("a.f90", 3, &"x".repeat(200));
        assert!(p.ends_with("...") && p.len() < 90, "{p}");
        assert_eq!(parse(&format!("! {p}")), Some(("a.f90", 3)));
    }

    #[test]
    fn other_comments_are_not_origins() {
        for l in [
            "! forward sweep",
            "! reverse sweep",
            "! a.f90: no line",
            "! a.f90:0: zero",
            "! a b.f90:3: spaced",
            "x = 1 ! a.f90:3: x",
        ] {
            assert_eq!(parse(l), None, "{l}");
        }
    }
}
