//! Test doubles for code built on the pool (the engine's tests use them too).
//!
//! [`MemStore`] is an in-memory [`PageStore`]: a map of page images per space, with counters,
//! an optional artificial read delay and injectable read failures. It checks the WAL rule as
//! each page is written, and records every breach for the test to assert on.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed, Ordering::SeqCst};
use std::sync::Arc;
use std::time::Duration;

use barracuda_page::{page_lsn, Lsn, PageId, PageSize, SpaceId};
use parking_lot::Mutex;

use crate::{PageImages, PageStore, StoreError};

/// A function an eviction calls with the page it is about to evict
/// ([`BufferPool::set_eviction_probe`](crate::BufferPool::set_eviction_probe)).
pub type EvictionProbe = Arc<dyn Fn(PageId) + Send + Sync>;

/// Where a pool keeps its [`EvictionProbe`]; costs an eviction one relaxed load while unset.
#[derive(Default)]
pub(crate) struct ProbeSlot {
    set: AtomicBool,
    probe: Mutex<Option<EvictionProbe>>,
}

impl ProbeSlot {
    pub(crate) fn set(&self, probe: Option<EvictionProbe>) {
        let mut slot = self.probe.lock();
        self.set.store(probe.is_some(), SeqCst);
        *slot = probe;
    }

    /// Calls the probe, if one is set, with `id`.
    #[inline]
    pub(crate) fn fire(&self, id: PageId) {
        if self.set.load(Relaxed) {
            let probe = self.probe.lock().clone();
            if let Some(probe) = probe {
                probe(id);
            }
        }
    }
}

/// An in-memory page store.
///
/// Pages of a space created with [`create_space`](Self::create_space) that were never written
/// read as their [`stamp`](Self::stamp): the page's space id and page number (little-endian
/// `u32`s) in bytes 0..8, zeros elsewhere. Reads outside a space fail.
///
/// **WAL rule check.** The page LSN sits where the page format keeps it (bytes 16..24,
/// [`barracuda_page::page_lsn`]), as a mini-transaction stamps it. Every page handed to
/// [`write_pages`](PageStore::write_pages) whose LSN is above the highest LSN passed to
/// [`flush_log_up_to`](PageStore::flush_log_up_to) so far breaks the rule "the log is durable up
/// to a page's newest change before the page is written" (InnoDB: `buf_flush_write_block_low`
/// calls `log_write_up_to` first). The write still happens, so the pool's own behaviour is
/// undisturbed, but the breach is recorded at that moment and returned by
/// [`wal_violations`](Self::wal_violations), which tests assert is empty.
///
/// **Compressed blocks.** A space made with [`create_zip_space`](Self::create_zip_space) keeps
/// pages as blocks: an image of the block size that the pool writes is stored as the page's
/// block, and a read gives it back with the page it "holds" — by this store's toy codec, the
/// block's bytes followed by zeros. A page written whole is stored and read plain.
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
    wal_violations: Mutex<Vec<WalViolation>>,
    /// Block size per space of compressed blocks.
    zip_spaces: Mutex<HashMap<SpaceId, usize>>,
    /// The last block written per page (a page written whole since has none).
    blocks: Mutex<HashMap<PageId, Box<[u8]>>>,
    /// Spaces whose finished pages are queued for write-behind.
    write_behind_spaces: Mutex<HashSet<SpaceId>>,
    /// [`PageStore::write_barrier`]: `Lsn::MAX` (none) unless a test sets one.
    write_barrier: AtomicU64,
}

/// A page written before the log was durable up to its LSN (see [`MemStore`]).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct WalViolation {
    /// The page written.
    pub page: PageId,
    /// The LSN in the written image.
    pub page_lsn: Lsn,
    /// The log was durable up to this LSN when the page was written.
    pub durable_lsn: Lsn,
}

impl std::fmt::Display for WalViolation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} written with LSN {} while the log was durable only up to {}",
            self.page, self.page_lsn, self.durable_lsn
        )
    }
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
            wal_violations: Mutex::new(Vec::new()),
            zip_spaces: Mutex::new(HashMap::new()),
            blocks: Mutex::new(HashMap::new()),
            write_behind_spaces: Mutex::new(HashSet::new()),
            write_barrier: AtomicU64::new(Lsn::MAX),
        }
    }

    /// Makes [`PageStore::write_behind`] answer `on` for `space` (default: off).
    pub fn set_write_behind(&self, space: SpaceId, on: bool) {
        let mut spaces = self.write_behind_spaces.lock();
        if on {
            spaces.insert(space);
        } else {
            spaces.remove(&space);
        }
    }

    /// Sets [`PageStore::write_barrier`]: pages changed at or above `lsn` may not be written
    /// (`Lsn::MAX`: no barrier, the default).
    pub fn set_write_barrier(&self, lsn: Lsn) {
        self.write_barrier.store(lsn, SeqCst);
    }

    /// Creates `space` with `pages` pages kept as blocks of `block_bytes` (see the type's
    /// documentation).
    pub fn create_zip_space(&self, space: SpaceId, pages: u32, block_bytes: usize) {
        self.create_space(space, pages);
        self.zip_spaces.lock().insert(space, block_bytes);
    }

    /// The stored block of `id`, if its last write was a block.
    pub fn block(&self, id: PageId) -> Option<Vec<u8>> {
        self.blocks.lock().get(&id).map(|b| b.to_vec())
    }

    /// Creates (or resizes) `space` with `pages` pages.
    pub fn create_space(&self, space: SpaceId, pages: u32) {
        self.spaces.lock().insert(space, pages);
    }

    /// The image a never-written page reads as.
    pub fn stamp(&self, id: PageId) -> Vec<u8> {
        let mut page = vec![0u8; self.page_size.bytes()];
        let stamp = id
            .space_id
            .to_le_bytes()
            .into_iter()
            .chain(id.page_no.to_le_bytes());
        for (byte, value) in page.iter_mut().zip(stamp) {
            *byte = value;
        }
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

    /// Every write so far of a page whose LSN was above the durable log LSN, in write order.
    pub fn wal_violations(&self) -> Vec<WalViolation> {
        self.wal_violations.lock().clone()
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

    fn write_pages(&self, pages: &mut dyn PageImages) -> Result<(), StoreError> {
        self.write_calls.fetch_add(1, SeqCst);
        // The log only grows more durable, so a breach seen against this value is a breach.
        let durable_lsn = self.log_flushed_lsn.load(SeqCst);
        let mut map = self.pages.lock();
        for (id, bytes) in pages.iter() {
            let block_bytes = self.zip_block_bytes(id.space_id);
            let is_block = block_bytes == Some(bytes.len()) && bytes.len() < self.page_size.bytes();
            if bytes.len() != self.page_size.bytes() && !is_block {
                return Err(StoreError::new(id, MemStoreError::BadLength(bytes.len())));
            }
            let lsn = page_lsn(bytes).unwrap_or(0);
            if lsn > durable_lsn {
                self.wal_violations.lock().push(WalViolation {
                    page: id,
                    page_lsn: lsn,
                    durable_lsn,
                });
            }
            if is_block || block_bytes == Some(bytes.len()) {
                self.blocks.lock().insert(id, bytes.into());
                let mut page = bytes.to_vec();
                page.resize(self.page_size.bytes(), 0);
                map.insert(id, page.into());
            } else {
                self.blocks.lock().remove(&id);
                map.insert(id, bytes.into());
            }
            self.pages_written.fetch_add(1, SeqCst);
        }
        // Copied, as a real store copies before its I/O.
        pages.release();
        Ok(())
    }

    fn flush_log_up_to(&self, lsn: Lsn) -> Result<(), StoreError> {
        self.log_flushed_lsn.fetch_max(lsn, SeqCst);
        Ok(())
    }

    fn space_size_pages(&self, space: SpaceId) -> Option<u32> {
        self.spaces.lock().get(&space).copied()
    }

    fn write_behind(&self, space: SpaceId) -> bool {
        self.write_behind_spaces.lock().contains(&space)
    }

    fn write_barrier(&self) -> Lsn {
        self.write_barrier.load(SeqCst)
    }

    fn zip_block_bytes(&self, space: SpaceId) -> Option<usize> {
        self.zip_spaces.lock().get(&space).copied()
    }

    fn decompress_block(&self, id: PageId, block: &[u8], buf: &mut [u8]) -> Result<(), StoreError> {
        // The toy codec: the page is the block's bytes, then zeros.
        let Some(head) = buf.get_mut(..block.len()) else {
            return Err(StoreError::new(id, MemStoreError::BadLength(block.len())));
        };
        head.copy_from_slice(block);
        if let Some(tail) = buf.get_mut(block.len()..) {
            tail.fill(0);
        }
        Ok(())
    }

    fn read_page_with_block(
        &self,
        id: PageId,
        buf: &mut [u8],
        block: &mut [u8],
    ) -> Result<bool, StoreError> {
        self.read_page(id, buf)?;
        match self.blocks.lock().get(&id) {
            Some(stored) if stored.len() == block.len() => {
                block.copy_from_slice(stored);
                Ok(true)
            }
            _ => Ok(false),
        }
    }
}

#[cfg(test)]
mod tests {
    use barracuda_page::set_page_lsn;

    use super::*;
    use crate::ImageList;

    #[test]
    fn a_page_written_ahead_of_the_log_is_a_wal_violation() {
        let store = MemStore::new(PageSize::K4);
        store.create_space(1, 10);
        let (a, b) = (PageId::new(1, 1), PageId::new(1, 2));
        let mut page = store.stamp(a);
        set_page_lsn(&mut page, 50);
        store.flush_log_up_to(50).expect("log");
        store
            .write_pages(&mut ImageList::new(&[(a, &page)]))
            .expect("write");
        assert_eq!(
            store.wal_violations(),
            vec![],
            "log durable up to the page LSN"
        );
        set_page_lsn(&mut page, 51);
        store
            .write_pages(&mut ImageList::new(&[(b, &page)]))
            .expect("write");
        let expected = WalViolation {
            page: b,
            page_lsn: 51,
            durable_lsn: 50,
        };
        assert_eq!(store.wal_violations(), vec![expected]);
        assert!(expected.to_string().contains("LSN 51"), "{expected}");
        assert_eq!(
            store.page(b).expect("in space"),
            page,
            "the write still happened"
        );
    }
}
