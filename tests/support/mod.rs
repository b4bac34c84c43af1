//! Shared helpers for the end-to-end tests.
#![allow(dead_code)]

use dfort_ide::{LoadOptions, Workspace};
use std::path::{Path, PathBuf};

pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
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

pub fn load(paths: &[PathBuf]) -> Workspace {
    let (ws, errors) = Workspace::load(paths, LoadOptions::default());
    assert!(errors.is_empty(), "load errors: {errors:?}");
    ws
}

pub fn load_one(path: &Path) -> Workspace {
    load(&[path.to_path_buf()])
}

/// Loads one fixture file given relative to tests/fixtures.
pub fn fixture(rel: &str) -> Workspace {
    load_one(&fixtures().join(rel))
}

pub fn unit<'a>(ws: &'a Workspace, name: &str) -> &'a dfort_ir::Unit {
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
pub fn unit_with(ws: &Workspace, pred: impl Fn(&dfort_ir::StmtKind) -> bool) -> &dfort_ir::Unit {
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
pub fn first_with_code<'a>(ws: &'a Workspace, code: &str) -> &'a dfort_ide::FileDiagnostic {
    ws.diagnostics
        .iter()
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
        }],
        others: false,
        recording,
    };
    let facts = dfort_analysis::facts::analyse(program, &request, None);
    assert!(facts.problems.is_empty(), "{:?}", facts.problems);
    let root = facts.roots.first().expect("the root analysed").0;
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
        }],
        others: false,
        recording: dfort_analysis::decisions::Recording::Inversion,
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
