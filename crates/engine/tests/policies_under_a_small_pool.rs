//! Every free-page policy keeps the engine correct when the data is many times the pool and
//! several threads read and write at once; the policy may change while they run. If this
//! breaks, a policy hands out a frame still in use, loses a dirty page, or stalls forever.
//! Stalls fail the test after a deadline instead of hanging it.

#![allow(clippy::unwrap_used, reason = "a failed unwrap is a failed test")]
#![allow(
    clippy::big_endian_bytes,
    reason = "big-endian keys sort in numeric order under memcmp"
)]

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::{Duration, Instant};

use barracuda::{Engine, EngineOptions, FreePagePolicy, PageSize, TableOptions};

const ROWS: u32 = 12_000;
/// With a switch planned, writers hold back their keys from here on until it has happened, so
/// that it always happens while writes are still to come, however the threads are scheduled.
const HOLD_BACK_FROM: u32 = ROWS * 3 / 4;

/// Spins until `cond` holds; panics naming `what` after two minutes (a stalled policy).
fn wait_until(what: &str, cond: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_mins(2);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::yield_now();
    }
}

/// Sets its flag when dropped, so that threads waiting on it finish even when the thread that
/// would set it panics (a scope joins its threads before passing the panic on).
struct SetOnDrop<'a>(&'a AtomicBool);

impl Drop for SetOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Release);
    }
}

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
    let written = AtomicU32::new(0);
    let switched = AtomicBool::new(switch_to.is_none());
    std::thread::scope(|s| {
        let _stop_readers = SetOnDrop(&stop);
        let _release_writers = SetOnDrop(&switched);
        let writers: Vec<_> = (0..2u32)
            .map(|w| {
                let (db, t, written, switched) = (&db, &t, &written, &switched);
                s.spawn(move || {
                    // Writer w owns the keys k with k % 2 == w and rewrites them with round 1.
                    for k in (w..ROWS).step_by(2) {
                        if k >= HOLD_BACK_FROM {
                            wait_until("the policy switch", || switched.load(Ordering::Acquire));
                        }
                        db.put(t, &k.to_be_bytes(), &value(k, 1)).unwrap();
                        written.fetch_add(1, Ordering::Release);
                    }
                })
            })
            .collect();
        for r in 0..2u32 {
            let (db, t, stop) = (&db, &t, &stop);
            s.spawn(move || {
                let mut i = r;
                while !stop.load(Ordering::Acquire) {
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
        let at_switch = switch_to.map(|next| {
            // Switch once the writers are a quarter through: readers and writers are then
            // competing for frames under the old policy.
            wait_until("a quarter of the writes", || {
                written.load(Ordering::Acquire) >= ROWS / 4
            });
            assert_eq!(db.status().pool.policy, policy);
            db.set_free_page_policy(next);
            let status = db.status();
            assert_eq!(status.pool.policy, next);
            let written_at_switch = written.load(Ordering::Acquire);
            switched.store(true, Ordering::Release);
            (written_at_switch, status.pool.evictions())
        });
        for w in writers {
            w.join().unwrap();
        }
        if let Some((written_at_switch, evictions_at_switch)) = at_switch {
            // The new policy served frames to work that was still in flight when it took over.
            let evictions = db.status().pool.evictions();
            assert!(
                written_at_switch < ROWS && evictions > evictions_at_switch,
                "switched after {written_at_switch} of {ROWS} writes; evictions \
                 {evictions_at_switch} -> {evictions}"
            );
        }
        stop.store(true, Ordering::Release);
    });
    // Every row checked before failing, so that a failure says how many rows lost their last
    // write and which (a lost change of one page shows as a few neighbouring keys).
    let wrong: Vec<(u32, Option<u32>)> = (0..ROWS)
        .filter_map(|k| {
            let v = db.get(&t, &k.to_be_bytes()).unwrap();
            let round = v
                .as_deref()
                .and_then(|v| v.first_chunk::<4>())
                .map(|b| u32::from_le_bytes(*b));
            (v != Some(value(k, 1))).then_some((k, round))
        })
        .collect();
    assert!(
        wrong.is_empty(),
        "{} rows do not hold their last write, (key, round read): {:?}",
        wrong.len(),
        &wrong[..wrong.len().min(20)]
    );
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
