//! What each procedure may read and write of its interface — its formal
//! arguments (by position) and the globals it or its callees touch
//! (COMMON members, module and host variables, SAVE'd locals, of any
//! type; not its own variables, which its internal procedures see by host
//! association but which end with the call) — for the
//! snapshots a checkpointed call needs (Tapenade's joint mode): the
//! adjoint of a call re-runs the callee from the values it read at entry,
//! so the caller saves those before the call and restores them before the
//! callee's adjoint.
//!
//! Contract: syntactic and conservative (a variable that occurs anywhere
//! but as a whole assignment target is read; every assignment target,
//! DO index, READ item and modifiable actual is written), bottom-up over
//! the call graph with a fixpoint inside recursive components. Calls to
//! procedures without source read every actual and write every variable
//! actual, but for the library subroutines known to change none
//! ([`dfort_ir::intrinsics::reads_arguments_only`]: `flush`, `abort`, …).

use crate::dep::{global_key, GlobalKey};
use crate::incremental::Changes;
use dfort_ir::bitset::BitSet;
use dfort_ir::dp::{index_vars, target, vars};
use dfort_ir::queries::formal_index;
use dfort_ir::*;
use std::collections::BTreeSet;

/// One procedure's interface effects, shared between analyses (a clone
/// is a reference count).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Effects(std::sync::Arc<EffectSets>);

impl std::ops::Deref for Effects {
    type Target = EffectSets;
    fn deref(&self) -> &EffectSets {
        &self.0
    }
}

/// What a procedure may read and write of its interface.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EffectSets {
    pub read_formals: BTreeSet<u32>,
    pub written_formals: BTreeSet<u32>,
    pub read_globals: BTreeSet<GlobalKey>,
    pub written_globals: BTreeSet<GlobalKey>,
}

impl EffectSets {
    /// Whether the procedure may change one of its arguments or a global
    /// (a function with side effects: the adjoint runs a reference to one
    /// like a CALL, saving around it what it overwrites that the reverse
    /// sweep needs).
    pub fn changes_state(&self) -> bool {
        !self.written_formals.is_empty() || !self.written_globals.is_empty()
    }
}

/// A unit's own variables that it may read and write, its calls included.
#[derive(Clone, Debug, Default)]
pub struct LocalEffects {
    pub reads: BitSet,
    pub writes: BitSet,
}

/// The effects of every unit of a program, by unit.
pub type ProgramEffects = dfort_ir::chunk_vec::ChunkVec<UnitId, Effects>;

/// The effects of every unit of the program.
pub fn all(program: &Program) -> ProgramEffects {
    all_with(program, None)
}

/// [`all`], reusing the previous run's effects of every call-graph
/// component whose units did not change ([`Changes`]) and whose callees'
/// effects are the same as before; the result equals a run from scratch.
pub fn all_with(
    program: &Program,
    previous: Option<(&ProgramEffects, &Changes)>,
) -> ProgramEffects {
    let n = program.units.len();
    let previous = previous.filter(|(p, c)| p.len() == n && c.body.len() == n);
    // A rerun starts from the previous effects and writes only the
    // components it recomputes.
    let mut out: ProgramEffects = match previous {
        Some((prev, _)) => prev.clone(),
        None => ProgramEffects::from_elem(Effects::default(), n),
    };
    // Per unit: whether a callee's effects differ from the previous
    // run's (marked as the components are solved, callees first; those
    // inside a component are marked after it).
    let mut callee_differs: IdVec<UnitId, bool> = IdVec::from_elem(false, n);
    for scc in program.call_graph.sccs.iter() {
        if let Some((_, changes)) = previous {
            let unchanged = scc.iter().all(|&u| !changes.body[u] && !callee_differs[u]);
            if unchanged {
                continue;
            }
            // Solved again from nothing, as in a first run.
            for &u in scc {
                out[u] = Effects::default();
            }
        }
        for _round in 0..64 {
            let mut changed = false;
            for &u in scc {
                let unit = program.unit(u);
                let local = local(program, unit, &out);
                let mut e = EffectSets::default();
                for (i, sym) in unit.symbols.iter_enumerated() {
                    let (r, w) = (local.reads.contains_id(i), local.writes.contains_id(i));
                    if let Storage::Dummy(k) = sym.storage {
                        if r {
                            e.read_formals.insert(k);
                        }
                        if w {
                            e.written_formals.insert(k);
                        }
                    } else if let Some(key) =
                        global_key(program, unit, i).filter(outlives(program, u))
                    {
                        if r {
                            e.read_globals.insert(key.clone());
                        }
                        if w {
                            e.written_globals.insert(key);
                        }
                    }
                }
                // Globals only callees see.
                for c in callees(program, unit) {
                    let ce = out[c].clone();
                    let outside = outlives(program, u);
                    e.read_globals
                        .extend(ce.read_globals.iter().filter(|k| outside(k)).cloned());
                    e.written_globals
                        .extend(ce.written_globals.iter().filter(|k| outside(k)).cloned());
                }
                if *out[u].0 != e {
                    out[u] = Effects(std::sync::Arc::new(e));
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        if let Some((prev, _)) = previous {
            for &u in scc {
                if prev[u] != out[u] {
                    crate::incremental::mark_callers(program, u, &mut callee_differs);
                }
            }
        }
    }
    out
}

/// Whether a global of `u` or its callees is one for `u`'s callers: not
/// one of `u`'s own variables that its internal procedures see by host
/// association (they end with the call, and its dummies are formals), but
/// its SAVE'd locals, which outlive it.
fn outlives(program: &Program, u: UnitId) -> impl Fn(&GlobalKey) -> bool + '_ {
    move |k| match k {
        GlobalKey::Shared { unit, symbol } if *unit == u => {
            dfort_ir::queries::saved_local(program.unit(u), *symbol)
        }
        _ => true,
    }
}

fn callees(program: &Program, unit: &Unit) -> Vec<UnitId> {
    program.call_graph.calls_from[unit.id]
        .iter()
        .filter_map(|&s| match &program.call_graph.sites[s].callee {
            dfort_ir::callgraph::Callee::Unit(c) => Some(*c),
            _ => None,
        })
        .collect()
}

/// Applies a call's effects (`callee(args)`) to `unit`'s variables.
pub fn apply_call(
    program: &Program,
    unit: &Unit,
    (name, target): (&str, &CallTarget),
    args: &[Arg],
    effects: &ProgramEffects,
    out: &mut LocalEffects,
) {
    let read_only_library =
        *target == CallTarget::External && dfort_ir::intrinsics::reads_arguments_only(name);
    let callee = match target {
        CallTarget::Unit(c) => Some((program.unit(*c), &effects[*c])),
        _ => None,
    };
    for (pos, a) in args.iter().enumerate() {
        let (read, written) = match callee {
            Some((c, e)) => match formal_index(c, pos, a) {
                Some(k) => (
                    e.read_formals.contains(&(k as u32)),
                    e.written_formals.contains(&(k as u32)),
                ),
                None => (true, true),
            },
            None if read_only_library => (true, false),
            None => (true, true),
        };
        let t = target_of(&a.value);
        if read || t.is_none() {
            vars(unit, &a.value, &mut out.reads);
        } else {
            index_vars(unit, &a.value, &mut out.reads);
        }
        if written {
            if let Some(s) = t {
                out.writes.insert_id(s);
            }
        }
    }
    if let Some((_, e)) = callee {
        for i in unit.symbols.indices() {
            if let Some(k) = global_key(program, unit, i) {
                if e.read_globals.contains(&k) {
                    out.reads.insert_id(i);
                }
                if e.written_globals.contains(&k) {
                    out.writes.insert_id(i);
                }
            }
        }
    }
}

fn target_of(e: &Expr) -> Option<SymbolId> {
    match &e.kind {
        ExprKind::Var(_) | ExprKind::ArrayRef { .. } => target(e).map(|(s, _)| s),
        _ => None,
    }
}

/// The variables of `unit` that it may read and write, calls included.
pub fn local(program: &Program, unit: &Unit, effects: &ProgramEffects) -> LocalEffects {
    let mut out = LocalEffects::default();
    for st in &unit.stmts {
        stmt_effects(program, unit, st, effects, &mut out);
    }
    out
}

/// What one statement (not the statements nested in it) may read and
/// write, calls included.
pub fn stmt_effects(
    program: &Program,
    unit: &Unit,
    st: &Stmt,
    effects: &ProgramEffects,
    out: &mut LocalEffects,
) {
    match &st.kind {
        StmtKind::Assign { lhs, rhs } => {
            read_expr(program, unit, rhs, effects, out);
            index_vars(unit, lhs, &mut out.reads);
            if let Some((t, _)) = target(lhs) {
                out.writes.insert_id(t);
            }
        }
        StmtKind::Call { name, target, args } => {
            apply_call(program, unit, (name, target), args, effects, out);
            for a in args {
                calls_inside(program, unit, &a.value, effects, out);
            }
        }
        StmtKind::Do { control, .. } => {
            if let DoControl::Counted { var, .. } = control {
                out.writes.insert_id(*var);
            }
            for e in st.kind.exprs() {
                read_expr(program, unit, e, effects, out);
            }
        }
        StmtKind::Io { reads, writes, .. } => {
            for e in reads {
                read_expr(program, unit, e, effects, out);
            }
            io_item_reads(unit, writes, &mut out.reads);
            for (t, _) in dfort_ir::dp::io_targets(writes) {
                out.writes.insert_id(t);
            }
        }
        _ => {
            for e in st.kind.exprs() {
                read_expr(program, unit, e, effects, out);
            }
        }
    }
    // Reading or writing one member of a may-alias class may read or
    // write any of them.
    crate::aliases::close(unit, &mut out.reads);
    crate::aliases::close(unit, &mut out.writes);
}

/// What defining the items of an I/O list reads: their subscripts, and
/// the bounds of implied DOs.
fn io_item_reads(unit: &Unit, items: &[Expr], reads: &mut BitSet) {
    for w in items {
        if let ExprKind::ImpliedDo { items, bounds, .. } = &w.kind {
            for b in bounds {
                vars(unit, b, reads);
            }
            io_item_reads(unit, items, reads);
        } else {
            index_vars(unit, w, reads);
        }
    }
}

/// Per statement (indexed by `StmtId`): the variables that statement or
/// any statement that may run after it writes — what a snapshot taken
/// just before the statement must protect. A backward fixpoint over the
/// CFG ([`crate::engine`]).
pub fn written_from(
    program: &Program,
    unit: &Unit,
    effects: &ProgramEffects,
) -> IdVec<StmtId, BitSet> {
    may_write(program, unit, effects, true)
}

/// Per statement (indexed by `StmtId`): the variables any statement that
/// may run after it writes (itself only when control can come back to
/// it, in a loop).
pub fn written_after(
    program: &Program,
    unit: &Unit,
    effects: &ProgramEffects,
) -> IdVec<StmtId, BitSet> {
    may_write(program, unit, effects, false)
}

/// [`written_from`] (`from_itself`) or [`written_after`].
fn may_write(
    program: &Program,
    unit: &Unit,
    effects: &ProgramEffects,
    from_itself: bool,
) -> IdVec<StmtId, BitSet> {
    use crate::engine::{solve, Direction};
    use dfort_ir::cfg::NodeKind;
    let per: IdVec<StmtId, BitSet> = unit
        .stmts
        .iter()
        .map(|st| {
            let mut e = LocalEffects::default();
            stmt_effects(program, unit, st, effects, &mut e);
            e.writes
        })
        .collect();
    let cfg = &unit.cfg;
    let applies = |k: NodeKind| matches!(k, NodeKind::BasicBlock | NodeKind::Loop);
    let sol = solve(
        cfg,
        Direction::Backward,
        &BitSet::default(),
        |node, after| {
            let nd = cfg.node(node);
            let mut s = after.clone();
            if applies(nd.kind) {
                for &id in &nd.stmts {
                    s.union_with(&per[id]);
                }
            }
            s
        },
    );
    let mut out: IdVec<StmtId, BitSet> = IdVec::from_elem(BitSet::default(), unit.stmts.len());
    for (i, nd) in cfg.nodes.iter_enumerated() {
        if !applies(nd.kind) {
            continue;
        }
        let mut running = sol.after[i].clone();
        for &id in nd.stmts.iter().rev() {
            if from_itself {
                running.union_with(&per[id]);
                out[id] = running.clone();
            } else {
                out[id] = running.clone();
                running.union_with(&per[id]);
            }
        }
    }
    out
}

fn read_expr(
    program: &Program,
    unit: &Unit,
    e: &Expr,
    effects: &ProgramEffects,
    out: &mut LocalEffects,
) {
    vars(unit, e, &mut out.reads);
    calls_inside(program, unit, e, effects, out);
}

/// The effects of user functions referenced inside an expression.
fn calls_inside(
    program: &Program,
    unit: &Unit,
    e: &Expr,
    effects: &ProgramEffects,
    out: &mut LocalEffects,
) {
    e.walk(&mut |x| {
        if let ExprKind::FunctionCall { name, target, args } = &x.kind {
            if matches!(target, CallTarget::Unit(_)) {
                apply_call(program, unit, (name, target), args, effects, out);
            }
        }
    });
}
