//! A clustered B+tree keyed by bytes (memcmp order) over the Barracuda buffer pool.
//!
//! * Leaves hold records `key → value`; a value that would make its record larger than about a
//!   quarter page is stored off-page in a chain of overflow pages (like InnoDB's
//!   `ROW_FORMAT=DYNAMIC`), so values of any size up to [`MAX_VALUE_LEN`] work.
//! * Keys are limited to `page_size / 8` bytes ([`max_key_len`]); longer keys get
//!   [`BTreeError::KeyTooLong`].
//! * The root page never moves (InnoDB does the same), so the catalog entry of a tree never
//!   changes: a root split ("raise") moves the root's records into two new children, and a root
//!   with one child absorbs it ("lower").
//! * Concurrency: readers descend with shared latches, coupling parent → child. Writers first try
//!   optimistically (shared latches down to the leaf's parent, an exclusive latch on the leaf); a
//!   change that must split or merge restarts pessimistically with exclusive latches from the
//!   root, releasing every ancestor as soon as the node below it is *safe* (cannot split or
//!   underflow), so a structure change blocks readers only of the subtree it reshapes.
//!   Iterators hold no latch between calls: each refill re-descends from the root, which is what
//!   keeps them deadlock-free and lets the user write while iterating.
//! * Every page change happens inside an [`Mtr`], which stamps the pages with an LSN from the
//!   [`LogSink`] before releasing their latches.
//!
//! ```
//! use std::sync::Arc;
//! use barracuda_btree::{BTree, TreeContext, PlaceholderLog, testing::MemAllocator};
//! use barracuda_buffer_pool::{BufferPool, PoolConfig, testing::MemStore};
//! use barracuda_page::PageSize;
//!
//! let store = Arc::new(MemStore::new(PageSize::K16));
//! store.create_space(1, 1 << 20);
//! let pool = BufferPool::new(PoolConfig::new(PageSize::K16).capacity_pages(64), store).unwrap();
//! let ctx = TreeContext::new(pool, Arc::new(MemAllocator::new()), Arc::new(PlaceholderLog::default()));
//! let tree = BTree::create(ctx, 1, 1).unwrap();
//! tree.put(b"apple", b"red").unwrap();
//! assert_eq!(tree.get(b"apple").unwrap().as_deref(), Some(&b"red"[..]));
//! let keys: Vec<Vec<u8>> = tree.range(..).map(|kv| kv.unwrap().0).collect();
//! assert_eq!(keys, vec![b"apple".to_vec()]);
//! ```
#![deny(clippy::indexing_slicing)]

mod alloc;
mod append;
mod build;
mod check;
mod delete;
mod error;
mod held;
mod in_place;
mod insert;
mod iter;
mod mtr;
mod node;
mod overflow;
mod routing;
mod split;
pub mod testing;
mod tree;
mod versioned;
mod visit;
mod zip;

pub use alloc::PageAllocator;
pub use build::{BuildStats, SortedBuild};
pub use check::TreeStats;
pub use error::{BTreeError, Result};
pub use in_place::{
    InPlace, InPlaceOutcome, PrepareInPlace, PrepareRun, MAX_RUN_BYTES, MAX_RUN_LEAVES,
    MAX_RUN_ROWS,
};
pub use iter::{RangeIter, VersionedRow};
pub use mtr::{
    DescribedChange, IndexChange, LogSink, LsnRange, Mtr, MtrSummary, PageChange, PlaceholderLog,
};
pub use node::{max_key_len, MAX_VALUE_LEN};
pub use tree::{BTree, TreeContext};
pub use versioned::{StoredRecord, StoredValue};
pub use visit::ValueView;
pub use zip::ZipIndex;
