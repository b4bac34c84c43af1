//! A Fortran test driver for a root and its derivatives: central finite
//! differences of the original (Richardson-extrapolated) along a random
//! direction ẋ, weighted by a random ȳ, against the tangent (⟨J ẋ, ȳ⟩),
//! and the adjoint's dot-product test (⟨ẋ, Jᵀ ȳ⟩ against the tangent's
//! ⟨J ẋ, ȳ⟩, or against the differences when there is no tangent). Prints one line:
//! `fd <value> tangent <value> <relerr> adjoint <value> <relerr>`.

use std::fmt::Write as _;

#[derive(Clone, Debug)]
pub enum DriverArg {
    /// real(8): a scalar (size 0) or an array of `size` elements.
    Real { name: String, size: usize },
    /// An integer argument, reset to `value` before every call.
    Int { name: String, value: i64 },
}

impl DriverArg {
    fn name(&self) -> &str {
        match self {
            DriverArg::Real { name, .. } | DriverArg::Int { name, .. } => name,
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
}

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
    let header = match &spec.module {
        Some(m) => {
            let mut uses = format!("  use {m}");
            if spec.tangent {
                uses.push_str(&format!("\n  use {m}_d"));
            }
            if spec.adjoint {
                uses.push_str(&format!("\n  use {m}_b"));
            }
            format!("program dfort_verify\n{uses}\n  implicit none")
        }
        None => format!(
            "program dfort_verify\n  implicit none\n  external {}",
            ext.join(", ")
        ),
    };
    let _ = writeln!(w, "{header}");
    let _ = writeln!(
        w,
        "  integer(8) :: dv_seed\n  integer :: dv_q\n  real(8) :: dv_eps, dv_fd, dv_fd1, dv_fd2, dv_tan, dv_adj"
    );
    for a in &spec.args {
        match a {
            DriverArg::Int { name, .. } => {
                let _ = writeln!(w, "  integer :: {name}");
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
    let _ = writeln!(w, "  dv_seed = 12345_8");
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
            if !is_ind(name) {
                let _ = writeln!(w, "  {name}_d = 0d0");
            }
        }
    }
    let reset = |w: &mut String, sign: &str| {
        for a in &spec.args {
            match a {
                DriverArg::Int { name, value } => {
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
    // Central differences at steps h and h/2, combined by Richardson
    // extrapolation: the truncation error is O(h⁴), so h can be large
    // enough (1e-4) for the rounding error to stay small.
    for (step, acc) in [("1d-4", "dv_fd1"), ("0.5d-4", "dv_fd2")] {
        let _ = writeln!(w, "  dv_eps = {step}");
        for (sign, store) in [("+", "_p"), ("-", "_m")] {
            reset(w, sign);
            let _ = writeln!(w, "  call {root}({})", plain.join(", "));
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
    let _ = writeln!(w, "  dv_fd = (4d0*dv_fd2 - dv_fd1)/3d0");
    for (mode, on) in [("d", spec.tangent), ("b", spec.adjoint)] {
        if !on {
            continue;
        }
        reset(w, "");
        let mut args = Vec::new();
        for (a, has) in spec.args.iter().zip(&spec.with_derivative) {
            let n = a.name();
            args.push(n.to_string());
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
        let _ = writeln!(w, "  call {root}_{mode}({})", args.join(", "));
        if mode == "d" {
            let _ = writeln!(w, "  dv_tan = 0d0");
            for d in &spec.dependents {
                let _ = writeln!(
                    w,
                    "  dv_tan = dv_tan + {}",
                    total(d, format!("{d}_t*{d}_w"))
                );
            }
        } else {
            let _ = writeln!(w, "  dv_adj = 0d0");
            for x in &spec.independents {
                let _ = writeln!(
                    w,
                    "  dv_adj = dv_adj + {}",
                    total(x, format!("{x}_d*{x}_t"))
                );
            }
        }
    }
    let rel = |a: &str, v: &str| format!("abs({a} - {v})/max(abs({a}), abs({v}), 1d-12)");
    let mut out = vec!["'fd', dv_fd".to_string()];
    if spec.tangent {
        out.push(format!("'tangent', dv_tan, {}", rel("dv_fd", "dv_tan")));
    }
    // The dot-product test: ⟨ẋ, Jᵀȳ⟩ against ⟨J ẋ, ȳ⟩ from the tangent
    // (itself checked against the differences), else the differences.
    if spec.adjoint {
        let reference = if spec.tangent { "dv_tan" } else { "dv_fd" };
        out.push(format!("'adjoint', dv_adj, {}", rel(reference, "dv_adj")));
    }
    let _ = writeln!(w, "  print *, {}", out.join(", &\n    & "));
    let _ = writeln!(
        w,
        "contains
  subroutine dv_fill(v, n, lo, hi)
    integer, intent(in) :: n
    real(8), intent(out) :: v(n)
    real(8), intent(in) :: lo, hi
    do dv_q = 1, n
      dv_seed = mod(dv_seed*48271_8, 2147483647_8)
      v(dv_q) = lo + (hi - lo)*dble(dv_seed)/2147483647d0
    end do
  end subroutine dv_fill
  subroutine dv_fill_s(v, lo, hi)
    real(8), intent(out) :: v
    real(8), intent(in) :: lo, hi
    dv_seed = mod(dv_seed*48271_8, 2147483647_8)
    v = lo + (hi - lo)*dble(dv_seed)/2147483647d0
  end subroutine dv_fill_s
end program dfort_verify"
    );
    s
}

/// The relative errors printed by a driver: (tangent, adjoint).
pub fn parse_output(out: &str) -> (Option<f64>, Option<f64>) {
    let words: Vec<&str> = out.split_whitespace().collect();
    let after = |key: &str| {
        words
            .iter()
            .position(|w| *w == key)
            .and_then(|i| words.get(i + 2))
            .and_then(|v| v.parse::<f64>().ok())
    };
    (after("tangent"), after("adjoint"))
}
