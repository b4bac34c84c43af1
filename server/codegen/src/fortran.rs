//! Writing Fortran: free-form lines (split with `&` past 100 columns),
//! indentation, and declarations rebuilt from the symbol table.

use dfort_ir::dump::{dims, type_name};
use dfort_ir::*;
use std::collections::HashMap;

/// Accumulates free-form source lines.
#[derive(Default)]
pub struct Writer {
    out: String,
    indent: usize,
}

const WIDTH: usize = 100;

impl Writer {
    pub fn line(&mut self, text: &str) {
        let pad = "  ".repeat(self.indent);
        let mut rest = text.trim_end().to_string();
        let mut first = true;
        // Comments are never continued.
        while !rest.starts_with('!') && pad.len() + rest.len() > WIDTH {
            // Split at the last space or comma before the width, outside
            // quotes.
            let limit = WIDTH.saturating_sub(pad.len() + 4).max(20);
            let cut = split_point(&rest, limit);
            let Some(cut) = cut else { break };
            let (head, tail) = rest.split_at(cut);
            self.out.push_str(&pad);
            if !first {
                self.out.push_str("    ");
            }
            self.out.push_str(head.trim_end());
            self.out.push_str(" &\n");
            rest = format!("& {}", tail.trim_start());
            first = false;
        }
        self.out.push_str(&pad);
        if !first {
            self.out.push_str("    ");
        }
        self.out.push_str(&rest);
        self.out.push('\n');
    }
    pub fn blank(&mut self) {
        self.out.push('\n');
    }
    pub fn indent(&mut self) {
        self.indent += 1;
    }
    pub fn dedent(&mut self) {
        self.indent = self.indent.saturating_sub(1);
    }
    pub fn finish(self) -> String {
        self.out
    }
    /// The length of the text written so far.
    pub fn len(&self) -> usize {
        self.out.len()
    }
    pub fn is_empty(&self) -> bool {
        self.out.is_empty()
    }
}

fn split_point(s: &str, limit: usize) -> Option<usize> {
    let mut quote: Option<char> = None;
    let mut best = None;
    for (i, c) in s.char_indices() {
        if i > limit {
            break;
        }
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None => match c {
                '\'' | '"' => quote = Some(c),
                ' ' | ',' => best = Some(i + 1),
                _ => {}
            },
        }
    }
    best.filter(|b| *b > 0 && *b < s.len())
}

/// `real(8), intent(in) :: x(0:n)` for a symbol, under `name`.
pub fn declaration(unit: &Unit, s: &Symbol, name: &str, with_intent: bool) -> Option<String> {
    if s.ty.base == BaseType::None {
        return None;
    }
    let mut parts = vec![type_name(&s.ty)];
    if s.attrs.parameter {
        parts.push("parameter".into());
    }
    if with_intent {
        if let Some(i) = s.intent {
            parts.push(format!("intent({})", i.as_str()));
        }
    }
    if s.attrs.allocatable {
        parts.push("allocatable".into());
    }
    if s.attrs.pointer {
        parts.push("pointer".into());
    }
    if s.attrs.target {
        parts.push("target".into());
    }
    if s.attrs.optional {
        parts.push("optional".into());
    }
    if s.attrs.save
        && !s.attrs.parameter
        && !matches!(s.storage, Storage::Dummy(_) | Storage::Common { .. })
    {
        parts.push("save".into());
    }
    if s.storage == Storage::Procedure {
        parts.push("external".into());
    }
    let mut d = format!("{} :: {}{}", parts.join(", "), name, dims(unit, s));
    if s.attrs.parameter {
        if let Some(init) = &s.init {
            d.push_str(&format!(" = {}", dfort_ir::dump::expr(unit, init)));
        }
    }
    Some(d)
}

/// `use m, only: a, b => c` lines of a unit.
pub fn uses(unit: &Unit) -> Vec<String> {
    unit.uses
        .iter()
        .map(|u| {
            let mut s = format!("use {}", u.module);
            if let Some(only) = &u.only {
                let items: Vec<String> = only
                    .iter()
                    .map(|(l, r)| {
                        if l == r {
                            l.clone()
                        } else {
                            format!("{l} => {r}")
                        }
                    })
                    .collect();
                s.push_str(&format!(", only: {}", items.join(", ")));
            } else {
                for (l, r) in &u.renames {
                    s.push_str(&format!(", {l} => {r}"));
                }
            }
            s
        })
        .collect()
}

/// `case (1, 3:5)` or `case default`.
pub fn case_line(unit: &Unit, c: &Case) -> String {
    if c.default {
        return "case default".into();
    }
    let vals: Vec<String> = c
        .values
        .iter()
        .map(|v| match v {
            CaseValue::Value(e) => dfort_ir::dump::expr(unit, e),
            CaseValue::Range(a, b) => format!(
                "{}:{}",
                a.as_ref()
                    .map(|e| dfort_ir::dump::expr(unit, e))
                    .unwrap_or_default(),
                b.as_ref()
                    .map(|e| dfort_ir::dump::expr(unit, e))
                    .unwrap_or_default()
            ),
        })
        .collect();
    format!("case ({})", vals.join(", "))
}

/// The Fortran of a jump statement (GO TO, computed GO TO, arithmetic IF,
/// EXIT, CYCLE), without its label; `None` for other statements.
pub fn jump_line(unit: &Unit, kind: &StmtKind) -> Option<String> {
    let p = |e: &Expr| dfort_ir::dump::expr(unit, e);
    let named = |c: &Option<String>| c.as_ref().map(|c| format!(" {c}")).unwrap_or_default();
    Some(match kind {
        StmtKind::Goto { target } => format!("go to {target}"),
        StmtKind::ComputedGoto { targets, index } => {
            let t: Vec<String> = targets.iter().map(|t| t.to_string()).collect();
            format!("go to ({}) {}", t.join(", "), p(index))
        }
        StmtKind::ArithmeticIf {
            expr,
            negative,
            zero,
            positive,
        } => format!("if ({}) {negative}, {zero}, {positive}", p(expr)),
        StmtKind::Exit { construct } => format!("exit{}", named(construct)),
        StmtKind::Cycle { construct } => format!("cycle{}", named(construct)),
        _ => return None,
    })
}

/// Symbols in declaration order: named constants, then integer scalars
/// (they size arrays), then the rest.
pub fn declaration_order(unit: &Unit) -> Vec<SymbolId> {
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
    order
}

/// One generated derivative routine and the module it belongs in.
#[derive(Clone)]
pub struct Routine {
    pub unit: UnitId,
    /// The host of an internal procedure (its derivative is internal to
    /// the host's).
    pub host: Option<UnitId>,
    /// The original module of a module procedure (its derivative goes
    /// into `<m><suffix>`); `None` for an external procedure.
    pub module: Option<String>,
    /// The original modules whose derivative modules it uses.
    pub uses: std::collections::BTreeSet<String>,
    pub text: String,
    /// Where its specification part ends in `text`: interface blocks of
    /// the routines it calls go there.
    pub spec_end: usize,
    /// Its interface body, when callers need an explicit interface
    /// ([`needs_explicit_interface`]).
    pub interface: Option<String>,
    /// The units whose derivative routines it calls.
    pub calls: std::collections::BTreeSet<UnitId>,
}

/// The derivative file: the header comment; for each module with
/// derivative routines or module-variable derivatives (`decls`), module
/// `<m><suffix>` (which uses `m`), modules before those that use them;
/// then the external routines.
pub fn assemble(
    header: &str,
    routines: &[Routine],
    decls: &std::collections::BTreeMap<String, Vec<String>>,
    suffix: &str,
) -> String {
    let nested = nest_internal(&with_interfaces(routines), suffix);
    let routines = &nested[..];
    let mut w = Writer::default();
    for line in header.lines() {
        w.line(&format!("! {line}"));
    }
    let mut modules: Vec<String> = Vec::new();
    for m in routines
        .iter()
        .filter_map(|r| r.module.clone())
        .chain(decls.keys().cloned())
    {
        if !modules.contains(&m) {
            modules.push(m);
        }
    }
    // Dependencies first: a module's routines may use other derivative
    // modules (no cycles between modules in valid Fortran).
    let deps = |m: &str| -> Vec<String> {
        routines
            .iter()
            .filter(|r| r.module.as_deref() == Some(m))
            .flat_map(|r| r.uses.iter().cloned())
            .filter(|d| d != m)
            .collect()
    };
    let mut ordered: Vec<String> = Vec::new();
    fn visit(
        m: &str,
        deps: &dyn Fn(&str) -> Vec<String>,
        all: &[String],
        out: &mut Vec<String>,
        depth: usize,
    ) {
        if out.iter().any(|x| x == m) || depth > all.len() {
            return;
        }
        for d in deps(m) {
            if all.contains(&d) {
                visit(&d, deps, all, out, depth + 1);
            }
        }
        if !out.iter().any(|x| x == m) {
            out.push(m.to_string());
        }
    }
    for m in &modules {
        visit(m, &deps, &modules, &mut ordered, 0);
    }
    for m in &ordered {
        w.line(&format!("module {m}{suffix}"));
        w.indent();
        w.line(&format!("use {m}"));
        for d in deps(m) {
            if modules.contains(&d) {
                w.line(&format!("use {d}{suffix}"));
            }
        }
        w.line("implicit none");
        for d in decls.get(m).into_iter().flatten() {
            w.line(d);
        }
        w.dedent();
        w.line("contains");
        // Routine texts are complete lines already: appended as they are.
        let mut text = std::mem::take(&mut w).finish();
        for r in routines.iter().filter(|r| r.module.as_deref() == Some(m)) {
            text.push_str(&r.text);
        }
        w = Writer::default();
        w.out = text;
        w.line(&format!("end module {m}{suffix}"));
    }
    let mut out = w.finish();
    for r in routines.iter().filter(|r| r.module.is_none()) {
        out.push_str(&r.text);
    }
    out
}

/// Each routine with an interface block for every external derivative
/// routine it calls that needs an explicit interface (its own excepted:
/// a routine's interface is explicit inside it).
fn with_interfaces(routines: &[Routine]) -> Vec<Routine> {
    routines
        .iter()
        .map(|r| {
            let mut blocks = String::new();
            for c in &r.calls {
                let callee = routines.iter().find(|x| {
                    x.unit == *c && x.unit != r.unit && x.module.is_none() && x.host.is_none()
                });
                if let Some(iface) = callee.and_then(|x| x.interface.as_ref()) {
                    let indent: String = r.text[r.spec_end.min(r.text.len())..]
                        .chars()
                        .take_while(|c| *c == ' ')
                        .collect();
                    blocks.push_str(&format!("{indent}interface\n"));
                    for l in iface.lines() {
                        blocks.push_str(&format!("{indent}  {l}\n"));
                    }
                    blocks.push_str(&format!("{indent}end interface\n"));
                }
            }
            let mut out = r.clone();
            if !blocks.is_empty() && r.spec_end <= r.text.len() {
                out.text.insert_str(r.spec_end, &blocks);
            }
            out
        })
        .collect()
}

/// Internal procedures' derivatives moved into their hosts' (after a
/// `contains` before the host's `end subroutine`); the rest unchanged.
fn nest_internal(routines: &[Routine], suffix: &str) -> Vec<Routine> {
    let mut out: Vec<Routine> = routines
        .iter()
        .filter(|r| r.host.is_none())
        .cloned()
        .collect();
    // Innermost first would matter only for internal procedures of
    // internal procedures, which Fortran does not allow.
    for r in routines.iter().filter(|r| r.host.is_some()) {
        let Some(h) = out.iter_mut().find(|x| Some(x.unit) == r.host) else {
            continue;
        };
        let Some(end) = h.text.rfind("end subroutine ") else {
            continue;
        };
        let mut inner = String::new();
        if !h.text[..end].contains(&format!("contains ! internal{suffix}")) {
            inner.push_str(&format!("contains ! internal{suffix}\n"));
        }
        inner.push_str(&r.text);
        h.text.insert_str(end, &inner);
        h.uses.extend(r.uses.iter().cloned());
    }
    out
}

/// Whether a procedure symbol names a module procedure (reached by use or
/// host association, so it must not be redeclared `external`).
pub fn is_module_procedure(program: &Program, sym: &Symbol) -> bool {
    sym.storage == Storage::Procedure
        && program.units_named(&sym.name).any(|u| {
            u.parent
                .is_some_and(|p| program.unit(p).kind == UnitKind::Module)
        })
}

/// The unit's COMMON blocks, and for each block with a member that has a
/// derivative, the block of derivatives `/<name><suffix>/` (members
/// without one get a placeholder of the same type, so that the layout is
/// the same in every routine).
pub fn common_blocks(
    w: &mut Writer,
    unit: &Unit,
    dname: &std::collections::HashMap<SymbolId, String>,
    with_d: &std::collections::BTreeSet<(String, u32)>,
    suffix: &str,
) {
    for c in &unit.commons {
        let names: Vec<&str> = c
            .members
            .iter()
            .map(|m| unit.symbol(*m).name.as_str())
            .collect();
        w.line(&format!("common /{}/ {}", c.name, names.join(", ")));
        if !(0..c.members.len()).any(|i| with_d.contains(&(c.name.clone(), i as u32))) {
            continue;
        }
        let mut dnames = Vec::new();
        for m in &c.members {
            match dname.get(m) {
                Some(d) => dnames.push(d.clone()),
                None => {
                    let sym = unit.symbol(*m);
                    let pad = format!("dfort_pad_{}", sym.name);
                    if let Some(d) = declaration(unit, sym, &pad, false) {
                        w.line(&d);
                    }
                    dnames.push(pad);
                }
            }
        }
        let block = if c.name.is_empty() {
            "dfort_blank".to_string()
        } else {
            c.name.clone()
        };
        w.line(&format!("common /{block}{suffix}/ {}", dnames.join(", ")));
    }
}

/// Whether any statement of the unit references function `name`.
pub fn references_function(unit: &Unit, name: &str) -> bool {
    unit.stmts.iter().any(|st| {
        st.kind.exprs().iter().any(|e| {
            let mut found = false;
            e.walk(&mut |x| {
                if let ExprKind::FunctionCall { name: n, .. } = &x.kind {
                    found |= n == name;
                }
            });
            found
        })
    })
}

/// Declarations of the hoisted functions the unit names without declaring
/// them (implicitly typed externals), since derivatives use
/// `implicit none`.
pub fn undeclared_functions(
    program: &Program,
    unit: &Unit,
    hoisted: &crate::hoist::HoistMap,
) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut ids: Vec<&StmtId> = hoisted.keys().collect();
    ids.sort();
    for h in ids.into_iter().flat_map(|id| &hoisted[id]) {
        let callee = program.unit(h.callee);
        let declared = unit
            .lookup(&h.name)
            .is_some_and(|s| unit.symbol(s).ty.base != BaseType::None);
        let in_module = callee
            .parent
            .is_some_and(|p| program.unit(p).kind == UnitKind::Module);
        let line = format!(
            "{}, external :: {}",
            crate::calls::result_type(callee),
            h.name
        );
        if !declared && !in_module && !out.contains(&line) {
            out.push(line);
        }
    }
    out
}

/// `use <m><suffix>, only: …` for the derivatives of the module variables
/// a routine uses (not needed inside `<m><suffix>` itself).
pub fn module_var_uses(
    program: &Program,
    unit: &Unit,
    dname: &std::collections::HashMap<SymbolId, String>,
    own: Option<&String>,
    suffix: &str,
) -> Vec<String> {
    let mut per: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for (s, d) in dname {
        if let Some((m, _)) = crate::names::module_var(program, unit.symbol(*s)) {
            let mname = &program.unit(m).name;
            if Some(mname) != own {
                per.entry(mname.clone()).or_default().push(d.clone());
            }
        }
    }
    per.into_iter()
        .map(|(m, mut names)| {
            names.sort();
            names.dedup();
            format!("use {m}{suffix}, only: {}", names.join(", "))
        })
        .collect()
}

/// The specification part of a derivative routine as both generators
/// write it, and alongside it the routine's explicit interface: the same
/// header, USE and IMPLICIT lines, and the declarations an interface body
/// needs (dummies and their derivatives, named constants, COMMON members).
#[derive(Default)]
pub struct Spec {
    pub w: Writer,
    iface: Writer,
}

impl Spec {
    /// A line of both the routine and its interface.
    pub fn both(&mut self, text: &str) {
        self.w.line(text);
        self.iface.line(text);
    }

    pub fn indent(&mut self) {
        self.w.indent();
        self.iface.indent();
    }

    /// Declares `unit`'s symbols in [`declaration_order`], each followed
    /// by its derivative (`dname`): variables from modules and hosts are
    /// not redeclared (their derivatives are, unless they live in a
    /// derivative module), procedures only when `orig` references them as
    /// functions outside an interface block and they are not module
    /// procedures. `intents(sym)` gives the intents of the variable and of
    /// its derivative.
    pub fn declarations(
        &mut self,
        program: &Program,
        unit: &Unit,
        orig: &Unit,
        dname: &HashMap<SymbolId, String>,
        intents: impl Fn(&Symbol) -> (Option<Intent>, Option<Intent>),
    ) {
        let in_interface = |name: &str| {
            orig.interface_blocks
                .iter()
                .any(|b| b.names.iter().any(|n| n == name))
        };
        for s in declaration_order(unit) {
            let sym = unit.symbol(s);
            let imported = matches!(
                sym.storage,
                Storage::Imported { .. } | Storage::UnknownModule { .. }
            );
            if sym.storage == Storage::Procedure
                && (!references_function(orig, &sym.name)
                    || is_module_procedure(program, sym)
                    || in_interface(&sym.name))
            {
                continue;
            }
            let (primal, derivative) = intents(sym);
            let interface_needs = matches!(
                sym.storage,
                Storage::Dummy(_) | Storage::Common { .. } | Storage::Result
            ) || sym.attrs.parameter;
            if !imported {
                let mut p = sym.clone();
                p.intent = primal;
                if let Some(d) = declaration(unit, &p, &sym.name, true) {
                    self.w.line(&d);
                    if interface_needs {
                        self.iface.line(&d);
                    }
                }
            }
            // A module variable's derivative is declared in its derivative
            // module.
            let in_module = matches!(sym.storage, Storage::Imported { .. });
            if let (Some(dn), false) = (dname.get(&s), in_module) {
                let mut d = sym.clone();
                d.intent = derivative;
                if let Some(text) = declaration(unit, &d, dn, true) {
                    self.w.line(&text);
                    if interface_needs {
                        self.iface.line(&text);
                    }
                }
            }
        }
    }

    /// The COMMON blocks ([`common_blocks`]), in both.
    pub fn commons(
        &mut self,
        unit: &Unit,
        dname: &HashMap<SymbolId, String>,
        with_d: &std::collections::BTreeSet<(String, u32)>,
        suffix: &str,
    ) {
        let mut w = Writer {
            out: String::new(),
            indent: self.w.indent,
        };
        common_blocks(&mut w, unit, dname, with_d, suffix);
        let text = w.finish();
        self.w.out.push_str(&text);
        self.iface.out.push_str(&text);
    }

    /// The interface blocks of the original unit, copied (the block's
    /// text starts at `interface`; the other lines lose the indentation
    /// of its `end interface`).
    pub fn interface_blocks(&mut self, orig: &Unit) {
        for b in &orig.interface_blocks {
            let base = b
                .text
                .lines()
                .last()
                .map_or(0, |l| l.len() - l.trim_start_matches(' ').len());
            for (i, l) in b.text.lines().enumerate() {
                let spaces = l.len() - l.trim_start_matches(' ').len();
                let l = if i == 0 { l } else { &l[spaces.min(base)..] };
                self.w.line(l.trim_end());
            }
        }
    }

    /// The routine's interface body, closed by `end`.
    pub fn interface(&mut self, end: &str) -> String {
        let mut iface = std::mem::take(&mut self.iface);
        iface.dedent();
        iface.line(end);
        iface.finish()
    }
}

/// Whether a procedure must have an explicit interface where it is
/// called (Fortran 2008, 12.4.2.2): a dummy that is assumed-shape,
/// optional, allocatable, a pointer or a target, or an array-valued,
/// allocatable or pointer result.
pub fn needs_explicit_interface(unit: &Unit) -> bool {
    let special = |s: &Symbol| {
        s.dims.iter().any(|d| d.kind == DimKind::AssumedShape)
            || s.attrs.optional
            || s.attrs.allocatable
            || s.attrs.pointer
            || s.attrs.target
    };
    unit.args.iter().any(|a| special(unit.symbol(*a)))
        || unit.result.is_some_and(|r| {
            let s = unit.symbol(r);
            s.rank() > 0 || s.attrs.allocatable || s.attrs.pointer
        })
}
