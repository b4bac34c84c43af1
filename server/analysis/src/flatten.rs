//! Flattening basic blocks into local computational graphs (paper 002,
//! Utke: Algorithm 2 with the ud/du-chains of §6, dependents by §6.2), the
//! graphs whose local Jacobians [`crate::elimination`] preaccumulates
//! (paper 004, "Elimination Methods").
//!
//! Contract: [`block_graphs`] reads a prepared unit's basic blocks and its
//! activity and returns, per block, the ordered sequence of unambiguous
//! graphs G_i of its runs of scalar assignments. A run is a maximal
//! sequence of assignments to a scalar or an array element whose
//! right-hand side is scalar arithmetic, elemental intrinsics with a
//! partial-derivative or extremum rule, and scalar or element references
//! (canonicalisations C1–C5: one vertex per operation); any other
//! statement (a call, I/O, an array assignment, a user function) ends
//! it. Vertices are the active values only: a reference not active
//! before its statement, a constant or an operation none of whose
//! operands is active is no vertex (its edges carry zero).
//!
//! Variables are identified by address (§4): a scalar by its symbol, an
//! element by its array and its subscripts, which are the same address
//! when they are the same affine form of the same values of their
//! integer variables (no write to one in between), provably different
//! when the forms differ by a constant only, and may be the same
//! otherwise; variables of different may-alias classes
//! ([`crate::aliases`]) never share an address, different members of
//! one class may. The ud-chain of a use lists the run's statements that
//! may have defined it, back to one that must have (or to the run's
//! start: defined before). A use whose chain holds more than one
//! definition, one of them in the current graph, is ambiguous: the graph
//! ends before its statement and a new one starts there (Algorithm 2's
//! split). A statement's value is a dependent of its graph when a later
//! graph of the run may use it (du-chain) or it may survive the run and
//! is active after it; a dependent that is not maximal, or is an
//! independent (`y = x`), or shares its vertex with another dependent
//! gets a vertex of its own behind a unit edge (§6.2). Vertices that
//! reach no dependent are dropped. Never panics on any unit.

use crate::activity::Activity;
use crate::elimination::Dag;
use dfort_ir::cfg::{NodeId, NodeKind};
use dfort_ir::dump::expr as print;
use dfort_ir::intrinsics::{self, Rule};
use dfort_ir::*;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// One unambiguous graph G_i.
#[derive(Clone, Debug)]
pub struct LocalGraph {
    /// The statements flattened into it, in order.
    pub stmts: Vec<StmtId>,
    pub dag: Dag,
    /// Per vertex: the variable it holds (`x`, `a(i)`: independents,
    /// dependents and the values statements assign) or the operation
    /// (`*`, `sin`) inside an expression.
    pub labels: Vec<String>,
    /// Why the graph ends where it does: the next statement's use whose
    /// definition is ambiguous (`None`: the run ends).
    pub split_at: Option<(StmtId, String)>,
    /// Per edge of `dag` (same order): what its label is.
    pub edge_labels: Vec<EdgeLabel>,
    /// Per independent: a reference to it (its address at the graph's
    /// start).
    pub independents: Vec<Expr>,
    /// Per dependent: the statement whose target holds it.
    pub dependents: Vec<StmtId>,
    /// Whether no two dependents may be the same address (different
    /// elements of one array under subscripts that may be equal), and no
    /// dependent may be the address a later statement of the graph
    /// assigns.
    pub dependents_distinct: bool,
}

/// The label of one edge `(i, j)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EdgeLabel {
    /// 1: a dependent behind a unit edge.
    Unit,
    /// `∂φ/∂c` summed over the children `c` of the operation `φ` (vertex
    /// `j`, at `path` in statement `stmt`'s right-hand side) whose value
    /// is vertex `i`. A path and the children count operands: the one of
    /// a unary operation, lhs 0 and rhs 1 of a binary one, an intrinsic's
    /// arguments in order.
    Partial {
        stmt: StmtId,
        path: Vec<u32>,
        children: Vec<u32>,
    },
}

/// Where a vertex of a graph being built comes from.
#[derive(Clone, Debug)]
enum Origin {
    Input(Expr),
    /// An operation at `path` in `stmt`'s right-hand side, with its
    /// operands: (child, vertex).
    Op {
        stmt: StmtId,
        path: Vec<u32>,
        operands: Vec<(u32, usize)>,
    },
}

/// The graphs of one basic block, in order.
#[derive(Clone, Debug)]
pub struct BlockGraphs {
    pub node: NodeId,
    pub graphs: Vec<LocalGraph>,
}

/// One subscript of an element's address.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Sub {
    /// Σ coefficient · (variable, its write count) + constant.
    Affine(BTreeMap<(SymbolId, u32), i64>, i64),
    /// Any other expression, with the write counts of its variables.
    Other(String, Vec<(SymbolId, u32)>),
}

/// An affine form: Σ coefficient · (variable, its write count), and
/// the constant.
type Affine = (BTreeMap<(SymbolId, u32), i64>, i64);

/// A variable's address in the run.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Addr {
    sym: SymbolId,
    /// `None`: a scalar.
    subs: Option<Vec<Sub>>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Rel {
    Same,
    Maybe,
    Distinct,
}

/// What a definition in the ud-chain is: a statement of the run, by its
/// position, or (`None`) a definition before the run.
type Chain = Vec<Option<usize>>;

/// Per unit: which may-alias class each symbol is in.
struct Classes(HashMap<SymbolId, usize>);

impl Classes {
    fn of(unit: &Unit) -> Classes {
        let mut m = HashMap::new();
        for (k, c) in crate::aliases::classes(unit).into_iter().enumerate() {
            for s in c {
                m.insert(s, k);
            }
        }
        Classes(m)
    }
    fn relation(&self, a: &Addr, b: &Addr) -> Rel {
        if a.sym != b.sym {
            let same_class = matches!(
                (self.0.get(&a.sym), self.0.get(&b.sym)),
                (Some(x), Some(y)) if x == y
            );
            return if same_class {
                Rel::Maybe
            } else {
                Rel::Distinct
            };
        }
        let (Some(x), Some(y)) = (&a.subs, &b.subs) else {
            return if a.subs.is_none() && b.subs.is_none() {
                Rel::Same
            } else {
                Rel::Maybe
            };
        };
        if x.len() != y.len() {
            return Rel::Maybe;
        }
        let mut rel = Rel::Same;
        for (s, t) in x.iter().zip(y) {
            match (s, t) {
                (Sub::Affine(a, c), Sub::Affine(b, d)) if a == b => {
                    if c != d {
                        return Rel::Distinct;
                    }
                }
                _ if s == t => {}
                _ => rel = Rel::Maybe,
            }
        }
        rel
    }
}

fn is_real(unit: &Unit, s: SymbolId) -> bool {
    let sym = unit.symbol(s);
    sym.ty.base == BaseType::Real && !sym.attrs.parameter && sym.storage != Storage::Procedure
}

/// Whether `e` is a scalar reference to a variable (a scalar or an
/// element), of any type.
fn scalar_ref(unit: &Unit, e: &Expr) -> Option<SymbolId> {
    match &e.kind {
        ExprKind::Var(s) if unit.symbol(*s).rank() == 0 => Some(*s),
        ExprKind::ArrayRef { array, subs }
            if subs.len() == unit.symbol(*array).rank()
                && subs.iter().all(|s| matches!(s, Subscript::Index(_))) =>
        {
            Some(*array)
        }
        _ => None,
    }
}

/// Whether the flattening reads `e`: scalar arithmetic on scalar
/// references, constants and elemental intrinsics with a rule.
fn readable(unit: &Unit, e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Int(_) | ExprKind::Real { .. } | ExprKind::Logical(_) => true,
        ExprKind::Var(_) | ExprKind::ArrayRef { .. } => {
            scalar_ref(unit, e).is_some_and(|s| {
                !matches!(
                    unit.symbol(s).ty.base,
                    BaseType::Complex | BaseType::Derived
                )
            }) && match &e.kind {
                ExprKind::ArrayRef { subs, .. } => subs.iter().all(|s| match s {
                    Subscript::Index(i) => readable(unit, i),
                    _ => false,
                }),
                _ => true,
            }
        }
        ExprKind::Unary { operand, .. } => readable(unit, operand),
        ExprKind::Binary { op, lhs, rhs } => {
            *op != BinaryOp::Concat && readable(unit, lhs) && readable(unit, rhs)
        }
        ExprKind::Intrinsic { name, args } => {
            let rule_ok = intrinsics::lookup(name).is_some_and(|i| {
                i.elemental
                    && match i.rule {
                        Rule::Partials { d, .. } => args.len() <= d.len() + 1,
                        Rule::Extremum { .. } | Rule::None => true,
                        _ => false,
                    }
            });
            rule_ok
                && args
                    .iter()
                    .all(|a| a.keyword.is_none() && readable(unit, &a.value))
        }
        _ => false,
    }
}

/// The statement's target and value when the flattening reads it.
fn assignment<'s>(unit: &Unit, st: &'s Stmt) -> Option<(&'s Expr, &'s Expr)> {
    let StmtKind::Assign { lhs, rhs } = &st.kind else {
        return None;
    };
    let target = scalar_ref(unit, lhs)?;
    // A complex or derived-type value is no vertex: a whole copy of a
    // derived value (`tq = td`) ends the run like any other statement.
    let base = unit.symbol(target).ty.base;
    if matches!(base, BaseType::Complex | BaseType::Derived) || !readable(unit, lhs) {
        return None;
    }
    readable(unit, rhs).then_some((lhs, rhs))
}

/// The graph being built.
#[derive(Default)]
struct Building {
    /// Position in the run of its first statement.
    start: usize,
    stmts: Vec<StmtId>,
    labels: Vec<String>,
    input: Vec<bool>,
    origins: Vec<Origin>,
    edges: BTreeSet<(usize, usize)>,
    /// P_var: the value each address holds, as defined in this graph.
    tracked: Vec<(Addr, Option<usize>)>,
    /// The independents, by address and ud-chain.
    inputs: HashMap<(Addr, Chain), usize>,
    /// Per statement of the graph (run position): the vertex of the
    /// value it assigns, the variable's text, the statement and the
    /// target's address.
    values: Vec<(usize, Option<usize>, SymbolId, String, StmtId, Addr)>,
    split_at: Option<(StmtId, String)>,
    /// The operations named by the variable they are assigned to.
    named: BTreeSet<usize>,
}

/// How a leaf resolves.
enum Leaf {
    Passive,
    Tracked(Addr),
    Input(Addr, Chain, Expr),
}

struct Run<'a> {
    unit: &'a Unit,
    act: &'a Activity,
    classes: &'a Classes,
    /// Writes so far per variable (in the run).
    writes: HashMap<SymbolId, u32>,
    /// Each statement's target address, by run position.
    defs: Vec<Addr>,
    /// The uses of later graphs: (run position of the definition used).
    used_later: BTreeSet<usize>,
}

impl<'a> Run<'a> {
    fn count(&self, s: SymbolId) -> u32 {
        self.writes.get(&s).copied().unwrap_or(0)
    }

    fn affine(&self, e: &Expr) -> Option<Affine> {
        Some(match &e.kind {
            ExprKind::Int(k) => (BTreeMap::new(), *k),
            ExprKind::Var(s) if self.unit.symbol(*s).ty.base == BaseType::Integer => {
                (BTreeMap::from([((*s, self.count(*s)), 1)]), 0)
            }
            ExprKind::Unary {
                op: UnaryOp::Plus,
                operand,
            } => self.affine(operand)?,
            ExprKind::Unary {
                op: UnaryOp::Neg,
                operand,
            } => {
                let (t, c) = self.affine(operand)?;
                (t.into_iter().map(|(k, v)| (k, -v)).collect(), -c)
            }
            ExprKind::Binary {
                op: op @ (BinaryOp::Add | BinaryOp::Sub),
                lhs,
                rhs,
            } => {
                let (mut t, c) = self.affine(lhs)?;
                let (u, d) = self.affine(rhs)?;
                let sign = if *op == BinaryOp::Add { 1 } else { -1 };
                for (k, v) in u {
                    *t.entry(k).or_insert(0) += sign * v;
                }
                t.retain(|_, v| *v != 0);
                (t, c.checked_add(sign * d)?)
            }
            ExprKind::Binary {
                op: BinaryOp::Mul,
                lhs,
                rhs,
            } => {
                let (a, b) = (self.affine(lhs)?, self.affine(rhs)?);
                let ((t, c), k) = match (a.0.is_empty(), b.0.is_empty()) {
                    (true, _) => (b, a.1),
                    (_, true) => (a, b.1),
                    _ => return None,
                };
                let mut t: BTreeMap<_, _> = t.into_iter().map(|(x, v)| (x, v * k)).collect();
                t.retain(|_, v| *v != 0);
                (t, c.checked_mul(k)?)
            }
            _ => return None,
        })
    }

    fn symbols_of(&self, e: &Expr, out: &mut Vec<(SymbolId, u32)>) {
        match &e.kind {
            ExprKind::Var(s) => out.push((*s, self.count(*s))),
            ExprKind::ArrayRef { array, subs } => {
                out.push((*array, self.count(*array)));
                for s in subs {
                    if let Subscript::Index(i) = s {
                        self.symbols_of(i, out);
                    }
                }
            }
            ExprKind::Unary { operand, .. } => self.symbols_of(operand, out),
            ExprKind::Binary { lhs, rhs, .. } => {
                self.symbols_of(lhs, out);
                self.symbols_of(rhs, out);
            }
            ExprKind::Intrinsic { args, .. } => {
                for a in args {
                    self.symbols_of(&a.value, out);
                }
            }
            _ => {}
        }
    }

    fn addr(&self, e: &Expr) -> Option<Addr> {
        let sym = scalar_ref(self.unit, e)?;
        let subs = match &e.kind {
            ExprKind::ArrayRef { subs, .. } => Some(
                subs.iter()
                    .filter_map(|s| match s {
                        Subscript::Index(i) => Some(match self.affine(i) {
                            Some((t, c)) => Sub::Affine(t, c),
                            None => {
                                let mut v = Vec::new();
                                self.symbols_of(i, &mut v);
                                Sub::Other(print(self.unit, i), v)
                            }
                        }),
                        _ => None,
                    })
                    .collect(),
            ),
            _ => None,
        };
        Some(Addr { sym, subs })
    }

    /// The ud-chain of a use of `a` in the statement at run position `k`.
    fn chain(&self, k: usize, a: &Addr) -> Chain {
        let mut d = Vec::new();
        for j in (0..k).rev() {
            match self.classes.relation(&self.defs[j], a) {
                Rel::Same => {
                    d.push(Some(j));
                    return d;
                }
                Rel::Maybe => d.push(Some(j)),
                Rel::Distinct => {}
            }
        }
        d.push(None);
        d
    }

    /// Resolves the leaves of `e` (in the statement `st` at run position
    /// `k`); `Err` names an ambiguous use.
    fn leaves(
        &self,
        g: &Building,
        st: StmtId,
        k: usize,
        e: &Expr,
        out: &mut Vec<Leaf>,
    ) -> Result<(), String> {
        match &e.kind {
            ExprKind::Var(_) | ExprKind::ArrayRef { .. } => {
                let Some(sym) = scalar_ref(self.unit, e) else {
                    return Ok(());
                };
                if !is_real(self.unit, sym) || !self.act.active_before(st, sym) {
                    out.push(Leaf::Passive);
                    return Ok(());
                }
                let Some(a) = self.addr(e) else {
                    out.push(Leaf::Passive);
                    return Ok(());
                };
                let d = self.chain(k, &a);
                let inside = d.iter().any(|j| j.is_some_and(|j| j >= g.start));
                if d.len() > 1 && inside {
                    return Err(print(self.unit, e));
                }
                out.push(if inside {
                    Leaf::Tracked(a)
                } else {
                    Leaf::Input(a, d, e.clone())
                });
                Ok(())
            }
            ExprKind::Unary { operand, .. } => self.leaves(g, st, k, operand, out),
            ExprKind::Binary { lhs, rhs, .. } => {
                self.leaves(g, st, k, lhs, out)?;
                self.leaves(g, st, k, rhs, out)
            }
            ExprKind::Intrinsic { args, .. } => {
                for a in args {
                    self.leaves(g, st, k, &a.value, out)?;
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// [`Run::build`] of the child `k` of the expression at `path`.
    fn child(
        &self,
        g: &mut Building,
        st: StmtId,
        path: &mut Vec<u32>,
        k: u32,
        x: &Expr,
        leaves: &mut std::vec::IntoIter<Leaf>,
    ) -> Option<usize> {
        path.push(k);
        let v = self.build(g, st, path, x, leaves);
        path.pop();
        v
    }

    /// Adds the vertices of `e` (at `path` in statement `st`'s
    /// right-hand side) to `g`, reading its resolved leaves in order; the
    /// vertex of its value (`None`: no active value).
    fn build(
        &self,
        g: &mut Building,
        st: StmtId,
        path: &mut Vec<u32>,
        e: &Expr,
        leaves: &mut std::vec::IntoIter<Leaf>,
    ) -> Option<usize> {
        let op = |g: &mut Building, path: &[u32], label: &str, kids: Vec<(u32, Option<usize>)>| {
            let operands: Vec<(u32, usize)> = kids
                .into_iter()
                .filter_map(|(c, v)| Some((c, v?)))
                .collect();
            if operands.is_empty() {
                return None;
            }
            let v = g.labels.len();
            g.labels.push(label.to_string());
            g.input.push(false);
            for &(_, k) in &operands {
                g.edges.insert((k, v));
            }
            g.origins.push(Origin::Op {
                stmt: st,
                path: path.to_vec(),
                operands,
            });
            Some(v)
        };
        match &e.kind {
            ExprKind::Var(_) | ExprKind::ArrayRef { .. } => {
                scalar_ref(self.unit, e)?;
                match leaves.next()? {
                    Leaf::Passive => None,
                    Leaf::Tracked(a) => g.tracked.iter().rev().find(|(b, _)| *b == a)?.1,
                    Leaf::Input(a, d, reference) => {
                        let n = g.labels.len();
                        let v = *g.inputs.entry((a, d)).or_insert(n);
                        if v == n {
                            g.labels.push(print(self.unit, &reference));
                            g.input.push(true);
                            g.origins.push(Origin::Input(reference));
                        }
                        Some(v)
                    }
                }
            }
            ExprKind::Unary {
                op: UnaryOp::Neg,
                operand,
            } => {
                let x = self.child(g, st, path, 0, operand, leaves);
                let here = path.clone();
                op(g, &here, "-", vec![(0, x)])
            }
            ExprKind::Unary { operand, .. } => self.child(g, st, path, 0, operand, leaves),
            ExprKind::Binary { op: o, lhs, rhs } => {
                let a = self.child(g, st, path, 0, lhs, leaves);
                let b = self.child(g, st, path, 1, rhs, leaves);
                let here = path.clone();
                match o {
                    BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Div => {
                        op(g, &here, o.as_str(), vec![(0, a), (1, b)])
                    }
                    BinaryOp::Pow if matches!(rhs.kind, ExprKind::Int(_)) => {
                        op(g, &here, "**", vec![(0, a)])
                    }
                    BinaryOp::Pow => op(g, &here, "**", vec![(0, a), (1, b)]),
                    _ => None,
                }
            }
            ExprKind::Intrinsic { name, args } => {
                let vals: Vec<(u32, Option<usize>)> = args
                    .iter()
                    .enumerate()
                    .map(|(k, a)| {
                        (
                            k as u32,
                            self.child(g, st, path, k as u32, &a.value, leaves),
                        )
                    })
                    .collect();
                let here = path.clone();
                match intrinsics::lookup(name).map(|i| i.rule) {
                    Some(Rule::Partials { d, .. }) => {
                        let kids = vals
                            .into_iter()
                            .zip(d)
                            .map(|((c, v), p)| (c, v.filter(|_| !p.is_empty())))
                            .collect();
                        op(g, &here, name, kids)
                    }
                    Some(Rule::Extremum { .. }) => op(g, &here, name, vals),
                    _ => None,
                }
            }
            _ => None,
        }
    }
}

/// Ends `g`: its dependents (the values of `values` that `needed`
/// says are used after it), the vertices reaching them, renumbered.
fn finish(
    g: Building,
    classes: &Classes,
    needed: impl Fn(usize, SymbolId) -> bool,
) -> Option<LocalGraph> {
    let v = g.labels.len();
    let mut succs: Vec<Vec<usize>> = vec![Vec::new(); v];
    for &(i, j) in &g.edges {
        succs[i].push(j);
    }
    let kept: Vec<_> = g
        .values
        .iter()
        .filter(|(k, val, sym, ..)| val.is_some() && needed(*k, *sym))
        .collect();
    let deps: Vec<(usize, String)> = kept
        .iter()
        .map(|(_, val, _, text, ..)| (val.unwrap_or(0), text.clone()))
        .collect();
    if deps.is_empty() {
        return None;
    }
    let dependents: Vec<StmtId> = kept.iter().map(|x| x.4).collect();
    // No two dependents may be one address, nor a dependent and what a
    // later statement of the graph assigns (a constant, say): that write
    // may have replaced the dependent's value, and the adjoint found at
    // the dependent's address would be the later value's (seed 6161,
    // case 564).
    let dependents_distinct = kept.iter().enumerate().all(|(a, x)| {
        kept[a + 1..]
            .iter()
            .all(|y| classes.relation(&x.5, &y.5) == Rel::Distinct)
            && g.values
                .iter()
                .filter(|y| y.0 > x.0)
                .all(|y| classes.relation(&x.5, &y.5) == Rel::Distinct)
    });
    // The vertices reaching a dependent.
    let mut alive = vec![false; v];
    let mut work: Vec<usize> = deps.iter().map(|d| d.0).collect();
    let mut preds: Vec<Vec<usize>> = vec![Vec::new(); v];
    for &(i, j) in &g.edges {
        preds[j].push(i);
    }
    while let Some(x) = work.pop() {
        if !std::mem::replace(&mut alive[x], true) {
            work.extend(&preds[x]);
        }
    }
    let has_succ = |x: usize| succs[x].iter().any(|&y| alive[y]);
    let mut holders: HashMap<usize, usize> = HashMap::new();
    for (x, _) in &deps {
        *holders.entry(*x).or_insert(0) += 1;
    }
    // A dependent keeps its vertex when that is a maximal intermediate
    // no other dependent has (`ema = s` after `s = …`: both need their
    // own); otherwise it gets a vertex behind a unit edge.
    let own: Vec<bool> = deps
        .iter()
        .map(|(x, _)| !g.input[*x] && !has_succ(*x) && holders[x] == 1)
        .collect();
    let moved: BTreeSet<usize> = deps
        .iter()
        .zip(&own)
        .filter(|(_, o)| **o)
        .map(|(d, _)| d.0)
        .collect();
    let mut number = vec![usize::MAX; v];
    let mut labels = Vec::new();
    let inputs: Vec<usize> = (0..v).filter(|&x| alive[x] && g.input[x]).collect();
    let inter: Vec<usize> = (0..v)
        .filter(|&x| alive[x] && !g.input[x] && !moved.contains(&x))
        .collect();
    for &x in inputs.iter().chain(&inter) {
        number[x] = labels.len();
        labels.push(g.labels[x].clone());
    }
    let (n, p) = (inputs.len(), inter.len());
    let independents = inputs
        .iter()
        .filter_map(|&x| match &g.origins[x] {
            Origin::Input(e) => Some(e.clone()),
            Origin::Op { .. } => None,
        })
        .collect();
    let mut labelled: Vec<((usize, usize), EdgeLabel)> = Vec::new();
    for ((x, text), o) in deps.iter().zip(&own) {
        let y = labels.len();
        labels.push(text.clone());
        if *o {
            number[*x] = y;
        } else {
            labelled.push(((number[*x], y), EdgeLabel::Unit));
        }
    }
    for &(i, j) in &g.edges {
        if alive[i] && alive[j] {
            let Origin::Op {
                stmt,
                path,
                operands,
            } = &g.origins[j]
            else {
                continue;
            };
            let children = operands
                .iter()
                .filter(|(_, v)| *v == i)
                .map(|(c, _)| *c)
                .collect();
            labelled.push((
                (number[i], number[j]),
                EdgeLabel::Partial {
                    stmt: *stmt,
                    path: path.clone(),
                    children,
                },
            ));
        }
    }
    labelled.sort_by_key(|x| x.0);
    labelled.dedup_by_key(|x| x.0);
    let (edges, edge_labels) = labelled.into_iter().unzip();
    Some(LocalGraph {
        stmts: g.stmts,
        dag: Dag {
            n,
            p,
            m: deps.len(),
            edges,
        },
        labels,
        split_at: g.split_at,
        edge_labels,
        independents,
        dependents,
        dependents_distinct,
    })
}

/// Flattens one run of assignments (statements of a block, in order).
fn flatten_run(
    unit: &Unit,
    act: &Activity,
    classes: &Classes,
    run: &[(StmtId, &Expr, &Expr)],
) -> Vec<LocalGraph> {
    let mut r = Run {
        unit,
        act,
        classes,
        writes: HashMap::new(),
        defs: Vec::new(),
        used_later: BTreeSet::new(),
    };
    let mut done: Vec<Building> = Vec::new();
    let mut g = Building::default();
    for (k, &(st, lhs, rhs)) in run.iter().enumerate() {
        let mut leaves = Vec::new();
        if let Err(text) = r.leaves(&g, st, k, rhs, &mut leaves) {
            let next = Building {
                start: k,
                ..Building::default()
            };
            let mut prev = std::mem::replace(&mut g, next);
            prev.split_at = Some((st, text));
            done.push(prev);
            leaves.clear();
            // Every definition in the chain is now before the graph.
            let _ = r.leaves(&g, st, k, rhs, &mut leaves);
        }
        // The independents a later graph reads were defined in the run.
        for l in &leaves {
            if let Leaf::Input(_, d, _) = l {
                r.used_later.extend(d.iter().flatten());
            }
        }
        let mut it = leaves.into_iter();
        let value = r.build(&mut g, st, &mut Vec::new(), rhs, &mut it);
        let Some(target) = r.addr(lhs) else { continue };
        let sym = target.sym;
        let value = value.filter(|_| is_real(unit, sym));
        // An operation whose value a statement assigns is named by its
        // variable (the first one).
        if let Some(v) = value.filter(|&v| !g.input[v] && !g.named.contains(&v)) {
            g.named.insert(v);
            g.labels[v] = print(unit, lhs);
        }
        g.tracked
            .retain(|(a, _)| classes.relation(a, &target) == Rel::Distinct);
        g.tracked.push((target.clone(), value));
        g.values
            .push((k, value, sym, print(unit, lhs), st, target.clone()));
        g.stmts.push(st);
        r.defs.push(target);
        *r.writes.entry(sym).or_insert(0) += 1;
    }
    done.push(g);
    let last = run.last().map(|x| x.0);
    // A value may survive the run unless a later statement of the run
    // must overwrite it.
    let survives = |k: usize| {
        !(k + 1..r.defs.len()).any(|j| classes.relation(&r.defs[j], &r.defs[k]) == Rel::Same)
    };
    done.into_iter()
        .filter_map(|g| {
            finish(g, classes, |k, sym| {
                r.used_later.contains(&k)
                    || (survives(k) && last.is_some_and(|l| act.active_after(l, sym)))
            })
        })
        .collect()
}

/// The local graphs of every basic block of `unit`, in node order.
pub fn block_graphs(unit: &Unit, act: &Activity) -> Vec<BlockGraphs> {
    let classes = Classes::of(unit);
    let mut out = Vec::new();
    for (id, node) in unit.cfg.nodes.iter_enumerated() {
        if node.kind != NodeKind::BasicBlock {
            continue;
        }
        let mut graphs = Vec::new();
        let mut run = Vec::new();
        for &s in &node.stmts {
            let Some(st) = unit.stmts.get(s) else {
                continue;
            };
            match assignment(unit, st) {
                Some((l, r)) => run.push((s, l, r)),
                None => {
                    graphs.extend(flatten_run(unit, act, &classes, &run));
                    run.clear();
                }
            }
        }
        graphs.extend(flatten_run(unit, act, &classes, &run));
        if !graphs.is_empty() {
            out.push(BlockGraphs { node: id, graphs });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{program, request};

    /// Per graph: (n, p, m, |E|) and its vertices' labels.
    type Sized = ((usize, usize, usize, usize), Vec<String>);

    /// The graphs of `f`'s blocks with these roles.
    fn graphs(src: &str, ind: &[&str], dep: &[&str]) -> Vec<Sized> {
        let p = program(src);
        let facts = crate::facts::analyse(&p, &request("f", ind, dep), None);
        let u = facts.program.units.iter().find(|u| u.name == "f").unwrap();
        block_graphs(u, facts.activity_of(u.id).unwrap())
            .into_iter()
            .flat_map(|b| b.graphs)
            .map(|g| {
                let d = &g.dag;
                ((d.n, d.p, d.m, d.edges.len()), g.labels)
            })
            .collect()
    }

    #[test]
    fn the_paper_004_code_list_is_one_graph_of_ten_edges() {
        let src = "subroutine f(vm1, v0, v6, v7)
  real(8) :: vm1, v0, v1, v2, v3, v4, v5, v6, v7
  v1 = vm1 + v0
  v2 = sin(v0)
  v3 = v1 + v2
  v4 = v1 * v3
  v5 = sqrt(v3)
  v6 = cos(v4)
  v7 = -v5
end subroutine
";
        let g = graphs(src, &["vm1", "v0"], &["v6", "v7"]);
        assert_eq!(g.len(), 1, "{g:?}");
        assert_eq!(g[0].0, (2, 5, 2, 10), "{g:?}");
        assert_eq!(
            g[0].1,
            ["vm1", "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7"]
        );
        let p = program(src);
        let facts = crate::facts::analyse(&p, &request("f", &["vm1", "v0"], &["v6", "v7"]), None);
        let u = facts.program.units.iter().find(|u| u.name == "f").unwrap();
        let j = &facts.local_jacobians(u.id)[0].jacobians[0];
        assert_eq!(
            (j.costs.forward, j.costs.reverse, j.costs.best),
            (13, 13, 12)
        );
    }

    /// Paper 002's Figure 2 with an array element for `*z`: `a(j)` may be
    /// the `a(i)` just written or the old value.
    const FIGURE_2: &str = "subroutine f(n, i, j, a, x, y)
  integer :: n, i, j
  real(8) :: a(n), x, y
  a(i) = -(a(i) * x)
  y = a(j) / x
end subroutine
";

    #[test]
    fn an_ambiguous_use_splits_the_block_into_two_unambiguous_graphs() {
        let g = graphs(FIGURE_2, &["a", "x"], &["a", "y"]);
        assert_eq!(g.len(), 2, "{g:?}");
        // G1: a(i) = -(a(i) * x), its value used by G2 and after.
        assert_eq!(
            g[0],
            (
                (2, 1, 1, 3),
                ["a(i)", "x", "*", "a(i)"].map(String::from).to_vec()
            )
        );
        // G2: y = a(j) / x.
        assert_eq!(
            g[1],
            ((2, 0, 1, 2), ["a(j)", "x", "y"].map(String::from).to_vec())
        );
    }

    #[test]
    fn the_same_element_read_back_stays_one_graph() {
        let src = FIGURE_2.replace("a(j) / x", "a(i) / x");
        let g = graphs(&src, &["a", "x"], &["a", "y"]);
        assert_eq!(g.len(), 1, "{g:?}");
        // a(i)'s new value feeds y and survives: a non-maximal dependent
        // behind a unit edge.
        assert_eq!(
            g[0],
            (
                (2, 2, 2, 6),
                ["a(i)", "x", "*", "a(i)", "a(i)", "y"]
                    .map(String::from)
                    .to_vec()
            )
        );
        // Elements a constant apart are different addresses; a write to
        // the subscript makes the same text another address.
        let stencil = FIGURE_2.replace("a(j) / x", "a(i + 1) / x");
        assert_eq!(graphs(&stencil, &["a", "x"], &["a", "y"]).len(), 1);
        // A copy of a dependent is a dependent of its own: both behind
        // unit edges, none a successor of the other.
        let copied = FIGURE_2.replace("a(j) / x", "a(i)");
        assert_eq!(
            graphs(&copied, &["a", "x"], &["a", "y"])[0],
            (
                (2, 2, 2, 5),
                ["a(i)", "x", "*", "a(i)", "a(i)", "y"]
                    .map(String::from)
                    .to_vec()
            )
        );
        let moved = FIGURE_2
            .replace("a(j) / x", "a(i) / x")
            .replace("  y = ", "  i = i + 1\n  y = ");
        assert_eq!(graphs(&moved, &["a", "x"], &["a", "y"]).len(), 2);
    }

    #[test]
    fn other_statements_end_a_run_and_passive_values_are_no_vertices() {
        let src = "subroutine f(x, y, k)
  integer :: k
  real(8) :: x, y, t, c
  c = 2.0d0 * k
  t = c * x * x
  print *, t
  y = t * sin(x) + c
end subroutine
";
        let g = graphs(src, &["x"], &["y"]);
        assert_eq!(g.len(), 2, "{g:?}");
        // c is passive: (c * x) * x is an operation on one active operand,
        // then one on two; both reads of x are one vertex.
        assert_eq!(
            g[0],
            ((1, 1, 1, 3), ["x", "*", "t"].map(String::from).to_vec())
        );
        // t * sin(x) + c: the addition of a passive c is still a vertex.
        assert_eq!(
            g[1],
            (
                (2, 2, 1, 4),
                ["t", "x", "sin", "*", "y"].map(String::from).to_vec()
            )
        );
    }
}
