//! What a loop's recovery plan ([`crate::recovery`], paper 003) means for
//! each address variable, for people: the command line, hovers, inlay
//! hints and diagnostics all print from this.
//!
//! Contract: per planned loop, one entry per address variable the
//! reverse sweep needs — handled variables with at least one needed
//! version, and the ambiguous ones (written inside a branch or nested
//! loop, by a call or a READ) that an adjoint statement of the loop reads
//! and TBR records inside it.
//! A variable's choice is the costliest of its values' recoveries
//! (inverted < recomputed < stored). Positions are statements and spans;
//! callers turn them into lines.

use crate::bitset::BitSet;
use crate::recovery::{subtree, Blocker, How, Origin, Plan};
use crate::tbr::Tbr;
use dfort_ir::*;

/// How a value is recovered, cheapest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Choice {
    /// Known when the reversed iteration starts (the loop's final value,
    /// saved once after the loop).
    Final,
    Inverted,
    Recomputed,
    Stored,
}

impl Choice {
    pub fn as_str(self) -> &'static str {
        match self {
            Choice::Final => "final value",
            Choice::Inverted => "inverted",
            Choice::Recomputed => "recomputed",
            Choice::Stored => "stored",
        }
    }
}

/// The recovery of one value of a variable.
#[derive(Clone, Debug)]
pub struct Recovery {
    pub choice: Choice,
    /// The statement that defines the value (the loop statement for the
    /// value at the start of an iteration).
    pub defined_at: StmtId,
    /// The assignment inverted to get it.
    pub inverts: Option<StmtId>,
    /// `k ← j - 2` (inverted, recomputed), `k` (stored, final).
    pub text: String,
    pub blocker: Option<Blocker>,
}

#[derive(Clone, Debug)]
pub struct VarReport {
    pub var: SymbolId,
    pub choice: Choice,
    pub recoveries: Vec<Recovery>,
    /// Integers the forward sweep pushes per iteration for this variable
    /// (for ambiguous ones: each time it is overwritten).
    pub stored_per_iteration: usize,
    /// Why it is stored: the non-invertible operation, or the ambiguous
    /// definition.
    pub reason: Option<(String, Span)>,
    /// Left to TBR's recording (an ambiguous definition).
    pub ambiguous: bool,
}

#[derive(Clone, Debug)]
pub struct LoopReport {
    pub stmt: StmtId,
    pub vars: Vec<VarReport>,
    pub saved_after_loop: Vec<SymbolId>,
    pub saved_before_loop: Vec<SymbolId>,
    pub stored_per_iteration: usize,
}

/// The report of one loop's plan.
pub fn report(unit: &Unit, plan: &Plan, tbr: &Tbr) -> LoopReport {
    let vs = &plan.versions;
    let name = |v: usize| unit.symbol(vs[v].var).name.clone();
    let mut vars: Vec<VarReport> = Vec::new();
    for (v, ver) in vs.iter().enumerate() {
        let (choice, inverts, text, blocker) = match &ver.how {
            How::Unneeded => continue,
            How::End => (Choice::Final, None, name(v), None),
            How::Inverted { from, term } => (
                Choice::Inverted,
                Some(plan.body[*from]),
                format!("{} ← {}", name(v), term.render(unit, &name)),
                None,
            ),
            How::Recomputed { term } => (
                Choice::Recomputed,
                None,
                format!("{} ← {}", name(v), term.render(unit, &name)),
                None,
            ),
            How::Stored { reason } => (Choice::Stored, None, name(v), reason.clone()),
        };
        // Opaque values belong to variables the game does not handle.
        if matches!(ver.origin, Origin::Opaque(_)) && choice != Choice::Stored {
            continue;
        }
        let defined_at = match ver.origin {
            Origin::Def(p) | Origin::Opaque(p) => plan.body[p],
            Origin::Start => plan.stmt,
        };
        let r = Recovery {
            choice,
            defined_at,
            inverts,
            text,
            blocker,
        };
        match vars.iter_mut().find(|x| x.var == ver.var) {
            Some(x) => x.recoveries.push(r),
            None => vars.push(VarReport {
                var: ver.var,
                choice,
                recoveries: vec![r],
                stored_per_iteration: 0,
                reason: None,
                ambiguous: false,
            }),
        }
    }
    for x in &mut vars {
        // The final value alone is not a choice when others are recovered.
        x.choice = x
            .recoveries
            .iter()
            .map(|r| r.choice)
            .max()
            .unwrap_or(Choice::Final);
        x.stored_per_iteration = x
            .recoveries
            .iter()
            .filter(|r| r.choice == Choice::Stored)
            .count();
        x.reason = x
            .recoveries
            .iter()
            .find_map(|r| r.blocker.as_ref())
            .map(|b| (b.what.clone(), b.span));
    }
    // Ambiguous address variables the loop's adjoint reads.
    let in_body = subtree(unit, &plan.body);
    let mut read = BitSet::default();
    for id in &in_body {
        if let Some(r) = tbr.req.get(id.0 as usize) {
            read.union_with(r);
        }
    }
    for a in &plan.ambiguous {
        if !read.contains(a.var.0 as usize) || vars.iter().any(|x| x.var == a.var) {
            continue;
        }
        let stores = tbr
            .records
            .iter()
            .filter(|r| r.variable == a.var && in_body.contains(&r.stmt))
            .count();
        // Not recorded in this loop: recovered by a nested loop's plan or
        // replayed (a nested loop's index).
        if stores == 0 {
            continue;
        }
        vars.push(VarReport {
            var: a.var,
            choice: Choice::Stored,
            recoveries: Vec::new(),
            stored_per_iteration: stores,
            reason: Some((a.reason.clone(), a.span)),
            ambiguous: true,
        });
    }
    vars.sort_by_key(|x| unit.symbol(x.var).name.clone());
    LoopReport {
        stmt: plan.stmt,
        stored_per_iteration: vars.iter().map(|x| x.stored_per_iteration).sum(),
        vars,
        saved_after_loop: plan.saved_at_exit.clone(),
        saved_before_loop: plan.saved_at_entry.clone(),
    }
}
