//! Real-client test: headless Neovim loads the plugin in `editors/neovim`,
//! starts `dfort lsp`, hovers in a fixed-form and a free-form file, sees
//! the address-recovery diagnostic and inlay hints of ICCG (paper 003) and
//! generates the adjoint of `bratu` through the plugin; the generated files
//! are then compiled with gfortran.
//!
//! The Lua side is `editors/neovim/test/init.lua`; it writes a report (one
//! `PASS`/`FAIL`/`INFO` entry a line, then `RESULT: PASS|FAIL`).
//!
//! Needs `nvim` (0.7 or later) and `gfortran` on PATH; without them the test
//! fails rather than passing silently. A second test runs the same script
//! in a current Neovim (0.12, named by `DFORT_NVIM_CURRENT`, which
//! `cargo xtask test` fetches), where it also chooses "Generate adjoint"
//! in Neovim's own code-action menu: the file must be on disk and open.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const NVIM_TIMEOUT: Duration = Duration::from_secs(60);
const INSTALL_HINT: &str = "install them with `apt-get install -y neovim gfortran` (CI does)";

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn require_tool(name: &str, version_arg: &str) {
    let found = Command::new(name)
        .arg(version_arg)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    assert!(
        found,
        "`{name}` is not on PATH (or `{name} {version_arg}` failed): this test needs it; {INSTALL_HINT}"
    );
}

fn fresh_dir() -> PathBuf {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let dir = std::env::temp_dir().join(format!("dfort-nvim-{}-{nanos}", std::process::id()));
    fs::create_dir_all(&dir).expect("create temp dir");
    dir
}

/// Reads a child's pipe on a thread so a full pipe never blocks the child.
fn drain<R: Read + Send + 'static>(pipe: Option<R>) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(mut p) = pipe {
            let _ = p.read_to_end(&mut buf);
        }
        String::from_utf8_lossy(&buf).into_owned()
    })
}

struct NvimRun {
    code: Option<i32>,
    timed_out: bool,
    stdout: String,
    stderr: String,
    report: String,
}

fn run_nvim(nvim: &Path, dir: &Path) -> NvimRun {
    let root = repo_root();
    let init = root.join("editors/neovim/test/init.lua");
    let report_path = dir.join("report.txt");
    let xdg = dir.join("xdg");
    let mut child = Command::new(nvim)
        .args(["--headless", "-n", "-i", "NONE", "-u"])
        .arg(&init)
        .current_dir(dir)
        .env("DFORT_BIN", env!("CARGO_BIN_EXE_dfort"))
        .env("DFORT_TEST_DIR", dir)
        .env("DFORT_TEST_OUT", &report_path)
        // Keep the user's configuration, plugins and logs out of the run.
        .env("XDG_CONFIG_HOME", xdg.join("config"))
        .env("XDG_DATA_HOME", xdg.join("data"))
        .env("XDG_STATE_HOME", xdg.join("state"))
        .env("XDG_CACHE_HOME", xdg.join("cache"))
        .env_remove("NVIM")
        .env_remove("NVIM_LISTEN_ADDRESS")
        .env_remove("VIMINIT")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("could not start nvim: {e}; {INSTALL_HINT}"));
    let out = drain(child.stdout.take());
    let err = drain(child.stderr.take());
    let start = Instant::now();
    let mut timed_out = false;
    let status = loop {
        match child.try_wait().expect("wait for nvim") {
            Some(status) => break Some(status),
            None if start.elapsed() > NVIM_TIMEOUT => {
                timed_out = true;
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            None => std::thread::sleep(Duration::from_millis(50)),
        }
    };
    NvimRun {
        code: status.and_then(|s| s.code()),
        timed_out,
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
        report: fs::read_to_string(&report_path).unwrap_or_default(),
    }
}

fn gfortran_c(dir: &Path, file: &str) {
    let out = Command::new("gfortran")
        .args(["-c", file])
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("could not run gfortran: {e}; {INSTALL_HINT}"));
    assert!(
        out.status.success(),
        "gfortran -c {file} failed in {}:\n{}{}\n--- {file} ---\n{}",
        dir.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
        fs::read_to_string(dir.join(file)).unwrap_or_default()
    );
}

#[test]
fn neovim_plugin_hovers_and_generates_adjoint() {
    require_tool("nvim", "--version");
    plugin_test(Path::new("nvim"), &[]);
}

/// The same in a current Neovim, whose own code-action menu (`gra`) runs
/// the "Generate adjoint" action: the server writes and opens the file.
#[test]
fn current_neovim_generates_from_its_own_code_action_menu() {
    let nvim = std::env::var_os("DFORT_NVIM_CURRENT").map(PathBuf::from);
    let nvim = nvim.unwrap_or_else(|| {
        panic!("DFORT_NVIM_CURRENT names no Neovim: run the tests with `cargo xtask test`, which fetches Neovim 0.12 into target/tools")
    });
    plugin_test(
        &nvim,
        &[
            "PASS Generate adjoint from the built-in code-action menu",
            "PASS folds from the server",
            "PASS semantic tokens mark active variables",
        ],
    );
}

/// Runs the plugin's test script in `nvim` and checks its report, with the
/// `extra` steps on top of those every version passes; then compiles what
/// it generated.
fn plugin_test(nvim: &Path, extra: &[&str]) {
    require_tool("gfortran", "--version");

    let root = repo_root();
    let dir = fresh_dir();
    for name in ["p000_bratu.f", "p000_fig1.f90", "p003_fig14a_iccg.f90"] {
        fs::copy(
            root.join("tests/fixtures/papers").join(name),
            dir.join(name),
        )
        .unwrap_or_else(|e| panic!("copy {name}: {e}"));
    }

    // Issue 18: a preprocessed file with an inactive `#else` branch.
    fs::write(
        dir.join("inactive.F"),
        "#define ALLOW_TIDES\n      SUBROUTINE FLUX(X, Y)\n      DOUBLE PRECISION X, Y\n#ifdef ALLOW_TIDES\n      Y = X*3.0D0\n#else\n      Y = 2*X\n      Y = Y + 1\n#endif\n      END\n",
    )
    .unwrap();

    let run = run_nvim(nvim, &dir);
    let context = format!(
        "nvim exit code {:?}{}\n--- report ({}) ---\n{}\n--- nvim stderr ---\n{}\n--- nvim stdout ---\n{}",
        run.code,
        if run.timed_out {
            format!(", killed after {NVIM_TIMEOUT:?}")
        } else {
            String::new()
        },
        dir.join("report.txt").display(),
        run.report,
        run.stderr,
        run.stdout
    );
    assert!(!run.timed_out, "nvim hung:\n{context}");
    assert_eq!(run.code, Some(0), "the Neovim test failed:\n{context}");
    let every = [
        "PASS client initialized",
        "PASS hover fixed form",
        "PASS hover free form",
        "PASS generate adjoint of bratu",
        "PASS address diagnostic in iccg",
        "PASS address inlay hints in iccg",
        "PASS inactive #if region drawn faded",
        "PASS verify bratu asks for its values",
        "PASS references and rename in fixed form",
        "PASS completion and signature help in fixed form",
        "PASS code lenses above bratu",
    ];
    for step in every.iter().chain(extra) {
        assert!(
            run.report.lines().any(|l| l.starts_with(step)),
            "missing `{step}` in the report:\n{context}"
        );
    }
    assert!(run.report.lines().any(|l| l == "RESULT: PASS"), "{context}");
    assert!(
        !run.report.lines().any(|l| l.starts_with("FAIL")),
        "{context}"
    );

    for file in ["dfort_stack.f90", "p000_bratu_b.f90"] {
        assert!(
            dir.join(file).is_file(),
            "{file} was not written:\n{context}"
        );
    }
    // The adjoint `use`s module dfort_stack: compile the module first.
    gfortran_c(&dir, "dfort_stack.f90");
    gfortran_c(&dir, "p000_bratu_b.f90");

    // Shown with `--nocapture`.
    eprintln!("{}", run.report);
    let _ = fs::remove_dir_all(&dir);
}
