//! Assignment adjoints: the forward sweep of an assignment (pushing the
//! overwritten value TBR records, or dropping a dead assignment) and its
//! reverse sweep — restore, undo an inversion, then `c̄ += ∂v/∂c · v̄` for
//! every active operand `c` ([`crate::partials`]), with `v̄` reset unless
//! the assignment accumulates into `v`. Array assignments are reversed
//! element-wise through an array temporary; `sum`, `dot_product`,
//! `matmul` and `transpose` have reverse rules of their own.
//!
//! Contract: the adjoint reads only what TBR restores — a derivative flows
//! through a leaf only when its variable has an adjoint and is varied just
//! before the statement ([`Gen::active_inside`]); an active expression
//! without a rule is refused, never differentiated as zero.

use super::dispatch::Gen;
use super::sweep::Line;
use super::tape::pushable;
use crate::partials::partials;
use dfort_analysis::address_report::Choice;
use dfort_analysis::dp::{dp_of, target};
use dfort_ir::dump::expr as print;
use dfort_ir::*;

fn p(s: String) -> String {
    format!("({s})")
}

impl Gen<'_> {
    /// `lhs = rhs` (statement `id`).
    pub(super) fn assignment(
        &mut self,
        id: StmtId,
        span: Span,
        lhs: &Expr,
        rhs: &Expr,
        label: String,
    ) -> Vec<Line> {
        let inp = self.inp;
        let unit = &inp.unit;
        let mut rev = Vec::new();
        let dead = inp.dead.contains(&id);
        let Some((t, whole)) = target(lhs) else {
            self.out
                .refuse(span, "this assignment target cannot be differentiated");
            return rev;
        };
        if matches!(lhs.kind, ExprKind::Component { .. }) && inp.has_adjoint(t) {
            self.out
                .refuse(span, "derived-type components are not differentiated yet");
        }
        if inp.has_adjoint(t) && unit.symbol(t).ty.base == BaseType::Complex {
            self.out.refuse(
                span,
                "complex variables are not differentiated in reverse mode yet",
            );
        }
        let record = !dead && inp.recorded(id).contains(&t);
        if record {
            if let Err(m) = pushable(unit, t, whole) {
                self.out.refuse(span, m);
            }
            self.out.trace.push(id, t);
            if inp.undo.exact.contains_id(t) {
                self.out.trace.recovery(None, t, Choice::Stored);
            }
        }
        let adjoint = inp.has_adjoint(t) && inp.act.active_after(id, t);
        let mut label = label;
        let hoisted = self.hoisted_references(id, rhs, adjoint, &mut label);
        if record {
            self.out
                .fwd
                .line(&format!("{label}call dfort_push({})", print(unit, lhs)));
            self.out
                .fwd
                .line(&format!("{} = {}", print(unit, lhs), print(unit, rhs)));
        } else if !dead {
            self.out.fwd.line(&format!(
                "{label}{} = {}",
                print(unit, lhs),
                print(unit, rhs)
            ));
        } else if !label.is_empty() {
            self.out.fwd.line(&format!("{label}continue"));
        }
        if dead {
            self.out.trace.drop(id);
        }
        // Reverse: restore, then propagate.
        if record {
            rev.push(Line::pop(&print(unit, lhs)));
        }
        if let Some(u) = inp.undo.inverted.get(&id) {
            let needed = inp.tbr.in_req.get(id).is_some_and(|r| r.contains_id(u.var));
            if needed {
                rev.push(Line::Plain(format!(
                    "{} = {}",
                    print(unit, lhs),
                    u.render(unit)
                )));
                self.out.trace.recovery(None, u.var, Choice::Inverted);
            }
        }
        rev.extend(hoisted.before_adjoint());
        if adjoint {
            let lb = inp.bref(lhs).unwrap_or_default();
            let r = if array_valued(unit, lhs) {
                rank_of(unit, lhs)
            } else {
                0
            };
            let mut body = Vec::new();
            if let Some((rest, sign)) = accumulation(unit, lhs, rhs, t) {
                // `v = v ± e`: v's adjoint passes through unchanged and
                // e's gets ±v̄.
                let m = if sign < 0 { format!("-({lb})") } else { lb };
                self.adj(rest, &m, r, &mut body);
            } else if r > 0 && !mentions(rhs, t) {
                // No aliasing: the lhs adjoint is read in place.
                self.adj(rhs, &lb, r, &mut body);
                body.push(format!("{lb} = 0.0d0"));
            } else {
                let tb = if r == 0 {
                    "dfort_tb".to_string()
                } else {
                    self.out.array_temps.insert(r);
                    format!("dfort_ta{r}")
                };
                body.push(format!("{tb} = {lb}"));
                body.push(format!("{lb} = 0.0d0"));
                self.adj(rhs, &tb, r, &mut body);
            }
            rev.extend(body.into_iter().map(Line::Plain));
        } else if inp.has_adjoint(t) && inp.act.useful_after(id, t) {
            // A passive value overwrites a useful variable: its adjoint is
            // cut here (elsewhere it is zero already).
            if let Some(lb) = inp.bref(lhs) {
                rev.push(Line::Plain(format!("{lb} = 0.0d0")));
            }
        }
        rev.extend(hoisted.after_adjoint());
        rev
    }

    /// Whether a derivative flows through `e` here: it holds a variable
    /// that has an adjoint and is varied just before the statement being
    /// reversed (hoisted temporaries always are) — TBR's test, so that the
    /// adjoint reads only what TBR restores.
    fn active_inside(&self, e: &Expr) -> bool {
        let inp = self.inp;
        let n = inp.orig.symbols.len();
        dp_of(&inp.unit, e).ids().any(|i: SymbolId| {
            inp.bname.contains_key(&i) && (i.index() >= n || self.out.varied.contains_id(i))
        })
    }

    /// Adjoint statements `c̄ += ∂/∂c · m` for every active leaf of `e`;
    /// `mr` is the rank of `m` (a scalar leaf under an array `m` gets
    /// `sum(m)`).
    pub(super) fn adj(&mut self, e: &Expr, m: &str, mr: usize, out: &mut Vec<String>) {
        if !self.active_inside(e) {
            return;
        }
        let inp = self.inp;
        let unit = &inp.unit;
        // A scalar operand of an array expression: its adjoint is the sum
        // of the array adjoint.
        let collapsed;
        let (m, mr) = if mr > 0
            && rank_of(unit, e) == 0
            && !matches!(e.kind, ExprKind::Var(_) | ExprKind::ArrayRef { .. })
        {
            collapsed = format!("sum({m})");
            (collapsed.as_str(), 0)
        } else {
            (m, mr)
        };
        match &e.kind {
            ExprKind::Var(_) | ExprKind::ArrayRef { .. } => {
                if let Some(b) = inp.bref(e) {
                    if rank_of(unit, e) == 0 && mr > 0 {
                        out.push(format!("{b} = {b} + sum({m})"));
                    } else {
                        out.push(format!("{b} = {b} + {m}"));
                    }
                }
            }
            ExprKind::FunctionCall { name, .. } => {
                self.out.refuse(
                    e.span,
                    format!("the active reference to `{name}` cannot be differentiated (array-valued or unknown function)"),
                );
            }
            ExprKind::Intrinsic { name, args }
                if matches!(
                    name.as_str(),
                    "sum"
                        | "dot_product"
                        | "matmul"
                        | "transpose"
                        | "norm2"
                        | "maxval"
                        | "minval"
                        | "product"
                ) =>
            {
                self.adj_array_intrinsic(e, name, args, m, mr, out);
            }
            _ => match partials(unit, e) {
                Some(parts) => {
                    for (child, d) in parts {
                        // The multiplier's own rank: a scalar adjoint times
                        // a scalar partial stays a scalar.
                        let r = mr.max(partial_rank(unit, e, child));
                        let mm = format!("{} * {}", p(m.to_string()), p(d));
                        self.adj(child, &mm, r, out);
                    }
                }
                None => self.out.refuse(
                    e.span,
                    format!(
                        "no adjoint rule for `{}` with active arguments",
                        print(unit, e)
                    ),
                ),
            },
        }
    }

    /// Reverse rules of the array intrinsics.
    fn adj_array_intrinsic(
        &mut self,
        e: &Expr,
        name: &str,
        args: &[Arg],
        m: &str,
        mr: usize,
        out: &mut Vec<String>,
    ) {
        let inp = self.inp;
        let unit = &inp.unit;
        let v = |x: &Expr| p(print(unit, x));
        let m = p(m.to_string());
        let keywords = args.iter().any(|a| a.keyword.is_some());
        match (name, args.len()) {
            ("sum", 1) if !keywords && mr == 0 => {
                // Every element gets the scalar adjoint (broadcast: the
                // adjoint stays a scalar for the rules below).
                self.adj(&args[0].value, &m, 0, out);
            }
            // x̄ += m x / ‖x‖, nothing at x = 0 (the subgradient 0).
            ("norm2", 1) if !keywords && mr == 0 => {
                let x = &args[0].value;
                let n = crate::partials::norm2_nonzero(&v(x));
                self.adj(x, &format!("{m} * {} / {n}", v(x)), rank_of(unit, x), out);
            }
            // x̄ⱼ += m Πᵢ≠ⱼ xᵢ, without dividing by any element.
            ("product", 1) if !keywords && mr == 0 => {
                let x = &args[0].value;
                let j = "dfort_j";
                match (crate::partials::product_of_others(unit, x, j), inp.bref(x)) {
                    (Some((others, range)), Some(b)) => {
                        self.out.column_loops = true;
                        out.push(format!("do {j} = {range}"));
                        out.push(format!("  {b}({j}) = {b}({j}) + {m} * {others}"));
                        out.push("end do".into());
                    }
                    (Some(_), None) => {}
                    (None, _) => self.out.refuse(
                        e.span,
                        crate::partials::whole_rank1_only(unit, "product", x),
                    ),
                }
            }
            // The selected element (the first at ties) gets the adjoint.
            ("maxval" | "minval", 1) if !keywords && mr == 0 => {
                let x = &args[0].value;
                match (
                    crate::partials::selected_element(unit, name, x),
                    inp.bref(x),
                ) {
                    (Some(at), Some(b)) => out.push(format!("{b}({at}) = {b}({at}) + {m}")),
                    (Some(_), None) => {}
                    (None, _) => self
                        .out
                        .refuse(e.span, crate::partials::whole_rank1_only(unit, name, x)),
                }
            }
            // A broadcast scalar is its own transpose.
            ("transpose", 1) if mr == 0 => self.adj(&args[0].value, &m, 0, out),
            ("transpose", 1) => self.adj(&args[0].value, &format!("transpose({m})"), 2, out),
            ("dot_product", 2) if !keywords && mr == 0 => {
                let (a, b) = (&args[0].value, &args[1].value);
                self.adj(a, &format!("{m} * {}", v(b)), 1, out);
                self.adj(b, &format!("{m} * {}", v(a)), 1, out);
            }
            ("matmul", 2) if !keywords => {
                let (a, b) = (&args[0].value, &args[1].value);
                let (ra, rb) = (rank_of(unit, a), rank_of(unit, b));
                // A scalar adjoint (the product under a sum) is spread to
                // the product's shape first.
                let m = match (mr, ra, rb) {
                    (0, 2, 1) => format!("spread({m}, 1, size({}, 1))", v(a)),
                    (0, 1, 2) => format!("spread({m}, 1, size({}, 2))", v(b)),
                    (0, 2, 2) => format!(
                        "spread(spread({m}, 1, size({}, 1)), 2, size({}, 2))",
                        v(a),
                        v(b)
                    ),
                    _ => m,
                };
                let (ma, mb) = match (ra, rb) {
                    (2, 1) => (
                        outer(&m, &v(b)),
                        format!("matmul(transpose({}), {m})", v(a)),
                    ),
                    (1, 2) => (format!("matmul({}, {m})", v(b)), outer(&v(a), &m)),
                    (2, 2) => (
                        format!("matmul({m}, transpose({}))", v(b)),
                        format!("matmul(transpose({}), {m})", v(a)),
                    ),
                    _ => {
                        self.out.refuse(e.span, "no adjoint rule for this `matmul`");
                        return;
                    }
                };
                // A whole matrix times a vector variable: the outer
                // product accumulated column by column, without the
                // temporaries the array form needs.
                let column_loop = match (&a.kind, &b.kind, ra, rb) {
                    (ExprKind::Var(av), ExprKind::Var(bv), 2, 1) => {
                        inp.bname.get(av).cloned().map(|ab| (ab, *bv))
                    }
                    _ => None,
                };
                match column_loop {
                    Some((ab, bv)) => {
                        let bn = &unit.symbol(bv).name;
                        self.out.column_loops = true;
                        out.push(format!("do dfort_j = 1, size({bn})"));
                        out.push(format!(
                            "  {ab}(:, dfort_j) = {ab}(:, dfort_j) + {m} * {bn}(dfort_j)"
                        ));
                        out.push("end do".into());
                    }
                    None => self.adj(a, &ma, ra, out),
                }
                self.adj(b, &mb, rb, out);
            }
            _ => self.out.refuse(
                e.span,
                format!(
                    "no adjoint rule for `{}` with these arguments",
                    print(unit, e)
                ),
            ),
        }
    }
}

/// The rank of the partial derivative of `e` with respect to its operand
/// `child` ([`partials`]): constants for sums and differences, the other
/// factor for products, the operands' values otherwise.
fn partial_rank(unit: &Unit, e: &Expr, child: &Expr) -> usize {
    match &e.kind {
        ExprKind::Unary { .. } => 0,
        ExprKind::Binary { op, lhs, rhs } => match op {
            BinaryOp::Add | BinaryOp::Sub => 0,
            BinaryOp::Mul if std::ptr::eq(child, &**lhs) => rank_of(unit, rhs),
            BinaryOp::Mul => rank_of(unit, lhs),
            BinaryOp::Div if std::ptr::eq(child, &**lhs) => rank_of(unit, rhs),
            _ => rank_of(unit, lhs).max(rank_of(unit, rhs)),
        },
        ExprKind::Intrinsic { args, .. } => args
            .iter()
            .map(|a| rank_of(unit, &a.value))
            .max()
            .unwrap_or(0),
        _ => rank_of(unit, e),
    }
}

/// The outer product `u vᵀ` of two vectors, as a rank-1 `matmul`.
fn outer(u: &str, v: &str) -> String {
    format!("matmul(reshape({u}, [size({u}), 1]), reshape({v}, [1, size({v})]))")
}

/// `v = v + e`, `v = e + v` or `v = v - e` with `e` not mentioning `v`'s
/// variable: the other term and its sign.
fn accumulation<'e>(unit: &Unit, lhs: &Expr, rhs: &'e Expr, t: SymbolId) -> Option<(&'e Expr, i8)> {
    let ExprKind::Binary { op, lhs: a, rhs: b } = &rhs.kind else {
        return None;
    };
    let same = |x: &Expr| print(unit, x) == print(unit, lhs);
    match op {
        BinaryOp::Add if same(a) && !mentions(b, t) => Some((b, 1)),
        BinaryOp::Add if same(b) && !mentions(a, t) => Some((a, 1)),
        BinaryOp::Sub if same(a) && !mentions(b, t) => Some((b, -1)),
        _ => None,
    }
}

/// Whether `e` mentions variable `s`.
pub(super) fn mentions(e: &Expr, s: SymbolId) -> bool {
    let mut found = false;
    e.walk(&mut |x| {
        if matches!(x.kind, ExprKind::Var(v) | ExprKind::ArrayRef { array: v, .. } if v == s) {
            found = true;
        }
    });
    found
}

/// The rank of an expression's value (0 for scalars).
fn rank_of(unit: &Unit, e: &Expr) -> usize {
    match &e.kind {
        ExprKind::Var(s) => unit.symbol(*s).rank(),
        ExprKind::ArrayRef { subs, .. } => subs
            .iter()
            .filter(|s| matches!(s, Subscript::Range { .. }))
            .count(),
        ExprKind::Unary { operand, .. } => rank_of(unit, operand),
        ExprKind::Binary { lhs, rhs, .. } => rank_of(unit, lhs).max(rank_of(unit, rhs)),
        ExprKind::ArrayCtor(_) => 1,
        ExprKind::Intrinsic { name, args } => {
            let r = |i: usize| args.get(i).map(|a| rank_of(unit, &a.value)).unwrap_or(0);
            match name.as_str() {
                "sum" | "product" | "maxval" | "minval" if args.len() > 1 => r(0).saturating_sub(1),
                "sum" | "product" | "maxval" | "minval" | "dot_product" | "size" | "norm2" => 0,
                "transpose" => 2,
                "matmul" => (r(0) + r(1)).saturating_sub(2),
                _ => args
                    .iter()
                    .map(|a| rank_of(unit, &a.value))
                    .max()
                    .unwrap_or(0),
            }
        }
        _ => 0,
    }
}

/// Whether an assignment target denotes more than one element.
fn array_valued(unit: &Unit, e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Var(s) => unit.symbol(*s).rank() > 0,
        ExprKind::ArrayRef { subs, .. } => {
            subs.iter().any(|s| matches!(s, Subscript::Range { .. }))
        }
        _ => false,
    }
}
