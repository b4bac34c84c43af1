//! Tangent (forward-mode) code: for a root subroutine `r`, writes `r_d`
//! with Tapenade's convention (every formal with a derivative is followed
//! by it, `xd`), computing `ẏ = J ẋ` alongside the original statements.
//!
//! Contract: each assignment to a variable that has a derivative is
//! preceded by the assignment of its derivative, computed from the
//! original values (so `x = x*y` works); control flow, labels and
//! passive statements are copied; a call to a procedure with a tangent
//! calls `c_d`, and a function referenced in an active assignment is
//! hoisted ([`crate::hoist`]) and called as `f_d`. Anything without a
//! derivative rule — an active actual passed to a procedure without a
//! tangent, an active reference to a function that is not hoisted, an
//! intrinsic with no rule, derived-type components, READ, and what
//! the facts refuse up front ([`dfort_analysis::refusals`]) — is refused with its location: no
//! code is produced then. The routine's
//! specification part is written by [`crate::declare`], shared with the
//! adjoint.

use crate::calls::{host_module, prepare, result_type, DerivActual, Keywords, Prepared};
use crate::declare::{derivative_unit, Declared, Flavour};
use crate::fortran::{case_line, do_head, end_do, jump_lines, renamed_ref, Writer};
use crate::hoist::HoistMap;
use crate::names::DiffSet;
use crate::partials::partials;
use crate::Refusal;
use dfort_analysis::facts::ProgramFacts;
use dfort_analysis::refusals::Derivative;
use dfort_ir::dp::{dp_of, target};
use dfort_ir::dump::call_statement;
use dfort_ir::dump::expr as print;
use dfort_ir::*;
use std::collections::{BTreeSet, HashMap};

struct Gen<'a> {
    program: &'a Program,
    diff: &'a DiffSet<'a>,
    unit: &'a Unit,
    /// Derivative name of each symbol that has one.
    dname: HashMap<SymbolId, String>,
    hoisted: HoistMap,
    refusals: Vec<Refusal>,
    w: Writer,
    /// Scalar temporaries holding derivatives of values passed to calls.
    ztemps: Vec<String>,
    /// How many values one statement and its derivative share at most
    /// (`dfort_v<k>`, [`crate::value_numbering`]).
    value_temps: usize,
    /// Whether `dfort_j` (the element index of `product`'s derivative)
    /// is used.
    index_j: bool,
    /// Derivative modules (`m_d`) of the callees this routine calls.
    used_modules: BTreeSet<String>,
    /// The units whose tangent routines this routine calls.
    called: BTreeSet<UnitId>,
    module: Option<String>,
    /// A copy of the original (no derivatives, calls unchanged).
    primal: bool,
    /// How many WHERE constructs enclose the statement being written.
    in_where: u32,
    /// Assignments in WHERE constructs whose hoisted references were
    /// written before the construct.
    before_where: std::collections::HashSet<StmtId>,
    /// How the comment heading each statement's derivative names the
    /// statement ([`crate::origin`]).
    origin: crate::origin::Origin<'a>,
}

fn p(s: String) -> String {
    format!("({s})")
}

impl Gen<'_> {
    fn refuse(&mut self, span: Span, message: impl Into<crate::Reason>) {
        self.refusals.push(Refusal::new(span, message));
    }

    fn e(&self, e: &Expr) -> String {
        p(print(self.unit, e))
    }

    /// The derivative of a variable reference (`xd`, `xd(i)`), if it has one.
    /// Zeroes the derivative of what READ item `item` defined (an implied
    /// DO is replayed: its variable ends as the READ left it).
    fn reset_read_item(&mut self, item: &Expr) {
        if let ExprKind::ImpliedDo { items, var, bounds } = &item.kind {
            let has_d = |x: &Expr| {
                dfort_ir::dp::io_targets(std::slice::from_ref(x))
                    .iter()
                    .any(|(t, _)| self.dname.contains_key(t) && t != var)
            };
            if items.iter().any(has_d) {
                let b: Vec<String> = bounds.iter().map(|e| print(self.unit, e)).collect();
                self.w.line(&format!(
                    "do {} = {}",
                    self.unit.symbol(*var).name,
                    b.join(", ")
                ));
                self.w.indent();
                for it in items {
                    self.reset_read_item(it);
                }
                self.w.dedent();
                self.w.line("end do");
            }
            return;
        }
        if let Some(d) = self.dref(item) {
            let zero = crate::derived::zero(self.program, self.unit, item, "_d");
            self.w.line(&format!("{d} = {zero}"));
        }
    }

    fn dref(&self, e: &Expr) -> Option<String> {
        renamed_ref(self.unit, &self.dname, e)
    }

    /// ẋ of an expression; `None` when it is zero.
    fn tan(&mut self, e: &Expr) -> Option<String> {
        match &e.kind {
            ExprKind::Var(_) | ExprKind::ArrayRef { .. } => self.dref(e),
            ExprKind::Component { .. } => {
                if crate::derived::carries_ref(self.program, self.unit, e) {
                    self.dref(e)
                } else {
                    None
                }
            }
            ExprKind::Int(_) | ExprKind::Real { .. } | ExprKind::Logical(_) | ExprKind::Str(_) => {
                None
            }
            ExprKind::Intrinsic { name, args }
                if dfort_ir::intrinsics::linear_array(name).is_some() =>
            {
                self.linear_intrinsic(e, name, args)
            }
            ExprKind::Intrinsic { name, args }
                if dfort_ir::intrinsics::lookup(name)
                    .is_some_and(|i| matches!(i.rule, dfort_ir::intrinsics::Rule::Array(_))) =>
            {
                self.array_intrinsic(e, name, args)
            }
            ExprKind::Intrinsic { args, .. } if crate::complex::special(self.unit, e).is_some() => {
                let s = crate::complex::special(self.unit, e)?;
                let ds: Vec<Option<String>> = args.iter().map(|a| self.tan(&a.value)).collect();
                let d = |x: &Expr| {
                    args.iter()
                        .position(|a| std::ptr::eq(&a.value, x))
                        .and_then(|i| ds[i].clone())
                };
                crate::complex::tangent(self.unit, e, s, &d)
            }
            ExprKind::Unary { .. } | ExprKind::Binary { .. } | ExprKind::Intrinsic { .. } => {
                match partials(self.unit, e) {
                    // ẏ = Σ ∂φ/∂cᵢ · ċᵢ
                    Some(parts) => parts
                        .into_iter()
                        .filter_map(|(child, d)| {
                            self.tan(child).map(|dc| crate::precedence::times(&d, &dc))
                        })
                        .reduce(|a, b| crate::precedence::plus(&a, &b)),
                    None => {
                        if self.has_derivative_inside(e) {
                            self.refuse(
                                e.span,
                                format!(
                                    "no derivative rule for `{}` with active arguments",
                                    print(self.unit, e)
                                ),
                            );
                        }
                        None
                    }
                }
            }
            ExprKind::FunctionCall { name, args, target } => {
                if args.iter().any(|a| self.has_derivative_inside(&a.value)) {
                    let m = crate::hoist::not_hoisted(self.program, self.unit, name, target, args);
                    self.refuse(e.span, m);
                }
                None
            }
            ExprKind::ArrayCtor(items) => {
                if !items.iter().any(|i| self.has_derivative_inside(i)) {
                    return None;
                }
                let parts: Vec<String> = items.iter().map(|i| self.tan_item(i)).collect();
                Some(format!("[{}]", parts.join(", ")))
            }
            _ => {
                if self.has_derivative_inside(e) {
                    self.refuse(
                        e.span,
                        "the tangent generator does not handle this active expression yet",
                    );
                }
                None
            }
        }
    }

    fn has_derivative_inside(&self, e: &Expr) -> bool {
        dp_of(self.unit, e)
            .ids()
            .any(|i| self.dname.contains_key(&i))
    }

    /// Array intrinsics, whose derivatives are arrays too.
    fn array_intrinsic(&mut self, e: &Expr, name: &str, args: &[Arg]) -> Option<String> {
        let ds: Vec<Option<String>> = args.iter().map(|a| self.tan(&a.value)).collect();
        if ds.iter().all(Option::is_none) {
            return None;
        }
        let d0 = ds[0].clone().map(p);
        match (name, args.len()) {
            // Σⱼ ẋⱼ Πᵢ≠ⱼ xᵢ, without dividing by any element.
            ("product", 1) if args[0].keyword.is_none() => {
                let j = "dfort_j";
                match crate::partials::product_of_others(self.program, self.unit, args, j) {
                    Some((others, range)) => self.dref(&args[0].value).map(|d| {
                        self.index_j = true;
                        format!("sum({d} * [({others}, {j} = {range})])")
                    }),
                    None => {
                        self.refuse(
                            e.span,
                            crate::partials::whole_rank1_only(self.unit, "product", &args[0].value),
                        );
                        None
                    }
                }
            }
            // The derivative of the element(s) selected (the first at ties).
            ("maxval" | "minval", _) => {
                match crate::partials::selection(self.program, self.unit, name, args) {
                    Some(sel) => {
                        let d = self.dref(&args[0].value)?;
                        Some(match sel {
                            crate::partials::Selection::Element { at, some: None } => {
                                format!("{d}({at})")
                            }
                            crate::partials::Selection::Element {
                                at,
                                some: Some(any),
                            } => {
                                format!("merge({d}({at}), 0.0d0, {any})")
                            }
                            crate::partials::Selection::Along { subs, range, .. } => {
                                self.index_j = true;
                                format!("[({d}({subs}), dfort_j = {range})]")
                            }
                            crate::partials::Selection::Masked { chosen, dim } => {
                                self.index_j = true;
                                format!("sum(merge({d}, 0.0d0, {chosen}), dim={dim})")
                            }
                        })
                    }
                    None => {
                        self.refuse(
                            e.span,
                            crate::partials::whole_rank1_only(self.unit, name, &args[0].value),
                        );
                        None
                    }
                }
            }
            // ‖x‖' = Σ xᵢ ẋᵢ / ‖x‖, and 0 at x = 0 (the subgradient 0;
            // no division by zero: the numerator is 0 there too).
            ("norm2", 1) if args[0].keyword.is_none() => d0.map(|d| {
                let x = self.e(&args[0].value);
                format!(
                    "sum({x} * {d}) / {}",
                    crate::partials::norm2_nonzero(&x, "")
                )
            }),
            // Along a dimension: the same, line by line.
            ("norm2", 2) if crate::partials::norm2_dim(args).is_some() => d0.map(|d| {
                let x = self.e(&args[0].value);
                let dim = format!(", dim={}", self.e(&args[1].value));
                let nz = crate::partials::norm2_nonzero(&x, &dim);
                format!("sum({x} * {d}{dim}) / {nz}")
            }),
            ("dot_product" | "matmul", 2) => {
                let a = self.e(&args[0].value);
                let b = self.e(&args[1].value);
                sum(
                    d0.map(|d| format!("{name}({d}, {b})")),
                    ds[1].clone().map(|d| format!("{name}({a}, {})", p(d))),
                )
            }
            _ => {
                self.refuse(
                    e.span,
                    format!(
                        "no derivative rule for `{name}` with {} arguments",
                        args.len()
                    ),
                );
                None
            }
        }
    }

    /// A linear array intrinsic (`sum`, `spread`, `cshift`, `eoshift`,
    /// `reshape`, `pack`, `unpack`, `merge`, `transpose`): the same
    /// reference with each data argument replaced by its tangent (zeros
    /// of its shape when it has none), the others unchanged.
    fn linear_intrinsic(&mut self, e: &Expr, name: &str, args: &[Arg]) -> Option<String> {
        let Some(slots) = dfort_ir::intrinsics::slots(name, args) else {
            if args.iter().any(|a| self.has_derivative_inside(&a.value)) {
                self.refuse(
                    e.span,
                    format!(
                        "no derivative rule for `{}` with these arguments",
                        print(self.unit, e)
                    ),
                );
            }
            return None;
        };
        let (names, data) = dfort_ir::intrinsics::linear_array(name)?;
        if name == "transfer" && !dfort_ir::intrinsics::transfer_keeps_values(self.unit, args) {
            if args.iter().any(|a| self.has_derivative_inside(&a.value)) {
                self.refuse(e.span, transfer_refusal(self.unit, e));
            }
            return None;
        }
        let ds: Vec<Option<String>> = slots
            .iter()
            .enumerate()
            .map(|(k, a)| {
                a.filter(|_| data.contains(&names[k]))
                    .and_then(|a| self.tan(a))
            })
            .collect();
        if ds.iter().all(Option::is_none) {
            return None;
        }
        let mut parts = Vec::new();
        // Positional while every earlier argument is there, by keyword
        // after a gap.
        let mut gap = false;
        for (k, a) in slots.iter().enumerate() {
            let Some(a) = a else {
                gap = true;
                continue;
            };
            let v = if data.contains(&names[k]) {
                match &ds[k] {
                    Some(d) => d.clone(),
                    None if crate::partials::rank_of(self.program, self.unit, a) > 0 => {
                        format!("0.0d0 * {}", self.e(a))
                    }
                    None => "0.0d0".into(),
                }
            } else {
                print(self.unit, a)
            };
            parts.push(if gap { format!("{}={v}", names[k]) } else { v });
        }
        Some(format!("{name}({})", parts.join(", ")))
    }

    /// The tangent of one item of an array constructor, as many elements
    /// as the item has: zeros of its shape when it carries no derivative.
    fn tan_item(&mut self, item: &Expr) -> String {
        if let ExprKind::ImpliedDo { items, var, bounds } = &item.kind {
            let parts: Vec<String> = items.iter().map(|i| self.tan_item(i)).collect();
            let b: Vec<String> = bounds.iter().map(|b| print(self.unit, b)).collect();
            let v = &self.unit.symbol(*var).name;
            return format!("({}, {v} = {})", parts.join(", "), b.join(", "));
        }
        match self.tan(item) {
            Some(d) => d,
            None if crate::partials::rank_of(self.program, self.unit, item) > 0 => {
                format!("0.0d0 * {}", self.e(item))
            }
            None => "0.0d0".into(),
        }
    }

    /// `call c_d(...)` for a CALL or a hoisted function reference whose
    /// value and derivative go to `result`.
    fn tangent_call(&mut self, span: Span, c: UnitId, args: &[Arg], result: Option<SymbolId>) {
        let cu = self.program.unit(c);
        let prepared = prepare(
            self.program,
            self.diff,
            self.unit,
            self.module.as_ref(),
            c,
            args,
            'd',
            |e| self.dref(e),
        );
        let Prepared {
            module,
            names: cn,
            args: dargs,
        } = match prepared {
            Ok(p) => p,
            Err(ms) => {
                for m in ms {
                    self.refuse(span, m);
                }
                return;
            }
        };
        self.used_modules.extend(module);
        self.called.insert(c);
        let mut list = Vec::new();
        for (primal, d, kw) in dargs {
            list.push(Keywords::primal(&kw, primal));
            match d {
                None => {}
                Some(DerivActual::Ref(r)) => list.push(Keywords::derivative(&kw, r)),
                Some(DerivActual::Value(e, f)) => {
                    self.ztemps
                        .push(dfort_ir::dump::type_name(&cu.symbol(f).ty));
                    let z = format!("dfort_z{}", self.ztemps.len());
                    let d = self.tan(e).unwrap_or_else(|| "0.0d0".into());
                    self.w.line(&format!("{z} = {d}"));
                    list.push(Keywords::derivative(&kw, z));
                }
            }
        }
        // With an absent optional argument (trailing ones too) the result
        // and its derivative go by keyword.
        let by_keyword = crate::calls::in_formal_order(cu, args)
            .iter()
            .any(|a| a.is_none());
        let keyword = |formal: &str, actual: String| match by_keyword {
            true => format!("{formal}={actual}"),
            false => actual,
        };
        if let (Some(r), Some(cr)) = (result, cu.result) {
            list.push(keyword(
                &cu.symbol(cr).name,
                self.unit.symbol(r).name.clone(),
            ));
            if let Some(formal) = cn.get(&cr) {
                let d = match self.dname.get(&r) {
                    Some(d) => d.clone(),
                    None => {
                        self.ztemps.push(result_type(cu));
                        format!("dfort_z{}", self.ztemps.len())
                    }
                };
                list.push(keyword(formal, d));
            }
        }
        self.w.line(&format!(
            "call {}({})",
            self.diff.routine_name(self.program, cu.id, "_d"),
            list.join(", ")
        ));
    }

    /// The hoisted references' derivative calls (or, for functions
    /// without one, the references), their array temporaries allocated.
    fn hoisted_calls(&mut self, hoisted: &[crate::hoist::Hoisted]) {
        let unit = self.unit;
        for h in hoisted {
            let temps = [Some(&unit.symbol(h.temp).name), self.dname.get(&h.temp)];
            for t in temps.into_iter().flatten() {
                for line in h.allocation(unit, t) {
                    self.w.line(&line);
                }
            }
            if self.diff.contains(h.callee) {
                self.tangent_call(h.span, h.callee, &h.args, Some(h.temp));
            } else {
                let tn = &unit.symbol(h.temp).name;
                let reference = dfort_ir::dump::reference(unit, &h.name, &h.args);
                self.w.line(&format!("{tn} = {reference}"));
            }
        }
    }

    /// Writes, before WHERE construct `id`, the calls of the references
    /// hoisted out of its assignments that may go there
    /// ([`crate::hoist::before_where`]; the construct's `label` goes on
    /// a `continue` before them); the others are refused where they are.
    fn where_hoisted(&mut self, id: StmtId, label: &mut String) {
        let unit = self.unit;
        let mut nested = Vec::new();
        let mut todo = vec![id];
        while let Some(s) = todo.pop() {
            nested.push(s);
            for b in unit.stmt(s).kind.blocks().into_iter().rev() {
                todo.extend(b.iter().rev().copied());
            }
        }
        for s in nested {
            let hoisted = self.hoisted.get(&s).cloned().unwrap_or_default();
            if hoisted.is_empty() || !crate::hoist::before_where(unit, id, &hoisted) {
                continue;
            }
            if !label.is_empty() {
                self.w.line(&format!("{label}continue"));
                label.clear();
            }
            self.hoisted_calls(&hoisted);
            self.before_where.insert(s);
        }
    }

    /// The comment naming the primal statement at `span`, before its
    /// derivative.
    fn origin(&mut self, span: Span) {
        if let Some(c) = crate::origin::comment(self.origin, span) {
            self.w.line(&c);
        }
    }

    fn label(st: &Stmt) -> String {
        st.label.map(|l| format!("{l} ")).unwrap_or_default()
    }

    fn block(&mut self, ids: &[StmtId]) {
        for id in ids {
            self.stmt(*id);
        }
    }

    fn stmt(&mut self, id: StmtId) {
        let unit = self.unit;
        let st = unit.stmt(id);
        let mut label = Self::label(st);
        match &st.kind {
            StmtKind::Assign { lhs, rhs } => {
                // A reference left in the expression runs as the original:
                // one to a function that writes something with a derivative
                // must have been hoisted (its tangent routine must run), and
                // where the target has a derivative, one to a function that
                // reads a global (the global's derivative flows through it:
                // seed 45046, case 2509, 25% off).
                let with_d = target(lhs).is_some_and(|(t, _)| self.dname.contains_key(&t));
                if with_d && !self.primal {
                    self.origin(st.span);
                }
                if !self.primal {
                    let diff = &self.diff;
                    for (span, why) in crate::hoist::unhoisted_references(rhs, |c| {
                        diff.writes_derivatives(c) || (with_d && diff.reads_globals(c))
                    }) {
                        self.refusals.push(crate::Refusal::new(span, why));
                    }
                }
                let hoisted = self.hoisted.get(&id).cloned().unwrap_or_default();
                if !hoisted.is_empty() && self.in_where > 0 {
                    // Written before the construct ([`Tangent::where_hoisted`]).
                    if !self.before_where.contains(&id) {
                        self.refuse(st.span, crate::partials::USER_FUNCTION_IN_WHERE);
                        return;
                    }
                } else {
                    if !hoisted.is_empty() && !label.is_empty() {
                        self.w.line(&format!("{label}continue"));
                        label.clear();
                    }
                    self.hoisted_calls(&hoisted);
                }
                let mut lines = Vec::new();
                if let Some((t, _)) = target(lhs) {
                    let program = self.program;
                    if self.dname.contains_key(&t)
                        && crate::derived::carries_ref(program, unit, lhs)
                    {
                        let zero = crate::derived::zero(program, unit, lhs, "_d");
                        if crate::derived::is_derived(program, unit, lhs) {
                            if let Some(m) = crate::derived::unsupported_assignment(
                                program,
                                unit,
                                lhs,
                                rhs,
                                self.has_derivative_inside(rhs),
                            ) {
                                self.refuse(st.span, m);
                            }
                        }
                        let d = self.tan(rhs).unwrap_or(zero);
                        if let Some(dl) = self.dref(lhs) {
                            lines.push(format!("{dl} = {d}"));
                        }
                    }
                }
                lines.push(format!("{} = {}", print(unit, lhs), print(unit, rhs)));
                if lines.len() > 1 && self.in_where == 0 {
                    // The values the derivative and the statement both
                    // name, computed once.
                    let (shared, used) = crate::value_numbering::shared_in(unit, rhs, lines);
                    self.value_temps = self.value_temps.max(used);
                    lines = shared;
                }
                for l in lines {
                    self.w.line(&format!("{label}{l}"));
                    label.clear();
                }
            }
            StmtKind::Call {
                name,
                args,
                target: tgt,
            } => {
                if !label.is_empty() {
                    self.w.line(&format!("{label}continue"));
                }
                let callee = match tgt {
                    CallTarget::Unit(c) if self.diff.contains(*c) && !self.primal => Some(*c),
                    _ => None,
                };
                let moved = dfort_ir::intrinsics::move_alloc(&st.kind);
                match callee {
                    Some(c) => {
                        self.origin(st.span);
                        self.tangent_call(st.span, c, args, None)
                    }
                    // The tangents' allocations move with the arrays'.
                    None if moved.is_some() => {
                        if let Some((from, to)) = moved {
                            if let (Some(fd), Some(td)) = (self.dref(from), self.dref(to)) {
                                self.w.line(&format!("call move_alloc({fd}, {td})"));
                            }
                        }
                        self.w.line(&call_statement(unit, name, args));
                    }
                    // An active value passed to a procedure without a
                    // derivative routine is the facts' refusal.
                    None => {
                        self.w.line(&call_statement(unit, name, args));
                    }
                }
            }
            StmtKind::If {
                arms, else_body, ..
            } => {
                for (i, arm) in arms.iter().enumerate() {
                    let kw = if i == 0 {
                        format!("{label}if")
                    } else {
                        "else if".into()
                    };
                    self.w
                        .line(&format!("{kw} ({}) then", print(unit, &arm.cond)));
                    self.w.indent();
                    self.block(&arm.body);
                    self.w.dedent();
                }
                if let Some(b) = else_body {
                    self.w.line("else");
                    self.w.indent();
                    self.block(b);
                    self.w.dedent();
                }
                self.w.line("end if");
            }
            StmtKind::Where {
                arms, else_body, ..
            } => {
                // The masks are evaluated where the original evaluates
                // them; each masked assignment is preceded by its
                // tangent, under the same mask; function references go
                // before the outermost construct.
                if self.in_where == 0 {
                    self.where_hoisted(id, &mut label);
                }
                self.in_where += 1;
                for (i, arm) in arms.iter().enumerate() {
                    let kw = if i == 0 {
                        format!("{label}where")
                    } else {
                        "elsewhere".into()
                    };
                    self.w.line(&format!("{kw} ({})", print(unit, &arm.cond)));
                    self.w.indent();
                    self.block(&arm.body);
                    self.w.dedent();
                }
                if let Some(b) = else_body {
                    self.w.line("elsewhere");
                    self.w.indent();
                    self.block(b);
                    self.w.dedent();
                }
                self.w.line("end where");
                self.in_where -= 1;
            }
            StmtKind::Do {
                name,
                control,
                body,
                ..
            } => {
                self.w
                    .line(&format!("{label}{}", do_head(unit, name.as_ref(), control)));
                self.w.indent();
                self.block(body);
                self.w.dedent();
                self.w.line(&end_do(name.as_ref()));
            }
            StmtKind::SelectCase { selector, cases } => {
                self.w
                    .line(&format!("{label}select case ({})", print(unit, selector)));
                for c in cases {
                    self.w.line(&case_line(unit, c));
                    self.w.indent();
                    self.block(&c.body);
                    self.w.dedent();
                }
                self.w.line("end select");
            }
            StmtKind::Goto { .. }
            | StmtKind::ComputedGoto { .. }
            | StmtKind::ArithmeticIf { .. }
            | StmtKind::Exit { .. }
            | StmtKind::Cycle { .. } => {
                for (k, j) in jump_lines(unit, &st.kind).into_iter().flatten().enumerate() {
                    let label = if k == 0 { label.as_str() } else { "" };
                    self.w.line(&format!("{label}{j}"));
                }
            }
            StmtKind::Return => self.w.line(&format!("{label}return")),
            StmtKind::Stop => self.w.line(&format!("{label}stop")),
            StmtKind::Continue => self.w.line(&format!("{label}continue")),
            StmtKind::Io { writes, text, .. } => {
                // Run as written; a READ is a passive overwrite: the
                // derivatives of what it defines are zero after it.
                self.w.line(&format!("{label}{text}"));
                for item in writes {
                    self.reset_read_item(item);
                }
            }
            StmtKind::Allocate {
                objects,
                deallocate,
            } => {
                // Derivatives are allocated and freed with their arrays
                // (and pointers).
                let names: Vec<String> = objects.iter().map(|o| print(unit, o)).collect();
                let kw = if *deallocate {
                    "deallocate"
                } else {
                    "allocate"
                };
                self.w.line(&format!("{label}{kw}({})", names.join(", ")));
                for o in objects {
                    let whole = o.without_bounds();
                    let Some(dn) = self.dref(&whole) else {
                        continue;
                    };
                    let pointer = dfort_ir::queries::is_pointer_reference(self.program, unit, o);
                    if *deallocate {
                        self.w.line(&format!("deallocate({dn})"));
                    } else if let Some(d) = self.dref(o) {
                        // A module variable's may be allocated by the
                        // root's entry or an earlier call.
                        if !pointer {
                            self.w
                                .line(&format!("if (allocated({dn})) deallocate({dn})"));
                        }
                        self.w.line(&format!("allocate({d})"));
                        let zero = crate::derived::zero(self.program, unit, &whole, "_d");
                        self.w.line(&format!("{dn} = {zero}"));
                    }
                }
            }
            // The derivative pointer follows its pointer (first: the
            // target's subscripts may read the pointer).
            StmtKind::PointerAssign { pointer, target } => {
                if let Some(pd) = self.dref(pointer) {
                    match self.dref(target) {
                        Some(td) => self.w.line(&format!("{label}{pd} => {td}")),
                        None => self.refuse(
                            st.span,
                            format!(
                                "`{}` has a derivative and its target `{}` has none",
                                print(unit, pointer),
                                print(unit, target)
                            ),
                        ),
                    }
                    label.clear();
                }
                if let Some(line) = crate::fortran::pointer_line(unit, &st.kind) {
                    self.w.line(&format!("{label}{line}"));
                }
            }
            StmtKind::Nullify { objects } => {
                let mut all: Vec<String> = objects.iter().filter_map(|o| self.dref(o)).collect();
                all.extend(objects.iter().map(|o| print(unit, o)));
                self.w.line(&format!("{label}nullify({})", all.join(", ")));
            }
            // Refused by the facts ([`dfort_analysis::refusals`]).
            StmtKind::Unsupported { .. } => {}
        }
    }
}

fn sum(a: Option<String>, b: Option<String>) -> Option<String> {
    match (a, b) {
        (Some(x), Some(y)) => Some(format!("{x} + {y}")),
        (x, None) => x,
        (None, y) => y,
    }
}

/// The tangent of `root`, a root of `facts`, from the activity the
/// analyses computed there.
pub fn tangent_of(
    facts: &ProgramFacts,
    root: UnitId,
    header: &str,
) -> Result<String, Vec<Refusal>> {
    tangent_located(facts, root, header, &crate::origin::nowhere)
}

/// [`tangent_of`], each statement's derivative headed by a comment naming
/// the statement, as `origin` renders its place ([`crate::origin`]).
pub fn tangent_located(
    facts: &ProgramFacts,
    root: UnitId,
    header: &str,
    origin: crate::origin::Origin,
) -> Result<String, Vec<Refusal>> {
    let program = &facts.program;
    if let Some(r) = facts.root_refusal(root, Derivative::Tangent) {
        return Err(vec![r]);
    }
    let diff = DiffSet::of_root(facts, root)?;
    let mut refusals = facts.refusals(root, Derivative::Tangent);
    let decided = refusals.len();
    refusals.extend(diff.root_clash(program, "_d"));
    let mut routines = Vec::new();
    // A root whose independents take their values after one of its calls
    // keeps their tangents, given on entry, across the statements up to
    // that call (whose tangents set every derivative they write, as
    // nothing before that call is varied).
    let after = match facts.roles_of(root).map(|r| (r.after.as_slice(), r)) {
        Some(([], _)) | None => None,
        Some(([(u, at)], r)) if *u == root => Some((*at, r.independents.clone())),
        Some(([(_, at), ..], _)) => {
            let unit = program.unit(root);
            return Err(vec![Refusal::new(
                unit.stmt(*at).span,
                (
                    &dfort_syntax::rules::ROOT_AFTER,
                    format!(
                        "the tangent of `{}` takes its independents after a call the root makes itself; this one is made inside the call here (the adjoint takes it)",
                        unit.name
                    ),
                ),
            )]);
        }
    };
    for &u in &diff.units {
        let prefix = if u == root { after.clone() } else { None };
        match routine(program, &diff, u, Flavour::Tangent, prefix, origin) {
            Ok(r) => routines.push(r),
            Err(e) => crate::add_found(&mut refusals, decided, e),
        }
    }
    let copies = crate::tangent::internal_copies(program, &diff, &mut refusals);
    routines.extend(called_copies(program, &routines, copies));
    if !refusals.is_empty() {
        return Err(refusals);
    }
    let mut decls = diff.module_declarations(program, 'd');
    crate::fortran::add_module_procedures(
        program,
        &mut decls,
        &mut routines,
        diff.shape_procedures(program, 'd')
            .into_iter()
            .map(|(m, t)| (m, (Vec::new(), t))),
    );
    Ok(crate::fortran::assemble(header, &routines, &decls, "_d"))
}

/// The copies of internal procedures that the derivative routines or
/// other kept copies call (by name, in their code): a host whose
/// internal procedures all have derivatives calls none of the originals,
/// and an uncalled copy is dead code `gfortran -Wall` warns about.
fn called_copies(
    program: &Program,
    routines: &[crate::fortran::Routine],
    copies: Vec<crate::fortran::Routine>,
) -> Vec<crate::fortran::Routine> {
    let called = |r: &crate::fortran::Routine, by: &[&crate::fortran::Routine]| {
        let name = &program.unit(r.unit).name;
        by.iter()
            .any(|b| !std::ptr::eq(*b, r) && crate::fortran::code_names(&b.text, name))
    };
    let mut kept: Vec<&crate::fortran::Routine> = routines.iter().collect();
    let mut left: Vec<&crate::fortran::Routine> = copies.iter().collect();
    // A copy called only by a kept copy is found on a later round.
    loop {
        let (now, rest): (Vec<_>, Vec<_>) = left.into_iter().partition(|c| called(c, &kept));
        left = rest;
        if now.is_empty() {
            break;
        }
        kept.extend(now);
    }
    let uncalled: Vec<UnitId> = left.iter().map(|c| c.unit).collect();
    copies
        .into_iter()
        .filter(|c| !uncalled.contains(&c.unit))
        .collect()
}

/// [`derivative_names`] of `root`, a root of `facts`, with the roles the
/// analyses took for it.
pub fn derivative_names_of(facts: &ProgramFacts, root: UnitId) -> HashMap<SymbolId, String> {
    let program = &facts.program;
    match DiffSet::of_root(facts, root) {
        Ok(diff) => diff.names(program, program.unit(root), 'd'),
        Err(_) => HashMap::new(),
    }
}

/// A copy of an internal procedure, for the derivative of its host (whose
/// forward sweep calls it): the tangent generator with no derivatives.
pub fn primal_copy(
    program: &Program,
    diff: &DiffSet,
    u: UnitId,
) -> Result<crate::fortran::Routine, Vec<Refusal>> {
    routine(
        program,
        diff,
        u,
        Flavour::Copy,
        None,
        &crate::origin::nowhere,
    )
}

/// The tangent routine of `u` (`Flavour::Tangent`), or its copy
/// (`Flavour::Copy`); with `seeded_after` (a statement of the root, and
/// its independents), the independents' tangents on entry are kept across
/// the statements up to that one and set again after it.
fn routine(
    program: &Program,
    diff: &DiffSet,
    u: UnitId,
    flavour: Flavour,
    seeded_after: Option<(StmtId, dfort_ir::bitset::BitSet)>,
    origin: crate::origin::Origin,
) -> Result<crate::fortran::Routine, Vec<Refusal>> {
    let primal = flavour.is_copy();
    let orig = program.unit(u);
    let module = host_module(program, orig);
    let (mut hunit, hoisted, dname) =
        derivative_unit(program, diff, orig, (!primal).then_some('d'));
    let seeds = match &seeded_after {
        Some((_, independents)) => seed_copies(&mut hunit, independents, &dname)?,
        None => Vec::new(),
    };
    let mut g = Gen {
        program,
        diff,
        unit: &hunit,
        dname,
        hoisted,
        refusals: Vec::new(),
        w: Writer::default(),
        ztemps: Vec::new(),
        value_temps: 0,
        in_where: 0,
        before_where: Default::default(),
        index_j: false,
        used_modules: BTreeSet::new(),
        called: BTreeSet::new(),
        module: module.clone(),
        primal,
        origin,
    };
    // The root gives the derivatives of allocatable module variables
    // their variables' shapes first.
    if u == diff.root && !primal {
        for m in diff.shaped_modules(program) {
            g.w.line(&format!("call dfort_shape_{m}()"));
            if module.as_ref() != Some(&m) {
                g.used_modules.insert(m);
            }
        }
    }
    match seeded_after.map(|(at, _)| (at, hunit.body.iter().position(|s| *s == at))) {
        Some((_, Some(k))) => {
            for (copy, d) in &seeds {
                g.w.line(&format!("{copy} = {d}"));
            }
            g.block(&hunit.body[..=k]);
            for (copy, d) in &seeds {
                g.w.line(&format!("{d} = {copy}"));
            }
            g.block(&hunit.body[k + 1..]);
        }
        Some((at, None)) => g.refuse(
            orig.stmt(at).span,
            "a root whose independents take their values after one of its calls: that call is not among the root's statements",
        ),
        None => g.block(&hunit.body),
    }
    if !g.refusals.is_empty() {
        return Err(g.refusals);
    }
    let body = std::mem::take(&mut g.w).finish();
    let name = match (flavour, diff.copies.get(&u)) {
        (Flavour::AdjointCopy, Some(n)) => n.clone(),
        _ => diff.routine_name(program, u, flavour.routine_suffix()),
    };
    // The adjoint's copies share SAVE'd state and call each other.
    let mut extra_uses = Vec::new();
    if flavour == Flavour::AdjointCopy {
        extra_uses.extend(diff.state_use(program, u, &HashMap::new()));
        g.used_modules.extend(diff.copy_modules(program, orig));
    }
    let mut r = crate::declare::open(
        &Declared {
            program,
            unit: &hunit,
            orig,
            hoisted: &g.hoisted,
            names: &g.dname,
            commons: &diff.commons,
            module: module.as_ref(),
            used_modules: &g.used_modules,
            extra_uses: &extra_uses,
            name: &name,
            shared: &diff.state.locals,
        },
        flavour,
    );
    for (k, ty) in g.ztemps.iter().enumerate() {
        r.w.line(&format!("{ty} :: dfort_z{}", k + 1));
    }
    for k in 1..=g.value_temps {
        r.w.line(&format!("real(8) :: dfort_v{k}"));
    }
    if g.index_j {
        r.w.line("integer :: dfort_j");
    }
    r.end_specification();
    // Written already: its continued lines are not split again.
    r.w.verbatim(&body);
    Ok(r.finish(g.used_modules, g.called))
}

/// Locals `dfort_seed<k>` added to `unit`, shaped like its independents
/// that have tangents, to keep their tangents given on entry: (copy's
/// name, tangent's name). An independent whose shape a local cannot take
/// (assumed, deferred) is refused.
fn seed_copies(
    unit: &mut Unit,
    independents: &dfort_ir::bitset::BitSet,
    dname: &HashMap<SymbolId, String>,
) -> Result<Vec<(String, String)>, Vec<Refusal>> {
    let mut out = Vec::new();
    for s in independents.ids::<SymbolId>() {
        let Some(d) = dname.get(&s) else {
            continue;
        };
        let sym = unit.symbol(s).clone();
        let fixed = sym
            .dims
            .iter()
            .all(|d| d.kind == dfort_ir::DimKind::Explicit);
        if !fixed || sym.attrs.allocatable || sym.attrs.pointer {
            return Err(vec![Refusal::new(
                sym.span,
                (
                    &dfort_syntax::rules::NOT_DIFFERENTIABLE,
                    format!(
                        "the tangent keeps the tangent of `{}`, an independent taken after a call, in a local of its shape, and `{}` has none fixed (assumed, allocatable or pointer)",
                        sym.name, sym.name
                    ),
                ),
            )]);
        }
        let name = format!("dfort_seed{}", out.len() + 1);
        let mut copy =
            dfort_ir::Symbol::local(name.clone(), sym.ty.clone(), sym.typing, true, sym.span);
        copy.dims = sym.dims.clone();
        unit.symbols.push(copy);
        out.push((name, d.clone()));
    }
    Ok(out)
}

/// The adjoint's copies of the procedures that change the SAVE'd state
/// it shares ([`crate::names::DiffSet::copies`]), which it runs in place
/// of the originals.
pub fn adjoint_copies(
    program: &Program,
    diff: &DiffSet,
    refusals: &mut Vec<Refusal>,
) -> Vec<crate::fortran::Routine> {
    let mut out = Vec::new();
    for &c in &diff.state.copied {
        match routine(
            program,
            diff,
            c,
            Flavour::AdjointCopy,
            None,
            &crate::origin::nowhere,
        ) {
            Ok(r) => out.push(r),
            Err(e) => refusals.extend(e),
        }
    }
    out
}

/// Copies of the internal procedures of every routine in the set, which
/// their hosts' derivatives call in place of the originals.
pub fn internal_copies(
    program: &Program,
    diff: &DiffSet,
    refusals: &mut Vec<Refusal>,
) -> Vec<crate::fortran::Routine> {
    let mut out = Vec::new();
    for &u in &diff.units {
        for &c in &program.unit(u).children {
            match primal_copy(program, diff, c) {
                Ok(r) => out.push(r),
                Err(e) => refusals.extend(e),
            }
        }
    }
    out
}

/// Why `transfer` with an active SOURCE is refused: the generators
/// differentiate it only between variables of one real type and kind.
pub(crate) fn transfer_refusal(unit: &Unit, e: &Expr) -> String {
    format!(
        "no derivative rule for `{}`: TRANSFER is differentiated only when SOURCE and MOLD are variables, elements or literals of one real type and kind (a copy); between types or kinds it reinterprets the bits",
        print(unit, e)
    )
}
