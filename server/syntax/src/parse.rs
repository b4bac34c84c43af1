//! Parsing a file: pick the source form, normalise fixed form to free form
//! (line-preserving, with an offset map back to the original), cut the text
//! into top-level units ([`crate::chunks`]) and parse each unit into its own
//! tree-sitter tree. Syntax errors become diagnostics in original offsets.

use crate::char_length::blank_declarator_lengths;
use crate::chunks::{split_units, ChunkSpan};
use crate::dangling::{dangling_statements, Dangling};
use crate::diagnostic::{Diagnostic, TextRange};
use crate::fixed_form::{normalize_fixed, OffsetMap};
use crate::free_form::join_real_literals;
use crate::rules::{Rule, SYNTAX_ERROR, UNCLOSED_CONSTRUCT, UNSUPPORTED};
use crate::source_form::SourceForm;
use std::path::PathBuf;
use tree_sitter::{Node, Parser, Point, Range, Tree};

/// One top-level program unit's tree. Node offsets are offsets into
/// [`ParsedFile::parse_text`] (the whole file, not the chunk).
pub struct ParsedChunk {
    pub span: ChunkSpan,
    pub tree: Tree,
}

/// A parsed file. Trees index `parse_text()`; diagnostics and every range
/// handed to later stages are in offsets of the original `text`
/// (use [`ParsedFile::to_original`]).
pub struct ParsedFile {
    pub path: PathBuf,
    pub form: SourceForm,
    pub text: String,
    /// Normalised text for fixed form; `None` for free form (the trees
    /// index `text` itself).
    pub normalized: Option<String>,
    pub map: OffsetMap,
    pub chunks: Vec<ParsedChunk>,
    pub diagnostics: Vec<Diagnostic>,
}

impl ParsedFile {
    /// The text the trees were built from.
    pub fn parse_text(&self) -> &str {
        self.normalized.as_deref().unwrap_or(&self.text)
    }
    /// Maps a range of `parse_text()` to the original text.
    pub fn to_original(&self, start: usize, end: usize) -> TextRange {
        if self.map.is_identity() {
            TextRange::new(start as u32, end as u32)
        } else {
            self.map
                .range_to_original(TextRange::new(start as u32, end as u32))
        }
    }
    pub fn node_range(&self, node: Node) -> TextRange {
        self.to_original(node.start_byte(), node.end_byte())
    }
    pub fn has_errors(&self) -> bool {
        self.diagnostics
            .iter()
            .any(|d| d.severity == crate::diagnostic::Severity::Error)
    }
}

/// A reusable parser for Fortran (one per thread).
pub struct FortranParser {
    parser: Parser,
}

impl FortranParser {
    pub fn new() -> FortranParser {
        let mut parser = Parser::new();
        // The grammar is compiled in; loading it only fails on an ABI
        // mismatch between the crates, which the build pins.
        parser
            .set_language(&tree_sitter_fortran::LANGUAGE.into())
            .expect("tree-sitter-fortran ABI matches tree-sitter");
        FortranParser { parser }
    }

    pub fn parse(&mut self, path: PathBuf, text: String, form: SourceForm) -> ParsedFile {
        self.parse_with(path, text, form, None)
    }

    /// Parses `text` that holds one top-level program unit (a chunk the
    /// language server cut out of a file) as a single tree. `old` is the
    /// chunk's previous tree, already adjusted with `Tree::edit`: tree-sitter
    /// then reuses what the edit did not touch. Only free-form text can reuse
    /// a tree (fixed-form normalisation moves offsets).
    pub fn parse_unit(
        &mut self,
        path: PathBuf,
        text: String,
        form: SourceForm,
        old: Option<&Tree>,
    ) -> ParsedFile {
        let old = if form == SourceForm::Free { old } else { None };
        self.parse_with(path, text, form, Some(old))
    }

    /// `single`: `None` cuts the text into units; `Some(old)` parses it as
    /// one chunk, reusing `old` when given.
    fn parse_with(
        &mut self,
        path: PathBuf,
        text: String,
        form: SourceForm,
        single: Option<Option<&Tree>>,
    ) -> ParsedFile {
        let mut diagnostics = Vec::new();
        let (normalized, map) = match form {
            SourceForm::Free => {
                let joined = join_real_literals(&text);
                let source = joined.as_deref().unwrap_or(&text);
                let blanked = blank_declarator_lengths(source).or(joined);
                (blanked, OffsetMap::identity())
            }
            SourceForm::Fixed(opts) => {
                let n = normalize_fixed(&text, opts.line_length);
                diagnostics.extend(n.diagnostics);
                let text = blank_declarator_lengths(&n.text).unwrap_or(n.text);
                (Some(text), n.map)
            }
        };
        let mut file = ParsedFile {
            path,
            form,
            text,
            normalized,
            map,
            chunks: Vec::new(),
            diagnostics: Vec::new(),
        };
        let ptext = file.parse_text();
        let spans = match single {
            None => split_units(ptext),
            Some(_) => vec![whole(ptext)],
        };
        let mut chunks = Vec::with_capacity(spans.len());
        let mut syntax = Vec::new();
        for span in spans {
            let tree = match single {
                Some(old) => {
                    // One chunk covering the text: no included ranges.
                    let _ = self.parser.set_included_ranges(&[]);
                    self.parser.parse(ptext, old)
                }
                None => self.parse_chunk(ptext, &span),
            };
            if let Some(tree) = tree {
                let mut found = Vec::new();
                collect_syntax_errors(tree.root_node(), ptext, &mut found);
                let dangling =
                    dangling_statements(ptext, span.range.start as usize, span.range.end as usize);
                if !dangling.is_empty() {
                    found.retain(|e| !follows_from(&dangling, ptext, e));
                    for d in dangling {
                        found.push((d.start, d.end, &SYNTAX_ERROR, d.message));
                    }
                    found.sort_by_key(|e| e.0);
                }
                syntax.extend(found);
                chunks.push(ParsedChunk { span, tree });
            }
        }
        for (start, end, code, msg) in syntax {
            diagnostics.push(Diagnostic::new(code, file.to_original(start, end), msg));
        }
        file.chunks = chunks;
        file.diagnostics = diagnostics;
        file
    }

    /// Parses one chunk of `text`, keeping absolute offsets.
    pub fn parse_chunk(&mut self, text: &str, span: &ChunkSpan) -> Option<Tree> {
        let start = span.range.start as usize;
        let end = span.range.end as usize;
        let range = Range {
            start_byte: start,
            end_byte: end,
            start_point: Point::new(span.first_line as usize, 0),
            end_point: point_at(text, end, span),
        };
        self.parser.set_included_ranges(&[range]).ok()?;
        self.parser.parse(text, None)
    }
}

impl Default for FortranParser {
    fn default() -> Self {
        Self::new()
    }
}

/// A span covering all of `text`.
fn whole(text: &str) -> ChunkSpan {
    let lines = text.matches('\n').count() as u32;
    ChunkSpan {
        range: TextRange::new(0, text.len() as u32),
        first_line: 0,
        last_line: if text.ends_with('\n') {
            lines.saturating_sub(1)
        } else {
            lines
        },
    }
}

fn point_at(text: &str, end: usize, span: &ChunkSpan) -> Point {
    // Chunks are whole lines: the end is at column 0 of the line after the
    // chunk, unless the file ends without a newline.
    let before = &text.as_bytes()[span.range.start as usize..end];
    if before.last() == Some(&b'\n') || before.is_empty() {
        Point::new(span.last_line as usize + 1, 0)
    } else {
        let col = before
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(before.len(), |p| before.len() - p - 1);
        Point::new(span.last_line as usize, col)
    }
}

type SyntaxError = (usize, usize, &'static Rule, String);

fn collect_syntax_errors(root: Node, text: &str, out: &mut Vec<SyntaxError>) {
    const MAX_PER_CHUNK: usize = 20;
    let start_len = out.len();
    let mut stack = vec![root];
    while let Some(node) = stack.pop() {
        if out.len() - start_len >= MAX_PER_CHUNK {
            break;
        }
        if !node.has_error() {
            continue;
        }
        if node.is_missing() {
            out.push(describe_missing(node, text));
            continue;
        }
        if node.is_error() {
            out.push(describe_error(node, text));
            continue;
        }
        let mut cursor = node.walk();
        let children: Vec<Node> = node.children(&mut cursor).collect();
        for child in children.into_iter().rev() {
            stack.push(child);
        }
    }
    out[start_len..].sort_by_key(|e| e.0);
}

/// Whether a syntax error the grammar reports is only the consequence of
/// a statement left without its last operand: a unit or construct "never
/// closed", or an error from that statement to the end of the line after
/// it.
fn follows_from(dangling: &[Dangling], text: &str, e: &SyntaxError) -> bool {
    std::ptr::eq(e.2, &UNCLOSED_CONSTRUCT)
        || dangling.iter().any(|d| {
            let rest = text.get(d.end..).unwrap_or("");
            let next_line = rest
                .find('\n')
                .map(|i| d.end + i + 1)
                .and_then(|from| {
                    let after = text.get(from..)?;
                    let skip = after.len() - after.trim_start().len();
                    Some(line_end(text, from + skip))
                })
                .unwrap_or(text.len());
            (d.start..=next_line).contains(&e.0)
        })
}

fn node_text<'t>(n: Node, text: &'t str) -> &'t str {
    text.get(n.start_byte()..n.end_byte()).unwrap_or("")
}

fn line_end(text: &str, at: usize) -> usize {
    text[at.min(text.len())..]
        .find('\n')
        .map_or(text.len(), |i| at + i)
}

fn kids(n: Node) -> Vec<Node> {
    let mut c = n.walk();
    n.children(&mut c).collect()
}

const UNIT_KINDS: &[&str] = &["subroutine", "function", "program", "module"];

/// A MISSING token. When the unit's own `end` is missing, an inner
/// construct whose `end` statement is a bare `END` took it: that construct
/// is the one left open.
fn describe_missing(node: Node, text: &str) -> SyntaxError {
    let at = node.start_byte();
    let parent = node.parent();
    let unit = parent
        .filter(|p| p.kind().starts_with("end_"))
        .and_then(|p| p.parent())
        .filter(|g| UNIT_KINDS.contains(&g.kind()));
    if let Some(unit) = unit {
        if let Some((opener, name)) = construct_closed_by_bare_end(unit, text) {
            return (
                opener.start_byte(),
                line_end(text, opener.start_byte()),
                &UNCLOSED_CONSTRUCT,
                format!(
                    "`{name}` construct is never closed: the `END` meant for the {} closes it instead",
                    unit.kind()
                ),
            );
        }
        return (
            unit.start_byte(),
            line_end(text, unit.start_byte()),
            &UNCLOSED_CONSTRUCT,
            format!(
                "`{}` is never closed (missing `end {}`)",
                unit.kind(),
                unit.kind()
            ),
        );
    }
    (
        at,
        at,
        &SYNTAX_ERROR,
        format!("syntax error: missing `{}`", node.kind().replace('_', " ")),
    )
}

fn construct_closed_by_bare_end<'t>(
    unit: Node<'t>,
    text: &str,
) -> Option<(Node<'t>, &'static str)> {
    let mut stack = vec![unit];
    let mut found = None;
    while let Some(n) = stack.pop() {
        for c in kids(n) {
            let name = match c.kind() {
                "do_loop" => Some(("end_do_loop_statement", "do")),
                "if_statement" => Some(("end_if_statement", "if")),
                "select_case_statement" => Some(("end_select_statement", "select case")),
                _ => None,
            };
            if let Some((end_kind, name)) = name {
                let bare = kids(c).iter().any(|e| {
                    e.kind() == end_kind && node_text(*e, text).trim().eq_ignore_ascii_case("end")
                });
                if bare && found.is_none() {
                    found = Some((c, name));
                }
            }
            if c.child_count() > 0 && !UNIT_KINDS.contains(&c.kind()) {
                stack.push(c);
            }
        }
    }
    found
}

/// Node kinds that are whole statements or constructs: an ERROR node
/// holding only these plus loose tokens lost track of one construct.
fn is_statement_like(kind: &str) -> bool {
    kind.ends_with("_statement")
        || kind.ends_with("_declaration")
        || kind.ends_with("_modification")
        || matches!(
            kind,
            "do_loop"
                | "comment"
                | "statement_label"
                | "subroutine"
                | "function"
                | "module"
                | "program"
                | "internal_procedures"
                | "derived_type_definition"
                | "interface"
                | "subroutine_call"
        )
}

/// Turns an ERROR node into a message, looking inside it for the real
/// cause: an IF or DO construct that never gets its END (unclosed), an
/// assigned GO TO (unsupported), or the first line of loose tokens that do
/// not form a statement.
fn describe_error(node: Node, text: &str) -> SyntaxError {
    let children = kids(node);
    // A construct whose END IF / END DO is a bare `END` that was meant for
    // the unit.
    if let Some((opener, name)) = construct_closed_by_bare_end(node, text) {
        return unclosed(opener, name, text);
    }
    // An IF ... THEN with no END IF.
    for c in &children {
        if c.kind() == "if_statement" {
            let ks = kids(*c);
            let has_then = ks
                .iter()
                .any(|k| !k.is_named() && node_text(*k, text).eq_ignore_ascii_case("then"));
            let has_end = ks.iter().any(|k| k.kind() == "end_if_statement");
            if has_then && !has_end {
                return unclosed(*c, "if", text);
            }
        }
    }
    // A DO statement left loose, with no loose END DO after it.
    if let Some(d) = children.iter().find(|c| c.kind() == "do_statement") {
        let tokens: Vec<String> = children
            .iter()
            .filter(|c| !c.is_named() && c.start_byte() > d.start_byte())
            .map(|c| node_text(*c, text).to_ascii_lowercase())
            .collect();
        let end_do = tokens.iter().any(|t| t == "enddo")
            || tokens.windows(2).any(|w| w[0] == "end" && w[1] == "do");
        if !end_do {
            return unclosed(*d, "do", text);
        }
    }
    let loose = first_loose(node);
    // Nothing but whole statements after a unit header: the unit's END is
    // missing (typical of code being typed).
    if let (None, Some(first)) = (loose, children.first()) {
        const HEADERS: &[(&str, &str)] = &[
            ("subroutine_statement", "subroutine"),
            ("function_statement", "function"),
            ("program_statement", "program"),
            ("module_statement", "module"),
        ];
        if let Some((_, unit)) = HEADERS.iter().find(|(k, _)| *k == first.kind()) {
            return (
                first.start_byte(),
                line_end(text, first.start_byte()),
                &UNCLOSED_CONSTRUCT,
                format!("`{unit}` is never closed (missing `end {unit}`)"),
            );
        }
    }
    let start = loose.unwrap_or(node.start_byte());
    if let Some(e) = unfinished_line_before(node, start, text) {
        return e;
    }
    let end = line_end(text, start).min(node.end_byte().max(start));
    let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
    let line = &text[line_start..line_end(text, start)];
    if let Some(col) = assigned_goto(line) {
        return (
            line_start + col,
            line_end(text, start),
            &UNSUPPORTED,
            "dfort does not support assigned GO TO (`go to` a variable)".to_string(),
        );
    }
    let snippet: String = text[start..end].trim().chars().take(40).collect();
    let msg = if snippet.is_empty() {
        "syntax error".to_string()
    } else {
        format!("syntax error: unexpected `{snippet}`")
    };
    (start, end, &SYNTAX_ERROR, msg)
}

/// A statement the parser's recovery joined to the next line (`x` alone,
/// then `i = i + 1` read as `x = i + 1` with `i` unexpected): the error is
/// the unfinished line, where the user is typing.
fn unfinished_line_before(node: Node, start: usize, text: &str) -> Option<SyntaxError> {
    let statement = node.parent().filter(|p| p.kind().ends_with("_statement"))?;
    let from = statement.start_byte();
    let (first, _) = text.get(from..start)?.split_once('\n')?;
    let code = first.split('!').next().unwrap_or(first).trim_end();
    if code.trim().is_empty() || code.ends_with('&') {
        return None;
    }
    let shown: String = code.trim().chars().take(40).collect();
    Some((
        from,
        from + code.len(),
        &SYNTAX_ERROR,
        format!("syntax error: `{shown}` is not a whole statement"),
    ))
}

fn unclosed(opener: Node, name: &str, text: &str) -> SyntaxError {
    (
        opener.start_byte(),
        line_end(text, opener.start_byte()),
        &UNCLOSED_CONSTRUCT,
        format!("`{name}` construct is never closed (missing `end {name}`)"),
    )
}

/// Start of the first piece of an ERROR node that is not a whole statement
/// (descending into nested ERROR nodes).
fn first_loose(node: Node) -> Option<usize> {
    for c in kids(node) {
        if c.is_error() {
            return first_loose(c).or(Some(c.start_byte()));
        }
        if !c.is_named() || !is_statement_like(c.kind()) {
            return Some(c.start_byte());
        }
        if c.has_error() {
            if let Some(x) = first_error_inside(c) {
                return Some(x);
            }
        }
    }
    None
}

fn first_error_inside(n: Node) -> Option<usize> {
    for c in kids(n) {
        if c.is_error() || c.is_missing() {
            return first_loose(c).or(Some(c.start_byte()));
        }
        if c.has_error() {
            return first_error_inside(c);
        }
    }
    None
}

/// Column of `go to <name>` (an assigned GO TO) in a statement line.
fn assigned_goto(line: &str) -> Option<usize> {
    let code = crate::chunks::code_part(line);
    let lower = code.to_ascii_lowercase();
    let trimmed = lower.trim_start_matches(|c: char| c.is_whitespace() || c.is_ascii_digit());
    let col = lower.len() - trimmed.len();
    let rest = trimmed
        .strip_prefix("go")?
        .trim_start()
        .strip_prefix("to")?
        .trim();
    let rest = rest.split(',').next()?.trim();
    let first = rest.chars().next()?;
    (first.is_ascii_alphabetic()
        && rest
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ' ' || c == '(' || c == ')'))
    .then_some(col)
}
