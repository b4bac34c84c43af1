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
//! with their independent and dependent slots.

use crate::activity::{self, Activity};
use crate::bitset::BitSet;
use crate::dep::{bind_call, space_of, summarize_all, Iface, Space, Summary};
use crate::dp::target;
use dfort_ir::callgraph::Callee;
use dfort_ir::*;

/// Activity of every unit that some root reaches, with its calling
/// context (varied at entry, useful at exit).
pub struct ProgramActivity {
    pub summaries: Vec<Option<Summary>>,
    pub contexts: Vec<Option<(BitSet, BitSet)>>,
    pub activity: Vec<Option<Activity>>,
}

/// The callee slot standing for interface variable `i`.
fn callee_slot(callee: &Unit, space: &Space, i: &Iface) -> Option<usize> {
    match i {
        Iface::Formal(k) => callee.args.get(*k as usize).map(|s| s.0 as usize),
        Iface::Global(key) => space.globals.get(key).copied(),
    }
}

pub fn analyze_program(program: &Program, roots: &[(UnitId, BitSet, BitSet)]) -> ProgramActivity {
    let summaries = summarize_all(program);
    let n = program.units.len();
    let spaces: Vec<Space> = program
        .units
        .iter()
        .map(|u| space_of(program, u, &summaries))
        .collect();
    let mut contexts: Vec<Option<(BitSet, BitSet)>> = vec![None; n];
    for (u, ind, dep) in roots {
        let c = contexts[u.0 as usize].get_or_insert_with(Default::default);
        c.0.union_with(ind);
        c.1.union_with(dep);
    }
    let mut activity: Vec<Option<Activity>> = vec![None; n];
    // Callers before callees.
    for scc in program.call_graph.sccs.iter().rev() {
        for _round in 0..64 {
            let mut changed = false;
            for &u in scc {
                let Some((ind, dep)) = contexts[u.0 as usize].clone() else {
                    continue;
                };
                let unit = program.unit(u);
                if !unit.is_procedure() {
                    continue;
                }
                let act = activity::analyze(program, unit, &summaries, &ind, &dep);
                for &site in &program.call_graph.calls_from[u.0 as usize] {
                    let site = &program.call_graph.sites[site];
                    let Callee::Unit(c) = site.callee else {
                        continue;
                    };
                    let Some(sum) = summaries[c.0 as usize].as_ref() else {
                        continue;
                    };
                    let callee = program.unit(c);
                    let st = unit.stmt(site.stmt);
                    let i = site.stmt.0 as usize;
                    let mut in_vary = BitSet::default();
                    let mut out_useful = BitSet::default();
                    match &st.kind {
                        StmtKind::Call { args, .. } if !site.function => {
                            let binds =
                                bind_call(program, unit, &spaces[u.0 as usize], sum, c, args);
                            for (iface, b) in sum.iface.iter().zip(&binds) {
                                let Some(slot) = callee_slot(callee, &spaces[c.0 as usize], iface)
                                else {
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
                        _ => {
                            // A function reference inside an expression: its
                            // arguments may be varied, its result is useful
                            // when the statement's target is.
                            let useful_target = match &st.kind {
                                StmtKind::Assign { lhs, .. } => {
                                    target(lhs).is_some_and(|(t, _)| {
                                        act.useful_after[i].contains(t.0 as usize)
                                    })
                                }
                                _ => false,
                            };
                            let mut inputs = BitSet::default();
                            for e in st.kind.exprs() {
                                crate::dp::dp(unit, e, &mut inputs);
                            }
                            if inputs.intersects(&act.varied_before[i]) {
                                for a in &callee.args {
                                    if crate::dp::differentiable(callee, *a) {
                                        in_vary.insert(a.0 as usize);
                                    }
                                }
                            }
                            if let (true, Some(r)) = (useful_target, callee.result) {
                                out_useful.insert(r.0 as usize);
                            }
                        }
                    }
                    let ctx = contexts[c.0 as usize].get_or_insert_with(Default::default);
                    let grew = ctx.0.union_with(&in_vary) | ctx.1.union_with(&out_useful);
                    changed |= grew && scc.contains(&c);
                }
                activity[u.0 as usize] = Some(act);
            }
            if !changed {
                break;
            }
        }
    }
    ProgramActivity {
        summaries,
        contexts,
        activity,
    }
}

/// The default roots: every procedure nobody calls, with the roles its
/// directives or intents give ([`crate::roles::roles`]).
pub fn default_roots(program: &Program) -> Vec<(UnitId, BitSet, BitSet)> {
    program
        .units
        .iter()
        .filter(|u| u.is_procedure() && program.call_graph.calls_to[u.id.0 as usize].is_empty())
        .map(|u| {
            let r = crate::roles::roles(u, None);
            (u.id, r.independents, r.dependents)
        })
        .collect()
}
