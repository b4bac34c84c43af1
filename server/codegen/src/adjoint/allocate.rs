//! ALLOCATE and DEALLOCATE in the adjoint. An array must live until the
//! reverse sweep is done with it, and so must its adjoint:
//! - ALLOCATE allocates the array and its adjoint (zeroed); its reverse
//!   frees both (the forward sweep found them unallocated). A pointer's
//!   association is saved before and restored after
//!   ([`super::association`]).
//! - DEALLOCATE of an allocatable moves the allocation and its adjoint's
//!   onto the tape (`dfort_push_allocation`: the array is unallocated, as
//!   the program expects, and its values are kept); its reverse moves
//!   them back. DEALLOCATE of a pointer saves the associations and
//!   nullifies the pointers: the memory stays until the reverse of its
//!   ALLOCATE.
//!
//! So an array may be allocated and deallocated any number of times, in
//! loops too.
//!
//! Contract: allocatable and pointer objects of the unit's own (locals
//! that are not SAVE, and the root's module variables, which the root's
//! one routine allocates and frees in both sweeps) are handled; the
//! callers of another routine run its original in their forward sweep,
//! which would leave the adjoints behind, so a routine other than the
//! root (de)allocating what its caller sees is refused. Module arrays
//! allocated before the root runs get adjoints of their shape on the
//! root's entry ([`crate::names::DiffSet::shape_procedures`]).

use super::association::pointer_object;
use super::dispatch::Gen;
use super::sweep::Line;
use dfort_ir::dump::expr as print;
use dfort_ir::*;

impl Gen<'_> {
    /// `allocate(objects)` or `deallocate(objects)` (statement `id`).
    pub(super) fn allocate(
        &mut self,
        id: StmtId,
        objects: &[Expr],
        deallocate: bool,
        label: String,
    ) -> Vec<Line> {
        let inp = self.inp;
        let unit = &inp.unit;
        let st = inp.orig.stmt(id);
        let pointers: Vec<bool> = objects
            .iter()
            .map(|o| dfort_ir::queries::is_pointer_reference(inp.program, unit, o))
            .collect();
        // What the adjoint does not follow of these (de)allocations the
        // facts refuse ([`dfort_analysis::refusals`]).
        let mut label = label;
        self.out.flush_label(&mut label);
        let saved = self.save_associations(st);
        let names: Vec<String> = objects.iter().map(|o| print(unit, o)).collect();
        if deallocate {
            let mut moved = Vec::new();
            let mut nullified = Vec::new();
            for (o, &pointer) in objects.iter().zip(&pointers) {
                let whole = o.without_bounds();
                let mut both = vec![pointer_object(unit, o)];
                both.extend(inp.bref(&whole));
                if pointer {
                    nullified.extend(both);
                } else {
                    moved.extend(both);
                }
            }
            for m in &moved {
                self.out
                    .fwd
                    .line(&format!("call dfort_push_allocation({m})"));
            }
            if !nullified.is_empty() {
                self.out.fwd.line(&format!(
                    "nullify({}) ! deallocate({}): the memory waits for the reverse sweep",
                    nullified.join(", "),
                    names.join(", ")
                ));
            }
            let mut rev: Vec<Line> = moved
                .iter()
                .rev()
                .map(|m| Line::Plain(format!("call dfort_pop_allocation({m})")))
                .collect();
            rev.extend(self.restore_associations(&saved));
            return rev;
        }
        self.out
            .fwd
            .line(&format!("allocate({})", names.join(", ")));
        let mut freed = Vec::new();
        for (o, &pointer) in objects.iter().zip(&pointers) {
            let whole = o.without_bounds();
            if let (Some(b), Some(bn)) = (inp.bref(o), inp.bref(&whole)) {
                // A module variable's adjoint may be left allocated by an
                // earlier call.
                if !pointer {
                    self.out
                        .fwd
                        .line(&format!("if (allocated({bn})) deallocate({bn})"));
                }
                self.out.fwd.line(&format!("allocate({b})"));
                let zero = crate::derived::zero(inp.program, unit, &whole, "_b");
                self.out.fwd.line(&format!("{bn} = {zero}"));
                freed.push(bn);
            }
            freed.push(pointer_object(unit, o));
        }
        let mut rev = vec![Line::Plain(format!("deallocate({})", freed.join(", ")))];
        rev.extend(self.restore_associations(&saved));
        rev
    }
}
