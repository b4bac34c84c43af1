//! `dfort`: the command-line tool and (`dfort lsp`) the language server.
//! The commands live in the library (lib.rs); this file parses the command
//! line and dispatches. Benchmarks and test drivers are not here: they
//! are `cargo xtask` commands (server/xtask).

use clap::{Parser, Subcommand};
use dfort::session::{Ask, Session};
use dfort::{adjoint, analyze, check, import, preprocess, rules, tangent, verify, FormArgs};
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
    /// Write the preprocessor flags and the file list of a build (a
    /// genmake2 `Makefile`, `compile_commands.json` or `fpm.toml`) into
    /// `dfort.toml`, which the commands and the editor read.
    Import(import::ImportArgs),
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

/// mimalloc instead of the C library's allocator: parsing, lowering and
/// the analyses allocate from every thread at once, and glibc's arenas
/// spent a quarter of a large workspace's indexing waiting on their locks.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The parser's own allocations (its stacks and trees) from mimalloc too.
/// (mimalloc is built without transparent huge pages, the sys crate's
/// `no_thp`: with them a 20,000-line file's server was resident at
/// 118 MB instead of 80.)
fn use_mimalloc_in_the_parser() {
    use libmimalloc_sys::{mi_calloc, mi_free, mi_malloc, mi_realloc};
    // SAFETY: called first in `main`, before any parser, tree or query
    // exists (nothing tree-sitter allocated is freed by the other
    // allocator), and the four functions are one allocator's.
    unsafe {
        dfort_syntax::tree_sitter::set_allocator(
            Some(mi_malloc),
            Some(mi_calloc),
            Some(mi_realloc),
            Some(mi_free),
        );
    }
}

fn main() -> ExitCode {
    use_mimalloc_in_the_parser();
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
        Command::Import(args) => import::run(args),
        Command::Lsp { stdio: _ } => {
            one_malloc_arena();
            dfort::lsp::run_stdio(dfort::lsp::Options::default())
        }
    }
}

/// `dfort ir`: the IR of the first file's units as the host lowers them
/// (the front end every command reads files with), with the lines of the
/// file itself (or of the header a preprocessed line came from).
fn ir(file: PathBuf, unit: Option<String>, with: Vec<PathBuf>, form: &FormArgs) -> ExitCode {
    let mut paths = vec![file.clone()];
    paths.extend(with);
    let session = Session::open(&paths, form, &Ask::default());
    let usable = session.usable();
    if !session.errors.is_empty() {
        return ExitCode::from(1);
    }
    let snap = &session.snap;
    let line = |span: dfort_ir::Span| snap.line_of(span);
    let units: Vec<&dfort_ir::Unit> = snap.units_of(&file).collect();
    let chosen: Vec<&dfort_ir::Unit> = match &unit {
        Some(name) => {
            let name = name.to_ascii_lowercase();
            let found: Vec<_> = units.into_iter().filter(|u| u.name == name).collect();
            if found.is_empty() {
                eprintln!("error: no unit named `{name}` in {}", file.display());
                return ExitCode::from(1);
            }
            found
        }
        None => units,
    };
    let out: Vec<String> = chosen
        .iter()
        .map(|u| dfort_ir::dump::unit(&snap.program, u, &line))
        .collect();
    match unit {
        Some(_) => print!("{}", out.join("\n")),
        None => out.iter().for_each(|u| println!("{u}")),
    }
    if usable {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
