//! A power loss (the fault-injecting file system dropping and tearing every unsynced write) after
//! table pages were written past the last checkpoint loses no committed row: the next open
//! replays the redo log. Without the log, the same database is refused at open
//! (`Error::UncleanShutdown`) instead of served possibly torn; a clean close or drop leaves it
//! clean, so a missing log is then harmless.
//!
//! What would break: a page written before the log is durable up to its LSN (the WAL rule); a
//! checkpoint that passes a change not yet on disk; a commit acknowledged before its log sync;
//! `Drop` that flushes pages without recording a clean shutdown (a later open without the log
//! refused).
#![expect(
    clippy::unwrap_used,
    reason = "shared helpers called from #[test] fns; allow-unwrap-in-tests covers only the fns"
)]

mod common;

use std::sync::Arc;

use barracuda::fs::{FaultyFileSystem, FileSystem, PageFile};
use barracuda::{Durability, Engine, EngineOptions, Error, PageSize, TableOptions};
use common::quiet_cleaner;

fn options(fs: &FaultyFileSystem) -> EngineOptions {
    EngineOptions::default()
        .page_size(PageSize::K4)
        .buffer_pool_bytes(32 * 4096)
        .file_system(Arc::new(fs.clone()))
}

/// Puts rows until the pool has written pages (evictions): far more than 32 frames of data.
fn fill(db: &Engine, table: &barracuda::Table, from: u32) {
    for i in from..from + 3000 {
        db.put(table, format!("k{i:06}").as_bytes(), &[1; 200])
            .unwrap();
    }
    assert!(db.status().pool.pages_written() > 0, "nothing was evicted");
}

/// A database with 3000 committed rows, pages written past the checkpoint, then a power loss
/// (unsynced writes dropped or torn) before any clean shutdown.
fn fill_then_lose_power() -> (tempfile::TempDir, FaultyFileSystem) {
    let tmp = tempfile::tempdir().unwrap();
    let fs = FaultyFileSystem::new();
    let db = Engine::open(tmp.path(), options(&fs)).unwrap();
    let t = db.create_table("t", TableOptions::default()).unwrap();
    fill(&db, &t, 0);
    fs.crash().unwrap();
    drop(db); // its files died with the crash: the drop's checkpoint cannot write
    (tmp, fs)
}

fn count(db: &Engine, table: &barracuda::Table) -> usize {
    db.range(table, ..).unwrap().count()
}

#[test]
fn a_power_loss_after_pages_were_written_past_the_checkpoint_loses_no_committed_row() {
    let (tmp, fs) = fill_then_lose_power();

    let db = Engine::open(tmp.path(), options(&fs)).unwrap();
    let recovery = db.status().recovery.expect("the open recovered");
    assert!(
        recovery.redo_bytes > 0 && recovery.pages_written > 0,
        "{recovery:?}"
    );
    let t = db.table("t").unwrap();
    db.check_table(&t).unwrap();
    assert_eq!(count(&db, &t), 3000);
    db.close().unwrap();
}

#[test]
fn without_its_redo_log_a_power_loss_is_refused_at_open() {
    let (tmp, fs) = fill_then_lose_power();
    fs.remove(&barracuda::redo_log_path(tmp.path())).unwrap();

    let err = Engine::open(tmp.path(), options(&fs))
        .err()
        .expect("open refused");
    assert!(
        matches!(err, Error::UncleanShutdown { .. }),
        "expected UncleanShutdown, got {err}"
    );
    assert!(err.to_string().contains("not shut down cleanly"), "{err}");
}

#[test]
fn a_power_loss_right_after_a_checkpoint_keeps_the_checkpointed_rows() {
    let tmp = tempfile::tempdir().unwrap();
    let fs = FaultyFileSystem::new();
    let db = Engine::open(tmp.path(), options(&fs)).unwrap();
    let t = db.create_table("t", TableOptions::default()).unwrap();
    fill(&db, &t, 0);
    db.checkpoint().unwrap();
    fs.crash().unwrap();
    drop(db);

    let db = Engine::open(tmp.path(), options(&fs)).unwrap();
    let t = db.table("t").unwrap();
    db.check_table(&t).unwrap();
    assert_eq!(count(&db, &t), 3000);
    db.close().unwrap();
}

#[test]
fn a_clean_close_and_a_drop_leave_the_database_clean() {
    let tmp = tempfile::tempdir().unwrap();
    let fs = FaultyFileSystem::new();
    let db = Engine::open(tmp.path(), options(&fs)).unwrap();
    let t = db.create_table("t", TableOptions::default()).unwrap();
    fill(&db, &t, 0);
    db.close().unwrap();

    let db = Engine::open(tmp.path(), options(&fs)).unwrap();
    let t = db.table("t").unwrap();
    fill(&db, &t, 3000);
    drop(db); // a clean process exit checkpoints too

    let db = Engine::open(tmp.path(), options(&fs)).unwrap();
    let t = db.table("t").unwrap();
    assert_eq!(count(&db, &t), 6000);
    db.close().unwrap();
}

/// A table's file grows without a sync (the growth becomes durable with the next sync of the
/// file, at the latest before a page 0 recording it is written), so a power cut can take a
/// growth back while the log holds the commits that allocated pages in it. Recovery then
/// rebuilds those pages from the log past the file's end, and before it writes the page 0 that
/// records the grown size it makes the file that long: the next open's check that the file
/// holds every page its header counts passes, and the rows are all there.
#[test]
fn a_growth_a_power_cut_took_back_is_rebuilt_from_the_log() {
    let tmp = tempfile::tempdir().unwrap();
    let fs = FaultyFileSystem::new();
    // A pool that holds everything and a cleaner that writes nothing by its own choice: no
    // table page is written before the cut, so nothing syncs the table's file after the
    // growth.
    let options = EngineOptions::default()
        .page_size(PageSize::K4)
        .buffer_pool_bytes(16 << 20)
        .durability(Durability::SyncEachCommit)
        .flush_settings(quiet_cleaner())
        .file_system(Arc::new(fs.clone()));
    let db = Engine::open(tmp.path(), options.clone()).unwrap();
    let t = db.create_table("t", TableOptions::default()).unwrap();
    let path = tmp.path().join("tables").join("t.ibd");
    let created = fs.file(&path).unwrap().len().unwrap();
    let mut rows = 0u32;
    while fs.file(&path).unwrap().len().unwrap() == created {
        let mut tx = db.begin();
        for i in rows..rows + 100 {
            tx.put(&t, format!("k{i:06}").as_bytes(), &[7; 200])
                .unwrap();
        }
        tx.commit().unwrap();
        rows += 100;
    }
    let grown = fs.file(&path).unwrap().len().unwrap();
    assert_eq!(db.status().pool.pages_written(), 0, "a page was written");

    fs.crash().unwrap();
    drop(db);
    assert_eq!(
        fs.file(&path).unwrap().len().unwrap(),
        created,
        "the power cut took the growth to {grown} bytes back"
    );

    let db = Engine::open(tmp.path(), options.clone()).unwrap();
    let t = db.table("t").unwrap();
    db.check_table(&t).unwrap();
    assert_eq!(count(&db, &t), rows as usize);
    db.close().unwrap();
    assert!(
        fs.file(&path).unwrap().len().unwrap() >= grown,
        "recovery made the file as long as its header says"
    );

    // The open path checks that the file holds every page page 0 counts.
    let db = Engine::open(tmp.path(), options).unwrap();
    let t = db.table("t").unwrap();
    db.check_table(&t).unwrap();
    assert_eq!(count(&db, &t), rows as usize);
    db.close().unwrap();
}
