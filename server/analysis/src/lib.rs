//! dfort's analyses (pipeline: syntax → ir → **analysis** → codegen):
//! activity and TBR for reverse-mode AD, on one shared dataflow engine
//! (paper 000, Hascoët, Naumann, Pascual). Each analysis is a module with
//! its contract at the top. Analyses do no I/O and never panic on user
//! input.

pub mod activity;
pub mod address_report;
pub mod aliases;
pub mod bitset;
pub mod checkpoint;
pub mod counted_while;
pub mod decisions;
pub mod dep;
pub mod derivatives;
pub mod dp;
pub mod effects;
pub mod engine;
pub mod explain;
pub mod facts;
pub mod incremental;
pub mod interproc;
pub mod liveness;
pub mod pointers;
pub mod prepare;
pub mod recovery;
pub mod references;
pub mod regions;
pub mod reversal;
pub mod roles;
pub mod roots;
pub mod shape;
pub mod structure;
pub mod tbr;
pub mod undo;

/// What the unit tests of the analyses share.
#[cfg(test)]
pub(crate) mod test_support {
    use dfort_ir::*;

    /// The linked program of one free-form file `t.f90`.
    pub fn program(src: &str) -> Program {
        let mut parser = dfort_syntax::FortranParser::new();
        let parsed = parser.parse("t.f90".into(), src.into(), dfort_syntax::SourceForm::Free);
        let lowered = dfort_ir::lower::lower_file(&parsed, FileId(0));
        let file = SourceFile {
            id: FileId(0),
            path: "t.f90".into(),
        };
        dfort_ir::link::link(vec![file], vec![lowered]).0
    }
}
