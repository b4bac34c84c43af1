//! A document's diagnostics for the editor: the front end's (syntax,
//! unsupported constructs, linking) plus differentiation checks on the
//! snapshot's analyses (paper 000 §4, paper 003):
//!
//! * a non-differentiable intrinsic (`abs`, `max`, `min`, `sign`, `int`,
//!   `nint`, `mod`, `maxval`, `minval`, `norm2`, …) applied to a varied value in an assignment whose
//!   result is active: the derivative is wrong at the kink or zero;
//! * an active value passed to a procedure dfort has no source for, or to
//!   one that gets no derivative routine where the generators
//!   differentiate the call: the generators refuse such a call (one rule,
//!   `no-source`, one activity test, `active_actuals`);
//! * `address-stored` (information): an address index of a DO loop the
//!   reverse sweep cannot recover by inversion or recomputation — a
//!   non-invertible operation (integer division, `max`, …) or an
//!   assignment the loop's plan cannot follow (in a branch, a nested loop,
//!   a call) — so the adjoint stores it each iteration;
//! * `convergence-test`: a loop whose body makes active values and which
//!   is left on a test of a varied value (an iterative solver): its
//!   iterations are differentiated, and their derivative lags their value;
//! * `cut-by-io`: a READ that may read back a varied value a WRITE wrote
//!   (the analyses' [`dfort_analysis::io_cuts`], per chosen root): the
//!   value read gets derivative 0.
//!
//! Every code is a rule of the registry (`dfort_syntax::rules`).
//!
//! Contract: ranges are document byte offsets, sorted; never panics.

use crate::hints::{address_loops, stmt_end, stmt_holding};
use crate::host::Snapshot;
use crate::render;
use dfort_analysis::activity::Activity;
use dfort_analysis::address_report::Choice;
use dfort_analysis::facts::ProgramFacts;
use dfort_ir::{Expr, ExprKind, Program, StmtKind, SymbolId, Unit, UnitId};
use dfort_syntax::rules::{
    ADDRESS_STORED, CONVERGENCE_TEST, CUT_BY_IO, FIXED_LINE_LENGTH, NON_DIFFERENTIABLE,
    PREPROCESSOR_ERROR, PREPROCESSOR_WARNING, SYNTAX_ERROR, UNSUPPORTED,
};
use dfort_syntax::{Code, Rule, Severity, TextRange};
use std::path::Path;
use std::sync::{Arc, OnceLock};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdeDiagnostic {
    pub range: TextRange,
    pub severity: Severity,
    pub code: Code,
    pub message: String,
}

impl IdeDiagnostic {
    /// A diagnostic of `rule`, with the rule's severity.
    pub fn new(rule: &'static Rule, range: TextRange, message: String) -> Self {
        IdeDiagnostic {
            range,
            severity: rule.severity,
            code: rule.into(),
            message,
        }
    }
}

/// Every diagnostic of a document: the front end's and the
/// differentiability checks', sorted (what the editor shows).
pub fn of_document(snap: &Snapshot, path: &Path) -> Vec<IdeDiagnostic> {
    let mut out = front_end(snap, path);
    out.extend(differentiability(snap, path));
    sorted(out)
}

/// The documents `paths` in that order, each followed by the headers the
/// C preprocessor included into it first (each file once).
pub fn files_read<'a>(snap: &'a Snapshot, paths: &'a [std::path::PathBuf]) -> Vec<&'a Path> {
    let mut files: Vec<&Path> = Vec::new();
    for p in paths {
        let headers = snap
            .doc(p)
            .and_then(|d| d.preprocessed.as_ref())
            .into_iter()
            .flat_map(|pp| pp.headers().map(|(_, f)| f.path.as_path()));
        for f in std::iter::once(p.as_path()).chain(headers) {
            if !files.contains(&f) {
                files.push(f);
            }
        }
    }
    files
}

/// The front end's diagnostics of every document of `paths` and every
/// header they include ([`files_read`]): a problem in a header is
/// reported in the header, once. What `dfort check` prints.
pub fn front_end_of<'a>(
    snap: &'a Snapshot,
    paths: &'a [std::path::PathBuf],
) -> Vec<(&'a Path, IdeDiagnostic)> {
    files_read(snap, paths)
        .into_iter()
        .flat_map(|p| front_end(snap, p).into_iter().map(move |d| (p, d)))
        .collect()
}

/// The front end's diagnostics of a document (syntax, lowering, linking,
/// the C preprocessor's), sorted: what `dfort check` reports. For a
/// header that preprocessed documents include, the diagnostics of its
/// text as they read it.
pub fn front_end(snap: &Snapshot, path: &Path) -> Vec<IdeDiagnostic> {
    let Some((_, lines)) = snap.file_text(path) else {
        return Vec::new();
    };
    let readers: Vec<&crate::host::DocView> = snap
        .doc(path)
        .into_iter()
        .chain(snap.includers(path))
        .collect();
    let mut out = Vec::new();
    for doc in &readers {
        for (file, _, _) in &doc.chunks {
            for d in snap.chunk_diagnostics(*file) {
                push(
                    snap, &mut out, path, *file, d.range, d.severity, d.code, &d.message,
                );
            }
        }
        for (file, d) in &snap.link_diagnostics {
            if doc.chunks.iter().any(|(f, _, _)| f == file) {
                push(
                    snap, &mut out, path, *file, d.range, d.severity, d.code, &d.message,
                );
            }
        }
        if let Some(pp) = &doc.preprocessed {
            preprocessor(pp, path, &mut out);
        }
    }
    refine(
        &mut out,
        |d| (d.code, (0, lines.line_of(d.range.start))),
        |d| &mut d.message,
    );
    sorted(out)
}

/// The preprocessor's problems in file `path` (the document or a header
/// it read), on their lines.
fn preprocessor(
    pp: &crate::preprocessing::PreprocessedDoc,
    path: &Path,
    out: &mut Vec<IdeDiagnostic>,
) {
    use dfort_syntax::cpp::CppSeverity;
    for d in &pp.pp.diagnostics {
        let Some(f) = pp.files.get(d.file as usize).filter(|f| f.path == path) else {
            continue;
        };
        let Some(range) = f.lines.line_range(d.line) else {
            continue;
        };
        let rule = match d.severity {
            CppSeverity::Error => &PREPROCESSOR_ERROR,
            CppSeverity::Warning => &PREPROCESSOR_WARNING,
        };
        out.push(IdeDiagnostic::new(rule, range, d.message.clone()));
    }
}

/// The differentiability checks of a document's units on the snapshot's
/// analyses (units no root reaches have none), sorted: what `dfort check
/// --root` adds.
pub fn differentiability(snap: &Snapshot, path: &Path) -> Vec<IdeDiagnostic> {
    let mut out = Vec::new();
    for unit in snap.units_of(path) {
        if let Some(checks) = snap.unit_checks(unit.id) {
            for (span, rule, message) in &checks.found {
                push_rule(snap, &mut out, *span, rule, message);
            }
        }
        address_stored(snap, unit, &mut out);
    }
    refused(snap, path, &mut out);
    io_cuts(snap, path, &mut out);
    sorted(out)
}

/// What the checks of one unit's own statements found (non-differentiable
/// intrinsics, convergence tests, calls that pass an active value to a
/// procedure without a derivative routine), chunk-relative, with what
/// they read: the unit, its activity, whether it is supplied, and which
/// variables of it and of its callees carry a derivative and which
/// callees get a derivative routine. A snapshot takes the last one's
/// while all are the same ([`UnitChecks::holds`]), so an edit checks
/// again only the units whose activity or carriers changed.
pub struct UnitChecks {
    unit: Arc<Unit>,
    activity: Option<Arc<Activity>>,
    supplied: bool,
    carriers: Arc<dfort_analysis::derivatives::Carriers>,
    pub found: Vec<(dfort_ir::Span, &'static Rule, String)>,
}

impl UnitChecks {
    /// The checks of unit `id` of the snapshot.
    pub(crate) fn of(snap: &Snapshot, id: UnitId) -> Option<UnitChecks> {
        let unit = snap.program.units.get(id)?.clone();
        let mut found = Vec::new();
        non_differentiable(snap, &unit, &mut found);
        convergence_tests(snap, &unit, &mut found);
        // The facts' refusals of such calls
        // ([`ProgramFacts::no_source_calls`], the rule and sentence the
        // generators refuse with), with every root's carriers.
        for r in snap.analysis().no_source_calls(id) {
            found.push((r.span, r.rule, r.message));
        }
        Some(UnitChecks {
            activity: snap.analysis().activity.activity.get(id).cloned().flatten(),
            supplied: snap.analysis().is_supplied(id),
            carriers: snap.analysis().carriers.clone(),
            unit,
            found,
        })
    }

    /// Whether these are still the checks of unit `id` of `program` as
    /// `facts` analysed it.
    pub(crate) fn holds(&self, program: &Program, facts: &ProgramFacts, id: UnitId) -> bool {
        let activity = facts.activity.activity.get(id).and_then(Option::as_ref);
        dfort_ir::same_unit_as(&program.units, id, &self.unit)
            && match (activity, &self.activity) {
                (Some(a), Some(b)) => Arc::ptr_eq(a, b),
                (None, None) => true,
                _ => false,
            }
            && facts.is_supplied(id) == self.supplied
            && self.same_carriers(program, &facts.carriers, id)
    }

    /// Whether `carriers` give unit `id` and its callees what these
    /// checks read of them: which variables carry a derivative and which
    /// callees get a derivative routine.
    fn same_carriers(
        &self,
        program: &Program,
        carriers: &Arc<dfort_analysis::derivatives::Carriers>,
        id: UnitId,
    ) -> bool {
        let (old, new) = (&self.carriers, carriers);
        Arc::ptr_eq(old, new)
            || std::iter::once(id)
                .chain(program.call_graph.callees(id))
                .all(|c| old.with_d.get(c) == new.with_d.get(c))
                && program
                    .call_graph
                    .callees(id)
                    .all(|c| old.routine.get(c) == new.routine.get(c))
    }
}

/// One unit's [`UnitChecks`], once asked for (a concurrent asker waits).
type ChecksCell = Arc<OnceLock<Option<Arc<UnitChecks>>>>;

/// Per unit asked about, its [`UnitChecks`]: only those units have an
/// entry, so that an edit does not walk a workspace's 25,000 units to
/// carry the few checked ones over (a table of every unit cost a large
/// workspace's edit about 3%).
#[derive(Default)]
pub(crate) struct ChecksMemo {
    cells: std::sync::Mutex<std::collections::BTreeMap<UnitId, ChecksCell>>,
}

impl ChecksMemo {
    fn cells(&self) -> std::sync::MutexGuard<'_, std::collections::BTreeMap<UnitId, ChecksCell>> {
        self.cells.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The cell of unit `id`, made at the first ask.
    pub(crate) fn cell(&self, id: UnitId) -> ChecksCell {
        self.cells().entry(id).or_default().clone()
    }

    /// The checks computed so far, by unit.
    fn computed(&self) -> Vec<(UnitId, Arc<UnitChecks>)> {
        (self.cells().iter())
            .filter_map(|(id, cell)| Some((*id, cell.get()?.clone()?)))
            .collect()
    }
}

/// A memo for `program`'s units holding the checks of `previous` that
/// still hold.
pub(crate) fn carried_checks(
    previous: Option<&Snapshot>,
    program: &Program,
    facts: &ProgramFacts,
) -> ChecksMemo {
    let memo = ChecksMemo::default();
    let computed = previous.map(|p| p.checks().computed()).unwrap_or_default();
    for (id, checks) in computed {
        if program.units.get(id).is_some() && checks.holds(program, facts, id) {
            let cell: ChecksCell = Default::default();
            let _ = cell.set(Some(checks));
            memo.cells().insert(id, cell);
        }
    }
    memo
}

/// The READs of this document that may read back an active value, for
/// each root the user chose ([`ProgramFacts::io_cuts`]).
fn io_cuts(snap: &Snapshot, path: &Path, out: &mut Vec<IdeDiagnostic>) {
    for root in chosen_roots(snap) {
        for cut in snap.analysis().io_cuts(root) {
            let at = snap
                .location(cut.write)
                .map(|l| format!("{}:{}", l.path.display(), l.line))
                .unwrap_or_default();
            let msg = render::io_cut_message(&cut, &at);
            let (file, range) = (cut.read.file, cut.read.range);
            let code = (&CUT_BY_IO).into();
            push(snap, out, path, file, range, CUT_BY_IO.severity, code, &msg);
        }
    }
}

/// The roots the user chose: named in the settings, or marked with
/// directives (past the named roots, the facts list those: a workspace's
/// thousands of uncalled procedures are not read).
fn chosen_roots(snap: &Snapshot) -> Vec<dfort_ir::UnitId> {
    let facts = snap.analysis();
    let named = (facts.roots.iter().take(facts.named_roots))
        .map(|(root, _)| *root)
        .filter(|root| {
            let unit = snap.program.unit(*root);
            !unit.directives.is_empty() || snap.config.roots.iter().any(|r| r.name == unit.name)
        });
    named.chain(facts.marked_roots.iter().copied()).collect()
}

/// What the facts refuse of the adjoint and the tangent of each root the
/// user chose — named in the settings, or marked with directives — where
/// that lands in this document ([`ProgramFacts::refusals`]: what the
/// generators report, decided before any code is written). Procedures
/// analysed only because nobody calls them are not judged.
fn refused(snap: &Snapshot, path: &Path, out: &mut Vec<IdeDiagnostic>) {
    use dfort_analysis::refusals::Derivative;
    let facts = snap.analysis();
    for root in chosen_roots(snap) {
        for d in [Derivative::Adjoint, Derivative::Tangent] {
            for r in facts.refusals(root, d) {
                let (severity, code) = (r.rule.severity, r.rule.into());
                push(
                    snap,
                    out,
                    path,
                    r.span.file,
                    r.span.range,
                    severity,
                    code,
                    &r.message,
                );
            }
        }
    }
}

fn sorted(mut out: Vec<IdeDiagnostic>) -> Vec<IdeDiagnostic> {
    out.sort_by_key(|d| (d.range.start, d.range.end, d.severity, d.code));
    out.dedup();
    out
}

/// A diagnostic at `range` of chunk `file`, when that lands in file
/// `path` (text a preprocessor included lands in the header).
#[allow(clippy::too_many_arguments)]
fn push(
    snap: &Snapshot,
    out: &mut Vec<IdeDiagnostic>,
    path: &Path,
    file: dfort_ir::FileId,
    range: TextRange,
    severity: Severity,
    code: Code,
    message: &str,
) {
    if let Some((at, range)) = snap.to_doc(file, range) {
        if at == path {
            out.push(IdeDiagnostic {
                range,
                severity,
                code,
                message: message.to_string(),
            });
        }
    }
}

/// A diagnostic of `rule`, with the rule's severity, in the document of
/// the span's chunk.
fn push_rule(
    snap: &Snapshot,
    out: &mut Vec<IdeDiagnostic>,
    span: dfort_ir::Span,
    rule: &'static Rule,
    message: &str,
) {
    let Some(place) = snap.places.get(&span.file) else {
        return;
    };
    push(
        snap,
        out,
        &place.path,
        span.file,
        span.range,
        rule.severity,
        rule.into(),
        message,
    );
}

/// A syntax error on a line that also holds an `unsupported` construct is
/// the same problem (dropped); one on a fixed-form line cut at the column
/// limit says so. `line` gives a diagnostic's code and a key for its line
/// (file and line), `message` its text to extend. The CLI's workspace and
/// the language server's documents share this.
pub fn refine<D>(
    diags: &mut Vec<D>,
    line: impl Fn(&D) -> (Code, (u32, u32)),
    message: impl Fn(&mut D) -> &mut String,
) {
    let lines_with = |rule: &Rule, diags: &[D]| -> Vec<(u32, u32)> {
        diags
            .iter()
            .map(&line)
            .filter(|(c, _)| *c == *rule)
            .map(|(_, l)| l)
            .collect()
    };
    let unsupported = lines_with(&UNSUPPORTED, diags);
    let cut = lines_with(&FIXED_LINE_LENGTH, diags);
    diags.retain(|d| {
        let (code, l) = line(d);
        !(code == SYNTAX_ERROR && unsupported.contains(&l))
    });
    for d in diags.iter_mut() {
        let (code, l) = line(d);
        if code == SYNTAX_ERROR && cut.contains(&l) {
            message(d).push_str(
                " (this line was cut at the fixed-form column limit; the statement looks truncated)",
            );
        }
    }
}

/// The variable an assignment writes.
fn written(lhs: &Expr) -> Option<SymbolId> {
    match &lhs.kind {
        ExprKind::Var(s) | ExprKind::ArrayRef { array: s, .. } => Some(*s),
        _ => None,
    }
}

/// The chunk-relative diagnostics of one unit's checks.
type Found = Vec<(dfort_ir::Span, &'static Rule, String)>;

fn non_differentiable(snap: &Snapshot, unit: &Unit, out: &mut Found) {
    let Some(act) = snap.analysis().activity.activity[unit.id].as_ref() else {
        return;
    };
    for st in &unit.stmts {
        let StmtKind::Assign { lhs, rhs } = &st.kind else {
            continue;
        };
        let Some(target) = written(lhs) else {
            continue;
        };
        if !act.active_after(st.id, target) {
            continue;
        }
        rhs.walk(&mut |e| {
            let ExprKind::Intrinsic { name, args } = &e.kind else {
                return;
            };
            let Some(why) = crate::render::kink(name) else {
                return;
            };
            let mut varied = None;
            for a in args {
                a.value.walk(&mut |x| {
                    if let ExprKind::Var(s) | ExprKind::ArrayRef { array: s, .. } = &x.kind {
                        if varied.is_none()
                            && act
                                .varied_before
                                .get(st.id)
                                .is_some_and(|v| v.contains_id(*s))
                        {
                            varied = Some(*s);
                        }
                    }
                });
            }
            if let Some(v) = varied {
                let msg = crate::render::kink_message(name, &unit.symbol(v).name, why);
                out.push((e.span, &NON_DIFFERENTIABLE, msg));
            }
        });
    }
}

/// Loops left on a test of a varied value whose bodies write active
/// values: the test of a DO WHILE, or an IF whose arm leaves the loop
/// (EXIT, or GO TO a label outside it). Nested loops are judged each on
/// its own; an EXIT leaves the innermost loop.
fn convergence_tests(snap: &Snapshot, unit: &Unit, out: &mut Found) {
    // The user writes a supplied unit's adjoint.
    if snap.analysis().is_supplied(unit.id) {
        return;
    }
    let Some(act) = snap.analysis().activity.activity[unit.id].as_ref() else {
        return;
    };
    // The first varied variable `e` reads before statement `at`.
    let varied_in = |e: &Expr, at: dfort_ir::StmtId| {
        let mut found = None;
        e.walk(&mut |x| {
            if let ExprKind::Var(v) | ExprKind::ArrayRef { array: v, .. } = &x.kind {
                if found.is_none() && act.varied_before.get(at).is_some_and(|b| b.contains_id(*v)) {
                    found = Some(*v);
                }
            }
        });
        found
    };
    for st in &unit.stmts {
        let StmtKind::Do { control, body, .. } = &st.kind else {
            continue;
        };
        let inside = nested_stmts(unit, body);
        let makes_active = inside.iter().any(|&id| {
            matches!(&unit.stmt(id).kind, StmtKind::Assign { lhs, .. }
                if written(lhs).is_some_and(|t| act.active_after(id, t)))
        });
        if !makes_active {
            continue;
        }
        let labels: Vec<u32> = inside
            .iter()
            .filter_map(|&id| unit.stmt(id).label)
            .collect();
        let mut tests: Vec<(&Expr, dfort_ir::StmtId)> = Vec::new();
        if let dfort_ir::DoControl::While(cond) = control {
            tests.push((cond, st.id));
        }
        for &id in &inside {
            let StmtKind::If { arms, .. } = &unit.stmt(id).kind else {
                continue;
            };
            for arm in arms {
                let leaves = arm.body.iter().any(|&b| match &unit.stmt(b).kind {
                    StmtKind::Exit { .. } => innermost_loop(unit, body, b),
                    StmtKind::Goto { target } => !labels.contains(target),
                    _ => false,
                });
                if leaves {
                    tests.push((&arm.cond, id));
                }
            }
        }
        for (cond, at) in tests {
            if let Some(v) = varied_in(cond, at) {
                let msg = format!(
                    "this loop stops on a test of `{}`, which depends on the independents: the adjoint differentiates the iterations the run made, whose derivative converges more slowly than their value; the gradient can differ from the converged solution's by more than the loop's tolerance (tighten it if the gradient must match, or supply the routine's adjoint with `--supplied`)",
                    unit.symbol(v).name
                );
                out.push((cond.span, &CONVERGENCE_TEST, msg));
            }
        }
    }
}

/// The statements nested in `body` (at any depth), in order.
fn nested_stmts(unit: &Unit, body: &[dfort_ir::StmtId]) -> Vec<dfort_ir::StmtId> {
    let mut out = Vec::new();
    for &id in body {
        out.push(id);
        for b in unit.stmt(id).kind.blocks() {
            out.extend(nested_stmts(unit, b));
        }
    }
    out
}

/// Whether statement `exit` in `body` belongs to the loop of `body`, not
/// to a loop nested in it.
fn innermost_loop(unit: &Unit, body: &[dfort_ir::StmtId], exit: dfort_ir::StmtId) -> bool {
    body.iter().any(|&id| {
        id == exit
            || (!matches!(unit.stmt(id).kind, StmtKind::Do { .. })
                && unit
                    .stmt(id)
                    .kind
                    .blocks()
                    .iter()
                    .any(|b| innermost_loop(unit, b, exit)))
    })
}

/// Address indices the adjoint stores because inversion cannot recover
/// them (units with active variables only, as the hints).
fn address_stored(snap: &Snapshot, unit: &Unit, out: &mut Vec<IdeDiagnostic>) {
    let Some(al) = address_loops(snap, unit) else {
        return;
    };
    let u = &*al.unit;
    for r in al.loops {
        for x in &r.vars {
            if x.choice != Choice::Stored {
                continue;
            }
            // Stored by the game's choice alone (no blocking operation):
            // not a problem in the source.
            let (Some(why), Some(msg)) = (&x.reason, render::stored_message(u, r, x, snap)) else {
                continue;
            };
            let span = why.span();
            // The blocking operation, or the statement the plan cannot
            // follow (a compound one by its header).
            let Some((_, mut range)) = snap.to_doc(span.file, span.range) else {
                continue;
            };
            if let Some(st) = stmt_holding(u, span).filter(|st| !st.kind.blocks().is_empty()) {
                if let Some(end) = stmt_end(snap, st) {
                    range = TextRange::new(range.start, end.max(range.start));
                }
            }
            out.push(IdeDiagnostic::new(&ADDRESS_STORED, range, msg));
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::host::Host;
    use dfort_syntax::TextRange;
    use std::path::Path;

    /// The `address-stored` diagnostics of `src`: message, covered text
    /// and severity.
    fn address_stored<'s>(
        name: &str,
        src: &'s str,
    ) -> Vec<(String, &'s str, dfort_syntax::Severity)> {
        let path = Path::new("/diagnostic-tests").join(name);
        let mut host = Host::default();
        host.set_text(&path, src, true, 1);
        let snap = host.snapshot();
        snap.diagnostics(&path)
            .iter()
            .filter(|d| d.code == "address-stored")
            .map(|d| {
                (
                    d.message.clone(),
                    &src[d.range.start as usize..d.range.end as usize],
                    d.severity,
                )
            })
            .collect()
    }

    /// An edit in one procedure checks that procedure again and keeps the
    /// other's checks (the same `Arc`), and the document's diagnostics
    /// are those of a fresh host on the edited text.
    #[test]
    fn an_edit_checks_again_only_the_units_whose_activity_changed() {
        let src = "module m\ncontains\nsubroutine a(x, y)\n  real :: x, y\n  y = abs(x) * 2.0\nend subroutine\nsubroutine b(x, y)\n  real :: x, y\n  y = abs(x) * 3.0\nend subroutine\nend module\n";
        let path = Path::new("/diagnostic-tests/memo.f90");
        let mut host = Host::default();
        host.set_text(path, src, true, 1);
        let before = host.snapshot();
        let kinks = |snap: &crate::host::Snapshot| {
            snap.diagnostics(path)
                .into_iter()
                .filter(|d| d.code == "non-differentiable")
                .collect::<Vec<_>>()
        };
        assert_eq!(kinks(&before).len(), 2, "{:?}", kinks(&before));
        let id = |snap: &crate::host::Snapshot, name: &str| {
            snap.units_of(path).find(|u| u.name == name).unwrap().id
        };
        let at = src.find("3.0").unwrap() as u32;
        let change = crate::host::TextChange {
            range: Some(TextRange::new(at, at + 3)),
            text: "4.5".into(),
        };
        assert!(host.edit(path, &[change], 2));
        let after = host.snapshot();
        let (a0, a1) = (
            before.unit_checks(id(&before, "a")),
            after.unit_checks(id(&after, "a")),
        );
        assert!(std::sync::Arc::ptr_eq(&a0.unwrap(), &a1.unwrap()), "a kept");
        let (b0, b1) = (
            before.unit_checks(id(&before, "b")),
            after.unit_checks(id(&after, "b")),
        );
        assert!(
            !std::sync::Arc::ptr_eq(&b0.unwrap(), &b1.unwrap()),
            "b checked again"
        );
        let mut fresh = Host::default();
        fresh.set_text(path, &src.replace("3.0", "4.5"), true, 2);
        assert_eq!(after.diagnostics(path), fresh.snapshot().diagnostics(path));
    }

    /// The messages of the `non-differentiable` diagnostics of `src`.
    fn non_differentiable(name: &str, src: &str) -> Vec<String> {
        let path = Path::new("/diagnostic-tests").join(name);
        let mut host = Host::default();
        host.set_text(&path, src, true, 1);
        host.snapshot()
            .diagnostics(&path)
            .iter()
            .filter(|d| d.code == "non-differentiable")
            .map(|d| d.message.clone())
            .collect()
    }

    /// The `saved-state` diagnostics of `src` as (line, message start),
    /// with `roots` named in the settings.
    fn saved_state(src: &str, roots: &[&str]) -> Vec<(u32, String)> {
        of_chosen_roots(src, roots, "saved-state")
    }

    /// The diagnostics of rule `code` of `src` as (line, message start),
    /// with `roots` named in the settings.
    fn of_chosen_roots(src: &str, roots: &[&str], code: &str) -> Vec<(u32, String)> {
        let path = Path::new("/diagnostic-tests/chosen.f90");
        let config = crate::host::HostConfig {
            roots: roots
                .iter()
                .map(|r| dfort_analysis::roots::RootSpec {
                    name: r.to_string(),
                    independent: Vec::new(),
                    dependent: Vec::new(),
                    after: None,
                })
                .collect(),
            ..Default::default()
        };
        let mut host = Host::new(config);
        host.set_text(path, src, true, 1);
        let snap = host.snapshot();
        let lines = dfort_syntax::line_index::LineIndex::new(src);
        snap.diagnostics(path)
            .iter()
            .filter(|d| d.code == code)
            .map(|d| {
                let line = lines.line_col(d.range.start).line + 1;
                (line, d.message.chars().take(40).collect())
            })
            .collect()
    }

    /// Issue 39, item 2: what the facts refuse of a chosen root's adjoint
    /// and tangent is in the editor's diagnostics before anyone generates
    /// (the adjoint of `outer` at the SAVE'd `s` of its internal function,
    /// line 13, which the adjoint cannot share); a procedure nobody chose
    /// is not judged.
    #[test]
    fn the_refusals_of_a_chosen_root_are_diagnostics_before_generating() {
        let src = "subroutine outer(n, x, y)
  integer, intent(in) :: n
  real(8), intent(in) :: x(n)
  real(8), intent(out) :: y(n)
  integer :: i
  do i = 1, n
    y(i) = run(x(i), i == 1)
  end do
contains
  real(8) function run(v, reset)
    real(8), intent(in) :: v
    logical, intent(in) :: reset
    real(8), save :: s = 0d0
    if (reset) s = 0d0
    s = s + v*v
    run = s
  end function run
end subroutine outer
";
        let chosen = saved_state(src, &["outer"]);
        assert!(
            chosen
                .iter()
                .any(|(line, m)| *line == 13 && m.starts_with("`s`")),
            "{chosen:?}"
        );
        assert_eq!(saved_state(src, &[]), Vec::new());
    }

    /// Issue 41: a READ that may read back an active value a WRITE wrote
    /// is a warning on the READ, naming the WRITE, for a chosen root (as
    /// `dfort check --root` and `dfort adjoint` say it); nobody chose
    /// a root, nothing is active: no warning.
    #[test]
    fn a_read_that_may_read_back_an_active_value_is_a_warning() {
        let src = include_str!("../../../tests/fixtures/free/file_roundtrip.f90");
        let cuts = of_chosen_roots(src, &["roundtrip"], "cut-by-io");
        let starts: Vec<(u32, &str)> = cuts.iter().map(|(l, m)| (*l, &m[..3])).collect();
        assert_eq!(starts, [(15, "`t`"), (18, "`s`")], "{cuts:?}");
        assert_eq!(of_chosen_roots(src, &[], "cut-by-io"), Vec::new());
    }

    #[test]
    fn maxval_and_norm2_of_active_arrays_say_where_they_are_not_differentiable() {
        let src = include_str!("../../../tests/fixtures/kernels/maxval.f90");
        let messages = non_differentiable("maxval.f90", src);
        assert!(
            messages
                .iter()
                .any(|m| m.starts_with("`maxval` of the active value `t`")
                    && m.contains("the first, the one maxloc/minloc returns")),
            "{messages:?}"
        );
        assert!(
            messages
                .iter()
                .any(|m| m.starts_with("`minval` of the active value `x`")),
            "{messages:?}"
        );
        let src = include_str!("../../../tests/fixtures/kernels/norm2.f90");
        let messages = non_differentiable("norm2.f90", src);
        assert!(
            messages
                .iter()
                .any(|m| m.starts_with("`norm2` of the active value `t`")
                    && m.contains("subgradient 0")),
            "{messages:?}"
        );
    }

    #[test]
    fn a_reset_index_in_a_unit_with_jumps_gets_an_information_diagnostic() {
        let src = include_str!("../../../tests/fixtures/kernels/goto_skip.f90");
        assert_eq!(
            address_stored("goto_skip.f90", src),
            vec![(
                "index m cannot be recovered by inversion: an assignment that does not read it at line 16; it is stored each time it is overwritten there".to_string(),
                "1",
                dfort_syntax::Severity::Note
            )]
        );
    }

    #[test]
    fn indices_the_reverse_sweep_stores_get_an_information_diagnostic() {
        let src = "subroutine amb(a, n)
  implicit none
  real(8), intent(inout) :: a(*)
  integer, intent(in) :: n
  integer :: j, m, ii
!$ad independent(a)
!$ad dependent(a)
  j = 1
  ii = n
  do while (j < n)
    if (a(j) > 0) then
      m = j + 1
    else
      m = j + 2
    end if
    a(m) = a(m)*a(j)*a(ii)
    j = j + 3
    ii = ii/2
  end do
end subroutine amb
";
        let found = address_stored("amb.f90", src);
        let note = dfort_syntax::Severity::Note;
        assert_eq!(
            found,
            vec![
                (
                    "index m cannot be recovered by inversion: it is assigned inside a branch or a nested loop at line 12; it is stored each time it is overwritten".to_string(),
                    "m = j + 1",
                    note
                ),
                (
                    "index ii cannot be recovered by inversion: integer division at line 18; it is stored each iteration".to_string(),
                    "ii/2",
                    note
                ),
            ]
        );
    }

    /// The `no-source` warnings of `src` and the refusals of the adjoint
    /// and tangent of its first unit (every real dummy independent and
    /// dependent), which must be of the `no-source` rule too.
    fn no_source(src: &str) -> (Vec<String>, Vec<String>, Vec<String>) {
        let path = Path::new("/diagnostic-tests/ext.f90");
        let mut host = Host::default();
        host.set_text(path, src, true, 1);
        let snap = host.snapshot();
        let warned = snap
            .diagnostics(path)
            .iter()
            .filter(|d| d.code == "no-source")
            .map(|d| d.message.clone())
            .collect();
        let unit = &snap.program.units[dfort_ir::UnitId(0)];
        let facts = crate::actions::every_dummy_active(&snap, unit);
        // The refusals' messages; a call's refusal is the editor's rule.
        let messages = |r: Result<String, Vec<dfort_codegen::Refusal>>| -> Vec<String> {
            r.err()
                .unwrap_or_default()
                .into_iter()
                .map(|r| {
                    assert_eq!(r.rule, &dfort_syntax::rules::NO_SOURCE, "{}", r.message);
                    r.message
                })
                .collect()
        };
        let adjoint =
            messages(dfort_codegen::adjoint::adjoint_of(&facts, unit.id, "").map(|(text, _)| text));
        let tangent = messages(dfort_codegen::tangent::tangent_of(&facts, unit.id, ""));
        (warned, adjoint, tangent)
    }

    /// Issue 15: the editor's warning and the generators' refusal are one
    /// rule with one activity test (`active_actuals`).
    #[test]
    fn an_active_actual_to_a_procedure_without_source_is_one_rule() {
        // `t` is active where `y` reads it, but not at the call: nothing
        // after the call depends on what `log_value` may write, so no
        // derivative flows through it (the generators used to refuse
        // this, the editor did not warn).
        let passive_at_call = "subroutine ext(x, y)
  implicit none
  real(8), intent(in) :: x(2)
  real(8), intent(inout) :: y
  real(8) :: t
  external :: log_value
  t = 2.0d0*x(1)
  y = t*t
  call log_value(t)
end subroutine ext
";
        let (warned, adjoint, tangent) = no_source(passive_at_call);
        assert!(warned.is_empty(), "{warned:?}");
        assert!(adjoint.is_empty(), "{adjoint:?}");
        assert!(tangent.is_empty(), "{tangent:?}");
        // An expression actual whose value reaches `u`, which `y` reads:
        // the editor used to look at variable actuals only.
        let expression = "subroutine ext(x, y)
  implicit none
  real(8), intent(in) :: x(2)
  real(8), intent(inout) :: y
  real(8) :: u
  external :: scale
  call scale(2.0d0*x(1), u)
  y = y + u
end subroutine ext
";
        let (warned, adjoint, tangent) = no_source(expression);
        let said = "`scale` receives the active values `x`, `u` but dfort has no source for it: the adjoint and tangent cannot be generated through this call; give dfort its source";
        assert_eq!(warned, [said]);
        assert_eq!(adjoint, [said]);
        assert_eq!(tangent, [said]);
    }

    #[test]
    fn a_defined_operator_without_a_specific_is_named_as_an_operator() {
        let src = "\
subroutine ext(x, y)
  real(8), intent(in) :: x(2)
  real(8), intent(inout) :: y
  y = y + (x(1) .cross. x(2))
end subroutine ext
";
        let (warned, adjoint, tangent) = no_source(src);
        let said = "the operator `.cross.` receives the active value `x` but dfort finds no `interface operator(.cross.)` with a specific these operands fit: the adjoint and tangent cannot be generated through it; give dfort the module that defines it";
        assert_eq!(warned, [said]);
        assert_eq!(adjoint, [said]);
        assert_eq!(tangent, [said]);
    }
}
