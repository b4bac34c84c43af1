//! Between a primal statement and its blocks in the derivatives dfort
//! wrote beside its file (`<stem>_b.f90`, `<stem>_d.f90`): the comment
//! heading each block ([`dfort_codegen::origin`]), rendered from the
//! host's places, and read back — Go to Implementation on a primal
//! statement lists its blocks, Go to Definition on a block's comment
//! goes to the statement.
//!
//! Contract: the comments name the primal file relative to the directory
//! the derivative is written to (the sibling's file name, `../a.f` from
//! an output directory beside it), by its full path when the two share
//! no directory below the root; reading them back resolves a name
//! against the derivative's own directory. Nothing here decides what a
//! block holds: the generator wrote the comments.

use crate::host::Snapshot;
use crate::navigation::Location;
use dfort_codegen::origin;
use dfort_ir::Span;
use dfort_syntax::TextRange;
use std::cell::OnceCell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The origin renderer of a derivative written into `dir`: a span as
/// `file:line: statement` (the statement's first line).
pub fn renderer<'a>(
    snap: &'a Snapshot,
    dir: Option<&'a Path>,
) -> impl Fn(Span) -> Option<String> + 'a {
    move |span| {
        let loc = snap.location(span)?;
        let (text, lines) = snap.file_text(loc.path)?;
        let r = lines.line_range(loc.line.checked_sub(1)?)?;
        let statement = text.get(r.start as usize..r.end as usize)?;
        // A file named without a directory is in the current one.
        let absolute = |p: &Path| {
            let p = if p.as_os_str().is_empty() {
                Path::new(".")
            } else {
                p
            };
            std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf())
        };
        let file = absolute(loc.path);
        let name = match dir.and_then(|d| relative(&file, &absolute(d))) {
            Some(rel) => rel.to_string_lossy().into_owned(),
            None => file.display().to_string(),
        };
        Some(origin::place(&name, loc.line, statement))
    }
}

/// `file` named from directory `dir` (both absolute): `a.f`,
/// `src/a.f`, `../a.f`; `None` when they share no directory below the
/// root.
fn relative(file: &Path, dir: &Path) -> Option<PathBuf> {
    let f: Vec<_> = file.components().collect();
    let d: Vec<_> = dir.components().collect();
    let common = f.iter().zip(&d).take_while(|(a, b)| a == b).count();
    if common < 2 || common == f.len() {
        return None;
    }
    let mut out = PathBuf::new();
    for _ in common..d.len() {
        out.push("..");
    }
    for c in &f[common..] {
        out.push(c);
    }
    Some(out)
}

/// A line of a file, from 0 (a block's comment; where Go to
/// Implementation lands).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LineLocation {
    pub path: PathBuf,
    pub line: u32,
}

/// The derivatives dfort writes beside `path` (adjoint, then tangent).
fn siblings(path: &Path) -> Vec<PathBuf> {
    [crate::actions::Mode::Adjoint, crate::actions::Mode::Tangent]
        .iter()
        .filter_map(|m| m.sibling(path))
        .collect()
}

/// The file a comment of a derivative in `dir` names.
fn resolve(dir: &Path, file: &str) -> PathBuf {
    let p = Path::new(file);
    match p.is_absolute() {
        true => p.to_path_buf(),
        false => dir.join(p),
    }
}

/// The 1-based line of the statement at `offset` of `path`: the line
/// itself when a statement starts on it (the cursor may be in its
/// indentation), else the first line of the innermost statement holding
/// `offset` (a continuation line), else `offset`'s line.
fn statement_line(snap: &Snapshot, path: &Path, offset: u32) -> Option<u32> {
    let doc = snap.doc(path)?;
    let own = doc.lines.line_of(offset) + 1;
    let Some(unit) = snap.unit_at(path, offset) else {
        return Some(own);
    };
    let line = |st: &dfort_ir::Stmt| crate::hover::span_line(snap, st.span);
    if unit.stmts.iter().any(|st| line(st) == Some(own)) {
        return Some(own);
    }
    let holding = snap
        .chunk_at(path, offset)
        .and_then(|(_, rel)| crate::hover::stmt_at(unit, rel));
    Some(holding.and_then(line).unwrap_or(own))
}

/// The blocks, in the derivatives beside `path`, of the statement at
/// `offset`: the lines of the comments that name it. A derivative the
/// host does not hold is read with `read`.
pub fn blocks_of(
    snap: &Snapshot,
    path: &Path,
    offset: u32,
    read: &dyn Fn(&Path) -> Option<String>,
) -> Vec<LineLocation> {
    let Some(line) = statement_line(snap, path, offset) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    // Whether a comment's file is `path`, once per file named.
    let mut names_path: HashMap<PathBuf, bool> = HashMap::new();
    let canonical = OnceCell::new();
    for d in siblings(path) {
        let Some(dir) = d.parent() else { continue };
        let text = match snap.file_text(&d) {
            Some((t, _)) => t.to_string(),
            None => match read(&d) {
                Some(t) => t,
                None => continue,
            },
        };
        for (i, l) in text.lines().enumerate() {
            if let Some((file, n)) = origin::parse(l) {
                if n != line {
                    continue;
                }
                let named = resolve(dir, file);
                let same = *names_path.entry(named).or_insert_with_key(|f| {
                    f == path || {
                        let here = canonical.get_or_init(|| std::fs::canonicalize(path).ok());
                        here.is_some() && std::fs::canonicalize(f).ok() == *here
                    }
                });
                if same {
                    out.push(LineLocation {
                        path: d.clone(),
                        line: i as u32,
                    });
                }
            }
        }
    }
    out
}

/// On a block's comment in a derivative dfort wrote: the statement it
/// comes from (the start of its line), when the host holds that file.
pub fn primal_of(snap: &Snapshot, path: &Path, offset: u32) -> Option<Location> {
    let doc = snap.doc(path)?;
    if !crate::actions::is_generated(&doc.text) {
        return None;
    }
    let r = doc.lines.line_range(doc.lines.line_of(offset))?;
    let (file, n) = origin::parse(doc.text.get(r.start as usize..r.end as usize)?)?;
    let target = resolve(path.parent()?, file);
    let held = |p: &Path| snap.file_text(p).map(|(_, lines)| lines.line_start(n - 1));
    let (target, start) = match held(&target) {
        Some(s) => (target, s?),
        None => {
            let canonical = std::fs::canonicalize(&target).ok()?;
            let s = held(&canonical)??;
            (canonical, s)
        }
    };
    Some(Location {
        path: target,
        range: TextRange::new(start, start),
    })
}

#[cfg(test)]
mod tests {
    use super::relative;
    use std::path::{Path, PathBuf};

    #[test]
    fn a_file_is_named_from_the_derivative_s_directory() {
        let rel = |f: &str, d: &str| relative(Path::new(f), Path::new(d));
        assert_eq!(rel("/w/m/a.f", "/w/m"), Some(PathBuf::from("a.f")));
        assert_eq!(rel("/w/m/src/a.f", "/w/m"), Some(PathBuf::from("src/a.f")));
        assert_eq!(rel("/w/m/a.f", "/w/m/out"), Some(PathBuf::from("../a.f")));
        assert_eq!(rel("/w/a.f", "/x/out"), None);
    }
}
