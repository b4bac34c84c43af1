//! Issue 19: callees in the style of the BLAS, whose array formals are
//! assumed-size (`x(*)`, `a(lda, *)`) or of explicit shape given by their
//! integer formals (`x(1 + (m - 1)*incx)`, `a(lda, k)`), called with
//! elements of the caller's arrays (sequence association: `call
//! fz_q1(3, t1(2), 2, y(1), 1)`, `a(1, j)`, rows `a(i, 1)` walked with an
//! increment of the leading dimension) and with the same array passed as
//! several actuals (`call fz_q2(m, k, sq(1, j + 1), n, sq(1, j), 1,
//! sq(j, j + 1), n)`, `f = fz_q3(n, x(1), 1, x(1), 1)`).
//!
//! The callees: an AXPY-like update of `y` from `x` with or without
//! increments, a dot-product-like function, a GEMV-like update selected
//! by a `'N'`/`'T'` flag or not, and a routine that calls the AXPY-like
//! one on each column or on blocks of each row of its matrix (its region
//! found through the inner call). Their loops run to counts among their
//! formals, with indices through `1 + (i - 1)*inc`, integer locals set
//! once (`jb = min(nb, m - jj + 1)`), and `min` in bounds.
//!
//! Validity by construction, checked by simulation: each candidate call
//! is run here on its integer values (every iteration of a loop around
//! it), which gives the elements each actual's formal reads and writes;
//! a call is kept only when every element lies inside its actual (and an
//! explicit-shape formal's whole extent does), every subscript inside
//! the formal's declared bounds, and no element written through one
//! formal is touched through another (read-only actuals may overlap).
//! Counts are at least one, so that no loop the region of a formal
//! comes from runs zero times.

use super::super::ast::*;
use super::{add_to, counted, with_index, Env, Ext, Generator, RVar};
use rand::RngExt;
use std::collections::{BTreeMap, BTreeSet};

/// A formal of a sequence-association callee.
#[derive(Clone, Debug, PartialEq)]
enum SeqParam {
    /// A count of elements, rows or columns (at least one).
    Count,
    /// The increment between a vector's elements (at least one).
    Inc,
    /// The leading dimension of the matrix formal before it.
    Ld,
    /// `'N'` or `'T'`.
    Flag,
    /// A real scalar the callee reads.
    Alpha,
    /// An integer the callee counts up (`intent(inout)`): the caller
    /// passes its local `sc`, which an assignment before the call reads.
    Counter,
    /// A real array the callee writes (and reads) or only reads; its
    /// declared extents (`None`: `*`).
    Array {
        write: bool,
        dims: Vec<Option<Expr>>,
    },
}

/// A callee whose array formals take elements of the caller's arrays.
#[derive(Clone, Debug)]
pub(super) struct SeqSig {
    name: String,
    params: Vec<SeqParam>,
    proc: Proc,
}

impl SeqSig {
    fn function(&self) -> bool {
        self.proc.kind == ProcKind::Function
    }
}

/// What a call does to the elements of one actual (offsets in array
/// element order from its first element), and how many elements from
/// the actual on its formal's explicit shape needs.
#[derive(Clone, Debug, Default)]
struct Touched {
    reads: BTreeSet<i64>,
    writes: BTreeSet<i64>,
    need: i64,
}

impl Touched {
    fn all(&self) -> impl Iterator<Item = &i64> {
        self.reads.iter().chain(self.writes.iter())
    }
}

/// An array formal as the simulation sees it: the slot of the caller's
/// actual it records into, its first element's offset there, its
/// declared extents (`None`: assumed size).
#[derive(Clone, Debug)]
struct View {
    slot: usize,
    base: i64,
    extents: Vec<Option<i64>>,
}

/// One callee's run on known integer values.
struct Frame<'a> {
    sigs: &'a [SeqSig],
    proc: &'a Proc,
    ints: BTreeMap<String, i64>,
    flags: BTreeMap<String, String>,
    arrays: BTreeMap<String, View>,
    steps: usize,
    /// A RETURN ran: the rest of the body does not.
    returned: bool,
}

/// The integer value of `e` from `ints` (`+ - *`, `min`, `max`, `mod`).
fn ieval(e: &Expr, ints: &BTreeMap<String, i64>) -> Option<i64> {
    match e {
        Expr::Lit(t) => t.parse().ok(),
        Expr::Var(v) => ints.get(v).copied(),
        Expr::Neg(a) => ieval(a, ints).map(|v| -v),
        Expr::Bin(op, a, b) => {
            let (a, b) = (ieval(a, ints)?, ieval(b, ints)?);
            match *op {
                "+" => Some(a + b),
                "-" => Some(a - b),
                "*" => Some(a * b),
                "/" => a.checked_div(b),
                _ => None,
            }
        }
        Expr::Call(f, args) if f == "mod" && args.len() == 2 => {
            let (a, b) = (ieval(&args[0], ints)?, ieval(&args[1], ints)?);
            a.checked_rem(b)
        }
        Expr::Call(f, args) if (f == "min" || f == "max") && !args.is_empty() => {
            let vals: Option<Vec<i64>> = args.iter().map(|a| ieval(a, ints)).collect();
            let vals = vals?;
            if f == "min" {
                vals.into_iter().min()
            } else {
                vals.into_iter().max()
            }
        }
        _ => None,
    }
}

/// A character literal's value (`'N'` is `N`).
fn char_lit(e: &Expr) -> Option<String> {
    match e {
        Expr::Lit(t) if t.len() >= 2 && t.starts_with('\'') && t.ends_with('\'') => {
            Some(t[1..t.len() - 1].to_string())
        }
        _ => None,
    }
}

impl<'a> Frame<'a> {
    fn is_int_local(&self, v: &str) -> bool {
        self.proc
            .decls
            .iter()
            .any(|d| d.name == v && d.ty == "integer" && d.intent.is_none())
    }

    fn flag(&self, e: &Expr) -> Option<String> {
        match e {
            Expr::Var(v) => self.flags.get(v).cloned(),
            _ => char_lit(e),
        }
    }

    fn cond(&self, e: &Expr) -> Option<bool> {
        match e {
            Expr::Bin(op @ ("==" | "/="), a, b) => {
                let same = match (self.flag(a), self.flag(b)) {
                    (Some(a), Some(b)) => a == b,
                    _ => ieval(a, &self.ints)? == ieval(b, &self.ints)?,
                };
                Some(same == (*op == "=="))
            }
            _ => None,
        }
    }

    /// The offset of `name(subs)` in its view's slot, the subscripts
    /// checked against the declared bounds.
    fn offset(&self, name: &str, subs: &[Sub]) -> Option<(usize, i64)> {
        let view = self.arrays.get(name)?;
        if subs.len() != view.extents.len() {
            return None;
        }
        let mut off = 0;
        let mut stride = 1;
        for (s, ext) in subs.iter().zip(&view.extents) {
            let Sub::At(e) = s else { return None };
            let v = ieval(e, &self.ints)?;
            if v < 1 || ext.is_some_and(|x| v > x) {
                return None;
            }
            off += (v - 1) * stride;
            stride *= ext.unwrap_or(0);
        }
        Some((view.slot, view.base + off))
    }

    fn reads(&self, e: &Expr, out: &mut [Touched]) -> Option<()> {
        match e {
            Expr::Index(name, subs) if self.arrays.contains_key(name) => {
                let (slot, off) = self.offset(name, subs)?;
                out[slot].reads.insert(off);
                Some(())
            }
            Expr::Var(v) if self.arrays.contains_key(v) => None,
            _ => e
                .children()
                .into_iter()
                .try_for_each(|c| self.reads(c, out)),
        }
    }

    fn exec(&mut self, body: &[Stmt], out: &mut [Touched]) -> Option<()> {
        for s in body {
            self.steps += 1;
            if self.returned {
                return Some(());
            }
            if self.steps > 200_000 {
                return None;
            }
            match s {
                Stmt::Return => self.returned = true,
                Stmt::Assign(Expr::Var(v), rhs) if self.is_int_local(v) => {
                    let x = ieval(rhs, &self.ints)?;
                    self.ints.insert(v.clone(), x);
                }
                Stmt::Assign(lhs, rhs) => {
                    self.reads(rhs, out)?;
                    if let Expr::Index(name, subs) = lhs {
                        if self.arrays.contains_key(name) {
                            let (slot, off) = self.offset(name, subs)?;
                            out[slot].writes.insert(off);
                        }
                    }
                }
                Stmt::Do {
                    var,
                    lo,
                    hi,
                    step,
                    body,
                    ..
                } => {
                    let lo = ieval(lo, &self.ints)?;
                    let hi = ieval(hi, &self.ints)?;
                    let st = match step {
                        Some(e) => ieval(e, &self.ints)?,
                        None => 1,
                    };
                    if st == 0 {
                        return None;
                    }
                    let mut i = lo;
                    while (st > 0 && i <= hi) || (st < 0 && i >= hi) {
                        self.ints.insert(var.clone(), i);
                        self.exec(body, out)?;
                        i += st;
                    }
                }
                Stmt::If(arms, els) => {
                    let mut taken = false;
                    for (c, b) in arms {
                        if self.cond(c)? {
                            self.exec(b, out)?;
                            taken = true;
                            break;
                        }
                    }
                    if let (false, Some(b)) = (taken, els) {
                        self.exec(b, out)?;
                    }
                }
                Stmt::Call(name, args) => {
                    let sig = self.sigs.iter().find(|s| s.name == *name)?;
                    let mut bound = Vec::new();
                    for (p, a) in sig.params.iter().zip(args) {
                        bound.push(match p {
                            SeqParam::Count | SeqParam::Inc | SeqParam::Ld => {
                                Bind::Int(ieval(a, &self.ints)?)
                            }
                            SeqParam::Flag => Bind::Flag(self.flag(a)?),
                            SeqParam::Alpha => {
                                self.reads(a, out)?;
                                Bind::None
                            }
                            SeqParam::Counter => Bind::None,
                            SeqParam::Array { .. } => match a {
                                Expr::Var(v) => {
                                    let view = self.arrays.get(v)?;
                                    Bind::Array(view.slot, view.base)
                                }
                                Expr::Index(v, subs) => {
                                    let (slot, off) = self.offset(v, subs)?;
                                    Bind::Array(slot, off)
                                }
                                _ => return None,
                            },
                        });
                    }
                    simulate(self.sigs, sig, &bound, out)?;
                }
                _ => return None,
            }
        }
        Some(())
    }
}

/// What a call passes for one formal, as the simulation sees it.
#[derive(Clone, Debug)]
enum Bind {
    Int(i64),
    Flag(String),
    /// The slot of the actual and the offset of its first element.
    Array(usize, i64),
    None,
}

/// Runs `sig` with its formals bound to `bound`, recording what it
/// touches into `out` (one slot per actual of the outermost call);
/// `None` when it leaves a formal's declared bounds or cannot be run.
fn simulate(sigs: &[SeqSig], sig: &SeqSig, bound: &[Bind], out: &mut [Touched]) -> Option<()> {
    let mut frame = Frame {
        sigs,
        proc: &sig.proc,
        ints: BTreeMap::new(),
        flags: BTreeMap::new(),
        arrays: BTreeMap::new(),
        steps: 0,
        returned: false,
    };
    for ((name, p), b) in sig.proc.args.iter().zip(&sig.params).zip(bound) {
        match (p, b) {
            (SeqParam::Count | SeqParam::Inc | SeqParam::Ld, Bind::Int(v)) => {
                frame.ints.insert(name.clone(), *v);
            }
            (SeqParam::Flag, Bind::Flag(f)) => {
                frame.flags.insert(name.clone(), f.clone());
            }
            (SeqParam::Alpha | SeqParam::Counter, _) => {}
            (SeqParam::Array { .. }, Bind::Array(..)) => {}
            _ => return None,
        }
    }
    for ((name, p), b) in sig.proc.args.iter().zip(&sig.params).zip(bound) {
        if let (SeqParam::Array { dims, .. }, Bind::Array(slot, base)) = (p, b) {
            let mut extents = Vec::new();
            for d in dims {
                extents.push(match d {
                    Some(e) => Some(ieval(e, &frame.ints)?),
                    None => None,
                });
            }
            if extents.iter().all(Option::is_some) {
                let size: i64 = extents.iter().map(|e| e.unwrap_or(0).max(0)).product();
                out[*slot].need = out[*slot].need.max(base + size);
            }
            frame.arrays.insert(
                name.clone(),
                View {
                    slot: *slot,
                    base: *base,
                    extents,
                },
            );
        }
    }
    frame.exec(&sig.proc.body, out)
}

/// An integer the caller passes or subscripts with: `c + k*sj`, `sj`
/// the index of a loop around the call (`k` is 0 without one).
#[derive(Clone, Copy, Debug)]
struct Lin {
    c: i64,
    k: i64,
}

impl Lin {
    fn at(self, sj: i64) -> i64 {
        self.c + self.k * sj
    }
}

/// A candidate actual for an array formal: a variable and the element
/// passed (`None`: the whole variable).
#[derive(Clone, Debug)]
struct Actual {
    var: RVar,
    start: Option<Vec<Lin>>,
}

/// `1 + (i - 1)*inc`, or `i` without an increment.
fn strided(i: Expr, inc: Option<&str>) -> Expr {
    match inc {
        Some(inc) => Expr::bin(
            "+",
            Expr::int(1),
            Expr::bin("*", Expr::bin("-", i, Expr::int(1)), Expr::var(inc)),
        ),
        None => i,
    }
}

fn at1(a: &str, i: Expr) -> Expr {
    Expr::at(a, vec![i])
}

/// `do var = lo, hi[, step]`.
fn do_(var: &str, lo: Expr, hi: Expr, step: Option<Expr>, body: Vec<Stmt>) -> Stmt {
    Stmt::Do {
        name: None,
        var: var.into(),
        lo,
        hi,
        step,
        body,
    }
}

fn v(name: &str) -> Expr {
    Expr::var(name)
}

impl<'r> Generator<'r> {
    /// A callee's formals and declarations from `(name, param)` pairs,
    /// with intents on the arrays or not (as the BLAS write them).
    fn seq_proc(
        &mut self,
        kind: ProcKind,
        name: &str,
        params: &[(&str, SeqParam)],
        locals: Vec<Decl>,
        body: Vec<Stmt>,
    ) -> SeqSig {
        let intents = self.chance(0.5);
        let mut decls = Vec::new();
        for (f, p) in params {
            let d = match p {
                SeqParam::Count | SeqParam::Inc | SeqParam::Ld => Decl::int(*f).with_intent("in"),
                SeqParam::Flag => Decl {
                    ty: "character(len=1)",
                    ..Decl::real(*f, Vec::new()).with_intent("in")
                },
                SeqParam::Alpha => Decl::real(*f, Vec::new()).with_intent("in"),
                SeqParam::Counter => Decl::int(*f).with_intent("inout"),
                SeqParam::Array { write, dims } => {
                    let text = dims
                        .iter()
                        .map(|d| d.as_ref().map_or("*".to_string(), Expr::print))
                        .collect();
                    let d = Decl::real(*f, text);
                    match (intents, write) {
                        (false, _) => d,
                        (true, true) => d.with_intent("inout"),
                        (true, false) => d.with_intent("in"),
                    }
                }
            };
            decls.push(d);
        }
        decls.extend(locals);
        SeqSig {
            name: name.to_string(),
            params: params.iter().map(|(_, p)| p.clone()).collect(),
            proc: Proc {
                kind,
                recursive: false,
                elemental: false,
                pure: false,
                name: name.to_string(),
                args: params.iter().map(|(f, _)| f.to_string()).collect(),
                uses: Vec::new(),
                decls,
                spec: Vec::new(),
                body,
                internal: Vec::new(),
            },
        }
    }

    /// The extent of a vector formal of `count` elements `inc` apart:
    /// `*` mostly, else `count` or `1 + (count - 1)*inc`.
    fn vector_dims(&mut self, count: &str, inc: Option<&str>) -> Vec<Option<Expr>> {
        if self.chance(0.7) {
            vec![None]
        } else {
            vec![Some(strided(v(count), inc))]
        }
    }

    /// A loop of `i` over `1..=m` around `inner(i)`: plain, or in blocks
    /// of `nb` (a local set once) whose length `jb = min(nb, m - jj + 1)`
    /// is a local set in the loop.
    fn counted_or_blocked(
        &mut self,
        i: &str,
        m: &str,
        locals: &mut Vec<Decl>,
        pre: &mut Vec<Stmt>,
        inner: Vec<Stmt>,
    ) -> Stmt {
        if self.chance(0.7) {
            return do_(i, Expr::int(1), v(m), None, inner);
        }
        for l in ["nb", "jj", "jb"] {
            if !locals.iter().any(|d| d.name == l) {
                locals.push(Decl::int(l));
            }
        }
        if !pre
            .iter()
            .any(|s| matches!(s, Stmt::Assign(Expr::Var(x), _) if x == "nb"))
        {
            pre.push(Stmt::Assign(v("nb"), Expr::int(self.range(2, 3))));
        }
        let jb = Expr::call(
            "min",
            vec![
                v("nb"),
                Expr::bin("+", Expr::bin("-", v(m), v("jj")), Expr::int(1)),
            ],
        );
        do_(
            "jj",
            Expr::int(1),
            v(m),
            Some(v("nb")),
            vec![
                Stmt::Assign(v("jb"), jb),
                do_(
                    i,
                    v("jj"),
                    Expr::bin("-", Expr::bin("+", v("jj"), v("jb")), Expr::int(1)),
                    None,
                    inner,
                ),
            ],
        )
    }

    /// A smooth update of `y` by `x` scaled by `c`.
    fn seq_update(&mut self, y: Expr, x: Expr, c: Expr) -> Expr {
        match self.rng.random_range(0..4) {
            0 => Expr::bin("+", y, Expr::bin("*", c, x)),
            1 => Expr::bin(
                "+",
                Expr::bin("*", y.clone(), Expr::call("cos", vec![x.clone()])),
                Expr::bin("*", c, x),
            ),
            2 => Expr::bin(
                "+",
                y,
                Expr::bin(
                    "*",
                    c,
                    Expr::bin("*", Expr::call("sin", vec![x.clone()]), x),
                ),
            ),
            _ => Expr::bin(
                "+",
                y.clone(),
                Expr::bin(
                    "/",
                    Expr::bin("*", c, x),
                    Expr::bin("+", Expr::lit("1.0d0"), Expr::bin("**", y, Expr::int(2))),
                ),
            ),
        }
    }

    /// `subroutine fz_qK(m[, al], x[, incx], y[, incy])`: `y(iy) =
    /// f(y(iy), x(ix))` for the `m` elements, the indices written out or
    /// set in integer locals, a neighbour `x(max(i - 1, 1))` read or not.
    fn axpy_callee(&mut self) -> SeqSig {
        let name = self.fresh("fz_q");
        // Issue 41: the reference BLAS's forms (an unrolled loop has no
        // increments).
        let reference = self.chance(0.4);
        let unrolled = reference && self.chance(0.5);
        let incx = (!unrolled && self.chance(0.6)).then_some("incx");
        let incy = (!unrolled && self.chance(0.5)).then_some("incy");
        let alpha = self.chance(0.4);
        let mut params = vec![("m", SeqParam::Count)];
        if alpha {
            params.push(("al", SeqParam::Alpha));
        }
        let xd = self.vector_dims("m", incx);
        params.push((
            "x",
            SeqParam::Array {
                write: false,
                dims: xd,
            },
        ));
        if let Some(i) = incx {
            params.push((i, SeqParam::Inc));
        }
        let yd = self.vector_dims("m", incy);
        params.push((
            "y",
            SeqParam::Array {
                write: true,
                dims: yd,
            },
        ));
        if let Some(i) = incy {
            params.push((i, SeqParam::Inc));
        }
        let c = if alpha { v("al") } else { self.literal() };
        if reference {
            let body = match incx.or(incy) {
                Some(_) => self.counter_axpy(incx, incy, c),
                None => self.unrolled_axpy(c),
            };
            let mut locals = vec![Decl::int("i")];
            locals.extend(["ix", "iy", "m4"].map(Decl::int));
            return self.seq_proc(ProcKind::Subroutine, &name, &params, locals, body);
        }
        let mut locals = vec![Decl::int("i")];
        let mut pre = Vec::new();
        let mut inner = Vec::new();
        let (ix, iy) = if (incx.is_some() || incy.is_some()) && self.chance(0.4) {
            // The indices in integer locals set in the loop.
            locals.push(Decl::int("ix"));
            locals.push(Decl::int("iy"));
            inner.push(Stmt::Assign(v("ix"), strided(v("i"), incx)));
            inner.push(Stmt::Assign(v("iy"), strided(v("i"), incy)));
            (v("ix"), v("iy"))
        } else {
            (strided(v("i"), incx), strided(v("i"), incy))
        };
        let mut rhs = self.seq_update(at1("y", iy.clone()), at1("x", ix), c);
        if self.chance(0.25) {
            // A neighbour too: x(max(i - 1, 1)).
            let left = Expr::call(
                "max",
                vec![Expr::bin("-", v("i"), Expr::int(1)), Expr::int(1)],
            );
            rhs = Expr::bin(
                "+",
                rhs,
                Expr::bin("*", Expr::lit("0.25d0"), at1("x", strided(left, incx))),
            );
        }
        inner.push(Stmt::Assign(at1("y", iy), rhs));
        let lp = self.counted_or_blocked("i", "m", &mut locals, &mut pre, inner);
        pre.push(lp);
        self.seq_proc(ProcKind::Subroutine, &name, &params, locals, pre)
    }

    /// The body of an AXPY-like update walking `x` and `y` with counters
    /// (`ix = 1` before the loop, `ix = ix + incx` last in its body, as
    /// the reference BLAS do), a vector without an increment by the index.
    fn counter_axpy(&mut self, incx: Option<&str>, incy: Option<&str>, c: Expr) -> Vec<Stmt> {
        let walk = |inc: Option<&str>, k: &str| match inc {
            Some(_) => v(k),
            None => v("i"),
        };
        let (ix, iy) = (walk(incx, "ix"), walk(incy, "iy"));
        let rhs = self.seq_update(at1("y", iy.clone()), at1("x", ix), c);
        let mut inner = vec![Stmt::Assign(at1("y", iy), rhs)];
        let mut pre = Vec::new();
        for (inc, k) in [(incx, "ix"), (incy, "iy")] {
            if let Some(inc) = inc {
                pre.push(Stmt::Assign(v(k), Expr::int(1)));
                inner.push(add_to(v(k), v(inc)));
            }
        }
        pre.push(do_("i", Expr::int(1), v("m"), None, inner));
        pre
    }

    /// The body of an AXPY-like update without increments unrolled by 4
    /// after a clean-up loop of `mod(m, 4)` iterations.
    fn unrolled_axpy(&mut self, c: Expr) -> Vec<Stmt> {
        let at = |k: i64| match k {
            0 => v("i"),
            k => Expr::bin("+", v("i"), Expr::int(k)),
        };
        let step = |g: &mut Self, k: i64| {
            let rhs = g.seq_update(at1("y", at(k)), at1("x", at(k)), c.clone());
            Stmt::Assign(at1("y", at(k)), rhs)
        };
        let clean = vec![step(self, 0)];
        let unrolled: Vec<Stmt> = (0..4).map(|k| step(self, k)).collect();
        vec![
            Stmt::Assign(v("m4"), Expr::call("mod", vec![v("m"), Expr::int(4)])),
            do_("i", Expr::int(1), v("m4"), None, clean),
            do_(
                "i",
                Expr::bin("+", v("m4"), Expr::int(1)),
                v("m"),
                Some(Expr::int(4)),
                unrolled,
            ),
        ]
    }

    /// `function fz_qK(m, x[, incx], y[, incy])`: a sum over the `m`
    /// elements of products of `x` and `y`.
    fn dot_callee(&mut self) -> SeqSig {
        let name = self.fresh("fz_q");
        let incx = self.chance(0.5).then_some("incx");
        let incy = self.chance(0.5).then_some("incy");
        let mut params = vec![("m", SeqParam::Count)];
        let xd = self.vector_dims("m", incx);
        params.push((
            "x",
            SeqParam::Array {
                write: false,
                dims: xd,
            },
        ));
        if let Some(i) = incx {
            params.push((i, SeqParam::Inc));
        }
        let yd = self.vector_dims("m", incy);
        params.push((
            "y",
            SeqParam::Array {
                write: false,
                dims: yd,
            },
        ));
        if let Some(i) = incy {
            params.push((i, SeqParam::Inc));
        }
        let r = format!("{name}_r");
        let xi = at1("x", strided(v("i"), incx));
        let yi = at1("y", strided(v("i"), incy));
        let term = match self.rng.random_range(0..3) {
            0 => Expr::bin("*", xi, yi),
            1 => Expr::bin("*", Expr::call("sin", vec![xi]), yi),
            _ => Expr::bin(
                "*",
                Expr::bin("*", xi.clone(), xi),
                Expr::call("cos", vec![yi]),
            ),
        };
        let mut locals = vec![Decl::int("i")];
        let mut body = vec![Stmt::Assign(v(&r), Expr::lit("0.0d0"))];
        let inner = vec![add_to(v(&r), term)];
        let lp = self.counted_or_blocked("i", "m", &mut locals, &mut body, inner);
        body.push(lp);
        self.seq_proc(ProcKind::Function, &name, &params, locals, body)
    }

    /// `subroutine fz_qK([trans,] m, k[, al], a, lda, x[, incx], y[,
    /// incy])`: `y = y + al*op(a)*x` for the `m` by `k` matrix `a(lda,
    /// *)`, `op` chosen by the flag (or fixed); a band `i <= min(m, j +
    /// 1)` or blocks of columns, a temporary or not.
    fn gemv_callee(&mut self) -> SeqSig {
        let name = self.fresh("fz_q");
        let flag = self.chance(0.5);
        let fixed_t = !flag && self.chance(0.3);
        let incx = self.chance(0.4).then_some("incx");
        let incy = self.chance(0.4).then_some("incy");
        let alpha = self.chance(0.5);
        let mut params = Vec::new();
        if flag {
            params.push(("trans", SeqParam::Flag));
        }
        params.push(("m", SeqParam::Count));
        params.push(("k", SeqParam::Count));
        if alpha {
            params.push(("al", SeqParam::Alpha));
        }
        let last = if self.chance(0.3) { Some(v("k")) } else { None };
        params.push((
            "a",
            SeqParam::Array {
                write: false,
                dims: vec![Some(v("lda")), last],
            },
        ));
        params.push(("lda", SeqParam::Ld));
        // Without a flag, x has k elements (m transposed), y m (k).
        let (xn, yn) = if fixed_t { ("m", "k") } else { ("k", "m") };
        let xd = if flag {
            vec![None]
        } else {
            self.vector_dims(xn, incx)
        };
        params.push((
            "x",
            SeqParam::Array {
                write: false,
                dims: xd,
            },
        ));
        if let Some(i) = incx {
            params.push((i, SeqParam::Inc));
        }
        let yd = if flag {
            vec![None]
        } else {
            self.vector_dims(yn, incy)
        };
        params.push((
            "y",
            SeqParam::Array {
                write: true,
                dims: yd,
            },
        ));
        if let Some(i) = incy {
            params.push((i, SeqParam::Inc));
        }
        let mut locals = vec![
            Decl::int("i"),
            Decl::int("j"),
            Decl::real("tmp", Vec::new()),
        ];
        let mut pre = Vec::new();
        let band = self.chance(0.3);
        let rows = |band: bool| {
            if band {
                Expr::call("min", vec![v("m"), Expr::bin("+", v("j"), Expr::int(1))])
            } else {
                v("m")
            }
        };
        let c = if alpha { v("al") } else { self.literal() };
        let aij = if self.chance(0.3) {
            Expr::call(
                "sin",
                vec![Expr::Index(
                    "a".into(),
                    vec![Sub::At(v("i")), Sub::At(v("j"))],
                )],
            )
        } else {
            Expr::Index("a".into(), vec![Sub::At(v("i")), Sub::At(v("j"))])
        };
        // y(i) += c*a(i, j)*x(j)
        let yi = at1("y", strided(v("i"), incy));
        let n_inner = vec![
            Stmt::Assign(
                v("tmp"),
                Expr::bin("*", c.clone(), at1("x", strided(v("j"), incx))),
            ),
            do_(
                "i",
                Expr::int(1),
                rows(band),
                None,
                vec![Stmt::Assign(
                    yi.clone(),
                    Expr::bin("+", yi, Expr::bin("*", v("tmp"), aij.clone())),
                )],
            ),
        ];
        // y(j) += c*sum_i a(i, j)*x(i)
        let yj = at1("y", strided(v("j"), incy));
        let t_inner = vec![
            Stmt::Assign(v("tmp"), Expr::lit("0.0d0")),
            do_(
                "i",
                Expr::int(1),
                rows(band),
                None,
                vec![add_to(
                    v("tmp"),
                    Expr::bin("*", aij, at1("x", strided(v("i"), incx))),
                )],
            ),
            Stmt::Assign(yj.clone(), Expr::bin("+", yj, Expr::bin("*", c, v("tmp")))),
        ];
        let n_loop = self.counted_or_blocked("j", "k", &mut locals, &mut pre, n_inner);
        let t_loop = self.counted_or_blocked("j", "k", &mut locals, &mut pre, t_inner);
        let body_loop = if flag {
            Stmt::If(
                vec![(Expr::bin("==", v("trans"), Expr::lit("'N'")), vec![n_loop])],
                Some(vec![t_loop]),
            )
        } else if fixed_t {
            t_loop
        } else {
            n_loop
        };
        pre.push(body_loop);
        self.seq_proc(ProcKind::Subroutine, &name, &params, locals, pre)
    }

    /// `subroutine fz_qK(m, a, lda, x)`: a triangular solve in place, as
    /// the reference DTRSV and DTRSM do it: forward (`x(i) = x(i) -
    /// x(k)*a(i, k)` for i > k, the diagonal divided out or not),
    /// backward (k running down, i < k), or by dot products (`x(k)`
    /// from the `x(i)` before it). The reads of `x` are of final values,
    /// so the writes record nothing of it ([`dfort_analysis::final_reads`])
    /// — except in the variant reading `x(k + 1)`, which the same step
    /// overwrites.
    fn trsv_callee(&mut self) -> SeqSig {
        let name = self.fresh("fz_q");
        let last = if self.chance(0.3) { Some(v("m")) } else { None };
        let params = [
            ("m", SeqParam::Count),
            (
                "a",
                SeqParam::Array {
                    write: false,
                    dims: vec![Some(v("lda")), last],
                },
            ),
            ("lda", SeqParam::Ld),
            (
                "x",
                SeqParam::Array {
                    write: true,
                    dims: self.vector_dims("m", None),
                },
            ),
        ];
        let a = |i: &str, j: &str| Expr::Index("a".into(), vec![Sub::At(v(i)), Sub::At(v(j))]);
        let divide = |g: &mut Self| {
            g.chance(0.5).then(|| {
                Stmt::Assign(
                    at1("x", v("k")),
                    Expr::bin(
                        "/",
                        at1("x", v("k")),
                        Expr::bin(
                            "+",
                            Expr::lit("2.0d0"),
                            Expr::bin("**", a("k", "k"), Expr::int(2)),
                        ),
                    ),
                )
            })
        };
        let next = Expr::bin("+", v("k"), Expr::int(1));
        let update = |xk: Expr| {
            Stmt::Assign(
                at1("x", v("i")),
                Expr::bin(
                    "-",
                    at1("x", v("i")),
                    Expr::bin("*", Expr::bin("*", Expr::lit("0.5d0"), xk), a("i", "k")),
                ),
            )
        };
        let mut locals = vec![Decl::int("i"), Decl::int("k")];
        let body = match self.rng.random_range(0..4) {
            0 | 1 => {
                // Forward; now and then a read the same step overwrites.
                let xk = if self.chance(0.2) {
                    at1("x", next.clone())
                } else {
                    at1("x", v("k"))
                };
                let mut step: Vec<Stmt> = divide(self).into_iter().collect();
                step.push(do_("i", next, v("m"), None, vec![update(xk)]));
                do_("k", Expr::int(1), v("m"), None, step)
            }
            2 => {
                let mut step = vec![do_(
                    "i",
                    Expr::int(1),
                    Expr::bin("-", v("k"), Expr::int(1)),
                    None,
                    vec![update(at1("x", v("k")))],
                )];
                step.extend(divide(self));
                do_("k", v("m"), Expr::int(1), Some(Expr::int(-1)), step)
            }
            _ => {
                locals.push(Decl::real("tmp", Vec::new()));
                let step = vec![
                    Stmt::Assign(v("tmp"), at1("x", v("k"))),
                    do_(
                        "i",
                        Expr::int(1),
                        Expr::bin("-", v("k"), Expr::int(1)),
                        None,
                        vec![Stmt::Assign(
                            v("tmp"),
                            Expr::bin(
                                "-",
                                v("tmp"),
                                Expr::bin(
                                    "*",
                                    Expr::bin("*", Expr::lit("0.5d0"), a("i", "k")),
                                    at1("x", v("i")),
                                ),
                            ),
                        )],
                    ),
                    Stmt::Assign(at1("x", v("k")), v("tmp")),
                ];
                do_("k", Expr::int(1), v("m"), None, step)
            }
        };
        self.seq_proc(ProcKind::Subroutine, &name, &params, locals, vec![body])
    }

    /// Issue 41: `recursive subroutine fz_qK(m[, al], x)` on the halves
    /// of its vector, as LAPACK's DGETRF2 and DPOTRF2 recurse on halves of
    /// their matrix: one element is updated in place; longer vectors
    /// call it on `x` (the first `h = m/2` elements) and on `x(h + 1)`
    /// (the rest), and combine the halves before or after. The base case
    /// returns early (a RETURN with statements after it, as DPOTRF2's)
    /// or is an arm of an IF block.
    fn halves_callee(&mut self) -> SeqSig {
        let name = self.fresh("fz_q");
        let alpha = self.chance(0.5);
        let mut params = vec![("m", SeqParam::Count)];
        if alpha {
            params.push(("al", SeqParam::Alpha));
        }
        let dims = match self.chance(0.7) {
            true => vec![None],
            false => vec![Some(v("m"))],
        };
        params.push(("x", SeqParam::Array { write: true, dims }));
        // A count of the base cases, in an integer the caller passes.
        let counter = self.chance(0.5);
        if counter {
            params.push(("cnt", SeqParam::Counter));
        }
        let c = if alpha { v("al") } else { self.literal() };
        let call = |m: Expr, x: Expr| {
            let mut a = vec![m];
            if alpha {
                a.push(v("al"));
            }
            a.push(x);
            if counter {
                a.push(v("cnt"));
            }
            Stmt::Call(name.clone(), a)
        };
        let one = at1("x", Expr::int(1));
        let mut base = vec![Stmt::Assign(
            one.clone(),
            self.seq_update(one.clone(), one.clone(), c.clone()),
        )];
        if counter {
            base.push(add_to(v("cnt"), Expr::int(1)));
        }
        // x(h) = x(h) + c*x(h + 1)*x(m) or x(1) = x(1) - c*sin(x(m)):
        // the halves meet.
        let h1 = Expr::bin("+", v("h"), Expr::int(1));
        let combine = match self.chance(0.5) {
            true => Stmt::Assign(
                at1("x", v("h")),
                Expr::bin(
                    "+",
                    at1("x", v("h")),
                    Expr::bin(
                        "*",
                        c.clone(),
                        Expr::bin("*", at1("x", h1.clone()), at1("x", v("m"))),
                    ),
                ),
            ),
            false => Stmt::Assign(
                one.clone(),
                Expr::bin(
                    "-",
                    one.clone(),
                    Expr::bin("*", c, Expr::call("sin", vec![at1("x", v("m"))])),
                ),
            ),
        };
        let mut split = vec![
            Stmt::Assign(v("h"), Expr::bin("/", v("m"), Expr::int(2))),
            call(v("h"), v("x")),
            call(Expr::bin("-", v("m"), v("h")), at1("x", h1)),
        ];
        match self.chance(0.5) {
            true => split.push(combine),
            false => split.insert(1, combine),
        }
        let is_one = Expr::bin("==", v("m"), Expr::int(1));
        let body = match self.chance(0.5) {
            true => {
                base.push(Stmt::Return);
                let mut b = vec![Stmt::If(vec![(is_one, base)], None)];
                b.extend(split);
                b
            }
            false => vec![Stmt::If(vec![(is_one, base)], Some(split))],
        };
        let mut sig = self.seq_proc(
            ProcKind::Subroutine,
            &name,
            &params,
            vec![Decl::int("h")],
            body,
        );
        sig.proc.recursive = true;
        sig
    }

    /// `subroutine fz_qK(m, k, a, lda, y)` calling the AXPY-like `inner`
    /// on each column `a(1, j)` into `y(1:m)`, or (with an increment) on
    /// blocks of each row, `a(i, jj)` `lda` apart into `y(jj:)`, `jb =
    /// min(nb, k - jj + 1)` long.
    fn wrap_callee(&mut self, inner: &SeqSig) -> SeqSig {
        let name = self.fresh("fz_q");
        let params = vec![
            ("m", SeqParam::Count),
            ("k", SeqParam::Count),
            (
                "a",
                SeqParam::Array {
                    write: false,
                    dims: vec![Some(v("lda")), None],
                },
            ),
            ("lda", SeqParam::Ld),
            (
                "y",
                SeqParam::Array {
                    write: true,
                    dims: vec![None],
                },
            ),
        ];
        // The inner formals: m, [al], x, [incx], y, [incy].
        let has_incx = inner
            .params
            .windows(2)
            .any(|w| matches!(w[0], SeqParam::Array { write: false, .. }) && w[1] == SeqParam::Inc);
        let rows = has_incx && self.chance(0.6);
        let whole_y = self.chance(0.5);
        let mut locals = vec![Decl::int("i"), Decl::int("j")];
        let mut body = Vec::new();
        let actuals = |count: Expr, x: Expr, xinc: Expr, y: Expr| -> Vec<Expr> {
            let mut out = Vec::new();
            let mut seen_x = false;
            for p in &inner.params {
                out.push(match p {
                    SeqParam::Count => count.clone(),
                    SeqParam::Alpha => Expr::lit("0.5d0"),
                    SeqParam::Array { write: false, .. } => {
                        seen_x = true;
                        x.clone()
                    }
                    SeqParam::Array { write: true, .. } => {
                        seen_x = false;
                        y.clone()
                    }
                    SeqParam::Inc if seen_x => xinc.clone(),
                    _ => Expr::int(1),
                });
            }
            out
        };
        if rows {
            locals.extend([Decl::int("nb"), Decl::int("jj"), Decl::int("jb")]);
            body.push(Stmt::Assign(v("nb"), Expr::int(self.range(2, 3))));
            let call = Stmt::Call(
                inner.name.clone(),
                actuals(
                    v("jb"),
                    Expr::Index("a".into(), vec![Sub::At(v("i")), Sub::At(v("jj"))]),
                    v("lda"),
                    at1("y", v("jj")),
                ),
            );
            let jb = Expr::call(
                "min",
                vec![
                    v("nb"),
                    Expr::bin("+", Expr::bin("-", v("k"), v("jj")), Expr::int(1)),
                ],
            );
            body.push(do_(
                "i",
                Expr::int(1),
                v("m"),
                None,
                vec![do_(
                    "jj",
                    Expr::int(1),
                    v("k"),
                    Some(v("nb")),
                    vec![Stmt::Assign(v("jb"), jb), call],
                )],
            ));
        } else {
            let y = if whole_y {
                v("y")
            } else {
                at1("y", Expr::int(1))
            };
            let call = Stmt::Call(
                inner.name.clone(),
                actuals(
                    v("m"),
                    Expr::Index("a".into(), vec![Sub::At(Expr::int(1)), Sub::At(v("j"))]),
                    Expr::int(1),
                    y,
                ),
            );
            body.push(do_("j", Expr::int(1), v("k"), None, vec![call]));
        }
        self.seq_proc(ProcKind::Subroutine, &name, &params, locals, body)
    }

    /// Issue 19's constructs in the root: one to three callees (their
    /// procedures go to `externals`, the functions' names to
    /// `ext_funcs`), and one to three calls of them inserted into `body`
    /// after its first `prologue` statements, maybe in a loop over `sj`,
    /// maybe on a local matrix `sq` set before them and read after.
    pub(super) fn sequence_calls(
        &mut self,
        env: &Env,
        decls: &mut Vec<Decl>,
        body: &mut Vec<Stmt>,
        prologue: usize,
        externals: &mut Vec<Proc>,
        ext_funcs: &mut Vec<String>,
    ) {
        let mut sigs: Vec<SeqSig> = Vec::new();
        match self.rng.random_range(0..14) {
            0..=2 => sigs.push(self.axpy_callee()),
            3 | 4 => sigs.push(self.dot_callee()),
            5..=7 => sigs.push(self.gemv_callee()),
            8 | 9 => sigs.push(self.halves_callee()),
            12 | 13 => sigs.push(self.trsv_callee()),
            _ => {
                let inner = self.axpy_callee();
                let outer = self.wrap_callee(&inner);
                sigs.push(outer);
                sigs.push(inner);
            }
        }
        if self.chance(0.25) {
            let extra = match self.rng.random_range(0..3) {
                0 => self.axpy_callee(),
                1 => self.dot_callee(),
                _ => self.gemv_callee(),
            };
            sigs.push(extra);
        }
        for s in &sigs {
            if s.function() {
                ext_funcs.push(s.name.clone());
            }
            externals.push(s.proc.clone());
        }
        for name in ["sj", "sk", "sm", "sc"] {
            decls.push(Decl::int(name));
        }
        let n = self.n;
        // The arrays the calls may pass: the root's (not the allocatable
        // module array), and maybe a local matrix `sq`.
        let mut arrays: Vec<RVar> = env
            .reals
            .iter()
            .filter(|r| !r.dims.is_empty() && r.name != "ga")
            .cloned()
            .collect();
        let mut set = Vec::new();
        let mut uses = Vec::new();
        let local = self.chance(0.5);
        if local {
            let ld = if self.chance(0.5) {
                Ext {
                    value: n,
                    text: "n".into(),
                }
            } else {
                Ext {
                    value: n + 1,
                    text: "n + 1".into(),
                }
            };
            decls.push(Decl::real("sq", vec![ld.text.clone(), "n".into()]));
            let inner = with_index(&with_index(env, "sj", 1, n), "sk", 1, ld.value);
            let e = self.rexpr(&inner, 2);
            let plus = Expr::bin(
                "*",
                Expr::lit("0.1d0"),
                Expr::call("dble", vec![Expr::bin("-", v("sk"), v("sj"))]),
            );
            set.push(counted(
                "sj",
                v("n"),
                vec![counted(
                    "sk",
                    Expr::var(ld.text.clone()),
                    vec![Stmt::Assign(
                        Expr::at("sq", vec![v("sk"), v("sj")]),
                        Expr::bin("+", e, plus),
                    )],
                )],
            ));
            let sq = RVar {
                name: "sq".into(),
                dims: vec![
                    ld,
                    Ext {
                        value: n,
                        text: "n".into(),
                    },
                ],
                write: true,
            };
            for _ in 0..self.range(1, 2) {
                let Some(t) = self.target(env) else { break };
                let lhs = self.element(env, &t);
                let el = self.element(env, &sq);
                let read = if self.chance(0.5) {
                    Expr::bin("*", self.literal(), el)
                } else {
                    Expr::bin("*", Expr::lit("0.1d0"), Expr::call("sum", vec![v("sq")]))
                };
                uses.push(add_to(lhs, read));
            }
            arrays.push(sq);
        }
        let mut calls = Vec::new();
        for k in 0..self.range(1, 3) {
            // The first callee (the outermost) first, an extra one next.
            let sig = match k {
                0 => sigs[0].clone(),
                1 if sigs.len() > 1 => sigs[sigs.len() - 1].clone(),
                _ => {
                    let i = self.rng.random_range(0..sigs.len());
                    sigs[i].clone()
                }
            };
            if let Some(st) = self.seq_call(env, &sigs, &sig, &arrays) {
                calls.push(st);
            }
        }
        if local {
            set.extend(calls.into_iter().flatten());
            set.extend(uses);
            let at = self.free_point(body, prologue);
            for (k, s) in set.into_iter().enumerate() {
                body.insert(at + k, s);
            }
        } else {
            for c in calls {
                let at = self.free_point(body, prologue);
                for (k, s) in c.into_iter().enumerate() {
                    body.insert(at + k, s);
                }
            }
        }
    }

    /// An integer constant as the code writes it: `n`, `n - 1` or the
    /// number.
    fn seq_const(&mut self, c: i64) -> Expr {
        if c == self.n && self.chance(0.6) {
            v("n")
        } else if c == self.n - 1 && c >= 1 && self.chance(0.4) {
            Expr::bin("-", v("n"), Expr::int(1))
        } else {
            Expr::int(c)
        }
    }

    fn lin_expr(&mut self, l: Lin) -> Expr {
        match l.k {
            0 => self.seq_const(l.c),
            1 if l.c == 0 => v("sj"),
            1 if l.c > 0 => Expr::bin("+", v("sj"), Expr::int(l.c)),
            1 => Expr::bin("-", v("sj"), Expr::int(-l.c)),
            _ => {
                let c = self.seq_const(l.c);
                Expr::bin("-", c, v("sj"))
            }
        }
    }

    /// An integer argument's value at the loop's first iteration (`sj =
    /// 1`) in `lo..=hi`, varying with `sj` or not.
    fn seq_lin(&mut self, lo: i64, hi: i64, looped: bool) -> Lin {
        let first = if self.chance(0.5) {
            self.range(lo, (lo + 1).min(hi))
        } else {
            self.range(lo, hi)
        };
        let k = if looped {
            [0, 0, 1, -1][self.rng.random_range(0..4)]
        } else {
            0
        };
        Lin { c: first - k, k }
    }

    /// One call of `sig` (statements: maybe `sm = c` before it, maybe a
    /// loop over `sj` around it), its actuals drawn from `arrays` until a
    /// valid draw.
    fn seq_call(
        &mut self,
        env: &Env,
        sigs: &[SeqSig],
        sig: &SeqSig,
        arrays: &[RVar],
    ) -> Option<Vec<Stmt>> {
        let n = self.n;
        // Matrices whose columns a loop can walk, for the pattern of
        // LAPACK's unblocked codes below.
        let matrices: Vec<RVar> = arrays
            .iter()
            .filter(|r| r.write && r.dims.len() == 2 && r.dims[1].value >= 2)
            .cloned()
            .collect();
        let several = sig
            .params
            .iter()
            .filter(|p| matches!(p, SeqParam::Array { .. }))
            .count()
            >= 2;
        // A loop around the call, if a valid one is found early.
        let want_loop = self.chance(0.4);
        for attempt in 0..100 {
            let looped = want_loop && attempt < 70;
            let trips = if looped { self.range(2, n) } else { 1 };
            // Every actual an element of one matrix `w` in the loop,
            // `w(1, sj + 1)`, `w(1, sj)`, `w(sj, sj + 1)`, …: the
            // columns and rows of a factorisation's step.
            let guided = match looped && several && self.chance(0.5) {
                true => self.pick(&matrices).cloned(),
                false => None,
            };
            // The actuals of the array formals.
            let mut actuals: Vec<Option<Actual>> = Vec::new();
            let mut chosen: Vec<Actual> = Vec::new();
            let mut ok = true;
            for p in &sig.params {
                let SeqParam::Array { write, .. } = p else {
                    actuals.push(None);
                    continue;
                };
                let fits = |r: &RVar| !*write || r.write;
                let again: Vec<Actual> = chosen.iter().filter(|a| fits(&a.var)).cloned().collect();
                let a = if let Some(w) = &guided {
                    let one = Lin { c: 1, k: 0 };
                    let sj = Lin { c: 0, k: 1 };
                    let next = Lin { c: 1, k: 1 };
                    let pairs = [(one, next), (one, sj), (sj, next), (next, next), (sj, sj)];
                    let (r, c) = pairs[self.rng.random_range(0..pairs.len())];
                    Actual {
                        var: w.clone(),
                        start: Some(vec![r, c]),
                    }
                } else if !again.is_empty() && self.chance(0.45) {
                    let prev = self.pick(&again).cloned()?;
                    if !*write && self.chance(0.4) {
                        // The same actual again (read-only: may overlap).
                        prev
                    } else {
                        let start = self.seq_start(&prev.var, looped);
                        Actual {
                            var: prev.var,
                            start,
                        }
                    }
                } else {
                    let cands: Vec<RVar> = arrays.iter().filter(|r| fits(r)).cloned().collect();
                    let Some(var) = self.pick(&cands).cloned() else {
                        ok = false;
                        break;
                    };
                    let start = self.seq_start(&var, looped);
                    Actual { var, start }
                };
                chosen.push(a.clone());
                actuals.push(Some(a));
            }
            if !ok {
                return None;
            }
            // The integers.
            let mut ints: Vec<Option<Lin>> = Vec::new();
            let mut flags: Vec<Option<&'static str>> = Vec::new();
            for (k, p) in sig.params.iter().enumerate() {
                let (i, f) = match p {
                    SeqParam::Count => {
                        let first = self.range(1, n);
                        let l = self.seq_lin(first, first, looped);
                        (Some(l), None)
                    }
                    SeqParam::Inc => {
                        let lds: Vec<i64> = chosen
                            .iter()
                            .filter(|a| a.var.dims.len() >= 2)
                            .map(|a| a.var.dims[0].value)
                            .collect();
                        let c = match self.rng.random_range(0..10) {
                            0..=4 if guided.is_none() => 1,
                            0..=2 => 1,
                            5 | 6 => 2,
                            _ => self.pick(&lds).copied().unwrap_or(n),
                        };
                        (Some(Lin { c, k: 0 }), None)
                    }
                    SeqParam::Ld => {
                        // The leading dimension of the matrix's actual.
                        let prev = actuals[..k].iter().rev().flatten().next();
                        let c = match prev {
                            Some(a) if a.var.dims.len() >= 2 && self.chance(0.85) => {
                                a.var.dims[0].value
                            }
                            _ => self.range(1, n + 1),
                        };
                        (Some(Lin { c, k: 0 }), None)
                    }
                    SeqParam::Flag => (None, Some(["N", "T"][self.rng.random_range(0..2)])),
                    _ => (None, None),
                };
                ints.push(i);
                flags.push(f);
            }
            if !valid(sigs, sig, &actuals, &ints, &flags, trips) {
                continue;
            }
            // Valid: written out.
            let mut pre = Vec::new();
            // One count through the integer local `sm`, set right before
            // the call (no statement is inserted between the two:
            // another call's would set `sm` again).
            let mut set_sm = None;
            let via_sm = if !looped && self.chance(0.3) {
                sig.params.iter().position(|p| *p == SeqParam::Count)
            } else {
                None
            };
            let written: Vec<String> = sig
                .params
                .iter()
                .zip(&actuals)
                .filter(|(p, _)| matches!(p, SeqParam::Array { write: true, .. }))
                .filter_map(|(_, a)| a.as_ref().map(|a| a.var.name.clone()))
                .collect();
            let mut args = Vec::new();
            for (k, p) in sig.params.iter().enumerate() {
                let e = match p {
                    SeqParam::Count | SeqParam::Inc | SeqParam::Ld => {
                        let l = ints[k].unwrap_or(Lin { c: 1, k: 0 });
                        if via_sm == Some(k) {
                            set_sm = Some(Stmt::Assign(v("sm"), Expr::int(l.c)));
                            v("sm")
                        } else {
                            self.lin_expr(l)
                        }
                    }
                    SeqParam::Flag => Expr::lit(format!("'{}'", flags[k].unwrap_or("N"))),
                    SeqParam::Counter => v("sc"),
                    SeqParam::Alpha => {
                        let e = self.rexpr(env, 1);
                        if written.iter().any(|w| e.mentions(w)) {
                            self.literal()
                        } else {
                            e
                        }
                    }
                    SeqParam::Array { .. } => {
                        let a = actuals[k].clone()?;
                        match &a.start {
                            None => v(&a.var.name),
                            Some(subs) => {
                                let subs =
                                    subs.iter().map(|l| Sub::At(self.lin_expr(*l))).collect();
                                Expr::Index(a.var.name.clone(), subs)
                            }
                        }
                    }
                };
                args.push(e);
            }
            let st = if sig.function() {
                let t = self.target(env)?;
                let lhs = self.element(env, &t);
                let call = Expr::call(sig.name.clone(), args);
                add_to(lhs, Expr::bin("*", self.literal(), call))
            } else {
                Stmt::Call(sig.name.clone(), args)
            };
            // The count the call changes is read just before it: the
            // adjoint of that assignment needs its value from before.
            let mut body = Vec::new();
            if sig.params.contains(&SeqParam::Counter) {
                let t = self.target(env)?;
                let lhs = self.element(env, &t);
                let scale = Expr::bin(
                    "+",
                    Expr::lit("1.0d0"),
                    Expr::bin("*", Expr::lit("0.1d0"), Expr::call("dble", vec![v("sc")])),
                );
                pre.push(Stmt::Assign(v("sc"), Expr::int(1)));
                body.push(Stmt::Assign(lhs.clone(), Expr::bin("*", lhs, scale)));
            }
            body.extend(set_sm);
            body.push(st);
            if looped {
                let hi = self.seq_const(trips);
                pre.push(do_("sj", Expr::int(1), hi, None, body));
            } else {
                pre.extend(body);
            }
            return Some(pre);
        }
        None
    }

    /// The first element of `var` a call passes (`None`: the whole
    /// variable), its subscripts varying with `sj` or not; small ones
    /// preferred, to leave room for the region after it.
    fn seq_start(&mut self, var: &RVar, looped: bool) -> Option<Vec<Lin>> {
        if self.chance(0.12) {
            return None;
        }
        let subs = var
            .dims
            .clone()
            .iter()
            .map(|d| self.seq_lin(1, d.value, looped))
            .collect();
        Some(subs)
    }
}

/// Whether the call is valid Fortran at every iteration `sj = 1..=trips`
/// ([`Lin`]): the simulation's conditions in the module's comment.
fn valid(
    sigs: &[SeqSig],
    sig: &SeqSig,
    actuals: &[Option<Actual>],
    ints: &[Option<Lin>],
    flags: &[Option<&'static str>],
    trips: i64,
) -> bool {
    for sj in 1..=trips {
        let mut bound = Vec::new();
        let mut starts = Vec::new();
        for (k, p) in sig.params.iter().enumerate() {
            match p {
                SeqParam::Count | SeqParam::Inc | SeqParam::Ld => {
                    let Some(l) = ints[k] else { return false };
                    if l.at(sj) < 1 {
                        return false;
                    }
                    bound.push(Bind::Int(l.at(sj)));
                }
                SeqParam::Flag => bound.push(Bind::Flag(flags[k].unwrap_or("N").to_string())),
                SeqParam::Alpha | SeqParam::Counter => bound.push(Bind::None),
                SeqParam::Array { .. } => {
                    let Some(a) = &actuals[k] else { return false };
                    // The offset of the first element in the variable.
                    let mut off = 0;
                    let mut stride = 1;
                    if let Some(subs) = &a.start {
                        for (l, d) in subs.iter().zip(&a.var.dims) {
                            let s = l.at(sj);
                            if s < 1 || s > d.value {
                                return false;
                            }
                            off += (s - 1) * stride;
                            stride *= d.value;
                        }
                    }
                    starts.push((k, off));
                    bound.push(Bind::Array(k, 0));
                }
            }
        }
        let mut out = vec![Touched::default(); sig.params.len()];
        if simulate(sigs, sig, &bound, &mut out).is_none() {
            return false;
        }
        // Inside the actuals.
        for &(k, off) in &starts {
            let Some(a) = &actuals[k] else { return false };
            let size: i64 = a.var.dims.iter().map(|d| d.value).product();
            let t = &out[k];
            if off + t.need > size || t.all().any(|r| off + r >= size) {
                return false;
            }
        }
        // Nothing written through one formal touched through another.
        for &(k, ok) in &starts {
            for &(q, oq) in &starts {
                if k == q {
                    continue;
                }
                let (Some(a), Some(b)) = (&actuals[k], &actuals[q]) else {
                    return false;
                };
                if a.var.name != b.var.name {
                    continue;
                }
                let theirs: BTreeSet<i64> = out[q].all().map(|r| oq + r).collect();
                if out[k].writes.iter().any(|w| theirs.contains(&(ok + w))) {
                    return false;
                }
            }
        }
    }
    true
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// Per call of a procedure with an assumed-size formal in `p`:
    /// whether an element goes to an assumed-size formal, and whether the
    /// same variable is passed as two actuals.
    pub fn seq_calls(p: &Program) -> Vec<(bool, bool)> {
        let assumed: Vec<&Proc> = p
            .externals
            .iter()
            .filter(|q| q.decls.iter().any(|d| d.dims.iter().any(|x| x == "*")))
            .collect();
        let mut out = Vec::new();
        let mut look = |name: &str, args: &[Expr]| {
            let Some(q) = assumed.iter().find(|q| q.name == name) else {
                return;
            };
            let mut element = false;
            let mut bases = Vec::new();
            for (f, a) in q.args.iter().zip(args) {
                let Some(d) = q.decls.iter().find(|d| d.name == *f) else {
                    continue;
                };
                if d.dims.is_empty() || d.ty != "real(8)" {
                    continue;
                }
                match a {
                    Expr::Index(b, subs) if subs.iter().all(|s| matches!(s, Sub::At(_))) => {
                        element |= d.dims.iter().any(|x| x == "*");
                        bases.push(b.clone());
                    }
                    Expr::Var(b) => bases.push(b.clone()),
                    _ => {}
                }
            }
            let mut sorted = bases.clone();
            sorted.sort();
            sorted.dedup();
            out.push((element, sorted.len() < bases.len()));
        };
        fn exprs(e: &Expr, f: &mut dyn FnMut(&str, &[Expr])) {
            if let Expr::Call(name, args) = e {
                f(name, args);
            }
            for c in e.children() {
                exprs(c, f);
            }
        }
        fn stmts(body: &[Stmt], f: &mut dyn FnMut(&str, &[Expr])) {
            for s in body {
                if let Stmt::Call(name, args) = s {
                    f(name, args);
                }
                for e in s.exprs() {
                    exprs(e, f);
                }
                if let Stmt::IfOne(_, inner) = s {
                    stmts(std::slice::from_ref(inner), f);
                }
                for b in s.blocks() {
                    stmts(b, f);
                }
            }
        }
        stmts(&p.root.body, &mut look);
        out
    }

    #[test]
    fn the_simulation_finds_strided_and_column_regions() {
        let mut rng = super::super::rng_for(1, 1, 0);
        let mut g = Generator::new(&mut rng);
        // y(1 + (i - 1)*incy) = y(...) + c*x(1 + (i - 1)*incx), i = 1..m.
        let sig = loop {
            let s = g.axpy_callee();
            let incs = s.params.iter().filter(|p| **p == SeqParam::Inc).count();
            if incs == 2 && !s.params.contains(&SeqParam::Alpha) {
                break s;
            }
        };
        let bound = [
            Bind::Int(3),
            Bind::Array(0, 0),
            Bind::Int(2),
            Bind::Array(1, 5),
            Bind::Int(1),
        ];
        let mut out = vec![Touched::default(); 2];
        simulate(std::slice::from_ref(&sig), &sig, &bound, &mut out).unwrap();
        // A neighbour read x(max(i - 1, 1)) adds nothing new.
        assert_eq!(out[0].reads, [0, 2, 4].into(), "{}", sig.proc.name);
        assert!(out[0].writes.is_empty());
        assert_eq!(out[1].writes, [5, 6, 7].into());
        // The wrapper's columns a(1, j), j = 1..k, of m rows, lda apart.
        let inner = g.axpy_callee();
        let wrap = loop {
            let w = g.wrap_callee(&inner);
            let rows = w.proc.body.iter().any(|s| matches!(s, Stmt::Assign(..)));
            if !rows {
                break w;
            }
        };
        let sigs = [wrap.clone(), inner];
        let bound = [
            Bind::Int(2),
            Bind::Int(3),
            Bind::Array(0, 0),
            Bind::Int(4),
            Bind::Array(1, 0),
        ];
        let mut out = vec![Touched::default(); 2];
        simulate(&sigs, &wrap, &bound, &mut out).unwrap();
        assert_eq!(out[0].reads, [0, 1, 4, 5, 8, 9].into());
        assert_eq!(out[1].writes, [0, 1].into());
    }

    #[test]
    fn calls_that_leave_their_actual_or_write_what_another_reads_are_invalid() {
        let mut rng = super::super::rng_for(1, 2, 0);
        let mut g = Generator::new(&mut rng);
        // subroutine (m, x, y): y(i) = f(y(i), x(i)), i = 1..m.
        let sig = loop {
            let s = g.axpy_callee();
            if s.params.len() == 3 {
                break s;
            }
        };
        let t = RVar {
            name: "t".into(),
            dims: vec![Ext {
                value: 6,
                text: "6".into(),
            }],
            write: true,
        };
        let at = |c: i64| {
            Some(Actual {
                var: t.clone(),
                start: Some(vec![Lin { c, k: 0 }]),
            })
        };
        let ok = |m: i64, x: i64, y: i64, trips: i64, k: i64| {
            let sigs = std::slice::from_ref(&sig);
            let ints = [Some(Lin { c: m, k }), None, None];
            valid(sigs, &sig, &[None, at(x), at(y)], &ints, &[None; 3], trips)
        };
        // t(1:3) read, t(4:6) written: apart.
        assert!(ok(3, 1, 4, 1, 0));
        // Past the end of t.
        assert!(!ok(3, 1, 5, 1, 0));
        // t(2:4) read while t(3:5) is written.
        assert!(!ok(3, 2, 3, 1, 0));
        // m = 3 - sj: 2 then 1 in a loop of two, 0 in a third.
        assert!(ok(3, 1, 4, 2, -1));
        assert!(!ok(3, 1, 4, 3, -1));
    }
}
