//! Midpoint insertion: a scan of pages touched once enters the old sublist and leaves the young
//! hot set alone when `old_blocks_time` > 0; with `old_blocks_time` = 0 the scan makes its pages
//! young and flushes the hot set out. What would break: a full table scan evicting the working set.
//!
//! No outcome here depends on how fast the test runs: windows are either zero or an hour, and the
//! one test of the window's boundary waits until the window has certainly passed.
mod common;

use std::time::{Duration, Instant};

use barracuda_buffer_pool::{testing::MemStore, BufferPool};
use barracuda_page::PageId;
use common::{pid, setup, small_config};

const HOT: std::ops::Range<u32> = 0..10;
/// Longer than any test run: a page touched twice within it is never made young by time.
const HOUR: Duration = Duration::from_hours(1);

/// Warms the pool (evictions start the freed-page clock), then makes the hot set young: with
/// `old_blocks_time` = 0 a page read into the old sublist is made young at that first access.
/// Leaves `old_blocks_time` at `then`.
fn warm(pool: &BufferPool, then: Duration) {
    pool.set_old_blocks_time(Duration::ZERO);
    scan(pool, 1000..1200);
    let young_before = pool.stats().pages_made_young;
    scan(pool, HOT);
    let stats = pool.stats();
    assert_eq!(
        stats.pages_made_young,
        young_before + HOT.len() as u64,
        "hot set made young: {stats}"
    );
    pool.set_old_blocks_time(then);
}

fn scan(pool: &BufferPool, pages: std::ops::Range<u32>) {
    for p in pages {
        drop(pool.get_shared(pid(p)).expect("page"));
    }
}

fn hot_reads(store: &MemStore) -> u64 {
    HOT.map(|p| store.reads_of(PageId::new(1, p))).sum()
}

#[test]
fn scan_does_not_evict_hot_set() {
    let (store, pool) = setup(small_config(64), 5000);
    warm(&pool, HOUR);
    let before = hot_reads(&store);
    let not_young_before = pool.stats().pages_not_made_young;
    scan(&pool, 2000..3000);
    scan(&pool, HOT);
    assert_eq!(
        hot_reads(&store),
        before,
        "hot set survived the scan: {}",
        pool.stats()
    );
    let stats = pool.stats();
    assert!(
        stats.pages_not_made_young >= not_young_before + 1000,
        "every scanned page stayed old: {stats}"
    );
    assert!(stats.old_lru_len > 0 && stats.old_lru_len < stats.lru_len);
}

#[test]
fn without_old_blocks_time_a_scan_evicts_hot_set() {
    let (store, pool) = setup(small_config(64), 5000);
    warm(&pool, Duration::ZERO);
    let before = hot_reads(&store);
    let young_before = pool.stats().pages_made_young;
    scan(&pool, 2000..3000);
    scan(&pool, HOT);
    assert!(
        hot_reads(&store) > before,
        "scan pages were made young and pushed the hot set out"
    );
    assert!(pool.stats().pages_made_young > young_before + 500);
}

#[test]
fn old_page_made_young_only_after_old_blocks_time() {
    let (store, pool) = setup(small_config(64).old_blocks_time(HOUR), 5000);
    scan(&pool, 1000..1200); // evictions happened: the clock is running
    scan(&pool, 0..1); // page 0 enters the old sublist
                       // Taken after the pool stamped the first access, so the pool's clock has run at least as
                       // long as this one.
    let first_access = Instant::now();
    let s0 = pool.stats();
    scan(&pool, 0..1); // within the hour: not made young
    let s1 = pool.stats();
    assert_eq!(s1.pages_made_young, s0.pages_made_young, "{s1}");
    assert_eq!(s1.pages_not_made_young, s0.pages_not_made_young + 1, "{s1}");
    // A 20 ms window that has certainly passed since the first access (the pool counts whole
    // milliseconds, so wait one more): the next access makes the page young.
    let window = Duration::from_millis(20);
    pool.set_old_blocks_time(window);
    while first_access.elapsed() <= window + Duration::from_millis(1) {
        std::thread::sleep(window);
    }
    scan(&pool, 0..1);
    let s2 = pool.stats();
    assert_eq!(s2.pages_made_young, s1.pages_made_young + 1, "{s2}");
    assert_eq!(
        store.reads_of(pid(0)),
        1,
        "the same page all along, never evicted"
    );
}

#[test]
fn old_blocks_pct_sets_the_old_sublist_share_at_once() {
    // A pool large enough for InnoDB's own old-sublist minimum length (512) and tolerance (20)
    // to apply, and for 5 % of it to lie well outside the tolerance of 0 %.
    let (_store, pool) = setup(small_config(4096).old_blocks_time(HOUR), 5000);
    scan(&pool, 0..5000);
    for (pct, effective) in [(37, 37), (50, 50), (200, 95), (0, 5)] {
        pool.set_old_blocks_pct(pct);
        let stats = pool.stats();
        let len = stats.lru_len;
        // InnoDB buf_LRU_old_adjust_len: the target is pct of the list, leaving at least
        // BUF_LRU_NON_OLD_MIN_LEN (5) + the tolerance young; the old length stays within the
        // tolerance of it.
        let target = (len * (effective * 1024 / 100) / 1024).min(len - 25);
        assert!(
            stats.old_lru_len.abs_diff(target) <= 20,
            "old_blocks_pct {pct}: {} of {len} pages old, target {target}: {stats}",
            stats.old_lru_len
        );
    }
}
