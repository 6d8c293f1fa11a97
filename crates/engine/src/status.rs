//! `Engine::status()`: typed fields plus a `Display` in the manner of SHOW ENGINE INNODB STATUS.

use std::fmt;

use barracuda_buffer_pool::PoolStats;
use barracuda_page::PageSize;

use crate::options::TableOptions;

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
    /// The newest LSN handed out (a placeholder counter until the redo log lands).
    pub current_lsn: u64,
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
    /// Bytes the file occupies on disk (`st_blocks`), which hole punching lowers.
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
        writeln!(f, "Checkpoints                  {}", self.checkpoints)?;
        // The pool's Display carries its own section heading.
        write!(f, "{}", self.pool)?;
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
            writeln!(
                f,
                "{:<24} space {:>5}  {:>10} pages  {:>12} bytes on disk  {:?}",
                t.name,
                t.space_id,
                t.size_pages,
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
