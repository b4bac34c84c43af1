//! Derivatives are checked numerically: each kernel's tangent `R_d` and
//! adjoint `R_b` are generated, compiled with gfortran beside the original
//! and a generated driver, and compared with central finite differences
//! of the original: the tangent by ⟨J ẋ, w⟩, the adjoint by the
//! dot-product test ⟨J ẋ, w⟩ = ⟨ẋ, Jᵀ w⟩. gfortran is required (CI
//! installs it).

mod support;

use dfort_analysis::roles::roles;
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
        file: "free/legacy_in_free.f90",
        root: "bulk_flux",
        args: &[
            ("n", Arg::Int(12)),
            ("ws", Arg::Real(12)),
            ("ta", Arg::Real(12)),
            ("ts", Arg::Real(12)),
            ("qh", Arg::Real(12)),
            ("iopt", Arg::Int(1)),
        ],
        independent: &["ta", "ts"],
        dependent: &["qh"],
    },
    Kernel {
        file: "free/legacy_in_free.f90",
        root: "bulk_flux",
        args: &[
            ("n", Arg::Int(12)),
            ("ws", Arg::Real(12)),
            ("ta", Arg::Real(12)),
            ("ts", Arg::Real(12)),
            ("qh", Arg::Real(12)),
            ("iopt", Arg::Int(2)),
        ],
        independent: &["ta", "ts"],
        dependent: &["qh"],
    },
    Kernel {
        file: "free/legacy_in_free.f90",
        root: "bulk_flux",
        args: &[
            ("n", Arg::Int(12)),
            ("ws", Arg::Real(12)),
            ("ta", Arg::Real(12)),
            ("ts", Arg::Real(12)),
            ("qh", Arg::Real(12)),
            ("iopt", Arg::Int(3)),
        ],
        independent: &["ta", "ts"],
        dependent: &["qh"],
    },
    Kernel {
        file: "fixed/loop_goto_f77.f",
        root: "energy",
        args: &[
            ("p", Arg::Real(9)),
            ("n", Arg::Int(9)),
            ("e", Arg::Real(0)),
            ("eodd", Arg::Real(0)),
        ],
        independent: &["p"],
        dependent: &["e", "eodd"],
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

/// Generates the tangent and (when `adjoint`) the adjoint of a kernel,
/// compiles them with the original and a driver, and returns the relative
/// errors (tangent vs finite differences, adjoint dot-product test).
fn check(k: &Kernel, adjoint: bool) -> (f64, Option<f64>) {
    use dfort_codegen::driver::{driver, parse_output, DriverArg, DriverSpec};
    let src = fixtures().join(k.file);
    let ws = load_one(&src);
    let u = unit(&ws, k.root);
    let r = roles(u, Some((&names(k.independent), &names(k.dependent))));
    let (ind, dep) = (&r.independents, &r.dependents);
    let tangent = dfort_codegen::tangent::tangent(&ws.program, u.id, ind, dep, "test")
        .unwrap_or_else(|e| panic!("{}: tangent refused: {e:?}", k.file));
    let adj = adjoint.then(|| {
        dfort_codegen::adjoint::adjoint(&ws.program, u.id, ind, dep, false, "test")
            .unwrap_or_else(|e| panic!("{}: adjoint refused: {e:?}", k.file))
    });
    let dn = dfort_codegen::tangent::derivative_names(&ws.program, u.id, ind, dep);
    let spec = DriverSpec {
        root: k.root.to_string(),
        args: k
            .args
            .iter()
            .map(|(n, a)| match a {
                Arg::Real(size) => DriverArg::Real {
                    name: n.to_string(),
                    size: *size,
                },
                Arg::Int(v) => DriverArg::Int {
                    name: n.to_string(),
                    value: *v,
                },
            })
            .collect(),
        independents: names(k.independent),
        dependents: names(k.dependent),
        with_derivative: k
            .args
            .iter()
            .map(|(n, _)| u.lookup(n).is_some_and(|s| dn.contains_key(&s)))
            .collect(),
        tangent: true,
        adjoint,
    };
    let dir = std::env::temp_dir().join(format!(
        "dfort-deriv-{}-{}-{}",
        k.root,
        k.file.len(),
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let orig = dir.join(src.file_name().unwrap());
    std::fs::copy(&src, &orig).unwrap();
    std::fs::write(dir.join("tangent.f90"), &tangent).unwrap();
    std::fs::write(dir.join("adjoint.f90"), adj.unwrap_or_default()).unwrap();
    std::fs::write(dir.join("dfort_stack.f90"), dfort_codegen::adjoint::RUNTIME).unwrap();
    std::fs::write(dir.join("driver.f90"), driver(&spec)).unwrap();
    let o = orig.file_name().unwrap().to_str().unwrap().to_string();
    gfortran(&dir, &["-O2", "-c", &o, "-o", "orig.o"]);
    gfortran(
        &dir,
        &["-O2", "-Wall", "-c", "dfort_stack.f90", "-o", "stack.o"],
    );
    gfortran(
        &dir,
        &["-O2", "-Wall", "-c", "tangent.f90", "-o", "tangent.o"],
    );
    gfortran(
        &dir,
        &["-O2", "-Wall", "-c", "adjoint.f90", "-o", "adjoint.o"],
    );
    gfortran(
        &dir,
        &[
            "-O2",
            "driver.f90",
            "orig.o",
            "tangent.o",
            "adjoint.o",
            "stack.o",
            "-o",
            "run",
        ],
    );
    let out = Command::new(dir.join("run")).output().expect("driver runs");
    let line = String::from_utf8_lossy(&out.stdout).to_string();
    let (t, a) = parse_output(&line);
    std::fs::remove_dir_all(&dir).ok();
    (
        t.unwrap_or_else(|| panic!("{}: bad driver output {line:?}", k.file)),
        a,
    )
}

#[test]
fn tangents_match_finite_differences_and_adjoints_pass_the_dot_product_test() {
    if std::env::var_os("DFORT_SKIP_GFORTRAN").is_some() {
        return;
    }
    let mut report = Vec::new();
    for k in KERNELS {
        let (t, a) = check(k, true);
        let a = a.expect("adjoint checked");
        report.push(format!("{} tangent {t:.1e} adjoint {a:.1e}", k.root));
        assert!(t <= 1e-8, "{}: tangent relative error {t:e}", k.file);
        assert!(a <= 1e-8, "{}: adjoint relative error {a:e}", k.file);
    }
    println!("derivative checks: {}", report.join("; "));
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
    let (err, _) = check(&k, false);
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

#[test]
fn every_derivative_written_for_the_fixtures_compiles() {
    // Each procedure nobody calls, in every construct and paper fixture:
    // dfort either refuses (with a location) or writes code that gfortran
    // compiles with -Wall.
    if std::env::var_os("DFORT_SKIP_GFORTRAN").is_some() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("dfort-sweep-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("dfort_stack.f90"), dfort_codegen::adjoint::RUNTIME).unwrap();
    gfortran(&dir, &["-c", "dfort_stack.f90", "-o", "stack.o"]);
    let (mut written, mut refused) = (0, 0);
    for sub in ["free", "fixed", "papers"] {
        for path in fortran_files(&fixtures().join(sub)) {
            let name = path.file_name().unwrap().to_string_lossy().to_string();
            if name == "bratu_73col.f" || name == "multi_use.f90" {
                continue;
            }
            let ws = load_one(&path);
            let copy = dir.join(&name);
            std::fs::copy(&path, &copy).unwrap();
            gfortran(&dir, &["-std=legacy", "-c", &name, "-o", "orig.o"]);
            for u in ws.program.units.iter().filter(|u| {
                u.kind == dfort_ir::UnitKind::Subroutine
                    && ws.program.call_graph.calls_to[u.id.0 as usize].is_empty()
            }) {
                let r = roles(u, None);
                let (ind, dep) = (&r.independents, &r.dependents);
                let outputs = [
                    dfort_codegen::tangent::tangent(&ws.program, u.id, ind, dep, ""),
                    dfort_codegen::adjoint::adjoint(&ws.program, u.id, ind, dep, false, ""),
                ];
                for out in outputs {
                    match out {
                        Ok(text) => {
                            std::fs::write(dir.join("deriv.f90"), text).unwrap();
                            gfortran(&dir, &["-Wall", "-c", "deriv.f90", "-o", "deriv.o"]);
                            written += 1;
                        }
                        Err(refusals) => {
                            assert!(
                                !refusals.is_empty(),
                                "{name}/{}: refused without a reason",
                                u.name
                            );
                            refused += 1;
                        }
                    }
                }
            }
        }
    }
    std::fs::remove_dir_all(&dir).ok();
    assert!(written >= 60, "only {written} derivatives written");
    println!("{written} derivatives written and compiled, {refused} refused with a location");
}
