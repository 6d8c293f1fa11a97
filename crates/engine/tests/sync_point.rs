//! The redo log's sync point through the public API. A workload whose redo outruns the page
//! cleaner crosses the sync point; its commits wait for the cleaner to flush (counted and timed
//! in `status().flushing`) and every one of them finishes. A page write failing while the
//! cleaner serves them comes back to the waiting committer as an error naming the file — with
//! nothing of its transaction applied and the engine still writable — not as a hang. And
//! `close`, whose final purge needs log room, still finds the cleaner there to make it.
#![expect(
    clippy::big_endian_bytes,
    reason = "big-endian keys sort in numeric order under memcmp"
)]
#![allow(clippy::unwrap_used, reason = "a failed unwrap is a failed test")]

mod common;

use std::collections::BTreeMap;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use barracuda::fs::{FaultError, FaultyFileSystem, OpKind};
use barracuda::{
    Durability, Engine, EngineOptions, Error, FlushSettings, IoErrorKind, PageSize, Table,
    TableOptions,
};
use common::chain;

/// Keys the workloads update: 4,000 rows of 100 bytes, about 150 pages of 4 KiB — more than
/// the slow cleaner below writes in 3 s, while the commits fill the log to its sync point in
/// well under a second.
const KEYS: u32 = 4_000;
/// A workload that has not reached the sync point after this many commits is a failed test.
const MAX_COMMITS: u32 = 200_000;
/// How long a test may take before it counts as hung (a committer waiting for ever).
const HUNG: Duration = Duration::from_mins(5);

/// A page cleaner far slower than the commits: adaptive flushing off (no deadlines; the
/// redo-age term only past the async point), the smallest capacities, nothing flushed when
/// idle. Its first second writes nothing at all (InnoDB's controller only records where the
/// redo starts), so the log's 1 MiB fills to the sync point long before it catches up.
fn slow_cleaner() -> FlushSettings {
    let mut s = FlushSettings::default();
    s.set_adaptive_flushing(false);
    s.set_io_capacity(100).unwrap();
    s.set_io_capacity_max(100).unwrap();
    s.set_idle_flush_pct(0).unwrap();
    s
}

fn options(fs: &FaultyFileSystem) -> EngineOptions {
    EngineOptions::default()
        .page_size(PageSize::K4)
        .buffer_pool_bytes(4 << 20)
        .redo_log_capacity(1 << 20)
        .durability(Durability::SyncEverySecond)
        .flush_settings(slow_cleaner())
        .file_system(Arc::new(fs.clone()))
}

fn key(i: u32) -> [u8; 4] {
    i.to_be_bytes()
}

/// Row `i`'s value after its `version`-th update.
fn value(i: u32, version: u32) -> Vec<u8> {
    let mut v = vec![(i ^ version) as u8; 100];
    v[..4].copy_from_slice(&version.to_le_bytes());
    v
}

/// Runs `body` on a thread and fails the test if it does not finish within [`HUNG`].
fn within_bound<T: Send + 'static>(body: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        // The receiver is gone only if the test already failed.
        let _ = tx.send(body());
    });
    match rx.recv_timeout(HUNG) {
        Ok(result) => result,
        Err(mpsc::RecvTimeoutError::Timeout) => {
            panic!("the workload did not finish within {HUNG:?}: hung?")
        }
        Err(mpsc::RecvTimeoutError::Disconnected) => panic!("the workload panicked (above)"),
    }
}

fn load(db: &Engine) -> (Table, BTreeMap<u32, Vec<u8>>) {
    let table = db.create_table("t", TableOptions::default()).unwrap();
    // In transactions of 500 rows: all 4,000 in one would not fit in the 1 MiB log.
    for first in (0..KEYS).step_by(500) {
        let mut tx = db.begin();
        for i in first..first + 500 {
            tx.put(&table, &key(i), &value(i, 0)).unwrap();
        }
        tx.commit().unwrap();
    }
    (table, (0..KEYS).map(|i| (i, value(i, 0))).collect())
}

fn check(db: &Engine, table: &Table, model: &BTreeMap<u32, Vec<u8>>) {
    db.check_table(table).unwrap();
    let rows: BTreeMap<u32, Vec<u8>> = db
        .range(table, ..)
        .unwrap()
        .map(|kv| {
            let (k, v) = kv.unwrap();
            (u32::from_be_bytes(k.try_into().unwrap()), v)
        })
        .collect();
    assert!(rows == *model, "the table differs from the model");
}

#[test]
fn a_workload_crossing_the_sync_point_finishes_and_its_waits_are_counted() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_owned();
    let fs = FaultyFileSystem::new();
    let opened = options(&fs);
    let (status, model) = within_bound(move || {
        let db = Engine::open(&dir, opened).unwrap();
        let (table, model) = load(&db);
        let model = std::sync::Mutex::new(model);
        // Two threads, each updating its own half of the keys (so the model is exact), until
        // the log has been at the sync point a good many times.
        std::thread::scope(|s| {
            for half in 0..2u32 {
                let (db, table, model) = (&db, &table, &model);
                s.spawn(move || {
                    for n in 1..=MAX_COMMITS {
                        // status() is not cheap in a debug build: look now and then.
                        if n.is_multiple_of(64) && db.status().flushing.sync_flush_waits >= 20 {
                            return;
                        }
                        let i = (n * 7919 + half) % KEYS / 2 * 2 + half;
                        db.put(table, &key(i), &value(i, n)).unwrap();
                        model.lock().unwrap().insert(i, value(i, n));
                    }
                    panic!("{MAX_COMMITS} commits never reached the sync point 20 times");
                });
            }
        });
        let model = model.into_inner().unwrap();
        let status = db.status();
        check(&db, &table, &model);
        db.close().unwrap();
        (status, model)
    });
    let f = &status.flushing;
    assert!(f.sync_flush_waits >= 20, "{f:?}");
    assert!(
        f.sync_flush_pages > 0 && f.sync_flush_wait_us > 0,
        "the cleaner wrote pages for the waiting commits, and they waited: {f:?}"
    );
    assert!(
        status.redo.checkpoint_age < f.points.max_checkpoint_age,
        "the log never overran its checkpoint: {status:?}"
    );
    assert_eq!(status.read_only, None);

    let db = Engine::open(tmp.path(), options(&fs)).unwrap();
    let table = db.table("t").unwrap();
    check(&db, &table, &model);
    db.close().unwrap();
}

#[test]
fn a_page_write_failing_at_the_sync_point_is_the_committers_error() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_owned();
    let fs = FaultyFileSystem::new();
    let opened = options(&fs);
    let table_file = tmp.path().join("tables").join("t.ibd");
    within_bound(move || {
        let db = Engine::open(&dir, opened).unwrap();
        let (table, mut model) = load(&db);
        let mut n = 0u32;
        let update = |db: &Engine, n: &mut u32, model: &mut BTreeMap<u32, Vec<u8>>| {
            *n += 1;
            let i = *n * 7919 % KEYS;
            let result = db.put(&table, &key(i), &value(i, *n));
            if result.is_ok() {
                model.insert(i, value(i, *n));
            }
            result
        };
        while !n.is_multiple_of(64) || db.status().flushing.sync_flush_waits == 0 {
            update(&db, &mut n, &mut model).unwrap();
            assert!(n < MAX_COMMITS, "{n} commits never reached the sync point");
        }
        // Every write of the table's file fails from now on (each failpoint fires once).
        let file = fs.file(&table_file).expect("the table's file exists");
        for nth in 1..=5_000 {
            file.fail_nth(OpKind::Write, nth, FaultError::Eio);
        }
        let err = loop {
            match update(&db, &mut n, &mut model) {
                Ok(()) => assert!(n < 2 * MAX_COMMITS, "no commit failed"),
                Err(err) => break err,
            }
        };
        let text = chain(&err);
        assert!(
            matches!(
                err,
                Error::Io {
                    kind: IoErrorKind::DeviceError,
                    ..
                }
            ),
            "the cleaner's own error, typed: {text}"
        );
        assert!(
            text.contains("t.ibd"),
            "names the file it failed to write: {text}"
        );
        assert_eq!(
            db.status().read_only,
            None,
            "a failed page write leaves the page dirty; the engine stays writable"
        );
        file.clear_failpoints();
        for _ in 0..2_000 {
            update(&db, &mut n, &mut model).unwrap();
        }
        check(&db, &table, &model);
        assert!(db.status().flushing.sync_flush_waits > 1);
        db.close().unwrap();
    });
}

/// `close` purges the whole history before it writes its checkpoint (a slow shutdown), and
/// each purge unit needs log room. With the log at its sync point, only the page cleaner makes
/// room: close once stopped the cleaner before that purge and failed with "cleaner stopped".
#[test]
fn close_purges_a_history_left_at_the_sync_point() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_owned();
    let fs = FaultyFileSystem::new();
    let opened = options(&fs).background_purge(false);
    let model = within_bound(move || {
        let db = Engine::open(&dir, opened).unwrap();
        let (table, mut model) = load(&db);
        // Updates committed while a snapshot is open go to the history list (none is
        // discarded at commit), and nothing purges them while it runs.
        let snapshot = db.snapshot();
        let mut n = 0u32;
        while !n.is_multiple_of(64) || db.status().flushing.sync_flush_waits == 0 {
            n += 1;
            let i = n * 7919 % KEYS;
            db.put(&table, &key(i), &value(i, n)).unwrap();
            model.insert(i, value(i, n));
            assert!(n < MAX_COMMITS, "{n} commits never reached the sync point");
        }
        drop(snapshot);
        assert!(db.status().mvcc.history_list_length > 0);
        db.close().unwrap();
        model
    });
    let db = Engine::open(tmp.path(), options(&fs)).unwrap();
    assert_eq!(
        db.status().mvcc.history_list_length,
        0,
        "close purged it all"
    );
    let table = db.table("t").unwrap();
    check(&db, &table, &model);
    db.close().unwrap();
}
