//! dfort's analyses (pipeline: syntax → ir → **analysis** → codegen):
//! activity and TBR for reverse-mode AD, on one shared dataflow engine
//! (paper 000, Hascoët, Naumann, Pascual). Each analysis is a module with
//! its contract at the top. Analyses do no I/O and never panic on user
//! input.

pub mod activity;
pub mod address_report;
pub mod aliases;
pub mod binomial;
pub mod checkpoint;
pub mod component_reqs;
pub mod confined;
pub mod counted_while;
pub mod decisions;
pub mod dep;
pub mod derivatives;
pub mod effects;
pub mod elimination;
pub mod engine;
pub mod explain;
pub mod face_elimination;
pub mod facts;
pub mod filled_first;
pub mod final_reads;
pub mod flatten;
pub mod goto_loops;
pub mod incremental;
pub mod interproc;
pub mod io_cuts;
pub mod left_to_callers;
pub mod liveness;
pub mod pointers;
pub mod preaccumulation;
pub mod prepare;
pub mod recompute;
pub mod recovery;
pub mod references;
pub mod refusals;
pub mod regions;
pub mod restored_later;
pub mod reversal;
pub mod roles;
pub mod roots;
pub mod saved_state;
pub mod shape;
pub mod split;
pub mod structure;
pub mod supplied;
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
        dfort_ir::link::link(vec![lowered]).0
    }

    /// A request for the adjoint of root `name` with these roles (default
    /// recording, nothing supplied).
    pub fn request(name: &str, independent: &[&str], dependent: &[&str]) -> crate::facts::Request {
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect();
        crate::facts::Request {
            roots: vec![crate::roots::RootSpec {
                name: name.into(),
                independent: names(independent),
                dependent: names(dependent),
                after: None,
            }],
            others: false,
            recording: crate::decisions::Recording::Inversion,
            preaccumulate: Default::default(),
            supplied: Vec::new(),
        }
    }

    /// The linked program of fixed-form files read from the repository
    /// (paths from its root).
    pub fn fixed_program(paths: &[&str]) -> Program {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let mut lowered = Vec::new();
        for (k, path) in paths.iter().enumerate() {
            let src = std::fs::read_to_string(root.join(path)).expect("fixture");
            let mut parser = dfort_syntax::FortranParser::new();
            let parsed = parser.parse(
                (*path).into(),
                src,
                dfort_syntax::SourceForm::Fixed(Default::default()),
            );
            lowered.push(dfort_ir::lower::lower_file(&parsed, FileId(k as u32)));
        }
        dfort_ir::link::link(lowered).0
    }
}
