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

use super::{Actual, UnitInputs};
use dfort_ir::bit_rows::BitRows;
use dfort_ir::bitset::BitSet;
use dfort_ir::{IdVec, Idx, Program, SymbolId, UnitId};
use std::collections::HashMap;
use std::sync::Arc;

/// What the reached units share: COMMON blocks' members numbered and the
/// units that hold each, the units with module variables, and each host's
/// internal procedures that share its variables.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Sharing {
    /// COMMON members (block, position), by number.
    pub(super) commons: Vec<(String, u32)>,
    /// Per COMMON member, the units with a symbol in it.
    common_units: Vec<Vec<UnitId>>,
    /// Per unit, the numbers of its symbols' COMMON members in the order
    /// of its shared symbols that are in one: `common_ids[starts[u]..starts[u + 1]]`.
    starts: Vec<usize>,
    common_ids: Vec<usize>,
    /// The units with a module variable.
    module_units: Vec<UnitId>,
    /// Per host, the units sharing its variables.
    hosted: HashMap<UnitId, Vec<UnitId>>,
}

impl Sharing {
    pub(super) fn of(inputs: &IdVec<UnitId, Option<Arc<UnitInputs>>>) -> Sharing {
        let mut s = Sharing {
            starts: vec![0],
            ..Sharing::default()
        };
        let mut numbers: HashMap<&(String, u32), usize> = HashMap::new();
        for (u, i) in inputs.iter_enumerated() {
            let shared = i.as_deref().map_or(&[][..], |i| &i.shared);
            for x in shared {
                if let Some(c) = &x.common {
                    let k = *numbers.entry(c).or_insert_with(|| {
                        s.commons.push(c.clone());
                        s.common_units.push(Vec::new());
                        s.commons.len() - 1
                    });
                    s.common_ids.push(k);
                    if s.common_units[k].last() != Some(&u) {
                        s.common_units[k].push(u);
                    }
                }
                if let Some((h, _)) = x.host {
                    let units = s.hosted.entry(h).or_default();
                    if units.last() != Some(&u) {
                        units.push(u);
                    }
                }
            }
            if shared.iter().any(|x| x.module.is_some()) {
                s.module_units.push(u);
            }
            s.starts.push(s.common_ids.len());
        }
        s
    }
    fn common_ids(&self, u: UnitId) -> &[usize] {
        match (self.starts.get(u.index()), self.starts.get(u.index() + 1)) {
            (Some(&a), Some(&b)) => &self.common_ids[a..b],
            _ => &[],
        }
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
}

/// The units to visit in the next round.
struct Marks {
    marked: BitSet,
    list: Vec<UnitId>,
}

impl Marks {
    fn mark(&mut self, u: UnitId) {
        if self.marked.insert_id(u) {
            self.list.push(u);
        }
    }
}

/// Applies the rules of the units `first` and of those their variables
/// feed, and of the units each new fact feeds, until no rule adds a fact.
pub(super) fn run(
    program: &Program,
    inputs: &IdVec<UnitId, Option<Arc<UnitInputs>>>,
    sharing: &Sharing,
    facts: &mut Facts,
    first: impl IntoIterator<Item = UnitId>,
) {
    let mut next = Marks {
        marked: BitSet::default(),
        list: Vec::new(),
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
        if facts.with_d.insert(x.index(), s.index()) {
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
                    sharing.module_units.iter().for_each(|&x| next.mark(x));
                }
            }
            if let Some(k) = s.host {
                insert(facts, k, next);
            }
            if let Some(c) = common {
                if !std::mem::replace(&mut facts.commons[c], true) {
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
