//! Canonicalisation (paper 004 §3): user-function references inside the
//! right-hand side of an assignment whose target carries a derivative are
//! hoisted into temporaries `dfort_f<n>`, innermost first, so that each
//! call is differentiated as a statement of its own (its derivative
//! routine is called) and the assignment sees a plain variable.
//!
//! Contract: returns a copy of the unit with the temporaries appended to
//! its symbols (existing symbol and statement ids are unchanged) and, per
//! statement, the hoisted calls in evaluation order. Only references to
//! functions dfort has the source of, applied to arguments of their
//! dummies' ranks (not element by element), are hoisted; an array-valued
//! one only when its result's bounds are expressions of its arguments the
//! unit never changes (the temporary is allocatable and is allocated to
//! those bounds, [`Hoisted::shape`], before the derivative routine is
//! called or its adjoint accumulated).

use crate::dump::expr as print;
use crate::*;
use std::collections::HashMap;

/// One hoisted reference: `temp = name(args)`.
#[derive(Clone, Debug)]
pub struct Hoisted {
    pub temp: SymbolId,
    pub callee: UnitId,
    pub name: String,
    pub args: Vec<Arg>,
    pub span: Span,
    /// The bounds (lower, upper) of an array-valued result in the unit's
    /// terms; empty for a scalar result.
    pub shape: Bounds,
    /// An ELEMENTAL function applied element by element (under a WHERE
    /// the original evaluates it only where the mask holds).
    pub elementwise: bool,
}

/// Bounds (lower, upper) per dimension.
pub type Bounds = Vec<(Expr, Expr)>;

/// A reference found to hoist: callee, name, actuals, range, result
/// bounds, element by element.
type Found = (UnitId, String, Vec<Arg>, Span, Bounds, bool);

/// Whether the references `hoisted` out of one assignment inside WHERE
/// construct `construct` may be evaluated before the construct (the
/// tangent writes them there): none applies an elemental function (the
/// original evaluates those only under the mask), and their actuals read
/// nothing the construct assigns. A non-elemental function is evaluated
/// whole in a WHERE anyway (Fortran 2008, 7.2.3.2).
pub fn before_where(unit: &Unit, construct: StmtId, hoisted: &[Hoisted]) -> bool {
    let mut assigned = Vec::new();
    let mut todo = vec![construct];
    while let Some(s) = todo.pop() {
        let st = unit.stmt(s);
        if let StmtKind::Assign { lhs, .. } = &st.kind {
            if let Some((t, _)) = crate::dp::target(lhs) {
                assigned.push(t);
            }
        }
        for b in st.kind.blocks() {
            todo.extend(b.iter().copied());
        }
    }
    hoisted.iter().all(|h| {
        let mut reads_assigned = false;
        for a in &h.args {
            a.value.walk(&mut |x| {
                if let ExprKind::Var(v) | ExprKind::ArrayRef { array: v, .. } = x.kind {
                    reads_assigned |= assigned.contains(&v);
                }
            });
        }
        !h.elementwise && !reads_assigned
    })
}

impl Hoisted {
    /// `allocate(t(l:u, ...))` for the array temporary named `t`, after
    /// releasing what it held (no lines for a scalar result).
    pub fn allocation(&self, unit: &Unit, t: &str) -> Vec<String> {
        if self.shape.is_empty() {
            return Vec::new();
        }
        let bounds: Vec<String> = self
            .shape
            .iter()
            .map(|(l, u)| format!("{}:{}", print(unit, l), print(unit, u)))
            .collect();
        vec![
            format!("if (allocated({t})) deallocate({t})"),
            format!("allocate({t}({}))", bounds.join(", ")),
        ]
    }
}

pub type HoistMap = HashMap<StmtId, Vec<Hoisted>>;

/// Whether the derivative code runs the function references of `st` as
/// statements of their own (hoists them): an assignment whose target
/// has a derivative (`has_d`), or one referencing a function `runs`
/// accepts (it writes something with a derivative, or in the adjoint
/// changes an argument or a global: what it overwrites is saved around
/// it, as around a CALL). The generators and the analyses' refusals ask
/// it here.
pub fn runs_references(
    st: &Stmt,
    has_d: impl Fn(SymbolId) -> bool,
    runs: impl Fn(UnitId) -> bool,
) -> bool {
    match &st.kind {
        StmtKind::Assign { lhs, rhs } => {
            crate::dp::target(lhs).is_some_and(|(t, _)| has_d(t))
                || crate::queries::function_references(rhs)
                    .iter()
                    .any(|(c, _)| runs(*c))
        }
        _ => false,
    }
}

/// Hoists the function references of the assignments `wanted` accepts.
pub fn hoist(program: &Program, unit: &Unit, wanted: impl Fn(&Stmt) -> bool) -> (Unit, HoistMap) {
    let mut out = unit.clone();
    let mut map: HoistMap = HashMap::new();
    // The ranks of the temporaries, in order.
    let mut ranks: Vec<usize> = Vec::new();
    for id in out.stmts.indices() {
        if !wanted(&unit.stmts[id]) {
            continue;
        }
        loop {
            let mut found: Option<Found> = None;
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
                if !innermost(args) {
                    return;
                }
                let elementwise = elemental_use(program, unit, &ranks, *c, args);
                let shape = match elementwise {
                    Some(true) => elemental_shape(program, unit, &ranks, *c, args),
                    Some(false) => result_shape(program, unit, *c, args),
                    None => None,
                };
                let Some(shape) = shape else {
                    return;
                };
                found = Some((
                    *c,
                    name.clone(),
                    args.clone(),
                    x.span,
                    shape,
                    elementwise == Some(true),
                ));
                x.kind = ExprKind::Var(next);
            });
            let Some((callee, name, args, span, shape, elementwise)) = found else {
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
            if !shape.is_empty() {
                sym.attrs.allocatable = true;
                sym.dims = vec![
                    Dim {
                        kind: DimKind::Deferred,
                        lower: None,
                        upper: None,
                    };
                    shape.len()
                ];
            }
            ranks.push(shape.len());
            out.symbols.push(sym);
            map.entry(id).or_default().push(Hoisted {
                temp: next,
                callee,
                name,
                args,
                span,
                shape,
                elementwise,
            });
        }
    }
    (out, map)
}

/// The bounds of function `c`'s result referenced with `args`, in
/// `unit`'s terms: empty for a scalar; `None` when it is not a function,
/// or a bound is not an expression of its arguments and constants that
/// `unit` never changes.
fn result_shape(program: &Program, unit: &Unit, c: UnitId, args: &[Arg]) -> Option<Bounds> {
    let cu = program.unit(c);
    if cu.kind != UnitKind::Function {
        return None;
    }
    let r = cu.symbol(cu.result?);
    let actuals = crate::queries::in_formal_order(cu, args);
    let mut shape = Vec::new();
    for d in &r.dims {
        if d.kind != DimKind::Explicit {
            return None;
        }
        let one = Expr {
            kind: ExprKind::Int(1),
            span: r.span,
        };
        let lower = d.lower.as_deref().unwrap_or(&one);
        let upper = d.upper.as_ref()?;
        shape.push((
            in_caller(cu, lower, &actuals, unit)?,
            in_caller(cu, upper, &actuals, unit)?,
        ));
    }
    Some(shape)
}

/// The intrinsics a result's bound may use.
const BOUND_INTRINSICS: &[&str] = &["size", "lbound", "ubound", "min", "max", "abs", "mod"];

/// Bound `e` of a function's result with each dummy replaced by its actual
/// (`size(v)` becomes `size(x)`) and each named constant by its value;
/// `None` when it reads anything else, or an actual's variable `unit` may
/// change (an array only its bounds are taken of may be changed: they
/// stay).
fn in_caller(cu: &Unit, e: &Expr, actuals: &[Option<&Arg>], unit: &Unit) -> Option<Expr> {
    // Dummies become markers first (ids no unit has), then their actuals:
    // the callee's ids are never looked up in the caller's expressions.
    const MARK: u32 = u32::MAX - 4096;
    let mut out = e.clone();
    let mut ok = true;
    out.walk_mut(&mut |x| {
        let v = match &x.kind {
            ExprKind::Var(v) => *v,
            ExprKind::Int(_) | ExprKind::Unary { .. } | ExprKind::Binary { .. } => return,
            ExprKind::Intrinsic { name, .. } if BOUND_INTRINSICS.contains(&name.as_str()) => return,
            _ => {
                ok = false;
                return;
            }
        };
        let s = cu.symbol(v);
        if let Some(k) = cu.args.iter().position(|a| *a == v) {
            x.kind = ExprKind::Var(SymbolId(MARK + k as u32));
        } else if s.attrs.parameter
            && matches!(s.init.as_ref().map(|i| &i.kind), Some(ExprKind::Int(_)))
        {
            x.kind = s
                .init
                .as_ref()
                .map(|i| i.kind.clone())
                .unwrap_or(ExprKind::Error);
        } else {
            ok = false;
        }
    });
    if !ok {
        return None;
    }
    out.walk_mut(&mut |x| {
        let ExprKind::Var(SymbolId(m)) = x.kind else {
            return;
        };
        if m < MARK {
            return;
        }
        match actuals.get((m - MARK) as usize).copied().flatten() {
            Some(a) => *x = a.value.clone(),
            None => ok = false,
        }
    });
    (ok && unchanged(unit, &out)).then_some(out)
}

/// Whether no statement of `unit` may change a variable `e` reads other
/// than through an inquiry of its bounds (`size(x)`): an assignment, a DO
/// index, a READ item or a CALL actual.
fn unchanged(unit: &Unit, e: &Expr) -> bool {
    let mut read = Vec::new();
    e.walk(&mut |x| {
        if let ExprKind::Var(v) | ExprKind::ArrayRef { array: v, .. } = x.kind {
            read.push(v);
        }
    });
    // The arrays inside an inquiry (`size(x(2:n))`, `size(0.5*v)`) give
    // only their bounds, which stay when they are not allocatable: a
    // temporary hoisted before (past the unit's symbols) included.
    let bounds_of = |x: &Expr| -> Vec<SymbolId> {
        let mut vs = Vec::new();
        x.walk(&mut |y| {
            let ExprKind::Intrinsic { name, args } = &y.kind else {
                return;
            };
            if !matches!(name.as_str(), "size" | "lbound" | "ubound") {
                return;
            }
            let Some(a) = args.first() else { return };
            a.value.walk(&mut |z| {
                if let ExprKind::Var(v) | ExprKind::ArrayRef { array: v, .. } = &z.kind {
                    let fixed = unit
                        .symbols
                        .get(*v)
                        .is_none_or(|s| s.rank() > 0 && !s.attrs.allocatable && !s.attrs.pointer);
                    if fixed {
                        vs.push(*v);
                    }
                }
            });
        });
        vs
    };
    let inquired = bounds_of(e);
    read.retain(|v| !inquired.contains(v));
    read.iter().all(|v| {
        let Some(s) = unit.symbols.get(*v) else {
            return false;
        };
        let fixed = s.intent == Some(Intent::In) || unit.stmts.iter().all(|st| !may_write(st, *v));
        !s.attrs.pointer && matches!(s.storage, Storage::Local | Storage::Dummy(_)) && fixed
    })
}

/// Whether statement `st` may change variable `v`.
fn may_write(st: &Stmt, v: SymbolId) -> bool {
    let is_v = |e: &Expr| crate::dp::target(e).is_some_and(|(t, _)| t == v);
    match &st.kind {
        StmtKind::Assign { lhs, .. } => is_v(lhs),
        StmtKind::Do {
            control: DoControl::Counted { var, .. },
            ..
        } => *var == v,
        StmtKind::Io { writes, .. } => writes.iter().any(is_v),
        StmtKind::Call { args, .. } => args.iter().any(|a| is_v(&a.value)),
        _ => false,
    }
}

/// The bounds of the result of ELEMENTAL function `c` applied element
/// by element with `args`: those of its first array actual
/// (`1:size(x(2:n), 1)`), when they do not change in `unit`; `None` for
/// a function that is not elemental.
fn elemental_shape(
    program: &Program,
    unit: &Unit,
    ranks: &[usize],
    c: UnitId,
    args: &[Arg],
) -> Option<Bounds> {
    if !program.unit(c).elemental {
        return None;
    }
    let (value, rank) = args.iter().find_map(|a| {
        let r = arg_rank(program, unit, ranks, &a.value)?;
        (r > 0).then_some((&a.value, r))
    })?;
    let at = |kind| Expr {
        kind,
        span: value.span,
    };
    let shape: Bounds = (1..=rank)
        .map(|k| {
            let size = at(ExprKind::Intrinsic {
                name: "size".into(),
                args: vec![
                    Arg {
                        keyword: None,
                        value: value.clone(),
                    },
                    Arg {
                        keyword: None,
                        value: at(ExprKind::Int(k as i64)),
                    },
                ],
            });
            (at(ExprKind::Int(1)), size)
        })
        .collect();
    shape
        .iter()
        .all(|(_, u)| unchanged(unit, u))
        .then_some(shape)
}

/// The rank of actual `e`, where the temporaries hoisted before are past
/// `unit`'s symbols with `ranks`: `None` when an array temporary is part
/// of a larger expression.
fn arg_rank(program: &Program, unit: &Unit, ranks: &[usize], e: &Expr) -> Option<usize> {
    let temp_rank = |v: SymbolId| {
        v.index()
            .checked_sub(unit.symbols.len())
            .map(|k| ranks.get(k).copied().unwrap_or(0))
    };
    if let ExprKind::Var(v) = e.kind {
        if let Some(r) = temp_rank(v) {
            return Some(r);
        }
    }
    let mut value = e.clone();
    let mut array_temp = false;
    value.walk_mut(&mut |x| {
        if let ExprKind::Var(v) = x.kind {
            if let Some(r) = temp_rank(v) {
                array_temp |= r > 0;
                x.kind = ExprKind::Int(0);
            }
        }
    });
    (!array_temp).then(|| crate::queries::rank_of(program, unit, &value))
}

/// The references in `rhs` to a unit for which `must_hoist` holds,
/// each with the refusal [`side_effects_not_hoisted`]: left in the
/// expression they would run as the original.
pub fn unhoisted_references(
    rhs: &Expr,
    must_hoist: impl Fn(UnitId) -> bool,
) -> Vec<(Span, String)> {
    let mut found = Vec::new();
    rhs.walk(&mut |x| {
        if let ExprKind::FunctionCall {
            name,
            target: CallTarget::Unit(c),
            ..
        } = &x.kind
        {
            if must_hoist(*c) {
                found.push((x.span, side_effects_not_hoisted(name)));
            }
        }
    });
    found
}

/// The refusal of a reference to `name`, a function that changes an
/// argument or a global (or reads a global whose derivative flows
/// through it), that could not be hoisted (a function reference or an
/// array temporary in its actuals): run inside the expression, what it
/// changes or reads would escape the derivative code.
fn side_effects_not_hoisted(name: &str) -> String {
    format!("`{name}` changes an argument or a global, or reads a global, so the derivative code must run it as a statement of its own, and this reference cannot be taken out of its expression (assign its value to a variable in a statement of its own, with its arguments computed before)")
}

/// Why an active reference to function `name` (`target`, with `args`)
/// was not hoisted, for the generators' refusal.
pub fn not_hoisted(
    program: &Program,
    unit: &Unit,
    name: &str,
    target: &CallTarget,
    args: &[Arg],
) -> String {
    let CallTarget::Unit(c) = target else {
        return format!("the active reference to `{name}` cannot be differentiated: dfort does not have the source of `{name}`");
    };
    if elemental_use(program, unit, &[], *c, args) != Some(false) {
        if !program.unit(*c).elemental {
            return format!(
                "`{name}` is applied element by element to an array but is not declared ELEMENTAL"
            );
        }
        return format!("`{name}` is applied element by element to an array whose bounds this routine may change: the derivative's result cannot be allocated here");
    }
    if !innermost(args) {
        return format!("the active reference to `{name}` cannot be differentiated: a function reference in its arguments could not be taken out of the expression first");
    }
    format!("the result of `{name}` has bounds that are not expressions of its arguments this routine leaves unchanged, so its derivative's result cannot be allocated here")
}

/// Whether a reference applies function `c` element by element: an array
/// actual where the dummy is a scalar (`None`: unknown, an array
/// temporary inside an actual expression). Only an ELEMENTAL function's
/// is hoisted ([`elemental_shape`]); the generators refuse the others
/// when they are active.
fn elemental_use(
    program: &Program,
    unit: &Unit,
    ranks: &[usize],
    c: UnitId,
    args: &[Arg],
) -> Option<bool> {
    let cu = program.unit(c);
    let mut any = false;
    for (i, a) in args.iter().enumerate() {
        let dummy = match &a.keyword {
            Some(k) => cu.args.iter().find(|d| cu.symbol(**d).name == *k),
            None => cu.args.get(i),
        };
        // Temporaries hoisted already are not in `unit`.
        let rank = arg_rank(program, unit, ranks, &a.value)?;
        any |= rank > 0 && dummy.is_some_and(|d| cu.symbol(*d).rank() == 0);
    }
    Some(any)
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

/// Why a user function referenced in a masked assignment is refused: its
/// call would have to be hoisted out of the WHERE, where the original
/// evaluates it element by element under the mask.
pub const USER_FUNCTION_IN_WHERE: &str =
    "user function references inside WHERE are not differentiated yet";

/// Whether `e` references a user function (one dfort has the source of).
pub fn references_user_function(e: &Expr) -> bool {
    let mut found = false;
    e.walk(&mut |x| {
        found |= matches!(
            x.kind,
            ExprKind::FunctionCall {
                target: CallTarget::Unit(_),
                ..
            }
        )
    });
    found
}
