//! Counters of the lock manager.

use std::sync::atomic::{AtomicU64, Ordering};

/// A snapshot of the lock manager's counters (InnoDB: `Innodb_row_lock_*` and the deadlock
/// monitor's figures). Counters count since the manager was created; gauges are as of now.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct LockStats {
    /// Whether deadlock detection is on.
    pub deadlock_detect: bool,
    /// The lock wait timeout in force, in milliseconds.
    pub wait_timeout_ms: u64,
    /// Lock requests (granted at once, after a wait, or refused).
    pub requests: u64,
    /// Requests that had to wait (InnoDB: `Innodb_row_lock_waits`).
    pub waits: u64,
    /// Microseconds spent waiting, over all waits that ended (`Innodb_row_lock_time`).
    pub wait_time_us: u64,
    /// The longest wait that ended, in microseconds (`Innodb_row_lock_time_max`).
    pub wait_time_max_us: u64,
    /// Waits that ended in [`LockError::Timeout`](crate::LockError::Timeout).
    pub timeouts: u64,
    /// Deadlock searches (one per wait while detection is on).
    pub deadlock_searches: u64,
    /// Steps of those searches: one per transaction of a wait-for chain looked at.
    pub deadlock_search_steps: u64,
    /// Nanoseconds spent searching.
    pub deadlock_search_ns: u64,
    /// Deadlocks found (each once, by the search that chose its victim), including chains too
    /// deep to search.
    pub deadlocks: u64,
    /// Of `deadlocks`: chains longer than [`MAX_SEARCH_DEPTH`](crate::MAX_SEARCH_DEPTH).
    pub too_deep: u64,
    /// Locks held now.
    pub held_now: u64,
    /// Transactions waiting now (InnoDB: `Innodb_row_lock_current_waits`).
    pub waiting_now: u64,
}

#[derive(Default)]
pub(crate) struct Counters {
    pub(crate) requests: AtomicU64,
    pub(crate) waits: AtomicU64,
    pub(crate) wait_time_us: AtomicU64,
    pub(crate) wait_time_max_us: AtomicU64,
    pub(crate) timeouts: AtomicU64,
    pub(crate) deadlock_searches: AtomicU64,
    pub(crate) deadlock_search_steps: AtomicU64,
    pub(crate) deadlock_search_ns: AtomicU64,
    pub(crate) deadlocks: AtomicU64,
    pub(crate) too_deep: AtomicU64,
    /// Row locks held (transaction locks not counted), exact, not only a statistic:
    /// [`TrxLocks::locked_by_other`](crate::TrxLocks::locked_by_other) answers "nobody" at
    /// once when it is 0. A lock handed from its owner to a waiter stays counted.
    pub(crate) held_now: AtomicU64,
    pub(crate) waiting_now: AtomicU64,
}

impl Counters {
    pub(crate) fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn wait_ended(&self, micros: u64) {
        self.wait_time_us.fetch_add(micros, Ordering::Relaxed);
        self.wait_time_max_us.fetch_max(micros, Ordering::Relaxed);
        self.waiting_now.fetch_sub(1, Ordering::Relaxed);
    }

    pub(crate) fn snapshot(&self, deadlock_detect: bool, wait_timeout_ms: u64) -> LockStats {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        LockStats {
            deadlock_detect,
            wait_timeout_ms,
            requests: get(&self.requests),
            waits: get(&self.waits),
            wait_time_us: get(&self.wait_time_us),
            wait_time_max_us: get(&self.wait_time_max_us),
            timeouts: get(&self.timeouts),
            deadlock_searches: get(&self.deadlock_searches),
            deadlock_search_steps: get(&self.deadlock_search_steps),
            deadlock_search_ns: get(&self.deadlock_search_ns),
            deadlocks: get(&self.deadlocks),
            too_deep: get(&self.too_deep),
            held_now: get(&self.held_now),
            waiting_now: get(&self.waiting_now),
        }
    }
}
