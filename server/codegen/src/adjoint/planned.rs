//! Loops with a recovery plan (paper 003, address recovery by inversion
//! and recomputation): the forward sweep of the body pushes, at the end of
//! each iteration, the values the plan stores (copied into temporaries
//! when a later statement overwrites them); around the loop it saves what
//! the reversed loop does not give back and what its reversal starts
//! from. The reverse sweep of one iteration interleaves the statements'
//! adjoints with the inversions and recomputations
//! ([`crate::recover::reverse_iteration`]).
//!
//! Contract: the plan is the analysis' ([`dfort_analysis::recovery`]);
//! how each address value is recovered is traced; a plan the reversal
//! cannot follow is refused, never emitted.

use super::dispatch::Gen;
use super::sweep::Line;
use dfort_analysis::recovery::{Origin, Plan};

impl Gen<'_> {
    /// The body of a planned loop: its forward sweep, which pushes the
    /// values the plan stores at the end of each iteration, and its
    /// reverse sweep with the inversions and recomputations interleaved.
    pub(super) fn planned_body(&mut self, plan: &Plan) -> Vec<Line> {
        let inp = self.inp;
        let unit = &inp.unit;
        let n = plan.body.len();
        let mut before: Vec<Vec<(String, String)>> = vec![Vec::new(); n];
        let mut after: Vec<Vec<(String, String)>> = vec![Vec::new(); n];
        let mut pushed = Vec::new();
        for &v in &plan.stored {
            let ver = &plan.versions[v];
            let var = unit.symbol(ver.var).name.clone();
            let redefined_after = |p: Option<usize>| {
                plan.versions.iter().any(|w| {
                    w.var == ver.var
                        && matches!(w.origin, Origin::Def(q) if p.is_none_or(|p| q > p))
                })
            };
            let copy = |at: &mut Vec<(String, String)>, temps: &mut Vec<String>| {
                let t = crate::recover::Temps(temps).fresh(unit, ver.var);
                at.push((t.clone(), var.clone()));
                t
            };
            let temps = &mut self.out.int_temps;
            let loc = match ver.origin {
                Origin::Start if redefined_after(None) && n > 0 => copy(&mut before[0], temps),
                Origin::Def(p) if redefined_after(Some(p)) => copy(&mut after[p], temps),
                Origin::Opaque(p) => copy(&mut before[p], temps),
                _ => var.clone(),
            };
            pushed.push(loc);
        }
        let mut revs = Vec::new();
        for (pos, id) in plan.body.iter().enumerate() {
            for (t, var) in &before[pos] {
                self.out.fwd.line(&format!("{t} = {var}"));
            }
            revs.push(Some(self.stmt(*id)));
            for (t, var) in &after[pos] {
                self.out.fwd.line(&format!("{t} = {var}"));
            }
        }
        for l in &pushed {
            self.out.push(l);
        }
        let mut temps = crate::recover::Temps(&mut self.out.int_temps);
        match crate::recover::reverse_iteration(unit, plan, &mut temps) {
            Ok((items, used)) => {
                for (v, how) in used {
                    self.out
                        .trace
                        .recovery(Some(plan.stmt), plan.versions[v].var, how);
                }
                let lines = items
                    .into_iter()
                    .flat_map(|it| match it {
                        crate::recover::Item::Line(s) => vec![Line::Plain(s)],
                        crate::recover::Item::Stmt(p) => {
                            revs.get_mut(p).and_then(Option::take).unwrap_or_default()
                        }
                    })
                    .collect();
                self.without_recomputed(lines)
            }
            Err(m) => {
                let span = unit.stmt(plan.stmt).span;
                self.out.refuse(span, m);
                Vec::new()
            }
        }
    }

    /// Pushes before a planned loop of the handled variables a statement
    /// before it needs (the reversed loop does not give them back).
    pub(super) fn entry_saves(&self, plan: Option<&Plan>) -> Vec<String> {
        plan.map(|p| {
            p.saved_at_entry
                .iter()
                .map(|v| format!("call dfort_push({})", self.inp.unit.symbol(*v).name))
                .collect()
        })
        .unwrap_or_default()
    }

    /// Their pops, after the reversed loop.
    pub(super) fn entry_restores(&self, plan: Option<&Plan>) -> Vec<Line> {
        plan.map(|p| {
            p.saved_at_entry
                .iter()
                .rev()
                .map(|v| Line::pop(&self.inp.unit.symbol(*v).name))
                .collect()
        })
        .unwrap_or_default()
    }

    /// After a planned loop: pushes the values its reversal starts from
    /// (the end-of-loop values of its loop-carried address variables and
    /// the invariants the recovery reads); returns their pops.
    pub(super) fn exit_saves(&mut self, plan: Option<&Plan>) -> Vec<Line> {
        let Some(p) = plan else {
            return Vec::new();
        };
        let inp = self.inp;
        let unit = &inp.unit;
        let names: Vec<&String> = p
            .saved_at_exit
            .iter()
            .map(|v| &unit.symbol(*v).name)
            .collect();
        for n in &names {
            self.out.push(n);
        }
        names.iter().rev().map(|n| Line::pop(n)).collect()
    }
}
