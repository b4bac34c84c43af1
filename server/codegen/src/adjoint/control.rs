//! Control-flow reversal (paper 001, Naumann, Utke, Lyons, Fagan), as
//! [`dfort_analysis::reversal`] decided it for each construct. In a
//! structured unit (Algorithm 5): IF and SELECT CASE push the arm taken
//! and the reverse sweep pops it (one the analyses found nothing to
//! reverse in records nothing and has no reverse sweep; dropped from the
//! forward sweep too when its arms are dead); a counted DO is replayed backwards from
//! its bounds (its index pushed around it only when a statement before it
//! needs its value); a counted WHILE gets its trip count from its bound;
//! other DO WHILE loops count their trips and push the count; the
//! always-taken IF the structuring of EXIT wraps around a loop records
//! nothing. In a unit reversed by basic blocks, constructs and jumps are
//! copied; each basic block whose adjoint does work pushes, as it is
//! left, the integers its adjoint reads and then its id, and the reverse
//! sweep ([`super::routine`]) pops ids until the entry marker `0`.
//!
//! Contract: every loop gets its own counters `dfort_k<n>` and
//! `dfort_count<n>`; loops with a recovery plan (paper 003) write their
//! body through [`super::planned`].

use super::dispatch::{label_of, Gen};
use super::sweep::Line;
use crate::fortran::{case_line, do_head, end_do, jump_lines};
use crate::trace::Reversed;
use dfort_analysis::counted_while::CountedWhile;
use dfort_analysis::recovery::Plan;
use dfort_analysis::reversal::Reversal;
use dfort_ir::cfg::NodeId;
use dfort_ir::dump::expr as print;
use dfort_ir::*;

/// The label where the reverse sweep of a unit reversed by blocks starts.
pub(super) const REVERSE_LABEL: u32 = 99999;

impl Gen<'_> {
    /// An IF construct: the arm taken is pushed; the always-taken IF
    /// around a loop left by EXIT records nothing.
    pub(super) fn if_construct(
        &mut self,
        id: StmtId,
        arms: &[IfArm],
        else_body: Option<&[StmtId]>,
        mut label: String,
    ) -> Vec<Line> {
        let inp = self.inp;
        let unit = &inp.unit;
        if matches!(inp.reversal.of_stmt(id), Some(Reversal::LeftByExit)) {
            self.out.flush_label(&mut label);
            return match arms.first() {
                Some(arm) => self.block(&arm.body),
                None => Vec::new(),
            };
        }
        let n = arms.len() + 1;
        let retest = self.retested(id);
        let record = !inp.unstructured && !self.idle(id) && !retest;
        if record {
            self.out.trace.construct(id, Reversed::BranchPushed);
        }
        if retest {
            self.out.trace.construct(id, Reversed::BranchRecomputed);
        }
        let mut arm_revs = Vec::new();
        let head_at = self.out.fwd.len();
        let mut bodies = Vec::new();
        for (i, arm) in arms.iter().enumerate() {
            let kw = if i == 0 {
                format!("{label}if")
            } else {
                "else if".into()
            };
            self.out
                .fwd
                .line(&format!("{kw} ({}) then", print(unit, &arm.cond)));
            self.out.fwd.indent();
            let at = self.out.fwd.len();
            arm_revs.push(self.block(&arm.body));
            bodies.push((at, self.out.fwd.len()));
            if record {
                self.out.push(&(i + 1).to_string());
            }
            self.out.fwd.dedent();
        }
        let else_rev = match else_body {
            Some(b) => {
                self.out.fwd.line("else");
                self.out.fwd.indent();
                let at = self.out.fwd.len();
                let rev = self.block(b);
                bodies.push((at, self.out.fwd.len()));
                self.out.fwd.dedent();
                Some(rev)
            }
            None => None,
        };
        if record {
            if else_rev.is_none() {
                self.out.fwd.line("else");
            }
            self.out.fwd.indent();
            self.out.push(&n.to_string());
            self.out.fwd.dedent();
        }
        arm_revs.push(else_rev.unwrap_or_default());
        self.out.fwd.line("end if");
        let rev = match retest {
            true => {
                let mut heads: Vec<String> = arms
                    .iter()
                    .enumerate()
                    .map(|(i, arm)| {
                        let kw = if i == 0 { "if" } else { "else if" };
                        format!("{kw} ({}) then", print(unit, &arm.cond))
                    })
                    .collect();
                heads.push("else".into());
                vec![Line::Retest {
                    open: None,
                    heads,
                    arms: arm_revs,
                    close: "end if".into(),
                }]
            }
            false => self.branch_lines(id, arm_revs, record),
        };
        self.drop_if_dead(id, &label, head_at, &bodies);
        rev
    }

    /// Takes back the forward sweep of construct `id`, written from
    /// `head_at`, when the adjoint liveness found it dead and its
    /// `bodies` (ranges of the forward sweep) hold only CONTINUEs. Should
    /// they hold anything else, or the construct carry a label, it stays.
    fn drop_if_dead(&mut self, id: StmtId, label: &str, head_at: usize, bodies: &[(usize, usize)]) {
        let fwd = &self.out.fwd;
        let only_continues = bodies.iter().all(|&(a, b)| {
            let text = fwd.text_from(a);
            only_continues(text.get(..b - a).unwrap_or(text))
        });
        if self.inp.dead.contains(&id) && label.is_empty() && only_continues {
            self.out.fwd.truncate(head_at);
            self.out.trace.drop(id);
        }
    }

    /// Whether the reverse sweep evaluates the conditions of IF or SELECT
    /// CASE `id` again ([`Reversal::BranchRecomputed`]).
    fn retested(&self, id: StmtId) -> bool {
        !self.inp.unstructured
            && matches!(
                self.inp.reversal.of_stmt(id),
                Some(Reversal::BranchRecomputed)
            )
    }

    /// Whether the analyses found nothing for the reverse sweep to do in
    /// IF or SELECT CASE `id` ([`Reversal::NothingToReverse`]).
    fn idle(&self, id: StmtId) -> bool {
        matches!(
            self.inp.reversal.of_stmt(id),
            Some(Reversal::NothingToReverse)
        )
    }

    /// The reverse sweep of an IF or SELECT CASE whose arms' reverse
    /// sweeps are `arm_revs`: the recorded arm popped and run back; none
    /// when the construct records nothing — and then a reverse sweep
    /// the analyses did not foresee is refused, never dropped.
    fn branch_lines(&mut self, id: StmtId, arm_revs: Vec<Vec<Line>>, recorded: bool) -> Vec<Line> {
        if recorded || self.inp.unstructured {
            return vec![Line::Branch(arm_revs)];
        }
        if arm_revs.iter().any(|a| super::sweep::runs_something(a)) {
            let span = self.inp.unit.stmt(id).span;
            self.out.refuse(
                span,
                "internal error: the analyses found nothing to reverse in this construct, but its adjoint does work",
            );
        }
        Vec::new()
    }

    /// A WHERE construct, the branch of paper 001 taken element by
    /// element: each arm's mask goes into a logical array `dfort_w<n>` —
    /// the elements no earlier arm took (among the enclosing arm's) for
    /// which its mask holds — and its assignments run under it. The
    /// reverse sweep gets the masks back as [`Reversal`] decided —
    /// evaluated again before the arms' adjoints, or pushed after each
    /// arm (once its own records are on the tape) and popped before its
    /// adjoint — and runs the arms backwards under them.
    pub(super) fn where_construct(
        &mut self,
        id: StmtId,
        span: Span,
        arms: &[IfArm],
        else_body: Option<&[StmtId]>,
        mut label: String,
    ) -> Vec<Line> {
        let inp = self.inp;
        let unit = &inp.unit;
        let how = inp.reversal.of_stmt(id);
        if how.and_then(|r| r.refusal()).is_some() {
            // Refused by the facts ([`dfort_analysis::refusals`]).
            return Vec::new();
        }
        // In a unit reversed by blocks, the construct and its assignments
        // share one basic block: their reverse goes there as one piece.
        let pushed = !matches!(how, Some(Reversal::MaskRecomputed));
        let rank = arms
            .first()
            .map(|a| crate::partials::rank_of(inp.program, unit, &a.cond))
            .unwrap_or(0);
        if rank == 0 || (pushed && rank > 7) {
            self.out.refuse(
                span,
                format!("a WHERE mask of rank {rank} is not differentiated yet"),
            );
            return Vec::new();
        }
        self.out.trace.construct(
            id,
            if pushed {
                Reversed::MaskPushed
            } else {
                Reversed::MaskRecomputed
            },
        );
        let outer = self.out.mask.clone();
        let bodies = arms
            .iter()
            .map(|a| (Some(&a.cond), a.body.as_slice()))
            .chain(else_body.map(|b| (None, b)));
        let mut taken: Vec<String> = Vec::new();
        let mut masks: Vec<String> = Vec::new();
        let mut arm_revs = Vec::new();
        for (cond, body) in bodies {
            let w = self.out.mask_temp(rank);
            let pending = match (&outer, taken.is_empty()) {
                (None, true) => None,
                (Some(o), true) => Some(o.clone()),
                (None, false) => Some(format!(".not. ({})", taken.join(" .or. "))),
                (Some(o), false) => Some(format!("{o} .and. .not. ({})", taken.join(" .or. "))),
            };
            let lines = match (pending, cond) {
                (None, Some(c)) => vec![format!("{w} = {}", print(unit, c))],
                (Some(p), Some(c)) => vec![
                    format!("{w} = {p}"),
                    format!("where ({w}) {w} = {}", print(unit, c)),
                ],
                (Some(p), None) => vec![format!("{w} = {p}")],
                (None, None) => vec![format!("{w} = .true.")],
            };
            self.out.labelled_lines(&label, &lines);
            label.clear();
            masks.extend(lines);
            let enclosing = self.out.mask.replace(w.clone());
            let rev = self.block(body);
            self.out.mask = enclosing;
            if pushed {
                self.out.fwd.line(&format!("call dfort_push_mask({w})"));
            }
            arm_revs.push((w.clone(), rev));
            taken.push(w);
        }
        let mut rev = Vec::new();
        if !pushed {
            rev.extend(masks.into_iter().map(Line::Plain));
        }
        for (w, r) in arm_revs.into_iter().rev() {
            if pushed {
                rev.push(Line::Plain(format!("call dfort_pop_mask({w})")));
            }
            rev.extend(r);
        }
        rev
    }

    /// A SELECT CASE construct: the case taken is pushed (a `case
    /// default` is added to push when the original has none).
    pub(super) fn select_case(
        &mut self,
        id: StmtId,
        selector: &Expr,
        cases: &[Case],
        label: String,
    ) -> Vec<Line> {
        let inp = self.inp;
        let unit = &inp.unit;
        let retest = self.retested(id);
        let record = !inp.unstructured && !self.idle(id) && !retest;
        if record {
            self.out.trace.construct(id, Reversed::BranchPushed);
        }
        if retest {
            self.out.trace.construct(id, Reversed::BranchRecomputed);
        }
        let head_at = self.out.fwd.len();
        self.out
            .fwd
            .line(&format!("{label}select case ({})", print(unit, selector)));
        let mut arm_revs = Vec::new();
        let mut bodies = Vec::new();
        for (i, c) in cases.iter().enumerate() {
            self.out.fwd.line(&case_line(unit, c));
            self.out.fwd.indent();
            let at = self.out.fwd.len();
            arm_revs.push(self.block(&c.body));
            bodies.push((at, self.out.fwd.len()));
            if record {
                self.out.push(&(i + 1).to_string());
            }
            self.out.fwd.dedent();
        }
        if record && !cases.iter().any(|c| c.default) {
            self.out.fwd.line("case default");
            self.out.fwd.indent();
            self.out.push(&(cases.len() + 1).to_string());
            self.out.fwd.dedent();
            arm_revs.push(Vec::new());
        }
        self.out.fwd.line("end select");
        let rev = match retest {
            true => vec![Line::Retest {
                open: Some(format!("select case ({})", print(unit, selector))),
                heads: cases.iter().map(|c| case_line(unit, c)).collect(),
                arms: arm_revs,
                close: "end select".into(),
            }],
            false => self.branch_lines(id, arm_revs, record),
        };
        self.drop_if_dead(id, &label, head_at, &bodies);
        rev
    }

    /// A DO loop: copied in a unit reversed by blocks; otherwise replayed
    /// (counted) or run its trip count times (WHILE).
    pub(super) fn do_loop(
        &mut self,
        id: StmtId,
        span: Span,
        name: Option<&String>,
        control: &DoControl,
        body: &[StmtId],
        label: String,
    ) -> Vec<Line> {
        if self.inp.unstructured {
            let head = do_head(&self.inp.unit, name, control);
            self.out.fwd.line(&format!("{label}{head}"));
            self.out.fwd.indent();
            let _ = self.block(body);
            self.out.fwd.dedent();
            self.out.fwd.line(&end_do(name));
            return Vec::new();
        }
        match control {
            DoControl::Counted {
                var,
                start,
                end,
                step,
            } => self.counted_do(id, *var, start, end, step.as_deref(), body, label),
            DoControl::While(c) => self.do_while(id, c, body, label),
            DoControl::Forever => {
                self.out.refuse(
                    span,
                    "DO loops without control (left by EXIT) are not reversed yet",
                );
                Vec::new()
            }
        }
    }

    /// A counted DO loop, replayed backwards from its bounds.
    #[allow(clippy::too_many_arguments)]
    fn counted_do(
        &mut self,
        id: StmtId,
        var: SymbolId,
        start: &Expr,
        end: &Expr,
        step: Option<&Expr>,
        body: &[StmtId],
        label: String,
    ) -> Vec<Line> {
        let inp = self.inp;
        let unit = &inp.unit;
        let i = unit.symbol(var).name.clone();
        if inp.reversal.of_stmt(id).and_then(|r| r.refusal()).is_some() {
            // Refused by the facts ([`dfort_analysis::refusals`]).
            return Vec::new();
        }
        if let Some(Reversal::Binomial(how)) = inp.reversal.of_stmt(id) {
            return self.binomial_do(id, var, start, end, step, body, label, how);
        }
        let (s, e) = (print(unit, start), print(unit, end));
        let stp = step.map(|x| print(unit, x)).unwrap_or_else(|| "1".into());
        self.out.counters += 1;
        self.out.trace.construct(id, Reversed::Replayed);
        let k = format!("dfort_k{}", self.out.counters);
        // The index is saved only when a statement before the loop needs
        // its value.
        let save = inp.store_all || inp.tbr.in_req.get(id).is_some_and(|r| r.contains_id(var));
        let plan = inp.plans.get(&id).copied();
        let mut pre = self.entry_saves(plan);
        if save {
            pre.push(format!("call dfort_push({i})"));
        }
        // A loop the adjoint liveness found dead is not written in the
        // forward sweep: once its body is written, the head and the body
        // (dead assignments and the labels they leave) are taken back.
        // Should the body have written anything else, the loop stays.
        let dropped = inp.dead.contains(&id);
        let head_label = if pre.is_empty() {
            label.clone()
        } else {
            self.out.labelled_lines(&label, &pre);
            String::new()
        };
        let head_at = self.out.fwd.len();
        self.out
            .fwd
            .line(&format!("{head_label}do {i} = {s}, {e}, {stp}"));
        let body_at = self.out.fwd.len();
        self.out.fwd.indent();
        self.out.replayed.push(var);
        self.out.loop_depth += 1;
        let mut body_rev = match plan {
            Some(p) => self.planned_body(p),
            None => self.block(body),
        };
        // The real intermediates the analyses recompute instead of
        // storing ([`dfort_analysis::recompute`]) are computed again first
        // in each reversed iteration.
        if let Some(rc) = inp.tbr.recomputed.iter().find(|r| r.lp == id) {
            let unit = &inp.unit;
            let lines = rc.stmts.iter().filter_map(|s| match &unit.stmt(*s).kind {
                StmtKind::Assign { lhs, rhs } => Some(Line::Plain(format!(
                    "{} = {}",
                    print(unit, lhs),
                    print(unit, rhs)
                ))),
                _ => None,
            });
            body_rev.splice(0..0, lines);
        }
        self.out.loop_depth -= 1;
        self.out.replayed.pop();
        self.out.fwd.dedent();
        let only_labels = only_continues(self.out.fwd.text_from(body_at));
        if dropped && label.is_empty() && only_labels {
            self.out.fwd.truncate(head_at);
            self.out.trace.drop(id);
        } else {
            self.out.fwd.line("end do");
        }
        let mut rev = self.exit_saves(plan);
        // The elements the analysis found the loop's iterations all name
        // and nothing else in it names: their adjoints' sums may be split
        // like a scalar's.
        let elements: Vec<String> = inp
            .decisions
            .accumulated
            .get(&id)
            .into_iter()
            .flatten()
            .filter(|e| {
                dfort_ir::dp::target(e).is_some_and(|(x, _)| {
                    let ty = &unit.symbol(x).ty;
                    ty.base == BaseType::Real && ty.kind == Some(8)
                })
            })
            .filter_map(|e| inp.bref(e))
            .collect();
        let sums = super::sweep::accumulations(&body_rev, &k, |name| {
            self.real8_scalar_adjoint(name) || elements.iter().any(|e| e == name)
        });
        self.out.partial_sums = self.out.partial_sums.max(sums.len());
        rev.push(Line::CountedLoop {
            k,
            var: i,
            start: s,
            end: e,
            step: stp,
            save,
            var_alone: dfort_ir::queries::class_of(unit, var).is_none_or(|c| c.len() < 2),
            sums,
            body: body_rev,
        });
        rev.extend(self.entry_restores(plan));
        rev
    }

    /// Whether `name` is the adjoint of a real(8) scalar local or dummy
    /// that nothing else names (no pointer, target or may-alias class
    /// member; no global, which a callee's adjoint may read).
    fn real8_scalar_adjoint(&self, name: &str) -> bool {
        let unit = &self.inp.unit;
        self.inp.bname.iter().any(|(s, b)| {
            let sym = unit.symbol(*s);
            b == name
                && sym.rank() == 0
                && sym.ty.base == BaseType::Real
                && sym.ty.kind == Some(8)
                && matches!(sym.storage, Storage::Local | Storage::Dummy(_))
                && !sym.attrs.pointer
                && !sym.attrs.target
                && !unit.aliases.iter().any(|c| c.contains(s))
        })
    }

    /// A DO WHILE loop, run backwards its trip count times: pushed, or
    /// for a counted WHILE computed from its bound.
    fn do_while(&mut self, id: StmtId, cond: &Expr, body: &[StmtId], label: String) -> Vec<Line> {
        let inp = self.inp;
        self.out.counters += 1;
        let cnt = format!("dfort_count{}", self.out.counters);
        let k = format!("dfort_k{}", self.out.counters);
        let plan = inp.plans.get(&id).copied();
        // A counted WHILE loop's trip count is computed from its bound;
        // other loops count and push it.
        let counted = inp.reversal.counted_while(id).cloned();
        self.out.trace.construct(
            id,
            if counted.is_some() {
                Reversed::CountedFromBound
            } else {
                Reversed::TripsPushed
            },
        );
        let mut pre = self.entry_saves(plan);
        if counted.is_none() {
            self.out.trip_counts.push(self.out.counters);
            pre.push(format!("{cnt} = 0"));
        }
        pre.push(format!("do while ({})", print(&inp.unit, cond)));
        self.out.labelled_lines(&label, &pre);
        self.out.fwd.indent();
        self.out.loop_depth += 1;
        let body_rev = match plan {
            Some(p) => self.planned_body(p),
            None => self.block(body),
        };
        self.out.loop_depth -= 1;
        if counted.is_none() {
            self.out.fwd.line(&format!("{cnt} = {cnt} + 1"));
        }
        self.out.fwd.dedent();
        self.out.fwd.line("end do");
        if counted.is_none() {
            self.out.push(&cnt);
        }
        let mut rev = self.exit_saves(plan);
        rev.push(self.count_loop(k, cnt, counted, plan, body_rev));
        rev.extend(self.entry_restores(plan));
        rev
    }

    /// The reversal of a DO WHILE loop: its trip count popped, or for a
    /// counted WHILE loop computed from the bound, with the counter's
    /// final value when the plan needs it (instead of saving it).
    fn count_loop(
        &self,
        k: String,
        counter: String,
        counted: Option<CountedWhile>,
        plan: Option<&Plan>,
        body: Vec<Line>,
    ) -> Line {
        let Some(cw) = counted else {
            return Line::CountLoop {
                k,
                counter,
                count: None,
                then: Vec::new(),
                body,
            };
        };
        let unit = &self.inp.unit;
        let then = plan
            .and_then(|p| p.computed_at_exit)
            .map(|v| format!("{} = {}", unit.symbol(v).name, cw.final_value(&counter)))
            .into_iter()
            .collect();
        Line::CountLoop {
            k,
            count: Some(cw.trip_count(unit)),
            counter,
            then,
            body,
        }
    }

    /// A jump (GO TO, computed GO TO, arithmetic IF, EXIT, CYCLE, or an
    /// early RETURN, which ends the forward sweep, not the routine):
    /// copied in a unit reversed by blocks, refused elsewhere.
    pub(super) fn jump(&mut self, span: Span, kind: &StmtKind, label: String) {
        if !self.inp.unstructured {
            self.out.refuse(
                span,
                "jumps (GO TO, arithmetic IF, EXIT, CYCLE, early RETURN) are not reversed yet",
            );
            return;
        }
        let lines = match kind {
            StmtKind::Return => vec![format!("go to {REVERSE_LABEL}")],
            _ => jump_lines(&self.inp.unit, kind).unwrap_or_default(),
        };
        for (k, j) in lines.iter().enumerate() {
            let label = if k == 0 { label.as_str() } else { "" };
            self.out.fwd.line(&format!("{label}{j}"));
        }
    }

    /// A statement of a unit reversed by basic blocks: its reverse sweep
    /// goes to its block's; a block that does work records its id (after
    /// the integers its adjoint reads) as it is left — before its closing
    /// jump, or after its last statement. Returns no lines.
    pub(super) fn stmt_by_blocks(&mut self, id: StmtId) -> Vec<Line> {
        let inp = self.inp;
        let cfg = &inp.unit.cfg;
        let st = inp.unit.stmt(id);
        // An I/O statement with ERR=, END= or EOR= jumps leaves its
        // block itself ([`Gen::leave_before_jumping_io`]).
        let jumping_io = matches!(&st.kind, StmtKind::Io { branches, .. } if !branches.is_empty());
        let is_jump = st.kind.is_jump();
        let mut label = label_of(st);
        // A WHERE's assignments follow it in its block: the block may end
        // with the last of them.
        let end = self
            .block_end(id)
            .or_else(|| self.block_end(last_nested(&inp.unit, id)?));
        if let (Some(n), true) = (end, is_jump) {
            self.out.flush_label(&mut label);
            if self.leave_block(n, false) {
                self.out.trace.construct(id, Reversed::BlockPushed);
            }
        }
        let mut rev = self.stmt_body(id, label);
        let node = cfg.stmt_node.get(id).copied().flatten();
        let in_block = node.filter(|n| cfg.node(*n).kind == dfort_ir::cfg::NodeKind::BasicBlock);
        if let Some(n) = in_block {
            let lines = self.out.block_rev.entry(n).or_default();
            rev.append(lines);
            *lines = rev;
        }
        if let (Some(n), false, false) = (end, is_jump, jumping_io) {
            let _ = self.leave_block(n, false);
        }
        Vec::new()
    }

    /// Before I/O statement `id`, which may jump: records that the block
    /// it ends is left — when the block's adjoint does work, `own_work`
    /// the statement's own.
    pub(super) fn leave_before_jumping_io(
        &mut self,
        id: StmtId,
        own_work: bool,
        label: &mut String,
    ) {
        let Some(n) = self.block_end(id) else {
            return;
        };
        // A statement that defines what the block records is refused by
        // the facts ([`dfort_analysis::refusals`]).
        self.out.flush_label(label);
        if self.leave_block(n, own_work) {
            self.out.trace.construct(id, Reversed::BlockPushed);
        }
    }

    /// The basic block statement `id` ends.
    fn block_end(&self, id: StmtId) -> Option<NodeId> {
        let cfg = &self.inp.unit.cfg;
        let n = (*cfg.stmt_node.get(id)?)?;
        let node = cfg.node(n);
        (node.kind == dfort_ir::cfg::NodeKind::BasicBlock && node.stmts.last() == Some(&id))
            .then_some(n)
    }

    /// Records that basic block `node` was left — only blocks whose
    /// adjoint does something (`own_work`: the statement ending it will
    /// add some): the reverse sweep skips the others anyway.
    fn leave_block(&mut self, node: NodeId, own_work: bool) -> bool {
        let saved = self.inp.snapshots.get(&node);
        let work = own_work
            || self.out.block_rev.get(&node).is_some_and(|l| !l.is_empty())
            || saved.is_some();
        if !work {
            return false;
        }
        for v in saved.into_iter().flatten() {
            self.out.push(v);
        }
        self.out.push(&block_number(node).to_string());
        true
    }
}

/// Whether forward-sweep text holds only CONTINUE statements (labelled
/// or not), or nothing.
fn only_continues(text: &str) -> bool {
    text.lines().all(|l| {
        l.trim()
            .trim_start_matches(|c: char| c.is_ascii_digit())
            .trim()
            == "continue"
    })
}

/// The last statement nested in a WHERE `id` (`None` for other
/// statements, or a WHERE with empty arms).
fn last_nested(unit: &Unit, id: StmtId) -> Option<StmtId> {
    if !matches!(unit.stmt(id).kind, StmtKind::Where { .. }) {
        return None;
    }
    let mut last = None;
    let mut at = id;
    while let Some(&s) = unit
        .stmt(at)
        .kind
        .blocks()
        .into_iter()
        .rev()
        .find_map(|b| b.last())
    {
        last = Some(s);
        at = s;
    }
    last
}

/// The id the reverse sweep of an unstructured unit gives basic block
/// `node` (its position among the CFG's nodes, from 1: 0 marks the entry).
pub(super) fn block_number(node: NodeId) -> usize {
    node.index() + 1
}
