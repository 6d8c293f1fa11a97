//! The engine's file-system seam: an engine on a `FaultyFileSystem` keeps every database file
//! there (nothing but `LOCK` on disk), reopens onto the same bytes, reports an injected I/O
//! error naming the file, and — because it syncs the directories it changes — a table created
//! or dropped right before a power loss is still created or dropped after it; a sync of a table
//! file that fails anywhere in a checkpoint turns the engine read-only for good, while a failed
//! sync of the doublewrite file fails only its batch, which the next checkpoint writes again.
#![expect(
    clippy::big_endian_bytes,
    reason = "big-endian keys sort in numeric order under memcmp"
)]
#![expect(
    clippy::unwrap_used,
    reason = "shared helpers called from #[test] fns; allow-unwrap-in-tests covers only the fns"
)]

mod common;

use common::{chain, quiet_cleaner};
use std::path::Path;
use std::sync::Arc;

use barracuda::fs::{FaultError, FaultyFileSystem, FileSystem, OpKind, PageFile};
use barracuda::{Engine, EngineOptions, Error, PageSize, TableOptions};

fn options(fs: &FaultyFileSystem) -> EngineOptions {
    EngineOptions::default()
        .buffer_pool_bytes(1 << 20)
        .file_system(Arc::new(fs.clone()))
}

#[test]
fn tables_round_trip_through_close_and_reopen_on_the_faulty_file_system() {
    let tmp = tempfile::tempdir().unwrap();
    let fs = FaultyFileSystem::new();
    let db = Engine::open(tmp.path(), options(&fs)).unwrap();
    let a = db.create_table("a", TableOptions::default()).unwrap();
    let b = db.create_table("b", TableOptions::default()).unwrap();
    for i in 0..500u32 {
        db.put(&a, &i.to_be_bytes(), &[1; 100]).unwrap();
        db.put(&b, &i.to_be_bytes(), &i.to_le_bytes()).unwrap();
    }
    db.close().unwrap();

    let on_disk: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        on_disk,
        ["LOCK"],
        "every database file went through the seam"
    );
    assert!(fs.exists(&tmp.path().join("system.ibs")).unwrap());
    assert!(fs.exists(&tmp.path().join("tables/a.ibd")).unwrap());

    let db = Engine::open(tmp.path(), options(&fs)).unwrap();
    assert_eq!(db.list_tables(), ["a", "b"]);
    let (a, b) = (db.table("a").unwrap(), db.table("b").unwrap());
    for i in 0..500u32 {
        assert_eq!(db.get(&a, &i.to_be_bytes()).unwrap(), Some(vec![1; 100]));
        assert_eq!(
            db.get(&b, &i.to_be_bytes()).unwrap(),
            Some(i.to_le_bytes().to_vec())
        );
    }
    db.drop_table("a").unwrap();
    assert!(!fs.exists(&tmp.path().join("tables/a.ibd")).unwrap());
    db.close().unwrap();
}

#[test]
fn an_injected_read_error_names_the_table_file() {
    let tmp = tempfile::tempdir().unwrap();
    let fs = FaultyFileSystem::new();
    let db = Engine::open(tmp.path(), options(&fs)).unwrap();
    let t = db.create_table("orders", TableOptions::default()).unwrap();
    db.put(&t, b"k", b"v").unwrap();
    db.close().unwrap();

    let db = Engine::open(tmp.path(), options(&fs)).unwrap();
    let t = db.table("orders").unwrap();
    fs.fail_nth(OpKind::Read, 1, FaultError::Eio);
    let err = db.get(&t, b"k").unwrap_err();
    let text = chain(&err);
    assert!(text.contains("orders.ibd"), "names the file: {text}");
    assert!(text.contains("read"), "names the operation: {text}");
    // The failpoint fired once; the same read now succeeds.
    assert_eq!(db.get(&t, b"k").unwrap(), Some(b"v".to_vec()));
}

#[test]
fn an_injected_error_opening_the_catalog_names_system_ibs() {
    let tmp = tempfile::tempdir().unwrap();
    let fs = FaultyFileSystem::new();
    Engine::open(tmp.path(), options(&fs))
        .unwrap()
        .close()
        .unwrap();
    fs.fail_nth(OpKind::Read, 1, FaultError::Eio);
    let Err(err) = Engine::open(tmp.path(), options(&fs)) else {
        panic!("open must fail when reading system.ibs fails");
    };
    let text = chain(&err);
    assert!(text.contains("system.ibs"), "{text}");
}

#[test]
fn a_table_created_right_before_a_power_loss_exists_after_it() {
    let tmp = tempfile::tempdir().unwrap();
    let fs = FaultyFileSystem::new();
    let db = Engine::open(tmp.path(), options(&fs)).unwrap();
    db.create_table("t", TableOptions::default()).unwrap();
    let table_file = tmp.path().join("tables/t.ibd");
    assert!(
        fs.is_entry_durable(&table_file),
        "create_table returned before the tables/ directory was synced"
    );
    let report = fs.crash().unwrap();
    assert!(report.lost_entries.is_empty(), "{report:?}");
    drop(db); // the crashed "process": its late writes fail and change nothing

    let db = Engine::open(tmp.path(), options(&fs)).unwrap();
    let t = db.table("t").unwrap();
    db.put(&t, b"after", b"crash").unwrap();
    assert_eq!(db.get(&t, b"after").unwrap(), Some(b"crash".to_vec()));
    db.close().unwrap();
}

#[test]
fn a_new_database_survives_a_power_loss_right_after_open() {
    let tmp = tempfile::tempdir().unwrap();
    let fs = FaultyFileSystem::new();
    let db = Engine::open(tmp.path(), options(&fs)).unwrap();
    assert!(fs.is_entry_durable(&tmp.path().join("system.ibs")));
    fs.crash().unwrap();
    drop(db);
    let db = Engine::open(tmp.path(), options(&fs).create_if_missing(false)).unwrap();
    assert!(db.list_tables().is_empty());
}

#[test]
fn a_table_dropped_right_before_a_power_loss_stays_dropped() {
    let tmp = tempfile::tempdir().unwrap();
    let fs = FaultyFileSystem::new();
    let db = Engine::open(tmp.path(), options(&fs)).unwrap();
    db.create_table("gone", TableOptions::default()).unwrap();
    db.checkpoint().unwrap();
    db.drop_table("gone").unwrap();
    let report = fs.crash().unwrap();
    assert!(
        report.restored_entries.is_empty(),
        "the removal was not synced: {report:?}"
    );
    drop(db);

    let db = Engine::open(tmp.path(), options(&fs)).unwrap();
    assert!(db.list_tables().is_empty());
    assert!(!fs
        .exists(Path::new(&tmp.path().join("tables/gone.ibd")))
        .unwrap());
    db.create_table("gone", TableOptions::default()).unwrap();
    db.close().unwrap();
}

/// A database whose table grew (its new length not synced yet) and whose pages are all dirty,
/// with the checkpoint that writes them still to come: the pool holds everything and the
/// cleaner writes nothing by its own choice. One checkpoint writer: the tests count the
/// checkpoint's syncs and writes, which two writers taking batches in turn interleave
/// differently from run to run (a batch written by the other writer after one failed is
/// right — its own copies were durable — but not countable).
fn grown_and_dirty() -> (
    tempfile::TempDir,
    FaultyFileSystem,
    Engine,
    barracuda::Table,
) {
    let tmp = tempfile::tempdir().unwrap();
    let fs = FaultyFileSystem::new();
    let options = EngineOptions::default()
        .page_size(PageSize::K4)
        .buffer_pool_bytes(16 << 20)
        .flush_settings(quiet_cleaner())
        .checkpoint_writers(1)
        .file_system(Arc::new(fs.clone()));
    let db = Engine::open(tmp.path(), options).unwrap();
    let t = db.create_table("t", TableOptions::default()).unwrap();
    let file = fs.file(&table_path(&tmp)).unwrap();
    let created = file.len().unwrap();
    let mut i = 0u32;
    while file.len().unwrap() < created * 4 {
        db.put(&t, &i.to_be_bytes(), &[3; 200]).unwrap();
        i += 1;
    }
    (tmp, fs, db, t)
}

fn table_path(tmp: &tempfile::TempDir) -> std::path::PathBuf {
    tmp.path().join("tables").join("t.ibd")
}

/// A checkpoint syncs the table's file at several points (before a grown page 0 is written,
/// before a doublewrite area is reused, before the checkpoint is recorded). Whichever of those
/// syncs fails, the engine turns read-only at once: the kernel may have dropped pages written
/// before it while a retried sync would report success, so the file remembers the failure
/// and no later sync of it is tried, let alone trusted.
#[test]
fn a_failed_sync_of_a_table_file_anywhere_in_a_checkpoint_turns_the_engine_read_only() {
    // How many syncs of the table file one checkpoint makes.
    let syncs_per_checkpoint = {
        let (tmp, fs, db, _t) = grown_and_dirty();
        let file = fs.file(&table_path(&tmp)).unwrap();
        let before = file.op_count(OpKind::Sync);
        db.checkpoint().unwrap();
        file.op_count(OpKind::Sync) - before
    };
    assert!(syncs_per_checkpoint >= 2, "{syncs_per_checkpoint} syncs");
    for nth in 1..=syncs_per_checkpoint {
        let (tmp, fs, db, t) = grown_and_dirty();
        let file = fs.file(&table_path(&tmp)).unwrap();
        file.fail_nth(OpKind::Sync, nth, FaultError::Eio);
        let before = file.op_count(OpKind::Sync);

        let err = db.checkpoint().unwrap_err();
        assert_eq!(
            file.op_count(OpKind::Sync),
            before + nth,
            "sync {nth} of the checkpoint failed and none came after it: {err}"
        );
        let text = chain(&err);
        assert!(text.contains("t.ibd"), "sync {nth}: names the file: {text}");
        assert!(
            matches!(db.put(&t, b"after", b"v"), Err(Error::ReadOnly(_))),
            "sync {nth}: the engine refuses writes after the failed sync"
        );
        assert!(
            matches!(db.checkpoint(), Err(Error::ReadOnly(_))),
            "sync {nth}: a second checkpoint does not retry the sync into a success"
        );
        assert_eq!(file.op_count(OpKind::Sync), before + nth);
    }
}

/// The doublewrite file's sync, unlike a table file's, may fail and be tried again: a batch
/// rewrites its area before every sync of it, so a retried batch's copies are new writes that
/// the next successful sync makes durable, and nothing written to that file before the failure
/// is needed after it. The batch whose copies did not sync writes nothing in place, its pages
/// stay dirty, the engine stays writable, and the next checkpoint writes them through fresh
/// copies; a power cut after it loses no committed row.
#[test]
fn a_failed_sync_of_the_doublewrite_file_fails_its_batch_and_the_next_checkpoint_writes_it() {
    let (tmp, fs, db, t) = grown_and_dirty();
    let rows = (0u32..u32::MAX)
        .take_while(|i| db.get(&t, &i.to_be_bytes()).unwrap().is_some())
        .count() as u32;
    assert!(rows > 100, "{rows} rows");
    let doublewrite = fs.file(&tmp.path().join("doublewrite.dblwr")).unwrap();
    let table = fs.file(&table_path(&tmp)).unwrap();
    doublewrite.fail_nth(OpKind::Sync, 1, FaultError::Eio);
    let writes_in_place = table.op_count(OpKind::Write);

    let err = db.checkpoint().unwrap_err();
    let text = chain(&err);
    assert!(text.contains("doublewrite.dblwr"), "names the file: {text}");
    assert_eq!(
        table.op_count(OpKind::Write),
        writes_in_place,
        "no page went in place without its durable copy"
    );
    assert!(db.status().pool.dirty_pages > 0, "the pages stay dirty");
    db.put(&t, b"after", b"the failed sync").unwrap();

    db.checkpoint().unwrap();
    assert_eq!(db.status().pool.dirty_pages, 0);
    fs.crash().unwrap();
    drop(db);

    let db = Engine::open(tmp.path(), options(&fs).create_if_missing(false)).unwrap();
    let t = db.table("t").unwrap();
    for i in 0..rows {
        assert_eq!(
            db.get(&t, &i.to_be_bytes()).unwrap(),
            Some(vec![3; 200]),
            "row {i}"
        );
    }
    assert_eq!(
        db.get(&t, b"after").unwrap(),
        Some(b"the failed sync".to_vec())
    );
}
