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
use dfort_ir::chunk_vec::ChunkVec;
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
    cells: ChunkVec<UnitId, OnceLock<Arc<UnitShape>>>,
    calls: ChunkVec<UnitId, OnceLock<Arc<CallPlaces>>>,
    /// Whether the unit has SAVE'd (or initialised) locals.
    saved: ChunkVec<UnitId, OnceLock<bool>>,
}

impl Shapes {
    /// Empty cells for every unit of `program`.
    pub fn new(program: &Program) -> Shapes {
        Shapes {
            cells: ChunkVec::from_elem(OnceLock::new(), program.units.len()),
            calls: ChunkVec::from_elem(OnceLock::new(), program.units.len()),
            saved: ChunkVec::from_elem(OnceLock::new(), program.units.len()),
        }
    }

    /// Cells for `program`, holding the previous analysis' shape of every
    /// unit whose inputs did not change since. The cells of the chunks
    /// of unchanged units are the previous analysis' own: what either
    /// computes in them holds for both programs.
    pub fn reusing(program: &Program, previous: Option<(&Shapes, &Changes)>) -> Shapes {
        let n = program.units.len();
        let Some((prev, changes)) = previous.filter(|(p, _)| p.cells.len() == n) else {
            return Shapes::new(program);
        };
        let mut shapes = Shapes {
            cells: prev.cells.clone(),
            calls: prev.calls.clone(),
            saved: prev.saved.clone(),
        };
        for i in program
            .units
            .indices()
            .filter(|&i| changes.reads_changed(i))
        {
            shapes.cells[i] = OnceLock::new();
            shapes.calls[i] = OnceLock::new();
            shapes.saved[i] = OnceLock::new();
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

    /// [`Shapes::has_saved_locals`] of unit `id` of `program` (which is
    /// looked at only when not known yet).
    pub fn has_saved_locals_at(&self, program: &Program, id: UnitId) -> bool {
        match self.saved.get(id).and_then(|c| c.get()) {
            Some(known) => *known,
            None => self.has_saved_locals(program.unit(id)),
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
