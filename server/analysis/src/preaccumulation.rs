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

/// What the adjoint does with one graph.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// The adjoint does not preaccumulate (mode `Off`).
    NotAsked,
    /// Preaccumulated: the forward sweep runs `accumulation` and pushes
    /// its entries.
    Preaccumulated(Accumulation),
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
            Why::DependentsMayAlias => "two of its dependents may be the same element".into(),
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
            Decision::Preaccumulated(a) => Some(a),
            _ => None,
        }
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
    decide(unit, act, Preaccumulation::Off, &|_| 0)
}

/// The local Jacobians of every basic block of `unit` and, in `mode`,
/// which the adjoint preaccumulates; `estimate` gives a graph's
/// statement-level estimate.
pub fn decide(
    unit: &Unit,
    act: &Activity,
    mode: Preaccumulation,
    estimate: &dyn Fn(&LocalGraph) -> usize,
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
                            None if mode == Preaccumulation::Cost
                                && costs.jacobian_entries >= statement_level =>
                            {
                                Decision::StatementLevel(Why::NotCheaper)
                            }
                            None => Decision::Preaccumulated(accumulation(
                                &graph.dag,
                                &costs.best_sequence,
                            )),
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
