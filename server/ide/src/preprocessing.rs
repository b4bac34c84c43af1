//! Documents the C preprocessor runs on, or that have Fortran `INCLUDE`
//! lines (issue 18): the text the front end parses is the preprocessor's
//! output ([`dfort_syntax::cpp`]: included headers spliced in, macros
//! replaced, directives and inactive lines blank), then with its INCLUDE
//! lines replaced by the files they name
//! ([`dfort_syntax::cpp::fortran_include`]), and every position in it
//! maps back to the file, line and column it came from — the document
//! itself, or an included file.
//!
//! Contract: [`PreprocessedDoc::new`] never fails (the preprocessor's
//! problems are its diagnostics); [`PreprocessedDoc::to_source`] maps any
//! offset of the output (clamped) to a file read and an offset in it;
//! [`PreprocessedDoc::from_document`] maps an offset of the document to
//! the output, where the line is in it (directive lines are blank there,
//! in place; a line an `#if` left out has no place).

use dfort_syntax::cpp::fortran_include::{expand_includes, unprocessed};
use dfort_syntax::cpp::{preprocess, CppOptions, MacroUse, Preprocessed};
use dfort_syntax::line_index::LineIndex;
use dfort_syntax::TextRange;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The preprocessor's settings of a host: whether files are preprocessed
/// and with which include directories and macros.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CppConfig {
    /// `Some(true)`: every file (`--cpp`); `Some(false)`: none
    /// (`--no-cpp`); `None`: by extension, as gfortran does (`.F`, `.F90`,
    /// `.fpp`, …, [`dfort_syntax::cpp::preprocessed_by_default`]).
    pub forced: Option<bool>,
    /// `-I` directories, in order.
    pub include: Vec<PathBuf>,
    /// `-D` macros: name (`F(a)` for a function-like one) and value.
    pub define: Vec<(String, String)>,
}

impl CppConfig {
    /// Whether `path` is preprocessed.
    pub fn applies_to(&self, path: &Path) -> bool {
        self.forced
            .unwrap_or_else(|| dfort_syntax::cpp::preprocessed_by_default(path))
    }

    /// The preprocessor's options for a file of this form.
    pub fn options(&self, fixed: bool) -> CppOptions {
        CppOptions {
            include: self.include.clone(),
            define: self.define.clone(),
            fixed,
        }
    }

    /// `NAME` or `NAME=VALUE` as compilers take `-D` (`NAME` is `NAME=1`).
    pub fn parse_define(d: &str) -> (String, String) {
        match d.split_once('=') {
            Some((n, v)) => (n.to_string(), v.to_string()),
            None => (d.to_string(), "1".to_string()),
        }
    }
}

/// A file the preprocessor read for a document: its text and lines.
#[derive(Clone, Debug)]
pub struct FileRead {
    pub path: PathBuf,
    pub text: Arc<str>,
    pub lines: Arc<LineIndex>,
}

/// Lines of a file the C preprocessor leaves out under the current
/// macros, and the directive line before them (`#ifdef ALLOW_X`, `#else`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InactiveRegion {
    pub range: TextRange,
    pub directive: String,
}

impl InactiveRegion {
    pub fn message(&self) -> String {
        format!(
            "inactive: the C preprocessor leaves these lines out with the macros given (after `{}`)",
            self.directive
        )
    }
}

/// One document's preprocessing.
#[derive(Debug)]
pub struct PreprocessedDoc {
    pub pp: Preprocessed,
    /// The lines of the output.
    pub out_lines: LineIndex,
    /// The files read, as in `pp.files` (0: the document).
    pub files: Vec<FileRead>,
    /// Per line of the document: the output line it is, if any.
    main_lines: Vec<Option<u32>>,
}

impl PreprocessedDoc {
    /// Preprocesses the document `path` with text `text` (with the C
    /// preprocessor when `cpp`), then replaces its INCLUDE lines; `read`
    /// gives an included file's text.
    pub fn new(
        path: &Path,
        text: &Arc<str>,
        lines: &Arc<LineIndex>,
        cpp: bool,
        options: &CppOptions,
        read: &dyn Fn(&Path) -> Option<String>,
    ) -> PreprocessedDoc {
        let texts = std::cell::RefCell::new(Vec::<(PathBuf, Arc<str>)>::new());
        let reader = |p: &Path| {
            let t = read(p)?;
            texts
                .borrow_mut()
                .push((p.to_path_buf(), Arc::from(t.as_str())));
            Some(t)
        };
        let pp = match cpp {
            true => preprocess(path, text, options, &reader),
            false => unprocessed(path, text),
        };
        let pp = expand_includes(pp, options, &reader);
        let texts = texts.into_inner();
        let files = pp
            .files
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let text = match i {
                    0 => text.clone(),
                    _ => texts
                        .iter()
                        .find(|(q, _)| q == p)
                        .map_or_else(|| Arc::from(""), |(_, t)| t.clone()),
                };
                let lines = match i {
                    0 => lines.clone(),
                    _ => Arc::new(LineIndex::new(&text)),
                };
                FileRead {
                    path: p.clone(),
                    text,
                    lines,
                }
            })
            .collect();
        let mut main_lines = vec![None; lines.line_count() as usize + 1];
        for (k, o) in pp.lines.iter().enumerate() {
            if o.file == 0 {
                if let Some(slot) = main_lines.get_mut(o.line as usize) {
                    slot.get_or_insert(k as u32);
                }
            }
        }
        PreprocessedDoc {
            out_lines: LineIndex::new(&pp.text),
            pp,
            files,
            main_lines,
        }
    }

    /// The file (index into `files`) and offset in it of output offset `o`.
    pub fn to_source(&self, o: u32) -> (u32, u32) {
        let o = o.min(self.out_lines.text_len());
        let line = self.out_lines.line_of(o);
        let start = self.out_lines.line_start(line).unwrap_or(0);
        let Some(origin) = self.pp.lines.get(line as usize) else {
            // Past the last line: the end of the document.
            return (0, self.files[0].text.len() as u32);
        };
        let Some(file) = self.files.get(origin.file as usize) else {
            return (0, 0);
        };
        let col = origin.source_column((o - start) as usize) as u32;
        let range = file
            .lines
            .line_range(origin.line)
            .unwrap_or(TextRange::new(file.lines.text_len(), file.lines.text_len()));
        (origin.file, (range.start + col).min(range.end))
    }

    /// An output range as a range of one file read: its start's file, the
    /// end clamped to the start's line when it lies elsewhere.
    pub fn range_to_source(&self, r: TextRange) -> (u32, TextRange) {
        let (file, start) = self.to_source(r.start);
        let (end_file, end) = self.to_source(r.end);
        let f = &self.files[file as usize];
        let end = if end_file == file && end >= start {
            end
        } else {
            let line = f.lines.line_of(start);
            f.lines.line_range(line).map_or(start, |l| l.end.max(start))
        };
        (file, TextRange::new(start, end))
    }

    /// The output offset of document offset `o`, when its line is in the
    /// output.
    pub fn from_document(&self, o: u32) -> Option<u32> {
        let doc = &self.files[0].lines;
        let line = doc.line_of(o);
        let col = (o - doc.line_start(line)?) as usize;
        let out = (*self.main_lines.get(line as usize)?)?;
        let origin = &self.pp.lines[out as usize];
        let mut shift: isize = 0;
        for r in &origin.replaced {
            if col < r.src.start {
                break;
            }
            if col < r.src.end {
                return Some(self.out_lines.line_start(out)? + r.out.start as u32);
            }
            shift = r.out.end as isize - r.src.end as isize;
        }
        let out_col = (col as isize + shift).max(0) as u32;
        let range = self.out_lines.line_range(out)?;
        Some((range.start + out_col).min(range.end))
    }

    /// The macro the preprocessor replaced at `col` of `line` of the
    /// document.
    pub fn macro_at(&self, line: u32, col: usize) -> Option<&MacroUse> {
        self.pp
            .uses
            .iter()
            .find(|u| u.file == 0 && u.line == line && u.columns.contains(&col))
    }

    /// The file an `#include` (or INCLUDE) line of the document read.
    pub fn included_by(&self, line: u32) -> Option<&FileRead> {
        let inc = self
            .pp
            .includes
            .iter()
            .find(|i| i.file == 0 && i.line == line)?;
        self.files.get(inc.target? as usize)
    }

    /// Where the macro used at `col` of `line` of the document is defined
    /// (`#define` line), when a file defines it.
    pub fn macro_definition(&self, line: u32, col: usize) -> Option<(&FileRead, TextRange)> {
        let (file, def_line) = self.macro_at(line, col)?.defined_at?;
        let f = self.files.get(file as usize)?;
        let r = f.lines.line_range(def_line)?;
        let text = f.text.get(r.start as usize..r.end as usize).unwrap_or("");
        let len = text.trim_end_matches(['\n', '\r']).len() as u32;
        Some((f, TextRange::new(r.start, r.start + len)))
    }

    /// The stretches of file `file` (0: the document) that the `#if`
    /// directives leave out, each with the directive line before it.
    pub fn inactive_regions(&self, file: u32) -> Vec<InactiveRegion> {
        let Some(f) = self.files.get(file as usize) else {
            return Vec::new();
        };
        let line_text = |l: u32| {
            f.lines
                .line_range(l)
                .and_then(|r| f.text.get(r.start as usize..r.end as usize))
                .unwrap_or("")
                .trim_end_matches(['\n', '\r'])
        };
        self.pp
            .inactive
            .iter()
            .filter(|(fi, lines)| *fi == file && lines.start < lines.end)
            .filter_map(|(_, lines)| {
                let start = f.lines.line_start(lines.start)?;
                let last = lines.end - 1;
                let end = f.lines.line_start(last)? + line_text(last).len() as u32;
                let directive = lines
                    .start
                    .checked_sub(1)
                    .map(|l| line_text(l).trim().to_string())
                    .unwrap_or_default();
                Some(InactiveRegion {
                    range: TextRange::new(start, end),
                    directive,
                })
            })
            .collect()
    }

    /// The headers read (not the document), with their index in `files`.
    pub fn headers(&self) -> impl Iterator<Item = (u32, &FileRead)> {
        self.files
            .iter()
            .enumerate()
            .skip(1)
            .map(|(i, f)| (i as u32, f))
    }
}
