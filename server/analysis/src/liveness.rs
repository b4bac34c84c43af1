//! Adjoint liveness (Tapenade's diff-liveness): which statements the
//! forward sweep of a joint-mode adjoint must keep. A value is live when
//! the adjoint needs it (the `Req` sets of [`crate::tbr`]) or when a live
//! statement or the control flow (conditions, loop bounds, call and I/O
//! side effects) reads it; a statement that writes no live value is dead
//! in the forward sweep and the code generator may drop it.
//!
//! Contract: a backward fixpoint over the CFG ([`crate::engine`]) from the
//! values live at the unit's exit (none for the root: the adjoint needs no
//! primal result); partial writes never kill; assignments are the only
//! statements that can be dead (control, calls and I/O are kept).

use crate::bitset::BitSet;
use crate::dp::{index_vars, target, vars, writes};
use crate::engine::{solve, Direction};
use crate::tbr::Tbr;
use dfort_ir::cfg::NodeKind;
use dfort_ir::*;

/// Statements the forward sweep can drop, in statement order.
#[derive(Clone, Debug, Default)]
pub struct Liveness {
    pub dead: Vec<StmtId>,
    /// Live values just after each statement, indexed by `StmtId`.
    pub live_after: Vec<BitSet>,
}

/// The values a statement reads (all of them, indices included) and the
/// ones it overwrites completely.
fn uses_kills(program: &Program, unit: &Unit, st: &Stmt) -> (BitSet, BitSet) {
    let mut uses = BitSet::default();
    let mut kills = BitSet::default();
    match &st.kind {
        StmtKind::Assign { lhs, rhs } => {
            vars(unit, rhs, &mut uses);
            index_vars(unit, lhs, &mut uses);
            if let Some((t, true)) = target(lhs) {
                kills.insert(t.0 as usize);
            }
        }
        _ => {
            for e in st.kind.exprs() {
                vars(unit, e, &mut uses);
            }
            for (v, whole) in writes(program, unit, st) {
                if whole && matches!(st.kind, StmtKind::Io { .. }) {
                    kills.insert(v.0 as usize);
                }
            }
        }
    }
    (uses, kills)
}

/// Whether a statement always stays in the forward sweep: everything but
/// assignments.
fn always_live(st: &Stmt) -> bool {
    !matches!(st.kind, StmtKind::Assign { .. })
}

/// `live_at_exit`: what the unit's caller still needs after it returns (empty
/// for the root of a joint-mode adjoint; a called unit's outputs are needed
/// by its caller's forward sweep).
pub fn analyze(program: &Program, unit: &Unit, tbr: &Tbr, live_at_exit: &BitSet) -> Liveness {
    let cfg = &unit.cfg;
    let info: Vec<(BitSet, BitSet)> = unit
        .stmts
        .iter()
        .map(|st| uses_kills(program, unit, st))
        .collect();
    let step = |id: StmtId, after: &BitSet| -> (bool, BitSet) {
        let st = unit.stmt(id);
        let (uses, kills) = &info[id.0 as usize];
        let writes_live = match &st.kind {
            StmtKind::Assign { lhs, .. } => {
                target(lhs).is_some_and(|(t, _)| after.contains(t.0 as usize))
            }
            _ => false,
        };
        let live = writes_live || always_live(st);
        let mut before = after.clone();
        before.subtract(kills);
        if live {
            before.union_with(uses);
        }
        if let Some(req) = tbr.req.get(id.0 as usize) {
            before.union_with(req);
        }
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
                if let Some(id) = nd.stmts.first() {
                    s.union_with(&info[id.0 as usize].0);
                }
                s
            }
            _ => output.clone(),
        }
    });
    let mut out = Liveness {
        dead: Vec::new(),
        live_after: vec![BitSet::default(); unit.stmts.len()],
    };
    for (i, node) in cfg.nodes.iter().enumerate() {
        if node.kind != NodeKind::BasicBlock {
            continue;
        }
        let mut s = sol.after[i].clone();
        for id in node.stmts.iter().rev() {
            out.live_after[id.0 as usize] = s.clone();
            let (live, before) = step(*id, &s);
            if !live {
                out.dead.push(*id);
            }
            s = before;
        }
    }
    out.dead.sort();
    out
}
