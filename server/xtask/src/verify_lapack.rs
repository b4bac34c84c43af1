//! `cargo xtask verify-lapack`: `dfort verify --sanitize` on Reference
//! BLAS and LAPACK routines as shipped (tests/reference-lapack.toml: each
//! root with the reference routines it calls), in the three recording
//! modes. LAPACK is not in this repository: the tree is the one `cargo
//! xtask check-lapack` downloads (Reference LAPACK 3.12.1 from the Python
//! package index, checked against its SHA-256), or `--lapack DIR`. Exits 1
//! when any kernel fails in any mode.

use crate::bench_adjoint::{load_manifest, Kernel};
use crate::{check_lapack, product};
use clap::Args;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

#[derive(Args)]
pub struct VerifyLapackArgs {
    /// The kernel list (paths relative to the LAPACK tree).
    #[arg(long, default_value = "tests/reference-lapack.toml")]
    manifest: PathBuf,
    /// An unpacked LAPACK tree (the directory holding `SRC` and `BLAS`)
    /// instead of the download.
    #[arg(long)]
    lapack: Option<PathBuf>,
    /// Where the download is kept (default: the system's temporary
    /// directory).
    #[arg(long)]
    cache: Option<PathBuf>,
    /// Only the kernels with this root (repeatable).
    #[arg(long = "root")]
    roots: Vec<String>,
    /// The dfort binary (default: built by cargo).
    #[arg(long)]
    server: Option<PathBuf>,
}

/// The recording modes, as `dfort verify` flags.
const MODES: [(&str, Option<&str>); 3] = [
    ("inversion", None),
    ("tbr", Some("--no-inversion")),
    ("store-all", Some("--no-tbr")),
];

pub fn run(args: VerifyLapackArgs) -> ExitCode {
    match verify(&args) {
        Ok(0) => ExitCode::SUCCESS,
        Ok(_) => ExitCode::from(1),
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

/// Runs every chosen kernel in every mode; the number of failures.
fn verify(args: &VerifyLapackArgs) -> Result<usize, String> {
    let manifest_path = if args.manifest.is_absolute() {
        args.manifest.clone()
    } else {
        product::repo_root().join(&args.manifest)
    };
    let manifest = load_manifest(&manifest_path)?;
    let tree = match &args.lapack {
        Some(t) => t.clone(),
        None => check_lapack::fetch(&args.cache.clone().unwrap_or_else(std::env::temp_dir))?,
    };
    let dfort = match &args.server {
        Some(s) => s.clone(),
        None => product::dfort_binary()?,
    };
    let chosen: Vec<&Kernel> = manifest
        .kernel
        .iter()
        .filter(|k| args.roots.is_empty() || args.roots.contains(&k.root))
        .collect();
    if chosen.is_empty() {
        return Err("no kernel of the manifest has the roots given".into());
    }
    let start = Instant::now();
    let mut failures = 0;
    let mut runs = 0;
    for k in &chosen {
        for (label, flag) in MODES {
            runs += 1;
            match verify_one(&dfort, &tree, k, flag) {
                Ok(()) => println!("ok    {} [{label}]", describe(k)),
                Err(why) => {
                    failures += 1;
                    println!("FAIL  {} [{label}]\n{why}", describe(k));
                }
            }
        }
    }
    println!(
        "reference LAPACK: {} kernel(s), {runs} verify run(s): {} passed, {failures} failed, {:.0} s",
        chosen.len(),
        runs - failures,
        start.elapsed().as_secs_f64()
    );
    Ok(failures)
}

fn describe(k: &Kernel) -> String {
    let values: Vec<String> = k.input_args().chunks(2).map(|c| c.join(" ")).collect();
    format!("{} {}", k.root, values.join(" "))
}

/// `dfort verify --sanitize` of kernel `k` (its files in `tree`) with the
/// mode flag `flag` (it builds in a temporary directory of its own).
fn verify_one(dfort: &Path, tree: &Path, k: &Kernel, flag: Option<&str>) -> Result<(), String> {
    let mut cmd = Command::new(dfort);
    cmd.arg("verify")
        .args(k.files.iter().map(|f| tree.join(f)))
        .args(["--root", &k.root, "--sanitize"]);
    if !k.independent.is_empty() {
        cmd.args(["--independent", &k.independent.join(",")]);
    }
    if !k.dependent.is_empty() {
        cmd.args(["--dependent", &k.dependent.join(",")]);
    }
    cmd.args(k.input_args()).args(flag);
    let out = cmd
        .output()
        .map_err(|e| format!("cannot run {}: {e}", dfort.display()))?;
    if out.status.success() {
        return Ok(());
    }
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Err(text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .take(12)
        .map(|l| format!("      {l}"))
        .collect::<Vec<_>>()
        .join("\n"))
}
