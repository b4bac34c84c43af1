//! The C preprocessor, in process, for `.F`, `.F90`, `.fpp`… files (issue
//! 18): `#include "f"` / `<f>`, `#define` (object-like and function-like),
//! `#undef`, `#if` / `#ifdef` / `#ifndef` / `#elif` / `#else` / `#endif`
//! with `defined` and C integer expressions, `#error` / `#warning`;
//! `#line` and `#pragma` are ignored. Macro replacement follows
//! gfortran's traditional mode (see [`expand`]).
//!
//! Contract: [`preprocess`] never fails and does no I/O of its own (the
//! caller's `read` gives the text of an included file). Its output has one
//! line per line of the main file, directive and inactive lines blank, in
//! the same place; an `#include` line is replaced by the included file's
//! lines. Every output line says which file and line it comes from
//! ([`OutLine`]), and, where macros were replaced, which output columns
//! came from which source columns, so that every position maps back to
//! the original text. Problems are [`CppDiagnostic`]s at their file and
//! line; inactive regions and macro uses are listed for the editor.

pub mod expand;
pub mod expr;
pub mod fortran_include;

use expand::{expand_line, Macro, Macros, Mode, Place, Replaced};
use std::path::{Path, PathBuf};

/// Include directories and predefined macros (`-I`, `-D`).
#[derive(Clone, Debug, Default)]
pub struct CppOptions {
    pub include: Vec<PathBuf>,
    /// `NAME` → value (`-DNAME` is `NAME=1`).
    pub define: Vec<(String, String)>,
    /// Fixed form: comments in column 1, columns 1–6 kept.
    pub fixed: bool,
}

/// Where an output line comes from.
#[derive(Clone, Debug, PartialEq)]
pub struct OutLine {
    /// Index into [`Preprocessed::files`] (0: the main file).
    pub file: u32,
    /// 0-based line in that file.
    pub line: u32,
    /// The macros replaced on this line (empty: the line is the source
    /// line as written, or blank where a directive or inactive line was).
    pub replaced: Vec<Replaced>,
}

impl OutLine {
    /// The source column (byte) of output column `col` of this line: the
    /// start of the macro use for a column inside a replacement.
    pub fn source_column(&self, col: usize) -> usize {
        let mut shift: isize = 0;
        for r in &self.replaced {
            if col < r.out.start {
                break;
            }
            if col < r.out.end {
                return r.src.start;
            }
            shift = r.src.end as isize - r.out.end as isize;
        }
        (col as isize + shift).max(0) as usize
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum CppSeverity {
    Error,
    Warning,
}

/// A problem of a directive, at its file and 0-based line.
#[derive(Clone, Debug, PartialEq)]
pub struct CppDiagnostic {
    pub file: u32,
    pub line: u32,
    pub severity: CppSeverity,
    pub message: String,
}

/// A replaced macro, at its file, line and source columns, with its
/// replacement (for hover).
#[derive(Clone, Debug, PartialEq)]
pub struct MacroUse {
    pub file: u32,
    pub line: u32,
    pub columns: std::ops::Range<usize>,
    pub name: String,
    pub expansion: String,
    /// Where the macro was defined (`None`: on the command line).
    pub defined_at: Option<(u32, u32)>,
}

/// A conditional directive (`#if`, `#ifdef`, `#ifndef`, `#elif`) and
/// what the preprocessor made of it, for hover.
#[derive(Clone, Debug, PartialEq)]
pub struct Condition {
    pub file: u32,
    pub line: u32,
    /// `if`, `ifdef`, `ifndef` or `elif`.
    pub directive: String,
    /// What decided the lines after it: evaluated to keep or leave them
    /// out, or not evaluated at all.
    pub outcome: ConditionOutcome,
    /// Each macro name the condition tests, in order, once.
    pub names: Vec<TestedMacro>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConditionOutcome {
    /// True: the lines after it are kept.
    Kept,
    /// False: they are left out.
    LeftOut,
    /// An earlier branch of the same `#if` was kept (an `#elif`).
    EarlierBranchKept,
    /// Inside lines an enclosing `#if` leaves out: not evaluated.
    Enclosed,
}

/// A macro name a condition tests, and its definition at that line.
#[derive(Clone, Debug, PartialEq)]
pub struct TestedMacro {
    pub name: String,
    /// `None`: not defined there. Else its replacement (with its
    /// parameters, `(a,b) a+b`, for a function-like macro) and where it
    /// was defined (`None`: on the command line).
    pub definition: Option<(String, Option<(u32, u32)>)>,
}

/// An `#include` line and the file it read.
#[derive(Clone, Debug, PartialEq)]
pub struct IncludeLine {
    pub file: u32,
    pub line: u32,
    /// The included file's index, when it was found.
    pub target: Option<u32>,
}

/// A `#line N "name"`: from 0-based line `from` of `file` on, lines are
/// numbered from `line` (1-based) and named `name` in what the output
/// says (`__LINE__`, `__FILE__`, line markers); positions still map to
/// the file itself.
#[derive(Clone, Debug, PartialEq)]
pub struct Rename {
    pub file: u32,
    pub from: u32,
    pub line: u32,
    pub name: String,
}

/// What [`preprocess`] gives.
#[derive(Clone, Debug, Default)]
pub struct Preprocessed {
    pub text: String,
    pub lines: Vec<OutLine>,
    /// The files read: the main file first, then each included file once.
    pub files: Vec<PathBuf>,
    pub diagnostics: Vec<CppDiagnostic>,
    /// Line ranges (0-based, end exclusive) of each file that an `#if`
    /// left out: (file, lines).
    pub inactive: Vec<(u32, std::ops::Range<u32>)>,
    pub uses: Vec<MacroUse>,
    /// The conditional directives, in the order read.
    pub conditions: Vec<Condition>,
    pub includes: Vec<IncludeLine>,
    pub renames: Vec<Rename>,
}

impl Preprocessed {
    /// The name and 1-based number an output line's origin goes by
    /// (after `#line`).
    pub fn presumed(&self, origin: &OutLine) -> (String, u32) {
        match self
            .renames
            .iter()
            .rfind(|r| r.file == origin.file && r.from <= origin.line)
        {
            Some(r) => (r.name.clone(), r.line + (origin.line - r.from)),
            None => (
                self.files[origin.file as usize].display().to_string(),
                origin.line + 1,
            ),
        }
    }
}

/// `#line N ["name"]`: the number and the name.
fn line_directive(d: &str) -> Option<(u32, Option<String>)> {
    let rest = d.trim().strip_prefix("line")?;
    if !rest.starts_with(char::is_whitespace) {
        return None;
    }
    let rest = rest.trim();
    let end = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    let number = rest[..end].parse().ok()?;
    let name = rest[end..]
        .trim()
        .strip_prefix('"')
        .and_then(|r| r.split('"').next())
        .map(String::from);
    Some((number, name))
}

/// Whether files with this name are preprocessed by default, as gfortran
/// does: `.F`, `.FOR`, `.FPP`, `.F90`, `.F95`, `.F03`, `.F08` and `.fpp`.
pub fn preprocessed_by_default(path: &Path) -> bool {
    let Some(ext) = path.extension().and_then(|e| e.to_str()) else {
        return false;
    };
    matches!(
        ext,
        "F" | "FOR" | "FPP" | "F77" | "F90" | "F95" | "F03" | "F08" | "fpp"
    )
}

/// Nested includes deeper than this are an error (a header including
/// itself without a guard).
const MAX_DEPTH: usize = 200;

/// Preprocesses `text`, the contents of `path`; `read` gives the text of
/// an included file, or `None` when it cannot be read.
pub fn preprocess(
    path: &Path,
    text: &str,
    options: &CppOptions,
    read: &dyn Fn(&Path) -> Option<String>,
) -> Preprocessed {
    let mut macros = Macros::new();
    for (name, value) in &options.define {
        let (name, params) = split_params(name);
        macros.insert(
            name.to_string(),
            Macro {
                params,
                body: value.clone(),
                defined_at: None,
            },
        );
    }
    let mut run = Run {
        options,
        read,
        macros,
        out: Preprocessed {
            files: vec![path.to_path_buf()],
            ..Preprocessed::default()
        },
        depth: 0,
    };
    run.file(0, text);
    run.out
}

/// `NAME(a,b)` of a `-D` → the name and its parameters.
fn split_params(name: &str) -> (&str, Option<Vec<String>>) {
    match name.split_once('(') {
        Some((n, rest)) => (
            n,
            Some(
                rest.trim_end_matches(')')
                    .split(',')
                    .map(|p| p.trim().to_string())
                    .filter(|p| !p.is_empty())
                    .collect(),
            ),
        ),
        None => (name, None),
    }
}

struct Run<'a> {
    options: &'a CppOptions,
    read: &'a dyn Fn(&Path) -> Option<String>,
    macros: Macros,
    out: Preprocessed,
    depth: usize,
}

/// One `#if` group being read.
struct Cond {
    /// Whether the lines around the group are active.
    outer: bool,
    /// Whether this arm's lines are active.
    active: bool,
    /// Whether an arm was taken already.
    taken: bool,
    else_seen: bool,
    /// The `#if` line, for "unterminated" errors.
    line: u32,
    /// The first line of the inactive stretch being read, if any.
    inactive_from: Option<u32>,
}

impl Run<'_> {
    fn diag(&mut self, file: u32, line: u32, severity: CppSeverity, message: impl Into<String>) {
        self.out.diagnostics.push(CppDiagnostic {
            file,
            line,
            severity,
            message: message.into(),
        });
    }

    fn blank(&mut self, file: u32, line: u32) {
        self.out.text.push('\n');
        self.out.lines.push(OutLine {
            file,
            line,
            replaced: Vec::new(),
        });
    }

    fn file(&mut self, file: u32, text: &str) {
        // `#line` changes what __LINE__ and __FILE__ say from here on.
        let mut name = self.out.files[file as usize].to_string_lossy().into_owned();
        let mut delta: i64 = 0;
        let uncommented = without_c_comments(text);
        let lines: Vec<&str> = uncommented.lines().collect();
        let mut stack: Vec<Cond> = Vec::new();
        let mut k = 0;
        while k < lines.len() {
            let line_no = k as u32;
            let raw = lines[k].strip_suffix('\r').unwrap_or(lines[k]);
            let active = stack.last().is_none_or(|c| c.active);
            let trimmed = raw.trim_start();
            if let Some(directive) = trimmed.strip_prefix('#') {
                // A directive, continued by backslashes.
                let mut d = directive.to_string();
                let first = k;
                while d.ends_with('\\') && k + 1 < lines.len() {
                    d.pop();
                    k += 1;
                    d.push_str(lines[k].strip_suffix('\r').unwrap_or(lines[k]));
                }
                match line_directive(&d) {
                    Some((number, new_name)) if active => {
                        if let Some(n) = new_name {
                            name = n;
                        }
                        delta = i64::from(number) - (k as i64 + 2);
                        self.out.renames.push(Rename {
                            file,
                            from: k as u32 + 1,
                            line: number,
                            name: name.clone(),
                        });
                    }
                    Some(_) => {}
                    None => self.directive(file, line_no, &d, &mut stack, active),
                }
                for j in first..=k {
                    self.blank(file, j as u32);
                }
                k += 1;
                continue;
            }
            if !active {
                self.blank(file, line_no);
                k += 1;
                continue;
            }
            let mode = if self.options.fixed {
                Mode::Fixed
            } else {
                Mode::Free
            };
            let place = Place {
                file: &name,
                line: (i64::from(line_no) + 1 + delta).max(0) as u32,
            };
            let (mut expanded, mut replaced, mut open) =
                expand_line(raw, mode, &self.macros, &place);
            // A macro call continued on the next lines is read whole
            // there, and the lines it took stay blank (as gfortran does).
            let mut joined = raw.to_string();
            let mut taken = 0;
            while open && k + taken + 1 < lines.len() && taken < 64 {
                let next = lines[k + taken + 1];
                if next.trim_start().starts_with('#') {
                    break;
                }
                taken += 1;
                joined.push(' ');
                joined.push_str(next.strip_suffix('\r').unwrap_or(next));
                (expanded, replaced, open) = expand_line(&joined, mode, &self.macros, &place);
            }
            for r in &replaced {
                let defined_at = self.macros.get(&r.name).and_then(|m| m.defined_at);
                self.out.uses.push(MacroUse {
                    file,
                    line: line_no,
                    columns: r.src.clone(),
                    name: r.name.clone(),
                    expansion: expanded[r.out.clone()].to_string(),
                    defined_at,
                });
            }
            self.out.text.push_str(&expanded);
            self.out.text.push('\n');
            self.out.lines.push(OutLine {
                file,
                line: line_no,
                replaced,
            });
            for j in 1..=taken {
                self.blank(file, line_no + j as u32);
            }
            k += 1 + taken;
        }
        let end = lines.len() as u32;
        for c in stack.into_iter().rev() {
            if let Some(from) = c.inactive_from {
                self.out.inactive.push((file, from..end));
            }
            self.diag(
                file,
                c.line,
                CppSeverity::Error,
                "unterminated #if: no #endif before the end of the file",
            );
        }
    }

    fn directive(&mut self, file: u32, line: u32, text: &str, stack: &mut Vec<Cond>, active: bool) {
        let text = text.trim();
        let spaced;
        let text = if text.starts_with("define") {
            text
        } else {
            spaced = text.replace(PASTE, " ");
            spaced.as_str()
        };
        let (word, rest) = match text.find(|c: char| !c.is_ascii_alphanumeric() && c != '_') {
            Some(i) => (&text[..i], text[i..].trim()),
            None => (text, ""),
        };
        if matches!(word, "if" | "ifdef" | "ifndef" | "elif") {
            self.record_condition(file, line, word, rest, stack, active);
        }
        match word {
            "if" | "ifdef" | "ifndef" => {
                let value = if active {
                    match word {
                        "if" => self.condition(file, line, rest),
                        _ => {
                            let name = rest.split_whitespace().next().unwrap_or("");
                            if name.is_empty() {
                                self.diag(
                                    file,
                                    line,
                                    CppSeverity::Error,
                                    format!("no macro name given in #{word}"),
                                );
                            }
                            self.macros.contains_key(name) == (word == "ifdef")
                        }
                    }
                } else {
                    false
                };
                self.condition_kept(active && value);
                stack.push(Cond {
                    outer: active,
                    active: active && value,
                    taken: value,
                    else_seen: false,
                    line,
                    inactive_from: (active && !value).then_some(line + 1),
                });
            }
            "elif" | "else" => {
                let Some(mut c) = stack.pop() else {
                    self.diag(
                        file,
                        line,
                        CppSeverity::Error,
                        format!("#{word} without #if"),
                    );
                    return;
                };
                if c.else_seen {
                    self.diag(
                        file,
                        line,
                        CppSeverity::Error,
                        format!("#{word} after #else"),
                    );
                }
                let (outer, taken) = (c.outer, c.taken);
                let value = outer && !taken && (word == "else" || self.condition(file, line, rest));
                if word == "elif" {
                    self.condition_kept(value);
                }
                if c.active {
                    c.inactive_from = Some(line + 1);
                } else if value {
                    if let Some(from) = c.inactive_from.take() {
                        self.out.inactive.push((file, from..line));
                    }
                }
                c.active = value;
                c.taken |= value;
                c.else_seen |= word == "else";
                stack.push(c);
            }
            "endif" => match stack.pop() {
                Some(c) => {
                    if let Some(from) = c.inactive_from {
                        if !c.active {
                            self.out.inactive.push((file, from..line));
                        }
                    }
                }
                None => self.diag(file, line, CppSeverity::Error, "#endif without #if"),
            },
            _ if !active => {}
            "define" => self.define(file, line, rest),
            "undef" => {
                let name = rest.split_whitespace().next().unwrap_or("");
                if name.is_empty() {
                    self.diag(
                        file,
                        line,
                        CppSeverity::Error,
                        "no macro name given in #undef",
                    );
                }
                self.macros.remove(name);
            }
            "include" => self.include(file, line, rest),
            "error" => self.diag(file, line, CppSeverity::Error, format!("#error {rest}")),
            "warning" => self.diag(file, line, CppSeverity::Warning, format!("#warning {rest}")),
            "line" | "pragma" | "ident" | "" => {}
            _ if word.chars().all(|c| c.is_ascii_digit()) => {}
            _ => self.diag(
                file,
                line,
                CppSeverity::Error,
                format!("invalid preprocessing directive #{word}"),
            ),
        }
    }

    /// Records the conditional directive `#word rest` at `line` of `file`
    /// with the macros it tests as they are defined there, before the
    /// directive changes `stack`.
    fn record_condition(
        &mut self,
        file: u32,
        line: u32,
        word: &str,
        rest: &str,
        stack: &[Cond],
        active: bool,
    ) {
        let mut names: Vec<TestedMacro> = Vec::new();
        for name in identifiers(rest) {
            if name == "defined" || names.iter().any(|n| n.name == name) {
                continue;
            }
            let definition = self.macros.get(name).map(|m| {
                let body = match &m.params {
                    Some(p) => format!("({}) {}", p.join(","), m.body),
                    None => m.body.clone(),
                };
                (body.trim().to_string(), m.defined_at)
            });
            names.push(TestedMacro {
                name: name.to_string(),
                definition,
            });
        }
        let outcome = if word == "elif" {
            match stack.last() {
                Some(c) if !c.outer => ConditionOutcome::Enclosed,
                Some(c) if c.taken => ConditionOutcome::EarlierBranchKept,
                _ => ConditionOutcome::LeftOut, // decided below
            }
        } else if active {
            ConditionOutcome::LeftOut // decided below
        } else {
            ConditionOutcome::Enclosed
        };
        self.out.conditions.push(Condition {
            file,
            line,
            directive: word.to_string(),
            outcome,
            names,
        });
    }

    /// Marks the condition recorded last as kept when it was evaluated
    /// true.
    fn condition_kept(&mut self, kept: bool) {
        if let Some(c) = self.out.conditions.last_mut() {
            if kept && c.outcome == ConditionOutcome::LeftOut {
                c.outcome = ConditionOutcome::Kept;
            }
        }
    }

    /// The value of a `#if`/`#elif` expression (false, with an error,
    /// when it has none).
    fn condition(&mut self, file: u32, line: u32, text: &str) -> bool {
        let resolved = resolve_defined(text, &self.macros);
        let name = self.out.files[file as usize].to_string_lossy().into_owned();
        let place = Place {
            file: &name,
            line: line + 1,
        };
        let (expanded, _, _) = expand_line(&resolved, Mode::Expression, &self.macros, &place);
        match expr::evaluate(&expanded) {
            Ok(v) => v != 0,
            Err(m) => {
                self.diag(file, line, CppSeverity::Error, m);
                false
            }
        }
    }

    fn define(&mut self, file: u32, line: u32, rest: &str) {
        let b = rest.as_bytes();
        let mut e = 0;
        while e < b.len() && (b[e].is_ascii_alphanumeric() || b[e] == b'_') {
            e += 1;
        }
        let name = &rest[..e];
        if name.is_empty() || name.as_bytes()[0].is_ascii_digit() {
            self.diag(
                file,
                line,
                CppSeverity::Error,
                "macro names must be identifiers",
            );
            return;
        }
        let (params, body) = if b.get(e) == Some(&b'(') {
            let Some(close) = rest[e..].find(')') else {
                self.diag(
                    file,
                    line,
                    CppSeverity::Error,
                    "missing ')' in macro parameter list",
                );
                return;
            };
            let params: Vec<String> = rest[e + 1..e + close]
                .split(',')
                .map(|p| p.trim().to_string())
                .filter(|p| !p.is_empty())
                .collect();
            (Some(params), rest[e + close + 1..].trim())
        } else {
            (None, rest[e..].trim())
        };
        let body = match params {
            Some(_) => body.to_string(),
            None => body.replace(PASTE, "").trim().to_string(),
        };
        self.macros.insert(
            name.to_string(),
            Macro {
                params,
                body,
                defined_at: Some((file, line)),
            },
        );
    }

    fn include(&mut self, file: u32, line: u32, rest: &str) {
        let (name, quoted) = if let Some(r) = rest.strip_prefix('"') {
            (r.split('"').next().unwrap_or(""), true)
        } else if let Some(r) = rest.strip_prefix('<') {
            (r.split('>').next().unwrap_or(""), false)
        } else {
            self.diag(
                file,
                line,
                CppSeverity::Error,
                "#include expects \"FILENAME\" or <FILENAME>",
            );
            return;
        };
        if self.depth >= MAX_DEPTH {
            self.diag(
                file,
                line,
                CppSeverity::Error,
                format!("#include nested {MAX_DEPTH} deep (a header that includes itself?)"),
            );
            return;
        }
        let here = self.out.files[file as usize]
            .parent()
            .map(Path::to_path_buf);
        let candidates = quoted
            .then_some(here)
            .flatten()
            .into_iter()
            .chain(self.options.include.iter().cloned())
            .map(|d| {
                if d.as_os_str().is_empty() {
                    PathBuf::from(name)
                } else {
                    d.join(name)
                }
            });
        let found = candidates
            .into_iter()
            .find_map(|p| (self.read)(&p).map(|text| (p, text)));
        let Some((path, text)) = found else {
            self.diag(
                file,
                line,
                CppSeverity::Error,
                format!(
                    "{name}: no such file in the including file's directory or the include path"
                ),
            );
            self.out.includes.push(IncludeLine {
                file,
                line,
                target: None,
            });
            return;
        };
        let target = match self.out.files.iter().position(|f| *f == path) {
            Some(i) => i as u32,
            None => {
                self.out.files.push(path);
                (self.out.files.len() - 1) as u32
            }
        };
        self.out.includes.push(IncludeLine {
            file,
            line,
            target: Some(target),
        });
        self.depth += 1;
        self.file(target, &text);
        self.depth -= 1;
    }
}

/// What a C comment in a directive leaves until macro parameters are
/// substituted: it separates tokens, then vanishes.
pub(crate) const PASTE: char = '\u{1}';

/// `text` without its C comments (`/* … */` outside character literals,
/// removed as traditional mode removes them: `tmp/**/1` pastes to
/// `tmp1`), the newlines inside a comment kept so that lines keep their
/// numbers.
fn without_c_comments(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains("/*") {
        return std::borrow::Cow::Borrowed(text);
    }
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut quote: Option<u8> = None;
    let mut i = 0;
    let mut copied = 0;
    while i < b.len() {
        let c = b[i];
        match quote {
            Some(q) if c == q || c == b'\n' => quote = None,
            Some(_) => {}
            None if c == b'\'' || c == b'"' => quote = Some(c),
            None if c == b'/' && b.get(i + 1) == Some(&b'*') => {
                out.push_str(&text[copied..i]);
                // In a directive the comment separates tokens until a
                // macro's parameters are substituted (`a/**/b` pastes
                // the two arguments).
                let line_start = text[..i].rfind('\n').map_or(0, |n| n + 1);
                if text[line_start..i].trim_start().starts_with('#') {
                    out.push(PASTE);
                }
                let end = text[i + 2..].find("*/").map_or(b.len(), |e| i + 2 + e + 2);
                out.extend(text[i..end].chars().filter(|&ch| ch == '\n'));
                i = end;
                copied = end;
                continue;
            }
            None => {}
        }
        i += 1;
    }
    out.push_str(&text[copied..]);
    std::borrow::Cow::Owned(out)
}

/// The identifiers of a directive's text, in order (character literals
/// skipped).
fn identifiers(text: &str) -> Vec<&str> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b'"' || c == b'\'' {
            i += 1;
            while i < b.len() && b[i] != c {
                i += 1;
            }
            i += 1;
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push(&text[start..i]);
        } else if c.is_ascii_digit() {
            // A number with its suffix (`1L`, `0x1F`).
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
        } else {
            i += 1;
        }
    }
    out
}

/// `text` with `defined NAME` and `defined(NAME)` replaced by 1 or 0.
fn resolve_defined(text: &str, macros: &Macros) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = find_word(rest, "defined") {
        out.push_str(&rest[..i]);
        let after = rest[i + "defined".len()..].trim_start();
        let (name, tail) = if let Some(inner) = after.strip_prefix('(') {
            match inner.split_once(')') {
                Some((n, t)) => (n.trim(), t),
                None => (inner.trim(), ""),
            }
        } else {
            let e = after
                .find(|c: char| !c.is_ascii_alphanumeric() && c != '_')
                .unwrap_or(after.len());
            (&after[..e], &after[e..])
        };
        out.push_str(if macros.contains_key(name) {
            " 1 "
        } else {
            " 0 "
        });
        rest = tail;
    }
    out.push_str(rest);
    out
}

/// The byte offset of `word` in `text` as a whole identifier.
fn find_word(text: &str, word: &str) -> Option<usize> {
    let b = text.as_bytes();
    let mut from = 0;
    while let Some(i) = text[from..].find(word).map(|i| i + from) {
        let before = i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_');
        let e = i + word.len();
        let after = e >= b.len() || !(b[e].is_ascii_alphanumeric() || b[e] == b'_');
        if before && after {
            return Some(i);
        }
        from = e;
    }
    None
}

#[cfg(test)]
mod tests;
