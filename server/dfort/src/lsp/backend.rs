//! The LSP handlers. Each converts positions with [`super::convert`], asks
//! `dfort_ide` on a blocking thread (under `catch_unwind`) and converts the
//! answer back.

use super::convert::{self, path_of, uri_of, Encoding, Text};
use super::framing::Outbox;
use super::index;
use super::settings::{self, Settings};
use dfort_ide::actions::{self, ActionKind, Mode};
use dfort_ide::host::{Host, Snapshot, TextChange};
use dfort_syntax::SourceForm;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use tower_lsp_server::jsonrpc::{Error, Result};
use tower_lsp_server::ls_types::*;
use tower_lsp_server::{Client, LanguageServer};

/// How the server was started.
#[derive(Clone, Debug)]
pub struct Options {
    /// The `dfort` executable that `dfort.verify` runs.
    pub exe: PathBuf,
    /// For tests of the server's resilience: requests of this kind
    /// (`"hover"`, ...) panic inside the analysis thread.
    pub inject_panic: Option<&'static str>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            exe: std::env::current_exe().unwrap_or_else(|_| PathBuf::from("dfort")),
            inject_panic: None,
        }
    }
}

pub const CMD_ADJOINT: &str = "dfort.generateAdjoint";
pub const CMD_TANGENT: &str = "dfort.generateTangent";
pub const CMD_VERIFY: &str = "dfort.verify";

/// The optional third argument of `dfort.verify`, from clients that ask
/// the user for the values a root's arguments need.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct VerifyOptions {
    /// Answer the missing values (`missing`) instead of showing a message.
    #[serde(default)]
    ask: bool,
    /// Values to save in the root's `dfort.toml` table before the run.
    #[serde(default)]
    values: Option<crate::config_edit::RootValues>,
}

/// What the client told us at `initialize`, and the settings since.
#[derive(Clone, Debug)]
struct Session {
    enc: Encoding,
    /// The client opens documents the server asks it to show
    /// (`window/showDocument`).
    show_document: bool,
    progress: bool,
    /// The client lets the server register file watchers.
    watch_files: bool,
    root: Option<PathBuf>,
    settings: Settings,
    /// The workspace's `dfort.toml`, read.
    toml: Option<(PathBuf, crate::config::Config)>,
}

impl Default for Session {
    fn default() -> Self {
        Session {
            enc: Encoding::Utf16,
            show_document: false,
            progress: false,
            watch_files: false,
            root: None,
            settings: Settings::default(),
            toml: None,
        }
    }
}

pub struct Backend {
    client: Client,
    /// Messages written without the library's JSON tree (diagnostics).
    outbox: Outbox,
    options: Options,
    host: Arc<Mutex<Host>>,
    /// Bumped by every change; pending analyses of older changes give up.
    generation: Arc<AtomicU64>,
    session: Mutex<Session>,
}

/// Extensions of the headers `#include` and INCLUDE lines usually read,
/// watched beside the Fortran files.
const HEADER_EXTENSIONS: &[&str] = &["h", "inc", "fi", "fh", "h90", "H"];

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding the lock leaves the data usable: the host
    // recomputes its snapshot from the texts.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}

/// Publishes a document's diagnostics through the outbox (written
/// straight from their types; in the order of every other publication).
fn publish(outbox: &Outbox, uri: Uri, diagnostics: Vec<Diagnostic>, version: Option<i32>) {
    outbox.notify(
        "textDocument/publishDiagnostics",
        &PublishDiagnosticsParams {
            uri,
            diagnostics,
            version,
        },
    );
}

/// A request's path when the server knows the file.
/// The command that generates or verifies the derivatives of `unit` of
/// the document `uri` (code actions and code lenses run the same).
fn command_for(kind: &ActionKind, title: &str, uri: &Uri, unit: &str) -> Option<Command> {
    let command = match kind {
        ActionKind::Generate(Mode::Adjoint) => CMD_ADJOINT,
        ActionKind::Generate(Mode::Tangent) => CMD_TANGENT,
        ActionKind::Verify => CMD_VERIFY,
        ActionKind::Mark { .. } => return None,
    };
    Some(Command {
        title: title.to_string(),
        command: command.into(),
        arguments: Some(vec![json!(uri.as_str()), json!(unit)]),
    })
}

fn known(snap: &Snapshot, uri: &Uri) -> Option<PathBuf> {
    let p = path_of(uri)?;
    snap.doc(&p).is_some().then_some(p)
}

impl Backend {
    pub fn new(client: Client, outbox: Outbox, options: Options) -> Backend {
        Backend {
            client,
            outbox,
            options,
            host: Arc::new(Mutex::new(Host::default())),
            generation: Arc::new(AtomicU64::new(0)),
            session: Mutex::new(Session::default()),
        }
    }

    /// A message the framing guard could not read: logged, not fatal.
    pub async fn malformed(&self, params: Value) {
        let why = params
            .get("reason")
            .and_then(Value::as_str)
            .unwrap_or("unknown");
        self.client
            .log_message(
                MessageType::WARNING,
                format!("dfort: ignored a malformed message: {why}"),
            )
            .await;
    }

    fn session(&self) -> Session {
        lock(&self.session).clone()
    }

    /// Runs `f` on the current snapshot on a blocking thread; a panic
    /// becomes an internal error (logged), not a dead server.
    async fn with_snapshot<T, F>(&self, what: &'static str, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&Snapshot, &Session) -> T + Send + 'static,
    {
        let host = self.host.clone();
        self.blocking(what, move |session| {
            let snap = lock(&host).snapshot();
            f(&snap, session)
        })
        .await
    }

    /// Runs `f` on the text and source form of the document `uri` as the
    /// host holds it now, without waiting for an analysis of the
    /// workspace (`None` for a file the server does not know).
    async fn with_document<T, F>(&self, what: &'static str, uri: Uri, f: F) -> Result<Option<T>>
    where
        T: Send + 'static,
        F: FnOnce(&str, &SourceForm) -> T + Send + 'static,
    {
        let host = self.host.clone();
        self.blocking(what, move |_| {
            let path = path_of(&uri)?;
            let (text, form) = {
                let host = lock(&host);
                let d = host.document(&path)?;
                (d.text.clone(), d.form)
            };
            Some(f(&text, &form))
        })
        .await
    }

    /// Runs `f` on a blocking thread under `catch_unwind`: a panic becomes
    /// an internal error (logged), not a dead server.
    async fn blocking<T, F>(&self, what: &'static str, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&Session) -> T + Send + 'static,
    {
        let session = self.session();
        let inject = self.options.inject_panic == Some(what);
        let joined = tokio::task::spawn_blocking(move || {
            catch_unwind(AssertUnwindSafe(|| {
                if inject {
                    panic!("injected fault in {what}");
                }
                f(&session)
            }))
        })
        .await;
        match joined {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(p)) => {
                let msg = format!("dfort: internal error in {what}: {}", panic_text(&*p));
                self.client.log_message(MessageType::ERROR, &msg).await;
                Err(Error {
                    code: tower_lsp_server::jsonrpc::ErrorCode::InternalError,
                    message: msg.into(),
                    data: None,
                })
            }
            Err(e) => Err(Error {
                code: tower_lsp_server::jsonrpc::ErrorCode::InternalError,
                message: format!("dfort: {what} did not finish: {e}").into(),
                data: None,
            }),
        }
    }

    /// Re-analyses (off the request thread) and publishes the diagnostics
    /// of every open document, unless a newer change came first.
    fn refresh(&self) {
        let g = self.generation.fetch_add(1, Ordering::SeqCst) + 1;
        let host = self.host.clone();
        let generation = self.generation.clone();
        let client = self.client.clone();
        let outbox = self.outbox.clone();
        let enc = lock(&self.session).enc;
        tokio::spawn(async move {
            let work = tokio::task::spawn_blocking(move || {
                catch_unwind(AssertUnwindSafe(|| {
                    if generation.load(Ordering::SeqCst) != g {
                        return None;
                    }
                    let snap = lock(&host).snapshot();
                    if generation.load(Ordering::SeqCst) != g {
                        return None;
                    }
                    let mut out = Vec::new();
                    // The headers the C preprocessor included into open
                    // documents: their problems are published on them.
                    let mut headers: Vec<(&std::path::Path, _, u32)> = Vec::new();
                    for (path, doc) in &snap.docs {
                        if !doc.open {
                            continue;
                        }
                        let t = Text::of(doc);
                        let mut diags: Vec<Diagnostic> = snap
                            .diagnostics(path)
                            .iter()
                            .map(|d| convert::diagnostic(&t, d, enc))
                            .collect();
                        if let Some(pp) = &doc.preprocessed {
                            diags.extend(
                                pp.inactive_regions(0)
                                    .iter()
                                    .map(|r| convert::inactive_region(&t, r, enc)),
                            );
                        }
                        if let Some(uri) = uri_of(path) {
                            out.push((uri, diags, Some(doc.version)));
                        }
                        if let Some(pp) = &doc.preprocessed {
                            for (i, f) in pp.headers() {
                                if !headers.iter().any(|(p, _, _)| *p == f.path.as_path())
                                    && !snap.docs.contains_key(&f.path)
                                {
                                    headers.push((&f.path, pp, i));
                                }
                            }
                        }
                    }
                    for (h, pp, index) in headers {
                        let Some((text, lines)) = snap.file_text(h) else {
                            continue;
                        };
                        let t = Text { text, lines };
                        let mut diags: Vec<Diagnostic> =
                            dfort_ide::diagnostics::front_end(&snap, h)
                                .iter()
                                .map(|d| convert::diagnostic(&t, d, enc))
                                .collect();
                        diags.extend(
                            pp.inactive_regions(index)
                                .iter()
                                .map(|r| convert::inactive_region(&t, r, enc)),
                        );
                        if let Some(uri) =
                            uri_of(&std::fs::canonicalize(h).unwrap_or(h.to_path_buf()))
                        {
                            out.push((uri, diags, None));
                        }
                    }
                    for (uri, diagnostics, version) in out {
                        publish(&outbox, uri, diagnostics, version);
                    }
                    Some(())
                }))
            })
            .await;
            match work {
                Ok(Ok(_)) => {}
                Ok(Err(p)) => {
                    client
                        .log_message(
                            MessageType::ERROR,
                            format!("dfort: internal error in analysis: {}", panic_text(&*p)),
                        )
                        .await;
                }
                Err(e) => {
                    client
                        .log_message(MessageType::ERROR, format!("dfort: analysis failed: {e}"))
                        .await;
                }
            }
        });
    }

    /// Applies settings (and the workspace's dfort.toml) to the host.
    async fn apply_settings(&self, value: Option<&Value>) {
        let mut problems = Vec::new();
        let config = {
            let mut s = lock(&self.session);
            if let Some(v) = value {
                let (parsed, p) = settings::parse(v);
                s.settings = parsed;
                problems.extend(p);
            }
            if let Some(root) = &s.root {
                match settings::workspace_toml(root) {
                    Ok(t) => s.toml = t,
                    Err(e) => problems.push(e),
                }
            }
            settings::host_config(&s.settings, s.toml.as_ref(), s.root.as_deref())
        };
        lock(&self.host).set_config(config);
        for p in problems {
            self.client.log_message(MessageType::WARNING, p).await;
        }
    }

    /// Asks the client to report changes to Fortran files and dfort.toml
    /// made outside the editor (a `git checkout`, a generator), when it
    /// supports registering watchers.
    async fn watch_files(&self) {
        if !lock(&self.session).watch_files {
            return;
        }
        let extensions: Vec<String> = {
            let h = lock(&self.host);
            let c = h.config();
            c.fixed_extensions
                .iter()
                .chain(&c.free_extensions)
                .map(|e| e.trim_start_matches('.').to_string())
                .collect()
        };
        let mut watchers: Vec<Value> = extensions
            .iter()
            .map(|e| json!({"globPattern": format!("**/*.{e}")}))
            .collect();
        // Headers the preprocessor or INCLUDE lines read.
        for e in HEADER_EXTENSIONS {
            watchers.push(json!({"globPattern": format!("**/*.{e}")}));
        }
        watchers.push(json!({"globPattern": "**/dfort.toml"}));
        let registration = Registration {
            id: "dfort-watch".into(),
            method: "workspace/didChangeWatchedFiles".into(),
            register_options: Some(json!({ "watchers": watchers })),
        };
        if let Err(e) = self.client.register_capability(vec![registration]).await {
            self.client
                .log_message(
                    MessageType::WARNING,
                    format!("dfort: cannot watch files: {e}"),
                )
                .await;
        }
    }

    /// Whether `$/progress` may be sent under `token`: the client said it shows
    /// work-done progress and accepted the token.
    async fn may_report_progress(&self, session: &Session, token: &NumberOrString) -> bool {
        session.progress
            && self
                .client
                .create_work_done_progress(token.clone())
                .await
                .is_ok()
    }

    /// Reads the workspace's Fortran files into the host, reporting
    /// progress: those `dfort.toml` lists (`files`), else those found
    /// under the workspace folder.
    async fn index_workspace(&self) {
        let session = self.session();
        let listed = session
            .toml
            .as_ref()
            .map(|(path, t)| t.listed_files(path))
            .unwrap_or_default();
        let files = if !listed.is_empty() {
            listed.into_iter().take(index::MAX_FILES).collect()
        } else {
            let Some(root) = session.root.clone() else {
                return;
            };
            let host = self.host.clone();
            tokio::task::spawn_blocking(move || {
                let h = lock(&host);
                index::fortran_files(&root, &|p| h.is_fortran(p))
            })
            .await
            .unwrap_or_default()
        };
        if files.is_empty() {
            return;
        }
        let token = NumberOrString::String("dfort-index".into());
        let progress = if self.may_report_progress(&session, &token).await {
            Some(
                self.client
                    .progress(token, "dfort: indexing Fortran files")
                    .with_percentage(0)
                    .begin()
                    .await,
            )
        } else {
            None
        };
        let n = files.len();
        let started = std::time::Instant::now();
        for (i, chunk) in files.chunks(50).enumerate() {
            let texts: Vec<(PathBuf, String)> = chunk
                .iter()
                .filter_map(|p| Some((p.clone(), std::fs::read_to_string(p).ok()?)))
                .collect();
            {
                let mut h = lock(&self.host);
                for (p, t) in &texts {
                    h.set_text(p, t, false, 0);
                }
            }
            if let Some(pr) = &progress {
                let done = ((i + 1) * 50).min(n);
                pr.report_with_message(format!("{done}/{n} files"), (done * 100 / n) as u32)
                    .await;
            }
        }
        let read = started.elapsed();
        let host = self.host.clone();
        let times = self
            .with_snapshot("indexing", move |_, _| lock(&host).build_times())
            .await
            .ok();
        self.client
            .log_message(
                MessageType::INFO,
                match times {
                    Some(t) => format!(
                        "dfort: indexed {n} Fortran files in {:.1} s (reading {:.1} s, {t})",
                        started.elapsed().as_secs_f64(),
                        read.as_secs_f64()
                    ),
                    None => format!("dfort: indexed {n} Fortran files"),
                },
            )
            .await;
        // Symbols, references and completion answer from here on; the
        // analyses that hints, hover and diagnostics read run now, so the
        // first document opened need not wait for all of them.
        if let Some(pr) = &progress {
            pr.report_with_message(format!("{n} files indexed; analysing"), 100)
                .await;
        }
        let took = self
            .with_snapshot("analyses", |snap, _| {
                snap.analysis();
                snap.analysis_time()
            })
            .await
            .ok()
            .flatten();
        if let Some(pr) = progress {
            pr.finish_with_message(format!("{n} Fortran files indexed and analysed"))
                .await;
        }
        if let Some(took) = took {
            self.client
                .log_message(
                    MessageType::INFO,
                    format!(
                        "dfort: analysed {n} Fortran files in {:.1} s ({:.1} s after indexing began)",
                        took.as_secs_f64(),
                        started.elapsed().as_secs_f64()
                    ),
                )
                .await;
        }
    }

    /// Writes a generated derivative's files, as `dfort adjoint` and
    /// `dfort tangent` do, then asks the client to open the first
    /// (`window/showDocument`) and says what was written
    /// (`window/showMessage`). The answer to the command:
    /// `{written, files, shown}`, or `{written: false, problems}`.
    async fn write_generated(&self, what: &str, files: &[(PathBuf, String)]) -> Value {
        let mut names = Vec::new();
        for (path, text) in files {
            let written = path
                .parent()
                .map_or(Ok(()), std::fs::create_dir_all)
                .and_then(|_| std::fs::write(path, text));
            if let Err(e) = written {
                let msg = format!("dfort: cannot write {}: {e}", path.display());
                self.client.show_message(MessageType::ERROR, &msg).await;
                return json!({"written": false, "problems": msg});
            }
            names.push(path.display().to_string());
        }
        let session = self.session();
        let shown_name = |p: &Path| {
            session
                .root
                .as_deref()
                .and_then(|r| p.strip_prefix(r).ok())
                .unwrap_or(p)
                .display()
                .to_string()
        };
        let listed: Vec<String> = files.iter().map(|(p, _)| shown_name(p)).collect();
        self.client
            .show_message(
                MessageType::INFO,
                format!("dfort: {what}: wrote {}", listed.join(", ")),
            )
            .await;
        let mut shown = false;
        if let (true, Some(uri)) = (
            session.show_document,
            files.first().and_then(|(p, _)| uri_of(p)),
        ) {
            shown = self
                .client
                .show_document(ShowDocumentParams {
                    uri,
                    external: None,
                    take_focus: Some(true),
                    selection: None,
                })
                .await
                .unwrap_or(false);
        }
        json!({"written": true, "files": names, "shown": shown})
    }

    async fn generate(
        &self,
        path: PathBuf,
        unit: String,
        mode: Mode,
    ) -> Result<std::result::Result<Vec<(PathBuf, String)>, String>> {
        self.with_snapshot("code generation", move |snap, _| {
            actions::generate(snap, &path, &unit, mode).map_err(|problems| {
                let mut msg = format!("dfort: no {} written for {unit}:", mode.as_str());
                for p in problems.iter().take(5) {
                    let line = snap
                        .doc(&p.path)
                        .map_or(0, |d| d.lines.line_of(p.range.start) + 1);
                    msg.push_str(&format!(
                        "\n{}:{}: {}",
                        p.path.file_name().map_or_else(
                            || p.path.display().to_string(),
                            |f| f.to_string_lossy().into_owned()
                        ),
                        line,
                        p.message
                    ));
                }
                msg
            })
        })
        .await
    }

    /// The procedure an `executeCommand` names: `[uri, unitName]` or `[uri, position]`.
    async fn command_target(&self, args: &[Value]) -> Result<(PathBuf, String)> {
        let bad = |m: &str| Error::invalid_params(m.to_string());
        let uri: Uri = args
            .first()
            .and_then(|v| v.as_str())
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| bad("expected [uri, position or unit name]"))?;
        let path = path_of(&uri).ok_or_else(|| bad("not a file URI"))?;
        match args.get(1) {
            Some(Value::String(name)) => Ok((path, name.to_ascii_lowercase())),
            Some(v) => {
                let pos: Position = serde_json::from_value(v.clone())
                    .map_err(|_| bad("the second argument is neither a position nor a name"))?;
                let p = path.clone();
                let name = self
                    .with_snapshot("command", move |snap, s| {
                        let doc = snap.doc(&p)?;
                        let off = Text::of(doc).offset(pos, s.enc);
                        actions::procedure_at(snap, &p, off).map(|u| u.name.clone())
                    })
                    .await?;
                name.map(|n| (path, n))
                    .ok_or_else(|| bad("the position is not inside a subroutine or function"))
            }
            None => Err(bad("expected [uri, position or unit name]")),
        }
    }

    /// Runs `dfort verify` on the root and the files it reaches. Values
    /// the root's arguments need and nobody gave are answered as `missing`
    /// (to a client that asks the user for them: `options.ask`) or named
    /// with the `dfort.toml` table that gives them; values the client
    /// sends (`options.values`) are saved in that table first.
    async fn verify(&self, path: PathBuf, unit: String, options: VerifyOptions) -> Result<Value> {
        let files = {
            let p = path.clone();
            let u = unit.clone();
            self.with_snapshot("verify", move |snap, _| {
                let mut files: Vec<PathBuf> = vec![p.clone()];
                if let Some(root) = snap.units_of(&p).find(|x| x.is_procedure() && x.name == u) {
                    for id in actions::reached(snap, root.id) {
                        if let Some(place) = snap
                            .program
                            .units
                            .get(id)
                            .and_then(|x| snap.places.get(&x.span.file))
                        {
                            let generated = snap
                                .doc(&place.path)
                                .is_some_and(|d| index::is_generated(&d.text));
                            if !generated && !files.iter().any(|f| **f == *place.path) {
                                files.push(place.path.to_path_buf());
                            }
                        }
                    }
                }
                files
            })
            .await?
        };
        let exe = self.options.exe.clone();
        let session = self.session();
        let cwd = session
            .root
            .clone()
            .or_else(|| path.parent().map(Path::to_path_buf));
        // `$/progress` while it compiles and runs, for clients that show it.
        let token = NumberOrString::String(format!("dfort-verify-{unit}"));
        let progress = if self.may_report_progress(&session, &token).await {
            Some(
                self.client
                    .progress(token, format!("dfort: verifying {unit}"))
                    .with_message("compiling the derivatives with gfortran and running the checks")
                    .begin()
                    .await,
            )
        } else {
            None
        };
        // Where the values are kept: the dfort.toml the run reads, else a
        // new one where it runs.
        let dir = cwd.clone().unwrap_or_else(|| PathBuf::from("."));
        let config_file =
            crate::config::locate(&dir, &files).unwrap_or_else(|| dir.join("dfort.toml"));
        if let Some(values) = options.values.as_ref().filter(|v| !v.is_empty()) {
            if let Err(e) = crate::config_edit::save(&config_file, &unit, values) {
                let msg = format!("dfort: cannot save the values: {e}");
                self.client.show_message(MessageType::ERROR, &msg).await;
                return Ok(json!({"ok": false, "output": msg, "summary": msg}));
            }
        }
        let u = unit.clone();
        let out = tokio::task::spawn_blocking(move || {
            let mut cmd = std::process::Command::new(&exe);
            cmd.arg("verify")
                .args(&files)
                .arg("--root")
                .arg(&u)
                .arg("--missing-json");
            if let Some(d) = cwd {
                cmd.current_dir(d);
            }
            cmd.output()
        })
        .await;
        if let Some(pr) = progress {
            pr.finish_with_message("done").await;
        }
        let out = out.map_err(|e| Error::invalid_params(format!("verify did not finish: {e}")))?;
        let out = match out {
            Ok(o) => o,
            Err(e) => {
                let msg = format!("dfort: cannot run {}: {e}", self.options.exe.display());
                self.client.show_message(MessageType::ERROR, &msg).await;
                return Ok(json!({"ok": false, "output": msg}));
            }
        };
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        if out.status.code() == Some(i32::from(crate::verify::MISSING_VALUES)) {
            return Ok(self
                .missing_values(&unit, &stdout, &config_file, options.ask)
                .await);
        }
        let ok = out.status.success();
        let summary: Vec<&str> = stdout
            .lines()
            .filter(|l| l.contains("relative error"))
            .collect();
        let message = if summary.is_empty() {
            format!("dfort verify failed:\n{}", stderr.trim())
        } else {
            summary.join("\n")
        };
        self.client
            .show_message(
                if ok {
                    MessageType::INFO
                } else {
                    MessageType::ERROR
                },
                &message,
            )
            .await;
        Ok(json!({"ok": ok, "output": format!("{stdout}{stderr}"), "summary": message}))
    }

    /// The answer to "Verify derivatives" when values are missing (`json`:
    /// what `dfort verify --missing-json` printed). A client that asks the
    /// user gets the list; to another, the server names the `dfort.toml`
    /// table that gives them.
    async fn missing_values(&self, unit: &str, json: &str, config: &Path, ask: bool) -> Value {
        let missing: Vec<crate::verify::Missing> = serde_json::from_str::<Value>(json)
            .ok()
            .and_then(|v| serde_json::from_value(v.get("missing")?.clone()).ok())
            .unwrap_or_default();
        let message = crate::verify::missing_for_editors(unit, &missing, config);
        if !ask {
            self.client
                .show_message(MessageType::WARNING, &format!("dfort: {message}"))
                .await;
        }
        json!({
            "ok": false,
            "root": unit,
            "missing": missing,
            "config": config,
            "summary": message,
            "output": message,
        })
    }
}

impl LanguageServer for Backend {
    #[allow(deprecated)] // root_uri: older clients send only that.
    async fn initialize(&self, params: InitializeParams) -> Result<InitializeResult> {
        let caps = &params.capabilities;
        let utf8 = caps
            .general
            .as_ref()
            .and_then(|g| g.position_encodings.as_ref())
            .is_some_and(|e| e.contains(&PositionEncodingKind::UTF8));
        let show_document = caps
            .window
            .as_ref()
            .and_then(|w| w.show_document.as_ref())
            .is_some_and(|s| s.support);
        let progress = caps
            .window
            .as_ref()
            .and_then(|w| w.work_done_progress)
            .unwrap_or(false);
        let watch_files = caps
            .workspace
            .as_ref()
            .and_then(|w| w.did_change_watched_files.as_ref())
            .and_then(|d| d.dynamic_registration)
            .unwrap_or(false);
        let root = params
            .workspace_folders
            .as_ref()
            .and_then(|f| f.first())
            .and_then(|f| path_of(&f.uri))
            .or_else(|| params.root_uri.as_ref().and_then(path_of));
        {
            let mut s = lock(&self.session);
            s.enc = if utf8 {
                Encoding::Utf8
            } else {
                Encoding::Utf16
            };
            s.show_document = show_document;
            s.progress = progress;
            s.watch_files = watch_files;
            s.root = root;
        }
        self.apply_settings(params.initialization_options.as_ref())
            .await;
        Ok(InitializeResult {
            capabilities: ServerCapabilities {
                position_encoding: Some(if utf8 {
                    PositionEncodingKind::UTF8
                } else {
                    PositionEncodingKind::UTF16
                }),
                text_document_sync: Some(TextDocumentSyncCapability::Options(
                    TextDocumentSyncOptions {
                        open_close: Some(true),
                        change: Some(TextDocumentSyncKind::INCREMENTAL),
                        save: Some(TextDocumentSyncSaveOptions::Supported(true)),
                        ..Default::default()
                    },
                )),
                hover_provider: Some(HoverProviderCapability::Simple(true)),
                inlay_hint_provider: Some(OneOf::Left(true)),
                code_action_provider: Some(CodeActionProviderCapability::Options(
                    CodeActionOptions {
                        code_action_kinds: Some(vec![
                            CodeActionKind::REFACTOR,
                            CodeActionKind::SOURCE,
                        ]),
                        resolve_provider: Some(false),
                        ..Default::default()
                    },
                )),
                execute_command_provider: Some(ExecuteCommandOptions {
                    commands: vec![
                        CMD_ADJOINT.to_string(),
                        CMD_TANGENT.to_string(),
                        CMD_VERIFY.to_string(),
                    ],
                    ..Default::default()
                }),
                document_symbol_provider: Some(OneOf::Left(true)),
                folding_range_provider: Some(FoldingRangeProviderCapability::Simple(true)),
                definition_provider: Some(OneOf::Left(true)),
                implementation_provider: Some(ImplementationProviderCapability::Simple(true)),
                references_provider: Some(OneOf::Left(true)),
                document_highlight_provider: Some(OneOf::Left(true)),
                rename_provider: Some(OneOf::Right(RenameOptions {
                    prepare_provider: Some(true),
                    work_done_progress_options: Default::default(),
                })),
                workspace_symbol_provider: Some(OneOf::Left(true)),
                completion_provider: Some(CompletionOptions {
                    resolve_provider: Some(true),
                    trigger_characters: Some(vec!["%".into()]),
                    ..Default::default()
                }),
                code_lens_provider: Some(CodeLensOptions {
                    resolve_provider: Some(false),
                }),
                semantic_tokens_provider: Some(
                    SemanticTokensServerCapabilities::SemanticTokensOptions(
                        SemanticTokensOptions {
                            legend: convert::semantic_legend(),
                            full: Some(SemanticTokensFullOptions::Bool(true)),
                            range: Some(true),
                            work_done_progress_options: Default::default(),
                        },
                    ),
                ),
                signature_help_provider: Some(SignatureHelpOptions {
                    trigger_characters: Some(vec!["(".into(), ",".into()]),
                    retrigger_characters: Some(vec!["=".into()]),
                    work_done_progress_options: Default::default(),
                }),
                ..Default::default()
            },
            server_info: Some(ServerInfo {
                name: "dfort".into(),
                version: Some(env!("CARGO_PKG_VERSION").into()),
            }),
            offset_encoding: None,
        })
    }

    async fn initialized(&self, _: InitializedParams) {
        self.watch_files().await;
        self.index_workspace().await;
        self.refresh();
        // Hints asked for while the workspace was being read saw only
        // part of it (a callee without source is analysed
        // conservatively): the client asks again.
        let _ = self.client.inlay_hint_refresh().await;
    }

    async fn did_change_watched_files(&self, params: DidChangeWatchedFilesParams) {
        let mut settings_changed = false;
        {
            let mut h = lock(&self.host);
            for ev in params.changes {
                let Some(path) = path_of(&ev.uri) else {
                    continue;
                };
                if path.file_name().is_some_and(|n| n == "dfort.toml") {
                    settings_changed = true;
                    continue;
                }
                // A header an open or indexed document reads: those
                // documents are preprocessed again.
                h.header_changed(&path);
                if !h.is_fortran(&path) || h.document(&path).is_some_and(|d| d.open) {
                    // Open documents follow the editor, not the disk.
                    continue;
                }
                match std::fs::read_to_string(&path).ok() {
                    Some(text) if ev.typ != FileChangeType::DELETED => {
                        h.set_text(&path, &text, false, 0)
                    }
                    _ => h.remove(&path),
                }
            }
        }
        if settings_changed {
            self.apply_settings(None).await;
        }
        self.refresh();
    }

    async fn shutdown(&self) -> Result<()> {
        Ok(())
    }

    async fn did_open(&self, params: DidOpenTextDocumentParams) {
        let Some(path) = path_of(&params.text_document.uri) else {
            return;
        };
        {
            let mut h = lock(&self.host);
            if !h.is_fortran(&path) && params.text_document.language_id != "fortran" {
                return;
            }
            h.set_text(
                &path,
                &params.text_document.text,
                true,
                params.text_document.version,
            );
        }
        self.refresh();
    }

    async fn did_change(&self, params: DidChangeTextDocumentParams) {
        let Some(path) = path_of(&params.text_document.uri) else {
            return;
        };
        let enc = lock(&self.session).enc;
        let version = params.text_document.version;
        {
            let mut h = lock(&self.host);
            for ch in params.content_changes {
                let range = match (ch.range, h.document(&path)) {
                    (Some(r), Some(doc)) => Some(
                        Text {
                            text: &doc.text,
                            lines: &doc.lines,
                        }
                        .text_range(r, enc),
                    ),
                    (None, _) => None,
                    (Some(_), None) => return,
                };
                h.edit(
                    &path,
                    &[TextChange {
                        range,
                        text: ch.text,
                    }],
                    version,
                );
            }
        }
        self.refresh();
    }

    async fn did_save(&self, _: DidSaveTextDocumentParams) {}

    async fn did_close(&self, params: DidCloseTextDocumentParams) {
        if let Some(path) = path_of(&params.text_document.uri) {
            lock(&self.host).close(&path);
        }
        publish(&self.outbox, params.text_document.uri, Vec::new(), None);
    }

    async fn did_change_configuration(&self, params: DidChangeConfigurationParams) {
        let section = params
            .settings
            .get("dfort")
            .cloned()
            .unwrap_or(params.settings);
        self.apply_settings(Some(&section)).await;
        self.refresh();
        let _ = self.client.inlay_hint_refresh().await;
    }

    async fn hover(&self, params: HoverParams) -> Result<Option<Hover>> {
        let p = params.text_document_position_params;
        self.with_snapshot("hover", move |snap, s| {
            let path = known(snap, &p.text_document.uri)?;
            let t = Text::of(snap.doc(&path)?);
            let off = t.offset(p.position, s.enc);
            let h = dfort_ide::hover::hover(snap, &path, off)?;
            Some(Hover {
                contents: HoverContents::Markup(MarkupContent {
                    kind: MarkupKind::Markdown,
                    value: h.markdown,
                }),
                range: Some(t.range(h.range, s.enc)),
            })
        })
        .await
    }

    async fn inlay_hint(&self, params: InlayHintParams) -> Result<Option<Vec<InlayHint>>> {
        self.with_snapshot("inlay hints", move |snap, s| {
            let path = known(snap, &params.text_document.uri)?;
            let t = Text::of(snap.doc(&path)?);
            let range = t.text_range(params.range, s.enc);
            Some(
                dfort_ide::hints::inlay_hints(snap, &path, range, s.settings.hints)
                    .iter()
                    .map(|h| convert::inlay_hint(&t, h, s.enc))
                    .collect(),
            )
        })
        .await
    }

    async fn document_symbol(
        &self,
        params: DocumentSymbolParams,
    ) -> Result<Option<DocumentSymbolResponse>> {
        self.with_snapshot("document symbols", move |snap, s| {
            let path = known(snap, &params.text_document.uri)?;
            let t = Text::of(snap.doc(&path)?);
            Some(DocumentSymbolResponse::Nested(
                dfort_ide::navigation::document_symbols(snap, &path)
                    .iter()
                    .map(|d| convert::document_symbol(&t, d, s.enc))
                    .collect(),
            ))
        })
        .await
    }

    async fn folding_range(&self, params: FoldingRangeParams) -> Result<Option<Vec<FoldingRange>>> {
        self.with_document("folding ranges", params.text_document.uri, |text, form| {
            dfort_ide::folding::folding_ranges(text, form)
                .iter()
                .map(convert::folding_range)
                .collect()
        })
        .await
    }

    async fn goto_definition(
        &self,
        params: GotoDefinitionParams,
    ) -> Result<Option<GotoDefinitionResponse>> {
        let p = params.text_document_position_params;
        self.with_snapshot("definition", move |snap, s| {
            let path = known(snap, &p.text_document.uri)?;
            let off = Text::of(snap.doc(&path)?).offset(p.position, s.enc);
            let locs: Vec<Location> = dfort_ide::navigation::definition(snap, &path, off)
                .iter()
                .filter_map(|l| convert::location(snap, l, s.enc))
                .collect();
            (!locs.is_empty()).then_some(GotoDefinitionResponse::Array(locs))
        })
        .await
    }

    /// From a primal statement to its blocks in the adjoint and tangent
    /// written beside its file ([`dfort_ide::origins`]).
    async fn goto_implementation(
        &self,
        params: request::GotoImplementationParams,
    ) -> Result<Option<GotoDefinitionResponse>> {
        let p = params.text_document_position_params;
        self.with_snapshot("implementation", move |snap, s| {
            let path = known(snap, &p.text_document.uri)?;
            let off = Text::of(snap.doc(&path)?).offset(p.position, s.enc);
            let read = |f: &Path| std::fs::read_to_string(f).ok();
            let locs: Vec<Location> = dfort_ide::origins::blocks_of(snap, &path, off, &read)
                .iter()
                .filter_map(convert::line_location)
                .collect();
            (!locs.is_empty()).then_some(GotoDefinitionResponse::Array(locs))
        })
        .await
    }

    async fn references(&self, params: ReferenceParams) -> Result<Option<Vec<Location>>> {
        let p = params.text_document_position;
        let declarations = params.context.include_declaration;
        self.with_snapshot("references", move |snap, s| {
            let path = known(snap, &p.text_document.uri)?;
            let off = Text::of(snap.doc(&path)?).offset(p.position, s.enc);
            let locs: Vec<Location> =
                dfort_ide::references::references(snap, &path, off, declarations)
                    .iter()
                    .filter_map(|l| convert::location(snap, l, s.enc))
                    .collect();
            Some(locs)
        })
        .await
    }

    async fn completion(&self, params: CompletionParams) -> Result<Option<CompletionResponse>> {
        let p = params.text_document_position;
        self.with_snapshot("completion", move |snap, s| {
            let path = known(snap, &p.text_document.uri)?;
            let t = Text::of(snap.doc(&path)?);
            let off = t.offset(p.position, s.enc);
            let found = dfort_ide::completion::completions(snap, &path, off)?;
            let data = json!({ "uri": p.text_document.uri.as_str(), "offset": off });
            Some(CompletionResponse::Array(
                found
                    .items
                    .iter()
                    .map(|i| convert::completion_item(&t, found.range, i, s.enc, data.clone()))
                    .collect(),
            ))
        })
        .await
    }

    async fn completion_resolve(&self, item: CompletionItem) -> Result<CompletionItem> {
        self.with_snapshot("completion resolve", move |snap, _| {
            let mut item = item;
            let at = item.data.as_ref().and_then(|d| {
                let uri: Uri = d.get("uri")?.as_str()?.parse().ok()?;
                let off = u32::try_from(d.get("offset")?.as_u64()?).ok()?;
                Some((known(snap, &uri)?, off))
            });
            if let Some((path, off)) = at {
                let md = dfort_ide::completion::documentation(snap, &path, off, &item.label);
                item.documentation = md.map(|value| {
                    Documentation::MarkupContent(MarkupContent {
                        kind: MarkupKind::Markdown,
                        value,
                    })
                });
            }
            item
        })
        .await
    }

    async fn signature_help(&self, params: SignatureHelpParams) -> Result<Option<SignatureHelp>> {
        let p = params.text_document_position_params;
        self.with_snapshot("signature help", move |snap, s| {
            let path = known(snap, &p.text_document.uri)?;
            let off = Text::of(snap.doc(&path)?).offset(p.position, s.enc);
            dfort_ide::signature::signature_help(snap, &path, off)
                .map(|h| convert::signature_help(&h))
        })
        .await
    }

    async fn code_lens(&self, params: CodeLensParams) -> Result<Option<Vec<CodeLens>>> {
        self.with_snapshot("code lens", move |snap, s| {
            let uri = params.text_document.uri;
            let path = known(snap, &uri)?;
            let t = Text::of(snap.doc(&path)?);
            let lenses = dfort_ide::lens::code_lenses(snap, &path);
            Some(
                lenses
                    .iter()
                    .map(|l| CodeLens {
                        range: t.range(l.range, s.enc),
                        // A label only: a command no client runs.
                        command: Some(
                            l.action
                                .as_ref()
                                .and_then(|k| command_for(k, &l.title, &uri, &l.unit))
                                .unwrap_or(Command {
                                    title: l.title.clone(),
                                    command: String::new(),
                                    arguments: None,
                                }),
                        ),
                        data: None,
                    })
                    .collect(),
            )
        })
        .await
    }

    async fn semantic_tokens_full(
        &self,
        params: SemanticTokensParams,
    ) -> Result<Option<SemanticTokensResult>> {
        self.with_snapshot("semantic tokens", move |snap, s| {
            let path = known(snap, &params.text_document.uri)?;
            let t = Text::of(snap.doc(&path)?);
            let tokens = dfort_ide::semantic::semantic_tokens(snap, &path);
            Some(SemanticTokensResult::Tokens(convert::semantic_tokens(
                &t, &tokens, None, s.enc,
            )))
        })
        .await
    }

    async fn semantic_tokens_range(
        &self,
        params: SemanticTokensRangeParams,
    ) -> Result<Option<SemanticTokensRangeResult>> {
        self.with_snapshot("semantic tokens", move |snap, s| {
            let path = known(snap, &params.text_document.uri)?;
            let t = Text::of(snap.doc(&path)?);
            let within = t.text_range(params.range, s.enc);
            let tokens = dfort_ide::semantic::semantic_tokens(snap, &path);
            Some(SemanticTokensRangeResult::Tokens(convert::semantic_tokens(
                &t,
                &tokens,
                Some(within),
                s.enc,
            )))
        })
        .await
    }

    async fn document_highlight(
        &self,
        params: DocumentHighlightParams,
    ) -> Result<Option<Vec<DocumentHighlight>>> {
        let p = params.text_document_position_params;
        self.with_snapshot("document highlight", move |snap, s| {
            let path = known(snap, &p.text_document.uri)?;
            let t = Text::of(snap.doc(&path)?);
            let off = t.offset(p.position, s.enc);
            let found = dfort_ide::references::highlights(snap, &path, off);
            Some(
                found
                    .iter()
                    .map(|(r, a)| convert::highlight(&t, *r, *a, s.enc))
                    .collect(),
            )
        })
        .await
    }

    async fn prepare_rename(
        &self,
        params: TextDocumentPositionParams,
    ) -> Result<Option<PrepareRenameResponse>> {
        let answer = self
            .with_snapshot("prepare rename", move |snap, s| {
                let path = known(snap, &params.text_document.uri)
                    .ok_or_else(|| "dfort does not have this file".to_string())?;
                let t = Text::of(snap.doc(&path).ok_or("dfort does not have this file")?);
                let off = t.offset(params.position, s.enc);
                dfort_ide::references::prepare_rename(snap, &path, off)
                    .map(|r| PrepareRenameResponse::Range(t.range(r, s.enc)))
            })
            .await?;
        answer.map(Some).map_err(Error::invalid_params)
    }

    async fn rename(&self, params: RenameParams) -> Result<Option<WorkspaceEdit>> {
        let p = params.text_document_position;
        let new_name = params.new_name;
        let answer = self
            .with_snapshot("rename", move |snap, s| {
                let path = known(snap, &p.text_document.uri)
                    .ok_or_else(|| "dfort does not have this file".to_string())?;
                let off = Text::of(snap.doc(&path).ok_or("dfort does not have this file")?)
                    .offset(p.position, s.enc);
                let edits = dfort_ide::references::rename(snap, &path, off, &new_name)?;
                let mut changes = HashMap::new();
                for (file, edits) in edits {
                    let loc = |r| {
                        convert::location(
                            snap,
                            &dfort_ide::navigation::Location {
                                path: file.clone(),
                                range: r,
                            },
                            s.enc,
                        )
                    };
                    let mut text_edits = Vec::new();
                    let mut uri = None;
                    for (r, new_text) in edits {
                        let l = loc(r).ok_or_else(|| format!("cannot edit {}", file.display()))?;
                        uri = Some(l.uri);
                        text_edits.push(TextEdit {
                            range: l.range,
                            new_text,
                        });
                    }
                    if let Some(uri) = uri {
                        changes.insert(uri, text_edits);
                    }
                }
                Ok::<_, String>(WorkspaceEdit {
                    changes: Some(changes),
                    ..Default::default()
                })
            })
            .await?;
        answer.map(Some).map_err(Error::invalid_params)
    }

    async fn symbol(
        &self,
        params: WorkspaceSymbolParams,
    ) -> Result<Option<WorkspaceSymbolResponse>> {
        self.with_snapshot("workspace symbols", move |snap, s| {
            Some(WorkspaceSymbolResponse::Flat(
                dfort_ide::navigation::workspace_symbols(snap, &params.query, 500)
                    .iter()
                    .filter_map(|w| convert::workspace_symbol(snap, w, s.enc))
                    .collect(),
            ))
        })
        .await
    }

    async fn code_action(&self, params: CodeActionParams) -> Result<Option<CodeActionResponse>> {
        let uri = params.text_document.uri.clone();
        let start = params.range.start;
        let found = self
            .with_snapshot("code actions", move |snap, s| {
                let path = known(snap, &uri)?;
                let t = Text::of(snap.doc(&path)?);
                let off = t.offset(start, s.enc);
                let acts = actions::code_actions(snap, &path, off);
                // Mark edits are small: convert them here.
                let marks: Vec<Option<TextEdit>> = acts
                    .iter()
                    .map(|a| match &a.kind {
                        ActionKind::Mark { edit, .. } => Some(TextEdit {
                            range: t.range(edit.range, s.enc),
                            new_text: edit.text.clone(),
                        }),
                        _ => None,
                    })
                    .collect();
                Some((acts, marks))
            })
            .await?;
        let Some((acts, marks)) = found else {
            return Ok(None);
        };
        let uri = params.text_document.uri;
        let mut out = Vec::new();
        for (a, mark) in acts.into_iter().zip(marks) {
            let mut ca = CodeAction {
                title: a.title.clone(),
                ..Default::default()
            };
            match a.kind {
                ActionKind::Generate(mode) => {
                    // The server writes the files when the command runs,
                    // in every client (no workspace edit for one to drop).
                    ca.kind = Some(CodeActionKind::from(format!(
                        "refactor.dfort.{}",
                        mode.as_str()
                    )));
                    ca.command = command_for(&a.kind, &a.title, &uri, &a.unit);
                }
                ActionKind::Verify => {
                    ca.kind = Some(CodeActionKind::from("source.dfort.verify".to_string()));
                    ca.command = command_for(&a.kind, &a.title, &uri, &a.unit);
                }
                ActionKind::Mark { .. } => {
                    ca.kind = Some(CodeActionKind::REFACTOR_REWRITE);
                    ca.edit = mark.map(|e| WorkspaceEdit {
                        changes: Some(HashMap::from([(uri.clone(), vec![e])])),
                        ..Default::default()
                    });
                }
            }
            out.push(CodeActionOrCommand::CodeAction(ca));
        }
        Ok(Some(out))
    }

    async fn execute_command(&self, params: ExecuteCommandParams) -> Result<Option<Value>> {
        let mode = match params.command.as_str() {
            CMD_ADJOINT => Some(Mode::Adjoint),
            CMD_TANGENT => Some(Mode::Tangent),
            CMD_VERIFY => None,
            other => {
                return Err(Error::invalid_params(format!("unknown command `{other}`")));
            }
        };
        let (path, unit) = self.command_target(&params.arguments).await?;
        let Some(mode) = mode else {
            let options = match params.arguments.get(2) {
                Some(v) => serde_json::from_value(v.clone()).map_err(|e| {
                    Error::invalid_params(format!("the third argument of `{CMD_VERIFY}`: {e}"))
                })?,
                None => VerifyOptions::default(),
            };
            return self.verify(path, unit, options).await.map(Some);
        };
        match self.generate(path, unit.clone(), mode).await? {
            Ok(files) => {
                let what = format!("{} of {unit}", mode.as_str());
                Ok(Some(self.write_generated(&what, &files).await))
            }
            Err(reason) => {
                self.client.show_message(MessageType::ERROR, &reason).await;
                Ok(Some(json!({"written": false, "problems": reason})))
            }
        }
    }
}
