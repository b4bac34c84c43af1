//! Diagnostics as plain data. Ranges are byte offsets into the *original*
//! text of a file (before any fixed-form normalisation), so every consumer
//! (CLI, language server) can turn them into lines and columns with a
//! [`crate::line_index::LineIndex`] over the text the user sees.

use crate::rules::Rule;

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
    /// Whether `other` lies wholly inside this range.
    pub fn covers(&self, other: TextRange) -> bool {
        self.start <= other.start && other.end <= self.end
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

/// A diagnostic's code: a registered [`Rule`] (the only way to make
/// one), compared, ordered and printed as its kebab-case string.
#[derive(Clone, Copy)]
pub struct Code(&'static Rule);

impl Code {
    pub fn rule(self) -> &'static Rule {
        self.0
    }
    pub fn as_str(self) -> &'static str {
        self.0.code
    }
}

impl From<&'static Rule> for Code {
    fn from(rule: &'static Rule) -> Self {
        Code(rule)
    }
}

impl PartialEq for Code {
    fn eq(&self, other: &Code) -> bool {
        self.as_str() == other.as_str()
    }
}
impl Eq for Code {}
impl PartialOrd for Code {
    fn partial_cmp(&self, other: &Code) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Code {
    fn cmp(&self, other: &Code) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}
impl std::hash::Hash for Code {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_str().hash(state)
    }
}
impl PartialEq<Rule> for Code {
    fn eq(&self, rule: &Rule) -> bool {
        self.as_str() == rule.code
    }
}
impl PartialEq<str> for Code {
    fn eq(&self, code: &str) -> bool {
        self.as_str() == code
    }
}
impl PartialEq<&str> for Code {
    fn eq(&self, code: &&str) -> bool {
        self.as_str() == *code
    }
}
impl PartialEq<String> for Code {
    fn eq(&self, code: &String) -> bool {
        self.as_str() == code
    }
}
impl std::fmt::Debug for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self.as_str(), f)
    }
}
impl std::fmt::Display for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One message about a place in a file. `code` is its rule in the
/// registry ([`crate::rules`]): a short stable kebab-case identifier
/// (`syntax-error`, `fixed-line-length`, ...) that tests and editors can
/// match on; `message` is for people.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    pub severity: Severity,
    pub code: Code,
    pub range: TextRange,
    pub message: String,
}

impl Diagnostic {
    /// A diagnostic of `rule`, with the rule's severity.
    pub fn new(rule: &'static Rule, range: TextRange, message: impl Into<String>) -> Self {
        Diagnostic {
            severity: rule.severity,
            code: Code(rule),
            range,
            message: message.into(),
        }
    }
}
