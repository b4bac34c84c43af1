//! A fixed-size set of small integers (variable indices), the lattice
//! element of every dataflow analysis here.
//!
//! The elements are raw slots: a unit's symbols first (slot = the
//! [`SymbolId`](crate::SymbolId)'s index), then slots past them for
//! globals only callees see. The `*_id` methods take and give ids
//! ([`Idx`]) for the slots that are ids; the raw `usize` ones stay for the
//! others.

use crate::Idx;

#[derive(Clone, Debug, Default)]
pub struct BitSet {
    words: Vec<u64>,
}

impl BitSet {
    /// The words up to the last non-zero one: sets are equal when these are.
    fn significant(&self) -> &[u64] {
        let n = self
            .words
            .iter()
            .rposition(|w| *w != 0)
            .map_or(0, |i| i + 1);
        &self.words[..n]
    }
}

/// Equality of the sets, whatever room each has allocated.
impl PartialEq for BitSet {
    fn eq(&self, other: &BitSet) -> bool {
        self.significant() == other.significant()
    }
}

impl Eq for BitSet {}

impl std::hash::Hash for BitSet {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.significant().hash(h);
    }
}

impl BitSet {
    /// The set whose members are the bits of `words` (slot `64 k + b` is
    /// bit `b` of word `k`).
    pub fn from_words(words: Vec<u64>) -> BitSet {
        BitSet { words }
    }
    /// The words of the set, as [`BitSet::from_words`] takes them (any
    /// number of zero words at the end).
    pub fn words(&self) -> &[u64] {
        &self.words
    }
    pub fn new(size: usize) -> BitSet {
        BitSet {
            words: vec![0; size.div_ceil(64)],
        }
    }
    pub fn insert(&mut self, i: usize) -> bool {
        self.grow(i);
        let (w, b) = (i / 64, 1u64 << (i % 64));
        let new = self.words[w] & b == 0;
        self.words[w] |= b;
        new
    }
    pub fn remove(&mut self, i: usize) {
        if let Some(w) = self.words.get_mut(i / 64) {
            *w &= !(1u64 << (i % 64));
        }
    }
    pub fn contains(&self, i: usize) -> bool {
        self.words
            .get(i / 64)
            .is_some_and(|w| w & (1u64 << (i % 64)) != 0)
    }
    /// `insert` of the slot of `id`.
    pub fn insert_id<I: Idx>(&mut self, id: I) -> bool {
        self.insert(id.index())
    }
    /// `remove` of the slot of `id`.
    pub fn remove_id<I: Idx>(&mut self, id: I) {
        self.remove(id.index())
    }
    /// `contains` of the slot of `id`.
    pub fn contains_id<I: Idx>(&self, id: I) -> bool {
        self.contains(id.index())
    }
    /// The elements as ids, in increasing order (every slot, those past
    /// the ids of the table they key included: the caller's `get` tells).
    pub fn ids<I: Idx>(&self) -> impl Iterator<Item = I> + '_ {
        self.iter().map(I::new)
    }
    fn grow(&mut self, i: usize) {
        if i / 64 >= self.words.len() {
            self.words.resize(i / 64 + 1, 0);
        }
    }
    /// `self ∪= other`; true when `self` changed.
    pub fn union_with(&mut self, other: &BitSet) -> bool {
        if other.words.len() > self.words.len() {
            self.words.resize(other.words.len(), 0);
        }
        union_words(&mut self.words, &other.words)
    }
    /// `self ∖= other`.
    pub fn subtract(&mut self, other: &BitSet) {
        for (a, b) in self.words.iter_mut().zip(&other.words) {
            *a &= !b;
        }
    }
    /// `self ∩= other`.
    pub fn intersect_with(&mut self, other: &BitSet) {
        intersect_words(&mut self.words, &other.words)
    }
    /// Whether every member of `self` is in `other`.
    pub fn is_subset(&self, other: &BitSet) -> bool {
        self.words
            .iter()
            .enumerate()
            .all(|(i, w)| w & !other.words.get(i).copied().unwrap_or(0) == 0)
    }
    pub fn intersects(&self, other: &BitSet) -> bool {
        words_intersect(&self.words, &other.words)
    }
    pub fn is_empty(&self) -> bool {
        self.words.iter().all(|w| *w == 0)
    }
    pub fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        members(&self.words)
    }
}

// The word loops below serve both a `BitSet` and a row of a
// [`BitRows`](crate::bit_rows::BitRows): a set is its words.

/// `into ∪= from` over the words `into` has room for; true when one
/// changed.
pub(crate) fn union_words(into: &mut [u64], from: &[u64]) -> bool {
    let mut changed = false;
    for (a, b) in into.iter_mut().zip(from) {
        changed |= b & !*a != 0;
        *a |= b;
    }
    changed
}

/// `into ∪= from ∩ within`, over the words `into` has room for; true
/// when one changed.
pub(crate) fn union_words_within(into: &mut [u64], from: &[u64], within: &[u64]) -> bool {
    let mut changed = false;
    for ((a, b), c) in into.iter_mut().zip(from).zip(within) {
        let add = b & c & !*a;
        changed |= add != 0;
        *a |= add;
    }
    changed
}

/// `into ∩= with`; a word `with` lacks counts as empty.
pub(crate) fn intersect_words(into: &mut [u64], with: &[u64]) {
    for (i, a) in into.iter_mut().enumerate() {
        *a &= with.get(i).copied().unwrap_or(0);
    }
}

/// Whether the two sets of words have a member in common.
pub(crate) fn words_intersect(a: &[u64], b: &[u64]) -> bool {
    a.iter().zip(b).any(|(x, y)| x & y != 0)
}

/// The slots whose bits are set in `words`, in increasing order.
pub(crate) fn members(words: &[u64]) -> impl Iterator<Item = usize> + '_ {
    words.iter().enumerate().flat_map(|(wi, &w)| {
        // The lowest set bit, then clear it: only the members are visited.
        let mut rest = w;
        std::iter::from_fn(move || {
            (rest != 0).then(|| {
                let b = rest.trailing_zeros() as usize;
                rest &= rest - 1;
                wi * 64 + b
            })
        })
    })
}

/// The set of the slots of these ids.
pub fn of_ids<I: Idx>(ids: impl IntoIterator<Item = I>) -> BitSet {
    ids.into_iter().map(Idx::index).collect()
}

impl FromIterator<usize> for BitSet {
    fn from_iter<T: IntoIterator<Item = usize>>(iter: T) -> Self {
        let mut s = BitSet::default();
        for i in iter {
            s.insert(i);
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_operations() {
        let mut a: BitSet = [1, 64, 130].into_iter().collect();
        let b: BitSet = [2, 64].into_iter().collect();
        assert!(a.contains(130) && !a.contains(2));
        assert!(a.intersects(&b));
        assert!(a.union_with(&b));
        assert!(!a.union_with(&b));
        assert_eq!(a.iter().collect::<Vec<_>>(), vec![1, 2, 64, 130]);
        a.subtract(&b);
        assert_eq!(a.iter().collect::<Vec<_>>(), vec![1, 130]);
        a.remove(1);
        a.remove(9999);
        assert_eq!(a.iter().collect::<Vec<_>>(), vec![130]);
        assert!(BitSet::new(10).is_empty());
        // Every bit of a word, in order.
        let ends: BitSet = [0, 63, 64, 127, 128].into_iter().collect();
        assert_eq!(ends.iter().collect::<Vec<_>>(), vec![0, 63, 64, 127, 128]);
        // Equal sets are equal whatever their allocated size.
        assert_eq!(BitSet::new(500), BitSet::default());
        let mut c = BitSet::new(300);
        c.insert(130);
        assert_eq!(a, c);
        c.insert(299);
        assert_ne!(a, c);
        // Subsets, whatever room each has allocated.
        assert!(a.is_subset(&c) && !c.is_subset(&a));
        assert!(BitSet::new(500).is_subset(&BitSet::default()));
        assert!(!c.is_subset(&BitSet::new(256)));
    }

    #[test]
    fn typed_ids() {
        use crate::SymbolId;
        let mut s = of_ids([SymbolId(3), SymbolId(70)]);
        assert!(s.contains_id(SymbolId(3)) && s.contains(70));
        assert!(!s.contains_id(SymbolId(4)));
        assert!(s.insert_id(SymbolId(4)));
        assert!(!s.insert_id(SymbolId(4)));
        s.remove_id(SymbolId(3));
        let ids: Vec<SymbolId> = s.ids().collect();
        assert_eq!(ids, vec![SymbolId(4), SymbolId(70)]);
    }
}
