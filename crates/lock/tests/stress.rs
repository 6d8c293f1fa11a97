//! Many transactions locking random keys in random orders: every lock is held by one
//! transaction at a time, and with detection on every deadlock is broken by a victim — none
//! lasts until the (long) timeout. `BARRACUDA_LOCK_STRESS_ROUNDS` raises the rounds per thread.
#![allow(clippy::unwrap_used, reason = "tests")]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use barracuda_lock::{LockConfig, LockError, LockManager};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};

const KEYS: usize = 6;
const THREADS: u64 = 8;

fn rounds() -> usize {
    std::env::var("BARRACUDA_LOCK_STRESS_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(400)
}

#[test]
fn random_lock_orders_keep_locks_exclusive_and_every_deadlock_gets_a_victim() {
    let locks = Arc::new(LockManager::new(LockConfig {
        // Long enough that a deadlock nobody detected fails the test by timing out.
        wait_timeout: Duration::from_secs(20),
        deadlock_detect: true,
    }));
    // Who holds each key, by our own bookkeeping: 0 = nobody.
    let holders: Arc<Vec<AtomicU64>> = Arc::new((0..KEYS).map(|_| AtomicU64::new(0)).collect());
    let next_id = Arc::new(AtomicU64::new(1));
    let threads: Vec<_> = (0..THREADS)
        .map(|seed| {
            let (locks, holders, next_id) = (locks.clone(), holders.clone(), next_id.clone());
            thread::spawn(move || {
                let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
                let (mut committed, mut victims) = (0u64, 0u64);
                for _ in 0..rounds() {
                    let id = next_id.fetch_add(1, Ordering::Relaxed);
                    let mut trx = locks.begin(id);
                    let mut keys: Vec<usize> = (0..KEYS).collect();
                    keys.shuffle(&mut rng);
                    keys.truncate(rng.gen_range(1..=4));
                    let mut mine = Vec::new();
                    let mut outcome = Ok(());
                    for &k in &keys {
                        match trx.lock_exclusive(1, &[k as u8]) {
                            Ok(_) => {
                                let before = holders[k].swap(id, Ordering::SeqCst);
                                assert!(
                                    before == 0 || before == id,
                                    "key {k} granted to {id} while {before} holds it"
                                );
                                if before == 0 {
                                    mine.push(k);
                                }
                                thread::yield_now();
                            }
                            Err(err) => {
                                outcome = Err(err);
                                break;
                            }
                        }
                    }
                    for k in mine {
                        assert_eq!(holders[k].swap(0, Ordering::SeqCst), id);
                    }
                    match outcome {
                        Ok(()) => committed += 1,
                        Err(LockError::Deadlock { .. }) => victims += 1,
                        Err(err @ LockError::Timeout { .. }) => {
                            panic!("transaction {id}: a deadlock went undetected: {err}")
                        }
                    }
                    trx.release_all();
                }
                (committed, victims)
            })
        })
        .collect();
    let (mut committed, mut victims) = (0, 0);
    for t in threads {
        let (c, v) = t.join().unwrap();
        committed += c;
        victims += v;
    }
    let stats = locks.stats();
    assert_eq!(committed + victims, THREADS * rounds() as u64);
    assert_eq!(stats.timeouts, 0);
    assert_eq!((stats.held_now, stats.waiting_now), (0, 0));
    assert!(committed > 0);
    // A victim may be chosen by two searches at once; it is counted once, and every victim
    // that saw its error was counted.
    assert_eq!(stats.deadlocks, victims, "{stats:?}");
    eprintln!("{committed} committed, {victims} victims: {stats:?}");
}
