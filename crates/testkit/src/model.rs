//! Owned mirrors of index-page records, the operations of model tests, and the `BTreeMap` model
//! they are checked against.
//!
//! [`Record`] borrows its bytes, so strategies cannot return it; they return an [`OwnedRecord`]
//! and tests borrow it back with [`OwnedRecord::as_record`].

use barracuda_page::{record_size, IndexPage, PageNo, Record, SysFields, ValueRef};
use proptest::sample::Index;
use std::collections::BTreeMap;
use std::ops::Bound;

/// The owned form of [`ValueRef`].
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum OwnedValue {
    /// An inline value (leaf pages).
    Inline(Vec<u8>),
    /// A value stored off-page (leaf pages): its inline prefix and where the rest lives.
    Overflow {
        /// The inline prefix of the value (may be empty).
        prefix: Vec<u8>,
        /// Length of the whole value; greater than `prefix.len()` for a well-formed record.
        total_len: u64,
        /// First page of the overflow chain; not `FIL_NULL` for a well-formed record.
        first_page: PageNo,
    },
    /// A child pointer (internal pages).
    Child(PageNo),
}

impl OwnedValue {
    /// Borrows it as a [`ValueRef`].
    pub fn as_value_ref(&self) -> ValueRef<'_> {
        match self {
            Self::Inline(v) => ValueRef::Inline(v),
            Self::Overflow {
                prefix,
                total_len,
                first_page,
            } => ValueRef::Overflow {
                prefix,
                total_len: *total_len,
                first_page: *first_page,
            },
            Self::Child(p) => ValueRef::Child(*p),
        }
    }

    /// Copies a [`ValueRef`].
    pub fn from_value_ref(value: ValueRef<'_>) -> Self {
        match value {
            ValueRef::Inline(v) => Self::Inline(v.to_vec()),
            ValueRef::Overflow {
                prefix,
                total_len,
                first_page,
            } => Self::Overflow {
                prefix: prefix.to_vec(),
                total_len,
                first_page,
            },
            ValueRef::Child(p) => Self::Child(p),
        }
    }

    /// Whether this is a child pointer (belongs on a page of level > 0).
    pub fn is_child(&self) -> bool {
        matches!(self, Self::Child(_))
    }
}

/// The owned form of [`Record`]: a key, an [`OwnedValue`] and the transaction fields.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct OwnedRecord {
    /// The key (memcmp order).
    pub key: Vec<u8>,
    /// The value.
    pub value: OwnedValue,
    /// The transaction fields (leaf records; [`SysFields::NONE`] on child records).
    pub sys: SysFields,
}

impl OwnedRecord {
    /// Builds a record from its parts, with no transaction fields ([`SysFields::NONE`]).
    pub fn new(key: Vec<u8>, value: OwnedValue) -> Self {
        Self {
            key,
            value,
            sys: SysFields::NONE,
        }
    }

    /// The same record with transaction fields `sys`.
    #[must_use]
    pub fn with_sys(mut self, sys: SysFields) -> Self {
        self.sys = sys;
        self
    }

    /// Borrows it as a [`Record`], the form the page API takes.
    pub fn as_record(&self) -> Record<'_> {
        Record {
            key: &self.key,
            value: self.value.as_value_ref(),
            sys: self.sys,
        }
    }

    /// Copies a [`Record`] read from a page.
    pub fn from_record(record: &Record<'_>) -> Self {
        Self {
            key: record.key.to_vec(),
            value: OwnedValue::from_value_ref(record.value),
            sys: record.sys,
        }
    }

    /// Bytes the record costs in an index page, including its 2-byte slot ([`record_size`]).
    pub fn size_bytes(&self) -> usize {
        record_size(&self.as_record())
    }
}

/// All records of a page, in slot (key) order, as owned values.
///
/// # Panics
/// If a record does not decode: the laws run on pages built through the page API.
pub fn page_records<B: AsRef<[u8]>>(page: &IndexPage<B>) -> Vec<OwnedRecord> {
    page.iter()
        .map(|r| OwnedRecord::from_record(&r.expect("the page's records decode")))
        .collect()
}

/// One step of an index-page model test (see [`index_ops`](crate::strategy::index_ops) and
/// [`law_index_ops_agree_with_model`](crate::laws::law_index_ops_agree_with_model)).
///
/// Positions are [`Index`]es, resolved against the number of records when the operation is
/// applied, so that a sequence stays meaningful while it shrinks.
#[derive(Clone, Debug)]
pub enum IndexOp {
    /// Insert the record at the position where its key belongs (as the B-tree does after a
    /// search). Fails with `KeyOutOfOrder` if the key is already present.
    Insert(OwnedRecord),
    /// Insert the record at an arbitrary position `0..=len`: succeeds only if that happens to be
    /// where its key belongs.
    InsertAt {
        /// Position, resolved in `0..=len`.
        at: Index,
        /// The record.
        record: OwnedRecord,
    },
    /// Give the record at a position (resolved in `0..len`) a new value and transaction
    /// fields, keeping its key.
    Replace {
        /// Position, resolved in `0..len`.
        at: Index,
        /// The new value.
        value: OwnedValue,
        /// The new transaction fields.
        sys: SysFields,
    },
    /// Remove the record at a position (resolved in `0..len`).
    Remove {
        /// Position, resolved in `0..len`.
        at: Index,
    },
    /// Compact the heap (InnoDB: btr_page_reorganize).
    Compact,
}

/// The model of an index page: its records in a `BTreeMap`, which is sorted and unique by
/// construction.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IndexModel {
    /// Key → value and transaction fields.
    pub map: BTreeMap<Vec<u8>, (OwnedValue, SysFields)>,
}

impl IndexModel {
    /// A model holding `records` (a later duplicate key replaces an earlier one).
    pub fn from_records<'a>(records: impl IntoIterator<Item = &'a OwnedRecord>) -> Self {
        Self {
            map: records
                .into_iter()
                .map(|r| (r.key.clone(), (r.value.clone(), r.sys)))
                .collect(),
        }
    }

    /// Number of records.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether the model holds no record.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Where `key` is or would be, as [`slice::binary_search`] answers.
    pub fn search(&self, key: &[u8]) -> Result<usize, usize> {
        let below = self
            .map
            .range::<[u8], _>((Bound::Unbounded, Bound::Excluded(key)))
            .count();
        if self.map.contains_key(key) {
            Ok(below)
        } else {
            Err(below)
        }
    }

    /// The record at position `i` in key order.
    pub fn nth(&self, i: usize) -> Option<OwnedRecord> {
        self.map
            .iter()
            .nth(i)
            .map(|(k, (v, sys))| OwnedRecord::new(k.clone(), v.clone()).with_sys(*sys))
    }

    /// Bytes the records and their slots take in a page.
    pub fn used_bytes(&self) -> usize {
        self.map
            .iter()
            .map(|(k, (v, sys))| {
                record_size(&Record {
                    key: k,
                    value: v.as_value_ref(),
                    sys: *sys,
                })
            })
            .sum()
    }

    /// The records in key order.
    pub fn records(&self) -> Vec<OwnedRecord> {
        self.map
            .iter()
            .map(|(k, (v, sys))| OwnedRecord::new(k.clone(), v.clone()).with_sys(*sys))
            .collect()
    }
}
