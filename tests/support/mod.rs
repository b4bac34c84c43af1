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
