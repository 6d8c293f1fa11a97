//! Row locks through the public API: a writer waits for the row's owner, a wait times out
//! leaving the transaction usable, a deadlock rolls its victim back, and locked
//! read-modify-writes lose no update.
#![allow(clippy::unwrap_used, reason = "tests")]

mod common;

use std::sync::Arc;
use std::thread;
use std::time::Duration;

use barracuda::{Durability, Engine, EngineOptions, Error, Table, TableOptions};
use common::until_waiting;

fn open(dir: &std::path::Path, timeout: Duration) -> (Arc<Engine>, Table) {
    let db = Engine::open(
        dir,
        EngineOptions::default()
            .buffer_pool_bytes(8 << 20)
            .durability(Durability::Background)
            .lock_wait_timeout(timeout),
    )
    .unwrap();
    let table = db.create_table("t", TableOptions::default()).unwrap();
    (Arc::new(db), table)
}

#[test]
fn a_writer_waits_for_the_owner_of_the_row_and_writes_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let (db, t) = open(dir.path(), Duration::from_secs(30));
    db.put(&t, b"row", b"v0").unwrap();
    let mut first = db.begin();
    first.put(&t, b"row", b"v1").unwrap();
    let second = {
        let (db, t) = (db.clone(), t.clone());
        thread::spawn(move || {
            let mut tx = db.begin();
            tx.put(&t, b"row", b"v2").unwrap();
            // Granted only after `first` committed: its value is the one read now.
            let seen = db.get(&t, b"row").unwrap();
            tx.commit().unwrap();
            seen
        })
    };
    until_waiting(&db, 1);
    assert_eq!(db.get(&t, b"row").unwrap().as_deref(), Some(&b"v0"[..]));
    first.commit().unwrap();
    assert_eq!(second.join().unwrap().as_deref(), Some(&b"v1"[..]));
    assert_eq!(db.get(&t, b"row").unwrap().as_deref(), Some(&b"v2"[..]));
    let locks = db.status().locks;
    assert_eq!((locks.waits, locks.held_now, locks.waiting_now), (1, 0, 0));
}

#[test]
fn locked_read_modify_writes_lose_no_update() {
    let dir = tempfile::tempdir().unwrap();
    let (db, t) = open(dir.path(), Duration::from_secs(30));
    db.put(&t, b"counter", &0u64.to_le_bytes()).unwrap();
    let (threads, each) = (4u64, 150u64);
    let workers: Vec<_> = (0..threads)
        .map(|_| {
            let (db, t) = (db.clone(), t.clone());
            thread::spawn(move || {
                for _ in 0..each {
                    let mut tx = db.begin();
                    let old = tx.get_for_update(&t, b"counter").unwrap().unwrap();
                    let n = u64::from_le_bytes(old.try_into().unwrap());
                    tx.put(&t, b"counter", &(n + 1).to_le_bytes()).unwrap();
                    tx.commit().unwrap();
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    let value = db.get(&t, b"counter").unwrap().unwrap();
    assert_eq!(
        u64::from_le_bytes(value.try_into().unwrap()),
        threads * each
    );
}

#[test]
fn a_lock_wait_timeout_fails_the_request_only() {
    let dir = tempfile::tempdir().unwrap();
    let (db, t) = open(dir.path(), Duration::from_millis(50));
    let mut owner = db.begin();
    owner.put(&t, b"a", b"owner").unwrap();
    let mut other = db.begin();
    other.put(&t, b"b", b"other").unwrap();
    let err = other.put(&t, b"a", b"other").unwrap_err();
    let Error::LockWaitTimeout { table, waited } = &err else {
        panic!("expected a lock wait timeout, got {err:?}");
    };
    assert_eq!(table, "t");
    assert!(*waited >= Duration::from_millis(50), "{waited:?}");
    // The transaction goes on: its earlier write commits, the refused one was not staged.
    other.put(&t, b"c", b"other").unwrap();
    other.commit().unwrap();
    owner.commit().unwrap();
    assert_eq!(db.get(&t, b"a").unwrap().as_deref(), Some(&b"owner"[..]));
    assert_eq!(db.get(&t, b"b").unwrap().as_deref(), Some(&b"other"[..]));
    assert_eq!(db.get(&t, b"c").unwrap().as_deref(), Some(&b"other"[..]));
    assert_eq!(db.status().locks.timeouts, 1);
}

/// `first` writes a then b, `second` writes b then a: returns what each got.
fn opposite_orders(db: &Engine, t: &Table) -> (Result<(), Error>, Result<(), Error>) {
    let mut first = db.begin();
    first.put(t, b"a", b"first").unwrap();
    let mut second = db.begin();
    second.put(t, b"b", b"second").unwrap();
    thread::scope(|s| {
        let first = s.spawn(move || {
            // Waits for `second`, which is about to close the cycle.
            first.put(t, b"b", b"first")?;
            first.commit()
        });
        until_waiting(db, 1);
        let second_result = match second.put(t, b"a", b"second") {
            Ok(()) => second.commit(),
            Err(err) => {
                // A victim stays rolled back: every later call says so.
                if matches!(err, Error::Deadlock { .. }) {
                    assert!(matches!(second.commit(), Err(Error::Deadlock { .. })));
                } else {
                    drop(second);
                }
                Err(err)
            }
        };
        (first.join().unwrap(), second_result)
    })
}

#[test]
fn a_deadlock_rolls_back_its_victim_and_the_other_transaction_commits() {
    let dir = tempfile::tempdir().unwrap();
    let (db, t) = open(dir.path(), Duration::from_secs(30));
    let rollbacks_before = db.status().rollbacks;
    let (first, second) = opposite_orders(&db, &t);
    first.unwrap();
    let err = second.unwrap_err();
    let Error::Deadlock { table, why, .. } = &err else {
        panic!("expected a deadlock, got {err:?}");
    };
    assert_eq!(table, "t");
    assert!(why.contains("cycle"), "{why}");
    // Nothing of the victim's remains; the survivor's rows are all there.
    assert_eq!(db.get(&t, b"a").unwrap().as_deref(), Some(&b"first"[..]));
    assert_eq!(db.get(&t, b"b").unwrap().as_deref(), Some(&b"first"[..]));
    let status = db.status();
    assert_eq!(status.locks.deadlocks, 1);
    assert_eq!(status.rollbacks, rollbacks_before + 1);
    assert_eq!(status.locks.held_now, 0);
}

#[test]
fn with_detection_switched_off_at_run_time_a_deadlock_ends_by_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let (db, t) = open(dir.path(), Duration::from_secs(30));
    db.set_deadlock_detect(false);
    db.set_lock_wait_timeout(Duration::from_millis(100));
    let (first, second) = opposite_orders(&db, &t);
    // The wait that started first times out first and its transaction lets go of its row, so
    // the other may then be granted; nobody is told "deadlock".
    let results = [&first, &second];
    let timeouts = results
        .iter()
        .filter(|r| matches!(r, Err(Error::LockWaitTimeout { .. })))
        .count();
    assert!(timeouts >= 1, "{results:?}");
    assert!(
        results
            .iter()
            .all(|r| matches!(r, Ok(()) | Err(Error::LockWaitTimeout { .. }))),
        "{results:?}"
    );
    let locks = db.status().locks;
    assert!(!locks.deadlock_detect);
    assert_eq!((locks.deadlock_searches, locks.deadlocks), (0, 0));
}

#[test]
fn rollback_and_drop_release_the_locks() {
    let dir = tempfile::tempdir().unwrap();
    let (db, t) = open(dir.path(), Duration::from_millis(20));
    let mut tx = db.begin();
    tx.put(&t, b"a", b"1").unwrap();
    let id = tx.id().unwrap();
    tx.rollback().unwrap();
    let mut tx = db.begin();
    tx.delete(&t, b"a").unwrap();
    assert!(tx.id().unwrap() > id, "transaction ids grow");
    drop(tx);
    // Neither left its lock behind: this write is granted at once.
    db.put(&t, b"a", b"2").unwrap();
    let locks = db.status().locks;
    assert_eq!((locks.waits, locks.timeouts, locks.held_now), (0, 0, 0));
    // Only the delete asked the lock table for a row lock: a put's row carries its
    // transaction's id instead (an implicit lock), until the transaction ends.
    assert_eq!(locks.requests, 1);
}
