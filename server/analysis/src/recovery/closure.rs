//! GA as the backward closure of RA (paper 003 §3): the address
//! computations the reverse sweep's reads depend on, within one
//! iteration, and the loop-carried values that close the loop (the
//! *loop recovery problem*: outputs VO known, inputs VI to recover).
//!
//! Contract: [`close`] starts from the RA nodes and follows flow edges
//! back to definitions and computation edges back to operand uses. A
//! start definition (VI) it reaches is loop-carried: the end-of-iteration
//! use (VO) of its variable is added, fed by the variable's last
//! definition, and followed too. The result keeps only the nodes reached,
//! in their original order, with the edges between them.

use super::graph::{Graph, Node, NodeKind};
use std::collections::HashMap;

/// GA, and for each of its nodes the node of the built graph it comes
/// from.
pub(super) struct Closed {
    pub graph: Graph,
    pub built_node: Vec<usize>,
}

/// The closure of `ra` in `g`; `carried`: per start definition node,
/// the definition node of its variable's last version.
pub(super) fn close(mut g: Graph, ra: &[usize], carried: &HashMap<usize, usize>) -> Closed {
    let mut in_ga = vec![false; g.nodes.len()];
    let mut pred: HashMap<usize, usize> = g.flow.iter().map(|&(d, u)| (u, d)).collect();
    let mut operands: HashMap<usize, Vec<usize>> = HashMap::new();
    for &(o, d, _) in &g.computation {
        operands.entry(d).or_default().push(o);
    }
    let mut work: Vec<usize> = ra.to_vec();
    while let Some(n) = work.pop() {
        if n >= in_ga.len() {
            in_ga.resize(n + 1, false);
        }
        if in_ga[n] {
            continue;
        }
        in_ga[n] = true;
        match g.nodes[n].kind {
            NodeKind::Def { .. } => {
                if let Some(ops) = operands.get(&n) {
                    work.extend(ops.iter().copied());
                }
                if let Some(&last) = carried.get(&n) {
                    let out = g.nodes.len();
                    g.nodes.push(Node {
                        kind: NodeKind::Out,
                        version: g.nodes[last].version,
                        pos: None,
                    });
                    g.flow.push((last, out));
                    pred.insert(out, last);
                    work.push(out);
                }
            }
            _ => work.extend(pred.get(&n).copied()),
        }
    }
    in_ga.resize(g.nodes.len(), false);
    let mut renum = vec![usize::MAX; g.nodes.len()];
    let mut graph = Graph::default();
    let mut built_node = Vec::new();
    for (i, node) in g.nodes.iter().enumerate() {
        if in_ga[i] {
            renum[i] = graph.nodes.len();
            graph.nodes.push(node.clone());
            built_node.push(i);
        }
    }
    graph.flow = g
        .flow
        .iter()
        .filter(|(a, b)| in_ga[*a] && in_ga[*b])
        .map(|&(a, b)| (renum[a], renum[b]))
        .collect();
    graph.computation = g
        .computation
        .iter()
        .filter(|(a, b, _)| in_ga[*a] && in_ga[*b])
        .map(|&(a, b, ok)| (renum[a], renum[b], ok))
        .collect();
    Closed { graph, built_node }
}
