//! Code actions on a procedure: generate its adjoint or tangent into the
//! sibling file `<stem>_b.f90` / `<stem>_d.f90` (with the runtime
//! `dfort_stack.f90` beside an adjoint), verify its derivatives, and mark
//! the variable under the cursor as an independent or dependent (an
//! `!$ad` directive inserted in the unit, or added to the one there).
//!
//! Contract: generation refuses — with the messages and places — code that
//! has errors in the files it depends on, or that the generators cannot
//! differentiate; it never returns code for those.

use crate::analysis::{Request, RootSpec};
use crate::host::Snapshot;
use crate::text::{line_text, word_at};
use dfort_analysis::decisions::Recording;
use dfort_ir::{Storage, Unit, UnitId};
use dfort_syntax::{Severity, SourceForm, TextRange};
use std::path::{Path, PathBuf};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Adjoint,
    Tangent,
}

impl Mode {
    pub fn suffix(self) -> &'static str {
        match self {
            Mode::Adjoint => "_b",
            Mode::Tangent => "_d",
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Adjoint => "adjoint",
            Mode::Tangent => "tangent",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ActionKind {
    Generate(Mode),
    Verify,
    /// Insert `text` at `at`, or replace `replace` with it.
    Mark {
        variable: String,
        dependent: bool,
        edit: TextEdit,
    },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TextEdit {
    pub range: TextRange,
    pub text: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Action {
    pub title: String,
    /// The procedure acted on (lower case).
    pub unit: String,
    pub kind: ActionKind,
}

/// The procedure at `offset`: the innermost subroutine or function.
pub fn procedure_at<'a>(snap: &'a Snapshot, path: &Path, offset: u32) -> Option<&'a Unit> {
    let mut u = snap.unit_at(path, offset)?;
    if !u.is_procedure() {
        return None;
    }
    // Internal procedures are differentiated with their host.
    while let Some(p) = u.parent.and_then(|p| snap.program.units.get(p)) {
        if !p.is_procedure() {
            break;
        }
        u = p;
    }
    Some(u)
}

pub fn code_actions(snap: &Snapshot, path: &Path, offset: u32) -> Vec<Action> {
    let Some(unit) = procedure_at(snap, path, offset) else {
        return Vec::new();
    };
    let name = unit.name.clone();
    let mut out = vec![
        Action {
            title: format!("Generate adjoint of {name}"),
            unit: name.clone(),
            kind: ActionKind::Generate(Mode::Adjoint),
        },
        Action {
            title: format!("Generate tangent of {name}"),
            unit: name.clone(),
            kind: ActionKind::Generate(Mode::Tangent),
        },
        Action {
            title: format!("Verify derivatives of {name}"),
            unit: name.clone(),
            kind: ActionKind::Verify,
        },
    ];
    let Some(doc) = snap.doc(path) else {
        return out;
    };
    let Some((_, word)) = word_at(&doc.text, offset) else {
        return out;
    };
    let inner = snap.unit_at(path, offset).unwrap_or(unit);
    let Some(sid) = inner.lookup(&word) else {
        return out;
    };
    let s = inner.symbol(sid);
    if inner.id != unit.id || !s.ty.is_real_or_complex() || s.storage == Storage::Procedure {
        return out;
    }
    for dependent in [false, true] {
        let role = if dependent {
            "dependent"
        } else {
            "independent"
        };
        if let Some(edit) = directive_edit(snap, unit, &word, role) {
            out.push(Action {
                title: format!("Mark `{word}` as {role} of {name}"),
                unit: name.clone(),
                kind: ActionKind::Mark {
                    variable: word.clone(),
                    dependent,
                    edit,
                },
            });
        }
    }
    out
}

/// The edit adding `var` to the unit's `!$ad <role>(...)` directive, or
/// inserting one before the first executable statement. `None` when the
/// directive already names it.
fn directive_edit(snap: &Snapshot, unit: &Unit, var: &str, role: &str) -> Option<TextEdit> {
    if let Some(d) = unit.directives.iter().find(|d| d.name == role) {
        if d.args.iter().any(|a| a == var) {
            return None;
        }
        let (path, range) = snap.to_doc(d.span.file, d.span.range)?;
        let doc = snap.doc(path)?;
        let text = doc.text.get(range.start as usize..range.end as usize)?;
        let close = text.rfind(')')?;
        let at = range.start + close as u32;
        let sep = if d.args.is_empty() { "" } else { ", " };
        return Some(TextEdit {
            range: TextRange::empty(at),
            text: format!("{sep}{var}"),
        });
    }
    let (path, doc_range) = match unit.body.first() {
        Some(first) => {
            let st = unit.stmt(*first);
            snap.to_doc(st.span.file, st.span.range)?
        }
        None => snap.to_doc(unit.span.file, unit.span.range)?,
    };
    let doc = snap.doc(path)?;
    let line = doc.lines.line_of(doc_range.start);
    let at = doc.lines.line_start(line)?;
    let indent: String = match doc.form {
        SourceForm::Fixed(_) => String::new(),
        SourceForm::Free => line_text(&doc.text, &doc.lines, at)
            .chars()
            .take_while(|c| *c == ' ' || *c == '\t')
            .collect(),
    };
    let eol = if doc.text.contains("\r\n") {
        "\r\n"
    } else {
        "\n"
    };
    Some(TextEdit {
        range: TextRange::empty(at),
        text: format!("{indent}!$ad {role}({var}){eol}"),
    })
}

/// A refusal: where and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    pub path: PathBuf,
    pub range: TextRange,
    pub message: String,
}

/// The files to write: (path, text).
pub type Generated = Vec<(PathBuf, String)>;

/// Units `root` reaches through calls, and their hosts and modules.
pub fn reached(snap: &Snapshot, root: UnitId) -> Vec<UnitId> {
    let p = &snap.program;
    let mut seen = vec![root];
    let mut i = 0;
    while i < seen.len() {
        let u = seen[i];
        i += 1;
        let mut next: Vec<UnitId> = Vec::new();
        for &s in p.call_graph.calls_from.get(u).into_iter().flatten() {
            if let dfort_ir::callgraph::Callee::Unit(c) = p.call_graph.sites[s].callee {
                next.push(c);
            }
        }
        if let Some(unit) = p.units.get(u) {
            next.extend(unit.parent);
            next.extend(unit.children.iter().copied());
            next.extend(unit.uses.iter().filter_map(|us| us.target));
        }
        for n in next {
            if !seen.contains(&n) {
                seen.push(n);
            }
        }
    }
    seen
}

/// What the header says of the C preprocessor and INCLUDE lines when
/// they expanded some of the files: the settings assumed, and that the
/// derivative is written from the expanded code (so it compiles without
/// them).
pub fn preprocessing_note(snap: &Snapshot, paths: &[PathBuf]) -> Option<String> {
    let files: Vec<String> = paths
        .iter()
        .filter(|p| snap.doc(p).is_some_and(|d| d.preprocessed.is_some()))
        .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .collect();
    if files.is_empty() {
        return None;
    }
    let cpp = &snap.config.cpp;
    let mut settings: Vec<String> = cpp
        .include
        .iter()
        .map(|d| format!("-I{}", d.display()))
        .collect();
    settings.extend(cpp.define.iter().map(|(n, v)| format!("-D{n}={v}")));
    let settings = match settings.is_empty() {
        true => "no -I or -D".to_string(),
        false => settings.join(" "),
    };
    Some(format!(
        "C preprocessor and INCLUDE lines read with {settings} in {}: this \
         file holds the expanded code and compiles without -cpp, -I or -D.",
        files.join(", ")
    ))
}

/// The facts of `unit` analysed as a root on its own, with every real or
/// complex dummy argument both independent and dependent (the ide's
/// tests of what the generators write).
#[cfg(test)]
pub(crate) fn every_dummy_active(
    snap: &Snapshot,
    unit: &Unit,
) -> dfort_analysis::facts::ProgramFacts {
    let names: Vec<String> = unit
        .args
        .iter()
        .map(|a| unit.symbol(*a))
        .filter(|s| s.ty.is_real_or_complex())
        .map(|s| s.name.clone())
        .collect();
    let request = Request {
        roots: vec![RootSpec {
            name: unit.name.clone(),
            independent: names.clone(),
            dependent: names,
            after: None,
        }],
        others: false,
        recording: Recording::Inversion,
        supplied: Vec::new(),
    };
    dfort_analysis::facts::analyse(&snap.program, &request, None)
}

/// The derivative of procedure `name` (with what it calls) as the sibling
/// files of `path`.
pub fn generate(
    snap: &Snapshot,
    path: &Path,
    name: &str,
    mode: Mode,
) -> Result<Generated, Vec<Problem>> {
    let name = name.to_ascii_lowercase();
    let Some(unit) = snap
        .units_of(path)
        .find(|u| u.is_procedure() && u.name == name)
    else {
        return Err(vec![Problem {
            path: path.to_path_buf(),
            range: TextRange::empty(0),
            message: format!("no subroutine or function named `{name}` in this file"),
        }]);
    };
    // Errors in any file the root depends on block generation.
    let files: Vec<PathBuf> = reached(snap, unit.id)
        .iter()
        .filter_map(|u| snap.places.get(&snap.program.units.get(*u)?.span.file))
        .map(|p| p.path.clone())
        .collect();
    let mut problems = Vec::new();
    for f in files.iter().chain(std::iter::once(&path.to_path_buf())) {
        for d in snap.diagnostics(f) {
            if d.severity == Severity::Error {
                problems.push(Problem {
                    path: f.clone(),
                    range: d.range,
                    message: format!("{} [{}]", d.message, d.code),
                });
            }
        }
    }
    if !problems.is_empty() {
        problems.dedup();
        return Err(problems);
    }
    // The root analysed on its own, with the configured lists (else its
    // directives or intents), as `dfort adjoint --root` analyses it: one
    // request of the analyses' entry point, whose decisions the
    // generators read.
    let spec = snap
        .config
        .roots
        .iter()
        .find(|r| r.name == unit.name)
        .cloned()
        .unwrap_or_else(|| RootSpec {
            name: unit.name.clone(),
            independent: Vec::new(),
            dependent: Vec::new(),
            after: None,
        });
    let request = Request {
        roots: vec![spec],
        others: false,
        recording: Recording::Inversion,
        supplied: snap.config.supplied.clone(),
    };
    let facts = dfort_analysis::facts::analyse(&snap.program, &request, None);
    if let Some(problem) = facts.problems.first() {
        return Err(vec![Problem {
            path: path.to_path_buf(),
            range: snap
                .to_doc(unit.name_span.file, unit.name_span.range)
                .map_or(TextRange::empty(0), |(_, r)| r),
            message: problem.message(),
        }]);
    }
    let mut header = format!(
        "{} of {} generated by dfort {} (language server).",
        match mode {
            Mode::Adjoint => "Adjoint",
            Mode::Tangent => "Tangent",
        },
        unit.name,
        env!("CARGO_PKG_VERSION")
    );
    let mut read = files.clone();
    read.sort();
    read.dedup();
    if let Some(note) = preprocessing_note(snap, &read) {
        header.push('\n');
        header.push_str(&note);
    }
    let result = match mode {
        Mode::Adjoint => {
            dfort_codegen::adjoint::adjoint_of(&facts, unit.id, &header).map(|(text, _)| text)
        }
        Mode::Tangent => dfort_codegen::tangent::tangent_of(&facts, unit.id, &header),
    };
    match result {
        Ok(text) => {
            let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
            let stem = path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| unit.name.clone());
            let mut out = vec![(dir.join(format!("{stem}{}.f90", mode.suffix())), text)];
            if mode == Mode::Adjoint {
                out.push((
                    dir.join("dfort_stack.f90"),
                    dfort_codegen::adjoint::RUNTIME.to_string(),
                ));
            }
            Ok(out)
        }
        Err(refusals) => Err(refusals
            .into_iter()
            .map(|r| {
                let (p, range) = snap
                    .to_doc(r.span.file, r.span.range)
                    .map(|(p, r)| (p.to_path_buf(), r))
                    .unwrap_or_else(|| (path.to_path_buf(), TextRange::empty(0)));
                Problem {
                    path: p,
                    range,
                    message: r.message,
                }
            })
            .collect()),
    }
}
