//! [`FreePagePolicy::Backoff`](crate::FreePagePolicy::Backoff): Percona's
//! `innodb_empty_free_list_algorithm=backoff` (INNODB-FACTS §1.5).

use std::time::Duration;

use super::{sleep, FreeWait};
use crate::inner::Inner;
use crate::stats::inc;

/// Percona `MAX_FREE_LIST_BACKOFF_SLEEP`, µs.
const MAX_BACKOFF_SLEEP_US: u64 = 10_000;

/// The sleep of backoff iteration `n` (≥ 3), µs: 1, 2, 4 (n = 3..5), 16 (6, 7), 32 (8..10),
/// then 2^(n−5): 64, 128, … capped at 10 000 µs from n = 19 on. Percona, normal priority
/// (divider 1).
pub(crate) fn backoff_sleep_us(n: u32) -> u64 {
    let i = match n {
        0..=5 => n.saturating_sub(3),
        6 | 7 => 4,
        8..=10 => 5,
        _ => n - 5,
    };
    if i >= 20 {
        return MAX_BACKOFF_SLEEP_US;
    }
    (1u64 << i).min(MAX_BACKOFF_SLEEP_US)
}

impl Inner {
    /// One iteration of the backoff loop: the requester never scans, evicts or flushes. It
    /// raises the LRU manager's request flag (which the manager only sees at its next wake: its
    /// sleep is not interrupted, as Percona's `os_thread_sleep`), then yields (iterations 0–2,
    /// twice each, as a normal-priority thread) or sleeps [`backoff_sleep_us`].
    /// `Innodb_buffer_pool_wait_free` is bumped once per request that waits.
    pub(crate) fn backoff_step(&self, wait: &FreeWait) {
        let n = wait.iteration;
        if n == 0 {
            inc(&self.counters.wait_free);
            self.manager.request_lru_flush();
        }
        if n < 3 {
            std::thread::yield_now();
            std::thread::yield_now();
        } else {
            inc(&self.counters.lru_get_free_waits);
            sleep(Duration::from_micros(backoff_sleep_us(n)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sleeps_follow_percona_schedule() {
        let got: Vec<u64> = (3..=20).map(backoff_sleep_us).collect();
        assert_eq!(
            got,
            vec![
                1, 2, 4, 16, 16, 32, 32, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 10_000,
                10_000
            ]
        );
        assert_eq!(backoff_sleep_us(1000), 10_000);
    }
}
