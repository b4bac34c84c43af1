//! `cargo xtask consistency`: checks that `dfort analyze --format json`,
//! the language server and the generated adjoint agree. The editor's side
//! is read from what the user sees — inlay hints, hovers, diagnostics —
//! and from the recovery reports its hovers and hints are rendered from;
//! the adjoint's from the generator's record of the code it wrote
//! (`dfort_codegen::trace`) and its refusals. The fuzzer runs the root
//! check on every random program; the tests run both checks on every
//! fixture and kernel (see [`cases`]).
//!
//! * **One root** ([`check_root`], `--root R`): `dfort analyze --root R`,
//!   the editor configured with that root alone, and the adjoint `dfort
//!   adjoint --root R` writes, in one recording mode (the editor in the
//!   default mode only, the one it shows). Per unit the adjoint has a
//!   routine for: each variable the editor marks active is active in the
//!   JSON and each variable active in the JSON has an adjoint; the same
//!   pushes per line (the hovers' "recorded" statements too), reversal
//!   per construct, recovery per address variable, and forward-sweep
//!   drops. The no-source rule: the editor's `no-source` warnings, the
//!   adjoint's and the tangent's `no-source` refusals are the same
//!   sentences on the same lines. Call saves: what the forward sweep
//!   pushes around each CALL to a procedure with source (the call's
//!   checkpoint, which the analysis decides: the caller's records and the
//!   snapshot), as (line, variable), in the JSON, the editor's hints and
//!   the adjoint.
//! * **The workspace** ([`check_workspace`], no `--root`): `dfort
//!   analyze` without `--root` and the editor, both from the `dfort.toml`
//!   roots and every other procedure nobody calls, agree on every unit:
//!   active variables, pushes, reversal, recovery.

use dfort::session::{Ask, Session};
use dfort_analysis::decisions::Recording;
use dfort_analysis::dep::GlobalKey;
use dfort_analysis::roots::RootSpec;
use dfort_codegen::trace::{Reversed, RoutineTrace, SavedValue};
use dfort_ide::hints::{inlay_hints, HintKind, HintKinds, CHECKPOINT_TOOLTIP};
use dfort_ide::host::{Host, HostConfig, Snapshot};
use dfort_ir::{ExprKind, Idx, StmtKind};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct ConsistencyArgs {
    /// The files (with their `dfort.toml`, as the commands find it).
    #[arg(required_unless_present = "all")]
    files: Vec<PathBuf>,
    /// Check every kernel of tests/kernels.toml and every fixture (each
    /// root in the three modes, each fixture set as a workspace).
    #[arg(long, conflicts_with_all = ["files", "root"])]
    all: bool,
    /// Check this root (else the workspace: `analyze` without `--root`
    /// against the editor).
    #[arg(long)]
    root: Option<String>,
    /// Independent variables of the root, comma-separated.
    #[arg(long, value_delimiter = ',', requires = "root")]
    independent: Vec<String>,
    /// Dependent variables of the root, comma-separated.
    #[arg(long, value_delimiter = ',', requires = "root")]
    dependent: Vec<String>,
    /// Check the recording of `--no-tbr` (the editor is not compared).
    #[arg(long, requires = "root")]
    no_tbr: bool,
    /// Check the recording of `--no-inversion` (the editor is not compared).
    #[arg(long, requires = "root")]
    no_inversion: bool,
}

/// What one side says of one unit.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UnitFacts {
    pub active: BTreeSet<String>,
    pub pushes: BTreeSet<(u32, String)>,
    /// The pushes at assignments to the variable pushed (what a hover on
    /// the assignment's target says is recorded).
    pub assignment_pushes: BTreeSet<(u32, String)>,
    /// What the checkpoint of each CALL to a procedure with source pushes.
    pub call_saves: BTreeSet<(u32, String)>,
    /// The function references whose results the forward sweep pushes:
    /// (line of the reference, `g(…) for <whose adjoint reads it>`).
    pub pushed_results: BTreeSet<(u32, String)>,
    /// The pointer associations saved before pointer statements (`None`:
    /// this side does not say).
    pub associations: Option<BTreeSet<(u32, String)>>,
    pub reversal: BTreeSet<(u32, &'static str)>,
    /// Reversed through basic-block ids.
    pub by_blocks: bool,
    /// (loop line, 0 for a unit with jumps; variable; choice).
    pub recovery: BTreeSet<(u32, String, &'static str)>,
    /// Lines of the assignments the forward sweep drops (`None`: this
    /// side does not say).
    pub drops: Option<BTreeSet<u32>>,
}

/// Per unit name.
pub type Facts = BTreeMap<String, UnitFacts>;

/// How much the sides agreed on.
#[derive(Clone, Copy, Debug, Default)]
pub struct Agreement {
    pub units: usize,
    pub pushes: usize,
    /// Values saved around CALLs to procedures with source.
    pub call_saves: usize,
    /// Function results pushed.
    pub pushed_results: usize,
    pub constructs: usize,
    pub recoveries: usize,
    pub drops: usize,
    /// Pointer associations saved before pointer statements.
    pub associations: usize,
    /// `no-source` sentences the editor and the generators agree on.
    pub no_source: usize,
    /// Roots the generator refuses (their no-source refusals compared).
    pub refused: usize,
}

impl Agreement {
    fn add(&mut self, o: Agreement) {
        self.units += o.units;
        self.pushes += o.pushes;
        self.call_saves += o.call_saves;
        self.pushed_results += o.pushed_results;
        self.constructs += o.constructs;
        self.recoveries += o.recoveries;
        self.drops += o.drops;
        self.associations += o.associations;
        self.no_source += o.no_source;
        self.refused += o.refused;
    }
}

impl std::fmt::Display for Agreement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} units, {} pushes, {} call saves, {} pushed results, {} constructs, {} recoveries, {} drops, {} associations, {} no-source, {} refused",
            self.units,
            self.pushes,
            self.call_saves,
            self.pushed_results,
            self.constructs,
            self.recoveries,
            self.drops,
            self.associations,
            self.no_source,
            self.refused
        )
    }
}

pub fn run(args: ConsistencyArgs) -> ExitCode {
    if args.all {
        let repo = crate::product::repo_root();
        let verdict = cases(&repo)
            .map_err(|e| vec![e])
            .and_then(|c| check_cases(&c));
        return match verdict {
            Ok(a) => {
                println!("consistent: {a}");
                ExitCode::SUCCESS
            }
            Err(f) => {
                for l in &f {
                    println!("{l}");
                }
                println!("{} cases disagree", f.len());
                ExitCode::from(1)
            }
        };
    }
    let verdict = match &args.root {
        Some(r) => {
            let spec = RootSpec {
                name: r.to_ascii_lowercase(),
                independent: args.independent.clone(),
                dependent: args.dependent.clone(),
                after: None,
            };
            let recording = Recording::from_flags(args.no_tbr, args.no_inversion);
            check_root(&args.files, &spec, recording)
        }
        None => check_workspace(&args.files),
    };
    match verdict {
        Ok(a) => {
            println!("consistent: {a}");
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

/// The roots `dfort.toml` names for `files` (empty without one).
fn toml_roots(files: &[PathBuf]) -> Result<Vec<RootSpec>, String> {
    Ok(dfort::config::load(files)
        .map_err(|e| e.to_string())?
        .map(|(_, c)| c.root.iter().map(|r| r.spec()).collect())
        .unwrap_or_default())
}

/// The editor: a host with `config`, every file open.
fn editor(files: &[PathBuf], config: HostConfig) -> Result<std::sync::Arc<Snapshot>, String> {
    let mut host = Host::new(config);
    for f in files {
        let text = std::fs::read_to_string(f).map_err(|e| format!("{}: {e}", f.display()))?;
        host.set_text(f, &text, true, 1);
    }
    Ok(host.snapshot())
}

/// Compares `dfort analyze --root`, the editor and the generated adjoint
/// for the root `spec` of `files` in `recording` mode (when the generator
/// refuses the root, only the no-source rule is compared and `refused`
/// counts it), `Err` with one line per disagreement.
pub fn check_root(
    files: &[PathBuf],
    spec: &RootSpec,
    recording: Recording,
) -> Result<Agreement, Vec<String>> {
    let (session, root, _) = Session::for_root(files, spec.clone(), recording)
        .map_err(|e| vec![format!("load: {e}")])?;
    let snap = &session.snap;
    let facts = snap.analysis();
    let default_mode = recording == Recording::Inversion;
    let ed = if default_mode {
        // The editor reads the same `dfort.toml` (its supplied adjoints).
        let config = HostConfig {
            roots: vec![spec.clone()],
            others: false,
            supplied: snap.config.supplied.clone(),
            ..HostConfig::default()
        };
        Some(editor(files, config).map_err(|e| vec![e])?)
    } else {
        None
    };
    let mut out = Vec::new();
    let mut agreed = Agreement::default();
    // The no-source rule: one sentence for the editor and both generators.
    let adjoint = dfort_codegen::adjoint::adjoint_of(facts, root, "");
    let tangent = dfort_codegen::tangent::tangent_of(facts, root, "");
    if let Some(ed) = &ed {
        let warned = no_source_warnings(ed);
        for (what, refusals) in [
            ("adjoint", adjoint.as_ref().err()),
            ("tangent", tangent.as_ref().err()),
        ] {
            let refused: BTreeSet<(u32, String)> = refusals
                .into_iter()
                .flatten()
                .filter(|r| r.rule.code == "no-source")
                .filter_map(|r| Some((snap.location(r.span)?.line, r.message.clone())))
                .collect();
            for (l, m) in warned.difference(&refused) {
                out.push(format!(
                    "no-source: the editor warns at line {l} but the {what} does not refuse: {m}"
                ));
            }
            for (l, m) in refused.difference(&warned) {
                out.push(format!(
                    "no-source: the {what} refuses at line {l} but the editor does not warn: {m}"
                ));
            }
            agreed.no_source += refused.len();
        }
    }
    let traces = match adjoint {
        Ok((_, t)) => t,
        Err(_) if out.is_empty() => {
            agreed.refused += 1;
            return Ok(agreed);
        }
        Err(_) => return Err(out),
    };
    let adj = trace_facts(snap, &traces);
    let json = dfort::analyze::json_for(files, std::slice::from_ref(spec), false, recording)
        .map_err(|p| {
            p.iter()
                .map(|m| format!("analyze: {m}"))
                .collect::<Vec<_>>()
        })?;
    let cli = json_facts(&json);
    let ed_facts = ed.as_deref().map(editor_facts);
    for (unit, a) in &adj {
        let none = UnitFacts::default();
        let c = cli.get(unit).unwrap_or(&none);
        let mut sides = vec![("JSON", c.clone())];
        // The editor shows hints in every unit the adjoint works in.
        if let Some(e) = ed_facts.as_ref() {
            let e = e.get(unit).cloned().unwrap_or_default();
            let gained: Vec<String> = e.active.difference(&c.active).cloned().collect();
            if !gained.is_empty() {
                out.push(format!(
                    "{unit}: active in the editor, not active in the JSON: {}",
                    gained.join("; ")
                ));
            }
            sides.push(("editor", e));
        }
        let lost: Vec<String> = c.active.difference(&a.active).cloned().collect();
        if !lost.is_empty() {
            out.push(format!(
                "{unit}: active in the JSON without an adjoint: {}",
                lost.join("; ")
            ));
        }
        for (side, f) in &sides {
            compare(unit, side, f, a, *side == "editor", &mut out);
        }
        agreed.units += 1;
        agreed.pushes += a.pushes.len();
        agreed.call_saves += a.call_saves.len();
        agreed.pushed_results += a.pushed_results.len();
        agreed.constructs += a.reversal.len();
        agreed.recoveries += a.recovery.len();
        agreed.drops += a.drops.as_ref().map_or(0, |d| d.len());
        agreed.associations += a.associations.as_ref().map_or(0, |d| d.len());
    }
    if out.is_empty() {
        Ok(agreed)
    } else {
        Err(out)
    }
}

/// Compares `dfort analyze` without `--root` and the editor, both from
/// the `dfort.toml` roots of `files` and every other procedure nobody
/// calls, on every unit the JSON reports.
pub fn check_workspace(files: &[PathBuf]) -> Result<Agreement, Vec<String>> {
    let roots = toml_roots(files).map_err(|e| vec![e])?;
    let json =
        dfort::analyze::json_for(files, &roots, true, Recording::Inversion).map_err(|p| {
            p.iter()
                .map(|m| format!("analyze: {m}"))
                .collect::<Vec<_>>()
        })?;
    let cli = json_facts(&json);
    let config = HostConfig {
        roots,
        others: true,
        ..HostConfig::default()
    };
    let ed = editor(files, config).map_err(|e| vec![e])?;
    let e = editor_facts(&ed);
    let mut out = Vec::new();
    let mut agreed = Agreement::default();
    for (unit, c) in &cli {
        if c.active.is_empty() {
            continue;
        }
        let f = e.get(unit).cloned().unwrap_or_default();
        let gained: Vec<String> = f.active.difference(&c.active).cloned().collect();
        if !gained.is_empty() {
            out.push(format!(
                "{unit}: active in the editor, not active in the JSON: {}",
                gained.join("; ")
            ));
        }
        compare(unit, "editor", &f, c, false, &mut out);
        agreed.units += 1;
        agreed.pushes += c.pushes.len();
        agreed.constructs += c.reversal.len();
        agreed.recoveries += c.recovery.len();
    }
    if out.is_empty() {
        Ok(agreed)
    } else {
        Err(out)
    }
}

/// The disagreements of `side`'s facts `f` with the reference `a` (the
/// adjoint's, or the JSON's) on one unit.
fn compare(
    unit: &str,
    side: &str,
    f: &UnitFacts,
    a: &UnitFacts,
    hovers: bool,
    out: &mut Vec<String>,
) {
    if f.by_blocks != a.by_blocks {
        out.push(format!(
            "{unit}: the {side} says the unit is {}reversed by blocks, the reference {}",
            if f.by_blocks { "" } else { "not " },
            if a.by_blocks { "is" } else { "is not" }
        ));
    }
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
    let show_d = |s: &Option<BTreeSet<u32>>| -> Option<BTreeSet<String>> {
        s.as_ref()
            .map(|s| s.iter().map(|l| format!("line {l} dropped")).collect())
    };
    let mut pairs = vec![
        ("pushes", show_p(&f.pushes), show_p(&a.pushes)),
        ("call saves", show_p(&f.call_saves), show_p(&a.call_saves)),
        (
            "pushed results",
            show_p(&f.pushed_results),
            show_p(&a.pushed_results),
        ),
        ("reversal", show_r(&f.reversal), show_r(&a.reversal)),
        ("recovery", show_c(&f.recovery), show_c(&a.recovery)),
    ];
    if let (Some(x), Some(y)) = (show_d(&f.drops), show_d(&a.drops)) {
        pairs.push(("forward-sweep drops", x, y));
    }
    if let (Some(x), Some(y)) = (&f.associations, &a.associations) {
        pairs.push(("saved associations", show_p(x), show_p(y)));
    }
    // The hovers are compared with the adjoint's record (which knows
    // which statements are assignments).
    if hovers {
        pairs.push((
            "hover's recorded statements",
            show_p(&f.assignment_pushes),
            show_p(&a.assignment_pushes),
        ));
    }
    for (what, x, y) in pairs {
        let more: Vec<String> = x.difference(&y).cloned().collect();
        let less: Vec<String> = y.difference(&x).cloned().collect();
        if !more.is_empty() {
            out.push(format!(
                "{unit}: {what}: the {side} shows what the reference does not: {}",
                more.join("; ")
            ));
        }
        if !less.is_empty() {
            out.push(format!(
                "{unit}: {what}: the reference has what the {side} does not show: {}",
                less.join("; ")
            ));
        }
    }
}

/// How the sides name a pushed function result: the function, and whose
/// adjoint reads it (`assignment`, or the outer reference's function).
fn result_push(function: &str, read_by: &str) -> String {
    format!("{function}(…) for {read_by}")
}

/// The line (from 1) where a span starts in its document, 0 if unknown.
fn line(snap: &Snapshot, span: dfort_ir::Span) -> u32 {
    snap.location(span).map_or(0, |l| l.line)
}

/// Whether statement `s` of `unit` assigns to variable `v`.
fn assigns(unit: &dfort_ir::Unit, s: dfort_ir::StmtId, v: dfort_ir::SymbolId) -> bool {
    matches!(&unit.stmt(s).kind, StmtKind::Assign { lhs, .. }
        if matches!(&lhs.kind, ExprKind::Var(x) | ExprKind::ArrayRef { array: x, .. } if *x == v))
}

/// The adjoint's side, from the generator's record (on the snapshot the
/// adjoint was written from).
fn trace_facts(snap: &Snapshot, traces: &[RoutineTrace]) -> Facts {
    let program = &snap.analysis().program;
    let mut out = Facts::new();
    for t in traces {
        let unit = program.unit(t.unit);
        // Statements the structuring of EXIT and CYCLE appends have no
        // place of their own to hover on.
        let source_len = snap.program.unit(t.unit).stmts.len();
        let at = |s: dfort_ir::StmtId| line(snap, unit.stmt(s).span);
        let f = out.entry(unit.name.clone()).or_default();
        f.active = t
            .with_adjoint
            .iter()
            .map(|s| unit.symbol(*s).name.clone())
            .collect();
        // Around a call to a procedure without source, the caller's
        // records are TBR's; around a CALL to one with source, or a
        // function reference to one hoisted out of an assignment, the
        // call's checkpoint's records and snapshot.
        let with_source = |s: &dfort_ir::StmtId| match &unit.stmt(*s).kind {
            StmtKind::Call { target, .. } => matches!(target, dfort_ir::CallTarget::Unit(_)),
            StmtKind::Assign { rhs, .. } => !dfort_ir::queries::function_references(rhs).is_empty(),
            _ => false,
        };
        // (A hoisted reference's snapshot may save the temporary holding
        // a nested reference's result: the generator's own variable, not
        // the unit's, which nothing shows.)
        let name_of = |v: &dfort_ir::SymbolId| unit.symbols.get(*v).map(|s| s.name.clone());
        f.pushes = t
            .pushes
            .iter()
            .chain(t.around_calls.iter().filter(|(s, _)| !with_source(s)))
            .filter_map(|(s, v)| Some((at(*s), name_of(v)?)))
            .collect();
        let snapshots = t
            .call_snapshots
            .iter()
            .filter(|(s, _)| with_source(s))
            .filter_map(|(s, v)| {
                let name = match v {
                    SavedValue::Variable(v) => name_of(v)?,
                    SavedValue::Global(GlobalKey::Shared { unit: m, symbol }) => {
                        program.unit(*m).symbol(*symbol).name.clone()
                    }
                    SavedValue::Global(GlobalKey::Common { block, index }) => {
                        dfort_ir::queries::common_member_name(program, block, *index)
                            .unwrap_or_else(|| format!("/{block}/{index}"))
                    }
                };
                Some((at(*s), name))
            });
        f.call_saves = t
            .around_calls
            .iter()
            .filter(|(s, _)| with_source(s))
            .filter_map(|(s, v)| Some((at(*s), name_of(v)?)))
            .chain(snapshots)
            .collect();
        let function = |u: &dfort_ir::UnitId| program.unit(*u).name.clone();
        f.pushed_results = t
            .pushed_results
            .iter()
            .map(|(_, callee, at, by)| {
                let by = by.as_ref().map_or("assignment".to_string(), function);
                (line(snap, *at), result_push(&function(callee), &by))
            })
            .collect();
        f.assignment_pushes = t
            .pushes
            .iter()
            .filter(|(s, v)| assigns(unit, *s, *v) && s.index() < source_len)
            .map(|(s, v)| (at(*s), unit.symbol(*v).name.clone()))
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
                    Reversed::MaskPushed => "mask",
                    Reversed::MaskRecomputed => "recompute-mask",
                    Reversed::BranchRecomputed => "recompute-branch",
                    Reversed::Split => "split",
                    Reversed::Binomial => "binomial",
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
        f.drops = Some(t.dropped.iter().map(|s| at(*s)).collect());
        f.associations = Some(
            t.associations
                .iter()
                .map(|(s, p)| (at(*s), format!("{p} =>")))
                .collect(),
        );
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
        f.call_saves = u["call_saves"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|r| (num(&r["line"]), str_of(&r["variable"])))
            .collect();
        f.pushed_results = u["pushed_results"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|r| {
                let (g, by) = (str_of(&r["function"]), str_of(&r["read_by"]));
                (num(&r["line"]), result_push(&g, &by))
            })
            .collect();
        f.drops = Some(
            u["forward_sweep_drops"]
                .as_array()
                .into_iter()
                .flatten()
                .map(num)
                .collect(),
        );
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
                    "mask-pushed" => "mask",
                    "mask-recomputed" => "recompute-mask",
                    "branch-recomputed" => "recompute-branch",
                    "binomial-checkpointed" => "binomial",
                    _ => return None,
                };
                Some((num(&r["line"]), h))
            })
            .collect();
        for l in u["split_calls"].as_array().into_iter().flatten() {
            f.reversal.insert((num(l), "split"));
        }
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

/// The editor's `no-source` warnings: (line, sentence).
fn no_source_warnings(snap: &Snapshot) -> BTreeSet<(u32, String)> {
    let mut out = BTreeSet::new();
    for (path, doc) in &snap.docs {
        for d in dfort_ide::diagnostics::of_document(snap, path) {
            if d.code == "no-source" {
                out.insert((doc.lines.line_of(d.range.start) + 1, d.message));
            }
        }
    }
    out
}

/// The editor's side: its inlay hints, the hovers on assignments' targets,
/// and the recovery reports its hovers and hints are rendered from.
fn editor_facts(snap: &Snapshot) -> Facts {
    let mut out = Facts::new();
    for (path, doc) in &snap.docs {
        let len = doc.text.len() as u32;
        let hints = inlay_hints(
            snap,
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
                // A function reference whose result the forward sweep
                // pushes (`push(g(…))`), with the outer reference whose
                // snapshot saves it, if any.
                HintKind::Push if h.label.ends_with("(…))") => {
                    let g = h.label.trim_start_matches("push(").trim_end_matches("(…))");
                    let by = h.read_by.as_deref().unwrap_or("assignment");
                    f.pushed_results.insert((l, result_push(g, by)));
                }
                HintKind::Push => {
                    let inner = h.label.trim_start_matches("push(").trim_end_matches(')');
                    let set = if h.tooltip.starts_with(CHECKPOINT_TOOLTIP) {
                        &mut f.call_saves
                    } else if let Some(pointers) = inner.strip_suffix(" =>") {
                        let saved = f.associations.get_or_insert_with(BTreeSet::new);
                        for p in pointers.split(", ") {
                            saved.insert((l, format!("{p} =>")));
                        }
                        continue;
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
                    } else if h.label.starts_with("binomial(") {
                        "binomial"
                    } else {
                        match h.label.as_str() {
                            "push(trips)" => "trips",
                            "push(branch)" => "branch",
                            "push(mask)" => "mask",
                            "recompute mask" => "recompute-mask",
                            "recompute branch" => "recompute-branch",
                            "split" => "split",
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
            let Some(analysed) = &snap.analysis().program.units.get(unit.id) else {
                continue;
            };
            let f = out.entry(unit.name.clone()).or_default();
            f.associations.get_or_insert_with(BTreeSet::new);
            for r in snap.analysis().reports_of(unit.id) {
                let lp = r.stmt.map_or(0, |s| line(snap, analysed.stmt(s).span));
                for v in r.vars.iter().filter(|v| !v.recoveries.is_empty()) {
                    f.recovery
                        .insert((lp, analysed.symbol(v.var).name.clone(), v.choice.as_str()));
                }
            }
            hover_pushes(snap, path, unit, f);
        }
    }
    out
}

/// What the hover on each assignment's target says the forward sweep
/// records there.
fn hover_pushes(snap: &Snapshot, path: &Path, unit: &dfort_ir::Unit, f: &mut UnitFacts) {
    if snap.analysis().activity_of(unit.id).is_none() {
        return;
    }
    // The target as the analyses read it (a pointer is its target
    // there), hovered where the source writes it.
    let analysed = &snap.analysis().program.units.get(unit.id);
    for st in &unit.stmts {
        let kind = analysed
            .and_then(|a| a.stmts.get(st.id))
            .map_or(&st.kind, |s| &s.kind);
        let StmtKind::Assign { lhs, .. } = kind else {
            continue;
        };
        let (ExprKind::Var(v) | ExprKind::ArrayRef { array: v, .. }) = &lhs.kind else {
            continue;
        };
        let Some((_, range)) = snap.to_doc(lhs.span.file, lhs.span.range) else {
            continue;
        };
        let Some(h) = dfort_ide::hover::hover(snap, path, range.start) else {
            continue;
        };
        let name = &unit.symbol(*v).name;
        let said = format!("the forward sweep pushes `{name}` before this statement overwrites it");
        if h.markdown.contains(&said) {
            f.assignment_pushes
                .insert((line(snap, st.span), name.clone()));
        }
    }
}

/// One consistency case of the repository: files, and the root to check
/// (none: the workspace check).
#[derive(Clone, Debug)]
pub struct Case {
    pub files: Vec<PathBuf>,
    pub root: Option<RootSpec>,
}

/// Every case the tests check: each kernel of tests/kernels.toml (its
/// root and lists), and each fixture file or fixture set that the front
/// end accepts — the workspace check, and each procedure nobody calls as
/// a root with its directives or intents (`dfort.toml` lists where the
/// set has one).
pub fn cases(repo: &Path) -> Result<Vec<Case>, String> {
    let mut out = Vec::new();
    let kernels = crate::bench_adjoint::load_manifest(&repo.join("tests/kernels.toml"))?.kernel;
    for k in kernels {
        out.push(Case {
            files: k.files.iter().map(|f| repo.join(f)).collect(),
            root: Some(RootSpec {
                name: k.root.to_ascii_lowercase(),
                independent: k.independent.clone(),
                dependent: k.dependent.clone(),
                after: None,
            }),
        });
    }
    let fixtures = repo.join("tests/fixtures");
    let mut sets: Vec<Vec<PathBuf>> = Vec::new();
    for dir in [
        "papers",
        "free",
        "fixed",
        "interproc",
        "analysis",
        "kernels",
        "consistency",
    ] {
        for f in fortran_files(&fixtures.join(dir)) {
            let name = f.file_name().map(|n| n.to_string_lossy().into_owned());
            // A module and the file that uses it go together.
            match name.as_deref() {
                Some("multi_mod.f90") => continue,
                Some("multi_use.f90") => sets.push(vec![fixtures.join("free/multi_mod.f90"), f]),
                _ => sets.push(vec![f]),
            }
        }
    }
    // Directories that are one workspace with their dfort.toml.
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(fixtures.join("consistency"))
        .map_err(|e| e.to_string())?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("dfort.toml").is_file())
        .collect();
    dirs.sort();
    for d in dirs {
        sets.push(fortran_files(&d));
    }
    for files in sets {
        let ask = Ask {
            supplied: Vec::new(),
            roots: toml_roots(&files)?,
            others: true,
            recording: Recording::Inversion,
            preaccumulate: None,
        };
        let session = Session::open(&files, &dfort::FormArgs::default(), &ask);
        if session.first_error().is_some() {
            continue;
        }
        out.push(Case {
            files: files.clone(),
            root: None,
        });
        for (id, _) in &session.snap.analysis().roots {
            let name = session.snap.program.unit(*id).name.clone();
            let spec = ask
                .roots
                .iter()
                .find(|r| r.name == name)
                .cloned()
                .unwrap_or(RootSpec {
                    name,
                    ..RootSpec::default()
                });
            out.push(Case {
                files: files.clone(),
                root: Some(spec),
            });
        }
    }
    Ok(out)
}

/// The Fortran files of a directory (not its subdirectories), sorted.
fn fortran_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file() && dfort_syntax::source_form::is_fortran_path(p))
        .collect();
    v.sort();
    v
}

/// Runs every case: roots in the three recording modes, workspaces once.
/// The agreement, or one line per disagreement.
pub fn check_cases(cases: &[Case]) -> Result<Agreement, Vec<String>> {
    let mut total = Agreement::default();
    let mut failures = Vec::new();
    for c in cases {
        let files: Vec<String> = c.files.iter().map(|f| f.display().to_string()).collect();
        match &c.root {
            Some(spec) => {
                for recording in [Recording::Inversion, Recording::Tbr, Recording::StoreAll] {
                    match check_root(&c.files, spec, recording) {
                        Ok(a) => total.add(a),
                        Err(d) => failures.push(format!(
                            "{} --root {} ({}):\n  {}",
                            files.join(" "),
                            spec.name,
                            recording.as_str(),
                            d.join("\n  ")
                        )),
                    }
                }
            }
            None => match check_workspace(&c.files) {
                Ok(a) => total.add(a),
                Err(d) => failures.push(format!("{}:\n  {}", files.join(" "), d.join("\n  "))),
            },
        }
    }
    if failures.is_empty() {
        Ok(total)
    } else {
        Err(failures)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::product::repo_root;

    /// Issue 15: over every kernel and fixture — each root in the three
    /// recording modes, each fixture set as a workspace — `dfort
    /// analyze`, the editor (hints, hovers, diagnostics) and the
    /// generated adjoint agree.
    #[test]
    fn fixtures_and_kernels_agree_in_analyze_the_editor_and_the_adjoint() {
        let root = repo_root();
        let cases = cases(&root).expect("the cases");
        let roots = cases.iter().filter(|c| c.root.is_some()).count();
        assert!(roots >= 150, "{roots} roots");
        let agreed = match check_cases(&cases) {
            Ok(a) => a,
            Err(f) => panic!("{} cases disagree:\n{}", f.len(), f.join("\n")),
        };
        // The comparison covers something.
        assert!(
            agreed.pushes > 200 && agreed.constructs > 200 && agreed.drops > 50,
            "{agreed}"
        );
        assert!(agreed.recoveries > 20 && agreed.no_source > 0, "{agreed}");
        assert!(
            agreed.call_saves > 10 && agreed.pushed_results > 100,
            "{agreed}"
        );
    }

    fn fixture(name: &str) -> PathBuf {
        repo_root().join("tests/fixtures/consistency").join(name)
    }

    fn json(files: &[PathBuf], root: Option<&str>) -> Value {
        let (specs, others) = match root {
            Some(r) => (
                vec![RootSpec {
                    name: r.into(),
                    ..RootSpec::default()
                }],
                false,
            ),
            None => (toml_roots(files).unwrap(), true),
        };
        dfort::analyze::json_for(files, &specs, others, Recording::Inversion).unwrap()
    }

    fn unit<'a>(doc: &'a Value, name: &str) -> &'a Value {
        doc["units"]
            .as_array()
            .unwrap()
            .iter()
            .find(|u| u["name"] == name)
            .unwrap_or_else(|| panic!("no unit {name} in {doc}"))
    }

    /// The adjoint was written and compared (not refused).
    fn compared(a: Agreement) {
        assert!(a.units > 0 && a.refused == 0, "{a}");
    }

    /// The five divergences of issue 15, each a case of the check above:
    /// here, what each one must show.
    #[test]
    fn the_five_divergences_of_issue_15_agree() {
        // 1. A dfort.toml root with a name only: roles from intents, for
        //    analyze (no --root), the editor and the adjoint alike.
        let files = vec![fixture("name_only_root/scale.f90")];
        let doc = json(&files, None);
        let u = unit(&doc, "scale");
        assert_eq!(u["active"], serde_json::json!(["x", "y"]));
        assert_eq!(u["roles_from"], "dummy-argument intents (default)");
        check_workspace(&files).unwrap();
        let spec = &toml_roots(&files).unwrap()[0];
        compared(check_root(&files, spec, Recording::Inversion).unwrap());
        // 2. A callee's forward-sweep drops: analyze reports the two
        //    assignments of `sub` the generator drops.
        let files = vec![repo_root().join("tests/fixtures/interproc/callee_drops.f90")];
        let doc = json(&files, Some("top"));
        assert_eq!(
            unit(&doc, "sub")["forward_sweep_drops"],
            serde_json::json!([17, 18])
        );
        let a = check_root(
            &files,
            &RootSpec {
                name: "top".into(),
                ..RootSpec::default()
            },
            Recording::Inversion,
        )
        .unwrap();
        assert!(a.drops >= 2, "{a}");
        // 3. Which roots: analyze without --root and the editor both take
        //    every procedure nobody calls, so the shared callee `smooth`
        //    has `b` active from `other` in both.
        let files = vec![fixture("shared_callee.f90")];
        let doc = json(&files, None);
        assert_eq!(
            unit(&doc, "smooth")["active"],
            serde_json::json!(["a", "b", "f"])
        );
        check_workspace(&files).unwrap();
        //    The same with `outer` configured in dfort.toml: analyze
        //    takes it and every other procedure nobody calls, as the
        //    editor does.
        let configured = vec![fixture("configured_root/shared.f90")];
        let doc = json(&configured, None);
        assert_eq!(
            unit(&doc, "smooth")["active"],
            serde_json::json!(["a", "b", "f"])
        );
        check_workspace(&configured).unwrap();
        //    From `outer` alone (`--root outer`, the adjoint of outer),
        //    `b` is passive, in analyze, the editor and the adjoint.
        let doc = json(&files, Some("outer"));
        assert_eq!(
            unit(&doc, "smooth")["active"],
            serde_json::json!(["a", "f"])
        );
        let outer = RootSpec {
            name: "outer".into(),
            ..RootSpec::default()
        };
        compared(check_root(&files, &outer, Recording::Inversion).unwrap());
        // 4. Reversal: the unit with an early RETURN is reversed by
        //    blocks; the DO left by EXIT pushes its trips.
        let files = vec![fixture("reversal_jumps.f90")];
        let doc = json(&files, None);
        assert_eq!(unit(&doc, "early")["reversed_by_blocks"], true);
        assert_eq!(unit(&doc, "early")["reversal"], serde_json::json!([]));
        let how: Vec<&str> = unit(&doc, "leave")["reversal"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["how"].as_str().unwrap())
            .collect();
        assert!(
            how.contains(&"left-by-exit") && !how.contains(&"replay"),
            "{how:?}"
        );
        for name in ["early", "leave"] {
            let spec = RootSpec {
                name: name.into(),
                ..RootSpec::default()
            };
            compared(check_root(&files, &spec, Recording::Inversion).unwrap());
        }
        // 5. The no-source rule: passive at the call, nobody warns or
        //    refuses; an expression actual, the editor warns and both
        //    generators refuse with the same sentence.
        let files = vec![fixture("no_source.f90")];
        let spec = |n: &str| RootSpec {
            name: n.into(),
            ..RootSpec::default()
        };
        let a = check_root(&files, &spec("passive_at_call"), Recording::Inversion).unwrap();
        assert!(a.units > 0 && a.refused == 0, "{a}");
        let a = check_root(&files, &spec("expression_actual"), Recording::Inversion).unwrap();
        assert!(a.refused == 1 && a.no_source == 2, "{a}");
        let config = HostConfig {
            roots: vec![spec("expression_actual")],
            others: false,
            ..HostConfig::default()
        };
        let warned = no_source_warnings(&editor(&files, config).unwrap());
        assert_eq!(warned.len(), 1, "{warned:?}");
    }

    #[test]
    fn a_callee_without_active_variables_reports_what_its_adjoint_recovers() {
        // 6. `fill` has nothing active, but its adjoint zeroes `pb(k)` for
        //    each element it overwrites of the caller's derivative
        //    carrier, recovering `k` by inversion: analyze says so too.
        let files = vec![fixture("carrier_only.f90")];
        let doc = json(&files, Some("outer"));
        let fill = unit(&doc, "fill");
        assert_eq!(fill["active"], serde_json::json!([]));
        let recovered: Vec<_> = fill["address_recovery"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|l| l["variables"].as_array().unwrap().iter())
            .map(|v| (v["variable"].as_str(), v["choice"].as_str()))
            .collect();
        assert_eq!(recovered, [(Some("k"), Some("inverted"))]);
        let spec = RootSpec {
            name: "outer".into(),
            ..RootSpec::default()
        };
        let a = check_root(&files, &spec, Recording::Inversion).unwrap();
        assert!(a.recoveries == 1, "{a}");
    }
}
