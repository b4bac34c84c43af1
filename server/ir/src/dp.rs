//! Differentiable positions and variable occurrences of expressions
//! (paper 000 §4.1, the DP table; §5.1, VARS), and what each statement
//! writes. Variables are symbol indices of their unit.
//!
//! DP excludes everything no derivative flows through: integer, logical
//! and character values, comparison and logical results, array indices,
//! and intrinsics with integer results (`int`, `nint`, `floor`, `size`...).

use crate::bitset::BitSet;
use crate::intrinsics::has_non_differentiable_result;
use crate::*;

/// Whether a symbol can carry a derivative: a real or complex variable,
/// or a derived-type variable (which may hold real components; treated as
/// one whole, like an array) — not a named constant, not a procedure.
pub fn differentiable(unit: &Unit, s: SymbolId) -> bool {
    let sym = unit.symbol(s);
    (sym.ty.is_real_or_complex() || sym.ty.base == BaseType::Derived)
        && !sym.attrs.parameter
        && sym.storage != Storage::Procedure
}

/// A variable symbol (any type) whose value a statement can read or write.
pub fn is_variable(unit: &Unit, s: SymbolId) -> bool {
    let sym = unit.symbol(s);
    !sym.attrs.parameter && sym.storage != Storage::Procedure
}

/// DP(e): the differentiable variables in differentiable positions of `e`.
pub fn dp(unit: &Unit, e: &Expr, out: &mut BitSet) {
    match &e.kind {
        ExprKind::Var(s) | ExprKind::ArrayRef { array: s, .. } if differentiable(unit, *s) => {
            out.insert_id(*s);
        }
        ExprKind::Component { base, .. } => dp(unit, base, out),
        ExprKind::Unary { op, operand } if *op != UnaryOp::Not => dp(unit, operand, out),
        ExprKind::Binary { op, lhs, rhs }
            if !op.is_comparison() && !op.is_logical() && *op != BinaryOp::Concat =>
        {
            dp(unit, lhs, out);
            dp(unit, rhs, out);
        }
        ExprKind::Intrinsic { name, args } if !has_non_differentiable_result(name) => {
            for a in args {
                dp(unit, &a.value, out);
            }
        }
        ExprKind::FunctionCall { args, .. } | ExprKind::Apply { args, .. } => {
            for a in args {
                dp(unit, &a.value, out);
            }
        }
        ExprKind::Complex(a, b) => {
            dp(unit, a, out);
            dp(unit, b, out);
        }
        ExprKind::ArrayCtor(items) | ExprKind::ImpliedDo { items, .. } => {
            for i in items {
                dp(unit, i, out);
            }
        }
        _ => {}
    }
}

pub fn dp_of(unit: &Unit, e: &Expr) -> BitSet {
    let mut s = BitSet::new(unit.symbols.len());
    dp(unit, e, &mut s);
    s
}

/// VARS(e): every variable occurring in `e`, indices included.
pub fn vars(unit: &Unit, e: &Expr, out: &mut BitSet) {
    e.walk(&mut |x| match &x.kind {
        ExprKind::Var(s) | ExprKind::ArrayRef { array: s, .. } if is_variable(unit, *s) => {
            out.insert_id(*s);
        }
        _ => {}
    });
}

/// The variables of a counted DO loop's bounds and step whose values
/// they read: not those whose shape or length only they ask
/// (`size(c%corner)`, `len(line)`, of a variable that is not allocatable
/// or a pointer), which writes to the variable do not change.
pub fn bound_vars(unit: &Unit, start: &Expr, end: &Expr, step: Option<&Expr>, out: &mut BitSet) {
    for e in [Some(start), Some(end), step].into_iter().flatten() {
        value_vars(unit, e, out);
    }
}

/// The variables whose values `e` reads: not those whose shape or length
/// only it asks (`size(a)`, `lbound(a, 1)`, `len(s)` of a variable that is
/// not allocatable or a pointer).
pub fn value_vars(unit: &Unit, e: &Expr, out: &mut BitSet) {
    read(unit, e, out);
    fn read(unit: &Unit, e: &Expr, out: &mut BitSet) {
        match &e.kind {
            ExprKind::Intrinsic { name, args }
                if matches!(
                    name.as_str(),
                    "size" | "lbound" | "ubound" | "shape" | "len"
                ) =>
            {
                for (i, a) in args.iter().enumerate() {
                    let fixed = target(&a.value).is_some_and(|(s, _)| {
                        let sym = unit.symbol(s);
                        !sym.attrs.allocatable && !sym.attrs.pointer
                    });
                    if i == 0 && fixed {
                        // Its subscripts are read all the same.
                        let mut subs = BitSet::default();
                        index_vars(unit, &a.value, &mut subs);
                        out.union_with(&subs);
                    } else {
                        read(unit, &a.value, out);
                    }
                }
            }
            ExprKind::Var(s) | ExprKind::ArrayRef { array: s, .. } if is_variable(unit, *s) => {
                out.insert_id(*s);
                for c in e.children() {
                    read(unit, c, out);
                }
            }
            _ => {
                for c in e.children() {
                    read(unit, c, out);
                }
            }
        }
    }
}

/// The variables in the subscripts of an array reference (or component).
pub fn index_vars(unit: &Unit, e: &Expr, out: &mut BitSet) {
    let subs = match &e.kind {
        ExprKind::ArrayRef { subs, .. } => subs,
        ExprKind::Component { base, subs, .. } => {
            index_vars(unit, base, out);
            subs
        }
        _ => return,
    };
    for s in subs {
        match s {
            Subscript::Index(i) => vars(unit, i, out),
            Subscript::Range { lo, hi, stride } => {
                for x in [lo, hi, stride].into_iter().flatten() {
                    vars(unit, x, out);
                }
            }
        }
    }
}

/// What the items an I/O statement defines write: each item's variable
/// (an implied DO's items in part, and its variable whole).
pub fn io_targets(items: &[Expr]) -> Vec<(SymbolId, bool)> {
    let mut out = Vec::new();
    for e in items {
        match &e.kind {
            ExprKind::ImpliedDo { items, var, .. } => {
                out.extend(io_targets(items).into_iter().map(|(s, _)| (s, false)));
                out.push((*var, true));
            }
            _ => out.extend(target(e)),
        }
    }
    out
}

/// The one item of an I/O list that defines variable `s`, when exactly
/// one does and no implied DO does; `None` when the variable is saved
/// whole (several items, or an implied DO, define it).
pub fn single_io_item(writes: &[Expr], s: SymbolId) -> Option<&Expr> {
    let implied = writes.iter().any(|w| {
        matches!(w.kind, ExprKind::ImpliedDo { .. })
            && io_targets(std::slice::from_ref(w))
                .iter()
                .any(|(t, _)| *t == s)
    });
    let mut items = writes
        .iter()
        .filter(|w| target(w).is_some_and(|(t, _)| t == s));
    match (items.next(), items.next()) {
        (Some(one), None) if !implied => Some(one),
        _ => None,
    }
}

/// The variable an assignment target writes, and whether the write covers
/// all of it (a scalar or a whole array) or only part (an element, a
/// section, a component) — partial writes do not kill (paper 000 §5.1).
pub fn target(e: &Expr) -> Option<(SymbolId, bool)> {
    match &e.kind {
        ExprKind::Var(s) => Some((*s, true)),
        ExprKind::ArrayRef { array, .. } => Some((*array, false)),
        ExprKind::Component { base, .. } => target(base).map(|(s, _)| (s, false)),
        _ => None,
    }
}

/// What a statement writes, as (variable, whole) pairs, conservatively:
/// assignment targets, READ items, and the actual arguments of a call that
/// the callee may modify (all but `intent(in)` formals).
pub fn writes(program: &Program, unit: &Unit, st: &Stmt) -> Vec<(SymbolId, bool)> {
    match &st.kind {
        StmtKind::Assign { lhs, .. } => target(lhs).into_iter().collect(),
        StmtKind::Io { writes, .. } => io_targets(writes),
        StmtKind::Call {
            target: t, args, ..
        } => {
            let callee = match t {
                CallTarget::Unit(id) => program.units.get(*id),
                _ => None,
            };
            args.iter()
                .enumerate()
                .filter(|(i, a)| may_change_actual(callee.map(|c| &**c), *i, a))
                .filter_map(|(_, a)| target(&a.value))
                .filter(|(s, _)| is_variable(unit, *s) && !fixed_dummy(unit, *s))
                // A callee may write any part of an actual: never a kill.
                .map(|(s, _)| (s, false))
                .collect()
        }
        _ => Vec::new(),
    }
}

/// Whether procedure `callee` (`None`: unknown) may change its actual
/// `a`, at position `i` of the reference: all but those bound to an
/// `intent(in)` formal.
fn may_change_actual(callee: Option<&Unit>, i: usize, a: &Arg) -> bool {
    let formal = callee.and_then(|c| match &a.keyword {
        Some(k) => c.args.iter().find(|f| c.symbol(**f).name == *k).copied(),
        None => c.args.get(i).copied(),
    });
    let intent = formal.and_then(|f| callee.map(|c| c.symbol(f).intent));
    intent.flatten() != Some(Intent::In)
}

/// Whether `s` is an `intent(in)` dummy of `unit`: nothing it calls may
/// change it.
fn fixed_dummy(unit: &Unit, s: SymbolId) -> bool {
    unit.symbols
        .get(s)
        .is_some_and(|sym| sym.intent == Some(Intent::In))
}

/// How a statement may write a variable (see [`all_writes`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteBy {
    /// An assignment; `whole` when it covers the whole variable.
    Assignment {
        whole: bool,
    },
    Read,
    /// An actual argument of a CALL the callee may modify.
    Call,
    /// The index of a counted DO loop.
    DoIndex,
    /// An argument of a function reference (functions may modify them).
    FunctionArgument,
    Allocate,
}

/// Everything a statement itself (not its nested statements) may write:
/// [`writes`], plus a counted DO's index, ALLOCATE objects and the
/// variables passed to function references.
pub fn all_writes(program: &Program, unit: &Unit, st: &Stmt) -> Vec<(SymbolId, WriteBy)> {
    let mut out: Vec<(SymbolId, WriteBy)> = writes(program, unit, st)
        .into_iter()
        .map(|(v, whole)| {
            let by = match st.kind {
                StmtKind::Assign { .. } => WriteBy::Assignment { whole },
                StmtKind::Io { .. } => WriteBy::Read,
                _ => WriteBy::Call,
            };
            (v, by)
        })
        .collect();
    match &st.kind {
        StmtKind::Do {
            control: DoControl::Counted { var, .. },
            ..
        } => out.push((*var, WriteBy::DoIndex)),
        StmtKind::Allocate { objects, .. } => {
            out.extend(
                objects
                    .iter()
                    .filter_map(target)
                    .map(|(v, _)| (v, WriteBy::Allocate)),
            );
        }
        _ => {}
    }
    // A function may change its actuals, but for those bound to an
    // `intent(in)` formal (fuzzer, seed 46046, case 564: an `intent(in)`
    // dummy passed to one was saved and restored, which does not compile).
    for e in st.kind.exprs() {
        e.walk(&mut |x| {
            let (callee, args) = match &x.kind {
                ExprKind::FunctionCall { target, args, .. } => match target {
                    CallTarget::Unit(c) => (program.units.get(*c), args),
                    _ => (None, args),
                },
                ExprKind::Apply { args, .. } => (None, args),
                _ => return,
            };
            out.extend(
                args.iter()
                    .enumerate()
                    .filter(|(i, a)| may_change_actual(callee.map(|c| &**c), *i, a))
                    .filter_map(|(_, a)| target(&a.value))
                    .filter(|(v, _)| !fixed_dummy(unit, *v))
                    .map(|(v, _)| (v, WriteBy::FunctionArgument)),
            );
        });
    }
    out
}

/// The subscripts of an array element whose indices are all integer
/// constants (literals or named constants), e.g. `y(3)` → `[3]`.
pub fn constant_element(unit: &Unit, e: &Expr) -> Option<Vec<i64>> {
    let ExprKind::ArrayRef { subs, .. } = &e.kind else {
        return None;
    };
    subs.iter()
        .map(|s| match s {
            Subscript::Index(i) => constant_int(unit, i, 0),
            Subscript::Range { .. } => None,
        })
        .collect()
}

/// `a op b` of integer constants as Fortran computes it (`/` truncates),
/// for `+ - * /`; `None` on overflow, division by zero or another op.
pub fn integer_op(op: BinaryOp, a: i64, b: i64) -> Option<i64> {
    match op {
        BinaryOp::Add => a.checked_add(b),
        BinaryOp::Sub => a.checked_sub(b),
        BinaryOp::Mul => a.checked_mul(b),
        BinaryOp::Div => a.checked_div(b),
        _ => None,
    }
}

pub fn constant_int(unit: &Unit, e: &Expr, depth: u32) -> Option<i64> {
    if depth > 32 {
        return None;
    }
    match &e.kind {
        ExprKind::Int(v) => Some(*v),
        ExprKind::Unary {
            op: UnaryOp::Neg,
            operand,
        } => constant_int(unit, operand, depth + 1).map(|v| -v),
        ExprKind::Var(s) => {
            let sym = unit.symbol(*s);
            if sym.attrs.parameter {
                constant_int(unit, sym.init.as_ref()?, depth + 1)
            } else {
                None
            }
        }
        // `cacheLineSize/4` (MITgcm's `lShare4`): integer arithmetic of
        // constants, `/` truncating as Fortran's does.
        ExprKind::Binary { op, lhs, rhs } => {
            let a = constant_int(unit, lhs, depth + 1)?;
            let b = constant_int(unit, rhs, depth + 1)?;
            integer_op(*op, a, b)
        }
        _ => None,
    }
}

/// Whether every reference to array `a` in `e` is a constant element
/// different from `elem` (so writing `a(elem)` cannot overwrite a value
/// `e` reads) — the cheap improvement over the whole-array rule.
pub fn disjoint_constant_elements(unit: &Unit, e: &Expr, a: SymbolId, elem: &[i64]) -> bool {
    let mut disjoint = true;
    e.walk(&mut |x| match &x.kind {
        ExprKind::ArrayRef { array, .. } if *array == a => match constant_element(unit, x) {
            Some(c) if c.as_slice() != elem => {}
            _ => disjoint = false,
        },
        ExprKind::Var(s) if *s == a => disjoint = false,
        _ => {}
    });
    disjoint
}
