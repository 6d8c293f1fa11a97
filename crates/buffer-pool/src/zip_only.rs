//! Compressed-only pages: a row-compressed page whose uncompressed frame was dropped while its
//! block stays in the pool (InnoDB: a `BUF_BLOCK_ZIP_PAGE` on the LRU, the other half of the
//! unzip LRU's choice, INNODB-FACTS §1.8).
//!
//! When a frame is needed and the LRU tail page has a block in step with its frame, the pool
//! either drops the frame alone — the block moves here, keyed by page id, and a later read
//! decompresses it into a new frame with no I/O — or frees the whole page. InnoDB's rule
//! decides (`buf_LRU_evict_from_unzip_LRU`): drop frames only while pages with both copies are
//! more than a tenth of all compressed pages held, and the workload looks I/O-bound — no
//! eviction yet, or decompressions per second at most 50 times the pages read per second
//! (averaged over the last 50 seconds). Otherwise the oldest compressed-only pages go first
//! (in InnoDB they sit at the LRU's tail, where their frames were dropped), then whole pages.
//!
//! Decompressing a compressed-only page needs a free frame like any read, through the same
//! free-page policy: this is where `Backoff` stalls without any I/O (INNODB-FACTS §1.6).
//!
//! Only clean pages lose their frame (a dirty one is written first, as any eviction requires),
//! so a compressed-only page never needs writing. Lock order: `lists` → page-hash shard →
//! `zip_only` → the block allocator.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::time::{Duration, Instant};

use barracuda_page::{PageId, SpaceId};
use parking_lot::Mutex;

use crate::buddy::ZipSlot;
use crate::inner::Inner;
use crate::stats::inc;

/// The compressed-only pages, oldest first.
#[derive(Default)]
pub(crate) struct ZipOnly {
    by_id: HashMap<PageId, (ZipSlot, u64)>,
    by_age: BTreeMap<u64, PageId>,
    next: u64,
}

impl ZipOnly {
    pub(crate) fn len(&self) -> usize {
        self.by_id.len()
    }

    pub(crate) fn contains(&self, id: PageId) -> bool {
        self.by_id.contains_key(&id)
    }

    /// Adds `id`'s block; returns a block it had here already (for the caller to free: a page
    /// is compressed-only at most once, so this is defence, not a path taken).
    fn insert(&mut self, id: PageId, slot: ZipSlot) -> Option<ZipSlot> {
        self.next += 1;
        let old = self.by_id.insert(id, (slot, self.next));
        if let Some((_, age)) = old {
            self.by_age.remove(&age);
        }
        self.by_age.insert(self.next, id);
        old.map(|(slot, _)| slot)
    }

    fn take(&mut self, id: PageId) -> Option<ZipSlot> {
        let (slot, age) = self.by_id.remove(&id)?;
        self.by_age.remove(&age);
        Some(slot)
    }

    fn pop_oldest(&mut self) -> Option<ZipSlot> {
        let (_, id) = self.by_age.pop_first()?;
        self.by_id.remove(&id).map(|(slot, _)| slot)
    }

    fn remove_space(&mut self, space: SpaceId) -> Vec<ZipSlot> {
        let ids: Vec<PageId> = self
            .by_id
            .keys()
            .filter(|id| id.space_id == space)
            .copied()
            .collect();
        ids.into_iter().filter_map(|id| self.take(id)).collect()
    }
}

/// Slots of the I/O and decompression history (InnoDB: `BUF_LRU_STAT_N_INTERVAL`), one per
/// second.
const INTERVALS: usize = 50;
/// One page read is weighed like this many decompressions (`BUF_LRU_IO_TO_UNZIP_FACTOR`).
const IO_TO_UNZIP_FACTOR: u64 = 50;
/// Compressed-only pages freed per frame request at most, hoping one empties a frame of the
/// block allocator (blocks of different pages share frames).
const MAX_BLOCKS_FREED_PER_FRAME: usize = 64;

/// Pages the LRU must hold before frames are dropped for compressed-only pages: a tiny pool
/// keeps its frames for the pages being changed.
const MIN_LRU_FOR_FRAME_ONLY: usize = 16;

/// Pages read and pages decompressed, per second over the last [`INTERVALS`] seconds
/// (InnoDB: `buf_LRU_stat_cur`, `buf_LRU_stat_sum`, `buf_LRU_stat_arr`).
pub(crate) struct UnzipRates {
    io_cur: AtomicU64,
    unzip_cur: AtomicU64,
    history: Mutex<History>,
}

struct History {
    io: [u64; INTERVALS],
    unzip: [u64; INTERVALS],
    at: usize,
    io_sum: u64,
    unzip_sum: u64,
    rotated: Instant,
}

impl UnzipRates {
    pub(crate) fn new() -> Self {
        Self {
            io_cur: AtomicU64::new(0),
            unzip_cur: AtomicU64::new(0),
            history: Mutex::new(History {
                io: [0; INTERVALS],
                unzip: [0; INTERVALS],
                at: 0,
                io_sum: 0,
                unzip_sum: 0,
                rotated: Instant::now(),
            }),
        }
    }

    pub(crate) fn note_io(&self) {
        self.io_cur.fetch_add(1, Relaxed);
    }

    pub(crate) fn note_unzip(&self) {
        self.unzip_cur.fetch_add(1, Relaxed);
    }

    /// Moves the current second into the history once a second has passed (the LRU manager
    /// calls it every round; InnoDB's monitor thread calls `buf_LRU_stat_update`).
    pub(crate) fn rotate_if_due(&self) {
        let mut h = self.history.lock();
        if h.rotated.elapsed() < Duration::from_secs(1) {
            return;
        }
        h.rotated = Instant::now();
        let io = self.io_cur.swap(0, Relaxed);
        let unzip = self.unzip_cur.swap(0, Relaxed);
        let at = h.at;
        let History {
            io: ios,
            unzip: unzips,
            io_sum,
            unzip_sum,
            ..
        } = &mut *h;
        if let (Some(old_io), Some(old_unzip)) = (ios.get_mut(at), unzips.get_mut(at)) {
            *io_sum = *io_sum - *old_io + io;
            *unzip_sum = *unzip_sum - *old_unzip + unzip;
            *old_io = io;
            *old_unzip = unzip;
        }
        h.at = (at + 1) % INTERVALS;
    }

    /// Whether decompressing is cheap next to reading: `unzip_avg ≤ io_avg × 50`.
    fn io_bound(&self) -> bool {
        let h = self.history.lock();
        let io_avg = h.io_sum / INTERVALS as u64 + self.io_cur.load(Relaxed);
        let unzip_avg = h.unzip_sum / INTERVALS as u64 + self.unzip_cur.load(Relaxed);
        unzip_avg <= io_avg * IO_TO_UNZIP_FACTOR
    }
}

impl Inner {
    /// InnoDB's choice (INNODB-FACTS §1.8): drop only the uncompressed frame of a page with a
    /// block, rather than free a whole page? `lru_len` is the LRU's length now.
    pub(crate) fn evict_frame_only(&self, lru_len: usize) -> bool {
        // Not in a pool too small to spare frames, and not for blocks of a whole page (the
        // block would hold as much memory as the frame it frees).
        if lru_len < MIN_LRU_FOR_FRAME_ONLY || self.zip_whole_frames.load(Relaxed) > 0 {
            return false;
        }
        let zip_only = self.zip_only_len.load(Relaxed);
        let with_frames = self.zip_blocks_live.load(Relaxed).saturating_sub(zip_only);
        if with_frames == 0 || with_frames * 10 <= lru_len + zip_only {
            return false;
        }
        self.freed_page_clock.load(Relaxed) == 0 || self.unzip_rates.io_bound()
    }

    /// Keeps the block of page `id` (frame `f`, being evicted, its block in step) as a
    /// compressed-only page. Called under `lists` and the page's hash shard, before the page
    /// leaves the hash: a reader that misses the hash finds the block here.
    pub(crate) fn keep_block_of(&self, f: u32, id: PageId) -> bool {
        let d = &self.frames.frame(f).desc;
        let Some(link) = d.zip_link() else {
            return false;
        };
        if link.stale {
            return false;
        }
        let replaced = {
            let mut zip_only = self.zip_only.lock();
            let replaced = zip_only.insert(id, link.slot);
            self.zip_only_len.store(zip_only.len(), Relaxed);
            replaced
        };
        d.set_zip_link(None);
        inc(&self.counters.frames_dropped_keeping_block);
        if let Some(old) = replaced {
            tracing::error!(page = %id, "a page was compressed-only twice");
            if let Some(g) = self.zip_release(old) {
                self.push_free(g);
            }
        }
        true
    }

    /// The block of compressed-only page `id`, taken back for a read that owns the page's
    /// hash entry.
    pub(crate) fn take_zip_only(&self, id: PageId) -> Option<ZipSlot> {
        // No lock when there are none (every page of an uncompressed table that is created or
        // read): `keep_block_of` counts a page's block under the page's hash shard before the
        // page leaves the hash, and the caller has since taken that shard to insert `id`, so a
        // count that includes `id`'s block is visible here; only the entry's owner takes it.
        if self.zip_only_len.load(Relaxed) == 0 {
            return None;
        }
        let mut zip_only = self.zip_only.lock();
        let slot = zip_only.take(id);
        self.zip_only_len.store(zip_only.len(), Relaxed);
        slot
    }

    /// Whether page `id` is compressed-only now (a hint: it may be taken meanwhile).
    pub(crate) fn is_zip_only(&self, id: PageId) -> bool {
        self.zip_only_len.load(Relaxed) > 0 && self.zip_only.lock().contains(id)
    }

    /// Frees the oldest compressed-only pages until the block allocator gives a frame back
    /// (or [`MAX_BLOCKS_FREED_PER_FRAME`] are freed); the frame goes to the caller.
    pub(crate) fn free_zip_only_for_frame(&self) -> Option<u32> {
        for _ in 0..MAX_BLOCKS_FREED_PER_FRAME {
            let slot = {
                let mut zip_only = self.zip_only.lock();
                let slot = zip_only.pop_oldest();
                self.zip_only_len.store(zip_only.len(), Relaxed);
                slot?
            };
            inc(&self.counters.zip_only_freed);
            if let Some(f) = self.zip_release(slot) {
                return Some(f);
            }
        }
        None
    }

    /// Drops the compressed-only pages of `space` (its tablespace is gone).
    pub(crate) fn discard_zip_only(&self, space: SpaceId) {
        let slots = {
            let mut zip_only = self.zip_only.lock();
            let slots = zip_only.remove_space(space);
            self.zip_only_len.store(zip_only.len(), Relaxed);
            slots
        };
        for slot in slots {
            if let Some(f) = self.zip_release(slot) {
                self.return_free(f);
            }
        }
    }
}

/// Compressed-only pages held now.
pub(crate) fn zip_only_len(inner: &Inner) -> usize {
    inner.zip_only_len.load(Relaxed)
}

/// A fresh gauge of compressed-only pages.
pub(crate) fn gauge() -> AtomicUsize {
    AtomicUsize::new(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decompressing_is_cheap_until_it_is_fifty_times_the_reads() {
        let rates = UnzipRates::new();
        assert!(rates.io_bound(), "nothing measured: assume disk-bound");
        for _ in 0..10 {
            rates.note_io();
        }
        for _ in 0..500 {
            rates.note_unzip();
        }
        assert!(rates.io_bound(), "500 <= 10 x 50");
        rates.note_unzip();
        assert!(!rates.io_bound(), "501 > 10 x 50");
    }

    #[test]
    fn compressed_only_pages_leave_oldest_first() {
        let slot = |frame| ZipSlot {
            frame,
            offset: 0,
            shift: 10,
        };
        let mut z = ZipOnly::default();
        assert_eq!(z.insert(PageId::new(1, 1), slot(1)), None);
        assert_eq!(z.insert(PageId::new(1, 2), slot(2)), None);
        assert_eq!(z.insert(PageId::new(2, 3), slot(3)), None);
        // Again: the old block is handed back, the page is now the newest.
        assert_eq!(z.insert(PageId::new(1, 1), slot(4)), Some(slot(1)));
        assert_eq!(z.len(), 3);
        assert_eq!(z.pop_oldest(), Some(slot(2)));
        assert_eq!(z.remove_space(2), vec![slot(3)]);
        assert_eq!(z.take(PageId::new(1, 1)), Some(slot(4)));
        assert_eq!(z.pop_oldest(), None);
    }
}
