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

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use barracuda_btree::{BTreeError, LogSink, Mtr, PageAllocator, Result};
use barracuda_buffer_pool::BufferPool;
use barracuda_page::trx_sys::slot_count;
use barracuda_page::{
    PageId, PageNo, SpaceId, TrxSysPage, UndoKind, UndoPage, UndoRecord, FIL_NULL,
};

use crate::described::{change_described, trx_sys_slot, TRX_SYS_FIELDS, UNDO_FIELDS};
use crate::roll_ptr::RollPtr;

/// The transaction system page's number in the undo tablespace.
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

/// A committed log at the head of the history list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HistoryEntry {
    /// Its header page.
    pub first_page: PageNo,
    /// Its transaction.
    pub trx_id: u64,
    /// Its commit number.
    pub trx_no: u64,
}

/// What the transaction system page said when the undo tablespace was opened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UndoSpaceState {
    /// Every id and commit number handed out is below this.
    pub max_trx_id: u64,
    /// Header pages of logs whose transactions had not committed, with their transaction ids:
    /// recovery rolls them back.
    pub active_logs: Vec<(PageNo, u64)>,
    /// Committed logs waiting for purge.
    pub history_len: u32,
}

/// The undo log of one transaction, being written.
#[derive(Debug)]
pub struct UndoLog {
    trx_id: u64,
    first_page: PageNo,
    last_page: PageNo,
    slot: usize,
    records: u32,
}

impl UndoLog {
    /// A log just started in header page `first_page`, named by `slot`: no records yet.
    pub(crate) fn started(trx_id: u64, first_page: PageNo, slot: usize) -> Self {
        Self {
            trx_id,
            first_page,
            last_page: first_page,
            slot,
            records: 0,
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

    /// Records written.
    pub fn records(&self) -> u32 {
        self.records
    }
}

/// The undo tablespace: the transaction system page and the undo logs.
pub struct UndoSpace {
    pub(crate) pool: Arc<BufferPool>,
    alloc: Arc<dyn PageAllocator>,
    pub(crate) log: Arc<dyn LogSink>,
    space: SpaceId,
    /// Slots of the transaction system page that name no log.
    pub(crate) free_slots: Mutex<Vec<usize>>,
    /// Header pages in the cache (changed under the transaction system page's latch; the
    /// newest cached page records it as its depth).
    pub(crate) cached: AtomicU32,
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
    /// Formats the transaction system page of a new, empty undo tablespace `space` (its first
    /// allocated page must be [`TRX_SYS_PAGE`]).
    pub fn create(
        pool: Arc<BufferPool>,
        alloc: Arc<dyn PageAllocator>,
        log: Arc<dyn LogSink>,
        space: SpaceId,
    ) -> Result<Self> {
        let page_no = alloc.allocate(space, None)?;
        if page_no != TRX_SYS_PAGE {
            return Err(BTreeError::Allocation {
                space,
                what: format!(
                    "the undo tablespace's first page is {page_no}, not {TRX_SYS_PAGE}: it is not empty"
                ),
            });
        }
        let id = PageId::new(space, TRX_SYS_PAGE);
        let page_size = pool.page_size();
        {
            let mut mtr = Mtr::new(log.as_ref());
            let mut guard = pool.create(id)?;
            TrxSysPage::init(&mut guard[..], page_size, id, 1).map_err(page_err(id))?;
            mtr.changed(guard);
            mtr.commit()?;
        }
        let free_slots = (0..slot_count(page_size)).rev().collect();
        Ok(Self {
            pool,
            alloc,
            log,
            space,
            free_slots: Mutex::new(free_slots),
            cached: AtomicU32::new(0),
        })
    }

    /// Opens the undo tablespace `space` and reads its state.
    pub fn open(
        pool: Arc<BufferPool>,
        alloc: Arc<dyn PageAllocator>,
        log: Arc<dyn LogSink>,
        space: SpaceId,
    ) -> Result<(Self, UndoSpaceState)> {
        let id = PageId::new(space, TRX_SYS_PAGE);
        let page_size = pool.page_size();
        let (state, free_slots, cache_first) = {
            let guard = pool.get_shared(id)?;
            let sys = TrxSysPage::open(&guard[..], page_size).map_err(page_err(id))?;
            let cache_first = sys.cache_first();
            let active: Vec<(usize, PageNo)> = sys.active_logs().collect();
            let free_slots: Vec<usize> = (0..slot_count(page_size))
                .rev()
                .filter(|i| sys.slot(*i) == FIL_NULL)
                .collect();
            let state = UndoSpaceState {
                max_trx_id: sys.max_trx_id(),
                active_logs: active.iter().map(|&(_, page)| (page, 0)).collect(),
                history_len: sys.history_len(),
            };
            (state, free_slots, cache_first)
        };
        let undo = Self {
            pool,
            alloc,
            log,
            space,
            free_slots: Mutex::new(free_slots),
            cached: AtomicU32::new(0),
        };
        if cache_first != FIL_NULL {
            let header = undo.cached_header(cache_first)?;
            undo.cached.store(header.cache_depth, Ordering::Relaxed);
        }
        let mut state = state;
        for (page, trx_id) in &mut state.active_logs {
            *trx_id = undo.log_header(*page)?.trx_id;
        }
        Ok((undo, state))
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

    /// Takes a free slot of the transaction system page.
    pub(crate) fn take_slot(&self) -> Result<usize> {
        self.free_slots
            .lock()
            .pop()
            .ok_or_else(|| BTreeError::Allocation {
                space: self.space,
                what: format!(
                    "every one of the {} undo slots is taken: that many transactions are writing",
                    slot_count(self.pool.page_size())
                ),
            })
    }

    /// Starts the undo log of transaction `trx_id` in a newly allocated header page, named by
    /// a slot of the transaction system page. Several mini-transactions (the allocation's and
    /// the log's): the caller makes them one redo commit unit, or a crash could leak the page.
    pub fn begin_log(&self, trx_id: u64) -> Result<UndoLog> {
        let slot = self.take_slot()?;
        let result = self.begin_log_in(trx_id, slot);
        if result.is_err() {
            self.free_slots.lock().push(slot);
        }
        result
    }

    fn begin_log_in(&self, trx_id: u64, slot: usize) -> Result<UndoLog> {
        let page_size = self.pool.page_size();
        let page_no = self.alloc.allocate(self.space, None)?;
        let sys_id = self.page_id(TRX_SYS_PAGE);
        let id = self.page_id(page_no);
        let mut mtr = Mtr::new(self.log.as_ref());
        let mut sys_guard = self.pool.get_exclusive(sys_id)?;
        let mut header = self.pool.create(id)?;
        let mut page = UndoPage::init(&mut header[..], page_size, id, page_no, FIL_NULL)
            .map_err(page_err(id))?;
        page.init_log_header(trx_id);
        change_described(&mut mtr, &mut sys_guard, &[trx_sys_slot(slot)], |sys| {
            TrxSysPage::open(sys, page_size)
                .map_err(page_err(sys_id))?
                .set_slot(slot, page_no);
            Ok(())
        })?;
        mtr.changed(sys_guard);
        mtr.changed(header);
        mtr.commit()?;
        Ok(UndoLog::started(trx_id, page_no, slot))
    }

    /// Appends `record` to `log` (numbered with the log's record count) and returns the roll
    /// pointer that names it. A full page gets a successor page.
    pub fn append(
        &self,
        log: &mut UndoLog,
        kind: UndoKind,
        space: u32,
        payload: &[u8],
    ) -> Result<RollPtr> {
        let page_size = self.pool.page_size();
        let record = UndoRecord {
            kind,
            space,
            undo_no: log.records,
            payload,
        };
        if payload.len() > barracuda_page::undo::max_payload_len(page_size) {
            return Err(BTreeError::corrupt(
                self.page_id(log.first_page),
                format!(
                    "an undo record of {} bytes does not fit a page",
                    payload.len()
                ),
            ));
        }
        let first_id = self.page_id(log.first_page);
        let mut mtr = Mtr::new(self.log.as_ref());
        let mut header = self.pool.get_exclusive(first_id)?;
        let mut last = if log.last_page == log.first_page {
            None
        } else {
            Some(self.pool.get_exclusive(self.page_id(log.last_page))?)
        };
        let fits = {
            let target = last.as_ref().unwrap_or(&header);
            let id = target.page_id();
            UndoPage::open_trusted(&target[..], page_size)
                .map_err(page_err(id))?
                .fits(&record)
        };
        let records = log.records + 1;
        let (page_no, offset) = if fits {
            let offset = append_described(&mut mtr, &mut header, last.as_mut(), &record, records)?;
            if let Some(last) = last {
                mtr.changed(last);
            }
            (log.last_page, offset)
        } else {
            let placed = self.append_to_new_page(&mut mtr, &mut header, last, log, &record)?;
            UndoPage::open_trusted(&mut header[..], page_size)
                .map_err(page_err(first_id))?
                .set_record_count(records);
            placed
        };
        mtr.changed(header);
        mtr.commit()?;
        log.records = records;
        Ok(RollPtr {
            page_no,
            offset,
            insert: kind == UndoKind::Insert,
        })
    }

    /// Appends `record` to `log` like [`append`](Self::append), but inside the caller's `mtr`
    /// (the row change it undoes goes in the same one) and only when it fits the log's last
    /// page: `None`, with nothing changed, when it needs a new page (take the general path).
    /// The log's pages are latched after whatever the caller latched (a leaf): no one latches
    /// a log's pages before a leaf, and only its own transaction appends to them.
    pub fn append_in<'m>(
        &'m self,
        mtr: &mut Mtr<'m>,
        log: &mut UndoLog,
        kind: UndoKind,
        space: u32,
        payload: &[u8],
    ) -> Result<Option<RollPtr>> {
        let page_size = self.pool.page_size();
        let record = UndoRecord {
            kind,
            space,
            undo_no: log.records,
            payload,
        };
        let first_id = self.page_id(log.first_page);
        let mut header = self.pool.get_exclusive(first_id)?;
        let mut last = if log.last_page == log.first_page {
            None
        } else {
            Some(self.pool.get_exclusive(self.page_id(log.last_page))?)
        };
        {
            // Through shared borrows first: a guard borrowed mutably and not handed to the mtr
            // counts as a change never logged.
            let target = last.as_ref().unwrap_or(&header);
            let id = target.page_id();
            if !UndoPage::open_trusted(&target[..], page_size)
                .map_err(page_err(id))?
                .fits(&record)
            {
                return Ok(None);
            }
        }
        let records = log.records + 1;
        let offset = append_described(mtr, &mut header, last.as_mut(), &record, records)?;
        if let Some(last) = last {
            mtr.changed(last);
        }
        mtr.changed(header);
        log.records += 1;
        Ok(Some(RollPtr {
            page_no: log.last_page,
            offset,
            insert: kind == UndoKind::Insert,
        }))
    }

    /// Links a new page after the log's last one — the header page, or `last` (latched by the
    /// caller) — and appends `record` to it.
    fn append_to_new_page<'a>(
        &'a self,
        mtr: &mut Mtr<'a>,
        header: &mut barracuda_buffer_pool::ExclusiveGuard<'a>,
        last: Option<barracuda_buffer_pool::ExclusiveGuard<'a>>,
        log: &mut UndoLog,
        record: &UndoRecord<'_>,
    ) -> Result<(PageNo, u16)> {
        let page_size = self.pool.page_size();
        let new_no = self.alloc.allocate(self.space, Some(log.last_page))?;
        let new_id = self.page_id(new_no);
        let mut fresh = self.pool.create(new_id)?;
        let mut page = UndoPage::init(
            &mut fresh[..],
            page_size,
            new_id,
            log.first_page,
            log.last_page,
        )
        .map_err(page_err(new_id))?;
        let offset = page.append(record).map_err(page_err(new_id))?;
        mtr.changed(fresh);
        let first_id = self.page_id(log.first_page);
        match last {
            None => UndoPage::open_trusted(&mut header[..], page_size)
                .map_err(page_err(first_id))?
                .set_next_page(new_no),
            Some(mut last) => {
                let last_id = last.page_id();
                UndoPage::open_trusted(&mut last[..], page_size)
                    .map_err(page_err(last_id))?
                    .set_next_page(new_no);
                mtr.changed(last);
            }
        }
        UndoPage::open_trusted(&mut header[..], page_size)
            .map_err(page_err(first_id))?
            .set_last_page(new_no);
        log.last_page = new_no;
        Ok((new_no, offset))
    }

    /// Marks `log` committed with commit number `trx_no`, frees its slot and appends it to
    /// the history list, in one mini-transaction; returns the LSN its log ends at.
    #[expect(
        clippy::needless_pass_by_value,
        reason = "taken by value so that a committed log cannot take more records"
    )]
    pub fn commit(&self, log: UndoLog, trx_no: u64) -> Result<Option<barracuda_page::Lsn>> {
        let UndoLog {
            first_page, slot, ..
        } = log;
        let page_size = self.pool.page_size();
        let sys_id = self.page_id(TRX_SYS_PAGE);
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
        self.free_slots.lock().push(slot);
        Ok(end)
    }

    /// Discards the log of a transaction whose changes were rolled back: frees its slot, then
    /// its pages.
    #[expect(
        clippy::needless_pass_by_value,
        reason = "taken by value so that a discarded log cannot take more records"
    )]
    pub fn discard(&self, log: UndoLog) -> Result<()> {
        let UndoLog {
            first_page, slot, ..
        } = log;
        self.discard_active(first_page, Some(slot))
    }

    /// Discards an active log found at recovery (after its rollback): the slot naming
    /// `first_page` is freed, then its pages.
    pub fn discard_recovered(&self, first_page: PageNo) -> Result<()> {
        self.discard_active(first_page, None)
    }

    fn discard_active(&self, first_page: PageNo, slot: Option<usize>) -> Result<()> {
        let page_size = self.pool.page_size();
        let pages = self.log_pages(first_page)?;
        let sys_id = self.page_id(TRX_SYS_PAGE);
        let freed_slot = {
            let mut mtr = Mtr::new(self.log.as_ref());
            let mut sys_guard = self.pool.get_exclusive(sys_id)?;
            let slot = match slot {
                Some(slot) => Some(slot),
                None => TrxSysPage::open(&sys_guard[..], page_size)
                    .map_err(page_err(sys_id))?
                    .active_logs()
                    .find(|&(_, page)| page == first_page)
                    .map(|(i, _)| i),
            };
            if let Some(slot) = slot {
                change_described(&mut mtr, &mut sys_guard, &[trx_sys_slot(slot)], |page| {
                    TrxSysPage::open(page, page_size)
                        .map_err(page_err(sys_id))?
                        .set_slot(slot, FIL_NULL);
                    Ok(())
                })?;
            }
            // A log no slot names is not this transaction's: leave its page alone.
            let cached =
                slot.is_some() && self.cache_header_page(&mut mtr, &mut sys_guard, first_page)?;
            mtr.changed(sys_guard);
            mtr.commit()?;
            (slot, cached)
        };
        let (freed_slot, cached) = freed_slot;
        if let Some(slot) = freed_slot {
            self.free_slots.lock().push(slot);
        }
        self.free_pages(pages.get(usize::from(cached)..).unwrap_or_default())
    }

    pub(crate) fn free_pages(&self, pages: &[PageNo]) -> Result<()> {
        for &page in pages.iter().rev() {
            self.alloc.free(self.page_id(page))?;
        }
        Ok(())
    }
}

/// Appends `record` to the log's last page — `last`, or the header page when `last` is `None`
/// — and sets the header's record count to `records`, describing both changes to `mtr`. The
/// caller checked that the record fits. Returns its offset.
fn append_described<'g>(
    mtr: &mut Mtr<'_>,
    header: &mut barracuda_buffer_pool::ExclusiveGuard<'g>,
    last: Option<&mut barracuda_buffer_pool::ExclusiveGuard<'g>>,
    record: &UndoRecord<'_>,
    records: u32,
) -> Result<u16> {
    let page_size_of = |g: &barracuda_buffer_pool::ExclusiveGuard<'_>| {
        barracuda_page::PageSize::from_bytes(g.len())
    };
    let len = barracuda_page::undo::UNDO_RECORD_HEADER + record.payload.len();
    let free_of = |g: &barracuda_buffer_pool::ExclusiveGuard<'_>, page_size| {
        let id = g.page_id();
        UndoPage::open_trusted(&g[..], page_size)
            .map(|p| usize::from(p.free()))
            .map_err(page_err(id))
    };
    let header_id = header.page_id();
    let Some(page_size) = page_size_of(header) else {
        return Err(BTreeError::corrupt(
            header_id,
            "an undo page of no page size",
        ));
    };
    match last {
        None => {
            let free = free_of(header, page_size)?;
            change_described(mtr, header, &[UNDO_FIELDS, free..free + len], |page| {
                let mut page =
                    UndoPage::open_trusted(page, page_size).map_err(page_err(header_id))?;
                let offset = page.append(record).map_err(page_err(header_id))?;
                page.set_record_count(records);
                Ok(offset)
            })
        }
        Some(last) => {
            let last_id = last.page_id();
            let free = free_of(last, page_size)?;
            let offset = change_described(mtr, last, &[UNDO_FIELDS, free..free + len], |page| {
                UndoPage::open_trusted(page, page_size)
                    .map_err(page_err(last_id))?
                    .append(record)
                    .map_err(page_err(last_id))
            })?;
            change_described(mtr, header, &[UNDO_FIELDS], |page| {
                UndoPage::open_trusted(page, page_size)
                    .map_err(page_err(header_id))?
                    .set_record_count(records);
                Ok(())
            })?;
            Ok(offset)
        }
    }
}
