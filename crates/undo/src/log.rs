//! Undo logs in the undo tablespace, through the buffer pool, changed only in mini-transactions.
//!
//! Latch order (what keeps these operations free of deadlocks): the transaction system page
//! first, then undo log header pages, then other undo pages. A log is written only by its own
//! transaction until it commits; after that only purge (holding the transaction system page)
//! changes it. Readers latch one undo page at a time, shared.
//!
//! Undo pages come through the buffer pool, which validated each as it read it, and change only
//! through [`UndoPage`]'s methods: the paths every row write or old-version read takes open them
//! trusted (O(1)); the walks of a whole log (rollback, purge) validate every page they read.
//!
//! Purge keeps the header pages of the logs it removes (up to [`CACHED_HEADER_PAGES`]) in a
//! cache named by the transaction system page, as InnoDB caches undo segments: a transaction
//! starts its log in a cached page with one mini-transaction that allocates nothing, so it
//! needs no redo commit unit and no engine-wide lock.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use barracuda_btree::{BTreeError, LogSink, Mtr, PageAllocator, Result};
use barracuda_buffer_pool::BufferPool;
use barracuda_page::trx_sys::{slot_count, MAX_RSEGS};
use barracuda_page::{
    PageId, PageNo, Record, SpaceId, TrxSysPage, UndoKind, UndoPage, UndoRecord, ValueRef, FIL_NULL,
};

use crate::described::{
    change_described, set_slot_described, trx_sys_slot, TRX_SYS_FIELDS, UNDO_FIELDS,
};
use crate::rseg::{take_slot, Homes, Rseg, ROLLBACK_SEGMENTS};

/// The transaction system page's number in the undo tablespace: also the first rollback
/// segment's page.
pub const TRX_SYS_PAGE: PageNo = 1;

/// At most this many purged logs' header pages are kept for new logs (4 MiB of 16 KiB pages):
/// enough for as many transactions starting between two purge rounds; beyond it purge frees
/// them, so a burst of writers does not keep its pages forever.
pub const CACHED_HEADER_PAGES: u32 = 256;

/// An undo record read out of a page.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OwnedUndoRecord {
    /// What it undoes.
    pub kind: UndoKind,
    /// The table's tablespace.
    pub space: u32,
    /// Its number in the transaction.
    pub undo_no: u32,
    /// The key (insert) or the previous leaf record (update, delete-mark).
    pub payload: Vec<u8>,
}

impl OwnedUndoRecord {
    pub(crate) fn of(record: &UndoRecord<'_>) -> Self {
        Self {
            kind: record.kind,
            space: record.space,
            undo_no: record.undo_no,
            payload: record.payload.to_vec(),
        }
    }
}

/// A committed log of a history list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HistoryEntry {
    /// The rollback segment whose history list holds it.
    pub rseg: usize,
    /// Its header page.
    pub first_page: PageNo,
    /// Its transaction.
    pub trx_id: u64,
    /// Its commit number.
    pub trx_no: u64,
}

/// What the rollback segment pages said when the undo tablespace was opened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UndoSpaceState {
    /// Every id and commit number handed out is below this.
    pub max_trx_id: u64,
    /// Header pages of logs whose transactions had not committed, with their transaction ids:
    /// recovery rolls them back.
    pub active_logs: Vec<(PageNo, u64)>,
    /// Committed logs waiting for purge, in every history list.
    pub history_len: u32,
}

/// The undo log of one transaction, being written.
#[derive(Debug)]
pub struct UndoLog {
    trx_id: u64,
    pub(crate) first_page: PageNo,
    pub(crate) last_page: PageNo,
    rseg: usize,
    slot: usize,
    pub(crate) records: u32,
    /// A record purge must act on: a delete-mark (the row goes) or a replaced version whose
    /// value is off-page (its chain is freed).
    needs_purge: bool,
}

impl UndoLog {
    /// A log just started in header page `first_page`, named by slot `slot` of rollback
    /// segment `rseg`: no records yet.
    pub(crate) fn started(trx_id: u64, first_page: PageNo, rseg: usize, slot: usize) -> Self {
        Self {
            trx_id,
            first_page,
            last_page: first_page,
            rseg,
            slot,
            records: 0,
            needs_purge: false,
        }
    }

    /// The transaction.
    pub fn trx_id(&self) -> u64 {
        self.trx_id
    }

    /// The log's header page.
    pub fn first_page(&self) -> PageNo {
        self.first_page
    }

    /// Whether purge has work in this log: a delete-mark (the row goes) or a replaced version
    /// whose value is off-page (its chain is freed). A log without either (inserts, updates
    /// of inline values) leaves purge nothing to do to rows.
    pub fn needs_purge(&self) -> bool {
        self.needs_purge
    }

    /// The rollback segment whose slot names the log (and whose history list takes it at
    /// commit).
    pub fn rseg(&self) -> usize {
        self.rseg
    }

    /// Records written.
    pub fn records(&self) -> u32 {
        self.records
    }

    /// Counts a record of `kind` with `payload` appended: notes whether purge will have
    /// anything to do for it besides freeing the log.
    pub(crate) fn appended(&mut self, kind: UndoKind, payload: &[u8]) {
        self.records += 1;
        self.needs_purge |= match kind {
            UndoKind::Insert => false,
            UndoKind::DeleteMark => true,
            // An undecodable payload is treated as needing purge, which then reports it.
            UndoKind::Update => Record::decode_exact(payload)
                .map_or(true, |rec| !matches!(rec.value, ValueRef::Inline(_))),
        };
    }
}

/// The undo tablespace: the transaction system page and the undo logs.
pub struct UndoSpace {
    pub(crate) pool: Arc<BufferPool>,
    pub(crate) alloc: Arc<dyn PageAllocator>,
    pub(crate) log: Arc<dyn LogSink>,
    space: SpaceId,
    /// The rollback segments, pages `1..=rsegs.len()`.
    pub(crate) rsegs: Vec<Rseg>,
    /// Which segment each thread keeps to.
    pub(crate) homes: Homes,
}

impl std::fmt::Debug for UndoSpace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UndoSpace")
            .field("space", &self.space)
            .finish_non_exhaustive()
    }
}

pub(crate) fn page_err(page: PageId) -> impl Fn(barracuda_page::PageError) -> BTreeError {
    move |source| BTreeError::Page { page, source }
}

impl UndoSpace {
    /// Formats the rollback segment pages of a new, empty undo tablespace `space` — its first
    /// [`ROLLBACK_SEGMENTS`] allocated pages must be pages 1 to that, the first also the
    /// transaction system page — in one mini-transaction.
    pub fn create(
        pool: Arc<BufferPool>,
        alloc: Arc<dyn PageAllocator>,
        log: Arc<dyn LogSink>,
        space: SpaceId,
    ) -> Result<Self> {
        let page_size = pool.page_size();
        let mut rsegs = Vec::new();
        let mut near = None;
        for i in 0..ROLLBACK_SEGMENTS {
            let page_no = alloc.allocate(space, near)?;
            if page_no != TRX_SYS_PAGE + i {
                return Err(BTreeError::Allocation {
                    space,
                    what: format!(
                        "rollback segment {i} got page {page_no}, not {}: the undo tablespace \
                         is not empty",
                        TRX_SYS_PAGE + i
                    ),
                });
            }
            near = Some(page_no);
            rsegs.push(Rseg::new(
                page_no,
                (0..slot_count(page_size)).rev().collect(),
            ));
        }
        {
            let mut mtr = Mtr::new(log.as_ref());
            for rseg in &rsegs {
                let id = PageId::new(space, rseg.page_no);
                let mut guard = pool.create(id)?;
                let max_trx_id = u64::from(rseg.page_no == TRX_SYS_PAGE);
                let mut page = TrxSysPage::init(&mut guard[..], page_size, id, max_trx_id)
                    .map_err(page_err(id))?;
                if rseg.page_no == TRX_SYS_PAGE {
                    page.set_rseg_count(ROLLBACK_SEGMENTS);
                }
                mtr.changed(guard);
            }
            mtr.commit()?;
        }
        Ok(Self {
            pool,
            alloc,
            log,
            space,
            rsegs,
            homes: Homes::new(),
        })
    }

    /// Opens the undo tablespace `space` and reads its state.
    pub fn open(
        pool: Arc<BufferPool>,
        alloc: Arc<dyn PageAllocator>,
        log: Arc<dyn LogSink>,
        space: SpaceId,
    ) -> Result<(Self, UndoSpaceState)> {
        let page_size = pool.page_size();
        let sys_id = PageId::new(space, TRX_SYS_PAGE);
        let (max_trx_id, count) = {
            let guard = pool.get_shared(sys_id)?;
            let sys = TrxSysPage::open(&guard[..], page_size).map_err(page_err(sys_id))?;
            (sys.max_trx_id(), sys.rseg_count())
        };
        if !(1..=MAX_RSEGS).contains(&count) {
            return Err(BTreeError::corrupt(
                sys_id,
                format!("{count} rollback segments, expected 1 to {MAX_RSEGS}"),
            ));
        }
        let mut state = UndoSpaceState {
            max_trx_id,
            active_logs: Vec::new(),
            history_len: 0,
        };
        let mut rsegs = Vec::new();
        let mut cache_firsts = Vec::new();
        for page_no in TRX_SYS_PAGE..=count {
            let id = PageId::new(space, page_no);
            let guard = pool.get_shared(id)?;
            let page = TrxSysPage::open(&guard[..], page_size).map_err(page_err(id))?;
            state
                .active_logs
                .extend(page.active_logs().map(|(_, log)| (log, 0)));
            state.history_len = state.history_len.saturating_add(page.history_len());
            let free_slots = (0..slot_count(page_size))
                .rev()
                .filter(|i| page.slot(*i) == FIL_NULL)
                .collect();
            cache_firsts.push(page.cache_first());
            rsegs.push(Rseg::new(page_no, free_slots));
        }
        let undo = Self {
            pool,
            alloc,
            log,
            space,
            rsegs,
            homes: Homes::new(),
        };
        for (rseg, cache_first) in undo.rsegs.iter().zip(cache_firsts) {
            if cache_first != FIL_NULL {
                let header = undo.cached_header(cache_first)?;
                rseg.cached.store(header.cache_depth, Ordering::Relaxed);
            }
        }
        for (page, trx_id) in &mut state.active_logs {
            *trx_id = undo.log_header(*page)?.trx_id;
        }
        Ok((undo, state))
    }

    /// Rollback segments.
    pub fn rseg_count(&self) -> usize {
        self.rsegs.len()
    }

    /// The page of rollback segment `rseg` (an error for a segment that does not exist).
    pub(crate) fn rseg(&self, rseg: usize) -> Result<&Rseg> {
        self.rsegs.get(rseg).ok_or_else(|| BTreeError::Allocation {
            space: self.space,
            what: format!("no rollback segment {rseg} of {}", self.rsegs.len()),
        })
    }

    /// The undo tablespace's id.
    pub fn space(&self) -> SpaceId {
        self.space
    }

    pub(crate) fn page_id(&self, page_no: PageNo) -> PageId {
        PageId::new(self.space, page_no)
    }

    /// Raises the persisted id high-water mark to `to` (never lowers it).
    pub fn raise_max_trx_id(&self, to: u64) -> Result<()> {
        let id = self.page_id(TRX_SYS_PAGE);
        let mut mtr = Mtr::new(self.log.as_ref());
        let mut guard = self.pool.get_exclusive(id)?;
        // Read through a shared borrow first: a guard borrowed mutably and not handed to the
        // mtr counts as a change that was never logged, and poisons the page.
        let current = TrxSysPage::open(&guard[..], self.pool.page_size())
            .map_err(page_err(id))?
            .max_trx_id();
        if current < to {
            let page_size = self.pool.page_size();
            change_described(&mut mtr, &mut guard, &[TRX_SYS_FIELDS], |page| {
                TrxSysPage::open(page, page_size)
                    .map_err(page_err(id))?
                    .set_max_trx_id(to);
                Ok(())
            })?;
            mtr.changed(guard);
        }
        mtr.commit()?;
        Ok(())
    }

    /// Gives back slot `slot` of rollback segment `rseg`.
    pub(crate) fn return_slot(&self, rseg: usize, slot: usize) {
        if let Some(r) = self.rsegs.get(rseg) {
            r.free_slots.lock().push(slot);
        }
    }

    /// Starts the undo log of transaction `trx_id` in a newly allocated header page, named by
    /// a slot of a rollback segment. Several mini-transactions (the allocation's and the
    /// log's): the caller makes them one redo commit unit, or a crash could leak the page.
    pub fn begin_log(&self, trx_id: u64) -> Result<UndoLog> {
        let (rseg, slot) = take_slot(&self.rsegs, &self.homes, self.space, self.pool.page_size())?;
        let result = self.begin_log_in(trx_id, rseg, slot);
        if result.is_err() {
            self.return_slot(rseg, slot);
        }
        result
    }

    fn begin_log_in(&self, trx_id: u64, rseg: usize, slot: usize) -> Result<UndoLog> {
        let page_size = self.pool.page_size();
        let page_no = self.alloc.allocate(self.space, None)?;
        let sys_id = self.page_id(self.rseg(rseg)?.page_no);
        let id = self.page_id(page_no);
        let mut mtr = Mtr::new(self.log.as_ref());
        let mut sys_guard = self.pool.get_exclusive(sys_id)?;
        let mut header = self.pool.create(id)?;
        let mut page = UndoPage::init(&mut header[..], page_size, id, page_no, FIL_NULL)
            .map_err(page_err(id))?;
        page.init_log_header(trx_id);
        set_slot_described(&mut mtr, &mut sys_guard, slot, page_no, page_size)?;
        mtr.changed(sys_guard);
        mtr.changed(header);
        mtr.commit()?;
        Ok(UndoLog::started(trx_id, page_no, rseg, slot))
    }

    /// Marks `log` committed with commit number `trx_no`, frees its slot and appends it to
    /// its rollback segment's history list, in one mini-transaction; returns the LSN its log
    /// ends at.
    #[expect(
        clippy::needless_pass_by_value,
        reason = "taken by value so that a committed log cannot take more records"
    )]
    pub fn commit(&self, log: UndoLog, trx_no: u64) -> Result<Option<barracuda_page::Lsn>> {
        let UndoLog {
            first_page,
            rseg,
            slot,
            ..
        } = log;
        let page_size = self.pool.page_size();
        let sys_id = self.page_id(self.rseg(rseg)?.page_no);
        let first_id = self.page_id(first_page);
        let mut mtr = Mtr::new(self.log.as_ref());
        let mut sys_guard = self.pool.get_exclusive(sys_id)?;
        let mut header = self.pool.get_exclusive(first_id)?;
        change_described(&mut mtr, &mut header, &[UNDO_FIELDS], |page| {
            UndoPage::open_trusted(page, page_size)
                .map_err(page_err(first_id))?
                .set_committed(trx_no);
            Ok(())
        })?;
        let regions = [TRX_SYS_FIELDS, trx_sys_slot(slot)];
        let last = change_described(&mut mtr, &mut sys_guard, &regions, |page| {
            let mut sys = TrxSysPage::open(page, page_size).map_err(page_err(sys_id))?;
            sys.set_slot(slot, FIL_NULL);
            let (first, last, len) = (sys.history_first(), sys.history_last(), sys.history_len());
            if last == FIL_NULL {
                sys.set_history(first_page, first_page, 1);
            } else {
                sys.set_history(first, first_page, len + 1);
            }
            Ok(last)
        })?;
        if last != FIL_NULL {
            let tail_id = self.page_id(last);
            let mut tail = self.pool.get_exclusive(tail_id)?;
            change_described(&mut mtr, &mut tail, &[UNDO_FIELDS], |page| {
                UndoPage::open_trusted(page, page_size)
                    .map_err(page_err(tail_id))?
                    .set_history_next(first_page);
                Ok(())
            })?;
            mtr.changed(tail);
        }
        mtr.changed(sys_guard);
        mtr.changed(header);
        let end = mtr.commit()?;
        self.return_slot(rseg, slot);
        Ok(end)
    }

    /// Commits `log` by discarding it, when nothing will need it: its transaction has ended
    /// with no read view open (so no view will ever read a version it holds —
    /// [`TrxSystem::commit_seeing_views`](crate::TrxSystem::commit_seeing_views)), purge has
    /// nothing to do for its records (inserts, and updates whose replaced value was inline),
    /// it is one page, and its segment's cache has room for that page. Then one
    /// mini-transaction frees its slot and puts its header page back in the cache: no history
    /// list, no purge (InnoDB discards insert undo at commit the same way; it keeps update undo
    /// for purge whatever the views). Returns the LSN the mtr ends at, or gives `log` back,
    /// with nothing changed, when it must go to the history list
    /// ([`commit`](Self::commit)).
    pub fn commit_discarding(
        &self,
        log: UndoLog,
    ) -> Result<std::result::Result<Option<barracuda_page::Lsn>, UndoLog>> {
        if log.needs_purge || log.last_page != log.first_page {
            return Ok(Err(log));
        }
        let segment = self.rseg(log.rseg)?;
        let mut mtr = Mtr::new(self.log.as_ref());
        let mut sys_guard = self.pool.get_exclusive(self.page_id(segment.page_no))?;
        // Checked under the segment page's latch, which every change of the cache holds.
        if segment.cached.load(Ordering::Relaxed) >= CACHED_HEADER_PAGES {
            return Ok(Err(log));
        }
        if !self.release_slot(&mut mtr, log.rseg, &mut sys_guard, log.slot, log.first_page)? {
            return Err(BTreeError::Log(
                "the header page cache refused a page it had room for".into(),
            ));
        }
        mtr.changed(sys_guard);
        let end = mtr.commit()?;
        self.return_slot(log.rseg, log.slot);
        Ok(Ok(end))
    }

    /// Discards the log of a transaction whose changes were rolled back: frees its slot, then
    /// its pages.
    #[expect(
        clippy::needless_pass_by_value,
        reason = "taken by value so that a discarded log cannot take more records"
    )]
    pub fn discard(&self, log: UndoLog) -> Result<()> {
        let UndoLog {
            first_page,
            rseg,
            slot,
            ..
        } = log;
        self.discard_active(first_page, Some((rseg, slot)))
    }

    /// Discards an active log found at recovery (after its rollback): the slot naming
    /// `first_page` is freed, then its pages.
    pub fn discard_recovered(&self, first_page: PageNo) -> Result<()> {
        let page_size = self.pool.page_size();
        for (r, rseg) in self.rsegs.iter().enumerate() {
            let id = self.page_id(rseg.page_no);
            let guard = self.pool.get_shared(id)?;
            let slot = TrxSysPage::open(&guard[..], page_size)
                .map_err(page_err(id))?
                .active_logs()
                .find(|&(_, page)| page == first_page)
                .map(|(i, _)| i);
            drop(guard);
            if let Some(slot) = slot {
                return self.discard_active(first_page, Some((r, slot)));
            }
        }
        // A log no slot names is not a transaction's: leave its pages alone.
        Ok(())
    }

    /// Frees slot `slot` of rollback segment `rseg`, which names `first_page`, caching or
    /// freeing the log's pages.
    fn discard_active(&self, first_page: PageNo, slot: Option<(usize, usize)>) -> Result<()> {
        let Some((rseg, slot)) = slot else {
            return Ok(());
        };
        let page_size = self.pool.page_size();
        let pages = self.log_pages(first_page)?;
        let sys_id = self.page_id(self.rseg(rseg)?.page_no);
        let cached = {
            let mut mtr = Mtr::new(self.log.as_ref());
            let mut sys_guard = self.pool.get_exclusive(sys_id)?;
            let named = TrxSysPage::open(&sys_guard[..], page_size)
                .map_err(page_err(sys_id))?
                .slot(slot);
            if named != first_page {
                return Err(BTreeError::corrupt(
                    sys_id,
                    format!("undo slot {slot} names page {named}, not the log at {first_page}"),
                ));
            }
            let cached = self.release_slot(&mut mtr, rseg, &mut sys_guard, slot, first_page)?;
            mtr.changed(sys_guard);
            mtr.commit()?;
            cached
        };
        self.return_slot(rseg, slot);
        self.free_pages(pages.get(usize::from(cached)..).unwrap_or_default())
    }

    /// Inside `mtr`, holding rollback segment `rseg`'s page (`sys_guard`): clears slot `slot`,
    /// which names the log at `first_page`, and offers that header page to the segment's cache
    /// (returns whether it took it; the caller then frees every other page of the log).
    fn release_slot<'a>(
        &'a self,
        mtr: &mut Mtr<'a>,
        rseg: usize,
        sys_guard: &mut barracuda_buffer_pool::ExclusiveGuard<'a>,
        slot: usize,
        first_page: PageNo,
    ) -> Result<bool> {
        let page_size = self.pool.page_size();
        set_slot_described(mtr, sys_guard, slot, FIL_NULL, page_size)?;
        self.cache_header_page(mtr, rseg, sys_guard, first_page)
    }

    pub(crate) fn free_pages(&self, pages: &[PageNo]) -> Result<()> {
        for &page in pages.iter().rev() {
            self.alloc.free(self.page_id(page))?;
        }
        Ok(())
    }
}
