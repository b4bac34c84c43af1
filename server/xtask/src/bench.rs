//! `cargo xtask bench`: parse+lower throughput on a generated workspace of mixed
//! free- and fixed-form files (the 100,000-line target), on all
//! cores and on one, with the process's peak memory.

use clap::Args;
use dfort_ide::host::{Host, HostConfig, TextChange};
use dfort_syntax::FortranParser;
use dfort_syntax::TextRange;
use rayon::prelude::*;
use std::fmt::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

#[derive(Args)]
pub struct BenchArgs {
    /// Total lines to generate.
    #[arg(long, default_value_t = 100_000)]
    lines: usize,
    /// Lines per file.
    #[arg(long, default_value_t = 2_000)]
    file_lines: usize,
    /// Timed repetitions (minimum and median are reported).
    #[arg(long, default_value_t = 7)]
    runs: usize,
    /// Also write the generated files into this directory.
    #[arg(long)]
    write_to: Option<PathBuf>,
}

/// One free-form module of about `lines` lines: module procedures with
/// loops, branches, array sections and calls.
pub fn free_file(k: usize, lines: usize) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "module gen{k}_mod\n  implicit none\n  integer, parameter :: dp = kind(1.d0)\n  real(dp) :: state{k}(100)\ncontains");
    let mut p = 0;
    while s.lines().count() < lines.saturating_sub(30) {
        let _ = write!(
            s,
            "  !---------------------------------------------------------------
  ! step{k}_{p}: one relaxation sweep of the generated model.
  !   n  number of grid points
  !   x  state (in), y  tendency (inout), f  diagnostic norm (out)
  !---------------------------------------------------------------
  subroutine step{k}_{p}(n, x, y, f)
    integer, intent(in) :: n
    real(dp), intent(in) :: x(n)
    real(dp), intent(inout) :: y(n)
    real(dp), intent(out) :: f
    integer :: i, j
    real(dp) :: t, h
    h = 1.0_dp / real(n + 1, dp)
    f = 0.0_dp
{loops}    y(1:n:2) = y(1:n:2) + state{k}(1)

    ! Damp the tendency where the state is negative, push it up where
    ! the state exceeds one.
    where (x < 0.0_dp)
      y = y * 0.5_dp
    elsewhere (x > 1.0_dp)
      y = y + x
    end where
    call helper{k}(n, y, f)
  end subroutine step{k}_{p}

",
            loops = sweep_loops("")
        );
        p += 1;
    }
    let _ = write!(
        s,
        "  subroutine helper{k}(n, y, f)
    integer, intent(in) :: n
    real(dp), intent(inout) :: y(n), f
    f = f + sum(y) + dot_product(y, y)
  end subroutine helper{k}
end module gen{k}_mod
"
    );
    s
}

/// The two loops of a generated relaxation sweep, after its `h` is set:
/// a second difference with a nonlinear source (multiplied by `factor`,
/// Fortran text appended to the source term) and a SELECT CASE over the
/// points. Shared by [`free_file`] and the workspace of
/// [`crate::bench_workspace`].
pub fn sweep_loops(factor: &str) -> String {
    format!(
        "
    ! Interior points: second difference and a nonlinear source.
    do i = 2, n - 1
      t = (2.0_dp*x(i) - x(i-1) - x(i+1)) / (h*h)
      if (t > 0.0_dp) then
        y(i) = y(i) + sin(t) * exp(-x(i)){factor}
      else if (t < -1.0_dp) then
        y(i) = y(i) - sqrt(abs(t))
      else
        y(i) = 0.5_dp * (y(i-1) + y(i+1))
      end if
      f = f + y(i)**2
    end do

    ! Every third point is doubled, the others clipped at zero.
    do j = 1, n
      select case (mod(j, 3))
      case (0)
        y(j) = y(j) * 2.0_dp
      case default
        y(j) = max(y(j), 0.0_dp)
      end select
    end do
"
    )
}

/// One fixed-form file of about `lines` lines: Fortran 77 subroutines with
/// labels, continuation lines, COMMON, GO TO and arithmetic IF.
fn fixed_file(k: usize, lines: usize) -> String {
    let mut s = String::new();
    let mut p = 0;
    while s.lines().count() < lines.saturating_sub(30) {
        let _ = write!(
            s,
            "C-----------------------------------------------------------------------
C     OLD{k}X{p}: generated legacy kernel {k}.{p}.
C     N  number of points,  X  state,  F  residual,  W  weight
C-----------------------------------------------------------------------
      SUBROUTINE OLD{k}X{p}(N, X, F, W)
      INTEGER N, I, J
      DOUBLE PRECISION X(N), F(N), W, H, T
      COMMON /PAR{k}/ T
      H = 1.0D0/DBLE(N+1)
C
C     Residual of the discretised equation at interior points.
      DO 10 I = 2, N-1
         F(I) = (2.0D0*X(I) - X(I-1) - X(I+1))/(H*H)
     &          - W*EXP(X(I))
   10 CONTINUE
C     Lower-triangular coupling.
      DO 30 J = 1, N
         DO 30 I = 1, J
            F(I) = F(I) + 1.0D-3*X(J)
   30 CONTINUE
      IF (N .LT. 3) GOTO 50
      F(1) = X(1)
      IF (F(1)) 40, 50, 40
   40 F(N) = X(N)
   50 CONTINUE
      RETURN
      END

"
        );
        p += 1;
    }
    s
}

pub fn generate(total_lines: usize, file_lines: usize) -> Vec<(PathBuf, String)> {
    let files = total_lines.div_ceil(file_lines.max(100)).max(1);
    (0..files)
        .map(|k| {
            if k % 2 == 0 {
                (
                    PathBuf::from(format!("gen{k}.f90")),
                    free_file(k, file_lines),
                )
            } else {
                (
                    PathBuf::from(format!("gen{k}.f")),
                    fixed_file(k, file_lines),
                )
            }
        })
        .collect()
}

/// A memory figure (`VmRSS:`, `VmHWM:`, ...) of a process (`"self"` or a
/// pid) from `/proc/<process>/status`, in MB.
pub fn proc_status_mb(process: &str, key: &str) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{process}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with(key))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

fn peak_rss_mb() -> Option<f64> {
    proc_status_mb("self", "VmHWM:")
}

/// (minimum, median) of the timings: the minimum is the figure least
/// disturbed by other load on the machine.
fn min_median(mut v: Vec<f64>) -> (f64, f64) {
    v.sort_by(|a, b| a.total_cmp(b));
    (v[0], v[v.len() / 2])
}

fn time_runs(sources: &[(PathBuf, String)], runs: usize) -> ((f64, f64), usize, usize) {
    let mut times = Vec::new();
    let mut units = 0;
    let mut errors = 0;
    for _ in 0..runs.max(1) {
        let input = sources.to_vec();
        let t = Instant::now();
        let snap = Host::from_sources(input, front_end_only()).snapshot();
        times.push(t.elapsed().as_secs_f64() * 1000.0);
        units = snap.program.units.len();
        let paths: Vec<PathBuf> = sources.iter().map(|(p, _)| p.clone()).collect();
        errors = dfort_ide::diagnostics::front_end_of(&snap, &paths)
            .iter()
            .filter(|(_, d)| d.severity == dfort_syntax::Severity::Error)
            .count();
        drop(snap);
    }
    (min_median(times), units, errors)
}

pub fn run(args: BenchArgs) -> ExitCode {
    let sources = generate(args.lines, args.file_lines);
    if let Some(dir) = &args.write_to {
        if let Err(e) = std::fs::create_dir_all(dir) {
            eprintln!("error: cannot create {}: {e}", dir.display());
            return ExitCode::from(1);
        }
        for (p, t) in &sources {
            let path = dir.join(p);
            if let Err(e) = std::fs::write(&path, t) {
                eprintln!("error: cannot write {}: {e}", path.display());
                return ExitCode::from(1);
            }
        }
    }
    let lines: usize = sources.iter().map(|(_, t)| t.lines().count()).sum();
    let comment_lines: usize = sources
        .iter()
        .map(|(_, t)| {
            t.lines()
                .filter(|l| {
                    let s = l.trim_start();
                    s.starts_with('!') || l.starts_with(['C', 'c', '*'])
                })
                .count()
        })
        .sum();
    let blank_lines: usize = sources
        .iter()
        .map(|(_, t)| t.lines().filter(|l| l.trim().is_empty()).count())
        .sum();
    let bytes: usize = sources.iter().map(|(_, t)| t.len()).sum();
    let fixed = sources
        .iter()
        .filter(|(p, _)| p.extension().is_some_and(|e| e == "f"))
        .count();
    println!(
        "workspace: {} files ({} free form, {} fixed form), {} lines ({} comment, {} blank), {:.1} MB",
        sources.len(),
        sources.len() - fixed,
        fixed,
        lines,
        comment_lines,
        blank_lines,
        bytes as f64 / 1e6
    );
    // Warm up (page in the grammar tables, start the thread pool).
    let _ = time_runs(&sources[..1], 1);
    let threads = rayon::current_num_threads();
    let parse_only = |runs: usize| {
        min_median(
            (0..runs.max(1))
                .map(|_| {
                    let t = Instant::now();
                    let n: usize = sources
                        .par_iter()
                        .map_init(FortranParser::new, |p, (path, text)| {
                            let form = HostConfig::default()
                                .form_for(path)
                                .unwrap_or(dfort_syntax::SourceForm::Free);
                            p.parse(path.clone(), text.clone(), form).chunks.len()
                        })
                        .sum();
                    std::hint::black_box(n);
                    t.elapsed().as_secs_f64() * 1000.0
                })
                .collect(),
        )
    };
    let (parse_min, parse_med) = parse_only(args.runs);
    println!("parse only, {threads} threads: min {parse_min:.0} ms, median {parse_med:.0} ms");
    let ((ms_all, ms_med), units, errors) = time_runs(&sources, args.runs);
    let peak_all = peak_rss_mb();
    let one = rayon::ThreadPoolBuilder::new().num_threads(1).build().ok();
    let ms_one = one
        .as_ref()
        .map(|pool| pool.install(|| time_runs(&sources, args.runs.min(3)).0 .0));
    if let Some(pool) = &one {
        let (min, _) = pool.install(|| parse_only(args.runs.min(3)));
        println!("parse only, 1 thread: min {min:.0} ms");
    }
    println!(
        "host front end (chunked parse+lower+link, no analysis), {threads} threads: min {ms_all:.0} ms, median {ms_med:.0} ms of {} runs; {:.0} klines/s, {:.1} MB/s at the minimum; {units} units, {errors} errors",
        args.runs,
        lines as f64 / ms_all,
        bytes as f64 / 1e3 / ms_all
    );
    if let Some(ms) = ms_one {
        println!(
            "host front end, 1 thread: min {ms:.0} ms (speed-up {:.2}x)",
            ms / ms_all
        );
    }
    // The command line's and the editor's load: the host (chunked parse,
    // lower, link) with the analyses' facts of every procedure nobody
    // calls (the editor's request).
    let host_ms = min_median(
        (0..args.runs.max(1))
            .map(|_| {
                let t = Instant::now();
                let snap = host_with(&sources).snapshot();
                std::hint::black_box((snap.program.units.len(), snap.analysis().roots.len()));
                t.elapsed().as_secs_f64() * 1000.0
            })
            .collect(),
    );
    println!(
        "host load with the analyses' facts (what dfort analyze and the editor do on open): min {:.0} ms, median {:.0} ms",
        host_ms.0, host_ms.1
    );
    // Cold analysis of the whole workspace through the one entry point:
    // every procedure nobody calls is a root with its intents' roles.
    let snap = Host::from_sources(sources.clone(), front_end_only()).snapshot();
    let request = dfort_analysis::facts::Request::default();
    let analysis_ms = min_median(
        (0..args.runs.max(1))
            .map(|_| {
                let t = Instant::now();
                let facts = dfort_analysis::facts::analyse(&snap.program, &request, None);
                std::hint::black_box(facts.units.len());
                t.elapsed().as_secs_f64() * 1000.0
            })
            .collect(),
    );
    println!(
        "analyses' facts of all {} units (activity, TBR, decisions, reports; cold, 1 thread): min {:.0} ms, median {:.0} ms",
        snap.program.units.len(),
        analysis_ms.0,
        analysis_ms.1
    );
    incremental(&sources, args.runs);
    drop(snap);
    if let Some(mb) = peak_all {
        println!("peak memory (VmHWM) after the {threads}-thread runs: {mb:.0} MB");
    }
    if errors > 0 {
        eprintln!("error: the generated workspace gave {errors} error diagnostics");
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}

/// A host holding `sources` (as files nobody has open).
fn host_with(sources: &[(PathBuf, String)]) -> Host {
    Host::from_sources(sources.to_vec(), HostConfig::default())
}

/// The host's settings for the front end alone: no procedure analysed.
fn front_end_only() -> HostConfig {
    HostConfig {
        others: false,
        ..HostConfig::default()
    }
}

/// Re-analysis after editing one subroutine (`helper0`, which the
/// `step0_*` routines call), through the host as the editor does it: the
/// edited chunk reparsed, the program relinked, and the analyses' facts
/// recomputed for the units whose inputs changed.
fn incremental(sources: &[(PathBuf, String)], runs: usize) {
    let original = "f = f + sum(y) + dot_product(y, y)";
    for (what, replacement) in [
        (
            "summary unchanged",
            "f = f + 2.0_dp*sum(y) + dot_product(y, y)",
        ),
        ("summary changed", "f = sum(y) + dot_product(y, y)"),
    ] {
        let Some((path, text)) = sources.first() else {
            return;
        };
        let Some(at) = text.find(original) else {
            return;
        };
        let mut times = Vec::new();
        let mut redone = (0, 0);
        for _ in 0..runs.max(1) {
            let mut host = host_with(sources);
            // The analyses run at their first read: before the timed edit.
            host.snapshot().analysis();
            let change = TextChange {
                range: Some(TextRange::new(at as u32, (at + original.len()) as u32)),
                text: replacement.to_string(),
            };
            let t = Instant::now();
            host.edit(path, &[change], 2);
            let snap = host.snapshot();
            redone = snap.analysis().recomputed();
            times.push(t.elapsed().as_secs_f64() * 1000.0);
        }
        let (min, med) = min_median(times);
        println!(
            "edit of one subroutine through the host ({what}): activity of {} unit(s) and TBR of {} recomputed, min {min:.2} ms, median {med:.2} ms",
            redone.0, redone.1
        );
    }
}
