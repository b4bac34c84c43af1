//! The inversion strategy S(GA) of paper 003 §3 read off the token
//! game's steps: how the reverse sweep gets each version.
//!
//! Contract: [`apply`] replays the steps of [`super::game::play`] in
//! order. A known VO makes its version the end value; an inverted
//! operand gets the inverse of the assignment it feeds (unless an earlier
//! step already recovered that version); a recomputed definition gets its
//! own right-hand side; a stored node's version is stored, with the
//! first non-invertible operation among the uses of that version that
//! made inversion impossible, when there is one.

use super::graph::{Graph, Step};
use super::reason::Blocker;
use super::term::Term;
use super::{How, Origin, Version};
use std::collections::HashMap;

/// Sets `how` of `versions` from the game's `steps` on `ga`;
/// `built_node` maps GA's nodes to the built graph's, by which `inverse`
/// (per operand node) is keyed; `recompute` is per version.
pub(super) fn apply(
    versions: &mut [Version],
    ga: &Graph,
    built_node: &[usize],
    steps: &[Step],
    inverse: &HashMap<usize, Result<Term, Option<Blocker>>>,
    recompute: &HashMap<usize, Option<Term>>,
) {
    let blocker_of = |o: usize| -> Option<Blocker> {
        inverse
            .get(&built_node[o])
            .and_then(|r| r.clone().err().flatten())
    };
    for step in steps {
        match *step {
            Step::Known(n) => versions[ga.nodes[n].version].how = How::End,
            Step::Saturated(_) => {}
            Step::Inverted(o) => {
                let ver = ga.nodes[o].version;
                if !matches!(versions[ver].how, How::Unneeded) {
                    continue;
                }
                let Some(d) = ga.computation.iter().find(|e| e.0 == o).map(|e| e.1) else {
                    continue;
                };
                let from = versions[ga.nodes[d].version].origin.clone();
                if let (Origin::Def(p), Some(Ok(t))) = (from, inverse.get(&built_node[o])) {
                    versions[ver].how = How::Inverted {
                        from: p,
                        term: t.clone(),
                    };
                }
            }
            Step::Recomputed(n) => {
                let ver = ga.nodes[n].version;
                if let Some(Some(t)) = recompute.get(&ver) {
                    versions[ver].how = How::Recomputed { term: t.clone() };
                }
            }
            Step::Stored(pick) => {
                let ver = ga.nodes[pick].version;
                let reason = ga
                    .computation
                    .iter()
                    .filter(|&&(o, _, ok)| o == pick && !ok)
                    .find_map(|&(o, _, _)| blocker_of(o))
                    .or_else(|| {
                        // The first blocked operand among the version's uses.
                        ga.computation.iter().find_map(|&(o, _, ok)| {
                            (!ok && ga.nodes[o].version == ver)
                                .then(|| blocker_of(o))
                                .flatten()
                        })
                    });
                versions[ver].how = How::Stored { reason };
            }
        }
    }
}
