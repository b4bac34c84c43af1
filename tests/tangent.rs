//! Derivatives are checked numerically: each kernel's tangent `R_d` and
//! adjoint `R_b` are generated, compiled with gfortran beside the original
//! and a generated driver, and compared with central finite differences
//! of the original: the tangent by ⟨J ẋ, w⟩, the adjoint by the
//! dot-product test ⟨J ẋ, w⟩ = ⟨ẋ, Jᵀ w⟩. gfortran is required (CI
//! installs it).

mod support;

use dfort_analysis::roles::roles;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use support::*;

#[derive(Clone, Copy)]
enum Arg {
    /// A real(8) argument: scalar (0) or array of this many elements.
    Real(usize),
    /// An integer argument with this value (reset before every call).
    Int(i64),
}

struct Kernel {
    file: &'static str,
    root: &'static str,
    args: &'static [(&'static str, Arg)],
    independent: &'static [&'static str],
    dependent: &'static [&'static str],
}

const KERNELS: &[Kernel] = &[
    Kernel {
        file: "papers/p000_bratu.f",
        root: "bratu",
        args: &[
            ("dim", Arg::Int(12)),
            ("parmax", Arg::Int(2)),
            ("x", Arg::Real(12)),
            ("prm", Arg::Real(2)),
            ("f", Arg::Real(12)),
        ],
        independent: &["x", "prm"],
        dependent: &["f"],
    },
    Kernel {
        file: "papers/p001_sec2_orig.f90",
        root: "f",
        args: &[("x", Arg::Real(2)), ("y", Arg::Real(3))],
        independent: &["x"],
        dependent: &["y"],
    },
    Kernel {
        file: "papers/p000_fig1.f90",
        root: "tbr_fig1",
        args: &[("x", Arg::Real(11))],
        independent: &["x"],
        dependent: &["x"],
    },
    Kernel {
        file: "kernels/cfr.f90",
        root: "cfr",
        args: &[("x", Arg::Real(2)), ("y", Arg::Real(3))],
        independent: &["x"],
        dependent: &["y"],
    },
    Kernel {
        file: "kernels/toy.f90",
        root: "toy",
        args: &[
            ("x", Arg::Real(2)),
            ("y", Arg::Real(10)),
            ("k", Arg::Int(1)),
        ],
        independent: &["x"],
        dependent: &["y"],
    },
    Kernel {
        file: "kernels/toy.f90",
        root: "toy",
        args: &[
            ("x", Arg::Real(2)),
            ("y", Arg::Real(10)),
            ("k", Arg::Int(2)),
        ],
        independent: &["x"],
        dependent: &["y"],
    },
    Kernel {
        file: "kernels/addr2.f90",
        root: "addr2",
        args: &[("a", Arg::Real(10))],
        independent: &["a"],
        dependent: &["a"],
    },
    Kernel {
        file: "analysis/loop_bounds.f90",
        root: "scale_all",
        args: &[("n", Arg::Int(7)), ("x", Arg::Real(100))],
        independent: &["x"],
        dependent: &["x"],
    },
];

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

/// Writes the driver: FD of the original vs the tangent, printing the
/// relative error.
fn driver(k: &Kernel, with_d: &[bool], adjoint: bool) -> String {
    let sfx = if adjoint { "b" } else { "d" };
    let mut s = String::new();
    let w = &mut s;
    let _ = writeln!(
        w,
        "program driver\n  implicit none\n  external {}, {}_d",
        k.root, k.root
    );
    let _ = writeln!(
        w,
        "  integer(8) :: seed\n  integer :: q\n  real(8) :: eps, lhs, rhs, err"
    );
    for (name, a) in k.args {
        match a {
            Arg::Int(_) => {
                let _ = writeln!(w, "  integer :: {name}");
            }
            Arg::Real(n) => {
                let dim = if *n == 0 {
                    String::new()
                } else {
                    format!("({n})")
                };
                for sfx in ["", "_0", "_d", "_w", "_p", "_m", "_t"] {
                    let _ = writeln!(w, "  real(8) :: {name}{sfx}{dim}");
                }
            }
        }
    }
    let _ = writeln!(w, "  seed = 12345_8\n  eps = 1d-6");
    for (name, a) in k.args {
        if let Arg::Real(n) = a {
            let f = if *n == 0 { "fill_s(" } else { "fill(" };
            let sz = |v: &str| {
                if *n == 0 {
                    String::new()
                } else {
                    format!(", size({v})")
                }
            };
            let _ = writeln!(
                w,
                "  call {f}{name}_0{}, 0.5d0, 1.5d0)",
                sz(&format!("{name}_0"))
            );
            let _ = writeln!(
                w,
                "  call {f}{name}_d{}, -1d0, 1d0)",
                sz(&format!("{name}_d"))
            );
            let _ = writeln!(
                w,
                "  call {f}{name}_w{}, -1d0, 1d0)",
                sz(&format!("{name}_w"))
            );
            if !k.independent.contains(name) {
                let _ = writeln!(w, "  {name}_d = 0d0");
            }
        }
    }
    let reset = |w: &mut String, sign: &str| {
        for (name, a) in k.args {
            match a {
                Arg::Int(v) => {
                    let _ = writeln!(w, "  {name} = {v}");
                }
                Arg::Real(_) if k.independent.contains(name) && !sign.is_empty() => {
                    let _ = writeln!(w, "  {name} = {name}_0 {sign} eps*{name}_d");
                }
                Arg::Real(_) => {
                    let _ = writeln!(w, "  {name} = {name}_0");
                }
            }
        }
    };
    let plain: Vec<&str> = k.args.iter().map(|(n, _)| *n).collect();
    reset(w, "+");
    let _ = writeln!(w, "  call {}({})", k.root, plain.join(", "));
    for d in k.dependent {
        let _ = writeln!(w, "  {d}_p = {d}");
    }
    reset(w, "-");
    let _ = writeln!(w, "  call {}({})", k.root, plain.join(", "));
    for d in k.dependent {
        let _ = writeln!(w, "  {d}_m = {d}");
    }
    let _ = writeln!(w, "  lhs = 0d0");
    for d in k.dependent {
        let _ = writeln!(w, "  lhs = lhs + sum(({d}_p - {d}_m)/(2d0*eps)*{d}_w)");
    }
    reset(w, "");
    let mut targs = Vec::new();
    for ((name, _), has_d) in k.args.iter().zip(with_d) {
        targs.push(name.to_string());
        if *has_d {
            targs.push(format!("{name}_t"));
            if !adjoint {
                let _ = writeln!(w, "  {name}_t = {name}_d");
            } else if k.dependent.contains(name) {
                let _ = writeln!(w, "  {name}_t = {name}_w");
            } else {
                let _ = writeln!(w, "  {name}_t = 0d0");
            }
        }
    }
    let _ = writeln!(w, "  call {}_{sfx}({})", k.root, targs.join(", "));
    let _ = writeln!(w, "  rhs = 0d0");
    if adjoint {
        for x in k.independent {
            let _ = writeln!(w, "  rhs = rhs + sum({x}_d*{x}_t)");
        }
    } else {
        for d in k.dependent {
            let _ = writeln!(w, "  rhs = rhs + sum({d}_t*{d}_w)");
        }
    }
    let _ = writeln!(
        w,
        "  err = abs(lhs - rhs)/max(abs(lhs), abs(rhs), 1d-12)\n  print '(3es26.16)', lhs, rhs, err\ncontains\n  subroutine fill(v, n, lo, hi)\n    integer, intent(in) :: n\n    real(8), intent(out) :: v(n)\n    real(8), intent(in) :: lo, hi\n    do q = 1, n\n      seed = mod(seed*48271_8, 2147483647_8)\n      v(q) = lo + (hi - lo)*dble(seed)/2147483647d0\n    end do\n  end subroutine fill\n  subroutine fill_s(v, lo, hi)\n    real(8), intent(out) :: v\n    real(8), intent(in) :: lo, hi\n    seed = mod(seed*48271_8, 2147483647_8)\n    v = lo + (hi - lo)*dble(seed)/2147483647d0\n  end subroutine fill_s\nend program driver"
    );
    s
}

fn gfortran(dir: &Path, args: &[&str]) {
    let out = Command::new("gfortran")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("gfortran runs");
    assert!(
        out.status.success(),
        "gfortran {args:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn check(k: &Kernel, adjoint: bool) -> f64 {
    let src = fixtures().join(k.file);
    let ws = load_one(&src);
    let u = unit(&ws, k.root);
    let r = roles(u, Some((&names(k.independent), &names(k.dependent))));
    let (ind, dep) = (&r.independents, &r.dependents);
    let text = if adjoint {
        dfort_codegen::adjoint::adjoint(&ws.program, u.id, ind, dep, false, "test")
    } else {
        dfort_codegen::tangent::tangent(&ws.program, u.id, ind, dep, "test")
    }
    .unwrap_or_else(|e| panic!("{}: refused: {e:?}", k.file));
    let dn = dfort_codegen::tangent::derivative_names(&ws.program, u.id, ind, dep);
    let with_d: Vec<bool> = k
        .args
        .iter()
        .map(|(n, _)| u.lookup(n).is_some_and(|s| dn.contains_key(&s)))
        .collect();
    let dir = std::env::temp_dir().join(format!(
        "dfort-deriv-{}-{}-{}",
        k.root,
        adjoint,
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let orig = dir.join(src.file_name().unwrap());
    std::fs::copy(&src, &orig).unwrap();
    std::fs::write(dir.join("deriv.f90"), &text).unwrap();
    std::fs::write(dir.join("dfort_stack.f90"), dfort_codegen::adjoint::RUNTIME).unwrap();
    std::fs::write(dir.join("driver.f90"), driver(k, &with_d, adjoint)).unwrap();
    let o = orig.file_name().unwrap().to_str().unwrap().to_string();
    gfortran(&dir, &["-O2", "-c", &o, "-o", "orig.o"]);
    gfortran(
        &dir,
        &["-O2", "-Wall", "-c", "dfort_stack.f90", "-o", "stack.o"],
    );
    gfortran(&dir, &["-O2", "-Wall", "-c", "deriv.f90", "-o", "deriv.o"]);
    gfortran(
        &dir,
        &[
            "-O2",
            "driver.f90",
            "orig.o",
            "deriv.o",
            "stack.o",
            "-o",
            "run",
        ],
    );
    let out = Command::new(dir.join("run")).output().expect("driver runs");
    let line = String::from_utf8_lossy(&out.stdout).to_string();
    let err: f64 = line
        .split_whitespace()
        .nth(2)
        .and_then(|e| e.parse().ok())
        .unwrap_or_else(|| panic!("{}: bad driver output {line:?}", k.file));
    std::fs::remove_dir_all(&dir).ok();
    err
}

#[test]
fn tangents_match_finite_differences() {
    if std::env::var_os("DFORT_SKIP_GFORTRAN").is_some() {
        return;
    }
    let mut report = Vec::new();
    for k in KERNELS {
        let err = check(k, false);
        report.push(format!("{} {err:.2e}", k.root));
        assert!(err <= 1e-8, "{}: relative error {err:e}", k.file);
    }
    println!("tangent checks: {}", report.join(", "));
}

#[test]
fn adjoints_pass_the_dot_product_test() {
    if std::env::var_os("DFORT_SKIP_GFORTRAN").is_some() {
        return;
    }
    let mut report = Vec::new();
    for k in KERNELS {
        let err = check(k, true);
        report.push(format!("{} {err:.2e}", k.root));
        assert!(err <= 1e-8, "{}: relative error {err:e}", k.file);
    }
    println!("adjoint checks: {}", report.join(", "));
}

#[test]
fn whole_array_assignments_tangent_ok_adjoint_refused() {
    if std::env::var_os("DFORT_SKIP_GFORTRAN").is_some() {
        return;
    }
    let k = Kernel {
        file: "analysis/array_assign.f90",
        root: "axpy_whole",
        args: &[
            ("n", Arg::Int(9)),
            ("a", Arg::Real(0)),
            ("x", Arg::Real(9)),
            ("y", Arg::Real(9)),
        ],
        independent: &["a", "x", "y"],
        dependent: &["y"],
    };
    let err = check(&k, false);
    assert!(err <= 1e-8, "relative error {err:e}");
    let ws = fixture(k.file);
    let u = unit(&ws, k.root);
    let r = roles(u, None);
    let refusals = dfort_codegen::adjoint::adjoint(
        &ws.program,
        u.id,
        &r.independents,
        &r.dependents,
        false,
        "",
    )
    .expect_err("refused");
    let line = ws.files[0]
        .lines
        .line_col(refusals[0].span.range.start)
        .line
        + 1;
    assert_eq!(line, 8, "{refusals:?}");
}

#[test]
fn active_calls_are_refused_with_their_location() {
    let ws = fixture("interproc/callee_activity.f90");
    let u = unit(&ws, "driver");
    let r = roles(u, None);
    let refusals =
        dfort_codegen::tangent::tangent(&ws.program, u.id, &r.independents, &r.dependents, "")
            .expect_err("an active call cannot be differentiated yet");
    let f = &ws.files[0];
    let lines: Vec<u32> = refusals
        .iter()
        .map(|rf| f.lines.line_col(rf.span.range.start).line + 1)
        .collect();
    assert!(lines.contains(&22), "{refusals:?}");
    let _ = PathBuf::new();
}
