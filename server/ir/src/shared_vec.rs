//! A table keyed by an id whose elements are shared between the copies
//! of the table: cloning it copies pointers, and writing to an element
//! copies that element only if another table still shares it.
//!
//! Contract: a [`SharedVec<I, T>`] reads and writes like an
//! [`IdVec<I, T>`] (same order, same ids, same panics); only what a clone
//! costs differs. A unit's statement arena is one: linking a chunk's
//! lowering rewrites the statements that name procedures or arrays from
//! elsewhere, and every other statement stays shared between the chunk's
//! lowering and the linked program.

use crate::idx::{IdVec, Idx};
use std::fmt;
use std::ops::{Index, IndexMut};
use std::sync::Arc;

pub struct SharedVec<I, T> {
    items: IdVec<I, Arc<T>>,
}

impl<I: Idx, T: Clone> SharedVec<I, T> {
    pub fn new() -> Self {
        SharedVec {
            items: IdVec::new(),
        }
    }
    pub fn len(&self) -> usize {
        self.items.len()
    }
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
    pub fn push(&mut self, value: T) -> I {
        self.items.push(Arc::new(value))
    }
    pub fn next_id(&self) -> I {
        self.items.next_id()
    }
    pub fn get(&self, id: I) -> Option<&T> {
        self.items.get(id).map(|t| &**t)
    }
    /// The element to write, copied first if another table shares it.
    pub fn get_mut(&mut self, id: I) -> Option<&mut T> {
        self.items.get_mut(id).map(Arc::make_mut)
    }
    pub fn iter(&self) -> Iter<'_, T> {
        self.items.as_slice().iter().map(|t| &**t)
    }
    pub fn position(&self, mut pred: impl FnMut(&T) -> bool) -> Option<I> {
        self.items.position(|t| pred(t))
    }
    /// Replaces element `id` (without copying the old one first).
    pub fn set(&mut self, id: I, value: T) {
        self.items[id] = Arc::new(value);
    }
    /// Room for exactly `n` more elements.
    pub fn reserve_exact(&mut self, n: usize) {
        self.items.reserve_exact(n);
    }
    /// Every element to write: each shared one is copied first. Look with
    /// [`SharedVec::iter`] first when only some will change.
    pub fn iter_mut(&mut self) -> impl DoubleEndedIterator<Item = &mut T> + ExactSizeIterator {
        self.items.iter_mut().map(Arc::make_mut)
    }
    pub fn iter_enumerated(&self) -> impl DoubleEndedIterator<Item = (I, &T)> + ExactSizeIterator {
        self.items.iter_enumerated().map(|(i, t)| (i, &**t))
    }
    pub fn indices(&self) -> impl DoubleEndedIterator<Item = I> + ExactSizeIterator + 'static {
        self.items.indices()
    }
    pub fn first(&self) -> Option<&T> {
        self.items.first().map(|t| &**t)
    }
    pub fn last(&self) -> Option<&T> {
        self.items.last().map(|t| &**t)
    }
    /// Whether element `id` is the very same (not a copy) in `other`.
    pub fn shares(&self, other: &Self, id: I) -> bool {
        matches!((self.items.get(id), other.items.get(id)), (Some(a), Some(b)) if Arc::ptr_eq(a, b))
    }
    /// Gives back the table's spare capacity.
    pub fn shrink_to_fit(&mut self) {
        self.items.shrink_to_fit();
    }
}

impl<I: Idx, T> Index<I> for SharedVec<I, T> {
    type Output = T;
    #[inline]
    fn index(&self, id: I) -> &T {
        &self.items[id]
    }
}

impl<I: Idx, T: Clone> IndexMut<I> for SharedVec<I, T> {
    #[inline]
    fn index_mut(&mut self, id: I) -> &mut T {
        Arc::make_mut(&mut self.items[id])
    }
}

impl<I: Idx, T> FromIterator<T> for SharedVec<I, T> {
    fn from_iter<It: IntoIterator<Item = T>>(iter: It) -> Self {
        SharedVec {
            items: iter.into_iter().map(Arc::new).collect(),
        }
    }
}

/// The elements of a [`SharedVec`], in order.
pub type Iter<'a, T> = std::iter::Map<std::slice::Iter<'a, Arc<T>>, fn(&'a Arc<T>) -> &'a T>;

impl<'a, I: Idx, T: Clone> IntoIterator for &'a SharedVec<I, T> {
    type Item = &'a T;
    type IntoIter = Iter<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl<'a, I: Idx, T: Clone> IntoIterator for &'a mut SharedVec<I, T> {
    type Item = &'a mut T;
    type IntoIter =
        std::iter::Map<std::slice::IterMut<'a, Arc<T>>, fn(&'a mut Arc<T>) -> &'a mut T>;
    fn into_iter(self) -> Self::IntoIter {
        self.items.as_mut_slice().iter_mut().map(Arc::make_mut)
    }
}

/// A copy shares every element.
impl<I, T> Clone for SharedVec<I, T> {
    fn clone(&self) -> Self {
        SharedVec {
            items: self.items.clone(),
        }
    }
}

/// Prints as the `Vec<T>` would, so dumps do not change.
impl<I, T: fmt::Debug> fmt::Debug for SharedVec<I, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.items.fmt(f)
    }
}

impl<I, T> Default for SharedVec<I, T> {
    fn default() -> Self {
        SharedVec {
            items: IdVec::default(),
        }
    }
}

impl<I, T: PartialEq> PartialEq for SharedVec<I, T> {
    fn eq(&self, other: &Self) -> bool {
        self.items == other.items
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::StmtId;

    #[test]
    fn a_copy_shares_until_one_side_writes_and_then_only_that_element_is_copied() {
        let mut a: SharedVec<StmtId, String> = ["x", "y"].iter().map(|s| s.to_string()).collect();
        let mut b = a.clone();
        assert!(a.shares(&b, StmtId(0)) && a.shares(&b, StmtId(1)));
        b[StmtId(1)].push('!');
        assert_eq!(a[StmtId(1)], "y");
        assert_eq!(b[StmtId(1)], "y!");
        assert!(a.shares(&b, StmtId(0)) && !a.shares(&b, StmtId(1)));
        let id = a.push("z".into());
        assert_eq!((id, a.len(), b.len()), (StmtId(2), 3, 2));
        assert_eq!(
            a.iter().map(String::as_str).collect::<Vec<_>>(),
            ["x", "y", "z"]
        );
        for s in &mut a {
            s.make_ascii_uppercase();
        }
        assert_eq!(b[StmtId(0)], "x");
        b.set(StmtId(0), "w".into());
        assert_eq!((a[StmtId(0)].as_str(), b[StmtId(0)].as_str()), ("X", "w"));
        assert_eq!(format!("{a:?}"), r#"["X", "Y", "Z"]"#);
    }
}
