//! Conversions between the protocol and the IDE layer: LSP positions
//! (UTF-16 code units by default, UTF-8 bytes when negotiated) to byte
//! offsets and back, URIs to paths, and the IDE's plain data to LSP types.
//!
//! Contract: positions past the end of a line or of the file clamp to it;
//! nothing here panics.

use dfort_ide::diagnostics::IdeDiagnostic;
use dfort_ide::hints::{Hint, HintKind};
use dfort_ide::host::DocView;
use dfort_ide::navigation::{self, DocumentSymbol as IdeSymbol, SymbolKind as IdeKind};
use dfort_ide::preprocessing::InactiveRegion;
use dfort_syntax::line_index::{LineCol, LineIndex};
use dfort_syntax::{Severity, TextRange};
use std::path::{Path, PathBuf};
use tower_lsp_server::ls_types::{self as lsp, Position, Range, Uri};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    Utf16,
    Utf8,
}

/// A text with its line index: what positions are converted against.
pub struct Text<'a> {
    pub text: &'a str,
    pub lines: &'a LineIndex,
}

impl<'a> Text<'a> {
    pub fn of(doc: &'a DocView) -> Text<'a> {
        Text {
            text: &doc.text,
            lines: &doc.lines,
        }
    }

    pub fn offset(&self, p: Position, enc: Encoding) -> u32 {
        let lines = self.lines;
        if p.line >= lines.line_count() {
            return lines.text_len();
        }
        let lc = LineCol {
            line: p.line,
            col: p.character,
        };
        let got = match enc {
            Encoding::Utf8 => lines.offset(lc),
            Encoding::Utf16 => lines.offset_utf16(self.text, lc),
        };
        // Columns past the end of the line clamp to its end.
        got.unwrap_or_else(|| lines.line_range(p.line).map_or(lines.text_len(), |r| r.end))
    }

    pub fn position(&self, offset: u32, enc: Encoding) -> Position {
        let lc = match enc {
            Encoding::Utf8 => self.lines.line_col(offset),
            Encoding::Utf16 => self.lines.line_col_utf16(self.text, offset),
        };
        Position::new(lc.line, lc.col)
    }

    pub fn range(&self, r: TextRange, enc: Encoding) -> Range {
        Range::new(self.position(r.start, enc), self.position(r.end, enc))
    }

    pub fn text_range(&self, r: Range, enc: Encoding) -> TextRange {
        let s = self.offset(r.start, enc);
        let e = self.offset(r.end, enc).max(s);
        TextRange::new(s, e)
    }

    /// The range covering all of the text.
    pub fn whole(&self, enc: Encoding) -> Range {
        Range::new(
            Position::new(0, 0),
            self.position(self.lines.text_len(), enc),
        )
    }
}

pub fn path_of(uri: &Uri) -> Option<PathBuf> {
    uri.to_file_path().map(|p| p.into_owned())
}

pub fn folding_range(f: &dfort_ide::folding::Fold) -> lsp::FoldingRange {
    use dfort_ide::folding::FoldKind;
    lsp::FoldingRange {
        start_line: f.start_line,
        start_character: None,
        end_line: f.end_line,
        end_character: None,
        kind: match f.kind {
            FoldKind::Code => None,
            FoldKind::Comment => Some(lsp::FoldingRangeKind::Comment),
            FoldKind::Imports => Some(lsp::FoldingRangeKind::Imports),
            FoldKind::Preprocessor => Some(lsp::FoldingRangeKind::Region),
        },
        collapsed_text: None,
    }
}

/// A document highlight: writes as `Write`, reads as `Read`, declarations
/// as `Text`.
pub fn highlight(
    t: &Text,
    r: TextRange,
    access: dfort_ide::references::Access,
    enc: Encoding,
) -> lsp::DocumentHighlight {
    use dfort_ide::references::Access;
    lsp::DocumentHighlight {
        range: t.range(r, enc),
        kind: Some(match access {
            Access::Read => lsp::DocumentHighlightKind::READ,
            Access::Write => lsp::DocumentHighlightKind::WRITE,
            Access::Text => lsp::DocumentHighlightKind::TEXT,
        }),
    }
}

/// A completion item replacing `range` (the name being typed); `data`
/// goes back to the server for resolution.
pub fn completion_item(
    t: &Text,
    range: TextRange,
    item: &dfort_ide::completion::Item,
    enc: Encoding,
    data: serde_json::Value,
) -> lsp::CompletionItem {
    use dfort_ide::completion::ItemKind as K;
    let kind = match item.kind {
        K::Variable => lsp::CompletionItemKind::VARIABLE,
        K::Constant => lsp::CompletionItemKind::CONSTANT,
        K::Function => lsp::CompletionItemKind::FUNCTION,
        K::Subroutine => lsp::CompletionItemKind::METHOD,
        K::Module => lsp::CompletionItemKind::MODULE,
        K::Keyword => lsp::CompletionItemKind::KEYWORD,
        K::Component => lsp::CompletionItemKind::FIELD,
        K::Argument => lsp::CompletionItemKind::PROPERTY,
    };
    lsp::CompletionItem {
        label: item.label.clone(),
        kind: Some(kind),
        detail: Some(item.detail.clone()),
        sort_text: Some(item.sort.clone()),
        filter_text: Some(item.label.clone()),
        text_edit: Some(lsp::CompletionTextEdit::Edit(lsp::TextEdit {
            range: t.range(range, enc),
            new_text: item.insert.clone().unwrap_or_else(|| item.label.clone()),
        })),
        data: Some(data),
        ..Default::default()
    }
}

/// Signature help with one signature.
pub fn signature_help(sig: &dfort_ide::signature::Signature) -> lsp::SignatureHelp {
    // Labels are ASCII: byte offsets are UTF-16 offsets too.
    let parameters = sig
        .parameters
        .iter()
        .map(|p| lsp::ParameterInformation {
            label: lsp::ParameterLabel::LabelOffsets([p.range.start, p.range.end]),
            documentation: (!p.documentation.is_empty())
                .then(|| lsp::Documentation::String(p.documentation.clone())),
        })
        .collect();
    lsp::SignatureHelp {
        signatures: vec![lsp::SignatureInformation {
            label: sig.label.clone(),
            documentation: Some(lsp::Documentation::String(sig.documentation.clone())),
            parameters: Some(parameters),
            active_parameter: sig.active,
        }],
        active_signature: Some(0),
        active_parameter: sig.active,
    }
}

/// The legend of [`semantic_tokens`]: token types in the order of
/// `dfort_ide::semantic::TokenType`, modifiers in bit order.
pub fn semantic_legend() -> lsp::SemanticTokensLegend {
    lsp::SemanticTokensLegend {
        token_types: vec![
            lsp::SemanticTokenType::VARIABLE,
            lsp::SemanticTokenType::PARAMETER,
        ],
        token_modifiers: dfort_ide::semantic::MODIFIERS
            .iter()
            .map(|m| lsp::SemanticTokenModifier::new(m))
            .collect(),
    }
}

/// Tokens (in document order, one line each) as the protocol's relative
/// encoding, those inside `within` only.
pub fn semantic_tokens(
    t: &Text,
    tokens: &[dfort_ide::semantic::Token],
    within: Option<TextRange>,
    enc: Encoding,
) -> lsp::SemanticTokens {
    use dfort_ide::semantic::TokenType;
    let mut data = Vec::new();
    let (mut line, mut col) = (0u32, 0u32);
    for tok in tokens {
        if within.is_some_and(|w| tok.range.end < w.start || tok.range.start > w.end) {
            continue;
        }
        let r = t.range(tok.range, enc);
        if r.start.line != r.end.line || r.end.character <= r.start.character {
            continue;
        }
        let delta_line = r.start.line - line;
        let delta_start = if delta_line == 0 {
            r.start.character - col
        } else {
            r.start.character
        };
        data.push(lsp::SemanticToken {
            delta_line,
            delta_start,
            length: r.end.character - r.start.character,
            token_type: match tok.ty {
                TokenType::Variable => 0,
                TokenType::Parameter => 1,
            },
            token_modifiers_bitset: tok.modifiers,
        });
        (line, col) = (r.start.line, r.start.character);
    }
    lsp::SemanticTokens {
        result_id: None,
        data,
    }
}

pub fn uri_of(path: &Path) -> Option<Uri> {
    Uri::from_file_path(path)
}

pub fn diagnostic(t: &Text, d: &IdeDiagnostic, enc: Encoding) -> lsp::Diagnostic {
    lsp::Diagnostic {
        range: t.range(d.range, enc),
        severity: Some(match d.severity {
            Severity::Error => lsp::DiagnosticSeverity::ERROR,
            Severity::Warning => lsp::DiagnosticSeverity::WARNING,
            Severity::Note => lsp::DiagnosticSeverity::INFORMATION,
        }),
        code: Some(lsp::NumberOrString::String(d.code.to_string())),
        source: Some("dfort".into()),
        message: d.message.clone(),
        ..Default::default()
    }
}

/// Lines an `#if` leaves out: a hint the editors draw faded
/// (`unnecessary`), as C/C++ editors show inactive code.
pub fn inactive_region(t: &Text, r: &InactiveRegion, enc: Encoding) -> lsp::Diagnostic {
    lsp::Diagnostic {
        range: t.range(r.range, enc),
        severity: Some(lsp::DiagnosticSeverity::HINT),
        code: Some(lsp::NumberOrString::String("inactive-region".into())),
        source: Some("dfort".into()),
        message: r.message(),
        tags: Some(vec![lsp::DiagnosticTag::UNNECESSARY]),
        ..Default::default()
    }
}

pub fn inlay_hint(t: &Text, h: &Hint, enc: Encoding) -> lsp::InlayHint {
    lsp::InlayHint {
        position: t.position(h.offset, enc),
        label: lsp::InlayHintLabel::String(h.label.clone()),
        kind: Some(match h.kind {
            HintKind::Active => lsp::InlayHintKind::TYPE,
            _ => lsp::InlayHintKind::PARAMETER,
        }),
        text_edits: None,
        tooltip: Some(lsp::InlayHintTooltip::String(h.tooltip.clone())),
        padding_left: Some(!h.before),
        padding_right: Some(h.before),
        data: None,
    }
}

fn symbol_kind(k: IdeKind) -> lsp::SymbolKind {
    match k {
        IdeKind::Program => lsp::SymbolKind::NAMESPACE,
        IdeKind::Module => lsp::SymbolKind::MODULE,
        IdeKind::Subroutine | IdeKind::Function => lsp::SymbolKind::FUNCTION,
        IdeKind::BlockData => lsp::SymbolKind::OBJECT,
        IdeKind::Variable | IdeKind::Argument => lsp::SymbolKind::VARIABLE,
    }
}

#[allow(deprecated)] // `deprecated` is a required field of the type.
pub fn document_symbol(t: &Text, s: &IdeSymbol, enc: Encoding) -> lsp::DocumentSymbol {
    lsp::DocumentSymbol {
        name: s.name.clone(),
        detail: Some(s.detail.clone()),
        kind: symbol_kind(s.kind),
        tags: None,
        deprecated: None,
        range: t.range(s.range, enc),
        selection_range: t.range(s.selection, enc),
        children: Some(
            s.children
                .iter()
                .map(|c| document_symbol(t, c, enc))
                .collect(),
        ),
    }
}

/// A location in a document of the snapshot.
pub fn location(
    snap: &dfort_ide::host::Snapshot,
    l: &navigation::Location,
    enc: Encoding,
) -> Option<lsp::Location> {
    if let Some(doc) = snap.doc(&l.path) {
        return Some(lsp::Location {
            uri: uri_of(&l.path)?,
            range: Text::of(doc).range(l.range, enc),
        });
    }
    // A header the preprocessor read (not a document of its own).
    let (text, lines) = snap.file_text(&l.path)?;
    let path = std::fs::canonicalize(&l.path).unwrap_or_else(|_| l.path.clone());
    Some(lsp::Location {
        uri: uri_of(&path)?,
        range: Text { text, lines }.range(l.range, enc),
    })
}

/// The start of a line of a file (its first character: the same in
/// every position encoding).
pub fn line_location(l: &dfort_ide::origins::LineLocation) -> Option<lsp::Location> {
    let at = Position::new(l.line, 0);
    Some(lsp::Location {
        uri: uri_of(&l.path)?,
        range: Range::new(at, at),
    })
}

#[allow(deprecated)] // `deprecated` is a required field of the type.
pub fn workspace_symbol(
    snap: &dfort_ide::host::Snapshot,
    s: &navigation::WorkspaceSymbol,
    enc: Encoding,
) -> Option<lsp::SymbolInformation> {
    Some(lsp::SymbolInformation {
        name: s.name.clone(),
        kind: symbol_kind(s.kind),
        tags: None,
        deprecated: None,
        location: location(snap, &s.location, enc)?,
        container_name: s.container.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_round_trip_and_clamp_in_both_encodings() {
        let text = "a = 1\r\n  b = 'é𝄞' ! x\r\nend\n";
        let lines = LineIndex::new(text);
        let t = Text {
            text,
            lines: &lines,
        };
        let x = text.find('x').expect("an x") as u32;
        for enc in [Encoding::Utf16, Encoding::Utf8] {
            assert_eq!(t.offset(t.position(x, enc), enc), x);
        }
        assert_eq!(t.position(x, Encoding::Utf16), Position::new(1, 14));
        assert_eq!(t.position(x, Encoding::Utf8), Position::new(1, 17));
        // Past the end of a line: its end (before the CRLF); past the end
        // of the file: the file's end.
        assert_eq!(t.offset(Position::new(0, 99), Encoding::Utf16), 5);
        assert_eq!(
            t.offset(Position::new(99, 0), Encoding::Utf16),
            text.len() as u32
        );
        assert_eq!(t.whole(Encoding::Utf16).end, Position::new(3, 0));
    }
}
