//! Adjoint (reverse-mode) code, joint mode: `r_b` runs a forward sweep
//! (the original statements, minus those adjoint liveness proves useless,
//! plus the pushes TBR asks for and the control-flow records of paper
//! 001) and then the reverse sweep (adjoint statements in reverse order).
//!
//! Contract (Tapenade's convention): every formal with a derivative is
//! followed by its adjoint `xb`; on entry the dependents' adjoints hold ȳ
//! and the independents' what to accumulate into; on exit the
//! independents' adjoints hold x̄ + Jᵀȳ and pure outputs' adjoints are 0.
//! Control flow reversal (paper 001): in structured units (Algorithm 5)
//! counted DO loops whose bounds the body does not change are replayed
//! from their bounds (the index is saved around the loop), other loops
//! push their trip count, IF and SELECT CASE push the arm taken; units
//! with jumps (GO TO, computed GO TO, arithmetic IF, EXIT, CYCLE, early
//! RETURN) push the id of each basic block as it is left, after the
//! integers its adjoint reads, and the reverse sweep pops ids until the
//! entry marker. What this version cannot reverse — STOP, calls with
//! active or required arguments, user functions in active expressions,
//! array assignments and intrinsics, complex variables — is refused with
//! its location: no code is produced.

use crate::fortran::{
    case_line, close_host_module, declaration, declaration_order, jump_line, open_host_module,
    uses, Writer,
};
use crate::partials::partials;
use crate::{check_root, Refusal};
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
    /// Unstructured units (GO TO, EXIT, CYCLE, early RETURN) are reversed
    /// by recording basic-block ids (paper 001's fallback) instead.
    unstructured: bool,
    /// Per basic block (node index): its reverse sweep, and the integer
    /// values its adjoint reads, saved at the block's end.
    block_rev: HashMap<usize, Vec<Line>>,
    snapshots: HashMap<usize, Vec<String>>,
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

    /// The basic block a statement starts or ends, in unstructured mode.
    fn block_edge(&self, id: StmtId, first: bool) -> Option<usize> {
        if !self.unstructured {
            return None;
        }
        let n = (*self.unit.cfg.stmt_node.get(id.0 as usize)?)?;
        let node = self.unit.cfg.node(n);
        let edge = if first {
            node.stmts.first()
        } else {
            node.stmts.last()
        };
        (node.kind == dfort_ir::cfg::NodeKind::BasicBlock && edge == Some(&id))
            .then_some(n.0 as usize)
    }

    fn save_snapshot(&mut self, node: usize) {
        for v in self.snapshots.get(&node).cloned().unwrap_or_default() {
            self.fwd.line(&format!("call dfort_push({v})"));
        }
        self.fwd.line(&format!("call dfort_push({})", node + 1));
    }

    fn stmt(&mut self, id: StmtId) -> Vec<Line> {
        let st = self.unit.stmt(id);
        let is_jump = matches!(
            st.kind,
            StmtKind::Goto { .. }
                | StmtKind::ComputedGoto { .. }
                | StmtKind::ArithmeticIf { .. }
                | StmtKind::Exit { .. }
                | StmtKind::Cycle { .. }
                | StmtKind::Return
        );
        let mut label = st.label.map(|l| format!("{l} ")).unwrap_or_default();
        // A block records its id (after the integers its adjoint reads) as
        // it is left: before its closing jump, or after its last statement.
        let end = self.block_edge(id, false);
        if let (Some(n), true) = (end, is_jump) {
            if !label.is_empty() {
                self.fwd.line(&format!("{label}continue"));
                label.clear();
            }
            self.save_snapshot(n);
        }
        let rev = self.stmt_body(id, label);
        if let (Some(n), false) = (end, is_jump) {
            self.save_snapshot(n);
        }
        if self.unstructured {
            let node = self
                .unit
                .cfg
                .stmt_node
                .get(id.0 as usize)
                .copied()
                .flatten();
            let in_block =
                node.filter(|n| self.unit.cfg.node(*n).kind == dfort_ir::cfg::NodeKind::BasicBlock);
            if let Some(n) = in_block {
                let lines = self.block_rev.entry(n.0 as usize).or_default();
                let mut rev = rev;
                rev.append(lines);
                *lines = rev;
            }
            return Vec::new();
        }
        rev
    }

    fn stmt_body(&mut self, id: StmtId, label: String) -> Vec<Line> {
        let unit = self.unit;
        let st = unit.stmt(id);
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
                if self.has_adjoint(t) && unit.symbol(t).ty.base == BaseType::Complex {
                    self.refuse(
                        st.span,
                        "complex variables are not differentiated in reverse mode yet",
                    );
                }
                if self.has_adjoint(t) && array_valued(unit, lhs) {
                    self.refuse(
                        st.span,
                        "array assignments (whole arrays, sections) are not differentiated in reverse mode yet",
                    );
                }
                let record = !dead && self.recorded(id).contains(&t);
                let tty = unit.symbol(t).ty.base;
                if record && !matches!(tty, BaseType::Real | BaseType::Integer | BaseType::Logical)
                {
                    self.refuse(
                        st.span,
                        format!(
                            "recording a {} value on the tape is not supported yet",
                            dfort_ir::dump::type_name(&unit.symbol(t).ty)
                        ),
                    );
                }
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
                    if !self.unstructured {
                        self.fwd.line(&format!("call dfort_push({})", i + 1));
                    }
                    self.fwd.dedent();
                }
                self.fwd.line("else");
                self.fwd.indent();
                arm_revs.push(match else_body {
                    Some(b) => self.block(b),
                    None => Vec::new(),
                });
                if !self.unstructured {
                    self.fwd.line(&format!("call dfort_push({n})"));
                }
                self.fwd.dedent();
                self.fwd.line("end if");
                rev.push(Line::Branch(arm_revs));
            }
            StmtKind::SelectCase { selector, cases } => {
                self.fwd
                    .line(&format!("{label}select case ({})", print(unit, selector)));
                let mut arm_revs = Vec::new();
                for (i, c) in cases.iter().enumerate() {
                    self.fwd.line(&case_line(unit, c));
                    self.fwd.indent();
                    arm_revs.push(self.block(&c.body));
                    if !self.unstructured {
                        self.fwd.line(&format!("call dfort_push({})", i + 1));
                    }
                    self.fwd.dedent();
                }
                if !self.unstructured && !cases.iter().any(|c| c.default) {
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
                if self.unstructured {
                    let n = name.as_ref().map(|n| format!("{n}: ")).unwrap_or_default();
                    let head = match control {
                        DoControl::Counted {
                            var,
                            start,
                            end,
                            step,
                        } => format!(
                            "do {} = {}, {}{}",
                            unit.symbol(*var).name,
                            print(unit, start),
                            print(unit, end),
                            step.as_ref()
                                .map(|s| format!(", {}", print(unit, s)))
                                .unwrap_or_default()
                        ),
                        DoControl::While(c) => format!("do while ({})", print(unit, c)),
                        DoControl::Forever => "do".into(),
                    };
                    self.fwd.line(&format!("{label}{n}{head}"));
                    self.fwd.indent();
                    let _ = self.block(body);
                    self.fwd.dedent();
                    let tail = name.as_ref().map(|n| format!(" {n}")).unwrap_or_default();
                    self.fwd.line(&format!("end do{tail}"));
                    return rev;
                }
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
                        let k = format!("dfort_k{}", self.counters);
                        self.fwd.line(&format!("{label}{cnt} = 0"));
                        self.fwd.line(&format!("do while ({})", print(unit, c)));
                        self.fwd.indent();
                        let body_rev = self.block(body);
                        self.fwd.line(&format!("{cnt} = {cnt} + 1"));
                        self.fwd.dedent();
                        self.fwd.line("end do");
                        self.fwd.line(&format!("call dfort_push({cnt})"));
                        rev.push(Line::CountLoop {
                            k,
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
                if self.unstructured =>
            {
                let j = jump_line(unit, &st.kind).unwrap_or_default();
                self.fwd.line(&format!("{label}{j}"));
            }
            // An early RETURN ends the forward sweep, not the routine.
            StmtKind::Return if self.unstructured => {
                self.fwd.line(&format!("{label}go to {REVERSE_LABEL}"))
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

/// The label where the reverse sweep of an unstructured unit starts.
const REVERSE_LABEL: u32 = 99999;

/// Integer scalars the adjoint statements of each basic block read:
/// saved at the block's end in unstructured mode.
fn snapshots(
    unit: &Unit,
    act: &Activity,
    bname: &HashMap<SymbolId, String>,
) -> HashMap<usize, Vec<String>> {
    let mut out = HashMap::new();
    for (i, node) in unit.cfg.nodes.iter().enumerate() {
        if node.kind != dfort_ir::cfg::NodeKind::BasicBlock {
            continue;
        }
        let mut ints = BitSet::default();
        for id in &node.stmts {
            if let StmtKind::Assign { lhs, rhs } = &unit.stmt(*id).kind {
                if target(lhs)
                    .is_some_and(|(t, _)| bname.contains_key(&t) && act.active_after(*id, t))
                {
                    vars(unit, lhs, &mut ints);
                    vars(unit, rhs, &mut ints);
                }
            }
        }
        let names: Vec<String> = ints
            .iter()
            .map(|v| unit.symbol(SymbolId(v as u32)))
            .filter(|s| s.ty.base == BaseType::Integer && s.rank() == 0 && !s.attrs.parameter)
            .map(|s| s.name.clone())
            .collect();
        if !names.is_empty() {
            out.insert(i, names);
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
    let host = check_root(program, unit, "an adjoint")?;
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
    let unstructured = !unit.cfg.structured;
    let snaps = if unstructured {
        snapshots(unit, act, &bname)
    } else {
        HashMap::new()
    };
    let mut g = Gen {
        unit,
        act,
        tbr: t,
        dead,
        bname,
        refusals: Vec::new(),
        fwd: Writer::default(),
        counters: 0,
        unstructured,
        block_rev: HashMap::new(),
        snapshots: snaps,
    };
    if unstructured {
        g.fwd.line("call dfort_push(0)");
    }
    let rev = g.block(&unit.body);
    if !g.refusals.is_empty() {
        return Err(g.refusals);
    }
    let mut w = Writer::default();
    for line in header.lines() {
        w.line(&format!("! {line}"));
    }
    open_host_module(&mut w, host.as_deref(), "_b");
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
    let order = declaration_order(unit);
    for s in &order {
        let sym = unit.symbol(*s);
        // Variables from modules and hosts are not redeclared; their
        // adjoints are local to this routine.
        let imported = matches!(
            sym.storage,
            Storage::Imported { .. } | Storage::UnknownModule { .. }
        );
        if !imported {
            if let Some(d) = declaration(unit, sym, &sym.name, true) {
                w.line(&d);
            }
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
    if unstructured {
        // Pop basic-block ids until the entry marker; reverse each block.
        w.line(&format!("{REVERSE_LABEL} call dfort_pop(dfort_branch)"));
        w.line("do while (dfort_branch /= 0)");
        w.indent();
        w.line("select case (dfort_branch)");
        let mut blocks: Vec<usize> = g
            .block_rev
            .keys()
            .chain(g.snapshots.keys())
            .copied()
            .collect();
        blocks.sort_unstable();
        blocks.dedup();
        for b in blocks {
            w.line(&format!("case ({})", b + 1));
            w.indent();
            for v in g.snapshots.get(&b).into_iter().flatten().rev() {
                w.line(&format!("call dfort_pop({v})"));
            }
            emit(
                &mut w,
                g.block_rev.get(&b).map(Vec::as_slice).unwrap_or(&[]),
            );
            w.dedent();
        }
        w.line("end select");
        w.line("call dfort_pop(dfort_branch)");
        w.dedent();
        w.line("end do");
    } else {
        emit(&mut w, &rev);
    }
    w.dedent();
    w.line(&format!("end subroutine {}_b", unit.name));
    close_host_module(&mut w, host.as_deref(), "_b");
    Ok(w.finish())
}
