//! Preaccumulated local Jacobians (papers 002 and 004) in the adjoint:
//! for a graph the analyses chose ([`dfort_analysis::preaccumulation`],
//! kept in TBR's results), each edge's label (a local partial,
//! [`crate::partials`]) is computed into `dfort_pa` just before the
//! statement whose operation it belongs to and the chosen elimination
//! sequence's fused multiply-adds run after the graph's last statement.
//! A pushed Jacobian is computed so in the forward sweep, which pushes
//! its nonzero entries, popped where the reverse sweep reaches the
//! graph's last statement. A recomputed one is computed in the reverse
//! sweep, once the graph's first statement is restored: the graph's
//! targets are saved in `dfort_pa`, its statements run again with their
//! labels and the elimination, and the targets are put back. Then the
//! reverse sweep reads the dependents' adjoints, resets the adjoints of
//! every target the graph assigns and adds `Jᵀȳ` to the independents'
//! adjoints. The statements' own reverse sweeps keep only their
//! restores.
//!
//! Contract: the analyses guarantee every address of the graph is the
//! same at its start and end (no statement of it writes a subscript's
//! variable), that no two dependents may be one element and, for a
//! recomputed Jacobian, that TBR keeps what the graph reads before
//! assigning it available where it starts; the
//! generator refuses, never mis-differentiates, a label it cannot write.

use super::dispatch::Gen;
use super::inputs::RoutineInputs;
use super::sweep::Line;
use crate::partials::partials;
use dfort_analysis::elimination::Accumulation;
use dfort_analysis::flatten::{EdgeLabel, LocalGraph};
use dfort_analysis::preaccumulation::LocalJacobian;
use dfort_ir::dump::expr as print;
use dfort_ir::*;

/// Where a statement sits among the preaccumulated graphs.
#[derive(Clone, Copy, Debug)]
pub(super) struct Place {
    pub block: usize,
    pub graph: usize,
}

/// The array of labels and Jacobian entries.
const SLOTS: &str = "dfort_pa";

/// The child `k` of `e` as the flattening counts children.
fn child(e: &Expr, k: u32) -> Option<&Expr> {
    match (&e.kind, k) {
        (ExprKind::Unary { operand, .. }, 0) => Some(operand),
        (ExprKind::Binary { lhs, .. }, 0) => Some(lhs),
        (ExprKind::Binary { rhs, .. }, 1) => Some(rhs),
        (ExprKind::Intrinsic { args, .. }, k) => args.get(k as usize).map(|a| &a.value),
        _ => None,
    }
}

/// The label of an edge as Fortran, `None` when no rule gives it.
fn label_text(unit: &Unit, rhs: &Expr, path: &[u32], children: &[u32]) -> Option<String> {
    let mut node = rhs;
    for &k in path {
        node = child(node, k)?;
    }
    let ps = partials(unit, node)?;
    let mut terms = Vec::new();
    for &c in children {
        let x = child(node, c)?;
        let (_, d) = ps.iter().find(|(y, _)| std::ptr::eq(*y, x))?;
        terms.push(format!("({d})"));
    }
    (!terms.is_empty()).then(|| terms.join(" + "))
}

/// The graph holding statement `id`, when the adjoint preaccumulates
/// it, and whether `id` is its last statement.
fn graph_of<'a>(inp: &'a RoutineInputs<'a>, id: StmtId) -> Option<(&'a LocalJacobian, bool)> {
    let place = inp.preaccumulated.get(&id)?;
    let j = inp
        .tbr
        .jacobians
        .get(place.block)?
        .jacobians
        .get(place.graph)?;
    Some((j, j.graph.stmts.last() == Some(&id)))
}

impl Gen<'_> {
    /// `lhs = rhs` (statement `id`) in a preaccumulated graph: the labels
    /// its operations give, the statement with its restores, and after
    /// the graph's last statement the Jacobian.
    pub(super) fn preaccumulated_assignment(
        &mut self,
        id: StmtId,
        span: Span,
        lhs: &Expr,
        rhs: &Expr,
        label: String,
    ) -> Vec<Line> {
        let inp = self.inp;
        let unit = &inp.unit;
        let Some((j, last)) = graph_of(inp, id) else {
            return self.assignment(id, span, lhs, rhs, label);
        };
        let g = &j.graph;
        let mut label = label;
        self.out.flush_label(&mut label);
        let recomputed = j.recomputed();
        if inp.dead.contains(&id) && !recomputed {
            self.out.refuse(
                span,
                "this assignment is dropped from the forward sweep but its local partials are needed (preaccumulation)",
            );
            return Vec::new();
        }
        let Some(lines) = labels(unit, g, id, rhs) else {
            self.out.refuse(
                span,
                "no local partial derivative is known for an operation of this assignment (preaccumulation)",
            );
            return Vec::new();
        };
        if !recomputed {
            for l in &lines {
                self.out.fwd.line(l);
            }
        }
        self.out.restore_only = true;
        let mut rev = self.assignment(id, span, lhs, rhs, String::new());
        self.out.restore_only = false;
        let first = g.stmts.first() == Some(&id);
        if recomputed {
            // The reverse sweep reaches the first statement last: once its
            // restore has run, the values the graph reads are those it
            // read in the forward sweep, and the replay computes the
            // Jacobian there.
            if first {
                rev.extend(self.replay(g, j));
            }
            return rev;
        }
        // The reverse sweep reaches the last statement first: the entries
        // are popped there (they are the last values pushed), and applied
        // at the first statement, where every subscript the graph's
        // statements require has been recovered (none of them changes in
        // the graph).
        let mut head = Vec::new();
        if last {
            head.extend(self.jacobian(g, j));
        }
        if first {
            if let Some(acc) = j.accumulation() {
                let e = acc.entries.len();
                head.extend(transposed(inp, g, acc, |k| k, e));
            }
        }
        head.append(&mut rev);
        head
    }

    /// The reverse sweep's replay of a graph whose Jacobian it
    /// recomputes: the targets saved, the statements run again with their
    /// labels, the elimination, the targets put back, then `x̄ += Jᵀȳ`.
    fn replay(&mut self, g: &LocalGraph, j: &LocalJacobian) -> Vec<Line> {
        let inp = self.inp;
        let unit = &inp.unit;
        let Some(acc) = j.accumulation() else {
            return Vec::new();
        };
        let assigned: Vec<(&Expr, &Expr)> = g
            .stmts
            .iter()
            .filter_map(|&s| match &unit.stmt(s).kind {
                StmtKind::Assign { lhs, rhs } => Some((lhs, rhs)),
                _ => None,
            })
            .collect();
        let saves = acc.slots;
        let mut rev = Vec::new();
        for (k, (lhs, _)) in assigned.iter().enumerate() {
            rev.push(format!("{SLOTS}({}) = {}", saves + k + 1, print(unit, lhs)));
        }
        for (&s, (lhs, rhs)) in g.stmts.iter().zip(&assigned) {
            rev.extend(labels(unit, g, s, rhs).unwrap_or_default());
            rev.push(format!("{} = {}", print(unit, lhs), print(unit, rhs)));
        }
        rev.extend(elimination(g, acc));
        for (k, (lhs, _)) in assigned.iter().enumerate().rev() {
            let t = print(unit, lhs);
            let convert = match dfort_ir::dp::target(lhs).map(|(v, _)| unit.symbol(v).ty.base) {
                Some(BaseType::Integer) => "nint",
                _ => "real",
            };
            rev.push(format!(
                "{t} = {convert}({SLOTS}({}), kind({t}))",
                saves + k + 1
            ));
        }
        let deps = saves + assigned.len();
        self.out.pa_slots = self.out.pa_slots.max(deps + g.dag.m);
        let mut lines: Vec<Line> = rev.into_iter().map(Line::Plain).collect();
        lines.extend(transposed(inp, g, acc, |k| acc.entries[k].1, deps));
        lines
    }

    /// After the graph's last statement: the unit labels, the
    /// elimination and the pushes; returns the reverse sweep's pops.
    fn jacobian(&mut self, g: &LocalGraph, j: &LocalJacobian) -> Vec<Line> {
        let Some(acc) = j.pushed() else {
            return Vec::new();
        };
        for l in elimination(g, acc) {
            self.out.fwd.line(&l);
        }
        for &(_, slot) in &acc.entries {
            self.out.push(&format!("{SLOTS}({})", slot + 1));
        }
        // The reverse sweep: entries popped into 1..e, the dependents'
        // adjoints into e+1..e+m.
        let e = acc.entries.len();
        self.out.pa_slots = self.out.pa_slots.max(acc.slots).max(e + g.dag.m);
        let mut rev = Vec::new();
        for k in (0..e).rev() {
            rev.push(Line::Plain(format!("call dfort_pop({SLOTS}({}))", k + 1)));
        }
        rev
    }
}

/// The labels statement `id` of `g` gives (`dfort_pa(k) = ∂…`), `None`
/// when no rule gives one.
fn labels(unit: &Unit, g: &LocalGraph, id: StmtId, rhs: &Expr) -> Option<Vec<String>> {
    let mut lines = Vec::new();
    for (k, l) in g.edge_labels.iter().enumerate() {
        let EdgeLabel::Partial {
            stmt,
            path,
            children,
        } = l
        else {
            continue;
        };
        if *stmt == id {
            let t = label_text(unit, rhs, path, children)?;
            lines.push(format!("{SLOTS}({}) = {t}", k + 1));
        }
    }
    Some(lines)
}

/// The unit labels and the elimination's fused multiply-adds, after the
/// graph's last label.
fn elimination(g: &LocalGraph, acc: &Accumulation) -> Vec<String> {
    let mut lines = Vec::new();
    for (k, l) in g.edge_labels.iter().enumerate() {
        if *l == EdgeLabel::Unit {
            lines.push(format!("{SLOTS}({}) = 1.0d0", k + 1));
        }
    }
    for f in &acc.fmas {
        let product = match f.b {
            Some(b) => format!("{SLOTS}({}) * {SLOTS}({})", f.a + 1, b + 1),
            None => format!("{SLOTS}({})", f.a + 1),
        };
        let t = f.target + 1;
        if f.fresh {
            lines.push(format!("{SLOTS}({t}) = {product}"));
        } else {
            lines.push(format!("{SLOTS}({t}) = {SLOTS}({t}) + {product}"));
        }
    }
    lines
}

/// The reverse sweep's application of the transposed Jacobian (entry
/// `k` in slot `entry(k) + 1`): the dependents' adjoints read into slots
/// `deps+1..deps+m`, the adjoints of every target of the graph reset,
/// then `x̄ += Jᵀȳ`.
fn transposed(
    inp: &RoutineInputs,
    g: &LocalGraph,
    acc: &Accumulation,
    entry: impl Fn(usize) -> usize,
    deps: usize,
) -> Vec<Line> {
    let unit = &inp.unit;
    let first_dep = g.dag.n + g.dag.p;
    let mut rev = Vec::new();
    let target = |s: StmtId| match &unit.stmt(s).kind {
        StmtKind::Assign { lhs, .. } => Some(lhs),
        _ => None,
    };
    for (d, &s) in g.dependents.iter().enumerate() {
        let value = target(s)
            .and_then(|lhs| inp.bref(lhs))
            .unwrap_or_else(|| "0.0d0".into());
        rev.push(Line::Plain(format!("{SLOTS}({}) = {value}", deps + d + 1)));
    }
    let mut reset = std::collections::BTreeSet::new();
    for &s in &g.stmts {
        if let Some(b) = target(s).and_then(|lhs| inp.bref(lhs)) {
            if reset.insert(b.clone()) {
                rev.push(Line::Plain(format!("{b} = 0.0d0")));
            }
        }
    }
    for (k, &((x, y), _)) in acc.entries.iter().enumerate() {
        let Some(xb) = g.independents.get(x).and_then(|r| inp.bref(r)) else {
            continue;
        };
        let d = y - first_dep;
        rev.push(Line::Plain(format!(
            "{xb} = {xb} + {SLOTS}({}) * {SLOTS}({})",
            entry(k) + 1,
            deps + d + 1
        )));
    }
    rev
}
