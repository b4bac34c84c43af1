//! Real intermediates recomputed in the reverse sweep instead of stored:
//! paper 003's forward recomputation (its option 2, with the cost
//! c(S) = |S|s + α|S|f of §3) applied to the cheap floating-point values
//! its §5.1 names (`vx = coor(1,nuex) - coor(1,nuor)`), which that paper
//! leaves out of its scope.
//!
//! Contract: given a structured unit and each statement's Req and own
//! needs before TBR's fixpoint, [`find`] returns, for each counted DO loop
//! whose body holds only assignments (in IF, SELECT CASE and counted DO
//! constructs too; no call, no I/O, no label), the scalar real and
//! integer locals that a top-level assignment of the body defines — their
//! only assignment in it, before anything in it reads them — and that some
//! statement of the body requires, with the assignments that compute
//! them: when each can be recomputed at the start of the reversed
//! iteration by plain scalar arithmetic (intrinsics, array elements; no
//! function of the user's) from such values and from values nothing in
//! the body writes (the loop's index included), at a cost of at most
//! [`OPS_PER_RECORD`] operations per value no longer pushed. TBR then
//! drops those variables from the requirements of every statement in the
//! loop (the reverse sweep recomputes them) and requires what the
//! recomputation reads at its first statement ([`crate::tbr`]); the
//! generator writes the statements at the start of each reversed
//! iteration. Loops marked `binomial-ckp` and loops holding a
//! preaccumulated statement are left
//! alone. Analysis only: no I/O, no panics on user input.

use dfort_ir::bitset::BitSet;
use dfort_ir::dp::vars;
use dfort_ir::{
    BaseType, BinaryOp, DoControl, Expr, ExprKind, StmtId, StmtKind, Storage, Subscript, SymbolId,
    Unit,
};

/// The operations a recomputation may cost per value it saves pushing and
/// popping (1/α of paper 003's cost: a push and a pop are two memory
/// round trips; an arithmetic operation on registers is far cheaper,
/// and the forward statements that only fed the tape then drop out).
pub const OPS_PER_RECORD: u32 = 16;

/// The operations an intrinsic such as `sqrt` or `exp` counts for.
const COSTLY: u32 = 8;

/// One loop whose real intermediates the reverse sweep recomputes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Recomputed {
    /// The DO statement.
    pub lp: StmtId,
    /// The assignments run again at the start of each reversed
    /// iteration, in body order.
    pub stmts: Vec<StmtId>,
    /// The variables they assign.
    pub vars: BitSet,
    /// What they read that they do not assign themselves (nothing in the
    /// body writes it).
    pub exposed: BitSet,
}

/// The loops of `unit` whose real intermediates the reverse sweep can
/// recompute; `required(s)`: what the adjoint of statement `s` needs of
/// the values just before it (Req and its own needs); `skip(lp)`: loops
/// to leave alone.
pub fn find(
    unit: &Unit,
    required: &dyn Fn(StmtId) -> BitSet,
    skip: &dyn Fn(StmtId) -> bool,
) -> Vec<Recomputed> {
    if !unit.cfg.structured {
        return Vec::new();
    }
    unit.stmts
        .iter()
        .filter(|st| !skip(st.id))
        .filter_map(|st| match &st.kind {
            StmtKind::Do {
                control: DoControl::Counted { .. },
                body,
                ..
            } => of_loop(unit, st.id, body, required),
            _ => None,
        })
        .collect()
}

fn of_loop(
    unit: &Unit,
    lp: StmtId,
    body: &[StmtId],
    required: &dyn Fn(StmtId) -> BitSet,
) -> Option<Recomputed> {
    if unit.stmt(lp).label.is_some() {
        return None;
    }
    // Plain assignments, possibly in IF, SELECT CASE and counted DO
    // constructs; what they write, and how often each scalar is assigned.
    let all = loop_statements(unit, lp);
    let mut written = BitSet::default();
    let mut count: std::collections::HashMap<SymbolId, usize> = Default::default();
    for &s in &all {
        let st = unit.stmt(s);
        if st.label.is_some() {
            return None;
        }
        match &st.kind {
            StmtKind::Assign { lhs, .. } => {
                let (t, _) = dfort_ir::dp::target(lhs)?;
                written.insert_id(t);
                *count.entry(t).or_default() += 1;
            }
            // A nested loop's index is assigned by its DO (and left past
            // its bound by the reversed loop): never a candidate.
            StmtKind::Do {
                control: DoControl::Counted { var, .. },
                ..
            } => {
                written.insert_id(*var);
                *count.entry(*var).or_default() += 2;
            }
            StmtKind::Continue | StmtKind::If { .. } | StmtKind::SelectCase { .. } => {}
            _ => return None,
        }
    }
    // The candidates: top-level assignments of a whole real or integer
    // scalar local assigned nowhere else in the body and read by nothing
    // in it before.
    let mut read_before = BitSet::default();
    let mut candidates = BitSet::default();
    for &s in body {
        reads(unit, s, &mut read_before);
        if let StmtKind::Assign { lhs, .. } = &unit.stmt(s).kind {
            if let ExprKind::Var(v) = lhs.kind {
                if count.get(&v) == Some(&1)
                    && !read_before.contains_id(v)
                    && is_plain_local(unit, v)
                {
                    candidates.insert_id(v);
                }
            }
        }
    }
    // Which candidates can be recomputed: their right-hand side is plain
    // scalar arithmetic on recomputable candidates assigned before and on
    // values the body does not write.
    let mut recomputable = BitSet::default();
    let mut defining: Vec<(SymbolId, StmtId, &Expr, u32)> = Vec::new();
    for &s in body {
        let StmtKind::Assign { lhs, rhs } = &unit.stmt(s).kind else {
            continue;
        };
        let ExprKind::Var(v) = lhs.kind else { continue };
        if !candidates.contains_id(v) {
            continue;
        }
        let Some(ops) = plain_cost(unit, rhs) else {
            continue;
        };
        let mut r = BitSet::default();
        vars(unit, rhs, &mut r);
        if r.iter()
            .all(|x| recomputable.contains(x) || !written.contains(x))
        {
            recomputable.insert_id(v);
            defining.push((v, s, rhs, ops));
        }
    }
    // The values the body's adjoints need, and what computes them.
    let mut needed = BitSet::default();
    for &s in &all {
        let mut r = required(s);
        r.intersect_with(&recomputable);
        needed.union_with(&r);
    }
    if needed.is_empty() {
        return None;
    }
    let saved = needed.iter().count() as u32;
    for (v, _, rhs, _) in defining.iter().rev() {
        if needed.contains_id(*v) {
            let mut r = BitSet::default();
            vars(unit, rhs, &mut r);
            r.intersect_with(&recomputable);
            needed.union_with(&r);
        }
    }
    let mut stmts = Vec::new();
    let mut exposed = BitSet::default();
    let mut ops: u32 = 0;
    for (v, s, rhs, cost) in &defining {
        if needed.contains_id(*v) {
            stmts.push(*s);
            vars(unit, rhs, &mut exposed);
            ops = ops.saturating_add(*cost);
        }
    }
    if ops > OPS_PER_RECORD.saturating_mul(saved) {
        return None;
    }
    exposed.subtract(&needed);
    Some(Recomputed {
        lp,
        stmts,
        vars: needed,
        exposed,
    })
}

/// The variables statement `s` (and what it holds) reads: not the
/// variable an assignment overwrites whole.
fn reads(unit: &Unit, s: StmtId, out: &mut BitSet) {
    let kind = &unit.stmt(s).kind;
    match kind {
        StmtKind::Assign { lhs, rhs } => {
            vars(unit, rhs, out);
            if let ExprKind::ArrayRef { subs, .. } = &lhs.kind {
                for sub in subs {
                    sub_vars(unit, sub, out);
                }
            } else if !matches!(lhs.kind, ExprKind::Var(_)) {
                vars(unit, lhs, out);
            }
        }
        _ => {
            for e in kind.exprs() {
                vars(unit, e, out);
            }
        }
    }
    for b in kind.blocks() {
        for &c in b {
            reads(unit, c, out);
        }
    }
}

/// Every statement nested in DO loop `lp`, at any depth, in order (none
/// for another statement).
pub fn loop_statements(unit: &Unit, lp: StmtId) -> Vec<StmtId> {
    fn add(unit: &Unit, ids: &[StmtId], out: &mut Vec<StmtId>) {
        for &s in ids {
            out.push(s);
            for b in unit.stmt(s).kind.blocks() {
                add(unit, b, out);
            }
        }
    }
    let mut out = Vec::new();
    if let StmtKind::Do { body, .. } = &unit.stmt(lp).kind {
        add(unit, body, &mut out);
    }
    out
}

/// A real or integer scalar the unit owns alone: a local without SAVE,
/// initial value, pointer or target attribute, and in no alias class.
fn is_plain_local(unit: &Unit, v: SymbolId) -> bool {
    let sym = unit.symbol(v);
    sym.storage == Storage::Local
        && sym.rank() == 0
        && matches!(sym.ty.base, BaseType::Real | BaseType::Integer)
        && dfort_ir::dp::is_variable(unit, v)
        && !sym.attrs.save
        && !sym.attrs.initialized
        && !sym.attrs.pointer
        && !sym.attrs.target
        && !sym.attrs.allocatable
        && !unit.aliases.iter().any(|c| c.contains(&v))
}

/// The operations evaluating `e` costs, when it is scalar arithmetic:
/// literals, scalar variables, array elements and intrinsic functions of
/// those (no function of the user's, no section, no component). One per
/// arithmetic operation, more for powers and transcendental intrinsics.
fn plain_cost(unit: &Unit, e: &Expr) -> Option<u32> {
    let mut ok = true;
    let mut n: u32 = 0;
    e.walk(&mut |x| {
        n = n.saturating_add(match &x.kind {
            ExprKind::Binary {
                op: BinaryOp::Pow, ..
            } => COSTLY,
            ExprKind::Binary { .. } | ExprKind::Unary { .. } => 1,
            ExprKind::Intrinsic { name, .. } => match name.as_str() {
                "abs" | "min" | "max" | "sign" | "real" | "dble" | "int" | "nint" | "float"
                | "mod" | "aint" | "anint" => 1,
                _ => COSTLY,
            },
            ExprKind::Int(_) | ExprKind::Real { .. } | ExprKind::Logical(_) => 0,
            ExprKind::Var(s) => {
                ok &= unit.symbol(*s).rank() == 0;
                0
            }
            ExprKind::ArrayRef { subs, .. } => {
                ok &= subs.iter().all(|s| matches!(s, Subscript::Index(_)));
                0
            }
            _ => {
                ok = false;
                0
            }
        })
    });
    ok.then_some(n)
}

/// The variables a subscript reads.
fn sub_vars(unit: &Unit, sub: &Subscript, out: &mut BitSet) {
    match sub {
        Subscript::Index(e) => vars(unit, e, out),
        Subscript::Range { lo, hi, stride } => {
            for e in [lo, hi, stride].into_iter().flatten() {
                vars(unit, e, out);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::test_support::{program, request};

    /// Per loop of `f` (by the line of its DO), the variables its reverse
    /// sweep recomputes, by name; and the variables TBR records.
    fn decided(src: &str) -> (Vec<Vec<String>>, Vec<String>) {
        let p = program(src);
        let facts = crate::facts::analyse(&p, &request("f", &["x"], &["y"]), None);
        let u = p.units.iter().find(|u| u.name == "f").unwrap();
        let tbr = facts.tbr_of(u.id).unwrap();
        let names = |b: &dfort_ir::bitset::BitSet| -> Vec<String> {
            b.ids::<dfort_ir::SymbolId>()
                .map(|s| u.symbol(s).name.clone())
                .collect()
        };
        let recomputed = tbr.recomputed.iter().map(|r| names(&r.vars)).collect();
        let records = tbr
            .records
            .iter()
            .map(|r| u.symbol(r.variable).name.clone())
            .collect();
        (recomputed, records)
    }

    const HEAD: &str = "subroutine f(n, x, y)\n  integer, intent(in) :: n\n  real(8), intent(in) :: x(n)\n  real(8), intent(inout) :: y(n)\n  real(8) :: a, b, c\n  integer :: i, j\n";

    #[test]
    fn intermediates_of_an_iteration_are_recomputed_not_recorded() {
        let src = format!(
            "{HEAD}  do i = 1, n\n    a = x(i) * x(i)\n    b = sin(a) + x(i)\n    y(i) = y(i) + a * b\n  end do\nend subroutine\n"
        );
        let (recomputed, records) = decided(&src);
        assert_eq!(recomputed, vec![vec!["a", "b"]]);
        assert!(!records.iter().any(|r| r == "a" || r == "b"), "{records:?}");
    }

    #[test]
    fn an_integer_index_defined_in_the_body_is_recomputed_with_them() {
        let src = format!(
            "{HEAD}  do i = 1, n - 1\n    j = i + 1\n    a = x(j) - x(i)\n    if (a > 0.0d0) then\n      y(j) = y(j) + a * a\n    end if\n  end do\nend subroutine\n"
        );
        let (recomputed, _) = decided(&src);
        assert_eq!(recomputed, vec![vec!["a", "j"]]);
    }

    #[test]
    fn values_carried_across_iterations_or_read_from_what_the_body_writes_are_not() {
        // `a` is read before it is assigned (carried); `b` reads y, which
        // the body writes; `c` is assigned twice.
        let src = format!(
            "{HEAD}  a = 0.0d0\n  do i = 1, n\n    b = y(i) * x(i)\n    a = a + x(i) * b\n    c = x(i)\n    c = c * c\n    y(i) = a * b * c\n  end do\nend subroutine\n"
        );
        let (recomputed, records) = decided(&src);
        assert!(recomputed.is_empty(), "{recomputed:?}");
        assert!(records.iter().any(|r| r == "b"), "{records:?}");
    }

    /// Seed 6161, case 365: `k = 1` before an inner `do k` is no
    /// candidate (the reversed inner loop leaves `k` past its bound).
    #[test]
    fn the_index_of_an_inner_loop_is_not_recomputed() {
        let src = format!(
            "{HEAD}  do i = 1, n\n    j = 1\n    a = x(j) * x(i)\n    do j = 1, 2\n      y(i) = y(i) + a * x(j)\n    end do\n    y(i) = y(i) * x(j - 2)\n  end do\nend subroutine\n"
        );
        let (recomputed, _) = decided(&src);
        assert!(
            !recomputed.iter().flatten().any(|v| v == "j"),
            "{recomputed:?}"
        );
    }

    #[test]
    fn a_call_in_the_body_or_a_costly_chain_keeps_the_records() {
        let src = format!(
            "{HEAD}  do i = 1, n\n    a = x(i) * x(i)\n    call g(a)\n    y(i) = y(i) * a\n  end do\nend subroutine\nsubroutine g(a)\n  real(8) :: a\n  a = a + 1.0d0\nend subroutine\n"
        );
        assert!(decided(&src).0.is_empty());
        // One value saved, far more than OPS_PER_RECORD operations.
        let costly = format!(
            "{HEAD}  do i = 1, n\n    a = exp(sin(cos(tan(x(i))))) + log(exp(sin(x(i))))\n    y(i) = y(i) * a\n  end do\nend subroutine\n"
        );
        let (recomputed, records) = decided(&costly);
        assert!(recomputed.is_empty(), "{recomputed:?}");
        assert!(records.iter().any(|r| r == "a"), "{records:?}");
    }
}
