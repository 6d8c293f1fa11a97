//! Insert and replace: optimistic leaf change, or a pessimistic descent that splits.

use barracuda_buffer_pool::ExclusiveGuard;
use barracuda_page::{PageNo, SysFields};

use crate::error::{BTreeError, Result};
use crate::mtr::{IndexChange, Mtr};
use crate::node::{self, Node, NodeMut, NodeRef, Value, MAX_VALUE_LEN};
use crate::overflow;
use crate::tree::{BTree, Target};
use crate::versioned::{StoredRecord, StoredValue};
use crate::zip::{NodeChange, Placed};

/// What a put or delete found under its key before it wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Previous {
    /// The key was absent.
    Absent,
    /// The key had an inline value.
    Inline,
    /// The key had an off-page value whose chain must be freed once the new record is in.
    Overflow { first_page: PageNo },
    /// The record found, copied whole: a versioned change hands it to its caller, which keeps
    /// the old version (and its overflow chain) for the undo log.
    Captured(StoredRecord),
}

impl Previous {
    /// What record `pos` of `node` is: copied whole when `capture`, else only its kind.
    pub(crate) fn at(node: &NodeRef<'_>, pos: usize, capture: bool) -> Result<Self> {
        let value = node.value(pos)?;
        if capture {
            return Ok(Self::Captured(StoredRecord {
                value: StoredValue::of(node.id(), value)?,
                sys: node.sys(pos)?,
            }));
        }
        Ok(match value {
            Value::Overflow { first_page, .. } => Self::Overflow { first_page },
            Value::Inline(_) | Value::Child(_) => Self::Inline,
        })
    }

    /// The captured record, if there was one.
    pub(crate) fn into_captured(self) -> Option<StoredRecord> {
        match self {
            Self::Captured(record) => Some(record),
            Self::Absent | Self::Inline | Self::Overflow { .. } => None,
        }
    }
}

impl BTree {
    /// Stores `value` under `key`, replacing any previous value. Returns whether a value was
    /// replaced.
    ///
    /// All or nothing: on `Err` the tree is as it was (or, if the failure came after the first
    /// page changed — a failing log, a bug — the pool is poisoned and stops writing; see
    /// [`Mtr`]).
    pub fn put(&self, key: &[u8], value: &[u8]) -> Result<bool> {
        let previous = self.put_bytes(key, value, SysFields::NONE, false)?;
        if let Previous::Overflow { first_page } = previous {
            free_unreachable_chain(self, first_page);
        }
        Ok(previous != Previous::Absent)
    }

    /// Stores `value` under `key` with transaction fields `sys` — off-page in a new chain when
    /// it is too long for the leaf — and returns what was there (copied whole when `capture`),
    /// leaving the replaced record's chain to the caller. On `Err` the new chain is freed again.
    pub(crate) fn put_bytes(
        &self,
        key: &[u8],
        value: &[u8],
        sys: SysFields,
        capture: bool,
    ) -> Result<Previous> {
        self.check_key(key)?;
        let len = value.len() as u64;
        if len > MAX_VALUE_LEN {
            return Err(BTreeError::ValueTooLong {
                len,
                max: MAX_VALUE_LEN,
            });
        }
        let (stored, chain) = if self.needs_overflow(key.len(), value) {
            let first_page = overflow::write_chain(self, value)?;
            (
                Value::Overflow {
                    total_len: len,
                    first_page,
                },
                Some(first_page),
            )
        } else {
            (Value::Inline(value), None)
        };
        match self.put_value(key, stored, sys, capture) {
            Ok(previous) => Ok(previous),
            Err(err) => {
                // The record never made it in: give its chain back rather than leak it.
                if let Some(first_page) = chain {
                    if let Err(free_err) = overflow::free_chain(self, first_page) {
                        tracing::warn!(%free_err, "could not free the overflow chain of a failed put");
                    }
                }
                Err(err)
            }
        }
    }

    /// Places `key → value` with transaction fields `sys`; returns what was there, copied whole
    /// when `capture`.
    pub(crate) fn put_value(
        &self,
        key: &[u8],
        value: Value<'_>,
        sys: SysFields,
        capture: bool,
    ) -> Result<Previous> {
        let record = LeafRecord { key, value, sys };
        match self.put_optimistic(record, capture)? {
            Optimistic::Done(previous) => Ok(previous),
            Optimistic::LeafFull => self.put_pessimistic(record, capture, false),
            Optimistic::BlockRefused => self.put_pessimistic(record, capture, true),
        }
    }

    /// Shared latches down to the leaf's parent, an exclusive latch on the leaf; succeeds when the
    /// record fits in the leaf. Otherwise a split is needed (the leaf was not changed).
    fn put_optimistic(&self, record: LeafRecord<'_>, capture: bool) -> Result<Optimistic> {
        let mut leaf = self.descend_leaf_exclusive(record.key)?;
        let id = leaf.page_id();
        let fit = LeafFit::of(&NodeRef::open(&leaf, id, self)?, self, record, capture)?;
        if !fit.fits {
            return Ok(Optimistic::LeafFull);
        }
        let mut mtr = self.mtr();
        if fit.apply(&mut mtr, &mut leaf, self, record)? == Placed::DoesNotFit {
            // Its compressed block cannot take it: split (nothing was changed).
            return Ok(Optimistic::BlockRefused);
        }
        mtr.changed(leaf);
        mtr.commit()?;
        Ok(Optimistic::Done(fit.previous))
    }

    /// The leaf for `key`, latched exclusively: the rightmost leaf straight away when the
    /// last-insert position says `key` belongs to it (`append.rs`), else by a routed descent
    /// (the inner nodes' copies, the leaf by its frame hint: `routing.rs`), else by a latched
    /// one that gives the inner nodes it crosses the copies they lack. Splits keep their
    /// parent's copy current (`split.rs`), so a load rebuilds a copy only after a change that
    /// does not (an inner node's own split, a merge, a root raise).
    pub(crate) fn descend_leaf_exclusive(&self, key: &[u8]) -> Result<ExclusiveGuard<'_>> {
        if let Some(leaf) = self.hinted_leaf(key) {
            return Ok(leaf);
        }
        let epoch = self.structure_epoch();
        if let Some(leaf) = self.descend_routed_exclusive(key) {
            self.remember_leaf(&leaf, epoch);
            return Ok(leaf);
        }
        let leaf = self.descend_leaf_exclusive_from_root(key)?;
        self.remember_leaf(&leaf, epoch);
        Ok(leaf)
    }

    /// Descends with shared latches, coupled, and latches the leaf exclusively; the inner
    /// nodes crossed get a routing copy where theirs is missing or stale, and the copies note
    /// the frames their children were found in.
    fn descend_leaf_exclusive_from_root(&self, key: &[u8]) -> Result<ExclusiveGuard<'_>> {
        let pool = &self.ctx.pool;
        let root_id = self.page_id(self.root);
        loop {
            let mut guard = pool.get_shared(root_id)?;
            if NodeRef::open(&guard, root_id, self)?.level() == 0 {
                // The root is the only leaf: relatch it exclusively. A root raise may have
                // happened in between, so check the level again.
                drop(guard);
                let root = pool.get_exclusive(root_id)?;
                if NodeRef::open(&root, root_id, self)?.level() == 0 {
                    return Ok(root);
                }
                continue;
            }
            loop {
                let id = guard.page_id();
                let node = NodeRef::open(&guard, id, self)?;
                let idx = node.route(Target::AtLeast(key))?;
                let child = node.child(idx)?;
                let child_id = self.page_id(child);
                let routing = self.routing_of(&guard, &node);
                if node.level() == 1 {
                    let leaf = pool.get_exclusive(child_id)?;
                    if let Some(r) = routing
                        .as_ref()
                        .and_then(|a| a.value::<crate::routing::Routing>())
                    {
                        r.note_child(idx, leaf.frame());
                    }
                    if NodeRef::open(&leaf, child_id, self)?.level() != 0 {
                        return Err(BTreeError::corrupt(
                            child_id,
                            "child of a level-1 node is not a leaf",
                        ));
                    }
                    return Ok(leaf);
                }
                let child_guard = pool.get_shared(child_id)?;
                if let Some(r) = routing
                    .as_ref()
                    .and_then(|a| a.value::<crate::routing::Routing>())
                {
                    r.note_child(idx, child_guard.stamp().frame());
                }
                guard = child_guard;
            }
        }
    }

    /// Descends with exclusive latches from the root to the leaf for `key`, keeping the path of
    /// ancestors (with the child index taken in each) that a structure change may need. As soon
    /// as a node is `safe` — the change below cannot propagate through it — every ancestor above
    /// it is released, so the change blocks only the subtree it can reshape.
    #[allow(clippy::type_complexity)]
    pub(crate) fn descend_pessimistic(
        &self,
        key: &[u8],
        safe: impl Fn(&Node<&[u8]>) -> bool,
    ) -> Result<(ExclusiveGuard<'_>, Vec<(ExclusiveGuard<'_>, usize)>)> {
        let pool = &self.ctx.pool;
        let mut path: Vec<(ExclusiveGuard<'_>, usize)> = Vec::new();
        let mut guard = pool.get_exclusive(self.page_id(self.root))?;
        loop {
            let id = guard.page_id();
            let node = NodeRef::open(&guard, id, self)?;
            if node.level() == 0 {
                return Ok((guard, path));
            }
            let idx = node.route(Target::AtLeast(key))?;
            let child_id = self.page_id(node.child(idx)?);
            let child = pool.get_exclusive(child_id)?;
            let child_is_safe = safe(&NodeRef::open(&child, child_id, self)?);
            path.push((guard, idx));
            if child_is_safe {
                path.clear();
            }
            guard = child;
        }
    }

    /// Exclusive latches from the root; ancestors are released as soon as the node below them
    /// can take one more separator without splitting.
    ///
    /// `block_refused`: the optimistic attempt found the leaf's compressed block unable to take
    /// the record; the leaf is split without compressing it again (a failed compression is the
    /// dear part, and the leaf seldom changes in between; if it did, the split is still right).
    fn put_pessimistic(
        &self,
        record: LeafRecord<'_>,
        capture: bool,
        block_refused: bool,
    ) -> Result<Previous> {
        let LeafRecord { key, value, sys } = record;
        let page_size = self.ctx.pool.page_size();
        let leaf_record = node::record_size(page_size, key.len(), value);
        let separator_record = node::max_separator_record(page_size);
        // A compressed leaf may have to split whatever its free space says (its block may
        // not take the record): it is never safe, so its parent stays latched.
        let compressed = self.zip.is_some();
        let (mut guard, path) = self.descend_pessimistic(key, |node| {
            let needed = if node.level() == 0 {
                if compressed {
                    return false;
                }
                leaf_record
            } else {
                separator_record
            };
            node.free_space() >= needed
        })?;
        let id = guard.page_id();
        let fit = LeafFit::of(&NodeRef::open(&guard, id, self)?, self, record, capture)?;
        if fit.fits && !block_refused {
            let mut mtr = self.mtr();
            if fit.apply(&mut mtr, &mut guard, self, record)? == Placed::Done {
                mtr.changed(guard);
                mtr.commit()?;
                return Ok(fit.previous);
            }
            // The leaf has room but its compressed block has not: split it.
        }
        // Everything that can fail comes before the first change.
        let mut held = self.acquire_for_split(&guard, &path, key.len())?;
        let mut mtr = self.mtr();
        let pos = match fit.found {
            Ok(pos) => {
                // A replacement that does not fit: the old record goes, the new one is placed
                // by the split.
                NodeMut::open(guard.described_change_mut(), id, self)?.remove(pos)?;
                mtr.describe(&guard, IndexChange::Remove { pos })?;
                pos
            }
            Err(pos) => pos,
        };
        self.split_and_insert(&mut mtr, &mut held, guard, path, pos, key, value, sys)?;
        mtr.commit()?;
        drop(held);
        Ok(fit.previous)
    }
}

/// How an optimistic put ended.
enum Optimistic {
    /// Placed; what was there before.
    Done(Previous),
    /// The leaf has no room for the record: split.
    LeafFull,
    /// The leaf has room but its compressed block cannot take the record: split.
    BlockRefused,
}

/// A leaf record to place: key, value and transaction fields.
#[derive(Clone, Copy)]
pub(crate) struct LeafRecord<'a> {
    pub(crate) key: &'a [u8],
    pub(crate) value: Value<'a>,
    pub(crate) sys: SysFields,
}

/// Whether a record fits its leaf, decided on a read-only view so that a leaf that must split is
/// never touched by the attempt (see [`crate::Mtr`] on why an untouched page matters).
pub(crate) struct LeafFit {
    /// The key's position: `Ok` = present (replace), `Err` = insertion point.
    found: std::result::Result<usize, usize>,
    pub(crate) fits: bool,
    previous: Previous,
}

impl LeafFit {
    pub(crate) fn of(
        node: &NodeRef<'_>,
        tree: &BTree,
        record: LeafRecord<'_>,
        capture: bool,
    ) -> Result<Self> {
        let needed = node::record_size(tree.ctx.pool.page_size(), record.key.len(), record.value);
        let found = node.search(record.key);
        Ok(match found {
            Ok(pos) => Self {
                found,
                // The old record's bytes are freed by the replacement.
                fits: needed <= node.free_space() + node.record_size_at(pos)?,
                previous: Previous::at(node, pos, capture)?,
            },
            Err(_) => Self {
                found,
                fits: needed <= node.free_space(),
                previous: Previous::Absent,
            },
        })
    }

    /// Places the record, described to `mtr` as an index insert or replace (the leaf is
    /// handed to the mtr by the caller); the room was checked by [`of`](Self::of).
    ///
    /// On a compressed tree the leaf's block may refuse the record ([`Placed::DoesNotFit`]):
    /// nothing changed, and the leaf must split.
    pub(crate) fn apply(
        &self,
        mtr: &mut Mtr<'_>,
        leaf: &mut ExclusiveGuard<'_>,
        tree: &BTree,
        LeafRecord { key, value, sys }: LeafRecord<'_>,
    ) -> Result<Placed> {
        let change = match self.found {
            Ok(pos) => NodeChange::Replace {
                pos,
                key,
                value,
                sys,
            },
            Err(pos) => NodeChange::Insert {
                pos,
                key,
                value,
                sys,
            },
        };
        tree.make_change(mtr, leaf, change)
    }
}

/// Frees the overflow chain of a value the tree no longer points to. The change that unlinked
/// it has committed, so an error here must not be reported as the change failing (the caller
/// would take a done change for not done): the chain's pages leak instead, and say so.
pub(crate) fn free_unreachable_chain(tree: &BTree, first_page: PageNo) {
    if let Err(err) = overflow::free_chain(tree, first_page) {
        tracing::warn!(%err, first_page, space = tree.space, "could not free an unlinked overflow chain; its pages leak");
    }
}

/// The shortest prefix of `right` that is greater than `left` (suffix truncation): parents hold
/// shorter keys, so internal nodes fan out further.
pub(crate) fn shortest_separator(left: &[u8], right: &[u8]) -> Vec<u8> {
    for len in 1..=right.len() {
        if let Some(prefix) = right.get(..len) {
            if prefix > left {
                return prefix.to_vec();
            }
        }
    }
    right.to_vec()
}

#[cfg(test)]
mod tests {
    use super::shortest_separator;

    #[test]
    fn separator_is_shortest_prefix_above_left() {
        assert_eq!(shortest_separator(b"apple", b"banana"), b"b");
        assert_eq!(shortest_separator(b"abc", b"abd"), b"abd");
        assert_eq!(shortest_separator(b"ab", b"abc"), b"abc");
        assert_eq!(shortest_separator(b"", b"a"), b"a");
        assert_eq!(shortest_separator(b"a1000", b"a2"), b"a2");
    }
}
