//! Names of Fortran intrinsic procedures dfort recognises, and what later
//! analyses need to know of them.

/// Intrinsic functions (lower case).
const FUNCTIONS: &[&str] = &[
    // numeric
    "abs", "aimag", "aint", "anint", "ceiling", "cmplx", "conjg", "dble", "dim", "dprod",
    "floor", "int", "max", "min", "mod", "modulo", "nint", "real", "sign", "float", "sngl",
    "dfloat", "idint", "ifix", "dabs", "iabs", "dmax1", "dmin1", "amax1", "amin1", "max0",
    "min0", "amax0", "amin0", "max1", "min1", "dsign", "isign", "dmod", "amod", "dint", "dnint",
    "idnint", "dcmplx", "dconjg", "dimag", "ddim", "idim",
    // mathematical
    "acos", "asin", "atan", "atan2", "cos", "cosh", "exp", "log", "log10", "sin", "sinh",
    "sqrt", "tan", "tanh", "dacos", "dasin", "datan", "datan2", "dcos", "dcosh", "dexp",
    "dlog", "dlog10", "dsin", "dsinh", "dsqrt", "dtan", "dtanh", "alog", "alog10", "cabs",
    "ccos", "cexp", "clog", "csin", "csqrt", "erf", "erfc", "gamma", "log_gamma", "hypot",
    "acosh", "asinh", "atanh", "bessel_j0", "bessel_j1",
    // kind / inquiry
    "kind", "selected_real_kind", "selected_int_kind", "huge", "tiny", "epsilon", "precision",
    "range", "digits", "radix", "size", "shape", "lbound", "ubound", "allocated", "present",
    "associated", "len", "len_trim", "storage_size", "bit_size",
    // array
    "sum", "product", "maxval", "minval", "maxloc", "minloc", "dot_product", "matmul",
    "transpose", "reshape", "spread", "pack", "unpack", "merge", "count", "any", "all",
    "cshift", "eoshift", "norm2",
    // character
    "char", "ichar", "achar", "iachar", "index", "scan", "verify", "trim", "adjustl",
    "adjustr", "repeat", "lge", "lgt", "lle", "llt", "new_line",
    // bits and misc
    "iand", "ior", "ieor", "not", "ishft", "ishftc", "btest", "ibset", "ibclr", "logical",
    "transfer", "null",
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

/// Intrinsic functions whose result is an integer or logical whatever their
/// arguments: no derivative flows through them.
const NON_DIFFERENTIABLE_RESULT: &[&str] = &[
    "int", "nint", "floor", "ceiling", "idint", "ifix", "idnint", "size", "shape", "lbound",
    "ubound", "len", "len_trim", "kind", "selected_real_kind", "selected_int_kind",
    "allocated", "present", "associated", "count", "any", "all", "maxloc", "minloc",
    "ichar", "iachar", "index", "scan", "verify", "lge", "lgt", "lle", "llt", "btest",
    "iand", "ior", "ieor", "not", "ishft", "ishftc", "ibset", "ibclr", "logical",
    "precision", "range", "digits", "radix", "bit_size", "storage_size", "huge", "tiny",
    "epsilon",
];

pub fn is_intrinsic_function(name: &str) -> bool {
    FUNCTIONS.contains(&name)
}

pub fn is_intrinsic_subroutine(name: &str) -> bool {
    SUBROUTINES.contains(&name)
}

/// True when the intrinsic's result carries no derivative.
pub fn has_non_differentiable_result(name: &str) -> bool {
    NON_DIFFERENTIABLE_RESULT.contains(&name)
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
        for n in NON_DIFFERENTIABLE_RESULT {
            assert!(is_intrinsic_function(n), "{n}");
        }
    }
}
