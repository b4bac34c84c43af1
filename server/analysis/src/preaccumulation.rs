//! Per basic block, what preaccumulating its local Jacobians would cost
//! (papers 002 and 004): the unambiguous graphs [`crate::flatten`] finds
//! and, for each, the multiplications [`crate::elimination`] counts for
//! forward, reverse and cross-country elimination and the best sequence.
//!
//! Contract: [`of_unit`] reads a prepared unit and its activity; a block
//! without an active assignment has no entry, a graph without an
//! intermediate vertex (nothing to eliminate) is kept, at cost 0. The
//! adjoint generator does not preaccumulate yet: these are the costs it
//! will choose by, reported by `dfort analyze` and the editor's lenses.

use crate::activity::Activity;
use crate::elimination::{costs, Costs};
use crate::flatten::{block_graphs, LocalGraph};
use dfort_ir::cfg::NodeId;
use dfort_ir::Unit;

/// One graph and its elimination costs.
#[derive(Clone, Debug)]
pub struct LocalJacobian {
    pub graph: LocalGraph,
    pub costs: Costs,
}

/// The local Jacobians of one basic block, in order.
#[derive(Clone, Debug)]
pub struct BlockJacobians {
    pub node: NodeId,
    pub jacobians: Vec<LocalJacobian>,
}

/// The local Jacobians of every basic block of `unit`.
pub fn of_unit(unit: &Unit, act: &Activity) -> Vec<BlockJacobians> {
    block_graphs(unit, act)
        .into_iter()
        .map(|b| BlockJacobians {
            node: b.node,
            jacobians: b
                .graphs
                .into_iter()
                .map(|graph| LocalJacobian {
                    costs: costs(&graph.dag),
                    graph,
                })
                .collect(),
        })
        .collect()
}
