//! The frame prefaulter: a background thread that has the kernel back the frames the free list
//! will hand out next, so that a thread taking a never-used frame does not wait for the page
//! fault that zeroes its memory.
//!
//! Why: the frames are one lazily backed mapping (`frame.rs`), so the first write to each frame
//! is a page fault, and with transparent huge pages a fault zeroes 2 MiB. On this machine that
//! runs at about 0.9 GB/s on memory the process has not used before (EXPERIMENTS §16), which
//! was 12-15 % of a sequential load's time into a fresh pool — in the loading thread, inside
//! the page split that formats its new leaf. `MADV_POPULATE_WRITE` (Linux 5.14) backs a range
//! as a write fault would without changing a byte, so running it beside frames already in use
//! is harmless, and it can run on another core.
//!
//! How far ahead: a quarter of what the pool has used so far (at least [`MIN_LEAD`], at most
//! [`MAX_LEAD`]) past the first frame never handed out, so a pool that uses a few frames costs
//! at most [`MIN_LEAD`] more memory, and one filling quickly gets a lead that grows with it.
//! Populating costs a core about a second per GB here (the host backs the memory as it is
//! touched), and what is populated past the last frame a load uses is that much CPU spent for
//! nothing while the load's other threads (compression, the log) need the core: with the
//! lead as large as what was used, up to 64 MiB, the thread took most of a core during a 0.1-s
//! load of a page-compressed table (sched_switch trace), and sequential loads were no faster.
//! Never-used frames are handed out in ascending order (`free_list.rs`), so the range ahead of
//! the frontier is exactly the next frames to be used. Where the kernel refuses the advice (an
//! older kernel) the thread stops, and frames are backed on first touch as before.

use std::sync::atomic::{
    AtomicU64, AtomicUsize,
    Ordering::{Relaxed, SeqCst},
};

use parking_lot::{Condvar, Mutex};

use crate::inner::Inner;

/// The smallest lead, bytes: one transparent huge page, and a little more.
const MIN_LEAD: usize = 4 << 20;
/// The largest lead, bytes.
const MAX_LEAD: usize = 16 << 20;
/// Bytes populated per call: one huge page, so the thread notices shutdown and a moved frontier
/// between calls.
const STEP: usize = 2 << 20;
/// The frontier's advance, bytes, that wakes the thread to extend its lead.
const WAKE_EVERY: usize = 1 << 20;

/// What the pool's threads tell the prefaulter.
pub(crate) struct Prefault {
    /// The first frame never handed out, as the last `note_frontier` saw it.
    frontier: Mutex<usize>,
    cv: Condvar,
    /// The frontier (frames) past which a pop wakes the thread; read without the mutex.
    wake_at: AtomicUsize,
    /// Frames populated ahead of use, for the stats.
    pub(crate) frames_populated: AtomicU64,
}

impl Prefault {
    pub(crate) fn new() -> Self {
        Self {
            frontier: Mutex::new(0),
            cv: Condvar::new(),
            wake_at: AtomicUsize::new(0),
            frames_populated: AtomicU64::new(0),
        }
    }

    /// The free list's never-used frames now start at frame `frontier`. Costs one relaxed load
    /// unless the frontier moved [`WAKE_EVERY`] bytes past the last wake.
    ///
    /// Never waits: a thread taking a frame (a loader splitting a leaf) slept on this mutex
    /// while the prefault thread, preempted on the other core, held it (sched_switch traces of
    /// sequential loads: 2–5 sleeps of 2–5 ms each). When the mutex is busy, its holder is the
    /// prefault thread, awake, or another thread noting a frontier; `wake_at` has not moved,
    /// so the next frame taken tries again.
    pub(crate) fn note_frontier(&self, frontier: usize) {
        if frontier < self.wake_at.load(Relaxed) {
            return;
        }
        let Some(mut at) = self.frontier.try_lock() else {
            return;
        };
        if frontier > *at {
            *at = frontier;
            self.cv.notify_one();
        }
    }

    /// Wakes the thread to see the pool's shutdown flag.
    pub(crate) fn notify_shutdown(&self) {
        let _at = self.frontier.lock();
        self.cv.notify_all();
    }
}

/// The thread's body: keeps the frames from the frontier to the frontier plus the lead backed,
/// until every frame is or the pool shuts down.
pub(crate) fn run(inner: &Inner) {
    let state = &inner.prefault;
    let page = inner.page_size.bytes();
    let capacity = inner.capacity;
    let frames_per_step = (STEP / page).max(1);
    let wake_frames = (WAKE_EVERY / page).max(1);
    // Frames `0..populated` are backed (by this thread or by their first use).
    let mut populated = 0_usize;
    while populated < capacity {
        let frontier = {
            let mut at = state.frontier.lock();
            loop {
                if inner.shutdown.load(SeqCst) {
                    return;
                }
                let want = target(*at, page, capacity);
                if populated < want {
                    break *at;
                }
                state.wake_at.store(*at + wake_frames, Relaxed);
                state.cv.wait(&mut at);
            }
        };
        // Frames below the frontier were backed by their own first use.
        populated = populated.max(frontier);
        let want = target(frontier, page, capacity);
        while populated < want && !inner.shutdown.load(SeqCst) {
            let end = (populated + frames_per_step).min(want);
            if let Err(error) = inner.frames.populate(populated..end) {
                tracing::debug!(
                    %error,
                    "buffer pool: the kernel does not populate frames ahead of use \
                     (MADV_POPULATE_WRITE); they are backed on first touch"
                );
                return;
            }
            state
                .frames_populated
                .fetch_add((end - populated) as u64, Relaxed);
            populated = end;
        }
    }
}

/// The frame before which everything should be backed when the frontier is at `frontier`:
/// nothing before the first frame is used (a pool opened and never used costs nothing).
fn target(frontier: usize, page: usize, capacity: usize) -> usize {
    if frontier == 0 {
        return 0;
    }
    let used = frontier.saturating_mul(page);
    let lead = (used / 4).clamp(MIN_LEAD, MAX_LEAD);
    frontier.saturating_add(lead / page).min(capacity)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lead_grows_with_use_between_its_bounds() {
        let page = 16 << 10;
        let min = MIN_LEAD / page;
        let max = MAX_LEAD / page;
        assert_eq!(target(0, page, 1 << 20), 0);
        assert_eq!(target(1, page, 1 << 20), 1 + min);
        assert_eq!(target(10, page, 1 << 20), 10 + min);
        assert_eq!(target(1000, page, 1 << 20), 1000 + min);
        assert_eq!(target(4000, page, 1 << 20), 5000);
        assert_eq!(target(100_000, page, 1 << 20), 100_000 + max);
        assert_eq!(target(100_000, page, 100_500), 100_500);
    }
}
