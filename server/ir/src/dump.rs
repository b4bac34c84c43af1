//! A stable, readable text dump of the IR (symbols, statements, CFG, calls)
//! for `dfort ir` and the snapshot tests, and the Fortran-syntax expression
//! printer it uses.

use crate::callgraph::Callee;
use crate::cfg::EdgeKind;
use crate::ir::*;
use std::fmt::Write;

/// Prints an expression in Fortran syntax (lower case, minimal parentheses).
pub fn expr(unit: &Unit, e: &Expr) -> String {
    let mut s = String::new();
    write_expr(unit, e, 0, &mut s);
    s
}

fn prec(op: BinaryOp) -> u8 {
    match op {
        BinaryOp::Eqv | BinaryOp::Neqv => 1,
        BinaryOp::Or => 2,
        BinaryOp::And => 3,
        BinaryOp::Eq | BinaryOp::Ne | BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge => {
            5
        }
        BinaryOp::Concat => 6,
        BinaryOp::Add | BinaryOp::Sub => 7,
        BinaryOp::Mul | BinaryOp::Div => 8,
        BinaryOp::Pow => 10,
    }
}

fn sym_name(unit: &Unit, id: SymbolId) -> &str {
    unit.symbols.get(id).map(|s| s.name.as_str()).unwrap_or("?")
}

fn write_args(unit: &Unit, args: &[Arg], out: &mut String) {
    for (i, a) in args.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        if let Some(k) = &a.keyword {
            out.push_str(k);
            out.push('=');
        }
        write_expr(unit, &a.value, 0, out);
    }
}

fn write_subs(unit: &Unit, subs: &[Subscript], out: &mut String) {
    for (i, s) in subs.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        match s {
            Subscript::Index(e) => write_expr(unit, e, 0, out),
            Subscript::Range { lo, hi, stride } => {
                if let Some(e) = lo {
                    write_expr(unit, e, 0, out);
                }
                out.push(':');
                if let Some(e) = hi {
                    write_expr(unit, e, 0, out);
                }
                if let Some(e) = stride {
                    out.push(':');
                    write_expr(unit, e, 0, out);
                }
            }
        }
    }
}

/// A function reference `name(args)` as written: a defined operator
/// (or an intrinsic one extended to derived types, whose generic name
/// is `operator(op)`) in operator form, its operands parenthesized.
pub fn reference(unit: &Unit, name: &str, args: &[Arg]) -> String {
    let mut s = String::new();
    write_reference(unit, name, args, 0, &mut s);
    s
}

/// `call name(args)`, or `a = b` for a defined assignment.
pub fn call_statement(unit: &Unit, name: &str, args: &[Arg]) -> String {
    match args {
        [lhs, rhs] if name == ASSIGNMENT_GENERIC => {
            format!("{} = {}", expr(unit, &lhs.value), expr(unit, &rhs.value))
        }
        _ => {
            let mut s = format!("call {name}(");
            write_args(unit, args, &mut s);
            s.push(')');
            s
        }
    }
}

fn write_reference(unit: &Unit, name: &str, args: &[Arg], ctx: u8, out: &mut String) {
    let Some(op) = generic_operator(name) else {
        out.push_str(name);
        out.push('(');
        write_args(unit, args, out);
        out.push(')');
        return;
    };
    // Defined binary operators bind least, defined unary ones most:
    // operands of other operators are parenthesized, and so is the
    // reference inside anything but a whole expression.
    if ctx > 0 {
        out.push('(');
    }
    match args {
        [operand] => {
            out.push_str(op);
            if op.starts_with('.') {
                out.push(' ');
            }
            write_expr(unit, &operand.value, 11, out);
        }
        [lhs, rhs] => {
            write_expr(unit, &lhs.value, 11, out);
            let _ = write!(out, " {op} ");
            write_expr(unit, &rhs.value, 11, out);
        }
        _ => out.push_str("<error>"),
    }
    if ctx > 0 {
        out.push(')');
    }
}

fn write_expr(unit: &Unit, e: &Expr, ctx: u8, out: &mut String) {
    match &e.kind {
        ExprKind::Int(v) => {
            if *v < 0 && ctx > 0 {
                let _ = write!(out, "({v})");
            } else {
                let _ = write!(out, "{v}");
            }
        }
        ExprKind::Real { text, .. } => out.push_str(&text.to_ascii_lowercase()),
        ExprKind::Logical(b) => out.push_str(if *b { ".true." } else { ".false." }),
        ExprKind::Str(s) => {
            let _ = write!(out, "'{}'", s.replace('\'', "''"));
        }
        ExprKind::Complex(a, b) => {
            out.push('(');
            write_expr(unit, a, 0, out);
            out.push_str(", ");
            write_expr(unit, b, 0, out);
            out.push(')');
        }
        ExprKind::Var(id) => out.push_str(sym_name(unit, *id)),
        ExprKind::ArrayRef { array, subs } => {
            out.push_str(sym_name(unit, *array));
            let element = unit.element_subs(*array, subs);
            out.push('(');
            write_subs(unit, element, out);
            out.push(')');
            // `names(i)(1:n)`: the substring of an element.
            let substring = &subs[element.len()..];
            if !substring.is_empty() {
                out.push('(');
                write_subs(unit, substring, out);
                out.push(')');
            }
        }
        ExprKind::FunctionCall { name, args, .. } => write_reference(unit, name, args, ctx, out),
        ExprKind::Intrinsic { name, args } | ExprKind::Apply { name, args } => {
            out.push_str(name);
            out.push('(');
            write_args(unit, args, out);
            out.push(')');
        }
        ExprKind::Unary { op, operand } => {
            let (s, p) = match op {
                UnaryOp::Neg => ("-", 7),
                UnaryOp::Plus => ("+", 7),
                UnaryOp::Not => (".not. ", 4),
            };
            let paren = ctx > p;
            if paren {
                out.push('(');
            }
            out.push_str(s);
            write_expr(unit, operand, p + 1, out);
            if paren {
                out.push(')');
            }
        }
        ExprKind::Binary { op, lhs, rhs } => {
            let p = prec(*op);
            let paren = ctx > p;
            if paren {
                out.push('(');
            }
            // ** is right-associative; the others left-associative.
            let (lp, rp) = if *op == BinaryOp::Pow {
                (p + 1, p)
            } else {
                (p, p + 1)
            };
            write_expr(unit, lhs, lp, out);
            let _ = write!(out, " {} ", op.as_str());
            write_expr(unit, rhs, rp, out);
            if paren {
                out.push(')');
            }
        }
        ExprKind::ArrayCtor(items) => {
            out.push('[');
            for (i, x) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_expr(unit, x, 0, out);
            }
            out.push(']');
        }
        ExprKind::ImpliedDo { items, var, bounds } => {
            out.push('(');
            for x in items {
                write_expr(unit, x, 0, out);
                out.push_str(", ");
            }
            out.push_str(sym_name(unit, *var));
            out.push_str(" = ");
            for (i, x) in bounds.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_expr(unit, x, 0, out);
            }
            out.push(')');
        }
        ExprKind::Component { base, name, subs } => {
            write_expr(unit, base, 11, out);
            out.push('%');
            out.push_str(name);
            if !subs.is_empty() {
                out.push('(');
                write_subs(unit, subs, out);
                out.push(')');
            }
        }
        ExprKind::Range { lo, hi, stride } => {
            if let Some(e) = lo {
                write_expr(unit, e, 0, out);
            }
            out.push(':');
            if let Some(e) = hi {
                write_expr(unit, e, 0, out);
            }
            if let Some(e) = stride {
                out.push(':');
                write_expr(unit, e, 0, out);
            }
        }
        ExprKind::Error => out.push_str("<error>"),
    }
}

/// Formats a type: `real(8)`, `integer(4)`, `character(len=10)`, `type(point)`.
pub fn type_name(t: &Type) -> String {
    let base = match t.base {
        BaseType::Integer => "integer",
        BaseType::Real => "real",
        BaseType::Complex => "complex",
        BaseType::Logical => "logical",
        BaseType::Character => "character",
        BaseType::Derived => {
            return format!("type({})", t.derived.as_deref().unwrap_or("?"));
        }
        BaseType::None => return "untyped".into(),
    };
    match (t.kind, &t.kind_text, &t.len) {
        (_, _, Some(len)) => format!("{base}(len={len})"),
        (Some(k), _, None) => format!("{base}({k})"),
        (None, Some(kt), None) => format!("{base}({kt})"),
        (None, None, None) => base.to_string(),
    }
}

pub fn dims(unit: &Unit, s: &Symbol) -> String {
    if s.dims.is_empty() {
        return String::new();
    }
    let parts: Vec<String> = s
        .dims
        .iter()
        .map(|d| {
            let lo = d.lower.as_ref().map(|e| expr(unit, e));
            let hi = d.upper.as_ref().map(|e| expr(unit, e));
            match d.kind {
                DimKind::Explicit => match lo {
                    Some(lo) => format!("{lo}:{}", hi.unwrap_or_default()),
                    None => hi.unwrap_or_default(),
                },
                DimKind::AssumedSize => match lo {
                    Some(lo) => format!("{lo}:*"),
                    None => "*".into(),
                },
                DimKind::AssumedShape | DimKind::Deferred => match lo {
                    Some(lo) => format!("{lo}:"),
                    None => ":".into(),
                },
            }
        })
        .collect();
    format!("({})", parts.join(", "))
}

fn storage(program: &Program, s: &Symbol) -> String {
    match &s.storage {
        Storage::Dummy(i) => format!("dummy #{}", i + 1),
        Storage::Local => "local".into(),
        Storage::Result => "result".into(),
        Storage::Common { block, index } => {
            if block.is_empty() {
                format!("common // #{}", index + 1)
            } else {
                format!("common /{block}/ #{}", index + 1)
            }
        }
        Storage::Imported { from, via, .. } => {
            let name = program
                .units
                .get(*from)
                .map(|u| u.name.as_str())
                .unwrap_or("?");
            match via {
                Association::Host => format!("host {name}"),
                Association::Use => format!("use {name}"),
            }
        }
        Storage::UnknownModule { module } => format!("use {module} (not given)"),
        Storage::Procedure => "procedure".into(),
    }
}

/// The 1-based line where a span starts, in whatever text the caller
/// reports positions of (a chunk's document, or the preprocessor's input).
pub type LineOf<'a> = &'a dyn Fn(Span) -> u32;

/// Dumps one unit, with the lines `line` gives its spans.
pub fn unit(program: &Program, u: &Unit, line: LineOf) -> String {
    let mut o = String::new();
    let _ = write!(o, "{} {}", u.kind.as_str(), u.name);
    if let Some(p) = u.parent {
        let _ = write!(o, " in {}", program.unit(p).name);
    }
    let _ = writeln!(
        o,
        " (lines {}-{}){}",
        line(u.span),
        line(Span {
            file: u.span.file,
            range: dfort_syntax::TextRange::new(u.span.range.end, u.span.range.end),
        }),
        if u.recursive { " recursive" } else { "" }
    );
    if !u.args.is_empty() {
        let names: Vec<&str> = u.args.iter().map(|a| u.symbol(*a).name.as_str()).collect();
        let _ = writeln!(o, "  args: {}", names.join(", "));
    }
    if let Some(r) = u.result {
        let _ = writeln!(o, "  result: {}", u.symbol(r).name);
    }
    if u.implicit.none {
        let _ = writeln!(o, "  implicit: none");
    } else if u.implicit != ImplicitRules::default() {
        let mut parts = Vec::new();
        for (i, t) in u.implicit.letters.iter().enumerate() {
            let c = (b'a' + i as u8) as char;
            let d = ImplicitRules::default();
            if *t != d.letters[i] {
                parts.push(format!(
                    "{c}={}",
                    t.as_ref().map(type_name).unwrap_or_else(|| "none".into())
                ));
            }
        }
        let _ = writeln!(o, "  implicit: {}", parts.join(" "));
    }
    for us in &u.uses {
        let mut s = format!("  use {}", us.module);
        if let Some(only) = &us.only {
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
            let _ = write!(s, ", only: {}", items.join(", "));
        }
        for (l, r) in &us.renames {
            let _ = write!(s, ", {l} => {r}");
        }
        if us.target.is_none() {
            s.push_str(" (not given)");
        }
        let _ = writeln!(o, "{s}");
    }
    for c in &u.commons {
        let names: Vec<&str> = c
            .members
            .iter()
            .map(|m| u.symbol(*m).name.as_str())
            .collect();
        let _ = writeln!(o, "  common /{}/: {}", c.name, names.join(", "));
    }
    for e in &u.equivalences {
        let names: Vec<&str> = e.iter().map(|m| u.symbol(*m).name.as_str()).collect();
        let _ = writeln!(o, "  equivalence: {}", names.join(", "));
    }
    for d in &u.directives {
        let _ = writeln!(
            o,
            "  directive line {}: {}({})",
            line(d.span),
            d.name,
            d.args.join(", ")
        );
    }
    let _ = writeln!(o, "  symbols:");
    let mut syms: Vec<&Symbol> = u.symbols.iter().collect();
    syms.sort_by(|a, b| a.name.cmp(&b.name));
    for s in syms {
        let mut attrs = Vec::new();
        if let Some(i) = s.intent {
            attrs.push(format!("intent({})", i.as_str()));
        }
        let a = &s.attrs;
        for (on, name) in [
            (a.parameter, "parameter"),
            (a.save, "save"),
            (a.external, "external"),
            (a.intrinsic, "intrinsic"),
            (a.allocatable, "allocatable"),
            (a.pointer, "pointer"),
            (a.target, "target"),
            (a.optional, "optional"),
            (a.initialized, "initialized"),
        ] {
            if on {
                attrs.push(name.to_string());
            }
        }
        if let (true, Some(init)) = (a.parameter, &s.init) {
            attrs.push(format!("= {}", expr(u, init)));
        }
        let typing = match s.typing {
            Typing::Declared => "",
            Typing::Implicit => " implicit",
            Typing::Imported => "",
            Typing::Unknown => " untyped",
        };
        let ty = if s.storage == Storage::Procedure && s.ty.base == BaseType::None {
            String::new()
        } else {
            format!(" {}{}", type_name(&s.ty), typing)
        };
        let _ = writeln!(
            o,
            "    {}{}{} [{}]{}",
            s.name,
            dims(u, s),
            ty,
            storage(program, s),
            if attrs.is_empty() {
                String::new()
            } else {
                format!(" {}", attrs.join(" "))
            }
        );
    }
    for sf in &u.stmt_functions {
        let _ = writeln!(
            o,
            "  statement function {}({}) = {}",
            u.symbol(sf.name).name,
            sf.params.join(", "),
            expr(u, &sf.body)
        );
    }
    let _ = writeln!(o, "  body:");
    for s in &u.body {
        stmt(program, u, *s, 2, line, &mut o);
    }
    cfg(u, &mut o);
    calls(program, u, line, &mut o);
    o
}

fn target(program: &Program, t: &CallTarget, u: &Unit) -> String {
    match t {
        CallTarget::Unit(id) => {
            let cu = program.unit(*id);
            match cu.parent {
                Some(p) => format!("{}.{}", program.unit(p).name, cu.name),
                None => cu.name.clone(),
            }
        }
        CallTarget::StatementFunction(i) => format!(
            "statement function {}",
            u.stmt_functions
                .get(*i as usize)
                .map(|s| u.symbol(s.name).name.as_str())
                .unwrap_or("?")
        ),
        CallTarget::External => "external".into(),
        CallTarget::Unresolved => "unresolved".into(),
    }
}

fn stmt(program: &Program, u: &Unit, id: StmtId, depth: usize, line: LineOf, o: &mut String) {
    let st = u.stmt(id);
    let ind = "  ".repeat(depth);
    let ln = line(st.span);
    let label = st.label.map(|l| format!("{l} ")).unwrap_or_default();
    let head = format!("{ind}{ln:>4}: {label}");
    let block = |b: &[StmtId], o: &mut String| {
        for s in b {
            stmt(program, u, *s, depth + 1, line, o);
        }
    };
    match &st.kind {
        StmtKind::Assign { lhs, rhs } => {
            let _ = writeln!(o, "{head}{} = {}", expr(u, lhs), expr(u, rhs));
            refs(program, u, &[lhs, rhs], &ind, o);
        }
        StmtKind::Call {
            name,
            target: t,
            args,
        } => {
            let mut a = String::new();
            write_args(u, args, &mut a);
            let _ = writeln!(o, "{head}call {name}({a})  -> {}", target(program, t, u));
            let exprs: Vec<&Expr> = args.iter().map(|x| &x.value).collect();
            refs(program, u, &exprs, &ind, o);
        }
        StmtKind::If {
            arms,
            else_body,
            one_line,
        } => {
            for (i, arm) in arms.iter().enumerate() {
                let kw = if i == 0 { "if" } else { "else if" };
                let tail = if *one_line { "" } else { " then" };
                let _ = writeln!(o, "{head}{kw} ({}){tail}", expr(u, &arm.cond));
                refs(program, u, &[&arm.cond], &ind, o);
                block(&arm.body, o);
            }
            if let Some(b) = else_body {
                let _ = writeln!(o, "{ind}      else");
                block(b, o);
            }
        }
        StmtKind::Where {
            arms, else_body, ..
        } => {
            for (i, arm) in arms.iter().enumerate() {
                let kw = if i == 0 { "where" } else { "elsewhere" };
                let _ = writeln!(o, "{head}{kw} ({})", expr(u, &arm.cond));
                refs(program, u, &[&arm.cond], &ind, o);
                block(&arm.body, o);
            }
            if let Some(b) = else_body {
                let _ = writeln!(o, "{ind}      elsewhere");
                block(b, o);
            }
        }
        StmtKind::Do {
            name,
            control,
            body,
            end_label,
        } => {
            let n = name.as_ref().map(|n| format!("{n}: ")).unwrap_or_default();
            let l = end_label.map(|l| format!(" {l}")).unwrap_or_default();
            let c = match control {
                DoControl::Counted {
                    var,
                    start,
                    end,
                    step,
                } => {
                    let mut s = format!(
                        " {} = {}, {}",
                        sym_name(u, *var),
                        expr(u, start),
                        expr(u, end)
                    );
                    if let Some(st) = step {
                        let _ = write!(s, ", {}", expr(u, st));
                    }
                    s
                }
                DoControl::While(c) => format!(" while ({})", expr(u, c)),
                DoControl::Forever => String::new(),
            };
            let _ = writeln!(o, "{head}{n}do{l}{c}");
            block(body, o);
        }
        StmtKind::SelectCase { selector, cases } => {
            let _ = writeln!(o, "{head}select case ({})", expr(u, selector));
            for c in cases {
                if c.default {
                    let _ = writeln!(o, "{ind}      case default");
                } else {
                    let vals: Vec<String> = c
                        .values
                        .iter()
                        .map(|v| match v {
                            CaseValue::Value(e) => expr(u, e),
                            CaseValue::Range(a, b) => format!(
                                "{}:{}",
                                a.as_ref().map(|e| expr(u, e)).unwrap_or_default(),
                                b.as_ref().map(|e| expr(u, e)).unwrap_or_default()
                            ),
                        })
                        .collect();
                    let _ = writeln!(o, "{ind}      case ({})", vals.join(", "));
                }
                block(&c.body, o);
            }
        }
        StmtKind::Goto { target } => {
            let _ = writeln!(o, "{head}go to {target}");
        }
        StmtKind::ComputedGoto { targets, index } => {
            let t: Vec<String> = targets.iter().map(|t| t.to_string()).collect();
            let _ = writeln!(o, "{head}go to ({}) {}", t.join(", "), expr(u, index));
        }
        StmtKind::ArithmeticIf {
            expr: e,
            negative,
            zero,
            positive,
        } => {
            let _ = writeln!(
                o,
                "{head}if ({}) {negative}, {zero}, {positive}",
                expr(u, e)
            );
        }
        StmtKind::Exit { construct } => {
            let _ = writeln!(
                o,
                "{head}exit{}",
                construct
                    .as_ref()
                    .map(|c| format!(" {c}"))
                    .unwrap_or_default()
            );
        }
        StmtKind::Cycle { construct } => {
            let _ = writeln!(
                o,
                "{head}cycle{}",
                construct
                    .as_ref()
                    .map(|c| format!(" {c}"))
                    .unwrap_or_default()
            );
        }
        StmtKind::Return => {
            let _ = writeln!(o, "{head}return");
        }
        StmtKind::Stop => {
            let _ = writeln!(o, "{head}stop");
        }
        StmtKind::Continue => {
            let _ = writeln!(o, "{head}continue");
        }
        StmtKind::Io {
            kind,
            reads,
            writes,
            branches,
            ..
        } => {
            let k = format!("{kind:?}").to_ascii_lowercase();
            let r: Vec<String> = reads.iter().map(|e| expr(u, e)).collect();
            let w: Vec<String> = writes.iter().map(|e| expr(u, e)).collect();
            let b: Vec<String> = branches.iter().map(|l| l.to_string()).collect();
            let jumps = if b.is_empty() {
                String::new()
            } else {
                format!(" branches [{}]", b.join(", "))
            };
            let _ = writeln!(
                o,
                "{head}{k} reads [{}] writes [{}]{jumps}",
                r.join(", "),
                w.join(", ")
            );
        }
        StmtKind::Allocate {
            objects,
            deallocate,
        } => {
            let v: Vec<String> = objects.iter().map(|e| expr(u, e)).collect();
            let kw = if *deallocate {
                "deallocate"
            } else {
                "allocate"
            };
            let _ = writeln!(o, "{head}{kw} {}", v.join(", "));
        }
        StmtKind::PointerAssign { pointer, target } => {
            let _ = writeln!(o, "{head}{} => {}", expr(u, pointer), expr(u, target));
        }
        StmtKind::Nullify { objects } => {
            let v: Vec<String> = objects.iter().map(|e| expr(u, e)).collect();
            let _ = writeln!(o, "{head}nullify {}", v.join(", "));
        }
        StmtKind::Unsupported { construct } => {
            let _ = writeln!(o, "{head}unsupported: {construct}");
        }
    }
}

/// One line per function reference in the expressions, saying what it is.
fn refs(program: &Program, u: &Unit, exprs: &[&Expr], ind: &str, o: &mut String) {
    let mut notes = Vec::new();
    for e in exprs {
        e.walk(&mut |x| match &x.kind {
            ExprKind::FunctionCall {
                name, target: t, ..
            } => notes.push(format!("{name} -> {}", target(program, t, u))),
            ExprKind::Apply { name, .. } => notes.push(format!("{name} -> unresolved")),
            _ => {}
        });
    }
    if !notes.is_empty() {
        let _ = writeln!(o, "{ind}        ; {}", notes.join("; "));
    }
}

fn cfg(u: &Unit, o: &mut String) {
    let c = &u.cfg;
    let _ = writeln!(
        o,
        "  cfg: {} nodes, {}",
        c.nodes.len(),
        if c.structured {
            "structured"
        } else {
            "unstructured"
        }
    );
    for j in &c.jumps {
        let _ = writeln!(o, "    jump: s{} {}", j.stmt.0, j.reason);
    }
    for (i, n) in c.nodes.iter_enumerated() {
        let stmts: Vec<String> = n.stmts.iter().map(|s| format!("s{}", s.0)).collect();
        let succs: Vec<String> = n
            .succs
            .iter()
            .map(|(t, k)| match k {
                EdgeKind::Seq => format!("n{}", t.0),
                EdgeKind::Arm(a) => format!("n{}[arm {a}]", t.0),
                EdgeKind::Body => format!("n{}[body]", t.0),
                EdgeKind::LoopExit => format!("n{}[exit]", t.0),
                EdgeKind::Back => format!("n{}[back]", t.0),
                EdgeKind::Jump => format!("n{}[jump]", t.0),
            })
            .collect();
        let _ = writeln!(
            o,
            "    n{} {}{} -> {}",
            i.0,
            n.kind.as_str(),
            if stmts.is_empty() {
                String::new()
            } else {
                format!(" [{}]", stmts.join(" "))
            },
            if succs.is_empty() {
                "-".to_string()
            } else {
                succs.join(", ")
            }
        );
    }
}

fn calls(program: &Program, u: &Unit, line: LineOf, o: &mut String) {
    let g = &program.call_graph;
    let Some(sites) = g.calls_from.get(u.id) else {
        return;
    };
    if sites.is_empty() {
        return;
    }
    let _ = writeln!(o, "  calls:");
    for &i in sites {
        let s = &g.sites[i];
        let ln = line(s.span);
        let callee = match &s.callee {
            Callee::Unit(id) => target(program, &CallTarget::Unit(*id), u),
            Callee::External => format!("{} (external)", s.name),
        };
        let binds: Vec<String> = s
            .bindings
            .iter()
            .map(|b| {
                let formal = match (&s.callee, b.formal) {
                    (Callee::Unit(id), Some(f)) => program.unit(*id).symbol(f).name.clone(),
                    _ => format!("#{}", b.arg_index + 1),
                };
                let actual = match b.actual {
                    crate::callgraph::Actual::Var(v) => u.symbol(v).name.clone(),
                    crate::callgraph::Actual::Part(v) => format!("{}(..)", u.symbol(v).name),
                    crate::callgraph::Actual::Value => "value".into(),
                };
                format!("{actual}->{formal}")
            })
            .collect();
        let _ = writeln!(
            o,
            "    line {ln}: {}{callee} [{}]",
            if s.function { "function " } else { "" },
            binds.join(", ")
        );
    }
}
