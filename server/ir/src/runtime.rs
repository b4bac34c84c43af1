//! What dfort's push/pop runtime (`dfort_stack.f90`, and the push and pop
//! a derivative module writes for a derived type) can hold: the table the
//! analyses decide saves by and the generators write pushes by, so that
//! the two cannot disagree.

use crate::*;

/// Why the tape cannot hold a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TapeLimit {
    /// Its type (or kind) has no push and pop in the runtime.
    Type,
    /// A whole array of this rank (the runtime holds up to rank 3).
    Rank(usize),
    /// A whole assumed-size array (its size is unknown).
    AssumedSize,
}

impl TapeLimit {
    /// Why the runtime cannot push variable `s` of `unit` (or a part of
    /// it), in words.
    pub fn describe(&self, unit: &Unit, s: SymbolId) -> String {
        let sym = unit.symbol(s);
        match *self {
            TapeLimit::Type => format!(
                "saving `{}` ({}) on the tape is not supported yet",
                sym.name,
                crate::dump::type_name(&sym.ty)
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
}

/// Why the stack runtime (`dfort_stack.f90`) cannot push variable `s`
/// (`whole`) or an element or section of it; `None` when it can.
pub fn tape_limit(unit: &Unit, s: SymbolId, whole: bool) -> Option<TapeLimit> {
    let sym = unit.symbol(s);
    let kind_ok = match sym.ty.base {
        BaseType::Real => matches!(sym.ty.kind, Some(4) | Some(8)),
        BaseType::Integer => matches!(sym.ty.kind, Some(4) | Some(8) | None),
        BaseType::Logical => matches!(sym.ty.kind, Some(4) | None) && (!whole || sym.rank() <= 3),
        BaseType::Complex => matches!(sym.ty.kind, Some(4) | Some(8)),
        // One entry per character; whole arrays up to rank 1.
        BaseType::Character => matches!(sym.ty.kind, Some(1) | None) && (!whole || sym.rank() <= 1),
        _ => false,
    };
    if !kind_ok {
        return Some(TapeLimit::Type);
    }
    if whole && sym.ty.base == BaseType::Complex && sym.rank() > 3 {
        return Some(TapeLimit::Rank(sym.rank()));
    }
    if whole && sym.rank() > 7 {
        return Some(TapeLimit::Rank(sym.rank()));
    }
    if whole && sym.dims.iter().any(|d| d.kind == DimKind::AssumedSize) {
        return Some(TapeLimit::AssumedSize);
    }
    None
}

/// [`tape_limit`] of the data reference `e` to variable `s`: a component
/// of a derived-type variable is saved as the component (a scalar of a
/// type the runtime holds), anything else of derived type cannot be.
pub fn reference_tape_limit(
    program: &Program,
    unit: &Unit,
    s: SymbolId,
    whole: bool,
    e: &Expr,
) -> Option<TapeLimit> {
    if unit.symbol(s).ty.base != BaseType::Derived {
        return tape_limit(unit, s, whole);
    }
    let scalar_parts = |mut x: &Expr| loop {
        match &x.kind {
            ExprKind::Component { base, subs, .. } => {
                if subs.iter().any(|s| matches!(s, Subscript::Range { .. })) {
                    return false;
                }
                x = base;
            }
            ExprKind::ArrayRef { subs, .. } => {
                return !subs.iter().any(|s| matches!(s, Subscript::Range { .. }))
            }
            ExprKind::Var(v) => return unit.symbol(*v).rank() == 0,
            _ => return false,
        }
    };
    if let Some((scope, ty)) = program.reference_type(unit, e) {
        if ty.base == BaseType::Derived && tapeable_type(program, scope, &ty) {
            // The derivative module's `dfort_push` for the type, up to
            // rank 3 (`crate`'s generators write them).
            let rank = match &e.kind {
                ExprKind::Var(v) => unit.symbol(*v).rank(),
                ExprKind::ArrayRef { subs, .. } => subs
                    .iter()
                    .filter(|s| matches!(s, Subscript::Range { .. }))
                    .count(),
                ExprKind::Component { .. } if scalar_parts(e) => 0,
                _ => 99,
            };
            if rank <= 3
                && !unit
                    .symbol(s)
                    .dims
                    .iter()
                    .any(|d| d.kind == DimKind::AssumedSize && whole)
            {
                return None;
            }
        }
    }
    // A component of an intrinsic type: a scalar, or an array of rank 3
    // at most (`ps%x`, `v%h(:)`) the runtime saves as it saves arrays.
    let rank = crate::queries::reference_rank(program, unit, e);
    match program.reference_type(unit, e) {
        Some((_, ty))
            if matches!(e.kind, ExprKind::Component { .. })
                && (scalar_parts(e) || rank <= 3)
                && match ty.base {
                    BaseType::Real | BaseType::Complex => matches!(ty.kind, Some(4) | Some(8)),
                    BaseType::Integer => matches!(ty.kind, Some(4) | Some(8) | None),
                    // The runtime saves logical scalars only.
                    BaseType::Logical => {
                        scalar_parts(e) && program.component_rank(unit, e) == Some(0)
                    }
                    _ => false,
                } =>
        {
            None
        }
        _ => Some(TapeLimit::Type),
    }
}

/// Whether values of the derived type `ty` (as `unit` spells it) can be
/// saved on the tape (as one record of bytes, or component by component
/// when it has pointer components): a type defined in a module, whose
/// components are reals, complexes and integers (arrays too), logical
/// scalars, and values of such types defined in the same module — no
/// allocatable, pointer or character components.
pub fn tapeable_type(program: &Program, unit: &Unit, ty: &Type) -> bool {
    fn ok(program: &Program, owner: UnitId, def: &TypeDef, depth: u32) -> bool {
        if depth > 16 || program.unit(owner).kind != UnitKind::Module || def.unsupported.is_some() {
            return false;
        }
        def.components.iter().all(|c| {
            if c.pointer {
                // Its association goes on a pointer stack: the runtime's
                // (real(8), real(4), integer(4), complex(8), ranks 0-3) or
                // the derivative module's (a type of the same module).
                return c.rank <= 3
                    && match c.ty.base {
                        BaseType::Real => matches!(c.ty.kind, Some(4) | Some(8)),
                        BaseType::Integer => matches!(c.ty.kind, Some(4) | None),
                        BaseType::Complex => c.ty.kind == Some(8),
                        BaseType::Derived => {
                            c.rank == 0
                                && program
                                    .type_of(program.unit(owner), &c.ty)
                                    .is_some_and(|(o, _)| o == owner)
                        }
                        _ => false,
                    };
            }
            !c.allocatable
                && c.rank <= 7
                && match c.ty.base {
                    BaseType::Real | BaseType::Complex => matches!(c.ty.kind, Some(4) | Some(8)),
                    BaseType::Integer => matches!(c.ty.kind, Some(4) | Some(8) | None),
                    BaseType::Logical => c.rank == 0,
                    BaseType::Derived => match program.type_of(program.unit(owner), &c.ty) {
                        Some((o, d)) => o == owner && ok(program, o, d, depth + 1),
                        None => false,
                    },
                    _ => false,
                }
        })
    }
    match program.type_of(unit, ty) {
        Some((owner, def)) => ok(program, owner, def, 0),
        None => false,
    }
}

/// Whether the association of the pointer reference `e` (a pointer
/// variable or component) can go on a pointer stack: the runtime's
/// (real(8), real(4), integer(4) and complex(8) pointers of rank 0 to 3)
/// or a derivative module's (scalar pointers to a derived type defined in
/// a module).
pub fn pointer_tapeable(program: &Program, unit: &Unit, e: &Expr) -> bool {
    let Some((scope, ty)) = program.reference_type(unit, e) else {
        return false;
    };
    let rank = match &e.kind {
        ExprKind::Var(s) | ExprKind::ArrayRef { array: s, .. } => unit.symbol(*s).rank(),
        ExprKind::Component { .. } => program.component_def(unit, e).map_or(99, |c| c.rank),
        _ => 99,
    };
    rank <= 3
        && match ty.base {
            BaseType::Real => matches!(ty.kind, Some(4) | Some(8)),
            BaseType::Integer => matches!(ty.kind, Some(4) | None),
            BaseType::Complex => ty.kind == Some(8),
            BaseType::Derived => {
                rank == 0
                    && program
                        .type_of(scope, &ty)
                        .is_some_and(|(o, _)| program.unit(o).kind == UnitKind::Module)
            }
            _ => false,
        }
}
