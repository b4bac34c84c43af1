//! What the stack runtime (`dfort_stack.f90`) can save, in the
//! generator's words.
//!
//! Contract: the analysis decides what the tape cannot hold
//! ([`dfort_ir::runtime::tape_limit`]); [`pushable`] and
//! [`describe`] say why, for a refusal.

use dfort_ir::runtime::{reference_tape_limit, TapeLimit};
use dfort_ir::*;

/// Whether the runtime can push this variable (`whole`) or an element or
/// section of it; why not otherwise.
/// `e` is the data reference pushed (a component of a derived-type
/// variable is pushed as itself).
pub(super) fn pushable(
    program: &Program,
    unit: &Unit,
    s: SymbolId,
    whole: bool,
    e: &Expr,
) -> Result<(), String> {
    match reference_tape_limit(program, unit, s, whole, e) {
        Some(limit) => Err(describe(unit, s, limit)),
        None => Ok(()),
    }
}

/// Why the runtime cannot push variable `s` of `unit` (or a part of it).
pub(super) fn describe(unit: &Unit, s: SymbolId, limit: TapeLimit) -> String {
    let sym = unit.symbol(s);
    match limit {
        TapeLimit::Type => format!(
            "saving `{}` ({}) on the tape is not supported yet",
            sym.name,
            dfort_ir::dump::type_name(&sym.ty)
        ),
        TapeLimit::Rank(rank) => format!(
            "saving the whole array `{}` of rank {rank} on the tape is not supported yet",
            sym.name
        ),
        TapeLimit::AssumedSize => format!(
            "the assumed-size array `{}` would have to be saved whole",
            sym.name
        ),
    }
}
