//! Redo records: the physical page changes inside one mtr, their byte format
//! (`docs/FORMATS.md` §10), how to build them ([`MtrWriter`], with [`MtrWriter::log_page_diff`]
//! turning a before/after pair of page images into few bytes), read them back ([`decode`],
//! [`RecordReader`]) and replay them onto a page ([`apply`]).
//!
//! The format follows MariaDB 10.5's physical redo (MDEV-12353): byte-range changes to one
//! page, not page images and not logical "insert row" records whose replay needs index
//! metadata. The exceptions are the EXTENDED index-page records ([`ExtendedType`]): a
//! compaction, and a record inserted, replaced or removed at a slot position. Their replay needs
//! nothing but the page's bytes (the same `IndexPage` function that made the change), and
//! they let the commonest change be logged without a before-image and a diff of the page: a
//! page copy and a page scan per put were half of a load's CPU. A record names its page once per run of records on that page and places each
//! change relative to where the previous one ended. Where ours differs, and why:
//! - no end-of-mtr byte: the log frame (§9.3) carries the mtr's length and a CRC over its LSN,
//!   so the mtr's end is the frame's end and MariaDB's 0x00/0x01 wrap-sequence byte is not needed;
//! - no file records (FILE_CREATE, FILE_MODIFY, …) yet, and one varint (the page-id one) for
//!   every number, including the record length;
//! - `MEMMOVE` names its source as a signed delta from its destination (MariaDB: relative to
//!   the destination too, sign in the low bit — the same idea, our varint).

mod decode;
mod diff;
mod varint;
mod writer;

use barracuda_page::{PageId, PageSize};

pub use decode::{apply, apply_mtr, decode, PageState, RecordReader};
pub use writer::MtrWriter;

/// The record type, bits 6..4 of a record's first byte (`docs/FORMATS.md` §10.1).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(u8)]
pub enum RecordType {
    /// The page was freed: recovery need not read it, and a later change needs `InitPage` first.
    FreePage = 0,
    /// The page becomes all zeros: recovery need not read it.
    InitPage = 1,
    /// A subtype follows ([`ExtendedType`]). A decoder rejects a subtype it does not know, since
    /// skipping a page change would corrupt the page.
    Extended = 2,
    /// Bytes written at an offset.
    Write = 3,
    /// A length filled with a repeated pattern.
    Memset = 4,
    /// Bytes copied inside the page.
    Memmove = 5,
    /// Reserved: rejected.
    Reserved = 6,
    /// Information that changes no page byte (later: transaction ids, checksums); recovery
    /// may skip it.
    Option = 7,
}

/// The subtype of an [`RecordType::Extended`] record (`docs/FORMATS.md` §10.1): logical page
/// operations whose replay is a deterministic function of the page's bytes. Later: undo
/// appends, row-format page inits.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(u8)]
pub enum ExtendedType {
    /// The index page's records are rewritten in key order from the heap start, garbage
    /// dropped, the freed bytes zeroed ([`barracuda_page::IndexPage::compact`]). A page
    /// split or an insert into a fragmented page rewrites most of a page; as bytes that is
    /// a page of log, as this record it is two bytes plus the page id.
    // InnoDB: MLOG_COMP_PAGE_REORGANIZE.
    IndexReorganize = 0,
    /// A record is inserted as record `pos` of the index page
    /// ([`barracuda_page::IndexPage::insert`]: the heap compacted first if that is the only
    /// way it fits, the slots after it shifted, the insert-direction hints updated). The
    /// record's bytes as logged are its heap encoding. A leaf insert changes ~200 scattered
    /// bytes (record, slot shift, header fields); found by diffing, it costs a copy of the
    /// page before the change and a scan of the whole page after it.
    // InnoDB: MLOG_COMP_REC_INSERT.
    IndexInsert = 1,
    /// Record `pos` of the index page is replaced ([`barracuda_page::IndexPage::replace`]).
    IndexReplace = 2,
    /// Record `pos` of the index page is removed ([`barracuda_page::IndexPage::remove`]).
    // InnoDB: MLOG_COMP_REC_DELETE.
    IndexRemove = 3,
    /// Records `at..` of the index page are removed and the page is compacted: what a split
    /// leaves of the page it splits ([`barracuda_page::IndexPage::split_off`]), which as bytes
    /// is most of a page.
    // InnoDB: MLOG_COMP_LIST_END_DELETE.
    IndexTruncate = 4,
}

impl ExtendedType {
    /// The subtype with this number, if this version defines it.
    pub(crate) fn from_subtype(sub: u32) -> Option<Self> {
        [
            Self::IndexReorganize,
            Self::IndexInsert,
            Self::IndexReplace,
            Self::IndexRemove,
            Self::IndexTruncate,
        ]
        .into_iter()
        .find(|t| u32::from(*t as u8) == sub)
    }
}

/// One decoded redo record. Offsets and lengths are bytes in the page; a decoded record is
/// always within the page size it was decoded for.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Record<'a> {
    /// `page` was freed.
    FreePage {
        /// The page.
        page: PageId,
    },
    /// `page` becomes all zeros.
    InitPage {
        /// The page.
        page: PageId,
    },
    /// `data` is written at `offset`.
    Write {
        /// The page.
        page: PageId,
        /// Where the bytes go.
        offset: usize,
        /// The bytes (at least one).
        data: &'a [u8],
    },
    /// `[offset, offset + len)` is filled with `pattern` repeated (the last copy cut short).
    Memset {
        /// The page.
        page: PageId,
        /// Start of the filled range.
        offset: usize,
        /// Bytes filled (at least one).
        len: usize,
        /// The repeated bytes (at least one, at most `len`).
        pattern: &'a [u8],
    },
    /// `[source, source + len)` is copied to `[offset, offset + len)` (overlap allowed, as
    /// `copy_within`).
    Memmove {
        /// The page.
        page: PageId,
        /// Destination start.
        offset: usize,
        /// Bytes copied (at least one).
        len: usize,
        /// Source start (different from `offset`).
        source: usize,
    },
    /// `page`, an index page, is compacted ([`ExtendedType::IndexReorganize`]).
    IndexReorganize {
        /// The page.
        page: PageId,
    },
    /// `record` (its heap encoding, which decodes) is inserted as record `pos` of index page
    /// `page` ([`ExtendedType::IndexInsert`]).
    IndexInsert {
        /// The page.
        page: PageId,
        /// The position the record takes.
        pos: usize,
        /// The record's heap encoding.
        record: &'a [u8],
    },
    /// Record `pos` of index page `page` is replaced by `record` ([`ExtendedType::IndexReplace`]).
    IndexReplace {
        /// The page.
        page: PageId,
        /// The record replaced.
        pos: usize,
        /// The new record's heap encoding.
        record: &'a [u8],
    },
    /// Record `pos` of index page `page` is removed ([`ExtendedType::IndexRemove`]).
    IndexRemove {
        /// The page.
        page: PageId,
        /// The record removed.
        pos: usize,
    },
    /// Records `at..` of index page `page` are removed, then the page is compacted
    /// ([`ExtendedType::IndexTruncate`]).
    IndexTruncate {
        /// The page.
        page: PageId,
        /// The first record removed.
        at: usize,
    },
    /// Information for `page` that recovery may skip.
    Option {
        /// The page.
        page: PageId,
        /// The payload (possibly empty).
        payload: &'a [u8],
    },
}

impl Record<'_> {
    /// The page the record is about.
    pub fn page(&self) -> PageId {
        match *self {
            Record::FreePage { page }
            | Record::InitPage { page }
            | Record::Write { page, .. }
            | Record::Memset { page, .. }
            | Record::Memmove { page, .. }
            | Record::IndexReorganize { page }
            | Record::IndexInsert { page, .. }
            | Record::IndexReplace { page, .. }
            | Record::IndexRemove { page, .. }
            | Record::IndexTruncate { page, .. }
            | Record::Option { page, .. } => page,
        }
    }
}

/// A malformed mtr, or a change that does not fit its page.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    /// The mtr's bytes are not valid records: `at` is the byte offset inside the mtr of the
    /// record (or field) that is wrong.
    #[error("redo mtr, byte {at}: {what}")]
    Corrupt {
        /// Offset inside the mtr.
        at: usize,
        /// What was expected and found.
        what: String,
    },
    /// A change to `page` that the page cannot take (outside the page, empty, or after the
    /// page was freed), found while building or applying records.
    #[error("redo record for {page}: {what}")]
    Invalid {
        /// The page.
        page: PageId,
        /// What was wrong.
        what: String,
    },
}

/// Largest "rest of record" length a decoder accepts for page size `p`: the page id (10),
/// offset, length and source varints (3 + 3 + 5) and at most a page of data. A record longer
/// than that cannot be valid, so the bound is checked before anything else is read.
pub(crate) fn max_rest_len(page_size: PageSize) -> usize {
    page_size.bytes() + 2 * varint::MAX_LEN + 3 * varint::MAX_LEN
}
