//! Adjoints the user supplies (paper 000 §5: a call is a statement whose
//! adjoint is its callee's; nothing there requires that adjoint to be
//! generated). Tapenade's black boxes with a user-given derivative and
//! TAF's flow directives serve the same need: an iterative solver, whose
//! iterations dfort would differentiate one by one, has a cheaper and
//! more accurate adjoint that a person writes (a conjugate-gradient solve
//! of a symmetric system is its own adjoint).
//!
//! Contract: [`of_program`] marks the subroutines named in the request.
//! For a marked unit the analyses still decide everything else from its
//! source (its arguments' activity, hence the adjoint's signature, and
//! what it reads and writes); they change only what the caller does
//! around its calls, which the checkpoint reads: the snapshot holds
//! everything the callee reads that the call or anything after may
//! change (its adjoint's needs are unknown), and the call is never run in
//! split mode. The generator writes no `s_b` for it and calls the user's,
//! which is called with the values the original was called with and
//! must leave every variable the original reads or writes as it found
//! it, changing adjoints only (Tapenade's convention for `s_b`).
//! Analysis only: no I/O, no panics on user input.

use dfort_ir::{IdVec, Program, UnitId, UnitKind};

/// Per unit: whether the user supplies its adjoint (subroutines named in
/// `names`, lower-case).
pub fn of_program(program: &Program, names: &[String]) -> IdVec<UnitId, bool> {
    // Most requests supply none: no unit is read then.
    if names.is_empty() {
        return IdVec::from_elem(false, program.units.len());
    }
    program
        .units
        .iter()
        .map(|u| u.kind == UnitKind::Subroutine && names.iter().any(|n| n == &u.name))
        .collect()
}

/// The names in `names` that are no subroutine of `program`, each with
/// what it is instead (`None`: nothing of that name).
pub fn unmatched(program: &Program, names: &[String]) -> Vec<(String, Option<&'static str>)> {
    names
        .iter()
        .filter_map(|n| {
            let units: Vec<_> = program.units.iter().filter(|u| &u.name == n).collect();
            if units.iter().any(|u| u.kind == UnitKind::Subroutine) {
                return None;
            }
            let what = units.first().map(|u| match u.kind {
                UnitKind::Function => "a function",
                UnitKind::Module => "a module",
                _ => "not a subroutine",
            });
            Some((n.clone(), what))
        })
        .collect()
}
