//! The lending reads — `get_with` and `scan` on the engine, a snapshot and a transaction —
//! agree with the copying ones (`get`, `range`) on every row, including off-page values and
//! versions rebuilt from the undo log, and refuse a call into the engine from their closure
//! instead of deadlocking on the latch it runs under.
#![allow(clippy::unwrap_used, reason = "tests")]
#![allow(
    clippy::big_endian_bytes,
    reason = "big-endian keys sort in numeric order under memcmp"
)]

use std::ops::{Bound, ControlFlow};

use barracuda::{Durability, Engine, EngineOptions, Error, Table, TableOptions};

fn open(dir: &std::path::Path) -> Engine {
    Engine::open(
        dir,
        EngineOptions::default()
            .buffer_pool_bytes(4 << 20)
            .durability(Durability::Background),
    )
    .unwrap()
}

fn k(n: u64) -> [u8; 8] {
    n.to_be_bytes()
}

fn value(n: u64) -> Vec<u8> {
    // Every 97th value is stored off-page.
    let len = if n.is_multiple_of(97) {
        20_000
    } else {
        (n % 300) as usize
    };
    vec![(n % 251) as u8; len]
}

type Rows = Vec<(Vec<u8>, Vec<u8>)>;

fn scanned(f: impl FnOnce(&mut dyn FnMut(&[u8], &[u8]) -> ControlFlow<()>)) -> Rows {
    let mut rows = Vec::new();
    f(&mut |key, value| {
        rows.push((key.to_vec(), value.to_vec()));
        ControlFlow::Continue(())
    });
    rows
}

fn ranged(db: &Engine, t: &Table, range: (Bound<&[u8]>, Bound<&[u8]>)) -> Rows {
    db.range(t, range).unwrap().map(Result::unwrap).collect()
}

#[test]
fn lending_reads_agree_with_copying_reads() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let t = db.create_table("t", TableOptions::default()).unwrap();
    // Through a 4 MiB pool: the scans run into leaves that are not in it.
    for batch in 0..20u64 {
        let mut tx = db.begin();
        for n in batch * 300..(batch + 1) * 300 {
            tx.put(&t, &k(n * 2), &value(n)).unwrap();
        }
        tx.commit().unwrap();
    }
    for n in (0..6_000u64).step_by(7) {
        db.delete(&t, &k(n * 2)).unwrap();
    }
    for n in 0..6_100u64 {
        let copied = db.get(&t, &k(n)).unwrap();
        let lent = db.get_with(&t, &k(n), <[u8]>::to_vec).unwrap();
        assert_eq!(lent, copied, "key {n}");
    }
    for (a, b) in [
        (0, 12_000),
        (1_001, 1_001),
        (5_000, 5_900),
        (11_990, 20_000),
    ] {
        let (a, b) = (k(a), k(b));
        for range in [
            (Bound::Included(&a[..]), Bound::Excluded(&b[..])),
            (Bound::Excluded(&a[..]), Bound::Included(&b[..])),
            (Bound::Included(&a[..]), Bound::Unbounded),
            (Bound::Unbounded, Bound::Included(&b[..])),
        ] {
            let lent = scanned(|f| db.scan(&t, range, f).unwrap());
            assert_eq!(lent, ranged(&db, &t, range), "{range:?}");
        }
    }
    // A closure that breaks ends the scan there.
    let mut seen = 0;
    db.scan(&t, k(100).as_slice().., |_, _| {
        seen += 1;
        if seen == 10 {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    })
    .unwrap();
    assert_eq!(seen, 10);
}

#[test]
fn lending_scans_read_their_view_through_the_undo_log() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let t = db.create_table("t", TableOptions::default()).unwrap();
    let mut tx = db.begin();
    for n in 0..500u64 {
        tx.put(&t, &k(n), &value(n)).unwrap();
    }
    tx.commit().unwrap();
    let before = ranged(&db, &t, (Bound::Unbounded, Bound::Unbounded));
    let snapshot = db.snapshot();
    // Committed after the snapshot: updates (one off-page), deletes, inserts.
    let mut tx = db.begin();
    for n in (0..500u64).step_by(3) {
        tx.put(&t, &k(n), b"new").unwrap();
    }
    for n in (1..500u64).step_by(5) {
        tx.delete(&t, &k(n)).unwrap();
    }
    tx.put(&t, &k(1_000), b"inserted").unwrap();
    tx.commit().unwrap();
    // And a transaction still open, which its own scan sees and nobody else's does.
    let mut open_tx = db.begin();
    open_tx.put(&t, &k(2), b"uncommitted").unwrap();
    open_tx.delete(&t, &k(4)).unwrap();

    let full = (Bound::Unbounded, Bound::Unbounded);
    let as_of_snapshot = scanned(|f| snapshot.scan(&t, full, f).unwrap());
    assert_eq!(as_of_snapshot, before);
    let committed = scanned(|f| db.scan(&t, full, f).unwrap());
    assert_eq!(committed, ranged(&db, &t, full));
    assert!(committed.contains(&(k(1_000).to_vec(), b"inserted".to_vec())));
    assert!(!committed.iter().any(|(_, v)| v == b"uncommitted"));
    let own = scanned(|f| open_tx.scan(&t, full, f).unwrap());
    let own_copied: Rows = open_tx
        .range(&t, full)
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(own, own_copied);
    assert!(own.contains(&(k(2).to_vec(), b"uncommitted".to_vec())));
    assert!(!own.iter().any(|(key, _)| key == &k(4)));
    // A row whose newest version is not committed: the committed one is lent.
    assert_eq!(
        db.get_with(&t, &k(2), <[u8]>::to_vec).unwrap(),
        db.get(&t, &k(2)).unwrap()
    );
    open_tx.rollback().unwrap();
}

#[test]
fn calling_the_engine_from_a_lending_closure_fails_instead_of_deadlocking() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let t = db.create_table("t", TableOptions::default()).unwrap();
    db.put(&t, b"a", b"1").unwrap();
    db.put(&t, b"b", b"2").unwrap();
    let mut inner = Vec::new();
    db.scan(&t, .., |key, _| {
        // A write to the very leaf this closure's thread holds latched.
        inner.push(db.put(&t, key, b"x").map_err(|e| e.to_string()));
        ControlFlow::Continue(())
    })
    .unwrap();
    assert_eq!(inner.len(), 2);
    for result in inner {
        assert!(result.unwrap_err().contains("get_with/scan closure"));
    }
    let nested = db
        .get_with(&t, b"a", |_| db.get(&t, b"b"))
        .unwrap()
        .unwrap();
    assert!(matches!(nested, Err(Error::CalledFromReadClosure)));
    // Once the closures have returned, the engine serves the thread again.
    db.put(&t, b"a", b"3").unwrap();
    assert_eq!(db.get(&t, b"a").unwrap().as_deref(), Some(&b"3"[..]));
}
