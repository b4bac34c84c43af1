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
//!
//! The real VS Code runs too, as code-server (VS Code served to a browser)
//! driven in headless Chromium by puppeteer-core (`test/code-server.js`),
//! with the packaged `.vsix` installed: `cargo xtask test` installs both
//! into `target/tools/code-server` and names it in `DFORT_CODE_SERVER`.
//! Its screenshots go to `target/code-server/`.

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

/// A free TCP port on the loopback interface.
fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    l.local_addr().unwrap().port()
}

/// code-server with its process group, stopped (with everything it
/// started) when dropped.
struct CodeServer(std::process::Child);

impl Drop for CodeServer {
    fn drop(&mut self) {
        let group = format!("-{}", self.0.id());
        let _ = Command::new("kill").args(["-TERM", "--", &group]).status();
        let _ = self.0.wait();
    }
}

/// The real VS Code (code-server 4.100 in headless Chromium) with the
/// packaged extension and this build's server: a fixed-form and a
/// free-form file open as Fortran, coloured, with inlay hints, hover,
/// completion, references, rename, folding and semantic tokens
/// (`test/code-server.js` checks each in the page and takes screenshots).
#[test]
fn real_vs_code_shows_every_feature_in_both_forms() {
    use std::os::unix::process::CommandExt;
    let tools = std::env::var_os("DFORT_CODE_SERVER").map(PathBuf::from).unwrap_or_else(|| {
        panic!("DFORT_CODE_SERVER names no code-server install: run the tests with `cargo xtask test`, which installs code-server and puppeteer-core into target/tools/code-server")
    });
    let code_server = tools.join("node_modules/.bin/code-server");
    assert!(code_server.is_file(), "no {}", code_server.display());
    build_extension();
    let tmp = std::env::temp_dir().join(format!("dfort-code-server-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    let (ext, user, ws) = (tmp.join("ext"), tmp.join("user"), tmp.join("ws"));
    for d in [&ext, &user.join("User"), &ws] {
        std::fs::create_dir_all(d).unwrap();
    }
    let vsix = tmp.join("dfort.vsix");
    let mut package = Command::new("node");
    package
        .args(["node_modules/@vscode/vsce/vsce", "package", "-o"])
        .arg(&vsix)
        .current_dir(extension_dir());
    require(&run(package, Duration::from_secs(180)), "vsce package");
    // code-server keeps its own configuration under XDG directories.
    let xdg = |c: &mut Command| {
        c.env("XDG_CONFIG_HOME", tmp.join("config"))
            .env("XDG_DATA_HOME", tmp.join("data"));
    };
    let mut install = Command::new(&code_server);
    install
        .arg("--extensions-dir")
        .arg(&ext)
        .arg("--user-data-dir")
        .arg(&user)
        .arg("--install-extension")
        .arg(&vsix);
    xdg(&mut install);
    require(
        &run(install, Duration::from_secs(120)),
        "code-server --install-extension",
    );
    let settings = serde_json::json!({
        "dfort.serverPath": env!("CARGO_BIN_EXE_dfort"),
        "security.workspace.trust.enabled": false,
        "workbench.startupEditor": "none",
        "telemetry.telemetryLevel": "off",
        "extensions.autoCheckUpdates": false,
        "extensions.autoUpdate": false,
        "files.autoSave": "off",
        "editor.showFoldingControls": "always",
        "workbench.colorTheme": "Default Dark Modern",
        // The hover below its line keeps the hints above it in the screenshots.
        "editor.hover.above": false,
    });
    std::fs::write(user.join("User/settings.json"), settings.to_string()).unwrap();
    let fixtures = root().join("tests/fixtures/papers");
    std::fs::copy(fixtures.join("p000_bratu.f"), ws.join("bratu.f")).unwrap();
    std::fs::copy(fixtures.join("p000_fig1.f90"), ws.join("fig1.f90")).unwrap();
    let port = free_port();
    let mut serve = Command::new(&code_server);
    serve
        .args([
            "--auth",
            "none",
            "--disable-telemetry",
            "--disable-update-check",
        ])
        .arg("--bind-addr")
        .arg(format!("127.0.0.1:{port}"))
        .arg("--extensions-dir")
        .arg(&ext)
        .arg("--user-data-dir")
        .arg(&user)
        .arg(&ws)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0);
    xdg(&mut serve);
    let server = CodeServer(serve.spawn().expect("start code-server"));
    let deadline = Instant::now() + Duration::from_secs(60);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "code-server did not listen on port {port} in 60 s"
        );
        thread::sleep(Duration::from_millis(200));
    }
    let shots = root().join("target/code-server");
    std::fs::create_dir_all(&shots).unwrap();
    let mut drive = Command::new("node");
    drive
        .arg("test/code-server.js")
        .current_dir(extension_dir())
        .env("NODE_PATH", tools.join("node_modules"))
        .env("DFORT_CS_URL", format!("http://127.0.0.1:{port}"))
        .env("DFORT_CS_FOLDER", &ws)
        .env("DFORT_CS_SHOTS", &shots);
    let outcome = run(drive, Duration::from_secs(300));
    drop(server);
    println!("{}", outcome.output);
    require(&outcome, "node test/code-server.js");
    assert!(
        outcome.output.contains("code-server: PASS"),
        "{}",
        outcome.output
    );
    let _ = std::fs::remove_dir_all(&tmp);
}
