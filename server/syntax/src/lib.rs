//! dfort's syntax layer: Fortran text to tree-sitter trees, one per
//! top-level program unit, with fixed-form normalisation and an offset map
//! back to the original text. See `design.md` (pipeline: text → syntax).
//! It also holds what every later crate reports with: diagnostics and the
//! registry of their rules ([`rules`]).

pub mod ad_directives;
pub mod char_length;
pub mod chunks;
pub mod cpp;
pub mod dangling;
pub mod diagnostic;
pub mod fixed_form;
mod fixed_form_words;
pub mod flat;
pub mod free_form;
pub mod line_index;
pub mod parse;
pub mod queries;
pub mod rules;
pub mod source_form;

pub use diagnostic::{Code, Diagnostic, Severity, TextRange};
pub use parse::{FortranParser, ParsedChunk, ParsedFile};
pub use rules::Rule;
pub use source_form::{FixedOptions, SourceForm};
pub use tree_sitter;

/// The Fortran grammar.
pub fn language() -> tree_sitter::Language {
    tree_sitter_fortran::LANGUAGE.into()
}
