//! What the adjoint of one unit decides before any code is written, in
//! one place, so that the generator, `dfort analyze` and the editor read
//! the same facts instead of re-deriving them.
//!
//! Contract: given a unit, its TBR result (paper 000 §5) and the effects
//! of every unit, [`decide`] returns how each construct is reversed
//! (paper 001, [`crate::reversal`]), the loops' address-recovery plans
//! (paper 003 §3–4), the assignments the reverse sweep of a unit with
//! jumps inverts (paper 003 §5), the assignments the joint-mode forward
//! sweep drops (adjoint liveness, paper 000 §6, keeping what the plans and
//! the inversions reuse) and what the unit's adjoint reads of the values
//! it is called with. In joint mode a unit's adjoint runs its own forward
//! sweep just before its reverse sweep, so nothing is live after the
//! unit: a callee's primal results reach its caller through the call to
//! the original, not through the callee's adjoint.

use crate::bitset::BitSet;
use crate::dp::vars;
use crate::effects::Effects;
use crate::liveness;
use crate::recovery::{self, Plan};
use crate::reversal::{self, UnitReversal};
use crate::tbr::{Record, Tbr};
use crate::undo::UnitUndo;
use dfort_ir::{ExprKind, Program, StmtId, Unit};

/// What the forward sweep records.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Recording {
    /// TBR, with loops' address values recovered by inversion and
    /// recomputation where the token game finds a way (paper 003); the
    /// default.
    #[default]
    Inversion,
    /// TBR, with every overwritten address value stored (`--no-inversion`).
    Tbr,
    /// Every overwritten active value (`--no-tbr`).
    StoreAll,
}

impl Recording {
    /// The mode of the command-line flags `--no-tbr` and `--no-inversion`.
    pub fn from_flags(no_tbr: bool, no_inversion: bool) -> Recording {
        match (no_tbr, no_inversion) {
            (true, _) => Recording::StoreAll,
            (false, true) => Recording::Tbr,
            (false, false) => Recording::Inversion,
        }
    }
    pub fn store_all(self) -> bool {
        self == Recording::StoreAll
    }
    pub fn inversion(self) -> bool {
        self == Recording::Inversion
    }
    /// The name `dfort analyze --format json` gives the mode.
    pub fn as_str(self) -> &'static str {
        match self {
            Recording::Inversion => "tbr+inversion",
            Recording::Tbr => "tbr",
            Recording::StoreAll => "store-all",
        }
    }
}

/// The decisions of one unit's adjoint.
#[derive(Clone, Debug)]
pub struct UnitDecisions {
    /// How each construct is reversed (paper 001).
    pub reversal: UnitReversal,
    /// The recovery plans of its loops (paper 003); empty without
    /// inversion.
    pub plans: Vec<Plan>,
    /// In a unit with jumps: the assignments the reverse sweep inverts.
    pub undo: UnitUndo,
    /// The assignments its forward sweep drops (none with `--no-tbr`,
    /// which keeps every statement; never one that references a
    /// function, whose call the adjoint checkpoints).
    pub dead: Vec<StmtId>,
    /// What its forward sweep pushes for TBR: the records of the
    /// statements it keeps, in TBR's order.
    pub pushed: Vec<Record>,
    /// What its adjoint routine reads of the values it is called with:
    /// what adjoint liveness finds live at entry and the variables its
    /// declarations' bounds read; `None` when it reads everything the
    /// unit reads (`--no-tbr`).
    pub entry_needs: Option<BitSet>,
}

/// The decisions of `unit`'s adjoint under `recording`.
pub fn decide(
    program: &Program,
    unit: &Unit,
    tbr: &Tbr,
    effects: &[Effects],
    recording: Recording,
) -> UnitDecisions {
    let (plans, undo) = if recording.inversion() {
        (
            recovery::plan_unit(program, unit, tbr),
            crate::undo::undo_unit(program, unit),
        )
    } else {
        (Vec::new(), UnitUndo::default())
    };
    if recording.store_all() {
        return UnitDecisions {
            reversal: reversal::of(program, unit),
            plans,
            undo,
            dead: Vec::new(),
            pushed: tbr.records.clone(),
            entry_needs: None,
        };
    }
    let kept = recovery::kept_assignments(&plans, &undo);
    let live = liveness::analyze_keeping(program, unit, tbr, effects, &BitSet::default(), &kept);
    let mut entry_needs = live.live_at_entry;
    for sym in &unit.symbols {
        for d in &sym.dims {
            for b in [&d.lower, &d.upper].into_iter().flatten() {
                vars(unit, b, &mut entry_needs);
            }
        }
    }
    let dead: Vec<StmtId> = live
        .dead
        .into_iter()
        .filter(|s| !references_function(unit, *s))
        .collect();
    let pushed = tbr
        .records
        .iter()
        .filter(|r| !dead.contains(&r.stmt))
        .cloned()
        .collect();
    UnitDecisions {
        reversal: reversal::of(program, unit),
        plans,
        undo,
        dead,
        pushed,
        entry_needs: Some(entry_needs),
    }
}

/// Whether statement `id` references a user or external function.
fn references_function(unit: &Unit, id: StmtId) -> bool {
    let mut found = false;
    for e in unit.stmt(id).kind.exprs() {
        e.walk(&mut |x| {
            if matches!(
                x.kind,
                ExprKind::FunctionCall { .. } | ExprKind::Apply { .. }
            ) {
                found = true;
            }
        });
    }
    found
}
