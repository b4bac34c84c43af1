//! The refusals of intrinsic references in a form the derivative rules
//! of the intrinsic table do not cover (paper 000 differentiates each
//! elementary operation by its local rule; dfort's table has rules for
//! some argument forms of the array reductions only): `maxval`, `minval`
//! and `product` of anything but the forms of
//! [`dfort_ir::intrinsics::reduction`], where a derivative reaches them.
//!
//! Contract: [`of_unit`] lists them for one unit of a root's derivative
//! set, at the reference, where the reference is on the derivative's path
//! (the value of an assignment whose target has a derivative, or an
//! actual of a procedure the root differentiates, below operators and
//! intrinsics with a derivative) and its array has a derivative; the
//! generators refuse none of them themselves.

use super::Refusal;
use crate::derivatives::RootSet;
use dfort_ir::*;

/// The intrinsic-form refusals of `unit` in the set.
pub(super) fn of_unit(program: &Program, set: &RootSet, unit: &Unit) -> Vec<Refusal> {
    let with_d = &set.with_d[unit.id];
    let carries = |e: &Expr| {
        let mut found = false;
        e.walk(&mut |x| {
            if let ExprKind::Var(s) | ExprKind::ArrayRef { array: s, .. } = &x.kind {
                found |= with_d.contains_id(*s);
            }
        });
        found
    };
    let mut out = Vec::new();
    let mut check = |e: &Expr| {
        super::on_derivative_path(e, &mut |x| {
            let ExprKind::Intrinsic { name, args } = &x.kind else {
                return true;
            };
            let reduction = match name.as_str() {
                "maxval" | "minval" => true,
                "product" => args.len() == 1 && args[0].keyword.is_none(),
                _ => false,
            };
            let Some(first) = args.first() else {
                return true;
            };
            if reduction
                && carries(&first.value)
                && dfort_ir::intrinsics::reduction(program, unit, name, args).is_none()
            {
                out.push(Refusal::new(
                    x.span,
                    dfort_ir::intrinsics::reduction_refusal(unit, name, &first.value),
                ));
            }
            true
        })
    };
    for st in unit.stmts.iter() {
        match &st.kind {
            StmtKind::Assign { lhs, rhs }
                if dfort_ir::dp::target(lhs).is_some_and(|(t, _)| with_d.contains_id(t)) =>
            {
                check(rhs)
            }
            StmtKind::Call {
                args,
                target: CallTarget::Unit(c),
                ..
            } if set.units.contains(c) => {
                for a in args {
                    check(&a.value);
                }
            }
            _ => {}
        }
    }
    out
}
