//! Which variables carry a derivative and which procedures get a
//! derivative routine, for a set of roots: the variables active anywhere
//! in each unit reached from a root (activity with the roots'
//! independents and dependents, paper 000 §4), closed over call sites so
//! that caller and callee agree — an actual with a derivative binds to a
//! formal with one and back — over module variables and host variables
//! (one derivative every unit shares) and over COMMON blocks, whose
//! members' derivatives live in a COMMON block of their own. A procedure
//! gets a derivative routine when it has variables with a derivative, is
//! a root, or calls one that gets a routine.
//!
//! Contract: deterministic; with one root this is exactly the derivative
//! set the generators write (`dfort_codegen::names::DiffSet` is built
//! from it); with several roots, the closure from all of them at once
//! (what a call's checkpoint, [`crate::checkpoint`], takes a callee's
//! derivative routine to be). Analysis only: no I/O, no panics on user
//! input.

use crate::activity::active_anywhere;
use crate::bitset::BitSet;
use crate::dp::{differentiable, dp_of, target};
use crate::interproc::ProgramActivity;
use dfort_ir::callgraph::Callee;
use dfort_ir::*;
use std::collections::BTreeSet;

/// The variables with a derivative, and the procedures with a derivative
/// routine, of a set of roots.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Carriers {
    /// Units reachable from the roots through calls: the first root first,
    /// then the rest in program order.
    pub reachable: Vec<UnitId>,
    /// Per unit (indexed by `UnitId`): whether it gets a derivative
    /// routine.
    pub routine: Vec<bool>,
    /// Per unit (indexed by `UnitId`): the symbols with a derivative.
    pub with_d: Vec<BitSet>,
    /// COMMON members (block, position) with a derivative.
    pub commons: BTreeSet<(String, u32)>,
    /// Module variables (module, symbol) with a derivative.
    pub module_vars: BTreeSet<(UnitId, SymbolId)>,
}

/// A symbol whose derivative the generators can declare.
fn carries(unit: &Unit, s: SymbolId) -> bool {
    differentiable(unit, s) && unit.symbol(s).ty.base != BaseType::Derived
}

/// The carriers of `roots` (each with its independents and dependents),
/// from the analyses' `activity`.
pub fn of_roots(
    program: &Program,
    activity: &ProgramActivity,
    roots: &[(UnitId, &BitSet, &BitSet)],
) -> Carriers {
    let n = program.units.len();
    let reachable = reachable(program, roots.iter().map(|(r, _, _)| *r));
    let mut with_d = vec![BitSet::default(); n];
    for u in &reachable {
        let unit = program.unit(*u);
        if let Some(act) = activity.activity.get(u.0 as usize).and_then(|a| a.as_ref()) {
            with_d[u.0 as usize] = active_anywhere(unit, act);
        }
    }
    for (root, independents, dependents) in roots {
        with_d[root.0 as usize].union_with(independents);
        with_d[root.0 as usize].union_with(dependents);
    }
    for u in &reachable {
        let unit = program.unit(*u);
        let keep: Vec<usize> = with_d[u.0 as usize]
            .iter()
            .filter(|&i| i < unit.symbols.len() && carries(unit, SymbolId(i as u32)))
            .collect();
        let mut b = BitSet::default();
        for i in keep {
            b.insert(i);
        }
        with_d[u.0 as usize] = b;
    }
    let mut commons = BTreeSet::new();
    let mut module_vars = BTreeSet::new();
    for _round in 0..256 {
        let mut changed = false;
        // Module variables, and host variables of internal procedures:
        // one derivative shared by every unit.
        for u in &reachable {
            let unit = program.unit(*u);
            for (i, sym) in unit.symbols.iter().enumerate() {
                if let Some(key) = module_var(program, sym) {
                    if with_d[u.0 as usize].contains(i) {
                        changed |= module_vars.insert(key);
                    }
                }
                if let Some((h, hs)) = host_var(program, sym) {
                    if with_d[u.0 as usize].contains(i) {
                        changed |= with_d[h.0 as usize].insert(hs.0 as usize);
                    }
                }
            }
        }
        for u in &reachable {
            let unit = program.unit(*u);
            for (i, sym) in unit.symbols.iter().enumerate() {
                let shared = module_var(program, sym).is_some_and(|k| module_vars.contains(&k))
                    || host_var(program, sym)
                        .is_some_and(|(h, hs)| with_d[h.0 as usize].contains(hs.0 as usize));
                if shared && carries(unit, SymbolId(i as u32)) {
                    changed |= with_d[u.0 as usize].insert(i);
                }
            }
        }
        // COMMON members: one derivative shared by every unit.
        for u in &reachable {
            let unit = program.unit(*u);
            for (i, sym) in unit.symbols.iter().enumerate() {
                if let Storage::Common { block, index } = &sym.storage {
                    if with_d[u.0 as usize].contains(i) {
                        changed |= commons.insert((block.clone(), *index));
                    }
                }
            }
        }
        for u in &reachable {
            let unit = program.unit(*u);
            for (i, sym) in unit.symbols.iter().enumerate() {
                if let Storage::Common { block, index } = &sym.storage {
                    if commons.contains(&(block.clone(), *index))
                        && carries(unit, SymbolId(i as u32))
                    {
                        changed |= with_d[u.0 as usize].insert(i);
                    }
                }
            }
        }
        // Call sites: actual and formal agree.
        for &site in reachable
            .iter()
            .flat_map(|u| program.call_graph.calls_from[u.0 as usize].iter())
        {
            let site = &program.call_graph.sites[site];
            let Callee::Unit(c) = site.callee else {
                continue;
            };
            let (caller, callee) = (program.unit(site.caller), program.unit(c));
            let st = caller.stmt(site.stmt);
            for (args, is_fn) in site_args(st, &site.name) {
                for (pos, a) in args.iter().enumerate() {
                    let Some(k) = crate::effects::formal_index(callee, pos, a) else {
                        continue;
                    };
                    let Some(&f) = callee.args.get(k) else {
                        continue;
                    };
                    let actual = match &a.value.kind {
                        ExprKind::Var(_) | ExprKind::ArrayRef { .. } => {
                            target(&a.value).map(|(s, _)| s)
                        }
                        _ => None,
                    };
                    let fi = f.0 as usize;
                    match actual {
                        Some(v) if carries(caller, v) && carries(callee, f) => {
                            let vi = v.0 as usize;
                            if with_d[caller.id.0 as usize].contains(vi) {
                                changed |= with_d[c.0 as usize].insert(fi);
                            }
                            if with_d[c.0 as usize].contains(fi) {
                                changed |= with_d[caller.id.0 as usize].insert(vi);
                            }
                        }
                        _ => {
                            // An active expression passed by value.
                            let active =
                                dp_of(caller, &a.value).intersects(&with_d[caller.id.0 as usize]);
                            if active && carries(callee, f) {
                                changed |= with_d[c.0 as usize].insert(fi);
                            }
                        }
                    }
                }
                // A function reference with active arguments: its
                // result carries a derivative.
                if is_fn {
                    if let Some(r) = callee.result {
                        let active = args.iter().any(|a| {
                            dp_of(caller, &a.value).intersects(&with_d[caller.id.0 as usize])
                        });
                        if active && carries(callee, r) {
                            changed |= with_d[c.0 as usize].insert(r.0 as usize);
                        }
                    }
                }
            }
        }
        if !changed {
            break;
        }
    }
    // Units with derivatives, the roots, and their callers up to a root.
    let mut routine: Vec<bool> = (0..n).map(|i| !with_d[i].is_empty()).collect();
    for (root, _, _) in roots {
        routine[root.0 as usize] = true;
    }
    for _ in 0..n {
        let mut changed = false;
        for u in &reachable {
            if routine[u.0 as usize] {
                continue;
            }
            let calls_in_set = program.call_graph.calls_from[u.0 as usize]
                .iter()
                .any(|&s| matches!(program.call_graph.sites[s].callee, Callee::Unit(c) if routine[c.0 as usize]));
            if calls_in_set {
                routine[u.0 as usize] = true;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    Carriers {
        reachable,
        routine,
        with_d,
        commons,
        module_vars,
    }
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

/// The argument lists a statement passes to procedure `name`: the CALL's,
/// and each reference to the function `name` in its expressions.
fn site_args<'a>(st: &'a Stmt, name: &str) -> Vec<(&'a [Arg], bool)> {
    let mut out: Vec<(&[Arg], bool)> = Vec::new();
    if let StmtKind::Call { name: n, args, .. } = &st.kind {
        if n == name {
            out.push((args, false));
        }
    }
    for e in st.kind.exprs() {
        e.walk(&mut |x| {
            if let ExprKind::FunctionCall { name: n, args, .. } = &x.kind {
                if n == name {
                    out.push((args, true));
                }
            }
        });
    }
    out
}

/// Units reachable from the roots through calls, the first root first,
/// then in program order.
fn reachable(program: &Program, roots: impl Iterator<Item = UnitId>) -> Vec<UnitId> {
    let mut seen = vec![false; program.units.len()];
    let mut stack: Vec<UnitId> = Vec::new();
    let mut first = None;
    for r in roots {
        first.get_or_insert(r);
        if !seen[r.0 as usize] {
            seen[r.0 as usize] = true;
            stack.push(r);
        }
    }
    while let Some(u) = stack.pop() {
        for &s in &program.call_graph.calls_from[u.0 as usize] {
            if let Callee::Unit(c) = program.call_graph.sites[s].callee {
                if !seen[c.0 as usize] {
                    seen[c.0 as usize] = true;
                    stack.push(c);
                }
            }
        }
    }
    let mut out: Vec<UnitId> = first.into_iter().collect();
    out.extend(
        (0..program.units.len())
            .filter(|&i| seen[i] && Some(UnitId(i as u32)) != first)
            .map(|i| UnitId(i as u32)),
    );
    out
}
