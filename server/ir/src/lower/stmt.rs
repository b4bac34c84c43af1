//! Lowering of executable statements into the unit's statement arena,
//! keeping the structure of IF, DO, SELECT CASE (labelled DO loops
//! included: the grammar nests them, the terminal statement joins the body).

use super::decl::parse_label;
use super::{children, field, named_children, UnitLowerer};
use crate::ir::*;
use dfort_syntax::flat::FNode;
use dfort_syntax::rules::{DUPLICATE_LABEL, UNSUPPORTED};

/// Whether `n` holds an ERROR or MISSING node.
fn has_error(n: FNode) -> bool {
    n.is_error() || n.is_missing() || children(n).into_iter().any(has_error)
}

impl<'f, 'a> UnitLowerer<'f, 'a> {
    /// Lowers a sequence of sibling nodes (statements, labels, comments,
    /// declarations) into statement ids.
    pub(crate) fn block(&mut self, nodes: &[FNode<'a>]) -> Vec<StmtId> {
        let mut out = Vec::new();
        let mut label: Option<u32> = None;
        for &n in nodes {
            match n.kind() {
                "statement_label" => {
                    label = parse_label(self.text(n));
                    self.label_span = Some(self.span(n));
                    continue;
                }
                "comment" => continue,
                "ERROR" => {
                    label = None;
                    continue;
                }
                "format_statement" => {
                    if let Some(l) = label.take() {
                        if self.labels.contains_key(&l) || self.format_labels.contains(&l) {
                            let sp = self.stmt_span(n);
                            self.fx.report(
                                &DUPLICATE_LABEL,
                                sp,
                                format!("label {l} is already defined in this unit"),
                            );
                        } else {
                            self.format_labels.push(l);
                            self.format(n, l);
                        }
                    }
                    continue;
                }
                _ => {}
            }
            if n.is_missing() {
                continue;
            }
            if !self.seen_executable && self.statement_function(n, label) {
                label = None;
                continue;
            }
            if self.specification(n) {
                label = None;
                continue;
            }
            self.seen_executable = true;
            if label.is_none() {
                self.label_span = None;
            }
            if let Some(id) = self.statement(n, label.take()) {
                out.push(id);
            }
            out.append(&mut self.following);
            self.label_span = None;
        }
        out
    }

    /// `f(x, y) = expr` before the first executable statement, where `f` is
    /// not an array of the unit and every dummy is a name: a statement
    /// function definition — unless `f` turns out, when linking, to be an
    /// array visible by host or use association (`as_assignment`).
    fn statement_function(&mut self, n: FNode<'a>, label: Option<u32>) -> bool {
        if n.kind() != "assignment_statement" {
            return false;
        }
        let Some(left) = field(n, "left") else {
            return false;
        };
        if left.kind() != "call_expression" {
            return false;
        }
        let kids = named_children(left);
        let Some(name_node) = kids.first().copied().filter(|k| k.kind() == "identifier") else {
            return false;
        };
        let name = self.lname(name_node);
        let known = self.names.get(&name).map(|&id| &self.unit.symbols[id]);
        if let Some(s) = known {
            if !s.dims.is_empty() || s.ty.base == BaseType::Character {
                return false;
            }
        }
        let declared = known.is_some_and(|s| s.declared);
        let param_nodes = kids
            .get(1)
            .map(|list| named_children(*list))
            .unwrap_or_default();
        // Dummies are names: `y(1) = …` or `y(i+1) = …` assign an element.
        if param_nodes.iter().any(|p| p.kind() != "identifier") {
            return false;
        }
        let params: Vec<String> = param_nodes.iter().map(|p| self.lname(*p)).collect();
        if params
            .iter()
            .any(|p| !p.starts_with(|c: char| c.is_ascii_alphabetic()))
        {
            return false;
        }
        let span = self.stmt_span(n);
        let nspan = self.span(name_node);
        // Lowered before `f` becomes a procedure name, so that `f(…)` stays
        // an unresolved reference linking can make an array element.
        let as_assignment = (!declared).then(|| (self.expr(left), label));
        let id = self.symbol(&name, nspan);
        self.sym_mut(id).storage = Storage::Procedure;
        // Dummy names of a statement function are local to it; they are
        // lowered as symbols of the unit (they share the unit's implicit
        // typing), which is what Fortran 77 prescribes for their types.
        let body = match field(n, "right") {
            Some(r) => self.expr(r),
            None => Expr {
                kind: ExprKind::Error,
                span,
            },
        };
        self.unit.stmt_functions.push(StmtFunction {
            name: id,
            params,
            body,
            span,
            as_assignment,
        });
        true
    }

    fn label_ref(&mut self, n: FNode<'a>) -> Option<u32> {
        let l = parse_label(self.text(n))?;
        let sp = self.span(n);
        self.label_refs.push((l, sp));
        Some(l)
    }

    pub(crate) fn statement(&mut self, n: FNode<'a>, label: Option<u32>) -> Option<StmtId> {
        let span = self.stmt_span(n);
        let kind = match n.kind() {
            // The parser's recovery may join a half-typed line to the next
            // statement (`x` then `i = i + 1` reads as `x = i + 1`, the `i`
            // an ERROR): such a statement is left out, the syntax error
            // says why, and nothing is analysed of what was not written.
            "assignment_statement" if has_error(n) => return None,
            "assignment_statement" => {
                let lhs = match field(n, "left") {
                    Some(l) => self.expr(l),
                    None => return None,
                };
                let rhs = match field(n, "right") {
                    Some(r) => self.expr(r),
                    None => return None,
                };
                StmtKind::Assign { lhs, rhs }
            }
            "subroutine_call" => {
                let name = field(n, "subroutine")
                    .map(|s| self.lname(s))
                    .unwrap_or_default();
                let list = named_children(n)
                    .into_iter()
                    .find(|c| c.kind() == "argument_list");
                if let Some(list) = list {
                    let alt = named_children(list)
                        .iter()
                        .any(|c| matches!(c.kind(), "assumed_size" | "ERROR"));
                    if alt {
                        return Some(self.unsupported(
                            label,
                            n,
                            "alternate returns (`*label` actual arguments)",
                        ));
                    }
                }
                let args = self.args(list);
                StmtKind::Call {
                    name,
                    target: CallTarget::Unresolved,
                    args,
                }
            }
            "if_statement" => return Some(self.if_statement(n, label)),
            "do_loop" => return Some(self.do_loop(n, label)),
            "select_case_statement" => return Some(self.select_case(n, label)),
            "keyword_statement" => return self.keyword_statement(n, label),
            "arithmetic_if_statement" => {
                let kids = named_children(n);
                let expr = match kids.first() {
                    Some(e) => self.expr(*e),
                    None => return None,
                };
                let labels: Vec<u32> = kids
                    .iter()
                    .filter(|k| k.kind() == "statement_label_reference")
                    .filter_map(|k| self.label_ref(*k))
                    .collect();
                let [negative, zero, positive] = labels[..] else {
                    return Some(self.unsupported(label, n, "this arithmetic IF form"));
                };
                StmtKind::ArithmeticIf {
                    expr,
                    negative,
                    zero,
                    positive,
                }
            }
            "stop_statement" => StmtKind::Stop,
            "print_statement" => self.io(n, IoKind::Print),
            "write_statement" => self.io(n, IoKind::Write),
            "read_statement" => self.io(n, IoKind::Read),
            "open_statement" => self.io(n, IoKind::Open),
            "close_statement" => self.io(n, IoKind::Close),
            "inquire_statement" | "file_position_statement" => self.io(n, IoKind::Other),
            "allocate_statement" | "deallocate_statement" => {
                let mut objects = Vec::new();
                for c in named_children(n) {
                    match c.kind() {
                        "sized_allocation" => {
                            // `x(lo:hi, n)`: the shape as an array reference
                            // with one subscript per extent.
                            let kids = named_children(c);
                            if let Some(id) = kids.first() {
                                let mut e = self.expr(*id);
                                let size = kids.iter().find(|k| k.kind() == "size");
                                if let (ExprKind::Var(array), Some(size)) = (&e.kind, size) {
                                    let subs = named_children(*size)
                                        .into_iter()
                                        .map(|x| super::expr::subscript(self.expr(x)))
                                        .collect();
                                    e.kind = ExprKind::ArrayRef {
                                        array: *array,
                                        subs,
                                    };
                                    e.span = self.span(c);
                                }
                                objects.push(e);
                            }
                        }
                        "identifier" | "derived_type_member_expression" | "call_expression" => {
                            let e = self.expr(c);
                            objects.push(e);
                        }
                        _ => {}
                    }
                }
                StmtKind::Allocate {
                    objects,
                    deallocate: n.kind() == "deallocate_statement",
                }
            }
            "entry_statement" => return Some(self.entry(label, n)),
            "assign_statement" => {
                return Some(self.unsupported(label, n, "ASSIGN statements (assigned GO TO)"))
            }
            "where_statement" => return Some(self.where_statement(n, label)),
            "forall_statement" => return Some(self.forall(n, label)),
            "include_statement" => return Some(self.unsupported(label, n, "INCLUDE")),
            "pointer_association_statement" => {
                let kids = named_children(n);
                let (Some(p), Some(t)) = (kids.first(), kids.get(1)) else {
                    return Some(self.unsupported(label, n, "this pointer assignment"));
                };
                let pointer = self.expr(*p);
                let plain = match &pointer.kind {
                    ExprKind::Var(_) => true,
                    ExprKind::Component { subs, .. } => subs.is_empty(),
                    _ => false,
                };
                if !plain {
                    return Some(self.unsupported(label, n, "pointer bounds remapping"));
                }
                if t.kind() == "null_literal" {
                    StmtKind::Nullify {
                        objects: vec![pointer],
                    }
                } else {
                    StmtKind::PointerAssign {
                        pointer,
                        target: self.expr(*t),
                    }
                }
            }
            "nullify_statement" => StmtKind::Nullify {
                objects: named_children(n)
                    .into_iter()
                    .map(|c| self.expr(c))
                    .collect(),
            },
            "block_construct" => return Some(self.unsupported(label, n, "BLOCK constructs")),
            "associate_statement" => return Some(self.unsupported(label, n, "ASSOCIATE")),
            "select_type_statement" => return Some(self.unsupported(label, n, "SELECT TYPE")),
            "select_rank_statement" => return Some(self.unsupported(label, n, "SELECT RANK")),
            k if k.starts_with("coarray") => return Some(self.unsupported(label, n, "coarrays")),
            k if k.starts_with("end_") => return None,
            "internal_procedures" | "contains_statement" => return None,
            other => {
                let what = format!("`{}`", other.replace('_', " "));
                return Some(self.unsupported(label, n, &what));
            }
        };
        Some(self.push_stmt(label, span, kind))
    }

    fn if_statement(&mut self, n: FNode<'a>, label: Option<u32>) -> StmtId {
        let span = self.stmt_span(n);
        // Reserve the id first so the IF precedes its body in the arena.
        let id = self.push_stmt(label, span, StmtKind::Continue);
        let kids = children(n);
        let one_line = !kids.iter().any(|k| k.kind() == "end_if_statement");
        let mut arms = Vec::new();
        let mut else_body = None;
        let mut cond: Option<Expr> = None;
        let mut body_nodes: Vec<FNode<'a>> = Vec::new();
        let mut arm_span = span;
        for k in kids {
            match k.kind() {
                "parenthesized_expression" if cond.is_none() => {
                    cond = Some(self.expr(k));
                    arm_span = self.stmt_span(n);
                }
                "elseif_clause" | "else_clause" => {
                    if let Some(c) = cond.take() {
                        let body = self.block(&body_nodes);
                        arms.push(IfArm {
                            cond: c,
                            body,
                            span: arm_span,
                        });
                    }
                    body_nodes.clear();
                    if k.kind() == "elseif_clause" {
                        let ck = named_children(k);
                        let c = ck
                            .iter()
                            .find(|c| c.kind() == "parenthesized_expression")
                            .map(|c| self.expr(*c))
                            .unwrap_or(Expr {
                                kind: ExprKind::Error,
                                span: self.span(k),
                            });
                        let rest: Vec<FNode<'a>> = ck
                            .into_iter()
                            .filter(|c| c.kind() != "parenthesized_expression")
                            .collect();
                        let body = self.block(&rest);
                        arms.push(IfArm {
                            cond: c,
                            body,
                            span: self.stmt_span(k),
                        });
                    } else {
                        let ek = named_children(k);
                        else_body = Some(self.block(&ek));
                    }
                }
                "end_if_statement" => {}
                _ if k.is_named() => body_nodes.push(k),
                _ => {}
            }
        }
        if let Some(c) = cond.take() {
            let body = self.block(&body_nodes);
            arms.insert(
                0,
                IfArm {
                    cond: c,
                    body,
                    span: arm_span,
                },
            );
        }
        self.unit.stmts[id].kind = StmtKind::If {
            arms,
            else_body,
            one_line,
        };
        id
    }

    /// A WHERE statement or construct: the first mask and the body before
    /// any ELSEWHERE make the first arm, each `elsewhere (mask)` another
    /// arm, a bare `elsewhere` the else body. A body may hold assignments
    /// and nested WHEREs only.
    fn where_statement(&mut self, n: FNode<'a>, label: Option<u32>) -> StmtId {
        let span = self.stmt_span(n);
        let id = self.push_stmt(label, span, StmtKind::Continue);
        let kids = named_children(n);
        let one_line = !kids.iter().any(|k| k.kind() == "end_where_statement");
        let mut arms = Vec::new();
        let mut else_body = None;
        let mut clauses: Vec<(Option<FNode<'a>>, Span, Vec<FNode<'a>>)> =
            vec![(None, span, Vec::new())];
        for k in kids {
            match k.kind() {
                "parenthesized_expression" if clauses.len() == 1 && clauses[0].0.is_none() => {
                    clauses[0].0 = Some(k);
                }
                "elsewhere_clause" => {
                    let ck = named_children(k);
                    let mask = ck
                        .iter()
                        .copied()
                        .find(|c| c.kind() == "parenthesized_expression");
                    let rest = ck
                        .into_iter()
                        .filter(|c| c.kind() != "parenthesized_expression")
                        .collect();
                    clauses.push((mask, self.stmt_span(k), rest));
                }
                "end_where_statement" => {}
                _ => {
                    if let Some(last) = clauses.last_mut() {
                        last.2.push(k);
                    }
                }
            }
        }
        for (i, (mask, arm_span, nodes)) in clauses.into_iter().enumerate() {
            let body = self.block(&nodes);
            self.where_body_check(&body);
            match mask {
                Some(m) => arms.push(IfArm {
                    cond: self.expr(m),
                    body,
                    span: arm_span,
                }),
                None if i == 0 => arms.push(IfArm {
                    cond: Expr {
                        kind: ExprKind::Error,
                        span,
                    },
                    body,
                    span,
                }),
                None => else_body = Some(body),
            }
        }
        self.unit.stmts[id].kind = StmtKind::Where {
            arms,
            else_body,
            one_line,
        };
        id
    }

    /// A WHERE body holds assignments and nested WHEREs only: anything
    /// else is reported where it stands.
    fn where_body_check(&mut self, body: &[StmtId]) {
        for &s in body {
            let st = &self.unit.stmts[s];
            if !matches!(
                st.kind,
                StmtKind::Assign { .. } | StmtKind::Where { .. } | StmtKind::Unsupported { .. }
            ) {
                let sp = st.span;
                self.unit.stmts[s].kind = StmtKind::Unsupported {
                    construct: "statements other than assignments inside WHERE".into(),
                };
                self.fx.report(
                    &UNSUPPORTED,
                    sp,
                    "only assignments and nested WHERE constructs may appear inside a WHERE"
                        .to_string(),
                );
            }
        }
    }

    fn do_loop(&mut self, n: FNode<'a>, label: Option<u32>) -> StmtId {
        let span = self.stmt_span(n);
        let id = self.push_stmt(label, span, StmtKind::Continue);
        let mut name = None;
        let mut control = DoControl::Forever;
        let mut end_label = None;
        let mut body_nodes: Vec<FNode<'a>> = Vec::new();
        let mut terminal: Vec<FNode<'a>> = Vec::new();
        let mut concurrent = None;
        for k in named_children(n) {
            match k.kind() {
                "block_label_start_expression" => {
                    let t = self.text(k);
                    name = Some(t.trim().trim_end_matches(':').trim().to_ascii_lowercase());
                }
                "do_statement" => {
                    if let Some(l) = field(k, "do_label") {
                        end_label = parse_label(self.text(l));
                    }
                    for c in named_children(k) {
                        match c.kind() {
                            "loop_control_expression" => {
                                let parts = named_children(c);
                                let mut it = parts.into_iter().filter(|p| p.kind() != "comment");
                                let var = it.next();
                                let start = it.next();
                                let end = it.next();
                                let step = it.next();
                                if let (Some(v), Some(s), Some(e)) = (var, start, end) {
                                    let vname = self.lname(v);
                                    let vspan = self.span(v);
                                    let var = self.symbol(&vname, vspan);
                                    let start = self.expr(s);
                                    let end = self.expr(e);
                                    let step = step.map(|s| self.expr(s));
                                    control = DoControl::Counted {
                                        var,
                                        start: Box::new(start),
                                        end: Box::new(end),
                                        step: step.map(Box::new),
                                    };
                                }
                            }
                            "while_statement" => {
                                let cond = named_children(c)
                                    .into_iter()
                                    .find(|x| x.kind() == "parenthesized_expression")
                                    .map(|x| self.expr(x))
                                    .unwrap_or(Expr {
                                        kind: ExprKind::Error,
                                        span: self.span(c),
                                    });
                                control = DoControl::While(Box::new(cond));
                            }
                            "concurrent_statement" => concurrent = Some(c),
                            _ => {}
                        }
                    }
                }
                "end_do_label_loop_statement" => {
                    // Holds the labelled terminal statement (unless it is a
                    // shared terminal owned by an enclosing loop).
                    for c in named_children(k) {
                        if c.kind() == "statement_label" || c.kind() == "do_label_virtual" {
                            continue;
                        }
                        terminal.push(c);
                    }
                }
                "end_do_loop_statement" => {}
                _ => body_nodes.push(k),
            }
        }
        if let Some(l) = end_label {
            let sp = span;
            self.label_refs.push((l, sp));
        }
        if let Some(c) = concurrent {
            body_nodes.extend(terminal);
            return self.do_concurrent(id, name, c, &body_nodes);
        }
        let mut body = self.block(&body_nodes);
        if !terminal.is_empty() {
            let before = self.unit.stmts.next_id();
            let mut term = self.block(&terminal);
            // The terminal statement carries the loop's label.
            if let (Some(l), Some(first)) = (end_label, term.first()) {
                let st = &mut self.unit.stmts[*first];
                if st.label.is_none() && *first >= before {
                    st.label = Some(l);
                    let sp = st.span;
                    self.define_label(l, *first, sp);
                }
            }
            // With shared termination (`do 10 i / do 10 j / 10 stmt`) the
            // grammar gives the terminal statement to the outermost loop,
            // but it executes in the innermost one.
            match end_label {
                Some(l) => self.append_to_innermost(&mut body, l, term),
                None => body.append(&mut term),
            }
        }
        self.unit.stmts[id].kind = StmtKind::Do {
            name,
            control,
            body,
            end_label,
        };
        id
    }

    fn append_to_innermost(&mut self, body: &mut Vec<StmtId>, label: u32, mut term: Vec<StmtId>) {
        if let Some(&last) = body.last() {
            if let StmtKind::Do {
                end_label: Some(l),
                body: inner,
                ..
            } = &mut self.unit.stmts[last].kind
            {
                if *l == label {
                    let mut inner = std::mem::take(inner);
                    self.append_to_innermost(&mut inner, label, term);
                    if let StmtKind::Do { body: b, .. } = &mut self.unit.stmts[last].kind {
                        *b = inner;
                    }
                    return;
                }
            }
        }
        body.append(&mut term);
    }

    fn select_case(&mut self, n: FNode<'a>, label: Option<u32>) -> StmtId {
        let span = self.stmt_span(n);
        let id = self.push_stmt(label, span, StmtKind::Continue);
        let mut selector = Expr {
            kind: ExprKind::Error,
            span,
        };
        let mut cases = Vec::new();
        for k in named_children(n) {
            match k.kind() {
                "selector" => {
                    if let Some(e) = named_children(k).into_iter().next() {
                        selector = self.expr(e);
                    }
                }
                "case_statement" => {
                    let mut values = Vec::new();
                    let mut default = false;
                    let mut body_nodes = Vec::new();
                    for c in named_children(k) {
                        match c.kind() {
                            "default" => default = true,
                            "case_value_range_list" => {
                                for v in named_children(c) {
                                    if v.kind() == "extent_specifier" {
                                        let e = self.expr(v);
                                        if let ExprKind::Range { lo, hi, .. } = e.kind {
                                            values.push(CaseValue::Range(
                                                lo.map(|b| *b),
                                                hi.map(|b| *b),
                                            ));
                                        }
                                    } else if v.kind() != "comment" {
                                        let e = self.expr(v);
                                        values.push(CaseValue::Value(e));
                                    }
                                }
                            }
                            _ => body_nodes.push(c),
                        }
                    }
                    let body = self.block(&body_nodes);
                    cases.push(Case {
                        values,
                        default,
                        body,
                        span: self.stmt_span(k),
                    });
                }
                _ => {}
            }
        }
        self.unit.stmts[id].kind = StmtKind::SelectCase { selector, cases };
        id
    }

    fn keyword_statement(&mut self, n: FNode<'a>, label: Option<u32>) -> Option<StmtId> {
        let span = self.stmt_span(n);
        let kids = children(n);
        let first = kids
            .first()
            .map(|k| self.text(*k).to_ascii_lowercase())
            .unwrap_or_default();
        let named: Vec<FNode<'a>> = kids.iter().copied().filter(|k| k.is_named()).collect();
        let kind = match first.as_str() {
            "go" | "goto" => {
                let has_paren = kids.iter().any(|k| !k.is_named() && self.text(*k) == "(");
                let targets: Vec<u32> = named
                    .iter()
                    .filter(|k| k.kind() == "statement_label_reference")
                    .filter_map(|k| self.label_ref(*k))
                    .collect();
                if has_paren {
                    let index = named
                        .iter()
                        .rev()
                        .find(|k| k.kind() != "statement_label_reference")
                        .map(|k| self.expr(*k));
                    match index {
                        Some(index) => StmtKind::ComputedGoto { targets, index },
                        None => return Some(self.unsupported(label, n, "this GO TO form")),
                    }
                } else if let [target] = targets[..] {
                    StmtKind::Goto { target }
                } else {
                    return Some(self.unsupported(label, n, "assigned GO TO"));
                }
            }
            "continue" => StmtKind::Continue,
            "return" => {
                if !named.is_empty() {
                    return Some(self.unsupported(label, n, "alternate returns (`return n`)"));
                }
                StmtKind::Return
            }
            "exit" | "cycle" => {
                let construct = named
                    .iter()
                    .find(|k| k.kind() == "identifier")
                    .map(|k| self.lname(*k));
                if first == "exit" {
                    StmtKind::Exit { construct }
                } else {
                    StmtKind::Cycle { construct }
                }
            }
            "stop" => StmtKind::Stop,
            other => {
                let what = format!("the `{other}` statement");
                return Some(self.unsupported(label, n, &what));
            }
        };
        Some(self.push_stmt(label, span, kind))
    }
}
