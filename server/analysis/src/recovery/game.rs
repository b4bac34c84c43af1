//! The token game `tg(GA)` of paper 003 §4 on a graph alone.
//!
//! Contract: [`play`] starts with tokens on the VO nodes (the values
//! known when a reversed iteration starts) and repeats until every node
//! has a token:
//!
//! - `sat`: tokens flow forward along flow edges (a use of a known
//!   definition is known) and backward from a sufficient use — here any
//!   unconditional one (every use sits in the iteration's single basic
//!   block, except the reads of nested constructs);
//! - inversion: an operand use whose assignment's result and other
//!   operands are known, along an invertible computation edge;
//! - forward recomputation: a recomputable definition whose operands are
//!   known;
//! - storage of the node the heuristic `H` picks: the one whose trigger
//!   set — what storing it makes known by saturation and forward
//!   recomputation alone — is largest, looking first at the operands of
//!   non-invertible computation edges (the values §5.3 stores "because
//!   of the integer division"), then at every open node; ties go to the
//!   latest node.
//!
//! It knows nothing of Fortran or the IR, and returns the steps in the
//! order it placed the tokens; the caller turns them into a plan.

use super::graph::{Graph, NodeKind, Step};

/// The steps of `tg(GA)` on `g`, in order (see the module contract).
pub fn play(g: &Graph) -> Vec<Step> {
    let n = g.nodes.len();
    let mut token = vec![false; n];
    let mut steps = Vec::new();
    for (i, node) in g.nodes.iter().enumerate() {
        if node.kind == NodeKind::Out {
            token[i] = true;
            steps.push(Step::Known(i));
        }
    }
    // Per definition: its operand uses, in edge order.
    let mut operands: Vec<Vec<usize>> = vec![Vec::new(); n];
    for &(o, d, _) in &g.computation {
        if d < n && o < n {
            operands[d].push(o);
        }
    }
    let recomputable = |token: &[bool], w: usize| -> bool {
        matches!(g.nodes[w].kind, NodeKind::Def { recomputable: true })
            && !token[w]
            && operands[w].iter().all(|&o| token[o])
    };
    loop {
        for s in sat(g, &mut token) {
            steps.push(Step::Saturated(s));
        }
        if token.iter().all(|&t| t) {
            break;
        }
        // Inversion.
        let inversion = g.computation.iter().find(|&&(o, d, ok)| {
            ok && !token[o] && token[d] && operands[d].iter().all(|&u| u == o || token[u])
        });
        if let Some(&(o, _, _)) = inversion {
            token[o] = true;
            steps.push(Step::Inverted(o));
            continue;
        }
        // Forward recomputation.
        if let Some(w) = (0..n).find(|&w| recomputable(&token, w)) {
            token[w] = true;
            steps.push(Step::Recomputed(w));
            continue;
        }
        // Storage of the node H picks.
        let open: Vec<usize> = (0..n).filter(|&v| !token[v]).collect();
        let blocked: Vec<usize> = open
            .iter()
            .copied()
            .filter(|&v| g.computation.iter().any(|&(o, _, ok)| o == v && !ok))
            .collect();
        let candidates = if blocked.is_empty() { &open } else { &blocked };
        let trigger = |v: usize| -> usize {
            let mut t = token.clone();
            t[v] = true;
            let mut count = 1;
            loop {
                count += sat(g, &mut t).len();
                let next: Vec<usize> = (0..n).filter(|&w| recomputable(&t, w)).collect();
                if next.is_empty() {
                    return count;
                }
                for w in next {
                    t[w] = true;
                    count += 1;
                }
            }
        };
        // Ties go to the node latest in the body (reverse topological order).
        let Some(&pick) = candidates.iter().max_by_key(|&&v| trigger(v)) else {
            break;
        };
        token[pick] = true;
        steps.push(Step::Stored(pick));
    }
    steps
}

/// `sat(GA)`: propagates tokens along flow edges until nothing changes;
/// returns the nodes it tokened, in order.
fn sat(g: &Graph, token: &mut [bool]) -> Vec<usize> {
    let unconditional = |u: usize| !matches!(g.nodes[u].kind, NodeKind::Ra { conditional: true });
    let mut added = Vec::new();
    loop {
        let mut more = Vec::new();
        for &(d, u) in &g.flow {
            if token[d] && !token[u] {
                more.push(u);
            }
            if token[u] && !token[d] && unconditional(u) {
                more.push(d);
            }
        }
        if more.is_empty() {
            return added;
        }
        for v in more {
            if !token[v] {
                token[v] = true;
                added.push(v);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    //! The graphs of paper 003's Figures 5 (for the loop of Figure 2(a))
    //! and 9 (for loop L of Figure 8(a)), built by hand; the expected
    //! outcomes are the paper's (Figure 6, Figure 8(b)'s `// n:i` and
    //! `// n:f` notes, and §4's account of the modified line 5).

    use super::*;
    use crate::recovery::graph::Node;
    use std::collections::BTreeSet;

    /// A graph under construction; each node's `version` is its own index.
    #[derive(Default)]
    struct Hand {
        g: Graph,
    }

    impl Hand {
        fn node(&mut self, kind: NodeKind) -> usize {
            let n = self.g.nodes.len();
            self.g.nodes.push(Node {
                kind,
                version: n,
                pos: None,
            });
            n
        }

        /// A value defined outside the iteration (VI).
        fn input(&mut self) -> usize {
            self.node(NodeKind::Def {
                recomputable: false,
            })
        }

        /// `def = f(operands)`: one operand use per operand, each feeding
        /// the new definition along a computation edge.
        fn assign(&mut self, operands: &[(usize, bool)]) -> (usize, Vec<usize>) {
            let uses: Vec<usize> = operands
                .iter()
                .map(|&(d, _)| self.read(d, NodeKind::Operand))
                .collect();
            let def = self.node(NodeKind::Def { recomputable: true });
            for (&u, &(_, invertible)) in uses.iter().zip(operands) {
                self.g.computation.push((u, def, invertible));
            }
            (def, uses)
        }

        /// A use of `def` (an operand, an adjoint's read, or VO).
        fn read(&mut self, def: usize, kind: NodeKind) -> usize {
            let u = self.node(kind);
            self.g.flow.push((def, u));
            u
        }

        fn ra(&mut self, def: usize) -> usize {
            self.read(def, NodeKind::Ra { conditional: false })
        }

        /// The definition whose value node `n` holds (itself for a
        /// definition, the definition it reads for a use).
        fn value(&self, n: usize) -> usize {
            match self.g.nodes[n].kind {
                NodeKind::Def { .. } => n,
                _ => self
                    .g
                    .flow
                    .iter()
                    .find(|&&(_, u)| u == n)
                    .map_or(n, |&(d, _)| d),
            }
        }
    }

    /// The steps grouped into rounds: consecutive steps of one kind, as
    /// sets of nodes (the paper counts the tokens `sat` adds, not their
    /// order).
    fn rounds(steps: &[Step]) -> Vec<(&'static str, BTreeSet<usize>)> {
        let mut out: Vec<(&'static str, BTreeSet<usize>)> = Vec::new();
        for s in steps {
            let (k, n) = kind(s);
            match out.last_mut() {
                Some((last, set)) if *last == k && k != "inverted" => {
                    set.insert(n);
                }
                _ => out.push((k, BTreeSet::from([n]))),
            }
        }
        out
    }

    fn kind(s: &Step) -> (&'static str, usize) {
        match *s {
            Step::Known(n) => ("known", n),
            Step::Saturated(n) => ("saturated", n),
            Step::Inverted(n) => ("inverted", n),
            Step::Recomputed(n) => ("recomputed", n),
            Step::Stored(n) => ("stored", n),
        }
    }

    /// The decisions (inversions, recomputations, storage) in order, by
    /// the value each recovers.
    fn decisions(h: &Hand, steps: &[Step]) -> Vec<(&'static str, usize)> {
        steps
            .iter()
            .map(kind)
            .filter(|(k, _)| !matches!(*k, "known" | "saturated"))
            .map(|(k, n)| (k, h.value(n)))
            .collect()
    }

    /// Every node gets exactly one token.
    fn each_node_once(g: &Graph, steps: &[Step]) {
        let mut seen = vec![0; g.nodes.len()];
        for s in steps {
            seen[kind(s).1] += 1;
        }
        assert!(seen.iter().all(|&c| c == 1), "{seen:?} in {steps:?}");
    }

    /// Figure 2(a): `k = j+1; j = k+2; a[j] = a[k]*a[j]`, GA of Figure 5.
    #[test]
    fn figure_2_is_recovered_by_two_inversions_as_in_figure_6() {
        let mut h = Hand::default();
        let j0 = h.input();
        let (k3, k_uses) = h.assign(&[(j0, true)]);
        let (j4, j_uses) = h.assign(&[(k3, true)]);
        let ra_j = h.ra(j4);
        let ra_k = h.ra(k3);
        let vo_j = h.read(j4, NodeKind::Out);
        let steps = play(&h.g);
        each_node_once(&h.g, &steps);
        assert_eq!(
            rounds(&steps),
            vec![
                // (a) VO = {j} is known.
                ("known", BTreeSet::from([vo_j])),
                // (b) sat: two more tokens, j's definition and its use
                // in the adjoint of line 5.
                ("saturated", BTreeSet::from([j4, ra_j])),
                // (c) k by inverting line 4 (`k = j-2`, line 4 of 2(c)).
                ("inverted", BTreeSet::from([j_uses[0]])),
                // (d) sat: k's definition and its adjoint use.
                ("saturated", BTreeSet::from([k3, ra_k])),
                // (e) the previous j by inverting line 3 (`j = k-1`).
                ("inverted", BTreeSet::from([k_uses[0]])),
                // (f) sat reaches the input j: all nodes have tokens.
                ("saturated", BTreeSet::from([j0])),
            ]
        );
        // Cost zero: nothing stored, nothing recomputed.
        assert_eq!(
            decisions(&h, &steps),
            vec![("inverted", k3), ("inverted", j0)]
        );
    }

    /// GA of loop L (Figure 8(a)); `line5_invertible`: false for the
    /// variant `i = max(k, 2*l)`. Returns the graph and the values
    /// (i0, j0, l0, k3, m4, i5, j8, i9, l12).
    fn loop_l(line5_invertible: bool) -> (Hand, [usize; 9]) {
        let mut h = Hand::default();
        let (i0, j0, l0) = (h.input(), h.input(), h.input());
        // 3: k = i-j
        let (k3, _) = h.assign(&[(i0, true), (j0, true)]);
        // 4: m = k+3+l
        let (m4, _) = h.assign(&[(k3, true), (l0, true)]);
        // 5: i = k+2*l (or max(k, 2*l))
        let (i5, _) = h.assign(&[(k3, line5_invertible), (l0, line5_invertible)]);
        // 7: a[i] = a[j]*p[k]*a[m]: the adjoint reads i, j, k, m.
        for d in [i5, j0, k3, m4] {
            h.ra(d);
        }
        // 8: j = j+m+4
        let (j8, _) = h.assign(&[(j0, true), (m4, true)]);
        // 9: i = i+j+1
        let (i9, _) = h.assign(&[(i5, true), (j8, true)]);
        // 11: a[j] = a[i]*p[k]*a[m]
        for d in [j8, i9, k3, m4] {
            h.ra(d);
        }
        // 12: l = l+1
        let (l12, _) = h.assign(&[(l0, true)]);
        // The known outputs i, j and l.
        for d in [i9, j8, l12] {
            h.read(d, NodeKind::Out);
        }
        (h, [i0, j0, l0, k3, m4, i5, j8, i9, l12])
    }

    /// Figure 8(b): `1:i` t = i-j-1, `2:i` l = l-1, `3:i` k = t-2*l,
    /// `4:f` m = k+3+l, `5:i` j = j-m-4, `6:i` i = k+j; no storage.
    #[test]
    fn figure_8_inverts_five_values_and_recomputes_m() {
        let (h, [i0, j0, l0, k3, m4, i5, j8, i9, l12]) = loop_l(true);
        let steps = play(&h.g);
        each_node_once(&h.g, &steps);
        let known: BTreeSet<usize> = steps
            .iter()
            .filter_map(|s| match s {
                Step::Known(n) => Some(h.value(*n)),
                _ => None,
            })
            .collect();
        assert_eq!(known, BTreeSet::from([i9, j8, l12]));
        assert_eq!(
            decisions(&h, &steps),
            vec![
                ("inverted", i5),
                ("inverted", l0),
                ("inverted", k3),
                ("recomputed", m4),
                ("inverted", j0),
                ("inverted", i0),
            ]
        );
    }

    /// §4: with line 5 changed to `i = max(k, 2*l)`, the third decision
    /// is the heuristic's, and it stores k (Figure 9(d)); the rest is
    /// recovered without storage.
    #[test]
    fn figure_8_with_max_stores_k_only() {
        let (h, [i0, j0, l0, k3, m4, i5, ..]) = loop_l(false);
        let steps = play(&h.g);
        each_node_once(&h.g, &steps);
        assert_eq!(
            decisions(&h, &steps),
            vec![
                ("inverted", i5),
                ("inverted", l0),
                ("stored", k3),
                ("recomputed", m4),
                ("inverted", j0),
                ("inverted", i0),
            ]
        );
    }
}
