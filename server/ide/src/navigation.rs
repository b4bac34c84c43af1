//! Navigation: a document's outline (units nested as written, with module
//! variables and dummy arguments), go to definition of procedures,
//! modules and variables across files, and workspace symbol search.
//!
//! Contract: ranges are document byte offsets of the file named with them;
//! never panics on any offset.

use crate::host::Snapshot;
use crate::text::word_at;
use dfort_ir::{Storage, Unit, UnitId, UnitKind};
use dfort_syntax::TextRange;
use std::path::{Path, PathBuf};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SymbolKind {
    Program,
    Module,
    Subroutine,
    Function,
    BlockData,
    Variable,
    Argument,
}

fn unit_kind(k: UnitKind) -> SymbolKind {
    match k {
        UnitKind::Program => SymbolKind::Program,
        UnitKind::Module => SymbolKind::Module,
        UnitKind::Subroutine => SymbolKind::Subroutine,
        UnitKind::Function => SymbolKind::Function,
        UnitKind::BlockData => SymbolKind::BlockData,
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DocumentSymbol {
    pub name: String,
    pub detail: String,
    pub kind: SymbolKind,
    pub range: TextRange,
    pub selection: TextRange,
    pub children: Vec<DocumentSymbol>,
}

pub fn document_symbols(snap: &Snapshot, path: &Path) -> Vec<DocumentSymbol> {
    snap.units_of(path)
        .filter(|u| u.parent.is_none())
        .filter_map(|u| unit_symbol(snap, u))
        .collect()
}

fn unit_symbol(snap: &Snapshot, u: &Unit) -> Option<DocumentSymbol> {
    let (_, range) = snap.to_doc(u.span.file, u.span.range)?;
    let (_, selection) = snap.to_doc(u.name_span.file, u.name_span.range)?;
    let mut children = Vec::new();
    for s in &u.symbols {
        let kind = match s.storage {
            Storage::Dummy(_) => SymbolKind::Argument,
            Storage::Local if u.kind == UnitKind::Module && s.declared => SymbolKind::Variable,
            _ => continue,
        };
        if s.span.file != u.span.file {
            continue;
        }
        if let Some((_, r)) = snap.to_doc(s.span.file, s.span.range) {
            children.push(DocumentSymbol {
                name: s.name.clone(),
                detail: dfort_ir::dump::type_name(&s.ty),
                kind,
                range: r,
                selection: r,
                children: Vec::new(),
            });
        }
    }
    for c in &u.children {
        if let Some(cu) = snap.program.units.get(*c) {
            children.extend(unit_symbol(snap, cu));
        }
    }
    children.sort_by_key(|c| c.range.start);
    Some(DocumentSymbol {
        name: u.name.clone(),
        detail: u.kind.as_str().to_string(),
        kind: unit_kind(u.kind),
        range: range.cover(selection),
        selection,
        children,
    })
}

/// A place in a file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Location {
    pub path: PathBuf,
    pub range: TextRange,
}

fn unit_location(snap: &Snapshot, u: &Unit) -> Option<Location> {
    let (p, r) = snap.to_doc(u.name_span.file, u.name_span.range)?;
    Some(Location {
        path: p.to_path_buf(),
        range: r,
    })
}

/// On an `#include` or INCLUDE line: the file it reads; on a macro the C
/// preprocessor replaced: its `#define` line.
fn preprocessor_definition(doc: &crate::host::DocView, offset: u32) -> Option<Location> {
    let pp = doc.preprocessed.as_ref()?;
    let line = doc.lines.line_of(offset);
    let col = offset.checked_sub(doc.lines.line_start(line)?)? as usize;
    if let Some((f, range)) = pp.macro_definition(line, col) {
        return Some(Location {
            path: f.path.clone(),
            range,
        });
    }
    let f = pp.included_by(line)?;
    Some(Location {
        path: f.path.clone(),
        range: TextRange::new(0, 0),
    })
}

pub fn definition(snap: &Snapshot, path: &Path, offset: u32) -> Vec<Location> {
    let Some(doc) = snap.doc(path) else {
        return Vec::new();
    };
    if let Some(loc) = preprocessor_definition(doc, offset) {
        return vec![loc];
    }
    // On the comment heading a derivative's block: its statement.
    if let Some(loc) = crate::origins::primal_of(snap, path, offset) {
        return vec![loc];
    }
    let Some((_, name)) = word_at(&doc.text, offset) else {
        return Vec::new();
    };
    if let Some(unit) = snap.unit_at(path, offset) {
        if let Some(sid) = unit.lookup(&name) {
            if unit.symbol(sid).storage != Storage::Procedure {
                if let Some((owner, sym)) = snap.owner_of(unit, sid) {
                    let os = owner.symbol(sym);
                    if os.declared || owner.id != unit.id {
                        if let Some((p, r)) = snap.to_doc(os.span.file, os.span.range) {
                            return vec![Location {
                                path: p.to_path_buf(),
                                range: r,
                            }];
                        }
                    }
                }
            }
        }
    }
    // A procedure or module name: prefer the one the current unit sees.
    let scope = snap.unit_at(path, offset).map(|u| u.id);
    let mut found: Vec<&Unit> = snap
        .program
        .all_units()
        .filter(|u| u.name == name)
        .collect();
    if let Some(scope) = scope {
        if let Some(near) = found
            .iter()
            .find(|u| u.parent.is_some() && is_visible_from(snap, u.parent, scope))
        {
            found = vec![*near];
        }
    }
    found
        .into_iter()
        .filter_map(|u| unit_location(snap, u))
        .collect()
}

/// Whether `host` is `scope` or one of its hosts.
fn is_visible_from(snap: &Snapshot, host: Option<UnitId>, scope: UnitId) -> bool {
    let mut cur = Some(scope);
    while let Some(c) = cur {
        if Some(c) == host {
            return true;
        }
        cur = snap.program.units.get(c).and_then(|u| u.parent);
    }
    false
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkspaceSymbol {
    pub name: String,
    pub kind: SymbolKind,
    pub location: Location,
    pub container: Option<String>,
}

/// Units (and module variables) whose name contains `query`, case-insensitively.
pub fn workspace_symbols(snap: &Snapshot, query: &str, limit: usize) -> Vec<WorkspaceSymbol> {
    let q = query.to_ascii_lowercase();
    let mut out = Vec::new();
    for u in &snap.program.units {
        let container = u
            .parent
            .and_then(|p| snap.program.units.get(p))
            .map(|p| p.name.clone());
        if u.name.contains(&q) {
            if let Some(location) = unit_location(snap, u) {
                out.push(WorkspaceSymbol {
                    name: u.name.clone(),
                    kind: unit_kind(u.kind),
                    location,
                    container,
                });
            }
        }
        if u.kind == UnitKind::Module {
            for s in &u.symbols {
                if s.storage == Storage::Local && s.declared && s.name.contains(&q) {
                    if let Some((p, r)) = snap.to_doc(s.span.file, s.span.range) {
                        out.push(WorkspaceSymbol {
                            name: s.name.clone(),
                            kind: SymbolKind::Variable,
                            location: Location {
                                path: p.to_path_buf(),
                                range: r,
                            },
                            container: Some(u.name.clone()),
                        });
                    }
                }
            }
        }
        if out.len() >= limit {
            break;
        }
    }
    out.truncate(limit);
    out
}
