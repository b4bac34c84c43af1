//! The indexing idioms of the reference BLAS, read as expressions of loop
//! indices so that the interval and progression rules of [`super::eval`]
//! bound them (issue 41).
//!
//! - A counter (induction variable): a local integer set before a counted
//!   DO and advanced once per iteration by a step the loop does not change
//!   (`JX = KX` before `DO J = 1, N`, `JX = JX + INCX` in its body). Read
//!   inside the loop it is `init + (j - start)*step`, plus the steps the
//!   iteration has already taken; each step must be a statement of the
//!   loop's own body (not under an IF or in a nested loop), and the body
//!   must not leave an iteration early (EXIT, CYCLE, GO TO).
//! - An unrolled loop `DO I = MOD(N, C) + 1, N, C` (after a clean-up loop
//!   of `MOD(N, C)` iterations): `N - MOD(N, C)` is a multiple of `C`, so
//!   its last index is `N - C + 1` and `I + C - 1` never passes `N`.
//!
//! Sound for conforming programs under the contract of [`super`]: a value
//! is read only where the definitions it rests on reach the reference on
//! every path (no jumps in the unit) and nothing between changes them.

use super::*;

/// The value of a counter at a reference: its value on entering the loop
/// it counts in (a definition's right-hand side, or the values several
/// may give), plus `rest`, the steps taken since (an expression of the
/// loop's index).
pub(super) struct Counted {
    pub init: Result<Expr, Interval>,
    pub rest: Expr,
}

impl<'a> Ctx<'a> {
    /// `e` with every counter it reads replaced by its value at the
    /// statement being read (in terms of the loop indices of `loops`).
    pub(super) fn with_counters(&self, e: &Expr, loops: &[Loop]) -> Expr {
        let mut out = e.clone();
        out.walk_mut(&mut |x| {
            if let ExprKind::Var(v) = x.kind {
                if let Ok(Counted {
                    init: Ok(init),
                    rest,
                }) = self.counter(v, loops)
                {
                    *x = binary(BinaryOp::Add, init, rest);
                }
            }
        });
        out
    }

    /// The value of counter `v` at the statement being read, inside
    /// `loops`; why not, when `v` is advanced in a way this does not follow.
    pub(super) fn counter(&self, v: SymbolId, loops: &[Loop]) -> Result<Counted, Why> {
        let sym = self.unit.symbol(v);
        let name = &sym.name;
        let not_a_counter = || format!("`{name}` is not a counter");
        if sym.storage != Storage::Local || sym.init.is_some() || sym.attrs.save {
            return Err(not_a_counter());
        }
        let Some(Some(list)) = self.defs.get(&v) else {
            return Err(not_a_counter());
        };
        let mut steps: Vec<(StmtId, Expr)> = Vec::new();
        for (rhs, _, id) in list {
            match step_of(rhs, v) {
                Some(d) => steps.push((*id, d)),
                None if mentions(rhs, v) => {
                    return Err(format!(
                        "`{name}` is a counter advanced by `{}`, not by a step",
                        dfort_ir::dump::expr(self.unit, rhs)
                    ))
                }
                None => {}
            }
        }
        if steps.is_empty() {
            return Err(not_a_counter());
        }
        let advance = |id: StmtId| {
            let (rhs, _, _) = list.iter().find(|(_, _, d)| *d == id).expect("a step");
            format!("`{name} = {}`", dfort_ir::dump::expr(self.unit, rhs))
        };
        if self.jumps {
            return Err(format!(
                "`{name}` is a counter in a procedure with GO TO statements"
            ));
        }
        // The loop whose body advances it (steps elsewhere, in other arms,
        // must not reach the loop: see the definition reaching it below).
        let Some(k) = loops
            .iter()
            .rposition(|l| steps.iter().any(|(id, _)| self.child_of(l.stmt, *id)))
        else {
            return Err(format!(
                "`{name}` is a counter, and {} is not a statement of the body of a DO loop around the reference",
                advance(steps[0].0)
            ));
        };
        let l = &loops[k];
        steps.retain(|(id, _)| self.inside(l.stmt, *id));
        if let Some((id, _)) = steps.iter().find(|(id, _)| !self.child_of(l.stmt, *id)) {
            return Err(format!(
                "`{name}` is a counter, and {} is inside a construct of the loop it counts in",
                advance(*id)
            ));
        }
        let sign = match self.step_value(loops, k) {
            Some(c @ (1 | -1)) => c,
            _ => {
                return Err(format!(
                    "`{name}` is a counter of a loop whose step is not 1 or -1"
                ))
            }
        };
        if let Some(j) = self.leaves_early(l.stmt) {
            return Err(format!(
                "`{name}` is a counter, and `{j}` may skip {}",
                advance(steps[0].0)
            ));
        }
        for (id, d) in &steps {
            if !self.invariant(d) {
                return Err(format!(
                    "`{name}` is a counter, and the step of {} may change",
                    advance(*id)
                ));
            }
        }
        if list
            .iter()
            .any(|(_, _, id)| !steps.iter().any(|(s, _)| s == id) && self.inside(l.stmt, *id))
        {
            return Err(format!(
                "`{name}` is set again inside the loop it counts in"
            ));
        }
        // Its value on entering the loop: the definition reaching the DO,
        // or, for a loop inside no other that every step is in, the hull
        // of the definitions before it (`IX = 1` or `IX = 1 - (N-1)*INCX`
        // by the sign of INCX).
        let outer = self.site.replace(Some(l.stmt));
        let exact = self
            .exact_definition(list, &loops[..k])
            .map(|(rhs, _, _)| rhs.clone());
        self.site.set(outer);
        let init = match exact.filter(|rhs| !mentions(rhs, v)) {
            Some(rhs) => Ok(rhs),
            None => Err(self.entry_hull(v, l.stmt, list, steps.len())?),
        };
        if init.as_ref().is_ok_and(|e| !self.unchanged_in(e, l.stmt))
            || !self.unchanged_in(&l.start, l.stmt)
        {
            return Err(format!(
                "`{name}` is a counter whose start changes inside the loop"
            ));
        }
        // The steps this iteration has taken before the reference.
        let site = self.site.get().ok_or_else(not_a_counter)?;
        let depth = self.paths.get(&l.stmt).map_or(0, |p| p.len());
        let at = self
            .paths
            .get(&site)
            .and_then(|p| p.get(depth))
            .map(|&(_, q)| q)
            .ok_or_else(not_a_counter)?;
        let place = |id: StmtId| {
            self.paths
                .get(&id)
                .and_then(|p| p.last())
                .map_or(usize::MAX, |&(_, q)| q)
        };
        let span = l.start.span;
        let total = steps
            .iter()
            .map(|(_, d)| d.clone())
            .reduce(|a, b| binary(BinaryOp::Add, a, b))
            .ok_or_else(not_a_counter)?;
        let index = var_expr(l.var, span);
        let trips = match sign {
            1 => binary(BinaryOp::Sub, index, l.start.clone()),
            _ => binary(BinaryOp::Sub, l.start.clone(), index),
        };
        let mut rest = binary(BinaryOp::Mul, trips, total);
        for (id, d) in &steps {
            if place(*id) < at {
                rest = binary(BinaryOp::Add, rest, d.clone());
            }
        }
        Ok(Counted { init, rest })
    }

    /// The values counter `v` (with definitions `list`, `steps` of them
    /// steps, all inside DO `l`) may have on entering `l` when `l` is
    /// inside no loop: those of its other definitions, each read where it
    /// stands.
    fn entry_hull(
        &self,
        v: SymbolId,
        l: StmtId,
        list: &[Definition],
        steps: usize,
    ) -> Result<Interval, Why> {
        let name = &self.unit.symbol(v).name;
        let no_value =
            || format!("`{name}` is a counter with no one value before the loop it counts in");
        let mut at = l;
        while let Some(&p) = self.parents.get(&at) {
            if matches!(self.unit.stmt(p).kind, StmtKind::Do { .. }) {
                return Err(no_value());
            }
            at = p;
        }
        let inside = list.iter().filter(|(_, _, id)| self.inside(l, *id)).count();
        if inside != steps {
            return Err(no_value());
        }
        self.hull_of(list.iter().filter(|(_, _, id)| !self.inside(l, *id)), 0)?
            .ok_or_else(no_value)
    }

    /// The step of loop `k` of `loops` when it is a known constant (a
    /// local the paths to the loop set to one, as `INC = 1` when the call
    /// decides `IF (INCX.GT.0)`).
    pub(super) fn step_value(&self, loops: &[Loop], k: usize) -> Option<i64> {
        let Some(step) = &loops[k].step else {
            return Some(1);
        };
        dfort_ir::dp::constant_int(self.unit, step, 0).or_else(|| {
            let i = self.interval(step, &loops[..k]).ok()?;
            i.lo.constant().filter(|_| i.is_point())
        })
    }

    /// The last index of counted loop `l` when it is an unrolled loop
    /// `DO i = mod(n, c) + 1, n, c` (`n` unchanged in the procedure): `n -
    /// c + 1`, the loop running `n / c` times.
    pub(super) fn unrolled_end(&self, l: &Loop) -> Option<Expr> {
        let c = dfort_ir::dp::constant_int(self.unit, l.step.as_ref()?, 0)?;
        if c < 2 {
            return None;
        }
        let start = self.resolved(&l.start, 0)?;
        let end = self.resolved(&l.end, 0)?;
        let text = |e: &Expr| dfort_ir::dump::expr(self.unit, e);
        let ExprKind::Binary {
            op: BinaryOp::Add,
            lhs,
            rhs,
        } = &start.kind
        else {
            return None;
        };
        let m = match (&lhs.kind, &rhs.kind) {
            (_, ExprKind::Int(1)) => lhs,
            (ExprKind::Int(1), _) => rhs,
            _ => return None,
        };
        let ExprKind::Intrinsic { name, args } = &m.kind else {
            return None;
        };
        let [a, b] = args.as_slice() else {
            return None;
        };
        let divides = name == "mod"
            && dfort_ir::dp::constant_int(self.unit, &b.value, 0) == Some(c)
            && text(&a.value) == text(&end);
        divides.then(|| {
            binary(
                BinaryOp::Sub,
                l.end.clone(),
                Expr {
                    kind: ExprKind::Int(c - 1),
                    span: l.end.span,
                },
            )
        })
    }

    /// `e` with each local replaced by the one assignment that defines
    /// it, when that reads only constants and formals the procedure never
    /// writes (so it has that value wherever it is read after it).
    fn resolved(&self, e: &Expr, depth: u32) -> Option<Expr> {
        if depth > 8 {
            return None;
        }
        let mut ok = true;
        let mut out = e.clone();
        out.walk_mut(&mut |x| match x.kind {
            ExprKind::Var(w) => {
                if self.fixed(w) {
                    return;
                }
                let ws = self.unit.symbol(w);
                let site = self.site.get();
                match self.single.get(&w) {
                    Some(rhs)
                        if ws.storage == Storage::Local
                            && ws.init.is_none()
                            && !ws.attrs.save
                            && self.single_dominates(w, site) =>
                    {
                        match self.resolved(rhs, depth + 1) {
                            Some(r) => *x = r,
                            None => ok = false,
                        }
                    }
                    _ => ok = false,
                }
            }
            _ => ok &= !reads_memory(x),
        });
        ok.then_some(out)
    }

    /// Whether the one definition of local `w` runs before `site` on
    /// every path to it.
    fn single_dominates(&self, w: SymbolId, site: Option<StmtId>) -> bool {
        let Some(site) = site else { return false };
        self.unit.stmts.iter().any(|st| {
            matches!(&st.kind, StmtKind::Assign { lhs, .. } if matches!(lhs.kind, ExprKind::Var(t) if t == w))
                && self.dominates(st.id, site)
        })
    }

    /// Whether statement `id` is one of the statements of DO `l`'s body.
    fn child_of(&self, l: StmtId, id: StmtId) -> bool {
        let (Some(p), Some(q)) = (self.paths.get(&l), self.paths.get(&id)) else {
            return false;
        };
        q.len() == p.len() + 1 && q[..p.len()] == p[..]
    }

    /// A statement inside DO `l` that may end an iteration before its
    /// body's last statement (EXIT, CYCLE), by its keyword.
    fn leaves_early(&self, l: StmtId) -> Option<&'static str> {
        let mut inner = Vec::new();
        preorder(
            self.unit,
            self.unit.stmt(l).kind.blocks().concat().as_slice(),
            &mut inner,
        );
        inner.iter().find_map(|&id| match self.unit.stmt(id).kind {
            StmtKind::Exit { .. } => Some("exit"),
            StmtKind::Cycle { .. } => Some("cycle"),
            _ => None,
        })
    }

    /// Whether `e` reads only constants, parameters and formals the
    /// procedure never writes.
    fn invariant(&self, e: &Expr) -> bool {
        let mut ok = true;
        e.walk(&mut |x| match x.kind {
            ExprKind::Var(w) => ok &= self.fixed(w),
            _ => ok &= !reads_memory(x),
        });
        ok
    }

    /// Whether `w` has one value throughout the procedure: a named
    /// constant or a formal it never writes.
    pub(super) fn fixed(&self, w: SymbolId) -> bool {
        let ws = self.unit.symbol(w);
        ws.attrs.parameter
            || (matches!(ws.storage, Storage::Dummy(_)) && !self.writes.contains_id(w))
    }

    /// Whether no statement inside DO `l` writes a variable `e` reads.
    fn unchanged_in(&self, e: &Expr, l: StmtId) -> bool {
        let mut ok = true;
        e.walk(&mut |x| match x.kind {
            ExprKind::Var(w) => {
                if self.invariant(x) {
                    return;
                }
                ok &= match self.defs.get(&w) {
                    Some(Some(list)) => !list.iter().any(|(_, _, id)| self.inside(l, *id)),
                    _ => false,
                };
            }
            _ => ok &= !reads_memory(x),
        });
        ok
    }
}

/// The step `d` of `rhs` when it is `v + d`, `d + v` or `v - d` (as
/// `-d`), `d` not reading `v`.
fn step_of(rhs: &Expr, v: SymbolId) -> Option<Expr> {
    let ExprKind::Binary { op, lhs, rhs: r } = &rhs.kind else {
        return None;
    };
    let is_v = |e: &Expr| matches!(e.kind, ExprKind::Var(x) if x == v);
    let d = match op {
        BinaryOp::Add if is_v(lhs) => (**r).clone(),
        BinaryOp::Add if is_v(r) => (**lhs).clone(),
        BinaryOp::Sub if is_v(lhs) => Expr {
            span: r.span,
            kind: ExprKind::Unary {
                op: UnaryOp::Neg,
                operand: r.clone(),
            },
        },
        _ => return None,
    };
    (!mentions(&d, v)).then_some(d)
}

fn binary(op: BinaryOp, lhs: Expr, rhs: Expr) -> Expr {
    let span = lhs.span;
    crate::checkpoint::binary(op, lhs, rhs, span)
}

/// Whether `e` itself reads memory other than a scalar variable (an array
/// element, a component, a function's result): its value may change
/// where no assignment to a variable it names is seen.
pub(super) fn reads_memory(e: &Expr) -> bool {
    matches!(
        e.kind,
        ExprKind::ArrayRef { .. }
            | ExprKind::Component { .. }
            | ExprKind::FunctionCall { .. }
            | ExprKind::Apply { .. }
    )
}
