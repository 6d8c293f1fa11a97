//! The background LRU manager thread: refills the free list from the LRU tail.
//!
//! Its rhythm depends on the policy in force (re-read every round):
//! - `Backoff`: Percona's `buf_lru_manager_thread` — sleep (uninterruptibly: Percona uses
//!   `os_thread_sleep`), then one LRU batch of up to `lru_scan_depth` pages, with Percona's
//!   adaptive sleep (starts at 1000 ms; 0 when the free list is < 1 % full and the last batch
//!   freed something; +1 ms when > 20 % full or the last batch freed nothing; −50 ms when < 5 %
//!   full; capped at 1000 ms = `srv_cleaner_max_lru_time`). A requester arriving while it sleeps
//!   waits up to a second: the stalls of J.-F. Gagné's 2022 posts. The percentages are computed
//!   exactly (InnoDB uses integer division, which makes "< 1 %" impossible below 100 pages).
//! - `Legacy`: the page cleaner's LRU batch once a second (INNODB-FACTS §1.9).
//! - `Eager` (ours): wakes every 10 ms, or at once when a requester sees the free list below the
//!   low watermark; measures the consumption rate (EWMA of frames taken per ms) and refills the
//!   free list up to `2 × rate × 10 ms` frames (clamped to `[depth/8, depth]`, `depth` =
//!   `lru_scan_depth`); the low watermark is half of that. It runs batch after batch without
//!   sleeping only while the free list is below the low watermark and the last batch made
//!   progress (freed frames or wrote pages). While the threads taking frames keep the list above
//!   the low watermark themselves (they free a clean page per frame taken below the high one,
//!   `policy/eager.rs`), its period doubles up to 160 ms, and falls back to 10 ms at the first
//!   round that finds the list below the low watermark.

use std::sync::atomic::{
    AtomicBool,
    Ordering::{Relaxed, SeqCst},
};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use crate::inner::Inner;
use crate::stats::inc;
use crate::FreePagePolicy;

/// Percona `srv_cleaner_max_lru_time` (ms): longest LRU manager sleep, and the first one.
const MAX_LRU_SLEEP_MS: u64 = 1000;
/// Legacy page cleaner period.
const LEGACY_PERIOD: Duration = Duration::from_secs(1);
/// Eager manager period.
const EAGER_PERIOD_MS: f64 = 10.0;
/// Eager's longest sleep: the period doubles, up to this, while the threads taking frames keep
/// the free list above the low watermark themselves (`policy/eager.rs`), so that a manager with
/// nothing to do does not take a busy core from them a hundred times a second.
const EAGER_IDLE_PERIOD_MS: f64 = 160.0;
/// Weight of a new sample in the consumption-rate EWMA.
const EWMA_WEIGHT: f64 = 0.3;

#[derive(Default)]
struct Flags {
    wake: bool,
    policy_changed: bool,
}

/// How threads talk to the manager.
pub(crate) struct ManagerSignal {
    flags: Mutex<Flags>,
    cv: Condvar,
    /// Fast-path check so requesters do not take the mutex when a wake is already pending.
    wake_pending: AtomicBool,
    /// Backoff requesters' flag (Percona: the LRU manager's "flush requested" hint); only read
    /// when the manager wakes on its own schedule.
    lru_flush_requested: AtomicBool,
}

impl ManagerSignal {
    pub(crate) fn new() -> Self {
        Self {
            flags: Mutex::new(Flags::default()),
            cv: Condvar::new(),
            wake_pending: AtomicBool::new(false),
            lru_flush_requested: AtomicBool::new(false),
        }
    }

    /// Eager: wake the manager now.
    pub(crate) fn wake(&self) {
        if self.wake_pending.swap(true, SeqCst) {
            return;
        }
        self.flags.lock().wake = true;
        self.cv.notify_one();
    }

    /// Backoff: note that a requester found the free list empty (does not cut a sleep short).
    pub(crate) fn request_lru_flush(&self) {
        self.lru_flush_requested.store(true, Relaxed);
    }

    /// The policy changed: re-evaluate the rhythm at once.
    pub(crate) fn policy_changed(&self) {
        self.flags.lock().policy_changed = true;
        self.cv.notify_all();
    }

    /// Shutdown: wake for good.
    pub(crate) fn notify_shutdown(&self) {
        let _flags = self.flags.lock();
        self.cv.notify_all();
    }

    /// Sleeps `dur`; returns early on shutdown, a policy change, or (if `wakeable`) a wake.
    fn sleep(&self, inner: &Inner, dur: Duration, wakeable: bool) {
        let deadline = Instant::now() + dur;
        let mut flags = self.flags.lock();
        loop {
            if inner.shutdown.load(SeqCst) {
                return;
            }
            if flags.policy_changed {
                flags.policy_changed = false;
                return;
            }
            if wakeable && flags.wake {
                flags.wake = false;
                self.wake_pending.store(false, SeqCst);
                return;
            }
            if self.cv.wait_until(&mut flags, deadline).timed_out() {
                if wakeable {
                    flags.wake = false;
                    self.wake_pending.store(false, SeqCst);
                }
                return;
            }
        }
    }
}

/// The manager's nice value: the lowest priority (see [`lower_own_priority`]).
const MANAGER_NICE: libc::c_int = 19;

/// Runs the calling thread (the manager) at nice [`MANAGER_NICE`].
///
/// The manager refills the free list ahead of the threads that need frames, which is worth
/// doing on a core that would otherwise idle, not by taking one from them: at the default
/// priority, a user thread that woke it was often preempted on the spot (the woken manager
/// had run less), and a manager preempted while holding the LRU mutex left every thread that
/// needed it waiting. Measured with `barracuda-peers --engines barracuda --phases get_quarter`
/// (two readers, two cores, 5-s runs): p99.9 73-171 us at nice 0, 48-92 us at nice 19, the
/// same throughput (EXPERIMENTS §16). When the manager cannot keep up, the policies already
/// make a thread that finds the free list empty free a frame itself; for a random load through
/// a pool a quarter of the data (`hot_paths`, dirty pages written from the LRU tail) that cost
/// nothing measurable: 22.3-23.8 us a row at either priority, single-page flushes 11-13 k of
/// 590 k pages written either way. (InnoDB raises its page cleaners' priority instead, because
/// there user threads wait for them; here they need not.)
#[expect(
    unsafe_code,
    reason = "setpriority(2) for the manager thread (measured: get_quarter p99.9 -35 to -50 %)"
)]
fn lower_own_priority() {
    // SAFETY: `gettid` and `setpriority` take plain integers and touch no memory of ours;
    // on Linux, PRIO_PROCESS with a thread id sets that thread's nice value alone.
    let rc = unsafe {
        let tid = libc::syscall(libc::SYS_gettid);
        libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, MANAGER_NICE)
    };
    if rc != 0 {
        tracing::debug!(
            error = %std::io::Error::last_os_error(),
            "LRU manager: cannot lower its priority; it runs at the default one"
        );
    }
}

/// Percona `buf_lru_manager_adapt_sleep_time` (percentages computed exactly, see module doc).
pub(crate) fn adapt_backoff_sleep(sleep_ms: &mut u64, free: usize, max_free: usize, freed: usize) {
    let (free, max_free) = (free as u64 * 100, max_free as u64);
    if free < max_free && freed > 0 {
        // Free list < 1 % full and the last batch did something: no sleep.
        *sleep_ms = 0;
    } else if free > max_free * 20 || (free < max_free && freed == 0) {
        // > 20 % full, or nothing could be freed: sleep a bit more.
        *sleep_ms = (*sleep_ms + 1).min(MAX_LRU_SLEEP_MS);
    } else if free < max_free * 5 && *sleep_ms >= 50 {
        // < 5 % full: sleep less.
        *sleep_ms -= 50;
    }
}

/// Eager's target free-list length for a consumption rate (frames/ms).
pub(crate) fn eager_high_watermark(rate_per_ms: f64, depth: usize) -> usize {
    let floor = (depth / 8).max(2);
    let want = (rate_per_ms * EAGER_PERIOD_MS * 2.0).ceil();
    let want = if want.is_finite() && want > 0.0 {
        want as usize
    } else {
        0
    };
    want.clamp(floor, depth.max(floor))
}

/// The thread body.
pub(crate) fn run(inner: &Arc<Inner>) {
    lower_own_priority();
    let mut backoff_sleep_ms = MAX_LRU_SLEEP_MS;
    // What the last batch achieved (frames freed plus pages written; see `lru_batch`). Pages it
    // claimed but could not write do not count: a manager counting them would never sleep while
    // a waiter holds the tail pages X-latched, spinning a core to no effect.
    let mut last_progress = 0usize;
    let mut rate = 0.0f64;
    let mut last_taken = inner.frames_taken.load(Relaxed);
    let mut last_at = Instant::now();
    let mut eager_period_ms = EAGER_PERIOD_MS;
    while !inner.shutdown.load(SeqCst) {
        let policy = inner.policy();
        match policy {
            FreePagePolicy::Eager => {
                let low = inner.eager_low_watermark.load(Relaxed);
                if inner.free_len.load(Relaxed) >= low || last_progress == 0 {
                    inner.manager.sleep(
                        inner,
                        Duration::from_secs_f64(eager_period_ms / 1000.0),
                        true,
                    );
                }
            }
            FreePagePolicy::Backoff => {
                inner
                    .manager
                    .sleep(inner, Duration::from_millis(backoff_sleep_ms), false);
            }
            FreePagePolicy::Legacy => inner.manager.sleep(inner, LEGACY_PERIOD, false),
        }
        if inner.shutdown.load(SeqCst) {
            break;
        }
        if inner.policy() != policy {
            continue; // switched while sleeping: take the new rhythm
        }
        let depth = inner.scan_depth();
        inc(&inner.counters.manager_rounds);
        inner.unzip_rates.rotate_if_due();
        let result = match policy {
            FreePagePolicy::Eager => {
                let now = Instant::now();
                let taken = inner.frames_taken.load(Relaxed);
                let ms = now.duration_since(last_at).as_secs_f64() * 1000.0;
                if ms > 0.0 {
                    let sample = (taken - last_taken) as f64 / ms;
                    rate = rate * (1.0 - EWMA_WEIGHT) + sample * EWMA_WEIGHT;
                }
                last_taken = taken;
                last_at = now;
                let high = eager_high_watermark(rate, depth);
                let low = (high / 2).max(1);
                inner.eager_low_watermark.store(low, Relaxed);
                inner.eager_high_watermark.store(high, Relaxed);
                let free = inner.free_len.load(Relaxed);
                eager_period_ms = if free < low {
                    EAGER_PERIOD_MS
                } else {
                    (eager_period_ms * 2.0).min(EAGER_IDLE_PERIOD_MS)
                };
                if free < high {
                    inner.lru_batch(depth.max(high), high)
                } else {
                    Ok(0)
                }
            }
            FreePagePolicy::Backoff => {
                let lru_len = inner.lock_lists().lru.len();
                adapt_backoff_sleep(
                    &mut backoff_sleep_ms,
                    inner.free_len.load(Relaxed),
                    lru_len.min(depth),
                    last_progress,
                );
                inner.manager.lru_flush_requested.store(false, Relaxed);
                inner.lru_batch(depth, depth)
            }
            FreePagePolicy::Legacy => inner.lru_batch(depth, depth),
        };
        match result {
            Ok(n) => last_progress = n,
            Err(e) => {
                last_progress = 0;
                tracing::warn!(error = %e, "LRU manager: batch failed");
            }
        }
    }
    inner.manager_running.store(false, SeqCst);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_sleep_adapts_like_percona() {
        let mut s = 1000;
        adapt_backoff_sleep(&mut s, 0, 1024, 10);
        assert_eq!(s, 0, "empty free list and progress: no sleep");
        adapt_backoff_sleep(&mut s, 500, 1024, 10);
        assert_eq!(s, 1, "over 20 % full: +1 ms");
        s = 500;
        adapt_backoff_sleep(&mut s, 30, 1024, 10);
        assert_eq!(s, 450, "under 5 %: -50 ms");
        s = 1000;
        adapt_backoff_sleep(&mut s, 0, 1024, 0);
        assert_eq!(s, 1000, "capped");
        s = 300;
        adapt_backoff_sleep(&mut s, 100, 1024, 3);
        assert_eq!(s, 300, "5..20 %: unchanged");
    }

    #[test]
    fn eager_watermark_is_clamped() {
        assert_eq!(eager_high_watermark(0.0, 1024), 128);
        assert_eq!(eager_high_watermark(20.0, 1024), 400);
        assert_eq!(eager_high_watermark(1e9, 1024), 1024);
        assert_eq!(eager_high_watermark(f64::NAN, 16), 2);
    }
}
