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
    change_described_appending(mtr, guard, regions, 0..0, change)
}

/// [`change_described`], where `change` also writes `appended` whole (records appended in
/// the page's free space): those bytes are described as they are, without keeping and
/// comparing what the free space held before (a run of a leaf's rows appends a few kilobytes
/// of undo records at once).
pub(crate) fn change_described_appending<T>(
    mtr: &mut Mtr<'_>,
    guard: &mut ExclusiveGuard<'_>,
    regions: &[Range<usize>],
    appended: Range<usize>,
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
    if !appended.is_empty() {
        let bytes = guard.get(appended.clone()).ok_or_else(|| {
            BTreeError::corrupt(
                guard.page_id(),
                format!("appended bytes {appended:?} past the page's end"),
            )
        })?;
        mtr.describe(
            guard,
            IndexChange::Written {
                offset: appended.start,
                bytes,
            },
        )?;
    }
    for (start, span) in before {
        let old = saved.get(span).unwrap_or_default();
        let now = guard.get(start..start + old.len()).unwrap_or_default();
        for run in changed_runs(old, now) {
            if let Some(bytes) = now.get(run.clone()) {
                mtr.describe(
                    guard,
                    IndexChange::Written {
                        offset: start + run.start,
                        bytes,
                    },
                )?;
            }
        }
    }
    Ok(out)
}

/// Unchanged bytes between two changed runs shorter than this are described with them: a
/// described change costs its own header in the redo log (an offset and a length) and a call
/// of `Mtr::describe`, more than a few bytes of payload.
const BRIDGE: usize = 8;

/// The runs of bytes where `now` differs from `old` (equal lengths), in order; runs closer
/// than [`BRIDGE`] bytes are merged. Compares eight bytes at a time: an undo record of a
/// 180-byte row is written through this for every update.
fn changed_runs<'a>(old: &'a [u8], now: &'a [u8]) -> impl Iterator<Item = Range<usize>> + 'a {
    let len = old.len().min(now.len());
    let mut at = 0;
    std::iter::from_fn(move || {
        let start = at + first_difference(old.get(at..len)?, now.get(at..len)?)?;
        let mut end = start + 1;
        loop {
            // The run goes on to the next equal byte; a difference within `BRIDGE` after it
            // continues the run.
            end += first_equal(old.get(end..len)?, now.get(end..len)?).unwrap_or(len - end);
            let gap_end = (end + BRIDGE).min(len);
            match first_difference(old.get(end..gap_end)?, now.get(end..gap_end)?) {
                Some(next) => end += next + 1,
                None => break,
            }
        }
        at = end;
        Some(start..end)
    })
}

/// The position of the first byte where `a` and `b` differ.
fn first_difference(a: &[u8], b: &[u8]) -> Option<usize> {
    let words = a.len().min(b.len()) / 8;
    let (a_words, b_words) = (a.chunks_exact(8).take(words), b.chunks_exact(8));
    let skipped = a_words.zip(b_words).take_while(|(x, y)| x == y).count() * 8;
    a.get(skipped..)?
        .iter()
        .zip(b.get(skipped..)?)
        .position(|(x, y)| x != y)
        .map(|i| skipped + i)
}

/// The position of the first byte where `a` and `b` are equal.
fn first_equal(a: &[u8], b: &[u8]) -> Option<usize> {
    a.iter().zip(b).position(|(x, y)| x == y)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Applies the runs' bytes of `now` to `old`.
    fn patched(old: &[u8], now: &[u8]) -> Vec<u8> {
        let mut out = old.to_vec();
        for run in changed_runs(old, now) {
            out[run.clone()].copy_from_slice(&now[run]);
        }
        out
    }

    #[test]
    fn runs_are_found_merged_across_short_gaps_and_not_across_long_ones() {
        let old = [0u8; 40];
        let mut now = old;
        now[3] = 1;
        now[5] = 1; // 1 equal byte between: one run
        now[20] = 1; // 14 equal bytes after 5: a run of its own
        now[39] = 1; // the last byte
        let runs: Vec<_> = changed_runs(&old, &now).collect();
        assert_eq!(runs, vec![3..6, 20..21, 39..40]);
        assert_eq!(changed_runs(&old, &old).count(), 0);
    }

    proptest! {
        #[test]
        fn the_runs_turn_old_into_now_and_touch_no_equal_stretch(
            pairs in proptest::collection::vec((0u8..4, 0u8..4), 0..300)
        ) {
            let old: Vec<u8> = pairs.iter().map(|p| p.0).collect();
            let now: Vec<u8> = pairs.iter().map(|p| p.1).collect();
            prop_assert_eq!(patched(&old, &now), now.clone());
            let runs: Vec<_> = changed_runs(&old, &now).collect();
            for w in runs.windows(2) {
                prop_assert!(w[0].end + BRIDGE <= w[1].start, "{:?} then {:?}", w[0], w[1]);
            }
            for run in &runs {
                prop_assert!(old[run.start] != now[run.start]);
                prop_assert!(old[run.end - 1] != now[run.end - 1]);
            }
        }
    }
}
