//! The engine: opening a database directory, DDL, reads, writes, checkpoints, knobs.

use std::collections::HashMap;
use std::fs::File;
use std::ops::{ControlFlow, RangeBounds};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Mutex, RwLock};

use barracuda_btree::{BTree, LogSink, TreeContext};
use barracuda_buffer_pool::{BufferPool, FreePagePolicy, PoolConfig, ReadAhead};
use barracuda_page::{CatalogEntry, PageSize};

use crate::alloc::SpaceAllocator;
use crate::catalog::Catalog;
use crate::compression::{CompressionCounters, PageEncoder};
use crate::error::{Error, Result};
use crate::layout::{
    is_valid_table_name, table_path, SYSTEM_FILE, TABLES_DIR, TABLE_NAME_RULE, UNDO_SPACE_ID,
};
use crate::open::{ensure_undo_space, lock_dir, open_log, space_paths};
use crate::options::{EngineOptions, TableOptions};
use crate::page_cleaner::{self, FlushControllerKind, Flushing};
use crate::recovery::RecoveryReport;
use crate::redo_sink::RedoSink;
use crate::snapshot::Snapshot;
use crate::status::{EngineStatus, RedoStatus, TableStatus};
use crate::store::SpaceRegistry;
use crate::table::{Range, Table, TableInner};
use crate::tablespace::{FirstPage, Tablespace};
use crate::torn_writes::PageWrites;
use crate::txn::{IsolationLevel, Transaction};

/// Source of [`EngineInner::serial`].
static NEXT_SERIAL: AtomicU64 = AtomicU64::new(1);

/// An open database. `Send + Sync`: share it between threads by reference or in an `Arc`.
///
/// ```
/// use barracuda::{Engine, EngineOptions, TableOptions};
///
/// let dir = tempfile::tempdir()?;
/// let db = Engine::open(dir.path(), EngineOptions::default().buffer_pool_bytes(8 << 20))?;
/// let docs = db.create_table("docs", TableOptions::default())?;
/// let mut tx = db.begin();
/// tx.put(&docs, b"k1", b"v1")?;
/// tx.put(&docs, b"k2", b"v2")?;
/// assert_eq!(tx.get(&docs, b"k1")?.as_deref(), Some(&b"v1"[..])); // read-your-writes
/// tx.commit()?;
/// assert_eq!(db.get(&docs, b"k2")?.as_deref(), Some(&b"v2"[..]));
/// let keys: Vec<Vec<u8>> = db.range(&docs, b"k".as_slice()..)?.map(|kv| kv.map(|(k, _)| k)).collect::<Result<_, _>>()?;
/// assert_eq!(keys, vec![b"k1".to_vec(), b"k2".to_vec()]);
/// db.close()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Engine {
    pub(crate) inner: Arc<EngineInner>,
}

pub(crate) struct EngineInner {
    /// Unique per opened engine in this process: tells its table handles from another's.
    pub(crate) serial: u64,
    pub(crate) dir: PathBuf,
    pub(crate) options: EngineOptions,
    pub(crate) page_size: PageSize,
    pub(crate) pool: Arc<BufferPool>,
    pub(crate) spaces: Arc<SpaceRegistry>,
    pub(crate) log: Arc<RedoSink>,
    /// What recovery did when this engine opened, if the log had anything to replay.
    pub(crate) recovery: Option<RecoveryReport>,
    /// One checkpoint at a time.
    checkpoint_lock: Mutex<()>,
    /// The page cleaner's settings, controller choice and counters.
    pub(crate) flushing: Arc<Flushing>,
    /// The page cleaner thread, until stopped.
    cleaner: Mutex<Option<std::thread::JoinHandle<()>>>,
    pub(crate) ctx: TreeContext,
    /// Shared with the page store, which records in it when pages are written after a
    /// checkpoint. Never held across a buffer-pool call (the pool's writes take it).
    pub(crate) catalog: Arc<Mutex<Catalog>>,
    pub(crate) tables: RwLock<HashMap<String, Arc<TableInner>>>,
    /// One redo commit unit at a time: a row write that needs several mtrs (a split, a new
    /// undo page), an undo log started in a newly allocated page, a step of a rollback or of
    /// purge (see `unit.rs`); row writes that fit in place, commits and logs started in a
    /// cached page are single mtrs and do not take it. Held for one change, never across a
    /// lock wait or a log sync.
    pub(crate) unit_lock: Mutex<()>,
    /// Lone mtrs stop joining an open unit once it has this many mtrs and wait for its end
    /// (see `EngineInner::check_writable_for_lone_mtr`): a sixteenth of the pool's frames.
    pub(crate) lone_join_limit: u32,
    pub(crate) read_only: Mutex<Option<String>>,
    /// Set (after `read_only`) when the engine turns read-only: what every write checks first,
    /// without the mutex, which two writers would otherwise pass between them at every row.
    read_only_set: AtomicBool,
    pub(crate) counters: Counters,
    /// Row locks of the transactions' writes.
    pub(crate) locks: barracuda_lock::LockManager,
    /// Transaction ids, read views and the undo tablespace.
    pub(crate) mvcc: Arc<crate::mvcc::Mvcc>,
    /// The purge thread.
    pub(crate) purge_worker: crate::purge::PurgeWorker,
    closed: AtomicBool,
    _lock_file: File,
}

/// Operation counters for `status()` (InnoDB: Innodb_rows_read / _inserted / _deleted).
#[derive(Default)]
pub(crate) struct Counters {
    pub(crate) rows_read: AtomicU64,
    pub(crate) rows_written: AtomicU64,
    pub(crate) rows_deleted: AtomicU64,
    pub(crate) commits: AtomicU64,
    pub(crate) rollbacks: AtomicU64,
    pub(crate) checkpoints: AtomicU64,
}

impl Engine {
    /// Opens the database in `dir`, creating it when absent (unless
    /// [`EngineOptions::create_if_missing`] is off). A second opener of the same directory, in
    /// this process or another, gets [`Error::Locked`].
    pub fn open(dir: impl AsRef<Path>, options: EngineOptions) -> Result<Self> {
        let dir = dir.as_ref().to_owned();
        let fs = options.resolved_file_system();
        let options = options.file_system(fs.clone());
        let system_path = dir.join(SYSTEM_FILE);
        let exists = fs.exists(&system_path)?;
        if !exists && !options.create_if_missing {
            return Err(Error::NotFound { dir });
        }
        fs.create_dir_all(&dir.join(TABLES_DIR))?;
        // The LOCK file is always a real file (flock), whatever `fs` is.
        std::fs::create_dir_all(&dir).map_err(|e| Error::fs(&dir, e))?;
        let lock_file = lock_dir(&dir)?;
        let catalog = if exists {
            Catalog::open(&*fs, &system_path)?
        } else {
            Catalog::create(&*fs, &system_path, options.page_size)?
        };
        let page_size = catalog.page_size();
        let capacity = options.buffer_pool_bytes / page_size.bytes();
        if capacity < 16 {
            return Err(Error::InvalidOption(format!(
                "buffer_pool_bytes {} holds {capacity} pages of {page_size}; at least 16 are needed",
                options.buffer_pool_bytes
            )));
        }
        if !(5..=95).contains(&options.old_blocks_pct) {
            return Err(Error::InvalidOption(format!(
                "old_blocks_pct {} is outside 5..=95",
                options.old_blocks_pct
            )));
        }
        let mut paths = space_paths(&dir, &catalog)?;
        let undo_path = ensure_undo_space(&*fs, &dir, page_size, !catalog.entries.is_empty())?;
        paths.insert(UNDO_SPACE_ID, undo_path.clone());
        let encoder = Arc::new(PageEncoder::new(
            page_size,
            options.resolved_flush_threads(),
            Arc::new(CompressionCounters::default()),
        ));
        // Before any redo is applied: torn pages are restored from the doublewrite file first.
        let page_writes = Arc::new(PageWrites::open(
            fs.clone(),
            &dir,
            catalog.page_size(),
            options.doublewrite,
            &paths,
            crate::torn_writes::doublewrite_geometry(
                (options.buffer_pool_bytes / catalog.page_size().bytes()) as u64,
                options.doublewrite_batch_areas,
            )?,
        )?);
        let (log, recovery) = open_log(
            &*fs,
            &dir,
            &catalog,
            &paths,
            &options,
            &page_writes,
            &encoder,
        )?;
        let points = barracuda_redo::flushing::FlushPoints::for_log(
            log.capacity(),
            page_size.bytes() as u64,
            0,
        )
        .map_err(|e| Error::InvalidOption(e.to_string()))?;
        let log = Arc::new(RedoSink::new(log, page_size));
        let catalog = Arc::new(Mutex::new(catalog));
        let spaces = Arc::new(SpaceRegistry::new(
            log.clone(),
            catalog.clone(),
            page_writes.clone(),
            encoder,
            capacity,
        ));
        let config = PoolConfig::new(page_size)
            .capture_before_images(true)
            // Debug builds check that every described change replays to the page it made.
            .keep_described_from(cfg!(debug_assertions))
            .capacity_pages(capacity)
            .lru_scan_depth(options.lru_scan_depth)
            .old_blocks_pct(options.old_blocks_pct)
            .old_blocks_time(options.old_blocks_time)
            .policy(options.free_page_policy)
            .flush_all_writers(options.checkpoint_writers)
            .read_ahead(ReadAhead {
                linear_threshold: options.read_ahead_threshold,
                random: options.random_read_ahead,
            });
        let pool = BufferPool::new(config, spaces.clone())?;
        let sink: Arc<dyn LogSink> = log.clone();
        let alloc = Arc::new(SpaceAllocator::new(
            pool.clone(),
            spaces.clone(),
            log.clone(),
        ));
        let ctx = TreeContext::new(pool.clone(), alloc.clone(), sink.clone());
        spaces.insert(Arc::new(Tablespace::open(
            &*fs,
            &undo_path,
            UNDO_SPACE_ID,
            page_size,
            None,
        )?));
        let (mvcc, uncommitted) = crate::mvcc::Mvcc::open(pool.clone(), alloc, sink)?;
        let mvcc = Arc::new(mvcc);

        let serial = NEXT_SERIAL.fetch_add(1, Ordering::Relaxed);
        let mut tables = HashMap::new();
        let entries: Vec<CatalogEntry> = catalog.lock().entries.values().cloned().collect();
        for entry in &entries {
            let options_of = TableOptions::decode(
                &entry.name,
                (
                    entry.row_format,
                    entry.key_block_size,
                    entry.page_compression,
                    entry.compression_level,
                ),
            )?;
            // Catalog::open refused invalid names; this keeps the path inside `dir` regardless.
            let path = table_path(&dir, &entry.name).ok_or_else(|| Error::Corrupt {
                file: system_path.clone(),
                what: format!("table name {:?} is not {TABLE_NAME_RULE}", entry.name),
            })?;
            let space = Arc::new(
                Tablespace::open(
                    &*fs,
                    &path,
                    entry.space_id,
                    page_size,
                    options_of.stored_page_compression(),
                )?
                .with_row_compression(options_of.row_format.block_size()),
            );
            if entry.root_page_no == 0 || entry.root_page_no >= space.size_pages() {
                return Err(Error::Corrupt {
                    file: system_path,
                    what: format!(
                        "table {:?}: root page {} is not inside its {} pages",
                        entry.name,
                        entry.root_page_no,
                        space.size_pages()
                    ),
                });
            }
            spaces.insert(space.clone());
            let tree = crate::row_compression::open_tree(
                BTree::open(
                    ctx.clone(),
                    entry.space_id,
                    entry.root_page_no,
                    entry.index_id,
                ),
                options_of,
                space.row_stats(),
            );
            tables.insert(
                entry.name.clone(),
                Arc::new(TableInner::new(
                    serial,
                    entry.name.clone(),
                    tree,
                    options_of,
                )),
            );
        }
        let flush_settings = options.flush_settings.clone();
        let locks = barracuda_lock::LockManager::new(barracuda_lock::LockConfig {
            wait_timeout: options.lock_wait_timeout,
            deadlock_detect: options.deadlock_detect,
        });
        let lone_join_limit =
            u32::try_from((pool.capacity_pages() / 16).max(2)).unwrap_or(u32::MAX);
        let engine = Self {
            inner: Arc::new(EngineInner {
                serial,
                dir,
                options,
                page_size,
                pool,
                spaces,
                log,
                recovery,
                checkpoint_lock: Mutex::new(()),
                flushing: Arc::new(Flushing::new(points, flush_settings)),
                cleaner: Mutex::new(None),
                ctx,
                catalog,
                tables: RwLock::new(tables),
                unit_lock: Mutex::new(()),
                lone_join_limit,
                read_only: Mutex::new(None),
                read_only_set: AtomicBool::new(false),
                counters: Counters::default(),
                locks,
                mvcc,
                purge_worker: crate::purge::PurgeWorker::default(),
                closed: AtomicBool::new(false),
                _lock_file: lock_file,
            }),
        };
        let cleaner = page_cleaner::spawn(&engine.inner)?;
        *engine.inner.cleaner.lock() = Some(cleaner);
        // Before anyone is served (InnoDB rolls back in the background and re-creates the
        // locks; here the engine is not handed out until the rollback is done).
        crate::rollback::roll_back_recovered(&engine.inner, &uncommitted)?;
        // Only after a crash: the log had changes past its checkpoint (a clean close leaves
        // none, and the open then reads no table page).
        if engine
            .inner
            .recovery
            .is_some_and(|r| r.redo_bytes + r.discarded_bytes > 0)
        {
            // Leaked pages cost space, not correctness: an engine that cannot free them (turned
            // read-only by the recovery, a page it cannot read) still opens.
            if let Err(err) = crate::load::reclaim_pages_of_empty_tables(&engine.inner) {
                tracing::warn!(%err, "could not free the pages of a load cut short; they stay allocated");
            }
        }
        if engine.inner.options.background_purge {
            crate::purge::spawn(&engine.inner)?;
        }
        Ok(engine)
    }

    /// The database directory.
    pub fn dir(&self) -> &Path {
        &self.inner.dir
    }

    /// The page size the database was created with.
    pub fn page_size(&self) -> PageSize {
        self.inner.page_size
    }

    /// Creates a table stored in its own tablespace `tables/<name>.ibd`.
    ///
    /// Names are 1–64 bytes of ASCII letters, digits, `_` and `-`. Options that cannot be
    /// stored (see [`TableOptions`]) are refused with [`Error::InvalidOption`] naming them.
    pub fn create_table(&self, name: &str, options: TableOptions) -> Result<Table> {
        check_table_name(name)?;
        options.check_supported(self.inner.page_size)?;
        self.check_writable()?;
        let mut catalog = self.inner.catalog.lock();
        if catalog.entries.contains_key(name) {
            return Err(Error::TableExists(name.to_owned()));
        }
        let space_id = catalog.next_space_id;
        if space_id >= UNDO_SPACE_ID {
            return Err(Error::Unsupported(format!(
                "no tablespace id is left for table {name:?}: ids reach the undo tablespace's"
            )));
        }
        let index_id = catalog.next_index_id;
        let path = table_path(&self.inner.dir, name).ok_or_else(|| Error::InvalidTableName {
            name: name.to_owned(),
            why: TABLE_NAME_RULE,
        })?;
        let space = Arc::new(
            Tablespace::create(
                &*self.inner.options.resolved_file_system(),
                &path,
                space_id,
                self.inner.page_size,
                FirstPage::IndexRoot(index_id),
                options.stored_page_compression(),
            )?
            .with_row_compression(options.row_format.block_size()),
        );
        let (row_format, key_block_size, page_compression, compression_level) = options.encode();
        catalog.entries.insert(
            name.to_owned(),
            CatalogEntry {
                name: name.to_owned(),
                space_id,
                root_page_no: 1,
                index_id,
                row_format,
                key_block_size,
                page_compression,
                compression_level,
                flags: 0,
            },
        );
        catalog.next_space_id += 1;
        catalog.next_index_id += 1;
        if let Err(err) = catalog.save() {
            catalog.entries.remove(name);
            catalog.next_space_id -= 1;
            catalog.next_index_id -= 1;
            return Err(err);
        }
        let tree = crate::row_compression::open_tree(
            BTree::open(self.inner.ctx.clone(), space_id, 1, index_id),
            options,
            space.row_stats(),
        );
        self.inner.spaces.insert(space);
        let table = Arc::new(TableInner::new(
            self.inner.serial,
            name.to_owned(),
            tree,
            options,
        ));
        self.inner
            .tables
            .write()
            .insert(name.to_owned(), table.clone());
        Ok(Table { inner: table })
    }

    /// A handle to an existing table.
    pub fn table(&self, name: &str) -> Result<Table> {
        self.inner
            .tables
            .read()
            .get(name)
            .map(|inner| Table {
                inner: inner.clone(),
            })
            .ok_or_else(|| Error::NoSuchTable(name.to_owned()))
    }

    /// Alias of [`table`](Self::table).
    pub fn open_table(&self, name: &str) -> Result<Table> {
        self.table(name)
    }

    /// Names of all tables, sorted.
    pub fn list_tables(&self) -> Vec<String> {
        let mut names: Vec<String> = self.inner.tables.read().keys().cloned().collect();
        names.sort();
        names
    }

    /// Drops a table: removes it from the catalog, discards its pages from the pool and deletes
    /// its file. Handles to it then fail with [`Error::StaleTable`].
    pub fn drop_table(&self, name: &str) -> Result<()> {
        self.check_writable()?;
        let _commits = self.inner.unit_lock.lock();
        let entry = {
            let mut catalog = self.inner.catalog.lock();
            let Some(entry) = catalog.entries.remove(name) else {
                return Err(Error::NoSuchTable(name.to_owned()));
            };
            if let Err(err) = catalog.save() {
                catalog.entries.insert(name.to_owned(), entry);
                return Err(err);
            }
            entry
        };
        if let Some(table) = self.inner.tables.write().remove(name) {
            table.dropped.store(true, Ordering::Release);
        }
        self.inner.pool.discard_space(entry.space_id);
        if let Some(space) = self.inner.spaces.remove(entry.space_id) {
            self.inner.spaces.page_writes().forget_file(space.file());
            let fs = self.inner.options.resolved_file_system();
            fs.remove(space.path())?;
            // Otherwise a power loss can bring the file back (harmless but wasted space).
            if let Some(tables_dir) = space.path().parent() {
                fs.sync_dir(tables_dir)?;
            }
        }
        Ok(())
    }

    /// Starts a transaction at the default isolation level (repeatable read).
    pub fn begin(&self) -> Transaction<'_> {
        Transaction::new(self, IsolationLevel::default())
    }

    /// Starts a transaction at `isolation`.
    pub fn begin_with(&self, isolation: IsolationLevel) -> Transaction<'_> {
        Transaction::new(self, isolation)
    }

    /// A consistent snapshot: its reads see exactly the data committed before this call, for
    /// as long as it lives (purge keeps the versions it needs meanwhile).
    pub fn snapshot(&self) -> Snapshot<'_> {
        Snapshot::new(self)
    }

    /// Stores one row (a transaction of one put).
    pub fn put(&self, table: &Table, key: &[u8], value: &[u8]) -> Result<()> {
        let mut tx = self.begin();
        tx.put(table, key, value)?;
        tx.commit()
    }

    /// Deletes one row (a transaction of one delete). Deleting an absent key is not an error.
    pub fn delete(&self, table: &Table, key: &[u8]) -> Result<()> {
        let mut tx = self.begin();
        tx.delete(table, key)?;
        tx.commit()
    }

    /// The value stored under `key`, if any.
    pub fn get(&self, table: &Table, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.get_with(table, key, <[u8]>::to_vec)
    }

    /// Calls `f` with the value stored under `key`, if any, without copying it: `f` sees the
    /// value in place while its page is latched shared (an off-page value, or a version rebuilt
    /// from the undo log, is built first and lent from a buffer). Returns what `f` returns.
    ///
    /// `f` must not call the engine (it would fail with [`Error::CalledFromReadClosure`]: the
    /// call could wait for the latch `f`'s thread holds), nor wait for a thread that writes.
    /// [`get`](Self::get) is this with `f` copying the value.
    pub fn get_with<R>(
        &self,
        table: &Table,
        key: &[u8],
        f: impl FnOnce(&[u8]) -> R,
    ) -> Result<Option<R>> {
        let tree = table.tree_of(self)?;
        self.inner
            .counters
            .rows_read
            .fetch_add(1, Ordering::Relaxed);
        self.inner.mvcc.read_latest_with(table.name(), tree, key, f)
    }

    /// Calls `f` with each row of `table` whose key falls in `range`, ascending, as committed
    /// when the call starts (a read view, as [`range`](Self::range)), until `f` returns
    /// [`ControlFlow::Break`]. Rows are lent in place, as [`get_with`](Self::get_with) lends
    /// a value, under the same rule: `f` must not call the engine. The scan steps from leaf to
    /// leaf without descending again from the root, and copies nothing per row: the fast way
    /// to read many rows. [`range`](Self::range) is the iterator that owns its rows.
    pub fn scan<'r, R: RangeBounds<&'r [u8]>>(
        &self,
        table: &Table,
        range: R,
        mut f: impl FnMut(&[u8], &[u8]) -> ControlFlow<()>,
    ) -> Result<()> {
        let tree = table.tree_of(self)?;
        let view = self.inner.mvcc.trx.read_view(0);
        self.inner.mvcc.scan_in_view(
            table.name(),
            tree,
            &view,
            crate::visit::bounds(&range),
            &mut f,
        )
    }

    /// Iterates over the rows of `table` whose keys fall in `range` (any bounds over byte
    /// slices), ascending; `.rev()` iterates descending.
    pub fn range<'r, R: RangeBounds<&'r [u8]>>(&self, table: &Table, range: R) -> Result<Range> {
        let tree = table.tree_of(self)?;
        let view = Arc::new(self.inner.mvcc.trx.read_view(0));
        Ok(Range::new(
            table.name().to_owned(),
            tree.clone(),
            tree.range(range),
            view,
            self.inner.mvcc.clone(),
        ))
    }

    /// Writes every dirty page, syncs every file and moves the redo log's checkpoint to its
    /// end (InnoDB: a sharp checkpoint): a recovery right after it has nothing to replay. Not
    /// needed for durability (the redo log gives that at commit); the page cleaner moves the
    /// checkpoint in the background.
    ///
    /// A failed page write leaves the page dirty for the next checkpoint to retry. A failed
    /// `fsync` turns the engine read-only ([`Error::ReadOnly`]): after it, the kernel may have
    /// dropped the unwritten data while a retried `fsync` reports success (PostgreSQL's
    /// "fsyncgate"), so nothing written since the last checkpoint can be trusted; the next open
    /// recovers from the redo log.
    pub fn checkpoint(&self) -> Result<()> {
        let _commits = self.inner.unit_lock.lock();
        self.inner.checkpoint()
    }

    /// Checkpoints and closes the database, releasing its lock.
    ///
    /// A read-only engine (after a failed commit, a failed `fsync` or a half-done change) writes
    /// nothing: it returns [`Error::ReadOnly`], and the next open recovers what was committed
    /// (and made durable) from the redo log, as after a crash.
    pub fn close(self) -> Result<()> {
        self.inner.purge_worker.stop();
        let result = if let Some(why) = self.read_only_reason() {
            self.inner.stop_cleaner();
            Err(Error::ReadOnly(format!(
                "{why}; nothing was written at close: the next open recovers the committed \
                 transactions from the redo log"
            )))
        } else {
            // A slow shutdown, as InnoDB's `innodb_fast_shutdown = 0`: purge everything no open
            // reader needs, so the files hold no history a restart would have to purge — with
            // the page cleaner still running, since a purge unit may need log room that only
            // the cleaner makes (a log at its sync point; stopped first, close failed there).
            let purged = loop {
                match crate::purge::purge_batch(&self.inner) {
                    Ok(0) => break Ok(()),
                    Ok(_) => {}
                    Err(err) => break Err(err),
                }
            };
            self.inner.stop_cleaner();
            purged.and_then(|()| {
                let _commits = self.inner.unit_lock.lock();
                self.inner.shut_down_cleanly()
            })
        };
        self.inner.closed.store(true, Ordering::Release);
        self.inner.pool.shutdown();
        // Table handles may outlive the engine (and keep the store alive): its threads may not.
        self.inner.spaces.encoder().shutdown();
        result
    }

    /// A snapshot of the engine's state and counters; its `Display` reads like
    /// `SHOW ENGINE INNODB STATUS`.
    pub fn status(&self) -> EngineStatus {
        let tables = self.inner.tables.read();
        let mut table_status: Vec<TableStatus> = tables
            .values()
            .map(|t| {
                let space = self.inner.spaces.get(t.tree.space());
                let size_pages = space.as_ref().map_or(0, |s| s.size_pages());
                let allocated_bytes = space
                    .as_ref()
                    .and_then(|s| s.file().allocated_bytes().ok())
                    .unwrap_or(0);
                TableStatus {
                    name: t.name.clone(),
                    space_id: t.tree.space(),
                    size_pages,
                    logical_bytes: space.as_ref().map_or(0, |s| s.logical_bytes()),
                    file_bytes: space
                        .as_ref()
                        .and_then(|s| s.file().len().ok())
                        .unwrap_or(0),
                    allocated_bytes,
                    options: t.options,
                }
            })
            .collect();
        table_status.sort_by(|a, b| a.name.cmp(&b.name));
        let c = &self.inner.counters;
        let log = self.inner.log.log();
        let log_stats = log.stats();
        let pool = self.inner.pool.stats();
        let (pages_checked_whole, page_checks_skipped) = self.inner.spaces.page_check_counts();
        EngineStatus {
            page_size: self.inner.page_size,
            pool: pool.clone(),
            current_lsn: log.current_lsn(),
            redo: RedoStatus {
                flushed_lsn: log.flushed_lsn(),
                checkpoint_lsn: log.checkpoint_lsn(),
                checkpoint_age: log.checkpoint_age(),
                modified_age: self
                    .inner
                    .pool
                    .oldest_modification()
                    .map_or(0, |oldest| log.current_lsn().saturating_sub(oldest)),
                capacity: log.capacity(),
                record_bytes: self.inner.log.record_bytes(),
                appends: log_stats.appends,
                writes: log_stats.writes,
                fsyncs: log_stats.fsyncs,
            },
            flushing: self.inner.flushing.status(),
            recovery: self.inner.recovery,
            doublewrite: self.inner.spaces.page_writes().status(),
            locks: self.inner.locks.stats(),
            mvcc: self.inner.mvcc.status(),
            page_compression: {
                let (trims, failures) = self.inner.spaces.page_writes().hole_counts();
                let encoder = self.inner.spaces.encoder();
                encoder
                    .counters()
                    .status(trims, failures, encoder.threads())
            },
            row_compression: crate::row_compression::status(&self.inner, &pool),
            oldest_modification_lsn: self.inner.pool.oldest_modification(),
            pages_checked_whole,
            page_checks_skipped,
            rows_read: c.rows_read.load(Ordering::Relaxed),
            rows_written: c.rows_written.load(Ordering::Relaxed),
            rows_deleted: c.rows_deleted.load(Ordering::Relaxed),
            commits: c.commits.load(Ordering::Relaxed),
            rollbacks: c.rollbacks.load(Ordering::Relaxed),
            checkpoints: c.checkpoints.load(Ordering::Relaxed),
            read_only: self.inner.read_only_reason(),
            tables: table_status,
        }
    }

    /// Changes the page cleaner's settings while the engine runs (InnoDB: `SET GLOBAL
    /// innodb_io_capacity`, `innodb_adaptive_flushing`, …); the next round uses them.
    pub fn set_flush_settings(&self, settings: barracuda_redo::flushing::FlushSettings) {
        self.inner.flushing.set_settings(settings);
    }

    /// The page cleaner's settings in force.
    pub fn flush_settings(&self) -> barracuda_redo::flushing::FlushSettings {
        self.inner.flushing.settings()
    }

    /// Switches the controller that decides how many pages the page cleaner writes per second.
    pub fn set_flush_controller(&self, kind: FlushControllerKind) {
        self.inner.flushing.set_controller(kind);
    }

    /// Turns deadlock detection on or off for lock waits that start from now on (like `SET
    /// GLOBAL innodb_deadlock_detect`).
    pub fn set_deadlock_detect(&self, on: bool) {
        self.inner.locks.set_deadlock_detect(on);
    }

    /// Sets the lock wait timeout for waits that start from now on (like `SET GLOBAL
    /// innodb_lock_wait_timeout`).
    pub fn set_lock_wait_timeout(&self, timeout: Duration) {
        self.inner.locks.set_wait_timeout(timeout);
    }

    /// Switches the free-page policy while the engine runs (Percona:
    /// `SET GLOBAL innodb_empty_free_list_algorithm`).
    pub fn set_free_page_policy(&self, policy: FreePagePolicy) {
        self.inner.pool.set_free_page_policy(policy);
    }

    /// Sets `innodb_lru_scan_depth` at run time.
    pub fn set_lru_scan_depth(&self, pages: usize) {
        self.inner.pool.set_lru_scan_depth(pages);
    }

    /// Sets `innodb_old_blocks_pct` at run time (5–95).
    pub fn set_old_blocks_pct(&self, pct: u32) -> Result<()> {
        if !(5..=95).contains(&pct) {
            return Err(Error::InvalidOption(format!(
                "old_blocks_pct {pct} is outside 5..=95"
            )));
        }
        self.inner.pool.set_old_blocks_pct(pct);
        Ok(())
    }

    /// Sets `innodb_old_blocks_time` at run time.
    pub fn set_old_blocks_time(&self, time: Duration) {
        self.inner.pool.set_old_blocks_time(time);
    }

    /// Turns linear read-ahead on (threshold in pages) or off, and random read-ahead on or off,
    /// without a restart (`innodb_read_ahead_threshold`, `innodb_random_read_ahead`).
    pub fn set_read_ahead(&self, linear_threshold: Option<u32>, random: bool) {
        self.inner.pool.set_read_ahead(ReadAhead {
            linear_threshold,
            random,
        });
    }

    /// Verifies the B-tree of `table` (order, levels, links, overflow chains) and returns its
    /// shape (`records` counts delete-marked records purge has not removed yet; see
    /// `delete_marked`). Meant for a table the caller is not writing to: the check holds the
    /// engine's unit lock, which keeps purge, rollbacks and row writes that need a unit out
    /// meanwhile, but not the in-place writes of the caller's own transactions.
    pub fn check_table(&self, table: &Table) -> Result<barracuda_btree::TreeStats> {
        let tree = table.tree_of(self)?;
        let _purge_and_units = self.inner.unit_lock.lock();
        tree.check().map_err(|e| Error::table(table.name(), e))
    }

    pub(crate) fn check_writable(&self) -> Result<()> {
        match self.read_only_reason() {
            Some(why) => Err(Error::ReadOnly(why)),
            None => Ok(()),
        }
    }

    /// Why the engine is read-only, if it is: its own reason, or the buffer pool's for
    /// stopping page writes (a half-done change found in memory).
    fn read_only_reason(&self) -> Option<String> {
        self.inner.read_only_reason()
    }
}

impl EngineInner {
    /// Turns the engine read-only for good and stops every page write: memory holds changes
    /// that must not reach disk (a batch applied part-way, or data an `fsync` may have lost).
    /// The first reason is kept.
    pub(crate) fn poison(&self, reason: String) {
        self.pool.stop_writes(reason.clone());
        // A unit left open now never closes: commits waiting for it must not wait forever.
        self.log.abandon_units();
        let mut read_only = self.read_only.lock();
        if read_only.is_none() {
            tracing::error!(%reason, "engine turned read-only");
            *read_only = Some(reason);
        }
        self.read_only_set.store(true, Ordering::Release);
    }

    pub(crate) fn read_only_reason(&self) -> Option<String> {
        if !self.read_only_set.load(Ordering::Acquire) {
            return self.pool.writes_stopped();
        }
        self.read_only
            .lock()
            .clone()
            .or_else(|| self.pool.writes_stopped())
    }

    /// A sharp checkpoint: writes every dirty page, then checkpoints. The caller keeps commits
    /// out (or is the last owner, at drop), so no commit unit is open and every page can be
    /// written.
    fn checkpoint(&self) -> Result<()> {
        if let Some(why) = self.read_only_reason() {
            return Err(Error::ReadOnly(why));
        }
        if let Err(err) = self.pool.flush_all() {
            // A page write that failed is retried by the next checkpoint; a sync that failed
            // on the way (before a grown page 0 or a doublewrite area's reuse) is not: the
            // file's `SyncLatch` fails it for good, and the engine turns read-only.
            if let Some(space) = self.spaces.all().iter().find(|s| s.sync_has_failed()) {
                self.poison(format!("fsync of {} failed: {err}", space.path().display()));
            }
            return Err(err.into());
        }
        self.fuzzy_checkpoint()
    }

    /// A fuzzy checkpoint (InnoDB: `log_checkpoint`): moves the log's checkpoint to the oldest
    /// change not yet on disk, without writing pages. Syncs the tablespaces first (the pages
    /// written before the checkpoint must be durable before the log behind it may be reused),
    /// then makes the log durable up to the checkpoint and records it in a checkpoint slot.
    pub(crate) fn fuzzy_checkpoint(&self) -> Result<()> {
        let _one_at_a_time = self.checkpoint_lock.lock();
        if let Some(why) = self.read_only_reason() {
            return Err(Error::ReadOnly(why));
        }
        let limit = self
            .log
            .checkpoint_limit(|| self.pool.oldest_modification());
        let log = self.log.log();
        if limit <= log.checkpoint_lsn() {
            return Ok(());
        }
        for space in self.spaces.all() {
            if let Err(err) = space.sync() {
                self.poison(format!("fsync of {} failed: {err}", space.path().display()));
                return Err(err);
            }
        }
        let written = log
            .wait_durable(limit)
            .and_then(|()| log.write_checkpoint(limit));
        if let Err(err) = written {
            self.poison(format!("the redo log failed: {err}"));
            return Err(err.into());
        }
        self.counters.checkpoints.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// The end of a clean shutdown: after a sharp checkpoint, syncs the log and records in the
    /// catalog that no page was written after it (so a missing log is then harmless).
    fn shut_down_cleanly(&self) -> Result<()> {
        self.checkpoint()?;
        self.spaces.page_writes().sync_pending()?;
        self.log.log().sync()?;
        self.spaces.record_checkpoint(self.log.current_lsn())
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        // Before the engine itself goes: the cleaner and purge hold it between rounds.
        self.inner.purge_worker.stop();
        self.inner.stop_cleaner();
    }
}

impl EngineInner {
    /// Stops the page cleaner thread and waits for it (idempotent).
    fn stop_cleaner(&self) {
        self.flushing.request_stop();
        if let Some(handle) = self.cleaner.lock().take() {
            if handle.join().is_err() {
                tracing::error!("the page cleaner thread panicked");
            }
        }
    }
}

impl Drop for EngineInner {
    fn drop(&mut self) {
        if !self.closed.load(Ordering::Acquire) {
            // Not closed explicitly: checkpoint so a clean process exit keeps data — unless the
            // engine is read-only, when memory holds changes that must not reach disk.
            match self.read_only_reason() {
                Some(why) => {
                    tracing::error!(%why, "engine dropped read-only: nothing written");
                }
                None => {
                    if let Err(err) = self.shut_down_cleanly() {
                        tracing::error!(%err, "checkpoint at drop failed");
                    }
                }
            }
            self.pool.shutdown();
            self.spaces.encoder().shutdown();
        }
    }
}

fn check_table_name(name: &str) -> Result<()> {
    if is_valid_table_name(name) {
        Ok(())
    } else {
        Err(Error::InvalidTableName {
            name: name.to_owned(),
            why: TABLE_NAME_RULE,
        })
    }
}
