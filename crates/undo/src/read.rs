//! Reading undo logs: a record by its roll pointer, a log's header and pages, and its records
//! page by page (rollback and purge hold one page of records at a time) or all at once.

use barracuda_btree::{BTreeError, Result};
use barracuda_page::{PageNo, UndoKind, UndoLogHeader, UndoPage, FIL_NULL};

use crate::log::{page_err, OwnedUndoRecord, UndoSpace};
use crate::roll_ptr::RollPtr;

impl UndoSpace {
    /// The undo record a roll pointer names.
    pub fn record(&self, ptr: RollPtr) -> Result<OwnedUndoRecord> {
        let id = self.page_id(ptr.page_no);
        let guard = self.pool.get_shared(id)?;
        let page =
            UndoPage::open_trusted(&guard[..], self.pool.page_size()).map_err(page_err(id))?;
        let record = page.record_at(ptr.offset).map_err(page_err(id))?;
        Ok(OwnedUndoRecord::of(&record))
    }

    /// The header of the log starting at `first_page`.
    pub fn log_header(&self, first_page: PageNo) -> Result<UndoLogHeader> {
        let id = self.page_id(first_page);
        let guard = self.pool.get_shared(id)?;
        UndoPage::open_trusted(&guard[..], self.pool.page_size())
            .map_err(page_err(id))?
            .log_header()
            .ok_or_else(|| BTreeError::corrupt(id, "not the first page of an undo log"))
    }

    /// The records on page `page_no` of the log starting at `first_page`, in the order
    /// written, with their roll pointers: one page's worth, so that a rollback of a huge
    /// transaction holds one page of records at a time. The page is checked whole, and that it
    /// belongs to that log.
    pub fn records_on_page(
        &self,
        first_page: PageNo,
        page_no: PageNo,
    ) -> Result<Vec<(RollPtr, OwnedUndoRecord)>> {
        self.records_on_page_of_kind(first_page, page_no, |_| true)
    }

    /// [`records_on_page`](Self::records_on_page), only the records whose kind `wanted`
    /// accepts: the others are not copied (purge has nothing to do for an insert's record,
    /// nearly every record of a load).
    pub fn records_on_page_of_kind(
        &self,
        first_page: PageNo,
        page_no: PageNo,
        wanted: impl Fn(UndoKind) -> bool,
    ) -> Result<Vec<(RollPtr, OwnedUndoRecord)>> {
        let id = self.page_id(page_no);
        let guard = self.pool.get_shared(id)?;
        let page = UndoPage::open(&guard[..], self.pool.page_size()).map_err(page_err(id))?;
        if page.first_page() != first_page {
            return Err(BTreeError::corrupt(
                id,
                format!("page of another undo log in the chain of {first_page}"),
            ));
        }
        Ok(page
            .records()
            .filter(|(_, record)| wanted(record.kind))
            .map(|(offset, record)| {
                let ptr = RollPtr {
                    page_no,
                    offset,
                    insert: record.kind == UndoKind::Insert,
                };
                (ptr, OwnedUndoRecord::of(&record))
            })
            .collect())
    }

    /// The pages of the log starting at `first_page`, in order.
    pub fn log_pages(&self, first_page: PageNo) -> Result<Vec<PageNo>> {
        let mut pages = Vec::new();
        self.walk_log(first_page, |page_no, _| {
            pages.push(page_no);
            Ok(())
        })?;
        Ok(pages)
    }

    /// Calls `visit` with each page of the log starting at `first_page`, in order, opened
    /// and checked whole (every record). A chain that leaves the log or runs longer than any
    /// file could is an error naming the page.
    fn walk_log(
        &self,
        first_page: PageNo,
        mut visit: impl FnMut(PageNo, &UndoPage<&[u8]>) -> Result<()>,
    ) -> Result<()> {
        let mut next = first_page;
        let mut walked = 0u64;
        while next != FIL_NULL {
            let id = self.page_id(next);
            let guard = self.pool.get_shared(id)?;
            let page = UndoPage::open(&guard[..], self.pool.page_size()).map_err(page_err(id))?;
            walked += 1;
            if page.first_page() != first_page || walked > u64::from(u32::MAX) {
                return Err(BTreeError::corrupt(
                    id,
                    format!("page of another undo log in the chain of {first_page}"),
                ));
            }
            visit(next, &page)?;
            next = page.next_page();
        }
        Ok(())
    }

    /// Every record of the log starting at `first_page`, oldest first, with its roll pointer.
    pub fn records_oldest_first(
        &self,
        first_page: PageNo,
    ) -> Result<Vec<(RollPtr, OwnedUndoRecord)>> {
        let mut out = Vec::new();
        self.walk_log(first_page, |page_no, page| {
            for (offset, record) in page.records() {
                let ptr = RollPtr {
                    page_no,
                    offset,
                    insert: record.kind == UndoKind::Insert,
                };
                out.push((ptr, OwnedUndoRecord::of(&record)));
            }
            Ok(())
        })?;
        Ok(out)
    }
}
