//! Transactions through the public API (issue 11): writes in place seen by their own
//! transaction only, rollback from undo (overflow values included), isolation levels,
//! snapshots, ranges inside a transaction, concurrent writers, and purge leaving nothing
//! delete-marked behind.
#![expect(
    clippy::unwrap_used,
    reason = "shared helpers called from #[test] fns; allow-unwrap-in-tests covers only the fns"
)]

use std::collections::BTreeMap;
use std::sync::mpsc;
use std::thread;

use barracuda::{Engine, EngineOptions, IsolationLevel, PageSize, Table, TableOptions};

fn open(dir: &std::path::Path) -> Engine {
    Engine::open(
        dir,
        EngineOptions::default()
            .page_size(PageSize::K4)
            .buffer_pool_bytes(1 << 20)
            .background_purge(false),
    )
    .unwrap()
}

fn rows(db: &Engine, t: &Table) -> BTreeMap<Vec<u8>, Vec<u8>> {
    db.range(t, ..).unwrap().map(Result::unwrap).collect()
}

/// The key of `k`: big-endian, so that keys sort as numbers.
#[expect(clippy::big_endian_bytes, reason = "keys compare as bytes")]
fn key(k: u32) -> [u8; 4] {
    k.to_be_bytes()
}

/// Values on 4 KiB pages: small ones inline, large ones in overflow chains.
fn value(tag: u8, len: usize) -> Vec<u8> {
    (0..len).map(|i| tag ^ (i % 251) as u8).collect()
}

#[test]
fn rollback_restores_every_row_including_overflow_values() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let t = db.create_table("t", TableOptions::default()).unwrap();
    let mut tx = db.begin();
    for k in 0..40u8 {
        let len = if k % 3 == 0 { 9000 } else { 200 };
        tx.put(&t, &[k], &value(k, len)).unwrap();
    }
    tx.commit().unwrap();
    let before = rows(&db, &t);
    let stats_before = db.check_table(&t).unwrap();
    assert!(stats_before.overflow_pages > 0);

    let mut tx = db.begin();
    for k in 0..40u8 {
        match k % 4 {
            // inline → overflow, overflow → inline, overflow → overflow
            0 => tx.put(&t, &[k], &value(k + 100, 12_000)).unwrap(),
            1 => tx.put(&t, &[k], &value(k + 100, 50)).unwrap(),
            2 => tx.delete(&t, &[k]).unwrap(),
            _ => {
                tx.put(&t, &[k], &value(k + 100, 7000)).unwrap();
                tx.put(&t, &[k], &value(k + 101, 300)).unwrap();
            }
        }
    }
    for k in 100..120u8 {
        tx.put(&t, &[k], &value(k, 5000)).unwrap();
    }
    // The transaction sees its writes; everyone else sees the committed rows.
    assert_eq!(tx.get(&t, &[0]).unwrap(), Some(value(100, 12_000)));
    assert_eq!(tx.get(&t, &[2]).unwrap(), None);
    assert_eq!(tx.get(&t, &[105]).unwrap(), Some(value(105, 5000)));
    assert_eq!(db.get(&t, &[0]).unwrap(), before.get(&[0][..]).cloned());
    assert_eq!(db.get(&t, &[105]).unwrap(), None);
    assert_eq!(rows(&db, &t), before);

    tx.rollback().unwrap();
    assert_eq!(rows(&db, &t), before);
    let stats = db.check_table(&t).unwrap();
    assert_eq!(stats.records, stats_before.records);
    assert_eq!(stats.overflow_pages, stats_before.overflow_pages);
    assert_eq!(stats.delete_marked, 0);
    assert_eq!(db.status().mvcc.active_transactions, 0);
    db.close().unwrap();
    // And the rollback is durable.
    let db = open(dir.path());
    let t = db.table("t").unwrap();
    assert_eq!(rows(&db, &t), before);
}

/// Rolling back values far larger than the pool (64 frames; 3 MiB of new value and 3 MiB of
/// replaced value, 768 chain pages each) frees their chains inside redo commit units without a
/// frame per chain page, and leaves the engine writable and the file consistent.
#[test]
fn rolling_back_values_larger_than_the_pool_frees_their_chains() {
    let dir = tempfile::tempdir().unwrap();
    let options = || {
        EngineOptions::default()
            .page_size(PageSize::K4)
            .buffer_pool_bytes(64 * 4096)
            .background_purge(false)
    };
    let db = Engine::open(dir.path(), options()).unwrap();
    let t = db.create_table("t", TableOptions::default()).unwrap();
    let big = 3 << 20;
    db.put(&t, b"kept", &value(1, big)).unwrap();
    let mut tx = db.begin();
    tx.put(&t, b"kept", &value(2, big)).unwrap();
    tx.put(&t, b"new", &value(3, big)).unwrap();
    tx.rollback().unwrap();
    assert_eq!(db.get(&t, b"kept").unwrap(), Some(value(1, big)));
    assert_eq!(db.get(&t, b"new").unwrap(), None);
    // Still writable, and the pages the rollback freed are allocated again.
    let file = dir.path().join("tables/t.ibd");
    let file_bytes = std::fs::metadata(&file).unwrap().len();
    let pages_before = db.check_table(&t).unwrap().overflow_pages;
    db.put(&t, b"new", &value(4, big)).unwrap();
    assert_eq!(db.check_table(&t).unwrap().overflow_pages, 2 * pages_before);
    db.close().unwrap();
    assert_eq!(
        std::fs::metadata(&file).unwrap().len(),
        file_bytes,
        "pages reused"
    );
    let report = barracuda::inspect::check_database(dir.path()).unwrap();
    assert!(report.is_clean(), "{report}");
    let db = Engine::open(dir.path(), options()).unwrap();
    let t = db.table("t").unwrap();
    assert_eq!(db.get(&t, b"kept").unwrap(), Some(value(1, big)));
    assert_eq!(db.get(&t, b"new").unwrap(), Some(value(4, big)));
}

/// A commit with no read view open, whose log holds only inserts and inline updates, discards
/// its log (no history, no purge); an open snapshot, a delete or a replaced off-page value
/// sends the log to the history list instead. Readers see the right versions either way, also
/// after the discarded logs' pages have been reused many times.
#[test]
fn logs_no_view_can_need_are_discarded_at_commit_and_others_go_to_history() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let t = db.create_table("t", TableOptions::default()).unwrap();
    let discarded = |db: &Engine| db.status().mvcc.logs_discarded_at_commit;
    let history = |db: &Engine| db.status().mvcc.history_list_length;
    db.put(&t, &key(1), &value(1, 100)).unwrap();
    db.put(&t, &key(2), &value(2, 9000)).unwrap();
    assert_eq!((discarded(&db), history(&db)), (2, 0), "two inserts");
    for round in 0..300u32 {
        let tag = u8::try_from(round % 256).unwrap();
        db.put(&t, &key(1), &value(tag, 100)).unwrap();
    }
    assert_eq!((discarded(&db), history(&db)), (302, 0), "inline updates");

    // A snapshot open: the update's log is kept for it.
    let snapshot = db.snapshot();
    db.put(&t, &key(1), &value(77, 100)).unwrap();
    assert_eq!((discarded(&db), history(&db)), (302, 1));
    assert_eq!(
        snapshot.get(&t, &key(1)).unwrap(),
        Some(value(43, 100)),
        "round 299's value"
    );
    drop(snapshot);

    // Replacing an off-page value (purge frees its chain) and a delete (purge removes the row).
    db.put(&t, &key(2), &value(3, 50)).unwrap();
    db.delete(&t, &key(1)).unwrap();
    assert_eq!((discarded(&db), history(&db)), (302, 3));

    // A view opened after discarded commits reads their versions.
    let mut tx = db.begin();
    tx.put(&t, &key(3), &value(4, 10)).unwrap();
    tx.commit().unwrap();
    assert_eq!(discarded(&db), 303);
    let snapshot = db.snapshot();
    assert_eq!(snapshot.get(&t, &key(3)).unwrap(), Some(value(4, 10)));
    assert_eq!(snapshot.get(&t, &key(2)).unwrap(), Some(value(3, 50)));
    assert_eq!(snapshot.get(&t, &key(1)).unwrap(), None);
    drop(snapshot);
    db.close().unwrap();
    let report = barracuda::inspect::check_database(dir.path()).unwrap();
    assert!(report.is_clean(), "{report}");
}

/// Purge frees a history log that holds only inserts without reading its records (a
/// 2,000-row transaction's log spans several undo pages, so it goes to the history list rather
/// than being discarded at commit), and still reads a log with a delete, whose row must go.
#[test]
fn insert_only_history_logs_are_purged_unread_and_others_read() {
    let dir = tempfile::tempdir().unwrap();
    let options = EngineOptions::default()
        .page_size(PageSize::K4)
        .buffer_pool_bytes(8 << 20);
    let db = Engine::open(dir.path(), options).unwrap();
    let t = db.create_table("t", TableOptions::default()).unwrap();
    let mut tx = db.begin();
    for k in 0..2000 {
        tx.put(&t, &key(k), &value(1, 20)).unwrap();
    }
    tx.commit().unwrap();
    db.delete(&t, &key(5)).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    // `logs_purged` counts a batch once its logs have left the history list.
    while db.status().mvcc.logs_purged < 2 {
        assert!(
            std::time::Instant::now() < deadline,
            "purge never took both logs: {:?}",
            db.status().mvcc
        );
        thread::yield_now();
    }
    let m = db.status().mvcc;
    assert_eq!(m.history_list_length, 0, "{m:?}");
    assert_eq!(m.logs_purged_unread, 1, "the insert-only log: {m:?}");
    assert_eq!(m.rows_purged, 1, "the deleted row: {m:?}");
    assert_eq!(db.check_table(&t).unwrap().delete_marked, 0);
    assert_eq!(db.get(&t, &key(5)).unwrap(), None);
    assert_eq!(db.get(&t, &key(6)).unwrap(), Some(value(1, 20)));
    db.close().unwrap();
    let report = barracuda::inspect::check_database(dir.path()).unwrap();
    assert!(report.is_clean(), "{report}");
}

#[test]
fn a_dropped_transaction_is_rolled_back() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let t = db.create_table("t", TableOptions::default()).unwrap();
    db.put(&t, b"a", b"1").unwrap();
    {
        let mut tx = db.begin();
        tx.put(&t, b"a", b"2").unwrap();
        tx.put(&t, b"b", b"2").unwrap();
    }
    assert_eq!(db.get(&t, b"a").unwrap().as_deref(), Some(&b"1"[..]));
    assert_eq!(db.get(&t, b"b").unwrap(), None);
    // The locks went with it.
    db.put(&t, b"a", b"3").unwrap();
    assert_eq!(db.status().rollbacks, 1);
}

#[test]
fn a_range_inside_a_transaction_sees_its_own_writes() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let t = db.create_table("t", TableOptions::default()).unwrap();
    for k in [b"a", b"c", b"e"] {
        db.put(&t, k, b"old").unwrap();
    }
    for isolation in [
        IsolationLevel::RepeatableRead,
        IsolationLevel::ReadCommitted,
    ] {
        let mut tx = db.begin_with(isolation);
        // A read before the first write: the view it opens must still show the writes.
        assert_eq!(tx.range(&t, ..).unwrap().count(), 3);
        tx.put(&t, b"b", b"new").unwrap();
        tx.put(&t, b"c", b"new").unwrap();
        tx.delete(&t, b"e").unwrap();
        let seen: Vec<(Vec<u8>, Vec<u8>)> = tx.range(&t, ..).unwrap().map(Result::unwrap).collect();
        let want: Vec<(Vec<u8>, Vec<u8>)> = [(b"a", b"old"), (b"b", b"new"), (b"c", b"new")]
            .iter()
            .map(|(k, v)| (k.to_vec(), v.to_vec()))
            .collect();
        assert_eq!(seen, want, "{isolation:?}");
        let back: Vec<Vec<u8>> = tx
            .range(&t, &b"b"[..]..)
            .unwrap()
            .rev()
            .map(|r| r.unwrap().0)
            .collect();
        assert_eq!(back, vec![b"c".to_vec(), b"b".to_vec()], "{isolation:?}");
        // Nobody else sees them.
        assert_eq!(rows(&db, &t).len(), 3);
        tx.rollback().unwrap();
    }
}

#[test]
fn read_committed_sees_each_commit_and_repeatable_read_does_not() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let t = db.create_table("t", TableOptions::default()).unwrap();
    db.put(&t, b"k", b"1").unwrap();
    let rr = db.begin_with(IsolationLevel::RepeatableRead);
    let rc = db.begin_with(IsolationLevel::ReadCommitted);
    let snapshot = db.snapshot();
    assert_eq!(rr.get(&t, b"k").unwrap().as_deref(), Some(&b"1"[..]));
    assert_eq!(rc.get(&t, b"k").unwrap().as_deref(), Some(&b"1"[..]));
    db.put(&t, b"k", b"2").unwrap();
    db.put(&t, b"new", b"x").unwrap();
    assert_eq!(rr.get(&t, b"k").unwrap().as_deref(), Some(&b"1"[..]));
    assert_eq!(rr.range(&t, ..).unwrap().count(), 1);
    assert_eq!(rc.get(&t, b"k").unwrap().as_deref(), Some(&b"2"[..]));
    assert_eq!(rc.range(&t, ..).unwrap().count(), 2);
    assert_eq!(snapshot.get(&t, b"k").unwrap().as_deref(), Some(&b"1"[..]));
    assert_eq!(snapshot.get(&t, b"new").unwrap(), None);
    assert_eq!(snapshot.range(&t, ..).unwrap().count(), 1);
    assert_eq!(db.get(&t, b"k").unwrap().as_deref(), Some(&b"2"[..]));
    assert_eq!(rr.isolation(), IsolationLevel::RepeatableRead);
}

#[test]
fn a_snapshot_never_sees_a_change_committed_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let t = db.create_table("t", TableOptions::default()).unwrap();
    let mut model = BTreeMap::new();
    for k in 0..200u32 {
        let v = value(k as u8, if k % 10 == 0 { 6000 } else { 100 });
        db.put(&t, &key(k), &v).unwrap();
        model.insert(key(k).to_vec(), v);
    }
    let snapshot = db.snapshot();
    for round in 0..5u8 {
        let mut tx = db.begin();
        for k in (u32::from(round)..200).step_by(3) {
            if k % 2 == 0 {
                tx.delete(&t, &key(k)).unwrap();
            } else {
                tx.put(&t, &key(k), &value(round, 7000)).unwrap();
            }
        }
        tx.commit().unwrap();
        let seen: BTreeMap<Vec<u8>, Vec<u8>> = snapshot
            .range(&t, ..)
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(seen, model, "round {round}");
        assert_eq!(
            snapshot.get(&t, &key(3)).unwrap(),
            model.get(&key(3)[..]).cloned()
        );
    }
    drop(snapshot);
    assert_ne!(rows(&db, &t), model);
}

/// Two transactions writing different rows do not wait for each other: the first keeps its
/// transaction open while the second writes and commits on another thread.
#[test]
fn writers_of_different_rows_do_not_wait_for_each_other() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let t = db.create_table("t", TableOptions::default()).unwrap();
    let mut first = db.begin();
    first.put(&t, b"a", b"first").unwrap();
    let (done_tx, done_rx) = mpsc::channel();
    thread::scope(|scope| {
        scope.spawn(|| {
            let mut second = db.begin();
            second.put(&t, b"b", b"second").unwrap();
            second.commit().unwrap();
            done_tx.send(()).unwrap();
        });
        // Blocks until the second transaction committed; it would wait for ever if the first
        // transaction's open writes held the second one up.
        done_rx.recv().unwrap();
    });
    assert_eq!(db.get(&t, b"b").unwrap().as_deref(), Some(&b"second"[..]));
    assert_eq!(db.get(&t, b"a").unwrap(), None);
    first.commit().unwrap();
    assert_eq!(db.get(&t, b"a").unwrap().as_deref(), Some(&b"first"[..]));
}

#[test]
fn purge_leaves_no_delete_marked_record_behind_once_idle() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let t = db.create_table("t", TableOptions::default()).unwrap();
    for k in 0..300u32 {
        db.put(&t, &key(k), &value(1, 900)).unwrap();
    }
    let reader = db.snapshot();
    for k in (0..300u32).filter(|k| k % 3 != 0) {
        db.delete(&t, &key(k)).unwrap();
    }
    let marked = db.check_table(&t).unwrap().delete_marked;
    assert_eq!(marked, 200, "a delete only marks the row");
    assert_eq!(reader.range(&t, ..).unwrap().count(), 300);
    drop(reader);
    db.close().unwrap();
    // `close` purges everything no reader needs (a slow shutdown).
    let db = open(dir.path());
    let t = db.table("t").unwrap();
    let stats = db.check_table(&t).unwrap();
    assert_eq!(stats.delete_marked, 0);
    assert_eq!(stats.records, 100);
    assert_eq!(db.status().mvcc.history_list_length, 0);
}

/// Commits link their undo logs into the history list without any engine-wide lock while the
/// purge thread unlinks the list's head: no log may be lost between the two (a purge that read
/// the head's link before a commit extended the list once dropped the new log, leaking its
/// page and leaving its delete-marks forever). Each thread deletes and re-inserts its own rows
/// in one-row transactions; then the undo tablespace must check clean — every page in a log
/// or in the cache of header pages — and no row may stay delete-marked.
#[test]
fn concurrent_commits_and_purge_lose_no_undo_log() {
    const THREADS: u32 = 3;
    const ROUNDS: u32 = 300;
    let dir = tempfile::tempdir().unwrap();
    let db = Engine::open(
        dir.path(),
        EngineOptions::default()
            .page_size(PageSize::K4)
            .buffer_pool_bytes(4 << 20),
    )
    .unwrap();
    let t = db.create_table("t", TableOptions::default()).unwrap();
    thread::scope(|s| {
        for w in 0..THREADS {
            let (db, t) = (&db, &t);
            s.spawn(move || {
                for i in 0..ROUNDS {
                    let k = key(w * ROUNDS + i % 20);
                    if i % 2 == 0 {
                        db.put(t, &k, &value(w as u8, 40)).unwrap();
                    } else {
                        db.delete(t, &k).unwrap();
                    }
                }
            });
        }
    });
    let purged = db.status().mvcc.logs_purged;
    db.close().unwrap();
    let report = barracuda::inspect::check_database(dir.path()).unwrap();
    assert!(
        report.is_clean(),
        "after {purged} logs purged live:\n{report}"
    );
    let db = Engine::open(dir.path(), EngineOptions::default().page_size(PageSize::K4)).unwrap();
    let t = db.table("t").unwrap();
    assert_eq!(db.check_table(&t).unwrap().delete_marked, 0);
    assert_eq!(db.status().mvcc.history_list_length, 0);
}

/// A transaction revives a row another one deleted, purge passes the deleting transaction's log
/// meanwhile (the row was not marked then, so purge left it), and the reviver rolls back: the
/// delete-mark it puts back would never be purged, so the rollback removes the row itself.
#[test]
fn rolling_back_a_revived_row_after_purge_passed_its_delete_leaves_no_mark_behind() {
    let dir = tempfile::tempdir().unwrap();
    let db = Engine::open(
        dir.path(),
        EngineOptions::default()
            .page_size(PageSize::K4)
            .buffer_pool_bytes(1 << 20),
    )
    .unwrap();
    let t = db.create_table("t", TableOptions::default()).unwrap();
    // One inline value and one in an overflow chain (its pages must not leak either).
    for (k, len) in [(1u32, 50usize), (2, 9000)] {
        db.put(&t, &key(k), &value(1, len)).unwrap();
        db.delete(&t, &key(k)).unwrap();
    }
    let mut tx = db.begin();
    tx.put(&t, &key(1), &value(2, 60)).unwrap();
    tx.put(&t, &key(2), &value(2, 70)).unwrap();
    // Purge (a background thread) passes both deletes while the transaction is open.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while db.status().mvcc.history_list_length > 0 {
        assert!(std::time::Instant::now() < deadline, "purge never ran");
        thread::yield_now();
    }
    tx.rollback().unwrap();
    assert_eq!(db.get(&t, &key(1)).unwrap(), None);
    assert_eq!(db.get(&t, &key(2)).unwrap(), None);
    let stats = db.check_table(&t).unwrap();
    assert_eq!((stats.records, stats.delete_marked), (0, 0), "{stats:?}");
    db.close().unwrap();
    let report = barracuda::inspect::check_database(dir.path()).unwrap();
    assert!(report.is_clean(), "{report}");
}
