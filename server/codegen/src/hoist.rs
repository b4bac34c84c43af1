//! Canonicalisation (paper 004 §3): user-function references inside the
//! right-hand side of an assignment whose target carries a derivative are
//! hoisted into temporaries `dfort_f<n>`, innermost first, so that each
//! call is differentiated as a statement of its own (its derivative
//! routine is called) and the assignment sees a plain variable.
//!
//! Contract: returns a copy of the unit with the temporaries appended to
//! its symbols (existing symbol and statement ids are unchanged) and, per
//! statement, the hoisted calls in evaluation order. Only references to
//! functions dfort has the source of, with a scalar result, are hoisted.

use dfort_ir::*;
use std::collections::HashMap;

/// One hoisted reference: `temp = name(args)`.
#[derive(Clone, Debug)]
pub struct Hoisted {
    pub temp: SymbolId,
    pub callee: UnitId,
    pub name: String,
    pub args: Vec<Arg>,
    pub span: Span,
}

pub type HoistMap = HashMap<StmtId, Vec<Hoisted>>;

/// Hoists the function references of the assignments `wanted` accepts.
pub fn hoist(program: &Program, unit: &Unit, wanted: impl Fn(&Stmt) -> bool) -> (Unit, HoistMap) {
    let mut out = unit.clone();
    let mut map: HoistMap = HashMap::new();
    for i in 0..out.stmts.len() {
        if !wanted(&unit.stmts[i]) {
            continue;
        }
        let id = StmtId(i as u32);
        loop {
            let mut found: Option<(UnitId, String, Vec<Arg>, Span)> = None;
            let next = SymbolId(out.symbols.len() as u32);
            let StmtKind::Assign { rhs, .. } = &mut out.stmts[i].kind else {
                break;
            };
            rhs.walk_mut(&mut |x| {
                if found.is_some() {
                    return;
                }
                let ExprKind::FunctionCall {
                    name,
                    target: CallTarget::Unit(c),
                    args,
                } = &x.kind
                else {
                    return;
                };
                if !innermost(args) || !scalar_result(program, *c) {
                    return;
                }
                found = Some((*c, name.clone(), args.clone(), x.span));
                x.kind = ExprKind::Var(next);
            });
            let Some((callee, name, args, span)) = found else {
                break;
            };
            let cu = program.unit(callee);
            let Some(r) = cu.result else { break };
            let mut sym = cu.symbol(r).clone();
            sym.name = format!("dfort_f{}", next.0 as usize - unit.symbols.len() + 1);
            sym.storage = Storage::Local;
            sym.intent = None;
            sym.attrs = Attrs::default();
            sym.init = None;
            sym.span = span;
            sym.declared = true;
            out.symbols.push(sym);
            map.entry(id).or_default().push(Hoisted {
                temp: next,
                callee,
                name,
                args,
                span,
            });
        }
    }
    (out, map)
}

fn scalar_result(program: &Program, c: UnitId) -> bool {
    let u = program.unit(c);
    u.kind == UnitKind::Function && u.result.is_some_and(|r| u.symbol(r).rank() == 0)
}

/// Whether no argument holds another user-function reference.
fn innermost(args: &[Arg]) -> bool {
    let mut inner = false;
    for a in args {
        a.value.walk(&mut |x| {
            if matches!(
                x.kind,
                ExprKind::FunctionCall {
                    target: CallTarget::Unit(_),
                    ..
                }
            ) {
                inner = true;
            }
        });
    }
    !inner
}

/// The program with every statement-function reference replaced by the
/// function's body, its dummies replaced by the actual arguments (F77
/// statement functions are macros of their unit); statement and symbol
/// ids are unchanged.
pub fn inline_statement_functions(program: &Program) -> std::borrow::Cow<'_, Program> {
    if program.units.iter().all(|u| u.stmt_functions.is_empty()) {
        return std::borrow::Cow::Borrowed(program);
    }
    let mut out = program.clone();
    for u in &mut out.units {
        if u.stmt_functions.is_empty() {
            continue;
        }
        let u = std::sync::Arc::make_mut(u);
        // The definitions stay (for checks that look at them); nothing
        // references them any more.
        let sfs = u.stmt_functions.clone();
        let symbols = u.symbols.clone();
        for st in &mut u.stmts {
            for e in st.kind.exprs_mut() {
                // Nested references (a statement function using another)
                // unfold one level per round.
                for _round in 0..16 {
                    let mut changed = false;
                    e.walk_mut(&mut |x| {
                        let ExprKind::FunctionCall {
                            target: CallTarget::StatementFunction(i),
                            args,
                            ..
                        } = &x.kind
                        else {
                            return;
                        };
                        let Some(sf) = sfs.get(*i as usize) else {
                            return;
                        };
                        let mut body = sf.body.clone();
                        let actuals: Vec<Expr> = args.iter().map(|a| a.value.clone()).collect();
                        substitute(&mut body, &symbols, &sf.params, &actuals);
                        body.span = x.span;
                        *x = body;
                        changed = true;
                    });
                    if !changed {
                        break;
                    }
                }
            }
        }
    }
    std::borrow::Cow::Owned(out)
}

fn substitute(body: &mut Expr, symbols: &[Symbol], params: &[String], actuals: &[Expr]) {
    // Replace dummies in one pass over the original body, so that an
    // actual mentioning a dummy's name is not substituted again.
    fn go(e: &mut Expr, symbols: &[Symbol], params: &[String], actuals: &[Expr]) {
        if let ExprKind::Var(s) = &e.kind {
            let name = symbols.get(s.0 as usize).map(|s| s.name.as_str());
            if let Some(k) = params.iter().position(|p| Some(p.as_str()) == name) {
                if let Some(a) = actuals.get(k) {
                    let span = e.span;
                    *e = a.clone();
                    e.span = span;
                }
            }
            return;
        }
        match &mut e.kind {
            ExprKind::Unary { operand, .. } => go(operand, symbols, params, actuals),
            ExprKind::Binary { lhs, rhs, .. } => {
                go(lhs, symbols, params, actuals);
                go(rhs, symbols, params, actuals);
            }
            ExprKind::Intrinsic { args, .. } | ExprKind::FunctionCall { args, .. } => {
                for a in args {
                    go(&mut a.value, symbols, params, actuals);
                }
            }
            ExprKind::ArrayRef { subs, .. } => {
                for s in subs {
                    match s {
                        Subscript::Index(i) => go(i, symbols, params, actuals),
                        Subscript::Range { lo, hi, stride } => {
                            for x in [lo, hi, stride].into_iter().flatten() {
                                go(x, symbols, params, actuals);
                            }
                        }
                    }
                }
            }
            _ => {}
        }
    }
    go(body, symbols, params, actuals)
}
