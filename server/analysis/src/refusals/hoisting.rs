//! The refusals of function references the derivative code cannot run
//! as statements of their own (paper 004 §3: user-function references
//! in an assignment whose target carries a derivative are hoisted into
//! temporaries, each differentiated as a call; [`dfort_ir::hoist`] does
//! it and says which references it cannot take out): a reference left
//! in its expression that a derivative reaches, one to a function whose
//! effects the derivative code must follow, and references inside WHERE
//! the derivative cannot evaluate where the original does.
//!
//! Contract: [`of_unit`] lists them for one unit of a root's derivative
//! set, for the adjoint or the tangent, at the reference or at the
//! assignment, on the unit hoisted as the generators hoist it; the
//! generators refuse none of them themselves.

use super::{Derivative, Refusal};
use crate::activity::Activity;
use crate::derivatives::RootSet;
use dfort_ir::hoist::{self, HoistMap};
use dfort_ir::*;

/// The hoisting refusals of `unit` (analysed with `act`) in the set.
pub(super) fn of_unit(
    program: &Program,
    set: &RootSet,
    unit: &Unit,
    act: &Activity,
    derivative: Derivative,
) -> Vec<Refusal> {
    let adjoint = derivative == Derivative::Adjoint;
    let with_d = &set.with_d[unit.id];
    let writes = |c: UnitId| set.writers.contains(&c);
    let changes = |c: UnitId| set.changes_state.get(c).copied().unwrap_or(true);
    let reads = |c: UnitId| set.reads_globals.get(c).copied().unwrap_or(true);
    let (hoisted_unit, hoisted) = hoist::hoist(program, unit, |st| {
        hoist::runs_references(
            st,
            |t| with_d.contains_id(t),
            |c| writes(c) || (adjoint && changes(c)),
        )
    });
    let h = &hoisted_unit;
    // Temporaries (past the unit's symbols) carry a derivative where one
    // flows: they count as having one.
    let carries = |s: SymbolId| s.index() >= unit.symbols.len() || with_d.contains_id(s);
    let in_where = super::where_bodies(unit);
    let mut out = Vec::new();
    if !adjoint {
        out.extend(tangent_where(h, &hoisted));
    }
    // The hoisted references to procedures with a derivative routine are
    // calls: their actuals (inner references replaced by temporaries,
    // which have a derivative where the callee's result has one) must
    // take a derivative where the formal has one.
    let routines = super::calls::Routines::of_set(set, adjoint);
    let temps: Vec<(SymbolId, bool)> = hoisted
        .values()
        .flatten()
        .map(|x| {
            let cu = program.unit(x.callee);
            (
                x.temp,
                cu.result
                    .is_some_and(|r| set.with_d[x.callee].contains_id(r)),
            )
        })
        .collect();
    let actual_has_d = |e: &Expr| {
        dfort_ir::dp::target(e).is_some_and(|(s, _)| match temps.iter().find(|(t, _)| *t == s) {
            Some((_, d)) => *d,
            None => with_d.contains_id(s),
        })
    };
    let mut ids: Vec<&StmtId> = hoisted.keys().collect();
    ids.sort();
    for id in ids {
        for x in &hoisted[id] {
            if set.units.contains(&x.callee) {
                out.extend(super::calls::derivative_actual(
                    program,
                    &routines,
                    h,
                    x.callee,
                    &x.args,
                    &actual_has_d,
                    x.span,
                ));
            }
        }
    }
    // The leaves a derivative flows from at statement `st`: in the
    // adjoint, those varied before it.
    let flows = |st: StmtId, s: SymbolId| {
        carries(s)
            && (!adjoint
                || s.index() >= unit.symbols.len()
                || act.varied_before.get(st).is_some_and(|v| v.contains_id(s)))
    };
    // `externals`: references to functions without source too (in an
    // assignment they are the calls' refusals, [`super::calls`]).
    let left_in = |st: StmtId, e: &Expr, externals: bool, out: &mut Vec<Refusal>| {
        // The references left on the derivative's path, not below them.
        super::on_derivative_path(e, &mut |x| {
            let ExprKind::FunctionCall { name, target, args } = &x.kind else {
                return true;
            };
            if !externals && *target == CallTarget::External {
                return false;
            }
            let inside = args.iter().any(|a| {
                dfort_ir::dp::dp_of(h, &a.value)
                    .ids::<SymbolId>()
                    .any(|s| flows(st, s))
            });
            if inside {
                out.push(Refusal::new(
                    x.span,
                    hoist::not_hoisted(program, h, name, target, args),
                ));
            }
            false
        })
    };
    for st in h.stmts.iter() {
        if let StmtKind::Call {
            args,
            target: CallTarget::Unit(c),
            ..
        } = &st.kind
        {
            if set.units.contains(c) {
                out.extend(passed_by_value(program, set, h, *c, args, adjoint));
                for a in by_value(program, set, h, *c, args) {
                    left_in(st.id, a, true, &mut out);
                }
            }
            continue;
        }
        let StmtKind::Assign { lhs, rhs } = &st.kind else {
            continue;
        };
        let Some((t, _)) = dfort_ir::dp::target(lhs) else {
            if adjoint {
                out.push(Refusal::new(
                    st.span,
                    "this assignment target cannot be differentiated",
                ));
            }
            continue;
        };
        let target_d = with_d.contains_id(t);
        let has_d = target_d && dfort_ir::queries::carries_ref(program, h, lhs);
        // A derived-type target with a derivative: one value, assigned a
        // data reference where a derivative flows into it (in the
        // adjoint, from what is varied before the statement).
        let derived = program
            .reference_type(h, lhs)
            .is_some_and(|(_, ty)| ty.base == BaseType::Derived);
        if has_d && derived {
            let active = dfort_ir::dp::dp_of(h, rhs)
                .ids::<SymbolId>()
                .any(|s| flows(st.id, s));
            if let Some(m) = dfort_ir::queries::unsupported_assignment(program, h, lhs, rhs, active)
            {
                out.push(Refusal::new(st.span, m));
            }
        }
        let reaches = if adjoint {
            // The adjoint differentiates an assignment whose target is
            // active after it.
            if in_where.contains(&st.id) && adjoint_where(rhs, hoisted.get(&st.id)) {
                out.push(Refusal::new(
                    st.span,
                    dfort_ir::hoist::USER_FUNCTION_IN_WHERE,
                ));
                continue;
            }
            has_d && act.active_after(st.id, t)
        } else {
            has_d
        };
        // References that must have been hoisted: to a function that
        // writes something with a derivative, in the adjoint one that
        // changes state, and where a derivative flows, one that reads a
        // global (its derivative flows through it).
        let flows_through = if adjoint { reaches } else { target_d };
        let runs = |c: UnitId| writes(c) || (adjoint && changes(c)) || (flows_through && reads(c));
        for (span, why) in hoist::unhoisted_references(rhs, runs) {
            out.push(Refusal::new(span, why));
        }
        if !reaches {
            continue;
        }
        left_in(st.id, rhs, false, &mut out);
    }
    out
}

/// Whether the adjoint refuses an assignment inside WHERE whose
/// expression, hoisted, still references a user function, or had one
/// applied element by element taken out (the original evaluates those
/// under the mask only).
fn adjoint_where(rhs: &Expr, hoisted: Option<&Vec<hoist::Hoisted>>) -> bool {
    hoist::references_user_function(rhs)
        || hoisted.is_some_and(|hs| hs.iter().any(|h| h.elementwise))
}

/// The tangent's refusals of references hoisted out of an assignment
/// inside a WHERE construct that cannot be evaluated before it
/// ([`hoist::before_where`]).
fn tangent_where(unit: &Unit, hoisted: &HoistMap) -> Vec<Refusal> {
    let mut nested_where = Vec::new();
    for st in unit.stmts.iter() {
        if matches!(st.kind, StmtKind::Where { .. }) {
            nested_where.extend(st.kind.blocks().concat());
        }
    }
    let mut out = Vec::new();
    for w in unit.stmts.iter() {
        if !matches!(w.kind, StmtKind::Where { .. }) || nested_where.contains(&w.id) {
            continue;
        }
        let mut todo = vec![w.id];
        while let Some(s) = todo.pop() {
            todo.extend(unit.stmt(s).kind.blocks().concat());
            match hoisted.get(&s) {
                Some(hs) if !hs.is_empty() && !hoist::before_where(unit, w.id, hs) => out.push(
                    Refusal::new(unit.stmt(s).span, hoist::USER_FUNCTION_IN_WHERE),
                ),
                _ => {}
            }
        }
    }
    out
}

/// The actuals of a call of `c` (in the set) whose derivative is an
/// expression's, passed by value: for a scalar formal with a derivative,
/// an expression, or a variable without one.
fn by_value<'a>(
    program: &Program,
    set: &RootSet,
    unit: &Unit,
    c: UnitId,
    args: &'a [Arg],
) -> Vec<&'a Expr> {
    let callee = program.unit(c);
    let with_d = &set.with_d[unit.id];
    dfort_ir::queries::in_formal_order(callee, args)
        .into_iter()
        .enumerate()
        .filter_map(|(k, a)| {
            let f = callee.args[k];
            let a = a?;
            let scalar = callee.symbol(f).rank() == 0;
            let variable_with_d =
                matches!(a.value.kind, ExprKind::Var(_) | ExprKind::ArrayRef { .. })
                    && dfort_ir::dp::target(&a.value).is_some_and(|(s, _)| with_d.contains_id(s));
            (set.with_d[c].contains_id(f) && scalar && !variable_with_d).then_some(&a.value)
        })
        .collect()
}

/// The adjoint's refusal of a derived-type value passed by value where
/// the callee differentiates it (its derivative is not generated).
fn passed_by_value(
    program: &Program,
    set: &RootSet,
    unit: &Unit,
    c: UnitId,
    args: &[Arg],
    adjoint: bool,
) -> Vec<Refusal> {
    if !adjoint {
        return Vec::new();
    }
    let callee = program.unit(c);
    let derived = |e: &Expr| {
        dfort_ir::queries::in_formal_order(callee, args)
            .into_iter()
            .enumerate()
            .any(|(k, a)| {
                a.is_some_and(|a| std::ptr::eq(&a.value, e))
                    && callee.symbol(callee.args[k]).ty.base == BaseType::Derived
            })
    };
    by_value(program, set, unit, c, args)
        .into_iter()
        .filter(|e| derived(e))
        .map(|e| Refusal::new(e.span, "a derived-type value that is not a variable is passed where the callee differentiates it; its derivative is not generated yet"))
        .collect()
}
