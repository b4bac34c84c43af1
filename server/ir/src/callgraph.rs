//! The call graph over all units of all files: one site per CALL statement
//! and per user-function reference, with the binding of each actual
//! argument to the callee's formal, and the strongly connected components
//! (recursion) in bottom-up order (callees before callers), which is the
//! order interprocedural analyses summarise units in.

use crate::idx::IdVec;
use crate::ir::*;

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

#[derive(Clone, Debug, Default)]
pub struct CallGraph {
    pub sites: Vec<CallSite>,
    /// Site indices per calling unit.
    pub calls_from: IdVec<UnitId, Vec<usize>>,
    /// Site indices per called unit.
    pub calls_to: IdVec<UnitId, Vec<usize>>,
    /// Strongly connected components, callees before callers.
    pub sccs: Vec<Vec<UnitId>>,
    /// Per unit: whether it can call itself (directly or through others).
    pub recursive: IdVec<UnitId, bool>,
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
        units: &IdVec<UnitId, std::sync::Arc<Unit>>,
        previous: Option<(&IdVec<UnitId, std::sync::Arc<Unit>>, &CallGraph)>,
    ) -> CallGraph {
        let mut g = CallGraph {
            calls_from: IdVec::from_elem(Vec::new(), units.len()),
            calls_to: IdVec::from_elem(Vec::new(), units.len()),
            recursive: IdVec::from_elem(false, units.len()),
            ..CallGraph::default()
        };
        for u in units {
            if let Some((old_units, old)) = previous {
                let sites = old.calls_from.get(u.id).map(Vec::as_slice).unwrap_or(&[]);
                let unchanged = crate::same_unit(old_units, units, u.id)
                    && sites
                        .iter()
                        .all(|&i| match old.sites.get(i).map(|s| &s.callee) {
                            Some(Callee::Unit(c)) => crate::same_unit(old_units, units, *c),
                            Some(Callee::External) => true,
                            None => false,
                        });
                if unchanged {
                    for &i in sites {
                        g.push_site(old.sites[i].clone());
                    }
                    continue;
                }
            }
            for st in &u.stmts {
                if let StmtKind::Call { name, target, args } = &st.kind {
                    g.add_site(units, u, st, name, target, args, false);
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
                    let fake = Stmt {
                        id: st.id,
                        label: None,
                        span,
                        kind: StmtKind::Continue,
                    };
                    g.add_site(units, u, &fake, name, target, args, true);
                }
            }
        }
        g.compute_sccs(units.len());
        g
    }

    #[allow(clippy::too_many_arguments)]
    fn add_site(
        &mut self,
        units: &IdVec<UnitId, std::sync::Arc<Unit>>,
        caller: &Unit,
        st: &Stmt,
        name: &str,
        target: &CallTarget,
        args: &[Arg],
        function: bool,
    ) {
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
        self.push_site(CallSite {
            caller: caller.id,
            stmt: st.id,
            span: st.span,
            name: name.into(),
            callee,
            function,
            bindings,
        });
    }

    /// Adds a site, indexed by its caller and its callee.
    fn push_site(&mut self, site: CallSite) {
        let idx = self.sites.len();
        if let Some(v) = self.calls_from.get_mut(site.caller) {
            v.push(idx);
        }
        if let Callee::Unit(id) = site.callee {
            if let Some(v) = self.calls_to.get_mut(id) {
                v.push(idx);
            }
        }
        self.sites.push(site);
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

    /// Tarjan's algorithm, iterative (no recursion depth limit on user
    /// input). Emits components callees-first.
    fn compute_sccs(&mut self, n: usize) {
        let succ: IdVec<UnitId, Vec<UnitId>> = IdVec::from_fn(n, |u| {
            let mut s: Vec<UnitId> = self.callees(u).collect();
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
                            self.recursive[*c] = rec;
                        }
                        self.sccs.push(comp);
                    }
                }
            }
        }
    }
}
