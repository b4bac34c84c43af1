//! Pointers seen through (issue 17; the aliasing of paper 000 §5.1 made
//! exact): a local pointer whose association is known where it is used —
//! the same pointer assignment reaches the use on every path, and nothing
//! on the way changes a variable its target's subscripts read or
//! (de)allocates the target — is read as its target there. `p(i)` with
//! `p => a(2:n)` becomes `a(2 + i - 1)`, `q%x` with `q => ps(k)` becomes
//! `ps(k)%x`, `associated(p)` a constant. Activity, TBR, liveness and the
//! derivatives then see the target's elements themselves, so a pointer
//! costs nothing and loses no precision.
//!
//! Contract: [`see_through`] returns the unit with every use it can
//! resolve rewritten (statement and symbol ids unchanged; the pointer
//! assignments stay, the derivatives run them in the forward sweep for
//! I/O that names the pointer), or `None` when the unit has no pointer
//! statements or uses. [`unresolved`] lists, located and with the reason,
//! what cannot be read so (a use reached by different associations,
//! pointer arguments and module pointers, pointer components, targets
//! that are not variables): the generators refuse those.

use dfort_ir::queries::recorded_associations;
use dfort_ir::*;
use std::collections::BTreeMap;

/// A pointer's association at a point of the unit.
#[derive(Clone, Debug)]
enum Assoc {
    /// Associated by the pointer assignment `at` with `target` (its
    /// pointers already resolved), and nothing it reads changed since.
    Target {
        at: StmtId,
        target: Expr,
    },
    Null,
    /// Not known here; the reason.
    Unknown(String),
}

impl Assoc {
    fn same(&self, other: &Assoc) -> bool {
        match (self, other) {
            (Assoc::Target { at: a, .. }, Assoc::Target { at: b, .. }) => a == b,
            (Assoc::Null, Assoc::Null) => true,
            (Assoc::Unknown(_), Assoc::Unknown(_)) => true,
            _ => false,
        }
    }
}

type Env = BTreeMap<SymbolId, Assoc>;

/// The unit with its pointers read as their targets, or `None` when it has
/// no pointer statement or use.
pub fn see_through(unit: &Unit) -> Option<Unit> {
    if !uses_pointers(unit) {
        return None;
    }
    let mut w = Walker::new(unit);
    w.run();
    Some(w.out)
}

/// The uses of pointers (and pointer statements) that cannot be read as
/// their targets: (where, why).
pub fn unresolved(unit: &Unit) -> Vec<(Span, String)> {
    if !uses_pointers(unit) {
        return Vec::new();
    }
    let mut w = Walker::new(unit);
    w.run();
    w.unresolved
}

/// What the derivatives cannot follow of a prepared unit's pointers,
/// located and with the reason (`root`: the unit is the root of the
/// derivative, whose one routine runs both sweeps):
/// - a pointer the unit's caller can see (a pointer argument or result, a
///   module, COMMON or SAVE pointer, or a component of data the caller
///   can reach) associated, nullified, allocated or deallocated outside
///   the root: the caller's forward sweep runs the original routine, which
///   would leave the derivative pointers behind;
/// - an association that makes two variables other routines see name the
///   same memory, in a unit that calls other routines (they would not know
///   it);
/// - a pointer associated with a function's result, and pointer function
///   results (what they point to is not known).
pub fn refusals(program: &Program, unit: &Unit, root: bool) -> Vec<(Span, String)> {
    let mut out = Vec::new();
    if !uses_pointers(unit) {
        return out;
    }
    if let Some(r) = unit.result.filter(|r| unit.symbol(*r).attrs.pointer) {
        out.push((
            unit.symbol(r).span,
            format!(
                "`{}` returns a pointer; pointer function results are not followed",
                unit.name
            ),
        ));
    }
    let calls = unit.stmts.iter().any(|st| {
        matches!(st.kind, StmtKind::Call { .. })
            || st.kind.exprs().iter().any(|e| {
                let mut f = false;
                e.walk(&mut |x| {
                    f |= matches!(
                        x.kind,
                        ExprKind::FunctionCall {
                            target: CallTarget::Unit(_),
                            ..
                        }
                    )
                });
                f
            })
    });
    for st in &unit.stmts {
        if let StmtKind::PointerAssign { pointer, target } = &st.kind {
            if dfort_ir::dp::target(target).is_none() {
                out.push((
                    st.span,
                    format!(
                        "`{}` is associated with something other than a variable (a function's result?); dfort cannot tell what it points to",
                        dfort_ir::dump::expr(unit, pointer)
                    ),
                ));
                continue;
            }
        }
        for o in recorded_associations(program, unit, st) {
            let Some((r, _)) = dfort_ir::dp::target(o) else {
                continue;
            };
            let text = dfort_ir::dump::expr(unit, o);
            let whole = matches!(o.kind, ExprKind::Var(_) | ExprKind::ArrayRef { .. });
            let frees = matches!(
                st.kind,
                StmtKind::Allocate {
                    deallocate: true,
                    ..
                }
            );
            let mut class: Vec<SymbolId> = dfort_ir::queries::class_of(unit, r)
                .map(|c| c.to_vec())
                .unwrap_or_else(|| vec![r]);
            class.retain(|s| nonlocal(unit, *s));
            let shared = if whole && !frees {
                nonlocal(unit, r)
            } else {
                !class.is_empty()
            };
            if !shared {
                continue;
            }
            if !root {
                let what = match &st.kind {
                    StmtKind::PointerAssign { .. } => "associated",
                    StmtKind::Nullify { .. } => "nullified",
                    StmtKind::Allocate {
                        deallocate: true, ..
                    } => "deallocated",
                    _ => "allocated",
                };
                out.push((
                    st.span,
                    format!(
                        "`{text}` is {what} in `{}`, and its caller can see it; the adjoint follows pointers its callers see only where the root changes them (do it in the root, or pass the data as arguments)",
                        unit.name
                    ),
                ));
            } else if calls
                && class
                    .iter()
                    .filter(|s| unit.symbol(**s).is_global())
                    .count()
                    > 1
            {
                let names: Vec<String> = class
                    .iter()
                    .filter(|s| unit.symbol(**s).is_global())
                    .map(|s| format!("`{}`", unit.symbol(*s).name))
                    .collect();
                out.push((
                    st.span,
                    format!(
                        "after `{text}` is associated, {} may name the same memory, and the routines `{}` calls would not know it",
                        names.join(" and "),
                        unit.name
                    ),
                ));
            }
        }
    }
    out
}

/// Whether a variable outlives the unit or is shared with other units: an
/// argument, a function result, a global, or a SAVE local.
fn nonlocal(unit: &Unit, s: SymbolId) -> bool {
    let sym = unit.symbol(s);
    match sym.storage {
        Storage::Local => sym.attrs.save || sym.attrs.initialized || unit.kind == UnitKind::Module,
        Storage::Procedure => false,
        _ => true,
    }
}

fn uses_pointers(unit: &Unit) -> bool {
    let pointer_symbols = unit.symbols.iter().any(|s| s.attrs.pointer);
    pointer_symbols
        || unit.stmts.iter().any(|s| {
            matches!(
                s.kind,
                StmtKind::PointerAssign { .. } | StmtKind::Nullify { .. }
            )
        })
}

struct Walker<'u> {
    unit: &'u Unit,
    out: Unit,
    /// Rewrite and report (the last pass), or only compute associations
    /// (the passes that find a loop's fixed point).
    apply: bool,
    /// The unit has jumps other than RETURN.
    jumps: bool,
    unresolved: Vec<(Span, String)>,
}

impl<'u> Walker<'u> {
    fn new(unit: &'u Unit) -> Self {
        Walker {
            unit,
            out: unit.clone(),
            apply: false,
            jumps: false,
            unresolved: Vec::new(),
        }
    }

    fn run(&mut self) {
        let unit = self.unit;
        let mut env = Env::new();
        for (id, s) in unit.symbols.iter_enumerated() {
            if !s.attrs.pointer || s.storage == Storage::Procedure {
                continue;
            }
            let why = match s.storage {
                Storage::Local if s.attrs.save || s.attrs.initialized || s.init.is_some() => {
                    format!("the pointer `{}` keeps its association between calls (SAVE); dfort does not follow it", s.name)
                }
                Storage::Local => format!("`{}` is used before it is associated", s.name),
                Storage::Dummy(_) => format!(
                    "`{}` is a pointer argument; pointer arguments are not followed yet",
                    s.name
                ),
                Storage::Result => format!(
                    "`{}` is a pointer result; pointer results are not followed yet",
                    s.name
                ),
                _ => format!(
                    "`{}` is a global pointer; module and COMMON pointers are not followed yet",
                    s.name
                ),
            };
            if matches!(s.storage, Storage::Dummy(_) | Storage::Result) {
                // The caller's actual would have to be a pointer too.
                self.unresolved.push((s.span, why.clone()));
            }
            env.insert(id, Assoc::Unknown(why));
        }
        // Jumps the structuring left (GO TO, and EXIT or CYCLE it could
        // not rewrite) would bring associations the walk does not see.
        self.jumps = unit
            .stmts
            .iter()
            .any(|s| s.kind.is_jump() && !matches!(s.kind, StmtKind::Return));
        if self.jumps {
            // Only a pointer associated once, with a target nothing in the
            // unit changes, is known wherever it is used (a valid program
            // uses it only after that association).
            for (p, at, target) in self.unique_associations() {
                env.insert(p, Assoc::Target { at, target });
            }
        }
        self.apply = true;
        let body = unit.body.clone();
        self.block(&body, &mut env);
    }

    fn block(&mut self, stmts: &[StmtId], env: &mut Env) {
        for &s in stmts {
            self.stmt(s, env);
        }
    }

    fn stmt(&mut self, id: StmtId, env: &mut Env) {
        let unit = self.unit;
        let st = unit.stmt(id);
        match &st.kind {
            StmtKind::PointerAssign { pointer, target } => {
                let Some(p) = self.local_pointer(pointer, st.span) else {
                    return;
                };
                let mut t = target.clone();
                self.rewrite(&mut t, env);
                let checked = match (self.jumps, env.get(&p)) {
                    (true, Some(Assoc::Target { at, .. })) if *at == id => return,
                    (true, _) => Err(format!(
                        "`{}` is associated in a routine with GO TO, EXIT or CYCLE jumps, more than once or with a target the routine changes; dfort follows pointers there only when they are associated once, with a fixed target",
                        unit.symbol(p).name
                    )),
                    (false, _) => self.check_target(p, &t),
                };
                let assoc = match checked {
                    Ok(()) => Assoc::Target { at: id, target: t },
                    Err(why) => {
                        if self.apply {
                            self.unresolved.push((st.span, why.clone()));
                        }
                        Assoc::Unknown(why)
                    }
                };
                env.insert(p, assoc);
            }
            StmtKind::Nullify { objects } => {
                for o in objects {
                    if let Some(p) = self.local_pointer(o, st.span) {
                        let assoc = match self.jumps {
                            true => Assoc::Unknown(format!(
                                "`{}` is nullified in a routine with GO TO, EXIT or CYCLE jumps; pointers are followed in structured code only",
                                unit.symbol(p).name
                            )),
                            false => Assoc::Null,
                        };
                        env.insert(p, assoc);
                    }
                }
            }
            StmtKind::If {
                arms, else_body, ..
            }
            | StmtKind::Where {
                arms, else_body, ..
            } => {
                let mut ends = Vec::new();
                for (k, arm) in arms.iter().enumerate() {
                    // The conditions are the statement's expressions.
                    self.rewrite_nth(id, k, env);
                    let mut e = env.clone();
                    self.block(&arm.body, &mut e);
                    ends.push(e);
                }
                match else_body {
                    Some(b) => {
                        let mut e = env.clone();
                        self.block(b, &mut e);
                        ends.push(e);
                    }
                    None => ends.push(env.clone()),
                }
                *env = meet_all(unit, ends);
            }
            StmtKind::SelectCase { cases, .. } => {
                self.rewrite_direct(id, env);
                let mut ends = Vec::new();
                for c in cases {
                    let mut e = env.clone();
                    self.block(&c.body, &mut e);
                    ends.push(e);
                }
                if !cases.iter().any(|c| c.default) {
                    ends.push(env.clone());
                }
                *env = meet_all(unit, ends);
            }
            StmtKind::Do { control, body, .. } => {
                // The bounds are evaluated once, before the loop.
                if !matches!(control, DoControl::While(_)) {
                    self.rewrite_direct(id, env);
                }
                let var = match control {
                    DoControl::Counted { var, .. } => Some(*var),
                    _ => None,
                };
                let written = |env: &mut Env| {
                    if let Some(v) = var {
                        invalidate(unit, env, &[v], &[], false);
                    }
                };
                // The association at the loop's head: what enters it met
                // with what each iteration leaves, to a fixed point.
                let mut head = env.clone();
                written(&mut head);
                let apply = std::mem::replace(&mut self.apply, false);
                for _ in 0..8 {
                    let mut e = head.clone();
                    self.block(body, &mut e);
                    written(&mut e);
                    let next = meet_all(unit, vec![head.clone(), e]);
                    let stable = next.len() == head.len()
                        && next
                            .iter()
                            .all(|(k, a)| head.get(k).is_some_and(|b| b.same(a)));
                    head = next;
                    if stable {
                        break;
                    }
                }
                self.apply = apply;
                if matches!(control, DoControl::While(_)) {
                    self.rewrite_direct(id, &head);
                }
                let mut e = head.clone();
                self.block(body, &mut e);
                *env = head;
            }
            _ => {
                self.rewrite_direct(id, env);
                let (written, allocated, calls) = effects(&st.kind);
                invalidate(unit, env, &written, &allocated, calls);
                for a in allocated {
                    if let Some(assoc) = env.get_mut(&a) {
                        *assoc = Assoc::Unknown(format!(
                            "`{}` is allocated or deallocated as a pointer; such pointers are not followed yet",
                            unit.symbol(a).name
                        ));
                    }
                }
            }
        }
    }

    /// The local pointers the unit associates by exactly one pointer
    /// assignment and never nullifies, whose target reads no pointer and
    /// nothing the unit writes (nor a global, when it calls anything) and
    /// is never (de)allocated: (pointer, the assignment, the target).
    fn unique_associations(&self) -> Vec<(SymbolId, StmtId, Expr)> {
        let unit = self.unit;
        let mut assigned: BTreeMap<SymbolId, Vec<(StmtId, &Expr)>> = BTreeMap::new();
        let mut nullified = Vec::new();
        let (mut written, mut allocated, mut calls) = (Vec::new(), Vec::new(), false);
        for (id, st) in unit.stmts.iter_enumerated() {
            match &st.kind {
                StmtKind::PointerAssign { pointer, target } => {
                    if let ExprKind::Var(p) = pointer.kind {
                        assigned.entry(p).or_default().push((id, target));
                    }
                }
                StmtKind::Nullify { objects } => {
                    nullified.extend(objects.iter().filter_map(dfort_ir::dp::target))
                }
                StmtKind::Do {
                    control: DoControl::Counted { var, .. },
                    ..
                } => written.push(*var),
                kind => {
                    let (w, a, c) = effects(kind);
                    written.extend(w);
                    allocated.extend(a);
                    calls |= c;
                }
            }
        }
        let mut out = Vec::new();
        for (p, list) in assigned {
            let [(at, target)] = list[..] else { continue };
            if nullified.iter().any(|(n, _)| *n == p) || self.check_target(p, target).is_err() {
                continue;
            }
            let mut reads = Vec::new();
            subscript_symbols(target, &mut reads);
            let mut pointers = false;
            target.walk(&mut |x| {
                if let ExprKind::Var(s) | ExprKind::ArrayRef { array: s, .. } = x.kind {
                    pointers |= unit.symbol(s).attrs.pointer;
                }
            });
            let base = dfort_ir::dp::target(target).map(|(s, _)| s);
            let changes = pointers
                || reads.iter().any(|v| written.contains(v))
                || (calls && reads.iter().any(|v| unit.symbol(*v).is_global()))
                || base.is_some_and(|b| allocated.contains(&b));
            if !changes {
                out.push((p, at, target.clone()));
            }
        }
        out
    }

    /// The pointer symbol a pointer statement associates, when it is a
    /// local pointer dfort follows; otherwise reported (pointer
    /// components, arguments, globals).
    fn local_pointer(&mut self, e: &Expr, span: Span) -> Option<SymbolId> {
        let why = match &e.kind {
            ExprKind::Var(p) => {
                let s = self.unit.symbol(*p);
                if s.storage == Storage::Local && !s.attrs.save && !s.attrs.initialized {
                    return Some(*p);
                }
                format!(
                    "`{}` is not a local pointer; only local pointers are followed",
                    s.name
                )
            }
            _ => "pointer components are not followed yet".to_string(),
        };
        if self.apply {
            self.unresolved.push((span, why));
        }
        None
    }

    /// Whether `p => t` is a target dfort reads uses through: a variable,
    /// an element, a section without stride of matching rank, or a whole
    /// component.
    fn check_target(&self, p: SymbolId, t: &Expr) -> Result<(), String> {
        let unit = self.unit;
        let name = &unit.symbol(p).name;
        let rank = unit.symbol(p).rank();
        let target_rank = match &t.kind {
            ExprKind::Var(a) => unit.symbol(*a).rank(),
            ExprKind::ArrayRef { subs, .. } => {
                if subs.iter().any(|s| {
                    matches!(s, Subscript::Range { stride: Some(st), .. } if !matches!(st.kind, ExprKind::Int(1)))
                }) {
                    return Err(format!("`{name}` points to a strided section; strided targets are not followed yet"));
                }
                subs.iter()
                    .filter(|s| matches!(s, Subscript::Range { .. }))
                    .count()
            }
            ExprKind::Component { subs, .. } if subs.is_empty() => rank,
            _ => {
                return Err(format!(
                    "`{name}` points to something other than a variable, an element, a section or a whole component"
                ))
            }
        };
        if target_rank != rank {
            return Err(format!("`{name}`'s target does not have its rank"));
        }
        let mut call = false;
        t.walk(&mut |x| {
            call |= matches!(
                x.kind,
                ExprKind::FunctionCall { .. } | ExprKind::Apply { .. }
            )
        });
        if call {
            return Err(format!("`{name}`'s target calls a function"));
        }
        Ok(())
    }

    /// Rewrites every direct expression of statement `id` (none of a
    /// pointer statement's pointer).
    fn rewrite_direct(&mut self, id: StmtId, env: &Env) {
        let n = self.unit.stmt(id).kind.exprs().len();
        for k in 0..n {
            self.rewrite_nth(id, k, env);
        }
    }

    /// Rewrites the `k`-th direct expression of statement `id`.
    fn rewrite_nth(&mut self, id: StmtId, k: usize, env: &Env) {
        if !self.apply {
            return;
        }
        let mut kind = std::mem::replace(&mut self.out.stmts[id].kind, StmtKind::Continue);
        let call = matches!(kind, StmtKind::Call { .. });
        if let Some(e) = kind.exprs_mut().into_iter().nth(k) {
            // A pointer passed whole to a procedure stays itself: the
            // formal may be a pointer (the derivatives pass its derivative
            // pointer beside it).
            if !(call && bare_pointer(self.unit, e)) {
                self.rewrite(e, env);
            }
        }
        self.out.stmts[id].kind = kind;
    }

    /// `e` with the pointers whose association `env` knows read as their
    /// targets; the others reported (when applying).
    fn rewrite(&mut self, e: &mut Expr, env: &Env) {
        let unit = self.unit;
        let mut problems = Vec::new();
        // Pointers passed whole to user functions stay themselves.
        let mut kept: Vec<Span> = Vec::new();
        e.walk(&mut |x| {
            if let ExprKind::FunctionCall { args, .. } = &x.kind {
                kept.extend(
                    args.iter()
                        .filter(|a| bare_pointer(unit, &a.value))
                        .map(|a| a.value.span),
                );
            }
        });
        e.walk_mut(&mut |x| {
            let span = x.span;
            if kept.contains(&span) && bare_pointer(unit, x) {
                return;
            }
            let pointer_of = |e: &Expr| match &e.kind {
                ExprKind::Var(p) if env.contains_key(p) => Some(*p),
                _ => None,
            };
            match &x.kind {
                ExprKind::Intrinsic { name, args } if name == "associated" => {
                    let Some(p) = args.first().and_then(|a| pointer_of(&a.value)) else {
                        return;
                    };
                    match (&env[&p], args.len()) {
                        (Assoc::Target { .. }, 1) => x.kind = ExprKind::Logical(true),
                        (Assoc::Null, _) => x.kind = ExprKind::Logical(false),
                        (Assoc::Unknown(why), _) => problems.push((span, why.clone())),
                        _ => problems.push((
                            span,
                            format!(
                                "`associated({}, …)` with a target is not followed yet",
                                unit.symbol(p).name
                            ),
                        )),
                    }
                }
                ExprKind::Var(p) if env.contains_key(p) => match &env[p] {
                    Assoc::Target { target, .. } => {
                        *x = target.clone();
                        x.span = span;
                    }
                    Assoc::Null => problems.push((
                        span,
                        format!("`{}` is used where it is null", unit.symbol(*p).name),
                    )),
                    Assoc::Unknown(why) => problems.push((span, why.clone())),
                },
                ExprKind::ArrayRef { array, subs } if env.contains_key(array) => {
                    match &env[array] {
                        Assoc::Target { target, .. } => {
                            *x = index_target(unit, target, subs);
                            x.span = span;
                        }
                        Assoc::Null => problems.push((
                            span,
                            format!("`{}` is used where it is null", unit.symbol(*array).name),
                        )),
                        Assoc::Unknown(why) => problems.push((span, why.clone())),
                    }
                }
                _ => {}
            }
        });
        if self.apply {
            self.unresolved.extend(problems);
        }
    }
}

/// Whether `e` is a pointer variable, whole.
fn bare_pointer(unit: &Unit, e: &Expr) -> bool {
    matches!(e.kind, ExprKind::Var(p) if unit.symbol(p).attrs.pointer)
}

/// `p(subs)` read as an element or section of `p`'s target `t`: each of
/// `p`'s dimensions (lower bound 1 for a section) maps to the target's
/// section dimension in order; a whole variable or component keeps its
/// bounds.
fn index_target(unit: &Unit, t: &Expr, subs: &[Subscript]) -> Expr {
    match &t.kind {
        ExprKind::Var(a) => Expr {
            kind: ExprKind::ArrayRef {
                array: *a,
                subs: subs.to_vec(),
            },
            span: t.span,
        },
        ExprKind::Component { base, name, .. } => Expr {
            kind: ExprKind::Component {
                base: base.clone(),
                name: name.clone(),
                subs: subs.to_vec(),
            },
            span: t.span,
        },
        ExprKind::ArrayRef { array, subs: tsubs } => {
            let mut given = subs.iter();
            let mapped = tsubs
                .iter()
                .enumerate()
                .map(|(d, ts)| match ts {
                    Subscript::Index(_) => ts.clone(),
                    Subscript::Range { lo, hi, .. } => {
                        let first = lo
                            .as_deref()
                            .cloned()
                            .unwrap_or_else(|| lower_bound(unit, *array, d));
                        match given.next() {
                            Some(Subscript::Index(i)) => Subscript::Index(shift(&first, i)),
                            Some(Subscript::Range {
                                lo: l,
                                hi: h,
                                stride,
                            }) => Subscript::Range {
                                lo: l
                                    .as_ref()
                                    .map(|l| Box::new(shift(&first, l)))
                                    .or(lo.clone()),
                                hi: h
                                    .as_ref()
                                    .map(|h| Box::new(shift(&first, h)))
                                    .or(hi.clone()),
                                stride: stride.clone(),
                            },
                            None => ts.clone(),
                        }
                    }
                })
                .collect();
            Expr {
                kind: ExprKind::ArrayRef {
                    array: *array,
                    subs: mapped,
                },
                span: t.span,
            }
        }
        _ => t.clone(),
    }
}

/// Dimension `d`'s lower bound of `a`: its declared constant, or
/// `lbound(a, d)`.
fn lower_bound(unit: &Unit, a: SymbolId, d: usize) -> Expr {
    let s = unit.symbol(a);
    let span = s.span;
    let dim = s.dims.get(d);
    match dim {
        Some(Dim {
            kind: DimKind::Explicit | DimKind::AssumedSize,
            lower: None,
            ..
        })
        | Some(Dim {
            kind: DimKind::AssumedShape,
            lower: None,
            ..
        }) => int(1, span),
        Some(Dim { lower: Some(e), .. }) if matches!(e.kind, ExprKind::Int(_)) => (**e).clone(),
        _ => Expr {
            kind: ExprKind::Intrinsic {
                name: "lbound".into(),
                args: vec![
                    Arg {
                        keyword: None,
                        value: Expr {
                            kind: ExprKind::Var(a),
                            span,
                        },
                    },
                    Arg {
                        keyword: None,
                        value: int(d as i64 + 1, span),
                    },
                ],
            },
            span,
        },
    }
}

fn int(v: i64, span: Span) -> Expr {
    Expr {
        kind: ExprKind::Int(v),
        span,
    }
}

/// `first + i - 1`, folded where both are constants or `first` is 1.
fn shift(first: &Expr, i: &Expr) -> Expr {
    let span = i.span;
    match (&first.kind, &i.kind) {
        (ExprKind::Int(1), _) => i.clone(),
        (ExprKind::Int(a), ExprKind::Int(b)) => int(a + b - 1, span),
        (ExprKind::Int(a), _) => Expr {
            kind: ExprKind::Binary {
                op: BinaryOp::Add,
                lhs: Box::new(i.clone()),
                rhs: Box::new(int(a - 1, span)),
            },
            span,
        },
        _ => Expr {
            kind: ExprKind::Binary {
                op: BinaryOp::Sub,
                lhs: Box::new(Expr {
                    kind: ExprKind::Binary {
                        op: BinaryOp::Add,
                        lhs: Box::new(first.clone()),
                        rhs: Box::new(i.clone()),
                    },
                    span,
                }),
                rhs: Box::new(int(1, span)),
            },
            span,
        },
    }
}

/// What a (simple) statement changes that a target may read: the
/// variables it writes, those it (de)allocates, and whether it calls a
/// procedure (which may change any global and its arguments).
fn effects(kind: &StmtKind) -> (Vec<SymbolId>, Vec<SymbolId>, bool) {
    let root = |e: &Expr| dfort_ir::dp::target(e).map(|(s, _)| s);
    let mut written = Vec::new();
    let mut allocated = Vec::new();
    let mut calls = false;
    match kind {
        StmtKind::Assign { lhs, .. } => written.extend(root(lhs)),
        StmtKind::Io { writes, .. } => {
            written.extend(dfort_ir::dp::io_targets(writes).into_iter().map(|(s, _)| s))
        }
        StmtKind::Call { args, .. } => {
            calls = true;
            written.extend(args.iter().filter_map(|a| root(&a.value)));
        }
        StmtKind::Allocate { objects, .. } => {
            allocated.extend(objects.iter().filter_map(root));
        }
        _ => {}
    }
    for e in kind.exprs() {
        e.walk(&mut |x| {
            if let ExprKind::FunctionCall { args, .. } = &x.kind {
                calls = true;
                written.extend(args.iter().filter_map(|a| root(&a.value)));
            }
        });
    }
    (written, allocated, calls)
}

/// Forgets the associations whose target reads a written variable, whose
/// target's variable is (de)allocated, or (after a call) that read a
/// global.
fn invalidate(
    unit: &Unit,
    env: &mut Env,
    written: &[SymbolId],
    allocated: &[SymbolId],
    calls: bool,
) {
    for (p, a) in env.iter_mut() {
        let Assoc::Target { target, .. } = a else {
            continue;
        };
        let base = dfort_ir::dp::target(target).map(|(s, _)| s);
        let mut reads = Vec::new();
        subscript_symbols(target, &mut reads);
        let name = &unit.symbol(*p).name;
        let why = if let Some(v) = reads.iter().find(|v| written.contains(v)) {
            Some(format!(
                "`{}`, which `{name}`'s target reads, changes after `{name}` is associated",
                unit.symbol(*v).name
            ))
        } else if base.is_some_and(|b| allocated.contains(&b)) {
            Some(format!(
                "`{name}`'s target is allocated or deallocated after `{name}` is associated"
            ))
        } else if calls && reads.iter().any(|v| unit.symbol(*v).is_global()) {
            Some(format!(
                "a call may change the globals `{name}`'s target reads after `{name}` is associated"
            ))
        } else {
            None
        };
        if let Some(why) = why {
            *a = Assoc::Unknown(why);
        }
    }
}

/// The variables the subscripts of a data reference read.
fn subscript_symbols(t: &Expr, out: &mut Vec<SymbolId>) {
    let subs = match &t.kind {
        ExprKind::ArrayRef { subs, .. } => subs,
        ExprKind::Component { base, subs, .. } => {
            subscript_symbols(base, out);
            subs
        }
        _ => return,
    };
    for e in subscript_exprs(subs) {
        e.walk(&mut |x| match &x.kind {
            ExprKind::Var(s) => out.push(*s),
            ExprKind::ArrayRef { array, .. } => out.push(*array),
            _ => {}
        });
    }
}

/// The associations met where paths join: equal ones kept, others
/// unknown.
fn meet_all(unit: &Unit, envs: Vec<Env>) -> Env {
    let mut it = envs.into_iter();
    let Some(mut acc) = it.next() else {
        return Env::new();
    };
    for e in it {
        for (p, a) in acc.iter_mut() {
            let Some(b) = e.get(p) else { continue };
            if !a.same(b) {
                let why = match (&*a, b) {
                    (Assoc::Unknown(w), _) | (_, Assoc::Unknown(w)) => w.clone(),
                    _ => format!(
                        "`{}` is associated differently on the paths that reach this use (dfort follows a pointer only where one association reaches it)",
                        unit.symbol(*p).name
                    ),
                };
                *a = Assoc::Unknown(why);
            }
        }
    }
    acc
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(src: &str) -> Unit {
        let program = crate::test_support::program(src);
        (*program.units[UnitId::new(0)]).clone()
    }

    /// The assignments of the unit as the analyses read them.
    fn assignments(u: &Unit) -> Vec<String> {
        u.stmts
            .iter()
            .filter_map(|s| match &s.kind {
                StmtKind::Assign { lhs, rhs } => Some(format!(
                    "{} = {}",
                    dfort_ir::dump::expr(u, lhs),
                    dfort_ir::dump::expr(u, rhs)
                )),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn sections_elements_and_columns_are_read_as_their_targets() {
        let u = unit(
            "subroutine s(a, b, n, y)
  integer :: n, j
  real(8), target :: a(n), b(0:n, n)
  real(8) :: y
  real(8), pointer :: p(:), q, c(:)
  p => a(2:n)
  q => a(1)
  p(3) = p(1) * q
  y = sum(p)
  do j = 1, n
    c => b(:, j)
    c(2) = c(1)
  end do
  if (associated(p)) y = 2 * y
end subroutine
",
        );
        let seen = see_through(&u).expect("the unit uses pointers");
        assert_eq!(
            assignments(&seen),
            [
                "a(4) = a(2) * a(1)",
                "y = sum(a(2:n))",
                "b(1, j) = b(0, j)",
                "y = 2 * y"
            ]
        );
        assert!(unresolved(&u).is_empty(), "{:?}", unresolved(&u));
        let cond = seen
            .stmts
            .iter()
            .find_map(|s| match &s.kind {
                StmtKind::If { arms, .. } => Some(dfort_ir::dump::expr(&seen, &arms[0].cond)),
                _ => None,
            })
            .unwrap();
        assert_eq!(cond, ".true.");
    }

    #[test]
    fn associations_that_differ_by_path_or_whose_subscripts_change_are_not_followed() {
        let u = unit(
            "subroutine s(a, b, c, k, y)
  integer :: k
  real(8), target :: a(3), b(3)
  real(8) :: y
  logical :: c
  real(8), pointer :: p(:), e
  if (c) then
    p => a
  else
    p => b
  end if
  y = sum(p)
  e => a(k)
  k = k + 1
  y = y + e
end subroutine
",
        );
        let why: Vec<String> = unresolved(&u).into_iter().map(|(_, w)| w).collect();
        assert_eq!(why.len(), 2, "{why:?}");
        assert!(
            why[0].contains("associated differently on the paths"),
            "{why:?}"
        );
        assert!(
            why[1].contains("`k`, which `e`'s target reads, changes"),
            "{why:?}"
        );
    }

    #[test]
    fn a_pointer_associated_once_is_followed_in_a_routine_with_jumps() {
        let src = |extra: &str| {
            format!(
                "subroutine s(a, n, y)
  integer :: n, i
  real(8), target :: a(n)
  real(8) :: y
  real(8), pointer :: p(:)
  i = 1
  p => a(2:n)
10 y = y + p(i)
  i = i + 1
  {extra}
  if (i < n) goto 10
end subroutine
"
            )
        };
        let once = unit(&src(""));
        assert!(unresolved(&once).is_empty());
        assert_eq!(
            assignments(&see_through(&once).unwrap())[1],
            "y = y + a(i + 1)"
        );
        let twice = unit(&src("p => a"));
        // Both associations and the use between them.
        assert_eq!(unresolved(&twice).len(), 3, "{:?}", unresolved(&twice));
    }
}
