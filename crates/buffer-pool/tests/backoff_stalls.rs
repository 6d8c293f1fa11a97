//! Backoff (Percona): the requester never evicts or flushes; it backs off with growing sleeps
//! until the LRU manager (which sleeps up to a second) refills the free list. Counters show the
//! waits; Legacy shows single-page flushes; Eager evicts in the requesting thread.
mod common;

use barracuda_buffer_pool::FreePagePolicy;
use common::{pid, setup, small_config};

#[test]
fn backoff_waits_for_the_lru_manager() {
    let (_store, pool) = setup(small_config(64).policy(FreePagePolicy::Backoff), 1000);
    for p in 0..300 {
        drop(pool.get_shared(pid(p)).unwrap());
    }
    let stats = pool.stats();
    assert!(stats.wait_free > 0, "{stats}");
    assert!(stats.lru_get_free_waits > 0, "backoff slept: {stats}");
    assert!(
        stats.free_wait.count > 0 && stats.free_wait.max_us > 0,
        "{stats}"
    );
    assert!(stats.free_wait.p99_us <= stats.free_wait.max_us);
    assert!(stats.free_wait.p999_us <= stats.free_wait.max_us);
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
