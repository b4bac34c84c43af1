//! Inlay hints: what the adjoint will do, shown where it happens.
//!
//! * `active` after the left-hand side of each assignment whose result is
//!   active (paper 000 §4);
//! * `push(x)` before each statement whose overwrite of `x` TBR records
//!   (§5), and before each CALL to a procedure with source what its
//!   checkpoint saves ([`dfort_analysis::checkpoint`]: what the call may
//!   overwrite that the adjoint needs, what the callee's adjoint reads,
//!   the indices of the actuals); `push(p =>)` before each pointer
//!   statement whose association the adjoint saves
//!   ([`dfort_ir::queries::recorded_associations`]); `push(g(…))` at each
//!   function reference whose result the assignment's adjoint reads, so
//!   that the forward sweep pushes the temporary holding it
//!   ([`dfort_analysis::references`]);
//! * what control-flow reversal records (paper 001), as the analysis
//!   decides it for the generator ([`dfort_analysis::reversal`]):
//!   `push(branch)` on IF and SELECT CASE, `push(trips)` on loops without
//!   a counted header and loops left by EXIT, `trips ← n` on counted
//!   WHILE loops, `replay i` on counted DO loops the reverse sweep replays
//!   from their bounds, `push(block)` on the jumps of units reversed
//!   through basic-block ids (and nothing on their IF and DO);
//! * how the reverse sweep gets back each address index of a DO loop
//!   (paper 003 §3–4, [`dfort_analysis::address_report`]), after the
//!   statement that defines the value (the DO statement for the value an
//!   iteration starts with): `k ← j - 2` (inverted), `m ← k + 3 + l
//!   recomputed`, `ii stored: integer division` (after the statement that
//!   blocks the inversion), `m stored: assigned in a branch` (left to
//!   TBR), and `saves j` on the DO statement for the final values the
//!   forward sweep saves once after the loop.
//!
//! Contract: hints of units the analyses reached and that have active
//! variables, inside the requested range, in document order.

use crate::host::Snapshot;
use crate::render;
use dfort_analysis::address_report::{Choice, LoopReport, VarReport};
use dfort_analysis::decisions::CheckpointedCall;
use dfort_analysis::dep::GlobalKey;
use dfort_analysis::references::PushedResult;
use dfort_ir::{ExprKind, Span, Stmt, StmtKind, Unit};
use dfort_syntax::chunks::{line_part_at, LinePart};
use dfort_syntax::{SourceForm, TextRange};

use std::path::Path;
use std::sync::Arc;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HintKind {
    Active,
    Push,
    Reversal,
    /// How an address index is recovered (inverted / recomputed / stored).
    Address,
}

/// Which kinds to show.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HintKinds {
    pub active: bool,
    pub push: bool,
    pub reversal: bool,
    pub address: bool,
}

impl Default for HintKinds {
    fn default() -> Self {
        HintKinds {
            active: true,
            push: true,
            reversal: true,
            address: true,
        }
    }
}

impl HintKinds {
    fn wants(&self, k: HintKind) -> bool {
        match k {
            HintKind::Active => self.active,
            HintKind::Push => self.push,
            HintKind::Reversal => self.reversal,
            HintKind::Address => self.address,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hint {
    /// Document byte offset the hint sits at.
    pub offset: u32,
    pub label: String,
    pub kind: HintKind,
    pub tooltip: String,
    /// The hint precedes the text at `offset` (else follows what is before it).
    pub before: bool,
    /// A `push(g(…))` hint's outer function: the reference the result is
    /// an actual of, whose adjoint reads it (its snapshot saves it);
    /// `None` when the assignment's adjoint reads it, and on other hints.
    pub read_by: Option<String>,
}

pub fn inlay_hints(snap: &Snapshot, path: &Path, range: TextRange, kinds: HintKinds) -> Vec<Hint> {
    let mut out = Vec::new();
    // What dfort wrote is not differentiated again: no hints on it.
    if snap
        .doc(path)
        .is_some_and(|d| crate::actions::is_generated(&d.text))
    {
        return out;
    }
    for unit in snap.units_of(path) {
        // Only units that reach into the requested range (the screen).
        let seen = snap
            .to_doc(unit.span.file, unit.span.range)
            .is_some_and(|(_, r)| r.start <= range.end && range.start <= r.end);
        if seen {
            unit_hints(snap, unit, &mut out);
        }
    }
    out.retain(|h| kinds.wants(h.kind) && range.start <= h.offset && h.offset <= range.end);
    out.sort_by_key(|h| (h.offset, h.kind as u8));
    separate_neighbours(&mut out);
    out
}

/// Hints that follow the same text (a DO WHILE's `saves i, j`, then how
/// each index is recovered) end with `;` but the last, so that their labels
/// do not read as one where a client draws them as plain text.
fn separate_neighbours(hints: &mut [Hint]) {
    for i in 1..hints.len() {
        let (a, b) = (&hints[i - 1], &hints[i]);
        if a.offset == b.offset && !a.before && !b.before {
            hints[i - 1].label.push(';');
        }
    }
}

fn unit_hints(snap: &Snapshot, unit: &Unit, out: &mut Vec<Hint>) {
    address_hints(snap, unit, out);
    let Some(act) = snap.analysis().activity.activity[unit.id].as_ref() else {
        return;
    };
    // The units the adjoint works in (as `dfort analyze` reports them).
    if !snap.analysis().differentiated(unit) {
        return;
    }
    let at = |range: TextRange, end: bool| {
        snap.to_doc(unit.span.file, range)
            .map(|(_, r)| if end { r.end } else { r.start })
    };
    for st in &unit.stmts {
        if let StmtKind::Assign { lhs, .. } = &st.kind {
            if let ExprKind::Var(s) | ExprKind::ArrayRef { array: s, .. } = &lhs.kind {
                if act.active_after(st.id, *s) {
                    if let Some(o) = at(lhs.span.range, true) {
                        out.push(Hint {
                            offset: o,
                            label: "active".into(),
                            kind: HintKind::Active,
                            tooltip: crate::render::active_tooltip(&unit.symbol(*s).name),
                            before: false,
                            read_by: None,
                        });
                    }
                }
            }
        }
    }
    // How the adjoint reverses each construct and what its forward sweep
    // pushes, as the analysis decided them for the generator on the unit
    // as analysed (EXIT and CYCLE structured: statements it adds sit at
    // the span of the construct they come from).
    let (Some(decided), Some(unit)) = (
        snap.analysis().decisions_of(unit.id),
        analysed_unit(snap, unit),
    ) else {
        return;
    };
    let reversal = &decided.reversal;
    if reversal.by_blocks {
        let first = unit.body.first().map(|s| unit.stmt(*s));
        if let Some(o) = first.and_then(|st| at(st.span.range, false)) {
            out.push(Hint {
                offset: o,
                label: "reversed by blocks".into(),
                kind: HintKind::Reversal,
                tooltip: crate::render::BLOCKS_TOOLTIP.into(),
                before: true,
                read_by: None,
            });
        }
    }
    let mut constructs: Vec<_> = reversal.constructs.iter().collect();
    constructs.sort_by_key(|(s, _)| (unit.stmt(**s).span.range.start, s.0));
    for (id, r) in constructs {
        let Some((label, tooltip)) = crate::render::reversal_hint(&unit, r) else {
            continue;
        };
        let Some(o) = at(unit.stmt(*id).span.range, false) else {
            continue;
        };
        let same = |h: &Hint| h.offset == o && h.label == label && h.kind == HintKind::Reversal;
        if !out.iter().any(same) {
            out.push(Hint {
                offset: o,
                label,
                kind: HintKind::Reversal,
                tooltip,
                before: true,
                read_by: None,
            });
        }
    }
    {
        let mut by_stmt: Vec<(dfort_ir::StmtId, Vec<String>)> = Vec::new();
        for r in &decided.pushed {
            if unit.symbols.get(r.variable).is_none() || unit.stmts.get(r.stmt).is_none() {
                continue;
            }
            // A call to a procedure with source saves what its checkpoint
            // says (below).
            if decided.is_checkpointed_call(&unit, r.stmt) {
                continue;
            }
            let name = unit.symbol(r.variable).name.clone();
            match by_stmt.iter_mut().find(|(s, _)| *s == r.stmt) {
                Some((_, v)) => {
                    if !v.contains(&name) {
                        v.push(name)
                    }
                }
                None => by_stmt.push((r.stmt, vec![name])),
            }
        }
        for (s, names) in by_stmt {
            let st = unit.stmt(s);
            if let Some(o) = at(st.span.range, false) {
                out.push(Hint {
                    offset: o,
                    label: format!("push({})", names.join(", ")),
                    kind: HintKind::Push,
                    tooltip: crate::render::tbr_push_tooltip(&names),
                    before: true,
                    read_by: None,
                });
            }
        }
    }
    call_hints(snap, &unit, &decided.checkpointed_calls(&unit), out);
    result_hints(snap, &decided.pushed_results(), out);
    association_hints(snap, &unit, out);
}

/// `push(g(…))` at each function reference whose result the forward
/// sweep pushes, with whose adjoint reads it — as the analysis decided
/// them for the generator (`UnitDecisions::pushed_results`).
fn result_hints(snap: &Snapshot, pushed: &[PushedResult], out: &mut Vec<Hint>) {
    let program = &snap.analysis().program;
    let name = |u: dfort_ir::UnitId| program.units.get(u).map(|c| c.name.as_str());
    for r in pushed {
        let Some(callee) = name(r.callee) else {
            continue;
        };
        let tooltip = match r.read_by.map(name) {
            None => crate::render::result_push_tooltip(callee),
            Some(Some(outer)) => crate::render::nested_result_push_tooltip(callee, outer),
            Some(None) => continue,
        };
        let Some((_, range)) = snap.to_doc(r.span.file, r.span.range) else {
            continue;
        };
        out.push(Hint {
            offset: range.start,
            label: format!("push({callee}(…))"),
            kind: HintKind::Push,
            tooltip,
            before: true,
            read_by: r.read_by.and_then(name).map(str::to_string),
        });
    }
}

/// `push(p =>)` before each pointer statement whose association the
/// adjoint saves ([`dfort_ir::queries::recorded_associations`], as
/// the generator does).
fn association_hints(snap: &Snapshot, unit: &Unit, out: &mut Vec<Hint>) {
    let program = &snap.analysis().program;
    for st in &unit.stmts {
        let names: Vec<String> = dfort_ir::queries::recorded_associations(program, unit, st)
            .into_iter()
            .map(|o| dfort_ir::dump::expr(unit, &o.without_bounds()))
            .collect();
        if names.is_empty() {
            continue;
        }
        let Some((_, r)) = snap.to_doc(unit.span.file, st.span.range) else {
            continue;
        };
        out.push(Hint {
            offset: r.start,
            label: format!("push({} =>)", names.join(", ")),
            kind: HintKind::Push,
            tooltip: crate::render::association_push_tooltip(&names),
            before: true,
            read_by: None,
        });
    }
}

/// The start of the tooltip of a call's checkpoint hint.
pub const CHECKPOINT_TOOLTIP: &str = "Checkpoint of the call to";

/// `push(y, x, i)` before each call to a procedure with source (a CALL
/// or a function reference) whose checkpoint saves something, as the
/// analysis decided it for the generator ([`dfort_analysis::checkpoint`],
/// [`dfort_analysis::references`]), with why each is saved.
fn call_hints(snap: &Snapshot, unit: &Unit, calls: &[CheckpointedCall], out: &mut Vec<Hint>) {
    let program = &snap.analysis().program;
    for site in calls {
        let cp = site.checkpoint;
        let Some(callee) = program.units.get(site.callee) else {
            continue;
        };
        if cp.split {
            let st = unit.stmt(site.stmt);
            if let Some((_, r)) = snap.to_doc(unit.span.file, st.span.range) {
                out.push(Hint {
                    offset: r.start,
                    label: "split".into(),
                    kind: HintKind::Reversal,
                    tooltip: crate::render::split_call_tooltip(&callee.name),
                    before: true,
                    read_by: None,
                });
            }
        }
        let mut names: Vec<String> = Vec::new();
        let mut why: Vec<String> = Vec::new();
        for saved in cp.saved() {
            if unit.symbols.get(saved.variable).is_none() {
                continue;
            }
            let name = unit.symbol(saved.variable).name.clone();
            if !names.contains(&name) {
                names.push(name);
            }
            why.push(crate::render::call_save(unit, saved, &callee.name));
        }
        for k in &cp.hidden {
            if let GlobalKey::Common { block, index } = k {
                let Some(name) = dfort_ir::queries::common_member_name(program, block, *index)
                else {
                    continue;
                };
                if !names.contains(&name) {
                    names.push(name.clone());
                }
                why.push(crate::render::hidden_common_save(
                    &name,
                    block,
                    &callee.name,
                ));
                continue;
            }
            let GlobalKey::Shared { unit: m, symbol } = k else {
                continue;
            };
            let Some(module) = program.units.get(*m) else {
                continue;
            };
            let Some(sym) = module.symbols.get(*symbol) else {
                continue;
            };
            if !names.contains(&sym.name) {
                names.push(sym.name.clone());
            }
            why.push(crate::render::hidden_save(
                &sym.name,
                &module.name,
                &callee.name,
            ));
        }
        if names.is_empty() {
            continue;
        }
        let st = unit.stmt(site.stmt);
        let Some((_, r)) = snap.to_doc(unit.span.file, st.span.range) else {
            continue;
        };
        out.push(Hint {
            offset: r.start,
            label: format!("push({})", names.join(", ")),
            kind: HintKind::Push,
            tooltip: crate::render::checkpoint_tooltip(&callee.name, &why, cp.split),
            before: true,
            read_by: None,
        });
    }
}

/// A unit's address-recovery reports (paper 003), one per planned loop
/// that has address variables, with the unit the plans were made on.
pub(crate) struct AddressLoops<'a> {
    /// The unit as the analyses saw it: loops with EXIT and CYCLE
    /// structured (statement and symbol ids kept, new ones appended).
    pub unit: Arc<Unit>,
    pub loops: &'a [LoopReport],
}

/// The address reports of a unit that has active variables (the gating
/// of every hint), `None` otherwise.
pub(crate) fn address_loops<'a>(snap: &'a Snapshot, unit: &Unit) -> Option<AddressLoops<'a>> {
    let loops = snap.analysis().reports_of(unit.id);
    if loops.is_empty() {
        return None;
    }
    let analysed = analysed_unit(snap, unit)?;
    Some(AddressLoops {
        unit: analysed,
        loops,
    })
}

/// The unit as `crate::analysis` analysed it (EXIT and CYCLE structured
/// the way the adjoint generator structures them).
pub(crate) fn analysed_unit(snap: &Snapshot, unit: &Unit) -> Option<Arc<Unit>> {
    snap.analysis().program.units.get(unit.id).cloned()
}

/// The innermost statement of `unit` whose span holds `span`.
pub(crate) fn stmt_holding(unit: &Unit, span: Span) -> Option<&Stmt> {
    unit.stmts
        .iter()
        .filter(|s| s.span.holds(span))
        .min_by_key(|s| s.span.range.end - s.span.range.start)
}

/// The document offset where a statement ends: a simple statement's last
/// byte, a compound statement's header (before its comment, over its
/// continuation lines).
pub(crate) fn stmt_end(snap: &Snapshot, st: &Stmt) -> Option<u32> {
    let (path, r) = snap.to_doc(st.span.file, st.span.range)?;
    if st.kind.blocks().is_empty() {
        return Some(r.end);
    }
    let doc = snap.doc(path)?;
    let fixed = matches!(doc.form, SourceForm::Fixed(_));
    let code_end = |line: u32| -> Option<(u32, bool)> {
        let lr = doc.lines.line_range(line)?;
        let text = doc.text.get(lr.start as usize..lr.end as usize)?;
        let code = match line_part_at(text, text.len()) {
            LinePart::Comment(i) => &text[..i],
            _ => text,
        };
        let code = code.trim_end();
        Some((lr.start + code.len() as u32, code.ends_with('&')))
    };
    let continued = |line: u32| -> bool {
        // A fixed-form continuation: a character other than blank or 0 in
        // column 6 of a line that is not a comment.
        let Some(lr) = doc.lines.line_range(line) else {
            return false;
        };
        let text = doc
            .text
            .get(lr.start as usize..lr.end as usize)
            .unwrap_or("");
        let b = text.as_bytes();
        fixed
            && b.len() > 5
            && !matches!(b[0], b'c' | b'C' | b'*' | b'!' | b'd' | b'D')
            && !b[..5].contains(&b'\t')
            && !matches!(b[5], b' ' | b'0')
    };
    let mut line = doc.lines.line_of(r.start);
    let mut end = code_end(line)?;
    while line + 1 < doc.lines.line_count() {
        let next_start = doc.lines.line_range(line + 1).map_or(u32::MAX, |l| l.start);
        if next_start >= r.end || !(end.1 || continued(line + 1)) {
            break;
        }
        line += 1;
        end = code_end(line)?;
    }
    Some(end.0.clamp(r.start, r.end))
}

/// The text of a statement (its first line).
pub(crate) fn stmt_text(snap: &Snapshot, st: &Stmt) -> Option<String> {
    let (path, r) = snap.to_doc(st.span.file, st.span.range)?;
    let doc = snap.doc(path)?;
    let t = doc.text.get(r.start as usize..r.end as usize)?;
    Some(t.lines().next().unwrap_or("").trim().to_string())
}

fn address_hints(snap: &Snapshot, host_unit: &Unit, out: &mut Vec<Hint>) {
    let Some(al) = address_loops(snap, host_unit) else {
        return;
    };
    let unit = &*al.unit;
    let mut hint = |st: &Stmt, (label, tooltip): (String, String)| {
        if let Some(offset) = stmt_end(snap, st) {
            out.push(Hint {
                offset,
                label,
                kind: HintKind::Address,
                tooltip,
                before: false,
                read_by: None,
            });
        }
    };
    for r in al.loops {
        let lp = r.stmt.map(|s| unit.stmt(s));
        if let (Some(lp), Some(h)) = (lp, render::saves_hint(unit, r)) {
            hint(lp, h);
        }
        if let (Some(lp), Some(cw)) = (lp, &r.computed_after_loop) {
            hint(lp, render::computed_hint(unit, cw));
        }
        for x in &r.vars {
            var_hints(snap, unit, r, x, &mut hint);
        }
    }
}

/// The hints of one variable's recoveries, each after the statement it
/// is about: the assignment that defines the value, the one whose
/// operation blocks its inversion, or the write that makes it ambiguous.
fn var_hints(
    snap: &Snapshot,
    unit: &Unit,
    r: &LoopReport,
    x: &VarReport,
    hint: &mut impl FnMut(&Stmt, (String, String)),
) {
    if x.ambiguous {
        let Some(why) = &x.reason else {
            return;
        };
        let Some(st) = stmt_holding(unit, why.span()) else {
            return;
        };
        if let Some(h) = render::ambiguous_hint(unit, r, x, snap) {
            hint(st, h);
        }
        return;
    }
    for rc in &x.recoveries {
        let def = unit.stmt(rc.defined_at);
        let at = match (&rc.choice, &rc.blocker) {
            (Choice::Stored, Some(b)) => stmt_holding(unit, b.span).unwrap_or(def),
            _ => def,
        };
        if let Some(h) = render::recovery_hint(unit, r, x, rc, snap) {
            hint(at, h);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::Host;

    /// (1-based line, text of the line before the hint, label) of the
    /// address hints of `src`.
    fn address(name: &str, src: &str, kinds: HintKinds) -> Vec<(u32, String, String)> {
        let path = Path::new("/address-tests").join(name);
        let mut host = Host::default();
        host.set_text(&path, src, true, 1);
        let snap = host.snapshot();
        let doc = snap.doc(&path).unwrap();
        inlay_hints(&snap, &path, TextRange::new(0, src.len() as u32), kinds)
            .into_iter()
            .filter(|h| h.kind == HintKind::Address)
            .map(|h| {
                let line = doc.lines.line_of(h.offset);
                let start = doc.lines.line_range(line).unwrap().start as usize;
                (
                    line + 1,
                    src[start..h.offset as usize].trim().to_string(),
                    h.label,
                )
            })
            .collect()
    }

    fn has(hints: &[(u32, String, String)], line: u32, before: &str, label: &str) {
        assert!(
            hints
                .iter()
                .any(|(l, b, x)| *l == line && b == before && x == label),
            "no {label:?} after {before:?} on line {line}: {hints:#?}"
        );
    }

    const FIG8_MAX: &str = "subroutine fig8l_max(ilb, o, a, p, n)
  implicit none
  integer, intent(in) :: ilb, o, n
  real(8), intent(inout) :: a(0:n)
  real(8), intent(in) :: p(0:n)
  integer :: i, j, k, l, m
!$ad independent(a)
!$ad dependent(a)
  i = o
  j = o
  l = 0
  do while (l < ilb)  ! loop L
    k = i - j
    m = k + 3 + l
    i = max(k, 2*l)
    a(i) = a(j)*p(k)*a(m)
    j = j + m + 4
    i = i + j + 1
    a(j) = a(i)*p(k)*a(m)
    l = l + 1
  end do
end subroutine fig8l_max
";

    #[test]
    fn inverted_recomputed_and_stored_indices_after_their_statements() {
        let h = address("fig8.f90", FIG8_MAX, HintKinds::default());
        // The DO statement: before its comment.
        let head = "do while (l < ilb)";
        // Hints after the same text end with `;` but the last.
        has(&h, 12, head, "saves i, j;");
        // A counted WHILE loop: l's final value is computed, not saved.
        has(&h, 12, head, "l ← max(0, ilb);");
        has(&h, 12, head, "i ← k + j;");
        has(&h, 12, head, "j ← j - 4 - m;");
        has(&h, 12, head, "l ← l - 1");
        has(&h, 14, "m = k + 3 + l", "m ← k + 3 + l recomputed");
        // k is stored after the statement whose `max` blocks its inversion.
        has(&h, 15, "i = max(k, 2*l)", "k stored: `max`");
        has(&h, 15, "i = max(k, 2*l)", "i ← i - 1 - j;");
        assert_eq!(h.len(), 8, "{h:#?}");
        let off = HintKinds {
            address: false,
            ..HintKinds::default()
        };
        assert!(address("fig8.f90", FIG8_MAX, off).is_empty());
    }

    /// The control-flow reversal hints of `src`.
    fn reversal_labels(name: &str, src: &str) -> Vec<String> {
        let path = Path::new("/address-tests").join(name);
        let mut host = Host::default();
        host.set_text(&path, src, true, 1);
        let snap = host.snapshot();
        inlay_hints(
            &snap,
            &path,
            TextRange::new(0, src.len() as u32),
            HintKinds::default(),
        )
        .into_iter()
        .filter(|h| h.kind == HintKind::Reversal)
        .map(|h| h.label)
        .collect()
    }

    /// The adjoint dfort writes for the only unit of `src`, with every
    /// argument independent and dependent.
    /// Every hint of the file `src` at `path`, of every kind.
    fn whole_file_hints(snap: &Snapshot, path: &Path, src: &str) -> Vec<Hint> {
        inlay_hints(
            snap,
            path,
            TextRange::new(0, src.len() as u32),
            HintKinds::default(),
        )
    }

    fn generated_adjoint(name: &str, src: &str) -> String {
        let path = Path::new("/address-tests").join(name);
        let mut host = Host::default();
        host.set_text(&path, src, true, 1);
        let snap = host.snapshot();
        let unit = &snap.program.units[dfort_ir::UnitId(0)];
        let facts = crate::actions::every_dummy_active(&snap, unit);
        dfort_codegen::adjoint::adjoint_of(&facts, unit.id, "")
            .map(|(text, _)| text)
            .expect("an adjoint")
    }

    #[test]
    fn reversal_hints_say_what_the_generated_adjoint_does() {
        // An early RETURN inside a DO: the unit is reversed through
        // basic-block ids, so its loop is not replayed and its IF pushes
        // no branch; one hint says so.
        let early_return = "subroutine er(x, n, y)
  implicit none
  integer, intent(in) :: n
  real(8), intent(in) :: x(n)
  real(8), intent(inout) :: y
  integer :: i
  do i = 1, n
    if (x(i) > 2.0d0) return
    y = y + x(i)*x(i)
  end do
end subroutine er
";
        assert_eq!(
            reversal_labels("er.f90", early_return),
            ["reversed by blocks"]
        );
        let adj = generated_adjoint("er.f90", early_return);
        assert!(adj.contains("go to 99999"), "{adj}");
        // A DO left by EXIT: structured into a DO WHILE whose trips the
        // forward sweep counts and pushes; the IFs the structuring adds
        // inside it (shown at the DO) and its own IF push the arm taken.
        let exit = early_return.replace("return", "exit");
        assert_eq!(
            reversal_labels("ex.f90", &exit),
            ["push(trips)", "push(branch)", "push(branch)"]
        );
        let adj = generated_adjoint("ex.f90", &exit);
        assert!(adj.contains("call dfort_push(dfort_count1)"), "{adj}");
        assert!(!adj.contains("go to 99999"), "{adj}");
        // Without the jump: a counted loop replayed from its bounds.
        let plain = early_return.replace("    if (x(i) > 2.0d0) return\n", "");
        assert_eq!(reversal_labels("pl.f90", &plain), ["replay i"]);
        let adj = generated_adjoint("pl.f90", &plain);
        assert!(!adj.contains("call dfort_push(dfort_count"), "{adj}");
        assert!(adj.contains("do i = n, 1, -1"), "{adj}");
    }

    #[test]
    fn a_counted_while_loop_gets_its_trip_count_not_a_push() {
        assert_eq!(
            reversal_labels("fig8c.f90", FIG8_MAX),
            ["trips ← max(0, ilb)"]
        );
        // The same loop with its bound changed inside is not counted.
        let changed = FIG8_MAX
            .replace("    l = l + 1\n", "    l = l + 1\n    ilb = ilb - 1\n")
            .replace("integer, intent(in) :: ilb, o, n", "integer :: ilb, o, n");
        assert_eq!(reversal_labels("fig8c.f90", &changed), ["push(trips)"]);
    }

    #[test]
    fn a_branch_or_a_nested_loop_leaves_the_index_to_tbr() {
        let src = "subroutine amb(a, n)
  implicit none
  real(8), intent(inout) :: a(*)
  integer, intent(in) :: n
  integer :: j, m
!$ad independent(a)
!$ad dependent(a)
  j = 1
  do while (j < n)
    if (a(j) > 0) then
      m = j + 1
    else
      m = j + 2
    end if
    a(m) = a(m)*a(j)
    j = j + 3
  end do
end subroutine amb
";
        let h = address("amb.f90", src, HintKinds::default());
        has(&h, 11, "m = j + 1", "m stored: assigned in a branch");
        has(&h, 9, "do while (j < n)", "j ← j - 3");
    }

    #[test]
    fn a_unit_with_jumps_shows_inverted_counters_and_stored_resets() {
        let src = include_str!("../../../tests/fixtures/kernels/goto_skip.f90");
        let h = address("goto_skip.f90", src, HintKinds::default());
        has(&h, 15, "m = m + 1", "m ← m - 1");
        has(
            &h,
            16,
            "if (m > 3) m = 1",
            "m stored: an assignment that does not read it",
        );
        has(&h, 17, "i = i + 1", "i ← i - 1");
        // The first assignments overwrite values nothing needs.
        assert_eq!(h.len(), 3, "{h:#?}");
    }

    #[test]
    fn fixed_form_loop_header_over_a_continuation_line() {
        let src = "      subroutine fx(a, n)
      implicit none
      real*8 a(*)
      integer n, j, k
cad independent(a)
cad dependent(a)
      j = 1
      do while (j .lt.
     &          n)
        k = j + 1
        j = k + 2
        a(j) = a(k)*a(j)
      end do
      end
";
        let h = address("fx.f", src, HintKinds::default());
        has(&h, 9, "&          n)", "j ← k - 1");
        has(&h, 10, "k = j + 1", "k ← j - 2");
    }

    /// What the forward sweep of `routine` (an adjoint's text) pushes
    /// just before the line `call`, by variable: subscripts dropped,
    /// hidden module variables (`use m, only: dfort_g1 => s`) by their
    /// module name.
    fn pushed_before(adjoint: &str, routine: &str, call: &str) -> Vec<String> {
        let start = adjoint
            .find(&format!("subroutine {routine}("))
            .expect("the routine");
        let text = &adjoint[start..];
        let lines: Vec<&str> = text.lines().map(str::trim).collect();
        let at = lines.iter().position(|l| *l == call).expect("the call");
        let mut items: Vec<String> = Vec::new();
        for l in lines[..at].iter().rev() {
            let Some(item) = l
                .strip_prefix("call dfort_push(")
                .and_then(|x| x.strip_suffix(')'))
            else {
                break;
            };
            let var = item.split('(').next().unwrap_or(item).to_string();
            let var = lines
                .iter()
                .find_map(|d| {
                    let (_, renames) = d.split_once(", only: ")?;
                    let (local, name) = renames.split_once(" => ")?;
                    (local == var).then(|| name.to_string())
                })
                .unwrap_or(var);
            items.insert(0, var);
        }
        let mut names: Vec<String> = Vec::new();
        for v in items {
            if !names.contains(&v) {
                names.push(v);
            }
        }
        names
    }

    #[test]
    fn a_split_call_shows_split_and_the_adjoint_runs_the_callees_two_halves() {
        let src = "subroutine sq(x, y, n)
  implicit none
  integer, intent(inout) :: n
  real(8), intent(in) :: x
  real(8), intent(out) :: y
  real(8) :: t
  t = x*x
  y = t*x
  n = n + 1
end subroutine sq

subroutine top(u, v, n)
  implicit none
  integer, intent(inout) :: n
  real(8), intent(inout) :: u
  real(8), intent(out) :: v
  real(8) :: w
  integer :: k
!$ad independent(u)
!$ad dependent(v)
  v = u*dble(n)
  call sq(u, w, n)
  do k = 1, 2
    call sq(u, w, n)
  end do
  v = v + w
end subroutine top
";
        let path = Path::new("/address-tests").join("split.f90");
        let mut host = Host::default();
        host.set_text(&path, src, true, 1);
        let snap = host.snapshot();
        let doc = snap.doc(&path).unwrap();
        let hints = inlay_hints(
            &snap,
            &path,
            TextRange::new(0, src.len() as u32),
            HintKinds::default(),
        );
        let on = |line: u32| -> Vec<&Hint> {
            hints
                .iter()
                .filter(|h| doc.lines.line_of(h.offset) == line)
                .collect()
        };
        let first = src.lines().position(|l| l == "  call sq(u, w, n)").unwrap() as u32;
        let label = |l: &str| on(first).into_iter().find(|h| h.label == l);
        // Split: no snapshot, and nothing recorded around the call: `n`,
        // which the call overwrites and `v = u*dble(n)`'s adjoint reads,
        // is recorded by `sq_fwd` where `sq` overwrites it, as the hint
        // on that line shows.
        assert_eq!(on(first).len(), 1, "{hints:#?}");
        let split = label("split").expect("a split hint");
        assert!(split.tooltip.contains("`sq_fwd`"), "{hints:#?}");
        let bump = src.lines().position(|l| l == "  n = n + 1").unwrap() as u32;
        assert!(on(bump).iter().any(|h| h.label == "push(n)"), "{hints:#?}");
        // In the loop the call runs split too: `sq` has no loop and sets
        // scalars only, so its forward routine records a value or two
        // where joint mode would run it twice and snapshot `n`.
        let second = first + 2;
        assert!(on(second).iter().any(|h| h.label == "split"), "{hints:#?}");
        let top = snap.program.units.iter().find(|u| u.name == "top").unwrap();
        let (adjoint, _) =
            dfort_codegen::adjoint::adjoint_of(snap.analysis(), top.id, "").expect("an adjoint");
        assert!(
            pushed_before(&adjoint, "top_b", "call sq_fwd(u, w, n)").is_empty(),
            "{adjoint}"
        );
        assert_eq!(
            pushed_before(&adjoint, "sq_fwd", "n = n + 1"),
            ["n"],
            "{adjoint}"
        );
        for line in [
            "subroutine sq_fwd(x, y, n)",
            "subroutine sq_rev(x, xb, y, yb, n)",
        ] {
            assert!(adjoint.contains(line), "{adjoint}");
        }
        assert!(
            adjoint.contains("call sq_rev(u, ub, w, wb, n)"),
            "{adjoint}"
        );
        assert_eq!(
            adjoint.matches("call sq_rev(u, ub, w, wb, n)").count(),
            2,
            "{adjoint}"
        );
        assert!(!adjoint.contains("call sq_b(u, ub, w, wb, n)"), "{adjoint}");
    }

    #[test]
    fn call_hints_show_what_the_adjoint_pushes_around_the_call() {
        let src = "module m
  implicit none
  real(8) :: s
end module m

subroutine setter(v)
  use m
  implicit none
  real(8), intent(in) :: v
  s = 2.0d0*v
end subroutine setter

subroutine mul(u, v, q)
  use m
  implicit none
  real(8), intent(inout) :: u
  real(8), intent(in) :: v
  integer, intent(out) :: q
  u = u*v*s
  q = 3
end subroutine mul

subroutine top(x, a, y, n)
  implicit none
  integer, intent(in) :: n
  real(8), intent(in) :: x(n)
  real(8), intent(inout) :: a(n)
  real(8), intent(out) :: y
  integer :: j, k
  real(8) :: t
!$ad independent(x, a)
!$ad dependent(y)
  k = 2
  j = 1
  t = x(1)
  y = a(j)*a(k)*t
  call mul(a(k), t, j)
  call setter(1.0d0)
  k = 3
  y = y + a(k)
end subroutine top
";
        let path = Path::new("/address-tests").join("calls.f90");
        let mut host = Host::default();
        host.set_text(&path, src, true, 1);
        let snap = host.snapshot();
        let doc = snap.doc(&path).unwrap();
        let call_line = src
            .lines()
            .position(|l| l.trim() == "call mul(a(k), t, j)")
            .unwrap() as u32;
        let hints: Vec<Hint> = whole_file_hints(&snap, &path, src)
            .into_iter()
            .filter(|h| h.kind == HintKind::Push && doc.lines.line_of(h.offset) == call_line)
            .collect();
        let [hint] = hints.as_slice() else {
            panic!("one push hint on the call: {hints:#?}");
        };
        assert!(hint.tooltip.starts_with(CHECKPOINT_TOOLTIP), "{hint:#?}");
        assert!(hint.tooltip.contains("`s` of module `m`"), "{hint:#?}");
        let top = snap.program.units.iter().find(|u| u.name == "top").unwrap();
        let (adjoint, _) =
            dfort_codegen::adjoint::adjoint_of(snap.analysis(), top.id, "").expect("an adjoint");
        let pushed = pushed_before(&adjoint, "top_b", "call mul(a(k), t, j)");
        let shown: Vec<String> = hint
            .label
            .trim_start_matches("push(")
            .trim_end_matches(')')
            .split(", ")
            .map(String::from)
            .collect();
        // The caller's record of `j`, the snapshot of `a(k)`, `j` and the
        // index `k`, and the module variable `s` that `mul`'s adjoint
        // reads and `top` does not declare.
        assert_eq!(shown, ["j", "a", "k", "s"], "{adjoint}");
        assert_eq!(pushed, shown, "{adjoint}");
    }

    #[test]
    fn call_hints_show_what_the_adjoint_saves_around_a_function_reference() {
        // `w` changes its second argument: the adjoint runs its reference
        // as a call, saving `r` before it (fuzzer, seed 4201, case 202:
        // the adjoint saved it and the editor did not show it).
        let src = "module fm
  implicit none
contains
  function w(u, acc) result(res)
    real(8) :: res
    real(8), intent(in) :: u
    real(8), intent(inout) :: acc
    acc = 0.75d0*acc*u
    res = 0.5d0*acc*acc
  end function w
end module fm

subroutine top(x, y)
  use fm
  implicit none
  real(8), intent(in) :: x
  real(8), intent(out) :: y
  real(8) :: r, t
!$ad independent(x)
!$ad dependent(y)
  r = x
  t = w(x, r)
  y = t*r
end subroutine top
";
        let path = Path::new("/address-tests").join("reference.f90");
        let mut host = Host::default();
        host.set_text(&path, src, true, 1);
        let snap = host.snapshot();
        let doc = snap.doc(&path).unwrap();
        let line = src.lines().position(|l| l.trim() == "t = w(x, r)").unwrap() as u32;
        let hints: Vec<Hint> = inlay_hints(
            &snap,
            &path,
            TextRange::new(0, src.len() as u32),
            HintKinds::default(),
        )
        .into_iter()
        .filter(|h| h.kind == HintKind::Push && doc.lines.line_of(h.offset) == line)
        .filter(|h| h.tooltip.starts_with(CHECKPOINT_TOOLTIP))
        .collect();
        let [hint] = hints.as_slice() else {
            panic!("one checkpoint hint on the reference: {hints:#?}");
        };
        assert!(hint.tooltip.contains("`w`"), "{hint:#?}");
        let top = snap.program.units.iter().find(|u| u.name == "top").unwrap();
        let (adjoint, _) =
            dfort_codegen::adjoint::adjoint_of(snap.analysis(), top.id, "").expect("an adjoint");
        let pushed = pushed_before(&adjoint, "top_b", "dfort_f1 = w(x, r)");
        let shown: Vec<String> = hint
            .label
            .trim_start_matches("push(")
            .trim_end_matches(')')
            .split(", ")
            .map(String::from)
            .collect();
        assert_eq!(shown, ["r"], "{adjoint}");
        assert_eq!(pushed, shown, "{adjoint}");
    }

    #[test]
    fn result_hints_mark_the_references_whose_results_the_adjoint_pushes() {
        // `x(i)*g(x(i))` reads g's result; `2*g(g(x(i)))` does not read
        // the outer's (only scaled), and the outer's adjoint reads the
        // inner's (its snapshot saves it); `y(i) - g(x(i))` in the second
        // loop reads nothing of it.
        let src = "module gm
  implicit none
contains
  function g(u) result(res)
    real(8), intent(in) :: u
    real(8) :: res
    res = u*u + sin(u)
  end function g
end module gm

subroutine top(n, x, y)
  use gm
  implicit none
  integer, intent(in) :: n
  real(8), intent(in) :: x(n)
  real(8), intent(out) :: y(n)
  integer :: i
!$ad independent(x)
!$ad dependent(y)
  do i = 1, n
    y(i) = x(i)*g(x(i)) + 2.0d0*g(g(x(i)))
  end do
  do i = 1, n
    y(i) = y(i) - g(x(i))
  end do
end subroutine top
";
        let path = Path::new("/address-tests").join("results.f90");
        let mut host = Host::default();
        host.set_text(&path, src, true, 1);
        let snap = host.snapshot();
        let hints: Vec<Hint> = whole_file_hints(&snap, &path, src)
            .into_iter()
            .filter(|h| h.label.ends_with("(…))"))
            .collect();
        // What the editor marks: the text of each reference.
        let shown: Vec<&str> = hints
            .iter()
            .map(|h| {
                let at = h.offset as usize;
                let end = at + src[at..].find(')').unwrap() + 1;
                &src[at..end]
            })
            .collect();
        // The first reference (read by the assignment) and the inner one
        // of g(g(x(i))), which the outer's adjoint reads.
        let inner = src.find("g(g(x(i)))").unwrap() + 2;
        let offsets: Vec<usize> = hints.iter().map(|h| h.offset as usize).collect();
        assert_eq!(shown, ["g(x(i)", "g(x(i)"], "{hints:#?}");
        assert_eq!(offsets[1], inner, "{hints:#?}");
        assert!(hints.iter().all(|h| h.label == "push(g(…))"), "{hints:#?}");
        assert!(hints[1].tooltip.contains("actual"), "{hints:#?}");
        // What the adjoint pushes: the temporaries pushed just before the
        // assignments that hold them, each with the reference it holds.
        let top = snap.program.units.iter().find(|u| u.name == "top").unwrap();
        let (adjoint, _) =
            dfort_codegen::adjoint::adjoint_of(snap.analysis(), top.id, "").expect("an adjoint");
        let lines: Vec<&str> = adjoint.lines().map(str::trim).collect();
        let mut pushed: Vec<String> = Vec::new();
        for (k, l) in lines.iter().enumerate() {
            // The assignment, and the outer reference's call.
            if !l.starts_with("y(i) = ") && !l.starts_with("dfort_f3 = ") {
                continue;
            }
            for p in lines[..k].iter().rev() {
                let Some(t) = p
                    .strip_prefix("call dfort_push(")
                    .and_then(|x| x.strip_suffix(')'))
                else {
                    break;
                };
                let held = lines
                    .iter()
                    .find_map(|d| d.strip_prefix(&format!("{t} = ")))
                    .expect("the temporary's reference");
                pushed.push(held.to_string());
            }
        }
        pushed.sort();
        assert_eq!(pushed, ["g(x(i))", "g(x(i))"], "{adjoint}");
    }

    #[test]
    fn association_hints_mark_the_pointer_statements_whose_association_the_adjoint_saves() {
        let src = "subroutine pick(n, a, b, y)
  implicit none
  integer, intent(in) :: n
  real(8), intent(inout), target :: a(n), b(n)
  real(8), intent(out) :: y
  real(8), pointer :: p(:)
  integer :: i
  if (sum(a) > sum(b)) then
    p => a
  else
    p => b
  end if
  do i = 1, n
    p(i) = p(i)*cos(p(i))
  end do
  y = sum(a*b) + sum(p)
end subroutine pick
";
        let path = Path::new("/association-tests").join("pick.f90");
        let mut host = Host::default();
        host.set_text(&path, src, true, 1);
        let snap = host.snapshot();
        let doc = snap.doc(&path).unwrap();
        let lines: Vec<u32> = inlay_hints(
            &snap,
            &path,
            TextRange::new(0, src.len() as u32),
            HintKinds::default(),
        )
        .into_iter()
        .filter(|h| h.label == "push(p =>)")
        .map(|h| doc.lines.line_of(h.offset))
        .collect();
        let at = |text: &str| src.lines().position(|l| l.trim() == text).unwrap() as u32;
        assert_eq!(lines, [at("p => a"), at("p => b")]);
        let unit = snap
            .program
            .units
            .iter()
            .find(|u| u.name == "pick")
            .unwrap();
        let (adjoint, _) =
            dfort_codegen::adjoint::adjoint_of(snap.analysis(), unit.id, "").expect("an adjoint");
        // The forward sweep saves p's association (and its derivative
        // pointer's) before each of the two statements.
        let lines: Vec<&str> = adjoint.lines().map(str::trim).collect();
        for target in ["a", "b"] {
            let at = lines
                .iter()
                .position(|l| *l == format!("p => {target}"))
                .expect("the pointer assignment");
            let saved: Vec<&str> = lines[..at]
                .iter()
                .rev()
                .skip_while(|l| l.starts_with("pb => "))
                .take_while(|l| l.starts_with("call dfort_push_pointer("))
                .copied()
                .collect();
            assert!(saved.contains(&"call dfort_push_pointer(p)"), "{adjoint}");
        }
    }

    #[test]
    fn no_address_hints_without_active_variables() {
        let src = "subroutine passive(a, n)
  implicit none
  integer, intent(inout) :: a(*)
  integer, intent(in) :: n
  integer :: j, k
  j = 1
  do while (j < n)
    k = j + 1
    j = k/2 + 3
    a(j) = a(k)*a(j)
  end do
end subroutine passive
";
        assert!(address("passive.f90", src, HintKinds::default()).is_empty());
    }
}
