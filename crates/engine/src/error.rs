//! The engine's error type: every variant names the file, page or table concerned.

use std::path::PathBuf;

use barracuda_btree::BTreeError;
use barracuda_buffer_pool::PoolError;
use barracuda_io::IoError;
use barracuda_page::{PageError, PageId};

/// Result of an engine operation.
pub type Result<T> = std::result::Result<T, Error>;

/// Why an engine operation failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Another `Engine` (in this or another process) has the database open.
    #[error("database {dir} is locked by another opener")]
    Locked {
        /// The database directory.
        dir: PathBuf,
    },
    /// No database in the directory and `create_if_missing` is off.
    #[error("no database in {dir}")]
    NotFound {
        /// The directory.
        dir: PathBuf,
    },
    /// A file operation failed (names the file, operation and offset).
    #[error(transparent)]
    Io(#[from] IoError),
    /// A file-system operation outside page I/O failed (creating directories, removing files).
    #[error("{path}: {source}")]
    Fs {
        /// The path concerned.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A page read from disk is bad: checksum, LSN, page id or structure.
    #[error("{file}: {page}: {source}")]
    Page {
        /// The file the page was read from.
        file: PathBuf,
        /// The page.
        page: PageId,
        /// What is wrong with it.
        #[source]
        source: PageError,
    },
    /// A file's content is inconsistent in a way not tied to one page checksum.
    #[error("{file}: corrupt: {what}")]
    Corrupt {
        /// The file.
        file: PathBuf,
        /// What was expected and what was found.
        what: String,
    },
    /// The buffer pool could not provide a page.
    #[error(transparent)]
    Pool(#[from] PoolError),
    /// A B-tree operation on a table failed.
    #[error("table {table}: {source}")]
    Table {
        /// The table.
        table: String,
        /// The cause.
        #[source]
        source: BTreeError,
    },
    /// No table of that name.
    #[error("no table named {0:?}")]
    NoSuchTable(String),
    /// A table of that name exists already.
    #[error("table {0:?} exists already")]
    TableExists(String),
    /// A table name the engine cannot use as a file name.
    #[error("invalid table name {name:?}: {why}")]
    InvalidTableName {
        /// The name given.
        name: String,
        /// What a name must be.
        why: &'static str,
    },
    /// A key longer than the page size allows.
    #[error("table {table}: key of {len} bytes exceeds the limit of {max} bytes")]
    KeyTooLong {
        /// The table.
        table: String,
        /// The key's length.
        len: usize,
        /// The limit (`page_size / 8`).
        max: usize,
    },
    /// A value longer than the engine stores (4 GiB − 1).
    #[error("table {table}: value of {len} bytes exceeds the limit of {max} bytes")]
    ValueTooLong {
        /// The table.
        table: String,
        /// The value's length.
        len: u64,
        /// The limit.
        max: u64,
    },
    /// An option this version cannot provide (yet), or an option out of range.
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// An option value out of its range.
    #[error("invalid option: {0}")]
    InvalidOption(String),
    /// A table handle used after its table was dropped (or from another engine).
    #[error("table {0:?} was dropped or belongs to another engine")]
    StaleTable(String),
    /// A commit failed part-way after an I/O error; the engine refuses further writes so that
    /// nothing is built on a half-applied batch. Reopen the database.
    #[error("the engine is read-only after a failed commit: {0}")]
    ReadOnly(String),
}

impl Error {
    pub(crate) fn table(table: &str, source: BTreeError) -> Self {
        match source {
            BTreeError::KeyTooLong { len, max } => Self::KeyTooLong {
                table: table.to_owned(),
                len,
                max,
            },
            BTreeError::Pool(pool) => Self::Pool(pool),
            other => Self::Table {
                table: table.to_owned(),
                source: other,
            },
        }
    }

    pub(crate) fn fs(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Fs {
            path: path.into(),
            source,
        }
    }
}
