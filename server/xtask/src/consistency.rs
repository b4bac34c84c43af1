//! `cargo xtask consistency`: checks that `dfort analyze --format json`, the
//! language server and the generated adjoint agree on one root — the
//! active variables, the values pushed per line, how each construct is
//! reversed and how each address variable is recovered. The editor's
//! side is read from its inlay hints (what the user sees) and from the
//! recovery reports its hovers and hints are rendered from; the
//! adjoint's from the generator's record of the code it wrote
//! (`dfort_codegen::trace`). The fuzzer runs the same check on every
//! random program.
//!
//! Agreement, per unit the adjoint has a routine for:
//! * active: each variable the editor marks active is active in the
//!   JSON, and each variable active in the JSON has an adjoint;
//! * pushes, reversal, recovery: the same sets of (line, variable),
//!   (line, strategy) and (loop line, variable, choice) in all three
//!   (the editor is compared in the default recording mode, the only one
//!   it shows, and in units with active variables, the only ones it
//!   shows hints in);
//! * call saves: what the forward sweep pushes around each CALL to a
//!   procedure with source (the call's checkpoint: the caller's records
//!   and the snapshot), as (line, variable), in the editor's hints and the
//!   adjoint (the JSON does not show them yet).

use dfort::tangent::{load_root, DiffArgs};
use dfort_analysis::decisions::Recording;
use dfort_analysis::dep::GlobalKey;
use dfort_analysis::roles::Roles;
use dfort_analysis::roots::RootSpec;
use dfort_codegen::trace::{Reversed, RoutineTrace, SavedValue};
use dfort_ide::hints::{inlay_hints, HintKind, HintKinds, CHECKPOINT_TOOLTIP};
use dfort_ide::host::{Host, HostConfig};
use dfort_ide::Workspace;
use dfort_ir::{Program, Unit};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct ConsistencyArgs {
    #[command(flatten)]
    diff: DiffArgs,
    /// Check the recording of `--no-tbr` (the editor is not compared).
    #[arg(long)]
    no_tbr: bool,
    /// Check the recording of `--no-inversion` (the editor is not compared).
    #[arg(long)]
    no_inversion: bool,
}

/// What one side says of one unit.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UnitFacts {
    pub active: BTreeSet<String>,
    pub pushes: BTreeSet<(u32, String)>,
    /// What the checkpoint of each CALL to a procedure with source pushes.
    pub call_saves: BTreeSet<(u32, String)>,
    pub reversal: BTreeSet<(u32, &'static str)>,
    /// Reversed through basic-block ids.
    pub by_blocks: bool,
    /// (loop line, 0 for a unit with jumps; variable; choice).
    pub recovery: BTreeSet<(u32, String, &'static str)>,
}

/// Per unit name.
pub type Facts = BTreeMap<String, UnitFacts>;

/// How much the three sides agreed on.
#[derive(Clone, Copy, Debug, Default)]
pub struct Agreement {
    pub units: usize,
    pub pushes: usize,
    /// Values saved around CALLs to procedures with source, compared with
    /// the editor's hints.
    pub call_saves: usize,
    pub constructs: usize,
    pub recoveries: usize,
}

pub fn run(args: ConsistencyArgs) -> ExitCode {
    let Some(verdict) = check_args(&args) else {
        return ExitCode::from(1);
    };
    match verdict {
        Ok(Some(a)) => {
            println!(
                "consistent: {} units, {} pushes, {} call saves, {} constructs, {} recoveries",
                a.units, a.pushes, a.call_saves, a.constructs, a.recoveries
            );
            ExitCode::SUCCESS
        }
        Ok(None) => {
            println!("no adjoint to compare (the generator refuses this root)");
            ExitCode::SUCCESS
        }
        Err(d) => {
            for l in &d {
                println!("{l}");
            }
            println!("{} disagreements", d.len());
            ExitCode::from(1)
        }
    }
}

/// Loads the root the arguments name and runs [`check`] on it; `None`
/// when it cannot be loaded (the problems are reported on stderr).
fn check_args(args: &ConsistencyArgs) -> Option<Result<Option<Agreement>, Vec<String>>> {
    let loaded = load_root(&args.diff)?;
    let recording = Recording::from_flags(args.no_tbr, args.no_inversion);
    Some(check(&loaded.ws, loaded.root, &loaded.roles, recording))
}

/// Compares the three sides for the root `root_id` of `ws` with `roles`;
/// `Ok(None)` when the generator refuses the root (nothing to compare),
/// `Err` with one line per disagreement.
pub fn check(
    ws: &Workspace,
    root_id: dfort_ir::UnitId,
    roles: &Roles,
    recording: Recording,
) -> Result<Option<Agreement>, Vec<String>> {
    let prepared = dfort_analysis::prepare::program(&ws.program);
    let program = &*prepared;
    let root = program.unit(root_id);
    let names = |set: &dfort_analysis::bitset::BitSet| -> Vec<String> {
        set.iter()
            .filter_map(|i| root.symbols.get(i).map(|s| s.name.clone()))
            .collect()
    };
    let spec = RootSpec {
        name: root.name.clone(),
        independent: names(&roles.independents),
        dependent: names(&roles.dependents),
    };
    let traces = match dfort_codegen::adjoint::adjoint_traced(
        &ws.program,
        root_id,
        &roles.independents,
        &roles.dependents,
        recording,
        "",
    ) {
        Ok((_, t)) => t,
        Err(_) => return Ok(None),
    };
    let adjoint = trace_facts(ws, program, &traces);
    let json = dfort::analyze::json_for(ws, std::slice::from_ref(&spec), false, recording)
        .map_err(|p| {
            p.iter()
                .map(|m| format!("analyze: {m}"))
                .collect::<Vec<_>>()
        })?;
    let cli = json_facts(&json);
    let mut out = Vec::new();
    let editor = (recording == Recording::Inversion).then(|| editor_facts(ws, &spec));
    let mut agreed = Agreement::default();
    for (unit, adj) in &adjoint {
        let none = UnitFacts::default();
        let c = cli.get(unit).unwrap_or(&none);
        let mut blocks = Vec::new();
        let mut say = |what: &str, side: &str, items: Vec<String>| {
            if !items.is_empty() {
                out.push(format!("{unit}: {what} {side}: {}", items.join("; ")));
            }
        };
        let diff = |a: &BTreeSet<String>, b: &BTreeSet<String>| -> Vec<String> {
            a.difference(b).cloned().collect()
        };
        // Active: the JSON's active variables all have adjoints.
        say(
            "active in the JSON",
            "without an adjoint",
            diff(&c.active, &adj.active),
        );
        let show_p = |s: &BTreeSet<(u32, String)>| -> BTreeSet<String> {
            s.iter()
                .map(|(l, v)| format!("line {l} push {v}"))
                .collect()
        };
        let show_r = |s: &BTreeSet<(u32, &str)>| -> BTreeSet<String> {
            s.iter().map(|(l, h)| format!("line {l} {h}")).collect()
        };
        let show_c = |s: &BTreeSet<(u32, String, &str)>| -> BTreeSet<String> {
            s.iter()
                .map(|(l, v, h)| format!("loop line {l} {v} {h}"))
                .collect()
        };
        let mut sides = vec![("JSON", c)];
        // The editor shows hints in units with active variables only.
        if let Some(e) = editor.as_ref().filter(|_| !c.active.is_empty()) {
            let e = e.get(unit).unwrap_or(&none);
            say(
                "active in the editor",
                "not active in the JSON",
                diff(&e.active, &c.active),
            );
            sides.push(("editor", e));
        }
        for (side, f) in sides {
            if f.by_blocks != adj.by_blocks {
                blocks.push(format!(
                    "{unit}: the {side} says the unit is {}reversed by blocks, the adjoint {}",
                    if f.by_blocks { "" } else { "not " },
                    if adj.by_blocks { "is" } else { "is not" }
                ));
            }
            let mut compared = vec![
                ("pushes", show_p(&f.pushes), show_p(&adj.pushes)),
                ("reversal", show_r(&f.reversal), show_r(&adj.reversal)),
                ("recovery", show_c(&f.recovery), show_c(&adj.recovery)),
            ];
            if side == "editor" {
                compared.push(("call saves", show_p(&f.call_saves), show_p(&adj.call_saves)));
            }
            for (what, a, b) in compared {
                say(
                    &format!("{what}: the {side} shows"),
                    "but the adjoint does not do it",
                    diff(&a, &b),
                );
                say(
                    &format!("{what}: the adjoint does"),
                    &format!("but the {side} does not show it"),
                    diff(&b, &a),
                );
            }
        }
        out.extend(blocks);
        agreed.units += 1;
        agreed.pushes += adj.pushes.len();
        if editor.is_some() && !c.active.is_empty() {
            agreed.call_saves += adj.call_saves.len();
        }
        agreed.constructs += adj.reversal.len();
        agreed.recoveries += adj.recovery.len();
    }
    if out.is_empty() {
        Ok(Some(agreed))
    } else {
        Err(out)
    }
}

/// The line (from 1) of a span.
fn line(ws: &Workspace, span: dfort_ir::Span) -> u32 {
    ws.file(span.file)
        .map(|f| f.lines.line_col(span.range.start).line + 1)
        .unwrap_or(0)
}

/// The adjoint's side, from the generator's record.
fn trace_facts(ws: &Workspace, program: &Program, traces: &[RoutineTrace]) -> Facts {
    let mut out = Facts::new();
    for t in traces {
        let unit: &Unit = program.unit(t.unit);
        let at = |s: dfort_ir::StmtId| line(ws, unit.stmt(s).span);
        let f = out.entry(unit.name.clone()).or_default();
        f.active = t
            .with_adjoint
            .iter()
            .map(|s| unit.symbol(*s).name.clone())
            .collect();
        // Around a call to a procedure without source, the caller's
        // records are TBR's; around a CALL to one with source, the call's
        // checkpoint's records and snapshot.
        let with_source = |s: &dfort_ir::StmtId| {
            matches!(
                unit.stmt(*s).kind,
                dfort_ir::StmtKind::Call {
                    target: dfort_ir::CallTarget::Unit(_),
                    ..
                }
            )
        };
        f.pushes = t
            .pushes
            .iter()
            .chain(t.around_calls.iter().filter(|(s, _)| !with_source(s)))
            .map(|(s, v)| (at(*s), unit.symbol(*v).name.clone()))
            .collect();
        // (Only CALL statements: a hoisted reference's snapshot may hold
        // temporaries the analysed unit does not have.)
        let snapshots = t
            .call_snapshots
            .iter()
            .filter(|(s, _)| with_source(s))
            .map(|(s, v)| {
                let name = match v {
                    SavedValue::Variable(v) => unit.symbol(*v).name.clone(),
                    SavedValue::Global(GlobalKey::Shared { unit: m, symbol }) => {
                        program.unit(*m).symbol(*symbol).name.clone()
                    }
                    SavedValue::Global(GlobalKey::Common { block, index }) => {
                        format!("/{block}/{index}")
                    }
                };
                (at(*s), name)
            });
        f.call_saves = t
            .around_calls
            .iter()
            .filter(|(s, _)| with_source(s))
            .map(|(s, v)| (at(*s), unit.symbol(*v).name.clone()))
            .chain(snapshots)
            .collect();
        f.by_blocks = t.by_blocks;
        f.reversal = t
            .constructs
            .iter()
            .filter_map(|(s, how)| {
                let h = match how {
                    Reversed::Replayed => "replay",
                    Reversed::CountedFromBound => "counted",
                    Reversed::TripsPushed => "trips",
                    Reversed::BranchPushed => "branch",
                    Reversed::BlockPushed => return None,
                };
                Some((at(*s), h))
            })
            .collect();
        // Per loop and variable: the costliest recovery of its values.
        let mut best: BTreeMap<(u32, String), dfort_analysis::address_report::Choice> =
            BTreeMap::new();
        for (lp, v, how) in &t.recoveries {
            let key = (lp.map_or(0, at), unit.symbol(*v).name.clone());
            let e = best.entry(key).or_insert(*how);
            *e = (*e).max(*how);
        }
        f.recovery = best
            .into_iter()
            .map(|((l, v), c)| (l, v, c.as_str()))
            .collect();
    }
    out
}

/// `dfort analyze --format json`'s side.
fn json_facts(doc: &Value) -> Facts {
    let mut out = Facts::new();
    let str_of = |v: &Value| v.as_str().unwrap_or("").to_string();
    let num = |v: &Value| v.as_u64().unwrap_or(0) as u32;
    for u in doc["units"].as_array().into_iter().flatten() {
        let f = out.entry(str_of(&u["name"])).or_default();
        f.active = u["active"]
            .as_array()
            .into_iter()
            .flatten()
            .map(str_of)
            .collect();
        f.pushes = u["tbr"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|r| (num(&r["line"]), str_of(&r["variable"])))
            .collect();
        f.by_blocks = u["reversed_by_blocks"].as_bool().unwrap_or(false);
        f.reversal = u["reversal"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|r| {
                let h = match r["how"].as_str()? {
                    "replay" => "replay",
                    "counted-while" => "counted",
                    "push-trips" | "left-by-exit" => "trips",
                    "push-branch" => "branch",
                    _ => return None,
                };
                Some((num(&r["line"]), h))
            })
            .collect();
        for l in u["address_recovery"].as_array().into_iter().flatten() {
            let lp = num(&l["loop_line"]);
            for v in l["variables"].as_array().into_iter().flatten() {
                // Ambiguous variables are left to TBR: their pushes are
                // compared as pushes.
                if v["recoveries"].as_array().is_none_or(|r| r.is_empty()) {
                    continue;
                }
                let choice = match v["choice"].as_str() {
                    Some("final value") => "final value",
                    Some("inverted") => "inverted",
                    Some("recomputed") => "recomputed",
                    _ => "stored",
                };
                f.recovery.insert((lp, str_of(&v["variable"]), choice));
            }
        }
    }
    out
}

/// The editor's side: the language server's host with the same root,
/// its inlay hints and the recovery reports its hovers read.
fn editor_facts(ws: &Workspace, spec: &RootSpec) -> Facts {
    let mut host = Host::new(HostConfig {
        roots: vec![spec.clone()],
        ..HostConfig::default()
    });
    let mut paths = Vec::new();
    for f in &ws.files {
        host.set_text(&f.path, &f.text, true, 1);
        paths.push(f.path.clone());
    }
    let snap = host.snapshot();
    let mut out = Facts::new();
    for path in &paths {
        let Some(doc) = snap.doc(path) else { continue };
        let len = doc.text.len() as u32;
        let hints = inlay_hints(
            &snap,
            path,
            dfort_syntax::TextRange::new(0, len),
            HintKinds::default(),
        );
        for h in hints {
            let Some(unit) = snap.unit_at(path, h.offset) else {
                continue;
            };
            let l = doc.lines.line_of(h.offset) + 1;
            let f = out.entry(unit.name.clone()).or_default();
            match h.kind {
                HintKind::Active => {
                    // The tooltip names the variable: "`x` is active ...".
                    if let Some(v) = h.tooltip.split('`').nth(1) {
                        f.active.insert(v.to_string());
                    }
                }
                HintKind::Push => {
                    let inner = h.label.trim_start_matches("push(").trim_end_matches(')');
                    let set = if h.tooltip.starts_with(CHECKPOINT_TOOLTIP) {
                        &mut f.call_saves
                    } else {
                        &mut f.pushes
                    };
                    for v in inner.split(", ") {
                        set.insert((l, v.to_string()));
                    }
                }
                HintKind::Reversal => {
                    let how = if h.label.starts_with("replay ") {
                        "replay"
                    } else if h.label.starts_with("trips ← ") {
                        "counted"
                    } else {
                        match h.label.as_str() {
                            "push(trips)" => "trips",
                            "push(branch)" => "branch",
                            "reversed by blocks" => {
                                f.by_blocks = true;
                                continue;
                            }
                            _ => "unknown",
                        }
                    };
                    f.reversal.insert((l, how));
                }
                HintKind::Address => {}
            }
        }
        for unit in snap.units_of(path) {
            let Some(analysed) = snap.analysis.program.units.get(unit.id.0 as usize) else {
                continue;
            };
            let f = out.entry(unit.name.clone()).or_default();
            for r in snap.analysis.reports_of(unit.id) {
                let lp = r.stmt.map_or(0, |s| {
                    let span = analysed.stmt(s).span;
                    snap.to_doc(span.file, span.range)
                        .map_or(0, |(_, rg)| doc.lines.line_of(rg.start) + 1)
                });
                for v in r.vars.iter().filter(|v| !v.recoveries.is_empty()) {
                    f.recovery
                        .insert((lp, analysed.symbol(v.var).name.clone(), v.choice.as_str()));
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::product::repo_root;

    /// Issue 15: for every kernel of tests/kernels.toml, in the three
    /// recording modes, what `dfort analyze --format json` prints, what
    /// the language server shows (its inlay hints and the reports its
    /// hovers read) and what the generated adjoint does agree — active
    /// variables, pushes per line, reversal per construct, recovery per
    /// address variable (`cargo xtask consistency`, which the fuzzer also
    /// runs on every program). The command line is parsed as
    /// `cargo xtask consistency` parses it.
    #[test]
    fn kernels_agree_in_analyze_the_editor_and_the_adjoint() {
        let root = repo_root();
        let kernels = crate::bench_adjoint::load_manifest(&root.join("tests/kernels.toml"))
            .expect("tests/kernels.toml")
            .kernel;
        assert!(kernels.len() >= 25, "{} kernels", kernels.len());
        let mut failures = Vec::new();
        let mut pushes = 0usize;
        let mut call_saves = 0usize;
        let mut constructs = 0usize;
        for k in &kernels {
            for mode in [None, Some("--no-inversion"), Some("--no-tbr")] {
                let mut line: Vec<String> = vec!["cargo xtask".into(), "consistency".into()];
                line.extend(k.files.iter().map(|f| root.join(f).display().to_string()));
                line.extend(["--root".into(), k.root.clone()]);
                if !k.independent.is_empty() {
                    line.extend(["--independent".into(), k.independent.join(",")]);
                }
                if !k.dependent.is_empty() {
                    line.extend(["--dependent".into(), k.dependent.join(",")]);
                }
                line.extend(mode.map(String::from));
                let args = match clap::Parser::try_parse_from(&line) {
                    Ok(crate::Cli {
                        command: crate::Command::Consistency(args),
                    }) => args,
                    Ok(_) => panic!("parsed as another command"),
                    Err(e) => panic!("{}: {e}", line.join(" ")),
                };
                let problem = match check_args(&args) {
                    Some(Ok(Some(a))) if a.units > 0 => {
                        pushes += a.pushes;
                        call_saves += a.call_saves;
                        constructs += a.constructs;
                        continue;
                    }
                    Some(Ok(Some(_))) => "no unit compared".to_string(),
                    Some(Ok(None)) => "the generator refuses the root".to_string(),
                    Some(Err(d)) => d.join("\n  "),
                    None => "the root does not load (see stderr)".to_string(),
                };
                failures.push(format!("{}:\n  {problem}", line[1..].join(" ")));
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
        // The comparison covers something: the kernels push and reverse.
        assert!(
            pushes > 100 && constructs > 100,
            "{pushes} pushes, {constructs} constructs"
        );
        // Calls to procedures with source are compared too.
        assert!(call_saves > 10, "{call_saves} values saved around calls");
    }
}
