//! Mini-transactions: the unit in which pages change.
//!
//! InnoDB: `mtr_t`. Every change to a page happens inside an [`Mtr`]: the B-tree latches the pages it
//! changes exclusively, changes them, and hands their guards to the mtr. At [`Mtr::commit`] the mtr
//! asks the [`LogSink`] for the LSN that ends its records, stamps every changed page with it (which
//! puts the page on the flush list), and only then releases the latches. That order is the WAL
//! rule's shape: no other thread can see, and the pool cannot write, a change before its log
//! records have an LSN. Until the redo log exists the sink is [`PlaceholderLog`], which hands out
//! increasing LSNs and writes nothing; the redo log plugs in behind the same trait.

use std::sync::atomic::{AtomicU64, Ordering};

use barracuda_buffer_pool::ExclusiveGuard;
use barracuda_page::{Lsn, PageId};

use crate::error::{BTreeError, Result};

/// What an mtr reports to the log at commit.
#[derive(Debug)]
pub struct MtrSummary<'a> {
    /// Pages the mtr changed, in the order they were handed to it.
    pub pages: &'a [PageId],
}

/// Receives committed mini-transactions and assigns them LSNs.
///
/// Implemented by the redo log; [`PlaceholderLog`] until then.
pub trait LogSink: Send + Sync {
    /// Appends the mtr's records and returns the LSN at which they end (strictly greater than every
    /// LSN returned before).
    fn commit_mtr(&self, mtr: &MtrSummary<'_>) -> std::result::Result<Lsn, BTreeError>;

    /// The newest LSN handed out so far.
    fn current_lsn(&self) -> Lsn;
}

/// A log that writes nothing and hands out increasing LSNs, so that flush-list order, page LSNs
/// and checkpoint ages already behave as they will with the redo log.
#[derive(Debug)]
pub struct PlaceholderLog {
    next_lsn: AtomicU64,
}

impl PlaceholderLog {
    /// A placeholder log whose first mtr gets an LSN above `start_lsn`.
    pub fn new(start_lsn: Lsn) -> Self {
        Self {
            next_lsn: AtomicU64::new(start_lsn),
        }
    }
}

impl PlaceholderLog {
    /// Makes later LSNs exceed `lsn` (a page LSN seen on disk): a page's next change always gets
    /// a higher LSN than the one it carries, even across restarts without a log.
    pub fn observe(&self, lsn: Lsn) {
        self.next_lsn.fetch_max(lsn, Ordering::AcqRel);
    }
}

impl Default for PlaceholderLog {
    fn default() -> Self {
        Self::new(0)
    }
}

impl LogSink for PlaceholderLog {
    fn commit_mtr(&self, mtr: &MtrSummary<'_>) -> std::result::Result<Lsn, BTreeError> {
        // Advance by one per page so the LSN grows with the amount of change, as a real log would.
        let step = mtr.pages.len().max(1) as u64;
        Ok(self.next_lsn.fetch_add(step, Ordering::AcqRel) + step)
    }

    fn current_lsn(&self) -> Lsn {
        self.next_lsn.load(Ordering::Acquire)
    }
}

/// A mini-transaction: owns the exclusive latches of the pages it changed until it commits.
#[must_use = "an mtr must be committed for its changes to be logged and its latches released"]
pub struct Mtr<'a> {
    log: &'a dyn LogSink,
    changed: Vec<ExclusiveGuard<'a>>,
    committed: bool,
}

impl<'a> Mtr<'a> {
    /// Starts an mtr that will log through `log`.
    pub fn new(log: &'a dyn LogSink) -> Self {
        Self {
            log,
            changed: Vec::new(),
            committed: false,
        }
    }

    /// Hands a changed page to the mtr: its latch is kept until commit.
    pub fn changed(&mut self, guard: ExclusiveGuard<'a>) {
        self.changed.push(guard);
    }

    /// Number of pages changed so far.
    pub fn len(&self) -> usize {
        self.changed.len()
    }

    /// Whether no page was changed.
    pub fn is_empty(&self) -> bool {
        self.changed.is_empty()
    }

    /// Logs the mtr, stamps its pages with the end LSN (marking them dirty) and releases them.
    /// Returns the end LSN, or `None` when the mtr changed nothing.
    pub fn commit(mut self) -> Result<Option<Lsn>> {
        self.finish()
    }

    fn finish(&mut self) -> Result<Option<Lsn>> {
        self.committed = true;
        if self.changed.is_empty() {
            return Ok(None);
        }
        let pages: Vec<PageId> = self.changed.iter().map(ExclusiveGuard::page_id).collect();
        let lsn = self.log.commit_mtr(&MtrSummary { pages: &pages })?;
        for guard in &mut self.changed {
            barracuda_page::set_page_lsn(guard, lsn);
            guard.mark_dirty(lsn);
        }
        // Latches are released only now, after the pages carry the LSN.
        self.changed.clear();
        Ok(Some(lsn))
    }
}

impl Drop for Mtr<'_> {
    fn drop(&mut self) {
        // Changes already applied to frames cannot be taken back (an mtr has no undo), so an mtr
        // abandoned by an early error return still stamps its pages: otherwise a changed page
        // would be treated as clean and its change lost at eviction.
        if !self.committed {
            if let Err(err) = self.finish() {
                tracing::error!(%err, "mini-transaction could not be logged at drop");
            }
        }
    }
}
