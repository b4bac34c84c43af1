//! Canonicalisation (paper 004 §3) for control-flow reversal (paper 001):
//! EXIT and CYCLE turned into structured code, so that loops holding them
//! are reversed as structured loops (trip counts and branch records)
//! instead of by recording basic-block ids.
//!
//! Contract: in a DO loop whose EXIT and CYCLE statements all target it
//! (none inside a nested loop), `cycle` becomes `dfort_cy<n> = .true.`,
//! `exit` becomes `dfort_ex<n> = .true.`, and the statements that follow
//! one that may set a flag run under `if (.not. (flags))`. A loop with an
//! EXIT becomes a DO WHILE on `.not. dfort_ex<n>` whose body first tests
//! the original condition (a counted loop steps its index by hand, only
//! when its bounds and step are not changed inside it). Statement and
//! symbol ids are kept; new ones are appended. Loops closed by a backward
//! GO TO are first made DO loops left by EXIT ([`crate::goto_loops`]). A
//! unit is rewritten only when the result is structured; otherwise it is
//! left as it was.

use dfort_ir::cfg::Cfg;
use dfort_ir::*;
use std::borrow::Cow;

/// The program with EXIT and CYCLE structured where that makes a unit's
/// control flow structured.
pub fn structure_exits(program: &Program) -> Cow<'_, Program> {
    let mut out: Option<Program> = None;
    for (i, unit) in program.units.iter_enumerated() {
        if let Some(u) = structure_unit(unit) {
            out.get_or_insert_with(|| program.clone()).units[i] = u.into();
        }
    }
    match out {
        Some(p) => Cow::Owned(p),
        None => Cow::Borrowed(program),
    }
}

/// One unit with its early RETURNs and its EXIT and CYCLE structured, or
/// `None` when it needs no rewrite (or cannot be made structured).
pub fn structure_unit(unit: &Unit) -> Option<Unit> {
    if unit.cfg.structured || !unit.is_procedure() {
        return None;
    }
    let returns = structure_returns(unit);
    let base = returns.as_ref().unwrap_or(unit);
    if base.cfg.structured {
        return returns;
    }
    let looped = crate::goto_loops::rewrite(base);
    let base = looped.as_ref().unwrap_or(base);
    if base.cfg.structured {
        return looped;
    }
    if !has_loop_jumps(base) {
        return None;
    }
    rewrite_unit(base)
}

/// The unit with the RETURNs that end a branch of an IF after which
/// nothing but the unit's end follows (the argument checks and quick
/// returns of library code: `IF (INFO.NE.0) THEN; CALL XERBLA(…);
/// RETURN; END IF`, `IF (N.EQ.0) RETURN`) made structured: when exactly
/// one branch of the IF (its ELSE, implicit or not) does not end in a
/// RETURN, the statements after the IF move to the end of that branch and
/// each RETURN becomes a CONTINUE (same id). When several branches do not
/// (the reference DLASWP's `IF (INCX.GT.0) … ELSE IF (INCX.LT.0) … ELSE
/// RETURN`), each RETURN sets a flag `dfort_rt<n>` (cleared before the
/// IF) and the statements after the IF run under `if (.not.
/// dfort_rt<n>)`. A unit with nothing else unstructured is then reversed
/// as structured code (loops replayed) instead of by recording basic
/// blocks. `None`: no such RETURN.
fn structure_returns(unit: &Unit) -> Option<Unit> {
    if !unit
        .stmts
        .iter()
        .any(|s| matches!(s.kind, StmtKind::Return))
    {
        return None;
    }
    let mut r = Rewriter {
        unit: unit.clone(),
        flags: 0,
    };
    let body = r.unit.body.clone();
    let mut changed = false;
    r.unit.body = r.returns_before_end(body, &mut changed);
    if !changed {
        return None;
    }
    r.unit.cfg = std::sync::Arc::new(Cfg::build(&r.unit));
    Some(r.unit)
}

impl Rewriter {
    /// [`structure_returns`] on `list`, a block after which only the
    /// unit's end follows.
    fn returns_before_end(&mut self, mut list: Vec<StmtId>, changed: &mut bool) -> Vec<StmtId> {
        let plain_return = |unit: &Unit, b: &[StmtId]| {
            b.last().is_some_and(|s| {
                let st = unit.stmt(*s);
                matches!(st.kind, StmtKind::Return) && st.label.is_none()
            })
        };
        // A RETURN that ends the block is its end already.
        if plain_return(&self.unit, &list) {
            if let Some(&last) = list.last() {
                self.unit.stmts[last].kind = StmtKind::Continue;
                *changed = true;
            }
        }
        for k in 0..list.len() {
            let id = list[k];
            let StmtKind::If {
                arms, else_body, ..
            } = &self.unit.stmt(id).kind
            else {
                continue;
            };
            let mut branches: Vec<Vec<StmtId>> = arms.iter().map(|a| a.body.clone()).collect();
            branches.push(else_body.clone().unwrap_or_default());
            let returning: Vec<bool> = branches
                .iter()
                .map(|b| plain_return(&self.unit, b))
                .collect();
            let staying = returning.iter().filter(|r| !**r).count();
            let last = k + 1 == list.len();
            if returning.contains(&true) && staying > 1 && !last {
                return self.flagged_return(list, k, &branches, &returning, changed);
            }
            let moves = returning.contains(&true) && staying == 1;
            if !moves && !last {
                continue;
            }
            if moves {
                let rest = list.split_off(k + 1);
                if let Some(pos) = returning.iter().position(|r| !*r) {
                    branches[pos].extend(rest);
                }
                *changed = true;
            }
            // Every branch now ends where the unit does.
            let branches: Vec<Vec<StmtId>> = branches
                .into_iter()
                .map(|b| self.returns_before_end(b, changed))
                .collect();
            if let StmtKind::If {
                arms,
                else_body,
                one_line,
            } = &mut self.unit.stmts[id].kind
            {
                let mut it = branches.into_iter();
                for a in arms.iter_mut() {
                    a.body = it.next().unwrap_or_default();
                }
                let e = it.next().unwrap_or_default();
                if !e.is_empty() || else_body.is_some() {
                    *else_body = Some(e);
                }
                if else_body.is_some() {
                    *one_line = false;
                }
            }
            break;
        }
        list
    }

    /// `list` with the IF at `k`, several of whose `branches` do not end in
    /// a RETURN, guarding what follows it with a flag its RETURNs set.
    fn flagged_return(
        &mut self,
        mut list: Vec<StmtId>,
        k: usize,
        branches: &[Vec<StmtId>],
        returning: &[bool],
        changed: &mut bool,
    ) -> Vec<StmtId> {
        let id = list[k];
        let span = self.span(id);
        let flag = self.flag("rt", span);
        for (b, _) in branches.iter().zip(returning).filter(|(_, r)| **r) {
            if let Some(&ret) = b.last() {
                let lhs = self.expr(ExprKind::Var(flag), span);
                let rhs = self.expr(ExprKind::Logical(true), span);
                self.unit.stmts[ret].kind = StmtKind::Assign { lhs, rhs };
            }
        }
        let rest = list.split_off(k + 1);
        let rest = self.returns_before_end(rest, changed);
        let operand = Box::new(self.expr(ExprKind::Var(flag), span));
        let cond = self.expr(
            ExprKind::Unary {
                op: UnaryOp::Not,
                operand,
            },
            span,
        );
        let guard = self.push(
            StmtKind::If {
                arms: vec![IfArm {
                    cond,
                    body: rest,
                    span,
                }],
                else_body: None,
                one_line: false,
            },
            span,
        );
        let clear = self.set(flag, false, span);
        list.insert(k, clear);
        list.push(guard);
        *changed = true;
        list
    }
}

fn has_loop_jumps(unit: &Unit) -> bool {
    unit.stmts
        .iter()
        .any(|s| matches!(s.kind, StmtKind::Exit { .. } | StmtKind::Cycle { .. }))
}

struct Rewriter {
    unit: Unit,
    flags: usize,
}

fn rewrite_unit(unit: &Unit) -> Option<Unit> {
    let mut r = Rewriter {
        unit: unit.clone(),
        flags: 0,
    };
    let body = r.unit.body.clone();
    r.unit.body = r.loops_in(&body)?;
    r.unit.cfg = std::sync::Arc::new(Cfg::build(&r.unit));
    r.unit.cfg.structured.then_some(r.unit)
}

/// One loop's flags: CYCLE's and EXIT's (when the loop has them).
#[derive(Clone)]
struct Flags {
    cycle: Option<SymbolId>,
    exit: Option<SymbolId>,
    name: Option<String>,
}

impl Rewriter {
    fn span(&self, id: StmtId) -> Span {
        self.unit.stmt(id).span
    }

    fn expr(&self, kind: ExprKind, span: Span) -> Expr {
        Expr { kind, span }
    }

    fn push(&mut self, kind: StmtKind, span: Span) -> StmtId {
        let id = self.unit.stmts.next_id();
        self.unit.stmts.push(Stmt {
            id,
            label: None,
            span,
            kind,
        });
        id
    }

    fn flag(&mut self, what: &str, span: Span) -> SymbolId {
        self.flags += 1;
        let id = self.unit.symbols.next_id();
        self.unit.symbols.push(Symbol::local(
            format!("dfort_{what}{}", self.flags),
            Type::new(BaseType::Logical, Some(4)),
            Typing::Declared,
            true,
            span,
        ));
        id
    }

    fn set(&mut self, flag: SymbolId, value: bool, span: Span) -> StmtId {
        let lhs = self.expr(ExprKind::Var(flag), span);
        let rhs = self.expr(ExprKind::Logical(value), span);
        self.push(StmtKind::Assign { lhs, rhs }, span)
    }

    /// `.not. (f1 .or. f2)` over the loop's flags.
    fn none_set(&self, f: &Flags, span: Span) -> Expr {
        let vars: Vec<Expr> = [f.cycle, f.exit]
            .into_iter()
            .flatten()
            .map(|s| self.expr(ExprKind::Var(s), span))
            .collect();
        let any = vars
            .into_iter()
            .reduce(|a, b| {
                self.expr(
                    ExprKind::Binary {
                        op: BinaryOp::Or,
                        lhs: Box::new(a),
                        rhs: Box::new(b),
                    },
                    span,
                )
            })
            .unwrap_or_else(|| self.expr(ExprKind::Logical(false), span));
        self.expr(
            ExprKind::Unary {
                op: UnaryOp::Not,
                operand: Box::new(any),
            },
            span,
        )
    }

    /// Rewrites the loops of a block (innermost first); `None` when a jump
    /// leaves a nested loop for an outer one.
    fn loops_in(&mut self, ids: &[StmtId]) -> Option<Vec<StmtId>> {
        for &id in ids {
            let kind = self.unit.stmt(id).kind.clone();
            match kind {
                StmtKind::If {
                    mut arms,
                    else_body,
                    one_line,
                } => {
                    for a in &mut arms {
                        a.body = self.loops_in(&a.body)?;
                    }
                    let else_body = match else_body {
                        Some(b) => Some(self.loops_in(&b)?),
                        None => None,
                    };
                    self.unit.stmts[id].kind = StmtKind::If {
                        arms,
                        else_body,
                        one_line,
                    };
                }
                StmtKind::SelectCase {
                    selector,
                    mut cases,
                } => {
                    for c in &mut cases {
                        c.body = self.loops_in(&c.body)?;
                    }
                    self.unit.stmts[id].kind = StmtKind::SelectCase { selector, cases };
                }
                StmtKind::Do { .. } => self.rewrite_loop(id)?,
                _ => {}
            }
        }
        Some(ids.to_vec())
    }

    fn rewrite_loop(&mut self, id: StmtId) -> Option<()> {
        let StmtKind::Do {
            name,
            control,
            body,
            end_label,
        } = self.unit.stmt(id).kind.clone()
        else {
            return Some(());
        };
        // Inner loops first.
        let body = self.loops_in(&body)?;
        let (mut cycles, mut exits) = (false, false);
        self.scan(&body, name.as_deref(), 0, &mut cycles, &mut exits)?;
        if !cycles && !exits {
            self.set_do(id, name, control, body, end_label);
            return Some(());
        }
        let span = self.span(id);
        let flags = Flags {
            cycle: cycles.then(|| self.flag("cy", span)),
            exit: exits.then(|| self.flag("ex", span)),
            name: name.clone(),
        };
        let mut new_body = Vec::new();
        if let Some(c) = flags.cycle {
            new_body.push(self.set(c, false, span));
        }
        new_body.extend(self.guard(&body, &flags)?);
        let Some(ex) = flags.exit else {
            self.set_do(id, name, control, new_body, end_label);
            return Some(());
        };
        // EXIT: a DO WHILE on the flag whose body tests the condition.
        let (cond, before, step) = match &control {
            DoControl::While(c) => ((**c).clone(), Vec::new(), None),
            DoControl::Forever => (self.expr(ExprKind::Logical(true), span), Vec::new(), None),
            DoControl::Counted {
                var,
                start,
                end,
                step,
            } => {
                if bounds_change(
                    &self.unit,
                    &body,
                    *var,
                    [Some(&**start), Some(&**end), step.as_deref()],
                ) {
                    return None;
                }
                let iv = self.expr(ExprKind::Var(*var), span);
                let one = self.expr(ExprKind::Int(1), span);
                let stp = step.as_deref().cloned().unwrap_or(one);
                let init = self.push(
                    StmtKind::Assign {
                        lhs: iv.clone(),
                        rhs: (**start).clone(),
                    },
                    span,
                );
                (
                    in_range(self, &iv, end, &stp, span),
                    vec![init],
                    Some((iv, stp)),
                )
            }
        };
        if let Some((iv, stp)) = step {
            // The index steps only when the iteration was not left.
            let next = self.expr(
                ExprKind::Binary {
                    op: BinaryOp::Add,
                    lhs: Box::new(iv.clone()),
                    rhs: Box::new(stp),
                },
                span,
            );
            let inc = self.push(StmtKind::Assign { lhs: iv, rhs: next }, span);
            let not_ex = self.expr(
                ExprKind::Unary {
                    op: UnaryOp::Not,
                    operand: Box::new(self.expr(ExprKind::Var(ex), span)),
                },
                span,
            );
            let guarded = self.push(
                StmtKind::If {
                    arms: vec![IfArm {
                        cond: not_ex,
                        body: vec![inc],
                        span,
                    }],
                    else_body: None,
                    one_line: false,
                },
                span,
            );
            new_body.push(guarded);
        }
        // A DO without control needs no test: its body runs until the flag.
        let test = if matches!(control, DoControl::Forever) {
            new_body
        } else {
            let leave = self.set(ex, true, span);
            vec![self.push(
                StmtKind::If {
                    arms: vec![IfArm {
                        cond,
                        body: new_body,
                        span,
                    }],
                    else_body: Some(vec![leave]),
                    one_line: false,
                },
                span,
            )]
        };
        let not_ex = self.expr(
            ExprKind::Unary {
                op: UnaryOp::Not,
                operand: Box::new(self.expr(ExprKind::Var(ex), span)),
            },
            span,
        );
        // The loop statement keeps its id (and label); what runs before it
        // goes into an IF that is always taken, so that the statement
        // stays in its place in the enclosing block.
        let reset = self.set(ex, false, span);
        let lp = self.push(
            StmtKind::Do {
                name,
                control: DoControl::While(Box::new(not_ex)),
                body: test,
                end_label: None,
            },
            span,
        );
        let mut seq = before;
        seq.push(reset);
        seq.push(lp);
        let always = self.expr(ExprKind::Logical(true), span);
        self.unit.stmts[id].kind = StmtKind::If {
            arms: vec![IfArm {
                cond: always,
                body: seq,
                span,
            }],
            else_body: None,
            one_line: false,
        };
        let _ = end_label;
        Some(())
    }

    fn set_do(
        &mut self,
        id: StmtId,
        name: Option<String>,
        control: DoControl,
        body: Vec<StmtId>,
        end_label: Option<u32>,
    ) {
        self.unit.stmts[id].kind = StmtKind::Do {
            name,
            control,
            body,
            end_label,
        };
    }

    /// Finds the loop's EXIT and CYCLE statements; `None` when one inside
    /// a nested loop targets this loop by name, or a labelled statement
    /// would be moved.
    fn scan(
        &self,
        ids: &[StmtId],
        name: Option<&str>,
        depth: usize,
        cycles: &mut bool,
        exits: &mut bool,
    ) -> Option<()> {
        for &id in ids {
            let st = self.unit.stmt(id);
            let targets_me = |c: &Option<String>| match c {
                Some(c) => Some(c.as_str()) == name,
                None => depth == 0,
            };
            match &st.kind {
                StmtKind::Cycle { construct } if targets_me(construct) => {
                    if depth > 0 {
                        return None;
                    }
                    *cycles = true;
                }
                StmtKind::Exit { construct } if targets_me(construct) => {
                    if depth > 0 {
                        return None;
                    }
                    *exits = true;
                }
                StmtKind::Do { body, .. } => self.scan(body, name, depth + 1, cycles, exits)?,
                kind => {
                    for b in kind.blocks() {
                        self.scan(b, name, depth, cycles, exits)?;
                    }
                }
            }
        }
        Some(())
    }

    /// The block with this loop's EXIT/CYCLE replaced by flag settings and
    /// the statements after one that may set a flag guarded.
    fn guard(&mut self, ids: &[StmtId], f: &Flags) -> Option<Vec<StmtId>> {
        let mut out = Vec::new();
        for (k, &id) in ids.iter().enumerate() {
            let kind = self.unit.stmt(id).kind.clone();
            let span = self.span(id);
            let mine = |c: &Option<String>| c.is_none() || c.as_deref() == f.name.as_deref();
            match kind {
                StmtKind::Cycle { construct } if mine(&construct) => {
                    let flag = f.cycle?;
                    let s = self.set(flag, true, span);
                    self.unit.stmts[s].label = self.unit.stmt(id).label;
                    out.push(s);
                    return Some(out);
                }
                StmtKind::Exit { construct } if mine(&construct) => {
                    let flag = f.exit?;
                    let s = self.set(flag, true, span);
                    self.unit.stmts[s].label = self.unit.stmt(id).label;
                    out.push(s);
                    return Some(out);
                }
                StmtKind::If {
                    mut arms,
                    else_body,
                    ..
                } if self.jumps_inside(id) => {
                    for a in &mut arms {
                        a.body = self.guard(&a.body, f)?;
                    }
                    let else_body = match else_body {
                        Some(b) => Some(self.guard(&b, f)?),
                        None => None,
                    };
                    self.unit.stmts[id].kind = StmtKind::If {
                        arms,
                        else_body,
                        one_line: false,
                    };
                    out.push(id);
                    return self.guard_rest(out, &ids[k + 1..], f, span);
                }
                StmtKind::SelectCase {
                    selector,
                    mut cases,
                } if self.jumps_inside(id) => {
                    for c in &mut cases {
                        c.body = self.guard(&c.body, f)?;
                    }
                    self.unit.stmts[id].kind = StmtKind::SelectCase { selector, cases };
                    out.push(id);
                    return self.guard_rest(out, &ids[k + 1..], f, span);
                }
                _ => out.push(id),
            }
        }
        Some(out)
    }

    /// `out` then the rest of the block under `if (.not. (flags))`.
    fn guard_rest(
        &mut self,
        mut out: Vec<StmtId>,
        rest: &[StmtId],
        f: &Flags,
        span: Span,
    ) -> Option<Vec<StmtId>> {
        if rest.is_empty() {
            return Some(out);
        }
        if rest.iter().any(|r| self.unit.stmt(*r).label.is_some()) {
            return None;
        }
        let body = self.guard(rest, f)?;
        let cond = self.none_set(f, span);
        let g = self.push(
            StmtKind::If {
                arms: vec![IfArm { cond, body, span }],
                else_body: None,
                one_line: false,
            },
            span,
        );
        out.push(g);
        Some(out)
    }

    /// Whether an IF or SELECT CASE holds an EXIT or CYCLE outside nested
    /// loops.
    fn jumps_inside(&self, id: StmtId) -> bool {
        let mut found = false;
        let mut stack = vec![id];
        while let Some(s) = stack.pop() {
            let kind = &self.unit.stmt(s).kind;
            match kind {
                StmtKind::Exit { .. } | StmtKind::Cycle { .. } => found = true,
                StmtKind::Do { .. } => {}
                _ => {
                    for b in kind.blocks() {
                        stack.extend(b);
                    }
                }
            }
        }
        found
    }
}

/// `var <= end` for a positive step, `var >= end` for a negative one, and
/// the test for either sign when the step is not a constant.
fn in_range(r: &Rewriter, iv: &Expr, end: &Expr, step: &Expr, span: Span) -> Expr {
    let cmp = |op| {
        r.expr(
            ExprKind::Binary {
                op,
                lhs: Box::new(iv.clone()),
                rhs: Box::new(end.clone()),
            },
            span,
        )
    };
    match constant_sign(step) {
        Some(true) => cmp(BinaryOp::Le),
        Some(false) => cmp(BinaryOp::Ge),
        None => {
            let zero = r.expr(ExprKind::Int(0), span);
            let pos = r.expr(
                ExprKind::Binary {
                    op: BinaryOp::Gt,
                    lhs: Box::new(step.clone()),
                    rhs: Box::new(zero),
                },
                span,
            );
            let up = r.expr(
                ExprKind::Binary {
                    op: BinaryOp::And,
                    lhs: Box::new(pos.clone()),
                    rhs: Box::new(cmp(BinaryOp::Le)),
                },
                span,
            );
            let neg = r.expr(
                ExprKind::Unary {
                    op: UnaryOp::Not,
                    operand: Box::new(pos),
                },
                span,
            );
            let down = r.expr(
                ExprKind::Binary {
                    op: BinaryOp::And,
                    lhs: Box::new(neg),
                    rhs: Box::new(cmp(BinaryOp::Ge)),
                },
                span,
            );
            r.expr(
                ExprKind::Binary {
                    op: BinaryOp::Or,
                    lhs: Box::new(up),
                    rhs: Box::new(down),
                },
                span,
            )
        }
    }
}

/// The sign of an integer literal step (`Some(true)` when positive).
fn constant_sign(e: &Expr) -> Option<bool> {
    match &e.kind {
        ExprKind::Int(v) => Some(*v > 0),
        ExprKind::Unary {
            op: UnaryOp::Neg,
            operand,
        } => constant_sign(operand).map(|s| !s),
        _ => None,
    }
}

/// Whether the loop body may change the index or a variable of the
/// bounds (the rewritten loop re-evaluates them each iteration).
fn bounds_change(unit: &Unit, body: &[StmtId], var: SymbolId, bounds: [Option<&Expr>; 3]) -> bool {
    let mut read = vec![var];
    for b in bounds.into_iter().flatten() {
        b.walk(&mut |x| {
            if let ExprKind::Var(s) | ExprKind::ArrayRef { array: s, .. } = &x.kind {
                read.push(*s);
            }
            if matches!(x.kind, ExprKind::FunctionCall { .. }) {
                read.push(SymbolId(u32::MAX));
            }
        });
    }
    if read.contains(&SymbolId(u32::MAX)) {
        return true;
    }
    let mut stack = body.to_vec();
    while let Some(id) = stack.pop() {
        let st = unit.stmt(id);
        let written = match &st.kind {
            StmtKind::Assign { lhs, .. } => dfort_ir::dp::target(lhs).map(|(s, _)| s),
            StmtKind::Do {
                control: DoControl::Counted { var, .. },
                ..
            } => Some(*var),
            // A call may change anything it is given.
            StmtKind::Call { args, .. } => {
                if args
                    .iter()
                    .any(|a| dfort_ir::dp::target(&a.value).is_some_and(|(s, _)| read.contains(&s)))
                {
                    return true;
                }
                None
            }
            StmtKind::Io { .. } => return true,
            _ => None,
        };
        if written.is_some_and(|s| read.contains(&s)) {
            return true;
        }
        for b in st.kind.blocks() {
            stack.extend(b);
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::program;

    /// The body of `unit` as nested text: statement kinds, IF branches in
    /// brackets.
    fn shape(unit: &Unit, ids: &[StmtId]) -> String {
        let mut out = Vec::new();
        for &id in ids {
            let st = unit.stmt(id);
            out.push(match &st.kind {
                StmtKind::If {
                    arms, else_body, ..
                } => {
                    let mut s = String::from("if[");
                    let arms: Vec<String> = arms.iter().map(|a| shape(unit, &a.body)).collect();
                    s.push_str(&arms.join("|"));
                    if let Some(e) = else_body {
                        s.push_str(" else ");
                        s.push_str(&shape(unit, e));
                    }
                    s.push(']');
                    s
                }
                StmtKind::Do { body, .. } => format!("do[{}]", shape(unit, body)),
                StmtKind::Call { name, .. } => format!("call {name}"),
                StmtKind::Assign { .. } => "=".into(),
                StmtKind::Return => "return".into(),
                StmtKind::Continue => "continue".into(),
                _ => "?".into(),
            });
        }
        out.join("; ")
    }

    fn structured(src: &str) -> Option<String> {
        let p = program(src);
        let unit = p.units.iter().find(|u| u.is_procedure())?;
        let done = structure_unit(unit)?;
        assert!(done.cfg.structured);
        Some(shape(&done, &done.body))
    }

    #[test]
    fn an_argument_check_and_a_quick_return_become_else_branches() {
        let src = "subroutine s(n, x, info)
  integer :: n, info, i
  real(8) :: x(n)
  info = 0
  if (n < 0) info = -1
  if (info /= 0) then
    call err(info)
    return
  end if
  if (n == 0) return
  do i = 1, n
    x(i) = x(i)**2
  end do
end subroutine
";
        assert_eq!(
            structured(src).as_deref(),
            Some("=; if[=]; if[call err; continue else if[continue else do[=]]]")
        );
    }

    #[test]
    fn a_return_beside_several_branches_sets_a_flag() {
        // The reference DLASWP: two branches go on, the ELSE returns.
        let src = "subroutine s(n, x, inc)
  integer :: n, inc, i, i1
  real(8) :: x(n)
  if (inc > 0) then
    i1 = 1
  else if (inc < 0) then
    i1 = n
  else
    return
  end if
  do i = i1, n
    x(i) = x(i)**2
  end do
  return
end subroutine
";
        assert_eq!(
            structured(src).as_deref(),
            Some("=; if[=|= else =]; if[do[=]; continue]")
        );
        let p = program(src);
        let done = structure_unit(&p.units[UnitId(0)]).unwrap();
        let flags: Vec<&str> = done
            .symbols
            .iter()
            .filter(|s| s.name.starts_with("dfort_rt"))
            .map(|s| s.name.as_str())
            .collect();
        assert_eq!(flags, ["dfort_rt1"]);
    }

    #[test]
    fn returns_that_skip_more_than_their_block_stay() {
        // The inner RETURN also skips `x(1) = 0`: moving the statements
        // after its IF into an ELSE would not, so nothing is rewritten.
        let nested = "subroutine s(n, x)
  integer :: n
  real(8) :: x(n)
  if (n > 1) then
    if (x(1) > 0d0) then
      return
    end if
    x(2) = 1d0
  end if
  x(1) = 0d0
end subroutine
";
        assert_eq!(structured(nested), None);
        // A RETURN inside a loop.
        let in_loop = "subroutine s(n, x)
  integer :: n, i
  real(8) :: x(n)
  do i = 1, n
    if (x(i) < 0d0) return
    x(i) = sqrt(x(i))
  end do
end subroutine
";
        assert_eq!(structured(in_loop), None);
        // Every branch returns: what follows is dead, and left alone.
        let both = "subroutine s(x)
  real(8) :: x
  if (x > 0d0) then
    return
  else
    return
  end if
  x = 1d0
end subroutine
";
        assert_eq!(structured(both), None);
    }

    #[test]
    fn a_loop_closed_by_a_backward_go_to_becomes_a_structured_loop() {
        // Tested at its end (repeat … until): a loop left by a flag.
        let until = "subroutine s(n, iters, y)
  integer :: n, iters, it, i
  real(8) :: y(n)
  it = 0
10 continue
  it = it + 1
  do i = 2, n
    y(i) = y(i) + y(i-1)**2
  end do
  if (it < iters) go to 10
  y(1) = 0d0
end subroutine
";
        assert_eq!(
            structured(until).as_deref(),
            Some("=; if[=; do[continue; =; do[=]; if[=]]]; =")
        );
        // Tested at its head, on the labelled statement or after a
        // labelled CONTINUE: a DO WHILE with neither GO TO.
        for head in [
            "10 if (i > n) go to 20",
            "10 continue\n  if (i > n) go to 20",
        ] {
            let src = format!(
                "subroutine s(n, x)
  integer :: n, i
  real(8) :: x(n)
  i = 1
  {head}
  x(i) = x(i)**2
  i = i + 1
  go to 10
20 continue
  x(1) = 0d0
end subroutine
"
            );
            assert_eq!(
                structured(&src).as_deref(),
                Some("=; do[=; =]; continue; ="),
                "{head}"
            );
        }
    }

    #[test]
    fn backward_go_to_loops_that_other_jumps_cross_stay() {
        // A jump into the loop from before it.
        let into = "subroutine s(n, x)
  integer :: n, i
  real(8) :: x(n)
  i = 0
  if (n > 3) go to 15
10 continue
  i = i + 1
15 x(1) = x(1)**2
  if (i < n) go to 10
end subroutine
";
        assert_eq!(structured(into), None);
        // An EXIT of the enclosing DO inside it: the new loop would take it.
        let exit = "subroutine s(n, x)
  integer :: n, i, k
  real(8) :: x(n)
  do k = 1, n
    i = 0
10  continue
    i = i + 1
    if (x(i) > 1d0) exit
    x(i) = x(i)**2
    if (i < k) go to 10
  end do
end subroutine
";
        assert_eq!(structured(exit), None);
        // A second reference to the loop's label.
        let twice = "subroutine s(n, x)
  integer :: n, i
  real(8) :: x(n)
  i = 0
10 continue
  i = i + 1
  if (x(i) > 1d0) go to 10
  x(i) = x(i)**2
  if (i < n) go to 10
end subroutine
";
        assert_eq!(structured(twice), None);
    }
}
