//! What opening a database does before the engine is assembled: the directory lock, the
//! tables' files, and the redo log — replayed onto the tablespaces (crash recovery) or created.

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};

use barracuda_page::SpaceId;
use barracuda_redo::{log_path, RedoLog, RedoOptions, DEFAULT_START_LSN};

use crate::catalog::Catalog;
use crate::compression::PageEncoder;
use crate::error::{Error, Result};
use crate::layout::{
    table_path, LOCK_FILE, SYSTEM_FILE, TABLE_NAME_RULE, UNDO_FILE, UNDO_SPACE_ID,
};
use crate::options::{EngineOptions, PageCompression, TableOptions};
use crate::recovery::{recover, RecoveryReport, Tables};
use crate::tablespace::{FirstPage, Tablespace};
use crate::torn_writes::PageWrites;

/// Opens the redo log of the database in `dir`, replaying it onto the tablespaces first
/// (crash recovery), or creates it for a new database (or one shut down cleanly by a version
/// without a redo log).
pub(crate) fn open_log(
    fs: &dyn barracuda_io::FileSystem,
    dir: &Path,
    catalog: &Catalog,
    paths: &HashMap<SpaceId, PathBuf>,
    options: &EngineOptions,
    page_writes: &PageWrites,
    encoder: &PageEncoder,
) -> Result<(RedoLog, Option<RecoveryReport>)> {
    let page_size = catalog.page_size();
    let durability = options.durability.of_log();
    if fs.exists(&log_path(dir))? {
        // Recovery's batches are bounded like InnoDB's (a share of the buffer pool).
        let memory_bytes = options.buffer_pool_bytes.max(4 << 20);
        let progress = options.recovery_progress.as_deref();
        let compression = space_compression(catalog)?;
        let tables = Tables {
            spaces: paths,
            compression: &compression,
            page_writes,
            encoder,
        };
        let (log, report) = recover(
            fs,
            dir,
            tables,
            page_size,
            durability,
            memory_bytes,
            progress,
        )?;
        return Ok((log, Some(report)));
    }
    if catalog.pages_after_checkpoint() {
        return Err(Error::UncleanShutdown {
            dir: dir.to_owned(),
            checkpoint_lsn: catalog.flushed_lsn(),
        });
    }
    // No log: a new database, or one shut down cleanly before its log went missing; every
    // change up to the catalog's flushed LSN is on disk (copies below it are never used).
    page_writes.start(paths, catalog.flushed_lsn())?;
    if let Some(progress) = &options.recovery_progress {
        progress.nothing_to_recover();
    }
    // Pages carry LSNs up to the catalog's flushed LSN (a clean shutdown recorded it): the new
    // log starts above them, so its records are never mistaken for older than a page.
    let start_lsn = catalog.flushed_lsn().max(DEFAULT_START_LSN) + 1;
    let capacity = options.resolved_redo_capacity();
    // The log buffer: 8 MiB (MySQL 5.6's `innodb_log_buffer_size`; 8.0 has 16), smaller for a
    // small log (at most an eighth of it, so that a full buffer never holds the checkpoint back
    // by much). The bytes written but not synced are bounded by two buffers (what recovery
    // erases past the end it finds), and a committer that reaches the bound syncs: with 1 MiB
    // a load without per-commit syncs still paid an `fdatasync` every 2 MiB of redo.
    let buffer_bytes = u32::try_from((capacity / 8).min(8 << 20) & !4095).unwrap_or(8 << 20);
    let log = RedoLog::create(
        fs,
        dir,
        &RedoOptions {
            capacity,
            buffer_bytes,
            start_lsn,
            durability,
        },
    )?;
    Ok((log, None))
}

/// Every table's tablespace file, by space id (paths checked to stay inside `dir`).
pub(crate) fn space_paths(dir: &Path, catalog: &Catalog) -> Result<HashMap<SpaceId, PathBuf>> {
    let mut paths: HashMap<SpaceId, PathBuf> = HashMap::new();
    for entry in catalog.entries.values() {
        let path = table_path(dir, &entry.name).ok_or_else(|| Error::Corrupt {
            file: dir.join(SYSTEM_FILE),
            what: format!("table name {:?} is not {TABLE_NAME_RULE}", entry.name),
        })?;
        paths.insert(entry.space_id, path);
    }
    Ok(paths)
}

/// Where the transaction ids of an undo tablespace recreated for a database that has tables
/// start: above any id a row of those tables can carry from before (ids are 48-bit and count
/// up from 1), so every row reads as committed.
const RECREATED_UNDO_FIRST_ID: u64 = 1 << 40;

/// The undo tablespace's file, created (with its transaction system page, synced with its
/// directory entry) if the database has none: a new database — or one whose undo file is gone,
/// when its rows' histories are lost with it: every row then reads as its newest committed
/// version (ids restart above any a row holds), and that is logged.
pub(crate) fn ensure_undo_space(
    fs: &dyn barracuda_io::FileSystem,
    dir: &Path,
    page_size: barracuda_page::PageSize,
    has_tables: bool,
) -> Result<PathBuf> {
    let path = dir.join(UNDO_FILE);
    if !fs.exists(&path)? {
        let max_trx_id = if has_tables {
            tracing::warn!(
                path = %path.display(),
                "the undo tablespace is missing: recreated; rows read as their newest versions"
            );
            RECREATED_UNDO_FIRST_ID
        } else {
            1
        };
        Tablespace::create(
            fs,
            &path,
            UNDO_SPACE_ID,
            page_size,
            FirstPage::TrxSys { max_trx_id },
            None,
        )?;
    }
    Ok(path)
}

/// The page compression of every table that has one, by space id.
fn space_compression(catalog: &Catalog) -> Result<HashMap<SpaceId, PageCompression>> {
    let mut compression = HashMap::new();
    for entry in catalog.entries.values() {
        let options = TableOptions::decode(
            &entry.name,
            (
                entry.row_format,
                entry.key_block_size,
                entry.page_compression,
                entry.compression_level,
            ),
        )?;
        if let Some(c) = options.stored_page_compression() {
            compression.insert(entry.space_id, c);
        }
    }
    Ok(compression)
}

pub(crate) fn lock_dir(dir: &Path) -> Result<File> {
    let path = dir.join(LOCK_FILE);
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| Error::fs(&path, e))?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => Err(Error::Locked {
            dir: dir.to_owned(),
        }),
        Err(std::fs::TryLockError::Error(e)) => Err(Error::fs(&path, e)),
    }
}
