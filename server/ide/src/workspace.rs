//! A workspace: files, their lowered program, and their diagnostics.

use dfort_ir::link::link;
use dfort_ir::lower::{lower_file, LoweredFile};
use dfort_ir::{FileId, IdVec, Idx, Program, SourceFile};
use dfort_syntax::line_index::LineIndex;
use dfort_syntax::source_form::form_for_path;
use dfort_syntax::{
    Code, Diagnostic, FixedOptions, FortranParser, Severity, SourceForm, TextRange,
};
use rayon::prelude::*;
use std::path::{Path, PathBuf};

#[derive(Clone, Copy, Debug, Default)]
pub struct LoadOptions {
    pub fixed: FixedOptions,
    /// Treat every file as fixed form, whatever its extension.
    pub force_fixed: bool,
    /// Treat every file as free form, whatever its extension.
    pub force_free: bool,
}

impl LoadOptions {
    pub fn form_for(&self, path: &Path) -> SourceForm {
        if self.force_fixed {
            SourceForm::Fixed(self.fixed)
        } else if self.force_free {
            SourceForm::Free
        } else {
            form_for_path(path, self.fixed)
        }
    }
}

/// A file that could not be loaded.
#[derive(Debug)]
pub enum LoadError {
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
    NotUtf8 {
        path: PathBuf,
    },
}

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LoadError::Io { path, error } => {
                write!(f, "cannot read {}: {}", path.display(), error)
            }
            LoadError::NotUtf8 { path } => write!(
                f,
                "cannot read {}: the file is not valid UTF-8 text",
                path.display()
            ),
        }
    }
}

/// What the workspace keeps of each file after lowering (the syntax trees
/// are dropped once lowered).
pub struct FileState {
    pub id: FileId,
    pub path: PathBuf,
    pub form: SourceForm,
    pub text: String,
    pub lines: LineIndex,
}

/// A diagnostic with its file and 1-based line and (character) column.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileDiagnostic {
    pub file: FileId,
    pub severity: Severity,
    pub code: Code,
    pub message: String,
    pub range: TextRange,
    pub line: u32,
    pub col: u32,
    pub end_line: u32,
    pub end_col: u32,
}

pub struct Workspace {
    pub files: IdVec<FileId, FileState>,
    pub program: Program,
    /// Sorted by file, position.
    pub diagnostics: Vec<FileDiagnostic>,
}

impl Workspace {
    /// Reads and analyses `paths`. Files that cannot be read are returned
    /// as errors; the others are analysed.
    pub fn load(paths: &[PathBuf], opts: LoadOptions) -> (Workspace, Vec<LoadError>) {
        let mut errors = Vec::new();
        let mut sources = Vec::new();
        for p in paths {
            match std::fs::read(p) {
                Ok(bytes) => match String::from_utf8(bytes) {
                    Ok(text) => sources.push((p.clone(), text)),
                    Err(_) => errors.push(LoadError::NotUtf8 { path: p.clone() }),
                },
                Err(error) => errors.push(LoadError::Io {
                    path: p.clone(),
                    error,
                }),
            }
        }
        (Workspace::from_sources(sources, opts), errors)
    }

    /// Analyses in-memory sources (path, text).
    pub fn from_sources(sources: Vec<(PathBuf, String)>, opts: LoadOptions) -> Workspace {
        let results: Vec<(FileState, LoweredFile, Vec<Diagnostic>)> = sources
            .into_par_iter()
            .enumerate()
            .map_init(FortranParser::new, |parser, (i, (path, text))| {
                let id = FileId::new(i);
                let form = opts.form_for(&path);
                let parsed = parser.parse(path.clone(), text, form);
                let lowered = lower_file(&parsed, id);
                let syntax = parsed.diagnostics.clone();
                let text = parsed.text;
                let lines = LineIndex::new(&text);
                (
                    FileState {
                        id,
                        path,
                        form,
                        text,
                        lines,
                    },
                    lowered,
                    syntax,
                )
            })
            .collect();
        let mut files: IdVec<FileId, FileState> = IdVec::with_capacity(results.len());
        let mut lowered = Vec::with_capacity(results.len());
        let mut raw: Vec<(FileId, Diagnostic)> = Vec::new();
        for (f, l, d) in results {
            raw.extend(d.into_iter().map(|d| (f.id, d)));
            files.push(f);
            lowered.push(l);
        }
        let sources: Vec<SourceFile> = files
            .iter()
            .map(|f| SourceFile {
                id: f.id,
                path: f.path.clone(),
            })
            .collect();
        let (program, link_diags) = link(sources, lowered);
        raw.extend(link_diags);
        let mut diagnostics: Vec<FileDiagnostic> = raw
            .into_iter()
            .filter_map(|(fid, d)| {
                let f = files.get(fid)?;
                Some(to_file_diagnostic(f, d))
            })
            .collect();
        crate::diagnostics::refine(
            &mut diagnostics,
            |d| (d.code, (d.file.0, d.line)),
            |d| &mut d.message,
        );
        diagnostics.sort_by(|a, b| {
            (a.file, a.range.start, a.severity, a.code).cmp(&(
                b.file,
                b.range.start,
                b.severity,
                b.code,
            ))
        });
        diagnostics.dedup();
        Workspace {
            files,
            program,
            diagnostics,
        }
    }

    pub fn file(&self, id: FileId) -> Option<&FileState> {
        self.files.get(id)
    }

    pub fn error_count(&self) -> usize {
        self.diagnostics
            .iter()
            .filter(|d| d.severity == Severity::Error)
            .count()
    }

    /// `path:line:col: severity: message [code]`, one per line.
    pub fn render_diagnostics(&self) -> String {
        let mut out = String::new();
        for d in &self.diagnostics {
            if let Some(f) = self.file(d.file) {
                out.push_str(&format!(
                    "{}:{}:{}: {}: {} [{}]\n",
                    f.path.display(),
                    d.line,
                    d.col,
                    d.severity.as_str(),
                    d.message,
                    d.code
                ));
            }
        }
        out
    }
}

fn to_file_diagnostic(f: &FileState, d: Diagnostic) -> FileDiagnostic {
    let len = f.text.len() as u32;
    let start = d.range.start.min(len);
    let end = d.range.end.min(len).max(start);
    let s = f.lines.line_col(start);
    let e = f.lines.line_col(end);
    FileDiagnostic {
        file: f.id,
        severity: d.severity,
        code: d.code,
        message: d.message,
        range: TextRange::new(start, end),
        line: s.line + 1,
        col: f.lines.char_col(&f.text, start) + 1,
        end_line: e.line + 1,
        end_col: f.lines.char_col(&f.text, end) + 1,
    }
}
