//! Per basic block, what preaccumulating its local Jacobians would cost
//! (papers 002 and 004): the unambiguous graphs [`crate::flatten`] finds
//! and, for each, the multiplications [`crate::elimination`] counts for
//! forward, reverse and cross-country elimination and the best sequence;
//! and, when the adjoint preaccumulates (`--preaccumulate`), whether it
//! does for that graph.
//!
//! Contract: [`of_unit`] reads a prepared unit and its activity; a block
//! without an active assignment has no entry, a graph without an
//! intermediate vertex (nothing to eliminate) is kept, at cost 0. With a
//! [`Preaccumulation`] mode other than `Off`, [`decide`] says per graph
//! whether the adjoint's forward sweep computes its local Jacobian with
//! the best sequence and pushes the Jacobian's nonzero entries, its
//! reverse sweep applying the transposed Jacobian instead of the
//! statements' adjoints ([`crate::tbr`] then requires none of the values
//! those statements' partials read). A graph is preaccumulated only in a
//! structured unit, when no statement of the graph writes a variable of a
//! subscript in it (every address is the same at the graph's start and
//! end, where the reverse sweep reads it) and no two of its dependents
//! may be the same element; with `Cost`, only when its Jacobian has fewer
//! nonzero entries than the statement-level estimate (the values the
//! statements' partials read that the graph itself assigns: the values a
//! statement-level adjoint records wherever the graph runs again).
//!
//! Where the Jacobian comes from in the reverse sweep (issue 43: "pushes
//! its nonzero entries only when the block's inputs are not available in
//! the reverse sweep, so TBR still applies at block granularity"): when
//! the values the graph reads before assigning them ([`exposed_reads`])
//! are not overwritten by anything that may run after the graph starts
//! (`available`, from [`crate::tbr`]) and every target is a real or
//! integer scalar `real(8)` holds exactly, the reverse sweep replays the
//! graph's statements from those values and computes the Jacobian there
//! ([`Jacobian::Recomputed`]: no tape); TBR then requires the exposed
//! values at the graph's first statement, as it would a statement's.
//! Otherwise the forward sweep pushes the entries ([`Jacobian::Pushed`]).
//! With `Cost`, a recomputed Jacobian is chosen when the statement-level
//! estimate is not zero, a pushed one when it has fewer entries.

use crate::activity::Activity;
use crate::elimination::{accumulation, costs, Accumulation, Costs};
use crate::flatten::{block_graphs, LocalGraph};
use dfort_ir::bitset::BitSet;
use dfort_ir::cfg::NodeId;
use dfort_ir::*;

/// Whether the adjoint preaccumulates local Jacobians.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Preaccumulation {
    /// Statement by statement (the default).
    #[default]
    Off,
    /// Where the Jacobian has fewer entries than the statement-level
    /// estimate (`--preaccumulate`).
    Cost,
    /// Every graph it can (`--preaccumulate=all`: tests and the fuzzer).
    All,
}

impl Preaccumulation {
    pub fn as_str(self) -> &'static str {
        match self {
            Preaccumulation::Off => "off",
            Preaccumulation::Cost => "cost",
            Preaccumulation::All => "all",
        }
    }
}

/// Where the reverse sweep gets a preaccumulated graph's Jacobian.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Jacobian {
    /// The forward sweep computes it and pushes its nonzero entries.
    Pushed,
    /// The reverse sweep replays the graph from its inputs, which nothing
    /// after it overwrites, and computes it there: nothing on the tape.
    Recomputed,
}

impl Jacobian {
    pub fn as_str(self) -> &'static str {
        match self {
            Jacobian::Pushed => "pushed",
            Jacobian::Recomputed => "recomputed",
        }
    }
}

/// What the adjoint does with one graph.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// The adjoint does not preaccumulate (mode `Off`).
    NotAsked,
    /// Preaccumulated: `accumulation` runs in the forward sweep (entries
    /// pushed) or in the reverse sweep (recomputed).
    Preaccumulated(Accumulation, Jacobian),
    /// Statement-level adjoints, and why.
    StatementLevel(Why),
}

/// Why a graph keeps its statement-level adjoints.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Why {
    /// The Jacobian has at least as many entries as the estimate.
    NotCheaper,
    /// The unit is reversed by basic blocks.
    Unstructured,
    /// A statement of the graph writes a subscript's variable.
    SubscriptWritten(String),
    /// Two dependents may be the same element.
    DependentsMayAlias,
}

impl Why {
    pub fn as_sentence(&self) -> String {
        match self {
            Why::NotCheaper => {
                "its Jacobian has no fewer entries than the statements' adjoints would record"
                    .into()
            }
            Why::Unstructured => "the unit is reversed by basic blocks".into(),
            Why::SubscriptWritten(v) => {
                format!("the graph writes `{v}`, which a subscript in it reads")
            }
            Why::DependentsMayAlias => {
                "two of its dependents, or a dependent and a later target, may be the same element"
                    .into()
            }
        }
    }
}

/// One graph, its elimination costs and the adjoint's decision.
#[derive(Clone, Debug)]
pub struct LocalJacobian {
    pub graph: LocalGraph,
    pub costs: Costs,
    /// The statement-level estimate: values the statements' partials
    /// read that the graph assigns.
    pub statement_level: usize,
    pub decision: Decision,
}

impl LocalJacobian {
    /// The accumulation the adjoint runs, when it preaccumulates.
    pub fn accumulation(&self) -> Option<&Accumulation> {
        match &self.decision {
            Decision::Preaccumulated(a, _) => Some(a),
            _ => None,
        }
    }

    /// The accumulation whose entries the forward sweep pushes.
    pub fn pushed(&self) -> Option<&Accumulation> {
        match &self.decision {
            Decision::Preaccumulated(a, Jacobian::Pushed) => Some(a),
            _ => None,
        }
    }

    /// Whether the reverse sweep recomputes the Jacobian.
    pub fn recomputed(&self) -> bool {
        matches!(
            self.decision,
            Decision::Preaccumulated(_, Jacobian::Recomputed)
        )
    }
}

/// The local Jacobians of one basic block, in order.
#[derive(Clone, Debug)]
pub struct BlockJacobians {
    pub node: NodeId,
    pub jacobians: Vec<LocalJacobian>,
}

/// The local Jacobians of every basic block of `unit` (nothing decided).
pub fn of_unit(unit: &Unit, act: &Activity) -> Vec<BlockJacobians> {
    decide(unit, act, Preaccumulation::Off, &|_| 0, &|_| false)
}

/// The local Jacobians of every basic block of `unit` and, in `mode`,
/// which the adjoint preaccumulates; `estimate` gives a graph's
/// statement-level estimate, `available` whether its exposed reads are
/// still there when the reverse sweep reaches its first statement.
pub fn decide(
    unit: &Unit,
    act: &Activity,
    mode: Preaccumulation,
    estimate: &dyn Fn(&LocalGraph) -> usize,
    available: &dyn Fn(&LocalGraph) -> bool,
) -> Vec<BlockJacobians> {
    block_graphs(unit, act)
        .into_iter()
        .map(|b| BlockJacobians {
            node: b.node,
            jacobians: b
                .graphs
                .into_iter()
                .map(|graph| {
                    let costs = costs(&graph.dag);
                    let statement_level = estimate(&graph);
                    let decision = match mode {
                        Preaccumulation::Off => Decision::NotAsked,
                        _ => match obstacle(unit, &graph) {
                            Some(why) => Decision::StatementLevel(why),
                            None => {
                                let recompute = replayable(unit, &graph) && available(&graph);
                                let cost = mode == Preaccumulation::Cost;
                                let jacobian = if recompute && (!cost || statement_level > 0) {
                                    Some(Jacobian::Recomputed)
                                } else if !cost || costs.jacobian_entries < statement_level {
                                    Some(Jacobian::Pushed)
                                } else {
                                    None
                                };
                                match jacobian {
                                    Some(how) => Decision::Preaccumulated(
                                        accumulation(&graph.dag, &costs.best_sequence),
                                        how,
                                    ),
                                    None => Decision::StatementLevel(Why::NotCheaper),
                                }
                            }
                        },
                    };
                    LocalJacobian {
                        graph,
                        costs,
                        statement_level,
                        decision,
                    }
                })
                .collect(),
        })
        .collect()
}

/// Whether the reverse sweep can replay `g`'s statements: every target
/// a real or integer scalar or element whose value `real(8)` holds
/// exactly (saved there and put back around the replay).
fn replayable(unit: &Unit, g: &LocalGraph) -> bool {
    g.stmts.iter().all(|&s| {
        let Some(StmtKind::Assign { lhs, .. }) = unit.stmts.get(s).map(|st| &st.kind) else {
            return false;
        };
        let Some((t, _)) = dfort_ir::dp::target(lhs) else {
            return false;
        };
        let ty = &unit.symbol(t).ty;
        let default = ty.kind.is_none() && ty.kind_text.is_none();
        match ty.base {
            BaseType::Real => default || matches!(ty.kind, Some(4 | 8)),
            BaseType::Integer => default || matches!(ty.kind, Some(1 | 2 | 4)),
            _ => false,
        }
    })
}

/// The variables `g`'s statements read (right-hand sides and the
/// targets' subscripts) before one of them assigns the whole variable,
/// each with the statement that reads it first: what a replay of the
/// graph reads at its start.
pub fn exposed_reads(unit: &Unit, g: &LocalGraph) -> Vec<(SymbolId, StmtId)> {
    let mut seen = BitSet::new(unit.symbols.len());
    let mut out = Vec::new();
    for &s in &g.stmts {
        let Some(StmtKind::Assign { lhs, rhs }) = unit.stmts.get(s).map(|st| &st.kind) else {
            continue;
        };
        let mut read = BitSet::new(unit.symbols.len());
        rhs.walk(&mut |x| match &x.kind {
            ExprKind::Var(v) | ExprKind::ArrayRef { array: v, .. }
                if dfort_ir::dp::is_variable(unit, *v) =>
            {
                read.insert_id(*v);
            }
            _ => {}
        });
        dfort_ir::dp::index_vars(unit, lhs, &mut read);
        for v in read.ids::<SymbolId>() {
            if seen.insert_id(v) {
                out.push((v, s));
            }
        }
        if let Some((t, true)) = dfort_ir::dp::target(lhs) {
            seen.insert_id(t);
        }
    }
    out
}

/// Whether the values `g` reads before assigning them are still there
/// when the reverse sweep reaches its first statement: no statement of a
/// basic block that may run after the graph starts writes one (a DO's
/// index is the reverse loop's to set; a call or a function reference
/// counts as writing every global). Only the cost depends on this: TBR
/// records whatever the replay requires and a later statement
/// overwrites, and the unit's TBR summary, which its callers read,
/// requires the exposed values of every graph that may be replayed
/// ([`replay_requirements`]).
pub fn replay_available(program: &Program, unit: &Unit, g: &LocalGraph) -> bool {
    let Some(&first) = g.stmts.first() else {
        return false;
    };
    let exposed = exposed_reads(unit, g);
    let mut vars = BitSet::new(unit.symbols.len());
    let mut globals = false;
    for &(v, _) in &exposed {
        let storage = &unit.symbol(v).storage;
        globals |= matches!(storage, Storage::Common { .. } | Storage::Imported { .. });
        vars.insert_id(v);
    }
    // A write to any member of a may-alias class may change the others.
    crate::aliases::close(unit, &mut vars);
    let cfg = &unit.cfg;
    let Some(start) = cfg.stmt_node.get(first).copied().flatten() else {
        return false;
    };
    let overwrites = |id: StmtId| {
        let st = unit.stmt(id);
        let calls = matches!(st.kind, StmtKind::Call { .. })
            || st
                .kind
                .exprs()
                .into_iter()
                .any(dfort_ir::hoist::references_user_function);
        (globals && calls)
            || dfort_ir::dp::writes(program, unit, st)
                .iter()
                .any(|(v, _)| vars.contains_id(*v))
    };
    let node = cfg.node(start);
    let from = node.stmts.iter().position(|&s| s == first).unwrap_or(0);
    if node.stmts[from..].iter().any(|&s| overwrites(s)) {
        return false;
    }
    let mut seen = BitSet::new(cfg.nodes.len());
    let mut todo: Vec<NodeId> = node.succs.iter().map(|(n, _)| *n).collect();
    while let Some(n) = todo.pop() {
        if !seen.insert_id(n) {
            continue;
        }
        let nd = cfg.node(n);
        if nd.kind == dfort_ir::cfg::NodeKind::BasicBlock && nd.stmts.iter().any(|&s| overwrites(s))
        {
            return false;
        }
        todo.extend(nd.succs.iter().map(|(m, _)| *m));
    }
    true
}

/// Per graph of `unit` whose Jacobian the reverse sweep may recompute
/// (whatever [`decide`] then chooses): its first statement and the
/// variables it reads before assigning them. TBR's bottom-up summary
/// requires them there, so that a caller keeps them for a callee whose
/// reverse sweep runs later (split mode).
pub fn replay_requirements(unit: &Unit, act: &Activity) -> Vec<(StmtId, BitSet)> {
    block_graphs(unit, act)
        .iter()
        .flat_map(|b| &b.graphs)
        .filter(|g| obstacle(unit, g).is_none() && replayable(unit, g))
        .filter_map(|g| {
            let first = *g.stmts.first()?;
            Some((first, exposed_set(unit, g)))
        })
        .collect()
}

/// [`exposed_reads`] as a set, closed over may-alias classes (what is
/// read through one member may be read through any).
pub fn exposed_set(unit: &Unit, g: &LocalGraph) -> BitSet {
    let mut set = dfort_ir::bitset::of_ids(exposed_reads(unit, g).into_iter().map(|(v, _)| v));
    crate::aliases::close(unit, &mut set);
    set
}

/// What keeps the adjoint from preaccumulating `g`, if anything.
fn obstacle(unit: &Unit, g: &LocalGraph) -> Option<Why> {
    if !unit.cfg.structured {
        return Some(Why::Unstructured);
    }
    if !g.dependents_distinct {
        return Some(Why::DependentsMayAlias);
    }
    let mut subscripts = BitSet::new(unit.symbols.len());
    let mut written = Vec::new();
    for &s in &g.stmts {
        let Some(StmtKind::Assign { lhs, rhs }) = unit.stmts.get(s).map(|st| &st.kind) else {
            continue;
        };
        for e in [lhs, rhs] {
            e.walk(&mut |x| dfort_ir::dp::index_vars(unit, x, &mut subscripts));
        }
        if let Some((t, _)) = dfort_ir::dp::target(lhs) {
            written.push(t);
        }
    }
    written
        .into_iter()
        .find(|t| subscripts.contains_id(*t))
        .map(|t| Why::SubscriptWritten(unit.symbol(t).name.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{program, request};

    /// Per graph of `f` in `mode`: where its Jacobian comes from (`None`:
    /// statement level), and the variables TBR records in `f`.
    fn decided(src: &str, mode: Preaccumulation) -> (Vec<Option<Jacobian>>, Vec<String>) {
        let p = program(src);
        let mut r = request("f", &["x"], &["y"]);
        r.preaccumulate = mode;
        let facts = crate::facts::analyse(&p, &r, None);
        let u = facts.program.units.iter().find(|u| u.name == "f").unwrap();
        let tbr = facts.tbr_of(u.id).unwrap();
        let how = tbr
            .jacobians
            .iter()
            .flat_map(|b| &b.jacobians)
            .map(|j| match &j.decision {
                Decision::Preaccumulated(_, how) => Some(*how),
                _ => None,
            })
            .collect();
        let mut records: Vec<String> = tbr
            .records
            .iter()
            .map(|r| u.symbol(r.variable).name.clone())
            .collect();
        records.dedup();
        (how, records)
    }

    const CELLS: &str = "subroutine f(n, x, y)
  integer :: n, k
  real(8) :: x(n), y(n), a, b
  do k = 1, n
    a = sin(x(k))
    b = a * x(k)
    y(k) = b * b
  end do
end subroutine
";

    #[test]
    fn inputs_nothing_overwrites_give_a_recomputed_jacobian_and_no_record() {
        for mode in [Preaccumulation::All, Preaccumulation::Cost] {
            let (how, records) = decided(CELLS, mode);
            assert_eq!(how, [Some(Jacobian::Recomputed)], "{mode:?}");
            assert!(records.is_empty(), "{mode:?}: {records:?}");
        }
        // Statement by statement, the reverse sweep recomputes a and b
        // ([`crate::recompute`]) instead of recording them every iteration.
        let (_, records) = decided(CELLS, Preaccumulation::Off);
        assert!(records.is_empty(), "{records:?}");
    }

    #[test]
    fn an_input_the_graph_overwrites_gives_a_pushed_jacobian() {
        let src = CELLS.replace(
            "    y(k) = b * b\n",
            "    y(k) = b * b\n    x(k) = 0.5d0 * y(k)\n",
        );
        let (how, records) = decided(&src, Preaccumulation::All);
        assert_eq!(how, [Some(Jacobian::Pushed)]);
        assert!(records.is_empty(), "{records:?}");
    }

    #[test]
    fn an_input_overwritten_after_the_block_gives_a_pushed_jacobian() {
        // `x` is written after the loop: the graph's input is gone when
        // the reverse sweep reaches it.
        let src = CELLS.replace("  end do\n", "  end do\n  x(1) = 0.0d0\n");
        let (how, _) = decided(&src, Preaccumulation::All);
        assert_eq!(how, [Some(Jacobian::Pushed)]);
    }

    #[test]
    fn an_accumulator_the_graph_overwrites_gives_a_pushed_jacobian() {
        // `s` is read and overwritten by the graph's first statement: the
        // replay would need its old value.
        let src = "subroutine f(n, x, y)
  integer :: n, k
  real(8) :: x(n), y(n), s, a
  s = 1.0d0
  do k = 1, n
    s = s * x(k)
    a = sin(s)
    y(k) = a * a
  end do
end subroutine
";
        let (how, _) = decided(src, Preaccumulation::All);
        assert_eq!(how.last(), Some(&Some(Jacobian::Pushed)), "{how:?}");
    }

    #[test]
    fn the_cost_mode_keeps_statements_that_record_nothing() {
        let lin = CELLS
            .replace("sin(x(k))", "2.0d0 * x(k)")
            .replace("a * x(k)", "a + x(k)")
            .replace("b * b", "3.0d0 * b");
        let (how, records) = decided(&lin, Preaccumulation::Cost);
        assert_eq!(how, [None]);
        assert!(records.is_empty(), "{records:?}");
        let (how, _) = decided(&lin, Preaccumulation::All);
        assert_eq!(how, [Some(Jacobian::Recomputed)]);
    }

    #[test]
    fn exposed_reads_are_those_read_before_the_graph_assigns_them() {
        let p = program(CELLS);
        let facts = crate::facts::analyse(&p, &request("f", &["x"], &["y"]), None);
        let u = facts.program.units.iter().find(|u| u.name == "f").unwrap();
        let graphs = block_graphs(u, facts.activity_of(u.id).unwrap());
        let g = &graphs[0].graphs[0];
        let names: Vec<&str> = exposed_reads(u, g)
            .into_iter()
            .map(|(v, _)| u.symbol(v).name.as_str())
            .collect();
        assert_eq!(names, ["x", "k"]);
    }
}
