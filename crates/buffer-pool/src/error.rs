//! Errors: the store's boxed error and the pool's own [`PoolError`].

use std::error::Error as StdError;
use std::fmt;
use std::time::Duration;

use barracuda_page::PageId;

/// An error from the [`PageStore`](crate::PageStore): the store's own error, boxed, with the page
/// it concerns when there is one (a batch write may fail as a whole).
#[derive(Debug)]
pub struct StoreError {
    page_id: Option<PageId>,
    source: Box<dyn StdError + Send + Sync>,
}

impl StoreError {
    /// An error about page `page_id`.
    pub fn new(page_id: PageId, source: impl Into<Box<dyn StdError + Send + Sync>>) -> Self {
        Self {
            page_id: Some(page_id),
            source: source.into(),
        }
    }

    /// An error that concerns no single page (for example a failed batch write).
    pub fn without_page(source: impl Into<Box<dyn StdError + Send + Sync>>) -> Self {
        Self {
            page_id: None,
            source: source.into(),
        }
    }

    /// The page the error concerns, if any.
    pub fn page_id(&self) -> Option<PageId> {
        self.page_id
    }

    /// The store's own error.
    pub fn inner(&self) -> &(dyn StdError + Send + Sync + 'static) {
        &*self.source
    }
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.page_id {
            Some(id) => write!(f, "page store error on {id}: {}", self.source),
            None => write!(f, "page store error: {}", self.source),
        }
    }
}

impl StdError for StoreError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        Some(&*self.source)
    }
}

/// Errors of the buffer pool.
#[derive(Debug, thiserror::Error)]
pub enum PoolError {
    /// Every frame is pinned (or latched / being read): no victim can be found to hold a new page.
    /// Returned after a bounded wait ([`PoolConfig::all_pinned_timeout`](crate::PoolConfig::all_pinned_timeout))
    /// instead of hanging. InnoDB would loop forever printing "Difficult to find free blocks in
    /// the buffer pool"; the caller should release guards or use a larger pool.
    #[error(
        "all {capacity_pages} buffer pool frames are pinned: no victim found after {waited:?}"
    )]
    AllPagesPinned {
        /// Size of the pool in pages.
        capacity_pages: usize,
        /// How long the request waited before giving up.
        waited: Duration,
    },
    /// No frame can be freed: every page not in use is a dirty page of the commit unit being
    /// applied, which may not be written before the unit is complete (see
    /// [`PageStore::write_barrier`](crate::PageStore::write_barrier)). The unit is larger than
    /// the pool can hold.
    #[error(
        "all {capacity_pages} buffer pool frames hold changes of the transaction being \
         committed, which cannot be written before it completes: the transaction does not fit \
         in the buffer pool"
    )]
    HeldByOpenUnit {
        /// Size of the pool in pages.
        capacity_pages: usize,
    },
    /// The page store failed to read or write a page.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The [`PoolConfig`](crate::PoolConfig) cannot be used.
    #[error("invalid buffer pool configuration: {0}")]
    InvalidConfig(String),
    /// A background thread could not be started.
    #[error("cannot start buffer pool thread: {0}")]
    Thread(#[source] std::io::Error),
    /// The page was left half-changed by a mini-transaction that did not complete; the pool
    /// neither hands it out nor writes it (see [`ExclusiveGuard`](crate::ExclusiveGuard)).
    #[error("{page} was left half-changed by a failed mini-transaction and is unusable")]
    PoisonedPage {
        /// The page.
        page: PageId,
    },
    /// Page writes were stopped because memory holds a change that must not reach disk
    /// ([`BufferPool::stop_writes`](crate::BufferPool::stop_writes)); dirty pages stay unwritten.
    #[error("page writes are stopped: {reason}")]
    WritesStopped {
        /// The first reason given for stopping.
        reason: String,
    },
    /// A page was to be created from a [`FrameReservation`](crate::FrameReservation) that had
    /// no frame left: the caller reserved fewer frames than it used (a bug in the caller).
    #[error("no reserved frame left to create page {page}")]
    ReservationExhausted {
        /// The page that could not be created.
        page: PageId,
    },
    /// The address space for the frames could not be reserved (the pool is larger than the
    /// address space, or `mmap` refused: `vm.overcommit_memory = 2`, `ulimit -v`, ...).
    #[error("cannot reserve {frames} frames of {page_size} for the buffer pool: {source}")]
    FrameMemory {
        /// Number of frames asked for.
        frames: usize,
        /// Size of each frame.
        page_size: barracuda_page::PageSize,
        /// Why the reservation failed.
        #[source]
        source: std::io::Error,
    },
}
