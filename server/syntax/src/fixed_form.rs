//! Fixed-form Fortran to equivalent free-form text, line for line.
//!
//! The grammar parses free-form source only, so a fixed-form file is first
//! rewritten with a *line-preserving* normalisation: the output has the same
//! lines, with the same terminators (`\n` or `\r\n`), and an [`OffsetMap`]
//! converts byte offsets both ways so that diagnostics, hovers and the like
//! land on the right line and column of the text the user sees.
//!
//! Per line:
//!
//! * `C`, `c`, `*`, `D`, `d` (debug lines) or `!` in column 1 make a comment
//!   line; the first char becomes `!`. A line whose first non-blank char is
//!   `!` is a comment too, unless that `!` is in column 6 (then it marks a
//!   continuation). Comment lines are never truncated.
//! * Blank lines and lines starting with `#` (preprocessor directives, common
//!   in `.F` files) are kept as they are.
//! * Otherwise the line is a code line: columns 1-5 are the label field, kept
//!   as is. A char other than blank or `0` in column 6 makes a continuation
//!   line: it becomes `&` (in free form the statement then continues right
//!   after it, also inside character literals), and the previous code line
//!   (skipping comment and blank lines) gets one `&` appended to its code:
//!   at the end of its kept text, or before its inline `!` comment. A `0` in
//!   column 6 becomes a blank (so that it cannot join a label).
//! * Tab form: a TAB in columns 1-6 ends the label field; a digit 1-9 right
//!   after it makes a continuation line (the digit becomes `&`), otherwise
//!   the statement starts after the TAB. Either way the statement text is
//!   counted from column 7.
//! * Text past the line-length limit (counted in chars) is removed, with a
//!   `fixed-line-length` warning when it is not all whitespace.
//! * In the statement text of a code line (outside character literals and
//!   the inline comment): Hollerith constants of DATA and FORMAT statements
//!   become character literals of the same length (`4HABCD` → `'ABCD'`),
//!   blanks inside real literals and dotted operators move to the token's
//!   end, and on the first line of a statement a blank is inserted into
//!   glued keywords the grammar cannot read (`DO10I=1,N` → `DO 10 I=1,N`,
//!   `GOTO10`, `CALLFOO`, `IMPLICITNONE`); see [`crate::fixed_form_words`].
//!
//! The normalisation never fails: it works on half-typed editor text.

use crate::diagnostic::{Diagnostic, TextRange};
use crate::fixed_form_words::{keyword_blanks, rewrite_holleriths, HollerithState};
use crate::rules::FIXED_LINE_LENGTH;

/// The result of [`normalize_fixed`].
#[derive(Clone, Debug)]
pub struct Normalized {
    /// Free-form text with the same lines and terminators as the input.
    pub text: String,
    /// Offsets between `text` and the original.
    pub map: OffsetMap,
    /// Warnings about the original text (ranges in original offsets).
    pub diagnostics: Vec<Diagnostic>,
}

/// One change of length: original bytes `[orig, orig + orig_len)` became
/// normalised bytes `[norm, norm + norm_len)`. Offsets inside either side map
/// to the start of the other side.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Edit {
    orig: u32,
    orig_len: u32,
    norm: u32,
    norm_len: u32,
    /// The original bytes are gone (truncated text), rather than replaced by
    /// an equivalent (a multi-byte continuation mark replaced by `&`).
    removed: bool,
}

/// Maps byte offsets between an original text and its normalised text.
///
/// Only changes of length are stored (an inserted `&` or blank, a truncated
/// line end, a multi-byte continuation mark replaced by `&`), sorted by
/// offset in both texts, so lookups are a binary search and a free-form or
/// unchanged file costs nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OffsetMap {
    edits: Vec<Edit>,
    orig_len: u32,
    norm_len: u32,
}

impl OffsetMap {
    /// The map of a text to itself (free-form files). Offsets are not
    /// clamped since the length is unknown.
    pub fn identity() -> OffsetMap {
        OffsetMap {
            edits: Vec::new(),
            orig_len: u32::MAX,
            norm_len: u32::MAX,
        }
    }

    /// True when both directions map every offset to itself (up to clamping
    /// to the text length): free-form files, and fixed-form files whose
    /// normalisation changed no line's length.
    pub fn is_identity(&self) -> bool {
        self.edits.is_empty()
    }

    /// The original offset of a normalised offset. An offset on an inserted
    /// `&` maps to where it was inserted; offsets past the end clamp to the
    /// end.
    pub fn to_original(&self, normalized_offset: u32) -> u32 {
        let n = normalized_offset.min(self.norm_len);
        let i = self.edits.partition_point(|e| e.norm <= n);
        let Some(e) = i.checked_sub(1).and_then(|i| self.edits.get(i)) else {
            return n.min(self.orig_len);
        };
        let after = e.norm.saturating_add(e.norm_len);
        if n < after {
            e.orig
        } else {
            let o = e.orig.saturating_add(e.orig_len).saturating_add(n - after);
            o.min(self.orig_len)
        }
    }

    /// The normalised offset of an original offset. An offset in truncated
    /// (removed) text maps to the end of that line's kept text; the position
    /// where a `&` was inserted maps to just after the `&` (onto the char
    /// that was there), except at the start of truncated text.
    pub fn to_normalized(&self, original_offset: u32) -> u32 {
        let o = original_offset.min(self.orig_len);
        let i = self.edits.partition_point(|e| e.orig <= o);
        let Some(e) = i.checked_sub(1).and_then(|i| self.edits.get(i)) else {
            return o.min(self.norm_len);
        };
        let after = e.orig.saturating_add(e.orig_len);
        if o < after {
            e.norm
        } else {
            let n = e.norm.saturating_add(e.norm_len).saturating_add(o - after);
            n.min(self.norm_len)
        }
    }

    /// A normalised range in original offsets.
    pub fn range_to_original(&self, r: TextRange) -> TextRange {
        if self.is_identity() {
            return r;
        }
        TextRange::new(self.to_original(r.start), self.to_original(r.end))
    }

    /// An original range in normalised offsets.
    pub fn range_to_normalized(&self, r: TextRange) -> TextRange {
        if self.is_identity() {
            return r;
        }
        TextRange::new(self.to_normalized(r.start), self.to_normalized(r.end))
    }

    /// Whether the byte at `original_offset` was removed (text past the
    /// line-length limit of a code line).
    pub fn is_removed(&self, original_offset: u32) -> bool {
        let i = self.edits.partition_point(|e| e.orig <= original_offset);
        match i.checked_sub(1).and_then(|i| self.edits.get(i)) {
            Some(e) => e.removed && original_offset - e.orig < e.orig_len,
            None => false,
        }
    }
}

/// `usize` to `u32`, saturating (texts over 4 GiB are not supported but must
/// not panic).
fn to_u32(x: usize) -> u32 {
    u32::try_from(x).unwrap_or(u32::MAX)
}

/// Quote state at a point of a statement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Quote {
    None,
    Single,
    Double,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// Empty or whitespace only: kept as is.
    Blank,
    /// Comment line (possibly with its first char replaced by `!`).
    Comment,
    /// `#` directive: kept as is.
    Preprocessor,
    /// Code line whose kept text is not blank.
    Code,
    /// Code-like line whose kept text is blank (text only past the limit):
    /// truncated, but otherwise like a blank line.
    BlankCode,
}

/// One analysed line, waiting to be written out (a later continuation line
/// may still ask for a `&` on it). Offsets relative to `start` unless noted.
#[derive(Clone, Copy, Debug)]
struct LineInfo {
    /// Absolute offsets: line start, content end, end of the terminator.
    start: usize,
    content_end: usize,
    term_end: usize,
    kind: Kind,
    /// A char replaced by an ASCII char: (position, byte length, new char).
    replace: Option<(usize, usize, u8)>,
    /// End of the text that is kept (code lines; the content end otherwise).
    kept_end: usize,
    /// Where a `&` goes if the next code line continues this one.
    insert_at: usize,
    needs_amp: bool,
    /// The line starts inside a character literal a previous line opened.
    in_string: bool,
    /// Where the statement text starts (column 7, or after a label-field
    /// TAB and its continuation digit).
    stmt_start: usize,
    /// The line continues the statement of the previous code line.
    continuation: bool,
}

/// The message of a `fixed-line-length` warning.
fn warning_message(limit: usize) -> String {
    if limit < 132 {
        format!(
            "text past column {limit} is ignored (fixed form); use a longer fixed-form \
             line length (e.g. 132) if it belongs to the statement"
        )
    } else {
        format!(
            "text past column {limit} is ignored (fixed form); use a longer fixed-form \
             line length (or none) if it belongs to the statement"
        )
    }
}

/// Classifies and analyses one line. `content` excludes the terminator;
/// `lf_terminated` says whether the terminator is a bare `\n`. `quote` is the
/// quote state at the end of the previous code line and is updated when this
/// line is a code line. Returns the info and whether the line continues the
/// previous code line.
fn analyse_line(
    content: &str,
    lf_terminated: bool,
    line_length: Option<usize>,
    quote: &mut Quote,
) -> (LineInfo, bool) {
    let len = content.len();
    let mut info = LineInfo {
        start: 0,
        content_end: 0,
        term_end: 0,
        kind: Kind::Blank,
        replace: None,
        kept_end: len,
        insert_at: len,
        needs_amp: false,
        in_string: false,
        stmt_start: len,
        continuation: false,
    };
    let first = content.chars().next();
    match first {
        None => return (info, false),
        Some('C' | 'c' | '*' | 'D' | 'd') => {
            info.kind = Kind::Comment;
            info.replace = Some((0, 1, b'!'));
            return (info, false);
        }
        Some('!') => {
            info.kind = Kind::Comment;
            return (info, false);
        }
        Some('#') => {
            info.kind = Kind::Preprocessor;
            return (info, false);
        }
        Some(_) => {}
    }
    let Some(first_nonblank) = content.find(|c: char| !c.is_whitespace()) else {
        return (info, false);
    };
    if content[first_nonblank..].starts_with('!')
        && !(first_nonblank == 5 && content.as_bytes()[..5] == *b"     ")
    {
        info.kind = Kind::Comment;
        return (info, false);
    }

    // Label field and column 6.
    let mut tab: Option<usize> = None;
    let mut col6: Option<(usize, char)> = None;
    for (i, (b, c)) in content.char_indices().take(6).enumerate() {
        if c == '\t' {
            tab = Some(b);
            break;
        }
        if i == 5 {
            col6 = Some((b, c));
        }
    }
    // The continuation mark (position, byte length), a `0` in column 6, the
    // start of the statement text (column 7) and the position of a digit
    // after a label-field TAB (which sits in column 6).
    let mut mark: Option<(usize, usize)> = None;
    let mut zero: Option<usize> = None;
    let mut tab_digit: Option<usize> = None;
    let stmt_start = if let Some(tb) = tab {
        let after = tb + 1;
        match content.get(after..).and_then(|s| s.chars().next()) {
            Some('1'..='9') => {
                mark = Some((after, 1));
                tab_digit = Some(after);
                after + 1
            }
            _ => after,
        }
    } else if let Some((b, c)) = col6 {
        if c == '0' {
            zero = Some(b);
        } else if !c.is_whitespace() {
            mark = Some((b, c.len_utf8()));
        }
        b + c.len_utf8()
    } else {
        len
    };

    // Column limit: chars before the statement text sit in columns 1-6
    // (their char index, or column 6 for the digit after a TAB); the
    // statement text starts in column 7.
    let mut kept_end = len;
    if let Some(limit) = line_length {
        let mut cut = None;
        for (i, (b, _)) in content[..stmt_start].char_indices().enumerate() {
            let col = if Some(b) == tab_digit { 5 } else { i };
            if col >= limit {
                cut = Some(b);
                break;
            }
        }
        kept_end = match cut {
            Some(b) => b,
            None => {
                let skip = limit.saturating_sub(6);
                content[stmt_start..]
                    .char_indices()
                    .nth(skip)
                    .map_or(len, |(b, _)| stmt_start + b)
            }
        };
        // Keep a truncated line from ending in a lone '\r' that would turn
        // its '\n' terminator into "\r\n".
        if kept_end < len && lf_terminated {
            while kept_end > 0 && content.as_bytes()[kept_end - 1] == b'\r' {
                kept_end -= 1;
            }
        }
    }
    info.kept_end = kept_end;
    let kept = &content[..kept_end];

    if kept.chars().all(char::is_whitespace) {
        info.kind = Kind::BlankCode;
        info.insert_at = kept_end;
        return (info, false);
    }
    info.kind = Kind::Code;

    let continuation = match mark {
        Some((p, l)) if p + l <= kept_end => {
            info.replace = Some((p, l, b'&'));
            true
        }
        _ => {
            if let Some(z) = zero.filter(|&z| z < kept_end) {
                info.replace = Some((z, 1, b' '));
            }
            false
        }
    };

    // Scan the statement text for quotes and an inline comment.
    let mut state = if continuation { *quote } else { Quote::None };
    info.in_string = !matches!(state, Quote::None);
    let scan_from = stmt_start.min(kept_end);
    let mut insert_at = kept_end;
    for (b, c) in kept[scan_from..].char_indices() {
        state = match (state, c) {
            (Quote::None, '\'') => Quote::Single,
            (Quote::None, '"') => Quote::Double,
            (Quote::None, '!') => {
                insert_at = scan_from + b;
                break;
            }
            (Quote::Single, '\'') | (Quote::Double, '"') => Quote::None,
            (s, _) => s,
        };
    }
    *quote = state;
    info.insert_at = insert_at;
    info.stmt_start = scan_from;
    info.continuation = continuation;
    (info, continuation)
}

/// Appends one analysed line to the output, recording its edits.
fn emit(
    src: &str,
    line: &LineInfo,
    line_length: Option<usize>,
    out: &mut String,
    edits: &mut Vec<Edit>,
    diagnostics: &mut Vec<Diagnostic>,
    hollerith: &mut HollerithState,
) {
    let content = src.get(line.start..line.content_end).unwrap_or("");
    let terminator = src.get(line.content_end..line.term_end).unwrap_or("");
    let kept_end = line.kept_end.min(content.len());
    let kept = content.get(..kept_end).unwrap_or(content);
    let code = line.kind == Kind::Code && !line.in_string;
    // Hollerith constants of DATA and FORMAT statements become character
    // literals of the same length.
    let literals = if code {
        rewrite_holleriths(
            kept,
            line.stmt_start,
            line.insert_at,
            line.continuation,
            hollerith,
        )
    } else {
        if line.kind == Kind::Code {
            hollerith.reset();
        }
        None
    };
    let kept = literals.as_deref().unwrap_or(kept);
    // Blanks are insignificant in fixed form: those inside a real literal
    // or a dotted operator move to its end (same length, so no offset
    // changes). Only in the statement text: the label field and column 6
    // stay.
    let squeezed = match kept.split_at_checked(line.stmt_start) {
        Some((head, stmt)) if code => squeeze_blanks(stmt).map(|t| format!("{head}{t}")),
        _ => None,
    };
    let kept = squeezed.as_deref().unwrap_or(kept);
    // Glued keywords (`DO10I=1,N`, `GOTO10`, `CALLFOO`) get blanks: each one
    // inserted, like a `&`.
    let blanks = if code && !line.continuation {
        keyword_blanks(kept, line.stmt_start, line.insert_at)
    } else {
        Vec::new()
    };
    let mut cur = 0;
    if let Some((p, l, r)) = line.replace {
        if let (Some(before), true) = (kept.get(cur..p), p + l <= kept.len()) {
            out.push_str(before);
            if l != 1 {
                edits.push(Edit {
                    orig: to_u32(line.start + p),
                    orig_len: to_u32(l),
                    norm: to_u32(out.len()),
                    norm_len: 1,
                    removed: false,
                });
            }
            out.push(char::from(r));
            cur = p + l;
        }
    }
    // Copies `kept` up to `at`, then inserts `c` there (an edit).
    let mut insert = |cur: &mut usize, at: usize, c: char, out: &mut String| {
        if let Some(before) = kept.get(*cur..at) {
            out.push_str(before);
            edits.push(Edit {
                orig: to_u32(line.start + at),
                orig_len: 0,
                norm: to_u32(out.len()),
                norm_len: 1,
                removed: false,
            });
            out.push(c);
            *cur = at;
        }
    };
    for p in blanks {
        if p >= cur && p < line.insert_at {
            insert(&mut cur, p, ' ', out);
        }
    }
    if line.needs_amp {
        let at = line.insert_at.clamp(cur, kept.len());
        insert(&mut cur, at, '&', out);
    }
    out.push_str(kept.get(cur..).unwrap_or(""));
    if kept_end < content.len() {
        let orig = to_u32(line.start + kept_end);
        let orig_len = to_u32(content.len() - kept_end);
        match edits.last_mut() {
            // A `&` inserted right where the truncation starts: one edit, so
            // that the start of the removed text maps before the `&`.
            Some(last) if last.orig == orig && last.orig_len == 0 => {
                last.orig_len = orig_len;
                last.removed = true;
            }
            _ => edits.push(Edit {
                orig,
                orig_len,
                norm: to_u32(out.len()),
                norm_len: 0,
                removed: true,
            }),
        }
        let removed = content.get(kept_end..).unwrap_or("");
        // Text of a trailing `!` comment is ignored silently, as compilers
        // do (a macro's expansion may push one past the limit).
        let in_comment = line.insert_at < kept_end || removed.trim_start().starts_with('!');
        if !in_comment && removed.chars().any(|c| !c.is_whitespace()) {
            let limit = line_length.unwrap_or(0);
            diagnostics.push(Diagnostic::new(
                &FIXED_LINE_LENGTH,
                TextRange::new(orig, to_u32(line.content_end)),
                warning_message(limit),
            ));
        }
    }
    out.push_str(terminator);
}

/// The dotted operators and logical constants blanks may split.
const DOTTED: [&str; 13] = [
    "and", "or", "not", "eqv", "neqv", "eq", "ne", "lt", "le", "gt", "ge", "true", "false",
];

/// Whether `before` ends, but for blanks, with a dotted operator
/// (`.GT.`, `. and .`): what follows it starts an operand.
fn ends_dotted(before: &[u8]) -> bool {
    let text: Vec<u8> = before.iter().copied().filter(|&c| c != b' ').collect();
    let Some((b'.', rest)) = text.split_last() else {
        return false;
    };
    let letters = rest
        .iter()
        .rev()
        .take_while(|c| c.is_ascii_alphabetic())
        .count();
    let word = &rest[rest.len() - letters..];
    letters > 0
        && rest.len() > letters
        && rest[rest.len() - letters - 1] == b'.'
        && DOTTED
            .iter()
            .any(|d| d.as_bytes().eq_ignore_ascii_case(word))
}

/// `code` (one fixed-form code line) with the blanks inside real literals
/// with an exponent (`2.0 D 0`, `1.0 D -6`, written so by a macro such as
/// `_d`) and inside dotted operators (`.AND .`, `. and.`) moved to the
/// end of the token, outside character literals and the trailing comment;
/// `None` when there are none. A mantissa without a decimal point counts
/// only where an operand starts (`CHARACTER*8 E1` stays).
pub fn squeeze_blanks(code: &str) -> Option<String> {
    squeeze(code, true)
}

/// [`squeeze_blanks`] for the real literals only (`2.0 D 0`), the dotted
/// operators left as written: what free-form text gets, where blanks are
/// significant and only a preprocessing pipe (MITgcm's `set64bitConst.sh`
/// after its `_d` macro) would have joined the literal.
pub fn squeeze_real_literals(code: &str) -> Option<String> {
    squeeze(code, false)
}

fn squeeze(code: &str, operators: bool) -> Option<String> {
    let b = code.as_bytes();
    let mut out: Option<Vec<u8>> = None;
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let skip_blanks = |mut j: usize| {
        while j < b.len() && b[j] == b' ' {
            j += 1;
        }
        j
    };
    let mut quote: Option<u8> = None;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if let Some(q) = quote {
            if c == q {
                quote = None;
            }
            i += 1;
            continue;
        }
        match c {
            b'\'' | b'"' => {
                quote = Some(c);
                i += 1;
                continue;
            }
            b'!' => break,
            _ => {}
        }
        // After a dotted operator (`X.GT.0. D 0`, `.NE. 0 D 0`) an operand
        // starts too.
        let fresh = i == 0 || !(ident(b[i - 1]) || b[i - 1] == b'.') || ends_dotted(&b[..i]);
        // A real literal: digits, a point, digits, blanks, exponent.
        let number =
            c.is_ascii_digit() || (c == b'.' && b.get(i + 1).is_some_and(|d| d.is_ascii_digit()));
        if fresh && number {
            let mut j = i;
            while j < b.len() && b[j].is_ascii_digit() {
                j += 1;
            }
            let point = j < b.len() && b[j] == b'.';
            if point {
                j += 1;
                while j < b.len() && b[j].is_ascii_digit() {
                    j += 1;
                }
            }
            let digits = b[i..j].iter().any(u8::is_ascii_digit);
            // Without a point, only where an operand starts (`(2 D 0*x)`,
            // or first on a continuation line: `&  2698 D 0*x`), not after
            // `*` (`CHARACTER*8 E1`).
            let operand = b[..i]
                .iter()
                .rev()
                .find(|&&x| x != b' ')
                .is_none_or(|x| matches!(x, b'(' | b'=' | b'+' | b'-' | b',' | b'/'))
                || ends_dotted(&b[..i]);
            let e = skip_blanks(j);
            if (point || operand)
                && digits
                && e < b.len()
                && matches!(b[e] | 0x20, b'd' | b'e' | b'q')
            {
                let mut k = skip_blanks(e + 1);
                let sign = k < b.len() && matches!(b[k], b'+' | b'-');
                if sign {
                    k = skip_blanks(k + 1);
                }
                let start = k;
                while k < b.len() && b[k].is_ascii_digit() {
                    k += 1;
                }
                let ends = k == b.len() || !ident(b[k]);
                if k > start && ends && b[i..k].contains(&b' ') {
                    let token: Vec<u8> = b[i..k].iter().copied().filter(|&x| x != b' ').collect();
                    let o = out.get_or_insert_with(|| b.to_vec());
                    o[i..i + token.len()].copy_from_slice(&token);
                    o[i + token.len()..k].fill(b' ');
                    i = k;
                    continue;
                }
            }
            i = j.max(i + 1);
            continue;
        }
        // A dotted operator with blanks inside.
        if operators && c == b'.' {
            let s = skip_blanks(i + 1);
            let mut k = s;
            while k < b.len() && b[k].is_ascii_alphabetic() {
                k += 1;
            }
            let word = code.get(s..k).unwrap_or("").to_ascii_lowercase();
            let close = skip_blanks(k);
            if DOTTED.contains(&word.as_str())
                && close < b.len()
                && b[close] == b'.'
                && b[i..=close].contains(&b' ')
            {
                let token: Vec<u8> = b[i..=close]
                    .iter()
                    .copied()
                    .filter(|&x| x != b' ')
                    .collect();
                let o = out.get_or_insert_with(|| b.to_vec());
                o[i..i + token.len()].copy_from_slice(&token);
                o[i + token.len()..=close].fill(b' ');
                i = close + 1;
                continue;
            }
        }
        i += 1;
    }
    out.and_then(|o| String::from_utf8(o).ok())
}

/// Converts fixed-form source to line-preserving free-form text.
/// `line_length` is the column after which code-line text is ignored
/// (`Some(72)` by default, `None` for no limit).
pub fn normalize_fixed(src: &str, line_length: Option<usize>) -> Normalized {
    let bytes = src.as_bytes();
    let mut out = String::with_capacity(src.len() + src.len() / 64 + 16);
    let mut edits = Vec::new();
    let mut diagnostics = Vec::new();
    // The last code line and the comment/blank lines after it: a following
    // continuation line may still add a `&` to that code line.
    let mut pending: Vec<LineInfo> = Vec::new();
    let mut quote = Quote::None;
    let mut hollerith = HollerithState::default();
    let mut pos = 0;
    loop {
        let (content_end, term_end, last) = match src[pos..].find('\n') {
            Some(i) => {
                let lf = pos + i;
                let end = if lf > pos && bytes[lf - 1] == b'\r' {
                    lf - 1
                } else {
                    lf
                };
                (end, lf + 1, false)
            }
            None => (src.len(), src.len(), true),
        };
        let lf_terminated = !last && content_end + 1 == term_end;
        let (mut info, continuation) = analyse_line(
            &src[pos..content_end],
            lf_terminated,
            line_length,
            &mut quote,
        );
        info.start = pos;
        info.content_end = content_end;
        info.term_end = term_end;
        if info.kind == Kind::Code {
            if continuation {
                if let Some(prev) = pending.first_mut().filter(|p| p.kind == Kind::Code) {
                    prev.needs_amp = true;
                }
            }
            for p in pending.drain(..) {
                emit(
                    src,
                    &p,
                    line_length,
                    &mut out,
                    &mut edits,
                    &mut diagnostics,
                    &mut hollerith,
                );
            }
        }
        pending.push(info);
        if last {
            break;
        }
        pos = term_end;
    }
    for p in pending.drain(..) {
        emit(
            src,
            &p,
            line_length,
            &mut out,
            &mut edits,
            &mut diagnostics,
            &mut hollerith,
        );
    }
    edits.shrink_to_fit();
    let map = OffsetMap {
        edits,
        orig_len: to_u32(src.len()),
        norm_len: to_u32(out.len()),
    };
    Normalized {
        text: out,
        map,
        diagnostics,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn norm(src: &str) -> Normalized {
        normalize_fixed(src, Some(72))
    }

    fn norm_text(src: &str) -> String {
        norm(src).text
    }

    /// Checks the round trip of every original char boundary that was not
    /// removed, and that normalised offsets stay on their line.
    fn check_map(src: &str, n: &Normalized) {
        for o in (0..=src.len()).filter(|&o| src.is_char_boundary(o)) {
            let o = o as u32;
            let m = n.map.to_normalized(o);
            assert!(n.text.is_char_boundary(m as usize), "{o} -> {m}");
            if !n.map.is_removed(o) {
                assert_eq!(n.map.to_original(m), o, "{src:?}: {o} -> {m}");
            }
        }
        for m in (0..=n.text.len()).filter(|&m| n.text.is_char_boundary(m)) {
            let o = n.map.to_original(m as u32) as usize;
            assert_eq!(
                src[..o].matches('\n').count(),
                n.text[..m].matches('\n').count()
            );
        }
    }

    #[test]
    fn blanks_inside_real_literals_and_dotted_operators_are_squeezed() {
        let sq = |s: &str| squeeze_blanks(s);
        assert_eq!(
            sq("      x = 2.0 D 0 + 1.0 D -6*y").as_deref(),
            Some("      x = 2.0D0   + 1.0D-6  *y")
        );
        assert_eq!(
            sq("      x = 25. D 0").as_deref(),
            Some("      x = 25.D0  ")
        );
        // After a dotted operator, with or without a point (MITgcm's
        // `.GT.0. _d 0`, `.NE. 0 _d 0`).
        assert_eq!(
            sq("      IF (x.GT.0. D 0 .AND. y .NE. 0 D 0) z = 1").as_deref(),
            Some("      IF (x.GT.0.D0   .AND. y .NE. 0D0  ) z = 1")
        );
        // First on a continuation line, and after `**` (MITgcm's
        // carbon_chem.F: `&  2698 _d 0*invtk*is**1.5 _d 0`).
        assert_eq!(
            sq("          2698 D 0*invtk*is**1.5 D 0").as_deref(),
            Some("          2698D0  *invtk*is**1.5D0  ")
        );
        assert_eq!(
            sq("      IF (a .GT. b .AND . c . lt. d) x = 1").as_deref(),
            Some("      IF (a .GT. b .AND.  c .lt.  d) x = 1")
        );
        // Not a real literal with an exponent, in a string, in a comment.
        for s in [
            "      CHARACTER*8 E1",
            "      x = n*2 D 0",
            "      x = a1.0 D 0",
            "      print *, '2.0 D 0'",
            "      x = 1 ! 2.0 D 0",
            "      x = 2.0D0",
            "      x = 2.0 D 0X",
            "      x = y.d 0",
            "      x = a.b.1 D 0",
        ] {
            assert_eq!(sq(s), None, "{s}");
        }
        // Lines keep their length: offsets do not move.
        let src = "      x = 1.0 D -3 * y\n";
        let n = norm(src);
        assert_eq!(n.text, "      x = 1.0D-3   * y\n");
        check_map(src, &n);
        // A continued character literal is left alone.
        let src = "      print *, 'a\n     &2.0 D 0'\n";
        assert!(norm(src).text.contains("2.0 D 0"), "{}", norm(src).text);
    }

    #[test]
    fn comment_lines() {
        let src = "C comment\nc x\n* y\n! z\nD debug\nd dbg\n   ! indented\n      X = 1\n";
        let n = norm(src);
        assert_eq!(
            n.text,
            "! comment\n! x\n! y\n! z\n! debug\n! dbg\n   ! indented\n      X = 1\n"
        );
        assert!(n.map.is_identity());
        assert!(n.diagnostics.is_empty());
        // A '!' after a TAB is a comment too.
        assert_eq!(norm_text("\t! note\n"), "\t! note\n");
    }

    #[test]
    fn blank_and_preprocessor_lines() {
        let src = "\n   \t  \n#ifdef FOO\n      X = 1\n#endif\n";
        assert_eq!(norm_text(src), src);
    }

    #[test]
    fn column_six() {
        // '!' in column 6 is a continuation mark, not a comment.
        assert_eq!(
            norm_text("      X = 1 +\n     !2\n"),
            "      X = 1 +&\n     &2\n"
        );
        // '0' in column 6 is no continuation; it must not join the label.
        assert_eq!(norm_text("   100X = 1\n"), "   10 X = 1\n");
        assert_eq!(
            norm_text("      X = 1\n     0Y = 2\n"),
            "      X = 1\n      Y = 2\n"
        );
        // Short lines.
        assert_eq!(norm_text("  1\n    \n     "), "  1\n    \n     ");
    }

    #[test]
    fn continuation_at_start_of_file() {
        let n = norm("     &X = 1\n");
        assert_eq!(n.text, "     &X = 1\n");
        let n = norm("C c\n     1X = 1");
        assert_eq!(n.text, "! c\n     &X = 1");
    }

    #[test]
    fn continuation_chain_and_map() {
        let src = "      X = A +\n     &    B +\n     2    C\n      Y = 1\n";
        let n = norm(src);
        assert_eq!(
            n.text,
            "      X = A +&\n     &    B +&\n     &    C\n      Y = 1\n"
        );
        // The inserted '&' maps to where it was inserted (the line end).
        let amp = n.text.find('&').unwrap() as u32;
        assert_eq!(amp, 13);
        assert_eq!(n.map.to_original(amp), 13);
        assert_eq!(n.map.to_original(amp + 1), 13); // the '\n'
        assert_eq!(n.map.to_normalized(13), 14);
        let y = src.find('Y').unwrap() as u32;
        assert_eq!(n.map.to_normalized(y), n.text.find('Y').unwrap() as u32);
        assert_eq!(n.map.to_original(n.text.find('Y').unwrap() as u32), y);
        assert_eq!(
            n.map.range_to_original(TextRange::new(6, 13)),
            TextRange::new(6, 13)
        );
        // Past the end clamps.
        assert_eq!(n.map.to_original(10_000), src.len() as u32);
        assert_eq!(n.map.to_normalized(10_000), n.text.len() as u32);
        check_map(src, &n);
    }

    #[test]
    fn crlf_file() {
        let src = "C comment\r\n      X = A +\r\n     &    B\r\n\r\n      END\r\n";
        let n = norm(src);
        assert_eq!(
            n.text,
            "! comment\r\n      X = A +&\r\n     &    B\r\n\r\n      END\r\n"
        );
        assert_eq!(n.text.matches("\r\n").count(), 5);
        check_map(src, &n);
        // Insertion before the '\r'.
        let cr = src.find("+\r").unwrap() as u32 + 1;
        assert_eq!(n.map.to_original(cr), cr);
        assert_eq!(n.map.to_normalized(cr), cr + 1);
    }

    #[test]
    fn continued_character_literal() {
        let src = "      S = 'ABC ! not a comment\n     1DEF' // 'X!Y' ! comment\n     2 // 'Z'\n";
        let n = norm(src);
        assert_eq!(
            n.text,
            "      S = 'ABC ! not a comment&\n     &DEF' // 'X!Y' &! comment\n     & // 'Z'\n"
        );
        check_map(src, &n);
        // Doubled quotes inside a literal.
        let src = "      S = 'IT''S ! STILL\n     1 TEXT' ! now a comment\n     2 // 'Z'\n";
        assert_eq!(
            norm_text(src),
            "      S = 'IT''S ! STILL&\n     & TEXT' &! now a comment\n     & // 'Z'\n"
        );
        // Double quotes, and a single quote inside them.
        let src = "      S = \"DON'T ! X\n     1\" ! c\n     2 // 'Z'\n";
        assert_eq!(
            norm_text(src),
            "      S = \"DON'T ! X&\n     &\" &! c\n     & // 'Z'\n"
        );
        // A literal that is not continued does not leak into the next line.
        let src = "      S = 'A\n      T = 1 ! c\n     & + 2\n";
        assert_eq!(
            norm_text(src),
            "      S = 'A\n      T = 1 &! c\n     & + 2\n"
        );
    }

    #[test]
    fn comment_and_blank_lines_between_continuations() {
        let src = "      X = A +\nC comment\n\n   ! another\n     &    B\n";
        let n = norm(src);
        assert_eq!(
            n.text,
            "      X = A +&\n! comment\n\n   ! another\n     &    B\n"
        );
        check_map(src, &n);
    }

    #[test]
    fn inline_comment_on_continued_line() {
        let src = "      X = A + ! first part\n     &    B\n";
        let n = norm(src);
        assert_eq!(n.text, "      X = A + &! first part\n     &    B\n");
        let bang = src.find('!').unwrap() as u32;
        // The '&' maps to where it was inserted; the '!' maps to itself.
        assert_eq!(n.map.to_original(bang), bang);
        assert_eq!(n.map.to_normalized(bang), bang + 1);
        assert_eq!(n.map.to_original(bang + 1), bang);
        check_map(src, &n);
    }

    #[test]
    fn tab_form() {
        let src = "10\tX = 1\n\tY = 2 +\n\t1 3\n\t  Z = 4\n";
        let n = norm(src);
        assert_eq!(n.text, "10\tX = 1\n\tY = 2 +&\n\t& 3\n\t  Z = 4\n");
        check_map(src, &n);
        // A '0' after the TAB is statement text, not a continuation mark.
        assert_eq!(norm_text("\tX = 1\n\t0.5\n"), "\tX = 1\n\t0.5\n");
        // The statement after a TAB starts in column 7: 66 chars fit.
        let stmt = format!("X = {}", "1".repeat(62));
        assert_eq!(stmt.chars().count(), 66);
        let src = format!("\t{stmt}ABC\n");
        let n = norm(&src);
        assert_eq!(n.text, format!("\t{stmt}\n"));
        assert_eq!(n.diagnostics.len(), 1);
        assert_eq!(n.diagnostics[0].range, TextRange::new(67, 70));
        // Same after TAB + continuation digit.
        let src = format!("\tY = 0 +\n\t1{stmt}ABC\n");
        let n = norm(&src);
        assert_eq!(n.text, format!("\tY = 0 +&\n\t&{stmt}\n"));
        assert_eq!(n.diagnostics.len(), 1);
        check_map(&src, &n);
    }

    #[test]
    fn truncation_at_72() {
        let code = format!("      X = {}", "1".repeat(62));
        assert_eq!(code.len(), 72);
        let src = format!("{code}00010\n      END\n");
        let n = norm(&src);
        assert_eq!(n.text, format!("{code}\n      END\n"));
        assert_eq!(n.diagnostics.len(), 1);
        let d = &n.diagnostics[0];
        assert_eq!(d.code, "fixed-line-length");
        assert_eq!(d.range, TextRange::new(72, 77));
        assert!(d.message.contains("column 72"), "{}", d.message);
        assert!(n.map.is_removed(72) && n.map.is_removed(76) && !n.map.is_removed(71));
        assert!(!n.map.is_removed(77));
        // Removed text maps to the end of the kept text.
        assert_eq!(n.map.to_normalized(74), 72);
        assert_eq!(n.map.to_normalized(77), 72);
        assert_eq!(n.map.to_original(72), 77);
        check_map(&src, &n);

        // Whitespace only past the limit: removed without a warning.
        let src = format!("{code}      \n");
        let n = norm(&src);
        assert_eq!(n.text, format!("{code}\n"));
        assert!(n.diagnostics.is_empty());

        // Comment lines are never truncated.
        let src = format!("C{}\n", "x".repeat(100));
        let n = norm(&src);
        assert_eq!(n.text, format!("!{}\n", "x".repeat(100)));
        assert!(n.diagnostics.is_empty());

        // No limit keeps everything.
        let src = format!("{code}00010\n");
        let n = normalize_fixed(&src, None);
        assert_eq!(n.text, src);
        assert!(n.diagnostics.is_empty());
        assert!(n.map.is_identity());

        // 132 columns.
        let n = normalize_fixed(&src, Some(132));
        assert_eq!(n.text, src);
        let long = format!("{src}{}", "2".repeat(200));
        let n = normalize_fixed(&long, Some(132));
        assert_eq!(n.diagnostics.len(), 1);
        assert!(n.diagnostics[0].message.contains("column 132"));
    }

    #[test]
    fn truncation_counts_chars_not_bytes() {
        let lit = "é".repeat(60);
        let code = format!("      S = '{lit}'");
        assert_eq!(code.chars().count(), 72);
        let src = format!("{code}ZZ\n");
        let n = norm(&src);
        assert_eq!(n.text, format!("{code}\n"));
        assert_eq!(
            n.diagnostics[0].range,
            TextRange::new(code.len() as u32, code.len() as u32 + 2)
        );
        check_map(&src, &n);
    }

    #[test]
    fn truncated_line_that_is_continued() {
        let code = format!("      X = {}", "A".repeat(62));
        let src = format!("{code}SEQ1\n     &  + B\n");
        let n = norm(&src);
        assert_eq!(n.text, format!("{code}&\n     &  + B\n"));
        // The start of the removed text maps before the '&', the terminator
        // after it, and the '&' back to the start of the removed text.
        assert_eq!(n.map.to_normalized(72), 72);
        assert_eq!(n.map.to_normalized(76), 73);
        assert_eq!(n.map.to_original(72), 72);
        assert_eq!(n.map.to_original(73), 76);
        check_map(&src, &n);
        // The inline-comment case keeps the insertion and truncation apart.
        let code = format!("      X = A ! {}", "c".repeat(58));
        assert_eq!(code.len(), 72);
        let src = format!("{code}SEQ1\n     &  + B\n");
        let n = norm(&src);
        assert_eq!(
            n.text,
            format!("      X = A &! {}\n     &  + B\n", "c".repeat(58))
        );
        check_map(&src, &n);
    }

    #[test]
    fn multibyte_continuation_mark() {
        let src = "      X = 1 +\n     é2\n";
        let n = norm(src);
        assert_eq!(n.text, "      X = 1 +&\n     &2\n");
        let e = src.find('é').unwrap() as u32;
        let amp = n.text.rfind('&').unwrap() as u32;
        assert_eq!(n.map.to_normalized(e), amp);
        assert_eq!(n.map.to_original(amp), e);
        assert_eq!(n.map.to_original(amp + 1), e + 2);
        check_map(src, &n);
    }

    #[test]
    fn identity_map() {
        let m = OffsetMap::identity();
        assert!(m.is_identity());
        for o in [0, 1, 100, u32::MAX] {
            assert_eq!(m.to_original(o), o);
            assert_eq!(m.to_normalized(o), o);
            assert!(!m.is_removed(o));
        }
        let r = TextRange::new(3, 9);
        assert_eq!(m.range_to_original(r), r);
    }

    #[test]
    fn empty_and_odd_inputs() {
        for src in [
            "",
            "\n",
            "\r\n",
            "\r",
            "\t",
            "\t1",
            "     &",
            "'",
            "\"\n     1'",
            "é😀",
            // A Hollerith constant with non-ASCII text, a squeeze next to
            // column 6 (proptest cases).
            "     0DATA X /\n'DOI=1,2h¡&",
            "&2.0 D 0",
        ] {
            for ll in [None, Some(0), Some(1), Some(6), Some(7), Some(72)] {
                let n = normalize_fixed(src, ll);
                assert_eq!(n.text.matches('\n').count(), src.matches('\n').count());
                check_map(src, &n);
            }
        }
    }

    const PROGRAM: &str = "\
C     Bratu-like test, fixed form
      SUBROUTINE FOO(N, X, F)
      INTEGER N, I
      DOUBLE PRECISION X(N), F(N), H
* another comment
      H = 1.0D0/DBLE(N+1)
      DO 10 I = 2, N-1
         F(I) = (2.0D0*X(I) - X(I-1) - X(I+1))/(H*H) ! inline comment
     &        - EXP(X(I))
   10 CONTINUE
      IF (N .GT. 2) GOTO 20
      F(1) = X(1)
   20 RETURN
      END
";

    fn parse_ok(text: &str) -> Result<(), String> {
        let mut parser = tree_sitter::Parser::new();
        parser
            .set_language(&tree_sitter_fortran::LANGUAGE.into())
            .map_err(|e| e.to_string())?;
        let tree = parser.parse(text, None).ok_or("no tree")?;
        let root = tree.root_node();
        if root.has_error() {
            return Err(format!("{}\n{}", text, root.to_sexp()));
        }
        Ok(())
    }

    #[test]
    fn grammar_parses_normalised_program() {
        let n = norm(PROGRAM);
        assert!(n.diagnostics.is_empty());
        assert!(n
            .text
            .contains("(H*H) &! inline comment\n     &        - EXP"));
        assert_eq!(n.text.lines().count(), PROGRAM.lines().count());
        if let Err(e) = parse_ok(&n.text) {
            panic!("{e}");
        }
        check_map(PROGRAM, &n);
        // Sanity check: the raw fixed-form text does not parse cleanly.
        assert!(parse_ok(PROGRAM).is_err());

        // CRLF.
        let crlf = PROGRAM.replace('\n', "\r\n");
        let n = norm(&crlf);
        if let Err(e) = parse_ok(&n.text) {
            panic!("{e}");
        }
        check_map(&crlf, &n);
    }

    #[test]
    fn grammar_parses_normalised_tab_form_program() {
        let tab = PROGRAM
            .replace("      H = 1.0D0", "\tH = 1.0D0")
            .replace("      INTEGER", "\tINTEGER")
            .replace("     &        - EXP", "\t1       - EXP")
            .replace("   10 CONTINUE", "10\tCONTINUE");
        assert!(tab.contains("\t1       - EXP"));
        let n = norm(&tab);
        assert!(n.diagnostics.is_empty());
        assert!(n.text.contains("(H*H) &! inline comment\n\t&       - EXP"));
        if let Err(e) = parse_ok(&n.text) {
            panic!("{e}");
        }
        check_map(&tab, &n);
    }

    const F77_PROGRAM: &str = "\
C     Glued keywords and Hollerith constants
      SUBROUTINE OLD(N, X, Y, IH)
      IMPLICITNONE
      INTEGER N, I, J, K, IH(2)
      DOUBLEPRECISION X(N), Y(N)
      DATA IH /4HABCD, 4HEFGH/
      J = 0
      DO10I=1,N
         Y(I) = 2.0D0*X(I)
   10 CONTINUE
      DO 20I=1,N
   20 Y(I) = Y(I) + X(I)
      DO30 K = 1, N, 2
         Y(K) = -Y(K)
   30 CONTINUE
      DOI=1,N
         Y(I) = Y(I)*X(I)
      ENDDO
      DOWHILE(J.LT.N)
         J = J + 1
      END DO
      IF (J .GT. 0) GOTO40
      CALLSUB2(N, Y)
   40 IF(N.GT.1)CALLSUB2(N, Y)
      GOTO50
   50 CONTINUE
      WRITE (6, 100) Y(1)
  100 FORMAT (5H Y = , E12.4, 3HEND)
      CALLDONE
      END
";

    #[test]
    fn glued_keywords_and_holleriths_are_rewritten() {
        for (src, want) in [
            ("      DO10I=1,N\n", "      DO 10 I=1,N\n"),
            ("      DO 10I=1,N\n", "      DO 10 I=1,N\n"),
            ("      DO10 I = 1, N\n", "      DO 10 I = 1, N\n"),
            ("      DO 10, I=1,N\n", "      DO 10, I=1,N\n"),
            ("   20 DOI=1,N\n", "   20 DO I=1,N\n"),
            ("      DOWHILE(I.LT.N)\n", "      DO WHILE(I.LT.N)\n"),
            ("      GOTO10\n", "      GOTO 10\n"),
            ("      GO TO10\n", "      GO TO 10\n"),
            (
                "      IF (X .GT. 0) GOTO10\n",
                "      IF (X .GT. 0) GOTO 10\n",
            ),
            ("      CALLFOO(X)\n", "      CALL FOO(X)\n"),
            ("      CALLFOO\n", "      CALL FOO\n"),
            (
                "      IF(X.GT.0)CALLFOO(X)\n",
                "      IF(X.GT.0)CALL FOO(X)\n",
            ),
            ("      IMPLICITNONE\n", "      IMPLICIT NONE\n"),
            ("\tDO10I=1,N\n", "\tDO 10 I=1,N\n"),
            (
                "      DATA IH /4HABCD, 4HEFGH/\n",
                "      DATA IH /'ABCD', 'EFGH'/\n",
            ),
            (
                "  100 FORMAT (5H X = , E12.4, 3HEND)\n",
                "  100 FORMAT (' X = ', E12.4, 'END')\n",
            ),
            // Not on continuation lines.
            (
                "      X = 1 +\n     &DO10I\n",
                "      X = 1 +&\n     &DO10I\n",
            ),
            // With a continuation and an inline comment.
            (
                "      CALLFOO(X, ! args\n     &  Y)\n",
                "      CALL FOO(X, &! args\n     &  Y)\n",
            ),
            (
                "      DATA A /2HAB,\n     1  2HCD/\n",
                "      DATA A /'AB',&\n     &  'CD'/\n",
            ),
            // A tab-form continuation: its digit is the mark, not a count.
            ("      DATA X /\n\t12HAB/\n", "      DATA X /&\n\t&'AB'/\n"),
        ] {
            let n = norm(src);
            assert_eq!(n.text, want, "{src:?}");
            check_map(src, &n);
        }
        // Assignments to variables named DO10I, CALLX, GOTO1, and
        // continuation lines, are left alone.
        for src in [
            "      DO10I = 1.5\n",
            "      DO10I = F(1, 2)\n",
            "      CALLX = 2\n",
            "      GOTO1 = 3\n",
            "      IF (X .GT. 0) CALLX = 2\n",
            "      X = 'DO10I=1,N' ! CALLFOO\n",
            "      X = A4H\n",
            "      DATA X /4HAB/\n",
            "  100 FORMAT (E12.4, 1H\n",
        ] {
            let n = norm(src);
            assert_eq!(n.text, src);
            assert!(n.map.is_identity(), "{src:?}");
        }
    }

    #[test]
    fn offsets_after_inserted_blanks_map_back() {
        let src = "      DO10I=1,N\n      CALLFOO(I)\n";
        let n = norm(src);
        assert_eq!(n.text, "      DO 10 I=1,N\n      CALL FOO(I)\n");
        // Names after an inserted blank map to their original columns.
        for (orig, normed) in [("I=1", "I=1"), ("N\n", "N\n"), ("FOO", "FOO"), ("10", "10")] {
            let o = src.find(orig).unwrap() as u32;
            let m = n.text.find(normed).unwrap() as u32;
            assert_eq!(n.map.to_normalized(o), m, "{orig}");
            assert_eq!(n.map.to_original(m), o, "{orig}");
        }
        // An inserted blank maps to the char it was inserted before.
        let blank = n.text.find(" I=1").unwrap() as u32;
        assert_eq!(n.map.to_original(blank), src.find("I=1").unwrap() as u32);
        let r = TextRange::new(
            n.text.find("FOO").unwrap() as u32,
            n.text.find("(I)").unwrap() as u32,
        );
        let foo = src.find("FOO").unwrap() as u32;
        assert_eq!(n.map.range_to_original(r), TextRange::new(foo, foo + 3));
        check_map(src, &n);
    }

    #[test]
    fn squeeze_leaves_label_field_and_column_six() {
        // A continuation mark in column 6 is not part of a real literal.
        let src = "      X = 1\n&2.0 D 0\n";
        let n = norm(src);
        assert_eq!(n.text, "      X = 1&\n&2.0 & 0\n");
        check_map(src, &n);
    }

    #[test]
    fn grammar_parses_normalised_f77_program() {
        let n = norm(F77_PROGRAM);
        assert!(n.diagnostics.is_empty());
        assert_eq!(n.text.lines().count(), F77_PROGRAM.lines().count());
        if let Err(e) = parse_ok(&n.text) {
            panic!("{e}");
        }
        for want in [
            "DO 10 I=1,N",
            "DO 20 I=1,N",
            "DO 30 K = 1",
            "DO I=1,N",
            "DO WHILE(J",
            "GOTO 40",
            "CALL SUB2(N, Y)\n",
            "CALL SUB2(N, Y)\n      GOTO 50",
            "/'ABCD', 'EFGH'/",
            "(' Y = ', E12.4, 'END')",
            "CALL DONE",
            "IMPLICIT NONE",
        ] {
            assert!(n.text.contains(want), "{want}\n{}", n.text);
        }
        check_map(F77_PROGRAM, &n);
        // CRLF and a longer line limit.
        let crlf = F77_PROGRAM.replace('\n', "\r\n");
        let n = normalize_fixed(&crlf, Some(132));
        if let Err(e) = parse_ok(&n.text) {
            panic!("{e}");
        }
        check_map(&crlf, &n);
    }

    fn line_of(text: &str, offset: usize) -> usize {
        text.as_bytes()[..offset.min(text.len())]
            .iter()
            .filter(|&&b| b == b'\n')
            .count()
    }

    fn fixed_like() -> impl Strategy<Value = String> {
        let piece = prop_oneof![
            Just("      "),
            Just("     &"),
            Just("     1"),
            Just("     0"),
            Just("\t"),
            Just("\t1"),
            Just("10"),
            Just("C"),
            Just("c"),
            Just("*"),
            Just("D"),
            Just("!"),
            Just("#"),
            Just("'"),
            Just("\""),
            Just("''"),
            Just("&"),
            Just(" "),
            Just("X = "),
            Just("A"),
            Just("0"),
            Just(";"),
            Just("é"),
            Just("😀"),
            Just("\r"),
            Just("DO10I=1,N"),
            Just("DOI=1,2"),
            Just("GOTO10"),
            Just("CALLF"),
            Just("IF(X)"),
            Just("DATA X /"),
            Just("FORMAT("),
            Just("4HABCD"),
            Just("12HABCDEFGHIJKL"),
            Just(","),
            Just("/"),
            Just("2.0 D 0"),
        ]
        .prop_map(str::to_string);
        let piece = prop_oneof![
            8 => piece,
            1 => any::<char>().prop_map(|c| c.to_string()),
            1 => "[A-Z ]{10,80}",
        ];
        let line = prop::collection::vec(piece, 0..12).prop_map(|v| v.concat());
        let eol = prop_oneof![Just("\n"), Just("\r\n")];
        (prop::collection::vec((line, eol), 0..10), any::<bool>()).prop_map(|(lines, last)| {
            let mut s = String::new();
            let n = lines.len();
            for (i, (l, e)) in lines.into_iter().enumerate() {
                s.push_str(&l);
                if i + 1 < n || last {
                    s.push_str(e);
                }
            }
            s
        })
    }

    /// The chars of the line of original offset `o` (kept ones only, from
    /// the line start) and the normalised char each one maps to, with the
    /// index of `o`'s char.
    fn line_images(src: &str, n: &Normalized, o: usize) -> (Vec<char>, Vec<Option<char>>, usize) {
        let start = src[..o].rfind('\n').map_or(0, |i| i + 1);
        let end = src[o..].find('\n').map_or(src.len(), |i| o + i);
        let (mut a, mut b, mut at) = (Vec::new(), Vec::new(), 0);
        for (k, c) in src[start..end].char_indices() {
            let p = start + k;
            if n.map.is_removed(p as u32) {
                break;
            }
            if p == o {
                at = a.len();
            }
            let m = n.map.to_normalized(p as u32) as usize;
            a.push(c);
            b.push(n.text.get(m..).and_then(|t| t.chars().next()));
        }
        (a, b, at)
    }

    /// Whether the char at original offset `o` was changed by one of the
    /// same-length rewrites of a code line: a Hollerith constant `nHc…`
    /// written as blanks, `'c…'`, or a real literal or dotted operator
    /// whose blanks moved to its end.
    fn rewritten(src: &str, n: &Normalized, o: usize) -> bool {
        let (a, b, j) = line_images(src, n, o);
        let img =
            |i: usize, k: usize| -> Option<Vec<char>> { b.get(i..k)?.iter().copied().collect() };
        // Hollerith constants.
        for i in 0..=j {
            let digits = a[i..].iter().take_while(|c| c.is_ascii_digit()).count();
            // The continuation mark — a digit in column 6, or right after
            // a TAB in the label field — is not part of the count after it.
            let tab = a.iter().take(6).position(|c| *c == '\t');
            let mark = match tab {
                Some(t) => i == t + 2,
                None => i == 6,
            };
            if digits == 0 || digits > 4 || (i > 0 && a[i - 1].is_ascii_digit() && !mark) {
                continue;
            }
            if !matches!(a.get(i + digits), Some('H' | 'h')) {
                continue;
            }
            let count: String = a[i..i + digits].iter().collect();
            let Ok(len) = count.parse::<usize>() else {
                continue;
            };
            let e = i + digits + 1 + len;
            if j >= e || e > a.len() {
                continue;
            }
            let mut want = vec![' '; digits - 1];
            want.push('\'');
            want.extend_from_slice(&a[i + digits + 1..e]);
            want.push('\'');
            if img(i, e) == Some(want) {
                return true;
            }
        }
        // Squeezed tokens: the non-blank chars, then the blanks.
        for i in j.saturating_sub(20)..=j {
            for k in j + 1..=(j + 20).min(a.len()) {
                let seg = &a[i..k];
                if seg[0] == ' ' || seg[seg.len() - 1] == ' ' || !seg.contains(&' ') {
                    continue;
                }
                let mut want: Vec<char> = seg.iter().copied().filter(|&c| c != ' ').collect();
                want.resize(seg.len(), ' ');
                if img(i, k) == Some(want) {
                    return true;
                }
            }
        }
        false
    }

    fn input() -> impl Strategy<Value = String> {
        prop_oneof![4 => fixed_like(), 1 => any::<String>()]
    }

    fn line_length() -> impl Strategy<Value = Option<usize>> {
        prop_oneof![
            Just(None),
            Just(Some(72)),
            Just(Some(132)),
            (0usize..40).prop_map(Some),
        ]
    }

    /// The normaliser's properties on one input (the proptest below).
    fn normalisation_holds(src: &str, ll: Option<usize>) -> Result<(), TestCaseError> {
        let src = src.to_string();
        let n = normalize_fixed(&src, ll);
        let text = &n.text;
        // Same lines, same terminators.
        prop_assert_eq!(text.matches('\n').count(), src.matches('\n').count());
        let a: Vec<&str> = src.split('\n').collect();
        let b: Vec<&str> = text.split('\n').collect();
        for i in 0..a.len().saturating_sub(1) {
            prop_assert_eq!(a[i].ends_with('\r'), b[i].ends_with('\r'));
        }
        if ll.is_none() {
            prop_assert!(n.diagnostics.is_empty());
        }
        for d in &n.diagnostics {
            let (s, e) = (d.range.start as usize, d.range.end as usize);
            prop_assert!(s < e && e <= src.len());
            prop_assert!(src.is_char_boundary(s) && src.is_char_boundary(e));
            prop_assert_eq!(line_of(&src, s), line_of(&src, e));
        }
        // Normalised offsets map into the same line.
        for m in (0..=text.len()).filter(|&m| text.is_char_boundary(m)) {
            let o = n.map.to_original(m as u32) as usize;
            prop_assert!(o <= src.len() && src.is_char_boundary(o));
            prop_assert_eq!(line_of(&src, o), line_of(text, m));
        }
        // Original offsets round-trip unless removed; kept chars survive
        // or are replaced by '!' (column 1), '&' (continuation) or ' '.
        for o in (0..=src.len()).filter(|&o| src.is_char_boundary(o)) {
            let m = n.map.to_normalized(o as u32) as usize;
            prop_assert!(m <= text.len() && text.is_char_boundary(m));
            prop_assert_eq!(line_of(&src, o), line_of(text, m));
            if n.map.is_removed(o as u32) {
                prop_assert!(ll.is_some());
                continue;
            }
            prop_assert_eq!(n.map.to_original(m as u32) as usize, o);
            if let Some(c) = src[o..].chars().next() {
                let d = text[m..].chars().next();
                prop_assert!(
                    d == Some(c) || matches!(d, Some('!' | '&' | ' ')) || rewritten(&src, &n, o),
                    "{:?} at {} became {:?}",
                    c,
                    o,
                    d
                );
            }
        }
        // Offsets past the end clamp.
        prop_assert_eq!(n.map.to_original(u32::MAX) as usize, src.len());
        prop_assert_eq!(n.map.to_normalized(u32::MAX) as usize, text.len());
        Ok(())
    }

    /// Inputs the property test once failed on, replayed on every run: a
    /// Hollerith count after a continuation mark that is a digit (the
    /// test's check took the mark for part of the count).
    #[test]
    fn normalisation_holds_where_it_once_failed() {
        for src in [
            "      DATA X /\nAAA\t12HABCDEFGHIJKL",
            "      DATA X /\nAAA1012HABCDEFGHIJKL",
        ] {
            normalisation_holds(src, None).expect(src);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn normalisation_properties(src in input(), ll in line_length()) {
            normalisation_holds(&src, ll)?;
        }

        #[test]
        fn no_limit_only_inserts(src in fixed_like()) {
            let n = normalize_fixed(&src, None);
            // Without a limit nothing is removed, and each line gains only
            // the chars inserted: at most one '&', and blanks (glued
            // keywords); replacements keep the char count.
            prop_assert!(!(0..=src.len()).any(|o| n.map.is_removed(o as u32)));
            let images: std::collections::HashSet<usize> = (0..=src.len())
                .filter(|&o| src.is_char_boundary(o))
                .map(|o| n.map.to_normalized(o as u32) as usize)
                .collect();
            let mut start = 0;
            for (a, b) in src.split('\n').zip(n.text.split('\n')) {
                let inserted: Vec<char> = b
                    .char_indices()
                    .filter(|(k, _)| !images.contains(&(start + k)))
                    .map(|(_, c)| c)
                    .collect();
                start += b.len() + 1;
                let amps = inserted.iter().filter(|&&c| c == '&').count();
                prop_assert!(amps <= 1, "{:?} -> {:?}", a, b);
                prop_assert!(
                    inserted.iter().all(|&c| c == '&' || c == ' '),
                    "{:?} -> {:?}", a, b
                );
                let (ca, cb) = (a.chars().count(), b.chars().count());
                prop_assert_eq!(cb, ca + inserted.len(), "{:?} -> {:?}", a, b);
                if amps == inserted.len() {
                    prop_assert!(cb == ca || cb == ca + 1, "{:?} -> {:?}", a, b);
                }
            }
        }
    }
}
