//! `cargo xtask mitgcm --source DIR --experiment NAME`: dfort's adjoint of
//! a MITgcm adjoint experiment's `the_main_loop`, checked against the
//! gradients TAF and Tapenade printed for it (the experiment's
//! `results/output_adm.txt` and `output_tap_adj.txt`), in the layout of
//! MITgcm's `grdchk` (issue 40).
//!
//! Given a local MITgcm checkout (nothing of MITgcm is in this
//! repository), it
//! 1. builds the experiment's forward model with MITgcm's own genmake2
//!    and make in `verification/NAME/build_dfort` (skipped when built);
//! 2. prepares `run_dfort` from `input_ad` and runs the forward model once,
//!    timed;
//! 3. imports the build's configuration (`dfort import Makefile`) and
//!    writes the adjoint of `the_main_loop` with the experiment's roles:
//!    dependent `fc`, independent the state the control sets, taken after
//!    the call that maps the control (`--after ctrl_init_variables`);
//! 4. writes a driver that boots the model as MITgcm's `main` does, seeds
//!    `fc`'s adjoint, runs `the_main_loop_b` once, and then, for each
//!    position of the reference's gradient check, perturbs the control
//!    file by ± `grdchk_eps` and runs the forward model twice;
//! 5. compiles it with the build's flags, links it with the model's
//!    objects, runs it (timed, with its peak memory) and prints each
//!    position's adjoint gradient, centred difference and `1 - fd/adj`
//!    beside the reference's.
//!
//! The pressure solver `CG2D` (conjugate gradients on a symmetric
//! operator) gets a supplied adjoint (`dfort adjoint --supplied cg2d`):
//! one more solve with the solution's adjoint as right-hand side
//! ([`SOLVER_ADJOINT`], written here as TAF's `CG2D_MAD` works), where
//! differentiating the solver's iterations gives the derivative of the
//! iterations actually run, which differs from that of the solution by
//! the solver's convergence (`--differentiate-solver` does that).
//!
//! With `--snapshots S` the time loop is checkpointed with a binomial
//! schedule of S snapshots (a build of its own, [`checkpointed_mods`]), and
//! the run prints the steps the schedule ran again beside the binomial
//! formula's number; `--steps N` runs N time steps (a run directory of its
//! own), comparing the adjoint with the centred differences only. The
//! driver prints the bytes pushed to the tape and its peak.
//!
//! Exits 0 when every adjoint gradient equals TAF's to `--tolerance`
//! (relative) and a checkpointed run's schedule is the formula's, 1
//! otherwise, 2 when it cannot run. Not part of the tests: it needs
//! MITgcm's source and takes minutes.

use crate::product;
use clap::Args;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

#[derive(Args)]
pub struct MitgcmArgs {
    /// A MITgcm checkout (the directory holding `model`, `pkg`, `tools`
    /// and `verification`).
    #[arg(long)]
    source: PathBuf,
    /// The experiment under `verification/`.
    #[arg(long, default_value = "tutorial_tracer_adjsens")]
    experiment: String,
    /// The dfort binary (default: built by cargo).
    #[arg(long)]
    server: Option<PathBuf>,
    /// gfortran's optimisation for the adjoint's file.
    #[arg(long, default_value = "-O1")]
    opt: String,
    /// Largest relative difference from TAF's adjoint gradient accepted.
    #[arg(long, default_value_t = 1e-8)]
    tolerance: f64,
    /// Checkpoint the time loop with this many snapshots: the build
    /// takes `the_main_loop.F` with `C$AD BINOMIAL-CKP nTimeSteps S 1`
    /// before its `DO iloop` loop and TAF's own checkpointing levels
    /// switched off (`#undef ALLOW_TAMC_CHECKPOINTING`, as MITgcm's
    /// Tapenade route does), from a mods directory of its own. 0: the
    /// same build without the mark, every step recorded (the
    /// un-checkpointed adjoint, whose step count TAF's levels no longer
    /// limit; with `DFORT_TAPE_MEMORY=MB` its tape spills to a file).
    #[arg(long, value_name = "S")]
    snapshots: Option<u32>,
    /// Run this many time steps instead of the experiment's (the
    /// reference gradients are then not comparable: the adjoint is
    /// compared with the centred differences).
    #[arg(long, value_name = "N")]
    steps: Option<u64>,
    /// Differentiate the pressure solver's iterations (`CG2D`) instead of
    /// supplying its adjoint (by default its adjoint is one more solve,
    /// [`SOLVER_ADJOINT`], as TAF's `CG2D_MAD` is).
    #[arg(long)]
    differentiate_solver: bool,
}

/// What an experiment's control is, as dfort's roles see it.
struct Experiment {
    /// The control's file name (`grdchkvarname`).
    control: &'static str,
    /// The model state the control sets, and the subscripts that follow
    /// i, j, k, bi, bj in it (the tracer's number).
    state: &'static str,
    trailing: &'static str,
    /// The headers declaring that state.
    headers: &'static [&'static str],
    /// The call after which the state holds the control's values.
    after: &'static str,
    /// The control file's levels: `Nr` for a 3-D control, `1` for a 2-D
    /// one (whose positions are at k = 1 of the state's first level).
    levels: &'static str,
}

fn experiment(name: &str) -> Result<Experiment, String> {
    match name {
        "tutorial_tracer_adjsens" => Ok(Experiment {
            control: "xx_ptr1",
            state: "ptracer",
            trailing: ",1",
            headers: &["PTRACERS_SIZE.h", "PTRACERS_FIELDS.h"],
            after: "ctrl_init_variables",
            levels: "Nr",
        }),
        // The control `xx_genarr2d1` is added to the air temperature of the
        // lowest level (`theta(:,:,1,:,:)`) by the experiment's own
        // `ctrl_map_ini_genarr`, called from `ctrl_init_variables`.
        "hs94.1x64x5" => Ok(Experiment {
            control: "xx_genarr2d1",
            state: "theta",
            trailing: "",
            headers: &["DYNVARS.h"],
            after: "ctrl_init_variables",
            levels: "1",
        }),
        _ => Err(format!(
            "no roles known for experiment `{name}` (known: tutorial_tracer_adjsens, hs94.1x64x5)"
        )),
    }
}

/// One position of the reference's gradient check.
#[derive(Debug)]
struct Position {
    i: i64,
    j: i64,
    k: i64,
    bi: i64,
    bj: i64,
    adjoint: f64,
    fd: f64,
}

pub fn run(args: MitgcmArgs) -> ExitCode {
    match compare(&args) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

fn sh(dir: &Path, script: &str, log: &Path) -> Result<(), String> {
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!("{script} > '{}' 2>&1", log.display()))
        .current_dir(dir)
        .status()
        .map_err(|e| format!("cannot run sh: {e}"))?;
    if out.success() {
        Ok(())
    } else {
        Err(format!(
            "`{script}` failed in {} (see {})",
            dir.display(),
            log.display()
        ))
    }
}

fn compare(args: &MitgcmArgs) -> Result<bool, String> {
    let exp = experiment(&args.experiment)?;
    let source = args
        .source
        .canonicalize()
        .map_err(|e| format!("{}: {e}", args.source.display()))?;
    let dir = source.join("verification").join(&args.experiment);
    if !dir.join("code_ad").is_dir() {
        return Err(format!("{} has no code_ad", dir.display()));
    }
    let dfort = match &args.server {
        Some(s) => s.clone(),
        None => product::dfort_binary()?,
    };
    let taf = references(&dir.join("results/output_adm.txt"))?;
    let tap = references(&dir.join("results/output_tap_adj.txt")).unwrap_or_default();

    // 1. The forward model, with MITgcm's own build.
    let variant = args.snapshots.map_or(String::new(), |s| format!("_ckp{s}"));
    let build_name = format!("build_dfort{variant}");
    let build = dir.join(&build_name);
    std::fs::create_dir_all(&build).map_err(|e| e.to_string())?;
    let mods = match args.snapshots {
        Some(s) => {
            let mods = format!("code_dfort{variant}");
            checkpointed_mods(&source, &dir, &dir.join(&mods), s)?;
            format!("'../{mods} ../code_ad'")
        }
        None => "../code_ad".to_string(),
    };
    if !build.join("mitgcmuv").is_file() {
        println!("building the forward model in {} ...", build.display());
        let start = Instant::now();
        sh(
            &build,
            &format!(
                "../../../tools/genmake2 -rootdir ../../.. -mods {mods} \
                 -optfile ../../../tools/build_options/linux_amd64_gfortran"
            ),
            &build.join("genmake2.log"),
        )?;
        sh(&build, "make depend", &build.join("make_depend.log"))?;
        sh(&build, "make -j2", &build.join("make.log"))?;
        println!("  built in {:.0} s", start.elapsed().as_secs_f64());
    }

    // 2. The run directory and the forward run.
    let steps = args.steps.map_or(String::new(), |n| format!("_{n}steps"));
    let rundir = dir.join(format!("run_dfort{variant}{steps}"));
    if !rundir.is_dir() {
        std::fs::create_dir_all(&rundir).map_err(|e| e.to_string())?;
        sh(&rundir, "ln -s ../input_ad/* .", &rundir.join("link.log"))?;
        if rundir.join("prepare_run").exists() {
            sh(&rundir, "./prepare_run", &rundir.join("prepare_run.log"))?;
        }
        if let Some(n) = args.steps {
            with_steps(&rundir.join("data"), n)?;
        }
    }
    let start = Instant::now();
    sh(
        &rundir,
        &format!("../{build_name}/mitgcmuv"),
        &rundir.join("forward.txt"),
    )?;
    let forward_time = start.elapsed().as_secs_f64();
    let forward = std::fs::read_to_string(rundir.join("forward.txt")).unwrap_or_default();
    let forward_fc = forward
        .lines()
        .find_map(|l| l.split("global fc =").nth(1))
        .map(|v| v.trim().to_string())
        .unwrap_or_default();
    println!("forward model: {forward_time:.2} s, global fc = {forward_fc}");

    // 3. The adjoint.
    sh(
        &build,
        &format!("'{}' import Makefile", dfort.display()),
        &build.join("dfort_import.log"),
    )?;
    let out = build.join("dfort_adjoint");
    let start = Instant::now();
    sh(
        &build,
        &format!(
            "'{}' adjoint --root the_main_loop --independent {} --dependent fc --after {} --output-dir dfort_adjoint{}",
            dfort.display(),
            exp.state,
            exp.after,
            match args.differentiate_solver {
                true => "",
                false => " --supplied cg2d",
            }
        ),
        &build.join("dfort_adjoint.log"),
    )?;
    let adjoint_path = out.join("the_main_loop_b.f90");
    let adjoint = std::fs::read_to_string(&adjoint_path).map_err(|e| e.to_string())?;
    println!(
        "dfort adjoint: {:.1} s, {} lines, {:.1} MB, {} routines",
        start.elapsed().as_secs_f64(),
        adjoint.lines().count(),
        adjoint.len() as f64 / 1e6,
        adjoint
            .lines()
            .filter(|l| l.trim_start().starts_with("subroutine "))
            .count()
    );

    // The solver's adjoint, named as the adjoint's header says it calls it.
    let solver = crate::supplied::called_as(&adjoint, "cg2d").map(|(name, _)| name);
    let solver_file = match &solver {
        Some(name) => {
            let text = SOLVER_ADJOINT.replace("SOLVER_ADJOINT_NAME", name);
            std::fs::write(out.join("cg2d_adjoint.F"), text).map_err(|e| e.to_string())?;
            println!("the adjoint calls {name}, the solver's supplied adjoint (cg2d_adjoint.F)");
            "cg2d_adjoint"
        }
        None => "",
    };

    // 4. The driver.
    let decls = common_declarations(&adjoint, &[&format!("{}b", exp.state), "fcb"])?;
    let driver = driver_text(&exp, &taf, &decls);
    std::fs::write(out.join("dfort_grdchk.F"), driver).map_err(|e| e.to_string())?;

    // 5. Compile, link, run.
    let makefile = std::fs::read_to_string(build.join("Makefile")).map_err(|e| e.to_string())?;
    let var = |name: &str| {
        makefile
            .lines()
            .find_map(|l| l.strip_prefix(name)?.trim_start().strip_prefix('='))
            .unwrap_or("")
            .trim()
            .to_string()
    };
    let (defines, fflags) = (var("DEFINES"), var("FFLAGS"));
    let start = Instant::now();
    sh(
        &out,
        &format!(
            "gfortran -c -O2 dfort_stack.f90 \
             && for f in dfort_grdchk {solver_file}; do \
               cat $f.F | cpp -traditional -P {defines} -I.. | ../../../../tools/set64bitConst.sh > $f.f \
               && gfortran {fflags} -ffixed-line-length-none -O1 -c $f.f || exit 1; done \
             && gfortran {fflags} -ffree-line-length-none {} -c the_main_loop_b.f90 \
             && gfortran -mcmodel=medium -o dfort_adm dfort_grdchk.o {solver_object} the_main_loop_b.o dfort_stack.o \
                $(ls ../*.o | grep -v '/main\\.o$')",
            args.opt,
            solver_object = match solver_file {
                "" => String::new(),
                f => format!("{f}.o"),
            }
        ),
        &out.join("compile.log"),
    )?;
    println!(
        "compiled and linked (adjoint with {}): {:.0} s",
        args.opt,
        start.elapsed().as_secs_f64()
    );
    let start = Instant::now();
    sh(
        &rundir,
        &format!("/usr/bin/time -v ../{build_name}/dfort_adjoint/dfort_adm"),
        &rundir.join("dfort_grdchk.txt"),
    )?;
    let wall = start.elapsed().as_secs_f64();
    // The driver's output and /usr/bin/time's report.
    let report = std::fs::read_to_string(rundir.join("dfort_grdchk.txt")).unwrap_or_default();
    let peak_kb: f64 = report
        .lines()
        .find_map(|l| l.trim().strip_prefix("Maximum resident set size (kbytes):"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0.0);
    let seconds = |label: &str| -> Option<f64> {
        report
            .lines()
            .find_map(|l| l.trim().strip_prefix(label))
            .and_then(|v| v.trim().parse().ok())
    };
    let adjoint_time = seconds("dfort adjoint run (s):");
    let (boot, forward) = (
        seconds("dfort boot (s):"),
        seconds("dfort forward run (s):"),
    );
    let shown = |t: Option<f64>| t.map_or("?".to_string(), |t| format!("{t:.3}"));
    println!(
        "driver: {wall:.1} s wall ({} s in the_main_loop_b), peak {:.0} MB",
        shown(adjoint_time),
        peak_kb / 1024.0
    );
    // The adjoint's run against the forward's, both from the model's
    // boot, without the gradient check's runs.
    if let (Some(b), Some(f), Some(a)) = (boot, forward, adjoint_time) {
        println!(
            "run: boot {b:.3} s; the_main_loop {f:.3} s, the_main_loop_b {a:.3} s ({:.1}x); boot and adjoint {:.3} s, {:.1}x boot and forward",
            a / f,
            b + a,
            (b + a) / (b + f)
        );
    }
    let stat = |label: &str| -> Vec<u64> {
        report
            .lines()
            .find_map(|l| l.trim().strip_prefix(label))
            .map(|v| {
                v.split_whitespace()
                    .filter_map(|x| x.parse().ok())
                    .collect()
            })
            .unwrap_or_default()
    };
    let (pushed, tape_peak) = (
        stat("dfort tape pushed (bytes):"),
        stat("dfort tape peak (bytes):"),
    );
    let schedule = stat("dfort steps run again, reversed:");
    println!(
        "tape: {:.2} GB pushed, peak {:.0} MB",
        pushed.first().copied().unwrap_or(0) as f64 / 1e9,
        tape_peak.first().copied().unwrap_or(0) as f64 / 1e6
    );
    let mut schedule_ok = true;
    if let (Some(s @ 1..), [advanced, reversed]) = (args.snapshots, schedule.as_slice()) {
        let n = *reversed;
        let formula = dfort_ir::schedule::recomputed_steps(n, u64::from(s));
        schedule_ok = *advanced == formula;
        println!(
            "binomial checkpointing with {s} snapshots: {n} steps reversed, {advanced} run again (formula t({n}, {s}) = {formula})"
        );
    }

    // The comparison.
    let ours: Vec<(f64, f64)> = report
        .lines()
        .filter_map(|l| l.trim().strip_prefix("dfort grad:"))
        .map(|l| {
            let v: Vec<f64> = l
                .split_whitespace()
                .take(2)
                .map(|x| x.parse().unwrap_or(f64::NAN))
                .collect();
            (v[0], v.get(1).copied().unwrap_or(f64::NAN))
        })
        .collect();
    if ours.len() != taf.len() {
        return Err(format!(
            "the driver printed {} gradients for {} positions (see {})",
            ours.len(),
            taf.len(),
            rundir.join("dfort_grdchk.txt").display()
        ));
    }
    let rel = |a: f64, b: f64| (a - b).abs() / b.abs();
    if args.steps.is_some() {
        // Another run length than the references': adjoint against the
        // centred differences only.
        println!(
            "{:>2} {:>4} {:>4} {:>4}  {:>22} {:>22} {:>9}",
            "#", "i", "j", "k", "dfort adjoint", "finite differences", "1-fd/adj"
        );
        for (n, (p, (adj, fd))) in taf.iter().zip(&ours).enumerate() {
            println!(
                "{:>2} {:>4} {:>4} {:>4}  {adj:>22.14e} {fd:>22.11e} {:>9.1e}",
                n + 1,
                p.i,
                p.j,
                p.k,
                1.0 - fd / adj
            );
        }
        return Ok(schedule_ok && ours.iter().all(|(a, f)| a.is_finite() && f.is_finite()));
    }
    let within = taf
        .iter()
        .zip(&ours)
        .filter(|(p, (a, _))| rel(*a, p.adjoint) <= args.tolerance)
        .count();
    println!(
        "{:>2} {:>4} {:>4} {:>4}  {:>22} {:>22} {:>9} {:>22} {:>9}   finite differences: dfort, TAF, Tapenade",
        "#", "i", "j", "k", "dfort adjoint", "TAF", "rel.", "Tapenade", "rel."
    );
    for (n, (p, (adj, fd))) in taf.iter().zip(&ours).enumerate() {
        let t = tap.get(n);
        println!(
            "{:>2} {:>4} {:>4} {:>4}  {adj:>22.14e} {:>22.14e} {:>9.1e} {:>22} {:>9}   {fd:.11e}, {:.11e}, {}",
            n + 1,
            p.i,
            p.j,
            p.k,
            p.adjoint,
            rel(*adj, p.adjoint),
            t.map_or("-".into(), |t| format!("{:.14e}", t.adjoint)),
            t.map_or("-".into(), |t| format!("{:.1e}", rel(*adj, t.adjoint))),
            p.fd,
            t.map_or("-".into(), |t| format!("{:.11e}", t.fd)),
        );
    }
    println!(
        "{within} of {} adjoint gradients within {:e} of TAF's",
        taf.len(),
        args.tolerance
    );
    Ok(within == taf.len() && schedule_ok)
}

/// The mods directory of a checkpointed build: `the_main_loop.F` (the
/// experiment's, else the model's) with `C$AD BINOMIAL-CKP nTimeSteps S 1`
/// before its plain time loop (no mark for 0 snapshots), and the experiment's
/// `AUTODIFF_OPTIONS.h` without TAF's checkpointing levels, which would
/// replace that loop by TAF's nest of `ilev` loops.
fn checkpointed_mods(source: &Path, dir: &Path, mods: &Path, snapshots: u32) -> Result<(), String> {
    std::fs::create_dir_all(mods).map_err(|e| e.to_string())?;
    let read = |p: &Path| std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()));
    let options = read(&dir.join("code_ad/AUTODIFF_OPTIONS.h"))
        .or_else(|_| read(&source.join("pkg/autodiff/AUTODIFF_OPTIONS.h")))?;
    let options = options.replace(
        "#define ALLOW_TAMC_CHECKPOINTING",
        "#undef ALLOW_TAMC_CHECKPOINTING",
    );
    let main_loop = read(&dir.join("code_ad/the_main_loop.F"))
        .or_else(|_| read(&source.join("model/src/the_main_loop.F")))?;
    let mut out = String::new();
    let mut marked = false;
    for line in main_loop.lines() {
        let code = line.to_ascii_lowercase().replace(' ', "");
        if !marked && code == "doiloop=1,ntimesteps" {
            if snapshots > 0 {
                let _ = writeln!(out, "C$AD BINOMIAL-CKP nTimeSteps {snapshots} 1");
            }
            marked = true;
        }
        let _ = writeln!(out, "{line}");
    }
    if !marked {
        return Err("the_main_loop.F has no `DO iloop = 1, nTimeSteps` loop to mark".into());
    }
    for (name, text) in [("AUTODIFF_OPTIONS.h", options), ("the_main_loop.F", out)] {
        let path = mods.join(name);
        if read(&path).ok().as_deref() != Some(text.as_str()) {
            std::fs::write(&path, text).map_err(|e| e.to_string())?;
        }
    }
    Ok(())
}

/// The run's `data` (a link into `input_ad`) replaced by a copy whose run
/// ends after `n` steps: its `endTime` and `nTimeSteps` lines give way to
/// `nTimeSteps = n`.
fn with_steps(data: &Path, n: u64) -> Result<(), String> {
    let text = std::fs::read_to_string(data).map_err(|e| format!("{}: {e}", data.display()))?;
    let mut out = String::new();
    let mut done = false;
    for line in text.lines() {
        let key = line.trim_start().to_ascii_lowercase();
        if key.starts_with("endtime") || key.starts_with("ntimesteps") {
            if !done {
                let _ = writeln!(out, " nTimeSteps = {n},");
                done = true;
            }
            continue;
        }
        let _ = writeln!(out, "{line}");
    }
    if !done {
        return Err(format!("{}: no endTime or nTimeSteps line", data.display()));
    }
    std::fs::remove_file(data).map_err(|e| e.to_string())?;
    std::fs::write(data, out).map_err(|e| e.to_string())
}

/// The gradient-check positions of a reference output: the `grad-res`
/// position lines (`… i j k bi bj iobc fc fc+eps fc-eps`), each followed
/// by its gradients line and `ADM adjoint_gradient` / `finite-diff_grad`.
fn references(path: &Path) -> Result<Vec<Position>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut out: Vec<Position> = Vec::new();
    // Each position line is followed by its gradients' line, alike in form.
    let mut gradients_next = false;
    for l in text.lines() {
        let t = l.trim();
        if let Some(rest) = t.strip_prefix("grad-res") {
            let f: Vec<&str> = rest.split_whitespace().collect();
            // proc # i j k bi bj iobc fc fc+ fc-
            let numbers = f.len() == 11 && f[8].contains('E');
            if numbers && std::mem::take(&mut gradients_next) {
                continue;
            }
            if numbers {
                gradients_next = true;
                let n = |k: usize| f[k].parse::<i64>().unwrap_or(0);
                out.push(Position {
                    i: n(2),
                    j: n(3),
                    k: n(4),
                    bi: n(5),
                    bj: n(6),
                    adjoint: f64::NAN,
                    fd: f64::NAN,
                });
            }
        } else if let Some(v) = t.split("ADM  adjoint_gradient       =").nth(1) {
            if let Some(p) = out.last_mut() {
                p.adjoint = v.trim().parse().unwrap_or(f64::NAN);
            }
        } else if let Some(v) = t.split("ADM  finite-diff_grad       =").nth(1) {
            if let Some(p) = out.last_mut() {
                p.fd = v.trim().parse().unwrap_or(f64::NAN);
            }
        }
    }
    if out.is_empty() || out.iter().any(|p| p.adjoint.is_nan()) {
        return Err(format!("{}: no gradient check found", path.display()));
    }
    Ok(out)
}

/// The declarations, in the root's adjoint routine, of the COMMON blocks
/// holding `names` (the adjoints of the independent and the dependent):
/// the block lines and their members' type declarations, each on one
/// line.
/// The supplied adjoint of MITgcm's `CG2D(cg2d_b, cg2d_x, firstResidual,
/// minResidualSq, lastResidual, numIters, nIterMin, myThid)`, which
/// solves A x = b for x from the first guess x with a symmetric A: x
/// does not depend on the first guess, so b̄ += A⁻¹x̄ (one more call of
/// CG2D, from a zero first guess, on copies: every argument is left as
/// it was) over the interior points CG2D reads, and x̄ = 0. CG2D also
/// scales its right-hand side in place; that scaled copy's adjoint is
/// taken as zero, as TAF's flow directives for CG2D take it (the caller
/// does not read it after the call). `SOLVER_ADJOINT_NAME` is replaced by
/// the name the adjoint calls.
const SOLVER_ADJOINT: &str = r#"#include "CPP_OPTIONS.h"
C     The adjoint of CG2D supplied to dfort by `cargo xtask mitgcm`.
      SUBROUTINE SOLVER_ADJOINT_NAME(
     I     rhs, rhsb, sol, solb,
     I     firstRes, minResSq, lastRes, numIters, nIterMin, myThid )
      IMPLICIT NONE
#include "SIZE.h"
#include "EEPARAMS.h"
#include "PARAMS.h"
      _RL rhs (1-OLx:sNx+OLx,1-OLy:sNy+OLy,nSx,nSy)
      _RL rhsb(1-OLx:sNx+OLx,1-OLy:sNy+OLy,nSx,nSy)
      _RL sol (1-OLx:sNx+OLx,1-OLy:sNy+OLy,nSx,nSy)
      _RL solb(1-OLx:sNx+OLx,1-OLy:sNy+OLy,nSx,nSy)
      _RL firstRes, minResSq, lastRes
      INTEGER numIters, nIterMin, myThid
      _RL tb(1-OLx:sNx+OLx,1-OLy:sNy+OLy,nSx,nSy)
      _RL tx(1-OLx:sNx+OLx,1-OLy:sNy+OLy,nSx,nSy)
      _RL r1, r2, r3
      INTEGER its, imin, i, j, bi, bj
      DO bj=myByLo(myThid),myByHi(myThid)
       DO bi=myBxLo(myThid),myBxHi(myThid)
        DO j=1-OLy,sNy+OLy
         DO i=1-OLx,sNx+OLx
          tb(i,j,bi,bj) = solb(i,j,bi,bj)
          tx(i,j,bi,bj) = 0. _d 0
         ENDDO
        ENDDO
       ENDDO
      ENDDO
      its  = numIters
      imin = nIterMin
      CALL CG2D( tb, tx, r1, r2, r3, its, imin, myThid )
      DO bj=myByLo(myThid),myByHi(myThid)
       DO bi=myBxLo(myThid),myBxHi(myThid)
        DO j=1,sNy
         DO i=1,sNx
          rhsb(i,j,bi,bj) = rhsb(i,j,bi,bj) + tx(i,j,bi,bj)
         ENDDO
        ENDDO
        DO j=1-OLy,sNy+OLy
         DO i=1-OLx,sNx+OLx
          solb(i,j,bi,bj) = 0. _d 0
         ENDDO
        ENDDO
       ENDDO
      ENDDO
      RETURN
      END
"#;

fn common_declarations(adjoint: &str, names: &[&str]) -> Result<Vec<String>, String> {
    let root_end = adjoint
        .find("end subroutine the_main_loop_b")
        .ok_or("no the_main_loop_b in the adjoint")?;
    // Join continued lines.
    let mut lines: Vec<String> = Vec::new();
    let mut cont = false;
    for l in adjoint[..root_end].lines() {
        let t = l.trim();
        let piece = t.strip_prefix('&').unwrap_or(t).trim_start();
        if cont {
            let last = lines.last_mut().expect("a continued line");
            last.push_str(piece);
        } else {
            lines.push(piece.to_string());
        }
        cont = lines.last().is_some_and(|x| x.ends_with('&'));
        if cont {
            let last = lines.last_mut().expect("a line");
            last.pop();
        }
    }
    let mut out = Vec::new();
    for name in names {
        let block = lines
            .iter()
            .find(|l| {
                l.starts_with("common /")
                    && l.split('/')
                        .nth(2)
                        .is_some_and(|m| m.split(',').any(|x| x.trim() == *name))
            })
            .ok_or(format!(
                "the adjoint declares no COMMON block holding `{name}`"
            ))?;
        let members: Vec<String> = block
            .split('/')
            .nth(2)
            .unwrap_or("")
            .split(',')
            .map(|m| m.trim().to_string())
            .collect();
        for m in &members {
            let decl = lines
                .iter()
                .find(|l| {
                    l.split("::")
                        .nth(1)
                        .is_some_and(|d| d.trim().split('(').next() == Some(m.as_str()))
                })
                .ok_or(format!("no declaration of `{m}` in the_main_loop_b"))?;
            out.push(decl.clone());
        }
        out.push(block.clone());
    }
    Ok(out)
}

/// The fixed-form driver: MITgcm's boot, one forward run for the cost,
/// one adjoint run, then centred differences at each position.
fn driver_text(exp: &Experiment, positions: &[Position], decls: &[String]) -> String {
    let mut d = String::new();
    let l = |d: &mut String, s: &str| {
        let _ = writeln!(d, "      {s}");
    };
    let _ = writeln!(
        d,
        "C     Written by cargo xtask mitgcm: dfort's adjoint of THE_MAIN_LOOP"
    );
    let _ = writeln!(
        d,
        "C     checked at the positions of the reference gradient check."
    );
    let _ = writeln!(d, "#include \"PACKAGES_CONFIG.h\"");
    let _ = writeln!(d, "#include \"CPP_OPTIONS.h\"");
    l(&mut d, "PROGRAM DFORT_GRDCHK");
    l(
        &mut d,
        "USE dfort_stack, only: dfort_stack_stats, dfort_ckp_stats",
    );
    l(&mut d, "IMPLICIT NONE");
    for h in ["SIZE.h", "EEPARAMS.h", "PARAMS.h"]
        .iter()
        .chain(exp.headers)
        .chain(["CTRL_SIZE.h", "CTRL.h", "GRDCHK.h", "cost.h"].iter())
    {
        let _ = writeln!(d, "#include \"{h}\"");
    }
    for decl in decls {
        l(&mut d, decl);
    }
    let n = positions.len();
    l(&mut d, "INTEGER myThid, myIter, dummyComm, ip, k, bi, bj");
    l(
        &mut d,
        "_RL myTime, myTimeb, fcref, fcp, fcm, adj, fd, eps, xx0",
    );
    l(
        &mut d,
        &format!("_RL xx(1-OLx:sNx+OLx,1-OLy:sNy+OLy,{},nSx,nSy)", exp.levels),
    );
    l(
        &mut d,
        &format!(
            "_RL adx(1-OLx:sNx+OLx,1-OLy:sNy+OLy,{},nSx,nSy)",
            exp.levels
        ),
    );
    l(&mut d, "CHARACTER*(80) fname");
    l(
        &mut d,
        &format!("INTEGER posi({n}), posj({n}), posk({n}), posbi({n}), posbj({n})"),
    );
    let list = |f: &dyn Fn(&Position) -> i64| {
        positions
            .iter()
            .map(|p| f(p).to_string())
            .collect::<Vec<_>>()
            .join(",")
    };
    l(&mut d, &format!("DATA posi /{}/", list(&|p| p.i)));
    l(&mut d, &format!("DATA posj /{}/", list(&|p| p.j)));
    l(&mut d, &format!("DATA posk /{}/", list(&|p| p.k)));
    l(&mut d, &format!("DATA posbi /{}/", list(&|p| p.bi)));
    l(&mut d, &format!("DATA posbj /{}/", list(&|p| p.bj)));
    l(
        &mut d,
        "INTEGER*8 c0, c1, crate, tbytes, tpeak, cadv, crev, cb, cf",
    );
    l(&mut d, "CALL SYSTEM_CLOCK(cb, crate)");
    l(&mut d, "CALL EEBOOT( dummyComm )");
    l(&mut d, "myThid = 1");
    l(&mut d, "CALL INITIALISE_FIXED( myThid )");
    l(&mut d, "CALL COST_DEPENDENT_INIT ( myThid )");
    l(&mut d, "myTime = startTime");
    l(&mut d, "myIter = nIter0");
    l(&mut d, "CALL SYSTEM_CLOCK(cf)");
    l(
        &mut d,
        "PRINT '(A,F10.3)', ' dfort boot (s): ', DBLE(cf-cb)/DBLE(crate)",
    );
    l(&mut d, "CALL THE_MAIN_LOOP( myTime, myIter, myThid )");
    l(&mut d, "CALL SYSTEM_CLOCK(c0)");
    l(
        &mut d,
        "PRINT '(A,F10.3)', ' dfort forward run (s): ', DBLE(c0-cf)/DBLE(crate)",
    );
    l(&mut d, "fcref = fc");
    l(&mut d, "myTime = startTime");
    l(&mut d, "myIter = nIter0");
    l(&mut d, "fcb = 1.0 _d 0");
    l(&mut d, "myTimeb = 0.0 _d 0");
    l(&mut d, "CALL SYSTEM_CLOCK(c0, crate)");
    l(
        &mut d,
        "CALL THE_MAIN_LOOP_B( myTime, myTimeb, myIter, myThid )",
    );
    l(&mut d, "CALL SYSTEM_CLOCK(c1)");
    l(
        &mut d,
        "PRINT '(A,F10.3)', ' dfort adjoint run (s): ', DBLE(c1-c0)/DBLE(crate)",
    );
    // The control's mapping ends with a halo exchange (`EXCH_XY_RL`,
    // `EXCH_XYZ_RL` in pkg/ctrl's `ctrl_map_genarr*`): the gradient with
    // respect to a control element is its state element's plus those of
    // its halo images, which MITgcm's own adjoint of the exchange adds in.
    l(&mut d, "DO bj = 1, nSy");
    l(&mut d, " DO bi = 1, nSx");
    l(&mut d, &format!("  DO k = 1, {}", exp.levels));
    l(
        &mut d,
        &format!(
            "   adx(:,:,k,bi,bj) = {}b(:,:,k,bi,bj{})",
            exp.state, exp.trailing
        ),
    );
    l(&mut d, "  ENDDO");
    l(&mut d, " ENDDO");
    l(&mut d, "ENDDO");
    l(
        &mut d,
        &format!(
            "CALL EXCH1_RL_AD(adx, OLx, OLx, OLy, OLy, {}, OLx, OLy, EXCH_UPDATE_CORNERS, myThid)",
            exp.levels
        ),
    );
    l(&mut d, "CALL DFORT_STACK_STATS(tbytes, tpeak)");
    l(&mut d, "CALL DFORT_CKP_STATS(cadv, crev)");
    l(
        &mut d,
        "PRINT '(A,I16)', ' dfort tape pushed (bytes): ', tbytes",
    );
    l(
        &mut d,
        "PRINT '(A,I16)', ' dfort tape peak (bytes): ', tpeak",
    );
    l(
        &mut d,
        "PRINT '(A,2I10)', ' dfort steps run again, reversed: ', cadv, crev",
    );
    l(
        &mut d,
        "PRINT '(A,1PE22.14)', ' ref_cost_function: ', fcref",
    );
    l(&mut d, "eps = grdchk_eps");
    l(&mut d, &format!("fname = '{}.0000000000'", exp.control));
    l(&mut d, &format!("DO ip = 1, {n}"));
    l(
        &mut d,
        " adj = adx(posi(ip),posj(ip),posk(ip),posbi(ip),posbj(ip))",
    );
    l(
        &mut d,
        &format!(
            " CALL READ_REC_3D_RL(fname, ctrlprec, {}, xx, 1, 0, myThid)",
            exp.levels
        ),
    );
    l(
        &mut d,
        " xx0 = xx(posi(ip),posj(ip),posk(ip),posbi(ip),posbj(ip))",
    );
    for (sign, var) in [("+", "fcp"), ("-", "fcm")] {
        l(
            &mut d,
            &format!(" xx(posi(ip),posj(ip),posk(ip),posbi(ip),posbj(ip)) = xx0 {sign} eps"),
        );
        l(
            &mut d,
            &format!(
                " CALL WRITE_REC_3D_RL(fname, ctrlprec, {}, xx, 1, 0, myThid)",
                exp.levels
            ),
        );
        l(&mut d, " myTime = startTime");
        l(&mut d, " myIter = nIter0");
        l(&mut d, " CALL THE_MAIN_LOOP( myTime, myIter, myThid )");
        l(&mut d, &format!(" {var} = fc"));
    }
    l(
        &mut d,
        " xx(posi(ip),posj(ip),posk(ip),posbi(ip),posbj(ip)) = xx0",
    );
    l(
        &mut d,
        &format!(
            " CALL WRITE_REC_3D_RL(fname, ctrlprec, {}, xx, 1, 0, myThid)",
            exp.levels
        ),
    );
    l(&mut d, " fd = (fcp - fcm) / (2.0 _d 0 * eps)");
    l(
        &mut d,
        " PRINT '(A,1P2E24.15,A,1P3E19.11)', ' dfort grad: ', adj, fd, ' grad-res ', adj, fd, 1.0 _d 0 - fd/adj",
    );
    l(
        &mut d,
        " PRINT '(A,5I5,1P3E19.11)', ' grad-res ', ip, posi(ip), posj(ip), posk(ip), posbi(ip), fcref, fcp, fcm",
    );
    l(&mut d, "ENDDO");
    l(&mut d, "END");
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reference_gradient_check_is_read() {
        let text = "\
 grad-res  proc    #    i    j    k   bi   bj iobc       fc ref            fc + eps           fc - eps
 grad-res     0    1   15    5    4    1    1    1   1.84102723381E+14  1.84102723378E+14  1.84102723384E+14
 grad-res     0    1    1 1881    0    1    1    1  -3.23242721513E+07 -3.23242187500E+07  1.65204971181E-06
(PID.TID 0000.0001)  ADM  ref_cost_function      =  1.84102723380947E+14
(PID.TID 0000.0001)  ADM  adjoint_gradient       = -3.23242721513045E+07
(PID.TID 0000.0001)  ADM  finite-diff_grad       = -3.23242187500000E+07
";
        let dir = std::env::temp_dir().join(format!("dfort-mitgcm-ref-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("output_adm.txt");
        std::fs::write(&f, text).unwrap();
        let p = references(&f).unwrap();
        assert_eq!(p.len(), 1);
        assert_eq!((p[0].i, p[0].j, p[0].k, p[0].bi, p[0].bj), (15, 5, 4, 1, 1));
        assert_eq!(p[0].adjoint, -3.23242721513045e7);
        assert_eq!(p[0].fd, -3.232421875e7);
    }

    #[test]
    fn the_adjoint_blocks_are_declared_on_one_line_each() {
        let adjoint = "subroutine the_main_loop_b(mytime, mytimeb, myiter, mythid)
  real(8) :: ptracerb(1 - olx:snx + olx, 1 - oly:sny + oly, nr, &
      & nsx, nsy, ptracers_num)
  real(8) :: gptrnm1b(2)
  real(8) :: fcb
  real(8) :: dfort_pad_glofc
  common /ptracers_fields_b/ ptracerb, gptrnm1b
  common /cost_r_b/ fcb, dfort_pad_glofc
end subroutine the_main_loop_b
";
        let d = common_declarations(adjoint, &["ptracerb", "fcb"]).unwrap();
        assert_eq!(
            d,
            vec![
                "real(8) :: ptracerb(1 - olx:snx + olx, 1 - oly:sny + oly, nr, nsx, nsy, ptracers_num)",
                "real(8) :: gptrnm1b(2)",
                "common /ptracers_fields_b/ ptracerb, gptrnm1b",
                "real(8) :: fcb",
                "real(8) :: dfort_pad_glofc",
                "common /cost_r_b/ fcb, dfort_pad_glofc",
            ]
        );
    }
}
