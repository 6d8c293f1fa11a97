//! Versioned changes: the record operations a transaction system builds MVCC on.
//!
//! Every leaf record carries its transaction fields ([`SysFields`]: the id of the transaction
//! that last changed it, a roll pointer to its previous version in the undo log, the delete
//! mark). Plain [`put`](BTree::put) and [`delete`](BTree::delete) write records without history
//! ([`SysFields::NONE`]) and free what they replace. The operations here instead write the
//! fields they are given and hand back the record they replaced or removed, **whole and
//! unfreed**: an old value stored off-page keeps its overflow chain, now owned by the caller,
//! which records it in its undo log and frees it ([`free_stored`](BTree::free_stored)) once no
//! reader can need the old version (purge) — or puts it back ([`put_stored`](BTree::put_stored))
//! when the change is rolled back.

use barracuda_page::{PageId, PageNo, SysFields};

use crate::error::{BTreeError, Result};
use crate::insert::Previous;
use crate::node::{self, NodeRef, Value};
use crate::overflow;
use crate::tree::{BTree, Target};

/// A leaf value as the leaf stores it: the bytes themselves, or where its overflow chain is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StoredValue {
    /// The whole value, copied from the leaf.
    Inline(Vec<u8>),
    /// A value stored off-page: its length and the first page of its chain.
    Overflow {
        /// Bytes of the value.
        total_len: u64,
        /// First page of the chain (same tablespace).
        first_page: PageNo,
    },
}

impl StoredValue {
    /// The owned form of a leaf's value (a child pointer in a leaf is corruption).
    pub(crate) fn of(leaf: PageId, value: Value<'_>) -> Result<Self> {
        crate::visit::view_of(leaf, value).map(crate::visit::ValueView::to_stored)
    }

    pub(crate) fn as_value(&self) -> Value<'_> {
        match self {
            Self::Inline(bytes) => Value::Inline(bytes),
            &Self::Overflow {
                total_len,
                first_page,
            } => Value::Overflow {
                total_len,
                first_page,
            },
        }
    }

    /// The length of the value in bytes.
    pub fn len(&self) -> u64 {
        match self {
            Self::Inline(bytes) => bytes.len() as u64,
            Self::Overflow { total_len, .. } => *total_len,
        }
    }

    /// Whether the value is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A leaf record as stored: its value (not followed off-page) and its transaction fields.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredRecord {
    /// The value.
    pub value: StoredValue,
    /// The transaction fields.
    pub sys: SysFields,
}

impl BTree {
    /// The record stored under `key`, without following an overflow chain.
    pub fn get_stored(&self, key: &[u8]) -> Result<Option<StoredRecord>> {
        self.stored(key, false)
    }

    /// As [`get_stored`](Self::get_stored), for a writer about to change the row (or its
    /// leaf): the same answer, but the descent leaves the inner nodes' routing copies alone
    /// where a reader's would rebuild them, since the change that follows may make them stale.
    pub fn get_stored_to_change(&self, key: &[u8]) -> Result<Option<StoredRecord>> {
        self.stored(key, true)
    }

    fn stored(&self, key: &[u8], to_change: bool) -> Result<Option<StoredRecord>> {
        if key.len() > node::max_key_len(self.ctx.pool.page_size()) {
            return Ok(None);
        }
        let target = Target::AtLeast(key);
        let leaf = if to_change {
            self.descend_to_change(target)?
        } else {
            self.descend(target, false)?
        };
        let id = leaf.guard.page_id();
        let node = NodeRef::open(&leaf.guard, id, self)?;
        match node.search(key) {
            Ok(pos) => Ok(Some(StoredRecord {
                value: StoredValue::of(id, node.value(pos)?)?,
                sys: node.sys(pos)?,
            })),
            Err(_) => Ok(None),
        }
    }

    /// The bytes of a stored value, following its overflow chain if it has one.
    pub fn read_stored(&self, value: &StoredValue) -> Result<Vec<u8>> {
        match value {
            StoredValue::Inline(bytes) => Ok(bytes.clone()),
            &StoredValue::Overflow {
                total_len,
                first_page,
            } => overflow::read_chain(self, first_page, total_len),
        }
    }

    /// Stores `key → value` with transaction fields `sys` and returns the record it replaced,
    /// whose overflow chain (if any) is **not** freed: the caller owns it. All or nothing like
    /// [`put`](Self::put): on `Err` the tree is unchanged (a chain written for the new value is
    /// freed again).
    pub fn put_versioned(
        &self,
        key: &[u8],
        value: &[u8],
        sys: SysFields,
    ) -> Result<Option<StoredRecord>> {
        self.put_bytes(key, value, sys, true)
            .map(Previous::into_captured)
    }

    /// Stores `key → value` where `value` is a stored value taken back — an old version's
    /// inline bytes or overflow chain, restored by a rollback — with transaction fields `sys`.
    /// The chain becomes the tree's again; the record replaced is returned, its chain not
    /// freed.
    pub fn put_stored(
        &self,
        key: &[u8],
        value: &StoredValue,
        sys: SysFields,
    ) -> Result<Option<StoredRecord>> {
        self.check_key(key)?;
        if let StoredValue::Inline(bytes) = value {
            if self.needs_overflow(key.len(), bytes) {
                return Err(BTreeError::ValueTooLong {
                    len: bytes.len() as u64,
                    max: self.max_inline_value(key.len()) as u64,
                });
            }
        }
        self.put_value(key, value.as_value(), sys, true)
            .map(Previous::into_captured)
    }

    /// Removes `key`'s record and returns it, its chain not freed (purge and rollback remove a
    /// record whose old versions still hold their values).
    pub fn remove_stored(&self, key: &[u8]) -> Result<Option<StoredRecord>> {
        if key.len() > node::max_key_len(self.ctx.pool.page_size()) {
            return Ok(None);
        }
        self.remove_key(key, true, &|_| true)
            .map(Previous::into_captured)
    }

    /// Removes `key`'s record only if `wanted` says so of its transaction fields, checked under
    /// the latch that removes it (purge: only a row still delete-marked by the transaction it
    /// purges, whatever writer got to the row since it looked). Returns the record removed.
    pub fn remove_stored_if(
        &self,
        key: &[u8],
        wanted: &dyn Fn(SysFields) -> bool,
    ) -> Result<Option<StoredRecord>> {
        if key.len() > node::max_key_len(self.ctx.pool.page_size()) {
            return Ok(None);
        }
        self.remove_key(key, true, wanted)
            .map(Previous::into_captured)
    }

    /// Frees the overflow chain of a stored value no record points to any more (nothing for an
    /// inline value).
    pub fn free_stored(&self, value: &StoredValue) -> Result<()> {
        match value {
            StoredValue::Inline(_) => Ok(()),
            &StoredValue::Overflow { first_page, .. } => overflow::free_chain(self, first_page),
        }
    }
}
