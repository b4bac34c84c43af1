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
//! callers turn them into lines. Everything is a typed fact: what a
//! recovery computes is a [`Formula`], why a value is stored a
//! [`Reason`]; the sentences are the ide crate's renderer's
//! (`dfort_ide::render`), shared by the editor and the command line.
//! A unit with jumps has one report for the whole unit ([`crate::undo`]):
//! per exact variable the reverse sweep reads, one recovery per
//! assignment that must be undone (inverted, or stored by TBR), and the
//! other integer scalars it reads as ambiguous (saved at the end of every
//! basic block whose adjoint reads them).

use crate::counted_while::CountedWhile;
use crate::decisions::{Push, UnitDecisions};
use crate::recovery::{subtree, Ambiguity, Blocker, How, Origin, Plan, Term};
use crate::tbr::Tbr;
use crate::undo::UnitUndo;
use dfort_ir::bitset::BitSet;
use dfort_ir::*;

/// How a value is recovered, cheapest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Choice {
    /// Known when the reversed iteration starts (the loop's final value,
    /// saved once after the loop, or computed from a counted WHILE loop's
    /// trip count).
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
    /// What the reverse sweep computes: `k ← j - 2` (inverted,
    /// recomputed), `k` (stored, final), `l ← max(0, ilb)` (a counted
    /// WHILE loop's final counter).
    pub formula: Formula,
    pub blocker: Option<Blocker>,
}

/// What a recovery computes, rendered on demand.
#[derive(Clone, Debug)]
pub enum Formula {
    /// The variable's value itself (stored, or known when the reversed
    /// iteration starts): `k`.
    Value(SymbolId),
    /// `var ← term`: `term` reads versions whose variables are
    /// `version_vars` (indexed by version): `k ← j - 2`.
    Assign {
        var: SymbolId,
        term: Term,
        version_vars: Vec<SymbolId>,
    },
    /// The final value of a counted WHILE loop's counter, computed from
    /// the trip count: `l ← max(0, ilb)`.
    FromTripCount(CountedWhile),
}

/// Why a variable's values are stored.
#[derive(Clone, Debug, PartialEq)]
pub enum Reason {
    /// A non-invertible operation blocks the inversion of one of them.
    Blocked(Blocker),
    /// An ambiguous definition: the variable is left to TBR's recording.
    Ambiguous { why: Ambiguity, span: Span },
}

impl Reason {
    /// Where the blocking operation or the ambiguous definition is.
    pub fn span(&self) -> Span {
        match self {
            Reason::Blocked(b) => b.span,
            Reason::Ambiguous { span, .. } => *span,
        }
    }
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
    pub reason: Option<Reason>,
    /// Left to TBR's recording (an ambiguous definition).
    pub ambiguous: bool,
}

#[derive(Clone, Debug)]
pub struct LoopReport {
    /// The DO statement; `None` for a unit with jumps, whose report
    /// covers the whole unit.
    pub stmt: Option<StmtId>,
    pub vars: Vec<VarReport>,
    pub saved_after_loop: Vec<SymbolId>,
    /// The counted WHILE loop ([`crate::counted_while`]) whose counter's
    /// final value the reversal computes from the trip count instead of
    /// saving it (`l ← max(0, ilb)`).
    pub computed_after_loop: Option<CountedWhile>,
    pub saved_before_loop: Vec<SymbolId>,
    pub stored_per_iteration: usize,
}

/// The report of one loop's plan; `pushed` is what the forward sweep
/// pushes for TBR ([`UnitDecisions::pushed`]).
pub fn report(unit: &Unit, plan: &Plan, tbr: &Tbr, pushed: &[Push]) -> LoopReport {
    let vs = &plan.versions;
    let version_vars: Vec<SymbolId> = vs.iter().map(|v| v.var).collect();
    let assign = |var: SymbolId, term: &Term| Formula::Assign {
        var,
        term: term.clone(),
        version_vars: version_vars.clone(),
    };
    let mut vars: Vec<VarReport> = Vec::new();
    for ver in vs {
        let (choice, inverts, formula, blocker) = match &ver.how {
            How::Unneeded => continue,
            How::End => (Choice::Final, None, Formula::Value(ver.var), None),
            How::Inverted { from, term } => (
                Choice::Inverted,
                Some(plan.body[*from]),
                assign(ver.var, term),
                None,
            ),
            How::Recomputed { term } => (Choice::Recomputed, None, assign(ver.var, term), None),
            How::Stored { reason } => (
                Choice::Stored,
                None,
                Formula::Value(ver.var),
                reason.clone(),
            ),
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
            formula,
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
    summarize(&mut vars);
    // Ambiguous address variables the loop's adjoint reads.
    let in_body = subtree(unit, &plan.body);
    let mut read = BitSet::default();
    for &id in &in_body {
        if let Some(r) = tbr.req.get(id) {
            read.union_with(r);
        }
    }
    for a in &plan.ambiguous {
        if !read.contains_id(a.var) || vars.iter().any(|x| x.var == a.var) {
            continue;
        }
        let stores = pushed
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
            reason: Some(Reason::Ambiguous {
                why: a.why,
                span: a.span,
            }),
            ambiguous: true,
        });
    }
    vars.sort_by_key(|x| unit.symbol(x.var).name.clone());
    LoopReport {
        stmt: Some(plan.stmt),
        stored_per_iteration: vars.iter().map(|x| x.stored_per_iteration).sum(),
        vars,
        saved_after_loop: plan.saved_at_exit.clone(),
        computed_after_loop: None,
        saved_before_loop: plan.saved_at_entry.clone(),
    }
}

/// Each variable's choice (the costliest of its recoveries; the final
/// value alone is not a choice when others are recovered), its pushes
/// and the first blocking operation.
fn summarize(vars: &mut [VarReport]) {
    for x in vars.iter_mut() {
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
            .find_map(|r| r.blocker.clone())
            .map(Reason::Blocked);
    }
}

/// The report of a unit with jumps (none when its reverse sweep reads no
/// integer that changes).
pub fn unit_report(unit: &Unit, undo: &UnitUndo, tbr: &Tbr, pushed: &[Push]) -> Option<LoopReport> {
    let mut read = BitSet::default();
    for r in &tbr.req {
        read.union_with(r);
    }
    let mut vars: Vec<VarReport> = Vec::new();
    for (id, st) in unit.stmts.iter_enumerated() {
        let StmtKind::Assign { lhs, .. } = &st.kind else {
            continue;
        };
        let ExprKind::Var(v) = lhs.kind else {
            continue;
        };
        if !undo.exact.contains_id(v) {
            continue;
        }
        let needed = tbr.in_req.get(id).is_some_and(|r| r.contains_id(v));
        let r = match undo.inverted.get(&id) {
            Some(u) if needed => Recovery {
                choice: Choice::Inverted,
                defined_at: id,
                inverts: Some(id),
                // The undo's term reads the variable as version 0.
                formula: Formula::Assign {
                    var: v,
                    term: u.inverse.clone(),
                    version_vars: vec![v],
                },
                blocker: None,
            },
            _ if pushed.iter().any(|r| r.stmt == id && r.variable == v) => Recovery {
                choice: Choice::Stored,
                defined_at: id,
                inverts: None,
                formula: Formula::Value(v),
                blocker: undo.blocked.get(&id).cloned(),
            },
            _ => continue,
        };
        match vars.iter_mut().find(|x| x.var == v) {
            Some(x) => x.recoveries.push(r),
            None => vars.push(VarReport {
                var: v,
                choice: r.choice,
                recoveries: vec![r],
                stored_per_iteration: 0,
                reason: None,
                ambiguous: false,
            }),
        }
    }
    summarize(&mut vars);
    for a in &undo.inexact {
        if !read.contains_id(a.var) {
            continue;
        }
        // Saved at the end of each basic block whose adjoint reads it.
        let blocks = unit
            .cfg
            .nodes
            .iter()
            .filter(|n| n.kind == dfort_ir::cfg::NodeKind::BasicBlock)
            .filter(|n| {
                n.stmts
                    .iter()
                    .any(|s| tbr.req.get(*s).is_some_and(|r| r.contains_id(a.var)))
            })
            .count();
        vars.push(VarReport {
            var: a.var,
            choice: Choice::Stored,
            recoveries: Vec::new(),
            stored_per_iteration: blocks,
            reason: Some(Reason::Ambiguous {
                why: a.why,
                span: a.span,
            }),
            ambiguous: true,
        });
    }
    if vars.is_empty() {
        return None;
    }
    vars.sort_by_key(|x| unit.symbol(x.var).name.clone());
    Some(LoopReport {
        stmt: None,
        stored_per_iteration: vars.iter().map(|x| x.stored_per_iteration).sum(),
        vars,
        saved_after_loop: Vec::new(),
        computed_after_loop: None,
        saved_before_loop: Vec::new(),
    })
}

/// The reports of a unit's address recovery as the adjoint's decisions
/// `d` (with inversion) make it: one per planned loop with address
/// variables, or one for a unit with jumps.
pub fn unit_reports(
    unit: &Unit,
    shape: &crate::shape::UnitShape,
    d: &UnitDecisions,
    tbr: &Tbr,
) -> Vec<LoopReport> {
    let (plans, pushed) = (&d.plans, &d.pushed);
    if !unit.cfg.structured {
        return unit_report(unit, &d.undo, tbr, pushed)
            .into_iter()
            .collect();
    }
    let counted = &shape.counted;
    plans
        .iter()
        .map(|p| {
            let mut r = report(unit, p, tbr, pushed);
            let cw = p.computed_at_exit.zip(counted.get(&p.stmt));
            if let Some((v, cw)) = cw {
                // The final value's recovery is the computation.
                for x in r.vars.iter_mut().filter(|x| x.var == v) {
                    for rc in x
                        .recoveries
                        .iter_mut()
                        .filter(|rc| rc.choice == Choice::Final)
                    {
                        rc.formula = Formula::FromTripCount(cw.clone());
                    }
                }
                r.computed_after_loop = Some(cw.clone());
            }
            r
        })
        .filter(|r| !r.vars.is_empty())
        .collect()
}
