//! Interprocedural activity (paper 000 §4.2): Dep summaries bottom-up
//! ([`crate::dep::summarize_all`]), then varied/useful sets top-down over
//! the call graph. Each call site adds its `InVary` and `OutUseful`,
//! translated to the callee's names, to the callee's calling context
//! (`InVary(S) ∪= InVary(I)`, `OutUseful(S) ∪= OutUseful(I)`); a callee
//! is analysed with the union of all its contexts, so one called from an
//! active and an inactive site is active where either makes it so.
//! Recursive components iterate until their contexts stop growing.
//!
//! Contract: units reachable from no root get no result. Roots are given
//! with their independent and dependent slots. A rerun given the previous
//! results and the [`Changes`] since reuses the results of every
//! call-graph component whose units, callees' summaries and interfaces,
//! and entry contexts did not change; the results equal a run from
//! scratch.

use crate::activity::{self, Activity};
use crate::dep::{bind_call, resummarize, space_of, summarize_all, Iface, Space, Summaries};
use crate::incremental::{callers_of, Changes, LazyContexts};
use dfort_ir::bitset::BitSet;
use dfort_ir::callgraph::Callee;
use dfort_ir::chunk_vec::ChunkVec;
use dfort_ir::dp::target;
use dfort_ir::*;
use std::cell::OnceCell;
use std::sync::Arc;

/// What a call adds to its callee's context: the callee, the slots
/// varied at its entry and those useful at its exit.
pub type Contribution = (UnitId, BitSet, BitSet);

/// Activity of every unit that some root reaches, with its calling
/// context (varied at entry, useful at exit), and what a rerun reuses.
pub struct ProgramActivity {
    pub summaries: Summaries,
    pub contexts: ChunkVec<UnitId, Option<Arc<(BitSet, BitSet)>>>,
    pub activity: ChunkVec<UnitId, Option<Arc<Activity>>>,
    /// Per unit: the context the roots and the callers outside its
    /// call-graph component gave it (what a rerun compares).
    pub entry: ChunkVec<UnitId, Option<Arc<(BitSet, BitSet)>>>,
    /// Per unit: what each of its calls adds to its callee's context
    /// (shared, so that a rerun keeps an unchanged unit's by reference).
    pub outgoing: ChunkVec<UnitId, Arc<[Contribution]>>,
    /// Units whose results this run computed (possibly none, for units
    /// no root reaches); the others' were reused.
    pub recomputed: IdVec<UnitId, bool>,
    /// Units whose Dep summary differs from the previous run's (every
    /// unit on a run from scratch).
    pub summary_changed: IdVec<UnitId, bool>,
    /// Roots whose independents take their values after one of their
    /// statements (a root's `after` call) rather than at entry.
    pub seeds: Vec<Seed>,
    /// The roots' own contexts (before their callers' add to them), in
    /// the order given (shared by the reruns with the same roots).
    pub roots: Arc<OwnContexts>,
}

/// The roots' own contexts, in the order given, and where each root's
/// are (built on first use, and kept by the reruns sharing the list: most
/// reruns gather no context).
#[derive(Debug, Default)]
pub struct OwnContexts {
    list: Vec<Contribution>,
    places: std::sync::OnceLock<std::collections::HashMap<UnitId, Vec<usize>>>,
}

impl OwnContexts {
    /// Root `u`'s own context: the union of its entries'.
    fn of(&self, u: UnitId) -> Option<Arc<(BitSet, BitSet)>> {
        let places = self.places.get_or_init(|| {
            let mut m: std::collections::HashMap<UnitId, Vec<usize>> = Default::default();
            for (k, (r, _, _)) in self.list.iter().enumerate() {
                m.entry(*r).or_default().push(k);
            }
            m
        });
        places.get(&u).map(|places| {
            let mut c = (BitSet::default(), BitSet::default());
            for &k in places {
                c.0.union_with(&self.list[k].1);
                c.1.union_with(&self.list[k].2);
            }
            Arc::new(c)
        })
    }
}

/// Independents of a root that take their values after a call: the
/// chain of calls from the root to it (unit, CALL statement; root first,
/// each made once) and the root's independent slots. Each unit of the
/// chain has them varied after its call (the last: after the call named;
/// the others: when the next unit of the chain returns) and not before.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Seed {
    pub root: UnitId,
    pub chain: Vec<(UnitId, StmtId)>,
    pub independents: BitSet,
}

/// The slots of `unit` (its space) holding the root's independents that
/// [`Seed::independents`] names: the root's own, or the same globals.
fn seed_slots(program: &Program, seed: &Seed, unit: UnitId, space: &Space) -> BitSet {
    if unit == seed.root {
        return seed.independents.clone();
    }
    let root = program.unit(seed.root);
    let mut out = BitSet::default();
    for s in seed.independents.ids::<SymbolId>() {
        if let Some(slot) =
            crate::dep::global_key(program, root, s).and_then(|k| space.globals.get(&k))
        {
            out.insert(*slot);
        }
    }
    out
}

/// The callee slot standing for interface variable `i`.
fn callee_slot(callee: &Unit, space: &Space, i: &Iface) -> Option<usize> {
    match i {
        Iface::Formal(k) => callee.args.get(*k as usize).map(|s| s.index()),
        Iface::Global(key) => space.globals.get(key).copied(),
    }
}

pub fn analyze_program(program: &Program, roots: &[(UnitId, BitSet, BitSet)]) -> ProgramActivity {
    let roots = || roots.iter().map(|(u, i, d)| (*u, i, d)).collect();
    analyze_program_with(program, &roots, &[], None, false)
}

/// A root with its independents (varied at entry) and dependents
/// (useful at exit), borrowed from its roles.
pub type RootContext<'a> = (UnitId, &'a BitSet, &'a BitSet);

/// [`analyze_program`] reusing, for every call-graph component whose
/// units, callees and entry contexts are unchanged, the previous run's
/// results ([`crate::incremental`]). The roots are listed only when a
/// run reads them (a rerun with `same_roots` does not).
pub fn analyze_program_with<'r>(
    program: &Program,
    roots: &dyn Fn() -> Vec<RootContext<'r>>,
    seeds: &[Seed],
    reuse: Option<(&ProgramActivity, &Changes)>,
    same_roots: bool,
) -> ProgramActivity {
    let n = program.units.len();
    let reuse =
        reuse.filter(|(p, c)| p.activity.len() == n && c.body.len() == n && p.seeds == seeds);
    let (summaries, summary_changed) = match reuse {
        Some((prev, changes)) => {
            let (sums, redone) =
                resummarize(program, &prev.summaries, &changes.summary_seeds(program));
            // Only the summaries recomputed can differ.
            let mut changed = IdVec::from_elem(false, n);
            for u in redone {
                changed[u] = sums[u] != prev.summaries[u];
            }
            (sums, changed)
        }
        None => (summarize_all(program), IdVec::from_elem(true, n)),
    };
    // Per unit: whether a callee's summary changed (a rerun's are few).
    let callee_summary_changed = match reuse {
        Some(_) => callers_of(program, &summary_changed),
        None => IdVec::from_elem(true, n),
    };
    let spaces: IdVec<UnitId, OnceCell<Box<Space>>> = IdVec::from_fn(n, |_| OnceCell::new());
    let space = |u: UnitId| {
        &**spaces[u].get_or_init(|| Box::new(space_of(program, program.unit(u), &summaries)))
    };
    // Per unit of a chain: the call after which its slots are seeded.
    let mut seeded: std::collections::HashMap<UnitId, (StmtId, BitSet)> = Default::default();
    for seed in seeds {
        for &(u, at) in &seed.chain {
            let slots = seed_slots(program, seed, u, space(u));
            seeded.insert(u, (at, slots));
        }
    }
    let seed_of = |u: UnitId| seeded.get(&u).map(|(at, slots)| (*at, slots));
    // Shared: a rerun keeps an unchanged unit's by reference.
    type Contexts = ChunkVec<UnitId, Option<Arc<(BitSet, BitSet)>>>;
    let listed: OnceCell<Vec<RootContext<'r>>> = OnceCell::new();
    let roots = || listed.get_or_init(roots).as_slice();
    // The roots' own contexts, kept from the last run when the same.
    let same_roots = |prev: &ProgramActivity| {
        same_roots
            || prev.roots.list.len() == roots().len()
                && prev
                    .roots
                    .list
                    .iter()
                    .zip(roots())
                    .all(|(a, b)| a.0 == b.0 && a.1 == *b.1 && a.2 == *b.2)
    };
    let own: Arc<OwnContexts> = match reuse.filter(|(prev, _)| same_roots(prev)) {
        Some((prev, _)) => prev.roots.clone(),
        None => Arc::new(OwnContexts {
            list: (roots().iter())
                .map(|(u, i, d)| (*u, (*i).clone(), (*d).clone()))
                .collect(),
            places: Default::default(),
        }),
    };
    let own_context = |u: UnitId| own.of(u);
    // With the same roots, a unit whose callers all contribute what they
    // did last time has last time's context: only the contexts of the
    // callees of recomputed units whose contributions changed are
    // gathered again (from their callers' contributions), instead of
    // every call adding its contribution on every run.
    let lazy = reuse.filter(|(prev, _)| Arc::ptr_eq(&prev.roots, &own));
    // A lazy rerun visits the components of the units whose own inputs
    // changed and of those gathering their contexts again; any other
    // visits every component (the callers add their contexts eagerly).
    let stale = lazy.map(|(_, changes)| {
        (program.units.indices()).filter(|&u| changes.reads_changed(u) || callee_summary_changed[u])
    });
    let mut dirty = LazyContexts::new(program, lazy.map(|(_, c)| c), stale.into_iter().flatten());
    // A rerun starts from the last run's tables and writes only the
    // units it recomputes (those of every component kept are the last
    // run's, contexts included when they are gathered lazily).
    let mut contexts: Contexts = match lazy {
        Some((prev, _)) => prev.contexts.clone(),
        None => {
            let mut c = Contexts::from_elem(None, n);
            for (u, ind, dep) in roots() {
                let x = Arc::make_mut(c[*u].get_or_insert_with(Default::default));
                x.0.union_with(ind);
                x.1.union_with(dep);
            }
            c
        }
    };
    let mut entry: Contexts = match reuse {
        Some((prev, _)) => prev.entry.clone(),
        None => Contexts::from_elem(None, n),
    };
    let mut outgoing: ChunkVec<UnitId, Arc<[Contribution]>> = match reuse {
        Some((prev, _)) => prev.outgoing.clone(),
        None => ChunkVec::from_elem(Arc::from(Vec::new()), n),
    };
    let mut activity: ChunkVec<UnitId, Option<Arc<Activity>>> = match reuse {
        Some((prev, _)) => prev.activity.clone(),
        None => ChunkVec::from_elem(None, n),
    };
    let mut recomputed: IdVec<UnitId, bool> = IdVec::from_elem(false, n);
    let add = |contexts: &mut Contexts, (c, iv, ou): &(UnitId, BitSet, BitSet)| {
        if let Some(ctx) = &contexts[*c] {
            // Copied only when it grows.
            if iv.is_subset(&ctx.0) && ou.is_subset(&ctx.1) {
                return false;
            }
        }
        let ctx = Arc::make_mut(contexts[*c].get_or_insert_with(Default::default));
        ctx.0.union_with(iv) | ctx.1.union_with(ou)
    };
    // Callers before callees.
    while let Some(k) = dirty.next_component() {
        let scc = &program.call_graph.sccs[k];
        let same_entry = dirty.entries(scc, lazy.is_some(), &mut entry, |u, gather| {
            if !gather {
                return contexts[u].clone();
            }
            // The roots' own and what callers outside the component
            // contribute (those inside add theirs as it is solved).
            let mut ctx = own_context(u);
            LazyContexts::gather(program, scc, u, &outgoing, |(_, iv, ou)| {
                let x = Arc::make_mut(ctx.get_or_insert_with(Default::default));
                x.0.union_with(iv);
                x.1.union_with(ou);
            });
            if contexts[u] != ctx {
                contexts[u] = ctx.clone();
            }
            ctx
        });
        if let Some((prev, changes)) = reuse {
            let unchanged = scc.iter().all(|&u| {
                (same_entry || prev.entry[u] == entry[u])
                    && !changes.reads_changed(u)
                    && !callee_summary_changed[u]
            });
            if unchanged {
                if let (Some((prev, _)), false) = (lazy, same_entry) {
                    // The gathered entries equal the last run's: the
                    // contexts with the component's own calls are too.
                    for &u in scc {
                        if contexts[u] != prev.contexts[u] {
                            contexts[u] = prev.contexts[u].clone();
                        }
                    }
                }
                if lazy.is_none() {
                    // With what the component's own calls added.
                    for &u in scc {
                        for o in outgoing[u].clone().iter() {
                            add(&mut contexts, o);
                        }
                    }
                }
                continue;
            }
        }
        if same_entry {
            for &u in scc {
                contexts[u] = entry[u].clone();
            }
        }
        for &u in scc {
            recomputed[u] = true;
            // A unit no context reaches any more has no results.
            if activity[u].is_some() {
                activity[u] = None;
            }
            if !outgoing[u].is_empty() {
                outgoing[u] = Arc::from(Vec::new());
            }
        }
        for _round in 0..64 {
            let mut changed = false;
            for &u in scc {
                let Some(ctx) = contexts[u].clone() else {
                    continue;
                };
                let (ind, dep) = &*ctx;
                let unit = program.unit(u);
                if !unit.is_procedure() {
                    continue;
                }
                let act = activity::analyze(program, unit, &summaries, ind, dep, seed_of(u));
                let out = contributions(program, unit, &act, &summaries, &space);
                for o in &out {
                    // Lazily, a callee outside the component gathers it.
                    if lazy.is_none() || scc.contains(&o.0) {
                        changed |= add(&mut contexts, o) && scc.contains(&o.0);
                    }
                }
                outgoing[u] = Arc::from(out);
                activity[u] = Some(Arc::new(act));
            }
            if !changed {
                break;
            }
        }
        // Callees whose contributions changed gather their context again.
        if let Some((prev, _)) = lazy {
            for &u in scc {
                dirty.compare(program, &outgoing[u], &prev.outgoing[u]);
            }
        }
    }
    ProgramActivity {
        summaries,
        contexts,
        activity,
        entry,
        outgoing,
        recomputed,
        summary_changed,
        seeds: seeds.to_vec(),
        roots: own,
    }
}

/// What each call of `unit` adds to its callee's context: the callee
/// slots whose actuals are varied before the call (`InVary`) and useful
/// after it (`OutUseful`).
fn contributions<'s>(
    program: &Program,
    unit: &Unit,
    act: &Activity,
    summaries: &Summaries,
    space: &impl Fn(UnitId) -> &'s Space,
) -> Vec<(UnitId, BitSet, BitSet)> {
    let mut out = Vec::new();
    for &site in &program.call_graph.calls_from[unit.id] {
        let site = &program.call_graph.sites[site];
        let Callee::Unit(c) = site.callee else {
            continue;
        };
        let Some(sum) = summaries[c].as_ref() else {
            continue;
        };
        let callee = program.unit(c);
        let st = unit.stmt(site.stmt);
        let i = site.stmt;
        let mut in_vary = BitSet::default();
        let mut out_useful = BitSet::default();
        match &st.kind {
            StmtKind::Call { args, .. } if !site.function => {
                let binds = bind_call(program, unit, space(unit.id), summaries, c, args);
                for (iface, b) in sum.iface.iter().zip(&binds) {
                    let Some(slot) = callee_slot(callee, space(c), iface) else {
                        continue;
                    };
                    if b.inputs.intersects(&act.varied_before[i]) {
                        in_vary.insert(slot);
                    }
                    if b.output.is_some_and(|o| act.useful_after[i].contains(o)) {
                        out_useful.insert(slot);
                    }
                }
            }
            StmtKind::Assign { lhs, rhs } if site.function => {
                // The references to `c` of the right-hand side, each like
                // a CALL at the statement (its arguments and the globals
                // it reads varied before, what it writes useful after);
                // the result is useful when the target is.
                let useful_target =
                    target(lhs).is_some_and(|(t, _)| act.useful_after[i].contains_id(t));
                // Another reference of the statement may run in between:
                // what is varied or useful on either side of it counts.
                let mut varied = act.varied_before[i].clone();
                varied.union_with(&act.varied_after[i]);
                let mut useful = act.useful_after[i].clone();
                useful.union_with(&act.useful_before[i]);
                for (f, args) in dfort_ir::queries::function_references(rhs) {
                    if f != c {
                        continue;
                    }
                    let binds = bind_call(program, unit, space(unit.id), summaries, c, args);
                    for (iface, b) in sum.iface.iter().zip(&binds) {
                        let Some(slot) = callee_slot(callee, space(c), iface) else {
                            continue;
                        };
                        if b.inputs.intersects(&varied) {
                            in_vary.insert(slot);
                        }
                        if b.output.is_some_and(|o| useful.contains(o)) {
                            out_useful.insert(slot);
                        }
                    }
                }
                // A reference inside another's actual feeds that one,
                // whose changes to its arguments and globals may be
                // useful whatever the target is (fuzzer, seed 4200, case
                // 161): its result counts as useful.
                let feeds_another = nested_references(rhs).contains(&c);
                if let (true, Some(r)) = (useful_target || feeds_another, callee.result) {
                    out_useful.insert_id(r);
                }
            }
            _ => {
                // A function reference inside an expression: its
                // arguments may be varied, its result is useful when the
                // statement's target is.
                let useful_target = match &st.kind {
                    StmtKind::Assign { lhs, .. } => {
                        target(lhs).is_some_and(|(t, _)| act.useful_after[i].contains_id(t))
                    }
                    _ => false,
                };
                let mut inputs = BitSet::default();
                for e in st.kind.exprs() {
                    dfort_ir::dp::dp(unit, e, &mut inputs);
                }
                if inputs.intersects(&act.varied_before[i]) {
                    for a in &callee.args {
                        if dfort_ir::dp::differentiable(callee, *a) {
                            in_vary.insert_id(*a);
                        }
                    }
                }
                if let (true, Some(r)) = (useful_target, callee.result) {
                    out_useful.insert_id(r);
                }
            }
        }
        out.push((c, in_vary, out_useful));
    }
    out
}

/// The procedures referenced inside the actual arguments of another
/// procedure reference of `e` (`g` of `f(g(x), y)`).
fn nested_references(e: &Expr) -> Vec<UnitId> {
    let mut out = Vec::new();
    for (_, args) in dfort_ir::queries::function_references(e) {
        for a in args {
            out.extend(
                dfort_ir::queries::function_references(&a.value)
                    .into_iter()
                    .map(|(f, _)| f),
            );
        }
    }
    out
}

/// The default roots: every procedure nobody calls, with the roles its
/// directives or intents give ([`crate::roles::roles`]).
pub fn default_roots(program: &Program) -> Vec<(UnitId, BitSet, BitSet)> {
    crate::roots::uncalled(program)
        .map(|u| {
            let r = crate::roles::roles(u, None);
            (u.id, r.independents, r.dependents)
        })
        .collect()
}
