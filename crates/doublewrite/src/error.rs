//! [`DoublewriteError`]: every failure of this crate, naming the file and page involved.

use std::path::PathBuf;

use barracuda_io::IoError;
use barracuda_page::{Lsn, PageId};

use crate::format::AreaKind;

/// Result of every fallible operation of this crate.
pub type Result<T> = std::result::Result<T, DoublewriteError>;

/// A failure of the doublewrite file or of torn-page repair.
#[derive(Debug, thiserror::Error)]
pub enum DoublewriteError {
    /// A file operation failed; the error names the file, the operation and the byte range.
    #[error(transparent)]
    Io(#[from] IoError),

    /// The configuration cannot be used (geometry out of bounds).
    #[error("doublewrite configuration for {file}: {what}", file = file.display())]
    Config {
        /// The doublewrite file.
        file: PathBuf,
        /// Which bound is broken.
        what: String,
    },

    /// A [`protect`](crate::Doublewrite::protect) call the caller got wrong: too many or no
    /// pages, or an image that does not match its [`PageImage`](crate::PageImage).
    #[error("doublewrite {file}: {what}", file = file.display())]
    BadBatch {
        /// The doublewrite file.
        file: PathBuf,
        /// What is wrong with the batch.
        what: String,
    },

    /// Every area of this kind is reserved: each holds the copies of a batch whose in-place
    /// write failed, kept for recovery, so no copy can be written until the database restarts.
    #[error(
        "doublewrite {file}: all {areas} {kind} areas hold copies of failed in-place writes; \
         restart to recover them",
        file = file.display()
    )]
    NoFreeArea {
        /// The doublewrite file.
        file: PathBuf,
        /// Which kind of area ran out.
        kind: AreaKind,
        /// How many areas of that kind there are.
        areas: u32,
    },

    /// At recovery, a page that fails verification and has no usable doublewrite copy. The
    /// engine reports it as corruption: the page must be restored from a backup.
    #[error(
        "torn page {page} in {file} (last written at LSN {lsn}) cannot be repaired: {why}",
        file = file.display()
    )]
    TornPage {
        /// The data file holding the page.
        file: PathBuf,
        /// The page.
        page: PageId,
        /// The newest page LSN the doublewrite file lists for it.
        lsn: Lsn,
        /// Why no copy could restore it.
        why: String,
    },
}
