//! Implicit row locks through the public API: a put takes no row lock (its row carries its
//! transaction's id), yet a second writer of the row, a locking read and a delete all wait
//! for the first writer to end; a locking read of an absent key keeps puts of it out; and
//! writers racing on overlapping new keys lose no update and leave no row of a transaction
//! that rolled back.
#![allow(clippy::unwrap_used, reason = "tests")]

mod common;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use barracuda::{Durability, Engine, EngineOptions, Error, Table, TableOptions};
use common::until_waiting;

fn open(dir: &std::path::Path) -> (Arc<Engine>, Table) {
    let db = Engine::open(
        dir,
        EngineOptions::default()
            .buffer_pool_bytes(8 << 20)
            .durability(Durability::Background)
            .lock_wait_timeout(Duration::from_secs(30)),
    )
    .unwrap();
    let table = db.create_table("t", TableOptions::default()).unwrap();
    (Arc::new(db), table)
}

#[test]
fn a_second_insert_of_a_new_key_waits_for_the_first_and_sees_its_outcome() {
    let dir = tempfile::tempdir().unwrap();
    let (db, t) = open(dir.path());
    for first_commits in [true, false] {
        let key = if first_commits {
            &b"new1"[..]
        } else {
            &b"new2"[..]
        };
        let mut first = db.begin();
        first.put(&t, key, b"first").unwrap();
        assert_eq!(db.status().locks.held_now, 0, "an insert takes no row lock");
        let second = {
            let (db, t) = (db.clone(), t.clone());
            thread::spawn(move || {
                let mut tx = db.begin();
                tx.put(&t, key, b"second").unwrap();
                // What the second wrote over: the first's row if it committed, else nothing.
                let seen_before_commit = db.get(&t, key).unwrap();
                tx.commit().unwrap();
                seen_before_commit
            })
        };
        until_waiting(&db, 1);
        assert_eq!(db.get(&t, key).unwrap(), None, "nothing committed yet");
        if first_commits {
            first.commit().unwrap();
        } else {
            first.rollback().unwrap();
        }
        let seen = second.join().unwrap();
        let expected_before = first_commits.then(|| b"first".to_vec());
        assert_eq!(seen, expected_before);
        assert_eq!(db.get(&t, key).unwrap().as_deref(), Some(&b"second"[..]));
    }
    assert_eq!(db.status().locks.waiting_now, 0);
}

#[test]
fn a_locking_read_and_a_delete_wait_for_an_uncommitted_insert() {
    let dir = tempfile::tempdir().unwrap();
    let (db, t) = open(dir.path());
    let mut writer = db.begin();
    writer.put(&t, b"k", b"inserted").unwrap();
    let (reader, deleter) = {
        let (db1, t1) = (db.clone(), t.clone());
        let (db2, t2) = (db.clone(), t.clone());
        (
            thread::spawn(move || {
                let mut tx = db1.begin();
                let read = tx.get_for_update(&t1, b"k").unwrap();
                tx.commit().unwrap();
                read
            }),
            thread::spawn(move || {
                let mut tx = db2.begin();
                tx.delete(&t2, b"k").unwrap();
                tx.commit().unwrap();
            }),
        )
    };
    // Both wait: one for the writer, the other for the row lock the first one took.
    until_waiting(&db, 2);
    writer.commit().unwrap();
    let read = reader.join().unwrap();
    deleter.join().unwrap();
    // The reader and the deleter went one after the other: the reader saw the committed
    // insert, or nothing if the delete came first.
    assert!(
        read.is_none() || read.as_deref() == Some(&b"inserted"[..]),
        "{read:?}"
    );
    assert_eq!(db.get(&t, b"k").unwrap(), None);
}

#[test]
fn a_locking_read_of_an_absent_key_keeps_puts_of_it_out_until_it_ends() {
    let dir = tempfile::tempdir().unwrap();
    let (db, t) = open(dir.path());
    let mut locker = db.begin();
    assert_eq!(locker.get_for_update(&t, b"gap").unwrap(), None);
    let putter = {
        let (db, t) = (db.clone(), t.clone());
        thread::spawn(move || {
            let mut tx = db.begin();
            tx.put_many(&t, [(&b"free"[..], &b"p"[..]), (&b"gap"[..], &b"p"[..])])
                .unwrap();
            tx.commit().unwrap();
        })
    };
    until_waiting(&db, 1);
    // The locker's own put of the key goes ahead; the batch waits behind it.
    locker.put(&t, b"gap", b"locker").unwrap();
    assert_eq!(db.get(&t, b"gap").unwrap(), None);
    locker.commit().unwrap();
    putter.join().unwrap();
    assert_eq!(db.get(&t, b"gap").unwrap().as_deref(), Some(&b"p"[..]));
    assert_eq!(db.get(&t, b"free").unwrap().as_deref(), Some(&b"p"[..]));
}

#[test]
fn a_writer_rewriting_its_own_row_through_the_general_path_does_not_wait_for_a_locker_behind_it() {
    let dir = tempfile::tempdir().unwrap();
    let (db, t) = open(dir.path());
    let mut writer = db.begin();
    writer.put(&t, b"k", b"small").unwrap();
    // The locker takes the row lock (nobody held it explicitly), then waits for the writer,
    // whose row it is.
    let locker = {
        let (db, t) = (db.clone(), t.clone());
        thread::spawn(move || {
            let mut tx = db.begin();
            let read = tx.get_for_update(&t, b"k").unwrap();
            tx.commit().unwrap();
            read
        })
    };
    until_waiting(&db, 1);
    // Too large for the leaf: an overflow chain, the general path, which takes the row lock
    // unless the row is the writer's own — here it is, so no deadlock and no wait.
    let big = vec![7u8; 40_000];
    writer.put(&t, b"k", &big).unwrap();
    assert_eq!(db.status().locks.deadlocks, 0);
    writer.commit().unwrap();
    assert_eq!(locker.join().unwrap(), Some(big));
}

#[test]
fn a_wait_for_an_implicit_lock_times_out_like_a_row_lock_wait() {
    let dir = tempfile::tempdir().unwrap();
    let db = Engine::open(
        dir.path(),
        EngineOptions::default()
            .buffer_pool_bytes(8 << 20)
            .lock_wait_timeout(Duration::from_millis(50)),
    )
    .unwrap();
    let t = db.create_table("t", TableOptions::default()).unwrap();
    let mut owner = db.begin();
    owner.put(&t, b"k", b"owner").unwrap();
    let mut other = db.begin();
    let err = other.put(&t, b"k", b"other").unwrap_err();
    assert!(matches!(err, Error::LockWaitTimeout { .. }), "{err}");
    let err = other
        .put_many(&t, [(&b"j"[..], &b"other"[..]), (&b"k"[..], &b"other"[..])])
        .unwrap_err();
    assert!(matches!(err, Error::LockWaitTimeout { .. }), "{err}");
    other.commit().unwrap();
    owner.commit().unwrap();
    assert_eq!(db.get(&t, b"k").unwrap().as_deref(), Some(&b"owner"[..]));
    // The batch wrote the row before the blocked one, and its commit kept it.
    assert_eq!(db.get(&t, b"j").unwrap().as_deref(), Some(&b"other"[..]));
    assert_eq!(db.status().locks.timeouts, 2);
}

/// One transaction of the race: its writes, and whether (and when) it committed.
struct Outcome {
    writes: Vec<(u32, Vec<u8>)>,
    /// Taken just before `commit`: of two transactions that wrote one key, the second wrote it
    /// only after the first ended, so it takes the larger number.
    commit_seq: Option<u64>,
}

#[test]
fn racing_writers_of_overlapping_new_keys_lose_no_update() {
    let dir = tempfile::tempdir().unwrap();
    let (db, t) = open(dir.path());
    let seq = Arc::new(AtomicU64::new(0));
    let outcomes = Arc::new(Mutex::new(Vec::new()));
    let (threads, transactions, keys) = (4u64, 150u64, 40u64);
    thread::scope(|s| {
        for thread_no in 0..threads {
            let (db, t, seq, outcomes) = (&db, &t, &seq, &outcomes);
            s.spawn(move || {
                let mut state = 0x9E37_79B9_7F4A_7C15u64.wrapping_mul(thread_no + 1);
                let mut next = move || {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    state
                };
                for n in 0..transactions {
                    let mut tx = db.begin();
                    let mut writes = Vec::new();
                    let mut ok = true;
                    let batch = next() % 2 == 0;
                    let picked: Vec<u32> = (0..4).map(|_| (next() % keys) as u32).collect();
                    let value = format!("t{thread_no}-n{n}").into_bytes();
                    let result = if batch {
                        let rows: Vec<(Vec<u8>, Vec<u8>)> = picked
                            .iter()
                            .map(|k| (format!("key{k:03}").into_bytes(), value.clone()))
                            .collect();
                        tx.put_many(t, rows.iter().map(|(k, v)| (&k[..], &v[..])))
                    } else {
                        picked
                            .iter()
                            .try_for_each(|k| tx.put(t, format!("key{k:03}").as_bytes(), &value))
                    };
                    match result {
                        Ok(()) => writes.extend(picked.iter().map(|&k| (k, value.clone()))),
                        Err(Error::Deadlock { .. }) => ok = false,
                        Err(other) => panic!("unexpected error: {other}"),
                    }
                    let commit_seq = if ok && next() % 3 != 0 {
                        let at = seq.fetch_add(1, Ordering::SeqCst);
                        tx.commit().unwrap();
                        Some(at)
                    } else {
                        if ok {
                            tx.rollback().unwrap();
                        }
                        None
                    };
                    outcomes
                        .lock()
                        .unwrap()
                        .push(Outcome { writes, commit_seq });
                }
            });
        }
    });
    // Each key holds the value of the last committed transaction that wrote it, or nothing.
    let mut expected: BTreeMap<Vec<u8>, (u64, Vec<u8>)> = BTreeMap::new();
    let outcomes = outcomes.lock().unwrap();
    for outcome in outcomes.iter() {
        let Some(at) = outcome.commit_seq else {
            continue;
        };
        for (k, v) in &outcome.writes {
            let key = format!("key{k:03}").into_bytes();
            let slot = expected.entry(key).or_insert((at, v.clone()));
            if slot.0 <= at {
                *slot = (at, v.clone());
            }
        }
    }
    let found: BTreeMap<Vec<u8>, Vec<u8>> =
        db.range(&t, ..).unwrap().collect::<Result<_, _>>().unwrap();
    let expected: BTreeMap<Vec<u8>, Vec<u8>> =
        expected.into_iter().map(|(k, (_, v))| (k, v)).collect();
    assert_eq!(found, expected);
    db.check_table(&t).unwrap();
    let locks = db.status().locks;
    assert_eq!((locks.held_now, locks.waiting_now), (0, 0));
    assert!(
        locks.waits > 0,
        "the writers never met: the test shows nothing"
    );
}

#[test]
fn a_put_that_splits_a_leaf_keeps_no_row_lock_yet_its_row_stays_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let (db, t) = open(dir.path());
    let requests_before = db.status().locks.requests;
    let mut writer = db.begin();
    // About 15 of these fit a 16 KiB leaf: 100 of them split leaves, each split a put through
    // the general path, which locks the row only between reading and changing it.
    let value = [7_u8; 1000];
    for i in 0_u32..100 {
        writer.put(&t, &key(i), &value).unwrap();
    }
    let locks = db.status().locks;
    // Only the general path asks the lock table about a put (one request a split).
    assert!(locks.requests >= requests_before + 5, "{locks:?}");
    assert_eq!(locks.held_now, 0, "no row lock outlives its put");
    // Every row is still the writer's: a second writer of any of them waits for it.
    let second = {
        let (db, t) = (db.clone(), t.clone());
        thread::spawn(move || {
            let mut tx = db.begin();
            for i in [0_u32, 50, 99] {
                tx.put(&t, &key(i), b"second").unwrap();
            }
            tx.commit().unwrap();
        })
    };
    until_waiting(&db, 1);
    assert_eq!(db.get(&t, &key(50)).unwrap(), None, "uncommitted");
    writer.commit().unwrap();
    second.join().unwrap();
    for i in [0_u32, 50, 99] {
        assert_eq!(
            db.get(&t, &key(i)).unwrap().as_deref(),
            Some(&b"second"[..])
        );
    }
    assert_eq!(db.get(&t, &key(1)).unwrap().as_deref(), Some(&value[..]));
}

/// Keys in the order of `i`.
fn key(i: u32) -> Vec<u8> {
    format!("k{i:03}").into_bytes()
}
