//! What a place in the code sees, for completion and signature help: the
//! statement written before the cursor (continuation lines joined, the
//! label field and comments left out), and every name visible in a unit
//! — its own variables, its hosts', the entities USE statements give it
//! under their local names (ONLY lists and renames followed, through
//! modules that use other modules), and the procedures it can call.
//!
//! Contract: reads the IR of a snapshot and the document text; never
//! panics on any offset. Names are lower case, as the IR holds them.

use crate::host::{DocView, Snapshot};
use crate::text::{in_code, is_name_byte, trailing_name};
use dfort_ir::{Storage, SymbolId, Unit, UnitId, UnitKind};
use dfort_syntax::{SourceForm, TextRange};
use std::collections::BTreeMap;

/// The statement around the cursor, up to the name being typed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Place {
    /// The code of the statement before the name being typed, as written
    /// (continuation lines joined).
    pub before: String,
    /// The name being typed, up to the cursor, and where it lies.
    pub prefix: String,
    pub range: TextRange,
    /// Inside an AD directive that names variables (`!$ad independent(`).
    pub directive: bool,
}

/// Of a fixed-form line: the code after the label field and whether
/// column 6 marks it a continuation (`None` for a comment line).
fn fixed_code(line: &str) -> Option<(&str, bool)> {
    if line.starts_with(['c', 'C', '*', 'd', 'D', '!']) {
        return None;
    }
    if let Some(rest) = line.strip_prefix('\t') {
        // Tab form: a digit after the tab marks a continuation.
        let cont = rest.starts_with(|c: char| c.is_ascii_digit() && c != '0');
        return Some((if cont { &rest[1..] } else { rest }, cont));
    }
    let code = line.get(6..).unwrap_or("");
    let mark = line.as_bytes().get(5).copied().unwrap_or(b' ');
    Some((code, mark != b' ' && mark != b'0'))
}

/// Of a free-form line: its code without a trailing `!` comment (outside
/// character literals).
fn free_code(line: &str) -> &str {
    let mut quote = None;
    for (i, c) in line.char_indices() {
        match (quote, c) {
            (None, '!') => return &line[..i],
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            _ => {}
        }
    }
    line
}

/// The text after the last `;` outside character literals.
fn last_statement(code: &str) -> &str {
    let mut quote = None;
    let mut start = 0;
    for (i, c) in code.char_indices() {
        match (quote, c) {
            (None, ';') => start = i + 1,
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            _ => {}
        }
    }
    &code[start..]
}

/// The place at document offset `offset`, when it lies in code (or in a
/// directive naming variables).
pub fn place(doc: &DocView, offset: u32) -> Option<Place> {
    let text = &*doc.text;
    let offset = (offset as usize).min(text.len());
    if !text.is_char_boundary(offset) {
        return None;
    }
    let bytes = text.as_bytes();
    let mut start = offset;
    while start > 0 && is_name_byte(bytes[start - 1]) {
        start -= 1;
    }
    let prefix = &text[start..offset];
    if prefix.starts_with(|c: char| c.is_ascii_digit()) {
        return None; // a number
    }
    let fixed = matches!(doc.form, SourceForm::Fixed(_));
    let lines = &doc.lines;
    if !in_code(text, lines, fixed, start as u32) {
        return None;
    }
    let line_no = lines.line_of(start as u32);
    let line_start = lines.line_start(line_no).unwrap_or(0) as usize;
    let head = &text[line_start..start];
    let trimmed = head.trim_start();
    let comment_line =
        trimmed.starts_with('!') || (fixed && head.starts_with(['c', 'C', '*', 'd', 'D']));
    if comment_line {
        return Some(Place {
            before: head.to_string(),
            prefix: prefix.to_string(),
            range: TextRange::new(start as u32, offset as u32),
            directive: true,
        });
    }
    let line_of = |n: u32| {
        lines
            .line_range(n)
            .and_then(|r| text.get(r.start as usize..r.end as usize))
            .unwrap_or("")
            .trim_end_matches(['\n', '\r'])
    };
    let mut parts: Vec<String> = Vec::new();
    if fixed {
        let last = match doc.form {
            SourceForm::Fixed(o) => o.line_length.unwrap_or(usize::MAX),
            _ => usize::MAX,
        };
        if head.len() < 6 && !head.starts_with('\t') || head.len() > last {
            return None; // the label field, or past the last column
        }
        let (code, mut cont) = fixed_code(head)?;
        parts.push(code.to_string());
        let mut n = line_no;
        while cont && n > 0 && parts.len() < 100 {
            n -= 1;
            let l = line_of(n);
            let Some((code, c)) = fixed_code(l).filter(|_| !l.trim().is_empty()) else {
                continue;
            };
            let end = code.len().min(last.saturating_sub(6));
            parts.push(code.get(..end).unwrap_or(code).to_string());
            cont = c;
        }
    } else {
        parts.push(head.trim_start().trim_start_matches('&').to_string());
        let mut n = line_no;
        while n > 0 && parts.len() < 100 {
            n -= 1;
            let code = free_code(line_of(n)).trim_end();
            if code.trim_start().is_empty() {
                continue;
            }
            match code.strip_suffix('&') {
                Some(c) => parts.push(c.trim_start().trim_start_matches('&').to_string()),
                None => break,
            }
        }
    }
    parts.reverse();
    let joined = parts.join(" ");
    let mut before = last_statement(&joined).trim_start();
    // A statement label.
    before = before
        .trim_start_matches(|c: char| c.is_ascii_digit())
        .trim_start();
    Some(Place {
        before: before.to_string(),
        prefix: prefix.to_string(),
        range: TextRange::new(start as u32, offset as u32),
        directive: false,
    })
}

/// The argument list (or subscript) still open at the end of `before`:
/// the name before its parenthesis, lower case, and the parenthesis'
/// byte offset (parentheses in character literals do not count).
pub fn open_parenthesis(before: &str) -> Option<(String, usize)> {
    let mut quote = None;
    let mut open = Vec::new();
    for (i, b) in before.bytes().enumerate() {
        match (quote, b) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, b'\'' | b'"') => quote = Some(b),
            (None, b'(') => open.push(i),
            (None, b')') => {
                open.pop();
            }
            _ => {}
        }
    }
    let at = *open.last()?;
    let name = trailing_name(&before[..at]);
    (!name.is_empty() && !name.starts_with(|c: char| c.is_ascii_digit())).then_some((name, at))
}

/// What a visible name is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum NameKind {
    Argument,
    Variable,
    /// A named constant (PARAMETER).
    Constant,
    Common,
    Function,
    Subroutine,
    /// A procedure whose kind dfort does not know (an EXTERNAL name, a
    /// dummy procedure).
    Procedure,
    Module,
}

impl NameKind {
    pub fn is_procedure(self) -> bool {
        matches!(
            self,
            NameKind::Function | NameKind::Subroutine | NameKind::Procedure
        )
    }
}

/// Where a visible name comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// A symbol of a unit (the unit declaring it).
    Symbol(UnitId, SymbolId),
    /// A procedure or module.
    Unit(UnitId),
}

/// One name a unit sees.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Visible {
    /// The name as the unit spells it (a USE rename's local name).
    pub name: String,
    pub kind: NameKind,
    pub origin: Origin,
    /// 0: the unit's own; 1: its hosts' and modules'; 2: global.
    pub distance: u8,
}

fn symbol_kind(unit: &Unit, sid: SymbolId) -> Option<NameKind> {
    let s = unit.symbol(sid);
    Some(match &s.storage {
        Storage::Dummy(_) if s.attrs.external => NameKind::Procedure,
        Storage::Dummy(_) => NameKind::Argument,
        Storage::Local | Storage::UnknownModule { .. } if s.attrs.parameter => NameKind::Constant,
        Storage::Local | Storage::Result | Storage::UnknownModule { .. } => NameKind::Variable,
        Storage::Common { .. } => NameKind::Common,
        Storage::Procedure if s.attrs.intrinsic => return None,
        Storage::Procedure => NameKind::Procedure,
        Storage::Imported { .. } => return None,
    })
}

fn unit_kind(u: &Unit) -> Option<NameKind> {
    match u.kind {
        UnitKind::Function => Some(NameKind::Function),
        UnitKind::Subroutine => Some(NameKind::Subroutine),
        UnitKind::Module => Some(NameKind::Module),
        UnitKind::Program | UnitKind::BlockData => None,
    }
}

/// What module `m` makes visible to a unit using it, by the module's
/// names: its variables, its procedures, its generic names, and what it
/// uses in turn.
fn module_entities(
    snap: &Snapshot,
    m: &Unit,
    depth: usize,
    out: &mut BTreeMap<String, (NameKind, Origin)>,
) {
    for (sid, s) in m.symbols.iter_enumerated() {
        if let Some(kind) = symbol_kind(m, sid) {
            if kind != NameKind::Procedure {
                out.entry(s.name.clone())
                    .or_insert((kind, Origin::Symbol(m.id, sid)));
            }
        }
    }
    for c in &m.children {
        if let Some(cu) = snap.program.units.get(*c) {
            if let Some(kind) = unit_kind(cu) {
                out.entry(cu.name.clone())
                    .or_insert((kind, Origin::Unit(cu.id)));
            }
        }
    }
    for ib in &m.interface_blocks {
        let Some(g) = &ib.generic else { continue };
        let specific = ib.specifics.iter().find_map(|n| {
            snap.program
                .units_named(n)
                .find(|u| u.parent == Some(m.id) || u.parent.is_none())
        });
        if let Some(u) = specific {
            if let Some(kind) = unit_kind(u) {
                out.entry(g.clone()).or_insert((kind, Origin::Unit(u.id)));
            }
        }
    }
    if depth < 8 {
        for us in &m.uses {
            uses_into(snap, us, depth + 1, out);
        }
    }
}

/// The entities a USE statement gives, under their local names.
fn uses_into(
    snap: &Snapshot,
    us: &dfort_ir::UseDecl,
    depth: usize,
    out: &mut BTreeMap<String, (NameKind, Origin)>,
) {
    let Some(m) = us.target.and_then(|t| snap.program.units.get(t)) else {
        return;
    };
    let mut all = BTreeMap::new();
    module_entities(snap, m, depth, &mut all);
    match &us.only {
        Some(only) => {
            for (local, remote) in only {
                if let Some(e) = all.get(remote) {
                    out.entry(local.clone()).or_insert(*e);
                }
            }
        }
        None => {
            for (remote, e) in all {
                let local = us
                    .renames
                    .iter()
                    .find(|(_, r)| *r == remote)
                    .map_or(remote, |(l, _)| l.clone());
                out.entry(local).or_insert(e);
            }
        }
    }
}

/// Every name `unit` sees, the nearest first where names shadow; `skip`
/// leaves out a symbol first seen at that document range (the name being
/// typed, which the IR already holds as an implicit variable).
pub fn visible(snap: &Snapshot, unit: &Unit, skip: Option<TextRange>) -> Vec<Visible> {
    let mut seen: BTreeMap<String, Visible> = BTreeMap::new();
    let mut add = |name: &str, kind: NameKind, origin: Origin, distance: u8| {
        seen.entry(name.to_string()).or_insert(Visible {
            name: name.to_string(),
            kind,
            origin,
            distance,
        });
    };
    // The unit's own names, then each host's, each with its USEs.
    let mut cur = Some(unit);
    let mut distance = 0u8;
    while let Some(u) = cur {
        for (sid, s) in u.symbols.iter_enumerated() {
            let typed_here = !s.declared
                && skip.is_some_and(|r| {
                    snap.to_doc(s.span.file, s.span.range)
                        .is_some_and(|(_, at)| at.start == r.start)
                });
            if typed_here || (distance > 0 && s.name == u.name && u.kind != UnitKind::Function) {
                continue;
            }
            if let Some(kind) = symbol_kind(u, sid) {
                add(&s.name, kind, Origin::Symbol(u.id, sid), distance);
            }
        }
        for c in &u.children {
            if let Some(cu) = snap.program.units.get(*c) {
                if let Some(kind) = unit_kind(cu) {
                    add(&cu.name, kind, Origin::Unit(cu.id), 1);
                }
            }
        }
        let mut used = BTreeMap::new();
        for us in &u.uses {
            uses_into(snap, us, 0, &mut used);
        }
        for (name, (kind, origin)) in used {
            add(&name, kind, origin, 1);
        }
        if u.kind == UnitKind::Module && distance > 0 {
            let mut own = BTreeMap::new();
            module_entities(snap, u, 8, &mut own);
            for (name, (kind, origin)) in own {
                add(&name, kind, origin, 1);
            }
        }
        cur = u
            .parent
            .and_then(|p| snap.program.units.get(p))
            .map(|u| &**u);
        distance = 1;
    }
    // External procedures and modules anywhere in the workspace.
    for u in snap.program.all_units().filter(|u| u.parent.is_none()) {
        if let Some(kind) = unit_kind(u) {
            add(&u.name, kind, Origin::Unit(u.id), 2);
        }
    }
    seen.into_values().collect()
}

/// The procedure the name `name` calls from `unit`, when dfort has its
/// source.
pub fn procedure<'a>(snap: &'a Snapshot, unit: &Unit, name: &str) -> Option<&'a Unit> {
    visible(snap, unit, None)
        .into_iter()
        .find(|v| v.name == name && v.kind.is_procedure())
        .and_then(|v| match v.origin {
            Origin::Unit(id) => snap.program.units.get(id).map(|u| &**u),
            Origin::Symbol(..) => None,
        })
}

/// A snapshot of these files, and the offset just after `marker` in
/// `path` (for the tests of the features reading a place).
#[cfg(test)]
pub(crate) fn snapshot_at(
    files: &[(&str, &str)],
    path: &str,
    marker: &str,
) -> (std::sync::Arc<Snapshot>, u32) {
    let sources = files
        .iter()
        .map(|(p, t)| (std::path::PathBuf::from(p), t.to_string()))
        .collect();
    let snap = crate::host::Host::from_sources(sources, Default::default()).snapshot();
    let text = files.iter().find(|(p, _)| *p == path).map_or("", |f| f.1);
    let off = text.find(marker).map_or(0, |o| o + marker.len());
    (snap, off as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snap_of(files: &[(&str, &str)]) -> std::sync::Arc<Snapshot> {
        let first = files.first().map_or("", |f| f.0);
        snapshot_at(files, first, "").0
    }

    fn place_at(snap: &Snapshot, path: &str, text: &str, marker: &str) -> Place {
        let off = text.find(marker).unwrap() + marker.len();
        place(snap.doc(std::path::Path::new(path)).unwrap(), off as u32).unwrap()
    }

    #[test]
    fn the_statement_before_the_cursor_joins_continuations_in_both_forms() {
        let free = "subroutine s(a, b)\n  real :: a, b\n  a = 1.0 + &\n      & sq\nend\n";
        let fixed = "      SUBROUTINE S(A)\n      X = 1.0 +\n     &    SQ\n      END\n";
        let snap = snap_of(&[("/w/a.f90", free), ("/w/b.f", fixed)]);
        let p = place_at(&snap, "/w/a.f90", free, "& sq");
        assert_eq!(
            (p.before.as_str(), p.prefix.as_str()),
            ("a = 1.0 +   ", "sq")
        );
        let p = place_at(&snap, "/w/b.f", fixed, "    SQ");
        assert_eq!((p.before.trim(), p.prefix.as_str()), ("X = 1.0 +", "SQ"));
        assert!(!p.directive);
        // The label field, a comment and a literal are no place to complete.
        let d = snap.doc(std::path::Path::new("/w/b.f")).unwrap();
        let label = fixed.find("\n     &").unwrap() as u32 + 3;
        assert_eq!(place(d, label), None);
        // A statement begun on a blank line.
        let at = fixed.find("      END").unwrap() as u32 + 6;
        assert_eq!(place(d, at).map(|p| p.before), Some(String::new()));
        let d = snap.doc(std::path::Path::new("/w/a.f90")).unwrap();
        assert_eq!(place(d, u32::MAX).map(|p| p.prefix), Some(String::new()));
    }

    #[test]
    fn a_unit_sees_its_hosts_and_used_modules_under_local_names() {
        let m = "module state\n  real :: temp, salt\n  integer, parameter :: n = 3\ncontains\n  subroutine step()\n  end subroutine\nend module\n";
        let u = "subroutine outer(x)\n  use state, only: t => temp, step\n  real :: x\n  common /blk/ c1\n  call inner()\ncontains\n  subroutine inner()\n    y = 0\n  end subroutine\nend subroutine\nsubroutine other()\nend\n";
        let snap = snap_of(&[("/w/m.f90", m), ("/w/u.f90", u)]);
        let inner = snap.program.units_named("inner").next().unwrap();
        let names: BTreeMap<String, NameKind> = visible(&snap, inner, None)
            .into_iter()
            .map(|v| (v.name, v.kind))
            .collect();
        assert_eq!(names.get("t"), Some(&NameKind::Variable));
        assert_eq!(names.get("temp"), None, "renamed");
        assert_eq!(names.get("salt"), None, "not in the ONLY list");
        assert_eq!(names.get("step"), Some(&NameKind::Subroutine));
        assert_eq!(names.get("x"), Some(&NameKind::Argument));
        assert_eq!(names.get("c1"), Some(&NameKind::Common));
        assert_eq!(names.get("y"), Some(&NameKind::Variable));
        assert_eq!(names.get("other"), Some(&NameKind::Subroutine));
        assert_eq!(names.get("inner"), Some(&NameKind::Subroutine));
        assert_eq!(names.get("state"), Some(&NameKind::Module));
        let outer = snap.program.units_named("outer").next().unwrap();
        assert!(procedure(&snap, outer, "step").is_some());
        assert!(procedure(&snap, outer, "t").is_none());
    }
}
