//! Writing dirty pages: flush-list batches (checkpoints, page cleaner), LRU batches (the LRU
//! manager) and single-page flushes (user threads under Legacy / Eager).
//!
//! Every write follows the same steps (InnoDB: `buf_flush_page` → `buf_flush_write_block_low`):
//! claim the frame (pin + `flushing` flag, so it is neither evicted nor written twice), S-latch
//! it (readers continue; a writer holding the X latch makes user-thread flushes skip the page),
//! `flush_log_up_to(newest LSN)` (the WAL rule), `write_pages` — which releases the latch once
//! the store has copied the image, before its I/O — then mark it clean unless it changed
//! meanwhile. Unlike InnoDB, whose page stays latched (io-fixed) until its write completes, a
//! writer of the page waits for a copy, not for a doublewrite sync and the write in place.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::time::Duration;

use barracuda_page::{Lsn, PageId};

use parking_lot::RwLockReadGuard;

use crate::descriptor::State;
use crate::frame::FrameBuf;
use crate::inner::{Evictor, Inner};
use crate::lru::NIL;
use crate::stats::{add, inc};
use crate::{PageImages, PoolError};

/// Which path writes a page (for the counters).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum FlushKind {
    /// LRU batch by the LRU manager (InnoDB `BUF_FLUSH_LRU`).
    Lru,
    /// Flush-list batch (InnoDB `BUF_FLUSH_LIST`).
    FlushList,
    /// Single-page flush in a user thread (InnoDB `BUF_FLUSH_SINGLE_PAGE`).
    SinglePage,
    /// Write-behind batch of pages their writers finished with (`write_behind.rs`).
    WriteBehind,
}

/// Frames claimed for writing; dropping it unpins them and clears their `flushing` flag.
pub(crate) struct Claimed<'a> {
    inner: &'a Inner,
    frames: Vec<u32>,
}

impl<'a> Claimed<'a> {
    pub(crate) fn new(inner: &'a Inner) -> Self {
        Self {
            inner,
            frames: Vec::new(),
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.frames.len()
    }
}

impl Drop for Claimed<'_> {
    fn drop(&mut self) {
        for &f in &self.frames {
            let d = &self.inner.frames.frame(f).desc;
            d.flushing.store(false, SeqCst);
            d.unpin();
        }
    }
}

/// A page of a batch being written: its frame, claimed, S-latched until the store releases it.
struct LatchedPage<'a> {
    frame: u32,
    id: PageId,
    /// The frame's modification count under the latch: the page is marked clean after the
    /// write only if it is unchanged.
    modify_count: u64,
    guard: Option<RwLockReadGuard<'a, FrameBuf>>,
}

/// The batch lent to [`PageStore::write_pages`](crate::PageStore::write_pages).
struct LatchedImages<'a> {
    inner: &'a Inner,
    pages: Vec<LatchedPage<'a>>,
}

impl PageImages for LatchedImages<'_> {
    fn len(&self) -> usize {
        self.pages.len()
    }

    fn get(&self, i: usize) -> Option<(PageId, &[u8])> {
        let page = self.pages.get(i)?;
        let guard = page.guard.as_ref()?;
        Some((page.id, self.inner.flush_image(page.frame, &guard[..])))
    }

    fn release(&mut self) {
        for page in &mut self.pages {
            page.guard = None;
        }
    }
}

/// Pages taken per flush-list batch round by `flush_all`.
const FLUSH_ALL_CHUNK: usize = 128;
/// Largest number of dirty pages an LRU batch writes in one `write_pages` call.
const LRU_WRITE_BATCH: usize = 64;

/// Pages an LRU batch scans per hold of the LRU mutex.
const LRU_BATCH_CHUNK: usize = 32;

impl Inner {
    /// Claims `f` for writing if it is a valid dirty page nobody is writing. The caller holds
    /// the LRU or the flush-list mutex, which keeps evictors away while the pin is taken.
    pub(crate) fn claim_for_flush(&self, claimed: &mut Claimed<'_>, f: u32) -> bool {
        let d = &self.frames.frame(f).desc;
        if d.state() != State::Valid || !d.is_dirty() || self.behind_write_barrier(f) {
            return false;
        }
        if d.flushing
            .compare_exchange(false, true, SeqCst, SeqCst)
            .is_err()
        {
            return false;
        }
        d.pin();
        claimed.frames.push(f);
        true
    }

    /// Claims `f` for a write whose purpose is to free its frame (an LRU batch, a single-page
    /// flush): as [`claim_for_flush`](Self::claim_for_flush), and only if nobody pins the page.
    ///
    /// A pinned page's frame cannot be freed by writing it, and its holder may keep it
    /// X-latched for as long as it waits for a free frame itself (a B-tree structure change
    /// holds its path and siblings while it reserves frames): the write would be skipped every
    /// time, and a scan that takes the first claimable page from the LRU tail would pick that
    /// page again and again — a livelock seen in the B-tree's model test. The pin count is read
    /// without the page-hash lock, so a page pinned just after is still claimed; that costs one
    /// skipped write, not progress, because the next scan sees the pin.
    pub(crate) fn claim_to_free(&self, claimed: &mut Claimed<'_>, f: u32) -> bool {
        self.frames.frame(f).desc.pins() == 0 && self.claim_for_flush(claimed, f)
    }

    /// Whether the page in `f` holds a change of a commit unit still open
    /// ([`PageStore::write_barrier`](crate::PageStore::write_barrier)): it may not be written.
    pub(crate) fn behind_write_barrier(&self, f: u32) -> bool {
        let d = &self.frames.frame(f).desc;
        d.newest() >= self.store.write_barrier() && !self.store.exempt_from_barrier(d.page_id())
    }

    /// Writes the claimed frames; returns how many were written. `wait_latch`: block for the S
    /// latch (page cleaner) instead of skipping X-latched pages (user threads, LRU manager).
    pub(crate) fn write_claimed(
        &self,
        claimed: Claimed<'_>,
        kind: FlushKind,
        wait_latch: bool,
    ) -> Result<usize, PoolError> {
        // Checked before anything is latched; a stop that comes while this batch is being
        // written is caught by the check under the latches below.
        self.check_writes_allowed()?;
        // The log first, with no page latched: its sync can take hundreds of milliseconds on a
        // busy disk, and a writer needing one of these pages would wait that long holding
        // whatever it holds (the engine's commit lock). A page changed again before it is
        // latched needs more, which the call under the latches below does (usually nothing).
        let newest_unlatched = claimed
            .frames
            .iter()
            .filter(|&&f| !self.behind_write_barrier(f))
            .map(|&f| self.frames.frame(f).desc.newest())
            .max()
            .unwrap_or(0);
        if newest_unlatched > 0 {
            self.store.flush_log_up_to(newest_unlatched)?;
        }
        let mut latched = LatchedImages {
            inner: self,
            pages: Vec::with_capacity(claimed.len()),
        };
        for &f in &claimed.frames {
            let frame = &self.frames.frame(f);
            let guard = if wait_latch {
                Some(frame.latch.read())
            } else {
                frame.latch.try_read()
            };
            let Some(guard) = guard else { continue };
            let d = &frame.desc;
            // The barrier is read under the latch: a unit opened since the claim has not
            // changed this page (it would need the X latch), and one that had changed it
            // before shows in the page's newest LSN.
            if d.state() != State::Valid || !d.is_dirty() || self.behind_write_barrier(f) {
                continue;
            }
            latched.pages.push(LatchedPage {
                frame: f,
                id: d.page_id(),
                modify_count: d.modify_count.load(SeqCst),
                guard: Some(guard),
            });
        }
        if latched.pages.is_empty() {
            return Ok(0);
        }
        let newest = latched
            .pages
            .iter()
            .map(|p| self.frames.frame(p.frame).desc.newest())
            .max()
            .unwrap_or(0);
        self.store.flush_log_up_to(newest)?;
        // A frame is poisoned (and writes stopped) while its X latch is held, and every page of
        // this batch is S-latched now: if writes are still allowed, no page of the batch can be
        // half-changed — nor can the copies the store takes before it releases the latches.
        self.check_writes_allowed()?;
        if let Err(err) = self.store.write_pages(&mut latched) {
            if let Some(reason) = self.store.writes_must_stop() {
                self.stop_writes(reason);
            }
            return Err(err.into());
        }
        {
            let mut fl = self.flush_list.lock();
            for page in &latched.pages {
                // The store may have released the latch once it had its copy: a page changed
                // since (its mtr committed) is newer than what was written and stays dirty. A
                // change still in progress under the X latch commits after this and makes the
                // page dirty again, from its own start LSN.
                if self.frames.frame(page.frame).desc.modify_count.load(SeqCst) == page.modify_count
                {
                    self.mark_clean_locked(&mut fl, page.frame);
                }
            }
        }
        let n = latched.pages.len();
        let counter = match kind {
            FlushKind::Lru => &self.counters.pages_written_lru,
            FlushKind::FlushList => &self.counters.pages_written_flush_list,
            FlushKind::SinglePage => &self.counters.pages_written_single_page,
            FlushKind::WriteBehind => &self.counters.pages_written_write_behind,
        };
        add(counter, n as u64);
        drop(latched);
        drop(claimed);
        Ok(n)
    }

    /// Writes up to `max_pages` dirty pages, oldest modification first. InnoDB:
    /// `buf_flush_do_batch(BUF_FLUSH_LIST)` from the page cleaner.
    /// Only pages whose oldest modification is below `lsn_limit` are taken.
    pub(crate) fn flush_list_batch(
        &self,
        max_pages: usize,
        lsn_limit: Lsn,
    ) -> Result<usize, PoolError> {
        let mut claimed = Claimed::new(self);
        {
            let fl = self.flush_list.lock();
            for (oldest, f) in fl.iter() {
                if claimed.len() >= max_pages || oldest >= lsn_limit {
                    break;
                }
                self.claim_for_flush(&mut claimed, f);
            }
        }
        // X-latched pages are skipped, not waited for: the batch pins every page it claimed,
        // and a writer holding an X latch may itself be waiting for a free frame — which
        // under Backoff only eviction of unpinned pages can give it (seen as a 2 s stall and
        // `AllPagesPinned` once the page cleaner ran batches). The next batch takes them.
        self.write_claimed(claimed, FlushKind::FlushList, false)
    }

    /// Writes every page that is dirty when the call starts (pages dirtied later may stay
    /// dirty), except pages behind the store's write barrier. InnoDB:
    /// `buf_flush_sync_all_buf_pools`.
    ///
    /// [`PoolConfig::flush_all_writers`](crate::PoolConfig::flush_all_writers) writers (the
    /// calling thread and helpers, two by default) take the batches in turn, so that one
    /// prepares its batch — copies, checksums, and where pages are compressed, the compression,
    /// which is most of a checkpoint's time then — while another waits for its log sync,
    /// doublewrite copy and writes in place. One writer left the compression threads idle for
    /// every batch's I/O.
    pub(crate) fn flush_all(&self) -> Result<(), PoolError> {
        let snapshot: Vec<(u32, u64)> = {
            let fl = self.flush_list.lock();
            fl.iter()
                .map(|(_, f)| (f, self.frames.frame(f).desc.dirty_epoch.load(SeqCst)))
                .collect()
        };
        let chunks: Vec<&[(u32, u64)]> = snapshot.chunks(FLUSH_ALL_CHUNK).collect();
        let next = AtomicUsize::new(0);
        let failed = AtomicBool::new(false);
        let helpers = self.flush_all_writers.min(chunks.len()).saturating_sub(1);
        if helpers == 0 {
            return self.flush_chunks(&chunks, &next, &failed);
        }
        std::thread::scope(|scope| {
            // A helper that could not be started leaves its share to the others.
            let started: Vec<_> = (0..helpers)
                .filter_map(|_| {
                    std::thread::Builder::new()
                        .name("bp-flush-all".into())
                        .spawn_scoped(scope, || self.flush_chunks(&chunks, &next, &failed))
                        .ok()
                })
                .collect();
            let mut result = self.flush_chunks(&chunks, &next, &failed);
            for handle in started {
                let theirs = handle
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
                result = result.and(theirs);
            }
            result
        })
    }

    /// One `flush_all` writer: takes the next batch of `chunks` until none is left or a writer
    /// failed, and writes it.
    fn flush_chunks(
        &self,
        chunks: &[&[(u32, u64)]],
        next: &AtomicUsize,
        failed: &AtomicBool,
    ) -> Result<(), PoolError> {
        while !failed.load(SeqCst) {
            let Some(chunk) = chunks.get(next.fetch_add(1, SeqCst)) else {
                return Ok(());
            };
            if let Err(err) = self.flush_chunk(chunk) {
                failed.store(true, SeqCst);
                return Err(err);
            }
        }
        Ok(())
    }

    /// Writes the pages of one `flush_all` batch that are still dirty since the snapshot,
    /// waiting for those another thread is writing.
    fn flush_chunk(&self, chunk: &[(u32, u64)]) -> Result<(), PoolError> {
        let mut todo: Vec<(u32, u64)> = chunk.to_vec();
        while !todo.is_empty() {
            let mut claimed = Claimed::new(self);
            let mut busy = Vec::new();
            {
                let _fl = self.flush_list.lock();
                for &(f, epoch) in &todo {
                    let d = &self.frames.frame(f).desc;
                    if !d.is_dirty() || d.dirty_epoch.load(SeqCst) != epoch {
                        continue; // written (and maybe re-dirtied) since the snapshot
                    }
                    if !self.claim_for_flush(&mut claimed, f)
                        && d.state() == State::Valid
                        && !self.behind_write_barrier(f)
                    {
                        busy.push((f, epoch)); // another thread is writing it
                    }
                }
            }
            self.write_claimed(claimed, FlushKind::FlushList, true)?;
            todo = busy;
            if !todo.is_empty() {
                std::thread::sleep(Duration::from_micros(50));
            }
        }
        Ok(())
    }

    /// One LRU batch: scans the LRU from the tail, evicting clean pages to the free list and
    /// writing unpinned dirty ones (then evicting them), until it has taken `max_pages` pages or
    /// the free list plus the pages being written reach `target_free`, while the LRU is longer
    /// than its minimum. Returns the progress made: frames put on the free list plus pages
    /// written. 0 means the batch changed nothing (every page it met was pinned, latched or
    /// behind the write barrier), and the LRU manager sleeps rather than trying again at once.
    /// InnoDB: `buf_flush_LRU_list_batch`.
    pub(crate) fn lru_batch(
        &self,
        max_pages: usize,
        target_free: usize,
    ) -> Result<usize, PoolError> {
        let mut claimed = Claimed::new(self);
        // Pages evicted or claimed, against `max_pages`; a claimed page may still be skipped
        // when written, so only `freed` and the pages written count as progress.
        let mut taken = 0usize;
        let mut freed = 0usize;
        inc(&self.counters.lru_scans);
        let mut scanned = 0usize;
        let mut resume: Option<u32> = None;
        // With writes stopped the batch still evicts clean pages, and does not fail every round
        // on the dirty ones.
        let can_write = self.writes_stopped().is_none();
        // The scan gives the LRU mutex back every `LRU_BATCH_CHUNK` pages so that user threads
        // (hits that make pages young, requests for a free frame) are not held up behind a whole
        // batch; it resumes from where it stopped if that page is still on the LRU, else from the
        // tail (InnoDB keeps a hazard pointer for the same purpose).
        // Compressed-only pages first when frames are not to be dropped for them (they are
        // the oldest pages held).
        while self.zip_only_len.load(SeqCst) > 0 && taken < max_pages {
            let lists = self.lock_lists();
            if self.free_len.load(SeqCst) >= target_free || self.evict_frame_only(lists.lru.len()) {
                break;
            }
            let Some(f) = self.free_zip_only_for_frame() else {
                break;
            };
            self.push_free(f);
            taken += 1;
            freed += 1;
        }
        loop {
            let mut lists = self.lock_lists();
            let len = lists.lru.len();
            let mut cur = match resume {
                Some(f) if lists.lru.contains(f) => f,
                _ => lists.lru.tail(),
            };
            let mut in_chunk = 0usize;
            while cur != NIL
                && in_chunk < LRU_BATCH_CHUNK
                && taken < max_pages
                && scanned < len
                && self.free_len.load(SeqCst) + claimed.len() < target_free
                && lists.lru.len() > lists.lru.min_len()
            {
                scanned += 1;
                in_chunk += 1;
                let prev = lists.lru.prev(cur);
                if self.try_evict_locked(&mut lists, cur, Evictor::Manager) {
                    self.push_free(cur);
                    taken += 1;
                    freed += 1;
                } else if can_write
                    && claimed.len() < LRU_WRITE_BATCH
                    && self.claim_to_free(&mut claimed, cur)
                {
                    taken += 1;
                }
                cur = prev;
            }
            drop(lists);
            if in_chunk < LRU_BATCH_CHUNK || cur == NIL {
                break;
            }
            resume = Some(cur);
        }
        add(&self.counters.lru_pages_scanned, scanned as u64);
        let mut written = 0;
        if claimed.len() > 0 {
            let ids: Vec<(u32, PageId)> = claimed
                .frames
                .iter()
                .map(|&f| (f, self.frames.frame(f).desc.page_id()))
                .collect();
            written = self.write_claimed(claimed, FlushKind::Lru, false)?;
            if written > 0 {
                let mut lists = self.lock_lists();
                for (f, id) in ids {
                    if lists.lru.contains(f)
                        && self.frames.frame(f).desc.page_id() == id
                        && self.try_evict_locked(&mut lists, f, Evictor::Manager)
                    {
                        self.push_free(f);
                    }
                }
            }
        }
        self.try_lru_scan.store(true, SeqCst);
        Ok(freed + written)
    }

    /// Frees one frame from the LRU tail in the calling thread: evicts the first clean unpinned
    /// page, or writes the first unpinned dirty one and evicts it. The frame goes to the caller.
    /// Pinned pages are passed over ([`claim_to_free`](Self::claim_to_free)): the scan restarts
    /// from the tail at every call, so a page it could never write would be picked every time.
    /// InnoDB: `buf_flush_single_page_from_LRU`.
    pub(crate) fn single_page_flush(&self) -> Result<Option<u32>, PoolError> {
        let mut claimed = Claimed::new(self);
        {
            let mut lists = self.lock_lists();
            inc(&self.counters.lru_scans);
            let mut cur = lists.lru.tail();
            let mut scanned = 0u64;
            while cur != NIL {
                scanned += 1;
                let prev = lists.lru.prev(cur);
                if self.try_evict_locked(&mut lists, cur, Evictor::User) {
                    add(&self.counters.lru_pages_scanned, scanned);
                    return Ok(Some(cur));
                }
                if self.claim_to_free(&mut claimed, cur) {
                    break;
                }
                cur = prev;
            }
            add(&self.counters.lru_pages_scanned, scanned);
        }
        let Some(&f) = claimed.frames.first() else {
            inc(&self.counters.single_page_flush_failures);
            return Ok(None);
        };
        let id = self.frames.frame(f).desc.page_id();
        if self.write_claimed(claimed, FlushKind::SinglePage, false)? == 0 {
            inc(&self.counters.single_page_flush_failures);
            return Ok(None);
        }
        let mut lists = self.lock_lists();
        if lists.lru.contains(f)
            && self.frames.frame(f).desc.page_id() == id
            && self.try_evict_locked(&mut lists, f, Evictor::User)
        {
            return Ok(Some(f));
        }
        Ok(None)
    }
}
