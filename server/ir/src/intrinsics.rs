//! What dfort knows of each Fortran intrinsic procedure, in one table:
//! its result type, how derivatives flow through it (its local partial
//! derivatives, or that it is linear in some arguments, or a rule of its
//! own in the generators, or none yet), where that derivative is wrong
//! (the kink the editor's warning names), and its rule on complex
//! arguments. The front end, the analyses (activity, TBR), both
//! generators and the editor read it; adding a derivative is one entry.

/// The type of an intrinsic function's result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ty {
    /// The type and kind of its first argument (`sin`, `max`, `sum`).
    Arg,
    /// Real, of its argument's kind (`real`, `aimag`, `norm2`).
    Real,
    /// Complex (`cmplx`, `conjg`).
    Complex,
    Integer,
    Logical,
    Character,
}

/// What the adjoint of a reference reads of its arguments' values (the
/// TBR analysis records them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Values {
    /// None: the reference is linear in its arguments.
    None,
    /// Of two arguments, each where the other is active (a product).
    Cross,
    /// All of them.
    All,
}

/// How derivatives flow through an intrinsic function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rule {
    /// None flows: an integer, logical or character result, or an inquiry.
    None,
    /// Elemental, with the local partial derivative with respect to each
    /// argument in order, written in Fortran over the arguments' values
    /// `{0}`, `{1}` (each printed in parentheses); `""` where the result
    /// has no derivative in that argument (`sign`'s second). The rule
    /// applies to exactly that many arguments, or one more when `kind`
    /// (a trailing KIND argument).
    Partials {
        d: &'static [&'static str],
        kind: bool,
    },
    /// `max`, `min`: the derivative of the first argument that reaches
    /// the extremum.
    Extremum { max: bool },
    /// Linear in its data arguments (array forms): the argument names in
    /// positional order, and those that carry the data; the others
    /// (`dim`, `shift`, `mask`, `shape`, …) are read as values.
    Linear {
        args: &'static [&'static str],
        data: &'static [&'static str],
    },
    /// A rule of its own for arrays in the generators (`dot_product`,
    /// `matmul`, `norm2`, `product`, `maxval`, `minval`), reading these of
    /// its arguments' values.
    Array(Values),
    /// A rule of its own on complex values (`conjg`, `aimag`, `cmplx`),
    /// linear in its arguments ([`Intrinsic::on_complex`]).
    Complex,
    /// A derivative flows but dfort has no rule for it yet: refused where
    /// an argument is active.
    Missing,
}

impl Rule {
    /// The fewest arguments a reference computes on: every argument of a
    /// partial derivative, two to compare, one of an array form.
    pub fn least_arguments(&self) -> usize {
        match self {
            Rule::Partials { d, .. } => d.len(),
            Rule::Extremum { .. } => 2,
            Rule::Linear { .. } | Rule::Array(_) | Rule::Complex => 1,
            Rule::None | Rule::Missing => 0,
        }
    }

    /// What the adjoint reads of the arguments' values: none when no
    /// partial derivative mentions an argument, each argument where the
    /// other is active when each partial mentions only the other (`dprod`).
    pub fn values(&self) -> Values {
        match self {
            Rule::Partials { d, .. } => {
                let mentions = |t: &str, k: usize| t.contains(&format!("{{{k}}}"));
                if !d.iter().any(|t| (0..d.len()).any(|k| mentions(t, k))) {
                    Values::None
                } else if d.len() == 2
                    && mentions(d[0], 1)
                    && !mentions(d[0], 0)
                    && mentions(d[1], 0)
                    && !mentions(d[1], 1)
                {
                    Values::Cross
                } else {
                    Values::All
                }
            }
            Rule::Linear { .. } | Rule::Complex => Values::None,
            Rule::Array(v) => *v,
            Rule::None | Rule::Extremum { .. } | Rule::Missing => Values::All,
        }
    }

    /// The local partial derivatives of a reference with `n` arguments,
    /// when this rule gives them.
    pub fn partials(&self, n: usize) -> Option<&'static [&'static str]> {
        match *self {
            Rule::Partials { d, kind } if n == d.len() || (kind && n == d.len() + 1) => Some(d),
            _ => None,
        }
    }

    /// Whether the derivative of a reference is an array expression of its
    /// own (a linear array form or an array rule).
    pub fn is_array_form(&self) -> bool {
        matches!(self, Rule::Linear { .. } | Rule::Array(_))
    }
}

/// A rule of an intrinsic on complex values, where it is not holomorphic
/// or builds a complex value from reals.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ComplexRule {
    /// `conjg(z)`
    Conjugate,
    /// `real(z)`, `dble(z)` (of a complex argument only)
    RealPart,
    /// `aimag(z)`
    ImaginaryPart,
    /// `abs(z)` (of a complex argument only)
    Modulus,
    /// `cmplx(x[, y][, kind])` (of real arguments only)
    Build,
}

/// What dfort knows of one intrinsic function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Intrinsic {
    /// The generic name (lower case).
    pub name: &'static str,
    pub ty: Ty,
    pub rule: Rule,
    /// Elemental: applied element by element to array arguments.
    pub elemental: bool,
    /// Where its derivative is wrong or zero, as the editor's warning on
    /// an active argument completes "`abs` of the active value `x` …".
    pub kink: Option<&'static str>,
    pub on_complex: Option<ComplexRule>,
}

const fn f(name: &'static str, ty: Ty, rule: Rule) -> Intrinsic {
    Intrinsic {
        name,
        ty,
        rule,
        elemental: false,
        kink: None,
        on_complex: None,
    }
}

/// An elemental function.
const fn e(name: &'static str, ty: Ty, rule: Rule) -> Intrinsic {
    Intrinsic {
        elemental: true,
        ..f(name, ty, rule)
    }
}

/// An elemental function with local partial derivatives (see
/// [`Rule::Partials`]).
const fn p(name: &'static str, d: &'static [&'static str]) -> Intrinsic {
    e(name, Ty::Arg, Rule::Partials { d, kind: false })
}

/// A function whose result carries no derivative.
const fn none(name: &'static str, ty: Ty) -> Intrinsic {
    f(name, ty, Rule::None)
}

impl Intrinsic {
    const fn kink(self, kink: &'static str) -> Intrinsic {
        Intrinsic {
            kink: Some(kink),
            ..self
        }
    }

    const fn complex(self, rule: ComplexRule) -> Intrinsic {
        Intrinsic {
            on_complex: Some(rule),
            ..self
        }
    }

    const fn ty(self, ty: Ty) -> Intrinsic {
        Intrinsic { ty, ..self }
    }
}

const ABS: &str = "is not differentiable where its argument is 0 (dfort takes the derivative of the branch the sign selects)";
const EXTREMUM: &str = "is not differentiable where its arguments are equal (dfort takes the derivative of the argument selected)";
const SIGN: &str = "is not differentiable where its second argument is 0";
const SELECTION: &str = "is not differentiable where elements tie for the extremum (dfort takes the derivative of the first, the one maxloc/minloc returns)";
const NORM2: &str =
    "is not differentiable where its argument is 0 (dfort takes the subgradient 0 there)";
const STEP: &str = "has a zero derivative and jumps at integers: no gradient flows through it";
const QUOTIENT: &str =
    "jumps where the quotient crosses an integer (the derivative there is wrong)";

use Ty::{Arg, Character, Integer, Logical, Real};

/// The intrinsic functions by generic name.
const FUNCTIONS: &[Intrinsic] = &[
    // Numeric
    p("abs", &["merge(1.0d0, -1.0d0, {0} >= 0)"])
        .kink(ABS)
        .complex(ComplexRule::Modulus),
    e("aimag", Real, Rule::Complex).complex(ComplexRule::ImaginaryPart),
    e("aint", Arg, Rule::Missing).kink(STEP),
    e("anint", Arg, Rule::Missing).kink(STEP),
    e("ceiling", Integer, Rule::None).kink(STEP),
    e("cmplx", Ty::Complex, Rule::Complex).complex(ComplexRule::Build),
    e("conjg", Ty::Complex, Rule::Complex).complex(ComplexRule::Conjugate),
    p("dble", &["1.0d0"])
        .ty(Real)
        .complex(ComplexRule::RealPart),
    e("dim", Arg, Rule::Missing),
    p("dprod", &["dble({1})", "dble({0})"]).ty(Real),
    e("floor", Integer, Rule::None).kink(STEP),
    e("int", Integer, Rule::None).kink(STEP),
    e("max", Arg, Rule::Extremum { max: true }).kink(EXTREMUM),
    e("min", Arg, Rule::Extremum { max: false }).kink(EXTREMUM),
    e("max1", Integer, Rule::None).kink(STEP),
    e("min1", Integer, Rule::None).kink(STEP),
    p("mod", &["1.0d0", "-aint({0} / {1})"]).kink(QUOTIENT),
    e("modulo", Arg, Rule::Missing).kink(QUOTIENT),
    e("nint", Integer, Rule::None).kink(STEP),
    e(
        "real",
        Real,
        Rule::Partials {
            d: &["1.0d0"],
            kind: true,
        },
    )
    .complex(ComplexRule::RealPart),
    p(
        "sign",
        &["merge(1.0d0, -1.0d0, ({0} >= 0) .eqv. ({1} >= 0))", ""],
    )
    .kink(SIGN),
    // Mathematical
    p("acos", &["-1.0d0 / sqrt(1.0d0 - {0}**2)"]),
    p("asin", &["1.0d0 / sqrt(1.0d0 - {0}**2)"]),
    p("atan", &["1.0d0 / (1.0d0 + {0}**2)"]),
    p(
        "atan2",
        &["{1} / ({1}**2 + {0}**2)", "-({0} / ({1}**2 + {0}**2))"],
    ),
    p("cos", &["-sin({0})"]),
    p("cosh", &["sinh({0})"]),
    p("exp", &["exp({0})"]),
    p("log", &["1.0d0 / {0}"]),
    p("log10", &["1.0d0 / ({0} * log(10.0d0))"]),
    p("sin", &["cos({0})"]),
    p("sinh", &["cosh({0})"]),
    p("sqrt", &["1.0d0 / (2.0d0 * sqrt({0}))"]),
    p("tan", &["1.0d0 / cos({0})**2"]),
    p("tanh", &["1.0d0 - tanh({0})**2"]),
    e("ccos", Arg, Rule::Missing),
    e("cexp", Arg, Rule::Missing),
    e("clog", Arg, Rule::Missing),
    e("csin", Arg, Rule::Missing),
    e("csqrt", Arg, Rule::Missing),
    p("erf", &["2.0d0 / sqrt(acos(-1.0d0)) * exp(-{0}**2)"]),
    p("erfc", &["-2.0d0 / sqrt(acos(-1.0d0)) * exp(-{0}**2)"]),
    e("gamma", Arg, Rule::Missing),
    e("log_gamma", Arg, Rule::Missing),
    p("hypot", &["{0} / hypot({0}, {1})", "{1} / hypot({0}, {1})"])
        .kink("is not differentiable where both its arguments are 0"),
    p("acosh", &["1.0d0 / sqrt({0}**2 - 1.0d0)"]),
    p("asinh", &["1.0d0 / sqrt({0}**2 + 1.0d0)"]),
    p("atanh", &["1.0d0 / (1.0d0 - {0}**2)"]),
    e("bessel_j0", Arg, Rule::Missing),
    e("bessel_j1", Arg, Rule::Missing),
    // Inquiry and numeric models
    none("kind", Integer),
    none("selected_real_kind", Integer),
    none("selected_int_kind", Integer),
    none("huge", Arg),
    none("tiny", Arg),
    none("epsilon", Arg),
    none("precision", Integer),
    none("range", Integer),
    none("digits", Integer),
    none("radix", Integer),
    none("size", Integer),
    none("shape", Integer),
    none("lbound", Integer),
    none("ubound", Integer),
    none("allocated", Logical),
    none("present", Logical),
    none("associated", Logical),
    none("len", Integer),
    none("len_trim", Integer),
    none("storage_size", Integer),
    none("bit_size", Integer),
    // Arrays
    f(
        "sum",
        Arg,
        Rule::Linear {
            args: &["array", "dim", "mask"],
            data: &["array"],
        },
    ),
    f("product", Arg, Rule::Array(Values::All)),
    f("maxval", Arg, Rule::Array(Values::All)).kink(SELECTION),
    f("minval", Arg, Rule::Array(Values::All)).kink(SELECTION),
    none("maxloc", Integer),
    none("minloc", Integer),
    f("dot_product", Arg, Rule::Array(Values::Cross)),
    f("matmul", Arg, Rule::Array(Values::Cross)),
    f(
        "transpose",
        Arg,
        Rule::Linear {
            args: &["matrix"],
            data: &["matrix"],
        },
    ),
    f(
        "reshape",
        Arg,
        Rule::Linear {
            args: &["source", "shape", "pad", "order"],
            data: &["source", "pad"],
        },
    ),
    f(
        "spread",
        Arg,
        Rule::Linear {
            args: &["source", "dim", "ncopies"],
            data: &["source"],
        },
    ),
    f(
        "pack",
        Arg,
        Rule::Linear {
            args: &["array", "mask", "vector"],
            data: &["array", "vector"],
        },
    ),
    f(
        "unpack",
        Arg,
        Rule::Linear {
            args: &["vector", "mask", "field"],
            data: &["vector", "field"],
        },
    ),
    f(
        "merge",
        Arg,
        Rule::Linear {
            args: &["tsource", "fsource", "mask"],
            data: &["tsource", "fsource"],
        },
    ),
    none("count", Integer),
    none("any", Logical),
    none("all", Logical),
    f(
        "cshift",
        Arg,
        Rule::Linear {
            args: &["array", "shift", "dim"],
            data: &["array"],
        },
    ),
    f(
        "eoshift",
        Arg,
        Rule::Linear {
            args: &["array", "shift", "boundary", "dim"],
            data: &["array", "boundary"],
        },
    ),
    f("norm2", Real, Rule::Array(Values::All)).kink(NORM2),
    // Characters
    none("char", Character),
    none("ichar", Integer),
    none("achar", Character),
    none("iachar", Integer),
    none("index", Integer),
    none("scan", Integer),
    none("verify", Integer),
    none("trim", Character),
    none("adjustl", Character),
    none("adjustr", Character),
    none("repeat", Character),
    none("lge", Logical),
    none("lgt", Logical),
    none("lle", Logical),
    none("llt", Logical),
    none("new_line", Character),
    // Bits and conversions
    none("iand", Integer),
    none("ior", Integer),
    none("ieor", Integer),
    none("not", Integer),
    none("ishft", Integer),
    none("ishftc", Integer),
    none("btest", Logical),
    none("ibset", Integer),
    none("ibclr", Integer),
    none("logical", Logical),
    // Linear where SOURCE and MOLD have the same type and kind (the bits
    // are the values, in array element order); the generators refuse it
    // between types or kinds (it reinterprets the bits).
    f(
        "transfer",
        Arg,
        Rule::Linear {
            args: &["source", "mold", "size"],
            data: &["source"],
        },
    ),
    f("null", Arg, Rule::Missing),
];

/// The specific names (FORTRAN 77's typed forms): each has the entry of
/// its generic.
const SPECIFIC: &[(&str, &str)] = &[
    ("float", "dble"),
    ("sngl", "dble"),
    ("dfloat", "dble"),
    ("idint", "int"),
    ("ifix", "int"),
    ("dabs", "abs"),
    ("iabs", "abs"),
    ("cabs", "abs"),
    ("dmax1", "max"),
    ("amax1", "max"),
    ("max0", "max"),
    ("amax0", "max"),
    ("dmin1", "min"),
    ("amin1", "min"),
    ("min0", "min"),
    ("amin0", "min"),
    ("dsign", "sign"),
    ("isign", "sign"),
    ("dmod", "mod"),
    ("amod", "mod"),
    ("dint", "aint"),
    ("dnint", "anint"),
    ("idnint", "nint"),
    ("dcmplx", "cmplx"),
    ("dconjg", "conjg"),
    ("dimag", "aimag"),
    ("ddim", "dim"),
    ("idim", "dim"),
    ("dacos", "acos"),
    ("dasin", "asin"),
    ("datan", "atan"),
    ("datan2", "atan2"),
    ("dcos", "cos"),
    ("dcosh", "cosh"),
    ("dexp", "exp"),
    ("dlog", "log"),
    ("alog", "log"),
    ("dlog10", "log10"),
    ("alog10", "log10"),
    ("dsin", "sin"),
    ("dsinh", "sinh"),
    ("dsqrt", "sqrt"),
    ("dtan", "tan"),
    ("dtanh", "tanh"),
];

/// The entry of the intrinsic function `name` (generic or specific, lower
/// case).
pub fn lookup(name: &str) -> Option<&'static Intrinsic> {
    let generic = SPECIFIC
        .iter()
        .find(|(s, _)| *s == name)
        .map_or(name, |(_, g)| *g);
    FUNCTIONS.iter().find(|i| i.name == generic)
}

/// Every name of an intrinsic function dfort recognises, generic and
/// specific.
pub fn function_names() -> impl Iterator<Item = &'static str> {
    FUNCTIONS
        .iter()
        .map(|i| i.name)
        .chain(SPECIFIC.iter().map(|(s, _)| *s))
}

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

pub fn is_intrinsic_function(name: &str) -> bool {
    lookup(name).is_some()
}

pub fn is_intrinsic_subroutine(name: &str) -> bool {
    SUBROUTINES.contains(&name)
}

/// Library subroutines without source that change none of their
/// arguments (compilers' extensions: `call flush(unit)`, `call abort`,
/// `call exit(status)`, `call sleep(seconds)`): what a call reads and
/// writes need not be guessed.
pub fn reads_arguments_only(name: &str) -> bool {
    matches!(name, "flush" | "abort" | "exit" | "sleep")
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
    lookup(name).is_some_and(|i| i.rule == Rule::None)
}

/// The argument names of a linear array intrinsic (see [`Rule::Linear`])
/// and which of them carry data.
pub fn linear_array(name: &str) -> Option<(&'static [&'static str], &'static [&'static str])> {
    match lookup(name)?.rule {
        Rule::Linear { args, data } => Some((args, data)),
        _ => None,
    }
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

/// A reference to `maxval`, `minval` or `product` in a form both
/// generators differentiate: of a whole real or complex array variable
/// `array`, of rank 1 (`dim=1` or none, with or without a mask) or of rank
/// 2 along a constant dimension (with or without a mask); `product` of a
/// rank-1 array alone. Other forms are refused ([`reduction_refusal`]).
pub struct Reduction<'e> {
    pub array: crate::SymbolId,
    pub rank: usize,
    pub dim: Option<i64>,
    pub mask: Option<&'e crate::Expr>,
}

/// The form of a reference to `name` with `args` when it is one of
/// [`Reduction`]'s; `None` for other intrinsics and other forms.
pub fn reduction<'e>(
    program: &crate::Program,
    unit: &crate::Unit,
    name: &str,
    args: &'e [crate::Arg],
) -> Option<Reduction<'e>> {
    let (first, rest) = args.split_first()?;
    let crate::ExprKind::Var(array) = first.value.kind else {
        return None;
    };
    let sym = unit.symbol(array);
    if !sym.ty.is_real_or_complex() {
        return None;
    }
    let rank = sym.rank();
    if name == "product" {
        return (first.keyword.is_none() && rest.is_empty() && rank == 1).then_some(Reduction {
            array,
            rank,
            dim: None,
            mask: None,
        });
    }
    if !matches!(name, "maxval" | "minval")
        || first.keyword.as_deref().is_some_and(|k| k != "array")
    {
        return None;
    }
    let (mut dim, mut mask) = (None, None);
    for (i, a) in rest.iter().enumerate() {
        match a.keyword.as_deref() {
            Some("dim") => dim = Some(&a.value),
            Some("mask") => mask = Some(&a.value),
            Some(_) => return None,
            None if i == 0 && crate::queries::rank_of(program, unit, &a.value) == 0 => {
                dim = Some(&a.value)
            }
            None => mask = Some(&a.value),
        }
    }
    let dim = match dim.map(|d| &d.kind) {
        None => None,
        Some(crate::ExprKind::Int(k)) => Some(*k),
        Some(_) => return None,
    };
    let fits = matches!((rank, dim), (1, None | Some(1)) | (2, Some(1 | 2)));
    fits.then_some(Reduction {
        array,
        rank,
        dim,
        mask,
    })
}

/// The refusal of `name` (`maxval`, `minval`, `product`) of an argument
/// `x` in a form [`reduction`] does not accept, in both generators.
pub fn reduction_refusal(unit: &crate::Unit, name: &str, x: &crate::Expr) -> String {
    format!(
        "no derivative rule for `{name}` of `{}` (only of a whole array variable: rank 1, or rank 2 along a constant dimension, with or without a mask)",
        crate::dump::expr(unit, x)
    )
}

/// Whether `transfer(source, mold[, size])` keeps the values: SOURCE and
/// MOLD are variables, elements or literals of one real type and kind
/// (a copy in array element order, linear in SOURCE). Between types or
/// kinds it reinterprets the bits, which no derivative follows.
pub fn transfer_keeps_values(unit: &crate::ir::Unit, args: &[crate::ir::Arg]) -> bool {
    let Some(slots) = slots("transfer", args) else {
        return false;
    };
    match (slots[0], slots[1]) {
        (Some(source), Some(mold)) => {
            real_kind(unit, source).is_some_and(|k| real_kind(unit, mold) == Some(k))
        }
        _ => false,
    }
}

/// The kind of a real expression built of real variables, elements and
/// literals by arithmetic and elemental intrinsics of their argument's
/// type (`x*x`, `sin(t)`); `None` for anything else.
fn real_kind(unit: &crate::ir::Unit, e: &crate::ir::Expr) -> Option<u32> {
    use crate::ir::{BaseType, BinaryOp, ExprKind};
    match &e.kind {
        ExprKind::Real { kind, .. } => Some(*kind),
        ExprKind::Var(s) | ExprKind::ArrayRef { array: s, .. } => {
            let ty = &unit.symbol(*s).ty;
            match (ty.base, ty.kind, &ty.kind_text) {
                (BaseType::Real, Some(k), _) => Some(k),
                (BaseType::Real, None, None) => Some(4),
                _ => None,
            }
        }
        ExprKind::Unary { operand, .. } => real_kind(unit, operand),
        ExprKind::Binary {
            op: BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Div,
            lhs,
            rhs,
        } => Some(real_kind(unit, lhs)?.max(real_kind(unit, rhs)?)),
        ExprKind::Intrinsic { name, args } if args.len() == 1 => match lookup(name)?.ty {
            Ty::Arg => real_kind(unit, &args[0].value),
            _ => None,
        },
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables() {
        assert!(is_intrinsic_function("sin"));
        assert!(is_intrinsic_function("dsin"));
        assert!(is_intrinsic_function("dot_product"));
        assert!(!is_intrinsic_function("foo"));
        assert!(is_intrinsic_subroutine("random_number"));
        assert!(has_non_differentiable_result("nint"));
        assert!(has_non_differentiable_result("idnint"));
        assert!(!has_non_differentiable_result("sqrt"));
        assert!(!has_non_differentiable_result("foo"));
        let names: Vec<&str> = function_names().collect();
        for (i, a) in names.iter().enumerate() {
            assert!(!names[i + 1..].contains(a), "{a} twice");
        }
        for (s, g) in SPECIFIC {
            assert!(
                FUNCTIONS.iter().any(|i| i.name == *g),
                "{s}: no generic {g}"
            );
        }
    }

    /// Every entry says what dfort does with the function, consistently:
    /// a result without a derivative has no rule; partial derivatives
    /// mention only the arguments there are; a kink is named only where a
    /// derivative is taken or refused on an active value.
    #[test]
    fn every_entry_says_what_dfort_does() {
        for i in FUNCTIONS {
            let derivative_type = matches!(i.ty, Ty::Arg | Ty::Real | Ty::Complex);
            if !derivative_type {
                assert_eq!(i.rule, Rule::None, "{}: a {:?} result", i.name, i.ty);
            }
            if let Rule::Partials { d, .. } = i.rule {
                assert!(i.elemental, "{}", i.name);
                for t in d {
                    let mut rest = *t;
                    while let Some(k) = rest.find('{') {
                        let close = rest[k..].find('}').expect("a closed placeholder") + k;
                        let n: usize = rest[k + 1..close].parse().expect("an argument number");
                        assert!(n < d.len(), "{}: {{{n}}} of {} arguments", i.name, d.len());
                        rest = &rest[close + 1..];
                    }
                }
            }
        }
        assert_eq!(
            lookup("dprod").map(|i| i.rule.values()),
            Some(Values::Cross)
        );
        assert_eq!(lookup("dble").map(|i| i.rule.values()), Some(Values::None));
        assert_eq!(lookup("sin").map(|i| i.rule.values()), Some(Values::All));
        assert_eq!(lookup("sign").map(|i| i.rule.values()), Some(Values::All));
        assert_eq!(
            lookup("dabs").map(|i| i.kink),
            lookup("abs").map(|i| i.kink)
        );
    }
}
