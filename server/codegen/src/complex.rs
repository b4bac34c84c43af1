//! Complex values in the derivatives: which expressions are complex, and
//! the rules of the intrinsics that are not holomorphic (`conjg`, `real`,
//! `aimag`, `abs` of a complex value, `cmplx`). Complex values of kind 4
//! and 8 alike.
//!
//! Convention (Tapenade's): the derivative of a complex `z = x + iy` is
//! the complex `ż = ẋ + iẏ`, its adjoint `z̄ = x̄ + iȳ`. A holomorphic
//! operation `w = f(z)` has tangent `f'(z) ż` and adjoint `z̄ += conj(f'(z)) w̄`;
//! a real operand `a` of a complex operation gets `ā += Re(conj(∂w/∂a) w̄)`.
//! `|z|` at `z = 0` has the subgradient 0.

use dfort_ir::dump::expr as print;
use dfort_ir::intrinsics::{ComplexRule, Ty};
use dfort_ir::*;

/// Whether `e` has a complex value.
pub fn is_complex(unit: &Unit, e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Complex(..) => true,
        ExprKind::Var(s) | ExprKind::ArrayRef { array: s, .. } => {
            unit.symbol(*s).ty.base == BaseType::Complex
        }
        ExprKind::Unary { operand, .. } => is_complex(unit, operand),
        ExprKind::Binary { op, lhs, rhs } => {
            matches!(
                op,
                BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Div | BinaryOp::Pow
            ) && (is_complex(unit, lhs) || is_complex(unit, rhs))
        }
        ExprKind::Intrinsic { name, args } => {
            match dfort_ir::intrinsics::lookup(name).map(|i| (i.ty, i.on_complex)) {
                Some((Ty::Complex, _)) => true,
                // `abs(z)` is real.
                Some((Ty::Arg, Some(ComplexRule::Modulus))) => false,
                Some((Ty::Arg, _)) | None => {
                    args.first().is_some_and(|a| is_complex(unit, &a.value))
                }
                Some(_) => false,
            }
        }
        ExprKind::FunctionCall { .. } | ExprKind::Apply { .. } => false,
        ExprKind::ArrayCtor(items) => items.first().is_some_and(|i| is_complex(unit, i)),
        _ => false,
    }
}

/// Whether any complex value occurs in `e`.
pub fn mentions_complex(unit: &Unit, e: &Expr) -> bool {
    let mut found = false;
    e.walk(&mut |x| found |= is_complex(unit, x));
    found
}

/// An intrinsic that is not holomorphic in its complex argument, or
/// builds a complex value from reals (the intrinsic table's rule).
pub use dfort_ir::intrinsics::ComplexRule as Special;

/// `e`'s special rule, if it has one.
pub fn special(unit: &Unit, e: &Expr) -> Option<Special> {
    let ExprKind::Intrinsic { name, args } = &e.kind else {
        return None;
    };
    let z = args.first().map(|a| &a.value)?;
    let complex_arg = is_complex(unit, z);
    let rule = dfort_ir::intrinsics::lookup(name)?.on_complex?;
    let applies = match rule {
        Special::Conjugate | Special::ImaginaryPart => true,
        Special::RealPart | Special::Modulus => complex_arg,
        Special::Build => !complex_arg,
    };
    applies.then_some(rule)
}

/// The real and imaginary operands of `cmplx(x, y, kind)` (by position or
/// keyword), and its kind argument's text.
pub fn build_parts<'e>(
    unit: &Unit,
    args: &'e [Arg],
) -> (Option<&'e Expr>, Option<&'e Expr>, Option<String>) {
    let mut x = None;
    let mut y = None;
    let mut kind = None;
    for (i, a) in args.iter().enumerate() {
        match (a.keyword.as_deref(), i) {
            (Some("x"), _) | (None, 0) => x = Some(&a.value),
            (Some("y"), _) | (None, 1) => y = Some(&a.value),
            (Some("kind"), _) | (None, 2) => kind = Some(print(unit, &a.value)),
            _ => {}
        }
    }
    (x, y, kind)
}

/// The tangent of special intrinsic `e` (`s`), given the tangents of its
/// operands (`None`: zero).
pub fn tangent(
    unit: &Unit,
    e: &Expr,
    s: Special,
    d: &dyn Fn(&Expr) -> Option<String>,
) -> Option<String> {
    let ExprKind::Intrinsic { args, .. } = &e.kind else {
        return None;
    };
    let z = &args.first()?.value;
    match s {
        Special::Conjugate => d(z).map(|dz| format!("conjg({dz})")),
        Special::RealPart => d(z).map(|dz| format!("real({dz}, 8)")),
        Special::ImaginaryPart => d(z).map(|dz| format!("aimag({dz})")),
        Special::Modulus => d(z).map(|dz| {
            let zv = print(unit, z);
            format!("real(conjg({zv}) * ({dz}), 8) / max(abs({zv}), tiny(1.0d0))")
        }),
        Special::Build => {
            let (x, y, kind) = build_parts(unit, args);
            let dx = x.and_then(d);
            let dy = y.and_then(d);
            if dx.is_none() && dy.is_none() {
                return None;
            }
            let k = kind.map(|k| format!(", {k}")).unwrap_or_default();
            Some(format!(
                "cmplx({}, {}{k})",
                dx.unwrap_or_else(|| "0.0d0".into()),
                dy.unwrap_or_else(|| "0.0d0".into())
            ))
        }
    }
}

/// The adjoints special intrinsic `e` (`s`) passes to its operands, given
/// its own adjoint `m`: (operand, its adjoint's increment).
pub fn adjoint<'e>(unit: &Unit, e: &'e Expr, s: Special, m: &str) -> Vec<(&'e Expr, String)> {
    let ExprKind::Intrinsic { args, .. } = &e.kind else {
        return Vec::new();
    };
    let Some(z) = args.first().map(|a| &a.value) else {
        return Vec::new();
    };
    match s {
        Special::Conjugate => vec![(z, format!("conjg({m})"))],
        Special::RealPart => vec![(z, format!("cmplx({m}, 0.0d0, 8)"))],
        Special::ImaginaryPart => vec![(z, format!("cmplx(0.0d0, {m}, 8)"))],
        Special::Modulus => {
            let zv = print(unit, z);
            vec![(z, format!("({m}) * ({zv}) / max(abs({zv}), tiny(1.0d0))"))]
        }
        Special::Build => {
            let (x, y, _) = build_parts(unit, args);
            let mut out = Vec::new();
            if let Some(x) = x {
                out.push((x, format!("real({m}, 8)")));
            }
            if let Some(y) = y {
                out.push((y, format!("aimag({m})")));
            }
            out
        }
    }
}

/// The conjugate of a partial derivative's text: a real constant is its
/// own, anything else is made complex first (`conjg` takes complex
/// arguments only).
pub fn conjugate(d: &str) -> String {
    let t = d.trim().trim_start_matches('(').trim_end_matches(')');
    if t.trim_start_matches('-').parse::<f64>().is_ok()
        || t.trim_start_matches('-')
            .replace("d0", "")
            .parse::<f64>()
            .is_ok()
    {
        return d.to_string();
    }
    format!("conjg(({d}) + (0.0d0, 0.0d0))")
}

#[cfg(test)]
mod tests {
    use super::conjugate;

    #[test]
    fn real_constants_are_their_own_conjugates() {
        assert_eq!(conjugate("1.0d0"), "1.0d0");
        assert_eq!(conjugate("-1.0d0"), "-1.0d0");
        assert_eq!(conjugate("(z)"), "conjg(((z)) + (0.0d0, 0.0d0))");
    }
}
