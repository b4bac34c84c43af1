//! The region of a global (a member of a COMMON block, a module
//! variable) that a procedure and the procedures it calls can touch: the
//! same boxes as for an array formal ([`super::of_formal`]), from the
//! procedure's own references to the global and from the regions its
//! callees touch, each seen through the call's actuals. A model that
//! keeps its state in COMMON blocks and passes the level and the tile as
//! arguments (`call calc_gt(bi, bj, k, …)` writing `gt(:, :, k, bi, bj)`)
//! then saves one level of one tile around the call, not the whole field.
//!
//! Contract: sound as [`super::of_formal`] is. The global's subscripts are
//! the same in every unit: each unit on the way that declares it must
//! declare it with the shape the caller gives (constant bounds), else
//! there is no region. Calls through procedures without source, recursive
//! ones, or deeper than the formal regions go leave no region either. A
//! unit on the way that passes the global on as an actual argument is
//! followed into the formal's region. Results are kept for the run
//! ([`RegionMemo`]).

use super::*;
use crate::dep::{global_key, GlobalKey};

/// The declared shape of a global: constant lower and upper bounds.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct GlobalShape {
    pub lower: Vec<i64>,
    pub upper: Vec<i64>,
}

/// The shape `unit` declares for its array `s`, when every bound is a
/// constant.
pub fn global_shape(unit: &Unit, s: SymbolId) -> Option<GlobalShape> {
    let sym = unit.symbol(s);
    if sym.rank() == 0 || sym.attrs.pointer || sym.attrs.allocatable {
        return None;
    }
    let mut shape = GlobalShape {
        lower: Vec::new(),
        upper: Vec::new(),
    };
    for d in &sym.dims {
        if d.kind != DimKind::Explicit {
            return None;
        }
        let lo = match &d.lower {
            Some(e) => dfort_ir::dp::constant_int(unit, e, 0)?,
            None => 1,
        };
        let hi = dfort_ir::dp::constant_int(unit, d.upper.as_ref()?, 0)?;
        shape.lower.push(lo);
        shape.upper.push(hi);
    }
    Some(shape)
}

/// The region of the global `key` (of shape `shape`) that unit `c` and
/// its callees can touch when `c` is called with the known values
/// `known`, in the global's own subscripts; bounds in terms of `c`'s
/// formals. `memo` keeps the regions found in this run.
pub fn of_global(
    program: &Program,
    effects: &ProgramEffects,
    memo: &RegionMemo,
    c: UnitId,
    key: &GlobalKey,
    shape: &GlobalShape,
    known: &KnownArgs,
) -> Result<FormalRegion, Why> {
    of_global_at(program, effects, memo, c, key, shape, known, 0).0
}

/// [`of_global`] asked `depth` calls down, with the number of calls below
/// it that the answer followed.
#[allow(clippy::too_many_arguments)]
fn of_global_at(
    program: &Program,
    effects: &ProgramEffects,
    memo: &RegionMemo,
    c: UnitId,
    key: &GlobalKey,
    shape: &GlobalShape,
    known: &KnownArgs,
    depth: u32,
) -> (Result<FormalRegion, Why>, u32) {
    let unit = program.unit(c);
    if program.call_graph.recursive.get(c).copied().unwrap_or(true) {
        return (Err(format!("`{}` is recursive", unit.name)), 0);
    }
    if depth > MAX_DEPTH {
        return (Err("the calls nest too deeply".into()), 0);
    }
    let query = (c, (key.clone(), shape.clone(), known.clone()));
    if let Some(answer) = memo.global(&query, depth) {
        return answer;
    }
    let ctx = Ctx::new(program, unit, effects, memo, known.clone(), depth);
    let answer = (ctx.region_of_global(key, shape), ctx.below.get());
    memo.keep_global(query, &answer, depth);
    answer
}

/// The procedures statement `st` references (its CALL and the functions
/// in its expressions), with their actuals.
fn references(st: &Stmt) -> Vec<(&str, &CallTarget, &[Arg])> {
    fn walk<'s>(e: &'s Expr, out: &mut Vec<(&'s str, &'s CallTarget, &'s [Arg])>) {
        if let ExprKind::FunctionCall { name, target, args } = &e.kind {
            out.push((name.as_str(), target, args.as_slice()));
        }
        for c in e.children() {
            walk(c, out);
        }
    }
    let mut out = Vec::new();
    if let StmtKind::Call { name, target, args } = &st.kind {
        out.push((name.as_str(), target, args.as_slice()));
        for a in args {
            walk(&a.value, &mut out);
        }
        return out;
    }
    for e in st.kind.exprs() {
        walk(e, &mut out);
    }
    out
}

impl Ctx<'_> {
    fn region_of_global(&self, key: &GlobalKey, shape: &GlobalShape) -> Result<FormalRegion, Why> {
        let mine = self
            .unit
            .symbols
            .indices()
            .find(|&s| global_key(self.program, self.unit, s).as_ref() == Some(key));
        if let Some(s) = mine {
            if global_shape(self.unit, s).as_ref() != Some(shape) {
                return Err(format!(
                    "`{}` declares `{}` with another shape",
                    self.unit.name,
                    self.unit.symbol(s).name
                ));
            }
        }
        let lower: Vec<Bound> = shape.lower.iter().map(|&v| Bound::Int(v)).collect();
        let upper: Vec<Option<Bound>> = shape.upper.iter().map(|&v| Some(Bound::Int(v))).collect();
        let extents: Vec<Bound> = (0..lower.len().saturating_sub(1))
            .map(|k| Bound::Int(shape.upper[k] - shape.lower[k] + 1))
            .collect();
        let pieces = self.pieces(&lower, &upper, &extents, |st, loops, decl, pieces| {
            if let Some(s) = mine {
                // Passed on as an actual, the global is followed into the
                // formal's region.
                self.touches_in_stmt(st, s, loops, decl, pieces)?;
            }
            for (name, target, args) in references(st) {
                let reaches = |t: UnitId| {
                    self.effects.get(t).is_some_and(|fx| {
                        fx.read_globals.contains(key) || fx.written_globals.contains(key)
                    })
                };
                match target {
                    CallTarget::Unit(t) if reaches(*t) => {
                        pieces.push(self.global_through_call(name, *t, args, key, shape, loops)?)
                    }
                    _ => {}
                }
            }
            Ok(())
        })?;
        Ok(assemble(pieces, lower, upper, extents))
    }

    /// The region of the global that the call to `t` (named `name`, with
    /// actuals `args`, inside `loops`) touches, in our terms.
    #[allow(clippy::too_many_arguments)]
    fn global_through_call(
        &self,
        name: &str,
        t: UnitId,
        args: &[Arg],
        key: &GlobalKey,
        shape: &GlobalShape,
        loops: &[Loop],
    ) -> Result<Piece, Why> {
        let cu = self.program.unit(t);
        let order = crate::checkpoint::in_formal_order(cu, args);
        let known = known_args(&order, &|e| self.at_call(e, loops));
        let theirs = self
            .followed(of_global_at(
                self.program,
                self.effects,
                self.memo,
                t,
                key,
                shape,
                &known,
                self.depth + 1,
            ))
            .map_err(|w| format!("in `{name}`, {w}"))?;
        let mut used = Vec::new();
        for d in &theirs.dims {
            let (a, b, s) = d.triplet();
            for x in [a, b, s] {
                x.formals(&mut used);
            }
        }
        theirs.cap.formals(&mut used);
        let mut actuals: BTreeMap<u32, Interval> = BTreeMap::new();
        for j in used {
            let Some(Some(a)) = order.get(j as usize) else {
                return Err(format!(
                    "the region `{name}` touches depends on an absent argument"
                ));
            };
            actuals.insert(j, self.eval(&a.value, loops, &[], 0)?);
        }
        // Flattened to element offsets (`assemble`'s second form).
        let boxed = theirs.dims.len() == shape.lower.len()
            && theirs.lower
                == shape
                    .lower
                    .iter()
                    .map(|&v| Bound::Int(v))
                    .collect::<Vec<_>>();
        let cap = substitute(&theirs.cap, &actuals, true).hi;
        if !boxed {
            let first = match theirs.dims.first() {
                Some(d) => sub(
                    substitute(&d.clone().span().lo, &actuals, false).lo,
                    Bound::Int(1),
                ),
                None => Bound::Int(0),
            };
            let span = Interval { lo: first, hi: cap };
            return Ok(Piece::Linear(self.eliminate(span, loops)?));
        }
        let mut dims = Vec::new();
        for d in theirs.dims {
            let sp = d.span();
            let lo = substitute(&sp.lo, &actuals, false).lo;
            let hi = substitute(&sp.hi, &actuals, true).hi;
            dims.push(DimRegion::Span(self.eliminate(Interval { lo, hi }, loops)?));
        }
        let cap = self.eliminate(Interval::point(cap), loops)?.hi;
        Ok(Piece::Rect(dims, cap))
    }
}
