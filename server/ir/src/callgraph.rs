//! The call graph over all units of all files: one site per CALL statement
//! and per user-function reference, with the binding of each actual
//! argument to the callee's formal, and the strongly connected components
//! (recursion) in bottom-up order (callees before callers), which is the
//! order interprocedural analyses summarise units in.

use crate::chunk_vec::ChunkVec;
use crate::idx::IdVec;
use crate::ir::*;
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
}

/// The indexes and components are shared: a relink whose edits keep
/// every site's number and callee keeps them ([`CallGraph::build_reusing`]).
#[derive(Clone, Debug, Default)]
pub struct CallGraph {
    /// Shared in chunks with the graph a relink patched it from.
    pub sites: ChunkVec<usize, CallSite>,
    /// Site indices per calling unit.
    pub calls_from: Arc<IdVec<UnitId, Vec<usize>>>,
    /// Site indices per called unit.
    pub calls_to: Arc<IdVec<UnitId, Vec<usize>>>,
    /// Strongly connected components, callees before callers.
    pub sccs: Arc<Vec<Vec<UnitId>>>,
    /// Per unit: whether it can call itself (directly or through others).
    pub recursive: Arc<IdVec<UnitId, bool>>,
}

impl CallGraph {
    pub fn build(units: &IdVec<UnitId, std::sync::Arc<Unit>>) -> CallGraph {
        CallGraph::build_reusing(units, None)
    }

    /// [`CallGraph::build`], taking the sites of a unit from `previous`
    /// (the units and call graph of the program before an edit) when
    /// neither the unit nor any unit it calls changed (the same `Arc`):
    /// its statements, and its callees' formals its bindings name, are
    /// then those the old sites were found in. An edit of one routine no
    /// longer walks every expression of the workspace.
    pub fn build_reusing(
        units: &IdVec<UnitId, Arc<Unit>>,
        previous: Option<(&IdVec<UnitId, Arc<Unit>>, &CallGraph)>,
    ) -> CallGraph {
        if let Some(g) = previous.and_then(|(old_units, old)| Self::patched(units, old_units, old))
        {
            return g;
        }
        let n = units.len();
        let (mut calls_from, mut calls_to) = (
            IdVec::from_elem(Vec::new(), n),
            IdVec::from_elem(Vec::new(), n),
        );
        let mut sites = Vec::new();
        for u in units.indices() {
            let reused = previous.and_then(|(old_units, old)| {
                let kept = old.calls_from.get(u).map(Vec::as_slice).unwrap_or(&[]);
                Self::unchanged_sites(units, old_units, old, u).then_some((old, kept))
            });
            let mine: Vec<CallSite> = match reused {
                Some((old, kept)) => kept.iter().map(|&i| old.sites[i].clone()).collect(),
                None => Self::sites_of(units, &units[u]),
            };
            for site in mine {
                let idx = sites.len();
                calls_from[site.caller].push(idx);
                if let Callee::Unit(id) = site.callee {
                    if let Some(v) = calls_to.get_mut(id) {
                        v.push(idx);
                    }
                }
                sites.push(site);
            }
        }
        let (sccs, recursive) = components(&calls_from, &sites);
        CallGraph {
            sites: sites.into_iter().collect(),
            calls_from: Arc::new(calls_from),
            calls_to: Arc::new(calls_to),
            sccs: Arc::new(sccs),
            recursive: Arc::new(recursive),
        }
    }

    /// Whether unit `u` and every unit its old sites call are the same
    /// (`Arc`) in both programs: its old sites are then its sites.
    fn unchanged_sites(
        units: &IdVec<UnitId, Arc<Unit>>,
        old_units: &IdVec<UnitId, Arc<Unit>>,
        old: &CallGraph,
        u: UnitId,
    ) -> bool {
        let kept = old.calls_from.get(u).map(Vec::as_slice).unwrap_or(&[]);
        crate::same_unit(old_units, units, u)
            && kept
                .iter()
                .all(|&i| match old.sites.get(i).map(|s| &s.callee) {
                    Some(Callee::Unit(c)) => crate::same_unit(old_units, units, *c),
                    Some(Callee::External) => true,
                    None => false,
                })
    }

    /// `old` with the sites of the units an edit changed found again, when
    /// each of them has as many sites as before, calling the same units
    /// (an edit inside a routine's statements): the site numbers, both
    /// indexes and the components are then `old`'s, shared. `None` when
    /// the units differ in number or some site was added, removed or
    /// calls another unit.
    fn patched(
        units: &IdVec<UnitId, Arc<Unit>>,
        old_units: &IdVec<UnitId, Arc<Unit>>,
        old: &CallGraph,
    ) -> Option<CallGraph> {
        if units.len() != old_units.len() || old.calls_from.len() != units.len() {
            return None;
        }
        let mut sites: Option<ChunkVec<usize, CallSite>> = None;
        for u in units.indices() {
            if Self::unchanged_sites(units, old_units, old, u) {
                continue;
            }
            let kept = &old.calls_from[u];
            let found = Self::sites_of(units, &units[u]);
            if found.len() != kept.len()
                || found
                    .iter()
                    .zip(kept)
                    .any(|(f, &i)| f.callee != old.sites[i].callee)
            {
                return None;
            }
            let sites = sites.get_or_insert_with(|| old.sites.clone());
            for (f, &i) in found.into_iter().zip(kept) {
                sites[i] = f;
            }
        }
        Some(CallGraph {
            sites: sites.unwrap_or_else(|| old.sites.clone()),
            calls_from: old.calls_from.clone(),
            calls_to: old.calls_to.clone(),
            sccs: old.sccs.clone(),
            recursive: old.recursive.clone(),
        })
    }

    /// The sites of unit `u`, in statement order: its CALLs and its
    /// references to user functions (statement functions left out).
    fn sites_of(units: &IdVec<UnitId, Arc<Unit>>, u: &Unit) -> Vec<CallSite> {
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
    units: &IdVec<UnitId, Arc<Unit>>,
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
    }
}

/// Tarjan's algorithm, iterative (no recursion depth limit on user
/// input). Emits components callees-first.
fn components(
    calls_from: &IdVec<UnitId, Vec<usize>>,
    sites: &[CallSite],
) -> (Vec<Vec<UnitId>>, IdVec<UnitId, bool>) {
    let n = calls_from.len();
    let mut sccs = Vec::new();
    let mut recursive = IdVec::from_elem(false, n);
    let succ: IdVec<UnitId, Vec<UnitId>> = IdVec::from_fn(n, |u| {
        let mut s: Vec<UnitId> = calls_from[u]
            .iter()
            .filter_map(|&i| match sites[i].callee {
                Callee::Unit(id) => Some(id),
                Callee::External => None,
            })
            .collect();
        s.sort_unstable();
        s.dedup();
        s
    });
    let mut index: IdVec<UnitId, usize> = IdVec::from_elem(usize::MAX, n);
    let mut low: IdVec<UnitId, usize> = IdVec::from_elem(0, n);
    let mut on_stack: IdVec<UnitId, bool> = IdVec::from_elem(false, n);
    let mut stack = Vec::new();
    let mut next = 0usize;
    for root in succ.indices() {
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
            if *i < succ[v].len() {
                let w = succ[v][*i];
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
                    let rec = comp.len() > 1 || succ[v].contains(&v);
                    for c in &comp {
                        recursive[*c] = rec;
                    }
                    sccs.push(comp);
                }
            }
        }
    }
    (sccs, recursive)
}
