//! `cargo xtask bench-inversion`: paper 003's Table 1 experiment — the integer
//! tape and the run time of Figure 10's adjoint when loop address indices
//! are recovered by inversion (Pi) against stored (Ps).
//!
//! Figure 10 (loop L of Figure 8 (a) inside an outer loop over `o`) comes
//! in two forms: as the paper writes it, with DO WHILE loops and explicit
//! counters (`p003_fig10.f90`, root `fig10`), and the Fortran way, with
//! counted DO loops (`p003_fig10_do.f90`, root `fig10_do`). For each form
//! the adjoint is generated twice, with [`Recording::Inversion`] (Pi, the
//! default) and [`Recording::Tbr`] (Ps, `--no-inversion`: every
//! overwritten index stored), and compiled with `gfortran -O2` beside the
//! original, the `dfort_stack` runtime and a driver ([`driver`]). The
//! driver takes the outer bound olB on its command line, sets the inner
//! bound ilB to 10 (as the paper), `a(0:olB+600)` and `p` to 1 (a fixed
//! point of the kernel: the values neither grow nor shrink into
//! denormals, which would slow the sweeps) and the adjoint of `a` to 1
//! (the adjoints double along the kernel's chains and reach Inf for large
//! olB; measured, the adjoint takes the same time as with zero adjoints),
//! runs the primal once and then the adjoint (forward and reverse sweep)
//! once, each timed with `system_clock`, and prints one line
//! ([`parse_run`]) with both times and the integer and real entries the
//! adjoint pushed (`dfort_stack_counts`). Every (form, recording, olB)
//! runs in a fresh process, one at a time, so the adjoint's time includes
//! growing its tape from empty (a second call, with the tape's storage
//! kept, was about 3 times faster at olB=10^6).
//!
//! Below the table, the paper's numbers for olB=10^6 and, per form, the
//! issue's two targets: an integer tape at least 20 times smaller with
//! inversion (at every olB) and a faster adjoint with inversion (at the
//! largest olB; the small ones' times are noise). A missed target is
//! reported, not an error; a missing gfortran, a failed build or a failed
//! run is (exit status 1).

use dfort::session::Session;
use dfort::verify::{
    compile, compile_in_order, gfortran_available, link, runtime_object, write_originals, Scratch,
};
use dfort_analysis::roots::RootSpec;
use dfort_codegen::adjoint::Recording;
use rayon::prelude::*;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

/// The inner loop bound, fixed as in the paper's experiments.
const ILB: u32 = 10;
/// `a` and `p` are declared `(0:olB+PAD)`; the kernel touches up to
/// `olB+499` (the paper's "size of a").
const PAD: u32 = 600;

#[derive(clap::Args)]
pub struct BenchInversionArgs {
    /// Outer loop bounds olB, comma-separated.
    #[arg(
        long,
        value_delimiter = ',',
        default_values_t = [100u32, 10_000, 1_000_000],
        value_parser = clap::value_parser!(u32).range(1..=2_000_000_000)
    )]
    outer: Vec<u32>,
    /// The directory holding p003_fig10.f90 and p003_fig10_do.f90.
    #[arg(long, default_value = "tests/fixtures/papers")]
    fixtures: PathBuf,
    /// The scratch directory (generated code, objects, drivers) is created
    /// under this one and removed at the end.
    #[arg(long, default_value = "target")]
    work_dir: PathBuf,
}

/// One form of Figure 10.
struct Form {
    label: &'static str,
    file: &'static str,
    root: &'static str,
}

const FORMS: [Form; 2] = [
    Form {
        label: "while",
        file: "p003_fig10.f90",
        root: "fig10",
    },
    Form {
        label: "do",
        file: "p003_fig10_do.f90",
        root: "fig10_do",
    },
];

/// What one driver run printed.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Run {
    olb: u64,
    primal_s: f64,
    adjoint_s: f64,
    /// Integer (and logical) entries the adjoint pushed.
    ints: u64,
    /// Real entries the adjoint pushed.
    reals: u64,
    /// The tape's peak size in bytes.
    peak: u64,
    /// Elements of `a`.
    size: u64,
}

/// Parses the driver's line:
/// `olb N primal_s T adjoint_s T ints N reals N peak B size N`.
fn parse_run(out: &str) -> Option<Run> {
    let words: Vec<&str> = out.split_whitespace().collect();
    let after = |key: &str| crate::bench_adjoint::value_after(&words, key);
    Some(Run {
        olb: after("olb")?.parse().ok()?,
        primal_s: after("primal_s")?.parse().ok()?,
        adjoint_s: after("adjoint_s")?.parse().ok()?,
        ints: after("ints")?.parse().ok()?,
        reals: after("reals")?.parse().ok()?,
        peak: after("peak")?.parse().ok()?,
        size: after("size")?.parse().ok()?,
    })
}

/// The driver timing `root` and `root_b` once each, for the olB given as
/// its first command-line argument. Names start with `dfb` so that they
/// cannot clash with the kernel's.
fn driver(root: &str) -> String {
    format!(
        "program dfort_bench_inversion
  use dfort_stack, only: dfort_stack_reset, dfort_stack_counts, dfort_stack_stats
  implicit none
  external {root}, {root}_b
  integer :: dfb_olb, dfb_ilb, dfb_lo, dfb_hi, dfb_ios
  real(8), allocatable :: dfb_a(:), dfb_ab(:), dfb_p(:)
  integer(8) :: dfb_c0, dfb_c1, dfb_rate, dfb_ints, dfb_reals, dfb_pushed, dfb_peak
  real(8) :: dfb_tp, dfb_ta
  character(len=32) :: dfb_arg
  call get_command_argument(1, dfb_arg)
  read (dfb_arg, *, iostat=dfb_ios) dfb_olb
  if (dfb_ios /= 0 .or. dfb_olb < 1) then
    write (*, '(a)') 'usage: bench OLB (a positive outer loop bound)'
    stop 2
  end if
  dfb_ilb = {ILB}
  dfb_lo = 0
  dfb_hi = dfb_olb + {PAD}
  allocate (dfb_a(dfb_lo:dfb_hi), dfb_ab(dfb_lo:dfb_hi), dfb_p(dfb_lo:dfb_hi))
  dfb_p = 1d0
  dfb_a = 1d0
  dfb_ab = 0d0
  call system_clock(dfb_c0, dfb_rate)
  call {root}(dfb_olb, dfb_ilb, dfb_a, dfb_p, dfb_lo, dfb_hi)
  call system_clock(dfb_c1)
  dfb_tp = dble(dfb_c1 - dfb_c0)/dble(dfb_rate)
  dfb_a = 1d0
  dfb_ab = 1d0
  call dfort_stack_reset()
  call system_clock(dfb_c0)
  call {root}_b(dfb_olb, dfb_ilb, dfb_a, dfb_ab, dfb_p, dfb_lo, dfb_hi)
  call system_clock(dfb_c1)
  dfb_ta = dble(dfb_c1 - dfb_c0)/dble(dfb_rate)
  call dfort_stack_counts(dfb_ints, dfb_reals)
  call dfort_stack_stats(dfb_pushed, dfb_peak)
  write (*, '(a, i0, a, es15.8, a, es15.8, a, i0, a, i0, a, i0, a, i0)') &
    & 'olb ', dfb_olb, ' primal_s ', dfb_tp, ' adjoint_s ', dfb_ta, &
    & ' ints ', dfb_ints, ' reals ', dfb_reals, ' peak ', dfb_peak, &
    & ' size ', dfb_hi - dfb_lo + 1
end program dfort_bench_inversion
"
    )
}

/// A form's two compiled drivers (`pi` and `ps`) in its scratch directory.
struct Built {
    scratch: Scratch,
}

/// Generates Pi and Ps of `form`'s root and compiles them with their
/// driver in `dir`.
fn build(form: &Form, fixtures: &Path, dir: PathBuf) -> Result<Built, String> {
    let path = fixtures.join(form.file);
    if !path.is_file() {
        return Err(format!(
            "{} not found (run from the repository root, or pass --fixtures)",
            path.display()
        ));
    }
    // The analyses' facts in each recording mode (one host each, as
    // `dfort adjoint` reads its files).
    let spec = RootSpec {
        name: form.root.to_string(),
        ..RootSpec::default()
    };
    let mut sessions = Vec::new();
    for recording in [Recording::Inversion, Recording::Tbr] {
        let (s, root, _) = Session::for_root(std::slice::from_ref(&path), spec.clone(), recording)
            .map_err(|e| format!("{}: {e}", form.file))?;
        sessions.push((s, root));
    }
    let (session, root) = &sessions[0];
    let unit = session.snap.program.unit(*root);
    // The driver calls `R(olb, ilb, a, p, lo, hi)` and
    // `R_b(olb, ilb, a, ab, p, lo, hi)`: check the kernel still has them.
    let names: Vec<String> = unit
        .args
        .iter()
        .map(|&a| unit.symbol(a).name.to_ascii_lowercase())
        .collect();
    let dn = dfort_codegen::tangent::derivative_names_of(session.snap.analysis(), *root);
    let with_adjoint: Vec<&str> = unit
        .args
        .iter()
        .zip(&names)
        .filter(|(a, _)| dn.contains_key(a))
        .map(|(_, n)| n.as_str())
        .collect();
    if names != ["olb", "ilb", "a", "p", "lo", "hi"] || with_adjoint != ["a"] {
        return Err(format!(
            "{}: expected the arguments (olb, ilb, a, p, lo, hi) with a active, found ({}) with ({}) active",
            form.root,
            names.join(", "),
            with_adjoint.join(", ")
        ));
    }
    let scratch = Scratch::at(dir, false)?;
    let originals = write_originals(&scratch, &session.sources())?;
    scratch.write("driver.f90", &driver(&unit.name))?;
    let flags = ["-O2"];
    let d = scratch.dir.as_path();
    let mut objects = compile_in_order(d, &originals, &flags)
        .map_err(|e| format!("{} does not compile: {e}", form.file))?;
    objects.push(runtime_object(d, &flags)?);
    for (tag, (s, root)) in ["pi", "ps"].into_iter().zip(&sessions) {
        let text = dfort_codegen::adjoint::adjoint_of(
            s.snap.analysis(),
            *root,
            "cargo xtask bench-inversion",
        )
        .map(|(text, _)| text)
        .map_err(|refusals| {
            format!(
                "{} ({tag}): no adjoint: {}",
                form.root,
                refusals
                    .first()
                    .map(|r| r.message.as_str())
                    .unwrap_or("nothing active")
            )
        })?;
        let file = format!("adjoint_{tag}.f90");
        scratch.write(&file, &text)?;
        let mut with = objects.clone();
        with.push(compile(d, &file, &flags)?);
        link(d, "driver.f90", &with, &flags, tag)?;
    }
    Ok(Built { scratch })
}

/// Runs `dir/<exe> olb`.
fn run_driver(dir: &Path, exe: &str, olb: u32) -> Result<Run, String> {
    let out = Command::new(dir.join(exe))
        .arg(olb.to_string())
        .current_dir(dir)
        .output()
        .map_err(|e| format!("cannot run {exe}: {e}"))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        let all = format!("{stdout}{}", String::from_utf8_lossy(&out.stderr));
        let first = dfort::verify::first_line(&all);
        return Err(format!("{exe} {olb} failed ({}): {first}", out.status));
    }
    parse_run(&stdout).ok_or_else(|| format!("{exe} {olb} printed no result line: {stdout}"))
}

/// Pi and Ps of one form at one olB.
struct Row<'a> {
    form: &'a str,
    olb: u32,
    pi: Result<Run, String>,
    ps: Result<Run, String>,
}

const HEADER: [&str; 10] = [
    "form",
    "olB",
    "time P µs",
    "time Ps µs",
    "time Pi µs",
    "size of a",
    "integer tape Ps",
    "integer tape Pi",
    "ratio Ps/Pi",
    "real tape",
];

fn cells(row: &Row) -> [String; 10] {
    let dash = || "–".to_string();
    let us = |s: f64| format!("{:.1}", s * 1e6);
    let (pi, ps) = (row.pi.as_ref().ok(), row.ps.as_ref().ok());
    let primal = [pi, ps]
        .iter()
        .flatten()
        .map(|r| r.primal_s)
        .min_by(f64::total_cmp);
    let real_tape = match (pi, ps) {
        (Some(i), Some(s)) if i.reals == s.reals => i.reals.to_string(),
        (Some(i), Some(s)) => format!("{}/{}", s.reals, i.reals),
        (Some(r), None) | (None, Some(r)) => r.reals.to_string(),
        (None, None) => dash(),
    };
    [
        row.form.to_string(),
        row.olb.to_string(),
        primal.map(us).unwrap_or_else(dash),
        ps.map(|r| us(r.adjoint_s)).unwrap_or_else(dash),
        pi.map(|r| us(r.adjoint_s)).unwrap_or_else(dash),
        pi.or(ps).map(|r| r.size.to_string()).unwrap_or_else(dash),
        ps.map(|r| r.ints.to_string()).unwrap_or_else(dash),
        pi.map(|r| r.ints.to_string()).unwrap_or_else(dash),
        match (ps, pi) {
            (Some(s), Some(i)) => format!("{:.1}", s.ints as f64 / i.ints.max(1) as f64),
            _ => dash(),
        },
        real_tape,
    ]
}

fn table(rows: &[Row]) -> String {
    let all: Vec<[String; 10]> = rows.iter().map(cells).collect();
    let width = |c: usize| {
        all.iter()
            .map(|r| r[c].chars().count())
            .chain([HEADER[c].chars().count()])
            .max()
            .unwrap_or(0)
    };
    let widths: Vec<usize> = (0..HEADER.len()).map(width).collect();
    let line = |cells: &[&str]| {
        let mut s = String::new();
        for (c, text) in cells.iter().enumerate() {
            let pad = widths[c] - text.chars().count();
            if c > 0 {
                s.push_str(" | ");
            }
            // The form is left-aligned, the numbers right-aligned.
            if c == 0 {
                let _ = write!(s, "{text}{}", " ".repeat(pad));
            } else {
                let _ = write!(s, "{}{text}", " ".repeat(pad));
            }
        }
        s.push('\n');
        s
    };
    let mut out = line(&HEADER);
    let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
    out.push_str(&line(&rule.iter().map(String::as_str).collect::<Vec<_>>()).replace(" | ", "-+-"));
    for r in &all {
        out.push_str(&line(&r.iter().map(String::as_str).collect::<Vec<_>>()));
    }
    out
}

/// The targets for one form: the integer tape at least 20 times
/// smaller with inversion (at every olB), and the adjoint faster with
/// inversion (at the largest olB, where the times are not noise).
fn targets(form: &str, rows: &[Row]) -> String {
    let timed: Vec<(&Row, &Run, &Run)> = rows
        .iter()
        .filter(|r| r.form == form)
        .filter_map(|r| Some((r, r.pi.as_ref().ok()?, r.ps.as_ref().ok()?)))
        .collect();
    let Some(worst) = timed
        .iter()
        .map(|(_, i, s)| s.ints as f64 / i.ints.max(1) as f64)
        .min_by(f64::total_cmp)
    else {
        return format!("{form}: targets not evaluated (no run completed)");
    };
    let met = |ok: bool| if ok { "met" } else { "NOT met" };
    let mut s = format!(
        "{form}: integer tape >= 20x smaller with inversion: {} (smallest ratio {worst:.1}x)",
        met(worst >= 20.0)
    );
    if let Some((r, i, p)) = timed.iter().max_by_key(|(r, _, _)| r.olb) {
        let _ = write!(
            s,
            "; adjoint faster with inversion at olB={}: {} (Ps {:.1} µs, Pi {:.1} µs, Ps/Pi {:.2})",
            r.olb,
            met(i.adjoint_s < p.adjoint_s),
            p.adjoint_s * 1e6,
            i.adjoint_s * 1e6,
            p.adjoint_s / i.adjoint_s.max(f64::MIN_POSITIVE)
        );
    }
    s
}

const PAPER: &str = "paper 003 Table 1, olB=10^6, ilB=10: time P 297109 µs, Ps 1154878 µs, \
Pi 1133269 µs; size of a 1000499 (olB+499); integer tape Ps 52·10^6, Pi 2·10^6 (ratio 26); \
real tape 2·10^7";

fn bench(args: &BenchInversionArgs) -> Result<bool, String> {
    gfortran_available().map_err(|e| format!("{e}; cargo xtask bench-inversion needs gfortran"))?;
    let root = args
        .work_dir
        .join(format!("bench-inversion-{}", std::process::id()));
    std::fs::remove_dir_all(&root).ok();
    std::fs::create_dir_all(&root).map_err(|e| format!("cannot create {}: {e}", root.display()))?;
    // Absolute, so that the drivers run from their own directory.
    let scratch = Scratch::at(std::fs::canonicalize(&root).unwrap_or(root), false)?;
    let built: Vec<Built> = FORMS
        .par_iter()
        .map(|f| build(f, &args.fixtures, scratch.dir.join(f.label)))
        .collect::<Result<_, _>>()?;
    let mut rows = Vec::new();
    for &olb in &args.outer {
        for (form, b) in FORMS.iter().zip(&built) {
            rows.push(Row {
                form: form.label,
                olb,
                pi: run_driver(&b.scratch.dir, "pi", olb),
                ps: run_driver(&b.scratch.dir, "ps", olb),
            });
        }
    }
    println!(
        "Figure 10 adjoint, ilB={ILB}: P primal, Ps indices stored (--no-inversion), \
Pi indices recovered by inversion (default); one run each, gfortran -O2; \
tapes in entries pushed"
    );
    print!("{}", table(&rows));
    println!("{PAPER}");
    for form in &FORMS {
        println!("{}", targets(form.label, &rows));
    }
    let mut ok = true;
    for r in &rows {
        for e in [&r.pi, &r.ps].into_iter().filter_map(|x| x.as_ref().err()) {
            eprintln!("error: {} olB={}: {e}", r.form, r.olb);
            ok = false;
        }
    }
    Ok(ok)
}

pub fn run(args: BenchInversionArgs) -> ExitCode {
    match bench(&args) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_line(pi_ints: u64) -> Run {
        parse_run(&format!(
            " olb 100 primal_s  2.70E-05 adjoint_s  9.30E-05 ints {pi_ints} reals 2000 peak 17600 size 701\n"
        ))
        .unwrap()
    }

    #[test]
    fn parses_the_driver_line() {
        let r = run_line(200);
        assert_eq!(r.olb, 100);
        assert_eq!((r.ints, r.reals, r.peak, r.size), (200, 2000, 17600, 701));
        assert!((r.primal_s - 2.7e-5).abs() < 1e-15);
        assert!((r.adjoint_s - 9.3e-5).abs() < 1e-15);
        assert!(parse_run("nothing").is_none());
        assert!(parse_run("olb 1 primal_s x adjoint_s 1 ints 1 reals 1 peak 1 size 1").is_none());
    }

    #[test]
    fn table_and_targets() {
        let pi = run_line(200);
        let ps = Run {
            ints: 5200,
            adjoint_s: 1e-4,
            ..pi
        };
        let rows = [
            Row {
                form: "do",
                olb: 100,
                pi: Ok(pi),
                ps: Ok(ps),
            },
            Row {
                form: "while",
                olb: 100,
                pi: Err("boom".into()),
                ps: Ok(ps),
            },
        ];
        let t = table(&rows);
        assert!(t.lines().next().unwrap().starts_with("form  | olB"), "{t}");
        let do_row = t.lines().nth(2).unwrap();
        for cell in [
            "27.0", "100.0", "93.0", "701", "5200", "200", "26.0", "2000",
        ] {
            assert!(do_row.contains(cell), "{cell} in {do_row}");
        }
        assert!(t.lines().nth(3).unwrap().contains('–'), "{t}");
        let d = targets("do", &rows);
        assert!(
            d.contains("smaller with inversion: met (smallest ratio 26.0x)"),
            "{d}"
        );
        assert!(d.contains("faster with inversion at olB=100: met"), "{d}");
        assert!(targets("while", &rows).contains("not evaluated"));
    }

    #[test]
    fn driver_calls_both_with_the_bounds_the_kernel_needs() {
        let d = driver("fig10_do");
        assert!(d.contains("external fig10_do, fig10_do_b"), "{d}");
        assert!(d.contains("call fig10_do(dfb_olb, dfb_ilb, dfb_a, dfb_p, dfb_lo, dfb_hi)"));
        assert!(
            d.contains("call fig10_do_b(dfb_olb, dfb_ilb, dfb_a, dfb_ab, dfb_p, dfb_lo, dfb_hi)")
        );
        assert!(d.contains("dfb_hi = dfb_olb + 600") && d.contains("dfb_ilb = 10"));
    }
}
