//! `dfort adjoint`: writes `<stem>_b.f90` holding `R_b` and the runtime
//! module `dfort_stack.f90`, or explains with diagnostics why it cannot
//! (and writes nothing).

use crate::tangent::{load_root, report_refusals, write_output, DiffArgs, Loaded};
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
}

/// The recording the `--no-tbr` / `--no-inversion` flags ask for.
pub fn recording(no_tbr: bool, no_inversion: bool) -> dfort_codegen::adjoint::Recording {
    dfort_codegen::adjoint::Recording::from_flags(no_tbr, no_inversion)
}

pub fn run(args: AdjointArgs) -> ExitCode {
    let Some(Loaded {
        ws,
        root: unit_id,
        roles,
        ..
    }) = load_root(&args.diff)
    else {
        return ExitCode::from(1);
    };
    let unit = ws.program.unit(unit_id);
    let header = crate::tangent::header("Adjoint", &unit.name);
    match dfort_codegen::adjoint::adjoint(
        &ws.program,
        unit_id,
        &roles.independents,
        &roles.dependents,
        recording(args.no_tbr, args.no_inversion),
        &header,
    ) {
        Ok(text) => {
            let runtime = (
                "dfort_stack.f90".to_string(),
                dfort_codegen::adjoint::RUNTIME.to_string(),
            );
            write_output(&args.diff, &ws, unit_id, "_b", text, Some(runtime))
        }
        Err(refusals) => report_refusals(&ws, &unit.name, "adjoint", &refusals),
    }
}
