//! Function references inside assignments, as the adjoint runs them: the
//! generator hoists the references `dfort_ir::hoist` takes out of an
//! assignment (to procedures dfort has the source of, but those it cannot
//! take out, which stay in their expression and run again in the reverse
//! sweep) into temporaries of their own (innermost first, paper 004 §3)
//! and reverses each as a call (paper 000 §5.2, Tapenade's joint-mode
//! checkpoint). Only those are decided. This decides, per reference, whether the
//! reverse sweep runs its adjoint and what the forward sweep saves around
//! it — so that the generator, `dfort analyze` and the editor read one
//! decision.
//!
//! Contract: [`of_unit`] returns, per assignment the generator hoists out
//! of (its target carries a derivative, or a referenced function writes
//! something with one, or changes an argument or a global at all), the
//! references in hoisting order — post-order, which is the order in which
//! evaluation completes them — each with its checkpoint when its reverse
//! sweep runs: when the assignment has an adjoint (its target carries a
//! derivative and is active after it), the function writes an argument
//! or a global with a derivative, or changes one at all (what it
//! overwrites that the reverse sweep reads is saved around it, as around
//! a CALL: fuzzer, seed 45046, case 1440), or its result feeds a
//! reference whose reverse sweep runs. The checkpoint is
//! [`crate::checkpoint::of_call`]'s with the references nested in the
//! actuals taken as the temporaries they become (values nothing changes
//! after they are computed, so nothing of them is saved). Each reference
//! also says whether the assignment's own adjoint reads its result
//! ([`crate::tbr::results_read`], by TBR's rules), which decides whether
//! its temporary is pushed.

use crate::activity::Activity;
use crate::checkpoint::{in_formal_order, of_call, CallCheckpoint, Callees, Caller};
use dfort_ir::bitset::BitSet;
use dfort_ir::dp::target;
use dfort_ir::queries::carries_ref;
use dfort_ir::*;
use std::collections::BTreeMap;

/// One function reference of an assignment, as the adjoint reverses it.
#[derive(Clone, Debug)]
pub struct ReferenceCheckpoint {
    pub callee: UnitId,
    /// Where the reference is written.
    pub span: Span,
    /// What the forward sweep saves around it; `None` when the reverse
    /// sweep does not run its adjoint (nor saves anything for it).
    pub checkpoint: Option<CallCheckpoint>,
    /// The references nested in its actuals (indices into the
    /// statement's list) whose results its adjoint reads: the snapshot
    /// saves the temporaries holding them first (a loop computes them
    /// again in its next iteration).
    pub saved_results: Vec<usize>,
    /// Whether the assignment has an adjoint that reads the reference's
    /// result ([`crate::tbr::results_read`]): when it does not, the forward sweep keeps no
    /// copy of the temporary holding it.
    pub result_read: bool,
}

/// A function reference whose result the forward sweep pushes (the
/// temporary the generator hoists it into), and whose adjoint reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PushedResult {
    pub stmt: StmtId,
    pub callee: UnitId,
    /// Where the reference is written.
    pub span: Span,
    /// The adjoint that reads the result: the assignment's (`None`,
    /// [`ReferenceCheckpoint::result_read`]), or that of the reference it
    /// is an actual of (`Some(outer callee)`: that call's snapshot saves
    /// it, [`ReferenceCheckpoint::saved_results`]).
    pub read_by: Option<UnitId>,
}

/// The references of assignment `stmt` (its list `refs`, in hoisting
/// order) whose results the forward sweep pushes.
pub(crate) fn pushed_results(stmt: StmtId, refs: &[ReferenceCheckpoint]) -> Vec<PushedResult> {
    let mut out = Vec::new();
    for (k, r) in refs.iter().enumerate() {
        let outer = refs
            .iter()
            .find(|o| o.checkpoint.is_some() && o.saved_results.contains(&k));
        let read_by = match (r.result_read, outer) {
            (true, _) => None,
            (false, Some(o)) => Some(o.callee),
            (false, None) => continue,
        };
        out.push(PushedResult {
            stmt,
            callee: r.callee,
            span: r.span,
            read_by,
        });
    }
    out
}

/// What [`of_unit`] reads of the derivatives the roots need.
pub struct Carried<'a> {
    /// The unit's symbols with a derivative.
    pub with_d: &'a BitSet,
    /// Per unit: whether it writes an argument or a global with a
    /// derivative ([`crate::derivatives::writes_derivatives`]).
    pub writers: &'a IdVec<UnitId, bool>,
}

/// A reference found in an expression: callee, actuals, where, and the
/// references directly nested in its actuals (indices into the list).
struct Found<'e> {
    callee: UnitId,
    args: &'e [Arg],
    span: Span,
    nested: Vec<usize>,
}

/// The references to procedures with source in `e`, in post-order.
fn references(e: &Expr) -> Vec<Found<'_>> {
    fn walk<'e>(e: &'e Expr, out: &mut Vec<Found<'e>>) -> Vec<usize> {
        let mut inner = Vec::new();
        for c in e.children() {
            inner.extend(walk(c, out));
        }
        match &e.kind {
            ExprKind::FunctionCall {
                target: CallTarget::Unit(c),
                args,
                ..
            } => {
                out.push(Found {
                    callee: *c,
                    args,
                    span: e.span,
                    nested: inner,
                });
                vec![out.len() - 1]
            }
            _ => inner,
        }
    }
    let mut out = Vec::new();
    walk(e, &mut out);
    out
}

/// The references of `found` written at `spans` (those the generator
/// hoists), their nested references renumbered. Hoisting goes innermost
/// first, so a reference left in place has none hoisted around it.
fn only_hoisted<'e>(found: Vec<Found<'e>>, spans: &[Span]) -> Vec<Found<'e>> {
    let kept: Vec<bool> = found.iter().map(|f| spans.contains(&f.span)).collect();
    let mut index = Vec::with_capacity(found.len());
    let mut n = 0;
    for &k in &kept {
        index.push(n);
        n += usize::from(k);
    }
    found
        .into_iter()
        .zip(&kept)
        .filter(|(_, &k)| k)
        .map(|(mut f, _)| {
            f.nested = f
                .nested
                .iter()
                .filter(|&&j| kept[j])
                .map(|&j| index[j])
                .collect();
            f
        })
        .collect()
}

/// `args` with each reference to a procedure with source replaced by a
/// constant: the temporary the generator hoists it into is saved apart
/// ([`ReferenceCheckpoint::saved_results`]).
fn as_hoisted(args: &[Arg]) -> Vec<Arg> {
    let mut out = args.to_vec();
    for a in &mut out {
        a.value.walk_mut(&mut |x| {
            if matches!(
                x.kind,
                ExprKind::FunctionCall {
                    target: CallTarget::Unit(_),
                    ..
                }
            ) {
                x.kind = ExprKind::Int(0);
            }
        });
    }
    out
}

/// The references of the assignments of `caller`'s unit (its `orig` and
/// `unit` the same, activity `act`), each assignment's inside counted
/// loops with indices `replayed` (per statement) that the reverse sweep
/// replays.
pub fn of_unit(
    caller: &Caller,
    callees: &Callees,
    carried: &Carried,
    act: &Activity,
    replayed: &BTreeMap<StmtId, Vec<SymbolId>>,
) -> BTreeMap<StmtId, Vec<ReferenceCheckpoint>> {
    let (program, unit) = (caller.program, caller.unit);
    let writer = |c: UnitId| carried.writers.get(c).copied().unwrap_or(false);
    let changes_state = |c: UnitId| caller.effects.get(c).is_some_and(|e| e.changes_state());
    let mut out = BTreeMap::new();
    // The references the generator hoists (`dfort_ir::hoist`); another
    // stays in its expression and runs as the original there, in both
    // sweeps (a passive array-valued function whose result's bounds are
    // not expressions of its arguments, say).
    let (_, hoisted) = dfort_ir::hoist::hoist(
        program,
        unit,
        |st| matches!(&st.kind, StmtKind::Assign { rhs, .. } if !references(rhs).is_empty()),
    );
    for st in &unit.stmts {
        let StmtKind::Assign { lhs, rhs } = &st.kind else {
            continue;
        };
        let spans: Vec<Span> = hoisted
            .get(&st.id)
            .into_iter()
            .flatten()
            .map(|h| h.span)
            .collect();
        let found = only_hoisted(references(rhs), &spans);
        if found.is_empty() {
            continue;
        }
        let t = target(lhs).map(|(t, _)| t);
        let carries = t.is_some_and(|t| carried.with_d.contains_id(t));
        if !carries
            && !found
                .iter()
                .any(|f| writer(f.callee) || changes_state(f.callee))
        {
            continue;
        }
        let adjoint = carries
            && carries_ref(program, unit, lhs)
            && t.is_some_and(|t| act.active_after(st.id, t));
        // Outermost last: a reference runs when one it feeds does.
        let mut reversed = vec![false; found.len()];
        for j in (0..found.len()).rev() {
            let feeds = (j + 1..found.len()).any(|k| reversed[k] && found[k].nested.contains(&j));
            let c = found[j].callee;
            reversed[j] = adjoint || writer(c) || changes_state(c) || feeds;
        }
        let around = replayed.get(&st.id).map(Vec::as_slice).unwrap_or(&[]);
        let read = match adjoint {
            true => {
                let spans: Vec<Span> = found.iter().map(|f| f.span).collect();
                crate::tbr::results_read(unit, act, st.id, rhs, &spans)
            }
            false => vec![false; found.len()],
        };
        let refs = found
            .iter()
            .zip(reversed)
            .zip(read)
            .map(|((f, reversed), result_read)| ReferenceCheckpoint {
                callee: f.callee,
                span: f.span,
                checkpoint: reversed.then(|| {
                    let args = as_hoisted(f.args);
                    of_call(caller, callees, st.id, Some(f.callee), &args, around)
                }),
                saved_results: match reversed && callees.routine(f.callee) {
                    true => read_results(caller, callees, f, &found),
                    false => Vec::new(),
                },
                result_read,
            })
            .collect();
        out.insert(st.id, refs);
    }
    out
}

/// The references nested in `f`'s actuals whose results `f`'s adjoint
/// reads: an actual that is such a reference, bound to a formal the
/// callee reads, or an expression containing one.
fn read_results(caller: &Caller, callees: &Callees, f: &Found, found: &[Found]) -> Vec<usize> {
    let cu = caller.program.unit(f.callee);
    let formal_read = |k: usize| {
        caller
            .effects
            .get(f.callee)
            .is_some_and(|fx| fx.read_formals.contains(&(k as u32)))
    };
    let mut out = Vec::new();
    for (k, a) in in_formal_order(cu, f.args).into_iter().enumerate() {
        let Some(a) = a else { continue };
        let formal = cu.args.get(k).copied();
        if !callees.reads(f.callee, formal) {
            continue;
        }
        for &j in &f.nested {
            if !a.value.span.holds(found[j].span) || out.contains(&j) {
                continue;
            }
            let direct = a.value.span == found[j].span;
            if direct && !formal_read(k) {
                continue;
            }
            out.push(j);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::test_support::{program, request};
    use dfort_ir::*;

    /// Per assignment of `f` (x independent, y dependent), whether its
    /// adjoint reads each function reference's result, in post-order.
    fn reads(body: &str) -> Vec<Vec<bool>> {
        let src = format!(
            "module m\ncontains\n  real(8) function g(a)\n    real(8), intent(in) :: a\n    g = a*a\n  end function\nend module\nsubroutine f(x, y, n)\n  use m\n  real(8), parameter :: c = 2.0d0\n  real(8) :: x, y, a\n  integer :: n\n  a = 3.0d0\n{body}end subroutine\n"
        );
        let p = program(&src);
        let facts = crate::facts::analyse(&p, &request("f", &["x"], &["y"]), None);
        let u = p.units.iter().find(|u| u.name == "f").unwrap();
        let d = facts.decisions_of(u.id).unwrap();
        u.stmts
            .iter()
            .filter(|st| matches!(st.kind, StmtKind::Assign { .. }))
            .filter_map(|st| d.references.get(&st.id))
            .map(|refs| refs.iter().map(|r| r.result_read).collect())
            .collect()
    }

    #[test]
    fn a_result_in_linear_positions_is_not_read() {
        let got = reads(
            "  y = y + g(x)\n  y = y - g(x)/c - 3.0d0*g(y)\n  y = y + n*g(x)\n  y = y + a*g(x)\n",
        );
        assert_eq!(
            got,
            vec![vec![false], vec![false, false], vec![false], vec![false]]
        );
    }

    #[test]
    fn a_result_in_a_nonlinear_position_is_read() {
        let got = reads(
            "  y = y + x*g(x)\n  y = y + g(x)**2\n  y = y + c/g(x)\n  y = y + sin(g(x))\n  y = y + x*g(g(x))\n  y = y + g(x)/x\n  y = y + g(x)*y\n",
        );
        assert_eq!(
            got,
            vec![
                vec![true],
                vec![true],
                vec![true],
                vec![true],
                // The inner reference is an actual of the outer: the
                // outer's snapshot saves it, the assignment reads the
                // outer's result only.
                vec![false, true],
                vec![true],
                vec![true]
            ]
        );
    }

    #[test]
    fn an_assignment_without_adjoint_reads_no_result() {
        // `a` is passive: its assignment has no adjoint.
        let got = reads("  a = x*g(x)\n  y = y + x\n");
        assert!(got.iter().flatten().all(|r| !r), "{got:?}");
    }

    /// The generator leaves a reference it cannot hoist in its
    /// expression (here an array-valued function whose result's bounds
    /// read an array the unit changes): nothing is decided for it, and
    /// its result is not among the pushed ones; the reference it can
    /// hoist in the same unit is.
    #[test]
    fn a_reference_left_in_its_expression_is_not_decided() {
        let src = "module m\n  real(8), allocatable :: t(:)\ncontains\n  function w(c) result(r)\n    real(8), intent(in) :: c(:)\n    real(8) :: r(size(c))\n    r = 1.0d0/(1.0d0 + c**2)\n  end function\n  real(8) function g(a)\n    real(8), intent(in) :: a\n    g = a*a\n  end function\nend module\nsubroutine f(n, s, y)\n  use m\n  integer :: n, i\n  real(8) :: s, y(n)\n  do i = 1, n\n    t(i) = 0.1d0*i\n  end do\n  y(1) = s*g(s)\n  y(2:n) = s*w(t(1:n - 1))\nend subroutine\n";
        let p = program(src);
        let facts = crate::facts::analyse(&p, &request("f", &["s"], &["y"]), None);
        let u = p.units.iter().find(|u| u.name == "f").unwrap();
        let d = facts.decisions_of(u.id).unwrap();
        let callees: Vec<&str> = d
            .pushed_results()
            .iter()
            .map(|r| p.unit(r.callee).name.as_str())
            .collect();
        assert_eq!(callees, vec!["g"]);
        let decided: Vec<&str> = d
            .references
            .values()
            .flatten()
            .map(|r| p.unit(r.callee).name.as_str())
            .collect();
        assert_eq!(decided, vec!["g"]);
    }
}
