//! Counted WHILE loops: DO WHILE loops whose trip count the reverse sweep
//! can compute from the loop's bound, as it does for a counted DO loop
//! (paper 001's loop reversal replays counted loops from their bounds
//! instead of pushing their trip count), so the forward sweep neither
//! counts nor pushes anything for them — and the counter's final value,
//! which address recovery (paper 003, Hascoët, Utke, Naumann, §4) would
//! save once after the loop, is computed from the count instead.
//!
//! Contract: in a structured unit, a `DO WHILE (cond)` is counted when
//! - `cond` is `v < B` or `v <= B` (`.lt.`, `.le.`), or `B > v`, `B >= v`,
//!   with `v` an integer scalar local or dummy and `B` an integer
//!   expression without function references;
//! - the statement just before the loop, in the same statement list, is
//!   `v = e0`, `e0` an integer constant (literal or named constant);
//! - the body (nested statements included) writes `v` exactly once, by a
//!   top-level `v = v + c` (or `v = c + v`), `c` a positive integer
//!   constant; no call, READ, nested DO index or function reference may
//!   write it;
//! - nothing in the body writes a variable of `B` (calls included: a
//!   module or COMMON variable in `B` excludes any call in the body, and
//!   a call to an internal procedure of the unit excludes the loop, which
//!   could change `v` or `B` by host association);
//! - the body holds no jump (GO TO, computed GO TO, arithmetic IF, EXIT,
//!   CYCLE, RETURN, STOP). dfort's structuring of EXIT turns such a loop
//!   into a DO WHILE on a flag, which does not match.
//!
//! Then the loop runs `n = max(0, (B - e0 + c - 1) / c)` times (`<`) or
//! `n = max(0, (B - e0 + c) / c)` times (`<=`), `B` taken at the loop
//! (the body does not change it), and leaves `v = e0 + n*c`. TBR requires
//! `B`'s variables at the loop statement, as it requires a counted DO
//! loop's bounds, so that the reverse sweep finds them restored; the
//! recovery plan of the loop does not save `v` after it; the adjoint
//! computes `n` and, where the plan needs `v`'s final value, `v`.
//! Analysis only: no I/O, no panics on user input.

use dfort_ir::bitset::BitSet;
use dfort_ir::dp::{all_writes, constant_int, vars};
use dfort_ir::*;
use std::collections::HashMap;

/// A counted DO WHILE loop.
#[derive(Clone, Debug)]
pub struct CountedWhile {
    /// The DO WHILE statement.
    pub stmt: StmtId,
    /// The counter `v`.
    pub var: SymbolId,
    /// The statement `v = e0` just before the loop.
    pub init: StmtId,
    /// The statement `v = v + c` in the body (top level).
    pub step_stmt: StmtId,
    /// `e0`.
    pub start: i64,
    /// `c` (positive).
    pub step: i64,
    /// `c - 1 - e0` (`<`) or `c - e0` (`<=`): the count is
    /// `max(0, (B + offset) / c)`.
    pub offset: i64,
    /// `B`.
    pub bound: Expr,
    /// `v <= B` rather than `v < B`.
    pub inclusive: bool,
}

impl CountedWhile {
    /// The trip count as Fortran text, `max(0, (B + offset) / c)`
    /// folded.
    pub fn trip_count(&self, unit: &Unit) -> String {
        let b = dfort_ir::dump::expr(unit, &self.bound);
        let k = self.offset;
        let sum = match k.cmp(&0) {
            std::cmp::Ordering::Equal => b,
            std::cmp::Ordering::Greater => format!("{b} + {k}"),
            std::cmp::Ordering::Less => format!("{b} - {}", k.unsigned_abs()),
        };
        if self.step == 1 {
            format!("max(0, {sum})")
        } else {
            format!("max(0, ({sum}) / {})", self.step)
        }
    }

    /// The counter's value after `n` iterations, `e0 + n*c`, as Fortran
    /// text (`n` is the text of the count).
    pub fn final_value(&self, n: &str) -> String {
        let times = if self.step == 1 {
            n.to_string()
        } else {
            format!("{n} * {}", self.step)
        };
        match self.start.cmp(&0) {
            std::cmp::Ordering::Equal => times,
            std::cmp::Ordering::Greater => format!("{} + {times}", self.start),
            std::cmp::Ordering::Less => format!("{times} - {}", self.start.unsigned_abs()),
        }
    }
}

/// The counted WHILE loops of a unit, by DO statement (none in a unit
/// with jumps).
pub fn in_unit(program: &Program, unit: &Unit) -> HashMap<StmtId, CountedWhile> {
    let mut out = HashMap::new();
    if !unit.cfg.structured {
        return out;
    }
    let mut lists: Vec<&[StmtId]> = vec![&unit.body];
    while let Some(list) = lists.pop() {
        for (i, &id) in list.iter().enumerate() {
            let Some(st) = unit.stmts.get(id) else {
                continue;
            };
            lists.extend(st.kind.blocks());
            if let Some(cw) = recognise(program, unit, list, i) {
                out.insert(id, cw);
            }
        }
    }
    out
}

/// Whether the statement at `list[i]` is a counted WHILE loop.
fn recognise(program: &Program, unit: &Unit, list: &[StmtId], i: usize) -> Option<CountedWhile> {
    let stmt = *list.get(i)?;
    let StmtKind::Do {
        control: DoControl::While(cond),
        body,
        ..
    } = &unit.stmt(stmt).kind
    else {
        return None;
    };
    let (var, bound, inclusive) = condition(unit, cond)?;
    if !crate::recovery::address_candidate(unit, var) {
        return None;
    }
    let init = *list.get(i.checked_sub(1)?)?;
    let start = initial_value(unit, init, var)?;
    let (step_stmt, step) = increment(unit, body, var)?;
    if !body_keeps(program, unit, body, var, bound) {
        return None;
    }
    // The count's constant part, which must not overflow.
    let c = if inclusive { step } else { step - 1 };
    let offset = c.checked_sub(start)?;
    Some(CountedWhile {
        stmt,
        var,
        init,
        step_stmt,
        start,
        step,
        offset,
        bound: bound.clone(),
        inclusive,
    })
}

/// Whether the body, given its one increment of `var`, leaves the count
/// to `var` and `bound`: no jump, no other write of `var`, no write of a
/// variable of `bound`, no call that could make one unseen (an internal
/// procedure; any call when `bound` reads a module or COMMON variable).
fn body_keeps(
    program: &Program,
    unit: &Unit,
    body: &[StmtId],
    var: SymbolId,
    bound: &Expr,
) -> bool {
    let inside = crate::recovery::subtree(unit, body);
    let mut bvars = BitSet::default();
    vars(unit, bound, &mut bvars);
    let mut counter = BitSet::default();
    counter.insert_id(var);
    let calls = calls_in(unit, &inside);
    let global_bound = bvars.ids().any(|s| unit.symbol(s).is_global());
    let hidden_writes =
        calls.iter().any(|c| internal(program, unit, c)) || (global_bound && !calls.is_empty());
    !hidden_writes
        && !inside.iter().any(|&id| jumps_or_unknown(unit, id))
        && written_in(program, unit, &inside, &bvars) == 0
        && written_in(program, unit, &inside, &counter) == 1
}

/// `v < B`, `v <= B`, `B > v`, `B >= v`: (v, B, inclusive), with `B` an
/// integer expression without function references.
fn condition<'e>(unit: &Unit, cond: &'e Expr) -> Option<(SymbolId, &'e Expr, bool)> {
    let ExprKind::Binary { op, lhs, rhs } = &cond.kind else {
        return None;
    };
    let (v, b, inclusive) = match op {
        BinaryOp::Lt => (lhs, rhs, false),
        BinaryOp::Le => (lhs, rhs, true),
        BinaryOp::Gt => (rhs, lhs, false),
        BinaryOp::Ge => (rhs, lhs, true),
        _ => return None,
    };
    let ExprKind::Var(v) = v.kind else {
        return None;
    };
    (integer_valued(unit, b) && !references_function(b)).then_some((v, b, inclusive))
}

/// `v = e0`, `e0` an integer constant: its value.
fn initial_value(unit: &Unit, id: StmtId, var: SymbolId) -> Option<i64> {
    match &unit.stmt(id).kind {
        StmtKind::Assign { lhs, rhs } if matches!(lhs.kind, ExprKind::Var(t) if t == var) => {
            constant_int(unit, rhs, 0)
        }
        _ => None,
    }
}

/// The one top-level `v = v + c` (or `v = c + v`) of the body, `c` a
/// positive integer constant: the statement and `c`.
fn increment(unit: &Unit, body: &[StmtId], var: SymbolId) -> Option<(StmtId, i64)> {
    let mut found = None;
    for &id in body {
        let StmtKind::Assign { lhs, rhs } = &unit.stmt(id).kind else {
            continue;
        };
        if !matches!(lhs.kind, ExprKind::Var(t) if t == var) {
            continue;
        }
        let ExprKind::Binary {
            op: BinaryOp::Add,
            lhs: a,
            rhs: b,
        } = &rhs.kind
        else {
            return None;
        };
        let is_v = |e: &Expr| matches!(e.kind, ExprKind::Var(t) if t == var);
        let c = match (is_v(a), is_v(b)) {
            (true, false) => constant_int(unit, b, 0)?,
            (false, true) => constant_int(unit, a, 0)?,
            _ => return None,
        };
        if c <= 0 || found.is_some() {
            return None;
        }
        found = Some((id, c));
    }
    found
}

/// How many writes of variables in `of` the statements `ids` hold:
/// assignments, READ items, call actuals the callee may modify, nested
/// DO indices, function reference actuals, (de)allocations.
fn written_in(program: &Program, unit: &Unit, ids: &[StmtId], of: &BitSet) -> usize {
    ids.iter()
        .map(|&id| {
            all_writes(program, unit, unit.stmt(id))
                .iter()
                .filter(|(s, _)| of.contains_id(*s))
                .count()
        })
        .sum()
}

/// Whether a statement jumps (or stops), or is one dfort does not
/// understand (it could write anything).
fn jumps_or_unknown(unit: &Unit, id: StmtId) -> bool {
    let kind = &unit.stmt(id).kind;
    kind.is_jump() || matches!(kind, StmtKind::Stop | StmtKind::Unsupported { .. })
}

/// The targets of the CALLs and function references in `ids`.
fn calls_in(unit: &Unit, ids: &[StmtId]) -> Vec<CallTarget> {
    let mut out = Vec::new();
    for &id in ids {
        let st = unit.stmt(id);
        if let StmtKind::Call { target, .. } = &st.kind {
            out.push(target.clone());
        }
        for e in st.kind.exprs() {
            e.walk(&mut |x| match &x.kind {
                ExprKind::FunctionCall { target, .. } => out.push(target.clone()),
                ExprKind::Apply { .. } => out.push(CallTarget::Unresolved),
                _ => {}
            });
        }
    }
    out
}

/// Whether a call goes to an internal procedure of `unit` (which sees
/// the unit's variables by host association).
fn internal(program: &Program, unit: &Unit, t: &CallTarget) -> bool {
    match t {
        CallTarget::Unit(c) => program
            .units
            .get(*c)
            .is_some_and(|cu| cu.parent == Some(unit.id)),
        _ => false,
    }
}

fn references_function(e: &Expr) -> bool {
    let mut found = false;
    e.walk(&mut |x| {
        found |= matches!(
            x.kind,
            ExprKind::FunctionCall { .. } | ExprKind::Apply { .. } | ExprKind::Error
        )
    });
    found
}

/// Intrinsics whose result is an integer whatever their arguments.
const INTEGER_RESULT: &[&str] = &[
    "size", "len", "len_trim", "lbound", "ubound", "int", "nint", "floor", "ceiling", "idint",
    "ifix", "ichar", "iachar", "index",
];
/// Intrinsics whose result is an integer when their arguments are.
const INTEGER_PRESERVING: &[&str] = &[
    "max", "min", "mod", "modulo", "abs", "sign", "dim", "max0", "min0", "iabs", "isign", "idim",
];

/// Whether `e` certainly has an integer value (conservative).
fn integer_valued(unit: &Unit, e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Int(_) => true,
        ExprKind::Var(s) | ExprKind::ArrayRef { array: s, .. } => {
            unit.symbol(*s).ty.base == BaseType::Integer
        }
        ExprKind::Unary {
            op: UnaryOp::Neg | UnaryOp::Plus,
            operand,
        } => integer_valued(unit, operand),
        ExprKind::Binary {
            op: BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Div,
            lhs,
            rhs,
        } => integer_valued(unit, lhs) && integer_valued(unit, rhs),
        ExprKind::Intrinsic { name, args } => {
            INTEGER_RESULT.contains(&name.as_str())
                || (INTEGER_PRESERVING.contains(&name.as_str())
                    && !args.is_empty()
                    && args.iter().all(|a| integer_valued(unit, &a.value)))
        }
        _ => false,
    }
}
