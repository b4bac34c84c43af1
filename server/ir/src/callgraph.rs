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
    /// Whether the site gives a unit more arguments than it has dummies.
    pub fn overfull(&self) -> bool {
        matches!(self.callee, Callee::Unit(_)) && self.bindings.len() > self.callee_args
    }
}

/// Site numbers grouped by unit, in one allocation: the numbers of unit
/// `u` are `list[start[u]..start[u + 1]]`, ascending. Reads like an
/// `IdVec<UnitId, Vec<usize>>` (`lists[u]`, `lists.get(u)`); building one
/// costs two allocations, not one per unit.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SiteLists {
    start: Vec<usize>,
    list: Vec<usize>,
}

impl SiteLists {
    /// The sites of `sites` grouped by the unit `key` gives each (none:
    /// the site is in no list), for units below `n`.
    fn grouped(
        n: usize,
        sites: &ChunkVec<usize, CallSite>,
        key: impl Fn(&CallSite) -> Option<UnitId>,
    ) -> SiteLists {
        let mut start = vec![0usize; n + 1];
        for s in sites {
            if let Some(u) = key(s).filter(|u| u.index() < n) {
                start[u.index() + 1] += 1;
            }
        }
        for k in 0..n {
            start[k + 1] += start[k];
        }
        let mut next = start.clone();
        let mut list = vec![0usize; start[n]];
        for (i, s) in sites.iter().enumerate() {
            if let Some(u) = key(s).filter(|u| u.index() < n) {
                list[next[u.index()]] = i;
                next[u.index()] += 1;
            }
        }
        SiteLists { start, list }
    }

    /// The site numbers of unit `u`.
    pub fn get(&self, u: UnitId) -> Option<&[usize]> {
        let k = u.index();
        let (a, b) = (*self.start.get(k)?, *self.start.get(k + 1)?);
        Some(&self.list[a..b])
    }

    /// How many units there are lists for.
    pub fn len(&self) -> usize {
        self.start.len().saturating_sub(1)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How many sites the lists of the units before `u` hold.
    fn before(&self, u: UnitId) -> usize {
        self.start
            .get(u.index())
            .copied()
            .unwrap_or(self.list.len())
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

/// Sites are numbered in the order of their callers (a unit's sites in
/// statement order); the indexes and components are shared with the
/// graph a relink built this one from when its edits keep them
/// ([`CallGraph::build_reusing`]).
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
    /// sites of the units before the first changed one are shared, and
    /// the components are `previous`'s when the calls an edit added or
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
        // Sites in the order of their callers: an unchanged unit's old
        // ones, a changed unit's found ones.
        // Only the units from the first changed one on are walked when
        // the old sites of those before it are shared.
        let first = match (same, found.first()) {
            (Some(_), Some((u, _))) => *u,
            (Some(_), None) => UnitId::new(n),
            (None, _) => UnitId::new(0),
        };
        let mut found_at = found.into_iter().peekable();
        let mut rest = Vec::new();
        for u in (first.index()..n).map(UnitId::new) {
            match found_at.next_if(|(f, _)| *f == u) {
                Some((_, mine)) => rest.push(Ok(mine)),
                None => rest.push(Err(u)),
            }
        }
        let kept = |u: UnitId| -> Vec<CallSite> {
            let (_, old) = previous.expect("a unit's sites are kept only from a previous graph");
            let ids = old.calls_from.get(u).unwrap_or(&[]);
            ids.iter().map(|&i| old.sites[i].clone()).collect()
        };
        let tail = rest.into_iter().flat_map(|r| match r {
            Ok(mine) => mine,
            Err(u) => kept(u),
        });
        let sites: ChunkVec<usize, CallSite> = match same {
            Some((_, old)) => old.sites.with_prefix(old.calls_from.before(first), tail),
            None => tail.collect(),
        };
        let calls_from = SiteLists::grouped(n, &sites, |s| Some(s.caller));
        let calls_to = SiteLists::grouped(n, &sites, |s| match s.callee {
            Callee::Unit(id) => Some(id),
            Callee::External => None,
        });
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
        let overfull = (sites.iter().enumerate())
            .filter(|(_, s)| s.overfull())
            .map(|(i, _)| i)
            .collect();
        CallGraph {
            sites,
            calls_from: Arc::new(calls_from),
            calls_to: Arc::new(calls_to),
            sccs,
            recursive,
            position,
            overfull: Arc::new(overfull),
        }
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
        let mut overfull: BTreeSet<usize> = old.overfull.iter().copied().collect();
        let mut same_overfull = true;
        for (u, mine) in found {
            for (f, &i) in mine.iter().zip(&old.calls_from[*u]) {
                sites[i] = f.clone();
                same_overfull &= match f.overfull() {
                    true => !overfull.insert(i),
                    false => !overfull.remove(&i),
                };
            }
        }
        let overfull = match same_overfull {
            true => old.overfull.clone(),
            false => Arc::new(overfull.into_iter().collect()),
        };
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

    /// What two graphs of the same units must agree on: the sites (by
    /// caller, statement, callee and bindings), both indexes, the
    /// components as sets and which units are recursive.
    fn meaning(
        g: &CallGraph,
    ) -> (
        Vec<String>,
        SiteLists,
        SiteLists,
        Vec<Vec<UnitId>>,
        Vec<bool>,
    ) {
        let sites = g
            .sites
            .iter()
            .map(|s| {
                format!(
                    "{:?} {:?} {:?} {:?} {:?} {}",
                    s.caller, s.stmt, s.name, s.callee, s.bindings, s.callee_args
                )
            })
            .collect();
        let mut sccs = (*g.sccs).clone();
        sccs.sort();
        let recursive = g.recursive.iter().copied().collect();
        (
            (sites),
            (*g.calls_from).clone(),
            (*g.calls_to).clone(),
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
    fn sites_of_the_units_before_the_first_edited_one_are_shared() {
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
    }
}
