//! Poisoning: what the pool does when memory holds a change that must never reach disk.
//!
//! A mini-transaction changes pages under exclusive latches and records each change
//! ([`ExclusiveGuard::mark_dirty`](crate::ExclusiveGuard::mark_dirty)) when it commits. If it
//! stops part-way — an error after its first byte changed, or a panic — the frames it touched
//! hold half a change. Writing them would put a structure on disk that no log record explains;
//! handing them out would let other threads build on it. So the pool:
//! - marks each such frame *poisoned*: it is never written and never evicted (a re-read would
//!   bring back the old image beside pages that already hold the new one), and every later
//!   request for the page fails with [`PoolError::PoisonedPage`];
//! - *stops all page writes*: other dirty pages may hold the other half of the same change, and
//!   without a redo log nothing could tell the halves apart after a restart.
//!
//! The owner (the engine) does the same when it finds a half-applied change of its own (a batch
//! of rows that failed part-way): [`BufferPool::stop_writes`](crate::BufferPool::stop_writes).
//! Disk then keeps what was written before, and the owner reopens from there.

use std::sync::atomic::{AtomicBool, Ordering::SeqCst};

use barracuda_page::PageId;
use parking_lot::Mutex;

use crate::inner::Inner;
use crate::PoolError;

/// The pool-wide write stop and its first reason.
#[derive(Default)]
pub(crate) struct WriteStop {
    stopped: AtomicBool,
    reason: Mutex<Option<String>>,
}

impl Inner {
    /// Poisons frame `f` (holding page `id`, X-latched by the caller) and stops all writes.
    pub(crate) fn poison_frame(&self, f: u32, id: PageId) {
        if let Some(frame) = self.frames.get(f as usize) {
            frame.desc.poisoned.store(true, SeqCst);
        }
        self.stop_writes(format!(
            "{id} was left half-changed by a mini-transaction that did not complete"
        ));
    }

    /// Stops every later page write, keeping the first reason given.
    pub(crate) fn stop_writes(&self, reason: String) {
        let mut first = self.write_stop.reason.lock();
        if first.is_none() {
            tracing::error!(%reason, "buffer pool: page writes stopped");
            *first = Some(reason);
        }
        self.write_stop.stopped.store(true, SeqCst);
    }

    /// Why page writes are stopped, if they are.
    pub(crate) fn writes_stopped(&self) -> Option<String> {
        if !self.write_stop.stopped.load(SeqCst) {
            return None;
        }
        Some(
            self.write_stop
                .reason
                .lock()
                .clone()
                .unwrap_or_else(|| "page writes stopped".to_owned()),
        )
    }

    /// `Err(WritesStopped)` once writes are stopped.
    pub(crate) fn check_writes_allowed(&self) -> Result<(), PoolError> {
        match self.writes_stopped() {
            None => Ok(()),
            Some(reason) => Err(PoolError::WritesStopped { reason }),
        }
    }
}
