//! Read-ahead: linear and random prefetch of an extent, done by a background read thread
//! (InnoDB: `buf0rea.cc`, `buf_read_ahead_linear` / `buf_read_ahead_random`, INNODB-FACTS §1.3).
//!
//! Differences from InnoDB, and why:
//! - the area is always one extent (`PageSize::pages_per_extent`); InnoDB shrinks it to
//!   `pool / 32` in tiny pools — we skip read-ahead instead when the pool holds fewer than four
//!   extents;
//! - linear read-ahead reads the adjacent extent by page number; InnoDB follows the boundary
//!   page's FIL_PAGE_NEXT/PREV pointer, which the pool cannot see (it depends only on page ids);
//! - the read thread never waits for a frame: it takes one from the free list or (except under
//!   `Backoff`, whose requesters never evict) evicts a clean page from the LRU tail, and drops the
//!   request otherwise.

use std::collections::VecDeque;
use std::sync::atomic::{
    AtomicUsize,
    Ordering::{Relaxed, SeqCst},
};
use std::sync::Arc;

use barracuda_page::PageId;
use parking_lot::{Condvar, Mutex};

use crate::descriptor::State;
use crate::inner::{Evictor, Inner};
use crate::stats::inc;
use crate::FreePagePolicy;

/// How far the read thread scans for a clean victim (InnoDB's first-scan threshold).
const READ_AHEAD_SCAN: usize = 100;

/// Why a page is prefetched (for the counters).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Kind {
    Linear,
    Random,
}

/// Pages waiting for the read thread.
pub(crate) struct ReadAheadQueue {
    queue: Mutex<VecDeque<(PageId, Kind)>>,
    cv: Condvar,
    /// Queued plus being read.
    pub(crate) pending: AtomicUsize,
}

impl ReadAheadQueue {
    pub(crate) fn new() -> Self {
        Self {
            queue: Mutex::new(VecDeque::new()),
            cv: Condvar::new(),
            pending: AtomicUsize::new(0),
        }
    }

    fn push(&self, pages: Vec<PageId>, kind: Kind) {
        if pages.is_empty() {
            return;
        }
        let mut q = self.queue.lock();
        self.pending.fetch_add(pages.len(), SeqCst);
        q.extend(pages.into_iter().map(|id| (id, kind)));
        self.cv.notify_one();
    }

    /// Wakes the thread for shutdown and drops what is queued.
    pub(crate) fn notify_shutdown(&self) {
        let mut q = self.queue.lock();
        self.pending.fetch_sub(q.len(), SeqCst);
        q.clear();
        self.cv.notify_all();
    }

    fn pop(&self, inner: &Inner) -> Option<(PageId, Kind)> {
        let mut q = self.queue.lock();
        loop {
            if inner.shutdown.load(SeqCst) {
                return None;
            }
            if let Some(item) = q.pop_front() {
                return Some(item);
            }
            self.cv.wait(&mut q);
        }
    }
}

/// The read thread's body.
pub(crate) fn run(inner: &Arc<Inner>) {
    while let Some((id, kind)) = inner.read_ahead.pop(inner) {
        inner.read_ahead_page(id, kind);
        inner.read_ahead.pending.fetch_sub(1, SeqCst);
    }
}

impl Inner {
    /// The read-ahead area (pages per extent), or `None` when read-ahead is not worth it now.
    fn read_ahead_area(&self) -> Option<u32> {
        let area = self.page_size.pages_per_extent();
        if area as usize > self.capacity / 4 {
            return None;
        }
        // InnoDB BUF_READ_AHEAD_PEND_LIMIT: not while half the pool is pending.
        if self.read_ahead.pending.load(Relaxed) > self.capacity / 2 {
            return None;
        }
        Some(area)
    }

    /// Linear read-ahead, evaluated at the first access of page `id`.
    /// InnoDB: `buf_read_ahead_linear`.
    pub(crate) fn linear_read_ahead(&self, id: PageId) {
        let threshold = self.ra_linear.load(Relaxed);
        if threshold == u32::MAX {
            return;
        }
        let Some(area) = self.read_ahead_area() else {
            return;
        };
        let low = id.page_no / area * area;
        let high = low + area;
        if id.page_no != low && id.page_no != high - 1 {
            return; // only the boundary pages of an extent trigger it
        }
        let Some(space_size) = self.store.space_size_pages(id.space_id) else {
            return;
        };
        if high > space_size {
            return;
        }
        let threshold = threshold.min(64) * area / 64;
        let ascending = id.page_no != low;
        let max_fail = area - threshold;
        let mut fail = 0u32;
        let mut pred: Option<u64> = None;
        for page_no in low..high {
            let t = self
                .peek_access(PageId::new(id.space_id, page_no))
                .map_or(0, |(t, _)| t);
            if t == 0 {
                fail += 1;
            } else if let Some(p) = pred {
                if t != p && (t > p) != ascending {
                    fail += 1;
                }
            }
            if fail > max_fail {
                return;
            }
            if t != 0 {
                pred = Some(t);
            }
        }
        let (from, to) = if ascending {
            (high, (high + area).min(space_size))
        } else if low == 0 {
            return;
        } else {
            (low - area, low)
        };
        let pages: Vec<PageId> = (from..to)
            .map(|p| PageId::new(id.space_id, p))
            .filter(|p| !self.hash.contains(*p))
            .collect();
        self.read_ahead.push(pages, Kind::Linear);
    }

    /// Random read-ahead, evaluated on a miss of page `id`: if at least `5 + area/8` pages of its
    /// extent are in the pool and were recently accessed (young by the freed-page clock), the
    /// rest of the extent is read. InnoDB: `buf_read_ahead_random`.
    pub(crate) fn random_read_ahead(&self, id: PageId) {
        if !self.ra_random.load(Relaxed) {
            return;
        }
        let Some(area) = self.read_ahead_area() else {
            return;
        };
        let Some(space_size) = self.store.space_size_pages(id.space_id) else {
            return;
        };
        let low = id.page_no / area * area;
        let high = (low + area).min(space_size);
        let threshold = 5 + area / 8;
        let recent = (low..high)
            .filter(|&p| {
                self.peek_access(PageId::new(id.space_id, p))
                    .is_some_and(|(t, young)| t != 0 && young)
            })
            .count() as u32;
        if recent < threshold {
            return;
        }
        let pages: Vec<PageId> = (low..high)
            .filter(|&p| p != id.page_no)
            .map(|p| PageId::new(id.space_id, p))
            .filter(|p| !self.hash.contains(*p))
            .collect();
        self.read_ahead.push(pages, Kind::Random);
    }

    /// Reads one prefetched page into the old-sublist head, unaccessed.
    fn read_ahead_page(&self, id: PageId, kind: Kind) {
        if self.hash.contains(id) {
            return;
        }
        let f = match self.pop_free() {
            Some(f) => f,
            None if self.policy() != FreePagePolicy::Backoff => {
                match self.scan_and_evict(READ_AHEAD_SCAN, Evictor::User) {
                    Some(f) => f,
                    None => return,
                }
            }
            None => return,
        };
        self.note_frame_taken();
        // A compressed page's block too, but only from memory at hand: read-ahead never waits.
        let zip = match self.zip_shift_of(id) {
            Some(shift) => {
                let Some(slot) = self.zip_alloc_at_hand(shift) else {
                    self.return_free(f);
                    return;
                };
                Some(slot)
            }
            None => None,
        };
        let (_pin, _latch, _) = match self.read_into_frame(f, id, zip) {
            Ok(Some(claimed)) => claimed,
            Ok(None) => return,
            Err(e) => {
                tracing::debug!(error = %e, "read-ahead of {id} failed");
                return;
            }
        };
        let frame = &self.frames.frame(f);
        frame.desc.read_ahead.store(true, SeqCst);
        frame.desc.transition(State::ReadPending, State::Valid);
        match kind {
            Kind::Linear => inc(&self.counters.read_ahead_linear),
            Kind::Random => inc(&self.counters.read_ahead_random),
        }
    }
}
