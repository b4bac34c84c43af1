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
//! Contract: what a callee reads and writes comes from its effects
//! ([`dfort_analysis::effects`]) and what its adjoint reads from its
//! decisions (`entry_needs`); subscripts are pushed after what they
//! subscript so that they pop first; an active actual passed to a routine
//! without a derivative is refused (the rule of
//! [`dfort_analysis::activity::active_actuals`]).

use super::assign::mentions;
use super::dispatch::Gen;
use super::sweep::Line;
use super::tape::{pushable, subscript_rank};
use crate::calls::{prepare, result_type, DerivActual, Prepared};
use crate::fortran::call_line;
use dfort_analysis::activity::active_actuals;
use dfort_analysis::bitset::BitSet;
use dfort_analysis::dep::{global_key, GlobalKey};
use dfort_analysis::dp::{differentiable, index_vars, is_variable, target};
use dfort_analysis::effects::Effects;
use dfort_ir::dump::expr as print;
use dfort_ir::*;
use std::collections::BTreeSet;

/// A reference a call site saves: its text, its variable, and whether it
/// is the whole variable.
type Item = (String, SymbolId, bool);

/// The reverse sweep of the function references hoisted out of an
/// assignment, in the two places it goes around the assignment's adjoint.
pub(super) struct HoistedReversal {
    /// The temporaries pushed for the assignment's adjoint.
    temps: Vec<String>,
    /// The adjoints of the temporaries, reset before the adjoint.
    zeroed: Vec<String>,
    /// Each reference's reverse sweep, in evaluation order.
    calls: Vec<Vec<Line>>,
}

impl HoistedReversal {
    /// Before the assignment's adjoint: the temporaries it reads popped,
    /// their adjoints reset.
    pub fn before_adjoint(&self) -> Vec<Line> {
        let pops = self.temps.iter().rev().map(|tn| Line::pop(tn));
        let zeros = self
            .zeroed
            .iter()
            .map(|b| Line::Plain(format!("{b} = 0.0d0")));
        pops.chain(zeros).collect()
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
        let rev = self.call_site(id, span, callee, name, args, None);
        self.out.fwd.line(&call_line(&self.inp.unit, name, args));
        rev
    }

    /// The function references hoisted out of assignment `id`: each runs
    /// after its snapshot (the statement's label goes on a `continue`
    /// before them); then the temporaries the assignment's adjoint reads
    /// (`adjoint`: whether it has one) are pushed, after every snapshot so
    /// that they pop first.
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
        let mut calls = Vec::new();
        for h in hoisted {
            calls.push(self.call_site(id, h.span, Some(h.callee), &h.name, &h.args, Some(h.temp)));
            let a: Vec<String> = h.args.iter().map(|x| print(unit, &x.value)).collect();
            let tn = &unit.symbol(h.temp).name;
            self.out
                .fwd
                .line(&format!("{tn} = {}({})", h.name, a.join(", ")));
        }
        let mut temps = Vec::new();
        for h in hoisted {
            if adjoint && mentions(rhs, h.temp) {
                let tn = &unit.symbol(h.temp).name;
                self.out.push(tn);
                temps.push(tn.clone());
            }
        }
        let zeroed = hoisted
            .iter()
            .filter_map(|h| inp.bname.get(&h.temp).cloned())
            .collect();
        HoistedReversal {
            temps,
            zeroed,
            calls,
        }
    }

    /// A call to `callee(args)` — a CALL, or a hoisted function reference
    /// whose value goes to `result`: writes to the forward sweep what its
    /// reversal needs saved and returns its reverse sweep.
    fn call_site(
        &mut self,
        id: StmtId,
        span: Span,
        callee: Option<UnitId>,
        name: &str,
        args: &[Arg],
        result: Option<SymbolId>,
    ) -> Vec<Line> {
        let inp = self.inp;
        let unit = &inp.unit;
        let in_req = inp
            .tbr
            .in_req
            .get(id.0 as usize)
            .cloned()
            .unwrap_or_default();
        let differentiated = callee.is_some_and(|c| inp.diff.contains(c));
        // What the call may overwrite, and (for a differentiated callee)
        // what it reads: caller references, with whether each is whole.
        let mut written: Vec<Item> = Vec::new();
        let mut read: Vec<Item> = Vec::new();
        let mut indices = BitSet::default();
        let mut snapshot_hidden: Vec<String> = Vec::new();
        match callee {
            Some(c) => {
                let cu = inp.program.unit(c);
                let fx = &inp.effects[c.0 as usize];
                for (k, a) in crate::calls::in_formal_order(cu, args)
                    .into_iter()
                    .enumerate()
                {
                    let Some(a) = a else { continue };
                    let k32 = k as u32;
                    let rank = cu.symbol(cu.args[k]).rank();
                    index_vars(unit, &a.value, &mut indices);
                    // The snapshot restores what the callee's adjoint
                    // reads, not everything the callee reads.
                    let needed = inp.callee_reads(c, Some(cu.args[k]));
                    match actual_item(unit, &a.value, rank) {
                        Some(item) => {
                            if fx.written_formals.contains(&k32) {
                                written.push(item.clone());
                            }
                            if fx.read_formals.contains(&k32) && needed {
                                read.push(item);
                            }
                        }
                        None if needed => leaf_items(unit, &a.value, &mut read),
                        None => {}
                    }
                }
                let mut declared = BTreeSet::new();
                for i in 0..inp.orig.symbols.len() {
                    let s = SymbolId(i as u32);
                    let Some(key) = global_key(inp.program, inp.orig, s) else {
                        continue;
                    };
                    let item = (unit.symbol(s).name.clone(), s, true);
                    if fx.written_globals.contains(&key) {
                        written.push(item.clone());
                    }
                    // The callee's own symbol for the global, if it has one.
                    let theirs = (0..cu.symbols.len() as u32)
                        .map(SymbolId)
                        .find(|cs| global_key(inp.program, cu, *cs).as_ref() == Some(&key));
                    if fx.read_globals.contains(&key) && inp.callee_reads(c, theirs) {
                        read.push(item);
                    }
                    declared.insert(key);
                }
                if differentiated {
                    snapshot_hidden = self.hidden_globals(span, cu, fx, &declared);
                }
            }
            None => {
                for a in args {
                    if let Some(item) = actual_item(unit, &a.value, 1) {
                        written.push(item);
                    }
                }
            }
        }
        if !differentiated {
            let active = active_actuals(unit, inp.orig.symbols.len(), inp.act, id, args);
            if !active.is_empty() {
                let names: Vec<String> = active
                    .iter()
                    .map(|s| unit.symbol(*s).name.clone())
                    .collect();
                self.out.refuse(
                    span,
                    dfort_analysis::activity::no_derivative_for_call(
                        name,
                        &names,
                        callee.is_some(),
                    ),
                );
            }
        }
        // The caller records what the call overwrites of the values its
        // own adjoint needs (a differentiated callee restores the real
        // ones itself, from its calling context).
        let mut records: Vec<String> = Vec::new();
        written.sort_by_key(|(_, s, whole)| subscript_rank(unit, *s, *whole));
        for (item, s, whole) in &written {
            if !in_req.contains(s.0 as usize) {
                continue;
            }
            if differentiated && differentiable(inp.orig, *s) {
                continue;
            }
            if let Err(m) = pushable(unit, *s, *whole) {
                self.out
                    .refuse(span, format!("{m} (around the call to `{name}`)"));
            }
            if !records.contains(item) {
                records.push(item.clone());
                self.out.trace.around_call(id, *s);
            }
        }
        // The snapshot: what the callee reads (and overwrites of what
        // the caller needs), among the values anything may change.
        let mut snapshot: Vec<String> = Vec::new();
        if differentiated {
            let mut items = read;
            items.extend(
                written
                    .iter()
                    .filter(|(_, s, _)| in_req.contains(s.0 as usize))
                    .cloned(),
            );
            for i in indices.iter() {
                let s = SymbolId(i as u32);
                // The reversed loop replays its own index.
                if !self.out.replayed.contains(&s) {
                    items.push((unit.symbol(s).name.clone(), s, true));
                }
            }
            // Subscripts are popped before what they subscript.
            items.sort_by_key(|(_, s, whole)| subscript_rank(unit, *s, *whole));
            for (item, s, whole) in items {
                if !inp.modifiable(id, s) || snapshot.contains(&item) {
                    continue;
                }
                if let Err(m) = pushable(unit, s, whole) {
                    self.out
                        .refuse(span, format!("{m} (saved for the call to `{name}`)"));
                }
                snapshot.push(item);
            }
            snapshot.extend(snapshot_hidden);
        }
        for item in records.iter().chain(&snapshot) {
            self.out.push(item);
        }
        let mut rev: Vec<Line> = snapshot.iter().rev().map(|item| Line::pop(item)).collect();
        if let (true, Some(c)) = (differentiated, callee) {
            rev.extend(self.adjoint_call(span, c, args, result));
        }
        rev.extend(records.iter().rev().map(|item| Line::pop(item)));
        rev
    }

    /// Globals the differentiated callee `cu` (of effects `fx`) reads that this routine does
    /// not declare (`declared`) but may change: module variables are
    /// brought in under a new name and saved (their local names are
    /// returned); COMMON members cannot be, and are refused.
    fn hidden_globals(
        &mut self,
        span: Span,
        cu: &Unit,
        fx: &Effects,
        declared: &BTreeSet<GlobalKey>,
    ) -> Vec<String> {
        let inp = self.inp;
        let mine = &inp.effects[inp.orig.id.0 as usize];
        let hidden: Vec<GlobalKey> = fx
            .read_globals
            .iter()
            .filter(|k| !declared.contains(*k) && mine.written_globals.contains(*k))
            .cloned()
            .collect();
        let mut saved = Vec::new();
        for k in hidden {
            match &k {
                GlobalKey::Shared { unit: m, symbol }
                    if inp.program.unit(*m).kind == UnitKind::Module =>
                {
                    let mu = inp.program.unit(*m);
                    let n = self.out.hidden.len() + 1;
                    let local = self
                        .out
                        .hidden
                        .entry(k.clone())
                        .or_insert_with(|| {
                            (
                                format!("dfort_g{n}"),
                                mu.name.clone(),
                                mu.symbol(*symbol).name.clone(),
                            )
                        })
                        .0
                        .clone();
                    if let Err(m) = pushable(mu, *symbol, true) {
                        self.out
                            .refuse(span, format!("{m} (saved for the call to `{}`)", cu.name));
                    } else if !saved.contains(&local) {
                        saved.push(local);
                    }
                }
                _ => self.out.refuse(
                    span,
                    format!(
                        "`{}` reads {}, which `{}` does not declare but may change; declare it in `{}` so that the call can be checkpointed",
                        cu.name,
                        crate::limits::describe(inp.program, &k),
                        inp.orig.name,
                        inp.orig.name
                    ),
                ),
            }
        }
        saved
    }

    /// `call c_b(...)`, with temporaries for the adjoints of values.
    fn adjoint_call(
        &mut self,
        span: Span,
        c: UnitId,
        args: &[Arg],
        result: Option<SymbolId>,
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
        for (k, (primal, d)) in dargs.into_iter().enumerate() {
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
                    list.push(z);
                }
                None => list.push(primal),
            }
            match d {
                None => {}
                Some(DerivActual::Ref(r)) => list.push(r),
                Some(DerivActual::Value(e, f)) => {
                    let z = self.out.ztemp(dfort_ir::dump::type_name(&cu.symbol(f).ty));
                    pre.push(format!("{z} = 0.0d0"));
                    self.adj(e, &z, 0, &mut post);
                    list.push(z);
                }
            }
        }
        if let (Some(r), Some(cr)) = (result, cu.result) {
            if cn.contains_key(&cr) {
                match inp.bname.get(&r) {
                    Some(b) => list.push(b.clone()),
                    None => {
                        let z = self.out.ztemp(result_type(cu));
                        pre.push(format!("{z} = 0.0d0"));
                        list.push(z);
                    }
                }
            }
        }
        let mut out: Vec<Line> = pre.into_iter().map(Line::Plain).collect();
        out.push(Line::Plain(format!(
            "call {}_b({})",
            cu.name,
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

/// The reference a variable actual stands for, for saving: the actual
/// itself when the formal is a scalar or the actual a section, else the
/// whole array (sequence association).
fn actual_item(unit: &Unit, a: &Expr, formal_rank: usize) -> Option<Item> {
    match &a.kind {
        ExprKind::Var(v) => Some((unit.symbol(*v).name.clone(), *v, true)),
        ExprKind::ArrayRef { array, subs } => {
            let section = subs.iter().any(|s| matches!(s, Subscript::Range { .. }));
            if formal_rank == 0 || section {
                Some((print(unit, a), *array, false))
            } else {
                Some((unit.symbol(*array).name.clone(), *array, true))
            }
        }
        _ => None,
    }
}

/// The variable references an expression reads, and the index variables
/// of its array references.
fn leaf_items(unit: &Unit, e: &Expr, out: &mut Vec<Item>) {
    e.walk(&mut |x| match &x.kind {
        ExprKind::Var(v) if is_variable(unit, *v) => {
            out.push((unit.symbol(*v).name.clone(), *v, true))
        }
        ExprKind::ArrayRef { array, .. } if is_variable(unit, *array) => {
            out.push((print(unit, x), *array, false));
        }
        _ => {}
    });
}
