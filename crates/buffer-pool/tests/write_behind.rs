//! Write-behind: pages their writer hinted as finished are written by `BufferPool::write_behind`
//! through the ordinary flush path — not while their writer holds them, not while an open commit
//! unit's change is in them — and only for the spaces whose store asks for it.

#![allow(clippy::unwrap_used, reason = "a failed unwrap is a failed test")]

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use barracuda_buffer_pool::WRITE_BEHIND_BATCH;
use common::{assert_wal_rule_kept, commit_change, pid, setup, small_config};

/// Dirties page `p` at LSN `lsn` (its byte 100 set to `p`), hinting it when `hint`.
fn dirty(pool: &barracuda_buffer_pool::BufferPool, p: u32, lsn: u64, hint: bool) {
    let mut g = pool.get_exclusive(pid(p)).unwrap();
    g[100] = marker(p);
    commit_change(&mut g, lsn);
    if hint {
        g.hint_write_behind();
    }
}

/// The byte page `p` holds at offset 100 once changed: never 0 (an unwritten page's byte).
fn marker(p: u32) -> u8 {
    (p % 255) as u8 + 1
}

fn written(store: &barracuda_buffer_pool::testing::MemStore, p: u32) -> bool {
    store
        .page(pid(p))
        .is_some_and(|page| page[100] == marker(p))
}

#[test]
fn hinted_pages_are_written_by_a_write_behind_batch_and_the_rest_stay_dirty() {
    let (store, pool) = setup(small_config(64), 100);
    store.set_write_behind(1, true);
    for p in 0..10 {
        dirty(&pool, p, u64::from(p) + 1, p < 6);
    }
    assert_eq!(pool.stats().write_behind_queued, 6);
    assert_eq!(pool.write_behind(100).unwrap(), 6);
    for p in 0..10 {
        assert_eq!(written(&store, p), p < 6, "page {p}");
    }
    let stats = pool.stats();
    assert_eq!(stats.pages_written_write_behind, 6, "{stats}");
    assert_eq!(stats.write_behind_hints, 6, "{stats}");
    assert_eq!(stats.write_behind_queued, 0, "{stats}");
    assert_eq!(
        stats.dirty_pages, 4,
        "only the unhinted pages are still dirty: {stats}"
    );
    assert_wal_rule_kept(&store);
    // Nothing queued any more: a second batch writes nothing.
    assert_eq!(pool.write_behind(100).unwrap(), 0);
}

#[test]
fn a_batch_takes_at_most_its_limit_and_leaves_the_rest_queued() {
    let (store, pool) = setup(small_config(64), 100);
    store.set_write_behind(1, true);
    for p in 0..10 {
        dirty(&pool, p, u64::from(p) + 1, true);
    }
    assert_eq!(pool.write_behind(4).unwrap(), 4);
    assert_eq!(pool.stats().write_behind_queued, 6);
    assert_eq!(pool.write_behind(100).unwrap(), 6);
    assert!((0..10).all(|p| written(&store, p)));
}

#[test]
fn a_page_its_writer_still_holds_or_an_open_unit_changed_stays_queued() {
    let (store, pool) = setup(small_config(64), 100);
    store.set_write_behind(1, true);
    // Hinted while still X-latched (as a split hints the page it is splitting).
    let mut g = pool.get_exclusive(pid(3)).unwrap();
    g[100] = marker(3);
    commit_change(&mut g, 10);
    g.hint_write_behind();
    assert_eq!(pool.write_behind(100).unwrap(), 0, "its writer holds it");
    assert_eq!(pool.stats().write_behind_queued, 1);
    drop(g);
    // Its change belongs to a unit still open (the barrier is at or below its LSN).
    store.set_write_barrier(10);
    assert_eq!(
        pool.write_behind(100).unwrap(),
        0,
        "behind the write barrier"
    );
    assert_eq!(pool.stats().write_behind_queued, 1);
    assert!(!written(&store, 3));
    store.set_write_barrier(u64::MAX);
    assert_eq!(pool.write_behind(100).unwrap(), 1);
    assert!(written(&store, 3));
    assert_eq!(pool.stats().write_behind_queued, 0);
}

#[test]
fn a_page_written_or_evicted_since_its_hint_is_forgotten() {
    let (store, pool) = setup(small_config(64), 100);
    store.set_write_behind(1, true);
    dirty(&pool, 1, 5, true);
    pool.flush_all().unwrap();
    assert_eq!(pool.write_behind(100).unwrap(), 0, "already clean");
    assert_eq!(pool.stats().write_behind_queued, 0);
    assert_eq!(pool.stats().pages_written_write_behind, 0);
}

#[test]
fn hints_for_spaces_that_do_not_ask_for_write_behind_are_ignored() {
    let (store, pool) = setup(small_config(64), 100);
    dirty(&pool, 2, 3, true);
    let stats = pool.stats();
    assert_eq!(stats.write_behind_hints, 0, "{stats}");
    assert_eq!(stats.write_behind_queued, 0, "{stats}");
    assert_eq!(pool.write_behind(100).unwrap(), 0);
    assert!(!written(&store, 2));
}

#[test]
fn the_waker_is_called_once_per_batch_of_hints() {
    let (store, pool) = setup(small_config(256), 1000);
    store.set_write_behind(1, true);
    let wakes = Arc::new(AtomicUsize::new(0));
    let counter = wakes.clone();
    pool.set_write_behind_waker(Some(Arc::new(move || {
        counter.fetch_add(1, Ordering::SeqCst);
    })));
    let pages = 2 * WRITE_BEHIND_BATCH + 3;
    for p in 0..pages as u32 {
        dirty(&pool, p, u64::from(p) + 1, true);
    }
    assert_eq!(wakes.load(Ordering::SeqCst), 2);
    pool.set_write_behind_waker(None);
    for p in 0..WRITE_BEHIND_BATCH as u32 {
        dirty(&pool, 500 + p, 1000 + u64::from(p), true);
    }
    assert_eq!(wakes.load(Ordering::SeqCst), 2, "no waker, no call");
}

#[test]
fn discarded_hints_leave_their_pages_dirty_for_the_checkpoint() {
    let (store, pool) = setup(small_config(64), 100);
    store.set_write_behind(1, true);
    for p in 0..4 {
        dirty(&pool, p, u64::from(p) + 1, true);
    }
    pool.discard_write_behind();
    assert_eq!(pool.stats().write_behind_queued, 0);
    assert_eq!(pool.write_behind(100).unwrap(), 0);
    assert_eq!(pool.stats().dirty_pages, 4);
    pool.flush_all().unwrap();
    assert!((0..4).all(|p| written(&store, p)));
}
