//! Numerical checks of the generated derivatives. Every kernel listed in
//! tests/kernels.toml is run through `dfort verify` (tangent against
//! central finite differences, adjoint by the dot-product test, both
//! compiled with gfortran), in the three recording modes: TBR with
//! address recovery by inversion (the default), `--no-inversion` and
//! `--no-tbr` (store-all), each also with every local Jacobian
//! preaccumulated (`--preaccumulate=all`, papers 002 and 004), with
//! bounds checks in the derivative code. The
//! kernels run in parallel; every failure is collected
//! and reported in one assertion at the end. Set DFORT_SKIP_GFORTRAN=1 to
//! skip the numerical test on a machine without gfortran.

use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// Default tolerance of a kernel (the design's bound for smooth kernels).
const DEFAULT_TOLERANCE: f64 = 1e-8;

/// The manifest must keep at least this many kernels.
const MIN_KERNELS: usize = 25;

#[derive(Debug, Deserialize)]
struct Manifest {
    kernel: Vec<Kernel>,
}

#[derive(Debug, Deserialize)]
struct Kernel {
    files: Vec<String>,
    root: String,
    #[serde(default)]
    independent: Vec<String>,
    #[serde(default)]
    dependent: Vec<String>,
    #[serde(default)]
    int: BTreeMap<String, i64>,
    #[serde(default)]
    size: BTreeMap<String, u64>,
    /// Values of character and logical arguments (flags).
    #[serde(default)]
    char: BTreeMap<String, String>,
    #[serde(default)]
    logical: BTreeMap<String, bool>,
    /// Values of integer array arguments (`--int ipiv=[2,3,3]`).
    #[serde(default)]
    int_array: BTreeMap<String, Vec<i64>>,
    /// Matrices made `spd` or `diag-dominant` (`--matrix`).
    #[serde(default)]
    matrix: BTreeMap<String, String>,
    tolerance: Option<f64>,
    /// Whether derivative code runs with bounds checks (default: yes).
    bounds: Option<bool>,
    #[serde(default)]
    why: String,
}

impl Kernel {
    fn label(&self) -> String {
        format!("{} ({})", self.root, self.files[0])
    }

    /// Arguments of `dfort verify` for this kernel.
    fn verify_args(&self, mode: Mode) -> Vec<String> {
        let mut a = vec!["verify".to_string()];
        a.extend(self.files.iter().cloned());
        a.extend(["--root".into(), self.root.clone()]);
        if !self.independent.is_empty() {
            a.extend(["--independent".into(), self.independent.join(",")]);
        }
        if !self.dependent.is_empty() {
            a.extend(["--dependent".into(), self.dependent.join(",")]);
        }
        fn pairs<V: std::fmt::Display>(m: &BTreeMap<String, V>) -> String {
            m.iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(",")
        }
        let lists: BTreeMap<String, String> = self
            .int_array
            .iter()
            .map(|(k, v)| {
                let items: Vec<String> = v.iter().map(|x| x.to_string()).collect();
                (k.clone(), format!("[{}]", items.join(",")))
            })
            .collect();
        let ints = [pairs(&self.int), pairs(&lists)]
            .into_iter()
            .filter(|p| !p.is_empty())
            .collect::<Vec<_>>()
            .join(",");
        for (flag, values) in [
            ("--int", ints),
            ("--size", pairs(&self.size)),
            ("--char", pairs(&self.char)),
            ("--logical", pairs(&self.logical)),
            ("--matrix", pairs(&self.matrix)),
        ] {
            if !values.is_empty() {
                a.extend([flag.to_string(), values]);
            }
        }
        let tol = self.tolerance.unwrap_or(DEFAULT_TOLERANCE);
        a.extend(["--tolerance".into(), format!("{tol:e}")]);
        // Out-of-bounds reads and writes in the derivatives fail the test
        // (unless the original itself reads out of bounds).
        if self.bounds.unwrap_or(true) {
            a.push("--bounds".into());
        }
        a.extend(mode.flags.iter().map(|f| f.to_string()));
        a
    }
}

/// A recording mode of the adjoint: its `dfort verify` flags.
#[derive(Clone, Copy)]
struct Mode {
    label: &'static str,
    flags: &'static [&'static str],
}

const ALL: &str = "--preaccumulate=all";

const MODES: [Mode; 6] = [
    Mode {
        label: "inversion",
        flags: &[],
    },
    Mode {
        label: "tbr",
        flags: &["--no-inversion"],
    },
    Mode {
        label: "store-all",
        flags: &["--no-tbr"],
    },
    Mode {
        label: "pre+inv",
        flags: &[ALL],
    },
    Mode {
        label: "pre+tbr",
        flags: &["--no-inversion", ALL],
    },
    Mode {
        label: "pre+all",
        flags: &["--no-tbr", ALL],
    },
];

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn manifest() -> Manifest {
    let path = repo_root().join("tests/kernels.toml");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    toml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The relative error `verify` printed on its line for `what`
/// ("tangent" or "adjoint"), e.g. `r: tangent relative error 1.23e-10 ...`.
fn relative_error(stdout: &str, what: &str) -> Option<f64> {
    let key = format!(" {what} relative error ");
    stdout.lines().find_map(|l| {
        let rest = &l[l.find(&key)? + key.len()..];
        rest.split_whitespace().next()?.parse().ok()
    })
}

fn show_error(e: Option<f64>) -> String {
    e.map_or_else(|| "-".to_string(), |e| format!("{e:.2e}"))
}

struct Outcome {
    summary: String,
    failure: Option<String>,
}

fn run_one(k: &Kernel, m: Mode) -> Outcome {
    let mode = m.label;
    let args = k.verify_args(m);
    let out = Command::new(env!("CARGO_BIN_EXE_dfort"))
        .args(&args)
        .current_dir(repo_root())
        .output();
    let out = match out {
        Ok(o) => o,
        Err(e) => {
            return Outcome {
                summary: format!("{:<64} {mode:<9} cannot run dfort", k.label()),
                failure: Some(format!("{} [{mode}]: cannot run dfort: {e}", k.label())),
            }
        }
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let (t, a) = (
        relative_error(&stdout, "tangent"),
        relative_error(&stdout, "adjoint"),
    );
    let ok = out.status.success();
    let summary = format!(
        "{:<64} {mode:<9} tangent {:>8}  adjoint {:>8}  {}",
        k.label(),
        show_error(t),
        show_error(a),
        if ok { "ok" } else { "FAILED" }
    );
    let failure = (!ok).then(|| {
        format!(
            "{} [{mode}] ({}): exit status {}\n  command: dfort {}\n  stdout:\n{}  stderr:\n{}",
            k.label(),
            k.why,
            out.status.code().map_or("none".into(), |c| c.to_string()),
            args.join(" "),
            indent(&stdout),
            indent(&stderr)
        )
    });
    Outcome { summary, failure }
}

fn indent(text: &str) -> String {
    text.lines().map(|l| format!("    {l}\n")).collect()
}

#[test]
fn kernels_derivatives_match_finite_differences_and_dot_product() {
    if std::env::var_os("DFORT_SKIP_GFORTRAN").is_some() {
        eprintln!("skipped: DFORT_SKIP_GFORTRAN is set");
        return;
    }
    let version = Command::new("gfortran").arg("--version").output();
    assert!(
        version.is_ok_and(|o| o.status.success()),
        "gfortran is not installed (apt-get install -y gfortran, or set DFORT_SKIP_GFORTRAN=1)"
    );
    let kernels = manifest().kernel;
    let mut failures = Vec::new();
    if kernels.len() < MIN_KERNELS {
        failures.push(format!(
            "tests/kernels.toml lists {} kernels, fewer than {MIN_KERNELS}",
            kernels.len()
        ));
    }
    // Every kernel in every mode.
    let jobs: Vec<(usize, Mode)> = (0..kernels.len())
        .flat_map(|i| MODES.iter().map(move |&m| (i, m)))
        .collect();
    let results: Mutex<Vec<Option<Outcome>>> = Mutex::new((0..jobs.len()).map(|_| None).collect());
    let next = AtomicUsize::new(0);
    let threads = std::thread::available_parallelism()
        .map_or(4, |n| n.get())
        .clamp(2, 8);
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let j = next.fetch_add(1, Ordering::Relaxed);
                let Some(&(i, m)) = jobs.get(j) else {
                    break;
                };
                let o = run_one(&kernels[i], m);
                results.lock().unwrap()[j] = Some(o);
            });
        }
    });
    for o in results.into_inner().unwrap().into_iter().flatten() {
        println!("{}", o.summary);
        failures.extend(o.failure);
    }
    assert!(
        failures.is_empty(),
        "{} failures ({} derivative checks run):\n\n{}",
        failures.len(),
        jobs.len(),
        failures.join("\n")
    );
}

/// Whether `text` (a Fortran file) declares `subroutine name` or `function name`, in any case,
/// with or without prefixes such as `recursive` or `module`.
fn declares_procedure(text: &str, fixed_form: bool, name: &str) -> bool {
    text.lines().any(|line| {
        if fixed_form && line.starts_with(['c', 'C', '*', '!']) {
            return false;
        }
        let code = line.split('!').next().unwrap_or("").to_ascii_lowercase();
        let words: Vec<&str> = code
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .filter(|w| !w.is_empty())
            .collect();
        words.windows(2).enumerate().any(|(i, w)| {
            matches!(w[0], "subroutine" | "function")
                && w[1] == name.to_ascii_lowercase()
                && (i == 0 || words[i - 1] != "end")
        })
    })
}

#[test]
fn kernels_manifest_lists_existing_files_and_roots() {
    let kernels = manifest().kernel;
    assert!(
        kernels.len() >= MIN_KERNELS,
        "tests/kernels.toml lists {} kernels, fewer than {MIN_KERNELS}",
        kernels.len()
    );
    let mut problems = Vec::new();
    for k in &kernels {
        if k.files.is_empty() {
            problems.push(format!("{}: no files", k.root));
            continue;
        }
        for f in &k.files {
            if !repo_root().join(f).is_file() {
                problems.push(format!("{}: {f} does not exist", k.root));
            }
        }
        if k.why.trim().is_empty() {
            problems.push(format!(
                "{}: say what the kernel exercises (`why`)",
                k.label()
            ));
        }
        if let Some(t) = k.tolerance {
            if !(t > 0.0 && t < 1.0) {
                problems.push(format!("{}: tolerance {t} is not in (0, 1)", k.label()));
            }
        }
        let first = repo_root().join(&k.files[0]);
        if let Ok(text) = std::fs::read_to_string(&first) {
            let fixed = matches!(
                first.extension().and_then(|e| e.to_str()),
                Some("f" | "F" | "for" | "f77" | "ftn")
            );
            if !declares_procedure(&text, fixed, &k.root) {
                problems.push(format!(
                    "{}: no `subroutine {}` or `function {}` in {}",
                    k.root, k.root, k.root, k.files[0]
                ));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "tests/kernels.toml:\n{}",
        problems.join("\n")
    );
}

#[test]
fn subroutine_scan_ignores_ends_comments_and_case() {
    assert!(declares_procedure(
        "      SUBROUTINE CBROOT(N)\n",
        true,
        "cbroot"
    ));
    assert!(declares_procedure(
        "  recursive subroutine f(x)\n",
        false,
        "f"
    ));
    assert!(!declares_procedure("end subroutine f\n", false, "f"));
    assert!(!declares_procedure("C     subroutine f\n", true, "f"));
    assert!(!declares_procedure("x = 1 ! subroutine f\n", false, "f"));
    assert!(!declares_procedure("subroutine fg(x)\n", false, "f"));
}

/// Where the arguments of an intrinsic are drawn, when not in the default
/// (0.25 to 0.35 for the first, 0.65 to 0.75 for the second): the offset
/// added to `0.1 * x` (`x` from 0.5 to 1.5).
fn intrinsic_domain(name: &str, arg: usize) -> f64 {
    match (name, arg) {
        // acosh is defined from 1 on.
        ("acosh", 0) => 1.2,
        (_, 0) => 0.2,
        _ => 0.6,
    }
}

/// A routine that applies every generic intrinsic with local partial
/// derivatives in the intrinsic table to values in its domain, one result
/// each; and how many it applies.
fn intrinsic_partials_routine() -> (String, usize) {
    use dfort_ir::intrinsics::{function_names, lookup, Rule};
    let mut body = Vec::new();
    let mut k = 0usize;
    for name in function_names() {
        let Some(i) = lookup(name).filter(|i| i.name == name) else {
            continue;
        };
        let Rule::Partials { d, kind } = i.rule else {
            continue;
        };
        // Its arguments are single precision: differences through them
        // lose half the digits the check asks for.
        if name == "dprod" {
            continue;
        }
        let mut args: Vec<String> = (0..d.len())
            .map(|a| {
                let at = (k + a) % 64 + 1;
                format!("{:.1}d0 + 0.1d0*x({at})", intrinsic_domain(name, a))
            })
            .collect();
        // `real(v)` is single precision: its kind is given.
        if kind {
            args.push("8".into());
        }
        k += 1;
        body.push(format!("  y({k}) = {name}({})", args.join(", ")));
    }
    let src = format!(
        "! Every generic intrinsic with local partial derivatives in dfort's table.\n\
         subroutine intrinsic_partials(x, y)\n  implicit none\n  real(8), intent(in) :: x(64)\n  real(8), intent(out) :: y({k})\n{}\nend subroutine intrinsic_partials\n",
        body.join("\n")
    );
    (src, k)
}

/// Every local partial derivative of the intrinsic table, checked
/// numerically: `dfort verify` compares the tangent of a routine applying
/// each such function with finite differences, and its adjoint by the
/// dot-product test. A new entry of the table is checked here without more
/// code (a function whose domain is not the default's says it in
/// [`intrinsic_domain`]).
#[test]
fn every_partial_derivative_of_the_intrinsic_table_is_right() {
    if std::env::var_os("DFORT_SKIP_GFORTRAN").is_some() {
        eprintln!("skipped: DFORT_SKIP_GFORTRAN is set");
        return;
    }
    let (src, count) = intrinsic_partials_routine();
    assert!(
        count >= 19,
        "only {count} intrinsics with partial derivatives:\n{src}"
    );
    let dir = std::env::temp_dir().join(format!("dfort-intrinsics-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch directory");
    let file = dir.join("intrinsic_partials.f90");
    std::fs::write(&file, &src).expect("write the routine");
    for mode in MODES {
        let mut args = vec![
            "verify".to_string(),
            file.display().to_string(),
            "--root".into(),
            "intrinsic_partials".into(),
        ];
        args.extend(mode.flags.iter().map(|f| f.to_string()));
        let out = Command::new(env!("CARGO_BIN_EXE_dfort"))
            .args(&args)
            .output()
            .expect("run dfort");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let (t, a) = (
            relative_error(&stdout, "tangent"),
            relative_error(&stdout, "adjoint"),
        );
        assert!(
            out.status.success()
                && t.is_some_and(|e| e <= DEFAULT_TOLERANCE)
                && a.is_some_and(|e| e <= DEFAULT_TOLERANCE),
            "[{}] tangent {} adjoint {}\n{src}\nstdout:\n{stdout}stderr:\n{}",
            mode.label,
            show_error(t),
            show_error(a),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
