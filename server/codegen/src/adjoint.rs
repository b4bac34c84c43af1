//! Adjoint (reverse-mode) code, joint mode: `r_b` runs a forward sweep
//! (the original statements, minus those adjoint liveness proves useless,
//! plus the pushes TBR asks for and the control-flow records of paper
//! 001) and then the reverse sweep (adjoint statements in reverse order).
//!
//! Contract (Tapenade's convention): every formal with a derivative is
//! followed by its adjoint `xb`; on entry the dependents' adjoints hold ȳ
//! and the independents' what to accumulate into; on exit the
//! independents' adjoints hold x̄ + Jᵀȳ and pure outputs' adjoints are 0.
//! Control flow reversal (paper 001, Algorithm 5, structured case):
//! counted DO loops whose bounds the body does not change are replayed
//! from their bounds (the index is saved around the loop), other loops
//! push their trip count, IF and SELECT CASE push the arm taken. What this
//! version cannot reverse — jumps (GO TO, EXIT, CYCLE, early RETURN),
//! calls with active or required arguments, user functions in active
//! expressions, array intrinsics, whole-array assignments of rank > 1 —
//! is refused with its location: no code is produced.

use crate::fortran::{declaration, uses, Writer};
use crate::partials::partials;
use crate::Refusal;
use dfort_analysis::activity::Activity;
use dfort_analysis::bitset::BitSet;
use dfort_analysis::dp::{dp_of, target, vars, writes};
use dfort_analysis::interproc::analyze_program;
use dfort_analysis::liveness;
use dfort_analysis::tbr::{self, Tbr};
use dfort_ir::dump::expr as print;
use dfort_ir::*;
use std::collections::HashMap;

/// The stack runtime the adjoints use (`dfort_stack.f90`).
pub const RUNTIME: &str = include_str!("../runtime/dfort_stack.f90");

struct Gen<'a> {
    unit: &'a Unit,
    act: &'a Activity,
    tbr: &'a Tbr,
    dead: Vec<StmtId>,
    bname: HashMap<SymbolId, String>,
    refusals: Vec<Refusal>,
    fwd: Writer,
    /// Loops seen so far (each gets its own counter variables).
    counters: usize,
}

fn p(s: String) -> String {
    format!("({s})")
}

impl<'a> Gen<'a> {
    fn refuse(&mut self, span: Span, message: impl Into<String>) {
        self.refusals.push(Refusal {
            span,
            message: message.into(),
        });
    }

    fn has_adjoint(&self, s: SymbolId) -> bool {
        self.bname.contains_key(&s)
    }

    fn active_inside(&self, e: &Expr) -> bool {
        dp_of(self.unit, e)
            .iter()
            .any(|i| self.bname.contains_key(&SymbolId(i as u32)))
    }

    /// `xb`, `xb(i)` for a reference whose variable has an adjoint.
    fn bref(&self, e: &Expr) -> Option<String> {
        match &e.kind {
            ExprKind::Var(s) => self.bname.get(s).cloned(),
            ExprKind::ArrayRef { array, .. } => {
                let b = self.bname.get(array)?;
                let printed = print(self.unit, e);
                let n = self.unit.symbol(*array).name.len();
                Some(format!("{b}{}", &printed[n.min(printed.len())..]))
            }
            _ => None,
        }
    }

    /// Adjoint statements `c̄ += ∂/∂c · m` for every active leaf of `e`.
    fn adj(&mut self, e: &'a Expr, m: &str, out: &mut Vec<String>) {
        if !self.active_inside(e) {
            return;
        }
        match &e.kind {
            ExprKind::Var(_) | ExprKind::ArrayRef { .. } => {
                if let Some(b) = self.bref(e) {
                    out.push(format!("{b} = {b} + {m}"));
                }
            }
            ExprKind::FunctionCall { name, .. } => {
                self.refuse(e.span, format!("the adjoint generator does not handle the active function reference `{name}` yet"));
            }
            _ => match partials(self.unit, e) {
                Some(parts) => {
                    for (child, d) in parts {
                        let mm = format!("{} * {}", p(m.to_string()), p(d));
                        self.adj(child, &mm, out);
                    }
                }
                None => self.refuse(
                    e.span,
                    format!(
                        "no adjoint rule for `{}` with active arguments",
                        print(self.unit, e)
                    ),
                ),
            },
        }
    }

    fn recorded(&self, st: StmtId) -> Vec<SymbolId> {
        self.tbr
            .records
            .iter()
            .filter(|r| r.stmt == st)
            .map(|r| r.variable)
            .collect()
    }

    /// Forward sweep of a block; returns the reverse sweep of the block as
    /// lines in the order they must run.
    fn block(&mut self, ids: &[StmtId]) -> Vec<Line> {
        let mut rev: Vec<Vec<Line>> = Vec::new();
        for id in ids {
            rev.push(self.stmt(*id));
        }
        rev.into_iter().rev().flatten().collect()
    }

    fn stmt(&mut self, id: StmtId) -> Vec<Line> {
        let unit = self.unit;
        let st = unit.stmt(id);
        let label = st.label.map(|l| format!("{l} ")).unwrap_or_default();
        let mut rev = Vec::new();
        match &st.kind {
            StmtKind::Assign { lhs, rhs } => {
                let dead = self.dead.contains(&id);
                let Some((t, whole)) = target(lhs) else {
                    self.refuse(st.span, "this assignment target cannot be differentiated");
                    return rev;
                };
                if matches!(lhs.kind, ExprKind::Component { .. }) && self.has_adjoint(t) {
                    self.refuse(
                        st.span,
                        "derived-type components are not differentiated yet",
                    );
                }
                if self.has_adjoint(t) && array_valued(unit, lhs) {
                    self.refuse(
                        st.span,
                        "array assignments (whole arrays, sections) are not differentiated in reverse mode yet",
                    );
                }
                let record = !dead && self.recorded(id).contains(&t);
                if record {
                    if whole && unit.symbol(t).rank() > 1 {
                        self.refuse(
                            st.span,
                            "recording a whole array of rank > 1 is not supported yet",
                        );
                    }
                    self.fwd
                        .line(&format!("{label}call dfort_push({})", print(unit, lhs)));
                    if !dead {
                        self.fwd
                            .line(&format!("{} = {}", print(unit, lhs), print(unit, rhs)));
                    }
                } else if !dead {
                    self.fwd.line(&format!(
                        "{label}{} = {}",
                        print(unit, lhs),
                        print(unit, rhs)
                    ));
                } else if !label.is_empty() {
                    self.fwd.line(&format!("{label}continue"));
                }
                // Reverse: restore, then propagate.
                if record {
                    rev.push(Line::Plain(format!("call dfort_pop({})", print(unit, lhs))));
                }
                if self.has_adjoint(t) && self.act.active_after(id, t) {
                    let lb = self.bref(lhs).unwrap_or_default();
                    let mut body = vec![format!("dfort_tb = {lb}"), format!("{lb} = 0.0d0")];
                    self.adj(rhs, "dfort_tb", &mut body);
                    rev.extend(body.into_iter().map(Line::Plain));
                } else if self.has_adjoint(t) {
                    // A passive value overwrites an active variable: its
                    // adjoint is cut here.
                    if let Some(lb) = self.bref(lhs) {
                        rev.push(Line::Plain(format!("{lb} = 0.0d0")));
                    }
                }
            }
            StmtKind::Call { name, args, .. } => {
                let active = args.iter().any(|a| {
                    self.active_inside(&a.value)
                        || target(&a.value).is_some_and(|(s, _)| self.has_adjoint(s))
                });
                let in_req = &self.tbr.in_req[id.0 as usize];
                let clobbers = writes(&Program::default(), unit, st)
                    .iter()
                    .any(|(s, _)| in_req.contains(s.0 as usize));
                if active || clobbers {
                    self.refuse(
                        st.span,
                        format!("the adjoint generator does not handle this call to `{name}` yet"),
                    );
                }
                let a: Vec<String> = args.iter().map(|x| print(unit, &x.value)).collect();
                self.fwd
                    .line(&format!("{label}call {name}({})", a.join(", ")));
            }
            StmtKind::If {
                arms, else_body, ..
            } => {
                let n = arms.len() + 1;
                let mut arm_revs = Vec::new();
                for (i, arm) in arms.iter().enumerate() {
                    let kw = if i == 0 {
                        format!("{label}if")
                    } else {
                        "else if".into()
                    };
                    self.fwd
                        .line(&format!("{kw} ({}) then", print(unit, &arm.cond)));
                    self.fwd.indent();
                    arm_revs.push(self.block(&arm.body));
                    self.fwd.line(&format!("call dfort_push({})", i + 1));
                    self.fwd.dedent();
                }
                self.fwd.line("else");
                self.fwd.indent();
                arm_revs.push(match else_body {
                    Some(b) => self.block(b),
                    None => Vec::new(),
                });
                self.fwd.line(&format!("call dfort_push({n})"));
                self.fwd.dedent();
                self.fwd.line("end if");
                rev.push(Line::Branch(arm_revs));
            }
            StmtKind::SelectCase { selector, cases } => {
                self.fwd
                    .line(&format!("{label}select case ({})", print(unit, selector)));
                let mut arm_revs = Vec::new();
                for (i, c) in cases.iter().enumerate() {
                    if c.default {
                        self.fwd.line("case default");
                    } else {
                        let vals: Vec<String> = c
                            .values
                            .iter()
                            .map(|v| match v {
                                CaseValue::Value(e) => print(unit, e),
                                CaseValue::Range(a, b) => format!(
                                    "{}:{}",
                                    a.as_ref().map(|e| print(unit, e)).unwrap_or_default(),
                                    b.as_ref().map(|e| print(unit, e)).unwrap_or_default()
                                ),
                            })
                            .collect();
                        self.fwd.line(&format!("case ({})", vals.join(", ")));
                    }
                    self.fwd.indent();
                    arm_revs.push(self.block(&c.body));
                    self.fwd.line(&format!("call dfort_push({})", i + 1));
                    self.fwd.dedent();
                }
                if !cases.iter().any(|c| c.default) {
                    self.fwd.line("case default");
                    self.fwd.indent();
                    self.fwd
                        .line(&format!("call dfort_push({})", cases.len() + 1));
                    self.fwd.dedent();
                    arm_revs.push(Vec::new());
                }
                self.fwd.line("end select");
                rev.push(Line::Branch(arm_revs));
            }
            StmtKind::Do {
                control,
                body,
                name,
                ..
            } => {
                let _ = name; // Named loops are fine as long as nothing jumps.
                match control {
                    DoControl::Counted {
                        var,
                        start,
                        end,
                        step,
                    } => {
                        let i = unit.symbol(*var).name.clone();
                        let bounds: Vec<&Expr> = [Some(start), Some(end), step.as_ref()]
                            .into_iter()
                            .flatten()
                            .collect();
                        let mut bvars = BitSet::default();
                        for b in &bounds {
                            vars(unit, b, &mut bvars);
                        }
                        if body_writes(unit, body)
                            .iter()
                            .any(|v| bvars.contains(v.0 as usize))
                        {
                            self.refuse(st.span, "this DO loop's bounds change inside it; its reversal is not supported yet");
                        }
                        let (s, e) = (print(unit, start), print(unit, end));
                        let stp = step
                            .as_ref()
                            .map(|x| print(unit, x))
                            .unwrap_or_else(|| "1".into());
                        self.counters += 1;
                        let k = format!("dfort_k{}", self.counters);
                        self.fwd.line(&format!("{label}call dfort_push({i})"));
                        self.fwd.line(&format!("do {i} = {s}, {e}, {stp}"));
                        self.fwd.indent();
                        let body_rev = self.block(body);
                        self.fwd.dedent();
                        self.fwd.line("end do");
                        rev.push(Line::CountedLoop {
                            k,
                            var: i,
                            start: s,
                            end: e,
                            step: stp,
                            body: body_rev,
                        });
                    }
                    DoControl::While(c) => {
                        self.counters += 1;
                        let cnt = format!("dfort_count{}", self.counters);
                        self.fwd.line(&format!("{label}{cnt} = 0"));
                        self.fwd.line(&format!("do while ({})", print(unit, c)));
                        self.fwd.indent();
                        let body_rev = self.block(body);
                        self.fwd.line(&format!("{cnt} = {cnt} + 1"));
                        self.fwd.dedent();
                        self.fwd.line("end do");
                        self.fwd.line(&format!("call dfort_push({cnt})"));
                        rev.push(Line::CountLoop {
                            k: format!("dfort_k{}", self.counters),
                            counter: cnt,
                            body: body_rev,
                        });
                    }
                    DoControl::Forever => {
                        self.refuse(
                            st.span,
                            "DO loops without control (left by EXIT) are not reversed yet",
                        );
                    }
                }
            }
            StmtKind::Continue => self.fwd.line(&format!("{label}continue")),
            StmtKind::Return if unit.body.last() == Some(&id) => {}
            StmtKind::Io { kind, .. } if *kind != IoKind::Read => {
                self.fwd.line(&format!(
                    "{label}continue ! I/O statement of the original omitted"
                ));
            }
            StmtKind::Goto { .. }
            | StmtKind::ComputedGoto { .. }
            | StmtKind::ArithmeticIf { .. }
            | StmtKind::Exit { .. }
            | StmtKind::Cycle { .. }
            | StmtKind::Return
            | StmtKind::Stop => {
                self.refuse(st.span, "jumps (GO TO, arithmetic IF, EXIT, CYCLE, early RETURN, STOP) are not reversed yet");
            }
            StmtKind::Io { .. } => {
                self.refuse(st.span, "READ statements are not differentiated yet")
            }
            StmtKind::Allocate { .. } => self.refuse(st.span, "ALLOCATE is not differentiated yet"),
            StmtKind::Unsupported { construct } => {
                self.refuse(st.span, format!("{construct} cannot be differentiated"))
            }
        }
        rev
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

/// Everything a statement list may write (assignment targets, DO indices,
/// READ items, call actuals), for the loop-bounds check.
fn body_writes(unit: &Unit, ids: &[StmtId]) -> Vec<SymbolId> {
    let mut out = Vec::new();
    let mut stack: Vec<StmtId> = ids.to_vec();
    while let Some(id) = stack.pop() {
        let st = unit.stmt(id);
        out.extend(
            writes(&Program::default(), unit, st)
                .into_iter()
                .map(|(s, _)| s),
        );
        match &st.kind {
            StmtKind::If {
                arms, else_body, ..
            } => {
                for a in arms {
                    stack.extend(&a.body);
                }
                if let Some(b) = else_body {
                    stack.extend(b);
                }
            }
            StmtKind::Do { control, body, .. } => {
                if let DoControl::Counted { var, .. } = control {
                    out.push(*var);
                }
                stack.extend(body);
            }
            StmtKind::SelectCase { cases, .. } => {
                for c in cases {
                    stack.extend(&c.body);
                }
            }
            _ => {}
        }
    }
    out
}

/// A reverse-sweep line or construct.
enum Line {
    Plain(String),
    /// Pop the arm id and run that arm's reverse sweep.
    Branch(Vec<Vec<Line>>),
    /// Replay a counted loop backwards from its bounds.
    CountedLoop {
        /// The reversed loop's own iteration variable.
        k: String,
        var: String,
        start: String,
        end: String,
        step: String,
        body: Vec<Line>,
    },
    /// Pop a trip count and run the body that many times.
    CountLoop {
        k: String,
        counter: String,
        body: Vec<Line>,
    },
}

fn emit(w: &mut Writer, lines: &[Line]) {
    for l in lines {
        match l {
            Line::Plain(s) => w.line(s),
            Line::Branch(arms) => {
                w.line("call dfort_pop(dfort_branch)");
                for (i, arm) in arms.iter().enumerate() {
                    let kw = if i == 0 { "if" } else { "else if" };
                    w.line(&format!("{kw} (dfort_branch == {}) then", i + 1));
                    w.indent();
                    emit(w, arm);
                    w.dedent();
                }
                w.line("end if");
            }
            Line::CountedLoop {
                k,
                var,
                start,
                end,
                step,
                body,
            } => {
                w.line(&format!(
                    "do {k} = max(0, ({end} - ({start}) + ({step})) / ({step})) - 1, 0, -1"
                ));
                w.indent();
                w.line(&format!("{var} = {start} + {k} * ({step})"));
                emit(w, body);
                w.dedent();
                w.line("end do");
                w.line(&format!("call dfort_pop({var})"));
            }
            Line::CountLoop { k, counter, body } => {
                w.line(&format!("call dfort_pop({counter})"));
                w.line(&format!("do {k} = 1, {counter}"));
                w.indent();
                emit(w, body);
                w.dedent();
                w.line("end do");
            }
        }
    }
}

/// The variables of `root` that get an adjoint (those that get a tangent
/// derivative), named `xb` (renamed on a clash).
pub fn adjoint_names(
    program: &Program,
    root: UnitId,
    independents: &BitSet,
    dependents: &BitSet,
) -> HashMap<SymbolId, String> {
    let unit = program.unit(root);
    let mut taken: Vec<String> = unit.symbols.iter().map(|s| s.name.clone()).collect();
    let mut ids: Vec<SymbolId> =
        crate::tangent::derivative_names(program, root, independents, dependents)
            .into_keys()
            .collect();
    ids.sort();
    ids.into_iter()
        .map(|s| {
            let mut name = format!("{}b", unit.symbol(s).name);
            while taken.contains(&name) {
                name.push('0');
            }
            taken.push(name.clone());
            (s, name)
        })
        .collect()
}

/// The adjoint `r_b` of subroutine `root` (free-form source), or why not.
pub fn adjoint(
    program: &Program,
    root: UnitId,
    independents: &BitSet,
    dependents: &BitSet,
    store_all: bool,
    header: &str,
) -> Result<String, Vec<Refusal>> {
    let unit = program.unit(root);
    if unit.kind != UnitKind::Subroutine {
        return Err(vec![Refusal {
            span: unit.name_span,
            message: format!(
                "`{}` is not a subroutine; only subroutines can be the root of an adjoint yet",
                unit.name
            ),
        }]);
    }
    if !unit.stmt_functions.is_empty() {
        return Err(vec![Refusal {
            span: unit.stmt_functions[0].span,
            message: "statement functions are not differentiated yet".into(),
        }]);
    }
    let pa = analyze_program(program, &[(root, independents.clone(), dependents.clone())]);
    let tbrs = tbr::analyze_program(program, &pa, store_all);
    let (Some(act), Some(t)) = (&pa.activity[root.0 as usize], &tbrs[root.0 as usize]) else {
        return Err(Vec::new());
    };
    let dead = if store_all {
        Vec::new()
    } else {
        liveness::analyze(program, unit, t, &BitSet::default()).dead
    };
    let bname = adjoint_names(program, root, independents, dependents);
    let mut g = Gen {
        unit,
        act,
        tbr: t,
        dead,
        bname,
        refusals: Vec::new(),
        fwd: Writer::default(),
        counters: 0,
    };
    let rev = g.block(&unit.body);
    if !g.refusals.is_empty() {
        return Err(g.refusals);
    }
    let mut w = Writer::default();
    for line in header.lines() {
        w.line(&format!("! {line}"));
    }
    let mut args = Vec::new();
    for a in &unit.args {
        args.push(unit.symbol(*a).name.clone());
        if let Some(b) = g.bname.get(a) {
            args.push(b.clone());
        }
    }
    w.line(&format!("subroutine {}_b({})", unit.name, args.join(", ")));
    w.indent();
    w.line("use dfort_stack");
    for u in uses(unit) {
        w.line(&u);
    }
    w.line("implicit none");
    let mut order: Vec<SymbolId> = (0..unit.symbols.len() as u32).map(SymbolId).collect();
    order.sort_by_key(|s| {
        let sym = unit.symbol(*s);
        let class = if sym.attrs.parameter {
            0
        } else if sym.ty.base == BaseType::Integer && sym.dims.is_empty() {
            1
        } else {
            2
        };
        (class, s.0)
    });
    for s in &order {
        let sym = unit.symbol(*s);
        if matches!(
            sym.storage,
            Storage::Imported { .. } | Storage::UnknownModule { .. }
        ) {
            continue;
        }
        if let Some(d) = declaration(unit, sym, &sym.name, true) {
            w.line(&d);
        }
        if let Some(b) = g.bname.get(s) {
            // Adjoints of dummies are read and updated whatever the
            // primal's intent.
            let mut bsym = sym.clone();
            if bsym.intent.is_some() {
                bsym.intent = Some(Intent::InOut);
            }
            if let Some(d) = declaration(unit, &bsym, b, true) {
                w.line(&d);
            }
        }
    }
    for c in &unit.commons {
        let names: Vec<&str> = c
            .members
            .iter()
            .map(|m| unit.symbol(*m).name.as_str())
            .collect();
        w.line(&format!("common /{}/ {}", c.name, names.join(", ")));
    }
    w.line("integer :: dfort_branch");
    for k in 1..=g.counters {
        w.line(&format!("integer :: dfort_k{k}, dfort_count{k}"));
    }
    w.line("real(8) :: dfort_tb");
    // Adjoints of locals start at zero.
    for s in &order {
        if let (Some(b), false) = (
            g.bname.get(s),
            matches!(unit.symbol(*s).storage, Storage::Dummy(_)),
        ) {
            w.line(&format!("{b} = 0.0d0"));
        }
    }
    w.line("! forward sweep");
    let fwd = std::mem::take(&mut g.fwd).finish();
    for l in fwd.lines() {
        w.line(l);
    }
    w.line("! reverse sweep");
    emit(&mut w, &rev);
    w.dedent();
    w.line(&format!("end subroutine {}_b", unit.name));
    Ok(w.finish())
}
