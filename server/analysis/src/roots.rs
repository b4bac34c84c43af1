//! Which procedures the analyses start from, and with which roles, for
//! every client alike (the generators, `dfort analyze`, the editor).
//!
//! Contract: the roots are the procedures asked for by name (command
//! line, `dfort.toml` or editor settings), each with the roles its lists
//! give, or — when it gives none — its directives, then its intents
//! ([`crate::roles::roles`]); with `others`, every other procedure nobody
//! calls is a root too, with its directives' or intents' roles. A name
//! that is no procedure, or lists naming variables the procedure does
//! not have, is a [`RootProblem`] and that root is skipped. Interprocedural
//! activity (paper 000 §4) seeds its calling contexts from these roots.

use crate::roles::{roles, Roles};
use dfort_ir::{Program, Unit, UnitId};
use dfort_syntax::rules::{Rule, UNKNOWN_ROOT, UNKNOWN_ROOT_VARIABLE};

/// A root asked for by name, with its independents and dependents (both
/// empty: from directives, then intents).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RootSpec {
    /// Lower case.
    pub name: String,
    pub independent: Vec<String>,
    pub dependent: Vec<String>,
}

/// Why a root asked for is not used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RootProblem {
    /// No subroutine or function has this name.
    NoProcedure { name: String },
    /// The lists name what is not a real variable of the procedure.
    UnknownVariables { root: String, names: Vec<String> },
}

impl RootProblem {
    /// The rule of the registry this problem reports.
    pub fn rule(&self) -> &'static Rule {
        match self {
            RootProblem::NoProcedure { .. } => &UNKNOWN_ROOT,
            RootProblem::UnknownVariables { .. } => &UNKNOWN_ROOT_VARIABLE,
        }
    }
    pub fn message(&self) -> String {
        match self {
            RootProblem::NoProcedure { name } => {
                format!("no subroutine or function named `{name}`")
            }
            RootProblem::UnknownVariables { root, names } => {
                format!("{root} has no real variable named {}", names.join(", "))
            }
        }
    }
}

/// The roots of `program` and the problems of those asked for.
#[derive(Clone, Debug, Default)]
pub struct Roots {
    pub roots: Vec<(UnitId, Roles)>,
    pub problems: Vec<RootProblem>,
}

/// The procedures nobody calls.
pub fn uncalled(program: &Program) -> impl Iterator<Item = &Unit> {
    program.units.iter().map(|u| &**u).filter(|u| {
        u.is_procedure()
            && program
                .call_graph
                .calls_to
                .get(u.id)
                .is_none_or(|c| c.is_empty())
    })
}

/// The roots `specs` ask for and, with `others`, every other procedure
/// nobody calls.
pub fn resolve(program: &Program, specs: &[RootSpec], others: bool) -> Roots {
    resolve_reusing(program, specs, others, |_| None)
}

/// [`resolve`], taking the roles of an unnamed root from `known` when it
/// has them (the previous analysis' roles of the same unit: a unit's
/// roles from directives and intents depend on the unit alone).
pub fn resolve_reusing(
    program: &Program,
    specs: &[RootSpec],
    others: bool,
    known: impl Fn(&Unit) -> Option<Roles>,
) -> Roots {
    let mut out = Roots::default();
    for spec in specs {
        let name = spec.name.to_ascii_lowercase();
        let Some(u) = program
            .units
            .iter()
            .find(|u| u.is_procedure() && u.name == name)
        else {
            out.problems.push(RootProblem::NoProcedure { name });
            continue;
        };
        if out.roots.iter().any(|(r, _)| *r == u.id) {
            continue;
        }
        let r = roles(u, Some((&spec.independent, &spec.dependent)));
        if r.unknown.is_empty() {
            out.roots.push((u.id, r));
        } else {
            out.problems.push(RootProblem::UnknownVariables {
                root: u.name.clone(),
                names: r.unknown,
            });
        }
    }
    if others {
        let named = |u: &Unit| specs.iter().any(|s| s.name.eq_ignore_ascii_case(&u.name));
        let rest: Vec<(UnitId, Roles)> = uncalled(program)
            .filter(|u| !named(u))
            .map(|u| (u.id, known(u).unwrap_or_else(|| roles(u, None))))
            .collect();
        out.roots.extend(rest);
    }
    out
}
