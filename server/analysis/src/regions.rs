//! The region of each array formal a procedure can touch (issue 19:
//! extents without size files): per dimension, the subscripts its
//! references can take — from its loops' bounds, its index expressions and
//! the regions of the callees it passes the array to — as bounds in terms
//! of the values its integer scalar formals have on entry. A caller that
//! passes an element of an array (sequence association) or an assumed-size
//! array saves this region of the formal around the call (the checkpoint of
//! paper 000 §5, [`crate::checkpoint`]) instead of the whole array, which it
//! cannot name when the array is assumed-size.
//!
//! A dimension's region is an interval `lo:hi` (the hull of the
//! references), or the arithmetic progression `first:last:step` when every
//! reference is `c + s*i` for one loop index `i` (a strided vector, such as
//! a matrix row passed with an increment of `lda`).
//!
//! Contract: sound for conforming programs, by interval arithmetic: a
//! variable is bounded when it is an enclosing counted DO's index (by the
//! loop's bounds), an integer scalar formal the procedure never writes (its
//! entry value), a named constant, or a local integer scalar that only
//! whole assignments define (the hull of their right-hand sides); a
//! subscript of a leading dimension no expression bounds is bounded by the
//! declared dimension (subscripts stay in bounds). Intervals are clamped
//! to the declared lower bound, and leading dimensions to the declared
//! upper bound. The hull of loops that run zero times may hold subscripts
//! no reference takes. A leading dimension of an array formal (`lda` of
//! `a(lda, *)`) is taken to be at least 1, as no element can be referenced
//! otherwise: passed on as an increment it decides `IF (INCX.LT.0)`, and
//! products with it keep their terms together. The `cap` (last element
//! reached) must stay inside the actual: `dfort verify --sanitize` checks
//! it under AddressSanitizer. Anything else — a subscript of the last dimension
//! that depends on a value read at run time, a reference inside an
//! implied DO, the array passed to a procedure without source or to a
//! recursive one — leaves the formal without a region, with the reason.
//! Analysis only: no I/O, no panics on user input.

use crate::effects::{stmt_effects, LocalEffects, ProgramEffects};
use dfort_ir::bitset::BitSet;
use dfort_ir::*;
use std::collections::BTreeMap;

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
    fn constant(&self) -> Option<i64> {
        match self {
            Bound::Int(v) => Some(*v),
            _ => None,
        }
    }

    /// The bound as `rest + c` (its constant term split off).
    fn split(&self) -> (Bound, i64) {
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
    fn vars(&self) -> Vec<SymbolId> {
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

fn sum_of(mut terms: Vec<Bound>) -> Bound {
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

fn add_terms(a: Bound, b: Bound) -> Bound {
    let mut terms: Vec<(Bound, i64)> = Vec::new();
    let mut c = 0i64;
    fn gather(x: Bound, k: i64, terms: &mut Vec<(Bound, i64)>, c: &mut i64) {
        match x {
            Bound::Int(v) => *c = c.saturating_add(k.saturating_mul(v)),
            Bound::Sum(v) => v.into_iter().for_each(|t| gather(t, k, terms, c)),
            Bound::Scale(s, t) => gather(*t, k.saturating_mul(s), terms, c),
            t => match terms.iter_mut().find(|(u, _)| strip(u) == strip(&t)) {
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

fn scale(k: i64, a: Bound) -> Bound {
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
        (a, b) if strip(&b) < strip(&a) => Bound::Product(Box::new(b), Box::new(a)),
        (a, b) => Bound::Product(Box::new(a), Box::new(b)),
    }
}

fn quotient(a: Bound, b: Bound) -> Bound {
    match (&a, &b) {
        (_, Bound::Int(1)) => a,
        (Bound::Int(x), Bound::Int(y)) if *y > 0 => Bound::Int(x / y),
        _ => Bound::Quotient(Box::new(a), Box::new(b)),
    }
}

/// `max(items)` (`larger`) or `min(items)`, without repeats or terms
/// another one dominates by a constant.
fn extreme(items: Vec<Bound>, larger: bool) -> Bound {
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

/// The values an integer expression can take.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Interval {
    pub lo: Bound,
    pub hi: Bound,
}

impl Interval {
    fn point(b: Bound) -> Interval {
        Interval {
            lo: b.clone(),
            hi: b,
        }
    }
    fn is_point(&self) -> bool {
        self.lo == self.hi
    }
    fn hull(self, other: Interval) -> Interval {
        Interval {
            lo: min(vec![self.lo, other.lo]),
            hi: max(vec![self.hi, other.hi]),
        }
    }
}

/// The region of one dimension.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DimRegion {
    /// Every subscript from `lo` to `hi`.
    Span(Interval),
    /// `c + s*i` for `i` from `from` to `to`: the section
    /// `c+s*from : c+s*to : s` (`s` may be negative or zero).
    Progression {
        c: Bound,
        s: Bound,
        from: Bound,
        to: Bound,
    },
}

impl DimRegion {
    /// As a section `(first, last, step)`.
    pub fn triplet(&self) -> (Bound, Bound, Bound) {
        match self {
            DimRegion::Span(i) => (i.lo.clone(), i.hi.clone(), Bound::Int(1)),
            DimRegion::Progression { c, s, from, to } => (
                add(c.clone(), mul(s.clone(), from.clone())),
                add(c.clone(), mul(s.clone(), to.clone())),
                s.clone(),
            ),
        }
    }
    fn span(self) -> Interval {
        match self {
            DimRegion::Span(i) => i,
            DimRegion::Progression { .. } => {
                let (a, b, _) = self.triplet();
                Interval {
                    lo: min(vec![a.clone(), b.clone()]),
                    hi: max(vec![a, b]),
                }
            }
        }
    }
    fn union(self, other: DimRegion) -> DimRegion {
        match (self, other) {
            (
                DimRegion::Progression { c, s, from, to },
                DimRegion::Progression {
                    c: c2,
                    s: s2,
                    from: f2,
                    to: t2,
                },
            ) if c == c2 && s == s2 => DimRegion::Progression {
                c,
                s,
                from: min(vec![from, f2]),
                to: max(vec![to, t2]),
            },
            (a, b) => DimRegion::Span(a.span().hull(b.span())),
        }
    }
}

/// What a procedure can touch of one array formal, in the formal's own
/// subscripts (its declared lower bounds included).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FormalRegion {
    pub dims: Vec<DimRegion>,
    /// The extents of all dimensions but the last, as declared.
    pub extents: Vec<Bound>,
    /// The declared lower bound of each dimension.
    pub lower: Vec<Bound>,
    /// The largest element offset from the first element (0-based) any
    /// reference reaches: what is saved never goes past it.
    pub cap: Bound,
}

/// What one reference can touch of a formal: a box in its subscripts, or
/// a span of element offsets from its first element (a section passed on
/// to a formal of another shape).
#[derive(Clone, Debug)]
enum Piece {
    /// A box, and the largest element offset the reference reaches in it
    /// (its last corner may lie beyond: triangles, `j + jb` and
    /// `n - j - jb` bounded apart).
    Rect(Vec<DimRegion>, Bound),
    Linear(Interval),
}

/// The element offsets (from the first element, 0-based) a box can
/// reach: its first and its last corner, with the extents `extents` and
/// lower bounds `lower` of the array it is in.
fn offsets(dims: &[DimRegion], lower: &[Bound], extents: &[Bound]) -> Interval {
    let mut lo = Bound::Int(0);
    let mut hi = Bound::Int(0);
    let mut stride = Bound::Int(1);
    for (k, d) in dims.iter().enumerate() {
        let sp = d.clone().span();
        let l = lower.get(k).cloned().unwrap_or(Bound::Int(1));
        lo = add(lo, mul(sub(sp.lo, l.clone()), stride.clone()));
        hi = add(hi, mul(sub(sp.hi, l), stride.clone()));
        if let Some(e) = extents.get(k) {
            stride = nonneg(mul(stride, e.clone()));
        }
    }
    Interval { lo, hi }
}

/// How a bound moves with one variable.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mono {
    Const,
    Inc,
    Dec,
    Mixed,
}

impl Mono {
    fn and(self, o: Mono) -> Mono {
        match (self, o) {
            (Mono::Const, x) | (x, Mono::Const) => x,
            (a, b) if a == b => a,
            _ => Mono::Mixed,
        }
    }
    fn flip(self) -> Mono {
        match self {
            Mono::Inc => Mono::Dec,
            Mono::Dec => Mono::Inc,
            m => m,
        }
    }
}

/// Whether `b` never decreases (`Inc`) or never increases (`Dec`) as `v`
/// grows, from its form: `v` under sums, positive scales, products with
/// values that are not negative, `min`, `max`.
fn monotone(b: &Bound, v: SymbolId) -> Mono {
    let nonneg = |x: &Bound| matches!(x, Bound::NonNeg(_)) || x.constant().is_some_and(|c| c >= 0);
    match b {
        Bound::Var(x) if *x == v => Mono::Inc,
        Bound::Int(_) | Bound::Formal(_) | Bound::Var(_) => Mono::Const,
        Bound::NonNeg(x) => monotone(x, v),
        Bound::Sum(t) | Bound::Max(t) | Bound::Min(t) => {
            t.iter().fold(Mono::Const, |m, x| m.and(monotone(x, v)))
        }
        Bound::Scale(c, x) if *c >= 0 => monotone(x, v),
        Bound::Scale(_, x) => monotone(x, v).flip(),
        Bound::Product(x, y) => match (monotone(x, v), monotone(y, v)) {
            (Mono::Const, Mono::Const) => Mono::Const,
            (m, Mono::Const) if nonneg(y) => m,
            (Mono::Const, m) if nonneg(x) => m,
            _ => Mono::Mixed,
        },
        Bound::Quotient(x, y) => match (monotone(x, v), y.constant()) {
            (m, Some(c)) if c > 0 => m,
            (Mono::Const, _) if monotone(y, v) == Mono::Const => Mono::Const,
            _ => Mono::Mixed,
        },
    }
}

/// `b` with `v` replaced by `with`, simplified again.
fn replace_var(b: &Bound, v: SymbolId, with: &Bound) -> Bound {
    let go = |x: &Bound| replace_var(x, v, with);
    match b {
        Bound::Var(x) if *x == v => with.clone(),
        Bound::Int(_) | Bound::Formal(_) | Bound::Var(_) => b.clone(),
        Bound::NonNeg(x) => nonneg(go(x)),
        Bound::Sum(t) => t.iter().fold(Bound::Int(0), |s, x| add(s, go(x))),
        Bound::Scale(c, x) => scale(*c, go(x)),
        Bound::Product(x, y) => mul(go(x), go(y)),
        Bound::Quotient(x, y) => quotient(go(x), go(y)),
        Bound::Max(t) => max(t.iter().map(go).collect()),
        Bound::Min(t) => min(t.iter().map(go).collect()),
    }
}

/// `b` without its not-negative marks (to compare terms).
fn strip(b: &Bound) -> Bound {
    match b {
        Bound::NonNeg(x) => strip(x),
        Bound::Int(_) | Bound::Formal(_) | Bound::Var(_) => b.clone(),
        Bound::Sum(v) => Bound::Sum(v.iter().map(strip).collect()),
        Bound::Max(v) => Bound::Max(v.iter().map(strip).collect()),
        Bound::Min(v) => Bound::Min(v.iter().map(strip).collect()),
        Bound::Scale(c, x) => Bound::Scale(*c, Box::new(strip(x))),
        Bound::Product(x, y) => Bound::Product(Box::new(strip(x)), Box::new(strip(y))),
        Bound::Quotient(x, y) => Bound::Quotient(Box::new(strip(x)), Box::new(strip(y))),
    }
}

/// `b` marked as not negative (an extent, a product of extents).
fn nonneg(b: Bound) -> Bound {
    match b {
        Bound::Int(v) => Bound::Int(v),
        b @ Bound::NonNeg(_) => b,
        b => Bound::NonNeg(Box::new(b)),
    }
}

/// A value a call site gives an argument: a literal, or a value the
/// caller knows in turn. Branches these decide are left out of the region
/// (`IF (TRANS.EQ.'N')` with `'T'` passed).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Known {
    Int(i64),
    Str(String),
    Bool(bool),
    /// Some integer of at least 1, no more known: a leading dimension
    /// (`LDA` of `A(LDA, *)`), which must be positive for any element to
    /// be referenced. `IF (INCX.LT.0)` with `LDA` passed is decided.
    Positive,
}

/// Known values of a procedure's formals, by position.
pub type KnownArgs = BTreeMap<u32, Known>;

/// Why a region is unknown.
type Why = String;

/// How deep regions are followed through calls.
const MAX_DEPTH: u32 = 12;

/// The region of formal `k` of unit `c` when it is called with the known
/// values `known`; `effects` are every unit's ([`crate::effects`]).
pub fn of_formal(
    program: &Program,
    effects: &ProgramEffects,
    c: UnitId,
    k: u32,
    known: &KnownArgs,
) -> Result<FormalRegion, Why> {
    of_formal_at(program, effects, c, k, known, 0)
}

fn of_formal_at(
    program: &Program,
    effects: &ProgramEffects,
    c: UnitId,
    k: u32,
    known: &KnownArgs,
    depth: u32,
) -> Result<FormalRegion, Why> {
    let unit = program.unit(c);
    let f = unit
        .args
        .get(k as usize)
        .copied()
        .ok_or_else(|| format!("`{}` has no argument {}", unit.name, k + 1))?;
    let sym = unit.symbol(f);
    let shaped = sym.rank() > 0
        && !sym.attrs.pointer
        && !sym.attrs.allocatable
        && sym
            .dims
            .iter()
            .all(|d| matches!(d.kind, DimKind::Explicit | DimKind::AssumedSize));
    if !shaped {
        return Err(format!(
            "`{}` takes `{}` as an array of no explicit shape",
            unit.name, sym.name
        ));
    }
    if program.call_graph.recursive.get(c).copied().unwrap_or(true) {
        return Err(format!("`{}` is recursive", unit.name));
    }
    if depth > MAX_DEPTH {
        return Err("the calls nest too deeply".into());
    }
    Ctx::new(program, unit, effects, known.clone(), depth).region_of(f)
}

/// A counted DO loop, as the bounds of what is inside it read it.
#[derive(Clone)]
struct Loop {
    var: SymbolId,
    start: Expr,
    end: Expr,
    step: Option<Expr>,
    /// Conditions of the IF arms around the statement that bound the
    /// index: (upper, bound) for `var <= bound` (upper) or
    /// `var >= bound`.
    guards: Vec<(bool, Expr)>,
}

/// An assignment defining a local: its right-hand side, the loops around
/// it and the statement.
type Definition = (Expr, Vec<Loop>, StmtId);

/// What `placed` (statements with their loops) write, and for each
/// variable `keep` accepts that they write: its whole assignments
/// `v = rhs`, or `None` when something else writes it too.
fn definitions(
    program: &Program,
    unit: &Unit,
    effects: &ProgramEffects,
    placed: &[(StmtId, Vec<Loop>)],
    keep: impl Fn(SymbolId) -> bool,
) -> (BitSet, BTreeMap<SymbolId, Option<Vec<Definition>>>) {
    let mut writes = BitSet::default();
    let mut defs: BTreeMap<SymbolId, Option<Vec<Definition>>> = BTreeMap::new();
    for (id, loops) in placed {
        let st = unit.stmt(*id);
        let mut fx = LocalEffects::default();
        stmt_effects(program, unit, st, effects, &mut fx);
        writes.union_with(&fx.writes);
        for v in fx.writes.ids().filter(|v| keep(*v)) {
            let entry = defs.entry(v).or_insert_with(|| Some(Vec::new()));
            match &st.kind {
                StmtKind::Assign { lhs, rhs } if matches!(lhs.kind, ExprKind::Var(t) if t == v) => {
                    if let Some(list) = entry {
                        list.push((rhs.clone(), loops.clone(), *id));
                    }
                }
                _ => *entry = None,
            }
        }
    }
    (writes, defs)
}

struct Ctx<'a> {
    program: &'a Program,
    unit: &'a Unit,
    effects: &'a ProgramEffects,
    /// Values the call site gives formals the unit never writes.
    known: KnownArgs,
    /// Per local scalar defined by exactly one assignment (anywhere in
    /// the unit): its right-hand side.
    single: BTreeMap<SymbolId, Expr>,
    depth: u32,
    /// What the unit writes of its own variables (calls included).
    writes: BitSet,
    /// Per local integer scalar that only whole assignments define: the
    /// right-hand sides, each with its loops and statement; `None` when
    /// something else writes it.
    defs: BTreeMap<SymbolId, Option<Vec<Definition>>>,
    /// The statement whose expressions are being read.
    site: std::cell::Cell<Option<StmtId>>,
    /// Per statement: (statement list, index in it) from the body down.
    paths: BTreeMap<StmtId, Vec<(usize, usize)>>,
    /// Whether the unit has GO TO statements.
    jumps: bool,
    /// Per statement: its place in the unit's statements, in order.
    order: BTreeMap<StmtId, usize>,
    /// The values of the locals a bound holds as themselves, in terms of
    /// loop indices (set when the local is read).
    locals: std::cell::RefCell<BTreeMap<SymbolId, Interval>>,
    /// Every statement, with its enclosing counted loops (outermost first).
    placed: Vec<(StmtId, Vec<Loop>)>,
}

impl<'a> Ctx<'a> {
    fn new(
        program: &'a Program,
        unit: &'a Unit,
        effects: &'a ProgramEffects,
        known: KnownArgs,
        depth: u32,
    ) -> Ctx<'a> {
        // What the unit writes, and its locals' definitions, everywhere.
        let everywhere: Vec<(StmtId, Vec<Loop>)> =
            unit.stmts.iter().map(|st| (st.id, Vec::new())).collect();
        let (writes, all_defs) = definitions(program, unit, effects, &everywhere, |_| true);
        let known: KnownArgs = known
            .into_iter()
            .filter(|(k, _)| {
                unit.args
                    .get(*k as usize)
                    .is_some_and(|f| !writes.contains_id(*f))
            })
            .collect();
        let single = all_defs
            .into_iter()
            .filter_map(|(v, d)| match d {
                Some(mut list) if list.len() == 1 && unit.symbol(v).storage == Storage::Local => {
                    list.pop().map(|(e, _, _)| (v, e))
                }
                _ => None,
            })
            .collect();
        let mut ctx = Ctx {
            program,
            unit,
            effects,
            known,
            single,
            depth,
            writes,
            defs: BTreeMap::new(),
            placed: Vec::new(),
            site: std::cell::Cell::new(None),
            paths: BTreeMap::new(),
            order: BTreeMap::new(),
            locals: Default::default(),
            jumps: unit.stmts.iter().any(|st| {
                matches!(
                    st.kind,
                    StmtKind::Goto { .. }
                        | StmtKind::ComputedGoto { .. }
                        | StmtKind::ArithmeticIf { .. }
                )
            }),
        };
        let mut paths = BTreeMap::new();
        let mut lists = 0usize;
        record_paths(unit, &unit.body, &mut Vec::new(), &mut lists, &mut paths);
        ctx.paths = paths;
        let mut pre = Vec::new();
        preorder(unit, &unit.body, &mut pre);
        ctx.order = pre.into_iter().enumerate().map(|(k, id)| (id, k)).collect();
        let mut placed = Vec::new();
        ctx.walk(&unit.body, &mut Vec::new(), &mut placed);
        // The definitions of local integers on the paths the call takes.
        let (_, defs) = definitions(program, unit, effects, &placed, |v| {
            let sym = unit.symbol(v);
            sym.storage == Storage::Local && sym.rank() == 0 && sym.ty.base == BaseType::Integer
        });
        ctx.defs = defs;
        ctx.placed = placed;
        ctx
    }

    /// Every statement the call can run, with its enclosing counted loops
    /// (outermost first): IF arms the known values rule out are left out.
    fn walk(&self, ids: &[StmtId], loops: &mut Vec<Loop>, out: &mut Vec<(StmtId, Vec<Loop>)>) {
        for &id in ids {
            let Some(st) = self.unit.stmts.get(id) else {
                continue;
            };
            out.push((id, loops.clone()));
            match &st.kind {
                StmtKind::Do {
                    control:
                        DoControl::Counted {
                            var,
                            start,
                            end,
                            step,
                        },
                    body,
                    ..
                } => {
                    loops.push(Loop {
                        var: *var,
                        start: start.clone(),
                        end: end.clone(),
                        step: step.clone(),
                        guards: Vec::new(),
                    });
                    self.walk(body, loops, out);
                    loops.pop();
                }
                StmtKind::If {
                    arms, else_body, ..
                } => {
                    let mut decided = false;
                    for arm in arms {
                        match self.constant(&arm.cond, 0) {
                            Some(Known::Bool(false)) => {}
                            Some(Known::Bool(true)) => {
                                self.walk(&arm.body, loops, out);
                                decided = true;
                                break;
                            }
                            _ => {
                                let mut guarded = loops.clone();
                                guard(&arm.cond, &mut guarded);
                                self.walk(&arm.body, &mut guarded, out);
                            }
                        }
                    }
                    if let (false, Some(e)) = (decided, else_body) {
                        self.walk(e, loops, out);
                    }
                }
                kind => {
                    for b in kind.blocks() {
                        self.walk(b, loops, out);
                    }
                }
            }
        }
    }

    /// Whether `v` is a leading dimension of an array formal of the unit.
    fn is_extent(&self, v: SymbolId) -> bool {
        leading_dimension(self.unit, v)
    }

    /// The value of `e` when the known values decide it.
    fn constant(&self, e: &Expr, depth: u32) -> Option<Known> {
        if depth > 16 {
            return None;
        }
        let go = |x: &Expr| self.constant(x, depth + 1);
        match &e.kind {
            ExprKind::Int(v) => Some(Known::Int(*v)),
            ExprKind::Str(s) => Some(Known::Str(s.clone())),
            ExprKind::Logical(b) => Some(Known::Bool(*b)),
            ExprKind::Var(v) => {
                let sym = self.unit.symbol(*v);
                match sym.storage {
                    Storage::Dummy(k) => self.known.get(&k).cloned().or_else(|| {
                        (self.is_extent(*v) && !self.writes.contains_id(*v))
                            .then_some(Known::Positive)
                    }),
                    _ if sym.attrs.parameter => {
                        dfort_ir::dp::constant_int(self.unit, e, 0).map(Known::Int)
                    }
                    Storage::Local if sym.init.is_none() => go(self.single.get(v)?),
                    _ => None,
                }
            }
            ExprKind::Unary {
                op: UnaryOp::Not,
                operand,
            } => match go(operand)? {
                Known::Bool(b) => Some(Known::Bool(!b)),
                _ => None,
            },
            ExprKind::Binary { op, lhs, rhs } => {
                let (a, b) = (go(lhs), go(rhs));
                match (op, a, b) {
                    (BinaryOp::And, Some(Known::Bool(false)), _)
                    | (BinaryOp::And, _, Some(Known::Bool(false))) => Some(Known::Bool(false)),
                    (BinaryOp::Or, Some(Known::Bool(true)), _)
                    | (BinaryOp::Or, _, Some(Known::Bool(true))) => Some(Known::Bool(true)),
                    (BinaryOp::And, Some(Known::Bool(x)), Some(Known::Bool(y))) => {
                        Some(Known::Bool(x && y))
                    }
                    (BinaryOp::Or, Some(Known::Bool(x)), Some(Known::Bool(y))) => {
                        Some(Known::Bool(x || y))
                    }
                    (op, Some(x), Some(y)) => compare(*op, &x, &y).map(Known::Bool),
                    _ => None,
                }
            }
            _ => None,
        }
    }

    /// The region of array formal `f`: the union of what each statement
    /// can touch of it.
    fn region_of(&self, f: SymbolId) -> Result<FormalRegion, Why> {
        let sym = self.unit.symbol(f);
        let name = &sym.name;
        let mut lower = Vec::new();
        let mut upper = Vec::new();
        for d in &sym.dims {
            let lo = match &d.lower {
                Some(e) => self
                    .point(e, &[])
                    .map_err(|w| format!("the lower bound of `{name}`: {w}"))?,
                None => Bound::Int(1),
            };
            let hi = match (&d.upper, d.kind) {
                (Some(e), DimKind::Explicit) => self.point(e, &[]).ok(),
                _ => None,
            };
            lower.push(lo);
            upper.push(hi);
        }
        let rank = sym.rank();
        let mut extents = Vec::new();
        for k in 0..rank.saturating_sub(1) {
            match &upper[k] {
                Some(u) => extents.push(add(sub(u.clone(), lower[k].clone()), Bound::Int(1))),
                None => {
                    return Err(format!(
                        "the extent of dimension {} of `{name}` is not known",
                        k + 1
                    ))
                }
            }
        }
        let decl = Declared {
            lower: &lower,
            upper: &upper,
            extents: &extents,
        };
        let mut pieces: Vec<Piece> = Vec::new();
        for (id, loops) in &self.placed {
            let st = self.unit.stmt(*id);
            self.site.set(Some(*id));
            self.touches_in_stmt(st, f, loops, &decl, &mut pieces)?;
        }
        // Boxes are clamped into the declared bounds (the last dimension
        // of an assumed-size array has no upper one).
        let clamp = |dims: Vec<DimRegion>| -> Vec<DimRegion> {
            dims.into_iter()
                .enumerate()
                .map(|(k, d)| match d {
                    DimRegion::Span(i) => {
                        let lo = max(vec![i.lo, lower[k].clone()]);
                        let hi = match &upper[k] {
                            Some(u) => min(vec![i.hi, u.clone()]),
                            None => i.hi,
                        };
                        DimRegion::Span(Interval { lo, hi })
                    }
                    p => p,
                })
                .collect()
        };
        let pieces: Vec<Piece> = pieces
            .into_iter()
            .map(|p| match p {
                Piece::Rect(d, cap) => Piece::Rect(clamp(d), cap),
                p => p,
            })
            .collect();
        // The largest offset any reference reaches, within the array when
        // its size is known.
        let total = upper
            .iter()
            .cloned()
            .collect::<Option<Vec<Bound>>>()
            .map(|all| {
                let last: Vec<DimRegion> = all
                    .into_iter()
                    .map(|u| DimRegion::Span(Interval::point(u)))
                    .collect();
                offsets(&last, &lower, &extents).hi
            });
        let caps: Vec<Bound> = pieces
            .iter()
            .map(|p| match p {
                Piece::Rect(_, c) => c.clone(),
                Piece::Linear(i) => i.hi.clone(),
            })
            .collect();
        let mut cap = match caps.is_empty() {
            true => Bound::Int(-1),
            false => max(caps),
        };
        if let Some(t) = &total {
            cap = min(vec![cap, t.clone()]);
        }
        if pieces.iter().all(|p| matches!(p, Piece::Rect(..))) {
            let mut region: Option<Vec<DimRegion>> = None;
            for p in pieces {
                let Piece::Rect(r, _) = p else { continue };
                region = Some(match region {
                    None => r,
                    Some(prev) => prev.into_iter().zip(r).map(|(a, b)| a.union(b)).collect(),
                });
            }
            let dims = match region {
                Some(dims) => dims,
                // Never referenced: nothing to save.
                None => lower
                    .iter()
                    .map(|l| {
                        DimRegion::Span(Interval {
                            lo: l.clone(),
                            hi: sub(l.clone(), Bound::Int(1)),
                        })
                    })
                    .collect(),
            };
            return Ok(FormalRegion {
                dims,
                extents,
                lower,
                cap,
            });
        }
        // Otherwise the span of element offsets they reach, seen as a
        // vector from the first element.
        let mut span: Option<Interval> = None;
        for p in pieces {
            let i = match p {
                Piece::Rect(d, _) => offsets(&d, &lower, &extents),
                Piece::Linear(i) => i,
            };
            span = Some(match span {
                None => i,
                Some(s) => s.hull(i),
            });
        }
        let span = span.unwrap_or(Interval {
            lo: Bound::Int(0),
            hi: Bound::Int(-1),
        });
        Ok(FormalRegion {
            dims: vec![DimRegion::Span(Interval {
                lo: add(max(vec![span.lo, Bound::Int(0)]), Bound::Int(1)),
                hi: add(cap.clone(), Bound::Int(1)),
            })],
            extents: Vec::new(),
            lower: vec![Bound::Int(1)],
            cap,
        })
    }

    /// The regions of `f` statement `st` itself touches (not its nested
    /// statements).
    fn touches_in_stmt(
        &self,
        st: &Stmt,
        f: SymbolId,
        loops: &[Loop],
        decl: &Declared,
        out: &mut Vec<Piece>,
    ) -> Result<(), Why> {
        if let StmtKind::Call { name, target, args } = &st.kind {
            for (pos, a) in args.iter().enumerate() {
                if self.passes(&a.value, f) {
                    out.push(self.through_call(name, target, args, pos, f, loops, decl)?);
                } else {
                    self.touches(&a.value, f, loops, decl, out)?;
                }
            }
            return Ok(());
        }
        for e in st.kind.exprs() {
            self.touches(e, f, loops, decl, out)?;
        }
        Ok(())
    }

    /// Whether `e` passes `f` (whole, or from one of its elements) as an
    /// actual argument.
    fn passes(&self, e: &Expr, f: SymbolId) -> bool {
        match &e.kind {
            ExprKind::Var(v) => *v == f,
            ExprKind::ArrayRef { array, subs } => {
                *array == f && subs.iter().all(|s| matches!(s, Subscript::Index(_)))
            }
            _ => false,
        }
    }

    /// The regions of `f` expression `e` touches.
    fn touches(
        &self,
        e: &Expr,
        f: SymbolId,
        loops: &[Loop],
        decl: &Declared,
        out: &mut Vec<Piece>,
    ) -> Result<(), Why> {
        let name = &self.unit.symbol(f).name;
        match &e.kind {
            ExprKind::Var(v) if *v == f => {
                // The whole array.
                let mut dims = Vec::new();
                for (k, lo) in decl.lower.iter().enumerate() {
                    match &decl.upper[k] {
                        Some(hi) => dims.push(DimRegion::Span(Interval {
                            lo: lo.clone(),
                            hi: hi.clone(),
                        })),
                        None => {
                            return Err(format!(
                                "`{name}` is used whole, and its last extent is not known"
                            ))
                        }
                    }
                }
                let cap = offsets(&dims, decl.lower, decl.extents).hi;
                out.push(Piece::Rect(dims, cap));
                Ok(())
            }
            ExprKind::ArrayRef { array, subs } if *array == f => {
                let mut dims = Vec::new();
                let rank = subs.len();
                for (k, s) in subs.iter().enumerate() {
                    let leading = k + 1 < rank;
                    let d = match s {
                        Subscript::Index(i) => match self.subscript(i, loops) {
                            Ok(d) => d,
                            // A leading subscript stays in the declared
                            // bounds.
                            Err(_) if leading && decl.upper[k].is_some() => {
                                DimRegion::Span(Interval {
                                    lo: decl.lower[k].clone(),
                                    hi: decl.upper[k].clone().unwrap_or(Bound::Int(0)),
                                })
                            }
                            Err(w) => {
                                return Err(format!(
                                    "the subscript `{}` of `{name}`: {w}",
                                    dfort_ir::dump::expr(self.unit, i)
                                ))
                            }
                        },
                        Subscript::Range { lo, hi, stride } => {
                            if stride.is_some() {
                                return Err(format!("a strided section of `{name}`"));
                            }
                            let l = match lo {
                                Some(e) => self.interval(e, loops)?.lo,
                                None => decl.lower[k].clone(),
                            };
                            let h = match hi {
                                Some(e) => self.interval(e, loops)?.hi,
                                None => decl.upper[k].clone().ok_or_else(|| {
                                    format!("a section of `{name}` up to its unknown last extent")
                                })?,
                            };
                            DimRegion::Span(Interval { lo: l, hi: h })
                        }
                    };
                    dims.push(d);
                }
                // The largest offset, from the subscripts together.
                let mut off = Bound::Int(0);
                let mut stride = Bound::Int(1);
                for (k, s) in subs.iter().enumerate() {
                    let hi = match s {
                        Subscript::Index(i) => match self.eval(i, loops, &[], 0) {
                            Ok(v) => v.hi,
                            Err(_) => dims[k].clone().span().hi,
                        },
                        Subscript::Range { .. } => dims[k].clone().span().hi,
                    };
                    off = add(off, mul(sub(hi, decl.lower[k].clone()), stride.clone()));
                    if let Some(e) = decl.extents.get(k) {
                        stride = nonneg(mul(stride, e.clone()));
                    }
                }
                let cap = self.eliminate(Interval::point(off), loops)?.hi;
                out.push(Piece::Rect(dims, cap));
                for x in dfort_ir::subscript_exprs(subs) {
                    self.touches(x, f, loops, decl, out)?;
                }
                Ok(())
            }
            ExprKind::FunctionCall {
                name: callee,
                target,
                args,
            } => {
                for (pos, a) in args.iter().enumerate() {
                    if self.passes(&a.value, f) {
                        out.push(self.through_call(callee, target, args, pos, f, loops, decl)?);
                    } else {
                        self.touches(&a.value, f, loops, decl, out)?;
                    }
                }
                Ok(())
            }
            ExprKind::ImpliedDo { .. } if mentions(e, f) => {
                Err(format!("`{name}` is referenced in an implied DO"))
            }
            _ => {
                for c in e.children() {
                    self.touches(c, f, loops, decl, out)?;
                }
                Ok(())
            }
        }
    }

    /// The region of `f` that the call to `callee` touches through actual
    /// `pos` (which is `f` or one of its elements).
    #[allow(clippy::too_many_arguments)]
    fn through_call(
        &self,
        callee: &str,
        target: &CallTarget,
        args: &[Arg],
        pos: usize,
        f: SymbolId,
        loops: &[Loop],
        decl: &Declared,
    ) -> Result<Piece, Why> {
        let name = &self.unit.symbol(f).name;
        let CallTarget::Unit(c) = target else {
            return Err(format!(
                "`{name}` is passed to `{callee}`, whose source dfort does not have"
            ));
        };
        let cu = self.program.unit(*c);
        let order = crate::checkpoint::in_formal_order(cu, args);
        let Some(k) = order
            .iter()
            .position(|a| a.is_some_and(|a| std::ptr::eq(a, &args[pos])))
        else {
            return Err(format!(
                "`{name}` is passed to `{callee}` in no formal's place"
            ));
        };
        let known = known_args(&order, &|e| self.constant(e, 0));
        let theirs = of_formal_at(
            self.program,
            self.effects,
            *c,
            k as u32,
            &known,
            self.depth + 1,
        )
        .map_err(|w| format!("in `{callee}`, {w}"))?;
        // Their bounds in our terms: each formal they read, by its actual.
        let mut actuals: BTreeMap<u32, Interval> = BTreeMap::new();
        let mut used = Vec::new();
        for d in &theirs.dims {
            let (a, b, s) = d.triplet();
            for x in [a, b, s] {
                x.formals(&mut used);
            }
        }
        for e in theirs.extents.iter().chain(&theirs.lower) {
            e.formals(&mut used);
        }
        theirs.cap.formals(&mut used);
        for j in used {
            let Some(Some(a)) = order.get(j as usize) else {
                return Err(format!(
                    "the region of `{name}` in `{callee}` depends on an absent argument"
                ));
            };
            actuals.insert(j, self.eval(&a.value, loops, &[], 0)?);
        }
        let mine = |b: &Bound, upper: bool| substitute(b, &actuals, upper);
        // Where the actual starts, in our subscripts.
        let start: Vec<Interval> = match &args[pos].value.kind {
            ExprKind::ArrayRef { subs, .. } => {
                let mut v = Vec::new();
                for (k, s) in subs.iter().enumerate() {
                    let Subscript::Index(i) = s else {
                        return Err(format!("a section of `{name}` is passed to `{callee}`"));
                    };
                    let leading = k + 1 < subs.len();
                    v.push(match self.eval(i, loops, &[], 0) {
                        Ok(i) => i,
                        Err(_) if leading && decl.upper[k].is_some() => Interval {
                            lo: decl.lower[k].clone(),
                            hi: decl.upper[k].clone().unwrap_or(Bound::Int(0)),
                        },
                        Err(w) => {
                            return Err(format!(
                                "the subscript `{}` of `{name}` passed to `{callee}`: {w}",
                                dfort_ir::dump::expr(self.unit, i)
                            ))
                        }
                    });
                }
                v
            }
            _ => decl.lower.iter().cloned().map(Interval::point).collect(),
        };
        let rank = decl.lower.len();
        // The same shape, from the start of every leading dimension: the
        // region carries over dimension by dimension.
        let same_shape = theirs.dims.len() == rank
            && (0..rank.saturating_sub(1)).all(|k| {
                start[k].is_point()
                    && start[k].lo == decl.lower[k]
                    && mine(&theirs.extents[k], false).is_point()
                    && mine(&theirs.extents[k], false).lo == decl.extents[k]
            });
        if same_shape {
            let mut dims = Vec::new();
            for (k, d) in theirs.dims.iter().enumerate() {
                // Our subscript = start + theirs - their lower bound.
                let lo_k = mine(&theirs.lower[k], false);
                if !lo_k.is_point() {
                    return Err(format!("the lower bound of `{callee}`'s formal varies"));
                }
                let shift_lo = sub(start[k].lo.clone(), lo_k.lo.clone());
                let shift_hi = sub(start[k].hi.clone(), lo_k.lo.clone());
                if let DimRegion::Progression { c, s, from, to } = d {
                    let (c, s, from, to) = (
                        mine(c, false),
                        mine(s, false),
                        mine(from, false),
                        mine(to, true),
                    );
                    if start[k].is_point()
                        && c.is_point()
                        && s.is_point()
                        && from.is_point()
                        && to.is_point()
                    {
                        dims.push(DimRegion::Progression {
                            c: add(shift_lo, c.lo),
                            s: s.lo,
                            from: from.lo,
                            to: to.hi,
                        });
                        continue;
                    }
                }
                let sp = d.clone().span();
                let lo = add(mine(&sp.lo, false).lo, shift_lo);
                let hi = add(mine(&sp.hi, true).hi, shift_hi);
                dims.push(DimRegion::Span(Interval { lo, hi }));
            }
            // Our loop indices go only now: what the bounds say of them
            // together is kept.
            let mut out = Vec::new();
            for d in dims {
                out.push(match d {
                    DimRegion::Span(i) => DimRegion::Span(self.eliminate(i, loops)?),
                    DimRegion::Progression { c, s, from, to } => {
                        let pc = self.eliminate(Interval::point(c.clone()), loops)?;
                        let ps = self.eliminate(Interval::point(s.clone()), loops)?;
                        if pc.is_point() && ps.is_point() {
                            let f = self.eliminate(Interval::point(from), loops)?;
                            let t = self.eliminate(Interval::point(to), loops)?;
                            DimRegion::Progression {
                                c: pc.lo,
                                s: ps.lo,
                                from: f.lo,
                                to: t.hi,
                            }
                        } else {
                            let sp = DimRegion::Progression { c, s, from, to }.span();
                            DimRegion::Span(self.eliminate(sp, loops)?)
                        }
                    }
                });
            }
            let first: Vec<DimRegion> = start.iter().cloned().map(DimRegion::Span).collect();
            let from = offsets(&first, decl.lower, decl.extents).hi;
            let cap = self
                .eliminate(
                    Interval::point(add(from, mine(&theirs.cap, true).hi)),
                    loops,
                )?
                .hi;
            return Ok(Piece::Rect(out, cap));
        }
        // Otherwise by element offsets from our first element: where the
        // actual starts, plus the offsets their region reaches.
        let theirs_off = offsets(&theirs.dims, &theirs.lower, &theirs.extents);
        let start_dims: Vec<DimRegion> = start.iter().cloned().map(DimRegion::Span).collect();
        let ours = offsets(&start_dims, decl.lower, decl.extents);
        let span = Interval {
            lo: add(ours.lo, mine(&theirs_off.lo, false).lo),
            hi: add(ours.hi, mine(&theirs.cap, true).hi),
        };
        Ok(Piece::Linear(self.eliminate(span, loops)?))
    }

    /// The region of one subscript: a progression when it is `c + s*i`
    /// for one enclosing loop's index `i` (with `c` and `s` known on
    /// entry), else its interval.
    fn subscript(&self, e: &Expr, loops: &[Loop]) -> Result<DimRegion, Why> {
        if let ExprKind::Var(v) = e.kind {
            if let Some(rhs) = self.plain_definition(v, loops) {
                return self.subscript(rhs, loops);
            }
        }
        let inside: Vec<usize> = (0..loops.len())
            .filter(|&k| mentions(e, loops[k].var))
            .collect();
        if let Some(&k) = inside.last() {
            let i = loops[k].var;
            let unit_step = match &loops[k].step {
                None => true,
                Some(s) => dfort_ir::dp::constant_int(self.unit, s, 0) == Some(1),
            };
            if unit_step && linear_in(e, i) {
                let at = |v: i64| self.eval(e, loops, &[(i, v)], 0);
                if let (Ok(c0), Ok(c1)) = (at(0), at(1)) {
                    let (c0, c1) = (
                        self.eliminate(c0, &loops[..k])?,
                        self.eliminate(c1, &loops[..k])?,
                    );
                    if c0.is_point() && c1.is_point() {
                        let s = sub(c1.lo, c0.lo.clone());
                        let range = self.eliminate(self.loop_range(loops, k)?, &loops[..k])?;
                        if s.constant().is_none_or(|v| v != 0 && v != 1) {
                            return Ok(DimRegion::Progression {
                                c: c0.lo,
                                s,
                                from: range.lo,
                                to: range.hi,
                            });
                        }
                    }
                }
            }
        }
        Ok(DimRegion::Span(self.interval(e, loops)?))
    }

    fn point(&self, e: &Expr, loops: &[Loop]) -> Result<Bound, Why> {
        let i = self.interval(e, loops)?;
        if i.is_point() {
            Ok(i.lo)
        } else {
            Err(format!(
                "`{}` is not known on entry",
                dfort_ir::dump::expr(self.unit, e)
            ))
        }
    }

    /// The values `e` takes inside `loops`, in terms of the formals only.
    fn interval(&self, e: &Expr, loops: &[Loop]) -> Result<Interval, Why> {
        let i = self.eval(e, loops, &[], 0)?;
        self.eliminate(i, loops)
    }

    /// `i` without the indices of `loops` (and the locals they stand for):
    /// each replaced by the values it takes, innermost first, so that
    /// what an expression says of them together (`j + jb - 1` with
    /// `jb = min(nb, n - j + 1)`) counts before they are bounded apart.
    fn eliminate(&self, i: Interval, loops: &[Loop]) -> Result<Interval, Why> {
        // Locals first: their values are in terms of the loop indices.
        let mut i = self.without_locals(i);
        for k in (0..loops.len()).rev() {
            let v = loops[k].var;
            let has = |b: &Bound| b.vars().contains(&v);
            if !has(&i.lo) && !has(&i.hi) {
                continue;
            }
            let r = self.loop_range(loops, k)?;
            let leaf = |b: &Bound| match b {
                Bound::Var(x) if *x == v => Some(r.clone()),
                _ => None,
            };
            // Where a bound moves one way with the index, the index's end
            // goes in everywhere at once (what its terms say together is
            // kept); elsewhere each occurrence is bounded apart.
            let end = |b: &Bound, upper: bool| match monotone(b, v) {
                Mono::Const => b.clone(),
                Mono::Inc => replace_var(b, v, if upper { &r.hi } else { &r.lo }),
                Mono::Dec => replace_var(b, v, if upper { &r.lo } else { &r.hi }),
                Mono::Mixed if upper => subst(b, &leaf).hi,
                Mono::Mixed => subst(b, &leaf).lo,
            };
            // The index's range may hold locals of the loops outside
            // (`j = jj, jj + jb - 1`): they go before those loops do.
            i = self.without_locals(Interval {
                lo: end(&i.lo, false),
                hi: end(&i.hi, true),
            });
        }
        if let Some(v) = i.lo.vars().into_iter().chain(i.hi.vars()).next() {
            return Err(format!(
                "`{}` is not bounded there",
                self.unit.symbol(v).name
            ));
        }
        Ok(i)
    }

    /// `i` with the locals it holds replaced by their values (in terms of
    /// loop indices), until none is left.
    fn without_locals(&self, mut i: Interval) -> Interval {
        for _ in 0..16 {
            let locals = self.locals.borrow();
            let held: Vec<SymbolId> =
                i.lo.vars()
                    .into_iter()
                    .chain(i.hi.vars())
                    .filter(|v| locals.contains_key(v))
                    .collect();
            if held.is_empty() {
                break;
            }
            let leaf = |b: &Bound| match b {
                Bound::Var(x) => locals.get(x).cloned(),
                _ => None,
            };
            i = Interval {
                lo: subst(&i.lo, &leaf).lo,
                hi: subst(&i.hi, &leaf).hi,
            };
        }
        i
    }

    /// The values loop `k`'s index takes, in terms of the loops outside
    /// it.
    fn loop_range(&self, loops: &[Loop], k: usize) -> Result<Interval, Why> {
        let l = &loops[k];
        let outer = &loops[..k];
        let s = self.eval(&l.start, outer, &[], 0)?;
        let e = self.eval(&l.end, outer, &[], 0)?;
        let step = l
            .step
            .as_ref()
            .map(|x| dfort_ir::dp::constant_int(self.unit, x, 0));
        let mut r = match step {
            None | Some(Some(1..)) => Interval { lo: s.lo, hi: e.hi },
            Some(Some(..=-1)) => Interval { lo: e.lo, hi: s.hi },
            _ => Interval {
                lo: min(vec![s.lo, e.lo]),
                hi: max(vec![s.hi, e.hi]),
            },
        };
        // What the IF arms around say of it (bounds it cannot read are
        // left out).
        for (upper, g) in &l.guards {
            let Ok(b) = self.eval(g, outer, &[], 0) else {
                continue;
            };
            if *upper {
                r.hi = min(vec![r.hi, b.hi]);
            } else {
                r.lo = max(vec![r.lo, b.lo]);
            }
        }
        Ok(r)
    }

    /// The values of integer expression `e` inside `loops`, the indices of
    /// `loops` (and locals one definition gives in terms of them) kept as
    /// they are, the variables of `fixed` taken at the values given.
    fn eval(
        &self,
        e: &Expr,
        loops: &[Loop],
        fixed: &[(SymbolId, i64)],
        depth: u32,
    ) -> Result<Interval, Why> {
        if depth > 24 {
            return Err("its bounds are too deeply nested".into());
        }
        let text = || dfort_ir::dump::expr(self.unit, e);
        let go = |x: &Expr| self.eval(x, loops, fixed, depth + 1);
        match &e.kind {
            ExprKind::Int(v) => Ok(Interval::point(Bound::Int(*v))),
            ExprKind::Var(v) => {
                if let Some((_, val)) = fixed.iter().find(|(s, _)| s == v) {
                    return Ok(Interval::point(Bound::Int(*val)));
                }
                self.variable(*v, loops, depth)
            }
            ExprKind::Unary {
                op: UnaryOp::Neg,
                operand,
            } => {
                let i = go(operand)?;
                Ok(Interval {
                    lo: neg(i.hi),
                    hi: neg(i.lo),
                })
            }
            ExprKind::Unary {
                op: UnaryOp::Plus,
                operand,
            } => go(operand),
            ExprKind::Binary { op, lhs, rhs } => {
                let (a, b) = (go(lhs)?, go(rhs)?);
                match op {
                    BinaryOp::Add => Ok(Interval {
                        lo: add(a.lo, b.lo),
                        hi: add(a.hi, b.hi),
                    }),
                    BinaryOp::Sub => Ok(Interval {
                        lo: sub(a.lo, b.hi),
                        hi: sub(a.hi, b.lo),
                    }),
                    BinaryOp::Mul => Ok(times(a, b)),
                    BinaryOp::Div => match b.lo.constant() {
                        Some(c) if c > 0 && b.is_point() => Ok(Interval {
                            lo: quotient(a.lo, Bound::Int(c)),
                            hi: quotient(a.hi, Bound::Int(c)),
                        }),
                        _ => Err(format!(
                            "`{}` divides by a value that may not be a positive constant",
                            text()
                        )),
                    },
                    _ => Err(format!("dfort cannot bound `{}`", text())),
                }
            }
            ExprKind::Intrinsic { name, args }
                if matches!(name.as_str(), "max" | "min") && !args.is_empty() =>
            {
                let mut los = Vec::new();
                let mut his = Vec::new();
                for a in args {
                    let i = go(&a.value)?;
                    los.push(i.lo);
                    his.push(i.hi);
                }
                Ok(if name == "max" {
                    Interval {
                        lo: max(los),
                        hi: max(his),
                    }
                } else {
                    Interval {
                        lo: min(los),
                        hi: min(his),
                    }
                })
            }
            _ => Err(format!("dfort cannot bound `{}`", text())),
        }
    }

    /// The values of variable `v` inside `loops`: an enclosing loop's
    /// index as itself; a local one definition gives on every path to
    /// the statement being read (`self.site`) as that definition's value;
    /// another local as the hull of its definitions' values.
    fn variable(&self, v: SymbolId, loops: &[Loop], depth: u32) -> Result<Interval, Why> {
        if loops.iter().any(|l| l.var == v) {
            return Ok(Interval::point(Bound::Var(v)));
        }
        let sym = self.unit.symbol(v);
        if sym.attrs.parameter {
            return match dfort_ir::dp::constant_int(self.unit, &var_expr(v, sym.span), 0) {
                Some(c) => Ok(Interval::point(Bound::Int(c))),
                None => Err(format!("the constant `{}` is not an integer", sym.name)),
            };
        }
        if sym.ty.base != BaseType::Integer || sym.rank() != 0 {
            return Err(format!("`{}` is not an integer scalar", sym.name));
        }
        match sym.storage {
            // A leading dimension is positive: products with it keep
            // their terms together (`j*lda` passed on as an increment).
            Storage::Dummy(k) if !self.writes.contains_id(v) && self.is_extent(v) => {
                Ok(Interval::point(nonneg(Bound::Formal(k))))
            }
            Storage::Dummy(k) if !self.writes.contains_id(v) => {
                Ok(Interval::point(Bound::Formal(k)))
            }
            Storage::Dummy(_) => Err(format!("`{}` changes in `{}`", sym.name, self.unit.name)),
            Storage::Local if sym.init.is_none() && !sym.attrs.save => match self.defs.get(&v) {
                Some(Some(list)) if !list.is_empty() => {
                    if list.iter().any(|(rhs, _, _)| mentions(rhs, v)) {
                        return Err(format!("`{}` is a counter", sym.name));
                    }
                    if let Some((rhs, at, def)) = self.exact_definition(list, loops) {
                        let outer = self.site.replace(Some(*def));
                        let i = self.eval(rhs, at, &[], depth + 1);
                        self.site.set(outer);
                        // Kept as itself until the bounds it is in are
                        // simplified (`j + jb` and `n - j - jb` cancel).
                        self.locals.borrow_mut().insert(v, i?);
                        return Ok(Interval::point(Bound::Var(v)));
                    }
                    let mut out: Option<Interval> = None;
                    for (rhs, at, def) in list {
                        let outer = self.site.replace(Some(*def));
                        let i = self
                            .eval(rhs, at, &[], depth + 1)
                            .and_then(|i| self.eliminate(i, at));
                        self.site.set(outer);
                        let i = i?;
                        out = Some(match out {
                            None => i,
                            Some(o) => o.hull(i),
                        });
                    }
                    out.ok_or_else(|| format!("`{}` is never defined", sym.name))
                }
                _ => Err(format!(
                    "`{}` is defined other than by assignments",
                    sym.name
                )),
            },
            _ => Err(format!("`{}` is not a local or formal integer", sym.name)),
        }
    }

    /// Of a local's definitions `list`, the one that dominates the
    /// statement read, in the same `loops`, with no other one between
    /// them: the local's value there, exactly.
    fn exact_definition<'d>(
        &self,
        list: &'d [Definition],
        loops: &[Loop],
    ) -> Option<&'d Definition> {
        let site = self.site.get()?;
        let order = |id: StmtId| self.order.get(&id).copied().unwrap_or(usize::MAX);
        let closest = list
            .iter()
            .filter(|(_, at, def)| {
                at.len() <= loops.len()
                    && at.iter().zip(loops).all(|(a, b)| a.var == b.var)
                    && self.dominates(*def, site)
            })
            .max_by_key(|(_, _, def)| order(*def))?;
        let (from, to) = (order(closest.2), order(site));
        let between = list.iter().any(|(_, _, d)| {
            let o = order(*d);
            *d != closest.2 && o > from && o < to
        });
        (!between).then_some(closest)
    }

    /// The expression a local subscript stands for (`iy` after `iy = 1 +
    /// (i - 1)*incy`), when its exact definition reads only the indices of
    /// the loops around it, formals the unit never writes and constants:
    /// read at the subscript, it has the same value, and the subscript's
    /// progression along the loop is seen (seed 51051, case 602).
    fn plain_definition(&self, v: SymbolId, loops: &[Loop]) -> Option<&Expr> {
        let sym = self.unit.symbol(v);
        if sym.storage != Storage::Local || sym.init.is_some() || sym.attrs.save {
            return None;
        }
        let Some(Some(list)) = self.defs.get(&v) else {
            return None;
        };
        let (rhs, at, _) = self.exact_definition(list, loops)?;
        let mut plain = true;
        rhs.walk(&mut |x| match &x.kind {
            ExprKind::Var(w) => {
                let ws = self.unit.symbol(*w);
                plain &= at.iter().any(|l| l.var == *w)
                    || ws.attrs.parameter
                    || (matches!(ws.storage, Storage::Dummy(_)) && !self.writes.contains_id(*w));
            }
            ExprKind::ArrayRef { .. }
            | ExprKind::Component { .. }
            | ExprKind::FunctionCall { .. }
            | ExprKind::Apply { .. } => plain = false,
            _ => {}
        });
        plain.then_some(rhs)
    }

    /// Whether statement `def` runs before `site` on every path to it: no
    /// jumps in the unit, and `def` precedes, in its own statement list,
    /// the statement that is or holds `site`.
    fn dominates(&self, def: StmtId, site: StmtId) -> bool {
        if self.jumps {
            return false;
        }
        let (Some(d), Some(s)) = (self.paths.get(&def), self.paths.get(&site)) else {
            return false;
        };
        let n = d.len();
        n >= 1
            && s.len() >= n
            && d[..n - 1] == s[..n - 1]
            && d[n - 1].0 == s[n - 1].0
            && d[n - 1].1 < s[n - 1].1
    }
}

/// Adds to `loops` what condition `cond` (true inside an IF arm) says of
/// their indices: `j < n` bounds `j` by `n - 1`, `.and.` both sides.
fn guard(cond: &Expr, loops: &mut [Loop]) {
    let ExprKind::Binary { op, lhs, rhs } = &cond.kind else {
        return;
    };
    if *op == BinaryOp::And {
        guard(lhs, loops);
        guard(rhs, loops);
        return;
    }
    let one = |e: &Expr, k: i64| Expr {
        kind: ExprKind::Binary {
            op: BinaryOp::Add,
            lhs: Box::new(e.clone()),
            rhs: Box::new(Expr {
                kind: ExprKind::Int(k),
                span: e.span,
            }),
        },
        span: e.span,
    };
    // (variable, upper, bound) for `var op other` and `other op var`.
    let mut add = |var: &Expr, upper: bool, bound: Expr| {
        if let ExprKind::Var(v) = var.kind {
            if let Some(l) = loops.iter_mut().rev().find(|l| l.var == v) {
                l.guards.push((upper, bound));
            }
        }
    };
    match op {
        BinaryOp::Lt => {
            add(lhs, true, one(rhs, -1));
            add(rhs, false, one(lhs, 1));
        }
        BinaryOp::Le => {
            add(lhs, true, (**rhs).clone());
            add(rhs, false, (**lhs).clone());
        }
        BinaryOp::Gt => {
            add(lhs, false, one(rhs, 1));
            add(rhs, true, one(lhs, -1));
        }
        BinaryOp::Ge => {
            add(lhs, false, (**rhs).clone());
            add(rhs, true, (**lhs).clone());
        }
        _ => {}
    }
}

/// The statements of `ids` and below, in source order.
fn preorder(unit: &Unit, ids: &[StmtId], out: &mut Vec<StmtId>) {
    for &id in ids {
        out.push(id);
        if let Some(st) = unit.stmts.get(id) {
            for b in st.kind.blocks() {
                preorder(unit, b, out);
            }
        }
    }
}

/// Per statement of `ids` and below: the chain of (statement list,
/// index) from the unit's body down to it; `lists` numbers the lists.
fn record_paths(
    unit: &Unit,
    ids: &[StmtId],
    path: &mut Vec<(usize, usize)>,
    lists: &mut usize,
    out: &mut BTreeMap<StmtId, Vec<(usize, usize)>>,
) {
    let me = *lists;
    *lists += 1;
    for (k, &id) in ids.iter().enumerate() {
        path.push((me, k));
        out.insert(id, path.clone());
        if let Some(st) = unit.stmts.get(id) {
            for b in st.kind.blocks() {
                record_paths(unit, b, path, lists, out);
            }
        }
        path.pop();
    }
}

/// The declared bounds of the formal whose region is computed.
struct Declared<'a> {
    lower: &'a [Bound],
    upper: &'a [Option<Bound>],
    extents: &'a [Bound],
}

fn var_expr(v: SymbolId, span: Span) -> Expr {
    Expr {
        kind: ExprKind::Var(v),
        span,
    }
}

/// `a * b` on intervals.
fn times(a: Interval, b: Interval) -> Interval {
    if let (true, Some(c)) = (b.is_point(), b.lo.constant()) {
        return if c >= 0 {
            Interval {
                lo: mul(a.lo, Bound::Int(c)),
                hi: mul(a.hi, Bound::Int(c)),
            }
        } else {
            Interval {
                lo: mul(a.hi, Bound::Int(c)),
                hi: mul(a.lo, Bound::Int(c)),
            }
        };
    }
    if a.is_point() && a.lo.constant().is_some() {
        return times(b, a);
    }
    if a.is_point() && b.is_point() {
        return Interval::point(mul(a.lo, b.lo));
    }
    let products = vec![
        mul(a.lo.clone(), b.lo.clone()),
        mul(a.lo.clone(), b.hi.clone()),
        mul(a.hi.clone(), b.lo.clone()),
        mul(a.hi, b.hi),
    ];
    Interval {
        lo: min(products.clone()),
        hi: max(products),
    }
}

/// Whether `e` mentions variable `v`.
fn mentions(e: &Expr, v: SymbolId) -> bool {
    let mut found = false;
    e.walk(&mut |x| {
        if matches!(x.kind, ExprKind::Var(s) | ExprKind::ArrayRef { array: s, .. } if s == v) {
            found = true;
        }
    });
    found
}

/// Whether `e` is linear in `v`: `v` only under `+`, `-` and products
/// with factors that do not mention it.
fn linear_in(e: &Expr, v: SymbolId) -> bool {
    if !mentions(e, v) {
        return true;
    }
    match &e.kind {
        ExprKind::Var(s) => *s == v,
        ExprKind::Unary {
            op: UnaryOp::Neg | UnaryOp::Plus,
            operand,
        } => linear_in(operand, v),
        ExprKind::Binary {
            op: BinaryOp::Add | BinaryOp::Sub,
            lhs,
            rhs,
        } => linear_in(lhs, v) && linear_in(rhs, v),
        ExprKind::Binary {
            op: BinaryOp::Mul,
            lhs,
            rhs,
        } => (linear_in(lhs, v) && !mentions(rhs, v)) || (linear_in(rhs, v) && !mentions(lhs, v)),
        _ => false,
    }
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
fn subst(b: &Bound, leaf: &dyn Fn(&Bound) -> Option<Interval>) -> Interval {
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
fn compare(op: BinaryOp, a: &Known, b: &Known) -> Option<bool> {
    use std::cmp::Ordering;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::program;

    /// The value of a bound with the formals given by position.
    fn value(b: &Bound, f: &[i64]) -> i64 {
        let go = |x: &Bound| value(x, f);
        match b {
            Bound::Int(v) => *v,
            Bound::Formal(k) => f[*k as usize],
            Bound::Var(_) => panic!("a loop index is left in {b:?}"),
            Bound::NonNeg(x) => go(x),
            Bound::Sum(v) => v.iter().map(go).sum(),
            Bound::Scale(c, x) => c * go(x),
            Bound::Product(x, y) => go(x) * go(y),
            Bound::Quotient(x, y) => go(x) / go(y),
            Bound::Max(v) => v.iter().map(go).max().unwrap_or(0),
            Bound::Min(v) => v.iter().map(go).min().unwrap_or(0),
        }
    }

    const SRC: &str = "subroutine gemv(trans, m, n, a, lda, x, incx, y)
  character :: trans
  integer :: m, n, lda, incx, i, j
  real(8) :: a(lda, *), x(*), y(*)
  if (trans == 'N') then
    do j = 1, n
      do i = 1, m
        y(i) = y(i) + a(i, j)*x(1 + (j - 1)*incx)
      end do
    end do
  else
    do j = 1, n
      do i = 1, m
        y(j) = y(j) + a(i, j)*x(1 + (i - 1)*incx)
      end do
    end do
  end if
end subroutine gemv

subroutine blocked(n, a, lda, nb)
  integer :: n, lda, nb, j, jb
  real(8) :: a(lda, *)
  do j = 1, n, nb
    jb = min(nb, n - j + 1)
    call square(jb, a(j, j), lda)
  end do
end subroutine blocked

subroutine square(n, a, lda)
  integer :: n, lda, i, j
  real(8) :: a(lda, *)
  do j = 1, n
    do i = 1, j
      a(i, j) = a(i, j)**2
    end do
  end do
end subroutine square

subroutine rows(n, a, lda)
  integer :: n, lda, j
  real(8) :: a(lda, *)
  do j = 1, n - 1
    call scal(n - j, a(j, j + 1), lda)
  end do
end subroutine rows

subroutine scal(n, x, incx)
  integer :: n, incx, i
  real(8) :: x(*)
  do i = 1, n
    x(1 + (i - 1)*incx) = 2*x(1 + (i - 1)*incx)
  end do
end subroutine scal

subroutine q3(m, k, a, lda, x, incx, y)
  integer :: m, k, lda, incx
  real(8) :: a(lda, k), x(*), y(m)
  integer :: i, j, nb, jj, jb
  real(8) :: tmp
  nb = 2
  do jj = 1, k, nb
    jb = min(nb, k - jj + 1)
    do j = jj, jj + jb - 1
      tmp = x(1 + (j - 1)*incx)
      do i = 1, m
        y(i) = y(i) + tmp*a(i, j)
      end do
    end do
  end do
end subroutine q3

subroutine q4(m, al, x, y, incy)
  integer :: m, incy
  real(8) :: al, x(*), y(*)
  integer :: i, iy, jj, jb, nb
  nb = 3
  do jj = 1, m, nb
    jb = min(nb, m - jj + 1)
    do i = jj, jj + jb - 1
      iy = 1 + (i - 1)*incy
      y(iy) = y(iy) + al*x(i)/(1.0d0 + y(iy)**2)
    end do
  end do
end subroutine q4

subroutine gather(n, idx, x, s)
  integer :: n, idx(*), i
  real(8) :: x(*), s
  s = 0
  do i = 1, n
    s = s + x(idx(i))
  end do
end subroutine gather
";

    fn region(p: &Program, unit: &str, k: u32, known: KnownArgs) -> Result<FormalRegion, Why> {
        let u = p.units.iter().find(|u| u.name == unit).expect("unit");
        let effects = crate::effects::all(p);
        of_formal(p, &effects, u.id, k, &known)
    }

    #[test]
    fn a_known_flag_picks_the_branch_and_the_loops_bound_the_box() {
        let p = program(SRC);
        let t = |c: &str| {
            [(0, Known::Str(c.into()))]
                .into_iter()
                .collect::<KnownArgs>()
        };
        // gemv(trans, m, n, a, lda, x, incx, y) with m = 4, n = 3,
        // lda = 6, incx = 2.
        let f = [0, 4, 3, 0, 6, 0, 2, 0];
        let a = region(&p, "gemv", 3, t("T")).expect("a region of a");
        let dims: Vec<(i64, i64, i64)> = a
            .dims
            .iter()
            .map(|d| {
                let (x, y, s) = d.triplet();
                (value(&x, &f), value(&y, &f), value(&s, &f))
            })
            .collect();
        assert_eq!(dims, [(1, 4, 1), (1, 3, 1)]);
        // x is strided: x(1), x(3), ..., x(7) for trans = 'T' (i up to m).
        let x = region(&p, "gemv", 5, t("T")).expect("a region of x");
        let (first, last, step) = x.dims[0].triplet();
        assert_eq!(
            (value(&first, &f), value(&last, &f), value(&step, &f)),
            (1, 7, 2)
        );
        // y: its first n elements for 'T', m for 'N'.
        for (flag, hi) in [("T", 3), ("N", 4)] {
            let y = region(&p, "gemv", 7, t(flag)).expect("a region of y");
            assert_eq!(value(&y.dims[0].triplet().1, &f), hi, "{flag}");
        }
    }

    #[test]
    fn blocks_of_a_blocked_loop_reach_the_last_element_and_no_further() {
        let p = program(SRC);
        // blocked(n, a, lda, nb): the triangles of the diagonal blocks;
        // the last element reached is a(n, n), offset (n-1) + (n-1)*lda.
        let r = region(&p, "blocked", 1, KnownArgs::new()).expect("a region");
        for (n, lda, nb) in [(200, 200, 32), (7, 9, 3), (5, 5, 5)] {
            let f = [n, 0, lda, nb];
            assert_eq!(value(&r.cap, &f), (n - 1) + (n - 1) * lda, "{n} {lda} {nb}");
        }
    }

    #[test]
    fn a_subscript_read_from_an_array_has_no_bound() {
        let p = program(SRC);
        let e = region(&p, "gather", 2, KnownArgs::new()).expect_err("no region");
        assert!(e.contains("the subscript `idx(i)` of `x`"), "{e}");
    }

    #[test]
    fn a_strided_row_ends_at_the_last_column() {
        let p = program(SRC);
        // rows(n, a, lda): the rows right of the diagonal, each through a
        // vector formal with increment lda; the last element reached is
        // a(n-1, n), offset (n-2) + (n-1)*lda. Before `j*lda` and
        // `(-j)*lda` were like terms, the cap was about twice that.
        let r = region(&p, "rows", 1, KnownArgs::new()).expect("a region");
        for (n, lda) in [(200, 200), (7, 9), (3, 3)] {
            let f = [n, 0, lda];
            assert_eq!(value(&r.cap, &f), (n - 2) + (n - 1) * lda, "{n} {lda}");
        }
    }

    #[test]
    fn the_blocked_cholesky_stays_inside_the_matrix() {
        let p = crate::test_support::fixed_program(&[
            "tests/fixtures/linalg/xlapack.f",
            "tests/fixtures/linalg/xblas.f",
        ]);
        // xpotrf(uplo, n, a, lda, nb, info), and the driver xposv(uplo, n,
        // nrhs, a, lda, b, ldb, nb, info), with UPLO known or not: never
        // past a(n, n). The level-1 calls pass `lda` as an increment,
        // which rules out their negative-increment branches.
        let flags: [Option<&str>; 3] = [Some("U"), Some("L"), None];
        for flag in flags {
            let known: KnownArgs = flag
                .map(|c| (0, Known::Str(c.into())))
                .into_iter()
                .collect();
            let r = region(&p, "xpotrf", 2, known.clone()).expect("a region");
            let s = region(&p, "xposv", 3, known).expect("a region");
            for (n, lda, nb) in [(200, 200, 32), (7, 9, 3), (5, 5, 5), (6, 6, 1)] {
                let last = (n - 1) + (n - 1) * lda;
                let f = [0, n, 0, lda, nb, 0];
                assert!(value(&r.cap, &f) <= last, "xpotrf {flag:?} {n} {lda} {nb}");
                let f = [0, n, 1, 0, lda, 0, n, nb, 0];
                assert!(value(&s.cap, &f) <= last, "xposv {flag:?} {n} {lda} {nb}");
            }
        }
    }

    #[test]
    fn a_block_length_bounds_a_vector_through_a_local_subscript() {
        let p = program(SRC);
        // q4(m, al, x, y, incy): y(iy), iy = 1 + (i-1)*incy, for i in the
        // blocks jj..jj+jb-1, jb = min(nb, m - jj + 1): i runs over 1..m,
        // so y is 1 : 1 + (m-1)*incy : incy, whatever m is against the
        // block size (seed 51051, case 602: the last element was bounded
        // by jj + nb - 1, past the actual's end).
        let r = region(&p, "q4", 3, KnownArgs::new()).expect("a region of y");
        for m in [1, 2, 3, 4, 7] {
            let f = [m, 0, 0, 0, 2];
            let (first, last, step) = r.dims[0].triplet();
            assert_eq!(
                (value(&first, &f), value(&last, &f), value(&step, &f)),
                (1, 1 + (m - 1) * 2, 2),
                "m = {m}"
            );
        }
    }

    #[test]
    fn a_block_length_set_in_the_loop_bounds_a_strided_vector() {
        let p = program(SRC);
        // q3(m, k, a, lda, x, incx, y): x(1 + (j-1)*incx) for j in the
        // blocks jj..jj+jb-1, jb = min(nb, k - jj + 1), nb = 2 a local:
        // j runs over 1..k, so x is 1 : 1 + (k-1)*incx : incx.
        let r = region(&p, "q3", 4, KnownArgs::new()).expect("a region of x");
        let f = [0, 7, 0, 0, 0, 3, 0];
        let (first, last, step) = r.dims[0].triplet();
        assert_eq!(
            (value(&first, &f), value(&last, &f), value(&step, &f)),
            (1, 19, 3)
        );
    }
}
