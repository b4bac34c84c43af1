//! What a rerun of the interprocedural analyses may reuse from the
//! previous run. Paper 000 computes Dep and TBR summaries bottom-up over
//! the call graph (§4.1, §5.1) and calling contexts top-down (§4.2,
//! §5.2): a unit's results are a function of its own IR, of what it reads
//! of its callees (their summaries and interfaces) and of its calling
//! context. A unit none of whose inputs changed keeps its previous
//! results; [`crate::interproc`] and [`crate::tbr`] recompute the others,
//! visiting only the call-graph components that hold them or that their
//! changed results reach ([`Pending`]).
//!
//! Contract: [`Changes`] relates a new program to the one the previous
//! results were computed on, with the same unit numbering. `body[u]` is
//! false only when unit `u` is identical in both programs (its IR after
//! linking, call targets included); `interface[u]` is true when what a
//! caller reads of `u` changed: its name, kind, the dummy arguments'
//! names, types, intents and ranks, or the function result's type.

use dfort_ir::chunk_vec::ChunkVec;
use dfort_ir::{IdVec, Program, Unit, UnitId};
use std::collections::BTreeSet;
use std::sync::Arc;

/// Which units of a program changed since the previous analysis.
#[derive(Clone, Debug)]
pub struct Changes {
    pub body: IdVec<UnitId, bool>,
    pub interface: IdVec<UnitId, bool>,
    /// Per unit: whether its call-graph component has other members than
    /// before (an edit broke or closed a recursive cycle). Its results
    /// were solved with the old members' contributions inside the
    /// component and its entry context without them: both are redone.
    pub component: IdVec<UnitId, bool>,
    /// Per unit: whether it, its component or the interface of a unit it
    /// calls changed (what [`Changes::reads_changed`] answers, marked from
    /// the changed interfaces' callers once instead of walking every
    /// unit's calls in every pass).
    reads: IdVec<UnitId, bool>,
}

impl Changes {
    /// The changes from `old` to `new`, given which units' IR changed.
    /// `None` when the programs are not numbered alike (then nothing can
    /// be reused).
    pub fn between(old: &Program, new: &Program, body: IdVec<UnitId, bool>) -> Option<Changes> {
        if old.units.len() != new.units.len() || body.len() != new.units.len() {
            return None;
        }
        // (The units read only where the body changed.)
        let interface = body
            .iter_enumerated()
            .map(|(u, changed)| *changed && !same_interface(&old.units[u], &new.units[u]))
            .collect();
        // A relink that kept the call graph's components shares them.
        let component = if Arc::ptr_eq(&old.call_graph.sccs, &new.call_graph.sccs) {
            IdVec::from_elem(false, body.len())
        } else {
            let (was, is) = (components(old), components(new));
            was.iter().zip(is.iter()).map(|(a, b)| a != b).collect()
        };
        Some(Changes::with_reads(new, body, interface, component))
    }

    fn with_reads(
        program: &Program,
        body: IdVec<UnitId, bool>,
        interface: IdVec<UnitId, bool>,
        component: IdVec<UnitId, bool>,
    ) -> Changes {
        let mut reads: IdVec<UnitId, bool> = body
            .iter()
            .zip(component.iter())
            .map(|(b, c)| *b || *c)
            .collect();
        for (c, _) in interface.iter_enumerated().filter(|(_, i)| **i) {
            mark_callers(program, c, &mut reads);
        }
        Changes {
            body,
            interface,
            component,
            reads,
        }
    }

    /// No unit of `program` changed.
    pub fn unchanged(program: &Program) -> Changes {
        let n = program.units.len();
        Changes {
            body: IdVec::from_elem(false, n),
            interface: IdVec::from_elem(false, n),
            component: IdVec::from_elem(false, n),
            reads: IdVec::from_elem(false, n),
        }
    }

    /// The units whose Dep summary must be recomputed: changed ones and
    /// callers of units whose interface changed.
    pub fn summary_seeds(&self, program: &Program) -> Vec<UnitId> {
        program
            .units
            .indices()
            .filter(|&u| self.reads_changed(u))
            .collect()
    }

    /// Whether unit `u` itself or its component changed, or a callee
    /// whose interface changed.
    pub fn reads_changed(&self, u: UnitId) -> bool {
        self.reads.get(u).copied().unwrap_or(true)
    }
}

/// The units that call `c`, once per call site.
pub fn callers(program: &Program, c: UnitId) -> impl Iterator<Item = UnitId> + '_ {
    let graph = &program.call_graph;
    (graph.calls_to.get(c).into_iter().flatten()).map(|&s| graph.sites[s].caller)
}

/// Sets `marks` of every unit that calls `c`.
pub fn mark_callers(program: &Program, c: UnitId, marks: &mut IdVec<UnitId, bool>) {
    for caller in callers(program, c) {
        if let Some(m) = marks.get_mut(caller) {
            *m = true;
        }
    }
}

/// Per unit: whether it calls a unit marked in `marked`.
pub fn callers_of(program: &Program, marked: &IdVec<UnitId, bool>) -> IdVec<UnitId, bool> {
    let mut out = IdVec::from_elem(false, marked.len());
    for (c, _) in marked.iter_enumerated().filter(|(_, m)| **m) {
        mark_callers(program, c, &mut out);
    }
    out
}

/// Per unit, its call-graph component as (least member, size): two
/// programs give a unit the same pair exactly when its component has the
/// same members in both.
fn components(program: &Program) -> IdVec<UnitId, (UnitId, usize)> {
    let mut of = IdVec::from_elem((UnitId(0), 0), program.units.len());
    for scc in program.call_graph.sccs.iter() {
        let least = scc.iter().copied().min().unwrap_or(UnitId(0));
        for &u in scc {
            of[u] = (least, scc.len());
        }
    }
    of
}

/// Whether a caller reads the same of `a` and `b`. What callers keep of
/// a callee — the contexts they give it, its summary's rows — is indexed
/// by the callee's symbol ids (its formals', its globals', and past its
/// symbols the slots of globals only its callees declare), so the symbol
/// table must be the same, name for name, id for id (an edit that turned
/// a declaration into a continuation renumbered every symbol after it;
/// robustness test, case 45f01bcc).
pub fn same_interface(a: &Unit, b: &Unit) -> bool {
    if a.symbols.len() != b.symbols.len()
        || a.symbols
            .iter()
            .zip(&b.symbols)
            .any(|(x, y)| x.name != y.name)
    {
        return false;
    }
    let same_symbol = |x: dfort_ir::SymbolId, y: dfort_ir::SymbolId| {
        let (x, y) = (a.symbol(x), b.symbol(y));
        x.name == y.name && x.ty == y.ty && x.intent == y.intent && x.rank() == y.rank()
    };
    a.name == b.name
        && a.kind == b.kind
        && a.args.len() == b.args.len()
        && a.args.iter().zip(&b.args).all(|(x, y)| same_symbol(*x, *y))
        && match (a.result, b.result) {
            (Some(x), Some(y)) => same_symbol(x, y),
            (None, None) => true,
            _ => false,
        }
}

/// What one call adds to its callee's calling context, naming the callee
/// (the contributions [`crate::interproc`] and [`crate::tbr`] propagate
/// top-down, paper 000 §4.2 and §5.2).
pub trait Contribution {
    fn callee(&self) -> UnitId;
}

impl<A> Contribution for (UnitId, A) {
    fn callee(&self) -> UnitId {
        self.0
    }
}

impl<A, B> Contribution for (UnitId, A, B) {
    fn callee(&self) -> UnitId {
        self.0
    }
}

/// The call-graph components a pass visits, by their positions in
/// `sccs` (callees first), each once: every one in a first run; in a
/// rerun, those of the units it starts from and those added as it goes
/// (a component whose results changed adds its callers' or its
/// callees'). A rerun after an edit then visits the components near the
/// change, not the 25,000 of a large workspace. A pass takes them in one
/// direction only, and adds only components still ahead of it.
pub enum Pending {
    /// Every component not yet taken: positions `front..back`.
    Every { front: usize, back: usize },
    /// The components added and not yet taken.
    Added(BTreeSet<usize>),
}

impl Pending {
    /// Every component of `program`.
    pub fn every(program: &Program) -> Pending {
        Pending::Every {
            front: 0,
            back: program.call_graph.sccs.len(),
        }
    }

    /// The components of `units` (every one when the call graph does not
    /// place every unit).
    pub fn of(program: &Program, units: impl IntoIterator<Item = UnitId>) -> Pending {
        if program.call_graph.position.len() != program.units.len() {
            return Pending::every(program);
        }
        let mut pending = Pending::Added(BTreeSet::new());
        for u in units {
            pending.add(program, u);
        }
        pending
    }

    /// Adds the component of unit `u` (a no-op when every one is
    /// visited).
    pub fn add(&mut self, program: &Program, u: UnitId) {
        if let (Pending::Added(set), Some(k)) = (self, program.call_graph.position.get(u)) {
            set.insert(*k);
        }
    }

    /// Marks each caller of unit `u` (`mark`) and adds the components of
    /// those outside component `k`, the one a bottom-up pass has just
    /// done: a unit whose summary changed sends its callers round again.
    pub fn add_callers(
        &mut self,
        program: &Program,
        u: UnitId,
        k: usize,
        mut mark: impl FnMut(UnitId),
    ) {
        for c in callers(program, u) {
            mark(c);
            if program.call_graph.position[c] != k {
                self.add(program, c);
            }
        }
    }

    /// The next component, callees first.
    pub fn callees_first(&mut self) -> Option<usize> {
        match self {
            Pending::Every { front, back } => (front < back).then(|| {
                *front += 1;
                *front - 1
            }),
            Pending::Added(set) => set.pop_first(),
        }
    }

    /// The next component, callers first.
    pub fn callers_first(&mut self) -> Option<usize> {
        match self {
            Pending::Every { front, back } => (front < back).then(|| {
                *back -= 1;
                *back
            }),
            Pending::Added(set) => set.pop_last(),
        }
    }
}

/// Calling contexts gathered lazily in a rerun: a unit whose callers all
/// contribute what they did in the previous run has the previous run's
/// entry context, so only the callees of recomputed units whose
/// contributions changed gather theirs again (from their callers'
/// contributions), instead of every call adding its contribution on
/// every run. Components are visited callers first ([`LazyContexts::next_component`]):
/// in a rerun, those of the units whose inputs changed and those that
/// gather their contexts again.
pub struct LazyContexts {
    dirty: IdVec<UnitId, bool>,
    pending: Pending,
    /// The component taken last.
    current: usize,
}

impl LazyContexts {
    /// For `program`; in a rerun (`changes`), every unit whose component
    /// changed gathers its context again, and the components visited are
    /// those of `stale` (the units whose own inputs changed) and those
    /// that gather their contexts again. A first run visits every one.
    pub fn new(
        program: &Program,
        changes: Option<&Changes>,
        stale: impl IntoIterator<Item = UnitId>,
    ) -> LazyContexts {
        let n = program.units.len();
        let Some(changes) = changes else {
            return LazyContexts {
                dirty: IdVec::from_elem(false, n),
                pending: Pending::every(program),
                current: usize::MAX,
            };
        };
        let dirty = changes.component.clone();
        let moved = dirty.iter_enumerated().filter(|(_, d)| **d).map(|(u, _)| u);
        LazyContexts {
            pending: Pending::of(program, moved.chain(stale)),
            dirty,
            current: usize::MAX,
        }
    }

    /// The next component to visit, callers first.
    pub fn next_component(&mut self) -> Option<usize> {
        let k = self.pending.callers_first()?;
        self.current = k;
        Some(k)
    }

    /// Whether a unit of `scc` must gather its context again.
    pub fn any_dirty(&self, scc: &[UnitId]) -> bool {
        scc.iter().any(|&u| self.dirty[u])
    }

    /// Sets the entry context of each unit of `scc` in `entry`: in a
    /// rerun (`rerun`: `entry` holds the last run's entries) the last
    /// run's, left as they are, when no caller's contribution to the
    /// component changed, else `context(u, true)`, gathered from the
    /// callers; in a first run `context(u, false)`, what the callers
    /// added eagerly. Returns whether the entries are the last run's.
    pub fn entries<C: Clone>(
        &self,
        scc: &[UnitId],
        rerun: bool,
        entry: &mut ChunkVec<UnitId, C>,
        mut context: impl FnMut(UnitId, bool) -> C,
    ) -> bool {
        if rerun && !self.any_dirty(scc) {
            return true;
        }
        for &u in scc {
            entry[u] = context(u, rerun);
        }
        false
    }

    /// Marks dirty the callees of a unit of the component taken last
    /// whose contributions went from `old` to `new` (those of both, when
    /// they differ), and visits their components.
    pub fn compare<T: Contribution + PartialEq>(
        &mut self,
        program: &Program,
        new: &Arc<[T]>,
        old: &Arc<[T]>,
    ) {
        if Arc::ptr_eq(new, old) || new[..] == old[..] {
            return;
        }
        for c in new.iter().chain(old.iter()) {
            self.dirty[c.callee()] = true;
            // Callees below it only: its own component is done.
            if program.call_graph.position.get(c.callee()) < Some(&self.current) {
                self.pending.add(program, c.callee());
            }
        }
    }

    /// Calls `add` with what each caller of `u` outside `scc` contributes
    /// to it (`outgoing`, per caller, final for this run: callers come
    /// first), each caller once.
    pub fn gather<T: Contribution>(
        program: &Program,
        scc: &[UnitId],
        u: UnitId,
        outgoing: &ChunkVec<UnitId, Arc<[T]>>,
        mut add: impl FnMut(&T),
    ) {
        let graph = &program.call_graph;
        let mut callers: Vec<UnitId> = graph.calls_to[u]
            .iter()
            .map(|&i| graph.sites[i].caller)
            .filter(|c| !scc.contains(c))
            .collect();
        callers.sort();
        callers.dedup();
        for c in callers {
            outgoing[c]
                .iter()
                .filter(|o| o.callee() == u)
                .for_each(&mut add);
        }
    }
}
