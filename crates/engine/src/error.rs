//! The engine's error type: every variant names the file, page or table concerned.
//!
//! The public fields hold only std types and types this crate defines, so that the internal crates
//! (`barracuda-io`, `-page`, `-buffer-pool`, `-btree`) can change without changing this API. The
//! internal error each variant was made from stays reachable through
//! [`source()`](std::error::Error::source), for logs and for callers who want every detail.

use std::error::Error as StdError;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use barracuda_btree::BTreeError;
use barracuda_buffer_pool::PoolError;
use barracuda_io::{IoError, IoErrorKind as InternalIoKind};
use barracuda_page::{PageError, PageId};

/// Result of an engine operation.
pub type Result<T> = std::result::Result<T, Error>;

/// Why an engine operation failed.
///
/// New variants may be added in later versions (match with a `_` arm), and variants that wrap an
/// internal error may gain fields (match them with `..`).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
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
    /// A file-system operation failed: reading, writing, syncing, growing, creating or removing a
    /// file or directory. The message names the file, the operation and, for page I/O, the byte
    /// range and the page.
    #[error("{source}")]
    #[non_exhaustive]
    Io {
        /// The file or directory concerned.
        file: PathBuf,
        /// What kind of failure it is (out of space, device error, …).
        kind: IoErrorKind,
        /// The failed operation as the I/O layer reported it; the OS error is at the end of the
        /// source chain (see [`Error::raw_os_error`]).
        source: Box<dyn StdError + Send + Sync>,
    },
    /// A page read from disk is bad: checksum, torn write (LSN mismatch), all zero, another
    /// page's id, or a broken record structure.
    #[error("{file}: page {space_id}:{page_no}: {source}")]
    #[non_exhaustive]
    Page {
        /// The file the page was read from.
        file: PathBuf,
        /// The tablespace id the page was expected to carry.
        space_id: u32,
        /// The page number (its offset in the file divided by the page size).
        page_no: u32,
        /// What is wrong with the page.
        source: Box<dyn StdError + Send + Sync>,
    },
    /// A file's content is inconsistent in a way not tied to one page checksum.
    #[error("{file}: corrupt: {what}")]
    Corrupt {
        /// The file.
        file: PathBuf,
        /// What was expected and what was found.
        what: String,
    },
    /// A table's B-tree is inconsistent: a page that passed verification holds records, levels
    /// or links the tree cannot use.
    #[error("table {table}: {source}")]
    #[non_exhaustive]
    CorruptTable {
        /// The table.
        table: String,
        /// Its tablespace id.
        space_id: u32,
        /// The page where the inconsistency was found.
        page_no: u32,
        /// What was expected and what was found.
        source: Box<dyn StdError + Send + Sync>,
    },
    /// Every frame of the buffer pool stayed pinned for the whole bounded wait, so no page could
    /// be brought in. Transient under heavy concurrency; persistent means the pool is too small
    /// for the number of concurrent operations.
    #[error("all {capacity_pages} buffer pool frames stayed pinned for {waited:?}")]
    #[non_exhaustive]
    PoolExhausted {
        /// The pool's size in pages.
        capacity_pages: usize,
        /// How long the request waited.
        waited: Duration,
        /// The buffer pool's error.
        source: Box<dyn StdError + Send + Sync>,
    },
    /// The buffer pool failed for another reason (a background thread could not start, a page
    /// of a tablespace that is no longer open was requested).
    #[error("buffer pool: {source}")]
    #[non_exhaustive]
    BufferPool {
        /// The buffer pool's error.
        source: Box<dyn StdError + Send + Sync>,
    },
    /// A B-tree operation on a table failed for a reason no other variant describes (page
    /// allocation, the log refusing a mini-transaction).
    #[error("table {table}: {source}")]
    #[non_exhaustive]
    Table {
        /// The table.
        table: String,
        /// The cause.
        source: Box<dyn StdError + Send + Sync>,
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
    /// An option this version cannot provide (yet).
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// An option value out of its range.
    #[error("invalid option: {0}")]
    InvalidOption(String),
    /// The engine was called from inside the closure of a lending read
    /// ([`Engine::get_with`](crate::Engine::get_with), [`Engine::scan`](crate::Engine::scan),
    /// …), which runs while a page is latched: the call could wait for that latch forever.
    /// Copy what the closure needs and call the engine once it has returned.
    #[error(
        "the engine was called from inside a get_with/scan closure, which runs under a page latch"
    )]
    CalledFromReadClosure,
    /// [`Engine::load_sorted`](crate::Engine::load_sorted) was given a row whose key is not
    /// above the key of the row before it. Nothing was loaded.
    #[error(
        "table {table:?}: row {position} of a sorted load has a key not above the row before it"
    )]
    NotSorted {
        /// The table.
        table: String,
        /// The row's position among the rows given (from 0).
        position: u64,
    },
    /// [`Engine::load_sorted`](crate::Engine::load_sorted) into a table that has rows (or got
    /// one while the load ran). Nothing was loaded.
    #[error("table {0:?} is not empty: a sorted load builds a table from nothing")]
    TableNotEmpty(String),
    /// A table handle used after its table was dropped (or from another engine).
    #[error("table {0:?} was dropped or belongs to another engine")]
    StaleTable(String),
    /// A row lock held by another transaction was not released within the lock wait timeout
    /// ([`EngineOptions::lock_wait_timeout`](crate::EngineOptions::lock_wait_timeout)). Only
    /// the request failed: the transaction keeps its other writes and locks and may go on,
    /// commit or roll back (InnoDB's default, `innodb_rollback_on_timeout = OFF`).
    #[error("lock wait timeout on a row of table {table:?}: waited {waited:?}; the transaction stays open")]
    LockWaitTimeout {
        /// The table of the row.
        table: String,
        /// How long the request waited.
        waited: std::time::Duration,
    },
    /// The transaction was chosen as the victim of a deadlock and rolled back: its writes are
    /// discarded and its locks released. Every later call on it returns this error again;
    /// begin a new transaction to retry.
    #[error("deadlock found while waiting for a row lock in table {table:?}; transaction {trx} was rolled back ({why})")]
    Deadlock {
        /// The table of the row the victim was waiting for.
        table: String,
        /// The victim's transaction id.
        trx: u64,
        /// The cycle found (transaction ids), or the chain too long to search.
        why: String,
    },
    /// The engine refuses writes and writes no page any more: a commit failed part-way, an
    /// `fsync` failed, or a change was left half-done in memory. What was committed since the
    /// last checkpoint is not written; reopen the database to continue from that checkpoint.
    #[error("the engine is read-only: {0}")]
    ReadOnly(String),
    /// One change too large for this engine's limits: a row write (or a purge or rollback
    /// step) is one redo commit unit, every page of which must stay in the buffer pool, and all
    /// its redo in the log, until the unit is complete — a row whose redo would not fit the
    /// log, or whose pages do not fit the pool. A transaction as a whole has no such limit (its
    /// undo log makes it atomic, not one unit). Refused before anything is changed when the
    /// size says so up front (the engine stays writable); found part-way, it turns the engine
    /// read-only (the next open recovers without the change).
    #[error("transaction too large: {what}")]
    TransactionTooLarge {
        /// Which limit, with the figures.
        what: String,
    },
    /// The redo log failed (a write or sync error makes it refuse everything after; a
    /// transaction too large for the log's capacity), or refused an operation.
    #[error("redo log: {source}")]
    #[non_exhaustive]
    Redo {
        /// The redo log's error.
        source: Box<dyn StdError + Send + Sync>,
    },
    /// The doublewrite file (torn-write protection) refused an operation or is misconfigured.
    /// A torn page it cannot repair is an [`Error::Page`] naming the page instead.
    #[error("doublewrite: {source}")]
    #[non_exhaustive]
    Doublewrite {
        /// The doublewrite file's error.
        source: Box<dyn StdError + Send + Sync>,
    },
    /// The database was not shut down cleanly (pages were written after its last checkpoint)
    /// and its redo log is missing (deleted, or a database of a version before the redo log):
    /// its pages may mix old and new states that nothing can reconcile, so the database is not
    /// opened rather than served possibly torn.
    #[error(
        "{dir}: not shut down cleanly: table pages were written after the last checkpoint \
         (LSN {checkpoint_lsn}) and there is no redo log to make them consistent; restore \
         from a backup, or inspect the files with `barracuda check`"
    )]
    UncleanShutdown {
        /// The database directory.
        dir: PathBuf,
        /// The LSN of the last completed checkpoint.
        checkpoint_lsn: u64,
    },
}

/// What kind of failure an [`Error::Io`] is, so callers can react without matching on errno.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum IoErrorKind {
    /// ENOSPC or EDQUOT: the file system (or the quota) is full. Freeing space and retrying can
    /// succeed.
    NoSpace,
    /// EIO: the device reported a media or transport error.
    DeviceError,
    /// The kernel or file system refuses the operation (EOPNOTSUPP, ENOSYS), e.g. io_uring or
    /// O_DIRECT where they are not available.
    Unsupported,
    /// EPERM or EACCES.
    PermissionDenied,
    /// ENOENT: a file the database needs is missing.
    NotFound,
    /// A read reached beyond the end of the file: the file is shorter than its header says.
    PastEof,
    /// An O_DIRECT request was not aligned to the device's block size.
    Unaligned,
    /// Anything else (see [`Error::raw_os_error`]).
    Other,
}

impl fmt::Display for IoErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::NoSpace => "no space left",
            Self::DeviceError => "device error",
            Self::Unsupported => "unsupported",
            Self::PermissionDenied => "permission denied",
            Self::NotFound => "not found",
            Self::PastEof => "beyond end of file",
            Self::Unaligned => "unaligned direct I/O",
            Self::Other => "other",
        })
    }
}

impl IoErrorKind {
    fn of(kind: InternalIoKind) -> Self {
        match kind {
            InternalIoKind::NoSpace => Self::NoSpace,
            InternalIoKind::Eio => Self::DeviceError,
            InternalIoKind::Unsupported => Self::Unsupported,
            InternalIoKind::PermissionDenied => Self::PermissionDenied,
            InternalIoKind::NotFound => Self::NotFound,
            InternalIoKind::PastEof => Self::PastEof,
            InternalIoKind::Unaligned => Self::Unaligned,
            InternalIoKind::Other => Self::Other,
        }
    }
}

/// A failed file-system call outside page I/O: the path and the OS error.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {source}")]
struct FsError {
    path: PathBuf,
    source: std::io::Error,
}

impl Error {
    /// The OS error number behind this error, if it comes from (or imitates) a failed system
    /// call, found anywhere along its source chain.
    pub fn raw_os_error(&self) -> Option<i32> {
        let mut next: Option<&(dyn StdError + 'static)> = StdError::source(self);
        while let Some(err) = next {
            if let Some(os) = err.downcast_ref::<std::io::Error>() {
                return os.raw_os_error();
            }
            next = err.source();
        }
        None
    }

    /// The error of a B-tree operation on `table`, lifted to the variant a caller can match:
    /// key and value limits, buffer pool and page errors, tree corruption with its page.
    pub(crate) fn table(table: &str, source: BTreeError) -> Self {
        let table = table.to_owned();
        match source {
            BTreeError::KeyTooLong { len, max } => Self::KeyTooLong { table, len, max },
            BTreeError::ValueTooLong { len, max } => Self::ValueTooLong { table, len, max },
            BTreeError::Pool(pool) => Self::from(pool),
            BTreeError::Page { page, .. } | BTreeError::Corrupt { page, .. } => {
                Self::CorruptTable {
                    table,
                    space_id: page.space_id,
                    page_no: page.page_no,
                    source: Box::new(source),
                }
            }
            BTreeError::KeysNotAscending { position, .. } => Self::NotSorted { table, position },
            BTreeError::TreeNotEmpty { .. } => Self::TableNotEmpty(table),
            BTreeError::BuildUnsupported { why, .. } => {
                Self::Unsupported(format!("a sorted load of table {table:?}: {why}"))
            }
            other @ (BTreeError::Allocation { .. } | BTreeError::Log(_)) => Self::Table {
                table,
                source: Box::new(other),
            },
        }
    }

    /// A failed file-system call on `path` outside page I/O (directories, removing files).
    pub(crate) fn fs(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        let kind = IoErrorKind::of(InternalIoKind::from_io(&source));
        let path = path.into();
        Self::Io {
            file: path.clone(),
            kind,
            source: Box::new(FsError { path, source }),
        }
    }

    /// Page `page` of `file` failed verification for `source`.
    pub(crate) fn page(
        file: &Path,
        page: PageId,
        source: impl StdError + Send + Sync + 'static,
    ) -> Self {
        Self::Page {
            file: file.to_owned(),
            space_id: page.space_id,
            page_no: page.page_no,
            source: Box::new(source),
        }
    }

    /// The engine error a page store error carries, lifted out of the pool's wrapper into a
    /// variant a caller can match; the pool error stays the source where the inner error cannot
    /// be moved out of it.
    fn from_pool(pool: PoolError) -> Self {
        // The store's error is behind a shared reference: copy out what the lifted variant needs,
        // then let go of the borrow so `pool` can become the source.
        let lifted = match &pool {
            PoolError::Store(store) => match store.inner().downcast_ref::<Error>() {
                Some(Error::Page {
                    file,
                    space_id,
                    page_no,
                    source,
                }) => Lifted::Page {
                    file: file.clone(),
                    space_id: *space_id,
                    page_no: *page_no,
                    reason: source.downcast_ref::<PageError>().cloned(),
                },
                Some(Error::Io { file, kind, .. }) => Lifted::Io {
                    file: file.clone(),
                    kind: *kind,
                },
                _ => Lifted::None,
            },
            PoolError::AllPagesPinned {
                capacity_pages,
                waited,
            } => Lifted::Exhausted {
                capacity_pages: *capacity_pages,
                waited: *waited,
            },
            _ => Lifted::None,
        };
        match lifted {
            // The pool's wrapper adds only the page id, which a page error names already; the
            // page crate's reason is `Clone`, so it becomes the source directly.
            Lifted::Page {
                file,
                space_id,
                page_no,
                reason,
            } => Self::Page {
                file,
                space_id,
                page_no,
                source: match reason {
                    Some(reason) => Box::new(reason),
                    None => Box::new(pool),
                },
            },
            // An I/O error cannot be cloned: the pool error (which names the page, then the
            // operation, file, byte range and OS error) stays the source.
            Lifted::Io { file, kind } => Self::Io {
                file,
                kind,
                source: Box::new(pool),
            },
            Lifted::Exhausted {
                capacity_pages,
                waited,
            } => Self::PoolExhausted {
                capacity_pages,
                waited,
                source: Box::new(pool),
            },
            Lifted::None => Self::BufferPool {
                source: Box::new(pool),
            },
        }
    }
}

/// What [`Error::from_pool`] copies out of a pool error before taking ownership of it.
enum Lifted {
    Page {
        file: PathBuf,
        space_id: u32,
        page_no: u32,
        reason: Option<PageError>,
    },
    Io {
        file: PathBuf,
        kind: IoErrorKind,
    },
    Exhausted {
        capacity_pages: usize,
        waited: Duration,
    },
    None,
}

impl From<IoError> for Error {
    fn from(err: IoError) -> Self {
        Self::Io {
            file: err.path().to_owned(),
            kind: IoErrorKind::of(err.kind()),
            source: Box::new(err),
        }
    }
}

impl From<barracuda_redo::RedoError> for Error {
    fn from(err: barracuda_redo::RedoError) -> Self {
        use barracuda_redo::RedoError;
        match err {
            RedoError::Io(io) => Self::from(io),
            RedoError::Corrupt { path, offset, what } => Self::Corrupt {
                file: path,
                what: format!("at offset {offset}: {what}"),
            },
            other => Self::Redo {
                source: Box::new(other),
            },
        }
    }
}

impl From<barracuda_doublewrite::DoublewriteError> for Error {
    fn from(err: barracuda_doublewrite::DoublewriteError) -> Self {
        use barracuda_doublewrite::DoublewriteError;
        match err {
            DoublewriteError::Io(io) => Self::from(io),
            DoublewriteError::TornPage { ref file, page, .. } => Self::Page {
                file: file.clone(),
                space_id: page.space_id,
                page_no: page.page_no,
                source: Box::new(err),
            },
            other => Self::Doublewrite {
                source: Box::new(other),
            },
        }
    }
}

impl From<PoolError> for Error {
    fn from(err: PoolError) -> Self {
        match err {
            // Both mean memory holds a change that must not be built on or written: to a
            // caller that is the engine being read-only, with the reason.
            PoolError::WritesStopped { reason } => Self::ReadOnly(reason),
            held @ PoolError::HeldByOpenUnit { .. } => Self::TransactionTooLarge {
                what: held.to_string(),
            },
            PoolError::PoisonedPage { page } => Self::ReadOnly(format!(
                "{page} was left half-changed by a failed mini-transaction"
            )),
            other => Self::from_pool(other),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::error::Error as _;

    use barracuda_buffer_pool::StoreError;
    use barracuda_io::faulty::ErrorKind as Fault;
    use barracuda_io::Op;

    use super::*;

    const ID: PageId = PageId::new(3, 7);

    fn file() -> PathBuf {
        PathBuf::from("/db/tables/t.ibd")
    }

    fn through_pool(inner: Error) -> Error {
        Error::from(PoolError::Store(StoreError::new(ID, inner)))
    }

    #[test]
    fn a_bad_page_from_the_store_names_file_and_page_with_the_page_crate_reason() {
        let reason = PageError::ChecksumMismatch {
            page: ID,
            stored: 1,
            computed: 2,
        };
        let err = through_pool(Error::page(&file(), ID, reason.clone()));
        assert!(
            matches!(&err, Error::Page { file: f, space_id: 3, page_no: 7, .. } if *f == file()),
            "{err:?}"
        );
        assert_eq!(
            err.source().and_then(|s| s.downcast_ref::<PageError>()),
            Some(&reason)
        );
        let text = err.to_string();
        assert!(
            text.contains("t.ibd") && text.contains("3:7") && text.contains("checksum"),
            "{text}"
        );
    }

    #[test]
    fn an_io_error_from_the_store_keeps_its_kind_and_os_error() {
        for (fault, kind) in [
            (Fault::Enospc, IoErrorKind::NoSpace),
            (Fault::Eio, IoErrorKind::DeviceError),
        ] {
            let io = IoError::from_errno(Op::Write, &file(), 7 * 4096, 4096, fault.errno());
            let err = through_pool(Error::from(io));
            assert!(
                matches!(&err, Error::Io { file: f, kind: k, .. } if *f == file() && *k == kind),
                "{err:?}"
            );
            assert_eq!(err.raw_os_error(), Some(fault.errno()));
            let text = err.to_string();
            assert!(text.contains("t.ibd") && text.contains("3:7"), "{text}");
        }
    }

    #[test]
    fn pool_errors_become_typed_variants() {
        let waited = Duration::from_millis(1500);
        let err = Error::from(PoolError::AllPagesPinned {
            capacity_pages: 16,
            waited,
        });
        assert!(
            matches!(&err, Error::PoolExhausted { capacity_pages: 16, waited: w, .. } if *w == waited),
            "{err:?}"
        );
        assert!(err
            .source()
            .is_some_and(<dyn std::error::Error>::is::<PoolError>));
        let err = through_pool(Error::Corrupt {
            file: file(),
            what: "x".into(),
        });
        assert!(matches!(err, Error::BufferPool { .. }), "{err:?}");
        let err = Error::from(PoolError::Store(StoreError::new(
            ID,
            "tablespace 3 is not open",
        )));
        assert!(matches!(err, Error::BufferPool { .. }), "{err:?}");
    }

    #[test]
    fn tree_errors_name_the_table_and_keep_the_page() {
        let corrupt = BTreeError::Corrupt {
            page: ID,
            what: "child at level 2 under a level-0 parent".into(),
        };
        let err = Error::table("t", corrupt);
        assert!(
            matches!(&err, Error::CorruptTable { table, space_id: 3, page_no: 7, .. } if table == "t"),
            "{err:?}"
        );
        assert!(err
            .source()
            .is_some_and(<dyn std::error::Error>::is::<BTreeError>));
        let err = Error::table("t", BTreeError::ValueTooLong { len: 9, max: 8 });
        assert!(
            matches!(&err, Error::ValueTooLong { table, len: 9, max: 8 } if table == "t"),
            "{err:?}"
        );
        let pinned = PoolError::AllPagesPinned {
            capacity_pages: 16,
            waited: Duration::ZERO,
        };
        let err = Error::table("t", BTreeError::Pool(pinned));
        assert!(matches!(err, Error::PoolExhausted { .. }), "{err:?}");
        let err = Error::table("t", BTreeError::Log("log full".into()));
        assert!(
            matches!(&err, Error::Table { table, .. } if table == "t"),
            "{err:?}"
        );
    }

    #[test]
    fn a_failed_file_system_call_names_the_path() {
        let err = Error::fs(
            "/db/tables",
            std::io::Error::from(std::io::ErrorKind::NotFound),
        );
        assert!(
            matches!(&err, Error::Io { kind: IoErrorKind::NotFound, file, .. } if file.ends_with("tables")),
            "{err:?}"
        );
        assert!(err.to_string().contains("/db/tables"), "{err}");
    }
}
