//! Where xtask finds the product and its own optimised build: the
//! repository root, the `dfort` binary of the same build profile (built
//! through cargo when asked for), and the re-run of a command in xtask's
//! release build.
//!
//! The `cargo xtask` alias builds xtask with the dev profile, so that
//! `cargo xtask test` shares its compiled crates with the tests it runs.
//! The benchmarks and the fuzzer need optimised code: from a dev build
//! they re-run themselves through `cargo run --release`.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::{Command, ExitCode};

/// The repository root (server/xtask/../..).
pub fn repo_root() -> PathBuf {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    std::fs::canonicalize(&root).unwrap_or(root)
}

/// The cargo that runs this program (`$CARGO`), else `cargo` on the path.
pub fn cargo() -> OsString {
    std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into())
}

/// `--release` when this program is an optimised build.
fn profile_flag() -> Option<&'static str> {
    (!cfg!(debug_assertions)).then_some("--release")
}

/// In a dev build: runs this program's command line again from the
/// release build (built first by cargo) and returns its exit status; in a
/// release build: `None`, the caller runs the command itself.
pub fn rerun_optimised() -> Option<ExitCode> {
    if !cfg!(debug_assertions) {
        return None;
    }
    eprintln!("xtask: running this command from the release build of xtask");
    let status = Command::new(cargo())
        .args([
            "run",
            "--release",
            "--package",
            "xtask",
            "--bin",
            "xtask",
            "--",
        ])
        .args(std::env::args_os().skip(1))
        .status();
    Some(match status {
        Ok(s) => exit_code(s),
        Err(e) => {
            eprintln!("error: cannot run cargo: {e}");
            ExitCode::from(2)
        }
    })
}

/// A child's exit status as this program's.
pub fn exit_code(status: std::process::ExitStatus) -> ExitCode {
    match status.code() {
        Some(0) => ExitCode::SUCCESS,
        Some(c) => ExitCode::from(u8::try_from(c).unwrap_or(1)),
        None => ExitCode::from(1),
    }
}

/// The `dfort` binary of this program's build profile, built (or found up
/// to date) by cargo; it sits beside this program's executable.
pub fn dfort_binary() -> Result<PathBuf, String> {
    let status = Command::new(cargo())
        .args(["build", "--quiet", "--package", "dfort", "--bin", "dfort"])
        .args(profile_flag())
        .current_dir(repo_root())
        .status()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if !status.success() {
        return Err("cargo build --package dfort failed".into());
    }
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let path = exe
        .parent()
        .map(|d| d.join(format!("dfort{}", std::env::consts::EXE_SUFFIX)))
        .ok_or("no directory holds this program")?;
    if path.is_file() {
        Ok(path)
    } else {
        Err(format!(
            "{} not found after building it (pass --server)",
            path.display()
        ))
    }
}
