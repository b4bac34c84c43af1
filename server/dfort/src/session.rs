//! How the commands that check, analyse or differentiate Fortran files
//! read them: into the language server's host ([`dfort_ide::host`]), as
//! the editor does — the same chunked front end and diagnostics, the same
//! analyses' facts ([`dfort_analysis::facts`]) for the same request — so
//! that `dfort check`, `analyze`, `adjoint`, `tangent`, `verify` and the
//! editor cannot drift (rust-analyzer's command line runs on its analysis
//! host the same way). `dfort ir` dumps the IR of the same host.

use crate::FormArgs;
use dfort_analysis::decisions::Recording;
use dfort_analysis::roles::Roles;
use dfort_analysis::roots::RootSpec;
use dfort_ide::diagnostics::IdeDiagnostic;
use dfort_ide::host::{Host, HostConfig, Snapshot};
use dfort_ide::LoadError;
use dfort_ir::Unit;
use dfort_syntax::Severity;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What the analyses are asked for.
#[derive(Clone, Debug, Default)]
pub struct Ask {
    pub roots: Vec<RootSpec>,
    /// Also every other procedure nobody calls (as the editor does).
    pub others: bool,
    pub recording: Recording,
    /// Whether the adjoint preaccumulates local Jacobians (the command
    /// line's; `None`: `dfort.toml`'s, else off).
    pub preaccumulate: Option<dfort_analysis::preaccumulation::Preaccumulation>,
    /// Subroutines whose adjoint the user supplies, lower case (the
    /// command line's; `dfort.toml`'s are added when the files are read).
    pub supplied: Vec<String>,
}

/// The files of one command, loaded into the host, and its snapshot.
pub struct Session {
    pub snap: Arc<Snapshot>,
    /// The documents read, in the order given (each once).
    pub paths: Vec<PathBuf>,
    /// Files that could not be read.
    pub errors: Vec<LoadError>,
}

impl FormArgs {
    /// The host's settings for these options and this request.
    pub fn host_config(&self, ask: &Ask) -> HostConfig {
        let fixed = self.fixed_options();
        HostConfig {
            fixed,
            forced_form: self.forced_form(),
            roots: ask.roots.clone(),
            others: ask.others,
            recording: ask.recording,
            preaccumulate: ask.preaccumulate.unwrap_or_default(),
            supplied: ask.supplied.clone(),
            cpp: self.cpp_config(),
            ..HostConfig::default()
        }
    }
}

impl Session {
    /// Reads `files` into a host with the settings of `form` and `ask`.
    /// The `[preprocessor]` settings of the `dfort.toml` found for the
    /// files come before the command line's (a `dfort.toml` that cannot be
    /// read is reported by the command).
    pub fn open(files: &[PathBuf], form: &FormArgs, ask: &Ask) -> Session {
        let mut config = form.host_config(ask);
        if let Ok(Some((path, c))) = crate::config::load(files) {
            c.preprocessor.apply(&path, &mut config.cpp);
            if ask.preaccumulate.is_none() {
                config.preaccumulate = c.adjoint.preaccumulation();
            }
            for (name, _) in c.adjoint.supplied_files(&path) {
                if !config.supplied.contains(&name) {
                    config.supplied.push(name);
                }
            }
        }
        let (mut host, errors) = Host::load(files, config);
        let mut paths: Vec<PathBuf> = Vec::new();
        for p in files {
            if host.document(p).is_some() && !paths.contains(p) {
                paths.push(p.clone());
            }
        }
        Session {
            snap: host.snapshot(),
            paths,
            errors,
        }
    }

    /// Prints the files that could not be read, as errors.
    pub fn report_load_errors(&self) {
        for e in &self.errors {
            eprintln!("error: {e}");
        }
    }

    /// The documents in the order given, each followed by the headers the
    /// C preprocessor included into it first (each file once).
    pub fn files_read(&self) -> Vec<&Path> {
        dfort_ide::diagnostics::files_read(&self.snap, &self.paths)
    }

    /// The front end's diagnostics (syntax, lowering, linking, the C
    /// preprocessor's) of every document and header read.
    pub fn front_end(&self) -> Vec<(&Path, IdeDiagnostic)> {
        dfort_ide::diagnostics::front_end_of(&self.snap, &self.paths)
    }

    /// Prints the front end's diagnostics to stderr and says whether the
    /// files can be used (they were all read and none has errors).
    pub fn usable(&self) -> bool {
        self.report_load_errors();
        let diags = self.front_end();
        for (p, d) in &diags {
            eprintln!("{}", self.snap.render_diagnostic(p, d));
        }
        self.errors.is_empty() && !diags.iter().any(|(_, d)| d.severity == Severity::Error)
    }

    /// The procedure named `name` (any case).
    pub fn procedure(&self, name: &str) -> Result<&Unit, String> {
        let name = name.to_ascii_lowercase();
        self.snap
            .program
            .all_units()
            .find(|u| u.is_procedure() && u.name == name)
            .ok_or_else(|| format!("no subroutine named `{name}`"))
    }

    /// The first reason the files cannot be used: a file that could not
    /// be read, or the first error of the front end (rendered).
    pub fn first_error(&self) -> Option<String> {
        if let Some(e) = self.errors.first() {
            return Some(e.to_string());
        }
        self.front_end()
            .into_iter()
            .find(|(_, d)| d.severity == Severity::Error)
            .map(|(p, d)| self.snap.render_diagnostic(p, &d))
    }

    /// The root `name` as the analyses resolved it: its id and roles, or
    /// why it cannot be (no such procedure, variables it does not have).
    pub fn root(&self, name: &str) -> Result<(dfort_ir::UnitId, Roles), String> {
        let id = self.procedure(name)?.id;
        let facts = self.snap.analysis();
        if let Some(p) = facts.problems.first() {
            return Err(p.message());
        }
        match facts.roles_of(id) {
            Some(r) => Ok((id, r.clone())),
            None => Err(format!("`{name}` was not analysed")),
        }
    }

    /// `files` analysed from the root `spec` alone in `recording` mode,
    /// with the root's id and roles; or the first problem (a file that
    /// cannot be read or has errors, an unknown root or variable).
    pub fn for_root(
        files: &[PathBuf],
        spec: RootSpec,
        recording: Recording,
    ) -> Result<(Session, dfort_ir::UnitId, Roles), String> {
        Session::for_root_with(files, spec, recording, None)
    }

    /// [`Session::for_root`] preaccumulating local Jacobians as
    /// `preaccumulate` says (`None`: as `dfort.toml` says).
    pub fn for_root_with(
        files: &[PathBuf],
        spec: RootSpec,
        recording: Recording,
        preaccumulate: Option<dfort_analysis::preaccumulation::Preaccumulation>,
    ) -> Result<(Session, dfort_ir::UnitId, Roles), String> {
        let name = spec.name.clone();
        let ask = Ask {
            supplied: Vec::new(),
            roots: vec![spec],
            others: false,
            recording,
            preaccumulate,
        };
        let session = Session::open(files, &FormArgs::default(), &ask);
        if let Some(e) = session.first_error() {
            return Err(e);
        }
        let (id, roles) = session.root(&name)?;
        Ok((session, id, roles))
    }

    /// The files' sources in the order given (path, text): for a file the
    /// C preprocessor ran on, its output (what dfort analysed, which
    /// compiles without `-cpp`, `-I` or `-D`).
    pub fn sources(&self) -> Vec<(&Path, &str)> {
        self.paths
            .iter()
            .filter_map(|p| {
                let doc = self.snap.doc(p)?;
                let text = match &doc.preprocessed {
                    Some(pp) => pp.pp.text.as_str(),
                    None => &*doc.text,
                };
                Some((p.as_path(), text))
            })
            .collect()
    }
}
