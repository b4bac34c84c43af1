//! Control-flow reversal (paper 001, Naumann, Utke, Lyons, Fagan: the
//! structured reversal of Algorithm 5 and the basic-block fallback): how
//! the adjoint runs each construct of a unit backwards, decided once for
//! the generator and the editor's hints.
//!
//! Contract: given a prepared unit (statement functions inlined, EXIT and
//! CYCLE structured where that makes it structured, [`crate::prepare`]),
//! [`of`] says whether the unit is reversed through basic-block ids (its
//! control flow is not structured: the forward sweep records each block it
//! leaves) and, in a structured unit, how each IF, SELECT CASE and DO is
//! reversed: a counted DO is replayed from its bounds (refused when the
//! body changes a bound), a counted WHILE ([`crate::counted_while`]) gets
//! its trip count from its bound, every other loop — a DO WHILE, a DO
//! without control, a loop left by EXIT (structured into a DO WHILE on a
//! flag, inside an always-taken IF that records nothing) — pushes its
//! trip count, and an IF or SELECT CASE pushes the arm taken — unless
//! none of its arms gives the reverse sweep anything to do, which
//! [`crate::decisions`] finds once TBR's records and the activity are
//! known ([`UnitReversal::skip_idle_branches`]): then it records nothing. A unit
//! reversed by blocks (GO TO, computed GO TO, arithmetic IF, or an EXIT,
//! CYCLE or RETURN the structuring cannot remove) records the id of each
//! basic block whose adjoint does work as the block is left; its
//! constructs record nothing of their own but a WHERE's masks, which are
//! pushed. A counted DO marked `!$ad binomial-ckp(nsnap)` is reversed
//! from snapshots with a binomial schedule ([`crate::binomial`] decides
//! what they hold, or why the loop cannot be checkpointed); a directive
//! that marks no counted DO is refused where it is written.
//! A WHERE's masks are evaluated again in the reverse sweep when
//! nothing they read can change once it starts, and pushed otherwise
//! ([`unchanged_from`]); so are the conditions of an IF and the selector of
//! a SELECT CASE that would push their arm, once [`crate::decisions`]
//! has found which have nothing to reverse
//! ([`UnitReversal::recompute_branches`]). Statement ids are those of the
//! prepared unit, which keeps the original statements' ids.
//! Analysis only: no I/O, no panics on user input.

use crate::binomial::Binomial;
use crate::counted_while::CountedWhile;
use crate::effects::{stmt_effects, LocalEffects, ProgramEffects};
use crate::shape::UnitShape;
use dfort_ir::bitset::BitSet;
use dfort_ir::dp::{all_writes, bound_vars, WriteBy};
use dfort_ir::{
    CallTarget, DoControl, ExprKind, Program, StmtId, StmtKind, SymbolId, UnaryOp, Unit,
};
use dfort_syntax::rules::{Rule, BINOMIAL_CHECKPOINT, BOUNDS_CHANGE_INSIDE};
use std::collections::HashMap;

/// How one construct is reversed.
#[derive(Clone, Debug)]
pub enum Reversal {
    /// A counted DO loop replayed backwards from its bounds: nothing per
    /// iteration is recorded.
    Replay { index: SymbolId },
    /// A DO WHILE loop whose trip count is computed from its bound.
    CountedWhile(CountedWhile),
    /// A loop whose trips the forward sweep counts and pushes.
    PushTrips,
    /// An IF or SELECT CASE whose arm the forward sweep pushes.
    PushBranch,
    /// An IF or SELECT CASE whose arms' adjoints do nothing (no statement
    /// in them has an adjoint, a record, an inversion or a call): the
    /// forward sweep records no arm and the reverse sweep skips it
    /// ([`UnitReversal::skip_idle_branches`]).
    NothingToReverse,
    /// A DO loop left by EXIT, which the structuring turned into an
    /// always-taken IF around a DO WHILE on a flag: the IF records
    /// nothing, the DO WHILE its trip count.
    LeftByExit,
    /// A counted DO loop whose body changes one of its bounds: not
    /// reversed (the generator refuses it).
    BoundsChangeInside,
    /// A WHERE whose masks the reverse sweep evaluates again: nothing
    /// they read can change once the construct starts.
    MaskRecomputed,
    /// An IF or SELECT CASE whose conditions (selector) the reverse sweep
    /// evaluates again to take the same arm backwards: nothing they read
    /// can change once the construct starts, so nothing is recorded.
    BranchRecomputed,
    /// A WHERE whose masks the forward sweep pushes (64 elements a tape
    /// slot) after each arm, and the reverse sweep pops.
    MaskPushed,
    /// A counted DO loop marked `binomial-ckp`: run without recording in
    /// the forward sweep, reversed step by step from snapshots
    /// ([`crate::binomial`]).
    Binomial(Box<Binomial>),
    /// A loop marked `binomial-ckp` that cannot be checkpointed: why.
    BinomialRefused(String),
}

impl Reversal {
    /// The name `dfort analyze --format json` gives the strategy.
    pub fn kind(&self) -> &'static str {
        match self {
            Reversal::Replay { .. } => "replay",
            Reversal::CountedWhile(_) => "counted-while",
            Reversal::PushTrips => "push-trips",
            Reversal::PushBranch => "push-branch",
            Reversal::NothingToReverse => "nothing-to-reverse",
            Reversal::LeftByExit => "left-by-exit",
            Reversal::BoundsChangeInside => "bounds-change-inside",
            Reversal::MaskRecomputed => "mask-recomputed",
            Reversal::BranchRecomputed => "branch-recomputed",
            Reversal::MaskPushed => "mask-pushed",
            Reversal::Binomial(_) => "binomial-checkpointed",
            Reversal::BinomialRefused(_) => "binomial-refused",
        }
    }
    /// Why the adjoint cannot reverse the construct, if it cannot: the
    /// rule and the sentence.
    pub fn refusal(&self) -> Option<(&'static Rule, String)> {
        match self {
            Reversal::BoundsChangeInside => Some((
                &BOUNDS_CHANGE_INSIDE,
                "this DO loop's bounds change inside it; its reversal is not supported yet".into(),
            )),
            Reversal::BinomialRefused(why) => Some((
                &BINOMIAL_CHECKPOINT,
                format!("this loop cannot be checkpointed as `binomial-ckp` asks: {why}"),
            )),
            _ => None,
        }
    }
}

/// The reversal of one unit.
#[derive(Clone, Debug, Default)]
pub struct UnitReversal {
    /// The unit's control flow is not structured: it is reversed through
    /// basic-block ids.
    pub by_blocks: bool,
    /// Each construct's reversal, by statement.
    pub constructs: HashMap<StmtId, Reversal>,
    /// `binomial-ckp` directives that mark no loop, or ask for no valid
    /// number of snapshots: where, and why.
    pub misplaced_marks: Vec<(dfort_ir::Span, String)>,
    /// `binomial-ckp` directives and the counted DO loop each marks (its
    /// reversal is `Binomial` or `BinomialRefused`).
    pub marked_loops: Vec<(dfort_ir::Span, StmtId)>,
}

impl UnitReversal {
    pub fn of_stmt(&self, id: StmtId) -> Option<&Reversal> {
        self.constructs.get(&id)
    }

    /// Turns each IF and SELECT CASE that pushes its arm into
    /// [`Reversal::NothingToReverse`] when neither it nor any statement in
    /// its arms gives the reverse sweep work: `works(id)` says whether
    /// statement `id` itself does (an IF or SELECT CASE: its own
    /// conditions; nested constructs are decided first, inner ones
    /// before the ones holding them).
    pub fn skip_idle_branches(&mut self, unit: &Unit, works: impl Fn(StmtId) -> bool) {
        if self.by_blocks {
            return;
        }
        let branches = self.pushing_branches();
        inner_first(branches, |id| {
            let st = unit.stmt(id);
            let idle = !works(id)
                && st.kind.blocks().into_iter().flatten().all(|&c| {
                    match (&unit.stmt(c).kind, self.constructs.get(&c)) {
                        (StmtKind::If { .. } | StmtKind::SelectCase { .. }, r) => {
                            matches!(r, Some(Reversal::NothingToReverse))
                        }
                        _ => !works(c),
                    }
                });
            if idle {
                self.constructs.insert(id, Reversal::NothingToReverse);
            }
            idle
        });
    }

    /// [`Reversal::BranchRecomputed`] for each IF and SELECT CASE that
    /// would push its arm ([`Reversal::PushBranch`]) and whose conditions
    /// or selector read nothing that can change once it starts
    /// ([`unchanged_from`]): the reverse sweep evaluates them again with
    /// the same values and takes the same arm. Not in a unit reversed by
    /// blocks, nor in a callee run in split mode (`split`: its reverse
    /// routine runs after its caller has gone on).
    pub fn recompute_branches(&mut self, program: &Program, unit: &Unit, split: bool) {
        if self.by_blocks || split {
            return;
        }
        let branches = self.pushing_branches();
        for id in branches {
            let conds: Vec<&dfort_ir::Expr> = match &unit.stmt(id).kind {
                StmtKind::If { arms, .. } => arms.iter().map(|a| &a.cond).collect(),
                StmtKind::SelectCase { selector, .. } => vec![selector],
                _ => continue,
            };
            let replayed = self.replayed_around(unit, id);
            if unchanged_from(program, unit, id, &conds, &replayed) {
                self.constructs.insert(id, Reversal::BranchRecomputed);
            }
        }
    }

    /// The IFs and SELECT CASEs that push their arm so far.
    fn pushing_branches(&self) -> Vec<StmtId> {
        self.constructs
            .iter()
            .filter(|(_, r)| matches!(r, Reversal::PushBranch))
            .map(|(id, _)| *id)
            .collect()
    }

    /// The DO loops around statement `id` that the reverse sweep replays
    /// from their bounds (their indices have their values back there).
    fn replayed_around(&self, unit: &Unit, id: StmtId) -> Vec<StmtId> {
        replayed_loops_around(&self.constructs, unit, id)
    }

    /// The counted WHILE loop of a DO statement, if it is one.
    pub fn counted_while(&self, id: StmtId) -> Option<&CountedWhile> {
        match self.constructs.get(&id) {
            Some(Reversal::CountedWhile(cw)) => Some(cw),
            _ => None,
        }
    }
}

/// Settles a property of constructs that depends on the constructs they
/// hold: `settle(id)` decides construct `id` from what is settled so far
/// and says whether it now holds (then it is not asked again). Inner
/// constructs usually have the larger ids and are asked first; one the
/// structuring added may hold older ones, so the rounds repeat until none
/// changes.
pub(crate) fn inner_first(mut ids: Vec<StmtId>, mut settle: impl FnMut(StmtId) -> bool) {
    ids.sort_by(|a, b| b.cmp(a));
    let mut changed = true;
    while changed {
        changed = false;
        ids.retain(|&id| {
            let holds = settle(id);
            changed |= holds;
            !holds
        });
    }
}

/// How the adjoint reverses `unit` (a prepared unit of `program`, with
/// its `shape`; `effects`: what the procedures it calls may write).
pub fn of(
    program: &Program,
    unit: &Unit,
    shape: &UnitShape,
    effects: &ProgramEffects,
) -> UnitReversal {
    let by_blocks = !unit.cfg.structured;
    let mut constructs = HashMap::new();
    if by_blocks {
        // A WHERE still reverses on its own, by its recorded masks.
        for st in &unit.stmts {
            if matches!(st.kind, StmtKind::Where { .. }) {
                constructs.insert(st.id, Reversal::MaskPushed);
            }
        }
        let mut misplaced_marks = Vec::new();
        for m in crate::binomial::marks(unit) {
            let why = match (m.request, m.stmt) {
                (Err(why), _) => why,
                (Ok(_), None) => "no DO loop follows `binomial-ckp`".into(),
                (Ok(b), Some(id)) => {
                    match crate::binomial::decide(program, unit, id, b.snapshots, effects) {
                        Err(why) => why,
                        Ok(_) => continue,
                    }
                }
            };
            misplaced_marks.push((m.directive, why));
        }
        return UnitReversal {
            by_blocks,
            constructs,
            misplaced_marks,
            marked_loops: Vec::new(),
        };
    }
    let mut counted = shape.counted.clone();
    for st in &unit.stmts {
        let r = match &st.kind {
            StmtKind::If { .. } if wraps_loop_left_by_exit(unit, st.id) => Reversal::LeftByExit,
            StmtKind::If { .. } | StmtKind::SelectCase { .. } => Reversal::PushBranch,
            StmtKind::Do {
                control:
                    DoControl::Counted {
                        var,
                        start,
                        end,
                        step,
                    },
                body,
                ..
            } => {
                let mut bounds = BitSet::default();
                bound_vars(unit, start, end, step.as_deref(), &mut bounds);
                if body_writes(program, unit, body, effects)
                    .iter()
                    .any(|v| bounds.contains_id(*v))
                {
                    Reversal::BoundsChangeInside
                } else {
                    Reversal::Replay { index: *var }
                }
            }
            StmtKind::Do {
                control: DoControl::While(_),
                ..
            } => match counted.remove(&st.id) {
                Some(cw) => Reversal::CountedWhile(cw),
                None => Reversal::PushTrips,
            },
            StmtKind::Do { .. } => Reversal::PushTrips,
            StmtKind::Where { arms, .. } => {
                let replayed = replayed_loops_around(&constructs, unit, st.id);
                let masks: Vec<&dfort_ir::Expr> = arms.iter().map(|a| &a.cond).collect();
                match unchanged_from(program, unit, st.id, &masks, &replayed) {
                    true => Reversal::MaskRecomputed,
                    false => Reversal::MaskPushed,
                }
            }
            _ => continue,
        };
        constructs.insert(st.id, r);
    }
    let mut misplaced_marks = Vec::new();
    let mut marked_loops = Vec::new();
    for m in crate::binomial::marks(unit) {
        let loop_id = m.stmt.filter(|id| {
            matches!(
                unit.stmt(*id).kind,
                StmtKind::Do {
                    control: DoControl::Counted { .. },
                    ..
                }
            )
        });
        match (m.request, loop_id) {
            (Err(why), _) => misplaced_marks.push((m.directive, why)),
            (Ok(_), None) => misplaced_marks.push((
                m.directive,
                "the statement after `binomial-ckp` is not a counted DO loop (a DO WHILE, a DO \
                 without control, or a loop left by EXIT): the schedule needs the number of \
                 steps when the loop starts"
                    .into(),
            )),
            (Ok(b), Some(id)) => {
                let r = match crate::binomial::decide(program, unit, id, b.snapshots, effects) {
                    Ok(how) => Reversal::Binomial(Box::new(how)),
                    Err(why) => Reversal::BinomialRefused(why),
                };
                constructs.insert(id, r);
                marked_loops.push((m.directive, id));
            }
        }
    }
    UnitReversal {
        by_blocks,
        constructs,
        misplaced_marks,
        marked_loops,
    }
}

/// Whether statement `id` is the always-taken IF the structuring of EXIT
/// puts in the place of a DO loop ([`crate::structure`]): its one arm
/// ends with a DO WHILE on `.not. dfort_ex<n>`.
fn wraps_loop_left_by_exit(unit: &Unit, id: StmtId) -> bool {
    let StmtKind::If {
        arms,
        else_body: None,
        ..
    } = &unit.stmt(id).kind
    else {
        return false;
    };
    let [arm] = arms.as_slice() else {
        return false;
    };
    if !matches!(arm.cond.kind, ExprKind::Logical(true)) {
        return false;
    }
    let Some(last) = arm.body.last() else {
        return false;
    };
    let StmtKind::Do {
        control: DoControl::While(c),
        ..
    } = &unit.stmt(*last).kind
    else {
        return false;
    };
    matches!(&c.kind, ExprKind::Unary { op: UnaryOp::Not, operand }
        if matches!(operand.kind, ExprKind::Var(v) if unit.symbol(v).name.starts_with("dfort_ex")))
}

/// The DO loops around statement `id` whose reversal (as decided so far
/// in `constructs`) replays them from their bounds.
fn replayed_loops_around(
    constructs: &HashMap<StmtId, Reversal>,
    unit: &Unit,
    id: StmtId,
) -> Vec<StmtId> {
    enclosing_loops(unit, id)
        .into_iter()
        .filter(|l| matches!(constructs.get(l), Some(Reversal::Replay { .. })))
        .collect()
}

/// Whether expressions `exprs` of construct `id` (a WHERE's masks, an
/// IF's conditions, a SELECT CASE's selector) can be evaluated again in
/// the reverse sweep with the values they had when the construct started
/// (paper 000's TBR question asked of control): nothing they read can
/// change once the construct starts — no statement that can run from
/// there on (its own arms, what follows it, the rest of an enclosing
/// loop) writes one, no call from there on can write a global one, none
/// is a pointer, a target or a member of an EQUIVALENCE class, and no
/// function is referenced in them; the index of an enclosing loop the
/// reverse sweep replays (`replayed`) has its value back there. (An
/// `elsewhere (mask)` reading what an earlier arm assigns is pushed:
/// that arm's assignments run after the construct starts.)
fn unchanged_from(
    program: &Program,
    unit: &Unit,
    id: StmtId,
    exprs: &[&dfort_ir::Expr],
    replayed: &[StmtId],
) -> bool {
    let mut reads = BitSet::default();
    let mut function = false;
    for e in exprs {
        e.walk(&mut |x| match &x.kind {
            ExprKind::Var(v) | ExprKind::ArrayRef { array: v, .. } => {
                reads.insert_id(*v);
            }
            ExprKind::FunctionCall { .. } | ExprKind::Apply { .. } => function = true,
            _ => {}
        });
    }
    // A value another name can change (a pointer, a target, a member of
    // an EQUIVALENCE class) is not followed through its other names.
    let aliased = reads.ids::<SymbolId>().any(|v| {
        let attrs = &unit.symbol(v).attrs;
        attrs.pointer || attrs.target || unit.aliases.iter().any(|c| c.contains(&v))
    });
    if function || aliased {
        return false;
    }
    let reads_global = reads.ids::<SymbolId>().any(|v| unit.symbol(v).is_global());
    let changes = |st: &dfort_ir::Stmt| {
        all_writes(program, unit, st)
            .iter()
            .filter(|(_, by)| !(*by == WriteBy::DoIndex && replayed.contains(&st.id)))
            .any(|(v, _)| reads.contains_id(*v))
            || (reads_global && matches!(st.kind, StmtKind::Call { .. }))
    };
    // The statements that can run once the construct starts: the rest of
    // its basic block (its own assignments are there), and every block
    // reachable from it (the whole block again when it is in a loop).
    let cfg = &unit.cfg;
    let Some(start) = cfg.stmt_node.get(id).copied().flatten() else {
        return false;
    };
    let own = &cfg.node(start).stmts;
    let from = own.iter().position(|s| *s == id).unwrap_or(0);
    if own[from..].iter().any(|s| changes(unit.stmt(*s))) {
        return false;
    }
    let mut seen = BitSet::default();
    let mut work: Vec<dfort_ir::cfg::NodeId> =
        cfg.node(start).succs.iter().map(|(n, _)| *n).collect();
    while let Some(n) = work.pop() {
        if seen.contains_id(n) {
            continue;
        }
        seen.insert_id(n);
        let node = cfg.node(n);
        if node.stmts.iter().any(|s| changes(unit.stmt(*s))) {
            return false;
        }
        work.extend(node.succs.iter().map(|(m, _)| *m));
    }
    true
}

/// The DO loops enclosing statement `id`, outermost first.
pub(crate) fn enclosing_loops(unit: &Unit, id: StmtId) -> Vec<StmtId> {
    fn find(unit: &Unit, ids: &[StmtId], id: StmtId, path: &mut Vec<StmtId>) -> bool {
        for &s in ids {
            if s == id {
                return true;
            }
            let st = unit.stmt(s);
            let is_loop = matches!(st.kind, StmtKind::Do { .. });
            if is_loop {
                path.push(s);
            }
            if st
                .kind
                .blocks()
                .into_iter()
                .any(|b| find(unit, b, id, path))
            {
                return true;
            }
            if is_loop {
                path.pop();
            }
        }
        false
    }
    let mut path = Vec::new();
    find(unit, &unit.body, id, &mut path);
    path
}

/// The variables the statements `ids` (nested ones included) write.
pub fn body_writes(
    program: &Program,
    unit: &Unit,
    ids: &[StmtId],
    effects: &ProgramEffects,
) -> Vec<SymbolId> {
    let mut out = Vec::new();
    let mut stack: Vec<StmtId> = ids.to_vec();
    while let Some(id) = stack.pop() {
        let st = unit.stmt(id);
        match &st.kind {
            // A call writes the actuals of the formals its callee (or
            // one it calls) may write, and the globals they may write:
            // `call xswap(n, a(j,1), lda, …)` leaves `n` and `lda` alone,
            // whatever INTENT says (F77 declares none).
            StmtKind::Call {
                target: CallTarget::Unit(c),
                ..
            } if effects.get(*c).is_some() => {
                let mut fx = LocalEffects::default();
                stmt_effects(program, unit, st, effects, &mut fx);
                out.extend(fx.writes.ids::<SymbolId>());
            }
            _ => out.extend(all_writes(program, unit, st).into_iter().map(|(s, _)| s)),
        }
        for b in st.kind.blocks() {
            stack.extend(b);
        }
    }
    out
}
