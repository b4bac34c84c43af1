//! The checkpoint of a call (paper 000 §5: a call is a statement whose
//! Req and Kill are its callee's; in joint mode — Tapenade's default — the
//! caller runs the original callee in its forward sweep and the callee's
//! adjoint, which runs the callee's forward sweep again, in its reverse
//! sweep): what the caller's forward sweep pushes around one call so that
//! its reverse sweep finds the values it needs.
//!
//! * The caller's **records**: what the call may overwrite of the values
//!   the caller's adjoint needs after it (TBR's `in_req`), pushed before
//!   the call and popped after the callee's adjoint; a callee with a
//!   derivative routine restores its own differentiable overwrites from
//!   its calling context, so those are left to it, except the array
//!   formals it leaves to its callers ([`crate::left_to_callers`]).
//! * For a callee with a derivative routine, the **snapshot**: what the
//!   callee's adjoint reads (its decisions' `entry_needs`) among the
//!   values the call or anything after it may change, the indices of its
//!   actuals (not those of the loops the reverse sweep replays, which it
//!   sets itself) and what the call overwrites that the caller needs,
//!   pushed after the records and popped just before the callee's adjoint
//!   runs, less what a later call's snapshot restores before this
//!   adjoint runs ([`crate::restored_later`]); then the module variables the unit does not declare that the
//!   callee reads and the unit may change, or that the call overwrites
//!   and the unit's adjoint or its calling context needs after it
//!   ([`Tbr::requires_undeclared`]), brought in by the generator under
//!   names of its own.
//!
//! Subscripts are pushed after what they subscript, so that they pop
//! first ([`subscript_rank`]). What the tape cannot hold ([`tape_limit`])
//! and a global the callee reads that the unit cannot name are returned
//! as [`Problem`]s, which the generator turns into refusals.
//!
//! Contract: [`of_call`] is the one place this is decided. The analyses'
//! entry point ([`crate::facts`]) runs it on every CALL statement of every
//! unit ([`of_unit`], stored in `UnitDecisions::calls`; CALL arguments are
//! never hoisted, so these are the calls the generator writes); the
//! adjoint generator runs the same function on the function references it
//! hoists out of active assignments into temporaries the analyses do not
//! see. Which callees get a derivative routine is the analyses'
//! ([`crate::derivatives`]); the checkpoint records what it took, so that
//! a generator writing the derivatives of one root among several can tell
//! when its own set differs. Analysis only: no I/O, no panics on user
//! input.

use crate::dep::{global_key, GlobalKey};
use crate::effects::{Effects, ProgramEffects};
use crate::reversal::UnitReversal;
use crate::tbr::Tbr;
use dfort_ir::bitset::BitSet;
use dfort_ir::dp::{differentiable, index_vars, is_variable};
use dfort_ir::dump::expr as print;
use dfort_ir::queries::common_layout;
use dfort_ir::queries::formal_index;
use dfort_ir::runtime::{reference_tape_limit, tape_limit, TapeLimit};
use dfort_ir::*;
use std::collections::{BTreeMap, BTreeSet};

/// Why a reference is saved around a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Why {
    /// The call may overwrite a value the caller's adjoint needs after it.
    AroundCall,
    /// The callee's adjoint reads it, and the call or something after it
    /// may change it.
    Snapshot,
    /// An index variable of an actual argument, which the callee's adjoint
    /// call subscripts with.
    Index,
}

/// One reference the forward sweep pushes around a call.
#[derive(Clone, Debug)]
pub struct Saved {
    pub variable: SymbolId,
    /// The whole variable, else the element or section `reference`.
    pub whole: bool,
    /// What is pushed: the variable, or the actual's element or section;
    /// with a `region`, the actual the callee's formal starts at.
    pub reference: Expr,
    pub why: Why,
    /// The part of the array the callee can touch through its formal
    /// ([`crate::regions`]), seen from `reference` with the formal's
    /// shape: saved instead of the whole array.
    pub region: Option<SavedRegion>,
    /// Why the whole array is saved when no region was found for it.
    pub unbounded: Option<String>,
}

/// A region of an array seen through a callee's formal: `reference` taken
/// as the first element of an array of the formal's rank, with leading
/// extents `extents` and lower bounds 1, of which the section
/// `first:last:step` of each dimension is saved.
#[derive(Clone, Debug)]
pub struct SavedRegion {
    pub extents: Vec<Expr>,
    pub dims: Vec<(Expr, Expr, Expr)>,
    /// How many elements from `reference` on the callee can reach:
    /// elements of the sections past it are left out.
    pub cap: Expr,
}

impl SavedRegion {
    /// The variables its extents and sections read.
    pub fn vars(&self, unit: &Unit, out: &mut BitSet) {
        for e in self
            .extents
            .iter()
            .chain(self.dims.iter().flat_map(|(a, b, s)| [a, b, s]))
            .chain([&self.cap])
        {
            dfort_ir::dp::value_vars(unit, e, out);
        }
    }

    /// This region where `cond` holds at the call, else `other`: each
    /// bound that differs chosen at run time (`merge(1, k, k == 0)`);
    /// `None` when their shapes differ, or they are the same.
    pub fn or(&self, other: &SavedRegion, cond: &Expr, unit: &Unit) -> Option<SavedRegion> {
        let same = |a: &Expr, b: &Expr| print(unit, a) == print(unit, b);
        if self.dims.len() != other.dims.len()
            || self.extents.len() != other.extents.len()
            || self
                .extents
                .iter()
                .zip(&other.extents)
                .any(|(a, b)| !same(a, b))
        {
            return None;
        }
        let pick = |a: &Expr, b: &Expr| match same(a, b) {
            true => a.clone(),
            false => intrinsic("merge", vec![a.clone(), b.clone(), cond.clone()], a.span),
        };
        let dims: Vec<(Expr, Expr, Expr)> = self
            .dims
            .iter()
            .zip(&other.dims)
            .map(|((a, b, s), (x, y, t))| (pick(a, x), pick(b, y), pick(s, t)))
            .collect();
        let differ = self
            .dims
            .iter()
            .zip(&other.dims)
            .any(|((a, b, s), (x, y, t))| !same(a, x) || !same(b, y) || !same(s, t));
        differ.then(|| SavedRegion {
            extents: self.extents.clone(),
            dims,
            cap: pick(&self.cap, &other.cap),
        })
    }

    /// Its sections as `[1:m, 1:n]`, seen from the element it starts at.
    pub fn sections(&self, unit: &Unit) -> String {
        let dims: Vec<String> = self
            .dims
            .iter()
            .map(|(a, b, s)| {
                let step = print(unit, s);
                match step.as_str() {
                    "1" => format!("{}:{}", print(unit, a), print(unit, b)),
                    _ => format!("{}:{}:{step}", print(unit, a), print(unit, b)),
                }
            })
            .collect();
        format!("[{}]", dims.join(", "))
    }

    /// Its extents and sections as the runtime's arguments, printed.
    pub fn runtime_args(&self, unit: &Unit) -> Vec<String> {
        let mut args: Vec<String> = self.extents.iter().map(|e| print(unit, e)).collect();
        for (a, b, s) in &self.dims {
            args.extend([print(unit, a), print(unit, b), print(unit, s)]);
        }
        args.push(print(unit, &self.cap));
        args
    }
}

/// The part of a global the unit does not declare that a call touches:
/// the generator names the global ([`CallCheckpoint::hidden`]), this
/// gives the element its region starts at and the region.
#[derive(Clone, Debug)]
pub struct HiddenRegion {
    /// The subscripts of the element the region starts at, in the
    /// caller's terms.
    pub first: Vec<Expr>,
    pub region: SavedRegion,
    /// The runtime's type suffix (`r8`).
    ty: &'static str,
}

impl HiddenRegion {
    /// The runtime's name for this region's routine, `push` or `pop`
    /// ([`Saved::region_routine`]).
    pub fn region_routine(&self, op: &str) -> String {
        region_routine_name(op, self.ty, self.region.dims.len())
    }

    /// The region as `name(1, 1, k)[1:m, 1:n]` (its sections seen from
    /// that element), the global named `name`.
    pub fn text(&self, unit: &Unit, name: &str) -> String {
        let first: Vec<String> = self.first.iter().map(|e| print(unit, e)).collect();
        format!("{name}({}){}", first.join(", "), self.region.sections(unit))
    }

    /// The variables its subscripts and bounds read.
    pub fn vars(&self, unit: &Unit, out: &mut BitSet) {
        for e in &self.first {
            dfort_ir::dp::value_vars(unit, e, out);
        }
        self.region.vars(unit, out);
    }
}

impl Saved {
    fn plain(variable: SymbolId, whole: bool, reference: Expr, why: Why) -> Saved {
        Saved {
            variable,
            whole,
            reference,
            why,
            region: None,
            unbounded: None,
        }
    }

    /// The reference as the code writes it; a region as
    /// `a(1, j)[1:m, 1:n]` (its sections seen from `a(1, j)`).
    pub fn text(&self, unit: &Unit) -> String {
        let base = print(unit, &self.reference);
        match &self.region {
            None => base,
            Some(r) => format!("{base}{}", r.sections(unit)),
        }
    }

    /// The variables the reference's subscripts and the region's bounds
    /// read.
    pub fn index_vars(&self, unit: &Unit, out: &mut BitSet) {
        index_vars(unit, &self.reference, out);
        if let Some(r) = &self.region {
            r.vars(unit, out);
        }
    }

    /// The runtime's name for a region of this variable's type
    /// (`dfort_push_region_r8_2`), `push` or `pop`.
    pub fn region_routine(&self, unit: &Unit, op: &str) -> Option<String> {
        let r = self.region.as_ref()?;
        let ty = &unit.symbol(self.variable).ty;
        let t = region_type(ty)?;
        Some(region_routine_name(op, t, r.dims.len()))
    }
}

/// The runtime's routine that pushes (`op` = `push`) or pops a region of
/// rank `n` of type suffix `t` (`dfort_push_region_r8_2`).
fn region_routine_name(op: &str, t: &str, n: usize) -> String {
    format!("dfort_{op}_region_{t}_{n}")
}

/// The runtime's type suffix for regions of type `ty` (`None`: it has no
/// region routines for it).
fn region_type(ty: &Type) -> Option<&'static str> {
    match (ty.base, ty.kind) {
        (BaseType::Real, Some(8)) => Some("r8"),
        (BaseType::Real, Some(4)) => Some("r4"),
        (BaseType::Integer, Some(4) | None) => Some("i4"),
        (BaseType::Complex, Some(8)) => Some("c8"),
        _ => None,
    }
}

/// What the generator cannot write for a call's checkpoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Problem {
    /// A reference of the unit the tape cannot hold: one of the caller's
    /// records (`record`) or of the snapshot.
    Untapeable {
        variable: SymbolId,
        whole: bool,
        limit: TapeLimit,
        record: bool,
        /// Why no region of it was found ([`crate::regions`]).
        unbounded: Option<String>,
    },
    /// A module variable the callee reads that the unit does not declare,
    /// which the tape cannot hold.
    UntapeableGlobal { key: GlobalKey, limit: TapeLimit },
    /// A global the callee reads that the unit does not declare but may
    /// change, and that the generator cannot bring in (a host's variable,
    /// a member of a COMMON block no unit declares with constant bounds).
    Undeclared(GlobalKey),
    /// Parts of one variable passed as several actuals, whose adjoints
    /// cannot be kept apart: why.
    Aliased(String),
}

impl Problem {
    /// The refusal of this problem at the call to `name` (the procedure
    /// `callee`, when dfort has its source) in `unit`.
    pub fn describe(
        &self,
        program: &Program,
        unit: &Unit,
        name: &str,
        callee: Option<UnitId>,
    ) -> String {
        let callee_name = callee.map_or(name, |c| program.unit(c).name.as_str());
        match self {
            Problem::Untapeable {
                variable,
                limit,
                record,
                unbounded,
                ..
            } => {
                let mut m = limit.describe(unit, *variable);
                if let Some(w) = unbounded {
                    m = format!("{m}: dfort found no region of it the call touches ({w})");
                }
                if *record {
                    format!("{m} (around the call to `{name}`)")
                } else {
                    format!("{m} (saved for the call to `{name}`)")
                }
            }
            Problem::UntapeableGlobal { key, limit } => {
                let m = match key {
                    GlobalKey::Shared { unit: m, symbol } => {
                        limit.describe(program.unit(*m), *symbol)
                    }
                    GlobalKey::Common { .. } => key.describe(program),
                };
                format!("{m} (saved for the call to `{callee_name}`)")
            }
            Problem::Aliased(why) => why.clone(),
            Problem::Undeclared(k) => format!(
                "`{callee_name}` reads {}, which `{}` does not declare but may change; declare it in `{}` so that the call can be checkpointed",
                k.describe(program),
                unit.name,
                unit.name
            ),
        }
    }

    /// Whether it is about a global the unit does not declare (the
    /// generator reports these first).
    pub fn hidden(&self) -> bool {
        matches!(
            self,
            Problem::UntapeableGlobal { .. } | Problem::Undeclared(_)
        )
    }
}

/// A unit's call checkpoints by CALL statement (boxed: the map's nodes
/// hold room for eleven entries, most units have one to three calls).
pub type CallCheckpoints = BTreeMap<StmtId, Box<CallCheckpoint>>;

/// What the forward sweep saves around one call, in push order: the
/// records, then the snapshot, then the hidden module variables; the
/// reverse sweep pops the snapshot (hidden variables first), calls the
/// callee's adjoint, then pops the records.
#[derive(Clone, Debug, Default)]
pub struct CallCheckpoint {
    /// The callee, when dfort has its source.
    pub callee: Option<UnitId>,
    /// Whether the callee was taken to get a derivative routine (the
    /// snapshot and the hidden variables exist only then).
    pub callee_routine: bool,
    /// Whether the call runs in split mode (TBR's choice, [`crate::split`]):
    /// the forward sweep runs the callee's forward routine `c_fwd`, the
    /// reverse sweep its reverse routine `c_rev`, and there is no
    /// snapshot (the callee's forward routine records what its reverse
    /// needs; TBR keeps what the actuals hold after the call).
    pub split: bool,
    /// What the call overwrites of the values the caller's adjoint needs.
    pub records: Vec<Saved>,
    /// What the callee's adjoint needs restored.
    pub snapshot: Vec<Saved>,
    /// Module variables the unit does not declare that the snapshot
    /// restores: read by the callee and changed by the unit, or
    /// overwritten by the call and needed after it.
    pub hidden: Vec<GlobalKey>,
    /// Of `hidden`, those of which only the part the call touches is
    /// saved ([`crate::regions::of_global`]), in `hidden`'s order; the
    /// others are saved whole. Read with [`CallCheckpoint::hidden_region`].
    pub hidden_regions: Vec<(GlobalKey, HiddenRegion)>,
    /// Actuals that are parts of the same variable as an earlier actual:
    /// the callee's adjoint writes the adjoint of each actual it reads, so
    /// these get adjoints of their own in the reverse sweep (the callee
    /// may not write aliased dummies).
    pub aliased: Vec<AliasedActual>,
    pub problems: Vec<Problem>,
}

/// An actual argument (a real(8) variable, or part of one) the callee only
/// reads that may overlap an earlier such actual of the call.
#[derive(Clone, Debug)]
pub struct AliasedActual {
    /// Its place among the callee's formals.
    pub formal: usize,
    /// The callee only reads its formal: its adjoint starts at zero and is
    /// added in after the call. Otherwise (it writes it, so no other actual
    /// overlaps it) the adjoint is copied in and out.
    pub accumulate: bool,
    /// For an element passed to an array formal (or an assumed-size
    /// array): the region of the formal the callee touches; else the
    /// actual itself is copied.
    pub region: Option<SavedRegion>,
}

impl CallCheckpoint {
    /// The part of hidden global `key` the snapshot saves, when not all.
    pub fn hidden_region(&self, key: &GlobalKey) -> Option<&HiddenRegion> {
        self.hidden_regions
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, h)| h)
    }

    /// The unit's references it pushes, in push order (the hidden module
    /// variables come after them).
    pub fn saved(&self) -> impl Iterator<Item = &Saved> {
        self.records.iter().chain(&self.snapshot)
    }
}

/// The calling unit, as a checkpoint reads it.
pub struct Caller<'a> {
    pub program: &'a Program,
    /// The unit as the analyses saw it.
    pub orig: &'a Unit,
    /// The unit the call is written in: `orig`, or a copy of it with
    /// temporaries appended to its symbols (hoisted function references).
    pub unit: &'a Unit,
    pub tbr: &'a Tbr,
    /// Every unit's effects (indexed by `UnitId`).
    pub effects: &'a ProgramEffects,
    /// Per statement of `orig`: what it or anything after it may write
    /// ([`crate::effects::written_from`]).
    pub written_from: &'a IdVec<StmtId, BitSet>,
    /// The regions found so far by this run.
    pub regions: &'a crate::regions::RegionMemo,
}

/// What a checkpoint reads of the callees (indexed by `UnitId`).
pub struct Callees<'a> {
    /// Whether each unit gets a derivative routine.
    pub routine: &'a IdVec<UnitId, bool>,
    /// What each unit's adjoint reads of the values it is called with
    /// (`None`: everything, or not analysed).
    pub entry_needs: &'a dyn Fn(UnitId) -> Option<&'a BitSet>,
    /// The regions found so far by this run.
    pub regions: &'a crate::regions::RegionMemo,
    /// The array formals of each unit whose values its callers save
    /// around the call ([`crate::left_to_callers`]).
    pub left_to_callers: &'a dyn Fn(UnitId) -> &'a [SymbolId],
    /// The SAVE'd locals the adjoints share between their routines
    /// ([`crate::saved_state::of_carriers`]): a call's snapshot saves them
    /// like module variables.
    pub shared_state: &'a BTreeSet<(UnitId, SymbolId)>,
}

impl Callees<'_> {
    /// Whether `c` leaves restoring its formal `f` to its callers.
    pub(crate) fn leaves(&self, c: UnitId, f: SymbolId) -> bool {
        (self.left_to_callers)(c).contains(&f)
    }
    pub(crate) fn routine(&self, c: UnitId) -> bool {
        self.routine.get(c).copied().unwrap_or(false)
    }
    /// Whether the adjoint of `c` reads the value its symbol `s` holds when
    /// it is called (unknown symbols: yes).
    pub(crate) fn reads(&self, c: UnitId, s: Option<SymbolId>) -> bool {
        match ((self.entry_needs)(c), s) {
            (Some(n), Some(s)) => n.contains_id(s),
            _ => true,
        }
    }
}

/// The checkpoints of the CALL statements of `caller` (its `orig` and
/// `unit` the same), each with the loops its reverse sweep replays
/// (`replayed`, [`replayed_loops`]).
pub fn of_unit(
    caller: &Caller,
    callees: &Callees,
    replayed: &BTreeMap<StmtId, Vec<SymbolId>>,
) -> CallCheckpoints {
    let mut out = BTreeMap::new();
    for st in &caller.unit.stmts {
        // `move_alloc` overwrites nothing: the adjoint keeps the
        // allocations it moves.
        if crate::activity::moved(st).is_some() {
            continue;
        }
        if let StmtKind::Call { args, target, .. } = &st.kind {
            let callee = match target {
                CallTarget::Unit(c) => Some(*c),
                _ => None,
            };
            let around = replayed.get(&st.id).map(Vec::as_slice).unwrap_or(&[]);
            out.insert(
                st.id,
                Box::new(of_call(caller, callees, st.id, callee, args, around)),
            );
        }
    }
    crate::restored_later::drop_restored_later(caller, &mut out);
    out
}

/// Per CALL statement and assignment (whose function references are
/// reversed as calls, [`crate::references`]) of a unit: the indices of
/// the counted DO loops around it that the reverse sweep replays from their bounds (none in a
/// unit reversed by basic blocks, whose loops are not replayed).
pub fn replayed_loops(unit: &Unit, reversal: &UnitReversal) -> BTreeMap<StmtId, Vec<SymbolId>> {
    fn walk(
        unit: &Unit,
        ids: &[StmtId],
        around: &mut Vec<SymbolId>,
        out: &mut BTreeMap<StmtId, Vec<SymbolId>>,
    ) {
        for &id in ids {
            let Some(st) = unit.stmts.get(id) else {
                continue;
            };
            match &st.kind {
                StmtKind::Call { .. } | StmtKind::Assign { .. } => {
                    out.insert(id, around.clone());
                }
                StmtKind::Do {
                    control: DoControl::Counted { var, .. },
                    body,
                    ..
                } => {
                    around.push(*var);
                    walk(unit, body, around, out);
                    around.pop();
                }
                kind => {
                    for b in kind.blocks() {
                        walk(unit, b, around, out);
                    }
                }
            }
        }
    }
    let mut out = BTreeMap::new();
    if reversal.by_blocks {
        for st in &unit.stmts {
            if matches!(st.kind, StmtKind::Call { .. } | StmtKind::Assign { .. }) {
                out.insert(st.id, Vec::new());
            }
        }
        return out;
    }
    walk(unit, &unit.body, &mut Vec::new(), &mut out);
    out
}

/// The checkpoint of statement `id`'s call to `callee` (`None`: no source)
/// with actuals `args`, inside counted loops with indices `replayed` that
/// the reverse sweep replays.
pub fn of_call(
    caller: &Caller,
    callees: &Callees,
    id: StmtId,
    callee: Option<UnitId>,
    args: &[Arg],
    replayed: &[SymbolId],
) -> CallCheckpoint {
    let (program, orig, unit) = (caller.program, caller.orig, caller.unit);
    let in_req = caller.tbr.in_req.get(id).cloned().unwrap_or_default();
    let routine = callee.is_some_and(|c| callees.routine(c));
    let split = routine && caller.tbr.split.contains(&id);
    let mut problems = Vec::new();
    // What the call may overwrite, and (for a callee with a derivative
    // routine) what it reads: the caller's references.
    let mut written: Vec<Saved> = Vec::new();
    // What the caller saves around the call even though the callee has a
    // derivative routine: the actuals of the formals it leaves to its
    // callers ([`crate::left_to_callers`]).
    let mut left = BitSet::default();
    let mut read: Vec<Saved> = Vec::new();
    let mut indices = BitSet::default();
    let mut hidden = Vec::new();
    let mut hidden_regions = Vec::new();
    let mut aliased = Vec::new();
    match callee {
        Some(c) => {
            let cu = program.unit(c);
            let no_effects = Effects::default();
            let fx = caller.effects.get(c).unwrap_or(&no_effects);
            for (k, a) in in_formal_order(cu, args).into_iter().enumerate() {
                let (Some(a), Some(&formal)) = (a, cu.args.get(k)) else {
                    continue;
                };
                let k32 = k as u32;
                let rank = cu.symbol(formal).rank();
                index_vars(unit, &a.value, &mut indices);
                // The snapshot restores what the callee's adjoint reads,
                // not everything the callee reads.
                let needed = callees.reads(c, Some(formal));
                match actual_item(&a.value, rank) {
                    Some((variable, whole, reference)) => {
                        let region = match whole && rank > 0 {
                            true => region_item(caller, id, c, k, args, &a.value, variable),
                            false => None,
                        };
                        // An array passed whole: the part of it the call
                        // touches, where that is a smaller slab.
                        let slab = match (&region, whole && rank > 0) {
                            (None, true) => whole_actual_region(caller, id, c, k, args, variable),
                            _ => None,
                        };
                        let saved = |why| match (&region, &slab) {
                            (_, Some((reference, r))) => {
                                let mut s = Saved::plain(variable, false, reference.clone(), why);
                                s.region = Some(r.clone());
                                s
                            }
                            (Some(Ok(r)), None) => {
                                let mut s = Saved::plain(variable, false, a.value.clone(), why);
                                s.region = Some(r.clone());
                                s
                            }
                            (Some(Err(w)), None) => {
                                let mut s = Saved::plain(variable, whole, reference.clone(), why);
                                s.unbounded = Some(w.clone());
                                s
                            }
                            (None, None) => Saved::plain(variable, whole, reference.clone(), why),
                        };
                        if fx.written_formals.contains(&k32) {
                            written.push(saved(Why::AroundCall));
                            if callees.leaves(c, formal) {
                                left.insert_id(variable);
                            }
                        }
                        if fx.read_formals.contains(&k32) && needed {
                            read.push(saved(Why::Snapshot));
                        }
                    }
                    // The callee's adjoint, or the partials of the
                    // expression (which read its leaves after that adjoint:
                    // `dble(j)*x` reads `j`), read the leaves; TBR leaves
                    // them to the snapshot ([`crate::tbr`]).
                    None => leaf_items(unit, &a.value, &mut read),
                }
            }
            let mut declared = BTreeSet::new();
            // The callee's own symbol for each global it declares (the
            // first, as a search in symbol order finds it).
            let mut by_key: BTreeMap<GlobalKey, SymbolId> = BTreeMap::new();
            for cs in cu.symbols.indices() {
                if let Some(key) = global_key(program, cu, cs) {
                    by_key.entry(key).or_insert(cs);
                }
            }
            for s in orig.symbols.indices() {
                let Some(key) = global_key(program, orig, s) else {
                    continue;
                };
                // The callee's own symbol for the global, if it has one.
                let theirs = by_key.get(&key).copied();
                let writes = fx.written_globals.contains(&key);
                let reads = fx.read_globals.contains(&key) && callees.reads(c, theirs);
                // Only what is saved is narrowed to the part the call
                // touches: a region is not cheap to find.
                let saved = (writes && in_req.contains_id(s))
                    || (reads && routine && modifiable(caller, id, s));
                let region = match saved {
                    true => global_region(caller, callees, id, c, args, s, &key),
                    false => None,
                };
                // Else a few elements named by subscripts fixed for the
                // call (a host's array an internal procedure updates).
                let elements = match (saved, &region, theirs) {
                    (true, None, Some(t)) => crate::regions::touched_elements(
                        program,
                        caller.effects,
                        orig,
                        (c, &in_formal_order(cu, args)),
                        (s, &key, t),
                    ),
                    _ => None,
                };
                let items = |why| match (&region, &elements) {
                    (Some((reference, r)), _) => {
                        let mut saved = Saved::plain(s, false, reference.clone(), why);
                        saved.region = Some(r.clone());
                        vec![saved]
                    }
                    (None, Some(elements)) => elements
                        .iter()
                        .map(|e| Saved::plain(s, false, e.clone(), why))
                        .collect(),
                    (None, None) => {
                        vec![Saved::plain(s, true, var_ref(s, unit.symbol(s).span), why)]
                    }
                };
                if let Some(elements) = &elements {
                    // The reverse sweep evaluates their subscripts again.
                    for e in elements {
                        index_vars(unit, e, &mut indices);
                    }
                }
                if writes {
                    written.extend(items(Why::AroundCall));
                }
                if reads {
                    read.extend(items(Why::Snapshot));
                }
                declared.insert(key);
            }
            hidden = hidden_globals(
                caller,
                id,
                fx,
                routine,
                &declared,
                callees.shared_state,
                &mut problems,
            );
            for k in &hidden {
                if let Some(h) = hidden_region(caller, callees, id, c, args, k) {
                    // The reverse sweep evaluates it again.
                    h.vars(unit, &mut indices);
                    hidden_regions.push((k.clone(), h));
                }
            }
            if routine {
                aliased = aliased_actuals(caller, id, c, args, fx, &mut problems);
                // The reverse sweep evaluates their regions again.
                for r in aliased.iter().filter_map(|a| a.region.as_ref()) {
                    r.vars(unit, &mut indices);
                }
            }
        }
        None => {
            for a in args {
                if let Some((variable, whole, reference)) = actual_item(&a.value, 1) {
                    written.push(Saved::plain(variable, whole, reference, Why::AroundCall));
                }
            }
        }
    }
    let required = |s: SymbolId| in_req.contains_id(s);
    // The caller records what the call overwrites of the values its own
    // adjoint needs: a callee with a derivative routine restores the
    // differentiable ones itself, from its calling context, and a split
    // callee every one, integers too (its forward routine records them,
    // its reverse routine puts them back).
    let mut records: Vec<Saved> = Vec::new();
    let mut texts: Vec<String> = Vec::new();
    written.sort_by_key(|w| subscript_rank(unit, w.variable, w.whole));
    for w in &written {
        if !required(w.variable) {
            continue;
        }
        if routine && !left.contains_id(w.variable) && (split || differentiable(orig, w.variable)) {
            continue;
        }
        if let Some(limit) = reference_tape_limit(program, unit, w.variable, w.whole, &w.reference)
        {
            problems.push(Problem::Untapeable {
                variable: w.variable,
                whole: w.whole,
                limit,
                record: true,
                unbounded: w.unbounded.clone(),
            });
        }
        let text = w.text(unit);
        if !texts.contains(&text) {
            texts.push(text);
            records.push(w.clone());
        }
    }
    // The snapshot: what the callee's adjoint reads (and what the call
    // overwrites of what the caller needs), among the values anything may
    // change.
    let mut snapshot: Vec<Saved> = Vec::new();
    if split {
        hidden.clear();
        hidden_regions.clear();
    } else if routine {
        let mut items = read;
        items.extend(written.into_iter().filter(|w| required(w.variable)));
        // The bounds of the regions are restored before the regions.
        for item in &items {
            if item.region.is_some() {
                item.index_vars(unit, &mut indices);
            }
        }
        for s in indices.ids() {
            // The reversed loop replays its own index.
            if !replayed.contains(&s) {
                items.push(Saved::plain(
                    s,
                    true,
                    var_ref(s, unit.symbol(s).span),
                    Why::Index,
                ));
            }
        }
        // Subscripts are popped before what they subscript.
        items.sort_by_key(|w| subscript_rank(unit, w.variable, w.whole));
        let mut texts: Vec<String> = Vec::new();
        for item in items {
            let text = item.text(unit);
            // The reversed loops set their own indices (a leaf `j` of
            // `m - j` as well as a subscript).
            let replays = item.whole && replayed.contains(&item.variable);
            if !modifiable(caller, id, item.variable) || replays || texts.contains(&text) {
                continue;
            }
            if let Some(limit) =
                reference_tape_limit(program, unit, item.variable, item.whole, &item.reference)
            {
                problems.push(Problem::Untapeable {
                    variable: item.variable,
                    whole: item.whole,
                    limit,
                    record: false,
                    unbounded: item.unbounded.clone(),
                });
            }
            texts.push(text);
            snapshot.push(item);
        }
    }
    // Without a derivative routine nothing else restores the subscripts
    // of the elements recorded around the call: they are saved with them
    // and popped first (fuzzer, seed 1126, case 849: `call s(t1(is))`,
    // then `is` changes).
    if !routine {
        let mut subscripts = BitSet::default();
        for r in records.iter().filter(|r| !r.whole) {
            r.index_vars(unit, &mut subscripts);
        }
        for s in subscripts.ids() {
            if !replayed.contains(&s) && modifiable(caller, id, s) {
                snapshot.push(Saved::plain(
                    s,
                    true,
                    var_ref(s, unit.symbol(s).span),
                    Why::Index,
                ));
            }
        }
    }
    // Kept for every call of the program while it is analysed: no
    // spare capacity.
    records.shrink_to_fit();
    snapshot.shrink_to_fit();
    hidden.shrink_to_fit();
    hidden_regions.shrink_to_fit();
    aliased.shrink_to_fit();
    problems.shrink_to_fit();
    CallCheckpoint {
        callee,
        callee_routine: routine,
        split,
        records,
        snapshot,
        hidden,
        hidden_regions,
        aliased,
        problems,
    }
}

/// Whether two element references of one array are different elements:
/// their subscripts differ by a nonzero constant in some dimension
/// (`u(i)` and `u(i + 1)`).
fn distinct_elements(unit: &Unit, a: &Expr, b: &Expr) -> bool {
    let (ExprKind::ArrayRef { subs: sa, .. }, ExprKind::ArrayRef { subs: sb, .. }) =
        (&a.kind, &b.kind)
    else {
        return false;
    };
    let mut atoms = Vec::new();
    sa.len() == sb.len()
        && sa.iter().zip(sb).any(|(x, y)| match (x, y) {
            (Subscript::Index(x), Subscript::Index(y)) => {
                let d = crate::regions::sub(
                    crate::regions::from_expr(unit, x, &mut atoms),
                    crate::regions::from_expr(unit, y, &mut atoms),
                );
                matches!(d, crate::regions::Bound::Int(c) if c != 0)
            }
            _ => false,
        })
}

/// The actuals of a call to `c` that are parts of the same differentiable
/// variable as an earlier actual ([`AliasedActual`]).
fn aliased_actuals(
    caller: &Caller,
    id: StmtId,
    c: UnitId,
    args: &[Arg],
    fx: &Effects,
    problems: &mut Vec<Problem>,
) -> Vec<AliasedActual> {
    let (unit, orig) = (caller.unit, caller.orig);
    let cu = caller.program.unit(c);
    let mut seen: Vec<(SymbolId, &Expr)> = Vec::new();
    let mut out = Vec::new();
    for (k, a) in in_formal_order(cu, args).into_iter().enumerate() {
        let (Some(a), Some(&formal)) = (a, cu.args.get(k)) else {
            continue;
        };
        let Some((v, _)) = dfort_ir::dp::target(&a.value) else {
            continue;
        };
        if orig.symbols.get(v).is_none() || !differentiable(orig, v) {
            continue;
        }
        // A formal the callee writes may overlap no other actual (Fortran
        // forbids it): its adjoint goes directly. Read-only ones may
        // overlap each other, and the callee's adjoint adds into each.
        if fx.written_formals.contains(&(k as u32)) {
            continue;
        }
        let scalar = cu.symbol(formal).rank() == 0;
        let overlaps = seen
            .iter()
            .any(|(w, e)| *w == v && !(scalar && distinct_elements(unit, e, &a.value)));
        seen.push((v, &a.value));
        if !overlaps {
            continue;
        }
        let sym = unit.symbol(v);
        let name = &sym.name;
        if !(sym.ty.base == BaseType::Real && sym.ty.kind == Some(8)) {
            problems.push(Problem::Aliased(format!(
                "parts of `{name}` ({}) are passed as several arguments; dfort keeps their adjoints apart for real(8) variables only",
                dfort_ir::dump::type_name(&sym.ty)
            )));
            continue;
        }
        let accumulate = !fx.written_formals.contains(&(k as u32));
        let sequence = cu.symbol(formal).rank() > 0
            && (matches!(a.value.kind, ExprKind::ArrayRef { .. })
                && !matches!(&a.value.kind, ExprKind::ArrayRef { subs, .. } if subs.iter().any(|s| matches!(s, Subscript::Range { .. })))
                || sym.dims.iter().any(|d| d.kind == DimKind::AssumedSize));
        let region = match sequence {
            false => None,
            true => match region_item(caller, id, c, k, args, &a.value, v) {
                Some(Ok(r)) => Some(r),
                Some(Err(w)) => {
                    problems.push(Problem::Aliased(format!(
                        "parts of `{name}` are passed as several arguments, and dfort found no region of `{}` the call touches ({w})",
                        print(unit, &a.value)
                    )));
                    continue;
                }
                None => {
                    problems.push(Problem::Aliased(format!(
                        "parts of `{name}` are passed as several arguments, and dfort found no region of `{}` the call touches",
                        print(unit, &a.value)
                    )));
                    continue;
                }
            },
        };
        out.push(AliasedActual {
            formal: k,
            accumulate,
            region,
        });
    }
    out
}

/// Globals the callee (of effects `fx`) reads that the unit does not
/// declare (`declared`) but may change: the module variables the
/// generator can bring in and save; the others are problems.
fn hidden_globals(
    caller: &Caller,
    id: StmtId,
    fx: &Effects,
    routine: bool,
    declared: &BTreeSet<GlobalKey>,
    shared: &BTreeSet<(UnitId, SymbolId)>,
    problems: &mut Vec<Problem>,
) -> Vec<GlobalKey> {
    let program = caller.program;
    let no_effects = Effects::default();
    let mine = caller.effects.get(caller.orig.id).unwrap_or(&no_effects);
    // What the callee's adjoint (`routine`) reads that the caller may
    // change, and what the call overwrites that the caller's adjoint (or
    // its calling context) needs after it: the callee's adjoint restores
    // its own overwrites from the values popped before it, but the
    // original run in the forward sweep changed them (fuzzer, seed 48048,
    // case 1626: a module procedure's call of a procedure writing a module
    // array its caller's adjoint reads). A call with no derivative
    // routine changes them too, and the caller's calling context may need
    // them after the caller's own adjoint (fuzzer, seed 20261201, case
    // 2488: a module procedure whose internal procedure writes a module
    // array the root's adjoint reads after it).
    let required_after = fx
        .written_globals
        .iter()
        .filter(|k| caller.tbr.requires_undeclared(id, k));
    let mut keys: Vec<&GlobalKey> = fx
        .read_globals
        .iter()
        .filter(|k| routine && mine.written_globals.contains(*k))
        .chain(required_after)
        .collect();
    keys.sort();
    keys.dedup();
    savable_globals(program, keys, declared, shared, problems)
}

/// Of the globals `keys`, those a unit that declares `declared` can save
/// on the tape although it does not declare them (module variables,
/// brought in by USE; members of COMMON blocks of known layout, declared
/// under new names; SAVE'd locals the adjoint shares, `shared`, brought
/// in from their module); the others, which it cannot, go to `problems`
/// (a SAVE'd local not shared goes to neither: no derivative reads it,
/// [`crate::saved_state`]).
pub fn savable_globals<'k>(
    program: &Program,
    keys: impl IntoIterator<Item = &'k GlobalKey>,
    declared: &BTreeSet<GlobalKey>,
    shared: &BTreeSet<(UnitId, SymbolId)>,
    problems: &mut Vec<Problem>,
) -> Vec<GlobalKey> {
    let mut saved = Vec::new();
    for k in keys {
        if declared.contains(k) {
            continue;
        }
        match k {
            GlobalKey::Shared { unit: m, symbol } if program.unit(*m).kind == UnitKind::Module => {
                match tape_limit(program.unit(*m), *symbol, true) {
                    Some(limit) => problems.push(Problem::UntapeableGlobal {
                        key: k.clone(),
                        limit,
                    }),
                    None => saved.push(k.clone()),
                }
            }
            // SAVE'd locals of a procedure, which the adjoint shares in a
            // module of their own, or which no derivative reads.
            GlobalKey::Shared { unit: m, symbol }
                if dfort_ir::queries::saved_local(program.unit(*m), *symbol) =>
            {
                if shared.contains(&(*m, *symbol)) {
                    match tape_limit(program.unit(*m), *symbol, true) {
                        Some(limit) => problems.push(Problem::UntapeableGlobal {
                            key: k.clone(),
                            limit,
                        }),
                        None => saved.push(k.clone()),
                    }
                }
            }
            GlobalKey::Common { block, index } => {
                // A COMMON block the unit does not declare is declared in
                // its adjoint under new names, when its layout is known.
                let member = common_layout(program, block)
                    .and_then(|l| Some((l.unit, *l.members.get(*index as usize)?)));
                match member {
                    Some((u, s)) => match tape_limit(program.unit(u), s, true) {
                        Some(limit) => problems.push(Problem::UntapeableGlobal {
                            key: k.clone(),
                            limit,
                        }),
                        None => saved.push(k.clone()),
                    },
                    None => problems.push(Problem::Undeclared(k.clone())),
                }
            }
            _ => problems.push(Problem::Undeclared(k.clone())),
        }
    }
    saved
}

/// Whether statement `id` or anything that may run after it may change
/// `s` (temporaries the unit as written adds always may). An `intent(in)`
/// dummy never changes: no conforming callee writes it.
fn modifiable(caller: &Caller, id: StmtId, s: SymbolId) -> bool {
    let Some(sym) = caller.orig.symbols.get(s) else {
        return true;
    };
    if matches!(sym.storage, Storage::Dummy(_)) && sym.intent == Some(Intent::In) {
        return false;
    }
    caller
        .written_from
        .get(id)
        .is_some_and(|w| w.contains_id(s))
}

/// The actuals of a call in the order of the callee's formals (absent
/// optional arguments: `None`).
pub(crate) fn in_formal_order<'e>(callee: &Unit, args: &'e [Arg]) -> Vec<Option<&'e Arg>> {
    let mut out = vec![None; callee.args.len()];
    for (pos, a) in args.iter().enumerate() {
        if let Some(slot) = formal_index(callee, pos, a).and_then(|k| out.get_mut(k)) {
            *slot = Some(a);
        }
    }
    out
}

/// A reference to the whole variable `s`.
fn var_ref(s: SymbolId, span: Span) -> Expr {
    Expr {
        kind: ExprKind::Var(s),
        span,
    }
}

/// What the caller knows of the actuals `order` of its call `id`: literals,
/// leading dimensions, and the indices of the counted loops around the call
/// that stay positive ([`crate::regions::positive_index`]).
fn call_site_known(
    caller: &Caller,
    id: StmtId,
    order: &[Option<&Arg>],
) -> crate::regions::KnownArgs {
    let unit = caller.unit;
    let loops: Vec<(SymbolId, &Expr, Option<&Expr>)> = crate::reversal::enclosing_loops(unit, id)
        .into_iter()
        .filter_map(|l| match &unit.stmt(l).kind {
            StmtKind::Do {
                control:
                    DoControl::Counted {
                        var, start, step, ..
                    },
                ..
            } => Some((*var, &**start, step.as_deref())),
            _ => None,
        })
        .collect();
    crate::regions::known_args(order, &|e| {
        crate::regions::call_site_value(unit, caller.effects, e)
            .or_else(|| crate::regions::positive_index(unit, e, loops.iter().copied()))
    })
}

/// The region of the array `variable` that callee `c` can touch through
/// its formal `k`, whose actual is `value` (the array or one of its
/// elements), in the caller's terms: `None` when the whole array is saved
/// as before (an explicit-shape array passed whole), `Err` with the reason
/// when no region is known.
fn region_item(
    caller: &Caller,
    id: StmtId,
    c: UnitId,
    k: usize,
    args: &[Arg],
    value: &Expr,
    variable: SymbolId,
) -> Option<Result<SavedRegion, String>> {
    let unit = caller.unit;
    let sym = unit.symbol(variable);
    let element = matches!(value.kind, ExprKind::ArrayRef { .. });
    let assumed_size = sym.dims.iter().any(|d| d.kind == DimKind::AssumedSize);
    if !element && !assumed_size {
        return None;
    }
    region_type(&sym.ty)?;
    let cu = caller.program.unit(c);
    let order = in_formal_order(cu, args);
    let known = call_site_known(caller, id, &order);
    let item = |known: &crate::regions::KnownArgs| {
        formal_item(caller, c, k, &order, value, variable, known)
    };
    let plain = item(&known);
    // A region that one IF of the callee on a formal decides: the region
    // of each arm, one or the other saved at run time.
    if let (Some(Ok(_)), Some((cond, at, other))) = (&plain, arms(caller, c, &order, &known)) {
        if let (Some(Ok(a)), Some(Ok(b))) = (item(&at), item(&other)) {
            if let Some(r) = a.or(&b, &cond, unit) {
                return Some(Ok(r));
            }
        }
    }
    plain
}

/// [`region_item`] for the known values `known` of the call's actuals
/// `order`.
fn formal_item(
    caller: &Caller,
    c: UnitId,
    k: usize,
    order: &[Option<&Arg>],
    value: &Expr,
    variable: SymbolId,
    known: &crate::regions::KnownArgs,
) -> Option<Result<SavedRegion, String>> {
    let unit = caller.unit;
    let cu = caller.program.unit(c);
    let region = match crate::regions::of_formal(
        caller.program,
        caller.effects,
        caller.regions,
        c,
        k as u32,
        known,
    ) {
        Ok(r) => r,
        Err(w) => return Some(Err(format!("in `{}`, {w}", cu.name))),
    };
    if region.dims.is_empty() {
        return None;
    }
    let span = value.span;
    let at = AtCall::new(unit, cu, order);
    let conv = |b: &crate::regions::Bound| at.expr(b, span);
    // The runtime holds regions of rank 3 at most: of a formal of higher
    // rank, the elements from the actual's first to the last it reaches.
    let flat = region.dims.len() > 3;
    let mut dims = Vec::new();
    for (d, lower) in region.dims.iter().zip(&region.lower).filter(|_| !flat) {
        // Subscripts from 1 in the runtime's view.
        let shift = |b: crate::regions::Bound| {
            crate::regions::add(
                crate::regions::sub(b, lower.clone()),
                crate::regions::Bound::Int(1),
            )
        };
        let (a, b, st) = d.triplet();
        match (conv(&shift(a)), conv(&shift(b)), conv(&st)) {
            (Some(a), Some(b), Some(st)) => dims.push((a, b, st)),
            _ => {
                return Some(Err(format!(
                    "the region `{}` touches depends on an argument it is not given",
                    cu.name
                )))
            }
        }
    }
    let mut extents = Vec::new();
    for e in region.extents.iter().filter(|_| !flat) {
        match conv(e) {
            Some(e) => extents.push(e),
            None => {
                return Some(Err(format!(
                    "the shape `{}` gives it depends on an argument it is not given",
                    cu.name
                )))
            }
        }
    }
    let Some(cap) = conv(&crate::regions::add(
        region.cap.clone(),
        crate::regions::Bound::Int(1),
    )) else {
        return Some(Err(format!(
            "the part `{}` reaches depends on an argument it is not given",
            cu.name
        )));
    };
    // What the callee reaches never goes past the actual's storage: the
    // region's bounds may be looser than the callee's loops (a blocked loop
    // `do i = jj, jj + min(nb, m - jj + 1) - 1` is bounded by `jj + nb - 1`),
    // and the runtime must not read or restore elements past the array
    // (seed 51051, case 602: `t1(n - 1 - sj)` with a region of 9 elements
    // where 5 remain).
    let cap = match elements_from(unit, value, variable) {
        Some(left) => intrinsic("min", vec![cap, left], span),
        None => cap,
    };
    if flat {
        let one = Expr {
            kind: ExprKind::Int(1),
            span,
        };
        dims.push((one.clone(), cap.clone(), one));
    }
    Some(Ok(SavedRegion { extents, dims, cap }))
}

/// The first IF condition of callee `c` that compares one of its integer
/// scalar formals the call does not give a known value, and that `c`
/// never writes, with a constant (`IF (kArg .EQ. 0)` of MITgcm's
/// `ADAMS_BASHFORTH2`, which touches every level for 0 and level `kArg`
/// otherwise): the condition at the call (`k == 0`), and the known
/// values for either answer.
fn arms(
    caller: &Caller,
    c: UnitId,
    order: &[Option<&Arg>],
    known: &crate::regions::KnownArgs,
) -> Option<(Expr, crate::regions::KnownArgs, crate::regions::KnownArgs)> {
    use crate::regions::Known;
    let cu = caller.program.unit(c);
    let written = &caller.effects.get(c)?.written_formals;
    let formal = |e: &Expr| -> Option<u32> {
        let ExprKind::Var(v) = e.kind else {
            return None;
        };
        let sym = cu.symbol(v);
        match sym.storage {
            Storage::Dummy(j)
                if sym.rank() == 0
                    && sym.ty.base == BaseType::Integer
                    && !known.contains_key(&j)
                    && !written.contains(&j) =>
            {
                Some(j)
            }
            _ => None,
        }
    };
    let constant = |e: &Expr| dfort_ir::dp::constant_int(cu, e, 0);
    let (j, v) = cu.stmts.iter().find_map(|st| {
        let StmtKind::If { arms, .. } = &st.kind else {
            return None;
        };
        arms.iter().find_map(|arm| match &arm.cond.kind {
            ExprKind::Binary {
                op: BinaryOp::Eq | BinaryOp::Ne,
                lhs,
                rhs,
            } => match (formal(lhs), constant(rhs), formal(rhs), constant(lhs)) {
                (Some(j), Some(v), _, _) | (_, _, Some(j), Some(v)) => Some((j, v)),
                _ => None,
            },
            _ => None,
        })
    })?;
    let actual = order.get(j as usize).copied().flatten()?;
    let span = actual.value.span;
    let value = Expr {
        kind: ExprKind::Int(v),
        span,
    };
    let cond = binary(BinaryOp::Eq, actual.value.clone(), value, span);
    let mut at = known.clone();
    at.insert(j, Known::Int(v));
    let mut other = known.clone();
    other.insert(j, Known::Except(v));
    Some((cond, at, other))
}

/// The part of the global array `s` of the caller (the global `key`)
/// that the call to `c` with actuals `args` can touch, as the element it
/// starts at and a region of rank 3 at most from it: the trailing
/// dimensions the call touches at one subscript each (`k, bi, bj` of
/// `gt(:, :, k, bi, bj)`) go into the element, the others into the region
/// ([`crate::regions::of_global`]). `None`: the whole array is saved.
fn global_region(
    caller: &Caller,
    callees: &Callees,
    id: StmtId,
    c: UnitId,
    args: &[Arg],
    s: SymbolId,
    key: &GlobalKey,
) -> Option<(Expr, SavedRegion)> {
    let unit = caller.unit;
    let sym = unit.symbol(s);
    region_type(&sym.ty)?;
    let shape = crate::regions::global_shape(unit, s)?;
    global_slab(caller, callees, (id, c, args), key, (s, sym.span), &shape)
}

/// The slab of the global `key` (of shape `shape`, named by symbol
/// `s` at `span`) that callee `c` can touch at call `id` with `args`, in
/// the caller's terms ([`slab`]).
fn global_slab(
    caller: &Caller,
    callees: &Callees,
    (id, c, args): (StmtId, UnitId, &[Arg]),
    key: &GlobalKey,
    (s, span): (SymbolId, Span),
    shape: &crate::regions::GlobalShape,
) -> Option<(Expr, SavedRegion)> {
    let cu = caller.program.unit(c);
    let order = in_formal_order(cu, args);
    let known = call_site_known(caller, id, &order);
    let region = crate::regions::of_global(
        caller.program,
        caller.effects,
        callees.regions,
        c,
        key,
        shape,
        &known,
    )
    .ok()?;
    let at = AtCall::new(caller.unit, cu, &order);
    slab(s, span, shape, &region, &|b| at.expr(b, span), 1)
}

/// The part of the global `key`, which the caller does not declare, that
/// callee `c` can touch at call `id` ([`global_region`] for a global the
/// caller declares): a COMMON member of known layout, or a module array,
/// with constant bounds. `None`: it is saved whole.
fn hidden_region(
    caller: &Caller,
    callees: &Callees,
    id: StmtId,
    c: UnitId,
    args: &[Arg],
    key: &GlobalKey,
) -> Option<HiddenRegion> {
    let program = caller.program;
    let (owner, member, declared) = match key {
        GlobalKey::Common { block, index } => {
            let layout = common_layout(program, block)?;
            let member = *layout.members.get(*index as usize)?;
            (
                layout.unit,
                member,
                layout.bounds.get(*index as usize).cloned(),
            )
        }
        GlobalKey::Shared { unit, symbol } => (*unit, *symbol, None),
    };
    let ou = program.unit(owner);
    let sym = ou.symbol(member);
    let ty = region_type(&sym.ty)?;
    let shape = crate::regions::global_shape(ou, member)?;
    // The adjoint declares a COMMON block it brings in with the layout's
    // bounds: the region is in those subscripts.
    if let Some(bounds) = declared {
        let (lower, upper): (Vec<i64>, Vec<i64>) = bounds.into_iter().unzip();
        if lower != shape.lower || upper != shape.upper {
            return None;
        }
    }
    let (reference, region) = global_slab(
        caller,
        callees,
        (id, c, args),
        key,
        (member, sym.span),
        &shape,
    )?;
    let ExprKind::ArrayRef { subs, .. } = reference.kind else {
        return None;
    };
    let first = subs
        .into_iter()
        .map(|s| match s {
            Subscript::Index(e) => Some(e),
            _ => None,
        })
        .collect::<Option<Vec<_>>>()?;
    Some(HiddenRegion { first, region, ty })
}

/// The part of the array `variable`, passed whole to formal `k` of `c`
/// declared with the same constant shape (MITgcm's
/// `CONVECTIVELY_MIXTRACER(bi, bj, k, …, theta, …)`, which touches levels
/// `k-1` and `k` of one tile), that the call can touch, as [`slab`] gives
/// it. `None`: the whole array is saved.
fn whole_actual_region(
    caller: &Caller,
    id: StmtId,
    c: UnitId,
    k: usize,
    args: &[Arg],
    variable: SymbolId,
) -> Option<(Expr, SavedRegion)> {
    let unit = caller.unit;
    let sym = unit.symbol(variable);
    region_type(&sym.ty)?;
    let shape = crate::regions::global_shape(unit, variable)?;
    let cu = caller.program.unit(c);
    let formal = *cu.args.get(k)?;
    if crate::regions::global_shape(cu, formal).as_ref() != Some(&shape) {
        return None;
    }
    let order = in_formal_order(cu, args);
    let known = call_site_known(caller, id, &order);
    let at = AtCall::new(unit, cu, &order);
    let region = |known: &crate::regions::KnownArgs| {
        crate::regions::of_formal(
            caller.program,
            caller.effects,
            caller.regions,
            c,
            k as u32,
            known,
        )
        .ok()
    };
    let cut = |region: &crate::regions::FormalRegion, keep: usize| {
        slab(
            variable,
            sym.span,
            &shape,
            region,
            &|b| at.expr(b, sym.span),
            keep,
        )
    };
    let (reference, r) = cut(&region(&known)?, 1)?;
    // One IF of the callee on a formal decides: each arm's region, as
    // slabs of the same rank from the same element, chosen at run time.
    let split = arms(caller, c, &order, &known).and_then(|(cond, at, other)| {
        let (a, b) = (region(&at)?, region(&other)?);
        let (ra, rb) = (cut(&a, 1)?.1, cut(&b, 1)?.1);
        let keep = ra.dims.len().max(rb.dims.len());
        let ((ea, ra), (eb, rb)) = (cut(&a, keep)?, cut(&b, keep)?);
        let same = print(unit, &ea) == print(unit, &eb);
        same.then(|| ra.or(&rb, &cond, unit).map(|r| (ea, r)))?
    });
    let (reference, r) = split.unwrap_or((reference, r));
    // Every element, as constants: the array is pushed whole as before.
    let int = |e: &Expr| match e.kind {
        ExprKind::Int(v) => Some(v),
        _ => None,
    };
    let full = r.dims.len() == shape.lower.len()
        && r.dims.iter().enumerate().all(|(d, (a, b, st))| {
            (int(a), int(b), int(st))
                == (Some(1), Some(shape.upper[d] - shape.lower[d] + 1), Some(1))
        });
    (!full).then_some((reference, r))
}

/// The part of the caller's array `s` (of constant shape `shape`) in
/// `region` (the callee's region of it, in the same subscripts; bounds
/// turned into the caller's expressions by `conv`), as the element it
/// starts at and a region of rank 3 at most from it: the trailing
/// dimensions touched at one subscript each (`k, bi, bj` of
/// `gt(:, :, k, bi, bj)`) go into the element, the others into the
/// region (at least `keep` leading ones); a region of element offsets
/// (reached through a formal of another shape) is a section of the array
/// from its first element.
fn slab(
    s: SymbolId,
    span: Span,
    shape: &crate::regions::GlobalShape,
    region: &crate::regions::FormalRegion,
    conv: &dyn Fn(&crate::regions::Bound) -> Option<Expr>,
    keep: usize,
) -> Option<(Expr, SavedRegion)> {
    use crate::regions::{add, sub, Bound, DimRegion};
    let rank = shape.lower.len();
    let extent = |k: usize| shape.upper[k] - shape.lower[k] + 1;
    let first = |subs: Vec<Subscript>| Expr {
        kind: ExprKind::ArrayRef { array: s, subs },
        span,
    };
    if region.dims.len() == 1 && rank > 1 {
        // Reached through a formal of another shape: a span of element
        // offsets (1-based) from the array's first element, which holds
        // MITgcm's `gU(1-OLx, 1-OLy, 1, bi, bj)` passed to a formal of
        // rank 3 at level `k` as one slab.
        let (a, b, st) = region.dims[0].triplet();
        let subs = shape
            .lower
            .iter()
            .map(|&l| conv(&Bound::Int(l)).map(Subscript::Index))
            .collect::<Option<Vec<_>>>()?;
        let dims = vec![(conv(&a)?, conv(&b)?, conv(&st)?)];
        let cap = conv(&Bound::Int((0..rank).map(extent).product()))?;
        return Some((
            first(subs),
            SavedRegion {
                extents: Vec::new(),
                dims,
                cap,
            },
        ));
    }
    if region.dims.len() != rank {
        return None;
    }
    // The trailing dimensions touched at one subscript: `k:k`, or `k`
    // clamped into the declared bounds (`max(k, 1):min(k, nr)`), which a
    // conforming reference is in; a dimension of extent 1 (MITgcm's
    // tracer index with one tracer) at its only subscript.
    let point = |k: usize, d: &DimRegion| -> Option<Bound> {
        if shape.lower[k] == shape.upper[k] {
            return Some(Bound::Int(shape.lower[k]));
        }
        let DimRegion::Span(i) = d else {
            return None;
        };
        if i.lo == i.hi {
            return Some(i.lo.clone());
        }
        let (Bound::Max(lo), Bound::Min(hi)) = (&i.lo, &i.hi) else {
            return None;
        };
        let variable = |v: &[Bound]| -> Option<Bound> {
            let mut rest = v.iter().filter(|b| !matches!(b, Bound::Int(_)));
            let x = rest.next()?.clone();
            rest.next().is_none().then_some(x)
        };
        let x = variable(lo)?;
        (variable(hi)? == x).then_some(x)
    };
    let fixed = region
        .dims
        .iter()
        .enumerate()
        .rev()
        .take_while(|(k, d)| point(*k, d).is_some())
        .count();
    let m = (rank - fixed).max(1).max(keep);
    if m > 3 {
        return None;
    }
    let mut subs = Vec::with_capacity(region.dims.len());
    for (k, d) in region.dims.iter().enumerate() {
        let e = match k < m {
            true => conv(&Bound::Int(shape.lower[k]))?,
            false => conv(&point(k, d)?)?,
        };
        subs.push(Subscript::Index(e));
    }
    let mut dims = Vec::with_capacity(m.min(region.dims.len()));
    for (k, d) in region.dims.iter().take(m).enumerate() {
        let shift = |b: Bound| add(sub(b, Bound::Int(shape.lower[k])), Bound::Int(1));
        let (a, b, st) = d.triplet();
        dims.push((conv(&shift(a))?, conv(&shift(b))?, conv(&st)?));
    }
    let extents = (0..m - 1)
        .map(|k| conv(&Bound::Int(extent(k))))
        .collect::<Option<Vec<_>>>()?;
    // Every element of the slab the region lies in is inside the array.
    let cap = conv(&Bound::Int((0..m).map(extent).product()))?;
    Some((first(subs), SavedRegion { extents, dims, cap }))
}

/// A callee's integer scalar formals as bounds over the caller's
/// expressions at one call: a region's bounds in the caller's terms.
struct AtCall {
    atoms: Vec<Expr>,
    by_formal: BTreeMap<u32, crate::regions::Bound>,
}

impl AtCall {
    fn new(unit: &Unit, callee: &Unit, order: &[Option<&Arg>]) -> AtCall {
        let mut atoms: Vec<Expr> = Vec::new();
        let mut by_formal = BTreeMap::new();
        for (j, a) in order.iter().enumerate() {
            let (Some(a), Some(&formal)) = (a, callee.args.get(j)) else {
                continue;
            };
            let fs = callee.symbol(formal);
            if fs.ty.base == BaseType::Integer && fs.rank() == 0 {
                by_formal.insert(
                    j as u32,
                    crate::regions::from_expr(unit, &a.value, &mut atoms),
                );
            }
        }
        AtCall { atoms, by_formal }
    }

    /// Bound `b` of the callee as an expression of the caller.
    fn expr(&self, b: &crate::regions::Bound, span: Span) -> Option<Expr> {
        let mine = crate::regions::rebase(b, &|j| self.by_formal.get(&j).cloned())?;
        crate::regions::to_expr(&mine, &|i| self.atoms.get(i as usize).cloned(), span)
    }
}

/// How many elements of `variable`, in storage order, there are from the
/// element `value` to its end (`size(a) - offset`); `None` for an
/// assumed-size array, whose end is unknown, or another reference.
fn elements_from(unit: &Unit, value: &Expr, variable: SymbolId) -> Option<Expr> {
    let sym = unit.symbol(variable);
    if sym.dims.iter().any(|d| d.kind == DimKind::AssumedSize) {
        return None;
    }
    let ExprKind::ArrayRef { array, subs } = &value.kind else {
        return None;
    };
    if *array != variable || subs.len() != sym.rank() {
        return None;
    }
    let span = value.span;
    let int = |k: i64| Expr {
        kind: ExprKind::Int(k),
        span,
    };
    let dim =
        |name: &str, d: usize| intrinsic(name, vec![var_ref(variable, span), int(d as i64)], span);
    // offset = Σ (sᵢ - lbound(a, i)) · Π_{j<i} size(a, j)
    let mut offset: Option<Expr> = None;
    let mut stride: Option<Expr> = None;
    for (i, sub) in subs.iter().enumerate() {
        let Subscript::Index(e) = sub else {
            return None;
        };
        let d = i + 1;
        let mut term = binary(BinaryOp::Sub, e.clone(), dim("lbound", d), span);
        if let Some(st) = &stride {
            term = binary(BinaryOp::Mul, term, st.clone(), span);
        }
        offset = Some(match offset {
            Some(o) => binary(BinaryOp::Add, o, term, span),
            None => term,
        });
        stride = Some(match stride {
            Some(st) => binary(BinaryOp::Mul, st, dim("size", d), span),
            None => dim("size", d),
        });
    }
    let size = intrinsic("size", vec![var_ref(variable, span)], span);
    Some(binary(BinaryOp::Sub, size, offset?, span))
}

fn intrinsic(name: &str, args: Vec<Expr>, span: Span) -> Expr {
    Expr {
        kind: ExprKind::Intrinsic {
            name: name.into(),
            args: args
                .into_iter()
                .map(|value| Arg {
                    keyword: None,
                    value,
                })
                .collect(),
        },
        span,
    }
}

pub(crate) fn binary(op: BinaryOp, lhs: Expr, rhs: Expr, span: Span) -> Expr {
    Expr {
        kind: ExprKind::Binary {
            op,
            lhs: Box::new(lhs),
            rhs: Box::new(rhs),
        },
        span,
    }
}

/// The reference a variable actual stands for, for saving: the actual
/// itself when the formal is a scalar or the actual a section, else the
/// whole array (sequence association); as (variable, whole, reference).
fn actual_item(a: &Expr, formal_rank: usize) -> Option<(SymbolId, bool, Expr)> {
    match &a.kind {
        ExprKind::Var(v) => Some((*v, true, a.clone())),
        ExprKind::ArrayRef { array, subs } => {
            let section = subs.iter().any(|s| matches!(s, Subscript::Range { .. }));
            if formal_rank == 0 || section {
                Some((*array, false, a.clone()))
            } else {
                Some((*array, true, var_ref(*array, a.span)))
            }
        }
        // A component is saved as itself.
        ExprKind::Component { .. } => dfort_ir::dp::target(a).map(|(v, _)| (v, false, a.clone())),
        _ => None,
    }
}

/// The variable references an expression reads, and the index variables
/// of its array references, as snapshot items.
fn leaf_items(unit: &Unit, e: &Expr, out: &mut Vec<Saved>) {
    // A component reference is one item (its subscripts' variables
    // others); what it is a component of is not read whole.
    if let ExprKind::Component { base, subs, .. } = &e.kind {
        if let Some((v, _)) = dfort_ir::dp::target(e) {
            out.push(Saved::plain(v, false, e.clone(), Why::Snapshot));
        }
        let mut inner = base;
        while let ExprKind::Component { base, subs, .. } = &inner.kind {
            for x in dfort_ir::subscript_exprs(subs) {
                leaf_items(unit, x, out);
            }
            inner = base;
        }
        if let ExprKind::ArrayRef { subs, .. } = &inner.kind {
            for x in dfort_ir::subscript_exprs(subs) {
                leaf_items(unit, x, out);
            }
        }
        for x in dfort_ir::subscript_exprs(subs) {
            leaf_items(unit, x, out);
        }
        return;
    }
    match &e.kind {
        ExprKind::Var(v) if is_variable(unit, *v) => {
            out.push(Saved::plain(*v, true, e.clone(), Why::Snapshot))
        }
        ExprKind::ArrayRef { array, subs } if is_variable(unit, *array) => {
            out.push(Saved::plain(*array, false, e.clone(), Why::Snapshot));
            for x in dfort_ir::subscript_exprs(subs) {
                leaf_items(unit, x, out);
            }
        }
        _ => {
            for x in e.children() {
                leaf_items(unit, x, out);
            }
        }
    }
}

/// Where a saved value goes in a list of pushes: integer scalars last,
/// integer array elements before them, the rest first — so that values
/// that may subscript others pop before what they subscript.
pub fn subscript_rank(unit: &Unit, s: SymbolId, whole: bool) -> u8 {
    let sym = unit.symbol(s);
    match (sym.ty.base, sym.rank() == 0 && whole) {
        (BaseType::Integer, true) => 2,
        (BaseType::Integer, false) => 1,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decisions::Recording;

    use crate::test_support::program;

    /// What a checkpoint list saves: (reference, why).
    fn saved(unit: &Unit, list: &[Saved]) -> Vec<(String, Why)> {
        list.iter().map(|s| (s.text(unit), s.why)).collect()
    }

    const SRC: &str = "subroutine top(x, a, y, n)
  implicit none
  integer, intent(in) :: n
  real(8), intent(in) :: x(n)
  real(8), intent(inout) :: a(n)
  real(8), intent(out) :: y
  integer :: i, j, k
  real(8) :: t
  k = 2
  j = 1
  t = x(1)
  y = a(j)*a(k)*t
  call mul(a(k), t, j)
  call ext(k)
  y = y + x(k)
  do i = 1, n
    call mul(a(i), t, j)
  end do
  y = y + a(1)
end subroutine top

subroutine mul(u, v, m)
  implicit none
  real(8), intent(inout) :: u
  real(8), intent(in) :: v
  integer, intent(out) :: m
  real(8) :: w(1)
  u = u*v
  m = 3
end subroutine mul
";

    #[test]
    fn a_call_saves_what_it_overwrites_what_the_callee_adjoint_reads_and_indices() {
        let p = program(SRC);
        let top = p.units.iter().find(|u| u.name == "top").expect("top");
        let request = crate::facts::Request {
            roots: vec![crate::roots::RootSpec {
                name: "top".into(),
                independent: vec!["x".into(), "a".into()],
                dependent: vec!["y".into()],
                after: None,
            }],
            others: false,
            recording: Recording::Inversion,
            preaccumulate: Default::default(),
            supplied: Vec::new(),
        };
        let facts = crate::facts::analyse(&p, &request, None);
        let top = facts.unit(top.id).expect("analysed");
        let calls = &facts.decisions_of(top.id).expect("decisions").calls;
        let at = |line: usize| {
            let text = SRC.lines().nth(line - 1).expect("line").trim();
            let id = top
                .stmts
                .iter()
                .find(|s| {
                    matches!(s.kind, StmtKind::Call { .. }) && {
                        let r = s.span.range;
                        SRC[r.start as usize..r.end as usize].trim() == text
                            && SRC[..r.start as usize].lines().count() == line
                    }
                })
                .map(|s| s.id)
                .expect("the call");
            calls.get(&id).expect("a checkpoint")
        };
        assert_eq!(calls.len(), 3);

        // (`mul`'s local array keeps its calls in joint mode,
        // [`crate::split`].)
        // `call mul(a(k), t, j)`: `mul` has a derivative routine, which
        // restores `a(k)` itself; the caller records `j`, which the call
        // overwrites and the adjoint of `y = a(j)*a(k)*t` (run after the
        // call's) needs. The snapshot holds what the adjoint of `mul`
        // reads and something may change later (`a(k)`; not `t`, which
        // nothing writes again), `j` again, and the index `k`, which
        // `call ext(k)` may change; integers last.
        let first = at(13);
        assert!(first.callee.is_some() && first.callee_routine);
        assert_eq!(saved(top, &first.records), [("j".into(), Why::AroundCall)]);
        assert_eq!(
            saved(top, &first.snapshot),
            [
                ("a(k)".into(), Why::Snapshot),
                ("j".into(), Why::AroundCall),
                ("k".into(), Why::Index)
            ]
        );
        assert!(first.records[0].whole && !first.snapshot[0].whole);
        assert!(first.hidden.is_empty() && first.problems.is_empty());

        // `call ext(k)`: no source; the caller records the actual the
        // call may overwrite that the adjoint of `y = a(j)*a(k)*t` needs,
        // and takes no snapshot.
        let ext = at(14);
        assert!(ext.callee.is_none() && !ext.callee_routine);
        assert_eq!(saved(top, &ext.records), [("k".into(), Why::AroundCall)]);
        assert!(ext.snapshot.is_empty());

        // Inside the replayed loop: its index `i` is not saved (the
        // reverse sweep sets it).
        let in_loop = at(17);
        assert_eq!(
            saved(top, &in_loop.records),
            [("j".into(), Why::AroundCall)]
        );
        assert_eq!(
            saved(top, &in_loop.snapshot),
            [
                ("a(i)".into(), Why::Snapshot),
                ("j".into(), Why::AroundCall)
            ]
        );
    }

    /// A callee whose adjoint the user supplies ([`crate::supplied`]):
    /// the snapshot holds everything it reads that anything may change,
    /// not only what a generated adjoint would read, and the call does not
    /// run split.
    #[test]
    fn a_supplied_callee_gets_everything_it_reads_in_its_snapshot() {
        let src = "subroutine top(x, y)
  implicit none
  real(8), intent(inout) :: x(2)
  real(8), intent(out) :: y
  call lin(x(1), x(2))
  x(2) = 0
  y = x(1)
end subroutine top

subroutine lin(u, v)
  implicit none
  real(8), intent(inout) :: u
  real(8), intent(in) :: v
  u = u + 2*v
end subroutine lin
";
        let p = program(src);
        let snapshot = |supplied: Vec<String>| {
            let request = crate::facts::Request {
                roots: vec![crate::roots::RootSpec {
                    name: "top".into(),
                    independent: vec!["x".into()],
                    dependent: vec!["y".into(), "x".into()],
                    after: None,
                }],
                others: false,
                recording: Recording::Inversion,
                preaccumulate: Default::default(),
                supplied,
            };
            let facts = crate::facts::analyse(&p, &request, None);
            let top = p.units.iter().find(|u| u.name == "top").expect("top");
            let lin = p.units.iter().find(|u| u.name == "lin").expect("lin");
            assert_eq!(facts.is_supplied(lin.id), !request.supplied.is_empty());
            let calls = &facts.decisions_of(top.id).expect("decisions").calls;
            let call = calls.values().next().expect("the call");
            let split = facts.tbr_of(top.id).expect("tbr").split.len();
            (saved(top, &call.snapshot), split)
        };
        // Generated: `lin_b` reads nothing (the callee is linear).
        let (generated, _) = snapshot(Vec::new());
        assert!(
            generated.iter().all(|(_, w)| *w != Why::Snapshot),
            "{generated:?}"
        );
        // Supplied: `u` (which the call changes) and `v` (which the
        // statement after it changes) are restored for the user's `lin_b`.
        let (supplied, split) = snapshot(vec!["lin".into()]);
        assert_eq!(
            supplied,
            [
                ("x(1)".into(), Why::Snapshot),
                ("x(2)".into(), Why::Snapshot)
            ]
        );
        assert_eq!(split, 0);
    }

    /// A COMMON block the caller does not declare: the generator brings
    /// it in, and of it saves the level of the tile the call touches (the
    /// trailing dimension of extent 1, which `lev` runs through to `nt`,
    /// counts as touched at its one subscript).
    #[test]
    fn a_global_the_caller_does_not_declare_is_saved_as_the_region_the_call_touches() {
        let src = "subroutine lev(k, bi, dt, nt)
  implicit none
  integer, intent(in) :: k, bi, nt
  real(8), intent(in) :: dt
  real(8) :: q(0:5, 3, 2, 1)
  common /st/ q
  integer :: i, j
  do j = 1, nt
    do i = 1, 4
      q(i, k, bi, j) = q(i, k, bi, j)*sin(q(i + 1, k, bi, j))*dt
    end do
  end do
end subroutine lev

subroutine tile(bi, dt, nt)
  implicit none
  integer, intent(in) :: bi, nt
  real(8), intent(in) :: dt
  integer :: k
  do k = 1, 3
    call lev(k, bi, dt, nt)
  end do
end subroutine tile

subroutine top(q0, y)
  implicit none
  real(8), intent(in) :: q0
  real(8), intent(out) :: y
  real(8) :: q(0:5, 3, 2, 1)
  common /st/ q
  q = q0
  call tile(1, 0.5d0, 1)
  call tile(2, 0.5d0, 1)
  y = sum(q)
end subroutine top
";
        let p = program(src);
        let request = crate::test_support::request("top", &["q0"], &["y"]);
        let facts = crate::facts::analyse(&p, &request, None);
        let tile = p.units.iter().find(|u| u.name == "tile").expect("tile");
        let calls = &facts.decisions_of(tile.id).expect("decisions").calls;
        let call = calls.values().next().expect("the call");
        assert_eq!(call.hidden.len(), 1, "{:?}", call.hidden);
        let region = call.hidden_region(&call.hidden[0]).expect("a region");
        // Elements 1 to 5 of level `k` of tile `bi` (positions 2 to 6
        // from `q(0, k, bi, 1)`); without a region, all of `q`.
        assert_eq!(region.text(tile, "q"), "q(0, k, bi, 1)[2:6]");
    }
}
