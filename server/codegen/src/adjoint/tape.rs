//! What the stack runtime (`dfort_stack.f90`) can save, and in which
//! order a list of saved values is pushed.
//!
//! Contract: [`pushable`] says why a variable (or part of it) cannot be
//! pushed; [`subscript_rank`] sorts saved items so that the values that
//! may subscript others are pushed after, and so popped before, what they
//! subscript.

use dfort_ir::*;

/// Where a saved item goes in a list of pushes: integer scalars last,
/// integer array elements before them, the rest first.
pub(super) fn subscript_rank(unit: &Unit, s: SymbolId, whole: bool) -> u8 {
    let sym = unit.symbol(s);
    match (sym.ty.base, sym.rank() == 0 && whole) {
        (BaseType::Integer, true) => 2,
        (BaseType::Integer, false) => 1,
        _ => 0,
    }
}

/// Whether the runtime can push this variable (`whole`) or an element or
/// section of it; why not otherwise.
pub(super) fn pushable(unit: &Unit, s: SymbolId, whole: bool) -> Result<(), String> {
    let sym = unit.symbol(s);
    let kind_ok = match sym.ty.base {
        BaseType::Real => matches!(sym.ty.kind, Some(4) | Some(8)),
        BaseType::Integer => matches!(sym.ty.kind, Some(4) | Some(8) | None),
        BaseType::Logical => sym.rank() == 0 || !whole,
        _ => false,
    };
    if !kind_ok {
        return Err(format!(
            "saving `{}` ({}) on the tape is not supported yet",
            sym.name,
            dfort_ir::dump::type_name(&sym.ty)
        ));
    }
    if whole && sym.rank() > 3 {
        return Err(format!(
            "saving the whole array `{}` of rank {} on the tape is not supported yet",
            sym.name,
            sym.rank()
        ));
    }
    if whole && sym.dims.iter().any(|d| d.kind == DimKind::AssumedSize) {
        return Err(format!(
            "the assumed-size array `{}` would have to be saved whole; give it explicit bounds",
            sym.name
        ));
    }
    Ok(())
}
