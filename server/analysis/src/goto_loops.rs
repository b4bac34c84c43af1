//! Canonicalisation (paper 004 §3) for control-flow reversal per region
//! (paper 001: the structured reversal where the code is structured, the
//! basic-block fallback only where it is not): a loop closed by a
//! backward GO TO becomes a DO without control left by EXIT, which
//! [`crate::structure`] then makes structured, so that a routine whose
//! only jumps form such loops is reversed with trip counts instead of
//! basic-block ids.
//!
//! Contract: in a block, the statements from one labelled `L` to a later
//! `IF (c) GO TO L` (repeat … until) or `GO TO L` (a loop left by jumps
//! to the statement that follows it) become a `DO … END DO` whose body
//! ends with `IF (.NOT. (c)) EXIT` (or a CONTINUE), and each `GO TO M`
//! inside it, outside its nested loops, to the label `M` of the statement
//! that follows the region becomes an EXIT. Rewritten only when the
//! closing GO TO is the only reference to `L`, no jump enters the region
//! from outside or leaves it for another label, and no EXIT or CYCLE in
//! it would change the loop it leaves. `L` is dropped (nothing refers to
//! it any more). Statement and symbol ids are kept; the DO is appended.

use dfort_ir::cfg::Cfg;
use dfort_ir::*;
use std::collections::HashSet;

/// The unit with its backward GO TO loops made DO loops, or `None` when
/// it has none that can be.
pub fn rewrite(unit: &Unit) -> Option<Unit> {
    if !unit
        .stmts
        .iter()
        .any(|s| matches!(s.kind, StmtKind::Goto { .. }))
    {
        return None;
    }
    let mut u = unit.clone();
    let mut changed = false;
    let body = u.body.clone();
    u.body = in_block(&mut u, body, &mut changed);
    if !changed {
        return None;
    }
    u.cfg = std::sync::Arc::new(Cfg::build(&u));
    Some(u)
}

/// `list` with the loops of its nested blocks and then its own rewritten.
fn in_block(u: &mut Unit, mut list: Vec<StmtId>, changed: &mut bool) -> Vec<StmtId> {
    for &id in &list {
        let mut kind = u.stmt(id).kind.clone();
        let mut any = false;
        for b in blocks_mut(&mut kind) {
            let nb = in_block(u, b.clone(), changed);
            if nb != *b {
                *b = nb;
                any = true;
            }
        }
        if any {
            u.stmts[id].kind = kind;
        }
    }
    let mut j = 0;
    while j < list.len() {
        if let Some(close) = closing_jump(u, &list, j) {
            if let Some((i, lp)) = make_loop(u, &list, j, close) {
                list.splice(i..=j, [lp]);
                *changed = true;
                j = i + 1;
                continue;
            }
        }
        j += 1;
    }
    list
}

fn blocks_mut(kind: &mut StmtKind) -> Vec<&mut Vec<StmtId>> {
    match kind {
        StmtKind::If {
            arms, else_body, ..
        } => arms
            .iter_mut()
            .map(|a| &mut a.body)
            .chain(else_body.as_mut())
            .collect(),
        StmtKind::Do { body, .. } => vec![body],
        StmtKind::SelectCase { cases, .. } => cases.iter_mut().map(|c| &mut c.body).collect(),
        _ => Vec::new(),
    }
}

/// The backward jump `list[j]` may close: its target, the GO TO
/// statement, and the IF that holds it (a repeat … until).
struct Closing {
    target: u32,
    goto: StmtId,
    guard: Option<StmtId>,
}

fn closing_jump(u: &Unit, list: &[StmtId], j: usize) -> Option<Closing> {
    let id = list[j];
    match &u.stmt(id).kind {
        StmtKind::Goto { target } => Some(Closing {
            target: *target,
            goto: id,
            guard: None,
        }),
        StmtKind::If {
            arms,
            else_body: None,
            ..
        } if arms.len() == 1 && arms[0].body.len() == 1 => {
            let g = arms[0].body[0];
            match u.stmt(g).kind {
                StmtKind::Goto { target } => Some(Closing {
                    target,
                    goto: g,
                    guard: Some(id),
                }),
                _ => None,
            }
        }
        _ => None,
    }
}

/// Every statement under `ids` (themselves included) and whether a DO
/// of `ids` encloses it.
fn under(u: &Unit, ids: &[StmtId], in_loop: bool, out: &mut Vec<(StmtId, bool)>) {
    for &id in ids {
        out.push((id, in_loop));
        let kind = &u.stmt(id).kind;
        let deeper = in_loop || matches!(kind, StmtKind::Do { .. });
        for b in kind.blocks() {
            under(u, b, deeper, out);
        }
    }
}

/// Each label reference of the unit's statement tree and the statement
/// that makes it (a DO names its terminal statement's label).
fn label_refs(u: &Unit) -> Vec<(u32, StmtId)> {
    let mut all = Vec::new();
    dfort_ir::queries::nested_statements(u, &u.body, &mut all);
    let mut out = Vec::new();
    for id in all {
        let labels: Vec<u32> = match &u.stmt(id).kind {
            StmtKind::Goto { target } => vec![*target],
            StmtKind::ComputedGoto { targets, .. } => targets.clone(),
            StmtKind::ArithmeticIf {
                negative,
                zero,
                positive,
                ..
            } => vec![*negative, *zero, *positive],
            StmtKind::Io { branches, .. } => branches.clone(),
            StmtKind::Do {
                end_label: Some(l), ..
            } => vec![*l],
            _ => Vec::new(),
        };
        out.extend(labels.into_iter().map(|l| (l, id)));
    }
    out
}

/// Rewrites the region that ends at `list[j]` into a DO (returns where
/// the region starts and the DO's id), or `None` when it cannot be.
fn make_loop(u: &mut Unit, list: &[StmtId], j: usize, close: Closing) -> Option<(usize, StmtId)> {
    let i = list[..j]
        .iter()
        .position(|s| u.stmt(*s).label == Some(close.target))?;
    let region = &list[i..=j];
    let mut inside = Vec::new();
    under(u, region, false, &mut inside);
    let ids: HashSet<StmtId> = inside.iter().map(|(s, _)| *s).collect();
    let labels: HashSet<u32> = inside
        .iter()
        .filter_map(|(s, _)| u.stmt(*s).label)
        .collect();
    let after = list.get(j + 1).and_then(|s| u.stmt(*s).label);
    let mut exits = Vec::new();
    for (label, by) in label_refs(u) {
        let from_inside = ids.contains(&by);
        if label == close.target {
            if by != close.goto {
                return None;
            }
        } else if labels.contains(&label) {
            if !from_inside {
                return None;
            }
        } else if from_inside {
            // Only a plain GO TO past the region, outside nested loops,
            // leaves it: it becomes an EXIT.
            let plain = matches!(u.stmt(by).kind, StmtKind::Goto { .. });
            let nested = inside.iter().any(|(s, l)| *s == by && *l);
            if Some(label) != after || !plain || nested {
                return None;
            }
            exits.push(by);
        }
    }
    if close.guard.is_none() && exits.is_empty() {
        return None;
    }
    // An EXIT or CYCLE the new loop would capture, or one naming a loop
    // outside the region.
    let names: HashSet<&str> = inside
        .iter()
        .filter_map(|(s, _)| match &u.stmt(*s).kind {
            StmtKind::Do { name: Some(n), .. } => Some(n.as_str()),
            _ => None,
        })
        .collect();
    let loose = inside.iter().any(|(s, in_loop)| match &u.stmt(*s).kind {
        StmtKind::Exit { construct } | StmtKind::Cycle { construct } => match construct {
            Some(n) => !names.contains(n.as_str()),
            None => !*in_loop,
        },
        _ => false,
    });
    if loose {
        return None;
    }
    if close.guard.is_none() && exits.len() == 1 && u.stmt(close.goto).label.is_none() {
        // The test at the head: on the labelled statement, or on the one
        // after a labelled CONTINUE.
        let h = match u.stmt(list[i]).kind {
            StmtKind::Continue if i + 1 < j => i + 1,
            _ => i,
        };
        if let Some(cond) = head_test(u, list[h], exits[0]) {
            // `L IF (c) GO TO M … GO TO L`: a DO WHILE (.NOT. (c)), which
            // takes the head's id and span; the GO TOs (and a CONTINUE
            // before the head) leave the tree.
            for s in [close.goto, exits[0], list[i]] {
                u.stmts[s].kind = StmtKind::Continue;
                u.stmts[s].label = None;
            }
            let head = list[h];
            u.stmts[head].label = None;
            u.stmts[head].kind = StmtKind::Do {
                name: None,
                control: DoControl::While(Box::new(negated(cond))),
                body: list[h + 1..j].to_vec(),
                end_label: None,
            };
            return Some((i, head));
        }
    }
    let span_of = |s: StmtId| u.stmt(s).span;
    let (first, last) = (span_of(list[i]), span_of(list[j]));
    let span = Span {
        file: first.file,
        range: first.range.cover(last.range),
    };
    match close.guard {
        Some(g) => {
            if let StmtKind::If { arms, .. } = &mut u.stmts[g].kind {
                arms[0].cond = negated(arms[0].cond.clone());
            }
            u.stmts[close.goto].kind = StmtKind::Exit { construct: None };
        }
        None => u.stmts[close.goto].kind = StmtKind::Continue,
    }
    for e in exits {
        u.stmts[e].kind = StmtKind::Exit { construct: None };
    }
    u.stmts[list[i]].label = None;
    let id = u.stmts.next_id();
    u.stmts.push(Stmt {
        id,
        label: None,
        span,
        kind: StmtKind::Do {
            name: None,
            control: DoControl::Forever,
            body: region.to_vec(),
            end_label: None,
        },
    });
    Some((i, id))
}

/// The condition `c` of `head` when it is `IF (c) GO TO M` and its GO TO
/// is `exit`.
fn head_test(u: &Unit, head: StmtId, exit: StmtId) -> Option<Expr> {
    match &u.stmt(head).kind {
        StmtKind::If {
            arms,
            else_body: None,
            ..
        } if arms.len() == 1 && arms[0].body == [exit] => Some(arms[0].cond.clone()),
        _ => None,
    }
}

fn negated(c: Expr) -> Expr {
    Expr {
        span: c.span,
        kind: ExprKind::Unary {
            op: UnaryOp::Not,
            operand: Box::new(c),
        },
    }
}
