//! [`FreePagePolicy::Legacy`](crate::FreePagePolicy::Legacy): MySQL 5.6–8.0
//! `buf_LRU_get_free_block` (INNODB-FACTS §1.4).

use std::sync::atomic::Ordering::SeqCst;
use std::time::Duration;

use super::{sleep, FreeWait};
use crate::inner::{Evictor, Inner};
use crate::stats::inc;
use crate::PoolError;

/// InnoDB `BUF_LRU_SEARCH_SCAN_THRESHOLD`: the first scan looks at this many tail pages.
const SEARCH_SCAN_THRESHOLD: usize = 100;
/// Sleep per iteration from the third on.
const LEGACY_SLEEP: Duration = Duration::from_millis(10);
/// InnoDB warns after this many iterations.
const WARN_ITERATIONS: u32 = 20;

impl Inner {
    /// One iteration of the legacy loop (the free list was just found empty):
    /// 1. iteration 0, if `try_LRU_scan`: scan ≤100 tail pages for a clean victim (on failure
    ///    clear `try_LRU_scan`); iteration ≥1: scan the whole LRU;
    /// 2. iteration >1: sleep 10 ms (`buffer_LRU_get_free_waits`);
    /// 3. single-page flush from the LRU tail in this thread;
    /// 4. `Innodb_buffer_pool_wait_free` += 1.
    pub(crate) fn legacy_step(&self, wait: &FreeWait) -> Result<Option<u32>, PoolError> {
        let n = wait.iteration;
        if self.try_lru_scan.load(SeqCst) || n > 0 {
            let limit = if n == 0 {
                SEARCH_SCAN_THRESHOLD
            } else {
                usize::MAX
            };
            if let Some(f) = self.scan_and_evict(limit, Evictor::User) {
                return Ok(Some(f));
            }
            if n == 0 {
                self.try_lru_scan.store(false, SeqCst);
            }
        }
        if n > WARN_ITERATIONS && n % WARN_ITERATIONS == 1 {
            tracing::warn!(
                iterations = n,
                "difficult to find free blocks in the buffer pool; consider a larger pool"
            );
        }
        if n > 1 {
            inc(&self.counters.lru_get_free_waits);
            sleep(LEGACY_SLEEP);
        }
        let freed = self.single_page_flush()?;
        inc(&self.counters.wait_free);
        Ok(freed)
    }
}
