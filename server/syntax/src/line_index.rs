//! Byte offsets to lines and columns and back.
//!
//! A [`LineIndex`] stores where each line starts and where its content ends
//! (before the `\n` or `\r\n` terminator). Columns come in three units:
//!
//! * UTF-8 bytes ([`LineIndex::line_col`], [`LineIndex::offset`]), needing
//!   only the index;
//! * UTF-16 code units ([`LineIndex::line_col_utf16`],
//!   [`LineIndex::offset_utf16`]), the LSP default, scanning one line of the
//!   text;
//! * characters ([`LineIndex::char_col`]), for `file:line:col` messages.
//!
//! Lines end at `\n`; a `\r` directly before a `\n` belongs to the
//! terminator, so the end of a line's content (its largest column) excludes
//! it. A lone `\r` is ordinary content. The offset between the `\r` and the
//! `\n` of a CRLF pair is not a column of its own: it converts to the end of
//! the line's content.
//!
//! Nothing here panics: offsets past the end clamp to the end, lines that do
//! not exist give `None`, and a text that does not match the index (the
//! methods taking `text` expect the text the index was built from) gives
//! clamped, meaningless but safe results.

use crate::diagnostic::TextRange;

/// A 0-based line and column.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LineCol {
    pub line: u32,
    pub col: u32,
}

/// Line starts and content ends of one text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LineIndex {
    /// Byte offset of each line's first byte; `starts[0] == 0`.
    starts: Vec<u32>,
    /// Byte offset of the end of each line's content (at its `\n`, or at the
    /// `\r` of its `\r\n`, or at the end of the text for the last line).
    ends: Vec<u32>,
    /// Length of the text in bytes.
    len: u32,
}

/// `usize` to `u32`, saturating (texts over 4 GiB are not supported but must
/// not panic).
fn to_u32(x: usize) -> u32 {
    u32::try_from(x).unwrap_or(u32::MAX)
}

/// The largest char boundary of `text` at or before `offset` (clamped to the
/// text's length).
fn floor_boundary(text: &str, offset: usize) -> usize {
    let mut o = offset.min(text.len());
    while o > 0 && !text.is_char_boundary(o) {
        o -= 1;
    }
    o
}

impl LineIndex {
    pub fn new(text: &str) -> LineIndex {
        let bytes = text.as_bytes();
        // A rough guess avoids most reallocations for source code.
        let guess = bytes.len() / 40 + 1;
        let mut starts = Vec::with_capacity(guess);
        let mut ends = Vec::with_capacity(guess);
        starts.push(0);
        // memchr: the host indexes a document's lines at every edit.
        for i in memchr::memchr_iter(b'\n', bytes) {
            let line_start = starts.last().copied().unwrap_or(0) as usize;
            let end = if i > line_start && bytes[i - 1] == b'\r' {
                i - 1
            } else {
                i
            };
            ends.push(to_u32(end));
            starts.push(to_u32(i + 1));
        }
        ends.push(to_u32(bytes.len()));
        LineIndex {
            starts,
            ends,
            len: to_u32(bytes.len()),
        }
    }

    /// Number of lines: one more than the number of `\n`s.
    pub fn line_count(&self) -> u32 {
        to_u32(self.starts.len())
    }

    /// Length in bytes of the indexed text.
    pub fn text_len(&self) -> u32 {
        self.len
    }

    /// Byte offset of the first byte of `line`.
    pub fn line_start(&self, line: u32) -> Option<u32> {
        self.starts.get(line as usize).copied()
    }

    /// The content of `line`, without its `\n` or `\r\n` terminator.
    pub fn line_range(&self, line: u32) -> Option<TextRange> {
        let i = line as usize;
        let start = *self.starts.get(i)?;
        let end = *self.ends.get(i)?;
        Some(TextRange::new(start, end))
    }

    /// The (0-based) line holding `offset`; offsets past the end give the
    /// last line. The terminator belongs to the line it ends.
    pub fn line_of(&self, offset: u32) -> u32 {
        let o = offset.min(self.len);
        let i = self.starts.partition_point(|&s| s <= o).saturating_sub(1);
        to_u32(i)
    }

    /// Start and content end of the line holding (clamped) `offset`.
    fn bounds(&self, line: u32) -> (u32, u32) {
        let i = line as usize;
        let start = self.starts.get(i).copied().unwrap_or(self.len);
        let end = self.ends.get(i).copied().unwrap_or(self.len);
        (start, end.max(start))
    }

    /// Line and UTF-8 byte column of `offset`. Offsets past the end clamp to
    /// the end; an offset inside a line terminator gives the end of the line.
    pub fn line_col(&self, offset: u32) -> LineCol {
        let o = offset.min(self.len);
        let line = self.line_of(o);
        let (start, end) = self.bounds(line);
        LineCol {
            line,
            col: o.min(end) - start,
        }
    }

    /// Byte offset of a line and UTF-8 byte column; `None` if the line does
    /// not exist, a column past the end of the line clamps to the line end.
    pub fn offset(&self, lc: LineCol) -> Option<u32> {
        if lc.line as usize >= self.starts.len() {
            return None;
        }
        let (start, end) = self.bounds(lc.line);
        Some(start + lc.col.min(end - start))
    }

    /// The content of `line` in `text` from the line start to `offset`
    /// (clamped to the content end and rounded down to a char boundary).
    fn prefix<'t>(&self, text: &'t str, line: u32, offset: u32) -> &'t str {
        let (start, end) = self.bounds(line);
        let start = floor_boundary(text, start as usize);
        let upto = floor_boundary(text, offset.min(end) as usize);
        text.get(start..upto.max(start)).unwrap_or("")
    }

    /// Line and UTF-16 column of `offset` in `text` (the text the index was
    /// built from). An offset inside a multi-byte char rounds down to the
    /// char's start; offsets past the end clamp to the end.
    pub fn line_col_utf16(&self, text: &str, offset: u32) -> LineCol {
        let o = offset.min(self.len);
        let line = self.line_of(o);
        let prefix = self.prefix(text, line, o);
        let col = if prefix.is_ascii() {
            prefix.len()
        } else {
            prefix.chars().map(char::len_utf16).sum()
        };
        LineCol {
            line,
            col: to_u32(col),
        }
    }

    /// Byte offset of a line and UTF-16 column in `text`; `None` if the line
    /// does not exist. A column past the end of the line clamps to the line
    /// end; a column in the middle of a surrogate pair rounds down to the
    /// start of that char.
    pub fn offset_utf16(&self, text: &str, lc: LineCol) -> Option<u32> {
        if lc.line as usize >= self.starts.len() {
            return None;
        }
        let (start, end) = self.bounds(lc.line);
        let s = floor_boundary(text, start as usize);
        let e = floor_boundary(text, end as usize).max(s);
        let content = text.get(s..e).unwrap_or("");
        let want = lc.col as usize;
        if content.is_ascii() {
            return Some(to_u32(s + want.min(content.len())));
        }
        let mut units = 0usize;
        let mut bytes = 0usize;
        for ch in content.chars() {
            let w = ch.len_utf16();
            if units + w > want {
                break;
            }
            units += w;
            bytes += ch.len_utf8();
        }
        Some(to_u32(s + bytes))
    }

    /// Column of `offset` counted in chars (0-based; add 1 for display).
    /// Offsets are clamped and rounded down as in [`Self::line_col_utf16`].
    pub fn char_col(&self, text: &str, offset: u32) -> u32 {
        let o = offset.min(self.len);
        let line = self.line_of(o);
        let prefix = self.prefix(text, line, o);
        to_u32(if prefix.is_ascii() {
            prefix.len()
        } else {
            prefix.chars().count()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn lc(line: u32, col: u32) -> LineCol {
        LineCol { line, col }
    }

    #[test]
    fn line_counts() {
        assert_eq!(LineIndex::new("").line_count(), 1);
        assert_eq!(LineIndex::new("abc").line_count(), 1);
        assert_eq!(LineIndex::new("a\n").line_count(), 2);
        assert_eq!(LineIndex::new("a\r\nb\r\n").line_count(), 3);
        assert_eq!(LineIndex::new("\n\n\n").line_count(), 4);
    }

    #[test]
    fn lf_lines() {
        let text = "ab\ncde\n\nf";
        let idx = LineIndex::new(text);
        assert_eq!(idx.line_start(0), Some(0));
        assert_eq!(idx.line_start(1), Some(3));
        assert_eq!(idx.line_start(2), Some(7));
        assert_eq!(idx.line_start(3), Some(8));
        assert_eq!(idx.line_start(4), None);
        assert_eq!(idx.line_range(1), Some(TextRange::new(3, 6)));
        assert_eq!(idx.line_range(2), Some(TextRange::new(7, 7)));
        assert_eq!(idx.line_range(3), Some(TextRange::new(8, 9)));
        assert_eq!(idx.line_range(4), None);
        assert_eq!(idx.line_col(0), lc(0, 0));
        assert_eq!(idx.line_col(2), lc(0, 2));
        assert_eq!(idx.line_col(3), lc(1, 0));
        assert_eq!(idx.line_col(6), lc(1, 3));
        assert_eq!(idx.line_col(7), lc(2, 0));
        assert_eq!(idx.line_col(9), lc(3, 1));
        assert_eq!(idx.line_col(1000), lc(3, 1));
        assert_eq!(idx.offset(lc(1, 2)), Some(5));
        assert_eq!(idx.offset(lc(1, 99)), Some(6));
        assert_eq!(idx.offset(lc(3, 1)), Some(9));
        assert_eq!(idx.offset(lc(4, 0)), None);
    }

    #[test]
    fn crlf_lines() {
        let text = "ab\r\ncd\r\n";
        let idx = LineIndex::new(text);
        assert_eq!(idx.line_count(), 3);
        assert_eq!(idx.line_range(0), Some(TextRange::new(0, 2)));
        assert_eq!(idx.line_range(1), Some(TextRange::new(4, 6)));
        assert_eq!(idx.line_range(2), Some(TextRange::new(8, 8)));
        // The end of the line excludes '\r'.
        assert_eq!(idx.line_col(2), lc(0, 2));
        // Between '\r' and '\n': the end of the line.
        assert_eq!(idx.line_col(3), lc(0, 2));
        assert_eq!(idx.line_col(4), lc(1, 0));
        assert_eq!(idx.offset(lc(0, 5)), Some(2));
        assert_eq!(idx.offset_utf16(text, lc(1, 7)), Some(6));
        assert_eq!(idx.line_col_utf16(text, 3), lc(0, 2));
        assert_eq!(idx.char_col(text, 7), 2);
        // A lone '\r' is content.
        let idx = LineIndex::new("a\rb\n\r");
        assert_eq!(idx.line_range(0), Some(TextRange::new(0, 3)));
        assert_eq!(idx.line_range(1), Some(TextRange::new(4, 5)));
        // "\r\r\n": only the last '\r' is part of the terminator.
        let idx = LineIndex::new("\r\r\nx");
        assert_eq!(idx.line_range(0), Some(TextRange::new(0, 1)));
    }

    #[test]
    fn utf16_and_chars() {
        // 'é' is 2 bytes / 1 unit, '😀' is 4 bytes / 2 units, '中' 3 bytes / 1 unit.
        let text = "x = 'é😀中' ! ok\nß";
        let idx = LineIndex::new(text);
        let emoji = text.find('😀').unwrap() as u32; // 7
        assert_eq!(emoji, 7);
        assert_eq!(idx.line_col(emoji), lc(0, 7));
        assert_eq!(idx.line_col_utf16(text, emoji), lc(0, 6));
        assert_eq!(idx.char_col(text, emoji), 6);
        let zhong = emoji + 4;
        assert_eq!(idx.line_col_utf16(text, zhong), lc(0, 8));
        assert_eq!(idx.char_col(text, zhong), 7);
        // Inside the emoji: round down to its start.
        assert_eq!(idx.line_col_utf16(text, emoji + 2), lc(0, 6));
        assert_eq!(idx.char_col(text, emoji + 3), 6);
        // Inverse; a column inside the surrogate pair rounds down.
        assert_eq!(idx.offset_utf16(text, lc(0, 6)), Some(emoji));
        assert_eq!(idx.offset_utf16(text, lc(0, 7)), Some(emoji));
        assert_eq!(idx.offset_utf16(text, lc(0, 8)), Some(zhong));
        // Past the end of the line: the line end.
        let nl = text.find('\n').unwrap() as u32;
        assert_eq!(idx.offset_utf16(text, lc(0, 500)), Some(nl));
        assert_eq!(idx.offset_utf16(text, lc(1, 1)), Some(text.len() as u32));
        assert_eq!(idx.offset_utf16(text, lc(2, 0)), None);
        assert_eq!(idx.line_col_utf16(text, 10_000), lc(1, 1));
        assert_eq!(idx.char_col(text, 10_000), 1);
    }

    #[test]
    fn mismatched_text_does_not_panic() {
        let idx = LineIndex::new("aaaa\nbbbbbbbbbb\nc");
        for text in ["", "é", "😀😀😀", "a\nb"] {
            for o in 0..20 {
                let _ = idx.line_col_utf16(text, o);
                let _ = idx.char_col(text, o);
            }
            for line in 0..4 {
                for col in 0..12 {
                    let _ = idx.offset_utf16(text, lc(line, col));
                }
            }
        }
        let _ = idx.offset(lc(u32::MAX, u32::MAX));
        let _ = idx.line_col(u32::MAX);
    }

    /// Offsets that are positions: char boundaries, except the one between
    /// the '\r' and '\n' of a CRLF pair.
    fn positions(text: &str) -> Vec<u32> {
        let b = text.as_bytes();
        (0..=text.len())
            .filter(|&o| text.is_char_boundary(o))
            .filter(|&o| !(o > 0 && o < b.len() && b[o - 1] == b'\r' && b[o] == b'\n'))
            .map(|o| o as u32)
            .collect()
    }

    fn text_strategy() -> impl Strategy<Value = String> {
        let piece = prop_oneof![
            Just("a".to_string()),
            Just(" ".to_string()),
            Just("\n".to_string()),
            Just("\r\n".to_string()),
            Just("\r".to_string()),
            Just("é".to_string()),
            Just("中".to_string()),
            Just("😀".to_string()),
            any::<char>().prop_map(|c| c.to_string()),
        ];
        prop_oneof![
            prop::collection::vec(piece, 0..40).prop_map(|v| v.concat()),
            any::<String>(),
        ]
    }

    proptest! {
        #[test]
        fn utf8_round_trip(text in text_strategy()) {
            let idx = LineIndex::new(&text);
            prop_assert_eq!(idx.line_count() as usize, text.matches('\n').count() + 1);
            for o in positions(&text) {
                let lc = idx.line_col(o);
                prop_assert_eq!(idx.offset(lc), Some(o));
                let lc16 = idx.line_col_utf16(&text, o);
                prop_assert_eq!(lc16.line, lc.line);
                prop_assert_eq!(idx.offset_utf16(&text, lc16), Some(o));
                let start = idx.line_start(lc.line).unwrap() as usize;
                prop_assert_eq!(
                    idx.char_col(&text, o) as usize,
                    text[start..o as usize].chars().count()
                );
                prop_assert_eq!(
                    lc16.col as usize,
                    text[start..o as usize].encode_utf16().count()
                );
            }
        }

        #[test]
        fn out_of_range_never_panics(
            text in text_strategy(),
            offsets in prop::collection::vec(any::<u32>(), 0..8),
            line in 0u32..50,
            col in any::<u32>(),
        ) {
            let idx = LineIndex::new(&text);
            let len = text.len() as u32;
            for o in offsets.into_iter().chain([len, len + 1, u32::MAX]) {
                let lc = idx.line_col(o);
                prop_assert!(lc.line < idx.line_count());
                let back = idx.offset(lc);
                prop_assert!(back.is_some_and(|b| b <= len));
                let lc16 = idx.line_col_utf16(&text, o);
                let back = idx.offset_utf16(&text, lc16);
                prop_assert!(back.is_some_and(|b| b <= len && text.is_char_boundary(b as usize)));
                let _ = idx.char_col(&text, o);
            }
            let l = LineCol { line, col };
            prop_assert_eq!(idx.offset(l).is_some(), line < idx.line_count());
            if let Some(o) = idx.offset_utf16(&text, l) {
                prop_assert!(o <= len && text.is_char_boundary(o as usize));
                // The result stays on the requested line.
                prop_assert_eq!(idx.line_col(o).line, line);
            }
            if let Some(o) = idx.offset(l) {
                prop_assert_eq!(idx.line_col(o).line, line);
            }
        }
    }
}
