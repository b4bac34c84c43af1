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
//! What a call site knows of its actuals ([`Known`]) decides the
//! callee's IF arms: literals, leading dimensions, and the index of a
//! counted DO around the call that starts at 1 or more (positive: MITgcm's
//! `DO k = 1, Nr` around `CALL TIMESTEP(…, k, …)` rules out the callee's
//! `IF (kArg .EQ. 0)` arm for every level); a checkpoint may also ask for
//! the region under `kArg = c` and under `kArg /= c` ([`Known::Except`])
//! and choose between them at run time.
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
//! declared dimension (subscripts stay in bounds), and so is one of the
//! last dimension when its declared extent is known and not 1 (`a(n, 1)`
//! is the old idiom for an assumed size). Intervals are clamped
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

pub(crate) mod bound;
mod counters;
mod elements;
mod eval;
mod globals;
mod memo;
mod touches;

pub use bound::*;
pub use elements::touched_elements;
pub use globals::{global_shape, of_global, GlobalShape};
pub use memo::RegionMemo;

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
    /// Whether a subscript of the unit's own references was bounded by
    /// the declared dimension alone (no expression bounds it): the region
    /// may then hold elements the actual does not have, past its storage
    /// (a callee's region passed on is not looked at).
    pub declared_bounds: bool,
}

/// What one reference can touch of a formal: a box in its subscripts, or
/// a span of element offsets from its first element (a section passed on
/// to a formal of another shape).
#[derive(Clone, Debug, PartialEq, Eq)]
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
        _ if !b.holds(v) => b.clone(),
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
    /// Some integer other than this one: the region of the other arm of
    /// `IF (kArg .EQ. 0)`, taken apart from the arm for 0 by a checkpoint
    /// ([`crate::checkpoint`]) that saves one or the other at run time.
    Except(i64),
}

/// Known values of a procedure's formals, by position.
pub type KnownArgs = BTreeMap<u32, Known>;

/// Why a region is unknown.
type Why = String;

/// How deep regions are followed through calls.
const MAX_DEPTH: u32 = 12;

/// The region of formal `k` of unit `c` when it is called with the known
/// values `known`; `effects` are every unit's ([`crate::effects`]);
/// `memo` keeps the regions found in this run.
pub fn of_formal(
    program: &Program,
    effects: &ProgramEffects,
    memo: &RegionMemo,
    c: UnitId,
    k: u32,
    known: &KnownArgs,
) -> Result<FormalRegion, Why> {
    of_formal_at(program, effects, memo, c, k, known, 0).0
}

/// [`of_formal`] asked `depth` calls down, with the number of calls
/// below it that the answer followed.
fn of_formal_at(
    program: &Program,
    effects: &ProgramEffects,
    memo: &RegionMemo,
    c: UnitId,
    k: u32,
    known: &KnownArgs,
    depth: u32,
) -> (Result<FormalRegion, Why>, u32) {
    let query = (c, (k, known.clone()));
    if let Some(answer) = memo.formal(&query, depth) {
        return answer;
    }
    let answer = formal_region(program, effects, memo, c, k, known, depth);
    memo.keep_formal(query, &answer, depth);
    answer
}

fn formal_region(
    program: &Program,
    effects: &ProgramEffects,
    memo: &RegionMemo,
    c: UnitId,
    k: u32,
    known: &KnownArgs,
    depth: u32,
) -> (Result<FormalRegion, Why>, u32) {
    let unit = program.unit(c);
    let Some(f) = unit.args.get(k as usize).copied() else {
        return (Err(format!("`{}` has no argument {}", unit.name, k + 1)), 0);
    };
    let sym = unit.symbol(f);
    let shaped = sym.rank() > 0
        && !sym.attrs.pointer
        && !sym.attrs.allocatable
        && sym
            .dims
            .iter()
            .all(|d| matches!(d.kind, DimKind::Explicit | DimKind::AssumedSize));
    if !shaped {
        let why = format!(
            "`{}` takes `{}` as an array of no explicit shape",
            unit.name, sym.name
        );
        return (Err(why), 0);
    }
    if program.call_graph.recursive.get(c).copied().unwrap_or(true) {
        return (Err(format!("`{}` is recursive", unit.name)), 0);
    }
    if depth > MAX_DEPTH {
        return (Err("the calls nest too deeply".into()), 0);
    }
    let ctx = Ctx::new(program, unit, effects, memo, known.clone(), depth);
    let r = ctx.region_of(f).map(|mut r| {
        r.declared_bounds |= ctx.declared_bounds.get();
        r
    });
    (r, ctx.below.get())
}

/// A counted DO loop, as the bounds of what is inside it read it.
#[derive(Clone)]
struct Loop {
    /// The DO statement.
    stmt: StmtId,
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
    memo: &'a RegionMemo,
    /// How many calls below this one the regions asked of callees have
    /// followed so far ([`memo`]).
    below: std::cell::Cell<u32>,
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
    /// Whether a subscript was bounded by the declared dimension alone
    /// ([`FormalRegion::declared_bounds`]).
    declared_bounds: std::cell::Cell<bool>,
    /// Per statement: (statement list, index in it) from the body down.
    paths: BTreeMap<StmtId, Vec<(usize, usize)>>,
    /// Per statement: the statement whose block holds it.
    parents: BTreeMap<StmtId, StmtId>,
    /// The statements of IF arms the known values decide are taken,
    /// each with its IF: they run whenever the IF does.
    lifted: std::cell::RefCell<BTreeMap<StmtId, StmtId>>,
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
    pub(super) fn new(
        program: &'a Program,
        unit: &'a Unit,
        effects: &'a ProgramEffects,
        memo: &'a RegionMemo,
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
            memo,
            below: std::cell::Cell::new(0),
            known,
            single,
            depth,
            writes,
            defs: BTreeMap::new(),
            placed: Vec::new(),
            site: std::cell::Cell::new(None),
            declared_bounds: std::cell::Cell::new(false),
            paths: BTreeMap::new(),
            parents: BTreeMap::new(),
            lifted: Default::default(),
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
        for st in &unit.stmts {
            for b in st.kind.blocks() {
                for &child in b {
                    ctx.parents.insert(child, st.id);
                }
            }
        }
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

    /// The region a callee's answer gives, noting how deep it went.
    pub(super) fn followed(
        &self,
        (answer, below): (Result<FormalRegion, Why>, u32),
    ) -> Result<FormalRegion, Why> {
        self.below.set(self.below.get().max(below + 1));
        answer
    }

    /// Every statement the call can run, with its enclosing counted loops
    /// (outermost first): IF arms the known values rule out are left out.
    pub(super) fn walk(
        &self,
        ids: &[StmtId],
        loops: &mut Vec<Loop>,
        out: &mut Vec<(StmtId, Vec<Loop>)>,
    ) {
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
                        stmt: id,
                        var: *var,
                        start: (**start).clone(),
                        end: (**end).clone(),
                        step: step.as_deref().cloned(),
                        guards: Vec::new(),
                    });
                    self.walk(body, loops, out);
                    loops.pop();
                }
                StmtKind::If {
                    arms, else_body, ..
                } => {
                    let mut decided = false;
                    // Whether every arm so far is known not taken.
                    let mut none_before = true;
                    let certain = |body: &[StmtId]| {
                        let mut lifted = self.lifted.borrow_mut();
                        lifted.extend(body.iter().map(|&b| (b, id)));
                    };
                    for arm in arms {
                        match self.constant(&arm.cond, 0) {
                            Some(Known::Bool(false)) => {}
                            Some(Known::Bool(true)) => {
                                if none_before {
                                    certain(&arm.body);
                                }
                                self.walk(&arm.body, loops, out);
                                decided = true;
                                break;
                            }
                            _ => {
                                none_before = false;
                                let mut guarded = loops.clone();
                                guard(&arm.cond, &mut guarded);
                                self.walk(&arm.body, &mut guarded, out);
                            }
                        }
                    }
                    if let (false, Some(e)) = (decided, else_body) {
                        if none_before {
                            certain(e);
                        }
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

    /// The value of actual `e` of a call inside `loops`, as far as it is
    /// known: [`Ctx::constant`], or a loop index that stays positive.
    pub(super) fn at_call(&self, e: &Expr, loops: &[Loop]) -> Option<Known> {
        self.constant(e, 0).or_else(|| {
            let around = loops.iter().map(|l| (l.var, &l.start, l.step.as_ref()));
            positive_index(self.unit, e, around)
        })
    }

    /// Whether `v` is a leading dimension of an array formal of the unit.
    pub(super) fn is_extent(&self, v: SymbolId) -> bool {
        leading_dimension(self.unit, v)
    }

    /// The value of `e` when the known values decide it.
    pub(super) fn constant(&self, e: &Expr, depth: u32) -> Option<Known> {
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
            ExprKind::FunctionCall {
                name,
                target: CallTarget::Unit(callee),
                args,
            } if name == "lsame" && args.len() == 2 && is_lsame(self.program.unit(*callee)) => {
                // The reference BLAS's `LSAME(CA, CB)`: the two letters
                // are the same but for case.
                match (go(&args[0].value)?, go(&args[1].value)?) {
                    (Known::Str(a), Known::Str(b)) => {
                        let first = |s: &str| s.chars().next().map(|c| c.to_ascii_lowercase());
                        Some(Known::Bool(first(&a) == first(&b)))
                    }
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
    pub(super) fn region_of(&self, f: SymbolId) -> Result<FormalRegion, Why> {
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
        let pieces = self.pieces(&lower, &upper, &extents, |st, loops, decl, pieces| {
            self.touches_in_stmt(st, f, loops, decl, pieces)
        })?;
        Ok(assemble(pieces, lower, upper, extents))
    }

    /// What `touches` finds in each statement of the unit (with its
    /// loops, of an array declared with `lower`, `upper` and `extents`).
    fn pieces(
        &self,
        lower: &[Bound],
        upper: &[Option<Bound>],
        extents: &[Bound],
        mut touches: impl FnMut(&Stmt, &[Loop], &Declared, &mut Vec<Piece>) -> Result<(), Why>,
    ) -> Result<Vec<Piece>, Why> {
        let decl = Declared {
            lower,
            upper,
            extents,
        };
        let mut pieces: Vec<Piece> = Vec::new();
        for (id, loops) in &self.placed {
            self.site.set(Some(*id));
            touches(self.unit.stmt(*id), loops, &decl, &mut pieces)?;
        }
        Ok(pieces)
    }
}

/// Whether `u` has the interface of the reference BLAS's `LSAME`: a
/// logical function of two character arguments.
fn is_lsame(u: &Unit) -> bool {
    u.kind == UnitKind::Function
        && u.result
            .is_some_and(|r| u.symbol(r).ty.base == BaseType::Logical)
        && u.args.len() == 2
        && u.args
            .iter()
            .all(|&a| u.symbol(a).ty.base == BaseType::Character && u.symbol(a).rank() == 0)
}

/// The region the references `pieces` touch of an array with declared
/// lower bounds `lower`, upper bounds `upper` and leading extents
/// `extents`: their box when every piece is one, else the span of element
/// offsets they reach.
fn assemble(
    pieces: Vec<Piece>,
    lower: Vec<Bound>,
    upper: Vec<Option<Bound>>,
    extents: Vec<Bound>,
) -> FormalRegion {
    // The same reference made many times is one piece.
    let mut unique: Vec<Piece> = Vec::new();
    for p in pieces {
        if !unique.contains(&p) {
            unique.push(p);
        }
    }
    let pieces = unique;
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
        return FormalRegion {
            dims,
            extents,
            lower,
            cap,
            declared_bounds: false,
        };
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
    FormalRegion {
        dims: vec![DimRegion::Span(Interval {
            lo: add(max(vec![span.lo, Bound::Int(0)]), Bound::Int(1)),
            hi: add(cap.clone(), Bound::Int(1)),
        })],
        extents: Vec::new(),
        lower: vec![Bound::Int(1)],
        cap,
        declared_bounds: false,
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

pub(crate) fn var_expr(v: SymbolId, span: Span) -> Expr {
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
        of_formal(p, &effects, &RegionMemo::default(), u.id, k, &known)
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

    /// `b` rebuilt without its not-negative marks.
    fn stripped(b: &Bound) -> Bound {
        match b {
            Bound::NonNeg(x) => stripped(x),
            Bound::Int(_) | Bound::Formal(_) | Bound::Var(_) => b.clone(),
            Bound::Sum(v) => Bound::Sum(v.iter().map(stripped).collect()),
            Bound::Max(v) => Bound::Max(v.iter().map(stripped).collect()),
            Bound::Min(v) => Bound::Min(v.iter().map(stripped).collect()),
            Bound::Scale(c, x) => Bound::Scale(*c, Box::new(stripped(x))),
            Bound::Product(x, y) => Bound::Product(Box::new(stripped(x)), Box::new(stripped(y))),
            Bound::Quotient(x, y) => Bound::Quotient(Box::new(stripped(x)), Box::new(stripped(y))),
        }
    }

    #[test]
    fn like_terms_compare_as_their_unmarked_forms_do() {
        let f = |k| Bound::Formal(k);
        let n = |b: Bound| Bound::NonNeg(Box::new(b));
        let atoms = [
            Bound::Int(-2),
            Bound::Int(3),
            f(0),
            f(1),
            Bound::Var(SymbolId(4)),
            n(f(1)),
            n(n(f(0))),
        ];
        let mut all: Vec<Bound> = atoms.to_vec();
        for a in &atoms {
            for b in &atoms {
                all.push(Bound::Sum(vec![a.clone(), b.clone()]));
                all.push(Bound::Sum(vec![a.clone()]));
                all.push(Bound::Scale(2, Box::new(a.clone())));
                all.push(Bound::Product(Box::new(a.clone()), Box::new(b.clone())));
                all.push(Bound::Quotient(Box::new(a.clone()), Box::new(b.clone())));
                all.push(Bound::Max(vec![a.clone(), n(b.clone())]));
                all.push(Bound::Min(vec![n(a.clone()), b.clone()]));
            }
        }
        let mut equal = 0;
        for a in &all {
            for b in &all {
                let want = stripped(a).cmp(&stripped(b));
                assert_eq!(cmp_unmarked(a, b), want, "{a:?} against {b:?}");
                equal += usize::from(want == std::cmp::Ordering::Equal && a != b);
            }
        }
        // Bounds that differ only by their marks are like terms.
        assert!(equal > 0);
    }

    /// A chain of `n` procedures, each passing its array to the next; the
    /// last touches `x(1:m)`.
    fn chain(n: usize) -> String {
        let mut src = String::new();
        for k in 0..n {
            src += &format!(
                "subroutine c{k}(m, x)\n  integer :: m\n  real(8) :: x(*)\n  call c{}(m, x)\nend subroutine c{k}\n",
                k + 1
            );
        }
        src += &format!(
            "subroutine c{n}(m, x)\n  integer :: m, i\n  real(8) :: x(*)\n  do i = 1, m\n    x(i) = 2*x(i)\n  end do\nend subroutine c{n}\n"
        );
        src
    }

    #[test]
    fn a_remembered_region_is_the_one_asked_afresh_at_any_depth() {
        // c0 → … → c13: c0's region follows more calls than MAX_DEPTH
        // allows, c1's exactly as many. Asked first from c1 (and kept),
        // c1's region must not stand for c0's question, which meets the
        // limit one call further down; asked in the other order, c0's
        // refusal must not be kept for c1.
        let n = MAX_DEPTH as usize + 1;
        let p = program(&chain(n));
        let effects = crate::effects::all(&p);
        let unit = |name: &str| p.units.iter().find(|u| u.name == name).expect("unit").id;
        let ask = |memo: &RegionMemo, name: &str| {
            of_formal(&p, &effects, memo, unit(name), 1, &KnownArgs::new())
        };
        for order in [["c1", "c0"], ["c0", "c1"]] {
            let memo = RegionMemo::default();
            let answers: Vec<_> = order.iter().map(|u| (*u, ask(&memo, u))).collect();
            for (u, answer) in answers {
                let fresh = ask(&RegionMemo::default(), u);
                assert_eq!(answer, fresh, "{u} after {order:?}");
                match u {
                    "c0" => assert!(answer.is_err(), "c0 goes past the limit"),
                    _ => assert!(answer.is_ok(), "c1 is within it: {answer:?}"),
                }
            }
        }
    }

    const IDIOMS: &str = "
subroutine vsq(n, x, incx)
  integer :: n, incx, i, ix
  real(8) :: x(*)
  if (incx > 0) then
    ix = 1
  else
    ix = 1 - (n - 1)*incx
  end if
  do i = 1, n
    x(ix) = x(ix)*x(ix)
    ix = ix + incx
  end do
end subroutine vsq

subroutine vsq4(n, x)
  integer :: n, i, m, mp1
  real(8) :: x(*)
  m = mod(n, 4)
  if (m /= 0) then
    do i = 1, m
      x(i) = x(i)*x(i)
    end do
    if (n < 4) return
  end if
  mp1 = m + 1
  do i = mp1, n, 4
    x(i) = x(i)*x(i)
    x(i + 3) = x(i + 3)*x(i + 3)
  end do
end subroutine vsq4

subroutine blocks32(n, x)
  integer :: n, j, k, n32
  real(8) :: x(*)
  n32 = (n/32)*32
  do j = 1, n32, 32
    do k = j, j + 31
      x(k) = -x(k)
    end do
  end do
end subroutine blocks32

subroutine vstep(n, x, incx)
  integer :: n, incx, i, nincx
  real(8) :: x(*)
  nincx = n*incx
  do i = 1, nincx, incx
    x(i) = 2*x(i)
  end do
end subroutine vstep

subroutine carried(n, x)
  integer :: n, k, j
  real(8) :: x(*)
  k = 1
  do j = 1, n
    x(k) = x(k)*x(k)
    k = j + 5
  end do
end subroutine carried

subroutine skipped(n, x, incx)
  integer :: n, incx, i, ix
  real(8) :: x(*)
  ix = 1
  do i = 1, n
    x(ix) = 2*x(ix)
    if (x(ix) > 1) ix = ix + incx
  end do
end subroutine skipped
";

    fn positive(k: u32) -> KnownArgs {
        [(k, Known::Positive)].into_iter().collect()
    }

    #[test]
    fn a_counter_walks_a_progression_of_its_step() {
        let p = program(IDIOMS);
        // incx known positive (a leading dimension passed): ix is 1 +
        // (i - 1)*incx, the elements 1, 1 + incx, ..., 1 + (n - 1)*incx.
        let r = region(&p, "vsq", 1, positive(2)).expect("a region");
        for (n, incx) in [(5, 3), (1, 7), (40, 41)] {
            let f = [n, 0, incx];
            let (first, last, step) = r.dims[0].triplet();
            assert_eq!(
                (value(&first, &f), value(&last, &f), value(&step, &f)),
                (1, 1 + (n - 1) * incx, incx),
                "{n} {incx}"
            );
            assert_eq!(value(&r.cap, &f), (n - 1) * incx, "{n} {incx}");
        }
        // Of either sign: the hull still holds every element reached.
        let r = region(&p, "vsq", 1, KnownArgs::new()).expect("a region");
        for (n, incx) in [(5, -2), (5, 2), (3, -1)] {
            let f = [n, 0, incx];
            let reached = (0..n).map(|i| {
                let start = if incx > 0 { 1 } else { 1 - (n - 1) * incx };
                start + i * incx - 1
            });
            let top = reached.max().unwrap_or(0);
            assert!(value(&r.cap, &f) >= top, "{n} {incx}: {:?}", r.cap);
        }
    }

    #[test]
    fn an_unrolled_loop_with_a_mod_clean_up_ends_at_the_last_element() {
        let p = program(IDIOMS);
        let r = region(&p, "vsq4", 1, KnownArgs::new()).expect("a region");
        for n in 1..=13 {
            let (first, last, _) = r.dims[0].triplet();
            assert_eq!(value(&first, &[n]), 1, "{n}");
            assert_eq!(value(&last, &[n]), n, "{n}: {last:?}");
            assert_eq!(value(&r.cap, &[n]), n - 1, "{n}");
        }
    }

    #[test]
    fn blocks_of_a_constant_step_end_at_the_multiple_of_it() {
        let p = program(IDIOMS);
        let r = region(&p, "blocks32", 1, KnownArgs::new()).expect("a region");
        let (_, last, _) = r.dims[0].triplet();
        for n in [32, 33, 64, 95, 100] {
            assert_eq!(value(&last, &[n]), 32 * (n / 32), "{n}: {last:?}");
        }
    }

    #[test]
    fn a_loop_stepping_by_a_positive_increment_is_a_progression() {
        let p = program(IDIOMS);
        let r = region(&p, "vstep", 1, positive(2)).expect("a region");
        for (n, incx) in [(4, 3), (1, 5), (7, 1)] {
            let f = [n, 0, incx];
            assert_eq!(value(&r.cap, &f), (n - 1) * incx, "{n} {incx}");
            let (_, last, step) = r.dims[0].triplet();
            assert_eq!(
                (value(&last, &f), value(&step, &f)),
                (1 + (n - 1) * incx, incx)
            );
        }
    }

    #[test]
    fn a_definition_after_the_reference_reaches_it_around_the_loop() {
        let p = program(IDIOMS);
        let r = region(&p, "carried", 1, KnownArgs::new()).expect("a region");
        // x(1), then x(6), ..., x(n + 4): not x(1) alone.
        for n in [2, 5] {
            assert!(value(&r.cap, &[n]) >= n + 3, "{n}: {:?}", r.cap);
        }
    }

    #[test]
    fn a_counter_advanced_under_a_condition_is_named_with_its_statement() {
        let p = program(IDIOMS);
        let e = region(&p, "skipped", 1, positive(2)).expect_err("no region");
        assert!(
            e.contains("`ix` is a counter") && e.contains("`ix = ix + incx`"),
            "{e}"
        );
    }
}
