//! Small text helpers the features share: the name under the cursor and
//! the text of a line.

use dfort_syntax::line_index::LineIndex;
use dfort_syntax::TextRange;

fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// The Fortran name at (or just before) `offset`, lower case, with its range.
pub fn word_at(text: &str, offset: u32) -> Option<(TextRange, String)> {
    let bytes = text.as_bytes();
    let mut at = (offset as usize).min(bytes.len());
    if at == bytes.len() || !is_name_byte(bytes[at]) {
        // The cursor just after a name still names it.
        if at > 0 && is_name_byte(bytes[at - 1]) {
            at -= 1;
        } else {
            return None;
        }
    }
    let mut start = at;
    while start > 0 && is_name_byte(bytes[start - 1]) {
        start -= 1;
    }
    let mut end = at;
    while end < bytes.len() && is_name_byte(bytes[end]) {
        end += 1;
    }
    let word = &text[start..end];
    if !word.as_bytes()[0].is_ascii_alphabetic() {
        return None;
    }
    Some((
        TextRange::new(start as u32, end as u32),
        word.to_ascii_lowercase(),
    ))
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
}
