//! Getting a free frame when the free list is empty: the pluggable [`FreePagePolicy`].
//!
//! InnoDB: `buf_LRU_get_free_block`. The policy is re-read at every iteration, so switching it
//! at run time affects threads already waiting.

mod backoff;
mod eager;
mod legacy;

use std::sync::atomic::Ordering::{Relaxed, SeqCst};
use std::time::{Duration, Instant};

use barracuda_page::Lsn;

use crate::inner::{Evictor, Inner};
use crate::lru::NIL;
use crate::stats::inc;
use crate::{FreePagePolicy, PoolError};

/// Iterations of a free-frame wait between checks that the open commit unit holds every frame
/// (a whole-LRU walk, so not every iteration).
const HELD_CHECK_EVERY: u32 = 16;
/// Consecutive checks finding every frame held before the wait fails.
const HELD_CHECKS_TO_FAIL: u32 = 3;

/// State of one request's wait for a free frame.
pub(crate) struct FreeWait {
    start: Instant,
    /// Loop iteration (InnoDB `n_iterations`).
    pub(crate) iteration: u32,
    deadline: Instant,
    /// Backoff's safety valve: after a full timeout with unpinned pages present, behave as
    /// Legacy (Percona hangs instead, see INNODB-FACTS §1.5 on small pools).
    pub(crate) backoff_gave_up: bool,
    /// Consecutive checks that found every frame held by the open commit unit.
    held_checks: u32,
}

impl Inner {
    /// A frame for a new page (`Free`, in no list), taken from the free list or, when it is empty,
    /// obtained as the current policy says. Errors: `AllPagesPinned` after a bounded wait; a store
    /// error from a single-page flush.
    pub(crate) fn get_free_frame(&self) -> Result<u32, PoolError> {
        if let Some(f) = self.pop_free() {
            self.note_frame_taken();
            return Ok(f);
        }
        inc(&self.counters.free_list_empty);
        let start = Instant::now();
        let result = self.get_free_frame_slow(start);
        self.wait_hist.record(start.elapsed());
        if result.is_ok() {
            self.note_frame_taken();
        }
        result
    }

    fn get_free_frame_slow(&self, start: Instant) -> Result<u32, PoolError> {
        let mut wait = FreeWait {
            start,
            iteration: 0,
            deadline: start + self.all_pinned_timeout,
            backoff_gave_up: false,
            held_checks: 0,
        };
        loop {
            if let Some(f) = self.pop_free() {
                return Ok(f);
            }
            if let Some(reason) = self.writes_stopped() {
                // No dirty page can be written, so no policy can wait for one to become clean:
                // a clean page is the only source left.
                return self
                    .scan_and_evict(self.capacity, Evictor::User)
                    .ok_or(PoolError::WritesStopped { reason });
            }
            let found = match self.policy() {
                FreePagePolicy::Backoff
                    if self.manager_running.load(SeqCst) && !wait.backoff_gave_up =>
                {
                    self.backoff_step(&wait);
                    None
                }
                // Percona: backoff applies only while the LRU manager runs.
                FreePagePolicy::Legacy | FreePagePolicy::Backoff => self.legacy_step(&wait)?,
                FreePagePolicy::Eager => self.eager_step(&wait)?,
            };
            if let Some(f) = found {
                return Ok(f);
            }
            wait.iteration = wait.iteration.saturating_add(1);
            if wait.iteration.is_multiple_of(HELD_CHECK_EVERY) {
                // Seen on consecutive checks, not once: a batch being written frees frames soon.
                wait.held_checks = if self.all_held_by_open_unit() {
                    wait.held_checks + 1
                } else {
                    0
                };
                if wait.held_checks >= HELD_CHECKS_TO_FAIL {
                    return Err(PoolError::HeldByOpenUnit {
                        capacity_pages: self.capacity,
                    });
                }
            }
            self.check_all_pinned(&mut wait)?;
        }
    }

    /// Whether no frame can ever be freed while the store's open commit unit stays open: no
    /// free frame, and every page is dirty behind the write barrier (pinned pages aside, which
    /// the waiting thread's own operation may hold). Waiting would wait for the caller itself.
    fn all_held_by_open_unit(&self) -> bool {
        if self.store.write_barrier() == Lsn::MAX || self.free_len.load(Relaxed) > 0 {
            return false;
        }
        let lists = self.lock_lists();
        let mut cur = lists.lru.tail();
        let mut held = 0usize;
        while cur != NIL {
            let d = &self.frames.frame(cur).desc;
            if d.flushing.load(SeqCst) {
                return false; // being written: its frame may come free
            }
            if d.is_dirty() && self.behind_write_barrier(cur) {
                held += 1;
            } else if d.pins() == 0 {
                return false;
            }
            cur = lists.lru.prev(cur);
        }
        held > 0
    }

    /// After the timeout: an error if no page in the LRU can be freed (every one pinned,
    /// poisoned or held behind the write barrier), else wait another timeout. The second case
    /// ends: the policies' single-page flush (Backoff falls back to Legacy after one timeout)
    /// frees a page no one pins at its next attempt, so only other threads taking the frames
    /// first keep this waiter waiting.
    fn check_all_pinned(&self, wait: &mut FreeWait) -> Result<(), PoolError> {
        let now = Instant::now();
        if now < wait.deadline {
            return Ok(());
        }
        if self.free_len.load(Relaxed) > 0 || self.any_freeable() {
            wait.deadline = now + self.all_pinned_timeout;
            wait.backoff_gave_up = true;
            tracing::warn!(
                waited_ms = now.duration_since(wait.start).as_millis() as u64,
                "difficult to find free blocks in the buffer pool; consider a larger pool"
            );
            return Ok(());
        }
        Err(PoolError::AllPagesPinned {
            capacity_pages: self.capacity,
            waited: now.duration_since(wait.start),
        })
    }

    /// Bookkeeping after a frame was taken: the consumption rate, and Eager's watermarks.
    pub(crate) fn note_frame_taken(&self) {
        self.frames_taken.fetch_add(1, Relaxed);
        if self.policy() == FreePagePolicy::Eager {
            self.eager_after_take();
        }
    }
}

/// Sleeps `d`: every sleep of the free-page policies goes through here.
fn sleep(d: Duration) {
    std::thread::sleep(d);
}
