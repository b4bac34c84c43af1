//! `cargo xtask check-lapack`: runs `dfort check` over Reference LAPACK's
//! `SRC` and `BLAS/SRC` (with their subdirectories `DEPRECATED` and
//! `VARIANTS`) and times it. LAPACK is not in this repository: the source comes from the
//! Python package index (the `cmeel-lapack` source distribution carries
//! Reference LAPACK 3.12.1 unchanged), downloaded once with `curl`,
//! checked against its SHA-256, and unpacked into a cache directory.
//! Needs network access, so it is not part of the tests.

use crate::product;
use clap::Args;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

const URL: &str = "https://files.pythonhosted.org/packages/f2/cd/fd4adf6dbc7d926bbafc407d2b6b24fd15625fdd11a2af74d1a5bade08e9/cmeel_lapack-3.12.1.tar.gz";
const SHA256: &str = "fddc2042ff62dece4b3ff7d63e5628585534ccb1b615fae620c7e453ca9dc23f";
const TOP: &str = "cmeel_lapack-3.12.1/lapack";

#[derive(Args)]
pub struct CheckLapackArgs {
    /// Where the download and the unpacked tree are kept (default: the
    /// system's temporary directory).
    #[arg(long)]
    cache: Option<PathBuf>,
    /// An unpacked LAPACK tree to use instead of the download (the
    /// directory holding `SRC` and `BLAS`).
    #[arg(long)]
    lapack: Option<PathBuf>,
    /// How many timed runs.
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// The dfort binary (default: built by cargo).
    #[arg(long)]
    server: Option<PathBuf>,
}

pub fn run(args: CheckLapackArgs) -> ExitCode {
    match check(&args) {
        Ok(clean) if clean => ExitCode::SUCCESS,
        Ok(_) => ExitCode::from(1),
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

fn check(args: &CheckLapackArgs) -> Result<bool, String> {
    let tree = match &args.lapack {
        Some(t) => t.clone(),
        None => fetch(&args.cache.clone().unwrap_or_else(std::env::temp_dir))?,
    };
    let dfort = match &args.server {
        Some(s) => s.clone(),
        None => product::dfort_binary()?,
    };
    let mut files = Vec::new();
    for dir in ["SRC", "BLAS/SRC"] {
        collect(&tree.join(dir), &mut files);
    }
    files.sort();
    let lines: usize = files
        .iter()
        .filter_map(|f| std::fs::read(f).ok())
        .map(|b| b.iter().filter(|&&c| c == b'\n').count())
        .sum();
    println!("Reference LAPACK: {} files, {lines} lines", files.len());
    let mut clean = true;
    let mut times = Vec::new();
    for _ in 0..args.runs.max(1) {
        let start = Instant::now();
        let out = Command::new(&dfort)
            .arg("check")
            .args(&files)
            .current_dir(&tree)
            .output()
            .map_err(|e| format!("cannot run {}: {e}", dfort.display()))?;
        times.push(start.elapsed().as_secs_f64());
        let report = String::from_utf8_lossy(&out.stdout);
        let with_errors: std::collections::BTreeSet<&str> = report
            .lines()
            .filter(|l| l.contains(": error: "))
            .filter_map(|l| l.split(':').next())
            .collect();
        let summary = String::from_utf8_lossy(&out.stderr);
        println!(
            "{} — {} file(s) with errors, {:.2} s",
            summary.trim(),
            with_errors.len(),
            start.elapsed().as_secs_f64()
        );
        for f in with_errors.iter().take(20) {
            println!("  {f}");
        }
        clean &= with_errors.is_empty() && out.status.success();
    }
    times.sort_by(f64::total_cmp);
    println!(
        "dfort check: median {:.2} s over {} run(s)",
        times[times.len() / 2],
        times.len()
    );
    Ok(clean)
}

/// The Fortran files in `dir` and its subdirectories.
fn collect(dir: &Path, files: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        let fortran = p.extension().and_then(|x| x.to_str()).is_some_and(|x| {
            matches!(x.to_ascii_lowercase().as_str(), "f" | "f90" | "for" | "f77")
        });
        if p.is_dir() {
            collect(&p, files);
        } else if fortran {
            files.push(p);
        }
    }
}

/// The unpacked tree in `cache`, downloaded and unpacked when missing.
pub(crate) fn fetch(cache: &Path) -> Result<PathBuf, String> {
    let tree = cache.join(TOP);
    if tree.join("SRC").is_dir() {
        return Ok(tree);
    }
    std::fs::create_dir_all(cache).map_err(|e| e.to_string())?;
    let archive = cache.join("cmeel_lapack-3.12.1.tar.gz");
    run_tool(
        Command::new("curl")
            .args(["-sSfL", "-o"])
            .arg(&archive)
            .arg(URL),
        "curl",
    )?;
    let sum = Command::new("sha256sum")
        .arg(&archive)
        .output()
        .map_err(|e| format!("cannot run sha256sum: {e}"))?;
    let got = String::from_utf8_lossy(&sum.stdout);
    if got.split_whitespace().next() != Some(SHA256) {
        return Err(format!(
            "{} does not have SHA-256 {SHA256}",
            archive.display()
        ));
    }
    run_tool(
        Command::new("tar")
            .arg("xzf")
            .arg(&archive)
            .arg("-C")
            .arg(cache)
            .arg(TOP),
        "tar",
    )?;
    Ok(tree)
}

fn run_tool(cmd: &mut Command, name: &str) -> Result<(), String> {
    let status = cmd
        .status()
        .map_err(|e| format!("cannot run {name}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{name} failed ({status})"))
    }
}
