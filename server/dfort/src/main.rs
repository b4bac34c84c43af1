//! `dfort`: the command-line tool and (`dfort lsp`) the language server.

mod adjoint;
mod analyze;
mod bench;
mod bench_adjoint;
mod bench_inversion;
mod bench_lsp;
mod consistency;
mod fuzz;
mod rules;
mod tangent;
mod verify;

use clap::{Args, Parser, Subcommand};
use dfort_ide::{LoadOptions, Workspace};
use dfort_syntax::FixedOptions;
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

#[derive(Args, Clone, Copy)]
pub(crate) struct FormArgs {
    /// Treat every file as fixed form (default: by extension, .f .for .f77 .F are fixed).
    #[arg(long, conflicts_with = "free")]
    fixed: bool,
    /// Treat every file as free form.
    #[arg(long)]
    free: bool,
    /// Fixed-form line length: 72 (default, like compilers), 132, or none.
    #[arg(long, default_value = "72", value_parser = parse_line_length)]
    fixed_line_length: LineLength,
}

#[derive(Clone, Copy)]
struct LineLength(Option<usize>);

fn parse_line_length(s: &str) -> Result<LineLength, String> {
    if s.eq_ignore_ascii_case("none") {
        return Ok(LineLength(None));
    }
    match s.parse::<usize>() {
        Ok(n) if n >= 7 => Ok(LineLength(Some(n))),
        _ => Err(format!(
            "expected a column number of at least 7, or `none`; got `{s}`"
        )),
    }
}

impl FormArgs {
    pub(crate) fn options(&self) -> LoadOptions {
        LoadOptions {
            fixed: FixedOptions {
                line_length: self.fixed_line_length.0,
            },
            force_fixed: self.fixed,
            force_free: self.free,
        }
    }
}

#[derive(Subcommand)]
enum Command {
    /// Parse and lower files; print diagnostics as `file:line:col: severity: message`.
    /// Exits 1 when there are errors.
    Check {
        #[arg(required = true)]
        files: Vec<PathBuf>,
        #[command(flatten)]
        form: FormArgs,
    },
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
    /// Measure parse+lower throughput on a generated workspace of mixed
    /// free- and fixed-form files.
    Bench(bench::BenchArgs),
    /// Run the language server on stdin/stdout (`--stdio` is accepted, as
    /// VS Code's client appends it).
    Lsp {
        #[arg(long)]
        stdio: bool,
    },
    /// Replay typing into a generated 20,000-line file against `dfort lsp`:
    /// didChange-to-diagnostics-and-hints times (p50, p95) and memory.
    BenchLsp(bench_lsp::BenchLspArgs),
    /// Time every kernel of a manifest (tests/kernels.toml): adjoint against
    /// primal run time, with TBR and without, and the bytes each tape pushes.
    BenchAdjoint(bench_adjoint::BenchAdjointArgs),
    /// Paper 003's Table 1: Figure 10's adjoint with loop indices recovered
    /// by inversion against stored: integer tape, real tape and run times.
    BenchInversion(bench_inversion::BenchInversionArgs),
    /// Differential fuzzer: random Fortran kernels differentiated in every
    /// mode, compiled and checked numerically; mismatches are shrunk and
    /// written out. Ends with `N programs: P passed, R refused, M mismatches`.
    Fuzz(fuzz::FuzzArgs),
    /// Check that `analyze --format json`, the language server's hints and
    /// the generated adjoint agree on one root (active variables, pushes,
    /// reversal, address recovery); exits 1 on any disagreement.
    Consistency(consistency::ConsistencyArgs),
}

/// The server lives long, and its requests and analyses run on several
/// threads (tokio's, rayon's): have glibc malloc keep one arena, so memory
/// one thread frees is reused by the next instead of staying resident in
/// that thread's arena. Measured with `dfort bench-lsp` (20,000-line
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
        Command::Check { files, form } => check(&files, form.options()),
        Command::Ir {
            file,
            unit,
            with,
            form,
        } => ir(file, unit, with, form.options()),
        Command::Rules(args) => rules::run(args),
        Command::Bench(args) => bench::run(args),
        Command::BenchAdjoint(args) => bench_adjoint::run(args),
        Command::BenchInversion(args) => bench_inversion::run(args),
        Command::BenchLsp(args) => bench_lsp::run(args),
        Command::Analyze(args) => analyze::run(args),
        Command::Tangent(args) => tangent::run(args),
        Command::Adjoint(args) => adjoint::run(args),
        Command::Verify(args) => verify::run(args),
        Command::Fuzz(args) => fuzz::run(args),
        Command::Consistency(args) => consistency::run(args),
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

fn check(files: &[PathBuf], opts: LoadOptions) -> ExitCode {
    let (ws, errors) = Workspace::load(files, opts);
    report_load_errors(&errors);
    print!("{}", ws.render_diagnostics());
    let n_err = ws.error_count() + errors.len();
    let n_warn = ws
        .diagnostics
        .iter()
        .filter(|d| d.severity == dfort_syntax::Severity::Warning)
        .count();
    eprintln!(
        "{} file(s), {} unit(s): {} error(s), {} warning(s)",
        ws.files.len(),
        ws.program.units.len(),
        n_err,
        n_warn
    );
    if n_err > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

fn ir(file: PathBuf, unit: Option<String>, with: Vec<PathBuf>, opts: LoadOptions) -> ExitCode {
    let mut paths = vec![file];
    paths.extend(with);
    let (ws, errors) = Workspace::load(&paths, opts);
    if !errors.is_empty() {
        report_load_errors(&errors);
        return ExitCode::from(1);
    }
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
