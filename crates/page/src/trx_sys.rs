//! Rollback segment pages of the undo tablespace (FORMATS.md §13.3): each holds a history
//! list of committed undo logs waiting for purge, a cache of purged logs' header pages and one
//! slot per active undo log; the first (page 1, the transaction system page) also holds the
//! transaction id high-water mark and the number of rollback segments (InnoDB keeps these in
//! `TRX_SYS` and its 128 rollback segment headers).
//!
//! ```text
//! 0        38             46              50             54            58            62           66
//! | FIL hdr | max_trx_id u64 | history_first | history_last | history_len | cache_first | rseg_count | slots u32 … | trailer |
//! ```
//! A slot holds the header page of an undo log whose transaction has not committed, or
//! `FIL_NULL`; recovery rolls back the logs the slots name. The cache holds header pages of
//! purged logs, so that a transaction starts its log without allocating a page. Transactions
//! spread over the segments, so that writers and purge do not all latch one page.

use crate::bytes::{put_u32, put_u64, u32_at, u64_at};
use crate::error::PageError;
use crate::header::{check_type, FileHeader, PageType, FIL_HEADER_SIZE, FIL_TRAILER_SIZE};
use crate::ids::{PageId, PageNo, PageSize, FIL_NULL};

/// Offset of the transaction id high-water mark (u64): every id handed out is below it.
pub const OFF_MAX_TRX_ID: usize = FIL_HEADER_SIZE;
/// Offset of the oldest log of the history list (u32, `FIL_NULL` = empty).
pub const OFF_HISTORY_FIRST: usize = FIL_HEADER_SIZE + 8;
/// Offset of the newest log of the history list (u32, `FIL_NULL` = empty).
pub const OFF_HISTORY_LAST: usize = FIL_HEADER_SIZE + 12;
/// Offset of the number of logs in the history list (u32).
pub const OFF_HISTORY_LEN: usize = FIL_HEADER_SIZE + 16;
/// Offset of the newest cached undo log header page (u32, `FIL_NULL` = none): purged logs'
/// header pages kept for new logs, linked through their `history_next`.
pub const OFF_CACHE_FIRST: usize = FIL_HEADER_SIZE + 20;
/// Offset of the number of rollback segments (u32; page 1 only, 0 on the others): pages
/// `1..=rseg_count` of the undo tablespace.
pub const OFF_RSEG_COUNT: usize = FIL_HEADER_SIZE + 24;
/// Offset of the first slot.
pub const OFF_SLOTS: usize = FIL_HEADER_SIZE + 28;
/// Most rollback segments an undo tablespace may have (InnoDB: 128).
pub const MAX_RSEGS: u32 = 128;

/// Slots of a page of `page_size`: 4,077 at 16 KiB.
pub const fn slot_count(page_size: PageSize) -> usize {
    (page_size.bytes() - OFF_SLOTS - FIL_TRAILER_SIZE) / 4
}

/// A rollback segment page (the first one also the transaction system page) over a buffer `B`.
#[derive(Debug)]
pub struct TrxSysPage<B> {
    buf: B,
    page_size: PageSize,
}

impl<B: AsRef<[u8]>> TrxSysPage<B> {
    /// Opens a transaction system page: checks its type and that the history list's ends
    /// agree with its length. Never panics.
    pub fn open(buf: B, page_size: PageSize) -> Result<Self, PageError> {
        let header = check_type(buf.as_ref(), page_size, PageType::TrxSys)?;
        let page = Self { buf, page_size };
        let (first, last, len) = (
            page.history_first(),
            page.history_last(),
            page.history_len(),
        );
        if (first == FIL_NULL) != (len == 0) || (last == FIL_NULL) != (len == 0) {
            return Err(PageError::Corrupt {
                page: header.page_id(),
                what: format!(
                    "history list of {len} logs from page {first:#x} to {last:#x} is inconsistent"
                ),
            });
        }
        Ok(page)
    }

    /// Every transaction id handed out is below this.
    pub fn max_trx_id(&self) -> u64 {
        u64_at(self.buf.as_ref(), OFF_MAX_TRX_ID).unwrap_or(0)
    }

    /// The oldest committed log not purged yet.
    pub fn history_first(&self) -> PageNo {
        u32_at(self.buf.as_ref(), OFF_HISTORY_FIRST).unwrap_or(FIL_NULL)
    }

    /// The newest committed log.
    pub fn history_last(&self) -> PageNo {
        u32_at(self.buf.as_ref(), OFF_HISTORY_LAST).unwrap_or(FIL_NULL)
    }

    /// Logs in the history list (InnoDB's "history list length").
    pub fn history_len(&self) -> u32 {
        u32_at(self.buf.as_ref(), OFF_HISTORY_LEN).unwrap_or(0)
    }

    /// The newest cached undo log header page, `FIL_NULL` when the cache is empty.
    pub fn cache_first(&self) -> PageNo {
        u32_at(self.buf.as_ref(), OFF_CACHE_FIRST).unwrap_or(FIL_NULL)
    }

    /// Rollback segments of the tablespace (on page 1; 0 on the other segments' pages). Not
    /// checked here: a reader bounds it by [`MAX_RSEGS`] and the file.
    pub fn rseg_count(&self) -> u32 {
        u32_at(self.buf.as_ref(), OFF_RSEG_COUNT).unwrap_or(0)
    }

    /// Slot `i`: the header page of an active undo log, or `FIL_NULL`.
    pub fn slot(&self, i: usize) -> PageNo {
        u32_at(self.buf.as_ref(), OFF_SLOTS + 4 * i).unwrap_or(FIL_NULL)
    }

    /// The page's bytes.
    pub fn as_bytes(&self) -> &[u8] {
        self.buf.as_ref()
    }

    /// The header pages the slots name, with their slot numbers.
    pub fn active_logs(&self) -> impl Iterator<Item = (usize, PageNo)> + '_ {
        (0..slot_count(self.page_size))
            .map(|i| (i, self.slot(i)))
            .filter(|&(_, page)| page != FIL_NULL)
    }
}

impl<B: AsRef<[u8]> + AsMut<[u8]>> TrxSysPage<B> {
    /// Formats `buf` as an empty rollback segment page `id`: ids from `max_trx_id` (0 on
    /// every page but the first), no rollback segment count, an empty history list and cache,
    /// every slot free.
    pub fn init(
        mut buf: B,
        page_size: PageSize,
        id: PageId,
        max_trx_id: u64,
    ) -> Result<Self, PageError> {
        let b = buf.as_mut();
        if b.len() != page_size.bytes() {
            return Err(PageError::WrongSize {
                expected: page_size.bytes(),
                found: b.len(),
            });
        }
        b.fill(0);
        FileHeader::new(id, PageType::TrxSys).write(b);
        let mut page = Self { buf, page_size };
        page.set_max_trx_id(max_trx_id);
        page.set_history(FIL_NULL, FIL_NULL, 0);
        page.set_cache_first(FIL_NULL);
        for i in 0..slot_count(page_size) {
            page.set_slot(i, FIL_NULL);
        }
        Ok(page)
    }

    /// Sets the id high-water mark.
    pub fn set_max_trx_id(&mut self, id: u64) {
        put_u64(self.buf.as_mut(), OFF_MAX_TRX_ID, id);
    }

    /// Sets the history list's ends and length.
    pub fn set_history(&mut self, first: PageNo, last: PageNo, len: u32) {
        let b = self.buf.as_mut();
        put_u32(b, OFF_HISTORY_FIRST, first);
        put_u32(b, OFF_HISTORY_LAST, last);
        put_u32(b, OFF_HISTORY_LEN, len);
    }

    /// Sets the number of rollback segments (page 1 only).
    pub fn set_rseg_count(&mut self, count: u32) {
        put_u32(self.buf.as_mut(), OFF_RSEG_COUNT, count);
    }

    /// Sets the newest cached header page (`FIL_NULL` = the cache is empty).
    pub fn set_cache_first(&mut self, page: PageNo) {
        put_u32(self.buf.as_mut(), OFF_CACHE_FIRST, page);
    }

    /// Sets slot `i` (ignored beyond [`slot_count`]).
    pub fn set_slot(&mut self, i: usize, page: PageNo) {
        if i < slot_count(self.page_size) {
            put_u32(self.buf.as_mut(), OFF_SLOTS + 4 * i, page);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_formatted_page_reads_back_and_a_broken_history_is_refused() {
        let ps = PageSize::K4;
        let mut page = TrxSysPage::init(vec![0u8; ps.bytes()], ps, PageId::new(9, 1), 256).unwrap();
        assert_eq!(slot_count(ps), 1005);
        page.set_slot(3, 40);
        page.set_slot(1004, 41);
        page.set_slot(1005, 42);
        page.set_rseg_count(4);
        page.set_history(7, 9, 2);
        let bytes = page.buf.clone();
        let page = TrxSysPage::open(&bytes[..], ps).unwrap();
        assert_eq!((page.max_trx_id(), page.rseg_count()), (256, 4));
        assert_eq!(
            page.active_logs().collect::<Vec<_>>(),
            vec![(3, 40), (1004, 41)],
            "a slot beyond the page is not written"
        );
        assert_eq!(
            (
                page.history_first(),
                page.history_last(),
                page.history_len()
            ),
            (7, 9, 2)
        );
        let mut broken = bytes.clone();
        put_u32(&mut broken, OFF_HISTORY_LEN, 0);
        let err = TrxSysPage::open(&broken[..], ps).unwrap_err().to_string();
        assert!(err.contains("9:1") && err.contains("history list"), "{err}");
    }
}
