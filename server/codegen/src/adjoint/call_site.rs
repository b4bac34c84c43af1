//! Call sites (checkpointing, Tapenade's default in joint mode): a CALL
//! or a function reference hoisted out of an active assignment
//! ([`crate::hoist`]). The forward sweep pushes what the call overwrites
//! of the values the caller's adjoint needs and, for a differentiated
//! callee, a snapshot of what the callee's adjoint reads among the values
//! anything may change later, then runs the original; the reverse sweep
//! pops the snapshot and calls the callee's adjoint `c_b` (with
//! temporaries for the adjoints of values and stand-ins for actuals the
//! callee's adjoint does not read), then pops the caller's records.
//!
//! Contract: what is saved, in which order and why, is decided by the
//! analysis ([`dfort_analysis::checkpoint`]): read from the unit's
//! decisions for a CALL, asked of the same function for a hoisted
//! reference, never re-derived here; its problems become refusals, and an
//! active actual passed to a routine without a derivative is refused (the
//! rule of [`dfort_analysis::activity::Activity::active_actuals`]).

use super::dispatch::Gen;
use super::sweep::Line;
use crate::calls::{prepare, result_type, DerivActual, Keywords, Prepared};
use crate::trace::SavedValue;
use dfort_analysis::checkpoint::{AliasedActual, CallCheckpoint};
use dfort_analysis::dep::GlobalKey;
use dfort_analysis::references::ReferenceCheckpoint;
use dfort_ir::dp::target;
use dfort_ir::dump::call_statement;
use dfort_ir::queries::mentions;
use dfort_ir::*;

/// The reverse sweep of the function references hoisted out of an
/// assignment, in the two places it goes around the assignment's adjoint.
pub(super) struct HoistedReversal {
    /// The array temporaries and adjoints below allocated again (their
    /// bounds do not change in the unit, [`crate::hoist`]).
    allocations: Vec<String>,
    /// The temporaries pushed for the assignment's adjoint.
    temps: Vec<String>,
    /// The adjoints of the temporaries reset before the adjoint
    /// (`tb = 0.0d0`, or the derivative type's zero).
    zeroed: Vec<String>,
    /// Each reference's reverse sweep, in evaluation order.
    calls: Vec<Vec<Line>>,
}

impl HoistedReversal {
    /// Before the assignment's adjoint: the array temporaries allocated,
    /// the temporaries it reads popped, their adjoints reset.
    pub fn before_adjoint(&self) -> Vec<Line> {
        let allocations = self.allocations.iter().map(|l| Line::Plain(l.clone()));
        let pops = self.temps.iter().rev().map(|tn| Line::pop(tn));
        let zeros = self.zeroed.iter().map(|z| Line::Plain(z.clone()));
        allocations.chain(pops).chain(zeros).collect()
    }

    /// After it: the references reversed, the last first.
    pub fn after_adjoint(self) -> Vec<Line> {
        self.calls.into_iter().rev().flatten().collect()
    }
}

impl Gen<'_> {
    /// A CALL statement (labelled by `label`).
    pub(super) fn call(
        &mut self,
        id: StmtId,
        span: Span,
        name: &str,
        args: &[Arg],
        target: &CallTarget,
        mut label: String,
    ) -> Vec<Line> {
        let callee = match target {
            CallTarget::Unit(c) => Some(*c),
            _ => None,
        };
        self.out.flush_label(&mut label);
        if let Some((from, to)) = dfort_ir::intrinsics::move_alloc(&self.inp.unit.stmt(id).kind) {
            return self.move_alloc(from, to);
        }
        let rev = self.call_site(id, span, callee, name, args, None, None);
        // In split mode the callee's forward routine runs in its place.
        let split = self.inp.calls.get(&id).filter(|cp| cp.split);
        match (split, callee) {
            (Some(_), Some(c)) if self.inp.diff.contains(c) => {
                self.out.trace.construct(id, crate::trace::Reversed::Split);
                let forward = self.inp.diff.routine_name(self.inp.program, c, "_fwd");
                self.out
                    .fwd
                    .line(&call_statement(&self.inp.unit, &forward, args));
            }
            _ => self
                .out
                .fwd
                .line(&call_statement(&self.inp.unit, name, args)),
        }
        rev
    }

    /// `call move_alloc(from, to)`: `to`'s own allocation (and its
    /// adjoint's) goes onto the tape, then the allocations move, the
    /// adjoint's with the array's; the reverse sweep moves them back
    /// (`to`'s adjoint becomes `from`'s: the adjoint of the copy) and
    /// restores `to`'s.
    fn move_alloc(&mut self, from: &Expr, to: &Expr) -> Vec<Line> {
        let inp = self.inp;
        let unit = &inp.unit;
        let pair = |e: &Expr| {
            let mut v = vec![dfort_ir::dump::expr(unit, e)];
            v.extend(inp.bref(e));
            v
        };
        let (f, t) = (pair(from), pair(to));
        if f.len() != t.len() {
            self.out.refuse(
                from.span,
                (
                    &dfort_syntax::rules::INTERNAL_ERROR,
                    format!(
                        "`move_alloc({}, {})`: one of them has an adjoint, the other none",
                        f[0], t[0]
                    ),
                ),
            );
        }
        for x in &t {
            self.out
                .fwd
                .line(&format!("call dfort_push_allocation({x})"));
        }
        for (a, b) in f.iter().zip(&t) {
            self.out.fwd.line(&format!("call move_alloc({a}, {b})"));
        }
        let mut rev: Vec<Line> = f
            .iter()
            .zip(&t)
            .rev()
            .map(|(a, b)| Line::Plain(format!("call move_alloc({b}, {a})")))
            .collect();
        rev.extend(
            t.iter()
                .rev()
                .map(|x| Line::Plain(format!("call dfort_pop_allocation({x})"))),
        );
        rev
    }

    /// The function references hoisted out of assignment `id`: each runs
    /// after its snapshot (the statement's label goes on a `continue`
    /// before them); then the temporaries the assignment's adjoint reads
    /// (`adjoint`: whether it has one) are pushed, after every snapshot so
    /// that they pop first. Without an adjoint, the references have
    /// neither snapshot nor reverse sweep.
    pub(super) fn hoisted_references(
        &mut self,
        id: StmtId,
        rhs: &Expr,
        adjoint: bool,
        label: &mut String,
    ) -> HoistedReversal {
        let inp = self.inp;
        let unit = &inp.unit;
        let hoisted = inp.hoisted.get(&id).map(Vec::as_slice).unwrap_or(&[]);
        if !hoisted.is_empty() {
            self.out.flush_label(label);
        }
        // Whether each reference's reverse sweep runs, and its checkpoint:
        // the analysis decides both ([`dfort_analysis::references`]). A
        // reference it did not decide (this root's derivative routines
        // differ from those of the analysis' roots) is decided here by
        // the same rule: without the assignment's adjoint no temporary's
        // adjoint is ever seeded, so unless the function writes an
        // argument or a global (what it overwrites may need saving
        // around it; with a derivative, its reverse sweep must run), or its result feeds a
        // reference that runs (innermost references come first; fuzzer,
        // seed 4200, case 161), the reference has no reverse sweep, nor a
        // snapshot for one.
        let decided: Vec<Option<&ReferenceCheckpoint>> = {
            let refs = inp.references.get(&id).map(Vec::as_slice).unwrap_or(&[]);
            hoisted
                .iter()
                .enumerate()
                .map(|(j, h)| {
                    refs.get(j)
                        .filter(|r| r.callee == h.callee && r.span == h.span)
                        .filter(|r| {
                            let differentiated = inp.diff.contains(h.callee);
                            r.checkpoint
                                .as_ref()
                                .is_none_or(|cp| cp.callee_routine == differentiated)
                        })
                })
                .collect()
        };
        // The temporaries the assignment's adjoint reads are pushed: not
        // one whose result the analysis found only in linear positions.
        let pushed_result = |h: &dfort_ir::hoist::Hoisted,
                             decided: &Option<&ReferenceCheckpoint>| {
            adjoint && mentions(rhs, h.temp) && decided.is_none_or(|r| r.result_read)
        };
        let mut reversed = vec![false; hoisted.len()];
        for j in (0..hoisted.len()).rev() {
            if let Some(r) = decided[j] {
                reversed[j] = r.checkpoint.is_some();
                continue;
            }
            let h = &hoisted[j];
            let feeds = hoisted[j + 1..]
                .iter()
                .zip(&reversed[j + 1..])
                .any(|(k, &r)| r && k.args.iter().any(|a| mentions(&a.value, h.temp)));
            reversed[j] = adjoint
                || inp.diff.writes_derivatives(h.callee)
                || inp.diff.changes_state(h.callee)
                || feeds;
        }
        let mut calls = Vec::new();
        let mut allocations = Vec::new();
        for ((h, &reversed), decided) in hoisted.iter().zip(&reversed).zip(&decided) {
            if reversed {
                // The temporaries of nested references whose results the
                // decided snapshot saves.
                let decided = decided.and_then(|r| {
                    let temps: Vec<_> = r
                        .saved_results
                        .iter()
                        .filter_map(|&i| hoisted.get(i))
                        .collect();
                    let cp = r.checkpoint.as_ref()?;
                    for t in &temps {
                        self.out
                            .trace
                            .result_push(id, t.callee, t.span, Some(h.callee));
                    }
                    Some((cp, temps.iter().map(|h| h.temp).collect()))
                });
                calls.push(self.call_site(
                    id,
                    h.span,
                    Some(h.callee),
                    &h.name,
                    &h.args,
                    Some(h.temp),
                    decided,
                ));
            }
            let tn = &unit.symbol(h.temp).name;
            for line in h.allocation(unit, tn) {
                self.out.fwd.line(&line);
            }
            let popped = pushed_result(h, decided);
            let adjoint_temp = inp.bname.get(&h.temp);
            for t in popped.then_some(tn).into_iter().chain(adjoint_temp) {
                allocations.extend(h.allocation(unit, t));
            }
            let reference = dfort_ir::dump::reference(unit, &h.name, &h.args);
            self.out.fwd.line(&format!("{tn} = {reference}"));
        }
        let mut temps = Vec::new();
        for (h, decided) in hoisted.iter().zip(&decided) {
            if pushed_result(h, decided) {
                let tn = &unit.symbol(h.temp).name;
                self.out.push(tn);
                self.out.trace.result_push(id, h.callee, h.span, None);
                temps.push(tn.clone());
            }
        }
        let zeroed = hoisted
            .iter()
            .filter_map(|h| {
                let b = inp.bname.get(&h.temp)?;
                let ty = &unit.symbol(h.temp).ty;
                let zero = crate::derived::zero_of(inp.program, unit, ty, "_b");
                Some(format!("{b} = {zero}"))
            })
            .collect();
        HoistedReversal {
            allocations,
            temps,
            zeroed,
            calls,
        }
    }

    /// A call to `callee(args)` — a CALL, or a hoisted function reference
    /// whose value goes to `result` (with the checkpoint `reference` the
    /// analysis decided for it, if any, and the temporaries of nested
    /// references its snapshot saves first): writes to the forward sweep what
    /// its checkpoint saves and returns its reverse sweep. A CALL's
    /// checkpoint is the analysis' (`UnitDecisions::calls`, a reference's
    /// `UnitDecisions::references`), taken as decided when the callee's
    /// derivative routine is the one this root writes; the generator
    /// decides none itself (a call without one is refused).
    #[allow(clippy::too_many_arguments)]
    fn call_site(
        &mut self,
        id: StmtId,
        span: Span,
        callee: Option<UnitId>,
        name: &str,
        args: &[Arg],
        result: Option<SymbolId>,
        reference: Option<(&CallCheckpoint, Vec<SymbolId>)>,
    ) -> Vec<Line> {
        let inp = self.inp;
        let differentiated = callee.is_some_and(|c| inp.diff.contains(c));
        let decided = match result {
            None => inp.calls.get(&id).map(|cp| (&**cp, Vec::new())),
            Some(_) => reference,
        }
        .filter(|(cp, _)| cp.callee_routine == differentiated);
        let Some((cp, results)) = decided else {
            // Never seen on the kernels or the fuzzer's programs: a call
            // the analyses left out is refused, not decided here.
            self.out.refuse(
                span,
                format!("the analyses decided no checkpoint for this call of `{name}`"),
            );
            return Vec::new();
        };
        self.checkpointed(id, span, callee, args, result, cp, results.as_slice())
    }

    /// The forward and reverse sweeps of a call with checkpoint `cp`, whose
    /// snapshot first saves the temporaries `results`.
    #[allow(clippy::too_many_arguments)]
    fn checkpointed(
        &mut self,
        id: StmtId,
        span: Span,
        callee: Option<UnitId>,
        args: &[Arg],
        result: Option<SymbolId>,
        cp: &CallCheckpoint,
        results: &[SymbolId],
    ) -> Vec<Line> {
        let inp = self.inp;
        let unit = &inp.unit;
        let differentiated = cp.callee_routine;
        // Module variables the callee reads that the unit does not
        // declare are brought in under a new name.
        // Those of which a region is saved go first, so that they pop
        // after the snapshot restores the variables their bounds read.
        let mut hidden_regions: Vec<(String, String)> = Vec::new();
        let mut snapshot_hidden: Vec<(String, String)> = Vec::new();
        let mut locals: Vec<String> = Vec::new();
        let mut saved_hidden = Vec::new();
        for k in &cp.hidden {
            if let Some(local) = self.hidden_global(k) {
                saved_hidden.push(k);
                if locals.contains(&local) {
                    continue;
                }
                match cp.hidden_region(k) {
                    Some(h) => hidden_regions.push(hidden_region_calls(unit, h, &local)),
                    None => snapshot_hidden.push(plain_calls(&local)),
                }
                locals.push(local);
            }
        }
        // The checkpoint's problems, and an active value passed to a
        // procedure without a derivative routine, are the facts' refusals
        // ([`dfort_analysis::refusals`]).
        // The caller's records, then the snapshot (the hidden module
        // variables last).
        let records: Vec<(String, String)> =
            cp.records.iter().map(|r| saved_calls(unit, r)).collect();
        let mut snapshot: Vec<(String, String)> = hidden_regions
            .into_iter()
            .chain(results.iter().map(|t| plain_calls(&unit.symbol(*t).name)))
            .chain(cp.snapshot.iter().map(|r| saved_calls(unit, r)))
            .collect();
        for r in &cp.records {
            self.out.trace.around_call(id, r.variable);
        }
        for v in results
            .iter()
            .chain(cp.snapshot.iter().map(|r| &r.variable))
        {
            self.out.trace.call_snapshot(id, SavedValue::Variable(*v));
        }
        for k in saved_hidden {
            self.out
                .trace
                .call_snapshot(id, SavedValue::Global(k.clone()));
        }
        snapshot.extend(snapshot_hidden);
        for (push, _) in records.iter().chain(&snapshot) {
            self.out.fwd.line(push);
        }
        let mut rev: Vec<Line> = snapshot
            .iter()
            .rev()
            .map(|(_, pop)| Line::Plain(pop.clone()))
            .collect();
        if let (true, Some(c)) = (differentiated, callee) {
            let suffix = if cp.split { "_rev" } else { "_b" };
            rev.extend(self.adjoint_call(span, c, args, result, &cp.aliased, suffix));
        }
        rev.extend(
            records
                .iter()
                .rev()
                .map(|(_, pop)| Line::Plain(pop.clone())),
        );
        rev
    }

    /// The name a global the unit does not declare has in this adjoint
    /// routine: a module variable brought in by `use m, only: dfort_g<n>
    /// => name`, a COMMON member declared with its whole block under new
    /// names ([`Gen::hidden_common`]); `None` for other globals.
    pub(super) fn hidden_global(&mut self, k: &GlobalKey) -> Option<String> {
        match k {
            GlobalKey::Common { block, index } => self.hidden_common(block, *index),
            GlobalKey::Shared { unit: m, symbol } => {
                let program = self.inp.program;
                let mu = program.unit(*m);
                // A procedure's SAVE'd local lives in the module the
                // adjoint shares it in.
                let module = match mu.kind {
                    UnitKind::Module => mu.name.clone(),
                    // Shared by the analyses' other roots, not this one's
                    // (its value reaches none of this root's derivatives).
                    _ if !self.inp.diff.shares(*m, *symbol) => return None,
                    _ => crate::names::DiffSet::state_module(program, *m),
                };
                let n = self.out.hidden.len() + 1;
                let local = self.out.hidden.entry(k.clone()).or_insert_with(|| {
                    (
                        format!("dfort_g{n}"),
                        module,
                        mu.symbol(*symbol).name.clone(),
                    )
                });
                Some(local.0.clone())
            }
        }
    }

    /// The name member `index` of COMMON block `block` (which the unit
    /// does not declare) has in this adjoint routine, where the whole
    /// block is declared under new names (`dfort_c<b>_<k>`).
    fn hidden_common(&mut self, block: &str, index: u32) -> Option<String> {
        let layout = dfort_ir::queries::common_layout(self.inp.program, block)?;
        let b = self.out.hidden_commons.len() + 1;
        let names = self
            .out
            .hidden_commons
            .entry(block.to_string())
            .or_insert_with(|| {
                let owner = self.inp.program.unit(layout.unit);
                let names: Vec<String> = (1..=layout.members.len())
                    .map(|k| format!("dfort_c{b}_{k}"))
                    .collect();
                let mut lines: Vec<String> = layout
                    .members
                    .iter()
                    .zip(&layout.bounds)
                    .zip(&names)
                    .map(|((m, dims), name)| {
                        let ty = dfort_ir::dump::type_name(&owner.symbol(*m).ty);
                        let shape: Vec<String> =
                            dims.iter().map(|(lo, hi)| format!("{lo}:{hi}")).collect();
                        match shape.is_empty() {
                            true => format!("{ty} :: {name}"),
                            false => format!("{ty} :: {name}({})", shape.join(", ")),
                        }
                    })
                    .collect();
                lines.push(format!("common /{block}/ {}", names.join(", ")));
                (names, lines)
            });
        names.0.get(index as usize).cloned()
    }

    /// The adjoint an aliased actual (whose adjoint is `r`, of rank
    /// `rank`) passes instead of `r`: a temporary, zero or holding `r`
    /// (or its region) before the call (`pre`), added into `r` or copied
    /// back after it (`post`).
    fn alias_adjoint(
        &mut self,
        a: &AliasedActual,
        r: &str,
        rank: usize,
        pre: &mut Vec<String>,
        post: &mut Vec<String>,
    ) -> String {
        let unit = &self.inp.unit;
        if let Some(region) = &a.region {
            let t = self.out.elemental_temp(1);
            let n = region.dims.len();
            // The temporary spans the actual's storage from the region's
            // start up to its cap.
            let cap = dfort_ir::dump::expr(unit, &region.cap);
            let args = region.runtime_args(unit).join(", ");
            pre.push(format!("if (allocated({t})) deallocate({t})"));
            pre.push(format!("allocate({t}(max({cap}, 1)))"));
            pre.push(format!("{t} = 0.0d0"));
            if !a.accumulate {
                pre.push(format!("call dfort_region_get_r8_{n}({r}, {args}, {t})"));
            }
            let op = if a.accumulate { "add" } else { "put" };
            post.push(format!("call dfort_region_{op}_r8_{n}({r}, {args}, {t})"));
            return t;
        }
        let t = if rank == 0 {
            self.out.ztemp("real(8)".into())
        } else {
            let t = self.out.elemental_temp(rank);
            pre.push(format!("if (allocated({t})) deallocate({t})"));
            pre.push(format!("allocate({t}, mold={r})"));
            t
        };
        if a.accumulate {
            pre.push(format!("{t} = 0.0d0"));
            post.push(format!("{r} = {r} + {t}"));
        } else {
            pre.push(format!("{t} = {r}"));
            post.push(format!("{r} = {t}"));
        }
        t
    }

    /// `call c_b(...)`, with temporaries for the adjoints of values.
    fn adjoint_call(
        &mut self,
        span: Span,
        c: UnitId,
        args: &[Arg],
        result: Option<SymbolId>,
        aliased: &[AliasedActual],
        suffix: &str,
    ) -> Vec<Line> {
        let inp = self.inp;
        let cu = inp.program.unit(c);
        let prepared = prepare(
            inp.program,
            inp.diff,
            &inp.unit,
            inp.module.as_ref(),
            c,
            args,
            'b',
            |e| inp.bref(e),
        );
        let Prepared {
            module,
            names: cn,
            args: dargs,
        } = match prepared {
            Ok(p) => p,
            Err(ms) => {
                for m in ms {
                    self.out.refuse(span, m);
                }
                return Vec::new();
            }
        };
        self.out.used_modules.extend(module);
        self.out.called.insert(c);
        let mut pre = Vec::new();
        let mut post = Vec::new();
        let mut list = Vec::new();
        // The formal each entry of `dargs` is bound to (absent optional
        // arguments have no entry).
        let bound: Vec<(SymbolId, &Arg)> = crate::calls::in_formal_order(cu, args)
            .into_iter()
            .enumerate()
            .filter_map(|(k, a)| Some((cu.args[k], a?)))
            .collect();
        // An elemental procedure applied to arrays: its adjoint runs
        // element by element, so what it adds into must be an array of the
        // result's shape (a subroutine's: its first array actual's) too;
        // a scalar actual's adjoint gets one (`dfort_te<k>`, summed into
        // it afterwards).
        let elementwise = match result {
            Some(r) => Some(r)
                .filter(|r| cu.elemental && inp.unit.symbol(*r).rank() > 0)
                .and_then(|r| Some((inp.bname.get(&r)?.clone(), inp.unit.symbol(r).rank()))),
            None if cu.elemental => {
                dargs
                    .iter()
                    .zip(&bound)
                    .find_map(|((primal, d, _), (_, a))| {
                        let rank = crate::partials::rank_of(inp.program, &inp.unit, &a.value);
                        match d {
                            _ if rank == 0 => None,
                            Some(DerivActual::Ref(r)) => Some((r.clone(), rank)),
                            _ => target(&a.value).map(|_| (primal.clone(), rank)),
                        }
                    })
            }
            None => None,
        };
        // With an absent optional argument (trailing ones too) the
        // result's adjoint goes by keyword.
        let by_keyword = crate::calls::in_formal_order(cu, args)
            .iter()
            .any(|a| a.is_none());
        for (k, (primal, d, kw)) in dargs.into_iter().enumerate() {
            let scalar_actual = bound.get(k).is_some_and(|(_, a)| {
                crate::partials::rank_of(inp.program, &inp.unit, &a.value) == 0
            });
            let spread = elementwise
                .as_ref()
                .filter(|_| scalar_actual && d.is_some());
            let spread = spread.map(|(rb, rank)| {
                let te = self.out.elemental_temp(*rank);
                pre.push(format!("if (allocated({te})) deallocate({te})"));
                pre.push(format!("allocate({te}, mold={rb})"));
                pre.push(format!("{te} = 0.0d0"));
                te
            });
            // An expression whose value the callee's adjoint does not read
            // is not evaluated again: its variables may hold other values
            // by now (nothing restored them), an index out of bounds too.
            let stand_in = bound.get(k).and_then(|(f, a)| {
                let unread = target(&a.value).is_none() && !inp.callee_reads(c, Some(*f));
                unread.then(|| self.stand_in(cu, *f)).flatten()
            });
            match stand_in {
                Some((z, init)) => {
                    pre.push(format!("{z} = {init}"));
                    list.push(Keywords::primal(&kw, z));
                }
                None => list.push(Keywords::primal(&kw, primal)),
            }
            match (d, spread) {
                (None, _) => {}
                (Some(DerivActual::Ref(r)), Some(te)) => {
                    post.push(format!("{r} = {r} + sum({te})"));
                    list.push(Keywords::derivative(&kw, te));
                }
                (Some(DerivActual::Value(e, _)), Some(te)) => {
                    self.adj(e, &format!("sum({te})"), 0, &mut post);
                    list.push(Keywords::derivative(&kw, te));
                }
                (Some(DerivActual::Ref(r)), None) => {
                    let formal = bound
                        .get(k)
                        .and_then(|(f, _)| cu.args.iter().position(|x| x == f));
                    match aliased.iter().find(|a| Some(a.formal) == formal) {
                        Some(a) => {
                            let rank = bound.get(k).map_or(0, |(_, x)| {
                                crate::partials::rank_of(inp.program, &inp.unit, &x.value)
                            });
                            let t = self.alias_adjoint(a, &r, rank, &mut pre, &mut post);
                            list.push(Keywords::derivative(&kw, t));
                        }
                        None => list.push(Keywords::derivative(&kw, r)),
                    }
                }
                (Some(DerivActual::Value(e, f)), None) => {
                    if cu.symbol(f).ty.base == BaseType::Derived {
                        self.out.refuse(
                            e.span,
                            "a derived-type value that is not a variable is passed where the callee differentiates it; its derivative is not generated yet",
                        );
                        continue;
                    }
                    let z = self.out.ztemp(dfort_ir::dump::type_name(&cu.symbol(f).ty));
                    pre.push(format!("{z} = 0.0d0"));
                    self.adj(e, &z, 0, &mut post);
                    list.push(Keywords::derivative(&kw, z));
                }
            }
        }
        if let (Some(r), Some(cr)) = (result, cu.result) {
            if let Some(formal) = cn.get(&cr) {
                let b = match inp.bname.get(&r) {
                    Some(b) => b.clone(),
                    None => {
                        let z = self.out.ztemp(result_type(cu));
                        pre.push(format!("{z} = 0.0d0"));
                        z
                    }
                };
                match by_keyword {
                    true => list.push(format!("{formal}={b}")),
                    false => list.push(b),
                }
            }
        }
        let mut out: Vec<Line> = pre.into_iter().map(Line::Plain).collect();
        out.push(Line::Plain(format!(
            "call {}({})",
            self.inp.diff.routine_name(self.inp.program, c, suffix),
            list.join(", ")
        )));
        out.extend(post.into_iter().map(Line::Plain));
        out
    }

    /// A temporary of the type of the scalar formal `f` of `cu`, with the
    /// value to set it to, passed in place of an actual the callee's
    /// adjoint does not read; `None` for arrays and types without one.
    fn stand_in(&mut self, cu: &Unit, f: SymbolId) -> Option<(String, &'static str)> {
        let sym = cu.symbol(f);
        let init = match sym.ty.base {
            _ if sym.rank() > 0 => return None,
            BaseType::Real | BaseType::Integer | BaseType::Complex => "0",
            BaseType::Logical => ".false.",
            _ => return None,
        };
        Some((self.out.ztemp(dfort_ir::dump::type_name(&sym.ty)), init))
    }
}

/// The push and the pop of a value the tape holds as it is.
fn plain_calls(item: &str) -> (String, String) {
    (
        format!("call dfort_push({item})"),
        format!("call dfort_pop({item})"),
    )
}

/// The push and the pop of one saved reference: a region through the
/// runtime's routine for its type and rank
/// (`call dfort_push_region_r8_2(a(1, j), lda, 1, m, 1, 1, n, 1)`), anything
/// else as it is.
fn saved_calls(unit: &Unit, saved: &dfort_analysis::checkpoint::Saved) -> (String, String) {
    let (Some(r), Some(push), Some(pop)) = (
        &saved.region,
        saved.region_routine(unit, "push"),
        saved.region_routine(unit, "pop"),
    ) else {
        return plain_calls(&saved.text(unit));
    };
    let first = dfort_ir::dump::expr(unit, &saved.reference);
    region_calls((push, pop), first, r.runtime_args(unit))
}

/// The push and the pop of the region `h` of a global the unit does not
/// declare, which the adjoint names `local`
/// (`call dfort_push_region_r8_2(dfort_c1_1(-2, -2, k, bi, bj), 51, …)`).
fn hidden_region_calls(
    unit: &Unit,
    h: &dfort_analysis::checkpoint::HiddenRegion,
    local: &str,
) -> (String, String) {
    let first: Vec<String> = h
        .first
        .iter()
        .map(|e| dfort_ir::dump::expr(unit, e))
        .collect();
    let first = format!("{local}({})", first.join(", "));
    let routines = (h.region_routine("push"), h.region_routine("pop"));
    region_calls(routines, first, h.region.runtime_args(unit))
}

/// `call push(first, args…)` and `call pop(first, args…)`.
fn region_calls(
    (push, pop): (String, String),
    first: String,
    args: Vec<String>,
) -> (String, String) {
    let args = std::iter::once(first)
        .chain(args)
        .collect::<Vec<_>>()
        .join(", ");
    (
        format!("call {push}({args})"),
        format!("call {pop}({args})"),
    )
}
