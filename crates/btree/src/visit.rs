//! Reads that look at records in place, under the leaf's shared latch, instead of copying them
//! out: a point read that hands its value to a closure, and a forward scan that walks the leaf
//! chain.
//!
//! The closures run while a leaf is latched shared. They must not write to the tree, nor wait
//! for a thread that does: a writer needs the exclusive latch the closure's thread is holding.
//!
//! The scan steps from a leaf to its right sibling while still holding the leaf (so the link it
//! follows cannot change under it), but only without waiting ([`BufferPool::try_get_shared`],
//! or its twin through the frame hint of the parent's routing copy, `routing.rs`): a writer
//! rebalancing two leaves may latch them right to left under their exclusively latched parent
//! (`delete.rs`), so waiting for the right sibling while holding the left one could deadlock.
//! When the sibling is latched, or not in the pool, the scan lets go and descends again from the
//! root to the key after the last one it visited — the iterator's method, which is always safe.
//!
//! [`BufferPool::try_get_shared`]: barracuda_buffer_pool::BufferPool::try_get_shared

use std::ops::{Bound, ControlFlow};

use barracuda_page::{PageId, PageNo, SysFields};

use crate::error::{BTreeError, Result};
use crate::node::{self, NodeRef, Value};
use crate::tree::{BTree, Target};
use crate::versioned::StoredValue;

/// A leaf value seen in place, under its leaf's latch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValueView<'a> {
    /// The whole value, in the leaf.
    Inline(&'a [u8]),
    /// A value stored off-page: its length and the first page of its chain
    /// ([`BTree::read_stored`] reads it once the leaf is released).
    Overflow {
        /// Bytes of the value.
        total_len: u64,
        /// First page of the chain (same tablespace).
        first_page: PageNo,
    },
}

impl ValueView<'_> {
    /// The value as an owned [`StoredValue`] (inline bytes copied, a chain not followed).
    pub fn to_stored(self) -> StoredValue {
        match self {
            Self::Inline(bytes) => StoredValue::Inline(bytes.to_vec()),
            Self::Overflow {
                total_len,
                first_page,
            } => StoredValue::Overflow {
                total_len,
                first_page,
            },
        }
    }
}

/// A leaf's value as lent (a child pointer in a leaf is corruption).
#[expect(
    clippy::inline_always,
    reason = "a scan calls it per record; out of line its result went through the stack \
              (see `Record::decode`): a tenth of a 100-row scan"
)]
#[inline(always)]
pub(crate) fn view_of(leaf: PageId, value: Value<'_>) -> Result<ValueView<'_>> {
    match value {
        Value::Inline(bytes) => Ok(ValueView::Inline(bytes)),
        Value::Overflow {
            total_len,
            first_page,
        } => Ok(ValueView::Overflow {
            total_len,
            first_page,
        }),
        Value::Child(_) => Err(BTreeError::corrupt(leaf, "child pointer in a leaf")),
    }
}

fn below(key: &[u8], end: Bound<&[u8]>) -> bool {
    match end {
        Bound::Included(k) => key <= k,
        Bound::Excluded(k) => key < k,
        Bound::Unbounded => true,
    }
}

/// How many records ahead of the one it reads a scan asks the CPU to load.
const PREFETCH_DISTANCE: usize = 4;

/// Where a scan enters the leaf a descent finds.
enum Entry {
    /// At the first key `>=` (or `>`, when `exclusive`) `key`.
    Bound { key: Vec<u8>, exclusive: bool },
    /// At the leaf's first record (a scan from the smallest key).
    First,
}

impl BTree {
    /// Calls `f` with the value and transaction fields stored under `key`, in place, while the
    /// leaf is latched shared; `Ok(None)` if the key is absent. An off-page value is handed over
    /// as its chain ([`ValueView::Overflow`]), not read. `f` must not write to the tree.
    pub fn get_stored_with<R>(
        &self,
        key: &[u8],
        f: impl FnOnce(ValueView<'_>, SysFields) -> R,
    ) -> Result<Option<R>> {
        if key.len() > node::max_key_len(self.ctx.pool.page_size()) {
            return Ok(None);
        }
        let leaf = self.descend(Target::AtLeast(key), false)?;
        let id = leaf.guard.page_id();
        let node = NodeRef::open(&leaf.guard, id, self)?;
        match node.search(key) {
            Ok(pos) => {
                let (_, value, sys) = node.row(pos)?;
                Ok(Some(f(view_of(id, value)?, sys)))
            }
            Err(_) => Ok(None),
        }
    }

    /// Visits the records with keys from `start` to `end`, ascending, calling `f` with each
    /// key, value (in place) and transaction fields while its leaf is latched shared, until `f`
    /// returns [`ControlFlow::Break`] or the range ends. Delete-marked records are visited too
    /// (the caller's MVCC decides). `f` must not write to the tree.
    ///
    /// Concurrent writes are seen or not depending on where the scan is, never out of order
    /// and never twice: the keys visited strictly ascend.
    pub fn scan_stored(
        &self,
        start: Bound<&[u8]>,
        end: Bound<&[u8]>,
        mut f: impl FnMut(&[u8], ValueView<'_>, SysFields) -> ControlFlow<()>,
    ) -> Result<()> {
        let mut entry = match start {
            Bound::Included(k) => Entry::Bound {
                key: k.to_vec(),
                exclusive: false,
            },
            Bound::Excluded(k) => Entry::Bound {
                key: k.to_vec(),
                exclusive: true,
            },
            Bound::Unbounded => Entry::First,
        };
        // The last key of the last non-empty leaf left (one buffer, reused).
        let mut passed: Option<Vec<u8>> = None;
        'descents: loop {
            let target = match &entry {
                Entry::Bound { key, .. } => Target::AtLeast(key),
                Entry::First => Target::AtLeast(&[]),
            };
            let leaf = self.descend(target, true)?;
            let mut guard = leaf.guard;
            // Every key of the leaf the descent found is below this fence, and every key from
            // it on is in the leaves after (unknown for a leaf reached by its sibling link).
            let mut fence = leaf.upper;
            let mut place = leaf.place;
            let mut at_entry = true;
            loop {
                let id = guard.page_id();
                let node = NodeRef::open(&guard, id, self)?;
                if node.level() != 0 {
                    return Err(BTreeError::corrupt(
                        id,
                        "a leaf's sibling link leads to an inner node",
                    ));
                }
                let first = match (&entry, std::mem::take(&mut at_entry)) {
                    (Entry::Bound { key, exclusive }, true) => match node.search(key) {
                        Ok(i) if *exclusive => i + 1,
                        Ok(i) | Err(i) => i,
                    },
                    _ => 0,
                };
                self.prefetch_right_sibling(place.as_ref());
                for i in first..(first + PREFETCH_DISTANCE).min(node.len()) {
                    node.prefetch(i);
                }
                for i in first..node.len() {
                    // Each record is otherwise a cache miss the loop waits for.
                    node.prefetch(i + PREFETCH_DISTANCE);
                    let (key, value, sys) = node.row(i)?;
                    if !below(key, end) || f(key, view_of(id, value)?, sys).is_break() {
                        return Ok(());
                    }
                }
                let Some(next) = node.next() else {
                    return Ok(());
                };
                if let Some(last) = node.len().checked_sub(1) {
                    let buf = passed.get_or_insert_with(Vec::new);
                    buf.clear();
                    buf.extend_from_slice(node.key(last)?);
                }
                // Latched while this leaf is still held: `next` is its right sibling now.
                let Some(sibling) = self.try_latch_right_sibling(&mut place, next)? else {
                    // Descend again (reading the next leaf in if it is not in the pool): from
                    // the fence, if this leaf came from a descent — everything below it was
                    // here — else past the last key visited, which finds a leaf with a fence.
                    // (If no leaf had a key yet, nothing was visited: the entry stands.)
                    if let Some(key) = fence.take() {
                        entry = Entry::Bound {
                            key,
                            exclusive: false,
                        };
                    } else if let Some(key) = passed.take() {
                        entry = Entry::Bound {
                            key,
                            exclusive: true,
                        };
                    }
                    drop(guard);
                    continue 'descents;
                };
                guard = sibling;
                fence = None;
            }
        }
    }
}
