//! The memo layer of per-unit facts that do not depend on activity: the
//! counted WHILE loops of a unit ([`crate::counted_while`], paper 001's
//! loop reversal with paper 003 §4's counters) and, in a unit with jumps,
//! its exact variables and invertible assignments ([`crate::undo`],
//! paper 003 §5), and where its CALL statements are for split mode
//! ([`crate::split::CallPlaces`]). TBR, the recovery plans, the reversal of each construct
//! and the address reports all read them; they are computed once per
//! unit per analysis, on first use, instead of at each of those places.
//!
//! Contract: [`Shapes::of`] returns the facts of a unit of the program
//! the `Shapes` were made for, computing them on first use (thread-safe).
//! [`Shapes::reusing`] keeps the previous analysis' facts of each unit
//! that is the same unit (its IR unchanged, by [`Changes`], which follows
//! the identity of its chunk's lowering, compared by content) and whose
//! callees' interfaces are unchanged — everything these facts read of the
//! program — so a rerun equals a run from scratch. Analysis only: no
//! I/O, no panics on user input.

use crate::counted_while::CountedWhile;
use crate::incremental::Changes;
use crate::split::CallPlaces;
use crate::undo::UnitUndo;
use dfort_ir::bitset::BitSet;
use dfort_ir::{IdVec, Program, StmtId, Unit, UnitId};
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

/// What one unit's analyses share that activity does not change.
#[derive(Debug, Default)]
pub struct UnitShape {
    /// The counted WHILE loops, by DO WHILE statement.
    pub counted: HashMap<StmtId, CountedWhile>,
    /// In a unit with jumps: the exact variables and the assignments the
    /// reverse sweep can invert (empty in structured units).
    pub undo: UnitUndo,
    /// Per statement: the address variables the loops' recovery plans
    /// take over from TBR ([`crate::recovery::handled`]).
    pub handled: IdVec<StmtId, BitSet>,
}

impl UnitShape {
    fn of(program: &Program, unit: &Unit) -> UnitShape {
        UnitShape {
            counted: crate::counted_while::in_unit(program, unit),
            undo: crate::undo::undo_unit(program, unit),
            handled: crate::recovery::handled(program, unit),
        }
    }
}

/// The shapes of every unit of one program, computed on first use, and
/// apart from them (split mode asks for every unit's, TBR for the
/// analysed units' shapes) where each unit's CALL statements are.
#[derive(Debug, Default)]
pub struct Shapes {
    cells: IdVec<UnitId, OnceLock<Arc<UnitShape>>>,
    calls: IdVec<UnitId, OnceLock<Arc<CallPlaces>>>,
    /// Whether the unit has SAVE'd (or initialised) locals.
    saved: IdVec<UnitId, OnceLock<bool>>,
}

impl Shapes {
    /// Empty cells for every unit of `program`.
    pub fn new(program: &Program) -> Shapes {
        Shapes {
            cells: IdVec::from_fn(program.units.len(), |_| OnceLock::new()),
            calls: IdVec::from_fn(program.units.len(), |_| OnceLock::new()),
            saved: IdVec::from_fn(program.units.len(), |_| OnceLock::new()),
        }
    }

    /// Cells for `program`, holding the previous analysis' shape of every
    /// unit whose inputs did not change since.
    pub fn reusing(program: &Program, previous: Option<(&Shapes, &Changes)>) -> Shapes {
        let shapes = Shapes::new(program);
        let Some((prev, changes)) = previous else {
            return shapes;
        };
        if prev.cells.len() != shapes.cells.len() {
            return shapes;
        }
        for (i, cell) in shapes.cells.iter_enumerated() {
            if changes.reads_changed(i) {
                continue;
            }
            if let Some(old) = prev.cells[i].get() {
                let _ = cell.set(old.clone());
            }
            if let (Some(old), Some(cell)) = (prev.calls[i].get(), shapes.calls.get(i)) {
                let _ = cell.set(old.clone());
            }
            if let (Some(old), Some(cell)) = (prev.saved[i].get(), shapes.saved.get(i)) {
                let _ = cell.set(*old);
            }
        }
        shapes
    }

    /// Where the CALL statements of `unit` are, found on first use (any
    /// unit not of the program these were made for: on the spot).
    pub fn calls_of(&self, unit: &Unit) -> Arc<CallPlaces> {
        match self.calls.get(unit.id) {
            Some(cell) => cell.get_or_init(|| Arc::new(CallPlaces::of(unit))).clone(),
            None => Arc::new(CallPlaces::of(unit)),
        }
    }

    /// Whether `unit` has SAVE'd or initialised locals (found on first
    /// use and kept while the unit is unchanged: every edit asks it of
    /// every unit).
    pub fn has_saved_locals(&self, unit: &Unit) -> bool {
        let find = || {
            unit.symbols
                .iter()
                .any(|sym| dfort_ir::queries::is_saved_local(unit, sym))
        };
        match self.saved.get(unit.id) {
            Some(cell) => *cell.get_or_init(find),
            None => find(),
        }
    }

    /// The shape of `unit` (a unit of the program these cells were made
    /// for; any other unit gets a shape computed on the spot).
    pub fn of(&self, program: &Program, unit: &Unit) -> Arc<UnitShape> {
        match self.cells.get(unit.id) {
            Some(cell) => cell
                .get_or_init(|| Arc::new(UnitShape::of(program, unit)))
                .clone(),
            None => Arc::new(UnitShape::of(program, unit)),
        }
    }

    /// How many units' shapes this analysis computed or reused so far.
    pub fn known(&self) -> usize {
        self.cells.iter().filter(|c| c.get().is_some()).count()
    }
}
