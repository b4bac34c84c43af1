//! Refusals decided before any code is written (paper 000 leaves these
//! constructs outside the analyses it describes; dfort says so rather
//! than write a silently wrong derivative): a root that cannot be one,
//! derivatives of variables of modules dfort was not given, globals
//! reached through function references (Dep summaries follow globals
//! through CALLs, not through functions called inside expressions),
//! active variables of derived types that get no derivative type,
//! pointers whose association the derivatives cannot follow, host
//! statement functions used by internal procedures, mixed EQUIVALENCE,
//! state that outlives a call (SAVE'd locals) a derivative would lose;
//! statements with no rule (unsupported constructs, the adjoint's I/O
//! jumps, (de)allocations and associations it does not follow, what its
//! tape cannot hold, the checkpoints' problems); calls of procedures
//! without a derivative routine and actuals a derivative routine cannot
//! take ([`calls`]); function references the derivative code cannot run
//! as calls of their own ([`hoisting`], paper 004 §3); and intrinsic
//! references in a form the intrinsic table has no rule for ([`forms`]).
//!
//! Contract: [`of_root`] lists, for the derivative set of one root
//! ([`crate::derivatives::RootSet`]), every such refusal of the adjoint
//! or of the tangent, each a typed fact with its rule in the registry
//! ([`dfort_syntax::rules`]) and where it is. The generators, `dfort
//! check` and the editor read the list through
//! [`crate::facts::ProgramFacts::refusals`]. What the generators refuse
//! is this list: `tests/tangent.rs` compares the two on every fixture and
//! the fuzzer on every program it draws (a refusal found only while
//! generating is a mismatch).

use crate::decisions::UnitDecisions;
use crate::dep::GlobalKey;
use crate::derivatives::RootSet;
use crate::effects::ProgramEffects;
use crate::interproc::ProgramActivity;
use dfort_ir::dp::differentiable;
use dfort_ir::*;
use dfort_syntax::rules::{self, Rule};

pub(crate) mod calls;
mod forms;
mod hoisting;

/// A construct dfort refuses to differentiate, with where it is
/// and its rule in the registry ([`dfort_syntax::rules`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    pub span: dfort_ir::Span,
    pub rule: &'static Rule,
    pub message: String,
}

impl Refusal {
    pub fn new(span: dfort_ir::Span, reason: impl Into<Reason>) -> Self {
        let Reason { rule, message } = reason.into();
        Refusal {
            span,
            rule,
            message,
        }
    }
}

/// Why something is refused: a rule and its sentence. A bare sentence is
/// the general rule `not-differentiable`; `(rule, sentence)` names a
/// specific one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reason {
    pub rule: &'static Rule,
    pub message: String,
}

impl From<String> for Reason {
    fn from(message: String) -> Self {
        Reason {
            rule: &rules::NOT_DIFFERENTIABLE,
            message,
        }
    }
}

impl From<&str> for Reason {
    fn from(message: &str) -> Self {
        Reason::from(message.to_string())
    }
}

impl<M: Into<String>> From<(&'static Rule, M)> for Reason {
    fn from((rule, message): (&'static Rule, M)) -> Self {
        Reason {
            rule,
            message: message.into(),
        }
    }
}

/// Which derivative a list of refusals is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Derivative {
    Adjoint,
    Tangent,
}

/// Every refusal decided before generating, of the `derivative` of the
/// root of `set`; `decisions` gives the adjoint's decisions for a unit
/// (its reversal, paper 001; what TBR's forward sweep pushes).
pub(crate) fn of_root<'r>(
    program: &Program,
    set: &RootSet,
    activity: &ProgramActivity,
    effects: &ProgramEffects,
    decisions: impl Fn(UnitId) -> Option<&'r UnitDecisions>,
    derivative: Derivative,
) -> Vec<Refusal> {
    let mut out = check(program, set, activity, effects);
    out.extend(statements(program, set, decisions, derivative));
    for &u in &set.units {
        let unit = program.unit(u);
        if let Some(act) = activity.activity[u].as_deref() {
            let routines = calls::Routines::of_set(set, derivative == Derivative::Adjoint);
            out.extend(calls::of_unit(program, &routines, unit, act));
            out.extend(namelist_reads(unit, act));
            out.extend(hoisting::of_unit(program, set, unit, act, derivative));
        }
        out.extend(forms::of_unit(program, set, unit));
    }
    out.extend(match derivative {
        Derivative::Adjoint => saved_state(program, set),
        Derivative::Tangent => saved_state_copies(program, set, effects),
    });
    out
}

/// The refusal of `unit` as the root of a `derivative`: only a
/// subroutine or a function, external or of a module, can be one.
pub(crate) fn root_form(program: &Program, unit: &Unit, derivative: Derivative) -> Option<Refusal> {
    let what = match derivative {
        Derivative::Adjoint => "an adjoint",
        Derivative::Tangent => "a tangent",
    };
    if !matches!(unit.kind, UnitKind::Subroutine | UnitKind::Function) {
        return Some(Refusal::new(
            unit.name_span,
            (
                &rules::ROOT_NOT_SUBROUTINE,
                format!(
                    "`{}` is not a subroutine or a function; only those can be the root of {what}",
                    unit.name
                ),
            ),
        ));
    }
    let host = program.unit(unit.parent?);
    (host.kind != UnitKind::Module).then(|| {
        Refusal::new(
            unit.name_span,
            (
                &rules::INTERNAL_ROOT,
                format!(
                    "`{}` is internal to `{}`; an internal procedure cannot be a root (differentiate its host)",
                    unit.name, host.name
                ),
            ),
        )
    })
}

/// The NAMELIST READs of `unit` that may leave an active member as it
/// was: a member the record does not name keeps its value and its
/// derivative, which the derivatives (resetting it, as for any READ)
/// would lose. Refused where the member is varied before the READ and
/// useful after it; elsewhere resetting its derivative changes nothing.
fn namelist_reads(unit: &Unit, act: &crate::activity::Activity) -> Vec<Refusal> {
    let mut out = Vec::new();
    for (id, st) in unit.stmts.iter_enumerated() {
        let StmtKind::Io {
            writes,
            namelist: true,
            ..
        } = &st.kind
        else {
            continue;
        };
        for w in writes {
            let ExprKind::Var(m) = w.kind else { continue };
            let varied = act.varied_before.get(id).is_some_and(|v| v.contains_id(m));
            if varied && act.useful_after(id, m) {
                let name = &unit.symbol(m).name;
                out.push(Refusal::new(
                    st.span,
                    format!("a NAMELIST READ leaves `{name}` as it was when the record does not name it, and `{name}` is active here: its derivative after the READ cannot be decided"),
                ));
            }
        }
    }
    out
}

/// Every ENTRY point of the program: its name and the unit holding it.
fn entry_points(program: &Program) -> std::collections::HashMap<&str, &str> {
    program
        .all_units()
        .flat_map(|u| u.entries.iter().map(|e| (e.as_str(), u.name.as_str())))
        .collect()
}

/// The calls and function references of `st` to an ENTRY point: the
/// analyses do not follow them (what it reads and writes is unknown), so
/// the derivatives refuse them, active or not.
fn entry_calls(entries: &std::collections::HashMap<&str, &str>, st: &Stmt) -> Vec<Refusal> {
    if entries.is_empty() {
        return Vec::new();
    }
    let mut names: Vec<&str> = Vec::new();
    if let StmtKind::Call { name, .. } = &st.kind {
        names.push(name);
    }
    for e in st.kind.exprs() {
        e.walk(&mut |x| match &x.kind {
            ExprKind::FunctionCall { name, .. } | ExprKind::Apply { name, .. } => names.push(name),
            _ => {}
        });
    }
    names
        .into_iter()
        .filter_map(|n| {
            let host = entries.get(n)?;
            Some(Refusal::new(
                st.span,
                format!("`{n}` is an ENTRY point of `{host}`, which dfort does not follow: a call to it cannot be differentiated"),
            ))
        })
        .collect()
}

/// The statements of the set's units that the derivative has no rule
/// for: constructs the front end keeps as unsupported (both
/// derivatives), and for the adjoint, (de)allocations it does not follow
/// ([`allocations`]) and pointer associations its tape cannot hold
/// ([`untaped_associations`]), I/O with ERR=, END= or EOR= jumps in a
/// unit not reversed by basic blocks (never, as its CFG has the jumps)
/// and the constructs whose reversal the analyses could not decide
/// ([`crate::reversal::Reversal::refusal`]: a DO loop whose bounds change inside it).
fn statements<'r>(
    program: &Program,
    set: &RootSet,
    decisions: impl Fn(UnitId) -> Option<&'r UnitDecisions>,
    derivative: Derivative,
) -> Vec<Refusal> {
    let mut out = Vec::new();
    let entries = entry_points(program);
    for &u in &set.units {
        let unit = program.unit(u);
        for st in unit.stmts.iter() {
            out.extend(entry_calls(&entries, st));
            match &st.kind {
                StmtKind::Unsupported { construct } => out.push(Refusal::new(
                    st.span,
                    format!("{construct} cannot be differentiated"),
                )),
                StmtKind::Allocate { objects, .. } if derivative == Derivative::Adjoint => {
                    out.extend(allocations(program, set, unit, st.span, objects));
                    out.extend(untaped_associations(program, unit, st));
                }
                StmtKind::PointerAssign { .. } | StmtKind::Nullify { .. }
                    if derivative == Derivative::Adjoint =>
                {
                    out.extend(untaped_associations(program, unit, st))
                }
                // A unit with such jumps is reversed by basic blocks
                // (its CFG is unstructured), which follow them.
                StmtKind::Io { branches, .. }
                    if derivative == Derivative::Adjoint
                        && !branches.is_empty()
                        && decisions(u).is_some_and(|d| !d.reversal.by_blocks) =>
                {
                    out.push(Refusal::new(
                        st.span,
                        "I/O statements with ERR=, END= or EOR= jumps are reversed only in units reversed by basic blocks (test IOSTAT= instead)",
                    ))
                }
                // The block such a statement ends is recorded before it
                // runs, with the integers its adjoint reads: none of them
                // may be what the statement defines.
                StmtKind::Io {
                    branches, writes, ..
                } if derivative == Derivative::Adjoint && !branches.is_empty() => {
                    let saved = decisions(u).and_then(|d| {
                        let node = (*unit.cfg.stmt_node.get(st.id)?)?;
                        d.block_saves.get(&node)
                    });
                    let defined = dfort_ir::dp::io_targets(writes);
                    if let Some((v, _)) = defined
                        .iter()
                        .find(|(v, _)| saved.is_some_and(|s| s.contains(v)))
                    {
                        out.push(Refusal::new(
                            st.span,
                            format!(
                                "this I/O statement may jump (ERR=, END=, EOR=) and defines `{}`, which the adjoint of its basic block reads: read it in a statement without jumps",
                                unit.symbol(*v).name
                            ),
                        ))
                    }
                }
                _ => {}
            }
        }
        if derivative == Derivative::Adjoint {
            if let Some(d) = decisions(u) {
                out.extend(untaped_records(program, unit, d));
                out.extend(call_problems(program, set, unit, d));
            }
            let Some(r) = decisions(u).map(|d| &d.reversal) else {
                // A unit of the set the analyses did not reach (a fault
                // of dfort's, said as such).
                out.push(Refusal::new(
                    unit.name_span,
                    (
                        &rules::INTERNAL_ERROR,
                        format!("`{}` was not analysed", unit.name),
                    ),
                ));
                continue;
            };
            for (span, why) in &r.misplaced_marks {
                out.push(Refusal::new(
                    *span,
                    (&rules::BINOMIAL_CHECKPOINT, why.clone()),
                ));
            }
            let mut refused: Vec<(StmtId, (&'static Rule, String))> = r
                .constructs
                .iter()
                .filter_map(|(id, how)| Some((*id, how.refusal()?)))
                .collect();
            refused.sort_by_key(|(id, _)| *id);
            for (id, why) in refused {
                out.push(Refusal::new(unit.stmt(id).span, why));
            }
        }
    }
    out
}

/// The adjoint's refusals of an ALLOCATE or DEALLOCATE of `objects` in
/// `unit`: an object that is no variable, and an allocatable its caller
/// can see (a dummy, a SAVE'd local, a module variable outside the root):
/// the adjoint follows the allocations its callers see only where the
/// root makes them. A pointer's (de)allocation outside the root is
/// `pointer-not-followed` ([`crate::pointers::refusals`]).
fn allocations(
    program: &Program,
    set: &RootSet,
    unit: &Unit,
    span: Span,
    objects: &[Expr],
) -> Vec<Refusal> {
    let mut out = Vec::new();
    for o in objects {
        let pointer = dfort_ir::queries::is_pointer_reference(program, unit, o);
        let Some((s, _)) = dfort_ir::dp::target(o) else {
            out.push(Refusal::new(
                span,
                "only allocatable and pointer variables can be (de)allocated in differentiated code",
            ));
            continue;
        };
        let sym = unit.symbol(s);
        let module_var = dfort_ir::queries::module_var(program, sym).is_some();
        let own = (sym.storage == Storage::Local && !sym.attrs.save && !sym.attrs.initialized)
            || (module_var && unit.id == set.root);
        if !own && !pointer {
            out.push(Refusal::new(span, format!("`{}` is (de)allocated in `{}`, and its caller can see it; the adjoint follows the allocations its callers see only where the root makes them (do it in the root)", dfort_ir::dump::expr(unit, o), unit.name)));
        }
    }
    out
}

/// The adjoint's refusals of the pointer associations statement `st`
/// changes that the forward sweep records
/// ([`dfort_ir::queries::recorded_associations`]) but the tape cannot hold
/// ([`dfort_ir::runtime::pointer_tapeable`]).
fn untaped_associations(program: &Program, unit: &Unit, st: &Stmt) -> Vec<Refusal> {
    dfort_ir::queries::recorded_associations(program, unit, st)
        .into_iter()
        .map(|o| o.without_bounds())
        .filter(|o| !dfort_ir::runtime::pointer_tapeable(program, unit, o))
        .map(|o| {
            let whole = dfort_ir::dump::expr(unit, &o);
            Refusal::new(
                st.span,
                format!("the tape cannot save the association of `{whole}` (pointers to real(8), real(4), integer(4) and complex(8) data of rank 0 to 3, and scalar pointers to derived types of modules, are saved)"),
            )
        })
        .collect()
}

/// The adjoint's refusals of values TBR records (paper 000 §5) that the
/// tape cannot hold ([`dfort_ir::runtime::reference_tape_limit`]): an
/// assignment's target, a READ's items (a variable the list defines in
/// several items, or in an implied DO, is saved whole).
fn untaped_records(program: &Program, unit: &Unit, d: &UnitDecisions) -> Vec<Refusal> {
    let limit = |s: SymbolId, whole: bool, e: &Expr, span: Span| {
        dfort_ir::runtime::reference_tape_limit(program, unit, s, whole, e)
            .map(|l| Refusal::new(span, l.describe(unit, s)))
    };
    let mut out = Vec::new();
    for st in unit.stmts.iter() {
        match &st.kind {
            StmtKind::Assign { lhs, .. } if !d.dead.contains(&st.id) => {
                let Some((t, whole)) = dfort_ir::dp::target(lhs) else {
                    continue;
                };
                if d.recorded(st.id).contains(&t) {
                    out.extend(limit(t, whole, lhs, st.span));
                }
            }
            StmtKind::Io { writes, .. } => {
                let recorded = d.recorded(st.id);
                for (s, whole) in dfort_ir::dp::io_targets(writes) {
                    if !recorded.contains(&s) {
                        continue;
                    }
                    let whole_ref = Expr {
                        kind: ExprKind::Var(s),
                        span: st.span,
                    };
                    let (whole, reference) = match dfort_ir::dp::single_io_item(writes, s) {
                        Some(one) => (whole, one),
                        None => (true, &whole_ref),
                    };
                    out.extend(limit(s, whole, reference, st.span));
                }
            }
            _ => {}
        }
    }
    out
}

/// The adjoint's refusals of the problems of the checkpoints the analyses
/// decided for the calls and function references of `unit` (paper 000
/// §5: what the tape cannot hold around a call, globals the unit cannot
/// name, parts of one variable passed as several actuals), at the call,
/// for the calls whose callee's derivative routine this root writes.
fn call_problems(program: &Program, set: &RootSet, unit: &Unit, d: &UnitDecisions) -> Vec<Refusal> {
    let mut out = Vec::new();
    let mut report =
        |cp: &crate::checkpoint::CallCheckpoint, span: Span, name: &str, callee: Option<UnitId>| {
            let routine = callee.is_some_and(|c| set.units.contains(&c));
            if cp.callee_routine != routine {
                return;
            }
            // Globals the unit does not declare first, as the call's code.
            let (hidden, rest): (Vec<_>, Vec<_>) = cp.problems.iter().partition(|p| p.hidden());
            for p in hidden.into_iter().chain(rest) {
                out.push(Refusal::new(span, p.describe(program, unit, name, callee)));
            }
        };
    for (&id, cp) in &d.calls {
        let st = unit.stmt(id);
        if let StmtKind::Call { name, target, .. } = &st.kind {
            let callee = match target {
                CallTarget::Unit(c) => Some(*c),
                _ => None,
            };
            report(cp, st.span, name, callee);
        }
    }
    for (&id, refs) in &d.references {
        let st = unit.stmt(id);
        for r in refs {
            let Some(cp) = &r.checkpoint else { continue };
            let mut name = program.unit(r.callee).name.clone();
            for e in st.kind.exprs() {
                e.walk(&mut |x| {
                    if let ExprKind::FunctionCall { name: n, .. } = &x.kind {
                        if x.span == r.span {
                            name = n.clone();
                        }
                    }
                });
            }
            report(cp, r.span, &name, Some(r.callee));
        }
    }
    out
}

/// Every refusal of this module for the root's derivative set.
fn check(
    program: &Program,
    diff: &RootSet,
    activity: &ProgramActivity,
    effects: &ProgramEffects,
) -> Vec<Refusal> {
    let mut out = shared_globals(program, diff);
    out.extend(unfollowed_pointers(program, diff));
    out.extend(globals_through_functions(program, diff, effects));
    out.extend(active_derived_types(program, diff, activity));
    out.extend(host_statement_functions(program, diff));
    out.extend(mixed_equivalences(program, diff));
    out
}

/// The adjoint's refusals of state that outlives a call
/// ([`crate::saved_state`]): the SAVE'd locals the adjoint shares between
/// its routines must be declarable in a module of their own (a scalar or
/// an explicit-shape array of an intrinsic type, not allocatable, a
/// pointer, a target, EQUIVALENCEd or in a NAMELIST; a DATA statement
/// that gives it values gives values to no other variable), and their
/// procedures and the procedures copied for them must be external or
/// module procedures without internal procedures (a copy is written
/// outside the original's host).
fn saved_state(program: &Program, diff: &RootSet) -> Vec<Refusal> {
    let state = &diff.saved_state;
    let mut out = Vec::new();
    let mut refused_owners = Vec::new();
    for &(u, s) in &state.locals {
        let unit = program.unit(u);
        let sym = unit.symbol(s);
        let a = &sym.attrs;
        let why = if !copyable(program, unit) {
            Some(format!(
                "`{}` is {}, and dfort keeps such state only for external and module procedures",
                unit.name,
                procedure_kind(program, unit)
            ))
        } else if a.allocatable || a.pointer || a.target {
            Some("the adjoint shares it between its routines, and dfort does not share allocatable, pointer or target state".into())
        } else if sym.ty.base == BaseType::Derived || sym.ty.base == BaseType::Character {
            Some(format!(
                "the adjoint shares it between its routines, and dfort shares only numeric and logical state (this is {})",
                dfort_ir::dump::type_name(&sym.ty)
            ))
        } else if !sym.dims.iter().all(|d| d.kind == DimKind::Explicit) {
            Some("the adjoint shares it between its routines, and dfort shares only scalars and explicit-shape arrays".into())
        } else if unit.equivalences.iter().any(|e| e.contains(&s))
            || unit.namelists.iter().any(|n| n.members.contains(&s))
        {
            Some("the adjoint shares it between its routines, and it is EQUIVALENCEd or in a NAMELIST group".into())
        } else {
            data_with_others(unit, s, &state.locals).map(|other| {
                format!(
                    "the adjoint shares it between its routines, and a DATA statement gives values to it and to `{other}`, which stays the procedure's own"
                )
            })
        };
        if let Some(why) = why {
            out.push(saved_state_refusal(unit, s, why));
            refused_owners.push(u);
        }
    }
    // A loop checkpointed with binomial-ckp runs its steps again from
    // snapshots that hold none of this state.
    for &u in &diff.units {
        let unit = program.unit(u);
        for m in crate::binomial::marks(unit) {
            let Some(id) = m.stmt else { continue };
            let mut inside = Vec::new();
            dfort_ir::queries::nested_statements(unit, &[id], &mut inside);
            let changes = inside.iter().find_map(|&st| {
                dfort_ir::queries::called_units(&unit.stmt(st).kind)
                    .into_iter()
                    .find(|c| state.is_copied(*c))
            });
            if let Some(c) = changes {
                out.push(Refusal::new(
                    unit.stmt(id).span,
                    (
                        &rules::SAVED_STATE,
                        format!(
                            "this loop is checkpointed with binomial-ckp, and `{}` changes SAVE'd state inside it, which its snapshots do not hold (make the state a module variable)",
                            program.unit(c).name
                        ),
                    ),
                ));
            }
        }
    }
    // (A procedure refused at its own SAVE'd local is not refused again.)
    for &c in &state.copied {
        let unit = program.unit(c);
        if copyable(program, unit) || refused_owners.contains(&c) {
            continue;
        }
        let changed: Vec<String> = state
            .locals
            .iter()
            .map(|&(u, s)| {
                format!(
                    "`{}` of `{}`",
                    program.unit(u).symbol(s).name,
                    program.unit(u).name
                )
            })
            .collect();
        out.push(Refusal::new(
            unit.name_span,
            (
                &rules::SAVED_STATE,
                format!(
                    "`{}` changes SAVE'd state ({}): the adjoint runs a copy of it that shares that state, and dfort writes copies only of external and module procedures without internal procedures (`{}` is {})",
                    unit.name,
                    changed.join(", "),
                    unit.name,
                    procedure_kind(program, unit)
                ),
            ),
        ));
    }
    out
}

/// Whether the adjoint can write a copy of `unit` and share its SAVE'd
/// state ([`saved_state`]).
fn copyable(program: &Program, unit: &Unit) -> bool {
    let host_ok = match unit.parent {
        None => true,
        Some(p) => program.unit(p).kind == UnitKind::Module,
    };
    host_ok && unit.children.is_empty() && !(unit.parent.is_none() && needs_interface(unit))
}

/// Whether calling external procedure `unit` needs an explicit interface
/// (which the callers of its copy would not have).
fn needs_interface(unit: &Unit) -> bool {
    let special = |s: &Symbol| {
        let a = &s.attrs;
        a.optional
            || a.allocatable
            || a.pointer
            || a.target
            || s.dims.iter().any(|d| d.kind == DimKind::AssumedShape)
    };
    unit.args.iter().any(|a| special(unit.symbol(*a)))
        || unit
            .result
            .is_some_and(|r| special(unit.symbol(r)) || unit.symbol(r).rank() > 0)
}

fn procedure_kind(program: &Program, unit: &Unit) -> &'static str {
    match unit.parent {
        Some(p) if program.unit(p).kind != UnitKind::Module => "an internal procedure",
        _ if !unit.children.is_empty() => "a procedure with internal procedures",
        None if needs_interface(unit) => {
            "an external procedure whose calls need an explicit interface"
        }
        _ => "a procedure",
    }
}

/// Another variable of `unit` than the shared SAVE'd locals `shared` to
/// which a DATA statement that initialises `s` gives values.
fn data_with_others(
    unit: &Unit,
    s: SymbolId,
    shared: &std::collections::BTreeSet<(UnitId, SymbolId)>,
) -> Option<String> {
    let name = &unit.symbol(s).name;
    for line in &unit.data {
        let words = dfort_ir::queries::data_statement_names(line);
        if !words.iter().any(|w| w == name) {
            continue;
        }
        for w in &words {
            let Some(o) = unit.symbols.iter_enumerated().find(|(_, x)| &x.name == w) else {
                continue;
            };
            if !o.1.attrs.parameter && !shared.contains(&(unit.id, o.0)) {
                return Some(w.clone());
            }
        }
    }
    None
}

/// The tangent's refusals of state that outlives a call. A procedure
/// with a tangent routine keeps its own copy of its SAVE'd locals in it,
/// as the original does; the tangent calls that routine wherever a CALL
/// or an assignment's right-hand side (hoisted: [`DiffSet::writers`])
/// reaches a procedure that changes such a copy. Any other reference to
/// one — from code that runs as the original, or in a condition, a
/// bound, an actual argument, a WHERE — would run the original and its
/// copy, and the two would part: refused there.
fn saved_state_copies(program: &Program, diff: &RootSet, effects: &ProgramEffects) -> Vec<Refusal> {
    // The SAVE'd locals with a copy in a tangent routine that changes them.
    let copied = |k: &GlobalKey| match k {
        GlobalKey::Shared { unit, symbol } => {
            dfort_ir::queries::saved_local(program.unit(*unit), *symbol)
                && diff.units.contains(unit)
                && effects[*unit].written_globals.contains(k)
        }
        GlobalKey::Common { .. } => false,
    };
    let mut out = Vec::new();
    let reached = crate::saved_state::reached_from(program, diff.root);
    for site in &program.call_graph.sites {
        let dfort_ir::callgraph::Callee::Unit(c) = site.callee else {
            continue;
        };
        if !reached.contains(&site.caller) {
            continue;
        }
        let Some(k) = effects[c].written_globals.iter().find(|k| copied(k)) else {
            continue;
        };
        let caller = program.unit(site.caller);
        let runs_tangent = diff.units.contains(&site.caller)
            && diff.units.contains(&c)
            && (!site.function || in_assignment(caller, site.stmt, site.span));
        if runs_tangent {
            continue;
        }
        let (owner, name) = match k {
            GlobalKey::Shared { unit, symbol } => {
                let o = program.unit(*unit);
                (o, &o.symbol(*symbol).name)
            }
            GlobalKey::Common { .. } => continue,
        };
        out.push(Refusal::new(
            site.span,
            (
                &rules::SAVED_STATE,
                format!(
                    "`{}` changes `{name}`, a SAVE'd local of `{}` whose copy the tangent keeps in `{}_d`; this reference runs the original `{}`, with the original's copy, and the two would part (call it from an assignment's right-hand side or a CALL in differentiated code, or make `{name}` an argument or a module variable)",
                    site.name, owner.name, owner.name, site.name
                ),
            ),
        ));
    }
    out
}

/// Whether the function reference at `span` is in the right-hand side of
/// assignment `stmt`, outside WHERE (where the tangent hoists it).
fn in_assignment(unit: &Unit, stmt: StmtId, span: Span) -> bool {
    let StmtKind::Assign { rhs, .. } = &unit.stmt(stmt).kind else {
        return false;
    };
    if where_bodies(unit).contains(&stmt) {
        return false;
    }
    let mut found = false;
    rhs.walk(&mut |x| found |= matches!(x.kind, ExprKind::FunctionCall { .. }) && x.span == span);
    found
}

fn saved_state_refusal(unit: &Unit, s: SymbolId, why: String) -> Refusal {
    let sym = unit.symbol(s);
    Refusal::new(
        sym.span,
        (
            &rules::SAVED_STATE,
            format!(
                "`{}` is a SAVE'd local of `{}`, which changes it: its value carries from one call to the next, and {why} (pass it as an argument, or make it a module variable)",
                sym.name, unit.name
            ),
        ),
    )
}

/// EQUIVALENCE sets in which a member with a derivative shares memory
/// with one that cannot have the same derivative (another type or kind):
/// writing the one changes the other's bits, which no derivative follows.
fn mixed_equivalences(program: &Program, diff: &RootSet) -> Vec<Refusal> {
    let mut out = Vec::new();
    for &u in &diff.units {
        let unit = program.unit(u);
        for set in &unit.equivalences {
            let Some(&with) = set.iter().find(|s| diff.with_d[u].contains_id(**s)) else {
                continue;
            };
            let ty = &unit.symbol(with).ty;
            let other = set.iter().find(|s| {
                let t = &unit.symbol(**s).ty;
                !diff.with_d[u].contains_id(**s) || t.base != ty.base || t.kind != ty.kind
            });
            if let Some(&o) = other {
                out.push(Refusal::new(
                    unit.symbol(with).span,
                    (
                        &rules::NOT_DIFFERENTIABLE,
                        format!(
                            "`{}` is active and EQUIVALENCEd with `{}` ({}), whose writes change its bits; no derivative follows that",
                            unit.symbol(with).name,
                            unit.symbol(o).name,
                            dfort_ir::dump::type_name(&unit.symbol(o).ty)
                        ),
                    ),
                ));
            }
        }
    }
    out
}

/// References from internal procedures to their host's statement
/// functions: the IR sees an unknown external function there, and the
/// derivatives inline statement functions only within their own unit.
fn host_statement_functions(program: &Program, diff: &RootSet) -> Vec<Refusal> {
    let mut out = Vec::new();
    for &u in &diff.units {
        let host = program.unit(u);
        if host.stmt_functions.is_empty() {
            continue;
        }
        let names: Vec<&str> = host
            .stmt_functions
            .iter()
            .map(|sf| host.symbol(sf.name).name.as_str())
            .collect();
        for &c in &host.children {
            let child = program.unit(c);
            for st in &child.stmts {
                for e in st.kind.exprs() {
                    e.walk(&mut |x| {
                        if let ExprKind::FunctionCall {
                            name,
                            target: CallTarget::External | CallTarget::Unresolved,
                            ..
                        } = &x.kind
                        {
                            if names.contains(&name.as_str()) {
                                out.push(Refusal::new(
                                    x.span,
                                    (
                                        &rules::HOST_STATEMENT_FUNCTION,
                                        format!(
                                            "`{name}` is a statement function of `{}`; internal procedures that use their host's statement functions are not differentiated yet (define it in `{}` too)",
                                            host.name, child.name
                                        ),
                                    ),
                                ));
                            }
                        }
                    });
                }
            }
        }
    }
    out
}

/// Active variables of a derived type that gets no derivative type
/// ([`Program::derivative_type`] says why), and function results of
/// derived type, which the generators do not differentiate yet.
fn active_derived_types(
    program: &Program,
    diff: &RootSet,
    activity: &ProgramActivity,
) -> Vec<Refusal> {
    let mut out = Vec::new();
    for &u in &diff.units {
        let unit = program.unit(u);
        let Some(act) = &activity.activity[u] else {
            continue;
        };
        for i in act.active_anywhere().ids() {
            let Some(sym) = unit.symbols.get(i) else {
                continue;
            };
            if sym.ty.base != BaseType::Derived {
                continue;
            }
            let why = match program.derivative_type_of(unit, &sym.ty) {
                Some(DerivativeType::Unsupported(why)) => why,
                Some(_)
                    if (matches!(sym.storage, Storage::Common { .. })
                        || unit.equivalences.iter().any(|e| e.contains(&i)))
                        && program
                            .type_of(unit, &sym.ty)
                            .is_some_and(|(_, def)| def.sequence) =>
                {
                    "it is a sequence type in COMMON or EQUIVALENCE, whose derivatives dfort does not lay out yet".into()
                }
                Some(_) => continue,
                None => "its type's definition is not among the files given to dfort".into(),
            };
            out.push(Refusal::new(
                sym.span,
                (
                    &rules::ACTIVE_DERIVED_TYPE,
                    format!(
                        "`{}` ({}) is active in `{}`; {why}",
                        sym.name,
                        dfort_ir::dump::type_name(&sym.ty),
                        unit.name
                    ),
                ),
            ));
        }
    }
    out
}

/// Active variables whose derivative cannot be declared where every
/// routine sees it: variables of modules dfort was not given.
fn shared_globals(program: &Program, diff: &RootSet) -> Vec<Refusal> {
    let mut out = Vec::new();
    for &u in &diff.units {
        let unit = program.unit(u);
        for i in diff.with_d[u].ids() {
            let sym = unit.symbol(i);
            let what = match sym.storage {
                Storage::UnknownModule { .. } => "variable of a module dfort was not given",
                _ => continue,
            };
            out.push(Refusal::new(
                unit.name_span,
                (
                    &rules::ACTIVE_UNKNOWN_MODULE_VARIABLE,
                    format!(
                        "`{}` uses the active {what} `{}`; its derivative cannot be shared",
                        unit.name, sym.name
                    ),
                ),
            ));
        }
    }
    out
}

/// What the derivatives cannot follow of the pointers of every unit the
/// root reaches ([`crate::pointers::refusals`]; a passive-looking callee
/// may change active data through one).
fn unfollowed_pointers(program: &Program, diff: &RootSet) -> Vec<Refusal> {
    let mut out = Vec::new();
    for u in crate::saved_state::reached_from(program, diff.root) {
        for (span, why) in crate::pointers::refusals(program, program.unit(u), u == diff.root) {
            out.push(Refusal::new(span, (&rules::POINTER_NOT_FOLLOWED, why)));
        }
    }
    out
}

/// Function references (in every unit the root reaches, not only those
/// of the set: activity does not see a global a function reads, so the
/// unit holding the reference may look passive) whose callee reads or
/// writes a real global that the root's code may change.
fn globals_through_functions(
    program: &Program,
    diff: &RootSet,
    effects: &ProgramEffects,
) -> Vec<Refusal> {
    let mut out = Vec::new();
    let changed = &effects[diff.root].written_globals;
    for u in crate::saved_state::reached_from(program, diff.root) {
        let unit = program.unit(u);
        let in_where = where_bodies(unit);
        for st in &unit.stmts {
            // The references of an assignment's right-hand side run as
            // calls (their Dep, TBR and effects are the callee's), except
            // under a WHERE mask.
            let followed: &[&Expr] = match &st.kind {
                StmtKind::Assign { rhs, .. } if !in_where.contains(&st.id) => &[rhs],
                _ => &[],
            };
            // An IF's conditions and a SELECT CASE's selector run in the
            // forward sweep only (the arm taken is pushed, never
            // evaluated again) and carry no derivative: a function there
            // may read what the root changes (MITgcm's
            // `IF (DIAGNOSTICS_IS_ON(name, myThid))`), but not write it.
            let branch: Vec<&Expr> = match &st.kind {
                StmtKind::If { arms, .. } => arms.iter().map(|a| &a.cond).collect(),
                StmtKind::SelectCase { selector, .. } => vec![selector],
                _ => Vec::new(),
            };
            for e in st.kind.exprs() {
                if followed.iter().any(|f| std::ptr::eq(*f, e)) {
                    continue;
                }
                let reads_only = branch.iter().any(|b| std::ptr::eq(*b, e));
                e.walk(&mut |x| {
                    let ExprKind::FunctionCall {
                        name,
                        target: CallTarget::Unit(c),
                        ..
                    } = &x.kind
                    else {
                        return;
                    };
                    let fx = &effects[*c];
                    let callee = program.unit(*c);
                    let writes_real_formal = fx.written_formals.iter().any(|k| {
                        callee
                            .args
                            .get(*k as usize)
                            .is_some_and(|f| differentiable(callee, *f))
                    });
                    if writes_real_formal {
                        out.push(Refusal::new(
                            x.span,
                            (
                                &rules::FUNCTION_SIDE_EFFECT,
                                format!(
                                    "the function `{name}` changes one of its real arguments; such side effects are followed only where it is referenced in the right-hand side of an assignment outside WHERE (assign its value to a variable first)"
                                ),
                            ),
                        ));
                        return;
                    }
                    let read = if reads_only { None } else { Some(&fx.read_globals) };
                    let hit = read
                        .into_iter()
                        .flatten()
                        .chain(&fx.written_globals)
                        .find(|k| changed.contains(*k) && real_global(program, k));
                    if let Some(k) = hit {
                        out.push(Refusal::new(
                            x.span,
                            (
                                &rules::GLOBAL_THROUGH_FUNCTION,
                                format!(
                                    "the function `{name}` reaches {}, which this code changes; derivatives through the globals of functions are followed only where they are referenced in the right-hand side of an assignment outside WHERE (assign its value to a variable first)",
                                    k.describe(program)
                                ),
                            ),
                        ));
                    }
                });
            }
        }
    }
    out
}

/// Visits `e` and, where `visit` says so (returns true), the
/// subexpressions a derivative flows through below it: operands, the
/// arguments of intrinsics with a derivative and of function
/// references, array constructors' items; never subscripts.
fn on_derivative_path(e: &Expr, visit: &mut dyn FnMut(&Expr) -> bool) {
    if !visit(e) {
        return;
    }
    match &e.kind {
        ExprKind::Unary { operand, .. } => on_derivative_path(operand, visit),
        ExprKind::Binary { lhs, rhs, .. } => {
            on_derivative_path(lhs, visit);
            on_derivative_path(rhs, visit);
        }
        ExprKind::Intrinsic { name, args }
            if !dfort_ir::intrinsics::has_non_differentiable_result(name) =>
        {
            for a in args {
                on_derivative_path(&a.value, visit);
            }
        }
        ExprKind::FunctionCall { args, .. } => {
            for a in args {
                on_derivative_path(&a.value, visit);
            }
        }
        ExprKind::ArrayCtor(items) => {
            for i in items {
                on_derivative_path(i, visit);
            }
        }
        _ => {}
    }
}

/// The statements inside the WHERE constructs of `unit`.
fn where_bodies(unit: &Unit) -> Vec<StmtId> {
    let mut out = Vec::new();
    let mut todo: Vec<StmtId> = unit
        .stmts
        .iter()
        .filter(|s| matches!(s.kind, StmtKind::Where { .. }))
        .flat_map(|s| s.kind.blocks().concat())
        .collect();
    while let Some(id) = todo.pop() {
        out.push(id);
        todo.extend(unit.stmt(id).kind.blocks().concat());
    }
    out
}

/// Whether a global can carry a derivative.
fn real_global(program: &Program, k: &GlobalKey) -> bool {
    match k {
        GlobalKey::Shared { unit, symbol } => differentiable(program.unit(*unit), *symbol),
        GlobalKey::Common { block, index } => program.units.iter().any(|u| {
            u.commons.iter().any(|c| {
                c.name == *block
                    && c.members
                        .get(*index as usize)
                        .is_some_and(|m| differentiable(u, *m))
            })
        }),
    }
}

impl GlobalKey {
    /// This global in words: `member 2 of COMMON /blk/` or `` `x` of `m` ``.
    pub fn describe(&self, program: &Program) -> String {
        match self {
            GlobalKey::Common { block, index } => {
                format!("member {} of COMMON /{block}/", index + 1)
            }
            GlobalKey::Shared { unit, symbol } => {
                let u = program.unit(*unit);
                format!("`{}` of `{}`", u.symbol(*symbol).name, u.name)
            }
        }
    }
}
