//! What an adjoint routine's code does, recorded by the generator at the
//! point it writes each line: the values its forward sweep pushes for
//! TBR and around each call, how it reverses each construct and how it
//! recovers each address value. It is not read back by the generator; the consistency check
//! (`cargo xtask consistency`) compares it with what `dfort analyze` prints
//! and the editor shows, so that a decision re-derived in one place and
//! not the others is caught.
//!
//! Statement and symbol ids are those of the unit as the analyses saw it
//! (`dfort_analysis::prepare`).

use dfort_analysis::address_report::Choice;
use dfort_analysis::dep::GlobalKey;
use dfort_ir::{Span, StmtId, SymbolId, UnitId};

/// A value a call's snapshot saves.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SavedValue {
    /// A variable of the unit (or an element or section of it).
    Variable(SymbolId),
    /// A module variable the unit does not declare, brought in to be
    /// saved.
    Global(GlobalKey),
}

/// How the code reverses one construct.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Reversed {
    /// A counted DO loop run backwards from its bounds.
    Replayed,
    /// A DO WHILE loop whose trip count is computed from its bound.
    CountedFromBound,
    /// A loop whose trip count the forward sweep pushes.
    TripsPushed,
    /// An IF or SELECT CASE whose arm the forward sweep pushes.
    BranchPushed,
    /// A jump after which the forward sweep pushes the id of the basic
    /// block it leaves.
    BlockPushed,
    /// A WHERE whose masks the forward sweep pushes.
    MaskPushed,
    /// A WHERE whose masks the reverse sweep evaluates again.
    MaskRecomputed,
    /// An IF or SELECT CASE whose conditions the reverse sweep evaluates
    /// again.
    BranchRecomputed,
    /// A CALL run in split mode: the callee's forward routine in the
    /// forward sweep, its reverse routine in the reverse sweep.
    Split,
    /// A DO loop checkpointed with a binomial schedule.
    Binomial,
}

/// One adjoint routine's record.
#[derive(Clone, Debug)]
pub struct RoutineTrace {
    pub unit: UnitId,
    /// The variables that have an adjoint in the routine.
    pub with_adjoint: Vec<SymbolId>,
    /// The values the forward sweep pushes because TBR asks for them
    /// (a statement and the variable it overwrites), in the order written.
    pub pushes: Vec<(StmtId, SymbolId)>,
    /// What the caller records around a call (a CALL, or a function
    /// reference hoisted out of an assignment): what the call may
    /// overwrite of the values its adjoint needs, as the call's checkpoint
    /// decides ([`dfort_analysis::checkpoint`]), in the order pushed.
    pub around_calls: Vec<(StmtId, SymbolId)>,
    /// What the checkpoint of a call to a procedure with a derivative
    /// routine pushes after those records (the snapshot the callee's
    /// adjoint reads), in the order pushed.
    pub call_snapshots: Vec<(StmtId, SavedValue)>,
    /// The pointer associations the forward sweep saves before a pointer
    /// statement changes them (the pointer as written), in the order
    /// saved.
    pub associations: Vec<(StmtId, String)>,
    /// The function references whose results (the temporaries holding
    /// them) the forward sweep pushes, in the order pushed: the
    /// statement, the function, where the reference is written, and the
    /// function of the reference it is an actual of when pushed first in
    /// that call's snapshot (`None`: pushed for the assignment's adjoint).
    pub pushed_results: Vec<(StmtId, UnitId, Span, Option<UnitId>)>,
    /// How each construct is reversed.
    pub constructs: Vec<(StmtId, Reversed)>,
    /// Whether the routine is reversed through basic-block ids.
    pub by_blocks: bool,
    /// The assignments the forward sweep leaves out.
    pub dropped: Vec<StmtId>,
    /// How each address value is recovered in the reverse sweep: the
    /// planned loop (none for a unit with jumps), the variable, how.
    pub recoveries: Vec<(Option<StmtId>, SymbolId, Choice)>,
    /// How many assignments of a shared value (`dfort_v<k> = …`) the
    /// reverse sweep leaves out because the temporary holds that value
    /// already ([`crate::adjoint`]'s held values).
    pub values_held: usize,
    /// How many assignments' adjoints read `v̄` in place, with no copy
    /// ([`crate::adjoint`]'s reset folds).
    pub read_in_place: usize,
}

impl RoutineTrace {
    pub(crate) fn new(unit: UnitId, by_blocks: bool) -> RoutineTrace {
        RoutineTrace {
            unit,
            with_adjoint: Vec::new(),
            pushes: Vec::new(),
            around_calls: Vec::new(),
            call_snapshots: Vec::new(),
            associations: Vec::new(),
            pushed_results: Vec::new(),
            constructs: Vec::new(),
            by_blocks,
            dropped: Vec::new(),
            recoveries: Vec::new(),
            values_held: 0,
            read_in_place: 0,
        }
    }
    pub(crate) fn association(&mut self, st: StmtId, pointer: String) {
        self.associations.push((st, pointer));
    }

    pub(crate) fn push(&mut self, st: StmtId, var: SymbolId) {
        self.pushes.push((st, var));
    }
    pub(crate) fn around_call(&mut self, st: StmtId, var: SymbolId) {
        self.around_calls.push((st, var));
    }
    pub(crate) fn drop(&mut self, st: StmtId) {
        self.dropped.push(st);
    }
    pub(crate) fn call_snapshot(&mut self, st: StmtId, saved: SavedValue) {
        self.call_snapshots.push((st, saved));
    }
    pub(crate) fn result_push(
        &mut self,
        st: StmtId,
        callee: UnitId,
        at: Span,
        read_by: Option<UnitId>,
    ) {
        self.pushed_results.push((st, callee, at, read_by));
    }
    pub(crate) fn construct(&mut self, st: StmtId, how: Reversed) {
        self.constructs.push((st, how));
    }
    pub(crate) fn recovery(&mut self, lp: Option<StmtId>, var: SymbolId, how: Choice) {
        self.recoveries.push((lp, var, how));
    }
}
