//! The read-only inputs of the adjoint routines: everything the analyses
//! decided that writing them needs, read from their one entry point
//! ([`dfort_analysis::facts`]) in one place ([`gather`]) — the program as
//! the analyses see it, the derivative set with its activity, TBR, and for each routine the analysis' decisions
//! (reversal of each construct, recovery plans, undo, dropped
//! assignments, pushed records, the checkpoint of each call) with what follows from them (the unit
//! with its function references hoisted, adjoint names, what each basic
//! block must save).
//!
//! Contract: [`gather`] is the only place the adjoint generator reads the
//! analyses' facts into its own form, and it runs no analysis; a
//! [`RoutineInputs`] is built once per routine and never changes while
//! the routine is written (what writing it accumulates is
//! [`super::emitter`]'s).

use super::emitter::refusal;
use crate::calls::host_module;
use crate::declare::derivative_unit;
use crate::hoist::HoistMap;
use crate::names::DiffSet;
use crate::Refusal;
use dfort_analysis::activity::Activity;
use dfort_analysis::facts::ProgramFacts;
use dfort_analysis::recovery::Plan;
use dfort_analysis::references::ReferenceCheckpoint;
use dfort_analysis::reversal::UnitReversal;
use dfort_analysis::tbr::Tbr;
use dfort_analysis::undo::UnitUndo;
use dfort_ir::cfg::NodeId;
use dfort_ir::*;
use std::collections::{BTreeMap, HashMap};

/// What one adjoint is written from: the program-wide results, and per
/// routine of the derivative set its inputs or why it has none.
pub(super) struct Gathered<'a> {
    /// The program as the analyses saw it ([`dfort_analysis::prepare`]).
    pub program: &'a Program,
    pub diff: &'a DiffSet<'a>,
    /// In the order of `diff.units` (the root first), each built as it is
    /// reached.
    pub routines: Box<dyn Iterator<Item = Result<RoutineInputs<'a>, Vec<Refusal>>> + 'a>,
}

/// The read-only inputs of one adjoint routine.
pub(super) struct RoutineInputs<'a> {
    pub program: &'a Program,
    pub diff: &'a DiffSet<'a>,
    /// Every unit's facts: a call site reads what its callee's adjoint
    /// needs.
    pub facts: &'a ProgramFacts,
    pub id: UnitId,
    /// The unit as the analyses saw it.
    pub orig: &'a Unit,
    /// The unit with its function references hoisted.
    pub unit: Unit,
    pub hoisted: HoistMap,
    /// The adjoint name of each symbol that has one.
    pub bname: HashMap<SymbolId, String>,
    /// The module the routine's adjoint lives in.
    pub module: Option<String>,
    pub act: &'a Activity,
    pub tbr: &'a Tbr,
    /// Whether every overwritten active value is recorded (`--no-tbr`).
    pub store_all: bool,
    /// How each construct is reversed (the analysis decides: replayed,
    /// counted from its bound, trips or arm pushed, basic-block ids).
    pub reversal: &'a UnitReversal,
    /// Unstructured units (GO TO, EXIT, CYCLE, early RETURN) are reversed
    /// by recording basic-block ids (paper 001's fallback) instead.
    pub unstructured: bool,
    /// Whether some caller runs the unit in split mode: it gets a forward
    /// and a reverse routine besides its adjoint.
    pub split: bool,
    /// The recovery plans of the unit's loops (paper 003), by DO statement.
    pub plans: HashMap<StmtId, &'a Plan>,
    /// In units with jumps: the assignments the reverse sweep inverts.
    pub undo: &'a UnitUndo,
    /// The assignments the forward sweep drops.
    pub dead: &'a [StmtId],
    /// The unit's decisions (what the forward sweep pushes for TBR:
    /// [`RoutineInputs::recorded`]).
    pub decisions: &'a dfort_analysis::decisions::UnitDecisions,
    /// What the forward sweep saves around each CALL (the analysis'
    /// checkpoints).
    pub calls: &'a dfort_analysis::checkpoint::CallCheckpoints,
    /// Per assignment: its function references as the analysis decided
    /// them (hoisting order; whether each is reversed, its checkpoint).
    pub references: &'a BTreeMap<StmtId, Vec<ReferenceCheckpoint>>,
    /// In unstructured units, per basic block (CFG node): the integer
    /// values its adjoint reads, saved at the block's end (the analysis'
    /// `block_saves`, by name).
    pub snapshots: HashMap<NodeId, Vec<String>>,
    /// How the comment heading each statement's reverse block names the
    /// statement ([`crate::origin`]).
    pub origin: crate::origin::Origin<'a>,
    /// The statements of the graphs whose local Jacobians the adjoint
    /// preaccumulates (TBR's `jacobians`), and where those graphs are.
    pub preaccumulated: HashMap<StmtId, super::preaccumulate::Place>,
}

/// Gathers, for each routine of the derivative set of `root` (a root of
/// `facts`, checked first), what the analyses decided; hands the result
/// to `then`.
pub(super) fn gather<'o, T>(
    facts: &ProgramFacts,
    root: UnitId,
    origin: crate::origin::Origin<'o>,
    then: impl FnOnce(Gathered<'_>) -> T,
) -> Result<T, Vec<Refusal>> {
    let store_all = facts.request.recording.store_all();
    let program = &facts.program;
    if let Some(r) = facts.root_refusal(root, dfort_analysis::refusals::Derivative::Adjoint) {
        return Err(vec![r]);
    }
    let diff = DiffSet::of_root_for_adjoint(facts, root)?;
    let routine = |u: UnitId| {
        let orig = program.unit(u);
        let not_analysed = || {
            vec![refusal(
                orig.name_span,
                (
                    &dfort_syntax::rules::INTERNAL_ERROR,
                    format!("`{}` was not analysed", orig.name),
                ),
            )]
        };
        let (Some(act), Some(tbr), Some(decisions)) =
            (facts.activity_of(u), facts.tbr_of(u), facts.decisions_of(u))
        else {
            return Err(not_analysed());
        };
        let (unit, hoisted, bname) = derivative_unit(program, &diff, orig, Some('b'));
        let reversal = &decisions.reversal;
        let unstructured = reversal.by_blocks;
        debug_assert_eq!(unstructured, !unit.cfg.structured);
        let snapshots = decisions
            .block_saves
            .iter()
            .map(|(b, vs)| {
                (
                    *b,
                    vs.iter().map(|v| unit.symbol(*v).name.clone()).collect(),
                )
            })
            .collect();
        Ok(RoutineInputs {
            program,
            diff: &diff,
            facts,
            id: u,
            orig,
            unit,
            hoisted,
            bname,
            module: host_module(program, orig),
            act,
            tbr,
            store_all,
            reversal,
            unstructured,
            split: facts.split_callees.get(u).copied().unwrap_or(false),
            plans: decisions.plans.iter().map(|p| (p.stmt, p)).collect(),
            undo: &decisions.undo,
            dead: &decisions.dead,
            decisions,
            calls: &decisions.calls,
            references: &decisions.references,
            origin,
            preaccumulated: tbr
                .jacobians
                .iter()
                .enumerate()
                .flat_map(|(block, b)| {
                    b.jacobians
                        .iter()
                        .enumerate()
                        .filter(|(_, j)| j.accumulation().is_some())
                        .flat_map(move |(graph, j)| {
                            j.graph
                                .stmts
                                .iter()
                                .map(move |s| (*s, super::preaccumulate::Place { block, graph }))
                        })
                })
                .collect(),
            snapshots,
        })
    };
    Ok(then(Gathered {
        program,
        diff: &diff,
        routines: Box::new(diff.units.iter().map(move |&u| routine(u))),
    }))
}

impl RoutineInputs<'_> {
    pub fn has_adjoint(&self, s: SymbolId) -> bool {
        self.bname.contains_key(&s)
    }

    /// `xb`, `xb(i)` for a reference whose variable has an adjoint.
    pub fn bref(&self, e: &Expr) -> Option<String> {
        crate::fortran::renamed_ref(&self.unit, &self.bname, e)
    }

    /// The variables the forward sweep pushes for TBR at statement `st`.
    pub fn recorded(&self, st: StmtId) -> Vec<SymbolId> {
        self.decisions.recorded(st)
    }

    /// Whether the adjoint routine of callee `c` reads the value its
    /// symbol `s` holds when it is called (unknown symbols: yes).
    pub fn callee_reads(&self, c: UnitId, s: Option<SymbolId>) -> bool {
        let needs = self
            .facts
            .decisions_of(c)
            .and_then(|d| d.entry_needs.as_ref());
        match (needs, s) {
            (Some(n), Some(s)) => n.contains_id(s),
            _ => true,
        }
    }
}
