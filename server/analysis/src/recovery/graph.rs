//! The RA-dependency graph GA of paper 003 §3 (Figure 5) and the steps
//! of the token game played on it (§4, Figure 6).
//!
//! Contract: plain data over indices, nothing of Fortran or the IR:
//! definition nodes (one per value, with whether its assignment can be
//! evaluated again), use nodes (operands of an assignment, values the
//! reverse sweep reads, the end-of-iteration uses VO), flow edges from a
//! definition to its uses, and computation edges from an operand use to
//! the definition it feeds, marked invertible or not. A node's `version`
//! and `pos` are the builder's labels: the game never reads them.

/// A GA node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NodeKind {
    /// A version (its definition; start versions are the inputs VI).
    /// `recomputable`: an assignment the reverse sweep can execute again
    /// once its operands are known (forward recomputation, §3 option 2);
    /// false for start values and for values of variables the game does
    /// not handle.
    Def { recomputable: bool },
    /// A use of a version: as an operand of a top-level assignment.
    Operand,
    /// A value the reverse sweep reads (RA); `conditional` when it is
    /// inside a nested construct.
    Ra { conditional: bool },
    /// The end-of-iteration use of a loop-carried variable (VO).
    Out,
}

#[derive(Clone, Debug)]
pub struct Node {
    pub kind: NodeKind,
    pub version: usize,
    /// Body position of the statement (none for start and out nodes).
    pub pos: Option<usize>,
}

/// How a node got its token, in the order `tg` placed them.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// Known before the game starts (a VO node).
    Known(usize),
    /// Propagated along a flow edge by `sat`.
    Saturated(usize),
    /// An operand use recovered by inverting the assignment it feeds.
    Inverted(usize),
    /// A definition recovered by executing its assignment again.
    Recomputed(usize),
    /// Stored by the forward sweep (the node the heuristic `H` picks).
    Stored(usize),
}

/// The RA-dependency graph of one iteration.
#[derive(Clone, Debug, Default)]
pub struct Graph {
    pub nodes: Vec<Node>,
    /// (definition, use).
    pub flow: Vec<(usize, usize)>,
    /// (operand use, defined version node, invertible).
    pub computation: Vec<(usize, usize, bool)>,
}
