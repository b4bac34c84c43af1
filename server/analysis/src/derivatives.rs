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
use dfort_ir::chunk_vec::ChunkVec;
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
    pub with_d: ChunkVec<UnitId, BitSet>,
    /// COMMON members (block, position) with a derivative.
    pub commons: BTreeSet<(String, u32)>,
    /// Module variables (module, symbol) with a derivative.
    pub module_vars: BTreeSet<(UnitId, SymbolId)>,
    /// Per unit: what the closure read of it, reused by the next analysis
    /// while the unit and its callees' interfaces are unchanged.
    pub inputs: ChunkVec<UnitId, Option<Arc<UnitInputs>>>,
    /// Per unit: the variables active anywhere the closure started from.
    seeds: ChunkVec<UnitId, BitSet>,
    /// The roots it started from, with their roles (shared with the
    /// analyses' list: an edit copies no root's sets).
    roots: RootList,
    /// The call graph's calls it found the reached units by (a program
    /// sharing them reaches the same units from the same roots).
    calls_from: Option<Arc<dfort_ir::callgraph::SiteLists>>,
    /// What the reached units share, and the facts the rounds ended
    /// with: the next closure starts from them when it only adds.
    rounds: Option<(Arc<rounds::Sharing>, Arc<rounds::Facts>)>,
    /// How the closure started: afresh, or from the previous one's facts.
    start: Restart,
}

/// How a closure started.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Restart {
    /// From its seeds alone.
    #[default]
    Afresh,
    /// From the previous closure's facts: the edit only added facts or
    /// rules.
    Grown,
    /// From the previous closure's facts less those an edit took a
    /// starting fact or a rule from under, and what they derived.
    Retracted,
}

impl Carriers {
    /// How this closure started.
    pub fn restart(&self) -> Restart {
        self.start
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
    pub with_d: ChunkVec<UnitId, BitSet>,
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
    let reached = reachable(program, roots.iter().map(|(r, _)| *r));
    let start = Start::new(program, activity, (roots, reached), None);
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
    // The units reached depend only on the roots and the calls: the
    // previous closure's when both are the same.
    let same_roots = same_roots || previous.is_some_and(|(p, _)| same_lists(&p.roots, roots));
    let same_calls = previous.is_some_and(|(p, _)| {
        (p.calls_from.as_ref()).is_some_and(|c| Arc::ptr_eq(c, &program.call_graph.calls_from))
    });
    let reached = match previous {
        Some((p, _)) if same_roots && same_calls => p.reachable.clone(),
        _ => reachable(program, roots.iter().map(|(r, _)| *r)),
    };
    if let Some((p, changes)) = previous {
        if same_roots && same_start(program, activity, &reached, p, changes) {
            return p.clone();
        }
    }
    let start = Start::new(
        program,
        activity,
        (roots, reached),
        previous.map(|(p, c)| (&**p, c)),
    );
    if let Some((p, _)) = previous {
        let same_inputs = p.inputs.same_by(&start.inputs, |a, b| match (a, b) {
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
/// with the same roots and roles, looking only at what changed: the same
/// units reached (`reached`), and for each reached unit whose activity or
/// inputs were recomputed the same variables active anywhere and the
/// same inputs.
fn same_start(
    program: &Program,
    activity: &ProgramActivity,
    reached: &[UnitId],
    previous: &Carriers,
    changes: &Changes,
) -> bool {
    if reached != previous.reachable {
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
    seeds: ChunkVec<UnitId, BitSet>,
    roots: RootList,
    inputs: ChunkVec<UnitId, Option<Arc<UnitInputs>>>,
}

impl Start {
    /// From the previous closure's tables where it has them: a unit's
    /// seeds are taken again where its activity was recomputed, what the
    /// closure reads of it where that changed, and both where it is
    /// reached or left now and was not before.
    fn new(
        program: &Program,
        activity: &ProgramActivity,
        (roots, reachable): (&RootList, Vec<UnitId>),
        previous: Option<(&Carriers, &Changes)>,
    ) -> Start {
        let n = program.units.len();
        let previous = previous.filter(|(p, _)| p.seeds.len() == n && p.inputs.len() == n);
        let (mut seeds, mut inputs) = match previous {
            Some((p, _)) => (p.seeds.clone(), p.inputs.clone()),
            None => (
                ChunkVec::repeated(BitSet::default(), n),
                ChunkVec::repeated(None, n),
            ),
        };
        let mut reached: IdVec<UnitId, bool> = IdVec::from_elem(false, n);
        for &u in &reachable {
            reached[u] = true;
        }
        // Units reached before and not now start with nothing.
        for &u in previous.iter().flat_map(|(p, _)| &p.reachable) {
            if !reached[u] {
                seeds[u] = BitSet::default();
                inputs[u] = None;
            }
        }
        let before = |u: UnitId| previous.map(|(p, _)| p.inputs[u].is_some());
        for &u in &reachable {
            let new = before(u) != Some(true);
            if new || activity.recomputed.get(u).copied().unwrap_or(true) {
                let now = (activity.activity.get(u).and_then(|a| a.as_ref()))
                    .map(|a| a.active_anywhere())
                    .unwrap_or_default();
                if seeds[u] != now {
                    seeds[u] = now;
                }
            }
            // What the rounds look at, gathered once per unit (or kept):
            // the symbols shared between units (module, host and COMMON
            // variables) and the bindings of actuals to formals at call
            // sites.
            let changed = previous.is_none_or(|(_, changes)| changes.reads_changed(u));
            if new || changed {
                inputs[u] = Some(Arc::new(gather(program, program.unit(u))));
            }
        }
        Start {
            reachable,
            seeds,
            roots: roots.clone(),
            inputs,
        }
    }
}

/// The closure from its start, from `previous`'s facts when the edit kept
/// its roots and reached units.
fn close(program: &Program, start: Start, previous: Option<(&Carriers, &Changes)>) -> Carriers {
    let n = program.units.len();
    let again =
        previous.and_then(|(p, changes)| Some((p, again_from(program, p, changes, &start)?)));
    let Start {
        reachable,
        seeds,
        roots,
        inputs,
    } = start;
    // What a unit starts with: the variables active anywhere in it and a
    // root's independents and dependents, those that can carry one. Only
    // the units started again need their roots' roles: all on a fresh
    // closure, those listed on a restart.
    let wanted = |u: &UnitId| {
        again
            .as_ref()
            .is_none_or(|(_, a)| a.started.binary_search(u).is_ok())
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
    let (sharing, facts, with_d, modules_kept, restart) = match again {
        Some((
            p,
            Again {
                sharing,
                mut facts,
                started,
                first,
                mut rows,
                modules_written,
                retracted,
            },
        )) => {
            for &u in &started {
                start_row(&mut facts, u);
            }
            let written = rounds::run(program, &inputs, &sharing, &mut facts, first);
            rows.extend(written.rows);
            rows.sort_unstable();
            rows.dedup();
            // Only the rows the restart wrote or took from can differ.
            let mut with_d = p.with_d.clone();
            for u in rows {
                let now = facts.with_d.to_set(u.index());
                if with_d[u] != now {
                    with_d[u] = now;
                }
            }
            let modules_kept = !modules_written && written.modules.is_empty();
            let restart = match retracted {
                true => Restart::Retracted,
                false => Restart::Grown,
            };
            (sharing, facts, with_d, modules_kept.then_some(p), restart)
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
            let with_d = ChunkVec::from_fn(n, |u: UnitId| facts.with_d.to_set(u.index()));
            (Arc::new(sharing), facts, with_d, None, Restart::Afresh)
        }
    };
    let commons: BTreeSet<(String, u32)> = (sharing.commons.iter().zip(&facts.commons))
        .filter(|(_, with)| **with)
        .map(|(k, _)| k.clone())
        .collect();
    let module_vars: BTreeSet<(UnitId, SymbolId)> = match modules_kept {
        Some(p) => p.module_vars.clone(),
        None => (0..n)
            .flat_map(|m| {
                (facts.modules.members(m)).map(move |s| (UnitId::new(m), SymbolId::new(s)))
            })
            .collect(),
    };
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
        start: restart,
    }
}

/// How a closure starts again from the previous one's facts.
struct Again {
    /// The previous sharing, patched for the units whose shared symbols
    /// changed.
    sharing: Arc<rounds::Sharing>,
    /// The previous facts, less those retracted.
    facts: rounds::Facts,
    /// The units whose starting facts are set again (sorted): the changed
    /// units and those a fact was retracted from.
    started: Vec<UnitId>,
    /// The units the rounds start from.
    first: Vec<UnitId>,
    /// The rows that may differ from the previous closure's besides those
    /// the rounds write: the retracted and the started.
    rows: Vec<UnitId>,
    /// Whether a module variable's fact was retracted.
    modules_written: bool,
    retracted: bool,
}

/// The previous closure's facts, laid out for this program's units, as
/// the start of this one, when the edit kept the roots and the reached
/// units: the reached units that changed are started again. Where a
/// changed unit lost a starting fact or a rule (shared symbols, call-site
/// bindings, may-alias classes, symbols that carry a derivative), its
/// previous facts and all they derived under the previous rules are
/// retracted first (the over-deletion of delete-and-rederive), and every
/// unit holding a rule that could derive one of them again is visited.
/// A fact not retracted keeps a derivation that uses no changed rule, so
/// it holds in the new closure, and the rounds from there reach the same
/// least closure as a run from the seeds alone. `None` when the closure
/// starts afresh.
fn again_from(
    program: &Program,
    previous: &Carriers,
    changes: &Changes,
    start: &Start,
) -> Option<Again> {
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
    let mut lost = Vec::new();
    let mut shared_changed = Vec::new();
    // The reached units whose inputs or seeds are not the last closure's
    // (found among the chunks the tables do not share).
    let same_inputs = |a: &Option<Arc<UnitInputs>>, b: &Option<Arc<UnitInputs>>| match (a, b) {
        (Some(a), Some(b)) => Arc::ptr_eq(a, b),
        (a, b) => a.is_none() && b.is_none(),
    };
    let mut redone = previous.inputs.ids_unlike(&start.inputs, same_inputs)?;
    redone.extend(previous.seeds.ids_unlike(&start.seeds, BitSet::eq)?);
    redone.sort_unstable();
    redone.dedup();
    for u in redone {
        let (old, new) = (previous.inputs[u].as_ref()?, start.inputs[u].as_ref()?);
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
            lost.push(u);
        }
        if old.shared != new.shared {
            shared_changed.push(u);
        }
        changed.push(u);
    }
    let mut facts = (**facts).clone();
    // Retracted: the facts of the units that lost something, and what
    // they derive under the previous rules (the previous closure holds
    // them all, being closed under those rules).
    let mut gone = facts.none_like();
    for &u in &lost {
        gone.with_d.union_row_of(u.index(), &facts.with_d);
    }
    // A variable active anywhere in a unit that lost nothing starts the
    // new closure: it is kept, and so is what it derives.
    let kept = |x: UnitId, s: SymbolId| {
        start.seeds[x].contains_id(s)
            && (start.inputs[x].as_deref()).is_some_and(|i| i.carried.contains_id(s))
    };
    let mut written = rounds::retract(
        program,
        &previous.inputs,
        sharing,
        &mut gone,
        lost.iter().copied(),
        &kept,
    );
    written.rows.extend(lost.iter().copied());
    facts.remove(&gone, &written);
    // Rows as wide as the units' symbols now are, when one changed.
    let fits = |u: UnitId| {
        let words = program.unit(u).symbols.len().div_ceil(64);
        facts.with_d.row(u.index()).len() == words
    };
    if !changes.body.iter_enumerated().all(|(u, c)| !*c || fits(u)) {
        let widths: Vec<usize> = program.units.iter().map(|u| u.symbols.len()).collect();
        facts.with_d = facts.with_d.relaid(widths.iter().copied())?;
        facts.modules = facts.modules.relaid(widths.iter().copied())?;
    }
    // The units holding a rule that could derive a retracted fact again
    // from one kept: those a retracted variable feeds (started below),
    // and the holders of a retracted module variable or COMMON member
    // whose symbol in it kept its fact.
    let holds = |u: UnitId, linked: &dyn Fn(&SharedSymbol) -> bool| {
        (start.inputs[u].as_deref()).is_some_and(|i| {
            (i.shared.iter())
                .any(|x| linked(x) && facts.with_d.contains(u.index(), x.symbol.index()))
        })
    };
    let mut first: Vec<UnitId> = Vec::new();
    if !written.modules.is_empty() {
        let retracted = |x: &SharedSymbol| {
            x.module
                .is_some_and(|(m, s)| gone.modules.contains(m.index(), s.index()))
        };
        first.extend(rounds::holders(sharing, None).filter(|&u| holds(u, &retracted)));
    }
    for &c in &written.commons {
        let key = sharing.commons.get(c);
        let holders = rounds::holders(sharing, Some(c));
        first.extend(holders.filter(|&u| holds(u, &|x| x.common.as_ref() == key)));
    }
    // COMMON members keep their numbers when shared symbols change.
    let sharing = match shared_changed.is_empty() {
        true => sharing.clone(),
        false => {
            let mut again = (**sharing).clone();
            for &u in &shared_changed {
                let (old, new) = (previous.inputs[u].as_ref()?, start.inputs[u].as_ref()?);
                again.replace(u, &old.shared, &new.shared);
            }
            facts.commons.resize(again.commons.len(), false);
            Arc::new(again)
        }
    };
    let mut started: Vec<UnitId> = changed.iter().chain(&written.rows).copied().collect();
    started.sort_unstable();
    started.dedup();
    first.extend(started.iter().copied());
    Some(Again {
        sharing,
        facts,
        rows: started.clone(),
        first,
        started,
        modules_written: !written.modules.is_empty(),
        retracted: !lost.is_empty(),
    })
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
    use super::Restart;
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
        assert_eq!(after.carriers.restart(), Restart::Grown);
        assert_eq!(scratch.carriers.restart(), Restart::Afresh);
        assert_eq!(with_d(&new, &after, "inner"), ["w"]);
        assert_eq!(after.carriers.with_d, scratch.carriers.with_d);
        assert_eq!(after.carriers.routine, scratch.carriers.routine);
        let mut body: IdVec<UnitId, bool> = IdVec::from_elem(false, old.units.len());
        body[unit(&old, "mid")] = true;
        let changes = Changes::between(&new, &old, body).expect("numbered alike");
        let back = analyse(&old, &req, Some((&after, &changes)));
        assert_eq!(back.carriers.restart(), Restart::Retracted);
        assert_eq!(back.carriers.with_d, before.carriers.with_d);
    }

    /// Five statements, each in one of two forms of one length: a
    /// COMMON member, a module variable, a host variable and call
    /// bindings carry derivatives between the units, or do not. Edits
    /// that take derivatives away retract facts (some of which another
    /// derivation keeps) and those that add them grow the closure; every
    /// closure equals one from scratch.
    fn shared(forms: u32) -> String {
        let pick = |k: u32, yes: &str, no: &str| {
            assert_eq!(yes.len(), no.len());
            match forms & (1 << k) != 0 {
                true => yes.to_string(),
                false => no.to_string(),
            }
        };
        let s = [
            pick(0, "p = x      ", "p = 1.0    "),
            pick(1, "y = y + g  ", "y = y + 1.0"),
            pick(2, "g = u * a  ", "g = 2.0    "),
            pick(3, "w = u      ", "w = 1.0    "),
            pick(4, "f = r * e  ", "f = 3.0    "),
        ];
        format!(
            "module m
  real g
end module m
subroutine top(x, y)
  use m
  real x, y, p, q
  common /c/ p, q
  {}
  call mid(x, y)
  {}
end
subroutine mid(u, v)
  use m
  real u, v, w, a, b
  common /c/ a, b
  call inner()
  {}
  {}
  v = v + w
contains
  subroutine inner()
    w = w * 3.0
  end subroutine inner
end
subroutine other(r, t)
  real, intent(in) :: r
  real, intent(inout) :: t
  real e, f
  common /c/ e, f
  {}
  t = t + f
end
",
            s[0], s[1], s[2], s[3], s[4]
        )
    }

    #[test]
    fn closures_restarted_after_edits_equal_closures_from_scratch() {
        let mut req = request("top", &["x"], &["y"]);
        req.others = true;
        let programs: Vec<Program> = (0..32).map(|f| program(&shared(f))).collect();
        let scratch: Vec<ProgramFacts> = programs.iter().map(|p| analyse(p, &req, None)).collect();
        let mut seen = std::collections::BTreeSet::new();
        for a in 0..32u32 {
            for b in (0..5).map(|k| a ^ (1 << k)).chain([a ^ 31, a ^ 5, a ^ 12]) {
                let (old, new) = (&programs[a as usize], &programs[b as usize]);
                let mut body: IdVec<UnitId, bool> = IdVec::from_elem(false, new.units.len());
                for (k, name) in ["top", "top", "mid", "mid", "other"].iter().enumerate() {
                    if (a ^ b) & (1 << k) != 0 {
                        body[unit(new, name)] = true;
                    }
                }
                let changes = Changes::between(old, new, body).expect("numbered alike");
                let after = analyse(new, &req, Some((&scratch[a as usize], &changes)));
                let fresh = &scratch[b as usize].carriers;
                let c = &after.carriers;
                let what = format!("{a:05b} -> {b:05b} ({:?})", c.restart());
                assert_eq!(c.with_d, fresh.with_d, "{what}");
                assert_eq!(c.routine, fresh.routine, "{what}");
                assert_eq!(c.commons, fresh.commons, "{what}");
                assert_eq!(c.module_vars, fresh.module_vars, "{what}");
                seen.insert(format!("{:?}", c.restart()));
            }
        }
        // (A closure the edit leaves as it was is the previous one.)
        assert!(
            seen.contains("Grown") && seen.contains("Retracted"),
            "both restarts taken: {seen:?}"
        );
    }
}
