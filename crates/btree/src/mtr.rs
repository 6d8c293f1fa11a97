//! Mini-transactions: the unit in which pages change.
//!
//! InnoDB: `mtr_t`. Every change to a page happens inside an [`Mtr`]: the B-tree latches the pages it
//! changes exclusively, changes them, and hands their guards to the mtr. At [`Mtr::commit`] the mtr
//! asks the [`LogSink`] for the LSN that ends its records, stamps every changed page with it (which
//! puts the page on the flush list), and only then releases the latches. That order is the WAL
//! rule's shape: no other thread can see, and the pool cannot write, a change before its log
//! records have an LSN. The engine's sink is the redo log, which records each changed page as the
//! difference between its before-image (kept by the guard) and its image at commit
//! ([`PageChange`]); [`PlaceholderLog`] hands out increasing LSNs and writes nothing, for trees
//! that need no durability (tests, tools).

use std::sync::atomic::{AtomicU64, Ordering};

use barracuda_buffer_pool::ExclusiveGuard;
use barracuda_page::{Lsn, PageId};

use crate::error::{BTreeError, Result};

/// What an mtr reports to the log at commit.
#[derive(Debug)]
pub struct MtrSummary<'a> {
    /// Pages the mtr changed, in the order they were handed to it.
    pub pages: &'a [PageChange<'a>],
}

/// One page an mtr changed, as the log needs it to record the change.
#[derive(Debug, Clone, Copy)]
pub struct PageChange<'a> {
    /// The page.
    pub id: PageId,
    /// The mtr created the page: it started all zeros, whatever it held before.
    pub created: bool,
    /// The page before the mtr's first change, when the pool captures before-images
    /// ([`PoolConfig::capture_before_images`](barracuda_buffer_pool::PoolConfig::capture_before_images)).
    /// `None` for a created page (its before-image is all zeros), for a page the mtr did not
    /// change after all, and when the pool does not capture.
    pub before: Option<&'a [u8]>,
    /// The page now, still latched: nobody else can change it before the log has the change.
    pub after: &'a [u8],
}

/// The log positions an mtr's records occupy: from `start` (where its first record begins) to
/// `end` (where its last ends). Ranges of successive mtrs never overlap and grow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LsnRange {
    /// Where the mtr's records begin.
    pub start: Lsn,
    /// Where they end; strictly greater than `start`.
    pub end: Lsn,
}

/// Receives committed mini-transactions and assigns them LSNs.
///
/// Implemented by the redo log; [`PlaceholderLog`] until then.
pub trait LogSink: Send + Sync {
    /// Appends the mtr's records and returns the range of log they occupy: `start` is at or
    /// above every `end` returned before, `end > start`.
    fn commit_mtr(&self, mtr: &MtrSummary<'_>) -> std::result::Result<LsnRange, BTreeError>;

    /// The newest LSN handed out so far.
    fn current_lsn(&self) -> Lsn;

    /// Called once the mtr that got `range` has marked its pages dirty (they are on the flush
    /// list with their oldest modification) and before it releases them. A log that computes
    /// checkpoints from the flush list must not let a checkpoint pass `range.start` before this
    /// call (InnoDB: `log_sys.recent_closed`). Default: nothing.
    fn mtr_closed(&self, _range: LsnRange) {}
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
    fn commit_mtr(&self, mtr: &MtrSummary<'_>) -> std::result::Result<LsnRange, BTreeError> {
        // Advance by one per page so the LSN grows with the amount of change, as a real log would.
        let step = mtr.pages.len().max(1) as u64;
        let start = self.next_lsn.fetch_add(step, Ordering::AcqRel);
        Ok(LsnRange {
            start,
            end: start + step,
        })
    }

    fn current_lsn(&self) -> Lsn {
        self.next_lsn.load(Ordering::Acquire)
    }
}

/// A mini-transaction: owns the exclusive latches of the pages it changed until it commits.
///
/// All or nothing: an mtr that is dropped without [`commit`](Self::commit) (an early error
/// return, a panic) abandons its changes. It records nothing, and every page it changed is
/// *poisoned* by the buffer pool (see [`ExclusiveGuard`]): never written, never handed out
/// again, and the pool stops writing pages, so the half-done change can reach neither disk nor
/// another thread. Code that changes pages therefore acquires everything that can fail (pages,
/// frames, allocations, sibling latches) before its first change, so that only a bug or a
/// failing log can abandon an mtr with changes.
#[must_use = "an mtr must be committed for its changes to be logged and its latches released"]
pub struct Mtr<'a> {
    log: &'a dyn LogSink,
    changed: Vec<ExclusiveGuard<'a>>,
}

impl<'a> Mtr<'a> {
    /// Starts an mtr that will log through `log`.
    pub fn new(log: &'a dyn LogSink) -> Self {
        Self {
            log,
            changed: Vec::new(),
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

    /// Logs the mtr, stamps its pages with the end LSN and marks them dirty, then releases
    /// them. Returns the end LSN, or `None` when the mtr changed nothing. If the log refuses the
    /// records, the mtr is abandoned (its pages are poisoned, see the type's documentation).
    ///
    /// A page that was clean gets the mtr's *start* LSN as its oldest modification (InnoDB: the
    /// flush list holds `oldest_modification` = the start LSN of the first mtr that dirtied the
    /// page): a checkpoint at a page's oldest modification must replay that mtr, which begins
    /// there. With the end LSN, a checkpoint could land inside the mtr and skip it.
    pub fn commit(mut self) -> Result<Option<Lsn>> {
        if self.changed.is_empty() {
            return Ok(None);
        }
        let range = {
            let pages: Vec<PageChange<'_>> = self
                .changed
                .iter()
                .map(|guard| PageChange {
                    id: guard.page_id(),
                    created: guard.is_created(),
                    before: guard.before_image(),
                    after: &guard[..],
                })
                .collect();
            self.log.commit_mtr(&MtrSummary { pages: &pages })?
        };
        for guard in &mut self.changed {
            barracuda_page::set_page_lsn(guard, range.end);
            guard.mark_dirty_since(range.start, range.end);
        }
        self.log.mtr_closed(range);
        // Latches are released only now, after the pages carry the LSN.
        self.changed.clear();
        Ok(Some(range.end))
    }
}
