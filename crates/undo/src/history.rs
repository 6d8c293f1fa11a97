//! The history lists (committed logs waiting for purge, oldest first) and the caches of purged
//! logs' header pages, one of each per rollback segment, named by its page.
//!
//! A commit links its log after the list's last one, and purge unlinks logs from its head, each
//! holding the segment's page exclusively; purge reads a head's link to the next log under
//! that latch too, since the head may be the last log a commit is extending. Purge removes a
//! batch of logs in one mini-transaction, so that it takes that page once per batch rather
//! than once per log (committers take it at every commit).
//!
//! A purged or rolled-back log's header page goes to its segment's cache (up to
//! [`CACHED_HEADER_PAGES`]): the next transaction of that segment starts its log there in one
//! mini-transaction that allocates nothing (InnoDB caches undo segments the same way).

use std::sync::atomic::Ordering;

use barracuda_btree::{BTreeError, Mtr, Result};
use barracuda_page::{PageId, PageNo, TrxSysPage, UndoLogHeader, UndoLogState, UndoPage, FIL_NULL};

use crate::described::{change_described, trx_sys_slot, TRX_SYS_FIELDS, UNDO_FIELDS};
use crate::log::{page_err, HistoryEntry, UndoLog, UndoSpace, CACHED_HEADER_PAGES};
use crate::rseg::take_slot;

impl UndoSpace {
    /// Starts the undo log of transaction `trx_id` in a cached header page of the calling
    /// thread's rollback segment, named by a slot of that segment (so that recovery finds it
    /// if the transaction never commits): one mini-transaction, no allocation. `None`, with
    /// nothing changed, when that cache is empty ([`begin_log`](Self::begin_log) allocates a
    /// page).
    pub fn begin_cached_log(&self, trx_id: u64) -> Result<Option<UndoLog>> {
        let (rseg, slot) = take_slot(
            &self.rsegs,
            &self.homes,
            self.space(),
            self.pool.page_size(),
        )?;
        let result = self.begin_cached_log_in(trx_id, rseg, slot);
        if !matches!(result, Ok(Some(_))) {
            self.return_slot(rseg, slot);
        }
        result
    }

    fn begin_cached_log_in(
        &self,
        trx_id: u64,
        rseg: usize,
        slot: usize,
    ) -> Result<Option<UndoLog>> {
        let page_size = self.pool.page_size();
        let segment = self.rseg(rseg)?;
        let sys_id = self.page_id(segment.page_no);
        let mut mtr = Mtr::new(self.log.as_ref());
        let mut sys_guard = self.pool.get_exclusive(sys_id)?;
        let page_no = TrxSysPage::open(&sys_guard[..], page_size)
            .map_err(page_err(sys_id))?
            .cache_first();
        if page_no == FIL_NULL {
            return Ok(None);
        }
        let id = self.page_id(page_no);
        let mut header = self.pool.get_exclusive(id)?;
        let cached = cached_header_of(&header, page_size)?;
        change_described(&mut mtr, &mut header, &[UNDO_FIELDS], |page| {
            UndoPage::open_trusted(page, page_size)
                .map_err(page_err(id))?
                .reuse_as_header(trx_id);
            Ok(())
        })?;
        let regions = [TRX_SYS_FIELDS, trx_sys_slot(slot)];
        change_described(&mut mtr, &mut sys_guard, &regions, |sys| {
            let mut sys = TrxSysPage::open(sys, page_size).map_err(page_err(sys_id))?;
            sys.set_cache_first(cached.history_next);
            sys.set_slot(slot, page_no);
            Ok(())
        })?;
        mtr.changed(sys_guard);
        mtr.changed(header);
        // Under the segment page's latch, which the mtr holds until it commits.
        segment
            .cached
            .store(cached.cache_depth.saturating_sub(1), Ordering::Relaxed);
        mtr.commit()?;
        Ok(Some(UndoLog::started(trx_id, page_no, rseg, slot)))
    }

    /// Header pages waiting in the caches of every rollback segment.
    pub fn cached_header_pages(&self) -> u32 {
        self.rsegs
            .iter()
            .map(|r| r.cached.load(Ordering::Relaxed))
            .fold(0, u32::saturating_add)
    }

    /// The log header of cached page `page_no`, checked to be one.
    pub(crate) fn cached_header(&self, page_no: PageNo) -> Result<UndoLogHeader> {
        let guard = self.pool.get_shared(self.page_id(page_no))?;
        cached_header_of(&guard, self.pool.page_size())
    }

    /// Inside `mtr`, which holds the page of rollback segment `rseg` (`sys_guard`): makes
    /// `first_page`, the header page of a log no list or slot names any more, the newest page
    /// of the segment's header page cache — if the cache has room (returns whether it did; the
    /// caller then frees every page of the log but this one).
    pub(crate) fn cache_header_page<'a>(
        &'a self,
        mtr: &mut Mtr<'a>,
        rseg: usize,
        sys_guard: &mut barracuda_buffer_pool::ExclusiveGuard<'a>,
        first_page: PageNo,
    ) -> Result<bool> {
        let segment = self.rseg(rseg)?;
        let depth = segment.cached.load(Ordering::Relaxed);
        if depth >= CACHED_HEADER_PAGES {
            return Ok(false);
        }
        let page_size = self.pool.page_size();
        let sys_id = sys_guard.page_id();
        let id = self.page_id(first_page);
        let mut header = self.pool.get_exclusive(id)?;
        let next = change_described(mtr, sys_guard, &[TRX_SYS_FIELDS], |page| {
            let mut sys = TrxSysPage::open(page, page_size).map_err(page_err(sys_id))?;
            let next = sys.cache_first();
            sys.set_cache_first(first_page);
            Ok(next)
        })?;
        change_described(mtr, &mut header, &[UNDO_FIELDS], |page| {
            UndoPage::open_trusted(page, page_size)
                .map_err(page_err(id))?
                .set_cached(next, depth + 1);
            Ok(())
        })?;
        mtr.changed(header);
        // Under the segment page's latch, which the mtr holds until it commits.
        segment.cached.store(depth + 1, Ordering::Relaxed);
        Ok(true)
    }

    /// The oldest committed log of rollback segment `rseg` not purged yet.
    pub fn history_head(&self, rseg: usize) -> Result<Option<HistoryEntry>> {
        let sys_id = self.page_id(self.rseg(rseg)?.page_no);
        let first = {
            let guard = self.pool.get_shared(sys_id)?;
            TrxSysPage::open(&guard[..], self.pool.page_size())
                .map_err(page_err(sys_id))?
                .history_first()
        };
        self.history_entry(rseg, first)
    }

    /// The log after `entry` in the history list, if any. (A log's link to the next is set
    /// once, by the commit that follows it, and never changes after: no latch on the
    /// transaction system page is needed to read it.)
    pub fn history_after(&self, entry: &HistoryEntry) -> Result<Option<HistoryEntry>> {
        let next = self.log_header(entry.first_page)?.history_next;
        self.history_entry(entry.rseg, next)
    }

    fn history_entry(&self, rseg: usize, first: PageNo) -> Result<Option<HistoryEntry>> {
        if first == FIL_NULL {
            return Ok(None);
        }
        let header = self.log_header(first)?;
        if header.state != UndoLogState::Committed {
            return Err(BTreeError::corrupt(
                self.page_id(first),
                "an undo log in the history list is not committed",
            ));
        }
        Ok(Some(HistoryEntry {
            rseg,
            first_page: first,
            trx_id: header.trx_id,
            trx_no: header.trx_no,
        }))
    }

    /// Committed logs waiting for purge in every history list (InnoDB's history list
    /// length).
    pub fn history_len(&self) -> Result<u32> {
        let mut len = 0u32;
        for rseg in &self.rsegs {
            let sys_id = self.page_id(rseg.page_no);
            let guard = self.pool.get_shared(sys_id)?;
            len = len.saturating_add(
                TrxSysPage::open(&guard[..], self.pool.page_size())
                    .map_err(page_err(sys_id))?
                    .history_len(),
            );
        }
        Ok(len)
    }

    /// Removes the head of rollback segment `rseg`'s history list — which must be
    /// `first_page` — as [`remove_history_heads`](Self::remove_history_heads) does.
    pub fn remove_history_head(&self, rseg: usize, first_page: PageNo) -> Result<()> {
        self.remove_history_heads(rseg, &[first_page])
    }

    /// Removes the logs `first_pages` — which must be the oldest of rollback segment `rseg`'s
    /// history list, in order: the ones purge just processed — in one mini-transaction,
    /// keeping their header pages in the segment's cache while it has room, then frees their
    /// other pages.
    pub fn remove_history_heads(&self, rseg: usize, first_pages: &[PageNo]) -> Result<()> {
        let Some(&oldest) = first_pages.first() else {
            return Ok(());
        };
        let page_size = self.pool.page_size();
        let mut pages = Vec::with_capacity(first_pages.len());
        for &first in first_pages {
            pages.push(self.log_pages(first)?);
        }
        let sys_id = self.page_id(self.rseg(rseg)?.page_no);
        let cached = {
            let mut mtr = Mtr::new(self.log.as_ref());
            let mut sys_guard = self.pool.get_exclusive(sys_id)?;
            let head = TrxSysPage::open(&sys_guard[..], page_size)
                .map_err(page_err(sys_id))?
                .history_first();
            if head != oldest {
                return Err(BTreeError::corrupt(
                    sys_id,
                    format!("history list head is {head}, not {oldest}"),
                ));
            }
            // Links read under the transaction system page's latch: a commit links its log
            // after the list's last one under it, and the last one may be among these.
            let mut next = FIL_NULL;
            for (i, &first) in first_pages.iter().enumerate() {
                next = self.log_header(first)?.history_next;
                if let Some(&expected) = first_pages.get(i + 1) {
                    if next != expected {
                        return Err(BTreeError::corrupt(
                            self.page_id(first),
                            format!("history list goes on at {next}, not at {expected}"),
                        ));
                    }
                }
            }
            let removed = u32::try_from(first_pages.len()).unwrap_or(u32::MAX);
            change_described(&mut mtr, &mut sys_guard, &[TRX_SYS_FIELDS], |page| {
                let mut sys = TrxSysPage::open(page, page_size).map_err(page_err(sys_id))?;
                let len = sys.history_len().saturating_sub(removed);
                if len == 0 || next == FIL_NULL {
                    sys.set_history(FIL_NULL, FIL_NULL, 0);
                } else {
                    let last = sys.history_last();
                    sys.set_history(next, last, len);
                }
                Ok(())
            })?;
            let mut cached = Vec::with_capacity(first_pages.len());
            for &first in first_pages {
                cached.push(self.cache_header_page(&mut mtr, rseg, &mut sys_guard, first)?);
            }
            mtr.changed(sys_guard);
            mtr.commit()?;
            cached
        };
        for (log_pages, cached) in pages.iter().zip(cached) {
            self.free_pages(log_pages.get(usize::from(cached)..).unwrap_or_default())?;
        }
        Ok(())
    }
}

/// The log header of `page`, which the cache of header pages names: an error naming the page
/// unless it is a cached header page with a plausible depth.
fn cached_header_of(page: &[u8], page_size: barracuda_page::PageSize) -> Result<UndoLogHeader> {
    let id = barracuda_page::FileHeader::read(page).map_or(PageId::new(0, 0), |h| h.page_id());
    let header = UndoPage::open_trusted(page, page_size)
        .map_err(page_err(id))?
        .log_header()
        .ok_or_else(|| {
            BTreeError::corrupt(
                id,
                "the undo header page cache names a page that is not an undo log's header page",
            )
        })?;
    if header.state != UndoLogState::Cached || header.cache_depth == 0 {
        return Err(BTreeError::corrupt(
            id,
            format!(
                "the undo header page cache names a page in state {:?} at depth {}",
                header.state, header.cache_depth
            ),
        ));
    }
    Ok(header)
}
