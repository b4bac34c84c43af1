//! Assignment adjoints: the forward sweep of an assignment (pushing the
//! overwritten value TBR records, or dropping a dead assignment) and its
//! reverse sweep — restore, undo an inversion, then `c̄ += ∂v/∂c · v̄` for
//! every active operand `c` ([`crate::partials`]), with `v̄` reset unless
//! the assignment accumulates into `v` (or the lines fold into one
//! assignment of `v̄`, [`super::reset_folds`]). Array assignments are
//! reversed element-wise through an array temporary; `sum`, `dot_product`,
//! `matmul` and `transpose` have reverse rules of their own.
//!
//! Contract: the adjoint reads only what TBR restores — a derivative flows
//! through a leaf only when its variable has an adjoint and is varied just
//! before the statement ([`Gen::active_inside`]); an active expression
//! without a rule is refused, never differentiated as zero.

use super::dispatch::Gen;
use super::reset_folds::{fold_in_place, fold_reset};
use super::sweep::Line;
use crate::complex;
use crate::partials::{partials, rank_of};
use crate::precedence::{neg, plus, times, Form};
use dfort_analysis::address_report::Choice;
use dfort_ir::dp::{dp_of, target};
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
        let Some((t, _)) = target(lhs) else {
            self.out
                .refuse(span, "this assignment target cannot be differentiated");
            return rev;
        };
        let program = inp.program;
        // A component without a derivative (`p%id`) is passive.
        let carried = crate::derived::carries_ref(program, unit, lhs);
        let derived_lhs = carried && crate::derived::is_derived(program, unit, lhs);
        if derived_lhs && inp.has_adjoint(t) {
            if let Some(m) = crate::derived::unsupported_assignment(
                program,
                unit,
                lhs,
                rhs,
                self.active_inside(rhs),
            ) {
                self.out.refuse(span, m);
                return rev;
            }
        }
        if inp.has_adjoint(t)
            && unit.symbol(t).ty.base == BaseType::Complex
            && self.out.mask.is_some()
        {
            self.out.refuse(
                span,
                "complex variables assigned under WHERE are not differentiated in reverse mode yet",
            );
        }
        let record = !dead && inp.recorded(id).contains(&t);
        if record {
            // What the tape cannot hold the facts refuse
            // ([`dfort_analysis::refusals`]).
            self.out.trace.push(id, t);
            if inp.undo.exact.contains_id(t) {
                self.out.trace.recovery(None, t, Choice::Stored);
            }
        }
        let adjoint = inp.has_adjoint(t) && carried && inp.act.active_after(id, t);
        // An elemental function would be evaluated (and differentiated)
        // outside the mask too.
        let elementwise = inp
            .hoisted
            .get(&id)
            .is_some_and(|hs| hs.iter().any(|h| h.elementwise));
        if self.out.mask.is_some()
            && (dfort_ir::hoist::references_user_function(rhs) || elementwise)
        {
            self.out
                .refuse(span, crate::partials::USER_FUNCTION_IN_WHERE);
            return rev;
        }
        // Under a WHERE: the assignment, its inversion and its adjoint's
        // element-wise lines run under the arm's mask.
        let under = self
            .out
            .mask
            .as_ref()
            .map(|w| format!("where ({w}) "))
            .unwrap_or_default();
        // A reference left in the expression runs as the original: one to
        // a function that changes an argument or a global must have been
        // hoisted (to run its derivative routine, or to save around it
        // what it overwrites that the reverse sweep reads), and in an
        // active assignment one to a function that reads a global (its
        // adjoint must pass the global its share: seed 45046, case 2524).
        let diff = &inp.diff;
        for (span, why) in crate::hoist::unhoisted_references(rhs, |c| {
            diff.writes_derivatives(c)
                || diff.changes_state(c)
                || (adjoint && diff.reads_globals(c))
        }) {
            self.out.refuse(span, why);
        }
        let mut label = label;
        let hoisted = self.hoisted_references(id, rhs, adjoint, &mut label);
        // Under a WHERE only the elements the mask selects are recorded.
        let (push, pop) = match &self.out.mask {
            Some(w) => (
                format!("call dfort_push_where({}, {w})", print(unit, lhs)),
                format!("call dfort_pop_where({}, {w})", print(unit, lhs)),
            ),
            None => (
                format!("call dfort_push({})", print(unit, lhs)),
                format!("call dfort_pop({})", print(unit, lhs)),
            ),
        };
        if record {
            self.out.fwd.line(&format!("{label}{push}"));
            self.out.fwd.line(&format!(
                "{under}{} = {}",
                print(unit, lhs),
                print(unit, rhs)
            ));
        } else if !dead {
            self.out.fwd.line(&format!(
                "{label}{under}{} = {}",
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
            rev.push(Line::Plain(pop));
        }
        if let Some(u) = inp.undo.inverted.get(&id) {
            let needed = inp.tbr.in_req.get(id).is_some_and(|r| r.contains_id(u.var));
            if needed {
                rev.push(Line::Plain(format!(
                    "{under}{} = {}",
                    print(unit, lhs),
                    u.render(unit)
                )));
                self.out.trace.recovery(None, u.var, Choice::Inverted);
            }
        }
        rev.extend(hoisted.before_adjoint());
        let zero = crate::derived::zero(program, unit, lhs, "_b");
        if self.out.restore_only {
            // A preaccumulated graph's statement: its Jacobian's
            // transpose does the propagation ([`super::preaccumulate`]).
        } else if adjoint && derived_lhs {
            rev.extend(
                self.derived_adjoint(lhs, rhs, t)
                    .into_iter()
                    .map(Line::Plain),
            );
        } else if adjoint {
            let lb = inp.bref(lhs).unwrap_or_default();
            let r = if array_valued(self.inp.program, unit, lhs) {
                rank_of(self.inp.program, unit, lhs)
            } else {
                0
            };
            let mut body = Vec::new();
            // A complex target of a real value passes on its real part.
            let complex_lhs = unit.symbol(t).ty.base == BaseType::Complex;
            let real_part = |m: String| {
                if complex_lhs && !crate::complex::is_complex(unit, rhs) {
                    format!("real({m}, 8)")
                } else {
                    m
                }
            };
            // v̄ is read in place ([`fold_in_place`]) only where no other
            // variable shares v's memory (an add into it would be one
            // into v̄).
            let alone =
                |t: SymbolId| dfort_ir::queries::class_of(unit, t).is_none_or(|c| c.len() < 2);
            if let Some(terms) = dfort_ir::accumulation::terms(inp.program, unit, lhs, rhs) {
                // `v = v ± e₁ ± e₂ …`: v's adjoint passes through
                // unchanged and each eᵢ's gets ±v̄.
                for (term, sign) in terms {
                    let m = if sign < 0 { neg(&lb) } else { lb.clone() };
                    self.adj(term, &real_part(m), r, &mut body);
                }
            } else if let Some(terms) = dfort_ir::accumulation::leading_terms(unit, lhs, rhs)
                .filter(|_| r == 0 && !complex_lhs && under.is_empty())
            {
                // `v = v ± e₁ ± …` whose terms read v too: v̄ passes
                // through (no reset, no adding it back) and each eᵢ's
                // partials, v's among them, get ±v̄ from a copy.
                body.push(format!("dfort_tb = {lb}"));
                for (term, sign) in terms {
                    let m = if sign < 0 {
                        neg("dfort_tb")
                    } else {
                        "dfort_tb".to_string()
                    };
                    self.adj(term, &m, r, &mut body);
                }
                if alone(t) && fold_in_place(&mut body, 0, "dfort_tb", &lb, "") {
                    self.out.trace.read_in_place += 1;
                }
            } else if r > 0 && !mentions_storage(unit, rhs, t) {
                // No aliasing: the lhs adjoint is read in place.
                self.adj(rhs, &real_part(lb.clone()), r, &mut body);
                body.push(format!("{under}{lb} = 0.0d0"));
            } else {
                let tb = match (r, complex_lhs) {
                    (0, false) => "dfort_tb".to_string(),
                    (0, true) => self.out.ztemp("complex(8)".into()),
                    (_, false) => format!("dfort_ta{r}"),
                    (_, true) => {
                        self.out.refuse(
                            span,
                            "a complex array assigned an expression of itself is not differentiated in reverse mode yet",
                        );
                        return rev;
                    }
                };
                body.push(format!("{tb} = {lb}"));
                body.push(format!("{under}{lb} = 0.0d0"));
                let reset = body.len() - 1;
                self.adj(rhs, &real_part(tb.clone()), r, &mut body);
                let in_place = alone(t)
                    && !complex_lhs
                    && fold_in_place(&mut body, reset - 1, &tb, &lb, &under);
                if in_place {
                    self.out.trace.read_in_place += 1;
                } else if r > 0 {
                    self.out.array_temps.insert(r);
                }
                if !in_place && r == 0 && under.is_empty() {
                    fold_reset(&mut body, reset, &lb);
                }
            }
            if r == 0 && under.is_empty() && !complex_lhs {
                // The values its partials name twice, computed once.
                let (lines, used) = crate::value_numbering::shared_in(unit, rhs, body);
                self.out.value_temps = self.out.value_temps.max(used);
                body = lines;
            }
            rev.extend(body.into_iter().map(Line::Plain));
        } else if inp.has_adjoint(t) && carried && inp.act.useful_after(id, t) {
            // A passive value overwrites a useful variable: its adjoint is
            // cut here (elsewhere it is zero already).
            if let Some(lb) = inp.bref(lhs) {
                rev.push(Line::Plain(format!("{under}{lb} = {zero}")));
            }
        }
        rev.extend(hoisted.after_adjoint());
        rev
    }

    /// The adjoint of `lhs = rhs` for a derived-type `lhs` (one value):
    /// `rhs`'s adjoint gains `lhs`'s leaf by leaf, and `lhs`'s is reset
    /// (through a temporary when `rhs` may be `lhs` itself).
    fn derived_adjoint(&mut self, lhs: &Expr, rhs: &Expr, t: SymbolId) -> Vec<String> {
        let inp = self.inp;
        let (program, unit) = (inp.program, &inp.unit);
        let Some(lb) = inp.bref(lhs) else {
            return Vec::new();
        };
        let zero = crate::derived::zero(program, unit, lhs, "_b");
        let rb = if self.active_inside(rhs) && crate::derived::carries_ref(program, unit, rhs) {
            inp.bref(rhs)
        } else {
            None
        };
        let Some(rb) = rb else {
            return vec![format!("{lb} = {zero}")];
        };
        let leaves = program
            .reference_type(unit, lhs)
            .map(|(scope, ty)| crate::derived::leaves(program, scope, &ty))
            .unwrap_or_default();
        let mut out = Vec::new();
        let from = if mentions_storage(unit, rhs, t) {
            let ty = program
                .reference_type(unit, lhs)
                .map(|(scope, ty)| crate::derived::derivative_type(program, scope, &ty, "_b"))
                .map(|ty| dfort_ir::dump::type_name(&ty))
                .unwrap_or_default();
            let tmp = self.out.ztemp(ty);
            out.push(format!("{tmp} = {lb}"));
            out.push(format!("{lb} = {zero}"));
            tmp
        } else {
            lb.clone()
        };
        for l in &leaves {
            out.push(format!("{rb}{l} = {rb}{l} + {from}{l}"));
        }
        if from == lb {
            out.push(format!("{lb} = {zero}"));
        }
        out
    }

    /// Whether a derivative flows through `e` here: it holds a variable
    /// that has an adjoint and is varied just before the statement being
    /// reversed, or the temporary of a hoisted function reference whose
    /// result TBR found varied — TBR's test, so that the adjoint reads
    /// only what TBR restores (fuzzer, seed 49049, case 6229: the partial
    /// of `sign(f(…), exp(t2(k - 1, 1)))` through a constant `f` read `k`
    /// after it changed).
    fn active_inside(&self, e: &Expr) -> bool {
        let inp = self.inp;
        let n = inp.orig.symbols.len();
        dp_of(&inp.unit, e).ids().any(|i: SymbolId| {
            inp.bname.contains_key(&i)
                && match i.index() >= n {
                    true => !self.out.passive_temps.contains_id(i),
                    false => self.out.varied.contains_id(i),
                }
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
        // Under a WHERE, the sum runs over the arm's elements only.
        let total = |m: &str| match &self.out.mask {
            Some(w) => format!("sum({m}, mask={w})"),
            None => format!("sum({m})"),
        };
        if mr > 0
            && rank_of(self.inp.program, unit, e) == 0
            && !matches!(
                e.kind,
                ExprKind::Var(_) | ExprKind::ArrayRef { .. } | ExprKind::Component { .. }
            )
        {
            // Below a scalar the adjoint is a scalar: no WHERE mask
            // applies to what is inside (a `sum`'s argument is whole).
            let collapsed = total(m);
            let mask = self.out.mask.take();
            self.adj(e, &collapsed, 0, out);
            self.out.mask = mask;
            return;
        }
        match &e.kind {
            ExprKind::Component { .. } if !crate::derived::carries_ref(inp.program, unit, e) => {}
            ExprKind::Var(_) | ExprKind::ArrayRef { .. } | ExprKind::Component { .. } => {
                if let Some(b) = inp.bref(e) {
                    if rank_of(self.inp.program, unit, e) == 0 && mr > 0 {
                        out.push(format!("{b} = {}", plus(&b, &total(m))));
                    } else if let (Some(w), true) = (&self.out.mask, mr > 0) {
                        out.push(format!("where ({w}) {b} = {}", plus(&b, m)));
                    } else {
                        out.push(format!("{b} = {}", plus(&b, m)));
                    }
                }
            }
            ExprKind::FunctionCall { name, args, target } => {
                let m = crate::hoist::not_hoisted(inp.program, unit, name, target, args);
                self.out.refuse(e.span, m);
            }
            ExprKind::Intrinsic { name, args }
                if dfort_ir::intrinsics::lookup(name).is_some_and(|i| i.rule.is_array_form()) =>
            {
                match self.out.mask.take() {
                    // An array adjoint entering a non-elemental rule under
                    // a WHERE: zero outside the arm's elements.
                    Some(w) if mr > 0 => {
                        let mm = format!("merge({m}, 0.0d0, {w})");
                        self.adj_array_intrinsic(e, name, args, &mm, mr, out);
                        self.out.mask = Some(w);
                    }
                    mask => {
                        self.out.mask = mask;
                        self.adj_array_intrinsic(e, name, args, m, mr, out);
                    }
                }
            }
            ExprKind::ArrayCtor(items) => self.adj_ctor(e, items, m, mr, out),
            _ if complex::special(unit, e).is_some() => {
                let s = complex::special(unit, e).unwrap_or(complex::Special::Conjugate);
                for (child, mm) in complex::adjoint(unit, e, s, m) {
                    let r = mr.max(partial_rank(inp.program, unit, e, child));
                    self.adj(child, &mm, r, out);
                }
            }
            _ => match partials(unit, e) {
                Some(parts) => {
                    let complex_value = complex::is_complex(unit, e);
                    // A multiplier two operands share is computed once,
                    // into `dfort_tb<k>` (as a person writes `tempb`).
                    let shared = mr == 0
                        && !complex_value
                        && self.out.mask.is_none()
                        && !matches!(crate::precedence::form(m), Form::Primary)
                        && parts.iter().filter(|(c, _)| self.active_inside(c)).count() > 1;
                    let held;
                    let m = if shared {
                        self.out.shared_depth += 1;
                        let k = self.out.shared_depth;
                        self.out.shared_temps = self.out.shared_temps.max(k);
                        held = format!("dfort_tb{k}");
                        out.push(format!("{held} = {m}"));
                        held.as_str()
                    } else {
                        m
                    };
                    for (child, d) in parts {
                        // The multiplier's own rank: a scalar adjoint times
                        // a scalar partial stays a scalar.
                        let r = mr.max(partial_rank(inp.program, unit, e, child));
                        let mm = match (complex_value, complex::is_complex(unit, child)) {
                            (false, false) => times(m, &d),
                            // z̄ += conj(f'(z)) w̄; a real operand takes the
                            // real part.
                            (true, true) => {
                                format!("{} * {}", p(m.to_string()), p(complex::conjugate(&d)))
                            }
                            (true, false) => format!(
                                "real({} * {}, 8)",
                                p(m.to_string()),
                                p(complex::conjugate(&d))
                            ),
                            (false, true) => {
                                self.out.refuse(
                                    e.span,
                                    format!(
                                        "no adjoint rule for `{}` of a complex value",
                                        print(unit, e)
                                    ),
                                );
                                continue;
                            }
                        };
                        self.adj(child, &mm, r, out);
                    }
                    if shared {
                        self.out.shared_depth -= 1;
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

    /// An array constructor: with a scalar adjoint (under a sum), every
    /// element gets it; with an array adjoint, it is copied to
    /// `dfort_tc` and each item gets its elements, `dfort_p` counting
    /// them, implied DOs looping again over their bounds.
    fn adj_ctor(&mut self, e: &Expr, items: &[Expr], m: &str, mr: usize, out: &mut Vec<String>) {
        let mask = self.out.mask.take();
        if mr == 0 {
            for it in items {
                self.adj_ctor_item(it, None, m, out);
            }
        } else if self.out.ctor_seed {
            self.out.refuse(
                e.span,
                "array constructors nested in array constructors are not differentiated in reverse mode yet",
            );
        } else {
            let m = match &mask {
                Some(w) => format!("merge({m}, 0.0d0, {w})"),
                None => m.to_string(),
            };
            self.out.ctor_temps = true;
            self.out.ctor_seed = true;
            out.push(format!("dfort_tc = {m}"));
            out.push("dfort_p = 0".into());
            for it in items {
                self.adj_ctor_item(it, Some("dfort_tc"), "", out);
            }
            self.out.ctor_seed = false;
        }
        self.out.mask = mask;
    }

    /// One item of a constructor: its elements' adjoints are the next
    /// elements of `seed` (`dfort_p` counts them), or the scalar `m` when
    /// there is no `seed`.
    fn adj_ctor_item(&mut self, it: &Expr, seed: Option<&str>, m: &str, out: &mut Vec<String>) {
        let unit = &self.inp.unit;
        if let ExprKind::ImpliedDo { items, var, bounds } = &it.kind {
            let b: Vec<String> = bounds.iter().map(|b| print(unit, b)).collect();
            let mut inner = Vec::new();
            for x in items {
                self.adj_ctor_item(x, seed, m, &mut inner);
            }
            if !inner.is_empty() {
                out.push(format!("do {} = {}", unit.symbol(*var).name, b.join(", ")));
                out.extend(inner.into_iter().map(|l| format!("  {l}")));
                out.push("end do".into());
            }
            return;
        }
        let r = rank_of(self.inp.program, unit, it);
        let Some(seed) = seed else {
            self.adj(it, m, 0, out);
            return;
        };
        if r == 0 {
            out.push("dfort_p = dfort_p + 1".into());
            self.adj(it, &format!("{seed}(dfort_p)"), 0, out);
        } else {
            let size = format!("size({})", print(unit, it));
            let part = format!("{seed}(dfort_p + 1:dfort_p + {size})");
            let part = if r == 1 {
                part
            } else {
                format!("reshape({part}, shape({}))", print(unit, it))
            };
            self.adj(it, &part, r, out);
            out.push(format!("dfort_p = dfort_p + {size}"));
        }
    }

    /// Reverse rules of the linear array intrinsics: each data argument
    /// gets the transposed operator applied to the adjoint `m` (of rank
    /// `mr`; a scalar `m` is broadcast over the result).
    fn adj_linear(
        &mut self,
        e: &Expr,
        name: &str,
        args: &[Arg],
        m: &str,
        mr: usize,
        out: &mut Vec<String>,
    ) {
        let unit = &self.inp.unit;
        let v = |x: &Expr| crate::precedence::operand(&print(unit, x));
        let Some(slots) = dfort_ir::intrinsics::slots(name, args) else {
            self.out.refuse(
                e.span,
                format!(
                    "no adjoint rule for `{}` with these arguments",
                    print(unit, e)
                ),
            );
            return;
        };
        let refuse = |g: &mut Self, why: &str| {
            g.out.refuse(
                e.span,
                format!("no adjoint rule for `{}`: {why}", print(unit, e)),
            );
        };
        let kw = |k: usize, key: &str| {
            slots[k]
                .map(|x| format!(", {key}={}", v(x)))
                .unwrap_or_default()
        };
        match (name, slots.as_slice()) {
            ("sum", [Some(x), dim, mask]) => {
                let r = rank_of(self.inp.program, unit, x);
                let (mut seed, mut sr) = match dim {
                    Some(d) if mr > 0 => (
                        format!("spread({m}, {}, size({}, {}))", v(d), v(x), v(d)),
                        r,
                    ),
                    _ => (m.to_string(), 0),
                };
                if let Some(k) = mask {
                    seed = format!("merge({seed}, 0.0d0, {})", v(k));
                    sr = r;
                }
                self.adj(x, &seed, sr, out);
            }
            ("spread", [Some(x), Some(d), Some(n)]) => {
                if mr == 0 {
                    self.adj(x, &times(m, &v(n)), 0, out);
                } else {
                    self.adj(
                        x,
                        &format!("sum({m}, dim={})", v(d)),
                        rank_of(self.inp.program, unit, x),
                        out,
                    );
                }
            }
            ("cshift", [Some(x), Some(sh), _]) => {
                if mr == 0 {
                    self.adj(x, m, 0, out);
                } else {
                    let seed = format!("cshift({m}, -{}{})", v(sh), kw(2, "dim"));
                    self.adj(x, &seed, rank_of(self.inp.program, unit, x), out);
                }
            }
            ("eoshift", [Some(x), Some(sh), boundary, _]) => {
                let boundary = boundary.filter(|b| self.active_inside(b));
                if boundary.is_some_and(|b| rank_of(self.inp.program, unit, b) > 0) {
                    return refuse(self, "an active array boundary is not differentiated yet");
                }
                let mm = if mr == 0 {
                    shaped_like(m, &v(shape_source(self.inp.program, unit, x)))
                } else {
                    m.to_string()
                };
                let dim = kw(3, "dim");
                let seed = format!("eoshift({mm}, -{}{dim})", v(sh));
                // A scalar boundary fills the elements no element of x
                // reaches: it gets their adjoints, those the shift back
                // and forth (which zeroes them) leaves out.
                if let Some(b) = boundary {
                    let filled = format!("sum({mm} - eoshift({seed}, {}{dim}))", v(sh));
                    self.adj(b, &filled, 0, out);
                }
                self.adj(x, &seed, rank_of(self.inp.program, unit, x), out);
            }
            ("transfer", [Some(x), Some(_), size]) => {
                if !dfort_ir::intrinsics::transfer_keeps_values(unit, args) {
                    self.out
                        .refuse(e.span, crate::tangent::transfer_refusal(unit, e));
                    return;
                }
                // The result holds x's first elements in array element
                // order: they get its adjoint, the others none.
                let xr = rank_of(self.inp.program, unit, x);
                let rr = rank_of(self.inp.program, unit, e);
                let seed = match (xr, rr, mr, size) {
                    (0, 0, _, _) | (0, _, 0, _) => m.to_string(),
                    (0, _, _, _) => format!("{m}(1)"),
                    (_, 0, _, _) => format!("reshape([{m}], shape({}), pad=[0.0d0])", v(x)),
                    (_, _, 0, None) => {
                        self.adj(x, m, 0, out);
                        return;
                    }
                    // A broadcast adjoint over SIZE= elements: the
                    // first SIZE elements of x get it.
                    (_, _, 0, Some(n)) => format!(
                        "reshape(spread({m}, 1, {}), shape({}), pad=[0.0d0])",
                        v(n),
                        v(x)
                    ),
                    _ => format!("reshape({m}, shape({}), pad=[0.0d0])", v(x)),
                };
                self.adj(x, &seed, if seed == m { 0 } else { xr }, out);
            }
            ("reshape", [Some(x), Some(_), pad, order]) => {
                if pad.is_some_and(|p| self.active_inside(p)) {
                    return refuse(self, "an active PAD= is not differentiated yet");
                }
                // ORDER= of a rank-2 result: [1, 2] is the array element
                // order, [2, 1] fills it row by row, so its adjoint is read
                // row by row (transposed) back into x's order.
                let transposed =
                    match order.map(|o| &o.kind) {
                        None => false,
                        Some(ExprKind::ArrayCtor(items)) => {
                            let ints: Vec<Option<i64>> = items
                                .iter()
                                .map(|i| match i.kind {
                                    ExprKind::Int(k) => Some(k),
                                    _ => None,
                                })
                                .collect();
                            match ints.as_slice() {
                                [Some(1), Some(2)] => false,
                                [Some(2), Some(1)] => true,
                                _ => return refuse(
                                    self,
                                    "ORDER= other than [1, 2] or [2, 1] is not differentiated yet",
                                ),
                            }
                        }
                        Some(_) => {
                            return refuse(
                                self,
                                "ORDER= other than [1, 2] or [2, 1] is not differentiated yet",
                            )
                        }
                    };
                if mr == 0 {
                    self.adj(x, m, 0, out);
                } else {
                    let back = if transposed {
                        format!("transpose({m})")
                    } else {
                        m.to_string()
                    };
                    // x's elements past the result's get none (PAD=).
                    let seed = format!(
                        "reshape({back}, shape({}), pad=[0.0d0])",
                        v(shape_source(self.inp.program, unit, x))
                    );
                    self.adj(x, &seed, rank_of(self.inp.program, unit, x), out);
                }
            }
            ("pack", [Some(x), Some(mask), vector]) => {
                if rank_of(self.inp.program, unit, mask) == 0 {
                    return refuse(self, "a scalar mask is not differentiated yet");
                }
                let seed = if mr == 0 {
                    format!("merge({m}, 0.0d0, {})", v(mask))
                } else {
                    format!("unpack({m}, {}, 0.0d0)", v(mask))
                };
                self.adj(x, &seed, rank_of(self.inp.program, unit, x), out);
                // The elements after the packed ones come from VECTOR=:
                // the adjoint without its first count(mask) elements.
                if let Some(w) = vector {
                    let full = if mr == 0 {
                        shaped_like(m, &v(shape_source(self.inp.program, unit, w)))
                    } else {
                        m.to_string()
                    };
                    let c = format!("count({})", v(mask));
                    self.adj(w, &format!("eoshift(eoshift({full}, {c}), -{c})"), 1, out);
                }
            }
            ("unpack", [Some(x), Some(mask), Some(field)]) => {
                let full = if mr > 0 {
                    m.to_string()
                } else {
                    format!("merge({m}, {m}, {})", v(mask))
                };
                let into_x = format!(
                    "pack({full}, {}, {})",
                    v(mask),
                    shaped_like("0.0d0", &v(shape_source(self.inp.program, unit, x)))
                );
                self.adj(x, &into_x, 1, out);
                if rank_of(self.inp.program, unit, field) > 0 {
                    let seed = format!("merge(0.0d0, {full}, {})", v(mask));
                    self.adj(field, &seed, rank_of(self.inp.program, unit, field), out);
                } else {
                    let seed = format!("sum({full}, mask=.not. {})", v(mask));
                    self.adj(field, &seed, 0, out);
                }
            }
            ("merge", [Some(t), Some(f), Some(mask)]) => {
                let r = mr.max(rank_of(self.inp.program, unit, e));
                self.adj(t, &format!("merge({m}, 0.0d0, {})", v(mask)), r, out);
                self.adj(f, &format!("merge(0.0d0, {m}, {})", v(mask)), r, out);
            }
            _ => refuse(self, "these arguments are not supported"),
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
        let v = |x: &Expr| crate::precedence::operand(&print(unit, x));
        let m = crate::precedence::operand(m);
        let keywords = args.iter().any(|a| a.keyword.is_some());
        if name != "transpose" && dfort_ir::intrinsics::linear_array(name).is_some() {
            self.adj_linear(e, name, args, &m, mr, out);
            return;
        }
        match (name, args.len()) {
            // x̄ += m x / ‖x‖, nothing at x = 0 (the subgradient 0).
            ("norm2", 1) if !keywords && mr == 0 => {
                let x = &args[0].value;
                let n = crate::partials::norm2_nonzero(&v(x), "");
                self.adj(
                    x,
                    &format!("{m} * {} / {n}", v(x)),
                    rank_of(self.inp.program, unit, x),
                    out,
                );
            }
            // Along dimension k: each line's adjoint over its norm, spread
            // back along k.
            ("norm2", 2) if crate::partials::norm2_dim(args).is_some() => {
                let x = &args[0].value;
                let k = v(&args[1].value);
                let n = crate::partials::norm2_nonzero(&v(x), &format!(", dim={k}"));
                let seed = format!("spread({m} / {n}, {k}, size({}, {k})) * {}", v(x), v(x));
                self.adj(x, &seed, rank_of(self.inp.program, unit, x), out);
            }
            // x̄ⱼ += m Πᵢ≠ⱼ xᵢ, without dividing by any element.
            ("product", 1) if !keywords && mr == 0 => {
                let x = &args[0].value;
                let j = "dfort_j";
                match (
                    crate::partials::product_of_others(self.inp.program, unit, args, j),
                    inp.bref(x),
                ) {
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
            // The selected element(s) (the first at ties) get the adjoint.
            ("maxval" | "minval", _) => {
                let x = &args[0].value;
                let Some(sel) = crate::partials::selection(self.inp.program, unit, name, args)
                else {
                    return self
                        .out
                        .refuse(e.span, crate::partials::whole_rank1_only(unit, name, x));
                };
                let Some(b) = inp.bref(x) else { return };
                match sel {
                    crate::partials::Selection::Element { at, some } => {
                        let guard = some.map(|a| format!("if ({a}) ")).unwrap_or_default();
                        out.push(format!("{guard}{b}({at}) = {b}({at}) + {m}"));
                    }
                    crate::partials::Selection::Along { subs, range, lower } => {
                        let each = if mr == 0 {
                            m.clone()
                        } else if self.out.ctor_seed {
                            return self.out.refuse(
                                e.span,
                                "maxval/minval along a dimension inside an array constructor is not differentiated in reverse mode yet",
                            );
                        } else {
                            self.out.ctor_temps = true;
                            out.push(format!("dfort_tc = {m}"));
                            format!("dfort_tc(dfort_j - ({lower}) + 1)")
                        };
                        self.out.column_loops = true;
                        out.push(format!("do dfort_j = {range}"));
                        out.push(format!("  {b}({subs}) = {b}({subs}) + {each}"));
                        out.push("end do".into());
                    }
                    crate::partials::Selection::Masked { chosen, dim } => {
                        let each = if mr == 0 {
                            m.clone()
                        } else {
                            format!("spread({m}, {dim}, size({}, {dim}))", v(x))
                        };
                        self.out.column_loops = true;
                        out.push(format!("{b} = {b} + merge({each}, 0.0d0, {chosen})"));
                    }
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
                let (ra, rb) = (
                    rank_of(self.inp.program, unit, a),
                    rank_of(self.inp.program, unit, b),
                );
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
                // temporaries the array form needs — when a derivative
                // flows into the matrix here (otherwise the vector's
                // values may not be there to read: seed 1136, case 7686).
                let column_loop = match (&a.kind, &b.kind, ra, rb) {
                    (ExprKind::Var(av), ExprKind::Var(bv), 2, 1) if self.active_inside(a) => {
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
fn partial_rank(program: &Program, unit: &Unit, e: &Expr, child: &Expr) -> usize {
    match &e.kind {
        ExprKind::Unary { .. } => 0,
        ExprKind::Binary { op, lhs, rhs } => match op {
            BinaryOp::Add | BinaryOp::Sub => 0,
            BinaryOp::Mul if std::ptr::eq(child, &**lhs) => rank_of(program, unit, rhs),
            BinaryOp::Mul => rank_of(program, unit, lhs),
            BinaryOp::Div if std::ptr::eq(child, &**lhs) => rank_of(program, unit, rhs),
            _ => rank_of(program, unit, lhs).max(rank_of(program, unit, rhs)),
        },
        ExprKind::Intrinsic { args, .. } => args
            .iter()
            .map(|a| rank_of(program, unit, &a.value))
            .max()
            .unwrap_or(0),
        _ => rank_of(program, unit, e),
    }
}

/// The outer product `u vᵀ` of two vectors, as a rank-1 `matmul`.
fn outer(u: &str, v: &str) -> String {
    format!("matmul(reshape({u}, [size({u}), 1]), reshape({v}, [1, size({v})]))")
}

/// Whether `e` mentions variable `s` or a variable that may share its
/// memory (its may-alias class): the adjoints `e`'s partials increment
/// may then be `s`'s own, which must be read before they change.
fn mentions_storage(unit: &Unit, e: &Expr, s: SymbolId) -> bool {
    match dfort_ir::queries::class_of(unit, s) {
        Some(class) => class.iter().any(|&m| dfort_ir::queries::mentions(e, m)),
        None => dfort_ir::queries::mentions(e, s),
    }
}

/// Whether an assignment target denotes more than one element.
fn array_valued(program: &Program, unit: &Unit, e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Var(s) => unit.symbol(*s).rank() > 0,
        ExprKind::ArrayRef { subs, .. } => {
            subs.iter().any(|s| matches!(s, Subscript::Range { .. }))
        }
        // `ps%x`, `v%h(:)` (whole array components are written as full
        // sections, [`crate::declare::derivative_unit`]).
        ExprKind::Component { .. } => rank_of(program, unit, e) > 0,
        _ => false,
    }
}

/// Scalar `m` broadcast to the shape of array `x` (both printed), from
/// `x`'s shape alone: the reverse sweep may not hold `x`'s values (the
/// forward sweep can leave them uncomputed), and `0 * x` of a signalling
/// NaN traps (fuzzer seed 1134, case 207).
fn shaped_like(m: &str, x: &str) -> String {
    format!("reshape(spread({m}, 1, size({x})), shape({x}))")
}

/// A part of array expression `e` with its shape whose evaluation reads
/// no more than needed: through element-wise operations and intrinsics
/// down to an array operand of the same rank (`sin(t(1, :))` → `t(1, :)`:
/// the reverse sweep may not hold `t`'s values, and `sin` of a signalling
/// NaN traps, fuzzer seed 1136, case 7805); `e` itself otherwise.
fn shape_source<'e>(program: &Program, unit: &Unit, e: &'e Expr) -> &'e Expr {
    let r = rank_of(program, unit, e);
    let same = |x: &'e Expr| rank_of(program, unit, x) == r;
    match &e.kind {
        ExprKind::Unary { operand, .. } => shape_source(program, unit, operand),
        ExprKind::Binary { lhs, rhs, .. } if same(lhs) => shape_source(program, unit, lhs),
        ExprKind::Binary { rhs, .. } if same(rhs) => shape_source(program, unit, rhs),
        ExprKind::Intrinsic { name, args }
            if dfort_ir::intrinsics::lookup(name).is_some_and(|i| i.elemental) =>
        {
            args.iter()
                .map(|a| &a.value)
                .find(|x| same(x))
                .map_or(e, |x| shape_source(program, unit, x))
        }
        _ => e,
    }
}
