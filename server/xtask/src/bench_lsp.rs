//! `cargo xtask bench-lsp`: replays typing into a generated 20,000-line file
//! against a real `dfort lsp` process (the `dfort` binary of xtask's build
//! profile, or `--server`) and reports, p50 and p95, the time
//! from `didChange` to fresh diagnostics (the `publishDiagnostics` of that
//! version) and inlay hints (the answer to an `inlayHint` request for the
//! screen around the edit), for character edits and for structural edits
//! (deleting and restoring an `end if`), the time to answer completion
//! (one letter typed), references at names of the file and the file's
//! code lenses, plus the time
//! from `didOpen` to the first diagnostics and the server's resident
//! memory. With `--files N` the file is one module of a generated
//! workspace of `N` files and `--lines` lines in all
//! ([`crate::bench_workspace`]), opened as the workspace folder, and the
//! time the server takes to index it is reported too.

use clap::Args;
use dfort::lsp::client::ls_types::PublishDiagnosticsParams;
use dfort::lsp::client::Connection;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

#[derive(Args)]
pub struct BenchLspArgs {
    /// Lines of the generated file.
    #[arg(long, default_value_t = 20_000)]
    lines: usize,
    /// Character edits to replay (each typed, then deleted).
    #[arg(long, default_value_t = 100)]
    edits: usize,
    /// Structural edits (an `end if` deleted, then restored).
    #[arg(long, default_value_t = 20)]
    structural: usize,
    /// Completion and references requests (each at a name of the file).
    #[arg(long, default_value_t = 50)]
    queries: usize,
    /// The file's shape: `module` (one module of procedures) or `units`
    /// (top-level subroutines in modules of about 400 lines).
    #[arg(long, default_value = "module", value_parser = ["module", "units"])]
    shape: String,
    /// Generate a workspace of this many files with `--lines` lines in all
    /// (modules, COMMON blocks, calls across files) and edit one of its
    /// modules; 0: one file of `--lines` lines.
    #[arg(long, default_value_t = 0)]
    files: usize,
    /// The `dfort` binary to run as the server (default: the one cargo
    /// builds in xtask's profile, release for `cargo xtask`).
    #[arg(long, value_name = "PATH")]
    server: Option<PathBuf>,
}

fn percentile(v: &[f64], p: f64) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.total_cmp(b));
    if s.is_empty() {
        return f64::NAN;
    }
    let i = ((s.len() as f64 - 1.0) * p).round() as usize;
    s[i.min(s.len() - 1)]
}

/// The generated source: `module` is one module of about `lines` lines
/// (as `cargo xtask bench` writes them); `units` cuts the same procedures into
/// modules of about 400 lines.
fn source(lines: usize, shape: &str) -> String {
    if shape == "module" {
        return crate::bench::free_file(0, lines);
    }
    let mut s = String::new();
    let mut k = 0;
    while s.lines().count() < lines {
        s.push_str(&crate::bench::free_file(k, 400));
        k += 1;
    }
    s
}

struct Session {
    conn: Connection,
    uri: String,
    version: i64,
    text: String,
}

/// The LSP position (ASCII text: bytes are characters) of byte `off` of
/// `text`.
fn position_in(text: &str, off: usize) -> Value {
    let before = &text[..off];
    let line = before.bytes().filter(|&b| b == b'\n').count();
    let col = before.len() - before.rfind('\n').map_or(0, |i| i + 1);
    json!({"line": line, "character": col})
}

impl Session {
    /// The LSP position of byte `off` of the text.
    fn position(&self, off: usize) -> Value {
        position_in(&self.text, off)
    }

    /// Sends one request at byte `off` and times its answer, which must
    /// be a non-empty list.
    fn query(&mut self, method: &str, off: usize) -> Result<f64, String> {
        let mut params = json!({"textDocument": {"uri": self.uri}, "position": self.position(off)});
        if method.ends_with("references") {
            params["context"] = json!({"includeDeclaration": true});
        }
        let t = Instant::now();
        let r = self
            .conn
            .request(method, params)
            .map_err(|e| e.to_string())?;
        let ms = t.elapsed().as_secs_f64() * 1000.0;
        if r["result"].as_array().is_none_or(|a| a.is_empty()) {
            return Err(format!("{method} answered no list: {r}"));
        }
        Ok(ms)
    }

    /// Sends one change and waits for its diagnostics and the hints around it.
    fn change(&mut self, start: usize, end: usize, new: &str) -> Result<f64, String> {
        let (s, e) = (self.position(start), self.position(end));
        self.version += 1;
        let t = Instant::now();
        self.conn
            .notify(
                "textDocument/didChange",
                json!({"textDocument": {"uri": self.uri, "version": self.version},
                       "contentChanges": [{"range": {"start": s, "end": e}, "text": new}]}),
            )
            .map_err(|e| e.to_string())?;
        self.text.replace_range(start..end, new);
        // Read as a client with the protocol's types does (the JSON tree
        // the tests use costs this client more than the server's work).
        loop {
            let d: PublishDiagnosticsParams = self
                .conn
                .wait_notification_as("textDocument/publishDiagnostics")
                .map_err(|e| e.to_string())?;
            if i64::from(d.version.unwrap_or(0)) >= self.version {
                break;
            }
        }
        let line = s["line"].as_u64().unwrap_or(0);
        let r = self
            .conn
            .request(
                "textDocument/inlayHint",
                json!({"textDocument": {"uri": self.uri},
                       "range": {"start": {"line": line.saturating_sub(30), "character": 0},
                                 "end": {"line": line + 30, "character": 0}}}),
            )
            .map_err(|e| e.to_string())?;
        if r.get("error").is_some() {
            return Err(format!("inlay hints failed: {r}"));
        }
        Ok(t.elapsed().as_secs_f64() * 1000.0)
    }
}

pub fn run(args: BenchLspArgs) -> ExitCode {
    match bench(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
    }
}

fn bench(args: &BenchLspArgs) -> Result<(), String> {
    let dir = std::env::temp_dir().join(format!("dfort-bench-lsp-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let result = bench_in(args, &dir);
    let _ = std::fs::remove_dir_all(&dir);
    result
}

/// Writes the file (or the workspace) to edit into `dir`: its path and text.
fn write_sources(args: &BenchLspArgs, dir: &std::path::Path) -> Result<(PathBuf, String), String> {
    if args.files == 0 {
        let path = dir.join("big.f90");
        let text = source(args.lines, &args.shape);
        std::fs::write(&path, &text).map_err(|e| e.to_string())?;
        return Ok((path, text));
    }
    let files = crate::bench_workspace::workspace(args.files, args.lines);
    let (mut lines, mut bytes) = (0, 0);
    for (rel, text) in &files {
        let path = dir.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| e.to_string())?;
        }
        std::fs::write(&path, text).map_err(|e| e.to_string())?;
        lines += text.lines().count();
        bytes += text.len();
    }
    println!(
        "workspace: {} files, {lines} lines, {:.1} MB",
        files.len(),
        bytes as f64 / 1e6
    );
    // A module in the middle of the workspace: it uses and calls earlier
    // files, and later files use and call it.
    let (rel, text) = files[files.len() / 2..]
        .iter()
        .find(|(p, _)| p.extension().is_some_and(|e| e == "f90"))
        .ok_or("the workspace has no module to edit")?;
    Ok((dir.join(rel), text.clone()))
}

/// Waits for the server's next log message holding `word`, and returns it.
fn logged(conn: &mut Connection, word: &str) -> Result<String, String> {
    loop {
        let m = conn
            .wait_notification("window/logMessage")
            .map_err(|e| e.to_string())?;
        if let Some(m) = m["message"].as_str().filter(|m| m.contains(word)) {
            return Ok(m.to_string());
        }
    }
}

fn bench_in(args: &BenchLspArgs, dir: &std::path::Path) -> Result<(), String> {
    let (path, text) = write_sources(args, dir)?;
    let exe = match &args.server {
        Some(path) => path.clone(),
        None => crate::product::dfort_binary()?,
    };
    let mut child = Command::new(exe)
        .arg("lsp")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| format!("cannot start dfort lsp: {e}"))?;
    let pid = child.id();
    let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        return Err("no pipes to the server".into());
    };
    let mut conn = Connection::new(stdout, stdin);
    conn.timeout = Duration::from_secs(60);
    let uri = format!("file://{}", path.display());
    let t = Instant::now();
    conn.initialize(
        Some(&format!("file://{}", dir.display())),
        json!({}),
        Value::Null,
    )
    .map_err(|e| e.to_string())?;
    if args.files > 0 {
        // The server logs "dfort: indexed N Fortran files" once every
        // file is read, linked and analysed.
        conn.timeout = Duration::from_secs(1800);
        let said = logged(&mut conn, "indexed")?;
        conn.timeout = Duration::from_secs(60);
        let pid = pid.to_string();
        println!(
            "index: {:.1} s from initialize to the server's \"indexed\" message, then resident {:.0} MB",
            t.elapsed().as_secs_f64(),
            crate::bench::proc_status_mb(&pid, "VmRSS:").unwrap_or(f64::NAN)
        );
        println!("server: {said}");
        // The first workspace-symbol answer: the name of the module the
        // bench opens next, looked up before the analyses are done.
        let name = text
            .lines()
            .find_map(|l| l.trim().strip_prefix("module "))
            .unwrap_or("m")
            .trim()
            .to_string();
        let found = conn
            .request("workspace/symbol", json!({"query": name}))
            .map_err(|e| e.to_string())?;
        println!(
            "first workspace-symbol answer: {:.1} s after initialize ({} symbols for `{name}`)",
            t.elapsed().as_secs_f64(),
            found["result"].as_array().map_or(0, |a| a.len())
        );
        // The analyses follow the index; the edits below are timed once
        // they are done.
        conn.timeout = Duration::from_secs(1800);
        let said = logged(&mut conn, "analysed")?;
        conn.timeout = Duration::from_secs(60);
        println!(
            "analyses done: {:.1} s after initialize; server: {said}",
            t.elapsed().as_secs_f64()
        );
    }
    let nlines = text.lines().count();
    println!(
        "file: {} lines, {:.2} MB, shape `{}`",
        nlines,
        text.len() as f64 / 1e6,
        if args.files > 0 {
            "workspace module"
        } else {
            &args.shape
        }
    );
    let t = Instant::now();
    conn.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri, "languageId": "fortran", "version": 1, "text": text}}),
    )
    .map_err(|e| e.to_string())?;
    let first = loop {
        let d = conn
            .wait_notification("textDocument/publishDiagnostics")
            .map_err(|e| e.to_string())?;
        if d["uri"] == json!(uri) {
            break d;
        }
    };
    let open_ms = t.elapsed().as_secs_f64() * 1000.0;
    let n_diags = first["diagnostics"].as_array().map_or(0, |a| a.len());
    let mut s = Session {
        conn,
        uri,
        version: 1,
        text,
    };
    // Character edits: a digit typed into a constant and deleted again,
    // spread over the file.
    let sites: Vec<usize> = s.text.match_indices("0.5_dp").map(|(i, _)| i).collect();
    if sites.is_empty() {
        return Err("the generated file has no edit sites".into());
    }
    let mut typing = Vec::new();
    for k in 0..args.edits {
        let at = sites[(k * 7919) % sites.len()] + 3;
        typing.push(s.change(at, at, "7")?);
        typing.push(s.change(at, at + 1, "")?);
    }
    // Structural edits: an `end if` deleted (the rest of its procedure no
    // longer parses) and restored.
    let ends: Vec<usize> = s.text.match_indices("end if\n").map(|(i, _)| i).collect();
    let mut structural = Vec::new();
    for k in 0..args.structural {
        let at = ends[(k * 104_729) % ends.len()];
        structural.push(s.change(at, at + 6, "")?);
        structural.push(s.change(at, at, "end if")?);
    }
    // Completion with one letter of a name typed, and references of that
    // name: right-hand sides that begin with a variable (the generated
    // procedures' variables have one-letter names).
    let names: Vec<usize> = s
        .text
        .match_indices(" = ")
        .map(|(i, _)| i + 3)
        .filter(|&i| {
            let b = s.text.as_bytes();
            b[i].is_ascii_alphabetic() && !b[i + 1].is_ascii_alphanumeric() && b[i + 1] != b'_'
        })
        .collect();
    if names.is_empty() {
        return Err("the generated file has no names to complete".into());
    }
    let (mut completion, mut references) = (Vec::new(), Vec::new());
    for k in 0..args.queries {
        let at = names[(k * 7919) % names.len()] + 1;
        completion.push(s.query("textDocument/completion", at)?);
        references.push(s.query("textDocument/references", at)?);
    }
    // Code lenses of the whole file (each procedure's, and each basic
    // block's local Jacobian).
    let mut lenses = Vec::new();
    for _ in 0..args.queries.min(10) {
        let t = Instant::now();
        let r = s
            .conn
            .request(
                "textDocument/codeLens",
                json!({"textDocument": {"uri": s.uri}}),
            )
            .map_err(|e| e.to_string())?;
        lenses.push(t.elapsed().as_secs_f64() * 1000.0);
        if r["result"].as_array().is_none_or(|a| a.is_empty()) {
            return Err(format!("codeLens answered no list: {r}"));
        }
    }
    let pid = pid.to_string();
    let rss = crate::bench::proc_status_mb(&pid, "VmRSS:").unwrap_or(f64::NAN);
    let hwm = crate::bench::proc_status_mb(&pid, "VmHWM:").unwrap_or(f64::NAN);
    let _ = s.conn.shutdown();
    drop(s.conn);
    let _ = child.wait();
    println!("open to first diagnostics: {open_ms:.0} ms ({n_diags} diagnostics)");
    // `what: N <unit>, <measured> p50 …, p95 …, max …`.
    let report = |what: &str, unit: &str, v: &[f64]| {
        println!(
            "{what}: {} {unit} p50 {:.1} ms, p95 {:.1} ms, max {:.1} ms",
            v.len(),
            percentile(v, 0.5),
            percentile(v, 0.95),
            percentile(v, 1.0)
        );
    };
    let edits = "edits, didChange to diagnostics + inlay hints";
    report("character edits", edits, &typing);
    report(
        "structural edits (end if deleted/restored)",
        edits,
        &structural,
    );
    let all: Vec<f64> = typing.iter().chain(&structural).copied().collect();
    report("all edits", edits, &all);
    report("completion", "requests,", &completion);
    report("references", "requests,", &references);
    report("code lenses", "requests (whole file),", &lenses);
    println!("server memory: resident {rss:.0} MB, peak resident {hwm:.0} MB");
    Ok(())
}
