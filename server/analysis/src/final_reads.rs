//! Final reads: an element-wise refinement of TBR's whole-array rule
//! (paper 000 §5.1, which requires all of an array once any of its
//! elements is read by an adjoint) for the in-place updates of numerical
//! loop nests. In a triangular solve `b(i,j) = b(i,j) - b(k,j)*a(i,k)`
//! (i > k) the adjoint reads `b(k,j)`, and no later iteration writes that
//! element again: the value the reverse sweep finds there is the one the
//! forward sweep read, so the writes of the nest need not record `b`.
//!
//! Contract: for a counted DO loop `L` of a structured unit and an array
//! `x` (a plain variable: no pointer, target or EQUIVALENCE), when `L`
//! holds no procedure reference, no DO WHILE and no statement other than
//! assignments, IFs, SELECT CASEs, counted DOs, I/O that writes nothing
//! of `x` and CONTINUE, every statement inside `L` that writes `x` is an
//! assignment to one element `x(s1, …)`, and every statement inside `L`
//! whose adjoint requires `x` gets that requirement from element
//! references the caller lists ([`Pair`]'s reads), then a write `W` of
//! `x` inside `L` must record `x` for `L`'s own requirements only when
//! some required read `R` inside `L` may read, at an earlier point of
//! `L`'s execution (or in the same statement instance, before `W`
//! writes), the element a later instance of `W` overwrites. That is
//! decided by Fourier–Motzkin elimination (with integer tightening) on
//! the iteration vectors of `R` and `W`: the loops' affine bounds (MIN in
//! an upper bound, MAX in a lower one), the equality of the affine
//! subscripts, and the lexicographic order of the instances (by the sign
//! of each loop's constant step), one disjunct per loop level. IF
//! conditions are ignored (more instances than run: conservative); a
//! subscript or bound that is not affine in the loop indices and the
//! integer scalars `L` does not write constrains nothing. Requirements
//! made inside `L` still hold after it, and one that reaches `L` from
//! before it (or from an enclosing loop's earlier iterations) still
//! makes every write record ([`crate::tbr`] keeps them apart). The loops
//! tried for an array are the outermost ones for which the test proves
//! something; the store-all mode does not use this.

use dfort_ir::bitset::BitSet;
use dfort_ir::dp::{constant_int, writes};
use dfort_ir::*;
use std::collections::{BTreeMap, BTreeSet};

/// One array whose requirements made inside one loop need not be recorded
/// by that loop's writes, except those in `recording`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pair {
    /// The DO statement of the loop.
    pub lp: StmtId,
    pub var: SymbolId,
    /// Every statement inside the loop (its DO statement excluded).
    pub inside: BTreeSet<StmtId>,
    /// The writes of `var` inside the loop that may overwrite an element
    /// a required read inside it read before: they still record `var`.
    pub recording: BTreeSet<StmtId>,
}

/// The references of `var` whose values the adjoint of statement `stmt`
/// reads, or `None` when its requirement of `var` comes from something
/// else (a call, a whole-array reference).
pub type Reads<'a> = dyn Fn(StmtId, SymbolId) -> Option<Vec<Expr>> + 'a;

/// The pairs of `unit` given each statement's requirement `required`
/// (TBR's Req, what a statement requires of the values before it) and
/// the references behind it (`reads`). Empty for a unit with jumps.
pub fn analyze(
    program: &Program,
    unit: &Unit,
    required: &IdVec<StmtId, BitSet>,
    reads: &Reads,
) -> Vec<Pair> {
    let mut out = Vec::new();
    if !unit.cfg.structured {
        return out;
    }
    let mut todo = Vec::new();
    top_loops(unit, &unit.body, &mut todo);
    while let Some((lp, arrays)) = todo.pop() {
        let Some(nest) = Nest::of(program, unit, lp) else {
            continue;
        };
        let candidates: Vec<SymbolId> = match &arrays {
            Some(a) => a.clone(),
            None => nest.candidates(unit, required),
        };
        let mut unproved = Vec::new();
        for x in candidates {
            match nest.pair(unit, required, reads, x) {
                Some(p) if p.recording.len() < nest.writes_of(x) => out.push(p),
                // Every write records anyway: an inner loop may still
                // prove something.
                _ => unproved.push(x),
            }
        }
        if !unproved.is_empty() {
            let mut inner = Vec::new();
            top_loops(unit, nest.body(unit), &mut inner);
            for (l, _) in inner {
                todo.push((l, Some(unproved.clone())));
            }
        }
    }
    out.sort_by_key(|p| (p.lp, p.var));
    out
}

/// Per innermost counted DO loop of a structured unit: the references
/// `x(s1, …)` of an array whose subscripts the loop does not change and
/// that no other reference to `x` inside the loop (read or written) may
/// name, unless it is written the same way — the same element on every
/// iteration and no other. The reverse sweep may sum the increments of
/// such an element's adjoint (`bb(k, j)` in a triangular solve's update
/// of `b(i, j)`, i > k) in registers and add the sum once after the
/// reversed loop. Decided by the same test as the final reads, without
/// an order between the instances.
pub fn accumulated_elements(program: &Program, unit: &Unit) -> BTreeMap<StmtId, Vec<Expr>> {
    let mut out = BTreeMap::new();
    if !unit.cfg.structured {
        return out;
    }
    for st in &unit.stmts {
        let StmtKind::Do {
            control: DoControl::Counted { .. },
            body,
            ..
        } = &st.kind
        else {
            continue;
        };
        if unit.cfg.stmt_node.get(st.id).copied().flatten().is_none() || has_loop(unit, body) {
            continue;
        }
        let Some(nest) = Nest::of(program, unit, st.id) else {
            continue;
        };
        let found = nest.invariant_elements(unit);
        if !found.is_empty() {
            out.insert(st.id, found);
        }
    }
    out
}

/// Whether statement `outer` is `inner` or holds it, at any depth.
fn holds(unit: &Unit, outer: StmtId, inner: StmtId) -> bool {
    let mut all = Vec::new();
    dfort_ir::queries::nested_statements(unit, &[outer], &mut all);
    all.contains(&inner)
}

/// Whether `list` holds a DO loop, at any depth.
fn has_loop(unit: &Unit, list: &[StmtId]) -> bool {
    let mut all = Vec::new();
    dfort_ir::queries::nested_statements(unit, list, &mut all);
    all.iter()
        .any(|&id| matches!(unit.stmt(id).kind, StmtKind::Do { .. }))
}

/// Whether two expressions are written the same way (spans aside).
fn same_expr(a: &Expr, b: &Expr) -> bool {
    match (&a.kind, &b.kind) {
        (ExprKind::Int(x), ExprKind::Int(y)) => x == y,
        (ExprKind::Var(x), ExprKind::Var(y)) => x == y,
        (ExprKind::ArrayRef { array: x, subs: s }, ExprKind::ArrayRef { array: y, subs: t }) => {
            x == y
                && s.len() == t.len()
                && s.iter().zip(t).all(|(p, q)| match (p, q) {
                    (Subscript::Index(p), Subscript::Index(q)) => same_expr(p, q),
                    _ => false,
                })
        }
        (ExprKind::Unary { op: o1, operand: x }, ExprKind::Unary { op: o2, operand: y }) => {
            o1 == o2 && same_expr(x, y)
        }
        (
            ExprKind::Binary {
                op: o1,
                lhs: l1,
                rhs: r1,
            },
            ExprKind::Binary {
                op: o2,
                lhs: l2,
                rhs: r2,
            },
        ) => o1 == o2 && same_expr(l1, l2) && same_expr(r1, r2),
        _ => false,
    }
}

/// The counted DO loops of `list` not inside another DO loop of it.
fn top_loops(unit: &Unit, list: &[StmtId], out: &mut Vec<(StmtId, Option<Vec<SymbolId>>)>) {
    for &id in list {
        match &unit.stmt(id).kind {
            StmtKind::Do {
                control: DoControl::Counted { .. },
                ..
            } => out.push((id, None)),
            k @ (StmtKind::If { .. } | StmtKind::SelectCase { .. }) => {
                for b in k.blocks() {
                    top_loops(unit, b, out);
                }
            }
            _ => {}
        }
    }
}

/// A variable of the affine forms: a loop's index (the loop's number in
/// [`Nest::levels`]) or an integer scalar the nest does not write.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Var {
    Level(usize),
    Invariant(SymbolId),
}

/// `Σ coefficient·variable + constant`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Lin {
    terms: BTreeMap<Var, i64>,
    constant: i64,
}

impl Lin {
    fn constant(c: i64) -> Lin {
        Lin {
            terms: BTreeMap::new(),
            constant: c,
        }
    }

    fn var(v: Var) -> Lin {
        Lin {
            terms: BTreeMap::from([(v, 1)]),
            constant: 0,
        }
    }

    fn add(mut self, other: &Lin, sign: i64) -> Option<Lin> {
        for (v, c) in &other.terms {
            let e = self.terms.entry(*v).or_insert(0);
            *e = e.checked_add(c.checked_mul(sign)?)?;
        }
        self.terms.retain(|_, c| *c != 0);
        self.constant = self
            .constant
            .checked_add(other.constant.checked_mul(sign)?)?;
        Some(self)
    }

    fn scale(mut self, k: i64) -> Option<Lin> {
        for c in self.terms.values_mut() {
            *c = c.checked_mul(k)?;
        }
        self.terms.retain(|_, c| *c != 0);
        self.constant = self.constant.checked_mul(k)?;
        Some(self)
    }

    fn as_constant(&self) -> Option<i64> {
        self.terms.is_empty().then_some(self.constant)
    }
}

/// One counted DO loop of the nest.
struct Level {
    var: SymbolId,
    /// +1 or -1: the direction its index runs in.
    sign: i64,
    /// Affine lower and upper bounds of its index (in the enclosing
    /// levels and the invariants); several are all true at once.
    lower: Vec<Lin>,
    upper: Vec<Lin>,
}

/// A statement inside the nest: its place in textual order and the
/// levels enclosing it, outermost first (the nest's loop is level 0).
#[derive(Clone)]
struct Place {
    order: usize,
    levels: Vec<usize>,
    /// Inside a loop that is not counted with a constant step.
    unordered: bool,
}

/// An element reference of the array: its statement's place and its
/// subscripts (`None` where not affine).
struct Site {
    stmt: StmtId,
    subs: Vec<Option<Lin>>,
}

struct Nest {
    lp: StmtId,
    levels: Vec<Level>,
    places: BTreeMap<StmtId, Place>,
    /// What each statement inside writes.
    written: BTreeMap<StmtId, Vec<(SymbolId, bool)>>,
    invariant: BitSet,
}

impl Nest {
    /// The loop `lp` as a nest, or `None` when it holds what the test
    /// does not model (a procedure reference, a DO WHILE, jumps, …).
    fn of(program: &Program, unit: &Unit, lp: StmtId) -> Option<Nest> {
        let mut nest = Nest {
            lp,
            levels: Vec::new(),
            places: BTreeMap::new(),
            written: BTreeMap::new(),
            invariant: BitSet::default(),
        };
        let mut order = 0;
        nest.walk(program, unit, &[lp], &[], false, &mut order)?;
        let mut changed = BitSet::default();
        for w in nest.written.values() {
            for (s, _) in w {
                changed.insert_id(*s);
            }
        }
        for l in &nest.levels {
            changed.insert_id(l.var);
        }
        for class in &unit.aliases {
            for s in class {
                changed.insert_id(*s);
            }
        }
        for (id, sym) in unit.symbols.iter_enumerated() {
            if sym.dims.is_empty() && !changed.contains_id(id) && !sym.attrs.pointer {
                nest.invariant.insert_id(id);
            }
        }
        // Bounds read once the invariants are known.
        let mut stack: Vec<usize> = Vec::new();
        nest.bounds(unit, &[lp], &mut stack);
        Some(nest)
    }

    fn body<'u>(&self, unit: &'u Unit) -> &'u [StmtId] {
        match &unit.stmt(self.lp).kind {
            StmtKind::Do { body, .. } => body,
            _ => &[],
        }
    }

    /// Places every statement of `list` (levels `enclosing`).
    fn walk(
        &mut self,
        program: &Program,
        unit: &Unit,
        list: &[StmtId],
        enclosing: &[usize],
        unordered: bool,
        order: &mut usize,
    ) -> Option<()> {
        for &id in list {
            let st = unit.stmt(id);
            let mut calls = false;
            for e in st.kind.exprs() {
                e.walk(&mut |x| {
                    calls |= matches!(
                        x.kind,
                        ExprKind::FunctionCall { .. } | ExprKind::Apply { .. }
                    )
                });
            }
            if calls {
                return None;
            }
            if id != self.lp {
                self.places.insert(
                    id,
                    Place {
                        order: *order,
                        levels: enclosing.to_vec(),
                        unordered,
                    },
                );
                self.written.insert(id, writes(program, unit, st));
            }
            *order += 1;
            match &st.kind {
                StmtKind::Assign { .. }
                | StmtKind::Continue
                | StmtKind::Io { .. }
                | StmtKind::Stop => {}
                k @ (StmtKind::If { .. } | StmtKind::SelectCase { .. }) => {
                    for b in k.blocks() {
                        self.walk(program, unit, b, enclosing, unordered, order)?;
                    }
                }
                StmtKind::Do {
                    control: DoControl::Counted { var, step, .. },
                    body,
                    ..
                } => {
                    let sign = match step {
                        None => Some(1),
                        Some(s) => constant_int(unit, s, 0)
                            .filter(|v| *v != 0)
                            .map(i64::signum),
                    };
                    let (inner, unordered) = match sign {
                        Some(sign) => {
                            self.levels.push(Level {
                                var: *var,
                                sign,
                                lower: Vec::new(),
                                upper: Vec::new(),
                            });
                            let mut inner = enclosing.to_vec();
                            inner.push(self.levels.len() - 1);
                            (inner, unordered)
                        }
                        None if id == self.lp => return None,
                        None => (enclosing.to_vec(), true),
                    };
                    self.walk(program, unit, body, &inner, unordered, order)?;
                }
                _ => return None,
            }
        }
        Some(())
    }

    /// Fills in the levels' bounds, in the order [`Nest::walk`] made them.
    fn bounds(&mut self, unit: &Unit, list: &[StmtId], stack: &mut Vec<usize>) {
        for &id in list {
            match &unit.stmt(id).kind {
                k @ (StmtKind::If { .. } | StmtKind::SelectCase { .. }) => {
                    for b in k.blocks() {
                        self.bounds(unit, b, stack);
                    }
                }
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
                    let level = self
                        .levels
                        .iter()
                        .enumerate()
                        .skip(stack.last().map_or(0, |l| l + 1))
                        .find(|(_, l)| l.var == *var)
                        .map(|(k, _)| k);
                    let signed = step
                        .as_ref()
                        .is_none_or(|s| constant_int(unit, s, 0).is_some_and(|v| v != 0));
                    match level {
                        Some(k) if signed => {
                            let (lo, hi) = if self.levels[k].sign > 0 {
                                (start, end)
                            } else {
                                (end, start)
                            };
                            let lower = self.extremes(unit, lo, stack, false);
                            let upper = self.extremes(unit, hi, stack, true);
                            self.levels[k].lower = lower;
                            self.levels[k].upper = upper;
                            stack.push(k);
                            self.bounds(unit, body, stack);
                            stack.pop();
                        }
                        _ => self.bounds(unit, body, stack),
                    }
                }
                _ => {}
            }
        }
    }

    /// The affine bounds `e` gives: itself, or each argument of a MIN
    /// (upper) or MAX (lower).
    fn extremes(&self, unit: &Unit, e: &Expr, levels: &[usize], upper: bool) -> Vec<Lin> {
        if let ExprKind::Intrinsic { name, args } = &e.kind {
            if (upper && name == "min") || (!upper && name == "max") {
                return args
                    .iter()
                    .flat_map(|a| self.extremes(unit, &a.value, levels, upper))
                    .collect();
            }
        }
        self.lin(unit, e, levels).into_iter().collect()
    }

    /// `e` as an affine form in the indices of `levels` and the
    /// invariants.
    fn lin(&self, unit: &Unit, e: &Expr, levels: &[usize]) -> Option<Lin> {
        if let Some(c) = constant_int(unit, e, 0) {
            return Some(Lin::constant(c));
        }
        match &e.kind {
            ExprKind::Var(s) => {
                if let Some(&k) = levels.iter().rev().find(|k| self.levels[**k].var == *s) {
                    Some(Lin::var(Var::Level(k)))
                } else if self.invariant.contains_id(*s) {
                    Some(Lin::var(Var::Invariant(*s)))
                } else {
                    None
                }
            }
            ExprKind::Unary { op, operand } => {
                let v = self.lin(unit, operand, levels)?;
                match op {
                    UnaryOp::Neg => v.scale(-1),
                    UnaryOp::Plus => Some(v),
                    UnaryOp::Not => None,
                }
            }
            ExprKind::Binary { op, lhs, rhs } => {
                let a = self.lin(unit, lhs, levels)?;
                let b = self.lin(unit, rhs, levels)?;
                match op {
                    BinaryOp::Add => a.add(&b, 1),
                    BinaryOp::Sub => a.add(&b, -1),
                    BinaryOp::Mul => match (a.as_constant(), b.as_constant()) {
                        (Some(k), _) => b.scale(k),
                        (_, Some(k)) => a.scale(k),
                        _ => None,
                    },
                    _ => None,
                }
            }
            _ => None,
        }
    }

    /// The arrays written inside the nest by element assignments that a
    /// statement inside it requires.
    fn candidates(&self, unit: &Unit, required: &IdVec<StmtId, BitSet>) -> Vec<SymbolId> {
        let mut written = BTreeSet::new();
        for w in self.written.values() {
            for (s, whole) in w {
                let sym = unit.symbol(*s);
                if !whole && !sym.dims.is_empty() && !sym.attrs.pointer && !sym.attrs.target {
                    written.insert(*s);
                }
            }
        }
        written
            .into_iter()
            .filter(|x| {
                !unit.aliases.iter().any(|c| c.contains(x))
                    && self
                        .places
                        .keys()
                        .any(|s| required.get(*s).is_some_and(|r| r.contains_id(*x)))
            })
            .collect()
    }

    fn writes_of(&self, x: SymbolId) -> usize {
        self.written
            .values()
            .filter(|w| w.iter().any(|(s, _)| *s == x))
            .count()
    }

    /// The test for array `x`, or `None` when the nest's references to
    /// it are not all modelled.
    fn pair(
        &self,
        unit: &Unit,
        required: &IdVec<StmtId, BitSet>,
        reads: &Reads,
        x: SymbolId,
    ) -> Option<Pair> {
        let mut writes_x = Vec::new();
        let mut reads_x = Vec::new();
        for (&id, place) in &self.places {
            let st = unit.stmt(id);
            let writes = self
                .written
                .get(&id)
                .is_some_and(|w| w.iter().any(|(s, _)| *s == x));
            if writes {
                let StmtKind::Assign { lhs, .. } = &st.kind else {
                    return None;
                };
                if place.unordered {
                    return None;
                }
                writes_x.push(self.site(unit, id, lhs, x)?);
            }
            if required.get(id).is_some_and(|r| r.contains_id(x)) {
                if place.unordered {
                    return None;
                }
                for e in reads(id, x)? {
                    reads_x.push(self.site(unit, id, &e, x)?);
                }
            }
        }
        let mut recording = BTreeSet::new();
        for w in &writes_x {
            if recording.contains(&w.stmt) {
                continue;
            }
            let conflicts: Vec<&Site> = reads_x.iter().filter(|r| self.conflict(r, w)).collect();
            if conflicts.is_empty() {
                continue;
            }
            // A write the reads' values are always overwritten by first
            // (that one records them) need not record.
            let killed = writes_x
                .iter()
                .any(|w0| self.overwritten_first(unit, w0, w, &conflicts));
            if !killed {
                recording.insert(w.stmt);
            }
        }
        Some(Pair {
            lp: self.lp,
            var: x,
            inside: self.places.keys().copied().collect(),
            recording,
        })
    }

    /// Whether every instance of `w` that may overwrite what an instance
    /// of one of `reads` read is preceded, after that read, by an
    /// instance of `w0` writing the same element (then only `w0`'s
    /// record gives the reverse sweep that value back): `w0` is written
    /// the same way as `w`, with subscripts in the indices of its own
    /// loops only, it sits unconditionally in the body of a loop `C` of
    /// the nest that holds `w` further down, and each read inside `C`
    /// is before `w0` or after `w` in `C`'s body (in one iteration of
    /// `C`, a read between them would see the value `w` overwrites; a
    /// read outside `C` runs before or after a whole run of `C`).
    fn overwritten_first(&self, unit: &Unit, w0: &Site, w: &Site, reads: &[&Site]) -> bool {
        if w0.stmt == w.stmt {
            return false;
        }
        let (Some(p0), Some(pw)) = (self.places.get(&w0.stmt), self.places.get(&w.stmt)) else {
            return false;
        };
        let (StmtKind::Assign { lhs: l0, .. }, StmtKind::Assign { lhs, .. }) =
            (&unit.stmt(w0.stmt).kind, &unit.stmt(w.stmt).kind)
        else {
            return false;
        };
        let own_indices = w0.subs.iter().all(|s| {
            s.as_ref().is_some_and(|l| {
                l.terms.keys().all(|v| match v {
                    Var::Level(k) => p0.levels.contains(k),
                    Var::Invariant(_) => true,
                })
            })
        });
        if !same_expr(l0, lhs) || !own_indices || !pw.levels.starts_with(&p0.levels) {
            return false;
        }
        // The loop whose body holds `w0` itself.
        let Some(body) = std::iter::once(self.lp)
            .chain(self.places.keys().copied())
            .find_map(|d| match &unit.stmt(d).kind {
                StmtKind::Do { body, .. } if body.contains(&w0.stmt) => Some(body),
                _ => None,
            })
        else {
            return false;
        };
        let at = |s: StmtId| body.iter().position(|&t| holds(unit, t, s));
        let (Some(k0), Some(kw)) = (at(w0.stmt), at(w.stmt)) else {
            return false;
        };
        k0 < kw
            && reads.iter().all(|r| match at(r.stmt) {
                Some(kr) => kr < k0 || kr > kw,
                None => true,
            })
    }

    /// The reference `e` of `x` in statement `id` as a site.
    fn site(&self, unit: &Unit, id: StmtId, e: &Expr, x: SymbolId) -> Option<Site> {
        let ExprKind::ArrayRef { array, subs } = &e.kind else {
            return None;
        };
        if *array != x {
            return None;
        }
        let levels = &self.places.get(&id)?.levels;
        let subs = subs
            .iter()
            .map(|s| match s {
                Subscript::Index(i) => Some(self.lin(unit, i, levels)),
                Subscript::Range { .. } => None,
            })
            .collect::<Option<Vec<_>>>()?;
        Some(Site { stmt: id, subs })
    }

    /// The references of [`accumulated_elements`] in this nest (one
    /// loop, no inner loop).
    fn invariant_elements(&self, unit: &Unit) -> Vec<Expr> {
        // Every reference of every array, by statement.
        let mut refs: BTreeMap<SymbolId, Vec<(StmtId, &Expr)>> = BTreeMap::new();
        let mut whole = BitSet::default();
        for &id in self.places.keys() {
            for e in unit.stmt(id).kind.exprs() {
                e.walk(&mut |x| match &x.kind {
                    ExprKind::ArrayRef { array, .. } => {
                        refs.entry(*array).or_default().push((id, x));
                    }
                    ExprKind::Var(s) => {
                        whole.insert_id(*s);
                    }
                    _ => {}
                });
            }
        }
        let mut out: Vec<Expr> = Vec::new();
        for (x, list) in &refs {
            let sym = unit.symbol(*x);
            if whole.contains_id(*x)
                || sym.attrs.pointer
                || sym.attrs.target
                || unit.aliases.iter().any(|c| c.contains(x))
            {
                continue;
            }
            let sites: Vec<Option<Site>> = list
                .iter()
                .map(|(id, e)| self.site(unit, *id, e, *x))
                .collect();
            for (k, (_, e)) in list.iter().enumerate() {
                let Some(r) = &sites[k] else {
                    continue;
                };
                let invariant = r.subs.iter().all(|s| {
                    s.as_ref()
                        .is_some_and(|l| l.terms.keys().all(|v| matches!(v, Var::Invariant(_))))
                });
                if !invariant || out.iter().any(|o| same_expr(o, e)) {
                    continue;
                }
                let alone = list.iter().zip(&sites).all(|((_, other), site)| {
                    if same_expr(e, other) {
                        return true;
                    }
                    let Some(w) = site else {
                        return false;
                    };
                    self.system(r, w)
                        .is_some_and(|s| !feasible(s.rows, s.width))
                });
                if alone {
                    out.push((*e).clone());
                }
            }
        }
        out
    }

    /// Whether a later instance of write `w` (or the same instance, when
    /// `w` is not textually before `r`) may write the element an instance
    /// of read `r` read.
    fn conflict(&self, r: &Site, w: &Site) -> bool {
        let Some(s) = self.system(r, w) else {
            return true;
        };
        let unit_row = |col: usize, k: i64, other: usize, c: i64| {
            let mut a = vec![0i64; s.width];
            a[col] = k;
            a[other] = -k;
            Row { a, c }
        };
        for t in 0..=s.common {
            if t == s.common && s.w_order < s.r_order {
                continue;
            }
            let mut system = s.rows.clone();
            for l in 0..t {
                // p_l = q_l
                system.push(unit_row(s.nr + l, 1, l, 0));
                system.push(unit_row(s.nr + l, -1, l, 0));
            }
            if t < s.common {
                // The write's index at level t runs later: sign·(q - p) ≥ 1.
                system.push(unit_row(s.nr + t, s.signs[t], t, -1));
            }
            if feasible(system, s.width) {
                return true;
            }
        }
        false
    }

    /// The instances of sites `r` and `w` naming the same element, as
    /// inequalities over `r`'s indices, `w`'s, then the invariants
    /// (without any order between the two). `None`: overflow.
    fn system(&self, r: &Site, w: &Site) -> Option<Pairing> {
        let (pr, pw) = (self.places.get(&r.stmt)?, self.places.get(&w.stmt)?);
        let common = pr
            .levels
            .iter()
            .zip(&pw.levels)
            .take_while(|(a, b)| a == b)
            .count();
        let (nr, nw) = (pr.levels.len(), pw.levels.len());
        let mut forms: Vec<&Lin> = Vec::new();
        let mut bounds: Vec<(Lin, &[usize], usize)> = Vec::new();
        for (place, offset) in [(pr, 0), (pw, nr)] {
            for &k in &place.levels {
                let level = &self.levels[k];
                let index = Lin::var(Var::Level(k));
                for lo in &level.lower {
                    bounds.extend(
                        index
                            .clone()
                            .add(lo, -1)
                            .map(|l| (l, &place.levels[..], offset)),
                    );
                }
                for hi in &level.upper {
                    bounds.extend(
                        hi.clone()
                            .add(&index, -1)
                            .map(|l| (l, &place.levels[..], offset)),
                    );
                }
            }
        }
        let mut equal: Vec<(&Lin, &Lin)> = Vec::new();
        for (a, b) in r.subs.iter().zip(&w.subs) {
            if let (Some(a), Some(b)) = (a, b) {
                equal.push((a, b));
                forms.extend([a, b]);
            }
        }
        let mut invariants: BTreeMap<SymbolId, usize> = BTreeMap::new();
        for lin in forms.into_iter().chain(bounds.iter().map(|b| &b.0)) {
            for v in lin.terms.keys() {
                if let Var::Invariant(s) = v {
                    let next = nr + nw + invariants.len();
                    invariants.entry(*s).or_insert(next);
                }
            }
        }
        let width = nr + nw + invariants.len();
        let row = |lin: &Lin, levels: &[usize], offset: usize| -> Option<Row> {
            let mut a = vec![0i64; width];
            for (v, c) in &lin.terms {
                let col = match v {
                    Var::Level(k) => offset + levels.iter().position(|l| l == k)?,
                    Var::Invariant(s) => *invariants.get(s)?,
                };
                a[col] = a[col].checked_add(*c)?;
            }
            Some(Row { a, c: lin.constant })
        };
        let mut rows: Vec<Row> = bounds
            .iter()
            .filter_map(|(l, levels, offset)| row(l, levels, *offset))
            .collect();
        for (a, b) in equal {
            let (Some(ra), Some(rb)) = (row(a, &pr.levels, 0), row(b, &pw.levels, nr)) else {
                continue;
            };
            let d = ra.minus(&rb)?;
            rows.push(d.negated());
            rows.push(d);
        }
        Some(Pairing {
            rows,
            width,
            nr,
            common,
            signs: pr.levels[..common]
                .iter()
                .map(|k| self.levels[*k].sign)
                .collect(),
            r_order: pr.order,
            w_order: pw.order,
        })
    }
}

/// Two sites' instances naming one element ([`Nest::system`]).
struct Pairing {
    rows: Vec<Row>,
    width: usize,
    /// How many of the unknowns are the first site's indices.
    nr: usize,
    /// How many loops the two sites share, and their directions.
    common: usize,
    signs: Vec<i64>,
    r_order: usize,
    w_order: usize,
}

/// `a·x + c ≥ 0`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Row {
    a: Vec<i64>,
    c: i64,
}

impl Row {
    fn minus(&self, other: &Row) -> Option<Row> {
        let a = self
            .a
            .iter()
            .zip(&other.a)
            .map(|(x, y)| x.checked_sub(*y))
            .collect::<Option<Vec<_>>>()?;
        Some(Row {
            a,
            c: self.c.checked_sub(other.c)?,
        })
    }

    fn negated(&self) -> Row {
        Row {
            a: self.a.iter().map(|x| -x).collect(),
            c: -self.c,
        }
    }

    /// Divided by the coefficients' gcd, the constant rounded down (no
    /// integer solution is lost). `None`: no coefficient left.
    fn normalized(mut self) -> Option<Row> {
        let g = self.a.iter().fold(0i64, |g, x| gcd(g, x.abs()));
        if g == 0 {
            return None;
        }
        if g > 1 {
            for x in &mut self.a {
                *x /= g;
            }
            self.c = self.c.div_euclid(g);
        }
        Some(self)
    }
}

fn gcd(a: i64, b: i64) -> i64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// More inequalities than this after an elimination step: assume the
/// system has a solution (a conflict, so the write records).
const ROW_CAP: usize = 400;

/// Whether the inequalities may have an integer solution: Fourier–Motzkin
/// elimination over the rationals, each row tightened to integers.
/// `false` only when there is none; overflow or size give `true`.
fn feasible(rows: Vec<Row>, width: usize) -> bool {
    let mut rows: BTreeSet<Row> = rows.into_iter().collect();
    loop {
        let mut kept = BTreeSet::new();
        for r in rows {
            let c = r.c;
            match r.normalized() {
                Some(r) => {
                    kept.insert(r);
                }
                None if c < 0 => return false,
                None => {}
            }
        }
        rows = kept;
        // The unknown whose elimination makes the fewest rows.
        let best = (0..width)
            .map(|v| {
                let pos = rows.iter().filter(|r| r.a[v] > 0).count();
                let neg = rows.iter().filter(|r| r.a[v] < 0).count();
                (v, pos, neg)
            })
            .filter(|(_, p, n)| p + n > 0)
            .min_by_key(|(_, p, n)| p * n);
        let Some((v, _, _)) = best else {
            return true;
        };
        let (with, without): (Vec<Row>, Vec<Row>) = rows.into_iter().partition(|r| r.a[v] != 0);
        let mut next: BTreeSet<Row> = without.into_iter().collect();
        for p in with.iter().filter(|r| r.a[v] > 0) {
            for n in with.iter().filter(|r| r.a[v] < 0) {
                let (kp, kn) = (-n.a[v], p.a[v]);
                let combined = (|| {
                    let a =
                        p.a.iter()
                            .zip(&n.a)
                            .map(|(x, y)| x.checked_mul(kp)?.checked_add(y.checked_mul(kn)?))
                            .collect::<Option<Vec<_>>>()?;
                    let c = p.c.checked_mul(kp)?.checked_add(n.c.checked_mul(kn)?)?;
                    Some(Row { a, c })
                })();
                match combined {
                    Some(r) => {
                        next.insert(r);
                    }
                    None => return true,
                }
            }
        }
        if next.len() > ROW_CAP {
            return true;
        }
        rows = next;
    }
}

#[cfg(test)]
mod tests {
    use crate::test_support::{program, request};

    /// The variables `solve`'s TBR records, by name, in statement order.
    fn records(src: &str) -> Vec<String> {
        let p = program(src);
        let facts = crate::facts::analyse(&p, &request("solve", &["a", "b"], &["b"]), None);
        let u = p.units.iter().find(|u| u.name == "solve").unwrap();
        facts
            .tbr_of(u.id)
            .unwrap()
            .records
            .iter()
            .map(|r| u.symbol(r.variable).name.clone())
            .collect()
    }

    /// Forward substitution in place: `b(k)` is final once step k reads it.
    const FORWARD: &str = "subroutine solve(n, a, b)
  integer :: n, i, k
  real(8) :: a(n, n), b(n)
  do k = 1, n
    b(k) = b(k) / a(k, k)
    do i = k + 1, n
      b(i) = b(i) - b(k) * a(i, k)
    end do
  end do
end subroutine
";

    #[test]
    fn a_triangular_solve_records_only_the_divisions() {
        // The division's own adjoint reads the old `b(k)`: one record per
        // step; the update reads only final values.
        assert_eq!(records(FORWARD), ["b"]);
        let unit_diagonal = FORWARD.replace("    b(k) = b(k) / a(k, k)\n", "");
        assert_eq!(records(&unit_diagonal), Vec::<String>::new());
        // Backward substitution, the loop running down.
        let backward = unit_diagonal
            .replace("do k = 1, n", "do k = n, 1, -1")
            .replace("do i = k + 1, n", "do i = 1, k - 1");
        assert_eq!(records(&backward), Vec::<String>::new());
        // Two columns of right-hand sides, the column loop outside.
        let columns = "subroutine solve(n, m, a, b)
  integer :: n, m, i, j, k
  real(8) :: a(n, n), b(n, m)
  do j = 1, m
    do k = 1, n
      if (b(k, j) /= 0) then
        do i = k + 1, min(n, k + 8)
          b(i, j) = b(i, j) - b(k, j) * a(i, k)
        end do
      end if
    end do
  end do
end subroutine
";
        assert_eq!(records(columns), Vec::<String>::new());
    }

    #[test]
    fn a_read_of_an_element_written_later_still_records() {
        let unit_diagonal = FORWARD.replace("    b(k) = b(k) / a(k, k)\n", "");
        // `b(k + 1)` is overwritten by the same step's update, at i = k + 1.
        let later = unit_diagonal.replace("b(i) - b(k) * a(i, k)", "b(i) - b(k + 1) * a(i, k)");
        assert_eq!(records(&later), ["b"]);
        // The loop running the other way: later steps overwrite `b(k)`.
        let wrong_way = unit_diagonal.replace("do i = k + 1, n", "do i = 1, k - 1");
        assert_eq!(records(&wrong_way), ["b"]);
        // A subscript the test cannot read (a counter) constrains nothing.
        let counter = "subroutine solve(n, a, b)
  integer :: n, i, k, ix
  real(8) :: a(n, n), b(n)
  ix = 0
  do k = 1, n
    ix = ix + 1
    do i = k + 1, n
      b(i) = b(i) - b(ix) * a(i, k)
    end do
  end do
end subroutine
";
        assert_eq!(records(counter), ["b"]);
        // A value required before the loop (by `a(1, 1)*b(2)`, which
        // records the `a` it overwrites): every write of `b` records it.
        let before = unit_diagonal.replace(
            "  do k = 1, n\n",
            "  a(1, 1) = a(1, 1) * b(2)\n  do k = 1, n\n",
        );
        assert_eq!(records(&before), ["a", "b"]);
        // Required after the loop by a product: the loop's writes need not
        // record it, the one after does.
        let after = unit_diagonal.replace("end subroutine", "  b(1) = b(1) * b(2)\nend subroutine");
        assert_eq!(records(&after), ["b"]);
    }

    #[test]
    fn an_element_set_afresh_before_its_accumulations_records_once() {
        // An MLP's output layer: `o(i) = a(i, i)` overwrites first the
        // value the loss read at the previous sample, and records it;
        // the accumulations after it overwrite only values no adjoint
        // reads.
        let layer = "subroutine solve(n, m, a, b)
  integer :: n, m, s, i, j
  real(8) :: a(n, n), b(n), o(n)
  do s = 1, m
    do i = 1, n
      o(i) = a(i, i)
      do j = 1, n
        o(i) = o(i) + a(i, j) * a(j, 1)
      end do
      b(1) = b(1) + o(i)**2
    end do
  end do
end subroutine
";
        assert_eq!(records(layer), ["o"]);
        // The loss read between the two: the accumulations overwrite
        // what it read.
        let between = layer
            .replace(
                "      b(1) = b(1) + o(i)**2
",
                "",
            )
            .replace(
                "      o(i) = a(i, i)
",
                "      o(i) = a(i, i)
      b(1) = b(1) + o(i)**2
",
            );
        assert_eq!(records(&between), ["o", "o"]);
        // Set only on some samples: it does not always come first.
        let sometimes = layer.replace("      o(i) = a(i, i)", "      if (s > 1) o(i) = a(i, i)");
        assert_eq!(records(&sometimes), ["o", "o"]);
        // Set with another subscript: not the element accumulated.
        let other = layer.replace("      o(i) = a(i, i)", "      o(n + 1 - i) = a(i, i)");
        assert_eq!(records(&other), ["o", "o"]);
    }

    /// The elements of `solve`'s innermost loops whose adjoints may be
    /// summed in registers, as `name(subscripts)` by loop.
    fn accumulated(src: &str) -> Vec<String> {
        let p = program(src);
        let u = p.units.iter().find(|u| u.name == "solve").unwrap();
        super::accumulated_elements(&p, u)
            .values()
            .flatten()
            .map(|e| dfort_ir::dump::expr(u, e))
            .collect()
    }

    #[test]
    fn an_element_no_other_reference_names_is_accumulated() {
        let unit_diagonal = FORWARD.replace("    b(k) = b(k) / a(k, k)\n", "");
        // `b(k)` in the loop over i > k: never `b(i)`.
        assert_eq!(accumulated(&unit_diagonal), ["b(k)"]);
        // i from k: `b(i)` is `b(k)` on the first iteration.
        let from_k = unit_diagonal.replace("do i = k + 1, n", "do i = k, n");
        assert!(accumulated(&from_k).is_empty());
        // A subscript the loop changes is not one element.
        let moving = unit_diagonal.replace("b(k) * a(i, k)", "b(i - 1) * a(i, k)");
        assert!(accumulated(&moving).is_empty());
        // Written the same way twice: still one element.
        let twice = unit_diagonal.replace("b(k) * a(i, k)", "b(k) * a(i, k) * b(k)");
        assert_eq!(accumulated(&twice), ["b(k)"]);
    }
}
