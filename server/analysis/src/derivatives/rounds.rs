//! The rounds of the derivative closure ([`super`]): each rule has one
//! premise (a variable, a module variable or a COMMON member with a
//! derivative) and one conclusion, and is stored with the unit whose
//! inputs it comes from ([`UnitInputs`]). A round visits the units marked
//! by the last one; a new fact marks the units holding a rule it is the
//! premise of, so a unit is visited again only when something it reads
//! changed. The rounds end when none adds a fact: the least set closed
//! under the rules that holds what it started from.
//!
//! Contract: from the same facts and rules, the same result whatever units
//! are marked first, as long as every unit a starting fact feeds is
//! marked. No I/O, no panics on user input.

use super::{Actual, SharedSymbol, UnitInputs};
use dfort_ir::bit_rows::BitRows;
use dfort_ir::bitset::BitSet;
use dfort_ir::chunk_vec::ChunkVec;
use dfort_ir::{Idx, Program, SymbolId, UnitId};
use std::sync::Arc;

/// What the reached units share: COMMON blocks' members numbered and the
/// units that hold each, the units with module variables, and each host's
/// internal procedures that share its variables. Persistent maps: a copy
/// patched for the units an edit changed shares the rest.
#[derive(Clone, Debug, Default)]
pub(super) struct Sharing {
    /// COMMON members (block, position) by number, and their numbers (a
    /// member keeps its number while the sharing is patched).
    pub(super) commons: imbl::Vector<(String, u32)>,
    numbers: imbl::HashMap<(String, u32), usize>,
    /// Per COMMON member, the units with a symbol in it.
    common_units: imbl::Vector<imbl::OrdSet<UnitId>>,
    /// Per unit, the numbers of its symbols' COMMON members in the order
    /// of its shared symbols that are in one.
    unit_commons: imbl::OrdMap<UnitId, Arc<[usize]>>,
    /// The units with a module variable.
    module_units: imbl::OrdSet<UnitId>,
    /// Per host, the units sharing its variables.
    hosted: imbl::OrdMap<UnitId, imbl::OrdSet<UnitId>>,
}

impl Sharing {
    pub(super) fn of(inputs: &ChunkVec<UnitId, Option<Arc<UnitInputs>>>) -> Sharing {
        let mut s = Sharing::default();
        for (u, i) in inputs.iter_enumerated() {
            if let Some(i) = i {
                s.add(u, &i.shared);
            }
        }
        s
    }
    /// This sharing with unit `u`'s shared symbols `old` replaced by `new`.
    pub(super) fn replace(&mut self, u: UnitId, old: &[SharedSymbol], new: &[SharedSymbol]) {
        for k in self.unit_commons.remove(&u).iter().flat_map(|k| k.iter()) {
            if let Some(units) = self.common_units.get_mut(*k) {
                units.remove(&u);
            }
        }
        for x in old {
            if let Some((h, _)) = x.host {
                if let Some(units) = self.hosted.get_mut(&h) {
                    units.remove(&u);
                }
            }
        }
        self.module_units.remove(&u);
        self.add(u, new);
    }
    fn add(&mut self, u: UnitId, shared: &[SharedSymbol]) {
        let mut ids = Vec::new();
        for x in shared {
            if let Some(c) = &x.common {
                let k = match self.numbers.get(c) {
                    Some(k) => *k,
                    None => {
                        let k = self.commons.len();
                        self.commons.push_back(c.clone());
                        self.common_units.push_back(imbl::OrdSet::new());
                        self.numbers.insert(c.clone(), k);
                        k
                    }
                };
                ids.push(k);
                self.common_units[k].insert(u);
            }
            if let Some((h, _)) = x.host {
                self.hosted.entry(h).or_default().insert(u);
            }
        }
        if !ids.is_empty() {
            self.unit_commons.insert(u, ids.into());
        }
        if shared.iter().any(|x| x.module.is_some()) {
            self.module_units.insert(u);
        }
    }
    fn common_ids(&self, u: UnitId) -> &[usize] {
        self.unit_commons.get(&u).map_or(&[], |k| &k[..])
    }
}

/// The facts: per unit its variables with a derivative, per module its
/// variables with one, and the COMMON members with one (by number).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Facts {
    pub(super) with_d: BitRows,
    pub(super) modules: BitRows,
    pub(super) commons: Vec<bool>,
}

impl Facts {
    /// No facts, for `program`'s units and `sharing`'s COMMON members.
    pub(super) fn empty(program: &Program, sharing: &Sharing) -> Facts {
        let rows = BitRows::with_widths(program.units.iter().map(|u| u.symbols.len()));
        Facts {
            modules: rows.clone(),
            with_d: rows,
            commons: vec![false; sharing.commons.len()],
        }
    }
    /// No facts, laid out as these.
    pub(super) fn none_like(&self) -> Facts {
        Facts {
            with_d: self.with_d.zeroed(),
            modules: self.modules.zeroed(),
            commons: vec![false; self.commons.len()],
        }
    }
    /// These facts less `gone` (laid out alike), whose rows are `written`.
    pub(super) fn remove(&mut self, gone: &Facts, written: &Written) {
        for &u in &written.rows {
            self.with_d.remove_row_of(u.index(), &gone.with_d);
        }
        for &m in &written.modules {
            self.modules.remove_row_of(m.index(), &gone.modules);
        }
        for (with, gone) in self.commons.iter_mut().zip(&gone.commons) {
            *with &= !gone;
        }
    }
}

/// What a run of the rounds added to: the units whose rows gained a fact
/// and the modules whose variables did, each once, and the COMMON members
/// that gained one.
#[derive(Debug, Default)]
pub(super) struct Written {
    pub(super) rows: Vec<UnitId>,
    pub(super) modules: Vec<UnitId>,
    pub(super) commons: Vec<usize>,
    seen_rows: BitSet,
    seen_modules: BitSet,
}

impl Written {
    fn row(&mut self, u: UnitId) {
        if self.seen_rows.insert_id(u) {
            self.rows.push(u);
        }
    }
    fn module(&mut self, m: UnitId) {
        if self.seen_modules.insert_id(m) {
            self.modules.push(m);
        }
    }
}

/// The units to visit in the next round, what the rounds wrote, and the
/// facts they leave out.
struct Marks<'k> {
    marked: BitSet,
    list: Vec<UnitId>,
    written: Written,
    kept: Option<&'k dyn Fn(UnitId, SymbolId) -> bool>,
}

impl Marks<'_> {
    fn mark(&mut self, u: UnitId) {
        if self.marked.insert_id(u) {
            self.list.push(u);
        }
    }
}

/// Applies the rules of the units `first` and of those their variables
/// feed, and of the units each new fact feeds, until no rule adds a fact;
/// returns what it added to.
pub(super) fn run(
    program: &Program,
    inputs: &ChunkVec<UnitId, Option<Arc<UnitInputs>>>,
    sharing: &Sharing,
    facts: &mut Facts,
    first: impl IntoIterator<Item = UnitId>,
) -> Written {
    rounds(program, inputs, sharing, facts, first, None)
}

/// What facts `gone` derive under the rules `inputs`, added to `gone`,
/// except the variables `kept` names (facts that hold whatever else is
/// retracted: what derives from them is not retracted through them);
/// returns what it added to.
pub(super) fn retract(
    program: &Program,
    inputs: &ChunkVec<UnitId, Option<Arc<UnitInputs>>>,
    sharing: &Sharing,
    gone: &mut Facts,
    first: impl IntoIterator<Item = UnitId>,
    kept: &dyn Fn(UnitId, SymbolId) -> bool,
) -> Written {
    rounds(program, inputs, sharing, gone, first, Some(kept))
}

fn rounds(
    program: &Program,
    inputs: &ChunkVec<UnitId, Option<Arc<UnitInputs>>>,
    sharing: &Sharing,
    facts: &mut Facts,
    first: impl IntoIterator<Item = UnitId>,
    kept: Option<&dyn Fn(UnitId, SymbolId) -> bool>,
) -> Written {
    let mut next = Marks {
        marked: BitSet::default(),
        list: Vec::new(),
        written: Written::default(),
        kept,
    };
    for u in first {
        feed(program, sharing, u, &mut next);
    }
    while !next.list.is_empty() {
        let round = std::mem::take(&mut next.list);
        next.marked = BitSet::default();
        for u in round {
            if let Some(i) = inputs.get(u).and_then(|i| i.as_deref()) {
                visit(program, u, i, sharing, facts, &mut next);
            }
        }
    }
    next.written
}

/// The units holding a rule whose conclusion is COMMON member `c` or a
/// module variable (`None`).
pub(super) fn holders(sharing: &Sharing, c: Option<usize>) -> impl Iterator<Item = UnitId> + '_ {
    let units = match c {
        Some(c) => sharing.common_units.get(c),
        None => Some(&sharing.module_units),
    };
    units.into_iter().flatten().copied()
}

/// Marks the units whose rules a variable of unit `x` is a premise of:
/// `x`'s own, its callers' (their call sites bind it) and its internal
/// procedures' (they share its variables).
fn feed(program: &Program, sharing: &Sharing, x: UnitId, next: &mut Marks) {
    next.mark(x);
    let graph = &program.call_graph;
    for &s in graph.calls_to.get(x).into_iter().flatten() {
        next.mark(graph.sites[s].caller);
    }
    for &h in sharing.hosted.get(&x).into_iter().flatten() {
        next.mark(h);
    }
}

/// Applies the rules of unit `u`, marking the units a new fact feeds.
fn visit(
    program: &Program,
    u: UnitId,
    inputs: &UnitInputs,
    sharing: &Sharing,
    facts: &mut Facts,
    next: &mut Marks,
) {
    let insert = |facts: &mut Facts, (x, s): (UnitId, SymbolId), next: &mut Marks| {
        if next.kept.is_some_and(|kept| kept(x, s)) {
            return;
        }
        if facts.with_d.insert(x.index(), s.index()) {
            next.written.row(x);
            feed(program, sharing, x, next);
        }
    };
    let mut common_ids = sharing.common_ids(u).iter();
    for s in &inputs.shared {
        let common = s.common.as_ref().and_then(|_| common_ids.next()).copied();
        // Module variables and host variables of internal procedures
        // have one derivative shared by every unit, and so have COMMON
        // members, whose derivatives live in a COMMON block.
        if facts.with_d.contains(u.index(), s.symbol.index()) {
            if let Some((m, ms)) = s.module {
                if facts.modules.insert(m.index(), ms.index()) {
                    next.written.module(m);
                    sharing.module_units.iter().for_each(|&x| next.mark(x));
                }
            }
            if let Some(k) = s.host {
                insert(facts, k, next);
            }
            if let Some(c) = common {
                if !std::mem::replace(&mut facts.commons[c], true) {
                    next.written.commons.push(c);
                    sharing.common_units[c].iter().for_each(|&x| next.mark(x));
                }
            }
        } else if s.carries {
            let with = s
                .module
                .is_some_and(|(m, ms)| facts.modules.contains(m.index(), ms.index()))
                || s.host
                    .is_some_and(|(h, hs)| facts.with_d.contains(h.index(), hs.index()))
                || common.is_some_and(|c| facts.commons[c]);
            if with {
                insert(facts, (u, s.symbol), next);
            }
        }
    }
    // Call sites: actual and formal agree.
    for b in &inputs.bindings {
        let formal = (b.callee, b.slot);
        let has =
            |facts: &Facts, (x, s): (UnitId, SymbolId)| facts.with_d.contains(x.index(), s.index());
        match &b.actual {
            Actual::Variable(v) => {
                if has(facts, (u, *v)) {
                    insert(facts, formal, next);
                } else if has(facts, formal) {
                    insert(facts, (u, *v), next);
                }
            }
            // An active expression passed by value (or a function
            // reference's arguments, for its result).
            Actual::Value(reads) => {
                if b.carries && facts.with_d.intersects(u.index(), reads) {
                    insert(facts, formal, next);
                }
            }
        }
    }
    // May-alias classes: a derivative pointer follows its target, so
    // every member of a class has a derivative when one has.
    for class in &inputs.aliases {
        if class
            .iter()
            .any(|s| facts.with_d.contains(u.index(), s.index()))
        {
            for &s in class {
                insert(facts, (u, s), next);
            }
        }
    }
}
