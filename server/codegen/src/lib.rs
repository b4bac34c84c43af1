//! dfort's code generation (pipeline: syntax → ir → analysis → **codegen**):
//! derivative Fortran from the IR and the decisions of the analyses: the
//! tangent (forward) mode and the adjoint (reverse mode, joint
//! checkpointing) with control-flow reversal and address recovery.

pub mod adjoint;
pub mod calls;
pub mod complex;
mod conversions;
pub mod declare;
pub mod derived;
pub mod driver;
pub mod fortran;
pub use dfort_ir::hoist;
pub mod names;
pub mod origin;
pub mod partials;
pub mod precedence;
mod recover;
pub mod tangent;
mod tidy;
pub mod trace;
mod value_numbering;

pub use dfort_analysis::refusals::{Reason, Refusal};

/// Adds to the facts' refusals (the first `decided` of `list`, decided
/// before writing: [`dfort_analysis::facts::ProgramFacts::refusals`])
/// what writing the derivative `found` at a place the facts refused
/// nothing: a construct the facts have no rule for yet.
pub(crate) fn add_found(list: &mut Vec<Refusal>, decided: usize, found: Vec<Refusal>) {
    for r in found {
        if !list[..decided].iter().any(|d| d.span == r.span) {
            list.push(r);
        }
    }
}
