//! The call graph over all units of all files: one site per CALL statement
//! and per user-function reference, with the binding of each actual
//! argument to the callee's formal, and the strongly connected components
//! (recursion) in bottom-up order (callees before callers), which is the
//! order interprocedural analyses summarise units in.

use crate::chunk_vec::ChunkVec;
use crate::idx::{IdVec, Idx};
use crate::ir::*;
use std::collections::BTreeSet;
use std::sync::Arc;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Callee {
    Unit(UnitId),
    /// No source: a library routine, an intrinsic subroutine or a dummy
    /// procedure. The name is in [`CallSite::name`].
    External,
}

/// What an actual argument is, as far as aliasing with the formal goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Actual {
    /// A whole variable: the formal is an alias of it.
    Var(SymbolId),
    /// An element or section of an array variable: the formal aliases part
    /// of it.
    Part(SymbolId),
    /// Any other expression: passed by value (a temporary).
    Value,
}

#[derive(Clone, Debug)]
pub struct Binding {
    /// Position among the actual arguments.
    pub arg_index: usize,
    /// The callee's dummy argument, when the callee is known.
    pub formal: Option<SymbolId>,
    pub actual: Actual,
}

#[derive(Clone, Debug)]
pub struct CallSite {
    pub caller: UnitId,
    pub stmt: StmtId,
    pub span: Span,
    /// Lower-case name as written.
    pub name: std::sync::Arc<str>,
    pub callee: Callee,
    /// A function reference inside an expression (not a CALL).
    pub function: bool,
    /// Shared, like the name: a relink copies an unchanged unit's sites.
    pub bindings: std::sync::Arc<[Binding]>,
    /// The callee's number of dummy arguments (0 for an external
    /// procedure). Kept with the site, which is found again whenever its
    /// callee changes, so that checking every site's argument count reads
    /// no unit.
    pub callee_args: usize,
}

impl CallSite {
    /// A number no site has (an edit removed the site of `caller` that
    /// had it): it calls nothing, binds nothing and is in no list.
    fn vacant(caller: UnitId) -> CallSite {
        CallSite {
            caller,
            stmt: StmtId::new(0),
            span: Span::default(),
            name: Arc::from(""),
            callee: Callee::External,
            function: false,
            bindings: Arc::from(Vec::new()),
            callee_args: 0,
        }
    }

    /// Whether the site gives a unit more arguments than it has dummies.
    pub fn overfull(&self) -> bool {
        matches!(self.callee, Callee::Unit(_)) && self.bindings.len() > self.callee_args
    }
}

/// Site numbers grouped by unit: the numbers of unit `u` are `lists[u]`,
/// in the order of its statements (ascending in a graph built from
/// scratch). Reads like an `IdVec<UnitId, Vec<usize>>` (`lists[u]`,
/// `lists.get(u)`); a copy shares its lists in chunks, so patching the
/// lists of a few units copies only theirs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SiteLists {
    lists: ChunkVec<UnitId, Arc<[usize]>>,
}

impl SiteLists {
    /// The sites of `sites` grouped by the unit `key` gives each (none:
    /// the site is in no list), for units below `n`.
    fn grouped(
        n: usize,
        sites: &ChunkVec<usize, CallSite>,
        key: impl Fn(&CallSite) -> Option<UnitId>,
    ) -> SiteLists {
        let mut lists: Vec<Vec<usize>> = vec![Vec::new(); n];
        for (i, s) in sites.iter().enumerate() {
            if let Some(u) = key(s).filter(|u| u.index() < n) {
                lists[u.index()].push(i);
            }
        }
        SiteLists {
            lists: lists.into_iter().map(Arc::from).collect(),
        }
    }

    /// The site numbers of unit `u`.
    pub fn get(&self, u: UnitId) -> Option<&[usize]> {
        self.lists.get(u).map(|l| &l[..])
    }

    /// How many units there are lists for.
    pub fn len(&self) -> usize {
        self.lists.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn set(&mut self, u: UnitId, list: Vec<usize>) {
        self.lists[u] = list.into();
    }
}

impl std::ops::Index<UnitId> for SiteLists {
    type Output = [usize];
    fn index(&self, u: UnitId) -> &[usize] {
        match self.get(u) {
            Some(l) => l,
            None => panic!("unit {} out of {} lists", u.index(), self.len()),
        }
    }
}

/// The components of the call graph, bottom-up.
#[derive(Clone, Debug, Default)]
struct Components {
    /// Strongly connected components, callees before callers.
    sccs: Vec<Vec<UnitId>>,
    /// Per unit: whether it can call itself (directly or through others).
    recursive: IdVec<UnitId, bool>,
    /// Per unit: the position of its component in `sccs`.
    position: IdVec<UnitId, usize>,
}

/// Built from scratch, sites are numbered in the order of their callers
/// (a unit's sites in statement order); a relink keeps the numbers of
/// the sites of the units it did not change, and shares the indexes and
/// components with the graph it built this one from when its edits keep
/// them ([`CallGraph::build_reusing`]). Each unit's list is in statement
/// order and each callee's in the order of its callers either way.
#[derive(Clone, Debug, Default)]
pub struct CallGraph {
    /// Shared in chunks with the graph a relink patched it from.
    pub sites: ChunkVec<usize, CallSite>,
    /// Site indices per calling unit.
    pub calls_from: Arc<SiteLists>,
    /// Site indices per called unit.
    pub calls_to: Arc<SiteLists>,
    /// Strongly connected components, callees before callers.
    pub sccs: Arc<Vec<Vec<UnitId>>>,
    /// Per unit: whether it can call itself (directly or through others).
    pub recursive: Arc<IdVec<UnitId, bool>>,
    /// Per unit: the position of its component in `sccs`.
    pub position: Arc<IdVec<UnitId, usize>>,
    /// The sites giving a unit more arguments than it has dummies, in
    /// order ([`CallSite::overfull`]): patched with the sites an edit
    /// finds again, so that checking argument counts reads no other.
    pub overfull: Arc<Vec<usize>>,
    /// Site numbers an edit left unused ([`CallSite::vacant`]), taken
    /// again by the sites a later edit adds.
    vacant: Arc<Vec<usize>>,
}

impl CallGraph {
    pub fn build(units: &crate::Units) -> CallGraph {
        CallGraph::build_reusing(units, None)
    }

    /// [`CallGraph::build`], taking the sites of a unit from `previous`
    /// (the units and call graph of the program before an edit) when
    /// neither the unit nor any unit it calls changed (the same `Arc`):
    /// its statements, and its callees' formals its bindings name, are
    /// then those the old sites were found in. An edit of one routine no
    /// longer walks every expression of the workspace.
    ///
    /// With the same units as `previous`: when every changed unit has as
    /// many sites as before calling the same units, the site numbers,
    /// indexes and components are `previous`'s, shared; otherwise the
    /// other units' sites keep their numbers and the changed units' sites
    /// are numbered again ([`CallGraph::renumbered`]), and the components are `previous`'s when the calls an edit added or
    /// removed keep them (a call removed between two components, or
    /// added from a component to one below it): then `sccs` is still an
    /// order callees-first, though not always the one a build from
    /// scratch finds. Otherwise the components are found again.
    pub fn build_reusing(
        units: &crate::Units,
        previous: Option<(&crate::Units, &CallGraph)>,
    ) -> CallGraph {
        let n = units.len();
        let previous = previous.filter(|(old_units, old)| old.calls_from.len() == old_units.len());
        // The units whose sites are found again, with them.
        let stale = previous.map(|(old_units, old)| Self::stale_sites(units, old_units, old));
        let found: Vec<(UnitId, Vec<CallSite>)> = units
            .indices()
            .filter(|&u| stale.as_ref().is_none_or(|s| s[u.index()]))
            .map(|u| (u, Self::sites_of(units, &units[u])))
            .collect();
        let changed: Vec<UnitId> = found.iter().map(|(u, _)| *u).collect();
        let same = previous.filter(|(old_units, _)| old_units.len() == n);
        if let Some((_, old)) = same {
            if let Some(g) = Self::patched(old, &found) {
                return g;
            }
        }
        // Otherwise, with as many units: the changed units' sites take
        // their old numbers, then numbers left vacant, then new ones; the
        // other sites keep theirs. From scratch when the vacant numbers
        // would outnumber the sites.
        let renumbered = same.and_then(|(_, old)| Self::renumbered(old, &found));
        let patched = renumbered.is_some();
        let (sites, calls_from, calls_to, vacant) = match renumbered {
            Some(r) => r,
            None => {
                // Sites in the order of their callers: a changed unit's
                // found ones, an unchanged unit's old ones.
                let mut found_at = found.iter().peekable();
                let mut all = Vec::new();
                for u in units.indices() {
                    match found_at.next_if(|(f, _)| *f == u) {
                        Some((_, mine)) => all.extend(mine.iter().cloned()),
                        None => {
                            let (_, old) = previous.expect("sites kept only from a previous graph");
                            let ids = old.calls_from.get(u).unwrap_or(&[]);
                            all.extend(ids.iter().map(|&i| old.sites[i].clone()));
                        }
                    }
                }
                let sites: ChunkVec<usize, CallSite> = all.into_iter().collect();
                let calls_from = SiteLists::grouped(n, &sites, |s| Some(s.caller));
                let calls_to = SiteLists::grouped(n, &sites, |s| match s.callee {
                    Callee::Unit(id) => Some(id),
                    Callee::External => None,
                });
                (sites, calls_from, calls_to, Vec::new())
            }
        };
        let kept_components = same.filter(|(_, old)| {
            changed.iter().all(|&u| {
                let was = callee_set(&old.calls_from, &old.sites, u);
                let is = callee_set(&calls_from, &sites, u);
                was == is || old.keeps_components(u, &was, &is)
            })
        });
        let (sccs, recursive, position) = match kept_components {
            Some((_, old)) => (
                old.sccs.clone(),
                old.recursive.clone(),
                old.position.clone(),
            ),
            None => {
                let c = components(&calls_from, &sites);
                (
                    Arc::new(c.sccs),
                    Arc::new(c.recursive),
                    Arc::new(c.position),
                )
            }
        };
        let overfull = match same.filter(|_| patched) {
            Some((_, old)) => Self::overfull_patched(old, &found, &calls_from, &sites),
            None => Arc::new(
                (sites.iter().enumerate())
                    .filter(|(_, s)| s.overfull())
                    .map(|(i, _)| i)
                    .collect(),
            ),
        };
        CallGraph {
            sites,
            calls_from: Arc::new(calls_from),
            calls_to: Arc::new(calls_to),
            sccs,
            recursive,
            position,
            overfull,
            vacant: Arc::new(vacant),
        }
    }

    /// `old`'s overfull sites with those of the units `found` again
    /// replaced by theirs in the new `calls_from` and `sites` (the old
    /// list, shared, when that leaves it as it was).
    fn overfull_patched(
        old: &CallGraph,
        found: &[(UnitId, Vec<CallSite>)],
        calls_from: &SiteLists,
        sites: &ChunkVec<usize, CallSite>,
    ) -> Arc<Vec<usize>> {
        let mut o: BTreeSet<usize> = old.overfull.iter().copied().collect();
        for (u, _) in found {
            for i in old.calls_from.get(*u).into_iter().flatten() {
                o.remove(i);
            }
            let mine = calls_from.get(*u).into_iter().flatten();
            o.extend(mine.filter(|&&i| sites[i].overfull()));
        }
        match o.iter().eq(old.overfull.iter()) {
            true => old.overfull.clone(),
            false => Arc::new(o.into_iter().collect()),
        }
    }

    /// `old`'s sites, with those `found` again in the units an edit
    /// changed: each changed unit's sites take its old numbers first,
    /// then numbers left vacant, then numbers past the end; the numbers
    /// left over become vacant (a site calling nothing, in no list). The
    /// lists of the changed units and of the units they called or call
    /// are written again, the others shared. `None` when the vacant
    /// numbers would outnumber the sites in lists (then a build from
    /// scratch numbers them afresh).
    #[allow(clippy::type_complexity)]
    fn renumbered(
        old: &CallGraph,
        found: &[(UnitId, Vec<CallSite>)],
    ) -> Option<(ChunkVec<usize, CallSite>, SiteLists, SiteLists, Vec<usize>)> {
        let mut sites = old.sites.clone();
        let mut calls_from = (*old.calls_from).clone();
        let mut vacant: Vec<usize> = old.vacant.to_vec();
        let mut callees: BTreeSet<UnitId> = BTreeSet::new();
        let callee = |s: &CallSite| match s.callee {
            Callee::Unit(c) => Some(c),
            Callee::External => None,
        };
        for (u, mine) in found {
            let was: Vec<usize> = old.calls_from.get(*u)?.to_vec();
            callees.extend(was.iter().filter_map(|&i| callee(&sites[i])));
            let mut numbers = was.iter().copied();
            let mut is = Vec::with_capacity(mine.len());
            for site in mine {
                callees.extend(callee(site));
                match numbers.next().or_else(|| vacant.pop()) {
                    Some(i) => {
                        sites[i] = site.clone();
                        is.push(i);
                    }
                    None => {
                        is.push(sites.len());
                        sites.push(site.clone());
                    }
                }
            }
            for i in numbers {
                sites[i] = CallSite::vacant(*u);
                vacant.push(i);
            }
            calls_from.set(*u, is);
        }
        if vacant.len() > sites.len() - vacant.len() {
            return None;
        }
        // A callee's callers in the order a build from scratch lists them:
        // by caller, then in the caller's statement order.
        let mut calls_to = (*old.calls_to).clone();
        let changed: BTreeSet<UnitId> = found.iter().map(|(u, _)| *u).collect();
        for c in callees {
            let mut list: Vec<(UnitId, usize)> = Vec::new();
            for &i in old.calls_to.get(c)? {
                if !changed.contains(&sites[i].caller) {
                    let caller = sites[i].caller;
                    let at = calls_from.get(caller)?.iter().position(|&x| x == i)?;
                    list.push((caller, at));
                }
            }
            for &u in &changed {
                let mine = calls_from.get(u)?;
                let to_c = |&(_, &i): &(usize, &usize)| callee(&sites[i]) == Some(c);
                list.extend(mine.iter().enumerate().filter(to_c).map(|(at, _)| (u, at)));
            }
            list.sort_unstable();
            let ids = list.iter().map(|&(u, at)| calls_from[u][at]).collect();
            calls_to.set(c, ids);
        }
        vacant.sort_unstable();
        Some((sites, calls_from, calls_to, vacant))
    }

    /// Whether unit `u` calling the units `is` instead of `was` (both
    /// sorted, without repeats) keeps the components: each call removed
    /// joins two components (it is on no cycle), each call added goes
    /// to a component below `u`'s (it closes no cycle).
    fn keeps_components(&self, u: UnitId, was: &[UnitId], is: &[UnitId]) -> bool {
        let at = |x: UnitId| self.position.get(x).copied();
        let Some(mine) = at(u) else {
            return false;
        };
        let removed_ok = was
            .iter()
            .filter(|c| is.binary_search(c).is_err())
            .all(|&c| at(c).is_some_and(|p| p != mine));
        let added_ok = is
            .iter()
            .filter(|c| was.binary_search(c).is_err())
            .all(|&c| at(c).is_some_and(|p| p < mine));
        removed_ok && added_ok
    }

    /// Per unit of `units`: whether its old sites may not be its sites,
    /// because it or a unit its old sites call is not the same (`Arc`)
    /// in both programs. Found from the changed units and their old
    /// callers, without reading every site.
    fn stale_sites(units: &crate::Units, old_units: &crate::Units, old: &CallGraph) -> Vec<bool> {
        let mut stale = vec![false; units.len()];
        // Found among the chunks the tables do not share when they are
        // as long.
        let changed: Vec<UnitId> = match units.ids_unlike(old_units, Arc::ptr_eq) {
            Some(changed) => changed,
            None => (0..units.len().max(old_units.len()))
                .map(UnitId::new)
                .filter(|&u| !crate::same_unit(old_units, units, u))
                .collect(),
        };
        for u in changed {
            if let Some(s) = stale.get_mut(u.index()) {
                *s = true;
            }
            for &i in old.calls_to.get(u).into_iter().flatten() {
                if let Some(s) = old
                    .sites
                    .get(i)
                    .and_then(|site| stale.get_mut(site.caller.index()))
                {
                    *s = true;
                }
            }
        }
        stale
    }

    /// `old` with the sites `found` again in the units an edit changed,
    /// when each of them has as many sites as before, calling the same
    /// units (an edit inside a routine's statements): the site numbers,
    /// both indexes and the components are then `old`'s, shared. `None`
    /// when some site was added, removed or calls another unit.
    fn patched(old: &CallGraph, found: &[(UnitId, Vec<CallSite>)]) -> Option<CallGraph> {
        let same_calls = found.iter().all(|(u, mine)| {
            let kept = old.calls_from.get(*u).unwrap_or(&[]);
            mine.len() == kept.len()
                && mine
                    .iter()
                    .zip(kept)
                    .all(|(f, &i)| f.callee == old.sites[i].callee)
        });
        if !same_calls {
            return None;
        }
        let mut sites = old.sites.clone();
        for (u, mine) in found {
            for (f, &i) in mine.iter().zip(&old.calls_from[*u]) {
                sites[i] = f.clone();
            }
        }
        let overfull = Self::overfull_patched(old, found, &old.calls_from, &sites);
        Some(CallGraph {
            sites,
            overfull,
            ..old.clone()
        })
    }

    /// The sites of unit `u`, in statement order: its CALLs and its
    /// references to user functions (statement functions left out).
    fn sites_of(units: &crate::Units, u: &Unit) -> Vec<CallSite> {
        let mut out = Vec::new();
        for st in &u.stmts {
            if let StmtKind::Call { name, target, args } = &st.kind {
                out.push(site(units, u, st.id, st.span, name, target, args, false));
            }
            let mut found = Vec::new();
            for e in st.kind.exprs() {
                e.walk(&mut |x| {
                    if let ExprKind::FunctionCall { name, target, args } = &x.kind {
                        found.push((name, target, args, x.span));
                    }
                });
            }
            for (name, target, args, span) in found {
                if matches!(target, CallTarget::StatementFunction(_)) {
                    continue;
                }
                out.push(site(units, u, st.id, span, name, target, args, true));
            }
        }
        out
    }

    /// The units `u` calls, once per call site (external procedures left out).
    pub fn callees(&self, u: UnitId) -> impl Iterator<Item = UnitId> + '_ {
        self.calls_from
            .get(u)
            .into_iter()
            .flatten()
            .filter_map(|&i| match self.sites.get(i)?.callee {
                Callee::Unit(id) => Some(id),
                Callee::External => None,
            })
    }
}

#[allow(clippy::too_many_arguments)]
fn site(
    units: &crate::Units,
    caller: &Unit,
    stmt: StmtId,
    span: Span,
    name: &str,
    target: &CallTarget,
    args: &[Arg],
    function: bool,
) -> CallSite {
    let callee = match target {
        CallTarget::Unit(id) => Callee::Unit(*id),
        _ => Callee::External,
    };
    let callee_unit = match callee {
        Callee::Unit(id) => units.get(id),
        Callee::External => None,
    };
    let bindings: std::sync::Arc<[Binding]> = args
        .iter()
        .enumerate()
        .map(|(i, a)| {
            let formal = callee_unit.and_then(|cu| match &a.keyword {
                Some(k) => cu.args.iter().copied().find(|s| cu.symbol(*s).name == *k),
                None => cu.args.get(i).copied(),
            });
            let actual = match &a.value.kind {
                ExprKind::Var(s) => {
                    if caller.symbol(*s).attrs.parameter {
                        Actual::Value
                    } else {
                        Actual::Var(*s)
                    }
                }
                ExprKind::ArrayRef { array, .. } => Actual::Part(*array),
                _ => Actual::Value,
            };
            Binding {
                arg_index: i,
                formal,
                actual,
            }
        })
        .collect();
    CallSite {
        caller: caller.id,
        stmt,
        span,
        name: name.into(),
        callee,
        function,
        bindings,
        callee_args: callee_unit.map_or(0, |cu| cu.args.len()),
    }
}

/// The units `u` calls through the sites `lists` gives it, sorted,
/// without repeats (external procedures left out).
fn callee_set(lists: &SiteLists, sites: &ChunkVec<usize, CallSite>, u: UnitId) -> Vec<UnitId> {
    let mut s: Vec<UnitId> = lists
        .get(u)
        .unwrap_or(&[])
        .iter()
        .filter_map(|&i| match sites.get(i)?.callee {
            Callee::Unit(id) => Some(id),
            Callee::External => None,
        })
        .collect();
    s.sort_unstable();
    s.dedup();
    s
}

/// Tarjan's algorithm, iterative (no recursion depth limit on user
/// input). Emits components callees-first.
fn components(calls_from: &SiteLists, sites: &ChunkVec<usize, CallSite>) -> Components {
    let n = calls_from.len();
    let mut sccs = Vec::new();
    let mut recursive = IdVec::from_elem(false, n);
    let mut position = IdVec::from_elem(0usize, n);
    // Successors in one list: unit u's are succ[start[u]..start[u + 1]].
    let (mut start, mut succ) = (Vec::with_capacity(n + 1), Vec::new());
    start.push(0);
    for u in (0..n).map(UnitId::new) {
        succ.extend(callee_set(calls_from, sites, u));
        start.push(succ.len());
    }
    let succ_of = |u: UnitId| &succ[start[u.index()]..start[u.index() + 1]];
    let mut index: IdVec<UnitId, usize> = IdVec::from_elem(usize::MAX, n);
    let mut low: IdVec<UnitId, usize> = IdVec::from_elem(0, n);
    let mut on_stack: IdVec<UnitId, bool> = IdVec::from_elem(false, n);
    let mut stack = Vec::new();
    let mut next = 0usize;
    for root in (0..n).map(UnitId::new) {
        if index[root] != usize::MAX {
            continue;
        }
        let mut work: Vec<(UnitId, usize)> = vec![(root, 0)];
        index[root] = next;
        low[root] = next;
        next += 1;
        stack.push(root);
        on_stack[root] = true;
        while let Some(&mut (v, ref mut i)) = work.last_mut() {
            if *i < succ_of(v).len() {
                let w = succ_of(v)[*i];
                *i += 1;
                if index[w] == usize::MAX {
                    index[w] = next;
                    low[w] = next;
                    next += 1;
                    stack.push(w);
                    on_stack[w] = true;
                    work.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
            } else {
                work.pop();
                if let Some(&(parent, _)) = work.last() {
                    low[parent] = low[parent].min(low[v]);
                }
                if low[v] == index[v] {
                    let mut comp = Vec::new();
                    while let Some(w) = stack.pop() {
                        on_stack[w] = false;
                        comp.push(w);
                        if w == v {
                            break;
                        }
                    }
                    comp.sort();
                    let rec = comp.len() > 1 || succ_of(v).contains(&v);
                    for c in &comp {
                        recursive[*c] = rec;
                        position[*c] = sccs.len();
                    }
                    sccs.push(comp);
                }
            }
        }
    }
    Components {
        sccs,
        recursive,
        position,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::program;
    use crate::Program;

    /// `before`'s units with unit `name` replaced by `after`'s (the two
    /// programs number their units alike): what a relink of one edited
    /// routine hands the call graph.
    fn edited(before: &Program, after: &Program, name: &str) -> crate::Units {
        let mut units = before.units.clone();
        let u = after.units.iter().find(|u| u.name == name).expect("unit");
        units[u.id] = after.units[u.id].clone();
        units
    }

    /// What a graph says, whatever its site numbers: each unit's sites
    /// and each callee's callers in list order, the sites giving too many
    /// arguments, the components and recursion.
    #[allow(clippy::type_complexity)]
    fn meaning(
        g: &CallGraph,
    ) -> (
        Vec<Vec<String>>,
        Vec<Vec<String>>,
        Vec<String>,
        Vec<Vec<UnitId>>,
        Vec<bool>,
    ) {
        let site = |i: &usize| {
            let s = &g.sites[*i];
            format!(
                "{:?} {:?} {:?} {:?} {:?} {}",
                s.caller, s.stmt, s.name, s.callee, s.bindings, s.callee_args
            )
        };
        let lists = |l: &SiteLists| -> Vec<Vec<String>> {
            (0..l.len())
                .map(|u| l[UnitId::new(u)].iter().map(site).collect())
                .collect()
        };
        let mut overfull: Vec<String> = g.overfull.iter().map(site).collect();
        overfull.sort();
        let mut sccs = (*g.sccs).clone();
        sccs.sort();
        let recursive = g.recursive.iter().copied().collect();
        (
            lists(&g.calls_from),
            lists(&g.calls_to),
            overfull,
            sccs,
            recursive,
        )
    }

    /// Every call goes to a unit whose component comes first or is its
    /// caller's own: the order the bottom-up analyses need.
    fn callees_first(g: &CallGraph) -> bool {
        g.sites.iter().all(|s| match s.callee {
            Callee::Unit(c) => {
                let (pc, pu) = (g.position[c], g.position[s.caller]);
                pc < pu || pc == pu && g.sccs[pu].contains(&c)
            }
            Callee::External => true,
        })
    }

    const BEFORE: &str = "subroutine top(x)
  real x
  call mid(x)
  call ext(x)
end
subroutine mid(x)
  real x
  call leaf(x)
end
subroutine leaf(x)
  real x
  x = sin(x)
end
subroutine ping(x)
  real x
  if (x > 0) call pong(x - 1)
end
subroutine pong(x)
  real x
  call ping(x)
end
";

    #[test]
    fn an_edit_that_adds_or_removes_calls_gives_a_fresh_builds_graph() {
        let before = program(BEFORE);
        // (old text, new text, edited unit, components kept)
        let cases = [
            ("  call leaf(x)\n", "  x = 2 * x\n", "mid", true),
            (
                "  call ext(x)\n",
                "  call ext(x)\n  call leaf(x)\n  call ext2(x)\n",
                "top",
                true,
            ),
            ("  call ext(x)\n", "", "top", true),
            (
                "  x = sin(x)\n",
                "  x = sin(x)\n  call top(x)\n",
                "leaf",
                false,
            ),
            ("  call ping(x)\n", "  x = x\n", "pong", false),
            (
                "  call leaf(x)\n",
                "  call leaf(x)\n  call leaf(x + 1)\n",
                "mid",
                true,
            ),
            // The callee alone edited: its caller's site is found again
            // (the callee's argument count it keeps changes).
            (
                "subroutine leaf(x)\n  real x\n",
                "subroutine leaf(x, y)\n  real x, y\n",
                "leaf",
                true,
            ),
        ];
        for (old, new, unit, kept) in cases {
            let after = program(&BEFORE.replacen(old, new, 1));
            let units = edited(&before, &after, unit);
            let reused =
                CallGraph::build_reusing(&units, Some((&before.units, &before.call_graph)));
            let fresh = CallGraph::build(&units);
            assert_eq!(
                meaning(&reused),
                meaning(&fresh),
                "{unit}: {old:?} -> {new:?}"
            );
            assert!(callees_first(&reused), "{unit}: {old:?} -> {new:?}");
            assert_eq!(
                Arc::ptr_eq(&reused.sccs, &before.call_graph.sccs),
                kept,
                "{unit}: {old:?} -> {new:?}"
            );
        }
    }

    #[test]
    fn sites_of_the_units_an_edit_keeps_keep_their_numbers() {
        // Enough calls before the edited routine to fill whole chunks.
        let calls: String = (0..200).map(|k| format!("  call ext{k}(x)\n")).collect();
        let text = format!("subroutine many(x)\n  real x\n{calls}end\n{BEFORE}");
        let before = program(&text);
        let after = program(&text.replacen("  call leaf(x)\n", "", 1));
        let units = edited(&before, &after, "mid");
        let reused = CallGraph::build_reusing(&units, Some((&before.units, &before.call_graph)));
        assert_eq!(meaning(&reused), meaning(&CallGraph::build(&units)));
        assert!(reused.sites.shares(&before.call_graph.sites, 0));
        assert!(reused.sites.shares(&before.call_graph.sites, 191));
        assert!(Arc::ptr_eq(&reused.sccs, &before.call_graph.sccs));
        // The site removed left its number vacant; the call added back
        // takes it, and the numbers of the others stay.
        let back = edited(&after, &before, "mid");
        let again = CallGraph::build_reusing(&back, Some((&units, &reused)));
        assert_eq!(meaning(&again), meaning(&CallGraph::build(&back)));
        assert_eq!(again.sites.len(), before.call_graph.sites.len());
        assert_eq!(again.vacant.len(), 0);
        assert_eq!(reused.vacant.len(), 1);
        for u in ["many", "top", "pong"] {
            let id = back.iter().find(|x| x.name == u).expect("unit").id;
            assert_eq!(again.calls_from[id], before.call_graph.calls_from[id]);
        }
    }

    /// A unit's calls edited back and forth many times: the sites it adds
    /// take the numbers its removed ones left, so the table does not
    /// grow, and every graph means what a fresh build does.
    #[test]
    fn edits_back_and_forth_reuse_the_numbers_they_leave() {
        let before = program(BEFORE);
        let texts = [
            BEFORE.replacen("  call leaf(x)\n", "", 1),
            BEFORE.replacen(
                "  call leaf(x)\n",
                "  call leaf(x)\n  call leaf(x + 1)\n",
                1,
            ),
            BEFORE.replacen(
                "  call ext(x)\n",
                "  call mid(x)\n  call ext(x)\n  call ext2(x)\n",
                1,
            ),
        ];
        let mut units = before.units.clone();
        let mut graph = (*before.call_graph).clone();
        let mut most = 0;
        for k in 0..12 {
            let next = program(&texts[k % texts.len()]);
            let now = (units.indices())
                .map(
                    |u| match format!("{:?}", units[u]) == format!("{:?}", next.units[u]) {
                        true => units[u].clone(),
                        false => next.units[u].clone(),
                    },
                )
                .collect::<crate::Units>();
            let g = CallGraph::build_reusing(&now, Some((&units, &graph)));
            assert_eq!(meaning(&g), meaning(&CallGraph::build(&now)), "edit {k}");
            assert!(callees_first(&g), "edit {k}");
            if k >= texts.len() {
                assert!(g.sites.len() <= most, "edit {k}: {} sites", g.sites.len());
            }
            most = most.max(g.sites.len());
            (units, graph) = (now, g);
        }
    }
}
