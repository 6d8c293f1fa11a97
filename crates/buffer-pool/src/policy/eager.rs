//! [`FreePagePolicy::Eager`](crate::FreePagePolicy::Eager): ours. The free list is kept between
//! two watermarks sized from the rate frames are taken (`manager.rs`). A thread that takes a
//! frame while the list is below the high one frees a clean page from the LRU tail itself, one
//! for one; only what that cannot do — dirty pages to write, the list below the low watermark —
//! wakes the LRU manager; and when the list still runs dry the requester frees a frame itself at
//! once.
//!
//! Why the threads that take frames free them, and not the manager alone: on a machine whose
//! cores are all busy with those threads, the manager's CPU time is taken from one of them, a
//! whole batch at a time. Two readers missing a pool a quarter of their data on two cores
//! (`barracuda-peers --phases get_quarter`) were preempted by the manager about 330 times a
//! second for a median 69 µs each (sched_switch trace), which was their p99.9 latency; freeing a
//! clean page is a few hundred nanoseconds of work no one waits for, spread over the misses
//! that need it.

use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

use super::{sleep, FreeWait};
use crate::inner::{Evictor, Inner};
use crate::lru::NIL;
use crate::stats::inc;
use crate::PoolError;

/// Yields before sleeping when nothing at all is evictable (every frame pinned or being written).
const YIELDS_BEFORE_SLEEP: u32 = 8;
/// Sleep per iteration when nothing is evictable.
const ALL_BUSY_SLEEP: Duration = Duration::from_micros(50);
/// Pages from the LRU tail a thread looks at for a clean one to free after taking a frame:
/// enough to pass a page being read or written, few enough to stay cheap behind dirty pages
/// (which are the manager's).
const INLINE_SCAN: usize = 4;

impl Inner {
    /// After a frame was taken: below the high watermark, free one clean page from the LRU tail
    /// onto the free list; wake the manager when that found none and the list is below the low
    /// watermark.
    ///
    /// The LRU mutex is waited for, not tried: it is held for list updates only, and with two
    /// readers missing on two cores a `try_lock` failed often enough that the free list fell
    /// below the low watermark and woke the manager about a hundred times a second (1,074
    /// preemptions of a reader by the manager in a 10-s `get_quarter`, against 80 waiting).
    pub(crate) fn eager_after_take(&self) {
        let free = self.free_len.load(Relaxed);
        if free >= self.eager_high_watermark.load(Relaxed) {
            return;
        }
        if !self.free_one_clean(INLINE_SCAN) && free < self.eager_low_watermark.load(Relaxed) {
            self.manager.wake();
        }
    }

    /// Evicts the first clean, unpinned page among the `scan` oldest of the LRU and puts its
    /// frame on the free list. False when the LRU is at its minimum length or none of those
    /// pages could be evicted (dirty, pinned, latched or being written).
    fn free_one_clean(&self, scan: usize) -> bool {
        let mut lists = self.lock_lists();
        if lists.lru.len() <= lists.lru.min_len() {
            return false;
        }
        let mut cur = lists.lru.tail();
        for _ in 0..scan {
            if cur == NIL {
                break;
            }
            let prev = lists.lru.prev(cur);
            if self.try_evict_locked(&mut lists, cur, Evictor::User) {
                drop(lists);
                self.push_free(cur);
                return true;
            }
            cur = prev;
        }
        false
    }

    /// One iteration: wake the manager (first iteration; counts `wait_free`), evict a clean page
    /// from the LRU tail (scan ≤ `lru_scan_depth`), else write one dirty page and take its frame.
    /// Only when neither is possible (every page pinned, latched or being written) does it yield
    /// and then sleep 50 µs per iteration, bounded by `all_pinned_timeout`.
    pub(crate) fn eager_step(&self, wait: &FreeWait) -> Result<Option<u32>, PoolError> {
        if wait.iteration == 0 {
            inc(&self.counters.wait_free);
            self.manager.wake();
        }
        if let Some(f) = self.scan_and_evict(self.scan_depth(), Evictor::User) {
            return Ok(Some(f));
        }
        if let Some(f) = self.single_page_flush()? {
            return Ok(Some(f));
        }
        if wait.iteration < YIELDS_BEFORE_SLEEP {
            std::thread::yield_now();
        } else {
            inc(&self.counters.lru_get_free_waits);
            sleep(ALL_BUSY_SLEEP);
        }
        Ok(None)
    }
}
