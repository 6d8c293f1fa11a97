//! Behaviour of the lock table: grants, FIFO hand-over, timeouts, deadlocks and their victims.
#![allow(clippy::unwrap_used, reason = "tests")]

use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use barracuda_lock::{Acquired, LockConfig, LockError, LockManager};

const SPACE: u64 = 7;

fn manager(timeout: Duration, detect: bool) -> Arc<LockManager> {
    Arc::new(LockManager::new(LockConfig {
        wait_timeout: timeout,
        deadlock_detect: detect,
    }))
}

/// Polls until `cond` holds (a waiter has queued, say); fails the test after 10 s.
fn until(what: &str, cond: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        thread::yield_now();
    }
}

#[test]
fn a_free_key_is_granted_at_once_and_again_to_its_owner() {
    let locks = manager(Duration::from_secs(5), true);
    let mut t1 = locks.begin(1);
    assert_eq!(t1.lock_exclusive(SPACE, b"k").unwrap(), Acquired::Now);
    assert_eq!(
        t1.lock_exclusive(SPACE, b"k").unwrap(),
        Acquired::AlreadyHeld
    );
    // The same bytes in another space are another lock.
    assert_eq!(t1.lock_exclusive(SPACE + 1, b"k").unwrap(), Acquired::Now);
    assert_eq!(t1.held(), 2);
    assert_eq!(locks.owner_of(SPACE, b"k"), Some(1));
    assert_eq!(locks.stats().held_now, 2);
    t1.release_all();
    assert_eq!(locks.owner_of(SPACE, b"k"), None);
    assert_eq!(locks.stats().held_now, 0);
    assert_eq!(locks.stats().waits, 0);
}

#[test]
fn a_waiter_gets_the_lock_when_its_owner_releases_and_waiters_are_served_in_order() {
    let locks = manager(Duration::from_secs(30), true);
    let mut t1 = locks.begin(1);
    t1.lock_exclusive(SPACE, b"row").unwrap();
    let spawn_waiter = |id: u64| {
        let locks = locks.clone();
        thread::spawn(move || {
            let mut trx = locks.begin(id);
            let got = trx.lock_exclusive(SPACE, b"row");
            (trx, got)
        })
    };
    let second = spawn_waiter(2);
    until("2 queues", || locks.waiters_on(SPACE, b"row") == 1);
    let third = spawn_waiter(3);
    until("3 queues", || locks.waiters_on(SPACE, b"row") == 2);
    assert_eq!(locks.stats().waiting_now, 2);
    assert_eq!(locks.owner_of(SPACE, b"row"), Some(1));

    t1.release_all();
    let (mut t2, got) = second.join().unwrap();
    assert!(matches!(got, Ok(Acquired::AfterWait(_))), "{got:?}");
    // Handed to the first waiter, not to whoever woke first.
    assert_eq!(locks.owner_of(SPACE, b"row"), Some(2));
    assert_eq!(locks.waiters_on(SPACE, b"row"), 1);

    t2.release_all();
    let (t3, got) = third.join().unwrap();
    assert!(matches!(got, Ok(Acquired::AfterWait(_))), "{got:?}");
    assert_eq!(locks.owner_of(SPACE, b"row"), Some(3));
    drop(t3); // dropping the handle releases
    assert_eq!(locks.owner_of(SPACE, b"row"), None);
    let stats = locks.stats();
    assert_eq!((stats.waits, stats.waiting_now, stats.held_now), (2, 0, 0));
    assert_eq!(stats.deadlocks, 0);
}

#[test]
fn a_wait_times_out_and_leaves_the_queue_keeping_the_locks_held() {
    let locks = manager(Duration::from_millis(50), true);
    let mut t1 = locks.begin(1);
    t1.lock_exclusive(SPACE, b"a").unwrap();
    let mut t2 = locks.begin(2);
    t2.lock_exclusive(SPACE, b"b").unwrap();
    let started = Instant::now();
    let err = t2.lock_exclusive(SPACE, b"a").unwrap_err();
    let LockError::Timeout { waited } = err else {
        panic!("expected a timeout, got {err:?}");
    };
    assert!(waited >= Duration::from_millis(50), "{waited:?}");
    assert!(started.elapsed() >= Duration::from_millis(50));
    assert_eq!(locks.waiters_on(SPACE, b"a"), 0);
    assert_eq!(
        locks.owner_of(SPACE, b"b"),
        Some(2),
        "t2 keeps what it held"
    );
    let stats = locks.stats();
    assert_eq!((stats.timeouts, stats.waiting_now), (1, 0));
    // Released later, the key goes to nobody: the timed-out request is not served.
    t1.release_all();
    assert_eq!(locks.owner_of(SPACE, b"a"), None);
}

#[test]
fn two_transactions_locking_in_opposite_orders_deadlock_and_the_younger_is_the_victim() {
    let locks = manager(Duration::from_secs(30), true);
    let mut t1 = locks.begin(1);
    t1.lock_exclusive(SPACE, b"a").unwrap();
    let mut t2 = locks.begin(2);
    t2.lock_exclusive(SPACE, b"b").unwrap();
    let first = {
        let locks = locks.clone();
        thread::spawn(move || {
            let got = t1.lock_exclusive(SPACE, b"b");
            let owner = locks.owner_of(SPACE, b"b");
            (t1, got, owner)
        })
    };
    until("1 waits for b", || locks.waiters_on(SPACE, b"b") == 1);
    // Equal weights (one lock each): the younger, which also closed the cycle, loses.
    let err = t2.lock_exclusive(SPACE, b"a").unwrap_err();
    let LockError::Deadlock { trx, why } = err else {
        panic!("expected a deadlock, got {err:?}");
    };
    assert_eq!(trx, 2);
    assert!(why.contains("cycle 2 → 1 → 2"), "{why}");
    assert_eq!(locks.stats().deadlocks, 1);
    // The victim rolls back: the survivor gets its lock.
    t2.release_all();
    let (_t1, got, owner) = first.join().unwrap();
    assert!(matches!(got, Ok(Acquired::AfterWait(_))), "{got:?}");
    assert_eq!(owner, Some(1));
}

#[test]
fn the_lighter_transaction_is_the_victim_even_when_it_is_not_the_requester() {
    let locks = manager(Duration::from_secs(30), true);
    let mut heavy = locks.begin(1);
    for key in [&b"a"[..], b"x", b"y"] {
        heavy.lock_exclusive(SPACE, key).unwrap();
    }
    let mut light = locks.begin(2);
    light.lock_exclusive(SPACE, b"b").unwrap();
    let light_waits = thread::spawn(move || {
        let got = light.lock_exclusive(SPACE, b"a");
        (light, got)
    });
    until("2 waits for a", || locks.waiters_on(SPACE, b"a") == 1);
    let heavy_waits = {
        let locks = locks.clone();
        thread::spawn(move || {
            let got = heavy.lock_exclusive(SPACE, b"b");
            let owner = locks.owner_of(SPACE, b"b");
            (got, owner)
        })
    };
    let (mut light, got) = light_waits.join().unwrap();
    let err = got.unwrap_err();
    assert!(
        matches!(err, LockError::Deadlock { trx: 2, .. }),
        "the lighter transaction is chosen: {err:?}"
    );
    light.release_all();
    let (got, owner) = heavy_waits.join().unwrap();
    assert!(matches!(got, Ok(Acquired::AfterWait(_))), "{got:?}");
    assert_eq!(owner, Some(1));
    assert_eq!(locks.stats().deadlocks, 1);
}

#[test]
fn a_cycle_of_three_is_found_by_the_wait_that_closes_it() {
    let locks = manager(Duration::from_secs(30), true);
    let keys: [&[u8]; 3] = [b"k0", b"k1", b"k2"];
    let mut trxs: Vec<_> = (0..3u64)
        .map(|i| {
            let mut t = locks.begin(i + 1);
            t.lock_exclusive(SPACE, keys[i as usize]).unwrap();
            t
        })
        .collect();
    let last = trxs.pop().unwrap();
    // 1 waits for k1 (owned by 2), 2 waits for k2 (owned by 3).
    let waiters: Vec<_> = trxs
        .into_iter()
        .enumerate()
        .map(|(i, mut t)| {
            let want = keys[i + 1];
            let handle = thread::spawn(move || {
                let got = t.lock_exclusive(SPACE, want);
                (t, got)
            });
            until("the chain grows", || locks.waiters_on(SPACE, want) == 1);
            handle
        })
        .collect();
    // 3 asks for k0 (owned by 1): the cycle 3 → 1 → 2 → 3 closes; 3 is the youngest.
    let mut last = last;
    let err = last.lock_exclusive(SPACE, keys[0]).unwrap_err();
    let LockError::Deadlock { trx: 3, why } = err else {
        panic!("expected 3 to be the victim, got {err:?}");
    };
    assert!(why.contains("cycle 3 → 1 → 2 → 3"), "{why}");
    last.release_all();
    let mut outcomes = Vec::new();
    for handle in waiters.into_iter().rev() {
        let (mut t, got) = handle.join().unwrap();
        outcomes.push(got.is_ok());
        t.release_all();
    }
    assert_eq!(outcomes, vec![true, true]);
    let stats = locks.stats();
    assert_eq!(stats.deadlocks, 1);
    // One step for each of the first two waits (their owners ran), three to close the cycle.
    assert_eq!(stats.deadlock_search_steps, 1 + 1 + 3, "{stats:?}");
}

#[test]
fn with_detection_off_a_deadlock_ends_only_by_timeout() {
    let locks = manager(Duration::from_millis(100), false);
    let mut t1 = locks.begin(1);
    t1.lock_exclusive(SPACE, b"a").unwrap();
    let mut t2 = locks.begin(2);
    t2.lock_exclusive(SPACE, b"b").unwrap();
    let first = thread::spawn(move || {
        let got = t1.lock_exclusive(SPACE, b"b");
        (t1, got)
    });
    until("1 waits for b", || locks.waiters_on(SPACE, b"b") == 1);
    let err = t2.lock_exclusive(SPACE, b"a").unwrap_err();
    assert!(matches!(err, LockError::Timeout { .. }), "{err:?}");
    drop(t2);
    let (_t1, got) = first.join().unwrap();
    // 1 either timed out first or was granted b when 2 let go: never a deadlock error.
    assert!(!matches!(got, Err(LockError::Deadlock { .. })), "{got:?}");
    let stats = locks.stats();
    assert_eq!((stats.deadlock_searches, stats.deadlocks), (0, 0));
    assert!(stats.timeouts >= 1);
}

#[test]
fn detection_switched_on_at_run_time_applies_to_the_next_wait() {
    let locks = manager(Duration::from_millis(100), false);
    assert!(!locks.stats().deadlock_detect);
    locks.set_deadlock_detect(true);
    locks.set_wait_timeout(Duration::from_secs(30));
    let stats = locks.stats();
    assert!(stats.deadlock_detect);
    assert_eq!(stats.wait_timeout_ms, 30_000);
    let mut t1 = locks.begin(1);
    t1.lock_exclusive(SPACE, b"a").unwrap();
    let mut t2 = locks.begin(2);
    t2.lock_exclusive(SPACE, b"b").unwrap();
    let first = thread::spawn(move || {
        let got = t1.lock_exclusive(SPACE, b"b");
        (t1, got)
    });
    until("1 waits for b", || locks.waiters_on(SPACE, b"b") == 1);
    assert!(matches!(
        t2.lock_exclusive(SPACE, b"a"),
        Err(LockError::Deadlock { trx: 2, .. })
    ));
    drop(t2);
    assert!(first.join().unwrap().1.is_ok());
}

#[test]
fn a_search_behind_a_running_owner_takes_one_step_however_long_the_queue() {
    let locks = manager(Duration::from_secs(30), true);
    let mut owner = locks.begin(1);
    owner.lock_exclusive(SPACE, b"hot").unwrap();
    let waiters: Vec<_> = (2..=51u64)
        .map(|id| {
            let shared = locks.clone();
            let handle = thread::spawn(move || {
                let mut t = shared.begin(id);
                let got = t.lock_exclusive(SPACE, b"hot");
                // Dropping `t` hands the lock to the next in line.
                (got, t.id())
            });
            until("the waiter queues", || {
                locks.waiters_on(SPACE, b"hot") == (id - 1) as usize
            });
            handle
        })
        .collect();
    // A waiter queues before it searches: wait for the last search to be counted.
    until("every search is done", || {
        locks.stats().deadlock_searches == 50
    });
    let stats = locks.stats();
    // Each search looked at the owner only: it runs, so the chain ends there.
    assert_eq!(stats.deadlock_search_steps, 50);
    owner.release_all();
    for handle in waiters {
        let (got, _) = handle.join().unwrap();
        assert!(matches!(got, Ok(Acquired::AfterWait(_))), "{got:?}");
    }
    assert_eq!(locks.stats().held_now, 0);
}

#[test]
fn a_wait_for_a_transaction_ends_when_it_releases_its_own_lock() {
    let locks = manager(Duration::from_secs(30), true);
    let mut owner = locks.begin(1);
    owner.lock_own_transaction();
    // Not a row lock: the row-lock figures do not count it.
    assert_eq!((owner.held(), locks.stats().held_now), (1, 0));
    assert_eq!(locks.stats().requests, 0);
    let waiter = {
        let locks = locks.clone();
        thread::spawn(move || {
            let mut trx = locks.begin(2);
            let got = trx.wait_for_transaction(1);
            (trx.held(), got)
        })
    };
    until("the waiter queued", || locks.stats().waiting_now == 1);
    owner.release_all();
    let (held, got) = waiter.join().unwrap();
    assert!(matches!(got, Ok(Acquired::AfterWait(_))), "{got:?}");
    assert_eq!(held, 0, "the transaction's lock is let go once granted");
    let stats = locks.stats();
    assert_eq!(
        (
            stats.requests,
            stats.waits,
            stats.waiting_now,
            stats.held_now
        ),
        (1, 1, 0, 0)
    );
    // An ended transaction holds nothing: the wait is over at once.
    let mut late = locks.begin(3);
    assert_eq!(late.wait_for_transaction(1).unwrap(), Acquired::Now);
    assert_eq!(late.held(), 0);
}

#[test]
fn waits_for_transactions_and_row_locks_close_a_deadlock_together() {
    let locks = manager(Duration::from_secs(30), true);
    // t1 changed a row without a lock (it holds its own lock) and holds the row lock on "r";
    // t2 waits for t1's row, then t1 asks for a row t2 locked.
    let mut t1 = locks.begin(1);
    t1.lock_own_transaction();
    let mut t2 = locks.begin(2);
    t2.lock_own_transaction();
    t2.lock_exclusive(SPACE, b"r").unwrap();
    let waiter = thread::spawn(move || {
        let got = t2.wait_for_transaction(1);
        (t2, got)
    });
    until("t2 queued", || locks.stats().waiting_now == 1);
    let err = t1.lock_exclusive(SPACE, b"r").unwrap_err();
    let LockError::Deadlock { trx, why } = &err else {
        panic!("expected a deadlock, got {err:?}");
    };
    // The cycle t1 → t2 (owner of "r") → t1 (owner of its own lock) is found; t1 holds one
    // lock, t2 two: t1 is the lighter, so the victim.
    assert!(why.contains("cycle"), "{why}");
    assert_eq!(*trx, 1);
    t1.release_all();
    let (mut t2, got) = waiter.join().unwrap();
    assert!(matches!(got, Ok(Acquired::AfterWait(_))), "{got:?}");
    t2.release_all();
    assert_eq!(locks.stats().held_now, 0);
}

#[test]
fn locked_by_other_names_the_owner_unless_it_is_the_asker() {
    let locks = manager(Duration::from_secs(5), true);
    let mut t1 = locks.begin(1);
    let t2 = locks.begin(2);
    assert_eq!(t2.locked_by_other(SPACE, b"k"), None);
    t1.lock_exclusive(SPACE, b"k").unwrap();
    assert_eq!(t2.locked_by_other(SPACE, b"k"), Some(1));
    assert_eq!(t1.locked_by_other(SPACE, b"k"), None, "its own lock");
    assert_eq!(t2.locked_by_other(SPACE + 1, b"k"), None, "another space");
    t1.release_all();
    assert_eq!(t2.locked_by_other(SPACE, b"k"), None);
}

#[test]
fn try_lock_takes_a_free_key_and_leaves_a_held_one_without_queueing() {
    let locks = manager(Duration::from_secs(5), true);
    let mut t1 = locks.begin(1);
    let mut t2 = locks.begin(2);
    assert_eq!(t1.try_lock_exclusive(SPACE, b"k"), Some(Acquired::Now));
    assert_eq!(
        t1.try_lock_exclusive(SPACE, b"k"),
        Some(Acquired::AlreadyHeld)
    );
    assert_eq!(t2.try_lock_exclusive(SPACE, b"k"), None);
    let stats = locks.stats();
    assert_eq!((stats.requests, stats.held_now, stats.waits), (2, 1, 0));
    assert_eq!(
        locks.waiters_on(SPACE, b"k"),
        0,
        "a refused try does not queue"
    );
    t1.release_all();
    assert_eq!(t2.try_lock_exclusive(SPACE, b"k"), Some(Acquired::Now));
    assert_eq!(locks.owner_of(SPACE, b"k"), Some(2));
}

#[test]
fn locked_by_other_sees_a_lock_handed_to_a_waiter_and_ignores_transaction_locks() {
    let locks = manager(Duration::from_secs(30), true);
    let mut t1 = locks.begin(1);
    let asker = locks.begin(2);
    // A transaction's own lock is not a row lock: rows stay free.
    t1.lock_own_transaction();
    assert_eq!(asker.locked_by_other(SPACE, b"k"), None);
    t1.lock_exclusive(SPACE, b"k").unwrap();
    let mut t3 = locks.begin(3);
    let waiter = thread::spawn(move || {
        let got = t3.lock_exclusive(SPACE, b"k");
        (t3, got)
    });
    until("t3 queued", || locks.stats().waiting_now == 1);
    // Handed over, never free in between: the asker sees the new owner.
    t1.release_all();
    let (mut t3, got) = waiter.join().unwrap();
    assert!(matches!(got, Ok(Acquired::AfterWait(_))), "{got:?}");
    assert_eq!(asker.locked_by_other(SPACE, b"k"), Some(3));
    t3.release_all();
    assert_eq!(asker.locked_by_other(SPACE, b"k"), None);
}

#[test]
fn unlock_lets_one_lock_go_early_and_hands_it_to_the_next_waiter() {
    let locks = manager(Duration::from_secs(30), true);
    let mut t1 = locks.begin(1);
    t1.lock_exclusive(SPACE, b"a").unwrap();
    t1.lock_exclusive(SPACE, b"k").unwrap();
    t1.unlock(SPACE, b"a");
    assert_eq!((t1.held(), locks.owner_of(SPACE, b"a")), (1, None));
    t1.unlock(SPACE, b"never locked");
    assert_eq!(t1.held(), 1, "unlocking what is not held changes nothing");
    let mut t2 = locks.begin(2);
    let waiter = thread::spawn(move || {
        let got = t2.lock_exclusive(SPACE, b"k");
        (t2, got)
    });
    until("t2 queued", || locks.stats().waiting_now == 1);
    t1.unlock(SPACE, b"k");
    let (mut t2, got) = waiter.join().unwrap();
    assert!(matches!(got, Ok(Acquired::AfterWait(_))), "{got:?}");
    assert_eq!((t1.held(), locks.owner_of(SPACE, b"k")), (0, Some(2)));
    t2.release_all();
    assert_eq!(locks.stats().held_now, 0);
}
