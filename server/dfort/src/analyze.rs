//! `dfort analyze`: activity and TBR per unit, as text for people or as
//! JSON (format documented in README.md).

use clap::Args;
use dfort_analysis::activity;
use dfort_analysis::address_report::LoopReport;
use dfort_analysis::bitset::BitSet;
use dfort_analysis::decisions::Recording;
use dfort_analysis::facts::{ProgramFacts, Request};
use dfort_analysis::roots::RootSpec;
use dfort_ide::{render, Workspace};
use dfort_ir::Unit;
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
    /// Store every overwritten address value instead of recovering loops'
    /// indices by inversion and recomputation (paper 003).
    #[arg(long)]
    no_inversion: bool,
    /// Explain why this variable is (or is not) active, in each unit that has it.
    #[arg(long, value_name = "VAR")]
    explain: Option<String>,
    #[command(flatten)]
    form: crate::FormArgs,
}

struct UnitResult<'a> {
    unit: &'a Unit,
    /// Varied at entry and useful at exit (the roles of a root, the union
    /// of calling contexts otherwise).
    independents: BitSet,
    dependents: BitSet,
    source: &'static str,
    active: BitSet,
    /// What the forward sweep pushes for TBR (the records of the
    /// statements it keeps).
    records: Vec<dfort_analysis::decisions::Push>,
    /// Statements the joint-mode forward sweep can drop.
    dead: Vec<dfort_ir::StmtId>,
    /// How each loop's address indices are recovered (paper 003).
    loops: Vec<LoopReport>,
    /// How many statements the unit has in the source (the structured
    /// form of EXIT and CYCLE appends some).
    source_len: usize,
    activity: activity::Activity,
    /// How the adjoint reverses each construct (paper 001).
    reversal: dfort_analysis::reversal::UnitReversal,
}

impl UnitResult<'_> {
    /// The reversal of each construct (those the structuring of EXIT and
    /// CYCLE adds at the place of the loop they come from), in source
    /// order.
    fn constructs(&self) -> Vec<(dfort_ir::StmtId, &dfort_analysis::reversal::Reversal)> {
        let mut v: Vec<_> = self
            .reversal
            .constructs
            .iter()
            .map(|(s, r)| (*s, r))
            .collect();
        v.sort_by_key(|(s, _)| (self.unit.stmt(*s).span.range.start, s.0));
        v
    }
}

/// Names of the unit's own symbols in `set` (globals known only through
/// callees have no name here).
fn names(unit: &Unit, set: &BitSet) -> Vec<String> {
    let mut v: Vec<String> = set
        .iter()
        .filter_map(|i| unit.symbols.get(i).map(|s| s.name.clone()))
        .collect();
    v.sort();
    v
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
    let config = match dfort::config::load(&args.files) {
        Ok(c) => c.map(|(_, c)| c).unwrap_or_default(),
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(1);
        }
    };
    // The roots: --root alone (with its lists), else those of dfort.toml
    // and every other procedure nobody calls, as the editor analyses them.
    let (specs, others): (Vec<RootSpec>, bool) = match &args.root {
        Some(r) => (
            vec![RootSpec {
                name: r.to_ascii_lowercase(),
                independent: args.independent.clone(),
                dependent: args.dependent.clone(),
            }],
            false,
        ),
        None => (
            config
                .root
                .iter()
                .map(dfort::config::RootConfig::spec)
                .collect(),
            true,
        ),
    };
    let recording = Recording::from_flags(args.no_tbr, args.no_inversion);
    let facts = match facts_for(&ws, &specs, others, recording) {
        Ok(f) => f,
        Err(problems) => {
            for p in &problems {
                eprintln!("error: {p}");
            }
            return ExitCode::from(1);
        }
    };
    let results = analyse(&ws, &facts);
    let span_line = |span: dfort_ir::Span| span_line(&ws, span);
    let line_of = |unit: &Unit, stmt: dfort_ir::StmtId| span_line(unit.stmt(stmt).span);
    if args.format == "json" {
        let doc = json_report(&ws, &results, recording);
        println!("{}", serde_json::to_string_pretty(&doc).unwrap_or_default());
    } else {
        print_text(&results, &args, &line_of, &span_line);
    }
    ExitCode::SUCCESS
}

/// The line (from 1) of a span, 0 when its file is unknown.
fn span_line(ws: &Workspace, span: dfort_ir::Span) -> u32 {
    ws.file(span.file)
        .map(|f| f.lines.line_col(span.range.start).line + 1)
        .unwrap_or(0)
}

/// `dfort analyze --format json` of `ws` from the roots `specs` (and,
/// with `others`, every procedure nobody calls), or the problems of the
/// roots asked for.
pub fn json_for(
    ws: &Workspace,
    specs: &[RootSpec],
    others: bool,
    recording: Recording,
) -> Result<serde_json::Value, Vec<String>> {
    let facts = facts_for(ws, specs, others, recording)?;
    Ok(json_report(ws, &analyse(ws, &facts), recording))
}

/// The analyses' facts for the request, or the problems of the roots
/// asked for.
fn facts_for(
    ws: &Workspace,
    specs: &[RootSpec],
    others: bool,
    recording: Recording,
) -> Result<ProgramFacts, Vec<String>> {
    let request = Request {
        roots: specs.to_vec(),
        others,
        recording,
    };
    let facts = dfort_analysis::facts::analyse(&ws.program, &request, None);
    if facts.problems.is_empty() {
        Ok(facts)
    } else {
        Err(facts.problems.iter().map(|p| p.message()).collect())
    }
}

/// Every unit the analyses from the roots reach, with its facts.
fn analyse<'a>(ws: &Workspace, facts: &'a ProgramFacts) -> Vec<UnitResult<'a>> {
    facts
        .program
        .all_units()
        .filter_map(|u| {
            let act = facts.activity_of(u.id)?;
            let (ind, dep) = facts.context(u.id)?.clone();
            let source = facts
                .roles_of(u.id)
                .map_or("calling contexts", |r| r.source.as_str());
            let decided = facts.decisions_of(u.id);
            Some(UnitResult {
                activity: act.clone(),
                unit: u,
                independents: ind,
                dependents: dep,
                source,
                active: activity::active_anywhere(u, act),
                records: decided.map(|d| d.pushed.clone()).unwrap_or_default(),
                source_len: ws.program.unit(u.id).stmts.len(),
                loops: facts.reports_of(u.id).to_vec(),
                reversal: decided.map(|d| d.reversal.clone()).unwrap_or_default(),
                dead: decided.map(|d| d.dead.clone()).unwrap_or_default(),
            })
        })
        .collect()
}

/// The JSON document of `results` (format in README.md).
fn json_report(ws: &Workspace, results: &[UnitResult], recording: Recording) -> serde_json::Value {
    let span_line = |span: dfort_ir::Span| span_line(ws, span);
    let line_of = |unit: &Unit, stmt: dfort_ir::StmtId| span_line(unit.stmt(stmt).span);
    {
        let units: Vec<serde_json::Value> = results
            .iter()
            .map(|r| {
                json!({
                    "name": r.unit.name,
                    "independents": names(r.unit, &r.independents),
                    "dependents": names(r.unit, &r.dependents),
                    "roles_from": r.source,
                    "active": names(r.unit, &r.active),
                    "tbr": r.records.iter().map(|rec| json!({
                        "line": line_of(r.unit, rec.stmt),
                        "variable": r.unit.symbol(rec.variable).name,
                    })).collect::<Vec<_>>(),
                    "forward_sweep_drops": r.dead.iter().map(|s| line_of(r.unit, *s)).collect::<Vec<_>>(),
                    "reversed_by_blocks": r.reversal.by_blocks,
                    "reversal": r.constructs().iter().map(|(s, how)| json!({
                        "line": line_of(r.unit, *s),
                        "how": how.kind(),
                    })).collect::<Vec<_>>(),
                    "address_recovery": r.loops.iter().map(|l| loop_json(r.unit, l, &line_of, &span_line)).collect::<Vec<_>>(),
                })
            })
            .collect();
        json!({ "units": units, "tbr_mode": recording.as_str() })
    }
}

/// The text output of `dfort analyze`.
fn print_text(
    results: &[UnitResult],
    args: &AnalyzeArgs,
    line_of: &dyn Fn(&Unit, dfort_ir::StmtId) -> u32,
    span_line: &dyn Fn(dfort_ir::Span) -> u32,
) {
    {
        for r in results {
            println!("{} {}", r.unit.kind.as_str(), r.unit.name);
            println!(
                "  independents: {} ; dependents: {}  (from {})",
                names(r.unit, &r.independents).join(", "),
                names(r.unit, &r.dependents).join(", "),
                r.source
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
            print_statements(r, line_of);
            for (s, how) in r.constructs() {
                println!("  line {}: reversal {}", line_of(r.unit, s), how.kind());
            }
            for l in &r.loops {
                print_loop(r.unit, l, span_line);
            }
            if let Some(var) = &args.explain {
                explain(r, &var.to_ascii_lowercase(), line_of);
            }
            if !r.dead.is_empty() {
                let lines: Vec<String> = r
                    .dead
                    .iter()
                    .map(|s| line_of(r.unit, *s).to_string())
                    .collect();
                println!(
                    "  the adjoint's forward sweep does not need lines {}",
                    lines.join(", ")
                );
            }
        }
    }
}

/// Each assignment with whether its target is active after it and what
/// the forward sweep records before it.
fn print_statements(r: &UnitResult, line_of: &dyn Fn(&Unit, dfort_ir::StmtId) -> u32) {
    use dfort_ir::dump::expr;
    println!("  statements:");
    for st in &r.unit.stmts[..r.source_len.min(r.unit.stmts.len())] {
        let dfort_ir::StmtKind::Assign { lhs, rhs } = &st.kind else {
            continue;
        };
        let active =
            dfort_analysis::dp::target(lhs).is_some_and(|(t, _)| r.activity.active_after(st.id, t));
        let pushes: Vec<&str> = r
            .records
            .iter()
            .filter(|rec| rec.stmt == st.id)
            .map(|rec| r.unit.symbol(rec.variable).name.as_str())
            .collect();
        println!(
            "    line {:>4}: {} = {}   [{}{}]",
            line_of(r.unit, st.id),
            expr(r.unit, lhs),
            expr(r.unit, rhs),
            if active { "active" } else { "passive" },
            if pushes.is_empty() {
                String::new()
            } else {
                format!(", records {}", pushes.join(", "))
            }
        );
    }
}

/// The why-chain of `--explain VAR`.
fn explain(r: &UnitResult, var: &str, line_of: &dyn Fn(&Unit, dfort_ir::StmtId) -> u32) {
    use dfort_analysis::explain::{useful_chain, varied_chain};
    let Some(v) = r.unit.lookup(var) else {
        return;
    };
    let is_active = r.active.contains(v.0 as usize);
    println!(
        "  {var} is {}active. Why:",
        if is_active { "" } else { "not " }
    );
    let show = |title: &str, steps: Vec<dfort_analysis::explain::Step>| {
        println!("    {title}:");
        for s in steps {
            match s.stmt {
                Some(id) => println!("      line {}: {}", line_of(r.unit, id), s.text),
                None => println!("      {}", s.text),
            }
        }
    };
    let varied = r
        .activity
        .varied_after
        .iter()
        .any(|s| s.contains(v.0 as usize))
        || r.independents.contains(v.0 as usize);
    if varied {
        show(
            "varied",
            varied_chain(r.unit, &r.activity, &r.independents, v),
        );
    } else {
        println!("    not varied: it never depends on an independent");
    }
    let useful = r
        .activity
        .useful_before
        .iter()
        .any(|s| s.contains(v.0 as usize))
        || r.dependents.contains(v.0 as usize);
    if useful {
        show(
            "useful",
            useful_chain(r.unit, &r.activity, &r.dependents, v),
        );
    } else {
        println!("    not useful: no dependent depends on it");
    }
}

/// One loop's address recovery as JSON (format in README.md).
fn loop_json(
    unit: &Unit,
    l: &LoopReport,
    line_of: &dyn Fn(&Unit, dfort_ir::StmtId) -> u32,
    span_line: &dyn Fn(dfort_ir::Span) -> u32,
) -> serde_json::Value {
    let name = |s: &dfort_ir::SymbolId| unit.symbol(*s).name.clone();
    json!({
        "scope": if l.stmt.is_some() { "loop" } else { "unit" },
        "loop_line": l.stmt.map(|s| line_of(unit, s)),
        "stored_per_iteration": l.stored_per_iteration,
        "saved_after_loop": l.saved_after_loop.iter().map(name).collect::<Vec<_>>(),
        "computed_after_loop": l.computed_after_loop.as_ref().map(|cw| json!({
            "variable": name(&cw.var),
            "text": render::computed_after_loop(unit, cw),
        })),
        "saved_before_loop": l.saved_before_loop.iter().map(name).collect::<Vec<_>>(),
        "variables": l.vars.iter().map(|v| json!({
            "variable": name(&v.var),
            "choice": v.choice.as_str(),
            "stored_per_iteration": v.stored_per_iteration,
            "reason": v.reason.as_ref().map(|r| render::reason(unit, r)),
            "reason_line": v.reason.as_ref().map(|r| span_line(r.span())),
            "recoveries": v.recoveries.iter().map(|r| json!({
                "choice": r.choice.as_str(),
                "defined_line": line_of(unit, r.defined_at),
                "inverts_line": r.inverts.map(|s| line_of(unit, s)),
                "text": render::formula(unit, &r.formula),
            })).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
    })
}

/// One loop's address recovery as text.
fn print_loop(unit: &Unit, l: &LoopReport, span_line: &dyn Fn(dfort_ir::Span) -> u32) {
    for line in render::report_lines(unit, l, &render::LinesFrom(span_line)) {
        println!("{line}");
    }
}
