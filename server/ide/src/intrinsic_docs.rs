//! What the editor says of each intrinsic procedure: its arguments (the
//! standard's keywords, optional ones in brackets) and one line on what it
//! computes; with its derivative rule as `dfort_ir::intrinsics` holds it
//! (which this module reads, never restates). Completion and signature
//! help read this table.

use dfort_ir::intrinsics::{self, Rule};

/// One intrinsic procedure as the editor shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IntrinsicDoc {
    pub name: &'static str,
    /// The dummy arguments by keyword; `[k]` is optional, `...` repeats.
    pub params: &'static [&'static str],
    pub summary: &'static str,
    pub subroutine: bool,
}

const fn d(
    name: &'static str,
    params: &'static [&'static str],
    summary: &'static str,
) -> IntrinsicDoc {
    IntrinsicDoc {
        name,
        params,
        summary,
        subroutine: false,
    }
}

const fn s(
    name: &'static str,
    params: &'static [&'static str],
    summary: &'static str,
) -> IntrinsicDoc {
    IntrinsicDoc {
        name,
        params,
        summary,
        subroutine: true,
    }
}

const X: &[&str] = &["x"];
const A: &[&str] = &["a"];
const A_KIND: &[&str] = &["a", "[kind]"];
const AB: &[&str] = &["a", "b"];
const MAXMIN: &[&str] = &["a1", "a2", "[a3, ...]"];
const XY: &[&str] = &["y", "x"];
const ARRAY_DIM_MASK: &[&str] = &["array", "[dim]", "[mask]"];
const LOC: &[&str] = &["array", "[dim]", "[mask]", "[kind]", "[back]"];
const MASK_DIM: &[&str] = &["mask", "[dim]"];
const STRING: &[&str] = &["string"];
const STRING_KIND: &[&str] = &["string", "[kind]"];
const I_KIND: &[&str] = &["i", "[kind]"];
const C_KIND: &[&str] = &["c", "[kind]"];
const LEXICAL: &[&str] = &["string_a", "string_b"];
const SEARCH: &[&str] = &["string", "set", "[back]", "[kind]"];
const IJ: &[&str] = &["i", "j"];
const I_POS: &[&str] = &["i", "pos"];
const ARRAY_DIM_KIND: &[&str] = &["array", "[dim]", "[kind]"];

/// Every intrinsic the table describes, generic names first.
const DOCS: &[IntrinsicDoc] = &[
    d("abs", A, "absolute value"),
    d("aimag", &["z"], "imaginary part of a complex number"),
    d("aint", A_KIND, "truncation to a whole number (real result)"),
    d("anint", A_KIND, "nearest whole number (real result)"),
    d(
        "ceiling",
        A_KIND,
        "least integer not less than the argument",
    ),
    d(
        "cmplx",
        &["x", "[y]", "[kind]"],
        "the complex number x + iy",
    ),
    d("conjg", &["z"], "complex conjugate"),
    d("dble", A, "conversion to double precision"),
    d("dim", &["x", "y"], "positive difference max(x - y, 0)"),
    d(
        "dprod",
        &["x", "y"],
        "double precision product of two default reals",
    ),
    d(
        "floor",
        A_KIND,
        "greatest integer not greater than the argument",
    ),
    d("int", A_KIND, "conversion to integer, truncating"),
    d("max", MAXMIN, "largest of the arguments"),
    d("min", MAXMIN, "smallest of the arguments"),
    d("max1", MAXMIN, "largest of real arguments, as an integer"),
    d("min1", MAXMIN, "smallest of real arguments, as an integer"),
    d("mod", &["a", "p"], "remainder a - int(a/p)*p"),
    d("modulo", &["a", "p"], "modulo a - floor(a/p)*p"),
    d("nint", A_KIND, "nearest integer"),
    d(
        "real",
        A_KIND,
        "conversion to real (the real part of a complex)",
    ),
    d("sign", AB, "|a| with the sign of b"),
    d("acos", X, "arccosine"),
    d("asin", X, "arcsine"),
    d("atan", X, "arctangent"),
    d("atan2", XY, "arctangent of y/x in the quadrant of (x, y)"),
    d("cos", X, "cosine"),
    d("cosh", X, "hyperbolic cosine"),
    d("exp", X, "exponential"),
    d("log", X, "natural logarithm"),
    d("log10", X, "common logarithm"),
    d("sin", X, "sine"),
    d("sinh", X, "hyperbolic sine"),
    d("sqrt", X, "square root"),
    d("tan", X, "tangent"),
    d("tanh", X, "hyperbolic tangent"),
    d("ccos", X, "cosine of a complex number"),
    d("cexp", X, "exponential of a complex number"),
    d("clog", X, "logarithm of a complex number"),
    d("csin", X, "sine of a complex number"),
    d("csqrt", X, "square root of a complex number"),
    d("erf", X, "error function"),
    d("erfc", X, "complementary error function"),
    d("gamma", X, "gamma function"),
    d(
        "log_gamma",
        X,
        "logarithm of the absolute value of the gamma function",
    ),
    d("hypot", &["x", "y"], "sqrt(x**2 + y**2) without overflow"),
    d("acosh", X, "inverse hyperbolic cosine"),
    d("asinh", X, "inverse hyperbolic sine"),
    d("atanh", X, "inverse hyperbolic tangent"),
    d("bessel_j0", X, "Bessel function of the first kind, order 0"),
    d("bessel_j1", X, "Bessel function of the first kind, order 1"),
    d("kind", X, "kind type parameter"),
    d(
        "selected_real_kind",
        &["[p]", "[r]", "[radix]"],
        "kind of a real with at least p digits and exponent range r",
    ),
    d(
        "selected_int_kind",
        &["r"],
        "kind of an integer holding -10**r to 10**r",
    ),
    d("huge", X, "largest number of the argument's type and kind"),
    d(
        "tiny",
        X,
        "smallest positive normal number of the argument's kind",
    ),
    d(
        "epsilon",
        X,
        "smallest e with 1 + e > 1 in the argument's kind",
    ),
    d("precision", X, "decimal precision"),
    d("range", X, "decimal exponent range"),
    d("digits", X, "significant binary digits"),
    d("radix", X, "base of the number model"),
    d("size", ARRAY_DIM_KIND, "number of elements (along dim)"),
    d("shape", &["source", "[kind]"], "extents of an array"),
    d("lbound", ARRAY_DIM_KIND, "lower bounds"),
    d("ubound", ARRAY_DIM_KIND, "upper bounds"),
    d(
        "allocated",
        &["array"],
        "whether an allocatable is allocated",
    ),
    d("present", A, "whether an optional argument is present"),
    d(
        "associated",
        &["pointer", "[target]"],
        "whether a pointer is associated (with target)",
    ),
    d("len", STRING_KIND, "length of a character value"),
    d("len_trim", STRING_KIND, "length without trailing blanks"),
    d(
        "storage_size",
        &["a", "[kind]"],
        "size in bits of an element",
    ),
    d("bit_size", &["i"], "number of bits of an integer kind"),
    d("sum", ARRAY_DIM_MASK, "sum of the elements"),
    d("product", ARRAY_DIM_MASK, "product of the elements"),
    d("maxval", ARRAY_DIM_MASK, "largest element"),
    d("minval", ARRAY_DIM_MASK, "smallest element"),
    d("maxloc", LOC, "position of the largest element"),
    d("minloc", LOC, "position of the smallest element"),
    d(
        "dot_product",
        &["vector_a", "vector_b"],
        "dot product of two vectors",
    ),
    d("matmul", &["matrix_a", "matrix_b"], "matrix product"),
    d("transpose", &["matrix"], "transpose of a rank-2 array"),
    d(
        "reshape",
        &["source", "shape", "[pad]", "[order]"],
        "the elements of source in a new shape",
    ),
    d(
        "spread",
        &["source", "dim", "ncopies"],
        "source copied ncopies times along a new dimension dim",
    ),
    d(
        "pack",
        &["array", "mask", "[vector]"],
        "the elements where mask is true, as a vector",
    ),
    d(
        "unpack",
        &["vector", "mask", "field"],
        "vector's elements placed where mask is true, field elsewhere",
    ),
    d(
        "merge",
        &["tsource", "fsource", "mask"],
        "tsource where mask is true, fsource elsewhere",
    ),
    d(
        "count",
        &["mask", "[dim]", "[kind]"],
        "number of true elements",
    ),
    d("any", MASK_DIM, "whether any element is true"),
    d("all", MASK_DIM, "whether all elements are true"),
    d(
        "cshift",
        &["array", "shift", "[dim]"],
        "circular shift of an array",
    ),
    d(
        "eoshift",
        &["array", "shift", "[boundary]", "[dim]"],
        "end-off shift, filling with boundary",
    ),
    d("norm2", &["x", "[dim]"], "Euclidean norm"),
    d("char", I_KIND, "character of a code in the processor's set"),
    d(
        "ichar",
        C_KIND,
        "code of a character in the processor's set",
    ),
    d("achar", I_KIND, "character of an ASCII code"),
    d("iachar", C_KIND, "ASCII code of a character"),
    d(
        "index",
        &["string", "substring", "[back]", "[kind]"],
        "position of substring in string",
    ),
    d(
        "scan",
        SEARCH,
        "position of the first character of set in string",
    ),
    d(
        "verify",
        SEARCH,
        "position of the first character of string not in set",
    ),
    d("trim", STRING, "string without trailing blanks"),
    d("adjustl", STRING, "leading blanks moved to the end"),
    d("adjustr", STRING, "trailing blanks moved to the front"),
    d("repeat", &["string", "ncopies"], "ncopies copies of string"),
    d("lge", LEXICAL, "string_a >= string_b in ASCII order"),
    d("lgt", LEXICAL, "string_a > string_b in ASCII order"),
    d("lle", LEXICAL, "string_a <= string_b in ASCII order"),
    d("llt", LEXICAL, "string_a < string_b in ASCII order"),
    d("new_line", A, "the newline character"),
    d("iand", IJ, "bitwise and"),
    d("ior", IJ, "bitwise inclusive or"),
    d("ieor", IJ, "bitwise exclusive or"),
    d("not", &["i"], "bitwise complement"),
    d("ishft", &["i", "shift"], "logical shift of the bits"),
    d(
        "ishftc",
        &["i", "shift", "[size]"],
        "circular shift of the rightmost size bits",
    ),
    d("btest", I_POS, "whether bit pos is set"),
    d("ibset", I_POS, "i with bit pos set"),
    d("ibclr", I_POS, "i with bit pos cleared"),
    d(
        "logical",
        &["l", "[kind]"],
        "conversion between logical kinds",
    ),
    d(
        "transfer",
        &["source", "mold", "[size]"],
        "source's bits read as mold's type",
    ),
    d("null", &["[mold]"], "a disassociated pointer"),
    s(
        "random_number",
        &["harvest"],
        "uniform pseudorandom numbers in [0, 1)",
    ),
    s(
        "random_seed",
        &["[size]", "[put]", "[get]"],
        "restarts or queries the pseudorandom generator",
    ),
    s("cpu_time", &["time"], "processor time in seconds"),
    s(
        "system_clock",
        &["[count]", "[count_rate]", "[count_max]"],
        "the system clock's count",
    ),
    s(
        "date_and_time",
        &["[date]", "[time]", "[zone]", "[values]"],
        "date and time of day",
    ),
    s(
        "get_command_argument",
        &["number", "[value]", "[length]", "[status]"],
        "a command-line argument",
    ),
    s(
        "get_environment_variable",
        &["name", "[value]", "[length]", "[status]", "[trim_name]"],
        "an environment variable's value",
    ),
    s(
        "mvbits",
        &["from", "frompos", "len", "to", "topos"],
        "copies a sequence of bits",
    ),
    s(
        "move_alloc",
        &["from", "to"],
        "moves an allocation from one allocatable to another",
    ),
    s(
        "execute_command_line",
        &["command", "[wait]", "[exitstat]", "[cmdstat]", "[cmdmsg]"],
        "runs a shell command",
    ),
];

/// The entry of intrinsic function or subroutine `name` (lower case);
/// a specific name (`dsqrt`) gets its generic's.
pub fn lookup(name: &str) -> Option<&'static IntrinsicDoc> {
    if let Some(doc) = DOCS.iter().find(|d| d.name == name) {
        return Some(doc);
    }
    let generic = intrinsics::lookup(name)?.name;
    DOCS.iter().find(|d| d.name == generic && !d.subroutine)
}

/// Every intrinsic function name (generic and specific) and subroutine.
pub fn names() -> impl Iterator<Item = &'static str> {
    intrinsics::function_names().chain(DOCS.iter().filter(|d| d.subroutine).map(|d| d.name))
}

/// `name(a, [b])` as a call would be written.
pub fn signature(name: &str, doc: &IntrinsicDoc) -> String {
    format!("{name}({})", doc.params.join(", "))
}

/// Markdown: the signature, what it computes, and how dfort
/// differentiates it (from the intrinsics table of the IR).
pub fn markdown(name: &str) -> Option<String> {
    let doc = lookup(name)?;
    let kind = if doc.subroutine {
        "intrinsic subroutine"
    } else {
        "intrinsic function"
    };
    let mut md = format!(
        "**{}** — {kind}\n\n`{}`: {}",
        name,
        signature(name, doc),
        doc.summary
    );
    if doc.name != name {
        md.push_str(&format!(" (the specific form of `{}`)", doc.name));
    }
    md.push_str(".\n\n");
    if let Some(rule) = derivative(name, doc) {
        md.push_str(&rule);
        md.push('\n');
    }
    Some(md)
}

/// How derivatives flow through intrinsic function `name`, in a sentence.
fn derivative(name: &str, doc: &IntrinsicDoc) -> Option<String> {
    let entry = intrinsics::lookup(name)?;
    let args: Vec<&str> = doc
        .params
        .iter()
        .map(|p| p.trim_matches(['[', ']']))
        .collect();
    let mut text = match entry.rule {
        Rule::None => "No derivative flows through it.".to_string(),
        Rule::Partials { d, .. } => {
            let parts: Vec<String> = d
                .iter()
                .enumerate()
                .filter(|(_, t)| !t.is_empty())
                .map(|(k, t)| {
                    let mut t = t.to_string();
                    for (j, a) in args.iter().enumerate() {
                        t = t.replace(&format!("{{{j}}}"), a);
                    }
                    format!("∂/∂{} = `{t}`", args.get(k).copied().unwrap_or("?"))
                })
                .collect();
            format!("Derivative: {}.", parts.join("; "))
        }
        Rule::Extremum { .. } => "Derivative: that of the argument selected.".to_string(),
        Rule::Linear { data, .. } => format!(
            "Linear in {}: its derivative is the same operation on their derivatives.",
            data.iter()
                .map(|a| format!("`{a}`"))
                .collect::<Vec<_>>()
                .join(" and ")
        ),
        Rule::Array(_) => "Differentiated by a rule of its own on arrays.".to_string(),
        Rule::Complex => "Linear on complex values (a rule of its own).".to_string(),
        Rule::Missing => {
            "dfort has no derivative for it yet: refused where an argument is active.".to_string()
        }
    };
    if let Some(kink) = entry.kink {
        text.push_str(&format!(" It {kink}."));
    }
    Some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_intrinsic_the_ir_knows_has_a_signature() {
        let missing: Vec<&str> = intrinsics::function_names()
            .filter(|n| lookup(n).is_none())
            .collect();
        assert!(missing.is_empty(), "no signature for {missing:?}");
        for d in DOCS.iter().filter(|d| d.subroutine) {
            assert!(intrinsics::is_intrinsic_subroutine(d.name), "{}", d.name);
        }
        for d in DOCS.iter().filter(|d| !d.subroutine) {
            assert!(intrinsics::is_intrinsic_function(d.name), "{}", d.name);
        }
    }

    #[test]
    fn the_markdown_gives_the_derivative_rule_in_the_arguments_names() {
        let md = markdown("dsqrt").unwrap();
        assert!(md.contains("`dsqrt(x)`"), "{md}");
        assert!(md.contains("the specific form of `sqrt`"), "{md}");
        assert!(md.contains("∂/∂x = `1.0d0 / (2.0d0 * sqrt(x))`"), "{md}");
        let md = markdown("atan2").unwrap();
        assert!(md.contains("∂/∂y = `x / (x**2 + y**2)`"), "{md}");
        let md = markdown("sum").unwrap();
        assert!(md.contains("Linear in `array`"), "{md}");
        let md = markdown("abs").unwrap();
        assert!(
            md.contains("not differentiable where its argument is 0"),
            "{md}"
        );
        assert!(markdown("cpu_time")
            .unwrap()
            .contains("intrinsic subroutine"));
        assert!(markdown("not_an_intrinsic").is_none());
    }
}
