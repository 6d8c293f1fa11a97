//! Range iteration in both directions.
//!
//! An iterator holds no latch between calls. Each refill descends from the root to the leaf
//! that holds the next key, copies the leaf's qualifying records (values materialised, overflow
//! chains followed) and releases it. When a leaf holds nothing past the cursor, the descent's
//! fence — the separator that bounds the leaf's subtree — says where the next leaf starts. This
//! costs one descent per leaf, keeps iterators deadlock-free against writers (they take latches
//! left to right), and lets the caller write to the tree while iterating: such writes are seen
//! or not depending on where the cursor is, never out of order and never twice.

use std::collections::VecDeque;
use std::ops::{Bound, RangeBounds};

use crate::error::Result;
use crate::node::Node;
use crate::tree::{BTree, Target};

/// An iterator over `(key, value)` pairs of a key range, ascending from the front and
/// descending from the back ([`DoubleEndedIterator`]). Items are `Result`s: an I/O error or a
/// corrupt page is yielded once and ends the iteration.
pub struct RangeIter {
    tree: BTree,
    /// Lower bound of what the front has not yielded yet.
    front: Bound<Vec<u8>>,
    /// Upper bound of what the back has not yielded yet.
    back: Bound<Vec<u8>>,
    front_buf: VecDeque<(Vec<u8>, Vec<u8>)>,
    back_buf: VecDeque<(Vec<u8>, Vec<u8>)>,
    done: bool,
}

impl std::fmt::Debug for RangeIter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RangeIter")
            .field("front", &self.front)
            .field("back", &self.back)
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}

fn owned(bound: Bound<&[u8]>) -> Bound<Vec<u8>> {
    match bound {
        Bound::Included(k) => Bound::Included(k.to_vec()),
        Bound::Excluded(k) => Bound::Excluded(k.to_vec()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

fn above(key: &[u8], lower: &Bound<Vec<u8>>) -> bool {
    match lower {
        Bound::Included(k) => key >= k.as_slice(),
        Bound::Excluded(k) => key > k.as_slice(),
        Bound::Unbounded => true,
    }
}

fn below(key: &[u8], upper: &Bound<Vec<u8>>) -> bool {
    match upper {
        Bound::Included(k) => key <= k.as_slice(),
        Bound::Excluded(k) => key < k.as_slice(),
        Bound::Unbounded => true,
    }
}

impl BTree {
    /// Iterates over the keys in `range` (any [`RangeBounds`] over byte slices:
    /// `..`, `a..b`, `a..=b`, `(Bound::Excluded(a), Bound::Unbounded)`, …).
    pub fn range<'r, R>(&self, range: R) -> RangeIter
    where
        R: RangeBounds<&'r [u8]>,
    {
        let front = owned(range.start_bound().map(|k| *k));
        let back = owned(range.end_bound().map(|k| *k));
        RangeIter {
            tree: self.clone(),
            front,
            back,
            front_buf: VecDeque::new(),
            back_buf: VecDeque::new(),
            done: false,
        }
    }
}

impl RangeIter {
    fn refill_front(&mut self) -> Result<()> {
        loop {
            let leaf = match &self.front {
                Bound::Unbounded => self.tree.descend_shared(Target::AtLeast(&[]))?,
                Bound::Included(k) | Bound::Excluded(k) => {
                    self.tree.descend_shared(Target::AtLeast(k))?
                }
            };
            let id = leaf.guard.page_id();
            let node = Node::open(&leaf.guard, id, &self.tree)?;
            let start = match &self.front {
                Bound::Unbounded => 0,
                Bound::Included(k) => node.search(k).unwrap_or_else(|i| i),
                Bound::Excluded(k) => node.search(k).map_or_else(|i| i, |i| i + 1),
            };
            let mut reached_back = false;
            for i in start..node.len() {
                let key = node.key(i)?;
                if !below(key, &self.back) {
                    reached_back = true;
                    break;
                }
                let value = self.tree.read_value(id, node.value(i)?)?;
                self.front_buf.push_back((key.to_vec(), value));
            }
            if !self.front_buf.is_empty() {
                return Ok(());
            }
            match leaf.upper {
                Some(fence) if !reached_back && below(&fence, &self.back) => {
                    self.front = Bound::Included(fence);
                }
                _ => {
                    self.done = true;
                    return Ok(());
                }
            }
        }
    }

    fn refill_back(&mut self) -> Result<()> {
        loop {
            let leaf = match &self.back {
                Bound::Unbounded => self.tree.descend_shared(Target::Last)?,
                Bound::Included(k) => self.tree.descend_shared(Target::AtLeast(k))?,
                Bound::Excluded(k) => self.tree.descend_shared(Target::Below(k))?,
            };
            let id = leaf.guard.page_id();
            let node = Node::open(&leaf.guard, id, &self.tree)?;
            let end = match &self.back {
                Bound::Unbounded => node.len(),
                Bound::Included(k) => node.search(k).map_or_else(|i| i, |i| i + 1),
                Bound::Excluded(k) => node.search(k).unwrap_or_else(|i| i),
            };
            let mut reached_front = false;
            for i in (0..end).rev() {
                let key = node.key(i)?;
                if !above(key, &self.front) {
                    reached_front = true;
                    break;
                }
                let value = self.tree.read_value(id, node.value(i)?)?;
                self.back_buf.push_back((key.to_vec(), value));
            }
            if !self.back_buf.is_empty() {
                return Ok(());
            }
            match leaf.lower {
                Some(fence) if !reached_front && above(&fence, &self.front) => {
                    self.back = Bound::Excluded(fence);
                }
                _ => {
                    self.done = true;
                    return Ok(());
                }
            }
        }
    }

    fn fail<T>(&mut self, err: crate::BTreeError) -> Result<T> {
        self.done = true;
        self.front_buf.clear();
        self.back_buf.clear();
        Err(err)
    }
}

impl Iterator for RangeIter {
    type Item = Result<(Vec<u8>, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        if self.front_buf.is_empty() {
            if let Err(err) = self.refill_front() {
                return Some(self.fail(err));
            }
        }
        let (key, value) = self.front_buf.pop_front()?;
        // The back may have advanced past what this buffer was filled with.
        if !below(&key, &self.back) {
            self.done = true;
            return None;
        }
        self.front = Bound::Excluded(key.clone());
        Some(Ok((key, value)))
    }
}

impl DoubleEndedIterator for RangeIter {
    fn next_back(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        if self.back_buf.is_empty() {
            if let Err(err) = self.refill_back() {
                return Some(self.fail(err));
            }
        }
        let (key, value) = self.back_buf.pop_front()?;
        if !above(&key, &self.front) {
            self.done = true;
            return None;
        }
        self.back = Bound::Excluded(key.clone());
        Some(Ok((key, value)))
    }
}
