//! The Barracuda buffer pool: InnoDB's buffer pool in Rust.
//!
//! - A fixed array of page-size-aligned frames reserved once in one mapping (memory is backed
//!   as frames are first used, so a pool of any size opens in milliseconds), a descriptor per
//!   frame, a sharded page hash (`PageId` → frame).
//! - An **LRU list with midpoint insertion** (`innodb_old_blocks_pct`, `innodb_old_blocks_time`):
//!   pages read from disk enter the old sublist, so a scan cannot flush the hot set.
//! - A **flush list** ordered by oldest modification LSN; writes obey the WAL rule
//!   ([`PageStore::flush_log_up_to`] before [`PageStore::write_pages`]).
//! - A **free list** refilled by a background LRU manager thread; what a thread does when it is
//!   empty is the run-time switchable [`FreePagePolicy`] (`Legacy`, `Backoff`, `Eager`).
//! - Linear and random **read-ahead** through a background read thread.
//! - Counters named as InnoDB names them, in [`PoolStats`].
//!
//! ```
//! use std::sync::Arc;
//! use barracuda_buffer_pool::{testing::MemStore, BufferPool, PoolConfig};
//! use barracuda_page::{PageId, PageSize};
//!
//! let store = Arc::new(MemStore::new(PageSize::K4));
//! store.create_space(1, 100);
//! let pool = BufferPool::new(PoolConfig::new(PageSize::K4).capacity_pages(64), store.clone()).unwrap();
//! {
//!     let mut page = pool.get_exclusive(PageId::new(1, 7)).unwrap();
//!     page[100] = 42;
//!     page.mark_dirty(1);
//! }
//! pool.flush_all().unwrap();
//! assert_eq!(store.page(PageId::new(1, 7)).unwrap()[100], 42);
//! ```

// Page bytes and per-frame arrays are indexed by numbers that come from the pool's own lists:
// every access says what it relies on (`get` + a typed error or a documented invariant).
#![deny(clippy::indexing_slicing)]

mod attach;
pub mod buddy;
mod config;
mod descriptor;
mod error;
mod flush;
mod flush_list;
mod frame;
mod free_list;
mod guard;
mod inner;
mod lru;
mod lru_ops;
mod manager;
mod miss;
mod page_hash;
mod poison;
mod policy;
mod pool;
mod prefault;
mod read_ahead;
mod reservation;
mod stats;
mod store;
pub mod testing;
mod write_behind;
mod zip;
mod zip_only;

pub use attach::{Attached, FrameNo, FrameStamp};
pub use config::{FreePagePolicy, PoolConfig, ReadAhead, MIN_CAPACITY_PAGES};
pub use error::{PoolError, StoreError};
pub use guard::{ExclusiveGuard, SharedGuard, ZipState};
pub use pool::BufferPool;
pub use reservation::FrameReservation;
pub use stats::{PoolStats, WaitSummary};
pub use store::{ImageList, PageImages, PageStore};
pub use write_behind::{WriteBehindWaker, WRITE_BEHIND_BATCH};
