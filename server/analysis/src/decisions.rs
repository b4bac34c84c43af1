//! What the adjoint of one unit decides before any code is written, in
//! one place, so that the generator, `dfort analyze` and the editor read
//! the same facts instead of re-deriving them.
//!
//! Contract: given a unit, its TBR result (paper 000 §5) and the effects
//! of every unit, [`decide`] returns how each construct is reversed
//! (paper 001, [`crate::reversal`]; an IF or SELECT CASE whose arms give
//! the reverse sweep nothing to do records no arm), the loops'
//! address-recovery plans
//! (paper 003 §3–4), the assignments the reverse sweep of a unit with
//! jumps inverts (paper 003 §5), the assignments the joint-mode forward
//! sweep drops (adjoint liveness, paper 000 §6, keeping what the plans and
//! the inversions reuse) and what the unit's adjoint reads of the values
//! it is called with; once every unit's decisions are known,
//! [`with_calls`] adds what the forward sweep saves around each CALL
//! ([`crate::checkpoint`]). In joint mode a unit's adjoint runs its own forward
//! sweep just before its reverse sweep, so nothing is live after the
//! unit: a callee's primal results reach its caller through the call to
//! the original, not through the callee's adjoint.

use crate::activity::Activity;
use crate::checkpoint::{CallCheckpoint, Callees, Caller};
use crate::effects::ProgramEffects;
use crate::liveness;
use crate::recovery::{self, Plan};
use crate::references::Carried;
use crate::references::ReferenceCheckpoint;
use crate::reversal::{self, UnitReversal};
use crate::shape::UnitShape;
use crate::tbr::{Record, Tbr};
use crate::undo::UnitUndo;
use dfort_ir::bitset::BitSet;
use dfort_ir::cfg::NodeId;
use dfort_ir::dp::vars;
use dfort_ir::{BaseType, ExprKind, IdVec, Program, StmtId, StmtKind, SymbolId, Unit, UnitId};
use std::collections::BTreeMap;

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
    /// statements it keeps, in TBR's order, each with the adjoint that
    /// needs the value.
    pub pushed: Vec<Push>,
    /// In a unit reversed by blocks: per basic block (CFG node), the
    /// integer scalars its reverse sweep reads (what TBR says its
    /// statements' adjoints need, indices included) that something may
    /// change — pushed with the block's id as the block is left.
    pub block_saves: BTreeMap<NodeId, Vec<SymbolId>>,
    /// What its adjoint routine reads of the values it is called with:
    /// what adjoint liveness finds live at entry and the variables its
    /// declarations' bounds read; `None` when it reads everything the
    /// unit reads (`--no-tbr`).
    pub entry_needs: Option<BitSet>,
    /// The arrays left out of `entry_needs` because the unit fills them
    /// before it reads them ([`crate::filled_first`]).
    pub filled_first: Vec<SymbolId>,
    /// The checkpoint of each CALL statement: what the forward sweep
    /// pushes around it and why ([`crate::checkpoint`]; filled by
    /// [`with_calls`] once every unit's `entry_needs` is known).
    pub calls: crate::checkpoint::CallCheckpoints,
    /// Per assignment the generator hoists function references out of:
    /// those references in hoisting order, each with its checkpoint when
    /// the reverse sweep runs its adjoint ([`crate::references`]; filled
    /// with `calls`).
    pub references: BTreeMap<StmtId, Vec<ReferenceCheckpoint>>,
    /// Per innermost counted DO loop: the array elements its iterations
    /// all name and nothing else in it may name, whose adjoints' increments
    /// the reversed loop may sum in registers
    /// ([`crate::final_reads::accumulated_elements`]).
    pub accumulated: BTreeMap<StmtId, Vec<dfort_ir::Expr>>,
}

/// A call to a procedure dfort has the source of — a CALL statement or a
/// function reference in an assignment — and what the forward sweep
/// saves around it.
#[derive(Clone, Copy, Debug)]
pub struct CheckpointedCall<'a> {
    pub stmt: StmtId,
    pub callee: UnitId,
    pub checkpoint: &'a CallCheckpoint,
}

impl UnitDecisions {
    /// The variables the forward sweep pushes for TBR at statement `st`.
    pub fn recorded(&self, st: StmtId) -> Vec<SymbolId> {
        self.pushed
            .iter()
            .filter(|r| r.stmt == st)
            .map(|r| r.variable)
            .collect()
    }

    /// The checkpoints of `unit`'s calls to procedures with source, in
    /// statement order (a statement's references in hoisting order): what
    /// the editor and `dfort analyze` show the forward sweep saving
    /// around calls.
    pub fn checkpointed_calls<'a>(&'a self, unit: &Unit) -> Vec<CheckpointedCall<'a>> {
        let mut out = Vec::new();
        for st in &unit.stmts {
            if matches!(st.kind, dfort_ir::StmtKind::Call { .. }) {
                if let Some(cp) = self.calls.get(&st.id) {
                    if let Some(callee) = cp.callee {
                        out.push(CheckpointedCall {
                            stmt: st.id,
                            callee,
                            checkpoint: cp,
                        });
                    }
                }
            }
            for r in self.references.get(&st.id).into_iter().flatten() {
                if let Some(cp) = &r.checkpoint {
                    out.push(CheckpointedCall {
                        stmt: st.id,
                        callee: r.callee,
                        checkpoint: cp,
                    });
                }
            }
        }
        out
    }

    /// The function references whose results the forward sweep pushes,
    /// in statement order (a statement's in hoisting order): what the
    /// editor marks `push(g(…))` and `dfort analyze` reports as
    /// `pushed_results`.
    pub fn pushed_results(&self) -> Vec<crate::references::PushedResult> {
        self.references
            .iter()
            .flat_map(|(&st, refs)| crate::references::pushed_results(st, refs))
            .collect()
    }

    /// Whether statement `id` is a CALL to a procedure with source (whose
    /// checkpoint holds what the forward sweep saves around it, TBR's
    /// records of the caller included).
    pub fn is_checkpointed_call(&self, unit: &Unit, id: StmtId) -> bool {
        self.calls.get(&id).is_some_and(|cp| cp.callee.is_some())
            && matches!(
                unit.stmts.get(id).map(|s| &s.kind),
                Some(dfort_ir::StmtKind::Call { .. })
            )
    }
}

/// A value the forward sweep pushes for TBR (paper 000 §5): the
/// statement that overwrites it, and why the reverse sweep needs it back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Push {
    pub stmt: StmtId,
    pub variable: SymbolId,
    pub needed_by: NeededBy,
}

/// Which adjoint reads a pushed value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NeededBy {
    /// The overwriting statement's own adjoint (`y = y*x` reads the old
    /// `y`).
    OwnAdjoint,
    /// The adjoint of this statement, which the reverse sweep runs after
    /// the overwrite's (an earlier statement, or a later one around a
    /// loop).
    AdjointOf(StmtId),
    /// No statement of the unit: the value is required where the unit's
    /// callers or callees need it (TBR's calling contexts, §5.2).
    Context,
}

/// TBR's records of `unit` the forward sweep keeps (not at a statement in
/// `dead`), with which adjoint needs each value: the overwriting
/// statement's own, else the nearest one the reverse sweep runs after it
/// — an earlier statement in source order, else (around a loop) a later
/// one.
fn pushes(unit: &Unit, tbr: &Tbr, dead: &[StmtId]) -> Vec<Push> {
    // Statements in source order (those the structuring of EXIT and CYCLE
    // appends sit at their loop).
    let mut order: Vec<&dfort_ir::Stmt> = unit
        .stmts
        .iter()
        .filter(|s| s.kind.blocks().is_empty())
        .collect();
    order.sort_by_key(|s| (s.span.file, s.span.range.start, s.id));
    let holds = |sets: &IdVec<StmtId, BitSet>, s: StmtId, v: SymbolId| {
        sets.get(s).is_some_and(|r| r.contains_id(v))
    };
    let needed_by = |r: &Record| {
        // `needs` holds what a statement's adjoint reads of the values
        // before it, the one it overwrites included; `req`, what it needs
        // of the values others overwrite.
        if holds(&tbr.needs, r.stmt, r.variable) {
            return NeededBy::OwnAdjoint;
        }
        let pos = order.iter().position(|s| s.id == r.stmt).unwrap_or(0);
        order[..pos]
            .iter()
            .rev()
            .chain(order[pos..].iter().rev())
            .find(|s| s.id != r.stmt && holds(&tbr.req, s.id, r.variable))
            .map_or(NeededBy::Context, |s| NeededBy::AdjointOf(s.id))
    };
    tbr.records
        .iter()
        .filter(|r| !dead.contains(&r.stmt))
        .map(|r| Push {
            stmt: r.stmt,
            variable: r.variable,
            needed_by: needed_by(r),
        })
        .collect()
}

/// Per basic block of a unit reversed by blocks: the integer scalars its
/// reverse sweep reads that may change (not the exact variables TBR and
/// the inversions keep, not what nothing writes) — its statements' own
/// needs and the indices of what is pushed around its calls (`calls`,
/// empty until [`with_calls`] has run), which the reverse sweep pops
/// back into.
pub(crate) fn block_saves(
    program: &Program,
    unit: &Unit,
    tbr: &Tbr,
    effects: &ProgramEffects,
    exact: &BitSet,
    calls: &crate::checkpoint::CallCheckpoints,
) -> BTreeMap<NodeId, Vec<SymbolId>> {
    let mut out = BTreeMap::new();
    if unit.cfg.structured {
        return out;
    }
    let fx = crate::effects::local(program, unit, effects);
    for (i, node) in unit.cfg.nodes.iter_enumerated() {
        if node.kind != dfort_ir::cfg::NodeKind::BasicBlock {
            continue;
        }
        let mut ints = BitSet::default();
        for &id in &node.stmts {
            if let Some(n) = tbr.needs.get(id) {
                ints.union_with(n);
            }
            for saved in calls.get(&id).into_iter().flat_map(|cp| cp.saved()) {
                if !saved.whole {
                    vars(unit, &saved.reference, &mut ints);
                }
            }
        }
        // TBR's sets may hold slots past the unit's own symbols (globals
        // only its callees see): those are not the unit's to save.
        let saved: Vec<SymbolId> = ints
            .ids()
            .filter(|&v| {
                unit.symbols.get(v).is_some_and(|s| {
                    s.ty.base == BaseType::Integer
                        && s.rank() == 0
                        && !s.attrs.parameter
                        && !exact.contains_id(v)
                        && fx.writes.contains_id(v)
                })
            })
            .collect();
        if !saved.is_empty() {
            out.insert(i, saved);
        }
    }
    out
}

/// The decisions of `unit`'s adjoint under `recording`. A unit some
/// caller runs in split mode (`split_callee`, [`crate::split`]) keeps in
/// its forward sweep everything that computes its non-local values: its
/// forward routine stands for the original in the caller's forward sweep.
/// With the unit's activity `act`, an IF or SELECT CASE whose arms give
/// the reverse sweep nothing to do records no arm ([`idle_branches`]).
#[allow(clippy::too_many_arguments)]
pub fn decide(
    program: &Program,
    unit: &Unit,
    shape: &UnitShape,
    tbr: &Tbr,
    effects: &ProgramEffects,
    act: Option<&Activity>,
    recording: Recording,
    split_callee: bool,
) -> UnitDecisions {
    let (plans, undo) = if recording.inversion() {
        let mut plans = recovery::plan_unit(program, unit, shape, tbr);
        // A loop whose address values are all recomputed with its real
        // intermediates ([`crate::recompute`]) needs no plan of its own.
        plans.retain(|p| {
            !tbr.recomputed
                .iter()
                .any(|r| r.lp == p.stmt && p.handled.is_subset(&r.vars))
        });
        (plans, shape.undo.clone())
    } else {
        (Vec::new(), UnitUndo::default())
    };
    let block_saves = block_saves(program, unit, tbr, effects, &undo.exact, &BTreeMap::new());
    if recording.store_all() {
        let mut reversal = reversal::of(program, unit, shape, effects);
        let pushed = pushes(unit, tbr, &[]);
        idle_branches(unit, &mut reversal, tbr, act, &pushed, &undo);
        reversal.recompute_branches(program, unit, split_callee);
        return UnitDecisions {
            reversal,
            plans,
            undo,
            dead: Vec::new(),
            pushed,
            block_saves,
            entry_needs: None,
            filled_first: Vec::new(),
            calls: BTreeMap::new(),
            references: BTreeMap::new(),
            accumulated: crate::final_reads::accumulated_elements(program, unit),
        };
    }
    let mut kept = recovery::kept_assignments(&plans, &undo);
    // A pushed Jacobian's statements stay: their local partials, computed
    // in the forward sweep, read what they and those before read. (A
    // recomputed one's replay reads the graph's inputs in the reverse
    // sweep: TBR's needs at its first statement, which keep them live.)
    kept.extend(
        tbr.jacobians
            .iter()
            .flat_map(|b| &b.jacobians)
            .filter(|j| j.pushed().is_some())
            .flat_map(|j| j.graph.stmts.iter().copied()),
    );
    let mut at_exit = BitSet::default();
    if split_callee {
        for s in unit.symbols.indices() {
            let local = unit.symbol(s).storage == dfort_ir::Storage::Local;
            if !local && dfort_ir::dp::is_variable(unit, s) {
                at_exit.insert_id(s);
            }
        }
    }
    let mut live = liveness::analyze_keeping(program, unit, tbr, effects, &at_exit, &kept);
    let mut reversal = reversal::of(program, unit, shape, effects);
    // A statement that references a function stays: the adjoint
    // checkpoints its call.
    live.dead.retain(|s| !references_function(unit, *s));
    // A loop whose recovery plan (paper 003) pushes address values in the
    // forward sweep, and one whose index TBR saves around it, push them
    // there: they stay.
    let droppable_loop = |reversal: &UnitReversal, id: StmtId| {
        !references_function(unit, id)
            && !plans.iter().any(|p| p.stmt == id && p.pushes())
            && match reversal.of_stmt(id) {
                Some(reversal::Reversal::Replay { index }) => {
                    !tbr.in_req.get(id).is_some_and(|r| r.contains_id(*index))
                }
                _ => false,
            }
    };
    if !reversal.by_blocks {
        liveness::dead_loops(unit, &mut live, |id| droppable_loop(&reversal, id));
    }
    let mut entry_needs = std::mem::take(&mut live.live_at_entry);
    // Arrays filled before anything reads them: their entry values are
    // not read, though whole-variable liveness finds them live.
    let filled_first = crate::filled_first::arrays(program, unit, tbr, effects, &entry_needs);
    for a in &filled_first {
        entry_needs.remove_id(*a);
    }
    for sym in &unit.symbols {
        for d in &sym.dims {
            for b in [&d.lower, &d.upper].into_iter().flatten() {
                vars(unit, b, &mut entry_needs);
            }
        }
    }
    let pushed = pushes(unit, tbr, &live.dead);
    idle_branches(unit, &mut reversal, tbr, act, &pushed, &undo);
    if !reversal.by_blocks {
        // An IF that records no arm and whose arms are dead is dropped,
        // and so is a loop that held only such IFs.
        let idle = |id| {
            !references_function(unit, id)
                && matches!(
                    reversal.of_stmt(id),
                    Some(reversal::Reversal::NothingToReverse)
                )
        };
        liveness::dead_branches(unit, &mut live, idle);
        live.dead
            .retain(|s| !matches!(unit.stmt(*s).kind, StmtKind::Do { .. }));
        liveness::dead_loops(unit, &mut live, |id| droppable_loop(&reversal, id));
        liveness::dead_branches(unit, &mut live, idle);
    }
    // The constructs left recording their arm: evaluated again instead
    // where nothing their conditions read changes.
    reversal.recompute_branches(program, unit, split_callee);
    let dead = live.dead;
    UnitDecisions {
        reversal,
        plans,
        undo,
        dead,
        pushed,
        block_saves,
        entry_needs: Some(entry_needs),
        filled_first,
        calls: BTreeMap::new(),
        references: BTreeMap::new(),
        accumulated: crate::final_reads::accumulated_elements(program, unit),
    }
}

/// What the forward sweep saves around the calls of a unit: the
/// checkpoints of its CALL statements and its assignments' function
/// references.
pub struct CallDecisions {
    pub calls: crate::checkpoint::CallCheckpoints,
    pub references: BTreeMap<StmtId, Vec<ReferenceCheckpoint>>,
}

/// The checkpoints of the CALL statements of `unit` (whose decisions'
/// reversal is `reversal`, activity `act` if analysed), from its TBR, every unit's
/// effects and what the callees decided ([`crate::checkpoint::of_unit`]),
/// and of the function references of its assignments
/// ([`crate::references::of_unit`]).
#[allow(clippy::too_many_arguments)]
pub fn with_calls(
    program: &Program,
    unit: &Unit,
    tbr: &Tbr,
    effects: &ProgramEffects,
    callees: &Callees,
    carried: &Carried,
    act: Option<&Activity>,
    reversal: &UnitReversal,
) -> CallDecisions {
    if !calls_anything(unit) {
        return CallDecisions {
            calls: BTreeMap::new(),
            references: BTreeMap::new(),
        };
    }
    let written_from = crate::effects::written_from(program, unit, effects);
    let caller = Caller {
        program,
        orig: unit,
        unit,
        tbr,
        effects,
        written_from: &written_from,
        regions: callees.regions,
    };
    let replayed = crate::checkpoint::replayed_loops(unit, reversal);
    CallDecisions {
        calls: crate::checkpoint::of_unit(&caller, callees, &replayed),
        references: act.map_or_else(BTreeMap::new, |act| {
            crate::references::of_unit(&caller, callees, carried, act, &replayed)
        }),
    }
}

/// Whether `unit` has a CALL statement or an assignment referencing a
/// procedure dfort has the source of (what [`with_calls`] decides about).
pub fn calls_anything(unit: &Unit) -> bool {
    unit.stmts.iter().any(|s| match &s.kind {
        dfort_ir::StmtKind::Call { .. } => true,
        dfort_ir::StmtKind::Assign { rhs, .. } => {
            !dfort_ir::queries::function_references(rhs).is_empty()
        }
        _ => false,
    })
}

/// The IFs and SELECT CASEs whose arms give the reverse sweep nothing to
/// do ([`reversal::UnitReversal::skip_idle_branches`]). A statement of an
/// arm gives it work unless it is a CONTINUE or an assignment that
/// references no function, whose overwritten value is not `pushed`, that
/// no inversion undoes, that no preaccumulated Jacobian holds, and whose
/// target is not useful just after it (so it has neither an adjoint nor
/// a reset adjoint); any other statement is taken to give work. Without
/// activity every construct keeps its record.
fn idle_branches(
    unit: &Unit,
    reversal: &mut UnitReversal,
    tbr: &Tbr,
    act: Option<&Activity>,
    pushed: &[Push],
    undo: &UnitUndo,
) {
    let Some(act) = act else {
        return;
    };
    let recorded: std::collections::BTreeSet<StmtId> = pushed.iter().map(|p| p.stmt).collect();
    let in_jacobian: std::collections::BTreeSet<StmtId> = tbr
        .jacobians
        .iter()
        .flat_map(|b| &b.jacobians)
        .flat_map(|j| j.graph.stmts.iter().copied())
        .collect();
    reversal.skip_idle_branches(unit, |id| match &unit.stmt(id).kind {
        StmtKind::Continue => false,
        StmtKind::If { .. } | StmtKind::SelectCase { .. } => references_function(unit, id),
        StmtKind::Assign { lhs, .. } => {
            recorded.contains(&id)
                || undo.inverted.contains_key(&id)
                || in_jacobian.contains(&id)
                || references_function(unit, id)
                || dfort_ir::dp::target(lhs).is_none_or(|(t, _)| act.useful_after(id, t))
        }
        _ => true,
    });
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
