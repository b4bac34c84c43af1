//! A cheap line scan that cuts a (free-form or normalised fixed-form) file
//! into top-level program units before parsing, so each unit gets its own
//! syntax tree: an unclosed construct (a deleted `end if`) then damages only
//! its own unit, and later stages can reparse and re-analyse one unit at a
//! time.
//!
//! The scan looks only at the first words of each statement line. It knows
//! unit headers (with prefixes such as `recursive`, `pure` and a type spec
//! before `function`), unit ends (`end`, `end subroutine`, `endfunction`, ...),
//! `contains` and `interface` blocks. Text before the first unit and between
//! units joins the following unit; statements outside any unit form an
//! implicit main program, as in Fortran 77.

use crate::diagnostic::TextRange;

/// A top-level program unit's byte range (whole lines) in the parsed text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChunkSpan {
    pub range: TextRange,
    /// 0-based first and last line (inclusive) of the range.
    pub first_line: u32,
    pub last_line: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LineKind {
    /// Comment, blank, or continuation of the previous statement.
    Other,
    /// `program`, `subroutine`, `function`, `module`, `block data`, ...
    UnitStart,
    /// `end` or `end <unit keyword>`.
    UnitEnd,
    Contains,
    InterfaceStart,
    InterfaceEnd,
    /// Any other statement.
    Statement,
}

/// Cuts `text` into top-level units. Every byte of `text` belongs to exactly
/// one chunk; an empty or comment-only file gives one chunk.
pub fn split_units(text: &str) -> Vec<ChunkSpan> {
    let mut chunks = Vec::new();
    let mut chunk_start: usize = 0;
    let mut chunk_first_line: u32 = 0;
    // Nesting depth of program units; 0 = between units.
    let mut depth: u32 = 0;
    // Per open unit: whether `contains` was seen at that level.
    let mut contains_seen: Vec<bool> = Vec::new();
    let mut interface_depth: u32 = 0;
    let mut implicit_main = false;
    let mut continued = false;
    let mut offset = 0usize;
    let mut line_no: u32 = 0;
    let bytes = text.as_bytes();

    while offset < bytes.len() {
        let line_end = match text[offset..].find('\n') {
            Some(i) => offset + i + 1,
            None => bytes.len(),
        };
        let line = &text[offset..line_end];
        let (kind, ends_with_amp) = if continued {
            (LineKind::Other, code_ends_with_ampersand(line))
        } else {
            (classify(line), code_ends_with_ampersand(line))
        };
        if kind != LineKind::Other || !is_comment_or_blank(line) {
            continued = ends_with_amp;
        }

        let mut close_here = false;
        match kind {
            LineKind::InterfaceStart if depth > 0 || implicit_main => interface_depth += 1,
            LineKind::InterfaceEnd if interface_depth > 0 => interface_depth -= 1,
            _ if interface_depth > 0 => {}
            LineKind::UnitStart => {
                if implicit_main {
                    // A unit header after main-program statements that never
                    // reached `end`: the implicit main program ends before it.
                    push_chunk(&mut chunks, chunk_start, offset, chunk_first_line, line_no);
                    chunk_start = offset;
                    chunk_first_line = line_no;
                    implicit_main = false;
                } else if depth > 0 && contains_seen.last() == Some(&false) {
                    // A new unit inside a unit without `contains`: the open
                    // units lost their `end`. Close them before this line.
                    push_chunk(&mut chunks, chunk_start, offset, chunk_first_line, line_no);
                    chunk_start = offset;
                    chunk_first_line = line_no;
                    depth = 0;
                    contains_seen.clear();
                }
                depth += 1;
                contains_seen.push(false);
            }
            LineKind::Contains => {
                if let Some(last) = contains_seen.last_mut() {
                    *last = true;
                }
            }
            LineKind::UnitEnd => {
                if implicit_main {
                    implicit_main = false;
                    close_here = true;
                } else if depth > 0 {
                    depth -= 1;
                    contains_seen.pop();
                    close_here = depth == 0;
                }
            }
            LineKind::Statement if depth == 0 && !implicit_main => implicit_main = true,
            _ => {}
        }
        offset = line_end;
        line_no += 1;
        if close_here {
            push_chunk(&mut chunks, chunk_start, offset, chunk_first_line, line_no);
            chunk_start = offset;
            chunk_first_line = line_no;
            interface_depth = 0;
        }
    }
    if chunk_start < bytes.len() || chunks.is_empty() {
        let last_line = line_no.max(chunk_first_line + 1);
        if chunk_start < bytes.len() && !chunks.is_empty() && depth == 0 && !implicit_main {
            // Trailing comments or blank lines after the last unit join it.
            if let Some(last) = chunks.last_mut() {
                last.range.end = bytes.len() as u32;
                last.last_line = last_line.saturating_sub(1);
            }
        } else {
            push_chunk(
                &mut chunks,
                chunk_start,
                bytes.len(),
                chunk_first_line,
                last_line,
            );
        }
    }
    chunks
}

/// What [`split_units`] and [`split_fine`] read of one line: its kind, and
/// whether it is a comment or blank and continues on the next. An edit
/// within one line that keeps the line's signature — when the line's
/// kind is a plain statement or other text — cuts the text into the same
/// chunks (at the same line numbers) as before.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LineSignature {
    kind: LineKind,
    ends_with_ampersand: bool,
    comment_or_blank: bool,
}

impl LineSignature {
    pub fn of(line: &str) -> Self {
        LineSignature {
            kind: classify(line),
            ends_with_ampersand: code_ends_with_ampersand(line),
            comment_or_blank: is_comment_or_blank(line),
        }
    }

    /// Whether the line neither opens, closes nor divides a unit or an
    /// interface: what an edit may change inside it without moving a
    /// chunk's boundary, as long as the signature stays the same.
    pub fn is_plain(&self) -> bool {
        matches!(self.kind, LineKind::Statement | LineKind::Other)
    }
}

/// What a chunk of [`split_fine`] holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ChunkRole {
    /// A whole top-level unit (with the comments before it).
    Unit,
    /// A module from its header to its `contains` line (included).
    ModuleHead,
    /// One procedure of the module whose head precedes it.
    ModuleProcedure,
    /// The module's `end` line (and what trails it).
    ModuleTail,
}

/// Like [`split_units`], but a module with `contains` is cut further:
/// its head (up to `contains`), each module procedure, and its `end`
/// line. An edit inside one module procedure then reparses only that
/// procedure. Modules whose structure the line scan cannot follow stay
/// whole.
pub fn split_fine(text: &str) -> Vec<(ChunkSpan, ChunkRole)> {
    let mut out = Vec::new();
    for span in split_units(text) {
        match module_parts(text, &span) {
            Some(parts) => out.extend(parts),
            None => out.push((span, ChunkRole::Unit)),
        }
    }
    out
}

/// The parts of a module chunk: `None` when it is not a module with a
/// `contains` line and an `end` line.
fn module_parts(text: &str, span: &ChunkSpan) -> Option<Vec<(ChunkSpan, ChunkRole)>> {
    let start = span.range.start as usize;
    let end = span.range.end as usize;
    let mut offset = start;
    let mut line_no = span.first_line;
    let mut depth = 0u32;
    let mut interface_depth = 0u32;
    let mut continued = false;
    let mut is_module = false;
    // (byte offset after the `contains` line, its line number + 1)
    let mut contains: Option<(usize, u32)> = None;
    let mut end_line: Option<(usize, u32)> = None;
    while offset < end {
        let line_end = text[offset..end].find('\n').map_or(end, |i| offset + i + 1);
        let line = &text[offset..line_end];
        let kind = if continued {
            LineKind::Other
        } else {
            classify(line)
        };
        if kind != LineKind::Other || !is_comment_or_blank(line) {
            continued = code_ends_with_ampersand(line);
        }
        match kind {
            LineKind::InterfaceStart if depth > 0 => interface_depth += 1,
            LineKind::InterfaceEnd if interface_depth > 0 => interface_depth -= 1,
            _ if interface_depth > 0 => {}
            LineKind::UnitStart => {
                if depth == 0 {
                    let w = leading_words(line, 2);
                    is_module = w.first().is_some_and(|f| f == "module");
                    if !is_module {
                        return None;
                    }
                }
                depth += 1;
            }
            LineKind::Contains if depth == 1 && contains.is_none() => {
                contains = Some((line_end, line_no + 1));
            }
            LineKind::UnitEnd if depth > 0 => {
                depth -= 1;
                if depth == 0 {
                    end_line = Some((offset, line_no));
                    break;
                }
            }
            _ => {}
        }
        offset = line_end;
        line_no += 1;
    }
    let ((body_start, body_line), (tail_start, tail_line)) = (contains?, end_line?);
    if !is_module || tail_start < body_start {
        return None;
    }
    let mut parts = vec![(
        ChunkSpan {
            range: TextRange::new(start as u32, body_start as u32),
            first_line: span.first_line,
            last_line: body_line.saturating_sub(1).max(span.first_line),
        },
        ChunkRole::ModuleHead,
    )];
    if tail_start > body_start {
        for sub in split_units(&text[body_start..tail_start]) {
            parts.push((
                ChunkSpan {
                    range: TextRange::new(
                        sub.range.start + body_start as u32,
                        sub.range.end + body_start as u32,
                    ),
                    first_line: sub.first_line + body_line,
                    last_line: sub.last_line + body_line,
                },
                ChunkRole::ModuleProcedure,
            ));
        }
    }
    parts.push((
        ChunkSpan {
            range: TextRange::new(tail_start as u32, end as u32),
            first_line: tail_line,
            last_line: span.last_line.max(tail_line),
        },
        ChunkRole::ModuleTail,
    ));
    Some(parts)
}

fn push_chunk(chunks: &mut Vec<ChunkSpan>, start: usize, end: usize, first: u32, end_line: u32) {
    if end <= start && !chunks.is_empty() {
        return;
    }
    chunks.push(ChunkSpan {
        range: TextRange::new(start as u32, end as u32),
        first_line: first,
        last_line: end_line.saturating_sub(1).max(first),
    });
}

fn is_comment_or_blank(line: &str) -> bool {
    let t = line.trim_start();
    t.is_empty() || t.starts_with('!')
}

/// Whether the code part of a line (before a `!` comment outside quotes)
/// ends with `&`.
fn code_ends_with_ampersand(line: &str) -> bool {
    line.contains('&') && code_part(line).trim_end().ends_with('&')
}

/// What a byte of a (free-form) line lies in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinePart {
    Code,
    /// A character literal.
    Literal,
    /// The `!` comment starting at this byte.
    Comment(usize),
}

/// What byte `col` of `line` lies in (quotes respected; a position past
/// the end is judged as the end of the line).
pub fn line_part_at(line: &str, col: usize) -> LinePart {
    let mut quote: Option<u8> = None;
    for (i, b) in line.bytes().enumerate().take(col) {
        match quote {
            Some(q) if b == q => quote = None,
            Some(_) => {}
            None => match b {
                b'\'' | b'"' => quote = Some(b),
                b'!' => return LinePart::Comment(i),
                _ => {}
            },
        }
    }
    if quote.is_some() {
        LinePart::Literal
    } else {
        LinePart::Code
    }
}

/// The line without its `!` comment (quotes respected).
pub(crate) fn code_part(line: &str) -> &str {
    match line_part_at(line, line.len()) {
        LinePart::Comment(i) => &line[..i],
        _ => line,
    }
}

/// Where a line's statement starts: after blanks, a numeric label and a
/// leading `&`.
fn statement_start(b: &[u8]) -> usize {
    let mut i = 0;
    while i < b.len() && (b[i] == b' ' || b[i] == b'\t') {
        i += 1;
    }
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    while i < b.len() && (b[i] == b' ' || b[i] == b'\t' || b[i] == b'&') {
        i += 1;
    }
    i
}

/// Lower-case words at the start of a statement, skipping a numeric label,
/// a leading `&`, and parenthesised groups / `*len` after type keywords.
fn leading_words(line: &str, max: usize) -> Vec<String> {
    let code = code_part(line);
    let mut words = Vec::new();
    let b = code.as_bytes();
    let mut i = statement_start(b);
    while i < b.len() && words.len() < max {
        let c = b[i];
        if c.is_ascii_alphabetic() {
            let s = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            words.push(code[s..i].to_ascii_lowercase());
        } else if c == b'(' {
            // Skip a balanced group (kind selectors, `type(t)`).
            let mut depth = 0i32;
            while i < b.len() {
                match b[i] {
                    b'(' => depth += 1,
                    b')' => {
                        depth -= 1;
                        if depth == 0 {
                            i += 1;
                            break;
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
            words.push("(".to_string());
        } else if c == b'*' {
            i += 1;
            while i < b.len() && (b[i].is_ascii_digit() || b[i] == b' ') {
                i += 1;
            }
            words.push("*".to_string());
        } else if c == b'\n' || c == b'\r' {
            break;
        } else if c == b' ' || c == b'\t' || c == b',' {
            i += 1;
            if c == b',' {
                words.push(",".to_string());
            }
        } else {
            words.push((c as char).to_string());
            break;
        }
    }
    words
}

const PREFIXES: &[&str] = &[
    "recursive",
    "pure",
    "impure",
    "elemental",
    "module",
    "non_recursive",
];
const TYPE_WORDS: &[&str] = &[
    "integer",
    "real",
    "double",
    "precision",
    "complex",
    "logical",
    "character",
    "type",
    "doubleprecision",
    "doublecomplex",
];
const END_KINDS: &[&str] = &[
    "subroutine",
    "function",
    "program",
    "module",
    "submodule",
    "block",
    "blockdata",
];

/// First words that can start a line [`classify`] does not call a plain
/// statement (besides those starting with `end`).
const HEADER_WORDS: &[&str] = &[
    "contains",
    "interface",
    "abstract",
    "program",
    "submodule",
    "blockdata",
    "block",
    "subroutine",
    "function",
];

/// The first word of a statement line when it is alphabetic (after blanks,
/// a label and a leading `&`), as written.
fn first_word(line: &str) -> Option<&str> {
    let b = line.as_bytes();
    let mut i = statement_start(b);
    let s = i;
    if !b.get(s).is_some_and(|c| c.is_ascii_alphabetic()) {
        return None;
    }
    while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
        i += 1;
    }
    Some(&line[s..i])
}

fn classify(line: &str) -> LineKind {
    let t = line.trim_start();
    if t.is_empty() || t.starts_with('!') || t.starts_with('#') {
        return LineKind::Other;
    }
    // Most lines are plain statements: tell them by their first word
    // without collecting the others.
    if let Some(word) = first_word(line) {
        let is = |k: &&str| k.eq_ignore_ascii_case(word);
        let header = word.get(..3).is_some_and(|p| p.eq_ignore_ascii_case("end"))
            || HEADER_WORDS.iter().any(is)
            || PREFIXES.iter().any(is)
            || TYPE_WORDS.iter().any(is);
        if !header {
            return LineKind::Statement;
        }
    }
    let w = leading_words(line, 8);
    let Some(first) = w.first() else {
        return LineKind::Other;
    };
    let word = |i: usize| w.get(i).map(String::as_str).unwrap_or("");
    match first.as_str() {
        "end" => {
            let next = word(1);
            if next.is_empty() || next == ";" || END_KINDS.contains(&next) {
                return LineKind::UnitEnd;
            }
            if next == "interface" {
                return LineKind::InterfaceEnd;
            }
            return LineKind::Statement;
        }
        "endsubroutine" | "endfunction" | "endprogram" | "endmodule" | "endsubmodule"
        | "endblockdata" | "endblock" => {
            if first == "endblock" && word(1) != "data" {
                return LineKind::Statement;
            }
            return LineKind::UnitEnd;
        }
        "endinterface" => return LineKind::InterfaceEnd,
        "contains" if w.len() == 1 => return LineKind::Contains,
        "interface" | "abstract" if first == "interface" || word(1) == "interface" => {
            return LineKind::InterfaceStart;
        }
        "program" | "submodule" | "blockdata"
            if word(1)
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic())
                || first == "submodule"
                || first == "blockdata" =>
        {
            return LineKind::UnitStart;
        }
        "block" if word(1) == "data" => return LineKind::UnitStart,
        "module" => {
            let next = word(1);
            if next == "procedure" || next == "subroutine" || next == "function" {
                // `module procedure` inside an interface, or a separate
                // module procedure header (handled below).
                if next == "procedure" {
                    return LineKind::Statement;
                }
            } else if next.chars().next().is_some_and(|c| c.is_ascii_alphabetic()) {
                return LineKind::UnitStart;
            }
        }
        _ => {}
    }
    // [prefix...] [type-spec] (subroutine|function) name
    let mut i = 0;
    while i < w.len() {
        let s = word(i);
        if s == "subroutine" || s == "function" {
            let name = word(i + 1);
            if name.chars().next().is_some_and(|c| c.is_ascii_alphabetic()) {
                return LineKind::UnitStart;
            }
            return LineKind::Statement;
        }
        if PREFIXES.contains(&s) || TYPE_WORDS.contains(&s) || s == "(" || s == "*" {
            i += 1;
            continue;
        }
        break;
    }
    LineKind::Statement
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<(u32, u32)> {
        split_units(text)
            .iter()
            .map(|c| (c.first_line, c.last_line))
            .collect()
    }

    #[test]
    fn splits_top_level_units_only() {
        let src = "! header\nmodule m\ncontains\n subroutine a()\n end subroutine\n function f(x)\n end\nend module m\n\nsubroutine b\n  if (x) then\n  end if\nend\n";
        assert_eq!(lines(src), vec![(0, 7), (8, 12)]);
    }

    #[test]
    fn unclosed_unit_is_closed_at_next_header() {
        let src = "subroutine a\n x = 1\nsubroutine b\nend\n";
        assert_eq!(lines(src), vec![(0, 1), (2, 3)]);
    }

    #[test]
    fn typed_function_headers_and_prefixes() {
        for h in [
            "real(8) function f(x)",
            "double precision function f(x)",
            "recursive subroutine s(n)",
            "pure elemental real function g(x) result(y)",
            "REAL*8 FUNCTION H(X)",
            "character*(*) function c()",
            "100 subroutine s",
        ] {
            assert_eq!(classify(h), LineKind::UnitStart, "{h}");
        }
        for s in [
            "x = 1",
            "real :: x",
            "end if",
            "endif",
            "call subroutine_x(1)",
            "module procedure foo",
            "function_x = 2",
        ] {
            assert_ne!(classify(s), LineKind::UnitStart, "{s}");
        }
    }

    #[test]
    fn implicit_main_program() {
        let src = "      x = 1\n      print *, x\n      end\n      subroutine s\n      end\n";
        assert_eq!(lines(src), vec![(0, 2), (3, 4)]);
    }

    #[test]
    fn interface_bodies_do_not_end_units() {
        let src = "subroutine a\n interface\n  subroutine b(x)\n  end subroutine\n end interface\n call b(1)\nend subroutine\nsubroutine c\nend\n";
        assert_eq!(lines(src), vec![(0, 6), (7, 8)]);
    }

    #[test]
    fn continuation_lines_are_not_headers() {
        let src = "subroutine a(x, &\n  function)\nend\n";
        assert_eq!(lines(src), vec![(0, 2)]);
    }

    #[test]
    fn empty_and_comment_only() {
        assert_eq!(split_units("").len(), 1);
        assert_eq!(lines("! just a comment\n"), vec![(0, 0)]);
    }

    #[test]
    fn split_fine_cuts_modules_into_head_procedures_and_tail() {
        let text = "! lead\nmodule m\n  real :: a\n  interface\n    subroutine ext(x)\n    end subroutine ext\n  end interface\ncontains\n  ! doc of s\n  subroutine s(x)\n    if (x > 0) then\n    end if\n  end subroutine s\n  function f()\n  contains\n    subroutine inner\n    end subroutine\n  end function f\nend module m\n! trailing\nsubroutine top\nend\n";
        let parts = split_fine(text);
        let roles: Vec<ChunkRole> = parts.iter().map(|p| p.1).collect();
        assert_eq!(
            roles,
            [
                ChunkRole::ModuleHead,
                ChunkRole::ModuleProcedure,
                ChunkRole::ModuleProcedure,
                ChunkRole::ModuleTail,
                ChunkRole::Unit
            ]
        );
        let texts: Vec<&str> = parts
            .iter()
            .map(|(c, _)| &text[c.range.start as usize..c.range.end as usize])
            .collect();
        assert!(texts[0].starts_with("! lead") && texts[0].ends_with("contains\n"));
        assert!(texts[1].starts_with("  ! doc of s") && texts[1].ends_with("end subroutine s\n"));
        assert!(texts[2].starts_with("  function f()") && texts[2].ends_with("end function f\n"));
        assert_eq!(texts[3], "end module m\n");
        assert!(texts[4].starts_with("! trailing"));
        // Every byte in exactly one chunk, lines consistent with offsets.
        let mut at = 0;
        for (c, _) in &parts {
            assert_eq!(c.range.start as usize, at);
            at = c.range.end as usize;
            let first = text[..c.range.start as usize].matches('\n').count() as u32;
            assert_eq!(c.first_line, first, "{c:?}");
        }
        assert_eq!(at, text.len());
        // A module without `contains` stays whole.
        let plain = split_fine("module m\n  real :: a\nend module m\n");
        assert_eq!(plain.len(), 1);
        assert_eq!(plain[0].1, ChunkRole::Unit);
    }
}
