//! [`FreePagePolicy::Eager`](crate::FreePagePolicy::Eager): ours. The LRU manager keeps the free
//! list above a watermark (see `manager.rs`); when it still runs dry the requester frees a frame
//! itself at once.

use std::time::Duration;

use super::{sleep, FreeWait};
use crate::inner::{Evictor, Inner};
use crate::stats::inc;
use crate::PoolError;

/// Yields before sleeping when nothing at all is evictable (every frame pinned or being written).
const YIELDS_BEFORE_SLEEP: u32 = 8;
/// Sleep per iteration when nothing is evictable.
const ALL_BUSY_SLEEP: Duration = Duration::from_micros(50);

impl Inner {
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
