//! `cargo xtask <command>` (the alias lives in .cargo/config.toml): the
//! repository's developer commands, kept out of the product binary
//! `dfort`. `test` installs what the tests need on a fresh machine and
//! runs them; the benchmarks, the differential fuzzer and the consistency
//! check drive the `dfort` library (and, for `bench-lsp`, the `dfort`
//! binary) the way the product's commands do.

mod bench;
mod bench_adjoint;
mod bench_cpp;
mod bench_inversion;
mod bench_lsp;
mod bench_workspace;
mod check_lapack;
mod code_size;
mod consistency;
mod fuzz;
mod mitgcm;
mod product;
mod run_tests;
mod supplied;
mod verify_lapack;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "cargo xtask",
    bin_name = "cargo xtask",
    about = "Developer commands of the dfort repository: tests, benchmarks, fuzzer"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Install what the tests need when it is missing (gfortran, Neovim,
    /// Node.js and npm, the VS Code extension's npm dependencies), then run
    /// `cargo test --workspace --locked` with the given arguments.
    Test(run_tests::TestArgs),
    /// Measure the front end (parse, and the host's chunked parse, lower
    /// and link) and the host's load with the analyses on a generated
    /// workspace of mixed free- and fixed-form files.
    Bench(bench::BenchArgs),
    /// Replay typing into a generated 20,000-line file against `dfort lsp`:
    /// didChange-to-diagnostics-and-hints times (p50, p95) and memory.
    BenchLsp(bench_lsp::BenchLspArgs),
    /// What the C preprocessor costs: a generated CPP-heavy workspace
    /// (.F files with ten includes each) loaded with the preprocessor and
    /// already preprocessed, and edits in one of its files.
    BenchCpp(bench_cpp::BenchCppArgs),
    /// Time every kernel of a manifest (tests/kernels.toml): adjoint against
    /// primal run time, with TBR and without, and the bytes each tape pushes.
    BenchAdjoint(bench_adjoint::BenchAdjointArgs),
    /// Paper 003's Table 1: Figure 10's adjoint with loop indices recovered
    /// by inversion against stored: integer tape, real tape and run times.
    BenchInversion(bench_inversion::BenchInversionArgs),
    /// How large every kernel's adjoint and tangent are (characters
    /// without blanks and comments) and, with --warnings, what `gfortran
    /// -Wall` says about them; --baseline compares with an earlier run.
    CodeSize(code_size::CodeSizeArgs),
    /// Differential fuzzer: random Fortran kernels differentiated in every
    /// mode, compiled and checked numerically; mismatches are shrunk and
    /// written out. Ends with `N programs: P passed, R refused, M mismatches`.
    Fuzz(fuzz::FuzzArgs),
    /// Check that `dfort analyze --format json`, the language server's
    /// hints and the generated adjoint agree on one root (active variables,
    /// pushes, reversal, address recovery); exits 1 on any disagreement.
    Consistency(consistency::ConsistencyArgs),
    /// `dfort check` over Reference LAPACK 3.12.1 (SRC and BLAS/SRC,
    /// downloaded once from the Python package index): files with errors
    /// and time. Exits 1 when any file has an error.
    CheckLapack(check_lapack::CheckLapackArgs),
    /// `dfort verify --sanitize` of Reference BLAS and LAPACK routines as
    /// shipped (tests/reference-lapack.toml), in the three recording modes,
    /// on the tree check-lapack downloads. Exits 1 when any fails.
    VerifyLapack(verify_lapack::VerifyLapackArgs),
    /// dfort's adjoint of a MITgcm adjoint experiment's `the_main_loop`,
    /// built from a local MITgcm checkout, run, and compared with the
    /// gradients TAF and Tapenade printed for it (grdchk's positions).
    Mitgcm(mitgcm::MitgcmArgs),
}

impl Command {
    /// Benchmarks measure, and the fuzzer runs thousands of programs
    /// through, optimised code.
    fn wants_optimised_build(&self) -> bool {
        matches!(
            self,
            Command::Bench(_)
                | Command::BenchLsp(_)
                | Command::BenchCpp(_)
                | Command::BenchAdjoint(_)
                | Command::BenchInversion(_)
                | Command::CodeSize(_)
                | Command::Fuzz(_)
                | Command::CheckLapack(_)
                | Command::VerifyLapack(_)
                | Command::Mitgcm(_)
        )
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if cli.command.wants_optimised_build() {
        if let Some(code) = product::rerun_optimised() {
            return code;
        }
    }
    match cli.command {
        Command::Test(args) => run_tests::run(args),
        Command::Bench(args) => bench::run(args),
        Command::BenchLsp(args) => bench_lsp::run(args),
        Command::BenchCpp(args) => bench_cpp::run(args),
        Command::BenchAdjoint(args) => bench_adjoint::run(args),
        Command::BenchInversion(args) => bench_inversion::run(args),
        Command::CodeSize(args) => code_size::run(args),
        Command::Fuzz(args) => fuzz::run(args),
        Command::Consistency(args) => consistency::run(args),
        Command::CheckLapack(args) => check_lapack::run(args),
        Command::VerifyLapack(args) => verify_lapack::run(args),
        Command::Mitgcm(args) => mitgcm::run(args),
    }
}
