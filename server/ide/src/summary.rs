//! What `dfort analyze` reports of each unit the analyses reached,
//! gathered from a snapshot's facts ([`dfort_analysis::facts`], the ones
//! the editor shows): its roles or calling context, its active
//! variables, what its adjoint's forward sweep pushes and drops, how it
//! reverses each construct and recovers each address. The command line's
//! text is rendered from it by [`crate::render`]; its JSON is a serde type
//! of the binary built from it.

use crate::host::Snapshot;
use dfort_analysis::activity::Activity;
use dfort_analysis::address_report::LoopReport;
use dfort_analysis::decisions::{CheckpointedCall, Push};
use dfort_analysis::dep::GlobalKey;
use dfort_analysis::reversal::{Reversal, UnitReversal};
use dfort_ir::bitset::BitSet;
use dfort_ir::{Program, StmtId, Unit};

/// One unit's summary.
pub struct UnitSummary<'a> {
    /// The unit as analysed (EXIT and CYCLE structured).
    pub unit: &'a Unit,
    /// Varied at entry and useful at exit (the roles of a root, the union
    /// of calling contexts otherwise).
    pub independents: BitSet,
    pub dependents: BitSet,
    /// Where the roles come from.
    pub roles_from: &'static str,
    /// Variables active anywhere in the unit.
    pub active: BitSet,
    pub activity: &'a Activity,
    /// What the forward sweep pushes for TBR, and why.
    pub pushed: &'a [Push],
    /// The assignments the forward sweep drops.
    pub dead: &'a [StmtId],
    /// The array formals whose values the callers save around each call
    /// ([`dfort_analysis::left_to_callers`]).
    pub left_to_callers: &'a [dfort_ir::SymbolId],
    /// The loops whose intermediates the reverse sweep recomputes instead
    /// of popping ([`dfort_analysis::recompute`]).
    pub recomputed: &'a [dfort_analysis::recompute::Recomputed],
    /// Its SAVE'd locals the adjoint shares between its routines
    /// ([`dfort_analysis::saved_state`]).
    pub shared_state: Vec<dfort_ir::SymbolId>,
    /// Whether the adjoint runs a copy of the unit in place of the
    /// original (it changes shared SAVE'd state).
    pub runs_as_copy: bool,
    /// What the forward sweep saves around each call to a procedure
    /// with source (CALL statements and function references).
    pub calls: Vec<CheckpointedCall<'a>>,
    /// The function references whose results the forward sweep pushes
    /// (`UnitDecisions::pushed_results`).
    pub pushed_results: Vec<dfort_analysis::references::PushedResult>,
    /// The program as analysed (to name the globals a checkpoint saves).
    pub program: &'a Program,
    /// The facts it is read from (for what is computed when asked).
    facts: &'a dfort_analysis::facts::ProgramFacts,
    /// How the adjoint reverses each construct (paper 001).
    pub reversal: Option<&'a UnitReversal>,
    /// How each loop's address indices are recovered (paper 003).
    pub loops: &'a [LoopReport],
    /// How many statements the unit has in the source (the structuring
    /// of EXIT and CYCLE appends some).
    pub source_len: usize,
}

impl<'a> UnitSummary<'a> {
    /// The reversal of each construct (those the structuring of EXIT and
    /// CYCLE adds sit at the loop they come from), in source order.
    pub fn constructs(&self) -> Vec<(StmtId, &Reversal)> {
        let mut v: Vec<_> = self
            .reversal
            .map(|r| r.constructs.iter().map(|(s, r)| (*s, r)).collect())
            .unwrap_or_default();
        v.sort_by_key(|(s, _)| (self.unit.stmt(*s).span.range.start, s.0));
        v
    }

    /// The name of a module variable a checkpoint saves.
    pub fn global_name(&self, k: &GlobalKey) -> Option<String> {
        match k {
            GlobalKey::Shared { unit, symbol } => Some(
                self.program
                    .units
                    .get(*unit)?
                    .symbols
                    .get(*symbol)?
                    .name
                    .clone(),
            ),
            GlobalKey::Common { block, index } => {
                dfort_ir::queries::common_member_name(self.program, block, *index)
            }
        }
    }

    /// The local Jacobians of its basic blocks and what preaccumulating
    /// each costs (papers 002, 004), computed when asked.
    pub fn local_jacobians(
        &self,
    ) -> std::borrow::Cow<'a, [dfort_analysis::preaccumulation::BlockJacobians]> {
        self.facts.local_jacobians(self.unit.id)
    }

    /// Whether the adjoint reverses the unit through basic-block ids.
    pub fn by_blocks(&self) -> bool {
        self.reversal.is_some_and(|r| r.by_blocks)
    }
}

/// The summaries of every unit the snapshot's analyses reached, in
/// program order.
pub fn summaries(snap: &Snapshot) -> Vec<UnitSummary<'_>> {
    let facts = snap.analysis();
    let shared = facts.shared_state();
    facts
        .program
        .all_units()
        .filter_map(|u| {
            let act = facts.activity_of(u.id)?;
            let (mut independents, dependents) = facts.context(u.id)?.clone();
            // A root whose independents take their values after one of its
            // calls has none varied on entry: its roles name them.
            if let Some(r) = facts.roles_of(u.id).filter(|r| !r.after.is_empty()) {
                independents.union_with(&r.independents);
            }
            let decided = facts.decisions_of(u.id);
            Some(UnitSummary {
                facts,
                unit: u,
                independents,
                dependents,
                roles_from: facts
                    .roles_of(u.id)
                    .map_or("calling contexts", |r| r.source.as_str()),
                active: act.active_anywhere(),
                activity: act,
                pushed: decided.map_or(&[], |d| d.pushed.as_slice()),
                dead: decided.map_or(&[], |d| d.dead.as_slice()),
                left_to_callers: facts
                    .tbr_of(u.id)
                    .map_or(&[], |t| t.left_to_callers.as_slice()),
                recomputed: facts.tbr_of(u.id).map_or(&[], |t| t.recomputed.as_slice()),
                shared_state: shared
                    .iter()
                    .filter(|(o, _)| *o == u.id)
                    .map(|(_, s)| *s)
                    .collect(),
                runs_as_copy: facts.runs_as_copy(u.id, shared),
                calls: decided.map_or_else(Vec::new, |d| d.checkpointed_calls(u)),
                pushed_results: decided.map_or_else(Vec::new, |d| d.pushed_results()),
                program: &facts.program,
                reversal: decided.map(|d| &d.reversal),
                loops: facts.reports_of(u.id),
                source_len: snap
                    .program
                    .units
                    .get(u.id)
                    .map_or(u.stmts.len(), |s| s.stmts.len()),
            })
        })
        .collect()
}

/// Names of the unit's own symbols in `set`, sorted (globals known only
/// through callees have no name here).
pub fn names(unit: &Unit, set: &BitSet) -> Vec<String> {
    let mut v: Vec<String> = set
        .ids()
        .filter_map(|i| unit.symbols.get(i).map(|s| s.name.clone()))
        .collect();
    v.sort();
    v
}
