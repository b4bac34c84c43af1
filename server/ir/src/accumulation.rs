//! Accumulations: `v = v ± e₁ ± e₂ …` or `v = e + v` where no term reads
//! `v`'s storage. Their adjoint passes v̄ through unchanged and adds
//! ±v̄·∂eᵢ to the adjoints of what each eᵢ reads, instead of saving v̄,
//! zeroing it and adding it back (issue 44's "accumulations pass v̄
//! through").
//!
//! Contract: [`terms`] returns the terms and their signs, or `None`. A
//! term may read `v`'s variable only through a component path that
//! neither is a prefix of `v`'s nor has `v`'s as a prefix (`p%x = p%x +
//! dt*p%v`: components of different names never share memory), and only
//! when the variable's type has no pointer component at any depth (a
//! pointer component may point back into the variable); a term reading
//! another member of `v`'s may-alias class (EQUIVALENCE, pointers) makes
//! it no accumulation.

use crate::queries::{class_of, type_has_pointer_components};
use crate::*;

/// The terms and signs of the accumulation `lhs = rhs`, or `None`.
pub fn terms<'e>(
    program: &Program,
    unit: &Unit,
    lhs: &Expr,
    rhs: &'e Expr,
) -> Option<Vec<(&'e Expr, i8)>> {
    let (t, _) = crate::dp::target(lhs)?;
    let written = crate::dump::expr(unit, lhs);
    let same = |x: &Expr| crate::dump::expr(unit, x) == written;
    let own = path(lhs);
    let by_component =
        !own.is_empty() && !type_has_pointer_components(program, unit, &unit.symbol(t).ty);
    let class = class_of(unit, t).map_or_else(|| vec![t], <[SymbolId]>::to_vec);
    let clean = |terms: &[(&Expr, i8)]| {
        terms.iter().all(|(e, _)| {
            let mut read = Vec::new();
            references(e, &mut read);
            read.iter()
                .all(|(s, p)| !class.contains(s) || (*s == t && by_component && disjoint(&own, p)))
        })
    };
    // `v ± e₁ ± e₂ …`: the sum's leftmost operand is `v`.
    if let Some(terms) = leading_terms(unit, lhs, rhs) {
        if clean(&terms) {
            return Some(terms);
        }
    }
    // `e + v`.
    match &rhs.kind {
        ExprKind::Binary {
            op: BinaryOp::Add,
            lhs: a,
            rhs: b,
        } if same(b) && clean(&[(a, 1)]) => Some(vec![(a, 1)]),
        _ => None,
    }
}

/// The terms and signs of `lhs = lhs ± e₁ ± e₂ …` (the sum's leftmost
/// operand written as `lhs` is), whatever the terms read — `u(i) =
/// u(i) + h*u(i)**2` too, which is no accumulation: its adjoint still
/// passes v̄ through and adds ±v̄·∂eᵢ, but from a copy of v̄ taken
/// before (the terms' partials add into v̄ itself). `None` otherwise.
pub fn leading_terms<'e>(unit: &Unit, lhs: &Expr, rhs: &'e Expr) -> Option<Vec<(&'e Expr, i8)>> {
    let written = crate::dump::expr(unit, lhs);
    let mut terms = Vec::new();
    let mut first = rhs;
    while let ExprKind::Binary { op, lhs: a, rhs: b } = &first.kind {
        match op {
            BinaryOp::Add => terms.push((&**b, 1)),
            BinaryOp::Sub => terms.push((&**b, -1)),
            _ => break,
        }
        first = a;
    }
    if terms.is_empty() || crate::dump::expr(unit, first) != written {
        return None;
    }
    terms.reverse();
    Some(terms)
}

/// Whether two component paths of one variable name storage that cannot
/// overlap: they differ at a place both have.
pub fn disjoint(a: &[&str], b: &[&str]) -> bool {
    a.iter().zip(b).any(|(x, y)| x != y)
}

/// The component names of a data reference from its variable outwards
/// (`ps(i)%c(2)%y` → `[c, y]`, `x(i)` → `[]`).
pub fn path(e: &Expr) -> Vec<&str> {
    match &e.kind {
        ExprKind::Component { base, name, .. } => {
            let mut p = path(base);
            p.push(name);
            p
        }
        _ => Vec::new(),
    }
}

/// The variables `e` reads, each with the component path it reads of it
/// (empty: the whole variable, or elements of it).
pub fn references<'e>(e: &'e Expr, out: &mut Vec<(SymbolId, Vec<&'e str>)>) {
    match &e.kind {
        ExprKind::Var(s) => out.push((*s, Vec::new())),
        ExprKind::ArrayRef { array, .. } => {
            out.push((*array, Vec::new()));
            for c in e.children() {
                references(c, out);
            }
        }
        ExprKind::Component { .. } => {
            let mut x = e;
            while let ExprKind::Component { base, .. } = &x.kind {
                // This level's subscripts (its base comes first).
                for c in x.children().into_iter().skip(1) {
                    references(c, out);
                }
                x = base;
            }
            match &x.kind {
                ExprKind::Var(s) => out.push((*s, path(e))),
                ExprKind::ArrayRef { array, .. } => {
                    out.push((*array, path(e)));
                    for c in x.children() {
                        references(c, out);
                    }
                }
                _ => references(x, out),
            }
        }
        _ => {
            for c in e.children() {
                references(c, out);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::test_support::program;
    use crate::*;

    /// Per assignment of `f`, the number of terms when it is an
    /// accumulation (`None`: it is not).
    fn accumulations(body: &str) -> Vec<Option<usize>> {
        let src = format!(
            "module m\n  type vec\n    real(8) :: x, y\n  end type\n  type body\n    type(vec) :: pos, vel\n    real(8) :: m\n  end type\n  type node\n    real(8) :: v, w\n    type(node), pointer :: next => null()\n  end type\nend module\nsubroutine f(p, b, n, dt, i, j)\n  use m\n  type(body) :: p, b(10)\n  type(node) :: n\n  real(8) :: dt\n  integer :: i, j\n{body}end subroutine\n"
        );
        let prog = program(&src);
        let u = prog.units.iter().find(|u| u.name == "f").unwrap();
        u.stmts
            .iter()
            .filter_map(|st| match &st.kind {
                StmtKind::Assign { lhs, rhs } => {
                    Some(super::terms(&prog, u, lhs, rhs).map(|t| t.len()))
                }
                _ => None,
            })
            .collect()
    }

    #[test]
    fn terms_may_read_other_components_of_the_target() {
        let got = accumulations(
            "  p%pos%x = p%pos%x + dt*p%vel%x\n  p%pos%x = p%pos%x - p%pos%y*p%m + dt\n  b(i)%m = b(i)%m + b(j)%pos%x\n  p%m = dt*p%vel%y + p%m\n",
        );
        assert_eq!(got, vec![Some(1), Some(2), Some(1), Some(1)]);
    }

    #[test]
    fn terms_reading_the_target_or_what_holds_it_are_not() {
        let got = accumulations(
            "  p%pos%x = p%pos%x + dt*p%pos%x\n  b(i)%m = b(i)%m + b(j)%m\n  p%pos%x = p%pos%x + sum([p%pos%y, p%m]) + f2(p%pos)\n  p%m = p%m + g(p)\n  n%v = n%v + n%w\n",
        );
        assert_eq!(got, vec![None, None, None, None, None]);
    }
}
