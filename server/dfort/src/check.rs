//! `dfort check`: the diagnostics the editor shows for the files, as
//! `file:line:col: severity: message [code]` (`dfort rules CODE` explains
//! a code), from the language server's host ([`crate::session`]); exit
//! status 1 when there are errors. Without `--root`, the front end's
//! (syntax, lowering, linking); with `--root R`, also the
//! differentiability checks of R and what it calls, and the refusals of
//! R's adjoint and tangent as errors — so a CI job can gate on them.

use crate::session::{Ask, Session};
use crate::FormArgs;
use clap::Args;
use dfort_analysis::roots::RootSpec;
use dfort_ide::host::Snapshot;
use dfort_syntax::Severity;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Args)]
pub struct CheckArgs {
    /// The files (default: `dfort.toml`'s `files`).
    files: Vec<PathBuf>,
    /// Also check that this procedure can be differentiated (repeatable;
    /// its independents and dependents come from `dfort.toml`, else
    /// directives, else intents): the editor's differentiability
    /// diagnostics of the units it reaches and its adjoint's and
    /// tangent's refusals.
    #[arg(long = "root", value_name = "NAME")]
    roots: Vec<String>,
    #[command(flatten)]
    form: FormArgs,
}

/// One line of output.
struct Line {
    line: u32,
    col: u32,
    severity: Severity,
    message: String,
    code: String,
}

pub fn run(args: CheckArgs) -> ExitCode {
    let files = match crate::config::files_or_listed(&args.files) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(1);
        }
    };
    let config = match crate::config::load(&files) {
        Ok(c) => c.map(|(_, c)| c).unwrap_or_default(),
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(1);
        }
    };
    let roots: Vec<RootSpec> = args
        .roots
        .iter()
        .map(|name| match config.root_named(name) {
            Some(r) => r.spec(),
            None => RootSpec {
                name: name.to_ascii_lowercase(),
                ..RootSpec::default()
            },
        })
        .collect();
    let ask = Ask {
        roots,
        supplied: Vec::new(),
        others: false,
        recording: Default::default(),
        preaccumulate: None,
    };
    let session = Session::open(&files, &args.form, &ask);
    session.report_load_errors();
    let snap = &session.snap;
    let mut errors = session.errors.len();
    for p in &snap.analysis().problems {
        eprintln!("error: {} [{}]", p.message(), p.rule().code);
        errors += 1;
    }
    let mut lines: Vec<(PathBuf, Vec<Line>)> = session
        .files_read()
        .into_iter()
        .map(|p| {
            (
                p.to_path_buf(),
                document_lines(snap, p, !args.roots.is_empty()),
            )
        })
        .collect();
    let front_end_errors = lines
        .iter()
        .flat_map(|(_, l)| l)
        .any(|l| l.severity == Severity::Error);
    if !front_end_errors {
        for (root, _) in &snap.analysis().roots {
            for rf in refusals(snap, *root) {
                let Some(at) = snap.location(rf.span) else {
                    continue;
                };
                if let Some((_, l)) = lines.iter_mut().find(|(p, _)| p == at.path) {
                    l.push(Line {
                        line: at.line,
                        col: at.col,
                        severity: Severity::Error,
                        message: rf.message,
                        code: rf.rule.code.to_string(),
                    });
                }
            }
        }
    }
    let mut warnings = 0;
    for (path, mut l) in lines {
        // A refusal and the editor's warning of the same problem (the
        // no-source rule) are one line: the error.
        l.sort_by(|a, b| {
            (a.line, a.col, &a.message, a.severity).cmp(&(b.line, b.col, &b.message, b.severity))
        });
        l.dedup_by(|b, a| a.line == b.line && a.message == b.message && a.code == b.code);
        for d in &l {
            match d.severity {
                Severity::Error => errors += 1,
                Severity::Warning => warnings += 1,
                _ => {}
            }
            println!(
                "{}:{}:{}: {}: {} [{}]",
                path.display(),
                d.line,
                d.col,
                d.severity.as_str(),
                d.message,
                d.code
            );
        }
    }
    eprintln!(
        "{} file(s), {} unit(s): {errors} error(s), {warnings} warning(s)",
        session.paths.len(),
        snap.program.units.len(),
    );
    if errors > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// A document's front-end diagnostics and, with `differentiability`, the
/// differentiability checks the editor shows, as output lines.
fn document_lines(snap: &Snapshot, path: &Path, differentiability: bool) -> Vec<Line> {
    let mut diags = dfort_ide::diagnostics::front_end(snap, path);
    if differentiability {
        diags.extend(dfort_ide::diagnostics::differentiability(snap, path));
    }
    let Some((text, lines)) = snap.file_text(path) else {
        return Vec::new();
    };
    diags
        .into_iter()
        .map(|d| Line {
            line: lines.line_col(d.range.start).line + 1,
            col: lines.char_col(text, d.range.start) + 1,
            severity: d.severity,
            message: d.message,
            code: d.code.to_string(),
        })
        .collect()
}

/// The refusals of the adjoint and the tangent of `root` (each once), as
/// the facts decide them before any code is written (what the generators
/// refuse: `tests/tangent.rs` compares them on every fixture, the fuzzer
/// on every program it draws).
fn refusals(snap: &Snapshot, root: dfort_ir::UnitId) -> Vec<dfort_codegen::Refusal> {
    use dfort_analysis::refusals::Derivative;
    let facts = snap.analysis();
    let mut out: Vec<dfort_codegen::Refusal> = Vec::new();
    for rf in [Derivative::Adjoint, Derivative::Tangent]
        .into_iter()
        .flat_map(|d| facts.refusals(root, d))
    {
        if !out.contains(&rf) {
            out.push(rf);
        }
    }
    out
}
