//! ALLOCATE and DEALLOCATE in the adjoint: the arrays must live until the
//! reverse sweep is done with them, so DEALLOCATE waits for the end of
//! the reverse sweep (the reverse of the ALLOCATE), and an adjoint is
//! allocated and zeroed with its array.
//!
//! Contract: only local allocatable arrays (and module ones in the root),
//! allocated once, outside loops and in units without jumps, are
//! handled; the rest is refused. Module arrays allocated before the root
//! runs get adjoints of their shape on the root's entry
//! ([`crate::names::DiffSet::shape_procedures`]).

use super::dispatch::Gen;
use super::sweep::Line;
use dfort_analysis::dp::target;
use dfort_ir::dump::expr as print;
use dfort_ir::*;

impl Gen<'_> {
    /// `allocate(objects)` or `deallocate(objects)`.
    pub(super) fn allocate(
        &mut self,
        span: Span,
        objects: &[Expr],
        deallocate: bool,
        label: String,
    ) -> Vec<Line> {
        let inp = self.inp;
        let unit = &inp.unit;
        let names: Vec<String> = objects.iter().map(|o| print(unit, o)).collect();
        for o in objects {
            let Some((s, _)) = target(o) else {
                self.out.refuse(
                    span,
                    "only allocatable variables can be (de)allocated in differentiated code",
                );
                continue;
            };
            let sym = unit.symbol(s);
            // A module variable's in the root, which runs its forward and
            // reverse sweeps once (a callee's adjoint runs its forward
            // sweep again, where the array is allocated already).
            let module_var = crate::names::module_var(inp.program, sym).is_some();
            let here = sym.storage == Storage::Local || (module_var && unit.id == inp.diff.root);
            if !here || !sym.attrs.allocatable {
                self.out.refuse(span, format!("`{}` is not a local allocatable array; its (de)allocation is not differentiated yet", sym.name));
            } else if allocations(unit, s) > 1 {
                self.out.refuse(span, format!("`{}` is allocated more than once; the adjoint keeps each array until its reverse sweep, so it can be allocated once only", sym.name));
            }
        }
        if self.out.loop_depth > 0 || inp.unstructured {
            self.out.refuse(
                span,
                "ALLOCATE and DEALLOCATE inside loops or in code with jumps are not differentiated yet",
            );
        }
        if deallocate {
            self.out.fwd.line(&format!(
                "{label}continue ! deallocate({}) waits for the reverse sweep",
                names.join(", ")
            ));
            return Vec::new();
        }
        self.out
            .fwd
            .line(&format!("{label}allocate({})", names.join(", ")));
        let mut freed = Vec::new();
        for o in objects {
            let bn = target(o).and_then(|(s, _)| inp.bname.get(&s));
            if let (Some(b), Some(bn)) = (inp.bref(o), bn) {
                // A module variable's adjoint may be left allocated by an
                // earlier call.
                self.out
                    .fwd
                    .line(&format!("if (allocated({bn})) deallocate({bn})"));
                self.out.fwd.line(&format!("allocate({b})"));
                let ty = target(o).map(|(s, _)| inp.unit.symbol(s).ty.clone());
                let zero = ty
                    .map(|ty| crate::derived::zero_of(inp.program, &inp.unit, &ty, "_b"))
                    .unwrap_or_else(|| "0.0d0".into());
                self.out.fwd.line(&format!("{bn} = {zero}"));
                freed.push(bn.clone());
            }
            if let Some((s, _)) = target(o) {
                freed.push(unit.symbol(s).name.clone());
            }
        }
        vec![Line::Plain(format!("deallocate({})", freed.join(", ")))]
    }
}

/// How many ALLOCATE statements of the unit allocate `s`.
fn allocations(unit: &Unit, s: SymbolId) -> usize {
    unit.stmts
        .iter()
        .filter(|st| match &st.kind {
            StmtKind::Allocate {
                objects,
                deallocate: false,
            } => objects
                .iter()
                .any(|o| target(o).is_some_and(|(t, _)| t == s)),
            _ => false,
        })
        .count()
}
