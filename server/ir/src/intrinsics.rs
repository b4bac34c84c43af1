//! Names of Fortran intrinsic procedures dfort recognises, and what later
//! analyses need to know of them.

/// Whether derivatives can flow through an intrinsic function's result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResultKind {
    /// A real or complex result that depends differentiably (almost
    /// everywhere) on real arguments.
    Differentiable,
    /// An integer, logical or character result, or an inquiry: no
    /// derivative flows through it.
    NoDerivative,
}

use ResultKind::{Differentiable as D, NoDerivative as N};

/// Intrinsic functions (lower case), one entry each.
const FUNCTIONS: &[(&str, ResultKind)] = &[
    ("abs", D),
    ("aimag", D),
    ("aint", D),
    ("anint", D),
    ("ceiling", N),
    ("cmplx", D),
    ("conjg", D),
    ("dble", D),
    ("dim", D),
    ("dprod", D),
    ("floor", N),
    ("int", N),
    ("max", D),
    ("min", D),
    ("mod", D),
    ("modulo", D),
    ("nint", N),
    ("real", D),
    ("sign", D),
    ("float", D),
    ("sngl", D),
    ("dfloat", D),
    ("idint", N),
    ("ifix", N),
    ("dabs", D),
    ("iabs", D),
    ("dmax1", D),
    ("dmin1", D),
    ("amax1", D),
    ("amin1", D),
    ("max0", D),
    ("min0", D),
    ("amax0", D),
    ("amin0", D),
    ("max1", D),
    ("min1", D),
    ("dsign", D),
    ("isign", D),
    ("dmod", D),
    ("amod", D),
    ("dint", D),
    ("dnint", D),
    ("idnint", N),
    ("dcmplx", D),
    ("dconjg", D),
    ("dimag", D),
    ("ddim", D),
    ("idim", D),
    ("acos", D),
    ("asin", D),
    ("atan", D),
    ("atan2", D),
    ("cos", D),
    ("cosh", D),
    ("exp", D),
    ("log", D),
    ("log10", D),
    ("sin", D),
    ("sinh", D),
    ("sqrt", D),
    ("tan", D),
    ("tanh", D),
    ("dacos", D),
    ("dasin", D),
    ("datan", D),
    ("datan2", D),
    ("dcos", D),
    ("dcosh", D),
    ("dexp", D),
    ("dlog", D),
    ("dlog10", D),
    ("dsin", D),
    ("dsinh", D),
    ("dsqrt", D),
    ("dtan", D),
    ("dtanh", D),
    ("alog", D),
    ("alog10", D),
    ("cabs", D),
    ("ccos", D),
    ("cexp", D),
    ("clog", D),
    ("csin", D),
    ("csqrt", D),
    ("erf", D),
    ("erfc", D),
    ("gamma", D),
    ("log_gamma", D),
    ("hypot", D),
    ("acosh", D),
    ("asinh", D),
    ("atanh", D),
    ("bessel_j0", D),
    ("bessel_j1", D),
    ("kind", N),
    ("selected_real_kind", N),
    ("selected_int_kind", N),
    ("huge", N),
    ("tiny", N),
    ("epsilon", N),
    ("precision", N),
    ("range", N),
    ("digits", N),
    ("radix", N),
    ("size", N),
    ("shape", N),
    ("lbound", N),
    ("ubound", N),
    ("allocated", N),
    ("present", N),
    ("associated", N),
    ("len", N),
    ("len_trim", N),
    ("storage_size", N),
    ("bit_size", N),
    ("sum", D),
    ("product", D),
    ("maxval", D),
    ("minval", D),
    ("maxloc", N),
    ("minloc", N),
    ("dot_product", D),
    ("matmul", D),
    ("transpose", D),
    ("reshape", D),
    ("spread", D),
    ("pack", D),
    ("unpack", D),
    ("merge", D),
    ("count", N),
    ("any", N),
    ("all", N),
    ("cshift", D),
    ("eoshift", D),
    ("norm2", D),
    ("char", D),
    ("ichar", N),
    ("achar", D),
    ("iachar", N),
    ("index", N),
    ("scan", N),
    ("verify", N),
    ("trim", D),
    ("adjustl", D),
    ("adjustr", D),
    ("repeat", D),
    ("lge", N),
    ("lgt", N),
    ("lle", N),
    ("llt", N),
    ("new_line", D),
    ("iand", N),
    ("ior", N),
    ("ieor", N),
    ("not", N),
    ("ishft", N),
    ("ishftc", N),
    ("btest", N),
    ("ibset", N),
    ("ibclr", N),
    ("logical", N),
    ("transfer", D),
    ("null", D),
];

/// Intrinsic subroutines.
const SUBROUTINES: &[&str] = &[
    "random_number",
    "random_seed",
    "cpu_time",
    "system_clock",
    "date_and_time",
    "get_command_argument",
    "get_environment_variable",
    "mvbits",
    "move_alloc",
    "execute_command_line",
];

fn function(name: &str) -> Option<ResultKind> {
    FUNCTIONS.iter().find(|(n, _)| *n == name).map(|(_, k)| *k)
}

pub fn is_intrinsic_function(name: &str) -> bool {
    function(name).is_some()
}

pub fn is_intrinsic_subroutine(name: &str) -> bool {
    SUBROUTINES.contains(&name)
}

/// The `from` and `to` arguments of `call move_alloc(from, to)` (by
/// position or keyword): the allocation of `from`, with its values, moves
/// to `to` (whose own is freed first), and `from` is left unallocated.
pub fn move_alloc(kind: &crate::StmtKind) -> Option<(&crate::Expr, &crate::Expr)> {
    let crate::StmtKind::Call {
        name, target, args, ..
    } = kind
    else {
        return None;
    };
    if name != "move_alloc" || *target != crate::CallTarget::External || args.len() != 2 {
        return None;
    }
    let by = |kw: &str, pos: usize| {
        args.iter()
            .find(|a| a.keyword.as_deref() == Some(kw))
            .or_else(|| args.get(pos).filter(|a| a.keyword.is_none()))
            .map(|a| &a.value)
    };
    Some((by("from", 0)?, by("to", 1)?))
}

/// True when the intrinsic's result carries no derivative.
pub fn has_non_differentiable_result(name: &str) -> bool {
    function(name) == Some(ResultKind::NoDerivative)
}

/// The array intrinsics linear in some of their arguments: argument names
/// in positional order, and those that carry the data the result depends
/// on linearly (the others — `dim`, `shift`, `mask`, `shape`, … — are
/// read as values).
const LINEAR_ARRAY: &[(&str, &[&str], &[&str])] = &[
    ("sum", &["array", "dim", "mask"], &["array"]),
    ("spread", &["source", "dim", "ncopies"], &["source"]),
    ("cshift", &["array", "shift", "dim"], &["array"]),
    (
        "eoshift",
        &["array", "shift", "boundary", "dim"],
        &["array", "boundary"],
    ),
    (
        "reshape",
        &["source", "shape", "pad", "order"],
        &["source", "pad"],
    ),
    ("pack", &["array", "mask", "vector"], &["array", "vector"]),
    ("unpack", &["vector", "mask", "field"], &["vector", "field"]),
    (
        "merge",
        &["tsource", "fsource", "mask"],
        &["tsource", "fsource"],
    ),
    ("transpose", &["matrix"], &["matrix"]),
];

/// The argument names of a linear array intrinsic (see [`LINEAR_ARRAY`])
/// and which of them carry data.
pub fn linear_array(name: &str) -> Option<(&'static [&'static str], &'static [&'static str])> {
    LINEAR_ARRAY
        .iter()
        .find(|(n, ..)| *n == name)
        .map(|(_, names, data)| (*names, *data))
}

/// The actual arguments of a reference to a linear array intrinsic in
/// their slots (positional, then by keyword; `None`: absent); `None` when
/// the intrinsic is not one or an argument does not fit.
pub fn slots<'e>(
    name: &str,
    args: &'e [crate::ir::Arg],
) -> Option<Vec<Option<&'e crate::ir::Expr>>> {
    let (names, _) = linear_array(name)?;
    let mut out: Vec<Option<&crate::ir::Expr>> = vec![None; names.len()];
    for (i, a) in args.iter().enumerate() {
        let k = match &a.keyword {
            Some(kw) => names.iter().position(|n| n == kw)?,
            None => i,
        };
        let slot = out.get_mut(k)?;
        if slot.is_some() {
            return None;
        }
        *slot = Some(&a.value);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn tables() {
        assert!(is_intrinsic_function("sin"));
        assert!(is_intrinsic_function("dot_product"));
        assert!(!is_intrinsic_function("foo"));
        assert!(is_intrinsic_subroutine("random_number"));
        assert!(has_non_differentiable_result("nint"));
        assert!(!has_non_differentiable_result("sqrt"));
        assert!(!has_non_differentiable_result("foo"));
        for (i, (a, _)) in FUNCTIONS.iter().enumerate() {
            assert!(!FUNCTIONS[i + 1..].iter().any(|(b, _)| a == b), "{a} twice");
        }
    }
}
