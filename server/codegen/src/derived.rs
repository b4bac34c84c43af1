//! Derivative types, Tapenade's convention: a derived type `t` whose
//! values carry derivatives ([`dfort_ir::Program::derivative_type`]) gets
//! the type `t_d` (tangent) or `t_b` (adjoint), defined in the derivative
//! module `<m>_d` / `<m>_b` of the module `m` that defines `t`. It holds
//! the real and complex components of `t` under their own names (so that
//! `p%x`'s derivative is `pb%x`), and components of derived types as
//! their derivative types; every component starts at zero, so `t_b()` is
//! the zero of the type.
//!
//! Contract: the generators declare a derived variable's derivative with
//! [`derivative_type`], zero it with [`zero`], add the adjoint of one
//! derived value to another leaf by leaf ([`leaves`]), and save derived
//! values with the `dfort_push` / `dfort_pop` specifics that
//! [`tape_procedures`] adds to the derivative modules (a value without
//! pointer components as one record of tape words, others component by
//! component; every component, passive ones included).

use crate::names::DiffSet;
use dfort_ir::*;
use std::collections::BTreeMap;

/// `t<suffix>`, the name of `t`'s derivative type.
pub fn type_name(name: &str, suffix: &str) -> String {
    format!("{name}{suffix}")
}

/// The definition a derived type (as `unit` spells it) refers to, with
/// the unit (a module, for types with derivative types) defining it.
fn defined<'a>(program: &'a Program, unit: &Unit, ty: &Type) -> Option<(&'a Unit, &'a TypeDef)> {
    let (owner, def) = program.type_of(unit, ty)?;
    Some((program.unit(owner), def))
}

/// The type of a derivative of a value of type `ty` (seen from `unit`):
/// `ty` itself unless it is derived.
pub fn derivative_type(program: &Program, unit: &Unit, ty: &Type, suffix: &str) -> Type {
    let mut out = ty.clone();
    if let Some((_, def)) = defined(program, unit, ty) {
        out.derived = Some(type_name(&def.name, suffix));
    }
    out
}

/// The zero of a derivative of the data reference `e` (`0.0d0`, or the
/// derivative type's constructor with its default, zero, components).
pub fn zero(program: &Program, unit: &Unit, e: &Expr, suffix: &str) -> String {
    match program.reference_type(unit, e) {
        Some((scope, ty)) => zero_of(program, scope, &ty, suffix),
        None => "0.0d0".into(),
    }
}

/// The zero of a derivative of a value of type `ty`.
pub fn zero_of(program: &Program, unit: &Unit, ty: &Type, suffix: &str) -> String {
    match defined(program, unit, ty) {
        Some((_, def)) => format!("{}()", type_name(&def.name, suffix)),
        None => "0.0d0".into(),
    }
}

/// Whether the data reference `e` is of a derived type.
pub fn is_derived(program: &Program, unit: &Unit, e: &Expr) -> bool {
    program
        .reference_type(unit, e)
        .is_some_and(|(_, t)| t.base == BaseType::Derived)
}

/// The component paths (`%x`, `%c%y`) of a derived type's values that
/// carry derivatives, depth first in declaration order.
pub fn leaves(program: &Program, unit: &Unit, ty: &Type) -> Vec<String> {
    let mut out = Vec::new();
    if let Some((owner, def)) = defined(program, unit, ty) {
        // A pointer component's derivative is its target's, reached
        // through the derivative pointer: not a leaf of the value.
        for c in def.components.iter().filter(|c| !c.pointer) {
            match c.ty.base {
                BaseType::Real | BaseType::Complex => out.push(format!("%{}", c.name)),
                BaseType::Derived
                    if program.derivative_type_of(owner, &c.ty) == Some(DerivativeType::Yes) =>
                {
                    for l in leaves(program, owner, &c.ty) {
                        out.push(format!("%{}{l}", c.name));
                    }
                }
                _ => {}
            }
        }
    }
    out
}

/// The modules whose derivative modules a routine of `unit` uses for its
/// derived variables: for the derivative types of those with a
/// derivative (`names`), and in the adjoint (`tape`) for the `dfort_push`
/// and `dfort_pop` of every type [`tape_types`] holds; `own`, the
/// routine's module, excepted.
pub fn modules_of(
    program: &Program,
    unit: &Unit,
    names: &std::collections::HashMap<SymbolId, String>,
    own: Option<&String>,
    tape: bool,
) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for (s, sym) in unit.symbols.iter_enumerated() {
        let Some((m, _)) = defined(program, unit, &sym.ty) else {
            continue;
        };
        let carried = names.contains_key(&s)
            && program.derivative_type_of(unit, &sym.ty) == Some(DerivativeType::Yes);
        let saved = tape && dfort_ir::runtime::tapeable_type(program, unit, &sym.ty);
        if (carried || saved) && Some(&m.name) != own && !out.contains(&m.name) {
            out.push(m.name.clone());
        }
    }
    out.sort();
    out
}

/// The derived types whose values the adjoints of `diff` may save: the
/// tapeable types ([`dfort_ir::runtime::tapeable_type`]) of the
/// variables of its units, with their components' types first.
pub fn tape_types(program: &Program, diff: &DiffSet) -> Vec<(UnitId, String)> {
    let mut order: Vec<(UnitId, String)> = Vec::new();
    fn add(program: &Program, unit: &Unit, ty: &Type, order: &mut Vec<(UnitId, String)>, d: u32) {
        if d > 16 || !dfort_ir::runtime::tapeable_type(program, unit, ty) {
            return;
        }
        let Some((owner, def)) = program.type_of(unit, ty) else {
            return;
        };
        if order.iter().any(|(o, n)| *o == owner && *n == def.name) {
            return;
        }
        for c in def.components.iter().filter(|c| !c.pointer) {
            add(program, program.unit(owner), &c.ty, order, d + 1);
        }
        order.push((owner, def.name.clone()));
        for c in def.components.iter().filter(|c| c.pointer) {
            add(program, program.unit(owner), &c.ty, order, d + 1);
        }
    }
    for &u in &diff.units {
        let unit = program.unit(u);
        for sym in unit.symbols.iter() {
            add(program, unit, &sym.ty, &mut order, 0);
        }
    }
    order
}

/// `dfort_push` and `dfort_pop` for the types of [`tape_types`], per
/// module: the lines that extend the runtime's generic interfaces, and
/// the procedures: one block of tape words for a record type
/// ([`is_record`]); otherwise component by component for one value,
/// element by element for arrays up to rank 3, pops in the reverse order.
pub fn tape_procedures(
    program: &Program,
    diff: &DiffSet,
) -> BTreeMap<String, (Vec<String>, String)> {
    let mut out: BTreeMap<String, (Vec<String>, String)> = BTreeMap::new();
    for (owner, name) in tape_types(program, diff) {
        let unit = program.unit(owner);
        let Some(def) = unit.types.iter().find(|t| t.name == name) else {
            continue;
        };
        let (decls, text) = out.entry(unit.name.clone()).or_default();
        let specific = |op: &str, r: usize| {
            if r == 0 {
                format!("dfort_{op}_{name}")
            } else {
                format!("dfort_{op}_{name}_{r}")
            }
        };
        for op in ["push", "pop"] {
            let all: Vec<String> = (0..=3).map(|r| specific(op, r)).collect();
            decls.push(format!("interface dfort_{op}"));
            decls.push(format!("  module procedure {}", all.join(", ")));
            decls.push("end interface".into());
        }
        if is_record(program, owner, def, 0) {
            text.push_str(&record_procedures(&name, &specific));
            continue;
        }
        for op in ["push", "pop"] {
            let intent = if op == "push" { "in" } else { "inout" };
            // One value: its components (in reverse for the pop); a
            // pointer component's association.
            let mut comps: Vec<(&str, bool)> = def
                .components
                .iter()
                .map(|c| (c.name.as_str(), c.pointer))
                .collect();
            if op == "pop" {
                comps.reverse();
            }
            text.push_str(&format!(
                "  subroutine {}(v)
",
                specific(op, 0)
            ));
            text.push_str(&format!(
                "    type({name}), intent({intent}) :: v
"
            ));
            for (c, pointer) in comps {
                let generic = if pointer {
                    format!("{op}_pointer")
                } else {
                    op.to_string()
                };
                text.push_str(&format!(
                    "    call dfort_{generic}(v%{c})
"
                ));
            }
            text.push_str(&format!(
                "  end subroutine {}
",
                specific(op, 0)
            ));
            for r in 1..=3usize {
                let colons = vec![":"; r].join(", ");
                let idx: Vec<String> = (1..=r).map(|k| format!("i{k}")).collect();
                text.push_str(&format!(
                    "  subroutine {}(v)
",
                    specific(op, r)
                ));
                text.push_str(&format!(
                    "    type({name}), intent({intent}) :: v({colons})
"
                ));
                text.push_str(&format!(
                    "    integer :: {}
",
                    idx.join(", ")
                ));
                // Column-major order; the pop walks it backwards.
                for k in (1..=r).rev() {
                    let indent = "  ".repeat(2 + r - k);
                    if op == "push" {
                        text.push_str(&format!(
                            "{indent}do i{k} = 1, size(v, {k})
"
                        ));
                    } else {
                        text.push_str(&format!(
                            "{indent}do i{k} = size(v, {k}), 1, -1
"
                        ));
                    }
                }
                let indent = "  ".repeat(2 + r);
                text.push_str(&format!(
                    "{indent}call dfort_{op}(v({}))
",
                    idx.join(", ")
                ));
                for k in 1..=r {
                    let indent = "  ".repeat(2 + r - k);
                    text.push_str(&format!(
                        "{indent}end do
"
                    ));
                }
                text.push_str(&format!(
                    "  end subroutine {}
",
                    specific(op, r)
                ));
            }
        }
    }
    out
}

/// Whether a value of the tapeable type `def` (defined in `owner`) is
/// its bits alone: no pointer component at any depth (tapeable types
/// have no allocatable or character component), so the tape can hold it
/// as one record.
fn is_record(program: &Program, owner: UnitId, def: &TypeDef, depth: u32) -> bool {
    depth <= 16
        && def.components.iter().all(|c| {
            !c.pointer
                && (c.ty.base != BaseType::Derived
                    || program
                        .type_of(program.unit(owner), &c.ty)
                        .is_some_and(|(o, d)| is_record(program, o, d, depth + 1)))
        })
}

/// `dfort_push` / `dfort_pop` of a record type ([`is_record`]): one value
/// or a whole array (ranks 1 to 3, made contiguous by the dummy's
/// attribute) is copied to or from the tape as one block of bytes
/// (`storage_size`), one runtime call each.
fn record_procedures(name: &str, specific: &dyn Fn(&str, usize) -> String) -> String {
    let mut text = String::new();
    for r in 0..=3usize {
        let (dims, attrs, bytes) = if r == 0 {
            (
                String::new(),
                "target",
                "storage_size(v, kind=8)/8".to_string(),
            )
        } else {
            (
                format!("({})", vec![":"; r].join(", ")),
                "target, contiguous",
                "storage_size(v, kind=8)/8*size(v, kind=8)".to_string(),
            )
        };
        for (op, intent) in [("push", "in"), ("pop", "inout")] {
            let sub = specific(op, r);
            text.push_str(&format!(
                "  subroutine {sub}(v)\n    use, intrinsic :: iso_c_binding, only: c_loc\n    \
                 type({name}), intent({intent}), {attrs} :: v{dims}\n"
            ));
            let call = format!("call dfort_{op}_record(c_loc(v), {bytes})");
            if r == 0 {
                text.push_str(&format!("    {call}\n"));
            } else {
                text.push_str(&format!("    if (size(v) > 0) {call}\n"));
            }
            text.push_str(&format!("  end subroutine {sub}\n"));
        }
    }
    text
}

/// The derived types some pointer of the derivative set's units points
/// to (a pointer variable, or a pointer component of a type their
/// variables hold, at any depth), each with its defining module.
fn pointed_types(program: &Program, diff: &DiffSet) -> Vec<(UnitId, String)> {
    let mut seen: Vec<(UnitId, String)> = Vec::new();
    let mut pointed: Vec<(UnitId, String)> = Vec::new();
    fn walk(
        program: &Program,
        unit: &Unit,
        ty: &Type,
        pointer: bool,
        seen: &mut Vec<(UnitId, String)>,
        pointed: &mut Vec<(UnitId, String)>,
    ) {
        let Some((owner, def)) = program.type_of(unit, ty) else {
            return;
        };
        let key = (owner, def.name.clone());
        if pointer && !pointed.contains(&key) {
            pointed.push(key.clone());
        }
        if seen.contains(&key) {
            return;
        }
        seen.push(key);
        for c in &def.components {
            walk(
                program,
                program.unit(owner),
                &c.ty,
                c.pointer,
                seen,
                pointed,
            );
        }
    }
    for &u in &diff.units {
        let unit = program.unit(u);
        for sym in unit.symbols.iter() {
            walk(
                program,
                unit,
                &sym.ty,
                sym.attrs.pointer,
                &mut seen,
                &mut pointed,
            );
        }
    }
    pointed
}

/// `dfort_push_pointer` and `dfort_pop_pointer` for the derived types
/// pointers point to ([`pointed_types`]) and their derivative types, per
/// defining module: each type's associations on a stack of its own (the
/// runtime's stacks hold intrinsic types), with a mark on the tape.
pub fn pointer_tape_procedures(
    program: &Program,
    diff: &DiffSet,
    suffix: &str,
) -> BTreeMap<String, (Vec<String>, String)> {
    let mut out: BTreeMap<String, (Vec<String>, String)> = BTreeMap::new();
    let defined = defined_types(program, diff);
    for (owner, name) in pointed_types(program, diff) {
        let unit = program.unit(owner);
        if !unit.types.iter().any(|t| t.name == name) {
            continue;
        }
        let mut types = vec![name.clone()];
        if defined.contains(&(owner, name.clone())) {
            types.push(type_name(&name, suffix));
        }
        let (decls, text) = out.entry(unit.name.clone()).or_default();
        for t in types {
            let tag = format!("{}_{t}", unit.name);
            decls.push(format!("type dfort_ptr_{tag}"));
            decls.push(format!("  type({t}), pointer :: p => null()"));
            decls.push(format!("end type dfort_ptr_{tag}"));
            decls.push(format!(
                "type(dfort_ptr_{tag}), allocatable, save :: dfort_ptape_{tag}(:)"
            ));
            decls.push(format!("integer, save :: dfort_ptop_{tag} = 0"));
            decls.push("interface dfort_push_pointer".into());
            decls.push(format!("  module procedure dfort_pushp_{tag}"));
            decls.push("end interface".into());
            decls.push("interface dfort_pop_pointer".into());
            decls.push(format!("  module procedure dfort_popp_{tag}"));
            decls.push("end interface".into());
            text.push_str(&format!(
                "  subroutine dfort_pushp_{tag}(p)
    type({t}), pointer, intent(in) :: p
    type(dfort_ptr_{tag}), allocatable :: bigger(:)
    if (.not. allocated(dfort_ptape_{tag})) allocate(dfort_ptape_{tag}(64))
    if (dfort_ptop_{tag} == size(dfort_ptape_{tag})) then
      allocate(bigger(2*size(dfort_ptape_{tag})))
      bigger(1:dfort_ptop_{tag}) = dfort_ptape_{tag}(1:dfort_ptop_{tag})
      call move_alloc(bigger, dfort_ptape_{tag})
    end if
    dfort_ptop_{tag} = dfort_ptop_{tag} + 1
    dfort_ptape_{tag}(dfort_ptop_{tag})%p => p
    call dfort_stack_mark()
  end subroutine dfort_pushp_{tag}
  subroutine dfort_popp_{tag}(p)
    type({t}), pointer, intent(inout) :: p
    call dfort_stack_unmark()
    if (dfort_ptop_{tag} < 1) error stop 'dfort_pop_pointer: no association to restore'
    p => dfort_ptape_{tag}(dfort_ptop_{tag})%p
    nullify(dfort_ptape_{tag}(dfort_ptop_{tag})%p)
    dfort_ptop_{tag} = dfort_ptop_{tag} - 1
  end subroutine dfort_popp_{tag}
"
            ));
        }
    }
    out
}

/// The definitions of the derivative types the derivative set needs
/// (its variables' types and their components' types), per defining
/// module, each type after those of its components.
pub fn definitions(
    program: &Program,
    diff: &DiffSet,
    suffix: &str,
) -> BTreeMap<String, Vec<String>> {
    let order = defined_types(program, diff);
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (owner, name) in order {
        let unit = program.unit(owner);
        let Some(def) = unit.types.iter().find(|t| t.name == name) else {
            continue;
        };
        let lines = out.entry(unit.name.clone()).or_default();
        lines.push(format!("type {}", type_name(&def.name, suffix)));
        if def.sequence {
            lines.push("  sequence".into());
        }
        for c in &def.components {
            let carried = match c.ty.base {
                BaseType::Real | BaseType::Complex => true,
                BaseType::Derived => {
                    program.derivative_type_of(unit, &c.ty) == Some(DerivativeType::Yes)
                }
                _ => false,
            };
            if !carried {
                continue;
            }
            let ty = derivative_type(program, unit, &c.ty, suffix);
            let (attr, init) = if c.pointer {
                (", pointer", " => null()")
            } else if c.ty.base == BaseType::Derived {
                ("", "")
            } else {
                ("", " = 0.0d0")
            };
            lines.push(format!(
                "  {}{attr} :: {}{}{init}",
                dfort_ir::dump::type_name(&ty),
                c.name,
                c.dims
            ));
        }
        lines.push(format!("end type {}", type_name(&def.name, suffix)));
    }
    out
}

/// The types whose derivative types the derivative set defines (those
/// of its variables with derivatives and their components'), each after
/// its components' (but pointer components').
fn defined_types(program: &Program, diff: &DiffSet) -> Vec<(UnitId, String)> {
    let mut order: Vec<(UnitId, String)> = Vec::new();
    for &u in &diff.units {
        let unit = program.unit(u);
        for s in diff.with_d[u].ids() {
            if let Some(sym) = unit.symbols.get(s) {
                need(program, unit, &sym.ty, &mut order, 0);
            }
        }
    }
    for &(m, s) in &diff.module_vars {
        let unit = program.unit(m);
        need(program, unit, &unit.symbol(s).ty, &mut order, 0);
    }
    order
}

/// Adds the derivative types `ty` needs (its components' first, except
/// those of pointer components, which may come later) to `order`.
fn need(program: &Program, unit: &Unit, ty: &Type, order: &mut Vec<(UnitId, String)>, depth: u32) {
    if depth > 16 {
        return;
    }
    let Some((owner, def)) = program.type_of(unit, ty) else {
        return;
    };
    if program.derivative_type(owner, def) != DerivativeType::Yes
        || order.iter().any(|(o, n)| *o == owner && *n == def.name)
    {
        return;
    }
    let owner_unit = program.unit(owner);
    for c in def.components.iter().filter(|c| !c.pointer) {
        need(program, owner_unit, &c.ty, order, depth + 1);
    }
    order.push((owner, def.name.clone()));
    for c in def.components.iter().filter(|c| c.pointer) {
        need(program, owner_unit, &c.ty, order, depth + 1);
    }
}

pub use dfort_ir::queries::carries_ref;

pub use dfort_ir::queries::{component_rank, type_has_pointer_components, unsupported_assignment};
