//! The pool's shared state and its core operations: page lookup, creation,
//! access bookkeeping (make young), eviction and discarding (misses: `miss.rs`).
//!
//! Lock order (never acquired the other way round):
//! `lists` (the LRU) → page-hash shard → `flush_list`; the free list's mutex is a leaf (nothing
//! is taken under it), so it may be taken under any of them.
//! A page latch is only taken while holding a pin; a thread holding a pool mutex never *waits*
//! for a page latch (it uses `try_*`), so latch holders can always make progress.

use std::sync::atomic::{
    AtomicBool, AtomicU32, AtomicU64, AtomicU8, AtomicUsize,
    Ordering::{Relaxed, SeqCst},
};
use std::sync::Arc;
use std::time::{Duration, Instant};

use barracuda_page::{Lsn, PageId, PageSize, SpaceId};
use parking_lot::Mutex;

use crate::attach::FrameNo;
use crate::config::{effective_scan_depth, old_ratio_of_pct};
use crate::descriptor::State;
use crate::flush_list::FlushList;
use crate::frame::{Frame, Frames};
use crate::free_list::FreeList;
use crate::guard::{ExclusiveGuard, Pin, SharedGuard};
use crate::lru::{Lru, OldFlags, NIL, OLD_RATIO_DIV};
use crate::manager::ManagerSignal;
use crate::page_hash::{remove_locked, PageHash};
use crate::read_ahead::ReadAheadQueue;
use crate::stats::{inc, Counters, WaitHistogram};
use crate::{FreePagePolicy, PageStore, PoolConfig, PoolError};

/// The LRU list under its mutex (InnoDB 5.6: `buf_pool->mutex`, which also guards the free
/// list; Percona splits it into `LRU_list_mutex` and `free_list_mutex`, and so do we: a miss
/// takes a free frame without waiting behind an LRU batch that holds this mutex).
pub(crate) struct Lists {
    pub(crate) lru: Lru,
    /// Evictions so far (InnoDB: `buf_pool->freed_page_clock`).
    pub(crate) freed_page_clock: u64,
}

/// What an access does to a page's place in the LRU.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Due {
    /// Move it to the head.
    Young,
    /// An old page accessed within `old_blocks_time`: it stays old (counted).
    KeptOld,
    /// Near enough the head, or nothing evicted yet: leave it.
    Stay,
}

/// When a page was first accessed, as the old sublist's `old_blocks_time` rule sees it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum FirstAccess {
    /// Milliseconds since the pool's epoch (+1), as `Descriptor::first_access_ms`.
    At(u64),
    /// A page shown hot otherwise (its attached value is in use, `attach.rs`): the window,
    /// there to keep a scan's pages old, does not apply.
    Proven,
}

/// Who evicts a page (for the counters).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Evictor {
    User,
    Manager,
}

/// Shared state of a buffer pool; the public [`BufferPool`](crate::BufferPool) and the background
/// threads each hold an `Arc` of it.
pub(crate) struct Inner {
    pub(crate) page_size: PageSize,
    pub(crate) capacity: usize,
    pub(crate) frames: Frames,
    pub(crate) hash: PageHash,
    /// Taken only through [`lock_lists`](Self::lock_lists) / [`try_lock_lists`](Self::try_lock_lists),
    /// which apply the LRU changes deferred while it was busy (`lru_ops.rs`).
    pub(crate) lists: Mutex<Lists>,
    /// The free list (Percona: `free_list_mutex`); a leaf lock held only to push or pop.
    free: Mutex<FreeList>,
    /// LRU changes that found `lists` busy, for its next holder to apply (`lru_ops.rs`).
    pub(crate) lru_deferred: crate::lru_ops::Deferred,
    /// The LRU's old flags, readable without `lists`.
    pub(crate) old_flags: Arc<OldFlags>,
    /// Mirror of the free list length.
    pub(crate) free_len: AtomicUsize,
    /// Mirror of `Lists::freed_page_clock`.
    pub(crate) freed_page_clock: AtomicU64,
    pub(crate) flush_list: Mutex<FlushList>,
    /// Bumped at every clean → dirty transition (under `flush_list`); `flush_all` uses it to
    /// flush exactly the pages dirty when it started.
    pub(crate) dirty_epoch: AtomicU64,
    pub(crate) store: Arc<dyn PageStore>,
    policy: AtomicU8,
    lru_scan_depth: AtomicUsize,
    pub(crate) old_ratio: AtomicU32,
    old_blocks_time_ms: AtomicU64,
    /// Linear read-ahead threshold (of 64), `u32::MAX` = off.
    pub(crate) ra_linear: AtomicU32,
    pub(crate) ra_random: AtomicBool,
    pub(crate) all_pinned_timeout: Duration,
    /// Exclusive guards copy their page before its first change (`PoolConfig`).
    pub(crate) capture_before_images: bool,
    /// See [`PoolConfig::keep_described_from`].
    pub(crate) keep_described_from: bool,
    /// InnoDB `buf_pool->try_LRU_scan`: cleared when a user thread's first 100-page scan failed,
    /// set again after an LRU batch.
    pub(crate) try_lru_scan: AtomicBool,
    pub(crate) counters: Counters,
    pub(crate) wait_hist: WaitHistogram,
    epoch: Instant,
    pub(crate) shutdown: AtomicBool,
    pub(crate) manager: ManagerSignal,
    pub(crate) manager_running: AtomicBool,
    /// Frames taken from the free list or by direct eviction (Eager's consumption rate).
    pub(crate) frames_taken: AtomicU64,
    /// Eager: wake the manager when the free list is shorter than this.
    pub(crate) eager_low_watermark: AtomicUsize,
    /// Eager: a thread that takes a frame frees one clean page itself while the free list is
    /// shorter than this (`policy/eager.rs`).
    pub(crate) eager_high_watermark: AtomicUsize,
    pub(crate) read_ahead: ReadAheadQueue,
    /// The frame prefaulter's state (`prefault.rs`).
    pub(crate) prefault: crate::prefault::Prefault,
    /// [`PoolConfig::flush_all_writers`].
    pub(crate) flush_all_writers: usize,
    /// Pages queued for write-behind (`write_behind.rs`).
    pub(crate) write_behind: crate::write_behind::WriteBehind,
    /// Set when a half-done change is in memory: no page is written any more (`poison.rs`).
    pub(crate) write_stop: crate::poison::WriteStop,
    /// The allocator of compressed pages' blocks (`zip.rs`).
    pub(crate) zip: Mutex<crate::buddy::BuddyAllocator>,
    /// Frames lent whole to blocks of a page's size (not the allocator's).
    pub(crate) zip_whole_frames: AtomicUsize,
    /// Blocks handed out and not freed (pages with a block, compressed-only pages).
    pub(crate) zip_blocks_live: AtomicUsize,
    /// Compressed-only pages (`zip_only.rs`), and their count readable without the mutex.
    pub(crate) zip_only: Mutex<crate::zip_only::ZipOnly>,
    pub(crate) zip_only_len: AtomicUsize,
    /// Pages read and decompressed per second, for the unzip LRU's choice.
    pub(crate) unzip_rates: crate::zip_only::UnzipRates,
    /// Tests' hook into eviction ([`BufferPool::set_eviction_probe`](crate::BufferPool::set_eviction_probe)).
    pub(crate) eviction_probe: crate::testing::ProbeSlot,
}

impl Inner {
    pub(crate) fn new(config: PoolConfig, store: Arc<dyn PageStore>) -> Result<Self, PoolError> {
        let capacity = config.capacity_pages;
        if capacity < crate::config::MIN_CAPACITY_PAGES {
            return Err(PoolError::InvalidConfig(format!(
                "capacity of {capacity} pages is below the minimum of {}",
                crate::config::MIN_CAPACITY_PAGES
            )));
        }
        if capacity >= NIL as usize {
            return Err(PoolError::InvalidConfig(format!(
                "capacity of {capacity} pages is too large"
            )));
        }
        let old_ratio = old_ratio_of_pct(config.old_blocks_pct);
        let lru = Lru::new(capacity, old_ratio);
        let old_flags = lru.old_flags();
        let frames = Frames::new(config.page_size, capacity)?;
        let depth = effective_scan_depth(config.lru_scan_depth, capacity);
        Ok(Self {
            page_size: config.page_size,
            capture_before_images: config.capture_before_images,
            keep_described_from: config.keep_described_from,
            capacity,
            frames,
            hash: PageHash::new(config.page_hash_shards, capacity),
            lists: Mutex::new(Lists {
                lru,
                freed_page_clock: 0,
            }),
            free: Mutex::new(FreeList::full(capacity)),
            lru_deferred: crate::lru_ops::Deferred::default(),
            old_flags,
            free_len: AtomicUsize::new(capacity),
            freed_page_clock: AtomicU64::new(0),
            flush_list: Mutex::new(FlushList::default()),
            dirty_epoch: AtomicU64::new(0),
            store,
            policy: AtomicU8::new(config.policy.to_u8()),
            lru_scan_depth: AtomicUsize::new(config.lru_scan_depth),
            old_ratio: AtomicU32::new(old_ratio),
            old_blocks_time_ms: AtomicU64::new(duration_ms(config.old_blocks_time)),
            ra_linear: AtomicU32::new(
                config
                    .read_ahead
                    .linear_threshold
                    .map_or(u32::MAX, |t| t.min(64)),
            ),
            ra_random: AtomicBool::new(config.read_ahead.random),
            all_pinned_timeout: config.all_pinned_timeout,
            try_lru_scan: AtomicBool::new(true),
            counters: Counters::default(),
            wait_hist: WaitHistogram::new(),
            epoch: Instant::now(),
            shutdown: AtomicBool::new(false),
            manager: ManagerSignal::new(),
            manager_running: AtomicBool::new(false),
            frames_taken: AtomicU64::new(0),
            eager_low_watermark: AtomicUsize::new((depth / 16).max(1)),
            eager_high_watermark: AtomicUsize::new((depth / 8).max(2)),
            read_ahead: ReadAheadQueue::new(),
            prefault: crate::prefault::Prefault::new(),
            write_behind: crate::write_behind::WriteBehind::new(),
            flush_all_writers: config.flush_all_writers,
            write_stop: crate::poison::WriteStop::default(),
            zip: crate::zip::new_allocator(config.page_size),
            zip_whole_frames: AtomicUsize::new(0),
            zip_blocks_live: AtomicUsize::new(0),
            zip_only: Mutex::new(crate::zip_only::ZipOnly::default()),
            zip_only_len: crate::zip_only::gauge(),
            unzip_rates: crate::zip_only::UnzipRates::new(),
            eviction_probe: crate::testing::ProbeSlot::default(),
        })
    }

    // ---- tunables -------------------------------------------------------------------------

    pub(crate) fn policy(&self) -> FreePagePolicy {
        FreePagePolicy::from_u8(self.policy.load(Relaxed))
    }

    pub(crate) fn set_policy(&self, policy: FreePagePolicy) {
        if self.policy.swap(policy.to_u8(), SeqCst) != policy.to_u8() {
            self.manager.policy_changed();
        }
    }

    /// The LRU scan depth in use (see [`effective_scan_depth`]).
    pub(crate) fn scan_depth(&self) -> usize {
        effective_scan_depth(self.lru_scan_depth.load(Relaxed), self.capacity)
    }

    pub(crate) fn set_scan_depth(&self, depth: usize) {
        self.lru_scan_depth.store(depth, Relaxed);
    }

    pub(crate) fn set_old_blocks_pct(&self, pct: u32) {
        let ratio = old_ratio_of_pct(pct);
        let mut lists = self.lock_lists();
        self.old_ratio.store(ratio, Relaxed);
        lists.lru.set_old_ratio(ratio);
    }

    pub(crate) fn set_old_blocks_time(&self, time: Duration) {
        self.old_blocks_time_ms.store(duration_ms(time), Relaxed);
    }

    /// Milliseconds since the pool started, plus one (0 means "never").
    pub(crate) fn now_ms(&self) -> u64 {
        duration_ms(self.epoch.elapsed()) + 1
    }

    // ---- lookups and misses -----------------------------------------------------------------

    /// Pins and latches page `id`, reading it on a miss. InnoDB: `buf_page_get_gen`.
    pub(crate) fn fetch_shared(&self, id: PageId) -> Result<SharedGuard<'_>, PoolError> {
        inc(&self.counters.page_requests);
        loop {
            if let Some(f) = self.hash.lookup_pin(id, &self.frames) {
                let frame = &self.frames.frame(f);
                let pin = Pin::new(&frame.desc);
                let latch = frame.latch.read();
                if frame.desc.state() == State::Valid && frame.desc.page_id() == id {
                    if frame.desc.poisoned.load(Relaxed) {
                        return Err(PoolError::PoisonedPage { page: id });
                    }
                    self.after_hit(f, id);
                    return Ok(SharedGuard::new(latch, pin, id, f));
                }
                continue; // read failed or page discarded meanwhile: look again
            }
            if let Some(guard) = self.read_in(id)? {
                return Ok(guard.downgrade());
            }
        }
    }

    /// [`fetch_shared`](Self::fetch_shared) through a frame hint instead of the page hash:
    /// `None` if `frame` does not hold `id` (the caller looks the page up). InnoDB keeps no such
    /// hint; LeanStore's swizzled pointers are the same idea.
    ///
    /// The pin is taken without the shard lock, so it may land on a frame being evicted or
    /// reused: pins are therefore only ever added and subtracted (`Descriptor::init_for` adds
    /// its own), and the frame is taken for `id` only if, under its latch, it is `Valid` and
    /// holds `id` — every change of a frame's page leaves `Valid` under the exclusive latch
    /// (eviction, `try_evict_locked`) and re-enters it under that latch once the bytes are in.
    pub(crate) fn fetch_shared_at(
        &self,
        id: PageId,
        frame: FrameNo,
    ) -> Result<Option<SharedGuard<'_>>, PoolError> {
        Ok(self
            .latch_at(id, frame, |frame| Some(frame.latch.read()))?
            .map(|(f, pin, latch)| SharedGuard::new(latch, pin, id, f)))
    }

    /// [`try_fetch_shared`](Self::try_fetch_shared) through a frame hint: `None` when `frame`
    /// does not hold `id` or its latch is held exclusively (nothing is read, nothing waited for).
    pub(crate) fn try_fetch_shared_at(
        &self,
        id: PageId,
        frame: FrameNo,
    ) -> Result<Option<SharedGuard<'_>>, PoolError> {
        Ok(self
            .latch_at(id, frame, |frame| frame.latch.try_read())?
            .map(|(f, pin, latch)| SharedGuard::new(latch, pin, id, f)))
    }

    /// [`fetch_exclusive`](Self::fetch_exclusive) through a frame hint: `None` when `frame`
    /// does not hold `id` (nothing is read).
    pub(crate) fn fetch_exclusive_at(
        &self,
        id: PageId,
        frame: FrameNo,
    ) -> Result<Option<ExclusiveGuard<'_>>, PoolError> {
        Ok(self
            .latch_at(id, frame, |frame| Some(frame.latch.write()))?
            .map(|(f, pin, latch)| ExclusiveGuard::new(self, f, latch, pin, id)))
    }

    /// [`fetch_exclusive_at`](Self::fetch_exclusive_at) only if the latch is free: `None` when
    /// `frame` does not hold `id` or its latch is held (nothing is read, nothing waited for).
    pub(crate) fn try_fetch_exclusive_at(
        &self,
        id: PageId,
        frame: FrameNo,
    ) -> Result<Option<ExclusiveGuard<'_>>, PoolError> {
        Ok(self
            .latch_at(id, frame, |frame| frame.latch.try_write())?
            .map(|(f, pin, latch)| ExclusiveGuard::new(self, f, latch, pin, id)))
    }

    /// The hinted fetches' common part: pins `frame` and takes its latch with `latch` if it
    /// holds `id` (checked before the pin and again under the latch), counting the hit. `None`
    /// when it does not hold `id`, or `latch` gave no latch.
    #[inline]
    fn latch_at<'a, L>(
        &'a self,
        id: PageId,
        frame: FrameNo,
        latch: impl FnOnce(&'a Frame) -> Option<L>,
    ) -> Result<Option<(u32, Pin<'a>, L)>, PoolError> {
        let f = frame.index();
        if f as usize >= self.capacity {
            return Ok(None);
        }
        // The page's loads start beside the descriptor's (as a hash lookup does).
        self.frames.prefetch_page(f);
        let frame = self.frames.frame(f);
        let d = &frame.desc;
        // Not worth a pin if it already shows another page.
        if d.state() != State::Valid || d.page_id() != id {
            return Ok(None);
        }
        d.pin();
        let pin = Pin::new(d);
        let Some(latch) = latch(frame) else {
            return Ok(None);
        };
        if d.state() != State::Valid || d.page_id() != id {
            return Ok(None);
        }
        if d.poisoned.load(Relaxed) {
            return Err(PoolError::PoisonedPage { page: id });
        }
        inc(&self.counters.page_requests);
        self.after_hit(f, id);
        Ok(Some((f, pin, latch)))
    }

    /// [`fetch_shared`](Self::fetch_shared) only if it needs no wait: `None` when the page is
    /// not in the pool, is being read, or its latch is held exclusively. For a thread that
    /// holds another page's latch and must not wait for this one (a scan stepping to the right
    /// sibling while writers may latch right to left under their parent).
    pub(crate) fn try_fetch_shared(
        &self,
        id: PageId,
    ) -> Result<Option<SharedGuard<'_>>, PoolError> {
        Ok(self
            .try_latch_looked_up(id, |frame| frame.latch.try_read())?
            .map(|(f, pin, latch)| SharedGuard::new(latch, pin, id, f)))
    }

    /// [`try_fetch_shared`](Self::try_fetch_shared) with an exclusive latch: `None` when the
    /// page is not in the pool, is being read, or its latch is held.
    pub(crate) fn try_fetch_exclusive(
        &self,
        id: PageId,
    ) -> Result<Option<ExclusiveGuard<'_>>, PoolError> {
        Ok(self
            .try_latch_looked_up(id, |frame| frame.latch.try_write())?
            .map(|(f, pin, latch)| ExclusiveGuard::new(self, f, latch, pin, id)))
    }

    /// The non-waiting fetches' common part (as [`latch_at`](Self::latch_at) is the hinted
    /// ones'): looks `id` up and pins its frame, takes its latch with `latch` if that needs no
    /// wait, and checks the frame still holds `id`, counting the hit. `None` when the page is
    /// not in the pool or `latch` gave no latch.
    #[inline]
    fn try_latch_looked_up<'a, L>(
        &'a self,
        id: PageId,
        latch: impl FnOnce(&'a Frame) -> Option<L>,
    ) -> Result<Option<(u32, Pin<'a>, L)>, PoolError> {
        let Some(f) = self.hash.lookup_pin(id, &self.frames) else {
            return Ok(None);
        };
        let frame = self.frames.frame(f);
        let pin = Pin::new(&frame.desc);
        let Some(latch) = latch(frame) else {
            return Ok(None);
        };
        if frame.desc.state() != State::Valid || frame.desc.page_id() != id {
            return Ok(None);
        }
        if frame.desc.poisoned.load(Relaxed) {
            return Err(PoolError::PoisonedPage { page: id });
        }
        inc(&self.counters.page_requests);
        self.after_hit(f, id);
        Ok(Some((f, pin, latch)))
    }

    /// As [`fetch_shared`](Self::fetch_shared) with an exclusive latch.
    pub(crate) fn fetch_exclusive(&self, id: PageId) -> Result<ExclusiveGuard<'_>, PoolError> {
        inc(&self.counters.page_requests);
        loop {
            if let Some(f) = self.hash.lookup_pin(id, &self.frames) {
                let frame = &self.frames.frame(f);
                let pin = Pin::new(&frame.desc);
                let latch = frame.latch.write();
                if frame.desc.state() == State::Valid && frame.desc.page_id() == id {
                    if frame.desc.poisoned.load(Relaxed) {
                        return Err(PoolError::PoisonedPage { page: id });
                    }
                    self.after_hit(f, id);
                    return Ok(ExclusiveGuard::new(self, f, latch, pin, id));
                }
                continue;
            }
            if let Some(guard) = self.read_in(id)? {
                return Ok(guard);
            }
        }
    }

    fn after_hit(&self, f: u32, id: PageId) {
        if self.on_access(f) {
            self.linear_read_ahead(id);
        }
    }

    /// Creates page `id` without reading it: a zeroed frame at the LRU head.
    /// InnoDB: `buf_page_create`. If the page is already in the pool, its frame is zeroed.
    pub(crate) fn create(&self, id: PageId) -> Result<ExclusiveGuard<'_>, PoolError> {
        self.create_with(id, || self.get_free_frame())
    }

    /// [`create`](Self::create) taking the frame, when one is needed, from `take_frame`.
    pub(crate) fn create_with(
        &self,
        id: PageId,
        mut take_frame: impl FnMut() -> Result<u32, PoolError>,
    ) -> Result<ExclusiveGuard<'_>, PoolError> {
        loop {
            if let Some(f) = self.hash.lookup_pin(id, &self.frames) {
                let frame = &self.frames.frame(f);
                let pin = Pin::new(&frame.desc);
                let mut latch = frame.latch.write();
                if frame.desc.state() == State::Valid && frame.desc.page_id() == id {
                    if frame.desc.poisoned.load(Relaxed) {
                        return Err(PoolError::PoisonedPage { page: id });
                    }
                    // New bytes: what was derived from the old ones is stale from now on.
                    frame.desc.bump_version();
                    latch.fill(0);
                    // A new page: whatever block the old one had describes nothing now.
                    if let Some(g) = self.take_zip(f) {
                        self.return_free(g);
                    }
                    self.on_access(f);
                    inc(&self.counters.pages_created);
                    return Ok(ExclusiveGuard::new_created(self, f, latch, pin, id));
                }
                continue;
            }
            let f = take_frame()?;
            let frame = &self.frames.frame(f);
            // A frame never used is zeros already: clearing it again costs a sequential load
            // about 4 % (16 KiB written per split, in the loading thread).
            let zeroed = frame.desc.never_used();
            frame.desc.init_for(id, State::ReadPending);
            let pin = Pin::new(&frame.desc);
            let mut latch = frame.latch.write();
            if !self.hash.insert_if_absent(id, f) {
                drop(latch);
                drop(pin);
                self.return_free(f);
                continue;
            }
            // A compressed-only copy of the page's old contents must never be read back.
            if let Some(old) = self.take_zip_only(id) {
                if let Some(g) = self.zip_release(old) {
                    self.return_free(g);
                }
            }
            if zeroed {
                debug_assert!(
                    latch.iter().all(|&b| b == 0),
                    "a never-used frame holds bytes"
                );
            } else {
                latch.fill(0);
            }
            self.lru_add(f, true);
            frame.desc.transition(State::ReadPending, State::Valid);
            frame.desc.first_access_ms.store(self.now_ms(), SeqCst);
            inc(&self.counters.pages_created);
            return Ok(ExclusiveGuard::new_created(self, f, latch, pin, id));
        }
    }

    /// Puts an unused frame (never inserted anywhere) back on the free list.
    pub(crate) fn return_free(&self, f: u32) {
        let emptied = self.take_zip(f);
        self.frames.frame(f).desc.reset();
        self.push_free(f);
        if let Some(g) = emptied {
            self.push_free(g);
        }
    }

    // ---- access bookkeeping -----------------------------------------------------------------

    /// Records an access to pinned frame `f` and makes it young if due. Returns true if this was
    /// the page's first access (linear read-ahead is evaluated then).
    /// InnoDB: `buf_page_set_accessed` + `buf_page_make_young_if_needed`.
    pub(crate) fn on_access(&self, f: u32) -> bool {
        let d = &self.frames.frame(f).desc;
        // Hits stay cheap: the clock is read only on a first access or for an old page.
        let seen = d.first_access_ms.load(Relaxed);
        let (first, first_time) = if seen == 0 {
            let now = self.now_ms();
            match d.first_access_ms.compare_exchange(0, now, SeqCst, SeqCst) {
                Ok(_) => (now, true),
                Err(t) => (t, false),
            }
        } else {
            (seen, false)
        };
        if d.read_ahead.load(Relaxed) {
            d.read_ahead.store(false, Relaxed);
        }
        match self.due_young(f, FirstAccess::At(first)) {
            Due::Young => self.make_young(f, FirstAccess::At(first)),
            Due::KeptOld => inc(&self.counters.pages_not_made_young),
            Due::Stay => {}
        }
        first_time
    }

    /// InnoDB `buf_page_peek_if_too_old`: should an access to `f` move it to the LRU head?
    pub(crate) fn due_young(&self, f: u32, first_access: FirstAccess) -> Due {
        let clock = self.freed_page_clock.load(Relaxed);
        if clock == 0 {
            // Nothing was ever evicted: do not reorder (warm-up / in-memory workloads).
            return Due::Stay;
        }
        let threshold = self.old_blocks_time_ms.load(Relaxed);
        if threshold > 0 && self.old_flags.get(f) {
            let FirstAccess::At(first_access) = first_access else {
                return Due::Young;
            };
            if self.now_ms().saturating_sub(first_access) >= threshold {
                return Due::Young;
            }
            return Due::KeptOld;
        }
        if self.peek_if_young(f, clock) {
            Due::Stay
        } else {
            Due::Young
        }
    }

    /// InnoDB `buf_page_peek_if_young`: is `f` still near enough the head that moving it is not
    /// worth the LRU mutex? True until ~¼ of the young sublist worth of evictions happened since
    /// it was last put at the head.
    pub(crate) fn peek_if_young(&self, f: u32, clock: u64) -> bool {
        let ratio = u64::from(self.old_ratio.load(Relaxed));
        let div = u64::from(OLD_RATIO_DIV);
        let quarter_young = self.capacity as u64 * (div - ratio) / (div * 4);
        clock < self.frames.frame(f).desc.freed_page_clock.load(Relaxed) + quarter_young
    }

    // ---- eviction ---------------------------------------------------------------------------

    /// Evicts `f` if it is clean, unpinned and not being written: removes it from the page hash
    /// and the LRU and leaves it `Free` (not on the free list: the caller pushes or uses it).
    /// InnoDB: `buf_LRU_free_page`.
    pub(crate) fn try_evict_locked(&self, lists: &mut Lists, f: u32, by: Evictor) -> bool {
        let frame = &self.frames.frame(f);
        let d = &frame.desc;
        // A poisoned frame stays: evicting it would let the old image be read back in.
        if d.pins() != 0 || d.flushing.load(SeqCst) || d.is_dirty() || d.poisoned.load(SeqCst) {
            return false;
        }
        let counted = match d.state() {
            State::Valid => {
                let id = d.page_id();
                let mut shard = self.hash.lock_shard(id);
                // Lookups pin under the shard lock: with it held, a zero pin count stays zero
                // but for a hinted fetch's pin (`latch_at`), taken without it.
                if d.pins() != 0 || d.is_dirty() || d.state() != State::Valid {
                    return false;
                }
                self.eviction_probe.fire(id);
                let Some(latch) = frame.latch.try_write() else {
                    return false;
                };
                // Checked again under the latch, which is what makes the eviction safe against
                // hinted fetches: since the checks above, a writer may have pinned the page
                // through a hint, latched it, changed it and let it go — leaving it dirty (or
                // poisoned), which only happens under the exclusive latch this thread holds
                // now. (Evicted without this check, the change was lost: the page was read back
                // as last written.) A hinted fetch still waiting for the latch finds the frame
                // `Stale` once it gets it, and looks the page up.
                if d.is_dirty() || d.poisoned.load(SeqCst) {
                    return false;
                }
                // The unzip LRU's choice: drop the frame alone, keeping the block, before the
                // page leaves the hash (a reader missing the hash then finds the block).
                if d.zip_link().is_some_and(|l| !l.stale) && self.evict_frame_only(lists.lru.len())
                {
                    self.keep_block_of(f, id);
                }
                remove_locked(&mut shard, id, f);
                // Not `Valid` before the latch is released: a reader that pinned the frame
                // through a hint, not the hash (`fetch_shared_at`), checks the state under
                // the latch and must not take the frame for the page any more.
                d.set_state(State::Stale);
                drop(latch);
                true
            }
            State::Stale => {
                if frame.latch.try_write().is_none() {
                    return false;
                }
                false
            }
            State::Free | State::ReadPending | State::Memory => return false,
        };
        // Its block goes with it (the LRU mutex is held: the allocator's comes after it).
        if let Some(g) = self.take_zip(f) {
            self.push_free(g);
        }
        lists.lru.remove(f);
        if counted {
            lists.freed_page_clock += 1;
            self.freed_page_clock.store(lists.freed_page_clock, Relaxed);
            if d.read_ahead.load(SeqCst) && d.first_access_ms.load(SeqCst) == 0 {
                inc(&self.counters.read_ahead_evicted);
            }
            match by {
                Evictor::User => inc(&self.counters.evicted_by_user),
                Evictor::Manager => inc(&self.counters.evicted_by_manager),
            }
        }
        d.reset();
        true
    }

    /// Scans at most `limit` pages from the LRU tail and evicts the first evictable one, which the
    /// caller gets (it does not go through the free list). InnoDB: `buf_LRU_free_from_common_LRU_list`.
    pub(crate) fn scan_and_evict(&self, limit: usize, by: Evictor) -> Option<u32> {
        let mut lists = self.lock_lists();
        // Compressed-only pages are the oldest held (InnoDB keeps them at the LRU tail): when
        // frames are not to be dropped for them, they go first.
        if self.zip_only_len.load(Relaxed) > 0 && !self.evict_frame_only(lists.lru.len()) {
            if let Some(f) = self.free_zip_only_for_frame() {
                return Some(f);
            }
        }
        inc(&self.counters.lru_scans);
        let mut cur = lists.lru.tail();
        let mut scanned = 0u64;
        let mut found = None;
        while cur != NIL && (scanned as usize) < limit {
            scanned += 1;
            let prev = lists.lru.prev(cur);
            if self.try_evict_locked(&mut lists, cur, by) {
                found = Some(cur);
                break;
            }
            cur = prev;
        }
        crate::stats::add(&self.counters.lru_pages_scanned, scanned);
        // Nothing evictable on the LRU: compressed-only pages are memory too.
        found.or_else(|| self.free_zip_only_for_frame())
    }

    /// Pops a frame from the free list.
    pub(crate) fn pop_free(&self) -> Option<u32> {
        if self.free_len.load(Relaxed) == 0 {
            return None;
        }
        let (frame, frontier) = {
            let mut free = self.free.lock();
            (free.pop(&self.free_len), free.frontier())
        };
        self.prefault.note_frontier(frontier);
        frame
    }

    /// Puts frame `f` (`Free`, in no list) on the free list.
    pub(crate) fn push_free(&self, f: u32) {
        self.free.lock().push(f, &self.free_len);
    }

    /// Whether the LRU holds a page a free-frame wait can turn into a frame: unpinned, not
    /// poisoned (never evicted), and not a dirty page that may not be written yet (behind the
    /// store's write barrier). A single-page flush takes such a page at its next attempt unless
    /// another thread gets there first, since it passes over pinned pages.
    pub(crate) fn any_freeable(&self) -> bool {
        if self.zip_only_len.load(Relaxed) > 0 {
            return true;
        }
        let lists = self.lock_lists();
        let mut cur = lists.lru.tail();
        while cur != NIL {
            let d = &self.frames.frame(cur).desc;
            if d.pins() == 0
                && !d.poisoned.load(SeqCst)
                && !(d.is_dirty() && self.behind_write_barrier(cur))
            {
                return true;
            }
            cur = lists.lru.prev(cur);
        }
        false
    }

    // ---- dirty pages --------------------------------------------------------------------------

    /// Marks X-latched frame `f` dirty by a change logged from `start_lsn` to `end_lsn`: newest
    /// = max(newest, end); a clean page joins the flush list with oldest = start.
    /// InnoDB: `buf_flush_note_modification`.
    pub(crate) fn mark_dirty(&self, f: u32, start_lsn: Lsn, end_lsn: Lsn) {
        let d = &self.frames.frame(f).desc;
        let mut fl = self.flush_list.lock();
        if d.state() != State::Valid {
            return; // discarded while latched: its space is gone
        }
        d.newest_lsn.fetch_max(end_lsn, SeqCst);
        d.modify_count.fetch_add(1, SeqCst);
        if !d.is_dirty() {
            d.oldest_lsn.store(start_lsn, SeqCst);
            d.dirty_epoch
                .store(self.dirty_epoch.fetch_add(1, SeqCst) + 1, SeqCst);
            d.dirty.store(true, SeqCst);
            fl.insert(start_lsn, f);
        }
    }

    /// Marks `f` clean after a write (caller holds `flush_list`).
    pub(crate) fn mark_clean_locked(&self, fl: &mut FlushList, f: u32) {
        let d = &self.frames.frame(f).desc;
        if d.is_dirty() {
            fl.remove(d.oldest_lsn.load(SeqCst), f);
            d.dirty.store(false, SeqCst);
            d.oldest_lsn.store(0, SeqCst);
        }
    }

    // ---- discard ------------------------------------------------------------------------------

    /// Drops every page of `space` without writing it. InnoDB: `buf_LRU_flush_or_remove_pages`
    /// with `BUF_REMOVE_ALL_NO_WRITE`. Pinned pages become `Stale` and are reclaimed when unpinned.
    pub(crate) fn discard_space(&self, space: SpaceId) {
        self.discard_zip_only(space);
        let mut stale = Vec::new();
        for (f, frame) in self.frames.in_use() {
            let d = &frame.desc;
            let id = d.page_id();
            if id.space_id != space || !matches!(d.state(), State::Valid | State::ReadPending) {
                continue;
            }
            {
                let mut shard = self.hash.lock_shard(id);
                if d.page_id() != id || !matches!(d.state(), State::Valid | State::ReadPending) {
                    continue;
                }
                remove_locked(&mut shard, id, f);
                d.set_state(State::Stale);
            }
            self.mark_clean_locked(&mut self.flush_list.lock(), f);
            stale.push(f);
        }
        let mut lists = self.lock_lists();
        for f in stale {
            if lists.lru.contains(f) && self.try_evict_locked(&mut lists, f, Evictor::User) {
                self.push_free(f);
            }
        }
    }

    /// Reads the access time of page `id` if it is in the pool (0 = absent or not accessed),
    /// and whether it is "young" by the freed-page clock. For read-ahead heuristics only.
    pub(crate) fn peek_access(&self, id: PageId) -> Option<(u64, bool)> {
        let f = self.hash.peek(id)?;
        let d = &self.frames.frame(f).desc;
        if d.page_id() != id {
            return None;
        }
        let young = self.peek_if_young(f, self.freed_page_clock.load(Relaxed));
        Some((d.first_access_ms.load(Relaxed), young))
    }
}

fn duration_ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
