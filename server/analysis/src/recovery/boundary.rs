//! What a loop's plan needs at its boundaries (paper 003 §4: the outputs
//! VO are known when the reversed loop starts; Figure 8(a) line 14
//! `push(i,j)` after the loop, Figure 8(b) line 2 `l = ilB`).
//!
//! Contract: given the versions' recoveries and the loop-carried
//! variables (those whose VO is in GA), [`decide`] says
//! - which start versions each reversed iteration hands to the previous
//!   one;
//! - which final values the forward sweep saves after the loop: the
//!   loop-carried variables (except the counter of a counted WHILE loop,
//!   whose final value is computed from the trip count) and the loop
//!   invariants the recoveries read that the unit writes elsewhere;
//! - which tractable variables a statement before the loop needs that
//!   the reversed loop does not give back (saved at entry);
//! - which versions every iteration pushes, in push order.

use super::{How, Origin, Version};
use crate::tbr::Tbr;
use dfort_ir::bitset::BitSet;
use dfort_ir::*;
use std::collections::HashMap;

pub(super) struct Boundary {
    pub starts: Vec<usize>,
    pub saved_at_exit: Vec<SymbolId>,
    pub computed_at_exit: Option<SymbolId>,
    pub saved_at_entry: Vec<SymbolId>,
    pub stored: Vec<usize>,
}

/// The boundary decisions of loop `lp` (see the module contract).
/// `carried`: the loop-carried variables; `starts_of`: each tractable
/// variable's start version; `counter`: the counter of a counted WHILE
/// loop; `own`: the loop's index; `written_anywhere`: what the unit
/// writes.
#[allow(clippy::too_many_arguments)]
pub(super) fn decide(
    unit: &Unit,
    tbr: &Tbr,
    lp: StmtId,
    handled: &BitSet,
    versions: &[Version],
    carried: &[SymbolId],
    starts_of: &HashMap<SymbolId, usize>,
    counter: Option<SymbolId>,
    own: Option<SymbolId>,
    written_anywhere: &BitSet,
) -> Boundary {
    let mut starts: Vec<usize> = carried
        .iter()
        .filter_map(|var| starts_of.get(var).copied())
        .collect();
    starts.sort();
    // Loop-carried variables: their final values are saved after the
    // loop, but a counted WHILE loop's counter's is computed.
    let computed_at_exit = counter.filter(|v| carried.contains(v));
    let mut saved_at_exit: Vec<SymbolId> = carried
        .iter()
        .copied()
        .filter(|v| Some(*v) != computed_at_exit)
        .collect();
    // Loop invariants the recovery reads that something else may change.
    let mut fixed = BitSet::default();
    for v in versions {
        match &v.how {
            How::Inverted { term, .. } | How::Recomputed { term } => {
                term.fixed_vars(unit, &mut fixed)
            }
            _ => {}
        }
    }
    for s in fixed.ids() {
        let sym = unit.symbol(s);
        if Some(s) != own
            && sym.rank() == 0
            && !sym.attrs.parameter
            && written_anywhere.contains_id(s)
        {
            saved_at_exit.push(s);
        }
    }
    saved_at_exit.sort();
    saved_at_exit.dedup();
    let entry_req = tbr.in_req.get(lp).cloned().unwrap_or_default();
    let saved_at_entry: Vec<SymbolId> = handled
        .ids()
        .filter(|s| entry_req.contains_id(*s) && !carried.contains(s))
        .collect();
    let mut stored: Vec<usize> = (0..versions.len())
        .filter(|&v| matches!(versions[v].how, How::Stored { .. }))
        .collect();
    stored.sort_by_key(|&v| (body_order(&versions[v]), v));
    Boundary {
        starts,
        saved_at_exit,
        computed_at_exit,
        saved_at_entry,
        stored,
    }
}

/// Where a version appears in the body: start versions first.
fn body_order(v: &Version) -> usize {
    match v.origin {
        Origin::Start => 0,
        Origin::Def(p) | Origin::Opaque(p) => p + 1,
    }
}
