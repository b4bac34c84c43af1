//! Which source form a file is in, from its name or the user's choice.

use std::path::Path;

/// Fixed-form options: the column after which text is ignored
/// (`None`: no limit, like `-ffixed-line-length-none`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FixedOptions {
    pub line_length: Option<usize>,
}

impl Default for FixedOptions {
    fn default() -> Self {
        FixedOptions {
            line_length: Some(72),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SourceForm {
    Free,
    Fixed(FixedOptions),
}

/// Extensions compilers treat as fixed form (case-insensitive: `.F` is
/// fixed form with preprocessing).
pub const FIXED_EXTENSIONS: &[&str] = &["f", "for", "f77", "ftn", "fpp"];
/// Extensions treated as free form.
pub const FREE_EXTENSIONS: &[&str] = &["f90", "f95", "f03", "f08", "f18"];

/// The form a file's extension implies; free form for unknown extensions.
pub fn form_for_path(path: &Path, fixed: FixedOptions) -> SourceForm {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(|e| e.to_ascii_lowercase())
        .unwrap_or_default();
    if FIXED_EXTENSIONS.contains(&ext.as_str()) {
        SourceForm::Fixed(fixed)
    } else {
        SourceForm::Free
    }
}

/// Whether the file name looks like Fortran source at all.
pub fn is_fortran_path(path: &Path) -> bool {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(|e| e.to_ascii_lowercase())
        .unwrap_or_default();
    FIXED_EXTENSIONS.contains(&ext.as_str()) || FREE_EXTENSIONS.contains(&ext.as_str())
}
