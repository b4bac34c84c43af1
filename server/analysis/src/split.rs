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
//! was). What a split call overwrites of the values its caller still
//! needs, integers included, the callee records itself (TBR's calling
//! context, [`crate::tbr`]; [`crate::checkpoint`] saves nothing around
//! it). TBR ([`crate::tbr`]) decides among these —
//! a callee with a summary that reaches no global — and records its
//! choice (`Tbr::split`), which the checkpoint, the generator and the
//! editor read; [`crate::facts`] gives the callees of split calls a
//! forward sweep that computes everything the original does (adjoint
//! liveness with the non-local values live at exit). Analysis only.

use crate::effects::{Effects, ProgramEffects};
use dfort_ir::bitset::BitSet;
use dfort_ir::dp::{index_vars, is_variable, target, vars};
use dfort_ir::queries::formal_index;
use dfort_ir::*;
use std::collections::BTreeMap;

/// The CALL statements of a unit that may run split, each with the
/// positions (in the call's argument list) of the actuals whose variable
/// the callee reads — what its reverse routine may read of them.
pub type Splittable = BTreeMap<StmtId, BitSet>;

/// [`candidates`] of every unit of `program`.
pub fn of_program(program: &Program, effects: &ProgramEffects) -> IdVec<UnitId, Splittable> {
    program
        .units
        .iter()
        .map(|u| candidates(program, u, effects))
        .collect()
}

/// The CALL statements of `unit` that may run split (see the module's
/// contract).
pub fn candidates(program: &Program, unit: &Unit, effects: &ProgramEffects) -> Splittable {
    let mut out = Splittable::new();
    let mut calls = Vec::new();
    if unit.cfg.structured {
        outside_loops(unit, &unit.body, &mut calls);
    }
    // A recursive callee runs split wherever it is called, in loops and
    // in units with jumps: its joint mode would need a snapshot of what
    // it touches, which dfort does not bound through the recursion
    // ([`crate::regions`]); its forward routine records what it
    // overwrites instead ([`crate::tbr`]'s calling context). Not inside a
    // loop checkpointed with binomial-ckp, whose steps run again from
    // snapshots (fuzzer, seed 2026, case 91: the adjoint never ended).
    let mut checkpointed = Vec::new();
    for m in crate::binomial::marks(unit) {
        if let Some(id) = m.stmt {
            dfort_ir::queries::nested_statements(unit, &[id], &mut checkpointed);
        }
    }
    for st in unit
        .stmts
        .iter()
        .filter(|st| !checkpointed.contains(&st.id))
    {
        if let StmtKind::Call {
            target: CallTarget::Unit(c),
            ..
        } = &st.kind
        {
            if is_recursive(program, program.unit(*c)) && !calls.contains(&st.id) {
                calls.push(st.id);
            }
        }
    }
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
        candidates(&p, u, &crate::effects::all(&p))
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
mod linalg {
    use super::*;

    #[test]
    fn the_lu_driver_splits_its_factorisation_and_its_solve() {
        let p = crate::test_support::fixed_program(&[
            "tests/fixtures/linalg/xlapack.f",
            "tests/fixtures/linalg/xblas.f",
        ]);
        let u = p.units.iter().find(|u| u.name == "xgesv").unwrap();
        assert_eq!(candidates(&p, u, &crate::effects::all(&p)).len(), 2);
    }
}
