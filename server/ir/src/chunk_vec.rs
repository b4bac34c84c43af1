//! A table keyed by an id, stored in fixed-size chunks that copies of the
//! table share: cloning it copies one pointer per chunk, and writing an
//! element copies its chunk first only if another table still shares it.
//! The analyses keep their per-unit results in these, so that a rerun
//! after an edit starts from the previous run's tables and touches only
//! the chunks of the units it recomputes (cloning or dropping an
//! [`IdVec`] of shared results touches every unit's result).
//!
//! Contract: a [`ChunkVec<I, T>`] reads and writes like an
//! [`IdVec<I, T>`] (same order, same ids, same panics on an id out of
//! range); only what a clone, a write and a drop cost differs, and that
//! an element with interior mutability (a `OnceLock`) filled through one
//! copy is filled in the copies that share its chunk. Equality is the
//! elements' (chunks shared by both tables are equal without looking at
//! them).

use crate::idx::{IdVec, Idx};
use std::fmt;
use std::marker::PhantomData;
use std::ops::{Index, IndexMut};
use std::sync::Arc;

/// Elements per chunk.
const CHUNK: usize = 64;

pub struct ChunkVec<I, T> {
    chunks: Vec<Arc<[T]>>,
    len: usize,
    _id: PhantomData<fn(&I)>,
}

impl<I: Idx, T> ChunkVec<I, T> {
    /// `n` copies of `value` (each chunk its own, so that elements with
    /// interior mutability, such as `OnceLock`s, are distinct).
    pub fn from_elem(value: T, n: usize) -> Self
    where
        T: Clone,
    {
        (0..n).map(|_| value.clone()).collect()
    }
    /// `n` copies of `value` in one chunk every chunk shares (made at
    /// once, copied chunk by chunk as they are written; not for elements
    /// with interior mutability, which the chunks would share).
    pub fn repeated(value: T, n: usize) -> Self
    where
        T: Clone,
    {
        let chunk = |len: usize| -> Arc<[T]> { (0..len).map(|_| value.clone()).collect() };
        let whole = chunk(CHUNK);
        let mut chunks: Vec<Arc<[T]>> = (0..n / CHUNK).map(|_| whole.clone()).collect();
        if !n.is_multiple_of(CHUNK) {
            chunks.push(chunk(n % CHUNK));
        }
        ChunkVec {
            chunks,
            len: n,
            _id: PhantomData,
        }
    }
    /// The element of every id below `n`, computed by `f`.
    pub fn from_fn(n: usize, f: impl FnMut(I) -> T) -> Self {
        (0..n).map(I::new).map(f).collect()
    }
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    #[inline]
    pub fn get(&self, id: I) -> Option<&T> {
        let k = id.index();
        (k < self.len).then(|| &self.chunks[k / CHUNK][k % CHUNK])
    }
    /// The element to write, its chunk copied first if shared.
    #[inline]
    pub fn get_mut(&mut self, id: I) -> Option<&mut T>
    where
        T: Clone,
    {
        let k = id.index();
        if k >= self.len {
            return None;
        }
        Some(&mut make_mut(&mut self.chunks[k / CHUNK])[k % CHUNK])
    }
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &T> + '_ {
        self.chunks.iter().flat_map(|c| c.iter())
    }
    /// Each element with its id.
    pub fn iter_enumerated(&self) -> impl Iterator<Item = (I, &T)> + '_ {
        self.iter().enumerate().map(|(k, t)| (I::new(k), t))
    }
    /// The id of every element, in order.
    pub fn indices(&self) -> impl DoubleEndedIterator<Item = I> + ExactSizeIterator + 'static {
        (0..self.len).map(I::new)
    }
    /// A table with the same ids, each element (with its id) mapped by `f`.
    pub fn map_ref<U>(&self, mut f: impl FnMut(I, &T) -> U) -> IdVec<I, U> {
        self.iter_enumerated().map(|(i, t)| f(i, t)).collect()
    }
    /// Adds `value` at the end (the last chunk copied first if another
    /// table shares it).
    pub fn push(&mut self, value: T)
    where
        T: Clone,
    {
        match self.chunks.last_mut() {
            Some(last) if last.len() < CHUNK => {
                let mut grown: Vec<T> = last.iter().cloned().collect();
                grown.push(value);
                *last = grown.into();
            }
            _ => self.chunks.push(Arc::from(vec![value])),
        }
        self.len += 1;
    }
    /// Whether element `id` lies in a chunk `other` shares (then it is
    /// the same element in both).
    pub fn shares(&self, other: &Self, id: I) -> bool {
        let c = id.index() / CHUNK;
        matches!((self.chunks.get(c), other.chunks.get(c)), (Some(a), Some(b)) if Arc::ptr_eq(a, b))
    }
}

impl<I: Idx, T> ChunkVec<I, T> {
    /// The ids whose elements `same` finds unlike in two tables of one
    /// length, in order (the chunks both share not looked at); `None`
    /// when the lengths differ.
    pub fn ids_unlike(&self, other: &Self, mut same: impl FnMut(&T, &T) -> bool) -> Option<Vec<I>> {
        if self.len != other.len {
            return None;
        }
        let mut ids = Vec::new();
        for (c, (a, b)) in self.chunks.iter().zip(&other.chunks).enumerate() {
            if Arc::ptr_eq(a, b) {
                continue;
            }
            let unlike = (a.iter().zip(b.iter()).enumerate()).filter(|(_, (x, y))| !same(x, y));
            ids.extend(unlike.map(|(k, _)| I::new(c * CHUNK + k)));
        }
        Some(ids)
    }
}

impl<I, T> ChunkVec<I, T> {
    /// Whether both tables are as long and `same` holds of the two
    /// elements of each id, the chunks both share not looked at.
    pub fn same_by(&self, other: &Self, mut same: impl FnMut(&T, &T) -> bool) -> bool {
        self.len == other.len
            && (self.chunks.iter().zip(&other.chunks)).all(|(a, b)| {
                Arc::ptr_eq(a, b)
                    || (a.len() == b.len() && a.iter().zip(b.iter()).all(|(x, y)| same(x, y)))
            })
    }
}

/// The chunk to write: copied first if another table shares it.
fn make_mut<T: Clone>(chunk: &mut Arc<[T]>) -> &mut [T] {
    if Arc::get_mut(chunk).is_none() {
        *chunk = chunk.iter().cloned().collect();
    }
    Arc::get_mut(chunk).expect("a chunk no other table shares")
}

impl<I: Idx, T> Index<I> for ChunkVec<I, T> {
    type Output = T;
    #[inline]
    fn index(&self, id: I) -> &T {
        let k = id.index();
        assert!(k < self.len, "id {k} out of a table of {}", self.len);
        &self.chunks[k / CHUNK][k % CHUNK]
    }
}

impl<I: Idx, T: Clone> IndexMut<I> for ChunkVec<I, T> {
    #[inline]
    fn index_mut(&mut self, id: I) -> &mut T {
        let k = id.index();
        assert!(k < self.len, "id {k} out of a table of {}", self.len);
        &mut make_mut(&mut self.chunks[k / CHUNK])[k % CHUNK]
    }
}

impl<I: Idx, T> FromIterator<T> for ChunkVec<I, T> {
    fn from_iter<It: IntoIterator<Item = T>>(iter: It) -> Self {
        let mut chunks: Vec<Arc<[T]>> = Vec::new();
        let mut len = 0;
        let mut iter = iter.into_iter().peekable();
        while iter.peek().is_some() {
            let chunk: Vec<T> = iter.by_ref().take(CHUNK).collect();
            len += chunk.len();
            chunks.push(chunk.into());
        }
        ChunkVec {
            chunks,
            len,
            _id: PhantomData,
        }
    }
}

impl<'a, I: Idx, T> IntoIterator for &'a ChunkVec<I, T> {
    type Item = &'a T;
    type IntoIter =
        std::iter::FlatMap<std::slice::Iter<'a, Arc<[T]>>, &'a [T], fn(&'a Arc<[T]>) -> &'a [T]>;
    fn into_iter(self) -> Self::IntoIter {
        self.chunks.iter().flat_map(|c| &c[..])
    }
}

/// A copy shares every chunk.
impl<I, T> Clone for ChunkVec<I, T> {
    fn clone(&self) -> Self {
        ChunkVec {
            chunks: self.chunks.clone(),
            len: self.len,
            _id: PhantomData,
        }
    }
}

/// Prints as the `Vec<T>` would.
impl<I, T: fmt::Debug> fmt::Debug for ChunkVec<I, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.chunks.iter().flat_map(|c| c.iter()))
            .finish()
    }
}

impl<I, T> Default for ChunkVec<I, T> {
    fn default() -> Self {
        ChunkVec {
            chunks: Vec::new(),
            len: 0,
            _id: PhantomData,
        }
    }
}

impl<I, T: PartialEq> PartialEq for ChunkVec<I, T> {
    fn eq(&self, other: &Self) -> bool {
        self.same_by(other, T::eq)
    }
}

impl<I, T: Eq> Eq for ChunkVec<I, T> {}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
    struct Id(u32);
    crate::impl_idx!(Id);

    /// A table of one repeated value reads and writes as a `from_elem`
    /// one, and a write leaves the other chunks alone.
    #[test]
    fn a_repeated_value_reads_and_writes_as_from_elem() {
        for n in [0, 1, 63, 64, 65, 200] {
            let mut v: ChunkVec<Id, u32> = ChunkVec::repeated(7, n);
            let mut w: ChunkVec<Id, u32> = ChunkVec::from_elem(7, n);
            assert_eq!((v.len(), v.iter().count()), (n, n));
            assert_eq!(v, w);
            for k in (0..n as u32).step_by(5) {
                v[Id(k)] += k;
                w[Id(k)] += k;
                assert_eq!(v, w);
            }
            assert_eq!(
                v.iter().copied().collect::<Vec<_>>(),
                w.iter().copied().collect::<Vec<_>>()
            );
        }
    }

    #[test]
    fn pushed_values_follow_and_leave_copies_alone() {
        for n in [0, 1, 63, 64, 65, 127, 128] {
            let mut v: ChunkVec<Id, u32> = ChunkVec::from_fn(n, |i: Id| i.0);
            let copy = v.clone();
            v.push(1000);
            v.push(1001);
            assert_eq!(v.len(), n + 2);
            assert_eq!(copy.len(), n);
            let want: Vec<u32> = (0..n as u32).chain([1000, 1001]).collect();
            assert_eq!(v.iter().copied().collect::<Vec<_>>(), want);
            assert_eq!(copy.iter().copied().collect::<Vec<_>>(), want[..n]);
            assert_eq!(v[Id(n as u32 + 1)], 1001);
        }
    }
    #[test]
    fn reads_and_writes_as_an_idvec() {
        for n in [0, 1, 63, 64, 65, 200] {
            let mut v: ChunkVec<Id, u32> = ChunkVec::from_fn(n, |i: Id| i.0 * 2);
            let mut w: IdVec<Id, u32> = IdVec::from_fn(n, |i: Id| i.0 * 2);
            assert_eq!(v.len(), n);
            assert_eq!(v.is_empty(), n == 0);
            for k in (0..n as u32).step_by(7) {
                v[Id(k)] += 1;
                w[Id(k)] += 1;
            }
            if let Some(x) = v.get_mut(Id(n as u32 / 2)) {
                *x = 99;
                w[Id(n as u32 / 2)] = 99;
            }
            assert_eq!(v.iter().copied().collect::<Vec<_>>(), w.as_slice());
            assert_eq!(v.get(Id(n as u32)), None);
            assert_eq!(
                v.iter_enumerated()
                    .map(|(i, x)| (i, *x))
                    .collect::<Vec<_>>(),
                w.iter_enumerated()
                    .map(|(i, x)| (i, *x))
                    .collect::<Vec<_>>()
            );
            assert_eq!(
                v.indices().collect::<Vec<_>>(),
                w.indices().collect::<Vec<_>>()
            );
            assert_eq!(v.map_ref(|i, x| i.0 + x), w.map_ref(|i, x| i.0 + x));
            assert_eq!(format!("{v:?}"), format!("{w:?}"));
        }
    }

    #[test]
    fn a_copy_shares_until_written() {
        let mut a: ChunkVec<Id, String> = ChunkVec::from_elem(String::from("x"), 130);
        let b = a.clone();
        assert!(a.shares(&b, Id(0)) && a.shares(&b, Id(129)));
        a[Id(70)] = "y".into();
        assert!(!a.shares(&b, Id(70)), "the written chunk is copied");
        assert!(a.shares(&b, Id(0)) && a.shares(&b, Id(129)));
        assert_eq!(b[Id(70)], "x", "the copy keeps its element");
        assert_ne!(a, b);
        a[Id(70)] = "x".into();
        assert_eq!(a, b, "equal elements in unshared chunks");
        let c: ChunkVec<Id, String> = ChunkVec::from_elem(String::from("x"), 129);
        assert_ne!(a, c);
    }

    /// The ids unlike between a table and its written copy are the
    /// written ones whose values differ, wherever they fall.
    #[test]
    fn ids_unlike_are_the_differing_writes() {
        let a: ChunkVec<Id, u32> = ChunkVec::from_fn(200, |i: Id| i.0);
        let mut b = a.clone();
        assert_eq!(a.ids_unlike(&b, |x, y| x == y), Some(vec![]));
        for k in [3, 64, 65, 199] {
            b[Id(k)] += 1;
        }
        b[Id(100)] = 100;
        assert_eq!(
            a.ids_unlike(&b, |x, y| x == y),
            Some(vec![Id(3), Id(64), Id(65), Id(199)])
        );
        let fresh: ChunkVec<Id, u32> = ChunkVec::from_fn(200, |i: Id| i.0);
        assert_eq!(a.ids_unlike(&fresh, |x, y| x == y), Some(vec![]));
        let shorter: ChunkVec<Id, u32> = ChunkVec::from_fn(199, |i: Id| i.0);
        assert_eq!(a.ids_unlike(&shorter, |x, y| x == y), None);
    }

    #[test]
    #[should_panic]
    fn out_of_range_panics_as_an_idvec() {
        let v: ChunkVec<Id, u8> = ChunkVec::from_elem(0, 64);
        let _ = v[Id(64)];
    }
}
