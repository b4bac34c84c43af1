//! `dfort analyze`: per unit, its roles, activity, what its adjoint's
//! forward sweep pushes (and why) and drops, how each construct is
//! reversed and each address recovered — as text for people or as JSON
//! (format documented in docs/command-line.md). It runs on the language server's
//! host ([`crate::session`]): what it prints is what the editor shows and
//! the generator does, from the same facts.

use crate::report::Report;
use crate::session::{Ask, Session};
use clap::Args;
use dfort_analysis::decisions::Recording;
use dfort_analysis::roots::RootSpec;
use dfort_ide::host::Snapshot;
use dfort_ide::render;
use dfort_ide::summary::summaries;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args)]
pub struct AnalyzeArgs {
    /// The files (default: `dfort.toml`'s `files`).
    files: Vec<PathBuf>,
    /// Analyse only this unit (with --independent/--dependent if given).
    #[arg(long)]
    root: Option<String>,
    /// Independent variables of the root, comma-separated.
    #[arg(long, value_delimiter = ',', requires = "root")]
    independent: Vec<String>,
    /// Dependent variables of the root, comma-separated.
    #[arg(long, value_delimiter = ',', requires = "root")]
    dependent: Vec<String>,
    /// The root's independents take their values when its call to this
    /// procedure returns (as for `dfort adjoint --after`).
    #[arg(long, value_name = "PROCEDURE", requires = "root")]
    after: Option<String>,
    /// `text` (default) or `json`.
    #[arg(long, default_value = "text", value_parser = ["text", "json"])]
    format: String,
    /// Record every overwritten active value (no TBR), for comparison.
    #[arg(long)]
    no_tbr: bool,
    /// Store every overwritten address value instead of recovering loops'
    /// indices by inversion and recomputation (paper 003).
    #[arg(long)]
    no_inversion: bool,
    /// Preaccumulate basic blocks' local Jacobians (papers 002 and 004):
    /// `cost` (the bare flag) where a Jacobian has fewer entries than the
    /// statements' adjoints would record, `all` wherever it can, `off`.
    /// Default: `dfort.toml`'s `[adjoint] preaccumulate`, else off.
    #[arg(long, value_name = "WHEN", num_args = 0..=1, default_missing_value = "cost", require_equals = true)]
    preaccumulate: Option<crate::config::Preaccumulate>,
    /// Explain why this variable is (or is not) active, in each unit that has it.
    #[arg(long, value_name = "VAR")]
    explain: Option<String>,
    #[command(flatten)]
    form: crate::FormArgs,
}

pub fn run(args: AnalyzeArgs) -> ExitCode {
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
    // The roots: --root alone (with its lists), else those of dfort.toml
    // and every other procedure nobody calls, as the editor analyses them.
    let recording = Recording::from_flags(args.no_tbr, args.no_inversion);
    let ask = match &args.root {
        Some(r) => Ask {
            supplied: Vec::new(),
            roots: vec![RootSpec {
                name: r.to_ascii_lowercase(),
                independent: args.independent.clone(),
                dependent: args.dependent.clone(),
                after: args.after.as_ref().map(|a| a.to_ascii_lowercase()),
            }],
            others: false,
            recording,
            preaccumulate: args.preaccumulate.map(|p| p.mode()),
        },
        None => Ask {
            supplied: Vec::new(),
            roots: config
                .root
                .iter()
                .map(crate::config::RootConfig::spec)
                .collect(),
            others: true,
            recording,
            preaccumulate: args.preaccumulate.map(|p| p.mode()),
        },
    };
    let session = Session::open(&files, &args.form, &ask);
    if !session.usable() {
        eprintln!("error: not analysing code that has errors");
        return ExitCode::from(1);
    }
    let snap = &session.snap;
    if !snap.analysis().problems.is_empty() {
        for p in &snap.analysis().problems {
            eprintln!("error: {}", p.message());
        }
        return ExitCode::from(1);
    }
    if args.format == "json" {
        let doc = report(snap);
        println!("{}", serde_json::to_string_pretty(&doc).unwrap_or_default());
    } else {
        for s in &summaries(snap) {
            for line in render::unit_text(s, args.explain.as_deref(), &**snap) {
                println!("{line}");
            }
            for line in render::jacobian_lines(s.unit, &s.local_jacobians(), &**snap) {
                println!("{line}");
            }
        }
    }
    ExitCode::SUCCESS
}

/// The JSON report of a snapshot's analyses.
pub fn report(snap: &Snapshot) -> Report {
    Report::new(
        &summaries(snap),
        snap.analysis().request.recording.as_str(),
        snap.analysis().request.preaccumulate.as_str(),
        snap,
    )
}

/// `dfort analyze --format json` of `files` from the roots `specs` (and,
/// with `others`, every procedure nobody calls), or the problems of the
/// files and roots.
pub fn json_for(
    files: &[PathBuf],
    specs: &[RootSpec],
    others: bool,
    recording: Recording,
) -> Result<serde_json::Value, Vec<String>> {
    let ask = Ask {
        supplied: Vec::new(),
        roots: specs.to_vec(),
        others,
        recording,
        preaccumulate: None,
    };
    let session = Session::open(files, &crate::FormArgs::default(), &ask);
    let snap = &session.snap;
    let mut problems: Vec<String> = session.errors.iter().map(|e| e.to_string()).collect();
    problems.extend(snap.analysis().problems.iter().map(|p| p.message()));
    if !problems.is_empty() {
        return Err(problems);
    }
    serde_json::to_value(report(snap)).map_err(|e| vec![e.to_string()])
}
