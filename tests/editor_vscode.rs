//! The VS Code extension (`editors/vscode`) against the real server.
//!
//! VS Code itself cannot run here, so `test/activate.js` loads the compiled
//! extension under a stand-in `vscode` module and calls its real `activate()`:
//! the real `vscode-languageclient` starts `dfort lsp --stdio`, does the
//! handshake, opens a fixture, asks for a hover, inlay hints and a command,
//! changes a setting and shuts the server down. This test builds the extension
//! (`npm ci` when `node_modules` is missing, then `tsc`) and runs that script
//! with `DFORT_BIN` set to the binary under test. Node.js and npm are required:
//! without them the test fails, it never passes silently.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::thread;
use std::time::{Duration, Instant};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn extension_dir() -> PathBuf {
    root().join("editors/vscode")
}

struct Outcome {
    success: bool,
    timed_out: bool,
    output: String,
}

/// Runs `cmd` to completion or until `timeout`, killing it then; stdout and
/// stderr are collected together.
fn run(mut cmd: Command, timeout: Duration) -> Outcome {
    let shown = format!("{cmd:?}");
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {shown}: {e}"));
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let out_reader = thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let err_reader = thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let deadline = Instant::now() + timeout;
    let (status, timed_out) = loop {
        match child.try_wait().expect("wait for child") {
            Some(status) => break (Some(status), false),
            None if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                break (None, true);
            }
            None => thread::sleep(Duration::from_millis(50)),
        }
    };
    let stdout = out_reader.join().unwrap_or_default();
    let stderr = err_reader.join().unwrap_or_default();
    Outcome {
        success: status.is_some_and(|s| s.success()),
        timed_out,
        output: format!("$ {shown}\n{stdout}{stderr}"),
    }
}

fn require(outcome: &Outcome, what: &str) {
    assert!(!outcome.timed_out, "{what} timed out\n{}", outcome.output);
    assert!(outcome.success, "{what} failed\n{}", outcome.output);
}

/// Node.js and npm, or a failure that says how to get them.
fn require_node() {
    for tool in ["node", "npm"] {
        let found = Command::new(tool)
            .arg("--version")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .output();
        match found {
            Ok(out) if out.status.success() => {}
            Ok(out) => panic!(
                "`{tool} --version` failed ({}): the VS Code extension test needs Node.js 20+ and npm\n{}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            ),
            Err(e) => panic!(
                "`{tool}` not found ({e}): the VS Code extension test needs Node.js 20+ and npm \
                 (apt-get install -y nodejs npm, or a Node.js 20 install)"
            ),
        }
    }
}

/// `npm ci` when the dependencies are not installed, then `tsc -p .`; once
/// per test binary, whichever test asks first.
fn build_extension() {
    static BUILT: OnceLock<()> = OnceLock::new();
    BUILT.get_or_init(build_extension_now);
}

fn build_extension_now() {
    require_node();
    let ext = extension_dir();
    let installed = [
        "vscode-languageclient",
        "typescript",
        "@vscode/vsce",
        "vscode-textmate",
        "vscode-oniguruma",
    ]
    .iter()
    .all(|p| {
        ext.join("node_modules")
            .join(p)
            .join("package.json")
            .is_file()
    });
    if !installed {
        let mut npm = Command::new("npm");
        npm.args(["ci", "--no-audit", "--no-fund"])
            .current_dir(&ext);
        require(&run(npm, Duration::from_secs(600)), "npm ci");
    }
    // The project's own TypeScript (what `npx tsc -p .` runs), without npx's
    // fallback to the registry.
    let mut tsc = Command::new("node");
    tsc.args(["node_modules/typescript/bin/tsc", "-p", "."])
        .current_dir(&ext);
    require(&run(tsc, Duration::from_secs(300)), "tsc -p .");
    assert!(
        ext.join("out/extension.js").is_file(),
        "tsc wrote no out/extension.js"
    );
}

/// Runs the extension's test script `script` with node and requires its
/// `pass` line.
fn node_script(script: &str, pass: &str, timeout: Duration) {
    build_extension();
    let mut node = Command::new("node");
    node.arg(script)
        .current_dir(extension_dir())
        .env("DFORT_BIN", env!("CARGO_BIN_EXE_dfort"))
        .env_remove("DFORT_EXTENSION_DIR")
        .env_remove("DFORT_TEST_VERBOSE");
    let outcome = run(node, timeout);
    println!("{}", outcome.output);
    require(&outcome, &format!("node {script}"));
    assert!(
        outcome.output.contains(pass),
        "no `{pass}` line\n{}",
        outcome.output
    );
}

#[test]
fn extension_activates_and_talks_to_the_server() {
    node_script(
        "test/activate.js",
        "vscode-activate: PASS",
        Duration::from_secs(90),
    );
}

/// The extension's TextMate grammars, run through vscode-textmate with
/// VS Code's Oniguruma, colour both source forms (`test/grammar.js`).
#[test]
fn grammars_colour_free_and_fixed_form() {
    node_script(
        "test/grammar.js",
        "vscode-grammar: PASS",
        Duration::from_secs(60),
    );
}

#[test]
fn vsix_contents_include_the_language_client() {
    build_extension();
    // What `vsce package` would put in the .vsix, without writing it.
    let mut ls = Command::new("node");
    ls.args(["node_modules/@vscode/vsce/vsce", "ls"])
        .current_dir(extension_dir());
    let outcome = run(ls, Duration::from_secs(120));
    require(&outcome, "vsce ls");
    let files: Vec<&str> = outcome.output.lines().map(str::trim).collect();
    for needed in [
        "package.json",
        "README.md",
        "LICENSE",
        "out/extension.js",
        "language-configuration.json",
        "syntaxes/fortran-free.tmLanguage.json",
        "syntaxes/fortran-fixed.tmLanguage.json",
        "node_modules/vscode-languageclient/package.json",
        "node_modules/vscode-languageclient/lib/node/main.js",
        "node_modules/vscode-languageserver-protocol/package.json",
        "node_modules/vscode-jsonrpc/package.json",
    ] {
        assert!(
            files.contains(&needed),
            "the .vsix would lack {needed}\n{}",
            outcome.output
        );
    }
    for line in &files {
        assert!(
            !line.starts_with("src/")
                && !line.starts_with("test/")
                && !line.ends_with(".map")
                && !line.starts_with("node_modules/typescript/")
                && !line.starts_with("node_modules/@vscode/vsce/")
                && !line.starts_with("node_modules/vscode-textmate/")
                && !line.starts_with("node_modules/vscode-oniguruma/"),
            "the .vsix would carry {line}\n{}",
            outcome.output
        );
    }
}
