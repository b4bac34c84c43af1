//! Symbolic bounds: expressions in the formals of a procedure (or, once
//! substituted, in a caller's values), their arithmetic with constant
//! folding, and their substitution, rebasing and conversion from and to
//! the IR's expressions.

use super::*;
use std::cmp::Ordering;

/// A bound in terms of a procedure's formals, or (once substituted) of a
/// caller's expressions.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Bound {
    Int(i64),
    /// The entry value of the procedure's n-th formal (0-based), an
    /// integer scalar it never writes.
    Formal(u32),
    /// A loop index (or a local given in terms of loop indices) of the
    /// procedure, while its region is computed; none is left in a
    /// [`FormalRegion`].
    Var(SymbolId),
    /// A value that is not negative (an array's extent): products with it
    /// go inside sums, `min` and `max`.
    NonNeg(Box<Bound>),
    Sum(Vec<Bound>),
    /// `c * b`.
    Scale(i64, Box<Bound>),
    Product(Box<Bound>, Box<Bound>),
    /// Integer division, the divisor a positive constant or a leading
    /// extent and the dividend non-negative where it is used.
    Quotient(Box<Bound>, Box<Bound>),
    Max(Vec<Bound>),
    Min(Vec<Bound>),
}

impl Bound {
    pub(crate) fn constant(&self) -> Option<i64> {
        match self {
            Bound::Int(v) => Some(*v),
            _ => None,
        }
    }

    /// The bound as `rest + c` (its constant term split off).
    pub(super) fn split(&self) -> (Bound, i64) {
        match self {
            Bound::Int(v) => (Bound::Int(0), *v),
            Bound::Sum(terms) => {
                let c: i64 = terms.iter().filter_map(Bound::constant).sum();
                let rest: Vec<Bound> = terms
                    .iter()
                    .filter(|t| t.constant().is_none())
                    .cloned()
                    .collect();
                (sum_of(rest), c)
            }
            b => (b.clone(), 0),
        }
    }

    /// The loop indices it holds.
    pub(super) fn vars(&self) -> Vec<SymbolId> {
        match self {
            Bound::Int(_) | Bound::Formal(_) => Vec::new(),
            Bound::Var(v) => vec![*v],
            Bound::NonNeg(b) => b.vars(),
            Bound::Sum(v) | Bound::Max(v) | Bound::Min(v) => {
                v.iter().flat_map(|b| b.vars()).collect()
            }
            Bound::Scale(_, b) => b.vars(),
            Bound::Product(a, b) | Bound::Quotient(a, b) => {
                a.vars().into_iter().chain(b.vars()).collect()
            }
        }
    }

    /// Whether it holds the loop index (or local) `v`.
    pub(super) fn holds(&self, v: SymbolId) -> bool {
        match self {
            Bound::Int(_) | Bound::Formal(_) => false,
            Bound::Var(x) => *x == v,
            Bound::NonNeg(b) | Bound::Scale(_, b) => b.holds(v),
            Bound::Sum(t) | Bound::Max(t) | Bound::Min(t) => t.iter().any(|b| b.holds(v)),
            Bound::Product(a, b) | Bound::Quotient(a, b) => a.holds(v) || b.holds(v),
        }
    }

    /// Every formal it reads.
    pub fn formals(&self, out: &mut Vec<u32>) {
        match self {
            Bound::Int(_) | Bound::Var(_) => {}
            Bound::NonNeg(b) => b.formals(out),
            Bound::Formal(k) => {
                if !out.contains(k) {
                    out.push(*k)
                }
            }
            Bound::Sum(v) | Bound::Max(v) | Bound::Min(v) => v.iter().for_each(|b| b.formals(out)),
            Bound::Scale(_, b) => b.formals(out),
            Bound::Product(a, b) | Bound::Quotient(a, b) => {
                a.formals(out);
                b.formals(out);
            }
        }
    }
}

/// `b` without the not-negative marks around it.
pub(super) fn unmarked(mut b: &Bound) -> &Bound {
    while let Bound::NonNeg(x) = b {
        b = x;
    }
    b
}

/// `b` without the not-negative marks in it.
pub(super) fn unmarked_clone(b: &Bound) -> Bound {
    let go = unmarked_clone;
    match unmarked(b) {
        Bound::Sum(v) => Bound::Sum(v.iter().map(go).collect()),
        Bound::Max(v) => Bound::Max(v.iter().map(go).collect()),
        Bound::Min(v) => Bound::Min(v.iter().map(go).collect()),
        Bound::Scale(c, x) => Bound::Scale(*c, Box::new(go(x))),
        Bound::Product(x, y) => Bound::Product(Box::new(go(x)), Box::new(go(y))),
        Bound::Quotient(x, y) => Bound::Quotient(Box::new(go(x)), Box::new(go(y))),
        b => b.clone(),
    }
}

/// How `a` and `b` compare without their not-negative marks (as `strip`ped
/// bounds do, without building them): like terms are found by it.
pub(super) fn cmp_unmarked(a: &Bound, b: &Bound) -> Ordering {
    fn all(v: &[Bound], w: &[Bound]) -> Ordering {
        v.iter()
            .zip(w)
            .map(|(x, y)| cmp_unmarked(x, y))
            .find(|o| *o != Ordering::Equal)
            .unwrap_or_else(|| v.len().cmp(&w.len()))
    }
    // The order of the variants, as `Ord` derives it.
    fn rank(b: &Bound) -> u8 {
        match b {
            Bound::Int(_) => 0,
            Bound::Formal(_) => 1,
            Bound::Var(_) => 2,
            Bound::NonNeg(_) => 3,
            Bound::Sum(_) => 4,
            Bound::Scale(..) => 5,
            Bound::Product(..) => 6,
            Bound::Quotient(..) => 7,
            Bound::Max(_) => 8,
            Bound::Min(_) => 9,
        }
    }
    let (a, b) = (unmarked(a), unmarked(b));
    match (a, b) {
        (Bound::Int(x), Bound::Int(y)) => x.cmp(y),
        (Bound::Formal(x), Bound::Formal(y)) => x.cmp(y),
        (Bound::Var(x), Bound::Var(y)) => x.cmp(y),
        (Bound::Sum(v), Bound::Sum(w))
        | (Bound::Max(v), Bound::Max(w))
        | (Bound::Min(v), Bound::Min(w)) => all(v, w),
        (Bound::Scale(c, x), Bound::Scale(d, y)) => c.cmp(d).then_with(|| cmp_unmarked(x, y)),
        (Bound::Product(a1, a2), Bound::Product(b1, b2))
        | (Bound::Quotient(a1, a2), Bound::Quotient(b1, b2)) => {
            cmp_unmarked(a1, b1).then_with(|| cmp_unmarked(a2, b2))
        }
        _ => rank(a).cmp(&rank(b)),
    }
}

pub(super) fn sum_of(mut terms: Vec<Bound>) -> Bound {
    match terms.len() {
        0 => Bound::Int(0),
        1 => terms.pop().unwrap_or(Bound::Int(0)),
        _ => Bound::Sum(terms),
    }
}

/// `a + b`, with like terms gathered; a sum with a `min` or `max` goes
/// inside it (`j + min(nb, n - j + 1)` is `min(j + nb, n + 1)`), so that
/// terms that cancel do.
pub fn add(a: Bound, b: Bound) -> Bound {
    let extreme_of = |x: &Bound| matches!(x, Bound::Max(_) | Bound::Min(_));
    match (a, b) {
        (Bound::Max(v), b) if !extreme_of(&b) => {
            max(v.into_iter().map(|x| add(x, b.clone())).collect())
        }
        (Bound::Min(v), b) if !extreme_of(&b) => {
            min(v.into_iter().map(|x| add(x, b.clone())).collect())
        }
        (a, Bound::Max(v)) if !extreme_of(&a) => {
            max(v.into_iter().map(|x| add(a.clone(), x)).collect())
        }
        (a, Bound::Min(v)) if !extreme_of(&a) => {
            min(v.into_iter().map(|x| add(a.clone(), x)).collect())
        }
        // Both: each term of one with each of the other (a few only).
        (Bound::Min(v), Bound::Min(w)) if v.len() * w.len() <= 16 => min(v
            .iter()
            .flat_map(|x| w.iter().map(move |y| add(x.clone(), y.clone())))
            .collect()),
        (Bound::Max(v), Bound::Max(w)) if v.len() * w.len() <= 16 => max(v
            .iter()
            .flat_map(|x| w.iter().map(move |y| add(x.clone(), y.clone())))
            .collect()),
        (Bound::Min(v), b @ Bound::Max(_)) | (b @ Bound::Max(_), Bound::Min(v)) if v.len() <= 4 => {
            min(v.into_iter().map(|x| add(x, b.clone())).collect())
        }
        (a, b) => add_terms(a, b),
    }
}

pub(super) fn add_terms(a: Bound, b: Bound) -> Bound {
    let mut terms: Vec<(Bound, i64)> = Vec::new();
    let mut c = 0i64;
    pub(super) fn gather(x: Bound, k: i64, terms: &mut Vec<(Bound, i64)>, c: &mut i64) {
        match x {
            Bound::Int(v) => *c = c.saturating_add(k.saturating_mul(v)),
            Bound::Sum(v) => v.into_iter().for_each(|t| gather(t, k, terms, c)),
            Bound::Scale(s, t) => gather(*t, k.saturating_mul(s), terms, c),
            t => match terms
                .iter_mut()
                .find(|(u, _)| cmp_unmarked(u, &t) == Ordering::Equal)
            {
                Some((_, n)) => *n += k,
                None => terms.push((t, k)),
            },
        }
    }
    gather(a, 1, &mut terms, &mut c);
    gather(b, 1, &mut terms, &mut c);
    let mut out: Vec<Bound> = terms
        .into_iter()
        .filter(|(_, k)| *k != 0)
        .map(|(t, k)| {
            if k == 1 {
                t
            } else {
                Bound::Scale(k, Box::new(t))
            }
        })
        .collect();
    if c != 0 {
        out.push(Bound::Int(c));
    }
    sum_of(out)
}

pub fn neg(a: Bound) -> Bound {
    scale(-1, a)
}

pub fn sub(a: Bound, b: Bound) -> Bound {
    add(a, neg(b))
}

pub(super) fn scale(k: i64, a: Bound) -> Bound {
    match (k, a) {
        (0, _) => Bound::Int(0),
        (1, a) => a,
        (k, Bound::Max(v)) if k > 0 => max(v.into_iter().map(|x| scale(k, x)).collect()),
        (k, Bound::Min(v)) if k > 0 => min(v.into_iter().map(|x| scale(k, x)).collect()),
        (k, Bound::Max(v)) => min(v.into_iter().map(|x| scale(k, x)).collect()),
        (k, Bound::Min(v)) => max(v.into_iter().map(|x| scale(k, x)).collect()),
        (k, Bound::Int(v)) => Bound::Int(k.saturating_mul(v)),
        (k, Bound::Sum(v)) => v
            .into_iter()
            .fold(Bound::Int(0), |s, t| add(s, scale(k, t))),
        (k, Bound::Scale(s, t)) => scale(k.saturating_mul(s), *t),
        (k, a) => Bound::Scale(k, Box::new(a)),
    }
}

pub fn mul(a: Bound, b: Bound) -> Bound {
    match (a, b) {
        (Bound::Int(x), b) => scale(x, b),
        (a, Bound::Int(y)) => scale(y, a),
        // Into sums (terms that cancel then do); by a value that is not
        // negative, also into `min` and `max`.
        (Bound::Sum(v), n) | (n, Bound::Sum(v)) => v
            .into_iter()
            .fold(Bound::Int(0), |s, t| add(s, mul(t, n.clone()))),
        (Bound::Max(v), n @ Bound::NonNeg(_)) | (n @ Bound::NonNeg(_), Bound::Max(v)) => {
            max(v.into_iter().map(|t| mul(t, n.clone())).collect())
        }
        (Bound::Min(v), n @ Bound::NonNeg(_)) | (n @ Bound::NonNeg(_), Bound::Min(v)) => {
            min(v.into_iter().map(|t| mul(t, n.clone())).collect())
        }
        // Constant factors outside, and the two factors in one order, so
        // that `j*lda` and `(-j)*lda` are like terms (their sum cancels).
        (Bound::Scale(c, x), n) | (n, Bound::Scale(c, x)) => scale(c, mul(*x, n)),
        (a, b) if cmp_unmarked(&b, &a) == Ordering::Less => {
            Bound::Product(Box::new(b), Box::new(a))
        }
        (a, b) => Bound::Product(Box::new(a), Box::new(b)),
    }
}

pub(super) fn quotient(a: Bound, b: Bound) -> Bound {
    match (&a, &b) {
        (_, Bound::Int(1)) => a,
        (Bound::Int(x), Bound::Int(y)) if *y > 0 => Bound::Int(x / y),
        _ => Bound::Quotient(Box::new(a), Box::new(b)),
    }
}

/// `max(items)` (`larger`) or `min(items)`, without repeats or terms
/// another one dominates by a constant.
pub(super) fn extreme(items: Vec<Bound>, larger: bool) -> Bound {
    let mut flat: Vec<Bound> = Vec::new();
    for b in items {
        match b {
            Bound::Max(v) if larger => flat.extend(v),
            Bound::Min(v) if !larger => flat.extend(v),
            b => flat.push(b),
        }
    }
    let mut kept: Vec<(Bound, i64)> = Vec::new();
    for b in flat {
        let (rest, c) = b.split();
        match kept.iter_mut().find(|(r, _)| *r == rest) {
            Some((_, k)) => *k = if larger { (*k).max(c) } else { (*k).min(c) },
            None => kept.push((rest, c)),
        }
    }
    let mut out: Vec<Bound> = kept
        .into_iter()
        .map(|(r, c)| add(r, Bound::Int(c)))
        .collect();
    match out.len() {
        0 => Bound::Int(0),
        1 => out.pop().unwrap_or(Bound::Int(0)),
        _ if larger => Bound::Max(out),
        _ => Bound::Min(out),
    }
}

pub fn max(items: Vec<Bound>) -> Bound {
    extreme(items, true)
}

pub fn min(items: Vec<Bound>) -> Bound {
    extreme(items, false)
}

/// `b` with each formal replaced by the interval of its actual (`actuals`);
/// a point when every formal's actual is.
pub fn substitute(b: &Bound, actuals: &BTreeMap<u32, Interval>, _upper: bool) -> Interval {
    subst(b, &|x| match x {
        Bound::Formal(k) => actuals.get(k).cloned(),
        _ => None,
    })
}

/// The values of `b` when each leaf `leaf` gives an interval for takes its
/// values (other leaves as they are), by interval arithmetic.
pub(super) fn subst(b: &Bound, leaf: &dyn Fn(&Bound) -> Option<Interval>) -> Interval {
    if let Some(i) = leaf(b) {
        return i;
    }
    let go = |x: &Bound| subst(x, leaf);
    match b {
        Bound::Int(_) | Bound::Formal(_) | Bound::Var(_) => Interval::point(b.clone()),
        Bound::NonNeg(x) => {
            let i = go(x);
            let keep = |b: Bound| match b {
                Bound::Int(v) => Bound::Int(v),
                b => Bound::NonNeg(Box::new(b)),
            };
            Interval {
                lo: keep(i.lo),
                hi: keep(i.hi),
            }
        }
        Bound::Sum(v) => v
            .iter()
            .map(go)
            .fold(Interval::point(Bound::Int(0)), |s, t| Interval {
                lo: add(s.lo, t.lo),
                hi: add(s.hi, t.hi),
            }),
        Bound::Scale(c, x) => times(go(x), Interval::point(Bound::Int(*c))),
        Bound::Product(x, y) => times(go(x), go(y)),
        Bound::Quotient(x, y) => {
            let (a, d) = (go(x), go(y));
            Interval {
                lo: quotient(a.lo, d.hi),
                hi: quotient(a.hi, d.lo),
            }
        }
        Bound::Max(v) => {
            let parts: Vec<Interval> = v.iter().map(go).collect();
            Interval {
                lo: max(parts.iter().map(|p| p.lo.clone()).collect()),
                hi: max(parts.into_iter().map(|p| p.hi).collect()),
            }
        }
        Bound::Min(v) => {
            let parts: Vec<Interval> = v.iter().map(go).collect();
            Interval {
                lo: min(parts.iter().map(|p| p.lo.clone()).collect()),
                hi: min(parts.into_iter().map(|p| p.hi).collect()),
            }
        }
    }
}

/// `b` as an expression of the caller, each formal `k` replaced by
/// `actual(k)`; `None` when one has no actual.
pub fn to_expr(b: &Bound, actual: &dyn Fn(u32) -> Option<Expr>, span: Span) -> Option<Expr> {
    let mk = |kind| Expr { kind, span };
    let bin = |op, l: Expr, r: Expr| {
        mk(ExprKind::Binary {
            op,
            lhs: Box::new(l),
            rhs: Box::new(r),
        })
    };
    Some(match b {
        Bound::Int(v) if *v < 0 => mk(ExprKind::Unary {
            op: UnaryOp::Neg,
            operand: Box::new(mk(ExprKind::Int(-v))),
        }),
        Bound::Int(v) => mk(ExprKind::Int(*v)),
        Bound::Formal(k) => actual(*k)?,
        Bound::Var(_) => return None,
        Bound::NonNeg(x) => to_expr(x, actual, span)?,
        Bound::Sum(v) => {
            // A term that is not subtracted first: `n - 1`, not `-1 + n`.
            let negative = |t: &Bound| matches!(t, Bound::Int(c) | Bound::Scale(c, _) if *c < 0);
            let mut v: Vec<&Bound> = v.iter().collect();
            if let Some(k) = v.iter().position(|t| !negative(t)) {
                let first = v.remove(k);
                v.insert(0, first);
            }
            let mut it = v.into_iter();
            let mut acc = to_expr(it.next()?, actual, span)?;
            for t in it {
                acc = match t {
                    Bound::Int(c) if *c < 0 => bin(BinaryOp::Sub, acc, mk(ExprKind::Int(-c))),
                    Bound::Scale(c, x) if *c < 0 => bin(
                        BinaryOp::Sub,
                        acc,
                        to_expr(&scale(-c, (**x).clone()), actual, span)?,
                    ),
                    t => bin(BinaryOp::Add, acc, to_expr(t, actual, span)?),
                };
            }
            acc
        }
        Bound::Scale(c, x) => bin(
            BinaryOp::Mul,
            to_expr(&Bound::Int(*c), actual, span)?,
            to_expr(x, actual, span)?,
        ),
        Bound::Product(x, y) => bin(
            BinaryOp::Mul,
            to_expr(x, actual, span)?,
            to_expr(y, actual, span)?,
        ),
        Bound::Quotient(x, y) => bin(
            BinaryOp::Div,
            to_expr(x, actual, span)?,
            to_expr(y, actual, span)?,
        ),
        Bound::Max(v) | Bound::Min(v) => mk(ExprKind::Intrinsic {
            name: if matches!(b, Bound::Max(_)) {
                "max"
            } else {
                "min"
            }
            .into(),
            args: v
                .iter()
                .map(|x| {
                    Some(Arg {
                        keyword: None,
                        value: to_expr(x, actual, span)?,
                    })
                })
                .collect::<Option<Vec<Arg>>>()?,
        }),
    })
}

/// The known values of a call's actuals (in formal order), by `value`.
pub fn known_args(order: &[Option<&Arg>], value: &dyn Fn(&Expr) -> Option<Known>) -> KnownArgs {
    order
        .iter()
        .enumerate()
        .filter_map(|(k, a)| Some((k as u32, value(&a.as_ref()?.value)?)))
        .collect()
}

/// Whether `v` is the upper bound of a leading dimension (lower bound 1)
/// of an array formal of `unit`: `lda` of `a(lda, *)`.
pub fn leading_dimension(unit: &Unit, v: SymbolId) -> bool {
    unit.args.iter().any(|&a| {
        let sym = unit.symbol(a);
        let rank = sym.dims.len();
        sym.dims.iter().take(rank.saturating_sub(1)).any(|d| {
            d.kind == DimKind::Explicit
                && d.upper
                    .as_ref()
                    .is_some_and(|u| matches!(u.kind, ExprKind::Var(x) if x == v))
                && d.lower
                    .as_ref()
                    .is_none_or(|l| matches!(l.kind, ExprKind::Int(1)))
        })
    })
}

/// The known value of an actual of a call in `unit`: a literal, or a
/// leading dimension of one of its array formals that it never writes
/// ([`Known::Positive`]).
pub fn call_site_value(unit: &Unit, effects: &ProgramEffects, e: &Expr) -> Option<Known> {
    literal(e).or_else(|| match &e.kind {
        ExprKind::Var(v) => match unit.symbol(*v).storage {
            Storage::Dummy(k)
                if leading_dimension(unit, *v)
                    && effects
                        .get(unit.id)
                        .is_some_and(|fx| !fx.written_formals.contains(&k)) =>
            {
                Some(Known::Positive)
            }
            _ => None,
        },
        _ => None,
    })
}

/// `Known::Positive` for `e` when it is the index of one of the counted DO
/// loops `loops` (index, start, step) around the call that starts at a
/// constant of at least 1 and steps up by a constant: inside the loop's
/// body the index is at least its start. `CALL TIMESTEP(…, k, …)` in
/// `DO k = 1, Nr` decides the callee's `IF (kArg .EQ. 0)`.
pub fn positive_index<'e>(
    unit: &Unit,
    e: &Expr,
    mut loops: impl Iterator<Item = (SymbolId, &'e Expr, Option<&'e Expr>)>,
) -> Option<Known> {
    let ExprKind::Var(v) = e.kind else {
        return None;
    };
    let positive = |x: &Expr| dfort_ir::dp::constant_int(unit, x, 0).is_some_and(|c| c >= 1);
    loops
        .any(|(var, start, step)| var == v && positive(start) && step.is_none_or(positive))
        .then_some(Known::Positive)
}

/// The known value of an actual written as a literal.
pub fn literal(e: &Expr) -> Option<Known> {
    match &e.kind {
        ExprKind::Int(v) => Some(Known::Int(*v)),
        ExprKind::Str(s) => Some(Known::Str(s.clone())),
        ExprKind::Logical(b) => Some(Known::Bool(*b)),
        ExprKind::Unary {
            op: UnaryOp::Neg,
            operand,
        } => match literal(operand)? {
            Known::Int(v) => Some(Known::Int(-v)),
            _ => None,
        },
        _ => None,
    }
}

/// A comparison of known values (character values compare with trailing
/// blanks ignored, as Fortran pads the shorter).
pub(super) fn compare(op: BinaryOp, a: &Known, b: &Known) -> Option<bool> {
    use std::cmp::Ordering;
    // Other than `x`: (in)equality with `x` only.
    if let (Known::Except(x), Known::Int(y)) | (Known::Int(y), Known::Except(x)) = (a, b) {
        return match op {
            BinaryOp::Eq if x == y => Some(false),
            BinaryOp::Ne if x == y => Some(true),
            _ => None,
        };
    }
    let ord = match (a, b) {
        (Known::Int(x), Known::Int(y)) => x.cmp(y),
        // A positive value against a constant it is surely above.
        (Known::Positive, Known::Int(y)) if *y < 1 => Ordering::Greater,
        (Known::Int(x), Known::Positive) if *x < 1 => Ordering::Less,
        (Known::Str(x), Known::Str(y)) => x.trim_end_matches(' ').cmp(y.trim_end_matches(' ')),
        (Known::Bool(x), Known::Bool(y)) => {
            return match op {
                BinaryOp::Eqv => Some(x == y),
                BinaryOp::Neqv => Some(x != y),
                _ => None,
            }
        }
        _ => return None,
    };
    Some(match op {
        BinaryOp::Eq => ord == Ordering::Equal,
        BinaryOp::Ne => ord != Ordering::Equal,
        BinaryOp::Lt => ord == Ordering::Less,
        BinaryOp::Le => ord != Ordering::Greater,
        BinaryOp::Gt => ord == Ordering::Greater,
        BinaryOp::Ge => ord != Ordering::Less,
        _ => return None,
    })
}

/// `b` with each formal replaced by `actual(k)`, simplified again.
pub fn rebase(b: &Bound, actual: &dyn Fn(u32) -> Option<Bound>) -> Option<Bound> {
    let go = |x: &Bound| rebase(x, actual);
    Some(match b {
        Bound::Int(v) => Bound::Int(*v),
        Bound::Formal(k) => actual(*k)?,
        Bound::Var(_) => return None,
        Bound::NonNeg(x) => match rebase(x, actual)? {
            Bound::Int(v) => Bound::Int(v),
            b => Bound::NonNeg(Box::new(b)),
        },
        Bound::Sum(v) => {
            let mut acc = Bound::Int(0);
            for t in v {
                acc = add(acc, go(t)?);
            }
            acc
        }
        Bound::Scale(c, x) => scale(*c, go(x)?),
        Bound::Product(x, y) => mul(go(x)?, go(y)?),
        Bound::Quotient(x, y) => quotient(go(x)?, go(y)?),
        Bound::Max(v) => max(v.iter().map(go).collect::<Option<Vec<_>>>()?),
        Bound::Min(v) => min(v.iter().map(go).collect::<Option<Vec<_>>>()?),
    })
}

/// An integer expression of `unit` as a bound over atoms: its variables
/// and the parts that are not sums or products with constants, each
/// appended to `atoms` once and written `Formal(index)`.
pub fn from_expr(unit: &Unit, e: &Expr, atoms: &mut Vec<Expr>) -> Bound {
    match &e.kind {
        ExprKind::Int(v) => Bound::Int(*v),
        ExprKind::Unary {
            op: UnaryOp::Neg,
            operand,
        } => neg(from_expr(unit, operand, atoms)),
        ExprKind::Binary {
            op: op @ (BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul),
            lhs,
            rhs,
        } => {
            let (a, b) = (from_expr(unit, lhs, atoms), from_expr(unit, rhs, atoms));
            match op {
                BinaryOp::Add => add(a, b),
                BinaryOp::Sub => sub(a, b),
                _ => mul(a, b),
            }
        }
        _ => {
            let text = dfort_ir::dump::expr(unit, e);
            let k = match atoms
                .iter()
                .position(|x| dfort_ir::dump::expr(unit, x) == text)
            {
                Some(k) => k,
                None => {
                    atoms.push(e.clone());
                    atoms.len() - 1
                }
            };
            Bound::Formal(k as u32)
        }
    }
}
