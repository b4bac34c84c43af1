//! Inversion of an assignment with respect to one operand (paper 003 §3,
//! option 1): `w = f(v1…vN)` gives `vk` back when every operation on the
//! path from `vk` to the root of `f` is invertible.
//!
//! Contract: invertible operations are `+`, `-`, unary `+` and `-`, and
//! multiplication by a non-zero integer constant; anything else on the
//! path is reported as a typed [`NonInvertible`] with the span of the
//! expression it heads. Shared by the loops' plans and by the undo of
//! assignments in units with jumps ([`crate::undo`]).

use super::reason::{Blocker, NonInvertible};
use super::term::Term;
use dfort_ir::dp::constant_int;
use dfort_ir::*;

/// The inverse of `e` with respect to the single occurrence of version
/// `target`, given the value `known` of `e`; or the operation that
/// prevents it (`None`: `e` is not an operation, e.g. a function
/// reference).
pub(crate) fn invert(
    unit: &Unit,
    e: &Expr,
    t: &Term,
    target: usize,
    known: Term,
) -> Result<Term, Option<Blocker>> {
    let blocked = |op: NonInvertible| Err(Some(Blocker { op, span: e.span }));
    let contains = |t: &Term| {
        let mut v = Vec::new();
        t.versions(&mut v);
        v.contains(&target)
    };
    match (&e.kind, t) {
        (_, Term::Version(v)) if *v == target => Ok(known),
        (ExprKind::Unary { op, operand }, Term::Unary(_, a)) => match op {
            UnaryOp::Neg => invert(
                unit,
                operand,
                a,
                target,
                Term::Unary(UnaryOp::Neg, Box::new(known)),
            ),
            UnaryOp::Plus => invert(unit, operand, a, target, known),
            UnaryOp::Not => blocked(NonInvertible::LogicalNegation),
        },
        (ExprKind::Binary { op, lhs, rhs }, Term::Binary(_, a, b)) => {
            let in_a = contains(a);
            let (sub, st, other) = if in_a { (lhs, a, b) } else { (rhs, b, a) };
            let o = (**other).clone();
            match op {
                BinaryOp::Add => invert(
                    unit,
                    sub,
                    st,
                    target,
                    Term::Binary(BinaryOp::Sub, Box::new(known), Box::new(o)),
                ),
                BinaryOp::Sub if in_a => invert(
                    unit,
                    sub,
                    st,
                    target,
                    Term::Binary(BinaryOp::Add, Box::new(known), Box::new(o)),
                ),
                BinaryOp::Sub => invert(
                    unit,
                    sub,
                    st,
                    target,
                    Term::Binary(BinaryOp::Sub, Box::new(o), Box::new(known)),
                ),
                BinaryOp::Mul => {
                    let c = if in_a { rhs } else { lhs };
                    match constant_int(unit, c, 0) {
                        Some(k) if k != 0 => invert(
                            unit,
                            sub,
                            st,
                            target,
                            Term::Binary(BinaryOp::Div, Box::new(known), Box::new(o)),
                        ),
                        _ => blocked(NonInvertible::ProductOfVariables),
                    }
                }
                BinaryOp::Div => blocked(NonInvertible::IntegerDivision),
                BinaryOp::Pow => blocked(NonInvertible::Power),
                _ => blocked(NonInvertible::ComparisonOrLogical),
            }
        }
        (ExprKind::Intrinsic { name, .. }, _) => match name.as_str() {
            "mod" | "modulo" => blocked(NonInvertible::Modulo),
            n => blocked(NonInvertible::Intrinsic(n.to_string())),
        },
        (ExprKind::ArrayRef { array, .. }, _) => blocked(NonInvertible::Indirection(*array)),
        _ => Err(None),
    }
}
