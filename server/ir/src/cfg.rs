//! Control-flow graph of a unit, with the vertex kinds of paper 001
//! (Naumann, Utke, Lyons, Fagan, *Control flow reversal for adjoint code
//! generation*, Definition 1): ENTRY, BASICBLOCK, LOOP, ENDLOOP, BRANCH,
//! ENDBRANCH, EXIT. Built from the structured statement tree of the IR.
//!
//! Contract: for code made only of structured constructs (IF, DO, DO WHILE,
//! SELECT CASE, with RETURN only as the last statement of the unit; STOP
//! anywhere, as a statement of its block, since a run that stops is never
//! reversed) the
//! graph satisfies Definition 1: LOOP has two predecessors (entry and the
//! back edge from its ENDLOOP) and two successors (body, exit); ENDLOOP and
//! BASICBLOCK have one predecessor and one successor; each BRANCH has a
//! matching ENDBRANCH where its arms meet. Jumps (GO TO, computed GO TO,
//! arithmetic IF, EXIT, CYCLE, an early RETURN) are still
//! represented as edges, and `structured` is false with one `Jump` per
//! offending statement saying why.

use crate::idx::IdVec;
use crate::ir::{Span, Stmt, StmtId, StmtKind, Unit};
use std::collections::{HashMap, HashSet};

/// A vertex of a [`Cfg`], an index into [`Cfg::nodes`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId(pub u32);
crate::impl_idx!(NodeId);

/// The vertex types of paper 001, Definition 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeKind {
    Entry,
    BasicBlock,
    Loop,
    EndLoop,
    Branch,
    EndBranch,
    Exit,
}

impl NodeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            NodeKind::Entry => "ENTRY",
            NodeKind::BasicBlock => "BASICBLOCK",
            NodeKind::Loop => "LOOP",
            NodeKind::EndLoop => "ENDLOOP",
            NodeKind::Branch => "BRANCH",
            NodeKind::EndBranch => "ENDBRANCH",
            NodeKind::Exit => "EXIT",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EdgeKind {
    /// Fall-through.
    Seq,
    /// BRANCH -> first node of arm k (1-based: IF arms in order, ELSE last;
    /// SELECT CASE cases in order). The implicit "no arm taken" edge (IF
    /// without ELSE, SELECT without DEFAULT) is `Arm(n + 1)` where n is the
    /// number of written arms.
    Arm(u32),
    /// LOOP -> body.
    Body,
    /// LOOP -> after the loop.
    LoopExit,
    /// ENDLOOP -> LOOP.
    Back,
    /// GO TO, computed GO TO target, arithmetic IF target, EXIT, CYCLE,
    /// early RETURN.
    Jump,
}

#[derive(Clone, Debug)]
pub struct Node {
    pub kind: NodeKind,
    /// BASICBLOCK: its statements in order (simple statements, plus a jump
    /// statement as the last one). LOOP: [the DO statement]. BRANCH: [the IF
    /// or SELECT CASE statement it tests]. ENDLOOP/ENDBRANCH: [the
    /// construct's statement] too, so a printer can say which construct it
    /// closes. ENTRY/EXIT: empty.
    pub stmts: Vec<StmtId>,
    pub succs: Vec<(NodeId, EdgeKind)>,
    /// One entry per incoming edge (a multiset matching the `succs` of the
    /// other nodes).
    pub preds: Vec<NodeId>,
    /// For LOOP/BRANCH: the matching ENDLOOP/ENDBRANCH; for
    /// ENDLOOP/ENDBRANCH: the matching LOOP/BRANCH.
    pub partner: Option<NodeId>,
}

/// A statement that makes the graph unstructured.
#[derive(Clone, Debug)]
pub struct Jump {
    pub stmt: StmtId,
    pub span: Span,
    /// "go to", "computed go to", "arithmetic if", "exit", "cycle", "return
    /// before the end", "... into a construct",
    /// "exit outside a loop", "cycle outside a loop", ...
    pub reason: String,
}

#[derive(Clone, Debug, Default)]
pub struct Cfg {
    pub nodes: IdVec<NodeId, Node>,
    pub entry: NodeId,
    pub exit: NodeId,
    /// No jumps: the graph satisfies Definition 1.
    pub structured: bool,
    pub jumps: Vec<Jump>,
    /// The node holding each statement (BASICBLOCK for simple and jump
    /// statements, LOOP for DO, BRANCH for IF/SELECT CASE), indexed by
    /// `StmtId`. Every statement of the unit's statement tree gets a node,
    /// unreachable ones included (their block has no predecessors); `None`
    /// only for arena statements that are not in the tree.
    pub stmt_node: IdVec<StmtId, Option<NodeId>>,
}

impl Cfg {
    /// Builds the CFG of a unit from its statement tree. Never panics,
    /// whatever the IR.
    pub fn build(unit: &Unit) -> Cfg {
        Builder::new(unit).run()
    }

    pub fn node(&self, id: NodeId) -> &Node {
        &self.nodes[id]
    }

    /// Nodes in a topological order. For a structured graph this is paper
    /// 001's Algorithm 1: loop bodies before what follows the loop (so an
    /// ENDLOOP precedes the loop's exit successor), an ENDBRANCH right after
    /// all the nodes of its arms. For an unstructured graph: a reverse
    /// post-order from ENTRY ignoring back edges. Nodes not reached either
    /// way come last, in id order. Every node appears exactly once.
    pub fn topological_order(&self) -> Vec<NodeId> {
        let n = self.nodes.len();
        if n == 0 {
            return Vec::new();
        }
        let mut order = if self.structured {
            self.algorithm1()
        } else {
            self.reverse_post_order()
        };
        let mut seen: IdVec<NodeId, bool> = IdVec::from_elem(false, n);
        for id in &order {
            seen[*id] = true;
        }
        order.extend(seen.indices().filter(|&i| !seen[i]));
        order
    }

    fn valid(&self, id: NodeId) -> bool {
        self.nodes.get(id).is_some()
    }

    /// Algorithm 1 of paper 001, iterative (no recursion depth limit). The
    /// paper's stack of ENDBRANCH vertices is replaced by the BRANCH's
    /// partner, which is the same vertex for a structured graph.
    fn algorithm1(&self) -> Vec<NodeId> {
        enum Task {
            Visit(NodeId),
            AfterBranch(NodeId),
        }
        let n = self.nodes.len();
        let mut visited: IdVec<NodeId, bool> = IdVec::from_elem(false, n);
        let mut appended: IdVec<NodeId, bool> = IdVec::from_elem(false, n);
        let mut order = Vec::with_capacity(n);
        let mut tasks = vec![Task::Visit(self.entry)];
        while let Some(task) = tasks.pop() {
            match task {
                Task::Visit(i) => {
                    if !self.valid(i) || visited[i] {
                        continue;
                    }
                    visited[i] = true;
                    let node = &self.nodes[i];
                    if node.kind == NodeKind::EndBranch
                        && node.partner.is_some_and(|p| self.valid(p))
                    {
                        // Appended by its BRANCH once all arms are done.
                        continue;
                    }
                    order.push(i);
                    appended[i] = true;
                    if node.kind == NodeKind::Branch {
                        tasks.push(Task::AfterBranch(i));
                    }
                    // Pushed in reverse so the first successor is visited
                    // first; for a LOOP the body goes first.
                    let mut succs: Vec<NodeId> = Vec::with_capacity(node.succs.len());
                    if node.kind == NodeKind::Loop {
                        succs.extend(
                            node.succs
                                .iter()
                                .filter(|(_, k)| *k == EdgeKind::Body)
                                .map(|(s, _)| *s),
                        );
                        succs.extend(
                            node.succs
                                .iter()
                                .filter(|(_, k)| *k != EdgeKind::Body)
                                .map(|(s, _)| *s),
                        );
                    } else {
                        succs.extend(node.succs.iter().map(|(s, _)| *s));
                    }
                    tasks.extend(succs.into_iter().rev().map(Task::Visit));
                }
                Task::AfterBranch(b) => {
                    let Some(e) = self.nodes[b].partner else {
                        continue;
                    };
                    if !self.valid(e) || appended[e] {
                        continue;
                    }
                    visited[e] = true;
                    appended[e] = true;
                    order.push(e);
                    let succs = &self.nodes[e].succs;
                    tasks.extend(succs.iter().rev().map(|(s, _)| Task::Visit(*s)));
                }
            }
        }
        order
    }

    /// Reverse post-order of a depth-first search from ENTRY that ignores
    /// `Back` edges.
    fn reverse_post_order(&self) -> Vec<NodeId> {
        let n = self.nodes.len();
        let mut visited: IdVec<NodeId, bool> = IdVec::from_elem(false, n);
        let mut post = Vec::with_capacity(n);
        if !self.valid(self.entry) {
            return post;
        }
        // (node, index of the next successor to look at)
        let mut stack: Vec<(NodeId, usize)> = vec![(self.entry, 0)];
        visited[self.entry] = true;
        while let Some(top) = stack.last_mut() {
            let (node, next) = *top;
            let succs = &self.nodes[node].succs;
            if next < succs.len() {
                top.1 += 1;
                let (s, kind) = succs[next];
                if kind != EdgeKind::Back && self.valid(s) && !visited[s] {
                    visited[s] = true;
                    stack.push((s, 0));
                }
            } else {
                post.push(node);
                stack.pop();
            }
        }
        post.reverse();
        post
    }
}

struct LoopFrame {
    name: Option<String>,
    /// EXIT edges: they go to the node after the loop.
    exits: Vec<(NodeId, EdgeKind)>,
    /// CYCLE edges: they go to the loop's ENDLOOP.
    cycles: Vec<(NodeId, EdgeKind)>,
}

/// A GO TO, computed GO TO or arithmetic IF whose targets are resolved once
/// the whole unit is built.
struct PendingGoto {
    from: NodeId,
    targets: Vec<u32>,
    /// Index of its entry in `Builder::jumps`.
    jump: usize,
    /// The constructs enclosing the statement.
    context: Vec<StmtId>,
}

struct Builder<'a> {
    unit: &'a Unit,
    nodes: IdVec<NodeId, Node>,
    /// Edges waiting for the next node created.
    pending: Vec<(NodeId, EdgeKind)>,
    /// The BASICBLOCK simple statements are being added to; when set,
    /// `pending` is `[(block, Seq)]`.
    current: Option<NodeId>,
    loops: Vec<LoopFrame>,
    /// Labels some GO TO / computed GO TO / arithmetic IF goes to.
    targets: HashSet<u32>,
    /// Label -> the node of its statement and the constructs enclosing it
    /// (first definition wins).
    labels: HashMap<u32, (NodeId, Vec<StmtId>)>,
    /// Terminal labels of `do 10` loops -> their ENDLOOP, used only when no
    /// statement carries the label.
    end_labels: HashMap<u32, (NodeId, Vec<StmtId>)>,
    /// Enclosing IF / DO / SELECT CASE statements.
    constructs: Vec<StmtId>,
    gotos: Vec<PendingGoto>,
    /// Edges from RETURN / STOP blocks to EXIT.
    to_exit: Vec<(NodeId, EdgeKind)>,
    jumps: Vec<Jump>,
    stmt_node: IdVec<StmtId, Option<NodeId>>,
}

impl<'a> Builder<'a> {
    fn new(unit: &'a Unit) -> Builder<'a> {
        let mut targets = HashSet::new();
        for stmt in &unit.stmts {
            match &stmt.kind {
                StmtKind::Goto { target } => {
                    targets.insert(*target);
                }
                StmtKind::ComputedGoto { targets: ts, .. } => targets.extend(ts.iter().copied()),
                StmtKind::Io { branches, .. } => targets.extend(branches.iter().copied()),
                StmtKind::ArithmeticIf {
                    negative,
                    zero,
                    positive,
                    ..
                } => targets.extend([*negative, *zero, *positive]),
                _ => {}
            }
        }
        Builder {
            unit,
            nodes: IdVec::new(),
            pending: Vec::new(),
            current: None,
            loops: Vec::new(),
            targets,
            labels: HashMap::new(),
            end_labels: HashMap::new(),
            constructs: Vec::new(),
            gotos: Vec::new(),
            to_exit: Vec::new(),
            jumps: Vec::new(),
            stmt_node: IdVec::from_elem(None, unit.stmts.len()),
        }
    }

    fn run(mut self) -> Cfg {
        let entry = self.new_node(NodeKind::Entry, Vec::new());
        self.pending = vec![(entry, EdgeKind::Seq)];
        let unit = self.unit;
        self.build_body(&unit.body);
        self.current = None;
        let mut into_exit = std::mem::take(&mut self.to_exit);
        into_exit.append(&mut self.pending);
        self.pending = into_exit;
        let exit = self.new_node(NodeKind::Exit, Vec::new());
        self.resolve_gotos();
        // A unit's graph lives as long as the unit: no spare capacity.
        for n in self.nodes.iter_mut() {
            n.stmts.shrink_to_fit();
            n.succs.shrink_to_fit();
            n.preds.shrink_to_fit();
        }
        self.nodes.shrink_to_fit();
        self.stmt_node.shrink_to_fit();
        Cfg {
            nodes: self.nodes,
            entry,
            exit,
            structured: self.jumps.is_empty(),
            jumps: self.jumps,
            stmt_node: self.stmt_node,
        }
    }

    fn resolve_gotos(&mut self) {
        let gotos = std::mem::take(&mut self.gotos);
        for g in gotos {
            let mut into = false;
            for t in &g.targets {
                let found = self.labels.get(t).or_else(|| self.end_labels.get(t));
                let Some((node, chain)) = found else {
                    // Unknown label: reported elsewhere.
                    continue;
                };
                let node = *node;
                if !g.context.starts_with(chain) {
                    into = true;
                }
                self.add_edge(g.from, node, EdgeKind::Jump);
            }
            if into {
                if let Some(j) = self.jumps.get_mut(g.jump) {
                    j.reason.push_str(" into a construct");
                }
            }
        }
    }

    fn add_edge(&mut self, from: NodeId, to: NodeId, kind: EdgeKind) {
        self.nodes[from].succs.push((to, kind));
        self.nodes[to].preds.push(from);
    }

    /// Creates a node and connects the pending edges to it.
    fn new_node(&mut self, kind: NodeKind, stmts: Vec<StmtId>) -> NodeId {
        let id = self.nodes.push(Node {
            kind,
            stmts,
            succs: Vec::new(),
            preds: Vec::new(),
            partner: None,
        });
        for (from, k) in std::mem::take(&mut self.pending) {
            self.add_edge(from, id, k);
        }
        self.current = None;
        id
    }

    /// Records the node of a statement (and of its label).
    fn place(&mut self, id: StmtId, stmt: &Stmt, node: NodeId) {
        if let Some(slot) = self.stmt_node.get_mut(id) {
            *slot = Some(node);
        }
        if let Some(l) = stmt.label {
            let chain = self.constructs.clone();
            self.labels.entry(l).or_insert((node, chain));
        }
    }

    /// Adds a statement to the current BASICBLOCK, starting one when there
    /// is none or when the statement is a jump target.
    fn add_to_block(&mut self, id: StmtId, stmt: &Stmt) -> NodeId {
        if stmt.label.is_some_and(|l| self.targets.contains(&l)) {
            self.current = None;
        }
        let block = match self.current {
            Some(b) => b,
            None => {
                let b = self.new_node(NodeKind::BasicBlock, Vec::new());
                self.pending = vec![(b, EdgeKind::Seq)];
                self.current = Some(b);
                b
            }
        };
        self.nodes[block].stmts.push(id);
        self.place(id, stmt, block);
        block
    }

    /// Adds a jump statement as the last one of a block: nothing falls
    /// through.
    fn end_block_with(&mut self, id: StmtId, stmt: &Stmt) -> NodeId {
        let block = self.add_to_block(id, stmt);
        self.pending.clear();
        self.current = None;
        block
    }

    fn jump(&mut self, id: StmtId, stmt: &Stmt, reason: &str) -> usize {
        self.jumps.push(Jump {
            stmt: id,
            span: stmt.span,
            reason: reason.to_string(),
        });
        self.jumps.len() - 1
    }

    fn build_body(&mut self, body: &[StmtId]) {
        for &id in body {
            self.build_stmt(id);
        }
    }

    /// Index of the loop an EXIT/CYCLE refers to.
    fn find_loop(&self, construct: &Option<String>) -> Option<usize> {
        match construct {
            None => self.loops.len().checked_sub(1),
            Some(name) => self.loops.iter().rposition(|f| {
                f.name
                    .as_deref()
                    .is_some_and(|n| n.eq_ignore_ascii_case(name))
            }),
        }
    }

    fn build_stmt(&mut self, id: StmtId) {
        let unit = self.unit;
        let Some(stmt) = unit.stmts.get(id) else {
            return;
        };
        // A statement already placed (the tree refers to it twice, or
        // contains itself) is not built again.
        if self.stmt_node.get(id).is_some_and(|n| n.is_some()) {
            return;
        }
        match &stmt.kind {
            StmtKind::Assign { .. }
            | StmtKind::Call { .. }
            | StmtKind::Continue
            | StmtKind::Allocate { .. }
            | StmtKind::PointerAssign { .. }
            | StmtKind::Nullify { .. }
            | StmtKind::Unsupported { .. } => {
                self.add_to_block(id, stmt);
            }
            StmtKind::Where { .. } => {
                // The masks and the masked assignments, in order, in one
                // straight line: every element goes through some arm, the
                // assignments are partial writes (none kills), and an arm
                // sees what the earlier ones wrote (through a non-elemental
                // reference like `sum(a)`), so nothing is skipped.
                self.add_to_block(id, stmt);
                for body in stmt.kind.blocks() {
                    for &s in body {
                        self.build_stmt(s);
                    }
                }
            }
            StmtKind::If {
                arms, else_body, ..
            } => {
                let arm_bodies: Vec<&[StmtId]> = arms.iter().map(|a| a.body.as_slice()).collect();
                self.build_branch(id, stmt, &arm_bodies, else_body.as_deref());
            }
            StmtKind::SelectCase { cases, .. } => {
                let arm_bodies: Vec<&[StmtId]> = cases.iter().map(|c| c.body.as_slice()).collect();
                let has_default = cases.iter().any(|c| c.default);
                // Every case is a written arm; without `case default` the
                // "no case taken" edge is added like an IF without ELSE.
                self.build_branch_arms(id, stmt, &arm_bodies, !has_default);
            }
            StmtKind::Do {
                name,
                body,
                end_label,
                ..
            } => self.build_loop(id, stmt, name.clone(), body, *end_label),
            StmtKind::Goto { target } => {
                let from = self.end_block_with(id, stmt);
                self.goto(id, stmt, from, vec![*target], "go to");
            }
            StmtKind::Io { branches, .. } if branches.is_empty() => {
                self.add_to_block(id, stmt);
            }
            StmtKind::Io { branches, .. } => {
                // ERR=, END=, EOR=: a jump when the transfer fails.
                let from = self.end_block_with(id, stmt);
                self.goto(id, stmt, from, branches.clone(), "I/O branch");
                self.pending = vec![(from, EdgeKind::Seq)];
            }
            StmtKind::ComputedGoto { targets, .. } => {
                let from = self.end_block_with(id, stmt);
                self.goto(id, stmt, from, targets.clone(), "computed go to");
                self.pending = vec![(from, EdgeKind::Seq)];
            }
            StmtKind::ArithmeticIf {
                negative,
                zero,
                positive,
                ..
            } => {
                let from = self.end_block_with(id, stmt);
                let mut targets = Vec::with_capacity(3);
                for t in [*negative, *zero, *positive] {
                    if !targets.contains(&t) {
                        targets.push(t);
                    }
                }
                self.goto(id, stmt, from, targets, "arithmetic if");
            }
            StmtKind::Exit { construct } | StmtKind::Cycle { construct } => {
                let is_exit = matches!(stmt.kind, StmtKind::Exit { .. });
                let what = if is_exit { "exit" } else { "cycle" };
                let from = self.end_block_with(id, stmt);
                match self.find_loop(construct) {
                    Some(i) => {
                        let frame = &mut self.loops[i];
                        if is_exit {
                            frame.exits.push((from, EdgeKind::Jump));
                        } else {
                            frame.cycles.push((from, EdgeKind::Jump));
                        }
                        self.jump(id, stmt, what);
                    }
                    None => {
                        let reason = match construct {
                            None => format!("{what} outside a loop"),
                            Some(name) => format!("{what} from {name}, not an enclosing loop"),
                        };
                        self.jump(id, stmt, &reason);
                    }
                }
            }
            // A run that stops has no reverse sweep: the path through a
            // STOP is never reversed, so the STOP is a statement of its
            // block (the paths past it that the graph keeps are
            // infeasible, which only makes the analyses conservative).
            StmtKind::Stop => {
                self.add_to_block(id, stmt);
            }
            StmtKind::Return => {
                let from = self.end_block_with(id, stmt);
                let last = self.constructs.is_empty() && unit.body.last() == Some(&id);
                if last {
                    self.to_exit.push((from, EdgeKind::Seq));
                } else {
                    self.to_exit.push((from, EdgeKind::Jump));
                    self.jump(id, stmt, "return before the end");
                }
            }
        }
    }

    fn goto(&mut self, id: StmtId, stmt: &Stmt, from: NodeId, targets: Vec<u32>, reason: &str) {
        let jump = self.jump(id, stmt, reason);
        self.gotos.push(PendingGoto {
            from,
            targets,
            jump,
            context: self.constructs.clone(),
        });
    }

    fn build_branch(
        &mut self,
        id: StmtId,
        stmt: &Stmt,
        arms: &[&[StmtId]],
        else_body: Option<&[StmtId]>,
    ) {
        let mut all: Vec<&[StmtId]> = arms.to_vec();
        if let Some(e) = else_body {
            all.push(e);
        }
        self.build_branch_arms(id, stmt, &all, else_body.is_none());
    }

    /// BRANCH, one arm per body (edges `Arm(1..=n)`), plus `Arm(n + 1)`
    /// straight to the ENDBRANCH when `implicit_arm`.
    fn build_branch_arms(
        &mut self,
        id: StmtId,
        stmt: &Stmt,
        arms: &[&[StmtId]],
        implicit_arm: bool,
    ) {
        let branch = self.new_node(NodeKind::Branch, vec![id]);
        self.place(id, stmt, branch);
        self.constructs.push(id);
        let mut ends = Vec::new();
        let mut k = 0u32;
        for body in arms {
            k += 1;
            self.pending = vec![(branch, EdgeKind::Arm(k))];
            self.current = None;
            self.build_body(body);
            ends.append(&mut self.pending);
        }
        if implicit_arm {
            ends.push((branch, EdgeKind::Arm(k + 1)));
        }
        self.constructs.pop();
        self.current = None;
        self.pending = ends;
        let end = self.new_node(NodeKind::EndBranch, vec![id]);
        // Empty arms were connected only now: keep the arms in order.
        self.nodes[branch].succs.sort_by_key(|e| match e.1 {
            EdgeKind::Arm(k) => k,
            _ => u32::MAX,
        });
        self.nodes[branch].partner = Some(end);
        self.nodes[end].partner = Some(branch);
        self.pending = vec![(end, EdgeKind::Seq)];
    }

    fn build_loop(
        &mut self,
        id: StmtId,
        stmt: &Stmt,
        name: Option<String>,
        body: &[StmtId],
        end_label: Option<u32>,
    ) {
        let lp = self.new_node(NodeKind::Loop, vec![id]);
        self.place(id, stmt, lp);
        self.constructs.push(id);
        self.loops.push(LoopFrame {
            name,
            exits: Vec::new(),
            cycles: Vec::new(),
        });
        self.pending = vec![(lp, EdgeKind::Body)];
        self.current = None;
        self.build_body(body);
        let frame = self.loops.pop().unwrap_or(LoopFrame {
            name: None,
            exits: Vec::new(),
            cycles: Vec::new(),
        });
        self.pending.extend(frame.cycles);
        let end = self.new_node(NodeKind::EndLoop, vec![id]);
        if let Some(l) = end_label {
            let chain = self.constructs.clone();
            self.end_labels.entry(l).or_insert((end, chain));
        }
        self.constructs.pop();
        self.add_edge(end, lp, EdgeKind::Back);
        self.nodes[lp].partner = Some(end);
        self.nodes[end].partner = Some(lp);
        self.pending = vec![(lp, EdgeKind::LoopExit)];
        self.pending.extend(frame.exits);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::*;
    use dfort_syntax::TextRange;

    fn e() -> Expr {
        Expr {
            kind: ExprKind::Int(0),
            span: Span::default(),
        }
    }

    /// Builds a statement arena by hand; each statement gets the span
    /// `[i, i + 1)` where i is its id.
    #[derive(Default)]
    struct T {
        stmts: crate::shared_vec::SharedVec<StmtId, Stmt>,
    }

    impl T {
        fn push(&mut self, label: Option<u32>, kind: StmtKind) -> StmtId {
            let id = self.stmts.next_id();
            self.stmts.push(Stmt {
                id,
                label,
                span: Span {
                    file: FileId(0),
                    range: TextRange {
                        start: id.0,
                        end: id.0 + 1,
                    },
                },
                kind,
            });
            id
        }
        fn a(&mut self) -> StmtId {
            self.push(None, StmtKind::Assign { lhs: e(), rhs: e() })
        }
        fn la(&mut self, label: u32) -> StmtId {
            self.push(Some(label), StmtKind::Assign { lhs: e(), rhs: e() })
        }
        fn cont(&mut self, label: u32) -> StmtId {
            self.push(Some(label), StmtKind::Continue)
        }
        fn goto(&mut self, target: u32) -> StmtId {
            self.push(None, StmtKind::Goto { target })
        }
        fn ret(&mut self) -> StmtId {
            self.push(None, StmtKind::Return)
        }
        fn stop(&mut self) -> StmtId {
            self.push(None, StmtKind::Stop)
        }
        fn exit(&mut self, name: Option<&str>) -> StmtId {
            self.push(
                None,
                StmtKind::Exit {
                    construct: name.map(str::to_string),
                },
            )
        }
        fn cycle(&mut self, name: Option<&str>) -> StmtId {
            self.push(
                None,
                StmtKind::Cycle {
                    construct: name.map(str::to_string),
                },
            )
        }
        fn if_(&mut self, arms: Vec<Vec<StmtId>>, else_body: Option<Vec<StmtId>>) -> StmtId {
            let arms = arms
                .into_iter()
                .map(|body| IfArm {
                    cond: e(),
                    body,
                    span: Span::default(),
                })
                .collect();
            self.push(
                None,
                StmtKind::If {
                    arms,
                    else_body,
                    one_line: false,
                },
            )
        }
        /// One-line logical IF.
        fn if1(&mut self, s: StmtId) -> StmtId {
            self.push(
                None,
                StmtKind::If {
                    arms: vec![IfArm {
                        cond: e(),
                        body: vec![s],
                        span: Span::default(),
                    }],
                    else_body: None,
                    one_line: true,
                },
            )
        }
        fn do_(&mut self, name: Option<&str>, body: Vec<StmtId>) -> StmtId {
            self.push(
                None,
                StmtKind::Do {
                    name: name.map(str::to_string),
                    control: DoControl::While(Box::new(e())),
                    body,
                    end_label: None,
                },
            )
        }
        fn do_label(&mut self, end: u32, body: Vec<StmtId>) -> StmtId {
            self.push(
                None,
                StmtKind::Do {
                    name: None,
                    control: DoControl::Counted {
                        var: SymbolId(0),
                        start: Box::new(e()),
                        end: Box::new(e()),
                        step: None,
                    },
                    body,
                    end_label: Some(end),
                },
            )
        }
        /// SELECT CASE; with `default`, the last case is `case default`.
        fn select(&mut self, cases: Vec<Vec<StmtId>>, default: bool) -> StmtId {
            let n = cases.len();
            let cases = cases
                .into_iter()
                .enumerate()
                .map(|(i, body)| {
                    let is_default = default && i + 1 == n;
                    Case {
                        values: if is_default {
                            vec![]
                        } else {
                            vec![CaseValue::Value(e())]
                        },
                        default: is_default,
                        body,
                        span: Span::default(),
                    }
                })
                .collect();
            self.push(
                None,
                StmtKind::SelectCase {
                    selector: e(),
                    cases,
                },
            )
        }
        fn unit(self, body: Vec<StmtId>) -> Unit {
            Unit {
                id: UnitId(0),
                name: "t".to_string(),
                kind: UnitKind::Subroutine,
                span: Span::default(),
                name_span: Span::default(),
                parent: None,
                children: vec![],
                recursive: false,
                elemental: false,
                pure: false,
                args: vec![],
                result: None,
                symbols: Default::default(),
                implicit: ImplicitRules::default(),
                uses: vec![],
                commons: vec![],
                equivalences: vec![],
                equivalence_text: vec![],
                aliases: vec![],
                stmt_functions: vec![],
                stmts: self.stmts,
                body,
                cfg: Default::default(),
                directives: vec![],
                interface_blocks: vec![],
                types: vec![],
                formats: vec![],
                data: vec![],
                namelists: vec![],
                entries: vec![],
            }
        }
        fn cfg(self, body: Vec<StmtId>) -> Cfg {
            Cfg::build(&self.unit(body))
        }
    }

    fn kinds(cfg: &Cfg) -> Vec<&'static str> {
        cfg.nodes.iter().map(|n| n.kind.as_str()).collect()
    }

    fn kind(cfg: &Cfg, n: NodeId) -> NodeKind {
        cfg.node(n).kind
    }

    /// The node holding a statement.
    fn at(cfg: &Cfg, s: StmtId) -> NodeId {
        cfg.stmt_node[s].expect("statement has a node")
    }

    fn succs(cfg: &Cfg, n: NodeId) -> Vec<(NodeId, EdgeKind)> {
        cfg.node(n).succs.clone()
    }

    /// preds and succs describe the same multiset of edges.
    fn check_consistent(cfg: &Cfg) {
        let mut from_succs = Vec::new();
        let mut from_preds = Vec::new();
        for (me, n) in cfg.nodes.iter_enumerated() {
            for (s, _) in &n.succs {
                from_succs.push((me, *s));
            }
            for p in &n.preds {
                from_preds.push((*p, me));
            }
        }
        from_succs.sort();
        from_preds.sort();
        assert_eq!(from_succs, from_preds, "preds and succs disagree");
        for (i, n) in cfg.nodes.iter_enumerated() {
            if let Some(p) = n.partner {
                assert_eq!(cfg.node(p).partner, Some(i));
            }
        }
    }

    fn check_topological(cfg: &Cfg) -> Vec<NodeId> {
        let order = cfg.topological_order();
        let mut sorted = order.clone();
        sorted.sort();
        let all: Vec<NodeId> = cfg.nodes.indices().collect();
        assert_eq!(sorted, all, "every node exactly once");
        assert_eq!(order.first(), Some(&cfg.entry));
        order
    }

    /// The degree rules of paper 001's Definition 1, preds/succs
    /// consistency, and that the topological order respects every
    /// non-back edge.
    fn check_definition1(cfg: &Cfg) {
        check_consistent(cfg);
        assert!(cfg.structured, "jumps: {:?}", cfg.jumps);
        assert!(cfg.jumps.is_empty());
        let count = |k: NodeKind| cfg.nodes.iter().filter(|n| n.kind == k).count();
        assert_eq!(count(NodeKind::Entry), 1);
        assert_eq!(count(NodeKind::Exit), 1);
        assert_eq!(count(NodeKind::Loop), count(NodeKind::EndLoop));
        assert_eq!(count(NodeKind::Branch), count(NodeKind::EndBranch));
        assert_eq!(kind(cfg, cfg.entry), NodeKind::Entry);
        assert_eq!(kind(cfg, cfg.exit), NodeKind::Exit);
        for (i, n) in cfg.nodes.iter().enumerate() {
            let (p, s) = (n.preds.len(), n.succs.len());
            match n.kind {
                NodeKind::Entry => assert_eq!((p, s), (0, 1), "ENTRY {i}"),
                NodeKind::Exit => assert_eq!((p, s), (1, 0), "EXIT {i}"),
                NodeKind::BasicBlock => {
                    assert_eq!((p, s), (1, 1), "BASICBLOCK {i}");
                    assert!(!n.stmts.is_empty());
                }
                NodeKind::EndLoop => {
                    assert_eq!((p, s), (1, 1), "ENDLOOP {i}");
                    let lp = n.partner.expect("ENDLOOP partner");
                    assert_eq!(kind(cfg, lp), NodeKind::Loop);
                    assert_eq!(n.succs[0], (lp, EdgeKind::Back));
                }
                NodeKind::Loop => {
                    assert_eq!((p, s), (2, 2), "LOOP {i}");
                    let labels: Vec<EdgeKind> = n.succs.iter().map(|e| e.1).collect();
                    assert!(labels.contains(&EdgeKind::Body));
                    assert!(labels.contains(&EdgeKind::LoopExit));
                    let end = n.partner.expect("LOOP partner");
                    assert_eq!(kind(cfg, end), NodeKind::EndLoop);
                    assert!(n.preds.contains(&end));
                }
                NodeKind::Branch => {
                    assert_eq!(p, 1, "BRANCH {i}");
                    assert!(s >= 2, "BRANCH {i} has {s} arms");
                    let mut labels: Vec<u32> = n
                        .succs
                        .iter()
                        .map(|e| match e.1 {
                            EdgeKind::Arm(k) => k,
                            other => panic!("BRANCH edge {other:?}"),
                        })
                        .collect();
                    labels.sort();
                    let expected: Vec<u32> = (1..=s as u32).collect();
                    assert_eq!(labels, expected, "arm labels distinct, 1..=n");
                    let end = n.partner.expect("BRANCH partner");
                    assert_eq!(kind(cfg, end), NodeKind::EndBranch);
                    assert_eq!(cfg.node(end).preds.len(), s, "one pred per arm");
                }
                NodeKind::EndBranch => {
                    assert_eq!(s, 1, "ENDBRANCH {i}");
                    assert!(n.partner.is_some());
                }
            }
        }
        let order = check_topological(cfg);
        let mut pos: IdVec<NodeId, usize> = IdVec::from_elem(0, cfg.nodes.len());
        for (k, n) in order.iter().enumerate() {
            pos[*n] = k;
        }
        for (i, n) in cfg.nodes.iter_enumerated() {
            for (s, k) in &n.succs {
                if *k != EdgeKind::Back {
                    assert!(pos[i] < pos[*s], "edge {} -> {} against order", i.0, s.0);
                }
            }
        }
    }

    #[test]
    fn straight_line() {
        let mut t = T::default();
        let a = t.a();
        let b = t.a();
        let c = t.a();
        let cfg = t.cfg(vec![a, b, c]);
        assert_eq!(kinds(&cfg), ["ENTRY", "BASICBLOCK", "EXIT"]);
        assert_eq!(cfg.entry, NodeId(0));
        assert_eq!(cfg.exit, NodeId(2));
        assert_eq!(cfg.node(NodeId(1)).stmts, vec![a, b, c]);
        assert_eq!(succs(&cfg, NodeId(0)), vec![(NodeId(1), EdgeKind::Seq)]);
        assert_eq!(succs(&cfg, NodeId(1)), vec![(NodeId(2), EdgeKind::Seq)]);
        check_definition1(&cfg);
        assert_eq!(
            cfg.topological_order(),
            vec![NodeId(0), NodeId(1), NodeId(2)]
        );
    }

    #[test]
    fn empty_unit() {
        let cfg = T::default().cfg(vec![]);
        assert_eq!(kinds(&cfg), ["ENTRY", "EXIT"]);
        assert_eq!(succs(&cfg, cfg.entry), vec![(cfg.exit, EdgeKind::Seq)]);
        check_definition1(&cfg);
        // The default graph is empty and does not panic either.
        assert!(Cfg::default().topological_order().is_empty());
    }

    #[test]
    fn if_else() {
        let mut t = T::default();
        let a = t.a();
        let x = t.a();
        let y = t.a();
        let i = t.if_(vec![vec![x]], Some(vec![y]));
        let b = t.a();
        let cfg = t.cfg(vec![a, i, b]);
        assert_eq!(
            kinds(&cfg),
            [
                "ENTRY",
                "BASICBLOCK",
                "BRANCH",
                "BASICBLOCK",
                "BASICBLOCK",
                "ENDBRANCH",
                "BASICBLOCK",
                "EXIT"
            ]
        );
        let br = at(&cfg, i);
        assert_eq!(cfg.node(br).stmts, vec![i]);
        assert_eq!(
            succs(&cfg, br),
            vec![
                (at(&cfg, x), EdgeKind::Arm(1)),
                (at(&cfg, y), EdgeKind::Arm(2))
            ]
        );
        let end = cfg.node(br).partner.unwrap();
        assert_eq!(cfg.node(end).stmts, vec![i]);
        assert_eq!(cfg.node(end).preds, vec![at(&cfg, x), at(&cfg, y)]);
        assert_eq!(succs(&cfg, end), vec![(at(&cfg, b), EdgeKind::Seq)]);
        check_definition1(&cfg);
    }

    #[test]
    fn if_without_else() {
        let mut t = T::default();
        let x = t.a();
        let i = t.if_(vec![vec![x]], None);
        let cfg = t.cfg(vec![i]);
        let br = at(&cfg, i);
        let end = cfg.node(br).partner.unwrap();
        assert_eq!(
            succs(&cfg, br),
            vec![(at(&cfg, x), EdgeKind::Arm(1)), (end, EdgeKind::Arm(2))]
        );
        assert_eq!(succs(&cfg, end), vec![(cfg.exit, EdgeKind::Seq)]);
        check_definition1(&cfg);
    }

    #[test]
    fn else_if_chain_with_empty_arm() {
        let mut t = T::default();
        let x = t.a();
        let y = t.a();
        let i = t.if_(vec![vec![x], vec![]], Some(vec![y]));
        let cfg = t.cfg(vec![i]);
        let br = at(&cfg, i);
        let end = cfg.node(br).partner.unwrap();
        assert_eq!(
            succs(&cfg, br),
            vec![
                (at(&cfg, x), EdgeKind::Arm(1)),
                (end, EdgeKind::Arm(2)),
                (at(&cfg, y), EdgeKind::Arm(3))
            ]
        );
        check_definition1(&cfg);
    }

    #[test]
    fn one_line_if() {
        let mut t = T::default();
        let x = t.a();
        let i = t.if1(x);
        let cfg = t.cfg(vec![i]);
        assert_eq!(
            kinds(&cfg),
            ["ENTRY", "BRANCH", "BASICBLOCK", "ENDBRANCH", "EXIT"]
        );
        check_definition1(&cfg);
    }

    #[test]
    fn select_case() {
        // Without default: an extra arm straight to ENDBRANCH.
        let mut t = T::default();
        let x = t.a();
        let y = t.a();
        let s = t.select(vec![vec![x], vec![y]], false);
        let cfg = t.cfg(vec![s]);
        let br = at(&cfg, s);
        let end = cfg.node(br).partner.unwrap();
        assert_eq!(
            succs(&cfg, br),
            vec![
                (at(&cfg, x), EdgeKind::Arm(1)),
                (at(&cfg, y), EdgeKind::Arm(2)),
                (end, EdgeKind::Arm(3))
            ]
        );
        check_definition1(&cfg);

        // With default: one arm per case.
        let mut t = T::default();
        let x = t.a();
        let y = t.a();
        let s = t.select(vec![vec![x], vec![], vec![y]], true);
        let cfg = t.cfg(vec![s]);
        let br = at(&cfg, s);
        let end = cfg.node(br).partner.unwrap();
        assert_eq!(
            succs(&cfg, br),
            vec![
                (at(&cfg, x), EdgeKind::Arm(1)),
                (end, EdgeKind::Arm(2)),
                (at(&cfg, y), EdgeKind::Arm(3))
            ]
        );
        check_definition1(&cfg);
    }

    #[test]
    fn nested_loops() {
        let mut t = T::default();
        let a = t.a();
        let b = t.a();
        let inner = t.do_(None, vec![b]);
        let c = t.a();
        let outer = t.do_(None, vec![a, inner, c]);
        let cfg = t.cfg(vec![outer]);
        assert_eq!(
            kinds(&cfg),
            [
                "ENTRY",
                "LOOP",
                "BASICBLOCK",
                "LOOP",
                "BASICBLOCK",
                "ENDLOOP",
                "BASICBLOCK",
                "ENDLOOP",
                "EXIT"
            ]
        );
        for lp in [at(&cfg, outer), at(&cfg, inner)] {
            let n = cfg.node(lp);
            assert_eq!(n.preds.len(), 2);
            assert_eq!(n.succs.len(), 2);
            let end = n.partner.unwrap();
            assert_eq!(cfg.node(end).preds.len(), 1);
            assert_eq!(succs(&cfg, end), vec![(lp, EdgeKind::Back)]);
            assert_eq!(cfg.node(end).stmts, n.stmts);
        }
        let il = at(&cfg, inner);
        assert_eq!(
            succs(&cfg, il),
            vec![
                (at(&cfg, b), EdgeKind::Body),
                (at(&cfg, c), EdgeKind::LoopExit)
            ]
        );
        let ol = at(&cfg, outer);
        assert_eq!(succs(&cfg, ol)[1], (cfg.exit, EdgeKind::LoopExit));
        check_definition1(&cfg);
        let order = cfg.topological_order();
        assert_eq!(order, (0..9).map(NodeId).collect::<Vec<_>>());
    }

    #[test]
    fn empty_loop_body() {
        let mut t = T::default();
        let d = t.do_(None, vec![]);
        let cfg = t.cfg(vec![d]);
        assert_eq!(kinds(&cfg), ["ENTRY", "LOOP", "ENDLOOP", "EXIT"]);
        let lp = at(&cfg, d);
        assert_eq!(
            succs(&cfg, lp),
            vec![(NodeId(2), EdgeKind::Body), (cfg.exit, EdgeKind::LoopExit)]
        );
        check_definition1(&cfg);
    }

    /// Paper 001's example (Figure 2 (a)):
    /// ```text
    /// i=1; do while (i<3); if (i<2) then; y(2)=sin(x(1)); else;
    /// y(1)=cos(x(2)); end if; i=i+1; end do; y(3)=y(1)*y(2)
    /// ```
    /// The paper's G has 12 vertices; its vertex 3 is a block the Open64
    /// front end adds for the loop condition, which dfort does not, so ours
    /// has 11, in the same order.
    #[test]
    fn paper_figure_2() {
        let mut t = T::default();
        let i1 = t.a();
        let y2 = t.a();
        let y1 = t.a();
        let br = t.if_(vec![vec![y2]], Some(vec![y1]));
        let inc = t.a();
        let lp = t.do_(None, vec![br, inc]);
        let y3 = t.a();
        let cfg = t.cfg(vec![i1, lp, y3]);
        assert_eq!(
            kinds(&cfg),
            [
                "ENTRY",
                "BASICBLOCK",
                "LOOP",
                "BRANCH",
                "BASICBLOCK",
                "BASICBLOCK",
                "ENDBRANCH",
                "BASICBLOCK",
                "ENDLOOP",
                "BASICBLOCK",
                "EXIT"
            ]
        );
        check_definition1(&cfg);
        let order = cfg.topological_order();
        let pos = |n: NodeId| order.iter().position(|&m| m == n).unwrap();
        let b = at(&cfg, br);
        let eb = cfg.node(b).partner.unwrap();
        assert!(pos(eb) > pos(at(&cfg, y2)));
        assert!(pos(eb) > pos(at(&cfg, y1)));
        let l = at(&cfg, lp);
        let el = cfg.node(l).partner.unwrap();
        let after = cfg
            .node(l)
            .succs
            .iter()
            .find(|e| e.1 == EdgeKind::LoopExit)
            .unwrap()
            .0;
        assert_eq!(after, at(&cfg, y3));
        assert!(pos(el) < pos(after));
        assert_eq!(
            order
                .iter()
                .map(|&n| kind(&cfg, n).as_str())
                .collect::<Vec<_>>(),
            kinds(&cfg)
        );
    }

    #[test]
    fn algorithm1_puts_endbranch_after_longer_arm() {
        // if { a } else { b; do { c } ; d }: the ENDBRANCH is reached first
        // from arm 1, yet comes after everything in arm 2.
        let mut t = T::default();
        let a = t.a();
        let b = t.a();
        let c = t.a();
        let d0 = t.do_(None, vec![c]);
        let d = t.a();
        let i = t.if_(vec![vec![a]], Some(vec![b, d0, d]));
        let z = t.a();
        let cfg = t.cfg(vec![i, z]);
        check_definition1(&cfg);
        let order = cfg.topological_order();
        let eb = cfg.node(at(&cfg, i)).partner.unwrap();
        let pos = |n: NodeId| order.iter().position(|&m| m == n).unwrap();
        for s in [a, b, c, d] {
            assert!(pos(at(&cfg, s)) < pos(eb));
        }
        assert_eq!(pos(at(&cfg, z)), pos(eb) + 1);
    }

    #[test]
    fn goto_backwards_forms_a_loop() {
        // 10 a = ...; b = ...; go to 10; c = ... (unreachable)
        let mut t = T::default();
        let pre = t.a();
        let l10 = t.la(10);
        let b = t.a();
        let g = t.goto(10);
        let c = t.a();
        let cfg = t.cfg(vec![pre, l10, b, g, c]);
        check_consistent(&cfg);
        assert!(!cfg.structured);
        assert_eq!(cfg.jumps.len(), 1);
        assert_eq!(cfg.jumps[0].stmt, g);
        assert_eq!(cfg.jumps[0].reason, "go to");
        assert_eq!(
            cfg.jumps[0].span.range,
            TextRange {
                start: g.0,
                end: g.0 + 1
            }
        );
        // The labelled statement starts a new block holding the GO TO.
        assert_ne!(at(&cfg, pre), at(&cfg, l10));
        let target = at(&cfg, l10);
        assert_eq!(at(&cfg, b), target);
        assert_eq!(at(&cfg, g), target);
        assert_eq!(cfg.node(target).stmts, vec![l10, b, g]);
        assert_eq!(succs(&cfg, target), vec![(target, EdgeKind::Jump)]);
        assert_eq!(cfg.node(target).preds, vec![at(&cfg, pre), target]);
        // Unreachable code after the GO TO: a block of its own, no preds,
        // falling through to EXIT.
        let dead = at(&cfg, c);
        assert!(cfg.node(dead).preds.is_empty());
        assert_eq!(succs(&cfg, dead), vec![(cfg.exit, EdgeKind::Seq)]);
        // Unreachable nodes (the dead block, and EXIT, only reached from
        // it) come last in id order.
        let order = check_topological(&cfg);
        assert_eq!(order[order.len() - 2..], [dead, cfg.exit]);
    }

    #[test]
    fn unreachable_code_after_goto() {
        let mut t = T::default();
        let g = t.goto(20);
        let dead1 = t.a();
        let dead2 = t.a();
        let l20 = t.la(20);
        let cfg = t.cfg(vec![g, dead1, dead2, l20]);
        check_consistent(&cfg);
        assert!(!cfg.structured);
        let dead = at(&cfg, dead1);
        assert_eq!(at(&cfg, dead2), dead);
        assert!(cfg.node(dead).preds.is_empty());
        let target = at(&cfg, l20);
        assert_ne!(dead, target);
        assert_eq!(succs(&cfg, at(&cfg, g)), vec![(target, EdgeKind::Jump)]);
        let mut preds = cfg.node(target).preds.clone();
        preds.sort();
        assert_eq!(preds, vec![at(&cfg, g), dead]);
        // Every statement of the tree has a node.
        assert!(cfg.stmt_node.iter().all(|n| n.is_some()));
        check_topological(&cfg);
    }

    #[test]
    fn computed_goto() {
        // go to (10, 20, 10) i; a; 10 b; 20 c
        let mut t = T::default();
        let cg = t.push(
            None,
            StmtKind::ComputedGoto {
                targets: vec![10, 20, 10],
                index: e(),
            },
        );
        let a = t.a();
        let b = t.la(10);
        let c = t.la(20);
        let cfg = t.cfg(vec![cg, a, b, c]);
        check_consistent(&cfg);
        assert!(!cfg.structured);
        assert_eq!(cfg.jumps.len(), 1);
        assert_eq!(cfg.jumps[0].reason, "computed go to");
        let from = at(&cfg, cg);
        assert_eq!(
            succs(&cfg, from),
            vec![
                (at(&cfg, a), EdgeKind::Seq),
                (at(&cfg, b), EdgeKind::Jump),
                (at(&cfg, c), EdgeKind::Jump),
                (at(&cfg, b), EdgeKind::Jump)
            ]
        );
        assert_eq!(cfg.node(at(&cfg, b)).preds, vec![at(&cfg, a), from, from]);
        check_topological(&cfg);
    }

    #[test]
    fn io_branches_are_jumps() {
        // read(1, *, end=10) x; a; 10 b
        let mut t = T::default();
        let rd = t.push(
            None,
            StmtKind::Io {
                kind: IoKind::Read,
                unit: IoUnit::Number(1),
                formatted: true,
                reads: vec![],
                writes: vec![],
                text: "read(1, *, end=10) x".into(),
                branches: vec![10],
                namelist: false,
            },
        );
        let a = t.a();
        let b = t.la(10);
        let cfg = t.cfg(vec![rd, a, b]);
        check_consistent(&cfg);
        assert!(!cfg.structured);
        assert_eq!(cfg.jumps[0].reason, "I/O branch");
        let from = at(&cfg, rd);
        assert_eq!(
            succs(&cfg, from),
            vec![(at(&cfg, a), EdgeKind::Seq), (at(&cfg, b), EdgeKind::Jump)]
        );
        check_topological(&cfg);
    }

    #[test]
    fn arithmetic_if() {
        // if (x) 10, 20, 10; a (dead); 10 b; 20 c
        let mut t = T::default();
        let ai = t.push(
            None,
            StmtKind::ArithmeticIf {
                expr: e(),
                negative: 10,
                zero: 20,
                positive: 10,
            },
        );
        let a = t.a();
        let b = t.la(10);
        let c = t.la(20);
        let cfg = t.cfg(vec![ai, a, b, c]);
        check_consistent(&cfg);
        assert!(!cfg.structured);
        assert_eq!(cfg.jumps[0].reason, "arithmetic if");
        let from = at(&cfg, ai);
        assert_eq!(
            succs(&cfg, from),
            vec![(at(&cfg, b), EdgeKind::Jump), (at(&cfg, c), EdgeKind::Jump)]
        );
        assert!(cfg.node(at(&cfg, a)).preds.is_empty());
        check_topological(&cfg);
    }

    #[test]
    fn exit_and_cycle_in_named_nested_loops() {
        // outer: do
        //   inner: do
        //     if (p) exit outer
        //     if (q) cycle outer
        //     if (r) exit
        //     a
        //   end do inner
        //   b
        // end do outer
        // z
        let mut t = T::default();
        let ex = t.exit(Some("outer"));
        let if_ex = t.if1(ex);
        let cy = t.cycle(Some("outer"));
        let if_cy = t.if1(cy);
        let ex2 = t.exit(None);
        let if_ex2 = t.if1(ex2);
        let a = t.a();
        let inner = t.do_(Some("inner"), vec![if_ex, if_cy, if_ex2, a]);
        let b = t.a();
        let outer = t.do_(Some("outer"), vec![inner, b]);
        let z = t.a();
        let cfg = t.cfg(vec![outer, z]);
        check_consistent(&cfg);
        assert!(!cfg.structured);
        let reasons: Vec<&str> = cfg.jumps.iter().map(|j| j.reason.as_str()).collect();
        assert_eq!(reasons, ["exit", "cycle", "exit"]);
        let ol = at(&cfg, outer);
        let il = at(&cfg, inner);
        let outer_end = cfg.node(ol).partner.unwrap();
        // EXIT outer lands after the outer loop.
        assert_eq!(
            succs(&cfg, at(&cfg, ex)),
            vec![(at(&cfg, z), EdgeKind::Jump)]
        );
        let mut zp = cfg.node(at(&cfg, z)).preds.clone();
        zp.sort();
        assert_eq!(zp, vec![ol, at(&cfg, ex)]);
        // CYCLE outer goes to the outer ENDLOOP.
        assert_eq!(succs(&cfg, at(&cfg, cy)), vec![(outer_end, EdgeKind::Jump)]);
        assert_eq!(cfg.node(outer_end).preds.len(), 2);
        // Unnamed EXIT leaves the innermost loop.
        assert_eq!(
            succs(&cfg, at(&cfg, ex2)),
            vec![(at(&cfg, b), EdgeKind::Jump)]
        );
        let mut bp = cfg.node(at(&cfg, b)).preds.clone();
        bp.sort();
        assert_eq!(bp, vec![il, at(&cfg, ex2)]);
        let order = check_topological(&cfg);
        let pos = |n: NodeId| order.iter().position(|&m| m == n).unwrap();
        assert!(pos(outer_end) < pos(at(&cfg, z)));
    }

    #[test]
    fn exit_outside_a_loop() {
        let mut t = T::default();
        let ex = t.exit(None);
        let cy = t.cycle(Some("nope"));
        let d = t.do_(None, vec![cy]);
        let cfg = t.cfg(vec![ex, d]);
        check_consistent(&cfg);
        assert!(!cfg.structured);
        assert_eq!(cfg.jumps.len(), 2);
        assert_eq!(cfg.jumps[0].reason, "exit outside a loop");
        assert!(succs(&cfg, at(&cfg, ex)).is_empty());
        check_topological(&cfg);
    }

    #[test]
    fn early_return() {
        // if (p) return; a
        let mut t = T::default();
        let r = t.ret();
        let i = t.if1(r);
        let a = t.a();
        let cfg = t.cfg(vec![i, a]);
        check_consistent(&cfg);
        assert!(!cfg.structured);
        assert_eq!(cfg.jumps.len(), 1);
        assert_eq!(cfg.jumps[0].stmt, r);
        assert_eq!(cfg.jumps[0].reason, "return before the end");
        assert_eq!(succs(&cfg, at(&cfg, r)), vec![(cfg.exit, EdgeKind::Jump)]);
        assert_eq!(cfg.node(cfg.exit).preds.len(), 2);
        check_topological(&cfg);

        // A STOP at the top level but not last, or inside an IF: a
        // statement of its block (a run that stops is never reversed).
        let mut t = T::default();
        let s = t.stop();
        let a = t.a();
        let cfg = t.cfg(vec![s, a]);
        check_consistent(&cfg);
        assert!(cfg.structured, "jumps: {:?}", cfg.jumps);
        assert_eq!(at(&cfg, s), at(&cfg, a));
        let mut t = T::default();
        let s = t.stop();
        let i = t.if_(vec![vec![s]], None);
        let a = t.a();
        let cfg = t.cfg(vec![i, a]);
        check_consistent(&cfg);
        assert!(cfg.structured, "jumps: {:?}", cfg.jumps);
        check_topological(&cfg);
    }

    #[test]
    fn final_return_is_structured() {
        let mut t = T::default();
        let x = t.a();
        let i = t.if_(vec![vec![x]], None);
        let a = t.a();
        let r = t.ret();
        let cfg = t.cfg(vec![i, a, r]);
        check_definition1(&cfg);
        let bb = at(&cfg, r);
        assert_eq!(cfg.node(bb).stmts, vec![a, r]);
        assert_eq!(succs(&cfg, bb), vec![(cfg.exit, EdgeKind::Seq)]);

        // A lone final STOP.
        let mut t = T::default();
        let s = t.stop();
        let cfg = t.cfg(vec![s]);
        check_definition1(&cfg);
        assert_eq!(kinds(&cfg), ["ENTRY", "BASICBLOCK", "EXIT"]);
    }

    #[test]
    fn goto_to_missing_label() {
        let mut t = T::default();
        let g = t.goto(999);
        let a = t.a();
        let cfg = t.cfg(vec![g, a]);
        check_consistent(&cfg);
        assert!(!cfg.structured);
        assert_eq!(cfg.jumps.len(), 1);
        assert!(succs(&cfg, at(&cfg, g)).is_empty());
        check_topological(&cfg);
    }

    #[test]
    fn goto_into_a_construct() {
        // go to 10; do; 10 a; end do
        let mut t = T::default();
        let g = t.goto(10);
        let a = t.la(10);
        let d = t.do_(None, vec![a]);
        let cfg = t.cfg(vec![g, d]);
        check_consistent(&cfg);
        assert_eq!(cfg.jumps[0].reason, "go to into a construct");
        assert_eq!(
            succs(&cfg, at(&cfg, g)),
            vec![(at(&cfg, a), EdgeKind::Jump)]
        );
    }

    #[test]
    fn goto_to_do_terminal_acts_like_cycle() {
        // do 10 i = ...; if (p) go to 10; a; 10 continue
        let mut t = T::default();
        let g = t.goto(10);
        let i = t.if1(g);
        let a = t.a();
        let c = t.cont(10);
        let d = t.do_label(10, vec![i, a, c]);
        let cfg = t.cfg(vec![d]);
        check_consistent(&cfg);
        assert_eq!(cfg.jumps.len(), 1);
        assert_eq!(cfg.jumps[0].reason, "go to");
        let term = at(&cfg, c);
        assert_ne!(term, at(&cfg, a));
        assert_eq!(succs(&cfg, at(&cfg, g)), vec![(term, EdgeKind::Jump)]);
        let end = cfg.node(at(&cfg, d)).partner.unwrap();
        assert_eq!(succs(&cfg, term), vec![(end, EdgeKind::Seq)]);
        check_topological(&cfg);
    }

    #[test]
    fn do_terminal_label_alone_does_not_split() {
        // do 10 i = ...; a; 10 b  (no GO TO): one block, structured.
        let mut t = T::default();
        let a = t.a();
        let b = t.la(10);
        let d = t.do_label(10, vec![a, b]);
        let cfg = t.cfg(vec![d]);
        check_definition1(&cfg);
        assert_eq!(at(&cfg, a), at(&cfg, b));
    }

    #[test]
    fn goto_targets_a_construct_and_labelled_goto() {
        // 10 if (p) then; a; end if; 20 go to 10; go to 20
        let mut t = T::default();
        let a = t.a();
        let i = t.push(
            Some(10),
            StmtKind::If {
                arms: vec![IfArm {
                    cond: e(),
                    body: vec![a],
                    span: Span::default(),
                }],
                else_body: None,
                one_line: false,
            },
        );
        let g1 = t.push(Some(20), StmtKind::Goto { target: 10 });
        let g2 = t.goto(20);
        let cfg = t.cfg(vec![i, g1, g2]);
        check_consistent(&cfg);
        assert_eq!(
            succs(&cfg, at(&cfg, g1)),
            vec![(at(&cfg, i), EdgeKind::Jump)]
        );
        assert_eq!(kind(&cfg, at(&cfg, i)), NodeKind::Branch);
        assert_ne!(at(&cfg, g1), at(&cfg, g2));
        assert_eq!(
            succs(&cfg, at(&cfg, g2)),
            vec![(at(&cfg, g1), EdgeKind::Jump)]
        );
        check_topological(&cfg);
    }

    #[test]
    fn robustness() {
        // Duplicated labels (first wins), ids out of range, a statement
        // listed twice, a loop that contains itself.
        let mut t = T::default();
        let a = t.la(10);
        let b = t.la(10);
        let g = t.goto(10);
        let self_loop = t.stmts.next_id();
        let d = t.do_(None, vec![self_loop, StmtId(1000)]);
        assert_eq!(d, self_loop);
        let cfg = t.cfg(vec![a, b, g, a, StmtId(77), d]);
        check_consistent(&cfg);
        assert_eq!(
            succs(&cfg, at(&cfg, g)),
            vec![(at(&cfg, a), EdgeKind::Jump)]
        );
        check_topological(&cfg);

        // 100 nested IFs and DOs, alternating.
        let mut t = T::default();
        let mut s = t.a();
        for k in 0..100 {
            s = if k % 2 == 0 {
                t.if_(vec![vec![s]], Some(vec![]))
            } else {
                t.do_(None, vec![s])
            };
        }
        let cfg = t.cfg(vec![s]);
        check_definition1(&cfg);
        assert_eq!(cfg.nodes.len(), 2 + 1 + 200);

        // A long unstructured chain does not overflow the stack.
        let mut t = T::default();
        let mut body = Vec::new();
        for k in 0..20_000u32 {
            body.push(t.goto(k + 1));
            body.push(t.la(k + 1));
        }
        let cfg = t.cfg(body);
        check_topological(&cfg);

        // A long structured chain either.
        let mut t = T::default();
        let body: Vec<StmtId> = (0..20_000)
            .map(|_| {
                let x = t.a();
                t.if1(x)
            })
            .collect();
        let cfg = t.cfg(body);
        check_definition1(&cfg);
    }
}
