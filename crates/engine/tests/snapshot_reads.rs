//! Readers never see part of a transaction: a scan or a transaction's reads see the data
//! committed before they started, while writers commit batches across pages; purge clears
//! what deletes leave once no reader needs it.
#![allow(clippy::unwrap_used, reason = "tests")]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use barracuda::{Durability, Engine, EngineOptions, TableOptions};

fn open(dir: &std::path::Path, pool: usize) -> Arc<Engine> {
    Arc::new(
        Engine::open(
            dir,
            EngineOptions::default()
                .buffer_pool_bytes(pool)
                .durability(Durability::Background),
        )
        .unwrap(),
    )
}

#[test]
fn a_scan_and_a_transaction_read_the_data_of_their_start() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path(), 8 << 20);
    let t = db.create_table("t", TableOptions::default()).unwrap();
    for k in 0..10u8 {
        db.put(&t, &[k], b"old").unwrap();
    }
    let mut scan = db.range(&t, ..).unwrap();
    let first = scan.next().unwrap().unwrap();
    let reader = db.begin();
    assert_eq!(reader.get(&t, &[5]).unwrap().as_deref(), Some(&b"old"[..]));
    // A batch changes, deletes and inserts after both started.
    let mut tx = db.begin();
    for k in 0..10u8 {
        if k % 2 == 0 {
            tx.put(&t, &[k], b"new").unwrap();
        } else {
            tx.delete(&t, &[k]).unwrap();
        }
    }
    tx.put(&t, &[20], b"new").unwrap();
    tx.commit().unwrap();
    let rest: Vec<_> = scan.map(|r| r.unwrap()).collect();
    assert_eq!(first, (vec![0], b"old".to_vec()));
    assert_eq!(rest.len(), 9, "{rest:?}");
    assert!(rest.iter().all(|(_, v)| v == b"old"));
    assert_eq!(reader.get(&t, &[5]).unwrap().as_deref(), Some(&b"old"[..]));
    assert_eq!(reader.get(&t, &[20]).unwrap(), None);
    drop(reader);
    // New readers see the batch.
    assert_eq!(db.get(&t, &[5]).unwrap(), None);
    assert_eq!(db.get(&t, &[4]).unwrap().as_deref(), Some(&b"new"[..]));
    let now: Vec<_> = db.range(&t, ..).unwrap().map(|r| r.unwrap().0).collect();
    assert_eq!(
        now,
        vec![vec![0], vec![2], vec![4], vec![6], vec![8], vec![20]]
    );
}

/// The scenario: 4 threads commit 10-key batches of one counter value each while 2
/// threads scan the keys; every scan must see 10 equal values.
#[test]
fn concurrent_scans_never_see_a_mix_of_two_batches() {
    let dir = tempfile::tempdir().unwrap();
    // A small pool, and values spanning pages: scans and writers evict and re-read.
    let db = open(dir.path(), 2 << 20);
    let t = db.create_table("t", TableOptions::default()).unwrap();
    let value = |n: u64| {
        let mut v = n.to_le_bytes().to_vec();
        v.resize(3000, b'x');
        v
    };
    let mut tx = db.begin();
    for k in 0..10u8 {
        tx.put(&t, &[k], &value(0)).unwrap();
    }
    tx.commit().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..4u64)
        .map(|w| {
            let (db, t, stop) = (db.clone(), t.clone(), stop.clone());
            thread::spawn(move || {
                let mut n = w;
                while !stop.load(Ordering::Relaxed) {
                    n += 4;
                    let mut tx = db.begin();
                    for k in 0..10u8 {
                        tx.put(&t, &[k], &value(n)).unwrap();
                    }
                    tx.commit().unwrap();
                }
            })
        })
        .collect();
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let (db, t) = (db.clone(), t.clone());
            thread::spawn(move || {
                let mut scans = 0;
                let deadline = Instant::now() + Duration::from_secs(2);
                while Instant::now() < deadline {
                    let rows: Vec<_> = db.range(&t, ..).unwrap().map(|r| r.unwrap().1).collect();
                    assert_eq!(rows.len(), 10);
                    assert!(
                        rows.iter().all(|v| *v == rows[0]),
                        "a scan saw a mix of batches"
                    );
                    scans += 1;
                }
                scans
            })
        })
        .collect();
    let scans: usize = readers.into_iter().map(|r| r.join().unwrap()).sum();
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        w.join().unwrap();
    }
    assert!(scans > 0);
}

#[test]
fn purge_removes_deleted_rows_and_history_once_no_reader_needs_them() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path(), 8 << 20);
    let t = db.create_table("t", TableOptions::default()).unwrap();
    let big = vec![7u8; 20_000];
    for k in 0..50u8 {
        db.put(&t, &[k], &big).unwrap();
    }
    let old_reader = db.begin();
    assert_eq!(old_reader.get(&t, &[3]).unwrap().as_deref(), Some(&big[..]));
    for k in 0..50u8 {
        db.delete(&t, &[k]).unwrap();
    }
    // The old reader still reads the rows: purge must wait for it.
    assert_eq!(old_reader.get(&t, &[3]).unwrap().as_deref(), Some(&big[..]));
    assert!(db.status().mvcc.history_list_length > 0);
    drop(old_reader);
    let deadline = Instant::now() + Duration::from_secs(20);
    while db.status().mvcc.history_list_length > 0 {
        assert!(Instant::now() < deadline, "purge did not finish");
        thread::sleep(Duration::from_millis(5));
    }
    let mvcc = db.status().mvcc;
    assert_eq!(mvcc.rows_purged, 50);
    assert_eq!(db.range(&t, ..).unwrap().count(), 0);
}
