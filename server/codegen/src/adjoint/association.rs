//! Pointer statements in the adjoint: a pointer assignment, NULLIFY, and
//! the ALLOCATE and DEALLOCATE of pointers change what a pointer names,
//! and the reverse sweep must read every pointer as the forward sweep had
//! it at the same point. The forward sweep saves the association each
//! statement changes (the analysis says which,
//! [`dfort_ir::queries::recorded_associations`]) on the pointer
//! stacks of the tape, and the derivative pointer follows its pointer
//! (`pb => ab(2:n)` beside `p => a(2:n)`: Tapenade's shadow pointers), so
//! a derivative reached through `p` is `a`'s. The reverse sweep restores
//! the associations, last saved first. A DEALLOCATE of a pointer only
//! nullifies it in the forward sweep (the memory lives until the reverse
//! of its ALLOCATE, which frees it and its derivative).
//!
//! Contract: [`Gen::pointer_statement`] writes the forward sweep of a
//! pointer assignment or NULLIFY and returns its reverse;
//! [`Gen::save_associations`] and [`Gen::restore_associations`] are the
//! saves and restores ALLOCATE and DEALLOCATE share
//! ([`super::allocate`]).

use super::dispatch::Gen;
use super::sweep::Line;
use dfort_ir::dump::expr as print;
use dfort_ir::*;

impl Gen<'_> {
    /// `p => t` or `nullify(p, …)` (statement `id`).
    pub(super) fn pointer_statement(&mut self, id: StmtId, label: String) -> Vec<Line> {
        let inp = self.inp;
        let unit = &inp.unit;
        let st = inp.orig.stmt(id);
        let mut label = label;
        self.out.flush_label(&mut label);
        let saved = self.save_associations(st);
        match &st.kind {
            // The derivative pointer first: the target's subscripts may
            // read the pointer.
            StmtKind::PointerAssign { pointer, target } => {
                if let Some(pb) = inp.bref(pointer) {
                    match inp.bref(target) {
                        Some(tb) => self.out.fwd.line(&format!("{pb} => {tb}")),
                        None => self.out.refuse(
                            st.span,
                            format!(
                                "`{}` has a derivative and its target `{}` has none",
                                print(unit, pointer),
                                print(unit, target)
                            ),
                        ),
                    }
                }
            }
            StmtKind::Nullify { objects } => {
                let shadows: Vec<String> = objects.iter().filter_map(|o| inp.bref(o)).collect();
                if !shadows.is_empty() {
                    self.out
                        .fwd
                        .line(&format!("nullify({})", shadows.join(", ")));
                }
            }
            _ => {}
        }
        if let Some(line) = crate::fortran::pointer_line(unit, &st.kind) {
            self.out.fwd.line(&line);
        }
        self.restore_associations(&saved)
    }

    /// Saves, in the forward sweep, the associations statement `st`
    /// changes (each pointer, then its derivative pointer); returns what
    /// was saved, in the order it was.
    pub(super) fn save_associations(&mut self, st: &Stmt) -> Vec<String> {
        let inp = self.inp;
        let mut saved = Vec::new();
        for o in dfort_ir::queries::recorded_associations(inp.program, inp.orig, st) {
            let whole = pointer_object(&inp.unit, o);
            self.out.trace.association(st.id, whole.clone());
            if !dfort_ir::runtime::pointer_tapeable(inp.program, inp.orig, &o.without_bounds()) {
                // Refused by the facts ([`dfort_analysis::refusals`]).
                continue;
            }
            saved.push(whole.clone());
            if let Some(b) = inp.bref(&o.without_bounds()) {
                saved.push(b);
            }
        }
        for s in &saved {
            self.out.fwd.line(&format!("call dfort_push_pointer({s})"));
        }
        saved
    }

    /// The reverse sweep's restores of `saved` ([`Gen::save_associations`]).
    pub(super) fn restore_associations(&self, saved: &[String]) -> Vec<Line> {
        saved
            .iter()
            .rev()
            .map(|s| Line::Plain(format!("call dfort_pop_pointer({s})")))
            .collect()
    }
}

/// The pointer an ALLOCATE object or pointer statement names, without
/// the bounds an ALLOCATE gives it (`p` of `p(n)`, `c%next`).
pub(super) fn pointer_object(unit: &Unit, o: &Expr) -> String {
    print(unit, &o.without_bounds())
}
