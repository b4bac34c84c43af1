//! Shared helpers for the end-to-end tests.
#![allow(dead_code)]

use dfort_ide::host::{Host, HostConfig, Snapshot};
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A directory of its own for one test (`dfort-<tag>-<pid>` under the
/// system's temporary directory), removed when the test passes and kept,
/// with what was built in it, when it fails.
pub struct Scratch(PathBuf);

impl Scratch {
    pub fn new(tag: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("dfort-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }
}

impl std::ops::Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

pub fn fixtures() -> PathBuf {
    root().join("tests/fixtures")
}

/// Fortran files directly inside `dir`, sorted.
pub fn fortran_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| dfort_syntax::source_form::is_fortran_path(p))
        .collect();
    v.sort();
    v
}

/// Files loaded as every command loads them: into the host (the chunked
/// front end of `dfort check` and the editor), with no analysis asked.
pub struct Loaded {
    pub snap: Arc<Snapshot>,
    /// The documents, in the order given.
    pub paths: Vec<PathBuf>,
}

impl std::ops::Deref for Loaded {
    type Target = Snapshot;
    fn deref(&self) -> &Snapshot {
        &self.snap
    }
}

/// A front-end diagnostic with its document and 1-based line and
/// (character) column.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diag {
    pub path: PathBuf,
    pub severity: dfort_syntax::Severity,
    pub code: dfort_syntax::Code,
    pub message: String,
    pub line: u32,
    pub col: u32,
}

impl Loaded {
    /// The front end's diagnostics of every document and header read, as
    /// `dfort check` reports them.
    pub fn diagnostics(&self) -> Vec<Diag> {
        dfort_ide::diagnostics::front_end_of(&self.snap, &self.paths)
            .into_iter()
            .map(|(p, d)| {
                let (line, col) = self.snap.file_text(p).map_or((0, 0), |(text, lines)| {
                    (
                        lines.line_col(d.range.start).line + 1,
                        lines.char_col(text, d.range.start) + 1,
                    )
                });
                Diag {
                    path: p.to_path_buf(),
                    severity: d.severity,
                    code: d.code,
                    message: d.message,
                    line,
                    col,
                }
            })
            .collect()
    }

    /// `path:line:col: severity: message [code]`, one per line.
    pub fn render_diagnostics(&self) -> String {
        dfort_ide::diagnostics::front_end_of(&self.snap, &self.paths)
            .iter()
            .map(|(p, d)| self.snap.render_diagnostic(p, d) + "\n")
            .collect()
    }

    pub fn error_count(&self) -> usize {
        self.diagnostics()
            .iter()
            .filter(|d| d.severity == dfort_syntax::Severity::Error)
            .count()
    }

    /// The text of the first document.
    pub fn text(&self) -> &str {
        &self
            .snap
            .doc(&self.paths[0])
            .expect("the first document")
            .text
    }

    /// The document text a (chunk-relative) span covers.
    pub fn source(&self, span: dfort_ir::Span) -> &str {
        let (path, range) = self
            .snap
            .to_doc(span.file, span.range)
            .expect("a placed span");
        let (text, _) = self.snap.file_text(path).expect("its text");
        &text[range.start as usize..range.end as usize]
    }

    /// The length of the chunk a span's offsets are relative to.
    pub fn chunk_len(&self, file: dfort_ir::FileId) -> u32 {
        self.snap.places[&file].len
    }

    /// `dfort ir`'s dump of the first document's units.
    pub fn dump(&self) -> String {
        let line = |span: dfort_ir::Span| self.snap.line_of(span);
        self.snap
            .units_of(&self.paths[0])
            .map(|u| dfort_ir::dump::unit(&self.snap.program, u, &line) + "\n")
            .collect()
    }
}

/// The host's settings of the tests: the default front end, no analysis.
fn config() -> HostConfig {
    HostConfig {
        others: false,
        ..HostConfig::default()
    }
}

pub fn load(paths: &[PathBuf]) -> Loaded {
    let (mut host, errors) = Host::load(paths, config());
    assert!(errors.is_empty(), "load errors: {errors:?}");
    Loaded {
        snap: host.snapshot(),
        paths: paths.to_vec(),
    }
}

/// In-memory files (path, text), loaded as [`load`] loads files.
pub fn from_sources(sources: Vec<(PathBuf, String)>) -> Loaded {
    let paths = sources.iter().map(|(p, _)| p.clone()).collect();
    Loaded {
        snap: Host::from_sources(sources, config()).snapshot(),
        paths,
    }
}

pub fn load_one(path: &Path) -> Loaded {
    load(&[path.to_path_buf()])
}

/// Loads one fixture file given relative to tests/fixtures.
pub fn fixture(rel: &str) -> Loaded {
    load_one(&fixtures().join(rel))
}

pub fn unit<'a>(ws: &'a Loaded, name: &str) -> &'a dfort_ir::Unit {
    ws.program
        .units
        .iter()
        .find(|u| u.name == name)
        .unwrap_or_else(|| panic!("no unit `{name}`"))
}

pub fn symbol<'a>(u: &'a dfort_ir::Unit, name: &str) -> &'a dfort_ir::Symbol {
    let id = u
        .lookup(name)
        .unwrap_or_else(|| panic!("no symbol `{name}` in `{}`", u.name));
    u.symbol(id)
}

/// The first unit with a statement matching `pred`.
pub fn unit_with(ws: &Loaded, pred: impl Fn(&dfort_ir::StmtKind) -> bool) -> &dfort_ir::Unit {
    ws.program
        .units
        .iter()
        .find(|u| u.stmts.iter().any(|s| pred(&s.kind)))
        .expect("a unit with such a statement")
}

/// Calls `f` on every expression (and sub-expression) of a unit's statements.
pub fn each_expr<'a>(u: &'a dfort_ir::Unit, mut f: impl FnMut(&'a dfort_ir::Expr)) {
    for s in &u.stmts {
        for e in s.kind.exprs() {
            e.walk(&mut f);
        }
    }
}

/// The first diagnostic with this code.
pub fn first_with_code(ws: &Loaded, code: &str) -> Diag {
    ws.diagnostics()
        .into_iter()
        .find(|d| d.code == code)
        .unwrap_or_else(|| panic!("no `{code}` diagnostic in:\n{}", ws.render_diagnostics()))
}

/// The facts of root `name` analysed on its own, with the lists `lists`
/// (else its directives, then intents), in `recording` mode: the request
/// `dfort adjoint --root` makes of the analyses.
pub fn root_request(
    program: &dfort_ir::Program,
    name: &str,
    lists: Option<(&[String], &[String])>,
    recording: dfort_analysis::decisions::Recording,
) -> (dfort_analysis::facts::ProgramFacts, dfort_ir::UnitId) {
    let (independent, dependent) = lists
        .map(|(i, d)| (i.to_vec(), d.to_vec()))
        .unwrap_or_default();
    let request = dfort_analysis::facts::Request {
        roots: vec![dfort_analysis::roots::RootSpec {
            name: name.to_ascii_lowercase(),
            independent,
            dependent,
            after: None,
        }],
        others: false,
        recording,
        preaccumulate: Default::default(),
        supplied: Vec::new(),
    };
    let facts = dfort_analysis::facts::analyse(program, &request, None);
    assert!(facts.problems.is_empty(), "{:?}", facts.problems);
    let root = facts.roots.iter().next().expect("the root analysed").0;
    (facts, root)
}

/// The rule codes of the problems the request for root `name` meets
/// (none: it can be analysed).
pub fn root_problems(program: &dfort_ir::Program, name: &str) -> Vec<&'static str> {
    let request = dfort_analysis::facts::Request {
        roots: vec![dfort_analysis::roots::RootSpec {
            name: name.to_ascii_lowercase(),
            independent: Vec::new(),
            dependent: Vec::new(),
            after: None,
        }],
        others: false,
        recording: dfort_analysis::decisions::Recording::Inversion,
        preaccumulate: Default::default(),
        supplied: Vec::new(),
    };
    let facts = dfort_analysis::facts::analyse(program, &request, None);
    facts.problems.iter().map(|p| p.rule().code).collect()
}

/// The tangent of root `name` ([`root_request`], directives or intents).
pub fn tangent_named(
    program: &dfort_ir::Program,
    name: &str,
    header: &str,
) -> Result<String, Vec<dfort_codegen::Refusal>> {
    let (facts, root) = root_request(
        program,
        name,
        None,
        dfort_analysis::decisions::Recording::Inversion,
    );
    dfort_codegen::tangent::tangent_of(&facts, root, header)
}

/// The adjoint of root `name` in `recording` mode ([`root_request`],
/// directives or intents).
pub fn adjoint_named(
    program: &dfort_ir::Program,
    name: &str,
    recording: dfort_analysis::decisions::Recording,
    header: &str,
) -> Result<String, Vec<dfort_codegen::Refusal>> {
    let (facts, root) = root_request(program, name, None, recording);
    dfort_codegen::adjoint::adjoint_of(&facts, root, header).map(|(text, _)| text)
}

/// Runs the gfortran command `build`, then the program `exe` it builds;
/// fails the test with their standard error when either fails, and
/// returns what the program printed.
pub fn build_and_run_program(build: &mut std::process::Command, exe: &Path) -> String {
    let built = build.output().expect("run gfortran");
    assert!(
        built.status.success(),
        "gfortran: {}",
        String::from_utf8_lossy(&built.stderr)
    );
    let ran = std::process::Command::new(exe)
        .output()
        .expect("run the program");
    assert!(
        ran.status.success(),
        "{}",
        String::from_utf8_lossy(&ran.stderr)
    );
    String::from_utf8_lossy(&ran.stdout).into_owned()
}
