//! Linking (phase 2 of lowering): puts the units of all files into one
//! [`Program`], resolves USE statements to modules, gives every symbol that
//! was not declared in its unit its meaning (host or use association,
//! implicit typing, or an `undeclared` error under IMPLICIT NONE), decides
//! whether each `name(args)` is an array reference, an intrinsic, a user
//! function or an external one, binds CALLs to units, and builds the call
//! graph.

use crate::callgraph::CallGraph;
use crate::idx::IdVec;
use crate::intrinsic_modules::{is_intrinsic_module, named_constant, ConstantValue};
use crate::intrinsics::is_intrinsic_function;
use crate::ir::*;
use crate::lower::decl::const_int_in;
use crate::lower::expr::subscript;
use crate::lower::LoweredFile;
use dfort_syntax::rules::{ARGUMENT_COUNT, INTRINSIC_ARGUMENTS, UNDECLARED, UNKNOWN_MODULE};
use dfort_syntax::Diagnostic;
use rayon::prelude::*;
use std::collections::HashMap;
use std::sync::Arc;

use crate::Units;

pub fn link(lowered: Vec<LoweredFile>) -> (Program, Vec<(FileId, Diagnostic)>) {
    let mut diags: Vec<(FileId, Diagnostic)> = Vec::new();
    let mut units: IdVec<UnitId, Arc<Unit>> = IdVec::new();
    // Where each lowered file's units start, and module procedures lowered
    // apart from their module: (procedure, module) pairs to join.
    let mut bases: Vec<u32> = Vec::with_capacity(lowered.len());
    let mut adopt: Vec<(UnitId, usize)> = Vec::new();
    for lf in lowered {
        let base = units.len() as u32;
        bases.push(base);
        for d in lf.diagnostics {
            diags.push((lf.file, d));
        }
        for mut u in lf.units {
            renumber(&mut u, base);
            if u.parent.is_none() {
                if let Some(k) = lf.contained_in {
                    adopt.push((u.id, k));
                }
            }
            units.push(Arc::new(u));
        }
    }
    for (child, k) in adopt {
        let Some(&base) = bases.get(k) else {
            continue;
        };
        let Some(file) = units.get(UnitId(base)).map(|u| u.span.file) else {
            continue;
        };
        let module = units
            .iter()
            .skip(base as usize)
            .take_while(|u| u.span.file == file)
            .find(|u| u.kind == UnitKind::Module && u.parent.is_none())
            .map(|u| u.id);
        if let Some(m) = module {
            if m != child {
                Arc::make_mut(&mut units[child]).parent = Some(m);
                Arc::make_mut(&mut units[m]).children.push(child);
            }
        }
    }
    let mut units: Units = units.into_vec().into_iter().collect();
    let all: Vec<UnitId> = units.indices().collect();
    let names = Arc::new(NameIndex::new(&units));
    resolve(&mut units, &names, &all, &mut diags);
    finish(units, names, diags, None)
}

/// Links again after some files changed, reusing every other unit of
/// `previous` as it is. `replaced` gives each changed file's lowering with
/// the id of its first unit.
///
/// Contract: the caller guarantees that nothing other units' linking reads
/// changed — `previous` was linked from the same files in the same order
/// except the replaced ones, whose units are neither modules nor hosts of
/// internal procedures and have the same names, kinds and nesting (and so
/// the same ids) as before. Then the result equals [`link`] of the new
/// files. The diagnostics returned are the replaced units' own and every
/// `argument-count` warning (the others belong to unchanged units).
pub fn relink(
    previous: &Program,
    replaced: Vec<(UnitId, LoweredFile)>,
) -> (Program, Vec<(FileId, Diagnostic)>) {
    let mut units = previous.units.clone();
    let mut diags: Vec<(FileId, Diagnostic)> = Vec::new();
    let mut fresh: Vec<UnitId> = Vec::new();
    for (base, lf) in replaced {
        for d in lf.diagnostics {
            diags.push((lf.file, d));
        }
        for mut u in lf.units {
            renumber(&mut u, base.0);
            let i = u.id;
            let Some(slot) = units.get_mut(i) else {
                continue;
            };
            // A module procedure keeps the module that adopted it.
            if u.parent.is_none() {
                u.parent = slot.parent;
            }
            *slot = Arc::new(u);
            fresh.push(i);
        }
    }
    // The same names, kinds and nesting: the same index.
    let names = previous.names.clone();
    resolve(&mut units, &names, &fresh, &mut diags);
    finish(units, names, diags, Some(previous))
}

/// Unit ids of a lowered file made program-wide: its units start at `base`.
fn renumber(u: &mut Unit, base: u32) {
    u.id = UnitId(u.id.0 + base);
    u.parent = u.parent.map(|p| UnitId(p.0 + base));
    for c in &mut u.children {
        c.0 += base;
    }
}

/// Resolves the units at `which` (USE targets, symbols, references)
/// against all of `units`.
fn resolve(
    units: &mut Units,
    index: &NameIndex,
    which: &[UnitId],
    diags: &mut Vec<(FileId, Diagnostic)>,
) {
    // USE → module units.
    for &i in which {
        let u = Arc::make_mut(&mut units[i]);
        for us in &mut u.uses {
            us.target = index.modules.get(&us.module).copied();
            if us.target.is_none() && !is_intrinsic_module(&us.module) {
                diags.push((
                    us.span.file,
                    Diagnostic::new(
                        &UNKNOWN_MODULE,
                        us.span.range,
                        format!(
                            "module `{}` is not among the files given to dfort; names from it are not checked",
                            us.module
                        ),
                    ),
                ));
            }
        }
    }
    // Symbols: modules first (their users copy types from them), then
    // every other unit; within each round units are resolved in parallel.
    for modules in [true, false] {
        let updates: Vec<(UnitId, SymbolUpdates)> = which
            .par_iter()
            .copied()
            .filter(|&i| (units[i].kind == UnitKind::Module) == modules)
            .map(|i| (i, resolve_symbols(units, i)))
            .collect();
        for (i, (changes, d)) in updates {
            diags.extend(d);
            if changes.is_empty() {
                continue;
            }
            let u = Arc::make_mut(&mut units[i]);
            for (id, sym) in changes {
                u.symbols.set(id, sym);
            }
        }
    }
    // Component kinds named by constants (`real(dp) :: x` in a type).
    let mut kinds: Vec<(UnitId, usize, usize, u32)> = Vec::new();
    for &i in which {
        let u = &units[i];
        for (t, def) in u.types.iter().enumerate() {
            for (c, comp) in def.components.iter().enumerate() {
                if comp.ty.kind.is_some() {
                    continue;
                }
                let Some(kt) = comp.ty.kind_text.as_deref() else {
                    continue;
                };
                if let Some(k) = kind_from_name(units, u, kt) {
                    kinds.push((i, t, c, k));
                }
            }
        }
    }
    for (i, t, c, k) in kinds {
        Arc::make_mut(&mut units[i]).types[t].components[c].ty.kind = Some(k);
    }
    // Names applied to arguments, and CALL targets.
    let found: Vec<(UnitId, ReferencePlan)> = which
        .par_iter()
        .map(|&i| (i, resolve_references(units, index, i)))
        .collect();
    if found.len() < 64 {
        // A relink's few units (the parallel pass below visits all).
        for (i, plan) in found {
            apply_references(Arc::make_mut(&mut units[i]), plan);
        }
    } else {
        let mut plans: IdVec<UnitId, Option<ReferencePlan>> = units.iter().map(|_| None).collect();
        for (i, plan) in found {
            plans[i] = Some(plan);
        }
        // Out of the shared chunks, so that each unit is written in place.
        let mut all: Vec<Arc<Unit>> = units.iter().cloned().collect();
        *units = Units::default();
        all.par_iter_mut()
            .zip(plans.into_vec())
            .for_each(|(u, plan)| {
                if let Some(plan) = plan {
                    apply_references(Arc::make_mut(u), plan);
                }
            });
        *units = all.into_iter().collect();
    }
    // Calls of generic names, once every unit's references are resolved.
    let generic: Vec<(UnitId, _)> = which
        .par_iter()
        .map(|&i| (i, crate::generics::visible(units, &index.globals, i)))
        .filter(|(_, g)| !g.is_empty())
        .collect();
    for (i, g) in generic {
        let mut u = (*units[i]).clone();
        crate::generics::resolve_calls(units, &mut u, &g);
        units[i] = Arc::new(u);
    }
}

/// The call graph, its argument-count warnings, and the program.
fn finish(
    units: Units,
    names: Arc<NameIndex>,
    mut diags: Vec<(FileId, Diagnostic)>,
    previous: Option<&Program>,
) -> (Program, Vec<(FileId, Diagnostic)>) {
    let call_graph = CallGraph::build_reusing(&units, previous.map(|p| (&p.units, &*p.call_graph)));
    // The overfull sites only (the call graph keeps them listed).
    for site in call_graph.overfull.iter().map(|&i| &call_graph.sites[i]) {
        if let crate::callgraph::Callee::Unit(id) = site.callee {
            diags.push((
                site.span.file,
                Diagnostic::new(
                    &ARGUMENT_COUNT,
                    site.span.range,
                    format!(
                        "`{}` is given {} arguments but takes {}",
                        units[id].name,
                        site.bindings.len(),
                        site.callee_args
                    ),
                ),
            ));
        }
    }
    // A unit a relink kept as it was (the same `Arc`) has the
    // `intrinsic-arguments` errors it had: they are the caller's.
    // (Found among the chunks the two tables do not share.)
    let changed = previous.and_then(|p| units.ids_unlike(&p.units, Arc::ptr_eq));
    match changed {
        Some(changed) => changed
            .into_iter()
            .for_each(|u| intrinsic_arguments(&units[u], &mut diags)),
        None => units
            .iter()
            .for_each(|u| intrinsic_arguments(u, &mut diags)),
    }
    (
        Program {
            units,
            names,
            call_graph: std::sync::Arc::new(call_graph),
        },
        diags,
    )
}

/// `intrinsic-arguments` errors: references to intrinsic functions with
/// fewer arguments than their rule computes on (`exp()`, `max(x)`).
fn intrinsic_arguments(u: &Unit, diags: &mut Vec<(FileId, Diagnostic)>) {
    for st in &u.stmts {
        for e in st.kind.exprs() {
            e.walk(&mut |x| {
                let ExprKind::Intrinsic { name, args } = &x.kind else {
                    return;
                };
                let Some(i) = crate::intrinsics::lookup(name) else {
                    return;
                };
                let least = i.rule.least_arguments();
                if args.len() < least {
                    let plural = if least > 1 { "s" } else { "" };
                    diags.push((
                        x.span.file,
                        Diagnostic::new(
                            &INTRINSIC_ARGUMENTS,
                            x.span.range,
                            format!(
                                "`{name}` is given {} argument{} but needs {}{least} argument{plural}",
                                args.len(),
                                if args.len() == 1 { "" } else { "s" },
                                if matches!(i.rule, crate::intrinsics::Rule::Extremum { .. }) { "at least " } else { "" },
                            ),
                        ),
                    ));
                }
            });
        }
    }
}

/// The modules and external procedures of a program by name.
#[derive(Debug, Default)]
pub struct NameIndex {
    modules: HashMap<String, UnitId>,
    /// External (top-level) subroutines and functions by name.
    globals: HashMap<String, UnitId>,
}

impl NameIndex {
    fn new(units: &Units) -> NameIndex {
        let mut modules = HashMap::new();
        let mut globals = HashMap::new();
        for u in units {
            if u.parent.is_none() {
                match u.kind {
                    UnitKind::Module => {
                        modules.entry(u.name.clone()).or_insert(u.id);
                    }
                    UnitKind::Subroutine | UnitKind::Function => {
                        globals.entry(u.name.clone()).or_insert(u.id);
                    }
                    _ => {}
                }
            }
        }
        NameIndex { modules, globals }
    }
}

/// Where a name visible in unit `u` but not declared there comes from.
fn find_visible(
    units: &Units,
    u: &Unit,
    name: &str,
    depth: u32,
) -> Option<(UnitId, SymbolId, Association)> {
    if depth > 32 {
        return None;
    }
    if let Some((m, s)) = find_through_uses(units, u, name, depth) {
        return Some((m, s, Association::Use));
    }
    let host = units.get(u.parent?)?;
    if let Some(id) = host.lookup(name) {
        let s = host.symbol(id);
        if s.declared && !matches!(s.storage, Storage::Procedure) {
            return Some(match &s.storage {
                Storage::Imported { from, symbol, via } => (*from, *symbol, *via),
                _ => (host.id, id, Association::Host),
            });
        }
    }
    find_visible(units, host, name, depth + 1).map(|(m, s, via)| {
        (
            m,
            s,
            if via == Association::Use {
                Association::Use
            } else {
                Association::Host
            },
        )
    })
}

/// The remote name `local` refers to through a USE, if that USE makes it
/// visible.
pub(crate) fn remote_name<'a>(us: &'a UseDecl, local: &'a str) -> Option<&'a str> {
    if let Some(only) = &us.only {
        return only
            .iter()
            .find(|(l, _)| l == local)
            .map(|(_, r)| r.as_str());
    }
    if let Some((_, r)) = us.renames.iter().find(|(l, _)| l == local) {
        return Some(r);
    }
    if us.renames.iter().any(|(_, r)| r == local) {
        return None;
    }
    Some(local)
}

fn find_through_uses(
    units: &Units,
    u: &Unit,
    name: &str,
    depth: u32,
) -> Option<(UnitId, SymbolId)> {
    if depth > 32 {
        return None;
    }
    for us in &u.uses {
        let Some(m) = us.target else { continue };
        let Some(remote) = remote_name(us, name) else {
            continue;
        };
        let module = units.get(m)?;
        if let Some(id) = module.lookup(remote) {
            let s = module.symbol(id);
            if s.declared && !matches!(s.storage, Storage::Procedure) {
                return Some(match &s.storage {
                    Storage::Imported { from, symbol, .. } => (*from, *symbol),
                    _ => (m, id),
                });
            }
        }
        if let Some(found) = find_through_uses(units, module, remote, depth + 1) {
            return Some(found);
        }
    }
    None
}

fn uses_unknown_module(units: &Units, u: &Unit, depth: u32) -> Option<String> {
    if depth > 32 {
        return None;
    }
    for us in &u.uses {
        match us.target {
            None if !is_intrinsic_module(&us.module) => return Some(us.module.clone()),
            Some(m) => {
                if let Some(x) = units
                    .get(m)
                    .and_then(|mu| uses_unknown_module(units, mu, depth + 1))
                {
                    return Some(x);
                }
            }
            None => {}
        }
    }
    let parent = units.get(u.parent?)?;
    uses_unknown_module(units, parent, depth + 1)
}

/// The implicit rules in force in `u` (inherited from the host when the
/// unit has no IMPLICIT statement of its own).
fn effective_implicit<'a>(units: &'a Units, u: &'a Unit) -> &'a ImplicitRules {
    let mut cur = u;
    for _ in 0..32 {
        if cur.implicit != ImplicitRules::default() {
            return &cur.implicit;
        }
        match cur.parent.and_then(|p| units.get(p)) {
            Some(p) => cur = p,
            None => break,
        }
    }
    &cur.implicit
}

/// New versions of a unit's symbols, and the diagnostics found.
type SymbolUpdates = (Vec<(SymbolId, Symbol)>, Vec<(FileId, Diagnostic)>);

fn resolve_symbols(units: &Units, i: UnitId) -> SymbolUpdates {
    let mut diags = Vec::new();
    let u = &units[i];
    let rules = effective_implicit(units, u);
    let unknown_module = uses_unknown_module(units, u, 0);
    let mut out = Vec::new();
    for (id, s) in u.symbols.iter_enumerated() {
        let mut s2 = s.clone();
        let mut changed = false;
        if !s.declared && s.storage == Storage::Local {
            if let Some((from, sym, via)) = find_visible(units, u, &s.name, 0) {
                let origin = units[from].symbol(sym);
                s2.ty = origin.ty.clone();
                // A kind named by a constant the origin resolves in this
                // same pass (`real(wp)` in the host of an internal
                // procedure).
                if let (None, Some(kt)) = (s2.ty.kind, &origin.ty.kind_text) {
                    s2.ty.kind = kind_from_name(units, &units[from], kt);
                }
                s2.dims = origin.dims.clone();
                s2.attrs = origin.attrs.clone();
                s2.init = origin.init.clone();
                s2.typing = Typing::Imported;
                s2.storage = Storage::Imported {
                    from,
                    symbol: sym,
                    via,
                };
                out.push((id, s2));
                continue;
            }
        }
        if !s.declared && s.storage == Storage::Local {
            if let Some(origin) = intrinsic_origin(units, u, &s.name, 0) {
                from_intrinsic_module(&mut s2, origin);
                out.push((id, s2));
                continue;
            }
        }
        if s2.ty.base == BaseType::None && s2.storage != Storage::Procedure {
            if let (false, Some(m)) = (s.declared, &unknown_module) {
                if s.storage == Storage::Local {
                    s2.storage = Storage::UnknownModule { module: m.clone() };
                    out.push((id, s2));
                    continue;
                }
            }
            match rules.type_of(&s.name) {
                Some(t) => {
                    s2.ty = t;
                    s2.typing = Typing::Implicit;
                }
                None if unknown_module.is_some() => {
                    s2.typing = Typing::Unknown;
                }
                None => {
                    diags.push((
                        s.span.file,
                        Diagnostic::new(
                            &UNDECLARED,
                            s.span.range,
                            format!(
                                "`{}` has no type: it is not declared and IMPLICIT NONE is in effect",
                                s.name
                            ),
                        ),
                    ));
                    s2.typing = Typing::Unknown;
                }
            }
            changed = true;
        }
        // Kinds named by constants declared elsewhere (`real(dp)` with `dp`
        // from a module).
        if s2.ty.kind.is_none() {
            if let Some(kt) = s2.ty.kind_text.clone() {
                if let Some(k) = kind_from_name(units, u, &kt) {
                    s2.ty.kind = Some(k);
                    changed = true;
                }
            }
        }
        if changed {
            out.push((id, s2));
        }
    }
    (out, diags)
}

/// Where a name a unit does not declare comes from an intrinsic module:
/// the module, the name there, and whether an `only:` list names it.
struct IntrinsicOrigin {
    module: String,
    remote: String,
    listed: bool,
}

/// The intrinsic module that makes `name` visible in `u` (through its own
/// USE statements, the modules they use, or its hosts').
fn intrinsic_origin(units: &Units, u: &Unit, name: &str, depth: u32) -> Option<IntrinsicOrigin> {
    if depth > 32 {
        return None;
    }
    for us in &u.uses {
        let Some(remote) = remote_name(us, name) else {
            continue;
        };
        match us.target {
            None if is_intrinsic_module(&us.module) => {
                let listed = us.only.is_some() || us.renames.iter().any(|(local, _)| local == name);
                let known = named_constant(&us.module, remote).is_some();
                if known || listed {
                    return Some(IntrinsicOrigin {
                        module: us.module.clone(),
                        remote: remote.to_string(),
                        listed,
                    });
                }
            }
            Some(m) => {
                let module = units.get(m)?;
                let declared = module
                    .lookup(remote)
                    .is_some_and(|id| module.symbol(id).declared);
                if !declared {
                    if let Some(o) = intrinsic_origin(units, module, remote, depth + 1) {
                        return Some(o);
                    }
                }
            }
            None => {}
        }
    }
    let host = units.get(u.parent?)?;
    if host.lookup(name).is_some_and(|id| host.symbol(id).declared) {
        return None;
    }
    intrinsic_origin(units, host, name, depth + 1)
}

/// Gives `s` the meaning of an intrinsic module's name: a named constant
/// with its value when dfort knows it, else a name of that module with no
/// type (as for a module dfort was not given; it is not reported).
fn from_intrinsic_module(s: &mut Symbol, origin: IntrinsicOrigin) {
    let value = named_constant(&origin.module, &origin.remote);
    s.storage = Storage::UnknownModule {
        module: origin.module,
    };
    let (ty, init) = match value {
        Some(ConstantValue::Int(v)) => (Type::new(BaseType::Integer, Some(4)), ExprKind::Int(v)),
        Some(ConstantValue::Char(c)) => {
            let mut ty = Type::new(BaseType::Character, Some(1));
            ty.len = Some("1".into());
            (ty, ExprKind::Str(char::from(c).to_string()))
        }
        None => {
            debug_assert!(origin.listed);
            s.typing = Typing::Unknown;
            return;
        }
    };
    s.ty = ty;
    s.attrs.parameter = true;
    s.init = Some(Expr {
        kind: init,
        span: s.span,
    });
    s.typing = Typing::Imported;
}

fn kind_from_name(units: &Units, u: &Unit, name: &str) -> Option<u32> {
    if !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return None;
    }
    let (owner, sym) = match u.lookup(name) {
        Some(id) if u.symbol(id).declared => (u, id),
        _ => match find_visible(units, u, name, 0) {
            Some((m, s, _)) => (&**units.get(m)?, s),
            None => {
                let origin = intrinsic_origin(units, u, name, 0)?;
                return match named_constant(&origin.module, &origin.remote)? {
                    ConstantValue::Int(v) => u32::try_from(v).ok().filter(|v| *v > 0),
                    ConstantValue::Char(_) => None,
                };
            }
        },
    };
    let s = owner.symbol(sym);
    let v = const_int_in(owner, s.init.as_ref()?, 0)?;
    u32::try_from(v).ok().filter(|v| *v > 0)
}

/// How one applied or called name resolves in a unit.
#[derive(Clone, Debug)]
enum Resolved {
    /// An array declared in the unit.
    Array(SymbolId),
    /// An array visible by host or use association: a symbol is added to
    /// the unit for it.
    ImportedArray(Box<Symbol>),
    Intrinsic,
    Procedure(CallTarget),
}

/// How a unit's references by name resolve; `order` is the order in
/// which the unit first references them, in which the symbols imported
/// arrays get are added (so that a unit relinked alone numbers its
/// symbols as a fresh link does).
struct ReferencePlan {
    names: HashMap<String, Resolved>,
    order: Vec<String>,
}

fn resolve_procedure(units: &Units, index: &NameIndex, u: &Unit, name: &str) -> Option<UnitId> {
    // Contained procedures of this unit and of its hosts (siblings).
    let mut cur = Some(u);
    let mut depth = 0;
    while let Some(c) = cur {
        if depth > 32 {
            break;
        }
        for ch in &c.children {
            if units
                .get(*ch)
                .is_some_and(|x| x.name == name && x.is_procedure())
            {
                return Some(*ch);
            }
        }
        if let Some(found) = through_uses_procedure(units, c, name, 0) {
            return Some(found);
        }
        if c.parent.is_none() && c.name == name && c.is_procedure() {
            return Some(c.id);
        }
        cur = c.parent.and_then(|p| units.get(p)).map(|p| &**p);
        depth += 1;
    }
    index.globals.get(name).copied()
}

fn through_uses_procedure(units: &Units, u: &Unit, name: &str, depth: u32) -> Option<UnitId> {
    if depth > 32 {
        return None;
    }
    for us in &u.uses {
        let Some(m) = us.target else { continue };
        let Some(remote) = remote_name(us, name) else {
            continue;
        };
        let module = units.get(m)?;
        for ch in &module.children {
            if units.get(*ch).is_some_and(|x| x.name == remote) {
                return Some(*ch);
            }
        }
        if let Some(f) = through_uses_procedure(units, module, remote, depth + 1) {
            return Some(f);
        }
    }
    None
}

fn resolve_references(units: &Units, index: &NameIndex, i: UnitId) -> ReferencePlan {
    let u = &units[i];
    let mut wanted: Vec<(String, bool)> = Vec::new();
    let note = |e: &Expr, wanted: &mut Vec<(String, bool)>| match &e.kind {
        ExprKind::Apply { name, .. } => wanted.push((name.clone(), true)),
        ExprKind::FunctionCall {
            name,
            target: CallTarget::Unresolved,
            ..
        } => wanted.push((name.clone(), false)),
        _ => {}
    };
    for st in &u.stmts {
        if let StmtKind::Call { name, .. } = &st.kind {
            wanted.push((name.clone(), false));
        }
        for e in st.kind.exprs() {
            e.walk(&mut |x| note(x, &mut wanted));
        }
    }
    for sf in &u.stmt_functions {
        sf.body.walk(&mut |x| note(x, &mut wanted));
        if let Some((lhs, _)) = &sf.as_assignment {
            lhs.walk(&mut |x| note(x, &mut wanted));
        }
    }
    // A name may be an array if any of its references may be one: the
    // "statement function" `y(k) = y(k) + …` of an internal procedure
    // refers to itself in its body (lowered as a function reference)
    // before its left-hand side is seen.
    let mut order: Vec<String> = Vec::new();
    let mut array_like: HashMap<String, bool> = HashMap::new();
    for (name, may_be_array) in wanted {
        match array_like.get_mut(&name) {
            Some(m) => *m |= may_be_array,
            None => {
                array_like.insert(name.clone(), may_be_array);
                order.push(name);
            }
        }
    }
    let mut names = HashMap::new();
    for name in &order {
        let name = name.clone();
        let may_be_array = array_like[&name];
        let local = u.lookup(&name).map(|id| (id, u.symbol(id)));
        let r = if let Some((id, _)) = local.filter(|(_, s)| may_be_array && !s.dims.is_empty()) {
            Resolved::Array(id)
        } else if let (true, None, Some((from, sym, via))) = (
            may_be_array,
            local.filter(|(_, s)| s.declared),
            find_visible(units, u, &name, 0),
        ) {
            let origin = units[from].symbol(sym);
            if !origin.dims.is_empty() {
                let mut s = origin.clone();
                s.typing = Typing::Imported;
                s.storage = Storage::Imported {
                    from,
                    symbol: sym,
                    via,
                };
                s.declared = false;
                Resolved::ImportedArray(Box::new(s))
            } else {
                proc_or_intrinsic(units, index, u, &name, local.map(|x| x.1))
            }
        } else {
            proc_or_intrinsic(units, index, u, &name, local.map(|x| x.1))
        };
        names.insert(name, r);
    }
    ReferencePlan { names, order }
}

fn proc_or_intrinsic(
    units: &Units,
    index: &NameIndex,
    u: &Unit,
    name: &str,
    local: Option<&Symbol>,
) -> Resolved {
    if let Some(s) = local {
        if matches!(s.storage, Storage::Dummy(_)) {
            return Resolved::Procedure(CallTarget::External);
        }
        if s.attrs.intrinsic {
            return Resolved::Intrinsic;
        }
    }
    if let Some(id) = resolve_procedure(units, index, u, name) {
        return Resolved::Procedure(CallTarget::Unit(id));
    }
    let external = local.is_some_and(|s| s.attrs.external);
    if !external && is_intrinsic_function(name) {
        return Resolved::Intrinsic;
    }
    Resolved::Procedure(CallTarget::External)
}

fn apply_references(u: &mut Unit, plan: ReferencePlan) {
    // Imported arrays get a symbol in this unit.
    let mut ids: HashMap<String, SymbolId> = HashMap::new();
    let imported = plan
        .names
        .iter()
        .filter(|(name, r)| matches!(r, Resolved::ImportedArray(_)) && u.lookup(name).is_none())
        .count();
    u.symbols.reserve_exact(imported);
    for (name, r) in plan.order.iter().map(|n| (n, &plan.names[n])) {
        match r {
            Resolved::Array(id) => {
                ids.insert(name.clone(), *id);
            }
            Resolved::ImportedArray(sym) => {
                let id = match u.lookup(name) {
                    Some(id) => {
                        u.symbols.set(id, (**sym).clone());
                        id
                    }
                    None => u.symbols.push((**sym).clone()),
                };
                ids.insert(name.clone(), id);
            }
            Resolved::Procedure(_) | Resolved::Intrinsic => {
                // A symbol created for the name (an EXTERNAL declaration or a
                // typed function name) is a procedure, not a variable.
                if let Some(id) = u.lookup(name) {
                    let s = &mut u.symbols[id];
                    if s.storage == Storage::Local {
                        s.storage = Storage::Procedure;
                    }
                }
            }
        }
    }
    let fix = |e: &mut Expr| {
        let new_kind = match &mut e.kind {
            ExprKind::Apply { name, args } => {
                let args = std::mem::take(args);
                let name = std::mem::take(name);
                Some(match plan.names.get(&name) {
                    Some(Resolved::Array(_)) | Some(Resolved::ImportedArray(_)) => {
                        match ids.get(&name) {
                            Some(id) => ExprKind::ArrayRef {
                                array: *id,
                                subs: args.into_iter().map(|a| subscript(a.value)).collect(),
                            },
                            None => ExprKind::Error,
                        }
                    }
                    Some(Resolved::Intrinsic) => ExprKind::Intrinsic { name, args },
                    Some(Resolved::Procedure(t)) => ExprKind::FunctionCall {
                        name,
                        target: t.clone(),
                        args,
                    },
                    None => ExprKind::FunctionCall {
                        name,
                        target: CallTarget::External,
                        args,
                    },
                })
            }
            ExprKind::FunctionCall {
                name,
                target: CallTarget::Unresolved,
                args,
            } => match (plan.names.get(name.as_str()), ids.get(name.as_str())) {
                // The body of a "statement function" that is an assignment
                // to an array (above): its references are elements.
                (Some(Resolved::Array(_) | Resolved::ImportedArray(_)), Some(id)) => {
                    Some(ExprKind::ArrayRef {
                        array: *id,
                        subs: std::mem::take(args)
                            .into_iter()
                            .map(|a| subscript(a.value))
                            .collect(),
                    })
                }
                (Some(Resolved::Procedure(t)), _) => {
                    e.kind = ExprKind::FunctionCall {
                        name: std::mem::take(name),
                        target: t.clone(),
                        args: std::mem::take(args),
                    };
                    None
                }
                _ => {
                    if let ExprKind::FunctionCall { target, .. } = &mut e.kind {
                        *target = CallTarget::External;
                    }
                    None
                }
            },
            _ => None,
        };
        if let Some(k) = new_kind {
            e.kind = k;
        }
    };
    let mut fix = fix;
    // Only the statements that change are written: the others stay
    // shared with the chunk's lowering.
    let unresolved = |e: &Expr| {
        matches!(
            e.kind,
            ExprKind::Apply { .. }
                | ExprKind::FunctionCall {
                    target: CallTarget::Unresolved,
                    ..
                }
        )
    };
    for id in u.stmts.indices() {
        let st = &u.stmts[id];
        if !matches!(st.kind, StmtKind::Call { .. }) && !any_expr(st, unresolved) {
            continue;
        }
        let st = &mut u.stmts[id];
        if let StmtKind::Call { name, target, .. } = &mut st.kind {
            *target = match plan.names.get(name.as_str()) {
                Some(Resolved::Procedure(t)) => t.clone(),
                _ => CallTarget::External,
            };
        }
        for e in st.kind.exprs_mut() {
            e.walk_mut(&mut fix);
        }
    }
    for sf in &mut u.stmt_functions {
        sf.body.walk_mut(&mut fix);
        if let Some((lhs, _)) = &mut sf.as_assignment {
            lhs.walk_mut(&mut fix);
        }
    }
    assignments_not_statement_functions(u);
}

/// Turns the "statement functions" whose name linking found to be an
/// array visible by host or use association (`y(i) = …` in an internal
/// procedure whose host declares `y(n)`) into the unit's first
/// assignments, and the references to them into array elements.
fn assignments_not_statement_functions(u: &mut Unit) {
    let is_element = |sf: &StmtFunction| matches!(&sf.as_assignment, Some((lhs, _)) if matches!(lhs.kind, ExprKind::ArrayRef { .. }));
    if !u.stmt_functions.iter().any(is_element) {
        return;
    }
    let all = std::mem::take(&mut u.stmt_functions);
    // New index of each statement function kept, or the array it is.
    let mut fate: Vec<Result<u32, SymbolId>> = Vec::with_capacity(all.len());
    let mut first = Vec::new();
    for sf in all {
        match (is_element(&sf), sf.as_assignment) {
            (true, Some((lhs, label))) => {
                let array = match &lhs.kind {
                    ExprKind::ArrayRef { array, .. } => *array,
                    _ => sf.name,
                };
                fate.push(Err(array));
                let id = u.stmts.next_id();
                u.stmts.push(Stmt {
                    id,
                    label,
                    span: sf.span,
                    kind: StmtKind::Assign { lhs, rhs: sf.body },
                });
                first.push(id);
            }
            (_, as_assignment) => {
                fate.push(Ok(u.stmt_functions.len() as u32));
                u.stmt_functions.push(StmtFunction {
                    as_assignment,
                    ..sf
                });
            }
        }
    }
    let mut fix = |e: &mut Expr| {
        let ExprKind::FunctionCall {
            target: CallTarget::StatementFunction(i),
            args,
            ..
        } = &mut e.kind
        else {
            return;
        };
        match fate.get(*i as usize) {
            Some(Ok(k)) => *i = *k,
            Some(Err(array)) => {
                let subs = std::mem::take(args)
                    .into_iter()
                    .map(|a| subscript(a.value))
                    .collect();
                e.kind = ExprKind::ArrayRef {
                    array: *array,
                    subs,
                };
            }
            None => {}
        }
    };
    let statement_function = |e: &Expr| {
        matches!(
            e.kind,
            ExprKind::FunctionCall {
                target: CallTarget::StatementFunction(_),
                ..
            }
        )
    };
    for id in u.stmts.indices() {
        if any_expr(&u.stmts[id], statement_function) {
            for e in u.stmts[id].kind.exprs_mut() {
                e.walk_mut(&mut fix);
            }
        }
    }
    for sf in &mut u.stmt_functions {
        sf.body.walk_mut(&mut fix);
    }
    first.append(&mut u.body);
    u.body = first;
    u.cfg = Arc::new(crate::cfg::Cfg::build(u));
}

/// Whether some expression of statement `st` (sub-expressions included)
/// satisfies `pred`.
fn any_expr(st: &Stmt, pred: impl Fn(&Expr) -> bool) -> bool {
    let mut found = false;
    for e in st.kind.exprs() {
        e.walk(&mut |x| found |= pred(x));
    }
    found
}
