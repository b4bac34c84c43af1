//! "Why is this variable active?" — a chain of statements, for people
//! (CLI `--explain`, editor hovers): how the variable came to depend on an
//! independent (varied) and how a dependent came to depend on it (useful),
//! following the activity sets of [`crate::activity`].
//!
//! Contract: typed steps (the editor and the command line render them,
//! `dfort_ide::render`), at most `MAX_STEPS` per direction, never
//! looping (a variable is explained once per direction).

use crate::activity::Activity;
use dfort_ir::bitset::BitSet;
use dfort_ir::dp::{dp_of, target};
use dfort_ir::*;

const MAX_STEPS: usize = 8;

/// One step: the statement (if any) and what it shows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    pub stmt: Option<StmtId>,
    pub why: Why,
}

/// What one step of a chain shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Why {
    /// The variable is an independent of the unit (its roles or calling
    /// context).
    Independent(SymbolId),
    /// The variable is a dependent.
    Dependent(SymbolId),
    /// `target` depends on `on` through the statement.
    DependsOn { target: SymbolId, on: SymbolId },
    /// The call sets the variable from varied arguments.
    SetByCall(SymbolId),
    /// The variable is varied in the unit's calling context.
    VariedByContext(SymbolId),
    /// The variable is useful through a call or the calling context.
    UsefulThroughCall(SymbolId),
    /// `var` may name the same memory as `with` (one may-alias class,
    /// [`crate::aliases`]): what one is, the other is.
    SharesMemory { var: SymbolId, with: SymbolId },
}

/// A member of `cur`'s may-alias class the chain has not explained yet.
fn alias_step(unit: &Unit, cur: SymbolId, seen: &BitSet) -> Option<SymbolId> {
    dfort_ir::queries::class_of(unit, cur)?
        .iter()
        .copied()
        .find(|m| *m != cur && !seen.contains_id(*m))
}

impl Activity {
    /// Why `v` is varied (depends on an independent), back to an independent.
    pub fn varied_chain(&self, unit: &Unit, independents: &BitSet, v: SymbolId) -> Vec<Step> {
        let act = self;
        let mut steps = Vec::new();
        let mut seen = BitSet::default();
        let mut cur = v;
        while steps.len() < MAX_STEPS && seen.insert_id(cur) {
            if independents.contains_id(cur) {
                steps.push(Step {
                    stmt: None,
                    why: Why::Independent(cur),
                });
                break;
            }
            // The first assignment to cur that reads a varied variable.
            let found = unit.stmts.iter().find_map(|st| {
                let StmtKind::Assign { lhs, rhs } = &st.kind else {
                    return None;
                };
                let (t, _) = target(lhs)?;
                if t != cur || !act.varied_after[st.id].contains_id(cur) {
                    return None;
                }
                let from = dp_of(unit, rhs);
                let before = &act.varied_before[st.id];
                // Prefer another variable over the target itself (x = x + y).
                let w = from
                    .ids()
                    .find(|&w| before.contains_id(w) && w != cur)
                    .or_else(|| from.ids().find(|&w| before.contains_id(w)))?;
                Some((st.id, w))
            });
            let alias = alias_step(unit, cur, &seen);
            match (found, alias) {
                (Some((s, w)), _) => {
                    steps.push(Step {
                        stmt: Some(s),
                        why: Why::DependsOn { target: cur, on: w },
                    });
                    cur = w;
                }
                (None, Some(with)) => {
                    steps.push(shares_memory(cur, with));
                    cur = with;
                }
                (None, None) => {
                    // A call that makes cur varied, else the calling context.
                    let call = unit.stmts.iter().find(|st| {
                        let i = st.id;
                        matches!(st.kind, StmtKind::Call { .. })
                            && act.varied_after[i].contains_id(cur)
                            && !act.varied_before[i].contains_id(cur)
                    });
                    steps.push(match call {
                        Some(st) => Step {
                            stmt: Some(st.id),
                            why: Why::SetByCall(cur),
                        },
                        None => Step {
                            stmt: None,
                            why: Why::VariedByContext(cur),
                        },
                    });
                    break;
                }
            }
        }
        steps
    }

    /// Why `v` is useful (a dependent depends on it), forward to a dependent.
    pub fn useful_chain(&self, unit: &Unit, dependents: &BitSet, v: SymbolId) -> Vec<Step> {
        let act = self;
        let mut steps = Vec::new();
        let mut seen = BitSet::default();
        let mut cur = v;
        while steps.len() < MAX_STEPS && seen.insert_id(cur) {
            // An assignment reading cur whose target is useful after it.
            let found = unit.stmts.iter().find_map(|st| {
                let StmtKind::Assign { lhs, rhs } = &st.kind else {
                    return None;
                };
                let (t, _) = target(lhs)?;
                let useful = act.useful_after[st.id].contains_id(t);
                (useful && t != cur && dp_of(unit, rhs).contains_id(cur)).then_some((st.id, t))
            });
            let alias = alias_step(unit, cur, &seen).filter(|_| !dependents.contains_id(cur));
            match (found, alias) {
                (Some((s, t)), _) => {
                    steps.push(Step {
                        stmt: Some(s),
                        why: Why::DependsOn { target: t, on: cur },
                    });
                    cur = t;
                    if dependents.contains_id(t) {
                        steps.push(Step {
                            stmt: None,
                            why: Why::Dependent(t),
                        });
                        break;
                    }
                }
                (None, Some(with)) => {
                    steps.push(shares_memory(cur, with));
                    cur = with;
                }
                (None, None) => {
                    steps.push(Step {
                        stmt: None,
                        why: if dependents.contains_id(cur) {
                            Why::Dependent(cur)
                        } else {
                            Why::UsefulThroughCall(cur)
                        },
                    });
                    break;
                }
            }
        }
        steps
    }
}

/// The step from `var` to `with`, a variable it may share memory with.
fn shares_memory(var: SymbolId, with: SymbolId) -> Step {
    Step {
        stmt: None,
        why: Why::SharesMemory { var, with },
    }
}
