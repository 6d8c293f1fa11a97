//! Backoff (Percona): the requester never evicts or flushes; it backs off with growing sleeps
//! until the LRU manager (which sleeps up to a second) refills the free list. Counters show the
//! waits; Legacy shows single-page flushes; Eager evicts in the requesting thread.
mod common;

use std::time::{Duration, Instant};

use barracuda_buffer_pool::FreePagePolicy;
use common::{pid, setup, small_config};

#[test]
fn backoff_waits_for_the_lru_manager() {
    let started = Instant::now();
    let (_store, pool) = setup(small_config(64).policy(FreePagePolicy::Backoff), 1000);
    // The 64 free frames serve the first 64 pages; the manager has not run yet (its first sleep
    // is Percona's full second).
    for p in 0..64 {
        drop(pool.get_shared(pid(p)).unwrap());
    }
    let dry = Instant::now();
    drop(pool.get_shared(pid(64)).unwrap());
    let stalled = dry.elapsed();
    // The requester never evicts, so its frame came from the manager's first batch, which runs
    // no earlier than a second after the pool started: the stall Gagné measured, on purpose.
    let first_batch = (started + Duration::from_secs(1)).saturating_duration_since(dry);
    assert!(
        stalled >= first_batch,
        "the 65th page took {stalled:?}, the manager's first batch was {first_batch:?} away"
    );
    for p in 65..300 {
        drop(pool.get_shared(pid(p)).unwrap());
    }
    let stats = pool.stats();
    assert!(stats.wait_free > 0, "{stats}");
    assert!(stats.lru_get_free_waits > 0, "backoff slept: {stats}");
    assert_eq!(
        stats.free_wait.count, stats.free_list_empty,
        "every request that found the free list empty has its wait recorded: {stats}"
    );
    assert!(stats.free_wait.max_us > 0, "{stats}");
    assert_eq!(
        stats.evicted_by_user, 0,
        "the requester never evicts: {stats}"
    );
    assert_eq!(stats.pages_written_single_page, 0);
    assert!(stats.evicted_by_manager >= 300 - 64, "{stats}");
    assert!(stats.to_string().contains("wait_free"));
}

#[test]
fn legacy_flushes_single_pages_in_the_user_thread() {
    let (store, pool) = setup(small_config(32).policy(FreePagePolicy::Legacy), 1000);
    // Every resident page dirty: a clean victim cannot be found, so the user thread writes one.
    for p in 0..32 {
        let mut g = pool.get_exclusive(pid(p)).unwrap();
        g[64] = 1;
        g.mark_dirty(u64::from(p) + 1);
    }
    drop(pool.get_shared(pid(500)).unwrap());
    let stats = pool.stats();
    assert!(stats.pages_written_single_page >= 1, "{stats}");
    assert!(stats.wait_free >= 1, "{stats}");
    assert!(stats.evicted_by_user >= 1, "{stats}");
    assert_eq!(
        store.page(pid(0)).unwrap()[64],
        1,
        "the LRU tail page was written"
    );
}

#[test]
fn eager_evicts_at_once_in_the_user_thread() {
    let (_store, pool) = setup(small_config(64).policy(FreePagePolicy::Eager), 1000);
    for p in 0..300 {
        drop(pool.get_shared(pid(p)).unwrap());
    }
    let stats = pool.stats();
    assert!(stats.evictions() >= 300 - 64, "{stats}");
    assert_eq!(
        stats.lru_get_free_waits, 0,
        "eager never sleeps when a victim exists: {stats}"
    );
}

#[test]
fn eager_threads_that_take_frames_keep_the_free_list_stocked_themselves() {
    let (_store, pool) = setup(small_config(256).policy(FreePagePolicy::Eager), 4000);
    // Read faster than any manager period: every frame taken below the high watermark is
    // replaced by a clean page the reading thread frees itself, so the list never runs dry and
    // no request takes the slow path.
    for p in 0..4000 {
        drop(pool.get_shared(pid(p)).unwrap());
    }
    let stats = pool.stats();
    assert_eq!(
        stats.free_list_empty, 0,
        "no request found the free list empty: {stats}"
    );
    assert_eq!(stats.wait_free, 0, "{stats}");
    let evicted = stats.evictions();
    assert!(evicted >= 4000 - 256, "{stats}");
    assert!(
        stats.evicted_by_user >= evicted - 256,
        "the readers freed the frames, not the manager: {stats}"
    );
}
