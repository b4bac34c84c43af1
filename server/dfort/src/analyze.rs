//! `dfort analyze`: activity and TBR per unit, as text for people or as
//! JSON (format documented in README.md).

use clap::Args;
use dfort_analysis::bitset::BitSet;
use dfort_analysis::roles::{roles, Roles};
use dfort_analysis::{activity, tbr};
use dfort_ide::Workspace;
use dfort_ir::{Program, Unit};
use serde_json::json;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args)]
pub struct AnalyzeArgs {
    #[arg(required = true)]
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
    /// `text` (default) or `json`.
    #[arg(long, default_value = "text", value_parser = ["text", "json"])]
    format: String,
    /// Record every overwritten active value (no TBR), for comparison.
    #[arg(long)]
    no_tbr: bool,
    #[command(flatten)]
    form: crate::FormArgs,
}

struct UnitResult<'a> {
    unit: &'a Unit,
    roles: Roles,
    active: BitSet,
    records: Vec<tbr::Record>,
}

fn names(unit: &Unit, set: &BitSet) -> Vec<String> {
    let mut v: Vec<String> = set
        .iter()
        .filter_map(|i| unit.symbols.get(i).map(|s| s.name.clone()))
        .collect();
    v.sort();
    v
}

fn analyze_unit<'a>(program: &'a Program, unit: &'a Unit, args: &AnalyzeArgs) -> UnitResult<'a> {
    let explicit = (args.root.as_deref().map(str::to_ascii_lowercase).as_deref()
        == Some(unit.name.as_str())
        && (!args.independent.is_empty() || !args.dependent.is_empty()))
    .then_some((args.independent.as_slice(), args.dependent.as_slice()));
    let roles = roles(unit, explicit);
    let act = activity::analyze(program, unit, &roles.independents, &roles.dependents);
    let t = tbr::analyze(program, unit, &act, args.no_tbr);
    UnitResult {
        unit,
        active: activity::active_anywhere(unit, &act),
        records: t.records,
        roles,
    }
}

pub fn run(args: AnalyzeArgs) -> ExitCode {
    let (ws, errors) = Workspace::load(&args.files, args.form.options());
    for e in &errors {
        eprintln!("error: {e}");
    }
    eprint!("{}", ws.render_diagnostics());
    if !errors.is_empty() || ws.error_count() > 0 {
        eprintln!("error: not analysing code that has errors");
        return ExitCode::from(1);
    }
    let root = args.root.as_deref().map(str::to_ascii_lowercase);
    let units: Vec<&Unit> = ws
        .program
        .units
        .iter()
        .filter(|u| u.is_procedure())
        .filter(|u| root.as_deref().is_none_or(|r| u.name == r))
        .collect();
    if let (Some(r), true) = (&root, units.is_empty()) {
        eprintln!("error: no subroutine or function named `{r}`");
        return ExitCode::from(1);
    }
    let results: Vec<UnitResult> = units
        .iter()
        .map(|u| analyze_unit(&ws.program, u, &args))
        .collect();
    for r in &results {
        if !r.roles.unknown.is_empty() {
            eprintln!(
                "error: {} has no real variable named {}",
                r.unit.name,
                r.roles.unknown.join(", ")
            );
            return ExitCode::from(1);
        }
    }
    let line_of = |unit: &Unit, stmt: dfort_ir::StmtId| {
        let st = unit.stmt(stmt);
        ws.file(st.span.file)
            .map(|f| f.lines.line_col(st.span.range.start).line + 1)
            .unwrap_or(0)
    };
    if args.format == "json" {
        let units: Vec<serde_json::Value> = results
            .iter()
            .map(|r| {
                json!({
                    "name": r.unit.name,
                    "independents": names(r.unit, &r.roles.independents),
                    "dependents": names(r.unit, &r.roles.dependents),
                    "roles_from": r.roles.source.as_str(),
                    "active": names(r.unit, &r.active),
                    "tbr": r.records.iter().map(|rec| json!({
                        "line": line_of(r.unit, rec.stmt),
                        "variable": r.unit.symbol(rec.variable).name,
                    })).collect::<Vec<_>>(),
                })
            })
            .collect();
        let doc =
            json!({ "units": units, "tbr_mode": if args.no_tbr { "store-all" } else { "tbr" } });
        println!("{}", serde_json::to_string_pretty(&doc).unwrap_or_default());
    } else {
        for r in &results {
            println!("{} {}", r.unit.kind.as_str(), r.unit.name);
            println!(
                "  independents: {} ; dependents: {}  (from {})",
                names(r.unit, &r.roles.independents).join(", "),
                names(r.unit, &r.roles.dependents).join(", "),
                r.roles.source.as_str()
            );
            println!("  active: {}", names(r.unit, &r.active).join(", "));
            if r.records.is_empty() {
                println!("  records: none");
            }
            for rec in &r.records {
                println!(
                    "  line {}: record {} before it is overwritten",
                    line_of(r.unit, rec.stmt),
                    r.unit.symbol(rec.variable).name
                );
            }
        }
    }
    ExitCode::SUCCESS
}
