//! Moving records between index pages: splits, merges and the choice of a split point.

use super::mutate::{DIR_ASCENDING, DIR_DESCENDING};
use super::{record_size, IndexPage, Record, OFF_DIRECTION, OFF_LAST_INSERT, OFF_N_DIRECTION};
use crate::bytes::{u16_at, u8_at};
use crate::error::PageError;
use std::ops::Range;

/// Consecutive inserts in one direction after which a split at the insert position is chosen
/// instead of a split in the middle (sequential loads then leave full pages behind).
/// InnoDB: btr_page_get_split_rec_to_right / _to_left use the PAGE_DIRECTION hint the same way.
pub const SEQUENTIAL_SPLIT_THRESHOLD: u16 = 3;

/// Where to split a full page before inserting a record that did not fit.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct SplitPoint {
    /// Records `at..len` move to the new right page (`split_off(at, ..)`); `0..=len`.
    pub at: usize,
    /// Whether the pending record goes to the left page at its position `pos`; otherwise it goes
    /// to the right page at position `pos - at`.
    pub insert_left: bool,
}

impl<B: AsRef<[u8]>> IndexPage<B> {
    /// Picks where to split this page so that record `rec` can then be inserted at `pos`.
    ///
    /// By default the split balances bytes: the left page receives the shortest prefix of the
    /// records (with `rec` counted at `pos`) holding at least half of their bytes, and both
    /// sides get at least one record. If the last inserts were sequential (ascending at the end
    /// or descending at the start, see [`SEQUENTIAL_SPLIT_THRESHOLD`]) and `pos` continues the
    /// sequence, the split is at `pos` so the full page stays full.
    ///
    /// With records within [`max_record_size`](crate::max_record_size), the record always fits
    /// on its side after the split.
    pub fn split_point(&self, pos: usize, rec: &Record<'_>) -> SplitPoint {
        let n = self.len();
        let pos = pos.min(n);
        let b = self.as_bytes();
        let last = u16_at(b, OFF_LAST_INSERT).map_or(usize::MAX, usize::from);
        let dir = u8_at(b, OFF_DIRECTION).unwrap_or(0);
        let streak = u16_at(b, OFF_N_DIRECTION).unwrap_or(0) >= SEQUENTIAL_SPLIT_THRESHOLD;
        if streak && dir == DIR_ASCENDING && pos == n && last.checked_add(1) == Some(pos) {
            return SplitPoint {
                at: n,
                insert_left: false,
            };
        }
        if streak && dir == DIR_DESCENDING && pos == 0 && last == 0 {
            return SplitPoint {
                at: 0,
                insert_left: true,
            };
        }
        let new_size = record_size(rec);
        let size_of = |j: usize| match j.cmp(&pos) {
            std::cmp::Ordering::Less => self.trusted_size_at(j),
            std::cmp::Ordering::Equal => new_size,
            std::cmp::Ordering::Greater => self.trusted_size_at(j - 1),
        };
        let total = self.used_space() + new_size;
        // k = number of items (of n + 1) on the left, 1..=n.
        let mut k = 0;
        let mut acc = 0;
        while k < n + 1 && acc * 2 < total {
            acc += size_of(k);
            k += 1;
        }
        let k = k.clamp(1, n.max(1));
        if pos < k {
            SplitPoint {
                at: k - 1,
                insert_left: true,
            }
        } else {
            SplitPoint {
                at: k,
                insert_left: false,
            }
        }
    }

    /// The byte-balanced split point ignoring any pending insert: the smallest `at` such that
    /// records `0..at` hold at least half of the used bytes, clamped to `1..len` when `len >= 2`.
    pub fn middle_split_point(&self) -> usize {
        let n = self.len();
        let used = self.used_space();
        let mut acc = 0;
        let mut at = 0;
        while at < n && acc * 2 < used {
            acc += self.trusted_size_at(at);
            at += 1;
        }
        if n >= 2 {
            at.clamp(1, n - 1)
        } else {
            at
        }
    }

    /// Bytes (records plus slots) of records `range`.
    pub fn range_size(&self, range: Range<usize>) -> usize {
        range.map(|j| self.trusted_size_at(j)).sum()
    }
}

impl<B: AsRef<[u8]> + AsMut<[u8]>> IndexPage<B> {
    /// Inserts a copy of `other`'s records `range` so that they start at position `pos`, in
    /// order. All or nothing: fails with [`PageError::PageFull`] if they do not all fit (after
    /// compaction), [`PageError::KeyOutOfOrder`] if they do not sort between this page's records
    /// `pos - 1` and `pos`, [`PageError::LevelMismatch`] if the pages differ in level or size,
    /// [`PageError::OutOfRange`] for a bad `pos` or `range`.
    pub fn insert_from<O: AsRef<[u8]>>(
        &mut self,
        pos: usize,
        other: &IndexPage<O>,
        range: Range<usize>,
    ) -> Result<(), PageError> {
        let n = self.len();
        if pos > n {
            return Err(PageError::OutOfRange { index: pos, len: n });
        }
        if range.start > range.end || range.end > other.len() {
            return Err(PageError::OutOfRange {
                index: range.end.max(range.start),
                len: other.len(),
            });
        }
        if other.level() != self.level() || other.page_size() != self.page_size() {
            return Err(PageError::LevelMismatch {
                what: "pages of different levels or sizes",
            });
        }
        if range.is_empty() {
            return Ok(());
        }
        // Decoded before anything changes, so that a bad source record fails the whole call.
        let records = range
            .clone()
            .map(|src| other.record(src))
            .collect::<Result<Vec<_>, _>>()?;
        let (Some(first), Some(last)) = (records.first(), records.last()) else {
            return Ok(());
        };
        if pos > 0 && self.key(pos - 1)? >= first.key {
            return Err(PageError::KeyOutOfOrder { index: pos });
        }
        if pos < n && last.key >= self.key(pos)? {
            return Err(PageError::KeyOutOfOrder { index: pos });
        }
        let needed: usize = records.iter().map(record_size).sum();
        if needed > self.free_space() {
            return Err(PageError::PageFull {
                needed,
                available: self.free_space(),
            });
        }
        if needed > self.contiguous_free() {
            self.compact();
        }
        self.open_slots(pos, records.len());
        for (j, rec) in records.iter().enumerate() {
            let off = self.heap_top();
            rec.encode(self.buf.as_mut(), off);
            crate::bytes::put_u16(
                self.buf.as_mut(),
                super::OFF_HEAP_TOP,
                (off + rec.encoded_len()) as u16,
            );
            let slot = self.slot_pos(pos + j);
            crate::bytes::put_u16(self.buf.as_mut(), slot, off as u16);
        }
        self.reset_insert_hints();
        Ok(())
    }

    /// Appends all of `other`'s records after this page's (a merge of a right sibling into its
    /// left one). All or nothing, as [`insert_from`](Self::insert_from).
    pub fn append_all_from<O: AsRef<[u8]>>(
        &mut self,
        other: &IndexPage<O>,
    ) -> Result<(), PageError> {
        self.insert_from(self.len(), other, 0..other.len())
    }

    /// Moves records `at..len` to `right`, which MUST be empty and of the same level and page
    /// size (typically freshly [`init`](IndexPage::init)ed), preserving order; this page is then
    /// compacted. Page links (prev/next) are not touched: the B-tree sets them.
    ///
    /// Fails without changing either page if `right` is not empty ([`PageError::Invalid`]), on a
    /// level or size mismatch, or if `at > len()`.
    pub fn split_off<R: AsRef<[u8]> + AsMut<[u8]>>(
        &mut self,
        at: usize,
        right: &mut IndexPage<R>,
    ) -> Result<(), PageError> {
        if !right.is_empty() {
            return Err(PageError::Invalid {
                what: "split_off target page is not empty".into(),
            });
        }
        let n = self.len();
        if at > n {
            return Err(PageError::OutOfRange { index: at, len: n });
        }
        right.insert_from(0, self, at..n)?;
        self.remove_range(at..n)?;
        self.compact();
        Ok(())
    }

    /// Moves records `0..k` of `right` (the right sibling) to the end of this page, for
    /// rebalancing; all or nothing.
    pub fn take_first_from<R: AsRef<[u8]> + AsMut<[u8]>>(
        &mut self,
        right: &mut IndexPage<R>,
        k: usize,
    ) -> Result<(), PageError> {
        self.insert_from(self.len(), right, 0..k)?;
        right.remove_range(0..k)
    }

    /// Moves the last `k` records of `left` (the left sibling) to the start of this page, for
    /// rebalancing; all or nothing.
    pub fn take_last_from<L: AsRef<[u8]> + AsMut<[u8]>>(
        &mut self,
        left: &mut IndexPage<L>,
        k: usize,
    ) -> Result<(), PageError> {
        let n = left.len();
        let start = n
            .checked_sub(k)
            .ok_or(PageError::OutOfRange { index: k, len: n })?;
        self.insert_from(0, left, start..n)?;
        left.remove_range(start..n)
    }
}
