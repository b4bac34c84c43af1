//! The one renderer of the analyses' facts for people: every sentence
//! and short label the inlay hints, the hover, the diagnostics and
//! `dfort analyze`'s text and JSON show about how the reverse sweep gets
//! an address index back (paper 003), how each construct is reversed
//! (paper 001), what the forward sweep pushes and why (TBR, paper 000
//! §5; call checkpoints), the why-chains of activity (§4), the kinks of
//! intrinsics, the sizes and elimination costs of the local Jacobians
//! (papers 002, 004), and the text report of `dfort analyze`
//! ([`unit_text`]).
//!
//! Contract: the analysis hands typed facts
//! ([`dfort_analysis::address_report`]: choices, [`Formula`]s, [`Reason`]s
//! with spans, statements); this module turns them into text and nothing
//! else turns them into text. Lines come from a [`Source`]: the editor's
//! documents ([`Snapshot`]) or the command line's files ([`LinesFrom`]).
//! Placement (which statement a hint sits after, which range a
//! diagnostic covers) stays with each feature. Pure: no I/O, no panics on
//! any report.

use crate::hints::stmt_holding;
use crate::host::Snapshot;
use crate::summary::{names, UnitSummary};
use dfort_analysis::address_report::{Choice, Formula, LoopReport, Reason, Recovery, VarReport};
use dfort_analysis::checkpoint::{Saved, Why as SaveWhy};
use dfort_analysis::counted_while::CountedWhile;
use dfort_analysis::elimination::Step;
use dfort_analysis::explain::Why;
use dfort_analysis::face_elimination;
use dfort_analysis::preaccumulation::{BlockJacobians, Decision, Jacobian, LocalJacobian};
use dfort_analysis::recovery::{Ambiguity, NonInvertible};
use dfort_analysis::reversal::Reversal;
use dfort_ir::{Span, Stmt, StmtId, StmtKind, SymbolId, Unit};
use std::fmt::Write;

/// Where the renderer finds the line of a span and the text of a
/// statement.
pub trait Source {
    /// The line (from 1) where `span` starts, when known.
    fn line(&self, span: Span) -> Option<u32>;
    /// The text of a statement to quote (its first line, trimmed), when
    /// known.
    fn stmt_text(&self, st: &Stmt) -> Option<String>;
}

/// Lines from a function that always answers (the command line's files:
/// 0 when a file is unknown); no statement text.
pub struct LinesFrom<F>(pub F);

impl<F: Fn(Span) -> u32> Source for LinesFrom<F> {
    fn line(&self, span: Span) -> Option<u32> {
        Some((self.0)(span))
    }

    fn stmt_text(&self, _: &Stmt) -> Option<String> {
        None
    }
}

/// The editor's open documents.
impl Source for Snapshot {
    fn line(&self, span: Span) -> Option<u32> {
        crate::hover::span_line(self, span)
    }

    fn stmt_text(&self, st: &Stmt) -> Option<String> {
        crate::hints::stmt_text(self, st)
    }
}

fn name(unit: &Unit, s: SymbolId) -> &str {
    unit.symbols.get(s).map_or("?", |x| x.name.as_str())
}

/// The line of a statement.
fn stmt_line(src: &dyn Source, unit: &Unit, id: StmtId) -> Option<u32> {
    unit.stmts.get(id).and_then(|st| src.line(st.span))
}

/// A line number, or `?`.
fn or_unknown(line: Option<u32>) -> String {
    line.map_or("?".to_string(), |l| l.to_string())
}

// ---- Facts as words -------------------------------------------------------

/// What a recovery computes: `k ← j - 2`, `k`, `l ← max(0, ilb)`.
pub fn formula(unit: &Unit, f: &Formula) -> String {
    match f {
        Formula::Value(v) => name(unit, *v).to_string(),
        Formula::Assign {
            var,
            term,
            version_vars,
        } => {
            let of = |v: usize| {
                version_vars
                    .get(v)
                    .map_or("?".to_string(), |s| name(unit, *s).to_string())
            };
            format!("{} ← {}", name(unit, *var), term.render(unit, &of))
        }
        Formula::FromTripCount(cw) => trip_count_final(unit, cw),
    }
}

/// A counted WHILE loop's final counter: `l ← max(0, ilb)`.
fn trip_count_final(unit: &Unit, cw: &CountedWhile) -> String {
    format!(
        "{} ← {}",
        name(unit, cw.var),
        cw.final_value(&cw.trip_count(unit))
    )
}

/// The operation that blocks an inversion: `integer division`, `` `max` ``.
pub fn non_invertible(unit: &Unit, op: &NonInvertible) -> String {
    match op {
        NonInvertible::LogicalNegation => "a logical negation".into(),
        NonInvertible::ProductOfVariables => "a product of two variables".into(),
        NonInvertible::IntegerDivision => "integer division".into(),
        NonInvertible::Power => "a power".into(),
        NonInvertible::ComparisonOrLogical => "a comparison or logical operation".into(),
        NonInvertible::Modulo => "`mod`".into(),
        NonInvertible::Intrinsic(f) => format!("`{f}`"),
        NonInvertible::Indirection(a) => format!("an indirection through `{}`", name(unit, *a)),
        NonInvertible::NotRead => "an assignment that does not read it".into(),
        NonInvertible::ReadTwice => "an expression that reads it twice".into(),
        NonInvertible::FunctionReference => "a function reference".into(),
        NonInvertible::NoInverse => "an operation with no inverse".into(),
        NonInvertible::UnrestorableOperand => "an operand the reverse sweep cannot restore".into(),
    }
}

/// Why a variable is left to recording, as a clause about it.
pub fn ambiguity(why: Ambiguity) -> &'static str {
    match why {
        Ambiguity::InBranchOrNestedLoop => "it is assigned inside a branch or a nested loop",
        Ambiguity::LoopIndex { nested: true } => "it is the index of a nested loop",
        Ambiguity::LoopIndex { nested: false } => "it is the index of a DO loop",
        Ambiguity::SetByCall => "a call may modify it",
        Ambiguity::SetByRead => "a READ statement sets it",
        Ambiguity::SetByFunctionReference => "a function reference may modify it",
        Ambiguity::AssignedInPart => "it is assigned in part",
        Ambiguity::Equivalenced => "it is equivalenced",
        Ambiguity::RestoredByCheckpoint => {
            "a nested checkpointed loop reads it, and its snapshot restores it"
        }
    }
}

/// Why a variable's values are stored: the blocking operation or the
/// ambiguous definition.
pub fn reason(unit: &Unit, r: &Reason) -> String {
    match r {
        Reason::Blocked(b) => non_invertible(unit, &b.op),
        Reason::Ambiguous { why, .. } => ambiguity(*why).to_string(),
    }
}

/// A short label for why an ambiguous variable is left to recording; for
/// an assignment inside the loop `lp`, where it sits: `assigned in a
/// branch`, `assigned in a nested loop`.
pub fn short_reason(unit: &Unit, lp: Option<StmtId>, r: &Reason) -> String {
    let why = match r {
        Reason::Ambiguous { why, .. } => *why,
        Reason::Blocked(b) => return non_invertible(unit, &b.op),
    };
    let span = r.span();
    if let (Some(lp), Ambiguity::InBranchOrNestedLoop) = (lp, why) {
        // The nearest construct around the assignment, inside the loop.
        let target = stmt_holding(unit, span).map(|s| s.id);
        let mut stack: Vec<(StmtId, Option<StmtId>)> = vec![(lp, None)];
        while let Some((id, parent)) = stack.pop() {
            if Some(id) == target {
                let around = parent.and_then(|p| unit.stmts.get(p)).map(|s| &s.kind);
                return match around {
                    Some(StmtKind::Do { .. }) if parent != Some(lp) => "assigned in a nested loop",
                    Some(StmtKind::Do { .. }) | None => "assigned in the loop",
                    _ => "assigned in a branch",
                }
                .to_string();
            }
            if let Some(st) = unit.stmts.get(id) {
                for b in st.kind.blocks() {
                    stack.extend(b.iter().map(|c| (*c, Some(id))));
                }
            }
        }
        return "assigned in a branch or nested loop".into();
    }
    match why {
        Ambiguity::LoopIndex { nested: true } => "nested loop index",
        Ambiguity::LoopIndex { nested: false } => "DO loop index",
        Ambiguity::SetByCall => "set by a call",
        Ambiguity::SetByRead => "set by READ",
        Ambiguity::SetByFunctionReference => "set by a function",
        Ambiguity::InBranchOrNestedLoop => "assigned inside a branch or a nested loop",
        Ambiguity::AssignedInPart => "assigned in part",
        Ambiguity::Equivalenced => "equivalenced",
        Ambiguity::RestoredByCheckpoint => "restored by a checkpointed loop's snapshot",
    }
    .to_string()
}

// ---- Inlay hints ----------------------------------------------------------

/// `saves i, j` on a loop whose final values the forward sweep saves.
pub fn saves_hint(unit: &Unit, r: &LoopReport) -> Option<(String, String)> {
    if r.stmt.is_none() || r.saved_after_loop.is_empty() {
        return None;
    }
    let names: Vec<String> = r
        .saved_after_loop
        .iter()
        .map(|s| name(unit, *s).to_string())
        .collect();
    Some((
        format!("saves {}", names.join(", ")),
        format!(
            "After the loop the forward sweep saves the final value of {} once; the reversed loop starts from it and recovers the earlier values iteration by iteration",
            quoted(&names)
        ),
    ))
}

/// `l ← max(0, ilb)` on a counted WHILE loop whose final counter the
/// reversal computes.
pub fn computed_hint(unit: &Unit, cw: &CountedWhile) -> (String, String) {
    (
        trip_count_final(unit, cw),
        format!(
            "A counted WHILE loop: after it `{}` is its start plus the trip count times its step, so the reversed loop starts from that value instead of a saved one",
            name(unit, cw.var)
        ),
    )
}

fn quoted(names: &[String]) -> String {
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `m stored: assigned in a branch` for a variable left to recording.
pub fn ambiguous_hint(
    unit: &Unit,
    r: &LoopReport,
    x: &VarReport,
    src: &dyn Source,
) -> Option<(String, String)> {
    let why = x.reason.as_ref()?;
    let name = name(unit, x.var);
    let at = src
        .line(why.span())
        .map_or(String::new(), |l| format!(" (line {l})"));
    Some((
        format!("{name} stored: {}", short_reason(unit, r.stmt, why)),
        format!(
            "`{name}` cannot be recovered by inversion: {}{at}; {}",
            reason(unit, why),
            if r.stmt.is_some() {
                "TBR records it instead: the forward sweep pushes it each time it is overwritten and the reverse sweep pops it"
            } else {
                "the forward sweep saves it at the end of each basic block whose adjoint reads it"
            }
        ),
    ))
}

/// What value of its variable a recovery is about, for a sentence (in a
/// unit with jumps, `lp` = None: the value an assignment overwrites).
fn value_of(src: &dyn Source, unit: &Unit, lp: Option<StmtId>, rc: &Recovery) -> String {
    if Some(rc.defined_at) == lp {
        return "its value when an iteration starts".into();
    }
    let when = if lp.is_some() { "after" } else { "before" };
    match stmt_line(src, unit, rc.defined_at) {
        Some(l) => format!("its value {when} line {l}"),
        None => "its value".into(),
    }
}

/// ` (line N)` of a statement, or nothing.
fn at_line(src: &dyn Source, st: &Stmt) -> String {
    src.line(st.span)
        .map_or(String::new(), |l| format!(" (line {l})"))
}

/// When a stored value is pushed: each iteration of a loop, or each time
/// its assignment runs in a unit with jumps.
fn pushed_when(src: &dyn Source, r: &LoopReport, def: &Stmt) -> String {
    match (r.stmt, src.line(def.span)) {
        (Some(_), _) => "each iteration".into(),
        (None, Some(l)) => format!("each time line {l} overwrites it"),
        (None, None) => "each time it is overwritten".into(),
    }
}

/// The hint of one recovery of `x` (none for a final value, which the
/// loop's own hints cover): `k ← j - 2`, `m ← k + 3 + l recomputed`,
/// `k stored: `max``.
pub fn recovery_hint(
    unit: &Unit,
    r: &LoopReport,
    x: &VarReport,
    rc: &Recovery,
    src: &dyn Source,
) -> Option<(String, String)> {
    let name = name(unit, x.var);
    let def = unit.stmts.get(rc.defined_at)?;
    let value = value_of(src, unit, r.stmt, rc);
    Some(match rc.choice {
        Choice::Final => return None,
        Choice::Inverted => {
            let inverted = rc.inverts.and_then(|s| unit.stmts.get(s));
            let how = match inverted {
                Some(s) => format!(
                    "by inverting `{}`{}",
                    src.stmt_text(s).unwrap_or_default(),
                    at_line(src, s)
                ),
                None => "by inversion".into(),
            };
            (
                formula(unit, &rc.formula),
                format!("The reverse sweep recovers `{name}` ({value}) {how}: nothing is stored"),
            )
        }
        Choice::Recomputed => {
            let how = if Some(rc.defined_at) == r.stmt {
                format!("({value}) by evaluating it again")
            } else {
                format!(
                    "by running `{}`{} again",
                    src.stmt_text(def).unwrap_or_default(),
                    at_line(src, def)
                )
            };
            (
                format!("{} recomputed", formula(unit, &rc.formula)),
                format!("The reverse sweep recomputes `{name}` {how}: nothing is stored"),
            )
        }
        Choice::Stored => {
            let (label, why) = match &rc.blocker {
                Some(b) => {
                    let what = non_invertible(unit, &b.op);
                    (
                        format!("{name} stored: {what}"),
                        format!(
                            " ({what}{})",
                            src.line(b.span)
                                .map_or(String::new(), |l| format!(" at line {l}"))
                        ),
                    )
                }
                None => (format!("{name} stored"), String::new()),
            };
            (
                label,
                format!(
                    "`{name}` ({value}) cannot be recovered by inversion{why}: the forward sweep pushes it {} and the reverse sweep pops it",
                    pushed_when(src, r, def)
                ),
            )
        }
    })
}

// ---- Hover ----------------------------------------------------------------

/// The hover's paragraph on how the reverse sweep recovers `x` in the
/// loop (or unit with jumps) of report `r`.
pub fn hover(unit: &Unit, r: &LoopReport, x: &VarReport, src: &dyn Source) -> String {
    let mut md = String::new();
    let line = |span: Span| or_unknown(src.line(span));
    let stmt_line = |id: StmtId| or_unknown(stmt_line(src, unit, id));
    let _ = match r.stmt {
        Some(lp) => write!(
            md,
            "\n**Address recovery** (loop at line {}):",
            stmt_line(lp)
        ),
        None => write!(
            md,
            "\n**Address recovery** (unit with jumps, reversed through its basic blocks):"
        ),
    };
    if x.ambiguous {
        let (why, span) = match &x.reason {
            Some(rs) => (reason(unit, rs), rs.span()),
            None => (
                "it is written where the loop's plan cannot follow it".into(),
                r.stmt
                    .and_then(|s| unit.stmts.get(s))
                    .map_or(unit.name_span, |st| st.span),
            ),
        };
        let how = match r.stmt {
            Some(_) => "stored each time it is overwritten",
            None => "saved at the end of each basic block whose adjoint reads it",
        };
        let who = match r.stmt {
            Some(_) => " (TBR records it)",
            None => "",
        };
        let _ = writeln!(md, " {how}: {why} at line {}{who}.", line(span));
        return md;
    }
    let each = if r.stmt.is_some() {
        "each iteration"
    } else {
        "each time it is overwritten there"
    };
    let what = |rc: &Recovery| match rc.choice {
        Choice::Final
            if r.computed_after_loop
                .as_ref()
                .is_some_and(|cw| cw.var == x.var) =>
        {
            format!(
                "final value computed from the trip count — {}",
                formula(unit, &rc.formula)
            )
        }
        Choice::Final => "final value saved once after the loop".to_string(),
        Choice::Inverted => format!(
            "inverted — {}{}",
            formula(unit, &rc.formula),
            rc.inverts.map_or(String::new(), |s| format!(
                " (inverting line {})",
                stmt_line(s)
            ))
        ),
        Choice::Recomputed => {
            if Some(rc.defined_at) == r.stmt {
                format!("recomputed — {}", formula(unit, &rc.formula))
            } else {
                format!(
                    "recomputed — {} (running line {} again)",
                    formula(unit, &rc.formula),
                    stmt_line(rc.defined_at)
                )
            }
        }
        Choice::Stored => match &rc.blocker {
            Some(b) => format!(
                "stored {each}: {} at line {}",
                non_invertible(unit, &b.op),
                line(b.span)
            ),
            None => format!("stored {each}"),
        },
    };
    let which = |rc: &Recovery| {
        if Some(rc.defined_at) == r.stmt {
            "value when an iteration starts".to_string()
        } else if r.stmt.is_none() {
            format!("value before line {}", stmt_line(rc.defined_at))
        } else {
            format!("value after line {}", stmt_line(rc.defined_at))
        }
    };
    match x.recoveries.as_slice() {
        [rc] => {
            let _ = writeln!(md, " {}.", what(rc));
        }
        all => {
            let _ = writeln!(md, " {}", x.choice.as_str());
            for rc in all {
                let _ = writeln!(md, "- {}: {}", which(rc), what(rc));
            }
        }
    }
    md
}

// ---- Diagnostics ----------------------------------------------------------

/// The message of the `address-stored` note on a variable stored because
/// of a blocking operation or an ambiguous definition (none when the
/// game stored it by choice alone: not a problem in the source).
pub fn stored_message(
    unit: &Unit,
    r: &LoopReport,
    x: &VarReport,
    src: &dyn Source,
) -> Option<String> {
    let why = x.reason.as_ref()?;
    let line = or_unknown(src.line(why.span()));
    let when = match (x.ambiguous, r.stmt) {
        (false, Some(_)) => "it is stored each iteration",
        (true, Some(_)) => "it is stored each time it is overwritten",
        (false, None) => "it is stored each time it is overwritten there",
        (true, None) => "it is saved at the end of each basic block whose adjoint reads it",
    };
    Some(format!(
        "index {} cannot be recovered by inversion: {} at line {line}; {when}",
        name(unit, x.var),
        reason(unit, why)
    ))
}

// ---- Command line ---------------------------------------------------------

/// `dfort analyze`'s text for one report, line by line.
pub fn report_lines(unit: &Unit, l: &LoopReport, src: &dyn Source) -> Vec<String> {
    let line = |span: Span| src.line(span).unwrap_or(0);
    let stmt_line = |id: StmtId| stmt_line(src, unit, id).unwrap_or(0);
    let names = |v: &[SymbolId]| {
        v.iter()
            .map(|s| name(unit, *s).to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut out = Vec::new();
    match l.stmt {
        None => out.push(format!(
            "  unit with jumps (reversed through its basic blocks): places that push an address: {}",
            l.stored_per_iteration
        )),
        Some(lp) => {
            out.push(format!(
                "  loop at line {}: addresses stored per iteration: {}{}",
                stmt_line(lp),
                l.stored_per_iteration,
                if l.saved_after_loop.is_empty() {
                    String::new()
                } else {
                    format!(
                        "; saved once after the loop: {}",
                        names(&l.saved_after_loop)
                    )
                },
            ));
            if let Some(cw) = &l.computed_after_loop {
                out.push(format!(
                    "    computed after the loop from the trip count: {}",
                    trip_count_final(unit, cw)
                ));
            }
        }
    }
    // In a unit with jumps a recovery is of the value an assignment
    // overwrites; in a loop, of the value it defines.
    let of = if l.stmt.is_some() { "of" } else { "before" };
    for v in &l.vars {
        let why = v
            .reason
            .as_ref()
            .map(|r| format!(" ({} at line {})", reason(unit, r), line(r.span())))
            .unwrap_or_default();
        out.push(format!(
            "    {}: {}{why}",
            name(unit, v.var),
            v.choice.as_str()
        ));
        for r in &v.recoveries {
            let inv = r
                .inverts
                .map(|s| format!(" inverting line {}", stmt_line(s)))
                .unwrap_or_default();
            out.push(format!(
                "      value {of} line {}: {} {}{inv}",
                stmt_line(r.defined_at),
                r.choice.as_str(),
                formula(unit, &r.formula)
            ));
        }
    }
    out
}

/// The text of a counted WHILE loop's computed final counter, for
/// `dfort analyze --format json`'s `computed_after_loop.text`.
pub fn computed_after_loop(unit: &Unit, cw: &CountedWhile) -> String {
    trip_count_final(unit, cw)
}

/// Why one reference is saved around a call to `callee` (a CALL's
/// checkpoint, [`dfort_analysis::checkpoint`]).
pub fn call_save(unit: &Unit, saved: &Saved, callee: &str) -> String {
    let reason = match saved.why {
        SaveWhy::AroundCall => {
            "the call may overwrite it and this unit's adjoint needs it".to_string()
        }
        SaveWhy::Snapshot => format!("the adjoint of `{callee}` reads it"),
        SaveWhy::Index => format!("an index of an actual of `{callee}`"),
    };
    format!("`{}` ({reason})", saved.text(unit))
}

/// Why a module variable the unit does not declare is saved around a
/// call to `callee`.
pub fn hidden_save(name: &str, module: &str, callee: &str) -> String {
    format!(
        "`{name}` of module `{module}` (the adjoint of `{callee}` reads it; this unit does not declare it)"
    )
}

/// Why a member of a COMMON block the unit does not declare is saved
/// around a call to `callee` (the adjoint declares the block).
pub fn hidden_common_save(name: &str, block: &str, callee: &str) -> String {
    format!(
        "`{name}` of COMMON /{block}/ (the adjoint of `{callee}` reads it; this unit does not declare the block, its adjoint does)"
    )
}

/// The tooltip of a CALL's checkpoint hint, from the sentences of
/// [`call_save`] and [`hidden_save`].
pub fn checkpoint_tooltip(callee: &str, why: &[String], split: bool) -> String {
    let adjoint = if split { "_rev" } else { "_b" };
    format!(
        "{} `{callee}`: the forward sweep pushes {} before the call; the reverse sweep pops them around `{callee}{adjoint}`",
        crate::hints::CHECKPOINT_TOOLTIP,
        why.join(", ")
    )
}

/// The tooltip of the `split` hint on a CALL the adjoint runs in split
/// mode ([`dfort_analysis::split`]).
pub fn split_call_tooltip(callee: &str) -> String {
    format!(
        "The adjoint runs this call in split mode: the forward sweep calls `{callee}_fwd`, which runs `{callee}` and records on the tape what its reverse needs; the reverse sweep calls `{callee}_rev`. `{callee}` runs once instead of twice, and no snapshot is saved: the call is not inside a loop, and `{callee}`'s locals are scalars the tape carries from one to the other"
    )
}

/// One step of a why-chain of activity ([`dfort_analysis::explain`]).
pub fn why(unit: &Unit, w: &Why) -> String {
    let name = |s: &SymbolId| unit.symbol(*s).name.clone();
    match w {
        // A SAVE'd local is an independent or a dependent of its
        // procedure's calls: it keeps its value from one call to the next.
        Why::Independent(v) if dfort_ir::queries::saved_local(unit, *v) => format!(
            "{} is SAVE'd: on entry it holds what an earlier call left, which depends on the independents",
            name(v)
        ),
        Why::Dependent(v) if dfort_ir::queries::saved_local(unit, *v) => format!(
            "{} is SAVE'd: a later call reads what it keeps, and a dependent depends on that",
            name(v)
        ),
        Why::Independent(v) => format!("{} is an independent", name(v)),
        Why::Dependent(v) => format!("{} is a dependent", name(v)),
        Why::DependsOn { target, on } => format!(
            "{} depends on {} through this statement",
            name(target),
            name(on)
        ),
        Why::SetByCall(v) => format!("{} is set from varied arguments by this call", name(v)),
        Why::VariedByContext(v) => format!("{} is varied in this unit's calling context", name(v)),
        Why::UsefulThroughCall(v) => format!(
            "{} is useful through a call or its calling context",
            name(v)
        ),
        Why::SharesMemory { var, with } => format!(
            "{} may name the same memory as {} (a pointer association or EQUIVALENCE)",
            name(var),
            name(with)
        ),
    }
}

/// The tooltip of the `push(p =>)` hint on a pointer statement.
pub fn association_push_tooltip(names: &[String]) -> String {
    let names: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
    format!(
        "The forward sweep saves the association of {} (and of its derivative pointer) before this statement changes it; the reverse sweep restores it, so the adjoint reads every pointer as the program had it",
        names.join(", ")
    )
}

/// The tooltip of the `active` hint after an assignment to `name`.
pub fn active_tooltip(name: &str) -> String {
    format!("`{name}` is active after this statement: it depends on an independent and a dependent depends on it")
}

/// The tooltip of the `reversed by blocks` hint.
pub const BLOCKS_TOOLTIP: &str = "This unit's jumps (GO TO, computed GO TO, arithmetic IF, or an EXIT, CYCLE or RETURN that cannot be structured) make the adjoint reverse it through basic-block ids: the forward sweep records each block whose adjoint does work as it leaves it, the reverse sweep pops them";

/// The hover on a variable whose value the reverse sweep recomputes
/// (`place`: where, e.g. " of the loop at line 12").
pub fn recomputed(name: &str, place: &str) -> String {
    format!(
        "**Recomputed, not recorded:** the adjoint needs the value this statement gives `{name}`; the reverse sweep computes it again at the start of each reversed iteration{place} from values nothing in the loop overwrites, so the forward sweep pushes nothing for it (paper 003's forward recomputation)."
    )
}

/// The tooltip of a `push(…)` hint on a statement whose overwritten
/// values of `names` TBR records.
pub fn tbr_push_tooltip(names: &[String]) -> String {
    format!(
        "TBR: this statement overwrites {} whose old value the adjoint needs; the forward sweep pushes it first and the reverse sweep pops it",
        quoted(names)
    )
}

/// The tooltip of the hint on a function reference whose result the
/// forward sweep pushes.
pub fn result_push_tooltip(function: &str) -> String {
    format!(
        "The adjoint runs this reference to `{function}` as a call and keeps its result in a temporary: this assignment's adjoint reads the result (it is not only added or scaled by something that does not vary), so the forward sweep pushes it after the reference and the reverse sweep pops it"
    )
}

/// The tooltip of the hint on a function reference that is an actual of
/// a reference to `outer` whose adjoint reads it.
pub fn nested_result_push_tooltip(function: &str, outer: &str) -> String {
    format!(
        "The adjoint keeps the result of this reference to `{function}` in a temporary, an actual of the reference to `{outer}` around it, whose adjoint reads it: the forward sweep pushes it before that call (its snapshot) and the reverse sweep pops it"
    )
}

/// The label and tooltip of a construct's reversal.
pub fn reversal_hint(unit: &Unit, r: &Reversal) -> Option<(String, String)> {
    Some(match r {
        Reversal::CountedWhile(cw) => (
            format!("trips ← {}", cw.trip_count(unit)),
            "A counted WHILE loop (its counter is set just before it and only ever increased by a constant, its bound is unchanged inside): the reverse sweep computes its trip count from the bound, so nothing is recorded".to_string(),
        ),
        Reversal::PushBranch => (
            "push(branch)".to_string(),
            "The adjoint's forward sweep records which branch runs; the reverse sweep pops it to take the same branch backwards".to_string(),
        ),
        Reversal::Replay { index } => (
            format!("replay {}", unit.symbol(*index).name),
            "A counted loop: the reverse sweep replays it backwards from its bounds, so nothing per iteration is recorded (the index is saved once around the loop)".to_string(),
        ),
        Reversal::PushTrips => (
            "push(trips)".to_string(),
            "A loop without a counted header: the forward sweep counts its iterations and records the count; the reverse sweep runs that many".to_string(),
        ),
        Reversal::LeftByExit => (
            "push(trips)".to_string(),
            "A loop left by EXIT, or closed by a backward GO TO and tested at its end: the adjoint runs it as a DO WHILE on a flag; the forward sweep counts its iterations and records the count, the reverse sweep runs that many".to_string(),
        ),
        Reversal::MaskPushed => (
            "push(mask)".to_string(),
            "A WHERE whose masks read something that may change before the adjoint gets back here (an assignment that can run after the masks are evaluated, a call, a function reference): the forward sweep records each arm's mask (64 elements a tape slot) after the arm; the reverse sweep pops it and runs the arm's adjoint under it".to_string(),
        ),
        Reversal::BranchRecomputed => (
            "recompute branch".to_string(),
            "An IF or SELECT CASE whose conditions read nothing that changes once it starts (no statement that can run from here on, in its arms, after it or in the rest of an enclosing loop, writes them; a replayed loop's index has its value back): the reverse sweep evaluates them again to take the same branch backwards, so nothing is recorded".to_string(),
        ),
        Reversal::MaskRecomputed => (
            "recompute mask".to_string(),
            "A WHERE whose masks read nothing that changes once it starts: the reverse sweep evaluates them again and runs each arm's adjoint under its mask, so nothing is recorded".to_string(),
        ),
        Reversal::Binomial(b) => binomial_hint(unit, b),
        Reversal::BoundsChangeInside
        | Reversal::BinomialRefused(_)
        | Reversal::NothingToReverse => return None,
    })
}

/// The label and tooltip of a loop checkpointed with a binomial
/// schedule: its snapshots, what they hold, and the steps run again.
pub fn binomial_hint(unit: &Unit, b: &dfort_analysis::binomial::Binomial) -> (String, String) {
    let names = |ids: &[dfort_ir::SymbolId]| -> Vec<String> {
        ids.iter().map(|s| unit.symbol(*s).name.clone()).collect()
    };
    let carried = names(&b.carried);
    let label = format!("binomial({}) ckp {}", b.snapshots, carried.join(", "));
    let size = match b.snapshot_bytes {
        Some(bytes) => format!(
            "{} bytes each, {} bytes for all {} at once",
            bytes,
            bytes.saturating_mul(u64::from(b.snapshots)),
            b.snapshots
        ),
        None => "of a size known when the loop runs".to_string(),
    };
    let steps = match b.steps {
        Some(n) => format!(
            "This loop's {n} steps: {} steps run again (each step is also run once with recording), against a tape of every step without checkpointing.",
            b.recomputed(n)
        ),
        None => format!(
            "For n steps the reverse sweep runs t(n, {s}) = r·n − C(r+{s}, r−1) steps again (r the least number with n ≤ C({s}+r, r)): e.g. n = 1,000 runs {} again.",
            b.recomputed(1000),
            s = b.snapshots
        ),
    };
    let extra = names(&b.entry);
    let entry = if extra.is_empty() {
        String::new()
    } else {
        format!(
            " At the loop's entry the forward sweep also saves {}, restored when the loop's adjoint ends.",
            quoted(&extra)
        )
    };
    let hidden = if b.hidden_described.is_empty() {
        String::new()
    } else {
        format!(
            " and, of the globals its calls change that `{}` does not declare, {}",
            unit.name,
            b.hidden_described.join(", ")
        )
    };
    let tooltip = format!(
        "Binomial checkpointing (Griewank's Revolve schedule, `binomial-ckp`): the forward sweep runs this loop without recording it; the reverse sweep runs its steps again from at most {} snapshots of the loop-carried state {}{hidden} ({size}), recording and reversing one step at a time. {steps}{entry}",
        b.snapshots,
        quoted(&carried),
    );
    (label, tooltip)
}

/// The hover's sentence on a statement TBR asks to record but the
/// forward sweep drops.
pub const DROPPED_STATEMENT: &str = "Not recorded: the adjoint's forward sweep drops this statement (nothing its reverse sweep reads depends on it).";

/// The hover's sentence on an overwrite of `name` nothing needs.
pub fn not_needed(name: &str) -> String {
    format!("Not recorded: no adjoint statement needs the value of `{name}` this statement overwrites (TBR).")
}

/// The hover's sentence on an overwrite of an array argument the unit
/// leaves its callers to save ([`dfort_analysis::left_to_callers`]).
pub fn left_to_callers(name: &str) -> String {
    format!("Not recorded here: each caller saves the part of `{name}` this routine touches around its call, and restores it after this routine's adjoint. This routine's own adjoint needs none of the values it overwrites (or at most one per element, which it records itself), and it overwrites elements of `{name}` in more loops than `{name}` has dimensions, so recording each overwrite would push elements many times.")
}

/// The hover's sentence on an overwrite of `name` inside the loop at
/// `line` whose adjoint's reads of `name` are all of final values
/// ([`dfort_analysis::final_reads`]).
pub fn final_reads(name: &str, line: u32) -> String {
    format!("Not recorded: inside the loop at line {line}, the adjoint reads only elements of `{name}` that no later iteration overwrites (their final values, still there when the reverse sweep runs), and this statement never overwrites one before it is read.")
}

/// The hover's sentence on a SAVE'd local of `unit` that the adjoint
/// shares between its routines ([`dfort_analysis::saved_state`]).
pub fn shared_state(name: &str, unit: &str) -> String {
    format!("The adjoint keeps `{name}` in one place all its routines share (module `dfort_save_{unit}`), saved and restored around calls like a module variable; its adjoint accumulates from one call to the next, and wherever the adjoint would run `{unit}` or a procedure calling it, it runs a copy (`{unit}_p`) that uses the shared `{name}`.")
}

/// The hover's sentence on the other lines (sorted) where `name` is
/// recorded.
pub fn recorded_elsewhere(name: &str, lines: &[u32]) -> String {
    let many = lines.len() > 1;
    format!(
        "`{name}` is recorded for the adjoint where line{} {} overwrite{} it.",
        if many { "s" } else { "" },
        lines
            .iter()
            .map(|l| l.to_string())
            .collect::<Vec<_>>()
            .join(", "),
        if many { "" } else { "s" }
    )
}

/// What goes wrong when the intrinsic `name` is differentiated (the
/// intrinsic table's kink).
pub fn kink(name: &str) -> Option<&'static str> {
    dfort_ir::intrinsics::lookup(name)?.kink
}

/// The `non-differentiable` diagnostic: `name` of the active `var`,
/// what goes wrong ([`kink`]).
pub fn kink_message(name: &str, var: &str, why: &str) -> String {
    format!("`{name}` of the active value `{var}` {why}")
}

/// The `cut-by-io` diagnostic of `cut`, on its READ; `write_at` is where
/// the WRITE is (`file:line`).
pub fn io_cut_message(cut: &dfort_analysis::io_cuts::IoCut, write_at: &str) -> String {
    format!(
        "`{}` gets derivative 0 here: this READ may read back the value of `{}` that the WRITE at {write_at} wrote, and dfort treats what a READ reads as passive, so the derivative through the file is lost",
        cut.variable, cut.written
    )
}

/// `dfort analyze`'s text report of one unit (with the why-chains of
/// `explain` when asked).
pub fn unit_text(s: &UnitSummary, explain: Option<&str>, src: &dyn Source) -> Vec<String> {
    let unit = s.unit;
    let line = |id: StmtId| src.line(unit.stmt(id).span).unwrap_or(0);
    let mut out = vec![
        format!("{} {}", unit.kind.as_str(), unit.name),
        format!(
            "  independents: {} ; dependents: {}  (from {})",
            names(unit, &s.independents).join(", "),
            names(unit, &s.dependents).join(", "),
            s.roles_from
        ),
        format!("  active: {}", names(unit, &s.active).join(", ")),
    ];
    if s.pushed.is_empty() {
        out.push("  records: none".into());
    }
    for p in s.pushed {
        out.push(format!(
            "  line {}: record {} before it is overwritten",
            line(p.stmt),
            unit.symbol(p.variable).name
        ));
    }
    for r in &s.pushed_results {
        let name = |u: dfort_ir::UnitId| s.program.units.get(u).map_or("?", |c| c.name.as_str());
        let by = match r.read_by {
            None => "the assignment's adjoint".to_string(),
            Some(outer) => format!("the adjoint of `{}`", name(outer)),
        };
        out.push(format!(
            "  line {}: record the result of {}(…) ({by} reads it)",
            src.line(r.span).unwrap_or(0),
            name(r.callee)
        ));
    }
    out.push("  statements:".into());
    for st in unit.stmts.iter().take(s.source_len) {
        let StmtKind::Assign { lhs, rhs } = &st.kind else {
            continue;
        };
        let active =
            dfort_ir::dp::target(lhs).is_some_and(|(t, _)| s.activity.active_after(st.id, t));
        let pushes: Vec<&str> = s
            .pushed
            .iter()
            .filter(|p| p.stmt == st.id)
            .map(|p| unit.symbol(p.variable).name.as_str())
            .collect();
        out.push(format!(
            "    line {:>4}: {} = {}   [{}{}]",
            line(st.id),
            dfort_ir::dump::expr(unit, lhs),
            dfort_ir::dump::expr(unit, rhs),
            if active { "active" } else { "passive" },
            if pushes.is_empty() {
                String::new()
            } else {
                format!(", records {}", pushes.join(", "))
            }
        ));
    }
    for (st, how) in s.constructs() {
        out.push(format!("  line {}: reversal {}", line(st), how.kind()));
        if let Reversal::Binomial(b) = how {
            out.push(format!("    {}", binomial_hint(unit, b).1));
        }
    }
    for c in s.calls.iter().filter(|c| c.checkpoint.split) {
        out.push(format!("  line {}: call in split mode", line(c.stmt)));
    }
    for l in s.loops {
        out.extend(report_lines(unit, l, src));
    }
    if let Some(var) = explain {
        out.extend(explain_lines(s, &var.to_ascii_lowercase(), src));
    }
    if !s.dead.is_empty() {
        let lines: Vec<String> = s.dead.iter().map(|d| line(*d).to_string()).collect();
        out.push(format!(
            "  the adjoint's forward sweep does not need lines {}",
            lines.join(", ")
        ));
    }
    out
}

/// The why-chains of `dfort analyze --explain VAR` in one unit.
fn explain_lines(s: &UnitSummary, var: &str, src: &dyn Source) -> Vec<String> {
    use dfort_analysis::explain::Step;
    let unit = s.unit;
    let Some(v) = unit.lookup(var) else {
        return Vec::new();
    };
    let mut out = vec![format!(
        "  {var} is {}active. Why:",
        if s.active.contains_id(v) { "" } else { "not " }
    )];
    let show = |title: &str, steps: Vec<Step>, out: &mut Vec<String>| {
        out.push(format!("    {title}:"));
        for st in steps {
            match st.stmt {
                Some(id) => out.push(format!(
                    "      line {}: {}",
                    src.line(unit.stmt(id).span).unwrap_or(0),
                    why(unit, &st.why)
                )),
                None => out.push(format!("      {}", why(unit, &st.why))),
            }
        }
    };
    let act = s.activity;
    if act.varied_after.iter().any(|x| x.contains_id(v)) || s.independents.contains_id(v) {
        show(
            "varied",
            act.varied_chain(unit, &s.independents, v),
            &mut out,
        );
    } else {
        out.push("    not varied: it never depends on an independent".into());
    }
    if act.useful_before.iter().any(|x| x.contains_id(v)) || s.dependents.contains_id(v) {
        show("useful", act.useful_chain(unit, &s.dependents, v), &mut out);
    } else {
        out.push("    not useful: no dependent depends on it".into());
    }
    out
}

/// The steps of a local Jacobian's best elimination sequence, each named
/// by the graph's labels: a vertex, or an edge eliminated front or back.
pub fn elimination_steps(j: &LocalJacobian) -> Vec<String> {
    let l = |v: usize| j.graph.labels.get(v).map_or("?", String::as_str);
    let seq = &j.costs.best_sequence;
    if !j.costs.best_faces.is_empty() {
        return j
            .costs
            .best_faces
            .iter()
            .map(|&(a, b, c)| format!("face {}→{}→{}", l(a), l(b), l(c)))
            .collect();
    }
    seq.iter()
        .map(|st| match *st {
            Step::Vertex(v) => l(v).to_string(),
            Step::Front(a, b) => format!("front {}→{}", l(a), l(b)),
            Step::Back(a, b) => format!("back {}→{}", l(a), l(b)),
            Step::Face(..) => String::new(),
        })
        .collect()
}

/// A local Jacobian's size and the multiplications of each elimination,
/// in one line (the code lens's title).
pub fn jacobian_title(j: &LocalJacobian) -> String {
    let (d, c) = (&j.graph.dag, &j.costs);
    let chosen = match &j.decision {
        Decision::Preaccumulated(a, Jacobian::Pushed) => format!(
            " · preaccumulated: {} tape entries instead of about {}",
            a.entries.len(),
            j.statement_level
        ),
        Decision::Preaccumulated(_, Jacobian::Recomputed) => format!(
            " · preaccumulated, recomputed in the reverse sweep: no tape entry instead of about {}",
            j.statement_level
        ),
        Decision::StatementLevel(_) => " · statement-level adjoint".to_string(),
        Decision::NotAsked => String::new(),
    };
    format!(
        "local Jacobian {}×{} · |E| = {} · forward {}, reverse {}, best {} ×{chosen}",
        d.m,
        d.n,
        d.edges.len(),
        c.forward,
        c.reverse,
        c.best
    )
}

/// What the adjoint does with a local graph, as a clause.
pub fn jacobian_decision(j: &LocalJacobian) -> String {
    let values = match j.statement_level {
        1 => "about 1 value".to_string(),
        n => format!("about {n} values"),
    };
    match &j.decision {
        Decision::NotAsked => "statement-level adjoint (preaccumulation off)".into(),
        Decision::Preaccumulated(a, Jacobian::Pushed) => format!(
            "preaccumulated: {} Jacobian {} pushed (statement level: {values})",
            a.entries.len(),
            if a.entries.len() == 1 { "entry" } else { "entries" },
        ),
        Decision::Preaccumulated(_, Jacobian::Recomputed) => format!(
            "preaccumulated: Jacobian recomputed in the reverse sweep from inputs nothing after it overwrites, nothing pushed (statement level: {values})"
        ),
        Decision::StatementLevel(why) => {
            format!("statement-level adjoint: {}", why.as_sentence())
        }
    }
}

/// `dfort analyze`'s lines on the local Jacobians of a unit's blocks.
pub fn jacobian_lines(unit: &Unit, blocks: &[BlockJacobians], src: &dyn Source) -> Vec<String> {
    let line = |id: StmtId| src.line(unit.stmt(id).span).unwrap_or(0);
    let mut out = Vec::new();
    for j in blocks.iter().flat_map(|b| &b.jacobians) {
        let (d, c) = (&j.graph.dag, &j.costs);
        let (Some(first), Some(last)) = (j.graph.stmts.first(), j.graph.stmts.last()) else {
            continue;
        };
        if out.is_empty() {
            out.push("  local Jacobians (papers 002, 004):".into());
        }
        let (a, b) = (line(*first), line(*last));
        let steps = elimination_steps(j);
        out.push(format!(
            "    {}: {}×{}, n {}, p {}, m {}, |E| {}, {} entries; multiplications: forward {}, reverse {}, Markowitz {}, optimal vertex {}, edge {}{}, face {}; {}; {}",
            if a == b { format!("line {a}") } else { format!("lines {a}-{b}") },
            d.m,
            d.n,
            d.n,
            d.p,
            d.m,
            d.edges.len(),
            c.jacobian_entries,
            c.forward,
            c.reverse,
            c.markowitz,
            c.optimal_vertex.map_or("not searched".into(), |v| v.to_string()),
            c.edge,
            if c.edge_exhaustive { "" } else { " (greedy)" },
            match c.face {
                Some(v) => v.to_string(),
                None if d.edges.len() > face_elimination::FACE_EDGES => "not searched".into(),
                None => format!("search stopped at {} states", face_elimination::FACE_STATES),
            },
            if steps.is_empty() {
                "nothing to eliminate".to_string()
            } else {
                format!("best {} by {}: {}", c.best, c.best_method.as_str(), steps.join(", "))
            },
            jacobian_decision(j)
        ));
        if let Some((st, var)) = &j.graph.split_at {
            out.push(format!(
                "      ends before line {}: its use of {var} may read a value this graph defines or an older one (paper 002 §5)",
                line(*st)
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::hints::{inlay_hints, HintKind, HintKinds};
    use crate::host::Host;
    use dfort_syntax::TextRange;
    use std::path::Path;

    /// The labels of the address hints of `src`.
    fn labels(src: &str) -> Vec<String> {
        let path = Path::new("/render-tests/reasons.f90");
        let mut host = Host::default();
        host.set_text(path, src, true, 1);
        let snap = host.snapshot();
        inlay_hints(
            &snap,
            path,
            TextRange::new(0, src.len() as u32),
            HintKinds::default(),
        )
        .into_iter()
        .filter(|h| h.kind == HintKind::Address)
        .map(|h| h.label)
        .collect()
    }

    fn has(labels: &[String], want: &str) {
        assert!(
            labels.iter().any(|l| l == want),
            "no {want:?} in {labels:#?}"
        );
    }

    const BLOCKED: &str = "subroutine blocked(a, n, idx)
  implicit none
  integer, intent(in) :: n
  integer, intent(in) :: idx(n)
  real(8), intent(inout) :: a(1000)
  integer :: i, j, k, l, p, q, r
!$ad independent(a)
!$ad dependent(a)
  j = 1
  k = 1
  l = 1
  p = 1
  q = 1
  r = 1
  do i = 1, n
    j = j * k
    a(j) = a(j) * a(j)
    k = mod(k, 7) + 1
    a(k) = a(k) * a(k)
    l = modulo(l + 3, 9) + 1
    a(l) = a(l) * a(l)
    p = p ** 2
    a(p) = a(p) * a(p)
    q = idx(q)
    a(q) = a(q) * a(q)
    r = abs(r - 3) + 1
    a(r) = a(r) * a(r)
  end do
end subroutine blocked
";

    #[test]
    fn each_blocking_operation_has_its_label() {
        let l = labels(BLOCKED);
        has(&l, "j stored: a product of two variables");
        // `modulo` is named as `mod`.
        has(&l, "k stored: `mod`");
        has(&l, "l stored: `mod`");
        has(&l, "p stored: a power");
        has(&l, "q stored: an indirection through `idx`");
        has(&l, "r stored: `abs`");
        has(&l, "saves j, k, l, p, q, r");
    }

    const AMBIGUOUS: &str = "subroutine ambiguous(a, n)
  implicit none
  integer, intent(in) :: n
  real(8), intent(inout) :: a(1000)
  integer :: i, j, m
!$ad independent(a)
!$ad dependent(a)
  j = 1
  do i = 1, n
    read(*, *) m
    a(m) = a(m) * a(m)
    j = f(j)
    a(j) = a(j) * a(j)
  end do
contains
  integer function f(x)
    integer :: x
    x = x + 1
    f = x
  end function f
end subroutine ambiguous
";

    #[test]
    fn each_ambiguous_write_has_its_short_label() {
        let l = labels(AMBIGUOUS);
        has(&l, "m stored: set by READ");
        has(&l, "j stored: set by a function");
    }

    const JUMPS: &str = "subroutine jumps(a, n)
  implicit none
  integer, intent(in) :: n
  real(8), intent(inout) :: a(1000)
  integer :: i, j, k, e1, e2
  equivalence (e1, e2)
!$ad independent(a)
!$ad dependent(a)
  j = 1
  k = 2
  e1 = 1
  i = 0
10 i = i + 1
  j = j + j
  a(j) = a(j) * a(j)
  k = k / 2
  if (k == 0) goto 15
  a(k) = a(k) * a(k)
15 e1 = e1 + 1
  a(e1) = a(e1) * a(e1)
  if (i < n) goto 10
end subroutine jumps
";

    #[test]
    fn a_unit_with_jumps_names_what_blocks_each_undo() {
        let l = labels(JUMPS);
        has(&l, "j stored: an expression that reads it twice");
        has(&l, "k stored: integer division");
        // No hint for `e1`: what makes it ambiguous is the unit's
        // EQUIVALENCE, not a statement; the diagnostic says so.
        assert!(!l.iter().any(|x| x.starts_with("e1 ")), "{l:#?}");
        let path = Path::new("/render-tests/jumps.f90");
        let mut host = Host::default();
        host.set_text(path, JUMPS, true, 1);
        let snap = host.snapshot();
        let notes: Vec<String> = crate::diagnostics::of_document(&snap, path)
            .into_iter()
            .filter(|d| d.code == "address-stored")
            .map(|d| d.message)
            .collect();
        has(
            &notes,
            "index e1 cannot be recovered by inversion: it is equivalenced at line 1; it is saved at the end of each basic block whose adjoint reads it",
        );
        has(
            &notes,
            "index k cannot be recovered by inversion: integer division at line 16; it is stored each time it is overwritten there",
        );
    }
}
