//! A pinned page is never evicted, and when every frame is pinned a request fails with
//! `AllPagesPinned` after a bounded wait instead of hanging, under every policy.
mod common;

use std::time::Duration;

use barracuda_buffer_pool::{FreePagePolicy, PoolError};
use common::{pid, setup, small_config};

#[test]
fn all_pinned_is_an_error_not_a_hang() {
    for policy in [
        FreePagePolicy::Legacy,
        FreePagePolicy::Backoff,
        FreePagePolicy::Eager,
    ] {
        let (store, pool) = setup(
            small_config(16)
                .policy(policy)
                .all_pinned_timeout(Duration::from_millis(100)),
            100,
        );
        let guards: Vec<_> = (0..16).map(|p| pool.get_shared(pid(p)).unwrap()).collect();
        match pool.get_shared(pid(50)) {
            Err(PoolError::AllPagesPinned {
                capacity_pages: 16, ..
            }) => {}
            other => panic!("{policy}: expected AllPagesPinned, got {other:?}"),
        }
        // The pinned pages are intact and still cached.
        for (p, g) in guards.iter().enumerate() {
            assert_eq!(&g[..], &store.stamp(pid(p as u32))[..]);
        }
        let reads = store.reads();
        drop(guards);
        // Once unpinned, the pool works again.
        drop(pool.get_shared(pid(50)).unwrap());
        assert_eq!(store.reads(), reads + 1);
    }
}

#[test]
fn pinned_pages_survive_churn() {
    let (store, pool) = setup(small_config(16), 1000);
    let mut held = pool.get_exclusive(pid(0)).unwrap();
    held[500] = 7; // not marked dirty: only the pin keeps it
    let shared = pool.get_shared(pid(1)).unwrap();
    for p in 2..400 {
        drop(pool.get_shared(pid(p)).unwrap());
    }
    // Checked while the pins are still held: once they are dropped the background LRU manager
    // may evict the pages at any moment, so "still cached afterwards" would be a race.
    assert_eq!(
        held[500], 7,
        "the unlogged change survived: the frame was never reused"
    );
    assert_eq!(shared.page_id(), pid(1));
    assert_eq!(
        store.reads_of(pid(0)),
        1,
        "pinned page 0 was never evicted and re-read"
    );
    assert_eq!(
        store.reads_of(pid(1)),
        1,
        "pinned page 1 was never evicted and re-read"
    );
    drop(held);
    drop(shared);
}
