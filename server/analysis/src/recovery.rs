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
//! The game (§4): `sat` propagates tokens forward along flow edges and
//! backward from a sufficient (unconditional) use; `tg` then prefers an
//! inversion, then a forward recomputation, then storage of the node the
//! heuristic `H` picks: the node whose trigger set — what storing it makes
//! known by recomputation and saturation alone — is largest. `H` looks
//! first at the operands of non-invertible operations (the values §5.3
//! says must be stored "because of the integer division"), then at every
//! node. Analysis only: the adjoint generator turns a plan into code.

use crate::bitset::BitSet;
use crate::dp::{all_writes, constant_int, index_vars, target, vars, writes};
use crate::tbr::Tbr;
use dfort_ir::dump::expr as print;
use dfort_ir::*;
use std::collections::HashMap;

/// An expression over versions: how a recovered value is computed.
#[derive(Clone, Debug)]
pub enum Term {
    Version(usize),
    /// A subexpression with no handled variable (constants, loop
    /// invariants, the loop's own index).
    Fixed(Expr),
    Unary(UnaryOp, Box<Term>),
    Binary(BinaryOp, Box<Term>, Box<Term>),
    Intrinsic(String, Vec<Term>),
    Element(SymbolId, Vec<Term>),
}

impl Term {
    /// Source text, with `name` printing each version.
    pub fn render(&self, unit: &Unit, name: &dyn Fn(usize) -> String) -> String {
        match self {
            Term::Version(v) => name(*v),
            Term::Fixed(e) => print(unit, e),
            Term::Unary(op, a) => {
                let s = match op {
                    UnaryOp::Neg => "-",
                    UnaryOp::Plus => "+",
                    UnaryOp::Not => ".not. ",
                };
                format!("{s}{}", a.operand(unit, name, 3, false))
            }
            Term::Binary(op, a, b) => {
                let p = precedence(*op);
                format!(
                    "{} {} {}",
                    a.operand(unit, name, p, false),
                    op.as_str(),
                    b.operand(unit, name, p, true)
                )
            }
            Term::Intrinsic(f, args) => {
                let a: Vec<String> = args.iter().map(|t| t.render(unit, name)).collect();
                format!("{f}({})", a.join(", "))
            }
            Term::Element(s, args) => {
                let a: Vec<String> = args.iter().map(|t| t.render(unit, name)).collect();
                format!("{}({})", unit.symbol(*s).name, a.join(", "))
            }
        }
    }

    /// An operand of an operator of precedence `outer`, parenthesised
    /// when it binds less tightly (or equally, on the right of `-` and
    /// `/`).
    fn operand(
        &self,
        unit: &Unit,
        name: &dyn Fn(usize) -> String,
        outer: u8,
        right: bool,
    ) -> String {
        let s = self.render(unit, name);
        let inner = match self {
            Term::Binary(op, ..) => precedence(*op),
            Term::Unary(..) => 1,
            Term::Fixed(e) => match &e.kind {
                ExprKind::Binary { op, .. } => precedence(*op),
                ExprKind::Unary { .. } => 1,
                _ => 9,
            },
            _ => 9,
        };
        if inner < outer || (right && inner == outer && outer < 3) {
            format!("({s})")
        } else {
            s
        }
    }

    /// Calls `f` on this term and every sub-term, pre-order.
    fn each<'a>(&'a self, f: &mut impl FnMut(&'a Term)) {
        f(self);
        match self {
            Term::Version(_) | Term::Fixed(_) => {}
            Term::Unary(_, a) => a.each(f),
            Term::Binary(_, a, b) => {
                a.each(f);
                b.each(f);
            }
            Term::Intrinsic(_, args) | Term::Element(_, args) => {
                for a in args {
                    a.each(f);
                }
            }
        }
    }

    /// The versions the term reads.
    pub fn versions(&self, out: &mut Vec<usize>) {
        self.each(&mut |t| {
            if let Term::Version(v) = t {
                out.push(*v);
            }
        });
    }

    /// The variables of the `Fixed` parts (loop invariants the reverse
    /// sweep reads).
    fn fixed_vars(&self, unit: &Unit, out: &mut BitSet) {
        self.each(&mut |t| {
            if let Term::Fixed(e) = t {
                vars(unit, e, out);
            }
        });
    }
}

/// Fortran binding strength of a binary operator (higher binds tighter).
fn precedence(op: BinaryOp) -> u8 {
    match op {
        BinaryOp::Add | BinaryOp::Sub => 1,
        BinaryOp::Mul | BinaryOp::Div => 2,
        BinaryOp::Pow => 3,
        _ => 0,
    }
}

/// Why a value cannot be recovered by inversion.
#[derive(Clone, Debug, PartialEq)]
pub struct Blocker {
    /// "integer division", "`max`", "a product of two variables", ...
    pub what: String,
    pub span: Span,
}

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

/// A GA node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NodeKind {
    /// A version (its definition; start versions are the inputs VI).
    Def,
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
    Known(usize),
    Saturated(usize),
    Inverted(usize),
    Recomputed(usize),
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

/// An address or control variable the game leaves to TBR's recording.
#[derive(Clone, Debug)]
pub struct Ambiguous {
    pub var: SymbolId,
    /// "it is assigned inside a branch", ...
    pub reason: String,
    pub span: Span,
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
        let Some(st) = unit.stmts.get(id.0 as usize) else {
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

/// An integer scalar variable of the unit's own (local or dummy).
pub(crate) fn address_candidate(unit: &Unit, s: SymbolId) -> bool {
    let sym = unit.symbol(s);
    sym.ty.base == BaseType::Integer
        && sym.rank() == 0
        && !sym.attrs.parameter
        && matches!(sym.storage, Storage::Local | Storage::Dummy(_))
}

/// Why a variable written somewhere in a statement list is not handled,
/// or `None` when every write is a top-level assignment.
fn handled_vars(program: &Program, unit: &Unit, lp: StmtId) -> (BitSet, Vec<Ambiguous>) {
    let body = loop_body(unit, lp);
    let mut top = BitSet::default();
    let mut bad: HashMap<SymbolId, Ambiguous> = HashMap::new();
    for &id in body {
        let st = unit.stmt(id);
        if let StmtKind::Assign { lhs, .. } = &st.kind {
            if let ExprKind::Var(v) = lhs.kind {
                if address_candidate(unit, v) {
                    top.insert(v.0 as usize);
                }
            }
        }
    }
    let tops: Vec<StmtId> = body.to_vec();
    for id in subtree(unit, body) {
        let st = unit.stmt(id);
        let top_level = tops.contains(&id);
        let mut note = |v: SymbolId, reason: String| {
            if address_candidate(unit, v) {
                bad.entry(v).or_insert(Ambiguous {
                    var: v,
                    reason,
                    span: st.span,
                });
            }
        };
        match &st.kind {
            StmtKind::Assign { lhs, .. } if !top_level => {
                if let Some((v, _)) = target(lhs) {
                    note(v, "it is assigned inside a branch or a nested loop".into());
                }
            }
            StmtKind::Do {
                control: DoControl::Counted { var, .. },
                ..
            } => note(*var, "it is the index of a nested loop".into()),
            StmtKind::Call { .. } => {
                for (v, _) in writes(program, unit, st) {
                    note(v, "a call may modify it".into());
                }
            }
            StmtKind::Io {
                kind: IoKind::Read, ..
            } => {
                for (v, _) in writes(program, unit, st) {
                    note(v, "a READ statement sets it".into());
                }
            }
            _ => {}
        }
        for e in st.kind.exprs() {
            e.walk(&mut |x| {
                if let ExprKind::FunctionCall { args, .. } = &x.kind {
                    for a in args {
                        if let Some((v, _)) = target(&a.value) {
                            note(v, "a function reference may modify it".into());
                        }
                    }
                }
            });
        }
    }
    for v in bad.keys() {
        top.remove(v.0 as usize);
    }
    if let Some(i) = own_index(unit, lp) {
        top.remove(i.0 as usize);
    }
    let mut amb: Vec<Ambiguous> = bad.into_values().collect();
    amb.sort_by_key(|a| (a.span.range.start, a.var));
    (top, amb)
}

/// Per statement (by `StmtId`): the variables whose recovery the plans of
/// the loops around it take over from TBR's recording.
pub fn handled(program: &Program, unit: &Unit) -> Vec<BitSet> {
    let mut out = vec![BitSet::default(); unit.stmts.len()];
    for lp in planned_loops(unit) {
        let (h, _) = handled_vars(program, unit, lp);
        if h.is_empty() {
            continue;
        }
        for id in subtree(unit, loop_body(unit, lp)) {
            out[id.0 as usize].union_with(&h);
        }
    }
    out
}

/// Whether a non-handled variable keeps its value through the body.
struct Invariance<'a> {
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
        let i = s.0 as usize;
        if sym.is_global() && self.body_calls {
            return false;
        }
        if sym.rank() > 0 {
            // An array must not change anywhere: it is not saved.
            return !self.written_anywhere.contains(i);
        }
        !self.written_in_body.contains(i)
    }
}

fn written(program: &Program, unit: &Unit, ids: &[StmtId], out: &mut BitSet) -> bool {
    let mut calls = false;
    for id in subtree(unit, ids) {
        let st = unit.stmt(id);
        for (v, _) in all_writes(program, unit, st) {
            out.insert(v.0 as usize);
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
    /// Per version: its definition node.
    def_node: Vec<usize>,
    /// Per version defined by an assignment: its operand use nodes, and
    /// how to recompute it (None: not recomputable).
    operands: HashMap<usize, Vec<usize>>,
    recompute: HashMap<usize, Option<Term>>,
    /// Per operand node: the inverse term, or why there is none.
    inverse: HashMap<usize, Result<Term, Option<Blocker>>>,
}

impl Builder<'_> {
    fn version(&mut self, var: SymbolId, origin: Origin) -> usize {
        let v = self.versions.len();
        self.versions.push(Version {
            var,
            origin,
            how: How::Unneeded,
        });
        let pos = match self.versions[v].origin {
            Origin::Def(p) | Origin::Opaque(p) => Some(p),
            Origin::Start => None,
        };
        self.def_node.push(self.g.nodes.len());
        self.g.nodes.push(Node {
            kind: NodeKind::Def,
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
                if self.handled.contains(s.0 as usize) || !self.inv.fixed(*s) =>
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
                    Some(v) if self.handled.contains(s.0 as usize) => *v,
                    _ => {
                        let sym = self.unit.symbol(*s);
                        if sym.ty.base != BaseType::Integer || sym.rank() > 0 {
                            return None;
                        }
                        self.version(*s, Origin::Opaque(pos))
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

/// The inverse of `e` with respect to the single occurrence of version
/// `target`, given the value `known` of `e`; or the operation that
/// prevents it.
pub(crate) fn invert(
    unit: &Unit,
    e: &Expr,
    t: &Term,
    target: usize,
    known: Term,
) -> Result<Term, Option<Blocker>> {
    let blocked = |what: &str| {
        Err(Some(Blocker {
            what: what.to_string(),
            span: e.span,
        }))
    };
    let contains = |t: &Term| {
        let mut v = Vec::new();
        t.versions(&mut v);
        v.contains(&target)
    };
    match (&e.kind, t) {
        (_, Term::Version(v)) if *v == target => Ok(known),
        (ExprKind::Unary { op, operand }, Term::Unary(_, a)) => match op {
            UnaryOp::Neg => invert(
                unit,
                operand,
                a,
                target,
                Term::Unary(UnaryOp::Neg, Box::new(known)),
            ),
            UnaryOp::Plus => invert(unit, operand, a, target, known),
            UnaryOp::Not => blocked("a logical negation"),
        },
        (ExprKind::Binary { op, lhs, rhs }, Term::Binary(_, a, b)) => {
            let in_a = contains(a);
            let (sub, st, other) = if in_a { (lhs, a, b) } else { (rhs, b, a) };
            let o = (**other).clone();
            match op {
                BinaryOp::Add => invert(
                    unit,
                    sub,
                    st,
                    target,
                    Term::Binary(BinaryOp::Sub, Box::new(known), Box::new(o)),
                ),
                BinaryOp::Sub if in_a => invert(
                    unit,
                    sub,
                    st,
                    target,
                    Term::Binary(BinaryOp::Add, Box::new(known), Box::new(o)),
                ),
                BinaryOp::Sub => invert(
                    unit,
                    sub,
                    st,
                    target,
                    Term::Binary(BinaryOp::Sub, Box::new(o), Box::new(known)),
                ),
                BinaryOp::Mul => {
                    let c = if in_a { rhs } else { lhs };
                    match constant_int(unit, c, 0) {
                        Some(k) if k != 0 => invert(
                            unit,
                            sub,
                            st,
                            target,
                            Term::Binary(BinaryOp::Div, Box::new(known), Box::new(o)),
                        ),
                        _ => blocked("a product of two variables"),
                    }
                }
                BinaryOp::Div => blocked("integer division"),
                BinaryOp::Pow => blocked("a power"),
                _ => blocked("a comparison or logical operation"),
            }
        }
        (ExprKind::Intrinsic { name, .. }, _) => match name.as_str() {
            "mod" | "modulo" => blocked("`mod`"),
            n => blocked(&format!("`{n}`")),
        },
        (ExprKind::ArrayRef { array, .. }, _) => blocked(&format!(
            "an indirection through `{}`",
            unit.symbol(*array).name
        )),
        _ => Err(None),
    }
}

/// The variables the reverse sweep of statement `id` (and of the
/// statements nested in it) reads, among `handled`.
fn demand_vars(unit: &Unit, tbr: &Tbr, id: StmtId, handled: &BitSet) -> BitSet {
    let mut d = BitSet::default();
    for s in subtree(unit, &[id]) {
        if let Some(r) = tbr.req.get(s.0 as usize) {
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

/// The plans of every DO loop of a structured unit, given its TBR results
/// (computed with the plans' variables taken over, see [`handled`]).
pub fn plan_unit(program: &Program, unit: &Unit, tbr: &Tbr) -> Vec<Plan> {
    let mut written_anywhere = BitSet::default();
    written(program, unit, &unit.body, &mut written_anywhere);
    let counted = crate::counted_while::in_unit(program, unit);
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
    let body: Vec<StmtId> = loop_body(unit, lp).to_vec();
    let (handled, ambiguous) = handled_vars(program, unit, lp);
    let mut written_in_body = BitSet::default();
    let body_calls = written(program, unit, &body, &mut written_in_body);
    let inv = Invariance {
        unit,
        written_in_body,
        written_anywhere: written_anywhere.clone(),
        body_calls,
        own: own_index(unit, lp),
    };
    let mut b = Builder {
        unit,
        handled: &handled,
        inv: &inv,
        versions: Vec::new(),
        g: Graph::default(),
        def_node: Vec::new(),
        operands: HashMap::new(),
        recompute: HashMap::new(),
        inverse: HashMap::new(),
    };
    // Versions in body order; the start versions first.
    let mut cur: HashMap<SymbolId, usize> = HashMap::new();
    for v in handled.iter() {
        let s = SymbolId(v as u32);
        let ver = b.version(s, Origin::Start);
        cur.insert(s, ver);
    }
    let starts_of: HashMap<SymbolId, usize> = cur.clone();
    let mut demands: Vec<Vec<usize>> = Vec::new();
    let mut ra_nodes: Vec<usize> = Vec::new();
    for (pos, &id) in body.iter().enumerate() {
        let st = unit.stmt(id);
        // What the reverse sweep of this statement reads.
        let d = demand_vars(unit, tbr, id, &handled);
        let compound = !st.kind.blocks().is_empty();
        let mut here = Vec::new();
        for v in d.iter() {
            let Some(&ver) = cur.get(&SymbolId(v as u32)) else {
                continue;
            };
            here.push(ver);
            ra_nodes.push(b.use_node(
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
                if handled.contains(t.0 as usize) {
                    let mut leaves = Vec::new();
                    let term = b.term(rhs, &cur, pos, &mut leaves);
                    let ver = b.version(t, Origin::Def(pos));
                    let dn = b.def_node[ver];
                    let mut ops = Vec::new();
                    let mut counts: HashMap<usize, usize> = HashMap::new();
                    for (_, v) in &leaves {
                        *counts.entry(*v).or_default() += 1;
                    }
                    for (_, v) in &leaves {
                        if ops.iter().any(|&o: &usize| b.g.nodes[o].version == *v) {
                            continue;
                        }
                        let n = b.use_node(*v, NodeKind::Operand, Some(pos));
                        let inverse = match (&term, counts[v]) {
                            (Some(t), 1) => invert(unit, rhs, t, *v, Term::Version(ver)),
                            (Some(_), _) => Err(None),
                            (None, _) => Err(None),
                        };
                        let ok = inverse.is_ok();
                        b.inverse.insert(n, inverse);
                        b.g.computation.push((n, dn, ok));
                        ops.push(n);
                    }
                    b.operands.insert(ver, ops);
                    b.recompute.insert(ver, term);
                    cur.insert(t, ver);
                }
            }
        }
    }
    let ends: HashMap<SymbolId, usize> = cur.clone();
    let Builder {
        mut versions,
        mut g,
        def_node,
        operands,
        recompute,
        inverse,
        ..
    } = b;
    // GA: the backward closure of RA; a start version in it adds the
    // variable's out node.
    let mut in_ga = vec![false; g.nodes.len()];
    let mut out_nodes: HashMap<SymbolId, usize> = HashMap::new();
    let mut work: Vec<usize> = ra_nodes.clone();
    let flow_pred: HashMap<usize, usize> = g.flow.iter().map(|&(d, u)| (u, d)).collect();
    while let Some(n) = work.pop() {
        if n < in_ga.len() && in_ga[n] {
            continue;
        }
        if n >= in_ga.len() {
            in_ga.resize(n + 1, false);
        }
        in_ga[n] = true;
        let node = g.nodes[n].clone();
        match node.kind {
            NodeKind::Def => {
                let ver = node.version;
                if let Some(ops) = operands.get(&ver) {
                    work.extend(ops.iter().copied());
                }
                if versions[ver].origin == Origin::Start {
                    let var = versions[ver].var;
                    let last = ends.get(&var).copied();
                    if let (std::collections::hash_map::Entry::Vacant(e), Some(last)) =
                        (out_nodes.entry(var), last)
                    {
                        let on = g.nodes.len();
                        g.nodes.push(Node {
                            kind: NodeKind::Out,
                            version: last,
                            pos: None,
                        });
                        g.flow.push((def_node[last], on));
                        e.insert(on);
                        work.push(on);
                    }
                }
            }
            _ => {
                let d = match node.kind {
                    NodeKind::Out => def_node.get(node.version).copied(),
                    _ => flow_pred.get(&n).copied(),
                };
                work.extend(d);
            }
        }
    }
    in_ga.resize(g.nodes.len(), false);
    // Keep only GA's nodes and edges.
    let keep: Vec<usize> = (0..g.nodes.len()).filter(|&n| in_ga[n]).collect();
    let mut token = vec![false; g.nodes.len()];
    let mut steps = Vec::new();
    for on in out_nodes.values() {
        token[*on] = true;
        steps.push(Step::Known(*on));
        versions[g.nodes[*on].version].how = How::End;
    }
    steps.sort_by_key(|s| match s {
        Step::Known(n) => *n,
        _ => 0,
    });
    let unconditional =
        |g: &Graph, u: usize| !matches!(g.nodes[u].kind, NodeKind::Ra { conditional: true });
    // Saturation; returns the nodes it tokened.
    let sat = |g: &Graph, token: &mut Vec<bool>| -> Vec<usize> {
        let mut added = Vec::new();
        loop {
            let mut more = Vec::new();
            for &(d, u) in &g.flow {
                if !in_ga[d] || !in_ga[u] {
                    continue;
                }
                if token[d] && !token[u] {
                    more.push(u);
                }
                if token[u] && !token[d] && unconditional(g, u) {
                    more.push(d);
                }
            }
            if more.is_empty() {
                return added;
            }
            for n in more {
                if !token[n] {
                    token[n] = true;
                    added.push(n);
                }
            }
        }
    };
    // Defined versions whose operands are all tokened: forward
    // recomputation candidates.
    let defined: Vec<bool> = versions
        .iter()
        .map(|v| matches!(v.origin, Origin::Def(_)))
        .collect();
    let recomputable = |g: &Graph, token: &[bool], n: usize| -> bool {
        let node = &g.nodes[n];
        node.kind == NodeKind::Def
            && !token[n]
            && defined[node.version]
            && matches!(recompute.get(&node.version), Some(Some(_)))
            && operands
                .get(&node.version)
                .is_some_and(|ops| ops.iter().all(|&o| token[o]))
    };
    loop {
        for n in sat(&g, &mut token) {
            steps.push(Step::Saturated(n));
        }
        if keep.iter().all(|&n| token[n]) {
            break;
        }
        // Inversion.
        let inversion = g.computation.iter().find(|&&(o, d, ok)| {
            ok && in_ga[o]
                && !token[o]
                && token[d]
                && operands
                    .get(&g.nodes[d].version)
                    .is_some_and(|ops| ops.iter().all(|&u| u == o || token[u]))
        });
        if let Some(&(o, d, _)) = inversion {
            token[o] = true;
            steps.push(Step::Inverted(o));
            let ver = g.nodes[o].version;
            if matches!(versions[ver].how, How::Unneeded) {
                let from = versions[g.nodes[d].version].origin.clone();
                if let (Origin::Def(p), Some(Ok(t))) = (from, inverse.get(&o)) {
                    versions[ver].how = How::Inverted {
                        from: p,
                        term: t.clone(),
                    };
                }
            }
            continue;
        }
        // Forward recomputation.
        if let Some(&n) = keep.iter().find(|&&n| recomputable(&g, &token, n)) {
            token[n] = true;
            steps.push(Step::Recomputed(n));
            let ver = g.nodes[n].version;
            if let Some(Some(t)) = recompute.get(&ver) {
                versions[ver].how = How::Recomputed { term: t.clone() };
            }
            continue;
        }
        // Storage of the node H picks.
        let open: Vec<usize> = keep.iter().copied().filter(|&n| !token[n]).collect();
        let blocked: Vec<usize> = open
            .iter()
            .copied()
            .filter(|&n| g.computation.iter().any(|&(o, _, ok)| o == n && !ok))
            .collect();
        let candidates = if blocked.is_empty() { &open } else { &blocked };
        let trigger = |v: usize| -> usize {
            let mut t = token.clone();
            t[v] = true;
            let mut count = 1;
            loop {
                count += sat(&g, &mut t).len();
                let next: Vec<usize> = keep
                    .iter()
                    .copied()
                    .filter(|&n| recomputable(&g, &t, n))
                    .collect();
                if next.is_empty() {
                    return count;
                }
                for n in next {
                    t[n] = true;
                    count += 1;
                }
            }
        };
        // Ties go to the node latest in the body (reverse topological order).
        let Some(&pick) = candidates.iter().max_by_key(|&&n| trigger(n)) else {
            break;
        };
        token[pick] = true;
        steps.push(Step::Stored(pick));
        let ver = g.nodes[pick].version;
        let reason = g
            .computation
            .iter()
            .filter(|&&(o, _, ok)| o == pick && !ok)
            .find_map(|&(o, _, _)| inverse.get(&o).and_then(|r| r.clone().err().flatten()))
            .or_else(|| {
                // The first blocked operand among the version's uses.
                g.computation.iter().find_map(|&(o, _, ok)| {
                    (!ok && in_ga[o] && g.nodes[o].version == ver)
                        .then(|| inverse.get(&o).and_then(|r| r.clone().err().flatten()))
                        .flatten()
                })
            });
        versions[ver].how = How::Stored { reason };
    }
    // Versions the reverse sweep reads that nothing above marked (a
    // version tokened only by saturation from one that was).
    let mut starts: Vec<usize> = out_nodes.keys().map(|var| starts_of[var]).collect();
    starts.sort();
    // Loop-carried variables: their final values are saved after the
    // loop, but a counted WHILE loop's counter's is computed.
    let computed_at_exit = counter.filter(|v| out_nodes.contains_key(v));
    let mut saved_at_exit: Vec<SymbolId> = out_nodes
        .keys()
        .copied()
        .filter(|v| Some(*v) != computed_at_exit)
        .collect();
    // Loop invariants the recovery reads that something else may change.
    let mut fixed = BitSet::default();
    for v in &versions {
        match &v.how {
            How::Inverted { term, .. } | How::Recomputed { term } => {
                term.fixed_vars(unit, &mut fixed)
            }
            _ => {}
        }
    }
    for f in fixed.iter() {
        let s = SymbolId(f as u32);
        let sym = unit.symbol(s);
        if Some(s) != inv.own
            && sym.rank() == 0
            && !sym.attrs.parameter
            && written_anywhere.contains(f)
        {
            saved_at_exit.push(s);
        }
    }
    saved_at_exit.sort();
    saved_at_exit.dedup();
    let entry_req = tbr.in_req.get(lp.0 as usize).cloned().unwrap_or_default();
    let saved_at_entry: Vec<SymbolId> = handled
        .iter()
        .map(|v| SymbolId(v as u32))
        .filter(|s| entry_req.contains(s.0 as usize) && !out_nodes.contains_key(s))
        .collect();
    let mut stored: Vec<usize> = (0..versions.len())
        .filter(|&v| matches!(versions[v].how, How::Stored { .. }))
        .collect();
    stored.sort_by_key(|&v| (versions_pos(&versions[v]), v));
    // GA for display: drop the nodes outside it.
    let mut renum = vec![usize::MAX; g.nodes.len()];
    let mut graph = Graph::default();
    for (i, n) in g.nodes.iter().enumerate() {
        if in_ga[i] {
            renum[i] = graph.nodes.len();
            graph.nodes.push(n.clone());
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
    let steps = steps
        .into_iter()
        .map(|s| match s {
            Step::Known(n) => Step::Known(renum[n]),
            Step::Saturated(n) => Step::Saturated(renum[n]),
            Step::Inverted(n) => Step::Inverted(renum[n]),
            Step::Recomputed(n) => Step::Recomputed(renum[n]),
            Step::Stored(n) => Step::Stored(renum[n]),
        })
        .collect();
    Plan {
        stmt: lp,
        body,
        handled,
        versions,
        demands,
        starts,
        saved_at_exit,
        computed_at_exit,
        saved_at_entry,
        stored,
        graph,
        steps,
        ambiguous,
    }
}

fn versions_pos(v: &Version) -> usize {
    match v.origin {
        Origin::Start => 0,
        Origin::Def(p) | Origin::Opaque(p) => p + 1,
    }
}
