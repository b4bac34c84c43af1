//! The analyses a snapshot carries: interprocedural activity (paper 000
//! §4) and TBR (§5) from the configured roots (with their lists) and from
//! every other procedure nobody calls (with the roles its directives or
//! intents give).
//!
//! Units are analysed as the generators see them
//! (`dfort_analysis::prepare`: statement functions inlined, loops with
//! EXIT and CYCLE structured); their statements keep their ids.
//!
//! Contract: never fails; a configured root that does not exist (or names
//! variables it does not have) is reported in `problems` and skipped.
//! Given the previous analysis and the [`Changes`] since, only the units
//! whose inputs changed are re-analysed (`dfort_analysis::incremental`);
//! the result equals an analysis from scratch.

use dfort_analysis::address_report::{unit_reports, LoopReport};
use dfort_analysis::bitset::BitSet;
use dfort_analysis::decisions::{decide, Recording, UnitDecisions};
use dfort_analysis::incremental::Changes;
use dfort_analysis::interproc::{analyze_program_with, ProgramActivity};
use dfort_analysis::recovery::Plan;
use dfort_analysis::roles::{roles, Roles};
use dfort_analysis::tbr::{self, ProgramTbr, Tbr};
use dfort_ir::{Program, Unit, UnitId};
use std::sync::Arc;

/// What the adjoint of a unit decides (`dfort_analysis::decisions`, as
/// the generator decides it) and the reports of its loops' plans.
pub struct UnitPlans {
    pub decisions: UnitDecisions,
    pub reports: Vec<LoopReport>,
}

pub use dfort_analysis::roots::RootSpec;

pub struct Analysis {
    pub activity: ProgramActivity,
    pub tbr: ProgramTbr,
    /// Per unit with TBR results: the adjoint's decisions (reversal,
    /// recovery plans of its loops (paper 003), dropped statements, pushes)
    /// and how each address index will be recovered.
    pub plans: Vec<Option<Arc<UnitPlans>>>,
    /// The units as the analyses saw them (EXIT and CYCLE structured;
    /// the others are the snapshot's own), by unit id.
    pub units: Vec<Arc<Unit>>,
    /// The snapshot's units these were made from.
    pub sources: Vec<Arc<Unit>>,
    /// The roots analysed, with their roles.
    pub roots: Vec<(UnitId, Roles)>,
    /// Configured roots that could not be used, with the reason.
    pub problems: Vec<String>,
}

impl Analysis {
    pub fn roles_of(&self, unit: UnitId) -> Option<&Roles> {
        self.roots.iter().find(|(u, _)| *u == unit).map(|(_, r)| r)
    }
    /// Varied-at-entry and useful-at-exit of a unit the analyses reached.
    pub fn context(&self, unit: UnitId) -> Option<&(BitSet, BitSet)> {
        self.activity.contexts.get(unit.0 as usize)?.as_ref()
    }
    pub fn tbr_of(&self, unit: UnitId) -> Option<&Tbr> {
        self.tbr.results.get(unit.0 as usize)?.as_deref()
    }
    /// The recovery plans of a unit's loops (empty when it has none).
    pub fn plans_of(&self, unit: UnitId) -> &[Plan] {
        self.plans
            .get(unit.0 as usize)
            .and_then(|p| p.as_deref())
            .map_or(&[], |p| p.decisions.plans.as_slice())
    }
    /// What the adjoint of a unit the analyses reached decides.
    pub fn decisions_of(&self, unit: UnitId) -> Option<&UnitDecisions> {
        self.plans
            .get(unit.0 as usize)
            .and_then(|p| p.as_deref())
            .map(|p| &p.decisions)
    }
    /// What the plans mean per address variable, for the loops that have
    /// address variables, in units with active variables.
    pub fn reports_of(&self, unit: UnitId) -> &[LoopReport] {
        self.plans
            .get(unit.0 as usize)
            .and_then(|p| p.as_deref())
            .map_or(&[], |p| p.reports.as_slice())
    }
    /// How many units' activity and TBR this analysis computed (the
    /// others were reused from the previous one).
    pub fn recomputed(&self) -> (usize, usize) {
        let act = &self.activity;
        let tbr = &self.tbr;
        (
            (0..act.recomputed.len())
                .filter(|&i| act.recomputed[i] && act.activity[i].is_some())
                .count(),
            (0..tbr.recomputed.len())
                .filter(|&i| tbr.recomputed[i] && tbr.results[i].is_some())
                .count(),
        )
    }
}

/// The roles of `unit` for differentiation: the configured lists when the
/// unit is a configured root, else its directives or intents.
pub fn root_roles(unit: &Unit, specs: &[RootSpec]) -> Roles {
    match specs.iter().find(|r| r.name == unit.name) {
        Some(r) => roles(unit, Some((&r.independent, &r.dependent))),
        None => roles(unit, None),
    }
}

/// Analyses `program` from scratch (`previous` = None) or reusing the
/// previous analysis of a program that differs from this one by `Changes`.
pub fn analyse(
    program: &Program,
    specs: &[RootSpec],
    previous: Option<(&Analysis, &Changes)>,
) -> Analysis {
    // The analyses see loops with EXIT and CYCLE as the adjoint generator
    // does: structured (statement ids are kept). A unit the last analysis
    // structured is reused while its source is the same.
    let sources = program.units.clone();
    let mut units = program.units.clone();
    let mut rewritten = false;
    for (i, u) in program.units.iter().enumerate() {
        let kept = previous.and_then(|(a, _)| {
            let same = a.sources.get(i).is_some_and(|s| Arc::ptr_eq(s, u));
            same.then(|| a.units[i].clone())
        });
        let s = match kept {
            Some(s) => Some(s).filter(|s| !Arc::ptr_eq(s, u)),
            None => dfort_analysis::prepare::unit(u).map(Arc::new),
        };
        if let Some(s) = s {
            units[i] = s;
            rewritten = true;
        }
    }
    let structured;
    let program = if rewritten {
        structured = Program {
            units,
            ..program.clone()
        };
        &structured
    } else {
        program
    };
    // The configured roots, and every other procedure nobody calls with
    // the roles its directives or intents give: configuring one root does
    // not switch off the analysis of the rest of the workspace.
    let resolved = dfort_analysis::roots::resolve(program, specs, true);
    let roots = resolved.roots;
    let problems: Vec<String> = resolved
        .problems
        .iter()
        .map(|p| format!("root {}", p.message()))
        .collect();
    let seeds: Vec<_> = roots
        .iter()
        .map(|(u, r)| (*u, r.independents.clone(), r.dependents.clone()))
        .collect();
    let activity = analyze_program_with(program, &seeds, previous.map(|(a, c)| (&a.activity, c)));
    let tbr = tbr::analyze_program_with(
        program,
        &activity,
        false,
        true,
        previous.map(|(a, c)| (&a.tbr, c)),
    );
    // Decisions follow their unit's TBR: reused when it was.
    let effects = std::sync::OnceLock::new();
    let plans = (0..program.units.len())
        .map(|i| {
            let t = tbr.results[i].as_ref()?;
            if !tbr.recomputed[i] {
                if let Some(p) = previous.and_then(|(a, _)| a.plans.get(i).cloned().flatten()) {
                    return Some(p);
                }
            }
            let unit = &program.units[i];
            let effects = effects.get_or_init(|| dfort_analysis::effects::all(program));
            let decisions = decide(program, unit, t, effects, Recording::Inversion);
            // Reports only for units with active variables (what the
            // editor shows them for).
            let active = activity.activity[i]
                .as_ref()
                .is_some_and(|a| !dfort_analysis::activity::active_anywhere(unit, a).is_empty());
            let reports = if active {
                unit_reports(program, unit, &decisions, t)
            } else {
                Vec::new()
            };
            Some(Arc::new(UnitPlans { decisions, reports }))
        })
        .collect();
    Analysis {
        activity,
        tbr,
        plans,
        units: program.units.clone(),
        sources,
        roots,
        problems,
    }
}
