//! Parsing a file: pick the source form, normalise fixed form to free form
//! (line-preserving, with an offset map back to the original), cut the text
//! into top-level units ([`crate::chunks`]) and parse each unit into its own
//! tree-sitter tree. Syntax errors become diagnostics in original offsets.

use crate::chunks::{split_units, ChunkSpan};
use crate::diagnostic::{Diagnostic, TextRange};
use crate::fixed_form::{normalize_fixed, OffsetMap};
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
        let mut diagnostics = Vec::new();
        let (normalized, map) = match form {
            SourceForm::Free => (None, OffsetMap::identity()),
            SourceForm::Fixed(opts) => {
                let n = normalize_fixed(&text, opts.line_length);
                diagnostics.extend(n.diagnostics);
                (Some(n.text), n.map)
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
        let spans = split_units(ptext);
        let mut chunks = Vec::with_capacity(spans.len());
        let mut syntax = Vec::new();
        for span in spans {
            if let Some(tree) = self.parse_chunk(ptext, &span) {
                collect_syntax_errors(tree.root_node(), ptext, &mut syntax);
                chunks.push(ParsedChunk { span, tree });
            }
        }
        for (start, end, code, msg) in syntax {
            diagnostics.push(Diagnostic::error(code, file.to_original(start, end), msg));
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
        let tree = self.parser.parse(text, None);
        self.parser.reset();
        tree
    }
}

impl Default for FortranParser {
    fn default() -> Self {
        Self::new()
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

/// Opening statements of constructs whose `end` may be missing, with the
/// construct name used in messages.
const CONSTRUCT_OPENERS: &[(&str, &str)] = &[
    ("if_statement", "if"),
    ("do_loop", "do"),
    ("do_statement", "do"),
    ("select_case_statement", "select case"),
    ("where_statement", "where"),
    ("subroutine", "subroutine"),
    ("function", "function"),
    ("module", "module"),
    ("program", "program"),
];

type SyntaxError = (usize, usize, &'static str, String);

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
            let what = node.kind();
            let at = node.start_byte();
            out.push((
                at,
                at,
                "syntax-error",
                format!("syntax error: missing `{}`", what.replace('_', " ")),
            ));
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

/// Turns an ERROR node into a message: an unclosed construct when the
/// error holds an opening statement with no end, else the unexpected text.
fn describe_error(node: Node, text: &str) -> SyntaxError {
    // An ERROR node whose first child opens a block construct and that runs
    // to the end of the unit is an unclosed construct.
    if let Some(first) = first_meaningful_child(node) {
        let opener = opening_construct(first, text);
        if let Some(name) = opener {
            let line_end = text[first.start_byte()..]
                .find('\n')
                .map_or(text.len(), |i| first.start_byte() + i);
            return (
                first.start_byte(),
                line_end,
                "unclosed-construct",
                format!("`{name}` construct is never closed (missing `end {name}`)"),
            );
        }
    }
    let start = node.start_byte();
    let snippet: String = text[start..node.end_byte().min(text.len())]
        .lines()
        .next()
        .unwrap_or("")
        .trim()
        .chars()
        .take(40)
        .collect();
    let first_line_end = text[start..]
        .find('\n')
        .map_or(node.end_byte(), |i| (start + i).min(node.end_byte()));
    let msg = if snippet.is_empty() {
        "syntax error".to_string()
    } else {
        format!("syntax error: unexpected `{snippet}`")
    };
    (start, first_line_end.max(start), "syntax-error", msg)
}

fn first_meaningful_child(node: Node) -> Option<Node> {
    let mut cursor = node.walk();
    let found = node
        .children(&mut cursor)
        .find(|c| c.kind() != "comment" && c.kind() != "statement_label");
    found
}

fn opening_construct(node: Node, text: &str) -> Option<&'static str> {
    for (kind, name) in CONSTRUCT_OPENERS {
        if node.kind() == *kind {
            return Some(name);
        }
    }
    // Keyword tokens directly inside the ERROR node: `if ( ... ) then` or `do`.
    let word = text
        .get(node.start_byte()..node.end_byte())?
        .trim()
        .to_ascii_lowercase();
    match word.as_str() {
        "do" => Some("do"),
        "if" => Some("if"),
        _ => None,
    }
}
