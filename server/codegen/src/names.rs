//! Which procedures get a derivative routine and which of their variables
//! get a derivative, for one root: the variables active anywhere in each
//! unit reached from the root (activity with the root's independents and
//! dependents, paper 000 §4), closed over call sites so that caller and
//! callee agree — an actual with a derivative binds to a formal with one
//! and back — and over COMMON blocks, whose members' derivatives live in a
//! COMMON block of their own (`/blk_b/`, `/blk_d/`) that every routine
//! declaring the block shares.
//!
//! Contract: deterministic; the root is first in `units`, the rest in
//! program order; a unit is in `units` when it has variables with a
//! derivative or calls one that is.

use dfort_analysis::activity::active_anywhere;
use dfort_analysis::bitset::BitSet;
use dfort_analysis::dp::{differentiable, dp_of, target};
use dfort_analysis::interproc::ProgramActivity;
use dfort_ir::callgraph::Callee;
use dfort_ir::*;
use std::collections::{BTreeSet, HashMap};

pub struct DiffSet<'a> {
    pub root: UnitId,
    /// Units that get a derivative routine: the root first.
    pub units: Vec<UnitId>,
    /// Per unit (indexed by `UnitId`): the symbols with a derivative.
    pub with_d: Vec<BitSet>,
    /// COMMON members (block, position) with a derivative.
    pub commons: BTreeSet<(String, u32)>,
    /// Module variables (module, symbol) with a derivative: it is declared
    /// once, in the derivative module `<m>_b` / `<m>_d`, and every routine
    /// shares it.
    pub module_vars: BTreeSet<(UnitId, SymbolId)>,
    /// The activity the set follows (the analyses' facts).
    pub activity: &'a ProgramActivity,
}

fn carries(unit: &Unit, s: SymbolId) -> bool {
    differentiable(unit, s) && unit.symbol(s).ty.base != BaseType::Derived
}

impl<'a> DiffSet<'a> {
    /// The set of `root`, a root of `facts`, with the roles the analyses
    /// took for it.
    pub fn of_root(
        facts: &'a dfort_analysis::facts::ProgramFacts,
        root: UnitId,
    ) -> Result<DiffSet<'a>, Vec<crate::Refusal>> {
        let program = &facts.program;
        let Some(roles) = facts.roles_of(root) else {
            let unit = program.unit(root);
            return Err(vec![crate::Refusal::new(
                unit.name_span,
                (
                    &dfort_syntax::rules::INTERNAL_ERROR,
                    format!("`{}` is not a root of this analysis", unit.name),
                ),
            )]);
        };
        Ok(DiffSet::new(
            program,
            &facts.activity,
            root,
            &roles.independents,
            &roles.dependents,
        ))
    }

    /// The set of `root` with its roles, from the analyses' `activity`.
    pub fn new(
        program: &Program,
        activity: &'a ProgramActivity,
        root: UnitId,
        independents: &BitSet,
        dependents: &BitSet,
    ) -> DiffSet<'a> {
        let n = program.units.len();
        let reachable = reachable(program, root);
        let mut with_d = vec![BitSet::default(); n];
        for u in &reachable {
            let unit = program.unit(*u);
            if let Some(act) = &activity.activity[u.0 as usize] {
                with_d[u.0 as usize] = active_anywhere(unit, act);
            }
        }
        with_d[root.0 as usize].union_with(independents);
        with_d[root.0 as usize].union_with(dependents);
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
                        let Some(k) = dfort_analysis::effects::formal_index(callee, pos, a) else {
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
                                let active = dp_of(caller, &a.value)
                                    .intersects(&with_d[caller.id.0 as usize]);
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
        // Units with derivatives, and their callers up to the root.
        let mut in_set: Vec<bool> = (0..n).map(|i| !with_d[i].is_empty()).collect();
        in_set[root.0 as usize] = true;
        for _ in 0..n {
            let mut changed = false;
            for u in &reachable {
                if in_set[u.0 as usize] {
                    continue;
                }
                let calls_in_set = program.call_graph.calls_from[u.0 as usize]
                    .iter()
                    .any(|&s| matches!(program.call_graph.sites[s].callee, Callee::Unit(c) if in_set[c.0 as usize]));
                if calls_in_set {
                    in_set[u.0 as usize] = true;
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        let mut units = vec![root];
        units.extend(
            reachable
                .iter()
                .copied()
                .filter(|u| *u != root && in_set[u.0 as usize]),
        );
        DiffSet {
            root,
            units,
            with_d,
            commons,
            module_vars,
            activity,
        }
    }

    pub fn contains(&self, u: UnitId) -> bool {
        self.units.contains(&u)
    }

    /// Derivative names `x<suffix>` of a unit's symbols (renamed on a
    /// clash with the unit's names); a module variable's is the name its
    /// derivative module declares.
    pub fn names(&self, program: &Program, unit: &Unit, suffix: char) -> HashMap<SymbolId, String> {
        let mut taken: Vec<String> = unit.symbols.iter().map(|s| s.name.clone()).collect();
        let mut out = HashMap::new();
        for i in self.with_d[unit.id.0 as usize].iter() {
            let s = SymbolId(i as u32);
            let sym = unit.symbol(s);
            let host = host_var(program, sym)
                .and_then(|(h, hs)| self.names(program, program.unit(h), suffix).remove(&hs));
            let name = match (module_var(program, sym), host) {
                (Some((m, ms)), _) => module_var_name(program.unit(m), ms, suffix),
                (None, Some(hn)) => hn,
                (None, None) => {
                    let mut name = format!("{}{suffix}", unit.symbol(s).name);
                    while taken.contains(&name) {
                        name.push('0');
                    }
                    name
                }
            };
            taken.push(name.clone());
            out.insert(s, name);
        }
        out
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

/// The name of a module variable's derivative in the derivative module
/// (`x<suffix>`, renamed on a clash with the module's names).
pub fn module_var_name(module: &Unit, s: SymbolId, suffix: char) -> String {
    let mut name = format!("{}{suffix}", module.symbol(s).name);
    while module.symbols.iter().any(|x| x.name == name) {
        name.push('0');
    }
    name
}

impl DiffSet<'_> {
    /// Declarations of the module variables' derivatives, per module name.
    pub fn module_declarations(
        &self,
        program: &Program,
        suffix: char,
    ) -> std::collections::BTreeMap<String, Vec<String>> {
        let mut out: std::collections::BTreeMap<String, Vec<String>> = Default::default();
        for &(m, s) in &self.module_vars {
            let mu = program.unit(m);
            let mut sym = mu.symbol(s).clone();
            sym.attrs = Attrs::default();
            sym.intent = None;
            let name = module_var_name(mu, s, suffix);
            if let Some(mut d) = crate::fortran::declaration(mu, &sym, &name, false) {
                // Module variables start undefined: derivatives start at 0.
                if sym.ty.is_real_or_complex() {
                    d.push_str(" = 0.0d0");
                }
                out.entry(mu.name.clone()).or_default().push(d);
            }
        }
        out
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

/// Units reachable from the root through calls, the root first, then in
/// program order.
fn reachable(program: &Program, root: UnitId) -> Vec<UnitId> {
    let mut seen = vec![false; program.units.len()];
    let mut stack = vec![root];
    seen[root.0 as usize] = true;
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
    let mut out = vec![root];
    out.extend(
        (0..program.units.len())
            .filter(|&i| seen[i] && i != root.0 as usize)
            .map(|i| UnitId(i as u32)),
    );
    out
}
