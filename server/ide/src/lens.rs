//! Code lenses: above each procedure of a document, the three things a
//! user does with it — write its adjoint, write its tangent, verify its
//! derivatives — and one line on what its adjoint does, read from the
//! unit's summary (the facts `dfort analyze` reports: its active
//! variables, the values its forward sweep records, the calls it
//! checkpoints, whether it is reversed by blocks); and above the first
//! statement of each basic block's local graph, the size of its local
//! Jacobian and what eliminating it costs.
//!
//! Contract: one group per subroutine or function whose header lies in the
//! document (none in a file dfort generated), at the unit's name; never
//! panics.

use crate::actions::{ActionKind, Mode};
use crate::host::Snapshot;
use crate::render;
use crate::summary::{self, UnitSummary};
use dfort_syntax::TextRange;
use std::path::Path;

/// One lens: a title, and what choosing it does (`None`: a label only).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lens {
    /// The unit's name in the document.
    pub range: TextRange,
    pub title: String,
    pub unit: String,
    pub action: Option<ActionKind>,
}

/// What the adjoint of the unit does, in one line.
fn summary_line(s: &UnitSummary) -> String {
    let active = summary::names(s.unit, &s.active);
    if active.is_empty() {
        return "no active variable: the adjoint does nothing here".into();
    }
    let mut parts = Vec::new();
    let shown: Vec<&str> = active.iter().take(4).map(String::as_str).collect();
    let more = active.len().saturating_sub(shown.len());
    parts.push(format!(
        "active {}{}",
        shown.join(", "),
        if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        }
    ));
    let recorded: std::collections::BTreeSet<_> =
        s.pushed.iter().map(|p| (p.stmt, p.variable)).collect();
    parts.push(match recorded.len() {
        0 => "records no value".into(),
        1 => "records 1 value".into(),
        n => format!("records {n} values"),
    });
    // What preaccumulated graphs push instead of their statements' values,
    // and how many the reverse sweep recomputes instead.
    let jacobians = s.local_jacobians();
    let all = || jacobians.iter().flat_map(|b| &b.jacobians);
    let (graphs, entries) = all()
        .filter_map(|j| j.pushed())
        .fold((0, 0), |(g, e), a| (g + 1, e + a.entries.len()));
    match (graphs, entries) {
        (0, _) => {}
        (1, e) => parts.push(format!(
            "pushes {e} Jacobian {} of 1 preaccumulated graph",
            if e == 1 { "entry" } else { "entries" }
        )),
        (g, e) => parts.push(format!(
            "pushes {e} Jacobian entries of {g} preaccumulated graphs"
        )),
    }
    match all().filter(|j| j.recomputed()).count() {
        0 => {}
        1 => parts.push("recomputes 1 local Jacobian in the reverse sweep".into()),
        n => parts.push(format!(
            "recomputes {n} local Jacobians in the reverse sweep"
        )),
    }
    // Intermediates recomputed instead of recorded (not those a
    // preaccumulated graph's replay covers).
    let again: usize = s.recomputed.iter().map(|r| r.vars.iter().count()).sum();
    match again {
        0 => {}
        1 => parts.push("recomputes 1 intermediate in the reverse sweep".into()),
        n => parts.push(format!("recomputes {n} intermediates in the reverse sweep")),
    }
    match s.calls.len() {
        0 => {}
        1 => parts.push("checkpoints 1 call".into()),
        n => parts.push(format!("checkpoints {n} calls")),
    }
    if s.reversal.is_some_and(|r| r.by_blocks) {
        parts.push("reversed by blocks".into());
    }
    format!("adjoint: {}", parts.join(" · "))
}

/// `textDocument/codeLens` of the document `path`.
pub fn code_lenses(snap: &Snapshot, path: &Path) -> Vec<Lens> {
    let Some(doc) = snap.doc(path) else {
        return Vec::new();
    };
    if crate::actions::is_generated(&doc.text) {
        return Vec::new();
    }
    let summaries = summary::summaries(snap);
    let mut out = Vec::new();
    for u in snap.units_of(path).filter(|u| u.is_procedure()) {
        let Some((p, range)) = snap.to_doc(u.name_span.file, u.name_span.range) else {
            continue;
        };
        if p != path {
            continue;
        }
        let lens = |title: String, action: Option<ActionKind>| Lens {
            range,
            title,
            unit: u.name.clone(),
            action,
        };
        out.push(lens(
            "adjoint".into(),
            Some(ActionKind::Generate(Mode::Adjoint)),
        ));
        out.push(lens(
            "tangent".into(),
            Some(ActionKind::Generate(Mode::Tangent)),
        ));
        out.push(lens("verify".into(), Some(ActionKind::Verify)));
        let line = match summaries.iter().find(|s| s.unit.id == u.id) {
            Some(s) => summary_line(s),
            None => "not analysed: no root reaches it".into(),
        };
        out.push(lens(line, None));
        out.extend(jacobian_lenses(snap, path, u));
    }
    out
}

/// Above the first statement of each local graph with two intermediates
/// or more (with one, every elimination costs the same) or that the
/// adjoint preaccumulates: its Jacobian's size, what forward, reverse and
/// the best elimination found cost and, when the adjoint preaccumulates
/// local Jacobians, what it does with this one
/// ([`dfort_analysis::preaccumulation`]).
fn jacobian_lenses(snap: &Snapshot, path: &Path, u: &dfort_ir::Unit) -> Vec<Lens> {
    let facts = snap.analysis();
    let Some(unit) = facts.unit(u.id) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for j in facts
        .local_jacobians(u.id)
        .iter()
        .flat_map(|b| &b.jacobians)
    {
        let shown = j.graph.dag.p > 1 || j.accumulation().is_some();
        let Some(first) = j.graph.stmts.first().filter(|_| shown) else {
            continue;
        };
        let span = unit.stmt(*first).span;
        let Some((p, range)) = snap.to_doc(span.file, span.range) else {
            continue;
        };
        if p == path {
            out.push(Lens {
                range,
                title: render::jacobian_title(j),
                unit: u.name.clone(),
                action: None,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::{Host, HostConfig};
    use std::path::PathBuf;

    /// With preaccumulation asked for (`dfort.toml`'s `[adjoint]
    /// preaccumulate`), the lens says what the adjoint does with the
    /// graph, and the unit's line counts the records TBR is left with:
    /// nothing overwrites the cells' inputs, so the reverse sweep
    /// recomputes the Jacobian; updated in place, the forward sweep
    /// pushes it.
    #[test]
    fn the_lens_says_when_the_adjoint_preaccumulates() {
        let text = "subroutine eos(n, t, s, rho)\n  integer :: n, k\n  real(8) :: t(n), s(n), rho(n), a, b, c\n  do k = 1, n\n    a = t(k) * t(k)\n    b = sqrt(s(k)) * a\n    c = exp(b) * a\n    rho(k) = c * b + a * t(k)\n  end do\nend subroutine\n";
        let path = PathBuf::from("/w/eos.f90");
        let titles = |text: &str, preaccumulate| {
            let config = HostConfig {
                preaccumulate,
                ..HostConfig::default()
            };
            let snap = Host::from_sources(vec![(path.clone(), text.into())], config).snapshot();
            code_lenses(&snap, &path)
                .into_iter()
                .map(|l| l.title)
                .collect::<Vec<_>>()
        };
        use dfort_analysis::preaccumulation::Preaccumulation;
        let off = titles(text, Preaccumulation::Off);
        let on = titles(text, Preaccumulation::Cost);
        assert!(off[4].ends_with("best 11 ×"), "{off:?}");
        assert!(!off[4].contains("preaccumulated"), "{off:?}");
        assert!(
            on[4].ends_with(
                "· preaccumulated, recomputed in the reverse sweep: no tape entry instead of about 3"
            ),
            "{on:?}"
        );
        // Statement by statement, the reverse sweep recomputes a, b, c.
        assert_eq!(
            off[3],
            "adjoint: active a, b, c, rho and 2 more · records no value · recomputes 3 intermediates in the reverse sweep",
            "{off:?}"
        );
        assert_eq!(
            on[3],
            "adjoint: active a, b, c, rho and 2 more · records no value · recomputes 1 local Jacobian in the reverse sweep",
            "{on:?}"
        );
        let inplace = text.replace("a * t(k)\n", "a * t(k)\n    s(k) = 0.5d0 * rho(k)\n");
        let on = titles(&inplace, Preaccumulation::All);
        assert!(
            on[4].ends_with("· preaccumulated: 4 tape entries instead of about 4"),
            "{on:?}"
        );
        assert_eq!(
            on[3],
            "adjoint: active a, b, c, rho and 2 more · records no value · pushes 4 Jacobian entries of 1 preaccumulated graph",
            "{on:?}"
        );
    }

    #[test]
    fn each_procedure_gets_its_actions_and_what_its_adjoint_does() {
        let text = "      SUBROUTINE G(X, Y)\n!$ad independent(x)\n!$ad dependent(y)\n      REAL*8 X, Y\n      Y = X * X\n      X = SIN(Y)\n      Y = Y * X\n      END\n      SUBROUTINE IDLE(K)\n      INTEGER K\n      K = 1\n      END\n";
        let path = PathBuf::from("/w/g.f");
        let snap =
            Host::from_sources(vec![(path.clone(), text.into())], HostConfig::default()).snapshot();
        let lenses = code_lenses(&snap, &path);
        let titles: Vec<&str> = lenses.iter().map(|l| l.title.as_str()).collect();
        // G's block y = x*x; x = sin(y); y = y*x is one graph: x → y₁ →
        // x₂ → y₃ and y₁ → y₃; forward elimination pays 2 + 1, reverse
        // 1 + 1.
        assert_eq!(titles.len(), 9, "{titles:?}");
        assert_eq!(
            titles[4],
            "local Jacobian 1×1 · |E| = 4 · forward 3, reverse 2, best 2 ×"
        );
        assert_eq!(&titles[..3], ["adjoint", "tangent", "verify"]);
        assert_eq!(
            titles[3], "adjoint: active x, y · records 1 value",
            "{titles:?}"
        );
        assert_eq!(
            &text[lenses[0].range.start as usize..lenses[0].range.end as usize],
            "G"
        );
        assert!(
            titles[8].contains("does nothing") || titles[8].starts_with("not analysed"),
            "{titles:?}"
        );
        assert_eq!(lenses[0].action, Some(ActionKind::Generate(Mode::Adjoint)));
    }
}
