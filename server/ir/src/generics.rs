//! Calls of generic names (`interface scale / module procedure scale_r,
//! scale_v`) resolved to their specific procedure, as a compiler does:
//! the one specific whose dummies the actuals fit by type, kind and rank
//! (keywords and absent optional dummies counted). The call keeps its
//! generic name (a specific may be private to its module) and gets the
//! specific as its target, so that the analyses and the generators
//! follow it. Defined operators (`a .dot. b`, and `+`, `==`, `-a` … on
//! derived-type operands where `interface operator(+)` is visible)
//! become references to the generic `operator(op)`, and an assignment
//! `a = b` that `interface assignment(=)` covers a CALL of
//! `assignment(=)`; the printers write them back in operator form.
//!
//! Contract: a call is resolved only when exactly one specific fits; an
//! actual whose type the linker cannot tell (a reference to a function
//! without source) fits any dummy, so that a call that may fit two stays
//! unresolved (and is refused later as a call without source, never
//! bound to the wrong one). An operator or assignment is resolved only
//! when every operand's type is known and one is of derived type (an
//! intrinsic operation otherwise). Runs after the other references of
//! the unit are resolved ([`crate::link`]).

use crate::ir::*;
use crate::link::remote_name;
use std::collections::HashMap;

use crate::Units;

/// What an actual or a dummy is: type, kind (bytes; `None` when unknown),
/// derived type name, rank.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Shape {
    base: BaseType,
    kind: Option<u32>,
    derived: Option<String>,
    rank: usize,
}

/// A specific procedure's dummies: name, shape, optional.
pub(crate) type Signature = Vec<(String, Shape, bool)>;

/// Per generic name: its specifics' units and signatures.
pub(crate) type Generics = HashMap<String, Vec<(UnitId, Signature)>>;

/// The generic names visible in unit `i` that its calls use, each with
/// its specifics' units and signatures.
pub(crate) fn visible(units: &Units, globals: &HashMap<String, UnitId>, i: UnitId) -> Generics {
    let u = &units[i];
    let mut called: Vec<String> = Vec::new();
    for st in &u.stmts {
        match &st.kind {
            StmtKind::Call { name, .. } => called.push(name.clone()),
            StmtKind::Assign { .. } => called.push(ASSIGNMENT_GENERIC.into()),
            _ => {}
        }
        for e in st.kind.exprs() {
            e.walk(&mut |x| match &x.kind {
                ExprKind::FunctionCall { name, .. } => called.push(name.clone()),
                ExprKind::Binary { op, .. } => called.push(operator_generic(op.as_str())),
                ExprKind::Unary { op, .. } => called.push(operator_generic(op.as_str())),
                _ => {}
            });
        }
    }
    called.sort();
    called.dedup();
    let mut out = HashMap::new();
    for name in called {
        let Some((owner, specifics)) = find(units, u, &name, 0) else {
            continue;
        };
        let list: Vec<(UnitId, Signature)> = specifics
            .iter()
            .filter_map(|s| {
                let id = specific_unit(units, globals, owner, s)?;
                Some((id, signature(&units[id])))
            })
            .collect();
        if !list.is_empty() {
            out.insert(name, list);
        }
    }
    out
}

/// The unit declaring generic `name` as `u` sees it (its own interface
/// blocks, its hosts', the modules it uses, under their renames), with
/// the specifics' names.
fn find(units: &Units, u: &Unit, name: &str, depth: u32) -> Option<(UnitId, Vec<String>)> {
    if depth > 16 {
        return None;
    }
    let own = u
        .interface_blocks
        .iter()
        .filter(|b| b.generic.as_deref() == Some(name))
        .flat_map(|b| b.specifics.iter().cloned())
        .collect::<Vec<_>>();
    if !own.is_empty() {
        return Some((u.id, own));
    }
    for us in &u.uses {
        let (Some(m), Some(remote)) = (us.target, remote_name(us, name)) else {
            continue;
        };
        if let Some(found) = units.get(m).and_then(|m| find(units, m, remote, depth + 1)) {
            return Some(found);
        }
    }
    let host = u.parent.and_then(|p| units.get(p))?;
    find(units, host, name, depth + 1)
}

/// The unit of specific `name` of a generic declared in `owner`: a
/// procedure of `owner`'s module (or of a module it uses), else an
/// external one.
fn specific_unit(
    units: &Units,
    globals: &HashMap<String, UnitId>,
    owner: UnitId,
    name: &str,
) -> Option<UnitId> {
    let mut cur = units.get(owner);
    let mut depth = 0;
    while let Some(c) = cur {
        if let Some(&ch) = c.children.iter().find(|ch| {
            units
                .get(**ch)
                .is_some_and(|x| x.name == name && x.is_procedure())
        }) {
            return Some(ch);
        }
        for us in &c.uses {
            let (Some(m), Some(remote)) = (us.target, remote_name(us, name)) else {
                continue;
            };
            if let Some(&ch) = units.get(m).and_then(|m| {
                m.children
                    .iter()
                    .find(|ch| units.get(**ch).is_some_and(|x| x.name == remote))
            }) {
                return Some(ch);
            }
        }
        depth += 1;
        if depth > 16 {
            break;
        }
        cur = c.parent.and_then(|p| units.get(p));
    }
    globals.get(name).copied()
}

fn signature(c: &Unit) -> Signature {
    c.args
        .iter()
        .map(|&a| {
            let s = c.symbol(a);
            (
                s.name.clone(),
                shape_of_type(&s.ty, s.rank()),
                s.attrs.optional,
            )
        })
        .collect()
}

fn shape_of_type(t: &Type, rank: usize) -> Shape {
    let default = match t.base {
        BaseType::Character => Some(1),
        BaseType::Derived | BaseType::None => None,
        _ => Some(4),
    };
    let kind = match (t.kind, &t.kind_text) {
        (Some(k), _) => Some(k),
        (None, Some(_)) => None,
        (None, None) => default,
    };
    Shape {
        base: t.base,
        kind,
        derived: t.derived.clone(),
        rank,
    }
}

/// What actual `e` of a call in `u` is, when the linker can tell.
fn actual(units: &Units, u: &Unit, e: &Expr) -> Option<Shape> {
    let scalar = |base, kind| Shape {
        base,
        kind: Some(kind),
        derived: None,
        rank: 0,
    };
    match &e.kind {
        ExprKind::Var(s) => {
            let sym = u.symbol(*s);
            (sym.ty.base != BaseType::None).then(|| shape_of_type(&sym.ty, sym.rank()))
        }
        ExprKind::ArrayRef { array, subs } => {
            let sym = u.symbol(*array);
            let rank = subs
                .iter()
                .filter(|s| matches!(s, Subscript::Range { .. }))
                .count();
            Some(shape_of_type(&sym.ty, rank))
        }
        ExprKind::Component { base, .. } => {
            let c = crate::types::component_def_among(units, u, e)?;
            let own = crate::types::component_rank_among(units, u, e)?;
            // At most one part of a reference has a rank.
            let below = actual(units, u, base).map_or(0, |s| s.rank);
            Some(shape_of_type(&c.ty, own + below))
        }
        ExprKind::Int(_) => Some(scalar(BaseType::Integer, 4)),
        ExprKind::Real { kind, .. } => Some(scalar(BaseType::Real, *kind)),
        ExprKind::Logical(_) => Some(scalar(BaseType::Logical, 4)),
        ExprKind::Str(_) => Some(scalar(BaseType::Character, 1)),
        ExprKind::Unary { operand, .. } => actual(units, u, operand),
        ExprKind::Binary { op, lhs, rhs } => {
            let (a, b) = (actual(units, u, lhs)?, actual(units, u, rhs)?);
            let rank = a.rank.max(b.rank);
            if !matches!(
                op,
                BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Div | BinaryOp::Pow
            ) {
                return Some(Shape {
                    rank,
                    ..scalar(BaseType::Logical, 4)
                });
            }
            Some(promoted(a, b, rank))
        }
        ExprKind::ArrayCtor(items) => Some(Shape {
            rank: 1,
            ..actual(units, u, items.first()?)?
        }),
        ExprKind::Intrinsic { name, args } => intrinsic(units, u, name, args),
        ExprKind::FunctionCall {
            target: CallTarget::Unit(c),
            args,
            ..
        } => {
            let cu = units.get(*c)?;
            let r = cu.symbol(cu.result?);
            // An elemental function has the rank of its largest actual.
            let rank = match cu.elemental {
                true => args
                    .iter()
                    .map(|a| actual(units, u, &a.value).map(|s| s.rank))
                    .try_fold(0, |m, r| r.map(|r| m.max(r)))?,
                false => r.rank(),
            };
            Some(shape_of_type(&r.ty, rank))
        }
        // A statement function is a scalar of its name's type, and so is
        // a function without source whose name the unit types.
        ExprKind::FunctionCall {
            target: CallTarget::StatementFunction(i),
            ..
        } => {
            let sym = u.symbol(u.stmt_functions.get(*i as usize)?.name);
            (sym.ty.base != BaseType::None).then(|| shape_of_type(&sym.ty, 0))
        }
        ExprKind::FunctionCall {
            target: CallTarget::External,
            name,
            ..
        } => {
            let sym = u.symbol(u.lookup(name)?);
            (sym.ty.base != BaseType::None && sym.rank() == 0).then(|| shape_of_type(&sym.ty, 0))
        }
        ExprKind::Complex(re, im) => {
            let kind = [re, im]
                .iter()
                .filter_map(|e| actual(units, u, e))
                .filter(|s| s.base == BaseType::Real)
                .map(|s| s.kind)
                .max()
                .flatten();
            Some(Shape {
                kind: kind.or(Some(4)),
                ..scalar(BaseType::Complex, 4)
            })
        }
        _ => None,
    }
}

/// The type of a numeric operation on `a` and `b` (integer < real <
/// complex; of one type, the larger kind), of rank `rank`.
fn promoted(a: Shape, b: Shape, rank: usize) -> Shape {
    let order = |b: BaseType| match b {
        BaseType::Integer => 0,
        BaseType::Real => 1,
        BaseType::Complex => 2,
        _ => 3,
    };
    let (hi, lo) = if order(a.base) >= order(b.base) {
        (a, b)
    } else {
        (b, a)
    };
    let kind = match hi.base == lo.base {
        true => hi.kind.zip(lo.kind).map(|(x, y)| x.max(y)),
        false => hi.kind,
    };
    Shape { kind, rank, ..hi }
}

/// What a reference to intrinsic `name` gives: reductions a scalar (of one
/// rank less with `dim`), the array functions (`matmul`, `transpose`,
/// `spread`, `pack`, `reshape` by a constructor, the shifts) their shape,
/// conversions their type, and every elemental function of the table
/// ([`crate::intrinsics`]) its result type, of the rank of its largest
/// argument (a kind the arguments do not tell is unknown).
fn intrinsic(units: &Units, u: &Unit, name: &str, args: &[Arg]) -> Option<Shape> {
    use crate::intrinsics::Ty;
    let first = actual(units, u, &args.first()?.value)?;
    // `dim=`, or an integer second argument of a reduction.
    let with_dim = args.iter().enumerate().any(|(k, a)| match &a.keyword {
        Some(kw) => kw == "dim",
        None => k == 1 && actual(units, u, &a.value).is_some_and(|s| s.base == BaseType::Integer),
    });
    let reduced = if with_dim {
        first.rank.saturating_sub(1)
    } else {
        0
    };
    let int = |rank| Shape {
        base: BaseType::Integer,
        kind: Some(4),
        derived: None,
        rank,
    };
    let rank = args
        .iter()
        .filter_map(|a| actual(units, u, &a.value))
        .map(|s| s.rank)
        .max()
        .unwrap_or(0);
    let of = |base, kind| Shape {
        base,
        kind,
        derived: None,
        rank,
    };
    Some(match name {
        "sum" | "product" | "maxval" | "minval" | "norm2" => Shape {
            rank: reduced,
            ..first
        },
        "any" | "all" => Shape {
            rank: reduced,
            ..first
        },
        "count" => int(reduced),
        "maxloc" | "minloc" | "shape" | "lbound" | "ubound" if !with_dim => int(1),
        "maxloc" | "minloc" | "lbound" | "ubound" => int(0),
        "dot_product" | "matmul" => {
            let second = actual(units, u, &args.get(1)?.value)?;
            let rank = match name {
                "dot_product" => 0,
                _ if first.rank == 2 && second.rank == 2 => 2,
                _ => 1,
            };
            promoted(first, second, rank)
        }
        "transpose" => Shape { rank: 2, ..first },
        "spread" => Shape {
            rank: first.rank + 1,
            ..first
        },
        "pack" => Shape { rank: 1, ..first },
        "cshift" | "eoshift" => first,
        "reshape" => match &args.get(1)?.value.kind {
            ExprKind::ArrayCtor(items) => Shape {
                rank: items.len(),
                ..first
            },
            _ => return None,
        },
        "dble" => of(BaseType::Real, Some(8)),
        "int" | "nint" | "floor" | "ceiling" | "size" => of(BaseType::Integer, Some(4)),
        _ => {
            let i = crate::intrinsics::lookup(name).filter(|i| i.elemental)?;
            // A KIND argument (`real(x, 8)`) decides the kind: unknown.
            let given = args.len() > 1;
            match i.ty {
                Ty::Arg => Shape { rank, ..first },
                Ty::Real => {
                    let kind = match first.base {
                        _ if given => None,
                        BaseType::Real | BaseType::Complex => first.kind,
                        _ => Some(4),
                    };
                    of(BaseType::Real, kind)
                }
                Ty::Integer => of(BaseType::Integer, (!given).then_some(4)),
                Ty::Logical => of(BaseType::Logical, Some(4)),
                Ty::Character => of(BaseType::Character, Some(1)),
                Ty::Complex => of(BaseType::Complex, None),
            }
        }
    })
}

/// The specific of `candidates` the actuals `args` fit, when exactly one
/// does; for an operator or an assignment (`operands`), only when every
/// operand's type is known and one is of derived type.
fn choose(
    units: &Units,
    u: &Unit,
    args: &[Arg],
    candidates: &[(UnitId, Signature)],
    operands: bool,
) -> Option<UnitId> {
    let shapes: Vec<Option<Shape>> = args.iter().map(|a| actual(units, u, &a.value)).collect();
    if operands
        && !(shapes.iter().all(Option::is_some)
            && shapes.iter().flatten().any(|s| s.base == BaseType::Derived))
    {
        return None;
    }
    // An elemental specific fits actuals of one rank where it has
    // scalars, when no specific fits them rank for rank (F2018 15.5.5.2).
    let fits = |sig: &Signature, elemental: bool| {
        let mut bound = vec![false; sig.len()];
        let mut spread = None;
        for (k, a) in args.iter().enumerate() {
            let slot = match &a.keyword {
                Some(kw) => sig.iter().position(|(n, _, _)| n == kw),
                None => (k < sig.len()).then_some(k),
            };
            let Some(slot) = slot else { return false };
            if bound[slot] {
                return false;
            }
            bound[slot] = true;
            if let Some(have) = &shapes[k] {
                let want = &sig[slot].1;
                let kinds = match (have.kind, want.kind) {
                    (Some(x), Some(y)) => x == y,
                    _ => true,
                };
                let ranks = match (elemental, want.rank, have.rank) {
                    (true, 0, 0) => true,
                    (true, 0, r) => *spread.get_or_insert(r) == r,
                    (_, w, h) => w == h,
                };
                if have.base != want.base
                    || !ranks
                    || !kinds
                    || (want.base == BaseType::Derived && have.derived != want.derived)
                {
                    return false;
                }
            }
        }
        sig.iter()
            .zip(&bound)
            .all(|((_, _, optional), b)| *b || *optional)
    };
    let only = |elemental: bool| {
        let mut found = candidates.iter().filter(|(id, sig)| {
            let spreads = elemental && units.get(*id).is_some_and(|c| c.elemental);
            (spreads || !elemental) && fits(sig, spreads)
        });
        match (found.next(), found.next()) {
            (Some((id, _)), None) => Ok(Some(*id)),
            (None, _) => Ok(None),
            _ => Err(()),
        }
    };
    match only(false) {
        Ok(None) => only(true).ok().flatten(),
        found => found.ok().flatten(),
    }
}

/// Sets the target of each call of a generic name in `u` whose specific
/// the actuals decide, and turns the operators and assignments a
/// visible `operator(…)` or `assignment(=)` interface covers into its
/// specific's references and calls (`generics` from [`visible`], on the
/// units as they were before `u` changed).
pub(crate) fn resolve_calls(units: &Units, u: &mut Unit, generics: &Generics) {
    if generics.is_empty() {
        return;
    }
    let snapshot = u.clone();
    let pick = |name: &str, args: &[Arg]| {
        let operands = generic_operator(name).is_some() || name == ASSIGNMENT_GENERIC;
        generics
            .get(name)
            .and_then(|c| choose(units, &snapshot, args, c, operands))
    };
    let operand = |e: &Expr| Arg {
        keyword: None,
        value: e.clone(),
    };
    for st in u.stmts.iter_mut() {
        // Operands first, so that an operator's operands, and a call's
        // actuals, have the types of the specifics already chosen for
        // them.
        for e in st.kind.exprs_mut() {
            e.walk_post_mut(&mut |x| {
                let name = match &mut x.kind {
                    ExprKind::FunctionCall { name, target, args } => {
                        if let Some(id) = pick(name, args) {
                            *target = CallTarget::Unit(id);
                        }
                        return;
                    }
                    ExprKind::Binary { op, .. } => operator_generic(op.as_str()),
                    ExprKind::Unary { op, .. } => operator_generic(op.as_str()),
                    _ => return,
                };
                if !generics.contains_key(&name) {
                    return;
                }
                let args = match &x.kind {
                    ExprKind::Binary { lhs, rhs, .. } => vec![operand(lhs), operand(rhs)],
                    ExprKind::Unary { operand: o, .. } => vec![operand(o)],
                    _ => return,
                };
                if let Some(id) = pick(&name, &args) {
                    x.kind = ExprKind::FunctionCall {
                        name,
                        target: CallTarget::Unit(id),
                        args,
                    };
                }
            });
        }
        if let StmtKind::Call { name, target, args } = &mut st.kind {
            if let Some(id) = pick(name, args) {
                *target = CallTarget::Unit(id);
            }
        }
        if let (StmtKind::Assign { lhs, rhs }, true) =
            (&st.kind, generics.contains_key(ASSIGNMENT_GENERIC))
        {
            let args = vec![operand(lhs), operand(rhs)];
            if let Some(id) = pick(ASSIGNMENT_GENERIC, &args) {
                st.kind = StmtKind::Call {
                    name: ASSIGNMENT_GENERIC.into(),
                    target: CallTarget::Unit(id),
                    args,
                };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::test_support::program;
    use crate::*;

    /// The name of the unit each CALL of `unit` goes to (`-` when none).
    fn targets(p: &Program, unit: &str) -> Vec<String> {
        let u = p.units.iter().find(|u| u.name == unit).expect("unit");
        u.stmts
            .iter()
            .filter_map(|st| match &st.kind {
                StmtKind::Call { target, .. } => Some(match target {
                    CallTarget::Unit(c) => p.unit(*c).name.clone(),
                    _ => "-".into(),
                }),
                _ => None,
            })
            .collect()
    }

    const SRC: &str = "
module m
  interface put
    module procedure put4, put8, putv
  end interface
  interface same
    module procedure same_a, same_b
  end interface
contains
  subroutine put4(x)
    real(4) :: x
  end subroutine
  subroutine put8(x)
    real(8) :: x
  end subroutine
  subroutine putv(x, n)
    real(8) :: x(:)
    integer, optional :: n
  end subroutine
  subroutine same_a(x, k)
    real(8) :: x
    integer :: k
  end subroutine
  subroutine same_b(x, c)
    real(8) :: x
    character :: c
  end subroutine
end module
subroutine t(a, b, v)
  use m, only: put, same
  real(4) :: a
  real(8) :: b, v(4)
  call put(a)
  call put(b)
  call put(v)
  call put(v, n=3)
  call put(1.0d0 + a)
  call same(b, 2)
  call same(b, 'c')
  call same(b)
end subroutine
";

    #[test]
    fn the_actuals_choose_the_specific_by_kind_rank_and_keyword() {
        let p = program(SRC);
        assert_eq!(
            targets(&p, "t"),
            ["put4", "put8", "putv", "putv", "put8", "same_a", "same_b", "-"]
        );
    }

    #[test]
    fn array_intrinsics_give_their_actuals_type_and_rank() {
        // Fuzzer seed 20261205, case 668: `sum(matmul(t2, g)) * td` was
        // not typed, so its operator did not reach its specific.
        let calls = "call put(sum(matmul(m2, v)))\n  call put(matmul(m2, v))\n  \
                     call put(sum(m2, dim=1))\n  call put(sum(m2, 2))\n  call put(pack(v, v > 0))\n  \
                     call put(spread(b, 1, 4))\n  call put(reshape(m2, [16]))\n  \
                     call put(dot_product(v, v))\n  call put(maxval(transpose(m2)))\n  \
                     call put(eoshift(v, 1))\n  call put([b, b])\n";
        let src = SRC
            .replace("real(8) :: b, v(4)", "real(8) :: b, v(4), m2(4, 4)")
            .replace("call put(a)\n", calls);
        let p = program(&src);
        assert_eq!(
            targets(&p, "t")[..11],
            [
                "put8", "putv", "putv", "putv", "putv", "putv", "putv", "put8", "put8", "putv",
                "putv"
            ]
        );
    }

    #[test]
    fn an_actual_of_unknown_type_leaves_a_call_two_specifics_fit_unresolved() {
        // `g(1)` is a function without source: its type is not known, so
        // both specifics fit and the call stays unresolved.
        let src = SRC.replace("call put(a)\n", "call put(g(1))\n");
        let p = program(&src);
        assert_eq!(targets(&p, "t")[0], "-");
    }

    #[test]
    fn an_elemental_specific_takes_arrays_no_other_specific_fits_rank_for_rank() {
        let src = "
module e
  interface sc
    module procedure sc_v, sc_e
  end interface
  interface tw
    module procedure tw_e
  end interface
contains
  subroutine sc_v(a, x)
    real(8), intent(in) :: a
    real(8), intent(inout) :: x(:)
  end subroutine
  elemental subroutine sc_e(a, x)
    real(8), intent(in) :: a
    real(8), intent(inout) :: x
  end subroutine
  elemental real(8) function tw_e(x)
    real(8), intent(in) :: x
    tw_e = 2*x
  end function
end module
subroutine t(s, v, w, z)
  use e
  real(8) :: s, v(3), w(2, 2), z(3, 3)
  call sc(s, v)
  call sc(s, w)
  call sc(s, s)
  call sc(v, w)
  call sc(s, tw(w))
  call sc(v, tw(v))
  call sc(z, w)
end subroutine
";
        let p = program(src);
        // The vector goes to the non-elemental specific; a matrix or a
        // scalar to the elemental one; arrays of two ranks to none; the
        // elemental function's reference has its actual's rank.
        assert_eq!(
            targets(&p, "t"),
            ["sc_v", "sc_e", "sc_e", "-", "sc_e", "sc_e", "sc_e"]
        );
    }

    /// Each statement of `unit` with the function references in it and
    /// the units they go to (`-` when none), as `line ; ref -> unit`.
    fn resolved(p: &Program, unit: &str) -> Vec<String> {
        let u = p.units.iter().find(|u| u.name == unit).expect("unit");
        let name = |t: &CallTarget| match t {
            CallTarget::Unit(c) => p.unit(*c).name.clone(),
            _ => "-".into(),
        };
        u.stmts
            .iter()
            .map(|st| {
                let mut line = match &st.kind {
                    StmtKind::Assign { lhs, rhs } => {
                        format!("{} = {}", dump::expr(u, lhs), dump::expr(u, rhs))
                    }
                    StmtKind::Call {
                        name: n,
                        args,
                        target,
                    } => {
                        format!("{} [{}]", dump::call_statement(u, n, args), name(target))
                    }
                    _ => String::new(),
                };
                for e in st.kind.exprs() {
                    e.walk(&mut |x| {
                        if let ExprKind::FunctionCall {
                            name: n, target, ..
                        } = &x.kind
                        {
                            line.push_str(&format!(" ; {n} -> {}", name(target)));
                        }
                    });
                }
                line
            })
            .collect()
    }

    const OPS: &str = "
module v
  private
  public :: vec, operator(+), operator(*), operator(.dot.), operator(.neg.), assignment(=)
  type vec
    real(8) :: x, y
  end type
  type holder
    type(vec) :: p
  end type
  public :: holder
  interface operator(+)
    module procedure add
  end interface
  interface operator(*)
    module procedure lscale, rscale
  end interface
  interface operator(.dot.)
    module procedure dot
  end interface
  interface operator(.neg.)
    module procedure neg
  end interface
  interface assignment(=)
    module procedure from_real
  end interface
contains
  type(vec) function add(a, b)
    type(vec), intent(in) :: a, b
  end function
  type(vec) function lscale(s, a)
    real(8), intent(in) :: s
    type(vec), intent(in) :: a
  end function
  type(vec) function rscale(a, s)
    type(vec), intent(in) :: a
    real(8), intent(in) :: s
  end function
  real(8) function dot(a, b)
    type(vec), intent(in) :: a, b
  end function
  type(vec) function neg(a)
    type(vec), intent(in) :: a
  end function
  subroutine from_real(w, s)
    type(vec), intent(out) :: w
    real(8), intent(in) :: s
  end subroutine
end module
subroutine t(a, b, h, s, y)
  use v
  type(vec) :: a, b, c
  type(holder) :: h
  real(8) :: s, y, sf, u
  real(8), external :: ext
  sf(u) = u * s
  c = a + b
  c = s
  c = sf(y)
  c = ext(y)
  c = a
  y = a%x + b%y
  c = .neg. a * s
  y = (a .dot. h%p) + (s * b .dot. a)
end subroutine
";

    #[test]
    fn operators_and_assignment_on_derived_types_go_to_their_specifics() {
        let p = program(OPS);
        assert_eq!(
            resolved(&p, "t"),
            [
                "c = a + b ; operator(+) -> add",
                "c = s [from_real]",
                "c = sf(y) [from_real] ; sf -> -",
                "c = ext(y) [from_real] ; ext -> -",
                "c = a",
                "y = a%x + b%y",
                "c = (.neg. a) * s ; operator(*) -> rscale ; operator(.neg.) -> neg",
                "y = (a .dot. h%p) + ((s * b) .dot. a) ; operator(.dot.) -> dot ; operator(.dot.) -> dot ; operator(*) -> lscale",
            ]
        );
    }

    #[test]
    fn an_operator_without_a_fitting_specific_stays_as_written() {
        // No `operator(-)` and no `.cross.`: intrinsic `-` stays, the
        // defined operator has no target.
        let src = OPS
            .replace("c = a + b\n", "c = a - b\n")
            .replace("c = s\n", "y = a .cross. b\n");
        let p = program(&src);
        let lines = resolved(&p, "t");
        assert_eq!(lines[0], "c = a - b");
        assert_eq!(lines[1], "y = a .cross. b ; operator(.cross.) -> -");
    }
}
