//! Construction of the RA-dependency graph of one iteration of a loop
//! body (paper 003 §3, Figure 5), before its closure.
//!
//! Contract: [`build`] walks the top-level statements of the body in
//! order. Every tractable variable gets a start version (VI); each
//! top-level assignment to one defines a new version, with an operand use
//! per version its right-hand side reads (variables the game does not
//! handle get opaque versions) and a computation edge from each use to
//! the new definition, invertible when [`invert`] finds the inverse and
//! the operand occurs once. RA: per statement, a use of the current
//! version of every tractable variable its reverse sweep reads (TBR's
//! Req, the indices of the references it records, the actual arguments
//! of its calls), conditional when the statement is a construct. Also
//! returned: how each version is recomputed and each operand inverted,
//! for the plan.

use super::graph::{Graph, Node, NodeKind};
use super::inverse::invert;
use super::reason::Blocker;
use super::term::Term;
use super::{loop_body, own_index, subtree, Origin, Version};
use crate::tbr::Tbr;
use dfort_ir::bitset::BitSet;
use dfort_ir::dp::{all_writes, index_vars, vars};
use dfort_ir::*;
use std::collections::HashMap;

/// One iteration's graph and what the plan needs to read it.
pub(super) struct Built {
    pub versions: Vec<Version>,
    pub graph: Graph,
    /// Per version: its definition node.
    pub def_node: Vec<usize>,
    /// The RA nodes.
    pub ra: Vec<usize>,
    /// Per tractable variable: its start version and the version the
    /// iteration ends with.
    pub starts: HashMap<SymbolId, usize>,
    pub ends: HashMap<SymbolId, usize>,
    /// Per body position: the versions its reverse sweep reads.
    pub demands: Vec<Vec<usize>>,
    /// Per version defined by an assignment: how to recompute it (None:
    /// it cannot be evaluated again).
    pub recompute: HashMap<usize, Option<Term>>,
    /// Per operand node: the inverse term, or why there is none.
    pub inverse: HashMap<usize, Result<Term, Option<Blocker>>>,
}

/// The graph of one iteration of loop `lp` over the tractable variables
/// `handled`; `written_anywhere`: the variables the unit writes.
pub(super) fn build(
    program: &Program,
    unit: &Unit,
    tbr: &Tbr,
    lp: StmtId,
    handled: &BitSet,
    written_anywhere: &BitSet,
) -> Built {
    let body = loop_body(unit, lp);
    let mut written_in_body = BitSet::default();
    let body_calls = written(program, unit, body, &mut written_in_body);
    let inv = Invariance {
        program,
        unit,
        written_in_body,
        written_anywhere: written_anywhere.clone(),
        body_calls,
        own: own_index(unit, lp),
    };
    let mut b = Builder {
        unit,
        handled,
        inv: &inv,
        versions: Vec::new(),
        g: Graph::default(),
        def_node: Vec::new(),
        recompute: HashMap::new(),
        inverse: HashMap::new(),
    };
    // Versions in body order; the start versions first.
    let mut cur: HashMap<SymbolId, usize> = HashMap::new();
    for s in handled.ids() {
        let ver = b.version(s, Origin::Start, false);
        cur.insert(s, ver);
    }
    let starts: HashMap<SymbolId, usize> = cur.clone();
    let mut demands: Vec<Vec<usize>> = Vec::new();
    let mut ra: Vec<usize> = Vec::new();
    for (pos, &id) in body.iter().enumerate() {
        let st = unit.stmt(id);
        // What the reverse sweep of this statement reads.
        let d = demand_vars(unit, tbr, id, handled);
        let compound = !st.kind.blocks().is_empty();
        let mut here = Vec::new();
        for v in d.ids::<SymbolId>() {
            let Some(&ver) = cur.get(&v) else {
                continue;
            };
            here.push(ver);
            ra.push(b.use_node(
                ver,
                NodeKind::Ra {
                    conditional: compound,
                },
                Some(pos),
            ));
        }
        demands.push(here);
        // A top-level assignment to a handled variable: a new version.
        if let StmtKind::Assign { lhs, rhs } = &st.kind {
            if let ExprKind::Var(t) = lhs.kind {
                if handled.contains_id(t) {
                    b.assignment(t, rhs, pos, &mut cur);
                }
            }
        }
    }
    Built {
        versions: b.versions,
        graph: b.g,
        def_node: b.def_node,
        ra,
        starts,
        ends: cur,
        demands,
        recompute: b.recompute,
        inverse: b.inverse,
    }
}

/// Whether a non-handled variable keeps its value through the body.
struct Invariance<'a> {
    program: &'a Program,
    unit: &'a Unit,
    /// Written somewhere in the body.
    written_in_body: BitSet,
    /// Written somewhere in the unit.
    written_anywhere: BitSet,
    body_calls: bool,
    own: Option<SymbolId>,
}

impl Invariance<'_> {
    fn fixed(&self, s: SymbolId) -> bool {
        let sym = self.unit.symbol(s);
        if sym.attrs.parameter || Some(s) == self.own {
            return true;
        }
        if sym.storage == Storage::Procedure {
            return false;
        }
        // A host's INTENT(IN) dummy or named constant cannot change (a
        // call cannot change it either: the standard forbids changing an
        // INTENT(IN) dummy's actual through another path), so it needs no
        // saving — and restoring it would not compile.
        if let Storage::Imported { from, symbol, .. } = &sym.storage {
            let original = self
                .program
                .units
                .get(*from)
                .and_then(|u| u.symbols.get(*symbol));
            if original.is_some_and(|o| o.attrs.parameter || o.intent == Some(Intent::In)) {
                return true;
            }
        }
        if sym.is_global() && self.body_calls {
            return false;
        }
        if sym.rank() > 0 {
            // An array must not change anywhere: it is not saved.
            return !self.written_anywhere.contains_id(s);
        }
        !self.written_in_body.contains_id(s)
    }
}

/// Adds the variables the statements `ids` (and those nested in them)
/// write to `out`; whether they call anything.
pub(super) fn written(program: &Program, unit: &Unit, ids: &[StmtId], out: &mut BitSet) -> bool {
    let mut calls = false;
    for id in subtree(unit, ids) {
        let st = unit.stmt(id);
        for (v, _) in all_writes(program, unit, st) {
            out.insert_id(v);
        }
        calls |= matches!(st.kind, StmtKind::Call { .. });
        for e in st.kind.exprs() {
            e.walk(&mut |x| calls |= matches!(x.kind, ExprKind::FunctionCall { .. }));
        }
    }
    calls
}

/// The game's graph under construction.
struct Builder<'a> {
    unit: &'a Unit,
    handled: &'a BitSet,
    inv: &'a Invariance<'a>,
    versions: Vec<Version>,
    g: Graph,
    def_node: Vec<usize>,
    recompute: HashMap<usize, Option<Term>>,
    inverse: HashMap<usize, Result<Term, Option<Blocker>>>,
}

impl Builder<'_> {
    fn version(&mut self, var: SymbolId, origin: Origin, recomputable: bool) -> usize {
        let v = self.versions.len();
        let pos = match origin {
            Origin::Def(p) | Origin::Opaque(p) => Some(p),
            Origin::Start => None,
        };
        self.versions.push(Version {
            var,
            origin,
            how: super::How::Unneeded,
        });
        self.def_node.push(self.g.nodes.len());
        self.g.nodes.push(Node {
            kind: NodeKind::Def { recomputable },
            version: v,
            pos,
        });
        v
    }

    fn use_node(&mut self, version: usize, kind: NodeKind, pos: Option<usize>) -> usize {
        let n = self.g.nodes.len();
        self.g.nodes.push(Node { kind, version, pos });
        self.g.flow.push((self.def_node[version], n));
        n
    }

    /// `t = rhs` at body position `pos`: the new version of `t`, its
    /// operand uses and their computation edges.
    fn assignment(
        &mut self,
        t: SymbolId,
        rhs: &Expr,
        pos: usize,
        cur: &mut HashMap<SymbolId, usize>,
    ) {
        let mut leaves = Vec::new();
        let term = self.term(rhs, cur, pos, &mut leaves);
        let ver = self.version(t, Origin::Def(pos), term.is_some());
        let dn = self.def_node[ver];
        let mut ops: Vec<usize> = Vec::new();
        let mut counts: HashMap<usize, usize> = HashMap::new();
        for (_, v) in &leaves {
            *counts.entry(*v).or_default() += 1;
        }
        for (_, v) in &leaves {
            if ops.iter().any(|&o| self.g.nodes[o].version == *v) {
                continue;
            }
            let n = self.use_node(*v, NodeKind::Operand, Some(pos));
            let inverse = match (&term, counts[v]) {
                (Some(tm), 1) => invert(self.unit, rhs, tm, *v, Term::Version(ver)),
                _ => Err(None),
            };
            let ok = inverse.is_ok();
            self.inverse.insert(n, inverse);
            self.g.computation.push((n, dn, ok));
            ops.push(n);
        }
        self.recompute.insert(ver, term);
        cur.insert(t, ver);
    }

    /// The term of `e` with the handled variables replaced by their
    /// current versions and the others (read at `pos`) by opaque
    /// versions; `None` when `e` cannot be re-evaluated.
    fn term(
        &mut self,
        e: &Expr,
        cur: &HashMap<SymbolId, usize>,
        pos: usize,
        leaves: &mut Vec<(SymbolId, usize)>,
    ) -> Option<Term> {
        let mut free = true;
        e.walk(&mut |x| match &x.kind {
            ExprKind::Var(s) | ExprKind::ArrayRef { array: s, .. }
                if self.handled.contains_id(*s) || !self.inv.fixed(*s) =>
            {
                free = false;
            }
            ExprKind::FunctionCall { .. } | ExprKind::Apply { .. } | ExprKind::Error => {
                free = false
            }
            _ => {}
        });
        if free {
            return Some(Term::Fixed(e.clone()));
        }
        Some(match &e.kind {
            ExprKind::Var(s) => {
                let v = match cur.get(s) {
                    Some(v) if self.handled.contains_id(*s) => *v,
                    _ => {
                        let sym = self.unit.symbol(*s);
                        if sym.ty.base != BaseType::Integer || sym.rank() > 0 {
                            return None;
                        }
                        self.version(*s, Origin::Opaque(pos), false)
                    }
                };
                leaves.push((*s, v));
                Term::Version(v)
            }
            ExprKind::Unary { op, operand } => {
                Term::Unary(*op, Box::new(self.term(operand, cur, pos, leaves)?))
            }
            ExprKind::Binary { op, lhs, rhs } => Term::Binary(
                *op,
                Box::new(self.term(lhs, cur, pos, leaves)?),
                Box::new(self.term(rhs, cur, pos, leaves)?),
            ),
            ExprKind::Intrinsic { name, args } => {
                let mut t = Vec::new();
                for a in args {
                    if a.keyword.is_some() {
                        return None;
                    }
                    t.push(self.term(&a.value, cur, pos, leaves)?);
                }
                Term::Intrinsic(name.clone(), t)
            }
            ExprKind::ArrayRef { array, subs } if self.inv.fixed(*array) => {
                let mut t = Vec::new();
                for s in subs {
                    match s {
                        Subscript::Index(i) => t.push(self.term(i, cur, pos, leaves)?),
                        Subscript::Range { .. } => return None,
                    }
                }
                Term::Element(*array, t)
            }
            _ => return None,
        })
    }
}

/// The variables the reverse sweep of statement `id` (and of the
/// statements nested in it) reads, among `handled`.
fn demand_vars(unit: &Unit, tbr: &Tbr, id: StmtId, handled: &BitSet) -> BitSet {
    let mut d = BitSet::default();
    for s in subtree(unit, &[id]) {
        if let Some(r) = tbr.req.get(s) {
            d.union_with(r);
        }
        let st = unit.stmt(s);
        if let StmtKind::Assign { lhs, .. } = &st.kind {
            if tbr.records.iter().any(|r| r.stmt == s) {
                index_vars(unit, lhs, &mut d);
            }
        }
        match &st.kind {
            StmtKind::Call { args, .. } => {
                for a in args {
                    vars(unit, &a.value, &mut d);
                }
            }
            _ => {
                for e in st.kind.exprs() {
                    e.walk(&mut |x| {
                        if let ExprKind::FunctionCall { args, .. } = &x.kind {
                            for a in args {
                                vars(unit, &a.value, &mut d);
                            }
                        }
                    });
                }
            }
        }
    }
    let mut out = BitSet::default();
    for v in d.iter() {
        if handled.contains(v) {
            out.insert(v);
        }
    }
    out
}
