//! The one dataflow engine every analysis uses: an iterative worklist
//! solver over a unit's CFG (paper 000 §3, the general data-flow equations
//! of Figs. 2, 4, 6 and 8), forward or backward, with set union as the
//! join. Transfer functions are monotone set functions, so the iteration
//! terminates: sets only grow, inside the finite set of variables.

use dfort_ir::bitset::BitSet;
use dfort_ir::cfg::{Cfg, NodeId};
use dfort_ir::IdVec;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// Information flows with control (varied, required): the value before
    /// a node is the union of the values after its predecessors.
    Forward,
    /// Information flows against control (useful): the value after a node
    /// is the union of the values before its successors.
    Backward,
}

/// The fixpoint: the set holding just before and just after each node, in
/// program order whatever the direction.
#[derive(Clone, Debug, Default)]
pub struct Solution {
    pub before: IdVec<NodeId, BitSet>,
    pub after: IdVec<NodeId, BitSet>,
}

/// Solves the equations of one analysis on `cfg`. `boundary` holds at the
/// entry (forward) or the exit (backward); `transfer(node, set)` maps the
/// set on the node's input side to its output side.
pub fn solve(
    cfg: &Cfg,
    dir: Direction,
    boundary: &BitSet,
    mut transfer: impl FnMut(NodeId, &BitSet) -> BitSet,
) -> Solution {
    let n = cfg.nodes.len();
    let mut before: IdVec<NodeId, BitSet> = IdVec::from_elem(BitSet::default(), n);
    let mut after: IdVec<NodeId, BitSet> = IdVec::from_elem(BitSet::default(), n);
    if n == 0 {
        return Solution { before, after };
    }
    let order: Vec<NodeId> = match dir {
        Direction::Forward => cfg.topological_order(),
        Direction::Backward => {
            let mut o = cfg.topological_order();
            o.reverse();
            o
        }
    };
    let mut queued: IdVec<NodeId, bool> = IdVec::from_elem(true, n);
    let mut work: std::collections::VecDeque<NodeId> = order.into_iter().collect();
    while let Some(id) = work.pop_front() {
        queued[id] = false;
        let node = cfg.node(id);
        // Input side: boundary at the start node, else the join.
        let mut input = BitSet::default();
        let (start, neighbours): (NodeId, Vec<NodeId>) = match dir {
            Direction::Forward => (cfg.entry, node.preds.clone()),
            Direction::Backward => (cfg.exit, node.succs.iter().map(|(s, _)| *s).collect()),
        };
        if id == start {
            input.union_with(boundary);
        }
        for p in neighbours {
            match dir {
                Direction::Forward => input.union_with(&after[p]),
                Direction::Backward => input.union_with(&before[p]),
            };
        }
        let output = transfer(id, &input);
        let (inp, out) = match dir {
            Direction::Forward => (&mut before[id], &mut after[id]),
            Direction::Backward => (&mut after[id], &mut before[id]),
        };
        *inp = input;
        if *out != output {
            *out = output;
            let next: Vec<NodeId> = match dir {
                Direction::Forward => node.succs.iter().map(|(s, _)| *s).collect(),
                Direction::Backward => node.preds.clone(),
            };
            for s in next {
                if !queued[s] {
                    queued[s] = true;
                    work.push_back(s);
                }
            }
        }
    }
    Solution { before, after }
}
