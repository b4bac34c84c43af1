//! What the IR's unit tests share: a program from one free-form source.

use crate::{FileId, Program};

/// The linked program of the free-form source `src` (file `t.f90`).
pub(crate) fn program(src: &str) -> Program {
    let mut parser = dfort_syntax::FortranParser::new();
    let parsed = parser.parse("t.f90".into(), src.into(), dfort_syntax::SourceForm::Free);
    let lowered = crate::lower::lower_file(&parsed, FileId(0));
    crate::link::link(vec![lowered]).0
}
