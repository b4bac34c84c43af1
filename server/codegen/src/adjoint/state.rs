//! The modules that hold the SAVE'd state an adjoint shares between its
//! routines ([`dfort_analysis::saved_state`]): per procedure with such
//! locals, `dfort_save_<p>` declares them as the procedure does (type,
//! shape, initial value, DATA), with their adjoints, which start at zero
//! once and accumulate from one call to the next. The procedure's adjoint
//! routine and its copy use them; callers' snapshots reach them under new
//! names ([`super::call_site`]). The module's procedures set the adjoints
//! to zero (`dfort_zero_<p>`, when the root's adjoint starts: the state on
//! exit is no dependent), and keep the state the forward sweep leaves
//! (`dfort_keep_<p>`, when the reverse sweep starts) to put it back when
//! the reverse sweep, which restores older values, ends
//! (`dfort_restore_<p>`): the root's adjoint leaves the state as the root
//! does.
//!
//! Contract: the modules come before every routine of the file; a module
//! declares only the named constants of the procedure its declarations
//! read, and uses what the procedure uses (its host module, its USE
//! statements). The analyses refused what cannot be declared so
//! ([`dfort_analysis::refusals`]).

use crate::fortran::{declaration, Writer};
use crate::names::DiffSet;
use dfort_ir::*;
use std::collections::BTreeSet;

/// The lines of the root's adjoint that use the state modules' procedures
/// `what` (`zero`, `keep`, `restore`), one per procedure with shared
/// state.
pub(super) fn calls(program: &Program, diff: &DiffSet, what: &str) -> Vec<String> {
    owners(diff)
        .into_iter()
        .map(|o| format!("call dfort_{what}_{}()", program.unit(o).name))
        .collect()
}

/// The USE lines bringing the state modules' procedures into the root's
/// adjoint.
pub(super) fn root_uses(program: &Program, diff: &DiffSet) -> Vec<String> {
    owners(diff)
        .into_iter()
        .map(|o| {
            let n = &program.unit(o).name;
            format!(
                "use {}, only: dfort_zero_{n}, dfort_keep_{n}, dfort_restore_{n}",
                DiffSet::state_module(program, o)
            )
        })
        .collect()
}

fn owners(diff: &DiffSet) -> BTreeSet<UnitId> {
    diff.state.locals.iter().map(|(u, _)| *u).collect()
}

/// The text of the state modules of `diff`'s adjoint (empty when it
/// shares no SAVE'd state).
pub(super) fn modules(program: &Program, diff: &DiffSet) -> String {
    let owners = owners(diff);
    let mut w = Writer::default();
    for o in owners {
        let unit = program.unit(o);
        let shared: Vec<SymbolId> = diff
            .state
            .locals
            .iter()
            .filter(|(u, _)| *u == o)
            .map(|(_, s)| *s)
            .collect();
        let names = diff.names(program, unit, 'b');
        w.line(&format!("module {}", DiffSet::state_module(program, o)));
        w.indent();
        if let Some(m) = crate::calls::enclosing_module(program, unit) {
            w.line(&format!("use {m}"));
        }
        for l in crate::declare::uses(unit) {
            w.line(&l);
        }
        w.line("implicit none");
        for c in constants_read(unit, &shared) {
            if let Some(d) = declaration(unit, unit.symbol(c), &unit.symbol(c).name, false) {
                w.line(&d);
            }
        }
        for &s in &shared {
            let sym = unit.symbol(s);
            if let Some(d) = declaration(unit, sym, &sym.name, false) {
                w.line(&d);
            }
            if let Some(b) = names.get(&s) {
                let mut d = sym.clone();
                d.ty = crate::derived::derivative_type(program, unit, &sym.ty, "_b");
                d.init = Some(Expr {
                    kind: ExprKind::Real {
                        value: 0.0,
                        text: "0.0d0".into(),
                        kind: 8,
                    },
                    span: sym.span,
                });
                d.attrs.initialized = true;
                d.attrs.parameter = false;
                if let Some(text) = declaration(unit, &d, b, false) {
                    w.line(&text);
                }
            }
        }
        // The values kept while the root's reverse sweep runs.
        for (k, &s) in shared.iter().enumerate() {
            let mut kept = unit.symbol(s).clone();
            kept.init = None;
            kept.attrs.initialized = false;
            kept.attrs.save = false;
            if let Some(d) = declaration(unit, &kept, &format!("dfort_kept{}", k + 1), false) {
                w.line(&d);
            }
        }
        for line in &unit.data {
            let words = dfort_ir::queries::data_statement_names(line);
            if shared.iter().any(|s| words.contains(&unit.symbol(*s).name)) {
                w.line(line);
            }
        }
        let name = &unit.name;
        w.dedent();
        w.line("contains");
        w.indent();
        let procedure = |w: &mut Writer, what: &str, lines: Vec<String>| {
            w.line(&format!("subroutine dfort_{what}_{name}()"));
            w.indent();
            for l in lines {
                w.line(&l);
            }
            w.dedent();
            w.line(&format!("end subroutine dfort_{what}_{name}"));
        };
        let zeros = shared
            .iter()
            .filter_map(|s| names.get(s))
            .map(|b| format!("{b} = 0.0d0"))
            .collect();
        procedure(&mut w, "zero", zeros);
        let name_of = |s: &SymbolId| unit.symbol(*s).name.clone();
        let keep = shared
            .iter()
            .enumerate()
            .map(|(k, s)| format!("dfort_kept{} = {}", k + 1, name_of(s)))
            .collect();
        procedure(&mut w, "keep", keep);
        let restore = shared
            .iter()
            .enumerate()
            .map(|(k, s)| format!("{} = dfort_kept{}", name_of(s), k + 1))
            .collect();
        procedure(&mut w, "restore", restore);
        w.dedent();
        w.line(&format!("end module {}", DiffSet::state_module(program, o)));
    }
    w.finish()
}

/// The named constants of `unit` that the declarations of `shared` read
/// (their bounds and initial values), and those their values read, in
/// declaration order.
fn constants_read(unit: &Unit, shared: &[SymbolId]) -> Vec<SymbolId> {
    let mut found: BTreeSet<SymbolId> = BTreeSet::new();
    let mut todo: Vec<SymbolId> = shared.to_vec();
    while let Some(s) = todo.pop() {
        let sym = unit.symbol(s);
        let mut exprs: Vec<&Expr> = sym.init.iter().collect();
        for d in &sym.dims {
            exprs.extend(d.lower.as_deref().into_iter().chain(d.upper.as_deref()));
        }
        for e in exprs {
            e.walk(&mut |x| {
                if let ExprKind::Var(v) = x.kind {
                    let c = unit.symbol(v);
                    if c.attrs.parameter && c.storage == Storage::Local && found.insert(v) {
                        todo.push(v);
                    }
                }
            });
        }
    }
    crate::fortran::declaration_order(unit)
        .into_iter()
        .filter(|s| found.contains(s))
        .collect()
}
