//! Questions about the IR that need no analysis: what a symbol is (a
//! SAVE'd local, a module or host variable), the layout of a COMMON block,
//! the formal an actual binds to, the references a statement makes to
//! functions and the pointers it associates. The analyses, the generators
//! and the editor all ask them here; none is a dataflow result.

use crate::bitset::BitSet;
use crate::*;
use std::collections::BTreeMap;

/// Whether `s` is a SAVE'd local of a procedure (SAVE, a DATA statement
/// or an initialiser): state that outlives a call, a global that only the
/// procedure itself names.
pub fn saved_local(unit: &Unit, s: SymbolId) -> bool {
    is_saved_local(unit, unit.symbol(s))
}

/// [`saved_local`] of a symbol of `unit`.
pub fn is_saved_local(unit: &Unit, sym: &Symbol) -> bool {
    matches!(unit.kind, UnitKind::Subroutine | UnitKind::Function)
        && sym.storage == Storage::Local
        && (sym.attrs.save || sym.attrs.initialized)
        && !sym.attrs.parameter
}

/// The statements `ids` and every statement nested in them, in order.
pub fn nested_statements(unit: &Unit, ids: &[StmtId], out: &mut Vec<StmtId>) {
    for &id in ids {
        out.push(id);
        for b in unit.stmt(id).kind.blocks() {
            nested_statements(unit, b, out);
        }
    }
}

/// The units a statement calls or references as functions (with
/// repeats, in order).
pub fn called_units(kind: &StmtKind) -> Vec<UnitId> {
    let mut out = Vec::new();
    if let StmtKind::Call {
        target: CallTarget::Unit(c),
        ..
    } = kind
    {
        out.push(*c);
    }
    for e in kind.exprs() {
        e.walk(&mut |x| {
            if let ExprKind::FunctionCall {
                target: CallTarget::Unit(c),
                ..
            } = &x.kind
            {
                out.push(*c);
            }
        });
    }
    out
}

/// The names a DATA statement's text (`Unit::data`) mentions (lower case;
/// numbers and the letters of exponents and logical literals left out).
pub fn data_statement_names(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut after_digit_or_dot = false;
    for ch in line.chars().chain(std::iter::once(' ')) {
        if ch.is_ascii_alphanumeric() || ch == '_' {
            if word.is_empty() {
                after_digit_or_dot = ch.is_ascii_digit() || after_digit_or_dot;
            }
            word.push(ch.to_ascii_lowercase());
            continue;
        }
        if !word.is_empty() && !after_digit_or_dot && word != "data" {
            out.push(std::mem::take(&mut word));
        }
        word.clear();
        after_digit_or_dot = ch == '.';
    }
    out
}

/// A COMMON block as a unit declares it, for a unit that does not: its
/// members in order, each of a type and constant bounds another unit
/// can declare.
#[derive(Clone, Debug)]
pub struct CommonLayout {
    pub unit: UnitId,
    pub members: Vec<SymbolId>,
    /// Per member, its bounds as constants (lower, upper).
    pub bounds: Vec<Vec<(i64, i64)>>,
}

/// The name of member `index` of COMMON block `block` where
/// [`common_layout`] finds it declared.
pub fn common_member_name(program: &Program, block: &str, index: u32) -> Option<String> {
    let l = common_layout(program, block)?;
    let m = *l.members.get(index as usize)?;
    Some(program.unit(l.unit).symbol(m).name.clone())
}

/// The layout of COMMON block `block` from the first unit that declares
/// it with constant bounds (`None` when none does).
pub fn common_layout(program: &Program, block: &str) -> Option<CommonLayout> {
    program.all_units().find_map(|u| {
        let c = u.commons.iter().find(|c| c.name == block)?;
        let mut bounds = Vec::new();
        for &m in &c.members {
            let sym = u.symbol(m);
            if matches!(sym.ty.base, BaseType::None | BaseType::Derived) {
                return None;
            }
            let mut dims = Vec::new();
            for d in &sym.dims {
                let lo = match &d.lower {
                    Some(e) => crate::dp::constant_int(u, e, 0)?,
                    None => 1,
                };
                let hi = crate::dp::constant_int(u, d.upper.as_ref()?, 0)?;
                dims.push((lo, hi));
            }
            bounds.push(dims);
        }
        Some(CommonLayout {
            unit: u.id,
            members: c.members.clone(),
            bounds,
        })
    })
}

/// The formal position an actual binds to (keywords resolved).
pub fn formal_index(callee: &Unit, pos: usize, a: &Arg) -> Option<usize> {
    match &a.keyword {
        Some(k) => callee
            .args
            .iter()
            .position(|f| callee.symbol(*f).name == *k),
        None => Some(pos),
    }
}

/// The class of `s` in `unit`, when it has one.
pub fn class_of(unit: &Unit, s: SymbolId) -> Option<&[SymbolId]> {
    unit.aliases
        .iter()
        .find(|c| c.contains(&s))
        .map(|c| c.as_slice())
}

/// Whether `e` names variable `s` (whole, or an element, a section or a
/// component of it).
pub fn mentions(e: &Expr, s: SymbolId) -> bool {
    let mut found = false;
    e.walk(&mut |x| {
        found |= matches!(x.kind, ExprKind::Var(v) | ExprKind::ArrayRef { array: v, .. } if v == s)
    });
    found
}

/// The references to procedures dfort has the source of in `e`, in the
/// order they are evaluated (innermost first), with their arguments.
pub fn function_references(e: &Expr) -> Vec<(UnitId, &[Arg])> {
    function_reference_sites(e)
        .into_iter()
        .map(|(c, args, _)| (c, args))
        .collect()
}

/// [`function_references`] with where each reference is.
pub fn function_reference_sites(e: &Expr) -> Vec<(UnitId, &[Arg], Span)> {
    fn walk<'e>(e: &'e Expr, out: &mut Vec<(UnitId, &'e [Arg], Span)>) {
        for c in e.children() {
            walk(c, out);
        }
        if let ExprKind::FunctionCall {
            target: CallTarget::Unit(c),
            args,
            ..
        } = &e.kind
        {
            out.push((*c, args, e.span));
        }
    }
    let mut out = Vec::new();
    walk(e, &mut out);
    out
}

/// The module variable a symbol is (a module's own variable, or one used
/// or host-associated from a module), as (module, symbol in the module).
pub fn module_var(program: &Program, sym: &Symbol) -> Option<(UnitId, SymbolId)> {
    match sym.storage {
        Storage::Imported { from, symbol, .. } if program.unit(from).kind == UnitKind::Module => {
            Some((from, symbol))
        }
        _ => None,
    }
}

/// The host variable an internal procedure's symbol is, as (host
/// procedure, symbol in the host).
pub fn host_var(program: &Program, sym: &Symbol) -> Option<(UnitId, SymbolId)> {
    match sym.storage {
        Storage::Imported { from, symbol, .. } if program.unit(from).is_procedure() => {
            Some((from, symbol))
        }
        _ => None,
    }
}

/// Whether the data reference `e` carries a derivative by its type: a
/// component of a type without one (`p%id`) does not.
pub fn carries_ref(program: &Program, unit: &Unit, e: &Expr) -> bool {
    if !matches!(e.kind, ExprKind::Component { .. }) {
        return true;
    }
    match program.reference_type(unit, e) {
        Some((scope, ty)) => match ty.base {
            BaseType::Real | BaseType::Complex => true,
            BaseType::Derived => {
                program.derivative_type_of(scope, &ty) == Some(DerivativeType::Yes)
            }
            _ => false,
        },
        None => false,
    }
}

/// Whether a data reference names a pointer: a pointer variable, or a
/// component declared POINTER.
pub fn is_pointer_reference(program: &Program, unit: &Unit, e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Var(p) | ExprKind::ArrayRef { array: p, .. } => unit.symbol(*p).attrs.pointer,
        ExprKind::Component { .. } => program.component_def(unit, e).is_some_and(|c| c.pointer),
        _ => false,
    }
}

/// The pointer references whose association statement `st` of a
/// prepared unit changes and the adjoint saves before it (restoring it in
/// the reverse sweep, so that every pointer the reverse sweep reads
/// through is associated as it was at that point of the forward sweep):
/// the pointer of a pointer assignment, the objects of NULLIFY and the
/// pointer objects of ALLOCATE and DEALLOCATE, except local pointers that
/// nothing uses any more (every use read as its target).
pub fn recorded_associations<'s>(program: &Program, unit: &Unit, st: &'s Stmt) -> Vec<&'s Expr> {
    let objects: Vec<&Expr> = match &st.kind {
        StmtKind::PointerAssign { pointer, .. } => vec![pointer],
        StmtKind::Nullify { objects } => objects.iter().collect(),
        StmtKind::Allocate { objects, .. } => objects
            .iter()
            .filter(|o| is_pointer_reference(program, unit, o))
            .collect(),
        _ => return Vec::new(),
    };
    let used = used_pointers(unit);
    objects
        .into_iter()
        .filter(|o| match o.kind {
            ExprKind::Var(p) | ExprKind::ArrayRef { array: p, .. } => {
                used.contains_id(p) || unit.symbol(p).storage != Storage::Local
            }
            _ => true,
        })
        .collect()
}

/// The pointer variables something other than a pointer statement on the
/// pointer itself still refers to: a reference, a component, an actual
/// argument, `associated(p)`, an ALLOCATE or DEALLOCATE, the pointer side
/// of a component's association (`p%next => q`) or a target.
pub fn used_pointers(unit: &Unit) -> BitSet {
    let mut used = BitSet::new(unit.symbols.len());
    let mut note = |e: &Expr| {
        e.walk(&mut |x| {
            if let ExprKind::Var(s) | ExprKind::ArrayRef { array: s, .. } = x.kind {
                if unit.symbols.get(s).is_some_and(|sym| sym.attrs.pointer) {
                    used.insert_id(s);
                }
            }
        })
    };
    for st in &unit.stmts {
        match &st.kind {
            StmtKind::PointerAssign { pointer, target } => {
                if !matches!(pointer.kind, ExprKind::Var(_)) {
                    note(pointer);
                }
                note(target);
            }
            StmtKind::Nullify { objects } => {
                for o in objects
                    .iter()
                    .filter(|o| !matches!(o.kind, ExprKind::Var(_)))
                {
                    note(o);
                }
            }
            kind => {
                for e in kind.exprs() {
                    note(e);
                }
            }
        }
    }
    used
}

/// The rank of a data reference, its components' included (`ps%x` has the
/// rank of `ps`, `v%h` that of the component `h`).
pub fn reference_rank(program: &Program, unit: &Unit, e: &Expr) -> usize {
    let ranges = |subs: &[Subscript]| {
        subs.iter()
            .filter(|s| matches!(s, Subscript::Range { .. }))
            .count()
    };
    match &e.kind {
        ExprKind::Var(v) => unit.symbol(*v).rank(),
        ExprKind::ArrayRef { subs, .. } => ranges(subs),
        ExprKind::Component { base, subs, .. } => {
            reference_rank(program, unit, base)
                + if subs.is_empty() {
                    program.component_def(unit, e).map_or(0, |c| c.rank)
                } else {
                    ranges(subs)
                }
        }
        _ => 0,
    }
}

/// The rank of an expression's value (0 for scalars); a reference to a
/// function with source has its result's (seed 2026, case 142: `s *
/// f(v)` of an array-valued `f` taken as a scalar gave the adjoint of `s`
/// the rank of an array).
pub fn rank_of(program: &Program, unit: &Unit, e: &Expr) -> usize {
    match &e.kind {
        ExprKind::Var(s) => unit.symbol(*s).rank(),
        ExprKind::ArrayRef { subs, .. } => subs
            .iter()
            .filter(|s| matches!(s, Subscript::Range { .. }))
            .count(),
        // `ps%x` has the rank of `ps`, `v%h(:)` of its section (whole array
        // components are written as full sections,
        // the generators' derivative units).
        ExprKind::Component { base, subs, .. } => {
            rank_of(program, unit, base)
                + subs
                    .iter()
                    .filter(|s| matches!(s, Subscript::Range { .. }))
                    .count()
        }
        ExprKind::Unary { operand, .. } => rank_of(program, unit, operand),
        ExprKind::Binary { lhs, rhs, .. } => {
            rank_of(program, unit, lhs).max(rank_of(program, unit, rhs))
        }
        ExprKind::ArrayCtor(_) | ExprKind::ImpliedDo { .. } => 1,
        ExprKind::Intrinsic { name, args } => {
            let r = |i: usize| {
                args.get(i)
                    .map(|a| rank_of(program, unit, &a.value))
                    .unwrap_or(0)
            };
            // A reduction with DIM= (by keyword, or second by position
            // and not a mask) drops one rank.
            let dim = args.iter().enumerate().any(|(i, a)| match &a.keyword {
                Some(k) => k == "dim",
                None => i == 1 && rank_of(program, unit, &a.value) == 0,
            });
            match name.as_str() {
                "sum" | "product" | "maxval" | "minval" | "norm2" if dim => r(0).saturating_sub(1),
                "sum" | "product" | "maxval" | "minval" | "dot_product" | "size" | "norm2" => 0,
                "spread" => r(0) + 1,
                "pack" => 1,
                "unpack" => r(1),
                "reshape" => match args.get(1).map(|a| &a.value.kind) {
                    Some(ExprKind::ArrayCtor(items)) => items.len(),
                    Some(ExprKind::Intrinsic { name, args }) if name == "shape" => args
                        .first()
                        .map(|a| rank_of(program, unit, &a.value))
                        .unwrap_or(1),
                    _ => 1,
                },
                "transpose" => 2,
                // A scalar MOLD without SIZE= gives a scalar.
                "transfer" => usize::from(args.len() > 2 || r(1) > 0),
                "matmul" => (r(0) + r(1)).saturating_sub(2),
                _ => args
                    .iter()
                    .map(|a| rank_of(program, unit, &a.value))
                    .max()
                    .unwrap_or(0),
            }
        }
        ExprKind::FunctionCall {
            target: CallTarget::Unit(c),
            args,
            ..
        } => {
            let cu = program.unit(*c);
            match cu.result {
                Some(r) if cu.elemental => args
                    .iter()
                    .map(|a| rank_of(program, unit, &a.value))
                    .max()
                    .unwrap_or(0)
                    .max(cu.symbol(r).rank()),
                Some(r) => cu.symbol(r).rank(),
                None => 0,
            }
        }
        _ => 0,
    }
}

/// The actual bound to each formal of `callee`, in formal order.
pub fn in_formal_order<'e>(callee: &Unit, args: &'e [Arg]) -> Vec<Option<&'e Arg>> {
    let mut out = vec![None; callee.args.len()];
    for (pos, a) in args.iter().enumerate() {
        if let Some(k) = formal_index(callee, pos, a) {
            if let Some(slot) = out.get_mut(k) {
                *slot = Some(a);
            }
        }
    }
    out
}

/// Whether a unit may run statements more than once: it has a DO loop
/// or jumps (a GO TO may go back).
pub fn may_loop(u: &Unit) -> bool {
    !u.cfg.structured
        || u.stmts
            .iter()
            .any(|st| matches!(st.kind, StmtKind::Do { .. }))
}

/// How many loops (DO, DO WHILE, DO without control) hold each statement.
pub fn loop_depths(unit: &Unit) -> BTreeMap<StmtId, usize> {
    fn walk(unit: &Unit, ids: &[StmtId], depth: usize, out: &mut BTreeMap<StmtId, usize>) {
        for &id in ids {
            let Some(st) = unit.stmts.get(id) else {
                continue;
            };
            out.insert(id, depth);
            let inner = depth + usize::from(matches!(st.kind, StmtKind::Do { .. }));
            for b in st.kind.blocks() {
                walk(unit, b, inner, out);
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(unit, &unit.body, 0, &mut out);
    out
}

/// The rank of a data reference, its components' included (`ps%x` is 1,
/// `ps(i)%y` the rank of `y`); 0 for other expressions.
pub fn component_rank(program: &Program, unit: &Unit, e: &Expr) -> usize {
    match &e.kind {
        ExprKind::Var(_) | ExprKind::ArrayRef { .. } => rank_of(program, unit, e),
        ExprKind::Component { base, .. } => {
            component_rank(program, unit, base) + program.component_rank(unit, e).unwrap_or(0)
        }
        _ => 0,
    }
}

/// Why an assignment to a derived-type data reference with a derivative
/// is not differentiated (`None` when it is): the target must be one
/// value (not an array of them), and the value a data reference when
/// derivatives flow into it (`active`).
pub fn unsupported_assignment(
    program: &Program,
    unit: &Unit,
    lhs: &Expr,
    rhs: &Expr,
    active: bool,
) -> Option<String> {
    if component_rank(program, unit, lhs) > 0 {
        return Some(format!(
            "`{}` is an array of derived type assigned whole; its derivative is not generated yet (assign it element by element)",
            crate::dump::expr(unit, lhs)
        ));
    }
    if has_pointer_components(program, unit, lhs) {
        return Some(format!(
            "`{}` is assigned a whole value of a type with pointer components; its derivative is not generated yet (assign the components)",
            crate::dump::expr(unit, lhs)
        ));
    }
    let reference = matches!(
        rhs.kind,
        ExprKind::Var(_) | ExprKind::ArrayRef { .. } | ExprKind::Component { .. }
    );
    if active && !(reference && component_rank(program, unit, rhs) == 0) {
        return Some(format!(
            "`{}` is assigned a derived-type value that is not a variable or an element (`{}`); its derivative is not generated yet",
            crate::dump::expr(unit, lhs),
            crate::dump::expr(unit, rhs)
        ));
    }
    None
}

/// Whether the data reference `e` is of a derived type with pointer
/// components ([`type_has_pointer_components`]).
fn has_pointer_components(program: &Program, unit: &Unit, e: &Expr) -> bool {
    program
        .reference_type(unit, e)
        .is_some_and(|(scope, ty)| type_has_pointer_components(program, scope, &ty))
}

/// Whether values of type `ty` (seen from `unit`) hold pointer
/// components, at any depth of their other components.
pub fn type_has_pointer_components(program: &Program, unit: &Unit, ty: &Type) -> bool {
    fn walk(program: &Program, unit: &Unit, ty: &Type, depth: u32) -> bool {
        let Some((owner, def)) = program.type_of(unit, ty) else {
            return false;
        };
        depth < 16
            && def
                .components
                .iter()
                .any(|c| c.pointer || walk(program, program.unit(owner), &c.ty, depth + 1))
    }
    walk(program, unit, ty, 0)
}
