//! The regions found so far in one run of the analyses. A model asks for
//! the same ones from many places: every call of `TIMESTEP` inside
//! `DYNAMICS`' level loop asks what `ADAMS_BASHFORTH2` touches of `gU`, and
//! each answer is itself a walk of the callee's statements and of its own
//! callees. Each answer is computed once per question (the procedure, the
//! formal or global, the values the call site knows).
//!
//! Contract: a remembered answer is the one a fresh computation would
//! give. Regions are followed at most [`MAX_DEPTH`] calls down, so an
//! answer can depend on how deep its question was asked; each is kept
//! with the number of calls below it that it followed, and is reused only
//! where asking afresh would have reached no deeper than the limit. The
//! answers do not then depend on the order in which questions come (the
//! editor, which recomputes some procedures, and the command line, which
//! computes them all, agree).

use super::*;
use crate::dep::GlobalKey;
use std::sync::Mutex;

/// A question about a global: the procedure, the global, the shape its
/// caller declares, the values the call site knows.
pub(super) type GlobalQuery = (UnitId, GlobalKey, GlobalShape, KnownArgs);

/// A question about an array formal: the procedure, the formal's
/// position, the values the call site knows.
pub(super) type FormalQuery = (UnitId, u32, KnownArgs);

/// An answer, with how many calls below its question it followed
/// (`MAX_DEPTH + 1` and more: it met the limit).
type Answer = (Result<FormalRegion, Why>, u32);

/// The regions found so far by one run of the analyses.
#[derive(Default)]
pub struct RegionMemo {
    globals: Mutex<BTreeMap<GlobalQuery, Answer>>,
    formals: Mutex<BTreeMap<FormalQuery, Answer>>,
}

/// Whether an answer that followed `below` calls holds for a question
/// asked `depth` calls down.
fn holds(below: u32, depth: u32) -> bool {
    depth + below <= MAX_DEPTH
}

fn recall<Q: Ord>(map: &Mutex<BTreeMap<Q, Answer>>, query: &Q, depth: u32) -> Option<Answer> {
    let found = map.lock().ok()?.get(query).cloned()?;
    holds(found.1, depth).then_some(found)
}

fn keep<Q: Ord>(map: &Mutex<BTreeMap<Q, Answer>>, query: Q, answer: &Answer, depth: u32) {
    if holds(answer.1, depth) {
        if let Ok(mut m) = map.lock() {
            m.insert(query, answer.clone());
        }
    }
}

fn kept_of<Q: Ord + Clone>(
    map: &Mutex<BTreeMap<Q, Answer>>,
    unit: impl Fn(&Q) -> UnitId,
    keep: &impl Fn(UnitId) -> bool,
) -> Mutex<BTreeMap<Q, Answer>> {
    let m = map.lock().map(|m| {
        m.iter()
            .filter(|(q, _)| keep(unit(q)))
            .map(|(q, a)| (q.clone(), a.clone()))
            .collect()
    });
    Mutex::new(m.unwrap_or_default())
}

impl RegionMemo {
    /// The answers about the units `keep` accepts: for the next analysis
    /// of an edited program, those whose unit and callees did not change
    /// (a region reads nothing else).
    pub fn kept(&self, keep: impl Fn(UnitId) -> bool) -> RegionMemo {
        RegionMemo {
            globals: kept_of(&self.globals, |q| q.0, &keep),
            formals: kept_of(&self.formals, |q| q.0, &keep),
        }
    }

    pub(super) fn global(&self, query: &GlobalQuery, depth: u32) -> Option<Answer> {
        recall(&self.globals, query, depth)
    }
    pub(super) fn keep_global(&self, query: GlobalQuery, answer: &Answer, depth: u32) {
        keep(&self.globals, query, answer, depth)
    }
    pub(super) fn formal(&self, query: &FormalQuery, depth: u32) -> Option<Answer> {
        recall(&self.formals, query, depth)
    }
    pub(super) fn keep_formal(&self, query: FormalQuery, answer: &Answer, depth: u32) {
        keep(&self.formals, query, answer, depth)
    }
}
