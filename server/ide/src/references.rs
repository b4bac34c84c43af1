//! References, document highlight and rename: every place a name means
//! the same thing as the name at the cursor, across the workspace.
//!
//! Contract: an occurrence is a whole name in code (not in a comment or a
//! character literal, not a component after `%`, not a keyword argument
//! `name=` of a call) that resolves to the same [`Entity`] as the name at
//! the cursor: the same variable (through host and use association, under
//! a local name given by `use m, only: local => name` too), the same
//! member of a COMMON block in every unit that declares the block (by
//! position, whatever it is called there), or the same procedure or
//! module. In a header file, which no unit holds, a name counts when the
//! entity is declared in that header. Files dfort generated are left out.
//! Rename changes the occurrences spelt like the name at the cursor (so a
//! use-renamed local name and a COMMON member called otherwise elsewhere
//! keep their names), refuses names Fortran does not accept, a name that
//! already means something else where it would land, and a fixed-form
//! line the new name would push past its last column. Ranges are document
//! byte offsets; never panics on any offset.

use crate::host::Snapshot;
use crate::navigation::Location;
use crate::text::{
    after_if_condition, after_parenthesis, in_code, is_name_byte, trailing_name, word_at,
};
use dfort_ir::{Storage, SymbolId, Unit, UnitId};
use dfort_syntax::{SourceForm, TextRange};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// What a name means.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Entity {
    /// A variable, by the unit that declares it and its symbol there.
    Variable(UnitId, SymbolId),
    /// Member `index` of COMMON block `block`.
    Common(String, u32),
    /// A procedure, module or program unit.
    Unit(UnitId),
}

/// How an occurrence uses its name (for document highlight).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    Read,
    /// The target of an assignment or the variable of a DO loop.
    Write,
    /// A declaration, or a name that is neither read nor written.
    Text,
}

/// One place a name occurs with the meaning asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Occurrence {
    pub path: PathBuf,
    pub range: TextRange,
    /// The name as written (lower case).
    pub name: String,
    pub access: Access,
}

/// The entity a unit's name `name` means, at `offset` of `path` (a USE
/// statement's names mean the module's entities).
fn resolve(snap: &Snapshot, unit: &Unit, name: &str, line: &str, col: usize) -> Option<Entity> {
    if let Some(e) = in_use_statement(snap, line, col, name) {
        return Some(e);
    }
    let remote = renamed(snap, unit, name);
    let name = remote.as_deref().unwrap_or(name);
    if let Some((owner, sym)) = unit.lookup(name).and_then(|sid| snap.owner_of(unit, sid)) {
        if let Some(e) = symbol_entity(owner, sym) {
            return Some(e);
        }
    }
    procedure_named(snap, unit.id, name).map(Entity::Unit)
}

/// What symbol `sym` of its owner `owner` names; `None` for a procedure
/// (found by its unit) and for a name of an unknown module.
fn symbol_entity(owner: &Unit, sym: SymbolId) -> Option<Entity> {
    let os = owner.symbol(sym);
    match &os.storage {
        Storage::Common { block, index } => Some(Entity::Common(block.clone(), *index)),
        // A function's name in its body is its result.
        Storage::Result if os.name == owner.name => Some(Entity::Unit(owner.id)),
        Storage::Procedure | Storage::UnknownModule { .. } => None,
        _ => Some(Entity::Variable(owner.id, sym)),
    }
}

/// The module's name for a local name `local` that a USE of `unit` or of
/// a host gives (`use m, only: local => name`); the IR's symbols carry the
/// module's names.
fn renamed(snap: &Snapshot, unit: &Unit, local: &str) -> Option<String> {
    let mut cur = Some(unit);
    while let Some(u) = cur {
        for us in &u.uses {
            let pairs = us.only.iter().flatten().chain(&us.renames);
            for (l, r) in pairs {
                if l == local && r != local {
                    return Some(r.clone());
                }
            }
        }
        cur = u
            .parent
            .and_then(|p| snap.program.units.get(p))
            .map(|u| &**u);
    }
    None
}

/// The local names USE statements give the module entity `remote` of
/// module `module`.
fn local_names(snap: &Snapshot, module: UnitId, remote: &str, names: &mut BTreeSet<String>) {
    for u in snap.program.all_units() {
        for us in u.uses.iter().filter(|us| us.target == Some(module)) {
            for (l, r) in us.only.iter().flatten().chain(&us.renames) {
                if r == remote {
                    names.insert(l.clone());
                }
            }
        }
    }
}

/// The unit named `name` that `scope` sees: one it contains or its hosts
/// contain first, else the only one of that name.
fn procedure_named(snap: &Snapshot, scope: UnitId, name: &str) -> Option<UnitId> {
    let found: Vec<&Unit> = snap.program.units_named(name).collect();
    let mut cur = Some(scope);
    while let Some(c) = cur {
        if let Some(u) = found.iter().find(|u| u.parent == Some(c) || u.id == c) {
            return Some(u.id);
        }
        cur = snap.program.units.get(c).and_then(|u| u.parent);
    }
    match found.as_slice() {
        [one] => Some(one.id),
        _ => found.iter().find(|u| u.parent.is_none()).map(|u| u.id),
    }
}

/// In `use m [, only: a, l => b]` at column `col`: the module, or the
/// entity of module `m` a name after `only:` (right of `=>`) names. A
/// local name left of `=>` resolves as the unit's own name.
fn in_use_statement(snap: &Snapshot, line: &str, col: usize, name: &str) -> Option<Entity> {
    let lower = line.to_ascii_lowercase();
    let code = lower.trim_start();
    let rest = code.strip_prefix("use")?;
    if rest.starts_with(|c: char| is_name_byte(c as u8)) {
        return None;
    }
    // `use, intrinsic :: m` / `use :: m` / `use m`.
    let after = rest.rsplit_once("::").map_or(rest, |(_, r)| r);
    let module_at = lower.len() - after.len() + (after.len() - after.trim_start().len());
    let module: String = after
        .trim_start()
        .bytes()
        .take_while(|b| is_name_byte(*b))
        .map(char::from)
        .collect();
    let m = snap
        .program
        .units_named(&module)
        .find(|u| u.kind == dfort_ir::UnitKind::Module)?;
    if col >= module_at && col < module_at + module.len() && name == module {
        return Some(Entity::Unit(m.id));
    }
    // Left of `=>`: a local name.
    let tail = lower
        .get(col.saturating_add(name.len())..)
        .unwrap_or("")
        .trim_start();
    if tail.starts_with("=>") {
        return None;
    }
    if let Some((owner, sym)) = m.lookup(name).and_then(|sid| snap.owner_of(m, sid)) {
        return match symbol_entity(owner, sym) {
            Some(e) => Some(e),
            None => procedure_named(snap, owner.id, name).map(Entity::Unit),
        };
    }
    procedure_named(snap, m.id, name).map(Entity::Unit)
}

/// The line holding `offset` and the column of `offset` in it.
fn line_at(
    text: &str,
    lines: &dfort_syntax::line_index::LineIndex,
    offset: u32,
) -> (String, usize) {
    let line = lines.line_of(offset);
    let start = lines.line_start(line).unwrap_or(0);
    (
        crate::text::line_text(text, lines, offset).to_string(),
        offset.saturating_sub(start) as usize,
    )
}

/// Whether the name at `range` is a component (after `%`) or a keyword
/// argument (`name=` in the argument list of something not an array).
fn is_component_or_keyword(unit: Option<&Unit>, text: &str, range: TextRange) -> bool {
    let bytes = text.as_bytes();
    let before = text[..range.start as usize].trim_end_matches([' ', '\t']);
    if before.ends_with('%') {
        return true;
    }
    let after = text[range.end as usize..].trim_start_matches([' ', '\t']);
    if !(after.starts_with('=') && !after.starts_with("==") && !after.starts_with("=>")) {
        return false;
    }
    if !(before.ends_with('(') || before.ends_with(',')) {
        return false;
    }
    // The innermost open parenthesis before the name, on this statement.
    let mut depth = 0i32;
    let mut i = range.start as usize;
    while i > 0 {
        i -= 1;
        match bytes[i] {
            b')' => depth += 1,
            b'(' if depth == 0 => break,
            b'(' => depth -= 1,
            // A line end that is not a free-form continuation (`&`).
            b'\n' if !text[..i].trim_end().ends_with('&') => return false,
            _ => {}
        }
    }
    if i == 0 && bytes.first() != Some(&b'(') {
        return false;
    }
    let callee = trailing_name(&text[..i]);
    if callee.is_empty() {
        return false; // an implied DO: `(x(i), i = 1, n)`
    }
    // A keyword unless the name before the parenthesis is an array.
    let array = unit
        .and_then(|u| u.lookup(&callee).map(|s| u.symbol(s)))
        .is_some_and(|s| !s.dims.is_empty());
    !array
}

/// How the occurrence at `range` uses its name.
fn access(text: &str, range: TextRange) -> Access {
    let line_start = text[..range.start as usize]
        .rfind('\n')
        .map_or(0, |p| p + 1);
    let before = text[line_start..range.start as usize]
        .trim()
        .to_ascii_lowercase();
    let word_after_use = before
        .strip_prefix("use")
        .is_some_and(|r| r.is_empty() || r.starts_with([' ', ',', ':']));
    // USE lists, unit headers (the name, the dummies) and END statements.
    let header = before.split(|c: char| !is_name_byte(c as u8)).any(|w| {
        matches!(
            w,
            "subroutine" | "function" | "entry" | "module" | "program"
        )
    });
    if word_after_use || header {
        return Access::Text;
    }
    let mut after = text[range.end as usize..].trim_start_matches([' ', '\t']);
    // Subscripts: `a(i, j) = …`.
    if after.starts_with('(') {
        after = after_parenthesis(after)
            .unwrap_or("")
            .trim_start_matches([' ', '\t']);
    }
    let assigns = after.starts_with('=') && !after.starts_with("==") && !after.starts_with("=>");
    let statement_start = before.is_empty()
        || before.chars().all(|c| c.is_ascii_digit())
        || after_if_condition(&before)
        || before == "do"
        || before.starts_with("do ") && before[3..].trim().chars().all(|c| c.is_ascii_digit());
    if assigns && statement_start {
        Access::Write
    } else {
        Access::Read
    }
}

/// The name at the cursor and what it means.
pub fn entity_at(snap: &Snapshot, path: &Path, offset: u32) -> Option<(TextRange, String, Entity)> {
    let doc = snap.doc(path)?;
    let (range, name) = word_at(&doc.text, offset)?;
    if !in_code(
        &doc.text,
        &doc.lines,
        last_column(&doc.form).is_some(),
        range.start,
    ) {
        return None;
    }
    let unit = snap.unit_at(path, range.start);
    if is_component_or_keyword(unit, &doc.text, range) {
        return None;
    }
    let (line, col) = line_at(&doc.text, &doc.lines, range.start);
    let entity = match unit {
        Some(u) => resolve(snap, u, &name, &line, col)?,
        None => {
            // A header: what the units that include it declare there, or
            // a module or procedure of that name.
            header_entity(snap, path, &name).or_else(|| {
                snap.program
                    .units_named(&name)
                    .next()
                    .map(|u| Entity::Unit(u.id))
            })?
        }
    };
    Some((range, name, entity))
}

/// The names `entity` goes by, in any unit (lower case).
fn names_of(snap: &Snapshot, entity: &Entity) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    match entity {
        Entity::Unit(id) => {
            if let Some(u) = snap.program.units.get(*id) {
                names.insert(u.name.clone());
                if let Some(m) = u.parent {
                    local_names(snap, m, &u.name, &mut names);
                }
            }
        }
        Entity::Variable(owner, sym) => {
            if let Some(u) = snap.program.units.get(*owner) {
                let name = u.symbol(*sym).name.clone();
                local_names(snap, *owner, &name, &mut names);
                names.insert(name);
            }
            for u in snap.program.all_units() {
                for s in &u.symbols {
                    if let Storage::Imported { from, symbol, .. } = &s.storage {
                        if from == owner && symbol == sym {
                            names.insert(s.name.clone());
                        }
                    }
                }
            }
        }
        Entity::Common(block, index) => {
            for u in snap.program.all_units() {
                for s in &u.symbols {
                    if let Storage::Common { block: b, index: i } = &s.storage {
                        if b == block && i == index {
                            names.insert(s.name.clone());
                        }
                    }
                }
            }
        }
    }
    names
}

/// Of fixed form: its last column (`usize::MAX` when lines have no
/// limit); `None` in free form.
fn last_column(form: &SourceForm) -> Option<usize> {
    match form {
        SourceForm::Fixed(o) => Some(o.line_length.unwrap_or(usize::MAX)),
        _ => None,
    }
}

type FileText<'a> = (
    PathBuf,
    &'a str,
    &'a dfort_syntax::line_index::LineIndex,
    Option<usize>,
);

/// The files to look in: the documents (not the generated ones) and the
/// headers preprocessed documents include (read in their form), each once.
fn files(snap: &Snapshot) -> Vec<FileText<'_>> {
    let mut out: BTreeMap<PathBuf, FileText<'_>> = BTreeMap::new();
    for d in snap.docs.values() {
        if crate::actions::is_generated(&d.text) {
            continue;
        }
        let last = last_column(&d.form);
        out.insert(d.path.clone(), (d.path.clone(), &d.text, &d.lines, last));
        if let Some(pp) = &d.preprocessed {
            for (_, f) in pp.headers() {
                out.entry(f.path.clone())
                    .or_insert((f.path.clone(), &f.text, &f.lines, last));
            }
        }
    }
    out.into_values().collect()
}

/// Whole-name, case-insensitive matches of `name` in `text`.
fn matches<'a>(text: &'a str, name: &'a str) -> impl Iterator<Item = TextRange> + 'a {
    let bytes = text.as_bytes();
    let n = name.len();
    (0..bytes.len().saturating_sub(n.saturating_sub(1))).filter_map(move |i| {
        let hit = bytes.get(i..i + n)?.eq_ignore_ascii_case(name.as_bytes())
            && (i == 0 || !is_name_byte(bytes[i - 1]))
            && bytes.get(i + n).is_none_or(|b| !is_name_byte(*b));
        hit.then(|| TextRange::new(i as u32, (i + n) as u32))
    })
}

/// Every occurrence of the entity at the cursor, the cursor's own
/// included, in path and offset order.
pub fn occurrences(snap: &Snapshot, path: &Path, offset: u32) -> Vec<Occurrence> {
    let Some((_, _, entity)) = entity_at(snap, path, offset) else {
        return Vec::new();
    };
    occurrences_of(snap, &entity, None)
}

/// The occurrences of `entity`; in `only` when given.
fn occurrences_of(snap: &Snapshot, entity: &Entity, only: Option<&Path>) -> Vec<Occurrence> {
    let names = names_of(snap, entity);
    let declared = declarations(snap, entity);
    // A procedure's own variable is named within the procedure only (its
    // contained procedures included): the rest of the workspace is not read.
    let within = match entity {
        Entity::Variable(owner, _) => snap
            .program
            .units
            .get(*owner)
            .filter(|u| u.kind != dfort_ir::UnitKind::Module)
            .and_then(|u| {
                // From the start of the line of its name (the header's
                // dummies included).
                let (p, r) = snap.to_doc(u.span.file, u.span.range)?;
                let (_, n) = snap.to_doc(u.name_span.file, u.name_span.range)?;
                let head = snap.doc(p).map_or(n.start, |d| {
                    d.lines
                        .line_start(d.lines.line_of(n.start))
                        .unwrap_or(n.start)
                });
                Some((p.to_path_buf(), TextRange::new(head.min(r.start), r.end)))
            }),
        _ => None,
    };
    let mut out = Vec::new();
    for (p, text, lines, last) in files(snap) {
        if only.is_some_and(|o| o != p) || within.as_ref().is_some_and(|(w, _)| *w != p) {
            continue;
        }
        let is_doc = snap.doc(&p).is_some();
        for name in &names {
            for range in matches(text, name) {
                let outside = within
                    .as_ref()
                    .is_some_and(|(_, w)| range.start < w.start || range.end > w.end);
                if outside {
                    continue;
                }
                let (line, col) = line_at(text, lines, range.start);
                let past_end = last.is_some_and(|last| col + name.len() > last);
                if past_end
                    || line.trim_start().starts_with('#')
                    || !in_code(text, lines, last.is_some(), range.start)
                {
                    continue;
                }
                let found = if is_doc {
                    entity_at(snap, &p, range.start).map(|(_, _, e)| e)
                } else {
                    header_entity(snap, &p, name)
                };
                if found.as_ref() == Some(entity) {
                    let access = match declared.contains(&(p.clone(), range.start)) {
                        true => Access::Text,
                        false => access(text, range),
                    };
                    out.push(Occurrence {
                        path: p.clone(),
                        range,
                        name: name.clone(),
                        access,
                    });
                }
            }
        }
    }
    out.sort_by(|a, b| (&a.path, a.range.start).cmp(&(&b.path, b.range.start)));
    out.dedup_by(|a, b| a.path == b.path && a.range == b.range);
    out
}

/// Where `entity` is declared: the start of each declaring name.
fn declarations(snap: &Snapshot, entity: &Entity) -> BTreeSet<(PathBuf, u32)> {
    let mut spans = Vec::new();
    match entity {
        Entity::Unit(id) => spans.extend(snap.program.units.get(*id).map(|u| u.name_span)),
        Entity::Variable(owner, sym) => {
            spans.extend(snap.program.units.get(*owner).map(|u| u.symbol(*sym).span))
        }
        Entity::Common(block, index) => {
            for u in snap.program.all_units() {
                for s in &u.symbols {
                    if matches!(&s.storage, Storage::Common { block: b, index: i } if b == block && i == index)
                        && s.declared
                    {
                        spans.push(s.span);
                    }
                }
            }
        }
    }
    spans
        .into_iter()
        .filter_map(|s| snap.to_doc(s.file, s.range))
        .map(|(p, r)| (p.to_path_buf(), r.start))
        .collect()
}

/// What `name` means in the header `path`: the entity a unit declares
/// there under that name.
fn header_entity(snap: &Snapshot, path: &Path, name: &str) -> Option<Entity> {
    snap.program.all_units().find_map(|u| {
        let s = u.symbol(u.lookup(name)?);
        let here = snap
            .to_doc(s.span.file, s.span.range)
            .is_some_and(|(p, _)| p == path);
        here.then(|| resolve(snap, u, name, "", usize::MAX))
            .flatten()
    })
}

/// `textDocument/references`: the locations, the declarations among them
/// unless `declarations` is false.
pub fn references(snap: &Snapshot, path: &Path, offset: u32, declarations: bool) -> Vec<Location> {
    occurrences(snap, path, offset)
        .into_iter()
        .filter(|o| declarations || o.access != Access::Text)
        .map(|o| Location {
            path: o.path,
            range: o.range,
        })
        .collect()
}

/// `textDocument/documentHighlight`: the occurrences in this document.
pub fn highlights(snap: &Snapshot, path: &Path, offset: u32) -> Vec<(TextRange, Access)> {
    let Some((_, _, entity)) = entity_at(snap, path, offset) else {
        return Vec::new();
    };
    occurrences_of(snap, &entity, Some(path))
        .into_iter()
        .map(|o| (o.range, o.access))
        .collect()
}

/// `textDocument/prepareRename`: the name at the cursor, or why it cannot
/// be renamed.
pub fn prepare_rename(snap: &Snapshot, path: &Path, offset: u32) -> Result<TextRange, String> {
    let doc = snap.doc(path).ok_or("dfort does not have this file")?;
    if crate::actions::is_generated(&doc.text) {
        return Err("this file is generated by dfort: rename in the original source".into());
    }
    let (range, name, entity) =
        entity_at(snap, path, offset).ok_or("there is no variable or procedure name here")?;
    if let Entity::Unit(id) = &entity {
        if snap.program.units.get(*id).is_none() {
            return Err(format!("dfort does not have the source of `{name}`"));
        }
    }
    Ok(range)
}

/// The edits that rename the entity at the cursor to `new_name`, by file.
pub fn rename(
    snap: &Snapshot,
    path: &Path,
    offset: u32,
    new_name: &str,
) -> Result<BTreeMap<PathBuf, Vec<(TextRange, String)>>, String> {
    prepare_rename(snap, path, offset)?;
    let (_, name, entity) =
        entity_at(snap, path, offset).ok_or("there is no variable or procedure name here")?;
    let new = new_name.trim();
    let valid = new.len() <= 63
        && new.starts_with(|c: char| c.is_ascii_alphabetic())
        && new.bytes().all(is_name_byte);
    if !valid {
        return Err(format!(
            "`{new}` is not a Fortran name (a letter, then up to 62 letters, digits or underscores)"
        ));
    }
    let lower = new.to_ascii_lowercase();
    if lower == name {
        return Ok(BTreeMap::new());
    }
    let occurrences: Vec<Occurrence> = occurrences_of(snap, &entity, None)
        .into_iter()
        .filter(|o| o.name == name)
        .collect();
    // Where each occurrence lands, the new name must not mean something else.
    for o in &occurrences {
        let Some(u) = snap.unit_at(&o.path, o.range.start) else {
            continue;
        };
        let clash = u.lookup(&lower).is_some() || procedure_named(snap, u.id, &lower).is_some();
        if clash {
            let line = snap
                .doc(&o.path)
                .map_or(0, |d| d.lines.line_of(o.range.start) + 1);
            return Err(format!(
                "`{lower}` already names something in `{}` ({}:{line})",
                u.name,
                o.path.file_name().map_or_else(
                    || o.path.display().to_string(),
                    |f| f.to_string_lossy().into_owned()
                )
            ));
        }
    }
    let mut edits: BTreeMap<PathBuf, Vec<(TextRange, String)>> = BTreeMap::new();
    for o in occurrences {
        edits
            .entry(o.path.clone())
            .or_default()
            .push((o.range, new.to_string()));
    }
    fixed_columns_fit(snap, &edits, name.len(), new.len())?;
    Ok(edits)
}

/// A fixed-form line must keep its code within the last column.
fn fixed_columns_fit(
    snap: &Snapshot,
    edits: &BTreeMap<PathBuf, Vec<(TextRange, String)>>,
    old: usize,
    new: usize,
) -> Result<(), String> {
    if new <= old {
        return Ok(());
    }
    for (p, ranges) in edits {
        let Some(doc) = snap.doc(p) else {
            continue;
        };
        let Some(last) = last_column(&doc.form) else {
            continue;
        };
        let mut growth: BTreeMap<u32, usize> = BTreeMap::new();
        for (r, _) in ranges {
            *growth.entry(doc.lines.line_of(r.start)).or_default() += new - old;
        }
        for (line, grow) in growth {
            let Some(range) = doc.lines.line_range(line) else {
                continue;
            };
            let text = doc
                .text
                .get(range.start as usize..range.end as usize)
                .unwrap_or("");
            // The code part: up to a `!` comment outside literals.
            let code = code_length(text);
            if code + grow > last {
                return Err(format!(
                    "{}:{}: the new name would push the code past column {last}; break the line first",
                    p.file_name().map_or_else(|| p.display().to_string(), |f| f.to_string_lossy().into_owned()),
                    line + 1
                ));
            }
        }
    }
    Ok(())
}

/// The length of a line without a trailing `!` comment or blanks.
fn code_length(line: &str) -> usize {
    let mut quote: Option<char> = None;
    let mut end = line.len();
    for (k, c) in line.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, '!') if k != 5 => {
                end = k;
                break;
            }
            _ => {}
        }
    }
    line[..end].trim_end().len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::{Host, HostConfig};

    const MODULE: &str = "\
module state
  implicit none
  real(8) :: temp(10)
  integer :: nsteps
contains
  subroutine step(k)
    integer, intent(in) :: k
    temp(k) = temp(k) + 1.0d0
  end subroutine step
end module state
";
    const MODEL: &str = "\
subroutine model(x, y)
  use state, only: t => temp, nsteps, step
  implicit none
  real(8) :: x, y
  integer :: i
  common /blk/ a, b
  real(8) :: a, b
  ! temp and nsteps in a comment
  do i = 1, nsteps
    call step(k=i)
    t(i) = x*a
  end do
  y = t(1) + b
  print *, 'nsteps'
contains
  subroutine inner()
    y = y*2
  end subroutine inner
end subroutine model
";
    const FIXED: &str = concat!(
        "      SUBROUTINE OTHER(Z)\n",
        "      DOUBLE PRECISION Z, AA, BB\n",
        "      COMMON /BLK/ AA, BB\n",
        "      Z = AA*BB\n",
        "      END\n"
    );

    fn snap() -> std::sync::Arc<Snapshot> {
        let mut host = Host::from_sources(
            vec![
                (PathBuf::from("/ws/state.f90"), MODULE.to_string()),
                (PathBuf::from("/ws/model.f90"), MODEL.to_string()),
                (PathBuf::from("/ws/other.f"), FIXED.to_string()),
            ],
            HostConfig::default(),
        );
        host.snapshot()
    }

    fn at(text: &str, needle: &str, nth: usize) -> u32 {
        text.match_indices(needle).nth(nth).expect(needle).0 as u32
    }

    /// The occurrences as `file:line:text` (1-based lines).
    fn found(snap: &Snapshot, path: &str, text: &str, needle: &str, nth: usize) -> Vec<String> {
        occurrences(snap, Path::new(path), at(text, needle, nth))
            .into_iter()
            .map(|o| {
                let doc = snap.doc(&o.path).unwrap();
                let word = &doc.text[o.range.start as usize..o.range.end as usize];
                format!(
                    "{}:{}:{word}:{:?}",
                    o.path.file_name().unwrap().to_string_lossy(),
                    doc.lines.line_of(o.range.start) + 1,
                    o.access
                )
            })
            .collect()
    }

    #[test]
    fn a_module_variable_is_found_under_its_local_name_and_not_in_comments_or_strings() {
        let s = snap();
        let from_module = found(&s, "/ws/state.f90", MODULE, "temp(10)", 0);
        assert_eq!(
            from_module,
            [
                "model.f90:2:t:Text",
                "model.f90:2:temp:Text",
                "model.f90:11:t:Write",
                "model.f90:13:t:Read",
                "state.f90:3:temp:Text",
                "state.f90:8:temp:Write",
                "state.f90:8:temp:Read"
            ]
        );
        // From the local name: the same places.
        assert_eq!(found(&s, "/ws/model.f90", MODEL, "t(i)", 0), from_module);
        let n = found(&s, "/ws/model.f90", MODEL, "nsteps", 0);
        assert_eq!(
            n,
            [
                "model.f90:2:nsteps:Text",
                "model.f90:9:nsteps:Read",
                "state.f90:4:nsteps:Text"
            ]
        );
    }

    #[test]
    fn common_members_match_by_position_in_every_unit_and_form() {
        let s = snap();
        let a = found(&s, "/ws/model.f90", MODEL, "a, b", 0);
        assert_eq!(
            a,
            [
                "model.f90:6:a:Read",
                "model.f90:7:a:Text",
                "model.f90:11:a:Read",
                "other.f:2:AA:Text",
                "other.f:3:AA:Read",
                "other.f:4:AA:Read"
            ]
        );
    }

    #[test]
    fn procedures_keyword_arguments_and_host_association() {
        let s = snap();
        let step = found(&s, "/ws/model.f90", MODEL, "step(k=i)", 0);
        assert_eq!(
            step,
            [
                "model.f90:2:step:Text",
                "model.f90:10:step:Read",
                "state.f90:6:step:Text",
                "state.f90:9:step:Text"
            ]
        );
        // `k=` names step's dummy, not a variable of model.
        assert!(entity_at(&s, Path::new("/ws/model.f90"), at(MODEL, "k=i", 0)).is_none());
        // `y` of the host, in the contained procedure.
        let y = found(&s, "/ws/model.f90", MODEL, "y = y*2", 0);
        assert_eq!(y.len(), 5, "{y:?}");
        assert!(y.contains(&"model.f90:17:y:Write".to_string()), "{y:?}");
        let hl = highlights(&s, Path::new("/ws/model.f90"), at(MODEL, "i = 1", 0));
        let kinds: Vec<Access> = hl.iter().map(|h| h.1).collect();
        assert_eq!(
            kinds,
            [Access::Text, Access::Write, Access::Read, Access::Read]
        );
    }

    #[test]
    fn rename_keeps_local_names_refuses_clashes_and_bad_names() {
        let s = snap();
        let edits = rename(
            &s,
            Path::new("/ws/state.f90"),
            at(MODULE, "temp(10)", 0),
            "theta",
        )
        .unwrap();
        let files: Vec<(String, usize)> = edits
            .iter()
            .map(|(p, e)| {
                (
                    p.file_name().unwrap().to_string_lossy().into_owned(),
                    e.len(),
                )
            })
            .collect();
        // `t => temp` keeps its local name `t`.
        assert_eq!(
            files,
            [("model.f90".to_string(), 1), ("state.f90".to_string(), 3)]
        );
        let clash = rename(&s, Path::new("/ws/model.f90"), at(MODEL, "x*a", 0), "b").unwrap_err();
        assert!(
            clash.contains("`b` already names something in `model`"),
            "{clash}"
        );
        let bad = rename(&s, Path::new("/ws/model.f90"), at(MODEL, "x*a", 0), "2x").unwrap_err();
        assert!(bad.contains("is not a Fortran name"), "{bad}");
        assert!(prepare_rename(&s, Path::new("/ws/model.f90"), at(MODEL, "temp and", 0)).is_err());
        assert!(prepare_rename(&s, Path::new("/ws/model.f90"), 100_000).is_err());
        assert!(prepare_rename(&s, Path::new("/ws/none.f90"), 0).is_err());
    }

    #[test]
    fn rename_respects_fixed_form_columns() {
        let s = snap();
        let long = "a".repeat(60);
        let e = rename(&s, Path::new("/ws/other.f"), at(FIXED, "Z = AA", 0), &long).unwrap_err();
        assert!(e.contains("past column 72"), "{e}");
        let ok = rename(&s, Path::new("/ws/other.f"), at(FIXED, "Z = AA", 0), "zz").unwrap();
        assert_eq!(ok.values().map(Vec::len).sum::<usize>(), 3);
    }
}
