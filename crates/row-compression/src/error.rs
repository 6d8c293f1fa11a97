//! What can go wrong: a page that does not fit its block (the caller splits it), a log with no
//! room left (the caller recompresses), and a block that is damaged or crafted (an error that
//! names the page and what was expected).

use barracuda_page::{PageError, PageId};
use thiserror::Error;

/// Errors of this crate. The two expected outcomes of normal operation, [`DoesNotFit`] and
/// [`LogFull`], are variants like the others so that a caller can `match` on them; neither
/// leaves anything changed.
///
/// [`DoesNotFit`]: RowCompressionError::DoesNotFit
/// [`LogFull`]: RowCompressionError::LogFull
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum RowCompressionError {
    /// The page's records do not compress into the block (InnoDB's "compression failure"): the
    /// B-tree splits the page and retries.
    #[error("page {page}: its records need {needed} bytes or more of the {block}-byte block, {available} are left for them")]
    DoesNotFit {
        /// The page.
        page: PageId,
        /// The block size.
        block: usize,
        /// Bytes of the block left for the compressed stream after the headers and the
        /// per-record trailer.
        available: usize,
        /// A lower bound of what the stream needs (the available bytes plus one when the codec
        /// stopped for want of room).
        needed: usize,
    },
    /// The modification log has no room for the change: nothing was appended; recompress the
    /// page (which empties the log) and log nothing, or split it if that fails.
    #[error("page {page}: the modification log has {free} bytes free, the change needs {needed}")]
    LogFull {
        /// The page.
        page: PageId,
        /// Bytes the change needs (log entry, end marker, trailer growth).
        needed: usize,
        /// Bytes free between the log's end and the trailer.
        free: usize,
    },
    /// A change that cannot be logged on a compressed page (a write to a header field this
    /// format keeps for itself, a position beyond the records, a record of the wrong level).
    #[error("page {page}: {what}")]
    BadChange {
        /// The page.
        page: PageId,
        /// What is wrong with the change.
        what: String,
    },
    /// The block's bytes are not a valid compressed page: damaged, torn or crafted.
    #[error("compressed page {page}: {what}")]
    Corrupt {
        /// The page, as the caller expected it (or as its header says, when not known).
        page: PageId,
        /// What was found, and what was expected.
        what: String,
    },
    /// The uncompressed page handed in is not a valid index page, or a page-level operation
    /// failed while replaying the modification log.
    #[error("page {page}: {source}")]
    Page {
        /// The page.
        page: PageId,
        /// The page-format error.
        #[source]
        source: PageError,
    },
    /// A block size that is not 1, 2, 4, 8 or 16 KiB, or one larger than the page.
    #[error("a {block}-byte block cannot hold a {page_size}-byte page: KEY_BLOCK_SIZE is 1, 2, 4, 8 or 16 KiB and at most the page size")]
    BadBlockSize {
        /// The block size asked for.
        block: usize,
        /// The page size.
        page_size: usize,
    },
}

impl RowCompressionError {
    /// A [`Corrupt`](Self::Corrupt) error naming `page` and what is wrong with its block.
    pub fn corrupt(page: PageId, what: impl Into<String>) -> Self {
        Self::Corrupt {
            page,
            what: what.into(),
        }
    }

    pub(crate) fn bad_change(page: PageId, what: impl Into<String>) -> Self {
        Self::BadChange {
            page,
            what: what.into(),
        }
    }
}

/// This crate's `Result`.
pub type Result<T, E = RowCompressionError> = std::result::Result<T, E>;
