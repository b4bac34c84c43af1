//! Checking one generated program: dfort differentiates it in process
//! (tangent, and the adjoint in the three recording modes), gfortran
//! compiles everything with bounds checks and poisoned locals, and a
//! driver runs it at random points. The tangent must match finite
//! differences where the point is smooth, each adjoint must pass the
//! dot-product test against the tangent and leave its tape empty, and
//! the three adjoints must agree to 1e-10.

use super::ast::{ProcKind, Program, AFTER_SCALE, SOLVER};
use dfort::session::{Ask, Session};
use dfort::verify::{compile, gfortran, link, Scratch};
use dfort_analysis::preaccumulation::Preaccumulation;
use dfort_analysis::roots::RootSpec;
use dfort_codegen::adjoint::Recording;
use dfort_codegen::driver::{driver, parse_output, relative, DriverArg, DriverSpec, Point, STEP};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The recording modes, with their file names and the `dfort verify`
/// flag that reproduces them; the last preaccumulates every local
/// Jacobian it can (papers 002 and 004), in the default recording.
pub const MODES: [(Recording, &str, &str); 4] = [
    (Recording::Inversion, "adj_inv", ""),
    (Recording::Tbr, "adj_tbr", " --no-inversion"),
    (Recording::StoreAll, "adj_all", " --no-tbr"),
    (Recording::Inversion, "adj_pre", " --preaccumulate=all"),
];

/// The preaccumulation of the mode written to `name`.
fn preaccumulation(name: &str) -> Preaccumulation {
    if name == "adj_pre" {
        Preaccumulation::All
    } else {
        Preaccumulation::Off
    }
}

/// Compiler flags for everything a case builds: bounds and DO checks, and
/// locals that start as signalling NaNs and huge integers, so that a value
/// read before it is computed spoils the result.
const FLAGS: [&str; 6] = [
    "-O0",
    "-g",
    "-fcheck=bounds,do,recursion",
    "-finit-real=snan",
    "-finit-integer=-99999999",
    "-fmax-errors=3",
];

/// Random points per run, and the tolerances. A point counts for the
/// tangent only where the differences' two extrapolations agree to well
/// within the tangent's tolerance: a program that takes `sin` of a value
/// in the millions next to a large smooth part otherwise passes as smooth
/// with differences off by 1e-4 (seed 1125, case 7163).
const POINTS: usize = 4;
/// Differences larger than this make the program unusable: values grown
/// that large through loops feed `sin` arguments that change by
/// millions over the differences' steps, so the differences cannot see
/// what the tangent rightly sums (seed 1138, case 930: differences
/// 1.35e10 against a tangent of 8.9e9, the quadruple-precision re-check
/// alike; seed 1149, case 794: a linear map growing by 3^15 into
/// `sin`, differences 2.7e6 against a tangent of 5.4e6 that is exact —
/// the same program without `sin` passes — while two step sizes agreed
/// by chance).
const LARGEST_DIFFERENCE: f64 = dfort_codegen::driver::LARGEST_CHECKABLE;
const SMOOTH: f64 = 1e-7;
/// The differences' largest step in the quadruple-precision re-check:
/// rounding stays near 1e-22 there, and the truncation error of a
/// function that oscillates fast over double precision's steps
/// vanishes (seed 77, case 37: `sin` of a value near 1e6 through a
/// loop; the differences at 2e-4 are off by 2e-3 yet converge fourfold,
/// those at 2e-12 agree with the tangent to 1e-15).
const QUAD_STEP: f64 = 2e-12;
const TANGENT_TOL: f64 = 1e-6;
const DOT_TOL: f64 = 1e-10;
const MODES_TOL: f64 = 1e-10;
const RUN_LIMIT: Duration = Duration::from_secs(20);

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// dfort panicked.
    Panic,
    /// The fuzzer's own code panicked (drawing, shrinking, classifying).
    Harness,
    /// A derivative file gfortran rejects (the mode, or "tangent").
    DoesNotCompile(&'static str),
    /// A derivative that stops with an error or a signal, or never ends.
    Crash(&'static str),
    /// An adjoint that pops more than it pushed, or leaves entries.
    Tape(&'static str),
    /// Tangent against finite differences at a smooth point.
    Tangent,
    /// An adjoint's dot-product test against the tangent.
    DotProduct(&'static str),
    /// An adjoint whose gradient differs from the default mode's.
    Modes(&'static str),
    /// `dfort analyze`, the editor and the adjoint disagree on what the
    /// adjoint does (`cargo xtask consistency`).
    Inconsistent(&'static str),
    /// A generator refused what the facts did not refuse before
    /// generating (`dfort check` and the editor would not say it): the
    /// derivative (the mode, or "tangent").
    UndecidedRefusal(&'static str),
}

impl Kind {
    pub fn describe(&self) -> String {
        match self {
            Kind::Panic => "dfort panicked".into(),
            Kind::Harness => "the fuzzer itself panicked".into(),
            Kind::DoesNotCompile(m) => format!("{m} does not compile"),
            Kind::Crash(m) => format!("{m} fails at run time"),
            Kind::Tape(m) => format!("{m}: pushes and pops do not match"),
            Kind::Tangent => "tangent differs from finite differences".into(),
            Kind::DotProduct(m) => format!("{m}: dot-product test fails"),
            Kind::Modes(m) => format!("{m}: gradient differs from the default mode's"),
            Kind::Inconsistent(m) => {
                format!("{m}: analyze, the editor and the adjoint disagree")
            }
            Kind::UndecidedRefusal(m) => {
                format!("{m}: refused while generating, not by the facts")
            }
        }
    }
}

#[derive(Clone, Debug)]
pub struct Mismatch {
    pub kind: Kind,
    pub detail: String,
}

#[derive(Clone, Debug)]
pub enum Outcome {
    Pass,
    /// dfort refused (or its front end rejected) the program, and why.
    Refused(String),
    /// The program itself is unusable (gfortran rejects it, it fails at
    /// run time, its values are not finite): drawn again.
    Invalid(String),
    /// Finite differences were unreliable at every point: drawn again.
    NonSmooth,
    Mismatch(Mismatch),
}

/// A worker's directory, with the stack runtime compiled once.
pub struct Checker {
    scratch: Scratch,
    cases: usize,
    /// Everything is built with AddressSanitizer too (`--sanitize`).
    sanitize: bool,
    /// Only the derivatives are written, nothing compiled or run
    /// (`--refusals-only`): what is checked is that the generators refuse
    /// what the facts decided, and the consistency check.
    refusals_only: bool,
}

impl Checker {
    pub fn new(tag: &str, sanitize: bool, refusals_only: bool) -> Result<Checker, String> {
        let mut scratch = Scratch::new(tag)?;
        scratch.keep = std::env::var_os("DFORT_FUZZ_KEEP").is_some();
        scratch.write("dfort_stack.f90", dfort_codegen::adjoint::RUNTIME)?;
        let checker = Checker {
            scratch,
            cases: 0,
            sanitize,
            refusals_only,
        };
        compile(&checker.scratch.dir, "dfort_stack.f90", &checker.flags())?;
        Ok(checker)
    }

    /// [`FLAGS`], and AddressSanitizer's when asked: a region saved
    /// around a call that reaches past the actual is then a crash of the
    /// adjoint, in `dfort_stack.f90`.
    fn flags(&self) -> Vec<&'static str> {
        let sanitize: &[&'static str] = match self.sanitize {
            true => &dfort::verify::SANITIZE,
            false => &[],
        };
        [&FLAGS[..], sanitize].concat()
    }

    /// Checks `p`, whose driver draws its points from `seed`.
    pub fn check(&mut self, p: &Program, seed: u64) -> Outcome {
        self.cases += 1;
        let dir = self.scratch.dir.join(format!("case{}", self.cases));
        let _ = std::fs::remove_dir_all(&dir);
        if let Err(e) = std::fs::create_dir_all(&dir) {
            return Outcome::Invalid(format!("cannot create {}: {e}", dir.display()));
        }
        let out = self.check_in(&dir, p, seed);
        // `DFORT_FUZZ_KEEP=1` keeps each case's files, to debug it.
        if std::env::var_os("DFORT_FUZZ_KEEP").is_some() {
            eprintln!("case files kept in {}", dir.display());
        } else {
            let _ = std::fs::remove_dir_all(&dir);
        }
        out
    }

    fn check_in(&self, dir: &Path, p: &Program, seed: u64) -> Outcome {
        let text = p.print();
        let path = dir.join("prog.f90");
        if let Err(e) = std::fs::write(&path, &text) {
            return Outcome::Invalid(format!("cannot write the program: {e}"));
        }
        // What dfort reads: the same program, or one the C preprocessor
        // makes into it (`prog.F90`).
        let read = if p.macros {
            let cpp = dir.join("prog.F90");
            if let Err(e) = std::fs::write(&cpp, p.print_for_dfort()) {
                return Outcome::Invalid(format!("cannot write the program: {e}"));
            }
            cpp
        } else {
            path.clone()
        };
        // The solver's adjoint is the user's: `dfort.toml` says so (the
        // adjoint's header says how it is called; `supplied.f90` holds it).
        if p.supplied {
            let toml = format!("[adjoint]\nsupplied = {{ {SOLVER} = \"supplied.f90\" }}\n");
            if let Err(e) = std::fs::write(dir.join("dfort.toml"), toml) {
                return Outcome::Invalid(format!("cannot write dfort.toml: {e}"));
            }
        }
        let (files, refused, cut) = match derivatives(&read, p) {
            Ok(f) => f,
            Err(o) => return o,
        };
        // Where dfort warned that a READ cuts a derivative, the tangent
        // may disagree with finite differences: said, not a mismatch
        // (the adjoints still agree with the tangent). Without the
        // warning the disagreement is one.
        let warned = |o: Outcome| match (o, &cut) {
            (Outcome::Mismatch(m), Some(c)) if m.kind == Kind::Tangent => {
                Outcome::Refused(format!("(warned) cut-by-io: {c}"))
            }
            (o, _) => o,
        };
        if self.refusals_only {
            return refused.map_or(Outcome::Pass, Outcome::Refused);
        }
        for (name, text) in &files {
            if let Err(e) = std::fs::write(dir.join(format!("{name}.f90")), text) {
                return Outcome::Invalid(format!("cannot write {name}: {e}"));
            }
        }
        let base = self.scratch.dir.to_string_lossy().to_string();
        let mut flags: Vec<&str> = self.flags();
        flags.extend(["-I", &base]);
        if let Err(e) = compile(dir, "prog.f90", &flags) {
            return Outcome::Invalid(format!("gfortran rejects the program: {}", first_error(&e)));
        }
        let supplied = files
            .iter()
            .find(|(n, _)| n != "tangent")
            .and_then(|(_, text)| supplied_solver(text));
        let mut extra_objects = Vec::new();
        if let Some(text) = &supplied {
            if let Err(e) = std::fs::write(dir.join("supplied.f90"), text) {
                return Outcome::Invalid(format!("cannot write supplied.f90: {e}"));
            }
            match compile(dir, "supplied.f90", &flags) {
                Ok(o) => extra_objects.push(o),
                Err(e) => {
                    return mismatch(
                        Kind::DoesNotCompile("supplied adjoint"),
                        e.lines().skip(1).collect::<Vec<_>>().join("\n"),
                    )
                }
            }
        }
        for (name, _) in &files {
            if twin(&files, name) != name {
                continue;
            }
            if let Err(e) = compile(dir, &format!("{name}.f90"), &flags) {
                let what = mode_label(name);
                // The compiler's messages, without the command line.
                let msg = e.lines().skip(1).collect::<Vec<_>>().join("\n");
                return mismatch(Kind::DoesNotCompile(what), msg);
            }
        }
        // Runs trap on invalid arithmetic (a signalling NaN read before it
        // is set, a root of a negative, an overflow): in the program, the
        // generator's fault (or the shrinker's); in a derivative, dfort's.
        // The main program's options switch trapping on.
        let main_flags: Vec<&str> = flags
            .iter()
            .copied()
            .chain(["-ffpe-trap=invalid,zero,overflow"])
            .collect();
        if let Some(why) = refused {
            return warned(tangent_alone(dir, p, seed, &main_flags, why));
        }
        let mut runs: Vec<(&'static str, Vec<Point>)> = Vec::new();
        let stack = format!("{base}/dfort_stack.f90.o");
        let mut point_seed = seed;
        let mut spec = spec_of(p, POINTS, point_seed);
        for attempt in 0..2 {
            runs.clear();
            spec = spec_of(p, POINTS, point_seed);
            if let Err(e) = std::fs::write(dir.join("driver.f90"), driver(&spec)) {
                return Outcome::Invalid(format!("cannot write the driver: {e}"));
            }
            // The driver is compiled once and linked with each adjoint.
            let driver_object = match compile(dir, "driver.f90", &main_flags) {
                Ok(o) => o,
                Err(e) => {
                    return Outcome::Invalid(format!(
                        "the driver does not compile: {}",
                        first_error(&e)
                    ))
                }
            };
            for (_, name, _) in MODES {
                let twin = twin(&files, name);
                let earlier = runs.iter().find(|(l, _)| *l == mode_label(twin));
                if let Some((_, points)) = earlier.filter(|_| twin != name) {
                    runs.push((mode_label(name), points.clone()));
                    continue;
                }
                let exe = format!("run_{name}");
                let mut objects = vec![
                    "prog.f90.o".to_string(),
                    "tangent.f90.o".to_string(),
                    format!("{twin}.f90.o"),
                    stack.clone(),
                ];
                objects.extend(extra_objects.iter().cloned());
                if let Err(e) = link(dir, &driver_object, &objects, &main_flags, &exe) {
                    return Outcome::Invalid(format!(
                        "the driver does not link: {}",
                        first_error(&e)
                    ));
                }
                match run(dir, &exe) {
                    Ok(out) => runs.push((
                        mode_label(name),
                        after_space(p.after.is_some(), parse_output(&out)),
                    )),
                    Err(Failure::Error(stderr)) => {
                        if arithmetic_failure(&stderr)
                            && derivatives_overflow(dir, &spec, &main_flags)
                        {
                            return Outcome::Invalid(
                                "the program's derivatives are too large for the differences"
                                    .into(),
                            );
                        }
                        return crashed(name, &stderr);
                    }
                    Err(Failure::Hang) => {
                        // The program's own loops, or the derivative's?
                        let alone = run_primal_alone(dir, &spec, &main_flags, "primal");
                        if alone.is_err() {
                            return Outcome::Invalid("the program does not end".into());
                        }
                        return mismatch(
                            Kind::Crash(mode_label(name)),
                            format!(
                                "the program ends but its derivatives' driver ran longer than {} s",
                                RUN_LIMIT.as_secs()
                            ),
                        );
                    }
                }
            }
            let Some((_, first)) = runs.first() else {
                return Outcome::Invalid("no run".into());
            };
            if first.len() < POINTS {
                return Outcome::Invalid(format!(
                    "the driver printed {} points of {POINTS}",
                    first.len()
                ));
            }
            if first.iter().any(|pt| {
                pt.fd.iter().any(|v| !v.is_finite())
                    || pt.fd.iter().any(|v| v.abs() > LARGEST_DIFFERENCE)
            }) {
                return Outcome::Invalid("the program's values are not finite or too large".into());
            }
            if first.iter().any(|pt| pt.smooth(SMOOTH)) {
                break;
            }
            if attempt == 1 {
                return Outcome::NonSmooth;
            }
            point_seed = point_seed.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
        warned(match judge(&runs, true) {
            Outcome::Mismatch(m)
                if m.kind == Kind::Tangent
                    && quad_tangent_agrees(dir, p.after.is_some(), &spec) =>
            {
                judge(&runs, false)
            }
            Outcome::Mismatch(m)
                if m.kind == Kind::Tangent && tangent_past_differences(&runs[0].1) =>
            {
                Outcome::Invalid("the tangent is too large for the differences to check".into())
            }
            outcome => outcome,
        })
    }
}

/// The check of a program whose adjoint dfort refuses: its tangent
/// against finite differences (rechecked in quadruple precision), at the
/// smooth points; a tangent that disagrees is a mismatch, otherwise the
/// program counts as refused. A program or driver that fails here is
/// counted as refused too: only the tangent is judged.
fn tangent_alone(dir: &Path, p: &Program, seed: u64, flags: &[&str], why: String) -> Outcome {
    let mut spec = spec_of(p, POINTS, seed);
    spec.adjoint = false;
    spec.gradient = false;
    let ran = std::fs::write(dir.join("driver.f90"), driver(&spec))
        .map_err(|e| e.to_string())
        .and_then(|_| compile(dir, "driver.f90", flags))
        .and_then(|d| {
            let objects = ["prog.f90.o".to_string(), "tangent.f90.o".to_string()];
            link(dir, &d, &objects, flags, "run_tangent")
        })
        .ok();
    if ran.is_none() {
        return Outcome::Refused(why);
    }
    let out = match run(dir, "run_tangent") {
        Ok(out) => out,
        // The tangent's fault when the program alone runs.
        // (Not on invalid arithmetic: derivatives of a program whose values
        // grow may overflow where the program does not.)
        Err(Failure::Error(stderr))
            if !arithmetic_failure(&stderr)
                && run_primal_alone(dir, &spec, flags, "primal").is_ok() =>
        {
            return mismatch(Kind::Crash("tangent"), first_error(&stderr));
        }
        Err(_) => return Outcome::Refused(why),
    };
    let points = after_space(p.after.is_some(), parse_output(&out));
    for (k, pt) in points.iter().enumerate() {
        if !pt.smooth(SMOOTH)
            || pt
                .fd
                .iter()
                .any(|v| !v.is_finite() || v.abs() > LARGEST_DIFFERENCE)
        {
            continue;
        }
        let Some(e) = pt.tangent_error() else {
            continue;
        };
        if !within(e, TANGENT_TOL)
            && !past_differences(pt)
            && !quad_tangent_agrees(dir, p.after.is_some(), &spec)
        {
            return mismatch(
                Kind::Tangent,
                format!(
                    "point {}: finite differences {:e}, tangent {:e} (relative error {e:.2e}; the adjoint is refused: {why})",
                    k + 1,
                    pt.fd(),
                    pt.tangent.map_or(f64::NAN, |t| t.0)
                ),
            );
        }
    }
    Outcome::Refused(why)
}

/// The driver's points with the differences, taken on entry, turned into
/// differences with respect to the independents' values after the call of
/// [`Program::after`] (which multiplies them by [`AFTER_SCALE`]): what the
/// derivatives of such a root give.
fn after_space(after: bool, mut points: Vec<Point>) -> Vec<Point> {
    if after {
        for pt in &mut points {
            for d in &mut pt.fd {
                *d /= AFTER_SCALE;
            }
            pt.values /= AFTER_SCALE;
        }
    }
    points
}

/// Whether a derivative's run stopped on invalid or overflowing
/// arithmetic (a trap, or NaN in its results).
/// The first derivative file of `files` with the text of `name`'s: a
/// mode whose adjoint is another's word for word (TBR that records what
/// the inversion records) is compiled and run once, its points the
/// other's.
fn twin<'a>(files: &'a [(String, String)], name: &'a str) -> &'a str {
    let text = files.iter().find(|(n, _)| n == name).map(|(_, t)| t);
    files
        .iter()
        .find(|(n, t)| n != "tangent" && Some(t) == text)
        .map_or(name, |(n, _)| n.as_str())
}

fn arithmetic_failure(stderr: &str) -> bool {
    stderr.contains("Floating-point exception") || stderr.contains("computes NaN")
}

/// Builds and runs a driver of the program alone (its finite
/// differences, no derivative), named after `name`, and returns its output.
fn run_primal_alone(
    dir: &Path,
    spec: &DriverSpec,
    flags: &[&str],
    name: &str,
) -> Result<String, Failure> {
    let mut primal = spec.clone();
    primal.tangent = false;
    primal.adjoint = false;
    let source = format!("{name}.f90");
    let exe = format!("run_{name}");
    std::fs::write(dir.join(&source), driver(&primal))
        .map_err(|e| e.to_string())
        .and_then(|_| link(dir, &source, &["prog.f90.o".to_string()], flags, &exe))
        .map_err(Failure::Error)?;
    run(dir, &exe)
}

/// Whether the tangent disagrees with the differences only at points
/// where it is past [`LARGEST_DIFFERENCE`], the differences' own bound
/// ([`dfort_codegen::driver::only_large_tangents_disagree`]). Such a
/// program is unusable, not a mismatch, as one whose differences pass
/// that bound is: the dot-product test cannot judge it either, the
/// rounding of the forward and reverse products of those Jacobians
/// differing by more than its tolerance (seed 7070, case 476: 2.9e-6 at
/// 3e195).
fn tangent_past_differences(points: &[Point]) -> bool {
    dfort_codegen::driver::only_large_tangents_disagree(
        points,
        SMOOTH,
        TANGENT_TOL,
        LARGEST_DIFFERENCE,
    )
}

/// Whether the tangent at `pt` is larger than the differences can check.
fn past_differences(pt: &Point) -> bool {
    pt.tangent
        .is_some_and(|(t, _)| t.abs() > LARGEST_DIFFERENCE)
}

/// Whether the program's finite differences alone (no derivative run)
/// exceed [`LARGEST_DIFFERENCE`] or are not finite: a program whose values
/// grow so fast through its loops that its true derivatives overflow
/// where its values do not (seed 1141, case 6678: values near 1e81, a
/// tangent past 1e308), or that itself stops on such arithmetic at one
/// of the points. Such a program is unusable, not a mismatch.
fn derivatives_overflow(dir: &Path, spec: &DriverSpec, flags: &[&str]) -> bool {
    let out = match run_primal_alone(dir, spec, flags, "differences") {
        Ok(out) => out,
        // The program itself stops on invalid or overflowing arithmetic
        // at a later point (seed 51051, case 230: differences near 1e52 at
        // the first point, `u**2` overflowing at the second).
        Err(Failure::Error(stderr)) => return arithmetic_failure(&stderr),
        Err(Failure::Hang) => return false,
    };
    let points = parse_output(&out);
    !points.is_empty()
        && points.iter().any(|pt| {
            pt.fd
                .iter()
                .any(|v| !v.is_finite() || v.abs() > LARGEST_DIFFERENCE)
        })
}

/// Whether the tangent agrees with finite differences when the program,
/// the tangent and a tangent-only driver are all computed in quadruple
/// precision (`-freal-8-real-16`), at the points `spec` draws. A tangent
/// that disagrees in double precision only is right for a program whose
/// values are ill-conditioned there (`sin` of a value near 1e12, whose
/// last bit moves the result by 1e-4: seed 1128, case 1824) or that
/// oscillates faster than double precision's steps ([`QUAD_STEP`]); a
/// wrong tangent disagrees in any precision.
fn quad_tangent_agrees(dir: &Path, after: bool, spec: &DriverSpec) -> bool {
    let quad = dir.join("quad");
    let copy = |f: &str| {
        std::fs::read_to_string(dir.join(f))
            .and_then(|text| std::fs::write(quad.join(f), quad_kinds(&text)))
    };
    let mut tangent_only = spec.clone();
    tangent_only.adjoint = false;
    tangent_only.step = QUAD_STEP;
    let flags = ["-O0", "-freal-8-real-16", "-fcheck=bounds,do,recursion"];
    let built = std::fs::create_dir_all(&quad)
        .and_then(|_| copy("prog.f90"))
        .and_then(|_| copy("tangent.f90"))
        .and_then(|_| std::fs::write(quad.join("driver.f90"), driver(&tangent_only)))
        .map_err(|e| e.to_string())
        .and_then(|_| compile(&quad, "prog.f90", &flags))
        .and_then(|_| compile(&quad, "tangent.f90", &flags))
        .and_then(|_| {
            let objects = ["prog.f90.o".to_string(), "tangent.f90.o".to_string()];
            link(&quad, "driver.f90", &objects, &flags, "run_quad")
        });
    let Ok(out) = built
        .map_err(Failure::Error)
        .and_then(|_| run(&quad, "run_quad"))
    else {
        return false;
    };
    let points = after_space(after, parse_output(&out));
    let smooth: Vec<&Point> = points.iter().filter(|pt| pt.smooth(SMOOTH)).collect();
    points.len() == POINTS
        && !smooth.is_empty()
        && smooth
            .iter()
            .all(|pt| pt.tangent_error().is_some_and(|e| within(e, TANGENT_TOL)))
}

/// `text` with the kind argument 8 of each `cmplx(…, 8)` and `real(…, 8)`
/// made 16: `-freal-8-real-16` promotes declarations, not a kind given
/// to an intrinsic, so without this a complex value drawn by the fuzzer
/// (and its derivative) would drop to double precision in the
/// quadruple-precision re-check (seed 77, case 37: differences at
/// 2e-12 scattered by 2e-5).
fn quad_kinds(text: &str) -> String {
    let bytes = text.as_bytes();
    // The kind arguments to replace: the byte ranges after the call's last
    // top-level comma up to its closing parenthesis. A call nested in
    // another's first argument has its own, which the outer one's does
    // not overlap (seed 4040: `real(real(…, 8) * …, 8)`).
    let mut kinds: Vec<(usize, usize)> = Vec::new();
    for i in 0..bytes.len() {
        let word_start = i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_');
        let name = ["cmplx(", "real("].into_iter().find(|n| {
            word_start && text[i..].len() >= n.len() && text[i..i + n.len()].eq_ignore_ascii_case(n)
        });
        let Some(name) = name else {
            continue;
        };
        // The call's last top-level argument.
        let open = i + name.len() - 1;
        let (mut depth, mut last_comma, mut close) = (0usize, None, None);
        for (j, b) in bytes.iter().enumerate().skip(open) {
            match b {
                b'(' => depth += 1,
                b')' => {
                    depth -= 1;
                    if depth == 0 {
                        close = Some(j);
                        break;
                    }
                }
                b',' if depth == 1 => last_comma = Some(j),
                _ => {}
            }
        }
        if let (Some(comma), Some(close)) = (last_comma, close) {
            let kind = text[comma + 1..close].trim().to_ascii_lowercase();
            if kind == "8" || kind.replace(' ', "") == "kind=8" {
                kinds.push((comma + 1, close));
            }
        }
    }
    kinds.sort_unstable();
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    for (from, to) in kinds {
        out.push_str(&text[copied..from]);
        out.push_str(" 16");
        copied = to;
    }
    out.push_str(&text[copied..]);
    out
}

/// Derivative files (name, text), and the refusal of the adjoint when the
/// tangent is there alone.
/// The derivatives' files (name, text), the refusal of the adjoints when
/// only the tangent was written, and the first `cut-by-io` warning of the
/// root (a READ that may read back an active value: its derivative is
/// cut there, so the derivatives may disagree with finite differences).
type Derivatives = (Vec<(String, String)>, Option<String>, Option<String>);

/// The tangent and the three adjoints of `p`'s root, or the outcome that
/// stops the check (a refusal, a panic). When an adjoint is refused after
/// the tangent was written: the tangent alone, with the refusal.
fn derivatives(path: &Path, p: &Program) -> Result<Derivatives, Outcome> {
    let files = [path.to_path_buf()];
    let spec = RootSpec {
        name: "fz".into(),
        independent: p.independents.clone(),
        dependent: p.dependents.clone(),
        after: p.after.clone(),
    };
    let guarded = |what: &'static str,
                   decided: &[dfort_codegen::Refusal],
                   f: &dyn Fn() -> Result<String, Vec<dfort_codegen::Refusal>>| {
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
            Ok(Ok(text)) => Ok(text),
            // What the generators refuse is what the facts decided.
            Ok(Err(refusals)) if refusals.iter().any(|r| !decided.contains(r)) => {
                Err(Outcome::Mismatch(Mismatch {
                    kind: Kind::UndecidedRefusal(what),
                    detail: refusals
                        .iter()
                        .filter(|r| !decided.contains(r))
                        .map(|r| format!("{} ({})", r.message, r.rule.code))
                        .collect::<Vec<_>>()
                        .join("\n"),
                }))
            }
            Ok(Err(refusals)) => Err(Outcome::Refused(
                refusals
                    .first()
                    .map_or_else(|| "(no reason)".into(), |r| normalize(&r.message)),
            )),
            Err(panic) => {
                let msg = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                Err(Outcome::Mismatch(Mismatch {
                    kind: Kind::Panic,
                    detail: format!("{what}: {msg}"),
                }))
            }
        }
    };
    let mut files_out = Vec::new();
    let mut cut = None;
    for (i, (rec, name, _)) in MODES.into_iter().enumerate() {
        // The files read as `dfort adjoint` reads them: on the host,
        // analysed from the root alone in this mode.
        let ask = Ask {
            supplied: Vec::new(),
            roots: vec![spec.clone()],
            others: false,
            recording: rec,
            preaccumulate: Some(preaccumulation(name)),
        };
        let session = Session::open(&files, &dfort::FormArgs::default(), &ask);
        if let Some(e) = session.errors.first() {
            return Err(Outcome::Invalid(format!("cannot load: {e}")));
        }
        if let Some((_, d)) = session
            .front_end()
            .into_iter()
            .find(|(_, d)| d.severity == dfort_syntax::Severity::Error)
        {
            return Err(Outcome::Refused(format!(
                "front end: {}",
                normalize(&d.message)
            )));
        }
        let id = match session.root("fz") {
            Ok((id, _)) => id,
            Err(e) => return Err(Outcome::Invalid(e)),
        };
        let facts = session.snap.analysis();
        use dfort_analysis::refusals::Derivative;
        if i == 0 {
            cut = facts
                .io_cuts(id)
                .first()
                .map(|c| format!("`{}` read back, `{}` written", c.variable, c.written));
            let decided = facts.refusals(id, Derivative::Tangent);
            let t = guarded("tangent", &decided, &|| {
                dfort_codegen::tangent::tangent_of(facts, id, "cargo xtask fuzz")
            })?;
            files_out.push(("tangent".to_string(), t));
        }
        let decided = facts.refusals(id, Derivative::Adjoint);
        let a = match guarded(name, &decided, &|| {
            dfort_codegen::adjoint::adjoint_of(facts, id, "cargo xtask fuzz").map(|(t, _)| t)
        }) {
            Ok(a) => a,
            // The tangent is still checked (a procedure with SAVE'd state
            // has a tangent and no adjoint).
            Err(Outcome::Refused(why)) => {
                files_out.retain(|(n, _)| n == "tangent");
                return Ok((files_out, Some(why), cut));
            }
            Err(o) => return Err(o),
        };
        files_out.push((name.to_string(), a));
        // The editor shows the statement-level adjoint's decisions.
        if preaccumulation(name) != Preaccumulation::Off {
            continue;
        }
        let agreed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            crate::consistency::check_root(&files, &spec, rec)
        }));
        match agreed {
            Ok(Ok(_)) => {}
            Ok(Err(d)) => {
                return Err(Outcome::Mismatch(Mismatch {
                    kind: Kind::Inconsistent(mode_label(name)),
                    detail: d.join("\n"),
                }))
            }
            Err(_) => {
                return Err(Outcome::Mismatch(Mismatch {
                    kind: Kind::Panic,
                    detail: format!("{name}: the consistency check panicked"),
                }))
            }
        }
    }
    Ok((files_out, None, cut))
}

/// The user's adjoint of [`SOLVER`] for the adjoint `text`, as its
/// header says the adjoint calls it (`subroutine fz_solve_b(n, b, bb, x,
/// xb)`, without the adjoints of arguments that have none): b̄ += A⁻¹x̄
/// (the matrix is symmetric) and x̄ = 0 (the solution does not depend on
/// the first guess). `None` when the adjoint does not call it.
fn supplied_solver(text: &str) -> Option<String> {
    let (name, args) = crate::supplied::called_as(text, SOLVER)?;
    let after = |formal: &str| {
        let k = args.iter().position(|a| a == formal)?;
        args.get(k + 1)
            .filter(|a| !["x", "n", "b"].contains(&a.as_str()))
            .map(String::as_str)
    };
    let (bb, xb) = (after("b"), after("x"));
    let mut out = format!("subroutine {name}({})\n", args.join(", "));
    out.push_str("  implicit none\n  integer, intent(in) :: n\n");
    out.push_str("  real(8), intent(in) :: b(n), x(n)\n");
    for a in [bb, xb].into_iter().flatten() {
        out.push_str(&format!("  real(8), intent(inout) :: {a}(n)\n"));
    }
    if let (Some(bb), Some(xb)) = (bb, xb) {
        out.push_str(&format!(
            "  real(8) :: lambda(n)\n  lambda = 0\n  call {SOLVER}(n, {xb}, lambda)\n  {bb} = {bb} + lambda\n"
        ));
    }
    if let Some(xb) = xb {
        out.push_str(&format!("  {xb} = 0\n"));
    }
    out.push_str(&format!("end subroutine {name}\n"));
    Some(out)
}

/// The driver of `p`'s root: `n` and every real argument, with the
/// derivative flags the tangent's names give.
fn spec_of(p: &Program, points: usize, seed: u64) -> DriverSpec {
    let mut args = Vec::new();
    let mut with_derivative = Vec::new();
    for a in &p.root.args {
        if let Some((_, v)) = p.ints.iter().find(|(n, _)| n == a) {
            args.push(DriverArg::Int {
                name: a.clone(),
                value: *v,
            });
            with_derivative.push(false);
            continue;
        }
        let size: usize = p
            .root
            .decls
            .iter()
            .find(|d| d.name == *a)
            .map(|d| {
                d.dims
                    .iter()
                    .map(|e| match e.as_str() {
                        "n" => p
                            .ints
                            .iter()
                            .find(|(k, _)| k == "n")
                            .map_or(1, |x| x.1 as usize),
                        v => v.parse().unwrap_or(1),
                    })
                    .product::<usize>()
                    * usize::from(!d.dims.is_empty())
            })
            .unwrap_or(0);
        args.push(DriverArg::Real {
            name: a.clone(),
            size,
        });
        with_derivative.push(p.independents.contains(a) || p.dependents.contains(a));
    }
    // A function root: its result is a scalar of the driver's own name.
    let result = (p.root.kind == ProcKind::Function).then(|| "dv_result".to_string());
    let mut dependents = p.dependents.clone();
    if let Some(r) = &result {
        args.push(DriverArg::Real {
            name: r.clone(),
            size: 0,
        });
        with_derivative.push(true);
        let own = p.root.result();
        for d in &mut dependents {
            if *d == own {
                *d = r.clone();
            }
        }
    }
    DriverSpec {
        root: p.root.name.clone(),
        args,
        independents: p.independents.clone(),
        dependents,
        with_derivative,
        tangent: true,
        adjoint: true,
        module: None,
        points,
        gradient: true,
        seed,
        assumed_shape: Vec::new(),
        result,
        matrices: Vec::new(),
        step: STEP,
    }
}

/// The verdict on the three runs (one per adjoint mode; the finite
/// differences and the tangent are the same in all); `tangent`: whether
/// the tangent is judged against the finite differences too.
fn judge(runs: &[(&'static str, Vec<Point>)], tangent: bool) -> Outcome {
    let Some((_, first)) = runs.first() else {
        return Outcome::Invalid("no run".into());
    };
    for (k, pt) in first.iter().enumerate().filter(|_| tangent) {
        if !pt.smooth(SMOOTH) {
            continue;
        }
        if let Some(e) = pt.tangent_error() {
            if !within(e, TANGENT_TOL) {
                return mismatch(
                    Kind::Tangent,
                    format!(
                        "point {}: finite differences {:e}, tangent {:e} (relative error {e:.2e})",
                        k + 1,
                        pt.fd(),
                        pt.tangent.map_or(f64::NAN, |t| t.0)
                    ),
                );
            }
        }
    }
    for (mode, points) in runs {
        for (k, pt) in points.iter().enumerate() {
            if pt.depth != 0 {
                return mismatch(
                    Kind::Tape(mode),
                    format!("point {}: {} entries left on the tape", k + 1, pt.depth),
                );
            }
            let (Some((t, ts)), Some((a, s))) = (pt.tangent, pt.adjoint) else {
                return Outcome::Invalid("a point without tangent or adjoint".into());
            };
            let err = relative(t, a, ts.max(s).max(1e-300));
            if !within(err, DOT_TOL) {
                return mismatch(
                    Kind::DotProduct(mode),
                    format!("point {}: tangent {t:e}, adjoint {a:e} (error {err:.2e} of the terms' size {:e})", k + 1, ts.max(s)),
                );
            }
        }
    }
    let (_, base) = &runs[0];
    for (mode, points) in &runs[1..] {
        for (k, (p0, pk)) in base.iter().zip(points).enumerate() {
            let scale = p0
                .gradient
                .iter()
                .chain(&pk.gradient)
                .fold(0.0f64, |m, v| m.max(v.abs()))
                .max(1e-300);
            let bad = p0.gradient.len() != pk.gradient.len()
                || p0
                    .gradient
                    .iter()
                    .zip(&pk.gradient)
                    .any(|(a, b)| !within((a - b).abs(), MODES_TOL * scale));
            if bad {
                return mismatch(
                    Kind::Modes(mode),
                    format!(
                        "point {}: default mode {:?}, {mode} {:?}",
                        k + 1,
                        p0.gradient,
                        pk.gradient
                    ),
                );
            }
        }
    }
    Outcome::Pass
}

/// `v <= tol`, false for NaN.
fn within(v: f64, tol: f64) -> bool {
    v <= tol
}

fn mode_label(name: &str) -> &'static str {
    match name {
        "adj_inv" => "adjoint (default)",
        "adj_tbr" => "adjoint (--no-inversion)",
        "adj_all" => "adjoint (--no-tbr)",
        "adj_pre" => "adjoint (--preaccumulate=all)",
        _ => "tangent",
    }
}

fn mismatch(kind: Kind, detail: String) -> Outcome {
    Outcome::Mismatch(Mismatch { kind, detail })
}

/// A run that failed: which file the error points into decides whether
/// the program or a derivative is at fault.
fn crashed(exe_mode: &str, stderr: &str) -> Outcome {
    let files = [
        "prog.f90",
        "tangent.f90",
        "adj_inv.f90",
        "adj_tbr.f90",
        "adj_all.f90",
        "adj_pre.f90",
        "dfort_stack.f90",
    ];
    let first = stderr
        .lines()
        .filter_map(|l| files.iter().find(|f| l.contains(*f)))
        .next();
    let detail = stderr.lines().take(12).collect::<Vec<_>>().join("\n");
    if stderr.contains("dfort_pop: the tape") {
        return mismatch(Kind::Tape(mode_label(exe_mode)), detail);
    }
    if stderr.contains("the original computes NaN") {
        return Outcome::Invalid("the program computes NaN".into());
    }
    if stderr.contains("the tangent computes NaN") {
        return mismatch(Kind::Crash("tangent"), detail);
    }
    match first {
        Some(&"prog.f90") => Outcome::Invalid(format!("the program fails at run time: {detail}")),
        Some(&"tangent.f90") => mismatch(Kind::Crash("tangent"), detail),
        _ => mismatch(Kind::Crash(mode_label(exe_mode)), detail),
    }
}

enum Failure {
    Error(String),
    Hang,
}

/// Runs `dir/exe`, killed after [`RUN_LIMIT`].
fn run(dir: &Path, exe: &str) -> Result<String, Failure> {
    let mut child = Command::new(dir.join(exe))
        .current_dir(dir)
        .env("ASAN_OPTIONS", "detect_leaks=0")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| Failure::Error(format!("cannot run {exe}: {e}")))?;
    let start = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if start.elapsed() > RUN_LIMIT => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(Failure::Hang);
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => return Err(Failure::Error(format!("waiting for {exe}: {e}"))),
        }
    }
    let out = child
        .wait_with_output()
        .map_err(|e| Failure::Error(format!("reading {exe}: {e}")))?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if out.status.success() {
        Ok(stdout)
    } else {
        Err(Failure::Error(format!(
            "{}{}\n({})",
            String::from_utf8_lossy(&out.stderr),
            stdout,
            out.status
        )))
    }
}

/// The first lines of a compiler error.
fn first_error(e: &str) -> String {
    e.lines().take(8).collect::<Vec<_>>().join("\n")
}

/// A refusal's reason without its particulars, so that reasons group:
/// quoted code keeps only the name of the function it applies
/// (`` `maxval(…)` ``), numbers become `#`.
pub fn normalize(msg: &str) -> String {
    let mut out = String::new();
    let mut quoted = false;
    for part in msg.split('`') {
        if quoted {
            let head: String = part
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            let known = head.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
                && part[head.len()..].starts_with('(')
                && dfort_ir::intrinsics::is_intrinsic_function(&head);
            if known {
                out.push_str(&format!("`{head}(…)`"));
            } else {
                out.push_str("`…`");
            }
        } else {
            for c in part.chars() {
                if c.is_ascii_digit() {
                    if !out.ends_with('#') {
                        out.push('#');
                    }
                } else {
                    out.push(c);
                }
            }
        }
        quoted = !quoted;
    }
    out
}

/// Whether gfortran can be run (the fuzzer needs it).
pub fn available() -> Result<(), String> {
    gfortran(Path::new("."), &["--version"])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tangent past the differences' bound where they see a constant
    /// (seed 7070, case 476) makes the program unusable; a wrong tangent
    /// of ordinary size, at any one of the points, stays a mismatch.
    #[test]
    fn a_mode_whose_adjoint_is_another_s_word_for_word_is_built_once() {
        let files: Vec<(String, String)> = [
            ("tangent", "t"),
            ("adj_inv", "a"),
            ("adj_tbr", "a"),
            ("adj_all", "b"),
        ]
        .iter()
        .map(|(n, t)| (n.to_string(), t.to_string()))
        .collect();
        let twins: Vec<&str> = ["tangent", "adj_inv", "adj_tbr", "adj_all"]
            .iter()
            .map(|n| twin(&files, n))
            .collect();
        assert_eq!(twins, ["tangent", "adj_inv", "adj_inv", "adj_all"]);
    }

    #[test]
    fn only_a_tangent_too_large_for_the_differences_is_set_aside() {
        let at = |fd: f64, t: f64| Point {
            fd: [fd; 3],
            tangent: Some((t, t.abs())),
            ..Point::default()
        };
        assert!(tangent_past_differences(&[at(0.0, -7.7e136), at(0.5, 0.5)]));
        assert!(!tangent_past_differences(&[
            at(0.0, -7.7e136),
            at(0.5, 2.0)
        ]));
        assert!(!tangent_past_differences(&[at(0.0, 3.0), at(0.5, 0.5)]));
        assert!(!tangent_past_differences(&[at(0.5, 0.5)]));
    }

    /// A program whose adjoint is refused (and not its tangent) still has
    /// its tangent judged: it passes against the program it was written
    /// from, and is a mismatch against a program that computes something
    /// else.
    #[test]
    fn the_tangent_of_a_program_whose_adjoint_is_refused_is_still_judged() {
        if std::env::var_os("DFORT_SKIP_GFORTRAN").is_some() {
            return;
        }
        let base = std::env::temp_dir().join(format!("dfort-tangent-alone-{}", std::process::id()));
        std::fs::create_dir_all(&base).expect("scratch");
        // Drawn programs whose tangent dfort writes and whose adjoint it
        // refuses.
        let candidates = (0..400)
            .map(|case| crate::fuzz::draw(2026, case, 0).0)
            .filter(|p| {
                // (A root without internal procedures: the tampering
                // below writes before its END.)
                !p.macros && p.root.internal.is_empty()
            })
            .filter_map(|p| {
                let path = base.join("candidate.f90");
                std::fs::write(&path, p.print()).ok()?;
                match derivatives(&path, &p) {
                    Ok((files, Some(why), _)) if files.len() == 1 => {
                        Some((p, files[0].1.clone(), why))
                    }
                    _ => None,
                }
            });
        let judged = |(p, tangent, why): &(Program, String, String), tamper: bool| {
            let dir = base.join(if tamper { "tampered" } else { "as-drawn" });
            std::fs::create_dir_all(&dir).expect("scratch");
            let text = p.print();
            std::fs::write(dir.join("tangent.f90"), tangent).expect("write");
            let prog = if tamper {
                // The program computes 1.5 times its dependent: the
                // tangent no longer matches it.
                let d = &p.dependents[0];
                let end = if p.root.kind == ProcKind::Function {
                    "\nend function fz\n"
                } else {
                    "\nend subroutine fz\n"
                };
                let changed = text.replacen(end, &format!("\n  {d} = 1.5d0*{d}{end}"), 1);
                assert_ne!(changed, text);
                changed
            } else {
                text
            };
            std::fs::write(dir.join("prog.f90"), prog).expect("write");
            for f in ["prog.f90", "tangent.f90"] {
                compile(&dir, f, &FLAGS).expect("compiles");
            }
            tangent_alone(&dir, p, 7, &FLAGS, why.clone())
        };
        // Each tangent passes against its program; tampering is found
        // (a few tries: a drawn dependent may not vary at the points, and
        // 1.5 times a zero derivative is still right).
        let mut found = None;
        for c in candidates.take(5) {
            let plain = judged(&c, false);
            assert!(matches!(plain, Outcome::Refused(_)), "{plain:?}");
            let tampered = judged(&c, true);
            if matches!(
                tampered,
                Outcome::Mismatch(Mismatch {
                    kind: Kind::Tangent,
                    ..
                })
            ) {
                found = Some(tampered);
                break;
            }
        }
        let _ = std::fs::remove_dir_all(&base);
        assert!(found.is_some(), "no tampered tangent was found wrong");
    }

    /// A program that itself stops on overflow at one of its points
    /// (seed 51051, case 230: differences near 1e52 at the first point,
    /// `u**2` overflowing at the second) is unusable, not a mismatch of
    /// the derivative that overflows with it; one that runs everywhere is
    /// usable. Written out here: the generator's draws change.
    #[test]
    fn a_program_that_overflows_at_a_later_point_is_unusable() {
        if std::env::var_os("DFORT_SKIP_GFORTRAN").is_some() {
            return;
        }
        let usable = |body: &str| {
            let dir = std::env::temp_dir().join(format!(
                "dfort-overflow-later-{}-{}",
                std::process::id(),
                body.len()
            ));
            std::fs::create_dir_all(&dir).expect("scratch");
            let prog = format!(
                "subroutine fz(n, x, y)\n  implicit none\n  integer, intent(in) :: n\n  real(8), intent(in) :: x(n)\n  real(8), intent(out) :: y(n)\n{body}\nend subroutine fz\n"
            );
            std::fs::write(dir.join("prog.f90"), prog).expect("write");
            let flags: Vec<&str> = FLAGS
                .iter()
                .copied()
                .chain(["-ffpe-trap=invalid,zero,overflow"])
                .collect();
            compile(&dir, "prog.f90", &flags).expect("compiles");
            let spec = DriverSpec {
                root: "fz".into(),
                args: vec![
                    DriverArg::Int {
                        name: "n".into(),
                        value: 3,
                    },
                    DriverArg::Real {
                        name: "x".into(),
                        size: 3,
                    },
                    DriverArg::Real {
                        name: "y".into(),
                        size: 3,
                    },
                ],
                independents: vec!["x".into()],
                dependents: vec!["y".into()],
                with_derivative: vec![false, true, true],
                tangent: true,
                adjoint: false,
                module: None,
                points: POINTS,
                gradient: false,
                seed: 7,
                assumed_shape: Vec::new(),
                result: None,
                matrices: Vec::new(),
                step: STEP,
            };
            let overflow = derivatives_overflow(&dir, &spec, &flags);
            let _ = std::fs::remove_dir_all(&dir);
            !overflow
        };
        // x is drawn from 0.5 to 1.5: exp(700 x) overflows above x = 1.014,
        // at some of the points and not others.
        assert!(!usable("  y = exp(700.0d0*x)"));
        assert!(usable("  y = exp(x)"));
    }

    #[test]
    fn reasons_group_without_names_and_numbers() {
        assert_eq!(
            normalize("no adjoint rule for `maxval(t1)` with active arguments at line 12"),
            "no adjoint rule for `maxval(…)` with active arguments at line #"
        );
        assert_eq!(
            normalize("`fz_s1` receives `x(2)` from `fz`"),
            "`…` receives `…` from `…`"
        );
    }

    #[test]
    fn a_tangent_off_the_differences_at_a_smooth_point_is_a_mismatch() {
        let pt = |t: f64| Point {
            fd: [1.0, 1.0, 1.0],
            values: 1.0,
            tangent: Some((t, 1.0)),
            adjoint: Some((t, 1.0)),
            depth: 0,
            tape: None,
            gradient: vec![0.5],
        };
        let runs = |t| vec![("a", vec![pt(t)]), ("b", vec![pt(t)]), ("c", vec![pt(t)])];
        assert!(matches!(judge(&runs(1.0), true), Outcome::Pass));
        // Not judged against the differences (checked in quadruple
        // precision instead), the tangent passes.
        assert!(matches!(judge(&runs(1.1), false), Outcome::Pass));
        assert!(matches!(
            judge(&runs(1.1), true),
            Outcome::Mismatch(Mismatch {
                kind: Kind::Tangent,
                ..
            })
        ));
        let mut r = runs(1.0);
        r[2].1[0].gradient = vec![0.5 + 1e-6];
        assert!(matches!(
            judge(&r, true),
            Outcome::Mismatch(Mismatch {
                kind: Kind::Modes("c"),
                ..
            })
        ));
        let mut r = runs(1.0);
        r[1].1[0].adjoint = Some((1.0 + 1e-6, 1.0));
        assert!(matches!(
            judge(&r, true),
            Outcome::Mismatch(Mismatch {
                kind: Kind::DotProduct("b"),
                ..
            })
        ));
        let mut r = runs(1.0);
        r[0].1[0].depth = 2;
        assert!(matches!(
            judge(&r, true),
            Outcome::Mismatch(Mismatch {
                kind: Kind::Tape("a"),
                ..
            })
        ));
    }

    #[test]
    fn the_quad_recheck_gives_intrinsics_kind_16() {
        assert_eq!(
            quad_kinds("zc = CMPLX(a(i, 8), f(x, 8), 8) + exp(cmplx(0d0, r, kind = 8))"),
            "zc = CMPLX(a(i, 8), f(x, 8), 16) + exp(cmplx(0d0, r, 16))"
        );
        assert_eq!(
            quad_kinds("real(8) :: v\nf = real(z*conjg(zd), 8) + real(z) + surreal(x, 8)"),
            "real(8) :: v\nf = real(z*conjg(zd), 16) + real(z) + surreal(x, 8)"
        );
        // Nested in another's first argument (seed 4040 panicked here).
        assert_eq!(
            quad_kinds("y = real(real(c, 8) * cmplx(x, 0d0, kind=8), 8)"),
            "y = real(real(c, 16) * cmplx(x, 0d0, 16), 16)"
        );
    }

    /// The quadruple-precision re-check accepts a right tangent of a
    /// program that is ill-conditioned in double precision (`sin` of a
    /// value near 1e12: the tangent there is off by 1e-4 in double) or
    /// that oscillates faster than double precision's steps (`sin(3e4 x)`:
    /// its differences at 2e-4 are off by far more than the tolerance),
    /// and still rejects a wrong one.
    #[test]
    fn the_quad_recheck_tells_rounding_from_a_wrong_tangent() {
        if available().is_err() {
            eprintln!("gfortran not found: skipped");
            return;
        }
        let prog = "subroutine fz(x, y)
  real(8), intent(in) :: x
  real(8), intent(out) :: y
  y = sin(x - 1.0d12)
end subroutine fz
";
        let tangent = |derivative: &str| {
            format!(
                "subroutine fz_d(x, xd, y, yd)
  real(8), intent(in) :: x, xd
  real(8), intent(out) :: y, yd
  yd = {derivative}*xd
  y = sin(x - 1.0d12)
end subroutine fz_d
"
            )
        };
        let spec = DriverSpec {
            root: "fz".into(),
            args: vec![
                DriverArg::Real {
                    name: "x".into(),
                    size: 0,
                },
                DriverArg::Real {
                    name: "y".into(),
                    size: 0,
                },
            ],
            independents: vec!["x".into()],
            dependents: vec!["y".into()],
            with_derivative: vec![true, true],
            tangent: true,
            adjoint: true,
            module: None,
            points: POINTS,
            gradient: false,
            seed: 7,
            assumed_shape: Vec::new(),
            result: None,
            matrices: Vec::new(),
            step: STEP,
        };
        // Whether the quad recheck accepts `derivative` as the tangent of
        // `y = f(x)`, `f` written in place of `sin(x - 1.0d12)`.
        let accepts = |f: &str, derivative: &str| {
            let dir = std::env::temp_dir().join(format!(
                "dfort-quad-recheck-{}-{}-{}",
                std::process::id(),
                f.len(),
                derivative.len()
            ));
            std::fs::create_dir_all(&dir).expect("temp dir");
            let mine = |text: String| text.replace("sin(x - 1.0d12)", f);
            std::fs::write(dir.join("prog.f90"), mine(prog.to_string())).expect("write");
            std::fs::write(dir.join("tangent.f90"), mine(tangent(derivative))).expect("write");
            let out = quad_tangent_agrees(&dir, false, &spec);
            let _ = std::fs::remove_dir_all(&dir);
            out
        };
        let agrees = |derivative: &str| accepts("sin(x - 1.0d12)", derivative);
        assert!(agrees("cos(x - 1.0d12)"));
        assert!(!agrees("1.001d0*cos(x - 1.0d12)"));
        // Faster than the double-precision steps: a truncation error,
        // which only a smaller step removes.
        let fast = |derivative: &str| accepts("sin(3.0d4*x)", derivative);
        assert!(fast("3.0d4*cos(3.0d4*x)"));
        assert!(!fast("3.003d4*cos(3.0d4*x)"));
    }
}
