//! `Transaction::put_many` through the public API: the same rows as a `put` per row (later
//! rows of a key winning), across leaf splits, overflow values and updates; invisible to
//! others until commit, undone whole by rollback; bad rows refused before anything is locked
//! or written; its rows locked against other writers.
#![expect(
    clippy::unwrap_used,
    reason = "shared helpers called from #[test] fns; allow-unwrap-in-tests covers only the fns"
)]

use std::collections::BTreeMap;
use std::time::Duration;

use barracuda::{Engine, EngineOptions, Error, PageSize, Table, TableOptions};

fn open(dir: &std::path::Path) -> Engine {
    Engine::open(
        dir,
        EngineOptions::default()
            .page_size(PageSize::K4)
            .buffer_pool_bytes(1 << 20)
            .lock_wait_timeout(Duration::from_millis(50)),
    )
    .unwrap()
}

fn rows(db: &Engine, t: &Table) -> BTreeMap<Vec<u8>, Vec<u8>> {
    db.range(t, ..).unwrap().map(Result::unwrap).collect()
}

/// xorshift64*: a reproducible stream of choices.
struct Rng(u64);
impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n
    }
}

/// A batch of rows: keys from a small range (so that batches repeat keys, within themselves
/// and across batches), in random or ascending order; values mostly small, some off-page on
/// 4 KiB pages, some empty.
fn batch(rng: &mut Rng, round: u64) -> Vec<(Vec<u8>, Vec<u8>)> {
    let n = 1 + rng.below(300);
    let ascending = rng.below(2) == 0;
    let start = rng.below(1500);
    (0..n)
        .map(|i| {
            let k = if ascending {
                start + i
            } else {
                rng.below(2000)
            };
            let len = match rng.below(20) {
                0 => 6000,
                1 => 0,
                _ => 20 + rng.below(400) as usize,
            };
            let tag = (round as u8) ^ (i as u8);
            (
                format!("k{k:06}").into_bytes(),
                (0..len).map(|j| tag ^ (j % 251) as u8).collect(),
            )
        })
        .collect()
}

#[test]
fn put_many_writes_what_a_put_per_row_writes_and_rollback_undoes_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let t = db.create_table("t", TableOptions::default()).unwrap();
    let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let (mut committed, mut rolled_back) = (0, 0);
    for round in 0..60u64 {
        let rows_in = batch(&mut rng, round);
        let snapshot = db.snapshot();
        let mut tx = db.begin();
        tx.put_many(&t, rows_in.iter().map(|(k, v)| (&k[..], &v[..])))
            .unwrap();
        // The last row given for a key is the one written.
        let mut expected = model.clone();
        for (k, v) in &rows_in {
            expected.insert(k.clone(), v.clone());
        }
        for (k, _) in rows_in.iter().step_by(7) {
            assert_eq!(tx.get(&t, k).unwrap().as_ref(), expected.get(k));
            assert_eq!(snapshot.get(&t, k).unwrap().as_ref(), model.get(k));
        }
        if rng.below(4) == 0 {
            tx.rollback().unwrap();
            rolled_back += 1;
        } else {
            tx.commit().unwrap();
            model = expected;
            committed += 1;
        }
        drop(snapshot);
        assert_eq!(rows(&db, &t), model, "round {round}");
    }
    assert!(committed > 0 && rolled_back > 0);
    let stats = db.check_table(&t).unwrap();
    assert!(stats.overflow_pages > 0, "some values went off-page");
    assert!(stats.leaf_pages > 10, "the batches split leaves");
    // And after a restart, from the files and the log.
    db.close().unwrap();
    let db = open(dir.path());
    let t = db.table("t").unwrap();
    assert_eq!(rows(&db, &t), model);
}

#[test]
fn put_many_refuses_a_bad_row_before_writing_any() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let t = db.create_table("t", TableOptions::default()).unwrap();
    let long_key = vec![b'x'; 10_000];
    let good: Vec<u8> = b"value".to_vec();
    let mut tx = db.begin();
    let err = tx
        .put_many(
            &t,
            [
                (&b"a"[..], &good[..]),
                (&long_key[..], &good[..]),
                (&b"b"[..], &good[..]),
            ],
        )
        .unwrap_err();
    assert!(matches!(err, Error::KeyTooLong { .. }), "{err}");
    assert_eq!(tx.get(&t, b"a").unwrap(), None);
    assert_eq!(tx.id(), None, "nothing was locked");
    tx.commit().unwrap();
    assert!(rows(&db, &t).is_empty());
}

#[test]
fn put_many_locks_its_rows_against_other_writers() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let t = db.create_table("t", TableOptions::default()).unwrap();
    let mut holder = db.begin();
    holder.put(&t, b"k050", b"held").unwrap();
    let rows_in: Vec<(Vec<u8>, Vec<u8>)> = (0..100)
        .map(|i| (format!("k{i:03}").into_bytes(), b"batch".to_vec()))
        .collect();
    let mut tx = db.begin();
    let err = tx
        .put_many(&t, rows_in.iter().map(|(k, v)| (&k[..], &v[..])))
        .unwrap_err();
    assert!(matches!(err, Error::LockWaitTimeout { .. }), "{err}");
    // The batch writes in key order and stopped at the held row: the rows before it are the
    // transaction's (seen by it, by nobody else), the row and those after it are not written.
    assert_eq!(tx.get(&t, b"k049").unwrap().as_deref(), Some(&b"batch"[..]));
    assert_eq!(db.get(&t, b"k049").unwrap(), None);
    assert_eq!(tx.get(&t, b"k051").unwrap(), None);
    assert_eq!(
        tx.get(&t, b"k050").unwrap(),
        None,
        "not committed by its holder yet"
    );
    tx.rollback().unwrap();
    assert_eq!(db.get(&t, b"k000").unwrap(), None, "rolled back");
    holder.commit().unwrap();
    let mut tx = db.begin();
    tx.put_many(&t, rows_in.iter().map(|(k, v)| (&k[..], &v[..])))
        .unwrap();
    // Now the batch holds k000..k099: another writer waits for it.
    let mut other = db.begin();
    let err = other.put(&t, b"k050", b"other").unwrap_err();
    assert!(matches!(err, Error::LockWaitTimeout { .. }), "{err}");
    tx.commit().unwrap();
    other.put(&t, b"k050", b"other").unwrap();
    other.commit().unwrap();
    let all = rows(&db, &t);
    assert_eq!(all.len(), 100);
    assert_eq!(
        all.get(&b"k050"[..]).map(Vec::as_slice),
        Some(&b"other"[..])
    );
    assert_eq!(
        all.get(&b"k051"[..]).map(Vec::as_slice),
        Some(&b"batch"[..])
    );
}

/// Keys `0..n` as the scattered-batch test writes them.
fn spread_key(i: u64) -> Vec<u8> {
    format!("s{i:06}").into_bytes()
}

#[test]
fn put_many_of_scattered_keys_shares_mini_transactions_across_leaves() {
    let dir = tempfile::tempdir().unwrap();
    // A pool that holds the table: a leaf that is not in the pool is not latched without a
    // wait (the run stops there), and evictions would make the count below depend on timing.
    // No background purge, and a checkpoint before each measured batch (below): the count is of
    // everyone's appends, and a page being flushed is latched, which also ends a run.
    let options = || {
        EngineOptions::default()
            .page_size(PageSize::K4)
            .buffer_pool_bytes(16 << 20)
            .lock_wait_timeout(Duration::from_millis(50))
            .background_purge(false)
    };
    let db = Engine::open(dir.path(), options()).unwrap();
    let t = db.create_table("t", TableOptions::default()).unwrap();
    // About 30 rows of 100 bytes a 4 KiB leaf: 6000 rows fill some 200 leaves.
    let loaded: Vec<(Vec<u8>, Vec<u8>)> =
        (0..6000).map(|i| (spread_key(i), vec![1; 100])).collect();
    let mut tx = db.begin();
    tx.put_many(&t, loaded.iter().map(|(k, v)| (&k[..], &v[..])))
        .unwrap();
    tx.commit().unwrap();
    assert!(db.check_table(&t).unwrap().leaf_pages > 150);
    // Every 50th row, updated with a value of the same size (the leaves, filled in key order,
    // have no room to grow: a split would take the general path): about one leaf in two.
    let batch: Vec<(Vec<u8>, Vec<u8>)> = (0..120)
        .map(|i| (spread_key(i * 50), vec![2; 100]))
        .collect();
    let appends = |db: &Engine| db.status().redo.appends;
    for commit in [false, true] {
        let snapshot = db.snapshot();
        let mut tx = db.begin();
        db.checkpoint().unwrap();
        let before = appends(&db);
        tx.put_many(&t, batch.iter().map(|(k, v)| (&k[..], &v[..])))
            .unwrap();
        let spent = appends(&db) - before;
        // A mini-transaction per leaf would take 120 appends; runs of up to 16 leaves take
        // about 120 / 16 (and the undo log's start a few).
        assert!(
            spent < 30,
            "{spent} redo appends for {} rows over 120 leaves",
            batch.len()
        );
        for (k, v) in batch.iter().step_by(5) {
            assert_eq!(tx.get(&t, k).unwrap().as_ref(), Some(v));
            assert_ne!(
                snapshot.get(&t, k).unwrap().as_ref(),
                Some(v),
                "not visible before commit"
            );
        }
        if commit {
            tx.commit().unwrap();
        } else {
            tx.rollback().unwrap();
            assert_eq!(
                rows(&db, &t),
                loaded.iter().cloned().collect::<BTreeMap<_, _>>(),
                "the rollback undid every leaf's rows"
            );
        }
    }
    let mut expected: BTreeMap<Vec<u8>, Vec<u8>> = loaded.into_iter().collect();
    expected.extend(batch.iter().cloned());
    assert_eq!(rows(&db, &t), expected);
    db.check_table(&t).unwrap();
    db.close().unwrap();
    let db = Engine::open(dir.path(), options()).unwrap();
    let t = db.table("t").unwrap();
    assert_eq!(rows(&db, &t), expected, "after a restart");

    // A row another transaction holds, in the middle of a run over many leaves: the rows
    // before it are written, it and those after it are not.
    let mut holder = db.begin();
    holder.put(&t, &spread_key(3000), b"held").unwrap();
    let scattered: Vec<(Vec<u8>, Vec<u8>)> = (0..60)
        .map(|i| (spread_key(i * 100), vec![4; 10]))
        .collect();
    let mut tx = db.begin();
    let err = tx
        .put_many(&t, scattered.iter().map(|(k, v)| (&k[..], &v[..])))
        .unwrap_err();
    assert!(matches!(err, Error::LockWaitTimeout { .. }), "{err}");
    assert_eq!(tx.get(&t, &spread_key(2900)).unwrap(), Some(vec![4; 10]));
    assert_eq!(
        tx.get(&t, &spread_key(3100)).unwrap(),
        expected.get(&spread_key(3100)).cloned()
    );
    tx.rollback().unwrap();
    holder.rollback().unwrap();
    assert_eq!(rows(&db, &t), expected);
}

/// Three writers put scattered batches of interleaved keys (each its own residue mod 3, so
/// their runs cross the same leaves without waiting for each other's rows) and delete some,
/// while background purge removes the deleted rows (merging leaves, right to left) and a
/// reader scans.
/// What would break: a run that waited for a leaf latch while holding others (a deadlock
/// with another run or a merge: the test would hang), or a run over leaves that placed a
/// row in the wrong leaf or lost one (the final rows differ from the writers' models, or the
/// tree check fails).
#[test]
fn concurrent_runs_over_many_leaves_with_deletes_and_purge() {
    const KEYS: u64 = 9000;
    let dir = tempfile::tempdir().unwrap();
    let db = Engine::open(
        dir.path(),
        EngineOptions::default()
            .page_size(PageSize::K4)
            .buffer_pool_bytes(16 << 20)
            .lock_wait_timeout(Duration::from_secs(10)),
    )
    .unwrap();
    let t = db.create_table("t", TableOptions::default()).unwrap();
    let done = std::sync::atomic::AtomicBool::new(false);
    let models: Vec<BTreeMap<Vec<u8>, Vec<u8>>> = std::thread::scope(|s| {
        let reader = s.spawn(|| {
            let mut scans = 0u64;
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                let mut last: Option<Vec<u8>> = None;
                for row in db.range(&t, ..).unwrap() {
                    let (k, _) = row.unwrap();
                    assert!(
                        last.as_ref().is_none_or(|l| *l < k),
                        "a scan saw keys in order"
                    );
                    last = Some(k);
                }
                scans += 1;
            }
            scans
        });
        let writers: Vec<_> = (0..3u64)
            .map(|w| {
                let (db, t) = (&db, &t);
                s.spawn(move || {
                    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ (w + 1));
                    let mut model = BTreeMap::new();
                    for round in 0..40u64 {
                        let n = 50 + rng.below(200);
                        let keys: Vec<Vec<u8>> = (0..n)
                            .map(|_| spread_key(rng.below(KEYS / 3) * 3 + w))
                            .collect();
                        let mut tx = db.begin();
                        if round % 4 == 3 {
                            for k in &keys {
                                tx.delete(t, k).unwrap();
                                model.remove(k);
                            }
                        } else {
                            let rows: Vec<(Vec<u8>, Vec<u8>)> = keys
                                .into_iter()
                                .map(|k| {
                                    let len = 20 + rng.below(200) as usize;
                                    (k, vec![(round as u8) ^ (w as u8); len])
                                })
                                .collect();
                            tx.put_many(t, rows.iter().map(|(k, v)| (&k[..], &v[..])))
                                .unwrap();
                            model.extend(rows);
                        }
                        tx.commit().unwrap();
                    }
                    model
                })
            })
            .collect();
        let models = writers.into_iter().map(|h| h.join().unwrap()).collect();
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        assert!(reader.join().unwrap() > 0);
        models
    });
    let expected: BTreeMap<Vec<u8>, Vec<u8>> = models.into_iter().flatten().collect();
    assert_eq!(rows(&db, &t), expected);
    db.check_table(&t).unwrap();
}
