//! What the hover says on the C preprocessor's part of a document: a
//! macro the preprocessor replaced (its expansion and definition), a
//! macro an `#if`/`#ifdef`/`#ifndef`/`#elif` tests (defined or not
//! there, and what the directive decided), and any line an `#if` leaves
//! out (dfort neither reads nor analyses it, so nothing there is active
//! or recorded). Reads the preprocessor's records
//! ([`dfort_syntax::cpp::Preprocessed`]); decides nothing.

use crate::host::DocView;
use crate::hover::Hover;
use crate::preprocessing::{FileRead, PreprocessedDoc};
use crate::text::line_text;
use dfort_syntax::cpp::{Condition, ConditionOutcome, TestedMacro};
use dfort_syntax::TextRange;

/// The hover at `offset` of `doc` when it is on the preprocessor's part
/// of the document.
pub fn hover(doc: &DocView, offset: u32) -> Option<Hover> {
    let pp = doc.preprocessed.as_ref()?;
    let line = doc.lines.line_of(offset);
    let start = doc.lines.line_start(line)?;
    let col = (offset - start) as usize;
    macro_use(pp, start, line, col)
        .or_else(|| condition(doc, pp, line, offset))
        .or_else(|| left_out(doc, pp, line, offset))
}

/// A macro replaced at `col` of `line`: its expansion and definition.
fn macro_use(pp: &PreprocessedDoc, start: u32, line: u32, col: usize) -> Option<Hover> {
    let u = pp.macro_at(line, col)?;
    let defined = match u.defined_at {
        Some((file, line)) => {
            let f = pp.files.get(file as usize)?;
            format!("defined at {}", place(f, line))
        }
        None => COMMAND_LINE.to_string(),
    };
    let markdown = format!(
        "**{}** — C preprocessor macro, {defined}\n\nexpands here to\n\n```fortran\n{}\n```",
        u.name,
        u.expansion.trim()
    );
    let range = TextRange::new(start + u.columns.start as u32, start + u.columns.end as u32);
    Some(Hover { range, markdown })
}

const COMMAND_LINE: &str = "defined on the command line (-D), in dfort.toml or in the settings";

fn place(f: &FileRead, line: u32) -> String {
    format!("{}:{}", f.path.display(), line + 1)
}

/// The name (as written) at `offset` of `text`, with its range.
fn raw_word(text: &str, offset: u32) -> Option<(TextRange, &str)> {
    let r = crate::text::name_span(text, offset)?;
    Some((r, &text[r.start as usize..r.end as usize]))
}

/// On a conditional directive's line: the macro under the cursor (or,
/// elsewhere on the line, every macro it tests) and what the directive
/// decided.
fn condition(doc: &DocView, pp: &PreprocessedDoc, line: u32, offset: u32) -> Option<Hover> {
    let c = pp
        .pp
        .conditions
        .iter()
        .find(|c| c.file == 0 && c.line == line)?;
    let line_range = doc.lines.line_range(line)?;
    let word = raw_word(&doc.text, offset).filter(|(r, _)| r.start >= line_range.start);
    let (range, about) =
        match word.and_then(|(r, w)| Some((r, c.names.iter().find(|n| n.name == w)?))) {
            Some((r, n)) => (r, vec![n]),
            None => (
                TextRange::new(
                    line_range.start,
                    line_range.start + line_len(doc, line_range.start),
                ),
                c.names.iter().collect(),
            ),
        };
    let mut markdown = String::new();
    for n in &about {
        markdown.push_str(&tested(pp, n));
        markdown.push_str("\n\n");
    }
    markdown.push_str(&decided(c));
    Some(Hover { range, markdown })
}

/// One tested macro: defined or not at the directive, and where.
fn tested(pp: &PreprocessedDoc, n: &TestedMacro) -> String {
    match &n.definition {
        None => format!(
            "**{}** — C preprocessor macro, **not defined** here (no `#define` read before this line, no -D, nothing in dfort.toml or the settings)",
            n.name
        ),
        Some((body, at)) => {
            let defined = match at.and_then(|(f, l)| Some(place(pp.files.get(f as usize)?, l))) {
                Some(p) => format!("defined at {p}"),
                None => COMMAND_LINE.to_string(),
            };
            let value = if body.is_empty() {
                " (empty)".to_string()
            } else {
                format!(" as `{body}`")
            };
            format!("**{}** — C preprocessor macro, {defined}{value}", n.name)
        }
    }
}

/// What the directive decided for the lines after it.
fn decided(c: &Condition) -> String {
    let d = format!("`#{}`", c.directive);
    match c.outcome {
        ConditionOutcome::Kept => {
            format!("{d} is true with the macros given: the lines after it are kept (read and analysed)")
        }
        ConditionOutcome::LeftOut => format!(
            "{d} is false with the macros given: the lines after it, up to the next `#elif`, `#else` or `#endif`, are left out (dfort does not analyse them)"
        ),
        ConditionOutcome::EarlierBranchKept => format!(
            "{d} is not evaluated: an earlier branch of its `#if` was kept, so the lines after it are left out"
        ),
        ConditionOutcome::Enclosed => format!(
            "{d} is not evaluated: an enclosing `#if` leaves these lines out"
        ),
    }
}

/// The length of the line starting at `start`, without its terminator.
fn line_len(doc: &DocView, start: u32) -> u32 {
    line_text(&doc.text, &doc.lines, start)
        .trim_end_matches(['\n', '\r'])
        .len() as u32
}

/// On a line an `#if` leaves out: that dfort does not read it.
fn left_out(doc: &DocView, pp: &PreprocessedDoc, line: u32, offset: u32) -> Option<Hover> {
    let start = doc.lines.line_start(line)?;
    let region = pp
        .inactive_regions(0)
        .into_iter()
        .find(|r| r.range.start <= start && start <= r.range.end)?;
    let range = raw_word(&doc.text, offset)
        .map(|(r, _)| r)
        .filter(|r| r.start >= start)
        .unwrap_or(TextRange::new(start, start + line_len(doc, start)));
    let after = match region.range.start.checked_sub(1) {
        Some(o) if !region.directive.is_empty() => format!(
            " after `{}` (line {})",
            region.directive,
            doc.lines.line_of(o) + 1
        ),
        _ => String::new(),
    };
    let markdown = format!(
        "**Left out by the C preprocessor** with the macros given{after}: dfort neither reads nor analyses this line, so nothing in it is active or recorded, and no derivative holds it. Define the macros it needs (`-D`, the `[preprocessor]` table of dfort.toml, or the settings) to analyse it."
    );
    Some(Hover { range, markdown })
}
