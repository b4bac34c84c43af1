//! A Fortran test driver for a root and its derivatives. At each of
//! several random points it prints one line: central finite differences
//! of the original along a random direction ẋ weighted by a random ȳ, at
//! steps h, h/2 and h/4 (their Romberg extrapolation is the reference;
//! where the two Richardson extrapolations disagree the point is not
//! smooth), the tangent's ⟨J ẋ, ȳ⟩ and
//! the adjoint's ⟨ẋ, Jᵀ ȳ⟩ (the dot-product test), each with the sum of
//! the absolute values of its terms (the scale of rounding errors), and
//! the number of entries the adjoint left on the tape, and the bytes its
//! call pushed and held at most:
//!
//! `point <p> fd <h> <h/2> <h/4> values <size> tangent <value> <scale> adjoint <value> <scale> depth <n> tape <pushed> <peak>`
//!
//! (`values` is the size of the weighted outputs the differences subtract,
//! which bounds their rounding error).
//!
//! optionally followed by `grad <values>`: the adjoint's results (x̄) of
//! every independent, element by element. [`parse_output`] reads them back
//! and [`Point`] judges them.

use std::fmt::Write as _;

#[derive(Clone, Debug)]
pub enum DriverArg {
    /// real(8): a scalar (size 0) or an array of `size` elements.
    Real { name: String, size: usize },
    /// An integer argument, reset to `value` before every call.
    Int { name: String, value: i64 },
    /// A character argument (a flag such as `uplo`), reset to `value`
    /// before every call.
    Char { name: String, value: String },
    /// A logical argument, reset to `value` before every call.
    Logical { name: String, value: bool },
    /// An integer array, reset to `values` before every call.
    IntArray { name: String, values: Vec<i64> },
}

/// A special input a routine needs (`dfort verify --matrix`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MatrixKind {
    /// Symmetric positive definite (a Cholesky factorisation's input).
    Spd,
    /// Diagonally dominant (nonsingular; partial pivoting never swaps).
    DiagDominant,
}

/// A real(8) matrix argument the driver makes of kind `kind` after drawing
/// it: the leading `order` by `order` block of the array, seen with
/// leading dimension `ld`.
#[derive(Clone, Debug)]
pub struct MatrixInit {
    pub name: String,
    pub kind: MatrixKind,
    pub ld: usize,
    pub order: usize,
}

impl DriverArg {
    pub fn name(&self) -> &str {
        match self {
            DriverArg::Real { name, .. }
            | DriverArg::Int { name, .. }
            | DriverArg::Char { name, .. }
            | DriverArg::Logical { name, .. }
            | DriverArg::IntArray { name, .. } => name,
        }
    }

    /// The declaration of a passive argument that keeps its value
    /// (`None` for reals): `integer`, `character(len=…)`, `logical`.
    pub fn passive_type(&self, in_interface: bool) -> Option<String> {
        match self {
            DriverArg::Real { .. } => None,
            DriverArg::Int { .. } | DriverArg::IntArray { .. } => Some("integer".into()),
            DriverArg::Char { .. } if in_interface => Some("character(len=*)".into()),
            DriverArg::Char { value, .. } => {
                Some(format!("character(len={})", value.chars().count().max(1)))
            }
            DriverArg::Logical { .. } => Some("logical".into()),
        }
    }

    /// The Fortran value a passive argument is reset to before each call.
    pub fn passive_value(&self) -> Option<String> {
        match self {
            DriverArg::Real { .. } => None,
            DriverArg::Int { value, .. } => Some(value.to_string()),
            // Twelve values a line, continued (lines stay under 132).
            DriverArg::IntArray { values, .. } => Some(format!(
                "[{}]",
                values
                    .chunks(12)
                    .map(|c| c
                        .iter()
                        .map(|v| v.to_string())
                        .collect::<Vec<_>>()
                        .join(", "))
                    .collect::<Vec<_>>()
                    .join(", &\n    & ")
            )),
            DriverArg::Char { value, .. } => Some(format!("'{}'", value.replace('\'', "''"))),
            DriverArg::Logical { value, .. } => {
                Some(if *value { ".true." } else { ".false." }.into())
            }
        }
    }
}

#[derive(Clone, Debug)]
pub struct DriverSpec {
    pub root: String,
    pub args: Vec<DriverArg>,
    pub independents: Vec<String>,
    pub dependents: Vec<String>,
    /// Per argument: whether `R_d` / `R_b` take a derivative right after it.
    pub with_derivative: Vec<bool>,
    pub tangent: bool,
    pub adjoint: bool,
    /// The module of a module-procedure root (its derivatives are in
    /// `<m>_d` and `<m>_b`).
    pub module: Option<String>,
    /// How many random points (at least 1).
    pub points: usize,
    /// Whether to print the adjoint's results (`grad` lines).
    pub gradient: bool,
    /// The seed of the points' random numbers.
    pub seed: u64,
    /// The rank-1 assumed-shape dummies of a root outside a module: the
    /// driver declares the root and its derivatives in an interface block
    /// instead of `external`.
    pub assumed_shape: Vec<String>,
    /// For a real(8) function root: the name of the last `args` entry,
    /// a scalar that stands for its result. The original is called as
    /// `result = root(other args)`; its tangent takes the result and its
    /// derivative last (`root_d(…, r, rd)`), its adjoint the result's
    /// adjoint only (`root_b(…, rb)`), as dfort generates them.
    pub result: Option<String>,
    /// Matrices made symmetric positive definite or diagonally dominant.
    pub matrices: Vec<MatrixInit>,
    /// The largest step h of the central differences (also h/2 and h/4):
    /// [`STEP`] in double precision; a quadruple-precision run can take
    /// a far smaller one, which sees what oscillates faster than `STEP`.
    pub step: f64,
}

/// The differences' largest step in double precision: large enough for
/// their rounding error to stay small after the extrapolations.
pub const STEP: f64 = 2e-4;

/// `v` as a double-precision Fortran literal (`2d-4`).
fn fortran_real(v: f64) -> String {
    format!("{v:e}").replacen('e', "d", 1)
}

impl MatrixInit {
    /// The call that makes array `var` so, to the routines
    /// [`matrix_routines`] writes with the same `prefix`.
    pub fn call(&self, prefix: &str, var: &str) -> String {
        let routine = match self.kind {
            MatrixKind::Spd => "spd",
            MatrixKind::DiagDominant => "dominant",
        };
        format!(
            "call {prefix}_{routine}({var}, {}, {})",
            self.ld.max(1),
            self.order
        )
    }
}

/// The internal subroutines `<prefix>_spd` and `<prefix>_dominant` that
/// make a drawn matrix (entries in [0.5, 1.5]) symmetric positive definite
/// or diagonally dominant, for a driver's `contains` part.
pub fn matrix_routines(prefix: &str) -> String {
    format!(
        "  ! Symmetric, its diagonal above the sum of the off-diagonal magnitudes
  ! (at most 1.5 each): positive definite.
  subroutine {prefix}_spd(v, ld, n)
    integer, intent(in) :: ld, n
    real(8), intent(inout) :: v(ld, *)
    integer :: i, j
    do j = 1, n
      do i = j + 1, n
        v(j, i) = v(i, j)
      end do
      v(j, j) = v(j, j) + 1.5d0*n
    end do
  end subroutine {prefix}_spd
  ! Each column's diagonal above the sum of its other magnitudes.
  subroutine {prefix}_dominant(v, ld, n)
    integer, intent(in) :: ld, n
    real(8), intent(inout) :: v(ld, *)
    integer :: j
    do j = 1, n
      v(j, j) = v(j, j) + 1.5d0*n
    end do
  end subroutine {prefix}_dominant
"
    )
}

/// An interface block for a root and its derivatives (`routines`: each
/// name with its derivative suffix, `None` for the root), for a root
/// outside a module whose rank-1 assumed-shape dummies (`assumed_shape`)
/// need one: each argument declared by type and shape (`x(:)`, or `x(*)`
/// for explicit shapes; intents left out), a derivative after each
/// argument that has one (`with_derivative`).
pub fn interface_block(
    args: &[DriverArg],
    with_derivative: &[bool],
    assumed_shape: &[String],
    routines: &[(String, Option<char>)],
) -> String {
    let mut out = String::from("\n  interface");
    for (routine, derivative) in routines {
        let mut names = Vec::new();
        let mut decls = Vec::new();
        for (a, with_d) in args.iter().zip(with_derivative) {
            let mut own = vec![a.name().to_string()];
            if let (Some(sfx), true) = (derivative, *with_d) {
                own.push(format!("dv{sfx}_{}", a.name()));
            }
            for n in own {
                decls.push(match a {
                    DriverArg::Int { .. } | DriverArg::Char { .. } | DriverArg::Logical { .. } => {
                        format!("      {} :: {n}", a.passive_type(true).unwrap_or_default())
                    }
                    DriverArg::IntArray { .. } => format!("      integer :: {n}(*)"),
                    DriverArg::Real { size: 0, .. } => format!("      real(8) :: {n}"),
                    DriverArg::Real { name, .. } if assumed_shape.contains(name) => {
                        format!("      real(8) :: {n}(:)")
                    }
                    DriverArg::Real { .. } => format!("      real(8) :: {n}(*)"),
                });
                names.push(n);
            }
        }
        let _ = write!(
            out,
            "\n    subroutine {routine}({})\n{}\n    end subroutine {routine}",
            names.join(", "),
            decls.join("\n")
        );
    }
    out.push_str("\n  end interface");
    out
}

/// The format of every line the driver prints.
const FORMAT: &str = "'(a, *(1x, g0))'";

pub fn driver(spec: &DriverSpec) -> String {
    let mut s = String::new();
    let w = &mut s;
    let root = &spec.root;
    let mut ext = vec![root.clone()];
    if spec.tangent {
        ext.push(format!("{root}_d"));
    }
    if spec.adjoint {
        ext.push(format!("{root}_b"));
    }
    // A module procedure and its derivatives come from their modules.
    let mut uses = Vec::new();
    if spec.adjoint {
        uses.push(
            "  use dfort_stack, only: dfort_stack_depth, dfort_stack_reset, dfort_stack_stats"
                .to_string(),
        );
    }
    let external = match &spec.module {
        Some(m) => {
            uses.push(format!("  use {m}"));
            if spec.tangent {
                uses.push(format!("  use {m}_d"));
            }
            if spec.adjoint {
                uses.push(format!("  use {m}_b"));
            }
            String::new()
        }
        None if spec.assumed_shape.is_empty() && spec.result.is_some() => {
            let mut lines = format!("\n  real(8), external :: {root}");
            if ext.len() > 1 {
                let _ = write!(lines, "\n  external {}", ext[1..].join(", "));
            }
            lines
        }
        None if spec.assumed_shape.is_empty() => format!("\n  external {}", ext.join(", ")),
        None => {
            let routines: Vec<(String, Option<char>)> = ext
                .iter()
                .map(|r| {
                    (
                        r.clone(),
                        r.strip_prefix(root.as_str()).and_then(|t| t.chars().nth(1)),
                    )
                })
                .collect();
            interface_block(
                &spec.args,
                &spec.with_derivative,
                &spec.assumed_shape,
                &routines,
            )
        }
    };
    let _ = writeln!(
        w,
        "program dfort_verify\n{}\n  implicit none{external}",
        uses.join("\n")
    );
    let _ = writeln!(
        w,
        "  integer(8) :: dv_seed, dv_depth, dv_pushed, dv_peak\n  integer :: dv_q, dv_point\n  real(8) :: dv_eps, dv_fd1, dv_fd2, dv_fd3, dv_fscale, dv_tan, dv_tscale, dv_adj, dv_ascale"
    );
    for a in &spec.args {
        match a {
            DriverArg::Int { name, .. }
            | DriverArg::Char { name, .. }
            | DriverArg::Logical { name, .. } => {
                let ty = a.passive_type(false).unwrap_or_default();
                let _ = writeln!(w, "  {ty} :: {name}");
            }
            DriverArg::IntArray { name, values } => {
                let _ = writeln!(w, "  integer :: {name}({})", values.len().max(1));
            }
            DriverArg::Real { name, size } => {
                let dim = if *size == 0 {
                    String::new()
                } else {
                    format!("({size})")
                };
                for sfx in ["", "_0", "_d", "_w", "_p", "_m", "_t"] {
                    let _ = writeln!(w, "  real(8) :: {name}{sfx}{dim}");
                }
            }
        }
    }
    // A Park–Miller generator seeded from the spec: reproducible points.
    let _ = writeln!(w, "  dv_seed = {}_8", 1 + spec.seed % 2_147_483_646);
    let _ = writeln!(w, "  dv_depth = 0");
    let _ = writeln!(w, "  dv_pushed = 0");
    let _ = writeln!(w, "  dv_peak = 0");
    let _ = writeln!(w, "  do dv_point = 1, {}", spec.points.max(1));
    let is_ind = |n: &str| spec.independents.iter().any(|x| x == n);
    let is_dep = |n: &str| spec.dependents.iter().any(|x| x == n);
    for a in &spec.args {
        if let DriverArg::Real { name, size } = a {
            for (sfx, lo, hi) in [
                ("_0", "0.5d0", "1.5d0"),
                ("_d", "-1d0", "1d0"),
                ("_w", "-1d0", "1d0"),
            ] {
                if *size == 0 {
                    let _ = writeln!(w, "  call dv_fill_s({name}{sfx}, {lo}, {hi})");
                } else {
                    let _ = writeln!(
                        w,
                        "  call dv_fill({name}{sfx}, size({name}{sfx}), {lo}, {hi})"
                    );
                }
            }
            for m in spec.matrices.iter().filter(|m| &m.name == name) {
                let _ = writeln!(w, "  {}", m.call("dv", &format!("{name}_0")));
            }
            if !is_ind(name) {
                let _ = writeln!(w, "  {name}_d = 0d0");
            }
        }
    }
    let reset = |w: &mut String, sign: &str| {
        for a in &spec.args {
            match a {
                DriverArg::Int { name, .. }
                | DriverArg::Char { name, .. }
                | DriverArg::Logical { name, .. }
                | DriverArg::IntArray { name, .. } => {
                    let value = a.passive_value().unwrap_or_default();
                    let _ = writeln!(w, "  {name} = {value}");
                }
                DriverArg::Real { name, .. } if is_ind(name) && !sign.is_empty() => {
                    let _ = writeln!(w, "  {name} = {name}_0 {sign} dv_eps*{name}_d");
                }
                DriverArg::Real { name, .. } => {
                    let _ = writeln!(w, "  {name} = {name}_0");
                }
            }
        }
    };
    let plain: Vec<&str> = spec.args.iter().map(|a| a.name()).collect();
    // Reduction over an argument's elements (none for scalars).
    let total = |n: &str, e: String| {
        let scalar = spec
            .args
            .iter()
            .any(|a| matches!(a, DriverArg::Real { name, size: 0 } if name == n));
        if scalar {
            format!("({e})")
        } else {
            format!("sum({e})")
        }
    };
    // Central differences at steps h, h/2 and h/4: their truncation
    // errors are series in h², so Richardson extrapolation of two of them
    // is O(h⁴) and Romberg's of the three O(h⁶) — h can be large enough
    // (`STEP`) for the rounding error to stay small.
    for (step, acc) in [(1.0, "dv_fd1"), (0.5, "dv_fd2"), (0.25, "dv_fd3")] {
        let _ = writeln!(w, "  dv_eps = {}", fortran_real(spec.step * step));
        for (sign, store) in [("+", "_p"), ("-", "_m")] {
            reset(w, sign);
            match &spec.result {
                Some(r) => {
                    let others: Vec<&str> = plain.iter().copied().filter(|n| n != r).collect();
                    let _ = writeln!(w, "  {r} = {root}({})", others.join(", "));
                }
                None => {
                    let _ = writeln!(w, "  call {root}({})", plain.join(", "));
                }
            }
            for d in &spec.dependents {
                let _ = writeln!(
                    w,
                    "  if (any(dv_nan([{d}]))) error stop 'dfort driver: the original computes NaN'"
                );
            }
            for d in &spec.dependents {
                let _ = writeln!(w, "  {d}{store} = {d}");
            }
        }
        let _ = writeln!(w, "  {acc} = 0d0");
        for d in &spec.dependents {
            let _ = writeln!(
                w,
                "  {acc} = {acc} + {}",
                total(d, format!("({d}_p - {d}_m)/(2d0*dv_eps)*{d}_w"))
            );
        }
    }
    // The size of the weighted values the differences subtract: their
    // rounding error is about machine epsilon times this, over the step.
    let _ = writeln!(w, "  dv_fscale = 0d0");
    for d in &spec.dependents {
        let _ = writeln!(
            w,
            "  dv_fscale = dv_fscale + {}",
            total(d, format!("abs({d}_p*{d}_w)"))
        );
    }
    let _ = writeln!(w, "  dv_tan = 0d0\n  dv_tscale = 0d0");
    let _ = writeln!(w, "  dv_adj = 0d0\n  dv_ascale = 0d0");
    for (mode, on) in [("d", spec.tangent), ("b", spec.adjoint)] {
        if !on {
            continue;
        }
        reset(w, "");
        let mut args = Vec::new();
        for (a, has) in spec.args.iter().zip(&spec.with_derivative) {
            let n = a.name();
            // A function's adjoint takes its result's adjoint alone.
            if !(mode == "b" && spec.result.as_deref() == Some(n)) {
                args.push(n.to_string());
            }
            if *has {
                args.push(format!("{n}_t"));
                let init = match (mode, is_dep(n)) {
                    ("d", _) => format!("{n}_d"),
                    (_, true) => format!("{n}_w"),
                    _ => "0d0".into(),
                };
                let _ = writeln!(w, "  {n}_t = {init}");
            }
        }
        // The tape is empty here (a point that leaves entries ends the
        // run): the counts start again for this call.
        if mode == "b" {
            let _ = writeln!(w, "  call dfort_stack_reset()");
        }
        let _ = writeln!(w, "  call {root}_{mode}({})", args.join(", "));
        let (results, what) = if mode == "d" {
            (&spec.dependents, "tangent")
        } else {
            (&spec.independents, "adjoint")
        };
        let carries_derivative = |n: &str| {
            spec.args
                .iter()
                .zip(&spec.with_derivative)
                .any(|(a, has)| *has && a.name() == n)
        };
        for r in results {
            if carries_derivative(r) {
                let _ = writeln!(
                    w,
                    "  if (any(dv_nan([{r}_t]))) error stop 'dfort driver: the {what} computes NaN'"
                );
            }
        }
        if mode == "d" {
            for d in &spec.dependents {
                let _ = writeln!(
                    w,
                    "  dv_tan = dv_tan + {}",
                    total(d, format!("{d}_t*{d}_w"))
                );
                let _ = writeln!(
                    w,
                    "  dv_tscale = dv_tscale + {}",
                    total(d, format!("abs({d}_t*{d}_w)"))
                );
            }
        } else {
            for x in &spec.independents {
                let _ = writeln!(
                    w,
                    "  dv_adj = dv_adj + {}",
                    total(x, format!("{x}_d*{x}_t"))
                );
                let _ = writeln!(
                    w,
                    "  dv_ascale = dv_ascale + {}",
                    total(x, format!("abs({x}_d*{x}_t)"))
                );
            }
            let _ = writeln!(w, "  call dfort_stack_depth(dv_depth)");
            let _ = writeln!(w, "  call dfort_stack_stats(dv_pushed, dv_peak)");
        }
    }
    // Without an adjoint (refused) the point has no adjoint, depth or tape.
    let adjoint_fields = match spec.adjoint {
        true => {
            ", 'adjoint', dv_adj, dv_ascale, 'depth', dv_depth, &\n    & 'tape', dv_pushed, dv_peak"
        }
        false => "",
    };
    let _ = writeln!(
        w,
        "  write(*, {FORMAT}) 'point', dv_point, 'fd', dv_fd1, dv_fd2, dv_fd3, 'values', dv_fscale, &\n    & 'tangent', dv_tan, dv_tscale{adjoint_fields}"
    );
    if spec.gradient && spec.adjoint {
        let grads: Vec<String> = spec.independents.iter().map(|x| format!("{x}_t")).collect();
        if !grads.is_empty() {
            let _ = writeln!(w, "  write(*, {FORMAT}) 'grad', {}", grads.join(", "));
        }
    }
    // A tape left unbalanced is reported once; later points would pop it.
    if spec.adjoint {
        let _ = writeln!(w, "  if (dv_depth /= 0) exit");
    }
    let _ = writeln!(w, "  end do");
    let _ = writeln!(
        w,
        "contains
  ! NaN, signalling or not, told from its bits (a floating-point test
  ! would trap on a signalling one); compiled with real(8) promoted to
  ! quadruple precision (software arithmetic, no traps), by comparison.
  elemental logical function dv_nan(v)
    real(8), intent(in) :: v
    integer(8) :: b
    if (storage_size(v) /= 64) then
      dv_nan = .not. (v == v)
      return
    end if
    b = transfer(v, 0_8)
    dv_nan = iand(b, int(z'7FF0000000000000', 8)) == int(z'7FF0000000000000', 8) &
      .and. iand(b, int(z'000FFFFFFFFFFFFF', 8)) /= 0
  end function dv_nan
  subroutine dv_fill(v, n, lo, hi)
    integer, intent(in) :: n
    real(8), intent(out) :: v(n)
    real(8), intent(in) :: lo, hi
    do dv_q = 1, n
      dv_seed = mod(dv_seed*48271_8, 2147483647_8)
      v(dv_q) = lo + (hi - lo)*dble(dv_seed)/2147483647d0
    end do
  end subroutine dv_fill
{matrix}  subroutine dv_fill_s(v, lo, hi)
    real(8), intent(out) :: v
    real(8), intent(in) :: lo, hi
    dv_seed = mod(dv_seed*48271_8, 2147483647_8)
    v = lo + (hi - lo)*dble(dv_seed)/2147483647d0
  end subroutine dv_fill_s
end program dfort_verify",
        matrix = matrix_routines("dv")
    );
    s
}

/// What a driver printed for one point.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Point {
    /// Central differences at steps h, h/2 and h/4.
    pub fd: [f64; 3],
    /// Σ|yᵢ ȳᵢ| at the last step: the differences' rounding error is about
    /// machine epsilon times this over the step.
    pub values: f64,
    /// The tangent's ⟨J ẋ, ȳ⟩ and the sum of its terms' absolute values.
    pub tangent: Option<(f64, f64)>,
    /// The adjoint's ⟨ẋ, Jᵀ ȳ⟩ and the sum of its terms' absolute values.
    pub adjoint: Option<(f64, f64)>,
    /// Entries the adjoint left on the tape.
    pub depth: i64,
    /// The bytes the adjoint's call pushed, and the most its tape held.
    pub tape: Option<(i64, i64)>,
    /// The adjoint's results, when printed.
    pub gradient: Vec<f64>,
}

/// Whether `ratio`, the change of the central differences from step h to
/// h/2 over their change from h/2 to h/4, is what a smooth function gives:
/// about 4 (error terms in h²) or 16 (in h⁴).
fn fourfold(ratio: f64) -> bool {
    (2.5..=6.5).contains(&ratio) || (12.0..=20.0).contains(&ratio)
}

/// Relative difference of two values, `floor` the smallest denominator.
pub fn relative(a: f64, b: f64, floor: f64) -> f64 {
    let d = (a - b).abs();
    if d == 0.0 {
        return 0.0;
    }
    d / a.abs().max(b.abs()).max(floor)
}

impl Point {
    /// The Richardson extrapolations of steps (h, h/2) and (h/2, h/4).
    fn richardson(&self) -> (f64, f64) {
        let [a, b, c] = self.fd;
        ((4.0 * b - a) / 3.0, (4.0 * c - b) / 3.0)
    }

    /// The Romberg extrapolation of the three differences.
    pub fn fd(&self) -> f64 {
        let (r1, r2) = self.richardson();
        (16.0 * r2 - r1) / 15.0
    }

    /// The rounding error the differences may carry: machine epsilon
    /// times the values over the smallest step, with a margin for the
    /// extrapolations' coefficients.
    pub fn noise(&self) -> f64 {
        const SMALLEST_STEP: f64 = STEP / 4.0;
        if self.values.is_finite() {
            20.0 * f64::EPSILON * self.values / SMALLEST_STEP
        } else {
            0.0
        }
    }

    /// Whether the two Richardson extrapolations agree (to `tol`
    /// relative, beyond the rounding noise) and the differences converge
    /// as a smooth function's do (halving the step shrinks their change
    /// about fourfold, or sixteenfold where the third derivative vanishes,
    /// unless both changes are a hundredth of that tolerance or rounding): otherwise finite differences are
    /// unreliable here (a kink or a jump nearby, or a function that
    /// oscillates faster than the steps, such as `sin` of a value in the
    /// millions).
    pub fn smooth(&self, tol: f64) -> bool {
        let (a, b) = self.richardson();
        let scale = a.abs().max(b.abs()).max(1e-8);
        let allowed = tol * scale + self.noise();
        let [h1, h2, h4] = self.fd;
        let (d1, d2) = (h1 - h2, h2 - h4);
        let settled = 0.01 * tol * scale + 4.0 * self.noise();
        let converging =
            (d1.abs() <= settled && d2.abs() <= settled) || (d2 != 0.0 && fourfold(d1 / d2));
        a.is_finite() && b.is_finite() && (a - b).abs() <= allowed && converging
    }

    /// The tangent's relative error against the differences, their
    /// rounding noise forgiven.
    pub fn tangent_error(&self) -> Option<f64> {
        let (t, _) = self.tangent?;
        let fd = self.fd();
        let excess = ((fd - t).abs() - self.noise()).max(0.0);
        if excess == 0.0 {
            return Some(0.0);
        }
        Some(excess / fd.abs().max(t.abs()).max(1e-12))
    }

    /// The dot-product test: the adjoint against the tangent (or the
    /// differences without a tangent), relative to the larger value.
    pub fn adjoint_error(&self) -> Option<f64> {
        let (a, _) = self.adjoint?;
        let reference = self.tangent.map_or(self.fd(), |t| t.0);
        Some(relative(reference, a, 1e-12))
    }
}

/// Derivatives larger than this, of a program whose inputs and values
/// are of order one, are past what central differences in double
/// precision can check ([`only_large_tangents_disagree`]).
pub const LARGEST_CHECKABLE: f64 = 1e6;

/// Whether the tangent disagrees with the differences (by more than
/// `tol`, at the points smooth to `smooth`) only where it is larger than
/// `bound`: a program whose derivatives grow through a chaotic stretch
/// of its loops and shrink again as its values settle on a fixed point
/// has values the differences see as constant to the last bit, while the
/// tangent rightly carries the product of those steps' Jacobians (the
/// fuzzer's seed 7070, case 476: derivatives near 1e44 half-way, a
/// tangent of 1e19 at the end, differences 0). Differences cannot check
/// such a tangent, in any precision.
pub fn only_large_tangents_disagree(points: &[Point], smooth: f64, tol: f64, bound: f64) -> bool {
    let mut disagreeing = points.iter().filter(|pt| {
        pt.smooth(smooth) && pt.tangent_error().is_some_and(|e| e > tol || e.is_nan())
    });
    let large = |pt: &Point| pt.tangent.is_some_and(|(t, _)| t.abs() > bound);
    let first = disagreeing.next();
    first.is_some_and(large) && disagreeing.all(large)
}

/// The points a driver printed, in order.
pub fn parse_output(out: &str) -> Vec<Point> {
    let mut points: Vec<Point> = Vec::new();
    for line in out.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        let num = |i: usize| words.get(i).and_then(|w| parse_real(w));
        match words.first() {
            Some(&"point") => {
                let at = |key: &str| words.iter().position(|w| *w == key);
                let pair = |key: &str| {
                    let i = at(key)?;
                    Some((num(i + 1)?, num(i + 2)?))
                };
                let fd = at("fd").and_then(|i| Some([num(i + 1)?, num(i + 2)?, num(i + 3)?]));
                let Some(fd) = fd else { continue };
                points.push(Point {
                    fd,
                    values: at("values").and_then(|i| num(i + 1)).unwrap_or(0.0),
                    tangent: pair("tangent"),
                    adjoint: pair("adjoint"),
                    depth: at("depth")
                        .and_then(|i| words.get(i + 1))
                        .and_then(|w| w.parse().ok())
                        .unwrap_or(0),
                    tape: at("tape").and_then(|i| {
                        let int = |k: usize| words.get(i + k)?.parse().ok();
                        Some((int(1)?, int(2)?))
                    }),
                    gradient: Vec::new(),
                });
            }
            Some(&"grad") => {
                if let Some(p) = points.last_mut() {
                    p.gradient = (1..words.len()).filter_map(num).collect();
                }
            }
            _ => {}
        }
    }
    points
}

/// A real as gfortran prints it (`1.5`, `-2.0E-3`, `Infinity`, `NaN`).
fn parse_real(w: &str) -> Option<f64> {
    match w {
        "NaN" => Some(f64::NAN),
        "Infinity" | "+Infinity" => Some(f64::INFINITY),
        "-Infinity" => Some(f64::NEG_INFINITY),
        _ => w.parse().ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn points_are_read_back_with_their_gradients() {
        let out = "point 1 fd 1.0 1.0000001 1.0000001 values 0.5 tangent 1.00000005 2.5 adjoint 1.00000005 3.0 depth 0\n\
                   grad 0.5 -1.25E-3 NaN\n\
                   point 2 fd 0.2 4.0 1.0 tangent 1.0 1.0 adjoint 1.0 1.0 depth 3 tape 96 64\n";
        let p = parse_output(out);
        assert_eq!(p.len(), 2);
        assert_eq!(p[0].fd, [1.0, 1.0000001, 1.0000001]);
        assert_eq!(p[0].tangent, Some((1.00000005, 2.5)));
        assert_eq!(p[0].gradient.len(), 3);
        assert_eq!(p[0].gradient[1], -1.25e-3);
        assert!(p[0].gradient[2].is_nan());
        assert!(p[0].smooth(1e-4));
        assert!(!p[1].smooth(1e-4));
        assert_eq!(p[1].depth, 3);
        assert_eq!((p[0].tape, p[1].tape), (None, Some((96, 64))));
        assert_eq!(p[1].adjoint_error(), Some(0.0));
    }

    #[test]
    fn differences_that_do_not_converge_fourfold_are_not_smooth() {
        let at = |fd: [f64; 3]| Point {
            fd,
            values: 1.0,
            tangent: None,
            adjoint: None,
            depth: 0,
            tape: None,
            gradient: Vec::new(),
        };
        // Richardson's two estimates agree to 1e-5 in both, but only the
        // first shrinks its changes fourfold as the step halves (the
        // second is `sin` of a huge value seen through the steps).
        assert!(at([5e8 + 1600.0, 5e8 + 400.0, 5e8 + 100.0]).smooth(1e-5));
        assert!(!at([5e8, 5e8 + 900.0, 5e8 + 600.0]).smooth(1e-5));
        // Seen by the fuzzer: changes 2062 then 1079 (ratio 1.9).
        assert!(!at([94568697.55, 94566635.17, 94565556.54]).smooth(1e-5));
    }

    #[test]
    fn the_driver_checks_the_tape_and_prints_gradients_when_asked() {
        let spec = DriverSpec {
            root: "r".into(),
            args: vec![
                DriverArg::Int {
                    name: "n".into(),
                    value: 3,
                },
                DriverArg::Real {
                    name: "x".into(),
                    size: 3,
                },
            ],
            independents: vec!["x".into()],
            dependents: vec!["x".into()],
            with_derivative: vec![false, true],
            tangent: true,
            adjoint: true,
            module: None,
            points: 3,
            gradient: true,
            seed: 7,
            assumed_shape: Vec::new(),
            result: None,
            matrices: Vec::new(),
            step: STEP,
        };
        let d = driver(&spec);
        assert!(d.contains("do dv_point = 1, 3"));
        assert!(d.contains("call dfort_stack_depth(dv_depth)"));
        assert!(d.contains("call dfort_stack_reset()\n  call r_b("));
        assert!(d.contains("'grad', x_t"));
        assert!(d.contains("dv_seed = 8_8"));
        let without = driver(&DriverSpec {
            gradient: false,
            adjoint: false,
            ..spec
        });
        assert!(!without.contains("grad") && !without.contains("dfort_stack"));
    }
}
