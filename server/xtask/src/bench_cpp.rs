//! `cargo xtask bench-cpp`: what the C preprocessor costs (issue 18). A
//! generated CPP-heavy workspace in the ocean-model style — fixed-form
//! `.F` routines, each starting with `#include "CPP_OPTIONS.h"` and
//! including ten headers of PARAMETERs and COMMON blocks, with `_RL`
//! type macros, `2.0 _d 0` literals (`-D_d=D`), `#ifdef ALLOW_*` blocks
//! and a function-like macro — is loaded into the host (parse, lower,
//! link, the editor's analyses) as the command line loads it, against the
//! same workspace already preprocessed (its output as plain `.f` files,
//! the preprocessor off). Then an edit inside one routine, as the editor
//! sends it: edit to new snapshot with diagnostics and inlay hints.
//!
//! Prints both load times (minimum and median), the overhead, and the
//! edit latencies (p50, p95).

use dfort_ide::hints::{inlay_hints, HintKinds};
use dfort_ide::host::{Host, HostConfig, TextChange};
use dfort_ide::preprocessing::CppConfig;
use dfort_syntax::TextRange;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

#[derive(clap::Args)]
pub struct BenchCppArgs {
    /// Routines (one `.F` file each).
    #[arg(long, default_value_t = 200)]
    files: usize,
    /// Timed repetitions of the load (minimum and median are reported).
    #[arg(long, default_value_t = 5)]
    runs: usize,
    /// Edits replayed into one routine.
    #[arg(long, default_value_t = 50)]
    edits: usize,
}

/// The headers: options (including two more), sizes, and ten of COMMON
/// blocks; (name, text).
fn headers() -> Vec<(String, String)> {
    let mut h = vec![
        (
            "CPP_OPTIONS.h".to_string(),
            "#include \"PACKAGES_CONFIG.h\"\n#include \"CPP_EEOPTIONS.h\"\n#define ALLOW_DIFFUSION\n"
                .to_string(),
        ),
        (
            "PACKAGES_CONFIG.h".to_string(),
            "#define ALLOW_COST\n#undef ALLOW_MONITOR\n".to_string(),
        ),
        (
            "CPP_EEOPTIONS.h".to_string(),
            "#define _RL Real*8\n#define _RS Real*4\n#define _ADD(a, b) ( (a) + (b) )\n".to_string(),
        ),
        (
            "SIZE.h".to_string(),
            "      INTEGER sNx, sNy, Nr\n      PARAMETER ( sNx = 16, sNy = 12, Nr = 8 )\n"
                .to_string(),
        ),
    ];
    for k in 1..=9 {
        let mut t = String::new();
        let _ = writeln!(t, "C     COMMON block {k} of the generated model.");
        let _ = writeln!(t, "      _RL fld{k}a(sNx, sNy, Nr), fld{k}b(sNx, sNy)");
        let _ = writeln!(t, "      _RS msk{k}(sNx, sNy)");
        let _ = writeln!(t, "      COMMON /blk{k}/ fld{k}a, fld{k}b, msk{k}");
        let _ = writeln!(t, "#ifdef ALLOW_COST");
        let _ = writeln!(t, "      _RL cst{k}");
        let _ = writeln!(t, "      COMMON /cst{k}/ cst{k}");
        let _ = writeln!(t, "#endif");
        h.push((format!("FIELDS{k}.h"), t));
    }
    h
}

/// Routine `k`: about `loops` loop nests over the COMMON fields.
fn routine(k: usize, loops: usize) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "#include \"CPP_OPTIONS.h\"");
    let _ = writeln!(s, "      SUBROUTINE STEP{k}( myThid, dt )");
    let _ = writeln!(s, "      IMPLICIT NONE");
    let _ = writeln!(s, "#include \"SIZE.h\"");
    for h in 1..=9 {
        let _ = writeln!(s, "#include \"FIELDS{h}.h\"");
    }
    let _ = writeln!(s, "      INTEGER myThid, i, j, n");
    let _ = writeln!(s, "      _RL dt, tmp");
    for l in 0..loops {
        let f = l % 9 + 1;
        let g = (l + 4) % 9 + 1;
        let _ = writeln!(s, "      DO n = 1, Nr");
        let _ = writeln!(s, "       DO j = 2, sNy - 1");
        let _ = writeln!(s, "        DO i = 2, sNx - 1");
        let _ = writeln!(s, "         tmp = _ADD(fld{f}a(i+1,j,n), fld{f}a(i-1,j,n))");
        let _ = writeln!(
            s,
            "         fld{f}a(i,j,n) = fld{f}a(i,j,n) + 0.25 _d 0 * dt * tmp"
        );
        let _ = writeln!(s, "     &        * msk{f}(i,j) - 1.0 _d -3 * fld{g}b(i,j)");
        let _ = writeln!(s, "        ENDDO");
        let _ = writeln!(s, "       ENDDO");
        let _ = writeln!(s, "      ENDDO");
        let _ = writeln!(s, "#ifdef ALLOW_COST");
        let _ = writeln!(s, "      cst{f} = cst{f} + 0.5 _d 0 * fld{f}b(2,2)**2");
        let _ = writeln!(s, "#endif");
    }
    let _ = writeln!(s, "      RETURN");
    let _ = writeln!(s, "      END");
    s
}

fn min_median(mut v: Vec<f64>) -> (f64, f64) {
    v.sort_by(|a, b| a.total_cmp(b));
    (v[0], v[v.len() / 2])
}

fn percentile(mut v: Vec<f64>, p: f64) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[((v.len() as f64 - 1.0) * p).round() as usize]
}

/// Loads `files` into a host with `cpp` and builds the snapshot: ms.
fn load_ms(files: &[(PathBuf, String)], cpp: &CppConfig) -> f64 {
    let t = Instant::now();
    let mut host = Host::new(HostConfig {
        cpp: cpp.clone(),
        ..HostConfig::default()
    });
    for (p, text) in files {
        host.set_text(p, text, false, 0);
    }
    let snap = host.snapshot();
    std::hint::black_box((snap.program.units.len(), snap.analysis().roots.len()));
    t.elapsed().as_secs_f64() * 1000.0
}

pub fn run(args: BenchCppArgs) -> ExitCode {
    let dir = std::env::temp_dir().join(format!("dfort-bench-cpp-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    if let Err(e) = std::fs::create_dir_all(&dir) {
        eprintln!("error: cannot create {}: {e}", dir.display());
        return ExitCode::from(1);
    }
    let write =
        |p: &Path, t: &str| std::fs::write(p, t).map_err(|e| format!("{}: {e}", p.display()));
    let mut header_lines = 0;
    for (name, text) in headers() {
        header_lines += text.lines().count();
        if let Err(e) = write(&dir.join(name), &text) {
            eprintln!("error: {e}");
            return ExitCode::from(1);
        }
    }
    let sources: Vec<(PathBuf, String)> = (0..args.files)
        .map(|k| (dir.join(format!("step{k}.F")), routine(k, 12)))
        .collect();
    for (p, t) in &sources {
        if let Err(e) = write(p, t) {
            eprintln!("error: {e}");
            return ExitCode::from(1);
        }
    }
    let cpp = CppConfig {
        forced: None,
        include: vec![dir.clone()],
        define: vec![("_d".into(), "D".into())],
    };
    // The same workspace preprocessed: the preprocessor's output as `.f`.
    let read = |p: &Path| std::fs::read_to_string(p).ok();
    let expanded: Vec<(PathBuf, String)> = sources
        .iter()
        .map(|(p, t)| {
            let out = dfort_syntax::cpp::preprocess(p, t, &cpp.options(true), &read);
            (p.with_extension("f"), out.text)
        })
        .collect();
    let lines: usize = sources.iter().map(|(_, t)| t.lines().count()).sum();
    let out_lines: usize = expanded.iter().map(|(_, t)| t.lines().count()).sum();
    // Both load without errors.
    let mut host = Host::new(HostConfig {
        cpp: cpp.clone(),
        ..HostConfig::default()
    });
    for (p, t) in &sources {
        host.set_text(p, t, false, 0);
    }
    let snap = host.snapshot();
    let errors: usize = sources
        .iter()
        .map(|(p, _)| {
            snap.diagnostics(p)
                .iter()
                .filter(|d| d.severity == dfort_syntax::Severity::Error)
                .count()
        })
        .sum();
    println!(
        "cpp-heavy workspace: {} .F files, {lines} lines, {} headers ({header_lines} lines), {out_lines} lines after preprocessing; {} units, {errors} errors",
        sources.len(),
        headers().len(),
        snap.program.units.len()
    );
    if errors > 0 {
        eprintln!("error: the generated workspace has {errors} errors");
        return ExitCode::from(1);
    }
    let off = CppConfig {
        forced: Some(false),
        ..CppConfig::default()
    };
    let _ = load_ms(&expanded, &off);
    let runs = args.runs.max(1);
    let (with_min, with_med) = min_median((0..runs).map(|_| load_ms(&sources, &cpp)).collect());
    let (without_min, without_med) =
        min_median((0..runs).map(|_| load_ms(&expanded, &off)).collect());
    println!(
        "load (host: preprocess, parse, lower, link, analyses): with the preprocessor min {with_min:.0} ms, median {with_med:.0} ms; already preprocessed min {without_min:.0} ms, median {without_med:.0} ms; overhead {:+.1}% at the minimum",
        (with_min / without_min - 1.0) * 100.0
    );
    // Edits in one open routine: a literal changed and changed back.
    let (path, text) = &sources[0];
    let mut host = Host::new(HostConfig {
        cpp: cpp.clone(),
        ..HostConfig::default()
    });
    for (p, t) in &sources {
        host.set_text(p, t, p == path, 1);
    }
    // The analyses run at their first read: before the timed edits.
    host.snapshot().analysis();
    let at = text.find("0.25 _d 0").unwrap_or(0) as u32;
    let mut times = Vec::new();
    for e in 0..args.edits.max(1) {
        let new = if e % 2 == 0 { "0.35" } else { "0.25" };
        let t = Instant::now();
        host.edit(
            path,
            &[TextChange {
                range: Some(TextRange::new(at, at + 4)),
                text: new.to_string(),
            }],
            e as i32 + 2,
        );
        let snap = host.snapshot();
        let d = snap.diagnostics(path);
        let h = inlay_hints(
            &snap,
            path,
            TextRange::new(0, u32::MAX),
            HintKinds::default(),
        );
        std::hint::black_box((d.len(), h.len()));
        times.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    println!(
        "edit in a .F file with 10 includes (of {} files): edit to diagnostics + inlay hints p50 {:.1} ms, p95 {:.1} ms",
        sources.len(),
        percentile(times.clone(), 0.5),
        percentile(times, 0.95)
    );
    let _ = std::fs::remove_dir_all(&dir);
    ExitCode::SUCCESS
}
