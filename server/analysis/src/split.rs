//! Which calls run in split mode (paper 000 §5: a call is reversed either
//! in joint mode — the caller's forward sweep runs the original callee
//! and its reverse sweep the callee's whole adjoint, forward sweep again
//! and reverse sweep, from a snapshot — or in split mode: the caller's
//! forward sweep runs the callee's forward sweep `c_fwd`, which records
//! on the tape what the callee's reverse sweep needs, and the caller's
//! reverse sweep runs that reverse sweep `c_rev`). Split mode runs the
//! callee once less and needs no snapshot; its tape holds what one run of
//! the callee records until the caller's reverse sweep reaches the call.
//!
//! Contract: [`candidates`] gives the CALL statements of a unit that may
//! run split, from the program's structure alone: a call not inside a
//! loop (so what its forward sweep records is held once), in a unit
//! without jumps — or, for a recursive callee, any call (joint mode would
//! need the region the call touches, which [`crate::regions`] does not
//! bound through the recursion) — to a subroutine whose locals are
//! scalars the tape holds ([`callee_fits`]: they are carried from `c_fwd`
//! to `c_rev` on the tape), whose actuals read only the caller's own
//! locals and dummies outside the variables the call passes to formals
//! the callee may write (what `c_rev` is called with is then what `c_fwd`
//! was). A call inside counted DO loops ([`in_loops`], same conditions)
//! runs split when a first TBR pass without it shows split mode to cost
//! less ([`chosen`]: what it would require the caller requires there
//! already, and its callee records an order less than it computes, as a
//! matrix product that records one multiplier per column and step — or
//! it has no loop, sets values of rank 0 only, and records fewer values
//! split than its snapshot would save — or what it records is of the
//! order of the arrays its snapshot would save, which joint mode records
//! again after the snapshot ([`records_within_snapshot`]); paper 000 §5's trade of
//! recomputation against storage, per call);
//! [`crate::facts`] then runs TBR a second time with those calls split.
//! What a split call overwrites of the values its caller still
//! needs, integers included, the callee records itself (TBR's calling
//! context, [`crate::tbr`]; [`crate::checkpoint`] saves nothing around
//! it). TBR ([`crate::tbr`]) decides among these —
//! a callee with a summary that reaches no global — and records its
//! choice (`Tbr::split`), which the checkpoint, the generator and the
//! editor read; [`crate::facts`] gives the callees of split calls a
//! forward sweep that computes everything the original does (adjoint
//! liveness with the non-local values live at exit). Analysis only.

use crate::effects::{Effects, ProgramEffects};
use crate::shape::Shapes;
use dfort_ir::bitset::BitSet;
use dfort_ir::callgraph::Callee;
use dfort_ir::dp::{index_vars, is_variable, target, vars};
use dfort_ir::queries::formal_index;
use dfort_ir::*;
use std::collections::BTreeMap;

/// The CALL statements of a unit that may run split, each with the
/// positions (in the call's argument list) of the actuals whose variable
/// the callee reads — what its reverse routine may read of them.
pub type Splittable = BTreeMap<StmtId, BitSet>;

/// Per unit, its [`Splittable`] calls, shared: an analysis keeps an
/// unchanged unit's from the last one without copying them, and tells
/// them unchanged by pointer.
pub type SplitTable = dfort_ir::chunk_vec::ChunkVec<UnitId, std::sync::Arc<Splittable>>;

/// Whether unit `u` has the same split calls in `a` and `b`.
pub fn same_in(a: &SplitTable, b: &SplitTable, u: UnitId) -> bool {
    match (a.get(u), b.get(u)) {
        (Some(x), Some(y)) => std::sync::Arc::ptr_eq(x, y) || x == y,
        (x, y) => x.is_none() && y.is_none(),
    }
}

/// [`candidates`] of every unit of `program`.
pub fn of_program(program: &Program, effects: &ProgramEffects, shapes: &Shapes) -> SplitTable {
    of_program_with(program, effects, shapes, None)
}

/// The program and effects a previous run of [`of_program_with`] and
/// [`in_loops_of_program`] read, with the changes since.
pub struct Previous<'a> {
    pub program: &'a Program,
    pub effects: &'a ProgramEffects,
    pub changes: &'a crate::incremental::Changes,
}

/// Per unit: whether its split calls may differ from what `previous`
/// found. A unit's candidates and calls in loops read its own IR and, of
/// each callee, its IR (its locals and interface), its effects and
/// whether it is recursive: a unit is stale when it changed or calls a
/// unit that did.
pub fn stale(program: &Program, effects: &ProgramEffects, p: &Previous<'_>) -> IdVec<UnitId, bool> {
    let n = program.units.len();
    let changed = |c: UnitId| p.changes.body.get(c).copied().unwrap_or(true);
    let mut out: IdVec<UnitId, bool> = IdVec::from_fn(n, changed);
    let same_recursion = std::sync::Arc::ptr_eq(
        &p.program.call_graph.recursive,
        &program.call_graph.recursive,
    );
    for c in program.units.indices() {
        let differs = changed(c)
            || p.effects.get(c).is_none()
            || p.effects.get(c) != effects.get(c)
            || (!same_recursion
                && p.program.call_graph.recursive.get(c) != program.call_graph.recursive.get(c));
        if differs {
            crate::incremental::mark_callers(program, c, &mut out);
        }
    }
    out
}

/// [`of_program`], keeping the previous run's candidates (`previous`,
/// with [`stale`]'s answer) of each unit that is not stale. The result
/// equals a run from scratch.
pub fn of_program_with(
    program: &Program,
    effects: &ProgramEffects,
    shapes: &Shapes,
    previous: Option<(&SplitTable, &IdVec<UnitId, bool>)>,
) -> SplitTable {
    let find = |u: &Unit| std::sync::Arc::new(candidates(program, u, effects, &shapes.calls_of(u)));
    updated(program, previous, find)
}

/// The table of every unit's `find`, or the previous table with the
/// stale units' found again.
fn updated(
    program: &Program,
    previous: Option<(&SplitTable, &IdVec<UnitId, bool>)>,
    find: impl Fn(&Unit) -> std::sync::Arc<Splittable>,
) -> SplitTable {
    let n = program.units.len();
    // Units without such calls (most) share one empty set, which tells
    // them apart without reading it.
    let empty = std::sync::Arc::new(Splittable::new());
    let find = |u: &Unit| {
        let found = find(u);
        match found.is_empty() {
            true => empty.clone(),
            false => found,
        }
    };
    match previous.filter(|(p, s)| p.len() == n && s.len() == n) {
        Some((prev, stale)) => {
            let mut out = prev.clone();
            for u in program.units.indices().filter(|&u| stale[u]) {
                out[u] = find(program.unit(u));
            }
            out
        }
        None => program.units.iter().map(|u| find(u)).collect(),
    }
}

/// Where a unit's CALL statements are, as far as split mode cares: found
/// from the unit alone, once per unit and kept while it is unchanged (by
/// [`Shapes::calls_of`]), so that an edit elsewhere does not
/// walk every unit's statements again.
#[derive(Debug, Default)]
pub struct CallPlaces {
    /// In a structured unit: the CALL statements outside loops.
    outside_loops: Vec<StmtId>,
    /// In a structured unit: the CALLs of a unit inside counted DO loops
    /// ([`inside_counted_loops`]), none in a loop checkpointed with
    /// binomial-ckp.
    in_counted_loops: Vec<(StmtId, UnitId)>,
    /// Every CALL of a unit, none in a loop checkpointed with
    /// binomial-ckp, in statement order.
    to_units: Vec<(StmtId, UnitId)>,
}

impl CallPlaces {
    pub fn of(unit: &Unit) -> CallPlaces {
        let checkpointed = checkpointed(unit);
        let to_unit = |id: StmtId| match &unit.stmt(id).kind {
            StmtKind::Call {
                target: CallTarget::Unit(c),
                ..
            } if !checkpointed.contains(&id) => Some((id, *c)),
            _ => None,
        };
        let mut outside_loops = Vec::new();
        let mut inside = Vec::new();
        if unit.cfg.structured {
            self::outside_loops(unit, &unit.body, &mut outside_loops);
            inside_counted_loops(unit, &unit.body, false, &mut inside);
        }
        CallPlaces {
            outside_loops,
            in_counted_loops: inside.into_iter().filter_map(to_unit).collect(),
            to_units: unit.stmts.iter().filter_map(|st| to_unit(st.id)).collect(),
        }
    }
}

/// The CALL statements of `unit` that may run split (see the module's
/// contract), from its call places.
pub fn candidates(
    program: &Program,
    unit: &Unit,
    effects: &ProgramEffects,
    places: &CallPlaces,
) -> Splittable {
    let mut calls = places.outside_loops.clone();
    // A recursive callee runs split wherever it is called, in loops and
    // in units with jumps: its joint mode would need a snapshot of what
    // it touches, which dfort does not bound through the recursion
    // ([`crate::regions`]); its forward routine records what it
    // overwrites instead ([`crate::tbr`]'s calling context). Not inside a
    // loop checkpointed with binomial-ckp, whose steps run again from
    // snapshots (fuzzer, seed 2026, case 91: the adjoint never ended).
    for &(id, c) in &places.to_units {
        if is_recursive(program, program.unit(c)) && !calls.contains(&id) {
            calls.push(id);
        }
    }
    fitting(program, unit, effects, calls)
}

/// The statements of the loops checkpointed with binomial-ckp.
fn checkpointed(unit: &Unit) -> Vec<StmtId> {
    let mut out = Vec::new();
    for m in crate::binomial::marks(unit) {
        if let Some(id) = m.stmt {
            dfort_ir::queries::nested_statements(unit, &[id], &mut out);
        }
    }
    out
}

/// [`in_loops`] of every unit of `program`, keeping the previous run's
/// (`previous`, with [`stale`]'s answer) of each unit that is not stale.
pub fn in_loops_of_program(
    program: &Program,
    effects: &ProgramEffects,
    shapes: &Shapes,
    previous: Option<(&SplitTable, &IdVec<UnitId, bool>)>,
) -> SplitTable {
    let find = |u: &Unit| std::sync::Arc::new(in_loops(program, u, effects, &shapes.calls_of(u)));
    updated(program, previous, find)
}

/// The CALL statements of a structured `unit` inside counted DO loops
/// (IF and SELECT CASE arms walked into; not in a DO WHILE, a WHERE or a
/// loop checkpointed with binomial-ckp) to a callee that is not
/// recursive, which would fit split mode as [`candidates`]' do. Whether
/// they run split, [`chosen`] decides from a first TBR pass.
pub fn in_loops(
    program: &Program,
    unit: &Unit,
    effects: &ProgramEffects,
    places: &CallPlaces,
) -> Splittable {
    let calls = places
        .in_counted_loops
        .iter()
        .filter(|(_, c)| !is_recursive(program, program.unit(*c)))
        .map(|(id, _)| *id)
        .collect();
    fitting(program, unit, effects, calls)
}

/// The CALL statements of `ids` inside a counted DO loop (`inside`), not
/// under a DO WHILE, a DO without control or a WHERE.
fn inside_counted_loops(unit: &Unit, ids: &[StmtId], inside: bool, out: &mut Vec<StmtId>) {
    for &id in ids {
        let Some(st) = unit.stmts.get(id) else {
            continue;
        };
        match &st.kind {
            StmtKind::Call { .. } if inside => out.push(id),
            StmtKind::If { .. } | StmtKind::SelectCase { .. } => {
                for b in st.kind.blocks() {
                    inside_counted_loops(unit, b, inside, out);
                }
            }
            StmtKind::Do {
                control: DoControl::Counted { .. },
                body,
                ..
            } => inside_counted_loops(unit, body, true, out),
            _ => {}
        }
    }
}

/// Of the calls in loops `in_loops` may run split (per unit), those the
/// first TBR pass `tbr` (run without them) shows to be cheaper split:
/// what split mode requires of the values after the call ([`required`])
/// the caller requires there already (so no statement records more, and
/// no callee is given more to record); the callee, analysed in the
/// calling context all its calls give it, has a loop and
/// records nothing inside as many loops as its deepest statement (what
/// its forward sweep leaves on the tape, once per call, is then an order
/// below what it computes, which joint mode runs twice), and calls no
/// procedure with an active variable (whose snapshots or records would
/// stay on the tape too). Split mode then runs the callee once, where
/// joint mode runs it again in the reverse sweep from a snapshot. Only
/// the units with a call chosen, in order (a table of every unit cost a
/// large workspace's edit 7%).
pub fn chosen(
    program: &Program,
    pa: &crate::interproc::ProgramActivity,
    tbr: &crate::tbr::ProgramTbr,
    in_loops: &SplitTable,
) -> Vec<(UnitId, Splittable)> {
    let mut cheap: BTreeMap<UnitId, bool> = BTreeMap::new();
    let mut is_cheap = |c: UnitId| {
        *cheap
            .entry(c)
            .or_insert_with(|| records_below_work(program, pa, tbr, c))
    };
    in_loops
        .iter_enumerated()
        // Most units: no call to choose for, no loop depths to find.
        .filter(|(_, calls)| !calls.is_empty())
        .filter_map(|(u, calls)| {
            let unit = program.unit(u);
            let depth = dfort_ir::queries::loop_depths(unit);
            let chosen = calls
                .iter()
                .filter(|(id, read)| match &unit.stmt(**id).kind {
                    StmtKind::Call {
                        args,
                        target: CallTarget::Unit(c),
                        ..
                    } => tbr.results[u].as_ref().is_some_and(|t| {
                        let at = depth.get(*id).copied().unwrap_or(0);
                        // Constants need no keeping; a scalar the unit
                        // sets no deeper in loops than the call costs a
                        // record per call at most.
                        // Of a callee without loops (which records a
                        // value per statement at most, whatever its
                        // caller requires after it), an array whose
                        // elements only are set, and no deeper, costs a
                        // record per element set.
                        // Of a callee with loops whose records are of
                        // the arrays joint mode's snapshot saves, and no
                        // more of them, likewise.
                        let loop_free = !dfort_ir::queries::may_loop(program.unit(*c));
                        let sc = split_call(program, tbr, unit, **id, read);
                        let within = !loop_free
                            && sc
                                .as_ref()
                                .is_some_and(|sc| records_within_snapshot(unit, sc));
                        let held = |s: SymbolId| {
                            !is_variable(unit, s)
                                || t.in_req[**id].contains_id(s)
                                || match unit.symbol(s).rank() {
                                    0 => set_no_deeper(unit, &depth, s, at),
                                    _ => {
                                        (loop_free || within)
                                            && elements_set_no_deeper(
                                                program, unit, &depth, s, at, **id,
                                            )
                                    }
                                }
                        };
                        let fits = required(unit, args, read).ids::<SymbolId>().all(held);
                        fits && match (loop_free, within) {
                            (true, _) => {
                                is_cheap(*c)
                                    && sc
                                        .as_ref()
                                        .is_some_and(|sc| fewer_records(program, unit, sc))
                            }
                            (false, true) => passive_callees(program, pa, *c),
                            (false, false) => is_cheap(*c),
                        }
                    }),
                    _ => false,
                })
                .map(|(id, read)| (*id, read.clone()))
                .collect::<Splittable>();
            (!chosen.is_empty()).then_some((u, chosen))
        })
        .collect()
}

/// Whether every statement of `unit` inside more than `at` loops
/// (`depth`) that may set scalar `s` — an assignment to it, a loop over
/// it, a CALL or READ naming it — is none.
fn set_no_deeper(unit: &Unit, depth: &BTreeMap<StmtId, usize>, s: SymbolId, at: usize) -> bool {
    unit.stmts
        .iter()
        .all(|st| depth.get(&st.id).is_none_or(|d| *d <= at) || !may_set(st, s))
}

/// Whether every statement of `unit` but `call` that may set array `s`
/// is an assignment of one of its elements (a value of rank 0) inside at
/// most `at` loops (`depth`), or outside the outermost loop holding the
/// call (it runs once for all the calls).
fn elements_set_no_deeper(
    program: &Program,
    unit: &Unit,
    depth: &BTreeMap<StmtId, usize>,
    s: SymbolId,
    at: usize,
    call: StmtId,
) -> bool {
    let mut nest = Vec::new();
    for &top in &unit.body {
        let mut inside = Vec::new();
        dfort_ir::queries::nested_statements(unit, &[top], &mut inside);
        if inside.contains(&call) {
            nest = inside;
            break;
        }
    }
    unit.stmts.iter().all(|st| {
        st.id == call
            || !may_set(st, s)
            || matches!(&st.kind, StmtKind::Assign { lhs, .. }
                if dfort_ir::queries::rank_of(program, unit, lhs) == 0
                    && (depth.get(&st.id).is_none_or(|d| *d <= at) || !nest.contains(&st.id)))
    })
}

/// For a call `sc` of `unit` to a callee without loops ([`SplitCall`]:
/// the actuals whose variable the callee reads): whether the
/// values split mode may record beyond what joint mode's callee records
/// — the callee's assignments to the formals of those actuals that its
/// TBR does not record (the caller requires those variables after a
/// split call) — are none, or fewer than what joint mode's snapshot may
/// save: the values of those actuals whose variable the caller sets in
/// another statement (a derived value counts its components; an array,
/// many). A tie stays joint: the snapshot may save less (only what the
/// callee's adjoint reads).
fn fewer_records(program: &Program, unit: &Unit, sc: &SplitCall) -> bool {
    let saved: usize = sc
        .reads
        .iter()
        .filter_map(|(_, actual, elsewhere)| elsewhere.map(|v| (actual, v)))
        .map(
            |(actual, v)| match dfort_ir::queries::rank_of(program, unit, actual) {
                0 => values_in(program, unit, &unit.symbol(v).ty, 0),
                _ => usize::MAX / 2,
            },
        )
        .fold(0, usize::saturating_add);
    let formals: BitSet = sc.reads.iter().map(|(f, _, _)| f.0 as usize).collect();
    let extra = sc
        .writes
        .iter()
        .filter(|(_, recorded, set)| !recorded && set.is_some_and(|v| formals.contains_id(v)))
        .count();
    extra == 0 || extra < saved
}

/// What split mode's cost tests read of a call: its callee; per actual
/// at a position in `read` bound to a formal, that formal, the actual,
/// and the actual's variable when the caller sets it in another
/// statement (joint mode's snapshot may then save it); and the callee's
/// statements its forward routine may record in split mode — those its
/// TBR (first pass) records and its assignments to those formals — each
/// with whether TBR records it and the variable it assigns.
struct SplitCall<'a> {
    callee: &'a Unit,
    reads: Vec<(SymbolId, &'a Expr, Option<SymbolId>)>,
    writes: Vec<(StmtId, bool, Option<SymbolId>)>,
}

fn split_call<'a>(
    program: &'a Program,
    tbr: &crate::tbr::ProgramTbr,
    unit: &'a Unit,
    call: StmtId,
    read: &BitSet,
) -> Option<SplitCall<'a>> {
    let StmtKind::Call {
        args,
        target: CallTarget::Unit(c),
        ..
    } = &unit.stmt(call).kind
    else {
        return None;
    };
    let t = tbr.results.get(*c)?.as_ref()?;
    let cu = program.unit(*c);
    let reads: Vec<_> = args
        .iter()
        .enumerate()
        .filter(|(pos, _)| read.contains(*pos))
        .filter_map(|(pos, a)| {
            let k = formal_index(cu, pos, a)?;
            let elsewhere = target(&a.value)
                .map(|(v, _)| v)
                .filter(|&v| unit.stmts.iter().any(|st| st.id != call && may_set(st, v)));
            Some((cu.args[k], &a.value, elsewhere))
        })
        .collect();
    let formals: BitSet = reads.iter().map(|(f, _, _)| f.0 as usize).collect();
    let recorded: BitSet = t.records.iter().map(|r| r.stmt.0 as usize).collect();
    let writes = cu
        .stmts
        .iter()
        .filter_map(|st| {
            let set = match &st.kind {
                StmtKind::Assign { lhs, .. } => target(lhs).map(|(v, _)| v),
                _ => None,
            };
            let by_tbr = recorded.contains(st.id.0 as usize);
            (by_tbr || set.is_some_and(|v| formals.contains_id(v))).then_some((st.id, by_tbr, set))
        })
        .collect();
    Some(SplitCall {
        callee: cu,
        reads,
        writes,
    })
}

/// How many values of intrinsic type a value of type `ty` holds (seen
/// from `unit`): one, or a derived type's components' (an array
/// component counted once; nesting followed a few levels).
fn values_in(program: &Program, unit: &Unit, ty: &Type, depth: usize) -> usize {
    match program.type_of(unit, ty) {
        Some((owner, def)) if depth < 8 => def
            .components
            .iter()
            .map(|comp| values_in(program, program.unit(owner), &comp.ty, depth + 1))
            .sum::<usize>()
            .max(1),
        _ => 1,
    }
}

/// Whether statement `st` may set variable `s`: an assignment to it, a
/// loop over it, a CALL or READ naming it.
fn may_set(st: &Stmt, s: SymbolId) -> bool {
    let names = |e: &Expr| {
        let mut found = false;
        e.walk(&mut |x| found |= matches!(x.kind, ExprKind::Var(v) if v == s));
        found
    };
    match &st.kind {
        StmtKind::Assign { lhs, .. } => target(lhs).is_some_and(|(t, _)| t == s),
        StmtKind::Do {
            control: DoControl::Counted { var, .. },
            ..
        } => *var == s,
        StmtKind::Call { args, .. } => args.iter().any(|a| names(&a.value)),
        StmtKind::Io { .. } => st.kind.exprs().into_iter().any(names),
        _ => false,
    }
}

/// What a call run split requires of the values after it, given the
/// positions `read` of the actuals whose variable the callee reads: the
/// variables of those actuals (its reverse routine reads what they hold
/// then), the subscripts of every actual, and the variables of the
/// actuals that are expressions.
pub fn required(unit: &Unit, args: &[Arg], read: &BitSet) -> BitSet {
    let mut req = BitSet::default();
    for (pos, a) in args.iter().enumerate() {
        match target(&a.value) {
            Some((t, _)) => {
                index_vars(unit, &a.value, &mut req);
                if read.contains(pos) {
                    req.insert_id(t);
                }
            }
            None => vars(unit, &a.value, &mut req),
        }
    }
    req
}

/// Whether every procedure callee `c` calls has no active variable, and
/// `c` has a loop and its TBR records nothing as deep in loops as its
/// deepest statement, or `c` has no loop and records only values of rank
/// 0 (one per statement run at most).
fn records_below_work(
    program: &Program,
    pa: &crate::interproc::ProgramActivity,
    tbr: &crate::tbr::ProgramTbr,
    c: UnitId,
) -> bool {
    let Some(Some(t)) = tbr.results.get(c) else {
        return false;
    };
    let unit = program.unit(c);
    let depth = dfort_ir::queries::loop_depths(unit);
    let work = depth.values().copied().max().unwrap_or(0);
    let recorded = t
        .records
        .iter()
        .map(|r| depth.get(&r.stmt).copied().unwrap_or(0))
        .max();
    passive_callees(program, pa, c)
        && match dfort_ir::queries::may_loop(unit) {
            true => work > 0 && recorded.is_none_or(|r| r < work),
            false => sets_scalars_only(program, unit),
        }
}

/// Whether every procedure unit `c` calls has no active variable.
fn passive_callees(program: &Program, pa: &crate::interproc::ProgramActivity, c: UnitId) -> bool {
    program.call_graph.calls_from[c].iter().all(|&site| {
        match &program.call_graph.sites[site].callee {
            Callee::Unit(d) => pa
                .activity
                .get(*d)
                .and_then(|a| a.as_ref())
                .is_none_or(|a| a.active_anywhere().is_empty()),
            _ => true,
        }
    })
}

/// For a call `sc` of `unit` to a callee with loops ([`SplitCall`]: the
/// actuals whose variable the callee reads): whether
/// what the callee's forward routine would record in split mode — its
/// TBR's records, and its assignments to the formals of those actuals
/// (split mode requires them after the call) — is all of elements of
/// whole arrays passed to those formals that the caller sets in another
/// statement (what joint mode's snapshot saves before every call), each
/// assignment inside no more of the callee's loops than the array has
/// dimensions. Split mode then keeps, per call, records of the order of
/// the snapshot it no longer takes, and runs the callee once less (joint
/// mode's reverse sweep makes the same records again).
fn records_within_snapshot(unit: &Unit, sc: &SplitCall) -> bool {
    let depth = dfort_ir::queries::loop_depths(sc.callee);
    let snapshotted: BTreeMap<SymbolId, usize> = sc
        .reads
        .iter()
        .filter_map(|(formal, actual, elsewhere)| match actual.kind {
            ExprKind::Var(v) if elsewhere.is_some() && unit.symbol(v).rank() > 0 => {
                Some((*formal, unit.symbol(v).rank()))
            }
            _ => None,
        })
        .collect();
    sc.writes.iter().all(|(id, _, set)| {
        set.and_then(|v| snapshotted.get(&v))
            .is_some_and(|rank| depth.get(id).copied().unwrap_or(0) <= *rank)
    })
}

/// Whether `unit` sets only values of rank 0, by assignments: whatever
/// its callers require after a call, its adjoint records at most one
/// value per statement it runs (in a unit without loops, a few), and
/// split mode runs it once instead of twice and keeps those values on
/// the tape instead of a snapshot of what it reads.
fn sets_scalars_only(program: &Program, unit: &Unit) -> bool {
    unit.stmts.iter().all(|st| match &st.kind {
        StmtKind::Assign { lhs, .. } => dfort_ir::queries::rank_of(program, unit, lhs) == 0,
        StmtKind::If { .. }
        | StmtKind::SelectCase { .. }
        | StmtKind::Return
        | StmtKind::Continue => true,
        _ => false,
    })
}

/// The calls `calls` of `unit` whose callee fits split mode and whose
/// actuals [`actuals_fit`], each with the positions of the actuals the
/// callee reads.
fn fitting(
    program: &Program,
    unit: &Unit,
    effects: &ProgramEffects,
    calls: Vec<StmtId>,
) -> Splittable {
    let mut out = Splittable::new();
    for id in calls {
        let StmtKind::Call {
            args,
            target: CallTarget::Unit(c),
            ..
        } = &unit.stmt(id).kind
        else {
            continue;
        };
        let cu = program.unit(*c);
        let Some(fx) = effects.get(*c) else {
            continue;
        };
        let fits = callee_fits(program, cu) && keeps_bounds_and_globals(cu, fx);
        let written = |pos: usize, a: &Arg| {
            formal_index(cu, pos, a).is_none_or(|k| fx.written_formals.contains(&(k as u32)))
        };
        if fits && actuals_fit(unit, args, written) {
            let read: BitSet = args
                .iter()
                .enumerate()
                .filter(|(pos, a)| {
                    formal_index(cu, *pos, a).is_none_or(|k| fx.read_formals.contains(&(k as u32)))
                })
                .map(|(pos, _)| pos)
                .collect();
            out.insert(id, read);
        }
    }
    out
}

/// The CALL statements of `ids` not inside a DO loop or a WHERE (IF and
/// SELECT CASE arms are walked into).
fn outside_loops(unit: &Unit, ids: &[StmtId], out: &mut Vec<StmtId>) {
    for &id in ids {
        let Some(st) = unit.stmts.get(id) else {
            continue;
        };
        match &st.kind {
            StmtKind::Call { .. } => out.push(id),
            StmtKind::If { .. } | StmtKind::SelectCase { .. } => {
                for b in st.kind.blocks() {
                    outside_loops(unit, b, out);
                }
            }
            _ => {}
        }
    }
}

/// Whether a subroutine can be split into a forward and a reverse
/// routine: an external subroutine (without an explicit interface) or a
/// module procedure (recursive or not), not elemental or hosting internal
/// procedures, no EQUIVALENCE, and whose locals are scalars of a type the
/// tape holds, neither SAVEd nor initialised, pointers, targets or
/// allocatable. A caller reads this of its callee (it changes with the
/// callee's interface, [`crate::incremental::same_interface`]).
pub fn callee_fits(program: &Program, c: &Unit) -> bool {
    let host_ok = match c.parent {
        None => !c.args.iter().any(|a| {
            let s = c.symbol(*a);
            s.dims.iter().any(|d| d.kind == DimKind::AssumedShape)
                || s.attrs.optional
                || s.attrs.allocatable
                || s.attrs.pointer
                || s.attrs.target
        }),
        Some(p) => program.unit(p).kind == UnitKind::Module,
    };
    host_ok
        && c.kind == UnitKind::Subroutine
        && !c.elemental
        && c.children.is_empty()
        && c.equivalences.is_empty()
        && c.aliases.is_empty()
        && c.symbols.indices().all(|s| local_fits(c, s))
}

/// Whether `c` (its callees included, `fx`) reaches no global — the
/// reverse routine would read what they hold when it runs, which the
/// caller may not name — and writes no dummy its declarations' bounds
/// read: the reverse routine declares its arrays with the values those
/// hold after the call.
fn keeps_bounds_and_globals(c: &Unit, fx: &Effects) -> bool {
    let mut bounds = BitSet::default();
    for sym in &c.symbols {
        for d in &sym.dims {
            for b in [&d.lower, &d.upper].into_iter().flatten() {
                vars(c, b, &mut bounds);
            }
        }
    }
    fx.read_globals.is_empty()
        && fx.written_globals.is_empty()
        && bounds.ids::<SymbolId>().all(|s| match c.symbol(s).storage {
            Storage::Dummy(k) => !fx.written_formals.contains(&k),
            _ => false,
        })
}

/// Whether `c` is recursive (declared so, or in a cycle of the call
/// graph).
fn is_recursive(program: &Program, c: &Unit) -> bool {
    c.recursive
        || program
            .call_graph
            .recursive
            .get(c.id)
            .copied()
            .unwrap_or(true)
}

/// Whether `s` of `c` is no local, or a local the tape carries as it is.
fn local_fits(c: &Unit, s: SymbolId) -> bool {
    let sym = c.symbol(s);
    if sym.storage != Storage::Local || !is_variable(c, s) {
        return true;
    }
    let a = &sym.attrs;
    let kind_ok = match sym.ty.base {
        BaseType::Real | BaseType::Complex => matches!(sym.ty.kind, None | Some(4) | Some(8)),
        BaseType::Integer => matches!(sym.ty.kind, None | Some(4) | Some(8)),
        BaseType::Logical => matches!(sym.ty.kind, None | Some(4)),
        _ => false,
    };
    sym.rank() == 0
        && kind_ok
        && !(a.save || a.initialized || a.pointer || a.target || a.allocatable)
}

/// Whether the actuals of a call read only the caller's locals and
/// dummies (no pointer, no member of a may-alias class), no procedure
/// with source, and no variable that one of them passes to a formal the
/// callee may write (`written`, by position: the callee could change it):
/// the reverse routine is then called with what the forward routine was.
fn actuals_fit(unit: &Unit, args: &[Arg], written: impl Fn(usize, &Arg) -> bool) -> bool {
    let mut passed = BitSet::default();
    let mut read = BitSet::default();
    let mut plain = true;
    for (pos, a) in args.iter().enumerate() {
        a.value.walk(&mut |x| {
            plain &= !matches!(
                x.kind,
                ExprKind::FunctionCall { .. } | ExprKind::Apply { .. } | ExprKind::Component { .. }
            )
        });
        match target(&a.value) {
            Some((t, _)) => {
                if written(pos, a) {
                    passed.insert_id(t);
                }
                index_vars(unit, &a.value, &mut read);
            }
            None => vars(unit, &a.value, &mut read),
        }
    }
    let aliased = |s: SymbolId| unit.aliases.iter().any(|c| c.contains(&s));
    let own = |s: SymbolId| {
        let sym = unit.symbol(s);
        matches!(sym.storage, Storage::Local | Storage::Dummy(_))
            && !sym.attrs.pointer
            && !aliased(s)
    };
    plain
        && !read.intersects(&passed)
        && passed.ids::<SymbolId>().all(own)
        && read.ids::<SymbolId>().all(own)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::program;

    fn split_calls(src: &str, unit: &str) -> Vec<String> {
        let p = program(src);
        let u = p.units.iter().find(|u| u.name == unit).unwrap();
        candidates(&p, u, &crate::effects::all(&p), &CallPlaces::of(u))
            .keys()
            .map(|&id| match &u.stmt(id).kind {
                StmtKind::Call { name, .. } => name.clone(),
                _ => String::new(),
            })
            .collect()
    }

    const CALLEES: &str = "
subroutine step(n, x)
  integer :: n, i
  real(8) :: x(n), t
  do i = 1, n
    t = x(i)
    x(i) = t * t
  end do
end subroutine
subroutine work(n, x)
  integer :: n, i
  real(8) :: x(n), w(4)
  do i = 1, n
    x(i) = sin(x(i))
  end do
end subroutine
subroutine shrink(n, x)
  integer :: n
  real(8) :: x(n)
  x(n) = 2.0d0 * x(n)
  n = n - 1
end subroutine
subroutine shared(x)
  real(8) :: x, g
  common /c/ g
  x = g * x
end subroutine
subroutine via(x)
  real(8) :: x
  call shared(x)
end subroutine
";

    #[test]
    fn top_level_calls_to_scalar_local_callees_split() {
        let src = format!(
            "subroutine top(n, x, k)
  integer :: n, k, j
  real(8) :: x(n)
  call step(n, x)
  if (n > 2) call step(n - 1, x(2))
  do j = 1, 2
    call step(n, x)
  end do
  call work(n, x)
  call step(k, x(k))
  call shrink(n, x)
  call via(x(1))
  k = 1
end subroutine
{CALLEES}"
        );
        // In the loop: joint; `work` has a local array; `call step(k,
        // x(k))` passes `k` and subscripts with it, but `step` only reads
        // it; `shrink` changes the bound of its array; `via` reaches a
        // COMMON variable through `shared`.
        assert_eq!(split_calls(&src, "top"), ["step", "step", "step"]);
        let changed = src.replace("call step(k, x(k))", "call shrink(k, x(k))");
        assert_eq!(split_calls(&changed, "top"), ["step", "step"]);
    }

    #[test]
    fn units_with_jumps_split_nothing() {
        let src = format!(
            "subroutine top(n, x)
  integer :: n
  real(8) :: x(n)
  if (n < 0) goto 10
  call step(n, x)
10 continue
end subroutine
{CALLEES}"
        );
        assert!(split_calls(&src, "top").is_empty());
    }

    #[test]
    fn recursive_callees_split_in_loops_and_units_with_jumps() {
        let src = "
recursive subroutine halves(n, x)
  integer :: n, h
  real(8) :: x(*)
  if (n < 2) goto 10
  h = n / 2
  call halves(h, x)
  call halves(n - h, x(h + 1))
  x(1) = x(1) * x(n)
10 continue
end subroutine
subroutine top(n, m, x)
  integer :: n, m, j
  real(8) :: x(n, m)
  do j = 1, m
    call halves(n, x(1, j))
  end do
end subroutine
";
        assert_eq!(split_calls(src, "top"), ["halves"]);
        assert_eq!(split_calls(src, "halves"), ["halves", "halves"]);
        // Not in a loop checkpointed with binomial-ckp.
        let marked = src.replace("  do j = 1, m\n", "  !$ad binomial-ckp(2)\n  do j = 1, m\n");
        assert!(marked.contains("binomial-ckp"));
        assert!(split_calls(&marked, "top").is_empty());
    }
}
#[cfg(test)]
mod in_loops {
    use crate::test_support::{program, request};

    /// The callees `top` calls in split mode, by name, after both passes.
    fn split_in_top(src: &str) -> Vec<String> {
        let p = program(src);
        let facts = crate::facts::analyse(&p, &request("top", &["a"], &["y"]), None);
        let top = p.units.iter().find(|u| u.name == "top").unwrap();
        let t = facts.tbr_of(top.id).unwrap();
        t.split
            .iter()
            .map(|id| match &top.stmt(*id).kind {
                dfort_ir::StmtKind::Call { name, .. } => name.clone(),
                _ => String::new(),
            })
            .collect()
    }

    const SRC: &str = include_str!("../../../tests/fixtures/kernels/split_in_loops.f90");

    #[test]
    fn a_product_in_a_loop_over_blocks_runs_split_a_squaring_does_not() {
        // `mm` records `t` two loops deep and computes three deep; `a` is
        // required across the loop by the panel step. `sc` records each
        // element it squares.
        assert_eq!(split_in_top(SRC), ["mm"]);
        // Its own adjoint reading `c` back: a record three loops deep.
        let deep = SRC.replace("c(i, j) + t * a(i, l)", "c(i, j) * c(i, j) + t * a(i, l)");
        assert!(deep.contains("c(i, j) * c(i, j)"));
        assert!(split_in_top(&deep).is_empty());
        // A linear panel step: nothing requires `a` across the loop, so
        // split mode would make every later write of `a` record.
        let linear = SRC.replace("a(i, j) = sin(a(i, j))", "a(i, j) = 2.0d0 * a(i, j)");
        assert!(linear.contains("2.0d0 * a(i, j)"));
        assert!(split_in_top(&linear).is_empty());
        // Not in a loop checkpointed with binomial-ckp.
        let marked = SRC.replace(
            "  do j = 1, n, nb\n",
            "  !$ad binomial-ckp(2)\n  do j = 1, n, nb\n",
        );
        assert!(marked.contains("binomial-ckp"));
        assert!(split_in_top(&marked).is_empty());
    }
}

#[cfg(test)]
mod linalg {
    use super::*;

    #[test]
    fn the_lu_driver_splits_its_factorisation_and_its_solve() {
        let p = crate::test_support::fixed_program(&[
            "tests/fixtures/linalg/xlapack.f",
            "tests/fixtures/linalg/xblas.f",
        ]);
        let u = p.units.iter().find(|u| u.name == "xgesv").unwrap();
        assert_eq!(
            candidates(&p, u, &crate::effects::all(&p), &CallPlaces::of(u)).len(),
            2
        );
    }
}
