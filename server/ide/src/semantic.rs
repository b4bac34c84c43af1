//! Semantic tokens: every variable name in a document's code, a dummy
//! argument told from other variables, with the modifiers the analyses
//! decide — `active` where the variable is active at the statement
//! (varied and useful just before or just after it, paper 000 §4; at a
//! declaration: active somewhere in the unit), `recorded` where the
//! statement overwrites a value the adjoint's forward sweep pushes (TBR,
//! §5, the same `pushed` decisions the generator and the `push(…)` hints
//! read), and `declaration` at the names of declarations.
//!
//! Contract: tokens lie on one line each, do not overlap, come in document
//! order, and cover names whose text is the variable's name (any case);
//! none in a file dfort generated; active and recorded only in units the
//! adjoint works in (as `dfort analyze` reports them).

use crate::host::Snapshot;
use dfort_ir::{ExprKind, Stmt, StmtKind, Storage, SymbolId, Unit};
use dfort_syntax::TextRange;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TokenType {
    Variable,
    /// A dummy argument.
    Parameter,
}

/// Modifier bits, in the order of [`MODIFIERS`].
pub const ACTIVE: u32 = 1;
pub const RECORDED: u32 = 2;
pub const DECLARATION: u32 = 4;
/// The modifiers' names, bit 0 first (the legend a client is given).
pub const MODIFIERS: &[&str] = &["active", "recorded", "declaration"];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Token {
    pub range: TextRange,
    pub ty: TokenType,
    pub modifiers: u32,
}

fn token_type(unit: &Unit, s: SymbolId) -> Option<TokenType> {
    match unit.symbol(s).storage {
        Storage::Dummy(_) => Some(TokenType::Parameter),
        Storage::Procedure => None,
        _ => Some(TokenType::Variable),
    }
}

/// The variables a statement names directly, with the spans of their
/// references (a reference's span starts at its name).
fn references(st: &Stmt) -> Vec<(SymbolId, dfort_ir::Span)> {
    let mut out = Vec::new();
    for e in st.kind.exprs() {
        e.walk(&mut |x| {
            if let ExprKind::Var(s) | ExprKind::ArrayRef { array: s, .. } = &x.kind {
                out.push((*s, x.span));
            }
        });
    }
    out
}

/// `textDocument/semanticTokens/full` of the document `path`.
pub fn semantic_tokens(snap: &Snapshot, path: &Path) -> Vec<Token> {
    let Some(doc) = snap.doc(path) else {
        return Vec::new();
    };
    if crate::actions::is_generated(&doc.text) {
        return Vec::new();
    }
    let text = &*doc.text;
    let mut tokens: BTreeMap<u32, Token> = BTreeMap::new();
    for unit in snap.units_of(path) {
        let analysed = snap.analysis().activity.activity[unit.id]
            .as_ref()
            .filter(|_| snap.analysis().differentiated(unit));
        // Where a name of `s` at `span` lies in this document, when the
        // text there is the name.
        let place = |s: SymbolId, span: dfort_ir::Span| -> Option<TextRange> {
            let (p, r) = snap.to_doc(span.file, span.range)?;
            if p != path {
                return None;
            }
            let name = &unit.symbol(s).name;
            let end = r.start + name.len() as u32;
            let word = text.get(r.start as usize..end as usize)?;
            let after = text.as_bytes().get(end as usize).copied().unwrap_or(b' ');
            let whole = !(after.is_ascii_alphanumeric() || after == b'_');
            (word.eq_ignore_ascii_case(name) && whole).then(|| TextRange::new(r.start, end))
        };
        // The overwrites the forward sweep records, by the analysed
        // statement's document range and variable.
        let mut recorded: BTreeSet<(u32, u32, SymbolId)> = BTreeSet::new();
        if let (Some(decided), Some(au)) = (
            snap.analysis()
                .decisions_of(unit.id)
                .filter(|_| analysed.is_some()),
            crate::hints::analysed_unit(snap, unit),
        ) {
            for p in &decided.pushed {
                if let Some(st) = au.stmts.get(p.stmt) {
                    if let Some((_, r)) = snap.to_doc(st.span.file, st.span.range) {
                        recorded.insert((r.start, r.end, p.variable));
                    }
                }
            }
        }
        let mut add = |range: TextRange, ty: TokenType, modifiers: u32| {
            let t = tokens.entry(range.start).or_insert(Token {
                range,
                ty,
                modifiers: 0,
            });
            t.modifiers |= modifiers;
        };
        for st in &unit.stmts {
            let st_range = snap.to_doc(st.span.file, st.span.range).map(|(_, r)| r);
            // The variable an assignment overwrites.
            let target = match &st.kind {
                StmtKind::Assign { lhs, .. } => match &lhs.kind {
                    ExprKind::Var(s) | ExprKind::ArrayRef { array: s, .. } => Some((*s, lhs.span)),
                    _ => None,
                },
                _ => None,
            };
            for (s, span) in references(st) {
                let (Some(ty), Some(range)) = (token_type(unit, s), place(s, span)) else {
                    continue;
                };
                let mut m = 0;
                if let Some(act) = analysed {
                    if act.active_before(st.id, s) || act.active_after(st.id, s) {
                        m |= ACTIVE;
                    }
                }
                let is_target = target.is_some_and(|(t, ts)| t == s && ts == span);
                let pushed = st_range.is_some_and(|r| recorded.contains(&(r.start, r.end, s)));
                // On an assignment, the target is what is overwritten.
                if pushed && (is_target || target.is_none()) {
                    m |= RECORDED;
                }
                add(range, ty, m);
            }
        }
        for (sid, s) in unit.symbols.iter_enumerated() {
            if !s.declared || matches!(s.storage, Storage::Imported { .. }) {
                continue;
            }
            let (Some(ty), Some(range)) = (token_type(unit, sid), place(sid, s.span)) else {
                continue;
            };
            let mut m = DECLARATION;
            if analysed.is_some_and(|a| a.anywhere.contains_id(sid)) {
                m |= ACTIVE;
            }
            add(range, ty, m);
        }
    }
    tokens.into_values().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::{Host, HostConfig};
    use std::path::PathBuf;

    fn snap_of(path: &str, text: &str, root: [&str; 3]) -> std::sync::Arc<Snapshot> {
        let config = HostConfig {
            roots: vec![crate::analysis::RootSpec {
                name: root[0].into(),
                independent: vec![root[1].into()],
                dependent: vec![root[2].into()],
                after: None,
            }],
            ..HostConfig::default()
        };
        Host::from_sources(vec![(PathBuf::from(path), text.to_string())], config).snapshot()
    }

    fn tokens_of(path: &str, text: &str, root: [&str; 3]) -> Vec<(String, TokenType, u32)> {
        let snap = snap_of(path, text, root);
        semantic_tokens(&snap, Path::new(path))
            .into_iter()
            .map(|t| {
                (
                    text[t.range.start as usize..t.range.end as usize].to_string(),
                    t.ty,
                    t.modifiers,
                )
            })
            .collect()
    }

    #[test]
    fn active_and_recorded_names_in_both_forms() {
        let free = "subroutine f(x, y)\n  real(8) :: x, y, t\n  integer :: n\n  n = 2\n  t = x * x\n  y = sin(t) * n\n  t = 0\nend\n";
        let got = tokens_of("/w/f.f90", free, ["f", "x", "y"]);
        assert!(
            got.contains(&("x".into(), TokenType::Parameter, DECLARATION | ACTIVE)),
            "{got:?}"
        );
        assert!(
            got.contains(&("n".into(), TokenType::Variable, DECLARATION)),
            "{got:?}"
        );
        let active_t = got
            .iter()
            .filter(|(n, _, m)| n == "t" && m & ACTIVE != 0)
            .count();
        assert!(active_t >= 2, "{got:?}");
        let fixed = "      SUBROUTINE G(X, Y)\n      REAL*8 X, Y\n      Y = X * X\n      X = SIN(Y)\n      Y = Y * X\n      END\n";
        let got = tokens_of("/w/g.f", fixed, ["g", "x", "y"]);
        // `X = SIN(Y)` overwrites the X that the adjoint of `Y = X * X` reads.
        assert!(
            got.iter()
                .any(|(n, _, m)| n == "X" && *m == ACTIVE | RECORDED),
            "{got:?}"
        );
        assert!(got.iter().all(|(n, _, _)| n == "X" || n == "Y"), "{got:?}");
    }

    /// `recorded` marks exactly the names the `push(…)` hints name, on
    /// their statements' lines (both read the same decisions).
    #[test]
    fn recorded_tokens_are_the_push_hints() {
        let text = "subroutine h(x, y, n)\n  integer :: n, i\n  real(8) :: x(n), y, t\n  do i = 1, n\n    t = x(i)\n    y = y * t\n    t = cos(t) + y\n    x(i) = t * y\n  end do\nend\n";
        let path = Path::new("/w/h.f90");
        let snap = snap_of("/w/h.f90", text, ["h", "x", "y"]);
        let doc = snap.doc(path).unwrap();
        let line = |o: u32| doc.lines.line_of(o);
        let mut from_tokens: Vec<(u32, String)> = semantic_tokens(&snap, path)
            .into_iter()
            .filter(|t| t.modifiers & RECORDED != 0)
            .map(|t| {
                let name = text[t.range.start as usize..t.range.end as usize].to_string();
                (line(t.range.start), name)
            })
            .collect();
        let everything = TextRange::new(0, u32::MAX);
        let mut from_hints: Vec<(u32, String)> =
            crate::hints::inlay_hints(&snap, path, everything, Default::default())
                .into_iter()
                .filter(|h| h.kind == crate::hints::HintKind::Push)
                .flat_map(|h| {
                    let names = h
                        .label
                        .trim_start_matches("push(")
                        .trim_end_matches(')')
                        .to_string();
                    let l = line(h.offset);
                    names
                        .split(", ")
                        .map(|n| (l, n.to_string()))
                        .collect::<Vec<_>>()
                })
                .collect();
        from_tokens.sort();
        from_tokens.dedup();
        from_hints.sort();
        assert!(!from_hints.is_empty(), "the loop records values");
        assert_eq!(from_tokens, from_hints);
    }
}
