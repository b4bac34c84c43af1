//! Differentiable dependency analysis, Dep (paper 000 §4.1): for each
//! unit, which of its interface variables (real dummy arguments and the
//! globals it or its callees touch: COMMON members, module and host
//! variables) depend differentiably, at exit, on which interface variables
//! at entry. Computed bottom-up over the call graph (callees first), with
//! a fixpoint inside recursive components; at a call the callee's summary
//! is translated from formal to actual names.
//!
//! Contract: the variables of a unit are slots (its symbols, then globals
//! known only through callees). Dep is computed one interface input at a
//! time: the forward propagation `S × Dep(I)` of §4.2 from that input
//! alone, solved on the CFG by [`crate::engine`] (Fig. 2's general
//! equations; the loop fixpoint of Fig. 3 falls out of the iteration),
//! with the DP rules of [`dfort_ir::dp`]; a partial write (array element)
//! keeps the old dependencies, the coarse whole-array rule. Calls to
//! procedures without source make every actual they may modify depend on
//! every differentiable actual.

use crate::engine::{solve, Direction};
use dfort_ir::bitset::BitSet;
use dfort_ir::cfg::NodeKind;
use dfort_ir::dp::{differentiable, dp, target};
use dfort_ir::queries::saved_local;
use dfort_ir::*;
use std::collections::HashMap;

/// A variable shared between units.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum GlobalKey {
    /// Member `index` of a COMMON block.
    Common { block: String, index: u32 },
    /// A variable declared in a module or a host procedure.
    Shared { unit: UnitId, symbol: SymbolId },
}

/// The global a symbol of `unit` stands for, if any. A name reached by
/// host or use association stands for what it is where it is declared: a
/// host's COMMON member seen by an internal procedure is that member.
pub fn global_key(program: &Program, unit: &Unit, s: SymbolId) -> Option<GlobalKey> {
    match &unit.symbol(s).storage {
        Storage::Common { block, index } => Some(GlobalKey::Common {
            block: block.clone(),
            index: *index,
        }),
        Storage::Imported { from, symbol, .. } => {
            let origin = program.units.get(*from)?;
            let declared = origin.symbols.get(*symbol)?;
            // Association chains end at a declaration, never at the unit
            // itself.
            match &declared.storage {
                Storage::Common { .. } | Storage::Imported { .. } if *from != unit.id => {
                    global_key(program, origin, *symbol)
                }
                _ => Some(GlobalKey::Shared {
                    unit: *from,
                    symbol: *symbol,
                }),
            }
        }
        // A module's variables, a host procedure's variables that its
        // internal procedures see by host association, and a procedure's
        // SAVE'd locals, which live from one call to the next.
        Storage::Local | Storage::Dummy(_) | Storage::Result
            if unit.kind == UnitKind::Module
                || !unit.children.is_empty()
                || saved_local(unit, s) =>
        {
            Some(GlobalKey::Shared {
                unit: unit.id,
                symbol: s,
            })
        }
        _ => None,
    }
}

/// An interface variable of a unit.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Iface {
    /// The n-th dummy argument (0-based).
    Formal(u32),
    Global(GlobalKey),
}

/// Dep of a unit over its interface: `dep[o]` holds the interface
/// variables (indices into `iface`) that `iface[o]` depends on at exit.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    pub iface: Vec<Iface>,
    pub dep: Vec<BitSet>,
    /// For a function with a differentiable result: the interface
    /// variables (indices into `iface`) its result depends on.
    pub result: BitSet,
}

impl Summary {
    fn index(&self, i: &Iface) -> Option<usize> {
        self.iface.iter().position(|x| x == i)
    }
    /// Whether interface variable `after` depends on `before` (names as
    /// formal positions or globals).
    pub fn depends(&self, after: &Iface, before: &Iface) -> bool {
        match (self.index(after), self.index(before)) {
            (Some(a), Some(b)) => self.dep[a].contains(b),
            _ => false,
        }
    }
}

/// The Dep summary of each unit (None: not a procedure, or not computed).
/// Shared, so that an edit's incremental run copies the unchanged units'
/// summaries by reference.
pub type Summaries = dfort_ir::chunk_vec::ChunkVec<UnitId, Option<std::sync::Arc<Summary>>>;

/// The variable slots of a unit: its symbols, then globals only its
/// callees touch.
#[derive(Clone, Debug, Default)]
pub struct Space {
    pub size: usize,
    /// Slot of each global the unit or its callees touch.
    pub globals: HashMap<GlobalKey, usize>,
}

impl Space {
    pub fn new(program: &Program, unit: &Unit, callee_globals: &[GlobalKey]) -> Space {
        let mut size = unit.symbols.len();
        let mut globals = HashMap::new();
        for s in unit.symbols.indices() {
            if let Some(k) = global_key(program, unit, s) {
                if differentiable(unit, s) {
                    globals.insert(k, s.index());
                }
            }
        }
        for k in callee_globals {
            if !globals.contains_key(k) {
                globals.insert(k.clone(), size);
                size += 1;
            }
        }
        Space { size, globals }
    }
}

/// How one interface variable of a callee maps to the caller's slots at
/// a call site.
#[derive(Clone, Debug, Default)]
pub struct CallBinding {
    /// Caller slots whose values flow in (DP of the actual, or the global).
    pub inputs: BitSet,
    /// The caller slot the callee writes back to, if any (a variable actual
    /// or a global); expressions passed by value have none.
    pub output: Option<usize>,
    /// Whether the old value survives the call (the callee does not
    /// overwrite it completely, or the actual is only part of an array).
    pub keeps_old: bool,
}

/// Binds each interface variable of `sum` (the callee's Dep summary) to
/// the caller's slots, for the call `callee(args)` in `unit`.
pub fn bind_call(
    program: &Program,
    unit: &Unit,
    space: &Space,
    summaries: &Summaries,
    callee: UnitId,
    args: &[Arg],
) -> Vec<CallBinding> {
    let Some(Some(sum)) = summaries.get(callee) else {
        return Vec::new();
    };
    let cu = program.unit(callee);
    sum.iface
        .iter()
        .map(|i| {
            // A callee that keeps a value has o ≺ o in its summary, so the
            // old value flows through `dep`; only an array element or
            // section passed as actual keeps the rest of the array.
            let mut b = CallBinding {
                keeps_old: is_part(args, i),
                ..CallBinding::default()
            };
            match i {
                Iface::Formal(k) => {
                    let actual = args.iter().enumerate().find(|(pos, a)| match &a.keyword {
                        Some(kw) => cu
                            .args
                            .get(*k as usize)
                            .is_some_and(|f| cu.symbol(*f).name == *kw),
                        None => *pos == *k as usize,
                    });
                    if let Some((_, a)) = actual {
                        dp_through(unit, space, summaries, &a.value, &mut b.inputs);
                        b.output = target(&a.value)
                            .filter(|(s, _)| differentiable(unit, *s))
                            .map(|(s, _)| s.index());
                    }
                }
                Iface::Global(k) => {
                    if let Some(&slot) = space.globals.get(k) {
                        b.inputs.insert(slot);
                        b.output = Some(slot);
                    }
                }
            }
            b
        })
        .collect()
}

/// DP(e) through the procedures dfort has a summary of: besides the
/// variables of their actuals, a function reference in `e` contributes
/// the slots of the globals its result depends on. `f(g(r))` with `g`
/// returning a varied global passes a varied value to `f` (fuzzer, seed
/// 77, case 2: the tangent lost it).
pub fn dp_through(unit: &Unit, space: &Space, summaries: &Summaries, e: &Expr, out: &mut BitSet) {
    dp(unit, e, out);
    for (c, _) in dfort_ir::queries::function_references(e) {
        let Some(Some(sum)) = summaries.get(c) else {
            continue;
        };
        for i in sum.result.iter() {
            if let Some(Iface::Global(k)) = sum.iface.get(i) {
                if let Some(&slot) = space.globals.get(k) {
                    out.insert(slot);
                }
            }
        }
    }
}

fn is_part(args: &[Arg], i: &Iface) -> bool {
    match i {
        Iface::Formal(k) => args
            .get(*k as usize)
            .and_then(|a| target(&a.value))
            .is_some_and(|(_, whole)| !whole),
        Iface::Global(_) => false,
    }
}

/// The slots of `unit` given its callees' summaries.
pub fn space_of(program: &Program, unit: &Unit, summaries: &Summaries) -> Space {
    let callee_globals: Vec<GlobalKey> = program
        .call_graph
        .callees(unit.id)
        .filter_map(|c| summaries.get(c)?.as_ref())
        .flat_map(|s| {
            s.iface.iter().filter_map(|i| match i {
                Iface::Global(k) => Some(k.clone()),
                _ => None,
            })
        })
        .collect();
    Space::new(program, unit, &callee_globals)
}

/// Dep of one unit, given the summaries of its callees (None where not
/// computed yet or without source). Column by column: for each interface
/// input, the varied propagation of [`crate::activity`] from that input
/// alone gives the interface outputs that depend on it — memory linear in
/// the number of variables, where a full matrix would be quadratic.
pub fn summarize(program: &Program, unit: &Unit, summaries: &Summaries) -> Summary {
    let space = space_of(program, unit, summaries);
    // Interface: real formals, then globals (own and callees'), sorted for
    // stable output.
    let mut iface: Vec<(Iface, usize)> = unit
        .args
        .iter()
        .enumerate()
        .filter(|(_, a)| differentiable(unit, **a))
        .map(|(k, a)| (Iface::Formal(k as u32), a.index()))
        .collect();
    let mut globals: Vec<(&GlobalKey, &usize)> = space.globals.iter().collect();
    globals.sort();
    iface.extend(
        globals
            .into_iter()
            .map(|(k, s)| (Iface::Global(k.clone()), *s)),
    );
    let calls = crate::activity::Calls {
        summaries,
        space: space.clone(),
    };
    let cfg = &unit.cfg;
    let mut dep = vec![BitSet::default(); iface.len()];
    let mut result = BitSet::default();
    let result_slot = unit
        .result
        .filter(|r| differentiable(unit, *r))
        .map(|r| r.index());
    for (i, (_, slot)) in iface.iter().enumerate() {
        let start: BitSet = [*slot].into_iter().collect();
        let sol = solve(cfg, Direction::Forward, &start, |node, input| {
            let nd = cfg.node(node);
            let mut s = input.clone();
            if nd.kind == NodeKind::BasicBlock {
                for id in &nd.stmts {
                    s = crate::activity::varied_transfer(program, unit, &calls, unit.stmt(*id), &s);
                }
            }
            s
        });
        let at_exit = sol.after.get(cfg.exit).cloned().unwrap_or_default();
        for (o, (_, out_slot)) in iface.iter().enumerate() {
            if at_exit.contains(*out_slot) {
                dep[o].insert(i);
            }
        }
        if result_slot.is_some_and(|r| at_exit.contains(r)) {
            result.insert(i);
        }
    }
    Summary {
        iface: iface.into_iter().map(|(i, _)| i).collect(),
        dep,
        result,
    }
}

/// Dep summaries of every procedure, callees before callers, iterating
/// to a fixpoint inside recursive components (summaries only grow).
pub fn summarize_all(program: &Program) -> Summaries {
    let mut sums: Summaries = Summaries::from_elem(None, program.units.len());
    for scc in program.call_graph.sccs.iter() {
        summarize_component(program, scc, &mut sums);
    }
    sums
}

/// Recomputes the summaries of one call-graph component (its procedures;
/// returned), from "depends on nothing" and growing when it is recursive.
fn summarize_component(program: &Program, scc: &[UnitId], sums: &mut Summaries) -> Vec<UnitId> {
    let procs: Vec<UnitId> = scc
        .iter()
        .copied()
        .filter(|u| program.unit(*u).is_procedure())
        .collect();
    let recursive = procs.iter().any(|u| program.call_graph.recursive[*u]);
    if recursive {
        for u in &procs {
            let s = summarize(program, program.unit(*u), &Summaries::default());
            sums[*u] = Some(std::sync::Arc::new(Summary {
                dep: vec![BitSet::default(); s.iface.len()],
                iface: s.iface,
                result: BitSet::default(),
            }));
        }
    }
    for round in 0.. {
        let mut grew = false;
        for u in &procs {
            let s = summarize(program, program.unit(*u), sums);
            if sums[*u].as_deref() != Some(&s) {
                sums[*u] = Some(std::sync::Arc::new(s));
                grew = true;
            }
        }
        if !recursive || !grew || round > 64 {
            break;
        }
    }
    procs
}

/// Incremental Dep: after the units in `changed` were edited (same unit
/// and symbol numbering as when `old` was computed), recomputes their
/// summaries and, callees first, those of callers that see a changed
/// summary — and nothing else. Returns the summaries and the units
/// recomputed.
pub fn resummarize(
    program: &Program,
    old: &Summaries,
    changed: &[UnitId],
) -> (Summaries, Vec<UnitId>) {
    let mut sums = match old.len() == program.units.len() {
        true => old.clone(),
        false => Summaries::from_elem(None, program.units.len()),
    };
    let mut dirty: IdVec<UnitId, bool> = IdVec::from_elem(false, program.units.len());
    for u in changed {
        if let Some(d) = dirty.get_mut(*u) {
            *d = true;
        }
    }
    let mut recomputed = Vec::new();
    // The components of the changed units and, callees first, of the
    // callers of those whose summaries changed.
    let mut pending = crate::incremental::Pending::of(program, changed.iter().copied());
    while let Some(k) = pending.callees_first() {
        let scc = &program.call_graph.sccs[k];
        if !scc.iter().any(|u| dirty[*u]) {
            continue;
        }
        let before: Vec<(UnitId, Option<std::sync::Arc<Summary>>)> =
            scc.iter().map(|u| (*u, sums[*u].clone())).collect();
        let procs = summarize_component(program, scc, &mut sums);
        recomputed.extend(procs.iter().copied());
        let changed_here = before.iter().any(|(u, b)| sums[*u] != *b);
        if changed_here {
            for u in &procs {
                pending.add_callers(program, *u, k, |caller| dirty[caller] = true);
            }
        }
    }
    (sums, recomputed)
}
