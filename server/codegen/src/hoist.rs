//! Canonicalisation (paper 004 §3): user-function references inside the
//! right-hand side of an assignment whose target carries a derivative are
//! hoisted into temporaries `dfort_f<n>`, innermost first, so that each
//! call is differentiated as a statement of its own (its derivative
//! routine is called) and the assignment sees a plain variable.
//!
//! Contract: returns a copy of the unit with the temporaries appended to
//! its symbols (existing symbol and statement ids are unchanged) and, per
//! statement, the hoisted calls in evaluation order. Only references to
//! functions dfort has the source of, with a scalar result, applied to
//! arguments of their dummies' ranks (not element by element), are
//! hoisted.

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
    for id in out.stmts.indices() {
        if !wanted(&unit.stmts[id]) {
            continue;
        }
        loop {
            let mut found: Option<(UnitId, String, Vec<Arg>, Span)> = None;
            let next = out.symbols.next_id();
            let StmtKind::Assign { rhs, .. } = &mut out.stmts[id].kind else {
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
                if !innermost(args)
                    || !scalar_result(program, *c)
                    || elemental_use(program, unit, *c, args)
                {
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
            sym.name = format!("dfort_f{}", next.index() - unit.symbols.len() + 1);
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

/// Whether a reference applies function `c` element by element: an array
/// actual where the dummy is a scalar. It is not hoisted (its temporary
/// would be an array); the generators refuse it when it is active.
fn elemental_use(program: &Program, unit: &Unit, c: UnitId, args: &[Arg]) -> bool {
    let cu = program.unit(c);
    args.iter().enumerate().any(|(i, a)| {
        let dummy = match &a.keyword {
            Some(k) => cu.args.iter().find(|d| cu.symbol(**d).name == *k),
            None => cu.args.get(i),
        };
        // Temporaries hoisted already (scalars) are not in `unit`.
        let mut value = a.value.clone();
        value.walk_mut(&mut |x| {
            if matches!(x.kind, ExprKind::Var(v) if v.index() >= unit.symbols.len()) {
                x.kind = ExprKind::Int(0);
            }
        });
        crate::partials::rank_of(unit, &value) > 0
            && dummy.is_some_and(|d| cu.symbol(*d).rank() == 0)
    })
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
