//! One adjoint routine `s_b` as a whole: its specification part
//! ([`crate::declare`]) with the generator's temporaries, the adjoints of
//! locals set to zero, the forward sweep, and the reverse sweep — in a
//! unit reversed by basic blocks, a loop that pops block ids until the
//! entry marker and runs each block's reverse sweep.
//!
//! Contract: statements are generated first; when any is refused, the
//! routine is not written and the refusals are returned. The trace
//! records which variables have an adjoint.

use super::control::{block_number, REVERSE_LABEL};
use super::dispatch::Gen;
use super::emitter::Emitter;
use super::inputs::RoutineInputs;
use super::sweep::{emit, Line};
use crate::declare::{Declared, Flavour};
use crate::fortran::{declaration_order, Routine};
use crate::trace::RoutineTrace;
use crate::Refusal;
use dfort_ir::cfg::NodeId;
use dfort_ir::{BaseType, Idx, Storage, SymbolId};
use std::collections::HashMap;

/// The adjoint routine of one unit of the derivative set, with its trace.
pub(super) fn routine(inp: &RoutineInputs) -> Result<(Vec<Routine>, RoutineTrace), Vec<Refusal>> {
    let unit = &inp.unit;
    let mut g = Gen::new(inp);
    if inp.unstructured {
        g.out.push("0");
    }
    let split_at = after_split(inp).map_err(|r| vec![r])?;
    let rev = match split_at {
        // A root whose independents take their values after a call, and
        // the units on the way to that call: the statements before that
        // point run in the forward sweep and are not reversed (nothing
        // before it is varied); what they recorded is dropped when the
        // reverse sweep ends, so that the independents' adjoints keep
        // their values at that point.
        Some(k) => {
            g.out.entry_depth = true;
            g.out.fwd.line("call dfort_stack_depth(dfort_entry_depth)");
            let _not_reversed = g.block(&unit.body[..k]);
            let mut rev = g.block(&unit.body[k..]);
            rev.push(Line::Plain(
                "call dfort_stack_cut(dfort_entry_depth)".into(),
            ));
            rev
        }
        None => g.block(&unit.body),
    };
    let mut out = g.out;
    if !out.refusals.is_empty() {
        return Err(out.refusals);
    }
    // The root gives the adjoints of allocatable module variables their
    // variables' shapes first.
    let mut used_modules = out.used_modules.clone();
    let shaped = if unit.id == inp.diff.root {
        inp.diff.shaped_modules(inp.program)
    } else {
        Vec::new()
    };
    let inside = crate::calls::enclosing_module(inp.program, inp.orig);
    for m in &shaped {
        if inp.module.as_ref() != Some(m) && inside.as_ref() != Some(m) {
            used_modules.insert(m.clone());
        }
    }
    used_modules.extend(inp.diff.copy_modules(inp.program, inp.orig));
    // A module variable brought in under a name of its own keeps the name
    // the unit's USE gave it (its internal procedures reach it by that
    // name): a rename alone would hide it (F2018 14.2.2).
    let mut extra_uses: Vec<String> = out
        .hidden
        .values()
        .map(
            |(local, m, name)| match uses_by_own_name(inp.orig, m, name) {
                true => format!("use {m}, only: {local} => {name}, {name}"),
                false => format!("use {m}, only: {local} => {name}"),
            },
        )
        .collect();
    extra_uses.extend(inp.diff.state_use(inp.program, unit.id, &inp.bname));
    let root = inp.id == inp.diff.root;
    if root {
        extra_uses.extend(super::state::root_uses(inp.program, inp.diff));
    }
    let fwd = std::mem::take(&mut out.fwd).finish();
    let written = Written {
        inp,
        out: &out,
        used_modules: &used_modules,
        extra_uses: &extra_uses,
        root,
        shaped: &shaped,
        fwd: &fwd,
        rev: &rev,
    };
    let mut routines = vec![written.routine(Part::Whole)];
    if inp.split {
        routines.push(written.routine(Part::Forward));
        routines.push(written.routine(Part::Reverse));
    }
    let mut trace = out.trace;
    trace.with_adjoint = inp
        .bname
        .keys()
        .filter(|s| s.index() < inp.orig.symbols.len())
        .copied()
        .collect();
    trace.with_adjoint.sort();
    Ok((routines, trace))
}

/// For a unit whose adjoint the user supplies
/// ([`dfort_analysis::supplied`]), the file header's lines saying what
/// the adjoint calls: the routine's first line, each adjoint argument,
/// and the derivative COMMON blocks it shares.
pub(super) fn supplied(inp: &RoutineInputs) -> String {
    let unit = &inp.unit;
    let name = inp.diff.routine_name(inp.program, inp.orig.id, "_b");
    let (first, _) = crate::declare::header(inp.program, unit, &inp.bname, &name, Flavour::Adjoint);
    let mut out = format!(
        "`{name}` is not written here: you supply it (the adjoint of `{}`).\n\
         It is called with the values `{}` was called with, must add the adjoints of its\n\
         outputs to those of its inputs and reset those of its pure outputs, and must leave\n\
         every variable of the original as it found it. It is called as:\n  {first}\n",
        unit.name, unit.name
    );
    for a in &unit.args {
        if let Some(b) = inp.bname.get(a) {
            let sym = unit.symbol(*a);
            out.push_str(&format!(
                "  {b}: the adjoint of `{}`, declared like it\n",
                sym.name
            ));
        }
    }
    let mut blocks = std::collections::BTreeSet::new();
    for s in unit.symbols.iter() {
        if let Storage::Common { block, .. } = &s.storage {
            if inp.diff.commons.iter().any(|(b, _)| b == block) {
                blocks.insert(block.clone());
            }
        }
    }
    for b in blocks {
        out.push_str(&format!(
            "  and the adjoints of COMMON /{b}/ in /{b}_b/ (members with a derivative only)\n"
        ));
    }
    out
}

/// For the units of the chain of calls after which the root's
/// independents take their values ([`dfort_analysis::roles::Roles::after`]):
/// how many of the unit's statements come before that point (the last
/// unit's call included, the others' call to the next unit excluded).
fn after_split(inp: &RoutineInputs) -> Result<Option<usize>, Refusal> {
    let Some(roles) = inp.facts.roles_of(inp.diff.root) else {
        return Ok(None);
    };
    let Some(i) = roles.after.iter().position(|(u, _)| *u == inp.id) else {
        return Ok(None);
    };
    let at = roles.after[i].1;
    let last = i + 1 == roles.after.len();
    let span = inp.orig.stmt(at).span;
    let why = "a unit on the way to the call after which the root's independents take their values";
    if inp.unstructured {
        return Err(super::emitter::refusal(
            span,
            format!("{why} must not be reversed by blocks (it has jumps dfort cannot structure)"),
        ));
    }
    if inp.split {
        return Err(super::emitter::refusal(
            span,
            format!("{why} must be reversed in joint mode (its caller runs it in split mode)"),
        ));
    }
    match inp.unit.body.iter().position(|s| *s == at) {
        Some(k) => Ok(Some(if last { k + 1 } else { k })),
        None => Err(super::emitter::refusal(
            span,
            format!("{why}: that call is not among the unit's statements"),
        )),
    }
}

/// Which routine of a unit is written: its adjoint `s_b`, or for a unit a
/// caller runs in split mode ([`dfort_analysis::split`]) its forward
/// routine `s_fwd` (the original's arguments; the forward sweep, then the
/// locals pushed for the reverse routine) and its reverse routine `s_rev`
/// (the adjoint's arguments; the locals popped, then the reverse sweep).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Part {
    Whole,
    Forward,
    Reverse,
}

/// What the routines of one unit are written from.
struct Written<'a, 'b> {
    inp: &'a RoutineInputs<'b>,
    out: &'a Emitter,
    used_modules: &'a std::collections::BTreeSet<String>,
    extra_uses: &'a [String],
    /// Whether the unit is the root: its adjoint sets the adjoints of the
    /// shared SAVE'd state to zero and leaves the state as the root does
    /// ([`super::state`]).
    root: bool,
    shaped: &'a [String],
    fwd: &'a str,
    rev: &'a [Line],
}

impl Written<'_, '_> {
    fn routine(&self, part: Part) -> Routine {
        let (inp, out) = (self.inp, self.out);
        let unit = &inp.unit;
        // The forward routine has the original's arguments only.
        let forward_names: HashMap<SymbolId, String> = inp
            .bname
            .iter()
            .filter(|(s, _)| {
                !matches!(
                    unit.symbol(**s).storage,
                    Storage::Dummy(_) | Storage::Result
                )
            })
            .map(|(s, b)| (*s, b.clone()))
            .collect();
        let names = match part {
            Part::Forward => &forward_names,
            _ => &inp.bname,
        };
        let suffix = match part {
            Part::Whole => "_b",
            Part::Forward => "_fwd",
            Part::Reverse => "_rev",
        };
        let name = inp.diff.routine_name(inp.program, inp.orig.id, suffix);
        let mut r = crate::declare::open(
            &Declared {
                program: inp.program,
                unit,
                orig: inp.orig,
                hoisted: &inp.hoisted,
                names,
                commons: &inp.diff.commons,
                module: inp.module.as_ref(),
                used_modules: self.used_modules,
                extra_uses: self.extra_uses,
                name: &name,
                shared: &inp.diff.state.locals,
            },
            Flavour::Adjoint,
        );
        temporaries(&mut r.w, out);
        r.end_specification();
        let w = &mut r.w;
        if part != Part::Forward {
            starts(w, inp);
            if self.root {
                for l in super::state::calls(inp.program, inp.diff, "zero") {
                    w.line(&l);
                }
            }
        }
        let carried = carried(inp, out);
        if part == Part::Reverse {
            for v in carried.iter().rev() {
                w.line(&format!("call dfort_pop({v})"));
            }
        }
        if part != Part::Reverse {
            for m in self.shaped {
                w.line(&format!("call dfort_shape_{m}()"));
            }
            w.line("! forward sweep");
            for l in self.fwd.lines() {
                w.line(l);
            }
        }
        if part == Part::Forward {
            // A RETURN of a unit reversed by blocks jumps to where the
            // reverse sweep would start.
            if inp.unstructured {
                w.line(&format!("{REVERSE_LABEL} continue"));
            }
            for v in &carried {
                w.line(&format!("call dfort_push({v})"));
            }
        } else {
            w.line("! reverse sweep");
            let (keep, restore) = match self.root {
                true => (
                    super::state::calls(inp.program, inp.diff, "keep"),
                    super::state::calls(inp.program, inp.diff, "restore"),
                ),
                false => (Vec::new(), Vec::new()),
            };
            reverse_sweep(w, inp, out, &keep, self.rev);
            for l in restore {
                w.line(&l);
            }
        }
        r.finish(self.used_modules.clone(), out.called.clone())
    }
}

/// The generator's temporaries and counters, declared.
fn temporaries(w: &mut crate::fortran::Writer, out: &Emitter) {
    for (_, lines) in out.hidden_commons.values() {
        for l in lines {
            w.line(l);
        }
    }
    w.line("integer :: dfort_branch");
    if out.entry_depth {
        w.line("integer(8) :: dfort_entry_depth");
    }
    for k in 1..=out.counters {
        w.line(&format!("integer :: dfort_k{k}, dfort_count{k}"));
    }
    for c in &out.binomials {
        w.line(&format!(
            "integer :: dfort_clo{c}, dfort_cst{c}, dfort_cn{c}, dfort_act{c}, dfort_from{c}, dfort_to{c}"
        ));
        w.line(&format!("integer, allocatable :: dfort_plan{c}(:)"));
    }
    if out.column_loops {
        w.line("integer :: dfort_j");
    }
    for (k, ty) in out.int_temps.iter().enumerate() {
        w.line(&format!("{ty} :: dfort_i{}", k + 1));
    }
    w.line("real(8) :: dfort_tb");
    for k in 1..=out.shared_temps {
        w.line(&format!("real(8) :: dfort_tb{k}"));
    }
    for k in 1..=out.value_temps {
        w.line(&format!("real(8) :: dfort_v{k}"));
    }
    if out.pa_slots > 0 {
        w.line(&format!("real(8) :: dfort_pa({})", out.pa_slots));
    }
    for (k, ty) in out.ztemps.iter().enumerate() {
        w.line(&format!("{ty} :: dfort_z{}", k + 1));
    }
    for (k, rank) in out.elemental_temps.iter().enumerate() {
        let colons = vec![":"; *rank].join(", ");
        w.line(&format!(
            "real(8), allocatable :: dfort_te{}({colons})",
            k + 1
        ));
    }
    for rank in &out.array_temps {
        let colons = vec![":"; *rank].join(", ");
        w.line(&format!("real(8), allocatable :: dfort_ta{rank}({colons})"));
    }
    for a in 1..=out.partial_sums {
        let parts: Vec<String> = (1..=super::sweep::PARTS)
            .map(|p| format!("dfort_s{a}_{p}"))
            .collect();
        w.line(&format!("real(8) :: {}", parts.join(", ")));
    }
    if out.ctor_temps {
        w.line("integer :: dfort_p");
        w.line("real(8), allocatable :: dfort_tc(:)");
    }
    for (k, rank) in out.masks.iter().enumerate() {
        let colons = vec![":"; *rank].join(", ");
        w.line(&format!(
            "logical, allocatable :: dfort_w{}({colons})",
            k + 1
        ));
    }
}

/// What an adjoint sets before its forward sweep: local pointers and
/// their derivative pointers disassociated, adjoints of locals zero.
fn starts(w: &mut crate::fortran::Writer, inp: &RoutineInputs) {
    let unit = &inp.unit;
    // Local pointers and their derivative pointers start disassociated
    // (their associations are saved before they change).
    for s in &declaration_order(unit) {
        let sym = unit.symbol(*s);
        if sym.attrs.pointer
            && sym.storage == Storage::Local
            && !sym.attrs.save
            && !sym.attrs.initialized
        {
            let mut both = vec![sym.name.clone()];
            both.extend(inp.bname.get(s).cloned());
            w.line(&format!("nullify({})", both.join(", ")));
        }
    }
    // Adjoints of locals start at zero (not those of dummies, of the
    // function result, of COMMON members or of module variables, which
    // the caller owns; pointers' adjoints are their targets').
    for s in &declaration_order(unit) {
        if unit.symbol(*s).attrs.pointer {
            continue;
        }
        let storage = &unit.symbol(*s).storage;
        let owned = matches!(
            storage,
            Storage::Dummy(_) | Storage::Result | Storage::Common { .. } | Storage::Imported { .. }
        );
        // Allocatable adjoints are zeroed when they are allocated; those
        // of shared SAVE'd state accumulate from one call to the next.
        let owned = owned || unit.symbol(*s).attrs.allocatable || inp.diff.shares(inp.id, *s);
        if let (Some(b), false) = (inp.bname.get(s), owned) {
            let zero = crate::derived::zero_of(inp.program, unit, &unit.symbol(*s).ty, "_b");
            w.line(&format!("{b} = {zero}"));
        }
    }
}

/// The reverse sweep; in a unit reversed by blocks, a loop that pops
/// block ids until the entry marker and runs each block's reverse sweep;
/// `first` runs before it (after the label a RETURN jumps to).
fn reverse_sweep(
    w: &mut crate::fortran::Writer,
    inp: &RoutineInputs,
    out: &Emitter,
    first: &[String],
    rev: &[Line],
) {
    if !inp.unstructured {
        for l in first {
            w.line(l);
        }
        emit(w, rev);
        return;
    }
    // Pop basic-block ids until the entry marker; reverse each block.
    match first {
        [] => w.line(&format!("{REVERSE_LABEL} call dfort_pop(dfort_branch)")),
        _ => {
            w.line(&format!("{REVERSE_LABEL} continue"));
            for l in first {
                w.line(l);
            }
            w.line("call dfort_pop(dfort_branch)");
        }
    }
    w.line("do while (dfort_branch /= 0)");
    w.indent();
    w.line("select case (dfort_branch)");
    let mut blocks: Vec<NodeId> = out
        .block_rev
        .keys()
        .chain(inp.snapshots.keys())
        .copied()
        .collect();
    blocks.sort_unstable();
    blocks.dedup();
    for b in blocks {
        w.line(&format!("case ({})", block_number(b)));
        w.indent();
        for v in inp.snapshots.get(&b).into_iter().flatten().rev() {
            w.line(&format!("call dfort_pop({v})"));
        }
        emit(w, out.block_rev.get(&b).map(Vec::as_slice).unwrap_or(&[]));
        w.dedent();
    }
    w.line("end select");
    w.line("call dfort_pop(dfort_branch)");
    w.dedent();
    w.line("end do");
}

/// What the forward routine of a split unit leaves to its reverse
/// routine on the tape: the values of its scalar locals (the analysis
/// admits no other locals, [`dfort_analysis::split::callee_fits`]) and
/// of the generator's integer temporaries (not `dfort_branch`, which
/// the reverse sweep pops before it reads it, nor a counter the forward
/// sweep never sets).
fn carried(inp: &RoutineInputs, out: &Emitter) -> Vec<String> {
    let unit = &inp.unit;
    let mut names: Vec<String> = declaration_order(unit)
        .into_iter()
        .filter(|s| {
            let sym = unit.symbol(*s);
            sym.storage == Storage::Local
                && sym.rank() == 0
                && dfort_ir::dp::is_variable(unit, *s)
                && !sym.attrs.allocatable
                && !sym.attrs.pointer
                && matches!(
                    sym.ty.base,
                    BaseType::Integer | BaseType::Real | BaseType::Logical | BaseType::Complex
                )
        })
        .map(|s| unit.symbol(s).name.clone())
        .collect();
    names.extend(out.trip_counts.iter().map(|k| format!("dfort_count{k}")));
    names.extend((1..=out.int_temps.len()).map(|k| format!("dfort_i{k}")));
    names
}

/// Whether `unit` reaches `name` of module `m` under that name through a
/// USE statement of its own (without ONLY and not renamed, or in an ONLY
/// list as itself).
fn uses_by_own_name(unit: &dfort_ir::Unit, m: &str, name: &str) -> bool {
    unit.uses
        .iter()
        .filter(|u| u.module == m)
        .any(|u| match &u.only {
            None => !u.renames.iter().any(|(_, remote)| remote == name),
            Some(list) => list
                .iter()
                .any(|(local, remote)| local == name && remote == name),
        })
}
