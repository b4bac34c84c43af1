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
use dfort_ir::{Program, StmtId, StmtKind, Unit, UnitId};
use dfort_syntax::rules::{Rule, ROOT_AFTER, UNKNOWN_ROOT, UNKNOWN_ROOT_VARIABLE};
use std::sync::Arc;

/// A root asked for by name, with its independents and dependents (both
/// empty: from directives, then intents).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RootSpec {
    /// Lower case.
    pub name: String,
    pub independent: Vec<String>,
    pub dependent: Vec<String>,
    /// A procedure called once, by the root or through a chain of calls
    /// each made once, outside loops and branches, after which the
    /// independents take their values (a model that sets its state in an
    /// initialisation call): lower case.
    pub after: Option<String>,
}

/// Why a root asked for is not used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RootProblem {
    /// No subroutine or function has this name.
    NoProcedure { name: String },
    /// The lists name what is not a real variable of the procedure.
    UnknownVariables { root: String, names: Vec<String> },
    /// `after` names no call made exactly once, outside loops and
    /// branches, through a chain of such calls from the root.
    BadAfter {
        root: String,
        callee: String,
        why: String,
    },
}

impl RootProblem {
    /// The rule of the registry this problem reports.
    pub fn rule(&self) -> &'static Rule {
        match self {
            RootProblem::NoProcedure { .. } => &UNKNOWN_ROOT,
            RootProblem::UnknownVariables { .. } => &UNKNOWN_ROOT_VARIABLE,
            RootProblem::BadAfter { .. } => &ROOT_AFTER,
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
            RootProblem::BadAfter { root, callee, why } => {
                format!("independents after the call to `{callee}`: {root} {why}")
            }
        }
    }
}

/// The roots of `program` and the problems of those asked for.
#[derive(Clone, Debug, Default)]
pub struct Roots {
    /// Shared: an edit elsewhere keeps an uncalled procedure's roles as
    /// they were, by reference.
    pub roots: Vec<(UnitId, Arc<Roles>)>,
    /// How many of `roots`, first, the request named; the others (the
    /// uncalled procedures) have no `after` chain, so that a pass over
    /// every root need not read their roles for it.
    pub named: usize,
    pub problems: Vec<RootProblem>,
}

/// The procedures nobody calls.
pub fn uncalled(program: &Program) -> impl Iterator<Item = &Unit> {
    // The call graph first: it is read in order, a unit only when called.
    let calls_to = &program.call_graph.calls_to;
    (program.units.indices())
        .filter(|&u| calls_to.get(u).is_none_or(|c| c.is_empty()))
        .map(|u| program.unit(u))
        .filter(|u| u.is_procedure())
}

/// The calls after which the independents of `root` take their values
/// when `callee` returns: `callee`'s only call, in a unit reached from
/// the root through units each called once (by one call site); each call
/// of that chain one of its unit's top-level statements (run once: the
/// chain's units have no GO TO). Root first; the last is the call to
/// `callee`.
fn after_chain(
    program: &Program,
    root: &Unit,
    callee: &str,
) -> Result<Vec<(UnitId, StmtId)>, String> {
    let go_to = |u: &Unit| {
        u.stmts.iter().any(|s| {
            matches!(
                s.kind,
                StmtKind::Goto { .. }
                    | StmtKind::ComputedGoto { .. }
                    | StmtKind::ArithmeticIf { .. }
            )
        })
    };
    let graph = &program.call_graph;
    let mut chain: Vec<(UnitId, StmtId)> = Vec::new();
    // The call sites of `name`: (caller, statement).
    let sites_of = |name: &str| -> Vec<(UnitId, StmtId, bool)> {
        graph
            .sites
            .iter()
            .filter(|s| !s.function && s.name.eq_ignore_ascii_case(name))
            .map(|s| {
                (
                    s.caller,
                    s.stmt,
                    program.unit(s.caller).body.contains(&s.stmt),
                )
            })
            .collect()
    };
    let mut name = callee.to_ascii_lowercase();
    for _ in 0..64 {
        let sites = sites_of(&name);
        let (caller, stmt, top) = match sites[..] {
            [] if chain.is_empty() => return Err(format!("does not call `{callee}`")),
            [] => return Err(format!("does not reach `{name}` (which leads to `{callee}`)")),
            [one] => one,
            _ => {
                return Err(format!(
                    "reaches `{name}` (which leads to `{callee}`) from {} calls (it must be called once)",
                    sites.len()
                ))
            }
        };
        let unit = program.unit(caller);
        if !top {
            return Err(format!(
                "calls `{name}` inside a loop or a branch of `{}` (the call must run once)",
                unit.name
            ));
        }
        if go_to(unit) {
            return Err(format!(
                "reaches `{callee}` through `{}`, which has GO TO statements (the call must run exactly once)",
                unit.name
            ));
        }
        // A unit reversed by basic blocks (an EXIT, CYCLE or RETURN the
        // structuring cannot remove, a READ with END=) has no point
        // before which its statements run unreversed.
        if !unit.cfg.structured {
            return Err(format!(
                "reaches `{callee}` through `{}`, whose jumps dfort cannot structure (an EXIT, CYCLE or RETURN, or a READ with END=, ERR= or EOR=): its adjoint is reversed by basic blocks, with no point before which its statements are not reversed",
                unit.name
            ));
        }
        chain.push((caller, stmt));
        if caller == root.id {
            chain.reverse();
            return Ok(chain);
        }
        name = unit.name.clone();
    }
    Err(format!(
        "does not reach `{callee}` through a chain of single calls"
    ))
}

/// [`after_chain`], refused where the units on the way could not follow
/// the independents (they follow them as globals): an independent that is
/// a dummy or a local of the root, or one passed as an argument on the way.
fn seeded_chain(
    program: &Program,
    root: &Unit,
    independents: &dfort_ir::bitset::BitSet,
    callee: &str,
) -> Result<Vec<(UnitId, StmtId)>, String> {
    let chain = after_chain(program, root, callee)?;
    if chain.len() > 1 {
        let not_global = independents
            .ids::<dfort_ir::SymbolId>()
            .find(|s| crate::dep::global_key(program, root, *s).is_none());
        if let Some(s) = not_global {
            let name = &root.symbol(s).name;
            return Err(format!(
                "calls `{callee}` inside another call, where its independent `{name}`, not a COMMON or module variable, cannot be followed (take it after a call of the root itself)"
            ));
        }
    }
    if let Some((unit, name)) = passes_independent(program, root, independents, &chain) {
        return Err(format!(
            "reaches `{callee}` through a call in `{unit}` that passes the independent `{name}` as an argument, which the units on the way cannot follow (they follow the independents as globals)"
        ));
    }
    Ok(chain)
}

/// A call of `chain` before its last one (the calls into the units on the
/// way) that passes an independent of `root` as an actual argument: the
/// unit receiving it would see it as a dummy, not as the global the seeds
/// follow. (The unit making it, and the independent's name there.)
fn passes_independent(
    program: &Program,
    root: &Unit,
    independents: &dfort_ir::bitset::BitSet,
    chain: &[(UnitId, StmtId)],
) -> Option<(String, String)> {
    let keys: Vec<_> = independents
        .ids::<dfort_ir::SymbolId>()
        .filter_map(|s| crate::dep::global_key(program, root, s))
        .collect();
    for &(cu, st) in &chain[..chain.len().saturating_sub(1)] {
        let unit = program.unit(cu);
        let StmtKind::Call { args, .. } = &unit.stmt(st).kind else {
            continue;
        };
        let mut used = dfort_ir::bitset::BitSet::new(unit.symbols.len());
        for a in args {
            dfort_ir::dp::vars(unit, &a.value, &mut used);
        }
        for s in used.ids::<dfort_ir::SymbolId>() {
            let independent = if cu == root.id {
                independents.contains_id(s)
            } else {
                crate::dep::global_key(program, unit, s).is_some_and(|k| keys.contains(&k))
            };
            if independent {
                return Some((unit.name.clone(), unit.symbol(s).name.clone()));
            }
        }
    }
    None
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
    known: impl Fn(&Unit) -> Option<Arc<Roles>>,
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
        let mut r = roles(u, Some((&spec.independent, &spec.dependent)));
        if let Some(callee) = &spec.after {
            match seeded_chain(program, u, &r.independents, callee) {
                Ok(chain) => r.after = chain,
                Err(why) => {
                    out.problems.push(RootProblem::BadAfter {
                        root: u.name.clone(),
                        callee: callee.clone(),
                        why,
                    });
                    continue;
                }
            }
        }
        if r.unknown.is_empty() {
            out.roots.push((u.id, Arc::new(r)));
        } else {
            out.problems.push(RootProblem::UnknownVariables {
                root: u.name.clone(),
                names: r.unknown,
            });
        }
    }
    out.named = out.roots.len();
    if others {
        let named = |u: &Unit| specs.iter().any(|s| s.name.eq_ignore_ascii_case(&u.name));
        let rest: Vec<(UnitId, Arc<Roles>)> = uncalled(program)
            .filter(|u| !named(u))
            .map(|u| (u.id, known(u).unwrap_or_else(|| Arc::new(roles(u, None)))))
            .collect();
        out.roots.extend(rest);
    }
    out
}
