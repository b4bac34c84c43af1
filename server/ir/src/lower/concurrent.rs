//! Lowering of DO CONCURRENT and FORALL into nested counted DO loops,
//! the mask into an IF inside them: a sequential order is one of the
//! orders DO CONCURRENT allows, and FORALL's "every right-hand side
//! before any assignment" is kept by one loop nest per assignment and by
//! refusing what the order would change (an assignment reading other
//! elements of the array it assigns, a mask reading what the body
//! assigns).
//!
//! Contract: index names (and DO CONCURRENT's `local`/`local_init`
//! variables) have the scope of the construct, so they are lowered as
//! fresh locals `dfort_<name>_` (the original variable keeps its value
//! after the construct, as the standard says; the trailing underscore
//! keeps them apart from the generators' temporaries such as `dfort_j`
//! or `dfort_k1`); `local_init` copies the
//! outer value at the start of each iteration. Every nest statement has
//! the construct's span; the first takes its label and name. What is not
//! supported becomes an `Unsupported` statement with a diagnostic.

use super::{named_children, UnitLowerer};
use crate::ir::*;
use dfort_syntax::flat::FNode;
use dfort_syntax::rules::UNSUPPORTED;

/// One index of a header: `i = lo:hi[:step]`, its fresh variable.
#[derive(Clone)]
struct Index {
    var: SymbolId,
    lo: Expr,
    hi: Expr,
    step: Option<Expr>,
}

/// Names renamed inside a construct, and what they meant before.
type Scope = Vec<(String, Option<SymbolId>)>;

impl<'f, 'a> UnitLowerer<'f, 'a> {
    /// `do concurrent (header) [locality]` with its body nodes; `id` is
    /// the reserved DO statement.
    pub(super) fn do_concurrent(
        &mut self,
        id: StmtId,
        name: Option<String>,
        stmt: FNode<'a>,
        body_nodes: &[FNode<'a>],
    ) -> StmtId {
        let span = self.unit.stmts[id].span;
        let mut scope = Scope::new();
        let mut controls = Vec::new();
        let mut mask_node = None;
        let mut inits: Vec<(SymbolId, SymbolId)> = Vec::new();
        for part in named_children(stmt) {
            match part.kind() {
                "concurrent_header" => {
                    for c in named_children(part) {
                        match c.kind() {
                            "concurrent_control" => controls.push(c),
                            "concurrent_mask" => mask_node = named_children(c).first().copied(),
                            _ => {}
                        }
                    }
                }
                "concurrent_locality" => {
                    let text = self.text(part).to_ascii_lowercase();
                    let keyword = text.split('(').next().unwrap_or("").trim().to_string();
                    let vars: Vec<FNode<'a>> = named_children(part)
                        .into_iter()
                        .filter(|v| v.kind() == "identifier")
                        .collect();
                    match keyword.as_str() {
                        "local" | "local_init" => {
                            for v in vars {
                                let vname = self.lname(v);
                                let Some(fresh) = self.fresh_local(&vname, &mut scope) else {
                                    return self.refuse_construct(
                                        id,
                                        scope,
                                        &format!("`{vname}` in LOCAL (an allocatable, pointer, dummy or global variable)"),
                                    );
                                };
                                if keyword == "local_init" {
                                    if let Some(Some(outer)) =
                                        scope.iter().find(|(n, _)| *n == vname).map(|(_, s)| *s)
                                    {
                                        inits.push((fresh, outer));
                                    }
                                }
                            }
                        }
                        "shared" | "default" => {}
                        other => {
                            let what = format!("`{other}` locality in DO CONCURRENT");
                            return self.refuse_construct(id, scope, &what);
                        }
                    }
                }
                _ => {}
            }
        }
        let indices = self.indices(&controls, &mut scope);
        let mask = mask_node.map(|m| self.expr(m));
        let mut body = self.block(body_nodes);
        if !inits.is_empty() {
            let copies: Vec<StmtId> = inits
                .iter()
                .map(|&(fresh, outer)| {
                    let var = |s| Expr {
                        kind: ExprKind::Var(s),
                        span,
                    };
                    self.push_stmt(
                        None,
                        span,
                        StmtKind::Assign {
                            lhs: var(fresh),
                            rhs: var(outer),
                        },
                    )
                })
                .collect();
            body.splice(0..0, copies);
        }
        self.end_scope(scope);
        let kind = self.nest(span, name, indices, mask, body);
        self.unit.stmts[id].kind = kind;
        id
    }

    /// A FORALL statement or construct: one loop nest per assignment, the
    /// first in statement `id`'s place, the others following it.
    pub(super) fn forall(&mut self, n: FNode<'a>, label: Option<u32>) -> StmtId {
        let span = self.stmt_span(n);
        let id = self.push_stmt(label, span, StmtKind::Continue);
        let mut scope = Scope::new();
        let mut controls = Vec::new();
        let mut mask_node = None;
        let mut body_nodes = Vec::new();
        let mut in_header = true;
        for c in named_children(n) {
            match c.kind() {
                "triplet_spec" => controls.push(c),
                "end_forall_statement" | "comment" => {}
                "assignment_statement" | "where_statement" | "forall_statement" => {
                    in_header = false;
                    body_nodes.push(c);
                }
                _ if in_header && mask_node.is_none() => mask_node = Some(c),
                _ => body_nodes.push(c),
            }
        }
        if body_nodes
            .iter()
            .any(|b| b.kind() != "assignment_statement")
        {
            return self.refuse_construct(id, scope, "FORALL holding other than assignments");
        }
        let indices = self.indices_of_triplets(&controls, &mut scope);
        let mask = mask_node.map(|m| self.expr(m));
        let body = self.block(&body_nodes);
        self.end_scope(scope);
        if let Some(why) = self.forall_order_changes(mask.as_ref(), &body) {
            return self.refuse_construct(id, Scope::new(), &why);
        }
        let mut first = true;
        for s in body {
            let nest = self.nest(span, None, indices.clone(), mask.clone(), vec![s]);
            if first {
                self.unit.stmts[id].kind = nest;
                first = false;
            } else {
                let next = self.push_stmt(None, span, nest);
                self.following.push(next);
            }
        }
        if first {
            self.unit.stmts[id].kind = StmtKind::Continue;
        }
        id
    }

    /// Why running a FORALL's assignments one loop nest each, in order,
    /// would not be the FORALL: an assignment reading elements of its
    /// target other than the one it assigns, or a mask reading what an
    /// assignment writes (unless it is the one assignment and reads only
    /// the element it assigns).
    fn forall_order_changes(&self, mask: Option<&Expr>, body: &[StmtId]) -> Option<String> {
        let unit = &self.unit;
        let print = |e: &Expr| crate::dump::expr(unit, e);
        // References to `array` that may be elements other iterations
        // assign: not `lhs` itself, nor elements a constant subscript
        // keeps apart from it; `any`: every reference counts.
        let refs_other = |e: &Expr, array: &str, lhs: &Expr, any: bool| {
            let mut other = false;
            e.walk(&mut |x| {
                if ref_name(unit, x).is_some_and(|n| n == array) {
                    other |= any || (print(x) != print(lhs) && !apart(x, lhs));
                }
            });
            other
        };
        for &s in body {
            let StmtKind::Assign { lhs, rhs } = &unit.stmts[s].kind else {
                continue;
            };
            let Some(array) = ref_name(unit, lhs) else {
                return Some("FORALL assigning other than a variable".into());
            };
            if refs_other(rhs, array, lhs, false) {
                return Some(format!(
                    "FORALL assigning `{array}` from other elements of it (the loop would read elements it has already assigned)"
                ));
            }
            if let Some(m) = mask {
                if refs_other(m, array, lhs, body.len() > 1) {
                    return Some(format!(
                        "FORALL whose mask reads `{array}`, which it assigns"
                    ));
                }
            }
        }
        None
    }

    /// The indices of a DO CONCURRENT header, renamed for the construct.
    fn indices(&mut self, controls: &[FNode<'a>], scope: &mut Scope) -> Vec<Index> {
        let mut parts = Vec::new();
        for &c in controls {
            let var = named_children(c)
                .into_iter()
                .find(|k| k.kind() == "identifier");
            let get = |f: &'static str| super::field(c, f);
            if let (Some(v), Some(lo), Some(hi)) = (var, get("initial"), get("final")) {
                parts.push((v, lo, hi, get("step")));
            }
        }
        self.rename_indices(parts, scope)
    }

    /// The indices of FORALL triplets `i = lo:hi[:step]`.
    fn indices_of_triplets(&mut self, controls: &[FNode<'a>], scope: &mut Scope) -> Vec<Index> {
        let mut parts = Vec::new();
        for &c in controls {
            let k = named_children(c);
            if let [v, lo, hi, rest @ ..] = k.as_slice() {
                parts.push((*v, *lo, *hi, rest.first().copied()));
            }
        }
        self.rename_indices(parts, scope)
    }

    /// Bounds are lowered before the indices are renamed (they may not
    /// name an index of the same header).
    fn rename_indices(
        &mut self,
        parts: Vec<(FNode<'a>, FNode<'a>, FNode<'a>, Option<FNode<'a>>)>,
        scope: &mut Scope,
    ) -> Vec<Index> {
        let bounds: Vec<(Expr, Expr, Option<Expr>)> = parts
            .iter()
            .map(|(_, lo, hi, st)| (self.expr(*lo), self.expr(*hi), st.map(|s| self.expr(s))))
            .collect();
        let mut out = Vec::new();
        for ((v, ..), (lo, hi, step)) in parts.into_iter().zip(bounds) {
            let name = self.lname(v);
            let var = self.fresh_index(&name, self.span(v), scope);
            out.push(Index { var, lo, hi, step });
        }
        out
    }

    /// A fresh integer `dfort_<name>_` standing for an index inside the
    /// construct.
    fn fresh_index(&mut self, name: &str, span: Span, scope: &mut Scope) -> SymbolId {
        let fresh = format!("dfort_{name}_");
        let ty = self
            .names
            .get(name)
            .map(|&s| self.unit.symbols[s].ty.clone())
            .filter(|t| t.base == BaseType::Integer)
            .unwrap_or_else(|| Type::new(BaseType::Integer, Some(4)));
        let id = match self.unit.symbols.iter().position(|s| s.name == fresh) {
            Some(i) => SymbolId(i as u32),
            None => self
                .unit
                .symbols
                .push(Symbol::local(fresh, ty, Typing::Declared, true, span)),
        };
        scope.push((name.to_string(), self.names.insert(name.to_string(), id)));
        id
    }

    /// A fresh local `dfort_<name>_` like variable `name` (same type and
    /// shape) for a LOCAL or LOCAL_INIT variable; `None` when `name` is
    /// not a plain local or dummy variable of the unit.
    fn fresh_local(&mut self, name: &str, scope: &mut Scope) -> Option<SymbolId> {
        let &outer = self.names.get(name)?;
        let sym = &self.unit.symbols[outer];
        if sym.attrs.allocatable || sym.attrs.pointer || sym.is_global() || sym.attrs.parameter {
            return None;
        }
        let fresh_name = format!("dfort_{name}_");
        let mut fresh = Symbol::local(
            fresh_name.clone(),
            sym.ty.clone(),
            Typing::Declared,
            true,
            sym.span,
        );
        fresh.dims = sym.dims.clone();
        let id = match self.unit.symbols.iter().position(|s| s.name == fresh_name) {
            Some(i) => SymbolId(i as u32),
            None => self.unit.symbols.push(fresh),
        };
        scope.push((name.to_string(), self.names.insert(name.to_string(), id)));
        Some(id)
    }

    /// `(items, i = start, end[, step])`: inside an array constructor the
    /// variable is renamed for the implied DO (its scope); in an I/O list
    /// it is the variable itself. Bounds are lowered outside the scope.
    pub(super) fn implied_do(&mut self, n: FNode<'a>) -> ExprKind {
        let kids = named_children(n);
        let control = kids
            .iter()
            .copied()
            .find(|c| c.kind() == "loop_control_expression");
        let parts: Vec<FNode<'a>> = control
            .map(named_children)
            .unwrap_or_default()
            .into_iter()
            .filter(|c| c.kind() != "comment")
            .collect();
        let Some((&v, bound_nodes)) = parts.split_first() else {
            return ExprKind::Error;
        };
        let bounds: Vec<Expr> = bound_nodes.iter().map(|b| self.expr(*b)).collect();
        let name = self.lname(v);
        let mut scope = Scope::new();
        let var = if self.ctor_depth > 0 {
            self.fresh_index(&name, self.span(v), &mut scope)
        } else {
            self.symbol(&name, self.span(v))
        };
        let items = kids
            .into_iter()
            .filter(|c| {
                !matches!(
                    c.kind(),
                    "loop_control_expression" | "intrinsic_type" | "comment"
                )
            })
            .map(|c| self.expr(c))
            .collect();
        self.end_scope(scope);
        ExprKind::ImpliedDo { items, var, bounds }
    }

    /// Gives the renamed names their meaning outside the construct back.
    fn end_scope(&mut self, scope: Scope) {
        for (name, before) in scope.into_iter().rev() {
            match before {
                Some(s) => self.names.insert(name, s),
                None => self.names.remove(&name),
            };
        }
    }

    /// `do i_1 …; do i_2 …; [if (mask) then] body` with the first index
    /// innermost (column-major arrays are walked in order).
    fn nest(
        &mut self,
        span: Span,
        name: Option<String>,
        indices: Vec<Index>,
        mask: Option<Expr>,
        body: Vec<StmtId>,
    ) -> StmtKind {
        let mut inner = match mask {
            Some(cond) => vec![self.push_stmt(
                None,
                span,
                StmtKind::If {
                    arms: vec![IfArm { cond, body, span }],
                    else_body: None,
                    one_line: false,
                },
            )],
            None => body,
        };
        let count = indices.len();
        for (k, ix) in indices.into_iter().enumerate() {
            let kind = StmtKind::Do {
                name: if k + 1 == count { name.clone() } else { None },
                control: DoControl::Counted {
                    var: ix.var,
                    start: Box::new(ix.lo),
                    end: Box::new(ix.hi),
                    step: ix.step.map(Box::new),
                },
                body: inner,
                end_label: None,
            };
            if k + 1 == count {
                return kind;
            }
            inner = vec![self.push_stmt(None, span, kind)];
        }
        StmtKind::Continue
    }

    /// Statement `id` becomes an unsupported `what`, reported.
    fn refuse_construct(&mut self, id: StmtId, scope: Scope, what: &str) -> StmtId {
        self.end_scope(scope);
        let span = self.unit.stmts[id].span;
        self.fx
            .report(&UNSUPPORTED, span, format!("dfort does not support {what}"));
        self.unit.stmts[id].kind = StmtKind::Unsupported {
            construct: what.to_string(),
        };
        id
    }
}

/// Whether two references to one array are apart whatever the indices:
/// in some dimension both subscripts are different integer constants.
fn apart(a: &Expr, b: &Expr) -> bool {
    let constants = |e: &Expr| -> Vec<Option<i64>> {
        let one = |x: &Expr| match x.kind {
            ExprKind::Int(v) => Some(v),
            _ => None,
        };
        match &e.kind {
            ExprKind::ArrayRef { subs, .. } => subs
                .iter()
                .map(|s| match s {
                    Subscript::Index(x) => one(x),
                    Subscript::Range { .. } => None,
                })
                .collect(),
            ExprKind::Apply { args, .. } => args.iter().map(|a| one(&a.value)).collect(),
            _ => Vec::new(),
        }
    };
    constants(a)
        .into_iter()
        .zip(constants(b))
        .any(|(x, y)| matches!((x, y), (Some(x), Some(y)) if x != y))
}

/// The name of the variable a reference names (an array reference not
/// resolved yet included).
fn ref_name<'u>(unit: &'u Unit, e: &'u Expr) -> Option<&'u str> {
    match &e.kind {
        ExprKind::Var(s) | ExprKind::ArrayRef { array: s, .. } => {
            unit.symbols.get(*s).map(|x| x.name.as_str())
        }
        ExprKind::Apply { name, .. } => Some(name),
        _ => None,
    }
}
