//! Dirty pages that someone holds pinned (and X-latched) cannot give a frame back, so the paths
//! that write pages to free frames — a user thread's single-page flush and the LRU manager's
//! batch — must pass over them rather than pick them again and again.
//!
//! The shape comes from a hang of the B-tree's model test: a pessimistic delete held X latches
//! on its path and siblings (dirty pages near the LRU tail) while waiting for a free frame; its
//! single-page flush took the tail-most dirty page — one it held itself — failed to latch it,
//! and started again from the tail, forever, while the LRU manager spun a core claiming the same
//! pages and counting them as work done.
mod common;

use std::sync::mpsc;
use std::time::{Duration, Instant};

use barracuda_buffer_pool::{FreePagePolicy, PoolError};
use common::{commit_change, pid, setup, small_config};

/// Frames in the pools of these tests (the minimum capacity).
const FRAMES: u32 = 16;

/// The free list is empty, every page is dirty, and the two tail-most pages are held
/// X-latched by another thread: a request for a page must write an unpinned dirty page and take
/// its frame, under every policy. The LRU manager is stopped first so that the requesting
/// thread alone has to find the frame (and nothing races with it).
#[test]
fn a_waiter_writes_an_unpinned_page_not_one_held_by_others() {
    for policy in [
        FreePagePolicy::Legacy,
        FreePagePolicy::Eager,
        FreePagePolicy::Backoff,
    ] {
        let (store, pool) = setup(
            small_config(FRAMES as usize)
                .policy(policy)
                .all_pinned_timeout(Duration::from_millis(50)),
            100,
        );
        pool.shutdown();
        // Created pages enter at the LRU head, and nothing was evicted yet so hits do not
        // reorder the list: page 0 is the tail, page 1 next to it.
        for p in 0..FRAMES {
            let mut g = pool.create(pid(p)).unwrap();
            commit_change(&mut g, u64::from(p) + 1);
        }
        let held = vec![
            pool.get_exclusive(pid(0)).unwrap(),
            pool.get_exclusive(pid(1)).unwrap(),
        ];
        let before = pool.stats();
        assert_eq!(
            (before.free_pages, before.dirty_pages),
            (0, FRAMES as usize),
            "{policy}: set-up"
        );

        let (tx, rx) = mpsc::channel();
        let pool_ref = &*pool;
        let got = std::thread::scope(|s| {
            s.spawn(move || {
                let result = pool_ref.get_shared(pid(50)).map(|g| g.page_id());
                // The receiver is gone only if the test already failed.
                let _ = tx.send(result);
            });
            // A bounded wait on the outcome; without the fix the request never returns while
            // the pages are held, so let go of them before the scope joins the thread.
            let got = rx.recv_timeout(Duration::from_secs(10));
            drop(held);
            got
        });
        let got = got.unwrap_or_else(|_| {
            panic!(
                "{policy}: no frame within 10 s although {} dirty pages were unpinned",
                FRAMES - 2
            )
        });
        assert_eq!(got.unwrap(), pid(50), "{policy}");
        let after = pool.stats();
        assert!(
            after.pages_written_single_page > before.pages_written_single_page,
            "{policy}: a dirty page was written to free its frame: {after}"
        );
        assert_eq!(
            after.single_page_flush_failures, before.single_page_flush_failures,
            "{policy}: no single-page flush picked a page it could not write: {after}"
        );
        common::assert_wal_rule_kept(&store);
    }
}

/// Every frame holds a dirty page X-latched by the requesting thread, so nothing can be freed.
/// The request fails with `AllPagesPinned` after its timeout, and meanwhile the LRU manager
/// finds nothing to do and sleeps its period (10 ms under Eager, ≥ 1 s under Backoff) instead
/// of running round after round.
#[test]
fn the_manager_sleeps_when_it_can_free_nothing() {
    for (policy, timeout) in [
        (FreePagePolicy::Eager, Duration::from_millis(300)),
        // Backoff's manager first wakes a second after the pool starts.
        (FreePagePolicy::Backoff, Duration::from_millis(1500)),
    ] {
        let (_store, pool) = setup(
            small_config(FRAMES as usize)
                .policy(policy)
                .all_pinned_timeout(timeout),
            100,
        );
        let mut held = Vec::new();
        for p in 0..FRAMES {
            let mut g = pool.create(pid(p)).unwrap();
            commit_change(&mut g, u64::from(p) + 1);
            held.push(g);
        }
        let rounds_before = pool.stats().manager_rounds;
        let start = Instant::now();
        match pool.get_shared(pid(50)) {
            Err(PoolError::AllPagesPinned { .. }) => {}
            other => panic!("{policy}: expected AllPagesPinned, got {other:?}"),
        }
        let elapsed = start.elapsed();
        let rounds = pool.stats().manager_rounds - rounds_before;
        // A manager that sleeps 10 ms per fruitless round (the shortest period of any policy)
        // does at most elapsed / 10 ms rounds, plus one per wake-up of the waiter.
        let bound = u64::try_from(elapsed.as_millis() / 10).unwrap() + 10;
        assert!(
            rounds <= bound,
            "{policy}: the LRU manager ran {rounds} rounds in {elapsed:?} without freeing \
             anything (at most {bound} expected)"
        );
        drop(held);
    }
}
