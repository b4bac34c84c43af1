//! State that outlives a call, in the adjoint (issues 41 and 45): the
//! SAVE'd locals (SAVE, DATA, an initialiser) that the procedures reached
//! from a root change. The analyses follow each as a global only its
//! procedure names ([`dfort_ir::queries::saved_local`], paper 000 §5.2's
//! treatment of globals): activity flows through it from one call to the
//! next, a caller's checkpoint saves it around a call that changes it
//! ([`crate::checkpoint`]), TBR records its overwritten values.
//!
//! The adjoint cannot reach the original procedure's copy of such a
//! variable, so it keeps the variable in one place that every routine it
//! writes shares (a module of its own per procedure), with its adjoint,
//! which accumulates from one call to the next; and wherever the adjoint
//! would run the original of a procedure that changes one, itself or
//! through its callees, it runs a copy of that procedure that uses the
//! shared variable.
//!
//! Contract: [`of_root`] gives, for one root's derivative set, the SAVE'd
//! locals kept so ([`AdjointState::locals`]) and the procedures copied
//! ([`AdjointState::copied`]). A SAVE'd local confined to its procedure
//! ([`crate::confined`]: its value reaches no variable with a derivative,
//! as a warning counter) stays the procedure's own unless the procedure's
//! adjoint routine would read it undefined (no initial value). Only-read
//! SAVE'd locals are constants and stay too. Deterministic; analysis
//! only.

use crate::dep::GlobalKey;
use crate::derivatives::RootSet;
use crate::effects::ProgramEffects;
use dfort_ir::callgraph::Callee;
use dfort_ir::queries;
use dfort_ir::*;
use std::collections::BTreeSet;

/// What the adjoint of one root shares of SAVE'd state.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AdjointState {
    /// The SAVE'd locals (procedure, symbol) kept in one place that every
    /// routine of the adjoint shares.
    pub locals: BTreeSet<(UnitId, SymbolId)>,
    /// The procedures the adjoint runs a copy of in place of the original
    /// (they change one of `locals`, themselves or through callees), in
    /// program order.
    pub copied: Vec<UnitId>,
}

impl AdjointState {
    /// Whether `u` changes one of the shared SAVE'd locals.
    pub fn is_copied(&self, u: UnitId) -> bool {
        self.copied.contains(&u)
    }
}

/// The [`AdjointState`] of the root of `set` (see the module's contract).
pub fn of_root(program: &Program, set: &RootSet, effects: &ProgramEffects) -> AdjointState {
    let reached = reached_from(program, set.root);
    let with_d = crate::confined::WithDerivative {
        symbols: &set.with_d,
        commons: &set.commons,
        module_vars: &set.module_vars,
    };
    let has_saved = |u: &Unit| u.symbols.iter().any(|sym| queries::is_saved_local(u, sym));
    let locals = shared(
        program,
        effects,
        &reached,
        &has_saved,
        |u| set.units.contains(&u),
        &with_d,
    );
    if locals.is_empty() {
        return AdjointState::default();
    }
    // The root's original runs only where it calls itself.
    let called =
        |u: UnitId| {
            program.call_graph.sites.iter().any(|s| {
                matches!(s.callee, Callee::Unit(c) if c == u) && reached.contains(&s.caller)
            })
        };
    let copied = reached
        .iter()
        .copied()
        .filter(|&u| u != set.root || called(u))
        .filter(|&u| changes(program, effects, u, &locals))
        .collect();
    AdjointState { locals, copied }
}

/// Whether unit `u` changes one of the shared SAVE'd locals `locals`,
/// itself or through its callees.
pub fn changes(
    program: &Program,
    effects: &ProgramEffects,
    u: UnitId,
    locals: &BTreeSet<(UnitId, SymbolId)>,
) -> bool {
    effects.get(u).is_some_and(|fx| {
        saved_locals(program, &fx.written_globals)
            .iter()
            .any(|k| locals.contains(k))
    })
}

/// The SAVE'd locals the adjoints of all the roots of `carriers` share:
/// what a caller's checkpoint may save ([`crate::checkpoint`]); with one
/// root, exactly [`of_root`]'s `locals`.
pub fn of_carriers(
    program: &Program,
    carriers: &crate::derivatives::Carriers,
    effects: &ProgramEffects,
    shapes: &crate::shape::Shapes,
) -> BTreeSet<(UnitId, SymbolId)> {
    let with_d = crate::confined::WithDerivative {
        symbols: &carriers.with_d,
        commons: &carriers.commons,
        module_vars: &carriers.module_vars,
    };
    let routine = |u: UnitId| carriers.routine.get(u).copied().unwrap_or(false);
    let has_saved = |u: &Unit| shapes.has_saved_locals(u);
    shared(
        program,
        effects,
        &carriers.reachable,
        &has_saved,
        routine,
        &with_d,
    )
}

/// The SAVE'd locals changed in `reached` that are shared: whose values
/// may reach a variable with a derivative (`with_d`), or that the adjoint
/// routine of their procedure (`routine`) would read undefined.
/// `reached` is closed under calls; `has_saved` tells the units with
/// SAVE'd locals.
fn shared(
    program: &Program,
    effects: &ProgramEffects,
    reached: &[UnitId],
    has_saved: &dyn Fn(&Unit) -> bool,
    routine: impl Fn(UnitId) -> bool,
    with_d: &crate::confined::WithDerivative,
) -> BTreeSet<(UnitId, SymbolId)> {
    // A SAVE'd local is named only in its procedure and the procedures
    // inside it: whatever changes it calls one of those that writes it,
    // and calls stay in `reached`. So only each unit's own and its
    // hosts' are looked up in what it writes (not every unit's written
    // globals, which hold all of its callees').
    let mut keys = BTreeSet::new();
    for &u in reached {
        let Some(fx) = effects.get(u) else {
            continue;
        };
        let mut owner = Some(u);
        while let Some(o) = owner {
            let unit = program.unit(o);
            if has_saved(unit) {
                for (s, sym) in unit.symbols.iter_enumerated() {
                    let key = GlobalKey::Shared { unit: o, symbol: s };
                    if queries::is_saved_local(unit, sym) && fx.written_globals.contains(&key) {
                        keys.insert((o, s));
                    }
                }
            }
            owner = unit.parent;
        }
    }
    if keys.is_empty() {
        return keys;
    }
    let reaches = |seeds: &[(UnitId, SymbolId)]| {
        crate::confined::reaches_derivative(program, effects, reached, seeds, with_d)
    };
    // A procedure with an adjoint routine re-runs itself there: a SAVE'd
    // local of its own without an initial value would be read undefined.
    let undefined_copy =
        |&(u, s): &(UnitId, SymbolId)| routine(u) && !program.unit(u).symbol(s).attrs.initialized;
    let all: Vec<(UnitId, SymbolId)> = keys.iter().copied().collect();
    if !keys.iter().any(undefined_copy) && !reaches(&all) {
        return BTreeSet::new();
    }
    keys.into_iter()
        .filter(|k| undefined_copy(k) || reaches(&[*k]))
        .collect()
}

/// The SAVE'd locals among `keys`, as (procedure, symbol).
pub fn saved_locals<'k>(
    program: &Program,
    keys: impl IntoIterator<Item = &'k GlobalKey>,
) -> Vec<(UnitId, SymbolId)> {
    keys.into_iter()
        .filter_map(|k| match k {
            GlobalKey::Shared { unit, symbol }
                if dfort_ir::queries::saved_local(program.unit(*unit), *symbol) =>
            {
                Some((*unit, *symbol))
            }
            _ => None,
        })
        .collect()
}

/// The units reached from `root` through calls (`root` included), in
/// program order.
pub fn reached_from(program: &Program, root: UnitId) -> Vec<UnitId> {
    let mut seen = vec![false; program.units.len()];
    let mut todo = vec![root];
    seen[root.index()] = true;
    while let Some(u) = todo.pop() {
        for c in program.call_graph.callees(u) {
            if !std::mem::replace(&mut seen[c.index()], true) {
                todo.push(c);
            }
        }
    }
    program
        .units
        .iter()
        .map(|u| u.id)
        .filter(|u| seen[u.index()])
        .collect()
}
