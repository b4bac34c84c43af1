//! Which address variables a loop's token game handles (paper 003 §3:
//! the values of RA, as address–definition pairs), and why the others
//! are left to TBR's recording.
//!
//! Contract: a variable is *tractable* in a DO loop when it is an
//! integer scalar of the unit's own (local or dummy, not a parameter)
//! that the body writes only by assignments at its top level, and it is
//! not the loop's own index. Any other write — inside a branch or a
//! nested loop, as a nested loop's index, by a CALL, a READ or a
//! function reference — makes it ambiguous: an [`Ambiguous`] with the
//! kind of write and the first statement that makes it so.

use super::reason::{Ambiguity, Ambiguous};
use super::{loop_body, own_index, planned_loops, subtree};
use dfort_ir::bitset::BitSet;
use dfort_ir::dp::{target, writes};
use dfort_ir::*;
use std::collections::HashMap;

/// An integer scalar variable of the unit's own (local or dummy).
pub(crate) fn address_candidate(unit: &Unit, s: SymbolId) -> bool {
    let sym = unit.symbol(s);
    sym.ty.base == BaseType::Integer
        && sym.rank() == 0
        && !sym.attrs.parameter
        && matches!(sym.storage, Storage::Local | Storage::Dummy(_))
        && !crate::aliases::is_aliased(unit, s)
}

/// The tractable variables of loop `lp`, and the ambiguous address
/// variables written in its body with why (in source order).
pub(super) fn handled_vars(program: &Program, unit: &Unit, lp: StmtId) -> (BitSet, Vec<Ambiguous>) {
    let body = loop_body(unit, lp);
    let mut top = BitSet::default();
    let mut bad: HashMap<SymbolId, Ambiguous> = HashMap::new();
    for &id in body {
        let st = unit.stmt(id);
        if let StmtKind::Assign { lhs, .. } = &st.kind {
            if let ExprKind::Var(v) = lhs.kind {
                if address_candidate(unit, v) {
                    top.insert_id(v);
                }
            }
        }
    }
    let tops: Vec<StmtId> = body.to_vec();
    // Loops checkpointed with `binomial-ckp`: their snapshot, popped in
    // the reverse sweep, sets what they read back to its value at their
    // entry, under an inversion scheduled across them (seed 5151, case 8).
    let checkpointed: Vec<StmtId> = crate::binomial::marks(unit)
        .into_iter()
        .filter_map(|m| m.stmt)
        .collect();
    for id in subtree(unit, body) {
        let st = unit.stmt(id);
        let top_level = tops.contains(&id);
        let mut note = |v: SymbolId, why: Ambiguity| {
            if address_candidate(unit, v) {
                bad.entry(v).or_insert(Ambiguous {
                    var: v,
                    why,
                    span: st.span,
                });
            }
        };
        if checkpointed.contains(&id) && matches!(st.kind, StmtKind::Do { .. }) {
            for inner in subtree(unit, &[id]) {
                for e in unit.stmt(inner).kind.exprs() {
                    let mut read = BitSet::default();
                    dfort_ir::dp::vars(unit, e, &mut read);
                    for v in read.ids() {
                        note(v, Ambiguity::RestoredByCheckpoint);
                    }
                }
            }
        }
        match &st.kind {
            StmtKind::Assign { lhs, .. } if !top_level => {
                if let Some((v, _)) = target(lhs) {
                    note(v, Ambiguity::InBranchOrNestedLoop);
                }
            }
            StmtKind::Do {
                control: DoControl::Counted { var, .. },
                ..
            } => note(*var, Ambiguity::LoopIndex { nested: true }),
            StmtKind::Call { .. } => {
                for (v, _) in writes(program, unit, st) {
                    note(v, Ambiguity::SetByCall);
                }
            }
            StmtKind::Io { .. } => {
                for (v, _) in writes(program, unit, st) {
                    note(v, Ambiguity::SetByRead);
                }
            }
            _ => {}
        }
        for e in st.kind.exprs() {
            e.walk(&mut |x| {
                if let ExprKind::FunctionCall { args, .. } = &x.kind {
                    for a in args {
                        if let Some((v, _)) = target(&a.value) {
                            note(v, Ambiguity::SetByFunctionReference);
                        }
                    }
                }
            });
        }
    }
    for v in bad.keys() {
        top.remove_id(*v);
    }
    if let Some(i) = own_index(unit, lp) {
        top.remove_id(i);
    }
    let mut amb: Vec<Ambiguous> = bad.into_values().collect();
    amb.sort_by_key(|a| (a.span.range.start, a.var));
    (top, amb)
}

/// Per statement (by `StmtId`): the variables whose recovery the plans of
/// the loops around it take over from TBR's recording.
pub fn handled(program: &Program, unit: &Unit) -> IdVec<StmtId, BitSet> {
    let mut out: IdVec<StmtId, BitSet> = IdVec::from_elem(BitSet::default(), unit.stmts.len());
    for lp in planned_loops(unit) {
        let (h, _) = handled_vars(program, unit, lp);
        if h.is_empty() {
            continue;
        }
        for id in subtree(unit, loop_body(unit, lp)) {
            out[id].union_with(&h);
        }
    }
    out
}
