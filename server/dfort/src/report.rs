//! `dfort analyze --format json`: the report as serde types, built from
//! the same facts the editor shows ([`dfort_ide::summary`]); sentences
//! come from the one renderer ([`dfort_ide::render`]). Format in
//! docs/command-line.md. Fields are declared in alphabetical order, the order of the
//! objects `dfort analyze` has always printed.

use dfort_analysis::address_report::LoopReport;
use dfort_analysis::decisions::NeededBy;
use dfort_analysis::preaccumulation::Decision;
use dfort_ide::render::{self, Source};
use dfort_ide::summary::{names, UnitSummary};
use dfort_ir::{StmtId, SymbolId, Unit};
use serde::Serialize;

#[derive(Serialize)]
pub struct Report {
    /// `tbr+inversion`, `tbr` or `store-all`.
    pub tbr_mode: &'static str,
    /// `off`, `cost` or `all` (`--preaccumulate`).
    pub preaccumulate: &'static str,
    pub units: Vec<UnitReport>,
}

#[derive(Serialize)]
pub struct UnitReport {
    /// Active anywhere in the unit, sorted.
    pub active: Vec<String>,
    /// Per DO loop (or per unit with jumps): how each address value is
    /// recovered (paper 003).
    pub address_recovery: Vec<LoopJson>,
    /// What the forward sweep pushes around each CALL to a procedure
    /// with source (the call's checkpoint), in push order.
    pub call_saves: Vec<CallSaveJson>,
    pub dependents: Vec<String>,
    /// Lines of the assignments the joint-mode forward sweep drops.
    pub forward_sweep_drops: Vec<u32>,
    pub independents: Vec<String>,
    /// Array arguments whose values each caller saves around its calls
    /// (the part a call touches), where this unit's adjoint needs none of
    /// the values it overwrites and would record its elements at every
    /// overwrite: they are not among its `tbr` pushes.
    pub left_to_callers: Vec<String>,
    /// Per basic block, its unambiguous local graphs in order (papers
    /// 002, 004): their sizes and what each elimination costs.
    pub local_jacobians: Vec<JacobianJson>,
    /// Lower case.
    pub name: String,
    /// The function references whose results the forward sweep pushes
    /// (the temporaries the adjoint hoists them into), in statement
    /// order.
    pub pushed_results: Vec<ResultPushJson>,
    /// Per DO loop whose intermediates the reverse sweep recomputes at
    /// the start of each reversed iteration instead of pushing and popping
    /// them (paper 003's forward recomputation).
    pub recomputed: Vec<RecomputedJson>,
    /// How each IF, SELECT CASE and DO is reversed (paper 001).
    pub reversal: Vec<ReversalJson>,
    /// Reversed through basic-block ids.
    pub reversed_by_blocks: bool,
    pub roles_from: &'static str,
    /// Whether the adjoint runs a copy of this unit (`<name>_p`) in place
    /// of the original: it changes SAVE'd state the adjoint shares.
    pub runs_as_copy: bool,
    /// Its SAVE'd locals that carry values from one call to the next and
    /// that the adjoint shares between its routines (module
    /// `dfort_save_<name>`), sorted.
    pub shared_state: Vec<String>,
    /// Lines of the CALLs the adjoint runs in split mode: the callee's
    /// forward routine in the forward sweep, its reverse routine in the
    /// reverse sweep, no snapshot.
    pub split_calls: Vec<u32>,
    /// What the forward sweep pushes for TBR.
    pub tbr: Vec<PushJson>,
}

/// A function reference whose result the forward sweep pushes.
#[derive(Serialize)]
pub struct ResultPushJson {
    /// The function, lower case.
    pub function: String,
    /// Where the reference starts.
    pub line: u32,
    /// Whose adjoint reads the result: `"assignment"` (the assignment's),
    /// or the function whose reference it is an actual of (that call's
    /// snapshot saves it).
    pub read_by: String,
}

/// A loop whose intermediates the reverse sweep recomputes.
#[derive(Serialize)]
pub struct RecomputedJson {
    pub loop_line: u32,
    /// The variables recomputed, sorted.
    pub variables: Vec<String>,
    /// The lines of the assignments run again, in order.
    pub lines: Vec<u32>,
}

/// One local computational graph of a basic block and the
/// multiplications of its elimination methods.
#[derive(Serialize)]
pub struct JacobianJson {
    /// The fewest multiplications found, by `best_method`.
    pub best: u64,
    pub best_method: &'static str,
    /// Its steps: a vertex by its label, `front a→b` / `back a→b`, or
    /// `face a→b→c`.
    pub best_sequence: Vec<String>,
    /// |E|.
    pub edges: usize,
    /// Edge elimination: the optimum when `edge_exhaustive`, else the
    /// cheapest-step-first sequence's.
    pub edge_elimination: u64,
    pub edge_exhaustive: bool,
    /// Nonzero entries of the local Jacobian.
    pub entries: usize,
    /// The optimum over face-elimination sequences (`null`: more than
    /// 12 edges, or the search gave up).
    pub face_elimination: Option<u64>,
    /// Lines of its first and last statements.
    pub first_line: u32,
    pub forward: u64,
    pub last_line: u32,
    /// Dependents, independents, intermediates (paper 004's m, n, p).
    pub m: usize,
    pub markowitz: u64,
    pub n: usize,
    /// Optimal vertex elimination (`null`: more than 12 intermediates).
    pub optimal_vertex: Option<u64>,
    pub p: usize,
    pub reverse: u64,
    /// The graph ends before this line: a use there may read a value
    /// the graph defines or an older one (paper 002 §5).
    pub split_before_line: Option<u32>,
    /// What the adjoint does with it: `"off"` (preaccumulation not
    /// asked), `"preaccumulated"` or `"statement-level"`.
    pub adjoint: &'static str,
    /// Why it keeps statement-level adjoints when preaccumulation was
    /// asked (`null` otherwise).
    pub adjoint_reason: Option<String>,
    /// Where the reverse sweep gets a preaccumulated Jacobian:
    /// `"pushed"` (the forward sweep pushes its entries) or
    /// `"recomputed"` (the reverse sweep replays the graph from inputs
    /// nothing after it overwrites); `null` when not preaccumulated.
    pub jacobian: Option<&'static str>,
    /// The statement-level estimate: values the statements' partials read
    /// that the graph assigns.
    pub statement_level: usize,
}

#[derive(Serialize)]
pub struct PushJson {
    /// The line of the overwriting statement.
    pub line: u32,
    /// The line of the statement whose adjoint reads the value (the
    /// overwriting statement's own line when its adjoint reads the old
    /// value); `null` when the calling context needs it.
    pub needed_by_line: Option<u32>,
    pub variable: String,
}

#[derive(Serialize)]
pub struct CallSaveJson {
    /// The line of the CALL.
    pub line: u32,
    /// The reference pushed (`a`, `a(k)`).
    pub reference: String,
    pub variable: String,
    /// `around-call` (the call may overwrite a value this unit's adjoint
    /// needs), `snapshot` (the callee's adjoint reads it), `index` (an
    /// index of an actual), `hidden` (a module variable the callee reads
    /// that this unit does not declare).
    pub why: &'static str,
}

#[derive(Serialize)]
pub struct ReversalJson {
    /// `replay`, `counted-while`, `push-trips`, `push-branch`,
    /// `left-by-exit`, `bounds-change-inside`, `mask-pushed`,
    /// `mask-recomputed`, `binomial-checkpointed`, `binomial-refused`.
    pub how: &'static str,
    pub line: u32,
    /// For `binomial-checkpointed`: the schedule.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checkpointing: Option<CheckpointingJson>,
}

/// A loop checkpointed with a binomial schedule.
#[derive(Serialize)]
pub struct CheckpointingJson {
    /// Snapshots held at once (the loop's entry state counts as one).
    pub snapshots: u32,
    /// What each snapshot holds (the loop-carried state).
    pub carried: Vec<String>,
    /// What the entry snapshot holds besides.
    pub saved_at_entry: Vec<String>,
    /// Bytes of one snapshot, when every array in it has constant bounds.
    pub snapshot_bytes: Option<u64>,
    /// The loop's steps, when its bounds are constants.
    pub steps: Option<u64>,
    /// Steps the reverse sweep runs again for `steps` steps (else for
    /// 1,000 steps, `recomputed_steps_for` says which).
    pub recomputed_steps: u64,
    pub recomputed_steps_for: u64,
}

#[derive(Serialize)]
pub struct LoopJson {
    pub computed_after_loop: Option<ComputedJson>,
    pub loop_line: Option<u32>,
    pub saved_after_loop: Vec<String>,
    pub saved_before_loop: Vec<String>,
    /// `loop`, or `unit` for a unit with jumps.
    pub scope: &'static str,
    pub stored_per_iteration: usize,
    pub variables: Vec<VarJson>,
}

#[derive(Serialize)]
pub struct ComputedJson {
    pub text: String,
    pub variable: String,
}

#[derive(Serialize)]
pub struct VarJson {
    pub choice: &'static str,
    pub reason: Option<String>,
    pub reason_line: Option<u32>,
    pub recoveries: Vec<RecoveryJson>,
    pub stored_per_iteration: usize,
    pub variable: String,
}

#[derive(Serialize)]
pub struct RecoveryJson {
    pub choice: &'static str,
    pub defined_line: u32,
    pub inverts_line: Option<u32>,
    pub text: String,
}

impl Report {
    /// The report of `summaries` in `tbr_mode`, with lines from `src`.
    pub fn new(
        summaries: &[UnitSummary],
        tbr_mode: &'static str,
        preaccumulate: &'static str,
        src: &dyn Source,
    ) -> Report {
        Report {
            tbr_mode,
            preaccumulate,
            units: summaries.iter().map(|s| unit_report(s, src)).collect(),
        }
    }
}

fn unit_report(s: &UnitSummary, src: &dyn Source) -> UnitReport {
    let unit = s.unit;
    let line = |id: StmtId| src.line(unit.stmt(id).span).unwrap_or(0);
    UnitReport {
        active: names(unit, &s.active),
        address_recovery: s.loops.iter().map(|l| loop_json(unit, l, src)).collect(),
        call_saves: call_saves(s, src),
        dependents: names(unit, &s.dependents),
        forward_sweep_drops: s.dead.iter().map(|d| line(*d)).collect(),
        independents: names(unit, &s.independents),
        left_to_callers: s
            .left_to_callers
            .iter()
            .map(|v| unit.symbol(*v).name.clone())
            .collect(),
        local_jacobians: s
            .local_jacobians()
            .iter()
            .flat_map(|b| &b.jacobians)
            .map(|j| {
                let (d, c) = (&j.graph.dag, &j.costs);
                let first = j.graph.stmts.first().map_or(0, |s| line(*s));
                JacobianJson {
                    best: c.best,
                    best_method: c.best_method.as_str(),
                    best_sequence: render::elimination_steps(j),
                    edges: d.edges.len(),
                    edge_elimination: c.edge,
                    edge_exhaustive: c.edge_exhaustive,
                    entries: c.jacobian_entries,
                    face_elimination: c.face,
                    first_line: first,
                    forward: c.forward,
                    last_line: j.graph.stmts.last().map_or(first, |s| line(*s)),
                    m: d.m,
                    markowitz: c.markowitz,
                    n: d.n,
                    optimal_vertex: c.optimal_vertex,
                    p: d.p,
                    reverse: c.reverse,
                    split_before_line: j.graph.split_at.as_ref().map(|(s, _)| line(*s)),
                    adjoint: match &j.decision {
                        Decision::NotAsked => "off",
                        Decision::Preaccumulated(..) => "preaccumulated",
                        Decision::StatementLevel(_) => "statement-level",
                    },
                    adjoint_reason: match &j.decision {
                        Decision::StatementLevel(w) => Some(w.as_sentence()),
                        _ => None,
                    },
                    jacobian: match &j.decision {
                        Decision::Preaccumulated(_, how) => Some(how.as_str()),
                        _ => None,
                    },
                    statement_level: j.statement_level,
                }
            })
            .collect(),
        name: unit.name.clone(),
        pushed_results: s
            .pushed_results
            .iter()
            .filter_map(|r| {
                let name = |u: dfort_ir::UnitId| s.program.units.get(u).map(|c| c.name.clone());
                Some(ResultPushJson {
                    function: name(r.callee)?,
                    line: src.line(r.span).unwrap_or(0),
                    read_by: match r.read_by {
                        None => "assignment".to_string(),
                        Some(outer) => name(outer)?,
                    },
                })
            })
            .collect(),
        recomputed: s
            .recomputed
            .iter()
            .map(|r| RecomputedJson {
                loop_line: line(r.lp),
                variables: names(unit, &r.vars),
                lines: r.stmts.iter().map(|s| line(*s)).collect(),
            })
            .collect(),
        reversal: s
            .constructs()
            .into_iter()
            .map(|(st, how)| ReversalJson {
                how: how.kind(),
                line: line(st),
                checkpointing: match how {
                    dfort_analysis::reversal::Reversal::Binomial(b) => {
                        let n = b.steps.unwrap_or(1000);
                        Some(CheckpointingJson {
                            snapshots: b.snapshots,
                            carried: b
                                .carried
                                .iter()
                                .map(|v| unit.symbol(*v).name.clone())
                                .collect(),
                            saved_at_entry: b
                                .entry
                                .iter()
                                .map(|v| unit.symbol(*v).name.clone())
                                .collect(),
                            snapshot_bytes: b.snapshot_bytes,
                            steps: b.steps,
                            recomputed_steps: b.recomputed(n),
                            recomputed_steps_for: n,
                        })
                    }
                    _ => None,
                },
            })
            .collect(),
        reversed_by_blocks: s.by_blocks(),
        roles_from: s.roles_from,
        runs_as_copy: s.runs_as_copy,
        shared_state: {
            let mut v: Vec<String> = s
                .shared_state
                .iter()
                .map(|v| unit.symbol(*v).name.clone())
                .collect();
            v.sort();
            v
        },
        split_calls: s
            .calls
            .iter()
            .filter(|c| c.checkpoint.split)
            .map(|c| line(c.stmt))
            .collect(),
        tbr: s
            .pushed
            .iter()
            .map(|p| PushJson {
                line: line(p.stmt),
                needed_by_line: match p.needed_by {
                    NeededBy::OwnAdjoint => Some(line(p.stmt)),
                    NeededBy::AdjointOf(by) => Some(line(by)),
                    NeededBy::Context => None,
                },
                variable: unit.symbol(p.variable).name.clone(),
            })
            .collect(),
    }
}

/// The saves of the checkpoints of the unit's calls to procedures with
/// source (CALL statements and function references), in statement order
/// then push order, except the globals the unit does not declare, last
/// (a region of one is pushed before the snapshot, so that it pops after
/// the variables its bounds read).
fn call_saves(s: &UnitSummary, src: &dyn Source) -> Vec<CallSaveJson> {
    use dfort_analysis::checkpoint::Why;
    let unit = s.unit;
    let mut out = Vec::new();
    for site in &s.calls {
        let cp = site.checkpoint;
        let line = src.line(unit.stmt(site.stmt).span).unwrap_or(0);
        for saved in cp.saved() {
            let Some(sym) = unit.symbols.get(saved.variable) else {
                continue;
            };
            out.push(CallSaveJson {
                line,
                reference: saved.text(unit),
                variable: sym.name.clone(),
                why: match saved.why {
                    Why::AroundCall => "around-call",
                    Why::Snapshot => "snapshot",
                    Why::Index => "index",
                },
            });
        }
        for k in &cp.hidden {
            if let Some(name) = s.global_name(k) {
                let reference = match cp.hidden_region(k) {
                    Some(h) => h.text(unit, &name),
                    None => name.clone(),
                };
                out.push(CallSaveJson {
                    line,
                    reference,
                    variable: name,
                    why: "hidden",
                });
            }
        }
    }
    out
}

fn loop_json(unit: &Unit, l: &LoopReport, src: &dyn Source) -> LoopJson {
    let line = |id: StmtId| src.line(unit.stmt(id).span).unwrap_or(0);
    let name = |s: &SymbolId| unit.symbol(*s).name.clone();
    LoopJson {
        computed_after_loop: l.computed_after_loop.as_ref().map(|cw| ComputedJson {
            text: render::computed_after_loop(unit, cw),
            variable: name(&cw.var),
        }),
        loop_line: l.stmt.map(line),
        saved_after_loop: l.saved_after_loop.iter().map(name).collect(),
        saved_before_loop: l.saved_before_loop.iter().map(name).collect(),
        scope: if l.stmt.is_some() { "loop" } else { "unit" },
        stored_per_iteration: l.stored_per_iteration,
        variables: l
            .vars
            .iter()
            .map(|v| VarJson {
                choice: v.choice.as_str(),
                reason: v.reason.as_ref().map(|r| render::reason(unit, r)),
                reason_line: v.reason.as_ref().map(|r| src.line(r.span()).unwrap_or(0)),
                recoveries: v
                    .recoveries
                    .iter()
                    .map(|r| RecoveryJson {
                        choice: r.choice.as_str(),
                        defined_line: line(r.defined_at),
                        inverts_line: r.inverts.map(line),
                        text: render::formula(unit, &r.formula),
                    })
                    .collect(),
                stored_per_iteration: v.stored_per_iteration,
                variable: name(&v.var),
            })
            .collect(),
    }
}
