//! Activity analysis (paper 000 §4.2): *varied* variables (depending on an
//! independent) propagated forward from the unit's entry, *useful*
//! variables (a dependent depends on them) propagated backward from its
//! exit, both with the general equations of Fig. 4 solved by
//! [`crate::engine`]. A variable is *active* at a point when it is both.
//!
//! Contract: only differentiable variables (real or complex) are ever
//! varied or useful. Within a statement the transfer is the instruction
//! rule of §4.2: `OutVary = InVary × Dep(I)`, `InUseful = Dep(I) ×
//! OutUseful`, with Dep(I) from the DP rules of §4.1 ([`dfort_ir::dp`]).
//! Partial writes (array elements, sections) keep the old dependencies
//! (the coarse array rule of §3). At a call the callee's Dep summary
//! ([`crate::dep`]) is applied (§4.2: `OutVary(I) = InVary(I) × Dep(S)`);
//! for a procedure without source, every actual it may modify depends on
//! every differentiable actual.

use crate::dep::{bind_call, space_of, Space, Summaries, Summary};
use crate::engine::{solve, Direction};
use dfort_ir::bitset::BitSet;
use dfort_ir::cfg::{Cfg, NodeKind};
use dfort_ir::dp::{differentiable, dp, dp_of, writes};
use dfort_ir::queries::function_references;
use dfort_ir::*;

/// Varied and useful sets just before and just after each statement,
/// indexed by `StmtId`.
#[derive(Clone, Debug, Default)]
pub struct Activity {
    pub varied_before: IdVec<StmtId, BitSet>,
    pub varied_after: IdVec<StmtId, BitSet>,
    pub useful_before: IdVec<StmtId, BitSet>,
    pub useful_after: IdVec<StmtId, BitSet>,
    /// Variables active somewhere in the unit ([`Activity::active_anywhere`]),
    /// computed once with the sets.
    pub anywhere: BitSet,
}

impl Activity {
    /// Whether the value `st` assigns to `s` is active (varied and useful
    /// just after the statement).
    pub fn active_after(&self, st: StmtId, s: SymbolId) -> bool {
        self.varied_after.get(st).is_some_and(|v| v.contains_id(s))
            && self.useful_after.get(st).is_some_and(|u| u.contains_id(s))
    }
    /// Whether `s` is useful just after `st` (its adjoint there may be
    /// nonzero).
    pub fn useful_after(&self, st: StmtId, s: SymbolId) -> bool {
        self.useful_after.get(st).is_some_and(|u| u.contains_id(s))
    }
    /// Whether `s` is active just before `st`.
    pub fn active_before(&self, st: StmtId, s: SymbolId) -> bool {
        self.varied_before.get(st).is_some_and(|v| v.contains_id(s))
            && self.useful_before.get(st).is_some_and(|u| u.contains_id(s))
    }
}

/// The variables through which a derivative reaches the call at `st`
/// with the actual arguments `args`: those of an actual's expression
/// active just before the call, and those an actual names (the call may
/// write them) active just after it — the one test of "an active actual"
/// the generators' refusals and the editor's diagnostic share. `unit` may
/// extend the analysed unit with temporaries (symbols from `analysed`
/// on, the generators' hoisted function results): they carry a
/// derivative only where one flows, so they count as active.
impl Activity {
    pub fn active_actuals(
        &self,
        unit: &Unit,
        analysed: usize,
        st: StmtId,
        args: &[Arg],
    ) -> Vec<SymbolId> {
        let act = self;
        let mut out: Vec<SymbolId> = Vec::new();
        let mut add = |s: SymbolId| {
            if !out.contains(&s) {
                out.push(s);
            }
        };
        for a in args {
            for s in dp_of(unit, &a.value).ids::<SymbolId>() {
                if s.index() >= analysed || act.active_before(st, s) {
                    add(s);
                }
            }
            if let Some((s, _)) = dfort_ir::dp::target(&a.value) {
                if differentiable(unit, s) && (s.index() >= analysed || act.active_after(st, s)) {
                    add(s);
                }
            }
        }
        out
    }
}

/// The statements whose effect a CFG node applies, in order. LOOP and
/// BRANCH nodes test their construct's header (no write that matters to
/// activity); ENDLOOP/ENDBRANCH only name the construct they close.
pub fn node_stmts(cfg: &Cfg, node: dfort_ir::cfg::NodeId) -> &[StmtId] {
    let n = cfg.node(node);
    match n.kind {
        NodeKind::BasicBlock => &n.stmts,
        _ => &[],
    }
}

/// What a unit's analysis needs to apply callee summaries.
pub struct Calls<'a> {
    pub summaries: &'a Summaries,
    pub space: Space,
}

impl Calls<'_> {
    fn summary(&self, st: &Stmt) -> Option<(UnitId, &Summary)> {
        match &st.kind {
            StmtKind::Call {
                target: CallTarget::Unit(c),
                ..
            } => Some((*c, self.summaries.get(*c)?.as_ref()?)),
            _ => None,
        }
    }
}

/// The varied set after `st` given the one before it, closed over the
/// unit's may-alias classes ([`crate::aliases`]: a write to one member is
/// a partial write to all).
pub(crate) fn varied_transfer(
    program: &Program,
    unit: &Unit,
    calls: &Calls,
    st: &Stmt,
    before: &BitSet,
) -> BitSet {
    let mut after = varied_through(program, unit, calls, st, before);
    crate::aliases::close(unit, &mut after);
    after
}

/// The varied set after a call bound by `binds` to the callee's Dep
/// summary `sum`, given the one before: each output the callee may write
/// is varied when what it depends on was (§4.2, `OutVary = InVary ×
/// Dep(S)`).
fn call_varied(binds: &[crate::dep::CallBinding], sum: &Summary, before: &BitSet) -> BitSet {
    let mut after = before.clone();
    let mut written = BitSet::default();
    let mut varied = BitSet::default();
    // The callee's inputs that receive a varied value, found once: a
    // model's calls bind hundreds of globals, each output depending on
    // many of them.
    let mut varied_inputs = BitSet::default();
    for (i, b) in binds.iter().enumerate() {
        if b.inputs.intersects(before) {
            varied_inputs.insert(i);
        }
    }
    for (o, b) in binds.iter().enumerate() {
        let Some(slot) = b.output else { continue };
        written.insert(slot);
        if b.keeps_old && before.contains(slot) || sum.dep[o].intersects(&varied_inputs) {
            varied.insert(slot);
        }
    }
    after.subtract(&written);
    after.union_with(&varied);
    after
}

/// The useful set before a call bound by `binds` to `sum`, given the one
/// after it (§4.2, `InUseful = Dep(S) × OutUseful`).
fn call_useful(binds: &[crate::dep::CallBinding], sum: &Summary, after: &BitSet) -> BitSet {
    let mut before = after.clone();
    let mut needed = BitSet::default();
    for (o, b) in binds.iter().enumerate() {
        let Some(slot) = b.output else { continue };
        if !after.contains(slot) {
            continue;
        }
        if b.keeps_old {
            needed.insert(slot);
        }
        for i in sum.dep[o].iter() {
            needed.union_with(&binds[i].inputs);
        }
    }
    for b in binds {
        if let (Some(slot), false) = (b.output, b.keeps_old) {
            before.remove(slot);
        }
    }
    before.union_with(&needed);
    before
}

/// `call move_alloc(from, to)` as the analyses see it: the variables
/// `from` and `to` (`to = from`, then `from` undefined).
pub fn moved(st: &Stmt) -> Option<(SymbolId, SymbolId)> {
    let (from, to) = dfort_ir::intrinsics::move_alloc(&st.kind)?;
    Some((dfort_ir::dp::target(from)?.0, dfort_ir::dp::target(to)?.0))
}

fn varied_through(
    program: &Program,
    unit: &Unit,
    calls: &Calls,
    st: &Stmt,
    before: &BitSet,
) -> BitSet {
    let mut after = before.clone();
    if let Some((from, to)) = moved(st) {
        after.remove_id(to);
        if before.contains_id(from) {
            after.insert_id(to);
        }
        after.remove_id(from);
        return after;
    }
    if let (Some((c, sum)), StmtKind::Call { args, .. }) = (calls.summary(st), &st.kind) {
        let binds = bind_call(program, unit, &calls.space, calls.summaries, c, args);
        return call_varied(&binds, sum, before);
    }
    match &st.kind {
        StmtKind::Assign { lhs, rhs } => {
            // The function references of the right-hand side run first
            // (innermost first), each like a CALL: what they change of
            // their arguments and globals, and whether their result
            // depends on something varied.
            let mut result_varied = false;
            for (c, args) in function_references(rhs) {
                let Some(sum) = calls.summaries.get(c).and_then(|s| s.as_ref()) else {
                    continue;
                };
                let binds = bind_call(program, unit, &calls.space, calls.summaries, c, args);
                result_varied |= sum
                    .result
                    .iter()
                    .any(|i| binds[i].inputs.intersects(&after));
                after = call_varied(&binds, sum, &after);
            }
            if let Some((t, whole)) = dfort_ir::dp::target(lhs) {
                if differentiable(unit, t) && (result_varied || dp_of(unit, rhs).intersects(&after))
                {
                    after.insert_id(t);
                } else if whole {
                    after.remove_id(t);
                }
            }
        }
        StmtKind::Call { args, .. } => {
            let mut inputs = BitSet::new(unit.symbols.len());
            for a in args {
                dp(unit, &a.value, &mut inputs);
            }
            if inputs.intersects(before) {
                for (s, _) in writes(program, unit, st) {
                    if differentiable(unit, s) {
                        after.insert_id(s);
                    }
                }
            }
        }
        StmtKind::Io { .. } => {
            for (s, whole) in writes(program, unit, st) {
                if whole {
                    after.remove_id(s);
                }
            }
        }
        _ => {}
    }
    after
}

/// The useful set before `st` given the one after it, closed over the
/// unit's may-alias classes.
fn useful_transfer(
    program: &Program,
    unit: &Unit,
    calls: &Calls,
    st: &Stmt,
    after: &BitSet,
) -> BitSet {
    let mut before = useful_through(program, unit, calls, st, after);
    crate::aliases::close(unit, &mut before);
    before
}

fn useful_through(
    program: &Program,
    unit: &Unit,
    calls: &Calls,
    st: &Stmt,
    after: &BitSet,
) -> BitSet {
    let mut before = after.clone();
    if let Some((from, to)) = moved(st) {
        before.remove_id(from);
        if after.contains_id(to) {
            before.insert_id(from);
        }
        before.remove_id(to);
        return before;
    }
    if let (Some((c, sum)), StmtKind::Call { args, .. }) = (calls.summary(st), &st.kind) {
        let binds = bind_call(program, unit, &calls.space, calls.summaries, c, args);
        return call_useful(&binds, sum, after);
    }
    match &st.kind {
        StmtKind::Assign { lhs, rhs } => {
            let mut value_useful = false;
            if let Some((t, whole)) = dfort_ir::dp::target(lhs) {
                let was_useful = after.contains_id(t);
                if whole {
                    before.remove_id(t);
                }
                if was_useful && differentiable(unit, t) {
                    dp(unit, rhs, &mut before);
                    value_useful = true;
                }
            }
            // The function references, last evaluated first: what their
            // side effects make useful, then what their result reads.
            for (c, args) in function_references(rhs).into_iter().rev() {
                let Some(sum) = calls.summaries.get(c).and_then(|s| s.as_ref()) else {
                    continue;
                };
                let binds = bind_call(program, unit, &calls.space, calls.summaries, c, args);
                before = call_useful(&binds, sum, &before);
                if value_useful {
                    for i in sum.result.iter() {
                        before.union_with(&binds[i].inputs);
                    }
                }
            }
        }
        StmtKind::Call { args, .. } => {
            let written = writes(program, unit, st);
            if written.iter().any(|(s, _)| after.contains_id(*s)) {
                for a in args {
                    dp(unit, &a.value, &mut before);
                }
            }
        }
        StmtKind::Io { .. } => {
            for (s, whole) in writes(program, unit, st) {
                if whole {
                    before.remove_id(s);
                }
            }
        }
        _ => {}
    }
    before
}

/// Runs activity analysis on one unit given its independent and dependent
/// variables (slots: symbol indices, then globals known through callees)
/// and the Dep summaries of its callees. With `seed`, the slots it holds
/// become varied after its statement (a root whose independents take
/// their values from an initialisation call) and are not varied before.
pub fn analyze(
    program: &Program,
    unit: &Unit,
    summaries: &Summaries,
    independents: &BitSet,
    dependents: &BitSet,
    seed: Option<(StmtId, &BitSet)>,
) -> Activity {
    let calls = &Calls {
        summaries,
        space: space_of(program, unit, summaries),
    };
    let cfg = &unit.cfg;
    let n = unit.stmts.len();
    let mut act = Activity {
        varied_before: IdVec::from_elem(BitSet::default(), n),
        varied_after: IdVec::from_elem(BitSet::default(), n),
        useful_before: IdVec::from_elem(BitSet::default(), n),
        useful_after: IdVec::from_elem(BitSet::default(), n),
        anywhere: BitSet::default(),
    };
    // A class holding an independent (a dependent) holds it whole.
    let (mut independents, mut dependents) = (independents.clone(), dependents.clone());
    crate::aliases::close(unit, &mut independents);
    crate::aliases::close(unit, &mut dependents);
    let seed = seed.map(|(at, slots)| {
        let mut slots = slots.clone();
        crate::aliases::close(unit, &mut slots);
        (at, slots)
    });
    let transfer = |st: &Stmt, s: &BitSet| {
        let mut out = varied_transfer(program, unit, calls, st, s);
        if let Some((at, slots)) = &seed {
            if *at == st.id {
                out.union_with(slots);
            }
        }
        out
    };
    let varied = solve(cfg, Direction::Forward, &independents, |node, input| {
        let mut s = input.clone();
        for id in node_stmts(cfg, node) {
            s = transfer(unit.stmt(*id), &s);
        }
        s
    });
    let useful = solve(cfg, Direction::Backward, &dependents, |node, output| {
        let mut s = output.clone();
        for id in node_stmts(cfg, node).iter().rev() {
            s = useful_transfer(program, unit, calls, unit.stmt(*id), &s);
        }
        s
    });
    // Per-statement sets, replayed inside each node.
    for (i, node) in cfg.nodes.iter_enumerated() {
        match node.kind {
            NodeKind::BasicBlock => {
                let mut s = varied.before[i].clone();
                for &id in &node.stmts {
                    act.varied_before[id] = s.clone();
                    s = transfer(unit.stmt(id), &s);
                    act.varied_after[id] = s.clone();
                }
                let mut s = useful.after[i].clone();
                for &id in node.stmts.iter().rev() {
                    act.useful_after[id] = s.clone();
                    s = useful_transfer(program, unit, calls, unit.stmt(id), &s);
                    act.useful_before[id] = s.clone();
                }
            }
            NodeKind::Loop | NodeKind::Branch => {
                for &k in &node.stmts {
                    act.varied_before[k] = varied.before[i].clone();
                    act.varied_after[k] = varied.after[i].clone();
                    act.useful_before[k] = useful.before[i].clone();
                    act.useful_after[k] = useful.after[i].clone();
                }
            }
            _ => {}
        }
    }
    act.anywhere = anywhere(unit, &act);
    act
}

impl Activity {
    /// Variables active somewhere in the unit: active just before or just
    /// after some statement, or varied at entry and useful there (for units
    /// whose independents are read without being written).
    pub fn active_anywhere(&self) -> BitSet {
        self.anywhere.clone()
    }
}

/// [`Activity::active_anywhere`], from the per-statement sets.
fn anywhere(unit: &Unit, act: &Activity) -> BitSet {
    let mut out = BitSet::new(unit.symbols.len());
    for i in unit.stmts.indices() {
        for (v, u) in [
            (&act.varied_before[i], &act.useful_before[i]),
            (&act.varied_after[i], &act.useful_after[i]),
        ] {
            // The unit's own symbols (not the globals only its callees
            // see).
            for s in v.iter().take_while(|s| *s < unit.symbols.len()) {
                if u.contains(s) {
                    out.insert(s);
                }
            }
        }
    }
    out
}
