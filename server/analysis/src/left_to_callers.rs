//! Array formals whose values the callers save around the call, instead
//! of the unit recording each overwrite (paper 000 §5.2: a unit records
//! what it overwrites of the values its calling context `InReq(I)`
//! requires, so that its adjoint gives them back to the caller's reverse
//! sweep; §5 lets a caller save around a call what the call overwrites).
//!
//! When the unit's own adjoint never reads an overwritten value of an
//! array formal — the caller's context alone asks for them — the values
//! the caller needs are the ones the formal holds when it is called.
//! Recording each overwrite then pushes an element as often as the loops
//! around it run: a matrix product `c(i, j) = c(i, j) + temp*a(i, l)` in
//! three loops pushes `m*n*k` values, where the `m*n` of `c` on entry
//! restore the same thing. The caller saves those instead, as it saves
//! what a callee without a derivative routine overwrites: the part of the
//! actual the call touches ([`crate::regions`], capped at the actual's
//! storage, which only the caller knows), pushed before the call and
//! popped after the callee's adjoint ([`crate::checkpoint`]'s records).
//!
//! Contract: [`candidates`] gives the array formals of a unit, given its
//! TBR with its calling context, that may be left to its callers: a dummy
//! array of a real or complex type (explicit shape or assumed size, not a
//! pointer, allocatable, target or OPTIONAL, in no EQUIVALENCE or
//! may-alias class, passed to no procedure or function), required by the
//! context on entry, recorded at some statement inside more loops than it
//! has dimensions (so that its elements are overwritten repeatedly), and
//! whose region the unit's own formals and loops bound
//! ([`crate::regions::of_formal`] with nothing known of the call, no
//! subscript bounded by the declared dimension alone: a caller then saves
//! elements the actual has, where its storage size is unknown — the
//! reference DLASWP's `A(IP, K)` with `IP = IPIV(IX)` spans the whole
//! leading dimension, past the end of the trailing block a recursive
//! DGETRF2 passes). TBR
//! ([`crate::tbr`]) analyses the unit again without those formals in its
//! context and keeps the ones whose records then vanish or are no longer
//! repeated (the unit's own adjoint needs at most one overwritten value
//! per element: a triangular solve's division by the diagonal, whose
//! update reads only final values, [`crate::final_reads`]), in
//! `Tbr::left_to_callers`, which the callers' checkpoints read. Analysis
//! only: no I/O, no panics on user input.

use crate::effects::ProgramEffects;
use crate::regions::RegionMemo;
use crate::tbr::Tbr;
use dfort_ir::bitset::BitSet;
use dfort_ir::*;
use std::collections::BTreeMap;

/// The array formals of `unit` that may be left to its callers (see the
/// module's contract), given its TBR `tbr` under the calling context
/// `context`; `effects` and `memo` find their regions.
pub fn candidates(
    program: &Program,
    effects: &ProgramEffects,
    memo: &RegionMemo,
    unit: &Unit,
    tbr: &Tbr,
    context: &BitSet,
) -> Vec<SymbolId> {
    let depth = dfort_ir::queries::loop_depths(unit);
    // What the unit passes to procedures and functions (their regions
    // would depend on the callees).
    let mut passed = BitSet::default();
    let mut note_args = |args: &[Arg]| {
        for a in args {
            a.value.walk(&mut |y| {
                if let ExprKind::Var(s) | ExprKind::ArrayRef { array: s, .. } = &y.kind {
                    passed.insert_id(*s);
                }
            });
        }
    };
    for st in &unit.stmts {
        if let StmtKind::Call { args, .. } = &st.kind {
            note_args(args);
        }
        for e in st.kind.exprs() {
            e.walk(&mut |x| {
                if let ExprKind::FunctionCall { args, .. } | ExprKind::Apply { args, .. } = &x.kind
                {
                    note_args(args);
                }
            });
        }
    }
    let aliased = |s: SymbolId| unit.aliases.iter().any(|c| c.contains(&s));
    let mut out = Vec::new();
    for &f in &unit.args {
        let sym = unit.symbol(f);
        let a = &sym.attrs;
        let shape_ok = sym.rank() > 0
            && sym
                .dims
                .iter()
                .all(|d| matches!(d.kind, DimKind::Explicit | DimKind::AssumedSize));
        let fits = shape_ok
            && matches!(sym.ty.base, BaseType::Real | BaseType::Complex)
            && !(a.pointer || a.allocatable || a.optional || a.target)
            && !aliased(f)
            && !unit.equivalences.iter().any(|e| e.contains(&f))
            && !passed.contains_id(f)
            && context.contains_id(f);
        let repeated = || repeated_in(&depth, unit, tbr, f);
        let k = unit.args.iter().position(|&a| a == f).unwrap_or(0) as u32;
        let bounded = || {
            crate::regions::of_formal(program, effects, memo, unit.id, k, &BTreeMap::new())
                .is_ok_and(|r| !r.dims.is_empty() && !r.declared_bounds)
        };
        if fits && repeated() && !out.contains(&f) && bounded() {
            out.push(f);
        }
    }
    out
}

/// Whether `tbr` records formal `f` at some statement inside more loops
/// than `f` has dimensions (so that its elements are pushed repeatedly).
pub fn repeated(unit: &Unit, tbr: &Tbr, f: SymbolId) -> bool {
    repeated_in(&dfort_ir::queries::loop_depths(unit), unit, tbr, f)
}

fn repeated_in(depth: &BTreeMap<StmtId, usize>, unit: &Unit, tbr: &Tbr, f: SymbolId) -> bool {
    let rank = unit.symbol(f).rank();
    tbr.records
        .iter()
        .any(|r| r.variable == f && depth.get(&r.stmt).copied().unwrap_or(0) > rank)
}

#[cfg(test)]
mod tests {
    use crate::test_support::program;

    /// The formals `unit` leaves to its callers, by name, and what `top`
    /// records around its call.
    fn left(src: &str, unit: &str) -> (Vec<String>, Vec<String>) {
        let p = program(src);
        let request = crate::test_support::request("top", &["a", "b", "c"], &["y"]);
        let facts = crate::facts::analyse(&p, &request, None);
        let u = p.units.iter().find(|u| u.name == unit).unwrap();
        let left = facts
            .tbr_of(u.id)
            .unwrap()
            .left_to_callers
            .iter()
            .map(|s| u.symbol(*s).name.clone())
            .collect();
        let top = p.units.iter().find(|u| u.name == "top").unwrap();
        let records = facts
            .decisions_of(top.id)
            .unwrap()
            .calls
            .values()
            .flat_map(|c| c.records.iter().map(|r| r.text(top)))
            .collect();
        (left, records)
    }

    /// `top` needs the values `c` had before its call of `mm` (the
    /// adjoint of `c*c`); `mm` accumulates a product into `c`.
    const SRC: &str = include_str!("../../../tests/fixtures/kernels/callers_save.f90");

    #[test]
    fn a_product_accumulated_in_three_loops_is_saved_by_its_caller() {
        let src = SRC.to_string();
        // `top` needs the values `c` had before the call (the adjoint of
        // `c*c`); `mm` itself needs none of the ones it overwrites.
        let (left_c, records) = left(&src, "mm");
        assert_eq!(left_c, ["c"]);
        assert_eq!(records, ["c"]);
        // Its own adjoint reads them: `c*c` inside.
        let own = src.replace("c(i, j) + t * a(i, l)", "c(i, j) * c(i, j) + t * a(i, l)");
        assert_eq!(left(&own, "mm"), (vec![], vec![]));
        // As many loops as dimensions: each element is overwritten once,
        // its record costs no more than the caller's save.
        let once = src.replace("    do l = 1, k\n", "    l = k\n").replace(
            "      end do\n    end do\n  end do\nend subroutine",
            "      end do\n  end do\nend subroutine",
        );
        assert!(once.contains("l = k"), "{once}");
        assert_eq!(left(&once, "mm"), (vec![], vec![]));
        // A row no expression bounds (a pivot read at run time): the
        // region spans the declared leading dimension, which a caller
        // passing the tail of an array may not have.
        let pivot = src.replace(
            "c(i, j) = c(i, j) + t * a(i, l)",
            "c(1 + int(abs(t)), j) = c(1 + int(abs(t)), j) + t * a(i, l)",
        );
        assert_eq!(left(&pivot, "mm"), (vec![], vec![]));
        // Passed on to a procedure: its region would be the callee's.
        let passed = src.replace(
            "  do j = 1, n\n    do l",
            "  call touch(c)\n  do j = 1, n\n    do l",
        )
            + "subroutine touch(c)\n  real(8) :: c(*)\n  c(1) = 2 * c(1)\nend subroutine\n";
        assert!(left(&passed, "mm").0.is_empty());
    }
}
