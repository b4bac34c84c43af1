//! `dfort`: the command-line tool and (`dfort lsp`) the language server.
//! The commands live in the library (lib.rs); this file parses the command
//! line and dispatches. Benchmarks and test drivers are not here: they
//! are `cargo xtask` commands (server/xtask).

use clap::{Parser, Subcommand};
use dfort::{adjoint, analyze, check, preprocess, rules, tangent, verify, FormArgs};
use dfort_ide::Workspace;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "dfort",
    version,
    about = "Differentiable Fortran: analyses and derivatives of Fortran code"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// The editor's diagnostics of files (front end; with `--root`, also
    /// differentiability and the generators' refusals), as
    /// `file:line:col: severity: message [code]`. Exits 1 when there are errors.
    Check(check::CheckArgs),
    /// List the diagnostic rules (code, severity, summary), or explain one.
    Rules(rules::RulesArgs),
    /// Print the IR (symbols, statements, CFG, calls) of a file's units.
    Ir {
        file: PathBuf,
        /// Only this unit.
        #[arg(long)]
        unit: Option<String>,
        /// Other files to resolve modules and calls against.
        #[arg(long = "with")]
        with: Vec<PathBuf>,
        #[command(flatten)]
        form: FormArgs,
    },
    /// Activity, TBR, address recovery and control-flow reversal per unit
    /// (interprocedural), as text or JSON.
    Analyze(analyze::AnalyzeArgs),
    /// Write the adjoint (reverse mode) `R_b` of a subroutine into `<stem>_b.f90`,
    /// with the runtime module `dfort_stack.f90`.
    Adjoint(adjoint::AdjointArgs),
    /// Write the tangent (forward mode) `R_d` of a subroutine into `<stem>_d.f90`.
    Tangent(tangent::TangentArgs),
    /// Generate tangent and adjoint, compile them with gfortran and check them
    /// numerically (finite differences, dot-product test).
    Verify(verify::VerifyArgs),
    /// Run a file through dfort's C preprocessor (`#include`, `#define`,
    /// `#if`…, with `-I` and `-D`) and print the result with `# LINE
    /// "FILE"` markers, as `gfortran -cpp -E` does.
    Preprocess(preprocess::PreprocessArgs),
    /// Run the language server on stdin/stdout (`--stdio` is accepted, as
    /// VS Code's client appends it).
    Lsp {
        #[arg(long)]
        stdio: bool,
    },
}

/// The server lives long, and its requests and analyses run on several
/// threads (tokio's, rayon's): have glibc malloc keep one arena, so memory
/// one thread frees is reused by the next instead of staying resident in
/// that thread's arena. Measured with `cargo xtask bench-lsp` (20,000-line
/// module): resident 78 MB with glibc's default arenas, 64 MB with one
/// (mimalloc, used before: 89 MB); edit times unchanged. The batch commands
/// keep glibc's defaults (parse throughput within 5% of mimalloc's).
fn one_malloc_arena() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets an allocator parameter; called before the
    // server starts its threads.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Check(args) => check::run(args),
        Command::Ir {
            file,
            unit,
            with,
            form,
        } => ir(file, unit, with, &form),
        Command::Rules(args) => rules::run(args),
        Command::Analyze(args) => analyze::run(args),
        Command::Tangent(args) => tangent::run(args),
        Command::Adjoint(args) => adjoint::run(args),
        Command::Verify(args) => verify::run(args),
        Command::Preprocess(args) => preprocess::run(args),
        Command::Lsp { stdio: _ } => {
            one_malloc_arena();
            dfort::lsp::run_stdio(dfort::lsp::Options::default())
        }
    }
}

fn report_load_errors(errors: &[dfort_ide::LoadError]) {
    for e in errors {
        eprintln!("error: {e}");
    }
}

/// `dfort ir`: the files as the one-shot loader lowers them; a file the C
/// preprocessor applies to is lowered from its output (whose line numbers
/// the dump gives, said on stderr).
fn ir(file: PathBuf, unit: Option<String>, with: Vec<PathBuf>, form: &FormArgs) -> ExitCode {
    let mut paths = vec![file];
    paths.extend(with);
    let opts = form.options();
    let mut cpp = form.cpp_config();
    if let Ok(Some((path, c))) = dfort::config::load(&paths) {
        c.preprocessor.apply(&path, &mut cpp);
    }
    let mut sources = Vec::new();
    let mut errors = Vec::new();
    for p in &paths {
        let text = match std::fs::read_to_string(p) {
            Ok(t) => t,
            Err(error) => {
                errors.push(dfort_ide::LoadError::Io {
                    path: p.clone(),
                    error,
                });
                continue;
            }
        };
        use dfort_syntax::cpp::fortran_include::{expand_includes, has_include_line, unprocessed};
        let fixed = matches!(form.form_of(p), dfort_syntax::SourceForm::Fixed(_));
        let options = cpp.options(fixed);
        let read = preprocess::read_file;
        let out = if cpp.applies_to(p) {
            Some(dfort_syntax::cpp::preprocess(p, &text, &options, &read))
        } else if has_include_line(&text, fixed) {
            Some(unprocessed(p, &text))
        } else {
            None
        };
        let text = match out {
            Some(out) => {
                let out = expand_includes(out, &options, &read);
                eprintln!(
                    "note: {} was run through the C preprocessor or has INCLUDE lines; the dump's line numbers are those of the expanded text",
                    p.display()
                );
                if preprocess::report(&out) > 0 {
                    return ExitCode::from(1);
                }
                out.text
            }
            None => text,
        };
        sources.push((p.clone(), text));
    }
    if !errors.is_empty() {
        report_load_errors(&errors);
        return ExitCode::from(1);
    }
    let ws = Workspace::from_sources(sources, opts);
    eprint!("{}", ws.render_diagnostics());
    let Some(f) = ws.files.first() else {
        return ExitCode::from(1);
    };
    let out = match unit {
        Some(name) => {
            let name = name.to_ascii_lowercase();
            let found: Vec<_> = ws
                .program
                .units
                .iter()
                .filter(|u| u.span.file == f.id && u.name == name)
                .collect();
            if found.is_empty() {
                eprintln!("error: no unit named `{name}` in {}", f.path.display());
                return ExitCode::from(1);
            }
            found
                .iter()
                .map(|u| dfort_ir::dump::unit(&ws.program, u, &f.lines))
                .collect::<Vec<_>>()
                .join("\n")
        }
        None => dfort_ir::dump::file(&ws.program, f.id, &f.lines),
    };
    print!("{out}");
    if ws.error_count() > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
