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
use dfort_ir::chunk_vec::ChunkVec;
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

/// The roots in order: those the request named, then the uncalled
/// procedures by unit id. In chunks that copies share: an edit keeps the
/// list of a workspace's thousands of uncalled procedures and rewrites
/// only the entries of the units it changed.
pub type RootList = ChunkVec<usize, (UnitId, Arc<Roles>)>;

/// The roots of `program` and the problems of those asked for.
#[derive(Clone, Debug, Default)]
pub struct Roots {
    /// Shared: an edit elsewhere keeps an uncalled procedure's roles as
    /// they were, by reference.
    pub roots: RootList,
    /// How many of `roots`, first, the request named; the others (the
    /// uncalled procedures) have no `after` chain, so that a pass over
    /// every root need not read their roles for it.
    pub named: usize,
    /// The roots past the named ones whose unit has `!$ad` directives, by
    /// unit (with the named ones, the roots a user chose).
    pub marked: Vec<UnitId>,
    pub problems: Vec<RootProblem>,
}

/// The roots an earlier resolution of the same specs found, on the
/// program it read (whose unchanged units are this one's, by reference).
#[derive(Clone, Copy)]
pub struct PreviousRoots<'a> {
    pub program: &'a Program,
    pub roots: &'a RootList,
    pub named: usize,
    pub marked: &'a [UnitId],
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
    resolve_reusing(program, specs, others, None)
}

/// [`resolve`], reusing `previous`, the roots of the same specs on an
/// earlier program: an unnamed root's roles (from directives and intents)
/// depend on its unit alone, so a unit that is the earlier program's own
/// keeps its entry, and when the same units are roots in the same order
/// the earlier list is kept with only the changed units' entries
/// rewritten.
pub fn resolve_reusing(
    program: &Program,
    specs: &[RootSpec],
    others: bool,
    previous: Option<PreviousRoots>,
) -> Roots {
    let mut named: Vec<(UnitId, Arc<Roles>)> = Vec::new();
    let mut problems = Vec::new();
    for spec in specs {
        let name = spec.name.to_ascii_lowercase();
        let Some(u) = program
            .units
            .iter()
            .find(|u| u.is_procedure() && u.name == name)
        else {
            problems.push(RootProblem::NoProcedure { name });
            continue;
        };
        if named.iter().any(|(r, _)| *r == u.id) {
            continue;
        }
        let mut r = roles(u, Some((&spec.independent, &spec.dependent)));
        if let Some(callee) = &spec.after {
            match seeded_chain(program, u, &r.independents, callee) {
                Ok(chain) => r.after = chain,
                Err(why) => {
                    problems.push(RootProblem::BadAfter {
                        root: u.name.clone(),
                        callee: callee.clone(),
                        why,
                    });
                    continue;
                }
            }
        }
        if r.unknown.is_empty() {
            named.push((u.id, Arc::new(r)));
        } else {
            problems.push(RootProblem::UnknownVariables {
                root: u.name.clone(),
                names: r.unknown,
            });
        }
    }
    // A named root with the roles it had keeps its entry.
    let previous = previous.filter(|p| p.roots.len() >= p.named);
    if let Some(p) = previous.filter(|p| p.named == named.len()) {
        for (k, root) in named.iter_mut().enumerate() {
            let (u, old) = &p.roots[k];
            if *u == root.0 && same_roles(old, &root.1) {
                root.1 = old.clone();
            }
        }
    }
    let count = named.len();
    if let Some((roots, marked)) = previous
        .filter(|_| others)
        .and_then(|p| kept_list(program, specs, &named, p))
    {
        return Roots {
            roots,
            named: count,
            marked,
            problems,
        };
    }
    let rest = match others {
        true => uncalled_roots(program, specs, previous),
        false => Vec::new(),
    };
    // A kept entry's unit is the previous program's: marked as it was.
    let marked = (rest.iter())
        .filter(|(u, kept)| match kept {
            Some(_) => previous.is_some_and(|p| p.marked.binary_search(u).is_ok()),
            None => !program.unit(*u).directives.is_empty(),
        })
        .map(|(u, _)| *u)
        .collect();
    Roots {
        roots: list(program, named, rest, previous),
        named: count,
        marked,
        problems,
    }
}

/// Whether two roles give a root the same independents, dependents and
/// `after` chain (what the analyses read of them).
pub fn same_roles(a: &Arc<Roles>, b: &Arc<Roles>) -> bool {
    Arc::ptr_eq(a, b)
        || (a.independents == b.independents && a.dependents == b.dependents && a.after == b.after)
}

/// Whether two lists hold the same units in the same order with the
/// same roles ([`same_roles`]; entries shared by both are not read).
pub fn same_lists(a: &RootList, b: &RootList) -> bool {
    a.same_by(b, |x, y| x.0 == y.0 && same_roles(&x.1, &y.1))
}

/// Whether two lists hold the same units in the same order (entries
/// shared by both are not read).
pub fn same_units(a: &RootList, b: &RootList) -> bool {
    a.same_by(b, |x, y| x.0 == y.0)
}

/// The previous list, and its marked roots, with the entries of the
/// named roots and of the changed units rewritten, when the edit kept the
/// call graph's call-site lists (shared: the same procedures are
/// uncalled) and every changed unit its name and kind: only the changed
/// units are read, found among the chunks the programs do not share.
/// `None` otherwise, or when the previous list does not hold the same
/// named roots.
fn kept_list(
    program: &Program,
    specs: &[RootSpec],
    named: &[(UnitId, Arc<Roles>)],
    previous: PreviousRoots,
) -> Option<(RootList, Vec<UnitId>)> {
    let calls_to = &program.call_graph.calls_to;
    let count = named.len();
    let same_named = previous.named == count
        && previous.roots.len() >= count
        && (named.iter().enumerate()).all(|(k, r)| previous.roots[k].0 == r.0);
    if !same_named || !Arc::ptr_eq(calls_to, &previous.program.call_graph.calls_to) {
        return None;
    }
    let changed = (program.units).ids_unlike(&previous.program.units, Arc::ptr_eq)?;
    let mut roots = previous.roots.clone();
    for (k, root) in named.iter().enumerate() {
        if !Arc::ptr_eq(&roots[k].1, &root.1) {
            roots[k] = root.clone();
        }
    }
    let mut marked = previous.marked.to_vec();
    for u in changed {
        let (old, new) = (previous.program.unit(u), program.unit(u));
        if old.name != new.name || old.is_procedure() != new.is_procedure() {
            return None;
        }
        let uncalled = calls_to.get(u).is_none_or(|c| c.is_empty());
        let is_named = specs.iter().any(|s| s.name.eq_ignore_ascii_case(&new.name));
        if !uncalled || !new.is_procedure() || is_named {
            continue;
        }
        // Past the named roots the list is sorted by unit.
        let (mut lo, mut hi) = (count, roots.len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            match roots[mid].0 < u {
                true => lo = mid + 1,
                false => hi = mid,
            }
        }
        if roots.get(lo).is_none_or(|r| r.0 != u) {
            return None;
        }
        roots[lo] = (u, Arc::new(roles(new, None)));
        match (marked.binary_search(&u), new.directives.is_empty()) {
            (Ok(k), true) => {
                marked.remove(k);
            }
            (Err(k), false) => marked.insert(k, u),
            _ => {}
        }
    }
    Some((roots, marked))
}

/// The uncalled procedures the specs do not name, each with its entry
/// in the previous list when it keeps it (its unit unchanged). A unit
/// the previous program shares, uncalled then too, is one exactly when
/// it was one then: only the units that changed or lost their last
/// caller are read.
fn uncalled_roots<'p>(
    program: &Program,
    specs: &[RootSpec],
    previous: Option<PreviousRoots<'p>>,
) -> Vec<(UnitId, Option<&'p Arc<Roles>>)> {
    let named = |u: &Unit| specs.iter().any(|s| s.name.eq_ignore_ascii_case(&u.name));
    let calls_to = &program.call_graph.calls_to;
    let uncalled =
        |p: &Program, u: UnitId| p.call_graph.calls_to.get(u).is_none_or(|c| c.is_empty());
    // Both lists are sorted by unit past the named roots.
    let mut before = previous
        .map(|p| p.roots.iter().skip(p.named))
        .into_iter()
        .flatten()
        .peekable();
    let mut rest = Vec::new();
    for u in program.units.indices() {
        let was = {
            while before.next_if(|b| b.0 < u).is_some() {}
            before.next_if(|b| b.0 == u).map(|b| &b.1)
        };
        if calls_to.get(u).is_some_and(|c| !c.is_empty()) {
            continue;
        }
        let same = previous.is_some_and(|p| {
            (p.program.units.get(u)).is_some_and(|old| Arc::ptr_eq(old, &program.units[u]))
        });
        if same && previous.is_some_and(|p| uncalled(p.program, u)) {
            if let Some(roles) = was {
                rest.push((u, Some(roles)));
            }
            continue;
        }
        let unit = program.unit(u);
        if unit.is_procedure() && !named(unit) {
            rest.push((u, was.filter(|_| same)));
        }
    }
    rest
}

/// The named roots followed by `rest` (a kept entry's roles, or none
/// for one to find afresh): the previous list with the changed entries
/// rewritten when its roots are the same units in the same order (the
/// kept entries not touched: 25,000 reference counts), a new list
/// otherwise.
fn list(
    program: &Program,
    named: Vec<(UnitId, Arc<Roles>)>,
    rest: Vec<(UnitId, Option<&Arc<Roles>>)>,
    previous: Option<PreviousRoots>,
) -> RootList {
    let entry = |(u, kept): (UnitId, Option<&Arc<Roles>>)| match kept {
        Some(r) => (u, r.clone()),
        None => (u, Arc::new(roles(program.unit(u), None))),
    };
    let count = named.len();
    let same_units = previous.is_some_and(|p| {
        p.named == count
            && p.roots
                .iter()
                .map(|r| r.0)
                .eq(named.iter().map(|r| r.0).chain(rest.iter().map(|r| r.0)))
    });
    match previous.filter(|_| same_units) {
        Some(p) => {
            let mut out = p.roots.clone();
            for (k, root) in named.into_iter().enumerate() {
                if !Arc::ptr_eq(&out[k].1, &root.1) {
                    out[k] = root;
                }
            }
            for (k, root) in rest.into_iter().enumerate() {
                if root.1.is_none() {
                    out[count + k] = entry(root);
                }
            }
            out
        }
        None => named
            .into_iter()
            .chain(rest.into_iter().map(entry))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dfort_ir::FileId;

    const KEPT: &str = "subroutine a(x)
  real, intent(inout) :: x
!$ad independent(x)
  x = x * 2
end
subroutine b(y)
  real y
  call c(y)
end
subroutine c(z)
  real, intent(inout) :: z
  z = z + 1
end
";

    fn lowered(k: u32, src: &str) -> dfort_ir::lower::LoweredFile {
        let mut parser = dfort_syntax::FortranParser::new();
        let parsed = parser.parse(
            format!("t{k}.f90").into(),
            src.into(),
            dfort_syntax::SourceForm::Free,
        );
        dfort_ir::lower::lower_file(&parsed, FileId(k))
    }

    /// `d`, the second file's only unit, with this body.
    fn edited(body: &str) -> String {
        format!("subroutine d(w)\n  real, intent(inout) :: w\n  real v\n  {body}\nend\n")
    }

    fn specs() -> Vec<RootSpec> {
        vec![RootSpec {
            name: "b".into(),
            independent: vec!["y".into()],
            dependent: vec!["y".into()],
            after: None,
        }]
    }

    fn previous<'a>(program: &'a Program, roots: &'a Roots) -> Option<PreviousRoots<'a>> {
        Some(PreviousRoots {
            program,
            roots: &roots.roots,
            named: roots.named,
            marked: &roots.marked,
        })
    }

    /// The roots found again from the last ones equal a fresh resolution
    /// (same units, same roles), and every unchanged unit keeps its entry
    /// by reference: when the same units are roots (`d` edited in place)
    /// and when they are not (`d` now calls `a`, which stops being one).
    /// The roots marked with directives (`a`) are those of a fresh one.
    #[test]
    fn roots_found_again_equal_a_fresh_resolution_and_keep_unchanged_entries() {
        let (old, _) = dfort_ir::link::link(vec![lowered(0, KEPT), lowered(1, &edited("v = w"))]);
        let before = resolve(&old, &specs(), true);
        let ids = |r: &Roots| r.roots.iter().map(|(u, _)| u.0).collect::<Vec<_>>();
        assert_eq!((ids(&before), before.named), (vec![1, 0, 3], 1));
        assert_eq!(before.marked, [UnitId(0)]);
        // (body of d, roots, marked roots, whether the call graph's site
        // lists are kept: the previous list is then patched, not rebuilt)
        let cases = [
            ("w = v * w", vec![1, 0, 3], vec![UnitId(0)], true),
            (
                "!$ad independent(w)\n  w = v * w",
                vec![1, 0, 3],
                vec![UnitId(0), UnitId(3)],
                true,
            ),
            ("call a(w)", vec![1, 3], vec![], false),
        ];
        for (body, roots, marked, kept_calls) in cases {
            let d = UnitId(3);
            let (new, _) = dfort_ir::link::relink(&old, vec![(d, lowered(1, &edited(body)))]);
            let calls_to = |p: &Program| p.call_graph.calls_to.clone();
            assert_eq!(
                Arc::ptr_eq(&calls_to(&new), &calls_to(&old)),
                kept_calls,
                "{body}"
            );
            let again = resolve_reusing(&new, &specs(), true, previous(&old, &before));
            let fresh = resolve(&new, &specs(), true);
            assert_eq!((ids(&again), again.named), (roots, 1));
            assert_eq!(ids(&again), ids(&fresh));
            assert_eq!((&again.marked, &fresh.marked), (&marked, &marked));
            for ((u, a), (_, f)) in again.roots.iter().zip(&fresh.roots) {
                assert!(same_roles(a, f), "roles of unit {}", u.0);
                let kept = (before.roots.iter()).find(|(b, _)| b == u).map(|(_, r)| r);
                let shared = kept.is_some_and(|k| Arc::ptr_eq(k, a));
                assert_eq!(shared, *u != d, "unit {} kept by reference", u.0);
            }
        }
    }
}
