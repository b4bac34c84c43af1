//! Typed index vectors: tables keyed by an id newtype ([`crate::UnitId`],
//! [`crate::StmtId`], [`crate::SymbolId`], [`crate::FileId`],
//! [`crate::cfg::NodeId`]) instead of a `Vec` indexed by `id.0 as usize`.
//!
//! Contract: an [`IdVec<I, T>`] holds the same elements in the same order
//! as the `Vec<T>` it wraps; element `k` is the one of the id `I::new(k)`.
//! Indexing with an id out of range panics as a `Vec` would; `get` returns
//! `None` instead. Only the [`Idx`] implementations convert between ids and
//! raw positions; everything else names the id.

use std::fmt;
use std::marker::PhantomData;
use std::ops::{Index, IndexMut};

/// An id that is the position of its element in a table.
pub trait Idx: Copy + Eq + Ord + std::hash::Hash + fmt::Debug + 'static {
    /// The id of position `index`.
    fn new(index: usize) -> Self;
    /// The position this id names.
    fn index(self) -> usize;
}

/// Implements [`Idx`] for newtypes over `u32` (`pub struct X(pub u32)`).
#[macro_export]
macro_rules! impl_idx {
    ($($ty:ident),* $(,)?) => {$(
        impl $crate::idx::Idx for $ty {
            #[inline]
            fn new(index: usize) -> Self {
                debug_assert!(index <= u32::MAX as usize, "id out of range");
                $ty(index as u32)
            }
            #[inline]
            fn index(self) -> usize {
                self.0 as usize
            }
        }
    )*};
}

/// Plain positions (a call site's number) are ids of themselves.
impl Idx for usize {
    #[inline]
    fn new(index: usize) -> Self {
        index
    }
    #[inline]
    fn index(self) -> usize {
        self
    }
}

/// A `Vec<T>` indexed by the id `I`.
pub struct IdVec<I, T> {
    raw: Vec<T>,
    _id: PhantomData<fn(&I)>,
}

impl<I: Idx, T> IdVec<I, T> {
    pub fn new() -> Self {
        IdVec::from_vec(Vec::new())
    }
    pub fn with_capacity(n: usize) -> Self {
        IdVec::from_vec(Vec::with_capacity(n))
    }
    /// The table whose element `k` is `raw[k]`.
    pub fn from_vec(raw: Vec<T>) -> Self {
        IdVec {
            raw,
            _id: PhantomData,
        }
    }
    /// `n` copies of `value` (as `vec![value; n]`).
    pub fn from_elem(value: T, n: usize) -> Self
    where
        T: Clone,
    {
        IdVec::from_vec(vec![value; n])
    }
    /// The element of every id below `n`, computed by `f`.
    pub fn from_fn(n: usize, f: impl FnMut(I) -> T) -> Self {
        (0..n).map(I::new).map(f).collect()
    }
    pub fn len(&self) -> usize {
        self.raw.len()
    }
    pub fn is_empty(&self) -> bool {
        self.raw.is_empty()
    }
    /// Appends `value` and returns its id.
    pub fn push(&mut self, value: T) -> I {
        let id = I::new(self.raw.len());
        self.raw.push(value);
        id
    }
    /// The id the next `push` returns.
    pub fn next_id(&self) -> I {
        I::new(self.raw.len())
    }
    pub fn get(&self, id: I) -> Option<&T> {
        self.raw.get(id.index())
    }
    pub fn get_mut(&mut self, id: I) -> Option<&mut T> {
        self.raw.get_mut(id.index())
    }
    pub fn iter(&self) -> std::slice::Iter<'_, T> {
        self.raw.iter()
    }
    pub fn iter_mut(&mut self) -> std::slice::IterMut<'_, T> {
        self.raw.iter_mut()
    }
    /// Each element with its id.
    pub fn iter_enumerated(
        &self,
    ) -> impl DoubleEndedIterator<Item = (I, &T)> + ExactSizeIterator + '_ {
        self.raw.iter().enumerate().map(|(k, t)| (I::new(k), t))
    }
    /// Each element, mutable, with its id.
    pub fn iter_enumerated_mut(
        &mut self,
    ) -> impl DoubleEndedIterator<Item = (I, &mut T)> + ExactSizeIterator + '_ {
        self.raw.iter_mut().enumerate().map(|(k, t)| (I::new(k), t))
    }
    /// The id of every element, in order.
    pub fn indices(&self) -> impl DoubleEndedIterator<Item = I> + ExactSizeIterator + 'static {
        (0..self.raw.len()).map(I::new)
    }
    /// The id of the first element `pred` accepts.
    pub fn position(&self, pred: impl FnMut(&T) -> bool) -> Option<I> {
        self.raw.iter().position(pred).map(I::new)
    }
    pub fn first(&self) -> Option<&T> {
        self.raw.first()
    }
    pub fn last(&self) -> Option<&T> {
        self.raw.last()
    }
    /// Grows (with `value`) or shrinks the table to `n` elements.
    pub fn resize(&mut self, n: usize, value: T)
    where
        T: Clone,
    {
        self.raw.resize(n, value);
    }
    /// A table with the same ids, each element mapped by `f`.
    pub fn map<U>(self, f: impl FnMut(T) -> U) -> IdVec<I, U> {
        IdVec::from_vec(self.raw.into_iter().map(f).collect())
    }
    /// A table with the same ids, each element (with its id) mapped by `f`.
    pub fn map_ref<U>(&self, mut f: impl FnMut(I, &T) -> U) -> IdVec<I, U> {
        self.iter_enumerated().map(|(i, t)| f(i, t)).collect()
    }
    /// The elements by position, for code that must see the raw storage
    /// (sorting, slicing, comparing with a plain slice).
    /// Room for exactly `n` more elements.
    pub fn reserve_exact(&mut self, n: usize) {
        self.raw.reserve_exact(n);
    }
    /// Gives back the spare capacity.
    pub fn shrink_to_fit(&mut self) {
        self.raw.shrink_to_fit();
    }
    pub fn as_slice(&self) -> &[T] {
        &self.raw
    }
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        &mut self.raw
    }
    pub fn into_vec(self) -> Vec<T> {
        self.raw
    }
}

impl<I: Idx, T> Index<I> for IdVec<I, T> {
    type Output = T;
    #[inline]
    fn index(&self, id: I) -> &T {
        &self.raw[id.index()]
    }
}

impl<I: Idx, T> IndexMut<I> for IdVec<I, T> {
    #[inline]
    fn index_mut(&mut self, id: I) -> &mut T {
        &mut self.raw[id.index()]
    }
}

impl<I: Idx, T> FromIterator<T> for IdVec<I, T> {
    fn from_iter<It: IntoIterator<Item = T>>(iter: It) -> Self {
        IdVec::from_vec(iter.into_iter().collect())
    }
}

impl<I: Idx, T> Extend<T> for IdVec<I, T> {
    fn extend<It: IntoIterator<Item = T>>(&mut self, iter: It) {
        self.raw.extend(iter);
    }
}

impl<I: Idx, T> IntoIterator for IdVec<I, T> {
    type Item = T;
    type IntoIter = std::vec::IntoIter<T>;
    fn into_iter(self) -> Self::IntoIter {
        self.raw.into_iter()
    }
}

impl<'a, I: Idx, T> IntoIterator for &'a IdVec<I, T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.raw.iter()
    }
}

impl<'a, I: Idx, T> IntoIterator for &'a mut IdVec<I, T> {
    type Item = &'a mut T;
    type IntoIter = std::slice::IterMut<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.raw.iter_mut()
    }
}

impl<I, T: Clone> Clone for IdVec<I, T> {
    fn clone(&self) -> Self {
        IdVec {
            raw: self.raw.clone(),
            _id: PhantomData,
        }
    }
}

/// Prints as the `Vec` would, so dumps do not change.
impl<I, T: fmt::Debug> fmt::Debug for IdVec<I, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.raw.fmt(f)
    }
}

impl<I, T> Default for IdVec<I, T> {
    fn default() -> Self {
        IdVec {
            raw: Vec::new(),
            _id: PhantomData,
        }
    }
}

impl<I, T: PartialEq> PartialEq for IdVec<I, T> {
    fn eq(&self, other: &Self) -> bool {
        self.raw == other.raw
    }
}

impl<I, T: Eq> Eq for IdVec<I, T> {}

impl<I, T: std::hash::Hash> std::hash::Hash for IdVec<I, T> {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.raw.hash(h);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
    struct Id(u32);
    impl_idx!(Id);

    #[test]
    fn indexed_by_id() {
        let mut v: IdVec<Id, &str> = IdVec::new();
        assert!(v.is_empty());
        assert_eq!(v.next_id(), Id(0));
        let a = v.push("a");
        let b = v.push("b");
        assert_eq!((a, b), (Id(0), Id(1)));
        assert_eq!(v[b], "b");
        v[a] = "A";
        assert_eq!(v.get(a), Some(&"A"));
        assert_eq!(v.get(Id(2)), None);
        *v.get_mut(b).expect("present") = "B";
        assert_eq!(v.len(), 2);
        assert_eq!(v.indices().collect::<Vec<_>>(), vec![Id(0), Id(1)]);
        assert_eq!(
            v.iter_enumerated().collect::<Vec<_>>(),
            vec![(Id(0), &"A"), (Id(1), &"B")]
        );
        assert_eq!(v.position(|s| *s == "B"), Some(Id(1)));
        assert_eq!(v.iter().copied().collect::<String>(), "AB");
        assert_eq!(format!("{v:?}"), r#"["A", "B"]"#);
    }

    #[test]
    fn built_and_mapped() {
        let v: IdVec<Id, u32> = IdVec::from_fn(3, |i: Id| i.0 * 10);
        assert_eq!(v.as_slice(), &[0, 10, 20]);
        assert_eq!(v.map_ref(|i, x| i.0 + x).as_slice(), &[0, 11, 22]);
        let w: IdVec<Id, u32> = [0, 10, 20].into_iter().collect();
        assert_eq!(v, w);
        assert_ne!(v, IdVec::from_elem(0, 3));
        let mut z = v.clone().map(|x| x + 1);
        for (i, x) in z.iter_enumerated_mut() {
            *x += i.0;
        }
        assert_eq!(z.into_vec(), vec![1, 12, 23]);
        let mut r = IdVec::<Id, u8>::default();
        r.resize(2, 7);
        r.extend([8]);
        assert_eq!(r.as_slice(), &[7, 7, 8]);
        assert_eq!(Id::new(5).index(), 5);
    }

    #[test]
    #[should_panic]
    fn out_of_range_panics_as_a_vec() {
        let v: IdVec<Id, u8> = IdVec::from_elem(0, 1);
        let _ = v[Id(1)];
    }
}
