//! Undoing integer assignments by inversion in units with jumps (paper
//! 003, Hascoët, Utke, Naumann: the inversion of §3 on the flow graph;
//! §5.3 on Figure 14(b)).
//!
//! Contract: a unit with jumps (GO TO, arithmetic IF, EXIT, early RETURN)
//! is reversed through basic-block ids (paper 001); its loops have no
//! single body for the token game of [`crate::recovery`]. There,
//! [`undo_unit`] finds:
//!
//! - the *exact* variables: integer scalars of the unit's own (locals and
//!   dummies, not equivalenced, in a unit without internal procedures)
//!   written only by assignments to the whole variable. TBR records their
//!   overwritten values where the reverse sweep needs them, so their
//!   values are exact wherever it reads them and the adjoint need not
//!   save them at the end of every basic block;
//! - the *invertible* assignments `v = f(v, w…)` to an exact `v`: `v`
//!   occurs once in `f`, on a path of `+`, `-`, unary minus and
//!   multiplication by a non-zero constant, and every `w` is unchanged by
//!   the unit or exact itself. TBR (with inversion) neither kills nor
//!   records `v` there and requires the `w…` instead; the reverse sweep
//!   restores `v ← f⁻¹(v)` where it would pop it. As §5.3 says of Figure
//!   14(b), `k2 = k2+1` is undone from the final value of `k2` without
//!   storage, while a reset `m = 1` keeps its push: the block ids of the
//!   control-flow reversal play the role of the Boolean the paper
//!   suggests storing for it.
//!
//! Analysis only: the adjoint generator emits the restorations.

use crate::recovery::{invert, Ambiguity, Ambiguous, Blocker, NonInvertible, Term};
use dfort_ir::bitset::BitSet;
use dfort_ir::dp::{all_writes, vars, WriteBy};
use dfort_ir::*;
use std::collections::HashMap;

/// How the reverse sweep undoes one assignment to an exact variable.
#[derive(Clone, Debug)]
pub struct Undo {
    pub var: SymbolId,
    /// The value before the assignment in terms of the value after it
    /// (`Term::Version(0)`), e.g. `k2 - 1`.
    pub inverse: Term,
}

impl Undo {
    /// `k2 - 1`.
    pub fn render(&self, unit: &Unit) -> String {
        let name = unit.symbol(self.var).name.clone();
        self.inverse.render(unit, &|_| name.clone())
    }
}

/// What inversion does for one unit with jumps.
#[derive(Clone, Debug, Default)]
pub struct UnitUndo {
    /// Variables whose values TBR keeps exact (see the contract).
    pub exact: BitSet,
    /// The invertible assignments, by statement.
    pub inverted: HashMap<StmtId, Undo>,
    /// Assignments to exact variables that cannot be inverted, and why.
    pub blocked: HashMap<StmtId, Blocker>,
    /// Integer scalars of the unit's own that are not exact, with the
    /// first write that prevents it (the adjoint saves them at the end of
    /// every basic block whose adjoint reads them).
    pub inexact: Vec<Ambiguous>,
}

impl UnitUndo {
    /// The variable statement `id` restores by inversion.
    pub fn inverts(&self, id: StmtId) -> Option<SymbolId> {
        self.inverted.get(&id).map(|u| u.var)
    }
}

/// The exact variables and invertible assignments of a unit with jumps;
/// empty for structured units (their loops have plans) and for units
/// with internal procedures (which may write the unit's locals).
pub fn undo_unit(program: &Program, unit: &Unit) -> UnitUndo {
    let mut out = UnitUndo::default();
    if unit.cfg.structured || !unit.children.is_empty() {
        return out;
    }
    let mut written = BitSet::default();
    let mut other = BitSet::default();
    let mut why: HashMap<SymbolId, Ambiguous> = HashMap::new();
    let mut note = |v: SymbolId, reason: Ambiguity, span: Span| {
        why.entry(v).or_insert(Ambiguous {
            var: v,
            why: reason,
            span,
        });
    };
    for st in &unit.stmts {
        for (v, by) in all_writes(program, unit, st) {
            written.insert_id(v);
            let plain = matches!(&st.kind, StmtKind::Assign { lhs, .. } if matches!(lhs.kind, ExprKind::Var(s) if s == v));
            if plain {
                continue;
            }
            other.insert_id(v);
            let reason = match by {
                WriteBy::Call => Ambiguity::SetByCall,
                WriteBy::Read => Ambiguity::SetByRead,
                WriteBy::DoIndex => Ambiguity::LoopIndex { nested: false },
                WriteBy::FunctionArgument => Ambiguity::SetByFunctionReference,
                WriteBy::Assignment { .. } | WriteBy::Allocate => Ambiguity::AssignedInPart,
            };
            note(v, reason, st.span);
        }
    }
    let equivalenced: Vec<SymbolId> = unit.equivalences.iter().flatten().copied().collect();
    for s in written.ids() {
        let sym = unit.symbol(s);
        let own = sym.ty.base == BaseType::Integer
            && sym.rank() == 0
            && !sym.attrs.parameter
            && matches!(sym.storage, Storage::Local | Storage::Dummy(_));
        if !own {
            continue;
        }
        if equivalenced.contains(&s) {
            note(s, Ambiguity::Equivalenced, unit.name_span);
        } else if !other.contains_id(s) && !crate::aliases::is_aliased(unit, s) {
            out.exact.insert_id(s);
        }
    }
    out.inexact = why
        .into_values()
        .filter(|a| !out.exact.contains_id(a.var))
        .filter(|a| {
            let sym = unit.symbol(a.var);
            sym.ty.base == BaseType::Integer
                && sym.rank() == 0
                && matches!(sym.storage, Storage::Local | Storage::Dummy(_))
        })
        .collect();
    out.inexact.sort_by_key(|a| a.var);
    for (id, st) in unit.stmts.iter_enumerated() {
        let StmtKind::Assign { lhs, rhs } = &st.kind else {
            continue;
        };
        let ExprKind::Var(v) = lhs.kind else {
            continue;
        };
        if !out.exact.contains_id(v) {
            continue;
        }
        match inverse(unit, rhs, v, &out.exact, &written) {
            Ok(inverse) => {
                out.inverted.insert(id, Undo { var: v, inverse });
            }
            Err(b) => {
                out.blocked.insert(id, b);
            }
        }
    }
    out
}

/// The inverse of `v = rhs` (the old `v` from the new one), or what
/// prevents it.
fn inverse(
    unit: &Unit,
    rhs: &Expr,
    v: SymbolId,
    exact: &BitSet,
    written: &BitSet,
) -> Result<Term, Blocker> {
    let blocked = |op: NonInvertible, span: Span| Blocker { op, span };
    let mut occurrences = 0;
    let mut unsure: Option<Span> = None;
    rhs.walk(&mut |x| match &x.kind {
        ExprKind::Var(s) if *s == v => occurrences += 1,
        ExprKind::Var(s) | ExprKind::ArrayRef { array: s, .. }
            if written.contains_id(*s) && !exact.contains_id(*s) && unsure.is_none() =>
        {
            unsure = Some(x.span);
        }
        _ => {}
    });
    match occurrences {
        0 => return Err(blocked(NonInvertible::NotRead, rhs.span)),
        1 => {}
        _ => return Err(blocked(NonInvertible::ReadTwice, rhs.span)),
    }
    let t = term(rhs, v).ok_or_else(|| blocked(NonInvertible::FunctionReference, rhs.span))?;
    let inv = invert(unit, rhs, &t, 0, Term::Version(0))
        .map_err(|b| b.unwrap_or_else(|| blocked(NonInvertible::NoInverse, rhs.span)))?;
    // The other operands must hold the same values in the reverse sweep.
    if let Some(sp) = unsure {
        return Err(blocked(NonInvertible::UnrestorableOperand, sp));
    }
    Ok(inv)
}

/// `e` as a term with `v` as version 0 and everything else fixed; `None`
/// when `v` sits in a function reference.
fn term(e: &Expr, v: SymbolId) -> Option<Term> {
    let mut mentions = false;
    e.walk(&mut |x| mentions |= matches!(x.kind, ExprKind::Var(s) if s == v));
    if !mentions {
        return Some(Term::Fixed(e.clone()));
    }
    Some(match &e.kind {
        ExprKind::Var(_) => Term::Version(0),
        ExprKind::Unary { op, operand } => Term::Unary(*op, Box::new(term(operand, v)?)),
        ExprKind::Binary { op, lhs, rhs } => {
            Term::Binary(*op, Box::new(term(lhs, v)?), Box::new(term(rhs, v)?))
        }
        ExprKind::Intrinsic { name, args } => Term::Intrinsic(
            name.clone(),
            args.iter()
                .map(|a| term(&a.value, v))
                .collect::<Option<Vec<_>>>()?,
        ),
        ExprKind::ArrayRef { array, subs } => Term::Element(
            *array,
            subs.iter()
                .map(|s| match s {
                    Subscript::Index(i) => term(i, v),
                    Subscript::Range { .. } => None,
                })
                .collect::<Option<Vec<_>>>()?,
        ),
        _ => return None,
    })
}

/// The variables an inversion reads besides its own (they must be exact
/// where it runs).
pub fn operands(unit: &Unit, st: &Stmt, v: SymbolId) -> BitSet {
    let mut out = BitSet::default();
    if let StmtKind::Assign { rhs, .. } = &st.kind {
        vars(unit, rhs, &mut out);
    }
    out.remove_id(v);
    out
}
