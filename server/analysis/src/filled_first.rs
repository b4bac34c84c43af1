//! Arrays a unit fills before it reads them: their values on entry are
//! not read by its adjoint, though adjoint liveness, which works on whole
//! variables (a partial write kills nothing), finds them live there.
//! What a callee's adjoint reads on entry is what its callers' snapshots
//! save (paper 000 §5: a call's checkpoint; [`crate::checkpoint`]), so a
//! model's time step that fills `flux(1:n-1)` and then reads it would
//! have the whole of `flux` pushed around every call.
//!
//! Contract: [`arrays`] gives, among the arrays in `live` (live on entry),
//! those whose entry values neither the forward sweep nor the reverse
//! sweep of the unit's adjoint reads, found by one sufficient test:
//!
//! * the unit has no branch to a label (GO TO, computed GO TO,
//!   arithmetic IF, an I/O statement's ERR=/END=), no local Jacobians and
//!   no recomputed loops (whose reads are not the statements' own);
//! * the array is a dummy, module or COMMON array, not a pointer, target
//!   or OPTIONAL, in no may-alias class, and no ALLOCATE or DEALLOCATE
//!   names it;
//! * the first statement of the unit's body that reads or writes it
//!   (what it and the procedures it calls do, and what TBR says its
//!   adjoint reads) is a nest of counted DO loops of step ±1, each the
//!   only loop at the top of the one around it, holding no EXIT, CYCLE,
//!   RETURN, STOP or branch, whose innermost body assigns, at its top,
//!   an element `a(i + c, …, s, …)`: each loop's index, plus a constant,
//!   is exactly one subscript, the other subscripts `s` and every loop
//!   bound are integer expressions of variables nothing in the unit
//!   writes. That assignment's right-hand side does not name the array,
//!   TBR does not record it there, and nothing else in the nest touches
//!   it: the nest writes the box `[lo + c, hi + c] × … × [s, s] × …`
//!   before anything reads the array;
//! * every later statement touching the array is an assignment that
//!   references no user function, whose references to the array are all
//!   elements or sections inside that box: each subscript an expression
//!   of the variables nothing writes, plus at most one enclosing counted
//!   loop's index with coefficient 1 (that loop of step ±1, its bounds of
//!   the same kind), or a section `lo:hi` of such expressions with a
//!   positive constant stride; inside means that the differences to the
//!   box's bounds fold to constants of the right sign. An empty box
//!   leaves every such reference inside an empty loop.
//!
//! Analysis only: no I/O, no panics on user input.

use crate::effects::{stmt_effects, LocalEffects, ProgramEffects};
use crate::regions::bound::{from_expr, sub, Bound};
use crate::tbr::Tbr;
use dfort_ir::bitset::BitSet;
use dfort_ir::dp::writes;
use dfort_ir::queries::mentions;
use dfort_ir::*;

/// The arrays in `live` whose entry values `unit`'s adjoint does not read
/// (see the module's contract).
pub fn arrays(
    program: &Program,
    unit: &Unit,
    tbr: &Tbr,
    effects: &ProgramEffects,
    live: &BitSet,
) -> Vec<SymbolId> {
    if !tbr.jacobians.is_empty() || !tbr.recomputed.is_empty() || unit.stmts.iter().any(branches) {
        return Vec::new();
    }
    let touched: Vec<(BitSet, BitSet)> = unit
        .stmts
        .iter()
        .map(|st| {
            let mut fx = LocalEffects::default();
            stmt_effects(program, unit, st, effects, &mut fx);
            if let Some(n) = tbr.needs.get(st.id) {
                fx.reads.union_with(n);
            }
            (fx.reads, fx.writes)
        })
        .collect();
    let mut unwritten = BitSet::new(unit.symbols.len());
    for s in unit.symbols.indices() {
        unwritten.insert_id(s);
    }
    for st in &unit.stmts {
        for (v, _) in writes(program, unit, st) {
            unwritten.remove_id(v);
        }
        if let StmtKind::Do {
            control: DoControl::Counted { var, .. },
            ..
        } = &st.kind
        {
            unwritten.remove_id(*var);
        }
    }
    for (_, w) in &touched {
        for v in w.ids::<SymbolId>() {
            unwritten.remove_id(v);
        }
    }
    let ctx = Context {
        unit,
        tbr,
        touched: &touched,
        unwritten: &unwritten,
    };
    live.ids::<SymbolId>()
        .filter(|&a| a.index() < unit.symbols.len() && ctx.candidate(a) && ctx.filled_first(a))
        .collect()
}

/// A statement that may jump to a label.
fn branches(st: &Stmt) -> bool {
    match &st.kind {
        StmtKind::Goto { .. } | StmtKind::ComputedGoto { .. } | StmtKind::ArithmeticIf { .. } => {
            true
        }
        StmtKind::Io { branches, .. } => !branches.is_empty(),
        _ => false,
    }
}

struct Context<'a> {
    unit: &'a Unit,
    tbr: &'a Tbr,
    /// Per statement: what it reads (with what its adjoint needs) and
    /// writes, calls included, nested statements not.
    touched: &'a [(BitSet, BitSet)],
    /// The variables no statement of the unit writes.
    unwritten: &'a BitSet,
}

/// A counted loop around a reference: its index and bounds.
struct Around {
    var: SymbolId,
    lo: Bound,
    hi: Bound,
}

impl Context<'_> {
    fn candidate(&self, a: SymbolId) -> bool {
        let sym = self.unit.symbol(a);
        let storage_ok = matches!(sym.storage, Storage::Dummy(_)) || sym.is_global();
        storage_ok
            && sym.rank() > 0
            && dfort_ir::dp::is_variable(self.unit, a)
            && !sym.attrs.pointer
            && !sym.attrs.target
            && !sym.attrs.optional
            && !self.unit.aliases.iter().any(|c| c.contains(&a))
            && !self.unit.stmts.iter().any(|st| match &st.kind {
                StmtKind::Allocate { objects, .. } => objects.iter().any(|o| mentions(o, a)),
                _ => false,
            })
    }

    /// Whether statement `id` touches `a`: reads or writes it, or its
    /// adjoint reads it, or its text names it.
    fn touches(&self, id: StmtId, a: SymbolId) -> bool {
        let (r, w) = &self.touched[id.index()];
        r.contains_id(a)
            || w.contains_id(a)
            || self
                .unit
                .stmt(id)
                .kind
                .exprs()
                .iter()
                .any(|e| mentions(e, a))
    }

    /// Whether `id` or a statement nested in it touches `a`.
    fn subtree_touches(&self, id: StmtId, a: SymbolId) -> bool {
        self.touches(id, a)
            || self
                .unit
                .stmt(id)
                .kind
                .blocks()
                .iter()
                .any(|b| b.iter().any(|&s| self.subtree_touches(s, a)))
    }

    fn filled_first(&self, a: SymbolId) -> bool {
        let body = &self.unit.body;
        let Some(first) = body.iter().position(|&s| self.subtree_touches(s, a)) else {
            return false;
        };
        let mut atoms = Vec::new();
        let Some(filled) = self.fill(body[first], a, &mut atoms) else {
            return false;
        };
        body[first + 1..]
            .iter()
            .all(|&s| self.inside(s, a, &filled, &mut Vec::new(), &mut atoms))
    }

    /// An integer expression of variables nothing writes, as a bound.
    fn invariant(&self, e: &Expr, atoms: &mut Vec<Expr>) -> Option<Bound> {
        self.affine(e, None, atoms).map(|(b, _)| b)
    }

    /// `e` as a bound `rest + index` with `index` the loop variable `var`
    /// with coefficient 1 (`Some(true)`) or not named (`Some(false)`),
    /// `rest` an expression of variables nothing writes.
    fn affine(
        &self,
        e: &Expr,
        var: Option<SymbolId>,
        atoms: &mut Vec<Expr>,
    ) -> Option<(Bound, bool)> {
        let mut plain = true;
        let mut named = false;
        e.walk(&mut |x| match &x.kind {
            ExprKind::Var(v) if Some(*v) == var => named = true,
            ExprKind::Var(v) => {
                let sym = self.unit.symbol(*v);
                plain &= self.unwritten.contains_id(*v)
                    && sym.rank() == 0
                    && sym.ty.base == BaseType::Integer;
            }
            ExprKind::Int(_) | ExprKind::Binary { .. } | ExprKind::Unary { .. } => {}
            _ => plain = false,
        });
        if !plain {
            return None;
        }
        let b = from_expr(self.unit, e, atoms);
        if !named {
            return Some((b, false));
        }
        let v = from_expr(self.unit, &crate::regions::var_expr(var?, e.span), atoms);
        let rest = sub(b, v.clone());
        // The index with coefficient 1: nothing of it left in the rest.
        let index_atom = atoms
            .iter()
            .position(|x| matches!(x.kind, ExprKind::Var(s) if Some(s) == var))?;
        let mut read = Vec::new();
        rest.formals(&mut read);
        (!read.contains(&(index_atom as u32))).then_some((rest, true))
    }

    /// The box the loop nest `id` writes of `a` before anything reads it
    /// (per dimension, its lowest and highest subscript), if it is one.
    fn fill(&self, id: StmtId, a: SymbolId, atoms: &mut Vec<Expr>) -> Option<Vec<(Bound, Bound)>> {
        let mut loops: Vec<Around> = Vec::new();
        let mut cur = id;
        let assign = loop {
            let st = self.unit.stmt(cur);
            loops.push(self.around(st, atoms)?);
            let body = st.kind.blocks().concat();
            // Nothing but the next loop or the filling assignment touches
            // `a`, and nothing leaves the nest.
            let mut inner = None;
            for &s in &body {
                if self.subtree_leaves(s) {
                    return None;
                }
                if self.subtree_touches(s, a) {
                    if inner.is_some() {
                        return None;
                    }
                    inner = Some(s);
                }
            }
            let inner = inner?;
            match &self.unit.stmt(inner).kind {
                StmtKind::Do { .. } => cur = inner,
                StmtKind::Assign { .. } => break inner,
                _ => return None,
            }
        };
        let StmtKind::Assign { lhs, rhs } = &self.unit.stmt(assign).kind else {
            return None;
        };
        let ExprKind::ArrayRef { array, subs } = &lhs.kind else {
            return None;
        };
        let (reads, writes) = &self.touched[assign.index()];
        let recorded = self
            .tbr
            .records
            .iter()
            .any(|r| r.stmt == assign && r.variable == a);
        if *array != a
            || mentions(rhs, a)
            || reads.contains_id(a)
            || recorded
            || !writes.contains_id(a)
        {
            return None;
        }
        if subs
            .iter()
            .any(|s| matches!(s, Subscript::Index(e) if mentions(e, a)))
        {
            return None;
        }
        let mut used = vec![false; loops.len()];
        let mut out = Vec::new();
        for s in subs {
            let Subscript::Index(e) = s else {
                return None;
            };
            let mut dim = None;
            for (k, l) in loops.iter().enumerate() {
                if let Some((rest, true)) = self.affine(e, Some(l.var), atoms) {
                    if used[k] {
                        return None;
                    }
                    used[k] = true;
                    let c = rest.constant()?;
                    dim = Some((plus(&l.lo, c), plus(&l.hi, c)));
                    break;
                }
            }
            let dim = match dim {
                Some(d) => d,
                None => {
                    let b = self.invariant(e, atoms)?;
                    (b.clone(), b)
                }
            };
            out.push(dim);
        }
        // A loop whose index subscripts nothing may not run at all.
        used.iter().all(|u| *u).then_some(out)
    }

    /// The counted DO loop `st` of step 1 or -1 whose bounds are integer
    /// expressions of variables nothing writes, as a loop around its body:
    /// its index and the lowest and highest values it takes.
    fn around(&self, st: &Stmt, atoms: &mut Vec<Expr>) -> Option<Around> {
        let StmtKind::Do {
            control:
                DoControl::Counted {
                    var,
                    start,
                    end,
                    step,
                },
            ..
        } = &st.kind
        else {
            return None;
        };
        let step = match step {
            Some(s) => from_expr(self.unit, s, atoms).constant()?,
            None => 1,
        };
        let (first, last) = (self.invariant(start, atoms)?, self.invariant(end, atoms)?);
        match step {
            1 => Some(Around {
                var: *var,
                lo: first,
                hi: last,
            }),
            -1 => Some(Around {
                var: *var,
                lo: last,
                hi: first,
            }),
            _ => None,
        }
    }

    /// Whether `id` or a statement nested in it may leave the statements
    /// around it (EXIT, CYCLE, RETURN, STOP, a branch).
    fn subtree_leaves(&self, id: StmtId) -> bool {
        let st = self.unit.stmt(id);
        matches!(
            st.kind,
            StmtKind::Exit { .. } | StmtKind::Cycle { .. } | StmtKind::Return | StmtKind::Stop
        ) || branches(st)
            || st
                .kind
                .blocks()
                .iter()
                .any(|b| b.iter().any(|&s| self.subtree_leaves(s)))
    }

    /// Whether every reference to `a` in `id` and the statements nested
    /// in it lies inside `filled`, with the counted loops `around` it.
    fn inside(
        &self,
        id: StmtId,
        a: SymbolId,
        filled: &[(Bound, Bound)],
        around: &mut Vec<Around>,
        atoms: &mut Vec<Expr>,
    ) -> bool {
        let st = self.unit.stmt(id);
        if self.touches(id, a) && !self.assignment_inside(st, a, filled, around, atoms) {
            return false;
        }
        let pushed = self.around(st, atoms);
        let n = around.len();
        if let Some(l) = pushed {
            around.push(l);
        }
        let ok = st
            .kind
            .blocks()
            .iter()
            .all(|b| b.iter().all(|&s| self.inside(s, a, filled, around, atoms)));
        around.truncate(n);
        ok
    }

    /// Whether `st` is an assignment referencing no user function whose
    /// references to `a` all lie inside `filled`.
    fn assignment_inside(
        &self,
        st: &Stmt,
        a: SymbolId,
        filled: &[(Bound, Bound)],
        around: &[Around],
        atoms: &mut Vec<Expr>,
    ) -> bool {
        let StmtKind::Assign { lhs, rhs } = &st.kind else {
            return false;
        };
        let mut ok = true;
        for e in [lhs, rhs] {
            e.walk(&mut |x| match &x.kind {
                ExprKind::FunctionCall {
                    target: CallTarget::Unit(_),
                    ..
                } => ok = false,
                ExprKind::Var(v) if *v == a => ok = false,
                ExprKind::ArrayRef { array, subs } if *array == a => {
                    ok &= subs.len() == filled.len()
                        && subs.iter().zip(filled).all(|(s, (lo, hi))| {
                            self.within(s, lo, hi, around, atoms).unwrap_or(false)
                        });
                }
                ExprKind::Component { .. } if mentions(x, a) => ok = false,
                _ => {}
            });
        }
        ok
    }

    /// Whether subscript `s`, with the loops `around` it, stays inside
    /// `[lo, hi]` (`None`: not known).
    fn within(
        &self,
        s: &Subscript,
        lo: &Bound,
        hi: &Bound,
        around: &[Around],
        atoms: &mut Vec<Expr>,
    ) -> Option<bool> {
        let (first, last) = match s {
            Subscript::Index(e) => (e, e),
            Subscript::Range {
                lo: Some(first),
                hi: Some(last),
                stride,
            } => {
                let positive = stride.as_deref().is_none_or(|st| {
                    from_expr(self.unit, st, atoms)
                        .constant()
                        .is_some_and(|c| c > 0)
                });
                if !positive {
                    return None;
                }
                (&**first, &**last)
            }
            Subscript::Range { .. } => return None,
        };
        let low = self.extreme(first, around, atoms, true)?;
        let high = self.extreme(last, around, atoms, false)?;
        Some(sub(low, lo.clone()).constant()? >= 0 && sub(hi.clone(), high).constant()? >= 0)
    }

    /// The lowest (`low`) or highest value of `e` over the loops around
    /// it: `e` an expression of unwritten variables plus at most one loop
    /// index with coefficient 1.
    fn extreme(
        &self,
        e: &Expr,
        around: &[Around],
        atoms: &mut Vec<Expr>,
        low: bool,
    ) -> Option<Bound> {
        for l in around.iter().rev() {
            if mentions(e, l.var) {
                let (rest, _) = self.affine(e, Some(l.var), atoms)?;
                let c = rest.constant()?;
                return Some(plus(if low { &l.lo } else { &l.hi }, c));
            }
        }
        self.invariant(e, atoms)
    }
}

fn plus(b: &Bound, c: i64) -> Bound {
    crate::regions::bound::add(b.clone(), Bound::Int(c))
}

#[cfg(test)]
mod tests {
    use crate::test_support::{program, request};

    /// Whether the adjoint of `st`, whose executable part is `body`,
    /// reads the entry value of its argument `f` (a time step's `flux`).
    fn reads_f(body: &str) -> bool {
        let src = format!(
            "subroutine top(h, n, k, y)
  implicit none
  integer, intent(in) :: n, k
  real(8), intent(inout) :: h(n)
  real(8), intent(out) :: y
  real(8) :: f(n, 2)
  integer :: t
  f = 0
  do t = 1, 3
    call st(h, f, n, k)
  end do
  y = sum(h**2)
end subroutine top

subroutine use_f(f, n)
  implicit none
  integer, intent(in) :: n
  real(8), intent(inout) :: f(n, 2)
  f(1, 1) = f(1, 1)*f(2, 1)
end subroutine use_f

subroutine st(h, f, n, k)
  implicit none
  integer, intent(in) :: n, k
  real(8), intent(inout) :: h(n), f(n, 2)
  integer :: i, m
{body}
end subroutine st
"
        );
        let p = program(&src);
        let st = p.units.iter().find(|u| u.name == "st").expect("st");
        let f = st
            .symbols
            .indices()
            .find(|s| st.symbol(*s).name == "f")
            .expect("f");
        let facts = crate::facts::analyse(&p, &request("top", &["h"], &["y"]), None);
        let needs = facts
            .decisions_of(st.id)
            .expect("decisions")
            .entry_needs
            .clone();
        needs.expect("entry needs").contains_id(f)
    }

    const FILL: &str = "  do i = 1, n - 1
    f(i, k) = 0.5d0*h(i)**2 - h(i + 1)
  end do
";

    #[test]
    fn an_array_filled_before_its_reads_inside_the_box_is_not_read_on_entry() {
        let read = "  do i = 2, n - 1
    h(i) = h(i)*(f(i - 1, k) - f(i, k))
  end do
";
        assert!(!reads_f(&format!("{FILL}{read}")));
        let down = FILL.replace("1, n - 1", "n - 1, 1, -1");
        assert!(!reads_f(&format!("{down}{read}")));
        // A section inside the box, in a loop counting down.
        let sections = "  h(2:n - 1) = h(2:n - 1)*f(1:n - 2, k)
  do i = n - 1, 1, -1
    h(i) = h(i) + f(i, k)**2
  end do
";
        assert!(!reads_f(&format!("{FILL}{sections}")));
        // Two levels, each index one subscript.
        let nest = "  do m = 1, 2
    do i = 1, n
      f(i, m) = h(i)*h(i)
    end do
  end do
  do i = n, 1, -1
    h(i) = h(i)*f(i, 2)*f(i, 1)
  end do
";
        assert!(!reads_f(nest));
        // `f(n, 2)` is in the box only when n >= 1, which nothing says.
        assert!(reads_f(&format!("{nest}  h(1) = h(1)*f(n, 2)\n")));
    }

    #[test]
    fn a_read_the_fill_may_not_cover_keeps_the_array_read_on_entry() {
        let after = |read: &str| reads_f(&format!("{FILL}{read}"));
        // Past the end of the box (`f(n, k)`), another column, a whole
        // array, a call reading it.
        assert!(after("  h(1) = h(1)*f(n, k)\n"));
        assert!(after("  h(1) = h(1)*f(1, 1)\n"));
        assert!(after("  h(1) = h(1)*sum(f)\n"));
        assert!(after("  call use_f(f, n)\n"));
        // Read before the fill.
        assert!(reads_f(&format!("  h(1) = h(1)*f(1, k)\n{FILL}")));
        // A fill under an IF, one that may leave its loop, and one whose
        // bound changes later.
        assert!(reads_f(&format!(
            "  if (n > 3) then\n{FILL}  end if\n  h(1) = h(1)*f(1, k)\n"
        )));
        let exits = "  do i = 1, n - 1
    if (h(i) < 0) exit
    f(i, k) = h(i)**2
  end do
  h(1) = h(1)*f(1, k)
";
        assert!(reads_f(exits));
        let moved = "  m = n - 1
  do i = 1, m
    f(i, k) = h(i)**2
  end do
  m = 2
  h(1) = h(1)*f(1, k)
";
        assert!(reads_f(moved));
        // A loop whose index subscripts nothing may not run.
        let unused = "  do m = 1, n
    do i = 1, n
      f(i, k) = h(i)**2
    end do
  end do
  h(1) = h(1)*f(1, k)
";
        assert!(reads_f(unused));
        // A fill reading the array itself.
        let shift = "  do i = 2, n
    f(i, k) = f(i - 1, k)*h(i)
  end do
  h(2) = h(2)*f(2, k)
";
        assert!(reads_f(shift));
    }
}
