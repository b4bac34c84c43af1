//! Diagnostics as plain data. Ranges are byte offsets into the *original*
//! text of a file (before any fixed-form normalisation), so every consumer
//! (CLI, language server) can turn them into lines and columns with a
//! [`crate::line_index::LineIndex`] over the text the user sees.

/// A half-open byte range `[start, end)` in the original text of a file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TextRange {
    pub start: u32,
    pub end: u32,
}

impl TextRange {
    pub fn new(start: u32, end: u32) -> Self {
        TextRange {
            start,
            end: end.max(start),
        }
    }
    pub fn empty(at: u32) -> Self {
        TextRange { start: at, end: at }
    }
    pub fn len(&self) -> u32 {
        self.end - self.start
    }
    pub fn is_empty(&self) -> bool {
        self.start == self.end
    }
    pub fn contains(&self, offset: u32) -> bool {
        self.start <= offset && offset < self.end
    }
    /// The smallest range covering both.
    pub fn cover(self, other: TextRange) -> TextRange {
        TextRange::new(self.start.min(other.start), self.end.max(other.end))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Severity {
    Error,
    Warning,
    Note,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Note => "note",
        }
    }
}

/// One message about a place in a file. `code` is a short stable kebab-case
/// identifier (`syntax-error`, `fixed-line-length`, ...) that tests and
/// editors can match on; `message` is for people.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    pub severity: Severity,
    pub code: &'static str,
    pub range: TextRange,
    pub message: String,
}

impl Diagnostic {
    pub fn error(code: &'static str, range: TextRange, message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Error,
            code,
            range,
            message: message.into(),
        }
    }
    pub fn warning(code: &'static str, range: TextRange, message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Warning,
            code,
            range,
            message: message.into(),
        }
    }
    pub fn note(code: &'static str, range: TextRange, message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Note,
            code,
            range,
            message: message.into(),
        }
    }
}
