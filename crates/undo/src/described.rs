//! Small changes to undo and transaction system pages, described to the mini-transaction as
//! the byte runs they write instead of left to a whole-page diff.
//!
//! A transaction changes a few dozen bytes of the transaction system page and of its undo log
//! header page at its start, at each record, at commit and at purge. Left to the redo sink's
//! diff, each such mtr copied the 16 KiB page as its before-image and compared it whole: a
//! profile of one-row transactions spent over a quarter of its time in those copies and
//! compares. Here the caller names the byte ranges the change may write (every one of them:
//! a byte written outside them and not described would be missing from the redo log), the
//! change is made through [`ExclusiveGuard::described_change_mut`] (no before-image), and
//! every run of bytes that changed inside them is described as an
//! [`IndexChange::Written`] — the same records the B-tree uses for its header fields.

use std::ops::Range;

use smallvec::SmallVec;

use barracuda_btree::{BTreeError, IndexChange, Mtr, Result};
use barracuda_buffer_pool::ExclusiveGuard;
use barracuda_page::trx_sys::OFF_SLOTS;
use barracuda_page::undo::UNDO_LOG_DATA;
use barracuda_page::{PageNo, PageSize, TrxSysPage, FIL_HEADER_SIZE};

/// The fixed fields of the transaction system page (id mark, history list, header page cache).
pub(crate) const TRX_SYS_FIELDS: Range<usize> = FIL_HEADER_SIZE..OFF_SLOTS;

/// Slot `slot` of the transaction system page.
pub(crate) fn trx_sys_slot(slot: usize) -> Range<usize> {
    let at = OFF_SLOTS + 4 * slot;
    at..at + 4
}

/// Sets slot `slot` of the rollback segment page latched by `guard` to `page_no` (`FIL_NULL`:
/// free), described to `mtr`. Call before handing the guard to the mtr.
pub(crate) fn set_slot_described(
    mtr: &mut Mtr<'_>,
    guard: &mut ExclusiveGuard<'_>,
    slot: usize,
    page_no: PageNo,
    page_size: PageSize,
) -> Result<()> {
    let id = guard.page_id();
    change_described(mtr, guard, &[trx_sys_slot(slot)], |page| {
        TrxSysPage::open(page, page_size)
            .map_err(|source| BTreeError::Page { page: id, source })?
            .set_slot(slot, page_no);
        Ok(())
    })
}

/// The page fields and log header of an undo page (a log header page's; a larger range than
/// another page's fields, which is harmless: unchanged bytes are not described).
pub(crate) const UNDO_FIELDS: Range<usize> = FIL_HEADER_SIZE..UNDO_LOG_DATA;

/// Makes `change` to `guard`'s page, writing only inside `regions`, and describes to `mtr`
/// what it wrote. Call before handing the guard to the mtr.
pub(crate) fn change_described<T>(
    mtr: &mut Mtr<'_>,
    guard: &mut ExclusiveGuard<'_>,
    regions: &[Range<usize>],
    change: impl FnOnce(&mut [u8]) -> Result<T>,
) -> Result<T> {
    // The regions' bytes before the change, back to back in one buffer (inline for the usual
    // few dozen bytes: this runs for every undo record written).
    let mut saved: SmallVec<[u8; 256]> = SmallVec::new();
    let mut before: SmallVec<[(usize, Range<usize>); 8]> = SmallVec::new();
    for r in regions {
        if let Some(bytes) = guard.get(r.clone()) {
            let at = saved.len();
            saved.extend_from_slice(bytes);
            before.push((r.start, at..saved.len()));
        }
    }
    let out = change(guard.described_change_mut())?;
    for (start, span) in before {
        let old = saved.get(span).unwrap_or_default();
        let now = guard.get(start..start + old.len()).unwrap_or_default();
        let mut i = 0;
        while i < old.len() {
            if now.get(i) == old.get(i) {
                i += 1;
                continue;
            }
            let run = i;
            while i < old.len() && now.get(i) != old.get(i) {
                i += 1;
            }
            if let Some(bytes) = now.get(run..i) {
                mtr.describe(
                    guard,
                    IndexChange::Written {
                        offset: start + run,
                        bytes,
                    },
                )?;
            }
        }
    }
    Ok(out)
}
