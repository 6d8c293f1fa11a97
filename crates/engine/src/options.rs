//! Engine and table options. Persisted table options are small types with an explicit
//! encoding into catalog fields and a round-trip test beside them.

use std::sync::Arc;
use std::time::Duration;

use barracuda_buffer_pool::FreePagePolicy;
use barracuda_doublewrite::DoublewriteMode;
use barracuda_io::{FileSystem, OsFileSystem};
use barracuda_page::PageSize;
use barracuda_redo::flushing::FlushSettings;
use barracuda_row_compression::{BlockSize, Codec};

use crate::error::{Error, Result};
use crate::recovery::RecoveryProgress;

/// When a committed transaction is durable (InnoDB: `innodb_flush_log_at_trx_commit`): when
/// [`Transaction::commit`](crate::Transaction::commit) returns, its redo is synced
/// (`SyncEachCommit`), written to the OS (`SyncEverySecond`: survives a process crash, a power
/// loss may lose about the last second), or only in the log buffer (`Background`: a process
/// crash may lose about the last second). In every mode a crash loses whole transactions, never
/// part of one.
///
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Durability {
    /// Sync the log at every commit (InnoDB `=1`); concurrent commits share one sync (group
    /// commit). Default.
    #[default]
    SyncEachCommit,
    /// Write the log at every commit, sync it once a second (InnoDB `=2`).
    SyncEverySecond,
    /// Leave writing and syncing to the background (InnoDB `=0`).
    Background,
}

impl Durability {
    /// The redo log's mode for this setting.
    pub(crate) fn of_log(self) -> barracuda_redo::Durability {
        match self {
            Self::SyncEachCommit => barracuda_redo::Durability::Sync,
            Self::SyncEverySecond => barracuda_redo::Durability::Async,
            Self::Background => barracuda_redo::Durability::None,
        }
    }
}

/// Options of [`Engine::open`](crate::Engine::open). By-value builder.
#[derive(Clone, Debug)]
#[expect(
    clippy::struct_excessive_bools,
    reason = "each flag is an independent knob of the builder, as InnoDB's variables are"
)]
pub struct EngineOptions {
    pub(crate) page_size: PageSize,
    pub(crate) buffer_pool_bytes: usize,
    pub(crate) free_page_policy: FreePagePolicy,
    pub(crate) lru_scan_depth: usize,
    pub(crate) old_blocks_pct: u32,
    pub(crate) old_blocks_time: Duration,
    pub(crate) read_ahead_threshold: Option<u32>,
    pub(crate) random_read_ahead: bool,
    pub(crate) durability: Durability,
    pub(crate) doublewrite: DoublewriteMode,
    pub(crate) doublewrite_batch_areas: Option<u32>,
    pub(crate) redo_log_capacity: Option<u64>,
    pub(crate) flush_settings: FlushSettings,
    pub(crate) flush_threads: Option<usize>,
    pub(crate) checkpoint_writers: usize,
    pub(crate) create_if_missing: bool,
    pub(crate) io_backend: barracuda_io::Backend,
    pub(crate) mapped_reads: bool,
    pub(crate) file_system: Option<Arc<dyn FileSystem>>,
    pub(crate) recovery_progress: Option<Arc<RecoveryProgress>>,
    pub(crate) lock_wait_timeout: Duration,
    pub(crate) deadlock_detect: bool,
    pub(crate) background_purge: bool,
}

impl Default for EngineOptions {
    fn default() -> Self {
        Self {
            page_size: PageSize::K16,
            buffer_pool_bytes: 128 << 20,
            free_page_policy: FreePagePolicy::Eager,
            lru_scan_depth: 1024,
            old_blocks_pct: 37,
            old_blocks_time: Duration::from_secs(1),
            read_ahead_threshold: Some(56),
            random_read_ahead: false,
            durability: Durability::SyncEachCommit,
            doublewrite: DoublewriteMode::Auto,
            doublewrite_batch_areas: None,
            redo_log_capacity: None,
            flush_settings: FlushSettings::default(),
            flush_threads: None,
            checkpoint_writers: 2,
            create_if_missing: true,
            io_backend: barracuda_io::Backend::Std,
            mapped_reads: true,
            file_system: None,
            recovery_progress: None,
            lock_wait_timeout: Duration::from_secs(50),
            deadlock_detect: true,
            background_purge: true,
        }
    }
}

impl EngineOptions {
    /// How long a transaction waits for a row lock another transaction holds before its
    /// request fails with [`Error::LockWaitTimeout`](crate::Error::LockWaitTimeout). Default
    /// 50 s (InnoDB: `innodb_lock_wait_timeout`); changeable at run time with
    /// [`Engine::set_lock_wait_timeout`](crate::Engine::set_lock_wait_timeout).
    #[must_use]
    pub fn lock_wait_timeout(mut self, timeout: Duration) -> Self {
        self.lock_wait_timeout = timeout;
        self
    }

    /// Whether a purge thread removes, while the engine runs, what committed transactions left
    /// behind once no reader needs it (delete-marked rows, old versions, undo logs). Default
    /// on. Off, purge runs only at [`Engine::close`](crate::Engine::close): the files then do
    /// not depend on thread timing (deterministic tests and benchmarks), and the undo
    /// tablespace grows until close.
    #[must_use]
    pub fn background_purge(mut self, on: bool) -> Self {
        self.background_purge = on;
        self
    }

    /// Whether a transaction that starts to wait for a row lock searches for a deadlock
    /// (InnoDB: `innodb_deadlock_detect`). Default on; off, a deadlock lasts until a wait
    /// times out. Changeable at run time with
    /// [`Engine::set_deadlock_detect`](crate::Engine::set_deadlock_detect).
    #[must_use]
    pub fn deadlock_detect(mut self, on: bool) -> Self {
        self.deadlock_detect = on;
        self
    }

    /// Page size of a *new* database. Default = 16 KiB; 4–64 KiB. An existing database keeps the
    /// size it was created with (InnoDB: `innodb_page_size`).
    #[must_use]
    pub fn page_size(mut self, size: PageSize) -> Self {
        self.page_size = size;
        self
    }

    /// Buffer pool size in bytes. Default = 128 MiB; at least 16 pages
    /// (InnoDB: `innodb_buffer_pool_size`).
    #[must_use]
    pub fn buffer_pool_bytes(mut self, bytes: usize) -> Self {
        self.buffer_pool_bytes = bytes;
        self
    }

    /// What a thread does when it needs a free frame and the free list is empty.
    /// Default = [`FreePagePolicy::Eager`] (Percona: `innodb_empty_free_list_algorithm`).
    #[must_use]
    pub fn free_page_policy(mut self, policy: FreePagePolicy) -> Self {
        self.free_page_policy = policy;
        self
    }

    /// Pages the LRU manager scans per round. Default = 1024 (InnoDB: `innodb_lru_scan_depth`).
    #[must_use]
    pub fn lru_scan_depth(mut self, pages: usize) -> Self {
        self.lru_scan_depth = pages;
        self
    }

    /// Share of the LRU kept as the old sublist, percent. Default = 37; 5–95
    /// (InnoDB: `innodb_old_blocks_pct`).
    #[must_use]
    pub fn old_blocks_pct(mut self, pct: u32) -> Self {
        self.old_blocks_pct = pct;
        self
    }

    /// How long a page must stay in the old sublist after its first access before another access
    /// makes it young. Default = 1 s (InnoDB: `innodb_old_blocks_time`).
    #[must_use]
    pub fn old_blocks_time(mut self, time: Duration) -> Self {
        self.old_blocks_time = time;
        self
    }

    /// Linear read-ahead threshold (pages of an extent accessed in order), `None` = off.
    /// Default = 56 (InnoDB: `innodb_read_ahead_threshold`).
    #[must_use]
    pub fn read_ahead_threshold(mut self, pages: Option<u32>) -> Self {
        self.read_ahead_threshold = pages;
        self
    }

    /// Random read-ahead. Default = off (InnoDB: `innodb_random_read_ahead`).
    #[must_use]
    pub fn random_read_ahead(mut self, on: bool) -> Self {
        self.random_read_ahead = on;
        self
    }

    /// When commits are durable. Default = [`Durability::SyncEachCommit`].
    #[must_use]
    pub fn durability(mut self, durability: Durability) -> Self {
        self.durability = durability;
        self
    }

    /// How page writes are protected against tearing (InnoDB: `innodb_doublewrite`, MariaDB:
    /// `innodb_use_atomic_writes`). Default = [`DoublewriteMode::Auto`]: untorn writes where
    /// every data file's device proves it supports them (statx and a trial `RWF_ATOMIC`
    /// write), else the doublewrite file. Decided at every open; `Engine::status()` says which
    /// mode is in effect and why.
    #[must_use]
    pub fn doublewrite(mut self, mode: DoublewriteMode) -> Self {
        self.doublewrite = mode;
        self
    }

    /// Batch areas of the doublewrite file (1..=256, each 128 pages: one batch of copies in
    /// flight, kept until the data files its pages went to are synced). Default: sized to the
    /// buffer pool — areas for about an eighth of its pages, 2 to 32 — so that a flush of many
    /// batches syncs the data files every few dozen batches rather than every other one. A file
    /// of another size is rebuilt at open, after its copies were used. [`Engine::open`] refuses
    /// a count outside the bounds.
    ///
    /// [`Engine::open`]: crate::Engine::open
    #[must_use]
    pub fn doublewrite_batch_areas(mut self, areas: u32) -> Self {
        self.doublewrite_batch_areas = Some(areas);
        self
    }

    /// Bytes of redo log a *new* database gets (InnoDB: `innodb_redo_log_capacity`): the
    /// most redo that may separate the checkpoint from the newest change, so the most a
    /// recovery replays. Preallocated (written with zeros) when the database is created, so log
    /// syncs never change the file's size. Rounded down to 4 KiB; at least 1 MiB. Default: the
    /// buffer pool's size, between 16 MiB and 1 GiB (a log much larger than the pool gains
    /// little: the checkpoint cannot lag behind more changes than the pool holds dirty pages
    /// for). An existing database keeps its log's capacity.
    #[must_use]
    pub fn redo_log_capacity(mut self, bytes: u64) -> Self {
        self.redo_log_capacity = Some(bytes);
        self
    }

    /// The page cleaner's settings at start (InnoDB: `innodb_io_capacity`,
    /// `innodb_io_capacity_max`, `innodb_adaptive_flushing`, `innodb_adaptive_flushing_lwm`,
    /// `innodb_flushing_avg_loops`, `innodb_max_dirty_pages_pct[_lwm]`); change them at run
    /// time with [`Engine::set_flush_settings`](crate::Engine::set_flush_settings).
    #[must_use]
    pub fn flush_settings(mut self, settings: FlushSettings) -> Self {
        self.flush_settings = settings;
        self
    }

    /// Threads that compress a flush batch of page-compressed pages (MariaDB 10.1:
    /// `innodb_mtflush_threads`). Default = the number of cores; 1 compresses on the flushing
    /// thread itself. Tables without page compression are not affected.
    #[must_use]
    pub fn flush_threads(mut self, threads: usize) -> Self {
        self.flush_threads = Some(threads);
        self
    }

    /// Threads that write a sharp checkpoint's batches at once (`checkpoint()`, `close()`): one
    /// prepares its batch (copies, checksums, compression) while another waits for its I/O.
    /// Default 2; at least 1. With 1 a checkpoint's file operations come in a repeatable order
    /// (what fault-injection tests that count them need).
    #[must_use]
    pub fn checkpoint_writers(mut self, writers: usize) -> Self {
        self.checkpoint_writers = writers.max(1);
        self
    }

    /// The flush threads to start: as set, else one per core.
    pub(crate) fn resolved_flush_threads(&self) -> usize {
        self.flush_threads
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, usize::from))
            .max(1)
    }

    /// The redo log capacity to create a new database with.
    pub(crate) fn resolved_redo_capacity(&self) -> u64 {
        let bytes = self
            .redo_log_capacity
            .unwrap_or_else(|| (self.buffer_pool_bytes as u64).clamp(16 << 20, 1 << 30));
        bytes.max(1 << 20) & !4095
    }

    /// Create the database when `dir` holds none. Default = true.
    #[must_use]
    pub fn create_if_missing(mut self, create: bool) -> Self {
        self.create_if_missing = create;
        self
    }

    /// File back end: pread/pwrite (default), O_DIRECT, io_uring or automatic choice.
    #[must_use]
    pub fn io_backend(mut self, backend: barracuda_io::Backend) -> Self {
        self.io_backend = backend;
        self
    }

    /// Whether the default back end serves page reads by copying out of a read-only shared
    /// mapping of each file instead of `pread` (the same page-cache bytes without the system
    /// call: a pool miss served from the page cache ~15 % faster). Default = true. Its one
    /// hazard: another process truncating a database file while the engine runs raises
    /// `SIGBUS` in this one (the engine never shrinks its files itself, and its `LOCK` keeps
    /// other engines out); `false` rules that out. Unused with O_DIRECT, io_uring or a
    /// [`file_system`](Self::file_system) of the caller's.
    #[must_use]
    pub fn mapped_reads(mut self, yes: bool) -> Self {
        self.mapped_reads = yes;
        self
    }

    /// The file system every database file is opened, created, checked and removed through.
    /// Default: the operating system's ([`OsFileSystem`](crate::fs::OsFileSystem) on the
    /// [`io_backend`](Self::io_backend)); setting one makes `io_backend` unused.
    ///
    /// A testing and embedding hook: a
    /// [`FaultyFileSystem`](crate::fs::FaultyFileSystem) injects I/O errors and simulates power
    /// loss (crash tests), and also serves as an in-memory database. The directory passed to
    /// [`Engine::open`](crate::Engine::open) is still created on the real file system, for the
    /// `LOCK` file that keeps a second opener out.
    #[must_use]
    pub fn file_system(mut self, fs: Arc<dyn FileSystem>) -> Self {
        self.file_system = Some(fs);
        self
    }

    /// Where the crash recovery run by [`Engine::open`](crate::Engine::open) reports its
    /// progress while `open` blocks: a thread holding the same `Arc` reads the phase, the LSNs
    /// and the percent done (see [`RecoveryProgress`]). An open with nothing to recover marks it
    /// done at once. Default: none (progress still goes to `tracing`, every 10 %).
    #[must_use]
    pub fn recovery_progress(mut self, progress: Arc<RecoveryProgress>) -> Self {
        self.recovery_progress = Some(progress);
        self
    }

    /// The file system to use: the one set, else the OS's on the chosen back end.
    pub(crate) fn resolved_file_system(&self) -> Arc<dyn FileSystem> {
        match &self.file_system {
            Some(fs) => fs.clone(),
            None => Arc::new(OsFileSystem::new(self.io_backend).mapped_reads(self.mapped_reads)),
        }
    }
}

/// How rows are stored in a table's pages (InnoDB: `ROW_FORMAT`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum RowFormat {
    /// Plain pages; large values off-page (InnoDB: `DYNAMIC`). Default.
    #[default]
    Dynamic,
    /// Compressed B-tree pages (InnoDB: `ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=n`): each index
    /// page is kept compressed in a block of `key_block_size` KiB (1, 2, 4, 8 or 16, at most the
    /// page size) with a modification log, on disk and in the buffer pool, beside its
    /// uncompressed frame while it is in use. See [`RowFormat::compressed`] for the default
    /// codec.
    Compressed {
        /// Compressed page size in KiB.
        key_block_size: u8,
        /// The codec: zlib (deflate) at a level, InnoDB's choice, or LZ4, beyond InnoDB.
        algorithm: Codec,
    },
}

impl RowFormat {
    /// `ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=key_block_size` with zlib at level 6 (InnoDB's
    /// `innodb_compression_level` default).
    pub const fn compressed(key_block_size: u8) -> Self {
        Self::Compressed {
            key_block_size,
            algorithm: Codec::Zlib { level: 6 },
        }
    }

    /// The block size of a compressed row format, `None` for plain pages.
    pub(crate) fn block_size(self) -> Option<BlockSize> {
        match self {
            Self::Dynamic => None,
            Self::Compressed { key_block_size, .. } => {
                BlockSize::from_bytes(usize::from(key_block_size) << 10)
            }
        }
    }
}

/// Compression of whole pages just before they are written, with hole punching
/// (MariaDB: `PAGE_COMPRESSED`): each page is compressed just before it is written and only
/// the file-system blocks it needs are kept (the rest of its slot is punched out).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PageCompression {
    /// zlib at `level` 1–9.
    Zlib {
        /// Compression level.
        level: u8,
    },
    /// LZ4 block format.
    Lz4,
}

/// Options of one table, stored in the catalog. By-value builder.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TableOptions {
    pub(crate) row_format: RowFormat,
    pub(crate) page_compression: Option<PageCompression>,
}

impl TableOptions {
    /// Row format. Default = [`RowFormat::Dynamic`].
    #[must_use]
    pub fn row_format(mut self, format: RowFormat) -> Self {
        self.row_format = format;
        self
    }

    /// Page compression. Default = `None`.
    #[must_use]
    pub fn page_compression(mut self, compression: Option<PageCompression>) -> Self {
        self.page_compression = compression;
        self
    }

    /// The row format set.
    pub fn get_row_format(&self) -> RowFormat {
        self.row_format
    }

    /// The page compression set.
    pub fn get_page_compression(&self) -> Option<PageCompression> {
        self.page_compression
    }

    /// How the table's pages that are not compressed blocks are written: its page compression,
    /// or, for a `ROW_FORMAT=COMPRESSED` table, the rows' codec applied to its other pages
    /// (overflow pages, the space header, an index page that did not fit its block) — as
    /// InnoDB stores a compressed table's BLOBs compressed.
    pub(crate) fn stored_page_compression(self) -> Option<PageCompression> {
        match self.row_format {
            RowFormat::Dynamic => self.page_compression,
            RowFormat::Compressed { algorithm, .. } => Some(match algorithm {
                Codec::Zlib { level } => PageCompression::Zlib { level },
                Codec::Lz4 => PageCompression::Lz4,
            }),
        }
    }

    /// Refuses what cannot be stored, naming the option: a key block size that is not 1, 2,
    /// 4, 8 or 16 KiB or exceeds the page, a zlib level outside 1..=9, and page compression
    /// of a table with compressed rows (InnoDB refuses `PAGE_COMPRESSED` with
    /// `ROW_FORMAT=COMPRESSED` too: the pages are compressed already).
    pub(crate) fn check_supported(self, page_size: PageSize) -> Result<()> {
        if let RowFormat::Compressed {
            key_block_size,
            algorithm,
        } = self.row_format
        {
            let block = usize::from(key_block_size) << 10;
            if BlockSize::from_bytes(block).is_none() {
                return Err(Error::InvalidOption(format!(
                    "KEY_BLOCK_SIZE={key_block_size} is not 1, 2, 4, 8 or 16"
                )));
            }
            if block > page_size.bytes() {
                return Err(Error::InvalidOption(format!(
                    "KEY_BLOCK_SIZE={key_block_size} exceeds the {page_size} page size"
                )));
            }
            if let Codec::Zlib { level } = algorithm {
                if !(1..=9).contains(&level) {
                    return Err(Error::InvalidOption(format!(
                        "row compression zlib level {level} is outside 1..=9"
                    )));
                }
            }
            if self.page_compression.is_some() {
                return Err(Error::InvalidOption(
                    "page compression of a ROW_FORMAT=COMPRESSED table is refused: its pages \
                     are compressed already (InnoDB refuses the combination too)"
                        .to_owned(),
                ));
            }
        }
        if let Some(PageCompression::Zlib { level }) = self.page_compression {
            if !(1..=9).contains(&level) {
                return Err(Error::InvalidOption(format!(
                    "page compression zlib level {level} is outside 1..=9"
                )));
            }
        }
        Ok(())
    }

    /// Catalog encoding: `(row_format, key_block_size, compression, level)`.
    // Format: row_format u8 (0 dynamic, 1 compressed) | key_block_size u8 (KiB, 0 = none)
    //       | compression u8 (0 none, 1 zlib, 2 lz4) | level u8 (zlib level, else 0).
    // The codec fields are the page compression's for a dynamic table and the rows' codec for
    // a compressed one (the two never go together).
    pub(crate) fn encode(self) -> (u8, u8, u8, u8) {
        let codec = |c: Codec| match c {
            Codec::Zlib { level } => (1, level),
            Codec::Lz4 => (2, 0),
        };
        match self.row_format {
            RowFormat::Dynamic => {
                let (compression, level) = match self.page_compression {
                    None => (0, 0),
                    Some(PageCompression::Zlib { level }) => (1, level),
                    Some(PageCompression::Lz4) => (2, 0),
                };
                (0, 0, compression, level)
            }
            RowFormat::Compressed {
                key_block_size,
                algorithm,
            } => {
                let (compression, level) = codec(algorithm);
                (1, key_block_size, compression, level)
            }
        }
    }

    /// Decodes catalog fields; unknown values are an error naming the table.
    pub(crate) fn decode(table: &str, fields: (u8, u8, u8, u8)) -> Result<Self> {
        let (row_format, key_block_size, compression, level) = fields;
        let bad = |what: String| Error::Corrupt {
            file: "system.ibs".into(),
            what: format!("table {table}: {what}"),
        };
        let page_compression = match (compression, level) {
            (0, _) => None,
            (1, l @ 1..=9) => Some(PageCompression::Zlib { level: l }),
            (2, _) => Some(PageCompression::Lz4),
            (c, l) => return Err(bad(format!("unknown compression {c} level {l}"))),
        };
        match (row_format, key_block_size) {
            (0, 0) => Ok(Self {
                row_format: RowFormat::Dynamic,
                page_compression,
            }),
            (1, k @ (1 | 2 | 4 | 8 | 16)) => {
                let algorithm = match page_compression {
                    Some(PageCompression::Zlib { level }) => Codec::Zlib { level },
                    Some(PageCompression::Lz4) => Codec::Lz4,
                    None => return Err(bad("compressed rows without a codec".to_owned())),
                };
                Ok(Self {
                    row_format: RowFormat::Compressed {
                        key_block_size: k,
                        algorithm,
                    },
                    page_compression: None,
                })
            }
            (f, k) => Err(bad(format!("unknown row format {f} / key block size {k}"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_options_round_trip_through_catalog_fields() {
        let all = [
            TableOptions::default(),
            TableOptions::default().row_format(RowFormat::compressed(8)),
            TableOptions::default().row_format(RowFormat::Compressed {
                key_block_size: 1,
                algorithm: Codec::Lz4,
            }),
            TableOptions::default().row_format(RowFormat::Compressed {
                key_block_size: 16,
                algorithm: Codec::Zlib { level: 9 },
            }),
            TableOptions::default().page_compression(Some(PageCompression::Lz4)),
            TableOptions::default().page_compression(Some(PageCompression::Zlib { level: 6 })),
        ];
        for options in all {
            assert_eq!(
                TableOptions::decode("t", options.encode()).unwrap(),
                options
            );
        }
        assert!(TableOptions::decode("t", (7, 0, 0, 0)).is_err());
        assert!(TableOptions::decode("t", (1, 3, 0, 0)).is_err());
        assert!(TableOptions::decode("t", (0, 0, 1, 0)).is_err());
        assert!(
            TableOptions::decode("t", (1, 4, 0, 0)).is_err(),
            "compressed rows need a codec"
        );
    }

    #[test]
    fn options_that_cannot_be_stored_are_refused_naming_them() {
        let ps = PageSize::K16;
        for kbs in [1, 2, 4, 8, 16] {
            let ok = TableOptions::default().row_format(RowFormat::compressed(kbs));
            assert!(ok.check_supported(ps).is_ok(), "KEY_BLOCK_SIZE={kbs}");
        }
        let refused =
            |o: TableOptions, page_size: PageSize, what: &str| match o.check_supported(page_size) {
                Err(Error::InvalidOption(why)) => assert!(why.contains(what), "{why}"),
                other => panic!("{o:?} at {page_size}: {other:?}"),
            };
        refused(
            TableOptions::default().row_format(RowFormat::compressed(3)),
            ps,
            "KEY_BLOCK_SIZE=3",
        );
        refused(
            TableOptions::default().row_format(RowFormat::compressed(16)),
            PageSize::K8,
            "exceeds",
        );
        refused(
            TableOptions::default().row_format(RowFormat::Compressed {
                key_block_size: 4,
                algorithm: Codec::Zlib { level: 0 },
            }),
            ps,
            "level 0",
        );
        refused(
            TableOptions::default()
                .row_format(RowFormat::compressed(8))
                .page_compression(Some(PageCompression::Lz4)),
            ps,
            "ROW_FORMAT=COMPRESSED",
        );
        let lz4 = TableOptions::default().page_compression(Some(PageCompression::Lz4));
        assert!(lz4.check_supported(ps).is_ok());
        for level in [1, 6, 9] {
            let zlib =
                TableOptions::default().page_compression(Some(PageCompression::Zlib { level }));
            assert!(zlib.check_supported(ps).is_ok(), "level {level}");
        }
        for level in [0, 10] {
            let zlib =
                TableOptions::default().page_compression(Some(PageCompression::Zlib { level }));
            refused(zlib, ps, "level");
        }
        assert!(TableOptions::default().check_supported(ps).is_ok());
    }
}
