//! dfort's code generation (pipeline: syntax → ir → analysis → **codegen**):
//! derivative Fortran from the IR and the analyses. For now the tangent
//! (forward) mode; the adjoint comes with control-flow reversal.

pub mod adjoint;
pub mod driver;
pub mod fortran;
pub mod partials;
pub mod tangent;

/// A construct the generator refuses to differentiate, with where it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    pub span: dfort_ir::Span,
    pub message: String,
}
