//! [`PageError`]: why a page (or an operation on it) was rejected, and which page it was.

use crate::header::PageType;
use crate::ids::{PageId, PageNo, SpaceId};

/// Every way a page can be rejected by this crate.
///
/// Decoders return these instead of panicking, whatever the input bytes. Variants that concern a
/// stored page name it with a [`PageId`]; when the page was not asked for by id (for example
/// [`IndexPage::open`](crate::IndexPage::open)), the id is the one *claimed* by the page's own
/// file header, which may itself be garbage. Caller mistakes on the mutation API
/// (`PageFull`, `KeyTooLong`, `RecordTooLarge`, `OutOfRange`, `KeyOutOfOrder`, ...) never change
/// the page.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PageError {
    /// The buffer is not exactly one page long.
    #[error("page buffer is {found} bytes, expected {expected}")]
    WrongSize {
        /// The page size in bytes.
        expected: usize,
        /// The buffer length.
        found: usize,
    },
    /// Every byte of the page is zero: it was allocated (or the file extended) but never written.
    #[error("{page}: all-zero page (never written)")]
    AllZero {
        /// The page that was expected.
        page: PageId,
    },
    /// The trailer's format magic is not [`TRAILER_MAGIC`](crate::TRAILER_MAGIC): the page is
    /// garbage, from another format, or torn.
    #[error("{page}: trailer magic {found:#010x} is not a Barracuda page")]
    BadTrailerMagic {
        /// The page that was expected.
        page: PageId,
        /// The magic found in the trailer.
        found: u32,
    },
    /// The low 32 bits of the header's page LSN differ from the trailer's copy: a torn write.
    #[error(
        "{page}: torn page, header LSN low bits {header_low:#010x} != trailer {trailer:#010x}"
    )]
    LsnMismatch {
        /// The page that was expected.
        page: PageId,
        /// Low 32 bits of the LSN in the file header.
        header_low: u32,
        /// The LSN bits stored in the trailer.
        trailer: u32,
    },
    /// The stored CRC-32C does not match the page contents.
    #[error("{page}: checksum mismatch, stored {stored:#010x}, computed {computed:#010x}")]
    ChecksumMismatch {
        /// The page that was expected.
        page: PageId,
        /// The checksum stored at offset 0.
        stored: u32,
        /// The checksum computed over the page.
        computed: u32,
    },
    /// The page is intact but is another page of the file (misdirected write or read).
    #[error("{expected}: page header says page number {found}")]
    WrongPageNo {
        /// The page that was expected.
        expected: PageId,
        /// The page number in the header.
        found: PageNo,
    },
    /// The page is intact but belongs to another tablespace.
    #[error("{expected}: page header says space id {found}")]
    WrongSpaceId {
        /// The page that was expected.
        expected: PageId,
        /// The space id in the header.
        found: SpaceId,
    },
    /// The page type field holds a value this version does not know.
    #[error("{page}: unknown page type {found}")]
    UnknownPageType {
        /// The page (as claimed by its header).
        page: PageId,
        /// The raw page type value.
        found: u16,
    },
    /// The page is of a known type, but not the one the caller asked to decode.
    #[error("{page}: page type is {found:?}, expected {expected:?}")]
    WrongPageType {
        /// The page (as claimed by its header).
        page: PageId,
        /// The type the decoder handles.
        expected: PageType,
        /// The type found in the header.
        found: PageType,
    },
    /// A structural problem inside a page body: bad offsets, overlapping records, unsorted keys,
    /// bad magic of a body header, invalid entry... `what` says which.
    #[error("{page}: corrupt page: {what}")]
    Corrupt {
        /// The page (as claimed by its header).
        page: PageId,
        /// Human-readable description of the first problem found.
        what: String,
    },
    /// The record (or the set of records) does not fit in the page, even after compaction.
    /// The page is unchanged. This is the signal for a B-tree split.
    #[error("page full: {needed} bytes needed, {available} available")]
    PageFull {
        /// Bytes the operation needs (records plus slots).
        needed: usize,
        /// Bytes available after compaction.
        available: usize,
    },
    /// A key is longer than [`max_key_len`](crate::max_key_len).
    #[error("key of {len} bytes is longer than the maximum {max}")]
    KeyTooLong {
        /// The key length.
        len: usize,
        /// The maximum for this page size.
        max: usize,
    },
    /// A record is larger than [`max_record_size`](crate::max_record_size); its value must go
    /// off-page.
    #[error("record of {size} bytes is larger than the maximum {max}")]
    RecordTooLarge {
        /// The record's size including its slot.
        size: usize,
        /// The maximum for this page size.
        max: usize,
    },
    /// A position or record index is out of range.
    #[error("position {index} out of range for a page with {len} records")]
    OutOfRange {
        /// The position given.
        index: usize,
        /// The number of records.
        len: usize,
    },
    /// Inserting or replacing at this position would break the strict key order of the page.
    #[error("key out of order at position {index}")]
    KeyOutOfOrder {
        /// The position given.
        index: usize,
    },
    /// The record kind does not match the page level (child pointers only on internal pages,
    /// inline / overflow values only on leaves), or two pages of different levels/sizes were
    /// combined.
    #[error("record kind or page level mismatch: {what}")]
    LevelMismatch {
        /// What did not match.
        what: &'static str,
    },
    /// An encoder was given a value that cannot be represented (for example a catalog name that
    /// is empty or longer than 64 bytes, or more entries than fit on a page).
    #[error("invalid value: {what}")]
    Invalid {
        /// What is wrong with it.
        what: String,
    },
}

impl PageError {
    /// Builds a [`PageError::Corrupt`].
    pub(crate) fn corrupt(page: PageId, what: impl Into<String>) -> Self {
        Self::Corrupt {
            page,
            what: what.into(),
        }
    }
}
