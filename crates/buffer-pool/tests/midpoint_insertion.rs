//! Midpoint insertion: a scan of pages touched once enters the old sublist and leaves the young
//! hot set alone when `old_blocks_time` > 0; with `old_blocks_time` = 0 the scan makes its pages
//! young and flushes the hot set out. What would break: a full table scan evicting the working set.
mod common;

use std::time::Duration;

use barracuda_buffer_pool::BufferPool;
use barracuda_page::PageId;
use common::{pid, setup, small_config};

const HOT: std::ops::Range<u32> = 0..10;

/// Warms the pool, then makes the hot set young by touching it twice `old_blocks_time` apart.
fn warm(pool: &BufferPool, old_blocks_time: Duration) {
    for p in 1000..1200 {
        drop(pool.get_shared(pid(p)).expect("page")); // fill and evict: the freed-page clock runs
    }
    for _ in 0..2 {
        for p in HOT {
            drop(pool.get_shared(pid(p)).expect("page"));
        }
        std::thread::sleep(old_blocks_time + Duration::from_millis(10));
    }
    for p in HOT {
        drop(pool.get_shared(pid(p)).expect("page"));
    }
}

fn scan(pool: &BufferPool, pages: std::ops::Range<u32>) {
    for p in pages {
        drop(pool.get_shared(pid(p)).expect("page"));
    }
}

fn hot_reads(store: &barracuda_buffer_pool::testing::MemStore) -> u64 {
    HOT.map(|p| store.reads_of(PageId::new(1, p))).sum()
}

#[test]
fn scan_does_not_evict_hot_set() {
    let time = Duration::from_millis(40);
    let (store, pool) = setup(small_config(64).old_blocks_time(time), 5000);
    warm(&pool, time);
    let made_young = pool.stats().pages_made_young;
    assert!(
        made_young >= HOT.len() as u64,
        "hot set made young: {}",
        pool.stats()
    );
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
        "{stats}"
    );
    assert!(stats.old_lru_len > 0 && stats.old_lru_len < stats.lru_len);
}

#[test]
fn without_old_blocks_time_a_scan_evicts_hot_set() {
    let (store, pool) = setup(
        small_config(64).old_blocks_time(Duration::from_millis(40)),
        5000,
    );
    warm(&pool, Duration::from_millis(40));
    pool.set_old_blocks_time(Duration::ZERO);
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
    let (_store, pool) = setup(
        small_config(64).old_blocks_time(Duration::from_millis(30)),
        5000,
    );
    scan(&pool, 1000..1200); // evictions happened: the clock is running
    scan(&pool, 0..1); // page 0 enters the old sublist
    let s0 = pool.stats();
    scan(&pool, 0..1); // too soon: not made young
    let s1 = pool.stats();
    assert_eq!(s1.pages_made_young, s0.pages_made_young);
    assert_eq!(s1.pages_not_made_young, s0.pages_not_made_young + 1);
    std::thread::sleep(Duration::from_millis(40));
    scan(&pool, 0..1);
    assert_eq!(pool.stats().pages_made_young, s1.pages_made_young + 1);
    pool.set_old_blocks_pct(50);
    pool.set_old_blocks_pct(200); // clamped to 95
    scan(&pool, 1200..1300);
}
