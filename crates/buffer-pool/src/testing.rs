//! Test doubles for code built on the pool (the engine's tests use them too).
//!
//! [`MemStore`] is an in-memory [`PageStore`]: a map of page images per space, with counters,
//! an optional artificial read delay and injectable read failures.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::time::Duration;

use barracuda_page::{Lsn, PageId, PageSize, SpaceId};
use parking_lot::Mutex;

use crate::{PageStore, StoreError};

/// An in-memory page store.
///
/// Pages of a space created with [`create_space`](Self::create_space) that were never written
/// read as their [`stamp`](Self::stamp): the page's space id and page number (little-endian
/// `u32`s) in bytes 0..8, zeros elsewhere. Reads outside a space fail.
pub struct MemStore {
    page_size: PageSize,
    pages: Mutex<HashMap<PageId, Box<[u8]>>>,
    spaces: Mutex<HashMap<SpaceId, u32>>,
    failing: Mutex<HashSet<PageId>>,
    read_delay_us: AtomicU64,
    reads: AtomicU64,
    pages_written: AtomicU64,
    write_calls: AtomicU64,
    log_flushed_lsn: AtomicU64,
    read_counts: Mutex<HashMap<PageId, u64>>,
}

impl std::fmt::Debug for MemStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemStore")
            .field("page_size", &self.page_size)
            .field("reads", &self.reads())
            .field("pages_written", &self.pages_written())
            .finish_non_exhaustive()
    }
}

impl MemStore {
    /// An empty store of `page_size` pages.
    pub fn new(page_size: PageSize) -> Self {
        Self {
            page_size,
            pages: Mutex::new(HashMap::new()),
            spaces: Mutex::new(HashMap::new()),
            failing: Mutex::new(HashSet::new()),
            read_delay_us: AtomicU64::new(0),
            reads: AtomicU64::new(0),
            pages_written: AtomicU64::new(0),
            write_calls: AtomicU64::new(0),
            log_flushed_lsn: AtomicU64::new(0),
            read_counts: Mutex::new(HashMap::new()),
        }
    }

    /// Creates (or resizes) `space` with `pages` pages.
    pub fn create_space(&self, space: SpaceId, pages: u32) {
        self.spaces.lock().insert(space, pages);
    }

    /// The image a never-written page reads as.
    pub fn stamp(&self, id: PageId) -> Vec<u8> {
        let mut page = vec![0u8; self.page_size.bytes()];
        page[0..4].copy_from_slice(&id.space_id.to_le_bytes());
        page[4..8].copy_from_slice(&id.page_no.to_le_bytes());
        page
    }

    /// The stored image of `id` (its stamp if never written), `None` outside any space.
    pub fn page(&self, id: PageId) -> Option<Vec<u8>> {
        if !self.in_space(id) {
            return None;
        }
        Some(
            self.pages
                .lock()
                .get(&id)
                .map_or_else(|| self.stamp(id), |p| p.to_vec()),
        )
    }

    /// Makes every read take at least `delay` (simulates a disk).
    pub fn set_read_delay(&self, delay: Duration) {
        self.read_delay_us
            .store(u64::try_from(delay.as_micros()).unwrap_or(u64::MAX), SeqCst);
    }

    /// Makes reads of `id` fail (`true`) or succeed again (`false`).
    pub fn fail_reads_of(&self, id: PageId, fail: bool) {
        if fail {
            self.failing.lock().insert(id);
        } else {
            self.failing.lock().remove(&id);
        }
    }

    /// Page reads served.
    pub fn reads(&self) -> u64 {
        self.reads.load(SeqCst)
    }

    /// Times page `id` was read.
    pub fn reads_of(&self, id: PageId) -> u64 {
        self.read_counts.lock().get(&id).copied().unwrap_or(0)
    }

    /// Page images written.
    pub fn pages_written(&self) -> u64 {
        self.pages_written.load(SeqCst)
    }

    /// `write_pages` calls.
    pub fn write_calls(&self) -> u64 {
        self.write_calls.load(SeqCst)
    }

    /// Highest LSN passed to `flush_log_up_to`.
    pub fn log_flushed_lsn(&self) -> Lsn {
        self.log_flushed_lsn.load(SeqCst)
    }

    fn in_space(&self, id: PageId) -> bool {
        self.spaces
            .lock()
            .get(&id.space_id)
            .is_some_and(|&n| id.page_no < n)
    }
}

/// The error [`MemStore`] returns.
#[derive(Debug, thiserror::Error)]
pub enum MemStoreError {
    /// The page is outside every space.
    #[error("no such page")]
    NoSuchPage,
    /// A read failure injected with [`MemStore::fail_reads_of`].
    #[error("injected read failure")]
    Injected,
    /// A buffer of the wrong length.
    #[error("buffer of {0} bytes is not one page")]
    BadLength(usize),
}

impl PageStore for MemStore {
    fn read_page(&self, id: PageId, buf: &mut [u8]) -> Result<(), StoreError> {
        let delay = self.read_delay_us.load(SeqCst);
        if delay > 0 {
            std::thread::sleep(Duration::from_micros(delay));
        }
        if buf.len() != self.page_size.bytes() {
            return Err(StoreError::new(id, MemStoreError::BadLength(buf.len())));
        }
        if self.failing.lock().contains(&id) {
            return Err(StoreError::new(id, MemStoreError::Injected));
        }
        if !self.in_space(id) {
            return Err(StoreError::new(id, MemStoreError::NoSuchPage));
        }
        match self.pages.lock().get(&id) {
            Some(p) => buf.copy_from_slice(p),
            None => buf.copy_from_slice(&self.stamp(id)),
        }
        self.reads.fetch_add(1, SeqCst);
        *self.read_counts.lock().entry(id).or_insert(0) += 1;
        Ok(())
    }

    fn write_pages(&self, pages: &[(PageId, &[u8])]) -> Result<(), StoreError> {
        self.write_calls.fetch_add(1, SeqCst);
        let mut map = self.pages.lock();
        for &(id, bytes) in pages {
            if bytes.len() != self.page_size.bytes() {
                return Err(StoreError::new(id, MemStoreError::BadLength(bytes.len())));
            }
            map.insert(id, bytes.into());
            self.pages_written.fetch_add(1, SeqCst);
        }
        Ok(())
    }

    fn flush_log_up_to(&self, lsn: Lsn) -> Result<(), StoreError> {
        self.log_flushed_lsn.fetch_max(lsn, SeqCst);
        Ok(())
    }

    fn space_size_pages(&self, space: SpaceId) -> Option<u32> {
        self.spaces.lock().get(&space).copied()
    }
}
