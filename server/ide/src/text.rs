//! Small text helpers the features share: the name under the cursor and
//! the text of a line.

use dfort_syntax::chunks::{line_part_at, LinePart};
use dfort_syntax::line_index::LineIndex;
use dfort_syntax::TextRange;

/// Whether `b` may be part of a Fortran name.
pub(crate) fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// The name `s` ends with (blanks after it ignored), lower case; empty
/// when `s` does not end with a name.
pub(crate) fn trailing_name(s: &str) -> String {
    let s = s.trim_end_matches([' ', '\t']);
    let start = s
        .bytes()
        .rposition(|b| !is_name_byte(b))
        .map_or(0, |p| p + 1);
    s[start..].to_ascii_lowercase()
}

/// Of `s`, which starts with `(`: the text after the parenthesis that
/// closes it on the same line; `None` when it stays open there.
pub(crate) fn after_parenthesis(s: &str) -> Option<&str> {
    let mut depth = 0;
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(&s[i + 1..]);
                }
            }
            '\n' => return None,
            _ => {}
        }
    }
    None
}

/// Whether a statement's beginning `before` (lower case, trimmed) is a
/// logical IF's head, `if (condition)`, and nothing after it.
pub(crate) fn after_if_condition(before: &str) -> bool {
    before
        .strip_prefix("if")
        .map(str::trim_start)
        .filter(|r| r.starts_with('('))
        .and_then(after_parenthesis)
        .is_some_and(|r| r.trim().is_empty())
}

/// The range of the run of name characters at (or just before) `offset`.
pub(crate) fn name_span(text: &str, offset: u32) -> Option<TextRange> {
    let bytes = text.as_bytes();
    let mut at = (offset as usize).min(bytes.len());
    if at == bytes.len() || !is_name_byte(bytes[at]) {
        // The cursor just after a name still names it.
        at = at.checked_sub(1).filter(|&a| is_name_byte(bytes[a]))?;
    }
    let start = bytes[..at]
        .iter()
        .rposition(|&c| !is_name_byte(c))
        .map_or(0, |p| p + 1);
    let end = bytes[at..]
        .iter()
        .position(|&c| !is_name_byte(c))
        .map_or(bytes.len(), |p| at + p);
    Some(TextRange::new(start as u32, end as u32))
}

/// The Fortran name at (or just before) `offset`, lower case, with its range.
pub fn word_at(text: &str, offset: u32) -> Option<(TextRange, String)> {
    let range = name_span(text, offset)?;
    let word = &text[range.start as usize..range.end as usize];
    if !word.as_bytes()[0].is_ascii_alphabetic() {
        return None;
    }
    Some((range, word.to_ascii_lowercase()))
}

/// Whether `offset` lies in code: not in a comment (a `!` comment, or a
/// fixed-form comment line) and not in a character literal. Role
/// directives (`!$ad independent(x)`, `c$openad DEPENDENT(y)`) count as
/// code: they name variables.
pub fn in_code(text: &str, lines: &LineIndex, fixed: bool, offset: u32) -> bool {
    let line = line_text(text, lines, offset);
    let start = lines
        .line_range(lines.line_of(offset))
        .map_or(0, |r| r.start);
    let col = (offset.saturating_sub(start) as usize).min(line.len());
    let names_roles = |comment: &str, fixed: bool| {
        dfort_syntax::ad_directives::parse(comment, fixed)
            .is_some_and(|d| d.reading() == dfort_syntax::ad_directives::Reading::Role)
    };
    if fixed && line.starts_with(['c', 'C', '*', 'd', 'D']) {
        return names_roles(line, true);
    }
    // Column 6 of fixed form marks a continuation, whatever it holds.
    let skip = if fixed && col > 5 {
        line.get(..6).map_or(0, |_| 6)
    } else {
        0
    };
    match line_part_at(&line[skip..], col - skip) {
        LinePart::Code => true,
        LinePart::Literal => false,
        LinePart::Comment(i) => names_roles(&line[skip + i..], false),
    }
}

/// The text of the line holding `offset`, without its terminator.
pub fn line_text<'a>(text: &'a str, lines: &LineIndex, offset: u32) -> &'a str {
    lines
        .line_range(lines.line_of(offset))
        .and_then(|r| text.get(r.start as usize..r.end as usize))
        .unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn word_at_finds_names_and_rejects_numbers_and_blanks() {
        let t = "  x1 = 2.5*y_b\n";
        assert_eq!(word_at(t, 2).map(|w| w.1), Some("x1".into()));
        assert_eq!(word_at(t, 4).map(|w| w.1), Some("x1".into()));
        assert_eq!(word_at(t, 12).map(|w| w.1), Some("y_b".into()));
        assert_eq!(word_at(t, 7), None);
        assert_eq!(word_at(t, 0), None);
        assert_eq!(word_at(t, 999), None);
        assert_eq!(word_at("", 0), None);
    }

    #[test]
    fn in_code_excludes_comments_and_strings_but_not_directives() {
        let t = "x = 1 ! set x\nprint *, 'x'\n!$ad independent(x)\nc x\n";
        let lines = LineIndex::new(t);
        assert!(in_code(t, &lines, false, 0));
        assert!(!in_code(t, &lines, false, 12));
        assert!(!in_code(
            t,
            &lines,
            false,
            t.find("'x'").unwrap() as u32 + 1
        ));
        assert!(in_code(t, &lines, false, t.find("(x)").unwrap() as u32 + 1));
        let c = t.rfind("c x").unwrap() as u32;
        assert!(!in_code(t, &lines, true, c + 2));
        assert!(in_code(t, &lines, false, c + 2));
    }
}
