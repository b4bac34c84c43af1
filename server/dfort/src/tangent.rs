//! `dfort tangent`: writes `<stem>_d.f90` holding `R_d`, or explains with
//! diagnostics why it cannot (and writes nothing). Also what `tangent`,
//! `adjoint` and `verify` share: the root's loading (on the host, see
//! [`crate::session`]), the output files and the refusals' report.

use crate::config::RootConfig;
use crate::session::{Ask, Session};
use clap::Args;
use dfort_analysis::decisions::Recording;
use dfort_analysis::roles::Roles;
use dfort_analysis::roots::RootSpec;
use std::path::PathBuf;
use std::process::ExitCode;

/// What `dfort tangent` and `dfort adjoint` share.
#[derive(Args)]
pub struct DiffArgs {
    /// The files (default: `dfort.toml`'s `files`).
    pub files: Vec<PathBuf>,
    /// The subroutine to differentiate.
    #[arg(long)]
    pub root: String,
    /// Independent variables, comma-separated (default: directives, then intents).
    #[arg(long, value_delimiter = ',')]
    pub independent: Vec<String>,
    /// Dependent variables, comma-separated.
    #[arg(long, value_delimiter = ',')]
    pub dependent: Vec<String>,
    /// The independents take their values when the root's call to this
    /// procedure returns (a model that sets its state in an initialisation
    /// call): the gradient is the one with respect to that state.
    #[arg(long, value_name = "PROCEDURE")]
    pub after: Option<String>,
    /// Where to write the output (default: next to the file holding the root).
    #[arg(long)]
    pub output_dir: Option<PathBuf>,
    /// A subroutine whose adjoint `NAME_b` you write (an iterative
    /// solver's, say): the adjoint calls it and writes none, and `dfort
    /// verify` compiles FILE with it. Repeatable; adds to `dfort.toml`'s
    /// `[adjoint] supplied`. The tangent still differentiates NAME.
    #[arg(long, value_name = "NAME[=FILE]")]
    pub supplied: Vec<String>,
    #[command(flatten)]
    pub form: crate::FormArgs,
}

impl DiffArgs {
    /// The supplied adjoints of the command line (lower-case names, with
    /// their files when given).
    pub fn supplied_on_command_line(&self) -> Vec<(String, Option<PathBuf>)> {
        self.supplied
            .iter()
            .map(|s| match s.split_once('=') {
                Some((n, f)) => (n.trim().to_ascii_lowercase(), Some(PathBuf::from(f))),
                None => (s.trim().to_ascii_lowercase(), None),
            })
            .collect()
    }
}

#[derive(Args)]
pub struct TangentArgs {
    #[command(flatten)]
    diff: DiffArgs,
}

/// A root ready to differentiate: the files on the host, analysed from
/// this root alone with its roles.
pub struct Loaded {
    pub session: Session,
    pub root: dfort_ir::UnitId,
    pub roles: Roles,
    /// The root's `[[root]]` table of `dfort.toml`, and that file.
    pub config: Option<(PathBuf, RootConfig)>,
    /// The subroutines whose adjoint the user supplies (lower case), with
    /// the file holding it when one was given.
    pub supplied: Vec<(String, Option<PathBuf>)>,
}

/// The root as the analyses are asked for it: named on the command line,
/// with `--independent`/`--dependent`, else the lists of its `[[root]]`
/// in `dfort.toml` (said on stderr), else none (directives, then intents
/// decide).
pub fn root_spec(args: &DiffArgs, config: Option<&(PathBuf, RootConfig)>) -> RootSpec {
    let name = args.root.to_ascii_lowercase();
    let (independent, dependent) = if !args.independent.is_empty() || !args.dependent.is_empty() {
        (args.independent.clone(), args.dependent.clone())
    } else {
        match config {
            Some((path, r)) if r.has_lists() => {
                eprintln!(
                    "note: independents and dependents of {name} from {}",
                    path.display()
                );
                (r.independent.clone(), r.dependent.clone())
            }
            _ => (Vec::new(), Vec::new()),
        }
    };
    let after = args
        .after
        .clone()
        .or_else(|| config.and_then(|(_, r)| r.after.clone()))
        .map(|a| a.to_ascii_lowercase());
    RootSpec {
        name,
        independent,
        dependent,
        after,
    }
}

/// Loads the files, checks them, and finds the root and its roles as the
/// analyses resolved them, reporting problems on stderr.
pub fn load_root(
    args: &DiffArgs,
    recording: Recording,
    preaccumulate: Option<dfort_analysis::preaccumulation::Preaccumulation>,
) -> Option<Loaded> {
    let files = match crate::config::files_or_listed(&args.files) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("error: {e}");
            return None;
        }
    };
    let whole = match crate::config::load(&files) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            return None;
        }
    };
    let config = whole
        .as_ref()
        .and_then(|(path, c)| c.root_named(&args.root).cloned().map(|r| (path.clone(), r)));
    // The supplied adjoints: the command line's, then dfort.toml's.
    let mut supplied = args.supplied_on_command_line();
    if let Some((path, c)) = &whole {
        for (n, f) in c.adjoint.supplied_files(path) {
            if !supplied.iter().any(|(m, _)| *m == n) {
                supplied.push((n, Some(f)));
            }
        }
    }
    let ask = Ask {
        roots: vec![root_spec(args, config.as_ref())],
        others: false,
        recording,
        preaccumulate,
        supplied: args
            .supplied_on_command_line()
            .into_iter()
            .map(|(n, _)| n)
            .collect(),
    };
    let session = Session::open(&files, &args.form, &ask);
    if !session.usable() {
        eprintln!("error: not differentiating code that has errors");
        return None;
    }
    let unmatched = session.snap.analysis().unmatched_supplied();
    if !unmatched.is_empty() {
        for (name, what) in unmatched {
            match what {
                Some(what) => eprintln!(
                    "error: `{name}` is {what}: only a subroutine's adjoint can be supplied"
                ),
                None => eprintln!(
                    "error: no subroutine `{name}` to supply the adjoint of in the files read"
                ),
            }
        }
        return None;
    }
    if session
        .snap
        .config
        .supplied
        .contains(&args.root.to_ascii_lowercase())
    {
        eprintln!(
            "error: `{}` is supplied (`--supplied` or dfort.toml's `[adjoint] supplied`), but the root's adjoint is what dfort writes",
            args.root
        );
        return None;
    }
    let (root, roles) = match session.root(&args.root) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return None;
        }
    };
    report_io_cuts(&session.snap, root);
    Some(Loaded {
        session,
        root,
        roles,
        config,
        supplied,
    })
}

/// Prints, as warnings, the READs of `root`'s derivative set that may read
/// back an active value ([`dfort_analysis::io_cuts`]): the derivatives
/// are written, but the zero they give there is not silent.
fn report_io_cuts(snap: &dfort_ide::host::Snapshot, root: dfort_ir::UnitId) {
    let at = |span| {
        snap.location(span)
            .map(|l| (l.path.display().to_string(), l.line, l.col))
            .unwrap_or_default()
    };
    for cut in snap.analysis().io_cuts(root) {
        let (path, line, col) = at(cut.read);
        let (wpath, wline, _) = at(cut.write);
        let msg = dfort_ide::render::io_cut_message(&cut, &format!("{wpath}:{wline}"));
        let code = dfort_syntax::rules::CUT_BY_IO.code;
        eprintln!("{path}:{line}:{col}: warning: {msg} [{code}]");
    }
}

/// The comment at the top of a generated file.
pub fn header(mode: dfort_ide::actions::Mode, name: &str, loaded: &Loaded) -> String {
    let command: Vec<String> = std::env::args().collect();
    let mut h = format!(
        "{}\nCommand: {}",
        mode.generated_line(name, None),
        command.join(" ")
    );
    let session = &loaded.session;
    if let Some(note) = dfort_ide::actions::preprocessing_note(&session.snap, &session.paths) {
        h.push('\n');
        h.push_str(&note);
    }
    h
}

/// Where the derivative of the root goes: `--output-dir`, else the
/// root's directory.
pub fn output_dir(args: &DiffArgs, loaded: &Loaded) -> Option<std::path::PathBuf> {
    let snap = &loaded.session.snap;
    let unit = snap.program.unit(loaded.root);
    args.output_dir.clone().or_else(|| {
        snap.location(unit.span)
            .and_then(|l| l.path.parent().map(|p| p.to_path_buf()))
    })
}

/// Writes the root's derivative `<stem>_b.f90` or `<stem>_d.f90` (and an
/// extra file) into `dir` ([`output_dir`]).
pub fn write_output(
    dir: Option<&std::path::Path>,
    loaded: &Loaded,
    mode: dfort_ide::actions::Mode,
    text: String,
    extra: Option<(String, String)>,
) -> ExitCode {
    let snap = &loaded.session.snap;
    let unit = snap.program.unit(loaded.root);
    let Some(file) = snap.location(unit.span).map(|l| l.path.to_path_buf()) else {
        return ExitCode::from(1);
    };
    let dir = dir.map(|d| d.to_path_buf()).unwrap_or_default();
    let name = mode
        .sibling(&file)
        .and_then(|p| p.file_name().map(|n| n.to_os_string()))
        .unwrap_or_else(|| format!("{}{}.f90", unit.name, mode.suffix()).into());
    let out = dir.join(name);
    let mut files = vec![(out.clone(), text)];
    if let Some((name, body)) = extra {
        files.push((dir.join(name), body));
    }
    for (path, body) in files {
        if let Err(e) = std::fs::create_dir_all(&dir).and_then(|_| std::fs::write(&path, body)) {
            eprintln!("error: cannot write {}: {e}", path.display());
            return ExitCode::from(1);
        }
    }
    println!("{}", out.display());
    ExitCode::SUCCESS
}

/// A refusal as the command line prints it: `file:line:col: error: …
/// [code]` (`dfort rules CODE` explains the code).
pub fn render_refusal(snap: &dfort_ide::host::Snapshot, rf: &dfort_codegen::Refusal) -> String {
    let (path, line, col) = snap
        .location(rf.span)
        .map(|l| (l.path.display().to_string(), l.line, l.col))
        .unwrap_or_default();
    format!(
        "{path}:{line}:{col}: error: {} [{}]",
        rf.message, rf.rule.code
    )
}

/// Prints each refusal and fails.
pub fn report_refusals(
    snap: &dfort_ide::host::Snapshot,
    name: &str,
    what: &str,
    refusals: &[dfort_codegen::Refusal],
) -> ExitCode {
    for rf in refusals {
        eprintln!("{}", render_refusal(snap, rf));
    }
    eprintln!("error: no {what} written for {name}");
    ExitCode::from(1)
}

pub fn run(args: TangentArgs) -> ExitCode {
    let args = &args.diff;
    let Some(loaded) = load_root(args, Recording::default(), None) else {
        return ExitCode::from(1);
    };
    let snap = &loaded.session.snap;
    let unit = snap.program.unit(loaded.root);
    let dir = output_dir(args, &loaded);
    let text = dfort_codegen::tangent::tangent_located(
        snap.analysis(),
        loaded.root,
        &header(dfort_ide::actions::Mode::Tangent, &unit.name, &loaded),
        &dfort_ide::origins::renderer(snap, dir.as_deref()),
    );
    match text {
        Ok(text) => write_output(
            dir.as_deref(),
            &loaded,
            dfort_ide::actions::Mode::Tangent,
            text,
            None,
        ),
        Err(refusals) => report_refusals(snap, &unit.name, "tangent", &refusals),
    }
}
