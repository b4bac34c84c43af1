//! Many small bit sets in one allocation: row `r` holds the slots
//! `0..width(r)`, its words laid out right after row `r - 1`'s.
//!
//! For fixed-point loops that test and set members of thousands of rows
//! (one per unit) in random order: a lookup indexes one vector instead of
//! following a pointer to each row's own words, so the rows of a whole
//! program stay in cache together.

use crate::bitset::{self, BitSet};
use std::ops::Range;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BitRows {
    /// Per row, its first word; one more entry closes the last row.
    starts: std::sync::Arc<[usize]>,
    words: Vec<u64>,
}

impl BitRows {
    /// Empty rows wide enough for `widths[r]` slots each.
    pub fn with_widths(widths: impl IntoIterator<Item = usize>) -> BitRows {
        let mut starts = vec![0];
        let mut end = 0;
        for w in widths {
            end += w.div_ceil(64);
            starts.push(end);
        }
        BitRows {
            starts: starts.into(),
            words: vec![0; end],
        }
    }
    /// The same rows laid out for `widths` (as many rows as there are
    /// widths); `None` when a row loses a member it cannot hold any more.
    pub fn relaid(&self, widths: impl IntoIterator<Item = usize>) -> Option<BitRows> {
        let mut out = BitRows::with_widths(widths);
        for r in 0..out.len().max(self.len()) {
            let (from, to) = (self.row(r), out.range(r).unwrap_or(0..0));
            let kept = from.len().min(to.len());
            if from[kept..].iter().any(|w| *w != 0) {
                return None;
            }
            out.words[to.start..to.start + kept].copy_from_slice(&from[..kept]);
        }
        Some(out)
    }
    /// The number of rows.
    /// The same rows, with no members.
    pub fn zeroed(&self) -> BitRows {
        BitRows {
            starts: self.starts.clone(),
            words: vec![0; self.words.len()],
        }
    }
    /// Row `r` ∪= `other`'s row `r`; true when it changed.
    pub fn union_row_of(&mut self, r: usize, other: &BitRows) -> bool {
        bitset::union_words(self.row_mut(r), other.row(r))
    }
    /// Row `r` less the members of `other`'s row `r`.
    pub fn remove_row_of(&mut self, r: usize, other: &BitRows) {
        for (a, b) in self.row_mut(r).iter_mut().zip(other.row(r)) {
            *a &= !b;
        }
    }
    /// Whether row `r` has no member.
    pub fn row_is_empty(&self, r: usize) -> bool {
        self.row(r).iter().all(|w| *w == 0)
    }
    pub fn len(&self) -> usize {
        self.starts.len() - 1
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Where row `r`'s words lie in `words` (`None` past the last row).
    fn range(&self, r: usize) -> Option<Range<usize>> {
        Some(*self.starts.get(r)?..*self.starts.get(r + 1)?)
    }
    /// The words of row `r` (no words for a row past the last).
    pub fn row(&self, r: usize) -> &[u64] {
        self.range(r).map_or(&[], |at| &self.words[at])
    }
    fn row_mut(&mut self, r: usize) -> &mut [u64] {
        match self.range(r) {
            Some(at) => &mut self.words[at],
            None => &mut [],
        }
    }
    fn word(&self, r: usize, i: usize) -> Option<usize> {
        let at = self.range(r)?;
        let w = at.start + i / 64;
        (w < at.end).then_some(w)
    }
    pub fn contains(&self, r: usize, i: usize) -> bool {
        self.word(r, i)
            .is_some_and(|w| self.words[w] & (1u64 << (i % 64)) != 0)
    }
    /// Adds slot `i` to row `r`; true when it was not there. A slot past
    /// the row's width is a caller's error: it is not stored.
    pub fn insert(&mut self, r: usize, i: usize) -> bool {
        let Some(w) = self.word(r, i) else {
            debug_assert!(false, "slot {i} past the width of row {r}");
            return false;
        };
        let b = 1u64 << (i % 64);
        let new = self.words[w] & b == 0;
        self.words[w] |= b;
        new
    }
    /// Adds the members of `set` that fit row `r`; true when one was new.
    pub fn union_row(&mut self, r: usize, set: &BitSet) -> bool {
        bitset::union_words(self.row_mut(r), set.words())
    }
    /// Adds the members of `set` that are also in `within`; true when
    /// one was new.
    pub fn union_row_within(&mut self, r: usize, set: &BitSet, within: &BitSet) -> bool {
        bitset::union_words_within(self.row_mut(r), set.words(), within.words())
    }
    /// Whether row `r` and `set` have a member in common.
    pub fn intersects(&self, r: usize, set: &BitSet) -> bool {
        bitset::words_intersect(self.row(r), set.words())
    }
    /// The members of row `r`, in increasing order.
    pub fn members(&self, r: usize) -> impl Iterator<Item = usize> + '_ {
        bitset::members(self.row(r))
    }
    /// Row `r` as a set of its own.
    pub fn to_set(&self, r: usize) -> BitSet {
        match self.row_is_empty(r) {
            true => BitSet::default(),
            false => BitSet::from_words(self.row(r).to_vec()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_separate_sets() {
        let mut rows = BitRows::with_widths([3, 0, 130, 64]);
        assert_eq!(rows.len(), 4);
        assert!(rows.insert(0, 2) && !rows.insert(0, 2));
        assert!(rows.insert(2, 129) && rows.insert(2, 0) && rows.insert(3, 63));
        assert!(rows.contains(0, 2) && !rows.contains(2, 2) && rows.contains(2, 129));
        assert!(!rows.contains(1, 0) && !rows.contains(7, 0) && !rows.contains(3, 64));
        let set: BitSet = [0, 5, 129].into_iter().collect();
        assert!(rows.intersects(2, &set) && !rows.intersects(3, &set));
        let within: BitSet = [5, 63].into_iter().collect();
        assert!(!rows.union_row_within(1, &set, &within));
        assert!(
            rows.union_row_within(3, &set, &within) && !rows.union_row_within(3, &set, &within)
        );
        assert_eq!(rows.to_set(3).iter().collect::<Vec<_>>(), vec![5, 63]);
        assert!(rows.union_row(3, &set) && !rows.union_row(3, &set));
        assert_eq!(rows.to_set(3).iter().collect::<Vec<_>>(), vec![0, 5, 63]);
        assert_eq!(rows.members(2).collect::<Vec<_>>(), vec![0, 129]);
        assert_eq!(rows.members(1).count(), 0);
        assert_eq!(rows.to_set(1), BitSet::default());
        assert_eq!(rows.to_set(0), [2].into_iter().collect());
        // Laid out again: members kept where the new widths hold them.
        let wider = rows.relaid([200, 64, 130, 64]).expect("every member fits");
        assert_eq!(wider.row(0).len(), 4);
        for r in 0..4 {
            assert_eq!(wider.to_set(r), rows.to_set(r));
        }
        assert!(rows.relaid([3, 0, 64, 64]).is_none());
        assert!(rows.relaid([3, 0, 130]).is_none());
        assert!(BitRows::with_widths([5, 5]).relaid([5]).is_some());
        let mut less = rows.clone();
        let mut taken = rows.zeroed();
        assert!(taken.row_is_empty(3) && !rows.row_is_empty(3));
        taken.insert(3, 5);
        assert!(!less.union_row_of(0, &taken));
        less.remove_row_of(3, &taken);
        assert_eq!(less.to_set(3).iter().collect::<Vec<_>>(), vec![0, 63]);
        assert_eq!(less.to_set(2), rows.to_set(2));
        assert!(taken.union_row_of(2, &rows) && taken.to_set(2) == rows.to_set(2));
    }
}
