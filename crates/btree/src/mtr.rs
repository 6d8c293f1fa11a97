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

use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};

use barracuda_buffer_pool::ExclusiveGuard;
use barracuda_page::{IndexPage, Lsn, PageId, PageSize, Record};
use smallvec::SmallVec;

use crate::error::{BTreeError, Result};

/// What an mtr reports to the log at commit.
#[derive(Debug)]
pub struct MtrSummary<'a> {
    /// Pages the mtr changed, in the order they were handed to it.
    pub pages: &'a [PageChange<'a>],
}

/// One page an mtr changed, as the log needs it to record the change.
#[derive(Debug, Clone)]
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
    /// Changes the B-tree described itself ([`IndexChange`], records already encoded), in
    /// the order made: they were made before `before` was captured (if it was), so the page
    /// is `described` replayed from the page as the mtr found it, then the difference from
    /// `before` to `after`.
    pub described: &'a [DescribedChange<'a>],
    /// Bytes of a created page its builder knows to be zeros (the free gap of a split's new
    /// index page, built from zeros by inserts alone); empty when nothing is known. A log may
    /// write the page's image without them, and without reading them.
    pub zero_gap: Range<usize>,
    /// The page before the first described change, when the pool keeps it
    /// ([`PoolConfig::keep_described_from`](barracuda_buffer_pool::PoolConfig::keep_described_from)):
    /// for a log that checks its records reproduce `after`.
    pub described_from: Option<&'a [u8]>,
}

/// A change to an index page that the B-tree describes to the log logically, because its
/// replay — the same [`barracuda_page::IndexPage`] function on the same bytes — is cheaper to
/// log than to find by diffing (a leaf insert changes ~200 scattered bytes of a page).
/// InnoDB: `MLOG_COMP_REC_INSERT`, `MLOG_COMP_REC_DELETE`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexChange<'a> {
    /// `record` was inserted as record `pos` ([`barracuda_page::IndexPage::insert`]).
    Insert {
        /// Its position.
        pos: usize,
        /// The record.
        record: Record<'a>,
    },
    /// Record `pos` was replaced by `record` ([`barracuda_page::IndexPage::replace`]).
    Replace {
        /// Its position.
        pos: usize,
        /// The new record.
        record: Record<'a>,
    },
    /// Record `pos` was removed ([`barracuda_page::IndexPage::remove`]).
    Remove {
        /// Its position.
        pos: usize,
    },
    /// Records `at..` were removed and the page compacted: what
    /// [`barracuda_page::IndexPage::split_off`] leaves of the page it splits.
    Truncate {
        /// The first record removed.
        at: usize,
    },
    /// `bytes` were written at `offset` (a header field such as a sibling link).
    Written {
        /// Where.
        offset: usize,
        /// What.
        bytes: &'a [u8],
    },
}

/// An [`IndexChange`] as the log receives it: a record in its heap encoding (the bytes
/// [`Record::encode_to`] writes, made when the change was described), so that the log copies
/// it instead of decoding and encoding it again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DescribedChange<'a> {
    /// An encoded record was inserted as record `pos` ([`IndexChange::Insert`]).
    Insert {
        /// Its position.
        pos: usize,
        /// The record's encoding ([`Record::decode_exact`] reads it back).
        encoded: &'a [u8],
    },
    /// Record `pos` was replaced by an encoded record ([`IndexChange::Replace`]).
    Replace {
        /// Its position.
        pos: usize,
        /// The new record's encoding.
        encoded: &'a [u8],
    },
    /// Record `pos` was removed ([`IndexChange::Remove`]).
    Remove {
        /// Its position.
        pos: usize,
    },
    /// Records `at..` were removed and the page compacted ([`IndexChange::Truncate`]).
    Truncate {
        /// The first record removed.
        at: usize,
    },
    /// `bytes` were written at `offset` ([`IndexChange::Written`]).
    Written {
        /// Where.
        offset: usize,
        /// What.
        bytes: &'a [u8],
    },
}

/// A described change kept by the mtr until commit: its record's encoding lives in
/// [`Mtr::described_bytes`].
#[derive(Debug, Clone)]
struct Described {
    page: PageId,
    kind: DescribedKind,
    pos: usize,
    record: std::ops::Range<usize>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DescribedKind {
    Insert,
    Replace,
    Remove,
    Truncate,
    Written,
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
    /// The compressed tree whose pages' blocks the commit brings in step (row compression).
    zip: Option<&'a crate::zip::ZipIndex>,
    // Inline: most mtrs change one to three pages with one described change each, and heap
    // vectors here cost a one-row commit ~7 allocations per mtr.
    changed: SmallVec<[ExclusiveGuard<'a>; INLINE_PAGES]>,
    described: SmallVec<[Described; INLINE_PAGES]>,
    /// The encodings of the described changes' records, back to back.
    described_bytes: SmallVec<[u8; INLINE_RECORD_BYTES]>,
    /// Created pages' known zero bytes ([`note_zero_gap`](Self::note_zero_gap)).
    zero_gaps: SmallVec<[(PageId, Range<usize>); 1]>,
}

/// Pages (and described changes) an mtr holds without allocating.
const INLINE_PAGES: usize = 4;
/// Bytes of described records an mtr holds without allocating (a row of a few hundred bytes).
const INLINE_RECORD_BYTES: usize = 512;

impl<'a> Mtr<'a> {
    /// Starts an mtr that will log through `log`.
    pub fn new(log: &'a dyn LogSink) -> Self {
        Self {
            log,
            zip: None,
            changed: SmallVec::new(),
            described: SmallVec::new(),
            described_bytes: SmallVec::new(),
            zero_gaps: SmallVec::new(),
        }
    }

    /// An mtr of a row-compressed tree: before it commits, the blocks of the tree's index pages
    /// it changed are brought in step with their frames (recompressed where a structure change
    /// left them stale, given to new pages), see [`crate::zip`].
    pub(crate) fn with_zip(mut self, zip: Option<&'a crate::zip::ZipIndex>) -> Self {
        self.zip = zip;
        self
    }

    /// Describes the change just made to `guard`'s page through
    /// [`ExclusiveGuard::described_change_mut`], so the log can record it logically instead of
    /// by a before/after diff. Call it once per change, right after making it, before the
    /// guard is handed to the mtr with [`changed`](Self::changed).
    ///
    /// Ignored when the page already has a before-image or was created by the guard: the
    /// diff (or the created page's image) then covers the change. Fails if the record has no
    /// valid encoding — impossible for a record the page just took — and the caller must then
    /// abandon the mtr (the change is made but could not be logged).
    pub fn describe(&mut self, guard: &ExclusiveGuard<'_>, change: IndexChange<'_>) -> Result<()> {
        if guard.before_image().is_some() || guard.is_created() {
            return Ok(());
        }
        let start = self.described_bytes.len();
        let (kind, pos, record) = match change {
            IndexChange::Insert { pos, record } => (DescribedKind::Insert, pos, Some(record)),
            IndexChange::Replace { pos, record } => (DescribedKind::Replace, pos, Some(record)),
            IndexChange::Remove { pos } => (DescribedKind::Remove, pos, None),
            IndexChange::Truncate { at } => (DescribedKind::Truncate, at, None),
            IndexChange::Written { offset, bytes } => {
                self.described_bytes.extend_from_slice(bytes);
                (DescribedKind::Written, offset, None)
            }
        };
        // The page took the record already: its encoding is copied from the heap rather than
        // made a second time (a load describes every row it writes).
        // The record's length is known, so its range is read from the slot, not by decoding
        // it again (debug builds compare the bytes with a fresh encoding below).
        let on_page = record.and_then(|record| {
            let page = IndexPage::open_trusted(&guard[..], PageSize::from_bytes(guard.len())?);
            let range = page
                .ok()?
                .encoded_record_range_of_len(pos, record.encoded_len())
                .ok()?;
            guard.get(range)
        });
        if let Some(encoded) = on_page {
            #[cfg(debug_assertions)]
            if let Some(record) = record {
                let mut expected = Vec::new();
                let encodes = record.encode_to(&mut expected).is_ok();
                debug_assert!(
                    encodes && expected == encoded,
                    "the page's record {pos} is the one described"
                );
            }
            self.described_bytes.extend_from_slice(encoded);
        } else if let Some(record) = record {
            self.described_bytes.resize(start + record.encoded_len(), 0);
            let out = self.described_bytes.get_mut(start..).unwrap_or_default();
            if let Err(what) = record.encode_into(out) {
                self.described_bytes.truncate(start);
                return Err(BTreeError::corrupt(
                    guard.page_id(),
                    format!("a record the page took has no encoding: {what}"),
                ));
            }
        }
        self.described.push(Described {
            page: guard.page_id(),
            kind,
            pos,
            record: start..self.described_bytes.len(),
        });
        Ok(())
    }

    /// Hands a changed page to the mtr: its latch is kept until commit.
    pub fn changed(&mut self, guard: ExclusiveGuard<'a>) {
        self.changed.push(guard);
    }

    /// Notes that the bytes `gap` of page `id`, which this mtr created, are zeros (the page
    /// started as the pool's zeroed frame and nothing wrote there since): its log records
    /// may leave them out without reading them — a split's new page is 16 KiB of which a
    /// sequential load's split fills a few hundred bytes. Ignored for a page the mtr did not
    /// create. The caller answers for the zeros; debug builds of the engine's log check them.
    pub(crate) fn note_zero_gap(&mut self, id: PageId, gap: Range<usize>) {
        self.zero_gaps.push((id, gap));
    }

    /// Makes room for `changes` more described changes of about `bytes` encoded bytes in all:
    /// a large mtr (a run of rows) then grows its buffers once instead of doubling them, and
    /// copying what they hold, as it goes.
    pub fn reserve(&mut self, changes: usize, bytes: usize) {
        self.described.reserve(changes);
        self.described_bytes.reserve(bytes);
    }

    /// Takes back the latched page `id` if this mtr holds it (handed over by
    /// [`changed`](Self::changed)), so that the same mtr can change it again: a page latch is
    /// not reentrant, and latching it anew would wait on the mtr's own latch. Hand it back
    /// with `changed`; a taken guard dropped after a change is a change never logged, which
    /// poisons the page as any abandoned change does.
    pub fn take_changed(&mut self, id: PageId) -> Option<ExclusiveGuard<'a>> {
        let at = self.changed.iter().position(|g| g.page_id() == id)?;
        Some(self.changed.remove(at))
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
        if let Some(zip) = self.zip {
            crate::zip::sync_pages(zip, &mut self.changed);
        }
        let range = {
            let (grouped, spans) = self.group_by_page(self.described_changes());
            let pages: SmallVec<[PageChange<'_>; INLINE_PAGES]> = self
                .changed
                .iter()
                .zip(spans)
                .map(|(guard, span)| PageChange {
                    id: guard.page_id(),
                    created: guard.is_created(),
                    before: guard.before_image(),
                    after: &guard[..],
                    described: grouped.get(span).unwrap_or_default(),
                    zero_gap: self
                        .zero_gaps
                        .iter()
                        .find(|(id, _)| *id == guard.page_id() && guard.is_created())
                        .map_or(0..0, |(_, gap)| gap.clone()),
                    described_from: guard.described_from(),
                })
                .collect();
            self.log.commit_mtr(&MtrSummary { pages: &pages })?
        };
        for guard in &mut self.changed {
            // Not through `DerefMut`: a before-image taken now would be a page copy for nothing.
            guard.stamp_page_lsn(range.end);
            guard.mark_dirty_since(range.start, range.end);
        }
        self.log.mtr_closed(range);
        // Latches are released only now, after the pages carry the LSN.
        self.changed.clear();
        Ok(Some(range.end))
    }

    /// `changes` (the described changes, in order) grouped by the page they change, pages in
    /// the order of `changed`, each page's changes in the order made; and each page's span of
    /// the groups. Linear in changes and pages: a run of rows over many leaves describes a
    /// change per row on each of a dozen pages, where a search of every change per page was
    /// quadratic. A change of a page not handed to the mtr is left out (nothing logs it).
    /// Changes that are grouped already — the common case: a run describes its undo page's
    /// changes, then each leaf's — come back as they are, without a copy.
    fn group_by_page<'c>(
        &self,
        changes: SmallVec<[DescribedChange<'c>; INLINE_PAGES]>,
    ) -> (
        SmallVec<[DescribedChange<'c>; INLINE_PAGES]>,
        SmallVec<[std::ops::Range<usize>; INLINE_PAGES]>,
    ) {
        let pages = self.changed.len();
        if let Some(spans) = self.spans_if_grouped() {
            return (changes, spans);
        }
        // Each change's page, as an index into `changed` (`pages`: none) beside the change's
        // own index. A page's changes mostly follow each other, so the search starts at the
        // last page found.
        let mut owned: SmallVec<[(usize, usize); INLINE_PAGES]> =
            SmallVec::with_capacity(changes.len());
        let mut last = 0;
        for (i, d) in self.described.iter().enumerate() {
            if self.changed.get(last).is_none_or(|g| g.page_id() != d.page) {
                last = self
                    .changed
                    .iter()
                    .position(|g| g.page_id() == d.page)
                    .unwrap_or(pages);
            }
            owned.push((last, i));
        }
        // Stable: each page's changes stay in the order made.
        owned.sort_by_key(|&(owner, _)| owner);
        let mut grouped = SmallVec::with_capacity(owned.len());
        let mut spans = SmallVec::with_capacity(pages);
        let mut at = 0;
        for page in 0..pages {
            let start = grouped.len();
            while let Some(&(_, i)) = owned.get(at).filter(|(owner, _)| *owner == page) {
                grouped.extend(changes.get(i).copied());
                at += 1;
            }
            spans.push(start..grouped.len());
        }
        (grouped, spans)
    }

    /// Each page's span of the described changes if every page's changes follow each other
    /// in the order of `changed` and every change is of a page handed to the mtr; `None`
    /// otherwise (they must be regrouped).
    fn spans_if_grouped(&self) -> Option<SmallVec<[std::ops::Range<usize>; INLINE_PAGES]>> {
        let mut spans = SmallVec::with_capacity(self.changed.len());
        let mut described = self.described.iter().peekable();
        let mut at = 0;
        for guard in &self.changed {
            let id = guard.page_id();
            let start = at;
            while described.next_if(|d| d.page == id).is_some() {
                at += 1;
            }
            spans.push(start..at);
        }
        described.peek().is_none().then_some(spans)
    }

    /// The described changes, their records' encodings borrowed from
    /// [`Self::described_bytes`].
    fn described_changes(&self) -> SmallVec<[DescribedChange<'_>; INLINE_PAGES]> {
        self.described
            .iter()
            .map(|d| {
                let bytes = self
                    .described_bytes
                    .get(d.record.clone())
                    .unwrap_or_default();
                match d.kind {
                    DescribedKind::Insert => DescribedChange::Insert {
                        pos: d.pos,
                        encoded: bytes,
                    },
                    DescribedKind::Replace => DescribedChange::Replace {
                        pos: d.pos,
                        encoded: bytes,
                    },
                    DescribedKind::Remove => DescribedChange::Remove { pos: d.pos },
                    DescribedKind::Truncate => DescribedChange::Truncate { at: d.pos },
                    DescribedKind::Written => DescribedChange::Written {
                        offset: d.pos,
                        bytes,
                    },
                }
            })
            .collect()
    }
}
