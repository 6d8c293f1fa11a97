//! Errors of B-tree operations.

use barracuda_buffer_pool::PoolError;
use barracuda_page::{PageError, PageId};

/// Result of a B-tree operation.
pub type Result<T> = std::result::Result<T, BTreeError>;

/// Why a B-tree operation failed. Every variant names what it was looking at.
#[derive(Debug, thiserror::Error)]
pub enum BTreeError {
    /// The buffer pool could not provide a page (I/O error, checksum failure, all frames pinned).
    #[error(transparent)]
    Pool(#[from] PoolError),
    /// A page of the tree failed structural validation.
    #[error("{page}: {source}")]
    Page {
        /// The page that is bad.
        page: PageId,
        /// What is wrong with it.
        #[source]
        source: PageError,
    },
    /// The tree's shape is wrong (a child at the wrong level, a broken overflow chain, …).
    #[error("{page}: corrupt B-tree: {what}")]
    Corrupt {
        /// The page where the inconsistency was found.
        page: PageId,
        /// What was expected and what was found.
        what: String,
    },
    /// A key longer than the page size allows.
    #[error("key of {len} bytes is longer than the limit of {max} bytes for this page size")]
    KeyTooLong {
        /// Length of the offending key.
        len: usize,
        /// The limit (`page_size / 8`).
        max: usize,
    },
    /// A value longer than the format can address.
    #[error("value of {len} bytes is longer than the limit of {max} bytes")]
    ValueTooLong {
        /// Length of the offending value.
        len: u64,
        /// The limit.
        max: u64,
    },
    /// The page allocator (tablespace layer) failed.
    #[error("page allocation in space {space}: {what}")]
    Allocation {
        /// The tablespace.
        space: u32,
        /// What went wrong.
        what: String,
    },
    /// A sorted build was given a row whose key is not above the key of the row before it.
    #[error("sorted build of index {index_id}: row {position} has a key not above the key of the row before it")]
    KeysNotAscending {
        /// The index being built.
        index_id: u64,
        /// The row's position among those pushed (from 0).
        position: u64,
    },
    /// A sorted build was finished into a tree that has records.
    #[error("sorted build of index {index_id}: the tree is not empty")]
    TreeNotEmpty {
        /// The index.
        index_id: u64,
    },
    /// A sorted build of a tree it cannot build.
    #[error("sorted build of index {index_id} is not supported: {why}")]
    BuildUnsupported {
        /// The index.
        index_id: u64,
        /// Why.
        why: &'static str,
    },
    /// The log refused an mtr (e.g. the redo log could not be written).
    #[error("log: {0}")]
    Log(String),
}

impl BTreeError {
    /// A [`Corrupt`](Self::Corrupt) error naming `page`.
    pub fn corrupt(page: PageId, what: impl Into<String>) -> Self {
        Self::Corrupt {
            page,
            what: what.into(),
        }
    }
}
