//! Every free-page policy keeps the engine correct when the data is many times the pool and
//! several threads read and write at once; the policy may change while they run. If this
//! breaks, a policy hands out a frame still in use, loses a dirty page, or stalls forever.

#![allow(clippy::unwrap_used, reason = "a failed unwrap is a failed test")]
#![allow(
    clippy::big_endian_bytes,
    reason = "big-endian keys sort in numeric order under memcmp"
)]

use std::sync::atomic::{AtomicBool, Ordering};

use barracuda::{Engine, EngineOptions, FreePagePolicy, PageSize, TableOptions};

const ROWS: u32 = 12_000;

fn value(k: u32, round: u32) -> Vec<u8> {
    let mut v = vec![(k % 251) as u8; 120];
    v[..4].copy_from_slice(&round.to_le_bytes());
    v
}

fn run(policy: FreePagePolicy, switch_to: Option<FreePagePolicy>) {
    let dir = tempfile::tempdir().unwrap();
    // 48 frames of 4 KiB against ~2 MiB of rows: every access may need a free frame.
    let options = EngineOptions::default()
        .page_size(PageSize::K4)
        .buffer_pool_bytes(48 * 4096)
        .free_page_policy(policy)
        .lru_scan_depth(100);
    let db = Engine::open(dir.path(), options).unwrap();
    let t = db.create_table("t", TableOptions::default()).unwrap();
    let mut tx = db.begin();
    for k in 0..ROWS {
        tx.put(&t, &k.to_be_bytes(), &value(k, 0)).unwrap();
    }
    tx.commit().unwrap();
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        let writers: Vec<_> = (0..2u32)
            .map(|w| {
                let (db, t) = (&db, &t);
                s.spawn(move || {
                    // Writer w owns the keys k with k % 2 == w and rewrites them with round 1.
                    for k in (w..ROWS).step_by(2) {
                        db.put(t, &k.to_be_bytes(), &value(k, 1)).unwrap();
                    }
                })
            })
            .collect();
        for r in 0..2u32 {
            let (db, t, stop) = (&db, &t, &stop);
            s.spawn(move || {
                let mut i = r;
                while !stop.load(Ordering::Relaxed) {
                    i = i.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                    let k = i % ROWS;
                    let v = db.get(t, &k.to_be_bytes()).unwrap().unwrap();
                    let round = u32::from_le_bytes(v[..4].try_into().unwrap());
                    assert!(
                        round <= 1 && v[4..] == value(k, round)[4..],
                        "row {k} damaged"
                    );
                }
            });
        }
        if let Some(next) = switch_to {
            std::thread::sleep(std::time::Duration::from_millis(100));
            db.set_free_page_policy(next);
        }
        for w in writers {
            w.join().unwrap();
        }
        stop.store(true, Ordering::Relaxed);
    });
    for k in 0..ROWS {
        assert_eq!(
            db.get(&t, &k.to_be_bytes()).unwrap().unwrap(),
            value(k, 1),
            "row {k}"
        );
    }
    let status = db.status();
    assert!(
        status.pool.evictions() > 1_000,
        "the pool never came under pressure: {status}"
    );
    db.close().unwrap();
}

#[test]
fn legacy_policy() {
    run(FreePagePolicy::Legacy, None);
}

#[test]
fn backoff_policy() {
    run(FreePagePolicy::Backoff, None);
}

#[test]
fn eager_policy() {
    run(FreePagePolicy::Eager, None);
}

#[test]
fn policy_switched_while_threads_work() {
    run(FreePagePolicy::Backoff, Some(FreePagePolicy::Eager));
    run(FreePagePolicy::Eager, Some(FreePagePolicy::Legacy));
}
