//! dfort's code generation (pipeline: syntax → ir → analysis → **codegen**):
//! derivative Fortran from the IR and the decisions of the analyses: the
//! tangent (forward) mode and the adjoint (reverse mode, joint
//! checkpointing) with control-flow reversal and address recovery.

pub mod adjoint;
pub mod calls;
pub mod declare;
pub mod driver;
pub mod fortran;
pub mod hoist;
pub mod limits;
pub mod names;
pub mod partials;
mod recover;
pub mod tangent;
pub mod trace;

/// The analyses' facts for one root with the roles `independents` and
/// `dependents`, from that root alone (what `dfort adjoint --root` and
/// `dfort tangent --root` analyse).
pub fn root_facts(
    program: &dfort_ir::Program,
    root: dfort_ir::UnitId,
    independents: &dfort_analysis::bitset::BitSet,
    dependents: &dfort_analysis::bitset::BitSet,
    recording: dfort_analysis::decisions::Recording,
) -> dfort_analysis::facts::ProgramFacts {
    let roles = dfort_analysis::roles::Roles {
        independents: independents.clone(),
        dependents: dependents.clone(),
        source: dfort_analysis::roles::RoleSource::Explicit,
        unknown: Vec::new(),
    };
    dfort_analysis::facts::analyse_roots(program, vec![(root, roles)], recording)
}

/// A construct the generator refuses to differentiate, with where it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    pub span: dfort_ir::Span,
    pub message: String,
}

/// The checks every derivative's root passes: a subroutine; for a module procedure, the module its derivative
/// module will use. `what` names the derivative in messages.
pub fn check_root(
    program: &dfort_ir::Program,
    unit: &dfort_ir::Unit,
    what: &str,
) -> Result<Option<String>, Vec<Refusal>> {
    use dfort_ir::UnitKind;
    if unit.kind != UnitKind::Subroutine {
        return Err(vec![Refusal {
            span: unit.name_span,
            message: format!(
                "`{}` is not a subroutine; only subroutines can be the root of {what} yet",
                unit.name
            ),
        }]);
    }
    match unit.parent.map(|p| program.unit(p)) {
        None => Ok(None),
        Some(h) if h.kind == UnitKind::Module => Ok(Some(h.name.clone())),
        Some(h) => Err(vec![Refusal {
            span: unit.name_span,
            message: format!(
                "`{}` is internal to `{}`; an internal procedure cannot be a root (differentiate its host)",
                unit.name, h.name
            ),
        }]),
    }
}
