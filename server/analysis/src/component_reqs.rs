//! Component requirements: a component-wise refinement of TBR's records
//! (paper 000 §5.1–5.2, whose sets hold whole variables) for variables of
//! a derived type. A particle's `p%pos%x = p%pos%x + dt*p%vel%x`
//! overwrites a component no adjoint reads, but TBR, which requires all of
//! `p` once an adjoint reads `p%vel%y`, records it.
//!
//! Contract: a *path* is the list of component names from a variable to a
//! part of it (`ps(i)%pos%x` → `pos, x`; subscripts dropped; the empty
//! path is all of it); two paths overlap when one is a prefix of the
//! other. For a refinable variable `v` ([`refinable`]: a derived-type
//! local or dummy, not a pointer, target, SAVE'd, in COMMON, EQUIVALENCE
//! or a may-alias class) of a unit with TBR results, `Reads(S, v)` are
//! the paths of `v` the adjoint of statement `S` may read, counted where
//! TBR's `needs` of `S` holds `v`: the references §5.1's rules require in
//! an assignment and its left-hand side's subscripts; for a CALL of a
//! procedure with source, each actual `v…` bound to a dummy `f` extended
//! by the paths the callee's statements read of `f` (its summary, over
//! every statement: everything for a recursive callee or one without
//! results); for any other statement every reference of `v` it holds;
//! all of `v` when a function reference, an internal procedure or
//! nothing found explains the requirement. `In(W, v)` joins `Reads(S, v)`
//! over every `S` from which the control-flow graph leads to `W`, and,
//! for a dummy, the unit's calling context: at every call site, the
//! paths the caller's `In` there holds of the actual, seen from the
//! dummy (all of it when the actual is not a reference to a refinable
//! variable, the site is a function reference, the unit is recursive or
//! no caller has results). A record of `v` at a statement `W` whose
//! writes of `v` are all component references stays only when a written
//! path overlaps one of `In(W, v) ∪ Reads(W, v)`. Every requirement TBR
//! counts comes from a reference, a call's binding or the calling
//! context, each covered, so a dropped record is one no adjoint reads.
//! Not in store-all mode; TBR's other decisions stay as they are.

use crate::engine::{solve, Direction};
use crate::interproc::ProgramActivity;
use crate::tbr::{Record, Tbr};
use dfort_ir::bitset::BitSet;
use dfort_ir::cfg::NodeKind;
use dfort_ir::chunk_vec::ChunkVec;
use dfort_ir::idx::Idx;
use dfort_ir::*;
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

/// Component names from a variable to a part of it; empty: all of it.
type Path = Vec<String>;

/// Paths of the refinable variables of one unit.
type Paths = BTreeSet<(SymbolId, Path)>;

/// Per refinable dummy of a unit: the paths its statements' adjoints may
/// read of it (a dummy absent from the map: all of it).
type Summary = HashMap<SymbolId, BTreeSet<Path>>;

/// Drops from `results` the records no adjoint reads component-wise
/// (module comment). A unit's records before this refinement are kept in
/// [`Tbr::records_before_components`], so that a rerun reusing its
/// results refines them again under new contexts.
pub fn refine(
    program: &Program,
    pa: &ProgramActivity,
    results: &mut ChunkVec<UnitId, Option<Arc<Tbr>>>,
) {
    // Put back what an earlier run dropped.
    for u in program.units.indices() {
        if let Some(t) = &mut results[u] {
            if t.records_before_components.is_some() {
                let t = Arc::make_mut(t);
                if let Some(all) = t.records_before_components.take() {
                    t.records = all;
                }
            }
        }
    }
    let candidates: Vec<UnitId> = program
        .units
        .indices()
        .filter(|&u| {
            results[u].as_ref().is_some_and(|t| {
                let unit = program.unit(u);
                t.records
                    .iter()
                    .any(|r| component_writes(program, unit, r).is_some())
            })
        })
        .collect();
    if candidates.is_empty() {
        return;
    }
    let mut ctx = Refiner {
        program,
        pa,
        results,
        summaries: HashMap::new(),
        inflow: HashMap::new(),
        visiting: BTreeSet::new(),
    };
    let mut kept: Vec<(UnitId, Vec<Record>)> = Vec::new();
    for u in candidates {
        let unit = program.unit(u);
        let inflow = ctx.inflow(u);
        let t = ctx.results[u].as_ref().expect("a candidate has results");
        let keep: Vec<Record> = t
            .records
            .iter()
            .filter(|r| {
                let Some(written) = component_writes(program, unit, r) else {
                    return true;
                };
                let Some(before) = inflow.as_ref().and_then(|f| f.get(&r.stmt)) else {
                    return true;
                };
                let own = ctx.reads(u, unit.stmt(r.stmt));
                before
                    .iter()
                    .chain(&own)
                    .filter(|(v, _)| *v == r.variable)
                    .any(|(_, p)| written.iter().any(|c| overlap(c, p)))
            })
            .cloned()
            .collect();
        if keep.len() < t.records.len() {
            kept.push((u, keep));
        }
    }
    for (u, keep) in kept {
        if let Some(t) = &mut results[u] {
            let t = Arc::make_mut(t);
            t.records_before_components = Some(std::mem::replace(&mut t.records, keep));
        }
    }
}

/// Whether `v` of `unit` is a variable whose requirements this refinement
/// follows component by component: its type's storage is its own (no
/// pointer component, at any depth: what one points at another variable
/// may reach).
fn refinable(program: &Program, unit: &Unit, v: SymbolId) -> bool {
    let s = unit.symbol(v);
    s.ty.base == BaseType::Derived
        && matches!(s.storage, Storage::Dummy(_) | Storage::Local)
        && !s.attrs.pointer
        && !s.attrs.target
        && !s.attrs.save
        && !s.attrs.initialized
        && !unit.aliases.iter().any(|c| c.contains(&v))
        && !unit.equivalences.iter().any(|c| c.contains(&v))
        && program.type_of(unit, &s.ty).is_some()
        && !dfort_ir::queries::type_has_pointer_components(program, unit, &s.ty)
}

/// Whether unit `u` is passed as an actual argument anywhere (a callee
/// may call it through its dummy procedure, a call site the call graph
/// does not list).
fn passed_as_procedure(program: &Program, u: UnitId) -> bool {
    let name = &program.unit(u).name;
    program.units.iter().any(|unit| {
        unit.stmts.iter().any(|st| {
            let mut passed = false;
            for e in st.kind.exprs() {
                e.walk(&mut |x| {
                    if let ExprKind::Var(v) = x.kind {
                        let s = unit.symbol(v);
                        passed |= s.storage == Storage::Procedure && s.name == *name;
                    }
                });
            }
            passed
        })
    })
}

/// The paths record `r` writes when every write of its variable at its
/// statement is a component reference of a refinable variable.
fn component_writes(program: &Program, unit: &Unit, r: &Record) -> Option<Vec<Path>> {
    if !refinable(program, unit, r.variable) {
        return None;
    }
    let st = unit.stmt(r.stmt);
    let written = crate::tbr::written_references(st, r.variable);
    let paths: Vec<Path> = written
        .iter()
        .map(|e| reference_path(e).map(|(_, p)| p))
        .collect::<Option<_>>()?;
    (!paths.is_empty() && paths.iter().all(|p| !p.is_empty())).then_some(paths)
}

/// The variable and component path of a data reference (`v`, `v(i)`,
/// `v%a(j)%b`).
fn reference_path(e: &Expr) -> Option<(SymbolId, Path)> {
    let (s, _) = dfort_ir::dp::target(e)?;
    Some((s, owned(&dfort_ir::accumulation::path(e))))
}

fn owned(p: &[&str]) -> Path {
    p.iter().map(|n| n.to_string()).collect()
}

/// Every data reference in `x` whose value is read (a reference's
/// subscripts are references too).
fn references(x: &Expr, out: &mut dyn FnMut(SymbolId, Path)) {
    let mut read = Vec::new();
    dfort_ir::accumulation::references(x, &mut read);
    for (s, p) in read {
        out(s, owned(&p));
    }
}

/// The references in the subscripts of a data reference, at every level.
fn subscripts(x: &Expr, out: &mut dyn FnMut(SymbolId, Path)) {
    match &x.kind {
        ExprKind::ArrayRef { .. } => {
            for c in x.children() {
                references(c, out);
            }
        }
        ExprKind::Component { base, .. } => {
            for c in x.children().into_iter().skip(1) {
                references(c, out);
            }
            subscripts(base, out);
        }
        _ => {}
    }
}

fn overlap(a: &Path, b: &Path) -> bool {
    fn names(p: &Path) -> Vec<&str> {
        p.iter().map(String::as_str).collect()
    }
    !dfort_ir::accumulation::disjoint(&names(a), &names(b))
}

/// `In` of one unit: per statement of its basic blocks, the paths
/// required before it.
type Inflow = HashMap<StmtId, Paths>;

struct Refiner<'a> {
    program: &'a Program,
    pa: &'a ProgramActivity,
    results: &'a ChunkVec<UnitId, Option<Arc<Tbr>>>,
    summaries: HashMap<UnitId, Option<Arc<Summary>>>,
    inflow: HashMap<UnitId, Option<Arc<Inflow>>>,
    /// Units whose summary or inflow is being worked out (a cycle gives
    /// up: everything).
    visiting: BTreeSet<(bool, UnitId)>,
}

impl Refiner<'_> {
    /// `Reads(st, v)` for every refinable `v` (module comment).
    fn reads(&mut self, u: UnitId, st: &Stmt) -> Paths {
        let program = self.program;
        let unit = program.unit(u);
        let (Some(t), Some(act)) = (self.results[u].as_ref(), self.pa.activity[u].as_ref()) else {
            return Paths::new();
        };
        let Some(needs) = t.needs.get(st.id) else {
            return Paths::new();
        };
        let needed: Vec<SymbolId> = needs
            .iter()
            .filter(|&v| v < unit.symbols.len())
            .map(SymbolId::new)
            .filter(|&v| refinable(program, unit, v))
            .collect();
        if needed.is_empty() {
            return Paths::new();
        }
        let mut found = Paths::new();
        let mut everything = false;
        let mut add = |s: SymbolId, p: Path| {
            found.insert((s, p));
        };
        match &st.kind {
            StmtKind::Assign { lhs, rhs } => {
                let calls = !dfort_ir::queries::function_references(rhs).is_empty();
                if calls || crate::activity::moved(st).is_some() {
                    everything = true;
                } else {
                    crate::tbr::assignment_reads(unit, act, st, &mut |x, values| {
                        if values {
                            references(x, &mut add);
                        } else {
                            subscripts(x, &mut add);
                        }
                    });
                    subscripts(lhs, &mut add);
                }
            }
            StmtKind::Call {
                args,
                target: CallTarget::Unit(c),
                ..
            } => {
                let callee = program.unit(*c);
                if callee.parent == Some(u) {
                    // An internal procedure may read the host's variables.
                    everything = true;
                } else {
                    let summary = self.summary(*c);
                    for (pos, a) in args.iter().enumerate() {
                        let Some((w, q)) = reference_path(&a.value) else {
                            references(&a.value, &mut add);
                            continue;
                        };
                        subscripts(&a.value, &mut add);
                        let dummy = dfort_ir::queries::formal_index(callee, pos, a)
                            .and_then(|k| callee.args.get(k));
                        match (dummy, &summary) {
                            (Some(f), Some(s)) if s.contains_key(f) => {
                                for p in &s[f] {
                                    add(w, q.iter().chain(p).cloned().collect());
                                }
                            }
                            _ => add(w, q),
                        }
                    }
                }
            }
            _ => {
                for e in st.kind.exprs() {
                    references(e, &mut add);
                }
            }
        }
        let mut out = Paths::new();
        for v in needed {
            let mine: Vec<&(SymbolId, Path)> = found.iter().filter(|(s, _)| *s == v).collect();
            if everything || mine.is_empty() {
                out.insert((v, Vec::new()));
            } else {
                out.extend(mine.into_iter().cloned());
            }
        }
        out
    }

    /// The paths the statements of unit `c` read of its refinable
    /// dummies; `None`: unknown (all of every dummy).
    fn summary(&mut self, c: UnitId) -> Option<Arc<Summary>> {
        if let Some(s) = self.summaries.get(&c) {
            return s.clone();
        }
        let program = self.program;
        let recursive = program.call_graph.recursive.get(c).copied().unwrap_or(true);
        let s = if recursive || self.results[c].is_none() || !self.visiting.insert((true, c)) {
            None
        } else {
            let unit = program.unit(c);
            let mut s: Summary = unit
                .args
                .iter()
                .filter(|&&f| refinable(program, unit, f))
                .map(|&f| (f, BTreeSet::new()))
                .collect();
            for st in unit.stmts.iter() {
                for (v, p) in self.reads(c, st) {
                    if let Some(paths) = s.get_mut(&v) {
                        paths.insert(p);
                    }
                }
            }
            self.visiting.remove(&(true, c));
            Some(Arc::new(s))
        };
        self.summaries.insert(c, s.clone());
        s
    }

    /// The paths required of each refinable dummy of `u` when it is
    /// called; `None` for a dummy: all of it.
    fn context(&mut self, u: UnitId) -> HashMap<SymbolId, Option<BTreeSet<Path>>> {
        let program = self.program;
        let unit = program.unit(u);
        let dummies: Vec<SymbolId> = unit
            .args
            .iter()
            .copied()
            .filter(|&f| refinable(program, unit, f))
            .collect();
        let mut out: HashMap<SymbolId, Option<BTreeSet<Path>>> = dummies
            .iter()
            .map(|&f| (f, Some(BTreeSet::new())))
            .collect();
        let everything = |out: &mut HashMap<SymbolId, Option<BTreeSet<Path>>>| {
            for v in out.values_mut() {
                *v = None;
            }
        };
        if dummies.is_empty() {
            return out;
        }
        if program.call_graph.recursive.get(u).copied().unwrap_or(true)
            || passed_as_procedure(program, u)
        {
            everything(&mut out);
            return out;
        }
        let mut callers = 0;
        for &k in program.call_graph.calls_to[u].iter() {
            let site = &program.call_graph.sites[k];
            let c = site.caller;
            let Some(t) = self.results[c].as_ref().cloned() else {
                continue;
            };
            callers += 1;
            let caller = program.unit(c);
            let st = caller.stmt(site.stmt);
            let (StmtKind::Call { args, .. }, false) = (&st.kind, site.function) else {
                everything(&mut out);
                return out;
            };
            let inflow = self.inflow(c);
            let Some(before) = inflow.as_ref().and_then(|f| f.get(&site.stmt)) else {
                everything(&mut out);
                return out;
            };
            // What the call's expression actuals read after it, as in
            // TBR's calling contexts.
            let mut after = before.clone();
            for a in args.iter().filter(|a| reference_path(&a.value).is_none()) {
                references(&a.value, &mut |s, p| {
                    after.insert((s, p));
                });
            }
            for (pos, a) in args.iter().enumerate() {
                let Some(f) = dfort_ir::queries::formal_index(unit, pos, a)
                    .and_then(|k| unit.args.get(k))
                    .filter(|f| out.contains_key(f))
                else {
                    continue;
                };
                let bound =
                    reference_path(&a.value).filter(|(w, _)| refinable(program, caller, *w));
                let split_passive =
                    t.split.contains(&site.stmt) && !dfort_ir::dp::differentiable(unit, *f);
                let entry = out.get_mut(f).expect("a refinable dummy");
                let (Some((w, q)), false, Some(paths)) = (bound, split_passive, entry.as_mut())
                else {
                    *entry = None;
                    continue;
                };
                for (s, r) in &after {
                    if *s != w {
                        continue;
                    }
                    if r.len() <= q.len() && overlap(r, &q) {
                        paths.insert(Vec::new());
                    } else if overlap(r, &q) {
                        paths.insert(r[q.len()..].to_vec());
                    }
                }
            }
        }
        if callers == 0 {
            everything(&mut out);
        }
        out
    }

    /// `In` of unit `u` at each statement of its basic blocks (`None`
    /// when a cycle of calling contexts gave up).
    fn inflow(&mut self, u: UnitId) -> Option<Arc<Inflow>> {
        if let Some(f) = self.inflow.get(&u) {
            return f.clone();
        }
        if !self.visiting.insert((false, u)) {
            return None;
        }
        let unit = self.program.unit(u);
        let context = self.context(u);
        // Slots for the (variable, path) pairs met.
        let mut slots: Vec<(SymbolId, Path)> = Vec::new();
        let mut index: HashMap<(SymbolId, Path), usize> = HashMap::new();
        let mut slot = |k: (SymbolId, Path)| -> usize {
            *index.entry(k.clone()).or_insert_with(|| {
                slots.push(k);
                slots.len() - 1
            })
        };
        let mut entry = BitSet::default();
        for (f, paths) in &context {
            match paths {
                Some(ps) => {
                    for p in ps {
                        entry.insert(slot((*f, p.clone())));
                    }
                }
                None => {
                    entry.insert(slot((*f, Vec::new())));
                }
            }
        }
        let mut gen: HashMap<StmtId, BitSet> = HashMap::new();
        for st in unit.stmts.iter() {
            let reads = self.reads(u, st);
            if !reads.is_empty() {
                gen.insert(st.id, reads.into_iter().map(&mut slot).collect());
            }
        }
        let cfg = &unit.cfg;
        let sol = solve(cfg, Direction::Forward, &entry, |node, input| {
            let nd = cfg.node(node);
            let mut s = input.clone();
            if matches!(nd.kind, NodeKind::BasicBlock | NodeKind::Loop) {
                for id in &nd.stmts {
                    if let Some(g) = gen.get(id) {
                        s.union_with(g);
                    }
                }
            }
            s
        });
        let mut inflow = Inflow::new();
        for (i, node) in cfg.nodes.iter_enumerated() {
            if node.kind != NodeKind::BasicBlock {
                continue;
            }
            let mut s = sol.before[i].clone();
            for id in &node.stmts {
                inflow.insert(*id, s.iter().map(|k| slots[k].clone()).collect());
                if let Some(g) = gen.get(id) {
                    s.union_with(g);
                }
            }
        }
        self.visiting.remove(&(false, u));
        let f = Some(Arc::new(inflow));
        self.inflow.insert(u, f.clone());
        f
    }
}

#[cfg(test)]
mod tests {
    use crate::test_support::{program, request};

    /// Per unit of `src` (root `fly`, `x` in, `e` out): the lines whose
    /// statements record, with the variable, in statement order.
    fn records(src: &str) -> Vec<(String, usize, String)> {
        let p = program(src);
        let facts = crate::facts::analyse(&p, &request("fly", &["x"], &["e"]), None);
        let mut out = Vec::new();
        for u in p.units.iter() {
            let Some(t) = facts.tbr_of(u.id) else {
                continue;
            };
            for r in &t.records {
                let line = src[..u.stmt(r.stmt).span.range.start as usize]
                    .matches('\n')
                    .count()
                    + 1;
                out.push((u.name.clone(), line, u.symbol(r.variable).name.clone()));
            }
        }
        out
    }

    /// A particle moved in a time loop by a module procedure: only the
    /// velocity's overwrite is read back (by the next step's adjoint);
    /// the position's are read by the energy, after the loop.
    const KICK: &str = "module m
  type vec
    real(8) :: x, y
  end type
  type part
    type(vec) :: pos, vel
  end type
contains
  subroutine kick(p, dt)
    type(part), intent(inout) :: p
    real(8), intent(in) :: dt
    p%vel%y = p%vel%y - dt*p%vel%y**2
    p%pos%x = p%pos%x + dt*p%vel%x
    p%pos%y = p%pos%y + dt*p%vel%y
  end subroutine
end module
subroutine fly(x, e)
  use m
  real(8), intent(in) :: x
  real(8), intent(out) :: e
  type(part) :: q
  integer :: k
  q%pos%x = x
  q%pos%y = 2*x
  q%vel%x = x
  q%vel%y = x
  do k = 1, 3
    call kick(q, 0.1d0)
  end do
  e = sin(q%pos%x)*q%pos%y
end subroutine
";

    #[test]
    fn a_component_no_adjoint_reads_is_not_recorded() {
        assert_eq!(records(KICK), [("kick".into(), 12, "p".into())]);
    }

    #[test]
    fn a_component_the_caller_reads_before_the_call_is_recorded() {
        // The caller reads `q%pos%x` nonlinearly before each call: the
        // callee's overwrite of it must be recorded, not its `pos%y`.
        let src = KICK.replace(
            "    call kick(q, 0.1d0)\n",
            "    q%vel%x = q%vel%x + sin(q%pos%x)\n    call kick(q, 0.1d0)\n",
        );
        assert_eq!(
            records(&src),
            [
                ("kick".into(), 12, "p".into()),
                ("kick".into(), 13, "p".into())
            ]
        );
    }

    #[test]
    fn a_type_with_a_pointer_component_keeps_every_record() {
        // What `p%nx` points at another variable may reach.
        let src = KICK.replace(
            "    type(vec) :: pos, vel\n",
            "    type(vec) :: pos, vel\n    type(part), pointer :: nx => null()\n",
        );
        let recs = records(&src);
        assert_eq!(recs.iter().filter(|r| r.0 == "kick").count(), 3, "{recs:?}");
    }

    #[test]
    fn a_whole_value_read_keeps_every_record() {
        // A call of an external routine on the whole value may read
        // every component of it.
        let src = KICK.replace(
            "    call kick(q, 0.1d0)\n",
            "    call kick(q, 0.1d0)\n    call ext(q)\n",
        );
        let recs = records(&src);
        assert!(
            recs.iter().filter(|r| r.0 == "kick").count() == 3,
            "{recs:?}"
        );
    }
}
