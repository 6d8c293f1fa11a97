//! Mutations of an index page: init, insert, replace, remove, compaction, header setters.
//!
//! Every method either succeeds and leaves a page that passes [`IndexPage::open`], or fails and
//! leaves the page byte-for-byte unchanged.

use super::{
    max_key_len, max_record_size, record_size, IndexPage, Record, ValueRef, HEAP_START,
    NO_LAST_INSERT, OFF_DIRECTION, OFF_GARBAGE, OFF_HEAP_TOP, OFF_INDEX_ID, OFF_LAST_INSERT,
    OFF_LEVEL, OFF_N_DIRECTION, OFF_N_RECS, SLOT_SIZE,
};
use crate::bytes::{put_u16, put_u32, put_u64, put_u8, u16_at, u8_at, zero};
use crate::error::PageError;
use crate::header::{set_page_lsn, FileHeader, PageType, OFF_NEXT, OFF_PREV};
use crate::ids::{Lsn, PageId, PageNo, PageSize};

/// Insert direction values (InnoDB: PAGE_LEFT / PAGE_RIGHT / PAGE_NO_DIRECTION).
pub(crate) const DIR_NONE: u8 = 0;
pub(crate) const DIR_ASCENDING: u8 = 1;
pub(crate) const DIR_DESCENDING: u8 = 2;

impl<B: AsRef<[u8]> + AsMut<[u8]>> IndexPage<B> {
    /// Formats `buf` as an empty index page: zeroes it, writes a file header (type `Index`,
    /// `page_id`, prev/next `FIL_NULL`, LSN 0) and the index header.
    ///
    /// Fails with [`PageError::WrongSize`] if `buf` is not `page_size` long.
    pub fn init(
        mut buf: B,
        page_size: PageSize,
        page_id: PageId,
        level: u16,
        index_id: u64,
    ) -> Result<Self, PageError> {
        if buf.as_mut().len() == page_size.bytes() {
            buf.as_mut().fill(0);
        }
        Self::init_zeroed(buf, page_size, page_id, level, index_id)
    }

    /// [`init`](Self::init) for a buffer that holds only zeros already — a page the buffer
    /// pool has just created (`BufferPool::create` hands out zeroed frames): writes the headers
    /// and nothing else, where `init` first writes every byte of the page (a sixth of a
    /// sequential load's page splits, in the loading thread). The result is the same bytes.
    ///
    /// A buffer holding anything else gives a page whose free space is not zero (debug builds
    /// panic on it). Fails with [`PageError::WrongSize`] if `buf` is not `page_size` long.
    pub fn init_zeroed(
        mut buf: B,
        page_size: PageSize,
        page_id: PageId,
        level: u16,
        index_id: u64,
    ) -> Result<Self, PageError> {
        let b = buf.as_mut();
        if b.len() != page_size.bytes() {
            return Err(PageError::WrongSize {
                expected: page_size.bytes(),
                found: b.len(),
            });
        }
        debug_assert!(
            b.iter().all(|&x| x == 0),
            "init_zeroed given a buffer that is not all zeros"
        );
        FileHeader::new(page_id, PageType::Index).write(b);
        put_u16(b, OFF_LEVEL, level);
        put_u16(b, OFF_HEAP_TOP, HEAP_START as u16);
        put_u64(b, OFF_INDEX_ID, index_id);
        put_u16(b, OFF_LAST_INSERT, NO_LAST_INSERT);
        Ok(Self { buf, page_size })
    }

    /// Formats `buf` as an index page holding `records` (which must be strictly sorted by key).
    /// Convenient for tests and bulk loads.
    pub fn from_records<'r>(
        buf: B,
        page_size: PageSize,
        page_id: PageId,
        level: u16,
        index_id: u64,
        records: impl IntoIterator<Item = Record<'r>>,
    ) -> Result<Self, PageError> {
        let mut page = Self::init(buf, page_size, page_id, level, index_id)?;
        for rec in records {
            page.insert(page.len(), &rec)?;
        }
        Ok(page)
    }

    fn bytes_mut(&mut self) -> &mut [u8] {
        self.buf.as_mut()
    }

    fn set_u16(&mut self, off: usize, v: usize) {
        debug_assert!(u16::try_from(v).is_ok());
        put_u16(self.bytes_mut(), off, v as u16);
    }

    /// Sets the previous-page link in the file header.
    pub fn set_prev(&mut self, prev: PageNo) {
        put_u32(self.bytes_mut(), OFF_PREV, prev);
    }

    /// Sets the next-page link in the file header.
    pub fn set_next(&mut self, next: PageNo) {
        put_u32(self.bytes_mut(), OFF_NEXT, next);
    }

    /// Sets the page LSN in the file header.
    pub fn set_page_lsn(&mut self, lsn: Lsn) {
        set_page_lsn(self.bytes_mut(), lsn);
    }

    /// Checks that `rec` may live in this page (key and record limits, kind matching the level,
    /// well-formed overflow pointer) and returns its size including the slot.
    pub fn check_record(&self, rec: &Record<'_>) -> Result<usize, PageError> {
        let max_key = max_key_len(self.page_size);
        if rec.key.len() > max_key {
            return Err(PageError::KeyTooLong {
                len: rec.key.len(),
                max: max_key,
            });
        }
        let size = record_size(rec);
        let max = max_record_size(self.page_size);
        if size > max {
            return Err(PageError::RecordTooLarge { size, max });
        }
        if rec.is_child() != (self.level() > 0) {
            return Err(PageError::LevelMismatch {
                what: "child pointers belong on internal pages, values on leaves",
            });
        }
        if let Some(what) = rec.shape_error() {
            return Err(PageError::Invalid { what: what.into() });
        }
        Ok(size)
    }

    /// Whether `rec` can be inserted (after compaction if needed) without a split.
    pub fn fits(&self, rec: &Record<'_>) -> bool {
        self.check_record(rec)
            .is_ok_and(|size| size <= self.free_space())
    }

    /// Checks that `key` may sit between records `before` and `after` (either may be absent).
    fn check_order(
        &self,
        index: usize,
        key: &[u8],
        before: Option<usize>,
        after: Option<usize>,
    ) -> Result<(), PageError> {
        let below = match before {
            Some(j) => self.key(j)? < key,
            None => true,
        };
        let above = match after {
            Some(j) => key < self.key(j)?,
            None => true,
        };
        if below && above {
            Ok(())
        } else {
            Err(PageError::KeyOutOfOrder { index })
        }
    }

    /// Inserts `rec` so that it becomes record `pos`, compacting the heap first if the record
    /// only fits that way.
    ///
    /// Fails, leaving the page unchanged, with [`PageError::PageFull`] when it does not fit (the
    /// caller splits), [`PageError::OutOfRange`] if `pos > len()`, [`PageError::KeyOutOfOrder`]
    /// if the key is not strictly between its neighbours, or the errors of
    /// [`check_record`](Self::check_record).
    pub fn insert(&mut self, pos: usize, rec: &Record<'_>) -> Result<(), PageError> {
        let n = self.len();
        if pos > n {
            return Err(PageError::OutOfRange { index: pos, len: n });
        }
        let size = self.check_record(rec)?;
        self.check_order(pos, rec.key, pos.checked_sub(1), (pos < n).then_some(pos))?;
        if size > self.free_space() {
            return Err(PageError::PageFull {
                needed: size,
                available: self.free_space(),
            });
        }
        if size > self.contiguous_free() {
            self.compact();
        }
        let off = self.append_to_heap(rec);
        self.open_slots(pos, 1);
        self.set_u16(self.slot_pos(pos), off);
        self.note_insert(pos);
        Ok(())
    }

    /// Writes `rec` at the heap top (room checked by the caller) and returns its offset.
    fn append_to_heap(&mut self, rec: &Record<'_>) -> usize {
        let off = self.heap_top();
        rec.encode(self.bytes_mut(), off);
        self.set_u16(OFF_HEAP_TOP, off + rec.encoded_len());
        off
    }

    /// Shifts slots `pos..len` to `pos + k..len + k` and bumps the record count; the `k` new
    /// slots at `pos..pos + k` are left for the caller to fill.
    pub(crate) fn open_slots(&mut self, pos: usize, k: usize) {
        let n = self.len();
        let (from, to) = (self.dir_start(), self.slot_pos(pos) + SLOT_SIZE);
        let shift = SLOT_SIZE * k;
        self.bytes_mut().copy_within(from..to, from - shift);
        self.set_u16(OFF_N_RECS, n + k);
    }

    /// Removes slots `range` (moving the later ones up), zeroes the vacated slot bytes and lowers
    /// the record count. Heap accounting is the caller's job.
    pub(crate) fn close_slots(&mut self, start: usize, end: usize) {
        let n = self.len();
        let k = end - start;
        // Slots end..n occupy [dir_start, P - 8 - 2 * end).
        let from = self.dir_start();
        let to = self.slot_pos(end) + SLOT_SIZE;
        let shift = SLOT_SIZE * k;
        self.bytes_mut().copy_within(from..to, from + shift);
        zero(self.bytes_mut(), from, from + shift);
        self.set_u16(OFF_N_RECS, n - k);
    }

    /// Updates the insert-direction hints (InnoDB: page_cur_insert_rec_low's PAGE_DIRECTION).
    fn note_insert(&mut self, pos: usize) {
        let b = self.as_bytes();
        let last = u16_at(b, OFF_LAST_INSERT).unwrap_or(NO_LAST_INSERT);
        let dir = u8_at(b, OFF_DIRECTION).unwrap_or(DIR_NONE);
        let count = u16_at(b, OFF_N_DIRECTION).unwrap_or(0);
        let new_dir = if last == NO_LAST_INSERT {
            DIR_NONE
        } else if pos == usize::from(last) + 1 {
            DIR_ASCENDING
        } else if pos == usize::from(last) {
            DIR_DESCENDING
        } else {
            DIR_NONE
        };
        let new_count = if new_dir == DIR_NONE {
            0
        } else if new_dir == dir {
            count.saturating_add(1)
        } else {
            1
        };
        let b = self.bytes_mut();
        put_u16(
            b,
            OFF_LAST_INSERT,
            u16::try_from(pos).unwrap_or(NO_LAST_INSERT),
        );
        put_u8(b, OFF_DIRECTION, new_dir);
        put_u16(b, OFF_N_DIRECTION, new_count);
    }

    /// Forgets the insert-direction hints (after removals and splits shift positions).
    pub(crate) fn reset_insert_hints(&mut self) {
        let b = self.bytes_mut();
        put_u16(b, OFF_LAST_INSERT, NO_LAST_INSERT);
        put_u8(b, OFF_DIRECTION, DIR_NONE);
        put_u16(b, OFF_N_DIRECTION, 0);
    }

    /// Adds `bytes` of heap at `off` to the garbage, or lowers the heap top if they are its last
    /// bytes (zeroing them).
    fn release(&mut self, off: usize, bytes: usize) {
        if off + bytes == self.heap_top() {
            zero(self.bytes_mut(), off, off + bytes);
            self.set_u16(OFF_HEAP_TOP, off);
        } else {
            let g = self.garbage() + bytes;
            self.set_u16(OFF_GARBAGE, g);
        }
    }

    /// Replaces record `i` with `rec` (the key may change if it stays strictly between the
    /// neighbours). Same failure semantics as [`insert`](Self::insert); on `PageFull` the caller
    /// may remove the record and insert it again after a split.
    pub fn replace(&mut self, i: usize, rec: &Record<'_>) -> Result<(), PageError> {
        let n = self.len();
        if i >= n {
            return Err(PageError::OutOfRange { index: i, len: n });
        }
        self.check_record(rec)?;
        self.check_order(i, rec.key, i.checked_sub(1), (i + 1 < n).then_some(i + 1))?;
        let off = self.slot(i);
        let old = self.record(i)?.encoded_len();
        let new = rec.encoded_len();
        let at_top = off + old == self.heap_top();
        if new <= old {
            rec.encode(self.bytes_mut(), off);
            self.release(off + new, old - new);
        } else if at_top && new - old <= self.contiguous_free() {
            rec.encode(self.bytes_mut(), off);
            self.set_u16(OFF_HEAP_TOP, off + new);
        } else if new <= self.contiguous_free() {
            self.release(off, old);
            let at = self.append_to_heap(rec);
            self.set_u16(self.slot_pos(i), at);
        } else if new <= self.free_space() + old {
            self.compact_without(Some(i));
            let at = self.append_to_heap(rec);
            self.set_u16(self.slot_pos(i), at);
        } else {
            return Err(PageError::PageFull {
                needed: new,
                available: self.free_space() + old,
            });
        }
        Ok(())
    }

    /// Sets the child pointer of record `i` of an internal node in place.
    ///
    /// Fails with [`PageError::OutOfRange`] or [`PageError::LevelMismatch`] (leaf page).
    pub fn set_child(&mut self, i: usize, child: PageNo) -> Result<(), PageError> {
        let n = self.len();
        if i >= n {
            return Err(PageError::OutOfRange { index: i, len: n });
        }
        if !matches!(self.record(i)?.value, ValueRef::Child(_)) {
            return Err(PageError::LevelMismatch {
                what: "set_child on a record without a child pointer",
            });
        }
        let off = self.slot(i);
        put_u32(self.bytes_mut(), off + 3, child);
        Ok(())
    }

    /// Removes record `i`; its bytes become garbage (or free space if it was last in the heap).
    pub fn remove(&mut self, i: usize) -> Result<(), PageError> {
        self.remove_range(i..i + 1)
    }

    /// Removes records `range`. Removing every record resets the heap.
    pub fn remove_range(&mut self, range: std::ops::Range<usize>) -> Result<(), PageError> {
        let n = self.len();
        if range.start > range.end || range.end > n {
            return Err(PageError::OutOfRange {
                index: range.end.max(range.start),
                len: n,
            });
        }
        // Release in decreasing offset order so that records at the heap top lower it.
        let mut extents: Vec<(usize, usize)> = range
            .clone()
            .map(|j| Ok((self.slot(j), self.record(j)?.encoded_len())))
            .collect::<Result<_, PageError>>()?;
        extents.sort_unstable_by(|a, b| b.cmp(a));
        for (off, len) in extents {
            self.release(off, len);
        }
        self.close_slots(range.start, range.end);
        if self.is_empty() {
            let top = self.heap_top();
            zero(self.bytes_mut(), HEAP_START, top);
            self.set_u16(OFF_HEAP_TOP, HEAP_START);
            self.set_u16(OFF_GARBAGE, 0);
        }
        self.reset_insert_hints();
        Ok(())
    }

    /// Rewrites the heap without garbage, records in key order; zeroes the freed bytes.
    /// Afterwards `contiguous_free() == free_space()`. InnoDB: btr_page_reorganize.
    pub fn compact(&mut self) {
        self.compact_without(None);
    }

    /// Compacts, dropping record `skip`'s bytes (its slot is left dangling for the caller to
    /// overwrite immediately).
    fn compact_without(&mut self, skip: Option<usize>) {
        let n = self.len();
        let mut heap = Vec::with_capacity(self.heap_top() - HEAP_START);
        let mut offsets = Vec::with_capacity(n);
        for i in 0..n {
            if Some(i) == skip {
                offsets.push(HEAP_START);
                continue;
            }
            let off = self.slot(i);
            let len = self.trusted_record(i).encoded_len();
            offsets.push(HEAP_START + heap.len());
            heap.extend_from_slice(self.as_bytes().get(off..off + len).unwrap_or(&[]));
        }
        let old_top = self.heap_top();
        let new_top = HEAP_START + heap.len();
        crate::bytes::put(self.bytes_mut(), HEAP_START, &heap);
        zero(self.bytes_mut(), new_top, old_top);
        for (i, off) in offsets.into_iter().enumerate() {
            self.set_u16(self.slot_pos(i), off);
        }
        self.set_u16(OFF_HEAP_TOP, new_top);
        self.set_u16(OFF_GARBAGE, 0);
    }
}
