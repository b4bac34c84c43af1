//! Inlay hints: what the adjoint will do, shown where it happens.
//!
//! * `active` after the left-hand side of each assignment whose result is
//!   active (paper 000 §4);
//! * `push(x)` before each statement whose overwrite of `x` TBR records
//!   (§5);
//! * what control-flow reversal records (paper 001, as the adjoint
//!   generator does it): `push(branch)` on IF and SELECT CASE, `push(trips)`
//!   on loops without a counted header, `replay i` on counted DO loops the
//!   reverse sweep replays from their bounds, `push(block)` on jumps in
//!   units reversed through basic-block ids.
//!
//! (How each address index is recovered — inverted, recomputed, stored —
//! will join these as [`HintKind::Address`].)
//!
//! Contract: hints of units the analyses reached and that have active
//! variables, inside the requested range, in document order.

use crate::host::Snapshot;
use dfort_analysis::activity::active_anywhere;
use dfort_ir::{DoControl, ExprKind, StmtKind, Unit};
use dfort_syntax::TextRange;
use std::path::Path;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HintKind {
    Active,
    Push,
    Reversal,
    /// Reserved for address recovery (inverted / recomputed / stored).
    Address,
}

/// Which kinds to show.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HintKinds {
    pub active: bool,
    pub push: bool,
    pub reversal: bool,
}

impl Default for HintKinds {
    fn default() -> Self {
        HintKinds {
            active: true,
            push: true,
            reversal: true,
        }
    }
}

impl HintKinds {
    fn wants(&self, k: HintKind) -> bool {
        match k {
            HintKind::Active => self.active,
            HintKind::Push => self.push,
            HintKind::Reversal => self.reversal,
            HintKind::Address => false,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hint {
    /// Document byte offset the hint sits at.
    pub offset: u32,
    pub label: String,
    pub kind: HintKind,
    pub tooltip: String,
    /// The hint precedes the text at `offset` (else follows what is before it).
    pub before: bool,
}

pub fn inlay_hints(snap: &Snapshot, path: &Path, range: TextRange, kinds: HintKinds) -> Vec<Hint> {
    let mut out = Vec::new();
    for unit in snap.units_of(path) {
        // Only units that reach into the requested range (the screen).
        let seen = snap
            .to_doc(unit.span.file, unit.span.range)
            .is_some_and(|(_, r)| r.start <= range.end && range.start <= r.end);
        if seen {
            unit_hints(snap, unit, &mut out);
        }
    }
    out.retain(|h| kinds.wants(h.kind) && range.start <= h.offset && h.offset <= range.end);
    out.sort_by_key(|h| (h.offset, h.kind as u8));
    out
}

fn unit_hints(snap: &Snapshot, unit: &Unit, out: &mut Vec<Hint>) {
    let Some(act) = snap.analysis.activity.activity[unit.id.0 as usize].as_ref() else {
        return;
    };
    if active_anywhere(unit, act).is_empty() {
        return;
    }
    let at = |range: TextRange, end: bool| {
        snap.to_doc(unit.span.file, range)
            .map(|(_, r)| if end { r.end } else { r.start })
    };
    let unstructured = unit.stmts.iter().any(|s| {
        matches!(
            s.kind,
            StmtKind::Goto { .. } | StmtKind::ComputedGoto { .. } | StmtKind::ArithmeticIf { .. }
        )
    });
    for st in &unit.stmts {
        if let StmtKind::Assign { lhs, .. } = &st.kind {
            if let ExprKind::Var(s) | ExprKind::ArrayRef { array: s, .. } = &lhs.kind {
                if act.active_after(st.id, *s) {
                    if let Some(o) = at(lhs.span.range, true) {
                        out.push(Hint {
                            offset: o,
                            label: "active".into(),
                            kind: HintKind::Active,
                            tooltip: format!(
                                "`{}` is active after this statement: it depends on an independent and a dependent depends on it",
                                unit.symbol(*s).name
                            ),
                            before: false,
                        });
                    }
                }
            }
        }
        let (label, tooltip) = match &st.kind {
            StmtKind::If { .. } | StmtKind::SelectCase { .. } if !unstructured => (
                "push(branch)".to_string(),
                "The adjoint's forward sweep records which branch runs; the reverse sweep pops it to take the same branch backwards".to_string(),
            ),
            StmtKind::Do {
                control: DoControl::Counted { var, .. },
                ..
            } if !unstructured => (
                format!("replay {}", unit.symbol(*var).name),
                "A counted loop: the reverse sweep replays it backwards from its bounds, so nothing per iteration is recorded (the index is saved once around the loop)".to_string(),
            ),
            StmtKind::Do { .. } if !unstructured => (
                "push(trips)".to_string(),
                "A loop without a counted header: the forward sweep counts its iterations and records the count; the reverse sweep runs that many".to_string(),
            ),
            StmtKind::Goto { .. } | StmtKind::ComputedGoto { .. } | StmtKind::ArithmeticIf { .. } => (
                "push(block)".to_string(),
                "Code with jumps is reversed through basic-block ids: the forward sweep records each block it leaves, the reverse sweep pops them".to_string(),
            ),
            _ => continue,
        };
        if let Some(o) = at(st.span.range, false) {
            out.push(Hint {
                offset: o,
                label,
                kind: HintKind::Reversal,
                tooltip,
                before: true,
            });
        }
    }
    if let Some(tbr) = snap.analysis.tbr_of(unit.id) {
        let mut by_stmt: Vec<(dfort_ir::StmtId, Vec<String>)> = Vec::new();
        for r in &tbr.records {
            let name = unit.symbol(r.variable).name.clone();
            match by_stmt.iter_mut().find(|(s, _)| *s == r.stmt) {
                Some((_, v)) => {
                    if !v.contains(&name) {
                        v.push(name)
                    }
                }
                None => by_stmt.push((r.stmt, vec![name])),
            }
        }
        for (s, names) in by_stmt {
            let st = unit.stmt(s);
            if let Some(o) = at(st.span.range, false) {
                out.push(Hint {
                    offset: o,
                    label: format!("push({})", names.join(", ")),
                    kind: HintKind::Push,
                    tooltip: format!(
                        "TBR: this statement overwrites {} whose old value the adjoint needs; the forward sweep pushes it first and the reverse sweep pops it",
                        names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
                    ),
                    before: true,
                });
            }
        }
    }
}
