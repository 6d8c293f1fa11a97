//! Undo log pages (FORMATS.md §13): the records a transaction writes before it changes a row,
//! so that the change can be rolled back and older readers can rebuild the row as it was.
//!
//! ```text
//! 0        38                                   56            96 (header page only)
//! | FIL hdr | free | last | prev | next | first | rsv | log header | records ... | free ... | trailer |
//! ```
//! A transaction's undo log is a chain of undo pages (`prev` / `next`); its first page, the
//! *header page*, also holds the log header (transaction id, commit number, state, where to
//! append, the next log in the history list). Records are appended back to back from the data
//! start; each begins with the offset of the record before it in the page, so a rollback walks
//! them backwards, and purge walks them forwards by their lengths.
//!
//! A record: `{ prev u16 | type u8 | space u32 | undo_no u32 | len u16 | payload }`, where the
//! payload of an `Insert` is the key, and of an `Update` or `DeleteMark` the whole previous
//! leaf record, encoded as in an index page (FORMATS.md §5.3: its transaction fields, key and
//! value or overflow reference).

use crate::bytes::{
    put, put_u16, put_u32, put_u64, put_u8, slice_at, u16_at, u32_at, u64_at, u8_at,
};
use crate::error::PageError;
use crate::header::{check_type, PageType, FIL_HEADER_SIZE, FIL_TRAILER_SIZE};
use crate::ids::{PageId, PageNo, PageSize, FIL_NULL};

/// Offset of the first free byte of the page (u16): records end here.
pub const OFF_UNDO_FREE: usize = FIL_HEADER_SIZE;
/// Offset of the last record's offset (u16, 0 = the page holds no record).
pub const OFF_UNDO_LAST: usize = FIL_HEADER_SIZE + 2;
/// Offset of the previous page of the log (u32, `FIL_NULL` on the header page).
pub const OFF_UNDO_PREV: usize = FIL_HEADER_SIZE + 4;
/// Offset of the next page of the log (u32, `FIL_NULL` on the last page).
pub const OFF_UNDO_NEXT: usize = FIL_HEADER_SIZE + 8;
/// Offset of the log's header page number (u32; the page itself on the header page).
pub const OFF_UNDO_FIRST: usize = FIL_HEADER_SIZE + 12;
/// First byte after the page header (2 reserved bytes, 0, precede it).
pub const UNDO_PAGE_DATA: usize = FIL_HEADER_SIZE + 18;

/// Offset (on the header page) of the transaction id (u64).
pub const OFF_LOG_TRX_ID: usize = UNDO_PAGE_DATA;
/// Offset of the commit number (u64; 0 while the transaction is active).
pub const OFF_LOG_TRX_NO: usize = UNDO_PAGE_DATA + 8;
/// Offset of the log state (u8, [`UndoLogState`]).
pub const OFF_LOG_STATE: usize = UNDO_PAGE_DATA + 16;
/// Offset of the page appends go to (u32).
pub const OFF_LOG_LAST_PAGE: usize = UNDO_PAGE_DATA + 18;
/// Offset of the next log in the history list (u32, `FIL_NULL` = none).
pub const OFF_LOG_HISTORY_NEXT: usize = UNDO_PAGE_DATA + 22;
/// Offset of the number of records in the log (u32).
pub const OFF_LOG_RECORDS: usize = UNDO_PAGE_DATA + 26;
/// Offset (on a cached header page) of the cache depth (u32): cached pages from this one to
/// the end of the cache list, this one included; 0 on any other page.
pub const OFF_LOG_CACHE_DEPTH: usize = UNDO_PAGE_DATA + 30;
/// First record byte of a header page (the log header's reserved tail, 0, precedes it).
pub const UNDO_LOG_DATA: usize = UNDO_PAGE_DATA + 40;

/// Bytes of a record's fixed header.
pub const UNDO_RECORD_HEADER: usize = 13;

/// The state of an undo log, in its header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UndoLogState {
    /// Its transaction has not committed: recovery rolls it back.
    Active,
    /// Its transaction committed; the log waits in the history list for purge.
    Committed,
    /// Purged: the header page belongs to no log and waits in the transaction system page's
    /// cache of header pages for the next transaction to start its log in (linked through
    /// `history_next`), so that starting a log allocates nothing.
    Cached,
}

impl UndoLogState {
    const fn to_u8(self) -> u8 {
        match self {
            Self::Active => 1,
            Self::Committed => 2,
            Self::Cached => 3,
        }
    }

    const fn from_u8(v: u8) -> Option<Self> {
        match v {
            1 => Some(Self::Active),
            2 => Some(Self::Committed),
            3 => Some(Self::Cached),
            _ => None,
        }
    }
}

/// What an undo record undoes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UndoKind {
    /// The row was inserted where no record was: undoing removes it. Payload: the key.
    Insert,
    /// A record was replaced (a live one updated, or a delete-marked one revived). Payload:
    /// the previous record.
    Update,
    /// A record was delete-marked. Payload: the previous record.
    DeleteMark,
}

impl UndoKind {
    const fn to_u8(self) -> u8 {
        match self {
            Self::Insert => 1,
            Self::Update => 2,
            Self::DeleteMark => 3,
        }
    }

    const fn from_u8(v: u8) -> Option<Self> {
        match v {
            1 => Some(Self::Insert),
            2 => Some(Self::Update),
            3 => Some(Self::DeleteMark),
            _ => None,
        }
    }
}

/// One undo record, borrowed from a page or from the caller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UndoRecord<'a> {
    /// What it undoes.
    pub kind: UndoKind,
    /// The tablespace of the table whose row changed.
    pub space: u32,
    /// Its number in the transaction (0, 1, 2 … in the order written).
    pub undo_no: u32,
    /// The key (`Insert`) or the previous leaf record's encoding (`Update`, `DeleteMark`).
    pub payload: &'a [u8],
}

impl UndoRecord<'_> {
    /// Bytes the record takes in a page.
    pub const fn encoded_len(&self) -> usize {
        UNDO_RECORD_HEADER + self.payload.len()
    }
}

/// The longest payload a record may carry in pages of `page_size`: what an empty non-header
/// page holds after its header, so that any record fits a fresh page. A leaf record (at most
/// a quarter page, FORMATS.md §5.3) always fits.
pub const fn max_payload_len(page_size: PageSize) -> usize {
    page_size.bytes() - UNDO_LOG_DATA - FIL_TRAILER_SIZE - UNDO_RECORD_HEADER
}

/// The log header of an undo log's first page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UndoLogHeader {
    /// The transaction the log belongs to.
    pub trx_id: u64,
    /// Its commit number (0 while it is active).
    pub trx_no: u64,
    /// Active or committed.
    pub state: UndoLogState,
    /// The page appends go to.
    pub last_page: PageNo,
    /// The next (newer) log in the history list, `FIL_NULL` = none.
    pub history_next: PageNo,
    /// Records in the log.
    pub records: u32,
    /// On a cached header page, the cached pages from it to the end of the cache list (it
    /// included); 0 otherwise.
    pub cache_depth: u32,
}

/// An undo page over a buffer `B`: validated once by [`open`](Self::open), after which every
/// accessor is infallible where it can be and bounds-checked where a roll pointer from elsewhere
/// names an offset.
#[derive(Debug)]
pub struct UndoPage<B> {
    buf: B,
    page_size: PageSize,
    id: PageId,
}

fn corrupt(page: PageId, what: impl Into<String>) -> PageError {
    PageError::Corrupt {
        page,
        what: what.into(),
    }
}

impl<B: AsRef<[u8]>> UndoPage<B> {
    /// Opens an undo page, checking its header, its log header if it has one, and the chain
    /// of its records (each record's length within the page, each `prev` pointing at the
    /// record before it, `last` at the final one). Never panics.
    pub fn open(buf: B, page_size: PageSize) -> Result<Self, PageError> {
        let page = Self::open_trusted(buf, page_size)?;
        page.validate_records()?;
        Ok(page)
    }

    /// Opens an undo page checking only its type and fixed fields (O(1)): the free offset
    /// within the page, the reserved bytes, a header page's state and previous page.
    ///
    /// Use it for a page that passed [`open`](Self::open) when it was read and has been
    /// changed only through this API since (the buffer pool validates undo pages as it reads
    /// them). On a page whose records would not pass `open`, no method panics, but what the
    /// record accessors return is unspecified.
    pub fn open_trusted(buf: B, page_size: PageSize) -> Result<Self, PageError> {
        let header = check_type(buf.as_ref(), page_size, PageType::Undo)?;
        let page = Self {
            buf,
            page_size,
            id: header.page_id(),
        };
        page.validate_fields()?;
        Ok(page)
    }

    fn validate_fields(&self) -> Result<(), PageError> {
        let b = self.buf.as_ref();
        let id = self.id;
        let end = self.page_size.bytes() - FIL_TRAILER_SIZE;
        let free = usize::from(self.free());
        let start = self.data_start();
        if !(start..=end).contains(&free) {
            return Err(corrupt(
                id,
                format!("free offset {free} outside {start}..={end}"),
            ));
        }
        if u16_at(b, UNDO_PAGE_DATA - 2) != Some(0) {
            return Err(corrupt(id, "reserved undo page bytes are not zero"));
        }
        if self.is_header_page() {
            let state = u8_at(b, OFF_LOG_STATE).unwrap_or(0);
            if UndoLogState::from_u8(state).is_none() {
                return Err(corrupt(
                    id,
                    format!("undo log state {state} is not 1, 2 or 3"),
                ));
            }
            if self.prev_page() != FIL_NULL {
                return Err(corrupt(id, "an undo log's header page has a previous page"));
            }
        }
        Ok(())
    }

    fn validate_records(&self) -> Result<(), PageError> {
        let b = self.buf.as_ref();
        let id = self.id;
        let free = usize::from(self.free());
        let start = self.data_start();
        let (mut at, mut prev) = (start, 0usize);
        while at < free {
            let record = self.decode_at(at, free)?;
            let stored_prev = usize::from(u16_at(b, at).unwrap_or(0));
            if stored_prev != prev {
                return Err(corrupt(
                    id,
                    format!(
                        "undo record at {at} says the previous is at {stored_prev}, not {prev}"
                    ),
                ));
            }
            prev = at;
            at += record.encoded_len();
        }
        if at != free {
            return Err(corrupt(
                id,
                "the last undo record runs past the free offset",
            ));
        }
        if usize::from(self.last_record()) != prev {
            return Err(corrupt(
                id,
                format!(
                    "last record offset {} is not the last record {prev}",
                    self.last_record()
                ),
            ));
        }
        Ok(())
    }

    fn decode_at(&self, at: usize, limit: usize) -> Result<UndoRecord<'_>, PageError> {
        let b = self.buf.as_ref();
        let id = self.id;
        let oob = || corrupt(id, format!("undo record at {at} runs past {limit}"));
        let heap = b.get(..limit).ok_or_else(oob)?;
        let kind_byte = u8_at(heap, at + 2).ok_or_else(oob)?;
        let kind = UndoKind::from_u8(kind_byte)
            .ok_or_else(|| corrupt(id, format!("undo record at {at} has kind {kind_byte}")))?;
        let space = u32_at(heap, at + 3).ok_or_else(oob)?;
        let undo_no = u32_at(heap, at + 7).ok_or_else(oob)?;
        let len = usize::from(u16_at(heap, at + 11).ok_or_else(oob)?);
        let payload = slice_at(heap, at + UNDO_RECORD_HEADER, len).ok_or_else(oob)?;
        Ok(UndoRecord {
            kind,
            space,
            undo_no,
            payload,
        })
    }

    /// The page's id (from its header).
    pub fn page_id(&self) -> PageId {
        self.id
    }

    /// The first free byte: the records end here.
    pub fn free(&self) -> u16 {
        u16_at(self.buf.as_ref(), OFF_UNDO_FREE).unwrap_or(0)
    }

    /// The offset of the page's last record, 0 if it has none.
    pub fn last_record(&self) -> u16 {
        u16_at(self.buf.as_ref(), OFF_UNDO_LAST).unwrap_or(0)
    }

    /// The previous page of the log (`FIL_NULL` on the header page).
    pub fn prev_page(&self) -> PageNo {
        u32_at(self.buf.as_ref(), OFF_UNDO_PREV).unwrap_or(FIL_NULL)
    }

    /// The next page of the log (`FIL_NULL` on the last page).
    pub fn next_page(&self) -> PageNo {
        u32_at(self.buf.as_ref(), OFF_UNDO_NEXT).unwrap_or(FIL_NULL)
    }

    /// The log's header page.
    pub fn first_page(&self) -> PageNo {
        u32_at(self.buf.as_ref(), OFF_UNDO_FIRST).unwrap_or(FIL_NULL)
    }

    /// Whether this is the log's header page.
    pub fn is_header_page(&self) -> bool {
        self.first_page() == self.id.page_no
    }

    /// Where records start on this page.
    pub fn data_start(&self) -> usize {
        if self.is_header_page() {
            UNDO_LOG_DATA
        } else {
            UNDO_PAGE_DATA
        }
    }

    /// The log header, on a header page.
    pub fn log_header(&self) -> Option<UndoLogHeader> {
        if !self.is_header_page() {
            return None;
        }
        let b = self.buf.as_ref();
        Some(UndoLogHeader {
            trx_id: u64_at(b, OFF_LOG_TRX_ID)?,
            trx_no: u64_at(b, OFF_LOG_TRX_NO)?,
            state: UndoLogState::from_u8(u8_at(b, OFF_LOG_STATE)?)?,
            last_page: u32_at(b, OFF_LOG_LAST_PAGE)?,
            history_next: u32_at(b, OFF_LOG_HISTORY_NEXT)?,
            records: u32_at(b, OFF_LOG_RECORDS)?,
            cache_depth: u32_at(b, OFF_LOG_CACHE_DEPTH)?,
        })
    }

    /// The record at `offset` (a roll pointer's offset: checked against the page's records'
    /// area, so a damaged pointer is an error, never a panic).
    pub fn record_at(&self, offset: u16) -> Result<UndoRecord<'_>, PageError> {
        let at = usize::from(offset);
        let free = usize::from(self.free());
        if at < self.data_start() || at >= free {
            return Err(corrupt(
                self.id,
                format!(
                    "no undo record at {at}: records are in {}..{free}",
                    self.data_start()
                ),
            ));
        }
        self.decode_at(at, free)
    }

    /// The offset of the record before the one at `offset` in this page, if any.
    pub fn prev_record(&self, offset: u16) -> Option<u16> {
        let prev = u16_at(self.buf.as_ref(), usize::from(offset))?;
        (prev != 0).then_some(prev)
    }

    /// The page's records in the order written, with their offsets.
    pub fn records(&self) -> impl Iterator<Item = (u16, UndoRecord<'_>)> + '_ {
        let free = usize::from(self.free());
        let mut at = self.data_start();
        std::iter::from_fn(move || {
            if at >= free {
                return None;
            }
            let record = self.decode_at(at, free).ok()?;
            let offset = at as u16;
            at += record.encoded_len();
            Some((offset, record))
        })
    }

    /// Whether `record` fits in the page's free space.
    pub fn fits(&self, record: &UndoRecord<'_>) -> bool {
        usize::from(self.free()) + record.encoded_len() <= self.page_size.bytes() - FIL_TRAILER_SIZE
    }

    /// The page's bytes.
    pub fn as_bytes(&self) -> &[u8] {
        self.buf.as_ref()
    }
}

impl<B: AsRef<[u8]> + AsMut<[u8]>> UndoPage<B> {
    /// Formats `buf` as an empty undo page `id` of the log whose header page is `first`, after
    /// page `prev` of that log (`FIL_NULL` for the header page itself). The body is zeroed.
    pub fn init(
        mut buf: B,
        page_size: PageSize,
        id: PageId,
        first: PageNo,
        prev: PageNo,
    ) -> Result<Self, PageError> {
        let b = buf.as_mut();
        if b.len() != page_size.bytes() {
            return Err(PageError::WrongSize {
                expected: page_size.bytes(),
                found: b.len(),
            });
        }
        b.fill(0);
        crate::header::FileHeader::new(id, PageType::Undo).write(b);
        let start = if first == id.page_no {
            UNDO_LOG_DATA
        } else {
            UNDO_PAGE_DATA
        };
        put_u16(b, OFF_UNDO_FREE, start as u16);
        put_u16(b, OFF_UNDO_LAST, 0);
        put_u32(b, OFF_UNDO_PREV, prev);
        put_u32(b, OFF_UNDO_NEXT, FIL_NULL);
        put_u32(b, OFF_UNDO_FIRST, first);
        Ok(Self { buf, page_size, id })
    }

    /// Writes the log header of a header page: an active log of `trx_id`, appending to this
    /// page, not in the history list, no records yet.
    pub fn init_log_header(&mut self, trx_id: u64) {
        let page_no = self.id.page_no;
        let b = self.buf.as_mut();
        put_u64(b, OFF_LOG_TRX_ID, trx_id);
        put_u64(b, OFF_LOG_TRX_NO, 0);
        put_u8(b, OFF_LOG_STATE, UndoLogState::Active.to_u8());
        put_u32(b, OFF_LOG_LAST_PAGE, page_no);
        put_u32(b, OFF_LOG_HISTORY_NEXT, FIL_NULL);
        put_u32(b, OFF_LOG_RECORDS, 0);
    }

    /// Makes a cached header page the header page of a new active log of `trx_id`: no records,
    /// no other page, every field as [`init`](Self::init) and
    /// [`init_log_header`](Self::init_log_header) leave them. Writes only the page fields and
    /// the log header (offsets 38 to 96); the old records' bytes stay, past `free`, unread.
    pub fn reuse_as_header(&mut self, trx_id: u64) {
        let page_no = self.id.page_no;
        let b = self.buf.as_mut();
        put_u16(b, OFF_UNDO_FREE, UNDO_LOG_DATA as u16);
        put_u16(b, OFF_UNDO_LAST, 0);
        put_u32(b, OFF_UNDO_PREV, FIL_NULL);
        put_u32(b, OFF_UNDO_NEXT, FIL_NULL);
        put_u32(b, OFF_UNDO_FIRST, page_no);
        put_u32(b, OFF_LOG_CACHE_DEPTH, 0);
        self.init_log_header(trx_id);
    }

    /// Turns a purged log's header page into a cached one, `depth` deep in the cache list,
    /// before `next` (`FIL_NULL` = the end of the list). Its records stay until reuse; the
    /// log's other pages (freed by the caller) are no longer linked.
    pub fn set_cached(&mut self, next: PageNo, depth: u32) {
        let page_no = self.id.page_no;
        let b = self.buf.as_mut();
        put_u32(b, OFF_UNDO_NEXT, FIL_NULL);
        put_u32(b, OFF_LOG_LAST_PAGE, page_no);
        put_u8(b, OFF_LOG_STATE, UndoLogState::Cached.to_u8());
        put_u32(b, OFF_LOG_HISTORY_NEXT, next);
        put_u32(b, OFF_LOG_CACHE_DEPTH, depth);
    }

    /// Marks the log committed with commit number `trx_no` (header page).
    pub fn set_committed(&mut self, trx_no: u64) {
        let b = self.buf.as_mut();
        put_u64(b, OFF_LOG_TRX_NO, trx_no);
        put_u8(b, OFF_LOG_STATE, UndoLogState::Committed.to_u8());
    }

    /// Sets the next log of the history list (header page).
    pub fn set_history_next(&mut self, next: PageNo) {
        put_u32(self.buf.as_mut(), OFF_LOG_HISTORY_NEXT, next);
    }

    /// Sets the page appends go to (header page).
    pub fn set_last_page(&mut self, page: PageNo) {
        put_u32(self.buf.as_mut(), OFF_LOG_LAST_PAGE, page);
    }

    /// Sets the record count of the log (header page).
    pub fn set_record_count(&mut self, records: u32) {
        put_u32(self.buf.as_mut(), OFF_LOG_RECORDS, records);
    }

    /// Links the next page of the log.
    pub fn set_next_page(&mut self, next: PageNo) {
        put_u32(self.buf.as_mut(), OFF_UNDO_NEXT, next);
    }

    /// Appends `record`; returns its offset (what a roll pointer names), or
    /// [`PageError::PageFull`] with the page unchanged.
    pub fn append(&mut self, record: &UndoRecord<'_>) -> Result<u16, PageError> {
        let limit = self.page_size.bytes() - FIL_TRAILER_SIZE;
        let at = usize::from(self.free());
        let len = record.encoded_len();
        if at + len > limit || record.payload.len() > usize::from(u16::MAX) {
            return Err(PageError::PageFull {
                needed: len,
                available: limit.saturating_sub(at),
            });
        }
        let prev = self.last_record();
        let b = self.buf.as_mut();
        put_u16(b, at, prev);
        put_u8(b, at + 2, record.kind.to_u8());
        put_u32(b, at + 3, record.space);
        put_u32(b, at + 7, record.undo_no);
        put_u16(b, at + 11, record.payload.len() as u16);
        put(b, at + UNDO_RECORD_HEADER, record.payload);
        put_u16(b, OFF_UNDO_FREE, (at + len) as u16);
        put_u16(b, OFF_UNDO_LAST, at as u16);
        Ok(at as u16)
    }

    /// The page's bytes, mutable.
    pub fn as_bytes_mut(&mut self) -> &mut [u8] {
        self.buf.as_mut()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PS: PageSize = PageSize::K4;

    fn header_page() -> UndoPage<Vec<u8>> {
        let mut page =
            UndoPage::init(vec![0u8; PS.bytes()], PS, PageId::new(9, 3), 3, FIL_NULL).unwrap();
        page.init_log_header(77);
        page
    }

    #[test]
    fn records_append_read_back_and_walk_both_ways() {
        let mut page = header_page();
        let recs = [
            UndoRecord {
                kind: UndoKind::Insert,
                space: 5,
                undo_no: 0,
                payload: b"key-1",
            },
            UndoRecord {
                kind: UndoKind::Update,
                space: 5,
                undo_no: 1,
                payload: &[7u8; 300],
            },
            UndoRecord {
                kind: UndoKind::DeleteMark,
                space: 6,
                undo_no: 2,
                payload: b"",
            },
        ];
        let offsets: Vec<u16> = recs.iter().map(|r| page.append(r).unwrap()).collect();
        let [first, second, third] = offsets[..] else {
            panic!("three offsets");
        };
        assert_eq!(usize::from(first), UNDO_LOG_DATA);
        let page = UndoPage::open(page.as_bytes().to_vec(), PS).unwrap();
        let header = page.log_header().unwrap();
        assert_eq!((header.trx_id, header.state), (77, UndoLogState::Active));
        for (offset, rec) in offsets.iter().zip(&recs) {
            assert_eq!(page.record_at(*offset).unwrap(), *rec);
        }
        let forward: Vec<_> = page.records().map(|(o, _)| o).collect();
        assert_eq!(forward, offsets);
        assert_eq!(page.last_record(), third);
        assert_eq!(page.prev_record(third), Some(second));
        assert_eq!(page.prev_record(first), None);
    }

    #[test]
    fn a_full_page_refuses_a_record_unchanged_and_a_max_payload_fits_a_fresh_page() {
        // The longest payload fits a fresh header page exactly.
        let mut page = header_page();
        let payload = vec![1u8; max_payload_len(PS)];
        let big = UndoRecord {
            kind: UndoKind::Update,
            space: 1,
            undo_no: 0,
            payload: &payload,
        };
        page.append(&big).unwrap();
        assert_eq!(usize::from(page.free()), PS.bytes() - FIL_TRAILER_SIZE);
        let before = page.as_bytes().to_vec();
        let one = UndoRecord {
            payload: b"k",
            ..big
        };
        assert!(!page.fits(&one));
        assert!(matches!(page.append(&one), Err(PageError::PageFull { .. })));
        assert_eq!(page.as_bytes(), before.as_slice());
        UndoPage::open(before, PS).unwrap();
        // A later page of the log has no log header, so it holds more.
        let mut later = UndoPage::init(vec![0u8; PS.bytes()], PS, PageId::new(9, 4), 3, 3).unwrap();
        later.append(&big).unwrap();
        assert!(later.fits(&one));
    }

    #[test]
    fn damage_is_an_error_naming_the_page() {
        let mut page = header_page();
        let at = page
            .append(&UndoRecord {
                kind: UndoKind::Insert,
                space: 1,
                undo_no: 0,
                payload: b"abc",
            })
            .unwrap();
        let good = page.as_bytes().to_vec();
        let damaged = |f: &dyn Fn(&mut Vec<u8>)| {
            let mut b = good.clone();
            f(&mut b);
            UndoPage::open(b, PS).unwrap_err().to_string()
        };
        assert!(damaged(&|b| put_u16(b, OFF_UNDO_FREE, 4090)).contains("9:3"));
        assert!(damaged(&|b| put_u8(b, usize::from(at) + 2, 9)).contains("kind 9"));
        assert!(damaged(&|b| put_u16(b, usize::from(at) + 11, 60)).contains("runs past"));
        assert!(damaged(&|b| put_u8(b, OFF_LOG_STATE, 0)).contains("state"));
        assert!(damaged(&|b| put_u16(b, OFF_UNDO_LAST, 0)).contains("last record"));
        let page = UndoPage::open(good, PS).unwrap();
        assert!(page.record_at(2).is_err());
        assert!(page.record_at(4000).is_err());
    }
}
