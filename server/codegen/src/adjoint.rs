//! Adjoint (reverse-mode) code, joint mode: `r_b` runs a forward sweep
//! (the original statements, minus those adjoint liveness proves useless,
//! plus the pushes TBR asks for and the control-flow records of paper
//! 001) and then the reverse sweep (adjoint statements in reverse order).
//!
//! Contract (Tapenade's convention): every formal with a derivative is
//! followed by its adjoint `xb`; on entry the dependents' adjoints hold ȳ
//! and the independents' what to accumulate into; on exit the
//! independents' adjoints hold x̄ + Jᵀȳ and pure outputs' adjoints are 0.
//! Control flow reversal (paper 001): in structured units (Algorithm 5)
//! counted DO loops whose bounds the body does not change are replayed
//! from their bounds (the index is saved around the loop), counted WHILE
//! loops ([`counted_while`]) get their trip count from their bound, other
//! loops push their trip count, IF and SELECT CASE push the arm taken; units
//! with jumps (GO TO, computed GO TO, arithmetic IF, EXIT, CYCLE, early
//! RETURN) push the id of each basic block as it is left, after the
//! integers its adjoint reads, and the reverse sweep pops ids until the
//! entry marker.
//!
//! Calls (checkpointing, Tapenade's default in joint mode): the forward
//! sweep runs the original callee after pushing a snapshot of what the
//! callee reads (and of what it overwrites that the caller's adjoint
//! needs) among the values anything may change later; the reverse sweep
//! pops the snapshot and calls the callee's adjoint `c_b`, which re-runs
//! the callee's forward sweep and then its reverse sweep. The callee's
//! TBR, analysed with its calling contexts (paper 000 §5.2), records and
//! restores the real values the caller needs; the caller records the
//! integers and logicals the callee overwrites. A function `f` referenced
//! in an active expression is hoisted into a temporary ([`crate::hoist`])
//! and differentiated as `f_b(args, argsb…, fb)`. Array assignments are
//! reversed element-wise through an array temporary; `sum`,
//! `dot_product`, `matmul` and `transpose` have reverse rules. What this
//! version cannot reverse — STOP, complex variables, module variables
//! with adjoints shared between routines, array-valued functions — is
//! refused with its location: no code is produced.

use crate::calls::{host_module, prepare, result_type, DerivActual, Prepared};
use crate::fortran::{case_line, declaration_order, jump_line, uses, Writer};
use crate::hoist::{hoist, HoistMap};
use crate::names::DiffSet;
use crate::partials::partials;
use crate::trace::{Reversed, RoutineTrace};
use crate::{check_root, Refusal};
use dfort_analysis::activity::{active_actuals, Activity};
use dfort_analysis::address_report::Choice;
use dfort_analysis::bitset::BitSet;
use dfort_analysis::counted_while::CountedWhile;
use dfort_analysis::decisions::{decide, UnitDecisions};
use dfort_analysis::dep::{global_key, GlobalKey};
use dfort_analysis::dp::{differentiable, dp_of, index_vars, is_variable, target};
use dfort_analysis::effects::{Effects, LocalEffects};
use dfort_analysis::recovery::{Origin, Plan};
use dfort_analysis::reversal::{Reversal, UnitReversal};
use dfort_analysis::tbr::{self, Tbr};
use dfort_analysis::undo::UnitUndo;
use dfort_ir::dump::expr as print;
use dfort_ir::*;
use std::collections::{BTreeSet, HashMap};

/// The stack runtime the adjoints use (`dfort_stack.f90`).
pub const RUNTIME: &str = include_str!("../runtime/dfort_stack.f90");

pub use dfort_analysis::decisions::Recording;

/// What every routine of one adjoint shares.
struct Shared<'a> {
    program: &'a Program,
    diff: &'a DiffSet,
    tbrs: &'a [Option<Tbr>],
    effects: &'a [Effects],
    decided: &'a [Option<UnitDecisions>],
}

struct Gen<'a> {
    sh: &'a Shared<'a>,
    /// The unit with its function references hoisted.
    unit: &'a Unit,
    /// The unit as the analyses saw it.
    orig: &'a Unit,
    act: &'a Activity,
    tbr: &'a Tbr,
    /// The recovery plans of the unit's loops (paper 003), by DO statement.
    plans: HashMap<StmtId, Plan>,
    /// How each construct is reversed (the analysis decides: replayed,
    /// counted from its bound, trips or arm pushed, basic-block ids).
    reversal: UnitReversal,
    /// The types of the plans' temporaries `dfort_i<n>`.
    int_temps: Vec<String>,
    /// In units with jumps: the assignments the reverse sweep inverts.
    undo: UnitUndo,
    store_all: bool,
    dead: Vec<StmtId>,
    /// What the forward sweep pushes for TBR (the analysis decides).
    pushed: Vec<tbr::Record>,
    bname: HashMap<SymbolId, String>,
    hoisted: HoistMap,
    /// Per statement: what it or anything after it may write.
    written_from: Vec<BitSet>,
    refusals: Vec<Refusal>,
    fwd: Writer,
    /// Loops seen so far (each gets its own counter variables).
    counters: usize,
    /// How many DO loops enclose the statement being generated.
    loop_depth: usize,
    /// Indices of the enclosing counted loops the reverse sweep replays.
    replayed: Vec<SymbolId>,
    /// Scalar temporaries passed as derivatives of values.
    ztemps: Vec<String>,
    /// Whether `dfort_j` (the column index of matrix adjoints) is used.
    column_loops: bool,
    /// Ranks of the array temporaries of array assignments.
    array_temps: BTreeSet<usize>,
    /// Derivative modules (`m_b`) of the callees this routine calls.
    used_modules: BTreeSet<String>,
    /// The units whose adjoint routines this routine calls.
    called: BTreeSet<UnitId>,
    /// The variables varied just before the statement being reversed.
    varied: BitSet,
    /// The module this routine's adjoint lives in.
    module: Option<String>,
    /// Module variables callees read that the unit does not see, brought
    /// in as `use m, only: local => name` to be saved around calls.
    hidden: std::collections::BTreeMap<GlobalKey, (String, String, String)>,
    /// Unstructured units (GO TO, EXIT, CYCLE, early RETURN) are reversed
    /// by recording basic-block ids (paper 001's fallback) instead.
    unstructured: bool,
    /// Per basic block (node index): its reverse sweep, and the integer
    /// values its adjoint reads, saved at the block's end.
    block_rev: HashMap<usize, Vec<Line>>,
    snapshots: HashMap<usize, Vec<String>>,
    /// What the code written so far does ([`crate::trace`]).
    trace: RoutineTrace,
}

fn p(s: String) -> String {
    format!("({s})")
}

impl<'a> Gen<'a> {
    fn refuse(&mut self, span: Span, message: impl Into<crate::Reason>) {
        self.refusals.push(Refusal::new(span, message));
    }

    fn has_adjoint(&self, s: SymbolId) -> bool {
        self.bname.contains_key(&s)
    }

    /// Whether a derivative flows through `e` here: it holds a variable
    /// that has an adjoint and is varied just before the statement being
    /// reversed (hoisted temporaries always are) — TBR's test, so that the
    /// adjoint reads only what TBR restores.
    fn active_inside(&self, e: &Expr) -> bool {
        let n = self.orig.symbols.len();
        dp_of(self.unit, e).iter().any(|i| {
            self.bname.contains_key(&SymbolId(i as u32)) && (i >= n || self.varied.contains(i))
        })
    }

    /// `xb`, `xb(i)` for a reference whose variable has an adjoint.
    fn bref(&self, e: &Expr) -> Option<String> {
        match &e.kind {
            ExprKind::Var(s) => self.bname.get(s).cloned(),
            ExprKind::ArrayRef { array, .. } => {
                let b = self.bname.get(array)?;
                let printed = print(self.unit, e);
                let n = self.unit.symbol(*array).name.len();
                Some(format!("{b}{}", &printed[n.min(printed.len())..]))
            }
            _ => None,
        }
    }

    /// Adjoint statements `c̄ += ∂/∂c · m` for every active leaf of `e`;
    /// `mr` is the rank of `m` (a scalar leaf under an array `m` gets
    /// `sum(m)`).
    fn adj(&mut self, e: &Expr, m: &str, mr: usize, out: &mut Vec<String>) {
        if !self.active_inside(e) {
            return;
        }
        let unit = self.unit;
        // A scalar operand of an array expression: its adjoint is the sum
        // of the array adjoint.
        let collapsed;
        let (m, mr) = if mr > 0
            && rank_of(unit, e) == 0
            && !matches!(e.kind, ExprKind::Var(_) | ExprKind::ArrayRef { .. })
        {
            collapsed = format!("sum({m})");
            (collapsed.as_str(), 0)
        } else {
            (m, mr)
        };
        match &e.kind {
            ExprKind::Var(_) | ExprKind::ArrayRef { .. } => {
                if let Some(b) = self.bref(e) {
                    if rank_of(unit, e) == 0 && mr > 0 {
                        out.push(format!("{b} = {b} + sum({m})"));
                    } else {
                        out.push(format!("{b} = {b} + {m}"));
                    }
                }
            }
            ExprKind::FunctionCall { name, .. } => {
                self.refuse(
                    e.span,
                    format!("the active reference to `{name}` cannot be differentiated (array-valued or unknown function)"),
                );
            }
            ExprKind::Intrinsic { name, args }
                if matches!(
                    name.as_str(),
                    "sum" | "dot_product" | "matmul" | "transpose"
                ) =>
            {
                self.adj_array_intrinsic(e, name, args, m, mr, out);
            }
            _ => match partials(unit, e) {
                Some(parts) => {
                    for (child, d) in parts {
                        // The multiplier's own rank: a scalar adjoint times
                        // a scalar partial stays a scalar.
                        let r = mr.max(partial_rank(unit, e, child));
                        let mm = format!("{} * {}", p(m.to_string()), p(d));
                        self.adj(child, &mm, r, out);
                    }
                }
                None => self.refuse(
                    e.span,
                    format!(
                        "no adjoint rule for `{}` with active arguments",
                        print(unit, e)
                    ),
                ),
            },
        }
    }

    /// Reverse rules of the array intrinsics.
    fn adj_array_intrinsic(
        &mut self,
        e: &Expr,
        name: &str,
        args: &[Arg],
        m: &str,
        mr: usize,
        out: &mut Vec<String>,
    ) {
        let unit = self.unit;
        let v = |x: &Expr| p(print(unit, x));
        let m = p(m.to_string());
        let keywords = args.iter().any(|a| a.keyword.is_some());
        match (name, args.len()) {
            ("sum", 1) if !keywords && mr == 0 => {
                // Every element gets the scalar adjoint (broadcast: the
                // adjoint stays a scalar for the rules below).
                self.adj(&args[0].value, &m, 0, out);
            }
            // A broadcast scalar is its own transpose.
            ("transpose", 1) if mr == 0 => self.adj(&args[0].value, &m, 0, out),
            ("transpose", 1) => self.adj(&args[0].value, &format!("transpose({m})"), 2, out),
            ("dot_product", 2) if !keywords && mr == 0 => {
                let (a, b) = (&args[0].value, &args[1].value);
                self.adj(a, &format!("{m} * {}", v(b)), 1, out);
                self.adj(b, &format!("{m} * {}", v(a)), 1, out);
            }
            ("matmul", 2) if !keywords => {
                let (a, b) = (&args[0].value, &args[1].value);
                let (ra, rb) = (rank_of(unit, a), rank_of(unit, b));
                // A scalar adjoint (the product under a sum) is spread to
                // the product's shape first.
                let m = match (mr, ra, rb) {
                    (0, 2, 1) => format!("spread({m}, 1, size({}, 1))", v(a)),
                    (0, 1, 2) => format!("spread({m}, 1, size({}, 2))", v(b)),
                    (0, 2, 2) => format!(
                        "spread(spread({m}, 1, size({}, 1)), 2, size({}, 2))",
                        v(a),
                        v(b)
                    ),
                    _ => m,
                };
                let (ma, mb) = match (ra, rb) {
                    (2, 1) => (
                        outer(&m, &v(b)),
                        format!("matmul(transpose({}), {m})", v(a)),
                    ),
                    (1, 2) => (format!("matmul({}, {m})", v(b)), outer(&v(a), &m)),
                    (2, 2) => (
                        format!("matmul({m}, transpose({}))", v(b)),
                        format!("matmul(transpose({}), {m})", v(a)),
                    ),
                    _ => {
                        self.refuse(e.span, "no adjoint rule for this `matmul`");
                        return;
                    }
                };
                // A whole matrix times a vector variable: the outer
                // product accumulated column by column, without the
                // temporaries the array form needs.
                let column_loop = match (&a.kind, &b.kind, ra, rb) {
                    (ExprKind::Var(av), ExprKind::Var(bv), 2, 1) => {
                        self.bname.get(av).cloned().map(|ab| (ab, *bv))
                    }
                    _ => None,
                };
                match column_loop {
                    Some((ab, bv)) => {
                        let bn = &unit.symbol(bv).name;
                        self.column_loops = true;
                        out.push(format!("do dfort_j = 1, size({bn})"));
                        out.push(format!(
                            "  {ab}(:, dfort_j) = {ab}(:, dfort_j) + {m} * {bn}(dfort_j)"
                        ));
                        out.push("end do".into());
                    }
                    None => self.adj(a, &ma, ra, out),
                }
                self.adj(b, &mb, rb, out);
            }
            _ => self.refuse(
                e.span,
                format!(
                    "no adjoint rule for `{}` with these arguments",
                    print(unit, e)
                ),
            ),
        }
    }

    /// Whether statement `id` or anything that may run after it may change
    /// `s` (hoisted temporaries always may). An `intent(in)` dummy never
    /// changes: no conforming callee writes it.
    fn modifiable(&self, id: StmtId, s: SymbolId) -> bool {
        if s.0 as usize >= self.orig.symbols.len() {
            return true;
        }
        let sym = self.orig.symbol(s);
        if matches!(sym.storage, Storage::Dummy(_)) && sym.intent == Some(Intent::In) {
            return false;
        }
        self.written_from
            .get(id.0 as usize)
            .is_some_and(|w| w.contains(s.0 as usize))
    }

    /// Whether the adjoint routine of callee `c` reads the value its
    /// symbol `s` holds when it is called (unknown symbols: yes).
    fn callee_reads(&self, c: UnitId, s: Option<SymbolId>) -> bool {
        let needs = self
            .sh
            .decided
            .get(c.0 as usize)
            .and_then(|d| d.as_ref())
            .and_then(|d| d.entry_needs.as_ref());
        match (needs, s) {
            (Some(n), Some(s)) => n.contains(s.0 as usize),
            _ => true,
        }
    }

    /// The reference a variable actual stands for, for saving: the actual
    /// itself when the formal is a scalar or the actual a section, else
    /// the whole array (sequence association).
    fn actual_item(&self, a: &Expr, formal_rank: usize) -> Option<(String, SymbolId, bool)> {
        match &a.kind {
            ExprKind::Var(v) => Some((self.unit.symbol(*v).name.clone(), *v, true)),
            ExprKind::ArrayRef { array, subs } => {
                let section = subs.iter().any(|s| matches!(s, Subscript::Range { .. }));
                if formal_rank == 0 || section {
                    Some((print(self.unit, a), *array, false))
                } else {
                    Some((self.unit.symbol(*array).name.clone(), *array, true))
                }
            }
            _ => None,
        }
    }

    /// The variable references an expression reads, and the index
    /// variables of its array references.
    fn leaf_items(&self, e: &Expr, out: &mut Vec<(String, SymbolId, bool)>) {
        let unit = self.unit;
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
        let unit = self.unit;
        let sh = self.sh;
        let in_req = self
            .tbr
            .in_req
            .get(id.0 as usize)
            .cloned()
            .unwrap_or_default();
        let differentiated = callee.is_some_and(|c| sh.diff.contains(c));
        // What the call may overwrite, and (for a differentiated callee)
        // what it reads: caller references, with whether each is whole.
        let mut written: Vec<(String, SymbolId, bool)> = Vec::new();
        let mut read: Vec<(String, SymbolId, bool)> = Vec::new();
        let mut indices = BitSet::default();
        let mut snapshot_hidden: Vec<String> = Vec::new();
        match callee {
            Some(c) => {
                let cu = sh.program.unit(c);
                let fx = &sh.effects[c.0 as usize];
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
                    let needed = self.callee_reads(c, Some(cu.args[k]));
                    match self.actual_item(&a.value, rank) {
                        Some(item) => {
                            if fx.written_formals.contains(&k32) {
                                written.push(item.clone());
                            }
                            if fx.read_formals.contains(&k32) && needed {
                                read.push(item);
                            }
                        }
                        None if needed => self.leaf_items(&a.value, &mut read),
                        None => {}
                    }
                }
                let mut declared = BTreeSet::new();
                for i in 0..self.orig.symbols.len() {
                    let s = SymbolId(i as u32);
                    let Some(key) = global_key(sh.program, self.orig, s) else {
                        continue;
                    };
                    let item = (unit.symbol(s).name.clone(), s, true);
                    if fx.written_globals.contains(&key) {
                        written.push(item.clone());
                    }
                    // The callee's own symbol for the global, if it has one.
                    let theirs = (0..cu.symbols.len() as u32)
                        .map(SymbolId)
                        .find(|cs| global_key(sh.program, cu, *cs).as_ref() == Some(&key));
                    if fx.read_globals.contains(&key) && self.callee_reads(c, theirs) {
                        read.push(item);
                    }
                    declared.insert(key);
                }
                if differentiated {
                    // Globals the callee reads that this routine does not
                    // declare but that may change: module variables are
                    // brought in under a new name; COMMON members cannot.
                    let mine = &sh.effects[self.orig.id.0 as usize];
                    let hidden: Vec<GlobalKey> = fx
                        .read_globals
                        .iter()
                        .filter(|k| !declared.contains(*k) && mine.written_globals.contains(*k))
                        .cloned()
                        .collect();
                    for k in hidden {
                        match &k {
                            GlobalKey::Shared { unit: m, symbol }
                                if sh.program.unit(*m).kind == UnitKind::Module =>
                            {
                                let mu = sh.program.unit(*m);
                                let n = self.hidden.len() + 1;
                                let local = self
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
                                    self.refuse(span, format!("{m} (saved for the call to `{}`)", cu.name));
                                } else if !snapshot_hidden.contains(&local) {
                                    snapshot_hidden.push(local);
                                }
                            }
                            _ => self.refuse(
                                span,
                                format!(
                                    "`{}` reads {}, which `{}` does not declare but may change; declare it in `{}` so that the call can be checkpointed",
                                    cu.name,
                                    crate::limits::describe(sh.program, &k),
                                    self.orig.name,
                                    self.orig.name
                                ),
                            ),
                        }
                    }
                }
            }
            None => {
                for a in args {
                    if let Some(item) = self.actual_item(&a.value, 1) {
                        written.push(item);
                    }
                }
            }
        }
        if !differentiated {
            let active = active_actuals(unit, self.orig.symbols.len(), self.act, id, args);
            if !active.is_empty() {
                let names: Vec<String> = active
                    .iter()
                    .map(|s| unit.symbol(*s).name.clone())
                    .collect();
                self.refuse(
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
            if differentiated && differentiable(self.orig, *s) {
                continue;
            }
            if let Err(m) = pushable(unit, *s, *whole) {
                self.refuse(span, format!("{m} (around the call to `{name}`)"));
            }
            if !records.contains(item) {
                records.push(item.clone());
                self.trace.around_call(id, *s);
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
                if !self.replayed.contains(&s) {
                    items.push((unit.symbol(s).name.clone(), s, true));
                }
            }
            // Subscripts are popped before what they subscript.
            items.sort_by_key(|(_, s, whole)| subscript_rank(unit, *s, *whole));
            for (item, s, whole) in items {
                if !self.modifiable(id, s) || snapshot.contains(&item) {
                    continue;
                }
                if let Err(m) = pushable(unit, s, whole) {
                    self.refuse(span, format!("{m} (saved for the call to `{name}`)"));
                }
                snapshot.push(item);
            }
            snapshot.extend(snapshot_hidden);
        }
        for item in records.iter().chain(&snapshot) {
            self.fwd.line(&format!("call dfort_push({item})"));
        }
        let mut rev: Vec<Line> = snapshot
            .iter()
            .rev()
            .map(|item| Line::Plain(format!("call dfort_pop({item})")))
            .collect();
        if let (true, Some(c)) = (differentiated, callee) {
            rev.extend(self.adjoint_call(span, c, args, result));
        }
        rev.extend(
            records
                .iter()
                .rev()
                .map(|item| Line::Plain(format!("call dfort_pop({item})"))),
        );
        rev
    }

    /// `call c_b(...)`, with temporaries for the adjoints of values.
    fn adjoint_call(
        &mut self,
        span: Span,
        c: UnitId,
        args: &[Arg],
        result: Option<SymbolId>,
    ) -> Vec<Line> {
        let sh = self.sh;
        let cu = sh.program.unit(c);
        let prepared = prepare(
            sh.program,
            sh.diff,
            self.unit,
            self.module.as_ref(),
            c,
            args,
            'b',
            |e| self.bref(e),
        );
        let Prepared {
            module,
            names: cn,
            args: dargs,
        } = match prepared {
            Ok(p) => p,
            Err(ms) => {
                for m in ms {
                    self.refuse(span, m);
                }
                return Vec::new();
            }
        };
        self.used_modules.extend(module);
        self.called.insert(c);
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
                let unread = target(&a.value).is_none() && !self.callee_reads(c, Some(*f));
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
                    self.ztemps
                        .push(dfort_ir::dump::type_name(&cu.symbol(f).ty));
                    let z = format!("dfort_z{}", self.ztemps.len());
                    pre.push(format!("{z} = 0.0d0"));
                    self.adj(e, &z, 0, &mut post);
                    list.push(z);
                }
            }
        }
        if let (Some(r), Some(cr)) = (result, cu.result) {
            if cn.contains_key(&cr) {
                match self.bname.get(&r) {
                    Some(b) => list.push(b.clone()),
                    None => {
                        self.ztemps.push(result_type(cu));
                        let z = format!("dfort_z{}", self.ztemps.len());
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
        self.ztemps.push(dfort_ir::dump::type_name(&sym.ty));
        Some((format!("dfort_z{}", self.ztemps.len()), init))
    }

    fn recorded(&self, st: StmtId) -> Vec<SymbolId> {
        self.pushed
            .iter()
            .filter(|r| r.stmt == st)
            .map(|r| r.variable)
            .collect()
    }

    /// Forward sweep of a block; returns the reverse sweep of the block as
    /// lines in the order they must run.
    fn block(&mut self, ids: &[StmtId]) -> Vec<Line> {
        let mut rev: Vec<Vec<Line>> = Vec::new();
        for id in ids {
            rev.push(self.stmt(*id));
        }
        rev.into_iter().rev().flatten().collect()
    }

    /// The basic block a statement starts or ends, in unstructured mode.
    fn block_edge(&self, id: StmtId, first: bool) -> Option<usize> {
        if !self.unstructured {
            return None;
        }
        let n = (*self.unit.cfg.stmt_node.get(id.0 as usize)?)?;
        let node = self.unit.cfg.node(n);
        let edge = if first {
            node.stmts.first()
        } else {
            node.stmts.last()
        };
        (node.kind == dfort_ir::cfg::NodeKind::BasicBlock && edge == Some(&id))
            .then_some(n.0 as usize)
    }

    /// Records that a basic block was left — only blocks whose adjoint
    /// does something: the reverse sweep skips the others anyway.
    fn save_snapshot(&mut self, node: usize) -> bool {
        let work = self.block_rev.get(&node).is_some_and(|l| !l.is_empty())
            || self.snapshots.contains_key(&node);
        if !work {
            return false;
        }
        for v in self.snapshots.get(&node).cloned().unwrap_or_default() {
            self.fwd.line(&format!("call dfort_push({v})"));
        }
        self.fwd.line(&format!("call dfort_push({})", node + 1));
        true
    }

    /// Forward-sweep lines, the first carrying the statement's label.
    fn labelled_lines(&mut self, label: &str, lines: &[String]) {
        for (i, l) in lines.iter().enumerate() {
            let lab = if i == 0 { label } else { "" };
            self.fwd.line(&format!("{lab}{l}"));
        }
    }

    /// Pushes before a planned loop of the handled variables a statement
    /// before it needs (the reversed loop does not give them back).
    fn entry_saves(&mut self, plan: Option<&Plan>) -> Vec<String> {
        plan.map(|p| {
            p.saved_at_entry
                .iter()
                .map(|v| format!("call dfort_push({})", self.unit.symbol(*v).name))
                .collect()
        })
        .unwrap_or_default()
    }

    fn entry_restores(&self, plan: Option<&Plan>) -> Vec<Line> {
        plan.map(|p| {
            p.saved_at_entry
                .iter()
                .rev()
                .map(|v| Line::Plain(format!("call dfort_pop({})", self.unit.symbol(*v).name)))
                .collect()
        })
        .unwrap_or_default()
    }

    /// After a planned loop: pushes the values its reversal starts from
    /// (the end-of-loop values of its loop-carried address variables and
    /// the invariants the recovery reads); returns their pops.
    fn exit_saves(&mut self, plan: Option<&Plan>) -> Vec<Line> {
        let Some(p) = plan else {
            return Vec::new();
        };
        let names: Vec<String> = p
            .saved_at_exit
            .iter()
            .map(|v| self.unit.symbol(*v).name.clone())
            .collect();
        for n in &names {
            self.fwd.line(&format!("call dfort_push({n})"));
        }
        names
            .iter()
            .rev()
            .map(|n| Line::Plain(format!("call dfort_pop({n})")))
            .collect()
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
        let then = plan
            .and_then(|p| p.computed_at_exit)
            .map(|v| {
                format!(
                    "{} = {}",
                    self.unit.symbol(v).name,
                    cw.final_value(&counter)
                )
            })
            .into_iter()
            .collect();
        Line::CountLoop {
            k,
            count: Some(cw.trip_count(self.unit)),
            counter,
            then,
            body,
        }
    }

    /// The body of a planned loop (paper 003): its forward sweep, which
    /// pushes the values the plan stores at the end of each iteration
    /// (copied when a later statement overwrites them), and its reverse
    /// sweep with the inversions and recomputations interleaved.
    fn planned_body(&mut self, plan: &Plan) -> Vec<Line> {
        let n = plan.body.len();
        let mut before: Vec<Vec<(String, String)>> = vec![Vec::new(); n];
        let mut after: Vec<Vec<(String, String)>> = vec![Vec::new(); n];
        let mut pushed = Vec::new();
        for &v in &plan.stored {
            let ver = &plan.versions[v];
            let var = self.unit.symbol(ver.var).name.clone();
            let redefined_after = |p: Option<usize>| {
                plan.versions.iter().any(|w| {
                    w.var == ver.var
                        && matches!(w.origin, Origin::Def(q) if p.is_none_or(|p| q > p))
                })
            };
            let copy = |at: &mut Vec<(String, String)>, this: &mut Self| {
                let t = crate::recover::Temps(&mut this.int_temps).fresh(this.unit, ver.var);
                at.push((t.clone(), var.clone()));
                t
            };
            let loc = match ver.origin {
                Origin::Start if redefined_after(None) && n > 0 => copy(&mut before[0], self),
                Origin::Def(p) if redefined_after(Some(p)) => copy(&mut after[p], self),
                Origin::Opaque(p) => copy(&mut before[p], self),
                _ => var.clone(),
            };
            pushed.push(loc);
        }
        let mut revs = Vec::new();
        for (pos, id) in plan.body.iter().enumerate() {
            for (t, var) in &before[pos] {
                self.fwd.line(&format!("{t} = {var}"));
            }
            revs.push(Some(self.stmt(*id)));
            for (t, var) in &after[pos] {
                self.fwd.line(&format!("{t} = {var}"));
            }
        }
        for l in &pushed {
            self.fwd.line(&format!("call dfort_push({l})"));
        }
        let mut temps = crate::recover::Temps(&mut self.int_temps);
        match crate::recover::reverse_iteration(self.unit, plan, &mut temps) {
            Ok((items, used)) => {
                for (v, how) in used {
                    self.trace
                        .recovery(Some(plan.stmt), plan.versions[v].var, how);
                }
                items
                    .into_iter()
                    .flat_map(|it| match it {
                        crate::recover::Item::Line(s) => vec![Line::Plain(s)],
                        crate::recover::Item::Stmt(p) => {
                            revs.get_mut(p).and_then(Option::take).unwrap_or_default()
                        }
                    })
                    .collect()
            }
            Err(m) => {
                let span = self.unit.stmt(plan.stmt).span;
                self.refuse(span, m);
                Vec::new()
            }
        }
    }

    fn stmt(&mut self, id: StmtId) -> Vec<Line> {
        let st = self.unit.stmt(id);
        let is_jump = st.kind.is_jump();
        let mut label = st.label.map(|l| format!("{l} ")).unwrap_or_default();
        // A block records its id (after the integers its adjoint reads) as
        // it is left: before its closing jump, or after its last statement.
        let end = self.block_edge(id, false);
        if let (Some(n), true) = (end, is_jump) {
            if !label.is_empty() {
                self.fwd.line(&format!("{label}continue"));
                label.clear();
            }
            if self.save_snapshot(n) {
                self.trace.construct(id, Reversed::BlockPushed);
            }
        }
        let rev = self.stmt_body(id, label);
        if self.unstructured {
            let node = self
                .unit
                .cfg
                .stmt_node
                .get(id.0 as usize)
                .copied()
                .flatten();
            let in_block =
                node.filter(|n| self.unit.cfg.node(*n).kind == dfort_ir::cfg::NodeKind::BasicBlock);
            if let Some(n) = in_block {
                let lines = self.block_rev.entry(n.0 as usize).or_default();
                let mut rev = rev;
                rev.append(lines);
                *lines = rev;
            }
            if let (Some(n), false) = (end, is_jump) {
                let _ = self.save_snapshot(n);
            }
            return Vec::new();
        }
        rev
    }

    fn stmt_body(&mut self, id: StmtId, label: String) -> Vec<Line> {
        let unit = self.unit;
        let st = unit.stmt(id);
        self.varied = self
            .act
            .varied_before
            .get(id.0 as usize)
            .cloned()
            .unwrap_or_default();
        let mut rev = Vec::new();
        match &st.kind {
            StmtKind::Assign { lhs, rhs } => {
                let hoisted = self.hoisted.get(&id).cloned().unwrap_or_default();
                let dead = self.dead.contains(&id);
                let Some((t, whole)) = target(lhs) else {
                    self.refuse(st.span, "this assignment target cannot be differentiated");
                    return rev;
                };
                if matches!(lhs.kind, ExprKind::Component { .. }) && self.has_adjoint(t) {
                    self.refuse(
                        st.span,
                        "derived-type components are not differentiated yet",
                    );
                }
                if self.has_adjoint(t) && unit.symbol(t).ty.base == BaseType::Complex {
                    self.refuse(
                        st.span,
                        "complex variables are not differentiated in reverse mode yet",
                    );
                }
                let record = !dead && self.recorded(id).contains(&t);
                if record {
                    if let Err(m) = pushable(unit, t, whole) {
                        self.refuse(st.span, m);
                    }
                    self.trace.push(id, t);
                    if self.undo.exact.contains(t.0 as usize) {
                        self.trace.recovery(None, t, Choice::Stored);
                    }
                }
                let adjoint = self.has_adjoint(t) && self.act.active_after(id, t);
                // Hoisted function references run first, each after its
                // snapshot; the values the adjoint reads are pushed.
                let mut label = label;
                if !hoisted.is_empty() && !label.is_empty() {
                    self.fwd.line(&format!("{label}continue"));
                    label.clear();
                }
                let mut call_revs = Vec::new();
                let mut pushed_temps = Vec::new();
                for h in &hoisted {
                    call_revs.push(self.call_site(
                        id,
                        h.span,
                        Some(h.callee),
                        &h.name,
                        &h.args,
                        Some(h.temp),
                    ));
                    let a: Vec<String> = h.args.iter().map(|x| print(unit, &x.value)).collect();
                    let tn = &unit.symbol(h.temp).name;
                    self.fwd
                        .line(&format!("{tn} = {}({})", h.name, a.join(", ")));
                }
                // The values the assignment's adjoint reads, pushed after
                // every snapshot so that they pop first.
                for h in &hoisted {
                    if adjoint && mentions(rhs, h.temp) {
                        let tn = &unit.symbol(h.temp).name;
                        self.fwd.line(&format!("call dfort_push({tn})"));
                        pushed_temps.push(tn.clone());
                    }
                }
                if record {
                    self.fwd
                        .line(&format!("{label}call dfort_push({})", print(unit, lhs)));
                    self.fwd
                        .line(&format!("{} = {}", print(unit, lhs), print(unit, rhs)));
                } else if !dead {
                    self.fwd.line(&format!(
                        "{label}{} = {}",
                        print(unit, lhs),
                        print(unit, rhs)
                    ));
                } else if !label.is_empty() {
                    self.fwd.line(&format!("{label}continue"));
                }
                // Reverse: restore, then propagate.
                if record {
                    rev.push(Line::Plain(format!("call dfort_pop({})", print(unit, lhs))));
                }
                if let Some(u) = self.undo.inverted.get(&id) {
                    let needed = self
                        .tbr
                        .in_req
                        .get(id.0 as usize)
                        .is_some_and(|r| r.contains(u.var.0 as usize));
                    if needed {
                        rev.push(Line::Plain(format!(
                            "{} = {}",
                            print(unit, lhs),
                            u.render(unit)
                        )));
                        self.trace.recovery(None, u.var, Choice::Inverted);
                    }
                }
                for tn in pushed_temps.iter().rev() {
                    rev.push(Line::Plain(format!("call dfort_pop({tn})")));
                }
                for h in &hoisted {
                    if let Some(b) = self.bname.get(&h.temp) {
                        rev.push(Line::Plain(format!("{b} = 0.0d0")));
                    }
                }
                if adjoint {
                    let lb = self.bref(lhs).unwrap_or_default();
                    let r = if array_valued(unit, lhs) {
                        rank_of(unit, lhs)
                    } else {
                        0
                    };
                    let mut body = Vec::new();
                    if let Some((rest, sign)) = accumulation(unit, lhs, rhs, t) {
                        // `v = v ± e`: v's adjoint passes through unchanged
                        // and e's gets ±v̄.
                        let m = if sign < 0 { format!("-({lb})") } else { lb };
                        self.adj(rest, &m, r, &mut body);
                    } else if r > 0 && !mentions(rhs, t) {
                        // No aliasing: the lhs adjoint is read in place.
                        self.adj(rhs, &lb, r, &mut body);
                        body.push(format!("{lb} = 0.0d0"));
                    } else {
                        let tb = if r == 0 {
                            "dfort_tb".to_string()
                        } else {
                            self.array_temps.insert(r);
                            format!("dfort_ta{r}")
                        };
                        body.push(format!("{tb} = {lb}"));
                        body.push(format!("{lb} = 0.0d0"));
                        self.adj(rhs, &tb, r, &mut body);
                    }
                    rev.extend(body.into_iter().map(Line::Plain));
                } else if self.has_adjoint(t) && self.act.useful_after(id, t) {
                    // A passive value overwrites a useful variable: its
                    // adjoint is cut here (elsewhere it is zero already).
                    if let Some(lb) = self.bref(lhs) {
                        rev.push(Line::Plain(format!("{lb} = 0.0d0")));
                    }
                }
                for r in call_revs.into_iter().rev() {
                    rev.extend(r);
                }
            }
            StmtKind::Call {
                name,
                args,
                target: tgt,
            } => {
                let callee = match tgt {
                    CallTarget::Unit(c) => Some(*c),
                    _ => None,
                };
                if !label.is_empty() {
                    self.fwd.line(&format!("{label}continue"));
                }
                rev = self.call_site(id, st.span, callee, name, args, None);
                let a: Vec<String> = args
                    .iter()
                    .map(|x| match &x.keyword {
                        Some(k) => format!("{k}={}", print(unit, &x.value)),
                        None => print(unit, &x.value),
                    })
                    .collect();
                self.fwd.line(&format!("call {name}({})", a.join(", ")));
            }
            StmtKind::If { arms, .. }
                if matches!(self.reversal.of_stmt(id), Some(Reversal::LeftByExit)) =>
            {
                // The always-taken IF the structuring of EXIT wraps around
                // a loop: its one arm runs, so no arm is recorded.
                if !label.is_empty() {
                    self.fwd.line(&format!("{label}continue"));
                }
                if let Some(arm) = arms.first() {
                    rev.extend(self.block(&arm.body));
                }
            }
            StmtKind::If {
                arms, else_body, ..
            } => {
                let n = arms.len() + 1;
                if !self.unstructured {
                    self.trace.construct(id, Reversed::BranchPushed);
                }
                let mut arm_revs = Vec::new();
                for (i, arm) in arms.iter().enumerate() {
                    let kw = if i == 0 {
                        format!("{label}if")
                    } else {
                        "else if".into()
                    };
                    self.fwd
                        .line(&format!("{kw} ({}) then", print(unit, &arm.cond)));
                    self.fwd.indent();
                    arm_revs.push(self.block(&arm.body));
                    if !self.unstructured {
                        self.fwd.line(&format!("call dfort_push({})", i + 1));
                    }
                    self.fwd.dedent();
                }
                self.fwd.line("else");
                self.fwd.indent();
                arm_revs.push(match else_body {
                    Some(b) => self.block(b),
                    None => Vec::new(),
                });
                if !self.unstructured {
                    self.fwd.line(&format!("call dfort_push({n})"));
                }
                self.fwd.dedent();
                self.fwd.line("end if");
                rev.push(Line::Branch(arm_revs));
            }
            StmtKind::SelectCase { selector, cases } => {
                if !self.unstructured {
                    self.trace.construct(id, Reversed::BranchPushed);
                }
                self.fwd
                    .line(&format!("{label}select case ({})", print(unit, selector)));
                let mut arm_revs = Vec::new();
                for (i, c) in cases.iter().enumerate() {
                    self.fwd.line(&case_line(unit, c));
                    self.fwd.indent();
                    arm_revs.push(self.block(&c.body));
                    if !self.unstructured {
                        self.fwd.line(&format!("call dfort_push({})", i + 1));
                    }
                    self.fwd.dedent();
                }
                if !self.unstructured && !cases.iter().any(|c| c.default) {
                    self.fwd.line("case default");
                    self.fwd.indent();
                    self.fwd
                        .line(&format!("call dfort_push({})", cases.len() + 1));
                    self.fwd.dedent();
                    arm_revs.push(Vec::new());
                }
                self.fwd.line("end select");
                rev.push(Line::Branch(arm_revs));
            }
            StmtKind::Do {
                control,
                body,
                name,
                ..
            } => {
                if self.unstructured {
                    let n = name.as_ref().map(|n| format!("{n}: ")).unwrap_or_default();
                    let head = match control {
                        DoControl::Counted {
                            var,
                            start,
                            end,
                            step,
                        } => format!(
                            "do {} = {}, {}{}",
                            unit.symbol(*var).name,
                            print(unit, start),
                            print(unit, end),
                            step.as_ref()
                                .map(|s| format!(", {}", print(unit, s)))
                                .unwrap_or_default()
                        ),
                        DoControl::While(c) => format!("do while ({})", print(unit, c)),
                        DoControl::Forever => "do".into(),
                    };
                    self.fwd.line(&format!("{label}{n}{head}"));
                    self.fwd.indent();
                    let _ = self.block(body);
                    self.fwd.dedent();
                    let tail = name.as_ref().map(|n| format!(" {n}")).unwrap_or_default();
                    self.fwd.line(&format!("end do{tail}"));
                    return rev;
                }
                match control {
                    DoControl::Counted {
                        var,
                        start,
                        end,
                        step,
                    } => {
                        let i = unit.symbol(*var).name.clone();
                        if let Some(why) = self.reversal.of_stmt(id).and_then(|r| r.refusal()) {
                            self.refuse(st.span, why);
                        }
                        let (s, e) = (print(unit, start), print(unit, end));
                        let stp = step
                            .as_ref()
                            .map(|x| print(unit, x))
                            .unwrap_or_else(|| "1".into());
                        self.counters += 1;
                        self.trace.construct(id, Reversed::Replayed);
                        let k = format!("dfort_k{}", self.counters);
                        // The index is saved only when a statement before
                        // the loop needs its value.
                        let save = self.store_all
                            || self
                                .tbr
                                .in_req
                                .get(id.0 as usize)
                                .is_some_and(|r| r.contains(var.0 as usize));
                        let plan = self.plans.get(&id).cloned();
                        let mut pre = self.entry_saves(plan.as_ref());
                        if save {
                            pre.push(format!("call dfort_push({i})"));
                        }
                        pre.push(format!("do {i} = {s}, {e}, {stp}"));
                        self.labelled_lines(&label, &pre);
                        self.fwd.indent();
                        self.replayed.push(*var);
                        self.loop_depth += 1;
                        let body_rev = match &plan {
                            Some(p) => self.planned_body(p),
                            None => self.block(body),
                        };
                        self.loop_depth -= 1;
                        self.replayed.pop();
                        self.fwd.dedent();
                        self.fwd.line("end do");
                        rev.extend(self.exit_saves(plan.as_ref()));
                        rev.push(Line::CountedLoop {
                            k,
                            var: i,
                            start: s,
                            end: e,
                            step: stp,
                            save,
                            body: body_rev,
                        });
                        rev.extend(self.entry_restores(plan.as_ref()));
                    }
                    DoControl::While(c) => {
                        self.counters += 1;
                        let cnt = format!("dfort_count{}", self.counters);
                        let k = format!("dfort_k{}", self.counters);
                        let plan = self.plans.get(&id).cloned();
                        // A counted WHILE loop's trip count is computed
                        // from its bound; other loops count and push it.
                        let counted = self.reversal.counted_while(id).cloned();
                        self.trace.construct(
                            id,
                            if counted.is_some() {
                                Reversed::CountedFromBound
                            } else {
                                Reversed::TripsPushed
                            },
                        );
                        let mut pre = self.entry_saves(plan.as_ref());
                        if counted.is_none() {
                            pre.push(format!("{cnt} = 0"));
                        }
                        pre.push(format!("do while ({})", print(unit, c)));
                        self.labelled_lines(&label, &pre);
                        self.fwd.indent();
                        self.loop_depth += 1;
                        let body_rev = match &plan {
                            Some(p) => self.planned_body(p),
                            None => self.block(body),
                        };
                        self.loop_depth -= 1;
                        if counted.is_none() {
                            self.fwd.line(&format!("{cnt} = {cnt} + 1"));
                        }
                        self.fwd.dedent();
                        self.fwd.line("end do");
                        if counted.is_none() {
                            self.fwd.line(&format!("call dfort_push({cnt})"));
                        }
                        rev.extend(self.exit_saves(plan.as_ref()));
                        rev.push(self.count_loop(k, cnt, counted, plan.as_ref(), body_rev));
                        rev.extend(self.entry_restores(plan.as_ref()));
                    }
                    DoControl::Forever => {
                        self.refuse(
                            st.span,
                            "DO loops without control (left by EXIT) are not reversed yet",
                        );
                    }
                }
            }
            StmtKind::Continue => self.fwd.line(&format!("{label}continue")),
            StmtKind::Return if unit.body.last() == Some(&id) => {}
            StmtKind::Io { kind, .. } if *kind != IoKind::Read => {
                self.fwd.line(&format!(
                    "{label}continue ! I/O statement of the original omitted"
                ));
            }
            StmtKind::Goto { .. }
            | StmtKind::ComputedGoto { .. }
            | StmtKind::ArithmeticIf { .. }
            | StmtKind::Exit { .. }
            | StmtKind::Cycle { .. }
                if self.unstructured =>
            {
                let j = jump_line(unit, &st.kind).unwrap_or_default();
                self.fwd.line(&format!("{label}{j}"));
            }
            // An early RETURN ends the forward sweep, not the routine.
            StmtKind::Return if self.unstructured => {
                self.fwd.line(&format!("{label}go to {REVERSE_LABEL}"))
            }
            // A run that stops has no reverse sweep: STOP stays as it is.
            StmtKind::Stop => self.fwd.line(&format!("{label}stop")),
            StmtKind::Goto { .. }
            | StmtKind::ComputedGoto { .. }
            | StmtKind::ArithmeticIf { .. }
            | StmtKind::Exit { .. }
            | StmtKind::Cycle { .. }
            | StmtKind::Return => {
                self.refuse(
                    st.span,
                    "jumps (GO TO, arithmetic IF, EXIT, CYCLE, early RETURN) are not reversed yet",
                );
            }
            StmtKind::Io { .. } => {
                self.refuse(st.span, "READ statements are not differentiated yet")
            }
            StmtKind::Allocate {
                objects,
                deallocate,
            } => {
                // The arrays must live until the reverse sweep is done with
                // them: DEALLOCATE waits for the end of the reverse sweep
                // (the reverse of the ALLOCATE), which is why an array may
                // be allocated once, outside loops.
                let names: Vec<String> = objects.iter().map(|o| print(unit, o)).collect();
                for o in objects {
                    let Some((s, _)) = target(o) else {
                        self.refuse(st.span, "only allocatable variables can be (de)allocated in differentiated code");
                        continue;
                    };
                    let sym = unit.symbol(s);
                    if sym.storage != Storage::Local || !sym.attrs.allocatable {
                        self.refuse(st.span, format!("`{}` is not a local allocatable array; its (de)allocation is not differentiated yet", sym.name));
                    } else if allocations(unit, s) > 1 {
                        self.refuse(st.span, format!("`{}` is allocated more than once; the adjoint keeps each array until its reverse sweep, so it can be allocated once only", sym.name));
                    }
                }
                if self.loop_depth > 0 || self.unstructured {
                    self.refuse(
                        st.span,
                        "ALLOCATE and DEALLOCATE inside loops or in code with jumps are not differentiated yet",
                    );
                }
                if *deallocate {
                    self.fwd.line(&format!(
                        "{label}continue ! deallocate({}) waits for the reverse sweep",
                        names.join(", ")
                    ));
                } else {
                    self.fwd
                        .line(&format!("{label}allocate({})", names.join(", ")));
                    let mut freed = Vec::new();
                    for o in objects {
                        if let (Some(b), Some((s, _))) = (self.bref(o), target(o)) {
                            let bn = self.bname[&s].clone();
                            self.fwd.line(&format!("allocate({b})"));
                            self.fwd.line(&format!("{bn} = 0.0d0"));
                            freed.push(bn);
                        }
                        if let Some((s, _)) = target(o) {
                            freed.push(unit.symbol(s).name.clone());
                        }
                    }
                    rev.push(Line::Plain(format!("deallocate({})", freed.join(", "))));
                }
            }
            StmtKind::Unsupported { construct } => {
                self.refuse(st.span, format!("{construct} cannot be differentiated"))
            }
        }
        rev
    }
}

/// The rank of the partial derivative of `e` with respect to its operand
/// `child` ([`partials`]): constants for sums and differences, the other
/// factor for products, the operands' values otherwise.
fn partial_rank(unit: &Unit, e: &Expr, child: &Expr) -> usize {
    match &e.kind {
        ExprKind::Unary { .. } => 0,
        ExprKind::Binary { op, lhs, rhs } => match op {
            BinaryOp::Add | BinaryOp::Sub => 0,
            BinaryOp::Mul if std::ptr::eq(child, &**lhs) => rank_of(unit, rhs),
            BinaryOp::Mul => rank_of(unit, lhs),
            BinaryOp::Div if std::ptr::eq(child, &**lhs) => rank_of(unit, rhs),
            _ => rank_of(unit, lhs).max(rank_of(unit, rhs)),
        },
        ExprKind::Intrinsic { args, .. } => args
            .iter()
            .map(|a| rank_of(unit, &a.value))
            .max()
            .unwrap_or(0),
        _ => rank_of(unit, e),
    }
}

/// The outer product `u vᵀ` of two vectors, as a rank-1 `matmul`.
fn outer(u: &str, v: &str) -> String {
    format!("matmul(reshape({u}, [size({u}), 1]), reshape({v}, [1, size({v})]))")
}

/// `v = v + e`, `v = e + v` or `v = v - e` with `e` not mentioning `v`'s
/// variable: the other term and its sign.
fn accumulation<'e>(unit: &Unit, lhs: &Expr, rhs: &'e Expr, t: SymbolId) -> Option<(&'e Expr, i8)> {
    let ExprKind::Binary { op, lhs: a, rhs: b } = &rhs.kind else {
        return None;
    };
    let same = |x: &Expr| print(unit, x) == print(unit, lhs);
    match op {
        BinaryOp::Add if same(a) && !mentions(b, t) => Some((b, 1)),
        BinaryOp::Add if same(b) && !mentions(a, t) => Some((a, 1)),
        BinaryOp::Sub if same(a) && !mentions(b, t) => Some((b, -1)),
        _ => None,
    }
}

/// How many ALLOCATE statements of the unit allocate `s`.
fn allocations(unit: &Unit, s: SymbolId) -> usize {
    unit.stmts
        .iter()
        .filter(|st| match &st.kind {
            StmtKind::Allocate {
                objects,
                deallocate: false,
            } => objects
                .iter()
                .any(|o| target(o).is_some_and(|(t, _)| t == s)),
            _ => false,
        })
        .count()
}

/// Whether `e` mentions variable `s`.
fn mentions(e: &Expr, s: SymbolId) -> bool {
    let mut found = false;
    e.walk(&mut |x| {
        if matches!(x.kind, ExprKind::Var(v) | ExprKind::ArrayRef { array: v, .. } if v == s) {
            found = true;
        }
    });
    found
}

/// The rank of an expression's value (0 for scalars).
pub(crate) fn rank_of(unit: &Unit, e: &Expr) -> usize {
    match &e.kind {
        ExprKind::Var(s) => unit.symbol(*s).rank(),
        ExprKind::ArrayRef { subs, .. } => subs
            .iter()
            .filter(|s| matches!(s, Subscript::Range { .. }))
            .count(),
        ExprKind::Unary { operand, .. } => rank_of(unit, operand),
        ExprKind::Binary { lhs, rhs, .. } => rank_of(unit, lhs).max(rank_of(unit, rhs)),
        ExprKind::ArrayCtor(_) => 1,
        ExprKind::Intrinsic { name, args } => {
            let r = |i: usize| args.get(i).map(|a| rank_of(unit, &a.value)).unwrap_or(0);
            match name.as_str() {
                "sum" | "product" | "maxval" | "minval" if args.len() > 1 => r(0).saturating_sub(1),
                "sum" | "product" | "maxval" | "minval" | "dot_product" | "size" | "norm2" => 0,
                "transpose" => 2,
                "matmul" => (r(0) + r(1)).saturating_sub(2),
                _ => args
                    .iter()
                    .map(|a| rank_of(unit, &a.value))
                    .max()
                    .unwrap_or(0),
            }
        }
        _ => 0,
    }
}

/// Whether the runtime can push this variable (or part of it).
/// Where a saved item goes in a list of pushes, so that the values that
/// may subscript others (integer scalars, then integer array elements) are
/// pushed after, and so popped before, what they subscript.
fn subscript_rank(unit: &Unit, s: SymbolId, whole: bool) -> u8 {
    let sym = unit.symbol(s);
    match (sym.ty.base, sym.rank() == 0 && whole) {
        (BaseType::Integer, true) => 2,
        (BaseType::Integer, false) => 1,
        _ => 0,
    }
}

fn pushable(unit: &Unit, s: SymbolId, whole: bool) -> Result<(), String> {
    let sym = unit.symbol(s);
    let kind_ok = match sym.ty.base {
        BaseType::Real => matches!(sym.ty.kind, Some(4) | Some(8)),
        BaseType::Integer => matches!(sym.ty.kind, Some(4) | Some(8) | None),
        BaseType::Logical => sym.rank() == 0 || !whole,
        _ => false,
    };
    if !kind_ok {
        return Err(format!(
            "saving `{}` ({}) on the tape is not supported yet",
            sym.name,
            dfort_ir::dump::type_name(&sym.ty)
        ));
    }
    if whole && sym.rank() > 3 {
        return Err(format!(
            "saving the whole array `{}` of rank {} on the tape is not supported yet",
            sym.name,
            sym.rank()
        ));
    }
    if whole && sym.dims.iter().any(|d| d.kind == DimKind::AssumedSize) {
        return Err(format!(
            "the assumed-size array `{}` would have to be saved whole; give it explicit bounds",
            sym.name
        ));
    }
    Ok(())
}

/// Whether an assignment target denotes more than one element.
fn array_valued(unit: &Unit, e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Var(s) => unit.symbol(*s).rank() > 0,
        ExprKind::ArrayRef { subs, .. } => {
            subs.iter().any(|s| matches!(s, Subscript::Range { .. }))
        }
        _ => false,
    }
}

/// The label where the reverse sweep of an unstructured unit starts.
const REVERSE_LABEL: u32 = 99999;

/// Integer scalars the reverse sweep of each basic block reads (what
/// TBR says its statements' adjoints need, the indices of what they pop
/// included): saved at the block's end in unstructured mode.
fn snapshots(
    unit: &Unit,
    tbr: &Tbr,
    fx: &LocalEffects,
    fx_len: usize,
    exact: &BitSet,
) -> HashMap<usize, Vec<String>> {
    let mut out = HashMap::new();
    for (i, node) in unit.cfg.nodes.iter().enumerate() {
        if node.kind != dfort_ir::cfg::NodeKind::BasicBlock {
            continue;
        }
        let mut ints = BitSet::default();
        for id in &node.stmts {
            if let Some(n) = tbr.needs.get(id.0 as usize) {
                ints.union_with(n);
            }
        }
        // TBR's sets may hold slots past the unit's own symbols (globals
        // only its callees see): those are not the unit's to save.
        let names: Vec<String> = ints
            .iter()
            .filter(|v| *v < fx_len)
            .filter_map(|v| unit.symbols.get(v).map(|s| (v, s)))
            .filter(|(i, s)| {
                s.ty.base == BaseType::Integer
                    && s.rank() == 0
                    && !s.attrs.parameter
                    // TBR and the inversions keep exact variables.
                    && !exact.contains(*i)
                    // Values nothing changes need no saving.
                    && fx.writes.contains(*i)
            })
            .map(|(_, s)| s.name.clone())
            .collect();
        if !names.is_empty() {
            out.insert(i, names);
        }
    }
    out
}

/// A reverse-sweep line or construct.
enum Line {
    Plain(String),
    /// Pop the arm id and run that arm's reverse sweep.
    Branch(Vec<Vec<Line>>),
    /// Replay a counted loop backwards from its bounds.
    CountedLoop {
        /// The reversed loop's own iteration variable.
        k: String,
        var: String,
        start: String,
        end: String,
        step: String,
        /// Whether the index was pushed before the loop (popped after).
        save: bool,
        body: Vec<Line>,
    },
    /// Get a trip count and run the body that many times.
    CountLoop {
        k: String,
        counter: String,
        /// How to compute the count (a counted WHILE loop); popped when
        /// `None`.
        count: Option<String>,
        /// Lines run once the count is known (a counter's final value).
        then: Vec<String>,
        body: Vec<Line>,
    },
}

fn emit(w: &mut Writer, lines: &[Line]) {
    for l in lines {
        match l {
            Line::Plain(s) => w.line(s),
            Line::Branch(arms) => {
                w.line("call dfort_pop(dfort_branch)");
                for (i, arm) in arms.iter().enumerate() {
                    let kw = if i == 0 { "if" } else { "else if" };
                    w.line(&format!("{kw} (dfort_branch == {}) then", i + 1));
                    w.indent();
                    emit(w, arm);
                    w.dedent();
                }
                w.line("end if");
            }
            Line::CountedLoop {
                k,
                var,
                start,
                end,
                step,
                save,
                body,
            } => {
                w.line(&format!(
                    "do {k} = max(0, ({end} - ({start}) + ({step})) / ({step})) - 1, 0, -1"
                ));
                w.indent();
                w.line(&format!("{var} = {start} + {k} * ({step})"));
                emit(w, body);
                w.dedent();
                w.line("end do");
                if *save {
                    w.line(&format!("call dfort_pop({var})"));
                }
            }
            Line::CountLoop {
                k,
                counter,
                count,
                then,
                body,
            } => {
                match count {
                    Some(c) => w.line(&format!("{counter} = {c}")),
                    None => w.line(&format!("call dfort_pop({counter})")),
                }
                for l in then {
                    w.line(l);
                }
                w.line(&format!("do {k} = 1, {counter}"));
                w.indent();
                emit(w, body);
                w.dedent();
                w.line("end do");
            }
        }
    }
}

/// The adjoint `r_b` of subroutine `root` and of every procedure it calls
/// that has active variables (free-form source), or why not.
pub fn adjoint(
    program: &Program,
    root: UnitId,
    independents: &BitSet,
    dependents: &BitSet,
    recording: Recording,
    header: &str,
) -> Result<String, Vec<Refusal>> {
    adjoint_traced(program, root, independents, dependents, recording, header).map(|(text, _)| text)
}

/// [`adjoint`], with what each adjoint routine's code does
/// ([`crate::trace`]).
pub fn adjoint_traced(
    program: &Program,
    root: UnitId,
    independents: &BitSet,
    dependents: &BitSet,
    recording: Recording,
    header: &str,
) -> Result<(String, Vec<RoutineTrace>), Vec<Refusal>> {
    let store_all = recording.store_all();
    let program = &*dfort_analysis::prepare::program(program);
    let unit = program.unit(root);
    check_root(program, unit, "an adjoint")?;
    let diff = DiffSet::new(program, root, independents, dependents);
    let tbrs = tbr::analyze_program(program, &diff.activity, store_all, recording.inversion());
    let effects = dfort_analysis::effects::all(program);
    let decided: Vec<Option<UnitDecisions>> = (0..program.units.len())
        .map(|i| {
            let u = program.units.get(i)?;
            let t = tbrs.get(i)?.as_ref()?;
            diff.contains(u.id)
                .then(|| decide(program, u, t, &effects, recording))
        })
        .collect();
    let sh = Shared {
        program,
        diff: &diff,
        tbrs: &tbrs,
        effects: &effects,
        decided: &decided,
    };
    let mut refusals = crate::limits::check(program, &diff, &effects);
    let mut routines = Vec::new();
    let mut traces = Vec::new();
    for &u in &diff.units {
        match routine(&sh, u, recording) {
            Ok((r, t)) => {
                routines.push(r);
                traces.push(t);
            }
            Err(e) => refusals.extend(e),
        }
    }
    routines.extend(crate::tangent::internal_copies(
        program,
        &diff,
        &mut refusals,
    ));
    if !refusals.is_empty() {
        return Err(refusals);
    }
    let decls = diff.module_declarations(program, 'b');
    Ok((
        crate::fortran::assemble(header, &routines, &decls, "_b"),
        traces,
    ))
}

/// The adjoint routine of one unit of the set.
fn routine(
    sh: &Shared,
    u: UnitId,
    recording: Recording,
) -> Result<(crate::fortran::Routine, RoutineTrace), Vec<Refusal>> {
    let store_all = recording.store_all();
    let program = sh.program;
    let orig = program.unit(u);
    let module = host_module(program, orig);
    let (Some(act), Some(t)) = (
        &sh.diff.activity.activity[u.0 as usize],
        &sh.tbrs[u.0 as usize],
    ) else {
        return Err(vec![Refusal {
            span: orig.name_span,
            rule: &dfort_syntax::rules::INTERNAL_ERROR,
            message: format!("`{}` was not analysed", orig.name),
        }]);
    };
    let Some(decided) = &sh.decided[u.0 as usize] else {
        return Err(vec![Refusal {
            span: orig.name_span,
            rule: &dfort_syntax::rules::INTERNAL_ERROR,
            message: format!("`{}` was not analysed", orig.name),
        }]);
    };
    let plans: HashMap<StmtId, Plan> = decided.plans.iter().map(|p| (p.stmt, p.clone())).collect();
    let undo = decided.undo.clone();
    let dead = decided.dead.clone();
    let pushed = decided.pushed.clone();
    let mut bname = sh.diff.names(program, orig, 'b');
    let (hunit, hoisted) = hoist(program, orig, |st| match &st.kind {
        StmtKind::Assign { lhs, .. } => target(lhs).is_some_and(|(t, _)| bname.contains_key(&t)),
        _ => false,
    });
    for h in hoisted.values().flatten() {
        let cu = program.unit(h.callee);
        if cu
            .result
            .is_some_and(|r| sh.diff.with_d[h.callee.0 as usize].contains(r.0 as usize))
        {
            bname.insert(h.temp, format!("{}b", hunit.symbol(h.temp).name));
        }
    }
    let unit = &hunit;
    let reversal = decided.reversal.clone();
    let unstructured = reversal.by_blocks;
    debug_assert_eq!(unstructured, !unit.cfg.structured);
    let fx = dfort_analysis::effects::local(program, orig, sh.effects);
    let snaps = if unstructured {
        snapshots(unit, t, &fx, orig.symbols.len(), &undo.exact)
    } else {
        HashMap::new()
    };
    let mut g = Gen {
        sh,
        unit,
        orig,
        act,
        tbr: t,
        plans,
        reversal,
        int_temps: Vec::new(),
        undo,
        store_all,
        dead,
        pushed,
        bname,
        hoisted,
        written_from: dfort_analysis::effects::written_from(program, orig, sh.effects),
        refusals: Vec::new(),
        fwd: Writer::default(),
        counters: 0,
        ztemps: Vec::new(),
        replayed: Vec::new(),
        loop_depth: 0,
        column_loops: false,
        array_temps: BTreeSet::new(),
        used_modules: BTreeSet::new(),
        called: BTreeSet::new(),
        varied: BitSet::default(),
        module: module.clone(),
        hidden: std::collections::BTreeMap::new(),
        unstructured,
        block_rev: HashMap::new(),
        snapshots: snaps,
        trace: RoutineTrace::new(u, unstructured),
    };
    if unstructured {
        g.fwd.line("call dfort_push(0)");
    }
    let rev = g.block(&unit.body);
    if !g.refusals.is_empty() {
        return Err(g.refusals);
    }
    let mut spec = crate::fortran::Spec::default();
    let mut args = Vec::new();
    for a in &unit.args {
        args.push(unit.symbol(*a).name.clone());
        if let Some(b) = g.bname.get(a) {
            args.push(b.clone());
        }
    }
    if let Some(b) = unit.result.and_then(|r| g.bname.get(&r)) {
        args.push(b.clone());
    }
    let recursive = crate::calls::is_recursive(program, unit);
    let kw = if recursive {
        "recursive subroutine"
    } else {
        "subroutine"
    };
    spec.both(&format!("{kw} {}_b({})", unit.name, args.join(", ")));
    spec.indent();
    spec.both("use dfort_stack");
    for m in &g.used_modules {
        spec.both(&format!("use {m}_b"));
    }
    for l in crate::fortran::module_var_uses(program, unit, &g.bname, module.as_ref(), "_b") {
        spec.both(&l);
    }
    for (local, m, name) in g.hidden.values() {
        spec.both(&format!("use {m}, only: {local} => {name}"));
    }
    for u in uses(unit) {
        spec.both(&u);
    }
    spec.both("implicit none");
    // The forward sweep may skip what the original writes: no dummy is
    // left undefined on entry. Adjoints of dummies are read and updated
    // whatever the primal's intent.
    spec.declarations(program, unit, orig, &g.bname, |sym| {
        let primal = match sym.intent {
            Some(Intent::Out) => Some(Intent::InOut),
            i => i,
        };
        (primal, sym.intent.map(|_| Intent::InOut))
    });
    for d in crate::fortran::undeclared_functions(program, unit, &g.hoisted) {
        spec.w.line(&d);
    }
    spec.commons(unit, &g.bname, &sh.diff.commons, "_b");
    spec.interface_blocks(orig);
    let end = format!("end subroutine {}_b", unit.name);
    let interface = spec.interface(&end);
    let mut w = spec.w;
    w.line("integer :: dfort_branch");
    for k in 1..=g.counters {
        w.line(&format!("integer :: dfort_k{k}, dfort_count{k}"));
    }
    if g.column_loops {
        w.line("integer :: dfort_j");
    }
    for (k, ty) in g.int_temps.iter().enumerate() {
        w.line(&format!("{ty} :: dfort_i{}", k + 1));
    }
    w.line("real(8) :: dfort_tb");
    for (k, ty) in g.ztemps.iter().enumerate() {
        w.line(&format!("{ty} :: dfort_z{}", k + 1));
    }
    for r in &g.array_temps {
        let colons = vec![":"; *r].join(", ");
        w.line(&format!("real(8), allocatable :: dfort_ta{r}({colons})"));
    }
    let spec_end = w.len();
    // Adjoints of locals start at zero (not those of dummies, of the
    // function result, of COMMON members or of module variables, which
    // the caller owns).
    for s in &declaration_order(unit) {
        let storage = &unit.symbol(*s).storage;
        let owned = matches!(
            storage,
            Storage::Dummy(_) | Storage::Result | Storage::Common { .. } | Storage::Imported { .. }
        );
        // Allocatable adjoints are zeroed when they are allocated.
        let owned = owned || unit.symbol(*s).attrs.allocatable;
        if let (Some(b), false) = (g.bname.get(s), owned) {
            w.line(&format!("{b} = 0.0d0"));
        }
    }
    w.line("! forward sweep");
    let fwd = std::mem::take(&mut g.fwd).finish();
    for l in fwd.lines() {
        w.line(l);
    }
    w.line("! reverse sweep");
    if unstructured {
        // Pop basic-block ids until the entry marker; reverse each block.
        w.line(&format!("{REVERSE_LABEL} call dfort_pop(dfort_branch)"));
        w.line("do while (dfort_branch /= 0)");
        w.indent();
        w.line("select case (dfort_branch)");
        let mut blocks: Vec<usize> = g
            .block_rev
            .keys()
            .chain(g.snapshots.keys())
            .copied()
            .collect();
        blocks.sort_unstable();
        blocks.dedup();
        for b in blocks {
            w.line(&format!("case ({})", b + 1));
            w.indent();
            for v in g.snapshots.get(&b).into_iter().flatten().rev() {
                w.line(&format!("call dfort_pop({v})"));
            }
            emit(
                &mut w,
                g.block_rev.get(&b).map(Vec::as_slice).unwrap_or(&[]),
            );
            w.dedent();
        }
        w.line("end select");
        w.line("call dfort_pop(dfort_branch)");
        w.dedent();
        w.line("end do");
    } else {
        emit(&mut w, &rev);
    }
    w.dedent();
    w.line(&end);
    let mut trace = std::mem::replace(&mut g.trace, RoutineTrace::new(u, unstructured));
    trace.with_adjoint = g
        .bname
        .keys()
        .filter(|s| (s.0 as usize) < orig.symbols.len())
        .copied()
        .collect();
    trace.with_adjoint.sort();
    let routine = crate::fortran::Routine {
        unit: u,
        host: crate::calls::host_procedure(program, orig),
        module,
        uses: g.used_modules.clone(),
        text: w.finish(),
        spec_end,
        interface: crate::fortran::needs_explicit_interface(orig).then_some(interface),
        calls: g.called.clone(),
    };
    Ok((routine, trace))
}
