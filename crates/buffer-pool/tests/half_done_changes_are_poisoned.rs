//! A page changed under an exclusive guard that is released without recording the change (an
//! error or panic part-way through a mini-transaction) is never written and never handed out
//! again, and the pool stops writing pages; a guard only read through is harmless; a reservation
//! makes page creation infallible and gives back what it did not use.
//!
//! What would break: the flusher or `flush_all` writing a half-changed page; a reader building on
//! it; eviction dropping it (the old image would be read back beside pages that hold the new one);
//! a waiter for a free frame hanging once no dirty page can be written.
mod common;

use barracuda_buffer_pool::{FreePagePolicy, PoolError};
use common::{commit_change, pid, setup, small_config};

#[test]
fn an_unrecorded_change_poisons_the_page_and_stops_writes() {
    let (store, pool) = setup(small_config(32), 100);
    {
        let mut clean = pool.get_exclusive(pid(1)).unwrap();
        clean[200] = 7;
        commit_change(&mut clean, 5);
    }
    {
        let mut half = pool.get_exclusive(pid(2)).unwrap();
        half[100] = 0xAB;
        assert!(half.has_unrecorded_change());
        // Dropped without mark_dirty: what an error return part-way through a change does.
    }
    assert!(matches!(
        pool.get_shared(pid(2)),
        Err(PoolError::PoisonedPage { page }) if page == pid(2)
    ));
    assert!(matches!(
        pool.get_exclusive(pid(2)),
        Err(PoolError::PoisonedPage { .. })
    ));
    assert!(matches!(
        pool.create(pid(2)),
        Err(PoolError::PoisonedPage { .. })
    ));
    let reason = pool.writes_stopped().expect("writes stopped");
    assert!(reason.contains("half-changed"), "{reason}");
    // Not even the cleanly committed page is written now: it may hold the other half.
    assert!(matches!(
        pool.flush_all(),
        Err(PoolError::WritesStopped { .. })
    ));
    assert_eq!(store.pages_written(), 0);
    assert_eq!(pool.stats().dirty_pages, 1);
    // Clean pages are still served.
    assert_eq!(
        &pool.get_shared(pid(3)).unwrap()[..],
        &store.stamp(pid(3))[..]
    );
}

#[test]
fn reading_through_an_exclusive_guard_changes_nothing() {
    let (store, pool) = setup(small_config(32), 100);
    {
        let page = pool.get_exclusive(pid(4)).unwrap();
        assert_eq!(&page[..16], &store.stamp(pid(4))[..16]);
        assert!(!page.has_unrecorded_change());
    }
    assert!(pool.writes_stopped().is_none());
    assert!(pool.get_shared(pid(4)).is_ok());
}

#[test]
fn a_recorded_change_is_written() {
    let (store, pool) = setup(small_config(32), 100);
    {
        let mut page = pool.get_exclusive(pid(5)).unwrap();
        page[300] = 9;
        commit_change(&mut page, 3);
        assert!(!page.has_unrecorded_change());
    }
    pool.flush_all().unwrap();
    assert_eq!(store.page(pid(5)).unwrap()[300], 9);
    assert!(pool.writes_stopped().is_none());
}

#[test]
fn a_panic_part_way_through_a_change_poisons_the_page() {
    let (_store, pool) = setup(small_config(32), 100);
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut page = pool.get_exclusive(pid(6)).unwrap();
        page[100] = 1;
        panic!("a bug in the middle of a change");
    }));
    assert!(result.is_err());
    assert!(matches!(
        pool.get_shared(pid(6)),
        Err(PoolError::PoisonedPage { .. })
    ));
}

#[test]
fn with_writes_stopped_a_full_pool_fails_fast_instead_of_waiting() {
    for policy in [
        FreePagePolicy::Legacy,
        FreePagePolicy::Backoff,
        FreePagePolicy::Eager,
    ] {
        let config = small_config(16)
            .policy(policy)
            .all_pinned_timeout(std::time::Duration::from_mins(1));
        let (_store, pool) = setup(config, 100);
        // Writes stop first, so the background manager cannot clean any page meanwhile; then
        // every frame is filled with a dirty page: none can become free without a write.
        pool.stop_writes("test: a batch was applied part-way");
        for n in 0..16 {
            let mut page = pool.get_exclusive(pid(n)).unwrap();
            commit_change(&mut page, u64::from(n) + 1);
        }
        assert_eq!(pool.stats().dirty_pages, 16, "{policy:?}");
        let started = std::time::Instant::now();
        let err = pool.get_shared(pid(50)).unwrap_err();
        assert!(
            matches!(&err, PoolError::WritesStopped { reason } if reason.contains("part-way")),
            "{policy:?}: {err}"
        );
        // Backoff would otherwise wait for the LRU manager, which can write nothing: the
        // answer must come without waiting out the (60 s) timeout.
        assert!(
            started.elapsed() < std::time::Duration::from_secs(30),
            "{policy:?}: waited {:?}",
            started.elapsed()
        );
    }
}

#[test]
fn a_reservation_creates_what_it_reserved_and_returns_the_rest() {
    let (_store, pool) = setup(small_config(32), 100);
    let free_before = pool.stats().free_pages;
    {
        let mut reservation = pool.reserve_frames(3).unwrap();
        assert_eq!(reservation.len(), 3);
        assert_eq!(pool.stats().free_pages, free_before - 3);
        let created = pool.create_reserved(&mut reservation, pid(70)).unwrap();
        assert!(created.iter().all(|&b| b == 0));
        drop(created);
        assert_eq!(reservation.len(), 2);
    }
    // The two unused frames went back.
    assert_eq!(pool.stats().free_pages, free_before - 1);
    let mut empty = pool.reserve_frames(0).unwrap();
    assert!(matches!(
        pool.create_reserved(&mut empty, pid(71)),
        Err(PoolError::ReservationExhausted { .. })
    ));
}
