//! The values a subscript can take: intervals of its variables from the
//! enclosing loops, the formals' entry values and the definitions that
//! dominate it.

use super::*;

impl<'a> Ctx<'a> {
    /// The region of one subscript: a progression when it is `c + s*i`
    /// for one enclosing loop's index `i` (with `c` and `s` known on
    /// entry), else its interval.
    pub(super) fn subscript(&self, e: &Expr, loops: &[Loop]) -> Result<DimRegion, Why> {
        let counted = self.with_counters(e, loops);
        let e = &counted;
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
            let unit_step = self.step_value(loops, k) == Some(1);
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
        if let Some(&k) = inside.last() {
            if let Some(p) = self.stepped(e, loops, k) {
                return Ok(p);
            }
        }
        Ok(DimRegion::Span(self.interval(e, loops)?))
    }

    /// The progression `e` takes along loop `k` when that loop steps by a
    /// positive value `t` that is not a constant from 1 to a multiple of
    /// it ([`Ctx::stepped_trips`]): `i` is `1 + t*u` for `u` from 0 to
    /// `m - 1`, and `e` is linear in `i`.
    fn stepped(&self, e: &Expr, loops: &[Loop], k: usize) -> Option<DimRegion> {
        let l = &loops[k];
        if !linear_in(e, l.var) {
            return None;
        }
        let (t, times) = self.stepped_trips(loops, k)?;
        let outer = &loops[..k];
        let at = |v: i64| {
            let i = self.eval(e, loops, &[(l.var, v)], 0).ok()?;
            let i = self.eliminate(i, outer).ok()?;
            i.is_point().then_some(i.lo)
        };
        let (c0, c1) = (at(0)?, at(1)?);
        let slope = sub(c1.clone(), c0);
        Some(DimRegion::Progression {
            c: c1,
            s: mul(slope, t),
            from: Bound::Int(0),
            to: sub(times, Bound::Int(1)),
        })
    }

    /// The step `t` and the trip count `m` of loop `k` when it runs from 1
    /// to `m*t` by a step `t` that is positive but not a constant (the
    /// reference BLAS's `DO I = 1, N*INCX, INCX` once `INCX .LE. 0` has
    /// returned, the caller passing a leading dimension): its last index
    /// is `1 + (m - 1)*t`, not `m*t`.
    pub(super) fn stepped_trips(&self, loops: &[Loop], k: usize) -> Option<(Bound, Bound)> {
        let l = &loops[k];
        let step = l.step.as_ref()?;
        if dfort_ir::dp::constant_int(self.unit, step, 0).is_some()
            || !matches!(self.constant(step, 0), Some(Known::Positive))
        {
            return None;
        }
        let outer = &loops[..k];
        let point = |x: &Expr| {
            let i = self.interval(x, outer).ok()?;
            i.is_point().then_some(i.lo)
        };
        let (start, end, t) = (point(&l.start)?, point(&l.end)?, point(step)?);
        if start != Bound::Int(1) {
            return None;
        }
        let t0 = unmarked_clone(&t);
        let times = match unmarked_clone(&end) {
            Bound::Product(x, y) if *x == t0 => *y,
            Bound::Product(x, y) if *y == t0 => *x,
            Bound::Scale(c, x) if *x == t0 => Bound::Int(c),
            b if b == t0 => Bound::Int(1),
            _ => return None,
        };
        Some((t, times))
    }

    pub(super) fn point(&self, e: &Expr, loops: &[Loop]) -> Result<Bound, Why> {
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
    pub(super) fn interval(&self, e: &Expr, loops: &[Loop]) -> Result<Interval, Why> {
        let i = self.eval(e, loops, &[], 0)?;
        self.eliminate(i, loops)
    }

    /// `i` without the indices of `loops` (and the locals they stand for):
    /// each replaced by the values it takes, innermost first, so that
    /// what an expression says of them together (`j + jb - 1` with
    /// `jb = min(nb, n - j + 1)`) counts before they are bounded apart.
    pub(super) fn eliminate(&self, i: Interval, loops: &[Loop]) -> Result<Interval, Why> {
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
    pub(super) fn without_locals(&self, mut i: Interval) -> Interval {
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
    pub(super) fn loop_range(&self, loops: &[Loop], k: usize) -> Result<Interval, Why> {
        let l = &loops[k];
        let outer = &loops[..k];
        let s = self.eval(&l.start, outer, &[], 0)?;
        let e = self.eval(&l.end, outer, &[], 0)?;
        let step = l.step.as_ref().map(|_| self.step_value(loops, k));
        // An unrolled loop ends `step - 1` before its bound.
        let e = match self.unrolled_end(l) {
            Some(last) => self.eval(&last, outer, &[], 0)?,
            None => e,
        };
        let mut r = match (step, self.stepped_trips(loops, k)) {
            (_, Some((t, times))) => Interval {
                lo: Bound::Int(1),
                hi: add(Bound::Int(1), mul(sub(times, Bound::Int(1)), t)),
            },
            // `DO J = 1, N32, 32` with `N32 = (N/32)*32` (DLASWP's blocks
            // of 32 columns): from 1 by c to a multiple of c, the last
            // index is that multiple less c - 1.
            (Some(Some(c @ 2..)), _) if s == Interval::point(Bound::Int(1)) && e.is_point() => {
                let end = self.without_locals(e.clone()).hi;
                let hi = match multiple_of(&end, c) {
                    true => add(end, Bound::Int(1 - c)),
                    false => e.hi,
                };
                Interval { lo: s.lo, hi }
            }
            (None | Some(Some(1..)), _) => Interval { lo: s.lo, hi: e.hi },
            (Some(Some(..=-1)), _) => Interval { lo: e.lo, hi: s.hi },
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
    pub(super) fn eval(
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
            ExprKind::Intrinsic { name, args } if name == "mod" && args.len() == 2 => {
                // `mod(a, c)` has the sign of `a` and is smaller than `c`.
                let c = dfort_ir::dp::constant_int(self.unit, &args[1].value, 0)
                    .filter(|c| *c > 0)
                    .ok_or_else(|| format!("`{}` is not taken by a positive constant", text()))?;
                let a = go(&args[0].value)?;
                Ok(Interval {
                    lo: max(vec![Bound::Int(1 - c), min(vec![a.lo, Bound::Int(0)])]),
                    hi: min(vec![Bound::Int(c - 1), max(vec![a.hi, Bound::Int(0)])]),
                })
            }
            ExprKind::Intrinsic { name, args } if name == "abs" && args.len() == 1 => {
                let a = go(&args[0].value)?;
                Ok(Interval {
                    lo: max(vec![Bound::Int(0), a.lo.clone(), neg(a.hi.clone())]),
                    hi: max(vec![a.hi, neg(a.lo)]),
                })
            }
            _ => Err(format!("dfort cannot bound `{}`", text())),
        }
    }

    /// The values of variable `v` inside `loops`: an enclosing loop's
    /// index as itself; a local one definition gives on every path to
    /// the statement being read (`self.site`) as that definition's value;
    /// another local as the hull of its definitions' values.
    pub(super) fn variable(
        &self,
        v: SymbolId,
        loops: &[Loop],
        depth: u32,
    ) -> Result<Interval, Why> {
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
                        let why = match self.counter(v, loops) {
                            Ok(counted) => {
                                let rest = self.eval(&counted.rest, loops, &[], depth + 1)?;
                                let init = match counted.init {
                                    Ok(e) => self.eval(&e, loops, &[], depth + 1)?,
                                    Err(hull) => hull,
                                };
                                return Ok(Interval {
                                    lo: add(init.lo, rest.lo),
                                    hi: add(init.hi, rest.hi),
                                });
                            }
                            Err(why) => why,
                        };
                        // Redefined from its own value once (`n32 = n32 +
                        // 1` after `n32 = (n/32)*32`), not in a loop: the
                        // definition reaching the statement, read where it
                        // stands.
                        let exact = self.exact_definition(list, loops).ok_or(why)?;
                        return self.read_where_it_stands(exact, depth + 1);
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
                    self.hull_of(list.iter(), depth + 1)?
                        .ok_or_else(|| format!("`{}` is never defined", sym.name))
                }
                _ => Err(format!(
                    "`{}` is defined other than by assignments",
                    sym.name
                )),
            },
            _ => Err(format!("`{}` is not a local or formal integer", sym.name)),
        }
    }

    /// The values the right-hand side of definition `def` gives, read at
    /// its statement, without the loops around it.
    pub(super) fn read_where_it_stands(
        &self,
        def: &Definition,
        depth: u32,
    ) -> Result<Interval, Why> {
        let (rhs, at, id) = def;
        let outer = self.site.replace(Some(*id));
        let i = self
            .eval(rhs, at, &[], depth)
            .and_then(|i| self.eliminate(i, at));
        self.site.set(outer);
        i
    }

    /// The hull of what the definitions `defs` give ([`Ctx::read_where_it_stands`]);
    /// `None` when there is none.
    pub(super) fn hull_of<'d>(
        &self,
        defs: impl Iterator<Item = &'d Definition>,
        depth: u32,
    ) -> Result<Option<Interval>, Why> {
        let mut out: Option<Interval> = None;
        for d in defs {
            let i = self.read_where_it_stands(d, depth)?;
            out = Some(match out {
                None => i,
                Some(o) => o.hull(i),
            });
        }
        Ok(out)
    }

    /// Of a local's definitions `list`, the one that dominates the
    /// statement read, in the same `loops`, with no other one between
    /// them: the local's value there, exactly.
    pub(super) fn exact_definition<'d>(
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
            *d != closest.2
                && ((o > from && o < to && !self.other_arm(*d, closest.2, site))
                    || self.loop_carried(*d, closest.2, site))
        });
        (!between).then_some(closest)
    }

    /// Whether definition `d` may reach `site` around a loop that holds
    /// them both but not `closest` (it runs after `site` in one iteration
    /// and before it in the next).
    fn loop_carried(&self, d: StmtId, closest: StmtId, site: StmtId) -> bool {
        let mut at = site;
        while let Some(&p) = self.parents.get(&at) {
            if matches!(self.unit.stmt(p).kind, StmtKind::Do { .. })
                && self.inside(p, d)
                && !self.inside(p, closest)
            {
                return true;
            }
            at = p;
        }
        false
    }

    /// Whether statement `id` is inside statement `outer` (at any depth).
    pub(super) fn inside(&self, outer: StmtId, id: StmtId) -> bool {
        let (Some(p), Some(q)) = (self.paths.get(&outer), self.paths.get(&id)) else {
            return false;
        };
        q.len() > p.len() && q[..p.len()] == p[..]
    }

    /// Whether definition `d`, between `closest` (which dominates `site`)
    /// and `site` in source order, cannot run between them: `d` and
    /// `site` are in different arms of one IF, and no loop around that
    /// IF is inside `closest`'s statement list (a loop around both would
    /// run `closest` again before `site`).
    fn other_arm(&self, d: StmtId, closest: StmtId, site: StmtId) -> bool {
        let (Some(dp), Some(sp), Some(cp)) = (
            self.paths.get(&d),
            self.paths.get(&site),
            self.paths.get(&closest),
        ) else {
            return false;
        };
        // Where the two paths part: two blocks of one statement (the
        // fork, whose path has length `k`).
        let k = dp.iter().zip(sp).take_while(|(a, b)| a == b).count();
        if k == 0 || k >= dp.len() || k >= sp.len() || dp[k].0 == sp[k].0 {
            return false;
        }
        if k < cp.len() {
            // The fork is around `closest`'s list: the arm holding `site`
            // reaches it through `closest`.
            return true;
        }
        // The fork and the statements around it down from `closest`'s
        // list: no loop among them.
        let depth = |p: StmtId| self.paths.get(&p).map_or(0, |x| x.len());
        let mut at = site;
        while let Some(&p) = self.parents.get(&at) {
            if depth(p) < cp.len() {
                break;
            }
            let kind = &self.unit.stmt(p).kind;
            if depth(p) == k && !matches!(kind, StmtKind::If { .. } | StmtKind::SelectCase { .. }) {
                return false;
            }
            if depth(p) <= k && matches!(kind, StmtKind::Do { .. }) {
                return false;
            }
            at = p;
        }
        true
    }

    /// The expression a local subscript stands for (`iy` after `iy = 1 +
    /// (i - 1)*incy`), when its exact definition reads only the indices of
    /// the loops around it, formals the unit never writes and constants:
    /// read at the subscript, it has the same value, and the subscript's
    /// progression along the loop is seen (seed 51051, case 602).
    pub(super) fn plain_definition(&self, v: SymbolId, loops: &[Loop]) -> Option<&Expr> {
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
            ExprKind::Var(w) => plain &= at.iter().any(|l| l.var == *w) || self.fixed(*w),
            _ => plain &= !counters::reads_memory(x),
        });
        plain.then_some(rhs)
    }

    /// Whether statement `def` runs before `site` on every path to it: no
    /// jumps in the unit, and `def` precedes, in its own statement list,
    /// the statement that is or holds `site`.
    pub(super) fn dominates(&self, def: StmtId, site: StmtId) -> bool {
        if self.jumps {
            return false;
        }
        // A statement of an arm known to be taken runs when its IF does.
        let mut def = def;
        while let Some(&p) = self.lifted.borrow().get(&def) {
            if self.inside(p, site) {
                break;
            }
            def = p;
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

/// Whether bound `b` is `c` times an integer (`c*x`, or `x*c`).
fn multiple_of(b: &Bound, c: i64) -> bool {
    match unmarked(b) {
        Bound::Int(v) => v % c == 0,
        Bound::Scale(k, _) => k % c == 0,
        Bound::Product(x, y) => [x, y]
            .iter()
            .any(|f| matches!(unmarked(f), Bound::Int(v) if v % c == 0)),
        _ => false,
    }
}
