//! What the tangent and the adjoint share about calls to procedures that
//! have derivative routines: the argument list of `c_d` / `c_b` (every
//! actual in the callee's formal order, followed by its derivative when
//! the formal has one), and the module a derivative routine lives in.

use crate::Reason;
use dfort_ir::dump::expr as print;
use dfort_ir::*;
use dfort_syntax::rules::{self, DerivativeActual};
use std::collections::HashMap;

pub use dfort_ir::queries::in_formal_order;

/// What to pass as the derivative of one actual.
pub enum DerivActual<'e> {
    /// A variable reference's derivative (`xb`, `xb(i)`, `xb(1:n)`).
    Ref(String),
    /// A scalar expression passed by value: a temporary of the formal's
    /// type (the formal is the second field).
    Value(&'e Expr, SymbolId),
}

/// One actual of a call to a derivative routine: the primal actual as
/// written, its derivative if the formal has one, and the keywords both
/// are passed with once an absent optional argument came before them.
pub type DerivativeArg<'e> = (String, Option<DerivActual<'e>>, Option<Keywords>);

/// The formal names an actual and its derivative are passed to.
#[derive(Clone, Debug)]
pub struct Keywords {
    pub primal: String,
    pub derivative: Option<String>,
}

impl Keywords {
    /// `formal=actual` for the primal.
    pub fn primal(k: &Option<Keywords>, actual: String) -> String {
        match k {
            Some(k) => format!("{}={actual}", k.primal),
            None => actual,
        }
    }
    /// `dformal=actual` for the derivative.
    pub fn derivative(k: &Option<Keywords>, actual: String) -> String {
        match k.as_ref().and_then(|k| k.derivative.as_ref()) {
            Some(d) => format!("{d}={actual}"),
            None => actual,
        }
    }
}

/// The argument list of `callee_<sfx>(...)`, or why it cannot be written.
/// `deriv` names the derivative of a variable reference of the caller. An
/// absent optional argument's derivative is absent too (the derivative
/// routine declares it optional); what follows is passed by keyword.
pub fn derivative_args<'e>(
    program: &Program,
    unit: &Unit,
    callee: &Unit,
    callee_d: &HashMap<SymbolId, String>,
    args: &'e [Arg],
    deriv: impl Fn(&Expr) -> Option<String>,
) -> Result<Vec<DerivativeArg<'e>>, Reason> {
    let mut out = Vec::new();
    let mut by_keyword = false;
    for (k, a) in in_formal_order(callee, args).into_iter().enumerate() {
        let f = callee.args[k];
        let Some(a) = a else {
            by_keyword = true;
            continue;
        };
        let keywords = by_keyword.then(|| Keywords {
            primal: callee.symbol(f).name.clone(),
            derivative: callee_d.get(&f).cloned(),
        });
        let primal = print(unit, &a.value);
        if !callee_d.contains_key(&f) {
            out.push((primal, None, keywords));
            continue;
        }
        // An array for a scalar formal (an elemental function applied to
        // arrays) is passed by reference only: its derivative has no
        // scalar temporary.
        let elementwise =
            callee.symbol(f).rank() == 0 && crate::partials::rank_of(program, unit, &a.value) > 0;
        let formal = &callee.symbol(f).name;
        let refused =
            |why| -> Reason { rules::derivative_actual(why, &primal, &callee.name, formal).into() };
        let d = match &a.value.kind {
            _ if elementwise && deriv(&a.value).is_none() => {
                return Err(refused(DerivativeActual::ElementalWithout))
            }
            ExprKind::Var(_) | ExprKind::ArrayRef { .. } => match deriv(&a.value) {
                Some(r) => DerivActual::Ref(r),
                None if callee.symbol(f).rank() == 0 => DerivActual::Value(&a.value, f),
                None => return Err(refused(DerivativeActual::ArrayWithout)),
            },
            _ if callee.symbol(f).rank() == 0 => DerivActual::Value(&a.value, f),
            _ => return Err(refused(DerivativeActual::ArrayExpression)),
        };
        out.push((primal, Some(d), keywords));
    }
    Ok(out)
}

/// The module a unit's derivative routine goes into (`<m>_b` for a module
/// procedure of `m`); `None` for external procedures and for internal
/// ones, whose derivatives are internal to their host's.
pub fn host_module(program: &Program, unit: &Unit) -> Option<String> {
    unit.parent
        .map(|p| program.unit(p))
        .filter(|h| h.kind == UnitKind::Module)
        .map(|h| h.name.clone())
}

/// The module a unit is inside: its host, or its host's host for an
/// internal procedure of a module procedure (whose derivative is inside
/// the derivative module too, and sees it by host association).
pub fn enclosing_module(program: &Program, unit: &Unit) -> Option<String> {
    let mut at = unit.parent.map(|p| program.unit(p));
    while let Some(h) = at {
        if h.kind == UnitKind::Module {
            return Some(h.name.clone());
        }
        at = h.parent.map(|p| program.unit(p));
    }
    None
}

/// The host procedure of an internal procedure.
pub fn host_procedure(program: &Program, unit: &Unit) -> Option<UnitId> {
    unit.parent.filter(|p| program.unit(*p).is_procedure())
}

/// The Fortran type of a function's result (`real(8)` when unknown).
pub fn result_type(callee: &Unit) -> String {
    callee
        .result
        .map(|r| dfort_ir::dump::type_name(&callee.symbol(r).ty))
        .unwrap_or_else(|| "real(8)".into())
}

/// What both modes need to write a call to the derivative routine of `c`.
pub struct Prepared<'e> {
    /// The derivative module to `use` (another module's procedure).
    pub module: Option<String>,
    /// The callee's derivative names.
    pub names: HashMap<SymbolId, String>,
    /// The actuals in formal order, each with its derivative if any.
    pub args: Vec<DerivativeArg<'e>>,
}

/// Prepares a call from `unit` (whose derivative routine lives in module
/// `own`) to the derivative (`suffix` 'd' or 'b') of `c`.
#[allow(clippy::too_many_arguments)]
pub fn prepare<'e>(
    program: &Program,
    diff: &crate::names::DiffSet,
    unit: &Unit,
    own: Option<&String>,
    c: UnitId,
    args: &'e [Arg],
    suffix: char,
    deriv: impl Fn(&Expr) -> Option<String>,
) -> Result<Prepared<'e>, Vec<Reason>> {
    let cu = program.unit(c);
    let inside = enclosing_module(program, unit);
    let module = host_module(program, cu).filter(|m| Some(m) != own && Some(m) != inside.as_ref());
    let names = diff.names(program, cu, suffix);
    let args = derivative_args(program, unit, cu, &names, args, deriv).map_err(|m| vec![m])?;
    Ok(Prepared {
        module,
        names,
        args,
    })
}

/// Whether a routine can call itself (directly or not): it is RECURSIVE,
/// and so is its derivative, which calls its own derivative.
pub fn is_recursive(program: &Program, unit: &Unit) -> bool {
    unit.recursive
        || program
            .call_graph
            .recursive
            .get(unit.id)
            .copied()
            .unwrap_or(false)
}
