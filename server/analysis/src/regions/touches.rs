//! Where a procedure touches an array formal: its references in each
//! statement, and the regions of the callees it passes the array to.

use super::*;

impl<'a> Ctx<'a> {
    /// The regions of `f` statement `st` itself touches (not its nested
    /// statements).
    pub(super) fn touches_in_stmt(
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
    pub(super) fn passes(&self, e: &Expr, f: SymbolId) -> bool {
        match &e.kind {
            ExprKind::Var(v) => *v == f,
            ExprKind::ArrayRef { array, subs } => {
                *array == f && subs.iter().all(|s| matches!(s, Subscript::Index(_)))
            }
            _ => false,
        }
    }

    /// The regions of `f` expression `e` touches.
    pub(super) fn touches(
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
                if subs.len() > decl.lower.len() {
                    return Err(format!("a substring of an element of `{name}`"));
                }
                let mut dims = Vec::new();
                let rank = subs.len();
                for (k, s) in subs.iter().enumerate() {
                    let leading = k + 1 < rank;
                    // A last dimension declared with an extent other than
                    // 1 (the old idiom for an assumed size) is a bound too.
                    let declared_last = !leading
                        && decl.upper[k].as_ref().is_some_and(|u| {
                            (u, &decl.lower[k]) != (&Bound::Int(1), &Bound::Int(1))
                        });
                    let d = match s {
                        Subscript::Index(i) => match self.subscript(i, loops) {
                            Ok(d) => d,
                            // A subscript stays in the declared bounds.
                            Err(_) if (leading || declared_last) && decl.upper[k].is_some() => {
                                self.declared_bounds.set(true);
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
                // Where the loops do not bound it, the box's last corner
                // does (its subscripts are in the declared bounds).
                let cap = match self.eliminate(Interval::point(off), loops) {
                    Ok(i) => i.hi,
                    Err(_) => offsets(&dims, decl.lower, decl.extents).hi,
                };
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
    pub(super) fn through_call(
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
        let known = known_args(&order, &|e| self.at_call(e, loops));
        let theirs = self
            .followed(of_formal_at(
                self.program,
                self.effects,
                self.memo,
                *c,
                k as u32,
                &known,
                self.depth + 1,
            ))
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
                if subs.len() > decl.lower.len() {
                    return Err(format!(
                        "a substring of an element of `{name}` is passed to `{callee}`"
                    ));
                }
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
}
