//! Recovery of address and control values by inversion, forward
//! recomputation or storage (paper 003, Hascoët, Utke, Naumann, §3–4).
//!
//! Contract: for every DO loop (counted or WHILE) of a structured unit,
//! [`plan_unit`] builds the RA-dependency graph GA of one iteration of the
//! loop body and plays the token game on it:
//!
//! - The address variables the game handles ("tractable") are the
//!   integer scalars (locals and dummies) that the body writes only by
//!   assignments at its top level. Each such assignment defines a new
//!   *version* of its variable; a variable read before the body writes it
//!   has a start version (VI, the value the previous iteration left).
//!   Others written in the body (inside a branch or a nested loop, by a
//!   call or a READ) are ambiguous definitions: they are left to TBR's
//!   recording, conservatively, and reported with the reason.
//! - RA: the versions the reverse sweep of each top-level statement
//!   reads — TBR's Req of every statement in it (indices of active array
//!   references, factors, loop bounds), the indices of the references it
//!   records, the actual arguments of its calls.
//! - GA: version (definition) nodes, use nodes, flow edges from a version
//!   to its uses, computation edges from the operands of an assignment to
//!   the version it defines, invertible when the path from the operand to
//!   the root holds only `+`, `-`, unary minus and multiplication by a
//!   non-zero constant and the operand occurs once. GA is the backward
//!   closure of RA; a start version in it makes its variable loop-carried,
//!   which adds an output node VO (the end-of-iteration use) with a token.
//! - [`Plan`] holds, per version, how the reverse sweep gets it: known at
//!   the end of the iteration (saved after the loop — or, for the counter
//!   of a counted WHILE loop ([`crate::counted_while`]), computed from the
//!   trip count — then handed from each
//!   reversed iteration to the previous one), inverted from a later
//!   assignment, recomputed, or stored each iteration; plus the order of
//!   the game's steps, for display.
//!
//! Module by responsibility: `variables` (which variables the game
//! handles, and why the others are ambiguous), `build` (GA of one
//! iteration), `closure` (GA as the backward closure of RA, with VO),
//! [`play`] (the token game `tg(GA)` of §4 on the graph alone), `strategy`
//! (how each version is recovered, from the game's steps), `boundary`
//! (what is handed back, saved or computed at the loop's exit and
//! entry), [`Term`] (recovery formulas and their Fortran text),
//! `inverse` (inverting one assignment) and the typed reasons
//! ([`NonInvertible`], [`Ambiguity`]). Analysis only: the adjoint
//! generator turns a plan into code, the ide crate's renderer turns the
//! reasons into sentences.

mod boundary;
mod build;
mod closure;
mod game;
mod graph;
mod inverse;
mod reason;
mod strategy;
mod term;
mod variables;

pub use game::play;
pub use graph::{Graph, Node, NodeKind, Step};
pub(crate) use inverse::invert;
pub use reason::{Ambiguity, Ambiguous, Blocker, NonInvertible};
pub use term::Term;
pub(crate) use variables::address_candidate;
pub use variables::handled;

use crate::tbr::Tbr;
use dfort_ir::bitset::BitSet;
use dfort_ir::*;
use std::collections::HashMap;

/// Where a version comes from in the forward iteration.
#[derive(Clone, Debug, PartialEq)]
pub enum Origin {
    /// The value the variable holds when the iteration starts.
    Start,
    /// Defined by the top-level statement at this position of the body.
    Def(usize),
    /// A variable the game does not handle, as read by the statement at
    /// this position (only storage can recover it).
    Opaque(usize),
}

/// How the reverse sweep gets a version.
#[derive(Clone, Debug)]
pub enum How {
    /// Known when the reversed iteration starts: the end-of-iteration
    /// value, saved after the loop and handed back by each reversed
    /// iteration to the previous one.
    End,
    /// By inverting the assignment at body position `from`.
    Inverted { from: usize, term: Term },
    /// By executing its own assignment again.
    Recomputed { term: Term },
    /// Pushed by every forward iteration.
    Stored { reason: Option<Blocker> },
    /// Not needed by the reverse sweep.
    Unneeded,
}

#[derive(Clone, Debug)]
pub struct Version {
    pub var: SymbolId,
    pub origin: Origin,
    pub how: How,
}

/// The recovery strategy of one loop.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The DO statement.
    pub stmt: StmtId,
    /// The top-level statements of the body (positions).
    pub body: Vec<StmtId>,
    /// Variables the game handles.
    pub handled: BitSet,
    pub versions: Vec<Version>,
    /// Per position: the versions the reverse sweep of that statement
    /// reads, which must be in their variables before it runs.
    pub demands: Vec<Vec<usize>>,
    /// Start versions each reversed iteration hands to the previous one.
    pub starts: Vec<usize>,
    /// Pushed after the loop and popped before its reversal.
    pub saved_at_exit: Vec<SymbolId>,
    /// The counter of a counted WHILE loop ([`crate::counted_while`])
    /// whose final value the reversal needs: computed from the trip count
    /// before the reversed loop instead of being saved after the loop.
    pub computed_at_exit: Option<SymbolId>,
    /// Handled variables a statement before the loop needs that the
    /// reversed loop does not give back: pushed before the loop, popped
    /// after its reversal.
    pub saved_at_entry: Vec<SymbolId>,
    /// Versions pushed at the end of every iteration, in push order.
    pub stored: Vec<usize>,
    pub graph: Graph,
    pub steps: Vec<Step>,
    /// Address variables written in the body that the game cannot
    /// handle (recorded by TBR instead).
    pub ambiguous: Vec<Ambiguous>,
}

/// The assignments whose values the plans recover other values from,
/// and those the reverse sweep of a unit with jumps inverts: the forward
/// sweep keeps them even when adjoint liveness finds their results dead.
pub fn kept_assignments(plans: &[Plan], undo: &crate::undo::UnitUndo) -> Vec<StmtId> {
    let mut out: Vec<StmtId> = undo
        .inverted
        .keys()
        .copied()
        .chain(plans.iter().flat_map(|p| {
            p.versions.iter().filter_map(|v| match v.origin {
                Origin::Def(pos) => p.body.get(pos).copied(),
                _ => None,
            })
        }))
        .collect();
    out.sort();
    out.dedup();
    out
}

impl Plan {
    /// Whether the forward sweep pushes values for the plan: before the
    /// loop, after it or on every iteration.
    pub fn pushes(&self) -> bool {
        !(self.saved_at_entry.is_empty() && self.saved_at_exit.is_empty() && self.stored.is_empty())
    }

    /// The body position whose statement assigns version `v` (none for
    /// start and opaque versions).
    pub fn def_pos(&self, v: usize) -> Option<usize> {
        match self.versions[v].origin {
            Origin::Def(p) => Some(p),
            _ => None,
        }
    }
}

/// The loops of a unit that get a plan: DO loops (counted or WHILE) of a
/// structured unit.
pub fn planned_loops(unit: &Unit) -> Vec<StmtId> {
    if !unit.cfg.structured {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut stack = unit.body.clone();
    while let Some(id) = stack.pop() {
        let Some(st) = unit.stmts.get(id) else {
            continue;
        };
        if let StmtKind::Do { control, .. } = &st.kind {
            if !matches!(control, DoControl::Forever) {
                out.push(id);
            }
        }
        for b in st.kind.blocks() {
            stack.extend_from_slice(b);
        }
    }
    out.sort();
    out
}

fn loop_body(unit: &Unit, id: StmtId) -> &[StmtId] {
    match &unit.stmt(id).kind {
        StmtKind::Do { body, .. } => body,
        _ => &[],
    }
}

fn own_index(unit: &Unit, id: StmtId) -> Option<SymbolId> {
    match &unit.stmt(id).kind {
        StmtKind::Do {
            control: DoControl::Counted { var, .. },
            ..
        } => Some(*var),
        _ => None,
    }
}

/// Every statement of a list and of the constructs nested in it.
pub(crate) fn subtree(unit: &Unit, ids: &[StmtId]) -> Vec<StmtId> {
    let mut out = Vec::new();
    let mut stack: Vec<StmtId> = ids.iter().rev().copied().collect();
    while let Some(id) = stack.pop() {
        out.push(id);
        for b in unit.stmt(id).kind.blocks().into_iter().rev() {
            stack.extend(b.iter().rev());
        }
    }
    out
}

/// The plans of every DO loop of a structured unit, given its TBR results
/// (computed with the plans' variables taken over, see [`handled`]).
pub fn plan_unit(
    program: &Program,
    unit: &Unit,
    shape: &crate::shape::UnitShape,
    tbr: &Tbr,
) -> Vec<Plan> {
    let mut written_anywhere = BitSet::default();
    build::written(program, unit, &unit.body, &mut written_anywhere);
    let counted = &shape.counted;
    planned_loops(unit)
        .into_iter()
        .map(|lp| {
            let counter = counted.get(&lp).map(|cw| cw.var);
            plan_loop(program, unit, tbr, lp, &written_anywhere, counter)
        })
        .collect()
}

/// The plan of loop `lp`; `counter`: the counter of a counted WHILE
/// loop, whose final value the reversal computes.
fn plan_loop(
    program: &Program,
    unit: &Unit,
    tbr: &Tbr,
    lp: StmtId,
    written_anywhere: &BitSet,
    counter: Option<SymbolId>,
) -> Plan {
    let (handled, ambiguous) = variables::handled_vars(program, unit, lp);
    let built = build::build(program, unit, tbr, lp, &handled, written_anywhere);
    // Each start definition is carried from its variable's last one.
    let carried: HashMap<usize, usize> = built
        .starts
        .iter()
        .filter_map(|(var, &start)| {
            let end = *built.ends.get(var)?;
            Some((built.def_node[start], built.def_node[end]))
        })
        .collect();
    let ga = closure::close(built.graph, &built.ra, &carried);
    let steps = game::play(&ga.graph);
    let mut versions = built.versions;
    strategy::apply(
        &mut versions,
        &ga.graph,
        &ga.built_node,
        &steps,
        &built.inverse,
        &built.recompute,
    );
    // The loop-carried variables: those with an out node in GA.
    let carried_vars: Vec<SymbolId> = ga
        .graph
        .nodes
        .iter()
        .filter(|n| n.kind == NodeKind::Out)
        .map(|n| versions[n.version].var)
        .collect();
    let b = boundary::decide(
        unit,
        tbr,
        lp,
        &handled,
        &versions,
        &carried_vars,
        &built.starts,
        counter,
        own_index(unit, lp),
        written_anywhere,
    );
    // Computed versions nothing the reverse sweep reads depends on are
    // not recovered (the generator computes only what the statements and
    // the loop's start read; the report says the same).
    let mut reached: Vec<bool> = vec![false; versions.len()];
    let mut todo: Vec<usize> = built
        .demands
        .iter()
        .flatten()
        .chain(b.starts.iter())
        .copied()
        .collect();
    while let Some(v) = todo.pop() {
        if v >= versions.len() || reached[v] {
            continue;
        }
        reached[v] = true;
        if let How::Inverted { term, .. } | How::Recomputed { term } = &versions[v].how {
            let mut deps = Vec::new();
            term.versions(&mut deps);
            todo.extend(deps);
        }
    }
    for (v, ver) in versions.iter_mut().enumerate() {
        if !reached[v] && matches!(ver.how, How::Inverted { .. } | How::Recomputed { .. }) {
            ver.how = How::Unneeded;
        }
    }
    Plan {
        stmt: lp,
        body: loop_body(unit, lp).to_vec(),
        handled,
        versions,
        demands: built.demands,
        starts: b.starts,
        saved_at_exit: b.saved_at_exit,
        computed_at_exit: b.computed_at_exit,
        saved_at_entry: b.saved_at_entry,
        stored: b.stored,
        graph: ga.graph,
        steps,
        ambiguous,
    }
}
