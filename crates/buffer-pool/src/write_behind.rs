//! Write-behind: pages their writer has finished with (the left page of a split that appended —
//! a load in key order will not come back to it), written soon in small batches instead of all
//! at once by the next checkpoint, for the tablespaces whose store asks for it
//! ([`PageStore::write_behind`](crate::PageStore::write_behind)).
//!
//! Why: where writing a page costs CPU (page compression: zlib 6 compresses at ~165 MiB/s a
//! core, slower than one thread loads rows), a load followed by a checkpoint does the two one
//! after the other, and the checkpoint's compression is the larger part. Written while the load
//! goes on, the compression runs beside it, on a core the loading thread does not use.
//!
//! The hint only queues the page; whoever runs [`BufferPool::write_behind`] (the engine's page
//! cleaner, woken by the waker each time a batch is queued) writes it through the ordinary
//! flush path — the WAL rule, latches, the write barrier of an open commit unit — so a hinted
//! page is written exactly as a flush-list batch would write it. A page still held by the
//! thread that hinted it (X-latched) or changed by a commit unit still open stays queued for the
//! next batch; one that was evicted, freed or already written is forgotten.

use std::sync::Arc;

use barracuda_page::PageId;
use parking_lot::Mutex;

use crate::descriptor::State;
use crate::flush::{Claimed, FlushKind};
use crate::inner::Inner;
use crate::stats::inc;
use crate::PoolError;

/// Hinted pages that wake the writer: enough to make one `write_pages` call worth its log sync
/// and doublewrite batch, few enough that the writer keeps close behind the load.
pub const WRITE_BEHIND_BATCH: usize = 32;
/// Most pages queued: a writer that cannot keep up (or none at all) costs the hinting threads
/// nothing beyond this; further hints are dropped, and the checkpoint writes those pages.
const MAX_QUEUED: usize = 4096;

/// Called when a batch of hinted pages is ready (from the hinting thread: it must not block).
pub type WriteBehindWaker = Arc<dyn Fn() + Send + Sync>;

/// The queue of hinted pages and who to wake for them.
pub(crate) struct WriteBehind {
    queue: Mutex<Vec<(u32, PageId)>>,
    waker: Mutex<Option<WriteBehindWaker>>,
}

impl WriteBehind {
    pub(crate) fn new() -> Self {
        Self {
            queue: Mutex::new(Vec::new()),
            waker: Mutex::new(None),
        }
    }

    pub(crate) fn set_waker(&self, waker: Option<WriteBehindWaker>) {
        *self.waker.lock() = waker;
    }

    /// Pages queued now.
    pub(crate) fn queued(&self) -> usize {
        self.queue.lock().len()
    }

    /// Empties the queue.
    pub(crate) fn discard(&self) {
        self.queue.lock().clear();
    }
}

impl Inner {
    /// Queues page `id` in frame `f` for write-behind, if its tablespace wants it.
    pub(crate) fn hint_write_behind(&self, f: u32, id: PageId) {
        if !self.store.write_behind(id.space_id) {
            return;
        }
        let ready = {
            let mut queue = self.write_behind.queue.lock();
            if queue.len() >= MAX_QUEUED {
                inc(&self.counters.write_behind_dropped);
                return;
            }
            queue.push((f, id));
            queue.len().is_multiple_of(WRITE_BEHIND_BATCH)
        };
        inc(&self.counters.write_behind_hints);
        if ready {
            let waker = self.write_behind.waker.lock().clone();
            if let Some(wake) = waker {
                wake();
            }
        }
    }

    /// Writes the queued pages that can be written now (at most `max_pages`), keeping queued
    /// those that cannot yet; returns how many were written.
    pub(crate) fn write_behind_batch(&self, max_pages: usize) -> Result<usize, PoolError> {
        let taken: Vec<(u32, PageId)> = {
            let mut queue = self.write_behind.queue.lock();
            let n = queue.len().min(max_pages);
            queue.drain(..n).collect()
        };
        if taken.is_empty() {
            return Ok(0);
        }
        let mut claimed = Claimed::new(self);
        let mut later = Vec::new();
        {
            let _fl = self.flush_list.lock();
            for &(f, id) in &taken {
                let frame = &self.frames.frame(f);
                let d = &frame.desc;
                if d.state() != State::Valid || d.page_id() != id || !d.is_dirty() {
                    continue; // evicted, freed, reused or written since the hint
                }
                if frame.latch.is_locked_exclusive() || self.behind_write_barrier(f) {
                    later.push((f, id)); // its writer is not done with it yet
                    continue;
                }
                self.claim_for_flush(&mut claimed, f);
            }
        }
        if !later.is_empty() {
            let mut queue = self.write_behind.queue.lock();
            let room = MAX_QUEUED.saturating_sub(queue.len());
            queue.splice(0..0, later.into_iter().take(room));
        }
        if claimed.len() == 0 {
            return Ok(0);
        }
        self.write_claimed(claimed, FlushKind::WriteBehind, false)
    }
}
