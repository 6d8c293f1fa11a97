//! The public [`BufferPool`].

use std::sync::atomic::Ordering::{Relaxed, SeqCst};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use barracuda_page::{Lsn, PageId, PageSize, SpaceId};
use parking_lot::Mutex;

use crate::attach::{Attached, FrameNo, FrameStamp};
use crate::inner::Inner;
use crate::reservation::FrameReservation;
use crate::stats::PoolStats;
use crate::{
    manager, prefault, read_ahead, ExclusiveGuard, FreePagePolicy, PageStore, PoolConfig,
    PoolError, ReadAhead, SharedGuard,
};

/// A buffer pool: a fixed set of page frames caching the pages of a [`PageStore`], with an LRU
/// list (midpoint insertion), a flush list, a free list refilled by a background LRU manager
/// thread, and read-ahead. `Send + Sync`, used as `Arc<BufferPool>`.
///
/// Pages are accessed through guards that pin the page (a pinned page is never evicted) and hold
/// its latch; dropping the guard releases both. Do not call [`flush_all`](Self::flush_all) while
/// holding an [`ExclusiveGuard`]: it waits for the S latch of every page it writes
/// ([`flush_list_batch`](Self::flush_list_batch) skips X-latched pages instead).
pub struct BufferPool {
    inner: Arc<Inner>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    /// The old-blocks time in force, for [`stats`](Self::stats): `Inner`'s copy is private to it.
    old_blocks_time: Mutex<Duration>,
}

impl std::fmt::Debug for BufferPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BufferPool")
            .field("page_size", &self.inner.page_size)
            .field("capacity_pages", &self.inner.capacity)
            .finish_non_exhaustive()
    }
}

impl BufferPool {
    /// Reserves every frame (page-size aligned, once; memory is backed as frames are first
    /// used, so this takes milliseconds whatever the capacity) and starts the background LRU
    /// manager, read-ahead and frame prefault threads (`prefault.rs`: the next frames to be
    /// used are backed ahead of use, at most 64 MiB ahead).
    ///
    /// Errors: [`PoolError::InvalidConfig`] if the capacity is below 16 pages;
    /// [`PoolError::FrameMemory`] if the frames' address space cannot be reserved;
    /// [`PoolError::Thread`] if a thread cannot be spawned.
    pub fn new(config: PoolConfig, store: Arc<dyn PageStore>) -> Result<Arc<Self>, PoolError> {
        let old_blocks_time = whole_ms(config.old_blocks_time);
        let inner = Arc::new(Inner::new(config, store)?);
        let pool = Arc::new(Self {
            inner: Arc::clone(&inner),
            threads: Mutex::new(Vec::new()),
            old_blocks_time: Mutex::new(old_blocks_time),
        });
        inner.manager_running.store(true, SeqCst);
        if let Err(e) = pool.spawn_worker("bp-lru-manager", manager::run) {
            inner.manager_running.store(false, SeqCst);
            return Err(e);
        }
        pool.spawn_worker("bp-read-ahead", read_ahead::run)?;
        pool.spawn_worker("bp-prefault", |inner| prefault::run(inner))?;
        Ok(pool)
    }

    /// Starts one of the pool's background threads, joined at [`shutdown`](Self::shutdown).
    fn spawn_worker(&self, name: &str, body: fn(&Arc<Inner>)) -> Result<(), PoolError> {
        let inner = Arc::clone(&self.inner);
        let handle = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || body(&inner))
            .map_err(PoolError::Thread)?;
        self.threads.lock().push(handle);
        Ok(())
    }

    /// Pins page `id` and latches it shared, reading it from the store on a miss (a page being
    /// read by another thread is read once: this thread waits for that read).
    pub fn get_shared(&self, id: PageId) -> Result<SharedGuard<'_>, PoolError> {
        self.inner.fetch_shared(id)
    }

    /// [`get_shared`](Self::get_shared) through a frame hint (a frame the page was found in
    /// before, [`SharedGuard::stamp`]) instead of the page hash: `Ok(None)` if the frame does not
    /// hold page `id` now; the caller then looks the page up with `get_shared`. Never reads.
    pub fn get_shared_at(
        &self,
        id: PageId,
        frame: FrameNo,
    ) -> Result<Option<SharedGuard<'_>>, PoolError> {
        self.inner.fetch_shared_at(id, frame)
    }

    /// [`get_exclusive`](Self::get_exclusive) through a frame hint: `Ok(None)` when `frame`
    /// does not hold `id` (nothing is read).
    pub fn get_exclusive_at(
        &self,
        id: PageId,
        frame: FrameNo,
    ) -> Result<Option<ExclusiveGuard<'_>>, PoolError> {
        self.inner.fetch_exclusive_at(id, frame)
    }

    /// [`get_shared`](Self::get_shared) only if it can be served at once: `Ok(None)` when the
    /// page is not in the pool (nothing is read), is being read, or is latched exclusively.
    /// For a thread holding another latch that must never wait for this one.
    pub fn try_get_shared(&self, id: PageId) -> Result<Option<SharedGuard<'_>>, PoolError> {
        self.inner.try_fetch_shared(id)
    }

    /// [`try_get_shared`](Self::try_get_shared) through a frame hint instead of the page hash:
    /// `Ok(None)` when `frame` does not hold page `id` now or its latch is held exclusively;
    /// never reads, never waits for a latch.
    pub fn try_get_shared_at(
        &self,
        id: PageId,
        frame: FrameNo,
    ) -> Result<Option<SharedGuard<'_>>, PoolError> {
        self.inner.try_fetch_shared_at(id, frame)
    }

    /// [`get_exclusive`](Self::get_exclusive) only if it can be served at once: `Ok(None)` when
    /// the page is not in the pool (nothing is read), is being read, or is latched or pinned
    /// for a latch by anyone, this thread included. For a thread that holds other pages'
    /// latches and must never wait for this one (a writer latching further leaves of one
    /// mini-transaction, where others may latch in another order).
    pub fn try_get_exclusive(&self, id: PageId) -> Result<Option<ExclusiveGuard<'_>>, PoolError> {
        self.inner.try_fetch_exclusive(id)
    }

    /// [`try_get_exclusive`](Self::try_get_exclusive) through a frame hint instead of the page
    /// hash: `Ok(None)` when `frame` does not hold page `id` now or its latch is held; never
    /// reads, never waits for a latch.
    pub fn try_get_exclusive_at(
        &self,
        id: PageId,
        frame: FrameNo,
    ) -> Result<Option<ExclusiveGuard<'_>>, PoolError> {
        self.inner.try_fetch_exclusive_at(id, frame)
    }

    /// Asks the CPU to start loading `frame`'s latch and descriptor and the start and end of
    /// its page, for a page about to be latched through that frame hint while other work goes
    /// on (a scan's next leaf). Reads nothing, changes nothing; any frame number is accepted.
    pub fn prefetch_frame(&self, frame: FrameNo) {
        self.inner.frames.prefetch_frame(frame.index());
    }

    /// The value attached to page `id` in `frame` ([`SharedGuard::attach`]), if the frame still
    /// holds that page with the bytes the value was derived from; no pin, no latch, no page
    /// hash. The page may change as soon as this returns: a reader that acts on the value
    /// checks [`is_current`](Self::is_current) with its [stamp](Attached::stamp) afterwards.
    pub fn attached(&self, frame: FrameNo, id: PageId) -> Option<Attached> {
        self.inner.attached(frame, id)
    }

    /// Whether the stamped frame's bytes are still those of the stamp: no change to them has
    /// begun since, and the frame still holds the same page.
    pub fn is_current(&self, stamp: FrameStamp) -> bool {
        self.inner.is_current(stamp)
    }

    /// Counts a use of the stamped page, as a hit does, for the LRU's choice: a page read only
    /// through its attached value is otherwise never seen used and is evicted as cold. Writes
    /// nothing shared unless the page is due to move to the LRU head.
    pub fn touch(&self, stamp: FrameStamp) {
        self.inner.touch(stamp);
    }

    /// Pins page `id` and latches it exclusively, reading it from the store on a miss.
    pub fn get_exclusive(&self, id: PageId) -> Result<ExclusiveGuard<'_>, PoolError> {
        self.inner.fetch_exclusive(id)
    }

    /// A new page: a zeroed frame at the LRU head, latched exclusively, never read from the store
    /// (counted in "pages created"). If `id` is already in the pool its frame is zeroed. The page
    /// is clean until [`ExclusiveGuard::mark_dirty`]. InnoDB: `buf_page_create`.
    pub fn create(&self, id: PageId) -> Result<ExclusiveGuard<'_>, PoolError> {
        self.inner.create(id)
    }

    /// Takes `count` free frames now (evicting or flushing as the free-page policy says), so
    /// that creating `count` pages later cannot fail for want of a frame. Unused frames return
    /// to the free list when the reservation is dropped.
    pub fn reserve_frames(&self, count: usize) -> Result<FrameReservation<'_>, PoolError> {
        FrameReservation::take(&self.inner, count)
    }

    /// [`create`](Self::create) in a frame of `reservation` (or in the page's current frame if
    /// the pool holds it). Fails only with [`PoolError::ReservationExhausted`] (the caller used
    /// more frames than it reserved) or [`PoolError::PoisonedPage`].
    pub fn create_reserved<'a>(
        &'a self,
        reservation: &mut FrameReservation<'a>,
        id: PageId,
    ) -> Result<ExclusiveGuard<'a>, PoolError> {
        reservation.create(id)
    }

    /// Stops every later page write, for good: the flusher, evictions of dirty pages,
    /// [`flush_all`](Self::flush_all) all fail with [`PoolError::WritesStopped`] and dirty pages
    /// stay unwritten. For an owner that finds memory holding a change that must not reach disk
    /// (a batch applied part-way). Clean pages are still read, served and evicted. Also done by
    /// the pool itself when a frame is poisoned (see [`ExclusiveGuard`]).
    pub fn stop_writes(&self, reason: impl Into<String>) {
        self.inner.stop_writes(reason.into());
    }

    /// Why page writes are stopped, if they are (see [`stop_writes`](Self::stop_writes)).
    pub fn writes_stopped(&self) -> Option<String> {
        self.inner.writes_stopped()
    }

    /// Drops every page of `space` (a dropped table) without writing it. Pages pinned at the time
    /// are reclaimed when unpinned; their guards stay usable but changes are ignored.
    pub fn discard_space(&self, space: SpaceId) {
        self.inner.discard_space(space);
    }

    /// For tests of races with eviction: `probe` is called by every eviction of a page from
    /// the LRU (by the LRU manager or a user thread) once it has found the page clean and
    /// unpinned and before it takes the page's latch to remove it — the moment a writer that
    /// reaches the page through a frame hint can still get in. It runs with the LRU mutex and
    /// the page's page-hash shard held, so it must not fetch pages; it may block, to let
    /// another thread act. `None` removes it.
    #[doc(hidden)]
    pub fn set_eviction_probe(&self, probe: Option<crate::testing::EvictionProbe>) {
        self.inner.eviction_probe.set(probe);
    }

    /// Writes every page that is dirty when the call starts (checkpoint, close).
    pub fn flush_all(&self) -> Result<(), PoolError> {
        self.inner.flush_all()
    }

    /// Writes up to `max_pages` dirty pages, oldest modification first (the page cleaner).
    /// Returns how many were written. InnoDB: `buf_flush_do_batch(BUF_FLUSH_LIST)`.
    pub fn flush_list_batch(&self, max_pages: usize) -> Result<usize, PoolError> {
        self.inner.flush_list_batch(max_pages, Lsn::MAX)
    }

    /// Writes up to `max_pages` of the pages queued by
    /// [`ExclusiveGuard::hint_write_behind`] that can be written now; pages still X-latched or
    /// changed by an open commit unit stay queued. Returns how many were written.
    pub fn write_behind(&self, max_pages: usize) -> Result<usize, PoolError> {
        self.inner.write_behind_batch(max_pages)
    }

    /// Forgets the pages queued for write-behind (whoever would write them is not going to);
    /// they stay dirty, for the checkpoints and the flushing controller like any other page.
    pub fn discard_write_behind(&self) {
        self.inner.write_behind.discard();
    }

    /// Sets the function called (from the hinting thread, which it must not block) each time
    /// another [`WRITE_BEHIND_BATCH`](crate::WRITE_BEHIND_BATCH) pages are queued for
    /// write-behind; `None` removes it.
    pub fn set_write_behind_waker(&self, waker: Option<crate::WriteBehindWaker>) {
        self.inner.write_behind.set_waker(waker);
    }

    /// [`flush_list_batch`](Self::flush_list_batch) of the pages whose oldest modification is
    /// below `lsn_limit` only (a flush up to an LSN target). InnoDB: `buf_flush_lists(n, lsn)`.
    pub fn flush_list_batch_below(
        &self,
        max_pages: usize,
        lsn_limit: Lsn,
    ) -> Result<usize, PoolError> {
        self.inner.flush_list_batch(max_pages, lsn_limit)
    }

    /// How many dirty pages have their oldest modification at or below `lsn`, counting at most
    /// `limit` (the walk from the flush list's oldest end stops there). For a flushing
    /// controller's estimate of the pages behind an LSN target.
    pub fn dirty_pages_oldest_at_most(&self, lsn: Lsn, limit: u64) -> u64 {
        let fl = self.inner.flush_list.lock();
        fl.iter()
            .take_while(|&(oldest, _)| oldest <= lsn)
            .take(usize::try_from(limit).unwrap_or(usize::MAX))
            .count() as u64
    }

    /// The smallest oldest-modification LSN over dirty pages (the checkpoint may advance to it),
    /// `None` if no page is dirty. InnoDB: `buf_pool_get_oldest_modification`.
    pub fn oldest_modification(&self) -> Option<Lsn> {
        self.inner.flush_list.lock().min_lsn()
    }

    /// Switches the free-page policy; threads already waiting for a frame follow the new policy
    /// from their next iteration. InnoDB (Percona): `SET GLOBAL innodb_empty_free_list_algorithm`.
    pub fn set_free_page_policy(&self, policy: FreePagePolicy) {
        self.inner.set_policy(policy);
    }

    /// The free-page policy in force.
    pub fn free_page_policy(&self) -> FreePagePolicy {
        self.inner.policy()
    }

    /// Sets the LRU scan depth (Default 1024, min 100, at most a quarter of the pool is used).
    /// InnoDB: `innodb_lru_scan_depth`.
    pub fn set_lru_scan_depth(&self, pages: usize) {
        self.inner.set_scan_depth(pages);
    }

    /// Sets the old sublist share (Default 37, range 5..=95, clamped). InnoDB:
    /// `innodb_old_blocks_pct`.
    pub fn set_old_blocks_pct(&self, pct: u32) {
        self.inner.set_old_blocks_pct(pct);
    }

    /// Sets how long after its first access an old page must be touched again to be made young
    /// (Default 1000 ms, 0 = at once). InnoDB: `innodb_old_blocks_time`.
    pub fn set_old_blocks_time(&self, time: Duration) {
        self.inner.set_old_blocks_time(time);
        *self.old_blocks_time.lock() = whole_ms(time);
    }

    /// Switches read-ahead (Default linear 56, random off). InnoDB: `innodb_read_ahead_threshold`,
    /// `innodb_random_read_ahead`.
    pub fn set_read_ahead(&self, read_ahead: ReadAhead) {
        self.inner.ra_linear.store(
            read_ahead.linear_threshold.map_or(u32::MAX, |t| t.min(64)),
            Relaxed,
        );
        self.inner.ra_random.store(read_ahead.random, Relaxed);
    }

    /// A snapshot of the pool's state and counters.
    pub fn stats(&self) -> PoolStats {
        let inner = &self.inner;
        // The LRU first: taking its mutex applies the changes deferred while it was busy, and
        // the counters read next include what they did.
        let (lru_len, old_lru_len) = {
            let lists = inner.lock_lists();
            (lists.lru.len(), lists.lru.old_len())
        };
        let mut stats = PoolStats::from_counters(&inner.counters, &inner.wait_hist);
        stats.free_pages = inner.free_len.load(std::sync::atomic::Ordering::SeqCst);
        (stats.lru_len, stats.old_lru_len) = (lru_len, old_lru_len);
        stats.dirty_pages = inner.flush_list.lock().len();
        stats.page_size = inner.page_size;
        stats.capacity_pages = inner.capacity;
        stats.policy = inner.policy();
        stats.pending_read_ahead = inner.read_ahead.pending.load(Relaxed);
        stats.frames_prefaulted = inner.prefault.frames_populated.load(Relaxed);
        stats.write_behind_queued = inner.write_behind.queued() as u64;
        stats.lru_scan_depth = inner.scan_depth();
        // The ratio is pct × 1024 / 100 rounded down, so rounding up gives the percent back.
        stats.old_blocks_pct = (inner.old_ratio.load(Relaxed) * 100).div_ceil(1024);
        stats.old_blocks_time = *self.old_blocks_time.lock();
        let linear = inner.ra_linear.load(Relaxed);
        stats.read_ahead_threshold = (linear != u32::MAX).then_some(linear);
        stats.random_read_ahead = inner.ra_random.load(Relaxed);
        (stats.zip_frames, stats.zip_pages, stats.zip_blocks) = inner.zip_stats();
        stats.zip_only_pages = crate::zip_only::zip_only_len(inner);
        stats.zip_pages = stats.zip_pages.saturating_sub(stats.zip_only_pages);
        stats
    }

    /// The page size of every frame.
    pub fn page_size(&self) -> PageSize {
        self.inner.page_size
    }

    /// Number of frames.
    pub fn capacity_pages(&self) -> usize {
        self.inner.capacity
    }

    /// Stops the background threads (also done on drop). Idempotent. The pool stays usable:
    /// `Backoff` then behaves as `Legacy` (as Percona's does without LRU manager threads), and
    /// read-ahead requests are dropped.
    pub fn shutdown(&self) {
        self.inner.shutdown.store(true, SeqCst);
        self.inner.manager.notify_shutdown();
        self.inner.read_ahead.notify_shutdown();
        self.inner.prefault.notify_shutdown();
        let threads: Vec<JoinHandle<()>> = std::mem::take(&mut *self.threads.lock());
        for t in threads {
            if t.join().is_err() {
                tracing::error!("buffer pool background thread panicked");
            }
        }
        self.inner.manager_running.store(false, SeqCst);
    }
}

impl Drop for BufferPool {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// `time` at the millisecond resolution the pool keeps it in.
fn whole_ms(time: Duration) -> Duration {
    Duration::from_millis(u64::try_from(time.as_millis()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pool_and_stats_are_send_sync() {
        fn check<T: Send + Sync>() {}
        check::<BufferPool>();
        check::<PoolStats>();
        check::<PoolError>();
    }
}
