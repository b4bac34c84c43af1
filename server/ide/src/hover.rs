//! Hover text for a variable or a procedure name: the declaration, whether
//! the variable is varied / useful / active at the statement under the
//! cursor and why (paper 000 §4, the chains of `dfort_analysis::explain`),
//! and whether the value the statement overwrites is recorded for the
//! adjoint (TBR, §5) and which later adjoint statement needs it; for an
//! integer inside a DO loop whose recovery plan (paper 003 §3–4) covers
//! it, how the reverse sweep gets each of its values back: inverted,
//! recomputed, stored each iteration (and what blocks the inversion), or
//! saved once after the loop. On a derived-type variable it lists the
//! components that carry derivatives (its derivative type's) and the
//! passive ones.
//!
//! Contract: plain Markdown; `None` when the cursor is on no name dfort
//! knows; never panics on any offset.

use crate::host::Snapshot;
use crate::text::{line_text, word_at};
use dfort_analysis::activity::Activity;
use dfort_analysis::address_report::LoopReport;
use dfort_analysis::decisions::NeededBy;
use dfort_analysis::explain::Step;
use dfort_ir::{BaseType, ExprKind, FileId, Span, Stmt, StmtKind, Storage, Symbol, SymbolId, Unit};
use dfort_syntax::TextRange;
use std::fmt::Write;
use std::path::Path;

pub struct Hover {
    pub range: TextRange,
    pub markdown: String,
}

pub fn hover(snap: &Snapshot, path: &Path, offset: u32) -> Option<Hover> {
    let doc = snap.doc(path)?;
    if let Some(h) = crate::cpp_hover::hover(doc, offset) {
        return Some(h);
    }
    let fixed = matches!(doc.form, dfort_syntax::SourceForm::Fixed(_));
    if let Some(mut h) = directive(doc, fixed, offset) {
        h.markdown
            .push_str(&checkpoint_decision(snap, path, offset));
        return Some(h);
    }
    if !crate::text::in_code(&doc.text, &doc.lines, fixed, offset) {
        return None;
    }
    let (range, name) = word_at(&doc.text, offset)?;
    let unit = snap.unit_at(path, offset);
    if let Some(unit) = unit {
        if let Some(sym) = unit.lookup(&name) {
            if unit.symbol(sym).storage != Storage::Procedure && unit.name != name {
                // A pointer the analyses read as its target here: the
                // hover is about the target.
                if let Some((target, seen)) = pointer_target(snap, path, unit, sym, offset) {
                    let about = variable(snap, path, unit, target, range)?;
                    let markdown = format!(
                        "**{name}** is a pointer; here it is `{seen}`, and dfort reads it so: what follows is about `{}`.\n\n{about}",
                        unit.symbol(target).name
                    );
                    return Some(Hover { range, markdown });
                }
                let mut markdown = variable(snap, path, unit, sym, range)?;
                markdown.push_str(&aliasing_note(snap, unit, sym));
                return Some(Hover { range, markdown });
            }
        }
    }
    let target = snap
        .program
        .units
        .iter()
        .find(|u| u.name == name && u.kind != dfort_ir::UnitKind::BlockData)?;
    Some(Hover {
        range,
        markdown: procedure(snap, target),
    })
}

/// On an AD directive's line (dfort's, OpenAD's, Tapenade's or TAF's),
/// away from the variables a role directive names: what dfort does with
/// the directive.
fn directive(doc: &crate::host::DocView, fixed: bool, offset: u32) -> Option<Hover> {
    let line = doc.lines.line_range(doc.lines.line_of(offset))?;
    let text = doc.text.get(line.start as usize..line.end as usize)?;
    let d = dfort_syntax::ad_directives::parse(text, fixed)?;
    if let Some((_, word)) = word_at(&doc.text, offset) {
        if d.args.contains(&word.to_ascii_lowercase()) {
            return None;
        }
    }
    let trimmed = text.trim_end_matches(['\n', '\r']);
    Some(Hover {
        range: TextRange::new(line.start, line.start + trimmed.len() as u32),
        markdown: format!("**{} directive**\n\n{}\n", d.tool.name(), d.hover()),
    })
}

/// On a `binomial-ckp` directive's line: what the analyses decided for
/// the loop it marks — its snapshots and schedule, or why it cannot be
/// checkpointed (empty elsewhere).
fn checkpoint_decision(snap: &Snapshot, path: &Path, offset: u32) -> String {
    use dfort_analysis::reversal::Reversal;
    let Some(unit) = snap.unit_at(path, offset) else {
        return String::new();
    };
    let (Some(decided), Some(analysed)) = (
        snap.analysis().decisions_of(unit.id),
        crate::hints::analysed_unit(snap, unit),
    ) else {
        return String::new();
    };
    let r = &decided.reversal;
    if let Some((_, why)) = r
        .misplaced_marks
        .iter()
        .find(|(s, _)| s.range.start <= offset && offset <= s.range.end)
    {
        return format!("\nNot applied: {why}.\n");
    }
    for (span, id) in &r.marked_loops {
        if !(span.range.start <= offset && offset <= span.range.end) {
            continue;
        }
        return match r.of_stmt(*id) {
            Some(Reversal::Binomial(b)) => {
                format!("\n{}\n", crate::render::binomial_hint(&analysed, b).1)
            }
            Some(Reversal::BinomialRefused(why)) => format!("\nNot applied: {why}.\n"),
            _ => String::new(),
        };
    }
    String::new()
}

/// What the hover on a variable adds when it may share memory with
/// others (its may-alias class, `dfort_analysis::aliases`) or is a
/// pointer dfort follows rather than reads as its target.
fn aliasing_note(snap: &Snapshot, unit: &Unit, sym: SymbolId) -> String {
    let Some(analysed) = crate::hints::analysed_unit(snap, unit) else {
        return String::new();
    };
    let pointer = unit.symbol(sym).attrs.pointer;
    let others: Vec<String> = dfort_ir::queries::class_of(&analysed, sym)
        .unwrap_or(&[])
        .iter()
        .filter(|s| **s != sym)
        .filter_map(|s| analysed.symbols.get(*s))
        .map(|s| format!("`{}`", s.name))
        .collect();
    let mut out = String::new();
    if !others.is_empty() {
        let _ = write!(
            out,
            "\nMay share its memory with {} (pointer associations or EQUIVALENCE): the analyses treat them as one variable, so a write to one is a partial write to all.\n",
            others.join(", ")
        );
    }
    if pointer {
        out.push_str("\nA pointer dfort follows where it cannot read it as its target: a derivative pointer follows each of its associations, and the adjoint saves the association at each pointer assignment, NULLIFY, ALLOCATE and DEALLOCATE of it and restores it in the reverse sweep.\n");
    }
    out
}

/// The variable a pointer is read as at `offset` (the analysed unit holds
/// its target there, under the use's span), and that target as written.
fn pointer_target(
    snap: &Snapshot,
    path: &Path,
    unit: &Unit,
    sym: SymbolId,
    offset: u32,
) -> Option<(SymbolId, String)> {
    if !unit.symbol(sym).attrs.pointer {
        return None;
    }
    let (file, rel) = snap.chunk_at(path, offset)?;
    let st = stmt_at(unit, rel).filter(|st| st.span.file == file)?;
    let analysed = crate::hints::analysed_unit(snap, unit)?;
    let ast = analysed.stmts.get(st.id)?;
    let mut best: Option<&dfort_ir::Expr> = None;
    for e in ast.kind.exprs() {
        e.walk(&mut |x| {
            let r = x.span.range;
            let data = matches!(x.kind, ExprKind::Var(_) | ExprKind::ArrayRef { .. });
            let inside = data && x.span.file == file && r.start <= rel && rel < r.end;
            if inside
                && best.is_none_or(|b| r.end - r.start < b.span.range.end - b.span.range.start)
            {
                best = Some(x);
            }
        });
    }
    let best = best?;
    let (target, _) = dfort_ir::dp::target(best)?;
    (target != sym).then(|| (target, dfort_ir::dump::expr(&analysed, best)))
}

/// The statement of `unit` holding the chunk-relative offset (innermost).
pub fn stmt_at(unit: &Unit, rel: u32) -> Option<&Stmt> {
    unit.stmts
        .iter()
        .filter(|s| s.span.range.start <= rel && rel < s.span.range.end.max(s.span.range.start + 1))
        .min_by_key(|s| s.span.range.end - s.span.range.start)
}

/// The 1-based document line where a span starts.
pub(crate) fn span_line(snap: &Snapshot, span: Span) -> Option<u32> {
    let (path, range) = snap.to_doc(span.file, span.range)?;
    Some(snap.doc(path)?.lines.line_of(range.start) + 1)
}

/// The 1-based document line of a unit's statement, and its first line of text.
pub(crate) fn stmt_line(snap: &Snapshot, st: &Stmt) -> Option<(u32, String)> {
    let (path, range) = snap.to_doc(st.span.file, st.span.range)?;
    let doc = snap.doc(path)?;
    Some((
        doc.lines.line_of(range.start) + 1,
        line_text(&doc.text, &doc.lines, range.start)
            .trim()
            .to_string(),
    ))
}

fn declaration(snap: &Snapshot, s: &Symbol) -> Option<String> {
    // A use- or host-associated name is declared where it comes from.
    let mut s = s;
    for _ in 0..8 {
        match &s.storage {
            Storage::Imported { from, symbol, .. } if !s.declared => {
                s = snap.program.units.get(*from)?.symbols.get(*symbol)?;
            }
            _ => break,
        }
    }
    if !s.declared {
        return None;
    }
    let (path, range) = snap.to_doc(s.span.file, s.span.range)?;
    let doc = snap.doc(path)?;
    Some(
        line_text(&doc.text, &doc.lines, range.start)
            .trim()
            .to_string(),
    )
}

fn storage(snap: &Snapshot, unit: &Unit, s: &Symbol) -> String {
    match &s.storage {
        Storage::Dummy(i) => format!("argument {} of `{}`", i + 1, unit.name),
        Storage::Local if dfort_ir::queries::is_saved_local(unit, s) => format!(
            "SAVE'd local of `{}`: its value carries from one call to the next",
            unit.name
        ),
        Storage::Local if unit.kind == dfort_ir::UnitKind::Module => {
            format!("variable of module `{}`", unit.name)
        }
        Storage::Local => format!("local to `{}`", unit.name),
        Storage::Result => format!("result of `{}`", unit.name),
        Storage::Common { block, .. } if block.is_empty() => "in blank COMMON".into(),
        Storage::Common { block, .. } => format!("in COMMON /{block}/"),
        Storage::Imported { from, .. } => {
            let host = snap
                .program
                .units
                .get(*from)
                .map_or("?", |u| u.name.as_str());
            format!("from `{host}`")
        }
        Storage::UnknownModule { module }
            if dfort_ir::intrinsic_modules::is_intrinsic_module(module) =>
        {
            match s.init.as_ref().map(|e| &e.kind) {
                Some(ExprKind::Int(v)) => {
                    format!(
                        "named constant of the intrinsic module `{module}` (= {v} with gfortran)"
                    )
                }
                _ => format!("from the intrinsic module `{module}`"),
            }
        }
        Storage::UnknownModule { module } => format!("from module `{module}` (no source)"),
        Storage::Procedure => "a procedure".into(),
    }
}

/// A variable's declaration and what it is (type, rank, intent, where it
/// lives), as the first lines of its hover.
pub(crate) fn summary(snap: &Snapshot, unit: &Unit, s: &Symbol) -> String {
    let mut md = String::new();
    let decl = declaration(snap, s).unwrap_or_else(|| {
        format!(
            "{} :: {} (implicitly typed)",
            dfort_ir::dump::type_name(&s.ty),
            s.name
        )
    });
    let _ = writeln!(md, "**{}** — `{}`\n", s.name, decl);
    let mut facts = vec![dfort_ir::dump::type_name(&s.ty)];
    if s.rank() > 0 {
        facts.push(format!("rank {}", s.rank()));
    }
    if let Some(i) = s.intent {
        facts.push(format!("intent({})", i.as_str()));
    }
    facts.push(storage(snap, unit, s));
    let _ = writeln!(md, "{}\n", facts.join(" · "));
    md
}

pub(crate) fn variable(
    snap: &Snapshot,
    path: &Path,
    unit: &Unit,
    sym: SymbolId,
    range: TextRange,
) -> Option<String> {
    let s = unit.symbol(sym);
    let mut md = summary(snap, unit, s);
    let a = snap.analysis();
    let Some(act) = a.activity.activity[unit.id].as_ref() else {
        let _ = writeln!(
            md,
            "Activity: not analysed — no root reaches `{}` (set roots in `dfort.toml` or the `dfort.roots` setting, or mark independents with `!$ad independent(...)`).",
            unit.name
        );
        return Some(md);
    };
    let shared = dfort_ir::queries::is_saved_local(unit, s)
        && unit
            .lookup(&s.name)
            .is_some_and(|id| a.shared_state().contains(&(unit.id, id)));
    if shared {
        let _ = writeln!(md, "{}\n", crate::render::shared_state(&s.name, &unit.name));
    }
    // Derived-type variables carry derivatives in their real and
    // complex components (the derivative type `t_d` / `t_b`).
    let derivative_type = snap.program.derivative_type_of(unit, &s.ty);
    let carries =
        s.ty.is_real_or_complex() || derivative_type == Some(dfort_ir::DerivativeType::Yes);
    match &derivative_type {
        Some(dfort_ir::DerivativeType::Yes) => {
            let _ = writeln!(md, "{}\n", components(snap, unit, &s.ty));
        }
        Some(dfort_ir::DerivativeType::Passive) => {
            let _ = writeln!(
                md,
                "**not active**: no component of its type carries derivatives (only real and complex ones do)."
            );
        }
        Some(dfort_ir::DerivativeType::Unsupported(why)) => {
            let _ = writeln!(
                md,
                "**no derivative**: {why}; dfort refuses to differentiate it where it is active."
            );
        }
        None if !s.ty.is_real_or_complex() => {
            let _ = writeln!(
                md,
                "**not active**: only real and complex variables carry derivatives."
            );
        }
        None => {}
    }
    let (file, rel) = snap.chunk_at(path, range.start)?;
    // The statement as the analyses read it (same id): a pointer is its
    // target there.
    let analysed = crate::hints::analysed_unit(snap, unit);
    let st = stmt_at(unit, rel)
        .filter(|st| st.span.file == file)
        .map(|st| {
            analysed
                .as_ref()
                .and_then(|a| a.stmts.get(st.id))
                .unwrap_or(st)
        });
    match st {
        Some(st) if carries => {
            let writes = matches!(&st.kind, StmtKind::Assign { lhs, .. }
                if matches!(&lhs.kind, ExprKind::Var(x) | ExprKind::ArrayRef { array: x, .. } if *x == sym)
                    && rel < lhs.span.range.end.max(lhs.span.range.start + 1));
            let i = st.id;
            let (when, varied, useful) = if writes {
                (
                    "after this statement",
                    act.varied_after[i].contains_id(sym),
                    act.useful_after[i].contains_id(sym),
                )
            } else {
                (
                    "before this statement",
                    act.varied_before[i].contains_id(sym),
                    act.useful_before[i].contains_id(sym),
                )
            };
            let verdict = if varied && useful {
                "**active**"
            } else {
                "**not active**"
            };
            let _ = writeln!(
                md,
                "{verdict} {when}: {} and {}.\n",
                if varied {
                    "varied (it depends on an independent)"
                } else {
                    "not varied (no independent reaches it)"
                },
                if useful {
                    "useful (a dependent depends on it)"
                } else {
                    "not useful (no dependent depends on it)"
                }
            );
        }
        _ if carries => {
            let anywhere = act.active_anywhere().contains_id(sym);
            let _ = writeln!(
                md,
                "{} in `{}`.\n",
                if anywhere {
                    "**active** somewhere"
                } else {
                    "**not active** anywhere"
                },
                unit.name
            );
        }
        _ => {}
    }
    if carries {
        why(snap, unit, act, sym, &mut md);
    }
    if let Some(st) = st {
        recorded(snap, unit, st, sym, &mut md);
    }
    if s.ty.base == BaseType::Integer {
        address(snap, unit, sym, file, rel, &mut md);
    }
    Some(md)
}

/// Which components of a derived type carry derivatives and which do
/// not: `pos%x, mass carry derivatives (in \`particle_b\`); id does not`.
fn components(snap: &Snapshot, unit: &Unit, ty: &dfort_ir::Type) -> String {
    let carried = dfort_codegen::derived::leaves(&snap.program, unit, ty);
    let mut passive = Vec::new();
    let mut name = ty.derived.clone().unwrap_or_default();
    if let Some((owner, def)) = snap.program.type_of(unit, ty) {
        name = def.name.clone();
        let owner = snap.program.unit(owner);
        for c in &def.components {
            let has = match c.ty.base {
                BaseType::Real | BaseType::Complex => true,
                BaseType::Derived => {
                    snap.program.derivative_type_of(owner, &c.ty)
                        == Some(dfort_ir::DerivativeType::Yes)
                }
                _ => false,
            };
            if !has {
                passive.push(format!("`%{}`", c.name));
            }
        }
    }
    let carried: Vec<String> = carried.iter().map(|l| format!("`{l}`")).collect();
    let mut out = format!(
        "Components with derivatives (type `{name}_d` / `{name}_b`): {}",
        carried.join(", ")
    );
    if !passive.is_empty() {
        let _ = write!(out, "; passive: {}", passive.join(", "));
    }
    out.push('.');
    out
}

/// How the reverse sweep recovers the integer `sym` in each planned loop
/// around the cursor (innermost first), or in a unit with jumps.
fn address(snap: &Snapshot, unit: &Unit, sym: SymbolId, file: FileId, rel: u32, md: &mut String) {
    let Some(al) = crate::hints::address_loops(snap, unit) else {
        return;
    };
    let u = &*al.unit;
    let mut loops: Vec<&LoopReport> = al
        .loops
        .iter()
        .filter(|r| {
            let sp = r.stmt.map_or(u.span, |s| u.stmt(s).span);
            sp.file == file && sp.range.start <= rel && rel < sp.range.end
        })
        .collect();
    loops.sort_by_key(|r| {
        let sp = r.stmt.map_or(u.span, |s| u.stmt(s).span).range;
        sp.end - sp.start
    });
    for r in loops {
        if let Some(x) = r.vars.iter().find(|x| x.var == sym) {
            md.push_str(&crate::render::hover(u, r, x, snap));
        }
    }
}

fn steps_md(snap: &Snapshot, unit: &Unit, title: &str, steps: &[Step], md: &mut String) {
    if steps.is_empty() {
        return;
    }
    let _ = writeln!(md, "{title}");
    for s in steps {
        match s.stmt.and_then(|id| stmt_line(snap, unit.stmt(id))) {
            Some((line, text)) => {
                let _ = writeln!(
                    md,
                    "- line {line} `{text}`: {}",
                    crate::render::why(unit, &s.why)
                );
            }
            None => {
                let _ = writeln!(md, "- {}", crate::render::why(unit, &s.why));
            }
        }
    }
    md.push('\n');
}

fn why(snap: &Snapshot, unit: &Unit, act: &Activity, sym: SymbolId, md: &mut String) {
    let Some((ind, dep)) = snap.analysis().context(unit.id) else {
        return;
    };
    let anywhere = act.active_anywhere();
    if !anywhere.contains_id(sym) {
        return;
    }
    // The chains follow the unit as analysed (pointers read as their
    // targets, may-alias classes).
    let analysed = crate::hints::analysed_unit(snap, unit);
    let unit = analysed.as_deref().unwrap_or(unit);
    steps_md(
        snap,
        unit,
        "Why varied:",
        &act.varied_chain(unit, ind, sym),
        md,
    );
    steps_md(
        snap,
        unit,
        "Why useful:",
        &act.useful_chain(unit, dep, sym),
        md,
    );
}

fn recorded(snap: &Snapshot, unit: &Unit, st: &Stmt, sym: SymbolId, md: &mut String) {
    // What the forward sweep pushes, as the analysis decided it for the
    // generator (on the unit as analysed: EXIT and CYCLE structured, its
    // statements keep their ids, appended ones sit at their loop).
    let (Some(decided), Some(analysed)) = (
        snap.analysis().decisions_of(unit.id),
        crate::hints::analysed_unit(snap, unit),
    ) else {
        return;
    };
    let name = &unit.symbol(sym).name;
    // Recomputed at the start of each reversed iteration instead.
    let again = snap.analysis().tbr_of(unit.id).and_then(|t| {
        t.recomputed
            .iter()
            .find(|r| r.vars.contains_id(sym) && r.stmts.contains(&st.id))
    });
    if let Some(r) = again {
        let lp = analysed
            .stmts
            .get(r.lp)
            .and_then(|s| stmt_line(snap, s))
            .map_or(String::new(), |(l, _)| format!(" of the loop at line {l}"));
        let _ = writeln!(md, "{}", crate::render::recomputed(name, &lp));
        return;
    }
    let here = decided
        .pushed
        .iter()
        .find(|p| p.stmt == st.id && p.variable == sym);
    if let Some(push) = here {
        let _ = write!(
            md,
            "**Recorded for the adjoint (TBR):** the forward sweep pushes `{name}` before this statement overwrites it"
        );
        let by = match push.needed_by {
            NeededBy::AdjointOf(s) => analysed.stmts.get(s).and_then(|s| stmt_line(snap, s)),
            _ => None,
        };
        match (push.needed_by, by) {
            (NeededBy::OwnAdjoint, _) => {
                let _ = writeln!(md, "; the adjoint of this statement needs the old value.");
            }
            (NeededBy::AdjointOf(_), Some((line, text))) => {
                let _ = writeln!(
                    md,
                    "; the adjoint of line {line} (`{text}`), which the reverse sweep runs later, needs the old value."
                );
            }
            _ => {
                let _ = writeln!(md, ".");
            }
        }
        return;
    }
    let writes = matches!(&st.kind, StmtKind::Assign { lhs, .. }
        if matches!(&lhs.kind, ExprKind::Var(x) | ExprKind::ArrayRef { array: x, .. } if *x == sym));
    // TBR asks for the value, but the forward sweep drops the statement,
    // so nothing overwrites it.
    let dropped = decided.dead.contains(&st.id)
        && snap.analysis().tbr_of(unit.id).is_some_and(|t| {
            t.records
                .iter()
                .any(|r| r.stmt == st.id && r.variable == sym)
        });
    let left = snap
        .analysis()
        .tbr_of(unit.id)
        .is_some_and(|t| t.left_to_callers.contains(&sym));
    // Cleared by the final reads of a loop around it.
    let final_loop = snap.analysis().tbr_of(unit.id).and_then(|t| {
        t.final_reads
            .iter()
            .find(|p| p.var == sym && p.inside.contains(&st.id) && !p.recording.contains(&st.id))
            .and_then(|p| stmt_line(snap, analysed.stmts.get(p.lp)?).map(|(l, _)| l))
    });
    if writes && dropped {
        let _ = writeln!(md, "{}", crate::render::DROPPED_STATEMENT);
    } else if let (true, Some(line)) = (writes && !left, final_loop) {
        let _ = writeln!(md, "{}", crate::render::final_reads(name, line));
    } else if writes && left {
        let _ = writeln!(md, "{}", crate::render::left_to_callers(name));
    } else if writes && unit.symbol(sym).ty.is_real_or_complex() {
        let _ = writeln!(md, "{}", crate::render::not_needed(name));
    }
    let elsewhere: Vec<u32> = decided
        .pushed
        .iter()
        .filter(|r| r.variable == sym && r.stmt != st.id)
        .filter_map(|r| stmt_line(snap, analysed.stmts.get(r.stmt)?).map(|(l, _)| l))
        .collect();
    if !elsewhere.is_empty() {
        let mut lines = elsewhere;
        lines.sort();
        lines.dedup();
        let _ = writeln!(md, "{}", crate::render::recorded_elsewhere(name, &lines));
    }
}

pub(crate) fn procedure(snap: &Snapshot, u: &Unit) -> String {
    let mut md = String::new();
    let args: Vec<&str> = u.args.iter().map(|a| u.symbol(*a).name.as_str()).collect();
    let _ = writeln!(
        md,
        "**{} {}**{}\n",
        u.kind.as_str(),
        u.name,
        if u.is_procedure() {
            format!("({})", args.join(", "))
        } else {
            String::new()
        }
    );
    let a = snap.analysis();
    if let Some(r) = a.roles_of(u.id) {
        let names = |set: &dfort_ir::bitset::BitSet| {
            let mut v: Vec<&str> = set
                .ids()
                .filter_map(|i| u.symbols.get(i).map(|s| s.name.as_str()))
                .collect();
            v.sort();
            v.join(", ")
        };
        let _ = writeln!(
            md,
            "Root of the analysis: independents {}; dependents {} (from {}).",
            or_none(names(&r.independents)),
            or_none(names(&r.dependents)),
            r.source.as_str()
        );
        if let Some((cu, at)) = r.after.last() {
            let call = a.program.units.get(*cu).and_then(|cu| cu.stmts.get(*at));
            if let Some(dfort_ir::StmtKind::Call { name, .. }) = call.map(|s| &s.kind) {
                let _ = writeln!(
                    md,
                    "The independents take their values when the call to `{name}` returns: what runs before it is not differentiated (`after`)."
                );
            }
        }
    }
    if let Some(act) = a.activity.activity[u.id].as_ref() {
        let mut active: Vec<&str> = act
            .active_anywhere()
            .ids()
            .filter_map(|i| u.symbols.get(i).map(|s| s.name.as_str()))
            .collect();
        active.sort();
        let _ = writeln!(md, "\nActive variables: {}.", or_none(active.join(", ")));
        if let Some(t) = a.tbr_of(u.id) {
            let _ = writeln!(
                md,
                "\nThe adjoint's forward sweep records {} overwritten value{} (TBR).",
                t.records.len(),
                if t.records.len() == 1 { "" } else { "s" }
            );
        }
    } else if u.is_procedure() {
        let _ = writeln!(md, "Not reached by any root of the analysis.");
    }
    md
}

fn or_none(s: String) -> String {
    if s.is_empty() {
        "none".into()
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use crate::host::Host;
    use std::path::Path;

    /// Hovers over `src`, opened as `path` (`open`: as the editor's
    /// buffer): the markdown at the first occurrence of a needle.
    fn hovers(path: &Path, src: &str, open: bool) -> impl Fn(&str) -> String {
        let mut host = Host::default();
        host.set_text(path, src, open, 1);
        let snap = host.snapshot();
        let (path, src) = (path.to_path_buf(), src.to_string());
        move |needle| {
            let at = src.find(needle).expect("the needle is in the source") as u32;
            super::hover(&snap, &path, at)
                .expect("a hover at the needle")
                .markdown
        }
    }

    #[test]
    fn an_index_hover_says_how_the_reverse_sweep_recovers_it() {
        // Paper 003, Figure 2 (a).
        let src = "subroutine fig2a(a)
  implicit none
  real(8), intent(inout) :: a(*)
  integer :: j, k
!$ad independent(a)
!$ad dependent(a)
  j = 1
  do while (j < 6)
    k = j + 1
    j = k + 2
    a(j) = a(k)*a(j)
  end do
end subroutine fig2a
";
        let path = Path::new("/hover-tests/fig2a.f90");
        let hover_at = hovers(path, src, true);
        let k = hover_at("k = j + 1");
        assert!(
            k.ends_with(
                "**Address recovery** (loop at line 8): inverted — k ← j - 2 (inverting line 10).\n"
            ),
            "{k}"
        );
        let j = hover_at("j = k + 2");
        assert!(
            j.ends_with(
                "**Address recovery** (loop at line 8): inverted
- value when an iteration starts: inverted — j ← k - 1 (inverting line 9)
- value after line 10: final value saved once after the loop
"
            ),
            "{j}"
        );
        // Outside the loop: no section.
        let before = hover_at("j = 1");
        assert!(!before.contains("Address recovery"), "{before}");
    }

    /// Issue 40: a root whose independents are taken after a call says
    /// so on its hover, and the statements before that call are passive.
    #[test]
    fn a_root_hover_says_its_independents_are_taken_after_a_call() {
        let src = "subroutine model(fc)
  implicit none
  real(8) :: fc, t(4)
  common /state/ t
  call setup
  fc = sum(t**2)
end subroutine model
subroutine setup
  implicit none
  real(8) :: t(4)
  common /state/ t
  t = 1.0d0
end subroutine setup
";
        let path = Path::new("/hover-tests/after.f90");
        let config = crate::host::HostConfig {
            roots: vec![dfort_analysis::roots::RootSpec {
                name: "model".into(),
                independent: vec!["t".into()],
                dependent: vec!["fc".into()],
                after: Some("setup".into()),
            }],
            ..Default::default()
        };
        let mut host = Host::new(config);
        host.set_text(path, src, true, 1);
        let snap = host.snapshot();
        let at = |needle: &str| src.find(needle).unwrap() as u32;
        let root = super::hover(&snap, path, at("model(fc)")).unwrap().markdown;
        assert!(
            root.contains("The independents take their values when the call to `setup` returns"),
            "{root}"
        );
        // In `setup`, before that point, `t` is not varied; in the root,
        // after it, it is active.
        let t = super::hover(&snap, path, at("t = 1.0d0")).unwrap().markdown;
        assert!(t.contains("not varied (no independent reaches it)"), "{t}");
        let used = super::hover(&snap, path, at("t**2")).unwrap().markdown;
        assert!(used.contains("**active** before this statement"), "{used}");
    }

    /// Issue 17: a derived-type variable's hover says which components
    /// carry derivatives and whether it is active.
    #[test]
    fn a_pointer_hover_is_about_the_target_it_is_read_as_there() {
        let src = "subroutine sp(a, n, y)
  implicit none
  integer, intent(in) :: n
  real(8), target, intent(inout) :: a(n)
  real(8), intent(out) :: y
  real(8), pointer :: p(:), q(:)
  logical :: c
!$ad independent(a)
!$ad dependent(y)
  p => a(2:n)
  p(1) = p(1) * p(2)
  y = p(1)
  c = n > 3
  if (c) then
    q => a
  else
    q => p
  end if
  y = y + q(1)
end subroutine sp
";
        let path = Path::new("/hover-tests/sp.f90");
        let hover_at = hovers(path, src, true);
        let p = hover_at("p(1) = p(1)");
        assert!(
            p.starts_with("**p** is a pointer; here it is `a(2)`, and dfort reads it so: what follows is about `a`."),
            "{p}"
        );
        assert!(p.contains("**active** after this statement"), "{p}");
        assert!(
            p.contains("the forward sweep pushes `a` before this statement overwrites it"),
            "{p}"
        );
        // Associated differently on the two paths: not read as a target
        // but followed, one may-alias class with what it may point to.
        let q = hover_at("q(1)");
        assert!(q.starts_with("**q**"), "{q}");
        assert!(q.contains("May share its memory with `a`, `p`"), "{q}");
        assert!(
            q.contains("A pointer dfort follows where it cannot read it as its target"),
            "{q}"
        );
    }

    #[test]
    fn a_hover_on_a_use_associated_array_shows_the_modules_declaration() {
        let src = "module fields
  implicit none
  real(8) :: h(100), flux(100)
end module fields

subroutine step(n)
  use fields
  implicit none
  integer, intent(in) :: n
  h(1:n) = h(1:n) + flux(1:n)
end subroutine step
";
        let path = Path::new("/hover-tests/fields.f90");
        let hover_at = hovers(path, src, true);
        let h = hover_at("h(1:n) =");
        assert!(
            h.starts_with("**h** — `real(8) :: h(100), flux(100)`"),
            "{h}"
        );
        assert!(!h.contains("implicitly typed"), "{h}");
        assert!(h.contains("from `fields`"), "{h}");
    }

    #[test]
    fn a_hover_on_an_intrinsic_module_constant_gives_its_value() {
        let src = "subroutine wk(x)
  use, intrinsic :: iso_fortran_env, only: dp => real64, output_unit
  implicit none
  real(dp), intent(in) :: x
  write (output_unit, *) x
end subroutine wk
";
        let path = Path::new("/hover-tests/wk.f90");
        let hover_at = hovers(path, src, true);
        let u = hover_at("output_unit, *");
        assert!(
            u.contains(
                "named constant of the intrinsic module `iso_fortran_env` (= 6 with gfortran)"
            ),
            "{u}"
        );
        let dp = hover_at("dp), intent");
        assert!(
            dp.contains(
                "named constant of the intrinsic module `iso_fortran_env` (= 8 with gfortran)"
            ),
            "{dp}"
        );
    }

    #[test]
    fn a_hover_on_binomial_ckp_says_what_the_loops_adjoint_saves() {
        let src = "subroutine ts(x, n, f)
  real(8) :: x(8), f, t(8)
  integer :: n, it
!$ad independent(x)
!$ad dependent(f)
!$ad binomial-ckp(4)
  do it = 1, 100
    t = x*x
    x = x + 0.1d0*t
  end do
  f = sum(x)
!$ad binomial-ckp(2)
  f = f*2
end subroutine ts
";
        let path = Path::new("/hover-tests/ckp.f90");
        let mut host = Host::default();
        host.set_text(path, src, false, 1);
        let snap = host.snapshot();
        let at = |needle: &str| src.find(needle).unwrap() as u32;
        let h = super::hover(&snap, path, at("binomial-ckp(4)"))
            .unwrap()
            .markdown;
        assert!(h.contains("Binomial checkpointing"), "{h}");
        // x is carried from step to step; t is written before it is read.
        assert!(h.contains("snapshots of the loop-carried state `x`"), "{h}");
        assert!(
            h.contains("64 bytes each, 256 bytes for all 4 at once"),
            "{h}"
        );
        // t(100, 4) = 5·100 − C(9, 4): r = 5 as C(8, 4) = 70 < 100 ≤ C(9, 4) = 126.
        assert!(
            h.contains("This loop's 100 steps: 374 steps run again"),
            "{h}"
        );
        let bad = super::hover(&snap, path, at("binomial-ckp(2)"))
            .unwrap()
            .markdown;
        assert!(bad.contains("Not applied: the statement after"), "{bad}");
        let hints = crate::hints::inlay_hints(
            &snap,
            path,
            dfort_syntax::TextRange::new(0, src.len() as u32),
            Default::default(),
        );
        assert!(
            hints.iter().any(|h| h.label == "binomial(4) ckp x"),
            "{:?}",
            hints.iter().map(|h| &h.label).collect::<Vec<_>>()
        );
    }

    #[test]
    fn a_hover_on_another_tools_directive_says_what_dfort_does_with_it() {
        let src = "      SUBROUTINE TS(X, Y)
      DOUBLE PRECISION X, Y
c$openad INDEPENDENT(X)
c$openad DEPENDENT(Y)
CADJ STORE x = tape1, key = 1
C$AD NOCHECKPOINT
      CALL SQ(X, Y)
      END
      SUBROUTINE SQ(X, Y)
      DOUBLE PRECISION X, Y
      Y = X*X
      END
";
        let path = Path::new("/hover-tests/ts.f");
        let hover_at = hovers(path, src, true);
        let taf = hover_at("STORE");
        assert!(taf.starts_with("**TAF directive**"), "{taf}");
        assert!(taf.contains("`CADJ STORE`"), "{taf}");
        assert!(taf.contains("dfort ignores it"), "{taf}");
        let tap = hover_at("NOCHECKPOINT");
        assert!(
            tap.contains("Tapenade's directive `$AD NOCHECKPOINT` is ignored"),
            "{tap}"
        );
        let oad = hover_at("INDEPENDENT");
        assert!(
            oad.contains("OpenAD directive `$openad INDEPENDENT`: read as `!$ad independent(x)`"),
            "{oad}"
        );
        // On the variable a role names: the variable's own hover.
        let x = hover_at("X)\nc$openad DEP");
        assert!(x.starts_with("**x**"), "{x}");
    }

    #[test]
    fn a_derived_type_hover_lists_its_components_with_derivatives() {
        let src = "module pm
  implicit none
  type vec
    real(8) :: x, y
  end type vec
  type particle
    type(vec) :: pos
    real(8) :: mass
    integer :: id
  end type particle
  type tag
    integer :: k
  end type tag
end module pm
subroutine mv(x, e)
  use pm
  implicit none
  real(8), intent(in) :: x
  real(8), intent(out) :: e
  type(particle) :: p
  type(tag) :: t
!$ad independent(x)
!$ad dependent(e)
  t%k = 2
  p%id = t%k
  p%pos%x = x*x
  p%mass = 2.0d0
  e = p%pos%x*p%mass
end subroutine mv
";
        let path = Path::new("/hover-tests/mv.f90");
        let hover_at = hovers(path, src, true);
        let p = hover_at("p%pos%x*p%mass");
        assert!(
            p.contains(
                "Components with derivatives (type `particle_d` / `particle_b`): `%pos%x`, `%pos%y`, `%mass`; passive: `%id`."
            ),
            "{p}"
        );
        assert!(p.contains("**active** before this statement"), "{p}");
        let t = hover_at("t%k = 2");
        assert!(
            t.contains("no component of its type carries derivatives"),
            "{t}"
        );
    }

    /// Issue 15: the hover says what the generated forward sweep pushes
    /// (the analysis' decisions), not TBR's records at statements the
    /// forward sweep drops.
    #[test]
    fn an_overwrite_cleared_by_final_reads_says_so() {
        let src = "subroutine s(n, a, b)
  implicit none
  integer :: n, i, k
  real(8) :: a(n, n), b(n)
  do k = 1, n
    do i = k + 1, n
      b(i) = b(i) - b(k) * a(i, k)
    end do
  end do
end subroutine s
";
        let path = Path::new("/hover-tests/fr.f90");
        let mut host = Host::default();
        host.set_text(path, src, true, 1);
        let snap = host.snapshot();
        let at = |needle: &str| src.find(needle).unwrap() as u32;
        let update = super::hover(&snap, path, at("b(i) = b(i)"))
            .unwrap()
            .markdown;
        assert!(
            update.contains("Not recorded: inside the loop at line 5, the adjoint reads only elements of `b` that no later iteration overwrites"),
            "{update}"
        );
        // Reading an element a later step overwrites: recorded.
        let later = src.replace("b(k) * a(i, k)", "b(k + 1) * a(i, k)");
        host.set_text(path, &later, true, 2);
        let snap = host.snapshot();
        let at = |needle: &str| later.find(needle).unwrap() as u32;
        let update = super::hover(&snap, path, at("b(i) = b(i)"))
            .unwrap()
            .markdown;
        assert!(
            update.contains("Recorded for the adjoint (TBR)"),
            "{update}"
        );
    }

    #[test]
    fn a_record_hover_says_what_the_forward_sweep_pushes_and_why() {
        let src = "subroutine s(x, y)
  implicit none
  real(8), intent(in) :: x
  real(8), intent(out) :: y
  real(8) :: a
  a = x*x
  y = a*a
  a = 5.0d0
  y = y*x
  y = sin(y)
end subroutine s
";
        let path = Path::new("/hover-tests/s.f90");
        let mut host = Host::default();
        host.set_text(path, src, true, 1);
        let snap = host.snapshot();
        let at = |needle: &str| src.find(needle).unwrap() as u32;
        // TBR records `a` at line 8 (line 7's adjoint reads it), but the
        // forward sweep drops line 8: nothing overwrites `a` there.
        let unit = snap.units_of(path).next().unwrap();
        let tbr = snap.analysis().tbr_of(unit.id).unwrap();
        let a8 = unit
            .stmts
            .iter()
            .find(|st| super::stmt_line(&snap, st).is_some_and(|(l, _)| l == 8))
            .unwrap()
            .id;
        assert!(
            tbr.records.iter().any(|r| r.stmt == a8),
            "{:?}",
            tbr.records
        );
        let dropped = super::hover(&snap, path, at("a = 5.0d0")).unwrap().markdown;
        assert!(
            dropped.contains("Not recorded: the adjoint's forward sweep drops this statement"),
            "{dropped}"
        );
        assert!(!dropped.contains("Recorded for the adjoint"), "{dropped}");
        // `y = y*x` reads the `y` it overwrites: its own adjoint needs it
        // (the forward sweep keeps it: `sin(y)`'s adjoint reads its result).
        let own = super::hover(&snap, path, at("y = y*x")).unwrap().markdown;
        assert!(
            own.contains("the forward sweep pushes `y` before this statement overwrites it; the adjoint of this statement needs the old value."),
            "{own}"
        );
        // The adjoint written from the same facts.
        let (adj, _) = dfort_codegen::adjoint::adjoint_of(snap.analysis(), unit.id, "").unwrap();
        assert!(!adj.contains("call dfort_push(a)"), "{adj}");
        assert!(adj.contains("call dfort_push(y)"), "{adj}");
    }

    #[test]
    fn an_array_its_callers_save_is_said_on_its_overwrite_and_pushed_at_the_call() {
        let src = include_str!("../../../tests/fixtures/kernels/callers_save.f90");
        let path = Path::new("/hover-tests/callers_save.f90");
        let mut host = Host::default();
        host.set_text(path, src, true, 1);
        let snap = host.snapshot();
        let at = |needle: &str| src.find(needle).unwrap() as u32;
        let md = super::hover(&snap, path, at("c(i, j) = c(i, j) + t"))
            .unwrap()
            .markdown;
        assert!(md.contains("each caller saves the part of `c`"), "{md}");
        assert!(!md.contains("Recorded for the adjoint"), "{md}");
        // The caller's hint at the call, and the adjoints written from
        // the same facts: `top` pushes `c` around the call, `mm` pushes
        // none of its elements.
        let hints = crate::hints::inlay_hints(
            &snap,
            path,
            dfort_syntax::TextRange::new(0, src.len() as u32),
            crate::hints::HintKinds::default(),
        );
        let call = at("call mm");
        assert!(
            hints
                .iter()
                .any(|h| h.offset == call && h.label.contains("push(") && h.label.contains('c')),
            "{:?}",
            hints
                .iter()
                .map(|h| (h.offset, &h.label))
                .collect::<Vec<_>>()
        );
        let unit = |name: &str| snap.units_of(path).find(|u| u.name == name).unwrap().id;
        let (adj, _) =
            dfort_codegen::adjoint::adjoint_of(snap.analysis(), unit("top"), "").unwrap();
        let mm_b = &adj[adj.find("subroutine mm_b").unwrap()..];
        assert!(!mm_b.contains("call dfort_push(c(i, j))"), "{adj}");
        let top_b = &adj[..adj.find("end subroutine top_b").unwrap()];
        assert!(top_b.contains("call dfort_push(c)"), "{adj}");
    }

    #[test]
    fn an_index_hover_in_a_unit_with_jumps() {
        let src = include_str!("../../../tests/fixtures/kernels/goto_skip.f90");
        let path = Path::new("/hover-tests/goto_skip.f90");
        let mut host = Host::default();
        host.set_text(path, src, true, 1);
        let snap = host.snapshot();
        // (The header comment quotes the assignments too.)
        let at = |needle: &str| src.find(&format!("  {needle}")).unwrap() as u32 + 2;
        let i = super::hover(&snap, path, at("i = i + 1")).unwrap().markdown;
        assert!(
            i.ends_with(
                "**Address recovery** (unit with jumps, reversed through its basic blocks): inverted — i ← i - 1 (inverting line 17).\n"
            ),
            "{i}"
        );
        let m = super::hover(&snap, path, at("m = m + 1")).unwrap().markdown;
        assert!(
            m.ends_with(
                "**Address recovery** (unit with jumps, reversed through its basic blocks): stored
- value before line 15: inverted — m ← m - 1 (inverting line 15)
- value before line 16: stored each time it is overwritten there: an assignment that does not read it at line 16
"
            ),
            "{m}"
        );
    }

    /// Issue 45: a SAVE'd local is state of its procedure, active when a
    /// later call's result depends on an earlier call's arguments, and
    /// the hover says so.
    #[test]
    fn a_saved_local_hover_says_it_carries_its_value_between_calls() {
        let src = "real(8) function ema(v, start)
  implicit none
  real(8), intent(in) :: v
  logical, intent(in) :: start
  real(8), save :: s = 0d0
  if (start) s = v
  s = 0.9d0*s + 0.1d0*v*v
  ema = s
end function ema
subroutine filter(n, x, y)
  implicit none
  integer, intent(in) :: n
  real(8), intent(in) :: x(n)
  real(8), intent(out) :: y(n)
  real(8), external :: ema
  integer :: i
  do i = 1, n
    y(i) = ema(x(i), i == 1)
  end do
end subroutine filter
";
        let path = Path::new("/hover-tests/ema.f90");
        let hover_at = hovers(path, src, true);
        let h = hover_at("s = 0.9d0");
        assert!(
            h.contains("SAVE'd local of `ema`: its value carries from one call to the next"),
            "{h}"
        );
        assert!(h.contains("**active** after this statement"), "{h}");
        assert!(
            h.contains("s is SAVE'd: on entry it holds what an earlier call left"),
            "{h}"
        );
        assert!(h.contains(&crate::render::shared_state("s", "ema")), "{h}");
    }
}
