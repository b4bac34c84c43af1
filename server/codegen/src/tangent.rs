//! Tangent (forward-mode) code: for a root subroutine `r`, writes `r_d`
//! with Tapenade's convention (every formal with a derivative is followed
//! by it, `xd`), computing `ẏ = J ẋ` alongside the original statements.
//!
//! Contract: each assignment to a variable that has a derivative is
//! preceded by the assignment of its derivative, computed from the
//! original values (so `x = x*y` works); control flow, labels and
//! passive statements are copied. Anything without a derivative rule —
//! an active call, an active user-function reference, an intrinsic with
//! no rule, derived-type components, statement functions, READ — is
//! refused with its location: no code is produced then.

use crate::fortran::{
    case_line, close_host_module, declaration, declaration_order, jump_line, open_host_module,
    uses, Writer,
};
use crate::partials::partials;
use crate::{check_root, Refusal};
use dfort_analysis::activity::active_anywhere;
use dfort_analysis::bitset::BitSet;
use dfort_analysis::dp::{differentiable, dp_of, target};
use dfort_analysis::interproc::analyze_program;
use dfort_ir::dump::expr as print;
use dfort_ir::*;
use std::collections::HashMap;

/// Intrinsics whose derivative is itself an array expression.
const ARRAY_INTRINSICS: &[&str] = &["sum", "transpose", "dot_product", "matmul"];

struct Gen<'a> {
    unit: &'a Unit,
    /// Derivative name of each symbol that has one.
    dname: HashMap<SymbolId, String>,
    refusals: Vec<Refusal>,
    w: Writer,
}

fn p(s: String) -> String {
    format!("({s})")
}

impl Gen<'_> {
    fn refuse(&mut self, span: Span, message: impl Into<String>) {
        self.refusals.push(Refusal {
            span,
            message: message.into(),
        });
    }

    fn e(&self, e: &Expr) -> String {
        p(print(self.unit, e))
    }

    /// The derivative of a variable reference (`xd`, `xd(i)`), if it has one.
    fn dref(&self, e: &Expr) -> Option<String> {
        match &e.kind {
            ExprKind::Var(s) => self.dname.get(s).cloned(),
            ExprKind::ArrayRef { array, .. } => {
                let d = self.dname.get(array)?;
                let printed = print(self.unit, e);
                let name_len = self.unit.symbol(*array).name.len();
                Some(format!("{d}{}", &printed[name_len.min(printed.len())..]))
            }
            _ => None,
        }
    }

    /// ẋ of an expression; `None` when it is zero.
    fn tan(&mut self, e: &Expr) -> Option<String> {
        match &e.kind {
            ExprKind::Var(_) | ExprKind::ArrayRef { .. } => self.dref(e),
            ExprKind::Int(_) | ExprKind::Real { .. } | ExprKind::Logical(_) | ExprKind::Str(_) => {
                None
            }
            ExprKind::Intrinsic { name, args } if ARRAY_INTRINSICS.contains(&name.as_str()) => {
                self.array_intrinsic(e, name, args)
            }
            ExprKind::Unary { .. } | ExprKind::Binary { .. } | ExprKind::Intrinsic { .. } => {
                match partials(self.unit, e) {
                    // ẏ = Σ ∂φ/∂cᵢ · ċᵢ
                    Some(parts) => parts
                        .into_iter()
                        .filter_map(|(child, d)| {
                            self.tan(child).map(|dc| format!("{} * {}", p(d), p(dc)))
                        })
                        .reduce(|a, b| format!("{a} + {b}")),
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
            ExprKind::FunctionCall { name, args, .. } => {
                if args.iter().any(|a| self.has_derivative_inside(&a.value)) {
                    self.refuse(
                        e.span,
                        format!("the tangent generator does not handle the active function reference `{name}` yet"),
                    );
                }
                None
            }
            ExprKind::ArrayCtor(items) => {
                let ds: Vec<Option<String>> = items.iter().map(|i| self.tan(i)).collect();
                if ds.iter().all(Option::is_none) {
                    return None;
                }
                let parts: Vec<String> = ds
                    .into_iter()
                    .map(|d| d.unwrap_or_else(|| "0.0d0".into()))
                    .collect();
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
            .iter()
            .any(|i| self.dname.contains_key(&SymbolId(i as u32)))
    }

    /// Array intrinsics, whose derivatives are arrays too.
    fn array_intrinsic(&mut self, e: &Expr, name: &str, args: &[Arg]) -> Option<String> {
        let ds: Vec<Option<String>> = args.iter().map(|a| self.tan(&a.value)).collect();
        if ds.iter().all(Option::is_none) {
            return None;
        }
        let rest: Vec<String> = args
            .iter()
            .skip(1)
            .map(|x| print(self.unit, &x.value))
            .collect();
        let d0 = ds[0].clone().map(p);
        match (name, args.len()) {
            ("sum", _) => d0.map(|d| {
                if rest.is_empty() {
                    format!("sum({d})")
                } else {
                    format!("sum({d}, {})", rest.join(", "))
                }
            }),
            ("transpose", 1) => d0.map(|d| format!("transpose({d})")),
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
                if let Some((t, _)) = target(lhs) {
                    if self.dname.contains_key(&t) {
                        if matches!(lhs.kind, ExprKind::Component { .. }) {
                            self.refuse(
                                st.span,
                                "derived-type components are not differentiated yet",
                            );
                        }
                        let d = self.tan(rhs).unwrap_or_else(|| "0.0d0".into());
                        if let Some(dl) = self.dref(lhs) {
                            self.w.line(&format!("{label}{dl} = {d}"));
                            label.clear();
                        }
                    }
                }
                self.w.line(&format!(
                    "{label}{} = {}",
                    print(unit, lhs),
                    print(unit, rhs)
                ));
            }
            StmtKind::Call { name, args, .. } => {
                let active = args.iter().any(|a| {
                    self.has_derivative_inside(&a.value)
                        || target(&a.value).is_some_and(|(s, _)| self.dname.contains_key(&s))
                });
                if active {
                    self.refuse(
                        st.span,
                        format!("the tangent generator does not handle active calls (`call {name}`) yet"),
                    );
                }
                let a: Vec<String> = args
                    .iter()
                    .map(|x| match &x.keyword {
                        Some(k) => format!("{k}={}", print(unit, &x.value)),
                        None => print(unit, &x.value),
                    })
                    .collect();
                self.w
                    .line(&format!("{label}call {name}({})", a.join(", ")));
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
            StmtKind::Do {
                name,
                control,
                body,
                ..
            } => {
                let n = name.as_ref().map(|n| format!("{n}: ")).unwrap_or_default();
                let head = match control {
                    DoControl::Counted {
                        var,
                        start,
                        end,
                        step,
                    } => {
                        let mut s = format!(
                            "do {} = {}, {}",
                            unit.symbol(*var).name,
                            print(unit, start),
                            print(unit, end)
                        );
                        if let Some(st) = step {
                            s.push_str(&format!(", {}", print(unit, st)));
                        }
                        s
                    }
                    DoControl::While(c) => format!("do while ({})", print(unit, c)),
                    DoControl::Forever => "do".into(),
                };
                self.w.line(&format!("{label}{n}{head}"));
                self.w.indent();
                self.block(body);
                self.w.dedent();
                let tail = name.as_ref().map(|n| format!(" {n}")).unwrap_or_default();
                self.w.line(&format!("end do{tail}"));
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
                let j = jump_line(unit, &st.kind).unwrap_or_default();
                self.w.line(&format!("{label}{j}"));
            }
            StmtKind::Return => self.w.line(&format!("{label}return")),
            StmtKind::Stop => self.w.line(&format!("{label}stop")),
            StmtKind::Continue => self.w.line(&format!("{label}continue")),
            StmtKind::Io { kind, .. } => {
                if *kind == IoKind::Read {
                    self.refuse(st.span, "READ statements are not differentiated yet");
                }
                // Output has no effect on derivatives; keep a labelled
                // placeholder so jumps still land.
                self.w.line(&format!(
                    "{label}continue ! I/O statement of the original omitted"
                ));
            }
            StmtKind::Allocate { .. } => {
                self.refuse(st.span, "ALLOCATE is not differentiated yet");
            }
            StmtKind::Unsupported { construct } => {
                self.refuse(st.span, format!("{construct} cannot be differentiated"));
            }
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

/// The tangent of subroutine `root` as a free-form source file, or the
/// reasons it cannot be produced.
pub fn tangent(
    program: &Program,
    root: UnitId,
    independents: &BitSet,
    dependents: &BitSet,
    header: &str,
) -> Result<String, Vec<Refusal>> {
    let unit = program.unit(root);
    let host = check_root(program, unit, "a tangent")?;
    let dname = derivative_names(program, root, independents, dependents);
    let mut g = Gen {
        unit,
        dname,
        refusals: Vec::new(),
        w: Writer::default(),
    };
    emit(&mut g, header, host.as_deref());
    if g.refusals.is_empty() {
        Ok(g.w.finish())
    } else {
        Err(g.refusals)
    }
}

/// The variables of `root` that get a derivative in its tangent (active
/// somewhere, or independent, or dependent), with their derivative names.
pub fn derivative_names(
    program: &Program,
    root: UnitId,
    independents: &BitSet,
    dependents: &BitSet,
) -> HashMap<SymbolId, String> {
    let unit = program.unit(root);
    let pa = analyze_program(program, &[(root, independents.clone(), dependents.clone())]);
    let mut with_d = pa.activity[root.0 as usize]
        .as_ref()
        .map(|act| active_anywhere(unit, act))
        .unwrap_or_default();
    with_d.union_with(independents);
    with_d.union_with(dependents);
    let mut dname = HashMap::new();
    let mut taken: Vec<String> = unit.symbols.iter().map(|s| s.name.clone()).collect();
    for i in with_d.iter() {
        let Some(sym) = unit.symbols.get(i) else {
            continue;
        };
        if !differentiable(unit, SymbolId(i as u32)) || sym.ty.base == BaseType::Derived {
            continue;
        }
        let mut name = format!("{}d", sym.name);
        while taken.contains(&name) {
            name.push('0');
        }
        taken.push(name.clone());
        dname.insert(SymbolId(i as u32), name);
    }
    dname
}

fn emit(g: &mut Gen, header: &str, host: Option<&str>) {
    let unit = g.unit;
    for line in header.lines() {
        g.w.line(&format!("! {line}"));
    }
    open_host_module(&mut g.w, host, "_d");
    let mut args = Vec::new();
    for a in &unit.args {
        args.push(unit.symbol(*a).name.clone());
        if let Some(d) = g.dname.get(a) {
            args.push(d.clone());
        }
    }
    g.w.line(&format!("subroutine {}_d({})", unit.name, args.join(", ")));
    g.w.indent();
    for u in uses(unit) {
        g.w.line(&u);
    }
    g.w.line("implicit none");
    // Named constants first, then integer scalars (they size arrays), then
    // the rest; each derivative right after its variable.
    let order = declaration_order(unit);
    for s in order {
        let sym = unit.symbol(s);
        // Variables from modules and hosts are not redeclared; their
        // derivatives are local to this routine.
        let imported = matches!(
            sym.storage,
            Storage::Imported { .. } | Storage::UnknownModule { .. }
        );
        if sym.storage == Storage::Procedure
            && !unit.stmts.iter().any(|st| uses_function(st, &sym.name))
        {
            continue;
        }
        if !imported {
            if let Some(d) = declaration(unit, sym, &sym.name, true) {
                g.w.line(&d);
            }
        }
        if let Some(dn) = g.dname.get(&s).cloned() {
            if let Some(d) = declaration(unit, sym, &dn, true) {
                g.w.line(&d);
            }
        }
    }
    for c in &unit.commons {
        let names: Vec<&str> = c
            .members
            .iter()
            .map(|m| unit.symbol(*m).name.as_str())
            .collect();
        g.w.line(&format!("common /{}/ {}", c.name, names.join(", ")));
    }
    g.block(&unit.body);
    g.w.dedent();
    g.w.line(&format!("end subroutine {}_d", unit.name));
    close_host_module(&mut g.w, host, "_d");
}

fn uses_function(st: &Stmt, name: &str) -> bool {
    st.kind.exprs().iter().any(|e| {
        let mut found = false;
        e.walk(&mut |x| {
            if let ExprKind::FunctionCall { name: n, .. } = &x.kind {
                found |= n == name;
            }
        });
        found
    })
}
