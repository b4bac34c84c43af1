//! The refusals of calls (paper 000 differentiates through the calls to
//! procedures it has the source of, each through its derivative routine):
//! a call or a function reference that passes an active value to a
//! procedure without a derivative routine in the root's set (rule
//! `no-source`, the editor's warning too), and an actual for which a
//! derivative routine cannot be passed a derivative (rule
//! `derivative-argument`).
//!
//! Contract: [`of_unit`] lists them for one unit, on the unit as
//! analysed, at the CALL statement or at the function reference, given
//! which procedures get a derivative routine ([`Routines`]: a root's
//! derivative set for the generators, which refuse none of them
//! themselves; every root's carriers for the editor's warnings).

use super::Refusal;
use crate::activity::Activity;
use crate::derivatives::{Carriers, RootSet};
use dfort_ir::bitset::BitSet;
use dfort_ir::chunk_vec::ChunkVec;
use dfort_ir::dp::target;
use dfort_ir::*;
use dfort_syntax::rules::{self, DerivativeActual};

/// Which procedures get a derivative routine and which variables carry
/// a derivative.
pub(crate) struct Routines<'s> {
    routine: Box<dyn Fn(UnitId) -> bool + 's>,
    with_d: &'s ChunkVec<UnitId, BitSet>,
    /// Whether a reference to the function runs as a call although the
    /// assignment's target has no derivative: it writes one, or (in the
    /// adjoint) changes an argument or a global.
    runs_as_call: Box<dyn Fn(UnitId) -> bool + 's>,
}

impl<'s> Routines<'s> {
    /// Those of a root's derivative set, for the adjoint or the tangent.
    pub(crate) fn of_set(set: &'s RootSet, adjoint: bool) -> Self {
        Routines {
            routine: Box::new(|c| set.units.contains(&c)),
            with_d: &set.with_d,
            runs_as_call: Box::new(move |c| {
                set.writers.contains(&c) || (adjoint && set.changes_state[c])
            }),
        }
    }
    /// Those of every root together (the editor's warnings): references
    /// run as calls where the target has a derivative.
    pub(crate) fn of_carriers(c: &'s Carriers) -> Self {
        Routines {
            routine: Box::new(|u| c.routine.get(u).copied().unwrap_or(true)),
            with_d: &c.with_d,
            runs_as_call: Box::new(|_| false),
        }
    }
}

/// The calls' refusals of `unit` (analysed with `act`).
pub(crate) fn of_unit(
    program: &Program,
    set: &Routines,
    unit: &Unit,
    act: &Activity,
) -> Vec<Refusal> {
    let with_d = &set.with_d[unit.id];
    let has_d = |e: &Expr| target(e).is_some_and(|(s, _)| with_d.contains_id(s));
    let mut out = Vec::new();
    // The statements with a call site (all of them where statement
    // functions, whose bodies the analysed unit has inlined, may hold
    // references of their own).
    let mut with_calls: Vec<StmtId> = match unit.stmt_functions.is_empty() {
        true => program
            .call_graph
            .calls_from
            .get(unit.id)
            .map(|sites| {
                sites
                    .iter()
                    .map(|&i| program.call_graph.sites[i].stmt)
                    .collect()
            })
            .unwrap_or_default(),
        false => unit.stmts.indices().collect(),
    };
    with_calls.sort();
    with_calls.dedup();
    for st in with_calls.into_iter().filter_map(|id| unit.stmts.get(id)) {
        match &st.kind {
            StmtKind::Call {
                args,
                target: CallTarget::Unit(c),
                ..
            } if (set.routine)(*c) => out.extend(derivative_actual(
                program, set, unit, *c, args, &has_d, st.span,
            )),
            StmtKind::Call { name, args, target } => {
                // `move_alloc` moves derivatives with the arrays.
                if dfort_ir::intrinsics::move_alloc(&st.kind).is_some() {
                    continue;
                }
                let has_source = matches!(target, CallTarget::Unit(_));
                out.extend(no_derivative(
                    unit, act, st.id, st.span, name, args, has_source,
                ));
            }
            StmtKind::Assign { lhs, rhs } => {
                // Function references are run as calls where the
                // assignment's target has a derivative, and where the
                // function writes one or (in the adjoint) changes state.
                let differentiated = has_d(lhs);
                rhs.walk(&mut |x| {
                    let ExprKind::FunctionCall { name, args, target } = &x.kind else {
                        return;
                    };
                    let runs = |c: UnitId| differentiated || (set.runs_as_call)(c);
                    match target {
                        // A reference to a procedure with a derivative
                        // routine is run as a call once hoisted: its
                        // actuals are the hoisted ones ([`super::hoisting`]).
                        CallTarget::Unit(c) if !runs(*c) || (set.routine)(*c) => {}
                        // Without a derivative routine: run as a call
                        // there too, or (no source) differentiated in
                        // its expression.
                        CallTarget::Unit(_) => {
                            out.extend(no_derivative(unit, act, st.id, x.span, name, args, true))
                        }
                        CallTarget::External if differentiated => {
                            out.extend(no_derivative(unit, act, st.id, x.span, name, args, false))
                        }
                        _ => {}
                    }
                });
            }
            _ => {}
        }
    }
    out
}

/// The `no-source` refusal of a call at `span` of statement `st` to
/// `name`, which has no derivative routine, when it receives an active
/// value ([`Activity::active_actuals`]).
fn no_derivative(
    unit: &Unit,
    act: &Activity,
    st: StmtId,
    span: Span,
    name: &str,
    args: &[Arg],
    has_source: bool,
) -> Option<Refusal> {
    let active = act.active_actuals(unit, unit.symbols.len(), st, args);
    if active.is_empty() {
        return None;
    }
    let names: Vec<String> = active
        .iter()
        .map(|s| unit.symbol(*s).name.clone())
        .collect();
    Some(Refusal::new(
        span,
        rules::no_derivative_for_call(name, &names, has_source),
    ))
}

/// The `derivative-argument` refusal of a call at `span` to `c`, whose
/// derivative routine takes a derivative for each formal with one: the
/// first actual (in formal order) it cannot be passed one for.
pub(super) fn derivative_actual(
    program: &Program,
    set: &Routines,
    unit: &Unit,
    c: UnitId,
    args: &[Arg],
    has_d: &dyn Fn(&Expr) -> bool,
    span: Span,
) -> Option<Refusal> {
    let callee = program.unit(c);
    let formals = dfort_ir::queries::in_formal_order(callee, args);
    for (k, a) in formals.into_iter().enumerate() {
        let f = callee.args[k];
        let Some(a) = a else { continue };
        if !set.with_d[c].contains_id(f) {
            continue;
        }
        let scalar_formal = callee.symbol(f).rank() == 0;
        let elementwise = scalar_formal && dfort_ir::queries::rank_of(program, unit, &a.value) > 0;
        let why = match &a.value.kind {
            _ if elementwise && !has_d(&a.value) => DerivativeActual::ElementalWithout,
            ExprKind::Var(_) | ExprKind::ArrayRef { .. } if has_d(&a.value) || scalar_formal => {
                continue
            }
            ExprKind::Var(_) | ExprKind::ArrayRef { .. } => DerivativeActual::ArrayWithout,
            _ if scalar_formal => continue,
            _ => DerivativeActual::ArrayExpression,
        };
        let primal = dfort_ir::dump::expr(unit, &a.value);
        return Some(Refusal::new(
            span,
            rules::derivative_actual(why, &primal, &callee.name, &callee.symbol(f).name),
        ));
    }
    None
}
