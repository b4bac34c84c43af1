//! The program as the analyses and the generators see it: every
//! statement-function reference replaced by the function's body (F77
//! statement functions are macros of their unit), loops with EXIT and
//! CYCLE in structured form ([`crate::structure`]), and every whole-array
//! target of an assignment inside a WHERE written as the full section
//! `y(:)` (a masked assignment writes part of its target, and the
//! analyses see it so), and local pointers read as their targets where
//! their association is known ([`crate::pointers`]), with the may-alias
//! classes of the others ([`crate::aliases`]). Statement and symbol
//! ids are unchanged, so what is decided on the prepared program is
//! shown on the source.

use dfort_ir::*;
use std::borrow::Cow;

/// `program` prepared (borrowed when there is nothing to rewrite).
pub fn program(program: &Program) -> Cow<'_, Program> {
    let structured = match inline_statement_functions(program) {
        Cow::Borrowed(p) => crate::structure::structure_exits(p),
        Cow::Owned(p) => Cow::Owned(crate::structure::structure_exits(&p).into_owned()),
    };
    if !structured.units.iter().any(|u| {
        has_where(u) || !u.equivalences.is_empty() || crate::pointers::see_through(u).is_some()
    }) {
        return structured;
    }
    let mut out = structured.into_owned();
    for i in out.units.indices() {
        if let Some(aliased) = see_through_with_aliases(&out.units[i]) {
            out.units[i] = std::sync::Arc::new(aliased);
        }
        if let Some(masked) = mask_where_targets(&out.units[i]) {
            out.units[i] = std::sync::Arc::new(masked);
        }
    }
    Cow::Owned(out)
}

/// One unit prepared, or `None` when it needs no rewriting.
pub fn unit(unit: &Unit) -> Option<Unit> {
    let inlined = inline_unit(unit);
    let base = inlined.as_ref().unwrap_or(unit);
    let structured = crate::structure::structure_unit(base).or(inlined);
    let base = structured.as_ref().unwrap_or(unit);
    let seen = see_through_with_aliases(base).or(structured);
    let base = seen.as_ref().unwrap_or(unit);
    mask_where_targets(base).or(seen)
}

/// The unit with its pointers read as their targets where they can be
/// and its may-alias classes ([`crate::aliases`]); `None` when it has
/// neither pointers nor EQUIVALENCE.
fn see_through_with_aliases(unit: &Unit) -> Option<Unit> {
    let mut out = match crate::pointers::see_through(unit) {
        Some(seen) => seen,
        None if !unit.equivalences.is_empty() => unit.clone(),
        None => return None,
    };
    out.aliases = crate::aliases::classes(&out);
    Some(out)
}

fn has_where(unit: &Unit) -> bool {
    unit.stmts
        .iter()
        .any(|s| matches!(s.kind, StmtKind::Where { .. }))
}

/// The unit with the whole-array target `y` of every assignment inside a
/// WHERE written `y(:)`; `None` when it has no WHERE.
fn mask_where_targets(unit: &Unit) -> Option<Unit> {
    if !has_where(unit) {
        return None;
    }
    let mut u = unit.clone();
    let mut stack: Vec<StmtId> = unit
        .stmts
        .iter()
        .filter(|s| matches!(s.kind, StmtKind::Where { .. }))
        .flat_map(|s| s.kind.blocks().concat())
        .collect();
    while let Some(id) = stack.pop() {
        let st = &mut u.stmts[id];
        if let StmtKind::Assign { lhs, .. } = &mut st.kind {
            if let ExprKind::Var(s) = lhs.kind {
                let rank = unit.symbol(s).rank();
                if rank > 0 {
                    let full = Subscript::Range {
                        lo: None,
                        hi: None,
                        stride: None,
                    };
                    lhs.kind = ExprKind::ArrayRef {
                        array: s,
                        subs: vec![full; rank],
                    };
                }
            }
        }
    }
    Some(u)
}

/// The program with every statement-function reference inlined.
fn inline_statement_functions(program: &Program) -> Cow<'_, Program> {
    if program.units.iter().all(|u| u.stmt_functions.is_empty()) {
        return Cow::Borrowed(program);
    }
    let mut out = program.clone();
    for i in out.units.indices() {
        if let Some(inlined) = inline_unit(&out.units[i]) {
            out.units[i] = std::sync::Arc::new(inlined);
        }
    }
    Cow::Owned(out)
}

/// The unit with every statement-function reference replaced by the
/// function's body, its dummies replaced by the actual arguments; `None`
/// when it has no statement functions. The definitions stay (for checks
/// that look at them); nothing references them any more.
fn inline_unit(unit: &Unit) -> Option<Unit> {
    if unit.stmt_functions.is_empty() {
        return None;
    }
    let mut u = unit.clone();
    let sfs = &unit.stmt_functions;
    let symbols = &unit.symbols;
    for st in &mut u.stmts {
        for e in st.kind.exprs_mut() {
            // Nested references (a statement function using another)
            // unfold one level per round.
            for _round in 0..16 {
                let mut changed = false;
                e.walk_mut(&mut |x| {
                    let ExprKind::FunctionCall {
                        target: CallTarget::StatementFunction(i),
                        args,
                        ..
                    } = &x.kind
                    else {
                        return;
                    };
                    let Some(sf) = sfs.get(*i as usize) else {
                        return;
                    };
                    let mut body = sf.body.clone();
                    let actuals: Vec<Expr> = args.iter().map(|a| a.value.clone()).collect();
                    substitute(&mut body, symbols, &sf.params, &actuals);
                    body.span = x.span;
                    *x = body;
                    changed = true;
                });
                if !changed {
                    break;
                }
            }
        }
    }
    Some(u)
}

fn substitute(
    body: &mut Expr,
    symbols: &dfort_ir::shared_vec::SharedVec<SymbolId, Symbol>,
    params: &[String],
    actuals: &[Expr],
) {
    // Replace dummies in one pass over the original body, so that an
    // actual mentioning a dummy's name is not substituted again.
    fn go(
        e: &mut Expr,
        symbols: &dfort_ir::shared_vec::SharedVec<SymbolId, Symbol>,
        params: &[String],
        actuals: &[Expr],
    ) {
        if let ExprKind::Var(s) = &e.kind {
            let name = symbols.get(*s).map(|s| s.name.as_str());
            if let Some(k) = params.iter().position(|p| Some(p.as_str()) == name) {
                if let Some(a) = actuals.get(k) {
                    let span = e.span;
                    *e = a.clone();
                    e.span = span;
                }
            }
            return;
        }
        match &mut e.kind {
            ExprKind::Unary { operand, .. } => go(operand, symbols, params, actuals),
            ExprKind::Binary { lhs, rhs, .. } => {
                go(lhs, symbols, params, actuals);
                go(rhs, symbols, params, actuals);
            }
            ExprKind::Intrinsic { args, .. } | ExprKind::FunctionCall { args, .. } => {
                for a in args {
                    go(&mut a.value, symbols, params, actuals);
                }
            }
            ExprKind::ArrayRef { subs, .. } => {
                for s in subs {
                    match s {
                        Subscript::Index(i) => go(i, symbols, params, actuals),
                        Subscript::Range { lo, hi, stride } => {
                            for x in [lo, hi, stride].into_iter().flatten() {
                                go(x, symbols, params, actuals);
                            }
                        }
                    }
                }
            }
            _ => {}
        }
    }
    go(body, symbols, params, actuals)
}
