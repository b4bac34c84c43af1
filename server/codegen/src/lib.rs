//! dfort's code generation (pipeline: syntax → ir → analysis → **codegen**):
//! derivative Fortran from the IR and the decisions of the analyses: the
//! tangent (forward) mode and the adjoint (reverse mode, joint
//! checkpointing) with control-flow reversal and address recovery.

pub mod adjoint;
pub mod calls;
pub mod complex;
pub mod declare;
pub mod derived;
pub mod driver;
pub mod fortran;
pub mod hoist;
pub mod names;
pub mod partials;
mod recover;
pub mod tangent;
pub mod trace;

use dfort_syntax::rules;

pub use dfort_analysis::refusals::{Reason, Refusal};

/// The checks every derivative's root passes: a subroutine or a function; for a module procedure, the module its derivative
/// module will use. `what` names the derivative in messages.
pub fn check_root(
    program: &dfort_ir::Program,
    unit: &dfort_ir::Unit,
    what: &str,
) -> Result<Option<String>, Vec<Refusal>> {
    use dfort_ir::UnitKind;
    if !matches!(unit.kind, UnitKind::Subroutine | UnitKind::Function) {
        return Err(vec![Refusal::new(
            unit.name_span,
            (
                &rules::ROOT_NOT_SUBROUTINE,
                format!(
                    "`{}` is not a subroutine or a function; only those can be the root of {what}",
                    unit.name
                ),
            ),
        )]);
    }
    match unit.parent.map(|p| program.unit(p)) {
        None => Ok(None),
        Some(h) if h.kind == UnitKind::Module => Ok(Some(h.name.clone())),
        Some(h) => Err(vec![Refusal::new(
            unit.name_span,
            (
                &rules::INTERNAL_ROOT,
                format!(
                    "`{}` is internal to `{}`; an internal procedure cannot be a root (differentiate its host)",
                    unit.name, h.name
                ),
            ),
        )]),
    }
}
