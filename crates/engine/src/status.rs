//! `Engine::status()`: typed fields plus a `Display` in the manner of SHOW ENGINE INNODB STATUS.

use std::fmt;

use barracuda_buffer_pool::PoolStats;
use barracuda_lock::LockStats as LockStatus;
use barracuda_page::PageSize;

use crate::compression::PageCompressionStatus;
use crate::options::TableOptions;
use crate::page_cleaner::FlushStatus;
use crate::recovery::RecoveryReport;
use crate::torn_writes::DoublewriteStatus;

/// A snapshot of the engine's state. Later versions add fields (so it cannot be built or
/// destructured exhaustively outside this crate).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct EngineStatus {
    /// The database's page size.
    pub page_size: PageSize,
    /// Buffer pool counters, list lengths and the run-time settings in force (free-page policy,
    /// LRU scan depth, old blocks pct and time, read-ahead).
    pub pool: PoolStats,
    /// The newest LSN: where the next redo record will be appended.
    pub current_lsn: u64,
    /// The redo log: LSNs, checkpoint age, bytes and syncs.
    pub redo: RedoStatus,
    /// The page cleaner and synchronous flushes.
    pub flushing: FlushStatus,
    /// What recovery did when the engine opened (`None` for a new database, or one created
    /// with a log this session).
    pub recovery: Option<RecoveryReport>,
    /// Torn-write protection: the mode in effect and why, doublewrite and untorn-write
    /// counters, torn pages repaired at open.
    pub doublewrite: DoublewriteStatus,
    /// Page compression: pages compressed, bytes saved, holes punched, pages decompressed,
    /// compression errors (MariaDB's counters), and the flush threads compressing.
    pub page_compression: PageCompressionStatus,
    /// Row compression (`ROW_FORMAT=COMPRESSED`): INNODB_CMP per block size, the pool's
    /// compressed blocks and unzip-LRU length, each compressed table's padding.
    pub row_compression: crate::row_compression::RowCompressionStatus,
    /// Multi-versioning: the history list purge works through, transactions and read views
    /// open, what purge removed.
    pub mvcc: MvccStatus,
    /// Row locks: requests, waits and their time, timeouts, deadlock searches (count, steps,
    /// time) and deadlocks, locks held and transactions waiting now, and the settings in force.
    pub locks: LockStatus,
    /// Pages read from disk whose structure (every record, in bounds and in order) was
    /// checked whole, since open.
    pub pages_checked_whole: u64,
    /// Pages read from disk whose image was checked whole earlier in this process (same page,
    /// same checksum), so the check was skipped.
    pub page_checks_skipped: u64,
    /// The oldest modification LSN among dirty pages (what a checkpoint would reach), if any.
    pub oldest_modification_lsn: Option<u64>,
    /// Rows returned by point reads (InnoDB: `Innodb_rows_read`, point reads only).
    pub rows_read: u64,
    /// Rows inserted or replaced by committed transactions.
    pub rows_written: u64,
    /// Rows deleted by committed transactions.
    pub rows_deleted: u64,
    /// Committed transactions.
    pub commits: u64,
    /// Rolled-back (or dropped uncommitted) transactions.
    pub rollbacks: u64,
    /// Checkpoints taken.
    pub checkpoints: u64,
    /// Why the engine refuses writes, if it does.
    pub read_only: Option<String>,
    /// Every table.
    pub tables: Vec<TableStatus>,
}

/// Multi-versioning counters (InnoDB: "History list length" and the purge figures of SHOW
/// ENGINE INNODB STATUS). Later versions add fields.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct MvccStatus {
    /// Committed undo logs not purged yet.
    pub history_list_length: u64,
    /// Read-write transactions open now (from their first lock or write to commit or
    /// rollback).
    pub active_transactions: u64,
    /// Read views open now (scans, transactions that read).
    pub read_views: u64,
    /// Undo logs purged since open.
    pub logs_purged: u64,
    /// Delete-marked rows purge removed since open.
    pub rows_purged: u64,
    /// Transactions the last run left uncommitted (a crash) that this open rolled back.
    pub recovered_rollbacks: u64,
    /// Their row changes taken back.
    pub recovered_rows_undone: u64,
    /// Purged undo logs' header pages kept for new logs (a transaction's first write takes
    /// one instead of allocating a page).
    pub cached_undo_pages: u64,
    /// Undo logs discarded at commit instead of going to the history list: nothing would
    /// ever read or purge them (no read view was open, no delete-mark, no replaced off-page
    /// value).
    pub logs_discarded_at_commit: u64,
    /// Of `logs_purged`, those freed without reading their records: committed by this process
    /// with nothing for purge to do to rows (inserts and inline updates only).
    pub logs_purged_unread: u64,
}

/// The redo log's state. Later versions add fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct RedoStatus {
    /// Every commit unit ending at or below this LSN is synced.
    pub flushed_lsn: u64,
    /// The newest checkpoint: recovery would start here.
    pub checkpoint_lsn: u64,
    /// `current_lsn − checkpoint_lsn`: the log recovery would replay now.
    pub checkpoint_age: u64,
    /// `current_lsn −` the oldest modification of the dirty pages (0 when none is dirty): what
    /// adaptive flushing keeps below the log's async point.
    pub modified_age: u64,
    /// Bytes of the circular log.
    pub capacity: u64,
    /// Bytes of redo records appended since open (framing excluded).
    pub record_bytes: u64,
    /// Mini-transactions and commit-unit ends appended since open.
    pub appends: u64,
    /// Write calls on the log file since open.
    pub writes: u64,
    /// `fdatasync` calls on the log file since open.
    pub fsyncs: u64,
}

/// One table's line in the status. Later versions add fields.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct TableStatus {
    /// The table's name.
    pub name: String,
    /// Its tablespace id.
    pub space_id: u32,
    /// The tablespace's size in pages (file high-water mark).
    pub size_pages: u32,
    /// Its size in pages × the page size: what its pages would take uncompressed.
    pub logical_bytes: u64,
    /// The file's length (holes included).
    pub file_bytes: u64,
    /// Bytes the file occupies on disk (`st_blocks` × 512), which hole punching lowers.
    pub allocated_bytes: u64,
    /// Its options.
    pub options: TableOptions,
}

impl fmt::Display for EngineStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "=====================================")?;
        writeln!(f, "BARRACUDA ENGINE STATUS (page size {})", self.page_size)?;
        writeln!(f, "=====================================")?;
        writeln!(f, "---\nLOG\n---")?;
        writeln!(f, "Log sequence number          {}", self.current_lsn)?;
        match self.oldest_modification_lsn {
            Some(lsn) => writeln!(f, "Oldest modification          {lsn}")?,
            None => writeln!(f, "Oldest modification          (no dirty pages)")?,
        }
        writeln!(f, "Log flushed up to            {}", self.redo.flushed_lsn)?;
        writeln!(
            f,
            "Last checkpoint at           {}",
            self.redo.checkpoint_lsn
        )?;
        writeln!(
            f,
            "Checkpoint age               {} of {} bytes (async flush at {}, sync at {})",
            self.redo.checkpoint_age,
            self.redo.capacity,
            self.flushing.points.max_modified_age_async,
            self.flushing.points.max_modified_age_sync
        )?;
        writeln!(
            f,
            "Redo: {} record bytes, {} appends, {} writes, {} fsyncs",
            self.redo.record_bytes, self.redo.appends, self.redo.writes, self.redo.fsyncs
        )?;
        writeln!(f, "Checkpoints                  {}", self.checkpoints)?;
        let m = &self.flushing.metrics;
        writeln!(
            f,
            "Page cleaner ({:?}): {} pages/s requested, avg {} pages/s, redo {} bytes/s; \
             adaptive total {} pages; sync flush waits {} ({} us, {} pages)",
            self.flushing.controller,
            m.buffer_flush_n_to_flush_requested,
            m.buffer_flush_avg_page_rate,
            m.buffer_flush_lsn_avg_rate,
            self.flushing.buffer_flush_adaptive_total_pages,
            self.flushing.sync_flush_waits,
            self.flushing.sync_flush_wait_us,
            self.flushing.sync_flush_pages
        )?;
        if let Some(r) = &self.recovery {
            writeln!(
                f,
                "Recovered at open: {} bytes of redo from LSN {} in {:?} ({} mtrs, {} pages \
                 written, {} bytes of an incomplete commit discarded)",
                r.redo_bytes,
                r.checkpoint_lsn,
                r.duration,
                r.mtrs,
                r.pages_written,
                r.discarded_bytes
            )?;
        }
        write!(f, "{}", self.doublewrite)?;
        let c = &self.page_compression;
        writeln!(
            f,
            "----------------
PAGE COMPRESSION
----------------"
        )?;
        writeln!(
            f,
            "{} pages compressed ({} bytes saved), {} written plain (no block saved), {} \
             compression errors; {} holes punched, {} punches refused or failed; {} pages \
             decompressed; {} flush threads",
            c.num_pages_page_compressed,
            c.page_compression_saved,
            c.num_pages_written_plain,
            c.num_pages_page_compression_error,
            c.num_page_compressed_trim_op,
            c.num_punch_hole_failures,
            c.num_pages_page_decompressed,
            c.flush_threads
        )?;
        // The pool's Display carries its own section heading.
        write!(f, "{}", self.pool)?;
        writeln!(
            f,
            "Pages read checked whole {}, known from an earlier check {}",
            self.pages_checked_whole, self.page_checks_skipped
        )?;
        let m = &self.mvcc;
        writeln!(f, "------------\nTRANSACTIONS\n------------")?;
        writeln!(
            f,
            "History list length {}; {} active transactions, {} read views; {} undo logs \
             discarded at commit; purged {} undo logs ({} without reading them) and {} \
             delete-marked rows ({} header pages cached for new logs); rolled back {} transactions ({} row changes) left \
             open by a crash",
            m.history_list_length,
            m.active_transactions,
            m.read_views,
            m.logs_discarded_at_commit,
            m.logs_purged,
            m.logs_purged_unread,
            m.rows_purged,
            m.cached_undo_pages,
            m.recovered_rollbacks,
            m.recovered_rows_undone
        )?;
        let l = &self.locks;
        writeln!(f, "---------\nROW LOCKS\n---------")?;
        writeln!(
            f,
            "{} lock requests, {} waits ({} us waited, longest {} us), {} timeouts; {} held now, \
             {} waiting now; lock wait timeout {} ms",
            l.requests,
            l.waits,
            l.wait_time_us,
            l.wait_time_max_us,
            l.timeouts,
            l.held_now,
            l.waiting_now,
            l.wait_timeout_ms
        )?;
        writeln!(
            f,
            "deadlock detection {}: {} searches ({} steps, {} us), {} deadlocks ({} chains too \
             deep)",
            if l.deadlock_detect { "on" } else { "off" },
            l.deadlock_searches,
            l.deadlock_search_steps,
            l.deadlock_search_ns / 1000,
            l.deadlocks,
            l.too_deep
        )?;
        writeln!(f, "--------------\nROW OPERATIONS\n--------------")?;
        writeln!(
            f,
            "{} rows read, {} written, {} deleted; {} commits, {} rollbacks",
            self.rows_read, self.rows_written, self.rows_deleted, self.commits, self.rollbacks
        )?;
        if let Some(why) = &self.read_only {
            writeln!(f, "READ-ONLY: {why}")?;
        }
        writeln!(f, "------\nTABLES\n------")?;
        for t in &self.tables {
            let compression = match t.options.get_page_compression() {
                Some(c) => format!("PAGE_COMPRESSED {c:?}"),
                None => "no page compression".to_owned(),
            };
            writeln!(
                f,
                "{:<24} space {:>5}  {:>10} pages  {:>12} logical bytes  {:>12} file bytes  \
                 {:>12} bytes on disk  {:?}, {compression}",
                t.name,
                t.space_id,
                t.size_pages,
                t.logical_bytes,
                t.file_bytes,
                t.allocated_bytes,
                t.options.get_row_format()
            )?;
        }
        writeln!(
            f,
            "----------------------------\nEND OF BARRACUDA ENGINE STATUS"
        )
    }
}
