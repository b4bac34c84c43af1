//! `dfort adjoint`: writes `<stem>_b.f90` holding `R_b` and the runtime
//! module `dfort_stack.f90`, or explains with diagnostics why it cannot
//! (and writes nothing).

use crate::tangent::{header, load_root, output_dir, report_refusals, write_output, DiffArgs};
use dfort_analysis::decisions::Recording;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct AdjointArgs {
    #[command(flatten)]
    diff: DiffArgs,
    /// Record every overwritten active value instead of TBR's choice.
    #[arg(long)]
    no_tbr: bool,
    /// Store every overwritten address value instead of recovering loops'
    /// indices by inversion and recomputation (paper 003), for comparison.
    #[arg(long)]
    no_inversion: bool,
    /// Preaccumulate basic blocks' local Jacobians (papers 002 and 004):
    /// `cost` (the bare flag) where a Jacobian has fewer entries than the
    /// statements' adjoints would record, `all` wherever it can, `off`.
    /// Default: `dfort.toml`'s `[adjoint] preaccumulate`, else off.
    #[arg(long, value_name = "WHEN", num_args = 0..=1, default_missing_value = "cost", require_equals = true)]
    preaccumulate: Option<crate::config::Preaccumulate>,
}

/// The recording the `--no-tbr` / `--no-inversion` flags ask for.
pub fn recording(no_tbr: bool, no_inversion: bool) -> Recording {
    Recording::from_flags(no_tbr, no_inversion)
}

pub fn run(args: AdjointArgs) -> ExitCode {
    let Some(loaded) = load_root(
        &args.diff,
        recording(args.no_tbr, args.no_inversion),
        args.preaccumulate.map(|p| p.mode()),
    ) else {
        return ExitCode::from(1);
    };
    let snap = &loaded.session.snap;
    let unit = snap.program.unit(loaded.root);
    let header = header(dfort_ide::actions::Mode::Adjoint, &unit.name, &loaded);
    let dir = output_dir(&args.diff, &loaded);
    let origin = dfort_ide::origins::renderer(snap, dir.as_deref());
    match dfort_codegen::adjoint::adjoint_located(snap.analysis(), loaded.root, &header, &origin) {
        Ok((text, _)) => {
            let runtime = (
                "dfort_stack.f90".to_string(),
                dfort_codegen::adjoint::RUNTIME.to_string(),
            );
            write_output(
                dir.as_deref(),
                &loaded,
                dfort_ide::actions::Mode::Adjoint,
                text,
                Some(runtime),
            )
        }
        Err(refusals) => report_refusals(snap, &unit.name, "adjoint", &refusals),
    }
}
