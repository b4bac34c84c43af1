//! TBR analysis (paper 000 §5): which overwritten values the forward sweep
//! of a joint-mode adjoint must record.
//!
//! Contract: per statement, `Req` is the set of variables whose current
//! value the statement's adjoint needs (the rules of §5.1: arguments of
//! nonlinear operations whose result is active, the other factor of an
//! active product, indices of active array references, the lhs indices of
//! an active assignment, and those of a passive assignment to a useful
//! variable, whose adjoint the reverse sweep resets) and `Kill` what it
//! overwrites completely. `InReq`
//! is propagated forward from the unit's entry with
//! `OutReq = (InReq ∖ Kill) ∪ Req` (Fig. 8, general equations, solved by
//! [`crate::engine`]); a statement that overwrites a variable in its
//! `InReq`, or one its own adjoint needs, records that variable. The
//! index of a counted DO loop is restored by the reversed loop (paper
//! 001), so the DO header kills it without recording it, and requires the
//! loop bounds the reversed loop replays; the header of a counted WHILE
//! loop ([`crate::counted_while`]) requires the bound its reversal
//! computes the trip count from.
//! A CALL to a procedure with a derivative routine requires its actuals'
//! values only of itself, not of the statements before it: its
//! checkpoint's snapshot ([`crate::checkpoint`]) saves, after everything
//! before it has run, what the callee's adjoint and the partials of its
//! expression actuals read and anything after may change, and pops it
//! back just before they run ([`snapshot_restored`]). So an array that
//! only calls' adjoints read (an LU step's column and row, read by the
//! level-2 call of that step) is not required where a later call
//! overwrites it (the next steps' trailing blocks), and the callee's
//! calling context does not ask it to restore that array. A function
//! reference in an assignment is hoisted and checkpointed like a CALL
//! ([`crate::references`]): the plain variables of its actuals that the
//! assignment's own adjoint does not read are restored the same way.
//! With `store_all` (`--no-tbr`), every overwrite of an active variable (on
//! top of the values TBR requires)
//! is recorded instead, as ADIFOR and Odyssée did.
//! Over a whole program, a rerun given the previous results and the
//! [`Changes`] since reuses the summaries and results of every call-graph
//! component none of whose inputs changed; the results equal a run from
//! scratch.

use crate::activity::Activity;
use crate::dep::{bind_call, space_of, Iface, Space, Summaries, Summary};
use crate::engine::{solve, Direction};
use crate::incremental::{callers_of, Changes, LazyContexts, Pending};
use crate::interproc::ProgramActivity;
use crate::preaccumulation::Preaccumulation;
use crate::shape::{Shapes, UnitShape};
use dfort_ir::bitset::BitSet;
use dfort_ir::callgraph::Callee;
use dfort_ir::cfg::NodeKind;
use dfort_ir::chunk_vec::ChunkVec;
use dfort_ir::dp::{
    bound_vars, constant_element, disjoint_constant_elements, dp_of, index_vars, is_variable,
    target, vars, writes,
};
use dfort_ir::intrinsics::Values;
use dfort_ir::*;
use std::cell::OnceCell;
use std::sync::Arc;

/// The counted WHILE loops of a unit ([`crate::counted_while`]).
type Counted = std::collections::HashMap<StmtId, crate::counted_while::CountedWhile>;

/// One value the forward sweep must record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    pub stmt: StmtId,
    pub variable: SymbolId,
}

#[derive(Clone, Debug, Default)]
pub struct Tbr {
    /// The variables each statement's adjoint needs, indexed by `StmtId`,
    /// minus the variable it overwrites completely (that value is its own
    /// record, not a requirement on what follows).
    pub req: IdVec<StmtId, BitSet>,
    /// Everything each statement's adjoint reads of the values just
    /// before it, indexed by `StmtId`: `req` plus the overwritten target
    /// when the adjoint reads it (`y = y*x` needs the old `y`). What
    /// adjoint liveness keeps alive before the statement.
    pub needs: IdVec<StmtId, BitSet>,
    /// Variables whose value is required just before each statement.
    pub in_req: IdVec<StmtId, BitSet>,
    /// Recorded overwrites, in statement order.
    pub records: Vec<Record>,
    /// The CALL statements that run in split mode ([`crate::split`]), in
    /// statement order.
    pub split: Vec<StmtId>,
    /// Per active assignment: where its function references are whose
    /// results are not varied there. Their adjoints are not read: no
    /// derivative flows through them, and the values their partials would
    /// read are not required (the generator's temporaries holding them
    /// take no part in the assignment's adjoint).
    pub passive_references: std::collections::BTreeMap<StmtId, Vec<Span>>,
    /// The globals only the unit's callees touch (the unit declares no
    /// name for them), with their slots in `in_req` past the unit's
    /// symbols, sorted.
    pub undeclared_globals: Vec<(crate::dep::GlobalKey, usize)>,
    /// The array formals whose values the callers save around each call
    /// instead of the unit recording its overwrites
    /// ([`crate::left_to_callers`]).
    pub left_to_callers: Vec<SymbolId>,
    /// Per CALL: the module and COMMON variables its callee's adjoint
    /// requires that the call's snapshot restores — required there, not
    /// of the statements after it, which then need not record them for
    /// the callee ([`Callees::translate`]).
    pub snapshot_globals: std::collections::BTreeMap<StmtId, Vec<SymbolId>>,
    /// The loops whose own requirements of an array are reads of final
    /// values: their writes of it record only what reaches the loop from
    /// before it, and those in `recording` ([`crate::final_reads`]).
    pub final_reads: Vec<crate::final_reads::Pair>,
    /// The local Jacobians of the unit's blocks and which the adjoint
    /// preaccumulates ([`crate::preaccumulation`]; empty when it does
    /// not). A preaccumulated graph's statements require only the
    /// subscripts of their active references and targets: the forward
    /// sweep pushes the Jacobian their partials make.
    pub jacobians: Vec<crate::preaccumulation::BlockJacobians>,
    /// The loops whose real intermediates the reverse sweep recomputes
    /// instead of popping ([`crate::recompute`]): those variables are not
    /// required inside them.
    pub recomputed: Vec<crate::recompute::Recomputed>,
    /// `records` before [`crate::component_reqs`] dropped those no
    /// adjoint reads component-wise (`None`: it dropped none).
    pub records_before_components: Option<Vec<Record>>,
}

impl Tbr {
    /// Whether the value of `key`, a global the unit does not declare, is
    /// required just before statement `id`.
    pub fn requires_undeclared(&self, id: StmtId, key: &crate::dep::GlobalKey) -> bool {
        self.undeclared_globals
            .iter()
            .find(|(k, _)| k == key)
            .is_some_and(|(_, slot)| self.in_req.get(id).is_some_and(|r| r.contains(*slot)))
    }
}

/// What the adjoint reads of an expression [`Rules::req_with`] reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Need {
    /// The values of every variable in it.
    Values,
    /// The values of its subscripts (an array element's or section's).
    Indices,
}

struct Rules<'a> {
    unit: &'a Unit,
    varied: &'a BitSet,
    /// The callees' summaries: a function reference is active when its
    /// result depends on something varied, its globals included (without
    /// them, every reference to a procedure with source is).
    callees: Option<&'a Callees<'a>>,
}

impl Rules<'_> {
    fn active(&self, e: &Expr) -> bool {
        dp_of(self.unit, e).intersects(self.varied)
            || dfort_ir::queries::function_references(e)
                .into_iter()
                .any(|(c, args)| match self.callees {
                    Some(cs) => cs.result_varied(self.unit, c, args, self.varied),
                    None => true,
                })
    }
    /// Req(e) of §5.1 as a set of variables.
    fn req(&self, e: &Expr, out: &mut BitSet) {
        self.req_with(e, &mut |x, need| match need {
            Need::Values => vars(self.unit, x, out),
            Need::Indices => index_vars(self.unit, x, out),
        });
    }
    /// Req(e) of §5.1, expression by expression: `out(x, need)` for each
    /// sub-expression `x` whose values (or whose subscripts' values) the
    /// adjoint reads.
    fn req_with(&self, e: &Expr, out: &mut dyn FnMut(&Expr, Need)) {
        match &e.kind {
            ExprKind::ArrayRef { .. } | ExprKind::Component { .. } if self.active(e) => {
                out(e, Need::Indices);
            }
            ExprKind::Unary { operand, .. } => self.req_with(operand, out),
            ExprKind::Binary { op, lhs, rhs } => match op {
                BinaryOp::Add | BinaryOp::Sub => {
                    self.req_with(lhs, out);
                    self.req_with(rhs, out);
                }
                BinaryOp::Mul => {
                    if self.active(lhs) {
                        out(rhs, Need::Values);
                        self.req_with(lhs, out);
                    }
                    if self.active(rhs) {
                        out(lhs, Need::Values);
                        self.req_with(rhs, out);
                    }
                }
                BinaryOp::Div | BinaryOp::Pow => {
                    // d(a/b)/da = 1/b; d(a/b)/db = -a/b²; a**b needs both.
                    if self.active(lhs) {
                        out(rhs, Need::Values);
                        if *op == BinaryOp::Pow {
                            out(lhs, Need::Values);
                        }
                        self.req_with(lhs, out);
                    }
                    if self.active(rhs) {
                        out(lhs, Need::Values);
                        out(rhs, Need::Values);
                        self.req_with(rhs, out);
                    }
                }
                _ => {}
            },
            ExprKind::Intrinsic { name, args } => {
                if !self.active(e) {
                    return;
                }
                if let Some(slots) = dfort_ir::intrinsics::slots(name, args) {
                    // The data arguments' Req; the values of the others
                    // (dim, shift, mask, …), which the adjoint reads.
                    let (names, data) =
                        dfort_ir::intrinsics::linear_array(name).unwrap_or_default();
                    for (k, a) in slots.iter().enumerate() {
                        match a {
                            Some(a) if data.contains(&names[k]) => self.req_with(a, out),
                            Some(a) => out(a, Need::Values),
                            None => {}
                        }
                    }
                    return;
                }
                let values =
                    dfort_ir::intrinsics::lookup(name).map_or(Values::All, |i| i.rule.values());
                match values {
                    Values::None => {
                        for a in args {
                            self.req_with(&a.value, out);
                        }
                    }
                    Values::Cross if args.len() == 2 => {
                        let (a, b) = (&args[0].value, &args[1].value);
                        if self.active(a) {
                            out(b, Need::Values);
                            self.req_with(a, out);
                        }
                        if self.active(b) {
                            out(a, Need::Values);
                            self.req_with(b, out);
                        }
                    }
                    // Nonlinear (sin, exp, ...) or piecewise (abs, max,
                    // sign, ...): the arguments' values are needed.
                    _ => {
                        for a in args {
                            out(&a.value, Need::Values);
                            self.req_with(&a.value, out);
                        }
                    }
                }
            }
            ExprKind::FunctionCall { args, .. } | ExprKind::Apply { args, .. }
                if self.active(e) =>
            {
                for a in args {
                    out(&a.value, Need::Values);
                }
            }
            ExprKind::Complex(a, b) => {
                self.req_with(a, out);
                self.req_with(b, out);
            }
            ExprKind::ArrayCtor(items) => {
                for i in items {
                    self.req_with(i, out);
                }
            }
            // The adjoint loops over the implied DO again: its bounds'
            // values are needed.
            ExprKind::ImpliedDo { items, bounds, .. } => {
                if self.active(e) {
                    for b in bounds {
                        out(b, Need::Values);
                    }
                }
                for i in items {
                    self.req_with(i, out);
                }
            }
            _ => {}
        }
    }
}

/// What an assignment's Req reads as varied: the values varied before
/// it, and what its function references change (varied for the ones
/// after them).
/// Per span of `spans` (function references of `rhs`): whether the
/// adjoint of assignment `st` (`… = rhs`) reads the value of the
/// sub-expression there — whether §5.1's
/// rules ([`Rules::req_with`]) need the values of an expression holding
/// it (the other factor of a product, the argument of a nonlinear
/// operation, a subscript), with the statement's activity — `n*g(x)`
/// with a passive `n`, or `y + g(x)`, reads nothing of `g`'s result.
/// Every reference counts as active (no callee summaries here): a
/// result that does not vary is taken as read where a varied one would
/// be, which only pushes more. A reference in the actuals of another
/// is not read by the assignment's adjoint (the other reference's
/// temporary stands in the expression; its snapshot saves what its
/// adjoint reads: [`crate::references::ReferenceCheckpoint::saved_results`]).
/// The generator pushes the temporary holding the result only when it
/// is read ([`crate::references::ReferenceCheckpoint::result_read`]).
pub(crate) fn results_read(
    unit: &Unit,
    act: &Activity,
    st: StmtId,
    rhs: &Expr,
    spans: &[Span],
) -> Vec<bool> {
    let varied = varied_around(act, st);
    let rules = Rules {
        unit,
        varied: &varied,
        callees: None,
    };
    let mut read = vec![false; spans.len()];
    rules.req_with(rhs, &mut |x, need| {
        for (r, &span) in read.iter_mut().zip(spans) {
            *r |= match need {
                Need::Values => x.span.holds(span),
                // The subscripts of `x`: the reference is read if it is
                // in one, not if it is `x` itself.
                Need::Indices => x.span.holds(span) && x.span != span,
            };
        }
    });
    for (i, r) in read.iter_mut().enumerate() {
        let nested =
            |(j, outer): (usize, &Span)| j != i && *outer != spans[i] && outer.holds(spans[i]);
        if spans.iter().enumerate().any(nested) {
            *r = false;
        }
    }
    read
}

fn varied_around(act: &Activity, i: StmtId) -> BitSet {
    let mut varied = act.varied_before[i].clone();
    varied.union_with(&act.varied_after[i]);
    varied
}

/// What one statement's adjoint requires ([`req_kill`]).
#[derive(Clone, Debug, Default)]
struct StmtReq {
    /// Req: the values the statement's adjoint reads.
    req: BitSet,
    /// Kill: what the statement overwrites completely.
    kill: BitSet,
    /// What its own adjoint needs from the right-hand side (recorded
    /// when the statement overwrites it).
    own: BitSet,
    /// The part of `req` that the call's snapshot restores
    /// ([`snapshot_restored`]): required here, but not of the statements
    /// before (it does not propagate into `InReq`).
    restored: BitSet,
    /// A CALL run in split mode.
    split: bool,
    /// Where the function references of an active assignment are whose
    /// results are not varied ([`Tbr::passive_references`]).
    passive_references: Vec<Span>,
}

/// Req and Kill of one statement, and the variables its own adjoint needs
/// from the right-hand side (recorded when the statement overwrites them).
/// `counted`: the unit's counted WHILE loops; `splittable`: the CALLs
/// that may run split ([`crate::split::candidates`]).
fn req_kill(
    program: &Program,
    unit: &Unit,
    act: &Activity,
    callees: Option<&Callees>,
    counted: &Counted,
    splittable: &crate::split::Splittable,
    st: &Stmt,
) -> StmtReq {
    let n = unit.symbols.len();
    let mut req = BitSet::new(n);
    let mut kill = BitSet::new(n);
    let mut own = BitSet::new(n);
    let mut restored = BitSet::new(n);
    let mut passive_references = Vec::new();
    let i = st.id;
    // `move_alloc`: no value is overwritten (the adjoint keeps `to`'s old
    // allocation on the tape), and `from`'s requirement goes with its
    // memory to `to` ([`apply`]).
    if let Some((from, to)) = crate::activity::moved(st) {
        kill.insert_id(from);
        kill.insert_id(to);
        return StmtReq {
            req,
            kill,
            own,
            restored,
            split: false,
            passive_references,
        };
    }
    let mut split = false;
    match &st.kind {
        StmtKind::Assign { lhs, rhs } => {
            // What the assignment's own adjoint reads, apart from the
            // actuals of its references to procedures with source (their
            // temporaries hold the results; their snapshots the actuals).
            let mut statement_reads = BitSet::new(n);
            index_vars(unit, lhs, &mut statement_reads);
            if let Some((t, whole)) = target(lhs) {
                if whole {
                    kill.insert_id(t);
                }
                if act.active_after(st.id, t) {
                    let varied = varied_around(act, i);
                    let rules = Rules {
                        unit,
                        varied: &varied,
                        callees,
                    };
                    // One pass of §5.1's rules fills both: what the
                    // statement's adjoint reads, and the part of it outside
                    // the references to procedures with a summary.
                    let references: Vec<Span> = dfort_ir::queries::function_reference_sites(rhs)
                        .into_iter()
                        .filter(|(c, _, _)| callees.is_some_and(|cs| cs.has(*c)))
                        .map(|(_, _, span)| span)
                        .collect();
                    rules.req_with(rhs, &mut |x, need| {
                        let outside = !references.iter().any(|r| r.holds(x.span));
                        match need {
                            Need::Values => {
                                vars(unit, x, &mut own);
                                if outside {
                                    vars(unit, x, &mut statement_reads);
                                }
                            }
                            Need::Indices => {
                                index_vars(unit, x, &mut own);
                                if outside {
                                    index_vars(unit, x, &mut statement_reads);
                                }
                            }
                        }
                    });
                    req.union_with(&own);
                    rhs.walk(&mut |x| {
                        if matches!(
                            x.kind,
                            ExprKind::FunctionCall {
                                target: CallTarget::Unit(_),
                                ..
                            }
                        ) && !rules.active(x)
                        {
                            passive_references.push(x.span);
                        }
                    });
                    index_vars(unit, lhs, &mut req);
                    req.subtract(&kill);
                    // `y(3) = y(1)*y(2)`: the elements read are not the one
                    // written, so the statement's own adjoint needs no
                    // recording of y (constant indices, paper 000 §3's
                    // cheap refinement of the whole-array rule).
                    if let Some(elem) = constant_element(unit, lhs) {
                        if disjoint_constant_elements(unit, rhs, t, &elem) {
                            own.remove_id(t);
                        }
                    }
                } else if dfort_ir::dp::differentiable(unit, t) && act.useful_after(st.id, t) {
                    // A passive value overwrites a variable whose adjoint
                    // may be nonzero: the adjoint resets that element, so
                    // it needs the indices.
                    index_vars(unit, lhs, &mut req);
                }
            }
            // The function references run first, each like a CALL: their
            // Req and Kill in this unit's names (what they overwrite they
            // record themselves, given their calling context). Like a
            // CALL's, a reference's snapshot restores its actuals just
            // before its adjoint, which runs after the assignment's own:
            // what only the references read is not required of the
            // statements before.
            if let Some(cs) = callees {
                for (c, args) in dfort_ir::queries::function_references(rhs) {
                    if cs.has(c) {
                        let mut actuals = BitSet::new(n);
                        for a in args {
                            snapshot_restored(unit, &a.value, &mut actuals);
                        }
                        actuals.subtract(&statement_reads);
                        restored.union_with(&actuals);
                        cs.translate(unit, c, args, (&mut req, &mut kill), None);
                    }
                }
            }
        }
        StmtKind::Call {
            args,
            target: CallTarget::Unit(c),
            ..
        } if callees.is_some_and(|cs| cs.has(*c)) => {
            // In split mode the callee's reverse sweep reads what its
            // actuals hold after the call (its forward sweep recorded
            // what it overwrote): every variable of the actuals is
            // required after it, none restored.
            if let (Some(cs), Some(read)) = (callees, splittable.get(&i)) {
                split = true;
                cs.translate(unit, *c, args, (&mut BitSet::default(), &mut kill), None);
                req.union_with(&crate::split::required(unit, args, read));
            } else if let Some(cs) = callees {
                // The callee's Req and Kill, in this unit's names (§5.1:
                // "the Req and Kill sets of a call to S are Req(S) and
                // Kill(S)").
                cs.translate(unit, *c, args, (&mut req, &mut kill), Some(&mut restored));
                expression_actuals(unit, act, st, args, &mut req);
                for a in args {
                    snapshot_restored(unit, &a.value, &mut restored);
                }
            }
        }
        StmtKind::Call { args, .. } => {
            // Without the callee's summary: an active call needs the values
            // of all its actuals.
            let written = writes(program, unit, st);
            if written.iter().any(|(s, _)| act.active_after(st.id, *s)) {
                for a in args {
                    vars(unit, &a.value, &mut own);
                }
                req.union_with(&own);
            }
            expression_actuals(unit, act, st, args, &mut req);
        }
        StmtKind::Io { writes: items, .. } => {
            for (s, whole) in writes(program, unit, st) {
                if whole {
                    kill.insert_id(s);
                }
            }
            // A READ is a passive overwrite: the adjoint resets the items
            // whose adjoint may be nonzero, so it needs their indices (an
            // implied DO's bounds; its variable is replayed).
            reset_indices(unit, act, i, items, &mut req);
        }
        // The reversed loop (paper 001) replays the index from the bounds,
        // so their values are required and the index is killed, not
        // recorded.
        StmtKind::Do {
            control:
                DoControl::Counted {
                    var,
                    start,
                    end,
                    step,
                },
            ..
        } => {
            kill.insert_id(*var);
            bound_vars(unit, start, end, step.as_deref(), &mut req);
        }
        // A counted WHILE loop's trip count is computed from its bound
        // in the reverse sweep: the bound's values are required.
        StmtKind::Do {
            control: DoControl::While(_),
            ..
        } => {
            if let Some(cw) = counted.get(&st.id) {
                vars(unit, &cw.bound, &mut req);
            }
        }
        _ => {}
    }
    // What is required of one member of a may-alias class is required of
    // all (the value may be read through any of them), and overwriting one
    // member kills none (it may be another's memory).
    crate::aliases::close(unit, &mut req);
    crate::aliases::close(unit, &mut own);
    for class in &unit.aliases {
        for s in class {
            kill.remove_id(*s);
            restored.remove_id(*s);
        }
    }
    let unrequired: Vec<usize> = restored.iter().filter(|s| !req.contains(*s)).collect();
    for s in unrequired {
        restored.remove(s);
    }
    StmtReq {
        req,
        kill,
        own,
        restored,
        split,
        passive_references,
    }
}

/// For [`crate::component_reqs`]: each sub-expression of an active
/// assignment's right-hand side whose values (`true`) or whose
/// subscripts' values (`false`) its adjoint reads (§5.1's rules, every
/// function reference counted active); nothing for another statement.
pub(crate) fn assignment_reads(
    unit: &Unit,
    act: &Activity,
    st: &Stmt,
    out: &mut dyn FnMut(&Expr, bool),
) {
    let StmtKind::Assign { lhs, rhs } = &st.kind else {
        return;
    };
    let Some((t, _)) = target(lhs) else {
        return;
    };
    if act.active_after(st.id, t) {
        let varied = varied_around(act, st.id);
        let rules = Rules {
            unit,
            varied: &varied,
            callees: None,
        };
        rules.req_with(rhs, &mut |x, need| out(x, matches!(need, Need::Values)));
    }
}

/// The references of `x` whose values the adjoint of assignment `st`
/// reads (its requirement of `x` in [`req_kill`], reference by
/// reference), for [`crate::final_reads`]; `None` when that requirement
/// may come from anything else (the whole array, a function reference,
/// a statement that is not an assignment).
fn required_references(
    unit: &Unit,
    act: &Activity,
    callees: Option<&Callees>,
    st: &Stmt,
    x: SymbolId,
) -> Option<Vec<Expr>> {
    let StmtKind::Assign { lhs, rhs } = &st.kind else {
        return None;
    };
    let (t, _) = target(lhs)?;
    let mut mentions = BitSet::default();
    for (_, args) in dfort_ir::queries::function_references(rhs) {
        for a in args {
            vars(unit, &a.value, &mut mentions);
        }
    }
    if crate::activity::moved(st).is_some() || mentions.contains_id(x) {
        return None;
    }
    let mut out = Vec::new();
    let mut plain = true;
    let mut take = |e: &Expr| {
        e.walk(&mut |y| match &y.kind {
            ExprKind::ArrayRef { array, .. } if *array == x => out.push(y.clone()),
            ExprKind::Var(s) if *s == x => plain = false,
            _ => {}
        })
    };
    let subscripts = |e: &Expr, take: &mut dyn FnMut(&Expr)| {
        if matches!(
            e.kind,
            ExprKind::ArrayRef { .. } | ExprKind::Component { .. }
        ) {
            for c in e.children() {
                take(c);
            }
        }
    };
    let i = st.id;
    if act.active_after(i, t) {
        let varied = varied_around(act, i);
        let rules = Rules {
            unit,
            varied: &varied,
            callees,
        };
        rules.req_with(rhs, &mut |e, need| match need {
            Need::Values => take(e),
            Need::Indices => subscripts(e, &mut take),
        });
    }
    subscripts(lhs, &mut take);
    plain.then_some(out)
}

/// The variables of a CALL's actual `e` whose values the call's snapshot
/// restores ([`crate::checkpoint`]) just before the callee's adjoint and
/// the partials of expression actuals read them: the actual itself (a
/// variable, element or section, saved by its region) and the leaves of
/// an expression actual, not their subscripts (those are required as
/// usual: the reverse sweep evaluates them to pop the values back) and
/// nothing behind a function reference, a component or a pointer. The
/// snapshot saves them whenever they may change after the call, so the
/// statements before the call need not keep them for it: the callee's
/// requirement stops at the call instead of reaching back into `InReq`,
/// which would make every call writing the array before it restore it.
fn snapshot_restored(unit: &Unit, e: &Expr, out: &mut BitSet) {
    let mut plain = true;
    let mut values = BitSet::default();
    let mut subscripts = BitSet::default();
    e.walk(&mut |x| match &x.kind {
        ExprKind::Var(s) | ExprKind::ArrayRef { array: s, .. } if is_variable(unit, *s) => {
            plain &= !unit.symbol(*s).attrs.pointer;
            values.insert_id(*s);
            index_vars(unit, x, &mut subscripts);
        }
        ExprKind::Component { .. } | ExprKind::FunctionCall { .. } => plain = false,
        _ => {}
    });
    if plain {
        values.subtract(&subscripts);
        out.union_with(&values);
    }
}

/// What the adjoint of a call's expression actuals (`call s(x(k)**2)`)
/// reads: the reverse sweep propagates the formal's adjoint into the
/// expression's active leaves after the callee's adjoint, as if the
/// expression were assigned to an active temporary before the call.
fn expression_actuals(unit: &Unit, act: &Activity, st: &Stmt, args: &[Arg], req: &mut BitSet) {
    let rules = Rules {
        unit,
        varied: &act.varied_before[st.id],
        callees: None,
    };
    for a in args.iter().filter(|a| target(&a.value).is_none()) {
        rules.req(&a.value, req);
    }
}

/// The statement-level estimate of a local graph
/// ([`crate::preaccumulation`]): the variables its statements' partials
/// read that a statement of the graph assigns.
fn statement_level(
    unit: &Unit,
    g: &crate::flatten::LocalGraph,
    full: &IdVec<StmtId, StmtReq>,
) -> usize {
    let mut read = BitSet::new(unit.symbols.len());
    let mut assigned = BitSet::new(unit.symbols.len());
    for &s in &g.stmts {
        read.union_with(&full[s].own);
        if let StmtKind::Assign { lhs, .. } = &unit.stmt(s).kind {
            if let Some((t, _)) = target(lhs) {
                assigned.insert_id(t);
            }
        }
    }
    read.iter().filter(|&v| assigned.contains(v)).count()
}

/// Req of a preaccumulated assignment: the subscripts of its active
/// references and of its target (the reverse sweep reads and resets
/// those adjoints), minus what it kills.
fn preaccumulated_req(
    unit: &Unit,
    act: &Activity,
    callees: Option<&Callees>,
    st: &Stmt,
    kill: &BitSet,
) -> BitSet {
    let mut req = BitSet::new(unit.symbols.len());
    let StmtKind::Assign { lhs, rhs } = &st.kind else {
        return req;
    };
    let varied = varied_around(act, st.id);
    let rules = Rules {
        unit,
        varied: &varied,
        callees,
    };
    rules.req_with(rhs, &mut |x, need| {
        if need == Need::Indices {
            index_vars(unit, x, &mut req);
        }
    });
    index_vars(unit, lhs, &mut req);
    req.subtract(kill);
    req
}

/// Runs TBR on one unit alone, given its activity (calls conservative).
pub fn analyze(program: &Program, unit: &Unit, act: &Activity, store_all: bool) -> Tbr {
    let shape = crate::shape::Shapes::default().of(program, unit);
    analyze_with(
        program,
        unit,
        &shape,
        act,
        store_all,
        false,
        Preaccumulation::Off,
        None,
        &BitSet::default(),
        &crate::split::Splittable::new(),
    )
}

/// Runs TBR on one unit with its callees' summaries and its calling
/// context `in_req_entry` (values required before the unit runs). With
/// `inversion`, the address variables whose recovery the loops' plans
/// take over ([`crate::recovery::handled`]) are neither required nor
/// recorded inside those loops (`Tbr::req` still lists them: it is what
/// the plans read).
#[allow(clippy::too_many_arguments)]
pub fn analyze_with(
    program: &Program,
    unit: &Unit,
    shape: &UnitShape,
    act: &Activity,
    store_all: bool,
    inversion: bool,
    preaccumulate: Preaccumulation,
    callees: Option<&Callees>,
    in_req_entry: &BitSet,
    splittable: &crate::split::Splittable,
) -> Tbr {
    let n = unit.stmts.len();
    let mut full: IdVec<StmtId, StmtReq> = unit
        .stmts
        .iter()
        .map(|st| req_kill(program, unit, act, callees, &shape.counted, splittable, st))
        .collect();
    let jacobians = match preaccumulate {
        Preaccumulation::Off => Vec::new(),
        mode => {
            let j = crate::preaccumulation::decide(
                unit,
                act,
                mode,
                &|g| statement_level(unit, g, &full),
                &|g| crate::preaccumulation::replay_available(program, unit, g),
            );
            for lj in j
                .iter()
                .flat_map(|b| &b.jacobians)
                .filter(|lj| lj.accumulation().is_some())
            {
                for s in &lj.graph.stmts {
                    let r = &mut full[*s];
                    r.req = preaccumulated_req(unit, act, callees, unit.stmt(*s), &r.kill);
                    r.own = BitSet::new(unit.symbols.len());
                }
                // A recomputed Jacobian: the replay reads the exposed
                // values where the graph starts (those its first
                // statement overwrites are its own to record).
                if let (true, Some(&first)) = (lj.recomputed(), lj.graph.stmts.first()) {
                    let exposed = crate::preaccumulation::exposed_set(unit, &lj.graph);
                    let r = &mut full[first];
                    r.own = exposed.clone();
                    let mut req = exposed;
                    req.subtract(&r.kill);
                    r.req.union_with(&req);
                }
            }
            j
        }
    };
    // Intermediates the reverse sweep recomputes ([`crate::recompute`];
    // paper 003's recovery, so not with `--no-inversion`): not required
    // inside their loop; what recomputes them is.
    let recomputed = if store_all || !inversion {
        Vec::new()
    } else {
        let marked: Vec<StmtId> = crate::binomial::marks(unit)
            .iter()
            .filter_map(|m| m.stmt)
            .collect();
        let preaccumulated: BitSet = jacobians
            .iter()
            .flat_map(|b| &b.jacobians)
            .filter(|j| j.accumulation().is_some())
            .flat_map(|j| j.graph.stmts.iter())
            .map(|s| s.index())
            .fold(BitSet::default(), |mut b, i| {
                b.insert(i);
                b
            });
        let holds_preaccumulated = |lp: StmtId| {
            crate::recompute::loop_statements(unit, lp)
                .iter()
                .any(|s| preaccumulated.contains(s.index()))
        };
        crate::recompute::find(
            unit,
            &|s| {
                let mut r = full[s].req.clone();
                r.union_with(&full[s].own);
                r
            },
            &|lp| marked.contains(&lp) || holds_preaccumulated(lp),
        )
    };
    for rc in &recomputed {
        for s in crate::recompute::loop_statements(unit, rc.lp) {
            full[s].req.subtract(&rc.vars);
            full[s].own.subtract(&rc.vars);
        }
        // Nothing in the body writes what the recomputation reads: it is
        // required at the first statement recomputed as much as anywhere
        // in the iteration.
        if let Some(&first) = rc.stmts.first() {
            full[first].req.union_with(&rc.exposed);
        }
    }
    // In units with jumps, an invertible assignment passes its variable's
    // requirement through (the reverse sweep inverts it) and requires the
    // other operands of the inversion.
    let no_undo = crate::undo::UnitUndo::default();
    let undo = if inversion && !store_all {
        &shape.undo
    } else {
        &no_undo
    };
    for (id, u) in &undo.inverted {
        if let Some(r) = full.get_mut(*id) {
            r.kill.remove_id(u.var);
            r.req
                .union_with(&crate::undo::operands(unit, unit.stmt(*id), u.var));
        }
    }
    let none: IdVec<StmtId, BitSet> = IdVec::from_elem(BitSet::default(), n);
    let handled = if inversion && !store_all {
        &shape.handled
    } else {
        &none
    };
    // What each statement requires of the values before it, once the
    // plans' variables are taken over and without what a call's snapshot
    // restores.
    let mut required: IdVec<StmtId, BitSet> = full
        .iter()
        .zip(handled)
        .map(|(r, h)| {
            let mut req = r.req.clone();
            req.subtract(h);
            if !store_all {
                req.subtract(&r.restored);
            }
            req
        })
        .collect();
    // A recorded element is popped back into the same element: its
    // indices are required where it is recorded, which may make more
    // records (a fixpoint; records only grow).
    let mut popped_indices: IdVec<StmtId, BitSet> = IdVec::from_elem(BitSet::default(), n);
    // Arrays whose requirements made inside a loop nest its own writes
    // need not record (element-wise, [`crate::final_reads`]).
    let mut finals = if store_all {
        Vec::new()
    } else {
        crate::final_reads::analyze(program, unit, &required, &|id, x| {
            required_references(unit, act, callees, unit.stmt(id), x)
        })
    };
    let mut tbr = Tbr::default();
    for _round in 0..16 {
        tbr = records_of(
            program,
            unit,
            act,
            store_all,
            callees,
            &full,
            &required,
            handled,
            undo,
            in_req_entry,
            &finals,
        );
        let mut grew = false;
        for r in &tbr.records {
            let i = r.stmt;
            let mut idx = BitSet::default();
            for e in written_references(unit.stmt(r.stmt), r.variable) {
                index_vars(unit, e, &mut idx);
            }
            grew |= popped_indices[i].union_with(&idx);
            idx.subtract(&handled[i]);
            required[i].union_with(&idx);
        }
        // A record's subscripts reading the array: that requirement is
        // not one of the references the test saw.
        let before = finals.len();
        finals.retain(|p| {
            !p.inside
                .iter()
                .any(|s| popped_indices[*s].contains_id(p.var))
        });
        grew |= finals.len() != before;
        if !grew {
            break;
        }
    }
    for ((req, needs), extra) in tbr
        .req
        .iter_mut()
        .zip(tbr.needs.iter_mut())
        .zip(&popped_indices)
    {
        req.union_with(extra);
        needs.union_with(extra);
    }
    tbr.records.sort_by_key(|r| (r.stmt, r.variable));
    tbr.records.dedup();
    tbr.final_reads = finals;
    tbr.jacobians = jacobians;
    tbr.recomputed = recomputed;
    tbr.split = full
        .iter_enumerated()
        .filter(|(_, r)| r.split)
        .map(|(id, _)| id)
        .collect();
    if !store_all {
        tbr.snapshot_globals = full
            .iter_enumerated()
            .filter(|(id, _)| matches!(unit.stmt(*id).kind, StmtKind::Call { .. }))
            .map(|(id, r)| {
                let globals = r.restored.ids().filter(|s| unit.symbol(*s).is_global());
                (id, globals.collect::<Vec<_>>())
            })
            .filter(|(_, g)| !g.is_empty())
            .collect();
    }
    tbr.passive_references = full
        .iter_enumerated()
        .filter(|(_, r)| !r.passive_references.is_empty())
        .map(|(id, r)| (id, r.passive_references.clone()))
        .collect();
    if let Some(cs) = callees {
        tbr.undeclared_globals = cs
            .space
            .globals
            .iter()
            .filter(|(_, &slot)| slot >= unit.symbols.len())
            .map(|(k, &slot)| (k.clone(), slot))
            .collect();
        tbr.undeclared_globals.sort();
    }
    tbr
}

/// The indices the adjoint of a READ reads to reset the adjoints of
/// `items` that may be nonzero after statement `i`.
fn reset_indices(unit: &Unit, act: &Activity, i: StmtId, items: &[Expr], req: &mut BitSet) {
    for item in items {
        if let ExprKind::ImpliedDo { items, var, bounds } = &item.kind {
            let mut inner = BitSet::default();
            reset_indices(unit, act, i, items, &mut inner);
            if !inner.is_empty() {
                inner.remove_id(*var);
                for b in bounds {
                    vars(unit, b, &mut inner);
                }
                req.union_with(&inner);
            }
        } else if let Some((t, _)) = target(item) {
            if dfort_ir::dp::differentiable(unit, t) && act.useful_after(i, t) {
                index_vars(unit, item, req);
            }
        }
    }
}

/// The references of `st` that write `v` (assignment targets, READ items,
/// call actuals).
pub(crate) fn written_references(st: &Stmt, v: SymbolId) -> Vec<&Expr> {
    let writes_v = |e: &&Expr| target(e).is_some_and(|(t, _)| t == v);
    match &st.kind {
        StmtKind::Assign { lhs, .. } => std::iter::once(lhs).filter(writes_v).collect(),
        StmtKind::Io { writes, .. } => writes.iter().filter(writes_v).collect(),
        StmtKind::Call { args, .. } => args.iter().map(|a| &a.value).filter(writes_v).collect(),
        _ => Vec::new(),
    }
}

/// InReq propagated forward with the statements' requirements
/// (`required`), and the records it implies (with `req` and `needs` from
/// `full`).
#[allow(clippy::too_many_arguments)]
fn records_of(
    program: &Program,
    unit: &Unit,
    act: &Activity,
    store_all: bool,
    callees: Option<&Callees>,
    full: &IdVec<StmtId, StmtReq>,
    required: &IdVec<StmtId, BitSet>,
    handled: &IdVec<StmtId, BitSet>,
    undo: &crate::undo::UnitUndo,
    in_req_entry: &BitSet,
    finals: &[crate::final_reads::Pair],
) -> Tbr {
    let n = unit.stmts.len();
    let cfg = &unit.cfg;
    let kills = full.iter().filter_map(|r| r.kill.iter().last()).max();
    let shadows = Shadows::new(unit, required, in_req_entry, kills, finals);
    let sol = solve(cfg, Direction::Forward, in_req_entry, |node, input| {
        let nd = cfg.node(node);
        let mut s = input.clone();
        shadows.leave(node, &mut s);
        match nd.kind {
            // A LOOP node applies its DO statement: kill the index,
            // require the bounds.
            NodeKind::BasicBlock | NodeKind::Loop => {
                for &id in &nd.stmts {
                    apply(unit.stmt(id), &mut s, shadows.required(id), &full[id].kill);
                }
            }
            _ => {}
        }
        s
    });
    let mut tbr = Tbr {
        req: full.iter().map(|r| r.req.clone()).collect(),
        needs: full
            .iter()
            .map(|r| {
                let mut n = r.req.clone();
                n.union_with(&r.own);
                n
            })
            .collect(),
        in_req: IdVec::from_elem(BitSet::default(), n),
        records: Vec::new(),
        left_to_callers: Vec::new(),
        snapshot_globals: Default::default(),
        final_reads: Vec::new(),
        split: Vec::new(),
        passive_references: Default::default(),
        undeclared_globals: Vec::new(),
        jacobians: Vec::new(),
        recomputed: Vec::new(),
        records_before_components: None,
    };
    for (i, node) in cfg.nodes.iter_enumerated() {
        // A DO statement's InReq is what reaches the loop from before it
        // (not around its back edge).
        if node.kind == NodeKind::Loop {
            let mut entry = BitSet::default();
            for p in &node.preds {
                if Some(*p) != node.partner {
                    entry.union_with(&sol.after[*p]);
                }
            }
            shadows.leave(i, &mut entry);
            for &id in &node.stmts {
                tbr.in_req[id] = shadows.visible(&entry);
            }
        }
        if node.kind != NodeKind::BasicBlock {
            continue;
        }
        let mut s = sol.before[i].clone();
        shadows.leave(i, &mut s);
        for &id in &node.stmts {
            let st = unit.stmt(id);
            tbr.in_req[id] = shadows.visible(&s);
            let (req, StmtReq { kill, own, .. }) = (shadows.required(id), &full[id]);
            // A callee analysed with its calling context records its own
            // overwrites (§5.2); only calls without source record here.
            let recorded_inside = matches!(
                &st.kind,
                StmtKind::Call { target: CallTarget::Unit(c), .. }
                    if callees.is_some_and(|cs| cs.has(*c))
            );
            let moves = crate::activity::moved(st).is_some();
            for (v, _) in writes(program, unit, st).into_iter().filter(|(v, _)| {
                !recorded_inside
                    && !moves
                    && !handled[id].contains_id(*v)
                    && undo.inverts(id) != Some(*v)
            }) {
                // Store-all records every overwrite of an active value on
                // top of what TBR requires (passive values an adjoint reads
                // must be restored in either mode).
                // Inside a loop whose own requirements of `v` are final
                // reads, only what reaches the loop from before it, and
                // the writes the test could not clear, record.
                let own_need = match shadows.pair(id, v) {
                    Some(p) => p.recording.contains(&id),
                    None => own.contains_id(v),
                };
                let needed = s.contains_id(v)
                    || own_need
                    || (store_all
                        && (act.varied_before[id].contains_id(v) || act.active_after(id, v)));
                if needed {
                    tbr.records.push(Record {
                        stmt: id,
                        variable: v,
                    });
                }
            }
            apply(st, &mut s, req, kill);
        }
    }
    tbr
}

/// The requirements [`crate::final_reads`] keeps apart: inside the loop
/// of pair k, what its statements require of the pair's array is slot
/// `base + k` instead of the array's own, so that the loop's writes see
/// only what reached the loop from before it; on the way out of the loop
/// (the node its LOOP node's exit edge leads to) the slot becomes the
/// array again, required by what follows.
struct Shadows<'a> {
    base: usize,
    finals: &'a [crate::final_reads::Pair],
    required: &'a IdVec<StmtId, BitSet>,
    /// The statements' requirements with the slots in place.
    shadowed: std::collections::HashMap<StmtId, BitSet>,
    /// The nodes where slots turn back into their arrays.
    exits: std::collections::HashMap<dfort_ir::cfg::NodeId, Vec<usize>>,
}

impl<'a> Shadows<'a> {
    fn new(
        unit: &Unit,
        required: &'a IdVec<StmtId, BitSet>,
        in_req_entry: &BitSet,
        kills: Option<usize>,
        finals: &'a [crate::final_reads::Pair],
    ) -> Shadows<'a> {
        // Past every slot the unit's sets use.
        let base = required
            .iter()
            .chain(std::iter::once(in_req_entry))
            .filter_map(|b| b.iter().last())
            .chain(kills)
            .max()
            .map_or(0, |m| m + 1)
            .max(unit.symbols.len());
        let mut shadowed: std::collections::HashMap<StmtId, BitSet> = Default::default();
        let mut exits: std::collections::HashMap<dfort_ir::cfg::NodeId, Vec<usize>> =
            Default::default();
        for (k, p) in finals.iter().enumerate() {
            for &s in &p.inside {
                if required.get(s).is_some_and(|r| r.contains_id(p.var)) {
                    let r = shadowed.entry(s).or_insert_with(|| required[s].clone());
                    r.remove_id(p.var);
                    r.insert(base + k);
                }
            }
            let lp = unit.cfg.stmt_node.get(p.lp).copied().flatten();
            if let Some(lp) = lp {
                for (to, kind) in &unit.cfg.node(lp).succs {
                    if *kind == dfort_ir::cfg::EdgeKind::LoopExit {
                        exits.entry(*to).or_default().push(k);
                    }
                }
            }
        }
        Shadows {
            base,
            finals,
            required,
            shadowed,
            exits,
        }
    }

    fn required(&self, id: StmtId) -> &BitSet {
        self.shadowed.get(&id).unwrap_or(&self.required[id])
    }

    /// The slots of the loops `node` follows, turned into their arrays.
    fn leave(&self, node: dfort_ir::cfg::NodeId, s: &mut BitSet) {
        for &k in self.exits.get(&node).into_iter().flatten() {
            if s.contains(self.base + k) {
                s.remove(self.base + k);
                s.insert_id(self.finals[k].var);
            }
        }
    }

    /// `s` as InReq reports it: every slot as its array (whose values the
    /// loop does require).
    fn visible(&self, s: &BitSet) -> BitSet {
        let mut out = s.clone();
        for (k, p) in self.finals.iter().enumerate() {
            if out.contains(self.base + k) {
                out.remove(self.base + k);
                out.insert_id(p.var);
            }
        }
        out
    }

    /// The pair whose loop holds `id` and whose array is `v`.
    fn pair(&self, id: StmtId, v: SymbolId) -> Option<&crate::final_reads::Pair> {
        self.finals
            .iter()
            .find(|p| p.var == v && p.inside.contains(&id))
    }
}

/// InReq across one statement: `(s ∖ kill) ∪ req`, and through a
/// `move_alloc` the requirement of `from` held by `to`, which now names
/// its memory.
fn apply(st: &Stmt, s: &mut BitSet, req: &BitSet, kill: &BitSet) {
    let carried = crate::activity::moved(st).filter(|(from, _)| s.contains_id(*from));
    s.subtract(kill);
    s.union_with(req);
    if let Some((_, to)) = carried {
        s.insert_id(to);
    }
}

/// Bottom-up TBR summary of a unit (§5.1): over the unit's interface (as
/// in its Dep summary), the variables whose value at entry the unit's
/// adjoint requires, and those the unit certainly overwrites completely.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TbrSummary {
    pub req: BitSet,
    pub kill: BitSet,
}

/// The summaries a unit's TBR analysis applies at its calls.
pub struct Callees<'a> {
    pub program: &'a Program,
    pub dep: &'a Summaries,
    pub tbr: &'a ChunkVec<UnitId, Option<Arc<TbrSummary>>>,
    pub space: Space,
}

impl Callees<'_> {
    /// Whether the result of the reference `c(args)` in `unit` depends on
    /// something in `varied` (its arguments, or the globals it reads).
    fn result_varied(&self, unit: &Unit, c: UnitId, args: &[Arg], varied: &BitSet) -> bool {
        let Some(Some(dep)) = self.dep.get(c) else {
            return true;
        };
        let binds = bind_call(self.program, unit, &self.space, self.dep, c, args);
        dep.result
            .iter()
            .any(|i| binds[i].inputs.intersects(varied))
    }

    fn has(&self, c: UnitId) -> bool {
        matches!(
            (self.dep.get(c), self.tbr.get(c)),
            (Some(Some(_)), Some(Some(_)))
        )
    }

    /// Req(I) and Kill(I) of `call c(args)` from the callee's summaries;
    /// with `globals`, also the module and COMMON variables of `unit` (not
    /// pointers) among that Req: the call's snapshot saves what the
    /// callee's adjoint reads of them when the call or anything after it
    /// may change them ([`crate::checkpoint`]), as it saves the variables
    /// of the actuals ([`snapshot_restored`]). A pointer is left out: the
    /// snapshot saves its target's values, not its association.
    fn translate(
        &self,
        unit: &Unit,
        c: UnitId,
        args: &[Arg],
        (req, kill): (&mut BitSet, &mut BitSet),
        mut globals: Option<&mut BitSet>,
    ) {
        let (Some(Some(dep)), Some(Some(t))) = (self.dep.get(c), self.tbr.get(c)) else {
            return;
        };
        let binds = bind_call(self.program, unit, &self.space, self.dep, c, args);
        let callee = self.program.unit(c);
        for (i, (iface, b)) in dep.iface.iter().zip(&binds).enumerate() {
            if t.req.contains(i) {
                match iface {
                    // The value of the actual expression: all its variables.
                    Iface::Formal(k) => {
                        if let Some(a) = actual(callee, args, *k) {
                            vars(unit, &a.value, req);
                        }
                    }
                    Iface::Global(_) => {
                        req.union_with(&b.inputs);
                        if let Some(out) = globals.as_deref_mut() {
                            for s in b.inputs.ids::<SymbolId>() {
                                let plain = s.index() < unit.symbols.len()
                                    && crate::dep::global_key(self.program, unit, s).is_some()
                                    && is_variable(unit, s)
                                    && !unit.symbol(s).attrs.pointer;
                                if plain {
                                    out.insert_id(s);
                                }
                            }
                        }
                    }
                }
            }
            if t.kill.contains(i) && !b.keeps_old {
                if let Some(o) = b.output {
                    kill.insert(o);
                }
            }
        }
    }
}

fn actual<'a>(callee: &Unit, args: &'a [Arg], k: u32) -> Option<&'a Arg> {
    args.iter().enumerate().find_map(|(pos, a)| {
        let matches = match &a.keyword {
            Some(kw) => callee
                .args
                .get(k as usize)
                .is_some_and(|f| callee.symbol(*f).name == *kw),
            None => pos == k as usize,
        };
        matches.then_some(a)
    })
}

/// The slot of interface variable `i` in `unit` (whose slots are `space`).
fn slot(unit: &Unit, space: &Space, i: &Iface) -> Option<usize> {
    match i {
        Iface::Formal(k) => unit.args.get(*k as usize).map(|s| s.index()),
        Iface::Global(key) => space.globals.get(key).copied(),
    }
}

/// Req(S) and Kill(S): forward from entry, Req grows by what a statement
/// requires of values not yet (certainly) overwritten; "not killed" grows
/// by union over paths, so Kill is what every path overwrites.
pub fn summarize(
    unit: &Unit,
    shape: &UnitShape,
    act: &Activity,
    callees: &Callees,
    dep: &Summary,
    splittable: &crate::split::Splittable,
    preaccumulate: Preaccumulation,
) -> TbrSummary {
    let program = callees.program;
    let n = callees.space.size;
    let mut per_stmt: IdVec<StmtId, StmtReq> = unit
        .stmts
        .iter()
        .map(|st| {
            let c = &shape.counted;
            req_kill(program, unit, act, Some(callees), c, splittable, st)
        })
        .collect();
    // A local Jacobian the reverse sweep may recompute reads its inputs
    // where its graph starts.
    if preaccumulate != Preaccumulation::Off {
        for (first, reads) in crate::preaccumulation::replay_requirements(unit, act) {
            per_stmt[first].req.union_with(&reads);
        }
    }
    // Bits [0, n): required entry values; [n, 2n): not certainly killed.
    let mut boundary = BitSet::new(2 * n);
    for v in 0..n {
        boundary.insert(n + v);
    }
    let cfg = &unit.cfg;
    let sol = solve(cfg, Direction::Forward, &boundary, |node, input| {
        let nd = cfg.node(node);
        let mut s = input.clone();
        let mut apply = |req: &BitSet, kill: &BitSet| {
            for r in req.iter() {
                if s.contains(n + r) {
                    s.insert(r);
                }
            }
            for k in kill.iter() {
                s.remove(n + k);
            }
        };
        if matches!(nd.kind, NodeKind::BasicBlock | NodeKind::Loop) {
            for &id in &nd.stmts {
                let StmtReq { req, kill, .. } = &per_stmt[id];
                match crate::activity::moved(unit.stmt(id)) {
                    // What is required of `to` after a `move_alloc` was
                    // `from`'s: both, conservatively, and neither killed.
                    Some((from, to)) => {
                        let both: BitSet = [from.index(), to.index()].into_iter().collect();
                        apply(&both, &BitSet::default());
                    }
                    None => apply(req, kill),
                }
            }
        }
        s
    });
    let at_exit = sol.after.get(cfg.exit).cloned().unwrap_or_default();
    let mut out = TbrSummary::default();
    for (i, iface) in dep.iface.iter().enumerate() {
        let Some(sl) = slot(unit, &callees.space, iface) else {
            continue;
        };
        if at_exit.contains(sl) {
            out.req.insert(i);
        }
        if !at_exit.contains(n + sl) {
            out.kill.insert(i);
        }
    }
    out
}

/// TBR over the whole program, and what a rerun reuses.
pub struct ProgramTbr {
    pub results: ChunkVec<UnitId, Option<Arc<Tbr>>>,
    pub summaries: ChunkVec<UnitId, Option<Arc<TbrSummary>>>,
    pub store_all: bool,
    /// Whether loops' address variables were left to their plans.
    pub inversion: bool,
    /// Whether local Jacobians were preaccumulated.
    pub preaccumulate: Preaccumulation,
    /// Per unit: the `InReq` context its callers outside its call-graph
    /// component gave it (what a rerun compares).
    pub entry: ChunkVec<UnitId, Arc<BitSet>>,
    /// Per unit: what each of its calls adds to its callee's context.
    pub outgoing: ChunkVec<UnitId, Arc<[(UnitId, BitSet)]>>,
    /// Per unit: its calls that may run split ([`crate::split`]; what a
    /// rerun compares).
    pub splittable: crate::split::SplitTable,
    /// Units whose results this run computed (possibly none); the others'
    /// were reused.
    pub recomputed: IdVec<UnitId, bool>,
}

/// TBR over the whole program: summaries bottom-up (fixpoint inside
/// recursive components), then `InReq` top-down: each call adds the
/// values required after it, in the callee's names, to the callee's
/// context (§5.2, `InReq(S) = InReq(S) ∪ InReq(I)`), so the callee
/// records what it overwrites of them.
pub fn analyze_program(
    program: &Program,
    pa: &ProgramActivity,
    store_all: bool,
    inversion: bool,
) -> IdVec<UnitId, Option<Tbr>> {
    let effects = crate::effects::all(program);
    let shapes = Shapes::new(program);
    let splittable = crate::split::of_program(program, &effects, &shapes);
    analyze_program_with(
        program,
        pa,
        &shapes,
        store_all,
        inversion,
        Preaccumulation::Off,
        &splittable,
        &effects,
        None,
        false,
    )
    .results
    .iter()
    .map(|t| t.as_deref().cloned())
    .collect()
}

/// [`analyze_program`] reusing the previous run's summaries and results
/// for every call-graph component whose units, activity, callees'
/// summaries and interfaces, and entry contexts did not change
/// ([`crate::incremental`]); the results equal a run from scratch. With
/// `same_activity`, the reused run saw this very activity `pa` (a second
/// pass over the same program, which only the split calls in
/// `splittable` tell apart from the first).
#[allow(clippy::too_many_arguments)]
pub fn analyze_program_with(
    program: &Program,
    pa: &ProgramActivity,
    shapes: &Shapes,
    store_all: bool,
    inversion: bool,
    preaccumulate: Preaccumulation,
    splittable: &crate::split::SplitTable,
    effects: &crate::effects::ProgramEffects,
    reuse: Option<(&ProgramTbr, &Changes)>,
    same_activity: bool,
) -> ProgramTbr {
    let n = program.units.len();
    let memo = crate::regions::RegionMemo::default();
    let reuse = reuse.filter(|(p, c)| {
        p.results.len() == n
            && c.body.len() == n
            && p.store_all == store_all
            && p.inversion == inversion
            && p.preaccumulate == preaccumulate
    });
    let spaces: IdVec<UnitId, OnceCell<Box<Space>>> = IdVec::from_fn(n, |_| OnceCell::new());
    let space = |u: UnitId| {
        &**spaces[u].get_or_init(|| Box::new(space_of(program, program.unit(u), &pa.summaries)))
    };
    // A rerun starts from the last run's tables and writes only the
    // units it recomputes.
    let mut sums: ChunkVec<UnitId, Option<Arc<TbrSummary>>> = match reuse {
        Some((prev, _)) => prev.summaries.clone(),
        None => ChunkVec::from_elem(None, n),
    };
    // Whether the inputs of unit u's TBR (its IR, its activity, its
    // callees' interfaces and summaries) changed: per unit, whether a
    // callee's activity summary changed, and (marked as the components
    // are summarised, callees first) whether a callee's TBR summary did.
    let callee_dep_changed = match reuse {
        Some(_) if !same_activity => callers_of(program, &pa.summary_changed),
        _ => IdVec::from_elem(false, n),
    };
    let mut callee_sum_changed: IdVec<UnitId, bool> = IdVec::from_elem(false, n);
    // Whether an input of unit `u` other than its callees' TBR summaries
    // changed.
    let inputs_changed = |u: UnitId| {
        (pa.recomputed[u] && !same_activity)
            || reuse.is_none_or(|(prev, changes)| {
                !crate::split::same_in(&prev.splittable, splittable, u)
                    || changes.reads_changed(u)
                    || callee_dep_changed[u]
            })
    };
    let stale = |u: UnitId, callee_sum_changed: &IdVec<UnitId, bool>| {
        inputs_changed(u) || callee_sum_changed[u]
    };
    // A rerun visits the components of the units whose inputs changed
    // and, callees first, the callers of those whose summary changed.
    let first_stale: Vec<UnitId> = match reuse {
        Some(_) => program
            .units
            .indices()
            .filter(|&u| inputs_changed(u))
            .collect(),
        None => Vec::new(),
    };
    let mut pending = match reuse {
        Some(_) => Pending::of(program, first_stale.iter().copied()),
        None => Pending::every(program),
    };
    // The units marked in `callee_sum_changed`.
    let mut sum_changed_callers: Vec<UnitId> = Vec::new();
    while let Some(k) = pending.callees_first() {
        let scc = &program.call_graph.sccs[k];
        // Inside a component, a summary changes only if an input from
        // outside it does.
        if reuse.is_some() {
            if !scc.iter().any(|&u| stale(u, &callee_sum_changed)) {
                continue;
            }
            // Solved again from nothing, as in a first run.
            for &u in scc {
                if sums[u].is_some() {
                    sums[u] = None;
                }
            }
        }
        for _round in 0..64 {
            let mut changed = false;
            for &u in scc {
                let (Some(act), Some(dep)) = (&pa.activity[u], &pa.summaries[u]) else {
                    continue;
                };
                let unit = program.unit(u);
                let callees = Callees {
                    program,
                    dep: &pa.summaries,
                    tbr: &sums,
                    space: space(u).clone(),
                };
                let shape = shapes.of(program, unit);
                let s = summarize(
                    unit,
                    &shape,
                    act,
                    &callees,
                    dep,
                    &splittable[u],
                    preaccumulate,
                );
                if sums[u].as_deref() != Some(&s) {
                    sums[u] = Some(Arc::new(s));
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        for &u in scc {
            if reuse.is_none_or(|(prev, _)| prev.summaries[u] != sums[u]) {
                pending.add_callers(program, u, k, |c| {
                    callee_sum_changed[c] = true;
                    if reuse.is_some() {
                        sum_changed_callers.push(c);
                    }
                });
            }
        }
    }
    // Written only for the units a rerun visits.
    let mut contexts: ChunkVec<UnitId, BitSet> = ChunkVec::repeated(BitSet::default(), n);
    let mut entry: ChunkVec<UnitId, Arc<BitSet>> = match reuse {
        Some((prev, _)) => prev.entry.clone(),
        None => ChunkVec::from_elem(Arc::default(), n),
    };
    let mut outgoing: ChunkVec<UnitId, Arc<[(UnitId, BitSet)]>> = match reuse {
        Some((prev, _)) => prev.outgoing.clone(),
        None => ChunkVec::from_elem(Arc::from(Vec::new()), n),
    };
    let mut results: ChunkVec<UnitId, Option<Arc<Tbr>>> = match reuse {
        Some((prev, _)) => prev.results.clone(),
        None => ChunkVec::from_elem(None, n),
    };
    let mut recomputed: IdVec<UnitId, bool> = IdVec::from_elem(false, n);
    // In a rerun, contexts are gathered lazily ([`LazyContexts`]): a
    // component's units keep their entry contexts unless a caller's
    // contributions changed; only the components of stale units and
    // those gathering their contexts again are visited.
    let stale_units = first_stale.into_iter().chain(sum_changed_callers);
    let mut dirty = LazyContexts::new(program, reuse.map(|(_, c)| c), stale_units);
    while let Some(k) = dirty.next_component() {
        let scc = &program.call_graph.sccs[k];
        let same_entry = dirty.entries(scc, reuse.is_some(), &mut entry, |u, gather| {
            if !gather {
                return Arc::new(contexts[u].clone());
            }
            let mut ctx = BitSet::default();
            LazyContexts::gather(program, scc, u, &outgoing, |(_, c)| {
                ctx.union_with(c);
            });
            Arc::new(ctx)
        });
        if let Some((prev, _)) = reuse {
            let unchanged = scc.iter().all(|&u| {
                (same_entry || prev.entry[u] == entry[u]) && !stale(u, &callee_sum_changed)
            });
            if unchanged {
                continue;
            }
            for &u in scc {
                contexts[u] = (*entry[u]).clone();
            }
        }
        for &u in scc {
            recomputed[u] = true;
            // A unit without activity any more has no results.
            if results[u].is_some() {
                results[u] = None;
            }
            if !outgoing[u].is_empty() {
                outgoing[u] = Arc::from(Vec::new());
            }
        }
        for _round in 0..64 {
            let mut changed = false;
            for &u in scc {
                let Some(act) = &pa.activity[u] else {
                    continue;
                };
                let unit = program.unit(u);
                let callees = Callees {
                    program,
                    dep: &pa.summaries,
                    tbr: &sums,
                    space: space(u).clone(),
                };
                let shape = shapes.of(program, unit);
                let analyze = |context: &BitSet| {
                    analyze_with(
                        program,
                        unit,
                        &shape,
                        act,
                        store_all,
                        inversion,
                        preaccumulate,
                        Some(&callees),
                        context,
                        &splittable[u],
                    )
                };
                let mut t = analyze(&contexts[u]);
                let single =
                    scc.len() == 1 && !program.call_graph.recursive.get(u).copied().unwrap_or(true);
                if single && !store_all {
                    t = leaving_to_callers(
                        program,
                        effects,
                        &memo,
                        unit,
                        t,
                        &contexts[u],
                        &analyze,
                    );
                }
                let out = call_contexts(program, unit, &t, &pa.summaries, &space);
                for (c, ctx) in &out {
                    // In a rerun, a callee outside the component gathers it.
                    if reuse.is_none() || scc.contains(c) {
                        changed |= contexts[*c].union_with(ctx) && scc.contains(c);
                    }
                }
                outgoing[u] = Arc::from(out);
                results[u] = Some(Arc::new(t));
            }
            if !changed {
                break;
            }
        }
        // Callees whose contributions changed gather their context again.
        if let Some((prev, _)) = reuse {
            for &u in scc {
                dirty.compare(program, &outgoing[u], &prev.outgoing[u]);
            }
        }
    }
    // Records of components no adjoint reads go, in every unit (a
    // reused unit's under its callers' new requirements).
    if !store_all {
        crate::component_reqs::refine(program, pa, &mut results);
    }
    ProgramTbr {
        results,
        splittable: splittable.clone(),
        summaries: sums,
        store_all,
        inversion,
        preaccumulate,
        entry,
        outgoing,
        recomputed,
    }
}

/// `t` (the TBR of `unit` under `context`) with the array formals its
/// callers save that [`crate::left_to_callers`] allows: the unit analysed
/// again (`analyze`) without them in its context, keeping those whose
/// records then vanish or are no longer repeated (what it still records
/// its own adjoint reads; the caller's save restores the rest).
fn leaving_to_callers(
    program: &Program,
    effects: &crate::effects::ProgramEffects,
    memo: &crate::regions::RegionMemo,
    unit: &Unit,
    t: Tbr,
    context: &BitSet,
    analyze: &dyn Fn(&BitSet) -> Tbr,
) -> Tbr {
    let mut left = crate::left_to_callers::candidates(program, effects, memo, unit, &t, context);
    // Twice at most: a formal whose records stay is given back to the
    // context, which may leave records of the others (each round shrinks
    // the set).
    for _ in 0..2 {
        if left.is_empty() {
            return t;
        }
        let mut reduced = context.clone();
        for s in &left {
            reduced.remove_id(*s);
        }
        let mut t2 = analyze(&reduced);
        let before = left.len();
        left.retain(|s| !crate::left_to_callers::repeated(unit, &t2, *s));
        if left.len() == before {
            t2.left_to_callers = left;
            return t2;
        }
    }
    t
}

/// What each CALL of `unit` adds to its callee's `InReq` context: the
/// callee slots whose actuals are required after the call — by the
/// statements before it (`InReq` of the call) or by the call's own
/// reverse, whose partials of expression actuals (`r2 / r1` of
/// `call g(r2, r2 / r1)`) read their variables after the callee's
/// adjoint returns (fuzzer, seed 4102, case 69).
fn call_contexts<'s>(
    program: &Program,
    unit: &Unit,
    t: &Tbr,
    dep_sums: &Summaries,
    space: &impl Fn(UnitId) -> &'s Space,
) -> Vec<(UnitId, BitSet)> {
    let mut out = Vec::new();
    for &site in &program.call_graph.calls_from[unit.id] {
        let site = &program.call_graph.sites[site];
        let Callee::Unit(c) = &site.callee else {
            continue;
        };
        let Some(dep) = &dep_sums[*c] else {
            continue;
        };
        // A CALL, or a function reference of an assignment's right-hand
        // side (each of the statement's references to `c`).
        let refs: Vec<&[Arg]> = match (&unit.stmt(site.stmt).kind, site.function) {
            (StmtKind::Call { args, .. }, false) => vec![args.as_slice()],
            (StmtKind::Assign { rhs, .. }, true) => dfort_ir::queries::function_references(rhs)
                .into_iter()
                .filter(|(f, _)| f == c)
                .map(|(_, a)| a)
                .collect(),
            _ => continue,
        };
        let in_req = &t.in_req[site.stmt];
        let callee = program.unit(*c);
        let mut ctx = BitSet::default();
        for args in refs {
            let mut read_after = in_req.clone();
            for a in args.iter().filter(|a| target(&a.value).is_none()) {
                vars(unit, &a.value, &mut read_after);
            }
            let binds = bind_call(program, unit, space(unit.id), dep_sums, *c, args);
            for (iface, b) in dep.iface.iter().zip(&binds) {
                if b.output.is_some_and(|o| read_after.contains(o)) {
                    if let Some(sl) = slot(callee, space(*c), iface) {
                        ctx.insert(sl);
                    }
                }
            }
            // A split call's callee restores the values without a
            // derivative too (a pivot vector, a counter): nothing around
            // the call saves them ([`crate::checkpoint`]), and its
            // forward routine records them where it overwrites them.
            if t.split.contains(&site.stmt) {
                for (pos, a) in args.iter().enumerate() {
                    let (Some(k), Some((v, _))) = (
                        dfort_ir::queries::formal_index(callee, pos, a),
                        target(&a.value),
                    ) else {
                        continue;
                    };
                    let Some(&f) = callee.args.get(k) else {
                        continue;
                    };
                    if read_after.contains_id(v) && !dfort_ir::dp::differentiable(callee, f) {
                        ctx.insert_id(f);
                    }
                }
            }
        }
        out.push((*c, ctx));
    }
    out
}
