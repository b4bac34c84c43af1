//! Adjoint liveness (Tapenade's diff-liveness): which statements the
//! forward sweep of a joint-mode adjoint must keep. A value is live when
//! the adjoint needs it (what each statement's adjoint reads, the
//! `needs` of [`crate::tbr`]: its Req and the value it overwrites when
//! its own adjoint reads it, whether or not the statement itself is
//! live) or when a live
//! statement or the control flow (conditions, loop bounds, call and I/O
//! side effects) reads it; a statement that writes no live value is dead
//! in the forward sweep and the code generator may drop it.
//!
//! Contract: a backward fixpoint over the CFG ([`crate::engine`]) from the
//! values live at the unit's exit — none in joint mode, for the root and
//! callees alike: a unit's adjoint runs its own forward sweep just before
//! its reverse sweep, and a callee's primal results reach its caller
//! through the call to the original, not through its adjoint
//! ([`crate::decisions`]); partial writes never kill; assignments are the only
//! statements that can be dead (control, calls and I/O are kept), and an
//! assignment that records the value it overwrites is kept when the value
//! may be overwritten again after it (TBR counted on that record: the
//! later overwrite does not record it).
//!
//! A counted DO loop is dead too ([`dead_loops`]) when everything in its
//! body is (dead assignments, CONTINUEs, dead loops), its control calls
//! no user function, it carries no label and its index is not live where
//! it exits: the forward sweep then writes neither its head nor its body.
//! So is an IF or SELECT CASE ([`dead_branches`]) whose arms hold only
//! dead statements and CONTINUEs, that records no arm, carries no label
//! and references no function in its conditions.

use crate::effects::{stmt_effects, LocalEffects, ProgramEffects};
use crate::engine::{solve, Direction};
use crate::tbr::Tbr;
use dfort_ir::bitset::BitSet;
use dfort_ir::cfg::{EdgeKind, NodeKind};
use dfort_ir::dp::{target, writes};
use dfort_ir::*;
use std::collections::BTreeMap;

/// Statements the forward sweep can drop, in statement order.
#[derive(Clone, Debug, Default)]
pub struct Liveness {
    pub dead: Vec<StmtId>,
    /// Live values just after each statement, indexed by `StmtId`.
    pub live_after: IdVec<StmtId, BitSet>,
    /// What the adjoint reads of the values the unit starts with.
    pub live_at_entry: BitSet,
    /// Live values where each counted DO loop exits (its LOOP node's exit
    /// edge), by DO statement.
    pub live_at_loop_exit: BTreeMap<StmtId, BitSet>,
}

/// The values a statement reads (all of them, indices included, and what
/// the procedures it calls read), the ones it overwrites completely, and
/// whether it must stay whatever it assigns: it references a user
/// function (its call stays in the forward sweep, and its adjoint is
/// called in the reverse sweep with the same arguments).
fn uses_kills(
    program: &Program,
    unit: &Unit,
    st: &Stmt,
    effects: &ProgramEffects,
) -> (BitSet, BitSet, bool) {
    let mut fx = LocalEffects::default();
    stmt_effects(program, unit, st, effects, &mut fx);
    let mut kills = BitSet::default();
    let mut side_effects = false;
    match &st.kind {
        StmtKind::Assign { lhs, .. } => {
            if let Some((t, whole)) = target(lhs) {
                if whole {
                    kills.insert_id(t);
                }
                side_effects = fx.writes.ids::<SymbolId>().any(|w| w != t);
            }
            st.kind.exprs().iter().for_each(|e| {
                e.walk(&mut |x| {
                    side_effects |= matches!(
                        x.kind,
                        ExprKind::FunctionCall {
                            target: CallTarget::Unit(_),
                            ..
                        }
                    )
                })
            });
        }
        _ => {
            for (v, whole) in writes(program, unit, st) {
                if whole && matches!(st.kind, StmtKind::Io { .. }) {
                    kills.insert_id(v);
                }
            }
        }
    }
    // Overwriting one member of a may-alias class kills none.
    for class in &unit.aliases {
        for s in class {
            kills.remove_id(*s);
        }
    }
    (fx.reads, kills, side_effects)
}

/// Whether a statement always stays in the forward sweep: everything but
/// assignments, and assignments that reference user functions.
fn always_live(st: &Stmt, side_effects: bool) -> bool {
    !matches!(st.kind, StmtKind::Assign { .. }) || side_effects
}

/// The assignments inside a WHERE whose target one of its masks reads.
/// They stay: the CFG reads every mask where the construct starts
/// ([`dfort_ir::cfg`]), but an `elsewhere (mask)` is evaluated after the
/// arms before it and reads what they assign.
fn read_by_masks(unit: &Unit) -> Vec<StmtId> {
    let mut out = Vec::new();
    for st in &unit.stmts {
        let StmtKind::Where { arms, .. } = &st.kind else {
            continue;
        };
        let mut reads = BitSet::default();
        for a in arms {
            a.cond.walk(&mut |x| {
                if let ExprKind::Var(v) | ExprKind::ArrayRef { array: v, .. } = &x.kind {
                    reads.insert_id(*v);
                }
            });
        }
        let mut stack: Vec<StmtId> = st.kind.blocks().concat();
        while let Some(id) = stack.pop() {
            let inner = unit.stmt(id);
            if let StmtKind::Assign { lhs, .. } = &inner.kind {
                if target(lhs).is_some_and(|(t, _)| reads.contains_id(t)) {
                    out.push(id);
                }
            }
            stack.extend(inner.kind.blocks().concat());
        }
    }
    out
}

/// `live_at_exit`: what the unit's caller still needs after it returns (empty
/// for the root of a joint-mode adjoint; a called unit's outputs are needed
/// by its caller's forward sweep).
/// `effects`: every unit's interface effects ([`crate::effects::all`]).
pub fn analyze(
    program: &Program,
    unit: &Unit,
    tbr: &Tbr,
    effects: &ProgramEffects,
    live_at_exit: &BitSet,
) -> Liveness {
    analyze_keeping(program, unit, tbr, effects, live_at_exit, &[])
}

/// [`analyze`], with the assignments in `keep` live whatever they write:
/// those whose values the address recovery of paper 003 reuses
/// ([`crate::recovery::kept_assignments`]).
pub fn analyze_keeping(
    program: &Program,
    unit: &Unit,
    tbr: &Tbr,
    effects: &ProgramEffects,
    live_at_exit: &BitSet,
    keep: &[StmtId],
) -> Liveness {
    let cfg = &unit.cfg;
    let masked = read_by_masks(unit);
    // A statement that records a value stays when something after it
    // overwrites that value again: TBR counted on its record there (the
    // later overwrite does not record the value a second time).
    let after = crate::effects::written_after(program, unit, effects);
    let recording: Vec<StmtId> = tbr
        .records
        .iter()
        .filter(|r| after.get(r.stmt).is_some_and(|w| w.contains_id(r.variable)))
        .map(|r| r.stmt)
        .collect();
    let info: IdVec<StmtId, (BitSet, BitSet, bool)> = unit
        .stmts
        .iter()
        .map(|st| uses_kills(program, unit, st, effects))
        .collect();
    let step = |id: StmtId, after: &BitSet| -> (bool, BitSet) {
        let st = unit.stmt(id);
        let (uses, kills, side_effects) = &info[id];
        let writes_live = match &st.kind {
            StmtKind::Assign { lhs, .. } => target(lhs).is_some_and(|(t, _)| after.contains_id(t)),
            _ => false,
        };
        let live = writes_live
            || always_live(st, *side_effects)
            || keep.contains(&id)
            || masked.contains(&id)
            || recording.contains(&id);
        let mut before = after.clone();
        before.subtract(kills);
        if live {
            before.union_with(uses);
        }
        // The statement's adjoint runs whether or not the statement stays
        // in the forward sweep: what it reads is live before it.
        if let Some(needs) = tbr.needs.get(id) {
            before.union_with(needs);
        }
        // A member of a may-alias class is live when another is.
        crate::aliases::close(unit, &mut before);
        (live, before)
    };
    let sol = solve(cfg, Direction::Backward, live_at_exit, |node, output| {
        let nd = cfg.node(node);
        match nd.kind {
            NodeKind::BasicBlock => {
                let mut s = output.clone();
                for id in nd.stmts.iter().rev() {
                    s = step(*id, &s).1;
                }
                s
            }
            NodeKind::Loop | NodeKind::Branch => {
                let mut s = output.clone();
                if let Some(&id) = nd.stmts.first() {
                    // A counted DO assigns its index on every path
                    // through its head (the start value, or the next one):
                    // the value the index had before is not read there.
                    if let StmtKind::Do {
                        control: DoControl::Counted { var, .. },
                        ..
                    } = &unit.stmt(id).kind
                    {
                        s.remove_id(*var);
                    }
                    s.union_with(&info[id].0);
                }
                s
            }
            _ => output.clone(),
        }
    });
    let mut out = Liveness {
        dead: Vec::new(),
        live_after: IdVec::from_elem(BitSet::default(), unit.stmts.len()),
        live_at_entry: sol.before.get(cfg.entry).cloned().unwrap_or_default(),
        live_at_loop_exit: BTreeMap::new(),
    };
    for (i, node) in cfg.nodes.iter_enumerated() {
        if node.kind == NodeKind::Loop {
            let exit = node.succs.iter().find(|(_, e)| *e == EdgeKind::LoopExit);
            if let (Some(&id), Some(&(to, _))) = (node.stmts.first(), exit) {
                let live = sol.before.get(to).cloned().unwrap_or_default();
                out.live_at_loop_exit.insert(id, live);
            }
        }
        if node.kind != NodeKind::BasicBlock {
            continue;
        }
        let mut s = sol.after[i].clone();
        for &id in node.stmts.iter().rev() {
            out.live_after[id] = s.clone();
            let (live, before) = step(id, &s);
            if !live {
                out.dead.push(id);
            }
            s = before;
        }
    }
    out.dead.sort();
    out
}

/// The IFs and SELECT CASEs the forward sweep can drop: `idle` ones (they
/// record no arm, [`crate::reversal::Reversal::NothingToReverse`], and
/// their conditions or selector reference no function: evaluating them
/// has no effect) without a label whose arms hold only dead statements
/// and CONTINUEs. Inner constructs first.
pub fn dead_branches(unit: &Unit, live: &mut Liveness, idle: impl Fn(StmtId) -> bool) {
    let branches: Vec<StmtId> = unit
        .stmts
        .iter()
        .filter(|st| {
            st.label.is_none()
                && idle(st.id)
                && matches!(st.kind, StmtKind::If { .. } | StmtKind::SelectCase { .. })
                && !live.dead.contains(&st.id)
        })
        .map(|st| st.id)
        .collect();
    crate::reversal::inner_first(branches, |id| {
        let arms_dead = unit
            .stmt(id)
            .kind
            .blocks()
            .into_iter()
            .flatten()
            .all(|b| live.dead.contains(b) || matches!(unit.stmt(*b).kind, StmtKind::Continue));
        if arms_dead {
            live.dead.push(id);
        }
        arms_dead
    });
    live.dead.sort();
}

/// The counted DO loops the forward sweep can drop whole, added to
/// `live.dead` (innermost first, so that an outer loop holding only dead
/// loops is dead too). `replayed`: whether a loop is reversed by replaying
/// its bounds ([`crate::reversal::Reversal::Replay`]) and nothing in its
/// control references a function; no other reversal (a binomial
/// schedule, a pushed trip count) runs without its forward loop. A loop
/// is dead when every statement of its body is dead or a CONTINUE (a
/// jump to the terminal label would itself be live), the DO statement
/// carries no label (a jump to it) and its index is not live where it
/// exits.
pub fn dead_loops(unit: &Unit, live: &mut Liveness, replayed: impl Fn(StmtId) -> bool) {
    let mut loops: Vec<StmtId> = unit
        .stmts
        .iter()
        .filter(|st| {
            st.label.is_none()
                && replayed(st.id)
                && matches!(
                    st.kind,
                    StmtKind::Do {
                        control: DoControl::Counted { .. },
                        ..
                    }
                )
        })
        .map(|st| st.id)
        .collect();
    // Nested loops come after the loops holding them.
    loops.sort_by(|a, b| b.cmp(a));
    for id in loops {
        let st = unit.stmt(id);
        let StmtKind::Do {
            control: DoControl::Counted { var, .. },
            body,
            ..
        } = &st.kind
        else {
            continue;
        };
        let body_dead = body
            .iter()
            .all(|b| live.dead.contains(b) || matches!(unit.stmt(*b).kind, StmtKind::Continue));
        let index_live = live
            .live_at_loop_exit
            .get(&id)
            .is_none_or(|l| l.contains_id(*var));
        if body_dead && !index_live {
            live.dead.push(id);
        }
    }
    live.dead.sort();
}
