//! The one entry point of the analyses: everything decided before code is
//! written, computed once for every client — the adjoint and tangent
//! generators, `dfort analyze` / `check`, and the language server.
//!
//! Contract: [`analyse`] takes a linked program and a [`Request`] (which
//! roots, with which roles, in which [`Recording`] mode) and returns the
//! [`ProgramFacts`]: the program as the analyses and the generators see it
//! ([`crate::prepare`]: statement functions inlined, EXIT and CYCLE
//! structured; statement and symbol ids kept), the roots resolved once
//! ([`crate::roots`]: explicit lists, else directives, else intents; with
//! `others`, every procedure nobody calls), interprocedural activity
//! (paper 000 §4) and TBR (§5), and per unit the adjoint's decisions
//! ([`crate::decisions`]: reversal strategy of each construct (paper 001),
//! address-recovery plans (paper 003), dropped statements, pushes, and
//! what the forward sweep saves around each CALL, [`crate::checkpoint`],
//! which reads the callees' decisions and which procedures get a
//! derivative routine, [`crate::derivatives`]) and the per-variable
//! recovery reports of units with active variables or a derivative
//! routine. Given the previous facts of the same request and the
//! [`Changes`] since, only the units whose inputs changed are recomputed
//! ([`crate::incremental`]); the result equals a run from scratch. Never
//! panics on user input; a root asked for that does not exist is a
//! [`RootProblem`] and is skipped.

use crate::address_report::{unit_reports, LoopReport};
use crate::checkpoint::Callees;
use crate::decisions::{block_saves, calls_anything, decide, with_calls, Recording, UnitDecisions};
use crate::derivatives::Carriers;
use crate::effects::ProgramEffects;
use crate::incremental::Changes;
use crate::interproc::{analyze_program_with, ProgramActivity, Seed};
use crate::recovery::Plan;
use crate::references::Carried;
use crate::roles::Roles;
use crate::roots::{
    resolve_reusing, same_lists, PreviousRoots, RootList, RootProblem, RootSpec, Roots,
};
use crate::shape::Shapes;
use crate::tbr::{self, ProgramTbr, Tbr};
use dfort_ir::bitset::BitSet;
use dfort_ir::chunk_vec::ChunkVec;
use dfort_ir::{IdVec, Program, Unit, UnitId};
use std::sync::{Arc, OnceLock};

/// In [`ProgramFacts`]' root places: the unit is not a root.
const NOT_A_ROOT: u32 = u32::MAX;

/// What to analyse.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    /// Roots asked for by name (command line, `dfort.toml`, editor
    /// settings), each with its lists (both empty: directives, then
    /// intents).
    pub roots: Vec<RootSpec>,
    /// Also every other procedure nobody calls, with its directives' or
    /// intents' roles (the editor analyses the whole workspace).
    pub others: bool,
    pub recording: Recording,
    /// Whether the adjoint preaccumulates local Jacobians
    /// ([`crate::preaccumulation`]).
    pub preaccumulate: crate::preaccumulation::Preaccumulation,
    /// Subroutines whose adjoint the user writes (`dfort.toml`'s
    /// `[adjoint] supplied`, `--supplied`), lower-case: the adjoint calls
    /// their `s_b` and writes none ([`Supplied`]).
    pub supplied: Vec<String>,
}

impl Default for Request {
    /// The editor's request: every procedure nobody calls, default mode.
    fn default() -> Self {
        Request {
            roots: Vec::new(),
            others: true,
            recording: Recording::Inversion,
            preaccumulate: Default::default(),
            supplied: Vec::new(),
        }
    }
}

/// What the adjoint of one unit decides, and what that means per address
/// variable.
#[derive(Clone, Debug)]
pub struct UnitFacts {
    pub decisions: UnitDecisions,
    /// The recovery reports of its loops (units with active variables or
    /// a derivative routine, in the default mode; none otherwise).
    pub reports: Vec<LoopReport>,
}

/// Everything the analyses decided for a program.
pub struct ProgramFacts {
    pub request: Request,
    /// The program as analysed (prepared units; unchanged units are the
    /// source's own).
    pub program: Program,
    /// The source units these were prepared from (what a rerun compares).
    pub sources: dfort_ir::Units,
    /// The roots analysed, with their roles.
    pub roots: RootList,
    /// How many of `roots`, first, the request named.
    pub named_roots: usize,
    /// The roots past the named ones whose unit has `!$ad` directives
    /// ([`Roots::marked`]).
    pub marked_roots: Vec<UnitId>,
    /// Roots asked for that could not be used.
    pub problems: Vec<RootProblem>,
    pub activity: ProgramActivity,
    pub tbr: ProgramTbr,
    /// Per unit: what its analyses share that activity does not change
    /// (counted WHILE loops, undo, the plans' variables), computed once.
    pub shapes: Shapes,
    /// Which variables carry a derivative and which procedures get a
    /// derivative routine, for all the roots together
    /// ([`crate::derivatives`]; with one root, the generators' set).
    pub carriers: Arc<Carriers>,
    /// Per unit the analyses reached: the adjoint's decisions.
    pub units: ChunkVec<UnitId, Option<Arc<UnitFacts>>>,
    /// Per unit: whether some call runs it in split mode (TBR's
    /// `split`; [`crate::split`]), so that it gets a forward and a reverse
    /// routine besides its adjoint.
    pub split_callees: IdVec<UnitId, bool>,
    /// Per unit: the calls that may run split ([`crate::split::candidates`],
    /// before supplied adjoints are left out), kept for the next analysis.
    split_candidates: crate::split::SplitTable,
    /// Per unit: its calls in counted loops that would fit split mode
    /// ([`crate::split::in_loops`], before supplied adjoints are left
    /// out; none in the modes that record everything), kept likewise.
    split_in_loops: Option<crate::split::SplitTable>,
    /// Per unit: whether the user supplies its adjoint
    /// ([`crate::supplied`]): no `s_b` is written for it.
    pub supplied: IdVec<UnitId, bool>,
    /// What each unit may read and write (callees included), computed
    /// when a unit's decisions needed it.
    effects: OnceLock<Arc<ProgramEffects>>,
    /// The regions the checkpoints found, kept for the next analysis of
    /// an edited program (those of units it left unchanged).
    regions: Arc<crate::regions::RegionMemo>,
    /// Per unit, where its first entry is in `roots` ([`NOT_A_ROOT`]:
    /// none; built when first asked: a workspace has thousands of roots,
    /// each looked up at every edit; shared with the
    /// previous analysis when its roots are the same units in the same
    /// order).
    root_places: OnceLock<Arc<IdVec<UnitId, u32>>>,
    /// The SAVE'd locals the adjoints of all the roots share
    /// ([`crate::saved_state::of_carriers`]), computed when first needed
    /// (the checkpoints read it, the next analysis compares it).
    shared_state: OnceLock<SharedState>,
}

/// SAVE'd locals, as (unit, symbol).
pub type SharedState = std::collections::BTreeSet<(UnitId, dfort_ir::SymbolId)>;

impl ProgramFacts {
    /// The unit as analysed.
    pub fn unit(&self, id: UnitId) -> Option<&Unit> {
        self.program.units.get(id).map(|u| &**u)
    }
    /// The refusal of `root` itself as the root of a `derivative` (not a
    /// subroutine or a function, or an internal procedure): then
    /// [`Self::refusals`] is that alone, and nothing is written.
    pub fn root_refusal(
        &self,
        root: UnitId,
        derivative: crate::refusals::Derivative,
    ) -> Option<crate::refusals::Refusal> {
        crate::refusals::root_form(&self.program, self.program.units.get(root)?, derivative)
    }
    /// What dfort refuses of the `derivative` of `root` before writing any
    /// code ([`crate::refusals`]), each with its rule and place; none for
    /// a unit that is not a root of these facts.
    pub fn refusals(
        &self,
        root: UnitId,
        derivative: crate::refusals::Derivative,
    ) -> Vec<crate::refusals::Refusal> {
        if let Some(r) = self.root_refusal(root, derivative) {
            return vec![r];
        }
        let Some(set) = self.derivative_set(root) else {
            return Vec::new();
        };
        let mut out = crate::refusals::of_root(
            &self.program,
            &set,
            &self.activity,
            self.effects(),
            |u| self.decisions_of(u),
            derivative,
        );
        // The user writes the adjoint of a supplied unit: what dfort
        // could not write of it does not matter.
        if derivative == crate::refusals::Derivative::Adjoint {
            let inside = |r: &crate::refusals::Refusal| {
                self.program.units.iter().any(|u| {
                    self.supplied.get(u.id).copied().unwrap_or(false) && u.span.holds(r.span)
                })
            };
            out.retain(|r| !inside(r));
        }
        out
    }
    /// The request's supplied names that are no subroutine, each with
    /// what it is instead ([`crate::supplied::unmatched`]).
    pub fn unmatched_supplied(&self) -> Vec<(String, Option<&'static str>)> {
        crate::supplied::unmatched(&self.program, &self.request.supplied)
    }
    /// The READs of `root`'s derivative set that may read back a varied
    /// value a WRITE of the set wrote, cutting its derivative
    /// ([`crate::io_cuts`]), but in units whose adjoint the user supplies.
    pub fn io_cuts(&self, root: UnitId) -> Vec<crate::io_cuts::IoCut> {
        let Some(set) = self.derivative_set(root) else {
            return Vec::new();
        };
        let mut cuts = crate::io_cuts::of_root(&self.program, &set, &self.activity);
        cuts.retain(|c| !self.is_supplied(c.unit));
        cuts
    }
    /// Whether the user supplies the adjoint of `unit`
    /// ([`crate::supplied`]).
    pub fn is_supplied(&self, unit: UnitId) -> bool {
        self.supplied.get(unit).copied().unwrap_or(false)
    }
    /// The calls of `unit` that pass an active value to a procedure
    /// without a derivative routine (rule `no-source`), with every root's
    /// carriers: the editor's warnings on every unit the analyses reached
    /// (for one root's derivative set they are among its
    /// [`Self::refusals`], with the calls' other refusals).
    pub fn no_source_calls(&self, unit: UnitId) -> Vec<crate::refusals::Refusal> {
        let (Some(u), Some(act)) = (self.unit(unit), self.activity_of(unit)) else {
            return Vec::new();
        };
        let routines = crate::refusals::calls::Routines::of_carriers(&self.carriers);
        crate::refusals::calls::of_unit(&self.program, &routines, u, act)
            .into_iter()
            .filter(|r| std::ptr::eq(r.rule, &dfort_syntax::rules::NO_SOURCE))
            .collect()
    }
    pub fn roles_of(&self, unit: UnitId) -> Option<&Roles> {
        self.shared_roles_of(unit).map(|r| &**r)
    }
    /// [`ProgramFacts::roles_of`], shared.
    fn shared_roles_of(&self, unit: UnitId) -> Option<&Arc<Roles>> {
        let places = self.root_places.get_or_init(|| {
            let mut m = IdVec::from_elem(NOT_A_ROOT, self.program.units.len());
            for (i, (u, _)) in self.roots.iter().enumerate() {
                if let Some(place) = m.get_mut(*u).filter(|p| **p == NOT_A_ROOT) {
                    *place = i as u32;
                }
            }
            Arc::new(m)
        });
        let i = *places.get(unit).filter(|&&i| i != NOT_A_ROOT)?;
        self.roots.get(i as usize).map(|r| &r.1)
    }
    /// Varied-at-entry and useful-at-exit of a unit the analyses reached.
    pub fn context(&self, unit: UnitId) -> Option<&(BitSet, BitSet)> {
        self.activity.contexts.get(unit)?.as_deref()
    }
    pub fn activity_of(&self, unit: UnitId) -> Option<&crate::activity::Activity> {
        self.activity.activity.get(unit)?.as_deref()
    }
    pub fn tbr_of(&self, unit: UnitId) -> Option<&Tbr> {
        self.tbr.results.get(unit)?.as_deref()
    }
    /// The local Jacobians of a reached unit's basic blocks and what
    /// preaccumulating each costs ([`crate::preaccumulation`]), computed
    /// when asked.
    pub fn local_jacobians(
        &self,
        unit: UnitId,
    ) -> std::borrow::Cow<'_, [crate::preaccumulation::BlockJacobians]> {
        if let Some(t) = self.tbr_of(unit).filter(|t| !t.jacobians.is_empty()) {
            return std::borrow::Cow::Borrowed(&t.jacobians);
        }
        std::borrow::Cow::Owned(match (self.unit(unit), self.activity_of(unit)) {
            (Some(u), Some(act)) => crate::preaccumulation::of_unit(u, act),
            _ => Vec::new(),
        })
    }
    /// What the adjoint of a unit the analyses reached decides.
    pub fn decisions_of(&self, unit: UnitId) -> Option<&UnitDecisions> {
        self.facts_of(unit).map(|f| &f.decisions)
    }
    pub fn facts_of(&self, unit: UnitId) -> Option<&UnitFacts> {
        self.units.get(unit)?.as_deref()
    }
    /// Whether the adjoint works in `unit`: it has active variables, or
    /// it gets a derivative routine (whose adjoint may zero the adjoints
    /// of overwritten elements of derivative carriers without any active
    /// value). The units whose decisions the clients show.
    pub fn differentiated(&self, unit: &Unit) -> bool {
        differentiated(&self.activity, &self.carriers, unit)
    }
    /// The recovery plans of a unit's loops (empty when it has none).
    pub fn plans_of(&self, unit: UnitId) -> &[Plan] {
        self.facts_of(unit)
            .map_or(&[], |f| f.decisions.plans.as_slice())
    }
    /// What the plans mean per address variable, for the loops that have
    /// address variables, in units with active variables.
    pub fn reports_of(&self, unit: UnitId) -> &[LoopReport] {
        self.facts_of(unit).map_or(&[], |f| f.reports.as_slice())
    }
    /// What the generators write for `root`, a root of these facts: from
    /// the facts' carriers when it is their only root, else from the
    /// carriers of that root alone (None: not a root here).
    pub fn derivative_set(&self, root: UnitId) -> Option<crate::derivatives::RootSet> {
        let roles = self.shared_roles_of(root)?;
        let only = self.roots.len() == 1 && self.roots[0].0 == root;
        let carriers = match only {
            true => self.carriers.clone(),
            false => Arc::new(crate::derivatives::of_roots(
                &self.program,
                &self.activity,
                &std::iter::once((root, roles.clone())).collect(),
            )),
        };
        Some(crate::derivatives::root_set(
            &self.program,
            &carriers,
            self.effects(),
            root,
        ))
    }
    /// The SAVE'd locals the adjoints of these facts' roots share between
    /// their routines ([`crate::saved_state::of_carriers`]), which the
    /// calls' checkpoints may save.
    /// Computed once per analysis.
    pub fn shared_state(&self) -> &SharedState {
        self.shared_state.get_or_init(|| {
            crate::saved_state::of_carriers(
                &self.program,
                &self.carriers,
                self.effects(),
                &self.shapes,
            )
        })
    }
    /// Whether the adjoint runs a copy of unit `u` in place of the
    /// original: it changes one of the `shared` SAVE'd locals, and some
    /// procedure calls it (a root nothing calls runs only as its adjoint).
    pub fn runs_as_copy(
        &self,
        u: UnitId,
        shared: &std::collections::BTreeSet<(UnitId, dfort_ir::SymbolId)>,
    ) -> bool {
        let called = self
            .program
            .call_graph
            .sites
            .iter()
            .any(|s| matches!(s.callee, dfort_ir::callgraph::Callee::Unit(c) if c == u));
        called && crate::saved_state::changes(&self.program, self.effects(), u, shared)
    }
    /// What every unit may read and write.
    pub fn effects(&self) -> &ProgramEffects {
        self.effects
            .get_or_init(|| Arc::new(crate::effects::all(&self.program)))
    }
    /// How many units' activity and TBR this analysis computed (the
    /// others were reused from the previous one).
    pub fn recomputed(&self) -> (usize, usize) {
        let act = &self.activity;
        let tbr = &self.tbr;
        (
            act.recomputed
                .iter_enumerated()
                .filter(|&(i, r)| *r && act.activity[i].is_some())
                .count(),
            tbr.recomputed
                .iter_enumerated()
                .filter(|&(i, r)| *r && tbr.results[i].is_some())
                .count(),
        )
    }
}

/// The program as the analyses see it: each unit prepared, reusing the
/// previous preparation of a unit whose source is the same `Arc`.
fn prepared(program: &Program, previous: Option<&ProgramFacts>) -> Program {
    // The previous prepared units (their chunks shared), each rewritten
    // only where its source changed.
    let previous = previous.filter(|p| p.sources.len() == program.units.len());
    let mut units = previous
        .map_or(&program.units, |p| &p.program.units)
        .clone();
    for (i, u) in program.units.iter_enumerated() {
        if previous.is_some_and(|p| Arc::ptr_eq(&p.sources[i], u)) {
            continue;
        }
        let s = match crate::prepare::unit(u) {
            Some(s) => Arc::new(s),
            None => u.clone(),
        };
        if !Arc::ptr_eq(&units[i], &s) {
            units[i] = s;
        }
    }
    Program {
        units,
        ..program.clone()
    }
}

/// The facts of `program` for `request`, from scratch (`previous` =
/// None) or reusing the facts of the same request on a program that
/// differs from this one by `Changes`.
pub fn analyse(
    program: &Program,
    request: &Request,
    previous: Option<(&ProgramFacts, &Changes)>,
) -> ProgramFacts {
    let previous = previous.filter(|(p, _)| p.request == *request);
    let analysed = prepared(program, previous.map(|(p, _)| p));
    // An unnamed root's roles (directives, intents) are its unit's own:
    // the previous analysis' are kept for the same unit.
    let earlier = previous.map(|(p, _)| PreviousRoots {
        program: &p.program,
        roots: &p.roots,
        named: p.named_roots,
        marked: &p.marked_roots,
    });
    let resolved = resolve_reusing(&analysed, &request.roots, request.others, earlier);
    analyse_resolved(program, analysed, request.clone(), resolved, previous)
}

fn analyse_resolved(
    source: &Program,
    program: Program,
    request: Request,
    resolved: Roots,
    previous: Option<(&ProgramFacts, &Changes)>,
) -> ProgramFacts {
    let recording = request.recording;
    // A root whose independents take their values after a call of its
    // own has none varied at entry: they are seeded after that call.
    let none = BitSet::default();
    let named = resolved.named;
    // Listed only when activity reads them (not on a rerun with the
    // same roots).
    let contexts = || -> Vec<crate::interproc::RootContext> {
        (resolved.roots.iter().enumerate())
            .map(|(k, (u, r))| match k >= named || r.after.is_empty() {
                true => (*u, &r.independents, &r.dependents),
                false => (*u, &none, &r.dependents),
            })
            .collect()
    };
    let seeds: Vec<Seed> = (resolved.roots.iter().take(named))
        .filter(|(_, r)| !r.after.is_empty())
        .map(|(u, r)| Seed {
            root: *u,
            chain: r.after.clone(),
            independents: r.independents.clone(),
        })
        .collect();
    // Whether the roots and their roles are the previous analysis' (the
    // passes then need not compare every root's).
    let same_roots = previous.is_some_and(|(p, _)| same_lists(&p.roots, &resolved.roots));
    let activity = analyze_program_with(
        &program,
        &contexts,
        &seeds,
        previous.map(|(p, c)| (&p.activity, c)),
        same_roots,
    );
    let shapes = Shapes::reusing(&program, previous.map(|(p, c)| (&p.shapes, c)));
    let effects: OnceLock<Arc<ProgramEffects>> = OnceLock::new();
    let supplied = crate::supplied::of_program(&program, &request.supplied);
    // A supplied adjoint has no forward and reverse routines.
    let any_supplied = supplied.iter().any(|s| *s);
    let to_supplied = |u: UnitId, id: &dfort_ir::StmtId| match &program.unit(u).stmt(*id).kind {
        dfort_ir::StmtKind::Call {
            target: dfort_ir::CallTarget::Unit(c),
            ..
        } => supplied[*c],
        _ => false,
    };
    // Unit `u`'s candidate calls, without those to a supplied adjoint
    // (`None` when it has none: the candidates stay as they are).
    let unsupplied = |u: UnitId, calls: &crate::split::Splittable| {
        (any_supplied && calls.keys().any(|id| to_supplied(u, id))).then(|| {
            let mut kept = calls.clone();
            kept.retain(|id, _| !to_supplied(u, id));
            kept
        })
    };
    let fx = effects_in(&effects, &program, previous);
    // Units whose split calls may differ from the previous analysis'.
    let split_stale = previous.and_then(|(p, changes)| {
        let prev = crate::split::Previous {
            program: &p.program,
            effects: p.effects.get()?,
            changes,
        };
        Some(crate::split::stale(&program, fx, &prev))
    });
    let split_candidates = crate::split::of_program_with(
        &program,
        fx,
        &shapes,
        previous
            .zip(split_stale.as_ref())
            .map(|((p, _), s)| (&p.split_candidates, s)),
    );
    // Copied only when a supplied adjoint or a call chosen below changes it.
    let mut splittable = std::borrow::Cow::Borrowed(&split_candidates);
    for u in program.units.indices() {
        if let Some(kept) = unsupplied(u, &splittable[u]) {
            splittable.to_mut()[u] = Arc::new(kept);
        }
    }
    let tbr_pass = |splittable: &crate::split::SplitTable,
                    reuse: Option<(&tbr::ProgramTbr, &Changes)>,
                    same_activity: bool| {
        tbr::analyze_program_with(
            &program,
            &activity,
            &shapes,
            recording.store_all(),
            recording.inversion(),
            request.preaccumulate,
            splittable,
            effects_in(&effects, &program, previous),
            reuse,
            same_activity,
        )
    };
    let mut tbr = tbr_pass(&splittable, previous.map(|(p, c)| (&p.tbr, c)), false);
    // Calls in loops run split where the first pass shows their callee's
    // forward sweep to record an order less than it computes: a second
    // pass, reusing the first for every unit that split changes nothing
    // of.
    let mut split_in_loops = None;
    if !recording.store_all() {
        let found = crate::split::in_loops_of_program(
            &program,
            effects_in(&effects, &program, previous),
            &shapes,
            previous
                .and_then(|(p, _)| p.split_in_loops.as_ref())
                .zip(split_stale.as_ref()),
        );
        let mut in_loops = std::borrow::Cow::Borrowed(&found);
        for u in program.units.indices() {
            if let Some(kept) = unsupplied(u, &in_loops[u]) {
                in_loops.to_mut()[u] = Arc::new(kept);
            }
        }
        let chosen = crate::split::chosen(&program, &activity, &tbr, &in_loops);
        drop(in_loops);
        split_in_loops = Some(found);
        if !chosen.is_empty() {
            for (u, calls) in chosen {
                Arc::make_mut(&mut splittable.to_mut()[u]).extend(calls);
            }
            let same = Changes::unchanged(&program);
            let mut second = tbr_pass(&splittable, Some((&tbr, &same)), true);
            // What the second pass reused from the first, the first may
            // have recomputed for this program: later passes (decisions,
            // reports, checkpoints) must not take it for the previous
            // program's (robustness test, case cc49483d: a unit emptied
            // by an edit kept the loop reports of its old statements).
            for (u, again) in second.recomputed.iter_enumerated_mut() {
                *again |= tbr.recomputed[u];
            }
            tbr = second;
        }
    }
    let carriers = crate::derivatives::of_roots_with(
        &program,
        &activity,
        &resolved.roots,
        previous.map(|(p, c)| (&p.carriers, c)),
        same_roots,
    );
    let split = split_callees(&program, &tbr, previous.map(|(p, _)| p));
    // Decisions follow their unit's TBR: reused when it was (and when
    // whether the unit gets a derivative routine, which decides its
    // reports, and whether a caller runs it split did not change).
    // A rerun starts from the previous table and writes the others.
    let n = program.units.len();
    let mut units: ChunkVec<UnitId, Option<Arc<UnitFacts>>> = match previous {
        Some((p, _)) if p.units.len() == n => p.units.clone(),
        _ => ChunkVec::from_elem(None, n),
    };
    // With the same carriers and split callees, only the units TBR
    // recomputed need be looked at (the others keep their facts).
    let same_routes = previous.is_some_and(|(p, _)| {
        p.units.len() == n && Arc::ptr_eq(&p.carriers, &carriers) && p.split_callees == split
    });
    for i in program.units.indices() {
        if same_routes && !tbr.recomputed[i] {
            continue;
        }
        let kept = !tbr.recomputed[i]
            && previous.is_some_and(|(p, _)| {
                p.units.len() == n
                    && p.units[i].is_some()
                    && p.carriers.routine.get(i) == carriers.routine.get(i)
                    && p.split_callees.get(i) == split.get(i)
            });
        if kept {
            continue;
        }
        let facts = (|| {
            let t = tbr.results[i].as_ref()?;
            let unit = &program.units[i];
            let fx = effects_in(&effects, &program, previous);
            let shape = shapes.of(&program, unit);
            let act = activity.activity.get(i).and_then(|a| a.as_deref());
            let mut decisions = decide(&program, unit, &shape, t, fx, act, recording, split[i]);
            // What the user's adjoint reads is unknown: everything.
            if supplied[i] {
                decisions.entry_needs = None;
                decisions.filled_first.clear();
            }
            // Reports, in the default mode, for the units the adjoint
            // works in.
            let reports = if differentiated(&activity, &carriers, unit) && recording.inversion() {
                unit_reports(unit, &shape, &decisions, t)
            } else {
                Vec::new()
            };
            Some(Arc::new(UnitFacts { decisions, reports }))
        })();
        if facts.is_some() || units[i].is_some() {
            units[i] = facts;
        }
    }
    // The SAVE'd state the adjoints share is read by every checkpoint
    // (what a snapshot may save): when it changes, none is kept.
    let has_saved = program
        .units
        .indices()
        .any(|u| shapes.has_saved_locals_at(&program, u));
    let shared_state = OnceLock::new();
    let shared = || {
        shared_state.get_or_init(|| {
            let fx = effects_in(&effects, &program, previous);
            // The previous analysis' when it read the same: the same
            // carriers and effects, and no changed unit with SAVE'd
            // locals, before or after (only their owners' are looked up).
            let kept = previous.and_then(|(p, changes)| {
                let same = Arc::ptr_eq(&p.carriers, &carriers)
                    && p.effects.get().is_some_and(|pe| **pe == **fx)
                    && changes.body.iter_enumerated().all(|(u, changed)| {
                        !*changed
                            || !(shapes.has_saved_locals_at(&program, u)
                                || p.program
                                    .units
                                    .get(u)
                                    .is_some_and(|old| p.shapes.has_saved_locals(old)))
                    });
                same.then(|| p.shared_state.get().cloned()).flatten()
            });
            kept.unwrap_or_else(|| {
                crate::saved_state::of_carriers(&program, &carriers, fx, &shapes)
            })
        })
    };
    let kept_from = previous.filter(|(p, _)| !has_saved || shared() == p.shared_state());
    let regions = add_checkpoints(
        &program,
        &activity,
        &tbr,
        &carriers,
        (&effects, &shared),
        &mut units,
        kept_from,
    );
    let root_places = OnceLock::new();
    if let Some(places) = previous
        .filter(|(p, _)| {
            p.program.units.len() == program.units.len()
                && crate::roots::same_units(&p.roots, &resolved.roots)
        })
        .and_then(|(p, _)| p.root_places.get())
    {
        let _ = root_places.set(places.clone());
    }
    ProgramFacts {
        request,
        split_callees: split,
        split_candidates,
        split_in_loops,
        supplied,
        sources: source.units.clone(),
        program,
        roots: resolved.roots,
        named_roots: resolved.named,
        marked_roots: resolved.marked,
        problems: resolved.problems,
        activity,
        tbr,
        shapes,
        carriers,
        units,
        effects,
        regions,
        root_places,
        shared_state,
    }
}

/// Per unit: whether a CALL that TBR runs in split mode calls it (the
/// previous analysis' when no unit TBR recomputed runs other calls split
/// than before).
fn split_callees(
    program: &Program,
    tbr: &ProgramTbr,
    previous: Option<&ProgramFacts>,
) -> IdVec<UnitId, bool> {
    let same_split = |p: &ProgramFacts| {
        p.tbr.results.len() == tbr.results.len()
            && tbr.recomputed.iter_enumerated().all(|(u, r)| {
                !*r || p.tbr.results[u].as_ref().map(|t| &t.split)
                    == tbr.results[u].as_ref().map(|t| &t.split)
            })
    };
    if let Some(p) = previous.filter(|p| same_split(p)) {
        return p.split_callees.clone();
    }
    let mut out: IdVec<UnitId, bool> = program.units.indices().map(|_| false).collect();
    for (u, t) in tbr.results.iter_enumerated() {
        for id in t.iter().flat_map(|t| &t.split) {
            if let dfort_ir::StmtKind::Call {
                target: dfort_ir::CallTarget::Unit(c),
                ..
            } = &program.unit(u).stmt(*id).kind
            {
                out[*c] = true;
            }
        }
    }
    out
}

/// [`ProgramFacts::differentiated`].
fn differentiated(activity: &ProgramActivity, carriers: &Carriers, unit: &Unit) -> bool {
    carriers.routine.get(unit.id).copied().unwrap_or(false)
        || activity
            .activity
            .get(unit.id)
            .and_then(|a| a.as_ref())
            .is_some_and(|a| !a.active_anywhere().is_empty())
}

/// The effects of every unit, computed once per analysis (on first use),
/// reusing the previous analysis' where its units are unchanged.
fn effects_in<'a>(
    cell: &'a OnceLock<Arc<ProgramEffects>>,
    program: &Program,
    previous: Option<(&ProgramFacts, &Changes)>,
) -> &'a Arc<ProgramEffects> {
    cell.get_or_init(|| {
        let prev = previous.and_then(|(p, c)| Some((&**p.effects.get()?, c)));
        Arc::new(crate::effects::all_with(program, prev))
    })
}

/// Adds to each unit's decisions the checkpoints of its CALL statements
/// ([`with_calls`]), which read what its callees decided. A unit whose
/// facts were reused keeps its checkpoints unless it, or a unit it
/// reaches through calls, changed (its body, activity, TBR or whether it
/// gets a derivative routine): those are what a checkpoint reads. The
/// regions found (those of the previous analysis kept for the units that
/// are not stale: a region reads its unit and the units it calls) are
/// returned for the next analysis. `previous` is `None` when nothing may
/// be kept (the caller drops it when the SAVE'd state changed).
fn add_checkpoints<'a>(
    program: &Program,
    activity: &ProgramActivity,
    tbr: &ProgramTbr,
    carriers: &Carriers,
    (effects, shared_state): (&OnceLock<Arc<ProgramEffects>>, &dyn Fn() -> &'a SharedState),
    units: &mut ChunkVec<UnitId, Option<Arc<UnitFacts>>>,
    previous: Option<(&ProgramFacts, &Changes)>,
) -> Arc<crate::regions::RegionMemo> {
    let flag = |v: &IdVec<UnitId, bool>, i: UnitId| v.get(i).copied().unwrap_or(true);
    // A unit no calling context reaches, before and after, has no facts
    // and no checkpoints (nor have its callers): it is not stale, so a
    // workspace's unreached units do not drop their region answers at
    // every edit. The facts that are not the previous analysis' are
    // found among the chunks the two tables do not share.
    let same_facts = |a: &Option<Arc<UnitFacts>>, b: &Option<Arc<UnitFacts>>| match (a, b) {
        (Some(a), Some(b)) => Arc::ptr_eq(a, b),
        (None, None) => true,
        _ => false,
    };
    let unlike = previous.and_then(|(p, _)| units.ids_unlike(&p.units, same_facts));
    let mut stale: IdVec<UnitId, bool> = match (previous, unlike) {
        (Some((p, changes)), Some(unlike)) => {
            let mut stale: IdVec<UnitId, bool> = (units.indices())
                .map(|i| {
                    flag(&changes.body, i)
                        || flag(&activity.recomputed, i)
                        || flag(&tbr.recomputed, i)
                })
                .collect();
            for i in unlike {
                stale[i] = true;
            }
            if !std::ptr::eq(&*p.carriers, carriers) {
                for i in units.indices() {
                    stale[i] |= p.carriers.routine.get(i) != carriers.routine.get(i);
                }
            }
            stale
        }
        _ => IdVec::from_elem(true, units.len()),
    };
    // A unit reaching a changed one through calls is stale too: the
    // callers of stale units, up the call graph.
    let mut up: Vec<UnitId> = stale.indices().filter(|&i| stale[i]).collect();
    while let Some(c) = up.pop() {
        let graph = &program.call_graph;
        for &s in graph.calls_to.get(c).into_iter().flatten() {
            let caller = graph.sites[s].caller;
            if let Some(m) = stale.get_mut(caller).filter(|m| !**m) {
                *m = true;
                up.push(caller);
            }
        }
    }
    let todo: Vec<UnitId> = units
        .indices()
        .filter(|&i| stale[i] && units[i].is_some() && calls_anything(&program.units[i]))
        .collect();
    let regions = Arc::new(match previous {
        Some((p, _)) => {
            let stale: Vec<UnitId> = stale.indices().filter(|&u| stale[u]).collect();
            p.regions.kept(&stale)
        }
        None => crate::regions::RegionMemo::default(),
    });
    if todo.is_empty() {
        return regions;
    }
    let fx = effects_in(effects, program, previous);
    let computed: Vec<_> = {
        let units_read: &ChunkVec<UnitId, Option<Arc<UnitFacts>>> = units;
        let entry_needs = |u: UnitId| {
            let f = units_read.get(u)?.as_ref()?;
            f.decisions.entry_needs.as_ref()
        };
        let left = |u: UnitId| match tbr.results.get(u) {
            Some(Some(t)) => t.left_to_callers.as_slice(),
            _ => &[][..],
        };
        let shared_state = shared_state();
        let callees = Callees {
            routine: &carriers.routine,
            entry_needs: &entry_needs,
            regions: &regions,
            left_to_callers: &left,
            shared_state,
        };
        // Read of the functions the units to do reference (all of them
        // when one has statement functions, whose bodies the call graph
        // does not walk).
        let writes = |u: UnitId| {
            carriers
                .with_d
                .get(u)
                .is_some_and(|d| crate::derivatives::writes_derivatives(program, fx, d, u))
        };
        let mut writers: IdVec<UnitId, bool> = IdVec::from_elem(false, program.units.len());
        match todo
            .iter()
            .any(|&i| !program.units[i].stmt_functions.is_empty())
        {
            true => {
                for u in program.units.indices() {
                    writers[u] = writes(u);
                }
            }
            false => {
                let mut asked: IdVec<UnitId, bool> = IdVec::from_elem(false, program.units.len());
                for &i in &todo {
                    for c in program.call_graph.callees(i) {
                        if !std::mem::replace(&mut asked[c], true) {
                            writers[c] = writes(c);
                        }
                    }
                }
            }
        }
        let no_carriers = BitSet::default();
        todo.iter()
            .filter_map(|&i| {
                let f = units[i].as_ref()?;
                let t = tbr.results.get(i)?.as_ref()?;
                let act = activity.activity.get(i).and_then(|a| a.as_deref());
                let unit = &program.units[i];
                let d = &f.decisions;
                let carried = Carried {
                    with_d: carriers.with_d.get(i).unwrap_or(&no_carriers),
                    writers: &writers,
                };
                let decided =
                    with_calls(program, unit, t, fx, &callees, &carried, act, &d.reversal);
                let saves = block_saves(program, unit, t, fx, &d.undo.exact, &decided.calls);
                Some((i, decided, saves))
            })
            .collect()
    };
    for (i, decided, saves) in computed {
        if let Some(f) = units[i].as_mut() {
            let d = &mut Arc::make_mut(f).decisions;
            d.calls = decided.calls;
            d.references = decided.references;
            d.block_saves = saves;
        }
    }
    regions
}
