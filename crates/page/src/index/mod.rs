//! The B+tree index page: an index header, a record heap growing up from the header and a
//! sorted slot directory of u16 record offsets growing down from the trailer.
//!
//! ```text
//! 0        38             72                      heap_top        dir_start         P-8    P
//! | FIL hdr | index header | records (heap) ...  | free space ... | slots n-1 .. 0 | trailer |
//! ```
//! Slot `i` (the `i`-th smallest key) is the u16 at `P - 8 - 2 * (i + 1)`. Binary search runs over
//! the slots; there are no per-record chains (InnoDB keeps a singly linked record list and a sparse
//! directory; a dense directory makes search and positional access direct).
//!
//! [`IndexPage::open`] validates the whole structure once, so that every accessor afterwards is
//! infallible. Mutations keep the page valid and leave it unchanged when they fail.

mod mutate;
mod record;
mod search;
pub use search::key_head;
mod split;
#[cfg(test)]
mod tests;

pub use record::{
    Record, RecordRef, SysFields, ValueRef, CHILD_HEADER_SIZE, INLINE_HEADER_SIZE,
    INLINE_SYS_OFFSET, MAX_OVERFLOW_LEN, MAX_ROLL_PTR, MAX_TRX_ID, OVERFLOW_HEADER_SIZE,
    OVERFLOW_SYS_OFFSET, SYS_FIELDS_SIZE,
};
pub use split::{SplitPoint, SEQUENTIAL_SPLIT_THRESHOLD};

use crate::bytes::{u16_at, u64_at, u8_at};
use crate::error::PageError;
use crate::header::{
    check_type_only, claimed_page_id, FileHeader, PageType, FIL_HEADER_SIZE, FIL_TRAILER_SIZE,
};
use crate::ids::{Lsn, PageId, PageNo, PageSize};

/// Offset of the level (u16, 0 = leaf).
pub const OFF_LEVEL: usize = FIL_HEADER_SIZE;
/// Offset of the record count (u16).
pub const OFF_N_RECS: usize = FIL_HEADER_SIZE + 2;
/// Offset of the heap top (u16): first byte after the last record of the heap.
pub const OFF_HEAP_TOP: usize = FIL_HEADER_SIZE + 4;
/// Offset of the garbage byte count (u16): heap bytes held by removed or replaced records.
pub const OFF_GARBAGE: usize = FIL_HEADER_SIZE + 6;
/// Offset of the flags (u16, reserved, MUST be 0).
pub const OFF_FLAGS: usize = FIL_HEADER_SIZE + 8;
/// Offset of the index id (u64).
pub const OFF_INDEX_ID: usize = FIL_HEADER_SIZE + 10;
/// Offset of the last-insert hint (u16 slot position, `0xFFFF` = none). InnoDB: PAGE_LAST_INSERT.
pub const OFF_LAST_INSERT: usize = FIL_HEADER_SIZE + 18;
/// Offset of the insert direction (u8: 0 none, 1 ascending, 2 descending). InnoDB: PAGE_DIRECTION.
pub const OFF_DIRECTION: usize = FIL_HEADER_SIZE + 20;
/// Offset of the number of consecutive inserts in that direction (u16). InnoDB: PAGE_N_DIRECTION.
pub const OFF_N_DIRECTION: usize = FIL_HEADER_SIZE + 22;
/// Offset of a reserved u64 (MUST be 0), kept for a max transaction id (InnoDB: PAGE_MAX_TRX_ID).
pub const OFF_MAX_TRX_ID: usize = FIL_HEADER_SIZE + 26;
/// First byte of the record heap (end of the index header).
pub const HEAP_START: usize = FIL_HEADER_SIZE + 34;
/// Bytes of one slot in the slot directory.
pub const SLOT_SIZE: usize = 2;
/// Value of the last-insert hint when there is none.
pub(crate) const NO_LAST_INSERT: u16 = u16::MAX;

/// Bytes of an index page available to records and slots: the page minus the file header, the
/// index header and the trailer.
pub const fn index_capacity(page_size: PageSize) -> usize {
    page_size.bytes() - HEAP_START - FIL_TRAILER_SIZE
}

/// The longest key an index page accepts: `page_size / 8` bytes (2048 at 16 KiB, 512 at 4 KiB).
pub const fn max_key_len(page_size: PageSize) -> usize {
    page_size.bytes() / 8
}

/// The largest record an index page accepts, in bytes *including its 2-byte slot*: a quarter of
/// [`index_capacity`] (4076 bytes at 16 KiB, 1004 at 4 KiB), so that any four records fit in an
/// empty page and a split always leaves room for the record being inserted.
///
/// A leaf record whose inline form is larger must store its value off-page (see
/// [`max_inline_value_len`]); a key of up to [`max_key_len`] bytes always fits as an overflow
/// record with an empty prefix, or as a child pointer.
pub const fn max_record_size(page_size: PageSize) -> usize {
    index_capacity(page_size) / 4
}

/// The longest value that can be stored inline with a key of `key_len` bytes (0 if even an
/// empty value does not fit). Longer values go to an overflow chain.
pub const fn max_inline_value_len(page_size: PageSize, key_len: usize) -> usize {
    max_record_size(page_size).saturating_sub(SLOT_SIZE + INLINE_HEADER_SIZE + key_len)
}

/// The longest inline prefix an overflow record with a key of `key_len` bytes can keep.
pub const fn max_overflow_prefix_len(page_size: PageSize, key_len: usize) -> usize {
    max_record_size(page_size).saturating_sub(SLOT_SIZE + OVERFLOW_HEADER_SIZE + key_len)
}

/// Bytes a record costs in an index page, including its slot.
pub const fn record_size(record: &Record<'_>) -> usize {
    record.encoded_len() + SLOT_SIZE
}

/// Heap words (64 bytes of heap each) that [`IndexPage::open`] tracks on the stack: pages up to
/// 16 KiB; larger pages use a vector.
const SMALL_HEAP_WORDS: usize = 256;

/// Sets the bits of bytes `start..stop` in `covered` (bit `b % 64` of word `b / 64` for byte
/// `b`); false if one of them was set already or the range is outside `covered` (the range is
/// marked regardless: the caller gives up on the page).
#[inline]
fn mark_covered(covered: &mut [u64], start: usize, stop: usize) -> bool {
    if stop <= start {
        return true;
    }
    let (first, last) = (start / 64, (stop - 1) / 64);
    let head = !0u64 << (start % 64);
    let tail = !0u64 >> (63 - (stop - 1) % 64);
    if first == last {
        let Some(w) = covered.get_mut(first) else {
            return false;
        };
        let clash = *w & head & tail;
        *w |= head & tail;
        return clash == 0;
    }
    let Some((w_first, rest)) = covered
        .get_mut(first..=last)
        .and_then(|words| words.split_first_mut())
    else {
        return false;
    };
    let Some((w_last, middle)) = rest.split_last_mut() else {
        return false;
    };
    let mut clash = (*w_first & head) | (*w_last & tail);
    *w_first |= head;
    *w_last |= tail;
    for w in middle {
        clash |= *w;
        *w = !0;
    }
    clash == 0
}

/// A validated view of an index page held in `B` (`&[u8]`, `&mut [u8]`, `Vec<u8>`, a pool frame...).
///
/// Obtained with [`open`](Self::open) (full validation, for pages read from disk),
/// [`init`](Self::init) (a new empty page) or [`open_trusted`](Self::open_trusted). Reading
/// methods are available for `B: AsRef<[u8]>`, mutating ones for `B: AsRef<[u8]> + AsMut<[u8]>`.
#[derive(Clone, Debug)]
pub struct IndexPage<B> {
    buf: B,
    page_size: PageSize,
}

impl<B: AsRef<[u8]>> IndexPage<B> {
    /// Opens an index page after validating its whole structure: size and page type, header
    /// bounds, every slot and record in bounds and well-formed, records not overlapping, byte
    /// accounting (`live + garbage == heap`), record kinds matching the level, keys within
    /// [`max_key_len`] and strictly increasing. Never panics, whatever the bytes.
    ///
    /// Cost is linear in the page size. Does not verify the checksum (see
    /// [`verify_page`](crate::verify_page)).
    pub fn open(buf: B, page_size: PageSize) -> Result<Self, PageError> {
        let page = Self::open_trusted(buf, page_size)?;
        page.validate()?;
        Ok(page)
    }

    /// Opens an index page checking only its size, page type and header bounds (O(1)).
    ///
    /// Use it for a page that passed [`open`](Self::open) when it was read and has been changed
    /// only through this API since. On a page that would not pass `open`, no method panics
    /// (except on out-of-range indexes, as documented), but results are unspecified.
    pub fn open_trusted(buf: B, page_size: PageSize) -> Result<Self, PageError> {
        check_type_only(buf.as_ref(), page_size, PageType::Index)?;
        let page = Self { buf, page_size };
        let heap_top = page.heap_top();
        if heap_top < HEAP_START {
            return Err(PageError::corrupt(
                page.page_id(),
                format!("heap top {heap_top} inside the header"),
            ));
        }
        let dir_start = (page_size.bytes() - FIL_TRAILER_SIZE).checked_sub(SLOT_SIZE * page.len());
        if dir_start.is_none_or(|d| d < heap_top) {
            return Err(PageError::corrupt(
                page.page_id(),
                format!("{} slots overlap the heap ending at {heap_top}", page.len()),
            ));
        }
        if page.garbage() > heap_top - HEAP_START {
            return Err(PageError::corrupt(
                page.page_id(),
                format!("garbage {} larger than the heap", page.garbage()),
            ));
        }
        Ok(page)
    }

    fn validate(&self) -> Result<(), PageError> {
        let id = self.page_id();
        let bad = |what: String| Err(PageError::corrupt(id, what));
        let b = self.buf.as_ref();
        if u16_at(b, OFF_FLAGS) != Some(0) || u64_at(b, OFF_MAX_TRX_ID) != Some(0) {
            return bad("reserved index header field is not zero".into());
        }
        if u8_at(b, OFF_DIRECTION).is_none_or(|d| d > 2) {
            return bad("invalid insert direction".into());
        }
        let heap_top = self.heap_top();
        let max_key = max_key_len(self.page_size);
        let max_rec = max_record_size(self.page_size);
        // Which heap bytes the records cover, a bit a byte: a record that overlaps another
        // finds its bits already set. Linear and without an allocation up to 16 KiB pages,
        // where sorting the records' extents was neither (with the key heads below: 30 % fewer
        // instructions to open a full 16 KiB leaf, EXPERIMENTS.md §16).
        let mut small = [0u64; SMALL_HEAP_WORDS];
        let mut large = Vec::new();
        let words = heap_top.div_ceil(64);
        let covered: &mut [u64] = if words <= SMALL_HEAP_WORDS {
            small.get_mut(..words).unwrap_or_default()
        } else {
            large.resize(words, 0);
            &mut large
        };
        let mut live = 0usize;
        let mut prev: Option<(u64, &[u8])> = None;
        for i in 0..self.len() {
            let off = self.slot(i);
            if off < HEAP_START || off >= heap_top {
                return bad(format!("slot {i} points to {off}, outside the heap"));
            }
            let (rec, len) = match Record::decode(b, off, heap_top) {
                Ok(r) => r,
                Err(what) => return bad(format!("record {i} at {off}: {what}")),
            };
            if rec.is_child() != (self.level() > 0) {
                return bad(format!(
                    "record {i} kind does not match level {}",
                    self.level()
                ));
            }
            if rec.key.len() > max_key {
                return bad(format!(
                    "record {i} key of {} bytes > {max_key}",
                    rec.key.len()
                ));
            }
            if len + SLOT_SIZE > max_rec {
                return bad(format!(
                    "record {i} of {len} bytes exceeds the record limit"
                ));
            }
            // Heads first (a strictly smaller head is a smaller key, `key_head`), the bytes
            // only when the heads tie.
            let head = key_head(rec.key);
            if prev.is_some_and(|(h, k)| h > head || (h == head && k >= rec.key)) {
                return bad(format!("keys not strictly increasing at record {i}"));
            }
            prev = Some((head, rec.key));
            if !mark_covered(covered, off, off + len) {
                return bad(format!("record {i} at {off} overlaps another record"));
            }
            live += len;
        }
        if live + self.garbage() != heap_top - HEAP_START {
            return bad(format!(
                "live {live} + garbage {} bytes != heap of {} bytes",
                self.garbage(),
                heap_top - HEAP_START
            ));
        }
        Ok(())
    }

    /// The page size this page was opened with.
    pub fn page_size(&self) -> PageSize {
        self.page_size
    }

    /// The raw page bytes.
    pub fn as_bytes(&self) -> &[u8] {
        self.buf.as_ref()
    }

    /// Gives back the buffer.
    pub fn into_inner(self) -> B {
        self.buf
    }

    /// The decoded file header (infallible: the type was checked when opening).
    pub fn file_header(&self) -> FileHeader {
        FileHeader::read(self.as_bytes())
            .unwrap_or_else(|_| FileHeader::new(self.page_id(), PageType::Index))
    }

    /// The page id claimed by the file header.
    pub fn page_id(&self) -> PageId {
        claimed_page_id(self.as_bytes())
    }

    /// Previous page on the same level, or `FIL_NULL`.
    pub fn prev(&self) -> PageNo {
        self.file_header().prev
    }

    /// Next page on the same level, or `FIL_NULL`.
    pub fn next(&self) -> PageNo {
        self.file_header().next
    }

    /// The page LSN.
    pub fn page_lsn(&self) -> Lsn {
        self.file_header().lsn
    }

    fn hdr_u16(&self, off: usize) -> u16 {
        u16_at(self.as_bytes(), off).unwrap_or(0)
    }

    /// The level in the tree: 0 for a leaf, parents one more than their children.
    pub fn level(&self) -> u16 {
        self.hdr_u16(OFF_LEVEL)
    }

    /// Whether this is a leaf page (level 0).
    pub fn is_leaf(&self) -> bool {
        self.level() == 0
    }

    /// The id of the index (B-tree) this page belongs to.
    pub fn index_id(&self) -> u64 {
        u64_at(self.as_bytes(), OFF_INDEX_ID).unwrap_or(0)
    }

    /// Number of records.
    pub fn len(&self) -> usize {
        usize::from(self.hdr_u16(OFF_N_RECS))
    }

    /// Whether the page has no records.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Offset of the first byte after the record heap (`72 <= heap_top <= dir_start`).
    pub fn heap_top(&self) -> usize {
        usize::from(self.hdr_u16(OFF_HEAP_TOP))
    }

    /// Bytes of the heap held by removed or shrunk records, reclaimable by [`compact`](Self::compact).
    pub fn garbage(&self) -> usize {
        usize::from(self.hdr_u16(OFF_GARBAGE))
    }

    /// Offset of the slot directory's lowest byte.
    pub(crate) fn dir_start(&self) -> usize {
        (self.page_size.bytes() - FIL_TRAILER_SIZE).saturating_sub(SLOT_SIZE * self.len())
    }

    /// Offset of slot `i` itself.
    pub(crate) fn slot_pos(&self, i: usize) -> usize {
        (self.page_size.bytes() - FIL_TRAILER_SIZE).saturating_sub(SLOT_SIZE * (i + 1))
    }

    /// The record offset stored in slot `i` (the offset of the `i`-th smallest key's record).
    /// Reads the slot directory without a bounds check against [`len`](Self::len): `i` must be
    /// below it for the answer to mean anything.
    pub fn slot(&self, i: usize) -> usize {
        usize::from(self.hdr_u16(self.slot_pos(i)))
    }

    /// Asks the CPU to start loading record `i` (a hint for a scan about to read it; nothing
    /// happens for `i` out of range).
    pub fn prefetch_record(&self, i: usize) {
        if i < self.len() {
            crate::prefetch::prefetch(self.as_bytes(), self.slot(i));
        }
    }

    /// The bytes between the heap and the slot directory (`heap_top..dir_start`): free, and
    /// all zeros on a page built from zeros by inserts alone (nothing writes between the
    /// heap's top and the directory), which a log may rely on to skip them. Not zero in
    /// general: compaction and removals do not clear what they free.
    pub fn free_gap(&self) -> std::ops::Range<usize> {
        self.heap_top()..self.dir_start().max(self.heap_top())
    }

    /// Contiguous free bytes between the heap and the slot directory.
    pub fn contiguous_free(&self) -> usize {
        self.dir_start().saturating_sub(self.heap_top())
    }

    /// Bytes available for new records and their slots, counting garbage that compaction
    /// reclaims. A record fits iff [`record_size`] is at most this (and within the limits).
    pub fn free_space(&self) -> usize {
        self.contiguous_free() + self.garbage()
    }

    /// Bytes used by live records and their slots.
    pub fn used_space(&self) -> usize {
        index_capacity(self.page_size).saturating_sub(self.free_space())
    }

    /// `used_space / index_capacity`, in `0.0..=1.0`.
    pub fn fill_factor(&self) -> f64 {
        self.used_space() as f64 / index_capacity(self.page_size) as f64
    }

    /// Decodes the record at heap offset `off`, with its encoded length. Fails, naming the
    /// page, when the bytes there do not decode (only possible on a page opened with
    /// [`open_trusted`](Self::open_trusted) that would not pass [`open`](Self::open)).
    #[expect(
        clippy::inline_always,
        reason = "on the scan and point-read paths; see `Record::decode`"
    )]
    #[inline(always)]
    pub(crate) fn record_at(&self, off: usize) -> Result<(Record<'_>, usize), PageError> {
        Record::decode(self.as_bytes(), off, self.heap_top()).map_err(|what| {
            PageError::corrupt(self.page_id(), format!("record at offset {off}: {what}"))
        })
    }

    /// Record `i` in key order. Fails with [`PageError::Corrupt`] naming the page when
    /// `i >= len()` or the record does not decode; never an empty stand-in.
    #[expect(
        clippy::inline_always,
        reason = "on the scan and point-read paths; see `Record::decode`"
    )]
    #[inline(always)]
    pub fn record(&self, i: usize) -> Result<Record<'_>, PageError> {
        if i >= self.len() {
            return Err(PageError::corrupt(
                self.page_id(),
                format!("record {i} requested of {}", self.len()),
            ));
        }
        self.record_at(self.slot(i)).map(|(record, _)| record)
    }

    /// Where the page holds record `i`'s encoding (the bytes [`Record::encode_to`] writes);
    /// fails as [`record`](Self::record) does.
    pub fn encoded_record_range(&self, i: usize) -> Result<std::ops::Range<usize>, PageError> {
        if i >= self.len() {
            return Err(PageError::corrupt(
                self.page_id(),
                format!("record {i} requested of {}", self.len()),
            ));
        }
        let off = self.slot(i);
        let (_, len) = self.record_at(off)?;
        Ok(off..off + len)
    }

    /// Where the page holds record `i`'s encoding, when the caller knows its length (`len`,
    /// the [`Record::encoded_len`] of a record it just wrote there):
    /// [`encoded_record_range`](Self::encoded_record_range) without decoding the record. Fails
    /// where `i` is out of range or the bytes would reach past the heap; it cannot tell a wrong
    /// `len` that stays inside the heap.
    pub fn encoded_record_range_of_len(
        &self,
        i: usize,
        len: usize,
    ) -> Result<std::ops::Range<usize>, PageError> {
        if i >= self.len() {
            return Err(PageError::corrupt(
                self.page_id(),
                format!("record {i} requested of {}", self.len()),
            ));
        }
        let off = self.slot(i);
        match off.checked_add(len) {
            Some(end) if end <= self.heap_top() => Ok(off..end),
            _ => Err(PageError::corrupt(
                self.page_id(),
                format!("record {i} of {len} bytes at offset {off} reaches past the heap"),
            )),
        }
    }

    /// The key of record `i`; fails as [`record`](Self::record) does.
    pub fn key(&self, i: usize) -> Result<&[u8], PageError> {
        self.record(i).map(|r| r.key)
    }

    /// Bytes record `i` occupies, including its slot; fails as [`record`](Self::record) does.
    pub fn record_size_at(&self, i: usize) -> Result<usize, PageError> {
        self.record(i).map(|r| record_size(&r))
    }

    /// Record `i` for the mutation and split paths, which keep infallible signatures: they run
    /// on pages that passed [`open`](Self::open) when read and were changed only through this
    /// API. On a page that breaks that contract this gives an empty record — results are then
    /// unspecified, as documented on [`open_trusted`](Self::open_trusted), but nothing panics.
    pub(crate) fn trusted_record(&self, i: usize) -> Record<'_> {
        self.record(i).unwrap_or(Record::inline(&[], &[]))
    }

    /// Bytes of record `i` on the split paths (see [`trusted_record`](Self::trusted_record)).
    pub(crate) fn trusted_size_at(&self, i: usize) -> usize {
        record_size(&self.trusted_record(i))
    }

    /// For an internal node: the index of the child whose subtree may hold `key`, i.e. the last
    /// record whose key is `<= key` (0 if `key` is below every key: the first record's key acts
    /// as minus infinity). `None` on an empty page.
    pub fn child_index_for(&self, key: &[u8]) -> Option<usize> {
        if self.is_empty() {
            return None;
        }
        Some(match self.search(key) {
            Ok(i) => i,
            Err(i) => i.saturating_sub(1),
        })
    }

    /// The records in key order; an undecodable one is an error naming the page.
    pub fn iter(
        &self,
    ) -> impl DoubleEndedIterator<Item = Result<Record<'_>, PageError>> + ExactSizeIterator + '_
    {
        (0..self.len()).map(move |i| self.record(i))
    }
}
