//! `cargo xtask bench-adjoint`: the run time of every kernel's adjoint against
//! its primal, with TBR and with store-all, and the tape each pushes.
//!
//! For each `[[kernel]]` of the manifest (`tests/kernels.toml`; its file
//! paths are relative to the manifest's repository root, the directory
//! above the manifest's own), the adjoint is generated twice (TBR and
//! `--no-tbr`) and compiled with `gfortran -O2` beside the original
//! sources, the `dfort_stack` runtime and a timing driver
//! ([`timing_driver`]). The driver calibrates a call count K by doubling
//! it from 1 until K primal calls take at least 50 ms, then times K primal
//! calls and K adjoint calls, each call preceded by the same reset of the
//! inputs (and, for the adjoint, of the adjoints and the tape), keeps the
//! fastest of `--reps` repetitions, and reports the tape's pushed and
//! peak bytes after one adjoint call. Preparation (generation and
//! compilation) runs in parallel; timings run one kernel at a time.

use dfort::session::Session;
use dfort::verify::{
    compile, compile_in_order, driver_args, first_line, gfortran_available, link, run_program,
    runtime_object, write_originals, Scratch,
};
use dfort_analysis::decisions::Recording;
use dfort_analysis::roots::RootSpec;
use dfort_codegen::driver::DriverArg;
use dfort_ir::UnitKind;
use rayon::prelude::*;
use serde::Deserialize;
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct BenchAdjointArgs {
    /// The kernel manifest; its `files` are relative to the directory
    /// above the manifest's (the repository root for tests/kernels.toml).
    #[arg(long, default_value = "tests/kernels.toml")]
    manifest: PathBuf,
    /// Timed repetitions of each loop; the fastest is reported.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    reps: u32,
    /// Only the kernels whose root is NAME (repeatable).
    #[arg(long = "kernel", value_name = "NAME")]
    kernels: Vec<String>,
    /// Time the TBR adjoint preaccumulating local Jacobians (as `dfort
    /// adjoint --preaccumulate=WHEN`, `cost` or `all`).
    #[arg(long, value_name = "WHEN", num_args = 0..=1, default_missing_value = "cost", require_equals = true)]
    preaccumulate: Option<dfort::config::Preaccumulate>,
}

/// The manifest's schema (see the header of tests/kernels.toml). Keys the
/// benchmark does not need (`tolerance`, `why`, ...) are ignored.
#[derive(Debug, Deserialize)]
pub(crate) struct Manifest {
    #[serde(default)]
    pub kernel: Vec<Kernel>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct Kernel {
    pub files: Vec<PathBuf>,
    pub root: String,
    #[serde(default)]
    pub independent: Vec<String>,
    #[serde(default)]
    pub dependent: Vec<String>,
    #[serde(default)]
    int: BTreeMap<String, i64>,
    #[serde(default)]
    size: BTreeMap<String, i64>,
    /// Values for the benchmark only (larger problems than the tests'),
    /// over `int` / `size` name by name.
    #[serde(default)]
    bench_int: BTreeMap<String, i64>,
    #[serde(default)]
    bench_size: BTreeMap<String, i64>,
    /// Values of character and logical arguments (flags).
    #[serde(default)]
    char: BTreeMap<String, String>,
    #[serde(default)]
    logical: BTreeMap<String, bool>,
    /// Values of integer array arguments.
    #[serde(default)]
    int_array: BTreeMap<String, Vec<i64>>,
    /// Matrices made `spd` or `diag-dominant` (`dfort verify --matrix`).
    #[serde(default)]
    matrix: BTreeMap<String, String>,
}

impl Kernel {
    /// Its files (under `base`) and its root with the roles it names.
    pub(crate) fn root_spec(&self, base: &Path) -> (Vec<PathBuf>, RootSpec) {
        let files = self.files.iter().map(|f| base.join(f)).collect();
        let spec = RootSpec {
            name: self.root.to_ascii_lowercase(),
            independent: self.independent.clone(),
            dependent: self.dependent.clone(),
            after: None,
        };
        (files, spec)
    }

    /// The options of `dfort verify` that give the root its inputs.
    pub(crate) fn input_args(&self) -> Vec<String> {
        fn pairs<V: std::fmt::Display>(m: &BTreeMap<String, V>) -> String {
            m.iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(",")
        }
        let lists = self.int_array.iter().map(|(k, v)| {
            let items: Vec<String> = v.iter().map(|x| x.to_string()).collect();
            format!("{k}=[{}]", items.join(","))
        });
        let ints: Vec<String> = [pairs(&self.int)]
            .into_iter()
            .filter(|p| !p.is_empty())
            .chain(lists)
            .collect();
        let mut out = Vec::new();
        for (flag, values) in [
            ("--int", ints.join(",")),
            ("--size", pairs(&self.size)),
            ("--char", pairs(&self.char)),
            ("--logical", pairs(&self.logical)),
            ("--matrix", pairs(&self.matrix)),
        ] {
            if !values.is_empty() {
                out.extend([flag.to_string(), values]);
            }
        }
        out
    }

    fn bench_values(&self) -> (BTreeMap<String, i64>, BTreeMap<String, i64>) {
        let mut int = self.int.clone();
        int.extend(self.bench_int.clone());
        let mut size = self.size.clone();
        size.extend(self.bench_size.clone());
        (int, size)
    }
}

/// What the timing driver needs to know about the root.
#[derive(Clone, Debug)]
pub struct TimingSpec {
    pub root: String,
    /// The module holding the root, if it is a module procedure (then
    /// `R_b` lives in module `<m>_b`).
    pub host: Option<String>,
    pub args: Vec<DriverArg>,
    /// Per argument: whether `R_b` takes its adjoint right after it.
    pub with_adjoint: Vec<bool>,
    pub dependents: Vec<String>,
    /// The rank-1 assumed-shape dummies of a root outside a module
    /// (declared in an interface block, `driver::interface_block`).
    pub assumed_shape: Vec<String>,
    /// Timed repetitions; the fastest is printed.
    pub reps: u32,
    /// The primal loop's calibration target, in seconds.
    pub min_seconds: f64,
    /// Matrices made symmetric positive definite or diagonally dominant.
    pub matrices: Vec<dfort_codegen::driver::MatrixInit>,
    /// For a real(8) function root: the name of the last `args` entry,
    /// a scalar that stands for its result (`r = root(…)`, and the adjoint
    /// takes only the result's adjoint, `root_b(…, rb)`), as for `dfort
    /// verify`'s driver.
    pub result: Option<String>,
}

/// A Fortran program timing `R` and `R_b`. It prints one line:
/// `primal_s T adjoint_s T ratio R pushed B peak B calls K` (seconds per
/// call, bytes). The driver's own names start with `dfb` so that they do
/// not clash with the root's arguments.
pub fn timing_driver(spec: &TimingSpec) -> String {
    let root = &spec.root;
    let mut s = String::new();
    let w = &mut s;
    let _ = writeln!(w, "program dfort_bench_adjoint");
    let _ = writeln!(
        w,
        "  use dfort_stack, only: dfort_stack_reset, dfort_stack_stats"
    );
    match &spec.host {
        Some(m) => {
            let _ = writeln!(w, "  use {m}, only: {root}\n  use {m}_b, only: {root}_b");
            let _ = writeln!(w, "  implicit none");
        }
        None if spec.assumed_shape.is_empty() && spec.result.is_some() => {
            let _ = writeln!(
                w,
                "  implicit none\n  real(8), external :: {root}\n  external {root}_b"
            );
        }
        None if spec.assumed_shape.is_empty() => {
            let _ = writeln!(w, "  implicit none\n  external {root}, {root}_b");
        }
        None => {
            let routines = [(root.clone(), None), (format!("{root}_b"), Some('b'))];
            let _ = writeln!(
                w,
                "  implicit none{}",
                dfort_codegen::driver::interface_block(
                    &spec.args,
                    &spec.with_adjoint,
                    &spec.assumed_shape,
                    &routines
                )
            );
        }
    }
    let _ = writeln!(
        w,
        "  integer(8) :: dfb_seed, dfb_k, dfb_pushed, dfb_peak\n  integer :: dfb_q, dfb_r\n  real(8) :: dfb_t, dfb_tp, dfb_ta"
    );
    let is_dep = |n: &str| spec.dependents.iter().any(|d| d == n);
    let pairs: Vec<(&DriverArg, bool)> = spec
        .args
        .iter()
        .zip(
            spec.with_adjoint
                .iter()
                .copied()
                .chain(std::iter::repeat(false)),
        )
        .collect();
    for (a, adj) in &pairs {
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
                let _ = writeln!(w, "  real(8) :: {name}{dim}, dfb0_{name}{dim}");
                if *adj {
                    let _ = writeln!(w, "  real(8) :: dfbb_{name}{dim}, dfbw_{name}{dim}");
                }
            }
        }
    }
    // Deterministic pseudo-random inputs in [0.5, 1.5], and adjoints ȳ of
    // the dependents from the same generator.
    let _ = writeln!(w, "  dfb_seed = 12345_8");
    for (a, adj) in &pairs {
        if let DriverArg::Real { name, size } = a {
            let mut targets = vec![format!("dfb0_{name}")];
            if *adj && is_dep(name) {
                targets.push(format!("dfbw_{name}"));
            }
            for t in targets {
                if *size == 0 {
                    let _ = writeln!(w, "  call dfb_fill_s({t})");
                } else {
                    let _ = writeln!(w, "  call dfb_fill({t}, size({t}))");
                }
            }
            for m in spec.matrices.iter().filter(|m| &m.name == name) {
                let _ = writeln!(w, "  {}", m.call("dfb", &format!("dfb0_{name}")));
            }
        }
    }
    let _ = writeln!(
        w,
        "  dfb_k = 1
  do
    call dfb_time_primal(dfb_k, dfb_t)
    if (dfb_t >= {min:?}d0 .or. dfb_k >= 2_8**40) exit
    dfb_k = 2*dfb_k
  end do
  dfb_tp = huge(1d0)
  dfb_ta = huge(1d0)
  do dfb_r = 1, {reps}
    call dfb_time_primal(dfb_k, dfb_t)
    dfb_tp = min(dfb_tp, dfb_t)
    call dfb_time_adjoint(dfb_k, dfb_t)
    dfb_ta = min(dfb_ta, dfb_t)
  end do
  call dfb_reset()
  call dfb_reset_b()
  call dfort_stack_reset()
  call {root}_b({bargs})
  call dfort_stack_stats(dfb_pushed, dfb_peak)
  write (*, '(a, es15.8, a, es15.8, a, es15.8, a, i0, a, i0, a, i0)') &
    & 'primal_s ', dfb_tp/dble(dfb_k), ' adjoint_s ', dfb_ta/dble(dfb_k), &
    & ' ratio ', dfb_ta/max(dfb_tp, tiny(1d0)), ' pushed ', dfb_pushed, &
    & ' peak ', dfb_peak, ' calls ', dfb_k
contains",
        min = spec.min_seconds,
        reps = spec.reps,
        bargs = call_args(&pairs, true, spec.result.as_deref()),
    );
    // Inputs and integers, reset before every call of either loop.
    let _ = writeln!(w, "  subroutine dfb_reset()");
    for (a, _) in &pairs {
        match a {
            DriverArg::Real { name, .. } => {
                let _ = writeln!(w, "    {name} = dfb0_{name}");
            }
            _ => {
                let value = a.passive_value().unwrap_or_default();
                let _ = writeln!(w, "    {} = {value}", a.name());
            }
        }
    }
    let _ = writeln!(w, "  end subroutine dfb_reset");
    // Adjoints: ȳ for the dependents, zero for what accumulates.
    let _ = writeln!(w, "  subroutine dfb_reset_b()");
    for (a, adj) in &pairs {
        if let (DriverArg::Real { name, .. }, true) = (a, adj) {
            if is_dep(name) {
                let _ = writeln!(w, "    dfbb_{name} = dfbw_{name}");
            } else {
                let _ = writeln!(w, "    dfbb_{name} = 0d0");
            }
        }
    }
    let _ = writeln!(w, "  end subroutine dfb_reset_b");
    for (what, body) in [
        (
            "primal",
            match &spec.result {
                Some(r) => format!(
                    "      call dfb_reset()\n      {r} = {root}({})",
                    call_args(&pairs, false, Some(r))
                ),
                None => format!(
                    "      call dfb_reset()\n      call {root}({})",
                    call_args(&pairs, false, None)
                ),
            },
        ),
        (
            "adjoint",
            format!(
                "      call dfb_reset()\n      call dfb_reset_b()\n      call dfort_stack_reset()\n      call {root}_b({})",
                call_args(&pairs, true, spec.result.as_deref())
            ),
        ),
    ] {
        let _ = writeln!(
            w,
            "  subroutine dfb_time_{what}(dfb_n, dfb_sec)
    integer(8), intent(in) :: dfb_n
    real(8), intent(out) :: dfb_sec
    integer(8) :: dfb_i, dfb_c0, dfb_c1, dfb_rate
    call system_clock(dfb_c0, dfb_rate)
    do dfb_i = 1, dfb_n
{body}
    end do
    call system_clock(dfb_c1)
    dfb_sec = dble(dfb_c1 - dfb_c0)/dble(dfb_rate)
  end subroutine dfb_time_{what}"
        );
    }
    let _ = writeln!(
        w,
        "  subroutine dfb_fill(dfb_v, dfb_n)
    integer, intent(in) :: dfb_n
    real(8), intent(out) :: dfb_v(dfb_n)
    do dfb_q = 1, dfb_n
      dfb_seed = mod(dfb_seed*48271_8, 2147483647_8)
      dfb_v(dfb_q) = 0.5d0 + dble(dfb_seed)/2147483647d0
    end do
  end subroutine dfb_fill
  subroutine dfb_fill_s(dfb_v)
    real(8), intent(out) :: dfb_v
    dfb_seed = mod(dfb_seed*48271_8, 2147483647_8)
    dfb_v = 0.5d0 + dble(dfb_seed)/2147483647d0
  end subroutine dfb_fill_s
{}end program dfort_bench_adjoint",
        dfort_codegen::driver::matrix_routines("dfb")
    );
    s
}

/// The actual arguments of `R` or (with the adjoints) `R_b`; a function's
/// result (`result`) is no argument of `R`, and `R_b` takes only its
/// adjoint.
fn call_args(pairs: &[(&DriverArg, bool)], adjoint: bool, result: Option<&str>) -> String {
    let mut v = Vec::new();
    for (a, adj) in pairs {
        let name = a.name();
        let is_result = result == Some(name);
        if is_result && !adjoint {
            continue;
        }
        if !is_result {
            v.push(name.to_string());
        }
        if adjoint && *adj {
            v.push(format!("dfbb_{name}"));
        }
    }
    v.join(", ")
}

/// What one timing driver printed.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Timing {
    primal_s: f64,
    adjoint_s: f64,
    ratio: f64,
    pushed: i64,
    peak: i64,
}

/// The word after `key` in a driver's `key value key value ...` line.
pub(crate) fn value_after<'a>(words: &[&'a str], key: &str) -> Option<&'a str> {
    words
        .iter()
        .position(|w| *w == key)
        .and_then(|i| words.get(i + 1))
        .copied()
}

fn parse_timing(out: &str) -> Option<Timing> {
    let words: Vec<&str> = out.split_whitespace().collect();
    let after = |key: &str| value_after(&words, key);
    Some(Timing {
        primal_s: after("primal_s")?.parse().ok()?,
        adjoint_s: after("adjoint_s")?.parse().ok()?,
        ratio: after("ratio")?.parse().ok()?,
        pushed: after("pushed")?.parse().ok()?,
        peak: after("peak")?.parse().ok()?,
    })
}

/// A compiled timing driver, in its scratch directory.
struct Built {
    scratch: Scratch,
}

enum Prepared {
    Refused(String),
    Failed(String),
    /// TBR, then store-all.
    Ready(Built, Built),
}

enum Outcome {
    Refused(String),
    Failed(String),
    Timed(Timing, Timing),
}

/// Generates both adjoints of a kernel and compiles their drivers.
fn prepare(
    kernel: &Kernel,
    base: &Path,
    reps: u32,
    preaccumulate: Option<dfort_analysis::preaccumulation::Preaccumulation>,
) -> Prepared {
    let (files, spec) = kernel.root_spec(base);
    // The analyses' facts in each recording mode (one host each, as
    // `dfort adjoint` reads its files).
    let mut sessions = Vec::new();
    for (recording, pre) in [
        (Recording::Inversion, preaccumulate),
        (Recording::StoreAll, None),
    ] {
        match Session::for_root_with(&files, spec.clone(), recording, pre) {
            Ok(s) => sessions.push(s),
            Err(e) => return Prepared::Failed(e),
        }
    }
    let (session, root, roles) = &sessions[0];
    let unit = session.snap.program.unit(*root);
    fn lower<V: Clone>(m: &BTreeMap<String, V>) -> HashMap<String, V> {
        m.iter()
            .map(|(k, v)| (k.to_ascii_lowercase(), v.clone()))
            .collect()
    }
    let dep = &roles.dependents;
    let mut texts = Vec::new();
    for (s, root, _) in &sessions {
        match dfort_codegen::adjoint::adjoint_of(
            s.snap.analysis(),
            *root,
            "cargo xtask bench-adjoint",
        ) {
            Ok((t, _)) => texts.push(t),
            Err(refusals) => {
                return Prepared::Refused(
                    refusals
                        .first()
                        .map(|r| r.message.clone())
                        .unwrap_or_else(|| "no adjoint (nothing active)".into()),
                )
            }
        }
    }
    let (int, size) = kernel.bench_values();
    let mut values = dfort::verify::ArgValues {
        ints: lower(&int),
        sizes: lower(&size),
        chars: lower(&kernel.char),
        logicals: lower(&kernel.logical),
        int_arrays: lower(&kernel.int_array),
        outputs: dfort::verify::written_integers(session.snap.analysis(), *root),
        ..Default::default()
    };
    for (k, v) in &kernel.matrix {
        match dfort::verify::matrix_kind(v) {
            Ok(m) => {
                values.matrices.insert(k.to_ascii_lowercase(), m);
            }
            Err(e) => return Prepared::Failed(e),
        }
    }
    let args = match driver_args(unit, &values) {
        Ok(a) => a,
        Err(e) => return Prepared::Failed(e.message(&unit.name, None)),
    };
    let matrices = match dfort::verify::matrix_inits(unit, &args, &values) {
        Ok(m) => m,
        Err(e) => return Prepared::Failed(e),
    };
    let dn = dfort_codegen::tangent::derivative_names_of(session.snap.analysis(), *root);
    let host = unit
        .parent
        .map(|p| session.snap.program.unit(p))
        .filter(|h| h.kind == UnitKind::Module)
        .map(|h| h.name.clone());
    let assumed_shape = match &host {
        Some(_) => Vec::new(),
        None => match dfort::verify::interface_dummies(unit) {
            Ok(a) => a,
            Err(e) => return Prepared::Failed(e),
        },
    };
    // A function's result: a scalar of the driver's own name.
    let result = match dfort::verify::function_result(unit, &assumed_shape) {
        Ok(r) => r,
        Err(e) => return Prepared::Failed(e),
    };
    let (mut args, mut with_adjoint) = (args, Vec::new());
    with_adjoint.extend(unit.args.iter().map(|a| dn.contains_key(a)));
    if let Some(r) = &result {
        args.push(DriverArg::Real {
            name: r.clone(),
            size: 0,
        });
        with_adjoint.push(true);
    }
    let spec = TimingSpec {
        root: unit.name.clone(),
        host,
        assumed_shape,
        args,
        with_adjoint,
        dependents: dep
            .ids()
            .filter_map(|i| match Some(i) == unit.result {
                true => result.clone(),
                false => unit.symbols.get(i).map(|s| s.name.clone()),
            })
            .collect(),
        reps,
        min_seconds: 0.05,
        matrices,
        result,
    };
    let driver = timing_driver(&spec);
    let mut built = Vec::new();
    for (text, tag) in texts.iter().zip(["tbr", "store-all"]) {
        match build(&session.sources(), text, &driver) {
            Ok(b) => built.push(b),
            Err(e) => return Prepared::Failed(format!("{tag}: {}", first_line(&e))),
        }
    }
    let store_all = built.pop();
    match (built.pop(), store_all) {
        (Some(t), Some(s)) => Prepared::Ready(t, s),
        _ => Prepared::Failed("internal: missing build".into()),
    }
}

/// Compiles the originals, the runtime, the adjoint and the driver with
/// `gfortran -O2` in a scratch directory.
fn build(sources: &[(&Path, &str)], adjoint: &str, driver: &str) -> Result<Built, String> {
    let scratch = Scratch::new("bench-adjoint")?;
    let dir = scratch.dir.as_path();
    let originals = write_originals(&scratch, sources)?;
    scratch.write("adjoint.f90", adjoint)?;
    scratch.write("driver.f90", driver)?;
    let flags = ["-O2"];
    let mut objects = compile_in_order(dir, &originals, &flags)
        .map_err(|e| format!("the original sources do not compile: {e}"))?;
    objects.push(runtime_object(dir, &flags)?);
    objects.push(compile(dir, "adjoint.f90", &flags)?);
    link(dir, "driver.f90", &objects, &flags, "bench")?;
    Ok(Built { scratch })
}

fn time(b: &Built) -> Result<Timing, String> {
    let out = run_program(&b.scratch.dir, "bench")?;
    parse_timing(&out).ok_or_else(|| format!("the driver printed no timing: {out}"))
}

pub fn run(args: BenchAdjointArgs) -> ExitCode {
    match bench(&args, &mut std::io::stdout()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
    }
}

/// The directory the manifest's paths are relative to: the one above the
/// manifest's directory.
pub(crate) fn base_of(manifest: &Path) -> PathBuf {
    let abs = std::fs::canonicalize(manifest).unwrap_or_else(|_| manifest.to_path_buf());
    let dir = abs.parent().unwrap_or(Path::new("."));
    dir.parent().unwrap_or(dir).to_path_buf()
}

pub(crate) fn load_manifest(path: &Path) -> Result<Manifest, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    toml::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// The kernels of `manifest` (read from `path`) whose root is one of
/// `names` (all of them when `names` is empty); an error names one that
/// no kernel has.
pub(crate) fn chosen<'m>(
    manifest: &'m Manifest,
    path: &Path,
    names: &[String],
) -> Result<Vec<&'m Kernel>, String> {
    if let Some(n) = names.iter().find(|n| {
        !manifest
            .kernel
            .iter()
            .any(|k| k.root.eq_ignore_ascii_case(n))
    }) {
        return Err(format!("no kernel with root `{n}` in {}", path.display()));
    }
    Ok(manifest
        .kernel
        .iter()
        .filter(|k| names.is_empty() || names.iter().any(|n| n.eq_ignore_ascii_case(&k.root)))
        .collect())
}

/// Times the kernels `args` choose, writing the table to `out` row by row.
fn bench(args: &BenchAdjointArgs, out: &mut dyn std::io::Write) -> Result<(), String> {
    let manifest = load_manifest(&args.manifest)?;
    gfortran_available().map_err(|e| format!("{e}; cargo xtask bench-adjoint needs gfortran"))?;
    let base = base_of(&args.manifest);
    let kernels = chosen(&manifest, &args.manifest, &args.kernels)?;
    let prepared: Vec<Prepared> = kernels
        .par_iter()
        .map(|k| prepare(k, &base, args.reps, args.preaccumulate.map(|p| p.mode())))
        .collect();
    let width = kernels
        .iter()
        .map(|k| k.root.len())
        .chain([6])
        .max()
        .unwrap_or(6);
    let _ = writeln!(
        out,
        "{:<width$}  {:>14}  {:>21}  {:>11}  {:>14}  {:>12}  {:>14}  {:>17}",
        "kernel",
        "primal µs/call",
        "adjoint µs/call (TBR)",
        "ratio (TBR)",
        "pushed B (TBR)",
        "peak B (TBR)",
        "ratio (no TBR)",
        "pushed B (no TBR)"
    );
    let mut outcomes = Vec::new();
    for (k, p) in kernels.iter().zip(prepared) {
        let outcome = match p {
            Prepared::Refused(m) => Outcome::Refused(m),
            Prepared::Failed(m) => Outcome::Failed(m),
            Prepared::Ready(t, s) => match time(&t).and_then(|t| Ok((t, time(&s)?))) {
                Ok((t, s)) => Outcome::Timed(t, s),
                Err(e) => Outcome::Failed(first_line(&e)),
            },
        };
        let row = match &outcome {
            Outcome::Refused(m) => format!("{:<width$}  refused: {m}", k.root),
            Outcome::Failed(m) => format!("{:<width$}  failed: {m}", k.root),
            Outcome::Timed(t, s) => format!(
                "{:<width$}  {:>14.4}  {:>21.4}  {:>11.2}  {:>14}  {:>12}  {:>14.2}  {:>17}",
                k.root,
                t.primal_s * 1e6,
                t.adjoint_s * 1e6,
                t.ratio,
                t.pushed,
                t.peak,
                s.ratio,
                s.pushed
            ),
        };
        let _ = writeln!(out, "{row}");
        outcomes.push((k.root.as_str(), outcome));
    }
    let _ = writeln!(out, "{}", summary(&outcomes));
    Ok(())
}

fn median(v: &mut [f64]) -> Option<f64> {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(v[n / 2]),
        _ => Some((v[n / 2 - 1] + v[n / 2]) / 2.0),
    }
}

fn summary(outcomes: &[(&str, Outcome)]) -> String {
    let count = |f: fn(&Outcome) -> bool| outcomes.iter().filter(|(_, o)| f(o)).count();
    let mut line = format!(
        "{} kernel(s): {} timed, {} refused, {} failed",
        outcomes.len(),
        count(|o| matches!(o, Outcome::Timed(..))),
        count(|o| matches!(o, Outcome::Refused(_))),
        count(|o| matches!(o, Outcome::Failed(_))),
    );
    let ratios = |store_all: bool| -> Vec<(f64, &str)> {
        outcomes
            .iter()
            .filter_map(|(name, o)| match o {
                Outcome::Timed(t, s) => Some((if store_all { s.ratio } else { t.ratio }, *name)),
                _ => None,
            })
            .collect()
    };
    for (label, store_all) in [("with TBR", false), ("without TBR", true)] {
        let r = ratios(store_all);
        let mut values: Vec<f64> = r.iter().map(|(v, _)| *v).collect();
        if let Some(m) = median(&mut values) {
            let (max, who) = r
                .iter()
                .copied()
                .max_by(|a, b| a.0.total_cmp(&b.0))
                .unwrap_or((m, ""));
            let _ = write!(
                line,
                "; adjoint/primal {label}: median {m:.2}, max {max:.2} ({who})"
            );
        }
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `cargo xtask bench-adjoint ARGS` run from the repository root: its
    /// standard output, or its error.
    fn bench_output(args: &[&str]) -> Result<String, String> {
        let root = crate::product::repo_root();
        let manifest = root.join("tests/kernels.toml");
        let line = ["cargo xtask", "bench-adjoint", "--manifest"]
            .into_iter()
            .chain([manifest.to_str().unwrap()])
            .chain(args.iter().copied());
        let args = match clap::Parser::try_parse_from(line) {
            Ok(crate::Cli {
                command: crate::Command::BenchAdjoint(a),
            }) => a,
            Ok(_) => panic!("parsed as another command"),
            Err(e) => panic!("{e}"),
        };
        let mut out = Vec::new();
        bench(&args, &mut out)?;
        Ok(String::from_utf8_lossy(&out).into_owned())
    }

    #[test]
    fn bench_adjoint_times_one_kernel_with_and_without_tbr() {
        if std::env::var_os("DFORT_SKIP_GFORTRAN").is_some() {
            return;
        }
        let out = bench_output(&["--kernel", "bratu", "--reps", "1"]).unwrap();
        let row: Vec<&str> = out
            .lines()
            .find(|l| l.starts_with("bratu "))
            .unwrap_or_else(|| panic!("no bratu row: {out}"))
            .split_whitespace()
            .collect();
        assert_eq!(row.len(), 8, "{out}");
        let num = |i: usize| -> f64 { row[i].parse().unwrap_or_else(|_| panic!("{out}")) };
        assert!(num(1) > 0.0 && num(2) > 0.0, "{out}");
        assert!(num(3) > 0.0 && num(6) > 0.0, "ratios: {out}");
        // The peak is at most what was pushed.
        assert!(num(5) <= num(4), "peak above pushed: {out}");
        // Store-all records the overwritten f(i-1), f(i), f(i+1); TBR none.
        assert!(num(7) > 0.0, "pushed bytes without TBR: {out}");
        assert!(out.contains("1 kernel(s): 1 timed"), "{out}");
        let err = bench_output(&["--kernel", "nosuch"]).unwrap_err();
        assert!(err.contains("nosuch"), "{err}");
    }

    #[test]
    fn manifest_ignores_keys_it_does_not_need_and_base_is_above_the_manifest() {
        let m: Manifest = toml::from_str(
            "[[kernel]]\nfiles = [\"a.f\"]\nroot = \"r\"\nint = { n = 3 }\ntolerance = 1e-6\nwhy = \"w\"\n",
        )
        .unwrap();
        assert_eq!(m.kernel[0].int.get("n"), Some(&3));
        assert!(m.kernel[0].size.is_empty() && m.kernel[0].independent.is_empty());
        assert!(toml::from_str::<Manifest>("[[kernel]]\nroot = \"r\"\n").is_err());
        assert_eq!(
            base_of(Path::new("/no/such/repo/tests/kernels.toml")),
            Path::new("/no/such/repo")
        );
    }

    #[test]
    fn driver_resets_inputs_in_both_loops_and_seeds_dependents() {
        let spec = TimingSpec {
            root: "r".into(),
            host: None,
            args: vec![
                DriverArg::Int {
                    name: "n".into(),
                    value: 4,
                },
                DriverArg::Real {
                    name: "x".into(),
                    size: 4,
                },
                DriverArg::Real {
                    name: "y".into(),
                    size: 0,
                },
            ],
            with_adjoint: vec![false, true, true],
            dependents: vec!["y".into()],
            assumed_shape: Vec::new(),
            reps: 2,
            min_seconds: 0.05,
            matrices: Vec::new(),
            result: None,
        };
        let d = timing_driver(&spec);
        assert!(d.contains("external r, r_b"), "{d}");
        assert!(d.contains("call r_b(n, x, dfbb_x, y, dfbb_y)"), "{d}");
        assert!(d.contains("call r(n, x, y)"), "{d}");
        assert!(
            d.contains("dfbb_x = 0d0") && d.contains("dfbb_y = dfbw_y"),
            "{d}"
        );
        assert!(d.contains("n = 4") && d.contains("x = dfb0_x"), "{d}");
        assert_eq!(d.matches("call dfb_reset()").count(), 3, "{d}");
        assert!(d.contains("do dfb_r = 1, 2"), "{d}");
        let m = timing_driver(&TimingSpec {
            host: Some("m".into()),
            ..spec.clone()
        });
        assert!(m.contains("use m, only: r\n  use m_b, only: r_b"), "{m}");
        // A function root: called for its result, whose adjoint alone
        // its adjoint takes (the bench's function roots crashed when they
        // were called as subroutines).
        let mut f = spec;
        f.args.push(DriverArg::Real {
            name: "dv_result".into(),
            size: 0,
        });
        f.with_adjoint.push(true);
        f.dependents = vec!["dv_result".into()];
        f.result = Some("dv_result".into());
        let d = timing_driver(&f);
        assert!(d.contains("real(8), external :: r\n  external r_b"), "{d}");
        assert!(d.contains("dv_result = r(n, x, y)"), "{d}");
        assert!(
            d.contains("call r_b(n, x, dfbb_x, y, dfbb_y, dfbb_dv_result)"),
            "{d}"
        );
        assert!(d.contains("dfbb_dv_result = dfbw_dv_result"), "{d}");
    }

    #[test]
    fn parses_the_driver_line_and_summarises() {
        let t = parse_timing(
            " primal_s  1.0E-06 adjoint_s  3.0E-06 ratio  3.0E+00 pushed 96 peak 64 calls 1024\n",
        )
        .unwrap();
        assert_eq!(t.pushed, 96);
        assert_eq!(t.peak, 64);
        assert!((t.ratio - 3.0).abs() < 1e-12);
        assert!(parse_timing("nothing").is_none());
        let s = Timing { ratio: 5.0, ..t };
        let line = summary(&[
            ("a", Outcome::Timed(t, s)),
            ("b", Outcome::Timed(s, s)),
            ("c", Outcome::Refused("no".into())),
        ]);
        assert!(
            line.starts_with("3 kernel(s): 2 timed, 1 refused, 0 failed"),
            "{line}"
        );
        assert!(
            line.contains("with TBR: median 4.00, max 5.00 (b)"),
            "{line}"
        );
        assert!(
            line.contains("without TBR: median 5.00, max 5.00"),
            "{line}"
        );
    }
}
