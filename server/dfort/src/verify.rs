//! `dfort verify`: generates the tangent and the adjoint of a root,
//! compiles them with gfortran beside the original sources and a driver,
//! and reports the relative errors of the tangent against central finite
//! differences and of the adjoint's dot-product test.

use crate::tangent::{load_root, DiffArgs};
use dfort_codegen::driver::{driver, parse_output, DriverArg, DriverSpec};
use dfort_ir::*;
use std::collections::HashMap;
use std::path::Path;
use std::process::{Command, ExitCode};

#[derive(clap::Args)]
pub struct VerifyArgs {
    #[command(flatten)]
    diff: DiffArgs,
    /// Values of the root's integer arguments: NAME=VALUE, comma-separated.
    #[arg(long = "int", value_delimiter = ',', value_name = "NAME=VALUE")]
    ints: Vec<String>,
    /// Sizes of array arguments whose bounds are not given by integer
    /// arguments (assumed shape or size): NAME=N, comma-separated.
    #[arg(long = "size", value_delimiter = ',', value_name = "NAME=N")]
    sizes: Vec<String>,
    /// Largest relative error accepted.
    #[arg(long, default_value_t = 1e-6)]
    tolerance: f64,
}

fn pairs(items: &[String]) -> Result<HashMap<String, i64>, String> {
    items
        .iter()
        .map(|it| {
            let (k, v) = it
                .split_once('=')
                .ok_or_else(|| format!("expected NAME=VALUE, got `{it}`"))?;
            let v: i64 = v
                .trim()
                .parse()
                .map_err(|_| format!("`{v}` is not an integer"))?;
            Ok((k.trim().to_ascii_lowercase(), v))
        })
        .collect()
}

/// Integer value of a bound expression, given the integer arguments.
fn eval(unit: &Unit, e: &Expr, ints: &HashMap<String, i64>) -> Option<i64> {
    match &e.kind {
        ExprKind::Int(v) => Some(*v),
        ExprKind::Var(s) => {
            let sym = unit.symbol(*s);
            match (&sym.init, sym.attrs.parameter) {
                (Some(init), true) => eval(unit, init, ints),
                _ => ints.get(&sym.name).copied(),
            }
        }
        ExprKind::Unary {
            op: UnaryOp::Neg,
            operand,
        } => eval(unit, operand, ints).map(|v| -v),
        ExprKind::Binary { op, lhs, rhs } => {
            let (a, b) = (eval(unit, lhs, ints)?, eval(unit, rhs, ints)?);
            match op {
                BinaryOp::Add => a.checked_add(b),
                BinaryOp::Sub => a.checked_sub(b),
                BinaryOp::Mul => a.checked_mul(b),
                BinaryOp::Div => a.checked_div(b),
                _ => None,
            }
        }
        _ => None,
    }
}

fn driver_args(
    unit: &Unit,
    ints: &HashMap<String, i64>,
    sizes: &HashMap<String, i64>,
) -> Result<Vec<DriverArg>, String> {
    let mut out = Vec::new();
    for a in &unit.args {
        let s = unit.symbol(*a);
        let name = s.name.clone();
        match (s.ty.base, s.rank()) {
            (BaseType::Integer, 0) => match ints.get(&name) {
                Some(v) => out.push(DriverArg::Int { name, value: *v }),
                None => {
                    return Err(format!(
                        "give the integer argument `{name}` a value with --int {name}=VALUE"
                    ))
                }
            },
            (BaseType::Real, 0) if s.ty.kind == Some(8) => {
                out.push(DriverArg::Real { name, size: 0 })
            }
            (BaseType::Real, _) if s.ty.kind == Some(8) => {
                let size = match sizes.get(&name) {
                    Some(n) => *n,
                    None => {
                        let mut total: i64 = 1;
                        for d in &s.dims {
                            let lo = match &d.lower {
                                Some(l) => eval(unit, l, ints),
                                None => Some(1),
                            };
                            let hi = d.upper.as_ref().and_then(|u| eval(unit, u, ints));
                            match (d.kind, lo, hi) {
                                (DimKind::Explicit, Some(lo), Some(hi)) => total *= (hi - lo + 1).max(0),
                                _ => {
                                    return Err(format!(
                                        "give the size of `{name}` with --size {name}=N (its bounds are not known from the integer arguments)"
                                    ))
                                }
                            }
                        }
                        total
                    }
                };
                out.push(DriverArg::Real {
                    name,
                    size: usize::try_from(size).unwrap_or(0),
                });
            }
            _ => {
                return Err(format!(
                    "verify can drive integer and real(8) arguments only; `{name}` is {}",
                    dfort_ir::dump::type_name(&s.ty)
                ))
            }
        }
    }
    Ok(out)
}

fn gfortran(dir: &Path, args: &[&str]) -> Result<(), String> {
    let out = Command::new("gfortran")
        .args(args)
        .current_dir(dir)
        .output()
        .map_err(|e| format!("cannot run gfortran ({e}); dfort verify needs it"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "gfortran {}:\n{}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

pub fn run(args: VerifyArgs) -> ExitCode {
    match verify(&args) {
        Ok(ok) => {
            if ok {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            }
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
    }
}

fn verify(args: &VerifyArgs) -> Result<bool, String> {
    let (ints, sizes) = (pairs(&args.ints)?, pairs(&args.sizes)?);
    let Some((ws, root, roles)) = load_root(&args.diff) else {
        return Err("nothing to verify".into());
    };
    let unit = ws.program.unit(root);
    let dargs = driver_args(unit, &ints, &sizes)?;
    let (ind, dep) = (&roles.independents, &roles.dependents);
    let tangent = dfort_codegen::tangent::tangent(&ws.program, root, ind, dep, "dfort verify");
    let adjoint =
        dfort_codegen::adjoint::adjoint(&ws.program, root, ind, dep, false, "dfort verify");
    for (what, r) in [("tangent", &tangent), ("adjoint", &adjoint)] {
        if let Err(refusals) = r {
            crate::tangent::report_refusals(&ws, &unit.name, what, refusals);
        }
    }
    let (Ok(tangent), Ok(adjoint)) = (tangent, adjoint) else {
        return Ok(false);
    };
    let dn = dfort_codegen::tangent::derivative_names(&ws.program, root, ind, dep);
    let names = |set: &dfort_analysis::bitset::BitSet| -> Vec<String> {
        set.iter()
            .filter_map(|i| unit.symbols.get(i).map(|s| s.name.clone()))
            .collect()
    };
    let spec = DriverSpec {
        root: unit.name.clone(),
        with_derivative: unit.args.iter().map(|a| dn.contains_key(a)).collect(),
        args: dargs,
        independents: names(ind),
        dependents: names(dep),
        tangent: true,
        adjoint: true,
    };
    let dir = std::env::temp_dir().join(format!("dfort-verify-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let write = |name: &str, text: &str| {
        std::fs::write(dir.join(name), text).map_err(|e| format!("cannot write {name}: {e}"))
    };
    // The original sources, compiled in dependency order by retrying.
    let mut pending: Vec<String> = Vec::new();
    for (i, f) in ws.files.iter().enumerate() {
        let ext = f.path.extension().and_then(|e| e.to_str()).unwrap_or("f90");
        let name = format!("src{i}.{ext}");
        write(&name, &f.text)?;
        pending.push(name);
    }
    write("tangent.f90", &tangent)?;
    write("adjoint.f90", &adjoint)?;
    write("dfort_stack.f90", dfort_codegen::adjoint::RUNTIME)?;
    write("driver.f90", &driver(&spec))?;
    let mut objects = Vec::new();
    let mut last_err = String::new();
    for _ in 0..=pending.len() {
        let mut next = Vec::new();
        for f in &pending {
            let o = format!("{f}.o");
            match gfortran(&dir, &["-O2", "-c", f, "-o", &o]) {
                Ok(()) => objects.push(o),
                Err(e) => {
                    last_err = e;
                    next.push(f.clone());
                }
            }
        }
        if next.len() == pending.len() {
            break;
        }
        pending = next;
    }
    if !pending.is_empty() {
        return Err(format!("the original sources do not compile: {last_err}"));
    }
    for f in ["dfort_stack.f90", "tangent.f90", "adjoint.f90"] {
        gfortran(&dir, &["-O2", "-c", f, "-o", &format!("{f}.o")])?;
        objects.push(format!("{f}.o"));
    }
    let mut link = vec!["-O2", "driver.f90"];
    link.extend(objects.iter().map(String::as_str));
    link.extend(["-o", "run"]);
    gfortran(&dir, &link)?;
    let out = Command::new(dir.join("run"))
        .output()
        .map_err(|e| format!("cannot run the driver: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    std::fs::remove_dir_all(&dir).ok();
    let (t, a) = parse_output(&text);
    let (Some(t), Some(a)) = (t, a) else {
        return Err(format!("the driver printed no result: {text}"));
    };
    let verdict = |e: f64| {
        if e <= args.tolerance {
            "ok"
        } else {
            "TOO LARGE"
        }
    };
    println!(
        "{}: tangent relative error {t:.2e} against central finite differences ({})",
        unit.name,
        verdict(t)
    );
    println!(
        "{}: adjoint relative error {a:.2e} in the dot-product test ({})",
        unit.name,
        verdict(a)
    );
    Ok(t <= args.tolerance && a <= args.tolerance)
}
