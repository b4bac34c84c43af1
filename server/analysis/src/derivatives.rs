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
//! set the generators write ([`RootSet`], which
//! `dfort_codegen::names::DiffSet` reads); with several roots, the closure from all of them at once
//! (what a call's checkpoint, [`crate::checkpoint`], takes a callee's
//! derivative routine to be). Analysis only: no I/O, no panics on user
//! input.

use crate::incremental::Changes;
use crate::interproc::ProgramActivity;
use crate::roots::{same_lists, RootList};
use dfort_ir::bitset::BitSet;
use dfort_ir::callgraph::Callee;
use dfort_ir::dp::{differentiable, dp_of, target};
use dfort_ir::queries::{host_var, module_var};
use dfort_ir::*;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

mod rounds;

/// The variables with a derivative, and the procedures with a derivative
/// routine, of a set of roots.
#[derive(Clone, Debug, Default)]
pub struct Carriers {
    /// Units reachable from the roots through calls: the first root first,
    /// then the rest in program order.
    pub reachable: Vec<UnitId>,
    /// Per unit (indexed by `UnitId`): whether it gets a derivative
    /// routine.
    pub routine: IdVec<UnitId, bool>,
    /// Per unit (indexed by `UnitId`): the symbols with a derivative.
    pub with_d: IdVec<UnitId, BitSet>,
    /// COMMON members (block, position) with a derivative.
    pub commons: BTreeSet<(String, u32)>,
    /// Module variables (module, symbol) with a derivative.
    pub module_vars: BTreeSet<(UnitId, SymbolId)>,
    /// Per unit: what the closure read of it, reused by the next analysis
    /// while the unit and its callees' interfaces are unchanged.
    pub inputs: IdVec<UnitId, Option<Arc<UnitInputs>>>,
    /// Per unit: the variables active anywhere the closure started from.
    seeds: IdVec<UnitId, BitSet>,
    /// The roots it started from, with their roles (shared with the
    /// analyses' list: an edit copies no root's sets).
    roots: RootList,
    /// The call graph's calls it found the reached units by (a program
    /// sharing them reaches the same units from the same roots).
    calls_from: Option<Arc<dfort_ir::callgraph::SiteLists>>,
    /// What the reached units share, and the facts the rounds ended
    /// with: the next closure starts from them when it only adds.
    rounds: Option<(Arc<rounds::Sharing>, Arc<rounds::Facts>)>,
    /// Whether the closure started from the previous one's facts.
    grown: bool,
}

impl Carriers {
    /// Whether this closure started from the previous one's facts (the
    /// edit only added facts or rules) instead of from its seeds alone.
    pub fn grown_from_previous(&self) -> bool {
        self.grown
    }
}

/// What the closure reads of one unit: its symbols that other units
/// share and the bindings of its call sites.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UnitInputs {
    shared: Vec<SharedSymbol>,
    bindings: Vec<Binding>,
    /// The unit's symbols that can carry a derivative ([`carries`]).
    carried: BitSet,
    /// The unit's may-alias classes.
    aliases: Vec<Vec<SymbolId>>,
}

/// A symbol whose derivative the generators can declare.
/// A derived-type variable does when its type has a derivative type
/// ([`Program::derivative_type`]).
pub fn carries(program: &Program, unit: &Unit, s: SymbolId) -> bool {
    let ty = &unit.symbol(s).ty;
    differentiable(unit, s)
        && (ty.base != BaseType::Derived
            || program.derivative_type_of(unit, ty) == Some(DerivativeType::Yes))
}

/// Whether unit `u` (whose symbols with a derivative are `with_d`) writes
/// an argument or a global with a derivative: a reference to a function
/// that does must run its derivative routine even where its result has
/// no derivative.
pub fn writes_derivatives(
    program: &Program,
    effects: &crate::effects::ProgramEffects,
    with_d: &BitSet,
    u: UnitId,
) -> bool {
    let (cu, Some(fx)) = (program.unit(u), effects.get(u)) else {
        return false;
    };
    let formal = fx.written_formals.iter().any(|k| {
        cu.args
            .get(*k as usize)
            .is_some_and(|f| with_d.contains_id(*f))
    });
    let global = cu.symbols.indices().any(|s| {
        with_d.contains_id(s)
            && crate::dep::global_key(program, cu, s)
                .is_some_and(|k| fx.written_globals.contains(&k))
    });
    formal || global
}

/// What the generators write for one root, from its carriers: the units
/// that get a derivative routine (the root first, the rest in program
/// order), the variables with a derivative, and per unit what a
/// reference to it must respect.
#[derive(Clone, Debug)]
pub struct RootSet {
    pub root: UnitId,
    /// Units that get a derivative routine: the root first.
    pub units: Vec<UnitId>,
    /// Per unit (indexed by `UnitId`): the symbols with a derivative.
    pub with_d: IdVec<UnitId, BitSet>,
    /// COMMON members (block, position) with a derivative.
    pub commons: BTreeSet<(String, u32)>,
    /// Module variables (module, symbol) with a derivative.
    pub module_vars: BTreeSet<(UnitId, SymbolId)>,
    /// Units of the set that write an argument or a global with a
    /// derivative, or a SAVE'd local of a unit of the set (a reference to
    /// one must run its derivative routine even where its result has no
    /// derivative).
    pub writers: Vec<UnitId>,
    /// Per unit: whether it may change one of its arguments or a global.
    pub changes_state: IdVec<UnitId, bool>,
    /// Per unit: whether it may read a global.
    pub reads_globals: IdVec<UnitId, bool>,
    /// The SAVE'd state the adjoint shares between its routines, and the
    /// procedures it runs copies of ([`crate::saved_state`]).
    pub saved_state: crate::saved_state::AdjointState,
}

/// The [`RootSet`] of `root` from the carriers `c` of that root alone.
pub fn root_set(
    program: &Program,
    c: &Carriers,
    effects: &crate::effects::ProgramEffects,
    root: UnitId,
) -> RootSet {
    let units: Vec<UnitId> = c
        .reachable
        .iter()
        .copied()
        .filter(|u| *u == root || c.routine[*u])
        .collect();
    // Units that change a SAVE'd local whose copy a tangent routine
    // keeps: their tangent routines must run wherever they are called.
    let changes_copy = |u: UnitId| {
        effects[u].written_globals.iter().any(|k| match k {
            crate::dep::GlobalKey::Shared { unit, symbol } => {
                units.contains(unit) && dfort_ir::queries::saved_local(program.unit(*unit), *symbol)
            }
            crate::dep::GlobalKey::Common { .. } => false,
        })
    };
    let writers = units
        .iter()
        .copied()
        .filter(|&u| writes_derivatives(program, effects, &c.with_d[u], u) || changes_copy(u))
        .collect();
    let mut set = RootSet {
        root,
        units,
        with_d: c.with_d.clone(),
        commons: c.commons.clone(),
        module_vars: c.module_vars.clone(),
        writers,
        changes_state: effects.iter().map(|e| e.changes_state()).collect(),
        reads_globals: effects.iter().map(|e| !e.read_globals.is_empty()).collect(),
        saved_state: Default::default(),
    };
    set.saved_state = crate::saved_state::of_root(program, &set, effects);
    set
}

/// The carriers of `roots` (each with its independents and dependents),
/// from the analyses' `activity`.
pub fn of_roots(program: &Program, activity: &ProgramActivity, roots: &RootList) -> Carriers {
    let start = Start::new(program, activity, roots, None);
    close(program, start, None)
}

/// [`of_roots`], reusing what the previous run read of each unit that is
/// unchanged, with unchanged callees' interfaces ([`Changes`]), and the
/// previous result itself when everything it starts from is equal; the
/// result equals a run from scratch.
pub fn of_roots_with(
    program: &Program,
    activity: &ProgramActivity,
    roots: &RootList,
    previous: Option<(&Arc<Carriers>, &Changes)>,
    same_roots: bool,
) -> Arc<Carriers> {
    let n = program.units.len();
    let previous = previous.filter(|(p, c)| p.inputs.len() == n && c.body.len() == n);
    if let Some((p, changes)) = previous {
        if same_start(program, activity, (roots, same_roots), p, changes) {
            return p.clone();
        }
    }
    let start = Start::new(program, activity, roots, previous.map(|(p, c)| (&**p, c)));
    if let Some((p, _)) = previous {
        let same_inputs = p
            .inputs
            .iter()
            .zip(&start.inputs)
            .all(|(a, b)| match (a, b) {
                (Some(a), Some(b)) => Arc::ptr_eq(a, b) || a == b,
                (None, None) => true,
                _ => false,
            });
        if same_inputs
            && p.reachable == start.reachable
            && same_lists(&p.roots, &start.roots)
            && p.seeds == start.seeds
        {
            return p.clone();
        }
    }
    Arc::new(close(program, start, previous.map(|(p, c)| (&**p, c))))
}

/// Whether the closure would start from what `previous` started from,
/// looking only at what changed: the same roots with the same roles (or
/// `same_roots`: the caller knows them to be the same), the
/// same units reached (the same calls, or the same units found again),
/// and for each reached unit whose activity or inputs were recomputed
/// the same variables active anywhere and the same inputs.
fn same_start(
    program: &Program,
    activity: &ProgramActivity,
    (roots, same_roots): (&RootList, bool),
    previous: &Carriers,
    changes: &Changes,
) -> bool {
    let same_roots = same_roots || same_lists(&previous.roots, roots);
    if !same_roots {
        return false;
    }
    let same_calls = previous
        .calls_from
        .as_ref()
        .is_some_and(|c| Arc::ptr_eq(c, &program.call_graph.calls_from));
    if !same_calls && reachable(program, roots.iter().map(|(r, _)| *r)) != previous.reachable {
        return false;
    }
    previous.reachable.iter().all(|&u| {
        let redone = activity.recomputed.get(u).copied().unwrap_or(true);
        let reads = changes.reads_changed(u);
        if !redone && !reads {
            return true;
        }
        let seeds = activity
            .activity
            .get(u)
            .and_then(|a| a.as_ref())
            .map(|a| a.active_anywhere())
            .unwrap_or_default();
        seeds == previous.seeds[u]
            && (!reads
                || previous.inputs[u]
                    .as_deref()
                    .is_some_and(|i| *i == gather(program, program.unit(u))))
    })
}

/// What the closure starts from: the reached units, the variables active
/// anywhere in each, the roots' roles, and what it reads of each unit.
struct Start {
    reachable: Vec<UnitId>,
    seeds: IdVec<UnitId, BitSet>,
    roots: RootList,
    inputs: IdVec<UnitId, Option<Arc<UnitInputs>>>,
}

impl Start {
    fn new(
        program: &Program,
        activity: &ProgramActivity,
        roots: &RootList,
        previous: Option<(&Carriers, &Changes)>,
    ) -> Start {
        let n = program.units.len();
        let reachable = reachable(program, roots.iter().map(|(r, _)| *r));
        let mut seeds: IdVec<UnitId, BitSet> = IdVec::from_elem(BitSet::default(), n);
        // What the rounds look at, gathered once per unit (or reused):
        // the symbols shared between units (module, host and COMMON
        // variables) and the bindings of actuals to formals at call sites.
        let mut inputs: IdVec<UnitId, Option<Arc<UnitInputs>>> = IdVec::from_elem(None, n);
        for &u in &reachable {
            let unit = program.unit(u);
            if let Some(act) = activity.activity.get(u).and_then(|a| a.as_ref()) {
                seeds[u] = act.active_anywhere();
            }
            let kept = previous.and_then(|(p, changes)| {
                let same = !changes.reads_changed(u);
                same.then(|| p.inputs.get(u).cloned().flatten()).flatten()
            });
            inputs[u] = Some(kept.unwrap_or_else(|| Arc::new(gather(program, unit))));
        }
        Start {
            reachable,
            seeds,
            roots: roots.clone(),
            inputs,
        }
    }
}

/// The closure from its start, from `previous`'s facts when this one
/// only adds to what that one started from.
fn close(program: &Program, start: Start, previous: Option<(&Carriers, &Changes)>) -> Carriers {
    let n = program.units.len();
    let grown = previous.and_then(|(p, changes)| grown_from(program, p, changes, &start));
    let Start {
        reachable,
        seeds,
        roots,
        inputs,
    } = start;
    // What a unit starts with: the variables active anywhere in it and a
    // root's independents and dependents, those that can carry one. Only
    // the units started again need their roots' roles: all on a fresh
    // closure, the changed ones on a grown one.
    let mut again: Option<Vec<UnitId>> = grown.as_ref().map(|(_, _, changed)| changed.clone());
    if let Some(units) = &mut again {
        units.sort_unstable();
    }
    let wanted = |u: &UnitId| {
        again
            .as_ref()
            .is_none_or(|units| units.binary_search(u).is_ok())
    };
    let mut roles: BTreeMap<UnitId, Vec<&BitSet>> = BTreeMap::new();
    for (root, r) in roots.iter().filter(|(u, _)| wanted(u)) {
        roles
            .entry(*root)
            .or_default()
            .extend([&r.independents, &r.dependents]);
    }
    let none = BitSet::default();
    let start_row = |facts: &mut rounds::Facts, u: UnitId| {
        let carried = inputs[u].as_deref().map_or(&none, |i| &i.carried);
        let row = &mut facts.with_d;
        row.union_row_within(u.index(), &seeds[u], carried);
        for set in roles.get(&u).into_iter().flatten() {
            row.union_row_within(u.index(), set, carried);
        }
    };
    let from_previous = grown.is_some();
    let (sharing, facts) = match grown {
        Some((sharing, mut facts, changed)) => {
            for &u in &changed {
                start_row(&mut facts, u);
            }
            rounds::run(program, &inputs, &sharing, &mut facts, changed);
            (sharing, facts)
        }
        None => {
            let sharing = rounds::Sharing::of(&inputs);
            let mut facts = rounds::Facts::empty(program, &sharing);
            for &u in &reachable {
                start_row(&mut facts, u);
            }
            rounds::run(
                program,
                &inputs,
                &sharing,
                &mut facts,
                reachable.iter().copied(),
            );
            (Arc::new(sharing), facts)
        }
    };
    let with_d: IdVec<UnitId, BitSet> = (0..n).map(|u| facts.with_d.to_set(u)).collect();
    let commons: BTreeSet<(String, u32)> = (sharing.commons.iter().zip(&facts.commons))
        .filter(|(_, with)| **with)
        .map(|(k, _)| k.clone())
        .collect();
    let module_vars: BTreeSet<(UnitId, SymbolId)> = (0..n)
        .flat_map(|m| (facts.modules.members(m)).map(move |s| (UnitId::new(m), SymbolId::new(s))))
        .collect();
    // Units with derivatives, the roots, and their callers up to a root.
    let mut routine: IdVec<UnitId, bool> = with_d.map_ref(|_, w| !w.is_empty());
    for (root, _) in &roots {
        routine[*root] = true;
    }
    // Up the call graph from the units with a routine, to the reached
    // callers.
    let mut reached: IdVec<UnitId, bool> = IdVec::from_elem(false, n);
    for &u in &reachable {
        reached[u] = true;
    }
    let graph = &program.call_graph;
    let mut up: Vec<UnitId> = routine.indices().filter(|&u| routine[u]).collect();
    while let Some(c) = up.pop() {
        for &s in graph.calls_to.get(c).into_iter().flatten() {
            let caller = graph.sites[s].caller;
            if reached[caller] && !routine[caller] {
                routine[caller] = true;
                up.push(caller);
            }
        }
    }
    Carriers {
        reachable,
        routine,
        with_d,
        commons,
        module_vars,
        inputs,
        seeds,
        roots,
        calls_from: Some(program.call_graph.calls_from.clone()),
        rounds: Some((sharing, Arc::new(facts))),
        grown: from_previous,
    }
}

/// The previous closure's sharing and facts (laid out for this
/// program's units), and the reached units that changed, when the
/// closure from `start` only adds to what `previous` started from: the
/// same roots and reached units, and in each changed unit no starting
/// fact and no rule fewer (shared symbols, call-site bindings, may-alias
/// classes). Its facts then all hold in the new closure. `None` otherwise
/// (the closure starts afresh).
fn grown_from(
    program: &Program,
    previous: &Carriers,
    changes: &Changes,
    start: &Start,
) -> Option<(Arc<rounds::Sharing>, rounds::Facts, Vec<UnitId>)> {
    let (sharing, facts) = previous.rounds.as_ref()?;
    let n = program.units.len();
    let same = previous.reachable == start.reachable
        && same_lists(&previous.roots, &start.roots)
        && previous.inputs.len() == n
        && facts.with_d.len() == n
        && changes.body.len() == n;
    if !same {
        return None;
    }
    let mut changed = Vec::new();
    let mut shared_changed = false;
    for &u in &start.reachable {
        let (old, new) = (previous.inputs[u].as_ref()?, start.inputs[u].as_ref()?);
        if Arc::ptr_eq(old, new) && previous.seeds[u] == start.seeds[u] {
            continue;
        }
        let aliases = old
            .aliases
            .iter()
            .all(|c| (new.aliases.iter()).any(|d| c.iter().all(|s| d.contains(s))));
        let grows = aliases
            && old.bindings.iter().all(|b| new.bindings.contains(b))
            && old.shared.iter().all(|s| new.shared.contains(s))
            && old.carried.is_subset(&new.carried)
            && previous.seeds[u].is_subset(&start.seeds[u]);
        if !grows {
            return None;
        }
        shared_changed |= old.shared != new.shared;
        changed.push(u);
    }
    // Rows as wide as the units' symbols now are, when one changed.
    let fits = |u: UnitId| {
        let words = program.unit(u).symbols.len().div_ceil(64);
        facts.with_d.row(u.index()).len() == words
    };
    let mut facts = if changes.body.iter_enumerated().all(|(u, c)| !*c || fits(u)) {
        (**facts).clone()
    } else {
        let widths: Vec<usize> = program.units.iter().map(|u| u.symbols.len()).collect();
        rounds::Facts {
            with_d: facts.with_d.relaid(widths.iter().copied())?,
            modules: facts.modules.relaid(widths.iter().copied())?,
            commons: facts.commons.clone(),
        }
    };
    // COMMON members numbered again when shared symbols changed.
    let sharing = match shared_changed {
        false => sharing.clone(),
        true => {
            let again = rounds::Sharing::of(&start.inputs);
            let with: BTreeSet<&(String, u32)> = (sharing.commons.iter().zip(&facts.commons))
                .filter(|(_, w)| **w)
                .map(|(k, _)| k)
                .collect();
            facts.commons = again.commons.iter().map(|k| with.contains(k)).collect();
            if with.len() != facts.commons.iter().filter(|w| **w).count() {
                return None;
            }
            Arc::new(again)
        }
    };
    Some((sharing, facts, changed))
}

/// What the closure reads of `unit`.
fn gather(program: &Program, unit: &Unit) -> UnitInputs {
    let mut shared: Vec<SharedSymbol> = Vec::new();
    for (i, sym) in unit.symbols.iter_enumerated() {
        let module = module_var(program, sym);
        let host = host_var(program, sym);
        let common = match &sym.storage {
            Storage::Common { block, index } => Some((block.clone(), *index)),
            _ => None,
        };
        if module.is_some() || host.is_some() || common.is_some() {
            shared.push(SharedSymbol {
                unit: unit.id,
                symbol: i,
                carries: carries(program, unit, i),
                module,
                host,
                common,
            });
        }
    }
    let mut bindings: Vec<Binding> = Vec::new();
    for &site in &program.call_graph.calls_from[unit.id] {
        let site = &program.call_graph.sites[site];
        let Callee::Unit(c) = site.callee else {
            continue;
        };
        let (caller, callee) = (unit, program.unit(c));
        let st = caller.stmt(site.stmt);
        for (args, is_fn) in site_args(st, &site.name) {
            for (pos, a) in args.iter().enumerate() {
                let Some(k) = dfort_ir::queries::formal_index(callee, pos, a) else {
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
                let formal_carries = carries(program, callee, f);
                let actual = match actual {
                    Some(v) if carries(program, caller, v) && formal_carries => Actual::Variable(v),
                    _ => Actual::Value(dp_of(caller, &a.value)),
                };
                bindings.push(Binding {
                    caller: caller.id,
                    callee: c,
                    slot: f,
                    carries: formal_carries,
                    actual,
                });
            }
            // A function reference with active arguments: its result
            // carries a derivative.
            if is_fn {
                if let Some(r) = callee.result {
                    let mut reads = BitSet::default();
                    for a in args {
                        reads.union_with(&dp_of(caller, &a.value));
                    }
                    bindings.push(Binding {
                        caller: caller.id,
                        callee: c,
                        slot: r,
                        carries: carries(program, callee, r),
                        actual: Actual::Value(reads),
                    });
                }
            }
        }
    }
    let carried = dfort_ir::bitset::of_ids(
        unit.symbols
            .indices()
            .filter(|&i| carries(program, unit, i)),
    );
    UnitInputs {
        shared,
        bindings,
        carried,
        aliases: unit.aliases.clone(),
    }
}

/// A symbol of a reached unit that other units share.
#[derive(Clone, Debug, PartialEq, Eq)]
struct SharedSymbol {
    unit: UnitId,
    symbol: SymbolId,
    carries: bool,
    module: Option<(UnitId, SymbolId)>,
    host: Option<(UnitId, SymbolId)>,
    common: Option<(String, u32)>,
}

/// What an actual argument is to the derivative set.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Actual {
    /// A variable (or element) that carries a derivative, bound to a
    /// formal that carries one: both have a derivative or neither.
    Variable(SymbolId),
    /// A value: it gives the formal (or a function's result) a
    /// derivative when it reads a variable with one.
    Value(BitSet),
}

/// An actual bound to a callee's formal (or a function reference's
/// arguments to its result).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Binding {
    caller: UnitId,
    callee: UnitId,
    /// The formal's (or the result's) symbol in the callee.
    slot: SymbolId,
    carries: bool,
    actual: Actual,
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
    let mut seen: IdVec<UnitId, bool> = IdVec::from_elem(false, program.units.len());
    let mut stack: Vec<UnitId> = Vec::new();
    let mut first = None;
    for r in roots {
        first.get_or_insert(r);
        if !seen[r] {
            seen[r] = true;
            stack.push(r);
        }
    }
    while let Some(u) = stack.pop() {
        for &s in &program.call_graph.calls_from[u] {
            if let Callee::Unit(c) = program.call_graph.sites[s].callee {
                if !seen[c] {
                    seen[c] = true;
                    stack.push(c);
                }
            }
        }
    }
    let mut out: Vec<UnitId> = first.into_iter().collect();
    out.extend(seen.indices().filter(|&i| seen[i] && Some(i) != first));
    out
}

#[cfg(test)]
mod tests {
    use crate::facts::{analyse, ProgramFacts};
    use crate::incremental::Changes;
    use crate::test_support::{program, request};
    use dfort_ir::{IdVec, Program, SymbolId, UnitId};

    /// `mid`'s `w` is active or not (the two statements have the same
    /// length, so the other units keep their spans).
    fn source(w: &str, v: &str) -> String {
        format!(
            "subroutine top(x, y)
  real x, y
  call mid(x, y)
end
subroutine mid(u, v)
  real u, v, w
  call inner()
  {w}
  {v}
contains
  subroutine inner()
    w = 3.0
  end subroutine inner
end
"
        )
    }

    fn unit(p: &Program, name: &str) -> UnitId {
        (p.units.iter())
            .find(|u| u.name == name)
            .map(|u| u.id)
            .expect("unit")
    }

    fn with_d(p: &Program, facts: &ProgramFacts, name: &str) -> Vec<String> {
        let u = p.unit(unit(p, name));
        let set = &facts.carriers.with_d[u.id];
        (set.ids::<SymbolId>())
            .map(|s| u.symbol(s).name.clone())
            .collect()
    }

    /// `mid` edited so that its `w` becomes active: its internal
    /// procedure `inner`, unchanged and with the same active variables,
    /// must give its view of `w` a derivative too. The closure grows from
    /// the last one, visiting `inner` because a fact of its host is new;
    /// edited back, it starts afresh.
    #[test]
    fn a_host_variable_gaining_a_derivative_reaches_its_unchanged_internal_procedure() {
        let old = program(&source("w = 1.0", "v = v + u"));
        let new = program(&source("w = u  ", "v = v + w"));
        let req = request("top", &["x"], &["y"]);
        let before = analyse(&old, &req, None);
        assert!(with_d(&old, &before, "inner").is_empty());
        let mut body: IdVec<UnitId, bool> = IdVec::from_elem(false, new.units.len());
        body[unit(&new, "mid")] = true;
        let changes = Changes::between(&old, &new, body).expect("numbered alike");
        let after = analyse(&new, &req, Some((&before, &changes)));
        let scratch = analyse(&new, &req, None);
        assert!(after.carriers.grown_from_previous());
        assert!(!scratch.carriers.grown_from_previous());
        assert_eq!(with_d(&new, &after, "inner"), ["w"]);
        assert_eq!(after.carriers.with_d, scratch.carriers.with_d);
        assert_eq!(after.carriers.routine, scratch.carriers.routine);
        let mut body: IdVec<UnitId, bool> = IdVec::from_elem(false, old.units.len());
        body[unit(&old, "mid")] = true;
        let changes = Changes::between(&new, &old, body).expect("numbered alike");
        let back = analyse(&old, &req, Some((&after, &changes)));
        assert!(!back.carriers.grown_from_previous());
        assert_eq!(back.carriers.with_d, before.carriers.with_d);
    }
}
