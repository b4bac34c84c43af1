//! Writing Fortran: free-form lines (split with `&` past 100 columns),
//! indentation, one symbol's declaration rebuilt from the symbol table,
//! the text of the statements both generators copy from the original
//! (DO heads, CALLs, CASE lines, jumps), and the assembly of the
//! derivative file from its routines. The specification part of a
//! derivative routine is [`crate::declare`]'s.

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
    /// Lines already written (by another writer, at indentation 0), each
    /// indented to this writer's level and not split again.
    pub fn verbatim(&mut self, text: &str) {
        let pad = "  ".repeat(self.indent);
        for l in text.lines() {
            self.out.push_str(&pad);
            self.out.push_str(l.trim_end());
            self.out.push('\n');
        }
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
    /// The text written since `at` (a [`Writer::len`]).
    pub fn text_from(&self, at: usize) -> &str {
        self.out.get(at..).unwrap_or("")
    }
    /// Takes back what was written since `at` (a [`Writer::len`]).
    pub fn truncate(&mut self, at: usize) {
        self.out.truncate(at);
    }
    pub fn is_empty(&self) -> bool {
        self.out.is_empty()
    }
}

/// Whether `c` can stand in a Fortran name.
pub fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Whether a line of generated free-form text is a comment (such as the
/// origin heading a block, which quotes a primal statement).
pub fn is_comment_line(line: &str) -> bool {
    line.trim_start().starts_with('!')
}

/// Where `name` stands in `text` as a whole name, not inside a longer
/// one (byte offsets, first to last; the match is exact: lower-case
/// both sides for a case-blind search).
pub fn whole_name_at<'t>(text: &'t str, name: &'t str) -> impl Iterator<Item = usize> + 't {
    text.match_indices(name).map(|(i, _)| i).filter(move |&i| {
        !text[..i].chars().next_back().is_some_and(is_name_char)
            && !text[i + name.len()..]
                .chars()
                .next()
                .is_some_and(is_name_char)
    })
}

/// Whether the code of `text` (its lines that are not comments) names
/// `name` as a whole name, case-blind.
pub fn code_names(text: &str, name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    text.lines().filter(|l| !is_comment_line(l)).any(|l| {
        whole_name_at(&l.to_ascii_lowercase(), &name)
            .next()
            .is_some()
    })
}

fn split_point(s: &str, limit: usize) -> Option<usize> {
    let best = outside_literals(s)
        .take_while(|&(i, _)| i <= limit)
        .filter(|&(_, c)| c == ' ' || c == ',')
        .last()
        .map(|(i, _)| i + 1);
    best.filter(|b| *b > 0 && *b < s.len())
}

/// The characters of a line of Fortran outside its character constants,
/// with their byte offsets: a constant's delimiting quotes are yielded,
/// what is between them is not (a doubled quote inside one closes and
/// opens it again, so it is skipped too). Every scan of generated text
/// for code — where a parenthesis closes, where the assignment's `=` is,
/// where a list item ends — reads the line through this.
pub(crate) fn outside_literals(s: &str) -> impl Iterator<Item = (usize, char)> + '_ {
    let mut quote: Option<char> = None;
    s.char_indices().filter(move |&(_, c)| match quote {
        Some(q) if c == q => {
            quote = None;
            true
        }
        Some(_) => false,
        None => {
            if c == '\'' || c == '"' {
                quote = Some(c);
            }
            true
        }
    })
}

/// The items of a comma-separated list (`a, b(:, 1), n = [1, 2]`),
/// trimmed: split at the commas outside parentheses, brackets and
/// character constants.
pub(crate) fn top_level_items(s: &str) -> Vec<&str> {
    let mut items = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in outside_literals(s) {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => depth -= 1,
            ',' if depth == 0 => {
                items.push(s[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(s[start..].trim());
    items
}

/// Where the `(` at byte `open` of `s` closes (outside character
/// constants).
pub(crate) fn matching_paren(s: &str, open: usize) -> Option<usize> {
    let mut depth = 0i32;
    for (i, c) in outside_literals(s).skip_while(|&(i, _)| i < open) {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
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
    // A PARAMETER's value, or a variable's initialiser (it keeps its
    // initial value in the derivatives).
    if s.attrs.parameter || s.attrs.initialized {
        if let Some(init) = &s.init {
            d.push_str(&format!(" = {}", dfort_ir::dump::expr(unit, init)));
        }
    }
    Some(d)
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
/// EXIT, CYCLE) as lines, without its label (which goes on the first);
/// `None` for other statements.
pub fn jump_lines(unit: &Unit, kind: &StmtKind) -> Option<Vec<String>> {
    let p = |e: &Expr| dfort_ir::dump::expr(unit, e);
    let named = |c: &Option<String>| c.as_ref().map(|c| format!(" {c}")).unwrap_or_default();
    Some(match kind {
        StmtKind::Goto { target } => vec![format!("go to {target}")],
        StmtKind::ComputedGoto { targets, index } => {
            let t: Vec<String> = targets.iter().map(|t| t.to_string()).collect();
            vec![format!("go to ({}) {}", t.join(", "), p(index))]
        }
        StmtKind::ArithmeticIf {
            expr,
            negative,
            zero,
            positive,
        } => arithmetic_if(&p(expr), expr, *negative, *zero, *positive),
        StmtKind::Exit { construct } => vec![format!("exit{}", named(construct))],
        StmtKind::Cycle { construct } => vec![format!("cycle{}", named(construct))],
        _ => return None,
    })
}

/// An arithmetic IF (a feature Fortran 2018 deleted, which `gfortran
/// -Wall` warns of) as logical IFs and a GO TO: `if (e < 0) go to n`,
/// `if (e == 0) go to z`, `go to p`, fewer when two labels are the same.
/// The expression is then evaluated up to twice, so one that references
/// a procedure (which may change something) keeps the arithmetic IF.
fn arithmetic_if(text: &str, e: &Expr, n: u32, z: u32, p: u32) -> Vec<String> {
    let mut references = false;
    e.walk(&mut |x| {
        references |= matches!(
            x.kind,
            ExprKind::FunctionCall { .. } | ExprKind::Apply { .. }
        )
    });
    if references {
        return vec![format!("if ({text}) {n}, {z}, {p}")];
    }
    let e = match e.kind {
        ExprKind::Var(_) | ExprKind::ArrayRef { .. } | ExprKind::Int(_) | ExprKind::Real { .. } => {
            text.to_string()
        }
        _ => format!("({text})"),
    };
    if n == z && z == p {
        vec![format!("go to {n}")]
    } else if n == z {
        vec![format!("if ({e} <= 0) go to {n}"), format!("go to {p}")]
    } else if z == p {
        vec![format!("if ({e} < 0) go to {n}"), format!("go to {z}")]
    } else if n == p {
        vec![format!("if ({e} == 0) go to {z}"), format!("go to {n}")]
    } else {
        vec![
            format!("if ({e} < 0) go to {n}"),
            format!("if ({e} == 0) go to {z}"),
            format!("go to {p}"),
        ]
    }
}

/// The head of a DO loop as the original writes it, without its label:
/// `name: do i = 1, n, 2`, `do while (c)`, `do`.
pub fn do_head(unit: &Unit, name: Option<&String>, control: &DoControl) -> String {
    let p = |e: &Expr| dfort_ir::dump::expr(unit, e);
    let n = name.map(|n| format!("{n}: ")).unwrap_or_default();
    let head = match control {
        DoControl::Counted {
            var,
            start,
            end,
            step,
        } => format!(
            "do {} = {}, {}{}",
            unit.symbol(*var).name,
            p(start),
            p(end),
            step.as_ref()
                .map(|s| format!(", {}", p(s)))
                .unwrap_or_default()
        ),
        DoControl::While(c) => format!("do while ({})", p(c)),
        DoControl::Forever => "do".into(),
    };
    format!("{n}{head}")
}

/// The `end do` closing a loop named `name`.
pub fn end_do(name: Option<&String>) -> String {
    let tail = name.map(|n| format!(" {n}")).unwrap_or_default();
    format!("end do{tail}")
}

/// The reference `e` (a variable or an array element or section) with
/// its variable renamed by `names` (`xd(i)` for `x(i)`); `None` for other
/// expressions and variables without a new name.
pub fn renamed_ref(unit: &Unit, names: &HashMap<SymbolId, String>, e: &Expr) -> Option<String> {
    match &e.kind {
        ExprKind::Var(s) => names.get(s).cloned(),
        ExprKind::ArrayRef { array, .. } => {
            let d = names.get(array)?;
            let printed = dfort_ir::dump::expr(unit, e);
            let n = unit.symbol(*array).name.len();
            Some(format!("{d}{}", &printed[n.min(printed.len())..]))
        }
        // `ps(i)%x` → `psb(i)%x`: the derivative type has the component.
        ExprKind::Component { .. } => {
            let (s, _) = dfort_ir::dp::target(e)?;
            let d = names.get(&s)?;
            let printed = dfort_ir::dump::expr(unit, e);
            let n = unit.symbol(s).name.len();
            Some(format!("{d}{}", &printed[n.min(printed.len())..]))
        }
        _ => None,
    }
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
    let parameters = order
        .iter()
        .take_while(|s| unit.symbol(**s).attrs.parameter)
        .count();
    let ordered = after_what_they_use(unit, &order[..parameters]);
    order.splice(..parameters, ordered);
    order
}

/// Named constants in an order where each comes after those its value
/// uses (`PARAMETER (NLINE = 80, NMAX = NLINE/4)` with NMAX declared
/// first), else as given.
fn after_what_they_use(unit: &Unit, params: &[SymbolId]) -> Vec<SymbolId> {
    let uses = |s: SymbolId| -> Vec<SymbolId> {
        let mut out = Vec::new();
        if let Some(init) = &unit.symbol(s).init {
            init.walk(&mut |x| {
                if let ExprKind::Var(v) | ExprKind::ArrayRef { array: v, .. } = x.kind {
                    if v != s && params.contains(&v) {
                        out.push(v);
                    }
                }
            });
        }
        out
    };
    let mut done: Vec<SymbolId> = Vec::with_capacity(params.len());
    let mut left: Vec<SymbolId> = params.to_vec();
    while !left.is_empty() {
        let ready = left
            .iter()
            .position(|&s| uses(s).iter().all(|u| done.contains(u)))
            // A cycle (an error the compiler reports): as given.
            .unwrap_or(0);
        done.push(left.remove(ready));
    }
    done
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
    /// Its interface body, when callers need an explicit interface (an
    /// assumed-shape, optional, allocatable, pointer or target dummy, or an
    /// array-valued, allocatable or pointer result; [`crate::declare`]).
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
        // The adjoint's modules may extend the runtime's generics.
        if suffix == "_b" {
            w.line("use dfort_stack");
        }
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

/// Adds procedures of derivative modules that belong to no unit of the
/// program (`(module, (specification lines, procedure text))`): the
/// lines go before the module's `contains`, the text after it.
pub fn add_module_procedures(
    program: &Program,
    decls: &mut std::collections::BTreeMap<String, Vec<String>>,
    routines: &mut Vec<Routine>,
    procedures: impl Iterator<Item = (String, (Vec<String>, String))>,
) {
    for (m, (lines, text)) in procedures {
        decls.entry(m.clone()).or_default().extend(lines);
        let Some(owner) = program
            .all_units()
            .find(|u| u.name == m && u.kind == UnitKind::Module)
        else {
            continue;
        };
        routines.push(Routine {
            unit: owner.id,
            host: None,
            module: Some(m),
            uses: Default::default(),
            text,
            spec_end: 0,
            interface: None,
            calls: Default::default(),
        });
    }
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

/// A pointer assignment or NULLIFY as the derivatives run it: in the
/// primal's terms, where the primal has it (the analyses read the
/// pointer's uses as its target's, so nothing else refers to it); `None`
/// for other statements.
pub fn pointer_line(unit: &Unit, kind: &StmtKind) -> Option<String> {
    use dfort_ir::dump::expr as print;
    match kind {
        StmtKind::PointerAssign { pointer, target } => Some(format!(
            "{} => {}",
            print(unit, pointer),
            print(unit, target)
        )),
        StmtKind::Nullify { objects } => {
            let v: Vec<String> = objects.iter().map(|o| print(unit, o)).collect();
            Some(format!("nullify({})", v.join(", ")))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_names_are_found_and_parts_of_longer_names_are_not() {
        let text = "f_d(x) + f(x) + xf + f";
        assert_eq!(whole_name_at(text, "f").collect::<Vec<_>>(), vec![9, 21]);
        assert!(code_names("  ! call f()\n  call G(x)\n", "g"));
        assert!(!code_names("  ! call f()\n  call f_d()\n", "f"));
    }

    #[test]
    fn scans_skip_character_constants() {
        let s = "x = f('a)''b(', \"q\") + 1 ! c";
        let kept: String = outside_literals(s).map(|(_, c)| c).collect();
        assert_eq!(kept, "x = f('''', \"\") + 1 ! c");
        // The `(` after `f` closes after both constants, not inside one.
        assert_eq!(matching_paren(s, 5), Some(s.find(") +").unwrap()));
        assert_eq!(matching_paren("g(a, (b)", 1), None);
    }
}
