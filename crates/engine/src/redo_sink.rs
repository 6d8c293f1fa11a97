//! The engine's [`LogSink`]: turns each mini-transaction into redo records (the difference
//! between each changed page's before-image and its image at commit), appends them to the
//! [`RedoLog`], groups the mtrs of a multi-mtr change into one commit unit, and knows the LSN
//! below which a checkpoint is safe.
//!
//! Three invariants live here:
//! - **Commit units.** While a unit is open (a change made under the engine's unit lock), every
//!   mtr is appended as a part of it — another thread's lone mtr too, which is then recoverable
//!   only once the unit ends ([`wait_recoverable`]) — and [`write_barrier`] is the unit's
//!   start: the pool writes no page holding a change of the open unit, so a crash before the
//!   unit's last frame leaves neither its log (recovery discards incomplete units) nor its pages.
//! - **WAL for units.** A page may hold changes of a closed unit whose last frame is past the
//!   page's newest LSN; [`durable_lsn_for_page`] extends the WAL target to the end of that unit
//!   (the first unit end at or above the page's newest LSN: units do not interleave), so a page
//!   never reaches disk before the frame that makes its unit complete — and, unlike extending it
//!   to the newest unit's end, a page write does not wait for the log of commits made since.
//! - **Flush order.** An mtr gets its LSN range under `in_flight` and stays registered there
//!   until its pages are on the flush list ([`LogSink::mtr_closed`]); [`checkpoint_limit`] reads
//!   the log's end and the oldest registered start under the same lock, so a checkpoint never
//!   passes an mtr whose pages are not yet on the flush list (InnoDB: `flush_order_mutex`,
//!   later `recent_closed`).
//!
//! [`write_barrier`]: RedoSink::write_barrier
//! [`wait_recoverable`]: RedoSink::wait_recoverable
//! [`durable_lsn_for_page`]: RedoSink::durable_lsn_for_page
//! [`checkpoint_limit`]: RedoSink::checkpoint_limit

use std::collections::{HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

use parking_lot::{Condvar, Mutex};

use barracuda_btree::{BTreeError, DescribedChange, LogSink, LsnRange, MtrSummary};
use barracuda_page::{Lsn, PageId, PageSize};
use barracuda_redo::record::MtrWriter;
use barracuda_redo::RedoLog;

/// The payload of the frame that closes a commit unit when its last mtr's frame has already
/// left the log buffer (otherwise that frame's flag is cleared in place): one OPTION record
/// (changes no page) on page 0 of space 0, tagged so that a reader of the log can tell what
/// it is.
const UNIT_END_TAG: &[u8] = b"commit";

/// How many unit closes between two trims of [`RedoSink::unit_ends`].
const TRIM_EVERY: usize = 1024;

/// The redo log as the B-tree's log sink.
pub(crate) struct RedoSink {
    log: RedoLog,
    page_size: PageSize,
    /// Start LSNs of mtrs that have their range but whose pages are not all on the flush list
    /// yet. Appends happen under this lock.
    in_flight: Mutex<InFlight>,
    /// The open unit, if any.
    unit: Mutex<Option<OpenUnit>>,
    /// One above the log's end when the open unit began (pages whose newest change is at or
    /// above it hold the unit's changes), `Lsn::MAX` when none is open (read by page writers).
    barrier: AtomicU64,
    /// The ends of the units closed since the log was last known durable past them,
    /// ascending; older ones are dropped every [`TRIM_EVERY`] closes.
    unit_ends: Mutex<VecDeque<Lsn>>,
    /// Pages the open unit allocated that were free when it began: they may be written before
    /// the unit completes (if it never does, they are free again and their bytes irrelevant).
    /// Pages the unit freed are kept out, so a page freed and reallocated by the unit keeps its
    /// old contents on disk until the unit is complete.
    stealable: Mutex<(HashSet<PageId>, HashSet<PageId>)>,
    /// Bytes of redo records (frames excluded) appended.
    record_bytes: AtomicU64,
    /// The highest unit (or lone mtr) end recorded: an mtr ending at or below it belongs to a
    /// unit that has closed (units do not interleave).
    last_closed: AtomicU64,
    /// Signalled (with `unit` held) when a unit closes or is abandoned.
    unit_closed_signal: Condvar,
    /// Set when the engine turned read-only: the open unit, if any, never closes.
    abandoned: AtomicBool,
    /// Mtrs appended to the open unit so far (its own and lone mtrs that joined it); 0 when
    /// none is open. Read without a lock by [`unit_mtrs`](Self::unit_mtrs).
    unit_mtrs: AtomicU32,
    /// Record buffers of mtrs already appended, for the next ones to build in (at most
    /// [`SPARE_BUFFERS`], each at most [`SPARE_BUFFER_BYTES`]).
    spare_buffers: Mutex<Vec<Vec<u8>>>,
}

/// Record buffers kept for reuse: one per thread building an mtr at once, about.
const SPARE_BUFFERS: usize = 4;

/// A record buffer larger than this goes back to the allocator (a rare mtr of a whole page's
/// changes should not pin its memory).
const SPARE_BUFFER_BYTES: usize = 256 * 1024;

/// The mtrs between getting their LSN range and having their pages on the flush list, by start
/// LSN. Registered in increasing start order (under the lock that appends), closed in any
/// order: a deque of (start, open count) whose front is popped once closed, so registering and
/// finding the oldest are O(1) and closing is a binary search — it was a `BTreeMap`, whose node
/// churn showed in the profile of every mtr.
#[derive(Debug, Default)]
struct InFlight {
    starts: VecDeque<(Lsn, u32)>,
}

impl InFlight {
    fn register(&mut self, start: Lsn) {
        match self.starts.back_mut() {
            Some((last, count)) if *last == start => *count += 1,
            _ => {
                debug_assert!(self.starts.back().is_none_or(|&(last, _)| last < start));
                self.starts.push_back((start, 1));
            }
        }
    }

    fn close(&mut self, start: Lsn) {
        if let Ok(i) = self.starts.binary_search_by_key(&start, |&(s, _)| s) {
            if let Some((_, count)) = self.starts.get_mut(i) {
                *count = count.saturating_sub(1);
            }
        }
        while self.starts.front().is_some_and(|&(_, count)| count == 0) {
            self.starts.pop_front();
        }
    }

    /// The start of the oldest mtr still open.
    fn oldest(&self) -> Option<Lsn> {
        self.starts
            .iter()
            .find(|&&(_, count)| count > 0)
            .map(|&(s, _)| s)
    }
}

/// A commit unit being appended.
struct OpenUnit {
    /// The LSN range of its newest frame (`None` before its first mtr), which ends the unit
    /// if it is still in the log buffer when the unit closes ([`RedoLog::end_unit`]).
    last: Option<(Lsn, Lsn)>,
}

impl RedoSink {
    pub(crate) fn new(log: RedoLog, page_size: PageSize) -> Self {
        let end = log.current_lsn();
        Self {
            log,
            page_size,
            in_flight: Mutex::new(InFlight::default()),
            unit: Mutex::new(None),
            barrier: AtomicU64::new(Lsn::MAX),
            unit_ends: Mutex::new(VecDeque::from([end])),
            stealable: Mutex::new((HashSet::new(), HashSet::new())),
            record_bytes: AtomicU64::new(0),
            last_closed: AtomicU64::new(end),
            unit_closed_signal: Condvar::new(),
            abandoned: AtomicBool::new(false),
            unit_mtrs: AtomicU32::new(0),
            spare_buffers: Mutex::new(Vec::new()),
        }
    }

    /// The log.
    pub(crate) fn log(&self) -> &RedoLog {
        &self.log
    }

    /// Bytes of redo records appended since open (the payload of frames, frames excluded).
    pub(crate) fn record_bytes(&self) -> u64 {
        self.record_bytes.load(Ordering::Relaxed)
    }

    /// Opens a commit unit: every mtr until [`end_unit`](Self::end_unit) belongs to it. The
    /// caller holds the engine's unit lock, so units never nest or interleave; lone mtrs of
    /// other threads may join it.
    pub(crate) fn begin_unit(&self) {
        let mut unit = self.unit.lock();
        debug_assert!(unit.is_none(), "commit units do not nest");
        // Under `in_flight`, so no append slips between reading the end and raising the barrier.
        let _appends = self.in_flight.lock();
        // Above the log's end: a page the previous unit's last mtr changed has exactly the end
        // as its newest LSN (that frame may have closed the unit in place) and is not held,
        // while every mtr of this unit ends at least a frame above it.
        self.barrier
            .store(self.log.current_lsn() + 1, Ordering::SeqCst);
        *unit = Some(OpenUnit { last: None });
        self.unit_mtrs.store(0, Ordering::Relaxed);
        let mut sets = self.stealable.lock();
        sets.0.clear();
        sets.1.clear();
    }

    /// Closes the open unit with its last frame and returns the LSN a commit must wait for
    /// (`None` when the unit logged nothing). Pages holding its changes may be written after
    /// this, once the log is durable past the frame.
    pub(crate) fn end_unit(&self) -> Result<Option<Lsn>, barracuda_redo::RedoError> {
        let mut unit = self.unit.lock();
        let Some(open) = unit.take() else {
            return Ok(None);
        };
        self.unit_mtrs.store(0, Ordering::Relaxed);
        let Some(last) = open.last else {
            self.barrier.store(Lsn::MAX, Ordering::SeqCst);
            return Ok(None);
        };
        let mut w = MtrWriter::new(self.page_size);
        w.option(PageId::new(0, 0), UNIT_END_TAG)
            .map_err(|e| barracuda_redo::RedoError::BadOptions(e.to_string()))?;
        let bytes = w.finish();
        let end = {
            let _appends = self.in_flight.lock();
            let before = self.log.current_lsn();
            let end = self.log.end_unit(last, &bytes)?;
            if end > before {
                self.record_bytes
                    .fetch_add(bytes.len() as u64, Ordering::Relaxed);
            }
            end
        };
        // The end first: a page writer that sees the barrier lifted must also see how far the
        // log must be durable.
        self.unit_closed(end);
        self.barrier.store(Lsn::MAX, Ordering::SeqCst);
        // With `unit` held: a waiter checks `last_closed` under it before it sleeps.
        self.unit_closed_signal.notify_all();
        let mut sets = self.stealable.lock();
        sets.0.clear();
        sets.1.clear();
        Ok(Some(end))
    }

    /// Notes that `page` was allocated (its bit set) by the mtr about to commit.
    pub(crate) fn page_allocated(&self, page: PageId) {
        if self.unit.lock().is_some() {
            let mut sets = self.stealable.lock();
            let (allocated, freed) = &mut *sets;
            if !freed.contains(&page) {
                allocated.insert(page);
            }
        }
    }

    /// Notes that `page` was freed by the mtr about to commit. A page the unit itself allocated
    /// stays stealable (it was free before the unit, whatever happens to it now); only a page
    /// that was in use before the unit must keep its old contents on disk if the unit later
    /// reallocates it. (Splits allocate spare pages and free the unused ones, so this case is
    /// common.)
    pub(crate) fn page_freed(&self, page: PageId) {
        if self.unit.lock().is_some() {
            let mut sets = self.stealable.lock();
            let (allocated, freed) = &mut *sets;
            if !allocated.contains(&page) {
                freed.insert(page);
            }
        }
    }

    /// See [`PageStore::exempt_from_barrier`](barracuda_buffer_pool::PageStore::exempt_from_barrier).
    pub(crate) fn exempt_from_barrier(&self, page: PageId) -> bool {
        self.stealable.lock().0.contains(&page)
    }

    /// See [`PageStore::write_barrier`](barracuda_buffer_pool::PageStore::write_barrier).
    pub(crate) fn write_barrier(&self) -> Lsn {
        self.barrier.load(Ordering::SeqCst)
    }

    /// The LSN the log must be durable up to before a page whose newest change is `newest` is
    /// written: the end of the unit that change belongs to — the first unit end at or above
    /// `newest`, since units do not interleave. With none (the change is in the open unit, whose
    /// pages the write barrier holds back, or a dropped end was durable anyway) `newest`. A
    /// change made by a lone mtr outside any unit is recorded in no list: the answer is then the
    /// next unit's end or `newest`, which is at or above that mtr's end — waiting for more log
    /// than needed at worst, never less.
    pub(crate) fn durable_lsn_for_page(&self, newest: Lsn) -> Lsn {
        let ends = self.unit_ends.lock();
        let i = ends.partition_point(|&end| end < newest);
        ends.get(i).copied().unwrap_or(newest)
    }

    /// The LSN a lone mtr ending at `end` becomes recoverable at, once it is: its own end if
    /// no unit was open when it was appended, else the end of the unit it joined, waited for
    /// (a lone mtr appended while another thread's unit is open is part of that unit, and
    /// recovery keeps it only if the unit is complete). `None` when that unit will never close:
    /// the engine turned read-only with it open.
    pub(crate) fn wait_recoverable(&self, end: Lsn) -> Option<Lsn> {
        if self.last_closed.load(Ordering::Acquire) < end {
            let mut unit = self.unit.lock();
            while self.last_closed.load(Ordering::Acquire) < end {
                if self.abandoned.load(Ordering::Acquire) {
                    return None;
                }
                self.unit_closed_signal.wait(&mut unit);
            }
        }
        Some(self.durable_lsn_for_page(end))
    }

    /// Mtrs appended to the open unit so far, 0 when none is open. Every page they changed is
    /// held in the pool until the unit ends (the write barrier), so lone mtrs stop joining a
    /// unit that has many ([`EngineInner::check_writable_for_lone_mtr`]).
    ///
    /// [`EngineInner::check_writable_for_lone_mtr`]: crate::engine::EngineInner::check_writable_for_lone_mtr
    pub(crate) fn unit_mtrs(&self) -> u32 {
        self.unit_mtrs.load(Ordering::Relaxed)
    }

    /// The engine turned read-only: the open unit, if any, will not close; wakes every
    /// [`wait_recoverable`](Self::wait_recoverable).
    pub(crate) fn abandon_units(&self) {
        let _unit = self.unit.lock();
        self.abandoned.store(true, Ordering::Release);
        self.unit_closed_signal.notify_all();
    }

    /// Records the end of a unit (or lone mtr) that just closed. Ends the log is durable past
    /// are dropped now and then: a page whose unit ended there needs nothing more, and the
    /// lookup then answers a later end (more than needed, never less).
    fn unit_closed(&self, end: Lsn) {
        let mut ends = self.unit_ends.lock();
        if ends.back().is_none_or(|&last| last < end) {
            ends.push_back(end);
        }
        self.last_closed.fetch_max(end, Ordering::Release);
        if ends.len().is_multiple_of(TRIM_EVERY) {
            let durable = self.log.flushed_lsn();
            while ends.len() > 1 && ends.front().is_some_and(|&e| e <= durable) {
                ends.pop_front();
            }
        }
    }

    /// The highest LSN a checkpoint may be written at, given the oldest modification of the
    /// flush list read by `oldest` *after* this reads the log's end and the in-flight mtrs.
    ///
    /// The invariant: no mtr still in flight and no dirty page has its start below the LSN
    /// returned. Debug builds check it at the moment of the checkpoint (both minimums read
    /// again): a violation is a broken flush order, and the checkpoint it would write could
    /// skip a change that is only in memory.
    pub(crate) fn checkpoint_limit(&self, oldest: impl Fn() -> Option<Lsn>) -> Lsn {
        let (end, in_flight) = {
            let registered = self.in_flight.lock();
            (self.log.current_lsn(), registered.oldest())
        };
        // Read after: every mtr that had its LSN when `end` was read is now either registered
        // above or has its pages on the flush list.
        let dirty = oldest();
        let limit = [Some(end), in_flight, dirty]
            .into_iter()
            .flatten()
            .min()
            .unwrap_or(end);
        if cfg!(debug_assertions) {
            // Whatever joined either set since started at or after `end` (a new mtr) or was
            // already counted above (a registered mtr moving its pages to the flush list).
            let in_flight = self.in_flight.lock().oldest();
            let dirty = oldest();
            assert!(
                in_flight.is_none_or(|start| start >= limit) && dirty.is_none_or(|o| o >= limit),
                "flush order broken: a checkpoint chose LSN {limit} while an mtr in flight \
                 starts at {in_flight:?} and the oldest dirty page at {dirty:?}"
            );
        }
        limit
    }

    /// The records of one mtr.
    fn records(&self, mtr: &MtrSummary<'_>) -> Result<Vec<u8>, BTreeError> {
        let estimate = records_estimate(mtr, self.page_size);
        // A buffer of an earlier mtr: a fresh one of a run's ~20 KiB (or a split's 16 KiB
        // estimate) was allocated and freed per mtr, and the heap grown for it again and
        // again: `brk` waits for the memory-map lock, which the pool's prefault thread takes
        // to back frames (42 sleeps there in one sequential load of a million rows).
        let spare = self.spare_buffers.lock().pop().unwrap_or_default();
        let mut w = MtrWriter::reusing(self.page_size, spare, estimate);
        let invalid = |e: barracuda_redo::record::RecordError| BTreeError::Log(e.to_string());
        for page in mtr.pages {
            if page.created {
                w.log_created_page_known_zero(page.id, page.after, page.zero_gap.clone())
                    .map_err(invalid)?;
            } else {
                let start = w.len();
                for change in page.described {
                    match *change {
                        DescribedChange::Insert { pos, encoded } => {
                            w.index_insert_encoded(page.id, pos, encoded)
                        }
                        DescribedChange::Replace { pos, encoded } => {
                            w.index_replace_encoded(page.id, pos, encoded)
                        }
                        DescribedChange::Remove { pos } => w.index_remove(page.id, pos),
                        DescribedChange::Truncate { at } => w.index_truncate(page.id, at),
                        DescribedChange::Written { offset, bytes } => {
                            w.write(page.id, offset, bytes)
                        }
                    }
                    .map_err(invalid)?;
                }
                if let Some(before) = page.before {
                    w.log_page_diff(page.id, before, page.after)
                        .map_err(invalid)?;
                }
                if let Some(from) = page.described_from {
                    check_replay(
                        page.id,
                        from,
                        w.as_bytes().get(start..).unwrap_or_default(),
                        page.after,
                    )?;
                }
            }
        }
        if w.is_empty() {
            // Pages taken for change and left as they were: the mtr still needs an LSN range.
            let first = mtr.pages.first().map_or(PageId::new(0, 0), |p| p.id);
            w.option(first, &[]).map_err(invalid)?;
        }
        Ok(w.finish())
    }
}

/// About the bytes `mtr`'s records take: its described bytes with a record header each, a
/// created page's image (at most), a guess for a diffed page.
fn records_estimate(mtr: &MtrSummary<'_>, page_size: PageSize) -> usize {
    mtr.pages
        .iter()
        .map(|page| {
            if page.created {
                return page_size.bytes();
            }
            let described: usize = page
                .described
                .iter()
                .map(|change| {
                    16 + match *change {
                        DescribedChange::Insert { encoded, .. }
                        | DescribedChange::Replace { encoded, .. } => encoded.len(),
                        DescribedChange::Written { bytes, .. } => bytes.len(),
                        DescribedChange::Remove { .. } | DescribedChange::Truncate { .. } => 0,
                    }
                })
                .sum();
            described + page.before.map_or(0, |_| 256)
        })
        .sum()
}

/// Checks that `records` (an mtr's records from the first one about `page`) turn `from`, the
/// page before its first described change, into `after`: a description that does not
/// reproduce the page would make recovery build a different page. Run where the pool keeps
/// `from` (debug builds, tests); an error abandons the mtr, which poisons the page.
fn check_replay(page: PageId, from: &[u8], records: &[u8], after: &[u8]) -> Result<(), BTreeError> {
    let mut replayed = from.to_vec();
    barracuda_redo::record::apply_mtr(page, &mut replayed, records)
        .map_err(|e| BTreeError::Log(format!("replaying the described changes of {page}: {e}")))?;
    // Compared whole first: a slice comparison is one `memcmp` even unoptimised, where the
    // byte-by-byte search below dominated debug test runs (it runs at every mtr commit).
    if replayed.as_slice() == after {
        return Ok(());
    }
    match replayed
        .iter()
        .zip(after)
        .enumerate()
        .find(|(_, (a, b))| a != b)
    {
        None => Ok(()),
        Some((at, (replay, held))) => Err(BTreeError::Log(format!(
            "the redo records of {page} do not reproduce it: byte {at} replays as {replay:#04x}, \
             the page holds {held:#04x}"
        ))),
    }
}

impl LogSink for RedoSink {
    fn commit_mtr(&self, mtr: &MtrSummary<'_>) -> Result<LsnRange, BTreeError> {
        let bytes = self.records(mtr)?;
        let (start, end) = {
            let mut unit = self.unit.lock();
            let mut registered = self.in_flight.lock();
            let range = self
                .log
                .append_to_unit(&bytes, unit.is_some())
                .map_err(|e| BTreeError::Log(e.to_string()))?;
            registered.register(range.0);
            match unit.as_mut() {
                Some(open) => {
                    open.last = Some(range);
                    self.unit_mtrs.fetch_add(1, Ordering::Relaxed);
                }
                // A lone mtr outside any unit is recoverable once appended whole: only the
                // high-water mark moves (a mutex per mtr less than recording its end with the
                // units'; `durable_lsn_for_page` then answers the next unit end or the change's
                // own LSN, either at or above this mtr's end).
                None => {
                    self.last_closed.fetch_max(range.1, Ordering::Release);
                }
            }
            range
        };
        self.record_bytes
            .fetch_add(bytes.len() as u64, Ordering::Relaxed);
        if bytes.capacity() <= SPARE_BUFFER_BYTES {
            let mut spares = self.spare_buffers.lock();
            if spares.len() < SPARE_BUFFERS {
                spares.push(bytes);
            }
        }
        Ok(LsnRange { start, end })
    }

    fn current_lsn(&self) -> Lsn {
        self.log.current_lsn()
    }

    fn mtr_closed(&self, range: LsnRange) {
        self.in_flight.lock().close(range.start);
    }
}

#[cfg(test)]
mod tests {
    //! The flush-order invariant: a checkpoint never passes the start of an mtr whose pages are
    //! not on the flush list yet — step by step at the sink, and under concurrency in the engine.

    use std::collections::BTreeMap;
    use std::path::Path;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::sync::Arc;

    use parking_lot::Mutex;

    use barracuda_btree::{LogSink, LsnRange, MtrSummary, PageChange};
    use barracuda_io::FaultyFileSystem;
    use barracuda_page::{Lsn, PageId, PageSize};
    use barracuda_redo::{Durability, RedoLog, RedoOptions};

    use super::{InFlight, RedoSink};
    use crate::{Durability as CommitDurability, Engine, EngineOptions, TableOptions};

    fn sink() -> RedoSink {
        let fs = FaultyFileSystem::new();
        let options = RedoOptions {
            capacity: 1 << 20,
            buffer_bytes: 64 << 10,
            durability: Durability::None,
            ..RedoOptions::default()
        };
        let log = RedoLog::create(&fs, Path::new("/db"), &options).unwrap();
        RedoSink::new(log, PageSize::K4)
    }

    /// An mtr that creates page `page_no` of space 1.
    fn mtr(sink: &RedoSink, page_no: u32) -> LsnRange {
        let after = vec![7u8; 4096];
        let pages = [PageChange {
            id: PageId::new(1, page_no),
            created: true,
            before: None,
            after: &after,
            described: &[],
            zero_gap: 0..0,
            described_from: None,
        }];
        sink.commit_mtr(&MtrSummary { pages: &pages }).unwrap()
    }

    /// A page's WAL target is the end of its own unit, not the newest unit's: a page written
    /// while later commits are being made does not wait for their log.
    #[test]
    fn in_flight_mtrs_close_in_any_order_and_the_oldest_open_one_is_reported() {
        let mut f = InFlight::default();
        assert_eq!(f.oldest(), None);
        for start in [10, 20, 20, 30, 40] {
            f.register(start);
        }
        f.close(30);
        assert_eq!(f.oldest(), Some(10));
        f.close(10);
        assert_eq!(f.oldest(), Some(20), "two mtrs started at 20");
        f.close(20);
        assert_eq!(f.oldest(), Some(20), "one of them is still open");
        f.close(20);
        assert_eq!(f.oldest(), Some(40), "30 closed before");
        f.close(99); // never registered: nothing happens
        f.close(40);
        assert_eq!(f.oldest(), None);
        assert!(f.starts.is_empty(), "closed entries are dropped");
    }

    #[test]
    fn a_page_waits_for_the_end_of_its_own_unit_only() {
        let sink = sink();
        sink.begin_unit();
        let a1 = mtr(&sink, 1);
        let a2 = mtr(&sink, 2);
        let end_a = sink.end_unit().unwrap().unwrap();
        sink.begin_unit();
        let b1 = mtr(&sink, 3);
        assert_eq!(
            sink.durable_lsn_for_page(b1.end),
            b1.end,
            "a change of the open unit has no unit end yet"
        );
        let b2 = mtr(&sink, 4);
        let end_b = sink.end_unit().unwrap().unwrap();
        let lone = mtr(&sink, 5);
        assert!(a2.end <= end_a && end_a < b1.end && b2.end <= end_b && end_b < lone.end);
        assert_eq!(sink.durable_lsn_for_page(a1.end), end_a);
        assert_eq!(sink.durable_lsn_for_page(a2.end), end_a);
        assert_eq!(sink.durable_lsn_for_page(b1.end), end_b);
        assert_eq!(sink.durable_lsn_for_page(lone.end), lone.end);
        assert_eq!(
            sink.wait_recoverable(lone.end),
            Some(lone.end),
            "a lone mtr outside any unit is recoverable at once"
        );
        // Lone mtrs' ends are not recorded with the units': a later unit's end answers for
        // them, never less than their own.
        sink.begin_unit();
        mtr(&sink, 6);
        let end_c = sink.end_unit().unwrap().unwrap();
        assert_eq!(sink.durable_lsn_for_page(lone.end), end_c);
        assert!(end_c > lone.end);
        assert_eq!(
            sink.durable_lsn_for_page(b2.end),
            end_b,
            "units keep their own"
        );
    }

    /// A model of the pool's flush list: oldest modification → pages.
    #[derive(Default)]
    struct FlushList(Mutex<BTreeMap<Lsn, u32>>);

    impl FlushList {
        fn insert(&self, lsn: Lsn) {
            *self.0.lock().entry(lsn).or_insert(0) += 1;
        }

        fn oldest(&self) -> Option<Lsn> {
            self.0.lock().keys().next().copied()
        }
    }

    /// Each step of an mtr's life against a checkpoint, including the interleaving the order of
    /// the checkpoint's reads exists for: the mtr moves its pages to the flush list and leaves
    /// the registry right after the checkpoint read the flush list.
    #[test]
    fn a_checkpoint_never_passes_an_mtr_whose_pages_are_not_on_the_flush_list() {
        let sink = sink();
        let flush_list = FlushList::default();
        let m = mtr(&sink, 1);
        assert!(m.start < sink.log().current_lsn());

        // The mtr has its LSNs; its page is not on the flush list yet.
        let limit = sink.checkpoint_limit(|| flush_list.oldest());
        assert!(limit <= m.start, "checkpoint at {limit} passed {m:?}");

        // Its page goes to the flush list and it leaves the registry just after the
        // checkpoint's read of the flush list (the read said: nothing dirty).
        let closed = AtomicBool::new(false);
        let limit = sink.checkpoint_limit(|| {
            let oldest = flush_list.oldest();
            if !closed.swap(true, Ordering::SeqCst) {
                flush_list.insert(m.start);
                sink.mtr_closed(m);
            }
            oldest
        });
        assert!(limit <= m.start, "checkpoint at {limit} passed {m:?}");

        // Closed, its page dirty: the page holds the checkpoint back.
        assert_eq!(sink.checkpoint_limit(|| flush_list.oldest()), m.start);
        // Written: nothing holds it back.
        flush_list.0.lock().clear();
        assert_eq!(
            sink.checkpoint_limit(|| flush_list.oldest()),
            sink.log().current_lsn()
        );
    }

    /// Threads commit while another writes dirty pages and takes fuzzy checkpoints as fast as
    /// it can (without the commit lock, as the page cleaner does); every checkpoint checks the
    /// invariant at the moment it chooses its LSN (debug builds, in `checkpoint_limit`). Then a
    /// power loss right after a last checkpoint: recovery from it finds every committed row.
    #[test]
    fn checkpoints_taken_while_threads_commit_never_pass_a_change_not_on_the_flush_list() {
        const WRITERS: usize = 3;
        const ROWS: u32 = 400;
        let key = |i: u32| format!("k{:05}", (i * 7919) % ROWS).into_bytes();
        let tmp = tempfile::tempdir().unwrap();
        let fs = FaultyFileSystem::new();
        let options = EngineOptions::default()
            .page_size(PageSize::K4)
            .buffer_pool_bytes(512 * 4096)
            .redo_log_capacity(16 << 20)
            .durability(CommitDurability::SyncEachCommit)
            .file_system(Arc::new(fs.clone()));
        let db = Engine::open(tmp.path(), options.clone()).unwrap();
        let tables: Vec<_> = (0..WRITERS)
            .map(|w| {
                db.create_table(&format!("t{w}"), TableOptions::default())
                    .unwrap()
            })
            .collect();
        let writing = AtomicU64::new(WRITERS as u64);
        let checkpoints = std::thread::scope(|s| {
            for table in &tables {
                let (db, writing) = (&db, &writing);
                s.spawn(move || {
                    for i in 0..ROWS {
                        db.put(table, &key(i), &[i as u8; 150]).unwrap();
                    }
                    writing.fetch_sub(1, Ordering::SeqCst);
                });
            }
            let checkpointer = s.spawn(|| {
                let inner = &db.inner;
                let mut taken = 0u64;
                while writing.load(Ordering::SeqCst) > 0 {
                    inner.pool.flush_list_batch_below(64, Lsn::MAX).unwrap();
                    inner.fuzzy_checkpoint().unwrap();
                    taken += 1;
                }
                taken
            });
            checkpointer
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        });
        db.inner.fuzzy_checkpoint().unwrap();
        let moved = db.inner.counters.checkpoints.load(Ordering::Relaxed);
        // Most rounds find nothing new to checkpoint; each still checks the invariant.
        assert!(
            checkpoints >= 100 && moved >= 10,
            "{checkpoints} checkpoints taken, {moved} moved"
        );
        fs.crash().unwrap();
        drop(db);

        // Each writer wrote every key once (7919 is prime to ROWS): row `i` under key `i × 7919`.
        let expected: BTreeMap<Vec<u8>, Vec<u8>> =
            (0..ROWS).map(|i| (key(i), vec![i as u8; 150])).collect();
        let db = Engine::open(tmp.path(), options).unwrap();
        for w in 0..WRITERS {
            let table = db.table(&format!("t{w}")).unwrap();
            db.check_table(&table).unwrap();
            let rows: BTreeMap<Vec<u8>, Vec<u8>> =
                db.range(&table, ..).unwrap().map(Result::unwrap).collect();
            assert!(rows == expected, "table t{w} lost or changed rows");
        }
        db.close().unwrap();
    }
}
