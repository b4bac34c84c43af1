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

/// A question about a global: the procedure, then the global, the shape
/// its caller declares, the values the call site knows.
pub(super) type GlobalQuery = (UnitId, (GlobalKey, GlobalShape, KnownArgs));

/// A question about an array formal: the procedure, then the formal's
/// position, the values the call site knows.
pub(super) type FormalQuery = (UnitId, (u32, KnownArgs));

/// An answer, with how many calls below its question it followed
/// (`MAX_DEPTH + 1` and more: it met the limit).
type Answer = (Result<FormalRegion, Why>, u32);

/// Per procedure, the answers about it: persistent maps, so that the
/// next analysis of an edited program starts from a copy that shares
/// them and drops only the changed procedures' (copying every answer of a
/// large workspace took 3% of an edit).
type Table<R> = Mutex<imbl::OrdMap<UnitId, imbl::OrdMap<R, Answer>>>;

/// The regions found so far by one run of the analyses.
#[derive(Default)]
pub struct RegionMemo {
    globals: Table<(GlobalKey, GlobalShape, KnownArgs)>,
    formals: Table<(u32, KnownArgs)>,
}

/// Whether an answer that followed `below` calls holds for a question
/// asked `depth` calls down.
fn holds(below: u32, depth: u32) -> bool {
    depth + below <= MAX_DEPTH
}

fn recall<R: Ord + Clone>(map: &Table<R>, (u, rest): &(UnitId, R), depth: u32) -> Option<Answer> {
    let found = map.lock().ok()?.get(u)?.get(rest).cloned()?;
    holds(found.1, depth).then_some(found)
}

fn keep<R: Ord + Clone>(map: &Table<R>, (u, rest): (UnitId, R), answer: &Answer, depth: u32) {
    if holds(answer.1, depth) {
        if let Ok(mut m) = map.lock() {
            match m.get_mut(&u) {
                Some(answers) => {
                    answers.insert(rest, answer.clone());
                }
                None => {
                    m.insert(u, imbl::OrdMap::unit(rest, answer.clone()));
                }
            }
        }
    }
}

/// `map` without the answers about the units of `stale`.
fn kept_of<R: Ord + Clone>(map: &Table<R>, stale: &[UnitId]) -> Table<R> {
    let mut m = map.lock().map(|m| m.clone()).unwrap_or_default();
    for u in stale {
        m.remove(u);
    }
    Mutex::new(m)
}

impl RegionMemo {
    /// The answers about the units not in `stale`: for the next analysis
    /// of an edited program, those whose unit and callees did not change
    /// (a region reads nothing else).
    pub fn kept(&self, stale: &[UnitId]) -> RegionMemo {
        RegionMemo {
            globals: kept_of(&self.globals, stale),
            formals: kept_of(&self.formals, stale),
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
