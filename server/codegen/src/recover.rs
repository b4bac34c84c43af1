//! The reverse sweep of one iteration of a planned loop (paper 003 §4,
//! the code the token game's strategy implies): where each recovered
//! address value is computed, in which variable or temporary it lives,
//! and where the adjoint of each top-level statement goes.
//!
//! Contract: given a [`Plan`], [`reverse_iteration`] returns the lines of
//! one reversed iteration, with `Item::Stmt(pos)` where the reverse of
//! the body's statement `pos` goes. Before it, every version that
//! statement's reverse reads is in its variable; at the end, the start
//! versions the previous iteration needs are. Recovered values are
//! computed on first demand, into their own variable when the value it
//! holds is not needed any more, otherwise into a temporary (Figure 7's
//! `t`); a value still needed is copied out before its variable is
//! overwritten. The versions the plan stores are popped first (they were
//! pushed last, at the end of the forward iteration).

use crate::Reason;
use dfort_analysis::address_report::Choice;
use dfort_analysis::recovery::{How, Plan};
use dfort_ir::*;
use dfort_syntax::rules;
use std::collections::{HashMap, HashSet};

/// A line of a reversed iteration.
pub(crate) enum Item {
    Line(String),
    /// The reverse of the body statement at this position.
    Stmt(usize),
}

enum Event {
    Compute(usize),
    Place(usize),
    Stmt(usize),
}

/// Fresh temporaries `dfort_i<n>` with their declared types, shared
/// with the forward sweep's copies.
pub(crate) struct Temps<'a>(pub &'a mut Vec<String>);

impl Temps<'_> {
    /// A temporary of the type of variable `of`.
    pub(crate) fn fresh(&mut self, unit: &Unit, of: SymbolId) -> String {
        self.0.push(dfort_ir::dump::type_name(&unit.symbol(of).ty));
        format!("dfort_i{}", self.0.len())
    }
}

/// How each version of a plan the reverse sweep reads is recovered (by
/// index into `plan.versions`).
pub(crate) type Used = Vec<(usize, Choice)>;

/// One reversed iteration of `plan`'s loop, with how each version it
/// reads is recovered (by index into `plan.versions`), or the version the
/// plan gives no way to recover (an inconsistent plan is refused, never
/// emitted).
pub(crate) fn reverse_iteration(
    unit: &Unit,
    plan: &Plan,
    temps: &mut Temps,
) -> Result<(Vec<Item>, Used), Reason> {
    let vs = &plan.versions;
    let name = |v: usize| unit.symbol(vs[v].var).name.clone();
    // Dry run: the order of computations and uses.
    let mut events = Vec::new();
    let mut ready: HashSet<usize> = HashSet::new();
    for (v, ver) in vs.iter().enumerate() {
        if matches!(ver.how, How::End | How::Stored { .. }) {
            ready.insert(v);
        }
    }
    fn ensure(
        plan: &Plan,
        v: usize,
        ready: &mut HashSet<usize>,
        events: &mut Vec<Event>,
        depth: usize,
    ) -> Result<(), usize> {
        if ready.contains(&v) {
            return Ok(());
        }
        let term = match &plan.versions[v].how {
            How::Inverted { term, .. } | How::Recomputed { term } => term,
            _ => return Err(v),
        };
        if depth > plan.versions.len() {
            return Err(v);
        }
        let mut deps = Vec::new();
        term.versions(&mut deps);
        for d in deps {
            ensure(plan, d, ready, events, depth + 1)?;
        }
        events.push(Event::Compute(v));
        ready.insert(v);
        Ok(())
    }
    let missing = |v: usize| -> Reason {
        (
            &rules::INTERNAL_ERROR,
            format!("no recovery for `{}` (internal error)", name(v)),
        )
            .into()
    };
    for pos in (0..plan.body.len()).rev() {
        for &v in &plan.demands[pos] {
            ensure(plan, v, &mut ready, &mut events, 0).map_err(missing)?;
        }
        for &v in &plan.demands[pos] {
            events.push(Event::Place(v));
        }
        events.push(Event::Stmt(pos));
    }
    for &v in &plan.starts {
        ensure(plan, v, &mut ready, &mut events, 0).map_err(missing)?;
        events.push(Event::Place(v));
    }
    // The last event reading each version.
    let mut last_use: HashMap<usize, usize> = HashMap::new();
    for (e, ev) in events.iter().enumerate() {
        match ev {
            Event::Place(v) => {
                last_use.insert(*v, e);
            }
            Event::Compute(v) => {
                if let How::Inverted { term, .. } | How::Recomputed { term } = &vs[*v].how {
                    let mut deps = Vec::new();
                    term.versions(&mut deps);
                    for d in deps {
                        last_use.insert(d, e);
                    }
                }
            }
            Event::Stmt(_) => {}
        }
    }
    let live_after = |v: usize, e: usize| last_use.get(&v).is_some_and(|&l| l > e);
    // Emission.
    let mut out = Vec::new();
    let mut used: Vec<(usize, Choice)> = Vec::new();
    let note = |v: usize, used: &mut Vec<(usize, Choice)>| {
        let c = match vs[v].how {
            How::End => Choice::Final,
            How::Inverted { .. } => Choice::Inverted,
            How::Recomputed { .. } => Choice::Recomputed,
            How::Stored { .. } => Choice::Stored,
            How::Unneeded => return,
        };
        if !used.contains(&(v, c)) {
            used.push((v, c));
        }
    };
    let mut holder: HashMap<SymbolId, usize> = HashMap::new();
    let mut home: HashMap<usize, String> = HashMap::new();
    for (v, ver) in vs.iter().enumerate() {
        if matches!(ver.how, How::End) {
            holder.insert(ver.var, v);
            home.insert(v, name(v));
        }
    }
    for &v in plan.stored.iter().rev() {
        let var = vs[v].var;
        // Into the variable unless the value it holds is still needed.
        let loc = if holder.get(&var).is_some_and(|y| last_use.contains_key(y)) {
            temps.fresh(unit, var)
        } else {
            holder.insert(var, v);
            name(v)
        };
        out.push(Item::Line(format!("call dfort_pop({loc})")));
        note(v, &mut used);
        home.insert(v, loc);
    }
    for (e, ev) in events.iter().enumerate() {
        match ev {
            Event::Stmt(pos) => out.push(Item::Stmt(*pos)),
            Event::Compute(v) => {
                let var = vs[*v].var;
                // The variable is free when what it holds is dead or
                // safe in a temporary.
                let free = holder
                    .get(&var)
                    .is_none_or(|&y| !live_after(y, e) || home.get(&y) != Some(&name(y)));
                let loc = if free {
                    holder.insert(var, *v);
                    name(*v)
                } else {
                    temps.fresh(unit, var)
                };
                let term = match &vs[*v].how {
                    How::Inverted { term, .. } | How::Recomputed { term } => term,
                    _ => return Err(missing(*v)),
                };
                let text = term.render(unit, &|x| home.get(&x).cloned().unwrap_or_else(|| name(x)));
                out.push(Item::Line(format!("{loc} = {text}")));
                note(*v, &mut used);
                let mut deps = Vec::new();
                term.versions(&mut deps);
                for d in deps {
                    note(d, &mut used);
                }
                home.insert(*v, loc);
            }
            Event::Place(v) => {
                let var = vs[*v].var;
                note(*v, &mut used);
                if holder.get(&var) == Some(v) {
                    continue;
                }
                if let Some(&y) = holder.get(&var) {
                    if live_after(y, e) && home.get(&y) == Some(&name(y)) {
                        let t = temps.fresh(unit, var);
                        out.push(Item::Line(format!("{t} = {}", name(y))));
                        home.insert(y, t);
                    }
                }
                let from = home.get(v).cloned().ok_or_else(|| missing(*v))?;
                out.push(Item::Line(format!("{} = {from}", name(*v))));
                holder.insert(var, *v);
            }
        }
    }
    Ok((out, used))
}
