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
use super::inputs::RoutineInputs;
use super::sweep::emit;
use crate::declare::{Declared, Flavour};
use crate::fortran::{declaration_order, Routine};
use crate::trace::RoutineTrace;
use crate::Refusal;
use dfort_ir::cfg::NodeId;
use dfort_ir::{Idx, Storage};

/// The adjoint routine of one unit of the derivative set, with its trace.
pub(super) fn routine(inp: &RoutineInputs) -> Result<(Routine, RoutineTrace), Vec<Refusal>> {
    let unit = &inp.unit;
    let mut g = Gen::new(inp);
    if inp.unstructured {
        g.out.push("0");
    }
    let rev = g.block(&unit.body);
    let out = g.out;
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
    for m in &shaped {
        if inp.module.as_ref() != Some(m) {
            used_modules.insert(m.clone());
        }
    }
    let extra_uses: Vec<String> = out
        .hidden
        .values()
        .map(|(local, m, name)| format!("use {m}, only: {local} => {name}"))
        .collect();
    let mut r = crate::declare::open(
        &Declared {
            program: inp.program,
            unit,
            orig: inp.orig,
            hoisted: &inp.hoisted,
            names: &inp.bname,
            commons: &inp.diff.commons,
            module: inp.module.as_ref(),
            used_modules: &used_modules,
            extra_uses: &extra_uses,
        },
        Flavour::Adjoint,
    );
    let w = &mut r.w;
    for (_, lines) in out.hidden_commons.values() {
        for l in lines {
            w.line(l);
        }
    }
    w.line("integer :: dfort_branch");
    for k in 1..=out.counters {
        w.line(&format!("integer :: dfort_k{k}, dfort_count{k}"));
    }
    if out.column_loops {
        w.line("integer :: dfort_j");
    }
    for (k, ty) in out.int_temps.iter().enumerate() {
        w.line(&format!("{ty} :: dfort_i{}", k + 1));
    }
    w.line("real(8) :: dfort_tb");
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
    r.end_specification();
    let w = &mut r.w;
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
        // Allocatable adjoints are zeroed when they are allocated.
        let owned = owned || unit.symbol(*s).attrs.allocatable;
        if let (Some(b), false) = (inp.bname.get(s), owned) {
            let zero = crate::derived::zero_of(inp.program, unit, &unit.symbol(*s).ty, "_b");
            w.line(&format!("{b} = {zero}"));
        }
    }
    for m in &shaped {
        w.line(&format!("call dfort_shape_{m}()"));
    }
    w.line("! forward sweep");
    for l in out.fwd.finish().lines() {
        w.line(l);
    }
    w.line("! reverse sweep");
    if inp.unstructured {
        // Pop basic-block ids until the entry marker; reverse each block.
        w.line(&format!("{REVERSE_LABEL} call dfort_pop(dfort_branch)"));
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
    } else {
        emit(w, &rev);
    }
    let mut trace = out.trace;
    trace.with_adjoint = inp
        .bname
        .keys()
        .filter(|s| s.index() < inp.orig.symbols.len())
        .copied()
        .collect();
    trace.with_adjoint.sort();
    Ok((r.finish(used_modules, out.called), trace))
}
