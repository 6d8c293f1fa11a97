//! Versioned changes made in place in one mini-transaction with the caller's own log record:
//! the fast path of a transaction's row write, whose undo record and row change must reach the
//! redo log together.

use barracuda_page::SysFields;

use crate::error::BTreeError;
use crate::error::Result;
use crate::insert::{LeafFit, LeafRecord};
use crate::mtr::Mtr;
use crate::node::{NodeRef, Value};
use crate::tree::BTree;
use crate::versioned::{StoredRecord, StoredValue};
use crate::zip::Placed;

/// A change [`BTree::change_in_place`] makes to the record of its key.
#[derive(Clone, Copy, Debug)]
pub enum InPlace<'a> {
    /// Store this value (inline: a value that would go off-page takes the other path).
    Put(&'a [u8]),
    /// Delete-mark the record, keeping its value; nothing when there is none or it is marked.
    DeleteMark,
}

/// The caller's part of [`BTree::change_in_place`]: given the mtr and the record as it is,
/// log what must go with the change and return the transaction fields to write (`None`: give
/// up, before changing anything).
pub type PrepareInPlace<'p, 't> =
    dyn FnMut(&mut Mtr<'t>, Option<&StoredRecord>) -> Result<Option<SysFields>> + 'p;

/// The caller's part of [`BTree::put_run_in_place`]: as [`PrepareInPlace`], for the run's row
/// at the given index.
pub type PrepareRunRow<'p, 't> =
    dyn FnMut(&mut Mtr<'t>, usize, Option<&StoredRecord>) -> Result<Option<SysFields>> + 'p;

/// At most this many rows go in one mini-transaction of [`BTree::put_run_in_place`], and at
/// most [`MAX_RUN_BYTES`] of keys and values: an mtr's redo must fit the log buffer, and the
/// pages it holds stay latched until it commits.
pub const MAX_RUN_ROWS: usize = 128;

/// See [`MAX_RUN_ROWS`].
pub const MAX_RUN_BYTES: usize = 64 * 1024;

/// What [`BTree::change_in_place`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InPlaceOutcome {
    /// The change and whatever the caller logged with it committed in one mini-transaction.
    Done,
    /// Nothing to do (a delete-mark of an absent or already marked record).
    Unchanged,
    /// The change does not fit the leaf in place (it needs a split or an overflow chain), or
    /// the caller declined: nothing was changed; take the general path.
    NotHere,
}

impl BTree {
    /// Makes `change` to `key`'s leaf record in place, when it fits the leaf as it is, inside
    /// one mini-transaction that also carries what `prepare` logs. With the leaf latched
    /// exclusively, `prepare` gets the mtr and the record as it is now (`None` if absent) —
    /// read under that latch, so no other change slips in between — adds its own pages to the
    /// mtr (latched in any order after the leaf's: the caller's own pages, which no one
    /// latches before a leaf), and returns the transaction fields to write, or `None` to give
    /// up, which it may do only before changing anything. On an error from `prepare` after it
    /// changed pages, the mtr is abandoned and those pages poisoned (as any failed mtr).
    pub fn change_in_place<'t>(
        &'t self,
        key: &[u8],
        change: InPlace<'_>,
        prepare: &mut PrepareInPlace<'_, 't>,
    ) -> Result<InPlaceOutcome> {
        self.check_key(key)?;
        if let InPlace::Put(value) = change {
            // On a compressed tree the block may refuse a new value, and by then `prepare`
            // has logged its part: a put takes the general path there.
            if self.zip.is_some() || self.needs_overflow(key.len(), value) {
                return Ok(InPlaceOutcome::NotHere);
            }
        }
        let mut leaf = self.descend_leaf_exclusive(key)?;
        let id = leaf.page_id();
        let (current, fit) = {
            let node = NodeRef::open(&leaf, id, self)?;
            let current = match node.search(key) {
                Ok(pos) => Some(StoredRecord {
                    value: StoredValue::of(id, node.value(pos)?)?,
                    sys: node.sys(pos)?,
                }),
                Err(_) => None,
            };
            let Some(value) = new_value(change, current.as_ref()) else {
                return Ok(InPlaceOutcome::Unchanged);
            };
            // The fields' size does not depend on their values: any will do for the fit.
            let probe = LeafRecord {
                key,
                value,
                sys: SysFields::default(),
            };
            let fit = LeafFit::of(&node, self, probe, false)?;
            (current, fit)
        };
        if !fit.fits {
            return Ok(InPlaceOutcome::NotHere);
        }
        let mut mtr = self.mtr();
        let Some(sys) = prepare(&mut mtr, current.as_ref())? else {
            return Ok(InPlaceOutcome::NotHere);
        };
        // `Some`: the same value the fit was checked for.
        let Some(value) = new_value(change, current.as_ref()) else {
            return Ok(InPlaceOutcome::Unchanged);
        };
        let record = LeafRecord { key, value, sys };
        if fit.apply(&mut mtr, &mut leaf, self, record)? != Placed::Done {
            // A delete-mark does not grow the record, so no block refuses it.
            return Err(BTreeError::corrupt(
                leaf.page_id(),
                "a compressed page refused a change that does not grow it",
            ));
        }
        mtr.changed(leaf);
        mtr.commit()?;
        Ok(InPlaceOutcome::Done)
    }
}

impl BTree {
    /// Puts a run of rows, keys strictly ascending, into the leaf of the first one, in place
    /// and in **one** mini-transaction (with whatever `prepare` logs for each): the batched
    /// form of [`change_in_place`](Self::change_in_place) for `InPlace::Put`, which spends one
    /// descent, one latch and one redo append on every row a leaf takes instead of one each.
    ///
    /// The run stops before the first row that does not belong to that leaf (a key past its
    /// last key when it has a right sibling: the fence is not known here), does not fit it,
    /// needs an overflow chain, is not above the row before it, or that `prepare` declines,
    /// and after [`MAX_RUN_ROWS`] rows or [`MAX_RUN_BYTES`]. Returns how many rows, from the
    /// first, were put (0: nothing changed; take the general path for the first row). On an
    /// error, the mtr is abandoned and its pages poisoned, as any failed mtr: none of the run
    /// is in the tree or the log.
    pub fn put_run_in_place<'t>(
        &'t self,
        rows: &[(&[u8], &[u8])],
        prepare: &mut PrepareRunRow<'_, 't>,
    ) -> Result<usize> {
        let Some(&(first, _)) = rows.first() else {
            return Ok(0);
        };
        self.check_key(first)?;
        // A compressed tree's block may refuse a row after `prepare` logged its part.
        if self.zip.is_some() {
            return Ok(0);
        }
        let mut leaf = self.descend_leaf_exclusive(first)?;
        let id = leaf.page_id();
        let mut mtr = self.mtr();
        let (mut done, mut bytes) = (0, 0);
        let mut previous: Option<&[u8]> = None;
        for (i, &(key, value)) in rows.iter().enumerate() {
            bytes += key.len() + value.len();
            if i == MAX_RUN_ROWS
                || (i > 0 && bytes > MAX_RUN_BYTES)
                || previous.is_some_and(|p| p >= key)
                || self.check_key(key).is_err()
                || self.needs_overflow(key.len(), value)
            {
                break;
            }
            let (current, fit) = {
                let node = NodeRef::open(&leaf, id, self)?;
                if i > 0 && node.next().is_some() {
                    // Not the rightmost leaf: only keys up to its last one surely belong here.
                    let last = node.len().checked_sub(1).map(|l| node.key(l)).transpose()?;
                    if last.is_none_or(|last| key > last) {
                        break;
                    }
                }
                let current = match node.search(key) {
                    Ok(pos) => Some(StoredRecord {
                        value: StoredValue::of(id, node.value(pos)?)?,
                        sys: node.sys(pos)?,
                    }),
                    Err(_) => None,
                };
                let probe = LeafRecord {
                    key,
                    value: Value::Inline(value),
                    sys: SysFields::default(),
                };
                (current, LeafFit::of(&node, self, probe, false)?)
            };
            if !fit.fits {
                break;
            }
            let Some(sys) = prepare(&mut mtr, i, current.as_ref())? else {
                break;
            };
            let record = LeafRecord {
                key,
                value: Value::Inline(value),
                sys,
            };
            if fit.apply(&mut mtr, &mut leaf, self, record)? != Placed::Done {
                return Err(BTreeError::corrupt(
                    id,
                    "an uncompressed leaf refused a record that fits it",
                ));
            }
            done += 1;
            previous = Some(key);
        }
        if done > 0 {
            mtr.changed(leaf);
            mtr.commit()?;
        }
        Ok(done)
    }
}

/// The value `change` stores, borrowed (a put's bytes, or the current record's value for a
/// delete-mark); `None` when a delete-mark has nothing to mark.
fn new_value<'a>(change: InPlace<'a>, current: Option<&'a StoredRecord>) -> Option<Value<'a>> {
    match change {
        InPlace::Put(v) => Some(Value::Inline(v)),
        InPlace::DeleteMark => current
            .filter(|now| !now.sys.deleted)
            .map(|now| now.value.as_value()),
    }
}
